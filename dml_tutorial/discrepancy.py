"""Discrepancies between point clouds, and the class-wise DCDL term built from them.

Roy et al., *Learning Deep Optimal Embeddings with Sinkhorn Divergences* (DCDL): for every class k of a batch,
compare the embeddings of that class, Z_k+, with those of all other classes, Z_k-, and push the two distributions
apart (eq. 1-2): L^phi = -sum_k phi(Z_k+, Z_k-), with phi a kernel MMD (supplement eq. 15-16) or the Sinkhorn
divergence (supplement eq. 11 and 13).

The Sinkhorn solver is log-domain (at epsilon = 2.5e-3 the kernel exp(-C / eps) of plain Sinkhorn underflows
in float32) and follows Feydy et al. (2019) and their GeomLoss: epsilon-scaling from the diameter of the clouds
down to epsilon, symmetric updates for the self-transport terms, and gradients by the envelope theorem (the loop
runs without autograd; one last update with autograd makes the potentials functions of the points). GeomLoss
stops when the schedule reaches epsilon, so its accuracy hangs on the scaling ratio (about 1e-4 relative needs
0.95-0.99 here). We instead continue at epsilon with over-relaxed updates (Thibault et al. 2021, omega = 1.8)
until the potentials stop moving, which reaches ~1e-6 in fewer iterations: see benchmarks/bench_discrepancy.py.

All classes of a batch are solved in one batched call: problem k has the cloud Z_k+ (the class, padded to the
largest class) and Z_k- (the rest, padded likewise), padding carrying weight zero (log-weight -inf), so that
unbalanced batches need no Python loop over classes either.

``measure="geomloss"`` is the other reading of the paper, labelled as ours: its sigma = 0.05 and epsilon = 2.5e-3
= 0.05^2 with the cost ||x - y||^2 / 2 are exactly the defaults of GeomLoss's ``SamplesLoss("sinkhorn", p=2,
blur=0.05, scaling=0.5)``, so the paper very likely ran GeomLoss as it comes: an annealed estimate that stops when
the epsilon schedule (ratio 0.5^2) reaches epsilon, without converging there. That variant calls GeomLoss itself.
"""

from __future__ import annotations

import math

import torch

from ._checks import check_choice, check_embeddings
from .distances import pairwise_distances, pairwise_sq_distances

KERNELS = ("laplacian", "gaussian")
MEASURES = ("sinkhorn", "mmd", "geomloss")


#: The class-wise terms of DCDL (section 4), by name: ``classwise_discrepancy``'s settings for each. "L" and "G"
#: use the paper's sigma = 0.05; "L-median" / "G-median" are our labelled variant with the median-heuristic
#: bandwidth (at sigma = 0.05 the MMD term is silent between well-spread unit vectors and acts only on points
#: within a few sigma of each other: the DCDL chapter, section 2). ``dcdl.TERMS`` is this dict.
DCDL_TERMS = {
    "L": {"measure": "mmd", "kernel": "laplacian", "sigma": 0.05},
    "G": {"measure": "mmd", "kernel": "gaussian", "sigma": 0.05},
    "L-median": {"measure": "mmd", "kernel": "laplacian", "sigma": "median"},
    "G-median": {"measure": "mmd", "kernel": "gaussian", "sigma": "median"},
    "W": {"measure": "sinkhorn", "epsilon": 2.5e-3},
    # our labelled reading of what the paper ran: GeomLoss's defaults, annealed and not converged at epsilon
    "W-GeomLoss": {"measure": "geomloss", "blur": 0.05, "scaling": 0.5},
}


