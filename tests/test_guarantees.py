"""The noise chapter's experiment as data (dml_tutorial/guarantees.py): its grid declares each training once, with
the settings, noise and start the notebook used to write by hand; each row's search returns its choice, on held-out
labels as noisy as the row's; the runner keeps and reuses the weights a start needs."""

from types import SimpleNamespace

import numpy as np
import pytest
import torch

from dml_tutorial import data, experiment, guarantees, plan, profiles, train
from dml_tutorial import noise as label_noise


def _by_table(specs):
    out = {}
    for s in specs:
        out.setdefault(s.table, []).append(s)
    return out


def test_the_grid_declares_each_training_once_in_the_order_the_chapter_runs_it():
    cfg = profiles.settings("noise_guarantees", "smoke")
    specs = guarantees.grid(cfg, [0, 1])
    assert len({(s.key, s.seed) for s in specs}) == len(specs)
    tables = _by_table(specs)
    assert list(tables) == [guarantees.NOISE_RATES, guarantees.CLEAN_START, guarantees.FROM_CLEAN, guarantees.SKEW]
    noisy = [r for r in cfg.rates if r]
    rates = tables[guarantees.NOISE_RATES]
    assert len(rates) == 2 * len(guarantees.arms()) * (len(cfg.rates) + len(noisy))  # arms x rates, + toplines
    for s in rates:
        topline = s.row.endswith("(topline)")
        assert s.settings == cfg  # no search in smoke: the profile's rate
        assert s.options.get("noise") == (None if topline or not s.column else ("symmetric", s.column))
        assert s.options.get("fraction", 1.0) == (1 - s.column if topline else 1.0)
    (skew,) = tables[guarantees.SKEW]  # one seed, the profile's settings, its weights kept
    assert (skew.seed, skew.options["noise"], skew.options["keep_state"]) == (0, ("symmetric", cfg.skew_rate), True)
    assert [(s.seed, s.column) for s in tables[guarantees.CLEAN_START]] == [(0, 0.0), (1, 0.0)]
    assert [(s.column, s.seed) for s in tables[guarantees.FROM_CLEAN]] == [(r, s) for r in noisy for s in (0, 1)]
    assert {s.options["start"] for s in tables[guarantees.FROM_CLEAN]} == {guarantees.CLEAN_START}


def _shot(lr, epochs, trials=(), **knob):
    """A row's Choice as a run file keeps it: the values, and trials ``(lr, best R@1)`` at the same length."""
    return {"values": {"lr": lr, **knob, "epochs": epochs},
            "trials": [{"lr": r, **knob, "epochs": epochs, "curve": {epochs: score}} for r, score in trials]}


def test_the_grid_trains_each_row_at_its_own_choice_with_the_recipes_and_checkpoints_of_test_bed_ii():
    cfg = profiles.settings("noise_guarantees", "glyphs2")
    shots = {guarantees.row_name(arm, rate): _shot(1e-3 if rate else 3e-3, 20 if rate else 40,
                                                    [(1e-4, 0.5), (1e-3 if rate else 3e-3, 0.7), (1e-2, 0.6)])
             for arm in guarantees.arms() for rate in cfg.rates}
    shots[guarantees.row_name(guarantees.MARGINAL, 0.4)]["values"]["beta"] = 0.8
    tables = _by_table(guarantees.grid(cfg, [0], {"best shot": shots}))
    for s in tables[guarantees.NOISE_RATES]:  # a noisy row at its own choice, a topline at its arm's clean one
        clean = s.row.endswith("(topline)") or not s.column
        assert (s.settings.lr, s.settings.epochs) == ((3e-3, 40) if clean else (1e-3, 20)), s.row
    marginal = {s.column: s.method.keywords["beta"] for s in tables[guarantees.NOISE_RATES]
                if s.row == guarantees.MARGINAL}
    assert marginal == {0.0: 1.4, 0.2: 1.4, 0.4: 0.8, 0.6: 1.4}  # the paper's beta where the search kept it
    (skew,) = tables[guarantees.SKEW]
    assert (skew.settings.lr, skew.settings.epochs) == (1e-3, 20)  # its row's choice (p = skew_rate)
    recipes = {(s.row.rsplit(", ", 1)[1], s.column): s.settings for s in tables[guarantees.RECIPES]}
    assert recipes[("the runner-up rate", 0.4)].lr == 1e-2  # the row's next-best rate: 0.6 beats 0.5
    assert recipes[("Adam at the chosen rate", 0.0)].optimizer == "adam" and recipes[(
        "Adam at the chosen rate", 0.0)].lr == 3e-3
    assert len(tables[guarantees.RECIPES]) == 2 * len(cfg.recipes) * len(cfg.rates)
    longer = tables[guarantees.CHECKPOINTS][0].settings
    assert longer.lr == 3e-3 and longer.epochs * cfg.batches_per_epoch == max(cfg.checkpoint_steps)
    assert longer.eval_every * cfg.batches_per_epoch == 500  # the gcd of 500, 1,000, 1,500 and 3,000 steps
    assert all(s.options["curves"] for s in tables[guarantees.CHECKPOINTS])
    with pytest.raises(ValueError, match="each a multiple of batches_per_epoch"):
        guarantees.grid(cfg.replace(checkpoint_steps=(150,)), [0], {"best shot": shots})
    lonely = {row: _shot(1e-3, 20, [(1e-3, 0.7)]) for row in shots}  # a search that tried one rate only
    with pytest.raises(ValueError, match="runner-up rate needs"):
        guarantees.grid(cfg, [0], {"best shot": lonely})


