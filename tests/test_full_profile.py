"""Dry runs of the chapters' full profiles on CPU: the paper-scale code path (on-disk dataset, ImageNet-pretrained
backbone, bf16 autocast, channels_last, every table and figure) executed through ``dml-tutorial run`` on a tiny
fixture dataset in the standard layout, with stand-in "pretrained" weights (randomly initialised, saved where
torchvision looks for the real ones, since they cannot be downloaded here) and SETTINGS that shrink the batches.
It checks that the full profile runs, not what it measures, and stays a dry run: every setting that sizes a grid is
shrunk and images are 32 px crops (``image_size``; the code path is the same at 224), so that the plan counts at
most :data:`MAX_TRAINED_IMAGES` inputs through the backbone (checked without training, below; the notebook's last
cell checks that it ran what the plan counts). (DCDL's CIFAR and the foundations' MNIST come through
torchvision, which checks its files' checksums, so they have no fixture; their full profiles are not dry-run.)
The first dry runs found three bugs that only the full profiles reach: the clean-data topline and the skew cell of
the noise chapter assumed in-memory data, and CBSwR's reconstruction figure could not show colour images."""

import json
import shutil

import nbformat
import numpy as np
import pytest
import torch
import torchvision
from conftest import ROOT
from PIL import Image
from scipy.io import savemat

from dml_tutorial import chapters, cli, models, plan, profiles


def _image(path, rng):
    path.parent.mkdir(parents=True, exist_ok=True)
    Image.fromarray(rng.integers(0, 255, (40, 56, 3), dtype=np.uint8)).save(path)


def _cars196(root, classes_and_counts, rng):
    """Cars196's layout: car_ims/*.jpg and cars_annos.mat (classes 1-98 train, 99-196 test)."""
    base = root / "cars196"
    rows = []
    for c, count in classes_and_counts:
        for _ in range(count):
            name = f"car_ims/{len(rows):06d}.jpg"
            _image(base / name, rng)
            rows.append((name, 0, 0, 56, 40, c, 0))
    dtype = [("relative_im_path", "O"), ("bbox_x1", "O"), ("bbox_y1", "O"), ("bbox_x2", "O"), ("bbox_y2", "O"),
             ("class", "O"), ("test", "O")]
    savemat(base / "cars_annos.mat", {"annotations": np.array(rows, dtype=dtype)[None, :]})


def _cub200(root, classes_and_counts, rng):
    """CUB-200-2011's layout: images.txt, image_class_labels.txt, images/ (classes 1-100 train, 101-200 test)."""
    base = root / "CUB_200_2011"
    files, labels = [], []
    for c, count in classes_and_counts:
        for _ in range(count):
            rel = f"{c:03d}.bird/img_{len(files) + 1}.jpg"
            _image(base / "images" / rel, rng)
            files.append(f"{len(files) + 1} {rel}")
            labels.append(f"{len(labels) + 1} {c}")
    (base / "images.txt").write_text("\n".join(files) + "\n")
    (base / "image_class_labels.txt").write_text("\n".join(labels) + "\n")


def _stand_in_weights(torch_home, arch):
    """A randomly initialised ``arch`` saved under the file name of torchvision's ImageNet weights for it."""
    fn, weights = models.BACKBONES[arch]
    url = getattr(torchvision.models, weights).DEFAULT.url
    target = torch_home / "hub" / "checkpoints" / url.rsplit("/", 1)[-1]
    target.parent.mkdir(parents=True, exist_ok=True)
    torch.manual_seed(0)
    kwargs = {"aux_logits": True, "init_weights": True} if arch == "googlenet" else {}
    torch.save(getattr(torchvision.models, fn)(weights=None, **kwargs).state_dict(), target)


