"""The small worked examples the chapters draw before any training: toy batches in the plane and random unit
vectors, each made from a seeded generator, drawn with :mod:`dml_tutorial.plots`, with the numbers their captions
and sentences read. A chapter calls one per picture, so that its page shows the picture and the sentence, and the
drawing code lives here, tested (``tests/test_toys.py``).

    fig, text = toys.two_views(seed=0)           # DCDL, section 1: a triplet's view and L^W's of one batch
    x, y = toys.plane_classes(generator)         # DCDL, section 2: a class of 8 points and the rest, 12

Costs follow the DCDL chapter's convention, ``C(u, v) = |u - v|^2 / 2``; POT's ``ot.dist`` is ``|u - v|^2``, so
its cost matrix is halved (or its entropic ``reg`` doubled) where the two meet.
"""

from __future__ import annotations

from functools import partial

import matplotlib.pyplot as plt
import numpy as np
import ot
import torch

from . import discrepancy, plots, sampling


# --- DCDL, section 1: one batch seen by a triplet and by L^W ---------------------------------------------------------
def two_views(seed: int = 0):
    """A batch in the plane, class 0 around (-1, 0) and class 1 around (1, 0) with three of its ten points inside
    class 0: left, the negatives semi-hard mining may draw for one anchor and its positive
    (:func:`dml_tutorial.sampling.negative_frequencies`); right, the exact transport plan between class 1 and the
    rest (:func:`ot.emd`, squared Euclidean cost), which moves every point, the strays included. Returns the
    figure and a sentence: the transport cost with and without the strays, and how many negatives mining draws."""
    g = torch.Generator().manual_seed(seed)
    own = torch.randn(10, 2, generator=g) * 0.3 + torch.tensor([-1.0, 0.0])  # class 0
    other = torch.randn(10, 2, generator=g) * 0.3 + torch.tensor([1.0, 0.0])  # class 1
    strays = torch.randn(3, 2, generator=g) * 0.15 + torch.tensor([-1.0, 0.0])  # three of class 1 inside class 0
    other_with_strays = torch.cat([strays, other[3:]])
    xy, y = torch.cat([own, other_with_strays]), torch.tensor([0] * 10 + [1] * 10)
    anchor, positive = 0, 1
    freq = sampling.negative_frequencies(xy, y, anchor, positive, "semihard-random", margin=0.2)
    coupling, with_strays = _exact_plan(other_with_strays, own)
    fig, axes = plt.subplots(1, 2, figsize=(10, 4.2), constrained_layout=True)
    plots.sampling_panel(axes[0], xy.numpy(), y.numpy(), anchor, positive, freq,
                         title="a triplet: one anchor, its positive, the negatives it may draw", margin=0.2)
    plots.transport_panel(axes[1], other_with_strays, own, coupling, "L^W: class 1 against the rest, all at once",
                          colors=(1, 0))
    low, high = xy.min(0).values - 0.3, xy.max(0).values + 0.3
    for ax in axes:
        ax.set(xlim=(low[0], high[0]), ylim=(low[1], high[1]), aspect="equal")
    fig.suptitle("One batch, two views: three points of class 1 (orange) sit inside class 0 (blue)")
    text = (f"OT cost from class 1 to class 0: {with_strays:.2f} with the three strays, "
            f"{_exact_plan(other, own)[1]:.2f} without them; semi-hard negatives drawn for this anchor: "
            f"{int((freq > 0).sum())} of the batch's {int((y != y[anchor]).sum())}")
    return fig, text


def _exact_plan(x, z):
    """The exact plan between two clouds of 10 points (uniform weights) and its cost, squared Euclidean."""
    uniform = np.full(10, 0.1)
    cost = ot.dist(x.double().numpy(), z.double().numpy())
    plan = ot.emd(uniform, uniform, cost)
    return plan, float((plan * cost).sum())


# --- DCDL, section 2: optimal transport and MMD on a 2-D example -----------------------------------------------------
def plane_classes(generator: torch.Generator) -> tuple[torch.Tensor, torch.Tensor]:
    """``(x, y)`` in float64: a "class" of 8 points around (-0.8, 0.2) and "the rest", 12 points in two groups of 6
    around (0.9, 0.6) and (0.5, -0.9), drawn from ``generator`` (which the chapter goes on drawing from)."""
    x = torch.randn(8, 2, generator=generator, dtype=torch.float64) * 0.35 + torch.tensor([-0.8, 0.2],
                                                                                        dtype=torch.float64)
    y = torch.cat([torch.randn(6, 2, generator=generator, dtype=torch.float64) * 0.3 + torch.tensor([0.9, 0.6]),
                   torch.randn(6, 2, generator=generator, dtype=torch.float64) * 0.3 + torch.tensor([0.5, -0.9])])
    return x, y


