"""A sweep point's finished trainings carried between machines (dml_tutorial.carry)."""
import io
import json
import tarfile
from functools import partial
from pathlib import PurePosixPath

import pytest
import torch

from dml_tutorial import carry, experiment, search, spec, train
from dml_tutorial.settings import Settings


def _cache(folder):
    """A run cache as a sweep point leaves it part-way: two results, a training in progress, a kept state."""
    inner = folder / "cache" / "eps-glyphs-de2280e13a"
    inner.mkdir(parents=True)
    for name, seconds in (("trial-a-seed5-0123456789.pt", 300.0), ("trial-b-seed5-9876543210.pt", 20.5)):
        torch.save({"metrics": {"seconds": seconds}}, inner / name)
    for name in ("trial-c-seed5-1111111111.partial.pt", "trial-a-seed5-0123456789.state.pt"):
        torch.save({"model": torch.zeros(3)}, inner / name)
    (inner / "trial-c-seed5-1111111111.partial.pt.settings").write_text("{}")
    (inner / "trial-d-seed5-2222222222.pt.tmp").write_bytes(b"half written")
    return folder / "cache"


def test_a_pack_carries_the_finished_trainings_and_nothing_unfinished(tmp_path):
    cache = _cache(tmp_path)
    pack = carry.pack_path(tmp_path / "pending", "eps", "glyphs2_seed-5")
    assert pack == tmp_path / "pending" / "eps" / "glyphs2_seed-5.runs.tar.gz"
    assert carry.pack(cache, pack) == (2, 0) and carry.count(pack) == 2
    with tarfile.open(pack) as tar:
        assert sorted(tar.getnames()) == ["eps-glyphs-de2280e13a/trial-a-seed5-0123456789.pt",
                                          "eps-glyphs-de2280e13a/trial-b-seed5-9876543210.pt"]
    elsewhere = tmp_path / "other-machine" / "cache"
    assert carry.unpack(pack, elsewhere) == 2
    assert experiment.cache_seconds(elsewhere) == experiment.cache_seconds(cache) == (320.5, 2)
    for name in ("trial-a-seed5-0123456789.pt", "trial-b-seed5-9876543210.pt"):
        inner = "eps-glyphs-de2280e13a"
        assert (elsewhere / inner / name).read_bytes() == (cache / inner / name).read_bytes()
    assert not list(tmp_path.glob("pending/eps/*.tmp"))


def test_unpacking_keeps_what_the_cache_already_holds_and_a_new_pack_replaces_the_old(tmp_path):
    cache = _cache(tmp_path)
    pack = tmp_path / "p.runs.tar.gz"
    carry.pack(cache, pack)
    made = pack.read_bytes()
    assert carry.pack(cache, pack) == (2, 0) and pack.read_bytes() == made  # the same files: the same bytes
    target = tmp_path / "again"
    kept = target / "eps-glyphs-de2280e13a" / "trial-a-seed5-0123456789.pt"
    kept.parent.mkdir(parents=True)
    kept.write_bytes(b"trained here")
    assert carry.unpack(pack, target) == 1 and kept.read_bytes() == b"trained here"
    assert carry.unpack(pack, target) == 0
    torch.save({"metrics": {"seconds": 1.0}}, cache / "eps-glyphs-de2280e13a" / "trial-e-seed5-3333333333.pt")
    assert carry.pack(cache, pack) == (3, 0) and carry.count(pack) == 3
    assert carry.pack(tmp_path / "no-such-cache", pack) == (0, 0) and carry.count(pack) == 0


@pytest.mark.parametrize("name, kind", [("../escaped.pt", tarfile.REGTYPE), ("/abs/olute.pt", tarfile.REGTYPE),
                                        ("inner/../../up.pt", tarfile.REGTYPE), ("link.pt", tarfile.SYMTYPE),
                                        ("notes.txt", tarfile.REGTYPE), ("x.partial.pt", tarfile.REGTYPE),
                                        ("pretrained/start.txt", tarfile.REGTYPE)])
