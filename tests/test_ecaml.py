"""The ECAML objective (eq. 11): metric loss + lambda x EC on the embedding layer, with the paper's settings; the
quoted tables agree where the paper repeats a number."""

from types import SimpleNamespace

import numpy as np
import pytest
import torch

from dml_tutorial import data, ecaml, experiment, losses, models, pretrain, profiles, regularizers


def _setup(seed=0):
    torch.manual_seed(seed)
    model = models.MLP(in_dim=6, dim=4, hidden=8)
    x, y = torch.randn(12, 6), torch.arange(3).repeat_interleave(4)
    return model, x, y


@pytest.mark.parametrize("local", ["npair", "binomial"])
def test_metric_loss_plus_lambda_ec_on_the_embedding_layer(local):
    model, x, y = _setup()
    model.eval()  # no dropout: the recomputed embeddings equal model(x)
    z = model(x)
    lam = ecaml.LAMBDA[local]
    expected = ecaml.LOCAL_LOSSES[local](z, y) + lam * regularizers.energy_confusion(
        z, y, log=True, reduction="mean")
    value = ecaml.ecaml_loss(local)(z, y, SimpleNamespace(x=x, model=model))
    assert value.item() == pytest.approx(expected.item(), rel=1e-6)


def test_the_ec_part_does_not_reach_the_backbone():
    model, x, y = _setup(1)
    z = model(x).detach()  # only the EC part of the loss has a graph into the model
    ecaml.ecaml_loss("binomial", lam=1.0)(z, y, SimpleNamespace(x=x, model=model)).backward()
    assert all(p.grad is None or torch.count_nonzero(p.grad) == 0 for p in model.trunk.parameters())
    assert torch.count_nonzero(model.embedding.weight.grad) > 0
    model.zero_grad()
    ecaml.ecaml_loss("binomial", lam=1.0, fc_only=False)(model(x), y, SimpleNamespace(x=x, model=model)).backward()
    assert any(p.grad is not None and torch.count_nonzero(p.grad) > 0 for p in model.trunk.parameters())


def test_paper_settings_and_baseline():
    model, x, y = _setup(2)
    z = model(x)
    batch = SimpleNamespace(x=x, model=model)
    assert ecaml.ecaml_loss("binomial", lam=0.0)(z, y, batch).item() == pytest.approx(
        losses.binomial_deviance_loss(z, y, alpha=2.0, beta=0.5, eta_neg=25.0).item())
    torch.manual_seed(5)
    ours = ecaml.ecaml_loss("triplet", lam=0.0)(z, y, batch)
    torch.manual_seed(5)
    assert ours.item() == pytest.approx(
        losses.triplet_loss(z, y, margin=0.1, squared=True, negatives="semihard-band").item())
    assert ecaml.LAMBDA == {"triplet": 0.02, "npair": 0.3, "binomial": 0.13}
    assert [ecaml.label("triplet", 0.0), ecaml.label("triplet"), ecaml.label("binomial", 0.5)] == [
        "Triplet", "ECAML(Tri)", "ECAML(Binomial), λ=0.5"]


def test_bad_arguments():
    with pytest.raises(ValueError, match="unknown metric loss"):
        ecaml.ecaml_loss("lifted")
    with pytest.raises(ValueError, match="non-negative"):
        ecaml.ecaml_loss("triplet", lam=-0.1)


def test_quoted_tables_agree_where_the_paper_repeats_them():
    cars = ecaml.REPORTED["CARS"]
    for local in ecaml.PAPER_LOCALS:  # Table 1 at lambda = 0 and at the chosen lambda repeats Table 4's R@1
        assert ecaml.REPORTED_LAMBDA[local][0.0] == cars[ecaml.label(local, 0.0)]["R@1"]
        assert ecaml.REPORTED_LAMBDA[local][ecaml.LAMBDA[local]] == cars[ecaml.label(local)]["R@1"]
    for name in ("Binomial", "ECAML(Binomial)"):  # Table 3 repeats Table 4's R@1, R@2, R@4, R@8
        assert ecaml.REPORTED_DROPOUT[name] == {k: cars[name][k] for k in ("R@1", "R@2", "R@4", "R@8")}


