"""Chapter 8's bench: every method is the objective it claims to be (its knob reaches the loss, the value is the
sum of its terms, finite on degenerate batches), the validation split never sees a test class, the search keeps
the best candidate and each method's best checkpoint as its length, the robustness ratio is paired by seed, the
intervals and the tied ranks match scipy and hand-worked cases, and one labelled and one unsupervised method run
end to end."""

import inspect
from types import SimpleNamespace

import matplotlib
import numpy as np
import pytest
import torch
from scipy import stats

from dml_tutorial import (
    bench,
    data,
    dcdl,
    evidence,
    experiment,
    losses,
    metrics,
    models,
    objective,
    plan,
    plots,
    profiles,
)

matplotlib.use("Agg")
LABELLED = [n for n, m in bench.METHODS.items() if m.supervised]


def _model():
    torch.manual_seed(0)
    return models.make_model("mlp", (1, 4, 4), 8)


def _batch(labels, same=False, seed=0):
    model = _model()
    x = torch.rand(len(labels), 1, 4, 4, generator=torch.Generator().manual_seed(seed))
    if same:
        x = x[:1].expand_as(x).clone()
    return model(x), torch.as_tensor(labels), SimpleNamespace(x=x, indices=None, model=model)


def test_every_method_starts_its_search_at_the_papers_setting_on_its_ladder():
    bases = {m.base for m in bench.METHODS.values()}
    for m in bench.METHODS.values():
        if len(m.values) == 1:  # a control: the base of other rows, its knob where they keep it, no walk
            assert m.name in bases and not m.ladder and dict(m.options)[m.knob] == m.values[0], m.name
        else:
            assert len(set(m.values)) == len(m.values) and set(m.values) <= set(m.ladder), m.name
    assert bench.METHODS["Triplet + L^W"].values[0] == 0.5  # DCDL's lambda for L^W (dcdl.LAMBDA)
    assert bench.METHODS["Triplet + EC"].values[0] == 0.02  # ECAML's lambda for the triplet loss
    assert {m.unsupervised for m in bench.METHODS.values()} == {None, "SME", "CBSwR"}


@pytest.mark.parametrize("name", LABELLED)
@pytest.mark.parametrize("labels, same", [([0, 0, 1, 1, 2, 2], False), ([0, 0, 1, 1, 2, 2], True),
                                          ([3, 3, 3, 3], False), ([0, 1, 2, 3], False), ([0, 1], True)])
def test_every_labelled_method_is_finite_and_differentiable_on_degenerate_batches(name, labels, same):
    # one class only (no negatives), no positive pair, identical embeddings, two samples
    z, y, batch = _batch(labels, same)
    value = bench.make_loss(name)(z, y, batch)
    assert torch.isfinite(value)
    value.backward()
    assert all(torch.isfinite(p.grad).all() for p in batch.model.parameters() if p.grad is not None)


@pytest.mark.parametrize("name", LABELLED)
def test_every_method_is_the_weighted_sum_of_its_terms(name):
    z, y, batch = _batch([0, 0, 0, 1, 1, 1, 2, 2, 2, 3, 3, 3])
    loss = bench.make_loss(name)
    parts = loss.parts(z, y, batch, **_sampler(loss))
    m = bench.METHODS[name]
    expected = parts[m.local] + sum(m.values[0] * parts[t] for t in parts if t != m.local)
    assert len(parts) == (2 if m.knob in ("sinkhorn", "mmd", "energy_confusion") else 1)
    torch.testing.assert_close(loss(z, y, batch, **_sampler(loss)), expected)


def _sampler(loss):
    """A fixed generator for the losses that sample (random semi-hard or distance-weighted negatives)."""
    samples = "generator" in inspect.signature(objective.LOCAL[loss.local]).parameters
    return {"generator": torch.Generator().manual_seed(1)} if samples else {}


@pytest.mark.parametrize("value", [0.1, 0.4])
def test_the_searched_margin_reaches_the_triplet_loss(value):
    z, y, _ = _batch([0, 0, 0, 1, 1, 1, 2, 2, 2])
    ours = bench.make_loss("Triplet, fixed semi-hard", value)(z, y)
    direct = losses.triplet_loss(z, y, margin=value, negatives="semihard-fixed")
    torch.testing.assert_close(ours, direct)
    eps = bench.make_loss("EPS + Triplet", value)(z, y, generator=torch.Generator().manual_seed(2))
    torch.testing.assert_close(eps, losses.triplet_loss(z, y, margin=value, positives="easy",
                                                        generator=torch.Generator().manual_seed(2)))


def test_a_term_weight_and_a_loss_option_go_where_they_belong():
    assert bench.make_loss("Triplet + EC", 1.0).weights == {"energy_confusion": 1.0}
    assert bench.make_loss("N-pair", 10.0).weights == {}
    z, y, _ = _batch([0, 0, 1, 1, 2, 2])
    torch.testing.assert_close(bench.make_loss("N-pair", 10.0)(z, y), losses.npairs_loss(z, y, scale=10.0))
    cfg = profiles.settings("bench", "smoke")
    assert bench.settings("N-pair", cfg, 10.0)["lr"] == cfg["lr"] and bench.settings("MS", cfg, 0.5)["lr"] == cfg["lr"]
    sme = bench.settings("SME", cfg, 0.05)
    assert (sme["tau"], sme["epochs"], sme["lr"], sme["batch_size"]) == (0.05, cfg["unsup_epochs"], cfg["unsup_lr"],
                                                                         cfg["unsup_batch_size"])
    assert bench.settings("CBSwR", cfg, 16)["k"] == 16  # CBSwR's clusters, not the P x K batch's k


