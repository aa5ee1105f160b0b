"""The chapters' worked examples (dml_tutorial.toys): each figure has the panels its caption names, and the numbers
its sentence reads hold what the text says of them, checked against independent computations (POT, the limits of
the Sinkhorn divergence, the identity kernel)."""

import re

import matplotlib
import numpy as np
import ot
import pytest
import torch

from dml_tutorial import discrepancy, toys

matplotlib.use("Agg")


def test_two_views_costs_less_with_the_strays_and_counts_the_negatives_mining_may_draw():
    fig, text = toys.two_views(seed=0)
    assert len(fig.axes) == 2
    with_strays, without = map(float, re.findall(r"(\d+\.\d+) with.* (\d+\.\d+) without", text)[0])
    assert 0 < with_strays < without  # three points of class 1 inside class 0: less to move, L^W lower
    drawn, of = map(int, re.search(r"drawn for this anchor: (\d+) of the batch's (\d+)", text).groups())
    assert 0 < drawn <= of == 10


def test_the_plane_classes_are_float64_and_the_generator_goes_on():
    g = torch.Generator().manual_seed(3)
    x, y = toys.plane_classes(g)
    assert x.shape == (8, 2) and y.shape == (12, 2) and x.dtype == y.dtype == torch.float64
    after = torch.randn(1, generator=g)  # the chapter draws on from the same generator
    g2 = torch.Generator().manual_seed(3)
    for shape in ((8, 2), (6, 2), (6, 2)):
        torch.randn(*shape, generator=g2, dtype=torch.float64)
    assert torch.equal(after, torch.randn(1, generator=g2))
    fig = toys.transport_plans(x, y, epsilons=(0.1, 1.0))
    assert len(fig.axes) == 3  # the exact plan and one a epsilon


def test_the_sinkhorn_divergence_lies_between_exact_ot_and_the_energy_distance():
    x, y = toys.plane_classes(torch.Generator().manual_seed(0))
    _, text = toys.divergence_limits(x, y, paper_epsilon=2.5e-3)
    found = re.fullmatch(r"exact OT (\S+) \| S_eps at eps = 0.0025: (\S+) \| S_eps at eps = 100: (\S+) \| "
                         r"energy distance (\S+)", text)
    numbers = dict(zip(("exact", "paper", "large", "energy"), map(float, found.groups())))
    n, m = len(x), len(y)
    exact = ot.emd2(np.full(n, 1 / n), np.full(m, 1 / m), ot.dist(x.numpy(), y.numpy()) / 2)  # the chapter's cost
    assert numbers["exact"] == pytest.approx(exact, abs=1e-4)
    assert numbers["paper"] == pytest.approx(exact, rel=0.01)  # small eps: the transport cost
    assert numbers["energy"] == pytest.approx(((x.mean(0) - y.mean(0)) ** 2).sum().item() / 2, abs=1e-4)
    assert numbers["large"] == pytest.approx(numbers["energy"], rel=0.01)  # large eps: the energy distance


def test_the_mmd_term_at_the_papers_bandwidth_is_the_identity_kernels_and_still():
    fig, text = toys.mmd_bandwidths(torch.Generator().manual_seed(0), paper_sigma=0.05)
    lines = text.splitlines()
    assert [line.split()[0] for line in lines] == ["laplacian", "gaussian"] and len(fig.axes) == 2
    for line in lines:  # two classes of 10: 2 x (1/10 + 1/10) with a kernel matrix equal to the identity
        assert "sum of MMD^2 = 0.4000" in line and "|gradient| < 1e-8: True" in line
        assert float(line.rsplit("= ", 1)[1]) > 1e-4  # at the median distance the term pulls


def test_the_sinkhorn_flow_brings_every_point_to_its_target_where_the_papers_mmd_does_not():
    _, text = toys.flows(seed=0, steps=40, lr=0.1)
    shares = dict(re.findall(r"(MMD, σ = 0.05|MMD, median σ|Sinkhorn, ε = 0.05²) (\d+) %", text))
    assert shares["Sinkhorn, ε = 0.05²"] == "100" and shares["MMD, σ = 0.05"] == "0"
    assert discrepancy.mmd  # the flows use the package's divergences, not copies


def test_the_triplet_hinge_is_zero_once_the_negative_is_far_and_grows_with_the_margin():
    fig = toys.triplet_hinge(margins=(0.1, 0.5), positive_angle=0.5)
    curves = [line.get_ydata() for line in fig.axes[0].get_lines()[:2]]
    for values in curves:  # the negative opposite the anchor: 2 away, beyond the positive's 2 sin(0.25) + margin
        assert values[-1] == 0 and values[0] > 0
    assert all(np.asarray(curves[1]) >= np.asarray(curves[0]))  # a wider margin never lowers the hinge


def test_distance_weighting_draws_a_curve_per_dimension_and_a_histogram_per_sampled_one():
    fig = toys.distance_weighting(seed=0, dims=(2, 64), sampled_dims=(16, 512))
    assert len(fig.axes[0].get_lines()) == 2 and len(fig.axes[1].patches) == 2


def test_the_noise_bounds_quote_eq_37_and_the_triplet_bound_falls_with_the_skew():
    fig, text = toys.noise_bounds(classes=(6, 100), gammas=(0.5,))
    assert f"(eq. 37: {1 - np.sqrt(0.5):.3f})" in text  # 1 - sqrt(1 - gamma), by hand: 0.293
    for line in fig.axes[0].get_lines()[:2]:
        assert np.all(np.diff(line.get_ydata()) <= 1e-12)  # more skew, less noise tolerated


def test_each_loss_prefers_the_embedding_the_theorems_say():
    lines = {tuple(line.split("positives=")[0].split()) + (line.split("positives=")[1].split()[0],): line
             for line in toys.preferred_embeddings(draws=50)}
    assert lines[("triplet", "all")].endswith("lower: collapsed")  # Theorem 1
    assert lines[("triplet", "easy")].endswith("lower: separated")  # Claim 1
    assert lines[("margin,", "sum", "all")].endswith("lower: collapsed")  # Theorem 2, on the plain sum
    assert lines[("margin", "easy")].endswith("lower: separated")  # Claim 2


def test_every_loss_of_the_zoo_falls_when_the_classes_are_pulled_together():
    table = toys.zoo_values(*toys.zoo_batches(seed=0), seed=0)
    assert len(table) == 10 and list(table.columns) == ["random batch", "classes pulled together"]
    assert (table["classes pulled together"] < table["random batch"]).all()
