"""The composable objective: equal to the sum of its terms computed by hand, the paper presets equal to their
definitions, every combination finite on degenerate batches, clear errors, and train.fit passing it the batch."""

import itertools
from types import SimpleNamespace

import pytest
import torch

from dml_tutorial import dcdl, discrepancy, ecaml, losses, models, objective, regularizers


def _batch(seed=0, classes=4, per_class=5, dim=8):
    g = torch.Generator().manual_seed(seed)
    model = models.MLP(6, dim)
    x = torch.randn(classes * per_class, 6, generator=g)
    return model(x), torch.arange(classes).repeat_interleave(per_class), SimpleNamespace(model=model, x=x)


def test_an_objective_is_the_weighted_sum_of_its_terms_computed_by_hand():
    z, y, batch = _batch()
    loss = objective.objective("multi_similarity", positives="easy",
                               terms={"sinkhorn": 0.5, "energy_confusion": 0.1, "mmd_median": 0.2})
    ec = regularizers.energy_confusion(regularizers.embedding_layer_only(batch.model), y, log=True, reduction="mean")
    by_hand = (losses.multi_similarity_loss(z, y, positives="easy")
               + 0.5 * discrepancy.classwise_discrepancy(z, y, "sinkhorn", epsilon=2.5e-3)
               + 0.1 * ec + 0.2 * discrepancy.classwise_discrepancy(z, y, "mmd", sigma="median"))
    assert loss(z, y, batch).item() == pytest.approx(by_hand.item(), rel=1e-6)
    parts = loss.parts(z, y, batch)
    assert list(parts) == ["multi_similarity", "sinkhorn", "energy_confusion", "mmd_median"]
    weights = {"multi_similarity": 1.0, "sinkhorn": 0.5, "energy_confusion": 0.1, "mmd_median": 0.2}
    assert sum(weights[k] * v for k, v in parts.items()).item() == pytest.approx(loss(z, y, batch).item(), rel=1e-6)


def test_the_paper_presets_are_objectives_equal_to_their_definitions():
    z, y, batch = _batch(1)
    assert isinstance(dcdl.dcdl_loss("trip", "W"), objective.Objective)
    torch.manual_seed(0)  # the triplet loss draws its negatives from the band at random
    expected = dcdl.LOCAL_LOSSES["trip"](z, y) + 0.5 * discrepancy.classwise_discrepancy(z, y, **dcdl.TERMS["W"])
    torch.manual_seed(0)
    assert dcdl.dcdl_loss("trip", "W")(z, y).item() == pytest.approx(expected.item(), rel=1e-6)
    ec = regularizers.energy_confusion(regularizers.embedding_layer_only(batch.model), y, log=True, reduction="mean")
    expected = ecaml.LOCAL_LOSSES["binomial"](z, y) + ecaml.LAMBDA["binomial"] * ec
    assert ecaml.ecaml_loss("binomial")(z, y, batch).item() == pytest.approx(expected.item(), rel=1e-6)
    same = objective.objective("binomial", terms={"energy_confusion": ecaml.LAMBDA["binomial"]}, eta_neg=25.0)
    assert same(z, y, batch).item() == pytest.approx(expected.item(), rel=1e-6)


LOCALS = [None, *objective.LOCAL]
TERM_SETS = [{}, {"sinkhorn": 0.5}, {"mmd": 0.2, "energy_confusion": 0.1}, {"sinkhorn_geomloss": 0.5, "mmd_gaussian_median": 1.0}]


@pytest.mark.parametrize("local,terms", [(loc, t) for loc, t in itertools.product(LOCALS, TERM_SETS) if loc or t])
def test_every_combination_is_finite_on_degenerate_batches(local, terms):
    loss = objective.objective(local, terms=terms)
    model = models.MLP(6, 4)
    for x, y in ((torch.randn(5, 6), torch.arange(5)),                        # singletons: no positive pair
                 (torch.randn(6, 6), torch.zeros(6, dtype=torch.long)),       # one class: no negative
                 (torch.zeros(6, 6), torch.tensor([0, 0, 1, 1, 2, 2]))):      # identical points
        model.zero_grad()
        z = model(x)
        value = loss(z, y, SimpleNamespace(model=model, x=x))
        value.backward()
        assert torch.isfinite(value), (local, terms, y)
        assert all(torch.isfinite(p.grad).all() for p in model.parameters() if p.grad is not None)


