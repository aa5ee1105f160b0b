"""A dry run of a chapter's full profile on CPU: the paper-scale code path (on-disk dataset, ImageNet-pretrained
backbone, bf16 autocast, channels_last, every table and figure) executed through ``dml-tutorial run`` on a tiny
fixture dataset in the standard layout, with stand-in "pretrained" weights (randomly initialised, saved where
torchvision looks for the real ones, since they cannot be downloaded here) and SETTINGS that shrink the batches.
It checks that the full profile runs, not what it measures."""

import json
import shutil

import nbformat
import numpy as np
import torch
import torchvision
from conftest import ROOT
from PIL import Image
from scipy.io import savemat

from dml_tutorial import cli


def _cars196(root, classes_and_counts, seed=0):
    rng = np.random.default_rng(seed)
    base = root / "cars196"
    (base / "car_ims").mkdir(parents=True)
    rows = []
    for c, count in classes_and_counts:
        for _ in range(count):
            name = f"car_ims/{len(rows):06d}.jpg"
            Image.fromarray(rng.integers(0, 255, (40, 56, 3), dtype=np.uint8)).save(base / name)
            rows.append((name, 0, 0, 56, 40, c, 0))
    dtype = [("relative_im_path", "O"), ("bbox_x1", "O"), ("bbox_y1", "O"), ("bbox_x2", "O"), ("bbox_y2", "O"),
             ("class", "O"), ("test", "O")]
    savemat(base / "cars_annos.mat", {"annotations": np.array(rows, dtype=dtype)[None, :]})


def _stand_in_googlenet_weights(torch_home):
    """A randomly initialised GoogLeNet saved under the file name of torchvision's ImageNet weights."""
    url = torchvision.models.GoogLeNet_Weights.DEFAULT.url
    target = torch_home / "hub" / "checkpoints" / url.rsplit("/", 1)[-1]
    target.parent.mkdir(parents=True)
    torch.manual_seed(0)
    torch.save(torchvision.models.googlenet(weights=None, aux_logits=True, init_weights=True).state_dict(), target)


def test_ecaml_full_profile_runs_end_to_end_on_a_fixture(tmp_path, monkeypatch):
    (tmp_path / "notebooks").mkdir()
    shutil.copy(ROOT / "notebooks" / "06_ecaml.ipynb", tmp_path / "notebooks")
    _cars196(tmp_path / "data", [(1, 6), (2, 6), (3, 6), (99, 10), (150, 10)])
    _stand_in_googlenet_weights(tmp_path / "torch")
    monkeypatch.setenv("TORCH_HOME", str(tmp_path / "torch"))
    monkeypatch.setenv(cli.FOLDER_ENV, str(tmp_path / "notebooks"))
    tiny = {"epochs": 2, "batches_per_epoch": 1, "p": 3, "k": 2, "lambdas": [0.1], "dropouts": [0.25],
            "dims": [16, 512], "threads": 2}
    out = tmp_path / "out"
    code = cli.main(["run", "ecaml", "--profile", "full", "-p", "DATASET", "cars196", "-p", "DEVICE", "cpu",
                     "-p", "SETTINGS", repr(tiny), "-p", "CACHE", str(tmp_path / "cache"), "--output", str(out)])
    assert code == 0
    run = json.loads((out / "06_ecaml.results.json").read_text())
    assert run["profile"] == "full" and run["settings"]["model"] == "googlenet" and run["settings"]["amp"]
    tables = {t["table"]: t for t in run["tables"]}
    assert set(tables) == {"Tables 4/5: unseen classes with and without EC", "Table 1: the weight lambda",
                           "Table 3: EC against dropout", "Table 2: embedding size"}
    table4 = tables["Tables 4/5: unseen classes with and without EC"]
    assert table4["paper"]["ECAML(Binomial)"]["R@1"] == [84.5]  # CARS, the dataset asked for
    assert all(0 <= v <= 1 for cols in table4["measured"].values() for vs in cols.values() for v in vs)
    executed = nbformat.read(out / "06_ecaml.ipynb", as_version=4)
    assert "profile: full" in "".join(o.get("text", "") for c in executed.cells if c.cell_type == "code"
                                      for o in c.outputs)
    assert any(p.suffix == ".pt" for p in (tmp_path / "cache").rglob("*"))  # the full profile's resumable cache
