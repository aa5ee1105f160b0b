"""What a comparison shows: paired differences over seeds with confidence intervals adjusted for the chapter's
family of comparisons, the smallest effect the seeds could detect, and one verdict vocabulary for the whole book.

A seed fixes the initialisation, the batches and the label noise, so two methods run with the same seeds are
compared seed by seed (a paired t-test on the per-seed differences). Our runs are a replication in a proxy setting
(our data and backbone, not the paper's), so a verdict says what our test bed shows about the paper's claim, in
five words (:data:`WORDS`), from the claim's interval *adjusted* for the m comparisons of its chapter at one scale
(Bonferroni: each interval at confidence 1 - 0.05 / m, so that all m hold together with 95% probability):

- **supported**: the adjusted interval lies above 0; "smaller than reported" is added when its upper end, relative
  to our baseline, also lies below the paper's relative gain (paper gain / paper baseline);
- **contradicted**: the adjusted interval lies below 0;
- **no effect detected**: the interval holds 0 and lies below the claim's smallest effect of interest (stated in
  points on the test bed, with its reason, in :mod:`dml_tutorial.claims`);
- **inconclusive**: the interval holds 0 and that smallest effect (or there is only one seed);
- **not testable here**: the test bed's gate fails (:func:`gate`): the claim's baseline trained row does not beat
  the raw input and the untrained network, or leaves no headroom for the smallest effect of interest.

Values are fractions (a metric in [0, 1]); :func:`describe` prints them in points (%).
"""

from __future__ import annotations

import numpy as np
from scipy import stats

WORDS = ("supported", "contradicted", "no effect detected", "inconclusive", "not testable here")
SMALLER = "smaller than reported"  # the qualifier of a supported effect below the paper's relative gain


def paired(a, b, confidence: float = 0.95) -> dict:
    """How much ``b`` beats ``a``, paired by seed (``a[i]`` and ``b[i]`` share seed i): the mean and std (ddof=1)
    of the differences ``b - a``, the ``confidence`` interval of the mean (Student's t, n - 1 degrees of freedom),
    the paired t-test's two-sided p-value, n, and the minimum detectable effect (80% power, 5% level). With one
    seed, or no spread, the interval collapses to the mean and p is ``nan``."""
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if a.shape != b.shape or a.ndim != 1 or len(a) == 0:
        raise ValueError(f"need two equally long, non-empty lists of per-seed values, got {a.shape} and {b.shape}")
    d = b - a
    n, mean = len(d), float(d.mean())
    sd = float(d.std(ddof=1)) if n > 1 else 0.0
    if n < 2 or sd == 0:
        return {"mean": mean, "std": sd, "ci": (mean, mean), "p": float("nan"), "n": n, "mde": float("nan"),
                "confidence": confidence}
    se = sd / np.sqrt(n)
    half = stats.t.ppf(0.5 + confidence / 2, n - 1) * se
    p = float(2 * stats.t.sf(abs(mean) / se, n - 1))
    mde = float((stats.t.ppf(0.975, n - 1) + stats.t.ppf(0.8, n - 1)) * se)
    return {"mean": mean, "std": sd, "ci": (mean - half, mean + half), "p": p, "n": n, "mde": mde,
            "confidence": confidence}


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


def gate(base, references: dict, smallest_effect: float, confidence: float = 0.95) -> tuple[bool, str]:
    """Can the claim show on this test bed? ``base``: the claim's baseline trained row, per seed; ``references``:
    ``{name: per-seed values}`` of the raw-input and untrained-network rows on the same seeds. It passes when the
    baseline beats every reference (paired ``confidence`` interval of base - reference above 0) and its headroom,
    1 - mean(base), exceeds ``smallest_effect`` (fractions). Returns ``(passes, reason)``."""
    if not references:
        return False, "no raw-input or untrained-network row was recorded with the baseline"
    for name, values in references.items():
        d = paired(values, base, confidence)
        if not d["ci"][0] > 0:
            return False, (f"the trained baseline does not beat the {name} ({100 * d['mean']:+.1f} points, "
                           f"{100 * confidence:.0f}% CI {100 * d['ci'][0]:+.1f} to {100 * d['ci'][1]:+.1f})")
    headroom = 1 - float(np.mean(base))
    if headroom <= smallest_effect:
        return False, (f"the baseline leaves {100 * headroom:.1f} points of headroom, not more than the smallest "
                       f"effect of interest ({100 * smallest_effect:.1f})")
    return True, "the trained baseline beats the raw input and the untrained network"


def verdict(diff: dict, smallest_effect: float, *, paper_relative: float | None = None,
            base_mean: float | None = None, testable: tuple[bool, str] = (True, "")) -> tuple[str, str]:
    """``(word, reason)`` for a claimed improvement: ``diff`` from :func:`paired` at the family-adjusted confidence
    (:func:`adjusted_confidence`), the claim's ``smallest_effect`` of interest (a fraction), the paper's relative
    gain (its gain over its baseline; ``None`` when it gives only a direction) and our baseline's mean (for
    "smaller than reported"), and the test bed's :func:`gate`. The word is one of :data:`WORDS`; the rules are the
    module docstring's, tested in this order."""
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
    if high < smallest_effect:
        return "no effect detected", (f"the {level} holds 0 and excludes a gain of {100 * smallest_effect:.1f} "
                                      "points, the smallest effect of interest")
    return "inconclusive", (f"the {level} holds 0 and a gain of {100 * smallest_effect:.1f} points, the smallest "
                            f"effect of interest; with these seeds only a gain of about {100 * diff['mde']:.1f} points "
                            "would be detected four times in five")


def describe(diff: dict) -> str:
    """``"+1.6 points (95% CI −1.4 to +4.6, p = 0.15, 3 seeds)"``; ``"+1.4 points (the same in all 3 seeds)"`` when
    the differences do not vary (discrete metrics on small test sets can do that)."""
    if diff["n"] > 1 and diff["std"] == 0:
        return f"{100 * diff['mean']:+.1f} points (the same in all {diff['n']} seeds)"
    low, high = diff["ci"]
    p = "" if np.isnan(diff["p"]) else ", p < 0.01" if diff["p"] < 0.005 else f", p = {diff['p']:.2f}"
    return (f"{100 * diff['mean']:+.1f} points (95% CI {100 * low:+.1f} to {100 * high:+.1f}{p}, "
            f"{diff['n']} seed{'s' if diff['n'] != 1 else ''})")
