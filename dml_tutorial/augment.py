"""Image augmentation on whole batches, on the device that holds them: with the dataset itself on the GPU
(:meth:`dml_tutorial.data.ArrayDataset.to`) a 32x32 training epoch never touches the CPU or a DataLoader.

    fit(..., augment=random_crop_flip)        # pad 4, random 32x32 crop, random horizontal flip

``random_crop_flip`` is the usual CIFAR augmentation (He et al., 2016), written with one gather for the batch instead
of a loop over images; the random numbers come from torch's generator on the batch's device (seeded by
:func:`dml_tutorial.train.seed_everything`). The DCDL paper trains without augmentation (section 5); the function
is there for the chapters and experiments that want it.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F


def random_crop_flip(x: torch.Tensor, padding: int = 4, flip: bool = True, generator=None,
                     size: int | None = None) -> torch.Tensor:
    """Each image of ``x`` [N, C, H, W] zero-padded by ``padding``, cropped to ``size`` x ``size`` (default: back to
    H x W) at a random offset and, with ``flip``, mirrored left-right with probability 1/2. Same device and dtype
    as ``x``. ``padding=0, size=224`` on 256-px images decoded once (:mod:`dml_tutorial.data.decoded`) is the
    fine-grained datasets' random 224 crop and flip, done on the GPU."""
    if x.dim() != 4:
        raise ValueError(f"expected a batch of images [N, C, H, W], got shape {tuple(x.shape)}")
    if padding < 0:
        raise ValueError(f"padding must be non-negative, got {padding}")
    n, c, height, width = x.shape
    h, w = (height, width) if size is None else (size, size)
    if not 0 < h <= height + 2 * padding or not 0 < w <= width + 2 * padding:
        raise ValueError(f"crop size {size} does not fit images of {height} x {width} padded by {padding}")
    dev = x.device
    dy = torch.randint(0, height + 2 * padding - h + 1, (n,), device=dev, generator=generator)
    dx = torch.randint(0, width + 2 * padding - w + 1, (n,), device=dev, generator=generator)
    rows = dy[:, None] + torch.arange(h, device=dev)  # [N, H]: the padded rows each crop keeps
    cols = dx[:, None] + torch.arange(w, device=dev)  # [N, W]
    if flip:
        mirrored = torch.rand(n, device=dev, generator=generator) < 0.5
        cols = torch.where(mirrored[:, None], cols.flip(1), cols)
    padded = F.pad(x, (padding, padding, padding, padding))
    batch = torch.arange(n, device=dev)[:, None, None, None]
    channel = torch.arange(c, device=dev)[None, :, None, None]
    return padded[batch, channel, rows[:, None, :, None], cols[:, None, None, :]]


def center_crop(x: torch.Tensor, size: int) -> torch.Tensor:
    """The central ``size`` x ``size`` of each image of ``x`` [N, C, H, W] (the evaluation view of 256-px images
    decoded once: torchvision's ``CenterCrop(224)``)."""
    if x.dim() != 4 or not 0 < size <= min(x.shape[-2:]):
        raise ValueError(f"cannot centre-crop {size} x {size} from a batch of shape {tuple(x.shape)}")
    top, left = round((x.shape[-2] - size) / 2), round((x.shape[-1] - size) / 2)  # as torchvision rounds
    return x[..., top:top + size, left:left + size]


IMAGENET_MEAN, IMAGENET_STD = (0.485, 0.456, 0.406), (0.229, 0.224, 0.225)


def normalize(x: torch.Tensor, mean=IMAGENET_MEAN, std=IMAGENET_STD) -> torch.Tensor:
    """``(x - mean) / std`` per channel of ``x`` [N, C, H, W] in [0, 1] (ImageNet's statistics by default, as
    :func:`dml_tutorial.data.image_transforms` applies them on the CPU)."""
    m = torch.as_tensor(mean, device=x.device, dtype=x.dtype).view(1, -1, 1, 1)
    s = torch.as_tensor(std, device=x.device, dtype=x.dtype).view(1, -1, 1, 1)
    return (x - m) / s
