"""Datasets: the offline ones for real, the on-disk layouts on tiny fixture folders made here."""

import functools
import gzip
import hashlib
import http.server
import struct
import threading
from pathlib import Path

import numpy as np
import pytest
import torch
from PIL import Image

from dml_tutorial import data


def test_digits_class_disjoint_split():
    s = data.load_dataset("digits", split="classes", seen=range(6))
    assert set(s.train.labels) == set(range(6)) and set(s.test.labels) == set(range(6, 10))
    assert len(s.train) + len(s.test) == 1797
    x = s.train.batch([0, 1])
    assert x.shape == (2, 1, 8, 8) and 0 <= x.min() and x.max() <= 1
    assert "sklearn" in s.source


def test_digits_sample_split_is_stratified_and_disjoint():
    s = data.load_dataset("digits", split="samples", seed=0)
    assert set(s.train.labels) == set(s.test.labels) == set(range(10))
    flat = lambda d: {tuple(v) for v in d.x.flatten(1).numpy().round(4)}
    assert len(s.train) == 1257 and len(s.test) == 540
    assert len(flat(s.train) & flat(s.test)) < 5  # digits holds a few exact duplicate images


def test_mnist1d_is_generated_offline_and_reproducible():
    a = data.load_dataset("mnist1d", num_samples=600)
    b = data.load_dataset("mnist1d", num_samples=600)
    assert a.train.x.shape[1:] == (1, 40) and torch.equal(a.train.x, b.train.x)
    assert "generated" in a.source


def test_subclusters_have_modes():
    s = data.load_dataset("subclusters", num_classes=3, modes_per_class=4, samples_per_mode=20)
    modes, labels = s.train.extras["modes"], s.train.labels
    assert np.array_equal(modes % 3, labels)
    assert len(np.unique(np.concatenate([modes, s.test.extras["modes"]]))) == 12


def test_with_labels_keeps_the_clean_ones():
    s = data.load_dataset("digits")
    noisy = s.train.with_labels(np.zeros(len(s.train), int))
    assert np.array_equal(noisy.extras["clean"], s.train.labels) and (noisy.labels == 0).all()


def test_unknown_dataset_and_split():
    with pytest.raises(ValueError, match="unknown dataset 'imagenet'"):
        data.load_dataset("imagenet")
    with pytest.raises(ValueError, match="unknown split"):
        data.load_dataset("digits", split="random")


def _png(path, value=0):
    path.parent.mkdir(parents=True, exist_ok=True)
    Image.fromarray(np.full((6, 5, 3), value, np.uint8)).save(path)


def test_cub200_layout(tmp_path):
    base = tmp_path / "CUB_200_2011"
    lines, classes = [], []
    for i, c in enumerate([1, 2, 100, 101, 150, 200], 1):
        rel = f"{c:03d}.bird/img_{i}.jpg"
        _png(base / "images" / rel)
        lines.append(f"{i} {rel}")
        classes.append(f"{i} {c}")
    (base / "images.txt").write_text("\n".join(lines) + "\n")
    (base / "image_class_labels.txt").write_text("\n".join(classes) + "\n")
    s = data.load_dataset("cub200", root=tmp_path)
    assert list(s.train.labels) == [1, 2, 100] and list(s.test.labels) == [101, 150, 200]
    img, label = s.test[0]
    assert img.size == (5, 6) and label == 101


def test_cars196_layout(tmp_path):
    from scipy.io import savemat

    base = tmp_path / "cars196"
    rows = []
    for i, c in enumerate([1, 98, 99, 196]):
        _png(base / "car_ims" / f"{i:06d}.jpg")
        rows.append((f"car_ims/{i:06d}.jpg", 0, 0, 5, 6, c, 0))
    dtype = [("relative_im_path", "O"), ("bbox_x1", "O"), ("bbox_y1", "O"), ("bbox_x2", "O"), ("bbox_y2", "O"),
             ("class", "O"), ("test", "O")]
    savemat(base / "cars_annos.mat", {"annotations": np.array(rows, dtype=dtype)[None, :]})
    s = data.load_dataset("cars196", root=tmp_path)
    assert list(s.train.labels) == [1, 98] and list(s.test.labels) == [99, 196]
    assert s.train[1][1] == 98


