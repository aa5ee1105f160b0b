"""Test bed II, chosen by measurement before any claim's run: unseen characters in unseen faces, GlyphNet, and a
pretrained start (the test bed's ImageNet) whose length is picked here.

For the split ``data.load_dataset("glyphs", unseen_faces=3)`` (1,000 seen characters in faces 0-7 for training,
500 unseen characters in faces 8-10 for testing) and GlyphNet (``models.GlyphNet``), one seed:

- the reference rows: raw pixels, the untrained network (batch norm recalibrated), and for each pretraining length
  in ``--starts`` the start not fine-tuned (its trunk features, :data:`dml_tutorial.experiment.STARTED`);
- the trained baseline (the triplet loss with a random semi-hard negative, 12 x 5 batches, Adam at ``--lr``) for
  ``--steps`` steps from scratch and from each start, with its unseen R@1 every ``--every`` steps (is the curve
  flat at the end?);
- the target (issue #50): the baseline at least 25 points above raw pixels and 10 below 100, and the start, not
  fine-tuned, at least 10 points below the fine-tuned baseline.

    python benchmarks/bench_testbed.py [--steps 1000] [--starts 250 500 1000] [--threads 2]

Writes results/testbed_cpu.json. Numbers of one seed: a choice of regime, not a verdict.
"""

import argparse
import json
import platform
import time
from functools import partial
from pathlib import Path

import torch

from dml_tutorial import data, experiment, losses, pretrain, profiles

RESULTS = Path(__file__).parent / "results"


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=1000)
    parser.add_argument("--every", type=int, default=250)
    parser.add_argument("--starts", type=int, nargs="*", default=[250, 500, 1000])
    parser.add_argument("--lr", type=float, default=1e-3)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--out", default=str(RESULTS / "testbed_cpu.json"))
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    splits = data.load_dataset("glyphs", unseen_faces=pretrain.STARTS["glyphs2"]["unseen_faces"])
    cfg = profiles.settings("eps", "smoke").replace(
        dataset="glyphs", model="glyphnet", dim=64, p=12, k=5, lr=args.lr, epochs=args.steps // args.every,
        batches_per_epoch=args.every, threads=args.threads, cluster_classes=100, start=None)
    out = {"split": repr(splits), "steps": args.steps, "lr": args.lr, "threads": args.threads,
           "machine": platform.platform(), "processor": platform.processor(), "torch": torch.__version__,
           "date": time.strftime("%Y-%m-%d"), "rows": {}}
    loss = partial(losses.triplet_loss, margin=0.2, negatives="semihard-random")

    def row(name, run):
        curve = [round(100 * r["unseen R@1"], 1) for r in run.history.records] if len(run.history) else []
        out["rows"][name] = {"R@1": round(100 * run.metrics["R@1"], 1), "curve": curve,
                             "seconds": round(run.metrics["seconds"], 1)}
        print(f"{name:40s} R@1 {out['rows'][name]['R@1']:5.1f}  curve {curve}", flush=True)

    for kind in experiment.REFERENCES:
        row(kind, experiment.reference_run(splits, cfg, kind, device="cpu"))
    row("triplet from scratch", experiment.train_and_retrieve(splits, loss, cfg, p=12, k=5, device="cpu", curves=True))
    for steps in args.starts:
        name = f"glyphs2-{steps}"
        record = pretrain.build_start("glyphs2", save_as=name, steps=steps, progress=False)
        out["rows"][f"start {steps} steps: record"] = record
        started = cfg.replace(start=name)
        row(f"start ({steps} steps), not fine-tuned", experiment.reference_run(splits, started, experiment.STARTED,
                                                                                device="cpu"))
        row(f"triplet from the start ({steps} steps)",
            experiment.train_and_retrieve(splits, loss, started, p=12, k=5, device="cpu", curves=True))
    Path(args.out).write_text(json.dumps(out, indent=1) + "\n")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
