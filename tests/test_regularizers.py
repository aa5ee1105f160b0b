"""Energy Confusion (ECAML eq. 3, 7, 11) against loops; Lemmas 2 and 3 of the paper on random point sets; the term
reaches the embedding layer and not the backbone; degenerate and bad inputs."""

import itertools

import pytest
import torch

from dml_tutorial import models
from dml_tutorial import regularizers as R


def _batch(classes=4, per_class=5, d=8, seed=0, dtype=torch.float64):
    g = torch.Generator().manual_seed(seed)
    z = torch.randn(classes * per_class, d, generator=g, dtype=dtype)
    return z, torch.arange(classes).repeat_interleave(per_class)


def _l_ec(a, b):
    """eq. 3 by a double loop: the mean of ||a_i - b_j||^2 over all pairs."""
    return sum(((u - v) ** 2).sum() for u in a for v in b) / (len(a) * len(b))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("log", [False, True])
def test_matches_the_loop_over_ordered_class_pairs(dtype, log):
    z, y = _batch(classes=4, per_class=3, seed=1, dtype=dtype)
    y = torch.tensor([0, 0, 0, 1, 1, 2, 2, 2, 2, 3, 3, 3])  # unbalanced classes too
    loop = 0.0
    for i, j in itertools.permutations(range(4), 2):
        e = _l_ec(z[y == i], z[y == j])
        loop += torch.log1p(e) if log else e
    assert R.energy_confusion(z, y, log=log).item() == pytest.approx(float(loop), rel=1e-5)


def test_sampled_pairs_are_an_unbiased_estimate():
    z, y = _batch(classes=5, seed=2)
    total = R.energy_confusion(z, y).item()
    g = torch.Generator().manual_seed(0)
    draws = torch.tensor([R.energy_confusion(z, y, num_pairs=1, generator=g).item() for _ in range(4000)])
    assert draws.mean().item() == pytest.approx(total / 20, rel=0.05)  # 20 ordered pairs of 5 classes
    g1, g2 = torch.Generator().manual_seed(3), torch.Generator().manual_seed(3)
    assert R.energy_confusion(z, y, 7, generator=g1).item() == R.energy_confusion(z, y, 7, generator=g2).item()


def _ged(a, b):
    """Generalised energy distance with rho = ||.||^2 (ECAML eq. 4), V-statistics, by loops."""
    return 2 * _l_ec(a, b) - _l_ec(a, a) - _l_ec(b, b)


@pytest.mark.parametrize("seed", range(5))
def test_lemma2_and_lemma3(seed):
    z, y = _batch(classes=2, per_class=6, d=5, seed=seed)
    a, b = z[y == 0], z[y == 1]
    energies, _ = R.class_pair_energies(z, y)
    l_ec = energies[0, 1].item()
    gamma2 = ((a.mean(0) - b.mean(0)) ** 2).sum().item()  # MMD^2 with the linear kernel k(u, v) = u.v
    assert l_ec >= 0.5 * _ged(a, b).item() - 1e-12  # Lemma 2
    assert gamma2 == pytest.approx(0.5 * _ged(a, b).item(), rel=1e-10)  # the proof's identity
    assert l_ec >= gamma2  # Lemma 3
    # equality when every class is a single point (no within-class spread)
    point = torch.cat([a[:1].repeat(6, 1), b[:1].repeat(6, 1)])
    e, _ = R.class_pair_energies(point, y)
    assert e[0, 1].item() == pytest.approx(((a[0] - b[0]) ** 2).sum().item(), rel=1e-12)
    assert e[0, 1].item() == pytest.approx(0.5 * _ged(point[:6], point[6:]).item(), rel=1e-10)


def test_the_term_trains_the_embedding_layer_and_not_the_backbone():
    torch.manual_seed(0)
    model = models.MLP(in_dim=10, dim=4, hidden=16, dropout=0.0)
    x, y = torch.randn(12, 10), torch.arange(3).repeat_interleave(4)
    model.eval()
    z = model(x)
    assert torch.allclose(R.embedding_layer_only(model), z)
    R.energy_confusion(R.embedding_layer_only(model), y).backward()
    assert all(p.grad is None or torch.count_nonzero(p.grad) == 0 for p in model.trunk.parameters())
    assert torch.count_nonzero(model.embedding.weight.grad) > 0
    model.zero_grad()
    R.energy_confusion(model(x), y).backward()  # without the detach, the backbone would get a gradient
    assert any(p.grad is not None and torch.count_nonzero(p.grad) > 0 for p in model.trunk.parameters())


