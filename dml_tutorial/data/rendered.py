"""Glyphs: thousands of character classes rendered offline from Debian's CJK fonts, the test bed where deep metric
learning visibly works on a CPU (Omniglot's protocol with fonts for drawers).

A class is one character; its samples are the character drawn by each font face (11 designs: sans, serif,
brush-style kai, Japanese gothic and mincho, bold and regular), each rendered ``renders`` times at ``size`` px
with a small random affine jitter (rotation up to 12 degrees, scale 0.8-1.1, shift up to 2 px). Training on some
characters and retrieving others is zero-shot retrieval over thousands of classes, the regime of the papers'
CUB/Cars/SOP, unlike Fashion-MNIST's five seen classes, where raw pixels beat every trained embedding.

- ``split="classes"``: the first ``seen_fraction`` of the characters for training, the rest for testing;
- ``split="validation"``: inside the seen characters only: their last ``val_fraction`` held out for testing, so a
  search never sees a test character;
- ``split="samples"``: every character in both, the faces split (the first ones for training, the last
  ``test_faces`` for testing): closed-set retrieval of designs never seen (DCDL's probe protocol);
- ``unseen_faces=n`` with ``"classes"`` or ``"validation"``: the last ``n`` faces leave the training side and
  only they draw the test side: **unseen characters in unseen faces** (test bed II), where raw pixels fall far
  below a trained network, as on CUB or Cars. The validation split then stays inside the training faces, so no
  search sees a test character or a test face. With ``vary_faces``, the ``n`` unseen faces are drawn by ``seed``
  (:func:`unseen_face_ids`) instead of being the last ones, so that runs over seeds vary the faces a claim is
  tested on too (issue #86: three fixed faces measured this test bed, not the claim); the same for the "samples"
  split's ``test_faces``.

``disjoint_from=(n, seed)`` draws the characters from those that the test bed of ``n`` characters drawn with
``seed`` does not use: the pretraining set of :mod:`dml_tutorial.pretrain` (the test bed's ImageNet) never holds a
character the test bed trains or tests on.

``script="hangul"`` draws Hangul syllables instead (in the six faces that have them), with the syllable's lead
consonant as ``extras["superclass"]`` (19 superclasses of many syllables each: the EPS paper's Omniglot alphabets).

Deterministic: the arrays are built once and cached under ``root/glyphs/`` with a manifest holding the SHA-256 of
every font file and of the arrays; a font that differs from the one the book's runs used (:data:`FONT_SHA256`)
is a warning, a missing one an error naming the Debian packages (``make setup`` installs them).
"""

from __future__ import annotations

import hashlib
import json
import warnings
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from .._checks import check_choice
from .core import DATA_ROOT, ArrayDataset, Splits, split_by_class


@dataclass(frozen=True)
class Face:
    """One font face: the Debian package that installs it, its file and its index in a collection (.ttc)."""

    name: str
    package: str
    path: str
    index: int = 0


