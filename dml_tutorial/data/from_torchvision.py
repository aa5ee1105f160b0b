"""Datasets that torchvision downloads and checks (md5): MNIST, CIFAR-10/100, STL-10, Omniglot, Flowers102."""

from __future__ import annotations

import pickle
from pathlib import Path

import numpy as np
import torch

from .core import DATA_ROOT, ArrayDataset, Splits, _split, _torchvision
from .on_disk import _image_folder_by_top_dir


def _images_to_tensor(data) -> torch.Tensor:
    """uint8 images ``[N, C, H, W]`` from torchvision's numpy/tensor storage (``[N, H, W(, C)]``)."""
    x = torch.as_tensor(np.asarray(data))
    if x.ndim == 3:
        return x.unsqueeze(1)
    return x.permute(0, 3, 1, 2).contiguous() if x.shape[-1] in (1, 3) else x


def _tv_pair(name, cls, root, download, train_kw, test_kw, split, seen, seed, source, classes=()):
    tr = _torchvision(name, cls, root, download, **train_kw)
    te = _torchvision(name, cls, root, download, **test_kw)
    x_tr, x_te = _images_to_tensor(tr.data), _images_to_tensor(te.data)
    y_tr = np.asarray(getattr(tr, "targets", getattr(tr, "labels", None)))
    y_te = np.asarray(getattr(te, "targets", getattr(te, "labels", None)))
    if split == "samples":
        return Splits(name, split, ArrayDataset(x_tr, y_tr), ArrayDataset(x_te, y_te), source, list(classes))
    both = ArrayDataset(torch.cat([x_tr, x_te]), np.concatenate([y_tr, y_te]))
    return _split(name, both, split, seen, seed, source, classes)


def mnist(split="samples", seen=range(6), seed=0, root=DATA_ROOT, download=True, **_) -> Splits:
    """MNIST through torchvision (60k/10k), ``[N, 1, 28, 28]`` uint8 scaled on access."""
    from torchvision.datasets import MNIST

    return _tv_pair("mnist", MNIST, root, download, {"train": True}, {"train": False}, split, seen, seed,
                    "torchvision.datasets.MNIST", map(str, range(10)))


def cifar10(split="samples", seen=range(5), seed=0, root=DATA_ROOT, download=True, **_) -> Splits:
    """CIFAR-10 through torchvision (50k/10k), ``[N, 3, 32, 32]``."""
    from torchvision.datasets import CIFAR10

    return _tv_pair("cifar10", CIFAR10, root, download, {"train": True}, {"train": False}, split, seen, seed,
                    "torchvision.datasets.CIFAR10", CIFAR10_CLASSES)


def cifar100_coarse_labels(root, train: bool) -> np.ndarray:
    """The 20 superclass labels, read from the ``coarse_labels`` field of the dataset's own pickle files."""
    f = Path(root) / "cifar-100-python" / ("train" if train else "test")
    with open(f, "rb") as fh:
        return np.asarray(pickle.load(fh, encoding="latin1")["coarse_labels"])


def cifar100(split="samples", seen=range(10), seed=0, root=DATA_ROOT, download=True, **_) -> Splits:
    """CIFAR-100 through torchvision with its **20 coarse superclasses** as labels (the DCDL paper's setting)."""
    from torchvision.datasets import CIFAR100

    s = _tv_pair("cifar100", CIFAR100, root, download, {"train": True}, {"train": False}, "samples", seen, seed,
                 "torchvision.datasets.CIFAR100 (coarse labels)")
    s.train.labels, s.test.labels = cifar100_coarse_labels(root, True), cifar100_coarse_labels(root, False)
    if split == "classes":
        both = ArrayDataset(torch.cat([s.train.x, s.test.x]), np.concatenate([s.train.labels, s.test.labels]))
        return _split("cifar100", both, split, seen, seed, s.source)
    return s


def stl10(split="samples", seen=range(5), seed=0, root=DATA_ROOT, download=True, size=32, **_) -> Splits:
    """STL-10 labelled train/test (5k/8k) through torchvision, resized from 96x96 to ``size`` (32 in the DCDL
    paper) with antialiased bilinear interpolation."""
    from torchvision.datasets import STL10

    s = _tv_pair("stl10", STL10, root, download, {"split": "train"}, {"split": "test"}, "samples", seen, seed,
                 f"torchvision.datasets.STL10 resized to {size}x{size}", STL10_CLASSES)
    for part in (s.train, s.test):
        part.x = resize_uint8(part.x, size)
    if split == "classes":
        both = ArrayDataset(torch.cat([s.train.x, s.test.x]), np.concatenate([s.train.labels, s.test.labels]))
        return _split("stl10", both, split, seen, seed, s.source, STL10_CLASSES)
    return s


def resize_uint8(x: torch.Tensor, size: int) -> torch.Tensor:
    import torch.nn.functional as F

    y = F.interpolate(x.float(), size=(size, size), mode="bilinear", antialias=True, align_corners=False)
    return y.round_().clamp_(0, 255).to(torch.uint8)


def omniglot(split="classes", root=DATA_ROOT, download=True, transform=None, **_) -> Splits:
    """Omniglot with **alphabet** labels (EPS paper, section 5.2): the 30 "background" alphabets for training and
    the 20 "evaluation" alphabets for testing; images read from torchvision's on-disk layout. Each split's
    ``extras['letters']`` holds the character of every image (the EPS paper's Table 3 evaluates on those too)."""
    from torchvision.datasets import Omniglot

    parts = []
    for background in (True, False):
        folder = "images_background" if background else "images_evaluation"
        base = Path(root) / "omniglot-py" / folder
        if not base.is_dir():
            _torchvision("omniglot", Omniglot, root, download, background=background)
        parts.append(_image_folder_by_top_dir(base, transform, offset=sum(len(p.extras["names"]) for p in parts)))
    return Splits("omniglot", "classes", parts[0], parts[1], "torchvision.datasets.Omniglot (alphabet labels)",
                  parts[0].extras["names"] + parts[1].extras["names"])


CIFAR10_CLASSES = ["airplane", "automobile", "bird", "cat", "deer", "dog", "frog", "horse", "ship", "truck"]
STL10_CLASSES = ["airplane", "bird", "car", "cat", "deer", "dog", "horse", "monkey", "ship", "truck"]
