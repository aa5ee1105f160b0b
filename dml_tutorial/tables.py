"""Recorded tables, without torch or plotting: the names their rows share across chapters (the reference rows
every main table carries beside its trained rows, which :func:`dml_tutorial.experiment.references` measures and the
gate of :mod:`dml_tutorial.claims` asks every trained control to beat) and how a results table is shown, measured
beside the paper's numbers (:func:`results_table`, :func:`styled`)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from .labels import label_html, mean_std

#: The two reference rows every main table carries: the raw input (no network) and the untrained network.
REFERENCES = ("raw input", "untrained network")
#: The third reference row, where a profile starts from a pretrained trunk (``cfg.start``,
#: :func:`dml_tutorial.pretrain.load_start`): its features as they are, before any fine-tuning (ImageNet features
#: on CUB, in small). A fine-tuned row that does not beat it has learned nothing the start did not hold.
STARTED = "pretrained, not fine-tuned"


def results_table(measured: dict, paper: dict | None = None, digits: int = 1) -> pd.DataFrame:
    """A table with a "measured" column per metric (``{row: {metric: [values over seeds]}}``, shown as mean ± std
    in %) and, when given, the "paper reported" numbers beside them (``{row: {metric: number}}``, as quoted).
    A cell with no number (a row the paper does not have, a value it does not give) shows "–"."""
    rows = {}
    for name, metrics in measured.items():
        row = {}
        for metric, values in metrics.items():
            if paper and metric in paper.get(name, {}):
                row[(metric, "paper")] = paper[name][metric]
            row[(metric, "measured")] = mean_std(np.atleast_1d(values), digits)
        rows[name] = row
    table = pd.DataFrame.from_dict(rows, orient="index")
    metrics = list(dict.fromkeys(c[0] for c in table.columns))  # each metric's paper column before its measured one
    table = table[[(m, kind) for m in metrics for kind in ("paper", "measured") if (m, kind) in table.columns]]
    table.columns = pd.MultiIndex.from_tuples(table.columns) if paper else [c[0] for c in table.columns]
    return table.astype(object).where(table.notna(), "–")


def styled(table: pd.DataFrame):
    """A results table (:func:`results_table`) as the page shows it: row labels through :func:`label_html`, the
    ``dataframe`` class the book's stylesheet pads and keeps on one line, and a fixed element id, so that the
    HTML is the same on every run (nbval compares it). ``.data`` is the table itself."""
    short = lambda v: f"{v:g}" if isinstance(v, float) else v  # 63.2, not 63.200000
    return (table.style.format_index(label_html, axis=0, escape=None)
            .format_index(short, axis=1)  # a numeric column heading (Table 3's lambda): 0.5, not 0.500000
            .format(short)  # a quoted 63.2 as 63.2
            .set_uuid("results").set_table_attributes('class="dataframe"'))
