"""The one-axis walk (dml_tutorial.ladder): paths worked by hand, the ladder's ends, bad inputs, and, over random
single-peaked scores, that the walk ends at the ladder's best value with that best flanked or at an end."""
import numpy as np
import pytest

from dml_tutorial import ladder

RATES = [3e-5, 1e-4, 3e-4, 1e-3, 3e-3, 1e-2, 3e-2]


def _recording(score):
    calls = []

    def f(x):
        calls.append(x)
        return score(x)
    return f, calls


def test_walk_climbs_toward_a_peak_beyond_its_start_and_stops_once_flanked():
    # by hand: 1e-4, 1e-3 (better, the top) -> 3e-3 (top) -> 1e-2 (top) -> 3e-2 (lower): 1e-2 is flanked
    f, calls = _recording(lambda x: -abs(np.log10(x) + 2))
    tried = ladder.walk(f, [1e-4, 1e-3], RATES)
    assert calls == [1e-4, 1e-3, 3e-3, 1e-2, 3e-2] and list(tried) == calls
    assert max(tried, key=tried.get) == 1e-2


def test_walk_stops_at_the_ladders_end_and_goes_downward_too():
    f, calls = _recording(lambda x: -x)  # the smaller the better: down to the ladder's bottom, then stop
    tried = ladder.walk(f, [0.1, 1.0, 10.0], [0.001, 0.01, 0.1, 1.0, 10.0, 100.0])
    assert calls == [0.1, 1.0, 10.0, 0.01, 0.001] and max(tried, key=tried.get) == 0.001


def test_walk_scores_only_its_start_when_the_best_is_inside_or_there_is_no_ladder():
    f, calls = _recording(lambda x: -abs(x - 1.0))
    assert list(ladder.walk(f, [0.1, 1.0, 10.0], [0.01, 0.1, 1.0, 10.0, 100.0])) == [0.1, 1.0, 10.0]
    f, calls = _recording(lambda x: x)
    assert list(ladder.walk(f, [0.1, 1.0], None)) == [0.1, 1.0] and calls == [0.1, 1.0]


def test_walk_from_one_value_steps_both_ways_and_keeps_the_first_of_equal_scores():
    f, calls = _recording(lambda x: 0.0)  # every value ties: the first tried stays the best
    tried = ladder.walk(f, [1e-3], RATES)
    assert calls == [1e-3, 3e-3, 3e-4] and max(tried, key=tried.get) == 1e-3


def test_walk_refuses_an_empty_start_and_a_best_off_the_ladder():
    with pytest.raises(ValueError, match="at least one value"):
        ladder.walk(lambda x: x, [], RATES)
    with pytest.raises(ValueError, match="not on the ladder"):
        ladder.walk(lambda x: x, [1e-4, 5e-3], RATES)


@pytest.mark.parametrize("seed", range(20))
def test_walk_from_neighbouring_rungs_finds_the_peak_of_any_single_peaked_score(seed):
    rng = np.random.default_rng(seed)
    values = np.sort(rng.choice(np.arange(1, 40), size=rng.integers(3, 9), replace=False)).astype(float)
    peak = rng.uniform(values[0] - 5, values[-1] + 5)
    first = rng.integers(0, len(values) - 2)  # a run of neighbouring rungs, as the profiles start from
    start = list(values[first:first + rng.integers(1, 4)])
    tried = ladder.walk(lambda x: -abs(x - peak), start, list(values))
    best = max(tried, key=tried.get)
    assert best == values[np.argmin(abs(values - peak))]  # the ladder's best, wherever the walk started
    i = list(values).index(best)
    below, above = any(x < best for x in tried), any(x > best for x in tried)
    assert (below or i == 0) and (above or i == len(values) - 1)  # flanked, or at an end
    assert len(tried) == len(set(tried))  # nothing scored twice


def test_walk_is_flanked_by_what_it_tried_not_by_every_rung_between():
    # from rungs 1 and 3 with the peak at 2, the walk stops at 3's neighbour 4: 3 is flanked by 1 and 4, and the
    # rung between 1 and 3 is never scored, so a profile starts from neighbouring rungs
    tried = ladder.walk(lambda x: -abs(x - 2.2), [1.0, 3.0], [1.0, 2.0, 3.0, 4.0])
    assert list(tried) == [1.0, 3.0, 4.0] and max(tried, key=tried.get) == 3.0


def test_sure_steps_counts_the_first_step_from_two_values_with_room_on_both_sides():
    assert ladder.sure_steps([3e-4, 1e-3], RATES) == 1  # the better of two is at an edge with a rung beyond it
    assert ladder.sure_steps([3e-5, 1e-4], RATES) == 0  # the better may be 3e-5, the ladder's end
    assert ladder.sure_steps([1e-4, 3e-4, 1e-3], RATES) == 0  # the middle may win
    assert ladder.sure_steps([3e-4, 1e-3], None) == 0 and ladder.sure_steps([1e-3], RATES) == 0


@pytest.mark.parametrize("peak", RATES)
def test_a_walk_tries_what_its_plan_counted_and_unplanned_counts_the_rest(peak):
    start = [3e-4, 1e-3]
    tried = ladder.walk(lambda x: -abs(np.log(x / peak)), start, RATES)
    assert ladder.planned(start, RATES) == 3  # the start and the sure first step
    assert len(tried) >= ladder.planned(start, RATES)
    # the steps beyond the start and its first, by hand: e.g. a peak at 1e-2 walks 3e-3, 1e-2, 3e-2 (two more);
    # at 3e-5, 1e-4 then 3e-5, the ladder's end (one more)
    by_hand = {3e-5: 1, 1e-4: 1, 3e-4: 0, 1e-3: 0, 3e-3: 1, 1e-2: 2, 3e-2: 2}[peak]
    assert ladder.unplanned(tried, start, RATES) == by_hand
    assert ladder.planned([], RATES) == 0 and ladder.planned([1e-3], None) == 1
