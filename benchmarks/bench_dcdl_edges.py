"""Whether DCDL's rows on test bed II had their best shot where their search stopped at an edge of its grid.

DCDL's glyphs2 profile chooses each row's rate and length on a held-out training face whose labels are as noisy as
the row's (its own search then, :data:`OWN_SEARCH`: checkpoints every 5 epochs up to 30; issue #86 replaced it with
the one search of ``dml_tutorial.search``, which lengthens a trial while its best is its last checkpoint). Where a row's choice
lies at an edge of that grid (``dcdl.search_edges``) its best may lie beyond it (issue #48: a best at an edge is not
a best shot), and a claim's gain may then be a baseline stopped too early or too late. Two checks, each the same
search for some rows on a wider grid of lengths, each row then trained at its choice on the whole training split,
as the chapter does, and its probe scored on the unseen faces, beside the chapter's run file of the same seed:

- ``short-noisy``: under 30% symmetric noise the L_Trip and L_Trip + L^L rows chose the first checkpoint on every
  seed. Their search again with a checkpoint after every epoch up to 5, over the profile's rates and ladder.
- ``long-clean``: on clean labels most rows chose the last checkpoint (30 epochs), still climbing. Each row's search
  again up to 60 epochs at the rate the chapter chose for it (the length is in question here, not the rate: a
  walk over rates at 60 epochs would cost about four times as much).

A check made after the claims' runs, to say how far their words depend on the grid's edges; it decides no word.

    python benchmarks/bench_dcdl_edges.py short-noisy --runs data/pending [--seeds 0 1 2] [--threads 2]
    python benchmarks/bench_dcdl_edges.py long-clean --runs data/results --seeds 0 1 2 [--rows L_Trip ...]

Writes results/dcdl_edges_<check>_cpu.json (``--out``) seed by seed, each with the commit it ran from; a seed the
file already holds under the same settings is kept and not run again (``--fresh`` starts over), so that a stopped
run resumes and later seeds add to the earlier ones. ``--rows`` naming a row a kept seed lacks trains only that row
and adds it to the seed, with its own commit and time (``added``); each comparison of the summary pairs only the
seeds that hold its rows.
"""

import argparse
import json
import platform
import time
from functools import partial
from pathlib import Path

import numpy as np
import torch

from dml_tutorial import data, dcdl, evidence, experiment, ladder, noise, profiles, report
from dml_tutorial.tables import DCDL_MAIN
from dml_tutorial.tables import key as table_key

RESULTS = Path(__file__).parent / "results"
TABLE = DCDL_MAIN.id  # the chapter's main table, as a run file keys it
BASELINE = "L_Trip"
ROWS = {dcdl.label("trip", term): ("trip", term) for term in (None, "L", "W", "W-GeomLoss")}
#: The chapter's own search of the runs this benchmark checks (before issue #86's one search): each row's rate from
#: three starts, walked along the ladder until flanked, its length the best of checkpoints every 5 epochs up to 30.
OWN_SEARCH = {"lr_candidates": (3e-4, 1e-3, 3e-3), "lr_ladder": (1e-4, 3e-4, 1e-3, 3e-3, 1e-2), "probe_every": 5}
CHECKS = {  # the rows searched again, in what column, up to how many epochs, probed how often, at which rates
    "short-noisy": {"noise": ["symmetric", 0.3], "rows": ["L_Trip", "L_Trip + L^L"], "epochs": 5,
                    "probe_every": 1, "rates": "the profile's"},
    "long-clean": {"noise": None, "rows": list(ROWS), "epochs": 60, "probe_every": 5, "rates": "the chapter's"},
}


# --- the chapter's own search before issue #86 (dcdl.row_fits, dcdl.choose_trainings), kept for this check ---------
def row_fits(splits, rows: dict, cfg: dict, *, seed: int = 0, pairs=None, device="auto") -> dict:
    """``{key: fit(lr) -> Run}`` for :func:`choose_trainings`: each row ``key: (local, term, noise)`` of Tables 1/4
    trained at ``lr`` on the :func:`validation_split` of its own noise (``cfg["held_out_faces"]`` faces), for
    ``cfg["epochs"]`` epochs with the probe every ``cfg["probe_every"]``; ``seed`` draws the noise, the
    initialisation and the batches, as for the row's own run."""

    def fit(lr, local, term, noise):
        val = dcdl.validation_split(splits, cfg["held_out_faces"], noise, seed, pairs)
        return experiment.train_and_probe(val, dcdl.dcdl_loss(local, term), {**cfg, "lr": lr},
                                          k=dcdl.SAMPLES_PER_CLASS[local], seed=seed, device=device,
                                          probe_every=cfg["probe_every"])

    return {key: partial(fit, local=local, term=term, noise=noise) for key, (local, term, noise) in rows.items()}


