"""Label noise: corrupting labels, noise transition matrices and the pair-label noise rates.

Sample-level noise (Le & Odobez 2018, eq. 6; DCDL paper section 4.1, Fig. 2):

- ``symmetric``: a label is kept with probability 1 - p and otherwise replaced by one of the K - 1 *other*
  classes drawn uniformly (so the flip rate is exactly p);
- ``asymmetric``: a label of a class that has a pair (a visually similar class) is replaced by its pair with
  probability p; other classes are left alone (DCDL: TRUCK->AUTOMOBILE, BIRD->AIRPLANE, DEER->HORSE, CAT<->DOG).

The theory of Le & Odobez 2018 on top of it: the pair-label noise rates (:func:`pair_noise_rates`, eq. 7-8), the
multiplier Q (:func:`noise_multiplier`, eq. 22), the noise rates the triplet and marginal losses tolerate
(:func:`triplet_noise_bound`, eq. 27; :func:`marginal_noise_bound`, eq. 37), and the skew eta of a mining strategy,
measured on an embedding (:func:`negative_skew`, section 4.2), and the identity behind them all, on an embedding:
the unhinged risk under noise is the clean one scaled plus a constant (:func:`auxiliary_pair_risk`,
:func:`expected_noisy_pair_risk`, eq. 9-17).
"""

import numpy as np

from ._checks import check_choice, check_rate

#: DCDL paper, section 4.1, for CIFAR-10 (class order of torchvision).
CIFAR10_PAIRS = {9: 1, 2: 0, 4: 7, 3: 5, 5: 3}
#: The same pairs in STL-10's class order (airplane, bird, car, cat, deer, dog, horse, monkey, ship, truck).
STL10_PAIRS = {9: 2, 1: 0, 4: 6, 3: 5, 5: 3}
#: Visually similar digits (Patrini et al. 2017's MNIST pairs): 2->7, 3->8, 5<->6, 7->1.
DIGITS_PAIRS = {2: 7, 3: 8, 5: 6, 6: 5, 7: 1}
#: Fashion-MNIST's look-alike classes (our choice; no paper of the course corrupts Fashion-MNIST): T-shirt -> shirt,
#: pullover -> coat, coat -> pullover, sandal -> sneaker, ankle boot -> sneaker.
FASHION_MNIST_PAIRS = {0: 6, 2: 4, 4: 2, 5: 7, 9: 7}
#: The pairs to use for asymmetric noise, by dataset name (CIFAR-100 has none: the paper does not corrupt it so).
PAIRS = {"cifar10": CIFAR10_PAIRS, "stl10": STL10_PAIRS, "digits": DIGITS_PAIRS, "mnist": DIGITS_PAIRS,
         "fashion_mnist": FASHION_MNIST_PAIRS}
#: Datasets whose pairs come from their images (:func:`lookalike_pairs`): the glyphs' hundreds of characters have
#: no hand-made list.
LOOKALIKE = ("glyphs",)
KINDS = ("symmetric", "asymmetric")


def lookalike_pairs(images, labels, share: float = 0.5) -> dict:
    """Class pairs for asymmetric noise, read from the images: each class's nearest other class by the Euclidean
    distance between the classes' mean images (raw pixels), for the ``share`` of the classes whose nearest is
    closest. The DCDL paper (section 4.1) pairs 5 of CIFAR-10's 10 classes with a look-alike by hand
    (TRUCK->AUTOMOBILE, ...); this is the same noise where no such list exists: half the classes, each flipping to
    the class it looks most like. ``{class: its look-alike}``; a pair may run both ways (CAT<->DOG)."""
    if not 0 < share <= 1:
        raise ValueError(f"share must be in (0, 1], got {share}")
    y = np.asarray(labels)
    classes = np.unique(y)
    if len(classes) < 2:
        raise ValueError(f"look-alike pairs need at least 2 classes, got {len(classes)}")
    x = np.asarray(images, dtype=np.float64).reshape(len(y), -1)
    means = np.stack([x[y == c].mean(0) for c in classes])
    sq = (means**2).sum(1)
    d = sq[:, None] + sq[None, :] - 2 * means @ means.T  # squared distances, without a classes^2 x pixels array
    np.fill_diagonal(d, np.inf)
    nearest = d.argmin(1)
    keep = np.argsort(d[np.arange(len(classes)), nearest], kind="stable")[:max(1, round(share * len(classes)))]
    return {int(classes[i]): int(classes[nearest[i]]) for i in sorted(keep)}


