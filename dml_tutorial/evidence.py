"""What a comparison shows: paired differences over seeds with confidence intervals adjusted for the chapter's
family of comparisons, the smallest effect the seeds could detect at that level, and one verdict vocabulary for the
whole book.

A seed fixes the initialisation, the batches and the label noise, so two methods run with the same seeds are
compared seed by seed (a paired t-test on the per-seed differences). Our runs are a replication in a proxy setting
(our data and backbone, not the paper's), so a verdict says what our test bed shows about the paper's claim, in
five words (:data:`WORDS`), from the claim's interval *adjusted* for the m comparisons of its chapter at one scale
(Bonferroni: each interval at confidence 1 - 0.05 / m, so that all m hold together with 95% probability). With
delta the claim's smallest effect of interest (stated in points on the test bed, with its reason, in
:mod:`dml_tutorial.claims`):

- **supported**: the adjusted interval lies above 0; "smaller than reported" is added when its upper end, relative
  to our baseline, also lies below the paper's relative gain (paper gain / paper baseline);
- **contradicted**: the adjusted interval lies below 0;
- **no effect detected**: the whole adjusted interval lies within -delta and +delta (two-sided: neither a gain nor
  a harm of the size that matters);
- **inconclusive**: anything else (the interval holds 0 and reaches past -delta or +delta, or one seed);
- **not testable here**: the one gate rule (:func:`gate`) fails: the claim's control (its clean-label or no-term
  baseline) does not beat the raw input and the untrained network by at least delta at the adjusted level, or it
  leaves less than delta below the metric's ceiling (100%), so that the claimed gain could not show.

Before any of these: a run that only checks the pipeline (the smoke profile, or fewer than :data:`MIN_SEEDS` seeds)
gets no word at all (:data:`NO_VERDICT`, :func:`decides`), only its numbers. Each word is decided at the chapter's
family; :func:`word_p` gives the p-value of that decision, so that :func:`holm` can adjust every test the book
made (each cell with one of the first four words) as one family, beside the chapter's. For an *inconclusive*
cell, :func:`seeds_for_word` projects the seeds a decisive word would need if the seeds' mean and spread held.

Values are fractions (a metric in [0, 1]); :func:`describe` prints them in points (%).
"""

from __future__ import annotations

import numpy as np
from scipy import stats

WORDS = ("supported", "contradicted", "no effect detected", "inconclusive", "not testable here")
SMALLER = "smaller than reported"  # the qualifier of a supported effect below the paper's relative gain
#: What a run that only checks the pipeline shows instead of a word.
NO_VERDICT = "no verdict"
#: The fewest seeds a word is decided on, and the profiles that only check the pipeline (a few seeds on offline
#: data: their Bonferroni multipliers reach 13 standard errors, so a word there carries no information).
MIN_SEEDS = 5
PIPELINE_PROFILES = ("smoke",)
#: How :func:`decides` names a pipeline check in its reason.
PIPELINE_CHECK = "a pipeline check"


def paired(a, b, confidence: float = 0.95) -> dict:
    """How much ``b`` beats ``a``, paired by seed (``a[i]`` and ``b[i]`` share seed i): the mean and std (ddof=1)
    of the differences ``b - a``, the ``confidence`` interval of the mean (Student's t, n - 1 degrees of freedom),
    the paired t-test's two-sided p-value, the exact sign-flip p (:func:`sign_flip_p`, which assumes no normal
    distribution), n, and the minimum detectable effect at the interval's own level (80% power, two-sided test at
    1 - ``confidence``). With one seed, or no spread, the interval collapses to the mean and p is ``nan``."""
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if a.shape != b.shape or a.ndim != 1 or len(a) == 0:
        raise ValueError(f"need two equally long, non-empty lists of per-seed values, got {a.shape} and {b.shape}")
    d = b - a
    n, mean = len(d), float(d.mean())
    sd = float(d.std(ddof=1)) if n > 1 else 0.0
    if n < 2 or sd == 0:
        return {"mean": mean, "std": sd, "ci": (mean, mean), "p": float("nan"), "p_sign_flip": float("nan"), "n": n,
                "mde": float("nan"), "confidence": confidence}
    se = sd / np.sqrt(n)
    half = stats.t.ppf(0.5 + confidence / 2, n - 1) * se
    p = float(2 * stats.t.sf(abs(mean) / se, n - 1))
    mde = float((stats.t.ppf(0.5 + confidence / 2, n - 1) + stats.t.ppf(0.8, n - 1)) * se)
    return {"mean": mean, "std": sd, "ci": (mean - half, mean + half), "p": p, "p_sign_flip": sign_flip_p(d), "n": n,
            "mde": mde, "confidence": confidence}