def test_each_row_searches_on_held_out_labels_as_noisy_as_its_own():
    """Every arm at every noise rate is a row of its own (issue #86); its trials train on the validation split with
    the row's noise, the marginal's walk moves beta, and the runner scores a trial on held-out labels corrupted
    among the held-out classes at the row's rate."""
    cfg = profiles.settings("noise_guarantees", "glyphs2").replace(search_lrs=(3e-4, 1e-3, 3e-3),
                                                                    search_lr_start=(3e-4, 1e-3),
                                                                    search_lengths=(10,), beta_candidates=(1.0, 1.4))
    seen = []

    def run(trial):  # R@1 peaks at lr 1e-3 for every row; the marginal prefers beta 1.0
        seen.append((trial.table, trial.split, trial.seed, trial.options["noise"]))
        beta = trial.method.keywords.get("beta", 0)
        score = 0.5 - abs(trial.settings.lr - 1e-3) + (beta == 1.0) * 0.01
        return SimpleNamespace(history=SimpleNamespace(records=[{"epoch": 10, "R@1": score}]))

    choices = guarantees.best_shots(cfg, 7, run)["best shot"]
    assert set(choices) == set(guarantees.rows(cfg)) and len(choices) == 3 * len(cfg.rates)
    assert {(t, split, seed) for t, split, seed, _ in seen} == {(guarantees.BEST_SHOT, "validation", 7)}
    assert {noise for *_, noise in seen} == {None} | {("symmetric", r) for r in cfg.rates if r}
    assert all(c["values"]["lr"] == 1e-3 for c in choices.values())
    assert {c["values"].get("beta") for row, c in choices.items() if row.startswith("marginal")} == {1.0}
    starting = guarantees.best_shot_trials(cfg, 7)
    assert len(starting) == 2 * 4 * 2 + 4 * 2  # two triplet arms x 4 rates x 2 rates; the marginal at beta 1.4
    assert guarantees.unplanned(cfg, {"best shot": choices}) == len(seen) - len(starting)
    held = SimpleNamespace(labels=np.repeat(np.arange(800, 900), 20))
    held.with_labels = lambda labels: SimpleNamespace(labels=labels)
    noisy = label_noise.held_out_noise(held, ("symmetric", 0.4), seed=3)
    assert set(noisy.labels) <= set(range(800, 900)) and 0.3 < np.mean(noisy.labels != held.labels) < 0.5
    assert label_noise.held_out_noise(held, None, 3) is held