def choose_trainings(fits: dict, rates, rate_ladder=None, metric: str = "probe accuracy") -> tuple[dict, dict]:
    """Each row's learning rate and training length, chosen on a validation split (issue #50: every row at Adam
    1e-3 for a fixed length is no row's best shot, and under label noise the length decides how much noise a
    network memorises). ``fits`` maps a row to ``fit(lr) -> Run``, one training whose history holds ``metric``
    at its checkpoints (:func:`dml_tutorial.experiment.train_and_probe` with ``probe_every``). A rate scores its
    best checkpoint; the rates walk from ``rates`` along ``rate_ladder`` until the best is flanked
    (:func:`dml_tutorial.ladder.walk`); at the best rate the length is its best checkpoint (ties: the first
    tried, the shorter). Returns ``(chosen, table)``: ``chosen[row] = {"lr": rate, "epochs": n, "tried": [the
    rates in the order tried]}``, and ``{"row, lr x": {"n epochs": [value]}}`` for :func:`dml_tutorial.report.record`,
    the rates in increasing order (a row ``(name, column)`` reads "name (column)")."""
    if not fits:
        raise ValueError("choose_trainings needs at least one row to fit")
    chosen, table = {}, {}
    for row, fit in fits.items():
        curves = {}

        def score(lr, fit=fit, curves=curves):
            records = fit(lr).history.records
            curves[lr] = {r["epoch"]: r[metric] for r in records if metric in r}
            if not curves[lr]:
                raise ValueError(f"the run at lr {lr:g} recorded no {metric!r}: train it with probe_every")
            return max(curves[lr].values())

        scores = ladder.walk(score, rates, rate_ladder)
        best = max(scores, key=scores.get)
        curve = curves[best]
        chosen[row] = {"lr": best, "epochs": max(curve, key=curve.get), "tried": list(scores)}
        name = f"{row[0]} ({row[1]})" if isinstance(row, tuple) else str(row)
        table.update({f"{name}, lr {lr:g}": {f"{e} epochs": [v] for e, v in curves[lr].items()}
                      for lr in sorted(curves)})
    return chosen, table


def cpu() -> str:
    """The CPU's model name and whether it has AVX-512 (its numbers differ between CPU families)."""
    info = Path("/proc/cpuinfo").read_text() if Path("/proc/cpuinfo").exists() else ""
    name = next((line.split(":", 1)[1].strip() for line in info.splitlines() if line.startswith("model name")),
                platform.processor() or "unknown")
    return name + (", AVX-512" if " avx512f" in info else "")


def recorded_seed(runs_folder: Path, seed: int) -> dict:
    """The chapter's glyphs2 run file of ``seed``, as ``{table: measured}``; it must hold the search's choice."""
    runs = [r for r in report.runs_of("dcdl", "glyphs2", runs_folder) if r["parameters"].get("SEED") == seed]
    if not runs:
        raise SystemExit(f"no dcdl glyphs2 run of seed {seed} in {runs_folder}")
    tables = {table_key(t): t["measured"] for t in runs[-1]["tables"]}
    if dcdl.CHOICE_TABLE.id not in tables:
        raise SystemExit(f"the seed-{seed} run in {runs_folder} made no search (a run from before the profile "
                         "chose each row's rate and length)")
    return tables


def one_seed(cfg: dict, seed: int, check: dict, rows: list, tables: dict) -> dict:
    """One check's searches and trainings for one seed, beside the run file's numbers (probe accuracy, %)."""
    splits = data.load_dataset(cfg["dataset"], split="samples", seed=seed, progress=False,
                               **cfg.get("dataset_options", {}))
    pairs, column = noise.PAIRS.get(cfg["dataset"]), noise.describe(check["noise"])
    wider = {**cfg.to_dict(), "epochs": check["epochs"], "probe_every": check["probe_every"]}
    out = {row: {"chapter's accuracy": round(100 * tables[TABLE][row][column][0], 2)} for row in [*ROWS, "raw input"]}
    for row in rows:
        local, term = ROWS[row]
        before, key = tables[dcdl.CHOICE_TABLE.id][f"{row} ({column})"], (row, column)
        chapter_lr = float(f"{10 ** before['log10 rate'][0]:.3g}")  # the run file records its log10
        fits = row_fits(splits, {key: (local, term, check["noise"])}, wider, seed=seed, pairs=pairs)
        if check["rates"] == "the chapter's":
            start, rungs = [chapter_lr], None
        else:
            start, rungs = OWN_SEARCH["lr_candidates"], OWN_SEARCH["lr_ladder"]
        chosen, search = choose_trainings(fits, start, rungs)
        pick = chosen[key]
        run = experiment.train_and_probe(splits, dcdl.dcdl_loss(local, term),
                                         cfg.replace(lr=pick["lr"], epochs=pick["epochs"]),
                                         k=dcdl.SAMPLES_PER_CLASS[local], noise=check["noise"], pairs=pairs,
                                         seed=seed)
        curve = f"{row} ({column}), lr {pick['lr']:g}"
        out[row] = {
            "search": {"lr": pick["lr"], "epochs": pick["epochs"], "tried": pick["tried"],
                       "validation curve at that rate": search[curve],
                       "the chapter's curve at that rate": tables[dcdl.SEARCH_TABLE.id].get(curve)},
            "accuracy": round(100 * run.metrics["accuracy"], 2),
            "chapter's choice": {"lr": chapter_lr, "epochs": before["epochs"][0]},
            **out[row],
        }
    return out


