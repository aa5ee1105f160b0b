"""What a comparison shows: paired differences over seeds with a 95% confidence interval, the smallest effect the
seeds could detect, and one verdict vocabulary for the whole book.

A seed fixes the initialisation, the batches and the label noise, so two methods run with the same seeds are
compared seed by seed (a paired t-test on the per-seed differences). The verdict of a claimed gain:

- **reproduced**: the 95% confidence interval of our gain lies above 0 (the paper's direction);
- **not reproduced**: the interval lies below 0, or below the paper's gain (we would have seen that gain);
- **inconclusive**: the interval holds 0 and the paper's gain (the seeds cannot tell them apart), or there is only
  one seed. The minimum detectable effect (80% power at the 5% level) says how many points the seeds could resolve.

Values are fractions (a metric in [0, 1]); :func:`describe` prints them in points (%). These are per-comparison
intervals: a chapter that makes many comparisons says so, since about one in twenty will exclude 0 by chance.
"""

from __future__ import annotations

import numpy as np
from scipy import stats

WORDS = ("reproduced", "not reproduced", "inconclusive")


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
        return {"mean": mean, "std": sd, "ci": (mean, mean), "p": float("nan"), "n": n, "mde": float("nan")}
    se = sd / np.sqrt(n)
    half = stats.t.ppf(0.5 + confidence / 2, n - 1) * se
    p = float(2 * stats.t.sf(abs(mean) / se, n - 1))
    mde = float((stats.t.ppf(0.975, n - 1) + stats.t.ppf(0.8, n - 1)) * se)
    return {"mean": mean, "std": sd, "ci": (mean - half, mean + half), "p": p, "n": n, "mde": mde}


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
    """``{name: rank}`` from ``{name: per-seed values}`` (higher is better): a method's rank is 1 + the number of
    methods whose whole interval (:func:`mean_interval`) lies above its own, so methods whose intervals overlap
    share a rank unless a third separates them ("1, 1, 3": the third is below both)."""
    ci = {name: mean_interval(v, confidence)["ci"] for name, v in values.items()}
    return {name: 1 + sum(low > high for other, (low, _) in ci.items() if other != name)
            for name, (_, high) in ci.items()}


def verdict(diff: dict, paper_gain: float | None = None) -> tuple[str, str]:
    """``(word, reason)`` for a claimed improvement, from :func:`paired`'s result and the paper's own gain (a
    fraction; ``None`` when the paper claims only a direction). The word is one of :data:`WORDS`."""
    low, high = diff["ci"]
    if diff["n"] < 2 or np.isnan(diff["p"]):
        return "inconclusive", "one seed, or no spread between seeds: no interval"
    if paper_gain is not None and paper_gain <= 0:
        return "inconclusive", "the paper reports no gain here, so there is no improvement to reproduce"
    if low > 0:
        return "reproduced", "the 95% interval lies above 0"
    if high < 0:
        return "not reproduced", "the 95% interval lies below 0: the opposite effect"
    if paper_gain is not None and paper_gain > 0 and high < paper_gain:
        return "not reproduced", "the paper's gain lies above the 95% interval"
    return "inconclusive", (f"the 95% interval holds 0{' and the paper’s gain' if paper_gain else ''}; the seeds "
                            f"resolve about {100 * diff['mde']:.1f} points")


def describe(diff: dict) -> str:
    """``"+1.6 points (95% CI −1.4 to +4.6, p = 0.15, 3 seeds)"``; ``"+1.4 points (the same in all 3 seeds)"`` when
    the differences do not vary (discrete metrics on small test sets can do that)."""
    if diff["n"] > 1 and diff["std"] == 0:
        return f"{100 * diff['mean']:+.1f} points (the same in all {diff['n']} seeds)"
    low, high = diff["ci"]
    p = "" if np.isnan(diff["p"]) else ", p < 0.01" if diff["p"] < 0.005 else f", p = {diff['p']:.2f}"
    return (f"{100 * diff['mean']:+.1f} points (95% CI {100 * low:+.1f} to {100 * high:+.1f}{p}, "
            f"{diff['n']} seed{'s' if diff['n'] != 1 else ''})")



def claim(diff: dict, paper_gain: float | None = None) -> str:
    """One Markdown phrase for a chapter's conclusions: ``"**inconclusive** (the 95% interval holds 0 ...):
    +1.6 points (95% CI −1.4 to +4.6, p = 0.15, 3 seeds)"``."""
    word, reason = verdict(diff, paper_gain)
    return f"**{word}** ({reason}): {describe(diff)}"
