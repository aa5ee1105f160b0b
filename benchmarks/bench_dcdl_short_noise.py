"""Whether DCDL's noisy baselines had their best shot on test bed II: their search stopped at its first checkpoint.

DCDL's glyphs2 profile chooses each row's rate and length on a held-out training face whose labels are as noisy as
the row's (``dcdl.choose_trainings``, checkpoints every ``probe_every`` = 5 epochs). Under 30% symmetric noise the
L_Trip and L_Trip + L^L rows chose the first checkpoint on every seed (``dcdl.search_edges``): their validation
probe falls from there on, so their best may lie shorter, and the gain L^W shows over them may be a baseline
stopped too late (issue #48: a best at an edge of the grid is not a best shot). This script runs the same search
for those rows with a checkpoint after every epoch up to ``--epochs`` (the same rates, the same ladder, the same
validation face and noise draw), trains each row at what it chooses on the whole training split, as the chapter
does, and scores the probe on the unseen faces. Beside it, from the chapter's run file of the same seed: what the
row chose and scored there, and the L^W rows it is compared with. A check made after the claims' runs, to say how
far their word depends on the grid's first checkpoint; it decides no word.

    python benchmarks/bench_dcdl_short_noise.py --runs data/pending [--seeds 0 1 2] [--epochs 5] [--threads 2]

Writes results/dcdl_short_noise_cpu.json (``--out``) seed by seed, each with the commit it ran from; a seed the
file already holds under the same settings is kept and not run again (``--fresh`` starts over), so that a stopped
run resumes and later seeds add to the earlier ones.
"""

import argparse
import json
import platform
import time
from pathlib import Path

import numpy as np
import torch

from dml_tutorial import data, dcdl, evidence, experiment, noise, profiles, report

RESULTS = Path(__file__).parent / "results"
NOISE = ["symmetric", 0.3]
ROWS = {"trip": ("trip", None), "L": ("trip", "L")}  # the rows whose search stopped at its first checkpoint
COMPARED = ["L_Trip + L^W", "L_Trip + L^W-GeomLoss"]  # what the claims set against them


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
    tables = {t["table"]: t["measured"] for t in runs[-1]["tables"]}
    if dcdl.CHOICE_TABLE not in tables:
        raise SystemExit(f"the seed-{seed} run in {runs_folder} made no search (a run from before the profile "
                         "chose each row's rate and length)")
    return tables


def one_seed(cfg: dict, seed: int, epochs: int, tables: dict) -> dict:
    """The short search and its trainings for one seed, beside the run file's numbers (probe accuracy, %)."""
    splits = data.load_dataset(cfg["dataset"], split="samples", seed=seed, progress=False,
                               **cfg.get("dataset_options", {}))
    pairs, column = noise.PAIRS.get(cfg["dataset"]), noise.describe(NOISE)
    rows = {(dcdl.label(local, term), column): (local, term, NOISE) for local, term in ROWS.values()}
    short = {**cfg, "epochs": epochs, "probe_every": 1}
    fits = dcdl.row_fits(splits, rows, short, seed=seed, pairs=pairs)
    chosen, search = dcdl.choose_trainings(fits, cfg["lr_candidates"], cfg.get("lr_ladder"))
    out = {}
    for (row, col), (local, term, n) in rows.items():
        pick = chosen[(row, col)]
        run = experiment.train_and_probe(splits, dcdl.dcdl_loss(local, term),
                                         {**cfg, "lr": pick["lr"], "epochs": pick["epochs"]},
                                         k=dcdl.SAMPLES_PER_CLASS[local], noise=n, pairs=pairs, seed=seed)
        before, key = tables[dcdl.CHOICE_TABLE][f"{row} ({col})"], f"{row} ({col}), lr {pick['lr']:g}"
        out[row] = {
            "short search": {"lr": pick["lr"], "epochs": pick["epochs"], "tried": pick["tried"],
                             "validation curve at that rate": search[key],
                             "the chapter's curve at that rate": tables[dcdl.SEARCH_TABLE].get(key)},
            "short accuracy": round(100 * run.metrics["accuracy"], 2),
            "chapter's choice": {"lr": round(10 ** before["log10 rate"][0], 6), "epochs": before["epochs"][0]},
            "chapter's accuracy": round(100 * tables["Tables 1/4: local losses with and without the discrepancy "
                                                      "term"][row][col][0], 2),
        }
    measured = tables["Tables 1/4: local losses with and without the discrepancy term"]
    out.update({row: {"chapter's accuracy": round(100 * measured[row][column][0], 2)} for row in COMPARED})
    out["raw input"] = {"chapter's accuracy": round(100 * measured["raw input"][column][0], 2)}
    return out


def summary(seeds: dict) -> dict:
    """Paired by seed: each baseline's short search against the chapter's choice, and the L^W rows against the
    short baselines (95% intervals, not adjusted: a description, not a verdict)."""
    if not seeds:
        return {}
    per = [seeds[key] for key in sorted(seeds, key=int)]
    out = {}
    for row in (dcdl.label(local, term) for local, term in ROWS.values()):
        short = [s[row]["short accuracy"] / 100 for s in per]
        out[f"{row}: short search against the chapter's"] = evidence.describe(
            evidence.paired([s[row]["chapter's accuracy"] / 100 for s in per], short))
        out[f"{row}: chosen lengths (epochs)"] = [s[row]["short search"]["epochs"] for s in per]
        for other in COMPARED:
            out[f"{other} against {row}, short"] = evidence.describe(
                evidence.paired(short, [s[other]["chapter's accuracy"] / 100 for s in per]))
    return out


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", default="data/results", help="where the chapter's run files are")
    parser.add_argument("--seeds", type=int, nargs="+", default=list(range(10)))
    parser.add_argument("--epochs", type=int, default=5, help="the longest training searched, checkpoint every epoch")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--settings", type=json.loads, default=None, help="profile settings to change (dry runs)")
    parser.add_argument("--out", default=str(RESULTS / "dcdl_short_noise_cpu.json"))
    parser.add_argument("--fresh", action="store_true", help="run every seed again, ignoring --out's")
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    cfg = {**profiles.settings("dcdl", "glyphs2"), **(args.settings or {})}
    out = {"profile": "dcdl glyphs2", "settings changed": args.settings, "epochs searched": args.epochs,
           "noise": NOISE, "seeds": {}}
    before = json.loads(Path(args.out).read_text()) if Path(args.out).exists() and not args.fresh else {}
    if all(before.get(key) == out[key] for key in ("settings changed", "epochs searched", "noise")):
        out["seeds"] = before.get("seeds", {})
    for seed in args.seeds:
        if str(seed) in out["seeds"]:
            print(f"seed {seed}: kept from {args.out}")
            continue
        t0 = time.perf_counter()
        result = one_seed(cfg, seed, args.epochs, recorded_seed(Path(args.runs), seed))
        result.update(seconds=round(time.perf_counter() - t0, 1), commit=report.git_commit(), cpu=cpu(),
                      threads=args.threads, torch=torch.__version__, date=time.strftime("%Y-%m-%d"))
        out["seeds"][str(seed)] = result
        out["summary"] = summary(out["seeds"])
        Path(args.out).write_text(json.dumps(out, indent=1) + "\n")
        print(f"seed {seed}:", json.dumps(result), flush=True)
    out["summary"] = summary(out["seeds"])
    for key, value in out["summary"].items():
        print(f"{key}: {value}")
    print("->", args.out)
    return out


if __name__ == "__main__":
    np.set_printoptions(precision=3)
    main()
