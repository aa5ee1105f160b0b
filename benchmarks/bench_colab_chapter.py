"""One CUB chapter's colab profile end to end, as "Run all" on a GPU runs it, on a CUB-layout fixture (the real
CUB cannot reach the benchmark machines): the time the chapter took beside what its plan cell estimated, with the
process pinned to ``--cpus`` cores (Colab has two) and the profile's two JPEG loader workers.

    python benchmarks/bench_colab_chapter.py [--chapter ecaml] [--cpus 2] [--settings "{'epochs': 3}"]

The fixture has CUB's layout and image size (quality-90 JPEGs of 500 x 375 px; ``--classes`` seen and as many
unseen classes of ``--per-class`` images); the pretrained backbone is a stand-in (random weights saved where
torchvision's ImageNet weights would be), so the numbers measure time, not retrieval. Writes
results/colab_chapter_<device>.json with the plan's printed estimate and the chapter's printed check. With
``--timeout`` the chapter is stopped after that many seconds and the file says where it was: the cell running and
its last printed line (papermill saves the notebook every 30 s), so that a run cut short still tells where its
time went; a finished run lists its slowest cells. EPS's even/odd section gets an MNIST of noise images.
"""

import argparse
import ast
import json
import os
import platform
import signal
import struct
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import torch
import torchvision

from dml_tutorial import chapters, models, profiles, train

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


def mnist_fixture(root: Path, train: int = 60_000, test: int = 10_000):
    """torchvision's MNIST files (uncompressed IDX, as ``MNIST(root)`` finds them after a download) of noise images
    at MNIST's size and count, so that EPS's even/odd section runs where nothing can be downloaded."""
    raw, rng = root / "MNIST" / "raw", np.random.default_rng(0)
    raw.mkdir(parents=True, exist_ok=True)
    for prefix, n in (("train", train), ("t10k", test)):
        images, labels = rng.integers(0, 256, (n, 28, 28), dtype=np.uint8), rng.integers(0, 10, n, dtype=np.uint8)
        for kind, magic, values in (("images-idx3", 2051, images), ("labels-idx1", 2049, labels)):
            header = struct.pack(">I", magic) + b"".join(struct.pack(">I", d) for d in values.shape)
            (raw / f"{prefix}-{kind}-ubyte").write_bytes(header + values.tobytes())


def stand_in_weights(torch_home: Path, arch: str):
    fn, weights = models.BACKBONES[arch]
    target = torch_home / "hub" / "checkpoints" / getattr(torchvision.models, weights).DEFAULT.url.rsplit("/", 1)[-1]
    target.parent.mkdir(parents=True, exist_ok=True)
    kwargs = {"aux_logits": True, "init_weights": True} if arch == "googlenet" else {}
    torch.save(getattr(torchvision.models, fn)(weights=None, **kwargs).state_dict(), target)


def cells_of(notebook: Path) -> list[dict]:
    """The executed notebook's cells (none if the chapter stopped before papermill first saved it)."""
    return json.loads(notebook.read_text())["cells"] if notebook.exists() else []


def printed(cells: list[dict]) -> list[str]:
    return ["".join(o.get("text", "")) for c in cells if c["cell_type"] == "code" for o in c.get("outputs", [])]


def stopped_at(cells: list[dict]) -> dict:
    """The cell a stopped run was in (papermill marks it "running" in the saved copy): its index, first line and
    last printed line (a progress bar's last state)."""
    for i, cell in enumerate(cells):
        if cell.get("metadata", {}).get("papermill", {}).get("status") == "running":
            text = "".join("".join(o.get("text", "")) for o in cell.get("outputs", []))
            lines = [x for x in text.replace("\r", "\n").splitlines() if x.strip()]
            return {"cell": i, "source": "".join(cell["source"]).splitlines()[0], "last": lines[-1] if lines else ""}
    return {}


def slowest_cells(cells: list[dict], top: int = 5) -> list[dict]:
    """The cells that took longest (papermill's per-cell ``duration``): index, first line, seconds."""
    timed = [(c.get("metadata", {}).get("papermill", {}).get("duration") or 0.0, i, c) for i, c in enumerate(cells)]
    return [{"cell": i, "source": "".join(c["source"]).splitlines()[0], "seconds": round(d, 1)}
            for d, i, c in sorted(timed, key=lambda t: -t[0])[:top] if d > 0]