def test_a_pack_with_anything_but_finished_trainings_under_the_cache_unpacks_nothing(tmp_path, name, kind):
    pack = tmp_path / "bad.runs.tar.gz"
    with tarfile.open(pack, "w:gz") as tar:
        good = tarfile.TarInfo("inner/good-seed0-0123456789.pt")
        good.size = 4
        tar.addfile(good, io.BytesIO(b"good"))
        bad = tarfile.TarInfo(name)
        bad.type = kind
        if kind == tarfile.SYMTYPE:
            bad.linkname = "/etc/passwd"
        else:
            bad.size = 3
        tar.addfile(bad, io.BytesIO(b"bad") if kind != tarfile.SYMTYPE else None)
    with pytest.raises(ValueError, match="is neither a finished training of a run cache nor a pretrained start"):
        carry.unpack(pack, tmp_path / "cache")
    assert not (tmp_path / "cache").exists() and not (tmp_path / "escaped.pt").exists()


def _start(root, sha, name="glyphs2-seeded-seed5"):
    """A pretrained start as ``pretrain.build_start`` leaves it under a data root: weights and their record."""
    weights, record = root / "pretrained" / f"{name}.pt", root / "pretrained" / f"{name}.json"
    weights.parent.mkdir(parents=True, exist_ok=True)
    weights.write_bytes(sha.encode() * 10)
    record.write_text(json.dumps({"name": name, "sha256": sha}))
    return weights, record


def test_a_pack_carries_the_start_its_trainings_began_from_and_never_mixes_two_builds(tmp_path):
    """Another CPU family builds other start weights: the rest of a point must train from its own start."""
    cache, start = _cache(tmp_path), _start(tmp_path / "data", "a" * 64)
    pack = tmp_path / "p.runs.tar.gz"
    assert carry.pack(cache, pack, start) == (2, 0) and carry.count(pack) == 2  # the start is not a training
    here = tmp_path / "machine-2"
    assert carry.unpack(pack, here / "cache", here / "data") == 2
    for file in start:
        assert (here / "data" / "pretrained" / file.name).read_bytes() == file.read_bytes()
    assert carry.unpack(pack, here / "cache", here / "data") == 0  # the same start: nothing to do
    other = tmp_path / "machine-3"
    _start(other / "data", "b" * 64)  # this machine built its own start of that seed
    with pytest.raises(ValueError, match=r"another build of the start 'glyphs2-seeded-seed5' .*\(bbbbbbbbbbbb\)"):
        carry.unpack(pack, other / "cache", other / "data")
    assert not (other / "cache").exists()  # nothing unpacked
    assert json.loads((other / "data" / "pretrained" / "glyphs2-seeded-seed5.json").read_text())["sha256"] == "b" * 64


def test_a_pack_leaves_out_what_is_cheaper_to_train_again_than_to_keep(tmp_path):
    """EPS on test bed II: Table 1's trials took minutes and weigh 6 KB; Table 2's took seconds and weigh 0.8 MB
    (their validation embeddings)."""
    cache = tmp_path / "cache"
    cache.mkdir()
    embeddings = torch.zeros(3200, 64)  # 819 KB
    for name, seconds, test_embeddings in (("minutes-small", 300.0, None), ("seconds-large", 10.0, embeddings),
                                           ("minutes-large", 120.0, embeddings), ("none-small", None, None)):
        metrics = {} if seconds is None else {"seconds": seconds}
        torch.save({"metrics": metrics, "test_embeddings": test_embeddings}, cache / f"{name}-seed0-0123456789.pt")
    kept = {f.name.split("-seed")[0]: carry.worth_carrying(f) for f in carry.finished(cache)}
    assert kept == {"minutes-small": True, "seconds-large": False, "minutes-large": True, "none-small": True}
    size = (cache / "seconds-large-seed0-0123456789.pt").stat().st_size
    assert size > carry.SMALL and 10.0 * carry.BYTES_PER_SECOND < size < 120.0 * carry.BYTES_PER_SECOND
    pack = tmp_path / "p.runs.tar.gz"
    assert carry.pack(cache, pack) == (3, 1)
    with tarfile.open(pack) as tar:
        assert "seconds-large-seed0-0123456789.pt" not in tar.getnames()
    assert carry.pack(cache, pack, bytes_per_second=float("inf")) == (4, 0)  # everything


