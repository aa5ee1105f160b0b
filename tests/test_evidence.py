"""Paired differences, their intervals, the minimum detectable effect and the verdict vocabulary, against scipy's
own paired t-test and interval and a simulation of the power definition."""

import itertools

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


def test_minimum_detectable_effect_has_about_80_percent_power_at_its_own_level():
    # a true paired gain equal to the MDE (known sd) is found in about 80% of repetitions by the test at the
    # interval's own level: at 95%, and at a Bonferroni level of 1 - 0.05 / 8 (the DCDL family), where it is wider
    rng = np.random.default_rng(0)
    sd, n = 0.02, 5
    for confidence in (0.95, 1 - 0.05 / 8):
        base = evidence.paired(np.zeros(n), rng.normal(0, sd, n), confidence)
        mde = base["mde"] * sd / base["std"]  # the MDE at the true sd
        hits = [evidence.paired(np.zeros(n), rng.normal(mde, sd, n))["p"] < 1 - confidence for _ in range(4000)]
        assert 0.72 < np.mean(hits) < 0.86  # the t-based formula approximates the noncentral t's power
    a, b = rng.normal(0, 1, n), rng.normal(0, 1, n)
    ratio = evidence.paired(a, b, 1 - 0.05 / 8)["mde"] / evidence.paired(a, b)["mde"]
    assert ratio == pytest.approx((stats.t.ppf(1 - 0.025 / 8, 4) + stats.t.ppf(0.8, 4))
                                  / (stats.t.ppf(0.975, 4) + stats.t.ppf(0.8, 4)))  # the audit's 1.3-1.7x


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
    (_diff(0.0, -0.01, 0.015), "no effect detected", "the 95.0% interval lies within -2.0 points and +2.0"),
    (_diff(0.0, -0.04, 0.04), "inconclusive", "the 95.0% interval holds 0 and reaches a gain or a harm of 2.0"),
    (_diff(0.0, -0.01, 0.02), "inconclusive", "the 95.0% interval holds 0 and reaches a gain of 2.0"),  # touches
    # two-sided: the audit's EPS cell (-3.7, -8.8 to +1.4) excludes a gain of 2 but not a harm of 2
    (_diff(-0.037, -0.088, 0.014), "inconclusive", "the 95.0% interval holds 0 and reaches a harm of 2.0"),
    (_diff(0.0, -0.02, 0.01), "inconclusive", "the 95.0% interval holds 0 and reaches a harm of 2.0"),  # touches
    (_diff(0.005, 0.001, 0.015), "supported", "the 95.0% interval lies above 0"),  # above 0 comes first
])
def test_each_word_follows_its_rule(diff, word, starts):
    got, reason = evidence.verdict(diff, SEOI)
    assert got == word and got in evidence.WORDS and reason.startswith(starts)


def test_smoke_runs_and_few_seeds_get_no_word_before_any_rule():
    assert evidence.decides("smoke", 3) == (False, "smoke profile, n = 3: a pipeline check, no verdict")
    assert evidence.decides("smoke", 10)[0] is False  # the profile decides, not only the seed count
    assert evidence.decides("glyphs", 4) == (False, "n = 4, fewer than 5 seeds: no verdict")
    assert evidence.decides("glyphs", 5) == (True, "")
    decided = evidence.decides("smoke", 3)
    for diff in (_diff(0.03, 0.01, 0.05), _diff(0.0, -0.01, 0.015)):
        assert evidence.verdict(diff, SEOI, decided=decided) == (evidence.NO_VERDICT, decided[1])
        assert evidence.verdict(diff, SEOI, testable=(False, "gate"), decided=decided)[0] == evidence.NO_VERDICT
    assert evidence.NO_VERDICT not in evidence.WORDS


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


def test_the_gate_needs_a_margin_of_the_smallest_effect_at_the_adjusted_level_for_both_references():
    base = np.array([0.80, 0.82, 0.81, 0.79, 0.83])
    jitter = np.array([0.004, -0.004, 0.002, -0.002, 0.0])
    ok, reason = evidence.gate(base, {"raw input": base - 0.1 + jitter, "untrained network": base - 0.2}, SEOI)
    assert ok and reason.startswith("the trained control beats the raw input and the untrained network by more")
    # the audit's knife edge: a control +0.7 points above the raw input, its interval above 0 but not above 2
    ok, reason = evidence.gate(base, {"raw input": base - 0.007 + jitter, "untrained network": base - 0.2}, SEOI)
    assert evidence.paired(base - 0.007 + jitter, base)["ci"][0] > 0  # the old rule would have passed it
    assert not ok and reason.startswith("the trained control is not shown to beat the raw input by 2 points (+0.7")
    noisy = base - 0.05 + np.array([0.1, -0.1, 0.08, -0.08, 0.0])  # +5 points, but too noisy at 5 seeds
    ok, reason = evidence.gate(base, {"raw input": base - 0.1 + jitter, "untrained network": noisy}, SEOI)
    assert not ok and "untrained network" in reason
    # the margin is read at the level given: an interval above 2 at 95% need not be above 2 at 99.4%
    ref = base - 0.03 + np.array([0.008, -0.008, 0.006, -0.006, 0.0])
    levels = [c for c in (0.95, 1 - 0.05 / 8) if evidence.paired(ref, base, c)["ci"][0] > SEOI]
    assert levels == [0.95]
    assert evidence.gate(base, {"raw input": ref}, SEOI, 0.95)[0]
    assert not evidence.gate(base, {"raw input": ref}, SEOI, 1 - 0.05 / 8)[0]
    assert evidence.gate(base, {}, SEOI)[0] is False