@pytest.mark.parametrize("name, term", [("Triplet + L^W", "W"), ("Triplet + L^L", "L")])
def test_dcdls_rows_train_on_dcdls_own_triplet_with_small_weights_searched(name, term):
    z, y, batch = _batch([0, 0, 0, 1, 1, 1, 2, 2, 2])
    loss = bench.make_loss(name, 0.01)
    ours = loss.parts(z, y, batch, generator=torch.Generator().manual_seed(3))["triplet"]
    own = dcdl.LOCAL_LOSSES["trip"](z, y, generator=torch.Generator().manual_seed(3))
    torch.testing.assert_close(ours, own)  # margin 0.5 on squared distances, FaceNet's band
    values = bench.METHODS[name].values
    assert values[0] == dcdl.LAMBDA[term] and min(values) <= 0.01  # the paper's lambda first, small ones searched


@pytest.mark.parametrize("name", [n for n, m in bench.METHODS.items() if m.base])
def test_each_term_trains_its_bases_loss_with_its_bases_sampling(name):
    m, base = bench.METHODS[name], bench.METHODS[bench.METHODS[name].base]
    assert base.supervised and base.base is None and m.local == base.local
    assert set(base.options) <= set(m.options)  # EPS adds its positives; a term adds nothing
    if m.knob in objective.TERMS:  # the term's rows, at their base's loss: the same value as the base's loss here
        z, y, batch = _batch([0, 0, 0, 1, 1, 1, 2, 2, 2])
        with_term = bench.make_loss(name).parts(z, y, batch, generator=torch.Generator().manual_seed(3))
        alone = bench.make_loss(base.name).parts(z, y, batch, generator=torch.Generator().manual_seed(3))
        torch.testing.assert_close(with_term[m.local], alone[base.local])


def test_the_baseline_is_the_random_semi_hard_triplet_or_the_first_method_where_a_run_leaves_it_out():
    assert bench.baseline(["MS", bench.BASELINE, "Margin"]) == bench.BASELINE
    assert bench.baseline({"MS": [0.1], "Margin": [0.2]}) == "MS"  # a run of a profile's chosen methods
    assert bench.METHODS[bench.BASELINE].supervised and bench.METHODS["Triplet + EC"].base == bench.BASELINE
    with pytest.raises(ValueError, match="no methods"):
        bench.baseline([])


def test_term_gains_pairs_each_term_with_its_own_base_and_skips_an_absent_base():
    values = {"Triplet, DCDL's": [0.50, 0.60, 0.70], "Triplet + L^W": [0.52, 0.62, 0.73],
              "Triplet + L^L": [0.40, 0.50, 0.61], "Triplet + EC": [0.55, 0.58, 0.68], "MS": [0.1, 0.2, 0.3]}
    frame = bench.term_gains(values)  # EC's base (the random semi-hard triplet) is absent: no row
    assert list(frame.index) == ["Triplet + L^W vs Triplet, DCDL's", "Triplet + L^L vs Triplet, DCDL's"]
    assert list(frame[""]) == ["better", "worse"]
    d = stats.ttest_rel(values["Triplet + L^W"], values["Triplet, DCDL's"]).confidence_interval()
    row = frame.loc["Triplet + L^W vs Triplet, DCDL's"]
    assert (row["gain"], row["low"], row["high"]) == pytest.approx((2.0 + 1 / 3, 100 * d.low, 100 * d.high))
    assert bench.term_gains({"MS": [0.1, 0.2]}).empty


def test_the_gate_passes_a_row_above_every_reference_and_fails_the_rest_with_a_reason():
    refs = {"raw input": [0.20, 0.22, 0.21, 0.19, 0.20], "untrained network": [0.05] * 5,
            "pretrained, not fine-tuned": [0.50, 0.52, 0.49, 0.51, 0.50]}
    rows = {"MS": [0.80, 0.83, 0.79, 0.82, 0.81],  # far above all three
            "Margin": [0.515, 0.525, 0.505, 0.52, 0.51],  # about 1 point above the start: less than 2
            "N-pair": [0.995, 0.99, 0.996, 0.994, 0.997]}  # within 2 points of 100%
    table = {n: {"R@1": v} for n, v in {**rows, **refs}.items()}
    gate = bench.gated(table)
    assert set(gate) == set(rows) and gate["MS"][0] and not gate["Margin"][0] and not gate["N-pair"][0]
    assert "pretrained start (not fine-tuned)" in gate["Margin"][1] and "no room" in gate["N-pair"][1]
    without_start = {n: v for n, v in table.items() if n != "pretrained, not fine-tuned"}
    assert bench.gated(without_start)["Margin"][0]  # the start was the only reference it did not beat by 2
    assert not any(ok for ok, _ in bench.gated({"MS": {"R@1": rows["MS"]}}).values())  # nothing to gate on
    assert not bench.gated(table, smallest_effect=0.35)["MS"][0]  # the raw input by 60, the start by 31 points


def test_unknown_and_unsupervised_names_are_clear_errors():
    with pytest.raises(ValueError, match="unknown method 'Triplet\\+EC'"):
        bench.make_loss("Triplet+EC")
    with pytest.raises(ValueError, match="SME is unsupervised"):
        bench.make_loss("SME")
    with pytest.raises(ValueError, match="unknown method 'nope'"):
        bench.selected({"methods": ["MS", "nope"]})
    assert bench.selected({"methods": None}) == list(bench.METHODS)


@pytest.fixture(scope="module")
def digits():
    return data.load_dataset("digits", split="classes", seen=range(6), seed=0)


