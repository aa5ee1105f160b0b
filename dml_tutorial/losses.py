"""Local metric-learning losses, each as its paper writes it, with its paper's defaults.

Every loss is a function ``(embeddings [B, d], labels [B], ...) -> scalar tensor``. Distances and class masks come
from :mod:`dml_tutorial.distances`, tuples from :mod:`dml_tutorial.sampling`, so any loss combines with any
sampling. A batch without any valid tuple gives a zero loss that keeps the gradient graph (never NaN).
"""

import math

import torch

from ._checks import check_choice, check_embeddings
from .distances import label_masks, pairwise_distances
from .sampling import mine_negatives, positive_pairs


def _zero(z: torch.Tensor) -> torch.Tensor:
    return z.sum() * 0.0


def triplet_loss(
    embeddings,
    labels,
    margin: float = 0.2,
    squared: bool = False,
    positives: str = "all",
    negatives: str = "semihard-random",
    generator: torch.Generator | None = None,
    reduction: str = "mean",
) -> torch.Tensor:
    """Triplet loss (Schroff et al. 2015; Le & Odobez 2018, eq. 3): [d(a, p) - d(a, n) +
    margin]_+ over the sampled triplets, averaged.

    ``squared`` picks d = ||.||^2 (DCDL: squared with margin tau = 0.5) or d = ||.|| (Le
    & Odobez 2018: alpha = 0.2; ECAML: m = 0.1). ``reduction="mean"``: the mean over the
    sampled triplets, those with zero loss included; ``"pairs"``: the sum over the
    triplets divided by the number of positive pairs before mining (a pair for which the
    strategy finds no negative counts as a zero), the ``1/|S|`` of Le & Odobez's
    empirical risk (eq. 4), which weighs every mining strategy's batch alike.
    ``positives`` / ``negatives``: see :func:`dml_tutorial.sampling.positive_pairs` and
    ``mine_negatives``."""
    check_choice(reduction, ("mean", "pairs"), "reduction")
    z, y = check_embeddings(embeddings, labels)
    dist = pairwise_distances(z, squared=squared)
    a, p = positive_pairs(dist, y, positives, generator)
    pairs = len(a)
    mining_dist = dist
    if negatives == "distance" and squared:  # distance-weighted sampling reads plain d
        mining_dist = pairwise_distances(z.detach())
    a, p, n = mine_negatives(
        mining_dist, y, a, p, negatives, margin, generator, dim=z.shape[1]
    )
    if len(a) == 0:
        return _zero(z)
    hinge = torch.relu(dist[a, p] - dist[a, n] + margin)
    return hinge.mean() if reduction == "mean" else hinge.sum() / pairs


def rank_hard_triplet_loss(
    embeddings,
    labels,
    margin: float = 0.1,
    neg_num: int = 120,
    hard_ratio: float = 0.5,
    rand_ratio: float = 0.5,
    generator: torch.Generator | None = None,
) -> torch.Tensor:
    """The triplet loss of ECAML's released code (``RankHardLossLayer``, ``rank_hard_loss_layer.cpp``; the CARS
    prototxt's settings: ``neg_num`` 120, ``hard_ratio`` = ``rand_ratio`` = 0.5, margin 0.1), on the dissimilarity
    d_ij = -z_i . z_j:

    - each class's first two samples in batch order, (a, b), are its pair (the layer's ``pair_size`` 2);
    - its candidate negatives are those with a positive hinge for a, d_ab - d_an + margin > 0;
    - with at most ``neg_num`` candidates all are kept; else ``hard_ratio * neg_num`` at random among the
      ``neg_num`` hardest (smallest d_an), then ``rand_ratio * neg_num`` at random among the rest;
    - each kept n adds [d_ab - d_an + margin]_+ + [d_ab - d_bn + margin]_+ (both samples as anchors);
    - the sum is divided by a fixed count, ``neg_num`` x 2 x the number of pairs (the layer's
      ``neg_num * num / pair_size * 2``), not by the triplets kept.

    A batch without a pair or a negative gives 0 (kept in the graph)."""
    if neg_num < 1 or not 0 <= hard_ratio <= 1 or not 0 <= rand_ratio <= 1:
        raise ValueError(f"need neg_num >= 1 and ratios in [0, 1], got {neg_num}, {hard_ratio}, {rand_ratio}")
    z, y = check_embeddings(embeddings, labels)
    d = -(z @ z.T)
    total, pairs = _zero(z), 0
    for c in torch.unique(y):
        members = (y == c).nonzero(as_tuple=True)[0]
        if len(members) < 2:
            continue
        a, b = members[0], members[1]
        pairs += 1
        negatives = (y != c).nonzero(as_tuple=True)[0]
        hinge_a = d[a, b] - d[a, negatives] + margin
        kept = _rank_hard_choice(negatives[hinge_a.detach() > 0], d[a].detach(), neg_num, hard_ratio, rand_ratio,
                                 generator)
        total = total + torch.relu(d[a, b] - d[a, kept] + margin).sum() + torch.relu(d[a, b] - d[b, kept] + margin).sum()
    return total / (neg_num * 2 * pairs) if pairs else total