def describe(noise) -> str:
    """A column name as the papers' tables write it: ``None`` -> ``"clean"``, ``("symmetric", 0.3)`` ->
    ``"sym 0.3"``, ``("asymmetric", 0.2)`` -> ``"asym 0.2"``."""
    if noise is None or noise[1] == 0:
        return "clean"
    kind, rate = noise
    check_choice(kind, KINDS, "noise kind")
    return f"{kind[:4] if kind == 'asymmetric' else kind[:3]} {rate:g}"


def _check(num_classes, rate, kind, pairs):
    check_rate(rate, "noise rate")
    check_choice(kind, KINDS, "noise kind")
    if int(num_classes) < 2:
        raise ValueError(f"label noise needs at least 2 classes, got num_classes={num_classes}")
    if kind == "asymmetric":
        if not pairs:
            raise ValueError("asymmetric noise needs class pairs, e.g. pairs=noise.CIFAR10_PAIRS")
        bad = [c for kv in pairs.items() for c in kv if not 0 <= int(c) < num_classes]
        if bad or any(int(a) == int(b) for a, b in pairs.items()):
            raise ValueError(f"pairs {pairs} must map a class to a different class in [0, {num_classes})")


def transition_matrix(num_classes: int, rate: float, kind: str = "symmetric", pairs=None) -> np.ndarray:
    """T[i, j] = P(observed label j | true label i); rows sum to 1 (DCDL paper, Fig. 2a/2b)."""
    _check(num_classes, rate, kind, pairs)
    k = int(num_classes)
    if kind == "symmetric":
        t = np.full((k, k), rate / (k - 1))
        np.fill_diagonal(t, 1.0 - rate)
        return t
    t = np.eye(k)
    for src, dst in pairs.items():
        t[src, src], t[src, dst] = 1.0 - rate, rate
    return t


def corrupt_labels(labels, num_classes: int, rate: float, kind: str = "symmetric", pairs=None, seed: int = 0):
    """Draw observed labels from the true ``labels`` through :func:`transition_matrix` (same seed, same result).

    Labels must be integers in [0, num_classes). Returns a new numpy array; the input is not modified."""
    _check(num_classes, rate, kind, pairs)
    y = np.asarray(labels.cpu() if hasattr(labels, "cpu") else labels)
    if y.ndim != 1 or (y.size and (y.min() < 0 or y.max() >= num_classes)):
        raise ValueError(f"labels must be a 1-d array of integers in [0, {num_classes})")
    rng = np.random.default_rng(seed)
    flip = rng.random(len(y)) < rate
    out = y.astype(np.int64).copy()
    if kind == "symmetric":
        shift = rng.integers(1, num_classes, size=len(y))  # a uniformly drawn *different* class
        out[flip] = (y[flip] + shift[flip]) % num_classes
    else:
        for src, dst in pairs.items():
            out[flip & (y == src)] = dst
    return out


def held_out_noise(dataset, noise, seed: int):
    """``dataset`` with its labels corrupted by ``noise`` among its own classes (symmetric noise draws another of
    the classes present): the held-out classes' labels as a practitioner has them, as noisy as the training's,
    for a noisy row's search (issue #86)."""
    if noise is None or not noise[1]:
        return dataset
    classes, index = np.unique(np.asarray(dataset.labels), return_inverse=True)
    return dataset.with_labels(classes[corrupt_labels(index, len(classes), noise[1], noise[0], seed=seed)])


