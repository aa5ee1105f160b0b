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
single-seed row) gets ``FLOOR``. ``Z`` is the one ``benchmarks/bench_nbval_drift.py`` derives from the drift
measured on an emulated other machine (the normal Bonferroni bound for a 1% chance of any false alarm over every
checked cell, rounded up to a tenth; ``tests/test_reference.py`` ties the two).

Each **claim** of :mod:`dml_tutorial.claims` whose rows the table holds is checked on its per-seed paired
differences (row minus base, seed by seed; minus the control column for an interaction): the number a verdict
reads. Two cells can each stay inside while their difference moves, and a paired difference drifts less than
either cell (the seed's share cancels). Its rule has **no floor** (a 2-point gain must not hide under 3 points)
and is machine-proof: ``Z`` becomes :func:`critical`, the quantile of Student's t with ``2 (n - 1)`` degrees of
freedom that a re-draw of every seed exceeds with probability ``ALARM`` over the :func:`family` of claims
(Bonferroni), so that even another machine that re-drew the seeds (the worst its rounding can do) raises a false
alarm on some claim with probability at most ``ALARM``.

Why the cells keep their normal ``Z`` and floor: the same t rule over every cell (684 cells, 3 seeds: t = 30)
would let a chapter trained at lr = 0 pass (measured on the foundations chapter: R@1 12 points lower, allowed
16.5), and the measured drift is far below a re-draw (2% of the cells beyond |z| = 1.96, where a re-draw gives 12%).

``benchmarks/bench_nbval_drift.py`` states, per chapter, the smallest change of a claim that the check catches four
times in five. :func:`compare_seed` checks one re-run seed of a test bed against its committed run (``dml-tutorial
compare``, the weekly workflow ``.github/workflows/testbed.yml``).
"""

from __future__ import annotations

import functools
import json
import os
from pathlib import Path

import numpy as np
from scipy import stats

from .chapters import chapters, results_path
from .labels import mean_std
from .tables import key

ENV = "DML_TUTORIAL_CHECK"  # "1": compare with each chapter's committed record; or the path of a results file
#: A JSON-lines file to which every check appends each cell's committed and fresh values (nbval sets it in
#: ``make test``); ``benchmarks/bench_nbval_drift.py`` derives the drift, the tolerance and the power from it.
DRIFT_ENV = "DML_TUTORIAL_DRIFT"
Z = 4.4
FLOOR = 0.03  # 3 points of a metric in %: a table cell's least tolerance (a claim's paired difference has none)
ALARM = 0.01  # a claim check's chance of any false alarm over all the claims, were every seed re-drawn


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


def _spread(values) -> bool:
    return len(np.atleast_1d(values)) >= 2


@functools.cache
def family() -> int:
    """How many claims ``make test``'s nbval run checks by their seed-to-seed spread: every claim's paired
    difference of two or more seeds over every chapter's committed record (at least 1): the Bonferroni family of
    :data:`ALARM`."""
    count = 0
    for chapter, notebook in chapters().items():
        if (path := results_path(notebook)).exists():
            for t in json.loads(path.read_text())["tables"]:
                count += sum(map(_spread, claim_differences(chapter, key(t), t["measured"]).values()))
    return max(1, count)


def critical(df: int, tests: int | None = None) -> float:
    """The t statistic a claim's drift must exceed to be flagged: the quantile of Student's t with ``df`` degrees
    of freedom exceeded (either way) with probability ``ALARM / tests`` (``tests``: :func:`family` by default)."""
    return float(stats.t.isf(ALARM / 2 / (tests or family()), df))


def tolerance(committed, fresh, claim: bool = False) -> float:
    """The largest allowed |difference of means| between two runs of one table cell, or of one claim's paired
    differences with ``claim`` (see the module's rule). One value on either side: ``FLOOR`` (no spread to scale
    by)."""
    a, b = np.atleast_1d(np.asarray(committed, float)), np.atleast_1d(np.asarray(fresh, float))
    if len(a) < 2 or len(b) < 2:
        return FLOOR
    n = min(len(a), len(b))
    s = np.sqrt((a.var(ddof=1) + b.var(ddof=1)) / 2)
    if claim:
        return float(critical(2 * (n - 1)) * s * np.sqrt(2 / n))
    return float(max(FLOOR, Z * s * np.sqrt(2 / n)))


def _moved(committed: np.ndarray, fresh: np.ndarray, claim: bool = False) -> float | None:
    """The allowed drift (:func:`tolerance`) where the two runs' means differ by more than it, else ``None``."""
    allowed = tolerance(committed, fresh, claim)
    return allowed if abs(fresh.mean() - committed.mean()) > allowed else None


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
            if (allowed := _moved(a, b)) is not None:
                problems.append(f"{table!r}, row {row!r}, {metric}: committed {mean_std(a)}, this run {mean_std(b)} "
                                f"(in %, {len(b)} seed(s)); allowed drift ±{100 * allowed:.1f} points")
    return problems


def claim_differences(chapter: str, table: str, measured: dict) -> dict:
    """``{claim text: per-seed paired differences}`` for each claim of ``chapter`` on ``table`` (its id) that ``measured``
    holds the rows and columns of (:func:`dml_tutorial.claims._values`, the verdict's own pairing)."""
    from .claims import CLAIMS, _values

    out = {}
    for claim in CLAIMS.get(chapter, []):
        if claim.table.id == table and (values := _values(measured, claim)) is not None:
            base, row = values
            out[claim.text] = (np.asarray(row, float) - np.asarray(base, float)).tolist()
    return out


def compare_claims(chapter: str, table: str, committed: dict, fresh: dict) -> list[str]:
    """One line per claim on ``table`` whose mean paired difference moved beyond :func:`tolerance` of the two
    runs' differences (or that one run can pair and the other cannot)."""
    old, new = claim_differences(chapter, table, committed), claim_differences(chapter, table, fresh)
    problems = []
    for claim in dict.fromkeys([*old, *new]):
        if claim not in old or claim not in new:
            problems.append(f"claim {claim!r}: paired only in the {'fresh run' if claim not in old else 'record'}")
            continue
        a, b = np.asarray(old[claim]), np.asarray(new[claim])
        if np.isnan(a).any() or np.isnan(b).any():
            continue
        if (allowed := _moved(a, b, claim=True)) is not None:
            problems.append(f"claim {claim!r}: committed gain {mean_std(a)}, this run {mean_std(b)} (in points, "
                            f"paired by seed); allowed drift ±{100 * allowed:.1f} points")
    return problems


def check(table, measured: dict, settings: dict, seeds) -> None:
    """Raise :class:`ResultsDrifted` unless ``measured`` agrees with the committed record of the same table, run
    in the same profile with the same seeds. ``settings`` must name its ``chapter`` (``profiles.settings`` does)."""
    chapter, wanted, table = settings.get("chapter"), getattr(table, "id", table), str(table)
    path = reference_file(chapter)
    rerun = f"re-execute the chapter to record it: dml-tutorial run {chapter}"
    if not path.exists():
        raise ResultsDrifted(f"no committed record {path} to check table {table!r} against; {rerun}")
    record = json.loads(path.read_text())
    matches = [t for t in record["tables"] if key(t) == wanted]
    if not matches:
        raise ResultsDrifted(f"table {table!r} is not in the committed record {path.name}; {rerun}")
    if record["profile"] != settings.get("profile") or list(matches[0]["seeds"]) != [int(s) for s in seeds]:
        raise ResultsDrifted(f"the committed record {path.name} is of the {record['profile']} profile with seeds "
                             f"{matches[0]['seeds']}, so it cannot check table {table!r} of a "
                             f"{settings.get('profile')} run with seeds {list(seeds)}: run the chapter's default "
                             f"profile, or {rerun}")
    log_drift(chapter, wanted, matches[0]["measured"], measured)
    problems = compare(table, matches[0]["measured"], measured) + compare_claims(
        chapter, wanted, matches[0]["measured"], measured)
    if problems:
        raise ResultsDrifted(f"{len(problems)} number(s) of chapter {chapter!r} left the tolerance around its "
                             f"committed record {path.name}:\n  " + "\n  ".join(problems) +
                             f"\nA different machine drifts less than this; if the change is intended, {rerun}.")


def log_drift(chapter: str, table: str, committed: dict, fresh: dict) -> None:
    """Append one JSON line per cell both runs have (``chapter``, ``table``, ``row``, ``metric``, the
    ``committed`` and ``fresh`` values per seed and the ``allowed`` drift), and one per claim both runs can pair
    (``claim`` instead of ``row`` and ``metric``, the paired differences per seed), to the file named by
    :data:`DRIFT_ENV`; nothing when it is unset."""
    path = os.environ.get(DRIFT_ENV)
    if not path:
        return
    old, new = claim_differences(chapter, table, committed), claim_differences(chapter, table, fresh)
    lines = [  # each claim's paired differences, the number a verdict reads
        json.dumps({"chapter": chapter, "table": table, "claim": claim, "committed": old[claim],
                    "fresh": new[claim], "allowed": tolerance(old[claim], new[claim], claim=True)})
        for claim in sorted(old.keys() & new.keys())]
    for row, cols in committed.items():
        for metric, values in cols.items():
            if metric in fresh.get(row, {}):
                now = np.atleast_1d(np.asarray(fresh[row][metric], float))
                was = np.atleast_1d(np.asarray(values, float))
                lines.append(json.dumps({"chapter": chapter, "table": table, "row": row, "metric": metric,
                                         "committed": was.tolist(), "fresh": now.tolist(),
                                         "allowed": tolerance(was, now)}))
    with open(path, "a") as out:  # one write: nbval's two workers append to the same file
        out.write("".join(line + "\n" for line in lines))


def _seed_problem(what: str, k: int, committed: float, fresh: float, others, claim: bool, tests: int) -> str | None:
    """The line for one number of re-run seed ``k`` beyond its tolerance (see :func:`compare_seed`), else None."""
    others = np.asarray(others, float)
    if len(others) < 2 or np.isnan([committed, fresh]).any() or np.isnan(others).any():
        allowed = 0.0 if claim else FLOOR  # no spread to scale by: the floor, or exactly the committed gain
    else:
        t = critical(len(others) - 1, tests)
        allowed = max(0.0 if claim else FLOOR, t * others.std(ddof=1) * np.sqrt(2))
    if np.isnan(committed) != np.isnan(fresh) or abs(fresh - committed) > allowed + 1e-12:
        return (f"{what}: committed seed {k} {100 * committed:.1f}, this run {100 * fresh:.1f}; allowed "
                f"±{100 * allowed:.1f} points (the spread of the other {len(others)} seed(s))")
    return None


def compare_seed(fresh: dict, committed: list[dict]) -> list[str]:
    """One line per number of a re-run seed that left its tolerance: ``fresh`` is the run file of one seed ``k``,
    ``committed`` the committed run files of its chapter and profile (seed ``k``'s among them).

    Each cell, and each claim's paired difference, of the fresh seed is compared with committed seed ``k``'s. If
    another machine re-drew the seed, the difference would have variance ``2 sigma^2``; ``sigma`` is estimated by
    the other committed seeds' spread ``s`` (``m`` seeds, independent of seed ``k``), so ``|fresh - committed| /
    (s sqrt 2)`` is t-distributed with ``m - 1`` degrees of freedom, flagged beyond :func:`critical` at ``ALARM / 2``
    over the run's cells and ``ALARM / 2`` over its claims (Bonferroni). Cells never allow less than ``FLOOR``; a
    claim's paired difference has no floor. A row or claim only one side has is a problem too."""
    from .records import merge_seeds

    (k,) = fresh["seeds"]
    mine = [r for r in committed if r["seeds"] == [k]]
    if len(mine) != 1:
        raise ResultsDrifted(f"{len(mine)} committed run(s) of seed {k} of {fresh['chapter']} ({fresh['profile']})")
    now, was = merge_seeds([fresh]), merge_seeds(mine)
    rest = merge_seeds([r for r in committed if r["seeds"] != [k]])
    chapter, cells, claims = fresh["chapter"], [], []
    for table in dict.fromkeys([*was, *now]):
        if table not in was or table not in now:
            cells.append((f"{table!r}", None))
            continue
        (a, _), (b, _), other = was[table], now[table], rest.get(table, ({}, {}))[0]
        for row in dict.fromkeys([*a, *b]):
            for metric in dict.fromkeys([*a.get(row, {}), *b.get(row, {})]):
                values = [d.get(row, {}).get(metric, [None])[0] for d in (a, b)]
                cells.append((f"{table!r}, row {row!r}, {metric}", (*values, other.get(row, {}).get(metric, []))))
        old, new = claim_differences(chapter, table, a), claim_differences(chapter, table, b)
        spread = claim_differences(chapter, table, other)
        for claim in dict.fromkeys([*old, *new]):
            pair = (old[claim][0], new[claim][0], spread.get(claim, [])) if claim in old and claim in new else None
            claims.append((f"claim {claim!r}", pair))
    problems = []
    for found, is_claim in ((cells, False), (claims, True)):
        for what, values in found:
            if values is None or None in values[:2]:
                problems.append(f"{what}: only in one of the two runs")
            elif line := _seed_problem(what, k, *values, claim=is_claim, tests=2 * max(1, len(found))):
                problems.append(line)
    return problems
