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


def _diff(mean, low, high, n=5, confidence=0.95):
    return {"mean": mean, "std": 0.01, "ci": (low, high), "p": 0.5, "n": n, "mde": 0.02, "confidence": confidence}


SEOI = 0.02  # a smallest effect of interest of 2 points


@pytest.mark.parametrize("diff, word, starts", [
    (_diff(0.03, 0.01, 0.05), "supported", "the 95.0% interval lies above 0"),
    (_diff(-0.03, -0.05, -0.01), "contradicted", "the 95.0% interval lies below 0"),
    (_diff(0.0, -0.01, 0.015), "no effect detected", "the 95.0% interval holds 0 and excludes"),
    (_diff(0.0, -0.04, 0.04), "inconclusive", "the 95.0% interval holds 0 and a gain of 2.0"),
    (_diff(0.0, -0.01, 0.02), "inconclusive", "the 95.0% interval holds 0 and a gain of 2.0"),  # touches it
])
def test_each_word_follows_its_rule(diff, word, starts):
    got, reason = evidence.verdict(diff, SEOI)
    assert got == word and got in evidence.WORDS and reason.startswith(starts)


def test_a_gain_below_the_papers_is_supported_smaller_than_reported_not_reproduced():
    """The audit's case (EPS even/odd on Fashion-MNIST): an interval of +0.4 to +13.7 above 0 but below the
    paper's gain was called "reproduced"; it is supported, and smaller than reported when its upper end relative
    to our baseline lies below the paper's relative gain."""
    diff = _diff(0.071, 0.004, 0.137)
    word, reason = evidence.verdict(diff, SEOI, paper_relative=0.40, base_mean=0.5)  # ours at most +27%
    assert word == "supported" and reason.startswith(evidence.SMALLER)
    word, reason = evidence.verdict(diff, SEOI, paper_relative=0.20, base_mean=0.5)  # +27% reaches +20%
    assert word == "supported" and not reason.startswith(evidence.SMALLER)
    assert evidence.verdict(diff, SEOI)[1] == "the 95.0% interval lies above 0"  # no paper number: no qualifier


def test_the_gate_comes_first_and_names_its_reason():
    diff = _diff(0.03, 0.01, 0.05)
    word, reason = evidence.verdict(diff, SEOI, testable=(False, "the trained baseline does not beat the raw input"))
    assert (word, reason) == ("not testable here", "the trained baseline does not beat the raw input")


def test_gate_checks_both_references_and_the_headroom():
    base = np.array([0.80, 0.82, 0.81, 0.79, 0.83])
    ok, reason = evidence.gate(base, {"raw input": base - 0.1, "untrained network": base - 0.2}, SEOI)
    assert ok and "beats" in reason
    ok, reason = evidence.gate(base, {"raw input": base + 0.01, "untrained network": base - 0.2}, SEOI)
    assert not ok and "does not beat the raw input" in reason
    noisy = base - np.array([0.05, -0.05, 0.04, -0.04, 0.0])  # mean 0: the interval holds 0
    ok, reason = evidence.gate(base, {"raw input": base - 0.1, "untrained network": noisy}, SEOI)
    assert not ok and "untrained network" in reason
    high = np.array([0.985, 0.99, 0.988, 0.987, 0.99])
    ok, reason = evidence.gate(high, {"raw input": high - 0.1, "untrained network": high - 0.2}, SEOI)
    assert not ok and "headroom" in reason
    assert evidence.gate(base, {}, SEOI)[0] is False


def test_adjusted_intervals_are_bonferronis_and_wider():
    assert evidence.adjusted_confidence(1) == pytest.approx(0.95)
    assert evidence.adjusted_confidence(6) == pytest.approx(1 - 0.05 / 6)
    a, b = np.array([0.90, 0.92, 0.91, 0.89, 0.93]), np.array([0.93, 0.94, 0.92, 0.93, 0.95])
    wide = evidence.paired(a, b, evidence.adjusted_confidence(6))
    low, high = stats.ttest_rel(b, a).confidence_interval(1 - 0.05 / 6)
    assert wide["ci"] == pytest.approx((low, high)) and wide["confidence"] == pytest.approx(1 - 0.05 / 6)
    narrow = evidence.paired(a, b)
    assert wide["ci"][0] < narrow["ci"][0] and wide["ci"][1] > narrow["ci"][1]
    with pytest.raises(ValueError):
        evidence.adjusted_confidence(0)


def test_describe_a_difference_without_spread():
    assert evidence.describe(evidence.paired([0.5, 0.6, 0.7], [0.52, 0.62, 0.72])) == "+2.0 points (the same in all 3 seeds)"


def test_describe_shows_points_interval_and_seeds():
    d = evidence.paired([0.50, 0.52, 0.51], [0.53, 0.55, 0.52])
    text = evidence.describe(d)
    assert text.startswith(f"{100 * d['mean']:+.1f} points (95% CI {100 * d['ci'][0]:+.1f} to")
    assert text.endswith(f"p = {d['p']:.2f}, 3 seeds)")
