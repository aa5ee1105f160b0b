"""Label noise: empirical rates on 100k labels, reproducibility, bad input, and the pair-noise rates of Le & Odobez 2018
checked against a Monte Carlo simulation of its noise model (eq. 6)."""

import itertools
import math

import numpy as np
import pytest

from dml_tutorial import noise

N = 100_000


def _se(p, n):
    return np.sqrt(p * (1 - p) / n)


@pytest.mark.parametrize("rate", [0.1, 0.3, 0.6])
def test_symmetric_noise_rates_and_transition_frequencies(rate):
    k = 10
    y = np.random.default_rng(1).integers(0, k, N)
    out = noise.corrupt_labels(y, k, rate, seed=2)
    assert abs((out != y).mean() - rate) < 5 * _se(rate, N)
    t = noise.transition_matrix(k, rate)
    freq = np.zeros((k, k))
    np.add.at(freq, (y, out), 1)
    freq /= freq.sum(1, keepdims=True)
    n_per_class = N / k
    assert np.all(np.abs(freq - t) < 5 * _se(np.maximum(t, 1e-3), n_per_class) + 1e-12)
    assert np.all(np.diag(freq) > 0) and np.allclose(t.sum(1), 1)


@pytest.mark.parametrize("pairs", [noise.CIFAR10_PAIRS, noise.STL10_PAIRS, noise.DIGITS_PAIRS])
def test_asymmetric_noise_flips_only_to_the_pair(pairs):
    k, rate = 10, 0.2
    y = np.random.default_rng(1).integers(0, k, N)
    out = noise.corrupt_labels(y, k, rate, kind="asymmetric", pairs=pairs, seed=3)
    for c in range(k):
        flipped = out[(y == c) & (out != y)]
        if c in pairs:
            assert set(np.unique(flipped)) <= {pairs[c]}
            assert abs(len(flipped) / (y == c).sum() - rate) < 5 * _se(rate, (y == c).sum())
        else:
            assert len(flipped) == 0
    t = noise.transition_matrix(k, rate, "asymmetric", pairs)
    assert np.allclose(t.sum(1), 1) and all(t[a, b] == rate and t[a, a] == 1 - rate for a, b in pairs.items())


def test_cifar10_pairs_are_the_dcdl_papers():
    names = ["airplane", "automobile", "bird", "cat", "deer", "dog", "frog", "horse", "ship", "truck"]
    named = {names[a]: names[b] for a, b in noise.CIFAR10_PAIRS.items()}
    assert named == {"truck": "automobile", "bird": "airplane", "deer": "horse", "cat": "dog", "dog": "cat"}


def test_same_seed_same_result_and_input_untouched():
    y = np.arange(1000) % 7
    a, b = noise.corrupt_labels(y, 7, 0.4, seed=5), noise.corrupt_labels(y, 7, 0.4, seed=5)
    assert np.array_equal(a, b) and not np.array_equal(a, noise.corrupt_labels(y, 7, 0.4, seed=6))
    assert np.array_equal(y, np.arange(1000) % 7)
    assert np.array_equal(noise.corrupt_labels(y, 7, 0.0), y)


@pytest.mark.parametrize("kwargs", [
    {"rate": 1.5}, {"rate": -0.1}, {"rate": 0.2, "kind": "pairwise"},
    {"rate": 0.2, "kind": "asymmetric"}, {"rate": 0.2, "kind": "asymmetric", "pairs": {1: 1}},
    {"rate": 0.2, "kind": "asymmetric", "pairs": {1: 12}},
])
def test_bad_arguments(kwargs):
    with pytest.raises(ValueError):
        noise.corrupt_labels(np.arange(10) % 3, 3, **kwargs)


def test_labels_out_of_range():
    with pytest.raises(ValueError, match=r"in \[0, 3\)"):
        noise.corrupt_labels(np.array([0, 1, 5]), 3, 0.1)


def _simulate_pair_noise(p, k, n, rng):
    """Eq. 6 simulated on n positive and n negative pairs of true labels."""
    def observe(y):
        flip = rng.random(n) < p
        return np.where(flip, (y + rng.integers(1, k, n)) % k, y)

    yi = rng.integers(0, k, n)
    yj_neg = (yi + rng.integers(1, k, n)) % k
    q_pos = np.mean(observe(yi) != observe(yi))
    q_neg = np.mean(observe(yi) == observe(yj_neg))
    return q_pos, q_neg


@pytest.mark.parametrize("p,k", [(0.1, 2), (0.3, 3), (0.5, 5), (0.2, 10), (0.6, 100)])
def test_pair_noise_rates_agree_with_a_monte_carlo_simulation(p, k):
    n = 1_000_000
    mc_pos, mc_neg = _simulate_pair_noise(p, k, n, np.random.default_rng(0))
    q_pos, q_neg = noise.pair_noise_rates(p, k)
    assert abs(mc_pos - q_pos) < 4 * _se(q_pos, n)
    assert abs(mc_neg - q_neg) < 4 * _se(max(q_neg, 1e-4), n)