def test_the_runner_starts_from_the_weights_of_the_same_seeds_clean_run_which_is_never_cached(monkeypatch,
                                                                                                tmp_path):
    trained = []

    def fake(data, loss_fn, cfg, **kw):
        trained.append(kw)
        state = {"seed": kw["seed"]} if kw["keep_state"] else None
        return experiment.Run({"R@1": 0.5}, None, train.History(), state=state)

    monkeypatch.setattr(experiment, "train_and_retrieve", fake)
    cfg = profiles.settings("noise_guarantees", "smoke")
    specs = [s for s in guarantees.grid(cfg, [0, 1]) if s.table in (guarantees.CLEAN_START, guarantees.FROM_CLEAN)]
    run = guarantees.run_spec({"main": None}, "cpu")
    results = experiment.run_grid(specs, run, cache=tmp_path)
    assert [kw["init"] for kw in trained] == [None, None] + [{"seed": 0}, {"seed": 1}] * 3
    assert [kw["noise"] for kw in trained[2:4]] == [("symmetric", 0.2)] * 2
    assert len(results) == 1 + 3  # one clean row, three noisy columns
    files = sorted(p.name for p in tmp_path.glob("*.pt"))
    assert len(files) == 6 and all(f.startswith("from_the_clean") for f in files)  # the weights: not kept there
    experiment.run_grid(specs, guarantees.run_spec({"main": None}, "cpu"), cache=tmp_path)
    assert len(trained) == 8 + 2  # again: the clean runs train anew, the others load


def test_a_grid_that_declares_a_run_twice_is_refused():
    cfg = profiles.settings("noise_guarantees", "smoke")
    spec = guarantees.grid(cfg, [0])[0]
    with pytest.raises(ValueError, match="more than once"):
        experiment.run_grid([spec, spec], lambda s: None)


def test_the_plan_counts_the_grid_and_the_searches_first_trials(monkeypatch):
    monkeypatch.setattr(plan, "probe", lambda *a, **kw: 0.01)
    cfg = profiles.settings("noise_guarantees", "glyphs2", {"n_seeds": 2})
    p = plan.make("noise_guarantees", cfg, "cpu", n_train=1_000)
    grid = guarantees.grid(cfg, [0, 1], guarantees.stand_in(cfg))
    trials = guarantees.best_shot_trials(cfg, 0)
    assert p.runs == len(grid) + len(trials)
    assert sum(t.runs * t.steps for t in p.trainings) == sum(
        s.settings.epochs * s.settings.batches_per_epoch for s in grid + trials)
    assert p.trainings[0].section == guarantees.BEST_SHOT  # what the notebook adds the walks to


def test_the_risk_identity_at_no_noise_is_the_clean_risk_and_under_noise_keeps_the_clean_column():
    """Section 2's measurement: at p = 0 no label flips, so the noisy risk, eq. 17's prediction and the clean risk
    coincide for every map (and the hinged loss too); under noise the clean columns are the same as at p = 0."""
    g = torch.Generator().manual_seed(0)
    images, labels = torch.rand(30, 1, 4, 4, generator=g), np.repeat([0, 1, 2], 10)
    risks = guarantees.risk_identity(images, labels, 3, rates=(0.0, 0.4), maps=5, dim=4, seed=1)
    assert list(risks) == [0.0, 0.4] and all(r.shape == (5, len(guarantees.IDENTITY_COLUMNS)) for r in risks.values())
    clean, noisy, predicted, hinge_clean, hinge_noisy = risks[0.0].T
    np.testing.assert_allclose(noisy, clean)
    np.testing.assert_allclose(predicted, clean)
    np.testing.assert_allclose(hinge_noisy, hinge_clean)
    np.testing.assert_allclose(risks[0.4][:, [0, 3]], risks[0.0][:, [0, 3]])
    assert not np.allclose(risks[0.4][:, 1], clean)  # 40% of the labels flipped
    first, _ = guarantees.identity_lines(risks, 3)
    assert first.startswith("p = 0: unhinged: noisy - predicted within 0.000") and first.endswith(
        "rank correlation 1.00; with hinge and mining: rank correlation 1.00")


def _noise_results(rates=(0.0, 0.4)):
    """Each arm at R@1 0.375 under noise and 0.5 as its topline (NMI 0.5), two seeds: 3/4 of the topline."""
    def runs(r1):
        return [SimpleNamespace(metrics={"R@1": r1, "NMI": 0.5})] * 2

    out = {}
    for name in guarantees.arms():
        out |= {(name, r): runs(0.75 if r == 0 else 0.375) for r in rates}  # exact in binary
        out |= {(f"{name} (topline)", r): runs(0.5) for r in rates if r}
    return out


