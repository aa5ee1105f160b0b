"""The dry runs' fixtures, shared by tests/test_full_profile.py and tests/test_colab_profile.py (two files, so that
pytest-xdist's ``--dist loadfile`` runs them on both workers): tiny datasets in the paper datasets' layouts, stand-in
"pretrained" weights, and each chapter's tiny SETTINGS."""

import numpy as np
import torch
import torchvision
from PIL import Image
from scipy.io import savemat

from dml_tutorial import models


def image(path, rng):
    path.parent.mkdir(parents=True, exist_ok=True)
    Image.fromarray(rng.integers(0, 255, (40, 56, 3), dtype=np.uint8)).save(path)


def cars196(root, classes_and_counts, rng):
    """Cars196's layout: car_ims/*.jpg and cars_annos.mat (classes 1-98 train, 99-196 test)."""
    base = root / "cars196"
    rows = []
    for c, count in classes_and_counts:
        for _ in range(count):
            name = f"car_ims/{len(rows):06d}.jpg"
            image(base / name, rng)
            rows.append((name, 0, 0, 56, 40, c, 0))
    dtype = [("relative_im_path", "O"), ("bbox_x1", "O"), ("bbox_y1", "O"), ("bbox_x2", "O"), ("bbox_y2", "O"),
             ("class", "O"), ("test", "O")]
    savemat(base / "cars_annos.mat", {"annotations": np.array(rows, dtype=dtype)[None, :]})


def cub200(root, classes_and_counts, rng):
    """CUB-200-2011's layout: images.txt, image_class_labels.txt, images/ (classes 1-100 train, 101-200 test)."""
    base = root / "CUB_200_2011"
    files, labels = [], []
    for c, count in classes_and_counts:
        for _ in range(count):
            rel = f"{c:03d}.bird/img_{len(files) + 1}.jpg"
            image(base / "images" / rel, rng)
            files.append(f"{len(files) + 1} {rel}")
            labels.append(f"{len(labels) + 1} {c}")
    (base / "images.txt").write_text("\n".join(files) + "\n")
    (base / "image_class_labels.txt").write_text("\n".join(labels) + "\n")


def stand_in_weights(torch_home, arch):
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
#: The full profiles decode with 8 loader processes: one keeps the multi-process path (8 cost about 40 s of imports
#: in EPS's dry run on a 2-core host, against 9 s for the colab profile's 2).
FULL_SMALL = {**SMALL, "workers": 1}
#: EPS's sub-cluster toy at one clean and one noisy setting, as the smoke profile runs it (full: three).
SUBCLUSTERS = {"subcluster_noise": [None, ["symmetric", 0.4]]}
DRY_RUNS = {  # chapter: (notebook, dataset maker, unseen class offset, dataset, backbone, tiny SETTINGS)
    "ecaml": ("06_ecaml", cars196, 99, "cars196", "googlenet",
              {"epochs": 2, "batches_per_epoch": 1, "p": 3, "k": 2, "lambdas": [0.1], "dropouts": [0.25],
               "dims": [16, 512], **FULL_SMALL}),
    "noise_guarantees": ("07_noise_guarantees", cub200, 101, "cub200", "resnet34",
                         {"epochs": 1, "batches_per_epoch": 1, "p": 3, "k": 2, "rates": [0.0, 0.4], **FULL_SMALL}),
    "eps": ("05_eps", cars196, 99, "cars196", "resnet50",
            {"epochs": 1, "batches_per_epoch": 1, "p": 3, "k": 2, "positives_per_class": [2],
             "positives_batches": 1, "positives_images": 6, "even_odd_dataset": "digits", "even_odd_epochs": 1, "nmi_plus_factor": 3,
             **SUBCLUSTERS, **FULL_SMALL}),
    "cbswr": ("04_cbswr", cub200, 101, "cub200", "googlenet",
              {"epochs": 1, "batch_size": 4, "k": 2, "ks": [2, 3], **FULL_SMALL}),
}


COLAB_TINY = {"epochs": 1, **SMALL}  # the colab profile's own lists and loader workers, one short epoch
COLAB_DRY_RUNS = {  # chapter: (notebook, backbone, tiny SETTINGS); every colab chapter on images reads CUB
    "ecaml": ("06_ecaml", "googlenet", {**COLAB_TINY, "batches_per_epoch": 1, "p": 3, "k": 2}),
    "noise_guarantees": ("07_noise_guarantees", "resnet34", {**COLAB_TINY, "batches_per_epoch": 1, "p": 3, "k": 2}),
    "eps": ("05_eps", "resnet50", {**COLAB_TINY, "batches_per_epoch": 1, "p": 3, "k": 2, "even_odd_epochs": 1,
                                   "positives_batches": 1, "positives_per_class": [2, 3], "positives_images": 6,
                                   "even_odd_dataset": "digits", "nmi_plus_factor": 3,
                                   **SUBCLUSTERS}),
    "cbswr": ("04_cbswr", "googlenet", {**COLAB_TINY, "batch_size": 4, "k": 2}),
}
