"""Losses against naive loops written here and against pytorch-metric-learning; degenerate batches."""

import itertools

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from dml_tutorial import losses, sampling


def _batch(seed=0, n=20, classes=4, d=8, dtype=torch.float32):
    g = torch.Generator().manual_seed(seed)
    z = torch.nn.functional.normalize(torch.randn(n, d, generator=g, dtype=torch.float64), dim=1).to(dtype)
    return z, torch.randint(0, classes, (n,), generator=g)


def _triplet_loop(z, y, margin, squared):
    vals = []
    for a, p, n in itertools.permutations(range(len(y)), 3):
        if y[a] == y[p] and y[a] != y[n]:
            dap, dan = torch.dist(z[a], z[p]), torch.dist(z[a], z[n])
            if squared:
                dap, dan = dap**2, dan**2
            vals.append(max(0.0, (dap - dan + margin).item()))
    return sum(vals) / len(vals)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("squared,margin", [(False, 0.2), (True, 0.5), (False, 0.1)])
def test_triplet_all_triplets_matches_a_loop(dtype, squared, margin):
    z, y = _batch(dtype=dtype)
    got = losses.triplet_loss(z, y, margin=margin, squared=squared, negatives="all")
    assert got.item() == pytest.approx(_triplet_loop(z, y, margin, squared), rel=1e-5)


def _semihard_fixed_pairs_loop(z, y, margin):
    # Le & Odobez's empirical risk with 1-1 sampling: one negative per positive pair (eq. 29: the nearest one farther
    # than the positive), the hinge summed and divided by the number of positive pairs |S|, pairs with no negative
    # counting as zero
    total, pairs = 0.0, 0
    for a, p in itertools.permutations(range(len(y)), 2):
        if y[a] != y[p]:
            continue
        pairs += 1
        dap = torch.dist(z[a], z[p]).item()
        farther = [torch.dist(z[a], z[n]).item() for n in range(len(y)) if y[n] != y[a]
                   and torch.dist(z[a], z[n]).item() > dap]
        if farther:
            total += max(0.0, dap - min(farther) + margin)
    return total / pairs


def test_triplet_pairs_reduction_divides_by_the_positive_pairs():
    z, y = _batch(3, dtype=torch.float64)
    got = losses.triplet_loss(z, y, margin=0.2, negatives="semihard-fixed", reduction="pairs")
    assert got.item() == pytest.approx(_semihard_fixed_pairs_loop(z, y, 0.2), rel=1e-9)
    with pytest.raises(ValueError, match="reduction"):
        losses.triplet_loss(z, y, reduction="sum")


def test_triplet_matches_pytorch_metric_learning():
    from pytorch_metric_learning.losses import TripletMarginLoss
    from pytorch_metric_learning.reducers import MeanReducer

    z, y = _batch(3, n=32)
    # PML's default reducer averages only the non-zero triplets; MeanReducer averages all, as we do.
    ref = TripletMarginLoss(margin=0.2, reducer=MeanReducer())(z, y)
    assert losses.triplet_loss(z, y, margin=0.2, negatives="all").item() == pytest.approx(ref.item(), rel=1e-5)


def _contrastive_loop(z, y, alpha, beta):
    vals = []
    for i, j in itertools.combinations(range(len(y)), 2):
        t = 1 if y[i] == y[j] else -1
        vals.append(max(0.0, ((torch.dist(z[i], z[j]) - beta) * t + alpha).item()))
    return sum(vals) / len(vals)


@pytest.mark.parametrize("seed", range(3))
def test_contrastive_marginal_loss_matches_a_loop(seed):
    z, y = _batch(seed)
    assert losses.contrastive_loss(z, y).item() == pytest.approx(_contrastive_loop(z, y, 0.2, 1.4), rel=1e-5)


def test_contrastive_matches_pytorch_metric_learning_contrastive_loss():
    from pytorch_metric_learning.losses import ContrastiveLoss
    from pytorch_metric_learning.reducers import SumReducer

    z, y = _batch(5)
    n = len(y)
    # [(d - beta) t + alpha]_+ is PML's ContrastiveLoss with pos_margin = beta - alpha, neg_margin = beta + alpha.
    # PML sums over *ordered* pairs (each pair twice) and, by default, averages positive and negative pairs
    # separately; we average over the n(n-1)/2 unordered pairs, so compare sums.
    ref = ContrastiveLoss(pos_margin=1.2, neg_margin=1.6, reducer=SumReducer())(z, y)
    assert losses.contrastive_loss(z, y).item() == pytest.approx(ref.item() / (n * (n - 1)), rel=1e-5)


