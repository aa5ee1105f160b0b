"""The DCDL class-wise Sinkhorn term, forward + backward, side by side in one run (CPU): ours (all classes in one
batched solve) vs GeomLoss batched at several epsilon-scaling ratios vs a Python loop of POT ``solve_sample`` per
class; each with its relative error against POT solved to convergence in float64. Then one training step of
L_Trip + 0.5 L^W against L_Trip alone with the VGG-9-style model at batch 100 of 32 x 32 images.

    python benchmarks/bench_discrepancy.py [--repeats 10]

Targets (issue 5): at equal or better accuracy, at least as fast as GeomLoss and >= 20x faster than the POT
loop; the training step with L^W at most 1.2x the step without (the paper: 0.61 vs 0.53 s per epoch, 1.15x).
Medians over ``--repeats`` (2 for the slow POT loop), implementations interleaved. Writes benchmarks/results/discrepancy.json.
"""

import argparse
import json
import math
import platform
import statistics
import time
import warnings
from pathlib import Path

import ot
import torch
from geomloss import SamplesLoss

from dml_tutorial import discrepancy, losses, models

EPS = 2.5e-3


def batch(classes, per_class, spread=0.15, seed=0):
    """Unit 64-d embeddings of ``classes`` clusters: loose (spread 0.15, what a half-trained model gives) or tight
    (0.05, a trained one, where Sinkhorn at small epsilon converges more slowly)."""
    g = torch.Generator().manual_seed(seed)
    mu = torch.randn(classes, 64, generator=g)
    z = mu.repeat_interleave(per_class, 0) + spread * torch.randn(classes * per_class, 64, generator=g)
    return torch.nn.functional.normalize(z, dim=1), torch.arange(classes).repeat_interleave(per_class)


def reference(z, y):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return -sum(ot.solve_sample(z[y == k].double().numpy(), z[y != k].double().numpy(), reg=2 * EPS,
                                    debias=True, metric="sqeuclidean", max_iter=20_000, tol=1e-12).value / 2
                    for k in torch.unique(y))


def geomloss_fn(scaling):
    loss = SamplesLoss("sinkhorn", p=2, blur=math.sqrt(EPS), scaling=scaling)

    def fn(z, y):  # balanced classes: [K, n] vs [K, B - n] point clouds, one batched GeomLoss call
        classes = torch.unique(y)
        x = torch.stack([z[y == k] for k in classes])
        rest = torch.stack([z[y != k] for k in classes])
        return -loss(x, rest).sum()
    return fn


def pot_loop(z, y):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return -sum(ot.solve_sample(z[y == k], z[y != k], reg=2 * EPS, debias=True, metric="sqeuclidean").value / 2
                    for k in torch.unique(y))


def timed(fn, z, y):
    x = z.clone().requires_grad_(True)
    t = time.perf_counter()
    value = fn(x, y)
    value.backward()
    return time.perf_counter() - t, value.item()


def classwise(repeats):
    rows = {}
    impls = {"ours": discrepancy.classwise_discrepancy, **{f"geomloss scaling={s}": geomloss_fn(s)
                                                           for s in (0.9, 0.95, 0.99)}, "POT loop": pot_loop}
    for classes, spread in ((10, 0.15), (20, 0.15), (10, 0.05)):
        z, y = batch(classes, 10, spread)
        ref = reference(z, y)
        times = {k: [] for k in impls}
        values = {}
        for i in range(repeats):
            for name, fn in impls.items():
                if name == "POT loop" and i >= 2:  # seconds per call: two runs are enough
                    continue
                t, values[name] = timed(fn, z, y)
                times[name].append(t)
        ms = {k: 1e3 * statistics.median(v) for k, v in times.items()}
        key = f"{classes} classes x 10" + (", tight clusters" if spread < 0.15 else "")
        rows[key] = {k: {"ms": ms[k], "relative_error": abs(values[k] - ref) / abs(ref),
                         "time_over_ours": ms[k] / ms["ours"]} for k in impls}
        print(f"\nclass-wise L^W, {key} (B = {len(y)}), 64-d, forward + backward, median of {repeats}")
        for k, r in rows[key].items():
            print(f"  {k:24s} {r['ms']:8.1f} ms   {r['time_over_ours']:6.1f}x ours   rel. error {r['relative_error']:.1e}")
    return rows


def training_step(repeats):
    torch.manual_seed(0)
    model = models.VGG9(dim=64, dropout=0.1)
    opt = torch.optim.Adam(model.parameters(), lr=5e-4)
    x = torch.randn(100, 3, 32, 32)
    y = torch.arange(10).repeat_interleave(10)
    variants = {"L_Trip": lambda z: losses.triplet_loss(z, y, margin=0.5, squared=True),
                "L_Trip + 0.5 L^W": lambda z: losses.triplet_loss(z, y, margin=0.5, squared=True)
                + 0.5 * discrepancy.classwise_discrepancy(z, y)}
    times = {k: [] for k in variants}
    for i in range(repeats + 1):
        for name, loss_fn in variants.items():
            t = time.perf_counter()
            loss = loss_fn(model(x))
            opt.zero_grad()
            loss.backward()
            opt.step()
            if i:  # the first round is warm-up
                times[name].append(time.perf_counter() - t)
    ms = {k: 1e3 * statistics.median(v) for k, v in times.items()}
    ratio = ms["L_Trip + 0.5 L^W"] / ms["L_Trip"]
    print(f"\ntraining step, VGG-9, batch 100 x 3 x 32 x 32: L_Trip {ms['L_Trip']:.0f} ms, "
          f"L_Trip + 0.5 L^W {ms['L_Trip + 0.5 L^W']:.0f} ms, ratio {ratio:.2f}x (paper: 0.61 / 0.53 = 1.15x)")
    return {"ms": ms, "ratio": ratio}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeats", type=int, default=10)
    args = ap.parse_args()
    result = {"epsilon": EPS, "device": "cpu", "threads": torch.get_num_threads(), "machine": platform.platform(),
              "torch": torch.__version__, "date": time.strftime("%Y-%m-%d"),
              "classwise": classwise(args.repeats), "training_step": training_step(args.repeats)}
    path = Path(__file__).with_name("results") / "discrepancy.json"
    path.write_text(json.dumps(result, indent=2) + "\n")
    print(f"written to {path}")


if __name__ == "__main__":
    main()