def test_sop_uses_a_tenth_of_the_lambda():
    assert ecaml.paper_lambda("npair", "sop") == pytest.approx(0.03)
    assert ecaml.paper_lambda("npair", "cub200") == ecaml.LAMBDA["npair"]


def test_the_released_codes_unit_norm_term_acts_on_the_embedding_weight_only():
    torch.manual_seed(0)
    model = models.MLP(in_dim=10, dim=4, hidden=16)
    x, y = torch.randn(12, 10), torch.arange(3).repeat_interleave(4)
    batch = SimpleNamespace(x=x, model=model)
    with_norm = ecaml.ecaml_loss("binomial", lam=0.0, fc_unit_norm=0.5)(model(x), y, batch)
    plain = ecaml.ecaml_loss("binomial", lam=0.0)(model(x), y, batch)
    expected = 0.5 * ((model.embedding.weight.detach().pow(2).sum(1) - 1) ** 2).mean()
    assert (with_norm - plain).item() == pytest.approx(expected.item(), rel=1e-5)
    (with_norm - plain).backward()
    assert all(p.grad is None or torch.count_nonzero(p.grad) == 0 for p in model.trunk.parameters())
    assert torch.count_nonzero(model.embedding.weight.grad) > 0
    with pytest.raises(ValueError, match="non-negative"):
        ecaml.ecaml_loss("binomial", fc_unit_norm=-1.0)


def test_table2_agrees_with_table4_at_512_dimensions():
    for name in ("Binomial", "ECAML(Binomial)"):
        assert ecaml.REPORTED_DIM[name][512] == ecaml.REPORTED["CARS"][name]


def test_paper_gains_read_off_tables_4_to_6():
    gains = ecaml.paper_gains()
    assert gains[("CARS", "Triplet")] == pytest.approx(81.0 - 68.3)  # Table 4
    assert gains[("CUB", "N-Pair")] == pytest.approx(53.2 - 51.9)  # Table 5
    assert gains[("SOP", "Binomial")] == pytest.approx(71.3 - 68.5)  # Table 6
    assert min(gains.values()) == pytest.approx(1.3) and max(gains.values()) == pytest.approx(12.7)


def test_the_released_ec_reads_the_raw_embedding_layer_output():
    model, x, y = _setup(3)
    model.eval()
    z = model(x)
    raw = model.embedding(model.hidden)  # the unnormalised fc output the released layer reads
    assert not torch.allclose(raw.norm(dim=1), torch.ones(len(y)))
    torch.manual_seed(11)
    value = ecaml.ecaml_loss("npair", lam=0.5, ec="released", local_options={"scale": 10.0})(
        z, y, SimpleNamespace(x=x, model=model))
    torch.manual_seed(11)  # the same partners: the term draws them from the global generator
    expected = losses.npairs_loss(z, y, scale=10.0) + 0.5 * regularizers.released_energy_confusion(raw, y)
    assert value.item() == pytest.approx(expected.item(), rel=1e-6)
    base = ecaml.ecaml_loss("npair", lam=0.0, local_options={"scale": 10.0})(z, y, SimpleNamespace(x=x, model=model))
    assert base.item() == pytest.approx(losses.npairs_loss(z, y, scale=10.0).item())  # the scale reaches the loss
    assert base.item() != pytest.approx(losses.npairs_loss(z, y).item())
    with pytest.raises(ValueError, match="ec"):
        ecaml.ecaml_loss("npair", ec="caffe")


