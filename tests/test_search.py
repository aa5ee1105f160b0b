"""The one best-shot search (dml_tutorial.search) against a brute force over every ladder point, on runners whose
validation curve is a known function of the rate, the knob and the epoch."""

import dataclasses
import itertools
import math

import pytest

from dml_tutorial import search, settings, train
from dml_tutorial.experiment import Run
from dml_tutorial.spec import RunSpec

RATES = (1e-4, 3e-4, 1e-3, 3e-3, 1e-2, 3e-2)
TAUS = (0.03, 0.05, 0.1, 0.2, 0.5)


def _spec():
    cfg = settings.CBSwRSettings(profile="test", dataset="glyphs", model="glyphnet", dim=16, epochs=4, lr=1e-3)
    return RunSpec("Tables 1-2", "CBS", "CBS", cfg, seed=3)


class Runner:
    """A chapter's runner with a known validation curve ``score(lr, tau, epoch)``, counting its trainings."""

    def __init__(self, score):
        self.score, self.specs = score, []

    def __call__(self, spec):
        self.specs.append(spec)
        s = spec.settings
        assert spec.options["curve"] == "R@1" and spec.split == "validation" and spec.seed == 3
        records = [{"epoch": e, "loss": 0.0, "R@1": self.score(s.lr, s.tau, e)}
                   for e in range(s.eval_every, s.epochs + 1, s.eval_every)]
        return Run({}, None, train.History(records))


def _peak(lr0, tau0, rising_until):
    """A smooth single peak at (lr0, tau0) in log space, rising with the epochs until ``rising_until``, then
    falling slowly."""
    def score(lr, tau, epoch):
        shape = -(math.log10(lr / lr0)) ** 2 - (math.log10(tau / tau0)) ** 2
        return shape + min(epoch, rising_until) / 100 - max(0, epoch - rising_until) / 1000
    return score


def _brute_force(score, lengths):
    points = [(lr, tau, e) for lr, tau in itertools.product(RATES, TAUS) for e in range(1, max(lengths) + 1)]
    return max(points, key=lambda p: score(*p))


@pytest.mark.parametrize("lr0, tau0, rising", [(3e-3, 0.1, 6), (1e-4, 0.5, 3), (3e-2, 0.03, 12), (1e-3, 0.05, 1)])
def test_the_walk_finds_the_brute_forces_best_point(lr0, tau0, rising):
    score = _peak(lr0, tau0, rising)
    rule = search.Search("R@1", search.Axis("lr", RATES, (1e-3, 3e-3)), lengths=(4, 8, 16),
                         knob=search.Axis("tau", TAUS, (0.1,)))
    runner = Runner(score)
    choice = search.best_shot(_spec(), rule, runner)
    lr, tau, epochs = _brute_force(score, rule.lengths)
    assert choice.values == {"lr": lr, "tau": tau, "epochs": epochs}
    assert len(runner.specs) == len(choice.trials) < len(RATES) * len(TAUS)  # no trial twice, fewer than a grid
    expected_edges = [n for n, v, ladder in (("lr", lr, RATES), ("tau", tau, TAUS)) if v in (ladder[0], ladder[-1])]
    # a best past epoch 8 lies in the second half of the 16-epoch trial: the ladder's end stopped the lengthening
    assert choice.edges == expected_edges + (["epochs"] if epochs > 8 else [])
    assert choice.ladders == {"lr": list(RATES), "tau": list(TAUS), "epochs": [4, 8, 16]}


def test_the_regularisers_off_is_always_tried_and_can_win():
    def score(lr, tau, epoch):  # the term only hurts: its weight 0 ("off") is best
        return -abs(math.log10(lr / 1e-3)) - (0 if tau == 0 else 1 + tau)
    rule = search.Search("R@1", search.Axis("lr", RATES, (1e-3, 3e-3)), lengths=(2,),
                         knob=search.Axis("tau", TAUS, (0.1,), off=0.0))
    runner = Runner(score)
    choice = search.best_shot(_spec(), rule, runner)
    assert choice.values == {"lr": 1e-3, "tau": 0.0, "epochs": 1}
    assert {(t["lr"], t["tau"]) for t in choice.trials} >= {(1e-3, 0.0), (3e-3, 0.0)}  # off at each starting rate
    assert choice.edges == []  # off is a candidate, not the end of a ladder