def test_the_gate_needs_room_for_the_smallest_effect_below_the_ceiling():
    # a control 20 points above both references, at a mean of 98.5%: a gain of 2 points cannot show
    high = np.array([0.985, 0.98, 0.99, 0.985, 0.985])
    refs = {"raw input": high - 0.2, "untrained network": high - 0.3 + np.array([0.01, -0.01, 0.0, 0.005, -0.005])}
    ok, reason = evidence.gate(high, refs, SEOI)
    assert not ok and reason == ("the trained control reaches 98.5%, less than 2 points below 100: no room for the "
                                 "smallest effect")
    assert evidence.gate(high - 0.01, {k: v - 0.01 for k, v in refs.items()}, SEOI)[0]  # 97.5%: room for 2
    assert evidence.gate(high, refs, 0.01)[0]  # a smaller effect of interest fits in the room


def _holm_by_loop(p, alpha=0.05):
    """Holm's procedure as its paper states it: reject the smallest p's in turn while p_(i) <= alpha / (m - i)."""
    order, rejected = sorted(range(len(p)), key=lambda i: p[i]), set()
    for i, j in enumerate(order):
        if p[j] > alpha / (len(p) - i):
            break
        rejected.add(j)
    return rejected


def test_holm_rejects_what_the_step_down_loop_rejects():
    rng = np.random.default_rng(1)
    for _ in range(300):
        p = rng.uniform(0, 0.03, rng.integers(1, 12)) ** rng.uniform(0.5, 2)
        adjusted = evidence.holm(p)
        assert {i for i, q in enumerate(adjusted) if q <= 0.05} == _holm_by_loop(list(p))
        assert (adjusted >= p).all() and (adjusted <= 1).all()
    got = evidence.holm([0.01, np.nan, 0.04, 0.03])  # nan is no test: left out of m
    assert np.isnan(got[1]) and got[[0, 2, 3]] == pytest.approx([0.03, 0.06, 0.06])


def test_word_p_decides_at_the_chapters_level_exactly_when_the_interval_does():
    rng = np.random.default_rng(2)
    for _ in range(400):
        n, m = int(rng.integers(3, 11)), int(rng.integers(1, 12))
        a = rng.normal(0.5, 0.02, n)
        b = a + rng.normal(rng.uniform(-0.04, 0.04), rng.uniform(0.002, 0.03), n)
        diff = evidence.paired(a, b, evidence.adjusted_confidence(m))
        word, _ = evidence.verdict(diff, SEOI)
        p = evidence.word_p(diff, word, SEOI)
        assert (p < 0.05 / m) == (word in ("supported", "contradicted", "no effect detected")), (word, p, m)
    assert np.isnan(evidence.word_p(_diff(0.03, 0.01, 0.05), "not testable here", SEOI))


def _seeds_with(mean, std, n, rng):
    """n per-seed differences whose mean and std (ddof=1) are exactly ``mean`` and ``std``."""
    z = rng.normal(0, 1, n)
    return mean + std * (z - z.mean()) / z.std(ddof=1)


def test_seeds_for_word_is_where_the_verdict_of_seeds_with_that_mean_and_spread_turns_decisive():
    # the projection against the verdict itself: n seeds built with the projected mean and spread get the word,
    # n - 1 such seeds do not (independent of the closed form: paired() and verdict() on actual values)
    rng = np.random.default_rng(3)
    checked = 0
    for _ in range(300):
        n0, m = int(rng.integers(5, 11)), int(rng.integers(1, 20))
        confidence = evidence.adjusted_confidence(m)
        diff = evidence.paired(np.zeros(n0), _seeds_with(rng.uniform(-0.04, 0.04), rng.uniform(0.005, 0.06), n0, rng),
                               confidence)
        if evidence.verdict(diff, SEOI)[0] != "inconclusive":
            continue
        n, word = evidence.seeds_for_word(diff, SEOI, most=5000)
        assert n is not None and n > n0
        at = evidence.paired(np.zeros(n), _seeds_with(diff["mean"], diff["std"], n, rng), confidence)
        before = evidence.paired(np.zeros(n - 1), _seeds_with(diff["mean"], diff["std"], n - 1, rng), confidence)
        assert evidence.verdict(at, SEOI)[0] == word and evidence.verdict(before, SEOI)[0] == "inconclusive"
        checked += 1
    assert checked > 100


