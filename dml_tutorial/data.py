"""Datasets and splits: one entry point, :func:`load_dataset`.

Offline (used by the smoke profile, nothing to download): ``digits`` (scikit-learn's bundled 8x8 handwritten
digits, real data), ``mnist1d`` (generated locally by the mnist1d package's ``make_dataset``), ``subclusters``
(synthetic classes made of several well-separated Gaussian modes, for class collapse).

Real data on every machine: ``fashion_mnist``, from Debian's package ``dataset-fashion-mnist`` when installed
(``make setup`` installs it), else downloaded by torchvision; with a class-disjoint split and a validation split
inside the seen classes.

Paper scale (used by the full profile): ``mnist``, ``cifar10``, ``cifar100`` (its 20 coarse superclasses, as in the
DCDL paper), ``stl10`` (resized to 32x32, DCDL paper), ``omniglot`` (alphabet labels, EPS paper) and
``flowers102`` (Oxford-102 Flowers, noise-guarantees paper) through torchvision, which downloads them with
checksums; ``cub200``, ``cars196`` and ``sop`` from their standard on-disk
layouts with the standard class-disjoint splits (first half of the classes for training, second half for testing;
SOP's Ebay_train.txt / Ebay_test.txt).

Two kinds of split: ``"classes"`` (zero-shot retrieval: seen classes for training, unseen for testing) and
``"samples"`` (the same classes in train and test). Labels keep their original ids.
"""

from __future__ import annotations

import pickle
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np
import torch

from ._checks import check_choice

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

    def batch(self, idx) -> torch.Tensor:
        x = self.x[torch.as_tensor(idx, dtype=torch.long, device=self.x.device)]
        return x.float().div_(255.0) if x.dtype == torch.uint8 else x

    def to(self, device) -> ArrayDataset:
        """The same samples held on ``device``: uint8 images stay uint8 there (CIFAR-10's 50,000 training images
        take 154 MB), so on a GPU every batch is indexed, scaled and augmented in GPU memory, with no DataLoader."""
        return replace(self, x=self.x.to(device))

    def __getitem__(self, i):
        return self.batch([i])[0], int(self.labels[i])

    def subset(self, mask) -> ArrayDataset:
        mask = np.asarray(mask)
        return ArrayDataset(self.x[torch.as_tensor(mask)], self.labels[mask], {k: v[mask] for k, v in self.extras.items()})

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


def input_shape(dataset) -> tuple:
    """The shape of one model input: an in-memory dataset's sample shape, or (3, 224, 224) for images read from
    disk (the pretrained backbones' input after :func:`image_transforms`)."""
    return tuple(dataset.x.shape[1:]) if hasattr(dataset, "x") else (3, 224, 224)


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


# ----------------------------------------------------------------------------------------------- offline data
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


# ------------------------------------------------------------------------------------ torchvision datasets
def _missing(name, path, how) -> FileNotFoundError:
    return FileNotFoundError(f"dataset {name!r} not found under {path}; {how}")


def _torchvision(name, cls, root, download, **kw):
    try:
        return cls(root=str(root), download=download, **kw)
    except RuntimeError as err:  # torchvision: "Dataset not found or corrupted"
        raise _missing(name, root, "pass download=True with internet access, or copy the torchvision files "
                       f"there ({err})") from err


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


def _image_folder_by_top_dir(base: Path, transform, offset=0) -> ImageListDataset:
    """Label = the top folder (an Omniglot alphabet); ``extras['letters']`` = the sub-folder (its character),
    numbered label * 1000 + the character's index, so that letters of different alphabets never share an id."""
    names = sorted(p.name for p in base.iterdir() if p.is_dir())
    paths, labels, letters = [], [], []
    for i, name in enumerate(names):
        subs = sorted(p.name for p in (base / name).iterdir() if p.is_dir())
        for j, sub in enumerate(subs):
            files = sorted((base / name / sub).rglob("*.png"))
            paths += files
            labels += [offset + i] * len(files)
            letters += [(offset + i) * 1000 + j] * len(files)
    return ImageListDataset(paths, np.asarray(labels), transform, {"names": names, "letters": np.asarray(letters)})