def pair_noise_rates(p: float, num_classes: int) -> tuple[float, float]:
    """``(q_pos, q_neg)``: the probability that a true positive pair is observed as negative, and that a true
    negative pair is observed as positive, under symmetric sample noise p over K classes (Le & Odobez 2018, section 3.3).

    q_neg = 2p(1-p)/(K-1) + p^2 (K-2)/(K-1)^2                                            (eq. 7)
    q_pos = 1 - [(1-p)^2 + p^2/(K-1)] = 2p(1-p) + p^2 (1 - 1/(K-1))

    The paper's eq. 8 writes ``p^2 (1 - 2/(K-1))`` for the last term. Both labels of a positive pair flip and
    land on the same class with probability p^2 (K-1) (1/(K-1))^2 = p^2/(K-1), so the pair stays positive then and
    the term is 1 - 1/(K-1); a Monte Carlo simulation of eq. 6 agrees with this form (tests/test_noise.py).
    """
    check_rate(p, "p")
    k = int(num_classes)
    if k < 2:
        raise ValueError(f"num_classes must be at least 2, got {num_classes}")
    q_neg = 2 * p * (1 - p) / (k - 1) + p**2 * (k - 2) / (k - 1) ** 2
    q_pos = 2 * p * (1 - p) + p**2 * (1 - 1 / (k - 1))
    return float(q_pos), float(q_neg)


def noise_multiplier(p: float, num_classes: int, w_neg_over_w_pos=None) -> float:
    """Q of Le & Odobez 2018, eq. 22: the factor that scales the clean risk gap into the noisy one::

        Q = min over t in {+1, -1} of  1 - q_t - q_t w_{-t} / w_t,

    with ``(q_+1, q_-1)`` = :func:`pair_noise_rates` (exact for finite K). ``w_neg_over_w_pos``: the ratio of the weight
    of a negative pair to that of a positive pair, a number or several (then the worst case over all of them);
    default 1/K, the pair-balanced weights of eq. 15, which gives eq. 24. Q >= 0 means a minimiser of the clean
    risk also minimises the noisy one (eq. 23)."""
    q_pos, q_neg = pair_noise_rates(p, num_classes)
    ratios = np.atleast_1d(1.0 / int(num_classes) if w_neg_over_w_pos is None else w_neg_over_w_pos).astype(float)
    if (ratios <= 0).any():
        raise ValueError(f"weight ratios must be positive, got {ratios}")
    return float(min(1 - q_pos - q_pos * ratios.max(), 1 - q_neg - q_neg / ratios.min()))


def _largest_p(q_of_p, level: float, num_classes: int) -> float:
    """The largest noise rate p in [0, 1 - 1/K] with Q(p) >= level (Q decreases in p there: beyond 1 - 1/K the
    labels carry no information)."""
    from scipy.optimize import brentq

    p_max = 1 - 1 / int(num_classes)
    if q_of_p(0.0) < level:
        return 0.0
    if q_of_p(p_max) >= level:
        return p_max
    return float(brentq(lambda p: q_of_p(p) - level, 0.0, p_max, xtol=1e-12))


def triplet_multiplier(p: float, eta: float, num_classes: int) -> float:
    """Q (eq. 22) of the triplet loss with hinge and mining at skew ``eta`` (section 4.2): negative pairs weigh
    eta/K (harder) or 1/(eta K) (easier) against 1 for positives; ``eta = 1`` is the balanced eq. 24."""
    if eta < 1:
        raise ValueError(f"eta is a skew >= 1, got {eta}")
    k = int(num_classes)
    return noise_multiplier(p, k, [eta / k, 1 / (eta * k)])


