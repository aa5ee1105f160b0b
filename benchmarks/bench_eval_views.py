"""The evaluation path of the chapters on images decoded once (CUB, Cars, SOP; issue #88): what the host does for
each image an evaluation embeds, before and after 0.22.0, side by side in one run.

    python benchmarks/bench_eval_views.py [--images 1024] [--batch 256] [--cpus 2] [--device auto]

Before, :meth:`dml_tutorial.data.DecodedImages.batch` made every evaluation view on the host: the central 224-px
crop of the 256-px uint8 image, converted to float32 and normalised there, then copied to the device (602 KB an
image). Now the host crops in uint8 and sends that (150 KB); the device converts and normalises. Measured, in
images/s on ``--cpus`` cores (Colab has two): (1) "before": the host's part of the old path; (2) "after, host
part": the host's part of the new path, what bounds an evaluation where the GPU waits on the host; with a GPU also
(3) "after, on the device": the whole new path including the copy and the normalisation there, synchronised. The
images are random uint8 at CUB's decoded size. Writes results/eval_views_<device>.json.
"""

import argparse
import json
import os
import platform
import time
from pathlib import Path

import numpy as np
import torch

from dml_tutorial import augment, train
from dml_tutorial.data import DecodedImages


def rate(make, images: int, batch: int, device, repeats: int = 3) -> float:
    """Images per second of ``make(idx)`` over ``images`` images in batches of ``batch`` (best of ``repeats``)."""
    best = 0.0
    for _ in range(repeats):
        start = time.perf_counter()
        for s in range(0, images, batch):
            make(np.arange(s, min(s + batch, images)))
        if device.type == "cuda":
            torch.cuda.synchronize(device)
        best = max(best, images / (time.perf_counter() - start))
    return best


def cpu_name() -> str:
    """The CPU's model name (``/proc/cpuinfo`` on Linux), else what ``platform`` knows."""
    try:
        lines = Path("/proc/cpuinfo").read_text().splitlines()
        return next(line.split(":", 1)[1].strip() for line in lines if line.startswith("model name"))
    except (OSError, StopIteration):
        return platform.processor() or platform.machine()


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--images", type=int, default=1024)
    parser.add_argument("--batch", type=int, default=256)
    parser.add_argument("--cpus", type=int, default=2, help="cores to pin the process to (Colab: 2)")
    parser.add_argument("--device", default="auto")
    parser.add_argument("--out", default=None)
    args = parser.parse_args()
    if hasattr(os, "sched_setaffinity"):
        os.sched_setaffinity(0, sorted(os.sched_getaffinity(0))[:args.cpus])
    torch.set_num_threads(args.cpus)
    device = train.resolve_device(args.device)
    g = torch.Generator().manual_seed(0)
    decoded = DecodedImages(torch.randint(0, 256, (args.images, 3, 256, 256), dtype=torch.uint8, generator=g),
                            np.zeros(args.images, dtype=int), crop=224)

    def before(idx):  # 0.21.0's batch(): crop, float32 and normalise on the host, then the copy
        x = decoded.x[torch.as_tensor(idx)]
        view = augment.normalize(augment.center_crop(x, 224).float().div_(255.0), decoded.mean, decoded.std)
        return view.to(device, non_blocking=True)

    def after_host(idx):  # the host's part now: the uint8 crop that is copied
        return augment.center_crop(decoded.x[torch.as_tensor(idx)], 224).contiguous()

    name = torch.cuda.get_device_name(device) if device.type == "cuda" else cpu_name()
    result = {"device": f"{device.type}: {name}", "cpus": args.cpus, "images": args.images, "batch": args.batch, "date": time.strftime("%Y-%m-%d"),
              "machine": platform.platform(), "torch": torch.__version__}
    same = torch.equal(before(np.arange(8)).cpu(), decoded.batch(np.arange(8), device=device).cpu())
    result["rates"] = {"before (host crop, float32, normalise)": rate(before, args.images, args.batch, device),
                       "after, host part (uint8 crop)": rate(after_host, args.images, args.batch, device)}
    if device.type == "cuda":
        result["rates"]["after, on the device (copy, float32, normalise there)"] = rate(
            lambda idx: decoded.batch(idx, device=device), args.images, args.batch, device)
    result["identical views"] = same
    rates = result["rates"]
    result["host speed-up"] = rates["after, host part (uint8 crop)"] / rates["before (host crop, float32, normalise)"]
    for name, value in rates.items():
        print(f"{name:58s} {value:10,.0f} images/s")
    print(f"host speed-up {result['host speed-up']:.1f}x; the views are identical: {same}")
    out = Path(args.out) if args.out else Path(__file__).parent / "results" / f"eval_views_{device.type}.json"
    out.write_text(json.dumps(result, indent=1) + "\n")
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
