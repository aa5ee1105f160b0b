"""A softmax-pretrained start, the released codes' ImageNet start in small.

ECAML's released code (like most deep metric learning code) fine-tunes a backbone that a softmax classifier
trained on ImageNet, with a new, randomly initialised embedding layer ("fc") at 10x the backbone's learning rate.
No pretrained weights reach the offline test beds, so :func:`softmax_pretrained` makes the same kind of start on
the training split itself: the model's trunk and a linear classifier over its features (the embedding layer's
input) trained with cross-entropy on the seen classes' labels; the embedding layer gets no gradient and keeps its
random initialisation, as the new fc does.

    start = softmax_pretrained(splits.train, cfg, epochs=10, seed=0)
    run = experiment.train_and_retrieve(splits, loss, {**cfg, "lr": 1e-4, "head_lr_mult": 10}, ..., init=start)

The seen classes are the ones the metric loss trains on afterwards, never the unseen test classes.

Test bed II has a start of its own, closer to ImageNet's role (:data:`STARTS`): a trunk pretrained on characters
and faces that the test bed never tests on, one a seed since 0.23.0 (``glyphs2-seeded``: without the faces that seed
tests on), built by ``dml-tutorial pretrain glyphs2-seeded --seed S`` or on first use (about a minute on 2 cores),
kept under ``data/pretrained/`` with the SHA-256 of its weights, and loaded by every run whose profile names it
(``cfg["start"]``, :func:`load_start` with the run's seed); its features, not fine-tuned, are a reference row of
each table.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F

from . import models, sampling, train
from .data import input_shape


class SoftmaxClassifier(torch.nn.Module):
    """Cross-entropy of a linear classifier over the embedding layer's input (``batch.model.hidden``, the trunk's
    features after dropout), mean over the batch; a loss for :func:`dml_tutorial.train.fit`, which trains its
    weights with the model's."""

    def __init__(self, features: int, n_classes: int):
        super().__init__()
        self.fc = torch.nn.Linear(features, n_classes)

    def forward(self, z, y, batch):
        return F.cross_entropy(self.fc(batch.model.hidden), y)


def softmax_pretrained(data, cfg: dict, *, epochs: int, seed: int = 0, device="auto",
                       progress: bool = False, counted: bool = True) -> dict:
    """The state dict of ``cfg["model"]`` (as :func:`dml_tutorial.experiment.train_and_retrieve` builds it for
    ``seed``) after ``epochs`` epochs of :class:`SoftmaxClassifier` on ``data`` (labels: class indices 0..C-1 or
    any non-negative integers), Adam at ``cfg["lr"]`` on ``cfg["p"]`` x ``cfg["k"]`` batches
    (``batches_per_epoch`` of them). The trunk is trained; the embedding layer is the seed's random one.
    ``counted``: whether a chapter's plan counts it among its trainings (:func:`dml_tutorial.train.fit`)."""
    labels = np.asarray(data.labels)
    if labels.size == 0 or labels.min() < 0 or not np.issubdtype(labels.dtype, np.integer):
        raise ValueError("softmax pre-training needs non-negative integer class labels")
    if epochs < 1:
        raise ValueError(f"epochs must be at least 1, got {epochs}")
    train.seed_everything(seed, threads=cfg.get("threads"))
    model = models.from_settings(cfg, input_shape(data))
    classifier = SoftmaxClassifier(model.embedding.in_features, int(labels.max()) + 1)
    sampler = sampling.PKSampler(labels, p=cfg["p"], k=cfg["k"], seed=seed,
                                 batches_per_epoch=cfg.get("batches_per_epoch"))
    train.fit(model, classifier, data, epochs=epochs, sampler=sampler, lr=cfg["lr"], device=device, seed=seed,
              progress=progress, num_workers=cfg.get("workers", 0), description="softmax pre-training",
              counted=counted)
    return {name: t.detach().cpu().clone() for name, t in model.state_dict().items()}