def test_the_validation_split_holds_out_training_classes_and_never_a_test_class(digits):
    val = bench.validation_split(digits, held_out=2)
    train_classes, val_classes = set(np.unique(val.train.labels)), set(np.unique(val.test.labels))
    assert train_classes == {0, 1, 2, 3} and val_classes == {4, 5}
    assert len(val.train) + len(val.test) == len(digits.train)
    assert not (train_classes | val_classes) & set(np.unique(digits.test.labels))
    for bad in (0, 5, 6):
        with pytest.raises(ValueError, match="held_out must leave at least two training classes"):
            bench.validation_split(digits, held_out=bad)


def _runs(values, metric="MAP@R"):
    return [SimpleNamespace(metrics={metric: v}) for v in values]


def test_the_recorded_search_of_a_run_before_the_one_search_gives_back_its_choice():
    """The search table as the chapter recorded it before the one search (names with commas, rows with and without
    a rate) read back into each method's value and rate: the best mean, the first row on a tie, as the search of
    those runs picked."""
    table = {"Triplet, random semi-hard, margin = 0.2, lr 0.0003": {"MAP@R": [0.5, 0.7]},
             "Triplet, random semi-hard, margin = 0.1, lr 0.001": {"MAP@R": [0.65, 0.65]},  # mean 0.65 > 0.6
             "Triplet, random semi-hard, margin = 0.1, lr 0.0003": {"MAP@R": [0.6, 0.7]},  # 0.65 again: later
             "Triplet + L^W, sinkhorn = 0.01, lr 0.001": {"MAP@R": [0.3]},
             "SME, tau = 0.1": {"MAP@R": [0.2]}, "SME, tau = 0.05": {"MAP@R": [0.25]}}
    assert bench.recorded_choice(table) == {"Triplet, random semi-hard": (0.1, 0.001),
                                            "Triplet + L^W": (0.01, 0.001), "SME": (0.05, None)}


def test_robustness_is_the_per_seed_ratio_with_its_t_interval():
    noisy, topline = _runs([0.4, 0.5, 0.6], "R@1"), _runs([0.5, 0.5, 0.5], "R@1")
    out = bench.robustness(noisy, topline)
    assert out["ratios"] == pytest.approx([0.8, 1.0, 1.2])
    low, high = stats.t.interval(0.95, 2, loc=1.0, scale=stats.sem([0.8, 1.0, 1.2]))
    assert out["mean"] == pytest.approx(1.0) and out["ci"] == pytest.approx((low, high))
    with pytest.raises(ValueError, match="as many noisy runs as topline runs"):
        bench.robustness(noisy, topline[:2])


def test_mean_interval_matches_scipy_and_refuses_what_it_cannot_use():
    values = [0.61, 0.64, 0.58, 0.66, 0.6]
    out = evidence.mean_interval(values)
    assert out["ci"] == pytest.approx(stats.t.interval(0.95, 4, loc=np.mean(values), scale=stats.sem(values)))
    assert evidence.mean_interval([0.3])["ci"] == (0.3, 0.3)
    for bad in ([], [0.1, float("nan")], [[0.1, 0.2]]):
        with pytest.raises(ValueError, match="finite per-seed values"):
            evidence.mean_interval(bad)


def test_tied_ranks_follow_the_means_and_tie_neighbours_that_paired_tests_do_not_separate():
    shared = np.array([0.1, -0.1, 0.05, -0.05, 0.0])  # a seed effect every method shares: pairing removes it
    wiggle = np.array([0.0, 0.002, -0.002, 0.001, -0.001])
    values = {"A": 0.90 + shared + wiggle, "B": 0.899 + shared + np.roll(wiggle, 1), "C": 0.80 + shared - wiggle}
    assert evidence.tied_ranks(values) == {"A": 1, "B": 1, "C": 3}
    # unpaired intervals of A and C overlap (the seed effect is up to 10 points), yet the paired test separates them
    a, c = evidence.mean_interval(values["A"])["ci"], evidence.mean_interval(values["C"])["ci"]
    assert a[0] < c[1]
    frame = bench.ranking(values)
    assert list(frame.index) == ["A", "B", "C"] and list(frame["rank"]) == [1, 1, 3]


def test_a_wide_interval_never_ranks_above_a_higher_mean():
    """The audit's case: CBSwR (mean 17.9, interval 11.2-24.6) shared rank 1 above Margin (22.1, 20.6-23.5)."""
    rng = np.random.default_rng(1)
    values = {"Margin": 0.221 + rng.normal(0, 0.01, 5), "CBSwR": 0.179 + rng.normal(0, 0.06, 5),
              "Binomial": 0.222 + rng.normal(0, 0.01, 5)}
    ranks = evidence.tied_ranks(values)
    means = {k: np.mean(v) for k, v in values.items()}
    for x in values:
        for y in values:
            if means[x] > means[y]:
                assert ranks[x] <= ranks[y], (x, y, ranks)
    with pytest.raises(ValueError, match="same seeds"):
        evidence.tied_ranks({"A": [0.1, 0.2], "B": [0.1]})


def test_ties_do_not_chain_a_method_separated_from_its_groups_first_starts_a_new_rank():
    """A ~ B and B ~ C, but A and C separate: C ranks below A (a chain of ties once gave one rank to MAP@R 9.9 and
    3.9). Where A and C do not separate either, all three share the first rank."""
    base, e = np.array([0.50, 0.52, 0.48, 0.51, 0.49]), np.array([0.01, -0.01, 0.01, -0.01, 0.0])
    separated = {"A": base + 0.02, "B": base + 0.01 - e, "C": base + np.array([0.001, 0, -0.001, 0, 0])}
    d = {k: evidence.paired(separated[k[1]], separated[k[0]], evidence.adjusted_confidence(2))["ci"]
         for k in ("AB", "BC", "AC")}
    assert d["AB"][0] < 0 < d["AB"][1] and d["BC"][0] < 0 < d["BC"][1] and d["AC"][0] > 0  # the premise
    assert evidence.tied_ranks(separated) == {"A": 1, "B": 1, "C": 3}
    chain = {"A": base + 0.02 + np.array([0, 0.01, -0.01, 0, 0]), "B": base + 0.01,
             "C": base + np.array([0, -0.01, 0.01, 0, 0])}
    assert evidence.tied_ranks(chain) == {"A": 1, "B": 1, "C": 1}


