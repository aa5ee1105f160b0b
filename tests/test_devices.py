"""The losses, the discrepancy terms and the metrics compute the same numbers and gradients on every device this
machine has: each is checked against a loop or a library on the CPU in its own test file; here a GPU's value is
checked against the CPU's (the ``cuda`` cases run where ``torch.cuda.is_available()``, and are skipped, as such,
elsewhere). Random negatives and random partners are drawn on the CPU generator either way, so both devices see
the same draws."""

from functools import partial

import numpy as np
import pytest
import torch

from dml_tutorial import discrepancy, losses, metrics, regularizers

DEVICES = [pytest.param("cpu"), pytest.param("cuda", marks=pytest.mark.skipif(
    not torch.cuda.is_available(), reason="no GPU on this machine"))]

def _seeded(loss, **options):
    """``loss`` drawing its random pairs from a fresh CPU generator at each call: the same draws on any device."""
    return lambda z, y: loss(z, y, generator=torch.Generator().manual_seed(0), **options)


LOSSES = {
    "triplet, semi-hard band": _seeded(losses.triplet_loss, margin=0.2, negatives="semihard-band"),
    "triplet, random semi-hard": _seeded(losses.triplet_loss, margin=0.2, negatives="semihard-random"),
    "triplet, hardest": partial(losses.triplet_loss, margin=0.2, negatives="hard", squared=True),
    "contrastive": losses.contrastive_loss,
    "margin": _seeded(losses.margin_loss, alpha=0.2, beta=1.2),
    "N-pair": losses.npairs_loss,
    "angular": losses.angular_loss,
    "binomial deviance": partial(losses.binomial_deviance_loss, alpha=2.0, beta=0.5, eta_neg=25.0),
    "multi-similarity": losses.multi_similarity_loss,
    "L^L (class-wise MMD)": partial(discrepancy.classwise_discrepancy, measure="mmd"),
    "L^W (class-wise Sinkhorn)": partial(discrepancy.classwise_discrepancy, measure="sinkhorn"),
    "energy confusion": partial(regularizers.energy_confusion, log=True, reduction="mean"),
}


def _batch(seed=0, classes=4, per_class=4, dim=8):
    g = torch.Generator().manual_seed(seed)
    z = torch.nn.functional.normalize(torch.randn(classes * per_class, dim, generator=g, dtype=torch.float64), dim=1)
    return z, torch.arange(classes).repeat_interleave(per_class)


def _value_and_grad(loss, z, y, device):
    z = z.to(device).requires_grad_(True)
    value = loss(z, y.to(device))
    (grad,) = torch.autograd.grad(value, z)
    return value.item(), grad.cpu()


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("name", list(LOSSES))
def test_each_loss_and_term_gives_the_cpus_value_and_gradient(name, device):
    z, y = _batch()
    value, grad = _value_and_grad(LOSSES[name], z, y, device)
    cpu_value, cpu_grad = _value_and_grad(LOSSES[name], z, y, "cpu")
    assert np.isfinite(value) and torch.isfinite(grad).all()
    assert value == pytest.approx(cpu_value, rel=1e-6, abs=1e-9)
    torch.testing.assert_close(grad, cpu_grad, rtol=1e-5, atol=1e-8)


@pytest.mark.parametrize("device", DEVICES)
def test_the_divergences_give_the_cpus_value(device):
    x, y = _batch(1)[0][:7], _batch(2)[0][:9] + 0.1
    for divergence in (partial(discrepancy.mmd, kernel="laplacian"), partial(discrepancy.mmd, kernel="gaussian"),
                       partial(discrepancy.sinkhorn_divergence, epsilon=0.05)):
        on = divergence(x.to(device), y.to(device)).item()
        assert on == pytest.approx(divergence(x, y).item(), rel=1e-6, abs=1e-9)


@pytest.mark.parametrize("device", DEVICES)
def test_the_retrieval_metrics_give_the_cpus_value(device):
    g = torch.Generator().manual_seed(3)
    labels = torch.arange(10).repeat_interleave(20)
    z = torch.randn(200, 16, generator=g) + 0.8 * torch.randn(10, 16, generator=g)[labels]
    assert metrics.recall_at_k(z, labels, (1, 2, 4), device=device) == metrics.recall_at_k(z, labels, (1, 2, 4),
                                                                                            device="cpu")
    assert metrics.map_at_r(z, labels, device=device) == pytest.approx(metrics.map_at_r(z, labels, device="cpu"))
