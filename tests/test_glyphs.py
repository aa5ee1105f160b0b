"""The glyph test bed on a tiny font set: four of matplotlib's bundled DejaVu faces and the Latin script, so the
loader's splits, cache, manifest, warnings and errors are tested on any machine; one test reads the CJK fonts
that `make setup` installs, when they are there."""

import json
from pathlib import Path

import matplotlib
import numpy as np
import pytest
import torch

from dml_tutorial import data
from dml_tutorial.data import rendered as G

TTF = Path(matplotlib.get_data_path()) / "fonts" / "ttf"
TINY = tuple(G.Face(name, "fonts-dejavu-core", str(TTF / f"{name}.ttf"))
             for name in ("DejaVuSans", "DejaVuSans-Bold", "DejaVuSerif", "DejaVuSansMono"))


def _load(tmp_path, **kw):
    return data.load_dataset("glyphs", script="latin", faces=TINY, n_classes=40, size=16, root=tmp_path,
                             progress=False, **{"seen_fraction": 0.5, **kw})


def test_class_disjoint_validation_and_sample_splits(tmp_path):
    s = _load(tmp_path)
    per_class = len(TINY) * 2  # faces x renders
    assert len(s.train) == 20 * per_class and len(s.test) == 20 * per_class
    assert not set(s.train.labels) & set(s.test.labels)
    x = s.train.batch([0])
    assert x.shape == (1, 1, 16, 16) and x.dtype == torch.float32 and 0 <= x.min() and x.max() <= 1
    v = _load(tmp_path, split="validation")
    assert set(v.train.labels) | set(v.test.labels) == set(s.train.labels)  # only seen characters
    assert not set(v.test.labels) & set(s.test.labels) and len(set(v.test.labels)) == 4  # 20% of 20
    m = _load(tmp_path, split="samples", test_faces=1)
    assert set(m.train.labels) == set(m.test.labels) == set(range(40))
    assert set(m.test.extras["face"]) == {3} and set(m.train.extras["face"]) == {0, 1, 2}
    assert s.class_names[0] == chr(int(s.train.extras["code"][0]))


def test_named_seen_characters_train_and_every_other_one_tests(tmp_path):
    """EPS's even/odd experiment asks for characters 0-5 as the digits' loader gives digits 0-5; without ``seen``
    the split is the first ``seen_fraction`` of the characters, as before."""
    s = data.load_dataset("glyphs", script="latin", faces=TINY, n_classes=10, size=16, root=tmp_path,
                          progress=False, seen=range(6))
    assert set(s.train.labels) == set(range(6)) and set(s.test.labels) == set(range(6, 10))
    assert len(s.train) == 6 * len(TINY) * 2
    assert set(_load(tmp_path, seen=None).train.labels) == set(range(20))


def test_the_same_arguments_give_the_same_arrays_and_the_cache_is_checked(tmp_path):
    a = _load(tmp_path / "a")
    b = _load(tmp_path / "b")
    assert torch.equal(a.train.x, b.train.x)
    manifest = json.loads(next((tmp_path / "a" / "glyphs").glob("*.json")).read_text())
    assert set(manifest["fonts"]) == {f"{f.name}.ttf" for f in TINY} and len(manifest["arrays_sha256"]) == 64
    c = _load(tmp_path / "a")  # from the cache
    assert torch.equal(a.train.x, c.train.x)
    cache = next((tmp_path / "a" / "glyphs").glob("*.npz"))
    with np.load(cache) as f:
        arrays = {k: f[k] for k in f.files}
    arrays["x"][0, 0, 0, 0] ^= 1
    np.savez(cache, **arrays)
    with pytest.warns(UserWarning, match="does not match its manifest"):
        d = _load(tmp_path / "a")  # rendered again
    assert torch.equal(a.train.x, d.train.x)


def test_jitter_makes_two_renders_differ_and_centres_the_glyph():
    from PIL import ImageFont

    font = ImageFont.truetype(TINY[0].path, 26)
    rng = np.random.default_rng(0)
    one, two = G.render("A", font, 32, rng), G.render("A", font, 32, rng)
    plain = G.render("A", font, 32, rng, jitter=False)
    assert one.shape == (32, 32) and one.dtype == np.uint8 and not np.array_equal(one, two)
    ys, xs = np.nonzero(plain > 128)
    assert abs(xs.mean() - 15.5) < 3 and abs(ys.mean() - 15.5) < 3  # anchor "mm"


