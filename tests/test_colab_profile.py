"""Dry runs of the chapters' colab profiles on CPU (the CUB fixture, the pretrained backbones' stand-in weights, two
loader workers, the plan's check in the last cell), beside tests/test_full_profile.py: a file of their own, so that
pytest-xdist runs the two sets on both workers."""

import json
import shutil

import nbformat
import numpy as np
import pytest
from dry_runs import COLAB_DRY_RUNS, TRAIN_TEST, cub200, stand_in_weights
from helpers import ROOT

from dml_tutorial import chapters, cli, plan


@pytest.mark.parametrize("chapter", sorted(COLAB_DRY_RUNS))
def test_colab_profile_runs_end_to_end_and_its_plan_counts_its_trainings(chapter, tmp_path, monkeypatch):
    """The colab profile's code path (CUB, pretrained backbone, two loader workers, the profile's short lists, the
    plan's check in the last cell) on the CUB fixture, through ``dml-tutorial run``."""
    notebook, backbone, tiny = COLAB_DRY_RUNS[chapter]
    (tmp_path / "notebooks").mkdir()
    shutil.copy(ROOT / "notebooks" / f"{notebook}.ipynb", tmp_path / "notebooks")
    seen, unseen = TRAIN_TEST
    cub200(tmp_path / "data", seen + [(101 + c, n) for c, n in unseen], np.random.default_rng(0))
    stand_in_weights(tmp_path / "torch", backbone)
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