#: Test bed II's start, the ImageNet of the glyph test bed: ``model``'s trunk softmax-pretrained on ``n_classes``
#: characters that the test bed (``disjoint_from``: 1,500 characters drawn with seed 0) never holds, rendered in its
#: training faces only (its last ``unseen_faces`` are left out, as the test bed leaves them out of training), for
#: ``steps`` Adam steps of ``p`` x ``k`` images. ``benchmarks/bench_testbed.py`` chose the length (one seed,
#: results/testbed_cpu.json): after 1,000 steps the start, not fine-tuned, retrieves the test bed's unseen characters
#: in unseen faces above the raw pixels and far below a triplet fine-tuned from it (as ImageNet features do on
#: CUB); after 250 or 500 steps its features fell below the raw pixels.
#: ``glyphs2-seeded`` is the same start made once per seed (issue #86: one fixed start measured this start, not the
#: claim): seed s pretrains with seed s and leaves out the faces test bed II's seed s tests on
#: (:func:`dml_tutorial.data.rendered.unseen_face_ids`, as ``vary_faces`` draws them), saved as
#: ``glyphs2-seeded-seed<s>`` (:func:`resolved`).
STARTS = {
    "glyphs2": {"n_classes": 2000, "data_seed": 1, "disjoint_from": [1500, 0], "unseen_faces": 3,
                "model": "glyphnet", "dim": 64, "dropout": 0.0, "p": 32, "k": 4, "lr": 1e-3, "steps": 1000,
                "seed": 0, "threads": 2},
}
STARTS["glyphs2-seeded"] = {**STARTS["glyphs2"], "per_seed": True}
#: Where the starts are kept, under the data root: ``<name>.pt`` (the state dict) and ``<name>.json`` (its record:
#: the settings, what it saw, the SHA-256 of the weights (:func:`weights_sha256`), the seconds it took).
FOLDER = "pretrained"


def applies(cfg: dict) -> bool:
    """Whether a run of ``cfg`` starts from ``cfg["start"]``: a start names one network, and a training of another
    (EPS's 2-D even/odd network on a test bed with a start) trains from scratch."""
    name = cfg.get("start")
    if not name:
        return False
    if name not in STARTS:
        raise ValueError(f"unknown start {name!r}; known: {', '.join(STARTS)}")
    return STARTS[name]["model"] == cfg["model"]


def resolved(name: str, seed: int | None = None) -> tuple[str, dict]:
    """``(file name, changes)`` of the start ``name`` for a run of ``seed``: the start itself, or, for a per-seed
    start, its build for that seed (``<name>-seed<s>``, pretrained with seed s without the seed's unseen faces).
    A name :data:`STARTS` does not hold (a benchmark's variant, saved under its own name) is its own file."""
    if not STARTS.get(name, {}).get("per_seed"):
        return name, {}
    if seed is None:
        raise ValueError(f"the start {name!r} is made once per seed: say which seed's run loads it")
    return f"{name}-seed{int(seed)}", {"seed": int(seed), "faces_seed": int(seed)}


def start_paths(name: str, root=None) -> tuple[Path, Path]:
    """The weights file and the record of the start ``name`` under ``root`` (default: ``data.DATA_ROOT``)."""
    from .data import DATA_ROOT

    folder = Path(DATA_ROOT if root is None else root) / FOLDER
    return folder / f"{name}.pt", folder / f"{name}.json"


def pretraining_set(cfg: dict, root=None, progress: bool = False, faces=None):
    """The start's training images: ``cfg["n_classes"]`` characters disjoint from the test bed's, in the faces
    the test bed trains on (an :class:`~dml_tutorial.data.ArrayDataset`, labels 0..n-1): all but its last
    ``cfg["unseen_faces"]``, or, with ``cfg["faces_seed"]``, all but those that seed's test bed draws as unseen;
    ``faces``: the glyph faces (default: the test bed's 11, :data:`dml_tutorial.data.GLYPH_FACES`),
    ``cfg["script"]`` and ``cfg["size"]`` where given."""
    from .data import DATA_ROOT, ArrayDataset
    from .data.rendered import FACES, load_arrays, unseen_face_ids

    faces = FACES if faces is None else faces
    arrays, _ = load_arrays(cfg["n_classes"], size=cfg.get("size", 32), script=cfg.get("script", "cjk"),
                            data_seed=cfg["data_seed"], faces=faces, root=DATA_ROOT if root is None else root,
                            progress=progress, disjoint_from=tuple(cfg["disjoint_from"]))
    keep = ~np.isin(arrays["face"], unseen_face_ids(len(faces), cfg["unseen_faces"], cfg.get("faces_seed")))
    return ArrayDataset(torch.from_numpy(arrays["x"][keep]), arrays["labels"][keep], {"face": arrays["face"][keep]})


