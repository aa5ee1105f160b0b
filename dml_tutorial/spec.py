"""A chapter's experiment as data: each run of its grid is a :class:`RunSpec` (which table and row it fills, what
trains, with which settings, on which data, under which seed), declared once by the chapter's paper module and read
by the notebook that runs it, the plan that counts and times it, the cache that keeps it and the tests.

    specs = clustering.grid(cfg, seeds=[0, 1, 2], choices={"head": "released"})
    results = experiment.run_grid(specs, clustering.run_spec(splits, device), cache="runs/cbswr-...")
    results[("Tables 1-2", "CBSwR", "")]   # [Run for seed 0, 1, 2]
    spec.table_of(specs, results, "Tables 1-2")   # {("CBSwR", ""): [...], ...}: one table's runs

A spec's :meth:`~RunSpec.digest` is the cache's key: the SHA-256 of everything that decides what the run computes
(:func:`as_data`: the method with every parameter of its loss, the settings, the data, the seed) and the package
version, so that a changed loss parameter (the sigma of L^L, a triplet's margin) names a new run, never an old one
reported as new.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import re
from functools import partial
from typing import Any

from . import __version__
from .settings import Frozen, Settings, freeze


def as_data(value) -> object:
    """``value`` as plain JSON data, holding everything that decides what a run computes: dicts, lists and numbers
    as they are; settings by their fields (:meth:`Settings.to_dict`) less how a run uses its machine
    (:data:`~dml_tutorial.settings.MACHINE`: a run on one thread is the run on two); an object with a ``describe()`` (an
    :class:`~dml_tutorial.objective.Objective`: each term's function and parameters) by its description; a
    ``functools.partial`` by its function, arguments and keywords; a function by its module and name; anything else
    by its ``repr`` without memory addresses (``<object at 0x7f..>`` -> ``<object>``)."""
    if isinstance(value, Settings):
        return value.trained()
    if isinstance(value, dict):
        return {str(k): as_data(v) for k, v in sorted(value.items(), key=lambda kv: str(kv[0]))}
    if isinstance(value, (list, tuple)):
        return [as_data(v) for v in value]
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if callable(getattr(value, "describe", None)) and not isinstance(value, type):
        return as_data(value.describe())
    if isinstance(value, partial):
        return {"function": as_data(value.func), "args": as_data(value.args), "keywords": as_data(value.keywords)}
    if callable(value) and hasattr(value, "__qualname__") and hasattr(value, "__module__"):
        return f"{value.__module__}.{value.__qualname__}"
    return re.sub(r" at 0x[0-9a-fA-F]+", "", repr(value))


def fingerprint(value) -> str:
    """The SHA-256 (hex) of ``value`` as data (:func:`as_data`), its keys sorted: what the cache, a spec's digest
    and the plan's probes name a thing by."""
    return hashlib.sha256(json.dumps(as_data(value), sort_keys=True).encode()).hexdigest()


@dataclasses.dataclass(frozen=True)
class RunSpec:
    """One training of a chapter's grid. ``table``: the grid it belongs to (a table's section, e.g. ``"Tables
    1-2"``); ``row`` and ``column``: where its numbers go; ``method``: what trains (an objective, a loss function,
    an unsupervised method's name), as data through :func:`as_data`; ``settings``: what it trains with (the
    profile's, with the row's own changes and the run's choices applied); ``split``: the data, by name (``"main"``
    the chapter's split, ``"validation"`` its seen classes' held-out part); ``options``: the run function's other
    arguments (label noise, a fraction, batch shape, curves); ``seed``. A ``column`` is a name or a value (a noise
    rate)."""

    table: str
    row: str
    method: Any
    settings: Settings
    column: Any = ""
    seed: int = 0
    split: str = "main"
    options: Frozen = dataclasses.field(default_factory=Frozen)

    def __post_init__(self):
        object.__setattr__(self, "options", freeze(dict(self.options)))

    @property
    def key(self) -> tuple:
        """``(table, row, column)``: where the run's numbers go."""
        return self.table, self.row, self.column

    def data(self) -> dict:
        """Everything that decides what the run computes, as JSON data (the table and row name where it goes
        excluded: two rows that train the same thing share a run)."""
        return {"method": as_data(self.method), "settings": as_data(self.settings), "split": self.split,
                "options": as_data(dict(self.options)), "seed": self.seed}

    def digest(self) -> str:
        """The SHA-256 (hex) of :meth:`data` and the package version: the run's cache key."""
        return fingerprint({"run": self.data(), "version": __version__})

    def __hash__(self):
        return hash(self.digest())


def table_of(specs, results: dict, table: str) -> dict:
    """``{(row, column): [Run per seed]}`` of one ``table`` of a grid, in the order its ``specs`` declare them:
    ``results`` (``{(table, row, column): [Run]}``, as :func:`dml_tutorial.experiment.run_grid` returns them)."""
    return {spec.key[1:]: results[spec.key] for spec in specs if spec.table == table}


def rows_of(specs, results: dict, table: str) -> dict:
    """``{row: [Run per seed]}`` of one ``table`` of a grid (:func:`table_of`) whose rows have one column each
    (CBSwR's)."""
    return {row: runs for (row, _), runs in table_of(specs, results, table).items()}