def test_the_main_table_holds_each_arm_its_topline_the_references_and_the_nmi_rows():
    results = _noise_results()
    refs = {("raw input", ""): [SimpleNamespace(metrics={"R@1": 0.3})] * 2}
    table = guarantees.main_table(results, refs, (0.0, 0.4), ["raw input"])
    names = list(guarantees.arms())
    assert list(table) == names + [f"{n} (topline)" for n in names] + ["raw input"] + [f"{n} NMI" for n in names]
    assert table[names[0]] == {"p = 0": [0.75, 0.75], "p = 0.4": [0.375, 0.375]}
    assert table[f"{names[0]} (topline)"] == {"p = 0.4": [0.5, 0.5]}  # no topline at p = 0: the arm itself
    assert table["raw input"] == {"p = 0": [0.3, 0.3], "p = 0.4": [0.3, 0.3]}
    assert table[f"{names[2]} NMI"] == {"p = 0": [0.5, 0.5], "p = 0.4": [0.5, 0.5]}
    assert guarantees.topline_ratios(results, (0.0, 0.4)) == {n: {"p = 0.4": [0.75, 0.75]} for n in names}


def test_the_noise_curves_draw_each_arm_against_its_topline_and_the_ratio():
    import matplotlib.pyplot as plt

    from dml_tutorial import plots

    results = _noise_results()
    fig = plots.noise_curves(results, list(guarantees.arms()), (0.0, 0.4), title="t")
    ratio = {line.get_label(): list(line.get_ydata()) for line in fig.axes[3].lines if line.get_label()[0] != "_"}
    assert ratio == {n: [0.75] for n in guarantees.arms()}
    assert [ax.get_title() for ax in fig.axes[:3]] == list(guarantees.arms())
    plt.close(fig)


def test_the_recipes_and_checkpoints_tables_and_their_gaps():
    from types import SimpleNamespace

    from dml_tutorial import experiment

    fixed, rand = guarantees.PAIR

    def runs(*r1, history=None):
        return [SimpleNamespace(metrics={"R@1": v}, history={"unseen R@1": h}) for v, h in
                zip(r1, history or [None] * len(r1))]

    other = {(f"{fixed}, lr x 3", 0.0): runs(0.8, 0.7), (f"{rand}, lr x 3", 0.0): runs(0.8, 0.8),
             (f"{fixed}, lr x 3", 0.4): runs(0.4, 0.3), (f"{rand}, lr x 3", 0.4): runs(0.6, 0.6)}
    table = guarantees.by_rate(other, [0.0, 0.4])
    assert table == {f"{fixed}, lr x 3": {"p = 0": [0.8, 0.7], "p = 0.4": [0.4, 0.3]},
                     f"{rand}, lr x 3": {"p = 0": [0.8, 0.8], "p = 0.4": [0.6, 0.6]}}
    gaps = [100 * experiment.paired_difference(other[(f"{fixed}, lr x 3", r)], other[(f"{rand}, lr x 3", r)],
                                               "R@1")["mean"] for r in (0.0, 0.4)]
    (line,) = guarantees.recipe_gaps(table, {"lr x 3": {"lr": 3e-3}}, [0.0, 0.4])
    assert line == f"lr x 3 ({{'lr': 0.003}}): random - fixed R@1 by p, points: 0: {gaps[0]:+.1f}, 0.4: {gaps[1]:+.1f}"
    # two epochs of 100 steps: the checkpoints at 100 and 200 steps read epochs 0 and 1
    long_runs = {(fixed, 0.0): runs(0, 0, history=[[0.5, 0.6], [0.5, 0.8]]),
                 (rand, 0.0): runs(0, 0, history=[[0.5, 0.7], [0.6, 0.7]]),
                 (fixed, 0.4): runs(0, 0, history=[[0.4, 0.3], [0.4, 0.1]]),
                 (rand, 0.4): runs(0, 0, history=[[0.5, 0.5], [0.4, 0.5]])}
    curves = guarantees.checkpoint_table(long_runs, [100, 200], 100)
    assert curves[f"{fixed}, p = 0.4"] == {"100 steps": [0.4, 0.4], "200 steps": [0.3, 0.1]}
    (line,) = guarantees.checkpoint_gaps(curves, [100, 200], [0.0, 0.4])
    # random's lead at p = 0.4 minus at p = 0: 100 steps (0.1 + 0) / 2 - (0 + 0.1) / 2 = 0; 200 steps
    # (0.2 + 0.4) / 2 - (0.1 - 0.1) / 2 = 0.3
    lead = {(r, s): np.mean(np.subtract(curves[f"{rand}, p = {r:g}"][s], curves[f"{fixed}, p = {r:g}"][s]))
            for r in (0.0, 0.4) for s in ("100 steps", "200 steps")}
    expected = [100 * (lead[(0.4, s)] - lead[(0.0, s)]) for s in ("100 steps", "200 steps")]
    assert line == f"random - fixed at p = 0.4 minus at p = 0, points: 100 steps {expected[0]:+.1f}, " \
                   f"200 steps {expected[1]:+.1f}"
    assert expected == pytest.approx([0.0, 30.0])


