"""What the test files share: the repository's root, the one-thread setting of the test workers, the order in which
`make test` hands out its files, and two readers (a benchmark script as a module, the verdict table's cells).

A module of its own, not ``conftest.py``: pytest imports each folder's ``conftest.py`` as the module ``conftest``,
so with ``tests`` and ``notebooks`` collected in one run, ``from conftest import ROOT`` could find
``notebooks/conftest.py`` and fail to import."""

from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
#: What each pytest-xdist worker, and every kernel or process it starts, computes with: one thread.
ONE_THREAD = {"DML_TUTORIAL_THREADS": "1", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "NUMBA_NUM_THREADS": "1"}

#: The minutes-long files, longest first (seconds of test time in `make test` on a 2-core AMD EPYC host, from
#: _build/test-durations.txt at 5c58838; the wheel's check since shortened). `make test` runs every test in one
#: pytest run on two workers, and pytest-xdist's ``--dist loadfile`` hands whole files to them; by default it sorts
#: them by their number of tests, which ran the one-test wheel check (198 s) last with the other worker idle. The
#: Makefile turns that off (``--no-loadscope-reorder``), so the order here holds and the run ends on short files.
SLOW_FIRST = ("tests/test_book.py",                # 358
              "tests/test_full_profile.py",        # 298
              "tests/test_cli.py",                 # 279
              "notebooks/04_cbswr.ipynb",          # 273
              "tests/test_colab_profile.py",       # 265
              "notebooks/06_ecaml.ipynb",          # 255
              "notebooks/05_eps.ipynb",            # 196
              "notebooks/08_bench.ipynb",          # 158
              "notebooks/07_noise_guarantees.ipynb",  # 153
              "notebooks/03_dcdl.ipynb",           # 147
              "tests/test_wheel.py",               # 198 before its chapter ran one epoch at two noise rates
              "notebooks/01_foundations.ipynb",    # 97
              "tests/test_slurm.py",               # 91
              "tests/test_plots.py",               # 76
              "tests/test_nbval_catches_changes.py")  # 69


#: The kinds of test, as markers (``pytest -m unit``; `make test-fast` runs the unit tests that are not ``slow``):
#: ``nbval`` (a chapter's cells), ``book`` (the site built and read in Chromium), ``chapter_runs`` (whole chapters
#: executed in another profile or from the wheel) and ``unit`` (everything else; ``benchmarks/bench_suite.py``
#: sums `make test`'s time by the same kinds).
BOOK_FILES = ("tests/test_book.py",)
CHAPTER_RUN_FILES = ("tests/test_full_profile.py", "tests/test_colab_profile.py", "tests/test_wheel.py")
#: Unit tests that take tens of seconds to minutes each (they execute notebooks, start a SLURM cluster or re-run
#: nbval on a changed chapter): ``slow``, with every nbval, book and chapter-run test.
SLOW_UNIT_FILES = ("tests/test_cli.py", "tests/test_slurm.py", "tests/test_nbval_catches_changes.py")


def kind(nodeid: str) -> str:
    """The kind of the test ``nodeid`` (its file's): ``nbval``, ``book``, ``chapter_runs`` or ``unit``."""
    file = nodeid.split("::")[0]
    if file.endswith(".ipynb"):
        return "nbval"
    if file in BOOK_FILES:
        return "book"
    return "chapter_runs" if file in CHAPTER_RUN_FILES else "unit"


def mark_kinds(items) -> None:
    """Mark each collected item with its :func:`kind`, and ``slow`` unless it is a quick unit test."""
    import pytest

    for item in items:
        which = kind(item.nodeid)
        item.add_marker(getattr(pytest.mark, which))
        if which != "unit" or item.nodeid.split("::")[0] in SLOW_UNIT_FILES:
            item.add_marker(pytest.mark.slow)


def slow_first(items) -> None:
    """Sort collected ``items`` (anything with a ``nodeid``) in place: :data:`SLOW_FIRST` first, in its order; every
    other file after them in pytest's order (the sort is stable, and a file's own tests, a notebook's cells among
    them, keep theirs)."""
    rank = {name: i for i, name in enumerate(SLOW_FIRST)}
    items.sort(key=lambda item: rank.get(item.nodeid.split("::")[0], len(rank)))


def load_benchmark(name: str):
    """The script ``benchmarks/<name>.py`` as a module (benchmarks/ is not a package)."""
    return load_script(f"benchmarks/{name}.py")


def load_script(path: str):
    """A script of the repository (``benchmarks/x.py``, ``.ci/release.py``) as a module, by its path from the root."""
    import importlib.util
    import sys

    name = Path(path).stem
    spec = importlib.util.spec_from_file_location(name, ROOT / path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def verdict_lines(page: str) -> list[str]:
    """The verdict table's lines: those of its ``verdict-cards`` container (the folded table under it is another)."""
    inside = page.split(":::{container} verdict-cards", 1)[1].split("\n:::", 1)[0]
    return [line for line in inside.splitlines() if line.startswith("| ")]


def verdict_cells(page: str) -> dict:
    """``{(claim as the table writes it, profile): cell}`` of the verdict table (book/results/verdicts.md): each
    column named by its heading (its scale in ``report.SCALES``; columns without any answer are left out of the
    table), each cell without the column name it carries for phones (``<span class="card-label">``)."""
    import re

    from dml_tutorial import report

    profiles = {head: profile or "smoke" for head, profile in report.SCALES}
    lines = verdict_lines(page)
    heads = [h.strip() for h in lines[0].strip().strip("|").split("|")]
    assert heads[:3] == ["chapter", "claim", "smallest effect (points)"] and set(heads[3:]) <= set(profiles), heads
    out = {}
    for line in lines[1:]:
        cells = [re.sub(r'^<span class="card-label">[^<]*</span>', "", c.strip()) for c in line.strip("|").split("|")]
        for head, cell in zip(heads[3:], cells[3:], strict=True):
            out[(cells[1], profiles[head])] = cell
    return out