_NOTO, _ARPHIC, _WQY = "/usr/share/fonts/opentype/noto", "/usr/share/fonts/truetype/arphic", "/usr/share/fonts/truetype/wqy"
#: The 11 faces of the test bed (Debian 12's packages), the six with Hangul first.
FACES = (
    Face("Noto Sans CJK", "fonts-noto-cjk", f"{_NOTO}/NotoSansCJK-Regular.ttc"),
    Face("Noto Sans CJK Bold", "fonts-noto-cjk", f"{_NOTO}/NotoSansCJK-Bold.ttc"),
    Face("Noto Serif CJK", "fonts-noto-cjk", f"{_NOTO}/NotoSerifCJK-Regular.ttc"),
    Face("Noto Serif CJK Bold", "fonts-noto-cjk", f"{_NOTO}/NotoSerifCJK-Bold.ttc"),
    Face("WenQuanYi Zen Hei", "fonts-wqy-zenhei", f"{_WQY}/wqy-zenhei.ttc"),
    Face("WenQuanYi Micro Hei", "fonts-wqy-microhei", f"{_WQY}/wqy-microhei.ttc"),
    Face("AR PL UKai", "fonts-arphic-ukai", f"{_ARPHIC}/ukai.ttc"),
    Face("AR PL UMing", "fonts-arphic-uming", f"{_ARPHIC}/uming.ttc"),
    Face("IPA Gothic", "fonts-ipafont-gothic", "/usr/share/fonts/opentype/ipafont-gothic/ipag.ttf"),
    Face("IPA Mincho", "fonts-ipafont-mincho", "/usr/share/fonts/opentype/ipafont-mincho/ipam.ttf"),
    Face("HanaMin A", "fonts-hanazono", "/usr/share/fonts/truetype/hanazono/HanaMinA.ttf"),
)
#: The fonts' SHA-256 as Debian 12 ships them (fonts-noto-cjk 1:20220127+repack1-1, fonts-arphic-ukai
#: 0.2.20080216.2-5, fonts-arphic-uming 0.2.20080216.2-11, fonts-wqy-zenhei 0.9.45-8, fonts-wqy-microhei
#: 0.2.0-beta-3.1, fonts-ipafont-* 00303-23, fonts-hanazono 20170904-2.1; measured 2026-11-25).
FONT_SHA256 = {
    "NotoSansCJK-Regular.ttc": "b76b0433203017ca80401b2ee0dd69350349871c4b19d504c34dbdd80541690a",
    "NotoSansCJK-Bold.ttc": "faa5f3656a78b2e2d450d27fe8382c778bc2b6bb5ea29c986664a6a435056ceb",
    "NotoSerifCJK-Regular.ttc": "a04178ec485dffdff7cc0c0c20e1fce9202d7e2160d805e8e44a4c8841c58481",
    "NotoSerifCJK-Bold.ttc": "a5d4b046c127da3d7c72f98b46c41489cd29bf52abfdf18aba920903e920d4ac",
    "wqy-zenhei.ttc": "79c18ebe7b811951e8311bad7103ebeae8c337ed9988ea69e8a78a66cfe029b9",
    "wqy-microhei.ttc": "2420e8078af796b19a3f6ef13de527a1a91c1e7171eea115926c614ced1009b3",
    "ukai.ttc": "cfc758e69386a21bade8cb3b373fda20d7f2fac6e8904ced2ded98588b63e274",
    "uming.ttc": "fe952e55617275142d9cefd4d79eade4df446517b0478b2567d9bc7df49f70e2",
    "ipag.ttf": "503af4a8b84d1079b8e2e358dc7f7a7fb8cb7a1f212f35eaef6782dbfc75a55e",
    "ipam.ttf": "ab923870b9ea047179c14fa78eede8d3957b6bfed26577253b5f08f75c102a34",
    "HanaMinA.ttf": "7ca87559414474848fc513a8d8eb42d5b0f8194c30c2abdfbfedff5398ec88d7",
}
#: Unicode ranges of the scripts: CJK Unified Ideographs, Hangul syllables, printable ASCII (for small tests).
SCRIPTS = {"cjk": (0x4E00, 0x9FFF), "hangul": (0xAC00, 0xD7A3), "latin": (0x21, 0x7E)}
HANGUL_LEADS = 19  # a syllable is 0xAC00 + (lead * 21 + vowel) * 28 + tail


def font_paths(faces=FACES) -> list[Path]:
    """The faces' files; a clear error naming the Debian packages when any is missing."""
    missing = [f for f in faces if not Path(f.path).exists()]
    if missing:
        packages = " ".join(sorted({f.package for f in faces}))
        raise FileNotFoundError(f"glyph fonts not found: {', '.join(f.path for f in missing)}; install them with "
                                f"`apt-get install {packages}` (`make setup` does this on Debian)")
    return [Path(f.path) for f in faces]


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def common_characters(faces, script: str) -> list[int]:
    """Code points of ``script`` that every face maps to a glyph (fontTools' best cmap), sorted."""
    from fontTools.ttLib import TTFont

    low, high = SCRIPTS[script]
    common = None
    for face in faces:
        cmap = TTFont(face.path, fontNumber=face.index, lazy=True).getBestCmap()
        have = {c for c in cmap if low <= c <= high}
        common = have if common is None else common & have
    return sorted(common or ())