def test_paper_eq8_as_printed_disagrees_with_the_simulation_for_small_k():
    p, k, n = 0.5, 3, 1_000_000
    printed = 2 * p * (1 - p) + p**2 * (1 - 2 / (k - 1))  # eq. 8 of Le & Odobez 2018 as printed
    mc_pos, _ = _simulate_pair_noise(p, k, n, np.random.default_rng(1))
    assert abs(mc_pos - printed) > 20 * _se(mc_pos, n)


def test_describe_names_the_columns_and_pairs_are_known_by_dataset():
    assert noise.describe(None) == "clean" and noise.describe(("symmetric", 0.0)) == "clean"
    assert noise.describe(("symmetric", 0.3)) == "sym 0.3" and noise.describe(["asymmetric", 0.2]) == "asym 0.2"
    with pytest.raises(ValueError, match="noise kind"):
        noise.describe(("pairwise", 0.1))
    assert noise.PAIRS["cifar10"] is noise.CIFAR10_PAIRS and "cifar100" not in noise.PAIRS


# ----------------------------------------------------------------------------------- bounds of Le & Odobez 2018
@pytest.mark.parametrize("k", [3, 10, 100])
def test_noise_multiplier_is_one_without_noise_and_decreases(k):
    assert noise.noise_multiplier(0.0, k) == 1.0
    qs = [noise.noise_multiplier(p, k) for p in np.linspace(0, 1 - 1 / k, 30)]
    assert all(b <= a + 1e-12 for a, b in itertools.pairwise(qs))


def test_noise_multiplier_from_simulated_pair_noise():
    # Q from Monte Carlo pair-noise rates (eq. 6 simulated) agrees with Q from the closed forms
    p, k, n = 0.3, 5, 1_000_000
    mc_pos, mc_neg = _simulate_pair_noise(p, k, n, np.random.default_rng(2))
    ratio = 1 / k
    from_mc = min(1 - mc_pos - mc_pos * ratio, 1 - mc_neg - mc_neg / ratio)
    assert noise.noise_multiplier(p, k) == pytest.approx(from_mc, abs=6 * _se(0.5, n) * (1 + 1 / ratio))


@pytest.mark.parametrize("eta", [1.5, 2.0, 5.0])
def test_triplet_bound_tends_to_eq27_and_holds_with_equality(eta):
    large_k = noise.triplet_noise_bound(eta, 10**6)
    assert large_k == pytest.approx(1 - math.sqrt(1 - 1 / eta), abs=1e-4)
    for k in (10, 100):
        bound = noise.triplet_noise_bound(eta, k)
        assert bound < 1 - math.sqrt(1 - 1 / eta)  # epsilon(K) > 0: finite K is stricter
        assert noise.noise_multiplier(bound, k, [eta / k, 1 / (eta * k)]) == pytest.approx(0.0, abs=1e-9)
    bounds = [noise.triplet_noise_bound(e, 50) for e in (1.2, 2.0, 4.0, 8.0)]
    assert bounds == sorted(bounds, reverse=True)  # more skew, less tolerance


def test_marginal_bound_eq37_is_the_q_at_least_zero_bound_not_q_half():
    gamma = 0.6
    assert noise.marginal_noise_bound(gamma, 10**6) == pytest.approx(1 - math.sqrt(1 - gamma), abs=1e-4)
    half = noise.marginal_noise_bound(gamma, 10**6, level=0.5)
    assert half == pytest.approx(1 - math.sqrt(1 - gamma / 2), abs=1e-4)
    assert half < 1 - math.sqrt(1 - gamma) - 0.05  # what the text's Q >= 0.5 would give is much lower
    bounds = [noise.marginal_noise_bound(g, 50) for g in (0.2, 0.5, 0.8, 1.0)]
    assert bounds == sorted(bounds)


def test_bound_arguments():
    with pytest.raises(ValueError, match="eta"):
        noise.triplet_noise_bound(0.5, 10)
    with pytest.raises(ValueError, match="gamma"):
        noise.marginal_noise_bound(1.5, 10)
    with pytest.raises(ValueError, match="positive"):
        noise.noise_multiplier(0.1, 10, [0.0])