def mmd(x, y, kernel: str = "laplacian", sigma: float | str = 0.05) -> torch.Tensor:
    """Biased estimate of the squared maximum mean discrepancy between the point clouds ``x`` [n, d] and
    ``y`` [m, d] (DCDL supplement eq. 15):

        1/n^2 sum k(x_i, x_i') - 2/(nm) sum k(x_i, y_j) + 1/m^2 sum k(y_j, y_j'),

    with the Laplacian or Gaussian kernel of eq. 16 and the paper's sigma = 0.05 by default. On well-spread unit
    vectors, where distinct points lie ~1.4 apart, exp(-1.4 / 0.05) ~ 7e-13: the kernel matrix is the identity
    and the term is silent. Points closer than a few sigma (an untrained network's embeddings, a class already
    gathered) still feel it, so the term's gradient depends on the embedding's scale (the DCDL chapter, section
    2). ``sigma="median"`` sets sigma to the median pairwise distance of x and y together (the median heuristic),
    our labelled variant, not the paper's."""
    x, y = _two_clouds(x, y)
    gram = _gram(torch.cat([x, y]), kernel, sigma)
    n = len(x)
    return gram[:n, :n].mean() - 2 * gram[:n, n:].mean() + gram[n:, n:].mean()


def _gram(z: torch.Tensor, kernel: str, sigma) -> torch.Tensor:
    """k_L(u, v) = exp(-||u - v|| / sigma) or k_G(u, v) = exp(-||u - v||^2 / (2 sigma^2)) between all rows of z
    (supplement eq. 16), with a finite gradient where two points coincide. ``sigma="median"``: the median
    heuristic (Gretton et al. 2012), sigma = the median distance between distinct points of z, held constant."""
    check_choice(kernel, KERNELS, "kernel")
    d = pairwise_distances(z)
    if sigma == "median":
        off_diagonal = ~torch.eye(len(z), dtype=torch.bool, device=z.device)
        sigma = d.detach()[off_diagonal].median().clamp_min(1e-12) if len(z) > 1 else 1.0
    elif isinstance(sigma, str) or sigma <= 0:
        raise ValueError(f"sigma must be positive or 'median', got {sigma!r}")
    if kernel == "laplacian":
        return torch.exp(-d / sigma)
    return torch.exp(-pairwise_sq_distances(z) / (2 * sigma**2))


def _two_clouds(x, y):
    x, y = torch.as_tensor(x), torch.as_tensor(y)
    if x.dim() != 2 or y.dim() != 2 or x.shape[1] != y.shape[1]:
        raise ValueError(f"x and y must be point clouds [n, d] and [m, d], got {tuple(x.shape)} and {tuple(y.shape)}")
    if len(x) == 0 or len(y) == 0:
        raise ValueError("x and y must each hold at least one point")
    if not (torch.isfinite(x).all() and torch.isfinite(y).all()):
        raise ValueError("the point clouds contain NaN or infinite values")
    return x, y


def epsilon_schedule(diameter: float, epsilon: float, scaling: float) -> list[float]:
    """Decreasing temperatures for epsilon-scaling (Feydy et al. 2019; GeomLoss's schedule for p = 2): diameter^2,
    then a geometric sequence with ratio scaling^2 down to epsilon, then epsilon."""
    if not 0 < scaling < 1:
        raise ValueError(f"scaling must lie in (0, 1), got {scaling}")
    start, stop, step = 2 * math.log(diameter), math.log(epsilon), 2 * math.log(scaling)
    steps = max(0, math.ceil((stop - start) / step))
    return [diameter**2] + [math.exp(start + i * step) for i in range(steps)] + [epsilon]


def _softmin(eps: float, cost: torch.Tensor, h: torch.Tensor) -> torch.Tensor:
    """The c-transform in log domain, -eps log sum_j exp(h_kj - C_kij / eps): [K, P] from C [K, P, Q], h [K, Q]."""
    return -eps * torch.logsumexp(h[:, None, :] - cost / eps, dim=2)


