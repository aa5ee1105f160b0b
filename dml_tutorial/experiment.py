"""One experiment of a chapter: train a fresh embedding with a given loss on class-balanced batches, then measure it.

- :func:`train_and_probe` (noisy labels, DCDL section 4): corrupt the training labels, train, and fit a linear
  probe on the training embeddings and their *observed* labels, scored on the clean test labels; also Recall@1.
- :func:`train_and_retrieve` (zero-shot retrieval, ECAML and EPS): train on the seen classes, measure
  Recall@K, NMI and F1 on the unseen ones, optionally with seen/unseen Recall@1 after every epoch.
- :func:`reference_run` measures the same things without training: on the raw input (no network) or on the
  untrained network, the two reference rows every results table carries.

    run = train_and_probe(splits, dcdl.dcdl_loss("trip", "W"), cfg, k=10, noise=("symmetric", 0.3), seed=0)
    run.metrics  # {"accuracy": ..., "R@1": ..., "flipped": ..., "seconds": ...}

:func:`run_grid` runs a chapter's declared grid (:class:`~dml_tutorial.spec.RunSpec` s, e.g.
:func:`dml_tutorial.ecaml.grid`) with one progress bar and an optional cache keyed on each spec's data; :func:`grid`
runs a dict of keyword arguments over several seeds the same way; :func:`paired_difference` compares two rows seed
by seed.
"""

from __future__ import annotations

import dataclasses
import json
import math
import pickle
import re
import shutil
import sys
import time
from dataclasses import dataclass
from functools import partial
from pathlib import Path

import numpy as np
import torch
from tqdm import tqdm

from . import __version__, augment, evidence, metrics, models, objective, pretrain, sampling, train
from . import noise as label_noise
from ._checks import accepts, check_choice
from .data import ArrayDataset, input_shape, stack
from .spec import as_data, fingerprint
from .tables import REFERENCES, STARTED


@dataclass
class Run:
    """What one experiment leaves: its metrics, the test embeddings (for plots) and the training history."""

    metrics: dict
    test_embeddings: torch.Tensor
    history: train.History
    state: dict | None = None  # the trained weights, when asked for (``keep_state=True``); not cached by grid
    train_embeddings: torch.Tensor | None = None  # the training split's (train_and_retrieve), for seen-class plots
    test_predictions: np.ndarray | None = None  # the linear probe's predicted test labels (train_and_probe)


def corrupt(dataset, noise, seed: int = 0, pairs=None):
    """``dataset`` with its labels corrupted by ``noise`` = ``None`` (clean) or ``(kind, rate)``, e.g.
    ``("symmetric", 0.3)`` or ``("asymmetric", 0.2)`` with class ``pairs`` (see :mod:`dml_tutorial.noise`)."""
    if noise is None or noise[1] == 0:
        return dataset
    kind, rate = noise
    num_classes = int(dataset.labels.max()) + 1
    return dataset.with_labels(label_noise.corrupt_labels(dataset.labels, num_classes, rate, kind, pairs, seed=seed))


OPTIMIZERS = {"adam": torch.optim.Adam, "rmsprop": torch.optim.RMSprop}
AUGMENTATIONS = {None: None, "crop_flip": augment.random_crop_flip}


def _train(data, loss_fn, cfg, *, p, k, seed, device, progress, checkpoint, evaluate=None, init=None):
    """A fresh ``cfg["model"]`` (``dim``, ``dropout``; L2-normalised unless ``normalize`` is False) trained with
    ``loss_fn`` for ``cfg["epochs"]`` epochs of P x K batches (``batches_per_epoch`` of them, default: one pass):
    ``optimizer`` (Adam by default, or RMSprop) at ``lr`` with ``weight_decay``, the embedding layer at
    ``head_lr_mult`` x ``lr`` (ECAML: 10x), divided by 10 every ``lr_step`` epochs. GPU settings:
    ``data_on_device`` (in-memory datasets moved to the device once), ``augment`` (a key of ``AUGMENTATIONS``),
    ``amp`` and ``channels_last`` (see :func:`dml_tutorial.train.fit`); ``evaluate`` after every ``eval_every``
    epochs (default 1) and after the last; the pretrained trunk (``cfg["start"]``) is read first, since building a
    missing one seeds and threads its own training, and a run that builds it must train as one that loads it.
    Returns (model, history, seconds)."""
    if init is None and pretrain.applies(cfg):  # a pretrained trunk; the embedding layer stays the seed's
        init = pretrain.load_start(cfg["start"], seed=seed)
    train.seed_everything(seed, threads=cfg.get("threads"))
    in_shape = input_shape(data)
    model = models.from_settings(cfg, in_shape)
    if init is not None:
        load_init(model, init)
    head = list(model.embedding.parameters())
    trunk = [q for q in model.parameters() if all(q is not h for h in head)]
    groups = [{"params": trunk}, {"params": head, "lr": cfg["lr"] * cfg.get("head_lr_mult", 1)}]
    optimizer = OPTIMIZERS[cfg.get("optimizer", "adam")](groups, lr=cfg["lr"], weight_decay=cfg.get("weight_decay", 0.0))
    scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=cfg.get("lr_step") or cfg["epochs"] + 1,
                                                gamma=0.1)
    sampler = sampling.PKSampler(data.labels, p=p, k=k, seed=seed, batches_per_epoch=cfg.get("batches_per_epoch"))
    if cfg.get("data_on_device") and isinstance(data, ArrayDataset):
        data = data.to(train.resolve_device(device))
    augmentation = AUGMENTATIONS[check_choice(cfg.get("augment"), AUGMENTATIONS, "augment")]
    start = time.perf_counter()
    history = train.fit(model, loss_fn, data, epochs=cfg["epochs"], sampler=sampler, optimizer=optimizer,
                        scheduler=scheduler, device=device, seed=seed, progress=progress, checkpoint=checkpoint,
                        evaluate=evaluate, eval_every=cfg.get("eval_every", 1), augment=augmentation,
                        amp=cfg.get("amp", False), channels_last=cfg.get("channels_last", False),
                        num_workers=cfg.get("workers", 0), checkpoint_every=cfg.get("checkpoint_seconds", 0.0),
                        description=getattr(loss_fn, "__name__", "training"))
    return model, history, time.perf_counter() - start