def _uniform_costs(x, y):
    """Uniform weights of ``x`` and ``y`` and POT's cost matrix ``|x - y|^2`` (twice the chapter's cost)."""
    n, m = len(x), len(y)
    return torch.full((n,), 1 / n, dtype=torch.float64), torch.full((m,), 1 / m, dtype=torch.float64), ot.dist(x, y)


def transport_plans(x, y, epsilons=(0.03, 0.1, 1.0)):
    """Four panels: the exact plan from ``x`` to ``y`` (:func:`ot.emd`) and the entropic plans at each of
    ``epsilons`` (:func:`ot.sinkhorn` in the log domain, ``reg = 2 eps`` for POT's doubled cost)."""
    a, b, cost = _uniform_costs(x, y)
    plans = {"exact OT (ot.emd)": ot.emd(a, b, cost)}
    for eps in epsilons:
        plans[f"entropic, ε = {eps:g}"] = ot.sinkhorn(a, b, cost, reg=2 * eps, method="sinkhorn_log",
                                                     numItermax=100_000)
    fig, axes = plt.subplots(1, len(plans), figsize=(10, 3.0), constrained_layout=True)
    for ax, (title, coupling) in zip(axes, plans.items()):
        plots.transport_panel(ax, x, y, coupling, title)
    axes[0].legend(loc="lower left", fontsize=8)
    fig.suptitle("Transport plans from x (class k) to y (the rest); darker segments carry more mass")
    return fig


def divergence_limits(x, y, paper_epsilon: float = 2.5e-3):
    """The Sinkhorn divergence of :func:`dml_tutorial.discrepancy.sinkhorn_divergence` between ``x`` and ``y``
    over eps from 1e-3 to 100, between its two limits: exact OT (:func:`ot.emd2` of the chapter's cost) and the
    energy distance ``|mean x - mean y|^2 / 2`` (supplement eq. 14). Returns the figure and a sentence of the
    values, at the paper's eps among them."""
    a, b, cost = _uniform_costs(x, y)
    epsilons = np.logspace(-3, 2, 26)
    s_eps = [discrepancy.sinkhorn_divergence(x, y, epsilon=float(e)).item() for e in epsilons]
    exact = ot.emd2(a, b, cost / 2).item()
    energy = ((x.mean(0) - y.mean(0)) ** 2).sum().item() / 2
    fig, ax = plt.subplots(figsize=(6.5, 3.8), constrained_layout=True)
    ax.semilogx(epsilons, s_eps, "o-", color=plots.PALETTE[0], label=r"$S_\varepsilon(x, y)$ (dml_tutorial)")
    ax.axhline(exact, color=plots.PALETTE[1], ls="--", label="exact OT (ot.emd2)")
    ax.axhline(energy, color=plots.PALETTE[2], ls=":", label=r"energy distance $\|\bar x - \bar y\|^2/2$")
    ax.axvline(paper_epsilon, color="grey", lw=0.8)
    ax.text(paper_epsilon * 1.08, energy, " paper's ε", color="grey", fontsize=8, va="bottom")
    ax.set(xlabel="ε", ylabel="value", title="The Sinkhorn divergence between its two limits")
    ax.legend(fontsize=8)
    at_paper = discrepancy.sinkhorn_divergence(x, y, epsilon=paper_epsilon).item()
    text = (f"exact OT {exact:.4f} | S_eps at eps = {paper_epsilon:g}: {at_paper:.4f} | S_eps at eps = 100: "
            f"{s_eps[-1]:.4f} | energy distance {energy:.4f}")
    return fig, text