@pytest.mark.parametrize("name", ["Triplet + EC", "SME"])
def test_a_labelled_and_an_unsupervised_method_run_end_to_end(digits, name):
    cfg = profiles.settings("bench", "smoke", epochs=1, batches_per_epoch=3, unsup_epochs=1)
    run = bench.run(digits, name, cfg, seed=0, device="cpu")
    assert set(run.metrics) == {"MAP@R", "R@1", "NMI", "seconds"}
    assert run.metrics["MAP@R"] == pytest.approx(metrics.map_at_r(run.test_embeddings, digits.test.labels))
    assert all(0 <= run.metrics[m] <= 1 for m in ("MAP@R", "R@1", "NMI"))
    assert run.train_embeddings is None  # only the test split is embedded, and measured once (bench.scores)
    if name == "SME":
        with pytest.raises(ValueError, match="trains without labels"):
            bench.run(digits, name, cfg, noise=("symmetric", 0.2))


def test_a_run_measures_only_what_it_is_asked_for(digits, monkeypatch):
    """The search reads MAP@R and the noise runs Recall@1: neither pays for NMI's k-means, nor for the metrics
    train_and_retrieve would have computed and the bench replaced."""
    z, y = torch.randn(40, 4, generator=torch.Generator().manual_seed(0)), np.arange(40) % 5
    full = bench.scores(z, y, seed=1)
    assert bench.scores(z, y, seed=1, measures=("R@1", "MAP@R")) == {"MAP@R": full["MAP@R"], "R@1": full["R@1"]}
    keep = y < 2  # NMI over the first classes only, where a profile says how many (as the chapters cluster)
    assert bench.scores(z, y, seed=1, measures=("NMI",), cluster_classes=2) == {
        "NMI": metrics.nmi(z[torch.as_tensor(keep)], y[keep], seed=1)}
    for bad in ((), ("NMI+",)):
        with pytest.raises(ValueError, match="measures must be some of MAP@R, R@1, NMI"):
            bench.scores(z, y, measures=bad)
    calls = []
    monkeypatch.setattr(metrics, "_kmeans", lambda *args: calls.append(args))
    cfg = profiles.settings("bench", "smoke", epochs=1, batches_per_epoch=2)
    run = bench.run(digits, "Triplet, random semi-hard", cfg, seed=0, device="cpu", measures=("R@1",))
    assert set(run.metrics) == {"R@1", "seconds"} and calls == []


def test_a_validation_split_with_fewer_classes_keeps_the_batch_size(digits, monkeypatch):
    seen = {}

    def fake(splits, loss_fn, cfg, *, p, k, **kw):
        seen.update(p=p, k=k)
        return experiment.Run({"seconds": 0.0}, torch.eye(len(splits.test), 4)[:, :4], None)

    monkeypatch.setattr(experiment, "train_and_retrieve", fake)
    cfg = profiles.settings("bench", "smoke")
    bench.run(bench.validation_split(digits, 2), "MS", cfg)
    assert seen["p"] == 4 and seen["p"] * seen["k"] == cfg["p"] * cfg["k"]


def test_ranking_and_robustness_figures_draw_one_mark_per_method():
    values = {"Triplet + L^W": [0.5, 0.52, 0.49], "MS": [0.4, 0.41, 0.42]}
    fig = plots.ranking(bench.ranking(values), {"raw input": 45.0})
    labels = [t.get_text() for t in fig.axes[0].get_yticklabels()]
    assert labels == ["1. Triplet + $L^{\\mathrm{W}}$", "2. MS"]
    curves = {name: {0.0: {"mean": 1.0, "ci": (1.0, 1.0)}, 0.4: {"mean": m, "ci": (m - 0.1, m + 0.1)}}
              for name, m in (("A", 0.9), ("B", 0.7), ("C", 1.1), ("D", 0.8), ("E", 1.0))}
    fig = plots.robustness(curves, ncols=4)  # small multiples: a panel per method, not five overlapping bands
    shown = [ax for ax in fig.axes if ax.get_visible()]
    assert [ax.get_title() for ax in shown] == list(curves) and len(fig.axes) == 8
    own = [line for line in shown[1].get_lines() if line.get_label() == "B"]
    assert len(own) == 1 and list(own[0].get_ydata()) == [1.0, 0.7]
    assert sum(line.get_color() == "0.85" for line in shown[1].get_lines()) == 4  # the others, in grey


def test_versus_pairs_each_method_with_the_baseline_by_seed():
    values = {"base": [0.50, 0.60, 0.70], "up": [0.52, 0.62, 0.73], "same": [0.55, 0.58, 0.68],
              "down": [0.40, 0.50, 0.61]}
    frame = bench.versus(values, "base")
    assert list(frame.index) == ["up", "same", "down"] and list(frame[""]) == ["better", "tied", "worse"]
    d = stats.ttest_rel(values["up"], values["base"]).confidence_interval()
    assert (frame.loc["up", "low"], frame.loc["up", "high"]) == pytest.approx((100 * d.low, 100 * d.high))
    with pytest.raises(ValueError, match="baseline 'nope'"):
        bench.versus(values, "nope")