def load_init(model: torch.nn.Module, init: dict) -> None:
    """Load ``init`` into ``model``: a whole state dict, or a trunk's (a start's, without the embedding layer, which
    keeps its initialisation). Any other missing or unexpected key is an error."""
    try:
        result = model.load_state_dict(init, strict=False)
    except RuntimeError as err:  # a tensor of another shape: another network
        raise ValueError(f"the start does not fit the model: {str(err).splitlines()[1].strip()}") from err
    missing = [k for k in result.missing_keys if not k.startswith("embedding.")]
    if missing or result.unexpected_keys:
        raise ValueError(f"the start does not fit the model: missing {missing}, unexpected {result.unexpected_keys}")


def train_and_probe(splits, loss_fn, cfg: dict, *, k: int, noise=None, pairs=None, seed: int = 0,
                    device="auto", progress: bool = False, checkpoint=None, curves: bool = False,
                    probe_every: int | None = None, score: bool = True) -> Run:
    """Train on the training split with ``noise`` applied, on batches of every class x ``k`` samples (the DCDL
    paper's; ``cfg["p"]`` classes instead where it is set, as on the glyph test bed's hundreds), see :func:`_train`
    for the other ``cfg`` keys, then probe it; ``Run.test_predictions`` keeps the probe's predicted test labels
    (per-class accuracy, confusions). The noise draw, the initialisation and the batches all follow ``seed``.
    ``curves=True`` records after every epoch, on one fixed batch, the within-class spread and, for an
    objective, each term's value and weighted pull at the embedding layer, as :func:`train_and_retrieve` does.
    ``probe_every=n`` fits and scores the probe after every ``n`` epochs and after the last as well, into the
    history's ``"probe accuracy"``: the curve a search reads a training length from (:func:`dml_tutorial.dcdl.
    choose_trainings`, on a validation split); not with ``curves``. ``score=False`` (a search's trial, whose last
    checkpoint is its score) skips the final probe, which would fit the last checkpoint's probe again: the test
    embeddings alone, as :func:`train_and_retrieve`'s (``Run.metrics`` holds ``flipped`` and the seconds)."""
    data = corrupt(splits.train, noise, seed, pairs)
    p = cfg.get("p") or len(np.unique(data.labels))
    workers = cfg.get("workers", 0)
    if probe_every is not None and (curves or probe_every < 1):
        raise ValueError(f"probe_every must be a positive number of epochs, without curves; got {probe_every} "
                         f"with curves={curves}")
    evaluate = _pulls(data, loss_fn, p, k, seed) if curves else None
    if probe_every:
        evaluate, cfg = _probe(data, splits.test, seed, workers), {**cfg, "eval_every": probe_every}
    model, history, seconds = _train(data, loss_fn, cfg, p=p, k=k, seed=seed, device=device, progress=progress,
                                     checkpoint=checkpoint, evaluate=evaluate)
    flipped = float(np.mean(data.labels != splits.train.labels))
    z_test = train.embed(model, splits.test, num_workers=workers)
    if not score:
        return Run({"flipped": flipped, "seconds": seconds}, z_test, history)
    z_train = train.embed(model, data, num_workers=workers)
    scores, predicted = _measure(z_train, data.labels, z_test, splits.test.labels, cfg, True, seed, device)
    return Run({**scores, "flipped": flipped, "seconds": seconds}, z_test, history, test_predictions=predicted)