def searched(seed: dict) -> set:
    """The rows a seed of the file holds a wider search's training of."""
    return {row for row in ROWS if "accuracy" in seed.get(row, {})}


def summary(seeds: dict, rows: list | None = None) -> dict:
    """Paired by seed (95% intervals, not adjusted: a description, not a verdict): each row of ``rows`` (default:
    the rows the first seed holds) searched again against the chapter's training of it; and each term's row against
    the baseline, with the wider search's accuracy for the rows of ``rows`` (the chapter's for the others), beside
    the same difference as the chapter measured it. Each comparison pairs the seeds that hold its rows of ``rows``
    (a seed still missing one would pair the chapter's training with the wider search's), so their counts may
    differ while rows are being added."""
    if not seeds:
        return {}
    ordered = [seeds[key] for key in sorted(seeds, key=int)]
    wanted = set(rows) if rows is not None else searched(ordered[0])

    def holding(*names):
        return [s for s in ordered if wanted & set(names) <= searched(s)]

    def value(s, row, fresh=True):
        return (s[row]["accuracy"] if fresh and row in wanted else s[row]["chapter's accuracy"]) / 100

    out = {}
    for row in ROWS:
        if row in wanted and (per := holding(row)):
            out[f"{row}: searched again against the chapter's"] = evidence.describe(
                evidence.paired([value(s, row, False) for s in per], [value(s, row) for s in per]))
            out[f"{row}: chosen lengths (epochs)"] = [s[row]["search"]["epochs"] for s in per]
    for row in ROWS:
        if row != BASELINE and (per := holding(BASELINE, row)):
            now = evidence.paired([value(s, BASELINE) for s in per], [value(s, row) for s in per])
            then = evidence.paired([value(s, BASELINE, False) for s in per], [value(s, row, False) for s in per])
            out[f"{row} against {BASELINE}"] = f"{evidence.describe(now)}; as the chapter measured it: " + \
                evidence.describe(then)
    return out


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("check", choices=sorted(CHECKS))
    parser.add_argument("--runs", default="data/results", help="where the chapter's run files are")
    parser.add_argument("--seeds", type=int, nargs="+", default=list(range(10)))
    parser.add_argument("--rows", nargs="+", choices=list(ROWS), help="a part of the check's rows")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--settings", type=json.loads, default=None, help="profile settings to change (dry runs)")
    parser.add_argument("--out", help="default: results/dcdl_edges_<check>_cpu.json")
    parser.add_argument("--fresh", action="store_true", help="run every seed again, ignoring --out's")
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    check = CHECKS[args.check]
    rows = [row for row in check["rows"] if row in (args.rows or check["rows"])]
    cfg = profiles.settings("dcdl", "glyphs2", args.settings)
    target = Path(args.out or RESULTS / f"dcdl_edges_{args.check}_cpu.json")
    out = {"profile": "dcdl glyphs2", "check": args.check, **check, "rows": rows, "settings changed": args.settings,
           "seeds": {}}
    before = json.loads(target.read_text()) if target.exists() and not args.fresh else {}
    if all(before.get(key) == value for key, value in out.items() if key not in ("seeds", "rows")):
        out["seeds"] = before.get("seeds", {})
        out["rows"] = [row for row in check["rows"] if row in rows or row in before.get("rows", [])]
    commit = report.git_commit()  # the tree it ran from: read once, before it writes its own (tracked) results
    for seed in args.seeds:
        kept = out["seeds"].get(str(seed), {})
        todo = [row for row in rows if row not in searched(kept)]
        if not todo:
            print(f"seed {seed}: kept from {target}")
            continue
        t0 = time.perf_counter()
        result = one_seed(cfg, seed, check, todo, recorded_seed(Path(args.runs), seed))
        stamp = {"seconds": round(time.perf_counter() - t0, 1), "commit": commit, "cpu": cpu(),
                 "threads": args.threads, "torch": torch.__version__, "date": time.strftime("%Y-%m-%d")}
        if kept:  # rows added to a seed the file holds: each with its own stamp
            kept.update({row: {**result[row], "added": stamp} for row in todo})
        else:
            out["seeds"][str(seed)] = kept = {**result, **stamp}
        out["summary"] = summary(out["seeds"], out["rows"])
        target.write_text(json.dumps(out, indent=1) + "\n")
        print(f"seed {seed} ({stamp['seconds']} s):", json.dumps({row: kept[row] for row in todo}), flush=True)
    out["summary"] = summary(out["seeds"], out["rows"])
    for key, value in out["summary"].items():
        print(f"{key}: {value}")
    print("->", target)
    return out


if __name__ == "__main__":
    np.set_printoptions(precision=3)
    main()
