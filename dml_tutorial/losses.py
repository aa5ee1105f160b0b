"""Local metric-learning losses, each as its paper writes it, with its paper's defaults.

Every loss is a function ``(embeddings [B, d], labels [B], ...) -> scalar tensor``. Distances and class masks come
from :mod:`dml_tutorial.distances`, tuples from :mod:`dml_tutorial.sampling`, so any loss combines with any
sampling. A batch without any valid tuple gives a zero loss that keeps the gradient graph (never NaN).
"""

import torch

from ._checks import check_embeddings
from .distances import label_masks, pairwise_distances
from .sampling import mine_negatives, positive_pairs


def _zero(z: torch.Tensor) -> torch.Tensor:
    return z.sum() * 0.0


def triplet_loss(embeddings, labels, margin: float = 0.2, squared: bool = False, positives: str = "all",
                 negatives: str = "semihard-random", generator: torch.Generator | None = None) -> torch.Tensor:
    """Triplet loss (Schroff et al. 2015; paper 004 eq. 3): mean over the sampled triplets of
    [d(a, p) - d(a, n) + margin]_+ .

    ``squared`` picks d = ||.||^2 (DCDL: squared with margin tau = 0.5) or d = ||.|| (paper 004: alpha = 0.2;
    ECAML: m = 0.1). The mean runs over *all* sampled triplets, those with zero loss included.
    ``positives`` / ``negatives``: see :func:`dml_tutorial.sampling.positive_pairs` and ``mine_negatives``."""
    z, y = check_embeddings(embeddings, labels)
    dist = pairwise_distances(z, squared=squared)
    a, p = positive_pairs(dist, y, positives)
    mining_dist = dist if negatives != "distance" or not squared else pairwise_distances(z.detach())
    a, p, n = mine_negatives(mining_dist, y, a, p, negatives, margin, generator, dim=z.shape[1])
    if len(a) == 0:
        return _zero(z)
    return torch.relu(dist[a, p] - dist[a, n] + margin).mean()


def contrastive_loss(embeddings, labels, alpha: float = 0.2, beta: float = 1.4) -> torch.Tensor:
    """Marginal loss of paper 004 (eq. 2; Wu et al. 2017 with a fixed beta): mean over all pairs i < j of
    [(d_ij - beta) t_ij + alpha]_+ with t_ij = +1 for a same-class pair and -1 otherwise, d the plain Euclidean
    distance. Defaults alpha = 0.2, beta = 1.4 (paper 004, section 6)."""
    z, y = check_embeddings(embeddings, labels)
    if len(z) < 2:
        return _zero(z)
    dist = pairwise_distances(z)
    pos, _ = label_masks(y)
    t = pos.to(z.dtype) * 2 - 1
    upper = torch.triu(torch.ones_like(pos), diagonal=1)
    return torch.relu((dist - beta) * t + alpha)[upper].mean()
