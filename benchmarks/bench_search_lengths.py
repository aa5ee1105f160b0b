"""What the searches' lengthening costs, and what going on from the shorter trial saves: for every committed test
bed II run file whose rows chose their rate, length and knob by the one search (``choices["best shot"]``), the
epochs its trials trained, and the epochs a longer trial no longer trains again where it goes on from the same
trial at the shorter length (``experiment.run_one``'s ``after``; the same curve, ``tests/test_experiment.py``).

A trial lengthened from 5 to 10 to 20 epochs trained 5 + 10 + 20 = 35 epochs; going on from each shorter one, 20.
The searches' epochs are most of a sweep's training (the grid's own runs, one a row at its chosen length, are the
rest), so the saving is an upper bound on the sweep's. Counted from what the runs recorded, not timed.

    python benchmarks/bench_search_lengths.py [--profile glyphs2]

Writes results/search_lengths.json.
"""

import argparse
import json
from collections import defaultdict
from pathlib import Path

from dml_tutorial import report

RESULTS = Path(__file__).parent / "results"


def lengths_by_trial(choice: dict) -> list[list[int]]:
    """The lengths each trial of one row's search trained, grouped by its other values (rate, knob)."""
    out = defaultdict(list)
    for trial in choice["trials"]:
        out[tuple((k, v) for k, v in sorted(trial.items()) if k not in ("epochs", "curve"))].append(trial["epochs"])
    return [sorted(lengths) for lengths in out.values()]


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--profile", default="glyphs2")
    args = parser.parse_args(argv)
    rows = []
    for chapter in sorted({r["chapter"] for r in report.load_runs()}):
        runs = [r for r in report.load_runs() if r["chapter"] == chapter and r.get("profile") == args.profile]
        trained = saved = 0
        for run in runs:
            for choice in (run.get("choices") or {}).get("best shot", {}).values():
                for lengths in lengths_by_trial(choice):
                    trained += sum(lengths)
                    saved += sum(lengths[:-1])  # each longer trial goes on from the one before it
        if trained:
            rows.append({"chapter": chapter, "run files": len(runs), "search epochs": trained,
                         "epochs gone on from": saved, "share saved": saved / trained})
    for row in rows:
        print(f"{row['chapter']:18s} {row['run files']:3d} run files: {row['search epochs']:6d} search epochs, "
              f"{row['epochs gone on from']:5d} ({100 * row['share saved']:.0f}%) no longer trained again")
    RESULTS.mkdir(exist_ok=True)
    out = RESULTS / "search_lengths.json"
    out.write_text(json.dumps({"profile": args.profile, "rows": rows}, indent=1))
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