def mmd_bandwidths(generator: torch.Generator, paper_sigma: float = 0.05):
    """DCDL's MMD term (:func:`dml_tutorial.discrepancy.classwise_discrepancy`) on two classes of 10 random unit
    vectors in 64-d drawn from ``generator``, its value and its gradient's norm over bandwidths from 0.01 to 10,
    for the Laplacian and the Gaussian kernel: at the paper's sigma the kernel matrix is the identity (distances
    about 1.4) and the gradient vanishes. Returns the figure and a line per kernel."""
    z = torch.nn.functional.normalize(torch.randn(20, 64, generator=generator), dim=1).requires_grad_()
    labels = torch.tensor([0] * 10 + [1] * 10)
    sigmas = np.logspace(-2, 1, 31)

    def term(kernel, sigma):
        value = discrepancy.classwise_discrepancy(z, labels, "mmd", kernel=kernel, sigma=sigma)
        return -value.item(), torch.autograd.grad(value, z)[0].norm().item()

    fig, axes = plt.subplots(1, 2, figsize=(10, 3.4), constrained_layout=True)
    lines = []
    for i, kernel in enumerate(("laplacian", "gaussian")):
        values, grads = zip(*(term(kernel, float(s)) for s in sigmas))
        axes[0].semilogx(sigmas, values, color=plots.PALETTE[i], label=kernel)
        axes[1].loglog(sigmas, np.maximum(grads, 1e-30), color=plots.PALETTE[i], label=kernel)
        # the gradient is float rounding noise (about 1e-10 or 0): bounded, not printed
        value, grad = term(kernel, paper_sigma)
        lines.append(f"{kernel:9s} sigma = {paper_sigma:g}: sum of MMD^2 = {value:.4f} (identity kernel: 2 x "
                     f"(1/10 + 1/10) = 0.4), |gradient| < 1e-8: {grad < 1e-8}; median sigma: |gradient| = "
                     f"{term(kernel, 'median')[1]:.1e}")
    median = discrepancy.pairwise_distances(z.detach())[~torch.eye(20, dtype=torch.bool)].median().item()
    for ax in axes:
        ax.axvline(paper_sigma, color="grey", ls="--", lw=0.8)
        ax.axvline(median, color="grey", ls=":", lw=0.8)
        ax.set_xlabel(f"σ (dashed: the paper's {paper_sigma:g}, dotted: the median distance)")
        ax.legend(fontsize=8)
    axes[0].set(ylabel=r"$\sum_k \mathrm{MMD}^2(Z_k^+, Z_k^-)$", title="Value of the MMD term, random unit vectors")
    axes[1].set(ylabel="|gradient| w.r.t. the embeddings", title="Its gradient")
    return fig, "\n".join(lines)


def flows(seed: int = 0, steps: int = 40, lr: float = 0.1):
    """A cloud of 40 points around (-0.7, 0) descending each divergence towards a fixed half circle of 40 points
    about 1.3 away (:func:`dml_tutorial.discrepancy.gradient_flow`, after Feydy et al. 2019, fig. 2): the paper's
    Laplacian MMD at sigma 0.05, the same at the median distance, and the Sinkhorn divergence at sqrt(eps) = 0.05.
    Returns the figure and a sentence: the share of points that ended within 0.05 of a target point."""
    g = torch.Generator().manual_seed(seed)
    arc = torch.linspace(-np.pi / 2, np.pi / 2, 40, dtype=torch.float64)
    source = torch.randn(40, 2, generator=g, dtype=torch.float64) * 0.12 + torch.tensor([-0.7, 0.0],
                                                                                       dtype=torch.float64)
    target = torch.stack([0.6 + 0.35 * torch.cos(arc), 0.35 * torch.sin(arc)], 1)
    divergences = {"MMD, σ = 0.05": partial(discrepancy.mmd, kernel="laplacian", sigma=0.05),
                   "MMD, median σ": partial(discrepancy.mmd, kernel="laplacian", sigma="median"),
                   "Sinkhorn, ε = 0.05²": partial(discrepancy.sinkhorn_divergence, epsilon=2.5e-3)}
    paths = {name: discrepancy.gradient_flow(source, target, d, steps=steps, lr=lr) for name, d in divergences.items()}
    fig = plots.gradient_flows(paths, target, times=(0, 5, 10, steps))
    fig.suptitle(f"Gradient descent of x (blue) on D(x, y) towards y (grey): {steps} steps of {lr:g}")
    arrived = {name: ((p[-1][:, None] - target[None]).norm(dim=2).min(1).values < 0.05).double().mean().item()
               for name, p in paths.items()}
    text = (f"points of x within 0.05 of a point of y after {steps} steps: "
            + ", ".join(f"{name} {100 * share:.0f} %" for name, share in arrived.items()))
    return fig, text