def test_image_list_subset_keeps_paths_labels_and_extras(tmp_path):
    paths = [tmp_path / f"{i}.png" for i in range(4)]
    ds = data.ImageListDataset(paths, [5, 6, 7, 8]).with_labels([5, 5, 7, 7])
    sub = ds.subset([True, False, False, True])
    assert sub.paths == [paths[0], paths[3]] and list(sub.labels) == [5, 7]
    assert list(sub.extras["clean"]) == [5, 8] and len(ds) == 4
    with pytest.raises(ValueError, match="mask has 3 entries for 4 images"):
        ds.subset([True, False, True])


def test_sop_layout(tmp_path):
    base = tmp_path / "Stanford_Online_Products"
    header = "image_id class_id super_class_id path\n"
    for part, rows in (("train", [(1, 1, 1), (2, 1, 1), (3, 2, 1)]), ("test", [(4, 11319, 2), (5, 11320, 2)])):
        lines = []
        for img_id, cls, sup in rows:
            rel = f"bicycle_final/{img_id}.JPG"
            _png(base / rel)
            lines.append(f"{img_id} {cls} {sup} {rel}")
        (base / f"Ebay_{part}.txt").write_text(header + "\n".join(lines) + "\n")
    s = data.load_dataset("sop", root=tmp_path)
    assert list(s.train.labels) == [1, 1, 2] and list(s.test.labels) == [11319, 11320]


def test_omniglot_alphabet_labels_from_the_torchvision_layout(tmp_path):
    for folder, alphabets in (("images_background", ["Greek", "Latin"]), ("images_evaluation", ["Tengwar"])):
        for a in alphabets:
            for ch in ("character01", "character02"):
                _png(tmp_path / "omniglot-py" / folder / a / ch / f"{a}_{ch}.png")
    s = data.load_dataset("omniglot", root=tmp_path, download=False)
    assert list(s.train.labels) == [0, 0, 1, 1] and list(s.test.labels) == [2, 2]
    assert s.class_names == ["Greek", "Latin", "Tengwar"]
    assert list(s.train.extras["letters"]) == [0, 1, 1000, 1001] and list(s.test.extras["letters"]) == [2000, 2001]


def _omniglot(tmp_path, drawers=4):
    """Torchvision's layout: 4 background alphabets and 2 evaluation ones, 2 characters each, drawn by each
    drawer (``<character>_<drawer>.png``, as Omniglot names them)."""
    for folder, alphabets in (("images_background", ["Alpha", "Beta", "Gamma", "Delta"]),
                              ("images_evaluation", ["Epsilon", "Zeta"])):
        for a in alphabets:
            for j, ch in enumerate(("character01", "character02")):
                for d in range(1, drawers + 1):
                    _png(tmp_path / "omniglot-py" / folder / a / ch / f"{a[:2]}{j:02d}_{d:02d}.png", value=d)
    return tmp_path


def test_omniglot_has_the_glyph_test_beds_three_splits(tmp_path):
    root = _omniglot(tmp_path)
    classes = data.load_dataset("omniglot", split="classes", root=root, download=False)
    assert set(classes.train.labels) == {0, 1, 2, 3} and set(classes.test.labels) == {4, 5}
    val = data.load_dataset("omniglot", split="validation", root=root, download=False, val_fraction=0.25)
    assert set(val.train.labels) == {0, 1, 2} and set(val.test.labels) == {3}  # inside the background alphabets
    samples = data.load_dataset("omniglot", split="samples", root=root, download=False, test_drawers=1)
    assert set(samples.train.labels) == set(samples.test.labels) == set(range(6))  # every alphabet on both sides
    assert set(samples.train.extras["drawer"]) == {1, 2, 3} and set(samples.test.extras["drawer"]) == {4}
    assert len(samples.train) + len(samples.test) == 6 * 2 * 4
    chars = data.load_dataset("omniglot", split="classes", root=root, download=False, labels="characters")
    assert len(set(chars.train.labels)) == 8 and set(chars.train.extras["alphabet"]) == {0, 1, 2, 3}
    assert np.array_equal(chars.train.labels, classes.train.extras["letters"])
    image, y = chars.test[0]
    assert image.size == (5, 6) and y in set(chars.test.labels)  # a PIL image: no transform given


