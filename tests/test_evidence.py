"""Paired differences, their intervals, the minimum detectable effect and the verdict vocabulary, against scipy's
own paired t-test and interval and a simulation of the power definition."""

import numpy as np
import pytest
from scipy import stats

from dml_tutorial import evidence


def test_paired_matches_scipys_paired_t_test_and_interval():
    a, b = np.array([0.90, 0.92, 0.91, 0.89, 0.93]), np.array([0.93, 0.94, 0.92, 0.93, 0.95])
    d = evidence.paired(a, b)
    test = stats.ttest_rel(b, a)
    assert d["p"] == pytest.approx(test.pvalue, rel=1e-9)
    low, high = test.confidence_interval(0.95)
    assert d["ci"] == pytest.approx((low, high), rel=1e-9)
    assert d["mean"] == pytest.approx(np.mean(b - a)) and d["std"] == pytest.approx(np.std(b - a, ddof=1))
    assert d["n"] == 5


def test_minimum_detectable_effect_has_about_80_percent_power():
    # a true paired gain equal to the MDE (known sd) is found at p < 0.05 in about 80% of repetitions
    rng = np.random.default_rng(0)
    sd, n = 0.02, 5
    base = evidence.paired(np.zeros(n), rng.normal(0, sd, n))
    mde = base["mde"] * sd / base["std"]  # the MDE at the true sd
    hits = [evidence.paired(np.zeros(n), rng.normal(mde, sd, n))["p"] < 0.05 for _ in range(4000)]
    assert 0.72 < np.mean(hits) < 0.86  # the t-based formula approximates the noncentral t's power


def test_one_seed_or_no_spread_is_inconclusive_and_finite():
    for a, b in (([0.5], [0.6]), ([0.5, 0.5], [0.6, 0.6])):
        d = evidence.paired(a, b)
        assert np.isnan(d["p"]) and d["ci"] == (d["mean"], d["mean"])
        assert evidence.verdict(d, 0.01)[0] == "inconclusive"
    with pytest.raises(ValueError, match="equally long"):
        evidence.paired([0.5, 0.6], [0.5])
    with pytest.raises(ValueError):
        evidence.paired([], [])


def _diff(mean, low, high, n=5):
    return {"mean": mean, "std": 0.01, "ci": (low, high), "p": 0.5, "n": n, "mde": 0.02}


@pytest.mark.parametrize("diff, paper, word", [
    (_diff(0.03, 0.01, 0.05), 0.03, "reproduced"),
    (_diff(-0.03, -0.05, -0.01), 0.03, "not reproduced"),
    (_diff(0.0, -0.01, 0.01), 0.03, "not reproduced"),     # the paper's 3 points lie above the interval
    (_diff(0.0, -0.04, 0.04), 0.03, "inconclusive"),       # the interval holds 0 and the paper's gain
    (_diff(0.0, -0.01, 0.01), None, "inconclusive"),       # no paper gain to exclude
    (_diff(0.03, 0.01, 0.05), -0.001, "inconclusive"),     # the paper itself reports no gain
])
def test_verdicts(diff, paper, word):
    got, reason = evidence.verdict(diff, paper)
    assert got == word and got in evidence.WORDS and reason


def test_describe_a_difference_without_spread():
    assert evidence.describe(evidence.paired([0.5, 0.6, 0.7], [0.52, 0.62, 0.72])) == "+2.0 points (the same in all 3 seeds)"


def test_describe_shows_points_interval_and_seeds():
    d = evidence.paired([0.50, 0.52, 0.51], [0.53, 0.55, 0.52])
    text = evidence.describe(d)
    assert text.startswith(f"{100 * d['mean']:+.1f} points (95% CI {100 * d['ci'][0]:+.1f} to")
    assert text.endswith(f"p = {d['p']:.2f}, 3 seeds)")