def test_a_changed_font_warns_and_a_missing_one_names_the_packages(tmp_path, monkeypatch):
    monkeypatch.setattr(G, "FONT_SHA256", {"DejaVuSans.ttf": "0" * 64})
    with pytest.warns(UserWarning, match="differs from the one"):
        _load(tmp_path)
    gone = (G.Face("Nowhere", "fonts-nowhere", str(tmp_path / "no.ttf")),)
    with pytest.raises(FileNotFoundError, match="apt-get install fonts-nowhere"):
        data.load_dataset("glyphs", faces=gone, root=tmp_path)


def test_bad_arguments_are_clear_errors(tmp_path):
    with pytest.raises(ValueError, match="split"):
        _load(tmp_path, split="both")
    with pytest.raises(ValueError, match="seen_fraction"):
        _load(tmp_path, seen_fraction=1.0)
    with pytest.raises(ValueError, match="test_faces"):
        _load(tmp_path, split="samples", test_faces=4)
    with pytest.raises(ValueError, match="script"):
        data.load_dataset("glyphs", script="klingon", faces=TINY, root=tmp_path)


@pytest.mark.skipif(not all(Path(f.path).exists() for f in G.FACES), reason="the CJK fonts are not installed")
def test_the_installed_cjk_fonts_are_debians_and_share_thousands_of_characters():
    for face in G.FACES:
        assert G._sha256(Path(face.path)) == G.FONT_SHA256[Path(face.path).name], face.path
    assert len(G.common_characters(G.FACES, "cjk")) == 8974  # the intersection of the 11 faces' cmaps
    hangul = [f for f in G.FACES if G.common_characters([f], "hangul")]
    assert len(hangul) == 6 and len(G.common_characters(hangul, "hangul")) == 11172


def test_lead_consonants_follow_the_unicode_syllable_order():
    # 가 (g-a), 까 (kk-a), 나 (n-a) and 힣 (h-i-h): leads ㄱ, ㄲ, ㄴ, ㅎ, the 1st, 2nd, 3rd and 19th of the 19
    assert G.lead_consonant([ord(c) for c in "가까나힣"]).tolist() == [0, 1, 2, 18]