# ------------------------------------------------------------------------------ on-disk retrieval datasets
def cub200(root=DATA_ROOT, transform=None, test_transform=None, **_) -> Splits:
    """CUB-200-2011 from its standard layout ``root/CUB_200_2011/{images.txt, image_class_labels.txt, images/}``;
    classes 1-100 for training, 101-200 for testing (the zero-shot split of Oh Song et al. 2016)."""
    base = Path(root) / "CUB_200_2011"
    need = [base / "images.txt", base / "image_class_labels.txt", base / "images"]
    if not all(p.exists() for p in need):
        raise _missing("cub200", base, "download CUB_200_2011.tgz from https://www.vision.caltech.edu/datasets/"
                       f"cub_200_2011/ and unpack it into {Path(root)}")
    files = dict(line.split(maxsplit=1) for line in (base / "images.txt").read_text().splitlines() if line.strip())
    labels = dict(line.split() for line in (base / "image_class_labels.txt").read_text().splitlines() if line.strip())
    ids = sorted(files, key=int)
    paths = [base / "images" / files[i].strip() for i in ids]
    y = np.asarray([int(labels[i]) for i in ids])
    return _disk_split("cub200", paths, y, y <= 100, transform, test_transform, f"{base} (images.txt)")


def cars196(root=DATA_ROOT, transform=None, test_transform=None, **_) -> Splits:
    """Cars196 (Krause et al. 2013) from ``root/cars196/{cars_annos.mat, car_ims/}``; classes 1-98 for training,
    99-196 for testing."""
    from scipy.io import loadmat

    base = Path(root) / "cars196"
    if not (base / "cars_annos.mat").exists():
        raise _missing("cars196", base, "get car_ims.tgz and cars_annos.mat of the Stanford Cars dataset (e.g. "
                       f"from its Kaggle or Hugging Face mirrors) and place them, unpacked, in {base}")
    annos = loadmat(base / "cars_annos.mat", squeeze_me=True)["annotations"]
    paths = [base / str(a) for a in annos["relative_im_path"]]
    y = np.asarray(annos["class"], dtype=np.int64)
    return _disk_split("cars196", paths, y, y <= 98, transform, test_transform, f"{base} (cars_annos.mat)")


def sop(root=DATA_ROOT, transform=None, test_transform=None, **_) -> Splits:
    """Stanford Online Products (Oh Song et al. 2016) from ``root/Stanford_Online_Products/`` with the standard
    ``Ebay_train.txt`` (11,318 classes) / ``Ebay_test.txt`` (11,316 classes) lists."""
    base = Path(root) / "Stanford_Online_Products"
    if not (base / "Ebay_train.txt").exists():
        raise _missing("sop", base, "download Stanford_Online_Products.zip from https://cvgl.stanford.edu/"
                       f"projects/lifted_struct/ and unzip it into {Path(root)}")
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
    training, 52-102 for testing. Paper 004 (section 6.1) does not state its split; this is the half split that
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


CIFAR10_CLASSES = ["airplane", "automobile", "bird", "cat", "deer", "dog", "frog", "horse", "ship", "truck"]
STL10_CLASSES = ["airplane", "bird", "car", "cat", "deer", "dog", "horse", "monkey", "ship", "truck"]

DATASETS = {
    "digits": digits, "mnist1d": mnist1d, "subclusters": subclusters, "mnist": mnist, "cifar10": cifar10,
    "cifar100": cifar100, "stl10": stl10, "omniglot": omniglot, "cub200": cub200, "cars196": cars196, "sop": sop,
    "flowers102": flowers102, "fashion_mnist": fashion_mnist,
}


def load_dataset(name: str, **kwargs) -> Splits:
    """Load a dataset by name (see the module docstring); keyword arguments go to its loader (``split``,
    ``seen``, ``seed``, ``root``, ``download``, ``transform``, ...)."""
    check_choice(name, tuple(DATASETS), "dataset")
    return DATASETS[name](**kwargs)