def test_omniglot_rejects_bad_splits(tmp_path):
    root = _omniglot(tmp_path, drawers=2)
    with pytest.raises(ValueError, match="test_drawers"):
        data.load_dataset("omniglot", split="samples", root=root, download=False, test_drawers=2)
    with pytest.raises(ValueError, match="val_fraction"):
        data.load_dataset("omniglot", split="validation", root=root, download=False, val_fraction=0.01)
    with pytest.raises(ValueError, match="labels"):
        data.load_dataset("omniglot", root=root, download=False, labels="strokes")


def test_flowers102_from_the_torchvision_layout(tmp_path):
    from scipy.io import savemat

    base = tmp_path / "flowers-102"
    labels = np.array([1, 52, 51, 102, 1, 77])
    for i in range(1, len(labels) + 1):
        _png(base / "jpg" / f"image_{i:05d}.jpg", value=i)
    savemat(base / "imagelabels.mat", {"labels": labels[None, :]})  # stored as a 1 x N row, as in the real file
    s = data.load_dataset("flowers102", root=tmp_path, download=False)
    assert list(s.train.labels) == [1, 51, 1] and list(s.test.labels) == [52, 102, 77]
    assert [Path(p).name for p in s.train.paths] == ["image_00001.jpg", "image_00003.jpg", "image_00005.jpg"]


def test_missing_flowers102_without_download(tmp_path):
    with pytest.raises(FileNotFoundError, match="dataset 'flowers102' not found"):
        data.load_dataset("flowers102", root=tmp_path, download=False)


@pytest.mark.parametrize("name,folder", [("cub200", "CUB_200_2011"), ("cars196", "cars196"),
                                         ("sop", "Stanford_Online_Products")])
def test_missing_on_disk_dataset_names_path_and_how(tmp_path, name, folder):
    with pytest.raises(FileNotFoundError, match=f"dataset '{name}' not found under .*{folder}.*") as err:
        data.load_dataset(name, root=tmp_path, download=False)
    assert "download=True" in str(err.value) and data.download.SOURCES[name].url in str(err.value)


def test_missing_torchvision_dataset_without_download(tmp_path):
    with pytest.raises(FileNotFoundError, match="dataset 'mnist' not found"):
        data.load_dataset("mnist", root=tmp_path, download=False)


def test_cifar100_coarse_labels_are_read_from_the_pickle(tmp_path):
    import pickle

    d = tmp_path / "cifar-100-python"
    d.mkdir()
    with open(d / "train", "wb") as fh:
        pickle.dump({"coarse_labels": [3, 19, 0], "fine_labels": [10, 99, 4]}, fh)
    assert list(data.cifar100_coarse_labels(tmp_path, train=True)) == [3, 19, 0]


def test_stl_resize_keeps_range():
    x = torch.randint(0, 256, (2, 3, 96, 96), dtype=torch.uint8)
    y = data.resize_uint8(x, 32)
    assert y.shape == (2, 3, 32, 32) and y.dtype == torch.uint8


# ------------------------------------------------------------------------------------------------ Fashion-MNIST
def _idx_gz(path, magic, shape, values):
    """An IDX file (big-endian header: magic, then each dimension) of uint8 ``values``, gzipped."""
    header = struct.pack(">I", magic) + b"".join(struct.pack(">I", n) for n in shape)
    path.write_bytes(gzip.compress(header + np.asarray(values, dtype=np.uint8).tobytes()))