def test_ties_go_to_the_first_trial_and_the_shorter_length():
    rule = search.Search("R@1", search.Axis("lr", RATES, (1e-3, 3e-3)), lengths=(3, 6), every=1)
    choice = search.best_shot(_spec(), rule, Runner(lambda lr, tau, epoch: 0.5))
    assert choice.values == {"lr": 1e-3, "epochs": 1}


def test_a_length_at_the_ladders_end_is_recorded_as_an_edge():
    rule = search.Search("R@1", search.Axis("lr", RATES, (1e-3,)), lengths=(2, 4), every=2)
    choice = search.best_shot(_spec(), rule, Runner(lambda lr, tau, epoch: epoch - abs(math.log10(lr / 1e-3))))
    assert choice.values == {"lr": 1e-3, "epochs": 4} and choice.edges == ["epochs"]
    assert [t["epochs"] for t in choice.trials] == [2, 2, 2, 4]  # 1e-3, then 3e-3 and 3e-4 flank it, then longer


def _dipping(lr, tau, epoch):
    """A curve rising to epoch 40 with a dip at every tenth epoch (a noisy checkpoint), best at rate 1e-3."""
    return epoch / 100 - 0.05 * (epoch % 10 == 0) - abs(math.log10(lr / 1e-3))


@pytest.mark.parametrize("patience, epochs", [(0.5, 38), (0.0, 8)])
def test_a_dip_at_a_trials_last_checkpoint_does_not_end_the_lengthening(patience, epochs):
    """Issue #86: the first rule went on only where a trial's last checkpoint was its best, so one noisy checkpoint
    ended a still-rising curve (DCDL's clean rows stopped at 6-8 epochs). With patience 0.5 the search goes on while
    the best lies in the trial's second half: here to the ladder's last length, its best the last undipped epoch."""
    rule = search.Search("R@1", search.Axis("lr", RATES, (1e-3,)), lengths=(10, 20, 40), every=2, patience=patience)
    choice = search.best_shot(_spec(), rule, Runner(_dipping))
    assert choice.values == {"lr": 1e-3, "epochs": epochs}
    assert max(t["epochs"] for t in choice.trials) == (40 if patience else 10)
    # at the longest length, its best checkpoint (38) still in the second half: the budget ended it, an edge
    assert search.ends(choice) == ([("epochs", "top")] if patience else [])
    peaked = search.best_shot(_spec(), rule, Runner(_peak(1e-3, 0.1, rising_until=4)))  # best in the first half
    assert max(t["epochs"] for t in peaked.trials) == 10 and peaked.values["epochs"] == 4
    assert search.rising({2: 0.1, 4: 0.3, 6: 0.2}, 6, 0.5) and not search.rising({2: 0.3, 4: 0.1, 6: 0.2}, 6, 0.5)
    assert not search.rising({1: 0.5, 2: 0.5}, 2, 0.5) and search.rising({1: 0.4, 2: 0.5}, 2, 0.0)  # a tie: the first
    with pytest.raises(ValueError, match="patience"):
        search.Search("R@1", search.Axis("lr", RATES, (1e-3,)), lengths=(2,), patience=1.0)


