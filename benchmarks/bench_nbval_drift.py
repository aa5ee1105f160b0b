"""How far the chapters' trained numbers drift on "another machine", and what nbval's tolerance can then catch.

``make test`` runs nbval with the other-machine emulation (``notebooks/conftest.py``) and every
:func:`dml_tutorial.reference.check` appends each table cell's committed and fresh values per seed to
``_build/nbval-drift.jsonl`` (the unit tests, some of which plant failures on purpose, log elsewhere:
``tests/conftest.py``). This script reads that file and reports, per chapter:

- the drift of each cell's mean, in points and in standard errors of a difference of two means, ``z = |mean(fresh)
  - mean(committed)| / (s sqrt(2 / n))`` with ``s`` pooled over both runs, beside the rule's critical value: ``Z``
  for a cell, for a claim :func:`dml_tutorial.reference.critical` (Student's t for its degrees of freedom, 1% over
  the claims); the tolerance is recomputed with the current rule, not read from the log;
- the **80%-power change**: the smallest shift of a cell's true mean that the check flags four times in five, if a
  re-run's mean scatters as a fresh draw of ``n`` seeds (``N(shift, s^2 * 2 / n)``);
- the same for each **claim**'s paired difference (the number a verdict reads, checked without the floor), and
  how many claims the check catches four times in five when their gain moves by 2 and by 5 points;
- the largest z over its critical value, overall and among the claims and the cells that drifted beyond the floor
  (only there does ``Z`` decide for a cell): below 1, the emulated machine raises no alarm;
- the ``Z`` a derivation gives for the cells: the normal Bonferroni bound that keeps the chance of any false alarm
  over the cells at 1%. ``dml_tutorial.reference.Z`` is this Z rounded up to a tenth (``tests/test_reference.py``
  checks both on the committed figures).

    python benchmarks/bench_nbval_drift.py [_build/nbval-drift.jsonl] [--out benchmarks/results/nbval_drift.json]

Only numbers with at least two seeds on both sides count (a single value gets the floor, which the report lists
apart). The figures describe one emulated machine; they are a measurement to re-run, not a proof for every CPU.
"""

from __future__ import annotations

import argparse
import json
from collections import defaultdict
from pathlib import Path

import numpy as np
from scipy import optimize, stats

from dml_tutorial import reference

ROOT = Path(__file__).resolve().parent.parent


def cells(path: Path) -> list[dict]:
    """Each logged number with its drift: ``d`` (points), ``se`` (points), ``z`` (the t statistic), ``allowed``
    (points, the current rule), ``critical`` (the rule's t for its degrees of freedom), ``n``."""
    out = []
    for line in path.read_text().splitlines():
        if not line.strip():
            continue
        c = json.loads(line)
        a, b = np.asarray(c["committed"], float), np.asarray(c["fresh"], float)
        if np.isnan(a).any() or np.isnan(b).any():
            continue
        n, claim = min(len(a), len(b)), "claim" in c
        se = np.sqrt((a.var(ddof=1) + b.var(ddof=1)) / 2 * 2 / n) if n >= 2 else float("nan")
        d = abs(b.mean() - a.mean())
        out.append({**c, "n": n, "d": 100 * d, "se": 100 * se,
                    "allowed": 100 * reference.tolerance(a, b, claim=claim),
                    "critical": (reference.critical(2 * (n - 1)) if claim else reference.Z) if n >= 2 else float("nan"),
                    "z": d / se if n >= 2 and se > 0 else float("nan")})
    return out


def power_change(allowed: float, se: float, power: float = 0.8) -> float:
    """The smallest shift ``delta`` (points) with ``P(|delta + e| > allowed) >= power`` for ``e ~ N(0, se^2)``;
    with ``se = 0`` the check is exact: the allowed drift itself."""
    if not se > 0:
        return allowed

    def caught(delta):
        return stats.norm.sf((allowed - delta) / se) + stats.norm.cdf((-allowed - delta) / se) - power

    return float(optimize.brentq(caught, 0.0, allowed + 10 * se))


def _largest(values) -> float:
    return float(max(values, default=float("nan")))


