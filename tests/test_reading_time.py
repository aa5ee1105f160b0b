"""Reading time as the reader's issue (#51) counts it, folds closed (tests/reading.py): its rules on hand-made
cells, and the budget every paper chapter keeps: at most 25 minutes (#87; 30 under #51), with its evidence
unfolded."""

import json

import pytest
from helpers import ROOT
from reading import measure, unfolded

PAPERS = ["03_dcdl", "04_cbswr", "05_eps", "06_ecaml", "07_noise_guarantees", "08_bench"]
BUDGET = 25.0  # minutes (issue #87)


def test_a_dropdown_shows_its_title_only_and_an_open_admonition_all_of_it():
    text = ("Before.\n\n:::{dropdown} Deep dive: a title\nhidden words here\n:::\n\nAfter.\n\n"
            ":::{admonition} Shown\n:class: tip\nvisible body\n:::\n\n:::{admonition} Folded\n:class: dropdown\n"
            "secret\n:::")
    shown = unfolded(text)
    assert "hidden" not in shown and "secret" not in shown and "Deep dive: a title" in shown
    assert "visible body" in shown and "Before." in shown and "After." in shown and ":class:" not in shown


def test_the_rates_and_what_is_folded(tmp_path):
    words = " ".join(["word"] * 180)
    cells = [
        {"cell_type": "markdown", "metadata": {}, "source": words + "\n\n:::{dropdown} T\n" + words + "\n:::"},
        {"cell_type": "code", "metadata": {"tags": []}, "source": "\n".join(["x = 1"] * 15), "outputs": [
            {"output_type": "stream", "name": "stdout", "text": " ".join(["out"] * 250)},
            {"output_type": "stream", "name": "stderr", "text": "progress 1 2 3 " * 100},
            {"output_type": "display_data", "data": {"image/png": "", "text/plain": "<Figure>"}}]},
        {"cell_type": "code", "metadata": {"tags": ["hide-input", "hide-output"]}, "source": "y = 2",
         "outputs": [{"output_type": "stream", "name": "stdout", "text": "folded " * 500}]},
        {"cell_type": "code", "metadata": {"tags": []}, "source": "", "outputs": [
            {"output_type": "display_data", "data": {"text/markdown": "| a |\n|---|\n| 1 |"}}]},
    ]
    path = tmp_path / "n.ipynb"
    path.write_text(json.dumps({"cells": cells}))
    m = measure(path)
    assert (m["prose"], m["output"], m["code"], m["figures"], m["tables"]) == (181, 252, 15, 1, 1)
    assert m["minutes"] == pytest.approx(181 / 180 + 252 / 250 + 1 + 0.5 + 0.75)


@pytest.mark.parametrize("stem", PAPERS)
def test_each_chapter_reads_within_the_budget(stem):
    m = measure(ROOT / "notebooks" / f"{stem}.ipynb")
    assert m["minutes"] <= BUDGET, f"{stem}: {m['minutes']:.1f} minutes ({m})"


@pytest.mark.parametrize("stem", PAPERS)
def test_each_chapter_reads_within_the_budget_by_the_shared_count_too(stem):
    """The team's tool (../shared/tools/readtime.py) reads a closed dropdown's text and stderr as visible: the
    budget holds by that count as well (#51), so that moving text into a dropdown does not buy time."""
    m = measure(ROOT / "notebooks" / f"{stem}.ipynb", folds=False)
    assert m["minutes"] <= BUDGET, f"{stem}: {m['minutes']:.1f} minutes counting folded text ({m})"


def test_the_shared_count_reads_folded_text_and_stderr(tmp_path):
    cells = [{"cell_type": "markdown", "metadata": {}, "source": ":::{dropdown} T\n" + " ".join(["w"] * 180) + "\n:::"},
             {"cell_type": "code", "metadata": {"tags": []}, "source": "", "outputs": [
                 {"output_type": "stream", "name": "stderr", "text": " ".join(["e"] * 250)}]}]
    path = tmp_path / "n.ipynb"
    path.write_text(json.dumps({"cells": cells}))
    folded, shown = measure(path), measure(path, folds=False)
    assert (folded["prose"], folded["output"]) == (1, 0) and (shown["prose"], shown["output"]) == (182, 250)  # "dropdown" too


@pytest.mark.parametrize("stem", PAPERS)
def test_each_chapter_links_its_reproduction_notes_which_hold_the_reference_material(stem):
    """What a reproducer needs and a first reading does not (what each profile runs, the released code's settings,
    the paper-scale run, further runs) lives in book/notes.md, one section a chapter, which the chapter links."""
    chapter = stem.split("_", 1)[1]
    text = "".join("".join(c["source"]) for c in json.loads((ROOT / "notebooks" / f"{stem}.ipynb").read_text())
                   ["cells"] if c["cell_type"] == "markdown")
    assert f"<{chapter}-notes>`" in text
    for moved in ("What each profile runs", "Running the paper-scale version", "Setting by setting"):
        assert f"}} {moved}" not in text, moved  # a dropdown of it: back in the chapter
    notes = (ROOT / "book" / "notes.md").read_text()
    section = notes.split(f"({chapter}-notes)=")[1].split("-notes)=")[0]
    assert "### What each profile runs" in section and "### Running the paper-scale version" in section


def test_the_intros_reading_times_are_the_chapters_own():
    """book/intro.md gives each chapter's reading time (#87: minutes per chapter in the introduction), as the shared
    count gives it (folded cells closed, dropdowns read); it may be one minute off, never more, so a chapter that
    grows or shrinks sends whoever changed it to the introduction."""
    import re

    intro = (ROOT / "book" / "intro.md").read_text()
    table = intro.split("## Chapters", 1)[1].split("\n## ", 1)[0]
    said = [int(m) for m in re.findall(r"\| about (\d+) min \|", table)]
    notebooks = sorted((ROOT / "notebooks").glob("0*.ipynb"))
    assert len(said) == len(notebooks), (said, [n.stem for n in notebooks])
    for minutes, notebook in zip(said, notebooks):
        actual = measure(notebook, folds=False)["minutes"]
        assert abs(minutes - actual) <= 1, f"{notebook.stem}: the introduction says {minutes} min, it reads {actual:.1f}"

