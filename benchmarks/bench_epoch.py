"""Images per second of one training epoch on 32x32 images (DCDL's full profile: VGG-9, batches of 10 classes x 10,
triplet loss, Adam) through ``train.fit``, for each way of feeding the model, side by side on the available device:

- ``DataLoader``: a per-image dataset with torchvision's RandomCrop(32, padding=4) + RandomHorizontalFlip on the
  CPU, batched by a DataLoader with ``--workers`` processes, then copied to the device (the usual recipe);
- ``CPU tensor``: the whole dataset as one uint8 tensor in CPU memory, each batch copied to the device and
  augmented there (``augment.random_crop_flip``);
- ``on device``: the dataset moved to the device once (``ArrayDataset.to``), batches indexed and augmented there;
- the last with bfloat16 autocast (``amp``), with ``channels_last``, and with both.

    python benchmarks/bench_epoch.py [--images 50000] [--workers 4] [--device auto]

The images are random uint8 tensors of CIFAR-10's shape (the datasets cannot be downloaded here, and speed does
not depend on the pixels). The script also checks that bfloat16 does not change results: unseen-class Recall@1 of
the digits ConvNet (the smoke setting) trained in float32 and with ``amp``, over three seeds, paired.
Writes benchmarks/results/epoch_<device>.json.
"""

import argparse
import json
import time
from pathlib import Path

import numpy as np
import torch
from torchvision.transforms import v2

from dml_tutorial import augment, data, experiment, losses, models, report, sampling, train


class PerImage(torch.utils.data.Dataset):
    """What a DataLoader pipeline reads: one uint8 image at a time, augmented on the CPU."""

    def __init__(self, ds: data.ArrayDataset):
        self.ds, self.labels = ds, ds.labels
        self.transform = v2.Compose([v2.RandomCrop(32, padding=4), v2.RandomHorizontalFlip(),
                                     v2.ToDtype(torch.float32, scale=True)])

    def __len__(self):
        return len(self.ds)

    def __getitem__(self, i):
        return self.transform(self.ds.x[i]), int(self.ds.labels[i])


def epoch_images_per_second(ds, device, batches, workers=0, **options) -> float:
    """One warm-up epoch of 5 batches, then one timed epoch of ``batches`` batches of 10 x 10."""
    model = models.make_model("vgg9", (3, 32, 32), 64, dropout=0.1)
    times = []
    for n in (5, batches):
        sampler = sampling.PKSampler(ds.labels, p=10, k=10, seed=0, batches_per_epoch=n)
        sync = torch.cuda.synchronize if device.type == "cuda" else (lambda: None)
        sync()
        start = time.perf_counter()
        train.fit(model, losses.triplet_loss, ds, epochs=1, sampler=sampler, device=device, progress=False,
                  num_workers=workers, **options)
        sync()
        times.append(time.perf_counter() - start)
    return batches * 100 / times[-1]


def amp_check(device, seeds=(0, 1, 2)) -> dict:
    """Unseen-class R@1 of the digits ConvNet in float32 and with amp, per seed (does bfloat16 change results?)."""
    splits = data.load_dataset("digits", split="classes", seen=range(6))
    cfg = {"model": "convnet", "dim": 32, "epochs": 25, "lr": 1e-3, "threads": None}
    r1 = {amp: [experiment.train_and_retrieve(splits, losses.triplet_loss, {**cfg, "amp": amp}, p=6, k=16, seed=s,
                                              device=device).metrics["R@1"] for s in seeds] for amp in (False, True)}
    diff = np.subtract(r1[True], r1[False])
    return {"seeds": list(seeds), "R@1 float32": r1[False], "R@1 amp": r1[True],
            "difference mean": float(diff.mean()), "difference std": float(diff.std(ddof=1))}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--images", type=int, default=None, help="default: 50,000 on a GPU, 2,000 on CPU")
    parser.add_argument("--workers", type=int, default=4, help="DataLoader worker processes")
    parser.add_argument("--device", default="auto")
    args = parser.parse_args()
    device = train.resolve_device(args.device)
    n = args.images or (50_000 if device.type == "cuda" else 2_000)
    torch.manual_seed(0)
    ds = data.ArrayDataset(torch.randint(0, 256, (n, 3, 32, 32), dtype=torch.uint8), np.arange(n) % 10)
    name = report.device_name(device)
    print(f"device: {name} | torch {torch.__version__} | {n} images of 3x32x32 | VGG-9, batches of 10 x 10")
    batches = n // 100
    on_device = ds.to(device)
    crop = {"augment": augment.random_crop_flip}
    setups = {
        f"DataLoader ({args.workers} workers, CPU augmentation)": (PerImage(ds), {"workers": args.workers}),
        "CPU tensor, device augmentation": (ds, crop),
        "on device": (on_device, crop),
        "on device + bf16": (on_device, {**crop, "amp": True}),
        "on device + channels_last": (on_device, {**crop, "channels_last": True}),
        "on device + bf16 + channels_last": (on_device, {**crop, "amp": True, "channels_last": True}),
    }
    rows, base = [], None
    for label, (dataset, options) in setups.items():
        ips = epoch_images_per_second(dataset, device, batches, **options)
        base = base or ips
        rows.append({"setup": label, "images_per_s": ips, "vs_dataloader": ips / base})
        print(f"{label:<45} {ips:9.0f} img/s  {ips / base:5.2f}x")
    check = amp_check(device)
    print(f"amp check, digits ConvNet, unseen R@1 over seeds {check['seeds']}: float32 "
          f"{np.mean(check['R@1 float32']):.3f}, amp {np.mean(check['R@1 amp']):.3f}, paired difference "
          f"{check['difference mean']:+.3f} ± {check['difference std']:.3f}")
    out = Path(__file__).parent / "results" / f"epoch_{device.type}.json"
    out.write_text(json.dumps({"device": name, "torch": torch.__version__, "images": n, "threads":
                               torch.get_num_threads(), "rows": rows, "amp_check": check}, indent=1) + "\n")
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
