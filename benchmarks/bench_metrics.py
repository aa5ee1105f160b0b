"""Time and peak memory of recall_at_k and nmi on N x 128 random unit vectors (CPU), each in a fresh process.

    python benchmarks/bench_metrics.py [--n 20000] [--dim 128]

Target (issue 3): under 5 s each for N = 20,000, and no N x N matrix (which would be N^2 * 4 bytes = 1.6 GB).
Peak memory is the growth of the process's maximum resident set size during the call. Writes
benchmarks/results/metrics.json.
"""

import argparse
import json
import platform
import subprocess
import sys
import time
from pathlib import Path

CHILD = r"""
import json, resource, sys, time
import torch
from dml_tutorial import metrics
n, dim, name = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
g = torch.Generator().manual_seed(0)
z = torch.nn.functional.normalize(torch.randn(n, dim, generator=g), dim=1)
y = torch.randint(0, 100, (n,), generator=g)
fn = {"recall_at_k": lambda: metrics.recall_at_k(z, y, ks=(1, 2, 4, 8)),
      "nmi": lambda: metrics.nmi(z, y, n_clusters=100, seed=0),
      "map_at_r": lambda: metrics.map_at_r(z, y)}[name]
base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
t = time.perf_counter(); fn(); seconds = time.perf_counter() - t
peak = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - base) / 1024
print(json.dumps({"seconds": seconds, "peak_mib": peak}))
"""


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=20_000)
    ap.add_argument("--dim", type=int, default=128)
    args = ap.parse_args()
    full_matrix_mib = args.n**2 * 4 / 2**20
    rows = {}
    for name in ("recall_at_k", "nmi", "map_at_r"):
        out = subprocess.run([sys.executable, "-c", CHILD, str(args.n), str(args.dim), name], check=True,
                             capture_output=True, text=True).stdout
        rows[name] = json.loads(out.strip().splitlines()[-1])
        print(f"{name:12s} N={args.n} d={args.dim}: {rows[name]['seconds']:.2f} s, peak +{rows[name]['peak_mib']:.0f} MiB "
              f"(a full N x N float32 matrix: {full_matrix_mib:.0f} MiB)")
    result = {"n": args.n, "dim": args.dim, "classes": 100, "device": "cpu", "machine": platform.platform(),
              "processor": platform.processor(), "threads": __import__("torch").get_num_threads(),
              "date": time.strftime("%Y-%m-%d"), "results": rows, "full_matrix_mib": full_matrix_mib}
    path = Path(__file__).with_name("results") / "metrics.json"
    path.write_text(json.dumps(result, indent=2) + "\n")
    print(f"written to {path}")


if __name__ == "__main__":
    main()