def summarise(rows: list[dict], suite_alarm: float = 0.01) -> dict:
    """Per chapter and overall: numbers checked, drift and power figures, the largest statistic over its critical."""
    by = defaultdict(list)
    for r in rows:
        r["power80"] = power_change(r["allowed"], r["se"]) if r["n"] >= 2 else r["allowed"]
        r["ratio"] = r["z"] / r["critical"] if r["n"] >= 2 and np.isfinite(r["z"]) else float("nan")
        by[r["chapter"]].append(r)
    seeded = [r for r in rows if np.isfinite(r["ratio"])]
    claims = [r for r in rows if "claim" in r]
    floor = 100 * reference.FLOOR
    cells_seeded = sum("claim" not in r for r in seeded)
    report = {"cells": len(rows) - len(claims), "claims": len(claims), "numbers with seeds": len(seeded),
              "rule": {"Z": reference.Z, "floor (points)": floor, "claims' alarm": reference.ALARM,
                       "claims' family": reference.family()},
              "suite false-alarm rate": suite_alarm,
              "derived Z": float(stats.norm.isf(suite_alarm / 2 / max(1, cells_seeded))),
              "largest z / critical": _largest(r["ratio"] for r in seeded),
              "largest z / critical beyond the floor": _largest(
                  r["ratio"] for r in seeded if "claim" in r or r["d"] > floor),
              "share of |z| > 1.96": float(np.mean([r["z"] > 1.96 for r in seeded])) if seeded else float("nan"),
              "claims whose 2-point change is caught 4 times in 5": int(sum(r["power80"] <= 2 for r in claims)),
              "claims whose 5-point change is caught 4 times in 5": int(sum(r["power80"] <= 5 for r in claims)),
              "chapters": {}}
    for chapter, rs in sorted(by.items()):
        report["chapters"][chapter] = {
            "cells": len(rs), "largest drift (points)": float(max(r["d"] for r in rs)),
            "median drift (points)": float(np.median([r["d"] for r in rs])),
            "largest z": _largest(r["z"] for r in rs if np.isfinite(r["z"])),
            "median allowed (points)": float(np.median([r["allowed"] for r in rs])),
            "median 80%-power change (points)": float(np.median([r["power80"] for r in rs])),
            "cells at the floor": int(sum("claim" not in r and r["allowed"] <= floor + 1e-9 for r in rs)),
            "failed": int(sum(r["d"] > r["allowed"] + 1e-9 for r in rs)),
            "claims": {r["claim"]: {"drift (points)": r["d"], "allowed (points)": r["allowed"],
                                    "80%-power change (points)": r["power80"]} for r in rs if "claim" in r}}
    return report


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("drift", nargs="?", default=str(ROOT / "_build" / "nbval-drift.jsonl"))
    parser.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "nbval_drift.json"))
    args = parser.parse_args(argv)
    path = Path(args.drift)
    if not path.exists() or not path.read_text().strip():
        raise SystemExit(f"no drift log at {path}: run `make test` (its nbval run writes it) first")
    report = summarise(cells(path))
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(report, indent=1) + "\n")
    print(f"{report['cells']} cells and {report['claims']} claims checked ({report['numbers with seeds']} with seeds); "
          f"largest z over its critical value {report['largest z / critical']:.2f} "
          f"({report['largest z / critical beyond the floor']:.2f} beyond the floor), share |z| > 1.96: "
          f"{100 * report['share of |z| > 1.96']:.0f}%; the cells' Z = {reference.Z:g}, derived Z (suite false "
          f"alarm {100 * report['suite false-alarm rate']:g}%) = {report['derived Z']:.2f}; the claims' t: "
          f"{100 * reference.ALARM:g}% over {reference.family()} claims")
    print(f"{'chapter':18s} {'cells':>5s} {'max drift':>9s} {'max z':>6s} {'allowed':>8s} {'80% power':>9s} "
          f"{'floor':>5s} {'failed':>6s}")
    for chapter, c in report["chapters"].items():
        print(f"{chapter:18s} {c['cells']:5d} {c['largest drift (points)']:9.2f} {c['largest z']:6.2f} "
              f"{c['median allowed (points)']:8.2f} {c['median 80%-power change (points)']:9.2f} "
              f"{c['cells at the floor']:5d} {c['failed']:6d}")
    print("(points of a metric in %; allowed and 80% power: medians over the chapter's cells and claims)")
    print(f"claims checked: {report['claims']}; a change of the gain caught four times in five: of 2 points for "
          f"{report['claims whose 2-point change is caught 4 times in 5']}, of 5 points for "
          f"{report['claims whose 5-point change is caught 4 times in 5']} -> {args.out}")
    return report


if __name__ == "__main__":
    main()