def _probe(data, test, seed: int, workers: int = 0):
    """``probe(model) -> {"probe accuracy": a}``: the linear probe of :func:`train_and_probe`, fitted on ``data``'s
    embeddings and labels (noisy ones included) and scored on ``test``'s labels, as a fraction."""

    def probe(model):
        z_train, z_test = train.embed(model, data, num_workers=workers), train.embed(model, test, num_workers=workers)
        return {"probe accuracy": metrics.linear_probe_accuracy(z_train, data.labels, z_test, test.labels, seed)}

    return probe


def _measure(z_train, train_labels, z_test, test_labels, cfg, probe: bool, seed: int, device="auto"):
    """The metrics of :func:`train_and_probe` (``probe=True``) or :func:`train_and_retrieve` on given embeddings,
    and the probe's predicted test labels (``None`` for retrieval); the distances on the run's ``device`` (a GPU's
    where it has one: the raw-input row's N^2 d on CUB is minutes on two CPUs), the probe and k-means on the CPU."""
    dev = train.resolve_device(device)
    if probe:
        predicted = metrics.linear_probe(z_train, train_labels, z_test, seed)
        return {"accuracy": float(np.mean(predicted == np.asarray(test_labels))),
                "R@1": metrics.recall_at_k(z_test, test_labels, ks=(1,), device=dev)[1]}, predicted
    return metrics.evaluate(z_test, test_labels, ks=metrics.recall_ks(cfg.get("dataset", "")), seed=seed,
                            cluster_classes=cfg.get("cluster_classes"), f1=True, device=dev), None


def reference_run(splits, cfg: dict, kind: str, *, probe: bool = False, noise=None, pairs=None, seed: int = 0,
                  device="auto", train_embeddings: bool = False) -> Run:
    """A reference row measured exactly as a trained run is, with no training (the gate asks every trained
    baseline to beat it before a claim gets a word, :func:`dml_tutorial.evidence.gate`):

    - ``kind="raw input"``: the flattened input, L2-normalised, so that neighbours are by cosine (no network);
    - ``kind="untrained network"``: ``cfg["model"]`` initialised with ``seed``, in eval mode, its batch-norm
      statistics (if it has any) re-estimated on the training images
      (:func:`dml_tutorial.train.recalibrate_batch_norm`: without it a trained row gains the recalibration alone,
      whatever its loss does);
    - ``kind=STARTED``: the pretrained trunk of ``cfg["start"]`` as it is (its own batch-norm statistics), its
      features L2-normalised: no embedding layer, which would be random before fine-tuning.

    ``probe=True`` measures as :func:`train_and_probe` (a linear probe fitted on the training embeddings with the
    labels ``noise`` leaves, scored on the clean test labels; Recall@1), otherwise as :func:`train_and_retrieve`
    (Recall@K, NMI and F1 on the test split). A trained row that does not beat both has learned nothing usable.
    ``train_embeddings=True`` also keeps the training split's embeddings in ``Run.train_embeddings`` (for a table
    measured on the seen classes too, as EPS's even/odd)."""
    check_choice(kind, (*REFERENCES, STARTED), "reference")
    train_set = corrupt(splits.train, noise, seed, pairs) if probe else splits.train
    if kind == "raw input":
        def encode(data):  # normalised in place: one copy of the pixels (CUB's test split: 3.6 GB in float32)
            x = stack(data, np.arange(len(data))).flatten(1).float()  # a fresh tensor, never the dataset's own
            return x.div_(x.norm(dim=1, keepdim=True).clamp_min(1e-12))  # as torch.nn.functional.normalize
    elif kind == STARTED:
        if not pretrain.applies(cfg):
            raise ValueError(f"the {STARTED!r} row needs a profile with a start for its model (cfg['start'])")
        model = models.from_settings(cfg, input_shape(splits.train))
        load_init(model, pretrain.load_start(cfg["start"], seed=seed))
        model.to(train.resolve_device(device)).eval()
        trunk = _Features(model)

        def encode(data):
            return train.embed(trunk, data, num_workers=cfg.get("workers", 0))
    else:
        train.seed_everything(seed, threads=cfg.get("threads"))
        model = models.from_settings(cfg, input_shape(splits.train))
        model.to(train.resolve_device(device))
        train.recalibrate_batch_norm(model, splits.train, num_workers=cfg.get("workers", 0))

        def encode(data):
            return train.embed(model, data, num_workers=cfg.get("workers", 0))
    start = time.perf_counter()
    z_train, z_test = encode(train_set) if probe or train_embeddings else None, encode(splits.test)
    scores, predicted = _measure(z_train, train_set.labels, z_test, splits.test.labels, cfg, probe, seed, device)
    return Run({**scores, "seconds": time.perf_counter() - start}, z_test, train.History(), train_embeddings=z_train,
               test_predictions=predicted)


#: The most bytes of float32 pixels the raw-input row may hold (its test split, flattened): CUB's 5,924 test crops of
#: 3 x 224 x 224 are 3.6 GB and Cars196's 8,131 4.9 GB; SOP's 60,502 would be 36 GB, beyond Colab's memory. Where
#: the pixels exceed it the row is left out, and a gate that needs it says that it has none to gate on.
RAW_INPUT_BYTES = 8 * 2**30


