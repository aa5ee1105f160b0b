"""k-means on more dimensions than points (a raw-input reference row on photographs), side by side in one run:
scikit-learn's k-means on the points themselves, as ``metrics._kmeans`` ran it before, against the same k-means in
the points' span (``metrics.span_coordinates``), each in a fresh process with its time and peak memory.

    python benchmarks/bench_kmeans_wide.py [--n 1000] [--dim 150528] [--clusters 100] [--threads 1]

The points: ``clusters`` class means plus noise, L2-normalised, as ``experiment.reference_run`` scores raw pixels
(150,528 values: a 224-px colour crop, CUB's raw input; its test split has 5,924 images and 100 classes). Both
runs must give the same labels. Peak memory is the growth of the process's maximum resident set size during the
call. Writes results/kmeans_wide_cpu.json.
"""

import argparse
import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

CHILD = r"""
import json, os, resource, sys, time
import numpy as np, torch
from sklearn.cluster import KMeans
from dml_tutorial import metrics
n, dim, k, how = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
g = torch.Generator().manual_seed(0)
z = torch.randn(k, dim, generator=g)[torch.arange(n) % k] + 2 * torch.randn(n, dim, generator=g)
z = torch.nn.functional.normalize(z, dim=1)
base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
t = time.perf_counter()
if how == "points":
    labels = KMeans(k, n_init=metrics.KMEANS_INIT, tol=metrics.KMEANS_TOL, random_state=0).fit_predict(
        z.double().numpy())
else:
    labels = metrics._kmeans(z, k, 0)
seconds = time.perf_counter() - t
peak = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - base) / 1024
np.save(sys.argv[5], labels)
print(json.dumps({"seconds": seconds, "peak_mib": peak}))
"""


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=1000)
    ap.add_argument("--dim", type=int, default=150_528)
    ap.add_argument("--clusters", type=int, default=100, help="CUB's test split has 100 classes")
    ap.add_argument("--threads", type=int, default=1, help="BLAS and OpenMP threads of each run")
    args = ap.parse_args()
    threads = {v: str(args.threads) for v in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")}
    out, labels = {}, {}
    for how in ("points", "span"):
        path = Path(f"/tmp/kmeans_wide_{how}.npy")
        proc = subprocess.run([sys.executable, "-c", CHILD, str(args.n), str(args.dim), str(args.clusters), how,
                               str(path)], capture_output=True, text=True, check=True,
                              env={**os.environ, **threads})
        out[how] = json.loads(proc.stdout.strip().splitlines()[-1])
        labels[how] = np.load(path)
        print(f"{how:6s}: {out[how]['seconds']:7.1f} s, peak +{out[how]['peak_mib']:,.0f} MiB", flush=True)
    same = bool(np.array_equal(labels["points"], labels["span"]))
    ratio = out["points"]["seconds"] / out["span"]["seconds"]
    print(f"same labels: {same}; the span is {ratio:.1f}x faster")
    model = next((line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines()
                  if line.startswith("model name")), platform.machine()) if Path("/proc/cpuinfo").exists() else ""
    result = {"processor": model or platform.machine(), "threads": args.threads, "n": args.n,
              "dim": args.dim, "clusters": args.clusters, "n_init": 10, **out, "same_labels": same,
              "speed_up": round(ratio, 1), "date": time.strftime("%Y-%m-%d")}
    target = Path(__file__).parent / "results" / "kmeans_wide_cpu.json"
    target.write_text(json.dumps(result, indent=1) + "\n")


if __name__ == "__main__":
    main()
