"""Numbers and row labels as text, for tables, pages and figures alike: no torch, no plotting, so that the verdict
and page modules (:mod:`~dml_tutorial.claims`, :mod:`~dml_tutorial.report`) write them without loading either.

The code writes the papers' symbols in ASCII shorthand (``L_Trip``, ``L^W``, ``L_rim``); each function here writes
them as its medium's math does.
"""

from __future__ import annotations

import html
import re

import numpy as np

_SUB_SUP = re.compile(r"\bL([_^])([\w]+)")  # the code's ASCII shorthand: L_Trip, L^W, L_rim


def mean_std(values, digits: int = 1, scale: float = 100.0) -> str:
    """``"mean ± std"`` of a list of fractions, as percentages by default (std over seeds, ddof=1)."""
    v = np.asarray(values, dtype=float) * scale
    if len(v) == 1:
        return f"{v[0]:.{digits}f}"
    return f"{v.mean():.{digits}f} ± {v.std(ddof=1):.{digits}f}"


def label_html(name) -> str:
    """A row label as HTML, with the code's ASCII shorthand for the papers' symbols written as the prose's math
    writes them: ``"L_Trip + L^W"`` -> *L*<sub>Trip</sub> + *L*<sup>W</sup>. Anything else is escaped as text."""
    tags = {"_": "sub", "^": "sup"}
    return _SUB_SUP.sub(lambda m: f"<i>L</i><{tags[m[1]]}>{m[2]}</{tags[m[1]]}>", html.escape(str(name)))


def label_tex(name) -> str:
    """The same label for a Markdown page with dollar math: ``"L_Trip + L^W"`` -> ``$L_{\\text{Trip}}$ +
    $L^{\\text{W}}$``."""
    return _SUB_SUP.sub(lambda m: f"$L{m[1]}{{\\text{{{m[2]}}}}}$", str(name))


def label_mpl(name) -> str:
    """The same label for matplotlib's mathtext: ``"L_Trip + L^W"`` -> ``$L_{\\mathrm{Trip}}$ + $L^{\\mathrm{W}}$``."""
    return _SUB_SUP.sub(lambda m: f"$L{m[1]}{{\\mathrm{{{m[2]}}}}}$", str(name))