def _degenerate(case):
    """8 embeddings (or 1) whose labels or positions leave no valid tuple, or only zero distances."""
    z, y = _batch(0, n=8)
    if case == "one class":
        y = torch.zeros(8, dtype=torch.long)
    elif case == "singletons":
        y = torch.arange(8)
    elif case == "duplicates":
        z = torch.cat([z[:4], z[:4]])
    else:
        z, y = z[:1], y[:1]
    return z.clone().requires_grad_(True), y


@pytest.mark.parametrize("negatives", sampling.NEGATIVES)
@pytest.mark.parametrize("positives", sampling.POSITIVES)
@pytest.mark.parametrize("case", ["one class", "singletons", "duplicates", "one sample"])
def test_degenerate_batches_give_finite_values_and_gradients(negatives, positives, case):
    z, y = _degenerate(case)
    loss = losses.triplet_loss(z, y, negatives=negatives, positives=positives)
    loss.backward()
    assert torch.isfinite(loss) and torch.isfinite(z.grad).all()
    if case in ("one class", "singletons", "one sample"):
        assert loss.item() == 0.0


def test_contrastive_degenerate():
    z = torch.zeros(4, 3, requires_grad=True)
    loss = losses.contrastive_loss(z, torch.tensor([0, 0, 1, 1]))
    loss.backward()
    assert torch.isfinite(z.grad).all()


@settings(max_examples=25, deadline=None)
@given(st.integers(0, 10_000), st.integers(2, 12))
def test_triplet_all_is_permutation_invariant_and_non_negative(seed, n):
    z, y = _batch(seed, n=n, classes=3)
    perm = torch.randperm(n, generator=torch.Generator().manual_seed(seed))
    a = losses.triplet_loss(z, y, negatives="all")
    b = losses.triplet_loss(z[perm], y[perm], negatives="all")
    assert a.item() == pytest.approx(b.item(), abs=1e-6) and a.item() >= 0


def test_bad_inputs():
    with pytest.raises(ValueError, match="differ in length"):
        losses.triplet_loss(torch.randn(4, 2), torch.zeros(3))
    with pytest.raises(ValueError, match="NaN"):
        losses.contrastive_loss(torch.full((4, 2), float("nan")), torch.zeros(4))


def _npairs_loop(z, y, angular_alpha=None, scale=1.0):
    vals = []
    t2 = None if angular_alpha is None else np.tan(np.radians(angular_alpha)) ** 2
    for a, p in itertools.permutations(range(len(y)), 2):
        if y[a] != y[p]:
            continue
        s = 0.0
        for n in range(len(y)):
            if y[n] != y[a]:
                if t2 is None:
                    s += np.exp(scale * float(z[a] @ z[n] - z[a] @ z[p]))
                else:
                    s += np.exp(float(4 * t2 * (z[a] + z[p]) @ z[n] - 2 * (1 + t2) * z[a] @ z[p]))
        vals.append(np.log1p(s))
    return float(np.mean(vals))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("seed", range(2))
def test_npairs_and_angular_match_loops(dtype, seed):
    z, y = _batch(seed, n=12, classes=3, dtype=dtype)
    assert losses.npairs_loss(z, y).item() == pytest.approx(_npairs_loop(z.double(), y), rel=1e-5)
    scaled = _npairs_loop(z.double(), y, scale=10.0)  # the similarities' scale (ECAML's fc_scale)
    assert losses.npairs_loss(z, y, scale=10.0).item() == pytest.approx(scaled, rel=1e-4)
    assert losses.angular_loss(z, y, alpha=30).item() == pytest.approx(_npairs_loop(z.double(), y, 30), rel=1e-5)
    combined = _npairs_loop(z.double(), y) + 2 * _npairs_loop(z.double(), y, 45)
    assert losses.angular_npairs_loss(z, y).item() == pytest.approx(combined, rel=1e-5)


def test_angular_matches_pytorch_metric_learning():
    from pytorch_metric_learning.losses import AngularLoss

    z, y = _batch(7, n=16, classes=4)
    # PML's AngularLoss: the same per-pair term, averaged over anchor/positive pairs, on the embeddings as given
    # once they are L2-normalised (ours are unit-norm already).
    ref = AngularLoss(alpha=40)(z, y)
    assert losses.angular_loss(z, y, alpha=40).item() == pytest.approx(ref.item(), rel=1e-4)


