"""nbval really compares, and only what is machine-independent.

- A copy of a chapter with one stored printed output altered must fail, the unaltered copy pass. To keep this fast
  the copy holds the chapter's cells up to its first checked printed output (the imports, the profile resolution
  and a computed table of distances).
- A copy that trains, run as another machine would (``notebooks/conftest.py``), passes its trained table, which is
  checked against the committed record (``dml_tutorial.reference``); the same copy with a real change (training
  that no longer learns) fails, and the report names the table, the row and both values.

Every run here uses the same emulation of another machine as ``make test``'s nbval run."""

import copy
import json
import os
import re
import shutil
import subprocess
import sys

import numpy as np
import pytest
from helpers import ROOT

CHAPTER = ROOT / "notebooks" / "01_foundations.ipynb"


def _truncated_copy(nb, stop):
    """The cells of ``nb`` up to and including the first code cell for which ``stop(cell)`` holds."""
    for i, cell in enumerate(nb["cells"]):
        if cell["cell_type"] == "code" and stop(cell):
            return {**nb, "cells": nb["cells"][:i + 1]}
    raise AssertionError("the chapter no longer has the cell this test stops at")


def _prints_distances(cell):
    return "nbval-ignore-output" not in cell["metadata"].get("tags", []) and any(
        o["output_type"] == "stream" and "distances between" in "".join(o["text"]) for o in cell["outputs"])


def _nbval(nb, tmp_path, name, env=None, folder=False):
    """pytest with nbval on ``nb`` saved as ``tmp_path / name`` (or on all of ``tmp_path``, with ``folder``), beside
    a copy of notebooks/conftest.py."""
    path = tmp_path / name
    path.write_text(json.dumps(nb))
    shutil.copy(ROOT / "notebooks" / "conftest.py", tmp_path / "conftest.py")  # the other-machine emulation
    return subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-o", "addopts=", "--nbval",
                           "--nbval-current-env", str(tmp_path if folder else path), "-q"], cwd=tmp_path,
                          capture_output=True, text=True, check=False, timeout=600, env={**os.environ, **(env or {})})


@pytest.fixture(scope="module")
def truncated():
    return _truncated_copy(json.loads(CHAPTER.read_text()), _prints_distances)


def test_unaltered_copy_passes(tmp_path, truncated):
    result = _nbval(truncated, tmp_path, "same.ipynb")
    assert result.returncode == 0, result.stdout[-3000:]


def test_one_altered_output_fails(tmp_path, truncated):
    nb = copy.deepcopy(truncated)
    out = next(o for o in nb["cells"][-1]["outputs"] if o["output_type"] == "stream")
    text = "".join(out["text"])
    largest = re.search(r"to (\d\.\d\d)", text).group(1)  # the largest distance printed, e.g. "1.58"
    changed = f"{float(largest) + 0.01:.2f}"
    altered = text.replace(f"to {largest}", f"to {changed}", 1)
    assert altered != text
    out["text"] = altered
    result = _nbval(nb, tmp_path, "altered.ipynb")
    assert result.returncode != 0
    assert changed in result.stdout and largest in result.stdout  # the report shows the two versions


def test_a_real_change_in_a_trained_table_fails(tmp_path):
    nb = _truncated_copy(json.loads(CHAPTER.read_text()), lambda cell: "report.record_for(" in "".join(cell["source"]))
    params = next(c for c in nb["cells"] if "parameters" in c["metadata"].get("tags", []))
    source = "".join(params["source"])
    assert "SETTINGS = None" in source
    # training that cannot learn, for one epoch (with lr = 0 more epochs change nothing but the time)
    params["source"] = source.replace("SETTINGS = None", 'SETTINGS = {"lr": 0.0, "epochs": 1}')
    result = _nbval(nb, tmp_path, "no_learning.ipynb")
    assert result.returncode != 0, result.stdout[-3000:]
    report = result.stdout
    assert "ResultsDrifted" in report and "'Retrieval on the test split', row 'after triplet training'" in report
    record = json.loads((ROOT / "notebooks" / "01_foundations.results.json").read_text())
    committed = record["tables"][0]["measured"]["after triplet training"]["R@1"]
    assert f"committed {100 * np.mean(committed):.1f}" in report


def test_the_kernels_run_as_another_machine_and_the_unit_tests_beside_them_do_not(tmp_path, monkeypatch):
    """The emulation is really on in nbval's kernels: perturbed layer initialisation, other CPU code paths, no GPU,
    the reference check. `make test` runs the unit tests in the same pytest run, on the same workers: a test file
    collected after the notebook sees none of it (notebooks/conftest.py sets it for the kernels' start only)."""
    import nbformat

    emulated = ("ATEN_CPU_CAPABILITY", "MKL_ENABLE_INSTRUCTIONS", "IPYTHONDIR", "DML_TUTORIAL_CHECK")
    (tmp_path / "test_after_the_notebook.py").write_text(
        f"import os\n\ndef test_untouched():\n    assert not [v for v in {emulated!r} if v in os.environ]\n")

    nb = nbformat.v4.new_notebook()
    cell = nbformat.v4.new_code_cell(
        "import os, torch\n"
        "print(torch.nn.Linear.reset_parameters.__qualname__, torch.nn.Conv2d.reset_parameters.__qualname__)\n"
        "print(os.environ['ATEN_CPU_CAPABILITY'], os.environ['MKL_ENABLE_INSTRUCTIONS'], torch.cuda.is_available(),\n"
        "      os.environ['DML_TUTORIAL_CHECK'])")
    cell.execution_count = 1
    cell.outputs = [nbformat.v4.new_output(
        "stream", name="stdout",
        text="_perturbed.<locals>.reset_parameters _perturbed.<locals>.reset_parameters\navx2 AVX2 False 1\n")]
    nb.cells = [cell]
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    for name in (*emulated, "DML_TUTORIAL_SAME_MACHINE"):  # as a test worker has it, whatever the shell set
        monkeypatch.delenv(name, raising=False)
    result = _nbval(json.loads(nbformat.writes(nb)), tmp_path, "machine.ipynb", folder=True)
    assert result.returncode == 0, result.stdout[-3000:]
    assert "2 passed" in result.stdout  # the notebook's one cell, then the test file


@pytest.mark.parametrize("chapter", sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb")), ids=lambda p: p.stem)
def test_checked_outputs_do_not_depend_on_where_the_repository_lives(chapter):
    # a warning that prints a file path (e.g. tqdm.auto's in a kernel without ipywidgets) fails nbval on a fresh clone
    for i, cell in enumerate(json.loads(chapter.read_text())["cells"]):
        if cell["cell_type"] != "code" or "nbval-ignore-output" in cell.get("metadata", {}).get("tags", []):
            continue
        for out in cell["outputs"]:
            text = "".join(out.get("text", "")) + "".join(out.get("data", {}).get("text/plain", ""))
            assert str(ROOT) not in text and "site-packages" not in text, f"cell {i}: {text[:200]}"
