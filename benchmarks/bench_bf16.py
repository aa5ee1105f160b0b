"""Does bfloat16 keep test bed II's numbers? Each protocol's baseline trained twice per seed, in float32 and with
bfloat16 autocast + channels_last (a profile's ``amp`` and ``channels_last``), paired by seed (the same class split,
initialisation, noise and batches), side by side in one run: the difference in the protocol's metric with its 95%
interval (:func:`dml_tutorial.evidence.paired`), and the wall time of each training.

Test bed II's profiles train in float32 (``profiles.GLYPHS2``: ``amp`` False). Its sweeps cost 45-75 minutes a seed
on 2 cores, and one GlyphNet step ran 1.8x faster in bfloat16 (results/train_step_glyphnet_cpu.json) on a CPU with
native bfloat16 (AVX-512 BF16, AMX). A profile may switch only before its first run, only on such CPUs, and only
where this shows its numbers unchanged: the whole interval within +-``--margin`` points.

- ``zero-shot``: the bench's test bed II settings (from the pretrained start, 1,000 steps of 12 x 5), the triplet
  with a random semi-hard negative, unseen-character R@1;
- ``dcdl``: DCDL's test bed II settings (from scratch, 3,000 steps of 10 characters x 10), L_Trip + 0.5 L^W,
  the linear probe's accuracy on the unseen faces.

    python benchmarks/bench_bf16.py [--seeds 0 1 2] [--protocols zero-shot dcdl] [--threads 2]

Writes results/bf16_cpu.json.
"""

import argparse
import json
import platform
import time
from functools import partial
from pathlib import Path

import torch

from dml_tutorial import data, dcdl, evidence, experiment, losses, profiles

RESULTS = Path(__file__).parent / "results"


def zero_shot(seed: int, cfg: dict):
    """One training of the zero-shot protocol on ``seed``'s class split: (unseen R@1, seconds of training)."""
    cfg = profiles.settings("bench", "glyphs2").apply(cfg)
    splits = data.load_dataset("glyphs", split="classes", seed=seed, **cfg["dataset_options"])
    loss = partial(losses.triplet_loss, margin=0.2, negatives="semihard-random")
    run = experiment.train_and_retrieve(splits, loss, cfg, p=cfg["p"], k=cfg["k"], seed=seed, device="cpu")
    return run.metrics["R@1"], run.metrics["seconds"]


def dcdl_probe(seed: int, cfg: dict):
    """One training of DCDL's closed-set protocol: (probe accuracy on the unseen faces, seconds of training)."""
    cfg = profiles.settings("dcdl", "glyphs2").apply(cfg)
    splits = data.load_dataset("glyphs", split="samples", seed=seed, **cfg["dataset_options"])
    run = experiment.train_and_probe(splits, dcdl.dcdl_loss("trip", "W"), cfg, k=dcdl.SAMPLES_PER_CLASS["trip"],
                                     seed=seed, device="cpu")
    return run.metrics["accuracy"], run.metrics["seconds"]


PROTOCOLS = {"zero-shot": (zero_shot, "unseen R@1"), "dcdl": (dcdl_probe, "probe accuracy")}
PRECISIONS = {"float32": {"amp": False, "channels_last": False},
              "bfloat16 + channels_last": {"amp": True, "channels_last": True}}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--protocols", nargs="+", choices=sorted(PROTOCOLS), default=sorted(PROTOCOLS))
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--margin", type=float, default=1.0, help="points: the largest change called unchanged")
    parser.add_argument("--out", default=str(RESULTS / "bf16_cpu.json"))
    args = parser.parse_args(argv)
    if not torch.backends.mkldnn.is_available():
        parser.error("this CPU build of torch has no oneDNN: bfloat16 would be emulated, and the timing meaningless")
    out = {"seeds": args.seeds, "threads": args.threads, "margin_points": args.margin,
           "machine": platform.platform(), "processor": platform.processor(), "torch": torch.__version__,
           "cpu_flags": sorted({f for f in Path("/proc/cpuinfo").read_text().split() if "bf16" in f})
           if Path("/proc/cpuinfo").exists() else [], "date": time.strftime("%Y-%m-%d"), "protocols": {}}
    for name in args.protocols:
        train, metric = PROTOCOLS[name]
        values = {p: [] for p in PRECISIONS}
        seconds = {p: [] for p in PRECISIONS}
        for seed in args.seeds:
            for precision, switches in PRECISIONS.items():  # the two precisions of a seed back to back
                value, took = train(seed, {**switches, "threads": args.threads})
                values[precision].append(value)
                seconds[precision].append(took)
                print(f"{name:9s} seed {seed}  {precision:24s} {metric} {100 * value:5.1f}  {took:6.1f} s", flush=True)
        diff = evidence.paired(values["float32"], values["bfloat16 + channels_last"])
        low, high = 100 * diff["ci"][0], 100 * diff["ci"][1]
        speed = sum(seconds["float32"]) / sum(seconds["bfloat16 + channels_last"])
        out["protocols"][name] = {"metric": metric, "values": values, "seconds": seconds,
                                  "bf16_minus_fp32_points": 100 * diff["mean"], "ci95_points": [low, high],
                                  "unchanged": -args.margin <= low and high <= args.margin,
                                  "fp32_over_bf16_seconds": speed}
        print(f"{name}: bfloat16 - float32 {100 * diff['mean']:+.2f} points (95% CI {low:+.2f} to {high:+.2f}), "
              f"training {speed:.2f}x faster in bfloat16", flush=True)
    Path(args.out).write_text(json.dumps(out, indent=1) + "\n")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