def test_npairs_scale_must_be_positive():
    with pytest.raises(ValueError, match="scale"):
        losses.npairs_loss(torch.eye(4), torch.tensor([0, 0, 1, 1]), scale=0.0)


def test_npairs_regulariser_and_degenerate_batches():
    z, y = _batch(0, n=6)
    assert losses.npairs_loss(2 * z, y, l2_reg=0.5).item() == pytest.approx(
        losses.npairs_loss(2 * z, y).item() + 0.5 * 4.0, rel=1e-5)
    for labels in (torch.zeros(6, dtype=torch.long), torch.arange(6)):
        for fn in (losses.npairs_loss, losses.angular_loss, losses.angular_npairs_loss):
            zz = z.clone().requires_grad_(True)
            out = fn(zz, labels)
            out.backward()
            assert out.item() == 0.0 and torch.isfinite(zz.grad).all()
    with pytest.raises(ValueError, match="degrees"):
        losses.angular_loss(z, y, alpha=90)


def _binomial_loop(z, y, alpha=2.0, beta=0.5, eta_neg=25.0):
    """Yi et al.'s weights written out: each pair's deviance divided by the number of pairs of its kind."""
    u = torch.nn.functional.normalize(z, dim=1)
    pos, neg = [], []
    for i, j in itertools.permutations(range(len(y)), 2):
        c = float(u[i] @ u[j])
        if y[i] == y[j]:
            pos.append(np.log1p(np.exp(-alpha * (c - beta))))
        else:
            neg.append(np.log1p(np.exp(alpha * eta_neg * (c - beta))))
    return sum(float(np.mean(v)) for v in (pos, neg) if v)


def _released_binomial_gradient(x, label, alpha=2.0, beta=0.5, cost_p=1.0, cost_n=25.0):
    """ECAML's released ``src/BIER_loss_layer.cpp`` (one learner, M = 1), Forward_cpu's gradient loop ported
    line by line: unordered pairs i < j, w the number of pairs of the pair's kind, and the gradient of
    log(1 + exp(param (cos - beta))) / w with param = -alpha cost_p (positive) or alpha cost_n (negative)."""
    x = np.asarray(x, dtype=float)
    num, diff = len(x), np.zeros_like(x)
    w_pos = sum(label[i] == label[j] for i in range(num) for j in range(i + 1, num))
    w_neg = num * (num - 1) // 2 - w_pos
    for i in range(num):
        for j in range(i + 1, num):
            w = w_pos if label[i] == label[j] else w_neg
            param = -alpha * cost_p if label[i] == label[j] else alpha * cost_n
            inner, n_i, n_j = x[i] @ x[j], np.linalg.norm(x[i]), np.linalg.norm(x[j])
            ans = np.exp(param * (inner / (n_i * n_j) - beta))
            coef = param * ans / (w + w * ans)
            diff[i] += coef * (x[j] / (n_i * n_j) - inner / (n_i ** 3 * n_j) * x[i])
            diff[j] += coef * (x[i] / (n_i * n_j) - inner / (n_j ** 3 * n_i) * x[j])
    return diff


@pytest.mark.parametrize("seed", range(3))
def test_binomial_deviance_matches_a_loop(seed):
    z, y = _batch(seed, n=10, classes=3, dtype=torch.float64)
    assert losses.binomial_deviance_loss(3 * z, y).item() == pytest.approx(_binomial_loop(3 * z, y), rel=1e-7)


@pytest.mark.parametrize("seed", range(3))
def test_binomial_deviance_has_the_released_layers_gradient(seed):
    """Our loss counts each unordered pair twice in both means, the released layer once: the same means, so the
    same gradient, at a P x K batch like ECAML's (many more negative than positive pairs)."""
    z, y = _batch(seed, n=12, classes=6, dtype=torch.float64)
    z = (3 * z).requires_grad_()
    losses.binomial_deviance_loss(z, y).backward()
    released = _released_binomial_gradient(z.detach().numpy(), y.tolist())
    assert z.grad.numpy() == pytest.approx(released, rel=1e-6, abs=1e-12)