TRAIN_TEST = [(1, 6), (2, 6), (3, 6)], [(0, 10), (1, 10)]  # (class, images) seen; unseen = offset + these
#: The most inputs a dry run may train its backbone on, summed over every training of the chapter (the plan's
#: count). The EPS colab dry run once trained 2 x 50 batches of ResNet-50 at 224 px: 24 minutes on a 2-core AMD host.
MAX_TRAINED_IMAGES = 500
SMALL = {"image_size": 32, "threads": 1}  # one thread: the other pytest worker runs beside it
DRY_RUNS = {  # chapter: (notebook, dataset maker, unseen class offset, dataset, backbone, tiny SETTINGS)
    "ecaml": ("06_ecaml", _cars196, 99, "cars196", "googlenet",
              {"epochs": 2, "batches_per_epoch": 1, "p": 3, "k": 2, "lambdas": [0.1], "dropouts": [0.25],
               "dims": [16, 512], **SMALL}),
    "noise_guarantees": ("07_noise_guarantees", _cub200, 101, "cub200", "resnet34",
                         {"epochs": 1, "batches_per_epoch": 1, "p": 3, "k": 2, "rates": [0.0, 0.4], **SMALL}),
    "eps": ("05_eps", _cars196, 99, "cars196", "resnet50",
            {"epochs": 1, "batches_per_epoch": 1, "p": 3, "k": 2, "positives_per_class": [2],
             "positives_batches": 1, "positives_images": 6, "even_odd_dataset": "digits", "even_odd_epochs": 1, "nmi_plus_factor": 3,
             **SMALL}),
    "cbswr": ("04_cbswr", _cub200, 101, "cub200", "googlenet",
              {"epochs": 1, "batch_size": 4, "k": 2, "ks": [2, 3], **SMALL}),
}


@pytest.mark.parametrize("chapter", sorted(DRY_RUNS))
def test_full_profile_runs_end_to_end_on_a_fixture(chapter, tmp_path, monkeypatch):
    notebook, make_dataset, offset, dataset, backbone, tiny = DRY_RUNS[chapter]
    (tmp_path / "notebooks").mkdir()
    shutil.copy(ROOT / "notebooks" / f"{notebook}.ipynb", tmp_path / "notebooks")
    seen, unseen = TRAIN_TEST
    make_dataset(tmp_path / "data", seen + [(offset + c, n) for c, n in unseen], np.random.default_rng(0))
    _stand_in_weights(tmp_path / "torch", backbone)
    monkeypatch.setenv("TORCH_HOME", str(tmp_path / "torch"))
    monkeypatch.setenv(chapters.FOLDER_ENV, str(tmp_path / "notebooks"))
    out = tmp_path / "out"
    code = cli.main(["run", chapter, "--profile", "full", "-p", "DATASET", dataset, "-p", "DEVICE", "cpu",
                     "-p", "SETTINGS", repr(tiny), "-p", "RUNS", str(tmp_path / "runs"), "--output", str(out)])
    assert code == 0
    run = json.loads((out / f"{notebook}.results.json").read_text())
    assert run["profile"] == "full" and run["settings"]["model"] == backbone and run["settings"]["dataset"] == dataset
    assert run["tables"], "the full profile records its tables"
    for table in run["tables"]:
        values = [v for cols in table["measured"].values() for vs in cols.values() for v in vs]
        if "share of the pull" in table["table"]:  # nan: neither term pulls (objective.pull_share), as a
            values = [v for v in values if not np.isnan(v)]  # 1-batch epoch of random images may leave it
        assert all(np.isfinite(values)), table["table"]
    executed = nbformat.read(out / f"{notebook}.ipynb", as_version=4)
    printed = "".join(o.get("text", "") for c in executed.cells if c.cell_type == "code" for o in c.outputs)
    assert "full" in printed and dataset in printed
    if chapter == "ecaml":  # the chapter of issue #8, checked in detail
        tables = {t["table"]: t for t in run["tables"]}
        assert set(tables) == {"Tables 4/5: unseen classes with and without EC", "Table 1: the weight lambda",
                               "Table 3: EC against dropout", "Table 2: embedding size",
                               "EC's share of the pull at the embedding layer"}
        assert tables["Tables 4/5: unseen classes with and without EC"]["paper"]["ECAML(Binomial)"]["R@1"] == 84.5
        assert run["settings"]["amp"] and run["settings"]["channels_last"]
        kept = [p for p in (tmp_path / "runs").rglob("*.pt")]  # the resumable cache, under RUNS
        assert kept and all(p.relative_to(tmp_path / "runs").parts[0].startswith("ecaml-cars196-") for p in kept)
        assert all(torch.load(p, weights_only=False)["settings"]["version"] for p in kept)  # checked when loaded
        assert not [p for p in kept if p.name.endswith(".partial.pt")]  # every run finished: no training in progress



