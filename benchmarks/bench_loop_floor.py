"""Test bed II's training loop against its floor (issue #50, item 3): how close a chapter's training runs to the
forward + loss + backward + optimiser step of the same network on the same batch, and what the scoring after it costs.

For each method (a name of ``bench.METHODS``; the default: the zero-shot chapters' baseline and DCDL's Sinkhorn term
on the same batches), on test bed II's training split (the ``glyphs2`` profile: GlyphNet, P x K = 12 x 5 images,
Adam at the profile's rate), side by side in one process, alternating ``--repeats`` times:

- **the loop**: ``experiment._train``, the function every chapter trains with (``train.fit`` with its sampler, batch
  gathering, finiteness check and per-step loss read-out), for ``--steps`` steps after ``--warmup`` steps;
- **the floor**: the same network, loss and optimiser on the same batches, gathered into memory beforehand:
  ``model(x)``, the loss, ``zero_grad``, ``backward``, ``step``, and nothing else;
- **the scoring** a retrieval run adds once after training, part by part: the test and training splits embedded,
  each of the bench's measures (``bench.scores``: MAP@R, R@1, NMI with k-means into as many clusters as classes), and
  a zero-shot chapter's own measures (``metrics.evaluate``).

It prints and saves (``results/loop_floor_cpu.json``) the images/s of both, the loop's share of the floor (the
issue's target: 80% or better), and, for one training of the profile's length, the seconds of training beside those
of a bench run's scoring (the test split embedded and its three measures). Medians over the repeats; the loop and the floor alternate, so that a noisy host slows both alike.

    python benchmarks/bench_loop_floor.py [--steps 200] [--repeats 3] [--threads 2]
"""

import argparse
import json
import platform
import statistics
import time
from pathlib import Path
from types import SimpleNamespace

import torch

from dml_tutorial import bench, data, experiment, metrics, models, profiles, sampling, train

RESULTS = Path(__file__).parent / "results"
METHODS = ("Triplet, random semi-hard", "Triplet + L^W")


def loop_seconds(splits, loss_fn, cfg: dict, steps: int, seed: int) -> float:
    """Seconds of ``steps`` training steps through ``experiment._train`` (one epoch of ``steps`` batches)."""
    cfg = {**cfg, "epochs": 1, "batches_per_epoch": steps}
    _, history, _ = experiment._train(splits.train, loss_fn, cfg, p=cfg["p"], k=cfg["k"], seed=seed, device="cpu",
                                      progress=False, checkpoint=None)
    return history.records[0]["seconds"]  # the epoch's loop alone (no model building, no start)


def floor_seconds(splits, loss_fn, cfg: dict, steps: int, seed: int) -> float:
    """Seconds of ``steps`` bare steps of the same network, loss and optimiser on the same P x K batches as the loop
    draws, gathered into memory beforehand (not one batch repeated: DCDL's Sinkhorn solve runs to convergence, and
    a batch seen again converges in fewer iterations, which would make a floor that no training has)."""
    train.seed_everything(seed, threads=cfg["threads"])
    model = models.from_settings(cfg, data.input_shape(splits.train))
    optimizer = experiment.OPTIMIZERS[cfg.get("optimizer", "adam")](model.parameters(), lr=cfg["lr"])
    sampler = sampling.PKSampler(splits.train.labels, p=cfg["p"], k=cfg["k"], seed=seed, batches_per_epoch=steps)
    batches = [(splits.train.batch(idx), torch.as_tensor(splits.train.labels[idx]), idx) for idx in sampler]
    arity = train._loss_arity(loss_fn)
    model.train()
    began = time.perf_counter()
    for x, y, idx in batches:
        z = model(x)
        loss = loss_fn(z, y) if arity < 3 else loss_fn(z, y, SimpleNamespace(x=x, indices=idx, model=model))
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
    return time.perf_counter() - began