def test_binomial_deviance_weighs_positive_and_negative_pairs_separately():
    """The referee's case: at 64 x 2 the positive pairs are 128 of 16,256 ordered pairs; one pooled mean would
    scale the pull by 128 / 16,256 of the separate mean's, a change of weighting our loss must not have."""
    torch.manual_seed(0)
    z, y = torch.randn(128, 16, dtype=torch.float64), torch.arange(64).repeat_interleave(2)
    only_pull = losses.binomial_deviance_loss(z, y, eta_neg=0.0)  # the push is then log 2 per pair
    pull = float(only_pull) - np.log(2)
    u = torch.nn.functional.normalize(z, dim=1)
    pos = [float(torch.nn.functional.softplus(-2 * (u[i] @ u[i ^ 1] - 0.5))) for i in range(128)]
    assert pull == pytest.approx(np.mean(pos), rel=1e-9)


def test_binomial_deviance_without_positive_or_negative_pairs_is_finite_and_keeps_its_graph():
    z = torch.randn(4, 8, dtype=torch.float64, requires_grad=True)
    for y in (torch.arange(4), torch.zeros(4, dtype=torch.long)):  # no positive pairs; no negative pairs
        loss = losses.binomial_deviance_loss(z, y)
        loss.backward()
        assert torch.isfinite(loss) and torch.isfinite(z.grad).all()
        assert loss.item() == pytest.approx(_binomial_loop(z.detach(), y), rel=1e-9)
        z.grad = None


def _ms_loop(z, y, alpha=2.0, beta=50.0, lam=1.0, eps=0.1, easy=False):
    u = torch.nn.functional.normalize(z, dim=1).double()
    vals = []
    for i in range(len(y)):
        P = [j for j in range(len(y)) if j != i and y[j] == y[i]]
        N = [k for k in range(len(y)) if y[k] != y[i]]
        if not P or not N:
            continue
        S = lambda a, b: float(u[a] @ u[b])
        keep_n = [k for k in N if S(i, k) + eps > min(S(i, j) for j in P)]
        if easy:  # EPS replaces MS's positive mining: the nearest positive, always kept (Levi et al. 5.2.2)
            keep_p = [max(P, key=lambda j: S(i, j))]
        else:
            keep_p = [j for j in P if S(i, j) - eps < max(S(i, k) for k in N)]
        if not keep_n or not keep_p:
            continue
        vals.append(np.log1p(sum(np.exp(-alpha * (S(i, j) - lam)) for j in keep_p)) / alpha
                    + np.log1p(sum(np.exp(beta * (S(i, k) - lam)) for k in keep_n)) / beta)
    return float(np.mean(vals))


@pytest.mark.parametrize("seed", range(3))
def test_multi_similarity_matches_a_loop(seed):
    z, y = _batch(seed, n=16, classes=4, dtype=torch.float64)
    assert losses.multi_similarity_loss(z, y).item() == pytest.approx(_ms_loop(z, y), rel=1e-6)


@pytest.mark.parametrize("seed", range(3))
def test_multi_similarity_with_easy_positives_matches_a_loop(seed):
    z, y = _batch(seed, n=16, classes=4, dtype=torch.float64)
    got = losses.multi_similarity_loss(z, y, positives="easy").item()
    assert got == pytest.approx(_ms_loop(z, y, easy=True), rel=1e-6)


def test_easy_positives_keep_multi_similarity_training_once_classes_separate():
    # 6 classes x 8 on separated clusters: MS's positive rule (S_ij - eps < max_neg) drops the nearest positive,
    # so an EPS that kept that rule left almost no anchor active; EPS replaces the rule and keeps every anchor whose
    # hard negatives remain (Levi et al. 5.2.2)
    g = torch.Generator().manual_seed(0)
    centres = torch.nn.functional.normalize(torch.randn(6, 16, generator=g), dim=1)
    z = (centres.repeat_interleave(8, 0) + 0.25 * torch.randn(48, 16, generator=g)).requires_grad_(True)
    y = torch.arange(6).repeat_interleave(8)

    def active(positives):
        z.grad = None
        losses.multi_similarity_loss(z, y, positives=positives).backward()
        return (z.grad.norm(dim=1) > 0).float().mean().item()

    assert active("easy") >= active("all") > 0


def test_multi_similarity_matches_pytorch_metric_learning():
    from pytorch_metric_learning.losses import MultiSimilarityLoss
    from pytorch_metric_learning.miners import MultiSimilarityMiner

    z, y = _batch(11, n=24, classes=4)
    # PML names lambda "base"; its miner implements the same epsilon rule; it averages over anchors too.
    ref = MultiSimilarityLoss(alpha=2, beta=50, base=1.0)(z, y, MultiSimilarityMiner(epsilon=0.1)(z, y))
    assert losses.multi_similarity_loss(z, y).item() == pytest.approx(ref.item(), rel=1e-4)