def raw_input_bytes(splits) -> int:
    """The bytes of the raw-input row's test pixels in float32: ``[N, prod(input shape)]``."""
    return 4 * len(splits.test) * math.prod(input_shape(splits.test))


def reference_kinds(cfg: dict, splits=None) -> tuple:
    """The reference rows a chapter's main table carries under ``cfg``: :data:`REFERENCES`, and :data:`STARTED`
    where its runs start from a pretrained trunk; given ``splits``, not the raw input where its pixels would exceed
    :data:`RAW_INPUT_BYTES` (photographs are read from disk and scored like any other split below that)."""
    kinds = REFERENCES + ((STARTED,) if pretrain.applies(cfg) else ())
    if splits is not None and raw_input_bytes(splits) > RAW_INPUT_BYTES:
        kinds = tuple(k for k in kinds if k != "raw input")
    return kinds


class _Features(torch.nn.Module):
    """A model's trunk features, L2-normalised, called as an embedder (``normalize`` is ignored)."""

    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, x, normalize=None):
        return torch.nn.functional.normalize(self.model.features(x).float().flatten(1), dim=1)


def references(splits, cfg: dict, seeds, *, probe: bool = False, noises=(None,), pairs=None, device="auto",
               kinds=None, train_embeddings: bool = False, cache=None) -> dict:
    """``{(kind, column): [Run per seed]}`` for both :data:`REFERENCES`, in the key format of :func:`grid`, so that
    a chapter adds them to its table: one column per noise setting (named by :func:`dml_tutorial.noise.describe`,
    ``""`` for the single clean column of a retrieval table). The raw input of a retrieval table, or of a probe on
    clean labels, does not depend on the seed: it is measured once and repeated for every seed (std 0). ``kinds``
    picks some of them; by default :func:`reference_kinds` (both, :data:`STARTED` where the profile starts from a
    pretrained trunk, no raw input where its pixels would not fit in memory). ``train_embeddings``
    keeps the training split's embeddings too (:func:`reference_run`). With a ``cache`` (a grid's, :func:`grid`)
    each is kept there with the runs and loaded the next time (issue #88: on CUB the raw input's distances and
    clustering take minutes), never counted as a training (:meth:`dml_tutorial.plan.Plan.check`)."""
    if kinds is None:
        kinds = reference_kinds(cfg, splits)
    measure = partial(reference_run, splits, cfg, probe=probe, pairs=pairs, device=device,
                      train_embeddings=train_embeddings)
    out = {}
    for kind in kinds:
        for n in noises:
            column = "" if noises == (None,) and not probe else label_noise.describe(n)
            once = kind == "raw input" and (not probe or n is None)
            jobs = [((kind, column), s, partial(measure, kind, noise=n, seed=s),
                     {"run": measure, "kind": kind, "noise": n, "seed": s})
                    for s in (list(seeds)[:1] if once else seeds)]
            runs = _run_jobs(jobs, False, False, kind, cache, None, counted=False)[(kind, column)]
            out[(kind, column)] = runs * len(list(seeds)) if once else runs
    return out


def subsample(dataset, fraction: float, seed: int = 0):
    """A random ``fraction`` of the samples (at least two per class kept where a class has them): the
    "topline" of Le & Odobez 2018, section 6.1, trained on the 1 - p clean samples that noise rate p leaves correct."""
    if not 0 < fraction <= 1:
        raise ValueError(f"fraction must lie in (0, 1], got {fraction}")
    if fraction == 1:
        return dataset
    rng = np.random.default_rng(seed)
    keep = rng.random(len(dataset.labels)) < fraction
    for c in np.unique(dataset.labels):
        members = np.flatnonzero(dataset.labels == c)
        if keep[members].sum() < 2:
            keep[members[:2]] = True
    return dataset.subset(keep)


CURVE_SAMPLES = 5000  # per split, for the per-epoch curves: Fashion-MNIST's 30,000 seen images cost a minute a run


def _curve_subset(dataset, seed: int, size: int = CURVE_SAMPLES):
    """``dataset`` itself when it is small, else a fixed random ``size`` of its samples (the same every epoch), so
    that a curve costs the same on 30,000 images as on 5,000; the final scores always use the whole split."""
    if len(dataset) <= size or not hasattr(dataset, "subset"):
        return dataset
    keep = np.zeros(len(dataset), dtype=bool)
    keep[np.random.default_rng(seed).choice(len(dataset), size, replace=False)] = True
    return dataset.subset(keep)


