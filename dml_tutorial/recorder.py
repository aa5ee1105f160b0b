"""Where a chapter's results go: a :class:`Recorder` holds every table and every training a process recorded (a
notebook's kernel, a test, a benchmark) and hands each table and figure to the sinks its caller chose.

    from dml_tutorial import recorder, report

    with recorder.recording(recorder.Recorder([report.RunFile("tables.jsonl")])) as rec:
        ...   # a chapter's code: report.record(...), train.fit(...)
    rec.tables, rec.trainings   # what it recorded

A sink is any object with a ``table(entry)`` method and, optionally, ``figure(fig, name)``:
:class:`dml_tutorial.report.RunFile` appends each table to a run's JSON-lines file (and keeps its figures),
:class:`dml_tutorial.report.DriftCheck` checks each against the chapter's committed record. Outside a
``recording`` block the process's default recorder is current; its one sink, :class:`dml_tutorial.report.
FromEnvironment`, reads the environment variables by which ``dml-tutorial run`` and nbval, in another process,
ask a notebook's kernel for those two (the one way a parent process can tell a kernel it starts).

The chapter's conclusions read :attr:`Recorder.tables` (:func:`dml_tutorial.records.session_run`), its plan
:attr:`Recorder.trainings` (:meth:`dml_tutorial.plan.Plan.check`). This module imports nothing of the package: the
training loop below and the report above both use it.
"""

from __future__ import annotations

from contextlib import contextmanager


class Recorder:
    """The tables (``{"table", "id", "seeds", "settings", "measured", "paper", ...}``, as
    :func:`dml_tutorial.report.record` makes them) and trainings (``{"description", "steps", "seconds",
    "cached"}``) recorded so far, oldest first, and the ``sinks`` each table and figure is handed to."""

    def __init__(self, sinks=()):
        self.tables: list[dict] = []
        self.trainings: list[dict] = []
        self.sinks = list(sinks)

    def table(self, entry: dict) -> None:
        """Keep one table and hand it to every sink (a drift check may raise: the table is kept first)."""
        self.tables.append(entry)
        for sink in self.sinks:
            sink.table(entry)

    def figure(self, fig, name: str) -> None:
        """Hand a figure to the sinks that keep figures."""
        for sink in self.sinks:
            if hasattr(sink, "figure"):
                sink.figure(fig, name)

    def training(self, description: str, steps: int, seconds: float, cached: bool = False) -> None:
        """Keep one training: ``steps`` optimiser steps in ``seconds`` (a run loaded from a cache: ``cached``, no
        steps)."""
        self.trainings.append({"description": description, "steps": steps, "seconds": seconds, "cached": cached})

    def __repr__(self) -> str:
        return (f"Recorder({len(self.tables)} tables, {len(self.trainings)} trainings, sinks: "
                f"{', '.join(type(s).__name__ for s in self.sinks) or 'none'})")


#: The process's default recorder; its sink is set by :mod:`dml_tutorial.report` (the environment's).
DEFAULT = Recorder()
_current = [DEFAULT]


def current() -> Recorder:
    """The recorder that :func:`dml_tutorial.report.record` and :func:`dml_tutorial.train.fit` record into now."""
    return _current[-1]


@contextmanager
def recording(rec: Recorder | None = None):
    """Make ``rec`` (default: a new one without sinks) the current recorder inside the block; yields it."""
    rec = Recorder() if rec is None else rec
    _current.append(rec)
    try:
        yield rec
    finally:
        _current.remove(rec)
