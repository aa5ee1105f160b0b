"""One CUB chapter's colab profile end to end, as "Run all" on a GPU runs it, on a CUB-layout fixture (the real
CUB cannot reach the benchmark machines): the time the chapter took beside what its plan cell estimated, with the
process pinned to ``--cpus`` cores (Colab has two) and the profile's two JPEG loader workers.

    python benchmarks/bench_colab_chapter.py [--chapter ecaml] [--cpus 2] [--settings "{'epochs': 3}"]

The fixture has CUB's layout and image size (quality-90 JPEGs of 500 x 375 px; ``--classes`` seen and as many
unseen classes of ``--per-class`` images); the pretrained backbone is a stand-in (random weights saved where
torchvision's ImageNet weights would be), so the numbers measure time, not retrieval. Writes
results/colab_chapter_<device>.json with the plan's printed estimate and the chapter's printed check.
"""

import argparse
import ast
import json
import os
import platform
import tempfile
import time
from pathlib import Path

import numpy as np
import torch
import torchvision

from dml_tutorial import chapters, cli, models, profiles, train

BACKBONE = {"ecaml": "googlenet", "cbswr": "googlenet", "noise_guarantees": "resnet34", "eps": "resnet50"}
NOTEBOOK = {"ecaml": "06_ecaml", "cbswr": "04_cbswr", "noise_guarantees": "07_noise_guarantees", "eps": "05_eps"}


def cub_fixture(root: Path, classes: int, per_class: int):
    """CUB-200-2011's layout (images.txt, image_class_labels.txt, images/): classes 1.. seen, 101.. unseen."""
    from PIL import Image

    base, rng = root / "CUB_200_2011", np.random.default_rng(0)
    files, labels = [], []
    for c in [*range(1, classes + 1), *range(101, 101 + classes)]:
        for _ in range(per_class):
            rel = f"{c:03d}.bird/img_{len(files) + 1}.jpg"
            (base / "images" / rel).parent.mkdir(parents=True, exist_ok=True)
            low = rng.integers(0, 256, (15, 20, 3), dtype=np.uint8)
            Image.fromarray(low).resize((500, 375), Image.BICUBIC).save(base / "images" / rel, quality=90)
            files.append(f"{len(files) + 1} {rel}")
            labels.append(f"{len(labels) + 1} {c}")
    (base / "images.txt").write_text("\n".join(files) + "\n")
    (base / "image_class_labels.txt").write_text("\n".join(labels) + "\n")


def stand_in_weights(torch_home: Path, arch: str):
    fn, weights = models.BACKBONES[arch]
    target = torch_home / "hub" / "checkpoints" / getattr(torchvision.models, weights).DEFAULT.url.rsplit("/", 1)[-1]
    target.parent.mkdir(parents=True, exist_ok=True)
    kwargs = {"aux_logits": True, "init_weights": True} if arch == "googlenet" else {}
    torch.save(getattr(torchvision.models, fn)(weights=None, **kwargs).state_dict(), target)


def printed(notebook: Path) -> list[str]:
    cells = json.loads(notebook.read_text())["cells"]
    return ["".join(o.get("text", "")) for c in cells if c["cell_type"] == "code" for o in c.get("outputs", [])]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--chapter", default="ecaml", choices=sorted(BACKBONE))
    ap.add_argument("--cpus", type=int, default=2)
    ap.add_argument("--classes", type=int, default=20)
    ap.add_argument("--per-class", type=int, default=30)
    ap.add_argument("--settings", default="{}",
                    help="the notebook's SETTINGS (a Python dict, as `dml-tutorial run -p`), e.g. fewer epochs")
    ap.add_argument("--out", default=None)
    args = ap.parse_args()
    changes = ast.literal_eval(args.settings)  # as cli's -p reads it: True/False/None, not JSON's
    os.sched_setaffinity(0, sorted(os.sched_getaffinity(0))[:args.cpus])  # the kernel and its workers inherit it
    device = train.resolve_device("auto")
    name = torch.cuda.get_device_name(device) if device.type == "cuda" else platform.processor() or "cpu"
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        cub_fixture(tmp / "data", args.classes, args.per_class)
        stand_in_weights(tmp / "torch", BACKBONE[args.chapter])
        os.environ["TORCH_HOME"] = str(tmp / "torch")
        (tmp / "notebooks").mkdir()
        source = chapters.REPOSITORY / "notebooks" / f"{NOTEBOOK[args.chapter]}.ipynb"
        (tmp / "notebooks" / source.name).write_bytes(source.read_bytes())
        os.environ[chapters.FOLDER_ENV] = str(tmp / "notebooks")
        start = time.perf_counter()
        code = cli.main(["run", args.chapter, "--profile", "colab", "-p", "DATA_ROOT", str(tmp / "data"),
                         "-p", "RUNS", str(tmp / "runs"), "-p", "SETTINGS", args.settings,
                         "--output", str(tmp / "out")])
        seconds = time.perf_counter() - start
        texts = printed(tmp / "out" / source.name)
    plan_text = next((t for t in texts if "Plan of the" in t), "")
    result = {"device": f"{device.type}: {name}", "cpus": args.cpus, "chapter": args.chapter, "exit": code,
              "settings": changes, "profile": "colab",
              "fixture": f"{2 * args.classes} classes x {args.per_class} JPEGs of 500 x 375 px",
              "seconds": round(seconds, 1), "plan": plan_text, "check": texts[-1] if texts else "",
              "settings_hash": profiles.settings_hash(profiles.settings(args.chapter, "colab", changes)),
              "torch": torch.__version__, "date": time.strftime("%Y-%m-%d")}
    print(json.dumps(result, indent=1))
    out = Path(args.out) if args.out else Path(__file__).parent / "results" / f"colab_chapter_{device.type}.json"
    out.write_text(json.dumps(result, indent=1) + "\n")


if __name__ == "__main__":
    main()