# --- Foundations: the triplet hinge ----------------------------------------------------------------------------------
def triplet_hinge(margins=(0.1, 0.2, 0.5), positive_angle: float = 0.5):
    """The triplet loss (:func:`dml_tutorial.losses.triplet_loss`, every negative) of an anchor at angle 0, a
    positive at ``positive_angle`` (radians) and a negative swept from 0 to 180 degrees, on the unit circle, for
    each of ``margins``: the hinge stops pushing once the negative is a margin further than the positive."""
    from . import losses

    angles = np.linspace(0, np.pi, 181)
    anchor = torch.tensor([[1.0, 0.0]])
    positive = torch.tensor([[np.cos(positive_angle), np.sin(positive_angle)]], dtype=torch.float32)
    labels = torch.tensor([0, 0, 1])

    def at(t, margin):
        negative = torch.tensor([[np.cos(t), np.sin(t)]], dtype=torch.float32)
        return losses.triplet_loss(torch.cat([anchor, positive, negative]), labels, margin=margin,
                                   negatives="all").item()

    fig, ax = plt.subplots(figsize=(6, 3.1), constrained_layout=True)
    for i, margin in enumerate(margins):
        ax.plot(np.degrees(angles), [at(t, margin) for t in angles], color=plots.PALETTE[i],
                label=f"margin α = {margin}")
    ax.axvline(np.degrees(positive_angle), color="grey", ls=":", label="angle of the positive")
    ax.set(xlabel="angle between anchor and negative (degrees)", ylabel="triplet loss (averaged over 2 anchors)",
           title="The hinge stops pushing once the negative is far enough")
    ax.legend(frameon=False)
    return fig


# --- The loss zoo: distance-weighted sampling ------------------------------------------------------------------------
def distance_weighting(seed: int = 0, dims=(2, 16, 64, 128, 512), sampled_dims=(16, 64, 512)):
    """Left: :func:`dml_tutorial.sampling.distance_weights` as a sampling probability over distances 0.3-1.9 in
    each of ``dims`` dimensions (Wu et al. 2017: q(d)^-1, clipped, cut at 1.4); right, why: the distances between
    400 random unit vectors in each of ``sampled_dims`` concentrate at sqrt(2)."""
    d = torch.linspace(0.3, 1.9, 400, dtype=torch.float64)
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(10, 3.4))
    for n in dims:
        w = sampling.distance_weights(d[None, :], dim=n)[0]
        ax1.semilogy(d, (w / w.sum()).clamp(min=1e-300), label=f"n = {n}")
    ax1.set(xlabel="distance to the anchor", ylabel="sampling probability (log)",
            title="distance_weights: q(d)^-1, clipped at 0.5, cut at 1.4")
    ax1.legend(fontsize=8)
    for n in sampled_dims:
        x = torch.nn.functional.normalize(torch.randn(4000, n, generator=torch.Generator().manual_seed(seed)), dim=1)
        ax2.hist(torch.pdist(x[:400]).numpy(), bins=80, density=True, histtype="step", label=f"n = {n}")
    ax2.axvline(2**0.5, color="grey", lw=0.8, ls=":")
    ax2.set(xlabel="distance between random unit vectors", ylabel="density",
            title="why: distances concentrate at sqrt(2)")
    ax2.legend(fontsize=8)
    fig.tight_layout()
    return fig


# --- The noise chapter: how much noise the optimum survives -----------------------------------------------------------
def noise_bounds(classes=(6, 20, 100), gammas=(0.5, 0.8)):
    """The largest noise rate under which the triplet loss's optimum is guaranteed
    (:func:`dml_tutorial.noise.triplet_noise_bound`, eq. 27) against the skew eta of its negative sampling, for
    each number of classes K of ``classes``, beside eq. 27 without its epsilon(K); and a line per gamma of the
    marginal loss's bounds (:func:`dml_tutorial.noise.marginal_noise_bound`, eq. 37) at Q >= 0 and Q >= 0.5."""
    from . import noise

    etas = np.linspace(1.0, 10.0, 46)
    fig, ax = plt.subplots(figsize=(6.5, 3.8), constrained_layout=True)
    for i, k in enumerate(classes):
        ax.plot(etas, [noise.triplet_noise_bound(float(e), k) for e in etas], color=plots.PALETTE[i],
                label=f"K = {k}")
    ax.plot(etas, 1 - np.sqrt(1 - 1 / etas), "k--", label=r"eq. 27 without $\epsilon(K)$: $1 - \sqrt{1 - 1/\eta}$")
    ax.set(xlabel=r"skew $\eta$ of the negative sampling", ylabel="largest tolerated noise rate p",
           title="Triplet loss: how much noise the optimum survives", ylim=(0, 1))
    ax.legend(fontsize=8)
    lines = [f"marginal loss, gamma = {gamma}: p < {noise.marginal_noise_bound(gamma, 10**6):.3f} for Q >= 0 "
             f"(eq. 37: {1 - np.sqrt(1 - gamma):.3f}); p < {noise.marginal_noise_bound(gamma, 10**6, level=0.5):.3f} "
             "for the Q >= 0.5 the text asks for" for gamma in gammas]
    return fig, "\n".join(lines)


