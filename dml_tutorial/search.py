"""The one best-shot search (issue #86): every row of every chapter gets its learning rate, its length and its main
knob from this search, on held-out seen classes, so that no claim compares an arm at its best with an arm at a
shared, untuned setting, and no chapter keeps a search of its own.

A row's search trains the row's :class:`~dml_tutorial.spec.RunSpec` on its ``"validation"`` split (the seen
classes' held-out part, as the chapter builds it: with labels as noisy as the row's where the row is noisy), its
validation metric recorded every ``every`` epochs (``options["curve"]``, which the chapter's runner honours). A
trial scores its best checkpoint. The search

1. tries each rate of ``rate.start`` at each knob value of ``knob.start`` and at the knob's ``off`` (a
   regulariser's weight 0: switching the term off is always a candidate);
2. walks: from the best trial, one rung on along each ladder on which it is the highest or the lowest value tried
   (:func:`dml_tutorial.ladder.beyond`), the rate at the best knob and the knob at the best rate, until the best
   is flanked on both or sits at a ladder's end (a pattern search, as the bench's was);
3. lengthens: while the best trial's best checkpoint lies in the last ``patience`` of the trial (the last half: the
   curve was still rising, up to the noise of its checkpoints), it trains that trial again at the next length of
   ``lengths``, up to the ladder's last. With lengths that double, the last half is what the last doubling added:
   the search goes on while going on found a better checkpoint. ``patience`` 0 would go on only where the very last
   checkpoint is the best, which one noisy checkpoint stops (issue #86's first rule: on test bed II it stopped a
   quarter of DCDL's clean rows after 6-8 epochs, their held-out accuracy 6-21 points below that of their
   neighbours trained to 30-40).

Ties go to the first trial (the start's order: the paper's value first) and the shorter length. The
:class:`Choice` holds the values, every trial's curve, the ladders and the axes whose chosen value sits at an end of
its ladder, where the walk could not go on (:attr:`Choice.edges`): the run file records all of it.

    rule = search.Search("R@1", search.Axis("lr", (1e-4, 3e-4, 1e-3, 3e-3, 1e-2), (1e-3, 3e-3)), lengths=(8, 16))
    choice = search.best_shot(spec, rule, clustering.run_spec(splits, device))
    choice.values  # {"lr": 0.003, "epochs": 12}
"""

from __future__ import annotations

import collections
import dataclasses
from collections.abc import Callable
from typing import Any

import numpy as np

from . import ladder
from ._checks import accepts
from .spec import RunSpec


@dataclasses.dataclass(frozen=True)
class Axis:
    """One searched setting: its ``name`` (a settings field, or a knob the chapter's ``vary`` applies), the
    ``ladder`` the walk may climb, the ``start`` values tried first (neighbouring rungs of the ladder) and, for a
    regulariser, its ``off`` value (weight 0), tried at every starting rate besides the ladder."""

    name: str
    ladder: tuple
    start: tuple
    off: Any = None

    def __post_init__(self):
        ladder_, start = tuple(sorted(self.ladder)), tuple(self.start)
        if not start or not all(any(np.isclose(v, ladder_)) for v in start):
            raise ValueError(f"{self.name}: the start {start} must be non-empty values of the ladder {ladder_}")
        if self.off is not None and any(np.isclose(self.off, ladder_)):
            raise ValueError(f"{self.name}: off ({self.off}) lies on the ladder; the ladder holds the values 'on'")
        object.__setattr__(self, "ladder", ladder_)
        object.__setattr__(self, "start", start)

    def candidates(self) -> tuple:
        """What every search tries: the start, then ``off`` where the axis has one."""
        return self.start + (() if self.off is None else (self.off,))


@dataclasses.dataclass(frozen=True)
class Search:
    """The search's rule, one per chapter: the validation ``metric``, the ``rate`` axis, the knob axis (or none),
    the ``lengths`` a trial trains for (the first, then on while the best is still rising: its best checkpoint in
    the last ``patience`` of the trial, :func:`rising`) with a checkpoint every ``every`` epochs, and ``split``,
    the data it searches on."""

    metric: str
    rate: Axis
    lengths: tuple
    knob: Axis | None = None
    every: int = 1
    split: str = "validation"
    patience: float = 0.5

    def __post_init__(self):
        lengths = tuple(sorted(int(n) for n in self.lengths))
        if not lengths or lengths[0] < 1 or self.every < 1 or any(n % self.every for n in lengths):
            raise ValueError(f"lengths must be positive multiples of every ({self.every}), got {self.lengths}")
        if not 0 <= self.patience < 1:
            raise ValueError(f"patience is a share of a trial, 0 to below 1, got {self.patience}")
        object.__setattr__(self, "lengths", lengths)

    def as_data(self) -> dict:
        """The rule as data, for a claim's registered protocol (:mod:`dml_tutorial.registry`)."""
        return dataclasses.asdict(self)

    def planned(self) -> int:
        """How many trials a search makes whatever the scores: its starting grid (the walk and the lengthening
        are counted once they have run)."""
        return len(self.rate.start) * (len(self.knob.candidates()) if self.knob else 1)