COLAB_TINY = {"epochs": 1, **SMALL}  # the colab profile's own lists and loader workers, one short epoch
COLAB_DRY_RUNS = {  # chapter: (notebook, backbone, tiny SETTINGS); every colab chapter on images reads CUB
    "ecaml": ("06_ecaml", "googlenet", {**COLAB_TINY, "batches_per_epoch": 1, "p": 3, "k": 2}),
    "noise_guarantees": ("07_noise_guarantees", "resnet34", {**COLAB_TINY, "batches_per_epoch": 1, "p": 3, "k": 2}),
    "eps": ("05_eps", "resnet50", {**COLAB_TINY, "batches_per_epoch": 1, "p": 3, "k": 2, "even_odd_epochs": 1,
                                   "positives_batches": 1, "positives_per_class": [2, 3], "positives_images": 6,
                                   "even_odd_dataset": "digits", "nmi_plus_factor": 3}),
    "cbswr": ("04_cbswr", "googlenet", {**COLAB_TINY, "batch_size": 4, "k": 2}),
}


@pytest.mark.parametrize("chapter", sorted(COLAB_DRY_RUNS))
def test_colab_profile_runs_end_to_end_and_its_plan_counts_its_trainings(chapter, tmp_path, monkeypatch):
    """The colab profile's code path (CUB, pretrained backbone, two loader workers, the profile's short lists, the
    plan's check in the last cell) on the CUB fixture, through ``dml-tutorial run``."""
    notebook, backbone, tiny = COLAB_DRY_RUNS[chapter]
    (tmp_path / "notebooks").mkdir()
    shutil.copy(ROOT / "notebooks" / f"{notebook}.ipynb", tmp_path / "notebooks")
    seen, unseen = TRAIN_TEST
    _cub200(tmp_path / "data", seen + [(101 + c, n) for c, n in unseen], np.random.default_rng(0))
    _stand_in_weights(tmp_path / "torch", backbone)
    monkeypatch.setenv("TORCH_HOME", str(tmp_path / "torch"))
    monkeypatch.setenv(chapters.FOLDER_ENV, str(tmp_path / "notebooks"))
    out = tmp_path / "out"
    code = cli.main(["run", chapter, "--profile", "colab", "-p", "DEVICE", "cpu", "-p", "SETTINGS", repr(tiny),
                     "-p", "RUNS", str(tmp_path / "runs"), "--output", str(out)])
    assert code == 0
    run = json.loads((out / f"{notebook}.results.json").read_text())
    assert run["profile"] == "colab" and run["settings"]["dataset"] == "cub200"
    assert run["settings"]["workers"] == 2 and run["tables"]
    executed = nbformat.read(out / f"{notebook}.ipynb", as_version=4)
    printed = "".join(o.get("text", "") for c in executed.cells if c.cell_type == "code" for o in c.outputs)
    assert f"Plan of the {chapter} chapter, colab profile" in printed and "cub200 (data.caltech.edu)" in printed
    assert "trainings as planned (0 loaded from the cache)" in printed
    n_images = plan.TRAIN_IMAGES["cub200"] + plan.TEST_IMAGES["cub200"]  # the plan counts CUB's sizes, decoded once
    assert f"Reading images: {n_images:,} JPEG decodes (both splits once) at" in printed
    assert "timed on its files" in printed and "decoded once at 36 px" in printed  # 32-px crops of 36-px images


@pytest.mark.parametrize("profile, chapter", [("full", c) for c in sorted(DRY_RUNS)]
                         + [("colab", c) for c in sorted(COLAB_DRY_RUNS)])
def test_every_dry_run_is_dry(profile, chapter):
    """Each dry run's grids, as the plan counts them for the fixture's training images, train the chapter's
    backbone on at most MAX_TRAINED_IMAGES inputs of the small image size (a check of the settings, not a timer: a
    grid that a new setting leaves at the profile's size fails here before it costs minutes)."""
    if profile == "full":
        _, _, _, dataset, backbone, tiny = DRY_RUNS[chapter]
        cfg = profiles.settings(chapter, "full", tiny, dataset=dataset)
    else:
        _, backbone, tiny = COLAB_DRY_RUNS[chapter]
        cfg = profiles.settings(chapter, "colab", tiny)
    assert cfg["model"] == backbone
    n_train = sum(n for _, n in TRAIN_TEST[0])
    trainings = plan.COUNTS[chapter](cfg, n_train)
    trained = sum(t.images for t in trainings if t.model == backbone)
    assert 0 < trained <= MAX_TRAINED_IMAGES, [(t.section, t.images) for t in trainings]
    assert all(t.shape == (3, 32, 32) for t in trainings if t.model == backbone)