def test_a_pack_within_its_budget_keeps_the_most_training_seconds_per_byte(tmp_path, monkeypatch):
    cache = _cache(tmp_path)
    sizes = {f.name: f.stat().st_size for f in carry.finished(cache)}
    # room for one of the two results: trial-a bought 300 s, trial-b 20.5 s, in files of about the same size
    monkeypatch.setattr(carry, "MAX_BYTES", max(sizes.values()) + min(sizes.values()) - 1)
    pack = tmp_path / "p.runs.tar.gz"
    assert carry.pack(cache, pack) == (1, 1)
    with tarfile.open(pack) as tar:
        assert tar.getnames() == ["eps-glyphs-de2280e13a/trial-a-seed5-0123456789.pt"]


_TRAINED = []


def _bench_like(spec):
    """A runner as the bench's on test bed II: a search's trial (``options["curve"]``) scores MAP@R at every epoch
    (best at lr 3e-3, epoch 2) and returns the embeddings of 3,200 validation images (0.8 MB) after 30 s; a grid run
    took 300 s. Each call is listed in ``_TRAINED``."""
    _TRAINED.append(spec.key)
    lr, trial = spec.settings.lr, "curve" in spec.options
    history = [{"epoch": e, "MAP@R": 0.5 - abs(lr - 3e-3) - abs(e - 2) / 100} for e in range(1, spec.settings.epochs + 1)]
    embeddings = torch.rand(3200, 64, generator=torch.Generator().manual_seed(round(lr * 1e4)))
    return experiment.Run({"seconds": 30.0 if trial else 300.0}, embeddings, train.History(history if trial else []))


def test_a_search_travels_without_its_trials_embeddings_and_resumes_to_the_same_choice(tmp_path):
    """The bench's trials on test bed II weigh 0.8 MB (their embeddings) for 20-40 s of training: too heavy to carry
    as they are. A pack carries them without what a resumed search never reads, and the search resumed from the
    pack on another machine trains nothing and chooses the same; a grid run travels whole."""
    cfg = Settings(profile="test", dataset="subclusters", model="mlp", dim=8, epochs=2, lr=1e-3, threads=1)
    row = spec.RunSpec("best shot", "Triplet", "triplet", cfg, seed=3)
    rule = search.Search("MAP@R", search.Axis("lr", (1e-4, 3e-4, 1e-3, 3e-3, 1e-2), (1e-3,)), lengths=(2,))
    cache = tmp_path / "here" / "bench-glyphs-0123456789"
    chosen = search.best_shot(row, rule, partial(experiment.run_one, run=_bench_like, cache=cache))
    assert chosen.values == {"lr": 3e-3, "epochs": 2} and len(chosen.trials) == 4  # 1e-3; 3e-4, 3e-3; 1e-2
    grid_run = experiment.run_grid([row], _bench_like, cache=cache)[row.key][0]
    assert all(f.stat().st_size > 0.8e6 for f in carry.finished(cache))  # every result holds its embeddings

    pack = tmp_path / "pending" / "bench" / "glyphs2_seed-3.runs.tar.gz"
    assert carry.pack(cache.parent, pack) == (5, 0)
    made = pack.read_bytes()
    assert carry.pack(cache.parent, pack) == (5, 0) and pack.read_bytes() == made  # the same bytes again
    with tarfile.open(pack) as tar:
        sizes = {PurePosixPath(m.name).name.split("-seed")[0]: m.size for m in tar.getmembers()}
    assert sizes.pop("best_shot-Triplet-") > 0.8e6  # the grid run (its column ""), whole
    assert len(sizes) == 4 and max(sizes.values()) < 8 * 1024  # the trials (their columns: lr, knob, epochs)

    elsewhere = tmp_path / "elsewhere"
    assert carry.unpack(pack, elsewhere) == 5
    _TRAINED.clear()
    again = search.best_shot(row, rule, partial(experiment.run_one, run=_bench_like, cache=elsewhere / cache.name))
    loaded = experiment.run_grid([row], _bench_like, cache=elsewhere / cache.name)[row.key][0]
    assert _TRAINED == [] and again.as_data() == chosen.as_data()  # nothing trained again, the same choice
    assert torch.equal(loaded.test_embeddings, grid_run.test_embeddings)