@dataclasses.dataclass
class Choice:
    """What one row's search chose: ``values`` (``{"lr": ..., <knob>: ..., "epochs": ...}``), ``trials`` (every
    trial in the order made: its values and its curve ``{epoch: score}``), the ``ladders`` walked, and ``edges``,
    the axes whose chosen value sits at an end of its ladder (``"epochs"``: the trial at the longest length was
    still rising, :func:`rising`, so the budget ended the lengthening, not the curve)."""

    values: dict
    trials: list
    ladders: dict
    edges: list

    def as_data(self) -> dict:
        return dataclasses.asdict(self)


def best_shot(spec: RunSpec, rule: Search, run: Callable, vary: Callable | None = None) -> Choice:
    """The search of ``rule`` for one row, ``spec`` (a grid's run, whose seed and settings the trials keep), each
    trial (the spec on ``rule.split`` at its values, its column ``(lr, knob, epochs)``) run by ``run(trial) ->
    Run`` (the chapter's runner, through :func:`dml_tutorial.experiment.run_one` for its cache) with
    ``rule.metric`` in its history every ``rule.every`` epochs. ``vary(spec, name, value) -> spec`` sets the knob
    where it is not a settings field (a loss's weight); the rate is ``settings.lr``, the length
    ``settings.epochs``. Where ``run`` takes ``after`` and ``keep`` (:func:`dml_tutorial.experiment.run_one`), a
    trial the search may lengthen keeps its last state, and its longer trial goes on from it: the same curve as
    training from the start, without its first epochs again. Returns the :class:`Choice`."""
    knob = rule.knob
    curves = {}  # (lr, knob value, epochs) -> {epoch: score}
    goes_on = accepts(run, "after") and accepts(run, "keep")

    def trial(lr, value, epochs, shorter=None):
        if (lr, value, epochs) not in curves:
            at = trial_spec(spec, rule, lr, value, epochs, vary)
            more = {"keep": epochs < rule.lengths[-1],  # a longer trial may go on from it
                    "after": shorter and trial_spec(spec, rule, lr, value, shorter, vary)} if goes_on else {}
            curves[(lr, value, epochs)] = _curve(run(at, **more), rule.metric)
        return max(curves[(lr, value, epochs)].values())

    def best():
        return max(curves, key=lambda key: max(curves[key].values()))

    epochs = rule.lengths[0]
    for lr, value in _start(rule):
        trial(lr, value, epochs)
    while steps := _steps(curves, best(), rule):
        for lr, value in steps:
            trial(lr, value, epochs)
    lr, value, epochs = best()
    while rising(curves[(lr, value, epochs)], epochs, rule.patience) and epochs < rule.lengths[-1]:
        epochs, shorter = rule.lengths[rule.lengths.index(epochs) + 1], epochs
        trial(lr, value, epochs, shorter)
    lr, value, longest = best()
    length = _length(curves[(lr, value, longest)])
    values = {"lr": lr, **({knob.name: value} if knob else {}), "epochs": length}
    ladders = {"lr": list(rule.rate.ladder), **({knob.name: list(knob.ladder)} if knob else {}),
               "epochs": list(rule.lengths)}
    edges = [name for name, v in values.items() if name != "epochs" and _at_end(v, ladders[name])]
    edges += ["epochs"] if longest == rule.lengths[-1] and rising(curves[(lr, value, longest)], longest, rule.patience) else []
    trials = [{"lr": k[0], **({knob.name: k[1]} if knob else {}), "epochs": k[2], "curve": c}
              for k, c in curves.items()]
    return Choice(values, trials, ladders, edges)


def trial_spec(spec: RunSpec, rule: Search, lr, value, epochs: int, vary: Callable | None = None) -> RunSpec:
    """One trial of ``spec``'s search: the spec on ``rule.split`` at rate ``lr``, knob ``value`` (set by ``vary``,
    default a settings field) and ``epochs``, its checkpoints every ``rule.every`` epochs recording
    ``rule.metric`` (``options["curve"]``), its column ``(lr, value, epochs)``."""
    at = spec if rule.knob is None else (vary or _vary_setting)(spec, rule.knob.name, value)
    return dataclasses.replace(at, split=rule.split, column=(lr, value, epochs), options={
        **at.options, "curve": rule.metric}, settings=at.settings.replace(lr=lr, epochs=epochs, eval_every=rule.every))


