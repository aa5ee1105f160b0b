"""A search's longer trial going on from the shorter one, on test bed II's own data: the noise chapter's trial
"triplet, random semi-hard, p = 0.2" at ``--lr`` (its search's rule, its validation split of held-out characters
with noisy labels), trained ``--short`` epochs keeping its last state, then ``--long`` epochs going on from it
(``experiment.run_one``'s ``after``), beside the same ``--long`` epochs trained from the start, side by side in one
run: whether every checkpoint's R@1 and every epoch's loss agree exactly, and the seconds each way.

    python benchmarks/bench_go_on.py [--seed 1] [--lr 3e-4] [--short 10] [--long 20] [--threads 1]

Needs the glyphs (rendered on first use into data/glyphs) and the seed's pretrained start (built on first use into
data/pretrained, minutes). Writes results/go_on_cpu.json.
"""

import argparse
import json
import platform
import tempfile
import time
from pathlib import Path

from dml_tutorial import data, experiment, guarantees, profiles, search, train

RESULTS = Path(__file__).parent / "results"
ROW, ARM = "triplet, random semi-hard, p = 0.2", "triplet, random semi-hard"


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--lr", type=float, default=3e-4)
    parser.add_argument("--short", type=int, default=10)
    parser.add_argument("--long", type=int, default=20)
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args(argv)
    cfg = profiles.settings("noise_guarantees", "glyphs2").replace(threads=args.threads)
    train.seed_everything(args.seed, threads=args.threads)
    splits = data.chapter_splits(cfg, "data", seed=args.seed, progress=False)
    run = guarantees.run_spec({"main": splits, "validation": search.validation_split(splits, cfg.held_out)}, "cpu")
    rule, spec = guarantees.search_rule(cfg, ARM), guarantees._row_spec(cfg, ROW, args.seed)
    short, long = (search.trial_spec(spec, rule, args.lr, None, n) for n in (args.short, args.long))
    with tempfile.TemporaryDirectory() as cache:
        began = time.perf_counter()
        experiment.run_one(short, run, cache=cache, keep=True)
        middle = time.perf_counter()
        went_on = experiment.run_one(long, run, cache=cache, after=short)
        ended = time.perf_counter()
    fresh = experiment.run_one(long, run)  # no cache: from the start
    from_start = time.perf_counter() - ended
    pairs = [(a.get("R@1"), b.get("R@1"), a["loss"], b["loss"]) for a, b in
             zip(went_on.history.records, fresh.history.records, strict=True)]
    same = all(r1 == r2 and l1 == l2 for r1, r2, l1, l2 in pairs)
    out = {"device": f"{platform.machine()} CPU, {platform.processor() or 'unknown'}", "seed": args.seed,
           "lr": args.lr, "short": args.short, "long": args.long, "threads": args.threads,
           "R@1 gone on": [r for r, *_ in pairs if r is not None], "R@1 from the start": [r for _, r, *_ in pairs
                                                                                        if r is not None],
           "identical": same, "seconds: short": middle - began, "seconds: long, gone on": ended - middle,
           "seconds: long, from the start": from_start}
    print(f"R@1 gone on       {out['R@1 gone on']}\nR@1 from the start {out['R@1 from the start']}")
    print(f"every checkpoint and loss identical: {same}; the longer trial took {ended - middle:.0f} s going on, "
          f"{from_start:.0f} s from the start ({(ended - middle) / from_start:.2f}x)")
    RESULTS.mkdir(exist_ok=True)
    path = RESULTS / "go_on_cpu.json"
    path.write_text(json.dumps(out, indent=1))
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
