"""Trained numbers checked statistically: a fresh run of a chapter against the committed record of its stored run.

Training is deterministic on one machine but not across machines: another CPU rounds a float32 sum differently,
and a few hundred SGD steps later the seeds have drifted apart as if they were new draws. nbval therefore does not
compare trained numbers as text. Instead, each chapter's committed record (``notebooks/<name>.results.json``, written
by ``dml-tutorial run`` together with the stored outputs) holds one value per seed for every table the chapter
shows with :func:`dml_tutorial.report.record`; when ``DML_TUTORIAL_CHECK`` is set (nbval sets it, see
``notebooks/conftest.py``) every :func:`~dml_tutorial.report.record` compares its fresh values with that record.

The rule, per table cell (one metric of one row, ``n`` seeds in both runs, values in [0, 1]):

    |mean(fresh) - mean(committed)|  <=  max(FLOOR, Z * s * sqrt(2 / n)),   s^2 = (s_fresh^2 + s_committed^2) / 2

that is, ``Z`` standard errors of a difference of two means of ``n`` seeds each, with the seed-to-seed standard
deviation ``s`` (ddof=1) pooled over both runs, and never less than ``FLOOR``. A cell of one value (raw pixels, a
single-seed row) gets ``FLOOR``. ``Z`` and ``FLOOR`` were set from measured drifts (``tests/test_reference.py``
says how): a run on another machine stays inside, a changed loss or a broken training does not.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np

from .chapters import chapters, results_path
from .plots import mean_std

ENV = "DML_TUTORIAL_CHECK"  # "1": compare with each chapter's committed record; or the path of a results file
#: A JSON-lines file to which every check appends each cell's committed and fresh values (nbval sets it in
#: ``make test``); ``benchmarks/bench_nbval_drift.py`` derives the drift, the tolerance and the power from it.
DRIFT_ENV = "DML_TUTORIAL_DRIFT"
Z = 6.0
FLOOR = 0.03  # 3 points of a metric in %


class ResultsDrifted(AssertionError):
    """A fresh run's numbers left the tolerance around the committed record (or the record does not match)."""


def reference_file(chapter: str) -> Path:
    """The committed record of ``chapter``'s stored run, or the file named by ``DML_TUTORIAL_CHECK``."""
    named = os.environ.get(ENV, "")
    if named not in ("", "1"):
        return Path(named)
    known = chapters()
    if chapter not in known:
        raise ResultsDrifted(f"no chapter notebook named {chapter!r} (known: {', '.join(known)})")
    return results_path(known[chapter])


def tolerance(committed, fresh) -> float:
    """The largest allowed |difference of means| between two runs of one table cell (see the module's rule)."""
    a, b = np.atleast_1d(np.asarray(committed, float)), np.atleast_1d(np.asarray(fresh, float))
    if len(a) < 2 or len(b) < 2:
        return FLOOR
    s = np.sqrt((a.var(ddof=1) + b.var(ddof=1)) / 2)
    return float(max(FLOOR, Z * s * np.sqrt(2 / min(len(a), len(b)))))


def compare(table: str, committed: dict, fresh: dict) -> list[str]:
    """One line per cell of ``table`` (``{row: {metric: values}}`` both) that differs beyond :func:`tolerance`,
    or that one run has and the other lacks; an empty list when the runs agree."""
    problems = []
    for row in dict.fromkeys([*committed, *fresh]):
        a_row, b_row = committed.get(row), fresh.get(row)
        if a_row is None or b_row is None:
            problems.append(f"{table!r}, row {row!r}: only in the {'fresh run' if a_row is None else 'record'}")
            continue
        for metric in dict.fromkeys([*a_row, *b_row]):
            if metric not in a_row or metric not in b_row:
                where = "fresh run" if metric not in a_row else "record"
                problems.append(f"{table!r}, row {row!r}, {metric}: only in the {where}")
                continue
            a = np.atleast_1d(np.asarray(a_row[metric], float))
            b = np.atleast_1d(np.asarray(b_row[metric], float))
            if np.isnan(a).any() or np.isnan(b).any():
                if not np.array_equal(np.isnan(a), np.isnan(b)):
                    problems.append(f"{table!r}, row {row!r}, {metric}: NaN in one run only ({a} vs {b})")
                continue
            allowed = tolerance(a, b)
            if abs(b.mean() - a.mean()) > allowed:
                problems.append(f"{table!r}, row {row!r}, {metric}: committed {mean_std(a)}, this run {mean_std(b)} "
                                f"(in %, {len(b)} seed(s)); allowed drift ±{100 * allowed:.1f} points")
    return problems


def check(table: str, measured: dict, settings: dict, seeds) -> None:
    """Raise :class:`ResultsDrifted` unless ``measured`` agrees with the committed record of the same table, run
    in the same profile with the same seeds. ``settings`` must name its ``chapter`` (``profiles.settings`` does)."""
    chapter = settings.get("chapter")
    path = reference_file(chapter)
    rerun = f"re-execute the chapter to record it: dml-tutorial run {chapter}"
    if not path.exists():
        raise ResultsDrifted(f"no committed record {path} to check table {table!r} against; {rerun}")
    record = json.loads(path.read_text())
    matches = [t for t in record["tables"] if t["table"] == table]
    if not matches:
        raise ResultsDrifted(f"table {table!r} is not in the committed record {path.name}; {rerun}")
    if record["profile"] != settings.get("profile") or list(matches[0]["seeds"]) != [int(s) for s in seeds]:
        raise ResultsDrifted(f"the committed record {path.name} is of the {record['profile']} profile with seeds "
                             f"{matches[0]['seeds']}, so it cannot check table {table!r} of a "
                             f"{settings.get('profile')} run with seeds {list(seeds)}: run the chapter's default "
                             f"profile, or {rerun}")
    log_drift(chapter, table, matches[0]["measured"], measured)
    problems = compare(table, matches[0]["measured"], measured)
    if problems:
        raise ResultsDrifted(f"{len(problems)} number(s) of chapter {chapter!r} left the tolerance around its "
                             f"committed record {path.name}:\n  " + "\n  ".join(problems) +
                             f"\nA different machine drifts less than this; if the change is intended, {rerun}.")


def log_drift(chapter: str, table: str, committed: dict, fresh: dict) -> None:
    """Append one JSON line per cell both runs have (``chapter``, ``table``, ``row``, ``metric``, the
    ``committed`` and ``fresh`` values per seed and the ``allowed`` drift) to the file named by
    :data:`DRIFT_ENV`; nothing when it is unset."""
    path = os.environ.get(DRIFT_ENV)
    if not path:
        return
    with open(path, "a") as out:
        for row, cols in committed.items():
            for metric, values in cols.items():
                if metric in fresh.get(row, {}):
                    new = np.atleast_1d(np.asarray(fresh[row][metric], float))
                    old = np.atleast_1d(np.asarray(values, float))
                    out.write(json.dumps({"chapter": chapter, "table": table, "row": row, "metric": metric,
                                          "committed": old.tolist(), "fresh": new.tolist(),
                                          "allowed": tolerance(old, new)}) + "\n")