def _rank_hard_choice(candidates, d_a, neg_num, hard_ratio, rand_ratio, generator):
    """The negatives ``RankHardLossLayer::set_mask`` keeps among ``candidates`` (sorted by ``d_a``, hardest first)."""
    if len(candidates) <= neg_num:
        return candidates
    order = candidates[torch.argsort(d_a[candidates], stable=True)]
    hardest, rest = order[:neg_num], order[neg_num:]
    shuffled = hardest[torch.randperm(len(hardest), generator=generator).to(hardest.device)]
    hard = shuffled[:int(neg_num * hard_ratio)]
    rest = torch.cat([rest, shuffled[int(neg_num * hard_ratio):]])
    rest = rest[torch.randperm(len(rest), generator=generator).to(rest.device)]
    return torch.cat([hard, rest[:int(neg_num * rand_ratio)]])


def contrastive_loss(
    embeddings, labels, alpha: float = 0.2, beta: float = 1.4
) -> torch.Tensor:
    """Marginal loss of Le & Odobez 2018 (eq. 2; Wu et al. 2017 with a fixed beta): mean
    over all pairs i < j of [(d_ij - beta) t_ij + alpha]_+ with t_ij = +1 for a
    same-class pair and -1 otherwise, d the plain Euclidean distance. Defaults alpha =
    0.2, beta = 1.4 (Le & Odobez 2018, section 6)."""
    z, y = check_embeddings(embeddings, labels)
    if len(z) < 2:
        return _zero(z)
    dist = pairwise_distances(z)
    pos, _ = label_masks(y)
    t = pos.to(z.dtype) * 2 - 1
    upper = torch.triu(torch.ones_like(pos), diagonal=1)
    return torch.relu((dist - beta) * t + alpha)[upper].mean()


def margin_loss(
    embeddings,
    labels,
    alpha: float = 0.2,
    beta: float | torch.Tensor = 1.2,
    nu: float = 0.0,
    positives: str = "all",
    negatives: str = "distance",
    generator: torch.Generator | None = None,
    reduction: str = "nonzero",
) -> torch.Tensor:
    """Margin loss (Wu et al. 2017, eq. 5-6) on plain Euclidean distances, over the
    sampled triplets (a, p, n):

        (sum [alpha + d(a, p) - beta_a]_+ + [alpha + beta_a - d(a, n)]_+ + nu beta_a)
            / #(non-zero terms)

    so a same-class pair is pushed inside distance beta - alpha and a different-class
    pair beyond beta + alpha. The normalisation by the number of active terms is the
    authors' (their reference code; also pytorch-metric-learning's ``MarginLoss``).
    ``beta`` is a float (1.2, Wu et al.) or a tensor of one boundary per class, indexed
    by the anchor's label -- pass a parameter to learn it (see :class:`MarginLoss`);
    ``nu`` weighs the beta regulariser. Sampling defaults to the paper's: every positive
    pair, one distance-weighted negative. ``reduction="sum"`` drops the normalisation:
    the plain sum over the terms, the quantity of the EPS paper's Theorem 2; ``"pairs"``
    divides that sum by the number of positive pairs before mining, the ``1/|S|`` of
    Le & Odobez's empirical risk with its 1-1 sampling (one negative pair per positive
    pair, eq. 4 and section 5.2)."""
    check_choice(reduction, ("nonzero", "sum", "pairs"), "reduction")
    z, y = check_embeddings(embeddings, labels)
    dist = pairwise_distances(z)
    a, p = positive_pairs(dist, y, positives, generator)
    pairs = len(a)
    a, p, n = mine_negatives(dist, y, a, p, negatives, alpha, generator, dim=z.shape[1])
    beta = torch.as_tensor(beta, dtype=z.dtype, device=z.device)
    if beta.dim() > 0 and len(a) and int(y.max()) >= len(beta):
        raise ValueError(
            f"beta has {len(beta)} per-class values "
            f"but the batch has label {int(y.max())}"
        )
    if len(a) == 0:
        return _zero(z) + 0.0 * beta.sum()
    b = beta[y[a]] if beta.dim() > 0 else beta.expand(len(a))
    pos = torch.relu(alpha + dist[a, p] - b)
    neg = torch.relu(alpha + b - dist[a, n])
    total = pos.sum() + neg.sum() + nu * b.sum()
    if reduction == "sum":
        return total
    if reduction == "pairs":
        return total / pairs
    return total / ((pos > 0).sum() + (neg > 0).sum()).clamp(min=1)


