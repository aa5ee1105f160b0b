"""Argument checks shared by the modules: every public function raises ValueError with a message for people."""

import inspect

import numpy as np
import torch


def accepts(function, name: str) -> bool:
    """Whether ``function`` (a function, a ``functools.partial``) takes the keyword ``name``."""
    try:
        return name in inspect.signature(function).parameters
    except (TypeError, ValueError):
        return False


def as_tensor(x, name: str, dtype=None) -> torch.Tensor:
    """Return ``x`` as a tensor (numpy arrays are converted, tensors are left on their device)."""
    if isinstance(x, torch.Tensor):
        return x if dtype is None else x.to(dtype)
    try:
        return torch.as_tensor(np.asarray(x), dtype=dtype)
    except (TypeError, ValueError) as err:
        raise ValueError(f"{name} must be a tensor or array, got {type(x).__name__}") from err


def check_embeddings(embeddings, labels=None, *, min_samples: int = 1):
    """Validate an ``[N, d]`` embedding matrix and optional ``[N]`` labels; return them as tensors."""
    z = as_tensor(embeddings, "embeddings")
    if z.ndim != 2:
        raise ValueError(f"embeddings must have shape [N, d], got shape {tuple(z.shape)}")
    if not torch.is_floating_point(z):
        z = z.float()
    if z.shape[0] < min_samples:
        raise ValueError(f"need at least {min_samples} embeddings, got {z.shape[0]}")
    if not torch.isfinite(z).all():
        raise ValueError("embeddings contain NaN or infinite values; check the model output or the learning rate")
    if labels is None:
        return z
    y = check_labels(labels, len(z))
    return z, y.to(z.device)


def check_labels(labels, n: int | None = None) -> torch.Tensor:
    """Validate integer class labels of shape ``[N]`` (and length ``n`` when given)."""
    y = as_tensor(labels, "labels")
    if y.ndim != 1:
        raise ValueError(f"labels must have shape [N], got shape {tuple(y.shape)}")
    if torch.is_floating_point(y):
        if not torch.equal(y, y.round()):
            raise ValueError("labels must be integers")
        y = y.long()
    if n is not None and len(y) != n:
        raise ValueError(f"labels and embeddings differ in length: {len(y)} labels for {n} embeddings")
    return y.long()


def check_rate(rate: float, name: str = "rate") -> float:
    """A probability in [0, 1]."""
    if not (0.0 <= float(rate) <= 1.0):
        raise ValueError(f"{name} must lie in [0, 1], got {rate}")
    return float(rate)


def check_choice(value: str, choices, name: str) -> str:
    if value not in choices:
        raise ValueError(f"unknown {name} {value!r}; choose one of {', '.join(map(repr, choices))}")
    return value
