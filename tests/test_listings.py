"""Code as the reader sees it: every notebook code line, and every package function a page shows with
``inspect.getsource``, fits the text column (88 characters) so no page needs horizontal scrolling; and the
notebooks' code passes pyflakes' checks (ruff's F rules: undefined names, unused imports, shadowed imports)."""

import ast
import importlib
import inspect
import json
import re

import pytest
from helpers import ROOT

COLUMN = 88
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))
SHOWN = re.compile(r"(?:source|getsource)\(((?:[a-z_]+\.)+[a-z_]+)\)")  # source(losses.triplet_loss)


def code_cells(path):
    return ["".join(c["source"]) for c in json.loads(path.read_text())["cells"] if c["cell_type"] == "code"]


def too_long(text):
    return [line for line in text.split("\n") if len(line) > COLUMN]


def shown_functions():
    """(notebook, 'module.function') for every package function a notebook prints as code."""
    for path in NOTEBOOKS:
        for source in code_cells(path):
            for name in SHOWN.findall(source):
                yield path.name, name


#: Issue #87: the notebooks' code, all chapters together, at most this many non-blank lines (4,343 on 2026-12-04: the
#: experiment's machinery moves into the package, each section's table one call), most of it visible.
CODE_LINES = 1500
#: The share of those lines a reader sees (not behind hide-input, remove-input or remove-cell): more than half, #87's
#: "most of it visible" (0.16 on 2026-12-05, 0.36 and then 0.52 on 2026-12-06: each figure's selection of runs in
#: dml_tutorial.figures, one call a cell). The reading-time budget (tests/test_reading_time.py) keeps what is shown
#: short.
VISIBLE_SHARE = 1 / 2
FOLDED = {"hide-input", "remove-input", "remove-cell"}


def code_lines(path) -> tuple[int, int]:
    """(non-blank code lines, of them visible) of a notebook."""
    total = visible = 0
    for c in json.loads(path.read_text())["cells"]:
        if c["cell_type"] == "code":
            n = sum(1 for line in "".join(c["source"]).splitlines() if line.strip())
            total += n
            visible += 0 if FOLDED & set(c["metadata"].get("tags", [])) else n
    return total, visible


def test_the_notebooks_code_is_short_and_most_of_it_in_view():
    counts = {path.stem: code_lines(path) for path in NOTEBOOKS}
    total, visible = (sum(c[i] for c in counts.values()) for i in (0, 1))
    assert total <= CODE_LINES, f"{total} lines of notebook code: move machinery into the package ({counts})"
    assert visible > VISIBLE_SHARE * total, f"{visible} of {total} lines in view ({counts})"


def test_the_line_count_sees_folded_cells(tmp_path):
    cell = {"cell_type": "code", "source": ["a = 1\n", "\n", "b = 2"], "metadata": {"tags": []}}
    nb = tmp_path / "n.ipynb"
    nb.write_text(json.dumps({"cells": [cell, {**cell, "metadata": {"tags": ["hide-input"]}},
                                        {**cell, "metadata": {"tags": ["remove-cell"]}},
                                        {"cell_type": "markdown", "source": ["x\ny"], "metadata": {}}]}))
    assert code_lines(nb) == (6, 2)  # blank lines and markdown not counted; folded cells counted, not in view


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_notebook_code_fits_the_column(path):
    long = [line for source in code_cells(path) for line in too_long(source)]
    assert not long, f"{len(long)} code lines over {COLUMN} characters in {path.name}, e.g. {long[0]!r}"


def test_the_listing_finder_sees_the_loss_zoo_and_a_chapters_form():
    shown = {name for _, name in shown_functions()}
    assert {"losses.triplet_loss", "losses.multi_similarity_loss", "losses.binomial_deviance_loss"} <= shown
    # the chapters show their method from scratch instead; a package listing there would read the same way
    assert SHOWN.findall('Code(inspect.getsource(dcdl.dcdl_loss), language="python")') == ["dcdl.dcdl_loss"]


@pytest.mark.parametrize("notebook, name", sorted(set(shown_functions())))
def test_functions_shown_on_a_page_fit_the_column(notebook, name):
    module, function = name.rsplit(".", 1)
    fn = getattr(importlib.import_module(f"dml_tutorial.{module}"), function)
    long = too_long(inspect.getsource(fn))
    assert not long, f"{name} (shown in {notebook}) has lines over {COLUMN} characters: {long[0]!r}"


def test_the_check_catches_a_long_line():
    long_line = "x = " + " + ".join(["1"] * 40)
    ast.parse(long_line)  # valid code, merely too wide
    assert too_long(f"print(1)\n{long_line}") == [long_line]


def test_notebook_code_has_no_undefined_names_unused_imports_or_syntax_errors():
    import subprocess
    import sys

    command = [sys.executable, "-m", "ruff", "check", "--select", "F,E9", "--output-format", "concise", "notebooks"]
    run = subprocess.run(command, check=False, cwd=ROOT, capture_output=True, text=True)
    assert run.returncode == 0, run.stdout + run.stderr