def test_degenerate_and_bad_inputs():
    z, _ = _batch(classes=1, per_class=4, seed=4)
    zz = z.clone().requires_grad_(True)
    one_class = R.energy_confusion(zz, torch.zeros(4, dtype=torch.long))
    one_class.backward()
    assert one_class.item() == 0.0 and torch.isfinite(zz.grad).all()
    dup = torch.zeros(4, 3, requires_grad=True)  # all points equal: zero energy, finite gradient
    value = R.energy_confusion(dup, torch.tensor([0, 0, 1, 1]), log=True)
    value.backward()
    assert value.item() == 0.0 and torch.isfinite(dup.grad).all()
    assert torch.isfinite(R.energy_confusion(z, torch.arange(4)))  # singletons
    with pytest.raises(ValueError, match="num_pairs"):
        R.energy_confusion(z, torch.arange(4), num_pairs=0)
    with pytest.raises(ValueError, match="NaN"):
        R.energy_confusion(z * float("nan"), torch.arange(4))
    with pytest.raises(ValueError, match="Embedder"):
        R.embedding_layer_only(torch.nn.Linear(3, 3))
    with pytest.raises(ValueError, match="just embedded"):
        R.embedding_layer_only(models.MLP(in_dim=3, dim=2))  # never called: no forward pass to read


def test_the_term_reads_the_same_forward_pass():
    # one trunk pass per step: the same dropout mask as the metric loss's embeddings, batch norm updated once
    torch.manual_seed(0)
    model = models.ConvNet((1, 8, 8), dim=4, dropout=0.5)
    model.train()
    x = torch.randn(12, 1, 8, 8)
    z = model(x)
    tracked = [m.num_batches_tracked.item() for m in model.modules() if isinstance(m, torch.nn.BatchNorm2d)]
    z_ec = R.embedding_layer_only(model)
    assert torch.equal(z_ec, z)
    assert [m.num_batches_tracked.item() for m in model.modules() if isinstance(m, torch.nn.BatchNorm2d)] == tracked


def test_mean_reduction_divides_by_the_number_of_pairs():
    z, y = _batch(classes=3, seed=5)
    assert R.energy_confusion(z, y, log=True, reduction="mean").item() == pytest.approx(
        R.energy_confusion(z, y, log=True).item() / 6, rel=1e-12)
    with pytest.raises(ValueError, match="reduction"):
        R.energy_confusion(z, y, reduction="max")


def test_unit_norm_rows_matches_a_loop_and_the_released_codes_gradient():
    g = torch.Generator().manual_seed(3)
    w = (torch.randn(5, 7, generator=g, dtype=torch.float64) * 0.6).requires_grad_()
    loop = sum((sum(w[i, j] ** 2 for j in range(7)) - 1) ** 2 for i in range(5)) / 5
    value = R.unit_norm_rows(w)
    assert value.item() == pytest.approx(loop.item(), rel=1e-12)
    value.backward()
    # the CUDA kernel of chenbinghui1/ECAML adds 4 (lamda / N) (||w_i||^2 - 1) w_ij, here with lamda = 1
    kernel = 4.0 / 5 * ((w.detach() ** 2).sum(1, keepdim=True) - 1) * w.detach()
    assert torch.allclose(w.grad, kernel, rtol=1e-12)


def test_unit_norm_rows_is_zero_on_unit_rows_and_rejects_bad_shapes():
    rows = torch.nn.functional.normalize(torch.randn(4, 6, dtype=torch.float64), dim=1)
    assert R.unit_norm_rows(rows).item() == pytest.approx(0.0, abs=1e-24)
    for bad in (torch.ones(3), torch.ones(0, 4)):
        with pytest.raises(ValueError, match="weight matrix"):
            R.unit_norm_rows(bad)


def test_pair_energy_is_the_squared_distance_of_means_plus_both_spreads():
    g = torch.Generator().manual_seed(5)
    z = torch.nn.functional.normalize(torch.randn(23, 6, generator=g, dtype=torch.float64), dim=1)
    y = torch.tensor([0] * 7 + [1] * 9 + [2] * 7)
    energies, classes = R.class_pair_energies(z, y)
    parts = R.energy_decomposition(z, y)
    for i, a in enumerate(classes):
        xa = z[y == a]
        spread = sum(((x - xa.mean(0)) ** 2).sum() for x in xa) / len(xa)  # tr S_a by a loop over the samples
        assert parts["within"][i].item() == pytest.approx(spread.item(), rel=1e-10)
        for j, b in enumerate(classes):
            by_loop = sum(((u - v) ** 2).sum() for u in xa for v in z[y == b]) / (len(xa) * (y == b).sum())
            assert energies[i, j].item() == pytest.approx(by_loop.item(), rel=1e-10)
            identity = parts["between"][i, j] + parts["within"][i] + parts["within"][j]
            assert energies[i, j].item() == pytest.approx(identity.item(), rel=1e-10)


