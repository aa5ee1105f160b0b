"""How far the chapters' trained numbers drift on "another machine", and what nbval's tolerance can then catch.

``make test`` runs nbval with the other-machine emulation (``notebooks/conftest.py``) and every
:func:`dml_tutorial.reference.check` appends each table cell's committed and fresh values per seed to
``_build/nbval-drift.jsonl``. This script reads that file and reports, per chapter:

- the drift of each cell's mean, in points and in standard errors of a difference of two means,
  ``z = |mean(fresh) - mean(committed)| / (s * sqrt(2 / n))`` with ``s`` pooled over both runs (the scale of the
  tolerance rule of :mod:`dml_tutorial.reference`);
- the tolerance the rule allows (``max(FLOOR, Z * s * sqrt(2 / n))``), and the **80%-power change**: the smallest
  shift of a cell's true mean that the check flags four times in five, if a re-run's mean scatters as a fresh draw
  of ``n`` seeds (``N(shift, s^2 * 2 / n)``);
- the same for each **claim**'s paired difference (the number a verdict reads), and how many claims the check
  catches four times in five when their gain moves by 5 points;
- the Z a derivation gives: under the same model, the Bonferroni bound that keeps the whole suite's chance of a
  false alarm at 1% over all the cells and claims checked, set beside the largest z measured, and the largest z of
  a cell that drifted beyond the floor (only there does Z decide: a cell inside the floor passes at any z).
  ``dml_tutorial.reference.Z`` is this Z rounded up to a tenth (``tests/test_reference.py`` checks it).

    python benchmarks/bench_nbval_drift.py [_build/nbval-drift.jsonl] [--out benchmarks/results/nbval_drift.json]

Only cells with at least two seeds on both sides count (a single value gets the floor, which the report lists
apart). The figures describe one emulated machine; they are a derivation to re-run, not a proof for every CPU.
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
    """Each logged cell with its drift: ``d`` (points), ``se`` (points), ``z``, ``allowed`` (points), ``n``."""
    out = []
    for line in path.read_text().splitlines():
        if not line.strip():
            continue
        c = json.loads(line)
        a, b = np.asarray(c["committed"], float), np.asarray(c["fresh"], float)
        if np.isnan(a).any() or np.isnan(b).any():
            continue
        n = min(len(a), len(b))
        se = np.sqrt((a.var(ddof=1) + b.var(ddof=1)) / 2 * 2 / n) if n >= 2 else float("nan")
        d = abs(b.mean() - a.mean())
        out.append({**c, "n": n, "d": 100 * d, "se": 100 * se, "allowed": 100 * c["allowed"],
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


def summarise(rows: list[dict], suite_alarm: float = 0.01) -> dict:
    """Per chapter and overall: cells, drift and power figures, and the derived Z."""
    by = defaultdict(list)
    for r in rows:
        r["power80"] = power_change(r["allowed"], r["se"]) if r["n"] >= 2 else r["allowed"]
        by[r["chapter"]].append(r)
    seeded = [r for r in rows if r["n"] >= 2 and np.isfinite(r["z"])]
    claims = [r for r in rows if "claim" in r]
    z_derived = float(stats.norm.isf(suite_alarm / 2 / max(1, len(seeded))))
    report = {"cells": len(rows), "cells with seeds": len(seeded), "rule": {"Z": reference.Z,
              "floor (points)": 100 * reference.FLOOR}, "suite false-alarm rate": suite_alarm,
              "derived Z": z_derived, "largest z": float(max((r["z"] for r in seeded), default=float("nan"))),
              "largest z beyond the floor": float(max((r["z"] for r in seeded if r["d"] > 100 * reference.FLOOR),
                                                      default=0.0)),
              "share of |z| > 1.96": float(np.mean([r["z"] > 1.96 for r in seeded])) if seeded else float("nan"),
              "claims": len(claims),
              "claims whose 5-point change is caught 4 times in 5": int(sum(r["power80"] <= 5 for r in claims)),
              "chapters": {}}
    for chapter, rs in sorted(by.items()):
        zs = [r["z"] for r in rs if r["n"] >= 2 and np.isfinite(r["z"])]
        report["chapters"][chapter] = {
            "cells": len(rs), "largest drift (points)": float(max(r["d"] for r in rs)),
            "median drift (points)": float(np.median([r["d"] for r in rs])),
            "largest z": float(max(zs, default=float("nan"))),
            "median allowed (points)": float(np.median([r["allowed"] for r in rs])),
            "median 80%-power change (points)": float(np.median([r["power80"] for r in rs])),
            "cells at the floor": int(sum(r["allowed"] <= 100 * reference.FLOOR + 1e-9 for r in rs)),
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
    print(f"{report['cells']} checked cells ({report['cells with seeds']} with seeds); largest z "
          f"{report['largest z']:.2f} ({report['largest z beyond the floor']:.2f} beyond the floor), share |z| > 1.96: {100 * report['share of |z| > 1.96']:.0f}%; the rule's "
          f"Z = {reference.Z:g}, derived Z (suite false alarm {100 * report['suite false-alarm rate']:g}%) = "
          f"{report['derived Z']:.2f}")
    print(f"{'chapter':18s} {'cells':>5s} {'max drift':>9s} {'max z':>6s} {'allowed':>8s} {'80% power':>9s} "
          f"{'floor':>5s} {'failed':>6s}")
    for chapter, c in report["chapters"].items():
        print(f"{chapter:18s} {c['cells']:5d} {c['largest drift (points)']:9.2f} {c['largest z']:6.2f} "
              f"{c['median allowed (points)']:8.2f} {c['median 80%-power change (points)']:9.2f} "
              f"{c['cells at the floor']:5d} {c['failed']:6d}")
    print("(points of a metric in %; allowed and 80% power: medians over the chapter's cells and claims)")
    print(f"claims checked: {report['claims']}; a 5-point change of the gain is caught four times in five for "
          f"{report['claims whose 5-point change is caught 4 times in 5']} of them -> {args.out}")
    return report


if __name__ == "__main__":
    main()
