"""Forward + backward time of every loss in dml_tutorial.losses against a naive per-anchor Python loop and against
pytorch-metric-learning (PML) where it has the same loss, side by side in one run (CPU).

    python benchmarks/bench_losses.py [--classes 16] [--per-class 8] [--dim 128] [--repeats 20]

The batch is 16 classes x 8 samples = 128 unit vectors of dimension 128 (issue 4). The loop baseline is what the
vectorised code replaces: one Python iteration per anchor, the anchor's tuples computed with tensor operations.
Each figure is the median over ``--repeats`` runs, the implementations interleaved so that machine noise hits them
alike; the ratios are the figures to quote. Writes benchmarks/results/losses.json.
"""

import argparse
import json
import math
import platform
import statistics
import time
from pathlib import Path

import torch
from pytorch_metric_learning import losses as pml
from pytorch_metric_learning import miners
from pytorch_metric_learning.reducers import MeanReducer

from dml_tutorial import losses


def _anchors(y):
    for a in range(len(y)):
        same = (y == y[a]).nonzero().flatten()
        yield a, same[same != a], (y != y[a]).nonzero().flatten()


def loop_triplet(z, y, margin=0.2):
    vals = []
    for a, ps, ns in _anchors(y):
        d_ap = (z[ps] - z[a]).norm(dim=1)
        d_an = (z[ns] - z[a]).norm(dim=1)
        vals.append(torch.relu(d_ap[:, None] - d_an[None, :] + margin).flatten())
    return torch.cat(vals).mean()


def loop_contrastive(z, y, alpha=0.2, beta=1.4):
    vals = []
    for i in range(len(y) - 1):
        d = (z[i + 1:] - z[i]).norm(dim=1)
        t = (y[i + 1:] == y[i]).to(z.dtype) * 2 - 1
        vals.append(torch.relu((d - beta) * t + alpha))
    return torch.cat(vals).mean()


def _log1p_sum_exp(x):
    return torch.logsumexp(torch.cat([x.new_zeros(1), x]), 0)


def loop_npairs(z, y):
    vals = []
    for a, ps, ns in _anchors(y):
        for p in ps:
            vals.append(_log1p_sum_exp(z[ns] @ z[a] - z[p] @ z[a]))
    return torch.stack(vals).mean()


def loop_angular(z, y, alpha=30.0):
    t2, vals = math.tan(math.radians(alpha)) ** 2, []
    for a, ps, ns in _anchors(y):
        for p in ps:
            vals.append(_log1p_sum_exp(4 * t2 * (z[ns] @ (z[a] + z[p])) - 2 * (1 + t2) * (z[a] @ z[p])))
    return torch.stack(vals).mean()


def loop_margin(z, y, alpha=0.2, beta=1.2):
    terms = []
    for a, ps, ns in _anchors(y):
        d_ap = (z[ps] - z[a]).norm(dim=1)
        d_an = (z[ns] - z[a]).norm(dim=1)
        terms += [torch.relu(alpha + d_ap - beta).repeat_interleave(len(ns)),
                  torch.relu(alpha + beta - d_an).repeat(len(ps))]
    t = torch.cat(terms)
    return t.sum() / (t > 0).sum().clamp(min=1)


def loop_binomial(z, y, alpha=2.0, beta=0.5, eta_neg=25.0):
    u, pull, push = torch.nn.functional.normalize(z, dim=1), [], []  # positive and negative pairs averaged apart
    for a, ps, ns in _anchors(y):
        pull.append(torch.nn.functional.softplus(-alpha * (u[ps] @ u[a] - beta)))
        push.append(torch.nn.functional.softplus(alpha * (u[ns] @ u[a] - beta) * eta_neg))
    return torch.cat(pull).mean() + torch.cat(push).mean()


def loop_multi_similarity(z, y, alpha=2.0, beta=50.0, lam=1.0, eps=0.1):
    u, vals = torch.nn.functional.normalize(z, dim=1), []
    for a, ps, ns in _anchors(y):
        sp, sn = u[ps] @ u[a], u[ns] @ u[a]
        if len(sp) == 0 or len(sn) == 0:
            continue
        kp = sp[sp.detach() - eps < sn.detach().max()]
        kn = sn[sn.detach() + eps > sp.detach().min()]
        if len(kp) and len(kn):
            vals.append(_log1p_sum_exp(-alpha * (kp - lam)) / alpha + _log1p_sum_exp(beta * (kn - lam)) / beta)
    return torch.stack(vals).mean()


