"""Label noise: corrupting labels, noise transition matrices and the pair-label noise rates.

Sample-level noise (paper 004, Le & Odobez, eq. 6; DCDL paper section 4.1, Fig. 2):
- ``symmetric``: a label is kept with probability 1 - p and otherwise replaced by one of the K - 1 *other*
  classes drawn uniformly (so the flip rate is exactly p);
- ``asymmetric``: a label of a class that has a pair (a visually similar class) is replaced by its pair with
  probability p; other classes are left alone (DCDL: TRUCK->AUTOMOBILE, BIRD->AIRPLANE, DEER->HORSE, CAT<->DOG).
"""

import numpy as np

from ._checks import check_choice, check_rate

#: DCDL paper, section 4.1, for CIFAR-10 (class order of torchvision).
CIFAR10_PAIRS = {9: 1, 2: 0, 4: 7, 3: 5, 5: 3}
#: The same pairs in STL-10's class order (airplane, bird, car, cat, deer, dog, horse, monkey, ship, truck).
STL10_PAIRS = {9: 2, 1: 0, 4: 6, 3: 5, 5: 3}
#: Visually similar digits (Patrini et al. 2017's MNIST pairs): 2->7, 3->8, 5<->6, 7->1.
DIGITS_PAIRS = {2: 7, 3: 8, 5: 6, 6: 5, 7: 1}
#: The pairs to use for asymmetric noise, by dataset name (CIFAR-100 has none: the paper does not corrupt it so).
PAIRS = {"cifar10": CIFAR10_PAIRS, "stl10": STL10_PAIRS, "digits": DIGITS_PAIRS, "mnist": DIGITS_PAIRS}
KINDS = ("symmetric", "asymmetric")


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


def pair_noise_rates(p: float, num_classes: int) -> tuple[float, float]:
    """``(q_pos, q_neg)``: the probability that a true positive pair is observed as negative, and that a true
    negative pair is observed as positive, under symmetric sample noise p over K classes (paper 004, section 3.3).

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