def scoring_seconds(splits, cfg: dict, seed: int) -> dict:
    """Seconds of each part of the scoring after one training, on an untrained network's embeddings: the unseen
    test split and the training split embedded (a zero-shot chapter keeps both; the bench now embeds the test
    split alone), each of the bench's measures (``bench.scores``), and a chapter's own (``metrics.evaluate``: Recall@K,
    then NMI and F1 from one k-means of ``cluster_classes`` classes)."""
    train.seed_everything(seed, threads=cfg["threads"])
    model = models.from_settings(cfg, data.input_shape(splits.train))
    out = {}

    def timed(name, fn):
        began = time.perf_counter()
        result = fn()
        out[name] = time.perf_counter() - began
        return result

    z = timed("embed the test split", lambda: train.embed(model, splits.test))
    timed("embed the training split", lambda: train.embed(model, splits.train))
    for measure in bench.MEASURES:
        timed(f"bench: {measure}", lambda m=measure: bench.scores(z, splits.test.labels, seed, (m,)))
    timed(f"chapter: R@K, NMI and F1 ({cfg['cluster_classes']} classes)",
          lambda: metrics.evaluate(z, splits.test.labels, seed=seed, cluster_classes=cfg["cluster_classes"], f1=True))
    return out


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--methods", nargs="*", default=list(METHODS), help="names of bench.METHODS")
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--warmup", type=int, default=20)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--out", default=str(RESULTS / "loop_floor_cpu.json"))
    args = parser.parse_args(argv)
    cfg = profiles.settings("bench", "glyphs2").replace(threads=args.threads, start=None)
    torch.set_num_threads(args.threads)
    splits = data.load_dataset("glyphs", split="classes", seed=0, **cfg["dataset_options"])
    length = cfg["epochs"] * cfg["batches_per_epoch"]  # one training of the profile
    batch = cfg["p"] * cfg["k"]
    out = {"split": repr(splits), "batch": f"{cfg['p']} x {cfg['k']}", "model": cfg["model"], "steps": args.steps,
           "repeats": args.repeats, "threads": args.threads, "machine": platform.platform(),
           "processor": platform.processor(), "torch": torch.__version__, "date": time.strftime("%Y-%m-%d"),
           "rows": {}}
    timings = [scoring_seconds(splits, cfg, seed) for seed in range(args.repeats)]
    out["scoring seconds"] = {part: statistics.median(t[part] for t in timings) for part in timings[0]}
    print(repr(splits), "\nscoring once, seconds:", flush=True)
    for part, seconds in out["scoring seconds"].items():
        print(f"  {part:48s} {seconds:6.2f}", flush=True)
    bench_scoring = sum(v for k, v in out["scoring seconds"].items() if k == "embed the test split" or
                        k.startswith("bench: "))  # what a bench run adds to its training
    for name in args.methods:
        loss_fn = bench.make_loss(name)
        loop_seconds(splits, loss_fn, cfg, args.warmup, seed=0)  # warm-up: first allocations, lazy imports
        loops, floors = [], []
        for r in range(args.repeats):
            loops.append(loop_seconds(splits, loss_fn, cfg, args.steps, seed=r))
            floors.append(floor_seconds(splits, loss_fn, cfg, args.steps, seed=r))
        loop, floor = statistics.median(loops), statistics.median(floors)
        scoring = bench_scoring
        row = {"loop images/s": args.steps * batch / loop, "floor images/s": args.steps * batch / floor,
               "loop / floor": floor / loop, "loop ms/step": 1000 * loop / args.steps,
               "floor ms/step": 1000 * floor / args.steps, "loop seconds (all repeats)": loops,
               "floor seconds (all repeats)": floors,
               f"one training of {length} steps, s": length * loop / args.steps,
               "bench scoring's share of one training + scoring": scoring / (length * loop / args.steps + scoring)}
        out["rows"][name] = row
        share = row["bench scoring's share of one training + scoring"]
        print(f"{name:28s} loop {row['loop images/s']:7.0f} img/s  floor {row['floor images/s']:7.0f} img/s  "
              f"loop at {100 * row['loop / floor']:.0f}% of the floor; {length} steps "
              f"{length * loop / args.steps:.0f} s, scoring {100 * share:.0f}% of training + scoring", flush=True)
    Path(args.out).write_text(json.dumps(out, indent=1, default=float) + "\n")
    print(f"wrote {args.out}")
    return out


if __name__ == "__main__":
    main()