def test_a_lengthened_trial_goes_on_from_the_shorter_one_where_the_runner_can():
    """With a runner that takes ``after`` and ``keep`` (experiment.run_one), the trials the search may lengthen
    keep their last state and each longer trial names the shorter one it goes on from; the choice is the same as
    with a runner that cannot."""
    score = _peak(1e-3, 0.1, rising_until=100)  # still rising at the end: lengthened to the ladder's last
    rule = search.Search("R@1", search.Axis("lr", RATES, (1e-3, 3e-3)), lengths=(2, 4, 8), every=2)
    asked = []

    class GoingOn(Runner):
        def __call__(self, spec, after=None, keep=False):
            asked.append((spec.settings.epochs, after and (after.settings.epochs, after.settings.lr), keep))
            assert after is None or after.data() == dataclasses.replace(
                spec, settings=spec.settings.replace(epochs=after.settings.epochs)).data()
            return super().__call__(spec)

    choice = search.best_shot(_spec(), rule, GoingOn(score))
    assert choice == search.best_shot(_spec(), rule, Runner(score))
    lr = choice.values["lr"]
    assert [a for a in asked if a[0] > 2] == [(4, (2, lr), True), (8, (4, lr), False)]  # the last length: not kept
    assert all(after is None and keep for epochs, after, keep in asked if epochs == 2)
    trained = [epochs - (after[0] if after else 0) for epochs, after, keep in asked if epochs > 2]  # what ran
    assert search.lengthened({"best shot": {"CBS": choice.as_data()}}) == {n: trained.count(n) for n in trained}
    assert search.lengthened({"best shot": {"CBS": choice.as_data()}}, goes_on=False) == {4: 1, 8: 1}
    assert search.lengthened({}) == {}


def test_a_trial_without_its_curve_and_bad_rules_are_refused():
    def silent(spec):
        return Run({}, None, train.History([{"epoch": 1, "loss": 0.0}]))
    rule = search.Search("R@1", search.Axis("lr", RATES, (1e-3,)), lengths=(1,))
    with pytest.raises(ValueError, match="options\\['curve'\\]"):
        search.best_shot(_spec(), rule, silent)
    with pytest.raises(ValueError, match="start"):
        search.Axis("lr", RATES, (5e-3,))
    with pytest.raises(ValueError, match="off"):
        search.Axis("tau", TAUS, (0.1,), off=0.2)
    with pytest.raises(ValueError, match="multiples"):
        search.Search("R@1", search.Axis("lr", RATES, (1e-3,)), lengths=(3, 5), every=2)


def test_a_knob_that_is_not_a_setting_is_set_by_the_chapters_vary():
    seen = []

    def vary(spec, name, value):
        seen.append((name, value))
        return spec.__class__(**{**spec.__dict__, "row": f"{spec.row} at {value}"})

    rule = search.Search("R@1", search.Axis("lr", RATES, (1e-3,)), lengths=(1,),
                         knob=search.Axis("weight", (0.1, 1.0), (0.1,), off=0.0))
    runner = Runner(lambda lr, tau, epoch: -abs(math.log10(lr / 1e-3)))
    choice = search.best_shot(_spec(), rule, runner, vary=vary)
    assert ("weight", 0.0) in seen and choice.values["weight"] == 0.1  # ties: the start before off
    assert rule.planned() == 2 and rule.as_data()["knob"]["off"] == 0.0


def test_the_plan_counts_the_starting_trials_the_search_makes_first():
    rule = search.Search("R@1", search.Axis("lr", RATES, (1e-3, 3e-3)), lengths=(4, 8), every=2,
                         knob=search.Axis("tau", TAUS, (0.1,), off=0.0))
    peak = _peak(1e-4, 0.5, 6)
    runner = Runner(lambda lr, tau, epoch: peak(lr, tau or 0.01, epoch))  # off scores as a tau far from the peak
    choice = search.best_shot(_spec(), rule, runner)
    start = search.starting_trials(_spec(), rule)
    assert len(start) == rule.planned() == 4 and runner.specs[:4] == start
    assert all(s.split == "validation" and s.settings.epochs == 4 and s.settings.eval_every == 2 for s in start)
    assert search.unplanned(choice, rule) == len(runner.specs) - 4 > 0
    assert len({s.digest() for s in runner.specs}) == len(runner.specs)  # each trial its own cache key


