"""Searches along a ladder of values (issue #48: a best at the edge of what was tried is not a best shot): the
next values of a ladder beyond a best, and a one-axis walk that goes on until its best is flanked. The one
best-shot search of every chapter (:mod:`dml_tutorial.search`) steps with :func:`beyond`; :func:`walk` is the
one-axis walk the benchmarks of the old searches replay (``benchmarks/bench_dcdl_edges.py``).

    ladder.walk(lambda x: -(x - 3e-3) ** 2, [1e-4, 1e-3], [1e-4, 3e-4, 1e-3, 3e-3, 1e-2])
    # {1e-4: ..., 1e-3: ..., 3e-3: ..., 1e-2: ...}: 3e-3 is flanked by 1e-3 and 1e-2
"""
from __future__ import annotations

import numpy as np


def beyond(x: float, tried: list, ladder) -> list:
    """The values of ``ladder`` next to ``x`` on each side where nothing ``tried`` lies beyond ``x`` (both sides for
    a lone point), short of the ladder's ends."""
    ladder = sorted(ladder)
    at = np.flatnonzero(np.isclose(x, ladder))
    if not len(at):
        raise ValueError(f"{x:g} is not on the ladder {ladder}")
    i = int(at[0])
    up = [ladder[i + 1]] if x >= max(tried) and i + 1 < len(ladder) else []
    down = [ladder[i - 1]] if x <= min(tried) and i > 0 else []
    return up + down


def walk(score, start, ladder=None) -> dict:
    """A search along one axis that ends with its best flanked (issue #48: a best at the edge of a grid is not a
    best shot): ``score(x)`` at each value of ``start``, then, while the best so far is the highest or the lowest
    value tried, ``score`` at the next value of ``ladder`` beyond it (:func:`beyond`), until a tried value lies on
    each side of the best or the ladder ends there (a value tried, not every rung between: ``start`` should be
    neighbouring rungs). Without a ``ladder`` it scores ``start`` alone (a grid).
    Returns ``{x: score}`` in the order tried; the best is its highest score (ties: the first tried)."""
    start = list(start)
    if not start:
        raise ValueError("need at least one value to start from")
    tried = {x: score(x) for x in start}
    while ladder:
        steps = beyond(max(tried, key=tried.get), list(tried), ladder)
        if not steps:
            return tried
        tried.update({x: score(x) for x in steps})
    return tried


def sure_steps(start, ladder=None) -> int:
    """How many values :func:`walk` scores beyond ``start`` whatever the scores, what a plan can count in advance:
    one where it starts from two values with a ladder value beyond each (the better of two always sits at an edge),
    else none. The rest of a walk is counted once it has run."""
    start, ladder = sorted(start), sorted(ladder or [])
    return int(len(start) == 2 and bool(ladder) and ladder[0] < start[0] and ladder[-1] > start[-1])


def planned(start, ladder=None) -> int:
    """How many values :func:`walk` scores whatever the scores: ``start`` and its :func:`sure_steps`."""
    return len(start) + sure_steps(start, ladder)


def unplanned(tried, start, ladder=None) -> int:
    """How many of the values a :func:`walk` ``tried`` lie beyond what a plan counted (:func:`planned`): the
    trainings a chapter adds to its plan once the walk has run."""
    return len(tried) - planned(start, ladder)
