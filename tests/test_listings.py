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


#: Code lines a reader sees per chapter (cells not behind hide-input, remove-input or remove-cell): at most what
#: the chapters show on 2026-12-05 (issue #87: the machinery in the package, the method's code in view; on
#: 2026-11-25 they showed 210, 182, 633, 235, 468, 372, 432, 211 lines), the rest executed and checked as before but
#: folded behind a "Show code" toggle (set-up, the experiment's calls into the package, tables' formatting).
VISIBLE_LINES = {"01_foundations": 37, "02_loss_zoo": 37, "03_dcdl": 38, "04_cbswr": 34, "05_eps": 25,
                 "06_ecaml": 39, "07_noise_guarantees": 19, "08_bench": 21}
FOLDED = {"hide-input", "remove-input", "remove-cell"}


def visible_lines(path) -> int:
    cells = json.loads(path.read_text())["cells"]
    return sum(len("".join(c["source"]).splitlines()) for c in cells
               if c["cell_type"] == "code" and not FOLDED & set(c["metadata"].get("tags", [])))


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_a_reader_sees_at_most_the_chapters_budget_of_code_lines(path):
    assert visible_lines(path) <= VISIBLE_LINES[path.stem], f"{path.name}: fold plotting or set-up code (hide-input)"


def test_the_line_count_sees_folded_cells(tmp_path):
    cell = {"cell_type": "code", "source": ["a = 1\n", "b = 2"], "metadata": {"tags": []}}
    nb = tmp_path / "n.ipynb"
    nb.write_text(json.dumps({"cells": [cell, {**cell, "metadata": {"tags": ["hide-input"]}},
                                        {"cell_type": "markdown", "source": ["x\ny"], "metadata": {}}]}))
    assert visible_lines(nb) == 2


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