def test_the_skew_tables_of_section_4_read_each_miners_measurements():
    digits = data.load_dataset("digits", split="classes", seen=range(6), seed=0)
    cfg = profiles.settings("noise_guarantees", "smoke")
    noisy = experiment.corrupt(digits.train, ("symmetric", 0.4), seed=0)
    skews, most, bad, lines = guarantees.miner_skews(cfg, digits.train, noisy, None, seed=0)
    keys = [(when, m) for when in ("untrained", "trained") for m in guarantees.MINERS]
    assert list(skews) == list(most) == list(bad) == keys and len(lines) == len(keys)
    assert skews[("untrained", "random")] == pytest.approx(1.0, abs=0.15)  # uniform sampling: no skew
    table = guarantees.corrupted_positive_table(bad)
    assert table["hard"] == {"untrained, active triplets": [bad[("untrained", "hard")]["active"]],
                             "trained, active triplets": [bad[("trained", "hard")]["active"]],
                             "all positive pairs": [bad[("trained", "hard")]["pairs"]]}
    q = guarantees.q_table(most, (0.0, 0.2), k_seen=6)
    eta = most[("trained", "semihard-fixed")]["max"]
    assert q["fixed semi-hard, max eta"] == {"p = 0.2": [label_noise.triplet_multiplier(0.2, eta, 6)],
                                             "tolerated p": [label_noise.triplet_noise_bound(eta, 6)]}
    assert q["balanced weights (eta = 1, eq. 24)"]["tolerated p"] == [label_noise.triplet_noise_bound(1.0, 6)]


def test_the_pretraining_table_puts_the_random_start_beside_the_clean_one():
    def runs(*values):
        return [SimpleNamespace(metrics={"R@1": v}) for v in values]

    results = {(guarantees.MARGINAL, 0.0): runs(0.9), (guarantees.MARGINAL, 0.4): runs(0.5, 0.6)}
    table = guarantees.pretraining_table(results, {0.4: runs(0.7, 0.8)}, (0.0, 0.4))
    assert table == {"marginal, random init": {"p = 0.4": [0.5, 0.6]},
                     "marginal, clean pre-training (oracle)": {"p = 0.4": [0.7, 0.8]}}


def test_the_miner_gaps_pair_the_two_triplet_arms_by_seed():
    fixed, rand = guarantees.PAIR

    def runs(*r1):
        return [SimpleNamespace(metrics={"R@1": v}) for v in r1]

    results = {(fixed, 0.0): runs(0.5, 0.75), (rand, 0.0): runs(0.5, 0.75),
               (fixed, 0.4): runs(0.25, 0.5), (rand, 0.4): runs(0.5, 0.5)}
    clean, noisy = guarantees.miner_gaps(results, [0.0, 0.4])
    assert clean == "p = 0.0: random - fixed semi-hard R@1 =  +0.0 ± 0.0 points (p-value nan)"  # no spread
    # differences 0.25 and 0: mean 12.5 points, std 17.7 (ddof 1), t = 1 on 1 degree of freedom: p = 0.5
    assert noisy == "p = 0.4: random - fixed semi-hard R@1 = +12.5 ± 17.7 points (p-value 0.50)"
