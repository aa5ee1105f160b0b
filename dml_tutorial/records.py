"""Recorded tables as data, below both :mod:`~dml_tutorial.claims` and :mod:`~dml_tutorial.report`: a table is
``{"table": title, "id": its id (a declared table, :mod:`dml_tutorial.tables`), "seeds", "measured": {row:
{column: [value per seed]}}, "paper": {row: {column: value}}}``, as a run file stores it and as
:func:`dml_tutorial.report.record` records it.

The current recorder (:mod:`dml_tutorial.recorder`) keeps every table this process recorded (a notebook's kernel),
so that a chapter's conclusions are computed by the same function (:func:`dml_tutorial.claims.assess`) from the
same tables as its pages are from its run file: ``claims.assess("eps", [records.session_run("eps")])``.
"""

from __future__ import annotations

from collections import defaultdict

import numpy as np

from . import recorder
from .tables import key

#: The tables the process's default recorder holds (deprecated: read ``recorder.current().tables``).
SESSION: list[dict] = recorder.DEFAULT.tables


def session_run(chapter: str) -> dict:
    """The tables the current recorder holds as one run (the part of a run file that :func:`merge_seeds` reads),
    with the profile they were recorded under (a smoke run decides no verdict words)."""
    tables = recorder.current().tables
    profiles = {t.get("settings", {}).get("profile") for t in tables} - {None}
    return {"chapter": chapter, "profile": profiles.pop() if len(profiles) == 1 else None, "tables": list(tables)}


def merge_seeds(runs: list[dict]) -> dict:
    """``{table: (measured, paper)}`` with one value per seed over ``runs``, each table under its id where it is a
    declared one (:mod:`dml_tutorial.tables`), else its title; a seed recorded twice keeps the newest
    run's value (``runs`` oldest first), so re-running a seed replaces it rather than counting it twice."""
    by_seed, paper = defaultdict(dict), {}
    for run in runs:
        for t in run["tables"]:
            paper[key(t)] = t["paper"]
            for row, cols in t["measured"].items():
                for col, values in cols.items():
                    for seed, value in zip(t["seeds"], np.atleast_1d(values)):
                        by_seed[(key(t), row, col)][seed] = value
    merged = defaultdict(lambda: defaultdict(dict))
    for (table, row, col), values in by_seed.items():
        merged[table][row][col] = [values[s] for s in sorted(values)]
    return {table: (dict(rows), paper[table]) for table, rows in merged.items()}


def row_seeds(runs: list[dict], table) -> dict:
    """``{row: [seed, ...]}``: the seeds whose runs recorded each row of ``table`` (a declared
    :class:`~dml_tutorial.tables.Table`, or an undeclared table's title), sorted. The rows of a table can
    differ from seed to seed (the bench's own search, before issue #86, walked each seed its own way),
    and :func:`merge_seeds` then gives such a row fewer values than the table has seeds."""
    seeds = defaultdict(set)
    for run in runs:
        for t in run["tables"]:
            if key(t) == str(getattr(table, "id", table)):
                for row in t["measured"]:
                    seeds[row].update(t["seeds"])
    return {row: sorted(s) for row, s in seeds.items()}