# ----------------------------------------------------------------------------------- measured skew eta
def _noisy_embedding(seed=0):
    """Four classes on the unit circle; 30% of the labels flipped. A flipped sample keeps its true position, so a
    corrupted negative of an anchor sits right next to it: the hardest negatives are the corrupted ones."""
    rng = np.random.default_rng(seed)
    true = np.repeat(np.arange(4), 25)
    angles = true * np.pi / 2 + rng.normal(0, 0.25, len(true))
    z = np.stack([np.cos(angles), np.sin(angles)], 1)
    observed = noise.corrupt_labels(true, 4, 0.3, seed=seed)
    return z, observed, true


def test_negative_skew_is_one_for_all_negatives_and_large_for_hard_mining():
    z, observed, true = _noisy_embedding()
    assert noise.negative_skew(z, observed, true, "all") == pytest.approx(1.0)
    assert noise.negative_skew(z, observed, true, "random", batches=400) == pytest.approx(1.0, abs=0.1)
    assert noise.negative_skew(z, observed, true, "hard") > 2.0
    assert math.isnan(noise.negative_skew(z, true, true, "hard"))  # no noise, no corrupted pair
    with pytest.raises(ValueError, match="same length"):
        noise.negative_skew(z, observed[:-1], true)


def test_fashion_mnist_pairs_are_valid_look_alike_flips():
    T = noise.transition_matrix(10, 0.2, "asymmetric", noise.PAIRS["fashion_mnist"])
    assert np.allclose(T.sum(1), 1) and T[0, 6] == pytest.approx(0.2) and T[1, 1] == 1


def test_expected_noisy_pair_risk_is_the_mean_over_noise_draws():
    """Eq. 17 from the clean labels against the noisy risk averaged over many draws of eq. 6's noise."""
    rng = np.random.default_rng(0)
    z = rng.normal(size=(40, 5))
    y = np.repeat(np.arange(4), 10)
    draws = [noise.auxiliary_pair_risk(z, noise.corrupt_labels(y, 4, 0.3, seed=s), num_classes=4) for s in range(3000)]
    expected = noise.expected_noisy_pair_risk(z, y, 0.3, num_classes=4)
    assert np.mean(draws) == pytest.approx(expected, abs=4 * np.std(draws) / np.sqrt(len(draws)))
    assert noise.expected_noisy_pair_risk(z, y, 0.0) == pytest.approx(noise.auxiliary_pair_risk(z, y))


def test_auxiliary_pair_risk_by_a_loop_over_pairs():
    rng = np.random.default_rng(1)
    z, y = rng.normal(size=(9, 3)), np.array([0, 0, 1, 1, 1, 2, 2, 0, 2])
    u = z / np.linalg.norm(z, axis=1, keepdims=True)
    terms = [np.linalg.norm(u[i] - u[j]) if y[i] == y[j] else (2 - np.linalg.norm(u[i] - u[j])) / 3
             for i in range(9) for j in range(i + 1, 9)]
    assert noise.auxiliary_pair_risk(z, y) == pytest.approx(np.mean(terms))
    with pytest.raises(ValueError, match="at least 2 embeddings"):
        noise.auxiliary_pair_risk(z[:1], y[:1])
    with pytest.raises(ValueError, match="one label each"):
        noise.auxiliary_pair_risk(z, y[:4])


def _max_skew_by_loops(z, y, negatives, margin=0.2):
    """eta_ij = max(r, 1/r), r = pi N, and the never-picked share, by a loop over the ordered positive pairs of one
    batch holding every sample (written from section 4.2 and eqs. 28-29, not from the package's masks)."""
    d = np.linalg.norm(z[:, None] - z[None], axis=2)
    etas, never, total = [], 0, 0
    for i in range(len(y)):
        for j in range(len(y)):
            if i == j or y[i] != y[j]:
                continue
            negs = [n for n in range(len(y)) if y[n] != y[i]]
            if negatives == "semihard-random":  # eq. 28: uniform over the negatives with a positive hinge
                picks = {n: 1 / len(c) for c in [[n for n in negs if d[i, n] < d[i, j] + margin]] for n in c}
            elif negatives == "semihard-fixed":  # eq. 29: the nearest negative farther than the positive
                far = [n for n in negs if d[i, n] > d[i, j]]
                picks = {min(far, key=lambda n: d[i, n]): 1.0} if far else {}
            else:  # "random": uniform over every negative
                picks = {n: 1 / len(negs) for n in negs}
            if not picks:
                continue
            etas += [max(pi * len(negs), 1 / (pi * len(negs))) for pi in picks.values()]
            never, total = never + len(negs) - len(picks), total + len(negs)
    return max(etas), never / total


