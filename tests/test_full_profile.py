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
from dry_runs import COLAB_DRY_RUNS, DRY_RUNS, MAX_TRAINED_IMAGES, TRAIN_TEST, stand_in_weights
from helpers import ROOT

from dml_tutorial import chapters, cli, ecaml, plan, profiles
from dml_tutorial import tables as tables_


@pytest.mark.parametrize("chapter", sorted(DRY_RUNS))
def test_full_profile_runs_end_to_end_on_a_fixture(chapter, tmp_path, monkeypatch):
    notebook, make_dataset, offset, dataset, backbone, tiny = DRY_RUNS[chapter]
    (tmp_path / "notebooks").mkdir()
    shutil.copy(ROOT / "notebooks" / f"{notebook}.ipynb", tmp_path / "notebooks")
    seen, unseen = TRAIN_TEST
    make_dataset(tmp_path / "data", seen + [(offset + c, n) for c, n in unseen], np.random.default_rng(0))
    stand_in_weights(tmp_path / "torch", backbone)
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
                               "EC's share of the pull at the embedding layer", tables_.ECAML_CURVES.title}
        assert tables["Tables 4/5: unseen classes with and without EC"]["paper"]["ECAML(Binomial)"]["R@1"] == 84.5
        shares = tables["EC's share of the pull at the embedding layer"]["measured"]  # both EC variants' pulls
        assert {row for row in shares if row.endswith(", released EC")} == {
            ecaml.label(local) + ", released EC" for local in run["settings"]["locals"]}
        assert run["settings"]["amp"] and run["settings"]["channels_last"]
        kept = [p for p in (tmp_path / "runs").rglob("*.pt")]  # the resumable cache, under RUNS
        assert kept and all(p.relative_to(tmp_path / "runs").parts[0].startswith("ecaml-cars196-") for p in kept)
        assert all(torch.load(p, weights_only=False)["settings"]["version"] for p in kept)  # checked when loaded
        assert not [p for p in kept if p.name.endswith(".partial.pt")]  # every run finished: no training in progress



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
    trainings = plan.GRIDS[chapter](cfg, n_train)
    trained = sum(t.images for t in trainings if t.model == backbone)
    assert 0 < trained <= MAX_TRAINED_IMAGES, [(t.section, t.images) for t in trainings]
    assert all(t.shape == (3, 32, 32) for t in trainings if t.model == backbone)
