"""The fine-grained retrieval datasets in their standard on-disk layouts, read image by image with PIL."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from .core import DATA_ROOT, ImageListDataset, Splits, _missing, _torchvision


def _ensure(name: str, root, download: bool, how: str) -> Path:
    """The dataset's folder under ``root``: there already, else downloaded and unpacked by
    :func:`~dml_tutorial.data.download.fetch` when ``download`` (checksummed, resumable), else a
    ``FileNotFoundError`` that names the path, the source and ``how`` to place it by hand."""
    from . import download as dl

    source = dl.SOURCES[name]
    base = Path(root) / source.folder
    if base.is_dir() and all((base / p).exists() for p in source.expect):
        return base
    if download:
        try:
            return dl.fetch(source, root)
        except dl.DownloadError as err:
            raise _missing(name, base, f"the download failed: {err}. Or {how}") from err
    raise _missing(name, base, f"pass download=True to fetch it from {source.url} (checked; see "
                   f"dml_tutorial/data/download.py), or {how}")


def cub200(root=DATA_ROOT, transform=None, test_transform=None, download=True, **_) -> Splits:
    """CUB-200-2011 from its standard layout ``root/CUB_200_2011/{images.txt, image_class_labels.txt, images/}``,
    downloaded from CaltechDATA first when missing and ``download``; classes 1-100 for training, 101-200 for testing
    (the zero-shot split of Oh Song et al. 2016)."""
    base = _ensure("cub200", root, download, f"unpack CUB_200_2011.tgz into {Path(root)}")
    files = dict(line.split(maxsplit=1) for line in (base / "images.txt").read_text().splitlines() if line.strip())
    labels = dict(line.split() for line in (base / "image_class_labels.txt").read_text().splitlines() if line.strip())
    ids = sorted(files, key=int)
    paths = [base / "images" / files[i].strip() for i in ids]
    y = np.asarray([int(labels[i]) for i in ids])
    return _disk_split("cub200", paths, y, y <= 100, transform, test_transform, f"{base} (images.txt)")


def _cars_from_kaggle(base: Path) -> tuple[list, np.ndarray]:
    """The Kaggle copy's layout: ``anno_{train,test}.csv`` (file, box, class 1-196) and the images under
    ``car_data/car_data/{train,test}/``, found by file name in any sub-folder (file names repeat across the two
    folders, not within one)."""
    paths, y = [], []
    for part in ("train", "test"):
        found = {p.name: p for p in (base / "car_data" / "car_data" / part).rglob("*.jpg")}
        for line in (base / f"anno_{part}.csv").read_text().splitlines():
            if line.strip():
                fields = line.split(",")
                if fields[0] not in found:
                    raise FileNotFoundError(f"{base}: anno_{part}.csv lists {fields[0]}, which is not in the images")
                paths.append(found[fields[0]])
                y.append(int(fields[-1]))
    return paths, np.asarray(y, dtype=np.int64)


def cars196(root=DATA_ROOT, transform=None, test_transform=None, download=True, **_) -> Splits:
    """Cars196 (Krause et al. 2013) in Stanford's layout ``root/cars196/{cars_annos.mat, car_ims/}`` or in the
    Kaggle copy's (:func:`_cars_from_kaggle`), which is what ``download`` fetches when neither is there; classes
    1-98 for training, 99-196 for testing."""
    base = Path(root) / "cars196"
    if (base / "cars_annos.mat").exists():
        from scipy.io import loadmat

        annos = loadmat(base / "cars_annos.mat", squeeze_me=True)["annotations"]
        paths = [base / str(a) for a in annos["relative_im_path"]]
        y, source = np.asarray(annos["class"], dtype=np.int64), f"{base} (cars_annos.mat)"
    else:
        base = _ensure("cars196", root, download, f"place Stanford's car_ims/ and cars_annos.mat in {base}")
        (paths, y), source = _cars_from_kaggle(base), f"{base} (anno_*.csv)"
    return _disk_split("cars196", paths, y, y <= 98, transform, test_transform, source)


def sop(root=DATA_ROOT, transform=None, test_transform=None, download=True, **_) -> Splits:
    """Stanford Online Products (Oh Song et al. 2016) from ``root/Stanford_Online_Products/`` with the standard
    ``Ebay_train.txt`` (11,318 classes) / ``Ebay_test.txt`` (11,316 classes) lists, downloaded first when missing
    and ``download``."""
    base = _ensure("sop", root, download, f"unzip Stanford_Online_Products.zip into {Path(root)}")
    paths, y, train = [], [], []
    for part in ("train", "test"):
        rows = [r.split() for r in (base / f"Ebay_{part}.txt").read_text().splitlines()[1:] if r.strip()]
        paths += [base / r[3] for r in rows]
        y += [int(r[1]) for r in rows]
        train += [part == "train"] * len(rows)
    return _disk_split("sop", paths, np.asarray(y), np.asarray(train), transform, test_transform, f"{base} (Ebay_*.txt)")


def flowers102(root=DATA_ROOT, download=True, transform=None, test_transform=None, **_) -> Splits:
    """Oxford-102 Flowers (Nilsback & Zisserman 2008) in torchvision's layout ``root/flowers-102/{jpg/,
    imagelabels.mat}`` (``download=True`` fetches it through ``torchvision.datasets.Flowers102``); classes 1-51 for
    training, 52-102 for testing. Le & Odobez 2018 (section 6.1) does not state its split; this is the half split that
    CUB and Cars use, and our choice."""
    from scipy.io import loadmat
    from torchvision.datasets import Flowers102

    base = Path(root) / "flowers-102"
    if not (base / "imagelabels.mat").exists() or not (base / "jpg").is_dir():
        _torchvision("flowers102", Flowers102, root, download)
    y = np.asarray(loadmat(base / "imagelabels.mat", squeeze_me=True)["labels"], dtype=np.int64).reshape(-1)
    paths = [base / "jpg" / f"image_{i:05d}.jpg" for i in range(1, len(y) + 1)]
    return _disk_split("flowers102", paths, y, y <= 51, transform, test_transform, f"{base} (imagelabels.mat)")


def _disk_split(name, paths, y, is_train, transform, test_transform, source) -> Splits:
    paths = np.asarray([str(p) for p in paths], dtype=object)
    train = ImageListDataset(list(paths[is_train]), y[is_train], transform)
    test = ImageListDataset(list(paths[~is_train]), y[~is_train], test_transform or transform)
    return Splits(name, "classes", train, test, source)


def image_transforms(size: int = 224, train: bool = True):
    """The usual ImageNet-pretrained pipeline: random resized crop + flip for training, resize + centre crop for
    testing, ImageNet mean/std normalisation."""
    from torchvision import transforms as T

    norm = T.Normalize((0.485, 0.456, 0.406), (0.229, 0.224, 0.225))
    if train:
        return T.Compose([T.RandomResizedCrop(size), T.RandomHorizontalFlip(), T.ToTensor(), norm])
    return T.Compose([T.Resize(int(size * 256 / 224)), T.CenterCrop(size), T.ToTensor(), norm])


def _image_folder_by_top_dir(base: Path, transform, offset=0) -> tuple[ImageListDataset, list]:
    """Label = the top folder (an Omniglot alphabet); ``extras['letters']`` = the sub-folder (its character),
    numbered label * 1000 + the character's index, so that letters of different alphabets never share an id;
    ``extras['drawer']`` = the number after the file name's underscore (Omniglot's ``0101_07.png``: drawer 7), or
    -1. Returns the dataset and the top folders' names."""
    names = sorted(p.name for p in base.iterdir() if p.is_dir())
    paths, labels, letters = [], [], []
    for i, name in enumerate(names):
        subs = sorted(p.name for p in (base / name).iterdir() if p.is_dir())
        for j, sub in enumerate(subs):
            files = sorted((base / name / sub).rglob("*.png"))
            paths += files
            labels += [offset + i] * len(files)
            letters += [(offset + i) * 1000 + j] * len(files)
    drawers = [int(p.stem.rsplit("_", 1)[1]) if "_" in p.stem and p.stem.rsplit("_", 1)[1].isdigit() else -1
               for p in paths]
    extras = {"letters": np.asarray(letters, dtype=np.int64), "drawer": np.asarray(drawers, dtype=np.int64)}
    return ImageListDataset(paths, np.asarray(labels), transform, extras), names
