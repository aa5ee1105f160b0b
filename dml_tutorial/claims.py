"""Each paper's central claims, tested on recorded runs: the comparison, our paired gain with its 95% interval, the
paper's own gain beside it, and the verdict in the book's one vocabulary (:mod:`dml_tutorial.evidence`).

A claim names a recorded table (what :func:`dml_tutorial.report.record` wrote), the baseline row, the row the paper
says is better, and the column compared. :func:`assess` reads them from run files (a chapter's own record
``notebooks/<name>.results.json`` or the sweeps' ``data/results/<chapter>/*.json``), pairs the two rows seed by
seed, and takes the paper's gain from the quoted paper numbers stored with the same table (``None`` when the paper
gives only a direction, e.g. curves without numbers). Every chapter makes several comparisons, so the table also
gives Benjamini-Hochberg adjusted p-values over the chapter's claims: a lone "reproduced" among many comparisons
may be chance.

    rows = claims.assess("ecaml", report.load_runs()["ecaml"])  # one row per claim, as a DataFrame
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy import stats

from . import evidence
from .experiment import REFERENCES  # the reference rows every main table carries
from .plots import label_tex


@dataclass(frozen=True)
class Claim:
    """``row`` beats ``base`` on ``column`` of ``table`` (a recorded table's exact name)."""

    text: str
    table: str
    base: str
    row: str
    column: str


def _dcdl() -> list[Claim]:
    table = "Tables 1/4: local losses with and without the discrepancy term"
    return [Claim(f"+ L^{term} beats L_Trip ({column})", table, "L_Trip", f"L_Trip + L^{term}", column)
            for term in ("W", "L") for column in ("clean", "sym 0.3", "asym 0.2")]


def _ecaml() -> list[Claim]:
    table = "Tables 4/5: unseen classes with and without EC"
    return [Claim(f"EC improves {base} (unseen R@1)", table, base, row, "R@1")
            for base, row in (("Triplet", "ECAML(Tri)"), ("N-Pair", "ECAML(N-Pair)"), ("Binomial", "ECAML(Binomial)"))]


def _eps() -> list[Claim]:
    table = "Table 2: unseen classes"
    even_odd = [Claim("EPS keeps the sub-classes of an even/odd class apart (train R@1)", "Table 1: even/odd",
                      "Triplet", "EPS + Triplet", "train R@1")]
    return even_odd + [Claim(f"EPS improves {base} (unseen R@1)", table, base, f"EPS + {base}", "R@1")
                       for base in ("Trip. + SH", "Dist-Margin", "MS")]


def _noise() -> list[Claim]:
    table = "Recall@1 and NMI under symmetric label noise"
    return [Claim(f"random beats fixed semi-hard mining under noise (R@1, {column})", table,
                  "triplet, fixed semi-hard", "triplet, random semi-hard", column)
            for column in ("p = 0.2", "p = 0.4", "p = 0.6")]


def _cbswr() -> list[Claim]:
    table = "Tables 1/2 and 5/6: ablation of the loss terms"
    return [Claim(f"CBSwR beats {base} (R@1)", table, base, "CBSwR", "R@1") for base in ("SME", "CBS")]


#: Each chapter's short name, for tables.
NAMES = {"dcdl": "Sinkhorn DCDL", "cbswr": "CBSwR", "eps": "EPS", "ecaml": "ECAML", "noise_guarantees": "Noise guarantees"}
#: The claims tested in each chapter (the chapters' own conclusions test more, with their own cells).
CLAIMS = {"dcdl": _dcdl(), "cbswr": _cbswr(), "eps": _eps(), "ecaml": _ecaml(), "noise_guarantees": _noise()}


def _tables(runs: list[dict]) -> dict:
    from .report import merge_seeds  # report imports plots; keep this module importable on its own

    return merge_seeds(runs)


def paper_gain(paper: dict, claim: Claim) -> float | None:
    """The paper's own gain of ``claim.row`` over ``claim.base`` as a fraction, from the quoted numbers (in %)."""
    a, b = paper.get(claim.base, {}).get(claim.column), paper.get(claim.row, {}).get(claim.column)
    return None if a is None or b is None else (b - a) / 100


def assess(chapter: str, runs: list[dict]) -> pd.DataFrame:
    """One row per claim of ``chapter`` that ``runs`` recorded: our gain (mean, 95% interval, p, seeds, minimum
    detectable effect, all in points), the paper's gain (points), the verdict and its reason, and the
    Benjamini-Hochberg adjusted p-value over the chapter's claims. Claims whose table or rows the runs lack are
    left out (an empty frame when none is there)."""
    tables, rows = _tables(runs), []
    for claim in CLAIMS.get(chapter, []):
        if claim.table not in tables:
            continue
        measured, paper = tables[claim.table]
        if claim.column not in measured.get(claim.base, {}) or claim.column not in measured.get(claim.row, {}):
            continue
        diff = evidence.paired(measured[claim.base][claim.column], measured[claim.row][claim.column])
        gain = paper_gain(paper, claim)
        word, reason = evidence.verdict(diff, gain)
        rows.append({"claim": claim.text, "ours": 100 * diff["mean"], "low": 100 * diff["ci"][0],
                     "high": 100 * diff["ci"][1], "p": diff["p"], "seeds": diff["n"], "mde": 100 * diff["mde"],
                     "paper": None if gain is None else 100 * gain, "verdict": word, "reason": reason})
    frame = pd.DataFrame(rows, columns=["claim", "ours", "low", "high", "p", "seeds", "mde", "paper", "verdict",
                                        "reason"])
    ps = frame["p"].to_numpy(dtype=float)
    frame["q (BH)"] = np.nan
    if np.isfinite(ps).any():
        frame.loc[np.isfinite(ps), "q (BH)"] = stats.false_discovery_control(ps[np.isfinite(ps)])
    return frame


def above_references(runs: list[dict], chapter: str) -> pd.DataFrame:
    """For each claim's table and column: the best of the rows the claims compare against the two reference rows
    (mean over seeds, in %), so a reader sees whether training learned anything the raw input does not already
    hold."""
    tables, out = _tables(runs), []
    for table, column in dict.fromkeys((c.table, c.column) for c in CLAIMS.get(chapter, [])):
        if table not in tables:
            continue
        measured = tables[table][0]
        compared = {name for c in CLAIMS[chapter] if c.table == table for name in (c.base, c.row)}
        means = {row: 100 * float(np.mean(cols[column])) for row, cols in measured.items()
                 if column in cols and (row in compared or row in REFERENCES)}
        trained = {row: m for row, m in means.items() if row not in REFERENCES}
        if not trained or not all(r in means for r in REFERENCES):
            continue
        best = max(trained, key=trained.get)
        out.append({"table": table, "column": column, "best trained row": best, "best trained": trained[best],
                    **{r: means[r] for r in REFERENCES}})
    return pd.DataFrame(out, columns=["table", "column", "best trained row", "best trained", *REFERENCES])


def markdown(frame: pd.DataFrame) -> str:
    """The verdict table as Markdown: claim, our gain with its interval, the paper's gain, verdict, reason."""
    lines = ["| claim | ours (points, 95% CI) | paper (points) | verdict | q (BH) | why |", "|---|---|---|---|---|---|"]
    for r in frame.to_dict("records"):
        paper = "direction only" if r["paper"] is None or pd.isna(r["paper"]) else f"{r['paper']:+.1f}"
        q = "" if pd.isna(r["q (BH)"]) else f"{r['q (BH)']:.2f}"
        ours = f"{r['ours']:+.1f} ({r['low']:+.1f} to {r['high']:+.1f}, {r['seeds']} seeds)"
        lines.append(f"| {label_tex(r['claim'])} | {ours} | "
                     f"{paper} | **{r['verdict']}** | {q} | {r['reason']} |")
    return "\n".join(lines)
