"""The fine-grained chapters' input pipeline: the JPEG loader (a DataLoader decoding, cropping and normalising on
the CPU with ``--workers`` processes, as the colab profiles do) against the images decoded once
(:func:`dml_tutorial.data.decode_once`: 256-px uint8 in memory, or on the GPU, cropped, flipped and normalised there
by :meth:`dml_tutorial.data.DecodedImages.training_batch`, as the chapters' ``decode_once`` profiles train), side by
side in one run, on CUB-layout fixtures at CUB's image size.

    python benchmarks/bench_loader.py [--images 512] [--workers 2] [--cpus 2] [--device auto] [--model googlenet]

Measures images/s of (1) the loaders alone over one pass of the training transforms, (2) the one-time decoding,
and, with ``--model`` on a GPU, (3) a training step (forward, triplet loss, backward, Adam; bf16 autocast) fed by
each. ``--cpus`` pins the process and its workers to that many cores (Colab has two). The fixtures are smooth random
images saved as quality-90 JPEGs of 500 x 375 px, about CUB's mean size. Writes results/loader_<device>.json.
"""

import argparse
import json
import os
import platform
import tempfile
import time
from pathlib import Path

import numpy as np
import torch

from dml_tutorial import data, losses, models, train
from dml_tutorial.data.core import ImageListDataset


def fixtures(folder: Path, n: int, classes: int = 16, size=(500, 375)) -> ImageListDataset:
    from PIL import Image

    rng = np.random.default_rng(0)
    paths, labels = [], []
    for i in range(n):
        low = rng.integers(0, 256, (size[1] // 25, size[0] // 25, 3), dtype=np.uint8)  # smooth: JPEG-like sizes
        img = Image.fromarray(low).resize(size, Image.BICUBIC)
        path = folder / f"{i % classes:03d}.class" / f"{i:05d}.jpg"
        path.parent.mkdir(parents=True, exist_ok=True)
        img.save(path, quality=90)
        paths.append(path)
        labels.append(i % classes)
    return ImageListDataset(paths, np.array(labels), data.image_transforms(224, train=True))


def sync(device):
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def jpeg_batches(dataset, workers, batch, device):
    loader = train.loader(dataset, workers, device, batch_size=batch, shuffle=True, drop_last=True,
                          persistent_workers=workers > 0)
    while True:
        for x, y in loader:
            yield x.to(device, non_blocking=True), y.to(device)


def decoded_batches(decoded, batch, device):
    """Batches of the training view the chapters use (``data.DecodedImages.training_batch``: a random 224 crop and
    flip of the uint8 images where they are held, then normalised), with the images on ``device``."""
    on = decoded.to(device)
    labels = torch.as_tensor(decoded.labels, device=device)
    g = torch.Generator().manual_seed(0)
    while True:
        idx = torch.randperm(len(on), generator=g)[:batch].numpy()
        yield on.training_batch(idx), labels[torch.as_tensor(idx, device=device)]


def rate(batches, steps, batch, device, step=None):
    """Images/s over ``steps`` batches after two warm-up ones, each optionally fed to ``step``."""
    for _ in range(2):
        x, y = next(batches)
        step and step(x, y)
    sync(device)
    start = time.perf_counter()
    for _ in range(steps):
        x, y = next(batches)
        step and step(x, y)
    sync(device)
    return steps * batch / (time.perf_counter() - start)


def training_step(name, device):
    model = models.make_model(name, (3, 224, 224), 128, pretrained=False).to(device, memory_format=torch.channels_last)
    opt = torch.optim.Adam(model.parameters(), lr=1e-5)

    def step(x, y):
        with torch.autocast(device.type, dtype=train.amp_precision(device)):
            z = model(x.contiguous(memory_format=torch.channels_last))
        loss = losses.triplet_loss(z.float(), y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()

    return step


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--images", type=int, default=512)
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--steps", type=int, default=6, help="timed batches per measurement")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--cpus", type=int, default=None, help="pin to this many cores (Colab: 2)")
    ap.add_argument("--device", default="auto")
    ap.add_argument("--model", default=None, help="also time a training step fed by each loader (GPU)")
    ap.add_argument("--out", default=None)
    args = ap.parse_args()
    if args.cpus:
        os.sched_setaffinity(0, sorted(os.sched_getaffinity(0))[:args.cpus])
        torch.set_num_threads(args.cpus)
    device = train.resolve_device(args.device)
    name = torch.cuda.get_device_name(device) if device.type == "cuda" else platform.processor() or "cpu"
    result = {"device": f"{device.type}: {name}", "cpus": len(os.sched_getaffinity(0)), "workers": args.workers,
              "images": args.images, "batch": args.batch, "torch": torch.__version__,
              "date": time.strftime("%Y-%m-%d"), "machine": platform.platform()}
    with tempfile.TemporaryDirectory() as tmp:
        dataset = fixtures(Path(tmp) / "images", args.images)
        start = time.perf_counter()
        decoded = data.decode_once(dataset, size=256, cache=Path(tmp) / "decoded", workers=args.workers)
        result["decode_once_images_per_s"] = len(dataset) / (time.perf_counter() - start)
        decoded = data.DecodedImages(decoded.x.clone(), decoded.labels, crop=224)  # in memory, as a chapter holds CUB
        result["jpeg_loader_images_per_s"] = rate(jpeg_batches(dataset, args.workers, args.batch, device),
                                                  args.steps, args.batch, device)
        result["decoded_images_per_s"] = rate(decoded_batches(decoded, args.batch, device), args.steps,
                                              args.batch, device)
        if args.model:
            step = training_step(args.model, device)
            result["model"] = args.model
            result["step_fed_by_jpeg_images_per_s"] = rate(jpeg_batches(dataset, args.workers, args.batch, device),
                                                           args.steps, args.batch, device, step)
            result["step_fed_by_decoded_images_per_s"] = rate(decoded_batches(decoded, args.batch, device),
                                                              args.steps, args.batch, device, step)
    result["decoded_over_jpeg"] = result["decoded_images_per_s"] / result["jpeg_loader_images_per_s"]
    for key, value in result.items():
        print(f"{key:36s} {value:.1f}" if isinstance(value, float) else f"{key:36s} {value}")
    out = Path(args.out) if args.out else Path(__file__).parent / "results" / f"loader_{device.type}.json"
    out.write_text(json.dumps(result, indent=1) + "\n")
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