def run_chapter(chapter: str, tmp: Path, settings: str, timeout: float | None) -> tuple[int | str, float]:
    """``dml-tutorial run <chapter> --profile colab`` on the fixture, in its own process group: (exit code or
    "timeout", seconds)."""
    cmd = [sys.executable, "-m", "dml_tutorial", "run", chapter, "--profile", "colab", "-p", "DATA_ROOT",
           str(tmp / "data"), "-p", "RUNS", str(tmp / "runs"), "-p", "SETTINGS", settings, "--output", str(tmp / "out")]
    env = {**os.environ, "TORCH_HOME": str(tmp / "torch"), chapters.FOLDER_ENV: str(tmp / "notebooks"),
           "PYTHONPATH": os.pathsep.join([str(chapters.REPOSITORY), os.environ.get("PYTHONPATH", "")])}
    start = time.perf_counter()
    child = subprocess.Popen(cmd, env=env, start_new_session=True)
    try:
        code = child.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(child.pid, signal.SIGTERM)  # the kernel, in a session of its own, exits with its parent
        child.wait()
        code = "timeout"
    return code, time.perf_counter() - start


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--chapter", default="ecaml", choices=sorted(BACKBONE))
    ap.add_argument("--cpus", type=int, default=2)
    ap.add_argument("--classes", type=int, default=100, help="seen classes, and as many unseen (CUB: 100)")
    ap.add_argument("--per-class", type=int, default=30, help="images a class (CUB: about 59)")
    ap.add_argument("--settings", default="{}",
                    help="the notebook's SETTINGS (a Python dict, as `dml-tutorial run -p`), e.g. fewer epochs")
    ap.add_argument("--timeout", type=float, default=None, help="seconds before the chapter is stopped")
    ap.add_argument("--out", default=None)
    args = ap.parse_args()
    changes = ast.literal_eval(args.settings)  # as cli's -p reads it: True/False/None, not JSON's
    os.sched_setaffinity(0, sorted(os.sched_getaffinity(0))[:args.cpus])  # the kernel and its workers inherit it
    device = train.resolve_device("auto")
    name = torch.cuda.get_device_name(device) if device.type == "cuda" else platform.processor() or "cpu"
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        start = time.perf_counter()
        cub_fixture(tmp / "data", args.classes, args.per_class)
        stand_in_weights(tmp / "torch", BACKBONE[args.chapter])
        if args.chapter == "eps":  # its even/odd section reads MNIST
            mnist_fixture(tmp / "data")
        fixture_seconds = time.perf_counter() - start
        (tmp / "notebooks").mkdir()
        source = chapters.REPOSITORY / "notebooks" / f"{NOTEBOOK[args.chapter]}.ipynb"
        (tmp / "notebooks" / source.name).write_bytes(source.read_bytes())
        code, seconds = run_chapter(args.chapter, tmp, args.settings, args.timeout)
        cells = cells_of(tmp / "out" / source.name)
        texts, where, slowest = printed(cells), stopped_at(cells), slowest_cells(cells)
    plan_text = next((t for t in texts if "Plan of the" in t), "")
    result = {"device": f"{device.type}: {name}", "cpus": args.cpus, "chapter": args.chapter, "exit": code,
              "settings": changes, "profile": "colab",
              "fixture": f"{2 * args.classes} classes x {args.per_class} JPEGs of 500 x 375 px",
              "fixture_seconds": round(fixture_seconds, 1), "seconds": round(seconds, 1), "stopped_in": where,
              "slowest_cells": slowest,
              "plan": plan_text, "check": texts[-1] if texts and code == 0 else "",
              "settings_hash": profiles.settings_hash(profiles.settings(args.chapter, "colab", changes)),
              "torch": torch.__version__, "date": time.strftime("%Y-%m-%d")}
    print(json.dumps(result, indent=1))
    out = Path(args.out) if args.out else Path(__file__).parent / "results" / f"colab_chapter_{device.type}.json"
    out.write_text(json.dumps(result, indent=1) + "\n")


if __name__ == "__main__":
    main()