def test_the_triplets_miner_is_a_setting_and_the_released_one_is_the_layers():
    """``local_options={"triplet": {"miner": ...}}``: the band (default, the paper's citation), the band with a
    random fallback, or the released RankHardLoss; the rows keep the paper's names, so the claims read them."""
    g = torch.Generator().manual_seed(0)
    z = torch.nn.functional.normalize(torch.randn(12, 8, generator=g), dim=1)
    y = torch.arange(6).repeat_interleave(2)
    assert ecaml.triplet(z, y).item() == pytest.approx(
        losses.triplet_loss(z, y, margin=0.1, squared=True, negatives="semihard-band").item())
    assert ecaml.triplet(z, y, miner="released").item() == pytest.approx(  # every candidate kept: not random
        losses.rank_hard_triplet_loss(z, y, margin=0.1).item())
    loss = ecaml.ecaml_loss("triplet", 0.0, local_options={"miner": "released"})
    assert loss.__name__ == "Triplet"
    with pytest.raises(ValueError, match="miner"):
        ecaml.triplet(z, y, miner="hardest")


def test_the_variants_build_losses_the_training_can_call():
    for variant in ecaml.VARIANTS.values():
        assert callable(ecaml.ecaml_loss("triplet", 0.02, **variant))


def _weight(spec) -> float:
    return spec.method.describe()["terms"]["energy_confusion"]["weight"]


def test_the_chapters_grid_declares_each_run_once_in_the_order_it_runs():
    """ecaml.grid is the one place a run of the chapter is declared: the notebook, the plan and the cache read it."""
    cfg = profiles.settings("ecaml", "smoke")
    specs = ecaml.grid(cfg, [0, 1])
    assert len({(s.key, s.seed) for s in specs}) == len(specs) == len({s.digest() for s in specs})
    assert list(dict.fromkeys(s.table for s in specs)) == [ecaml.MAIN, ecaml.STARTED_ROWS, ecaml.LAMBDA_TABLE,
                                                           ecaml.DROPOUT_TABLE, ecaml.DIM_TABLE]
    assert [s.seed for s in specs if s.key == (ecaml.MAIN, "Binomial", "")] == [0, 1]
    first = {s.key[1:]: s for s in specs if s.seed == 0}
    for local in cfg.locals:  # without and with EC at the paper's weight, the released EC, its baseline
        assert _weight(first[(ecaml.label(local, 0.0), "")]) == 0.0
        assert _weight(first[(ecaml.label(local), "")]) == ecaml.LAMBDA[local]
        assert first[(ecaml.label(local) + ", released EC", "")].method.describe()["fc_unit_norm"] == 0.5
        assert [first[(ecaml.label(local, lam), "")].options["curves"] for lam in (0.0, None)] == [True, True]
    table1 = [s for s in specs if s.table == ecaml.LAMBDA_TABLE and s.seed == 0]
    assert [float(s.column) for s in table1] == [lam for lam in cfg.lambdas if lam != ecaml.LAMBDA["triplet"]]
    assert [s.settings.dropout for s in specs if s.table == ecaml.DROPOUT_TABLE and s.seed == 0] == list(cfg.dropouts)
    dims = [(s.settings.dim, _weight(s)) for s in specs if s.table == ecaml.DIM_TABLE and s.seed == 0]
    assert dims == [(d, lam) for d in cfg.dims if d != cfg.dim for lam in (0.0, ecaml.LAMBDA["binomial"])]
    assert not ecaml.grid(cfg.replace(pretrained_start=None), [0])[0].options.get("start")