def starting_trials(spec: RunSpec, rule: Search, vary: Callable | None = None) -> list[RunSpec]:
    """The trials every search of ``spec`` makes whatever the scores (:meth:`Search.planned`): what a plan counts
    in advance; the walk's and the lengthening's are counted once run (:func:`unplanned`)."""
    return [trial_spec(spec, rule, lr, value, rule.lengths[0], vary) for lr, value in _start(rule)]


def unplanned(choice: Choice, rule: Search) -> int:
    """How many trials a search made beyond :func:`starting_trials`."""
    return len(choice.trials) - rule.planned()


def chosen(choices: dict | None, row: str) -> dict:
    """The values ``row``'s search chose, read from a run's ``choices`` (``{"best shot": {row: Choice as data}}``,
    as a chapter's ``best_shots`` returns them and the run file keeps them); ``{}`` where none searched it."""
    return dict((choices or {}).get("best shot", {}).get(row, {}).get("values", {}))


def tuned(cfg, choices: dict | None, row: str):
    """The settings ``cfg`` at ``row``'s chosen rate and length (:func:`chosen`), as they are where none was
    searched; the knob is the chapter's to apply (a setting, or a loss parameter)."""
    values = chosen(choices, row)
    return cfg.replace(**{k: values[k] for k in ("lr", "epochs") if k in values})


def walked(choices: dict | None, rule_of: Callable) -> int:
    """The trials a run's searches made beyond their starting grids (:func:`unplanned`, summed over the rows of
    ``choices["best shot"]``), ``rule_of(row)`` giving each row's :class:`Search`: what a plan adds once run."""
    return sum(unplanned(Choice(**data), rule_of(row)) for row, data in (choices or {}).get("best shot", {}).items())


def lengthened(choices: dict | None, goes_on: bool = True) -> dict:
    """``{epochs: trials}``: how many epochs each lengthened trial of a run's searches trained (a trial at a
    length past its ladder's first: step 3 of :func:`best_shot`): those beyond the shorter trial it went on from
    where ``goes_on`` (a search run through a cache: :func:`dml_tutorial.experiment.run_one`), all of them where it
    trained from the start. A plan counts every walked trial at the first length until told (:meth:`dml_tutorial.
    plan.Plan.add`): with lengths (10, 20, 40), a 40-epoch trial trains 20 epochs going on, 40 from the start."""
    out = collections.Counter()
    for data in (choices or {}).get("best shot", {}).values():
        lengths = list(data["ladders"]["epochs"])
        for trial in data["trials"]:
            if (i := lengths.index(trial["epochs"])) > 0:
                out[trial["epochs"] - lengths[i - 1] if goes_on else trial["epochs"]] += 1
    return dict(sorted(out.items()))


def runner_up(choices: dict | None, row: str, axis: str = "lr"):
    """The ``axis`` value of the best trial of ``row``'s search whose value there is not the chosen one (ties: the
    first made): a control's "next best" setting (the noise chapter's runner-up rate); ``None`` where the search
    tried no other value."""
    data = (choices or {}).get("best shot", {}).get(row)
    others = [t for t in (data or {}).get("trials", []) if not np.isclose(t[axis], data["values"][axis])]
    return max(others, key=lambda t: max(t["curve"].values()))[axis] if others else None


def _start(rule: Search) -> list[tuple]:
    """The starting grid: each starting rate at each knob candidate (the knob's ``off`` included)."""
    return [(lr, value) for lr in rule.rate.start for value in (rule.knob.candidates() if rule.knob else (None,))]


def _vary_setting(spec: RunSpec, name: str, value) -> RunSpec:
    return dataclasses.replace(spec, settings=spec.settings.replace(**{name: value}))


def _curve(run, metric: str) -> dict:
    """``{epoch: score}`` of ``metric`` in a trial's history; an error naming the trial where it has none."""
    curve = {r["epoch"]: r[metric] for r in run.history.records if metric in r}
    if not curve or not all(np.isfinite(list(curve.values()))):
        raise ValueError(f"a search trial recorded no finite {metric!r} at its checkpoints ({curve}): its runner "
                         "must honour the spec's options['curve']")
    return curve


def rising(curve: dict, epochs: int, patience: float) -> bool:
    """Whether a trial of ``epochs`` epochs was still rising: its best checkpoint (:func:`_length`) is its last or
    lies in its last ``patience`` share, after ``(1 - patience) * epochs`` (0: only the last checkpoint)."""
    best = _length(curve)
    return best == epochs or best > (1 - patience) * epochs


def _length(curve: dict) -> int:
    """The best checkpoint of a curve (ties: the shorter)."""
    return max(curve, key=lambda e: (curve[e], -e))