def _pulls(data, loss_fn, p: int, k: int, seed: int):
    """``pulls(model) -> {"within-class spread": s, "<term>": value, "|grad| <term>": pull}`` on one fixed P x K
    batch of ``data`` (its own seed): the embeddings' spread around their class centres in eval mode
    (:func:`dml_tutorial.metrics.within_class_spread`), and, for an :class:`~dml_tutorial.objective.Objective`
    (its local loss alone included), each term's value and weighted pull (:func:`dml_tutorial.objective.term_pulls`)."""
    batch = next(iter(sampling.PKSampler(data.labels, p=p, k=k, seed=seed + 1)))
    x, y = stack(data, batch), torch.as_tensor(np.asarray(data.labels)[batch])

    def pulls(model):
        dev = next(model.parameters()).device
        was_training = model.training
        model.eval()
        with torch.no_grad():
            out = {"within-class spread": metrics.within_class_spread(model(x.to(dev)), y.to(dev))}
        model.train(was_training)
        if hasattr(loss_fn, "parts"):
            for term, pull in objective.term_pulls(loss_fn, model, x.to(dev), y.to(dev)).items():
                out.update({term: pull["value"], f"|grad| {term}": pull["grad"]})
        return out

    return pulls


def train_and_retrieve(splits, loss_fn, cfg: dict, *, p: int, k: int, seed: int = 0, device="auto",
                       progress: bool = False, checkpoint=None, curves: bool = False, noise=None, pairs=None,
                       fraction: float = 1.0, init=None, keep_state: bool = False, score: bool = True,
                       evaluate=None) -> Run:
    """Zero-shot retrieval (ECAML, EPS, noise guarantees): train on the training split (the seen classes) on
    P x K batches, then measure the test split (the unseen classes): Recall@K at the dataset's usual Ks
    (:func:`dml_tutorial.metrics.recall_ks`: 1/2/4/8, or 1/10/100/1000 on SOP), NMI and clustering F1 (k-means
    with as many clusters as test classes).

    - ``curves=True`` also records "seen R@1" (training split, clean labels) and "unseen R@1", and the same splits'
      MAP@R ("seen MAP@R", "unseen MAP@R": it still ranks where R@1 reaches 100%), after every epoch,
      on at most ``cfg["curve_samples"]`` (default :data:`CURVE_SAMPLES`) samples of each split
      (:func:`_curve_subset`), and on one fixed P x K batch of the training data the "within-class spread" and,
      for an :class:`~dml_tutorial.objective.Objective`, each term's value and its weighted gradient norm at the
      embedding layer, "<term>" and "|grad| <term>" (:func:`dml_tutorial.objective.term_pulls`);
    - ``noise`` corrupts the training labels as in :func:`corrupt`; ``fraction`` keeps only that random fraction
      of the training samples (:func:`subsample`); both follow ``seed``;
    - ``init``: a state dict to start from instead of a random initialisation; ``keep_state`` returns the trained
      weights in ``Run.state``;
    - ``score=False`` returns the test embeddings alone (``Run.metrics`` holds only the seconds; no training-split
      embedding, no k-means), for a caller that measures them its own way (the bench, :func:`bench.scores`) or
      not at all (a search's trial, scored at its checkpoints: the final Recall@K, NMI and F1 would be discarded);
    - ``evaluate(model) -> dict``: the caller's own checkpoints, into the history after every ``cfg["eval_every"]``
      epochs (default 1) and after the last (the bench's choice of a training length); not with ``curves``."""
    if evaluate is not None and curves:
        raise ValueError("train_and_retrieve takes curves=True or an evaluate function, not both")
    size = cfg.get("curve_samples") or CURVE_SAMPLES
    seen, unseen = _curve_subset(splits.train, seed, size), _curve_subset(splits.test, seed, size)
    workers = cfg.get("workers", 0)
    data = subsample(corrupt(splits.train, noise, seed, pairs), fraction, seed)
    pulls = _pulls(data, loss_fn, p, k, seed) if curves else None  # (its batch drawn only when used)

    def curve_point(model):
        out = {}
        for name, part in (("seen", seen), ("unseen", unseen)):
            z = train.embed(model, part, num_workers=workers)
            out[f"{name} R@1"] = metrics.recall_at_k(z, part.labels, (1,))[1]
            out[f"{name} MAP@R"] = metrics.map_at_r(z, part.labels)  # where R@1 sits at its ceiling (issue #86)
        return {**out, **pulls(model)}

    model, history, seconds = _train(data, loss_fn, cfg, p=p, k=k, seed=seed, device=device, progress=progress,
                                     checkpoint=checkpoint, evaluate=curve_point if curves else evaluate, init=init)
    z_train = train.embed(model, splits.train, num_workers=workers) if score else None
    z_test = train.embed(model, splits.test, num_workers=workers)
    scores = _measure(None, None, z_test, splits.test.labels, cfg, False, seed, device)[0] if score else {}
    state = {name: t.detach().cpu().clone() for name, t in model.state_dict().items()} if keep_state else None
    return Run({**scores, "seconds": seconds}, z_test, history, state, z_train)