def test_the_grid_trains_what_the_searches_chose_and_the_start_as_declared():
    cfg = profiles.settings("ecaml", "glyphs")
    started = {row: {"values": {"lr": 3e-3}} for row in ecaml.started_rows(cfg)}  # the start's rows' searches
    choices = {"best shot": {"ECAML(N-Pair)": {"values": {"lambda": 0.03}},
                             "ECAML(N-Pair), released EC": {"values": {"lambda": 0.5}}, **started}}
    specs = {s.key[1:]: s for s in ecaml.grid(cfg, [0], choices)}
    assert _weight(specs[("ECAML(N-Pair)", "")]) == 0.03 and _weight(specs[("ECAML(N-Pair), released EC", "")]) == 0.5
    assert _weight(specs[("ECAML(Binomial)", "")]) == ecaml.LAMBDA["binomial"]  # not searched: the paper's
    started = [s for s in specs.values() if s.table == ecaml.STARTED_ROWS]
    start = cfg.pretrained_start
    assert {(s.settings.lr, s.settings.head_lr_mult) for s in started[1:]} == {(3e-3, start["head_lr_mult"])}
    assert started[0].settings.lr == start["lr"]  # the start itself, not fine-tuned: the start's own rate
    assert {s.options["start"]["lr"] for s in started} == {cfg.lr}  # the pre-training keeps the profile's rate
    assert [s.settings.epochs for s in started] == [0] + [cfg.epochs] * 2 * len(cfg.locals)  # the start itself first
    released = specs[("ECAML(N-Pair), released EC, pretrained", "")]
    assert _weight(released) == ecaml.LAMBDA["npair"]  # the released EC from the start: the paper's weight
    # the profile's options of a loss reach Tables 4/5 and Table 1 alike (issue #86: Table 1's columns had mixed
    # the paper's band miner, at lambda > 0, with the released miner of its lambda = 0 and chosen columns)
    two = profiles.settings("ecaml", "glyphs2")
    miners = {s.table: s.method.describe()["local_fn"]["keywords"].get("miner") for s in ecaml.grid(two, [0])
              if s.row.startswith(("Triplet", "ECAML(Tri)"))}
    assert miners == {ecaml.MAIN: "released", ecaml.LAMBDA_TABLE: "released"}


def test_each_compared_row_is_searched_and_the_grid_trains_it_at_its_choice():
    """Issue #86: every row a claim compares has its own best shot (rate, length and, with EC, its weight with 0 a
    candidate); the grid trains each at its choice, EC at the paper's weight at its EC row's rate and length, and
    Table 1 at EC's; the runner records a trial's R@1 at its checkpoints."""
    cfg = profiles.settings("ecaml", "glyphs2")
    arms = ecaml.arms(cfg)
    assert len(arms) == 4 * len(cfg.locals) and arms["ECAML(N-Pair), released EC"] == ("npair", "released", {})
    rule = ecaml.search_rule(cfg, "triplet", "paper")
    assert rule.knob.off == 0.0 and rule.knob.start == (ecaml.LAMBDA["triplet"],)
    assert ecaml.search_rule(cfg, "triplet", None).knob is None
    assert ecaml.search_rule(profiles.settings("ecaml", "smoke"), "triplet", "paper") is None
    trials = ecaml.best_shot_trials(cfg, 0)
    assert len(trials) == sum((2 if v is None else 4) for _, v, _ in arms.values())  # 2 rates x (weight, 0)
    assert {_weight(t) for t in trials if t.row == "ECAML(Tri)"} == {0.0, ecaml.LAMBDA["triplet"]}
    shot = {row: {"values": {"lr": 1e-4, "epochs": 6}} for row in arms}
    shot["ECAML(Tri)"] = {"values": {"lr": 3e-4, "lambda": 0.0, "epochs": 3}}  # EC switched off
    specs = {s.key[1:]: s for s in ecaml.grid(cfg, [0], {"best shot": shot})}
    ec, paper = specs[("ECAML(Tri)", "")], specs[("ECAML(Tri) at the paper's lambda", "")]
    assert _weight(ec) == 0.0 and (ec.settings.lr, ec.settings.epochs) == (3e-4, 3)
    assert _weight(paper) == ecaml.LAMBDA["triplet"] and (paper.settings.lr, paper.settings.epochs) == (3e-4, 3)
    assert (specs[("Triplet", "")].settings.lr, specs[("Triplet", "")].settings.epochs) == (1e-4, 6)
    assert {(s.settings.lr, s.settings.epochs) for k, s in specs.items() if s.table == ecaml.LAMBDA_TABLE} == {
        (3e-4, 3)}
    seen = []
    run = ecaml.run_spec({"validation": SimpleNamespace(test="held-out")}, "cpu")
    with pytest.MonkeyPatch.context() as m:
        m.setattr(experiment, "train_and_retrieve", lambda data, loss_fn, s, **kw: seen.append(kw["evaluate"]))
        run(trials[0])
    assert callable(seen[0])