def _steps(curves: dict, at: tuple, rule: Search) -> list:
    """The pattern search's next trials from the best ``at`` (rate, knob, epochs), untried ones only: the next
    rate along the ladder at its knob, the next knob value at its rate (none from ``off``)."""
    lr, value, epochs = at
    tried = [(r, v) for r, v, e in curves if e == epochs]
    steps = [(r, value) for r in ladder.beyond(lr, [r for r, v in tried if v == value], rule.rate.ladder)]
    if rule.knob and value != rule.knob.off:
        on = [v for r, v in tried if r == lr and v != rule.knob.off]
        steps += [(lr, v) for v in ladder.beyond(value, on, rule.knob.ladder)]
    return [s for s in steps if (*s, epochs) not in curves]


def _at_end(value, values) -> bool:
    return value is not None and bool(np.isclose(value, [values[0], values[-1]]).any())


def describe(choice: Choice | dict) -> str:
    """``"lr 0.01, tau 0.05, 8 epochs (R@1 of its best trial 0.632, 9 trials); at the end of its ladder: lr"``: a
    choice (or its data, as a run file keeps it) in a line."""
    c = choice if isinstance(choice, Choice) else Choice(**choice)
    values = ", ".join(f"{v} epoch{'s' * (v != 1)}" if k == "epochs" else f"{k} {v:g}" for k, v in c.values.items())
    best = max(max(t["curve"].values()) for t in c.trials)
    edges = f"; at the end of its ladder: {', '.join(c.edges)}" if c.edges else ""
    return f"{values} (best validation score {best:.3f}, {len(c.trials)} trials){edges}"


def ends(choice: Choice | dict) -> list[tuple[str, str]]:
    """``[(axis, "top" | "bottom")]``: which end of its ladder each of ``choice``'s :attr:`Choice.edges` sat at (a
    length at an edge is always the top: the longest trial still rising when the budget ended)."""
    c = choice if isinstance(choice, Choice) else Choice(**choice)
    return [(axis, "top" if axis == "epochs" or np.isclose(c.values[axis], c.ladders[axis][-1]) else "bottom")
            for axis in c.edges]


def edge_counts(runs: list[dict]) -> dict:
    """Row by row over the run files ``runs`` (each row's :class:`Choice` in ``choices["best shot"]``), how many
    seeds' searches ended with a value at an end of its ladder, where the row's best shot may lie beyond (issue
    #86: a best at a grid's edge is not a best shot): ``{row: {"seeds": n, (axis, end): k}}`` (:func:`ends`), ``n``
    the runs whose search chose the row and ``k`` how many of them at that end. ``{}`` where no run searched."""
    out: dict = {}
    for run in runs:
        for row, choice in ((run.get("choices") or {}).get("best shot") or {}).items():
            counts = out.setdefault(row, collections.Counter())
            counts["seeds"] += 1
            counts.update(ends(choice))
    return {row: dict(counts) for row, counts in out.items()}


def edges_text(counts: dict, label=str, symbols: dict | None = None) -> str:
    """:func:`edge_counts` as a sentence: for each end some row's choice sat at, the rows and on how many of their
    seeds (``label`` writes a row's name, e.g. :func:`dml_tutorial.labels.label_tex`; ``symbols`` a knob's, e.g.
    ``{"lam": "λ"}``); the axes in their first row's order. Says so where no choice sat at an end; ``""`` without
    counts."""
    if not counts:
        return ""
    found = list(dict.fromkeys(key for c in counts.values() for key in c if key != "seeds"))
    if not found:
        n = max(c["seeds"] for c in counts.values())
        return f"No row's choice sat at an end of its ladder ({n} seed{'s' * (n != 1)})."
    parts = [f"{_end_name(*key, symbols or {})}: " + ", ".join(f"{label(row)} {c[key]} of {c['seeds']}"
                                                 for row, c in counts.items() if c.get(key)) for key in found]
    return "Seeds on which a row's choice sat at an end of its ladder (its best may lie beyond it): " + "; ".join(
        parts) + "."


def _end_name(axis: str, end: str, symbols: dict) -> str:
    if axis == "epochs":
        return "the longest length" if end == "top" else "the shortest length"
    return f"the {'highest' if end == 'top' else 'lowest'} {'rate' if axis == 'lr' else symbols.get(axis, axis)}"


def validation_split(splits, held_out: int = 2):
    """Inside the training split only (the seen classes): its last ``held_out`` classes become the test side, the
    others the training side, so a search never looks at a test class or a test image."""
    from .data import Splits

    classes = np.unique(splits.train.labels)
    if not 0 < held_out < len(classes) - 1:
        raise ValueError(f"held_out must leave at least two training classes of {len(classes)}, got {held_out}")
    test = np.isin(splits.train.labels, classes[-held_out:])
    return Splits(splits.name, "validation", splits.train.subset(~test), splits.train.subset(test), splits.source,
                  list(splits.class_names))
