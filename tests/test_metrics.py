"""Metrics against brute-force loops written here, and against scikit-learn / pytorch-metric-learning."""

import itertools

import numpy as np
import pytest
import torch
from sklearn.cluster import KMeans
from sklearn.metrics import normalized_mutual_info_score

from dml_tutorial import metrics


def _data(n=60, d=5, classes=4, seed=0):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, classes, n)
    x = rng.standard_normal((n, d)) + 1.5 * np.eye(classes, d)[y]
    return torch.tensor(x, dtype=torch.float32), torch.tensor(y)


def _neighbours_loop(x, i):
    d = [(float(np.sum((x[i] - x[j]) ** 2)), j) for j in range(len(x)) if j != i]
    return [j for _, j in sorted(d)]


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_recall_at_k_matches_a_loop(seed):
    x, y = _data(seed=seed)
    xn, yn = x.double().numpy(), y.numpy()
    expected = {k: np.mean([any(yn[j] == yn[i] for j in _neighbours_loop(xn, i)[:k]) for i in range(len(yn))])
                for k in (1, 2, 4, 8)}
    got = metrics.recall_at_k(x, y)
    assert got == pytest.approx(expected)


def test_recall_is_chunk_independent_and_accepts_numpy():
    x, y = _data(n=200)
    assert metrics.recall_at_k(x, y, chunk=7) == metrics.recall_at_k(x.numpy(), y.numpy(), chunk=1000)


def test_query_is_never_its_own_neighbour():
    x = torch.tensor([[0.0], [0.0], [10.0]])
    assert metrics.recall_at_k(x, torch.tensor([0, 1, 1]), ks=(1,))[1] == 0.0
    idx = metrics.nearest_neighbours(torch.randn(50, 3), 5)
    assert not (idx == torch.arange(50)[:, None]).any()


def test_nmi_equals_sklearn_kmeans_plus_nmi():
    x, y = _data(n=300)
    pred = KMeans(4, n_init=10, random_state=3).fit_predict(x.double().numpy())
    assert metrics.nmi(x, y, seed=3) == pytest.approx(normalized_mutual_info_score(y.numpy(), pred))
    assert metrics.nmi(x, y, n_clusters=8) > 0  # NMI+


def test_nmi_keeps_the_best_of_ten_kmeans_starts():
    # twelve overlapping blobs: one k-means start lands in a different local optimum than the best of ten
    rng = np.random.default_rng(0)
    x = np.concatenate([c + rng.normal(0, 0.6, (20, 2)) for c in rng.normal(0, 3, (12, 2))])
    y = np.repeat(np.arange(12), 20)
    one, ten = ([normalized_mutual_info_score(y, KMeans(12, n_init=n, random_state=s).fit_predict(x)) for s in range(3)]
                for n in (1, 10))
    assert one != ten  # the data tells the two apart
    assert [metrics.nmi(torch.as_tensor(x), torch.as_tensor(y), seed=s) for s in range(3)] == pytest.approx(ten)


def _f1_loop(pred, truth):
    tp = fp = fn = 0
    for i, j in itertools.combinations(range(len(pred)), 2):
        same_c, same_y = pred[i] == pred[j], truth[i] == truth[j]
        tp += same_c and same_y
        fp += same_c and not same_y
        fn += same_y and not same_c
    p, r = tp / (tp + fp), tp / (tp + fn)
    return 2 * p * r / (p + r)


@pytest.mark.parametrize("seed", [0, 1])
def test_pairwise_f1_matches_a_pair_loop(seed):
    rng = np.random.default_rng(seed)
    pred, truth = rng.integers(0, 5, 80), rng.integers(0, 4, 80)
    assert metrics.pairwise_f1(pred, truth) == pytest.approx(_f1_loop(pred, truth))
    assert metrics.pairwise_f1(truth, truth) == pytest.approx(1.0)


