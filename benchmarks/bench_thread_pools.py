"""Two sweep points side by side on a CPU (``dml-tutorial sweep --jobs 2``: one thread each), with and without the
BLAS and OpenMP pools limited to that thread (``train.seed_everything(seed, threads=1)``, through threadpoolctl),
side by side in one run. Each point alternates DCDL's search pattern on test bed II: ``--steps`` training steps
(GlyphNet, the triplet loss, 10 x 10 batches, Adam, on one torch thread either way) and one fit of the linear probe
(:func:`dml_tutorial.metrics.linear_probe_accuracy`: scikit-learn's logistic regression, whose BLAS and OpenMP
pools take every core unless limited) on embeddings of the shape of DCDL's validation split (4,000 training and
400 test images of 200 characters, 64 dimensions; class-structured Gaussian embeddings, so that the fit takes
tens of iterations as a trained network's do).

- ``torch only``: what a sweep point did before: ``torch.set_num_threads(1)``, the pools left at every core;
- ``pools limited``: ``train.seed_everything(seed, threads=1)``.

Both conditions must give the same probe accuracies (the same fit); the figure is the wall time of the points
and the seconds their probe fits took.

    python benchmarks/bench_thread_pools.py [--steps 40] [--rounds 4] [--cores 2] [--repeats 3]

Writes results/thread_pools_cpu.json.
"""

import argparse
import json
import multiprocessing as mp
import platform
import time
from pathlib import Path

RESULTS = Path(__file__).parent / "results"
P, K, SHAPE, CLASSES, DIM = 10, 10, (1, 32, 32), 200, 64


def embeddings(seed: int):
    """Class-structured embeddings of DCDL's validation split's shape: ``(z_train, y_train, z_test, y_test)``."""
    import numpy as np

    rng = np.random.default_rng(seed)
    centres = rng.normal(size=(CLASSES, DIM))
    y_train, y_test = np.repeat(np.arange(CLASSES), 20), np.repeat(np.arange(CLASSES), 2)
    return tuple(a for y in (y_train, y_test) for a in ((centres[y] + 4.0 * rng.normal(size=(len(y), DIM))), y))


def point(limited: bool, steps: int, rounds: int, seed: int, barrier, queue) -> None:
    """One sweep point: ``rounds`` of ``steps`` training steps then a probe fit; puts ``(start, end, probe
    seconds, accuracies)`` on ``queue``."""
    import torch

    from dml_tutorial import losses, metrics, models, train

    torch.set_num_threads(1)
    if limited:
        train.seed_everything(seed, threads=1)
    torch.manual_seed(seed)
    model = models.make_model("glyphnet", SHAPE, DIM)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    labels, x = torch.arange(P).repeat_interleave(K), torch.randn(4, P * K, *SHAPE)
    z_train, y_train, z_test, y_test = (torch.as_tensor(a) for a in embeddings(seed))
    barrier.wait()
    began, probing, accuracies = time.time(), 0.0, []
    for r in range(rounds):
        for i in range(steps):
            optimizer.zero_grad()
            losses.triplet_loss(model(x[i % len(x)]), labels, negatives="semihard-random").backward()
            optimizer.step()
        t = time.perf_counter()
        accuracies.append(metrics.linear_probe_accuracy(z_train, y_train, z_test, y_test, seed))
        probing += time.perf_counter() - t
    queue.put((began, time.time(), probing, accuracies))


def side_by_side(limited: bool, steps: int, rounds: int, cores: int) -> dict:
    ctx = mp.get_context("spawn")  # a fresh process: no pool limited by an earlier measurement
    queue, barrier = ctx.Queue(), ctx.Barrier(cores)
    procs = [ctx.Process(target=point, args=(limited, steps, rounds, seed, barrier, queue)) for seed in range(cores)]
    for proc in procs:
        proc.start()
    out = [queue.get() for _ in procs]
    for proc in procs:
        proc.join()
    return {"wall seconds": max(o[1] for o in out) - min(o[0] for o in out),
            "probe seconds": sum(o[2] for o in out), "accuracies": sorted(o[3] for o in out)}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=40)
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--cores", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=3, help="pairs of measurements, alternated (a noisy machine)")
    args = parser.parse_args(argv)
    rows = []
    for repeat in range(args.repeats):
        before = side_by_side(False, args.steps, args.rounds, args.cores)
        after = side_by_side(True, args.steps, args.rounds, args.cores)
        if before["accuracies"] != after["accuracies"]:
            raise SystemExit(f"the probe's accuracies differ: {before['accuracies']} against {after['accuracies']}")
        rows.append({"repeat": repeat, "torch only": before, "pools limited": after,
                     "wall ratio": before["wall seconds"] / after["wall seconds"],
                     "probe ratio": before["probe seconds"] / after["probe seconds"]})
        print(f"repeat {repeat}: wall {before['wall seconds']:.1f} s -> {after['wall seconds']:.1f} s "
              f"({rows[-1]['wall ratio']:.2f}x), probe fits {before['probe seconds']:.1f} s -> "
              f"{after['probe seconds']:.1f} s ({rows[-1]['probe ratio']:.2f}x); the same accuracies")
    medians = {k: sorted(r[k] for r in rows)[len(rows) // 2] for k in ("wall ratio", "probe ratio")}
    print(f"pools limited against torch only, median over {args.repeats} repeats: the points' wall time "
          f"{medians['wall ratio']:.2f}x faster, their probe fits {medians['probe ratio']:.2f}x")
    RESULTS.mkdir(exist_ok=True)
    out = RESULTS / "thread_pools_cpu.json"
    out.write_text(json.dumps({"device": f"{platform.machine()} CPU, {platform.processor() or 'unknown'}",
                               "steps": args.steps, "rounds": args.rounds, "cores": args.cores, "rows": rows,
                               "medians": medians}, indent=1))
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