def _released_loop(z, y, flags):
    """The released Caffe layer's forward (src/energy_confusion.cpp) transliterated: count the same- and
    different-class pairs i < j, then add 0.5 ||z_i - z_j||^2 / w over the flagged pairs; the loss is log of it."""
    n = len(y)
    w_pos = sum(int(y[i] == y[j]) for i in range(n) for j in range(i + 1, n))
    w_neg = n * (n - 1) // 2 - w_pos
    total = 0.0
    for i in range(n):
        for j in range(i + 1, n):
            if flags[i, j]:
                total += 0.5 * float(((z[i] - z[j]) ** 2).sum()) / (w_pos if y[i] == y[j] else w_neg)
    return torch.log(torch.tensor(total, dtype=torch.float64))


@pytest.mark.parametrize("partners", [1, 3])
def test_released_ec_matches_the_caffe_loop(partners):
    z, _ = _batch(classes=5, per_class=4, seed=7)
    y = torch.tensor([0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 0, 1, 2, 3, 4, 4, 3, 2, 1, 0])
    value = R.released_energy_confusion(z, y, partners, generator=torch.Generator().manual_seed(3))
    flags = R.released_partners(len(y), partners, torch.Generator().manual_seed(3))  # the same draw
    assert value.item() == pytest.approx(_released_loop(z, y, flags).item(), rel=1e-10)
    # the layer's backward divides the gradient of E by E: the gradient of log E
    zz = z.clone().requires_grad_(True)
    R.released_energy_confusion(zz, y, partners, generator=torch.Generator().manual_seed(3)).backward()
    w_pos = 5 * 6  # 4 samples per class: 6 same-class pairs each, 190 - 30 = 160 different-class pairs
    zz2 = z.clone().requires_grad_(True)
    energy = sum(0.5 * ((zz2[i] - zz2[j]) ** 2).sum() / (w_pos if y[i] == y[j] else 190 - w_pos)
                 for i, j in flags.nonzero().tolist())
    (energy.backward(), zz2.grad.div_(energy.detach()))  # the layer: dE / E
    assert torch.allclose(zz.grad, zz2.grad, rtol=1e-9, atol=1e-12)


def test_released_partners_follow_the_layer():
    n, p = 30, 4
    flags = R.released_partners(n, p, torch.Generator().manual_seed(0))
    for i in range(n):
        picked = flags[i].nonzero().flatten().tolist()
        if i < n - 2 * p:
            assert len(picked) == p and min(picked) >= i + 2  # never itself, its successor, or an earlier sample
        else:
            assert picked == []
    # uniform over i + 2, ..., n - 1: anchor 0 picks each of its 28 candidates with probability 4 / 28
    g = torch.Generator().manual_seed(1)
    counts = sum(R.released_partners(n, p, g)[0].double() for _ in range(2000))
    assert counts[:2].sum() == 0
    expected = 2000 * p / (n - 2)
    assert (counts[2:] - expected).abs().max() < 6 * (expected * (1 - p / (n - 2))) ** 0.5


def test_released_ec_degenerate_and_bad_inputs():
    z, y = _batch(classes=2, per_class=3, seed=5)
    zz = z.clone().requires_grad_(True)
    none = R.released_energy_confusion(zz, y, partners=3)  # n = 6 <= 2 x 3: no anchor flags a partner
    none.backward()
    assert none.item() == 0.0 and torch.isfinite(zz.grad).all()
    dup = torch.zeros(12, 3, requires_grad=True)  # every flagged pair coincides: zero, finite gradient
    value = R.released_energy_confusion(dup, torch.arange(12) % 3, partners=2)
    value.backward()
    assert value.item() == 0.0 and torch.isfinite(dup.grad).all()
    one_class = R.released_energy_confusion(torch.randn(12, 3), torch.zeros(12, dtype=torch.long), partners=2)
    assert torch.isfinite(one_class)  # no different-class pair anywhere
    with pytest.raises(ValueError, match="partners"):
        R.released_energy_confusion(z, y, partners=0)
    with pytest.raises(ValueError, match="NaN"):
        R.released_energy_confusion(z * float("nan"), y)