def _map_at_r_loop(x, y):
    aps = []
    for i in range(len(y)):
        r = int((y == y[i]).sum()) - 1
        if r == 0:
            continue
        nn = _neighbours_loop(x, i)[:r]
        hits, total = 0, 0.0
        for rank, j in enumerate(nn, 1):
            if y[j] == y[i]:
                hits += 1
                total += hits / rank
        aps.append(total / r)
    return np.mean(aps)


@pytest.mark.parametrize("seed", [0, 1])
def test_map_at_r_matches_a_loop(seed):
    x, y = _data(n=50, seed=seed)
    y[0] = 99  # a class with one sample: skipped
    assert metrics.map_at_r(x, y) == pytest.approx(_map_at_r_loop(x.double().numpy(), y.numpy()))


def test_map_at_r_matches_pytorch_metric_learning():
    """Against pytorch-metric-learning 2.x (2.9.0 in the set-up, the newest release on PyPI on 2026-12-04): the
    dev extra bounds it below 3, so that a major release that moved these modules would not arrive untested."""
    from pytorch_metric_learning.distances import LpDistance
    from pytorch_metric_learning.utils.accuracy_calculator import AccuracyCalculator
    from pytorch_metric_learning.utils.inference import CustomKNN

    x, y = _data(n=120, seed=4)
    # PML: the same embeddings as queries and references, each query excluded from its own neighbours;
    # Euclidean distance through CustomKNN (its default k-NN needs faiss).
    calc = AccuracyCalculator(include=("mean_average_precision_at_r",), k="max_bin_count",
                              knn_func=CustomKNN(LpDistance(normalize_embeddings=False)))
    ref = calc.get_accuracy(x, y, x, y, ref_includes_query=True)["mean_average_precision_at_r"]
    assert metrics.map_at_r(x, y) == pytest.approx(ref, abs=1e-6)


def test_linear_probe_separates_separable_data():
    x, y = _data(n=400, d=8)
    x = x + 5 * torch.nn.functional.one_hot(y, 8).float()
    assert metrics.linear_probe_accuracy(x[:300], y[:300], x[300:], y[300:]) > 0.95


@pytest.mark.parametrize("call", [
    lambda: metrics.recall_at_k(torch.randn(10), torch.zeros(10)),
    lambda: metrics.recall_at_k(torch.randn(10, 2), torch.zeros(9)),
    lambda: metrics.recall_at_k(torch.full((4, 2), float("nan")), torch.zeros(4)),
    lambda: metrics.nmi(torch.randn(10, 2), torch.zeros(10), n_clusters=0),
    lambda: metrics.map_at_r(torch.randn(4, 2), torch.arange(4)),
    lambda: metrics.linear_probe_accuracy(torch.randn(9, 2), torch.arange(9) % 2, torch.randn(3, 3), torch.zeros(3)),
    lambda: metrics.recall_at_k(torch.randn(10, 2), torch.rand(10)),
])
def test_bad_input_is_a_value_error(call):
    with pytest.raises(ValueError):
        call()


def test_spectral_decay_is_zero_for_a_flat_spectrum_and_matches_the_kl_by_hand():
    from scipy.stats import entropy

    flat = torch.eye(8) * 3.0  # eight equal singular values
    assert metrics.spectral_decay(flat, skip=0) == pytest.approx(0.0, abs=1e-12)
    z = torch.randn(50, 6, generator=torch.Generator().manual_seed(0))
    s = np.linalg.svd(z.numpy().astype(np.float64), compute_uv=False)[1:]  # the largest left out
    expected = entropy(np.full(len(s), 1 / len(s)), s / s.sum())  # scipy: KL(uniform || s)
    assert metrics.spectral_decay(z) == pytest.approx(expected, rel=1e-9)
    low_rank = z[:, :1] @ torch.ones(1, 6) + 1e-3 * z  # nearly one direction
    assert metrics.spectral_decay(low_rank, skip=0) > metrics.spectral_decay(z, skip=0)
    with pytest.raises(ValueError, match="singular values"):
        metrics.spectral_decay(torch.randn(10, 2), skip=1)


