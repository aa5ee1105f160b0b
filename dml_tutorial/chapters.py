"""The chapter registry: which notebooks are chapters, under which short names, and where each one's committed
record of its stored run lies, and where the committed real-data runs lie. ``cli``, ``report``, ``findings`` and
``reference`` all read them from here.

Two places hold them, one source of truth:

- a checkout of the repository: ``notebooks/<name>.results.json`` beside each chapter, and ``data/results/``;
- an installed wheel (Colab's ``pip install``, which fetches no notebook and no ``data/``): the same files, copied
  into the wheel at build time (``setup.py``'s ``build_py``) under ``dml_tutorial/_committed/records`` and
  ``dml_tutorial/_committed/results``, read through :mod:`importlib.resources`.

The packaged copy wins where it exists (an installed wheel); otherwise the checkout's files are read (an editable
install or the source tree).
"""

from __future__ import annotations

import importlib.resources
import os
from pathlib import Path

REPOSITORY = Path(__file__).resolve().parent.parent
FOLDER_ENV = "DML_TUTORIAL_NOTEBOOKS"  # another folder of chapter notebooks (the tests use a tiny one)
PACKAGED = "_committed"  # the folder of the wheel's copy, inside the package


def packaged(part: str) -> Path | None:
    """The wheel's copy of ``part`` (``"records"`` or ``"results"``), or ``None`` outside an installed wheel."""
    folder = importlib.resources.files("dml_tutorial") / PACKAGED / part
    return Path(str(folder)) if folder.is_dir() else None


def in_checkout() -> bool:
    """Whether the package runs from a checkout of the repository (its notebooks beside it)."""
    return packaged("records") is None and (REPOSITORY / "notebooks").is_dir()


def notebooks_folder() -> Path:
    """Where the chapters lie: ``DML_TUTORIAL_NOTEBOOKS``, else the wheel's records, else the checkout's
    ``notebooks/``."""
    if os.environ.get(FOLDER_ENV):
        return Path(os.environ[FOLDER_ENV])
    return packaged("records") or REPOSITORY / "notebooks"


def results_folder() -> Path:
    """Where the committed real-data runs lie (``<chapter>/<run>.json`` and their figures): the wheel's copy, else
    the checkout's ``data/results/``."""
    return packaged("results") or REPOSITORY / "data" / "results"


def chapters(folder: Path | None = None) -> dict[str, Path]:
    """``{name: path}`` of the chapter notebooks, e.g. ``foundations`` for ``01_foundations.ipynb``. A chapter
    whose notebook is absent but whose record is there (the wheel ships records, not notebooks) is listed under
    the path its notebook would have, so that :func:`results_path` finds the record."""
    folder = Path(folder or notebooks_folder())
    found = {p.name.removesuffix(".results.json") + ".ipynb" for p in folder.glob("[0-9][0-9]_*.results.json")}
    found |= {p.name for p in folder.glob("[0-9][0-9]_*.ipynb")}
    return {Path(name).stem.split("_", 1)[-1]: folder / name for name in sorted(found)}


def results_path(notebook: Path) -> Path:
    """Where ``dml-tutorial run`` writes the tables of an executed notebook: ``<name>.results.json`` beside it.
    For a committed chapter this file is the record of the run whose outputs the notebook stores."""
    notebook = Path(notebook)
    return notebook.with_name(notebook.stem + ".results.json")