@pytest.mark.parametrize("fn", [losses.binomial_deviance_loss, losses.multi_similarity_loss])
def test_pair_losses_on_degenerate_batches(fn):
    z, _ = _batch(0, n=6)
    for labels in (torch.zeros(6, dtype=torch.long), torch.arange(6)):
        zz = torch.cat([z[:3], z[:3]]).clone().requires_grad_(True)
        out = fn(zz, labels)
        out.backward()
        assert torch.isfinite(out) and torch.isfinite(zz.grad).all()


def test_multi_similarity_rejects_unknown_positives():
    z, y = _batch(0, n=6)
    with pytest.raises(ValueError, match="unknown positives"):
        losses.multi_similarity_loss(z, y, positives="hard")


def _margin_loop(z, y, alpha, beta, nu=0.0, plain_sum=False):
    terms, reg = [], 0.0
    for a, p, n in itertools.permutations(range(len(y)), 3):
        if y[a] == y[p] and y[a] != y[n]:
            b = float(beta[y[a]]) if isinstance(beta, (list, torch.Tensor)) else beta
            terms += [max(0.0, alpha + torch.dist(z[a], z[p]).item() - b),
                      max(0.0, alpha + b - torch.dist(z[a], z[n]).item())]
            reg += nu * b
    active = sum(t > 0 for t in terms)
    return (sum(terms) + reg) / (1 if plain_sum else max(active, 1))


def test_margin_loss_plain_sum_matches_a_loop():
    # the EPS paper's Theorem 2 is about the plain sum over the terms, not the mean over the non-zero ones
    z, y = _batch(5, n=12, dtype=torch.float64)
    got = losses.margin_loss(z, y, alpha=0.2, beta=1.2, negatives="all", reduction="sum")
    assert got.item() == pytest.approx(_margin_loop(z, y, 0.2, 1.2, plain_sum=True), rel=1e-9)
    with pytest.raises(ValueError, match="reduction"):
        losses.margin_loss(z, y, reduction="mean")
    pairs = sum(int(y[i] == y[j]) for i in range(len(y)) for j in range(len(y)) if i != j)
    by_pairs = losses.margin_loss(z, y, alpha=0.2, beta=1.2, negatives="all", reduction="pairs")
    assert by_pairs.item() == pytest.approx(got.item() / pairs, rel=1e-9)


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("beta,nu", [(1.2, 0.0), (0.9, 0.0), ([1.0, 1.1, 1.2, 1.3], 0.1)])
def test_margin_loss_all_triplets_matches_a_loop(seed, beta, nu):
    z, y = _batch(seed, n=16, dtype=torch.float64)
    b = torch.tensor(beta, dtype=torch.float64) if isinstance(beta, list) else beta
    got = losses.margin_loss(z, y, alpha=0.2, beta=b, nu=nu, negatives="all")
    assert got.item() == pytest.approx(_margin_loop(z, y, 0.2, b, nu), rel=1e-9)


@pytest.mark.parametrize("per_class", [False, True])
def test_margin_loss_matches_pytorch_metric_learning(per_class):
    from pytorch_metric_learning.losses import MarginLoss

    z, y = _batch(4, n=32)
    # Same definition and the same normalisation (sum / number of non-zero terms); PML's beta regulariser is
    # nu x beta_{y_a} per triplet over the same divisor, as in Wu et al.'s code.
    ref_fn = MarginLoss(margin=0.2, beta=1.2, nu=0.05, triplets_per_anchor="all", learn_beta=per_class,
                        num_classes=4 if per_class else None)
    with torch.no_grad():
        if per_class:
            ref_fn.beta.copy_(torch.tensor([1.0, 1.1, 1.2, 1.3]))
    beta = ref_fn.beta.detach() if per_class else 1.2
    ours = losses.margin_loss(z, y, alpha=0.2, beta=beta, nu=0.05 if per_class else 0.0, negatives="all")
    assert ours.item() == pytest.approx(ref_fn(z, y).item(), rel=1e-5)


