"""Batch sampling and tuple mining against loops written here."""

import numpy as np
import pytest
import torch

from dml_tutorial import sampling
from dml_tutorial.distances import pairwise_distances


def test_pk_sampler_batches_are_class_balanced_and_reproducible():
    labels = np.repeat(np.arange(10), [3, 20, 20, 20, 20, 20, 20, 20, 20, 20])
    s = sampling.PKSampler(labels, p=4, k=5, seed=1)
    batches = list(s)
    assert len(batches) == len(labels) // 20
    for b in batches:
        classes, counts = np.unique(labels[b], return_counts=True)
        assert len(classes) == 4 and (counts == 5).all()
    s.set_epoch(0)
    assert list(s) == batches
    s.set_epoch(1)
    assert list(s) != batches
    assert list(sampling.PKSampler(labels, 4, 5, seed=1)) == batches


def test_pk_sampler_rejects_impossible_requests():
    with pytest.raises(ValueError, match="only 2 classes"):
        sampling.PKSampler([0, 1, 1], p=3, k=2)


def _batch(seed=0, n=24, classes=5, d=8):
    g = torch.Generator().manual_seed(seed)
    z = torch.nn.functional.normalize(torch.randn(n, d, generator=g), dim=1)
    y = torch.randint(0, classes, (n,), generator=g)
    return z, y


def test_easy_positive_is_the_nearest_same_class_sample():
    z = torch.tensor([[0.0], [1.0], [3.0], [10.0], [0.5], [20.0]])
    y = torch.tensor([0, 0, 0, 1, 1, 2])
    a, p = sampling.positive_pairs(pairwise_distances(z), y, "easy")
    assert dict(zip(a.tolist(), p.tolist())) == {0: 1, 1: 0, 2: 1, 3: 4, 4: 3}  # class 2 has no positive


def test_random_positive_is_one_uniform_same_class_sample_per_anchor():
    y = torch.tensor([0, 0, 0, 0, 1, 2])
    d = torch.zeros(6, 6)
    g = torch.Generator().manual_seed(0)
    counts = np.zeros((6, 6))
    for _ in range(3000):
        a, p = sampling.positive_pairs(d, y, "random", g)
        assert a.tolist() == [0, 1, 2, 3]  # samples 4 and 5 have no positive
        assert (y[p] == y[a]).all() and (p != a).all()
        counts[a.numpy(), p.numpy()] += 1
    assert np.all(np.abs(counts[:4, :4][~np.eye(4, dtype=bool)] - 1000) < 150)  # uniform over the 3 class mates


@pytest.mark.parametrize("seed", range(3))
def test_all_positives_are_all_ordered_same_class_pairs(seed):
    z, y = _batch(seed)
    a, p = sampling.positive_pairs(pairwise_distances(z), y, "all")
    expected = {(i, j) for i in range(len(y)) for j in range(len(y)) if i != j and y[i] == y[j]}
    assert set(zip(a.tolist(), p.tolist())) == expected


@pytest.mark.parametrize("seed", range(3))
def test_semihard_fixed_matches_a_loop(seed):
    z, y = _batch(seed)
    d = pairwise_distances(z)
    a, p = sampling.positive_pairs(d, y)
    a2, p2, n = sampling.mine_negatives(d, y, a, p, "semihard-fixed")
    got = {(i, j): k for i, j, k in zip(a2.tolist(), p2.tolist(), n.tolist())}
    for i, j in zip(a.tolist(), p.tolist()):
        cands = [k for k in range(len(y)) if y[k] != y[i] and d[i, k] > d[i, j]]
        if cands:
            assert got[(i, j)] == min(cands, key=lambda k: d[i, k])
        else:
            assert (i, j) not in got


@pytest.mark.parametrize("seed", range(3))
def test_semihard_random_picks_a_violating_negative(seed):
    z, y = _batch(seed)
    d = pairwise_distances(z)
    a, p = sampling.positive_pairs(d, y)
    g = torch.Generator().manual_seed(seed)
    a2, p2, n = sampling.mine_negatives(d, y, a, p, "semihard-random", margin=0.2, generator=g)
    assert (y[n] != y[a2]).all() and (d[a2, p2] - d[a2, n] + 0.2 > 0).all()
    kept = {(i, j) for i, j in zip(a2.tolist(), p2.tolist())}
    for i, j in zip(a.tolist(), p.tolist()):
        has = any(y[k] != y[i] and d[i, j] - d[i, k] + 0.2 > 0 for k in range(len(y)))
        assert ((i, j) in kept) == has