def build_start(name: str, root=None, progress: bool = True, save_as: str | None = None, faces=None,
                **changes) -> dict:
    """Pretrain the start ``name`` (:data:`STARTS`, with ``changes``), save its weights and its record (as
    ``save_as``, default ``name``: a benchmark keeps variants apart), and return the record. Deterministic on one
    machine (seeded, a fixed number of CPU threads)."""
    if name not in STARTS:
        raise ValueError(f"unknown start {name!r}; known: {', '.join(STARTS)}")
    cfg = {**STARTS[name], **changes}
    data = pretraining_set(cfg, root, progress, faces)
    began = time.perf_counter()
    state = softmax_pretrained(data, {**cfg, "batches_per_epoch": cfg["steps"]}, epochs=1, seed=cfg["seed"],
                               device="cpu", progress=progress, counted=False)  # no chapter grid's training: a
    # chapter that builds its start on first use ran its plan's count, not one more (a seed 1 failed there)
    weights, record_path = start_paths(save_as or name, root)
    weights.parent.mkdir(parents=True, exist_ok=True)
    train.save_checkpoint(weights, state=state)
    record = {"name": save_as or name, "start": name, "settings": cfg, "images": len(data),
              "classes": len(np.unique(data.labels)), "faces": sorted(int(f) for f in np.unique(data.extras["face"])),
              "seconds": time.perf_counter() - began, "sha256": weights_sha256(state), "torch": torch.__version__}
    record_path.write_text(json.dumps(record, indent=1) + "\n")
    return record


def load_start(name: str, root=None, build: bool = True, seed: int | None = None) -> dict:
    """The trunk of the start ``name`` (its state dict without the embedding layer, which each run initialises
    from its own seed, as a new fc on an ImageNet backbone), checked against the SHA-256 of its record; built first
    when missing and ``build``; a per-seed start's build for ``seed`` (:func:`resolved`). A weights file that does
    not match its record is an error, never used."""
    file, changes = resolved(name, seed)
    weights, record_path = start_paths(file, root)
    if not (weights.exists() and record_path.exists()):
        if not build:
            raise FileNotFoundError(f"no start {file!r} under {weights.parent}; build it with "
                                    f"`dml-tutorial pretrain {name}`")
        build_start(name, root, save_as=file, **changes)
    record = json.loads(record_path.read_text())
    try:
        state = torch.load(weights, map_location="cpu", weights_only=True)["state"]
    except Exception as err:  # a truncated or foreign file: say which, and how to rebuild it
        raise ValueError(f"{weights} cannot be read ({err}): rebuild it with `dml-tutorial pretrain {name}`") from err
    if weights_sha256(state) != record["sha256"]:
        raise ValueError(f"{weights} does not match the SHA-256 of its record {record_path}: rebuild it with "
                         f"`dml-tutorial pretrain {name}`")
    return {k: v for k, v in state.items() if not k.startswith("embedding.")}


def weights_sha256(state: dict) -> str:
    """The SHA-256 of a state dict's tensors (names, dtypes, shapes and bytes, in name order): the weights' own
    checksum, the same whatever file holds them (``torch.save`` writes the file's name into the archive)."""
    import hashlib

    digest = hashlib.sha256()
    for name in sorted(state):
        t = state[name].detach().cpu().contiguous()
        digest.update(f"{name}:{t.dtype}:{tuple(t.shape)}".encode())
        digest.update(t.numpy().tobytes() if t.dtype != torch.bfloat16 else t.view(torch.int16).numpy().tobytes())
    return digest.hexdigest()