def test_margin_loss_module_learns_per_class_betas():
    z, y = _batch(1, n=24)
    fn = losses.MarginLoss(num_classes=4, negatives="all")
    z = z.clone().requires_grad_(True)
    fn(z, y).backward()
    assert fn.beta.grad is not None and torch.isfinite(fn.beta.grad).all() and fn.beta.grad.abs().sum() > 0
    with pytest.raises(ValueError, match="per-class"):
        losses.MarginLoss(num_classes=2)(z, y)


@pytest.mark.parametrize("negatives", ["all", "distance", "semihard-random"])
@pytest.mark.parametrize("case", ["one class", "singletons", "duplicates", "one sample"])
def test_margin_loss_degenerate_batches(negatives, case):
    z, y = _degenerate(case)
    beta = torch.nn.Parameter(torch.full((8,), 1.2))
    loss = losses.margin_loss(z, y, beta=beta, negatives=negatives)
    loss.backward()
    assert torch.isfinite(loss) and torch.isfinite(z.grad).all()
    if case != "duplicates":
        assert loss.item() == 0.0


def _rank_hard_loop(z, y, margin, neg_num, hard_only):
    """``RankHardLossLayer`` (ECAML's rank_hard_loss_layer.cpp) transcribed loop for loop, in the two settings where
    its choice is not random: every candidate kept (at most neg_num of them), or hard_ratio 1 / rand_ratio 0 (the
    neg_num hardest). Pairs are each class's first two samples, as the layer reads a batch laid out in pairs."""
    z = z.double().tolist()
    y = y.tolist()
    num = len(y)
    dis = [[-sum(a * b for a, b in zip(z[i], z[j])) for j in range(num)] for i in range(num)]
    loss, pairs = 0.0, 0
    for c in dict.fromkeys(y):
        members = [i for i in range(num) if y[i] == c]
        if len(members) < 2:
            continue
        i, i1 = members[:2]
        pairs += 1
        neg = [(dis[i][j], j) for j in range(num) if y[j] != c and max(0.0, dis[i][i1] - dis[i][j] + margin) > 0]
        if len(neg) > neg_num:
            assert hard_only
            neg = sorted(neg)[:neg_num]
        for _, j in neg:
            loss += max(0.0, dis[i][i1] - dis[i][j] + margin) + max(0.0, dis[i][i1] - dis[i1][j] + margin)
    return loss / (neg_num * pairs * 2) if pairs else 0.0


@pytest.mark.parametrize("seed", range(4))
def test_rank_hard_triplet_matches_the_released_layers_loop(seed):
    g = torch.Generator().manual_seed(seed)
    z = torch.nn.functional.normalize(torch.randn(24, 8, generator=g), dim=1)
    y = torch.arange(12).repeat_interleave(2)[torch.randperm(24, generator=g)]
    every = losses.rank_hard_triplet_loss(z, y, margin=0.1, neg_num=120)  # at most 22 candidates: all kept
    assert every.item() == pytest.approx(_rank_hard_loop(z, y, 0.1, 120, False), rel=1e-6)
    hardest = losses.rank_hard_triplet_loss(z, y, margin=0.5, neg_num=5, hard_ratio=1.0, rand_ratio=0.0)
    assert hardest.item() == pytest.approx(_rank_hard_loop(z, y, 0.5, 5, True), rel=1e-6)


def test_rank_hard_triplet_keeps_half_hardest_half_random():
    """With more candidates than neg_num, hard_ratio * neg_num of the kept negatives lie among the neg_num hardest,
    the rest anywhere: each choice is neg_num distinct candidates, and over draws every candidate is chosen."""
    d = -torch.linspace(1, 0, 40)  # candidate k is the k-th hardest
    candidates = torch.arange(40)
    seen = set()
    for s in range(50):
        kept = losses._rank_hard_choice(candidates, d, 10, 0.5, 0.5, torch.Generator().manual_seed(s)).tolist()
        assert len(kept) == len(set(kept)) == 10 and sum(k < 10 for k in kept) >= 5
        seen |= set(kept)
    assert seen == set(range(40))


def test_rank_hard_triplet_without_pairs_or_negatives_is_zero_and_keeps_its_graph():
    z = torch.randn(4, 3, requires_grad=True)
    for y in (torch.arange(4), torch.zeros(4, dtype=torch.long)):
        loss = losses.rank_hard_triplet_loss(z, y)
        loss.backward()
        assert loss.item() == 0.0 and torch.isfinite(z.grad).all()
    with pytest.raises(ValueError, match="neg_num"):
        losses.rank_hard_triplet_loss(z, torch.arange(4), neg_num=0)
