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


def test_every_method_has_the_same_search_budget_with_the_papers_setting_first():
    bases = {m.base for m in bench.METHODS.values()}
    for m in bench.METHODS.values():
        if len(m.values) == 1:  # a control: the base of other rows, its knob where they keep it, no walk
            assert m.name in bases and not m.ladder and dict(m.options)[m.knob] == m.values[0], m.name
        else:
            assert len(set(m.values)) == len(m.values) == bench.SEARCH_BUDGET, m.name
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


def test_choose_keeps_the_best_mean_and_the_first_candidate_on_a_tie():
    results = {("A", 0.2): _runs([0.5, 0.7]), ("A", 0.1): _runs([0.65, 0.65]), ("A", 0.4): _runs([0.1, 0.2]),
               ("B", 1.0): _runs([0.3]), ("B", 2.0): _runs([0.3])}
    assert bench.choose(results) == {"A": 0.1, "B": 1.0}


def test_the_recorded_search_gives_back_what_choose_picked():
    """The search table as the chapter records it (names with commas, rows with and without a rate) read back
    into each method's value and rate: the best mean, the first row on a tie, as :func:`bench.choose` picks."""
    table = {"Triplet, random semi-hard, margin = 0.2, lr 0.0003": {"MAP@R": [0.5, 0.7]},
             "Triplet, random semi-hard, margin = 0.1, lr 0.001": {"MAP@R": [0.65, 0.65]},  # mean 0.65 > 0.6
             "Triplet, random semi-hard, margin = 0.1, lr 0.0003": {"MAP@R": [0.6, 0.7]},  # 0.65 again: later
             "Triplet + L^W, sinkhorn = 0.01, lr 0.001": {"MAP@R": [0.3]},
             "SME, tau = 0.1": {"MAP@R": [0.2]}, "SME, tau = 0.05": {"MAP@R": [0.25]}}
    assert bench.recorded_choice(table) == {"Triplet, random semi-hard": (0.1, 0.001),
                                            "Triplet + L^W": (0.01, 0.001), "SME": (0.05, None)}


def test_shared_rate_takes_the_best_mean_over_the_methods_and_the_first_rate_on_a_tie():
    # A's best single run is at 1e-3 (0.9), but the mean over A and B is best at 1e-4: (0.8 + 0.6) / 2 = 0.7
    # against (0.9 + 0.1) / 2 = 0.5; 3e-4 ties 1e-4 and comes later, so 1e-4 stays
    r_at_1 = {("A", 1e-4): 0.8, ("A", 1e-3): 0.9, ("A", 3e-4): 0.6,
              ("B", 1e-4): 0.6, ("B", 1e-3): 0.1, ("B", 3e-4): 0.8}
    calls = []

    def fit(name):
        def at(rate):
            calls.append((name, rate))
            return _runs([r_at_1[(name, rate)]], "R@1")[0]
        return at

    rate, table = bench.shared_rate({"A": fit("A"), "B": fit("B")}, [1e-4, 1e-3, 3e-4])
    assert rate == 1e-4
    assert table == {1e-4: {"A": [0.8], "B": [0.6]}, 1e-3: {"A": [0.9], "B": [0.1]}, 3e-4: {"A": [0.6], "B": [0.8]}}
    assert calls == [("A", 1e-4), ("B", 1e-4), ("A", 1e-3), ("B", 1e-3), ("A", 3e-4), ("B", 3e-4)]
    for fits, rates in (({}, [1e-3]), ({"A": fit("A")}, [])):
        with pytest.raises(ValueError, match="at least one rate and one method"):
            bench.shared_rate(fits, rates)


def test_shared_rate_walks_its_ladder_until_the_best_mean_is_flanked():
    # the mean over A and B peaks at 1e-2 (A: 0.9 there, B: 0.7), beyond the two rates it starts from; by hand:
    # 3e-4 and 1e-3 (the better: 1e-3, the top) -> 3e-3 (top) -> 1e-2 (top) -> 3e-2 (lower): 1e-2 flanked
    peak = {"A": 0.9, "B": 0.7}
    calls = []

    def fit(name):
        def at(rate):
            calls.append((name, rate))
            return _runs([peak[name] - 0.1 * abs(np.log10(rate) + 2)], "R@1")[0]
        return at

    ladder = [3e-5, 1e-4, 3e-4, 1e-3, 3e-3, 1e-2, 3e-2]
    rate, table = bench.shared_rate({"A": fit("A"), "B": fit("B")}, [3e-4, 1e-3], rate_ladder=ladder)
    assert rate == 1e-2
    assert list(table) == [3e-4, 1e-3, 3e-3, 1e-2, 3e-2]  # by rate
    assert [r for name, r in calls if name == "A"] == [3e-4, 1e-3, 3e-3, 1e-2, 3e-2]  # the order tried
    assert table[1e-2] == {"A": [pytest.approx(0.9)], "B": [pytest.approx(0.7)]}
    plain, _ = bench.shared_rate({"A": fit("A")}, [3e-4, 1e-3])  # no ladder: the grid alone
    assert plain == 1e-3


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


