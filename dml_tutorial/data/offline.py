"""Offline data, nothing to download (the smoke profile): scikit-learn's digits, MNIST-1D generated locally, and
synthetic classes made of several modes."""

from __future__ import annotations

import numpy as np
import torch

from .core import ArrayDataset, Splits, _split


def digits(split="classes", seen=range(6), seed=0, **_) -> Splits:
    """scikit-learn's 1,797 8x8 handwritten digits as ``[N, 1, 8, 8]`` floats in [0, 1]. Default split: digits
    0-5 seen, 6-9 unseen, as in the EPS paper's MNIST experiment (section 5.1)."""
    from sklearn.datasets import load_digits

    d = load_digits()
    x = torch.tensor(d.images, dtype=torch.float32).div_(16.0).unsqueeze(1)
    ds = ArrayDataset(x, d.target)
    return _split("digits", ds, split, seen, seed, "sklearn.datasets.load_digits (bundled, offline)", map(str, range(10)))


def mnist1d(split="classes", seen=range(6), seed=0, num_samples=5000, data_seed=42, **_) -> Splits:
    """MNIST-1D (Greydanus 2020) generated locally with ``mnist1d.data.make_dataset`` (never downloaded): 40-step
    1-D signals as ``[N, 1, 40]``, 10 classes. ``data_seed`` is the generator's seed (42 is the package default)."""
    from mnist1d.data import get_dataset_args, make_dataset

    args = get_dataset_args()
    args.num_samples, args.seed = int(num_samples), int(data_seed)
    d = make_dataset(args)
    x = torch.tensor(np.concatenate([d["x"], d["x_test"]]), dtype=torch.float32).unsqueeze(1)
    ds = ArrayDataset(x, np.concatenate([d["y"], d["y_test"]]))
    source = f"mnist1d.data.make_dataset(num_samples={num_samples}, seed={data_seed}) (generated, offline)"
    return _split("mnist1d", ds, split, seen, seed, source, map(str, range(10)))


def make_subclusters(num_classes=4, modes_per_class=3, dim=2, samples_per_mode=100, spread=0.05, seed=0):
    """Synthetic classes made of several modes: mode centres uniform on the unit sphere in ``dim`` dimensions,
    samples Gaussian around them with std ``spread``. Returns ``(x [N, dim], class labels, mode labels)``; the
    modes of a class are interleaved with other classes' modes, so collapsing a class is a real deformation."""
    rng = np.random.default_rng(seed)
    centres = rng.standard_normal((num_classes * modes_per_class, dim))
    centres /= np.linalg.norm(centres, axis=1, keepdims=True)
    modes = np.repeat(np.arange(len(centres)), samples_per_mode)
    x = centres[modes] + spread * rng.standard_normal((len(modes), dim))
    return x.astype(np.float32), modes % num_classes, modes


def subclusters(split="samples", seen=None, seed=0, **kwargs) -> Splits:
    """:func:`make_subclusters` as a dataset; ``extras['modes']`` holds each sample's mode."""
    x, y, modes = make_subclusters(seed=seed, **kwargs)
    ds = ArrayDataset(torch.from_numpy(x), y, {"modes": modes})
    seen = range(len(np.unique(y)) // 2) if seen is None else seen
    return _split("subclusters", ds, split, seen, seed, f"make_subclusters(seed={seed}, {kwargs}) (synthetic)")