def grid(configs: dict, seeds, run, description: str = "runs", cache=None, progress: bool | None = False) -> dict:
    """``{key: [run(**configs[key], seed=s) for s in seeds]}`` with one progress bar over all runs (none with
    ``progress=None``: the smoke profile's stored outputs stay quiet, :func:`dml_tutorial.profiles.shows_progress`).

    With a ``cache`` folder (:func:`dml_tutorial.profiles.default_cache` names one per chapter, dataset and hash of
    the settings), every finished run is saved there (``<key>-seed<s>-<hash>.pt``: metrics, test embeddings,
    history, and what made it as data, :func:`dml_tutorial.spec.as_data`: the run function, its settings, the
    loss with every parameter of every term, the seed, the package version; ``<hash>`` is ten hex digits of its
    SHA-256) and loaded instead of re-run the next time, but only when its stored description equals the one asked
    for: a run whose loss or settings changed (a margin, a term's sigma) is another file, trained anew. A run that
    accepts a ``checkpoint`` (:func:`train_and_retrieve`, :func:`train_and_probe`) also keeps its training in
    progress there (``<key>-seed<s>-<hash>.partial.pt``: after every epoch, or every ``cfg.checkpoint_seconds``, 300
    on a GPU), so that a run interrupted mid-way (a disconnected Colab runtime) resumes from its last save; a
    search's trial also keeps its training's last state (``<key>-seed<s>-<hash>.state.pt``), which its next length
    goes on from (:func:`run_one`). Delete the folder to start afresh.

    ``progress=True`` (the GPU profiles) passes ``progress`` to runs that accept it (a per-epoch bar with the loss
    and the time left) and prints a line after each run: how long it took and about how long the rest will."""
    seeds = list(seeds)
    if not seeds:
        raise ValueError("grid needs at least one seed")
    jobs = [(key, seed, partial(_call, run, kwargs, seed), {"run": run, "kwargs": kwargs, "seed": seed})
            for key, kwargs in configs.items() for seed in seeds]
    return _run_jobs(jobs, accepts(run, "progress"), accepts(run, "checkpoint"), description, cache, progress)


def run_grid(specs, run, description: str = "runs", cache=None, progress: bool | None = False,
             keep: bool = False) -> dict:
    """A chapter's grid (:class:`~dml_tutorial.spec.RunSpec` s, e.g. :func:`dml_tutorial.clustering.grid`) run by
    ``run(spec) -> Run`` (a chapter's runner, e.g. :func:`dml_tutorial.clustering.run_spec`), as :func:`grid` runs
    its configurations: ``{(table, row, column): [Run per seed, in the specs' order]}``
    (:func:`dml_tutorial.spec.table_of` reads one table), one progress bar, and with a ``cache`` each finished
    run kept under the hash of the spec's data and the runner's (the data it binds), but for a run that keeps its
    weights (``options["keep_state"]``: the cache keeps metrics and embeddings, not weights), which always trains.
    ``keep``: each training's last state stays in the cache too (:func:`run_one`). Two specs of one key and seed
    are an error."""
    specs = list(specs)
    seen = [(spec.key, spec.seed) for spec in specs]
    twice = sorted({str(k) for k in seen if seen.count(k) > 1})
    if twice:
        raise ValueError(f"the grid declares these runs more than once: {', '.join(twice)}")
    jobs = [(spec.key, spec.seed, partial(run, spec),
             None if spec.options.get("keep_state") else {"run": run, "spec": spec.data()}) for spec in specs]
    return _run_jobs(jobs, accepts(run, "progress"), accepts(run, "checkpoint"), description, cache, progress,
                     keep=keep)


def recall_checkpoint(test, metric: str, cfg):
    """``evaluate(model) -> {metric: R@1}`` on ``test``'s embeddings, on the model's device: a search trial's
    checkpoint (:func:`dml_tutorial.search.best_shot`; ``metric`` must be ``"R@1"``)."""
    if metric != "R@1":
        raise ValueError(f"a trial's checkpoint measures R@1 here, not {metric!r}")

    def evaluate(model):
        z = train.embed(model, test, num_workers=cfg.get("workers", 0))
        return {"R@1": metrics.recall_at_k(z, test.labels, (1,), device=next(model.parameters()).device)[1]}

    return evaluate


def run_one(spec, run, cache=None, progress: bool | None = False, after=None, keep: bool = False) -> Run:
    """One :class:`~dml_tutorial.spec.RunSpec` through :func:`run_grid` (its cache, its resumable checkpoint, its
    count in the plan's check): a search's trial (:func:`dml_tutorial.search.best_shot`). ``keep``: the training's
    last state stays in the cache; ``after``: the spec of a shorter run of the same training (only its length,
    ``settings.epochs``, differs), whose kept state this one goes on from instead of training its first epochs
    again (:func:`_go_on_from`): a search's next length."""
    if cache is not None and after is not None:
        _go_on_from(after, spec, run, cache)
    return run_grid([spec], run, spec.row, cache=cache, progress=progress, keep=keep)[spec.key][0]