def test_a_choice_reads_in_a_line_from_its_data_as_a_run_file_keeps_it():
    import json

    rule = search.Search("R@1", search.Axis("lr", RATES, (1e-3,)), lengths=(2, 4), every=2)
    choice = search.best_shot(_spec(), rule, Runner(lambda lr, tau, epoch: epoch / 10 - abs(math.log10(lr / 1e-3))))
    kept = json.loads(json.dumps(choice.as_data()))  # the curves' epochs become strings in JSON
    assert search.describe(kept) == search.describe(choice) == (
        "lr 0.001, 4 epochs (best validation score 0.400, 4 trials); at the end of its ladder: epochs")


def test_a_runs_choices_read_back_row_by_row():
    rule = search.Search("R@1", search.Axis("lr", RATES, (1e-3, 3e-3)), lengths=(2,))
    choice = search.best_shot(_spec(), rule, Runner(lambda lr, tau, epoch: -abs(math.log10(lr / 1e-4))))
    choices = {"best shot": {"CBS": choice.as_data()}, "head": "released"}
    assert search.chosen(choices, "CBS") == {"lr": 1e-4, "epochs": 1} and search.chosen(choices, "SME") == {}  # flat: 1
    cfg = _spec().settings
    assert (search.tuned(cfg, choices, "CBS").lr, search.tuned(cfg, choices, "CBS").epochs) == (1e-4, 1)
    assert search.tuned(cfg, choices, "SME") == cfg and search.tuned(cfg, None, "CBS") == cfg
    assert search.walked(choices, lambda row: rule) == len(choice.trials) - rule.planned() == 2
    assert search.walked({}, lambda row: rule) == 0


def test_the_ends_of_ladders_the_searches_stopped_at_are_counted_row_by_row_over_the_seeds():
    """Issue #86: a choice at a ladder's end is not a best shot; the chapters count, seed by seed, where they sat."""
    import json

    rule = search.Search("R@1", search.Axis("lr", RATES, (1e-3, 3e-3)), lengths=(2, 4), every=2,
                         knob=search.Axis("tau", TAUS, (0.1,)))
    at_ends = search.best_shot(_spec(), rule, Runner(_peak(RATES[-1] * 3, TAUS[0] / 3, rising_until=100)))
    inside = search.best_shot(_spec(), rule, Runner(_peak(3e-3, 0.1, rising_until=1)))
    assert search.ends(at_ends) == [("lr", "top"), ("tau", "bottom"), ("epochs", "top")] and search.ends(inside) == []
    runs = [{"choices": {"best shot": {"CBS": json.loads(json.dumps(c.as_data()))}}} for c in (at_ends, inside)]
    runs.append({"choices": {}})  # a run that searched nothing counts no seed
    counts = search.edge_counts(runs)
    assert counts == {"CBS": {"seeds": 2, ("lr", "top"): 1, ("tau", "bottom"): 1, ("epochs", "top"): 1}}
    assert search.edges_text(counts, label=str.lower) == (
        "Seeds on which a row's choice sat at an end of its ladder (its best may lie beyond it): the highest rate: cbs "
        "1 of 2; the lowest tau: cbs 1 of 2; the longest length: cbs 1 of 2.")
    assert "the lowest τ: cbs 1 of 2" in search.edges_text(counts, label=str.lower, symbols={"tau": "τ"})
    assert search.edges_text(search.edge_counts(runs[1:])) == "No row's choice sat at an end of its ladder (1 seed)."
    assert search.edge_counts(runs[2:]) == {} and search.edges_text({}) == ""


def test_the_runner_up_is_the_best_trial_at_another_rate_and_none_without_one():
    def trial(lr, score):
        return {"lr": lr, "epochs": 5, "curve": {5: score}}

    data = {"values": {"lr": 1e-3, "epochs": 5}, "ladders": {}, "edges": [],
            "trials": [trial(1e-3, 0.9), trial(3e-4, 0.7), trial(3e-3, 0.7), trial(1e-3, 0.95)]}
    assert search.runner_up({"best shot": {"row": data}}, "row") == 3e-4  # a tie at 0.7: the first made
    assert search.runner_up({"best shot": {"row": {**data, "trials": data["trials"][::3]}}}, "row") is None
    assert search.runner_up({}, "row") is None and search.runner_up(None, "row") is None