@pytest.mark.parametrize("seed", range(3))
def test_semihard_band_picks_inside_the_band_only(seed):
    # FaceNet's semi-hard: d_ap < d_an < d_ap + margin; unlike eq. 28 a negative closer than the positive is excluded
    z, y = _batch(seed)
    d = pairwise_distances(z)
    a, p = sampling.positive_pairs(d, y)
    a2, p2, n = sampling.mine_negatives(d, y, a, p, "semihard-band", margin=0.2, generator=torch.Generator())
    assert (y[n] != y[a2]).all() and (d[a2, n] > d[a2, p2]).all() and (d[a2, n] < d[a2, p2] + 0.2).all()
    kept = {(i, j) for i, j in zip(a2.tolist(), p2.tolist())}
    for i, j in zip(a.tolist(), p.tolist()):
        has = any(y[k] != y[i] and d[i, j] < d[i, k] < d[i, j] + 0.2 for k in range(len(y)))
        assert ((i, j) in kept) == has


def test_semihard_band_and_eq_28_differ_on_a_hard_negative():
    # negative 2 is closer to the anchor than the positive: eq. 28 may pick it, the band never does
    d = torch.tensor([[0.0, 0.5, 0.3, 0.6], [0.5, 0, 1, 1], [0.3, 1, 0, 1], [0.6, 1, 1, 0]])
    y = torch.tensor([0, 0, 1, 1])
    a, p = torch.tensor([0] * 500), torch.tensor([1] * 500)
    picks = {name: set(sampling.mine_negatives(d, y, a, p, name, 0.2, torch.Generator().manual_seed(0))[2].tolist())
             for name in ("semihard-band", "semihard-random")}
    assert picks == {"semihard-band": {3}, "semihard-random": {2, 3}}


@pytest.mark.parametrize("seed", range(3))
def test_the_band_falls_back_to_a_random_negative_only_where_it_is_empty(seed):
    """Roth et al.'s semi-hard miner: the band where it holds a negative, else any negative; every pair kept."""
    z, y = _batch(seed)
    d = pairwise_distances(z)
    a, p = sampling.positive_pairs(d, y)
    a2, p2, n = sampling.mine_negatives(d, y, a, p, "semihard-band-or-random", 0.2, torch.Generator().manual_seed(0))
    assert torch.equal(a2, a) and torch.equal(p2, p) and (y[n] != y[a]).all()
    for i, j, k in zip(a.tolist(), p.tolist(), n.tolist()):
        band = [m for m in range(len(y)) if y[m] != y[i] and d[i, j] < d[i, m] < d[i, j] + 0.2]
        assert k in band if band else True


def test_an_empty_band_is_silent_and_the_fallback_draws_uniformly():
    # every negative lies far beyond the band: FaceNet's band keeps no triplet, the fallback a uniform one
    d = torch.tensor([[0.0, 0.1, 1.0, 1.2], [0.1, 0, 1, 1], [1.0, 1, 0, 0.1], [1.2, 1, 0.1, 0]])
    y = torch.tensor([0, 0, 1, 1])
    a, p = torch.tensor([0] * 4000), torch.tensor([1] * 4000)
    assert len(sampling.mine_negatives(d, y, a, p, "semihard-band", 0.2)[2]) == 0
    n = sampling.mine_negatives(d, y, a, p, "semihard-band-or-random", 0.2, torch.Generator().manual_seed(0))[2]
    assert set(n.tolist()) == {2, 3} and abs((n == 2).float().mean().item() - 0.5) < 0.03


def test_semihard_random_is_uniform_over_candidates():
    d = torch.tensor([[0.0, 0.1, 0.2, 0.25, 5.0], [0.1, 0, 1, 1, 1], [0.2, 1, 0, 1, 1], [0.25, 1, 1, 0, 1],
                      [5.0, 1, 1, 1, 0]])
    y = torch.tensor([0, 0, 1, 1, 1])
    a, p = torch.tensor([0] * 3000), torch.tensor([1] * 3000)
    _, _, n = sampling.mine_negatives(d, y, a, p, "semihard-random", 0.2, torch.Generator().manual_seed(0))
    counts = np.bincount(n.numpy(), minlength=5)
    assert counts[4] == 0 and abs(counts[2] - counts[3]) < 200


