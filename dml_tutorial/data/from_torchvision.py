"""Datasets that torchvision downloads and checks (md5): MNIST, CIFAR-10/100, STL-10, Omniglot, Flowers102."""

from __future__ import annotations

import pickle
from dataclasses import replace
from pathlib import Path

import numpy as np
import torch

from .._checks import check_choice
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


def omniglot(split="classes", root=DATA_ROOT, download=True, transform=None, labels="alphabets",
             val_fraction: float = 0.2, test_drawers: int = 5, **_) -> Splits:
    """Omniglot from torchvision's on-disk layout, with the glyph test bed's three splits
    (:func:`dml_tutorial.data.rendered.glyphs`):

    - ``split="classes"``: the 30 "background" alphabets for training, the 20 "evaluation" ones for testing (the
      EPS paper, section 5.2);
    - ``split="validation"``: inside the background alphabets only: the last ``val_fraction`` of its classes held
      out for testing, so a search never sees a test class;
    - ``split="samples"``: every class on both sides, the 20 drawers split (the last ``test_drawers`` for testing):
      closed-set retrieval of hands never seen.

    ``labels="alphabets"`` (the EPS paper's) or ``"characters"`` (the 1,623 characters, Omniglot's usual classes);
    ``extras`` hold ``letters`` (the character of every image, label * 1000 + its index), ``alphabet`` and
    ``drawer``."""
    from torchvision.datasets import Omniglot

    check_choice(split, ("classes", "validation", "samples"), "split")
    check_choice(labels, ("alphabets", "characters"), "labels")
    parts, names = [], []
    for background in (True, False):
        folder = "images_background" if background else "images_evaluation"
        base = Path(root) / "omniglot-py" / folder
        if not base.is_dir():
            _torchvision("omniglot", Omniglot, root, download, background=background)
        ds, found = _image_folder_by_top_dir(base, transform, offset=len(names))
        names += found
        label = ds.extras["letters"] if labels == "characters" else ds.labels
        parts.append(replace(ds, labels=label, extras={**ds.extras, "alphabet": ds.labels}))
    source = f"torchvision.datasets.Omniglot ({labels[:-1]} labels)"
    class_names = names if labels == "alphabets" else []
    if split == "classes":
        return Splits("omniglot", split, parts[0], parts[1], source, class_names)
    if split == "samples":
        both = replace(parts[0], paths=parts[0].paths + parts[1].paths,
                       labels=np.concatenate([parts[0].labels, parts[1].labels]),
                       extras={k: np.concatenate([parts[0].extras[k], parts[1].extras[k]]) for k in parts[0].extras})
        drawers = np.unique(both.extras["drawer"])
        if not 0 < test_drawers < len(drawers):
            raise ValueError(f"test_drawers must be between 1 and {len(drawers) - 1}, got {test_drawers}")
        test = np.isin(both.extras["drawer"], drawers[-test_drawers:])
        return Splits("omniglot", split, both.subset(~test), both.subset(test), source, class_names)
    classes = np.unique(parts[0].labels)
    n_val = round(val_fraction * len(classes))
    if not 0 < n_val < len(classes):
        raise ValueError(f"val_fraction {val_fraction} leaves no fitting or no validation class of {len(classes)}")
    held = np.isin(parts[0].labels, classes[-n_val:])
    return Splits("omniglot", split, parts[0].subset(~held), parts[0].subset(held), source, class_names)


CIFAR10_CLASSES = ["airplane", "automobile", "bird", "cat", "deer", "dog", "frog", "horse", "ship", "truck"]
STL10_CLASSES = ["airplane", "bird", "car", "cat", "deer", "dog", "horse", "monkey", "ship", "truck"]
