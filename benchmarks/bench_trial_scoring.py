"""What a search trial's final scoring cost, measured side by side on test bed II's real validation splits: the
first trial of the noise chapter's search (GlyphNet from the seed's pretrained start, its held-out characters:
Recall@1 at every checkpoint) and of DCDL's (a GlyphNet from scratch, its held-out face: the linear probe at every
checkpoint), each trained as the chapter's runner trains it with the final scoring (``score=True``: the training
split embedded, then Recall@K, k-means NMI and F1, or DCDL's probe fitted again) and without (``score=False``, what
the runners pass for a trial since the search reads only the checkpoints' curve, whose last point is the last
epoch), alternately, on one thread as a sweep point at ``--jobs 2`` runs. The two must record the same curve.

The figure: the seconds the final scoring added to a trial (the medians' difference), beside the trial's seconds a
training epoch with its checkpoints, and the share of a trial of the search's first length (10 epochs on both
chapters' glyphs2 profiles) it was: a projection from the epochs timed here.

    python benchmarks/bench_trial_scoring.py [--epochs 2] [--repeats 2] [--seed 0] [--chapters noise_guarantees dcdl]

Writes results/trial_scoring_cpu.json.
"""

import argparse
import dataclasses
import json
import platform
import statistics
import time
from pathlib import Path

from bench_eval_views import cpu_name

RESULTS = Path(__file__).parent / "results"


def noise_trial(seed: int, epochs: int):
    """``run(score) -> Run``: the noise chapter's first search trial, as ``guarantees._train_spec`` trains it."""
    from dml_tutorial import data, experiment, guarantees, profiles, search
    from dml_tutorial import noise as label_noise

    cfg = profiles.settings("noise_guarantees", "glyphs2").replace(threads=1)
    spec = guarantees.best_shot_trials(cfg, seed)[0]
    s, o = spec.settings.replace(epochs=epochs, threads=1), spec.options
    splits = search.validation_split(data.chapter_splits(cfg, seed=seed), held_out=cfg.held_out)
    val = dataclasses.replace(splits, test=label_noise.held_out_noise(splits.test, o.get("noise"), spec.seed))

    def run(score: bool):
        return experiment.train_and_retrieve(val, spec.method, s, p=s.p, k=s.k, seed=spec.seed, device="cpu",
                                             noise=o.get("noise"), evaluate=experiment.recall_checkpoint(
                                                 val.test, o["curve"], s), score=score)

    return run, spec.row, s.eval_every


def dcdl_trial(seed: int, epochs: int):
    """``run(score) -> Run``: DCDL's first search trial, as ``dcdl._train_spec`` trains it."""
    from dml_tutorial import data, dcdl, experiment, profiles

    cfg = profiles.settings("dcdl", "glyphs2").replace(threads=1)
    spec = dcdl.best_shot_trials(cfg, seed)[0]
    s, o = spec.settings.replace(epochs=epochs, threads=1), spec.options
    val = dcdl.validation_split(data.chapter_splits(cfg, seed=seed), s.held_out_faces or 1, o["noise"], spec.seed)

    def run(score: bool):
        return experiment.train_and_probe(val, spec.method, s, k=o["k"], seed=spec.seed, device="cpu",
                                          probe_every=s.eval_every, score=score)

    return run, spec.row, s.eval_every


TRIALS = {"noise_guarantees": noise_trial, "dcdl": dcdl_trial}
FIRST_LENGTH = 10  # epochs: both profiles' search_lengths[0]


def measure(chapter: str, seed: int, epochs: int, repeats: int) -> dict:
    run, row, every = TRIALS[chapter](seed, epochs)
    seconds, curves = {True: [], False: []}, {True: [], False: []}
    for _ in range(repeats):
        for score in (True, False):
            start = time.perf_counter()
            out = run(score)
            seconds[score].append(time.perf_counter() - start)
            curves[score].append([{k: v for k, v in r.items() if k != "seconds"} for r in out.history.records])
    if any(c != curves[True][0] for c in curves[True] + curves[False]):
        raise AssertionError(f"{chapter}: the trial's curve differs with and without the final scoring: {curves}")
    with_, without = statistics.median(seconds[True]), statistics.median(seconds[False])
    added, per_epoch = with_ - without, without / epochs
    return {"row": row, "epochs": epochs, "eval_every": every, "seconds with final scoring": seconds[True],
            "seconds without": seconds[False], "final scoring s": round(added, 2),
            "trial s per epoch (with its checkpoints)": round(per_epoch, 2),
            f"share of a {FIRST_LENGTH}-epoch trial": round(added / (added + FIRST_LENGTH * per_epoch), 3)}


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--chapters", nargs="+", default=list(TRIALS), choices=list(TRIALS))
    args = parser.parse_args(argv)
    from dml_tutorial import train

    train.seed_everything(0, threads=1)
    out = {"machine": cpu_name(), "python": platform.python_version(),
           **{chapter: measure(chapter, args.seed, args.epochs, args.repeats) for chapter in args.chapters}}
    for chapter in args.chapters:
        r = out[chapter]
        print(f"{chapter}: the final scoring added {r['final scoring s']} s to a trial of {r['epochs']} epochs "
              f"({r['trial s per epoch (with its checkpoints)']} s an epoch with its checkpoints): "
              f"{100 * r[f'share of a {FIRST_LENGTH}-epoch trial']:.1f}% of a {FIRST_LENGTH}-epoch trial")
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "trial_scoring_cpu.json").write_text(json.dumps(out, indent=1) + "\n")
    return out


if __name__ == "__main__":
    main()
