"""Fashion-MNIST, the real data every machine can have: Debian's ``dataset-fashion-mnist`` when installed (checked
by SHA-256), else torchvision's download (checked by md5)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from .._checks import check_choice
from .core import DATA_ROOT, ArrayDataset, Splits, _missing, split_by_class
from .from_torchvision import _images_to_tensor

#: Debian's package ``dataset-fashion-mnist`` installs the four original IDX files (gzipped) here.
DEBIAN_FASHION_MNIST = Path("/usr/share/datasets/fashion-mnist")
#: SHA-256 of the uncompressed IDX files, as Debian's dataset-fashion-mnist 0.0~git20200523.55506a9-1 ships them
#: (measured on 2026-11-24); its gzip wrappers differ from upstream's, so torchvision's md5 of the .gz cannot check them.
FASHION_MNIST_SHA256 = {
    "train-images-idx3-ubyte": "c59f468a2f672dc815687fe0f83887768d799fd8a3f3276145d20f83aa44d888",
    "train-labels-idx1-ubyte": "bad3541b69d912435c50bb6ba87bec294ff4f6a2e1246121d8633921760443d9",
    "t10k-images-idx3-ubyte": "5b4141f0afbad91edebe8549f8fcffe087ea10ca49f1dbef5c9a5cd8815ce37b",
    "t10k-labels-idx1-ubyte": "0402a96d92fd2663957122ceb108a494c5af83dab82d92729df917d7dec38c34",
}
#: The default class-disjoint split: train on trousers, dresses, sandals, sneakers and ankle boots; retrieve among
#: T-shirts, pullovers, coats, shirts and bags, four upper-body garments that raw pixels confuse, so a learned
#: embedding has room to beat the input (the classes with the easiest raw-pixel retrieval would leave none).
FASHION_MNIST_SEEN = (1, 3, 5, 7, 9)


def _unpack_local_copy(local: Path, raw: Path, checksums: dict) -> None:
    """Put the IDX files of a local copy (``<name>.gz`` under ``local``, e.g. Debian's package) uncompressed into
    torchvision's ``raw`` folder, where it reads them without downloading, after checking each against
    ``checksums`` (SHA-256 of the uncompressed file). Files already in ``raw`` are left alone."""
    import gzip
    import hashlib
    import os

    if not all((local / f"{name}.gz").exists() for name in checksums):
        return
    raw.mkdir(parents=True, exist_ok=True)
    for name, sha256 in checksums.items():
        if (raw / name).exists():
            continue
        content = gzip.decompress((local / f"{name}.gz").read_bytes())
        if hashlib.sha256(content).hexdigest() != sha256:
            raise ValueError(f"{local / name}.gz does not match its checksum; reinstall the package it came from "
                             f"(Debian: apt-get install --reinstall dataset-fashion-mnist)")
        partial = raw / f"{name}.partial"
        partial.write_bytes(content)
        os.replace(partial, raw / name)  # never a half-written file under the name torchvision reads


def fashion_mnist(split="classes", seen=FASHION_MNIST_SEEN, seed=0, root=DATA_ROOT, download=True,
                  local=DEBIAN_FASHION_MNIST, val_classes=None, **_) -> Splits:
    """Fashion-MNIST (Xiao et al. 2017): 70,000 28x28 grey images of 10 clothing classes, ``[N, 1, 28, 28]`` uint8
    scaled on access, from Debian's ``dataset-fashion-mnist`` when it is installed (``local``; checked by SHA-256),
    else downloaded by torchvision (checked by md5).

    - ``split="samples"``: the official 60,000 / 10,000 split, every class in both (DCDL's probe protocol);
    - ``split="classes"``: class-disjoint retrieval, the ``seen`` classes' official training images for training,
      the other classes' official test images for testing (:data:`FASHION_MNIST_SEEN` by default);
    - ``split="validation"``: inside the seen classes only, for choosing hyperparameters: the seen classes but
      ``val_classes`` (default: the last two of ``seen``) for training and ``val_classes`` for testing, all from
      the official training images, so no test class and no test image is ever looked at."""
    from torchvision.datasets import FashionMNIST

    check_choice(split, ("classes", "samples", "validation"), "split")
    _unpack_local_copy(Path(local), Path(root) / "FashionMNIST" / "raw", FASHION_MNIST_SHA256)
    parts = []
    for train in (True, False):
        try:
            ds = FashionMNIST(root=str(root), train=train, download=download)
        except (RuntimeError, OSError) as err:  # "Dataset not found", or no network for the download
            raise _missing("fashion_mnist", Path(root) / "FashionMNIST", (
                f"install Debian's package (apt-get install dataset-fashion-mnist, files under {local}) or let "
                f"torchvision download it (download=True, with internet access); {err}")) from err
        parts.append(ArrayDataset(_images_to_tensor(ds.data), np.asarray(ds.targets)))
    official_train, official_test = parts
    source = (f"Debian's dataset-fashion-mnist ({local})" if Path(local, "train-images-idx3-ubyte.gz").exists()
              else "torchvision.datasets.FashionMNIST")
    classes = FashionMNIST.classes
    if split == "samples":
        return Splits("fashion_mnist", split, official_train, official_test, source, list(classes))
    seen = [int(c) for c in seen]
    seen_train, _ = split_by_class(official_train, seen)
    if split == "classes":
        _, unseen_test = split_by_class(official_test, seen)
        return Splits("fashion_mnist", split, seen_train, unseen_test, source, list(classes))
    held_out = [int(c) for c in (val_classes if val_classes is not None else seen[-2:])]
    if not set(held_out) < set(seen):
        raise ValueError(f"val_classes {held_out} must be a proper subset of the seen classes {seen}")
    fit, validation = split_by_class(seen_train, [c for c in seen if c not in held_out])
    return Splits("fashion_mnist", split, fit, validation, source, list(classes))