#: The most seeds :func:`sign_flip_p` enumerates (2^n sign patterns: a million at 20); beyond, it draws
#: :data:`SIGN_FLIP_DRAWS` patterns at random.
MAX_SIGN_FLIP_SEEDS = 20
SIGN_FLIP_DRAWS = 100_000


def sign_flip_p(differences) -> float:
    """The exact two-sided sign-flip (randomisation) test of per-seed ``differences`` (Fisher 1935, Sec. 21):
    under the null hypothesis each difference is as likely to have come out with the other sign (its distribution
    symmetric about 0), so each of the 2^n patterns of signs is equally likely; p is the fraction of the patterns
    whose mean lies at least as far from 0 as the observed one (the observed pattern and its mirror included, so p
    is at least 2 / 2^n: 0.002 at 10 seeds). Unlike the t-test it assumes no normal distribution. ``nan`` for fewer
    than two differences; all of them 0 gives 1. Beyond :data:`MAX_SIGN_FLIP_SEEDS` seeds the patterns are too
    many to list, and p is estimated from :data:`SIGN_FLIP_DRAWS` random ones (:func:`_drawn_sign_flip_p`)."""
    d = np.asarray(differences, dtype=float)
    if d.ndim != 1 or not np.isfinite(d).all():
        raise ValueError(f"need a list of finite per-seed differences, got {differences!r}")
    if len(d) < 2:
        return float("nan")
    if len(d) > MAX_SIGN_FLIP_SEEDS:
        return _drawn_sign_flip_p(d)
    sums = np.zeros(1)
    for x in d:  # every pattern's signed sum, doubling the patterns with each difference
        sums = np.concatenate([sums + x, sums - x])
    observed = abs(d.sum())
    return float(np.mean(np.abs(sums) >= observed - 1e-9 * max(1.0, observed)))


def _drawn_sign_flip_p(d: np.ndarray, draws: int = SIGN_FLIP_DRAWS, chunk: int = 10_000) -> float:
    """The sign-flip p from ``draws`` random sign patterns (a fixed generator, so a report reads the same twice),
    counting the observed pattern as one of them: (1 + hits) / (1 + draws), which never says 0 and keeps the test
    valid (Phipson and Smyth 2010); its standard error is at most 0.0016 at 100,000 draws."""
    rng, observed, hits = np.random.default_rng(0), abs(d.sum()), 0
    for start in range(0, draws, chunk):
        signs = rng.choice((-1.0, 1.0), size=(min(chunk, draws - start), len(d)))
        hits += int((np.abs(signs @ d) >= observed - 1e-9 * max(1.0, observed)).sum())
    return (1 + hits) / (1 + draws)


def mean_interval(values, confidence: float = 0.95) -> dict:
    """The mean of per-seed ``values`` with its ``confidence`` interval (Student's t, n - 1 degrees of freedom):
    ``{"mean", "std" (ddof=1), "ci": (low, high), "n"}``; one value, or no spread, gives a zero-width interval."""
    v = np.asarray(values, dtype=float)
    if v.ndim != 1 or len(v) == 0 or not np.isfinite(v).all():
        raise ValueError(f"need a non-empty list of finite per-seed values, got {values!r}")
    n, mean = len(v), float(v.mean())
    sd = float(v.std(ddof=1)) if n > 1 else 0.0
    half = float(stats.t.ppf(0.5 + confidence / 2, n - 1) * sd / np.sqrt(n)) if n > 1 else 0.0
    return {"mean": mean, "std": sd, "ci": (mean - half, mean + half), "n": n}