def test_seeds_for_word_names_each_word_and_says_none_where_it_cannot_project():
    rng = np.random.default_rng(4)
    spread = {"std": 0.03, "n": 10, "confidence": 0.99}
    assert evidence.seeds_for_word({"mean": 0.01, **spread}, SEOI)[1] == "supported"
    assert evidence.seeds_for_word({"mean": -0.01, **spread}, SEOI)[1] == "contradicted"
    assert evidence.seeds_for_word({"mean": 0.0, **spread}, SEOI)[1] == "no effect detected"
    # a word the seeds already give is given at their own count
    decided = evidence.paired(np.zeros(10), _seeds_with(0.03, 0.01, 10, rng), 0.99)
    assert evidence.verdict(decided, SEOI)[0] == "supported"
    assert evidence.seeds_for_word(decided, SEOI) == (10, "supported")
    # no spread, one seed, or no word within the cap: no projection
    assert evidence.seeds_for_word(evidence.paired([0.5, 0.5], [0.6, 0.6]), SEOI) == (None, None)
    assert evidence.seeds_for_word(evidence.paired([0.5], [0.6]), SEOI) == (None, None)
    assert evidence.seeds_for_word({"mean": 1e-4, **spread}, 1e-4 * 1.001, most=100) == (None, None)


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


def _sign_flip_loop(d):
    """The exact sign-flip p written as its definition: every pattern of signs, one at a time."""
    observed = abs(sum(d))
    hits = [abs(sum(s * x for s, x in zip(signs, d))) >= observed - 1e-12
            for signs in itertools.product((1, -1), repeat=len(d))]
    return sum(hits) / len(hits)


@pytest.mark.parametrize("seed", range(5))
def test_sign_flip_p_is_the_exact_randomisation_test(seed):
    rng = np.random.default_rng(seed)
    a = rng.uniform(0.5, 0.9, 9)
    b = a + rng.normal(0.01 * seed, 0.02, 9)
    p = evidence.sign_flip_p(b - a)
    assert p == pytest.approx(_sign_flip_loop(list(b - a)))
    # scipy's permutation test of paired samples flips each pair (2^9 < n_resamples: it enumerates them all)
    reference = stats.permutation_test((b, a), lambda x, y: np.mean(x - y), permutation_type="samples",
                                       n_resamples=10_000, alternative="two-sided")
    assert p == pytest.approx(reference.pvalue)
    assert evidence.paired(a, b)["p_sign_flip"] == p


def test_sign_flip_p_bounds_and_bad_inputs():
    assert evidence.sign_flip_p([0.01] * 10) == pytest.approx(2 / 2**10)  # all the same sign: the two extremes
    assert evidence.sign_flip_p([0.0, 0.0, 0.0]) == 1.0
    assert evidence.sign_flip_p([0.01, -0.01]) == 1.0
    assert np.isnan(evidence.sign_flip_p([0.3]))
    assert np.isnan(evidence.paired([0.5, 0.6], [0.51, 0.61])["p_sign_flip"])  # no spread: no test, as for t
    with pytest.raises(ValueError):
        evidence.sign_flip_p([0.1, float("nan")])


@pytest.mark.parametrize("shift", [0.0, 0.004, 0.01])
def test_past_twenty_seeds_the_sign_flip_p_is_drawn_and_close_to_the_exact_one(shift):
    # 22 seeds: 4 million patterns, still countable here (every pattern's sum, doubling per difference), while the
    # package draws 100,000; within four standard errors of the exact p
    d = np.random.default_rng(5).normal(shift, 0.02, 22)
    sums = np.zeros(1)
    for x in d:
        sums = np.concatenate([sums + x, sums - x])
    exact = float(np.mean(np.abs(sums) >= abs(d.sum()) - 1e-12))
    p = evidence.sign_flip_p(d)
    assert abs(p - exact) < 4 * np.sqrt(max(exact * (1 - exact), 1e-6) / evidence.SIGN_FLIP_DRAWS) + 1e-5
    assert evidence.sign_flip_p(d) == p  # a fixed generator: a report reads the same twice
    assert evidence.paired(np.zeros(22), d)["p_sign_flip"] == p


def test_a_drawn_sign_flip_p_never_says_zero():
    p = evidence.sign_flip_p(np.full(evidence.MAX_SIGN_FLIP_SEEDS + 5, 0.01))  # exact p: 2 / 2^25
    assert p == pytest.approx(1 / (1 + evidence.SIGN_FLIP_DRAWS))


def test_p_text_names_both_tests():
    d = evidence.paired([0.50, 0.52, 0.51, 0.50], [0.53, 0.55, 0.52, 0.54])
    assert evidence.p_text(d) == f"p = {d['p']:.3f} (t), {d['p_sign_flip']:.3f} (sign-flip)"
    assert evidence.p_text(evidence.paired([0.5], [0.6])) == ""