# --- EPS: which embedding each loss prefers (Theorems 1-2, Claims 1-2) -----------------------------------------------
def preferred_embeddings(draws: int = 200, flip: float = 0.1):
    """The triplet and the margin loss (its mean over non-zero terms, and the plain sum Theorem 2 is about), with
    every positive and with easy positives, each averaged over ``draws`` noise draws of
    :func:`dml_tutorial.eps.collapsed_and_separated` (every negative), on the collapsed and the separated
    embedding of the same batch: a line each, naming the one with the lower loss, yielded as soon as it is
    computed (a chapter prints each while the next one computes)."""
    from . import eps, losses

    def mean_loss(loss, embedding, positives):
        return np.mean([loss(batch[embedding], batch["labels"], negatives="all", positives=positives).item()
                        for batch in (eps.collapsed_and_separated(flip=flip, seed=s) for s in range(draws))])

    for name, loss in (("triplet", losses.triplet_loss), ("margin", losses.margin_loss),
                       ("margin, sum", partial(losses.margin_loss, reduction="sum"))):
        for positives in ("all", "easy"):
            c, s = mean_loss(loss, "collapsed", positives), mean_loss(loss, "separated", positives)
            yield (f"{name:11s} positives={positives:5s} collapsed {c:.4f}  separated {s:.4f}  -> lower: "
                   f"{'collapsed' if c < s else 'separated'}")


# --- The loss zoo: every loss on a random batch and on one whose classes are pulled together --------------------------
def zoo_batches(seed: int = 0) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """``(labels, random_batch, clustered_batch)``: 8 classes x 4 random unit vectors in 64-d, and the same batch
    with each vector pulled two thirds of the way to its class mean (renormalised)."""
    g = torch.Generator().manual_seed(seed)
    labels = torch.arange(8).repeat_interleave(4)
    random_batch = torch.nn.functional.normalize(torch.randn(32, 64, generator=g), dim=1)
    means = torch.stack([random_batch[labels == k].mean(0) for k in range(8)])[labels]
    return labels, random_batch, torch.nn.functional.normalize(random_batch / 3 + 2 * means / 3, dim=1)


def zoo_values(labels, random_batch, clustered_batch, seed: int = 0):
    """Every loss of the zoo (:mod:`dml_tutorial.losses`, at its defaults but where named) on the two batches of
    :func:`zoo_batches`: a table, a row per loss (each should fall once the classes are pulled together)."""
    import pandas as pd

    from . import losses

    zoo = {"triplet (semihard-random)": lambda z, y: losses.triplet_loss(
               z, y, generator=torch.Generator().manual_seed(seed)),
           "triplet (all triplets)": lambda z, y: losses.triplet_loss(z, y, negatives="all"),
           "triplet, squared, tau = 0.5 (DCDL)": lambda z, y: losses.triplet_loss(z, y, margin=0.5, squared=True,
                                                                                  negatives="all"),
           "contrastive / marginal": losses.contrastive_loss, "N-pairs": losses.npairs_loss,
           "angular (30 deg)": losses.angular_loss, "angular + N-pairs": losses.angular_npairs_loss,
           "margin (all triplets)": lambda z, y: losses.margin_loss(z, y, negatives="all"),
           "multi-similarity": losses.multi_similarity_loss, "binomial deviance": losses.binomial_deviance_loss}
    return pd.DataFrame({name: {"random batch": fn(random_batch, labels).item(),
                                "classes pulled together": fn(clustered_batch, labels).item()}
                         for name, fn in zoo.items()}).T.round(4)
