"""Datasets and splits: one entry point, :func:`load_dataset`.

Offline (used by the smoke profile, nothing to download): ``digits`` (scikit-learn's bundled 8x8 handwritten
digits, real data), ``mnist1d`` (generated locally by the mnist1d package's ``make_dataset``), ``subclusters``
(synthetic classes made of several well-separated Gaussian modes, for class collapse).

Real data on every machine: ``fashion_mnist``, from Debian's package ``dataset-fashion-mnist`` when installed
(``make setup`` installs it), else downloaded by torchvision; with a class-disjoint split and a validation split
inside the seen classes. ``glyphs``: thousands of characters rendered from Debian's CJK fonts (``make setup``
installs them), each class drawn by 11 font faces: zero-shot retrieval over many classes, offline
(:mod:`~dml_tutorial.data.rendered`).

Paper scale (used by the full profile): ``mnist``, ``cifar10``, ``cifar100`` (its 20 coarse superclasses, as in the
DCDL paper), ``stl10`` (resized to 32x32, DCDL paper), ``omniglot`` (alphabet labels, EPS paper) and
``flowers102`` (Oxford-102 Flowers, noise-guarantees paper) through torchvision, which downloads them with
checksums; ``cub200``, ``cars196`` and ``sop`` from their standard on-disk layouts with the standard
class-disjoint splits (first half of the classes for training, second half for testing; SOP's Ebay_train.txt /
Ebay_test.txt), downloaded first when missing by :mod:`~dml_tutorial.data.download` (checksummed where a checksum
is published, resumable, never half-unpacked).

One module per source: :mod:`~dml_tutorial.data.core` (datasets, splits), :mod:`~dml_tutorial.data.offline`,
:mod:`~dml_tutorial.data.fashion`, :mod:`~dml_tutorial.data.from_torchvision`, :mod:`~dml_tutorial.data.on_disk`
and :mod:`~dml_tutorial.data.download`.

Two kinds of split: ``"classes"`` (zero-shot retrieval: seen classes for training, unseen for testing) and
``"samples"`` (the same classes in train and test). Labels keep their original ids.
"""

from __future__ import annotations

from .._checks import check_choice
from .core import (
    DATA_ROOT,
    ArrayDataset,
    ImageListDataset,
    Splits,
    input_shape,
    split_by_class,
    split_by_sample,
    stack,
)
from .decoded import DecodedImages, decode_once, decode_splits
from .fashion import DEBIAN_FASHION_MNIST, FASHION_MNIST_SEEN, FASHION_MNIST_SHA256, fashion_mnist
from .from_torchvision import (
    CIFAR10_CLASSES,
    STL10_CLASSES,
    cifar10,
    cifar100,
    cifar100_coarse_labels,
    mnist,
    omniglot,
    resize_uint8,
    stl10,
)
from .offline import digits, make_subclusters, mnist1d, subclusters
from .on_disk import cars196, cub200, flowers102, image_transforms, sop
from .rendered import FACES as GLYPH_FACES
from .rendered import glyphs

DATASETS = {
    "digits": digits, "mnist1d": mnist1d, "subclusters": subclusters, "mnist": mnist, "cifar10": cifar10,
    "cifar100": cifar100, "stl10": stl10, "omniglot": omniglot, "cub200": cub200, "cars196": cars196, "sop": sop,
    "flowers102": flowers102, "fashion_mnist": fashion_mnist, "glyphs": glyphs,
}


def load_dataset(name: str, **kwargs) -> Splits:
    """Load a dataset by name (see the module docstring); keyword arguments go to its loader (``split``,
    ``seen``, ``seed``, ``root``, ``download``, ``transform``, ...)."""
    check_choice(name, tuple(DATASETS), "dataset")
    return DATASETS[name](**kwargs)


#: The papers' benchmarks, read as images in their standard class-disjoint splits (no seen classes to draw).
BENCHMARKS = ("cub200", "cars196", "sop", "flowers102", "omniglot")


def chapter_splits(cfg, root=DATA_ROOT, seed: int = 0, progress: bool = False) -> Splits:
    """A retrieval chapter's splits under its settings ``cfg``: a benchmark of :data:`BENCHMARKS` in its standard
    split, with the papers' transforms at ``cfg.image_size`` (Omniglot at 80 px, the EPS paper's Appendix C) and,
    where the profile sets ``decode_once``, decoded once into ``<root>/decoded`` and cropped and flipped on the
    device (:func:`decode_splits`, ``cfg.workers`` processes); any other dataset split by class, ``cfg.seen`` seen
    classes drawn by ``seed``, with ``cfg.dataset_options`` (e.g. test bed II's unseen faces)."""
    if cfg.dataset not in BENCHMARKS:
        return load_dataset(cfg.dataset, split="classes", seen=cfg.seen, seed=seed, root=root, **cfg.dataset_options)
    size = 80 if cfg.dataset == "omniglot" else cfg.image_size
    splits = load_dataset(cfg.dataset, root=root, transform=image_transforms(size, train=True),
                          test_transform=image_transforms(size, train=False))
    if cfg.decode_once:
        splits = decode_splits(splits, crop=size, cache=f"{root}/decoded", workers=cfg.workers, progress=progress)
    return splits


__all__ = [
    "BENCHMARKS",
    "CIFAR10_CLASSES",
    "DATASETS",
    "DATA_ROOT",
    "DEBIAN_FASHION_MNIST",
    "FASHION_MNIST_SEEN",
    "FASHION_MNIST_SHA256",
    "GLYPH_FACES",
    "STL10_CLASSES",
    "ArrayDataset",
    "DecodedImages",
    "ImageListDataset",
    "Splits",
    "cars196",
    "chapter_splits",
    "cifar10",
    "cifar100",
    "cifar100_coarse_labels",
    "cub200",
    "decode_once",
    "decode_splits",
    "digits",
    "fashion_mnist",
    "flowers102",
    "glyphs",
    "image_transforms",
    "input_shape",
    "load_dataset",
    "make_subclusters",
    "mnist",
    "mnist1d",
    "omniglot",
    "resize_uint8",
    "sop",
    "split_by_class",
    "split_by_sample",
    "stack",
    "stl10",
    "subclusters",
]
