"""The one place that computes pairwise distances and same/different-class masks.

Every loss and miner calls these, so that no loss rebuilds them. Conventions:
``squared=True`` gives ||u - v||^2, ``squared=False`` gives ||u - v||. The plain distance is computed as
sqrt(max(d^2, eps_sq)) on the off-diagonal and exactly 0 where d^2 is 0 *without* a NaN gradient: sqrt has an
infinite derivative at 0, so zero distances (duplicate embeddings, the diagonal) are routed around it.
"""

import torch


def pairwise_sq_distances(x: torch.Tensor, y: torch.Tensor | None = None) -> torch.Tensor:
    """||x_i - y_j||^2 for all i, j, clamped at 0 (the expansion x.x - 2x.y + y.y can dip below 0)."""
    y = x if y is None else y
    d2 = (x * x).sum(1, keepdim=True) - 2.0 * x @ y.T + (y * y).sum(1)[None, :]
    if y is x:
        d2 = d2 - torch.diag_embed(torch.diagonal(d2))  # exact zeros on the diagonal
    return d2.clamp_min(0.0)


def pairwise_distances(x: torch.Tensor, y: torch.Tensor | None = None, squared: bool = False) -> torch.Tensor:
    """Euclidean distance matrix; see the module docstring for the zero-distance convention."""
    d2 = pairwise_sq_distances(x, y)
    if squared:
        return d2
    zero = d2 <= 1e-12
    return torch.where(zero, torch.zeros_like(d2), torch.sqrt(torch.where(zero, torch.ones_like(d2), d2)))


def label_masks(labels: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Boolean ``[B, B]`` masks: ``pos[i, j]`` same class and i != j; ``neg[i, j]`` different class."""
    same = labels[:, None] == labels[None, :]
    eye = torch.eye(len(labels), dtype=torch.bool, device=labels.device)
    return same & ~eye, ~same