def test_evaluate_clusters_the_first_classes_only_when_asked():
    g = torch.Generator().manual_seed(0)
    z = torch.randn(120, 8, generator=g)
    y = torch.arange(120) % 12
    full = metrics.evaluate(z, y, ks=(1,), f1=True)
    assert full["NMI"] == metrics.nmi(z, y) and full["F1"] == metrics.f1_clustering(z, y)
    part = metrics.evaluate(z, y, ks=(1,), cluster_classes=3, f1=True)
    keep = y < 3
    assert part["R@1"] == full["R@1"]  # Recall@K uses every sample
    assert part["NMI"] == metrics.nmi(z[keep], y[keep]) and part["F1"] == metrics.f1_clustering(z[keep], y[keep])


def test_evaluate_clusters_once_for_nmi_and_f1(monkeypatch):
    """One k-means serves NMI and F1 (issue #50: the two computed the same clustering twice per run)."""
    calls = []
    kmeans = metrics._kmeans
    monkeypatch.setattr(metrics, "_kmeans", lambda *args: calls.append(args) or kmeans(*args))
    z = torch.randn(60, 4, generator=torch.Generator().manual_seed(1))
    metrics.evaluate(z, torch.arange(60) % 6, ks=(1,), f1=True)
    assert len(calls) == 1


def test_per_class_accuracy_and_centroid_cosines_against_loops():
    labels = np.array([0, 0, 0, 2, 2, 5])
    predicted = np.array([0, 2, 0, 2, 0, 5])
    assert metrics.per_class_accuracy(labels, predicted) == {0: 2 / 3, 2: 1 / 2, 5: 1.0}
    with pytest.raises(ValueError):
        metrics.per_class_accuracy(labels, predicted[:-1])
    g = torch.Generator().manual_seed(0)
    z = torch.randn(6, 4, generator=g)
    classes, cos = metrics.centroid_cosines(z, labels)
    assert classes.tolist() == [0, 2, 5]
    means = [z[torch.as_tensor(labels == c)].double().mean(0) for c in (0, 2, 5)]
    for i in range(3):
        for j in range(3):
            expected = float(means[i] @ means[j] / (means[i].norm() * means[j].norm()))
            assert cos[i, j] == pytest.approx(expected, abs=1e-12)


@pytest.mark.parametrize("seed", [0, 1])
def test_within_class_spread_matches_a_loop(seed):
    g = torch.Generator().manual_seed(seed)
    z, y = torch.randn(23, 5, generator=g), torch.randint(0, 4, (23,), generator=g)
    y[0] = 7  # a class of one sample: 0 from its own centre
    distances = []
    for i in range(len(y)):
        centre = z[y == y[i]].double().mean(0)
        distances.append(float((z[i].double() - centre).norm()))
    assert metrics.within_class_spread(z, y) == pytest.approx(np.mean(distances), rel=1e-12)
    assert metrics.within_class_spread(torch.ones(4, 3), torch.tensor([0, 0, 1, 1])) == 0.0  # collapsed classes
    with pytest.raises(ValueError):
        metrics.within_class_spread(z, y[:-1])


def _wide(n=80, d=600, classes=5, spread=1.5, seed=0):
    """More dimensions than points, as raw photographs are: overlapping classes, so that k-means iterates."""
    rng = np.random.default_rng(seed)
    x = rng.normal(0, 1, (classes, d))[np.arange(n) % classes] + rng.normal(0, spread, (n, d))
    return torch.as_tensor(x, dtype=torch.float32), torch.as_tensor(np.arange(n) % classes)


