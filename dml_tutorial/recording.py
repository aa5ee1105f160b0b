"""Show a chapter's table and record it: :func:`record` hands the numbers to the current recorder
(:mod:`dml_tutorial.recorder`: the run file under ``dml-tutorial run``, the drift check under nbval) and returns the
table styled beside the paper's numbers; :func:`record_for` does it for a chapter's start; :func:`record_figure`
hands a figure to the same sinks. Below :mod:`dml_tutorial.report` (the results pages), so that a chapter's module
can record without reading the pages (:mod:`dml_tutorial.grids`).
"""

from __future__ import annotations

import platform

import numpy as np

from . import recorder
from . import tables as declared
from .tables import Table, id_of, results_table, styled


def _jsonable(table: dict | None) -> dict:
    """``{row: {column: value or values}}`` with string keys and plain floats (JSON has no tuple or numpy keys):
    a number stays a number (a quoted paper value), a sequence becomes a list (one value per seed)."""
    def plain(v):
        return v if isinstance(v, str) else float(v) if np.ndim(v) == 0 else np.asarray(v, dtype=float).tolist()

    return {str(row): {str(col): plain(v) for col, v in cols.items()} for row, cols in (table or {}).items()}


def _plain(value):
    """``value`` as JSON data: numpy numbers as Python's, tuples as lists."""
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value.item() if isinstance(value, np.generic) else value


def device_name(device) -> str:
    """``"cuda: NVIDIA H100 80GB HBM3"`` or ``"cpu: x86_64, 2 threads"`` (``"1 thread"``): the hardware a number
    came from."""
    import torch

    dev = torch.device(device)
    if dev.type == "cuda":
        return f"cuda: {torch.cuda.get_device_name(dev)}"
    threads = torch.get_num_threads()
    return f"{dev.type}: {platform.machine()}, {threads} thread{'s' * (threads != 1)}"


def record(table: Table | str, measured: dict, paper: dict | None = None, *, cfg, seeds, device, digits: int = 1,
           choices: dict | None = None):
    """Show ``measured`` (``{row: {metric: [value per seed]}}``) beside the ``paper`` numbers with
    :func:`dml_tutorial.tables.results_table` (returned styled, :func:`dml_tutorial.tables.styled`; the table is
    its ``.data``) and record them in the current recorder (:func:`dml_tutorial.recorder.current`), which hands
    them to its sinks: under ``dml-tutorial run`` the run's file (:class:`RunFile`), under nbval
    (``DML_TUTORIAL_CHECK`` set) a check against the chapter's committed record (:class:`DriftCheck`, which raises
    when they drifted beyond what another machine explains).
    ``table``: a declared :class:`~dml_tutorial.tables.Table` (one that claims or code read; its id is recorded
    beside its title), or the title of a table only shown.
    ``cfg``: the chapter's settings (:class:`dml_tutorial.settings.Settings`), recorded as they are; ``choices``:
    what the run chose for itself (a searched rate, a cluster head: ``{"head": "released"}``), recorded beside
    them, never in them. An empty ``measured`` (a table the profile leaves out) prints so and records nothing."""
    declared_table = table if isinstance(table, Table) else None
    if declared_table is None and id_of(table):
        raise ValueError(f"{table!r} is a declared table: record it as tables.{_constant(id_of(table))}, so that "
                         "its claims find it by its id")
    if not measured:  # a profile that leaves the table out (e.g. the colab profile's short lists)
        print(f"{table}: not part of the {cfg['profile']} profile")
        return None
    entry = {"table": str(table), **({"id": declared_table.id} if declared_table else {}),
             "seeds": [int(s) for s in seeds], "device": device_name(device),
             "settings": cfg.to_dict(),  # every setting that made the numbers, the per-loss dicts included
             **({"choices": _plain(choices)} if choices else {}),
             "measured": _jsonable(measured), "paper": _jsonable(paper)}
    recorder.current().table(entry)  # the conclusions read it (records.session_run); the sinks keep or check it
    return styled(results_table(measured, paper, digits))


def record_for(start, table: Table | str, measured: dict, paper: dict | None = None, *, caption: str | None = None,
               seeds: list | None = None, **options):
    """:func:`record` of a chapter's ``start`` (:func:`dml_tutorial.profiles.begin`: its settings, its seeds or
    ``seeds``, its device), with ``caption`` printed above the table; ``options``: ``choices`` and ``digits``.

        report.record_for(start, tables.EPS_MAIN, scores, eps.REPORTED["CUB"], caption="unseen classes, in %")
    """
    if caption:
        print(caption)
    return record(table, measured, paper, cfg=start.cfg, seeds=start.seeds if seeds is None else seeds,
                  device=start.device, **options)


def _constant(id: str) -> str:
    """The name of the :mod:`dml_tutorial.tables` constant of the declared table ``id``."""
    return next(name for name, value in vars(declared).items() if value is declared.TABLES[id])


def record_figure(fig, name: str):
    """Hand ``fig`` to the current recorder's sinks: under ``dml-tutorial run --figures`` (how a sweep runs a
    chapter) it is saved as ``<name>.png`` for the run file (:class:`RunFile`), so that a page can show the run's
    pictures (embeddings of models that are not kept) beside its numbers; anywhere else nothing keeps it.
    Returns ``fig``."""
    recorder.current().figure(fig, name)
    return fig