@pytest.mark.parametrize("profile", ["smoke", "colab", "full", "fashion", "glyphs2"])
def test_the_plan_counts_the_grid_and_the_searchs_sure_trials(profile):
    cfg = profiles.settings("bench", profile)
    sure = sum(bench.sure_trials(n, cfg) for n in bench.selected(cfg)) * cfg.search_seeds
    counted = plan.GRIDS["bench"](cfg, 1000)
    assert sum(t.runs for t in counted) == sure + len(bench.grid(cfg, range(cfg.n_seeds)))


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


def test_a_method_can_search_its_own_learning_rate():
    cfg = profiles.settings("bench", "smoke", {"method_lrs": [3e-4, 1e-3]})
    supervised = next(n for n in bench.METHODS if bench.method(n).supervised and bench.method(n).knob != "lr")
    unsupervised = next(n for n in bench.METHODS if not bench.method(n).supervised)
    assert bench.rates(supervised, cfg) == [3e-4, 1e-3]
    assert bench.rates(supervised, cfg.replace(method_lrs=None)) == [None]  # the profile's own rate
    assert bench.settings(supervised, cfg, lr=3e-4)["lr"] == 3e-4
    assert bench.settings(supervised, cfg)["lr"] == cfg["lr"]
    unsup = bench.settings(unsupervised, cfg, lr=3e-4)
    assert unsup["lr"] == 3e-4 and unsup["epochs"] == cfg["unsup_epochs"]  # the rate replaces unsup_lr only
    assert bench.settings(unsupervised, cfg)["lr"] == cfg["unsup_lr"]


def test_a_method_whose_knob_is_its_rate_searches_it_through_its_values(monkeypatch):
    by_rate = bench.Method("Triplet, by rate", "lr", (1e-3, 1e-4, 3e-4), "triplet", (("negatives", "semihard-random"),))
    monkeypatch.setitem(bench.METHODS, by_rate.name, by_rate)
    cfg = profiles.settings("bench", "smoke", {"method_lrs": [3e-4, 1e-3]})
    assert bench.rates(by_rate.name, cfg) == [None]  # no second search over the same rate
    assert bench.settings(by_rate.name, cfg, 1e-4)["lr"] == 1e-4
    with pytest.raises(ValueError, match="its learning rate"):
        bench.settings(by_rate.name, cfg, 1e-4, lr=1e-3)


LADDER = [3e-5, 1e-4, 3e-4, 1e-3, 3e-3, 1e-2, 3e-2]


def _walk(score, names, walk_knobs=False):
    """bench.search with a fake round of training that scores each trial ``score(name, value, lr)``; returns every
    trial and each round's (name, value, lr)."""
    cfg = {"method_lrs": [1e-3, 3e-3], "lr_ladder": LADDER, "walk_knobs": walk_knobs}
    rounds = []

    def fit(trials):
        rounds.append(sorted((n, v, lr) for n, (v, lr) in trials))
        return {(n, (v, lr)): [experiment.Run({"MAP@R": score(n, v, lr)}, None, None)] for n, (v, lr) in trials}

    return bench.search(names, cfg, fit), rounds, cfg