def render(char: str, font, size: int, rng: np.random.Generator, jitter: bool = True) -> np.ndarray:
    """``char`` drawn white on black, centred (``anchor="mm"``) in a ``size`` px square with ``font`` (a PIL
    FreeType font at 80% of ``size``), then, with ``jitter``, rotated by up to 12 degrees, scaled by 0.8-1.1 and
    shifted by up to 2 px (one affine map, bilinear). Returns uint8 ``[size, size]``."""
    from PIL import Image, ImageDraw

    img = Image.new("L", (size, size), 0)
    ImageDraw.Draw(img).text((size / 2, size / 2), char, fill=255, font=font, anchor="mm")
    if jitter:
        angle, scale = np.deg2rad(rng.uniform(-12, 12)), rng.uniform(0.8, 1.1)
        dx, dy = rng.uniform(-2, 2, 2)
        c, s, m = np.cos(angle) / scale, np.sin(angle) / scale, size / 2
        # PIL maps each output pixel (x, y) to the input pixel (a x + b y + c, d x + e y + f): the inverse map
        inverse = (c, s, m - c * (m + dx) - s * (m + dy), -s, c, m + s * (m + dx) - c * (m + dy))
        img = img.transform(img.size, Image.Transform.AFFINE, inverse, resample=Image.Resampling.BILINEAR)
    return np.asarray(img, dtype=np.uint8)


def build(characters: list[int], faces, size: int, renders: int, seed: int, progress: bool = True) -> dict:
    """Render every character in every face ``renders`` times: ``x`` uint8 ``[N, 1, size, size]``, ``labels``
    (the character's index in ``characters``), ``face`` and ``render`` per sample. One generator (``seed``)
    draws the jitter in a fixed order, so the arrays depend only on the arguments, the fonts and FreeType."""
    from PIL import ImageFont
    from tqdm.auto import tqdm

    rng = np.random.default_rng(seed)
    fonts = [ImageFont.truetype(f.path, int(0.8 * size), index=f.index) for f in faces]
    n = len(characters) * len(faces) * renders
    x, labels = np.empty((n, 1, size, size), dtype=np.uint8), np.empty(n, dtype=np.int64)
    face_of, render_of = np.empty(n, dtype=np.int64), np.empty(n, dtype=np.int64)
    i = 0
    for label, code in enumerate(tqdm(characters, desc="rendering glyphs", disable=not progress)):
        for f, font in enumerate(fonts):
            for r in range(renders):
                x[i, 0] = render(chr(code), font, size, rng, jitter=True)
                labels[i], face_of[i], render_of[i] = label, f, r
                i += 1
    return {"x": x, "labels": labels, "face": face_of, "render": render_of}


def specimen(char: str, faces=FACES, size: int = 32, renders: int = 4, seed: int = 0) -> np.ndarray:
    """One character as the test bed draws it, for a picture: uint8 ``[len(faces), 1 + renders, size, size]``,
    each face's row holding the character unjittered, then ``renders`` jittered draws (:func:`build`'s jitter).
    A clear error naming the Debian packages where a face is missing (:func:`font_paths`)."""
    from PIL import ImageFont

    font_paths(faces)
    drawn = build([ord(char)], faces, size, renders, seed, progress=False)["x"][:, 0]
    plain = [render(char, ImageFont.truetype(f.path, int(0.8 * size), index=f.index), size, None, jitter=False)
             for f in faces]
    return np.concatenate([np.stack(plain)[:, None], drawn.reshape(len(faces), renders, size, size)], axis=1)


def _arrays_sha256(arrays: dict) -> str:
    h = hashlib.sha256()
    for key in sorted(arrays):
        h.update(key.encode())
        h.update(np.ascontiguousarray(arrays[key]).tobytes())
    return h.hexdigest()


def _check_fonts(faces, recorded: dict) -> None:
    for face in faces:
        name = Path(face.path).name
        expected = recorded.get(name)
        if expected and _sha256(Path(face.path)) != expected:
            warnings.warn(f"the font {face.path} differs from the one the cache or the book's runs used "
                          f"(SHA-256 {expected[:12]}...): its glyphs, and so the numbers, may differ; Debian 12's "
                          f"{face.package} is the reference", stacklevel=3)


