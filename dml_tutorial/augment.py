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


def random_crop_flip(x: torch.Tensor, padding: int = 4, flip: bool = True, generator=None) -> torch.Tensor:
    """Each image of ``x`` [N, C, H, W] zero-padded by ``padding``, cropped back to H x W at a random offset and,
    with ``flip``, mirrored left-right with probability 1/2. Same device and dtype as ``x``."""
    if x.dim() != 4:
        raise ValueError(f"expected a batch of images [N, C, H, W], got shape {tuple(x.shape)}")
    if padding < 0:
        raise ValueError(f"padding must be non-negative, got {padding}")
    n, c, h, w = x.shape
    dev = x.device
    dy, dx = torch.randint(0, 2 * padding + 1, (2, n), device=dev, generator=generator)
    rows = dy[:, None] + torch.arange(h, device=dev)  # [N, H]: the padded rows each crop keeps
    cols = dx[:, None] + torch.arange(w, device=dev)  # [N, W]
    if flip:
        mirrored = torch.rand(n, device=dev, generator=generator) < 0.5
        cols = torch.where(mirrored[:, None], cols.flip(1), cols)
    padded = F.pad(x, (padding, padding, padding, padding))
    batch = torch.arange(n, device=dev)[:, None, None, None]
    channel = torch.arange(c, device=dev)[None, :, None, None]
    return padded[batch, channel, rows[:, None, :, None], cols[:, None, None, :]]