def test_the_search_walks_each_methods_rate_until_its_best_lies_between_two_it_tried():
    peaks = {"MS": 1e-2, "SME": 1e-3, "CBSwR": 1e-5, "Margin": 2e-3}

    def score(n, v, lr):  # falls with the decades from the method's peak; the paper's value best at every rate
        return 1 - abs(np.log10(lr / peaks[n])) - 0.01 * bench.method(n).values.index(v)

    searched, rounds, cfg = _walk(score, list(peaks))
    tried = {n: sorted({lr for m, (_, lr) in searched if m == n}) for n in peaks}
    # MS walks up to its peak and one beyond; SME's peak is a start rate, at the bottom of the two: one step down;
    # CBSwR's peak lies below the ladder: it walks to the ladder's end; Margin's lies between the two start rates,
    # nearer 3e-3 (the higher start wins), so it tries 1e-2 and stops
    assert tried == {"MS": [1e-3, 3e-3, 1e-2, 3e-2], "SME": [3e-4, 1e-3, 3e-3],
                     "CBSwR": [3e-5, 1e-4, 3e-4, 1e-3, 3e-3], "Margin": [1e-3, 3e-3, 1e-2]}
    paper = {n: bench.method(n).values[0] for n in peaks}  # each step at the best value, the paper's here
    assert rounds[1] == sorted([("CBSwR", paper["CBSwR"], 3e-4), ("MS", paper["MS"], 1e-2),
                                ("Margin", paper["Margin"], 1e-2), ("SME", paper["SME"], 3e-4)])
    assert all(bench.sure_trials(n, cfg) == 3 * 2 + 1 for n in peaks)  # the grid and the walk's first step
    assert bench.unplanned(searched, cfg) == {"MS": 1, "SME": 0, "CBSwR": 2, "Margin": 0}
    best = bench.choose(searched)
    assert {n: lr for n, (_, lr) in best.items()} == {"MS": 1e-2, "SME": 1e-3, "CBSwR": 3e-5, "Margin": 3e-3}
    order = [(n, bench.method(n).values.index(v), lr) for n, (v, lr) in searched]
    assert order == sorted(order, key=lambda t: (list(peaks).index(t[0]), t[1], t[2]))  # a method's rows together


def test_the_walk_moves_the_knob_and_the_rate_until_the_best_is_flanked_on_both():
    def score(n, v, lr):  # peak at scale 30 (off the grid of 1, 3, 10) and rate 1e-2 (off the two start rates)
        return -abs(np.log10(lr / 1e-2)) - 0.1 * abs(np.log10(v / 30))

    searched, rounds, cfg = _walk(score, ["N-pair"], walk_knobs=True)
    # worked by hand: the grid's best (10, 3e-3) steps along both axes: (30, 3e-3) and (10, 1e-2); the best
    # (10, 1e-2) is alone at its rate, so the knob steps both ways, (3, 1e-2) and (30, 1e-2), and the rate up,
    # (10, 3e-2); the best (30, 1e-2) steps to (100, 1e-2) and (30, 3e-2); then it is flanked on both axes
    assert rounds[1:] == [[("N-pair", 10.0, 1e-2), ("N-pair", 30.0, 3e-3)],
                          [("N-pair", 3.0, 1e-2), ("N-pair", 10.0, 3e-2), ("N-pair", 30.0, 1e-2)],
                          [("N-pair", 30.0, 3e-2), ("N-pair", 100.0, 1e-2)]]
    assert len(searched) == 13 and bench.unplanned(searched, cfg) == {"N-pair": 13 - 7}
    assert bench.choose(searched) == {"N-pair": (30.0, 1e-2)}
    values = [v for _, (v, _) in searched]  # the rows: the values as listed, then the walk's, each value together
    assert sorted(set(values), key=values.index) == [1.0, 3.0, 10.0, 30.0, 100.0]
    assert bench.next_trials(searched, cfg) == {}


def test_the_search_without_a_ladder_is_one_round_over_the_grid():
    cfg = {"method_lrs": [3e-4, 1e-3]}
    rounds = []

    def fit(trials):
        rounds.append(trials)
        return {key: [experiment.Run({"MAP@R": key[1][1]}, None, None)] for key in trials}

    searched = bench.search(["MS"], cfg, fit)
    assert len(rounds) == 1 and len(searched) == bench.SEARCH_BUDGET * 2
    assert rounds[0][("MS", (1.0, 3e-4))] == {"name": "MS", "value": 1.0, "lr": 3e-4, "measures": ("MAP@R",)}


def test_a_plan_counts_the_walks_first_step_only_where_it_is_sure():
    grid = bench.SEARCH_BUDGET * 2
    assert bench.sure_trials("MS", {"method_lrs": [1e-3, 3e-3]}) == grid  # no ladder: no walk
    assert bench.sure_trials("MS", {"method_lrs": [1e-3, 3e-3], "lr_ladder": [1e-3, 3e-3, 1e-2]}) == grid  # may end
    assert bench.sure_trials("MS", {"method_lrs": [3e-4, 1e-3, 3e-3], "lr_ladder": LADDER}) == grid + 3  # may stop
    assert bench.sure_trials("MS", {"method_lrs": None, "lr_ladder": LADDER}) == bench.SEARCH_BUDGET  # own rate