def test_the_runner_makes_each_seeds_start_once_and_trains_on_the_split_a_spec_names(monkeypatch):
    made, trained = [], []
    monkeypatch.setattr(pretrain, "softmax_pretrained", lambda data, cfg, *, epochs, seed, device: made.append(
        (data, cfg.lr, epochs, seed)) or {"seed": seed})
    monkeypatch.setattr(experiment, "train_and_retrieve", lambda data, loss_fn, cfg, **kw: trained.append(
        (data, cfg.lr, cfg.epochs, kw["seed"], kw["init"], kw["curves"])) or SimpleNamespace(
        metrics={"R@1": 0.5}, history=SimpleNamespace(records=[{"epoch": cfg.epochs, "R@1": 0.5}])))
    cfg = profiles.settings("ecaml", "smoke")
    main, val = SimpleNamespace(train="main train"), SimpleNamespace(train="val train", test="val test")
    run = ecaml.run_spec({"main": main, "start validation": val}, "cpu")
    started = [s for s in ecaml.grid(cfg, [0, 1]) if s.table == ecaml.STARTED_ROWS]
    assert all(run(s).metrics == {"R@1": 0.5} for s in started)
    start = cfg.pretrained_start
    assert made == [("main train", cfg.lr, start["epochs"], 0), ("main train", cfg.lr, start["epochs"], 1)]
    assert {(t[0] is main, t[3], t[4]["seed"]) for t in trained} == {(True, 0, 0), (True, 1, 1)}  # its seed's start
    assert trained[0][1:4] == (start["lr"], 0, 0)  # the start itself: 0 epochs at the start's fine-tuning rate
    searched = cfg.replace(pretrained_start={**start, "lr_candidates": (1e-3, 1e-4)})
    choices = ecaml.best_shots(searched, 5, run)["best shot"]  # each row from the start: its own rate
    assert set(choices) == set(ecaml.started_rows(cfg)) and made[2:] == [("val train", cfg.lr, start["epochs"], 5)]
    assert [t[1] for t in trained[len(started):]] == [1e-3, 1e-4] * len(choices)  # one more start: the split's
    main_run = next(s for s in ecaml.grid(cfg, [0]) if s.table == ecaml.MAIN)
    run(main_run)
    assert trained[-1][4:] == (None, True)  # no start, its curves


def test_ecs_pulls_lines_table_figure_and_silent_words():
    from dml_tutorial import plots
    from dml_tutorial.train import History

    def run(ec, pull_ec, pull_metric, name):
        return SimpleNamespace(history=History([{"epoch": e + 1, "energy_confusion": ec[e], "|grad| energy_confusion":
                                                 pull_ec[e], f"|grad| {name}": pull_metric[e]} for e in range(3)]))

    table4 = {(ecaml.label("triplet"), ""): [run([0.5, 0.4, 0.3], [1, 1, 3], [1, 0, 1], "Triplet"),
                                            run([0.3, 0.2, 0.1], [1, 1, 1], [3, 1, 0], "Triplet")],
              (ecaml.label("binomial"), ""): [SimpleNamespace(history=History([{"epoch": 1, "loss": 1.0}]))]}
    curves = ecaml.pulls(table4, ["triplet", "binomial"])
    triplet = curves[ecaml.label("triplet")]
    assert curves[ecaml.label("binomial")] is None  # its search chose lambda = 0
    assert np.allclose(triplet["share"], [[0.5, 1.0, 0.75], [0.25, 0.5, 1.0]]) and triplet["local"] == 0
    assert np.allclose(triplet["value"], [0.4, 0.3, 0.2])
    lines = ecaml.pull_lines(curves)
    assert lines[0] == f"{ecaml.label('triplet'):29s} EC's share of the pull 0.38 -> 0.88; EC 0.400 -> 0.200"
    assert lines[1] == f"{ecaml.label('binomial'):29s} EC off: its search chose lambda = 0"
    assert ecaml.share_table(curves) == {ecaml.label("triplet"): {"epoch 1": [0.5, 0.25], "epoch 3": [0.75, 1.0]}}
    fig = plots.ec_pulls(curves, "t")
    assert np.allclose(fig.axes[1].lines[0].get_ydata(), [0.375, 0.75, 0.875])
    assert np.allclose(fig.axes[0].lines[0].get_ydata(), [0.4, 0.3, 0.2])
    fig.clf()
    words = ecaml.silent_words(table4, ["triplet"])  # no triplet pull: seed 1 in epoch 2, seed 2 in 3
    assert f"- {ecaml.label('triplet')}: from epoch 2, its metric loss has no gradient at all on the fixed batch in " \
           "up to 1 of 2 seeds" in words