def _go_on_from(shorter, spec, run, cache) -> bool:
    """Start ``spec``'s training from the last state the cache kept of ``shorter`` (its resumable checkpoint:
    :func:`_cached` resumes it), where ``spec`` has no result or training in progress yet. The same as training
    from the start: a longer training passes through the shorter one's state at its end, since the batches, the
    random draws and the rate (a scheduler's settings stay the longer run's, :data:`train.SCHEDULER_PROGRESS`)
    do not depend on the length, and the shorter one's last evaluation falls on the longer one's checkpoints
    (its length a multiple of ``settings.eval_every``; else it trains from the start). Returns whether it did."""
    same_length = dataclasses.replace(shorter, settings=shorter.settings.replace(epochs=spec.settings.epochs))
    if same_length.data() != spec.data():
        raise ValueError(f"only a shorter run of the same training can be gone on from: {shorter.key} for {spec.key}")
    if spec.settings.epochs <= shorter.settings.epochs or shorter.settings.epochs % (spec.settings.eval_every or 1):
        return False
    path, _, settings = _cache_path(cache, spec.key, spec.seed, {"run": run, "spec": spec.data()})
    state = _kept(_cache_path(cache, shorter.key, shorter.seed, {"run": run, "spec": shorter.data()})[0], "state")
    partial_path = _kept(path, "partial")
    if path.exists() or partial_path.exists() or not state.exists():
        return False
    shutil.copyfile(state, partial_path)
    partial_path.with_name(partial_path.name + ".settings").write_text(json.dumps(settings))
    return True


def best_shots(chapter, cfg, seed: int, run, cache=None, plan=None, progress: bool | None = False) -> dict:
    """A chapter's one search on ``seed`` (``chapter.best_shots``: each row's rate, length and knob chosen on
    held-out seen classes by :func:`dml_tutorial.search.best_shot`), each trial run by :func:`run_one` through the
    ``cache``; prints each row's choice and adds the trials its walks made beyond the planned ones to ``plan``
    (``chapter.unplanned``, like the section ``chapter.BEST_SHOT``; the longer trials at the epochs they trained,
    :func:`dml_tutorial.search.lengthened`). Returns the choices, ``{}`` where the profile searches nothing.

        chosen = experiment.best_shots(dcdl, cfg, seeds[0], run, cache=cache, plan=chapter_plan)
    """
    from . import search

    choices = chapter.best_shots(cfg, seed, partial(run_one, run=run, cache=cache, progress=progress))
    for row, choice in choices.get("best shot", {}).items():
        print(f"{row}: {search.describe(choice)}")
    if choices and plan is not None:
        longer = search.lengthened(choices, goes_on=cache is not None)
        plan.add("the searches' walks", chapter.unplanned(cfg, choices) - sum(longer.values()), like=chapter.BEST_SHOT)
        for epochs, trials in longer.items():
            plan.add(f"the searches' longer trials ({epochs} epochs each)", trials, like=chapter.BEST_SHOT,
                     epochs=epochs)
    return choices


def _call(run, kwargs, seed, **extra):
    return run(**kwargs, **extra, seed=seed)


def _run_jobs(jobs, takes_progress, takes_checkpoint, description, cache, progress, counted: bool = True,
              keep: bool = False) -> dict:
    """The loop of :func:`grid`, :func:`run_grid` and :func:`references`: ``jobs`` of ``(key, seed, call(**extra) ->
    Run, what makes it)``, each run or loaded from ``cache`` (a load recorded as a cached training where
    ``counted``; each training's last state kept where ``keep``: :func:`_cached`); ``{key: [Run]}`` in the jobs'
    order."""
    out = {}
    total, done, trained_seconds, trained = len(jobs), 0, 0.0, 0
    with tqdm(total=total, desc=description, mininterval=1.0, file=sys.stderr, disable=progress is not False) as bar:
        for key, seed, call, made_of in jobs:
            began = time.perf_counter()
            extra = {"progress": progress} if progress and takes_progress else {}
            result, loaded = _cached(call, made_of, key, seed, cache, extra, takes_checkpoint, counted, keep)
            out.setdefault(key, []).append(result)
            done += 1
            bar.update()
            if progress:
                seconds = time.perf_counter() - began
                trained_seconds, trained = trained_seconds + (0 if loaded else seconds), trained + (not loaded)
                left = (f"about {(total - done) * trained_seconds / trained / 60:.0f} min left" if trained
                        else "the time left shows after the first trained run")
                how = "loaded from the cache" if loaded else f"done in {seconds / 60:.1f} min"
                print(f"{description}: run {done} of {total} {how}; {left}", flush=True)
    return out


def _cache_path(cache, key, seed, made_of) -> tuple[Path, str, dict]:
    """Where ``cache`` keeps a run: its file (``<key>-seed<s>-<hash>.pt``), its name for the count of trainings,
    and what made it as data with the package version (what the file must hold to be loaded)."""
    name = re.sub(r"[^A-Za-z0-9.+-]+", "_", "-".join(map(str, key if isinstance(key, tuple) else (key,))))
    settings = as_data({**made_of, "version": __version__})
    return Path(cache) / f"{name}-seed{seed}-{fingerprint(settings)[:10]}.pt", name, settings