@pytest.mark.skipif(not all(Path(f.path).exists() for f in G.FACES), reason="the CJK fonts are not installed")
def test_hangul_splits_keep_whole_superclasses_and_eps_relabels_by_them(tmp_path):
    from dml_tutorial import eps

    faces = tuple(f for f in G.FACES if G.common_characters([f], "hangul"))[:2]
    s = data.load_dataset("glyphs", script="hangul", faces=faces, n_classes=60, size=16, root=tmp_path,
                          progress=False)
    for ds in (s.train, s.test):  # the lead consonant of each image's syllable, read off its name
        leads = [(ord(s.class_names[y]) - 0xAC00) // 588 for y in ds.labels]
        assert ds.extras["superclass"].tolist() == leads
    leads = sorted(set(s.train.extras["superclass"]) | set(s.test.extras["superclass"]))
    seen = round(2 / 3 * len(leads))  # the first two thirds of the leads drawn, each whole on one side
    assert sorted(set(s.train.extras["superclass"])) == leads[:seen]
    assert sorted(set(s.test.extras["superclass"])) == leads[seen:]
    by = eps.by_superclass(s)
    assert np.array_equal(by.train.labels, s.train.extras["superclass"])
    assert np.array_equal(by.test.extras["letters"], s.test.labels) and "superclass" in by.name
    with pytest.raises(ValueError, match="superclass"):
        eps.by_superclass(_load(tmp_path))


def test_unseen_characters_in_unseen_faces(tmp_path):
    """Test bed II's split: training on the seen characters in the first faces, testing on the unseen characters
    in the last ``unseen_faces`` faces only; its validation split stays in the training faces."""
    s = _load(tmp_path, unseen_faces=1)
    assert set(s.train.extras["face"]) == {0, 1, 2} and set(s.test.extras["face"]) == {3}
    assert not set(s.train.labels) & set(s.test.labels)
    assert len(s.train) == 20 * 3 * 2 and len(s.test) == 20 * 1 * 2 and "faces 3-3 unseen" in s.source
    v = _load(tmp_path, split="validation", unseen_faces=1)
    assert set(v.train.extras["face"]) == set(v.test.extras["face"]) == {0, 1, 2}
    assert not set(v.test.labels) & set(s.test.labels)
    with pytest.raises(ValueError, match="unseen_faces"):
        _load(tmp_path, split="samples", unseen_faces=1)
    with pytest.raises(ValueError, match="unseen_faces"):
        _load(tmp_path, unseen_faces=4)


def test_unseen_faces_drawn_by_the_seed(tmp_path):
    """``vary_faces``: each seed tests on its own unseen faces (issue #86), the training side on every other face,
    the validation split inside those; the same seed draws the same faces."""
    drawn = {}
    for seed in range(6):
        s = _load(tmp_path, unseen_faces=2, vary_faces=True, seed=seed)
        unseen = set(s.test.extras["face"])
        assert len(unseen) == 2 and not unseen & set(s.train.extras["face"])
        assert set(s.train.extras["face"]) | unseen == {0, 1, 2, 3}
        assert unseen == set(data.rendered.unseen_face_ids(4, 2, seed)) and f"drawn by seed {seed}" in s.source
        v = _load(tmp_path, split="validation", unseen_faces=2, vary_faces=True, seed=seed)
        assert set(v.train.extras["face"]) == set(v.test.extras["face"]) == {0, 1, 2, 3} - unseen
        drawn[seed] = tuple(sorted(unseen))
    assert len(set(drawn.values())) > 1  # six seeds draw more than one pair of the six pairs
    for seed in range(3):  # DCDL's closed-set protocol: every character, the test faces drawn by the seed
        s = _load(tmp_path, split="samples", test_faces=1, vary_faces=True, seed=seed)
        assert set(s.test.extras["face"]) == set(data.rendered.unseen_face_ids(4, 1, seed))
        assert set(s.train.extras["face"]) == {0, 1, 2, 3} - set(s.test.extras["face"])
    assert data.rendered.unseen_face_ids(11, 3, 4) == data.rendered.unseen_face_ids(11, 3, 4)
    assert data.rendered.unseen_face_ids(11, 3) == [8, 9, 10]
    with pytest.raises(ValueError, match="between 1 and 10"):
        data.rendered.unseen_face_ids(11, 11, 0)


def test_fewer_training_characters_keep_the_test_side_and_follow_the_seed(tmp_path):
    """``train_characters``: a paper's number of training classes against the same unseen characters and faces."""
    full, few = _load(tmp_path, unseen_faces=1), _load(tmp_path, unseen_faces=1, train_characters=5)
    assert sorted(set(few.train.labels)) == sorted(set(full.train.labels))[:5]
    assert len(few.train) == 5 * 3 * 2 and np.array_equal(few.test.labels, full.test.labels)
    assert "5 of the seen characters" in few.source
    a, b = (_load(tmp_path, vary_split=True, seed=s, train_characters=5) for s in (0, 1))
    assert set(a.train.labels) != set(b.train.labels) and len(set(a.train.labels)) == 5
    assert set(a.train.labels) <= set(_load(tmp_path, vary_split=True, seed=0).train.labels)
    for split, n in (("validation", 5), ("classes", 1), ("classes", 21)):
        with pytest.raises(ValueError, match="train_characters"):
            _load(tmp_path, split=split, train_characters=n)


def test_a_set_disjoint_from_a_test_bed_shares_none_of_its_characters(tmp_path):
    """The pretraining set (``disjoint_from``) draws from the characters the test bed of (n, seed) leaves, so a
    start never saw a character the test bed trains or tests on; its cache file is its own."""
    bed = _load(tmp_path)  # 40 of Latin's 94 characters, seed 0
    codes = set(bed.train.extras["code"]) | set(bed.test.extras["code"])
    other = data.load_dataset("glyphs", script="latin", faces=TINY, n_classes=30, size=16, root=tmp_path,
                              progress=False, data_seed=1, disjoint_from=(40, 0))
    others = set(other.train.extras["code"]) | set(other.test.extras["code"])
    assert len(others) == 30 and not codes & others
    assert len(list((tmp_path / "glyphs").glob("*-not40c-seed0.npz"))) == 1


def test_a_varied_split_follows_the_seed_and_keeps_validation_inside_the_seen_characters(tmp_path):
    """``vary_split``: which characters are seen follows the seed (issue #49: runs over seeds vary the class split
    too); the same seed gives the same split, the validation characters stay among the seen ones."""
    a, b, c = (_load(tmp_path, vary_split=True, seed=s) for s in (0, 1, 0))
    assert set(a.train.labels) == set(c.train.labels) != set(b.train.labels)
    assert len(set(a.train.labels)) == len(set(b.train.labels)) == 20 and "split by seed 1" in b.source
    assert set(_load(tmp_path).train.labels) == set(range(20))  # without it: the first characters, as before
    v = _load(tmp_path, split="validation", vary_split=True, seed=1)
    assert set(v.train.labels) | set(v.test.labels) == set(b.train.labels)


def test_the_seen_lead_consonants_follow_the_seed_each_whole_on_one_side():
    """Hangul's ``vary_split`` (issue #86: EPS's letters were tested on the same consonants in every seed): the
    seen leads are drawn by the seed, each lead's syllables all on one side; the same seed draws the same leads;
    without a seed, the first leads in code order, as before."""
    lead = np.repeat(np.arange(6), [3, 1, 2, 4, 2, 3])  # six leads, in code order, of 15 syllables
    order, n = G._by_lead(lead, 2 / 3)
    assert order.tolist() == list(range(15)) and n == 10  # leads 0-3 seen: 3 + 1 + 2 + 4 syllables
    drawn = {}
    for seed in range(8):
        order, n = G._by_lead(lead, 2 / 3, seed)
        assert sorted(order.tolist()) == list(range(15))
        seen = set(lead[order[:n]].tolist())
        assert len(seen) == 4 and not seen & set(lead[order[n:]].tolist())  # whole leads on each side
        assert np.count_nonzero(np.diff(lead[order])) == 5  # each lead's syllables together
        drawn[seed] = seen
    assert len({frozenset(v) for v in drawn.values()}) > 1
    assert G._by_lead(lead, 2 / 3, 3)[0].tolist() == G._by_lead(lead, 2 / 3, 3)[0].tolist()
    assert G._by_lead(lead, 0.99, 1)[1] < 15  # a lead is always left unseen


def test_varied_characters_are_drawn_by_the_seed(tmp_path):
    """``vary_characters`` (EPS's even/odd: its ``seen`` are fixed indices): each seed draws its own characters, so
    the raw images, and what raw pixels retrieve, differ by seed; the same seed the same ones."""
    def load(**kw):
        s = data.load_dataset("glyphs", script="latin", faces=TINY, n_classes=10, size=16, root=tmp_path,
                              progress=False, seen=range(6), **kw)
        return s, set(s.train.extras["code"].tolist()) | set(s.test.extras["code"].tolist())

    (a, one), (b, two), (_, again) = (load(vary_characters=True, seed=s) for s in (0, 1, 0))
    assert one == again != two and len(two) == 10
    assert set(a.train.labels) == set(b.train.labels) == set(range(6))  # the even/odd indices stay
    assert not np.array_equal(a.train.batch([0]), b.train.batch([0]))
    assert one == load()[1]  # seed 0's draw is the default one (data_seed 0)


def test_the_specimen_is_the_plain_character_then_the_test_beds_draws(tmp_path):
    """Per face: the character as :func:`render` draws it without jitter, then the draws of :func:`build` (the test
    bed's own jitter, one generator over faces then draws). A missing face names its package."""
    from PIL import ImageFont

    drawn = G.specimen("A", faces=TINY, size=16, renders=3, seed=5)
    assert drawn.shape == (len(TINY), 4, 16, 16) and drawn.dtype == np.uint8
    built = G.build([ord("A")], TINY, 16, 3, seed=5, progress=False)
    for f, face in enumerate(TINY):
        plain = G.render("A", ImageFont.truetype(face.path, int(0.8 * 16)), 16, None, jitter=False)
        assert np.array_equal(drawn[f, 0], plain) and plain.max() == 255  # something is drawn
        assert np.array_equal(drawn[f, 1:], built["x"][built["face"] == f, 0])
        assert not np.array_equal(drawn[f, 1], drawn[f, 2])  # each draw its own jitter
    gone = (G.Face("Nowhere", "fonts-nowhere", str(tmp_path / "no.ttf")),)
    with pytest.raises(FileNotFoundError, match="apt-get install fonts-nowhere"):
        G.specimen("A", faces=gone)