def triplet_noise_bound(eta: float, num_classes: int, level: float = 0.0) -> float:
    """The largest uniform noise rate p for which the triplet loss with hinge and mining keeps its minimiser
    (Le & Odobez 2018, section 4.2): negative pairs weigh eta/K (harder) or 1/(eta K) (easier) against 1 for positives,
    and Q(p) >= ``level`` must hold for the worst of them. Solved exactly for finite K; as K grows it tends to
    eq. 27's p < 1 - sqrt(1 - 1/eta), the difference being the paper's epsilon(K)."""
    if eta < 1:
        raise ValueError(f"eta is a skew >= 1, got {eta}")
    return _largest_p(lambda p: triplet_multiplier(p, eta, num_classes), level, int(num_classes))


def marginal_noise_bound(gamma: float, num_classes: int, level: float = 0.0) -> float:
    """The same for the marginal loss with hinge and mining (section 5.3): positives weigh eta+, negatives eta-/K,
    gamma = eta-/eta+ <= 1. With ``level=0`` it tends, as K grows, to eq. 37's p < 1 - sqrt(1 - gamma); the text
    asks for Q >= 0.5 (``level=0.5``), which gives the lower 1 - sqrt(1 - gamma / 2) instead."""
    if not 0 < gamma <= 1:
        raise ValueError(f"gamma = eta-/eta+ must lie in (0, 1], got {gamma}")
    k = int(num_classes)
    return _largest_p(lambda p: noise_multiplier(p, k, gamma / k), level, k)


D_MAX = 2.0  # the largest distance between two points of the unit sphere (eq. 9)


def _pairs_of(embeddings, labels, num_classes):
    """Euclidean distances of the L2-normalised embeddings, same-class flags and K, over the pairs i < j."""
    import torch

    z = torch.nn.functional.normalize(torch.as_tensor(np.asarray(embeddings, dtype=np.float64)), dim=1)
    y = torch.as_tensor(np.asarray(labels))
    if len(z) != len(y) or len(y) < 2:
        raise ValueError(f"need at least 2 embeddings with one label each, got {len(z)} and {len(y)}")
    i, j = torch.triu_indices(len(y), len(y), 1)
    k = int(num_classes) if num_classes is not None else len(torch.unique(y))
    return (z[i] - z[j]).norm(dim=1), y[i] == y[j], k


def auxiliary_pair_risk(embeddings, labels, num_classes: int | None = None) -> float:
    """The weighted empirical risk of Le & Odobez's auxiliary pair loss (eq. 14): the mean over all pairs i < j of
    ``w_t l^A(t)``, with ``l^A = d_ij`` for a positive pair and ``d_max - d_ij`` for a negative one (eq. 9; d Euclidean on the
    unit sphere, d_max = 2) and the 1-1 sampling weights ``w_+ = 1``, ``w_- = 1/K`` (eq. 15). The unhinged triplet loss
    is a sum of such pair losses (eq. 12). ``labels`` may be noisy: then this is the noisy risk of one draw."""
    d, positive, k = _pairs_of(embeddings, labels, num_classes)
    weight = np.where(positive, 1.0, 1.0 / k)
    return float((weight * np.where(positive, d, D_MAX - d)).mean())


def expected_noisy_pair_risk(embeddings, labels, p: float, num_classes: int | None = None) -> float:
    """The expected :func:`auxiliary_pair_risk` under symmetric sample noise p, from the clean ``labels`` (eq. 17):
    the mean over pairs of ``(1 - q_t - q_t w_-t / w_t) w_t l^A(t) + w_-t q_t d_max``, with ``q_t`` from
    :func:`pair_noise_rates`. It is the clean risk with each pair's term scaled and shifted by constants, which is
    the paper's whole argument: for the unhinged loss, noise changes the risk's scale, not its minimiser."""
    d, positive, k = _pairs_of(embeddings, labels, num_classes)
    q_pos, q_neg = pair_noise_rates(p, k)
    q, w, w_flip = (np.where(positive, a, b) for a, b in ((q_pos, q_neg), (1.0, 1.0 / k), (1.0 / k, 1.0)))
    loss = np.where(positive, d, D_MAX - d)
    return float(((1 - q - q * w_flip / w) * w * loss + w_flip * q * D_MAX).mean())


