"""The chapters' exercises: every chapter has them, each with a hint and what the reader should see, and what each
says the reader will see is computed here, so that an exercise cannot promise what the package does not do."""

import json
import math
import re

import numpy as np
import pytest
import torch
from sklearn.datasets import load_digits
from sklearn.metrics import normalized_mutual_info_score

from dml_tutorial import discrepancy, losses, metrics, noise, regularizers, report, sampling
from dml_tutorial.chapters import chapters


def _exercises(chapter: str) -> str:
    nb = json.loads(chapters()[chapter].read_text())
    (cell,) = ["".join(c["source"]) for c in nb["cells"] if "".join(c["source"]).startswith("## Exercises")]
    return cell


@pytest.mark.parametrize("chapter", ["foundations", "loss_zoo", "dcdl", "cbswr", "eps", "ecaml",
                                     "noise_guarantees", "bench"])
def test_every_chapter_has_exercises_each_with_a_hint_and_what_to_see(chapter):
    text = _exercises(chapter).split(":::{dropdown} Further runs to try")[0]  # open questions: no answer
    titles = re.findall(r"^\*\*(\d+)\. [^*]+\*\*", text, flags=re.MULTILINE)
    assert titles == [str(i + 1) for i in range(len(titles))] and titles
    blocks = re.split(r"^\*\*\d+\. ", text, flags=re.MULTILINE)[1:]
    for block in blocks:
        assert re.findall(r"^:::\{dropdown\} (.+)$", block, flags=re.MULTILINE) == ["Hint", "What you should see"]
        assert block.count("\n:::\n") + block.endswith("\n:::") == 2  # each dropdown closed


def test_foundations_the_query_is_its_own_nearest_neighbour_unless_left_out():
    digits = load_digits()
    x = torch.nn.functional.normalize(torch.as_tensor(digits.data[:500], dtype=torch.float32), dim=1)
    y = torch.as_tensor(digits.target[:500])
    nearest = torch.cdist(x, x).argmin(1)
    assert (y[nearest] == y).float().mean() == 1.0 and (nearest == torch.arange(500)).all()
    left_out = metrics.recall_at_k(x, y, ks=(1, 2, 4, 8))
    assert left_out[1] < 1.0 and list(left_out.values()) == sorted(left_out.values())  # exercise 2: R@K rises


def test_loss_zoo_a_far_negative_pair_gives_zero_loss_and_gradient():
    z = torch.tensor([[0.0, 0.0], [1.61, 0.0]], requires_grad=True)  # beyond beta + alpha = 1.6
    loss = losses.contrastive_loss(z, torch.tensor([0, 1]))
    loss.backward()
    assert loss.item() == 0.0 and torch.equal(z.grad, torch.zeros_like(z))
    closer = torch.tensor([[0.0, 0.0], [1.5, 0.0]])
    assert losses.contrastive_loss(closer, torch.tensor([0, 1])).item() == pytest.approx(0.1)


def test_dcdl_a_shifted_cloud_is_half_the_squared_shift_away_and_the_mmd_is_silent():
    g = torch.Generator().manual_seed(0)
    x = torch.randn(20, 2, generator=g, dtype=torch.float64) * 0.3
    t = torch.tensor([1.0, -0.5], dtype=torch.float64)
    for epsilon in (2.5e-3, 1.0):
        assert discrepancy.sinkhorn_divergence(x, x + t, epsilon=epsilon).item() == pytest.approx(
            (t @ t).item() / 2, rel=1e-4)
    for _ in range(2):
        a, b = (torch.nn.functional.normalize(torch.randn(20, 64, generator=g), dim=1) for _ in range(2))
        assert discrepancy.mmd(a, b).item() == pytest.approx(0.1, abs=1e-6)


def test_cbswr_random_clusters_score_a_high_nmi_and_the_self_term_dwarfs_the_others():
    rng = np.random.default_rng(0)
    scores = [normalized_mutual_info_score(rng.integers(0, 1000, 64), rng.integers(0, 32, 64)) for _ in range(300)]
    assert min(scores) > 0.8
    f = torch.nn.functional.normalize(torch.randn(64, 64, generator=torch.Generator().manual_seed(0)), dim=1)
    logits = f @ f.T / 0.1  # [j, i]: f_i . f_j / tau, the denominator of P(i | x_j) summed over i
    others = logits.masked_fill(torch.eye(64, dtype=torch.bool), float("-inf")).exp().sum(1)
    assert logits.diagonal() == pytest.approx(torch.full((64,), 10.0)) and others.max() < 500
    assert logits.softmax(1).masked_fill(torch.eye(64, dtype=torch.bool), 0).max() < 0.01


def test_eps_takes_each_anchors_positive_from_its_own_mode():
    points = torch.tensor([[0.0, 0.0], [0.1, 0.0], [5.0, 0.0], [5.1, 0.0], [2.5, 3.0]])
    anchors, positives = sampling.positive_pairs(torch.cdist(points, points), torch.tensor([0, 0, 0, 0, 1]),
                                                 positives="easy")
    assert anchors.tolist() == [0, 1, 2, 3] and positives.tolist() == [1, 0, 3, 2]
    labels = torch.arange(12).repeat_interleave(5)  # 12 x 5: K - 1 = 4 positives each, against 1
    dist = torch.rand(60, 60, generator=torch.Generator().manual_seed(0))
    assert len(sampling.positive_pairs(dist, labels, "all")[0]) == 60 * 4
    assert len(sampling.positive_pairs(dist, labels, "easy")[0]) == 60


def test_ecaml_pair_counts_and_what_ec_sees_on_the_sphere():
    labels = torch.arange(64).repeat_interleave(2)
    same = labels[:, None] == labels[None, :]
    off = ~torch.eye(128, dtype=torch.bool)
    assert int((same & off).sum()) == 128 and int((~same).sum()) == 16_128
    z = torch.nn.functional.normalize(torch.randn(30, 8, generator=torch.Generator().manual_seed(1),
                                                  dtype=torch.float64), dim=1)
    y = torch.arange(3).repeat_interleave(10)
    energies, classes = regularizers.class_pair_energies(z, y)
    means = torch.stack([z[y == c].mean(0) for c in classes])
    assert torch.allclose(energies, 2 - 2 * means @ means.T)


def test_noise_pair_rates_and_the_theorems_reach():
    q_pos, q_neg = noise.pair_noise_rates(0.2, 1000)
    assert round(q_pos, 2) == 0.36 and round(q_neg, 4) == 0.0004
    bounds = [noise.triplet_noise_bound(eta, 1000) for eta in (1, 2, 5, 10)]
    assert [round(b, 2) for b in bounds] == [0.97, 0.29, 0.11, 0.05]
    assert bounds[1] == pytest.approx(1 - math.sqrt(1 - 1 / 2), abs=1e-3)  # eq. 27


def test_bench_the_glyph_search_winners_of_n_pair_and_margin_sit_at_their_grids_edges():
    run = report.recorded("bench", "glyphs")
    search = run["Search: MAP@R on the validation classes"]

    def grid(method, knob):
        values = {float(name.split(f"{knob} = ")[1]): np.mean(cols["MAP@R"])
                  for name, cols in search.items() if name.startswith(f"{method}, {knob} = ")}
        return max(values, key=values.get), sorted(values)

    best, tried = grid("N-pair", "scale")
    assert best == tried[-1]
    best, tried = grid("Margin", "beta")
    assert best == tried[0]