@pytest.fixture
def fashion_files(tmp_path):
    """A tiny Fashion-MNIST in Debian's layout (four .gz IDX files): 3 training and 2 test images per class, each
    image filled with its index (test images from 100 on) so that the test can trace it; returns the folder and the SHA-256 / md5 of each."""
    local = tmp_path / "debian"
    local.mkdir()
    for prefix, per_class, first in (("train", 3, 0), ("t10k", 2, 100)):
        labels = np.repeat(np.arange(10), per_class)
        images = np.repeat(np.arange(first, first + len(labels), dtype=np.uint8)[:, None, None], 28, 1).repeat(28, 2)
        _idx_gz(local / f"{prefix}-images-idx3-ubyte.gz", 2051, images.shape, images)
        _idx_gz(local / f"{prefix}-labels-idx1-ubyte.gz", 2049, labels.shape, labels)
    sha = {p.name[:-3]: hashlib.sha256(gzip.decompress(p.read_bytes())).hexdigest() for p in local.glob("*.gz")}
    md5 = {p.name: hashlib.md5(p.read_bytes()).hexdigest() for p in local.glob("*.gz")}
    return local, sha, md5


def test_fashion_mnist_from_a_local_copy_with_its_splits(fashion_files, tmp_path, monkeypatch):
    local, sha, _ = fashion_files
    monkeypatch.setattr(data.fashion, "FASHION_MNIST_SHA256", sha)
    root = tmp_path / "data"
    closed = data.load_dataset("fashion_mnist", split="samples", root=root, local=local, download=False)
    assert (len(closed.train), len(closed.test)) == (30, 20) and closed.train.x.shape[1:] == (1, 28, 28)
    assert closed.train.x[7, 0, 0, 0].item() == 7 and "Debian" in closed.source  # image i is filled with i
    disjoint = data.load_dataset("fashion_mnist", root=root, local=local, download=False)
    assert set(disjoint.train.labels) == set(data.FASHION_MNIST_SEEN) and len(disjoint.train) == 15
    assert set(disjoint.test.labels) == {0, 2, 4, 6, 8} and len(disjoint.test) == 10
    assert (disjoint.test.x[:, 0, 0, 0] >= 100).all()  # the unseen classes' official test images only
    val = data.load_dataset("fashion_mnist", split="validation", root=root, local=local, download=False)
    assert set(val.train.labels) == {1, 3, 5} and set(val.test.labels) == {7, 9}  # inside the seen classes
    assert set(val.test.x[:, 0, 0, 0].tolist()) <= set(range(30))  # training images, never a test image
    with pytest.raises(ValueError, match="proper subset"):
        data.load_dataset("fashion_mnist", split="validation", root=root, local=local, val_classes=[0])


def test_fashion_mnist_local_copy_with_a_bad_checksum_is_refused(fashion_files, tmp_path, monkeypatch):
    local, sha, _ = fashion_files
    monkeypatch.setattr(data.fashion, "FASHION_MNIST_SHA256", {**sha, "train-labels-idx1-ubyte": "0" * 64})
    with pytest.raises(ValueError, match="does not match its checksum.*dataset-fashion-mnist"):
        data.load_dataset("fashion_mnist", root=tmp_path / "data", local=local, download=False)
    assert not (tmp_path / "data" / "FashionMNIST" / "raw" / "train-labels-idx1-ubyte").exists()


def test_fashion_mnist_missing_says_how_to_get_it(tmp_path):
    with pytest.raises(FileNotFoundError, match=r"fashion_mnist.*apt-get install dataset-fashion-mnist.*download=True"):
        data.load_dataset("fashion_mnist", root=tmp_path / "data", local=tmp_path / "none", download=False)