def test_every_ladder_holds_its_methods_candidates_in_order():
    for m in bench.METHODS.values():
        if len(m.values) == 1:  # a control does not walk
            continue
        assert list(m.ladder) == sorted(m.ladder) and set(m.values) <= set(m.ladder), m.name
        assert min(m.ladder) < min(m.values) and max(m.ladder) > max(m.values) or m.name == "MS", m.name


def _curve(*points, metric="MAP@R"):
    """A run whose history holds ``metric`` at the given ``(epoch, value)`` checkpoints, between epochs without."""
    records = [{"epoch": e, "loss": 1.0} for e in range(1, max(e for e, _ in points) + 1)]
    for e, v in points:
        records[e - 1][metric] = v
    return SimpleNamespace(history=SimpleNamespace(records=records))


def test_capped_names_the_methods_whose_best_checkpoint_is_the_longest_tried():
    """A length table of a run made before the one search (rows ``"<name>, <knob> = <value>[, lr <rate>]"``,
    columns ``"<n> epochs"``, one value per search seed): MS's means .51, .58, .60 rise to the end; N-pair peaks
    inside; SME ties its last two, and a tie goes to the shorter."""
    table = {"MS, lam = 0.75, lr 0.001": {"5 epochs": [0.50, 0.52], "10 epochs": [0.60, 0.56],
                                          "15 epochs": [0.58, 0.62]},
             "N-pair, scale = 10, lr 0.003": {"5 epochs": [0.5], "10 epochs": [0.7], "15 epochs": [0.6]},
             "SME, tau = 0.1": {"2 epochs": [0.3], "4 epochs": [0.4], "6 epochs": [0.4]}}
    assert bench.capped(table) == ["MS"]
    table["SME, tau = 0.1"]["6 epochs"] = [0.41]  # now rising to the end
    assert bench.capped(table) == ["MS", "SME"]
    runs = [{"tables": [{"table": bench.LENGTH_TABLE.title, "measured": table}]},  # two seeds' run files
            {"tables": [{"table": "Search", "measured": table},
                        {"table": bench.LENGTH_TABLE.title, "measured": {"MS, lam = 0.75, lr 0.001": {
                            "5 epochs": [0.5], "10 epochs": [0.4]}}}]}]
    assert bench.still_climbing(runs) == (2, 4)  # MS and SME of the first seed's 3; not MS of the second
    assert bench.still_climbing([{"tables": []}]) == (0, 0)
    ladders = {"lr": [1e-4, 1e-3, 1e-2], "epochs": [10, 20]}

    def shot(lr, epochs, edges):
        return {"values": {"lr": lr, "epochs": epochs}, "trials": [], "ladders": ladders, "edges": edges}

    shots = {"MS": shot(1e-3, 20, ["epochs"]), "SME": shot(1e-4, 12, ["lr"]), "MS, p = 0.4": shot(1e-2, 20, ["lr", "epochs"])}
    one_search = {"tables": [], "choices": {"best shot": shots}}  # a run of the one search: its choices' edges
    assert bench.still_climbing([one_search, *runs]) == (2 + 2, 3 + 4)
    text = bench.climbing([one_search, *runs])
    assert "In 4 of the 7 lengths chosen (seeds x rows)" in text
    assert text.endswith("(its best may lie beyond it): the lowest rate: SME 1 of 1; the highest rate: MS, p = 0.4 1 "
                         "of 1.")  # the rates and knobs at an end; the lengths are the sentence before
    only_lengths = {"tables": [], "choices": {"best shot": {"MS": shots["MS"]}}}
    assert "ladder" not in bench.climbing([only_lengths, *runs])  # no rate or knob at an end: no second sentence
    assert "ladder" not in bench.climbing(runs)  # nor in runs made before the one search


def test_settings_take_a_length_and_refuse_one_that_is_not_a_whole_number_of_epochs():
    cfg = profiles.settings("bench", "glyphs2")
    assert bench.settings("MS", cfg, epochs=7)["epochs"] == 7 and bench.settings("SME", cfg, epochs=7)["epochs"] == 7
    for bad in (0, 2.5):
        with pytest.raises(ValueError, match="epochs must be a positive whole number"):
            bench.settings("MS", cfg, epochs=bad)


@pytest.mark.parametrize("name", ["MS", "SME"])
def test_a_run_with_checkpoints_records_its_measure_where_asked_and_trains_the_same(digits, name):
    """The checkpoints of a length's curve: the measure after every ``every`` epochs and after the last, the last
    equal to the run's own score; the evaluation leaves the training as it was (the same test embeddings)."""
    cfg = profiles.settings("bench", "smoke", batches_per_epoch=2, unsup_epochs=3)
    plain = bench.run(digits, name, cfg, seed=0, device="cpu", epochs=3, measures=("MAP@R",))
    run = bench.run(digits, name, cfg, seed=0, device="cpu", epochs=3, every=2, measures=("MAP@R",))
    points = {r["epoch"]: r["MAP@R"] for r in run.history.records if "MAP@R" in r}
    assert sorted(points) == [2, 3] and len(run.history.records) == 3
    assert points[3] == pytest.approx(run.metrics["MAP@R"]) and 0 <= points[2] <= 1
    torch.testing.assert_close(run.test_embeddings, plain.test_embeddings)


def test_train_and_retrieve_takes_curves_or_its_own_checkpoints_not_both(digits):
    with pytest.raises(ValueError, match="curves=True or an evaluate function"):
        experiment.train_and_retrieve(digits, losses.triplet_loss, profiles.settings("bench", "smoke"), p=4, k=4,
                                      curves=True, evaluate=lambda model: {})