def test_bad_objectives_fail_when_built():
    with pytest.raises(ValueError, match="unknown local loss 'arcface'"):
        objective.objective("arcface")
    with pytest.raises(ValueError, match=r"unknown term\(s\) \['ec'\]"):
        objective.objective("triplet", terms={"ec": 0.1})
    with pytest.raises(ValueError, match="non-negative"):
        objective.objective("triplet", terms={"sinkhorn": -1})
    with pytest.raises(ValueError, match="takes no 'negatives'"):
        objective.objective("npairs", negatives="hard")
    with pytest.raises(ValueError, match="needs a local loss or a class-wise term"):
        objective.objective(None, terms={"sinkhorn": 0.0})
    z, y, _ = _batch()
    with pytest.raises(ValueError, match="needs the model"):
        objective.objective("triplet", terms={"energy_confusion": 0.1})(z, y)


def test_fit_passes_the_batch_to_an_objective():
    from dml_tutorial import data, sampling, train

    ds = data.load_dataset("subclusters", split="samples", num_classes=3, modes_per_class=1, samples_per_mode=20).train
    model = models.MLP(2, 4)
    loss = objective.objective("triplet", terms={"energy_confusion": 0.1})
    history = train.fit(model, loss, ds, epochs=1, sampler=sampling.PKSampler(ds.labels, p=3, k=4, seed=0),
                        progress=False, device="cpu")
    assert len(history) == 1 and history.last["loss"] > 0


def _norm(grads):
    return torch.sqrt(sum((g ** 2).sum() for g in grads if g is not None)).item()


def test_term_pulls_are_each_terms_value_and_gradient_by_hand_and_leave_training_state_alone():
    torch.manual_seed(0)
    model = models.MLP(6, 8, dropout=0.5)
    x, y = torch.randn(20, 6), torch.arange(4).repeat_interleave(5)
    loss = objective.objective("triplet", negatives="semihard-random", terms={"energy_confusion": 0.3, "mmd": 2.0})
    model.train()
    rng = torch.get_rng_state()
    with torch.no_grad():  # as train.fit calls its evaluate
        pulls = objective.term_pulls(loss, model, x, y)
    assert model.training and torch.equal(rng, torch.get_rng_state())
    assert all(p.grad is None for p in model.parameters())
    model.eval()  # by hand: each term on its own graph, in eval mode, from the same random state
    layer = list(model.embedding.parameters())
    with torch.random.fork_rng():
        z = model(x)
        local = losses.triplet_loss(z, y, negatives="semihard-random")
    ec = regularizers.energy_confusion(regularizers.embedding_layer_only(model), y, log=True, reduction="mean")
    mmd = discrepancy.classwise_discrepancy(model(x), y, "mmd", sigma=0.05)
    for name, value, weight in (("triplet", local, 1.0), ("energy_confusion", ec, 0.3), ("mmd", mmd, 2.0)):
        assert pulls[name]["value"] == pytest.approx(value.item(), rel=1e-6)
        grad = _norm(torch.autograd.grad(weight * value, layer, retain_graph=True))
        assert pulls[name]["grad"] == pytest.approx(grad, rel=1e-5)
    trunk = [p for p in model.parameters() if all(p is not q for q in layer)]
    assert all(g is None for g in torch.autograd.grad(ec, trunk, allow_unused=True))  # EC: embedding layer only


def test_term_pulls_leave_out_a_zero_weight_term_and_a_batch_without_pairs_pulls_nothing():
    model = models.MLP(6, 8)
    loss = objective.objective("triplet", terms={"energy_confusion": 0.0})
    pulls = objective.term_pulls(loss, model, torch.randn(4, 6), torch.arange(4))  # no positive pairs
    assert pulls == {"triplet": {"value": 0.0, "grad": 0.0}}


def test_pull_share_is_the_term_over_both_pulls_and_nan_where_none_pulls():
    from types import SimpleNamespace

    import numpy as np

    runs = [SimpleNamespace(history={"|grad| a": [1.0, 0.0], "|grad| b": [3.0, 0.0]}),
            SimpleNamespace(history={"|grad| a": [2.0, 2.0], "|grad| b": [0.0, 6.0]})]
    share = objective.pull_share(runs, "a", "b")
    assert share[0, 0] == 0.25 and np.isnan(share[0, 1]) and share[1].tolist() == [1.0, 0.25]