def _draw(available: list[int], n_classes: int, data_seed: int) -> list[int]:
    """``n_classes`` code points drawn with ``data_seed`` from ``available`` (all if fewer), sorted."""
    rng = np.random.default_rng(data_seed)
    return sorted(rng.choice(available, size=min(n_classes, len(available)), replace=False).tolist())


def load_arrays(n_classes: int = 1500, size: int = 32, renders: int = 2, script: str = "cjk", data_seed: int = 0,
                faces=FACES, root=DATA_ROOT, progress: bool = True,
                disjoint_from: tuple[int, int] | None = None) -> tuple[dict, dict]:
    """The rendered arrays and their manifest, from the cache under ``root/glyphs/`` or built (and cached) now.
    ``n_classes`` characters are drawn with ``data_seed`` from those every face has (all of them if fewer), less
    the characters of the test bed ``disjoint_from = (n_classes, data_seed)`` where it is given."""
    check_choice(script, tuple(SCRIPTS), "script")
    paths = font_paths(faces)
    if script == "hangul":  # only some faces draw Hangul: keep those
        faces = tuple(f for f in faces if common_characters([f], script))
    paths = [Path(f.path) for f in faces]
    key = f"{script}-{n_classes}c-{size}px-{renders}r-{len(faces)}f-seed{data_seed}"
    if disjoint_from is not None:
        key += f"-not{disjoint_from[0]}c-seed{disjoint_from[1]}"
    folder = Path(root) / "glyphs"
    arrays_path, manifest_path = folder / f"{key}.npz", folder / f"{key}.json"
    if arrays_path.exists() and manifest_path.exists():
        manifest = json.loads(manifest_path.read_text())
        with np.load(arrays_path) as f:
            arrays = {k: f[k] for k in f.files}
        if _arrays_sha256(arrays) == manifest["arrays_sha256"]:
            _check_fonts(faces, {**FONT_SHA256, **manifest["fonts"]})
            return arrays, manifest
        warnings.warn(f"{arrays_path} does not match its manifest's SHA-256; rendering it again", stacklevel=2)
    _check_fonts(faces, FONT_SHA256)
    available = common_characters(faces, script)
    if not available:
        raise ValueError(f"the faces share no character of the script {script!r}")
    if disjoint_from is not None:  # that test bed's own draw (the same faces and script), left out
        used = set(_draw(available, *disjoint_from))
        available = [c for c in available if c not in used]
    chosen = _draw(available, n_classes, data_seed)
    arrays = build(chosen, faces, size, renders, seed=data_seed, progress=progress)
    arrays["code"] = np.asarray(chosen, dtype=np.int64)
    from PIL import features

    manifest = {"key": key, "characters": len(chosen), "faces": [f.name for f in faces],
                "fonts": {p.name: _sha256(p) for p in paths}, "freetype": features.version("freetype2"),
                "arrays_sha256": _arrays_sha256(arrays)}
    folder.mkdir(parents=True, exist_ok=True)
    np.savez(arrays_path.with_suffix(".tmp.npz"), **arrays)
    arrays_path.with_suffix(".tmp.npz").replace(arrays_path)  # never a half-written cache under the real name
    manifest_path.write_text(json.dumps(manifest, indent=1) + "\n")
    return arrays, manifest


def lead_consonant(code):
    """The lead consonant (0-18) of Hangul syllables given by code point: Unicode orders the 11,172 syllables by
    lead, then vowel (21), then tail (28)."""
    return (np.asarray(code) - SCRIPTS["hangul"][0]) // (21 * 28)