def tied_ranks(values: dict, confidence: float = 0.95) -> dict:
    """``{name: rank}`` from ``{name: per-seed values}`` (higher is better; every method run on the same seeds, in
    the same order). Methods are ordered by their mean, so a rank never inverts the means. Going down that order,
    each method is compared with the first method of the current group by a paired t-test (:func:`paired`) at the
    Bonferroni-adjusted ``confidence`` over the ``m - 1`` comparisons: it shares that method's rank when the paired
    interval holds 0, else it starts a new group at its own position (competition ranking: "1, 1, 3"). Ties do not
    chain: where A ~ B and B ~ C but A and C separate, C starts a group below A (a chain once gave one rank to
    MAP@R 9.9 and 3.9 on the glyph bench)."""
    lengths = {len(v) for v in values.values()}
    if len(lengths) > 1:
        raise ValueError(f"paired ranks need every method on the same seeds, got {sorted(lengths)} values")
    order = sorted(values, key=lambda name: -float(np.mean(values[name])))
    level = adjusted_confidence(max(1, len(order) - 1), confidence)
    ranks, first = {}, None
    for i, name in enumerate(order):
        tied = first is not None and not paired(values[name], values[first], level)["ci"][0] > 0
        if not tied:
            first = name
        ranks[name] = ranks[first] if tied else i + 1
    return ranks


def adjusted_confidence(family: int, confidence: float = 0.95) -> float:
    """Bonferroni: each of ``family`` intervals at ``1 - (1 - confidence) / family``, so that all of them hold at
    once with probability ``confidence``."""
    if family < 1:
        raise ValueError(f"a family has at least one comparison, got {family}")
    return 1 - (1 - confidence) / family


def decides(profile: str | None, seeds: int) -> tuple[bool, str]:
    """Whether a run of ``profile`` over ``seeds`` seeds decides words at all: ``(False, reason)`` for a pipeline
    check (:data:`PIPELINE_PROFILES`, or fewer than :data:`MIN_SEEDS` seeds), where only the numbers are shown."""
    if profile in PIPELINE_PROFILES:
        return False, f"{profile} profile, n = {seeds}: {PIPELINE_CHECK}, no verdict"
    if seeds < MIN_SEEDS:
        return False, f"n = {seeds}, fewer than {MIN_SEEDS} seeds: no verdict"
    return True, ""


def gate(control, references: dict, smallest_effect: float, confidence: float = 0.95) -> tuple[bool, str]:
    """The one gate rule: can the claim show on this test bed? ``control``: the claim's control trained row per
    seed (its no-term baseline, on clean labels for a claim about noise); ``references``: ``{name: per-seed
    values}`` of the raw-input and untrained-network rows on the same seeds (and of the pretrained start, not
    fine-tuned, where a profile starts from one). It passes when, for every reference,
    the paired ``confidence`` interval (the claim's adjusted level) of control - reference lies above
    ``smallest_effect`` (fractions): training must beat what the input already holds by the size that matters.
    And the control's mean must lie at least ``smallest_effect`` below 1, the metric's ceiling (issue #49: a
    baseline at 98% leaves a claimed gain of 2 points no room to show, and its interval would read as "no effect
    detected" for want of room, not of effect). Returns ``(passes, reason)``."""
    if not references:
        return False, "no raw-input or untrained-network row was recorded with the control"
    for name, values in references.items():
        d = paired(values, control, confidence)
        if not d["ci"][0] > smallest_effect:
            return False, (f"the trained control is not shown to beat the {name} by {100 * smallest_effect:g} "
                           f"points ({100 * d['mean']:+.1f}, {100 * confidence:.1f}% CI {100 * d['ci'][0]:+.1f} "
                           f"to {100 * d['ci'][1]:+.1f})")
    top = float(np.mean(control))
    if 1 - top < smallest_effect:
        return False, (f"the trained control reaches {100 * top:.1f}%, less than {100 * smallest_effect:g} points "
                       "below 100: no room for the smallest effect")
    beaten = ("the raw input and the untrained network" if len(references) <= 2 else
              "the raw input, the untrained network and the pretrained start (not fine-tuned)")
    return True, f"the trained control beats {beaten} by more than {100 * smallest_effect:g} points"