def _training_batches(labels, p, k, seed, batches):
    """Class-balanced batches by ``labels``, as training draws them (``p`` classes, default all, at most 12)."""
    from .sampling import PKSampler

    classes = len(np.unique(labels))
    return PKSampler(labels, p=min(p or classes, classes, 12), k=k, seed=seed, batches_per_epoch=batches)


def negative_skew(embeddings, observed, true, negatives: str = "semihard-random", margin: float = 0.2,
                  squared: bool = False, p: int | None = None, k: int = 10, batches: int = 50,
                  seed: int = 0) -> float:
    """How much more often a mining strategy picks *corrupted* negative pairs than uniform sampling would: the skew
    eta of Le & Odobez 2018, section 4.2, measured. As in training, mining happens inside class-balanced batches
    (``batches`` of ``p`` classes x ``k`` samples by the observed labels; ``p`` defaults to all classes, at most
    12), positives and negatives follow the ``observed`` labels, and a mined pair (a, n) is corrupted if the
    ``true`` labels say a and n are of the same class:

        eta = P(corrupted | mined negative) / P(corrupted | any observed negative pair of the same anchors)

    ``negatives="all"`` gives exactly 1. ``nan`` when no observed negative pair is corrupted (no noise)."""
    import torch

    from .distances import pairwise_distances
    from .sampling import mine_negatives, positive_pairs

    z = torch.as_tensor(np.asarray(embeddings, dtype=np.float32))
    y_obs, y_true = np.asarray(observed), np.asarray(true)
    if len(z) != len(y_obs) or len(y_obs) != len(y_true):
        raise ValueError("embeddings, observed and true labels must have the same length")
    sampler = _training_batches(y_obs, p, k, seed, batches)
    g = torch.Generator().manual_seed(seed)
    picked = corrupted = pairs = corrupted_pairs = 0
    for idx in sampler:
        zb, yb, tb = z[idx], torch.as_tensor(y_obs[idx]), torch.as_tensor(y_true[idx])
        dist = pairwise_distances(zb, squared=squared)
        a, pos = positive_pairs(dist, yb)
        ta, _, tn = mine_negatives(dist, yb, a, pos, negatives, margin, g, dim=z.shape[1])
        ua, _, un = mine_negatives(dist, yb, a, pos, "all")
        picked, corrupted = picked + len(ta), corrupted + int((tb[ta] == tb[tn]).sum())
        pairs, corrupted_pairs = pairs + len(ua), corrupted_pairs + int((tb[ua] == tb[un]).sum())
    if picked == 0 or corrupted_pairs == 0:
        return float("nan")
    return (corrupted / picked) / (corrupted_pairs / pairs)


