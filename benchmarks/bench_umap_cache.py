"""What a new Python process pays before its first UMAP projection, with and without numba's on-disk cache for
umap-learn's compiled functions (``dml_tutorial.plots.umap_module``).

umap-learn compiles most of its numba functions without ``cache=True``, so each chapter's kernel and each test
worker compiled them again (issue #47: `make test` starts about twenty such processes). Each variant below runs in
a fresh process on the same 500 x 64 embedding, timing the import of umap and one ``UMAP(n_neighbors=15,
random_state=0).fit_transform``, all with one numba cache folder (``NUMBA_CACHE_DIR``, a temporary one):

1. umap-learn as installed, once to fill pynndescent's own cache (it has ``cache=True``), then again: the
   baseline, as every process paid it;
2. through ``umap_module()``, cold: compiles, and writes the cache (paid once per installation);
3. through ``umap_module()``, warm: loads the cache (every later process).

The warm and baseline projections are compared for equality (the same machine code, loaded instead of compiled).

    python benchmarks/bench_umap_cache.py --save benchmarks/results/umap_cache_cpu.json
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

CHILD = """
import sys, time, warnings
import numpy as np
cached = sys.argv[2] == "cached"
if cached:
    from dml_tutorial import plots  # imported before the clock starts: torch, matplotlib, seaborn
z = np.load(sys.argv[1])
warnings.simplefilter("ignore")
start = time.perf_counter()
if cached:
    umap = plots.umap_module()
else:
    import umap
imported = time.perf_counter()
xy = umap.UMAP(n_neighbors=15, random_state=0).fit_transform(z)
done = time.perf_counter()
np.save(sys.argv[3], xy)
print(imported - start, done - imported)
"""


def _cpu() -> str:
    """The CPU's model name and vector width, as the suite's figures give them."""
    from bench_suite import _cpu as cpu

    return cpu()


def child(z_path: Path, variant: str, out: Path, env: dict) -> dict:
    """One fresh process: ``{"import_s", "fit_s", "total_s"}``."""
    printed = subprocess.run([sys.executable, "-c", CHILD, str(z_path), variant, str(out)], env=env, check=True,
                             capture_output=True, text=True).stdout.split()
    imported, fit = map(float, printed[-2:])
    return {"import_s": round(imported, 2), "fit_s": round(fit, 2), "total_s": round(imported + fit, 2)}


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--save", type=Path, help="write the figures as JSON here")
    args = parser.parse_args(argv)
    import numpy as np

    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        z = np.random.default_rng(0).normal(size=(500, 64)).astype(np.float64)
        np.save(tmp / "z.npy", z)
        env = {**os.environ, "NUMBA_CACHE_DIR": str(tmp / "numba"), "PYTHONWARNINGS": "ignore"}
        child(tmp / "z.npy", "plain", tmp / "first.npy", env)  # fills pynndescent's own cache
        runs = {"as installed": child(tmp / "z.npy", "plain", tmp / "plain.npy", env),
                "cached, first process (compiles, writes)": child(tmp / "z.npy", "cached", tmp / "cold.npy", env),
                "cached, later processes (load)": child(tmp / "z.npy", "cached", tmp / "warm.npy", env)}
        same = bool(np.array_equal(np.load(tmp / "plain.npy"), np.load(tmp / "warm.npy")))
        cached_files = len(list((tmp / "numba").rglob("*.nbi")))
    base, warm = runs["as installed"]["total_s"], runs["cached, later processes (load)"]["total_s"]
    result = {"cpu": _cpu(), "threads": os.cpu_count(), "points": list(z.shape),
              "runs": runs, "saved_per_process_s": round(base - warm, 2), "speedup": round(base / warm, 2),
              "same_projection": same, "cached_functions": cached_files}
    for name, r in runs.items():
        print(f"{name:42s} import {r['import_s']:6.2f} s   fit {r['fit_s']:6.2f} s   total {r['total_s']:6.2f} s")
    print(f"later processes: {result['saved_per_process_s']} s saved each ({result['speedup']}x faster), "
          f"projection {'identical' if same else 'DIFFERENT'}; {cached_files} cache index files")
    if args.save:
        args.save.write_text(json.dumps(result, indent=1) + "\n")
    return result


if __name__ == "__main__":
    main()