def glyphs(split: str = "classes", n_classes: int = 1500, seen_fraction: float = 2 / 3, val_fraction: float = 0.2,
           test_faces: int = 3, size: int = 32, renders: int = 2, script: str = "cjk", data_seed: int = 0,
           faces=FACES, root=DATA_ROOT, progress: bool = True, seen=None, unseen_faces: int = 0,
           disjoint_from: tuple[int, int] | None = None, vary_split: bool = False, seed: int = 0,
           train_characters: int | None = None, vary_faces: bool = False, vary_characters: bool = False,
           **_) -> Splits:
    """The glyph test bed (module docstring) as :class:`Splits` of ``[N, 1, size, size]`` uint8 images (scaled on
    access), labels = character index; ``extras`` hold ``face``, ``render``, ``code`` (the code point) and, for
    Hangul, ``superclass`` (the lead consonant). Defaults: 1,500 characters, 1,000 seen (of which 200 are the
    validation split's held-out ones) and 500 unseen, 11 faces x 2 renders: 22 images per class, 22,000 training
    images and 11,000 test images (scoring 11,000 unseen images takes about a second a run on 2 cores). ``seen``
    (character indices, ``split="classes"`` only) trains on those characters instead and tests on the others, as
    the digits' ``seen``: EPS's even/odd experiment takes characters 0-5 of ``n_classes=10``. Hangul's "classes"
    split keeps whole superclasses on each side (the first ``seen_fraction`` of the lead consonants seen).
    ``unseen_faces``, ``vary_faces`` and ``disjoint_from``: see the module docstring. ``vary_split``: which
    characters are seen
    follows ``seed`` (the notebook's ``SEED``) instead of their order, so that runs over seeds also vary the
    class split (issue #49: a claim should hold over splits, not for one); with Hangul, which lead consonants are
    seen (each whole on one side). ``vary_characters``: the ``n_classes`` characters themselves, and their
    renders, are drawn by ``seed`` (``data_seed = seed``): for a set given by ``seen`` (EPS's even/odd characters),
    the one way a seed varies it (issue #86).
    ``train_characters`` (``split="classes"`` only): train on the lowest-numbered ``train_characters`` of the seen
    characters (of the seed's seen set where ``vary_split``), the test side unchanged: a paper's number of training
    classes (CUB's 100, Cars' 98) against the same unseen characters."""
    check_choice(split, ("classes", "validation", "samples"), "split")
    if vary_characters:
        data_seed = seed
    arrays, manifest = load_arrays(n_classes, size, renders, script, data_seed, faces, root, progress, disjoint_from)
    splits = _split(arrays, manifest, split, seen_fraction, val_fraction, test_faces, script, seen,
                    seed if vary_split else None, seed if vary_faces else None)
    if train_characters is not None:
        splits = _fewer_seen(splits, split, train_characters)
    if not unseen_faces:
        return splits
    n_faces = len(manifest["faces"])
    if split == "samples" or not 0 < unseen_faces < n_faces:
        raise ValueError(f"unseen_faces must be between 1 and {n_faces - 1} with the 'classes' or 'validation' "
                         f"split, got {unseen_faces} with {split!r}")
    unseen = unseen_face_ids(n_faces, unseen_faces, seed if vary_faces else None)
    train = splits.train.subset(~np.isin(splits.train.extras["face"], unseen))
    test = splits.test.subset(np.isin(splits.test.extras["face"], unseen) == (split == "classes"))
    drawn = f"faces {', '.join(map(str, unseen))} unseen, drawn by seed {seed}" if vary_faces else \
        f"faces {unseen[0]}-{unseen[-1]} unseen"
    source = f"{splits.source}; {drawn}"
    return Splits(splits.name, split, train, test, source, splits.class_names)


def unseen_face_ids(n_faces: int, unseen: int, seed: int | None = None) -> list[int]:
    """The ``unseen`` faces (of ``n_faces``) that only the test side draws: the last ones, or, with a ``seed``,
    ``unseen`` of them drawn by it (a NumPy generator of its own, so that the draw depends on the seed alone)."""
    if not 0 < unseen < n_faces:
        raise ValueError(f"unseen faces must be between 1 and {n_faces - 1}, got {unseen}")
    if seed is None:
        return list(range(n_faces - unseen, n_faces))
    return sorted(int(f) for f in np.random.default_rng([86, seed]).choice(n_faces, unseen, replace=False))