def test_the_walk_refuses_a_point_off_its_ladder_and_stops_at_the_ladders_ends():
    def runs(scores, value=1.0):
        return {("MS", (value, lr)): [experiment.Run({"MAP@R": s}, None, None)] for lr, s in scores.items()}

    cfg = {"lr_ladder": LADDER}
    with pytest.raises(ValueError, match="not on the ladder"):
        bench.next_trials(runs({2e-3: 0.5, 1e-3: 0.4}), cfg)
    with pytest.raises(ValueError, match="0.6 is not on the ladder"):
        bench.next_trials(runs({1e-3: 0.5}, value=0.6), {"walk_knobs": True})
    assert bench.next_trials(runs({3e-2: 0.5, 1e-2: 0.4}), cfg) == {}  # the ladder's top: the walk ends
    assert bench.next_trials(runs({1e-3: 0.5}), cfg) == {"MS": [(1.0, 3e-3), (1.0, 3e-4)]}  # alone: both ways
    assert bench.next_trials(runs({1e-3: 0.5}), {"walk_knobs": True}) == {"MS": [(0.75, 1e-3)]}  # the top value
    assert bench.next_trials({("MS", (1.0, None)): [experiment.Run({"MAP@R": 0.5}, None, None)]}, cfg) == {}


def test_every_ladder_holds_its_methods_candidates_in_order():
    for m in bench.METHODS.values():
        if len(m.values) == 1:  # a control does not walk
            continue
        assert list(m.ladder) == sorted(m.ladder) and set(m.values) <= set(m.ladder), m.name
        assert min(m.ladder) < min(m.values) and max(m.ladder) > max(m.values) or m.name == "MS", m.name


@pytest.mark.parametrize("profile", ["fashion", "glyphs2"])
def test_the_plan_counts_the_walks_first_step_and_each_methods_longest_length(profile):
    cfg = profiles.settings("bench", profile)
    names = bench.selected(cfg)
    trials = sum(len(bench.METHODS[n].values) * len(cfg["method_lrs"]) + 1 for n in names)  # grid + first step
    counted = plan.GRIDS["bench"](cfg, 1000)
    assert sum(t.runs for t in counted if t.section in names) == trials * cfg["search_seeds"]
    steps = {t.section: t.steps for t in counted}  # a length's trainings: three times a method's own
    ms = next(t for t in counted if t.section.startswith("length (MS"))
    assert ms.steps == 3 * steps["MS"] == 3 * 10 * 100 and ms.section == f"length (MS, {bench.METHODS['MS'].values[0]:g})"
    sme = next(t for t in counted if t.section.startswith("length (SME"))
    assert sme.steps == 3 * steps["SME"]


def _curve(*points, metric="MAP@R"):
    """A run whose history holds ``metric`` at the given ``(epoch, value)`` checkpoints, between epochs without."""
    records = [{"epoch": e, "loss": 1.0} for e in range(1, max(e for e, _ in points) + 1)]
    for e, v in points:
        records[e - 1][metric] = v
    return SimpleNamespace(history=SimpleNamespace(records=records))


def test_choose_lengths_keeps_the_best_mean_checkpoint_and_the_shorter_on_a_tie():
    results = {("MS", (0.75, 1e-3)): [_curve((5, 0.50), (10, 0.60), (15, 0.58)),
                                      _curve((5, 0.52), (10, 0.56), (15, 0.62))],  # means .51, .58, .60
               ("SME", (0.1, None)): [_curve((2, 0.3), (4, 0.4), (6, 0.4))]}  # a tie: the shorter
    chosen, table = bench.choose_lengths(results)
    assert chosen == {"MS": 15, "SME": 4}
    assert table == {"MS, lam = 0.75, lr 0.001": {"5 epochs": [0.50, 0.52], "10 epochs": [0.60, 0.56],
                                                  "15 epochs": [0.58, 0.62]},
                     "SME, tau = 0.1": {"2 epochs": [0.3], "4 epochs": [0.4], "6 epochs": [0.4]}}
    rows = {row: {"MAP@R": [0.0]} for row in table}  # its rows name the setting as the search table's do
    assert bench.recorded_choice(rows) == {"MS": (0.75, 1e-3), "SME": (0.1, None)}
    with pytest.raises(ValueError, match="share no checkpoint"):
        bench.choose_lengths({("MS", (0.75, 1e-3)): [_curve((5, 0.5), metric="R@1")]})
    with pytest.raises(ValueError, match="at least one method"):
        bench.choose_lengths({})