def test_span_coordinates_keep_every_distance_even_with_repeated_points():
    z, _ = _wide()
    z = torch.cat([z, z[:5]])  # rank below N: the Gram matrix has zero eigenvalues
    x = torch.as_tensor(metrics.span_coordinates(z, chunk=64))  # chunks that do not divide d
    assert x.shape == (len(z), len(z)) and torch.isfinite(x).all()
    assert torch.allclose(torch.cdist(x, x), torch.cdist(z.double(), z.double()), atol=1e-5)  # cdist rounds at 1e-6


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_kmeans_with_more_dimensions_than_points_is_the_same_kmeans(seed, monkeypatch):
    # the same labels, inertia and iteration count as scikit-learn's k-means on the points themselves: the
    # coordinates keep every distance, and the rescaled tolerance stops the iterations at the same step. A
    # tolerance large enough to stop these small data before their labels settle, so that it decides the count
    monkeypatch.setattr(metrics, "KMEANS_TOL", 1.0)
    z, _ = _wide(spread=3, seed=seed)
    plain = KMeans(5, n_init=metrics.KMEANS_INIT, tol=1.0, random_state=seed).fit(z.double().numpy())
    x = metrics.span_coordinates(z)
    spanned = KMeans(5, n_init=metrics.KMEANS_INIT, tol=x.shape[1] / z.shape[1], random_state=seed).fit(x)
    unscaled = KMeans(5, n_init=metrics.KMEANS_INIT, tol=1.0, random_state=seed).fit(x)
    assert unscaled.n_iter_ < plain.n_iter_  # the tolerance binds: without the rescaling it stops too early
    assert spanned.n_iter_ == plain.n_iter_
    assert spanned.inertia_ == pytest.approx(plain.inertia_, rel=1e-9)
    assert np.array_equal(metrics._kmeans(z, 5, seed), plain.labels_)


def test_kmeans_clusters_wide_points_in_their_span(monkeypatch):
    # the equality above would hold on the points too: this checks that the wide path is the one taken
    widths = []

    class Recorder(KMeans):
        def fit_predict(self, x, *args, **kwargs):
            widths.append(x.shape[1])
            return super().fit_predict(x, *args, **kwargs)

    monkeypatch.setattr(metrics, "KMeans", Recorder)
    metrics._kmeans(_wide(n=40, d=300)[0], 4, 0)
    metrics._kmeans(_wide(n=40, d=30)[0], 4, 0)
    assert widths == [40, 30]


class _Stop(Exception):
    pass


def test_the_distances_are_computed_on_the_device_asked_for(monkeypatch):
    """``device`` moves the search, not only the result: each metric's first distance block is computed on the
    device asked for ("meta" here, a device every machine has; the values are checked equal on a GPU below)."""
    places = []

    def spy(a, b):
        places.append((a.device.type, b.device.type))
        raise _Stop

    monkeypatch.setattr(metrics, "pairwise_sq_distances", spy)
    z, y = _data()
    for call in (lambda **kw: metrics.recall_at_k(z, y, **kw), lambda **kw: metrics.map_at_r(z, y, **kw),
                 lambda **kw: metrics.evaluate(z, y, **kw)):
        for device in (None, "meta"):
            with pytest.raises(_Stop):
                call(device=device)
    assert places == [("cpu", "cpu"), ("meta", "meta")] * 3


@pytest.mark.parametrize("device", ["cpu"] + (["cuda"] if torch.cuda.is_available() else []))
def test_metrics_on_a_device_equal_those_on_the_cpu(device):
    """The same Recall@K, MAP@R, NMI and F1 where the distances are computed on a GPU (skipped without one), for
    points narrower than their number and wider (the Gram matrix of the span on the device too)."""
    for z, y in (_data(n=80, d=6), _wide(n=60, d=400, spread=3)):
        here = metrics.evaluate(z, y, ks=(1, 2, 4), f1=True)
        assert metrics.evaluate(z, y, ks=(1, 2, 4), f1=True, device=device) == pytest.approx(here, abs=1e-9)
        assert metrics.map_at_r(z, y, device=device) == pytest.approx(metrics.map_at_r(z, y), abs=1e-9)
        assert metrics.nmi(z, y, 7, device=device) == pytest.approx(metrics.nmi(z, y, 7), abs=1e-9)
        x = torch.as_tensor(metrics.span_coordinates(z.to(device)))
        assert torch.allclose(torch.cdist(x, x), torch.cdist(z.double(), z.double()), atol=1e-5)
