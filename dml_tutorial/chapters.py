"""The chapter registry: which notebooks are chapters, under which short names, and where each one's committed
record of its stored run lies. ``cli``, ``report`` and ``reference`` all read it from here."""

from __future__ import annotations

import os
from pathlib import Path

NOTEBOOKS = Path(__file__).resolve().parent.parent / "notebooks"
FOLDER_ENV = "DML_TUTORIAL_NOTEBOOKS"  # another folder of chapter notebooks (the tests use a tiny one)


def notebooks_folder() -> Path:
    return Path(os.environ.get(FOLDER_ENV, NOTEBOOKS))


def chapters(folder: Path | None = None) -> dict[str, Path]:
    """``{name: path}`` of the chapter notebooks, e.g. ``foundations`` for ``01_foundations.ipynb``."""
    folder = folder or notebooks_folder()
    return {p.stem.split("_", 1)[-1]: p for p in sorted(folder.glob("[0-9][0-9]_*.ipynb"))}


def results_path(notebook: Path) -> Path:
    """Where ``dml-tutorial run`` writes the tables of an executed notebook: ``<name>.results.json`` beside it.
    For a committed chapter this file is the record of the run whose outputs the notebook stores."""
    notebook = Path(notebook)
    return notebook.with_name(notebook.stem + ".results.json")