def _cost(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """C(x_i, y_j) = ||x_i - y_j||^2 / 2 for batched clouds [K, P, d], [K, Q, d] -> [K, P, Q]."""
    return ((x * x).sum(-1)[..., :, None] - 2 * x @ y.transpose(1, 2) + (y * y).sum(-1)[..., None, :]).clamp_min(0) / 2


def _sinkhorn(x, y, log_a, log_b, epsilon, scaling, max_iter, tol, omega, check_every):
    """Debiased Sinkhorn divergences of K problems at once: clouds ``x`` [K, P, d] and ``y`` [K, Q, d] with log
    weights ``log_a`` [K, P], ``log_b`` [K, Q] (-inf marks padding). Returns [K] values.

    1. epsilon-scaling from the diameter down to epsilon, one Sinkhorn update per temperature (f from g, then g
       from the new f; the self-transport potentials f_aa, g_bb with symmetric averaged updates);
    2. at epsilon, over-relaxed updates f <- (1 - omega) f + omega T(g) (Thibault et al. 2021) until no
       potential moves by more than ``tol`` x epsilon, at most ``max_iter`` times (the self-transport potentials,
       which converge in a few steps, are frozen once they move less than that: they cost the most per update).
       Convergence is read every ``check_every`` iterations only: each reading copies a number from the device to
       the host, which on a GPU waits for every queued kernel;
    3. one last update with autograd, on C(x, y.detach()) for f and C(y, x.detach()) for g, so that the gradient
       of the value <a, f_ab - f_aa> + <b, g_ba - g_bb> is the envelope-theorem gradient (as in GeomLoss)."""
    xd, yd = x.detach(), y.detach()
    c_xy, c_xx, c_yy = _cost(xd, yd), _cost(xd, xd), _cost(yd, yd)
    c_yx = c_xy.transpose(1, 2)
    valid_xy = torch.isfinite(log_a)[:, :, None] & torch.isfinite(log_b)[:, None, :]
    diameter = math.sqrt(2 * c_xy[valid_xy].max().item()) if valid_xy.any() else 1.0
    schedule = epsilon_schedule(max(diameter, math.sqrt(epsilon)), epsilon, scaling)
    with torch.no_grad():
        e = schedule[0]
        f, g = _softmin(e, c_xy, log_b), _softmin(e, c_yx, log_a)
        f_aa, g_bb = _softmin(e, c_xx, log_a), _softmin(e, c_yy, log_b)
        for e in schedule:
            f = _softmin(e, c_xy, log_b + g / e)
            g = _softmin(e, c_yx, log_a + f / e)
            f_aa, g_bb, _ = _self_updates(e, c_xx, c_yy, log_a, log_b, f_aa, g_bb)
        self_converged = False
        for it in range(1, max_iter + 1):
            old = (f, g)
            f = (1 - omega) * f + omega * _softmin(epsilon, c_xy, log_b + g / epsilon)
            g = (1 - omega) * g + omega * _softmin(epsilon, c_yx, log_a + f / epsilon)
            if not self_converged:  # the symmetric self updates converge in a few steps: then stop paying for them
                f_aa, g_bb, self_change = _self_updates(epsilon, c_xx, c_yy, log_a, log_b, f_aa, g_bb)
            if it % check_every == 0:  # the only host syncs of the loop
                self_converged = self_converged or self_change.item() < tol * epsilon
                if self_converged and _largest_change((f, g), old).item() < tol * epsilon:
                    break
    f, g = (_softmin(epsilon, _cost(x, yd), log_b + g / epsilon),
            _softmin(epsilon, _cost(y, xd), log_a + f / epsilon))
    f_aa = _softmin(epsilon, _cost(x, xd), log_a + f_aa / epsilon)
    g_bb = _softmin(epsilon, _cost(y, yd), log_b + g_bb / epsilon)
    return (log_a.exp() * (f - f_aa)).sum(1) + (log_b.exp() * (g - g_bb)).sum(1)


def _largest_change(new, old) -> torch.Tensor:
    """The largest absolute entry of ``new - old`` over pairs of potentials, as a 0-d tensor on their device."""
    return torch.stack([(n - o).abs().amax() for n, o in zip(new, old)]).amax()


def _self_updates(eps, c_xx, c_yy, log_a, log_b, f_aa, g_bb):
    """One averaged symmetric update of the self-transport potentials, and the largest change it made (a 0-d
    tensor: reading it is left to the caller)."""
    new_f = (f_aa + _softmin(eps, c_xx, log_a + f_aa / eps)) / 2
    new_g = (g_bb + _softmin(eps, c_yy, log_b + g_bb / eps)) / 2
    return new_f, new_g, _largest_change((new_f, new_g), (f_aa, g_bb))


def _members(side: torch.Tensor):
    """Indices [K, P] of the True entries of each row of ``side`` [K, B], padded, and the log of their uniform
    weights (-inf on the padding)."""
    count = side.sum(1)
    idx = torch.argsort((~side).to(torch.int8), dim=1, stable=True)[:, : int(count.max())]
    valid = torch.arange(idx.shape[1], device=side.device)[None] < count[:, None]
    log_w = torch.where(valid, -torch.log(count.to(torch.get_default_dtype()))[:, None], -math.inf)
    return idx, log_w


SINKHORN_DEFAULTS = {"scaling": 0.7, "max_iter": 500, "tol": 0.03, "omega": 1.8, "check_every": 5}


def sinkhorn_divergence(x, y, epsilon: float = 2.5e-3, **solver) -> torch.Tensor:
    """Debiased Sinkhorn divergence between uniform point clouds ``x`` [n, d] and ``y`` [m, d] (DCDL supplement
    eq. 11 and 13; Feydy et al. 2019):

        S_eps(x, y) = OT_eps(x, y) - (OT_eps(x, x) + OT_eps(y, y)) / 2,

    OT_eps the entropic optimal-transport cost with C(u, v) = ||u - v||^2 / 2 and the paper's epsilon = 2.5e-3.
    It is 0 for x = y; as epsilon -> 0 it tends to the exact transport cost, as epsilon -> infinity to the energy
    distance ||mean(x) - mean(y)||^2 / 2 (eq. 14). The value is GeomLoss's
    ``SamplesLoss("sinkhorn", p=2, blur=sqrt(epsilon))`` and half POT's
    ``ot.solve_sample(x, y, reg=2 * epsilon, debias=True)`` (POT's cost is ||u - v||^2), solved further.

    ``solver`` overrides :data:`SINKHORN_DEFAULTS`: the epsilon-scaling ratio ``scaling``, then at most
    ``max_iter`` over-relaxed (``omega``) iterations at epsilon, until no dual potential moves by more than
    ``tol`` x epsilon, read every ``check_every`` iterations (one host sync each)."""
    x, y = _two_clouds(x, y)
    if epsilon <= 0:
        raise ValueError(f"epsilon must be positive, got {epsilon}")
    log_a = torch.full((1, len(x)), -math.log(len(x)), dtype=x.dtype, device=x.device)
    log_b = torch.full((1, len(y)), -math.log(len(y)), dtype=y.dtype, device=y.device)
    return _sinkhorn(x[None], y[None], log_a, log_b, epsilon, **_solver(solver))[0]


def gradient_flow(x, y, divergence, steps: int, lr: float) -> list[torch.Tensor]:
    """The points ``x`` [n, d] moved by gradient descent on ``divergence(x, y)`` towards the fixed cloud ``y``
    (the gradient flows of Feydy et al. 2019, fig. 2, and of GeomLoss's example): ``x <- x - lr * n * grad_x``,
    where ``n * grad`` is each point's own velocity (every point weighs 1/n in the divergence). It shows on which
    length scale a divergence still pulls: a kernel MMD at bandwidth sigma stops pulling points farther than a
    few sigma from ``y``, a Sinkhorn divergence pulls every point to its transport target. Returns the positions
    after 0, 1, ..., ``steps`` steps (detached)."""
    if steps < 0 or lr <= 0:
        raise ValueError(f"steps must be >= 0 and lr positive, got steps={steps}, lr={lr}")
    x, y = _two_clouds(x, y)
    positions = [x.detach().clone()]
    for _ in range(steps):
        moving = positions[-1].clone().requires_grad_()
        (grad,) = torch.autograd.grad(divergence(moving, y), moving)
        positions.append((moving - lr * len(moving) * grad).detach())
    return positions


def _solver(solver: dict) -> dict:
    unknown = set(solver) - set(SINKHORN_DEFAULTS)
    if unknown:
        raise TypeError(f"unknown Sinkhorn options {sorted(unknown)}; known: {sorted(SINKHORN_DEFAULTS)}")
    args = {**SINKHORN_DEFAULTS, **solver}
    if not 0 < args["omega"] < 2:
        raise ValueError(f"omega must lie in (0, 2), got {args['omega']}")
    return args


def classwise_discrepancy(embeddings, labels, measure: str = "sinkhorn", **kwargs) -> torch.Tensor:
    """The DCDL term L^phi = -sum_k phi(Z_k+, Z_k-) (eq. 1-2): for every class k present in the batch, the
    discrepancy between its embeddings Z_k+ and those of all other classes Z_k-, summed over the classes and
    negated, so that minimising it pushes every class away from the rest. ``measure``: ``"sinkhorn"`` (L^W;
    ``epsilon`` and the solver options of :func:`sinkhorn_divergence`) or ``"mmd"`` (L^L, L^G; ``kernel``,
    ``sigma`` of :func:`mmd`).

    All classes are solved in one batched computation, unbalanced classes included (padded and masked); a batch
    with fewer than two classes gives a zero term that keeps its gradient graph."""
    z, y = check_embeddings(embeddings, labels)
    check_choice(measure, MEASURES, "measure")
    side = y[None, :] == torch.unique(y)[:, None]  # [K, B]: True on class k
    if len(side) < 2:
        return z.sum() * 0.0
    if measure == "mmd":
        return -_classwise_mmd(z, side, **kwargs).sum()
    if measure == "geomloss":
        return -_classwise_geomloss(z, side, **kwargs).sum()
    epsilon = kwargs.pop("epsilon", 2.5e-3)
    if epsilon <= 0:
        raise ValueError(f"epsilon must be positive, got {epsilon}")
    (xi, log_a), (yi, log_b) = _members(side), _members(~side)
    return -_sinkhorn(_gather(z, xi), _gather(z, yi), log_a.to(z.dtype), log_b.to(z.dtype), epsilon,
                      **_solver(kwargs)).sum()


def _gather(z: torch.Tensor, idx: torch.Tensor) -> torch.Tensor:
    """``z[idx]`` for indices [K, P], through ``index_select``: the backward of advanced indexing accumulates
    repeated rows in a thread-dependent order on the CPU, so results would not repeat exactly run to run."""
    return z.index_select(0, idx.flatten()).view(*idx.shape, z.shape[1])


def _classwise_mmd(z, side, kernel: str = "laplacian", sigma: float | str = 0.05):
    """MMD^2(Z_k+, Z_k-) for every class k from one kernel matrix: w^T K w with w = 1/n_k on the class and
    -1/(B - n_k) elsewhere, which expands to the three means of eq. 15."""
    s = side.to(z.dtype)
    w = s / s.sum(1, keepdim=True) - (1 - s) / (1 - s).sum(1, keepdim=True)
    return ((w @ _gram(z, kernel, sigma)) * w).sum(1)


#: GeomLoss's own defaults for ``SamplesLoss("sinkhorn", p=2)``: blur = 0.05 (epsilon = blur^2), scaling = 0.5.
GEOMLOSS_DEFAULTS = {"blur": 0.05, "scaling": 0.5}


def _classwise_geomloss(z, side, blur: float = 0.05, scaling: float = 0.5):
    """S_eps(Z_k+, Z_k-) for every class k by GeomLoss's ``SamplesLoss("sinkhorn", p=2, blur, scaling)`` (debiased,
    cost ||x - y||^2 / 2, epsilon = blur^2, epsilon-scaling with ratio scaling^2 and no iterations at epsilon):
    one call per class, since GeomLoss batches only clouds of equal sizes."""
    from geomloss import SamplesLoss

    # GeomLoss anneals from the diameter of the points' bounding box (every class pair spans the whole batch); on a
    # batch of (nearly) coincident points that is 0 and its schedule would never end: start from blur instead.
    extent = (z.detach().amax(0) - z.detach().amin(0)).norm().item()
    loss = SamplesLoss("sinkhorn", p=2, blur=blur, scaling=scaling, debias=True, backend="tensorized",
                       diameter=None if extent >= blur else blur)
    return torch.stack([loss(z[members], z[~members]) for members in side])