def test_capped_names_the_methods_whose_best_checkpoint_is_the_longest_tried():
    results = {("MS", (0.75, 1e-3)): [_curve((5, 0.50), (10, 0.60), (15, 0.58)),
                                      _curve((5, 0.52), (10, 0.56), (15, 0.62))],  # means .51, .58, .60
               ("N-pair", (10.0, 3e-3)): [_curve((5, 0.5), (10, 0.7), (15, 0.6))],  # peaks inside
               ("SME", (0.1, None)): [_curve((2, 0.3), (4, 0.4), (6, 0.4))]}  # a tie at the end: the shorter
    chosen, table = bench.choose_lengths(results)
    longest = {name: len(runs[0].history.records) for (name, _), runs in results.items()}
    assert bench.capped(table) == ["MS"]
    assert [n for n in chosen if chosen[n] == longest[n]] == ["MS"]  # as choose_lengths chose
    table["SME, tau = 0.1"]["6 epochs"] = [0.41]  # now rising to the end
    assert bench.capped(table) == ["MS", "SME"]
    runs = [{"tables": [{"table": bench.LENGTH_TABLE.title, "measured": table}]},  # two seeds' run files
            {"tables": [{"table": "Search", "measured": table},
                        {"table": bench.LENGTH_TABLE.title, "measured": {"MS, lam = 0.75, lr 0.001": {
                            "5 epochs": [0.5], "10 epochs": [0.4]}}}]}]
    assert bench.still_climbing(runs) == (2, 4)  # MS and SME of the first seed's 3; not MS of the second
    assert bench.still_climbing([{"tables": []}]) == (0, 0)


def test_a_length_trial_is_the_profiles_factor_times_each_methods_own_epochs():
    cfg = profiles.settings("bench", "glyphs2")  # 10 epochs labelled, 4 unsupervised; 3 times, 6 checkpoints
    assert bench.length_trial("MS", cfg) == (30, 5) and bench.length_trial("CBSwR", cfg) == (12, 2)
    assert bench.length_trial("MS", cfg.replace(length_checkpoints=100)) == (30, 1)  # at least every epoch
    for off in ({"length_factor": None}, {"length_checkpoints": 0}):
        with pytest.raises(ValueError, match="chooses no length"):
            bench.length_trial("MS", cfg.replace(**off))
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


def test_the_benchs_grid_declares_each_run_once_at_the_searchs_choices():
    """bench.grid is the one place a run of the bench is declared: the notebook, the plan and the cache read it."""
    cfg = profiles.settings("bench", "smoke")
    names = bench.selected(cfg)
    first = names[0]
    choices = {"value": {first: 0.4}, "lr": {first: 3e-3}, "epochs": {first: 7}}
    specs = bench.grid(cfg, [0, 1, 2], choices)
    assert len({(s.key, s.seed) for s in specs}) == len(specs) == len({s.digest() for s in specs})
    assert list(dict.fromkeys(s.table for s in specs)) == [bench.LENGTH, bench.MAIN, bench.NOISE]
    lengths = [s for s in specs if s.table == bench.LENGTH]
    assert {s.seed for s in lengths} == set(range(cfg.search_seeds)) and {s.split for s in lengths} == {"validation"}
    longest, every = bench.length_trial(first, cfg)
    mine = next(s for s in lengths if s.row == first)
    assert (mine.column, mine.options["epochs"], mine.options["every"]) == ((0.4, 3e-3), longest, every)
    main = {s.row: s.options for s in specs if s.table == bench.MAIN and s.seed == 0}
    assert list(main) == names and dict(main[first]) == {"value": 0.4, "lr": 3e-3, "epochs": 7}
    other = names[1]
    assert dict(main[other]) == {"value": bench.method(other).values[0], "lr": None, "epochs": None}
    noisy = [s for s in specs if s.table == bench.NOISE and s.seed == 0]
    labelled = [n for n in names if bench.method(n).supervised]
    assert len(noisy) == 2 * len(labelled) * sum(1 for r in cfg.rates if r)
    by_column = {(s.row, s.column): s.options for s in noisy}
    assert by_column[(first, (0.4, "noisy"))]["noise"] == ("symmetric", 0.4)
    assert by_column[(first, (0.4, "topline"))]["fraction"] == pytest.approx(0.6)
    assert not any(bench.method(s.row).unsupervised for s in noisy)  # labels never reach SME or CBSwR


def test_the_benchs_runner_calls_run_with_the_specs_options(monkeypatch):
    seen = []
    monkeypatch.setattr(bench, "run", lambda data, name, cfg, **kw: seen.append((data, name, kw)) or "run")
    cfg = profiles.settings("bench", "smoke")
    trials = {("SME", (0.1, None)): {"name": "SME", "value": 0.1, "lr": None, "measures": ("MAP@R",)}}
    (spec,) = bench.trial_specs(trials, cfg, [4])
    assert bench.run_spec({"validation": "val"}, "cpu")(spec) == "run"
    assert seen == [("val", "SME", {"seed": 4, "device": "cpu", "value": 0.1, "lr": None, "measures": ("MAP@R",)})]


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
