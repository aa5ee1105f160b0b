"""What every loader returns: in-memory and on-disk datasets, the two splits, and the split helpers."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np
import torch

from .._checks import check_choice

DATA_ROOT = Path("data")


@dataclass
class ArrayDataset(torch.utils.data.Dataset):
    """In-memory samples ``x`` (uint8 images are scaled to [0, 1] on access) with integer ``labels`` and optional
    per-sample ``extras`` (e.g. the true digit when the labels are even/odd, or the mode of a sub-cluster)."""

    x: torch.Tensor
    labels: np.ndarray
    extras: dict = field(default_factory=dict)

    def __post_init__(self):
        self.labels = np.asarray(self.labels, dtype=np.int64)
        if len(self.x) != len(self.labels):
            raise ValueError(f"{len(self.x)} samples but {len(self.labels)} labels")

    def __len__(self):
        return len(self.labels)

    def batch(self, idx, device=None) -> torch.Tensor:
        """Samples ``idx``, on ``device`` (default: where they are held); uint8 images travel as uint8 and are
        scaled to [0, 1] there (a quarter of the bytes of float32 through the host-to-device copy)."""
        x = self.x[torch.as_tensor(idx, dtype=torch.long, device=self.x.device)]
        x = x if device is None else x.to(device, non_blocking=True)
        return x.float().div_(255.0) if x.dtype == torch.uint8 else x

    def to(self, device) -> ArrayDataset:
        """The same samples held on ``device``: uint8 images stay uint8 there (CIFAR-10's 50,000 training images
        take 154 MB), so on a GPU every batch is indexed, scaled and augmented in GPU memory, with no DataLoader."""
        return replace(self, x=self.x.to(device))

    def __getitem__(self, i):
        return self.batch([i])[0], int(self.labels[i])

    def subset(self, mask) -> ArrayDataset:
        mask = np.asarray(mask)  # replace(): a subclass (e.g. DecodedImages) keeps its class and its views
        return replace(self, x=self.x[torch.as_tensor(mask, device=self.x.device)], labels=self.labels[mask],
                       extras={k: v[mask] for k, v in self.extras.items()})

    def with_labels(self, labels) -> ArrayDataset:
        """The same samples with other labels (e.g. corrupted ones); the clean labels go to ``extras['clean']``."""
        return replace(self, labels=np.asarray(labels), extras={"clean": self.labels, **self.extras})


@dataclass
class ImageListDataset(torch.utils.data.Dataset):
    """Images on disk, read with PIL when accessed: the fine-grained retrieval datasets."""

    paths: list
    labels: np.ndarray
    transform: object = None
    extras: dict = field(default_factory=dict)

    def __post_init__(self):
        self.labels = np.asarray(self.labels, dtype=np.int64)

    def __len__(self):
        return len(self.labels)

    def __getitem__(self, i):
        from PIL import Image

        with Image.open(self.paths[i]) as img:
            img = img.convert("RGB")
        return (self.transform(img) if self.transform else img), int(self.labels[i])

    def with_labels(self, labels) -> ImageListDataset:
        return replace(self, labels=np.asarray(labels), extras={"clean": self.labels, **self.extras})

    def subset(self, mask) -> ImageListDataset:
        """The images where boolean ``mask`` is true, with their labels and extras (e.g. a clean-data fraction)."""
        mask = np.asarray(mask, dtype=bool)
        if len(mask) != len(self):
            raise ValueError(f"mask has {len(mask)} entries for {len(self)} images")
        return replace(self, paths=[p for p, keep in zip(self.paths, mask) if keep], labels=self.labels[mask],
                       extras={k: np.asarray(v)[mask] for k, v in self.extras.items()})


def stack(dataset, indices) -> torch.Tensor:
    """The inputs of ``dataset`` at ``indices`` as one tensor ``[n, ...]``: an in-memory dataset's batch, or the
    images of a dataset read from disk, one by one through its transform."""
    if isinstance(dataset, ArrayDataset):
        return dataset.batch(np.asarray(indices))
    return torch.stack([dataset[int(i)][0] for i in indices])


def input_shape(dataset) -> tuple:
    """The shape of one model input: an in-memory dataset's sample shape, or for images read from disk the shape
    of its first image after its transform (3 x 224 x 224 under the papers' :func:`image_transforms`); for images
    decoded once (:class:`~dml_tutorial.data.DecodedImages`), the shape of its crops."""
    if hasattr(dataset, "x"):
        return tuple(dataset.batch([0]).shape[1:])
    image = dataset[0][0]
    if not isinstance(image, torch.Tensor):
        raise TypeError("images read from disk need a transform to tensors (data.image_transforms) to have a shape")
    return tuple(image.shape)


@dataclass
class Splits:
    """What :func:`load_dataset` returns: the two splits and where they came from."""

    name: str
    split: str
    train: torch.utils.data.Dataset
    test: torch.utils.data.Dataset
    source: str
    class_names: list = field(default_factory=list)

    @property
    def num_classes(self) -> int:
        return len(np.unique(np.concatenate([self.train.labels, self.test.labels])))

    def __repr__(self):
        return (f"Splits({self.name!r}, split={self.split!r}, train={len(self.train)} samples / "
                f"{len(np.unique(self.train.labels))} classes, test={len(self.test)} samples / "
                f"{len(np.unique(self.test.labels))} classes, source={self.source!r})")


def split_by_class(ds: ArrayDataset, seen) -> tuple[ArrayDataset, ArrayDataset]:
    """Class-disjoint split: samples of the ``seen`` classes for training, all others for testing."""
    mask = np.isin(ds.labels, list(seen))
    if mask.all() or not mask.any():
        raise ValueError(f"seen classes {list(seen)} leave one side of the split empty")
    return ds.subset(mask), ds.subset(~mask)


def split_by_sample(ds: ArrayDataset, test_fraction: float = 0.3, seed: int = 0):
    """Stratified random split of the samples: every class appears in train and test."""
    from sklearn.model_selection import train_test_split

    idx = np.arange(len(ds))
    tr, te = train_test_split(idx, test_size=test_fraction, stratify=ds.labels, random_state=seed)
    return ds.subset(np.isin(idx, tr)), ds.subset(np.isin(idx, te))


def _split(name, ds, split, seen, seed, source, class_names=()):
    check_choice(split, ("classes", "samples"), "split")
    train, test = split_by_class(ds, seen) if split == "classes" else split_by_sample(ds, seed=seed)
    return Splits(name, split, train, test, source, list(class_names))


def _missing(name, path, how) -> FileNotFoundError:
    return FileNotFoundError(f"dataset {name!r} not found under {path}; {how}")


def _torchvision(name, cls, root, download, **kw):
    try:
        return cls(root=str(root), download=download, **kw)
    except RuntimeError as err:  # torchvision: "Dataset not found or corrupted"
        raise _missing(name, root, "pass download=True with internet access, or copy the torchvision files "
                       f"there ({err})") from err
