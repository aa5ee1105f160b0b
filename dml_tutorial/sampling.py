"""Which samples go in a batch, and which tuples a loss sees.

- :class:`PKSampler`: class-balanced batches of P classes x K samples (10 per class in DCDL, 2 in ECAML, 12 x 5 in
  the noise-guarantees paper), reproducible from ``seed`` and the epoch number, working with noisy labels.
- :func:`positive_pairs`: all positive pairs, one random positive per anchor, or the *easy positive* of each
  anchor (EPS: its nearest same-class sample in the batch).
- :func:`mine_negatives`: one negative per positive pair (or all of them) by the strategies of the papers.

Everything is vectorised over anchors; distances are detached (mining picks indices, it is not differentiated).
"""

from __future__ import annotations

import math

import numpy as np
import torch

from ._checks import check_choice
from .distances import label_masks, pairwise_distances

POSITIVES = ("all", "random", "easy")
NEGATIVES = ("all", "random", "semihard-band", "semihard-band-or-random", "semihard-random", "semihard-fixed", "hard",
             "distance")


class PKSampler(torch.utils.data.Sampler):
    """Batches of ``p`` classes x ``k`` samples, as lists of indices (use as ``batch_sampler=``).

    Each epoch draws classes without replacement until fewer than ``p`` remain with samples left; a class with
    fewer than ``k`` samples is filled up by drawing with replacement. ``len(self)`` batches per epoch (default:
    as many as cover the dataset once). The order depends only on ``seed`` and :meth:`set_epoch`, so a resumed
    run sees the same batches."""

    def __init__(self, labels, p: int, k: int, seed: int = 0, batches_per_epoch: int | None = None):
        self.labels = np.asarray(labels)
        self.classes, inverse = np.unique(self.labels, return_inverse=True)
        if k < 1 or p < 1:
            raise ValueError(f"p and k must be positive, got p={p}, k={k}")
        if p > len(self.classes):
            raise ValueError(f"p={p} classes per batch but the labels have only {len(self.classes)} classes")
        self.p, self.k, self.seed, self.epoch = p, k, seed, 0
        self.members = [np.flatnonzero(inverse == c) for c in range(len(self.classes))]
        self.batches = batches_per_epoch or max(1, len(self.labels) // (p * k))

    def set_epoch(self, epoch: int):
        self.epoch = int(epoch)

    def __len__(self):
        return self.batches

    def __iter__(self):
        rng = np.random.default_rng([self.seed, self.epoch])
        for _ in range(self.batches):
            chosen = rng.choice(len(self.members), size=self.p, replace=False)
            batch = []
            for c in chosen:
                m = self.members[c]
                batch += list(rng.choice(m, size=self.k, replace=len(m) < self.k))
            yield [int(i) for i in batch]


def positive_pairs(dist: torch.Tensor, labels: torch.Tensor, positives: str = "all",
                   generator: torch.Generator | None = None):
    """Anchor/positive index pairs ``(a, p)``.

    ``"all"``: every ordered pair of distinct same-class samples. ``"random"``: for each anchor with a same-class
    sample in the batch, one of them drawn uniformly (``generator``; the EPS paper's "random sampling of positive
    examples (the regular loss)", section 5.1, and Roth et al.'s miners). ``"easy"``: only the nearest one (EPS,
    Levi et al., section 4: x_p = argmin_{y_p = y_a} d(x_a, x_p))."""
    check_choice(positives, POSITIVES, "positives")
    pos, _ = label_masks(labels)
    if positives == "all":
        a, p = pos.nonzero(as_tuple=True)
        return a, p
    if positives == "random":
        return _random_choice(pos, generator)
    d = dist.detach().masked_fill(~pos, float("inf"))
    has = pos.any(1)
    a = has.nonzero(as_tuple=True)[0]
    return a, d[a].argmin(1)


def _random_choice(mask: torch.Tensor, generator) -> tuple[torch.Tensor, torch.Tensor]:
    """One uniformly random True column per row of ``mask``; returns (rows that have one, chosen columns)."""
    score = torch.rand(mask.shape, generator=generator, device="cpu").to(mask.device)
    score = score.masked_fill(~mask, -1.0)
    rows = mask.any(1).nonzero(as_tuple=True)[0]
    return rows, score[rows].argmax(1)


def distance_weights(d_an: torch.Tensor, dim: int, mask: torch.Tensor | None = None, cutoff: float = 0.5,
                     nonzero_loss_cutoff: float = 1.4):
    """Sampling weights of distance-weighted sampling (Wu et al. 2017, eq. 4): q(d)^-1 with
    q(d) ∝ d^(n-2) (1 - d^2/4)^((n-3)/2) for unit vectors in n dimensions; d is clipped below at ``cutoff`` and
    negatives farther than ``nonzero_loss_cutoff`` get weight 0. Computed in log space and normalised per row by
    its maximum, so no row of valid negatives underflows to all zeros (d^(n-2) is ~1e-150 for n = 512). A row
    whose negatives are all beyond ``nonzero_loss_cutoff`` (typical early in training in 512-d, where random unit
    vectors sit at distance ~1.414) falls back to uniform weights, as in the authors' reference code."""
    d = d_an.clamp(min=cutoff, max=2.0 - 1e-4)
    log_w = -(dim - 2.0) * torch.log(d) - (dim - 3.0) / 2.0 * torch.log1p(-(d * d) / 4.0)
    mask = torch.ones_like(d_an, dtype=torch.bool) if mask is None else mask
    valid = mask & (d_an < nonzero_loss_cutoff)
    none = ~valid.any(1, keepdim=True)
    valid = torch.where(none, mask, valid)
    log_w = torch.where(none, torch.zeros_like(log_w), log_w).masked_fill(~valid, -math.inf)
    rowmax = log_w.max(1, keepdim=True).values
    w = torch.exp(log_w - torch.where(torch.isfinite(rowmax), rowmax, torch.zeros_like(rowmax)))
    return w.masked_fill(~valid, 0.0)


def _candidates(dist, labels, a, p, negatives: str, margin: float):
    """The distances from each positive pair's anchor, and the negatives the strategy draws that pair's negative
    from (one boolean row per pair; for ``semihard-fixed`` and ``hard`` the nearest of them is taken)."""
    _, neg = label_masks(labels)
    d = dist.detach()
    cand, d_an, d_ap = neg[a], d[a], d[a, p][:, None]
    if negatives == "semihard-random":
        cand = cand & (d_an < d_ap + margin)
    elif negatives in ("semihard-band", "semihard-band-or-random"):
        band = cand & (d_an > d_ap) & (d_an < d_ap + margin)
        cand = band if negatives == "semihard-band" else torch.where(band.any(1, keepdim=True), band, cand)
    elif negatives == "semihard-fixed":
        cand = cand & (d_an > d_ap)
    return d_an, cand


def mine_negatives(dist, labels, a, p, negatives: str = "semihard-random", margin: float = 0.2,
                   generator: torch.Generator | None = None, dim: int | None = None):
    """Negatives for the positive pairs ``(a, p)``; returns triplet indices ``(a, p, n)``.

    - ``all``: every negative of the anchor (all triplets);
    - ``random``: one uniformly random negative;
    - ``semihard-band``: one random negative inside the semi-hard band, d_ap < d_an < d_ap + margin (FaceNet,
      Schroff et al. 2015, the semi-hard sampling the DCDL, EPS and ECAML papers cite); a pair whose band is empty
      has no triplet, so once the classes separate the loss can fall silent;
    - ``semihard-band-or-random``: the same band, and a uniformly random negative where it is empty (the
      fallback of Roth et al.'s 2020 framework, ``batchminer/semihard.py``), so every pair keeps a triplet;
    - ``semihard-random``: one random negative with a positive hinge, d_an < d_ap + margin (Le & Odobez, eq. 28:
      hard negatives, closer than the positive, are admitted too);
    - ``semihard-fixed``: the nearest negative farther than the positive, argmin_{d_an > d_ap} d_an (eq. 29);
    - ``hard``: the nearest negative;
    - ``distance``: distance-weighted sampling of Wu et al. (needs ``dim``, the embedding dimension).

    Positive pairs for which the strategy finds no negative are dropped. ``dist`` holds the distances the loss
    uses (squared or not), so the semi-hard conditions follow the loss's convention."""
    check_choice(negatives, NEGATIVES, "negatives")
    d_an, cand = _candidates(dist, labels, a, p, negatives, margin)
    if negatives == "all":
        t, n = cand.nonzero(as_tuple=True)
        return a[t], p[t], n
    if negatives in ("semihard-fixed", "hard"):
        masked = d_an.masked_fill(~cand, float("inf"))
        rows = cand.any(1).nonzero(as_tuple=True)[0]
        return a[rows], p[rows], masked[rows].argmin(1)
    if negatives == "distance":
        if dim is None:
            raise ValueError("distance-weighted sampling needs dim, the embedding dimension")
        w = distance_weights(d_an, dim, cand)
        rows = (w.sum(1) > 0).nonzero(as_tuple=True)[0]
        if len(rows) == 0:
            return a[:0], p[:0], a[:0]
        n = torch.multinomial(w[rows].cpu().double(), 1, generator=generator).squeeze(1).to(a.device)
        return a[rows], p[rows], n
    rows, n = _random_choice(cand, generator)
    return a[rows], p[rows], n


def selection_probabilities(dist, labels, a, p, negatives: str = "semihard-random", margin: float = 0.2,
                            dim: int | None = None) -> torch.Tensor:
    """P(the strategy picks sample n as the negative of the positive pair (a_i, p_i)), exactly: one row per pair
    over the batch's samples, summing to 1, or to 0 where the strategy finds no negative (the pair is dropped).
    The random strategies draw uniformly from their candidates (:func:`mine_negatives`), ``semihard-fixed`` and
    ``hard`` put 1 on the nearest candidate, ``distance`` draws by Wu et al.'s weights, and ``all``, which takes
    every negative once, is given the uniform ``1/|negatives|`` of an unbiased 1-1 sampler."""
    check_choice(negatives, NEGATIVES, "negatives")
    d_an, cand = _candidates(dist, labels, a, p, negatives, margin)
    if negatives in ("semihard-fixed", "hard"):
        w = torch.zeros_like(d_an)
        rows = cand.any(1).nonzero(as_tuple=True)[0]
        w[rows, d_an[rows].masked_fill(~cand[rows], float("inf")).argmin(1)] = 1.0
    elif negatives == "distance":
        if dim is None:
            raise ValueError("distance-weighted sampling needs dim, the embedding dimension")
        w = distance_weights(d_an, dim, cand).to(d_an.dtype)
    else:
        w = cand.to(d_an.dtype)
    return w / w.sum(1, keepdim=True).clamp_min(torch.finfo(w.dtype).tiny)


def negative_frequencies(embeddings, labels, anchor: int, positive: int, negatives: str, draws: int = 1000,
                         margin: float = 0.2, squared: bool = False, seed: int = 0) -> np.ndarray:
    """How often each sample of the batch is the negative that ``negatives`` picks for the pair
    (``anchor``, ``positive``), over ``draws`` independent draws: a vector of frequencies in [0, 1] (1 for every
    negative under ``"all"``; one sample at 1 under the deterministic ``"hard"`` and ``"semihard-fixed"``). For
    figures of what each strategy does; distances as in :func:`mine_negatives`."""
    z = torch.as_tensor(embeddings, dtype=torch.float32)
    y = torch.as_tensor(labels)
    if y[anchor] != y[positive] or anchor == positive:
        raise ValueError(f"samples {anchor} and {positive} are not a positive pair")
    dist = pairwise_distances(z, squared=squared)
    a = torch.full((draws,), anchor, dtype=torch.long)
    p = torch.full((draws,), positive, dtype=torch.long)
    g = torch.Generator().manual_seed(seed)
    _, _, n = mine_negatives(dist, y, a, p, negatives, margin, g, dim=z.shape[1])
    return (torch.bincount(n, minlength=len(y)).double() / draws).numpy()
