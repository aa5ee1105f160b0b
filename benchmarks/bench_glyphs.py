"""Which network for the glyph test bed: training images per second at 32 px on the CPU, and what each one learns.

For each candidate (the package's MLP with 64 and 512 hidden units, its small ConvNet) on a split of 2,000 glyph
characters, 1,000 seen and 1,000 unseen, 22 images each (``data.load_dataset("glyphs", n_classes=2000,
seen_fraction=0.5)``; the profiles' default keeps 500 unseen, which is cheaper to score):

- training images/s: ``--steps`` Adam steps of the triplet loss (random semi-hard negatives) on P x K = 32 x 4
  batches, after 5 warm-up steps, on ``--threads`` threads;
- unseen-character Recall@1 after ``--steps`` steps, beside the raw input and the untrained network (the gate of
  the verdicts: does training beat doing nothing?), for ``--seeds`` seeds;
- the scoring cost on its 22,000 unseen images: Recall@1 and MAP@R on all of them, NMI by k-means on the first
  100 unseen characters as the glyph profiles score it (``cluster_classes``; 1,000 clusters over all 22,000 took
  minutes per run).

    python benchmarks/bench_glyphs.py [--steps 1000] [--seeds 2] [--threads 2]

Writes benchmarks/results/glyphs_cpu.json. The figures are side by side in one run: compare them as ratios.
"""

import argparse
import json
import platform
import time
from functools import partial
from pathlib import Path

import numpy as np
import torch

from dml_tutorial import data, experiment, losses, metrics, profiles, train

CANDIDATES = {"mlp, 64 hidden": {"model": "mlp", "hidden": None}, "mlp, 512 hidden": {"model": "mlp", "hidden": 512},
              "convnet": {"model": "convnet", "hidden": None}}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=1000)
    parser.add_argument("--seeds", type=int, default=2)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--out", type=Path, default=Path(__file__).parent / "results" / "glyphs_cpu.json")
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    splits = data.load_dataset("glyphs", n_classes=2000, seen_fraction=0.5)
    print(splits)
    loss = partial(losses.triplet_loss, margin=0.2, negatives="semihard-random")
    base = profiles.settings("noise_guarantees", "smoke").replace(
        dataset="glyphs", seen=None, dim=64, epochs=1, batches_per_epoch=args.steps, p=32, k=4, threads=args.threads,
        cluster_classes=100)
    out = {"host": platform.node(), "cpu": platform.processor() or platform.machine(), "threads": args.threads,
           "steps": args.steps, "batch": 128, "candidates": {}}
    for name, changes in CANDIDATES.items():
        cfg = base.apply(changes)
        probe_cfg = cfg.replace(batches_per_epoch=50)
        train.TRAININGS.clear()
        experiment.train_and_retrieve(splits, loss, {**probe_cfg, "batches_per_epoch": 5}, p=32, k=4, device="cpu")
        start = time.perf_counter()
        experiment._train(splits.train, loss, probe_cfg, p=32, k=4, seed=0, device="cpu", progress=False,
                          checkpoint=None)
        per_s = 50 * 128 / (time.perf_counter() - start)
        trained, seconds = [], []
        for seed in range(args.seeds):
            start = time.perf_counter()
            run = experiment.train_and_retrieve(splits, loss, cfg, p=32, k=4, seed=seed, device="cpu")
            seconds.append(time.perf_counter() - start)
            trained.append(run.metrics["R@1"])
        untrained = [experiment.reference_run(splits, cfg, "untrained network", seed=s, device="cpu").metrics["R@1"]
                     for s in range(args.seeds)]
        row = {"images_per_s": per_s, "trained R@1": trained, "untrained R@1": untrained,
               "seconds per run": seconds}
        out["candidates"][name] = row
        print(f"{name:16s} {per_s:8,.0f} img/s  trained R@1 {100 * np.mean(trained):.1f}  untrained "
              f"{100 * np.mean(untrained):.1f}  ({np.mean(seconds):.0f} s a run of {args.steps} steps, scoring included)", flush=True)
    raw = experiment.reference_run(splits, base, "raw input", device="cpu")
    out["raw input R@1"] = raw.metrics["R@1"]
    print(f"raw input R@1 {100 * raw.metrics['R@1']:.1f}")
    z = torch.nn.functional.normalize(torch.randn(len(splits.test), 64), dim=1)
    labels = splits.test.labels
    for metric, fn in (("R@1", partial(metrics.recall_at_k, ks=(1,))), ("MAP@R", metrics.map_at_r),
                       ("NMI, 100 classes", lambda z, y: metrics.nmi(*metrics.clustered_subset(z, y, 100)))):
        start = time.perf_counter()
        fn(z, labels)
        out[f"seconds to score {metric}"] = time.perf_counter() - start
        print(f"scoring {metric} on {len(z):,} unseen images: {out[f'seconds to score {metric}']:.1f} s")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(out, indent=1) + "\n")


if __name__ == "__main__":
    main()