def cache_seconds(cache) -> tuple[float, int]:
    """The seconds the trainings a ``cache`` folder holds took, summed (each result's own ``metrics["seconds"]``,
    measured when it was trained, whichever sitting that was), and how many results it holds. A sweep point's
    run file records them (``dml-tutorial run`` with ``RUNS``): its ``seconds`` count the last sitting alone. A
    floor on the point's compute: scoring outside a training, a pretrained start's build and a training's part
    before it was resumed are not counted, nor a file that holds no result (one written by other code)."""
    seconds = [result_seconds(f) for f in Path(cache).rglob("*.pt") if not f.name.endswith((".partial.pt", ".state.pt"))]
    return sum(s for s in seconds if s is not None), sum(s is not None for s in seconds)


def cached_result(path: Path) -> dict | None:
    """What a cached result's file holds (as :func:`_cached` saves it: ``metrics`` with the ``seconds`` its
    training took, the embeddings, the ``history``, the ``settings`` that made it), ``None`` for a file that is not
    a cached result."""
    try:
        state = torch.load(path, weights_only=False, map_location="cpu")
        if not isinstance(state, dict):
            return None
        float(state["metrics"]["seconds"])
        return state
    except (OSError, EOFError, RuntimeError, LookupError, TypeError, ValueError, pickle.UnpicklingError):
        return None


def result_seconds(path: Path) -> float | None:
    """The seconds a cached result's training took, ``None`` for a file that is not a cached result."""
    state = cached_result(path)
    return None if state is None else float(state["metrics"]["seconds"])


def _kept(path: Path, what: str) -> Path:
    """A run's other files beside its cached result: ``partial`` (its training in progress), ``state`` (its
    training's last state, kept for a longer run to go on from: :func:`run_one`)."""
    return path.with_name(f"{path.stem}.{what}.pt")


def _cached(call, made_of, key, seed, cache, extra, takes_checkpoint, counted=True, keep=False) -> tuple[Run, bool]:
    """One run, and whether it was loaded from ``cache`` (under the hash of ``made_of`` as data, with the package
    version; ``made_of=None``: a run never cached). ``keep``: its training's last state stays in the cache, for a
    longer run of the same training to go on from (:func:`run_one`)."""
    if cache is None or made_of is None:
        return call(**extra), False
    path, name, settings = _cache_path(cache, key, seed, made_of)  # another loss parameter or setting: another file
    if path.exists():
        state = torch.load(path, weights_only=False)
        if state.get("settings") == settings:
            if counted:
                train.record_training(name, 0, 0.0, cached=True)
            return Run(state["metrics"], state["test_embeddings"], train.History(state["history"]),
                       train_embeddings=state.get("train_embeddings"),
                       test_predictions=state.get("test_predictions")), True
        print(f"{path} was trained under other settings: training it again", file=sys.stderr, flush=True)
    partial_path = _kept(path, "partial")
    if takes_checkpoint:
        stale = partial_path.with_name(partial_path.name + ".settings")
        if partial_path.exists() and (not stale.exists() or json.loads(stale.read_text()) != settings):
            partial_path.unlink()  # a training in progress under other settings is not resumed
        stale.parent.mkdir(parents=True, exist_ok=True)
        stale.write_text(json.dumps(settings))
        extra = {**extra, "checkpoint": partial_path}
    result = call(**extra)
    train.save_checkpoint(path, metrics=result.metrics, test_embeddings=result.test_embeddings,
                          history=result.history.records, train_embeddings=result.train_embeddings,
                          test_predictions=result.test_predictions, settings=settings)
    if keep and partial_path.exists():
        partial_path.replace(_kept(path, "state"))
    for leftover in (partial_path, partial_path.with_name(partial_path.name + ".settings")):
        leftover.unlink(missing_ok=True)
    return result, False


def table(results: dict, metric: str = "accuracy") -> dict:
    """``{(row, column): [Run]}`` -> ``{row: {column: [metric over seeds]}}``, the input of
    :func:`dml_tutorial.tables.results_table`."""
    out = {}
    for (row, column), runs in results.items():
        out.setdefault(row, {})[column] = [r.metrics[metric] for r in runs]
    return out


def paired_difference(runs_a, runs_b, metric: str = "accuracy") -> dict:
    """How much ``runs_b`` beats ``runs_a`` on ``metric``, paired by seed (the same seed means the same label-noise
    draw, batches and initialisation, so pairing removes that variation): :func:`dml_tutorial.evidence.paired` of
    the per-seed values (mean, std, 95% interval, paired t-test p-value, n, minimum detectable effect)."""
    a = [r.metrics[metric] for r in runs_a]
    b = [r.metrics[metric] for r in runs_b]
    if len(a) != len(b) or len(a) == 0:
        raise ValueError(f"need the same, non-zero number of runs on both sides, got {len(a)} and {len(b)}")
    return evidence.paired(a, b)