def test_every_row_searches_its_rate_length_and_knob_from_the_papers_value():
    cfg = profiles.settings("bench", "glyphs2")
    names, rows = bench.selected(cfg), bench.rows(cfg)
    labelled = [n for n in names if bench.method(n).supervised]
    assert list(rows)[:len(names)] == names and len(rows) == len(names) + len(labelled)  # one noisy rate, 0.4
    assert rows["MS, p = 0.4"] == ("MS", 0.4) and rows["SME"] == ("SME", 0.0) and "SME, p = 0.4" not in rows
    for name in names:
        rule, m = bench.search_rule(cfg, name), bench.method(name)
        assert rule.metric == "MAP@R" and rule.rate.start == (1e-3, 3e-3) and rule.rate.ladder == cfg.search_lrs
        if len(m.values) == 1:  # a control keeps its knob
            assert rule.knob is None, name
        else:  # from the paper's value; a term's weight 0 always a candidate
            assert rule.knob.start == m.values[:1] and rule.knob.ladder == m.ladder, name
            assert rule.knob.off == (0.0 if m.knob in objective.TERMS else None), name
        assert (rule.lengths, rule.every) == (((10, 20, 40), 5) if m.supervised else ((4, 8, 16), 2)), name
    smoke = profiles.settings("bench", "smoke")
    rule = bench.search_rule(smoke, "MS")  # the knob alone, at the profile's rate and length
    assert rule.rate.ladder == (smoke.lr,) and rule.lengths == (smoke.epochs,)
    assert bench.search_rule(profiles.settings("bench", "colab"), "MS") is None


def _searched(settings):
    """bench.best_shots on a fake runner: MS peaks at lr 3e-3 and lam 0.5 on clean labels, at lr 1e-3 on noisy
    ones; EC only costs (its weight 0 wins); SME peaks at tau 0.2. Every trial scores at its last epoch, a little
    more the longer it trained, so each search lengthens to its last length. Returns the profile, the choices and
    every trial seen."""
    cfg = profiles.settings("bench", "smoke", {"methods": ("MS", "Triplet + EC", "SME"), **settings})
    seen = []

    def run(trial):
        seen.append(trial)
        s, o = trial.settings, trial.options
        peak = 1e-3 if o.get("noise") else 3e-3
        score = 1 - abs(np.log10(s.lr / peak)) + 1e-3 * s.epochs
        if trial.method == "MS":
            score -= abs(o["value"] - 0.5)
        elif trial.method == "Triplet + EC":
            score -= o["value"]
        else:
            score -= abs(s.tau - 0.2)
        return SimpleNamespace(history=SimpleNamespace(records=[{"epoch": s.epochs, "MAP@R": score}]))

    return cfg, bench.best_shots(cfg, 4, run), seen


LADDERS = {"search_lrs": (1e-4, 3e-4, 1e-3, 3e-3, 1e-2), "search_lr_start": (1e-3, 3e-3), "search_lengths": (3, 6),
           "search_every": 3, "unsup_search_lengths": (2,), "unsup_search_every": 2, "rates": (0.0, 0.4)}


def test_best_shots_searches_every_row_on_held_out_classes_a_noisy_row_on_noisy_labels():
    cfg, choices, seen = _searched(LADDERS)
    shots = choices["best shot"]
    assert list(shots) == ["MS", "Triplet + EC", "SME", "MS, p = 0.4", "Triplet + EC, p = 0.4"]
    assert {(t.table, t.split, t.seed, t.options["curve"]) for t in seen} == {(bench.BEST_SHOT, "validation", 4,
                                                                               "MAP@R")}
    assert {t.options.get("noise") for t in seen if t.row.endswith("p = 0.4")} == {("symmetric", 0.4)}
    assert all("noise" not in t.options for t in seen if not t.row.endswith("p = 0.4"))
    # worked by hand: MS from (1e-3 | 3e-3) x lam 1.0 walks lam down to 0.5 (flanked by 0.25 and 0.75) and the rate
    # to 1e-2 and back: 3e-3 flanked; then 6 epochs, the last length (longer scores a little higher)
    assert shots["MS"]["values"] == {"lr": 3e-3, "lam": 0.5, "epochs": 6} and shots["MS"]["edges"] == ["epochs"]
    assert shots["MS, p = 0.4"]["values"]["lr"] == 1e-3  # its own rate, chosen on noisy held-out labels
    assert shots["Triplet + EC"]["values"]["energy_confusion"] == 0.0  # the term switched off: a candidate
    assert shots["SME"]["values"] == {"lr": 3e-3, "tau": 0.2, "epochs": 2}
    assert shots["SME"]["edges"] == ["epochs"]  # one length: its end
    starting = bench.best_shot_trials(cfg, 4)
    assert len(starting) == 2 * (1 + 2 + 1 + 1 + 2)  # two rates x (MS, EC and its off, SME; the noisy MS and EC)
    assert bench.unplanned(cfg, choices) == len(seen) - len(starting) > 0