def test_hard_and_all_negatives():
    z, y = _batch(1)
    d = pairwise_distances(z)
    a, p = sampling.positive_pairs(d, y)
    a2, _, n = sampling.mine_negatives(d, y, a, p, "hard")
    for i, k in zip(a2.tolist(), n.tolist()):
        assert d[i, k] == min(d[i, m] for m in range(len(y)) if y[m] != y[i])
    a3, _p3, _n3 = sampling.mine_negatives(d, y, a, p, "all")
    assert len(a3) == sum(int((y != y[i]).sum()) for i in a.tolist())


@pytest.mark.parametrize("dim", [2, 64, 512])
def test_distance_weighted_sampling_is_finite_in_high_dimension(dim):
    g = torch.Generator().manual_seed(0)
    z = torch.nn.functional.normalize(torch.randn(32, dim, generator=g), dim=1)
    y = torch.arange(32) % 4
    d = pairwise_distances(z)
    w = sampling.distance_weights(d, dim, y[:, None] != y[None, :])
    assert (w.sum(1) > 0).all(), "every anchor keeps a negative to sample"
    assert torch.isfinite(w).all() and (w >= 0).all()
    a, p = sampling.positive_pairs(d, y)
    a2, _, n = sampling.mine_negatives(d, y, a, p, "distance", generator=g, dim=dim)
    assert len(a2) > 0 and (y[n] != y[a2]).all()


def test_unknown_strategy():
    z, y = _batch()
    with pytest.raises(ValueError, match="unknown negatives"):
        sampling.mine_negatives(pairwise_distances(z), y, y[:0], y[:0], "hardest")


def test_negative_frequencies_match_each_strategy_definition():
    g = torch.Generator().manual_seed(3)
    z = torch.nn.functional.normalize(torch.randn(20, 2, generator=g, dtype=torch.float64), dim=1)
    y = torch.arange(4).repeat_interleave(5)
    d = torch.cdist(z, z)
    neg = (y != y[0]).numpy()
    f_all = sampling.negative_frequencies(z, y, 0, 1, "all")
    assert np.array_equal(f_all, neg.astype(float))
    f_hard = sampling.negative_frequencies(z, y, 0, 1, "hard")
    assert f_hard.sum() == 1 and f_hard[int(d[0].masked_fill(y == y[0], 9).argmin())] == 1
    f_rand = sampling.negative_frequencies(z, y, 0, 1, "random", draws=30_000)
    assert f_rand.sum() == pytest.approx(1) and not f_rand[~neg].any()
    assert np.allclose(f_rand[neg], 1 / neg.sum(), atol=0.01)
    f_semi = sampling.negative_frequencies(z, y, 0, 1, "semihard-random", draws=2000, margin=0.2)
    inside = neg & (d[0].numpy() < d[0, 1].item() + 0.2)
    assert np.array_equal(f_semi > 0, inside)
    with pytest.raises(ValueError, match="not a positive pair"):
        sampling.negative_frequencies(z, y, 0, 7, "all")


@pytest.mark.parametrize("negatives", ["random", "semihard-random", "semihard-band", "semihard-band-or-random",
                                       "semihard-fixed", "hard", "distance"])
def test_selection_probabilities_are_the_frequencies_mine_negatives_draws(negatives):
    """Each row of the exact probabilities against 4,000 draws of mine_negatives for the same positive pairs."""
    g = torch.Generator().manual_seed(0)
    z = torch.nn.functional.normalize(torch.randn(12, 8, generator=g), dim=1)
    y = torch.arange(3).repeat_interleave(4)
    dist = pairwise_distances(z)
    a, p = sampling.positive_pairs(dist, y)
    prob = sampling.selection_probabilities(dist, y, a, p, negatives, margin=0.3, dim=8)
    counts = torch.zeros_like(prob)
    draws = 4000
    for _ in range(draws):
        ta, tp, tn = sampling.mine_negatives(dist, y, a, p, negatives, margin=0.3, generator=g, dim=8)
        rows = ((a[:, None] == ta) & (p[:, None] == tp)).float().argmax(0)  # each triplet's positive pair
        counts.index_put_((rows, tn), torch.ones(len(tn)), accumulate=True)
    assert torch.allclose(counts / draws, prob, atol=0.03)
    assert torch.allclose(prob.sum(1)[prob.sum(1) > 0], torch.ones(1))
    assert (prob[y[a][:, None] == y[None]] == 0).all()  # never a same-class sample