def test_table_2s_sizes_paper_and_gain_lines():
    from dml_tutorial import experiment

    def runs(*r1):
        return [SimpleNamespace(metrics={"R@1": v, "NMI": v / 2}) for v in r1]

    base, with_ec = ecaml.label("binomial", 0.0), ecaml.label("binomial")
    by_dim = {(base, 16): runs(0.5, 0.6, 0.55), (with_ec, 16): runs(0.52, 0.61, 0.6),
              (base, 64): runs(0.7, 0.7, 0.72), (with_ec, 64): runs(0.69, 0.72, 0.7)}
    table = ecaml.dims_table(by_dim, "binomial", [16, 64])
    assert list(table) == [f"{base} R@1", f"{with_ec} R@1", f"{base} NMI", f"{with_ec} NMI"]
    assert table[f"{with_ec} NMI"] == {"d = 16": [0.26, 0.305, 0.3], "d = 64": [0.345, 0.36, 0.35]}
    paper = ecaml.dims_paper()
    assert all(paper[f"{name} R@1"][f"d = {d}"] == v["R@1"] for name in ecaml.REPORTED_DIM
               for d, v in ecaml.REPORTED_DIM[name].items())
    lines = ecaml.dims_lines(by_dim, "binomial", [16, 64])
    diff = experiment.paired_difference(by_dim[(base, 64)], by_dim[(with_ec, 64)], "R@1")
    assert lines[1] == f"d =  64: {with_ec} - {base} R@1 {100 * diff['mean']:+5.1f} ± {100 * diff['std']:.1f} " \
                       f"points (p = {diff['p']:.2f})"


def test_ecs_pull_against_each_loss_at_the_start_is_a_ratio_per_loss():
    cfg = profiles.settings("ecaml", "smoke")
    digits = data.load_dataset("digits", split="classes", seen=range(6), seed=0)
    lines = ecaml.gradient_ratios(cfg, digits.train, "cpu", seed=0)
    assert [line.split()[0] for line in lines] == [ecaml.NAMES[local].split()[0] for local in cfg.locals]
    assert all(float(line.rsplit("= ", 1)[1]) > 0 for line in lines)
    assert lines == ecaml.gradient_ratios(cfg, digits.train, "cpu", seed=0)  # seeded


def test_the_rows_from_the_pretrained_start_are_searched_by_the_one_search_on_their_own_split():
    """Issue #86: no chapter keeps a search of its own. Test bed I's rows from the pretrained start each get their
    fine-tuning rate from dml_tutorial.search on the start's validation split (it had one rate shared by every
    loss, chosen by a walk of its own); without rates in the profile nothing is searched and the start's own rate trains them."""
    cfg = profiles.settings("ecaml", "glyphs")
    rule = ecaml.start_rule(cfg)
    rates = tuple(sorted(cfg.pretrained_start["lr_candidates"]))
    assert (rule.split, rule.metric, rule.knob, rule.lengths) == ("start validation", "R@1", None, (cfg.epochs,))
    assert rule.rate.ladder == rates and set(rule.rate.start) == set(rates)  # both rates tried, no walk beyond
    rows = ecaml.started_rows(cfg)
    assert len(rows) == 2 * len(cfg.locals)
    trials = [t for t in ecaml.best_shot_trials(cfg, 0) if t.row in rows]
    assert len(trials) == len(rows) * len(rates) and {t.split for t in trials} == {"start validation"}
    assert all("start" in t.options and t.options["curve"] == "R@1" for t in trials)
    assert ecaml.start_rule(profiles.settings("ecaml", "smoke")) is None
    assert ecaml.started_rows(profiles.settings("ecaml", "glyphs2")) == {}  # test bed II starts every row