def _fewer_seen(splits: Splits, split: str, n: int) -> Splits:
    """The "classes" split trained on the lowest-numbered ``n`` of its seen characters (:func:`glyphs`'
    ``train_characters``), its test side as it was."""
    seen = np.unique(splits.train.labels)
    if split != "classes" or not 2 <= n <= len(seen):
        raise ValueError(f"train_characters must be between 2 and {len(seen)} with the 'classes' split, got {n} "
                         f"with {split!r}")
    train = splits.train.subset(np.isin(splits.train.labels, seen[:n]))
    return Splits(splits.name, split, train, splits.test, f"{splits.source}; {n} of the seen characters trained on",
                  splits.class_names)


def _by_lead(lead: np.ndarray, seen_fraction: float, seed: int | None = None) -> tuple[np.ndarray, int]:
    """Hangul's characters ordered by lead consonant, and how many of them are seen: those of the first
    ``seen_fraction`` of the leads (at least one left unseen), in code order, or in an order drawn by ``seed``
    (the seen leads vary with it; each lead's syllables stay together, so the validation split's held-out
    characters, the last seen ones, are whole or partial superclasses as without a seed)."""
    leads = np.unique(lead)
    if seed is not None:
        leads = np.random.default_rng([86, seed]).permutation(leads)
    seen = leads[:min(round(seen_fraction * len(leads)), len(leads) - 1)]
    order = np.concatenate([np.flatnonzero(lead == c) for c in leads])
    return order, int(np.isin(lead, seen).sum())


def _split(arrays, manifest, split, seen_fraction, val_fraction, test_faces, script, seen, order_seed=None,
           faces_seed=None) -> Splits:
    """The "classes", "validation" or "samples" split of the rendered arrays (:func:`glyphs`), all faces; with
    ``order_seed`` the characters are shuffled by it before the seen ones are cut off; with ``faces_seed`` the
    "samples" split's test faces are drawn by it (:func:`unseen_face_ids`), not the last ones."""
    extras = {"face": arrays["face"], "render": arrays["render"], "code": arrays["code"][arrays["labels"]]}
    if script == "hangul":
        extras["superclass"] = lead_consonant(extras["code"])
    ds = ArrayDataset(torch.from_numpy(arrays["x"]), arrays["labels"], extras)
    names = [chr(c) for c in arrays["code"]]
    source = f"glyphs {manifest['key']} ({len(manifest['faces'])} faces, FreeType {manifest['freetype']})"
    if order_seed is not None:
        source += f", characters split by seed {order_seed}"
    k = int(manifest["characters"])
    if split == "samples":
        n_faces = len(manifest["faces"])
        if not 0 < test_faces < n_faces:
            raise ValueError(f"test_faces must be between 1 and {n_faces - 1}, got {test_faces}")
        tested = unseen_face_ids(n_faces, test_faces, faces_seed)
        if faces_seed is not None:
            source += f", test faces {', '.join(map(str, tested))} drawn by seed {faces_seed}"
        train = ~np.isin(ds.extras["face"], tested)
        return Splits("glyphs", split, ds.subset(train), ds.subset(~train), source, names)
    if seen is not None and split == "classes":
        return Splits("glyphs", split, *split_by_class(ds, seen), source, names)
    if script == "hangul":  # whole superclasses on each side: no unseen syllable's lead consonant is seen
        order, n_seen = _by_lead(lead_consonant(arrays["code"]), seen_fraction, order_seed)
    else:
        n_seen = round(seen_fraction * k)
        order = np.arange(k) if order_seed is None else np.random.default_rng(order_seed).permutation(k)
    if not 1 < n_seen < k:
        raise ValueError(f"seen_fraction {seen_fraction} leaves no seen or no unseen character of {k}")
    seen_train, unseen = split_by_class(ds, order[:n_seen])
    if split == "classes":
        return Splits("glyphs", split, seen_train, unseen, source, names)
    n_val = round(val_fraction * n_seen)
    if not 1 < n_val < n_seen:
        raise ValueError(f"val_fraction {val_fraction} leaves no fitting or no validation character")
    fit, validation = split_by_class(seen_train, order[:n_seen - n_val])
    return Splits("glyphs", split, fit, validation, source, names)