def test_the_grid_trains_each_row_at_its_choice_and_a_topline_at_its_clean_rows():
    cfg, choices, _ = _searched(LADDERS)
    specs = bench.grid(cfg, [0, 1], choices)
    assert len({(s.key, s.seed) for s in specs}) == len(specs) == len({s.digest() for s in specs})
    assert list(dict.fromkeys(s.table for s in specs)) == [bench.MAIN, bench.NOISE]
    main = {s.row: s for s in specs if s.table == bench.MAIN and s.seed == 0}
    assert (main["MS"].settings.lr, main["MS"].settings.epochs, dict(main["MS"].options)) == (3e-3, 6, {"value": 0.5})
    assert dict(main["Triplet + EC"].options) == {"value": 0.0}
    sme = main["SME"]  # its knob a setting of its own settings, its rate and length its search's
    assert (type(sme.settings).__name__, sme.settings.tau, sme.settings.lr, sme.settings.epochs) == (
        "CBSwRSettings", 0.2, 3e-3, 2) and dict(sme.options) == {}
    noise = {(s.row, s.column): s for s in specs if s.table == bench.NOISE and s.seed == 0}
    assert set(noise) == {(n, (0.4, kind)) for n in ("MS", "Triplet + EC") for kind in ("noisy", "topline")}
    noisy, topline = noise[("MS", (0.4, "noisy"))], noise[("MS", (0.4, "topline"))]
    assert noisy.settings.lr == 1e-3 and noisy.options["noise"] == ("symmetric", 0.4)
    assert topline.settings.lr == 3e-3 and topline.options["fraction"] == pytest.approx(0.6)
    assert noisy.options["measures"] == topline.options["measures"] == ("R@1",)
    plain = {s.row: s for s in bench.grid(cfg, [0]) if s.table == bench.MAIN}  # no search: the profile's
    assert plain["MS"].settings.lr == cfg.lr and dict(plain["MS"].options) == {"value": bench.METHODS["MS"].values[0]}


def test_the_runner_scores_a_noisy_trial_on_noisy_held_out_labels_and_a_run_on_its_own(digits, monkeypatch):
    seen = []
    monkeypatch.setattr(bench, "fit", lambda data, name, own, **kw: seen.append((data, name, own, kw)) or "run")
    cfg = profiles.settings("bench", "smoke", {"methods": ("MS",), **LADDERS})
    validation = bench.validation_split(digits, 2)
    run = bench.run_spec({"validation": validation, "main": digits}, "cpu")
    trials = {}
    for t in bench.best_shot_trials(cfg, 4):  # each row's first: at the first starting rate
        trials.setdefault(t.row, t)
    assert run(trials["MS, p = 0.4"]) == "run" and run(trials["MS"]) == "run"
    (noisy, _, own, kw), (clean, *_) = seen
    assert own.lr == 1e-3 and own.eval_every == 3 and kw == {
        "value": 1.0, "seed": 4, "device": "cpu", "noise": ("symmetric", 0.4), "fraction": 1.0,
        "measures": ("MAP@R",), "curve": "MAP@R"}
    changed = np.mean(np.asarray(noisy.test.labels) != np.asarray(validation.test.labels))
    assert 0.2 < changed < 0.6 and set(noisy.test.labels) == set(validation.test.labels)  # among its own classes
    assert clean.test is validation.test and noisy.train is validation.train  # training labels: fit's to corrupt
    spec = next(s for s in bench.grid(cfg, [0]) if s.table == bench.MAIN)
    run(spec)
    assert seen[-1][0] is digits and seen[-1][3]["curve"] is None and seen[-1][3]["measures"] == bench.MEASURES


@pytest.mark.parametrize("profile", ["smoke", "colab", "full", "fashion", "glyphs2"])
def test_the_plan_counts_the_searches_first_trials_and_the_grid(profile):
    cfg = profiles.settings("bench", profile)
    counted = plan.GRIDS["bench"](cfg, 1000)
    assert sum(t.runs for t in counted) == len(bench.best_shot_trials(cfg, 0)) + len(bench.grid(cfg,
                                                                                                  range(cfg.n_seeds)))


def test_the_knobs_a_run_searched_read_back_from_the_one_search_or_an_older_runs_table():
    new = {"choices": {"best shot": {"Triplet + L^W": {"values": {"lr": 1e-3, "sinkhorn": 0.01, "epochs": 10}},
                                     "Triplet + L^W, p = 0.4": {"values": {"sinkhorn": 2.0}},
                                     "SME": {"values": {"lr": 1e-2, "epochs": 8}}}}, "tables": []}
    assert bench.searched_knobs(new) == {"Triplet + L^W": 0.01, "SME": bench.METHODS["SME"].values[0]}
    old = {"tables": [{"table": bench.SEARCH_TABLE, "measured": {
        "Triplet + L^W, sinkhorn = 0.5, lr 0.001": {"MAP@R": [0.4]},
        "Triplet + L^W, sinkhorn = 0.1, lr 0.001": {"MAP@R": [0.5]}}}]}
    assert bench.searched_knobs(old) == {"Triplet + L^W": 0.1} and bench.searched_knobs({"tables": []}) == {}