def test_fashion_mnist_downloads_through_torchvision_with_its_checksums(fashion_files, tmp_path, monkeypatch):
    # no local copy: torchvision downloads from its mirror (here a server on localhost) and checks each file's md5
    from torchvision.datasets import FashionMNIST

    local, _, md5 = fashion_files
    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(Quiet, directory=str(local)))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        monkeypatch.setattr(FashionMNIST, "mirrors", [f"http://127.0.0.1:{server.server_port}/"])
        monkeypatch.setattr(FashionMNIST, "resources", [(name, md5[name]) for name, _ in FashionMNIST.resources])
        got = data.load_dataset("fashion_mnist", split="samples", root=tmp_path / "data", local=tmp_path / "none")
        assert (len(got.train), len(got.test)) == (30, 20) and got.source == "torchvision.datasets.FashionMNIST"
        bad = [(name, "0" * 32) for name, _ in FashionMNIST.resources]  # a download that fails its checksum
        monkeypatch.setattr(FashionMNIST, "resources", bad)
        with pytest.raises(FileNotFoundError, match="fashion_mnist"):
            data.load_dataset("fashion_mnist", root=tmp_path / "other", local=tmp_path / "none")
    finally:
        server.shutdown()


@pytest.mark.skipif(not data.DEBIAN_FASHION_MNIST.is_dir(), reason="Debian's dataset-fashion-mnist is not installed "
                    "(make setup installs it: apt-get install dataset-fashion-mnist)")
def test_the_installed_fashion_mnist(tmp_path):
    closed = data.load_dataset("fashion_mnist", split="samples", root=tmp_path, download=False)
    assert (len(closed.train), len(closed.test)) == (60000, 10000)
    assert (np.bincount(closed.train.labels) == 6000).all() and (np.bincount(closed.test.labels) == 1000).all()
    disjoint = data.load_dataset("fashion_mnist", root=tmp_path, download=False)
    assert (len(disjoint.train), len(disjoint.test)) == (30000, 5000)


def test_stack_gives_the_same_batch_for_data_in_memory_and_read_one_by_one():
    digits = data.load_dataset("digits", split="samples").train
    idx = np.array([5, 0, 17])

    class OneByOne(torch.utils.data.Dataset):  # a dataset without .batch, as images read from disk are
        def __len__(self):
            return len(digits)

        def __getitem__(self, i):
            return digits.batch([i])[0], digits.labels[i]

    assert torch.equal(data.stack(digits, idx), digits.batch(idx))
    assert torch.equal(data.stack(OneByOne(), idx), digits.batch(idx))


def test_a_chapters_splits_are_a_benchmarks_standard_split_decoded_once_or_a_class_split(tmp_path):
    """data.chapter_splits, the one place the chapters load their data: CUB at the profile's crop, decoded once into
    the data root where the profile says so, its classes 1-100 seen; any other dataset split by class by seed."""
    from dry_runs import cub200

    from dml_tutorial import profiles

    cub200(tmp_path, [(1, 3), (2, 3), (150, 3)], np.random.default_rng(0))
    cfg = profiles.settings("ecaml", "colab").replace(image_size=32, workers=0)
    splits = data.chapter_splits(cfg, tmp_path)
    assert isinstance(splits.train, data.DecodedImages) and splits.train.crop == 32
    assert list(splits.train.labels) == [1] * 3 + [2] * 3 and set(splits.test.labels) == {150}
    assert list((tmp_path / "decoded").glob("*.npy"))  # decoded once, kept for the next run
    jpegs = data.chapter_splits(cfg.replace(decode_once=False), tmp_path)
    assert tuple(jpegs.train[0][0].shape) == (3, 32, 32)  # the papers' transforms, read from disk each time
    smoke = profiles.settings("ecaml", "smoke")
    mine = data.chapter_splits(smoke, seed=3)
    direct = data.load_dataset(smoke.dataset, split="classes", seen=smoke.seen, seed=3, **smoke.dataset_options)
    assert np.array_equal(mine.train.labels, direct.train.labels) and torch.equal(mine.test.x, direct.test.x)
