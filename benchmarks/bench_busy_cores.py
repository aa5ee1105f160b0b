"""A training on every core's threads when the cores are already busy: test bed II's training step (GlyphNet, the
random semi-hard triplet, 12 x 5 batches, Adam; ``bench_sweep_parallel.train_steps``) timed in a fresh process on
one thread, on ``--cores`` threads, and on ``--cores`` threads with ``OMP_WAIT_POLICY=PASSIVE`` (torch's OpenMP
threads sleep instead of spinning while they wait), first on an idle machine, then beside ``--cores`` busy
neighbours (single-threaded processes making the same steps nonstop: a sweep's ``--jobs`` points, say).

torch's OpenMP threads spin while they wait for each other; a thread descheduled in favour of a neighbour keeps
the others spinning, so a run of two threads beside two busy processes can be many times slower than the same run
on one thread. That is why ``dml-tutorial run`` warns when it starts a chapter on more threads than the cores
have free (``dml_tutorial.cli.busy_cores_warning``). Run it with nothing else on the machine.

    python benchmarks/bench_busy_cores.py [--steps 300] [--cores 2] [--repeats 2]

Writes results/busy_cores_cpu.json.
"""

import argparse
import json
import multiprocessing as mp
import os
import platform
import statistics
import subprocess
import sys
from pathlib import Path

from bench_sweep_parallel import train_steps

RESULTS = Path(__file__).parent / "results"


def _busy(seed: int, stop, ready) -> None:
    """A neighbour: training steps on one thread until ``stop`` is set; says so on ``ready`` once it trains."""
    train_steps(20, 1, seed)
    ready.put(seed)
    while not stop.is_set():
        train_steps(20, 1, seed)


def timed(threads: int, steps: int, passive: bool) -> float:
    """Seconds of ``steps`` steps on ``threads`` threads in a fresh process (OpenMP reads its wait policy once)."""
    env = {k: v for k, v in os.environ.items() if k != "OMP_WAIT_POLICY"} | ({"OMP_WAIT_POLICY": "PASSIVE"}
                                                                             if passive else {})
    out = subprocess.run([sys.executable, __file__, "--measure", str(threads), str(steps)], env=env, check=True,
                         capture_output=True, text=True).stdout
    return float(out.split()[-1])


def conditions(cores: int) -> dict:
    return {"1 thread": (1, False), f"{cores} threads": (cores, False),
            f"{cores} threads, OMP_WAIT_POLICY=PASSIVE": (cores, True)}


def measure_all(steps: int, cores: int, busy: bool) -> dict:
    """Each condition's seconds, with ``cores`` busy neighbours running throughout where ``busy``."""
    ctx = mp.get_context("spawn")
    stop, ready = ctx.Event(), ctx.Queue()
    neighbours = [ctx.Process(target=_busy, args=(seed, stop, ready)) for seed in range(cores)] if busy else []
    for proc in neighbours:
        proc.start()
    for _ in neighbours:  # every neighbour training before the first measurement
        ready.get()
    try:
        return {name: timed(threads, steps, passive) for name, (threads, passive) in conditions(cores).items()}
    finally:
        stop.set()
        for proc in neighbours:
            proc.join()


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--cores", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=2, help="rounds of every measurement (a noisy machine)")
    parser.add_argument("--measure", nargs=2, type=int, metavar=("THREADS", "STEPS"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.measure:  # the fresh process of :func:`timed`
        began, end = train_steps(args.measure[1], args.measure[0])
        print(end - began)
        return
    rows = []
    for repeat in range(args.repeats):
        for busy in (False, True):
            seconds = measure_all(args.steps, args.cores, busy)
            rows.append({"repeat": repeat, "neighbours": args.cores if busy else 0, "seconds": seconds})
            print(f"repeat {repeat}, {rows[-1]['neighbours']} busy neighbours: "
                  + ", ".join(f"{name} {s:.1f} s" for name, s in seconds.items()), flush=True)
    names = list(conditions(args.cores))
    median = {f"{n}, {'busy' if busy else 'idle'}": statistics.median([r["seconds"][n] for r in rows
                                                             if bool(r["neighbours"]) == busy])
              for busy in (False, True) for n in names}
    one = median["1 thread, busy"]
    slowdown = {name: median[f"{name}, busy"] / one for name in names}
    print(f"beside {args.cores} busy neighbours, against one thread (medians): "
          + ", ".join(f"{name} {r:.2f}x as long" for name, r in slowdown.items()))
    print(f"idle, {names[1]} against 1 thread: {median['1 thread, idle'] / median[names[1] + ', idle']:.2f}x as fast")
    RESULTS.mkdir(exist_ok=True)
    out = RESULTS / "busy_cores_cpu.json"
    out.write_text(json.dumps({"device": f"{platform.machine()} CPU, {platform.processor() or 'unknown'}",
                               "steps": args.steps, "cores": args.cores, "rows": rows, "medians": median,
                               "busy, as long as on 1 thread": slowdown}, indent=1))
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