def corrupted_positive_share(embeddings, observed, true, negatives: str = "semihard-random", margin: float = 0.2,
                             squared: bool = False, p: int | None = None, k: int = 10, batches: int = 50,
                             seed: int = 0) -> dict:
    """What separates the miners under symmetric noise on a test bed with many classes (issue #48): not how often
    they pick a corrupted *negative* (with 1,000 classes about 1 in 1,650 is), but how they treat corrupted
    *positives* (at p = 0.4 most of a 12 x 5 batch's positive pairs are). In class-balanced batches by the
    ``observed`` labels (as :func:`negative_skew` draws them), over the triplets the strategy mines that are active
    (a positive hinge, [d_ap - d_an + margin]_+ > 0, so that they pull), returns:

    - ``"active"``: the share whose positive pair is corrupted (``true`` labels differ);
    - ``"pairs"``: the share of all observed positive pairs that are corrupted (what a miner blind to it keeps);
    - ``"triplets"``: the active triplets counted.

    ``nan`` shares where there is nothing to count."""
    import torch

    from .distances import pairwise_distances
    from .sampling import mine_negatives, positive_pairs

    z = torch.as_tensor(np.asarray(embeddings, dtype=np.float32))
    y_obs, y_true = np.asarray(observed), np.asarray(true)
    if len(z) != len(y_obs) or len(y_obs) != len(y_true):
        raise ValueError("embeddings, observed and true labels must have the same length")
    g = torch.Generator().manual_seed(seed)
    active = bad_active = pairs = bad_pairs = 0
    for idx in _training_batches(y_obs, p, k, seed, batches):
        zb, yb, tb = z[idx], torch.as_tensor(y_obs[idx]), torch.as_tensor(y_true[idx])
        dist = pairwise_distances(zb, squared=squared)
        a, pos = positive_pairs(dist, yb)
        pairs, bad_pairs = pairs + len(a), bad_pairs + int((tb[a] != tb[pos]).sum())
        ta, tp, tn = mine_negatives(dist, yb, a, pos, negatives, margin, g, dim=z.shape[1])
        on = dist[ta, tp] - dist[ta, tn] + margin > 0
        active, bad_active = active + int(on.sum()), bad_active + int((on & (tb[ta] != tb[tp])).sum())
    share = (lambda n, d: n / d if d else float("nan"))
    return {"active": share(bad_active, active), "pairs": share(bad_pairs, pairs), "triplets": active}


def max_skew(embeddings, labels, negatives: str = "semihard-random", margin: float = 0.2, squared: bool = False,
             p: int | None = None, k: int = 10, batches: int = 50, seed: int = 0) -> dict:
    """The paper's skew eta = max eta_ij (Le & Odobez 2018, section 4.2, below eq. 27), measured exactly on an
    embedding, with mining inside class-balanced batches by ``labels`` (those training sees) as in
    :func:`negative_skew`. A 1-1 sampler weighs each negative pair (a, n) of a positive pair by its probability of
    being picked, pi (:func:`dml_tutorial.sampling.selection_probabilities`); uniform sampling over the anchor's N
    negatives weighs it 1/N. The section's weights eta_ij/K (harder pairs) and 1/(eta_ij K) (easier ones) give
    eta_ij = r or 1/r with r = pi N, for r > 0. Returns a dict:

    - ``"max"``: eta, the largest eta_ij over the pairs the strategy weighs (``nan`` if it weighs none);
    - ``"never"``: the share of the negative pairs that the strategy never picks (weight 0), over the positive pairs
      it keeps. For them no finite eta_ij exists (1/(eta K) = 0), so whenever it is above 0 the bound of eq. 27,
      read strictly, guarantees nothing; ``"max"`` leaves them out and is the most lenient reading."""
    import torch

    from .distances import label_masks, pairwise_distances
    from .sampling import positive_pairs, selection_probabilities

    z, y = torch.as_tensor(np.asarray(embeddings, dtype=np.float32)), np.asarray(labels)
    if len(z) != len(y):
        raise ValueError(f"need one label per embedding, got {len(z)} embeddings and {len(y)} labels")
    sampler = _training_batches(y, p, k, seed, batches)
    largest, never, total = float("nan"), 0, 0
    for idx in sampler:
        yb = torch.as_tensor(y[idx])
        dist = pairwise_distances(z[idx], squared=squared)
        a, pos = positive_pairs(dist, yb)
        prob = selection_probabilities(dist, yb, a, pos, negatives, margin, dim=z.shape[1])
        neg = label_masks(yb)[1][a]
        kept = prob.sum(1) > 0
        if not kept.any():
            continue
        r = (prob * neg.sum(1, keepdim=True))[kept][prob[kept] > 0]
        largest = float(np.nanmax([largest, torch.maximum(r, 1 / r).max().item()]))
        never += int((neg[kept] & (prob[kept] == 0)).sum())
        total += int(neg[kept].sum())
    return {"max": largest, "never": never / total if total else float("nan")}