def _pml_ms():
    loss, miner = pml.MultiSimilarityLoss(alpha=2, beta=50, base=1), miners.MultiSimilarityMiner(0.1)
    return lambda z, y: loss(z, y, miner(z, y))


# name -> (ours, loop, PML or None). PML's NPairsLoss keeps one positive per anchor and uses cross-entropy over
# the other anchors' positives, a different definition, so it is left out; PML has no binomial deviance.
CASES = {
    "triplet (all triplets)": (lambda z, y: losses.triplet_loss(z, y, negatives="all"), loop_triplet,
                               lambda z, y: pml.TripletMarginLoss(margin=0.2, reducer=MeanReducer())(z, y)),
    "triplet (semihard-random)": (lambda z, y: losses.triplet_loss(z, y), None, None),
    "contrastive / marginal": (losses.contrastive_loss, loop_contrastive,
                               lambda z, y: pml.ContrastiveLoss(pos_margin=1.2, neg_margin=1.6)(z, y)),
    "N-pairs": (losses.npairs_loss, loop_npairs, None),
    "angular": (losses.angular_loss, loop_angular,
                lambda z, y: pml.AngularLoss(alpha=30)(z, y)),
    "angular + N-pairs": (losses.angular_npairs_loss, None, None),
    "margin (all triplets)": (lambda z, y: losses.margin_loss(z, y, negatives="all"), loop_margin,
                              lambda z, y: pml.MarginLoss(margin=0.2, beta=1.2)(z, y)),
    "margin (distance-weighted)": (losses.margin_loss, None, None),
    "binomial deviance": (losses.binomial_deviance_loss, loop_binomial, None),
    "multi-similarity (+ mining)": (losses.multi_similarity_loss, loop_multi_similarity, _pml_ms()),
}


def _time(fn, z, y):
    x = z.clone().requires_grad_(True)
    t = time.perf_counter()
    fn(x, y).backward()
    return time.perf_counter() - t


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--classes", type=int, default=16)
    ap.add_argument("--per-class", type=int, default=8)
    ap.add_argument("--dim", type=int, default=128)
    ap.add_argument("--repeats", type=int, default=20)
    args = ap.parse_args()
    g = torch.Generator().manual_seed(0)
    n = args.classes * args.per_class
    z = torch.nn.functional.normalize(torch.randn(n, args.dim, generator=g), dim=1)
    y = torch.arange(args.classes).repeat_interleave(args.per_class)
    rows = {}
    print(f"forward + backward, batch {args.classes} x {args.per_class} = {n}, d = {args.dim}, "
          f"{torch.get_num_threads()} threads, median of {args.repeats} (ms)")
    print(f"{'loss':30s} {'ours':>8s} {'loop':>9s} {'PML':>8s} {'loop/ours':>10s} {'PML/ours':>9s}")
    for name, (ours, loop, ref) in CASES.items():
        impls = {"ours": ours, "loop": loop, "pml": ref}
        impls = {k: v for k, v in impls.items() if v is not None}
        for fn in impls.values():  # warm-up
            _time(fn, z, y)
        if loop is not None:  # a baseline that computes something else would make the ratio meaningless
            got, want = ours(z, y).item(), loop(z, y).item()
            assert math.isclose(got, want, rel_tol=1e-4), f"{name}: ours {got} vs loop {want}"
        times = {k: [] for k in impls}
        for _ in range(args.repeats):
            for k, fn in impls.items():
                times[k].append(_time(fn, z, y))
        ms = {k: 1e3 * statistics.median(v) for k, v in times.items()}
        rows[name] = {**{f"{k}_ms": v for k, v in ms.items()},
                      **{f"{k}_over_ours": v / ms["ours"] for k, v in ms.items() if k != "ours"}}
        cell = {k: f"{ms[k]:.2f}" if k in ms else "-" for k in ("ours", "loop", "pml")}
        ratio = {k: f"{ms[k] / ms['ours']:.1f}x" if k in ms else "-" for k in ("loop", "pml")}
        print(f"{name:30s} {cell['ours']:>8s} {cell['loop']:>9s} {cell['pml']:>8s} {ratio['loop']:>10s} "
              f"{ratio['pml']:>9s}")
    result = {"batch": n, "classes": args.classes, "dim": args.dim, "repeats": args.repeats, "device": "cpu",
              "threads": torch.get_num_threads(), "machine": platform.platform(), "torch": torch.__version__,
              "date": time.strftime("%Y-%m-%d"), "results": rows}
    path = Path(__file__).with_name("results") / "losses.json"
    path.write_text(json.dumps(result, indent=2) + "\n")
    print(f"written to {path}")


if __name__ == "__main__":
    main()
