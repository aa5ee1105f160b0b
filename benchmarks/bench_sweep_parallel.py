"""Two sweep points at once on a CPU, each on its own cores, against one point at a time on all of them: the
throughput of test bed II's training steps (GlyphNet from scratch, the triplet loss with a random semi-hard
negative, 12 x 5 batches, Adam: the step every glyphs2 chapter trains with) side by side in one run:

- ``one at a time``: one process, ``torch.set_num_threads(cores)``, ``--steps`` steps;
- ``side by side``: ``cores`` processes started together, each with one thread and ``--steps`` steps.

A sweep's points are independent trainings (one seed each), so if two single-threaded processes make more steps a
second than one process with two threads, a CPU sweep finishes sooner by running its points side by side. The
inputs are random tensors of the glyphs' shape (1 x 32 x 32; speed does not depend on the pixels).

    python benchmarks/bench_sweep_parallel.py [--steps 2000] [--cores 2] [--repeats 3]

Writes results/sweep_parallel_cpu.json.
"""

import argparse
import json
import multiprocessing as mp
import platform
import time
from pathlib import Path

import torch

from dml_tutorial import losses, models

RESULTS = Path(__file__).parent / "results"
P, K, SHAPE = 12, 5, (1, 32, 32)


def train_steps(steps: int, threads: int, seed: int = 0, barrier=None) -> tuple[float, float]:
    """``(start, end)`` wall-clock times (``time.time``) of ``steps`` training steps on ``threads`` threads, after
    two warm-up steps and, with ``barrier``, once every process is ready (so their steps overlap)."""
    torch.set_num_threads(threads)
    torch.manual_seed(seed)
    model = models.make_model("glyphnet", SHAPE, 64)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    labels = torch.arange(P).repeat_interleave(K)
    x = torch.randn(8, P * K, *SHAPE)

    def step(i):
        optimizer.zero_grad()
        losses.triplet_loss(model(x[i % len(x)]), labels, negatives="semihard-random").backward()
        optimizer.step()

    step(0), step(1)
    if barrier is not None:
        barrier.wait()
    began = time.time()
    for i in range(steps):
        step(i)
    return began, time.time()


def _worker(steps, seed, barrier, queue):
    queue.put(train_steps(steps, 1, seed, barrier))


def side_by_side(steps: int, cores: int) -> float:
    """Wall seconds from the first single-threaded process's first timed step to the last one's last, ``cores``
    processes making ``steps`` steps each at once (their start-up not counted)."""
    ctx = mp.get_context("spawn")
    queue, barrier = ctx.Queue(), ctx.Barrier(cores)
    procs = [ctx.Process(target=_worker, args=(steps, seed, barrier, queue)) for seed in range(cores)]
    for proc in procs:
        proc.start()
    times = [queue.get() for _ in procs]
    for proc in procs:
        proc.join()
    return max(end for _, end in times) - min(start for start, _ in times)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=2000)
    parser.add_argument("--cores", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=3, help="pairs of measurements, alternated (a noisy machine)")
    args = parser.parse_args(argv)
    rows = []
    for repeat in range(args.repeats):
        began, ended = train_steps(args.steps, args.cores)
        one = args.steps / (ended - began)
        both = args.cores * args.steps / side_by_side(args.steps, args.cores)
        rows.append({"repeat": repeat, "one at a time (steps/s)": one, "side by side (steps/s)": both,
                     "side by side / one at a time": both / one})
        print(f"repeat {repeat}: one at a time ({args.cores} threads) {one:6.1f} steps/s, side by side "
              f"({args.cores} processes, 1 thread each) {both:6.1f} steps/s: {both / one:.2f}x")
    ratios = sorted(r["side by side / one at a time"] for r in rows)
    median = ratios[len(ratios) // 2]
    print(f"side by side / one at a time: median {median:.2f}x over {args.repeats} repeats "
          f"({ratios[0]:.2f}x to {ratios[-1]:.2f}x)")
    RESULTS.mkdir(exist_ok=True)
    out = RESULTS / "sweep_parallel_cpu.json"
    out.write_text(json.dumps({"device": f"{platform.machine()} CPU, {platform.processor() or 'unknown'}",
                               "torch": torch.__version__, "steps": args.steps, "cores": args.cores,
                               "rows": rows, "median ratio": median}, indent=1))
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
