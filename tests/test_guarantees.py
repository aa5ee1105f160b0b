"""The noise chapter's experiment as data (dml_tutorial/guarantees.py): its grid declares each training once, with
the settings, noise and start the notebook used to write by hand; the search returns its choices; the runner keeps
and reuses the weights a start needs."""

from types import SimpleNamespace

import pytest

from dml_tutorial import experiment, guarantees, plan, profiles, train


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


def test_the_grid_trains_at_the_searchs_choices_with_the_recipes_and_checkpoints_of_test_bed_ii():
    cfg = profiles.settings("noise_guarantees", "glyphs2")
    choices = {"lr": 3e-3, "runner-up lr": 1e-4, "marginal beta": 0.8}
    tables = _by_table(guarantees.grid(cfg, [0], choices))
    assert {s.settings.lr for s in tables[guarantees.NOISE_RATES]} == {3e-3}
    assert tables[guarantees.SKEW][0].settings == cfg  # the skew run keeps the profile's rate, as recorded
    marginal = next(s for s in tables[guarantees.NOISE_RATES] if s.row == guarantees.MARGINAL)
    assert marginal.method.keywords["beta"] == 0.8
    recipes = {s.row.rsplit(", ", 1)[1]: s.settings for s in tables[guarantees.RECIPES]}
    assert recipes["the runner-up rate"].lr == 1e-4 and recipes["Adam at the chosen rate"].optimizer == "adam"
    assert len(tables[guarantees.RECIPES]) == 2 * len(cfg.recipes) * len(cfg.rates)
    longer = tables[guarantees.CHECKPOINTS][0].settings
    assert longer.epochs * cfg.batches_per_epoch == max(cfg.checkpoint_steps)
    assert longer.eval_every * cfg.batches_per_epoch == 500  # the gcd of 500, 1,000, 1,500 and 3,000 steps
    assert all(s.options["curves"] for s in tables[guarantees.CHECKPOINTS])
    with pytest.raises(ValueError, match="each a multiple of batches_per_epoch"):
        guarantees.grid(cfg.replace(checkpoint_steps=(150,)), [0], choices)


def test_the_rate_search_takes_the_best_mean_and_the_marginals_best_beta_there():
    cfg = profiles.settings("noise_guarantees", "glyphs2").replace(lr_ladder=None, beta_candidates=(0.6, 1.4))
    seen = []

    def run(spec):  # R@1 peaks at lr 1e-3 for every arm; the marginal prefers beta 0.6
        seen.append((spec.table, spec.split, spec.seed))
        beta = getattr(spec.method, "keywords", {}).get("beta", 0)
        return SimpleNamespace(metrics={"R@1": -abs(spec.settings.lr - 1e-3) + (beta == 0.6) * 0.01})

    choices, search, by_beta = guarantees.rate_search(run, cfg, 7)
    assert set(seen) == {(guarantees.RATE_SEARCH, "validation", 7)}
    assert len(seen) == guarantees.planned_search(cfg) == len(cfg.lr_candidates) * (2 + 2)
    assert choices == {"lr": 1e-3, "runner-up lr": 3e-4, "marginal beta": 0.6}
    assert list(by_beta[1e-3]) == [0.6, 1.4] and set(search) == set(cfg.lr_candidates)


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


def test_the_plan_counts_the_grid_and_the_searchs_sure_trainings(monkeypatch):
    monkeypatch.setattr(plan, "probe", lambda *a, **kw: 0.01)
    cfg = profiles.settings("noise_guarantees", "glyphs2", {"n_seeds": 2})
    p = plan.make("noise_guarantees", cfg, "cpu", n_train=1_000)
    grid = guarantees.grid(cfg, [0, 1], {"lr": 1e-3, "runner-up lr": 3e-4})
    assert p.runs == len(grid) + guarantees.planned_search(cfg)
    assert sum(t.runs * t.steps for t in p.trainings) == sum(
        s.settings.epochs * s.settings.batches_per_epoch for s in grid) + p.trainings[0].runs * p.trainings[0].steps
    assert p.trainings[0].section == guarantees.RATE_SEARCH  # what the notebook adds the walk's rest to
