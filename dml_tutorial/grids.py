"""A chapter's experiment, trained: what its one search chose, every run of its grid, and the reference rows, in
one object (:class:`TrainedGrid`) that the notebook's tables and figures read, so that a section's table is one call:

    trained = guarantees.train_grid(start, splits, plan=chapter_plan)  # the search, the grid, the references
    trained.record(guarantees.recall_and_nmi)                     # one declared table (tables.Recorded)

A chapter declares how it trains (``<chapter>.train_grid``, through :func:`train`) and each table it records as a
function ``(trained, ...) -> Recorded`` in its module: the rows, the paper's numbers quoted beside them and the
caption, written once, read by the notebook and by the tests. Nothing here changes a number: :func:`train` makes
the calls a notebook made before (:func:`dml_tutorial.experiment.best_shots`,
:func:`~dml_tutorial.experiment.run_grid`, :func:`~dml_tutorial.experiment.references`), and
:meth:`TrainedGrid.record` is :func:`dml_tutorial.recording.record_for`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from . import experiment, spec
from .recording import record_for
from .tables import Recorded


@dataclass
class TrainedGrid:
    """A chapter's grid after training (:func:`train`): its ``start`` (:func:`dml_tutorial.profiles.begin`), the
    ``splits`` it trained and was measured on, the ``choices`` of its search (``{}`` where the profile searches
    nothing), its RunSpecs and their runs (``{(table, row, column): [Run per seed]}``), and the reference rows
    (``{(kind, column): [Run per seed]}``); ``trials``, the runs of a search made before the one search (CBSwR's
    cluster head, ``{(table, row, column): [Run]}``)."""

    start: object
    splits: object
    choices: dict
    specs: list
    runs: dict
    refs: dict = field(default_factory=dict)
    #: the runs of a search made before the one search and recorded as its own table (CBSwR's cluster head)
    trials: dict = field(default_factory=dict)

    @property
    def cfg(self):
        return self.start.cfg

    @property
    def seeds(self) -> list:
        return self.start.seeds

    def table(self, name: str, references: bool = False) -> dict:
        """One table of the grid, ``{(row, column): [Run per seed]}`` in the specs' order
        (:func:`dml_tutorial.spec.table_of`), with the reference rows after its own where ``references``; ``{}``
        for a table the profile does not train (which :meth:`record` then says)."""
        return spec.table_of(self.specs, self.runs, name) | (self.refs if references else {})

    def rows(self, name: str, references: bool = False) -> dict:
        """``{row: [Run per seed]}`` of a table whose rows have one column each (:func:`dml_tutorial.spec.rows_of`),
        with the reference rows after its own where ``references``."""
        return spec.rows_of(self.specs, self.runs, name) | (
            {kind: runs for (kind, _), runs in self.refs.items()} if references else {})

    def record(self, declared, *args, **kwargs):
        """Record the table ``declared(self, *args, **kwargs)`` returns (a :class:`~dml_tutorial.tables.Recorded`,
        or ``None`` where the profile does not train it, which prints why): its caption printed above it, the
        search's choices recorded beside it (:func:`dml_tutorial.recording.record_for`). Returns the styled table."""
        made = declared(self, *args, **kwargs)
        if made is None:
            print(f"{declared.__name__.replace('_', ' ')}: not part of the {self.cfg['profile']} profile")
            return None
        if not isinstance(made, Recorded):
            raise TypeError(f"{declared.__name__} returned a {type(made).__name__}, not a tables.Recorded")
        return record_for(self.start, made.table, made.rows, made.paper, caption=made.caption, seeds=made.seeds,
                          choices=self.choices if made.choices else None)


def train(chapter, start, run, splits, plan=None, chosen: dict | None = None, trials: dict | None = None,
          search_progress: bool | None = False, **reference_options) -> TrainedGrid:
    """Train a chapter's grid: its one search on the first seed (``chapter.best_shots`` through
    :func:`dml_tutorial.experiment.best_shots`, from the settings with ``chosen`` applied, the choices of a search
    made before it, whose runs are ``trials``; the walks beyond the planned trials added to ``plan``;
    ``search_progress``, the trials' progress as :func:`~dml_tutorial.experiment.best_shots` takes it), every
    RunSpec of ``chapter.grid(cfg, seeds, choices)`` run by ``run`` (``chapter.run_spec``'s), then the reference
    rows on ``splits`` (:func:`dml_tutorial.experiment.references` with ``reference_options``); all through the
    start's run cache, so that a second call loads what the first trained."""
    cfg, device, seeds, cache, progress = start
    choices = dict(chosen or {})
    searched_from = cfg.replace(**choices) if choices else cfg
    choices |= experiment.best_shots(chapter, searched_from, seeds[0], run, cache=cache, plan=plan,
                                     progress=search_progress)
    specs = chapter.grid(cfg, seeds, choices)
    runs = experiment.run_grid(specs, run, f"the {cfg.chapter} grid", cache=cache, progress=progress)
    refs = experiment.references(splits, cfg, seeds, device=device, cache=cache, **reference_options)
    return TrainedGrid(start, splits, choices, specs, runs, refs, dict(trials or {}))