def verdict(diff: dict, smallest_effect: float, *, paper_relative: float | None = None,
            base_mean: float | None = None, testable: tuple[bool, str] = (True, ""),
            decided: tuple[bool, str] = (True, "")) -> tuple[str, str]:
    """``(word, reason)`` for a claimed improvement: ``diff`` from :func:`paired` at the family-adjusted confidence
    (:func:`adjusted_confidence`), the claim's ``smallest_effect`` of interest (a fraction), the paper's relative
    gain (its gain over its baseline; ``None`` when it gives only a direction) and our baseline's mean (for
    "smaller than reported"), the test bed's :func:`gate` and whether the run decides words (:func:`decides`).
    The word is :data:`NO_VERDICT` or one of :data:`WORDS`; the rules are the module docstring's, tested in this
    order."""
    if not decided[0]:
        return NO_VERDICT, decided[1]
    if not testable[0]:
        return "not testable here", testable[1]
    if diff["n"] < 2 or np.isnan(diff["p"]):
        return "inconclusive", "one seed, or no spread between seeds: no interval"
    low, high = diff["ci"]
    level = f"{100 * diff.get('confidence', 0.95):.1f}% interval"
    if low > 0:
        if paper_relative is not None and base_mean and high / base_mean < paper_relative:
            return "supported", (f"{SMALLER}: the {level} lies above 0, and below the paper's relative gain "
                                 f"({100 * paper_relative:+.0f}% of its baseline; ours at most "
                                 f"{100 * high / base_mean:+.0f}%)")
        return "supported", f"the {level} lies above 0"
    if high < 0:
        return "contradicted", f"the {level} lies below 0: the opposite effect"
    effect = f"{100 * smallest_effect:.1f} points"
    if -smallest_effect < low and high < smallest_effect:
        return "no effect detected", (f"the {level} lies within -{effect} and +{effect}, the smallest effect of "
                                      "interest either way")
    reach = "a gain" if high >= smallest_effect else "a harm"
    if high >= smallest_effect and low <= -smallest_effect:
        reach = "a gain or a harm"
    return "inconclusive", (f"the {level} holds 0 and reaches {reach} of {effect}, the smallest effect of "
                            f"interest; at this level these seeds would detect a gain of about "
                            f"{100 * diff['mde']:.1f} points four times in five")


def word_p(diff: dict, word: str, smallest_effect: float) -> float:
    """The p-value of the decision behind ``word``, on the same footing as the adjusted interval: at the chapter's
    Bonferroni level 1 - 0.05 / m, a cell is decisive exactly when this p is below 0.05 / m. *Supported* and
    *contradicted*: the paired t-test's two-sided p against 0. *No effect detected*: twice the larger of the two
    one-sided p-values against -delta and +delta (the two one-sided tests, TOST; doubled because the word reads a
    two-sided interval). *Inconclusive*: the smaller of the two, since both tests were made and neither decided.
    ``nan`` for the other words (no test was made), or without an interval."""
    if word not in WORDS[:4] or diff["n"] < 2 or np.isnan(diff["p"]):
        return float("nan")
    se, df = diff["std"] / np.sqrt(diff["n"]), diff["n"] - 1
    above = stats.t.sf((diff["mean"] + smallest_effect) / se, df)  # H0: the effect is at most -delta
    below = stats.t.cdf((diff["mean"] - smallest_effect) / se, df)  # H0: the effect is at least +delta
    equivalence = float(min(1.0, 2 * max(above, below)))
    return {"supported": float(diff["p"]), "contradicted": float(diff["p"]), "no effect detected": equivalence,
            "inconclusive": min(float(diff["p"]), equivalence)}[word]