class MarginLoss(torch.nn.Module):
    """:func:`margin_loss` with a learnable class-specific boundary beta_c (Wu et al. 2017, eq. 6), initialised
    at ``beta``. :func:`dml_tutorial.train.fit` trains and checkpoints these parameters with the model's."""

    def __init__(self, num_classes: int, alpha: float = 0.2, beta: float = 1.2, nu: float = 0.0, **sampling):
        super().__init__()
        self.beta = torch.nn.Parameter(torch.full((num_classes,), float(beta)))
        self.alpha, self.nu, self.sampling = alpha, nu, sampling

    def forward(self, embeddings, labels):
        return margin_loss(embeddings, labels, self.alpha, self.beta, self.nu, **self.sampling)


def _log1p_sum_exp(x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """log(1 + sum_j exp(x_ij)) over the columns where ``mask`` holds, per row; 0 for an empty row, never NaN."""
    x = x.masked_fill(~mask, float("-inf"))
    return torch.logsumexp(torch.cat([torch.zeros_like(x[:, :1]), x], dim=1), dim=1)


def _pairs_and_negatives(z, y, positives):
    sim = z @ z.T
    a, p = positive_pairs(pairwise_distances(z.detach()), y, positives)
    return sim, a, p, label_masks(y)[1][a]


def npairs_loss(
    embeddings, labels, l2_reg: float = 0.0, positives: str = "all", scale: float = 1.0
) -> torch.Tensor:
    """Multi-class N-pairs loss (Sohn 2016; DCDL eq. 3): mean over anchor/positive pairs
    of log(1 + sum_{n: y_n != y_a} exp(s (z_a.z_n - z_a.z_p))), every other-class sample
    of the batch a negative, plus Sohn's regulariser ``l2_reg`` x mean ||z||^2 (a
    constant on L2-normalised embeddings, hence off by default). ``scale`` s multiplies
    the similarities: on unit-norm embeddings, where Sohn's unnormalised ones grow free,
    it is the loss's one real knob (ECAML's released code scales them by 10,
    ``fc_scale``). With 2 samples per class (DCDL's batches for L_NP) every anchor has
    exactly one positive, as in the original."""
    z, y = check_embeddings(embeddings, labels)
    if not scale > 0:
        raise ValueError(f"scale must be positive, got {scale}")
    sim, a, p, neg = _pairs_and_negatives(z, y, positives)
    reg = l2_reg * (z * z).sum(1).mean()
    if len(a) == 0:
        return _zero(z) + reg
    return _log1p_sum_exp(scale * (sim[a] - sim[a, p][:, None]), neg).mean() + reg


def angular_loss(
    embeddings, labels, alpha: float = 30.0, positives: str = "all"
) -> torch.Tensor:
    """Angular loss (Wang et al. 2017, eq. 8; DCDL eq. 3), ``alpha`` in degrees (DCDL:
    30 for L_Ang): mean over anchor/positive pairs of log(1 + sum_n exp(4 tan^2(alpha)
    (z_a + z_p).z_n - 2 (1 + tan^2(alpha)) z_a.z_p))."""
    z, y = check_embeddings(embeddings, labels)
    if not 0 < alpha < 90:
        raise ValueError(f"alpha is an angle in degrees in (0, 90), got {alpha}")
    t2 = math.tan(math.radians(alpha)) ** 2
    sim, a, p, neg = _pairs_and_negatives(z, y, positives)
    if len(a) == 0:
        return _zero(z)
    x = 4 * t2 * (sim[a] + sim[p]) - 2 * (1 + t2) * sim[a, p][:, None]
    return _log1p_sum_exp(x, neg).mean()


def angular_npairs_loss(
    embeddings,
    labels,
    alpha: float = 45.0,
    lambda_ang: float = 2.0,
    positives: str = "all",
) -> torch.Tensor:
    """L_Ang_NP = L_NP + lambda_ang L_Ang (DCDL eq. 4; Wang et al. 2017): lambda_ang = 2
    and alpha = 45 degrees as in the DCDL paper."""
    return npairs_loss(
        embeddings, labels, positives=positives
    ) + lambda_ang * angular_loss(embeddings, labels, alpha, positives)


def binomial_deviance_loss(
    embeddings, labels, alpha: float = 2.0, beta: float = 0.5, eta_neg: float = 25.0
) -> torch.Tensor:
    """Binomial deviance (Yi et al. 2014; ECAML eq. 10) with the pair weights of Yi et
    al. and of ECAML's released ``BIER_loss_layer.cpp``::

        1/|P| sum_P log(1 + exp(-alpha (D_ij - beta)))
          + 1/|N| sum_N log(1 + exp(alpha eta_neg (D_ij - beta))),

    D_ij the cosine similarity, P and N the positive and negative pairs i != j; alpha
    = 2, beta = 0.5, eta_neg = 25 (the released prototxt's ``cost_n``). Positive and
    negative pairs are averaged *separately* (the released layer divides each pair's
    term by the number of pairs of its kind): at ECAML's 64 x 2 batches one mean over
    all pairs would give the pull 1/127 of its weight. A batch without positive (or
    negative) pairs contributes 0 for that mean. The released layer's forward adds
    BIER's offset and shrinkage to the *reported* value only; its hand-written
    gradient is this loss's (tests/test_losses.py checks ours against a port)."""
    z, y = check_embeddings(embeddings, labels)
    if len(z) < 2:
        return _zero(z)
    u = torch.nn.functional.normalize(z, dim=1)
    cos = u @ u.T
    pos, neg = label_masks(y)
    pull = torch.nn.functional.softplus(-alpha * (cos - beta))
    push = torch.nn.functional.softplus(alpha * eta_neg * (cos - beta))
    return _mean_over(pull, pos) + _mean_over(push, neg)


def _mean_over(values: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """The mean of ``values`` where ``mask`` holds; 0 (kept in the graph) where it never does."""
    return values[mask].mean() if mask.any() else values.sum() * 0


def multi_similarity_loss(
    embeddings,
    labels,
    alpha: float = 2.0,
    beta: float = 50.0,
    lam: float = 1.0,
    epsilon: float = 0.1,
    positives: str = "all",
) -> torch.Tensor:
    """Multi-similarity loss with its pair mining (Wang et al. 2019, eq. 9-10 and
    section 4.1), on cosine similarities S. For an anchor i, a negative k is kept if
    S_ik + epsilon > min_j S_ij over its positives, a positive j if S_ij - epsilon <
    max_k S_ik over its negatives; then

        1/alpha log(1 + sum_j exp(-alpha (S_ij - lam)))
          + 1/beta log(1 + sum_k exp(beta (S_ik - lam))),

    averaged over anchors. Defaults of the EPS paper: alpha = 2, lambda = 1, beta = 50.

    ``positives="easy"`` is EPS with MS (Levi et al., section 5.2.2: "we replace the
    positive hard-mining method with EPS and use the same hard-negative method"): each
    anchor's one positive is its nearest same-class sample, kept without MS's positive
    rule (which is built to drop easy positives), and the negatives are mined exactly as
    in plain MS, against the least similar of *all* the anchor's positives. Which
    positive sets the negative threshold is not stated in the paper; this is our
    reading."""
    z, y = check_embeddings(embeddings, labels)
    # "all": MS's own positive mining
    check_choice(positives, ("all", "easy"), "positives")
    u = torch.nn.functional.normalize(z, dim=1)
    s = u @ u.T
    pos, neg = label_masks(y)
    sd = s.detach()
    min_pos = sd.masked_fill(~pos, float("inf")).min(1, keepdim=True).values
    max_neg = sd.masked_fill(~neg, float("-inf")).max(1, keepdim=True).values
    keep_neg = neg & (sd + epsilon > min_pos)
    if positives == "easy":
        a, p = positive_pairs(pairwise_distances(u.detach()), y, "easy")
        keep_pos = torch.zeros_like(pos)
        keep_pos[a, p] = True
    else:
        keep_pos = pos & (sd - epsilon < max_neg)
    anchors = keep_pos.any(1) & keep_neg.any(1)
    if not anchors.any():
        return _zero(z)
    pos_term = _log1p_sum_exp(-alpha * (s - lam), keep_pos) / alpha
    neg_term = _log1p_sum_exp(beta * (s - lam), keep_neg) / beta
    return (pos_term + neg_term)[anchors].mean()