def test_the_energy_spread_splits_ec_into_the_class_means_distance_and_the_spreads():
    labels = np.array([0, 0, 1, 1])
    apart = torch.tensor([[0.0, 1.0], [0.0, 3.0], [4.0, 1.0], [4.0, 3.0]])  # means (0, 2) and (4, 2), spread 1 each
    tight = torch.tensor([[0.0, 2.0], [0.0, 2.0], [1.0, 2.0], [1.0, 2.0]])  # means 1 apart, no spread
    table4 = {(ecaml.label("triplet", 0.0), ""): [SimpleNamespace(train_embeddings=apart)],
              (ecaml.label("triplet"), ""): [SimpleNamespace(train_embeddings=tight)]}
    spread, lines = ecaml.energy_spread(table4, labels, ["triplet"])
    assert spread[ecaml.label("triplet", 0.0)] == pytest.approx({"||mu_I - mu_J||^2": 16.0, "tr S_I": 1.0})
    assert spread[ecaml.label("triplet")] == pytest.approx({"||mu_I - mu_J||^2": 1.0, "tr S_I": 0.0})
    line = f"{ecaml.NAMES['triplet']:8s}: ||mu_I - mu_J||^2 16.000 -> 1.000, tr S_I 1.000 -> 0.000 (without -> with EC)"
    assert lines == [line]


def test_the_spectral_lines_pair_rho_by_seed_and_the_curve_ends_read_the_last_epoch():
    """A spectrum spread over every direction (rho 0) without EC, one direction with EC: rho grows, paired by seed;
    each curve's end is its history's last value."""
    from dml_tutorial import evidence, metrics

    g = torch.Generator().manual_seed(0)
    flat = [torch.linalg.qr(torch.randn(16, 8, generator=g, dtype=torch.float64))[0] for _ in range(3)]
    line = [torch.randn(16, 1, generator=g, dtype=torch.float64) * torch.ones(1, 8) + 1e-3 * f for f in flat]
    history = {key: [0.1, 0.2, v] for v, key in enumerate(("seen R@1", "unseen R@1", "seen MAP@R", "unseen MAP@R"))}
    table4 = {(ecaml.label("triplet", 0.0), ""): [SimpleNamespace(test_embeddings=z, history=history) for z in flat],
              (ecaml.label("triplet"), ""): [SimpleNamespace(test_embeddings=z, history=history) for z in line]}
    (text,) = ecaml.spectral_lines(table4, ["triplet"])
    rho = [[metrics.spectral_decay(z) for z in zs] for zs in (flat, line)]
    d = evidence.paired(*rho)
    assert np.mean(rho[0]) < 1e-6 < d["mean"]  # orthonormal columns: a flat spectrum
    assert text == (f"{ecaml.label('triplet'):16s} rho without EC {np.mean(rho[0]):.3f}, with EC "
                    f"{np.mean(rho[1]):.3f}; with - without {d['mean']:+.3f} (95% CI {d['ci'][0]:+.3f} to "
                    f"{d['ci'][1]:+.3f})")
    ends = ecaml.curve_ends(table4, ["triplet"])
    assert list(ends) == [ecaml.label("triplet", 0.0), ecaml.label("triplet")]
    assert ends[ecaml.label("triplet")] == {"seen R@1, last epoch": [0] * 3, "unseen R@1, last epoch": [1] * 3,
                                            "seen MAP@R, last epoch": [2] * 3, "unseen MAP@R, last epoch": [3] * 3}