#: The most seeds :func:`seeds_for_word` projects to; beyond it a cell is said to need more.
MOST_SEEDS = 1000


def seeds_for_word(diff: dict, smallest_effect: float, most: int = MOST_SEEDS) -> tuple[int | None, str | None]:
    """``(n, word)``: the fewest seeds at which :func:`verdict` would give a decisive word, and that word, if more
    seeds kept ``diff``'s mean, its spread (std, ddof=1) and its confidence (the chapter's family unchanged). The
    interval's half-width t_{n-1} s / sqrt(n) shrinks with n until the interval leaves 0 (*supported* or
    *contradicted*, tested first, as :func:`verdict` does) or fits within -delta and +delta (*no effect
    detected*; delta = ``smallest_effect``). A projection from the seeds that ran, not a promise: their mean and
    spread are estimates too. ``(None, None)`` without a spread (one seed, or equal differences), or when no n up
    to ``most`` decides (a mean within a hair of 0 or of +/-delta)."""
    if diff["n"] < 2 or not diff["std"] > 0:
        return None, None
    n = np.arange(diff["n"], max(most, diff["n"]) + 1)
    half = stats.t.ppf(0.5 + diff["confidence"] / 2, n - 1) * diff["std"] / np.sqrt(n)
    away = half < abs(diff["mean"])  # the interval leaves 0
    within = abs(diff["mean"]) + half < smallest_effect  # the interval fits within -delta and +delta
    if not (away | within).any():
        return None, None
    i = int(np.argmax(away | within))
    word = ("supported" if diff["mean"] > 0 else "contradicted") if away[i] else "no effect detected"
    return int(n[i]), word


def holm(pvalues) -> np.ndarray:
    """Holm's step-down adjustment of ``pvalues`` (one family; ``nan`` entries are left out and stay ``nan``): the
    i-th smallest p becomes the running maximum of (m - j + 1) p_(j) over j <= i, capped at 1. A hypothesis is
    rejected at family-wise level alpha when its adjusted p is at most alpha."""
    p = np.asarray(pvalues, dtype=float)
    out = np.full(p.shape, np.nan)
    idx = np.flatnonzero(np.isfinite(p))
    order = idx[np.argsort(p[idx], kind="stable")]
    m = len(order)
    out[order] = np.minimum(1.0, np.maximum.accumulate((m - np.arange(m)) * p[order]))
    return out


def describe(diff: dict) -> str:
    """``"+1.6 points (95% CI −1.4 to +4.6, p = 0.15, 3 seeds)"``; ``"+1.4 points (the same in all 3 seeds)"`` when
    the differences do not vary (discrete metrics on small test sets can do that)."""
    if diff["n"] > 1 and diff["std"] == 0:
        return f"{100 * diff['mean']:+.1f} points (the same in all {diff['n']} seeds)"
    low, high = diff["ci"]
    p = "" if np.isnan(diff["p"]) else ", p < 0.01" if diff["p"] < 0.005 else f", p = {diff['p']:.2f}"
    return (f"{100 * diff['mean']:+.1f} points (95% CI {100 * low:+.1f} to {100 * high:+.1f}{p}, "
            f"{diff['n']} seed{'s' if diff['n'] != 1 else ''})")


def p_text(diff: dict) -> str:
    """``"p = 0.004 (t), 0.002 (sign-flip)"``: the paired t-test's p beside the exact sign-flip p of :func:`paired`
    (three decimals; ``"< 0.001"`` below it); ``""`` without a test."""
    def one(p):
        return "< 0.001" if p < 0.001 else f"{p:.3f}"

    if np.isnan(diff["p"]):
        return ""
    flip = diff.get("p_sign_flip", float("nan"))
    return f"p = {one(diff['p'])} (t)" + ("" if np.isnan(flip) else f", {one(flip)} (sign-flip)")
