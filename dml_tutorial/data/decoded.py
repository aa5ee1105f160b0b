"""Photographs decoded once: a dataset of JPEG files (CUB, Cars, SOP) turned into one uint8 array, so that training
reads pixels instead of decoding files, and crops and flips on the GPU (:func:`dml_tutorial.augment.random_crop_flip`
with ``size``, :func:`dml_tutorial.augment.normalize`).

On Colab's two CPUs a DataLoader decodes a few hundred 224-px JPEGs per second, less than a GPU trains on; decoding
each image once (shorter side resized to ``size``, centre-cropped to ``size`` x ``size``: CUB's 11,788 images at
256 px are 2.3 GB) moves that cost out of every epoch and every evaluation pass.

    decoded = decode_once(splits.train, size=256, cache="data/decoded")   # an ArrayDataset of uint8 images
    splits = decode_splits(splits, crop=224, cache="data/decoded")  # both splits at 256 px, as DecodedImages

A :class:`DecodedImages` is what the chapters train on (profile key ``decode_once``): its :meth:`~DecodedImages.batch`
is the evaluation view (the central ``crop`` x ``crop``, normalised: torchvision's ``Resize(256)``,
``CenterCrop(224)``, ``Normalize``), used for embedding and batch-norm statistics; its
:meth:`~DecodedImages.training_batch` the training view (a random ``crop`` x ``crop`` and a random flip,
normalised), which :func:`dml_tutorial.train.fit` asks for. Both crop the uint8 images before converting them, on the
device that holds them (``ArrayDataset.to``). The training view crops the 256-px centre square at a random offset,
where torchvision's ``RandomResizedCrop`` samples scale and aspect: the papers' released codes use either.

The array is cached as ``<cache>/<name>.npy`` with its SHA-256 in ``<name>.sha256`` beside it; the name holds the
size and a hash of the file list, so another dataset or size never reads it, and a file whose checksum does not
match is decoded again. ``benchmarks/bench_loader.py`` measures it against the JPEG loader.
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
import sys
from pathlib import Path

import numpy as np
import torch
from tqdm import tqdm

from .. import augment
from .core import ArrayDataset, ImageListDataset, Splits


def decode_image(path, size: int = 256) -> np.ndarray:
    """One image as uint8 [3, size, size]: RGB, the shorter side resized to ``size`` (bilinear, antialiased),
    centre-cropped; torchvision's ``Resize(size)`` then ``CenterCrop(size)``."""
    from PIL import Image

    with Image.open(path) as img:
        img = img.convert("RGB")
        w, h = img.size
        new = (size, int(size * h / w)) if w <= h else (int(size * w / h), size)  # torchvision's Resize(size)
        img = img.resize(new, Image.BILINEAR)
        left, top = round((img.size[0] - size) / 2), round((img.size[1] - size) / 2)  # as torchvision rounds
        img = img.crop((left, top, left + size, top + size))
        return np.asarray(img, dtype=np.uint8).transpose(2, 0, 1).copy()


class _Files(torch.utils.data.Dataset):
    def __init__(self, paths, size):
        self.paths, self.size = paths, size

    def __len__(self):
        return len(self.paths)

    def __getitem__(self, i):
        return torch.from_numpy(decode_image(self.paths[i], self.size))


def sha256(path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 24), b""):
            digest.update(block)
    return digest.hexdigest()


def cache_name(dataset: ImageListDataset, size: int) -> str:
    """``<first folder>-<size>px-<hash of the file list>``: one name per dataset, split and size."""
    files = "\n".join(str(p) for p in dataset.paths).encode()
    return f"{Path(dataset.paths[0]).parent.parent.name or 'images'}-{size}px-{hashlib.sha256(files).hexdigest()[:12]}"


def decode_once(dataset: ImageListDataset, size: int = 256, cache=None, workers: int = 0,
                progress: bool = False) -> ArrayDataset:
    """``dataset``'s images decoded once (:func:`decode_image`) into an :class:`ArrayDataset` of uint8
    [N, 3, size, size] with the same labels and extras, read from ``cache`` (a folder) when a checked copy is
    there, else decoded with ``workers`` loader processes and written there. With ``cache`` the array is
    memory-mapped, so a dataset larger than memory (SOP: 120k images, 24 GB at 256 px) still works."""
    if not isinstance(dataset, ImageListDataset):
        raise ValueError(f"decode_once takes an ImageListDataset (images on disk), got {type(dataset).__name__}")  # noqa: TRY004 (API.md: ValueError)
    if size < 1:
        raise ValueError(f"size must be positive, got {size}")
    if len(dataset) == 0:
        raise ValueError("decode_once got an empty dataset")
    path = Path(cache) / f"{cache_name(dataset, size)}.npy" if cache is not None else None
    checksum = path.with_suffix(".sha256") if path is not None else None
    if path is not None and path.exists() and checksum.exists() and checksum.read_text().split()[0] == sha256(path):
        array = np.load(path, mmap_mode="r")
    else:
        array = _decode(dataset.paths, size, workers, progress, path)
        if path is not None:
            checksum.write_text(f"{sha256(path)}  {path.name}\n")
    return ArrayDataset(torch.from_numpy(np.ascontiguousarray(array)) if path is None else _mapped(array),
                        dataset.labels, dict(dataset.extras))