def test_what_the_bench_says_names_the_leader_the_gate_and_the_robustness_as_the_tables_make_them():
    """bench.said, the chapter's sentences: on ten seeds, MS at 80% clearly above the random semi-hard triplet (60%)
    and Margin (40%, below the raw input's 50%: it fails the gate); under noise MS keeps 120% of its topline on every
    seed (above 100% with its whole interval), the triplet 90%."""
    rng = np.random.default_rng(0)

    def ten(mean):  # ten seeds around ``mean``, exactly: a spread that sums to zero
        spread = rng.permutation(np.linspace(-0.01, 0.01, 10))
        return list(mean + spread - spread.mean())

    table = {"MS": {"MAP@R": ten(0.8), "R@1": ten(0.8)}, "Triplet, random semi-hard": {"MAP@R": ten(0.6),
             "R@1": ten(0.6)}, "Margin": {"MAP@R": ten(0.4), "R@1": ten(0.4)},
             "raw input": {"MAP@R": ten(0.5), "R@1": ten(0.5)}, "untrained network": {"MAP@R": ten(0.3),
                                                                                      "R@1": ten(0.3)}}
    robust = {"MS": {"p = 0.2": ten(1.1), "p = 0.4": ten(1.2)},
              "Triplet, random semi-hard": {"p = 0.2": ten(0.95), "p = 0.4": ten(0.9)},
              "Margin": {"p = 0.2": ten(0.5), "p = 0.4": ten(0.4)}}
    text = bench.said("here", table, robust)
    assert text.startswith("- **here**: 1 of 3 methods share rank 1 by MAP@R (MS); the best mean is 80.0% (MS), "
                           "the worst 40.0%. Paired by seed against Triplet, random semi-hard, 1 method(s) are "
                           "better, 1 worse and 0 tied.")
    assert "2 of 3 pass the gate on R@1." in text  # Margin lies below the raw input
    assert "under noise p = 0.4, the most robust is MS (120.0% of its topline's Recall@1), the least Triplet, " \
           "random semi-hard (90.0%)" in text and "1 lie above 100% with their whole interval (for those" in text
    assert "Margin" not in text.split("pass the gate")[1]  # robustness only for the rows that pass
    few = {n: {"MAP@R": [np.mean(row["MAP@R"])] * 3} for n, row in table.items()}
    assert bench.first_look("there", few) == (
        f"- **there**: fewer seeds than the {evidence.MIN_SEEDS} a rank needs, so no ranks yet. By mean MAP@R MS "
        "leads (80.0%) and Margin trails (40.0%); raw input 50.0%; untrained network 30.0%.")
    assert bench.climbing([]) == ""


def _scored(**metrics):
    return SimpleNamespace(metrics=metrics)


def test_the_chapters_tables_from_its_runs_keep_each_seed_and_score_the_references_as_the_methods():
    results = {("MS", ""): [_scored(**{"MAP@R": 0.5, "R@1": 0.7, "NMI": 0.6}),
                            _scored(**{"MAP@R": 0.6, "R@1": 0.8, "NMI": 0.7})]}
    z = torch.nn.functional.normalize(torch.randn(30, 4, generator=torch.Generator().manual_seed(0)), dim=1)
    labels = np.arange(30) % 3
    refs = {("raw input", ""): [SimpleNamespace(test_embeddings=z)] * 2}
    table = bench.bench_table(results, refs, labels, [0, 1], {"cluster_classes": None})
    assert table["MS"] == {"MAP@R": [0.5, 0.6], "R@1": [0.7, 0.8], "NMI": [0.6, 0.7]}
    assert table["raw input"]["MAP@R"] == [pytest.approx(metrics.map_at_r(z, labels))] * 2
    assert table["raw input"]["NMI"] == [pytest.approx(bench.scores(z, labels, s)["NMI"]) for s in (0, 1)]
    frame = bench.ranked({"A": {"MAP@R": [0.5, 0.6], "R@1": [0.9, 0.9]}, "B": {"MAP@R": [0.2, 0.3], "R@1": [0.8, 0.9]}},
                         ["B", "A"], measures=("MAP@R", "R@1"))
    assert list(frame.index) == ["A", "B"] and list(frame.columns) == [
        "MAP@R, % (95% CI)", "rank (MAP@R)", "R@1, % (95% CI)", "rank (R@1)"]
    assert frame.loc["A", "MAP@R, % (95% CI)"].startswith("55.0 (")


def test_robustness_curves_pair_each_noisy_run_with_its_topline_and_record_the_ratios():
    runs = {("MS", (0.4, "noisy")): [_scored(**{"R@1": 0.4}), _scored(**{"R@1": 0.3})],
            ("MS", (0.4, "topline")): [_scored(**{"R@1": 0.8}), _scored(**{"R@1": 0.6})]}
    curves = bench.robustness_curves(runs, ["MS"], [0.0, 0.4])
    assert curves["MS"][0.0]["mean"] == 1.0 and curves["MS"][0.4]["ratios"] == [0.5, 0.5]
    assert bench.robustness_table(curves) == {"MS": {"p = 0.4": [0.5, 0.5]}}


def test_a_recorded_run_is_read_as_ranks_gains_and_the_robustness_of_the_methods_that_pass_the_gate():
    ten = list(np.linspace(0.49, 0.51, 10))
    table = {"Triplet, random semi-hard": {"MAP@R": ten, "R@1": [v + 0.3 for v in ten]},
             "MS": {"MAP@R": [v + 0.1 for v in ten], "R@1": [v + 0.35 for v in ten]},
             "raw input": {"MAP@R": ten, "R@1": ten}, "untrained network": {"MAP@R": ten, "R@1": ten}}
    robust = {"Triplet, random semi-hard": {"p = 0.4": [0.9] * 10}, "MS": {"p = 0.4": [0.8] * 10}}
    recorded = {bench.TABLE: table, bench.ROBUSTNESS: robust}
    items = bench.reading(recorded, ["raw input", "untrained network"])
    assert list(items[0].index) == ["MS", "Triplet, random semi-hard"]  # ranked, the references left out
    assert items[1].startswith("MAP@R against Triplet, random semi-hard") and "MS" in items[2].index
    assert "for the 2 methods that pass the gate on R@1" in items[3]
    assert items[4].index[0] == "Triplet, random semi-hard"  # the more robust
    failing = {**recorded, bench.TABLE: {**table, "raw input": {"MAP@R": ten, "R@1": [1.0] * 10}}}
    assert bench.reading(failing, ["raw input", "untrained network"])[-1].startswith("No labelled method passes")
    line = bench.recorded_line("test bed II", recorded, [])
    assert line.startswith("- **test bed II, 10 seeds**: 1 of 2 methods share rank 1")
    few = {bench.TABLE: {n: {"MAP@R": v["MAP@R"][:3]} for n, v in table.items()}, bench.ROBUSTNESS: robust}
    assert "fewer seeds than the" in bench.recorded_line("test bed I", few, [])
