"""One experiment, as the noisy-label chapters run it: corrupt the training labels, train an embedding with a given
loss on class-balanced batches, and measure it with a linear probe (fitted on the training embeddings and their
*observed* labels, scored on the clean test labels: the DCDL paper's protocol, section 4) and Recall@1.

    run = train_and_probe(splits, dcdl.dcdl_loss("trip", "W"), cfg, k=10, noise=("symmetric", 0.3), seed=0)
    run.metrics  # {"accuracy": ..., "R@1": ..., "flipped": ..., "seconds": ...}

:func:`grid` runs many such experiments over several seeds with one progress bar.
"""

from __future__ import annotations

import re
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
from tqdm import tqdm

from . import metrics, models, sampling, train
from . import noise as label_noise


@dataclass
class Run:
    """What one experiment leaves: its metrics, the test embeddings (for plots) and the training history."""

    metrics: dict
    test_embeddings: torch.Tensor
    history: train.History


def corrupt(dataset, noise, seed: int = 0, pairs=None):
    """``dataset`` with its labels corrupted by ``noise`` = ``None`` (clean) or ``(kind, rate)``, e.g.
    ``("symmetric", 0.3)`` or ``("asymmetric", 0.2)`` with class ``pairs`` (see :mod:`dml_tutorial.noise`)."""
    if noise is None or noise[1] == 0:
        return dataset
    kind, rate = noise
    num_classes = int(dataset.labels.max()) + 1
    return dataset.with_labels(label_noise.corrupt_labels(dataset.labels, num_classes, rate, kind, pairs, seed=seed))


def train_and_probe(splits, loss_fn, cfg: dict, *, k: int, noise=None, pairs=None, seed: int = 0,
                    device="auto", progress: bool = False, checkpoint=None) -> Run:
    """Train a fresh ``cfg["model"]`` (``dim``, ``dropout``) with ``loss_fn`` for ``cfg["epochs"]`` epochs of
    batches of every class x ``k`` samples (Adam, ``lr``, divided by 10 every ``lr_step`` epochs) on the training
    split with ``noise`` applied, then probe it. The noise draw, the initialisation and the batches all follow
    ``seed``."""
    train.seed_everything(seed, threads=cfg.get("threads"))
    data = corrupt(splits.train, noise, seed, pairs)
    num_classes = len(np.unique(data.labels))
    model = models.make_model(cfg["model"], tuple(data.x.shape[1:]), cfg["dim"], dropout=cfg.get("dropout", 0.0))
    optimizer = torch.optim.Adam(model.parameters(), lr=cfg["lr"])
    scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=cfg.get("lr_step") or cfg["epochs"] + 1,
                                                gamma=0.1)
    sampler = sampling.PKSampler(data.labels, p=num_classes, k=k, seed=seed,
                                 batches_per_epoch=cfg.get("batches_per_epoch"))
    start = time.perf_counter()
    history = train.fit(model, loss_fn, data, epochs=cfg["epochs"], sampler=sampler, optimizer=optimizer,
                        scheduler=scheduler, device=device, seed=seed, progress=progress, checkpoint=checkpoint,
                        description=getattr(loss_fn, "__name__", "training"))
    seconds = time.perf_counter() - start
    z_train, z_test = train.embed(model, data), train.embed(model, splits.test)
    flipped = float(np.mean(data.labels != splits.train.labels))
    return Run({"accuracy": metrics.linear_probe_accuracy(z_train, data.labels, z_test, splits.test.labels, seed),
                "R@1": metrics.recall_at_k(z_test, splits.test.labels, ks=(1,))[1],
                "flipped": flipped, "seconds": seconds}, z_test, history)


def grid(configs: dict, seeds, run, description: str = "runs", cache=None) -> dict:
    """``{key: [run(**configs[key], seed=s) for s in seeds]}`` with one progress bar over all runs.

    With a ``cache`` folder, every finished run is saved there (``<key>-seed<s>.pt``: metrics, test embeddings,
    history) and loaded instead of re-run the next time, so an interrupted grid (a disconnected Colab runtime)
    resumes where it stopped. Delete the folder to start afresh."""
    seeds = list(seeds)
    if not seeds:
        raise ValueError("grid needs at least one seed")
    out = {key: [] for key in configs}
    with tqdm(total=len(configs) * len(seeds), desc=description, mininterval=1.0, file=sys.stderr) as bar:
        for key, kwargs in configs.items():
            for seed in seeds:
                out[key].append(_cached(run, kwargs, seed, cache, key))
                bar.update()
    return out


def _cached(run, kwargs, seed, cache, key) -> Run:
    if cache is None:
        return run(**kwargs, seed=seed)
    name = re.sub(r"[^A-Za-z0-9.+-]+", "_", "-".join(map(str, key if isinstance(key, tuple) else (key,))))
    path = Path(cache) / f"{name}-seed{seed}.pt"
    if path.exists():
        state = torch.load(path, weights_only=False)
        return Run(state["metrics"], state["test_embeddings"], train.History(state["history"]))
    result = run(**kwargs, seed=seed)
    train.save_checkpoint(path, metrics=result.metrics, test_embeddings=result.test_embeddings,
                          history=result.history.records)
    return result


def table(results: dict, metric: str = "accuracy") -> dict:
    """``{(row, column): [Run]}`` -> ``{row: {column: [metric over seeds]}}``, the input of
    :func:`dml_tutorial.plots.results_table`."""
    out = {}
    for (row, column), runs in results.items():
        out.setdefault(row, {})[column] = [r.metrics[metric] for r in runs]
    return out


def paired_difference(runs_a, runs_b, metric: str = "accuracy") -> dict:
    """How much ``runs_b`` beats ``runs_a`` on ``metric``, paired by seed (the same seed means the same label-noise
    draw, batches and initialisation, so pairing removes that variation): the mean and std of the per-seed
    differences and the two-sided p-value of a paired t-test (scipy; ``nan`` with fewer than two seeds or no
    spread). With three seeds only large, consistent effects reach p < 0.05."""
    from scipy import stats

    a = np.array([r.metrics[metric] for r in runs_a], dtype=float)
    b = np.array([r.metrics[metric] for r in runs_b], dtype=float)
    if len(a) != len(b) or len(a) == 0:
        raise ValueError(f"need the same, non-zero number of runs on both sides, got {len(a)} and {len(b)}")
    d = b - a
    p = float(stats.ttest_rel(b, a).pvalue) if len(d) > 1 and d.std() > 0 else float("nan")
    return {"mean": float(d.mean()), "std": float(d.std(ddof=1)) if len(d) > 1 else 0.0, "p": p, "n": len(d)}