@pytest.mark.parametrize("negatives", ["random", "semihard-random", "semihard-fixed"])
def test_max_skew_by_a_loop_over_pairs(negatives):
    rng = np.random.default_rng(3)
    y = np.repeat(np.arange(3), 4)
    z = rng.normal(size=(12, 2)) * 0.6 + np.repeat(rng.normal(size=(3, 2)), 4, axis=0)
    z /= np.linalg.norm(z, axis=1, keepdims=True)
    measured = noise.max_skew(z, y, negatives, p=3, k=4, batches=1)
    expected_max, expected_never = _max_skew_by_loops(z, y, negatives)
    assert measured["max"] == pytest.approx(expected_max, rel=1e-5)
    assert measured["never"] == pytest.approx(expected_never)
    if negatives == "random":
        assert measured == {"max": pytest.approx(1.0), "never": 0.0}
    if negatives == "semihard-fixed":  # one pick among the 8 negatives of each anchor
        assert measured["max"] == pytest.approx(8.0) and measured["never"] == pytest.approx(7 / 8)
    with pytest.raises(ValueError, match="one label per embedding"):
        noise.max_skew(z, y[:-1])


@pytest.mark.parametrize("k", [6, 1000])
def test_triplet_multiplier_is_eq24_without_skew_and_falls_with_it(k):
    for p in (0.1, 0.4):
        assert noise.triplet_multiplier(p, 1.0, k) == pytest.approx(noise.noise_multiplier(p, k))
        assert noise.triplet_multiplier(p, 5.0, k) < noise.triplet_multiplier(p, 1.0, k)
    assert noise.triplet_multiplier(noise.triplet_noise_bound(3.0, k), 3.0, k) == pytest.approx(0.0, abs=1e-9)
    with pytest.raises(ValueError, match="skew"):
        noise.triplet_multiplier(0.1, 0.5, k)


def test_corrupted_positive_share_against_a_loop():
    """The share of active triplets whose positive pair is corrupted, checked against a loop over the same batches
    and the same mined triplets (``negatives="all"``: every negative, so the mining is not random)."""
    import torch

    from dml_tutorial.distances import pairwise_distances

    rng = np.random.default_rng(0)
    true = np.repeat(np.arange(6), 10)
    observed = noise.corrupt_labels(true, 6, 0.4, seed=1)
    z = torch.nn.functional.normalize(torch.as_tensor(rng.normal(size=(60, 4)), dtype=torch.float32), dim=1)
    out = noise.corrupted_positive_share(z, observed, true, "all", margin=0.2, p=6, k=5, batches=4, seed=3)
    active = bad = pairs = bad_pairs = 0
    for idx in noise._training_batches(observed, 6, 5, 3, 4):
        d = pairwise_distances(z[idx]).numpy()
        yo, yt = observed[idx], true[idx]
        for a in range(len(idx)):
            for q in range(len(idx)):
                if a == q or yo[a] != yo[q]:
                    continue
                pairs, bad_pairs = pairs + 1, bad_pairs + int(yt[a] != yt[q])
                for n in range(len(idx)):
                    if yo[n] != yo[a] and d[a, q] - d[a, n] + 0.2 > 0:
                        active, bad = active + 1, bad + int(yt[a] != yt[q])
    assert out["triplets"] == active and out["active"] == pytest.approx(bad / active)
    assert out["pairs"] == pytest.approx(bad_pairs / pairs)
    clean = noise.corrupted_positive_share(z, true, true, "semihard-random", p=6, k=5, batches=2)
    assert clean["active"] == clean["pairs"] == 0.0


def test_lookalike_pairs_flip_the_most_alike_share_of_classes_to_their_nearest_mean_image():
    """Four classes whose mean images sit at 0, 0.1, 5 and 10 on one pixel: 0 and 1 are each other's nearest
    (0.01 apart, squared), 2's nearest is 1 (4.9 apart), 3's is 2 (5): half the classes are the pair 0 <-> 1."""
    images = np.repeat([[0.0], [0.1], [5.0], [10.0]], 3, axis=0) + np.tile([[-0.01], [0.0], [0.01]], (4, 1))
    labels = np.repeat([0, 1, 2, 3], 3)
    assert noise.lookalike_pairs(images.reshape(12, 1, 1), labels) == {0: 1, 1: 0}
    assert noise.lookalike_pairs(images, labels, share=1.0) == {0: 1, 1: 0, 2: 1, 3: 2}
    assert noise.lookalike_pairs(images, labels + 7, share=0.25) == {7: 8}  # the classes' own ids
    T = noise.transition_matrix(4, 0.2, "asymmetric", noise.lookalike_pairs(images, labels))
    assert np.allclose(T.sum(1), 1) and T[0, 1] == T[1, 0] == 0.2 and T[2, 2] == T[3, 3] == 1.0
    with pytest.raises(ValueError, match="share"):
        noise.lookalike_pairs(images, labels, share=0.0)
    with pytest.raises(ValueError, match="at least 2 classes"):
        noise.lookalike_pairs(images[:3], labels[:3])
