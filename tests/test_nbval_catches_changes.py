"""nbval really compares: a copy of a chapter with one stored output altered must fail, the unaltered copy pass.

To keep this fast the copy holds the chapter's cells up to its first checked printed output (which already
includes the imports, the profile resolution and a computed table of distances)."""

import copy
import json
import os
import subprocess
import sys

import pytest
from conftest import ROOT

CHAPTER = ROOT / "notebooks" / "01_foundations.ipynb"


def _truncated_copy(nb):
    cells, seen_output = [], False
    for cell in nb["cells"]:
        cells.append(cell)
        tags = cell.get("metadata", {}).get("tags", [])
        if cell["cell_type"] == "code" and "nbval-ignore-output" not in tags and any(
                o["output_type"] == "stream" and "distances between" in "".join(o["text"]) for o in cell["outputs"]):
            seen_output = True
            break
    assert seen_output, "the chapter no longer prints the distance table this test alters"
    return {**nb, "cells": cells}


def _nbval(path):
    # The stored outputs are the CPU smoke profile's; on a GPU machine PROFILE="auto" would pick the full profile.
    env = {**os.environ, "CUDA_VISIBLE_DEVICES": ""}
    return subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-o", "addopts=", "--nbval",
                           "--nbval-current-env", str(path), "-q"], cwd=path.parent, capture_output=True, text=True,
                          check=False, timeout=600, env=env)


@pytest.fixture(scope="module")
def truncated():
    return _truncated_copy(json.loads(CHAPTER.read_text()))


def test_unaltered_copy_passes(tmp_path, truncated):
    path = tmp_path / "same.ipynb"
    path.write_text(json.dumps(truncated))
    result = _nbval(path)
    assert result.returncode == 0, result.stdout[-3000:]


def test_one_altered_output_fails(tmp_path, truncated):
    nb = copy.deepcopy(truncated)
    out = next(o for o in nb["cells"][-1]["outputs"] if o["output_type"] == "stream")
    text = "".join(out["text"])
    altered = text.replace("1.53", "1.54", 1)
    assert altered != text
    out["text"] = altered
    path = tmp_path / "altered.ipynb"
    path.write_text(json.dumps(nb))
    result = _nbval(path)
    assert result.returncode != 0
    assert "1.54" in result.stdout and "1.53" in result.stdout  # the report shows the two versions


@pytest.mark.parametrize("chapter", sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb")), ids=lambda p: p.stem)
def test_checked_outputs_do_not_depend_on_where_the_repository_lives(chapter):
    # a warning that prints a file path (e.g. tqdm.auto's in a kernel without ipywidgets) fails nbval on a fresh clone
    for i, cell in enumerate(json.loads(chapter.read_text())["cells"]):
        if cell["cell_type"] != "code" or "nbval-ignore-output" in cell.get("metadata", {}).get("tags", []):
            continue
        for out in cell["outputs"]:
            text = "".join(out.get("text", "")) + "".join(out.get("data", {}).get("text/plain", ""))
            assert str(ROOT) not in text and "site-packages" not in text, f"cell {i}: {text[:200]}"
