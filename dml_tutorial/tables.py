"""Recorded tables, without torch or plotting: the tables that claims and code read, each by a constant id; the
names their rows share across chapters (the reference rows every main table carries beside its trained rows, which
:func:`dml_tutorial.experiment.references` measures and the gate of :mod:`dml_tutorial.claims` asks every trained
control to beat); and how a results table is shown, measured beside the paper's numbers (:func:`results_table`,
:func:`styled`).

A table that a claim or the code reads is a :class:`Table` constant here (``tables.CBSWR_ABLATION``): a chapter
records it under it (``report.record(tables.CBSWR_ABLATION, ...)``), a run file stores its ``id`` beside its title,
and claims find it by the id. So a page's title can be reworded without touching a claim or a run file, and a claim
that names a table no longer declared fails when the package is imported, instead of silently leaving its family.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from .labels import label_html, mean_std

#: The two reference rows every main table carries: the raw input (no network) and the untrained network.
REFERENCES = ("raw input", "untrained network")
#: The third reference row, where a profile starts from a pretrained trunk (``cfg.start``,
#: :func:`dml_tutorial.pretrain.load_start`): its features as they are, before any fine-tuning (ImageNet features
#: on CUB, in small). A fine-tuned row that does not beat it has learned nothing the start did not hold.
STARTED = "pretrained, not fine-tuned"


@dataclass(frozen=True)
class Table:
    """A recorded table that claims or code read: ``id``, constant (what a claim, a chapter and a run file name it
    by), and ``title``, what a page shows."""

    id: str
    title: str

    def __str__(self):
        return self.title


@dataclass(frozen=True)
class Recorded:
    """One table a chapter records from its trained grid (:meth:`dml_tutorial.grids.TrainedGrid.record`), declared
    once in its module: ``table`` (a declared :class:`Table`, or the title of a table only shown), ``rows``
    (``{row: {column: [value per seed]}}``), the ``paper``'s numbers quoted beside them, the ``caption`` printed
    above it, the ``seeds`` it covers where not all the chapter's (a one-seed measurement), and whether the
    search's ``choices`` are recorded beside it."""

    table: Table | str
    rows: dict
    paper: dict | None = None
    caption: str | None = None
    seeds: list | None = None
    choices: bool = True


#: Every declared table, by id.
TABLES: dict[str, Table] = {}


def _declare(id: str, title: str) -> Table:
    if id in TABLES or title in {t.title for t in TABLES.values()}:
        raise ValueError(f"table {id!r} ({title!r}) is declared twice")
    TABLES[id] = Table(id, title)
    return TABLES[id]


DCDL_MAIN = _declare("dcdl.main", "Tables 1/4: local losses with and without the discrepancy term")
DCDL_WEIGHT = _declare("dcdl.weight", "Table 3: the weight lambda")
DCDL_SEARCH = _declare("dcdl.search", "Each row's rate and length: the probe on a held-out training face")
DCDL_CHOICE = _declare("dcdl.choice", "The rate and length each row trained at")
CBSWR_ABLATION = _declare("cbswr.ablation", "Tables 1/2 and 5/6: ablation of the loss terms")
CBSWR_CLUSTERS = _declare("cbswr.clusters", "Table 4: number of clusters K")
ECAML_DIMS = _declare("ecaml.dims", "Table 2: embedding size")
ECAML_CURVES = _declare("ecaml.curves", "Fig. 2: seen and unseen R@1 at the end of training")
EPS_MAIN = _declare("eps.main", "Table 2: unseen classes")
EPS_EVEN_ODD = _declare("eps.even_odd", "Table 1: even/odd")
EPS_LETTERS = _declare("eps.letters", "Table 3: unseen superclasses by letter")
EPS_POSITIVES = _declare("eps.positives", "Fig. 3b: same-class samples per batch, with and without EPS")
EPS_LETTERS_POSITIVES = _declare("eps.letters_positives",
                                 "Table 3 by same-superclass samples per batch: letter R@1, with and without EPS")
ECAML_MAIN = _declare("ecaml.main", "Tables 4/5: unseen classes with and without EC")
#: The suffix of a Tables 4/5 row of EC at the paper's weight (``"ECAML(Tri) at the paper's lambda"``), at its EC
#: row's searched rate and length: ``ecaml.grid`` trains it, a claim reads it (here, where neither loads torch).
ECAML_AT_PAPER = " at the paper's lambda"
NOISE_MAIN = _declare("noise.main", "Recall@1 and NMI under symmetric label noise")
BENCH_LENGTH = _declare("bench.length", "Length: MAP@R on the validation classes at each checkpoint")


def by_id(id: str) -> Table:
    """The declared table ``id``; an unknown id is an error naming the known ones."""
    if id not in TABLES:
        raise KeyError(f"no table {id!r}; declared: {', '.join(TABLES)}")
    return TABLES[id]


def id_of(title: str) -> str | None:
    """The id of the declared table titled ``title`` (a run file written before tables had ids), else ``None``."""
    return next((t.id for t in TABLES.values() if t.title == title), None)


def title_of(key: str) -> str:
    """The title a merged table's ``key`` (:func:`key`) is shown under: a declared table's title, else the key."""
    return TABLES[key].title if key in TABLES else key


def key(entry: dict) -> str:
    """The key a recorded table entry (``{"table": title, "id": ...}``) is merged and looked up by: its id; for an
    entry without one, the id of the declared table of its title (an entry written before tables had ids), else its
    title (a table only shown)."""
    return entry.get("id") or id_of(entry["table"]) or entry["table"]


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
