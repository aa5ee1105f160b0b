"""Training throughput of the full profiles' models on the available device: images per second of one optimiser
step (forward, triplet loss, backward, Adam), in float32 and with bfloat16 autocast + channels_last, side by side.

    python benchmarks/bench_train_step.py [--steps 20] [--warmup 5] [--models vgg9,vgg9+L^W,glyphnet,googlenet,...]

Inputs are random tensors of each profile's image shape, so the figure is the model's ceiling: a real epoch adds
data loading and augmentation on top. Together with a profile's dataset size and epochs it gives the GPU time a
full-profile run needs (the estimate is printed). Writes benchmarks/results/train_step_<device>.json.
"""

import argparse
import json
import platform
import time
from pathlib import Path

import torch

from dml_tutorial import discrepancy, losses, models, train

# model -> (image shape, batch = classes x samples, the chapter whose full profile uses it, images per epoch)
SETUPS = {
    "vgg9": ((3, 32, 32), (10, 10), "dcdl (CIFAR-10, 100 epochs)", 50_000 * 100),
    "googlenet": ((3, 224, 224), (64, 2), "ecaml (Cars196, 100 epochs x 100 batches)", 100 * 100 * 128),
    "resnet34": ((3, 224, 224), (12, 5), "noise_guarantees (CUB, 40 epochs x 100 batches)", 40 * 100 * 60),
    "resnet50": ((3, 224, 224), (32, 4), "EPS (planned)", None),
    "glyphnet": ((1, 32, 32), (12, 5), "test bed II (glyphs, 12 x 5 batches)", None),
    # DCDL's step with its class-wise Sinkhorn term at the paper's weight (L_Trip + 0.5 L^W, eps 2.5e-3): its cost
    # is this row's time over the vgg9 row's, measured side by side (the paper: 0.61 / 0.53 s an epoch, 1.15x)
    "vgg9+L^W": ((3, 32, 32), (10, 10), "dcdl (CIFAR-10), L_Trip + 0.5 L^W", None),
}


def images_per_second(name, device, steps, warmup, fast):
    shape, (p, k), _, _ = SETUPS[name]
    arch, term = name.split("+") if "+" in name else (name, None)
    kwargs = {"pretrained": False} if arch in models.BACKBONES else {}
    model = models.make_model(arch, shape, dim=64 if arch in ("vgg9", "glyphnet") else 128, **kwargs).to(device)
    x = torch.randn(p * k, *shape, device=device)
    y = torch.arange(p, device=device).repeat_interleave(k)
    if fast:
        model, x = model.to(memory_format=torch.channels_last), x.to(memory_format=torch.channels_last)
    opt = torch.optim.Adam(model.parameters(), lr=1e-5)
    dtype = torch.bfloat16 if fast else torch.float32

    def step():
        with torch.autocast(device.type, dtype=dtype, enabled=fast):
            z = model(x)
        loss = losses.triplet_loss(z.float(), y)
        if term:
            loss = loss + 0.5 * discrepancy.classwise_discrepancy(z.float(), y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()

    model.train()
    for _ in range(warmup):
        step()
    sync = torch.cuda.synchronize if device.type == "cuda" else (lambda: None)
    sync()
    start = time.perf_counter()
    for _ in range(steps):
        step()
    sync()
    return steps * p * k / (time.perf_counter() - start)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--models", default=",".join(SETUPS))
    parser.add_argument("--device", default="auto")
    parser.add_argument("--out", default=None, help="JSON file (default: results/train_step_<device>.json)")
    args = parser.parse_args()
    device = train.resolve_device(args.device)
    torch.manual_seed(0)
    name_of_device = torch.cuda.get_device_name(device) if device.type == "cuda" else platform.processor() or "cpu"
    rows = []
    print(f"device: {name_of_device} | torch {torch.__version__} | {args.steps} timed steps after {args.warmup}")
    print(f"{'model':<10} {'fp32 img/s':>11} {'bf16+CL img/s':>14} {'speed-up':>9}  full-profile estimate (bf16)")
    for name in args.models.split(","):
        fp32 = images_per_second(name, device, args.steps, args.warmup, fast=False)
        fast = images_per_second(name, device, args.steps, args.warmup, fast=True)
        _, _, chapter, images = SETUPS[name]
        hours = images / fast / 3600 if images else None
        estimate = f"{hours:.2f} h per run of {chapter}" if hours else chapter
        print(f"{name:<10} {fp32:11.0f} {fast:14.0f} {fast / fp32:8.2f}x  {estimate}")
        rows.append({"model": name, "fp32_images_per_s": fp32, "bf16_channels_last_images_per_s": fast,
                     "speedup": fast / fp32, "chapter": chapter, "hours_per_full_run_bf16": hours})
    speed, sinkhorn = {r["model"]: r for r in rows}, None
    if {"vgg9", "vgg9+L^W"} <= set(speed):
        cost = {f"time_ratio_{kind}": speed["vgg9"][f"{kind}_images_per_s"] / speed["vgg9+L^W"][f"{kind}_images_per_s"]
                for kind in ("fp32", "bf16_channels_last")}
        sinkhorn = {"model": "L^W step cost (vgg9+L^W time / vgg9 time)", **cost, "paper": 0.61 / 0.53}
        print(f"the Sinkhorn term's cost on a VGG-9 step: {cost['time_ratio_fp32']:.2f}x (fp32), "
              f"{cost['time_ratio_bf16_channels_last']:.2f}x (bf16 + channels_last); the paper: 1.15x")
    out = Path(args.out) if args.out else Path(__file__).parent / "results" / f"train_step_{device.type}.json"
    out.write_text(json.dumps({"device": name_of_device, "torch": torch.__version__, "steps": args.steps,
                               "rows": rows, "sinkhorn_term_cost": sinkhorn, "date": time.strftime("%Y-%m-%d"),
                               "machine": platform.platform()}, indent=1) + "\n")
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
