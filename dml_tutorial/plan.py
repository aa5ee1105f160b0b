"""The plan a chapter prints before it works: what it downloads, on which device, how many trainings of how many
steps, and about how long they take at the speed a short probe measures on this very device.

    plan = dml_tutorial.plan.make("dcdl", cfg, device)   # the chapter's first cells
    print(plan)
    ...
    plan.check()   # its last cell: the trainings it ran against the plan's count; an error if they differ

The trainings are those of the chapter's declared grid (:data:`GRIDS`: each paper module's and the bench's
``grid(cfg, seeds)``, the :class:`~dml_tutorial.spec.RunSpec` s its notebook runs, counted by :func:`from_specs`),
and of its searches, the trainings a search runs whatever the scores (a walk's further steps are added once known,
:meth:`Plan.add`). The foundations chapter, whose lesson shows its training loop in view, counts its two loops of
one training a seed. :meth:`Plan.check` compares that count with the trainings the process recorded
(:func:`dml_tutorial.recorder.current`), so that every executed notebook (CI's smoke runs included) tests it.

The estimate is the probe's seconds per training step (the chapter's model at its batch shape, random inputs,
``amp`` and ``channels_last`` as the profile says) times the planned steps. The probe trains a triplet loss, or the
training's own objective where that costs more than the network (DCDL's class-wise Sinkhorn and MMD terms: most of
a step next to the smoke profile's MLP, about 15% next to VGG-9, benchmarks/bench_discrepancy.py), on labels of as
many classes as the training's batches hold. For a dataset of JPEG files (CUB, Cars, SOP) it also counts what
reading them costs (:func:`reading`), which on Colab's two CPUs can exceed the training: the images decoded (both
splits once with the profile's ``decode_once``, else every batch and every evaluation pass, at the speed of one
loader process timed on 16 of the dataset's files, times ``workers``) and the images the evaluations embed (each
run's two splits, ECAML's per-epoch curves) at a forward probe's speed. Every chapter but the foundations (whose
loop in view scores after every epoch, inside its training time) also counts its evaluations (:func:`evaluation`):
each grid run's final scoring, each search trial's checkpoints (a trial has no final scoring: its last checkpoint
is its score) and ECAML's curve points, each kind timed once through the runs' own scoring code at the main split's
sizes (:func:`probe_scoring`), and for in-memory data the images they embed. :meth:`Plan.check` prints the measured
training time beside the estimate, and the whole chapter's beside :meth:`Plan.whole`.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field, replace
from functools import partial
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import torch

from . import bench, clustering, data, dcdl, ecaml, eps, guarantees, losses, models, pretrain, recorder, train
from .data.download import SOURCES
from .experiment import CURVE_SAMPLES
from .spec import fingerprint

#: Sizes of what torchvision downloads (the archives' bytes, from the datasets' own pages and torchvision's lists).
TORCHVISION_BYTES = {"mnist": 11_594_722, "fashion_mnist": 30_878_645, "cifar10": 170_498_071,
                     "cifar100": 169_001_437, "stl10": 2_640_397_119}
#: Training images of the paper datasets' standard splits (class-disjoint for CUB, Cars196 and SOP).
TRAIN_IMAGES = {"mnist": 60_000, "cifar10": 50_000, "cifar100": 50_000, "stl10": 5_000, "cub200": 5_864,
                "cars196": 8_054, "sop": 59_551}
#: Test images of the same splits (the unseen classes), which every run embeds once at its end.
TEST_IMAGES = {"cub200": 5_924, "cars196": 8_131, "sop": 60_502}
#: The test split's images and classes of the datasets :func:`split_sizes` does not load to count.
TEST_SPLITS = {"cub200": (5_924, 100), "cars196": (8_131, 98), "sop": (60_502, 11_316), "mnist": (10_000, 10),
               "cifar10": (10_000, 10), "cifar100": (10_000, 100), "stl10": (8_000, 10)}
#: Datasets read from JPEG files, whose decoding the plan counts (:func:`reading`).
ON_DISK = ("cub200", "cars196", "sop", "flowers102")
#: JPEGs decoded and cropped per second by one loader process when the dataset is not here yet to be timed: about
#: 313 / 2 on this course's 2-core Xeon and 537 / 2 on an H100 host pinned to 2 CPUs (benchmarks/bench_loader.py,
#: quality-90 JPEGs of CUB's size; results/loader_cpu.json, loader_cuda.json).
JPEG_PER_SECOND = 150
#: One input's shape by dataset; images read from disk are crops of the profile's ``image_size`` (224 px as the
#: papers; :func:`data.image_transforms`).
INPUT_SHAPES = {"digits": (1, 8, 8), "mnist1d": (1, 40), "mnist": (1, 28, 28), "fashion_mnist": (1, 28, 28),
                "cifar10": (3, 32, 32), "cifar100": (3, 32, 32), "stl10": (3, 32, 32), "subclusters": (2,),
                "glyphs": (1, 32, 32)}


@dataclass
class Trainings:
    """``runs`` trainings of ``steps`` steps each, on batches of ``batch`` inputs of ``shape`` for ``model``;
    ``loss``: what the probe times: ``None`` a triplet loss, ``("objective", hash)`` the training's own
    ``objective`` (a DCDL objective, by the hash of its description), ``("cbswr", method, changes)`` an
    unsupervised objective of :mod:`dml_tutorial.clustering` on images and their views, ``("bench", name)`` a
    labelled method of the bench (:func:`dml_tutorial.bench.make_loss`); on batches of ``classes`` classes
    (``None``: two inputs a class)."""

    section: str
    runs: int
    steps: int
    batch: int
    model: str
    shape: tuple
    loss: tuple | None = None
    classes: int | None = None
    curve_runs: int = 0  # of the runs, those that embed curve_images after every epoch (ECAML's Fig. 2)
    curve_images: int = 0
    epochs: int = 0
    checkpoints: int = 0  # per run: a search trial's validation scores (every eval_every epochs and the last)
    objective: object = field(default=None, compare=False, repr=False)  # with loss ("objective", digest)

    @property
    def key(self) -> tuple:
        """What one probe times: trainings that share it share a speed."""
        return self.model, self.batch, self.shape, self.loss, self.classes

    @property
    def images(self) -> int:
        """Inputs trained on: runs x steps x batch."""
        return self.runs * self.steps * self.batch


def _steps(cfg: dict, n_train: int, batch: int, epochs: int | None = None, batches: int | None = None) -> int:
    """Steps of one run: epochs x (``batches_per_epoch``, or one pass: ``n_train // batch``, as PKSampler)."""
    per_epoch = batches or cfg.get("batches_per_epoch") or max(1, n_train // batch)
    return (cfg["epochs"] if epochs is None else epochs) * per_epoch


def _shape(cfg: dict, dataset: str | None = None) -> tuple:
    """One input's shape for ``dataset`` (default: the chapter's) under ``cfg``."""
    side = cfg.get("image_size") or 224
    return INPUT_SHAPES.get(dataset or cfg["dataset"], (3, side, side))


def _foundations(cfg, n_train):  # the lesson's two loops in view: one training a seed, closed set then zero-shot
    batch, shape = cfg["p"] * cfg["k"], _shape(cfg)
    return [Trainings(s, cfg["n_seeds"], _steps(cfg, n_train, batch), batch, cfg["model"], shape)
            for s in ("closed set", "zero-shot")]


def _dcdl(cfg, n_train):  # each row's search's first trials (on a held-out face), then the grid
    classes = cfg.p or (20 if cfg.dataset == "cifar100" else 10)  # every class, or p of them

    def timing(spec):  # each objective with its own terms: the Sinkhorn and MMD terms cost most of a smoke step
        t = supervised(spec, n_train, batch=classes * spec.options["k"], objective=spec.method, classes=classes)
        return replace(t, curve_images=0)  # its curves: the pulls on one fixed batch, no split embedded

    specs = dcdl.best_shot_trials(cfg, 0) + dcdl.grid(cfg, range(cfg.n_seeds))
    return from_specs(specs, cfg, n_train, timing)


def _ecaml(cfg, n_train):  # the searches' sure trainings (the walks' rest: Plan.add), pre-trainings, the grid
    batch, shape, start = cfg.p * cfg.k, _shape(cfg), cfg.pretrained_start
    searches = []
    rates = (start or {}).get("lr_candidates") or ()  # the start's rows' searches: their own validation start
    if start:  # a softmax pre-training for each seed's start (and the rate search's)
        searches.append(Trainings("softmax pre-training", cfg.n_seeds + bool(rates),
                                  _steps(cfg, n_train, batch, epochs=start["epochs"]), batch, cfg.model, shape))
    shot = {"values": {"lr": cfg.lr, "epochs": cfg.epochs}}  # any choice: as many rows (the lengths: Plan.check)
    stand_in = {"best shot": {row: shot for row in ecaml.arms(cfg)}} if cfg.search_lrs else None
    specs = ecaml.best_shot_trials(cfg, 0) + ecaml.grid(cfg, range(cfg.n_seeds), stand_in)
    return searches + from_specs(specs, cfg, n_train)


def _eps(cfg, n_train):  # each arm's search's first trials (the validation split), then the grid, each on its split
    odd = TRAIN_IMAGES.get(cfg.even_odd_dataset, 1_797) * 6 // 10  # about the digits 0-5 (steps only)
    sizes = {eps.SPLITS[eps.EVEN_ODD]: (odd, _shape(cfg, cfg.even_odd_dataset)),
             eps.EVEN_ODD_VALIDATION: (odd, _shape(cfg, cfg.even_odd_dataset)),  # an upper bound: faces held out
             eps.SPLITS[eps.SUBCLUSTERS]: (4 * 3 * 100 // 2, (2,))}  # 4 classes x 3 modes x 100, half for training

    def timing(spec):  # each run's batch, and the images of its own split (the superclasses': at n_train)
        n, shape = sizes.get(spec.split, (n_train, _shape(cfg)))
        return supervised(spec, n, batch=spec.options["p"] * spec.options["k"], shape=shape)

    specs = eps.best_shot_trials(cfg, 0) + eps.grid(cfg, range(cfg.n_seeds))  # the searches' first trials, the grid
    return from_specs(specs, cfg, n_train, timing)


def _cbswr(cfg, n_train):  # the chapter's declared grid: the searches' first trials, then everything after them
    stand_in = {"head": cfg.head_candidates[0]} if cfg.head_candidates else None  # any choice: as many rows
    specs = clustering.head_search(cfg, 0) + clustering.best_shot_trials(cfg, 0)
    return from_specs(specs + clustering.grid(cfg, range(cfg.n_seeds), stand_in), cfg, n_train)


def from_specs(specs, cfg, n_train: int, timing=None) -> list[Trainings]:
    """The :class:`Trainings` of a chapter's declared grid (:class:`~dml_tutorial.spec.RunSpec` s): the runs of
    each table that share their steps, batch, model and what the probe times make one section (named by the table,
    and by the row where a table has several). ``timing(spec) -> Trainings`` says what one run costs (default
    :func:`supervised`, or :func:`unsupervised` for a method named by a string); a chapter passes its own where its
    runs take other batches, splits or objectives. A validation split's runs are counted at ``n_train`` images:
    an upper bound."""
    profile = cfg.to_dict()
    timing = timing or (lambda spec: (unsupervised(spec, profile, n_train) if isinstance(spec.method, str)
                                      else supervised(spec, n_train)))
    groups: dict[tuple, tuple[list, Trainings]] = {}
    for spec in specs:  # its epochs, whatever the timing: a search's longer trial scales them (Plan.add)
        t = replace(timing(spec), checkpoints=checkpoints(spec), epochs=spec.settings.epochs)
        keys, group = groups.setdefault((spec.table, t.key, t.steps, t.curve_images, t.checkpoints), ([], t))
        keys += [spec.key[1:]] if spec.key[1:] not in keys else []
        group.runs += 1
        group.curve_runs += bool(group.curve_images)
    tables = [table for table, *_ in groups]
    return [replace(t, section=table if tables.count(table) == 1 else f"{table} ({_rows(keys)})")
            for (table, *_), (keys, t) in groups.items()]


def checkpoints(spec) -> int:
    """How many times a run of ``spec`` scores its validation split while it trains: a search's trial
    (``options["curve"]``) after every ``eval_every`` epochs and after the last (:func:`dml_tutorial.search.
    best_shot`); 0 for any other run."""
    if "curve" not in spec.options:
        return 0
    epochs, every = spec.settings.epochs, spec.settings.get("eval_every") or 1
    return len(set(range(every, epochs + 1, every)) | {epochs})


def supervised(spec, n_train: int, *, batch: int | None = None, shape=None, objective=None,
               classes: int | None = None) -> Trainings:
    """One supervised run of a grid: ``batch`` inputs a step (default its settings' P x K), ``batches_per_epoch``
    steps an epoch or one pass over ``n_train`` images, inputs of ``shape`` (default its dataset's), timed with
    ``objective`` on ``classes`` classes (default: a triplet loss); where its options ask for ``curves`` it also
    embeds ``curve_samples`` of each split after every epoch (:class:`Reading`)."""
    own = spec.settings
    batch = batch or own.p * own.k
    curves = min(own.curve_samples or CURVE_SAMPLES, n_train) * 2 if spec.options.get("curves") else 0
    loss = None if objective is None else ("objective", fingerprint(objective)[:16])
    return Trainings("", 0, _steps(own, n_train, batch), batch, own.model, shape or _shape(own), loss, classes,
                     curve_images=curves, epochs=own.epochs, objective=objective)


def unsupervised(spec, profile: dict, n_train: int, method: str | None = None) -> Trainings:
    """One unsupervised run of a grid (:mod:`~dml_tutorial.clustering`'s ``method``, default the spec's): a batch
    of images and their views, one pass over ``n_train`` images an epoch, timed with its own method and the
    settings it changes from the ``profile``'s (a cluster head, K)."""
    own = spec.settings
    changes = tuple((k, v) for k, v in own.to_dict().items() if k in profile and v != profile[k])
    return Trainings("", 0, own.epochs * max(1, -(-(n_train - 1) // own.batch_size)), 2 * own.batch_size,
                     own.model, _shape(own), ("cbswr", method or spec.method, changes), epochs=own.epochs)


def _rows(keys: list) -> str:
    """A plan section's rows in brief: its first ``(row, column)`` (``"L_Trip, clean"``, ``"MS, 0.75"``, ``"CBS"``),
    and how many more."""
    row, column = keys[0]
    named = ", ".join(filter(None, [row, _column(column)]))
    return named + (f" and {len(keys) - 1} more" if len(keys) > 1 else "")


def _column(column) -> str:
    """A column in brief: numbers as ``%g``, a tuple's parts but ``None``, ``""`` for none."""
    if isinstance(column, tuple):
        return ", ".join(filter(None, map(_column, column)))
    if column is None:
        return ""
    return f"{column:g}" if isinstance(column, float) else str(column)


def _noise_guarantees(cfg, n_train):  # each row's search's first trials (the validation split), then the grid
    specs = guarantees.best_shot_trials(cfg, 0) + guarantees.grid(cfg, range(cfg.n_seeds), guarantees.stand_in(cfg))
    return from_specs(specs, cfg, n_train)


def _bench(cfg, n_train):  # each row's search's first trials (the validation split), then the grid, each method
    def timing(spec):  # timed with its own objective: L^W's transport solve costs many triplet steps
        m, own = bench.method(spec.method), spec.settings
        if not m.supervised:  # as the bench builds it: its knob, its batch of images and their views
            changes = ((m.knob, own[m.knob]), ("batch_size", own.batch_size))
            return replace(unsupervised(spec, {}, n_train), loss=("cbswr", m.unsupervised, changes))
        batch = cfg.p * cfg.k
        return Trainings("", 0, _steps(own, n_train, batch), batch, cfg.model, _shape(cfg), ("bench", spec.method),
                         cfg.p)

    specs = bench.best_shot_trials(cfg, 0) + bench.grid(cfg, range(cfg.n_seeds))
    return from_specs(specs, cfg, n_train, timing)


#: chapter -> function(cfg, training images) -> [Trainings]: its searches' sure trainings and its declared grid.
GRIDS = {"foundations": _foundations, "dcdl": _dcdl, "ecaml": _ecaml, "eps": _eps, "cbswr": _cbswr,
          "noise_guarantees": _noise_guarantees, "bench": _bench}


#: chapter -> grid(cfg, seeds): each chapter's declared runs after its searches, at the profile's own settings where
#: a search would choose (a choice changes what a run trains with, not how many runs there are).
SPECS = {"dcdl": dcdl.grid, "ecaml": ecaml.grid, "eps": eps.grid, "cbswr": clustering.grid, "bench": bench.grid,
         "noise_guarantees": lambda cfg, seeds: guarantees.grid(cfg, seeds, guarantees.stand_in(cfg))}
#: chapter -> its module, whose ``best_shots(cfg, seed, run)`` and ``grid(cfg, seeds, choices)`` :func:`chosen_grid`
#: reads.
SEARCHED = {"dcdl": dcdl, "ecaml": ecaml, "eps": eps, "cbswr": clustering, "bench": bench,
            "noise_guarantees": guarantees}


def stand_in_trial(trial):
    """A search trial that trains nothing: its held-out curve peaks at a rate and an epoch of its own row (hashes of
    the row's name: a rate between 1e-5 and 1e-2, an epoch up to 40), so that rows choose different rates and
    lengths."""
    from .experiment import Run

    s, metric, digest = trial.settings, trial.options["curve"], fingerprint(trial.row)
    target, peak = -5 + 3 * int(digest[:8], 16) / 16**8, 1 + int(digest[8:16], 16) % 40  # log10 rate, epoch
    every = s.eval_every or 1
    return Run({}, None, train.History([{"epoch": e, "loss": 0.0, metric: -abs(e - peak) / 1000
                                         - abs(np.log10(s.lr) - target)} for e in range(every, s.epochs + 1, every)]))


def chosen_grid(chapter: str, cfg, seeds) -> list:
    """The chapter's declared runs after searches whose choices differ row by row (:func:`stand_in_trial`): what
    a protocol registers (:mod:`dml_tutorial.protocol`), so that which row trains at which row's choice is part of
    its hash, not only the profile's settings. A profile that searches nothing: :data:`SPECS`' grid."""
    module = SEARCHED.get(chapter)
    choices = module.best_shots(cfg, 0, stand_in_trial) if module is not None and cfg.search_lrs else {}
    return module.grid(cfg, seeds, choices or None) if choices else SPECS[chapter](cfg, seeds)


def describe_grid(chapter: str, cfg) -> str:
    """The chapter's declared grid (:data:`SPECS`) in words, table by table: each row and column, its seeds, its
    method's name and options, and the settings it changes from the profile's (``dml-tutorial grid``)."""
    if chapter not in SPECS:
        raise ValueError(f"the {chapter} chapter declares no grid (chapters with one: {', '.join(SPECS)}); the "
                         "foundations lesson shows its training loop in view")
    specs = SPECS[chapter](cfg, range(cfg.n_seeds))
    profile, lines = cfg.to_dict(), []
    rows: dict[tuple, list] = {}
    for spec in specs:
        rows.setdefault(spec.key, []).append(spec)
    lines.append(f"The {chapter} chapter's grid, {cfg.profile} profile: {len(specs)} trainings in {len(rows)} rows "
                 "(after its searches, whose runs are not listed)")
    for table in dict.fromkeys(spec.table for spec in specs):
        mine = [runs for key, runs in rows.items() if key[0] == table]
        lines.append(f"{table}: {len(mine)} rows, {sum(map(len, mine))} trainings")
        for runs in mine:
            first = runs[0]
            changed = {k: v for k, v in first.settings.to_dict().items() if k in profile and v != profile[k]}
            extra = [f"seeds {', '.join(str(r.seed) for r in runs)}", f"split {first.split}"]
            extra += [f"{k} {v}" for k, v in dict(first.options).items()]
            extra += [f"{k} = {v}" for k, v in changed.items()]
            lines.append(f"  {_rows([first.key[1:]])}: {'; '.join(extra)}")
    return "\n".join(lines)


def train_images(cfg: dict, root=data.DATA_ROOT) -> int:
    """Training images of the chapter's main split (:func:`split_sizes`)."""
    return split_sizes(cfg, root)[0]


@dataclass
class Reading:
    """What a chapter on a dataset of JPEG files reads besides its training steps: ``decoded`` images decoded once
    (``decode_once``: both splits), ``jpeg`` images decoded by the loader during training and evaluation (without
    it), ``evaluated`` images embedded by the evaluations (each run's two splits at its end, ECAML's curves after
    every epoch), at ``jpeg_per_second`` (all loader processes) and ``forward_seconds`` per image."""

    decoded: int
    jpeg: int
    evaluated: int
    jpeg_per_second: float
    forward_seconds: float
    measured: bool  # the decoding speed timed on the dataset's own files, not :data:`JPEG_PER_SECOND`

    def seconds(self, training: float) -> float:
        """Seconds beyond ``training`` seconds of training steps: decoding once comes before the training; the JPEG
        loader's workers decode while the device trains and embeds, so only what they take beyond that counts."""
        embedding = self.evaluated * self.forward_seconds
        if self.jpeg:
            return max(training + embedding, self.jpeg / self.jpeg_per_second) - training
        return self.decoded / self.jpeg_per_second + embedding


def reading(cfg: dict, trainings: list, n_train: int, forward_seconds: float, root=data.DATA_ROOT) -> Reading | None:
    """The chapter's image reading (:class:`Reading`) when its dataset is read from JPEG files, else ``None``
    (in-memory data: :func:`evaluation` counts the images the evaluations embed). Counts
    only the trainings of the chapter's own model on its own images (not, e.g., EPS's even/odd MNIST runs)."""
    if cfg["dataset"] not in ON_DISK:
        return None
    shape, n_test = _shape(cfg), TEST_IMAGES.get(cfg["dataset"], n_train)
    own = [t for t in trainings if t.runs and t.model == cfg["model"] and t.shape == shape]
    evaluated = sum(t.runs * (n_train + n_test) + t.curve_runs * t.epochs * t.curve_images for t in own)
    once = bool(cfg.get("decode_once"))
    rate, measured = _jpeg_speed(cfg, root)
    return Reading(n_train + n_test if once else 0, 0 if once else sum(t.images for t in own) + evaluated,
                   evaluated, rate, forward_seconds, measured)


def split_sizes(cfg: dict, root=data.DATA_ROOT) -> tuple[int, int, int]:
    """The chapter's main split: training images, test images and test classes (the paper datasets' standard
    sizes, else those of the (offline, quick to load) in-memory dataset itself)."""
    if cfg["dataset"] in TEST_SPLITS:
        return (TRAIN_IMAGES[cfg["dataset"]], *TEST_SPLITS[cfg["dataset"]])
    split = "samples" if cfg["chapter"] in ("dcdl", "foundations") else "classes"
    options = {**({} if cfg.get("seen") is None else {"seen": cfg["seen"]}),  # None: the loader's own split
               **cfg.get("dataset_options", {})}
    splits = data.load_dataset(cfg["dataset"], split=split, root=root, **options)
    return len(splits.train), len(splits.test), len(set(np.asarray(splits.test.labels).tolist()))


@dataclass
class Evaluation:
    """What a chapter's runs compute besides their training steps (issue #88: a search's checkpoints and the final
    scorings can take as long as the training): ``parts``, ``{what: (how many, seconds each)}``, e.g. the final
    scorings (each run's test split, :func:`dml_tutorial.experiment._measure`), a search trial's checkpoints, ECAML's
    curve points, and for in-memory data the images those evaluations embed (where images are read from JPEG files
    :class:`Reading` counts the embedding)."""

    parts: dict
    timed: dict = field(default_factory=dict)  # seconds of one evaluation of each kind (:func:`probe_scoring`)

    def seconds(self) -> float:
        return sum(count * each for count, each in self.parts.values())

    def __str__(self) -> str:
        def each(seconds):
            return (f"{seconds * 1e6:,.1f} µs" if seconds < 1e-4 else f"{seconds * 1e3:,.2f} ms" if seconds < 0.1
                    else f"{seconds:.2g} s" if seconds < 90 else _duration(seconds))

        said = [f"{count:,} {what} ({each(s)} each)" for what, (count, s) in self.parts.items() if count]
        return f"Evaluations: {', '.join(said) or 'none'}: {_duration(self.seconds())}"


def probe_scoring(cfg: dict, n_train: int, n_test: int, classes: int, device, *, probe: bool = False,
                  checkpoint: bool = True, curve: bool = False, at_most: int = 8_000) -> dict:
    """Seconds of one evaluation of each kind, timed once on random unit embeddings of the profile's ``dim`` with
    ``classes`` balanced labels, through the code the runs call: ``"final"``, a run's scoring of its test split
    (:func:`dml_tutorial.experiment._measure`: Recall@K, k-means NMI and F1; with ``probe`` DCDL's linear probe and
    R@1); ``"checkpoint"``, a search trial's validation score (R@1, or the probe), counted at the test split's size
    (an upper bound: the held-out side is smaller); ``"curve"``, one of ECAML's curve points (R@1 and MAP@R on
    ``curve_samples`` of each split). Time-boxed: a split beyond ``at_most`` images is timed at ``at_most`` and
    scaled by the square of the ratio (the neighbours' N^2 distances dominate there)."""
    from . import metrics
    from .experiment import _measure

    dev = train.resolve_device(device)
    g = torch.Generator().manual_seed(0)

    def z(n):
        return torch.nn.functional.normalize(torch.randn(min(n, at_most), cfg["dim"], generator=g), dim=1).to(dev)

    def y(n):
        return np.arange(min(n, at_most)) % max(2, min(classes, n // 2))

    def timed(call, n) -> float:
        start = time.perf_counter()
        call()
        return (time.perf_counter() - start) * max(1.0, n / at_most) ** 2

    out = {"final": timed(lambda: _measure(z(n_train), y(n_train), z(n_test), y(n_test), cfg, probe, 0, dev), n_test)}
    if checkpoint:
        score = (partial(metrics.linear_probe_accuracy, z(n_train), y(n_train), z(n_test), y(n_test)) if probe else
                 partial(metrics.recall_at_k, z(n_test), y(n_test), (1,), device=dev))
        out["checkpoint"] = timed(score, n_test)
    if curve:
        n = min(cfg.get("curve_samples") or CURVE_SAMPLES, n_test)
        points = [partial(f, z(n), y(n), device=dev) for f in (partial(metrics.recall_at_k, ks=(1,)),
                                                                 metrics.map_at_r)] * 2  # the seen and unseen split
        out["curve"] = timed(lambda: [point() for point in points], n)
    return out


def evaluation(cfg: dict, trainings: list, sizes: tuple, device, forward_seconds: float | None = None,
               scoring=None, seconds: dict | None = None) -> Evaluation:
    """The chapter's evaluations (:class:`Evaluation`) for its ``trainings`` of its own model on its own images
    (as :func:`reading`: not, e.g., EPS's even/odd or sub-cluster runs), its main split of ``sizes`` (training
    images, test images, test classes): each run's final scoring (not a search trial's: its last checkpoint is its
    score, ``score=False`` in the chapters' runners), each search trial's checkpoints, ECAML's curve points, each
    timed once by ``scoring`` (:func:`probe_scoring`); with ``forward_seconds`` (in-memory data) also the images
    they embed: each scored run's two splits, each trial's test split once at its end, each checkpoint's test-sized
    split, each curve point's images; ``seconds``: those timings, already made (:meth:`Plan.add` recounts with
    them). The reference rows and a chapter's own extra measures (EPS's NMI+, its figures' t-SNE and UMAP) are not
    counted."""
    n_train, n_test, classes = sizes
    own = [t for t in trainings if t.runs and t.model == cfg["model"] and t.shape == _shape(cfg)]
    finals, trials = sum(t.runs for t in own if not t.checkpoints), sum(t.runs for t in own if t.checkpoints)
    checks = sum(t.runs * t.checkpoints for t in own)
    points = sum(t.curve_runs * t.epochs for t in own)
    if seconds is None:
        seconds = (scoring or probe_scoring)(cfg, n_train, n_test, classes, device, probe=cfg["chapter"] == "dcdl",
                                             checkpoint=bool(checks), curve=bool(points))
    parts = {"final scorings": (finals, seconds["final"]),
             "search checkpoints": (checks, seconds.get("checkpoint", 0.0)),
             "curve points": (points, seconds.get("curve", 0.0))}
    if forward_seconds is not None:
        embedded = finals * (n_train + n_test) + (trials + checks) * n_test + sum(
            t.curve_runs * t.epochs * t.curve_images for t in own)
        parts["images embedded"] = (embedded, forward_seconds)
    return Evaluation(parts, seconds)


def starts_to_build(cfg: dict, seeds, root=data.DATA_ROOT) -> Trainings | None:
    """The pretrained starts (:mod:`dml_tutorial.pretrain`) the chapter's runs of ``seeds`` load and that are not
    under ``root`` yet, which the first run builds (a per-seed start once per seed: issue #86): one softmax
    pre-training each, of the start's own steps and batch; ``None`` where every start is here or none applies.
    Not a training of the chapter's grid (:meth:`Plan.check` does not count it)."""
    if not pretrain.applies(cfg):
        return None
    start = pretrain.STARTS[cfg["start"]]
    files = {pretrain.resolved(cfg["start"], s)[0] for s in seeds}
    missing = [f for f in sorted(files) if not pretrain.start_paths(f, root)[0].exists()]
    if not missing:
        return None
    return Trainings("pretrained starts to build first", len(missing), start["steps"], start["p"] * start["k"],
                     start["model"], _shape(cfg), classes=start["p"])


def _jpeg_speed(cfg: dict, root, files: int = 16) -> tuple[float, bool]:
    """JPEGs decoded per second by the chapter's ``workers`` loader processes (at least one, at most the CPUs):
    one process timed on ``files`` of the dataset's own images when they are here, else :data:`JPEG_PER_SECOND`."""
    processes = max(1, min(cfg.get("workers") or 1, os.cpu_count() or 1))
    try:
        splits = data.load_dataset(cfg["dataset"], root=root, download=False)
    except (FileNotFoundError, ValueError, RuntimeError, OSError):
        return JPEG_PER_SECOND * processes, False
    paths = splits.train.paths[:files]
    start = time.perf_counter()
    for path in paths:
        data.decoded.decode_image(path, int((cfg.get("image_size") or 224) * 256 / 224))
    return processes * len(paths) / max(time.perf_counter() - start, 1e-9), True


def downloads(cfg: dict, root=data.DATA_ROOT) -> list[tuple[str, int | None, bool]]:
    """What the chapter fetches when it is missing: ``[(what, bytes or None, already here)]`` for its datasets (EPS
    also its even/odd one) and its backbone's ImageNet weights."""
    out = []
    for name in cfg.datasets():
        if name in SOURCES:
            source = SOURCES[name]
            out.append((f"{name} ({source.url.split('/')[2]})", source.size, (Path(root) / source.folder).exists()))
        elif name in TORCHVISION_BYTES:
            here = name == "fashion_mnist" and Path(data.DEBIAN_FASHION_MNIST).exists()
            out.append((f"{name} (torchvision)", TORCHVISION_BYTES[name], here or (Path(root) / name).exists()))
    if cfg["model"] in models.BACKBONES:
        import torchvision

        weights = getattr(torchvision.models, models.BACKBONES[cfg["model"]][1]).DEFAULT
        cached = Path(torch.hub.get_dir()) / "checkpoints" / weights.url.rsplit("/", 1)[-1]
        out.append((f"{cfg['model']} ImageNet weights (torchvision)", int(weights.meta["_file_size"] * 2**20),
                    cached.exists()))
    return out


def probe(model: str, shape: tuple, batch: int, dim: int, device, *, amp: bool = False, channels_last: bool = False,
          steps: int = 3, warmup: int = 1, loss_fn=None, classes: int | None = None, hidden: int | None = None,
          objective=None) -> float:
    """Seconds per training step of ``model`` (an MLP ``hidden`` wide where given) on ``device``: ``warmup`` then
    ``steps`` Adam steps of ``loss_fn`` (default: a triplet loss) on random inputs of ``batch`` x ``shape`` with
    labels in ``classes`` classes (default ``batch // 2``); or, with ``objective`` (``net -> module``), of that
    module called on the first and second half of the batch as images and their views."""
    dev = train.resolve_device(device)
    options = {"pretrained": False} if model in models.BACKBONES else {}  # the speed needs no trained weights
    if hidden is not None:
        options["hidden"] = hidden
    net = models.make_model(model, shape, dim, **options)
    net.to(dev, memory_format=torch.channels_last if channels_last and len(shape) == 3 else torch.preserve_format)
    own = None if objective is None else objective(net).to(dev).train()
    optimizer = torch.optim.Adam((own or net).parameters(), lr=1e-4)
    x = torch.randn(batch, *shape, device=dev)
    y = torch.arange(batch, device=dev) % max(1, classes or batch // 2)
    loss_fn = loss_fn or (lambda z, y: losses.triplet_loss(z, y, margin=0.2))
    arity = train._loss_arity(loss_fn)
    amp_dtype = train.amp_precision(dev)
    scaler = torch.amp.GradScaler(dev.type, enabled=amp and amp_dtype == torch.float16)

    def step():
        if own is not None:
            half = len(x) // 2
            loss = own(x[:half], x[half:2 * half], y[:half])[0]
        else:
            with torch.autocast(dev.type, dtype=amp_dtype, enabled=amp):
                z = net(x)
            batch = SimpleNamespace(x=x, indices=torch.arange(len(x)), model=net)  # as train.fit passes it
            loss = loss_fn(z.float(), y) if arity < 3 else loss_fn(z.float(), y, batch)
        optimizer.zero_grad(set_to_none=True)
        scaler.scale(loss).backward()
        scaler.step(optimizer)
        scaler.update()

    for _ in range(warmup):
        step()
    if dev.type == "cuda":
        torch.cuda.synchronize(dev)
    start = time.perf_counter()
    for _ in range(steps):
        step()
    if dev.type == "cuda":
        torch.cuda.synchronize(dev)
    return (time.perf_counter() - start) / steps


@torch.no_grad()
def probe_forward(model: str, shape: tuple, dim: int, device, *, batch: int = 128, amp: bool = False,
                  channels_last: bool = False, steps: int = 2) -> float:
    """Seconds per input of ``model``'s forward pass in eval mode (an evaluation's embedding) on ``device``, on
    random inputs of ``batch`` x ``shape``."""
    dev = train.resolve_device(device)
    options = {"pretrained": False} if model in models.BACKBONES else {}
    net = models.make_model(model, shape, dim, **options).to(dev).eval()
    image = len(shape) == 3
    if channels_last and image:
        net.to(memory_format=torch.channels_last)
    x = torch.randn(batch, *shape, device=dev)
    if channels_last and image:
        x = x.contiguous(memory_format=torch.channels_last)
    with torch.autocast(dev.type, dtype=train.amp_precision(dev), enabled=amp):
        net(x)  # warm-up
        if dev.type == "cuda":
            torch.cuda.synchronize(dev)
        start = time.perf_counter()
        for _ in range(steps):
            net(x)
        if dev.type == "cuda":
            torch.cuda.synchronize(dev)
    return (time.perf_counter() - start) / (steps * batch)


def _duration(seconds: float) -> str:
    """``42 s``, ``3.5 min`` or ``1.2 h``."""
    if seconds < 90:
        return f"{seconds:.0f} s"
    return f"{seconds / 60:,.1f} min" if seconds < 5400 else f"{seconds / 3600:,.1f} h"


@dataclass
class Plan:
    """What :func:`make` found: the chapter's downloads, its trainings, the probe's speeds and the estimate."""

    chapter: str
    profile: str
    device: str
    downloads: list
    trainings: list
    seconds_per_step: dict = field(default_factory=dict)  # (model, batch, shape) -> seconds
    start: int = 0  # the recorder's trainings when the plan was made
    reading: Reading | None = None  # datasets of JPEG files: decoding and evaluation passes
    evaluation: Evaluation | None = None  # the runs' scorings, checkpoints and curves (and embedding, in memory)
    recount: object = field(default=None, repr=False, compare=False)  # trainings -> Evaluation, after add()
    building: Trainings | None = None  # the pretrained starts the first run builds (:func:`starts_to_build`)
    made: float = field(default_factory=time.perf_counter)  # when: check() compares the chapter's time since

    @property
    def runs(self) -> int:
        return sum(t.runs for t in self.trainings)

    def images(self, model: str | None = None) -> int:
        """Inputs the plan trains on, in all or through ``model`` only (e.g. the chapter's backbone)."""
        return sum(t.images for t in self.trainings if model is None or t.model == model)

    def estimate(self) -> float:
        """Estimated training seconds: every training's steps at the probe's seconds per step."""
        return sum(t.runs * t.steps * self.seconds_per_step[t.key] for t in self.trainings if t.runs)

    def whole(self) -> float:
        """Estimated seconds of the whole chapter: the training, the evaluations (:class:`Evaluation`) and, where its
        images are read from JPEG files, the decoding and embedding beyond the training (:meth:`Reading.seconds`)."""
        training = self.estimate()
        return (training + (self.reading.seconds(training) if self.reading is not None else 0.0)
                + (self.evaluation.seconds() if self.evaluation is not None else 0.0) + self.building_seconds())

    def building_seconds(self) -> float:
        """Seconds of the starts to build first (:attr:`building`) at the probe's speed."""
        b = self.building
        return 0.0 if b is None else b.runs * b.steps * self.seconds_per_step[b.key]

    def __str__(self) -> str:
        lines = [f"Plan of the {self.chapter} chapter, {self.profile} profile, on {self.device}", "Downloads:"]
        lines += [f"  {what}: {'?' if size is None else f'{size / 1e6:,.0f} MB'}"
                  f"{' (already here)' if here else ''}" for what, size, here in self.downloads] or ["  none"]
        lines.append(f"Trainings: {self.runs}")
        for t in self.trainings:
            if t.runs:
                sec = self.seconds_per_step[t.key]
                lines.append(f"  {t.section}: {t.runs} x {t.steps:,} steps of {t.batch} inputs ({t.model}, "
                             f"{sec * 1e3:,.1f} ms per step)")
        lines.append(f"Estimated training time: {_duration(self.estimate())} (probe speed x steps)")
        if self.reading is not None:
            r = self.reading
            speed = f"{r.jpeg_per_second:,.0f} images/s {'timed on its files' if r.measured else '(assumed)'}"
            lines.append(f"Reading images: {r.decoded + r.jpeg:,} JPEG decodes "
                         f"({'both splits once' if r.decoded else 'every training batch and evaluation'}) at {speed}; "
                         f"{r.evaluated:,} images embedded by the evaluations ({r.forward_seconds * 1e3:,.2f} ms "
                         f"each): {_duration(r.seconds(self.estimate()))} beyond the training")
        if self.evaluation is not None:
            lines.append(str(self.evaluation))
        if (b := self.building) is not None:
            lines.append(f"Pretrained starts to build first (once on this machine, then kept under data/): {b.runs} x "
                         f"{b.steps:,} steps of {b.batch} inputs ({b.model}): {_duration(self.building_seconds())}")
        if self.reading is not None or self.evaluation is not None or b is not None:
            lines.append(f"Estimated time in all: {_duration(self.whole())}")
        return "\n".join(lines)

    def add(self, section: str, runs: int, like: str, epochs: int | None = None) -> None:
        """Count ``runs`` more trainings like those of section ``like`` (its steps, batch and probe; or the first
        section of the table ``like``, where the table has several): trainings the
        chapter could not count in advance (a search that walks until its best is flanked:
        :func:`dml_tutorial.bench.unplanned`, :func:`dml_tutorial.ladder.walk`), added once known, before
        :meth:`check`. ``epochs``: each trains that many epochs, not ``like``'s (its steps and checkpoints scaled:
        a search's longer trial, :func:`dml_tutorial.search.lengthened`)."""
        base = next((t for t in self.trainings if t.section == like), None) or next(
            (t for t in self.trainings if t.section.startswith(f"{like} (")), None)  # a table of several sections
        if base is None:
            raise ValueError(f"the plan has no section {like!r}: {', '.join(t.section for t in self.trainings)}")
        if runs < 0:
            raise ValueError(f"a section's count is 0 or more, got {runs} for {section!r}")
        if epochs is not None:
            if epochs < 1 or base.epochs < 1:
                raise ValueError(f"{section!r} scales {like!r}'s {base.epochs} epochs to {epochs}: both must be >= 1")
            base = replace(base, steps=round(base.steps * epochs / base.epochs), epochs=epochs,
                           checkpoints=round(base.checkpoints * epochs / base.epochs))
        if runs:
            self.trainings.append(replace(base, section=section, runs=runs))
            if self.recount is not None:  # the walks' trials score their checkpoints too
                self.evaluation = self.recount(self.trainings)

    def check(self) -> str:
        """The trainings run since the plan was made (the current recorder's, cached runs included) against the
        plan's count; raises ``AssertionError`` if they differ, else returns the comparison of the times: the
        training's against its estimate, and the whole chapter's since the plan against :meth:`whole` (issue #88:
        on a GPU the evaluations and the reading, not the training, set a CUB chapter's time)."""
        ran = recorder.current().trainings[self.start:]
        cached = sum(1 for r in ran if r["cached"])
        if len(ran) != self.runs:
            raise AssertionError(f"the plan counts {self.runs} trainings, the notebook ran {len(ran)}: it trains "
                                 f"outside the chapter's declared grid (dml_tutorial.plan.GRIDS[{self.chapter!r}])")
        seconds = sum(r["seconds"] for r in ran)
        return (f"{len(ran)} trainings as planned ({cached} loaded from the cache): {_duration(seconds)} of "
                f"training, estimated {_duration(self.estimate())}; the chapter since its plan: "
                f"{_duration(time.perf_counter() - self.made)}, estimated {_duration(self.whole())} in all")


def _unsupervised(method: str, shape: tuple, cfg: dict, net):
    """CBSwR's (or SME's) objective around ``net``, as the chapter trains it."""
    return clustering.make_objective(method, net, shape, cfg)


def make(chapter: str, cfg: dict, device="auto", root=data.DATA_ROOT, n_train: int | None = None,
         seeds=None) -> Plan:
    """The plan of ``chapter`` under ``cfg`` (:func:`dml_tutorial.profiles.settings`) on ``device``: downloads,
    trainings (:data:`GRIDS`), the pretrained starts its runs of ``seeds`` (default ``0 .. n_seeds - 1``) build
    first, its evaluations, and one probe (:func:`probe`) per distinct model and batch shape."""
    if chapter not in GRIDS:
        raise ValueError(f"no plan for chapter {chapter!r}; chapters with a plan: {', '.join(GRIDS)}")
    dev = train.resolve_device(device)
    # the main split's sizes; a given n_train stands for the test split too (with at most 10 classes)
    sizes = split_sizes(cfg, root) if n_train is None else (n_train, n_train, min(10, n_train // 2))
    trainings = GRIDS[chapter](cfg, sizes[0])
    threads = torch.get_num_threads()
    name = torch.cuda.get_device_name(dev) if dev.type == "cuda" else f"CPU, {threads} thread{'s' * (threads > 1)}"
    plan = Plan(chapter, cfg["profile"], name, downloads(cfg, root), trainings,
                start=len(recorder.current().trainings))
    plan.building = starts_to_build(cfg, range(cfg["n_seeds"]) if seeds is None else seeds, root)
    for t in trainings + ([plan.building] if plan.building else []):
        if t.runs and t.key not in plan.seconds_per_step:
            image = len(t.shape) == 3 and t.shape[-1] >= 32
            own = {"hidden": cfg.get("hidden")} if t.model == cfg["model"] else {}
            if t.loss and t.loss[0] == "cbswr":
                own["objective"] = partial(_unsupervised, t.loss[1], t.shape, {**cfg, **dict(t.loss[2])})
            elif t.loss and t.loss[0] == "bench":
                own.update(loss_fn=bench.make_loss(t.loss[1]), classes=t.classes)
            elif t.loss:
                own.update(loss_fn=t.objective, classes=t.classes)
            plan.seconds_per_step[t.key] = probe(t.model, t.shape, t.batch, cfg["dim"] if t.model == cfg["model"]
                                                 else 2, dev, amp=cfg.get("amp", False) and image,
                                                 channels_last=cfg.get("channels_last", False) and image, **own)
    if chapter == "foundations":  # its loops in view score the test split after every epoch: in the training time
        return plan
    forward = probe_forward(cfg["model"], _shape(cfg), cfg["dim"], dev, amp=cfg.get("amp", False),
                            channels_last=cfg.get("channels_last", False))
    if cfg["dataset"] in ON_DISK:
        plan.reading = reading(cfg, trainings, sizes[0], forward, root)
    embeds = None if plan.reading is not None else forward  # Reading counts the embedding of JPEG datasets
    plan.evaluation = evaluation(cfg, trainings, sizes, dev, embeds)
    timed = plan.evaluation.timed  # the walks' trials are counted at these timings, not timed again
    plan.recount = lambda counted: evaluation(cfg, counted, sizes, dev, embeds, seconds=timed)
    return plan