def _mapped(array: np.ndarray) -> torch.Tensor:
    """A tensor over a read-only memory map (no copy; it is only ever indexed, never written)."""
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # "The given NumPy array is not writable"
        return torch.from_numpy(array)


def _decode(paths, size, workers, progress, path) -> np.ndarray:
    n = len(paths)
    if path is not None:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(path.name + ".tmp")
        out = np.lib.format.open_memmap(tmp, mode="w+", dtype=np.uint8, shape=(n, 3, size, size))
    else:
        out = np.empty((n, 3, size, size), dtype=np.uint8)
    loader = torch.utils.data.DataLoader(_Files(paths, size), batch_size=64, num_workers=workers)
    done = 0
    for batch in tqdm(loader, desc="decoding images once", total=len(loader), disable=not progress,
                      file=sys.stderr, mininterval=1.0):
        out[done:done + len(batch)] = batch.numpy()
        done += len(batch)
    if path is not None:
        out.flush()
        del out
        os.replace(tmp, path)
        return np.load(path, mmap_mode="r")
    return out


@dataclasses.dataclass
class DecodedImages(ArrayDataset):
    """uint8 images decoded once (``x``: [N, 3, size, size]) with two views of ``crop`` x ``crop`` px, normalised
    by ``mean`` / ``std`` (ImageNet's): :meth:`batch`, the centre crop (evaluation), and :meth:`training_batch`,
    a random crop and flip (training)."""

    crop: int = 224
    mean: tuple = augment.IMAGENET_MEAN
    std: tuple = augment.IMAGENET_STD

    def __post_init__(self):
        super().__post_init__()
        if self.x.dtype != torch.uint8 or self.x.dim() != 4:
            raise ValueError(f"DecodedImages holds uint8 images [N, C, H, W], got {self.x.dtype} {tuple(self.x.shape)}")
        if not 0 < self.crop <= min(self.x.shape[-2:]):
            raise ValueError(f"crop {self.crop} does not fit images of {tuple(self.x.shape[-2:])} px")

    def _normalised(self, x: torch.Tensor) -> torch.Tensor:
        return augment.normalize(x.float().div_(255.0), self.mean, self.std)

    def batch(self, idx, device=None) -> torch.Tensor:
        """The evaluation view of samples ``idx``: the central ``crop`` x ``crop``, cropped where the images are
        held (uint8), then sent to ``device`` (default: there) and normalised there (float32): on a GPU the host
        copies a quarter of the bytes and does no float arithmetic (benchmarks/bench_eval_views.py)."""
        x = self.x[torch.as_tensor(idx, dtype=torch.long, device=self.x.device)]
        return self._normalised(_to(augment.center_crop(x, self.crop), device))

    def training_batch(self, idx, generator=None, device=None) -> torch.Tensor:
        """The training view of samples ``idx``: a random ``crop`` x ``crop`` of each image and a random
        horizontal flip (:func:`dml_tutorial.augment.random_crop_flip`), made where the images are held (uint8),
        then sent to ``device`` and normalised there (float32)."""
        x = self.x[torch.as_tensor(idx, dtype=torch.long, device=self.x.device)]
        crops = augment.random_crop_flip(x, padding=0, size=self.crop, generator=generator)
        return self._normalised(_to(crops, device))


def _to(x: torch.Tensor, device) -> torch.Tensor:
    return x if device is None else x.to(device, non_blocking=True)


def decode_splits(splits: Splits, crop: int = 224, size: int | None = None, cache=None, workers: int = 0,
                  progress: bool = False) -> Splits:
    """``splits`` with both its training and test images decoded once (:func:`decode_once`, cached in ``cache``)
    at the side ``size`` (default ``crop`` x 256 / 224, as :func:`~dml_tutorial.data.image_transforms` resizes
    before its centre crop) as :class:`DecodedImages` of ``crop``-px views. The chapters call it where their
    profile sets ``decode_once`` and the dataset is read from disk (CUB, Cars, SOP)."""
    size = size or int(crop * 256 / 224)
    views = {}
    for name in ("train", "test"):
        raw = decode_once(getattr(splits, name), size, cache, workers, progress)
        views[name] = DecodedImages(raw.x, raw.labels, raw.extras, crop=crop)
    return dataclasses.replace(splits, **views, source=f"{splits.source}, decoded once at {size} px")
