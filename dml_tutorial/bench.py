"""Chapter 8's bench: every method of the course on one backbone, one dataset and the same seeds, with the same
search for each of its knob, its learning rate and its training length (Musgrave et al. 2020, "A Metric Learning
Reality Check": gains shrink when methods are compared so), and each one's robustness to label noise measured as
Le & Odobez 2018 do (section 6.1: the ratio to a topline trained on the 1 - p clean samples).

    val = bench.validation_split(splits, held_out=2)            # inside the seen classes
    run = bench.run(splits, "Triplet + EC", cfg, value=0.1, seed=0)
    run.metrics  # {"MAP@R": ..., "R@1": ..., "NMI": ..., "seconds": ...}

A method (:data:`METHODS`) is a local loss of the zoo with its sampling strategy, plus at most one class-wise term
of :mod:`dml_tutorial.objective`, or an unsupervised method of :mod:`dml_tutorial.clustering` (SME, CBSwR), which
sees no labels at all. Each has one hyperparameter, its ``knob``, with :data:`SEARCH_BUDGET` candidate values:
the paper's own setting among them, and a ladder of values beyond them that a search's walk may climb
(:func:`search`); a control (DCDL's triplet alone) keeps the one setting of the rows it is the base of. Each loss
keeps the reduction of its definition (:mod:`dml_tutorial.losses`: the triplet loss the mean over its sampled
triplets, zeros included; the margin loss the mean over its non-zero terms; multi-similarity a mean over anchors,
N-pair over anchor/positive pairs, binomial a mean over positive pairs plus one over negative pairs), each added
term its own (:mod:`dml_tutorial.objective`). Every method is measured by :func:`scores`, on the same test
embeddings.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial

import numpy as np
import pandas as pd

from . import claims, clustering, dcdl, ecaml, evidence, experiment, ladder, metrics, tables, train
from .data import Splits
from .labels import label_tex
from .objective import TERMS, objective
from .settings import BenchSettings, CBSwRSettings, Settings
from .spec import RunSpec

#: Candidates per method: every method but a control (:class:`Method`) gets exactly this many trainings at each
#: of the search's first rates.
SEARCH_BUDGET = 3


@dataclass(frozen=True)
class Method:
    """``local`` (a key of :data:`dml_tutorial.objective.LOCAL`) with ``options`` (its sampling strategies), or the
    :mod:`~dml_tutorial.clustering` method ``unsupervised``; ``knob`` is the searched hyperparameter: a term of
    :data:`dml_tutorial.objective.TERMS` (its weight), ``"lr"`` (the learning rate), a local-loss option, or a
    setting of the unsupervised method (``tau``, ``k``); ``values`` its candidates, the paper's default first;
    ``ladder`` the values a search's walk may reach (:func:`next_trials`), in order, the candidates among them;
    ``base`` the method whose loss this one adds its term (or its sampling) to, which :func:`term_gains` compares
    it with. A method with a single value is a control: its knob stays where the rows it is the base of keep it."""

    name: str
    knob: str
    values: tuple
    local: str | None = None
    options: tuple = ()
    unsupervised: str | None = None
    ladder: tuple = ()
    base: str | None = None

    @property
    def supervised(self) -> bool:
        return self.unsupervised is None


#: The row the bench compares every method with: the triplet loss with random semi-hard negatives, the base that
#: ECAML's and EPS's rows change and the other losses were published against.
BASELINE = "Triplet, random semi-hard"
_TRIPLET = (("negatives", "semihard-random"),)
#: DCDL's own local loss (dcdl.LOCAL_LOSSES["trip"]: margin 0.5 on squared distances, FaceNet's band), the base
#: its lambda was set against.
_DCDL_TRIPLET = (("margin", 0.5), ("squared", True), ("negatives", "semihard-band"))
#: The ladders of the walk (:func:`next_trials`): a step beyond each end of the candidates, or two where the first
#: test bed II search chose an end (N-pair's scale 10, a triplet margin of 0.4).
_MARGINS = (0.05, 0.1, 0.2, 0.4, 0.8)
#: The bench's methods, by the name its tables use.
METHODS = {m.name: m for m in (
    Method("Triplet, random semi-hard", "margin", (0.2, 0.1, 0.4), "triplet", _TRIPLET, ladder=_MARGINS),
    Method("Triplet, fixed semi-hard", "margin", (0.2, 0.1, 0.4), "triplet", (("negatives", "semihard-fixed"),),
           ladder=_MARGINS),
    Method("Margin", "beta", (1.2, 0.8, 1.0), "margin", ladder=(0.4, 0.6, 0.8, 1.0, 1.2, 1.4)),
    Method("MS", "lam", (1.0, 0.5, 0.75), "multi_similarity", ladder=(0.25, 0.5, 0.75, 1.0)),  # a cosine: <= 1
    # on unit-norm embeddings N-pair's knob is the scale of its similarities (an inverse temperature; its l2_reg
    # acts on norms the model fixes): Sohn's 1, and ECAML's released code's 10
    Method("N-pair", "scale", (1.0, 3.0, 10.0), "npairs", ladder=(0.3, 1.0, 3.0, 10.0, 30.0, 100.0)),
    Method("Binomial", "beta", (0.5, 0.3, 0.7), "binomial", ladder=(0.1, 0.3, 0.5, 0.7, 0.9)),  # a cosine
    # DCDL's rows on DCDL's own triplet; lambda from the paper's down to small weights (chapter 3: large ones cost),
    # and that triplet alone, their control (issue #48: against the random semi-hard triplet their gap mixed the
    # local loss with the term): its margin stays at DCDL's 0.5, as theirs does; its rate and length are searched
    Method("Triplet, DCDL's", "margin", (0.5,), "triplet", _DCDL_TRIPLET),
    Method("Triplet + L^W", "sinkhorn", (dcdl.LAMBDA["W"], 0.01, 0.1), "triplet", _DCDL_TRIPLET,
           ladder=(0.001, 0.01, 0.1, 0.5, 2.0), base="Triplet, DCDL's"),
    Method("Triplet + L^L", "mmd", (dcdl.LAMBDA["L"], 0.01, 0.05), "triplet", _DCDL_TRIPLET,
           ladder=(0.002, 0.01, 0.05, 0.2, 1.0), base="Triplet, DCDL's"),
    Method("Triplet + EC", "energy_confusion", (ecaml.LAMBDA["triplet"], 0.1, 1.0), "triplet", _TRIPLET,
           ladder=(0.005, 0.02, 0.1, 1.0, 10.0), base=BASELINE),
    Method("EPS + Triplet", "margin", (0.2, 0.1, 0.4), "triplet", _TRIPLET + (("positives", "easy"),),
           ladder=_MARGINS, base=BASELINE),
    Method("SME", "tau", (clustering.TAU, 0.05, 0.2), unsupervised="SME", ladder=(0.025, 0.05, 0.1, 0.2, 0.4)),
    Method("CBSwR", "k", (clustering.K, 16, 64), unsupervised="CBSwR", ladder=(8, 16, 32, 64, 128, 256)),
)}


def method(name: str) -> Method:
    if name not in METHODS:
        raise ValueError(f"unknown method {name!r}; choose one of {', '.join(METHODS)}")
    return METHODS[name]


def selected(cfg: dict) -> list[str]:
    """The methods a profile runs: ``cfg["methods"]`` (names of :data:`METHODS`), or all of them when ``None``."""
    names = list(METHODS) if cfg.get("methods") is None else list(cfg["methods"])
    for name in names:
        method(name)  # an unknown name fails here, before any training
    return names


def make_loss(name: str, value=None):
    """The :class:`~dml_tutorial.objective.Objective` of a supervised method, its knob at ``value`` (``None``: the
    default, ``values[0]``). ``Triplet + EC`` at 0.1 is ``objective("triplet", negatives="semihard-random",
    terms={"energy_confusion": 0.1})``."""
    m = method(name)
    if not m.supervised:
        raise ValueError(f"{name} is unsupervised: it has no loss on labelled batches (see bench.run)")
    value = m.values[0] if value is None else value
    options = dict(m.options)
    terms = {m.knob: value} if m.knob in TERMS else {}
    if m.knob not in TERMS and m.knob != "lr":
        options[m.knob] = value
    return objective(m.local, terms=terms, name=name, **options)


def settings(name: str, cfg: BenchSettings, value=None, lr: float | None = None, epochs: int | None = None):
    """The settings method ``name`` trains with at ``value``: the bench's (``cfg``), with the learning rate at
    ``value`` for the ``lr`` knob; for an unsupervised method a :class:`~dml_tutorial.settings.CBSwRSettings` with
    the bench's shared settings, its own epochs, batch size and learning rate (``unsup_*``), and the knob (the
    number of clusters ``k`` there, not the P x K batch's). ``lr``, where given, replaces the learning rate either
    way (a search over each method's own rate, :func:`rates`); so does ``epochs`` the number of epochs (a length
    :func:`choose_lengths` chose)."""
    m = method(name)
    value = m.values[0] if value is None else value
    if lr is not None and m.knob == "lr":
        raise ValueError(f"{name}'s knob is its learning rate: search it through its values, not lr")
    if epochs is not None and (int(epochs) != epochs or epochs < 1):
        raise ValueError(f"epochs must be a positive whole number, got {epochs}")
    if m.supervised:
        out = cfg.replace(lr=value) if m.knob == "lr" else cfg
    else:
        shared = {k: v for k, v in cfg.to_dict().items() if k in Settings.known() and k not in ("p", "k")}
        out = CBSwRSettings(**{**shared, "epochs": cfg.unsup_epochs, "lr": cfg.unsup_lr,
                               "batch_size": cfg.unsup_batch_size, "max_shift": cfg.max_shift, m.knob: value})
    return out.replace(**({"lr": lr} if lr is not None else {}), **({"epochs": int(epochs)} if epochs else {}))


def length_trial(name: str, cfg: dict) -> tuple[int, int]:
    """``(epochs, every)``: the longest training the choice of a length tries for method ``name`` (issue #48: a
    method trained for a fixed, short budget is compared on its steep slope, not at its best), the profile's
    ``length_factor`` times the method's own epochs (``unsup_epochs`` for the unsupervised ones), and its
    checkpoints, every ``epochs / length_checkpoints`` epochs (at least 1; :func:`choose_lengths`)."""
    factor, checkpoints = cfg.get("length_factor"), cfg.get("length_checkpoints")
    if not factor or not checkpoints or factor < 1 or checkpoints < 1:
        raise ValueError(f"the profile chooses no length: length_factor {factor}, length_checkpoints {checkpoints}")
    epochs = int(factor * settings(name, cfg)["epochs"])
    return epochs, max(1, epochs // int(checkpoints))


def rates(name: str, cfg: dict) -> list:
    """The learning rates the search tries for method ``name``: the profile's ``method_lrs`` (issue #48: every
    method trained at one rate, while a recipe moved R@1 by 13-19 points), or ``[None]`` (the profile's own rate)
    where it has none or the method's knob already is its rate."""
    candidates = cfg.get("method_lrs") or []
    return [None] if not candidates or method(name).knob == "lr" else list(candidates)


def next_trials(results: dict, cfg: dict, metric: str = "MAP@R") -> dict:
    """One step of the search's walk (issue #48: a method whose best setting sits at the edge of its grid has not
    had its best shot). From the trials so far, ``{(name, (value, lr)): [Run per seed]}``, returns ``{name:
    [(value, lr), ...]}``: from each method's best trial (by mean ``metric``, as :func:`choose` picks it), the
    next point past it along each axis through it on which it is the highest or the lowest tried: its knob along
    :attr:`Method.ladder` at the best rate (where the profile sets ``walk_knobs``), and its learning rate along the
    profile's ``lr_ladder`` at the best value. A method whose best is flanked on both axes, or sits at the end of a
    ladder, is left out: its walk is over."""
    out = {}
    for name, (value, lr) in choose(results, metric).items():
        tried = [key for n, key in results if n == name]
        steps = []
        if cfg.get("walk_knobs") and method(name).ladder:
            steps += [(v, lr) for v in ladder.beyond(value, [v for v, r in tried if r == lr], method(name).ladder)]
        if cfg.get("lr_ladder") and lr is not None:
            steps += [(value, r) for r in ladder.beyond(lr, [r for v, r in tried if v == value], cfg["lr_ladder"])]
        if steps:
            out[name] = steps
    return out


def search(names, cfg: dict, fit, metric: str = "MAP@R") -> dict:
    """Each method's trials on a validation split: every value of its knob at each of its :func:`rates` (a grid),
    then, where the profile sets a ``lr_ladder`` or ``walk_knobs``, the walk of :func:`next_trials` from the best,
    until it is flanked on both axes or the ladders end (a pattern search). ``fit({(name, (value, lr)): kwargs of
    run})`` trains one round and returns ``{(name, (value, lr)): [Run per seed]}``. Returns every trial, each
    method's rows together: its values as it lists them (the paper's first, so that :func:`choose` breaks ties
    for it), then those its walk added, each at its rates in order."""
    trials = {n: [(v, lr) for v in method(n).values for lr in rates(n, cfg)] for n in names}
    results = {}
    while trials:
        runs = fit({(n, key): {"name": n, "value": key[0], "lr": key[1], "measures": (metric,)}
                    for n, keys in trials.items() for key in keys})
        results = _in_order({**results, **runs}, names)
        trials = next_trials(results, cfg, metric)
    return results


def sure_trials(name: str, cfg: dict) -> int:
    """How many trials :func:`search` runs for method ``name`` whatever the scores, what a plan can count in
    advance: the grid of its values and :func:`rates`, and the walk's first step along the rates where it starts
    from two rates with a ladder rate beyond each (the better of two always sits at an edge). The rest of the
    walk is counted once it has run (:func:`unplanned`)."""
    start = rates(name, cfg)
    grid = len(method(name).values) * len(start)
    return grid if start == [None] else grid + ladder.sure_steps(start, cfg.get("lr_ladder"))


def unplanned(searched: dict, cfg: dict) -> dict:
    """``{name: trainings}``: what :func:`search` trained for each method beyond :func:`sure_trials`' count (every
    search seed), from its trials ``{(name, (value, lr)): [Run per seed]}``: the walk's further steps, which the
    chapter adds to its plan (:meth:`dml_tutorial.plan.Plan.add`) before checking it."""
    ran, seeds = {}, {}
    for (name, _), runs in searched.items():
        ran[name], seeds[name] = ran.get(name, 0) + len(runs), len(runs)
    return {name: n - seeds[name] * sure_trials(name, cfg) for name, n in ran.items()}


def _in_order(results: dict, names) -> dict:
    """``{(name, (value, lr)): runs}`` by method (as in ``names``), value (as its method lists them, then those
    its walk added, in order) and rate."""
    def key(item):
        (name, (value, lr)), _ = item
        values = method(name).values
        listed = (values.index(value), 0.0) if value in values else (len(values), value)
        return list(names).index(name), listed, lr or 0.0
    return dict(sorted(results.items(), key=key))


#: The bench's measures, in its tables' order.
MEASURES = ("MAP@R", "R@1", "NMI")


def scores(z, labels, seed: int = 0, measures=MEASURES, cluster_classes: int | None = None, device=None) -> dict:
    """The bench's ``measures`` (default all three) on one test embedding: MAP@R (Musgrave et al. 2020), Recall@1
    and NMI (k-means with as many clusters as classes, ``seed``, over the first ``cluster_classes`` classes where a
    profile gives that number, as the chapters cluster them: :func:`dml_tutorial.metrics.clustered_subset`). A
    search that reads MAP@R alone, or noise runs that read Recall@1 alone, skip the rest: NMI's k-means costs more
    than the other two together (benchmarks/bench_loop_floor.py)."""
    unknown = set(measures) - set(MEASURES)
    if unknown or not measures:
        raise ValueError(f"measures must be some of {', '.join(MEASURES)}, got {list(measures)}")
    measure = {"MAP@R": lambda: metrics.map_at_r(z, labels, device=device),
               "R@1": lambda: metrics.recall_at_k(z, labels, (1,), device=device)[1],
               "NMI": lambda: metrics.nmi(*metrics.clustered_subset(z, labels, cluster_classes), seed=seed,
                                          device=device)}
    return {m: measure[m]() for m in MEASURES if m in measures}


def run(splits, name: str, cfg: dict, *, value=None, lr: float | None = None, seed: int = 0, device="auto",
        noise=None, fraction: float = 1.0, measures=MEASURES, epochs: int | None = None,
        every: int | None = None) -> experiment.Run:
    """Train method ``name`` (its knob at ``value``, at learning rate ``lr`` and for ``epochs`` where given) on
    ``splits.train`` and measure :func:`scores` (its ``measures``) on ``splits.test``; with ``every``, also the
    first of ``measures`` on ``splits.test`` after every ``every`` epochs and after the last, into the history (the
    curve :func:`choose_lengths` reads, on a validation split). Supervised methods:
    :func:`dml_tutorial.experiment.train_and_retrieve` on P x K batches (``cfg["p"]`` classes, at most as many as the
    training split has, x ``cfg["k"]``, so the batch size is kept when a validation split has fewer classes), with
    label ``noise`` and a ``fraction`` of the samples. Unsupervised methods:
    :func:`dml_tutorial.clustering.train_and_retrieve`; labels never reach them, so ``noise`` and ``fraction`` are
    refused. Either way only the test split is embedded, and measured once, here."""
    m, cfg_m = method(name), settings(name, cfg, value, lr, epochs)
    evaluate = None
    if every is not None:
        cfg_m = cfg_m.replace(eval_every=every)
        evaluate = _checkpoint(splits.test, seed, measures[0], cfg)
    if m.supervised:
        classes = len(np.unique(splits.train.labels))
        p = min(cfg["p"], classes)
        result = experiment.train_and_retrieve(splits, make_loss(name, value), cfg_m, p=p,
                                               k=cfg["p"] * cfg["k"] // p, seed=seed, device=device, noise=noise,
                                               fraction=fraction, score=False, evaluate=evaluate)
    else:
        if noise is not None or fraction != 1.0:
            raise ValueError(f"{name} trains without labels: label noise and the topline do not apply to it")
        result = clustering.train_and_retrieve(splits, m.unsupervised, cfg_m, seed=seed, device=device, score=False,
                                               evaluate=evaluate)
    seconds = result.metrics["seconds"]
    result.metrics = {**scores(result.test_embeddings, splits.test.labels, seed, measures, cfg.get("cluster_classes"),
                               train.resolve_device(device)), "seconds": seconds}
    return result


# --- the chapter's experiment, as data: every training it runs, declared once ---------------------------------------
#: The bench's tables, in the order it runs them: the search and the lengths on the validation split, then the
#: bench and the noise rates on the chapter's split.
SEARCH, LENGTH, MAIN, NOISE = "search", "length", "bench", "noise rates"


def trial_specs(trials: dict, cfg, seeds) -> list[RunSpec]:
    """One round of :func:`search` as specs: each trial ``{(name, (value, lr)): kwargs of run}`` on the validation
    split, on each of ``seeds``, its method the bench method's name and its options :func:`run`'s arguments."""
    return [RunSpec(SEARCH, name, name, cfg, key, seed=s, split="validation",
                    options={k: v for k, v in kwargs.items() if k != "name"})
            for (name, key), kwargs in trials.items() for s in seeds]


def grid(cfg, seeds, choices: dict | None = None) -> list[RunSpec]:
    """Every training of the bench after its search, at the run's ``choices`` (``{"value": {name: v}, "lr": {name:
    lr}, "epochs": {name: e}}``: the search's knob and rate, the lengths' epochs; a method's defaults where
    absent): the lengths (where the profile chooses them: each method trained to :func:`length_trial`'s longest
    with MAP@R at its checkpoints, on the validation split, the first ``search_seeds`` seeds), the bench (every
    method, all three measures) and the noise rates (each labelled method at each noisy rate and its topline, the
    1 - p clean samples, R@1 only), each on every seed. Their method is the bench method's name, their options
    :func:`run`'s arguments. The notebook runs them (:func:`run_spec`), the plan counts and times them, the cache
    keys on them."""
    choices, names = choices or {}, selected(cfg)
    at = {n: {"value": choices.get("value", {}).get(n, method(n).values[0]), "lr": choices.get("lr", {}).get(n),
              "epochs": choices.get("epochs", {}).get(n)} for n in names}
    specs = []
    if cfg.search_seeds and cfg.length_factor:
        for n in names:
            longest, every = length_trial(n, cfg)
            specs += [RunSpec(LENGTH, n, n, cfg, (at[n]["value"], at[n]["lr"]), seed=s, split="validation",
                              options={**at[n], "epochs": longest, "every": every, "measures": ("MAP@R",)})
                      for s in list(seeds)[:cfg.search_seeds]]
    specs += [RunSpec(MAIN, n, n, cfg, seed=s, options=at[n]) for n in names for s in seeds]
    for n in [n for n in names if method(n).supervised]:
        for rate in [r for r in cfg.rates if r]:
            noisy = {**at[n], "measures": ("R@1",)}
            specs += [RunSpec(NOISE, n, n, cfg, (rate, "noisy"), seed=s,
                              options={**noisy, "noise": ("symmetric", rate)}) for s in seeds]
            specs += [RunSpec(NOISE, n, n, cfg, (rate, "topline"), seed=s, options={**noisy, "fraction": 1 - rate})
                      for s in seeds]
    return specs


def run_spec(splits: dict, device="auto"):
    """``run(spec) -> Run`` for :func:`dml_tutorial.experiment.run_grid`: one :class:`~dml_tutorial.spec.RunSpec`
    of :func:`grid` or :func:`trial_specs` trained and measured by :func:`run` on ``splits[spec.split]``. A
    ``functools.partial``, so that the cache's key holds the data it binds."""
    return partial(_train_spec, splits=splits, device=device)


def _train_spec(spec: RunSpec, *, splits: dict, device="auto") -> experiment.Run:
    """:func:`run_spec`'s runner."""
    return run(splits[spec.split], spec.method, spec.settings, seed=spec.seed, device=device, **spec.options)


def _checkpoint(test, seed: int, measure: str, cfg: dict):
    """``evaluate(model) -> {measure: value}``: :func:`scores`' ``measure`` on ``test``'s embeddings."""
    workers = cfg.get("workers", 0)

    def evaluate(model):
        z = train.embed(model, test, num_workers=workers)
        return scores(z, test.labels, seed, (measure,), cfg.get("cluster_classes"), next(model.parameters()).device)

    return evaluate


def validation_split(splits, held_out: int = 2) -> Splits:
    """Inside the training split only (the seen classes): its last ``held_out`` classes become the test side, the
    others the training side, so a search never looks at a test class or a test image."""
    classes = np.unique(splits.train.labels)
    if not 0 < held_out < len(classes) - 1:
        raise ValueError(f"held_out must leave at least two training classes of {len(classes)}, got {held_out}")
    test = np.isin(splits.train.labels, classes[-held_out:])
    return Splits(splits.name, "validation", splits.train.subset(~test), splits.train.subset(test), splits.source,
                  list(splits.class_names))


def choose(results: dict, metric: str = "MAP@R") -> dict:
    """``{name: value}``: for each method, the candidate whose runs reach the highest mean ``metric``, from
    ``{(name, value): [Run per seed]}`` (ties: the first candidate listed, the paper's default)."""
    best = {}
    for (name, value), runs in results.items():
        mean = float(np.mean([r.metrics[metric] for r in runs]))
        if name not in best or mean > best[name][1]:
            best[name] = (value, mean)
    return {name: value for name, (value, _) in best.items()}


def choose_lengths(results: dict, metric: str = "MAP@R") -> tuple[dict, dict]:
    """Each method's training length, read from its checkpoints on a validation split (issue #48: every method
    trained to where its validation curve stops rising, as Musgrave et al. 2020 keep each method's best validation
    checkpoint). ``results``: ``{(name, (value, lr)): [Run per seed]}``, each run trained with checkpoints
    (:func:`run` with ``every``) at the method's chosen setting. The length is the checkpoint with the highest
    mean ``metric`` over the seeds (ties: the shorter). Returns ``({name: epochs}, table)``, the table ``{"<name>,
    <knob> = <value>[, lr <rate>]": {"<n> epochs": [value per seed]}}`` for :func:`dml_tutorial.report.record`."""
    if not results:
        raise ValueError("choose_lengths needs at least one method's checkpoints")
    chosen, table = {}, {}
    for (name, (value, lr)), runs in results.items():
        curves = [{r["epoch"]: r[metric] for r in run.history.records if metric in r} for run in runs]
        epochs = sorted(set.intersection(*(set(c) for c in curves)))
        if not epochs:
            raise ValueError(f"{name}'s runs share no checkpoint with {metric!r}: train them with every")
        means = {e: float(np.mean([c[e] for c in curves])) for e in epochs}
        chosen[name] = max(epochs, key=lambda e: (means[e], -e))
        row = f"{name}, {method(name).knob} = {value:g}" + (f", lr {lr:g}" if lr else "")
        table[row] = {f"{e} epochs": [c[e] for c in curves] for e in epochs}
    return chosen, table


def recorded_choice(table: dict, metric: str = "MAP@R") -> dict:
    """``{name: (value, lr)}``: each method's choice read back from a recorded search table (the chapter's
    "Search: MAP@R on the validation classes", rows ``"<name>, <knob> = <value>[, lr <rate>]"``), the row with
    the highest mean ``metric`` over seeds, as :func:`choose` picked it (ties: the first row); ``lr`` is ``None``
    where the search tried no rates."""
    best = {}
    for row, columns in table.items():
        name, value, lr = _setting(row)
        mean = float(np.mean(columns[metric]))
        if name not in best or mean > best[name][2]:
            best[name] = (value, lr, mean)
    return {name: (value, lr) for name, (value, lr, _) in best.items()}


#: The table of each method's validation curve at the chosen setting (:func:`choose_lengths`).
LENGTH_TABLE = tables.BENCH_LENGTH


def still_climbing(runs: list[dict]) -> tuple[int, int]:
    """``(capped, chosen)``: over the run files ``runs`` (:func:`dml_tutorial.report.runs_of`), seed by seed, how
    many of the lengths chosen (seeds x methods, a sum over the runs' :data:`LENGTH_TABLE`) the budget set, not the
    curve (:func:`capped`); ``(0, 0)`` when no run chose a length."""
    found = [t["measured"] for r in runs for t in r["tables"] if tables.key(t) == LENGTH_TABLE.id]
    return sum(len(capped(t)) for t in found), sum(len(t) for t in found)


def capped(table: dict) -> list[str]:
    """The methods whose length the budget chose, not the curve, read back from a recorded length table
    (:data:`LENGTH_TABLE`, rows ``"<name>, <knob> = <value>[, lr <rate>]"``, columns ``"<n> epochs"``): those
    whose checkpoint with the highest mean over seeds (ties: the shorter, as :func:`choose_lengths` picks) is the
    longest one tried. Their validation curve had not stopped rising at ``length_factor`` times their budget, so
    they are ranked while still climbing."""
    names = []
    for row, columns in table.items():
        means = {int(column.split()[0]): float(np.mean(v)) for column, v in columns.items()}
        if max(means, key=lambda e: (means[e], -e)) == max(means):
            names.append(_setting(row)[0])
    return names


def _setting(row: str) -> tuple[str, float, float | None]:
    """``(name, value, lr)`` from a search or length table's row ``"<name>, <knob> = <value>[, lr <rate>]"``."""
    row, _, lr = row.partition(", lr ")
    head, value = row.rsplit(" = ", 1)
    name = head.rsplit(", ", 1)[0]  # a name may hold commas ("Triplet, random semi-hard"); a knob does not
    return name, float(value), float(lr) if lr else None


#: One learning rate for several methods: moved to :mod:`dml_tutorial.ladder`, the searches' module.
shared_rate = ladder.shared_rate


def robustness(noisy, topline, metric: str = "R@1") -> dict:
    """Le & Odobez 2018's robustness at one noise rate p: ``metric`` trained on noisy labels over ``metric`` of
    the topline trained on the 1 - p clean samples, one ratio per seed (paired: the same seed draws the noise and
    the subsample), then :func:`dml_tutorial.evidence.mean_interval` of the ratios (1: noise costs only the
    wrong labels' samples)."""
    if len(noisy) != len(topline) or not noisy:
        raise ValueError(f"need as many noisy runs as topline runs, got {len(noisy)} and {len(topline)}")
    ratios = [n.metrics[metric] / t.metrics[metric] for n, t in zip(noisy, topline)]
    return {**evidence.mean_interval(ratios), "ratios": ratios}


def ranking(values: dict) -> pd.DataFrame:
    """``{method: per-seed values}`` (higher is better, the same seeds for every method) as a table sorted best
    first: mean, 95% interval of the mean (in points) and the rank with ties of
    :func:`dml_tutorial.evidence.tied_ranks` (in mean order, each method tested against the first of its group)."""
    ranks = evidence.tied_ranks(values)
    rows = []
    for name, v in values.items():
        iv = evidence.mean_interval(v)
        rows.append({"method": name, "mean": 100 * iv["mean"], "low": 100 * iv["ci"][0], "high": 100 * iv["ci"][1],
                     "seeds": iv["n"], "rank": ranks[name]})
    frame = pd.DataFrame(rows, columns=["method", "mean", "low", "high", "seeds", "rank"])
    return frame.sort_values(["rank", "mean"], ascending=[True, False]).set_index("method")


def baseline(methods) -> str:
    """The row ``methods`` (names, in order) are compared with: :data:`BASELINE`, or the first method where a run
    leaves it out (a profile's ``methods`` may)."""
    methods = list(methods)
    if not methods:
        raise ValueError("no methods to compare")
    return BASELINE if BASELINE in methods else methods[0]


def versus(values: dict, base: str) -> pd.DataFrame:
    """Every method of ``{method: per-seed values}`` against ``base``, paired by seed (:func:`dml_tutorial.evidence.
    paired`; under one seed the labelled methods share their initialisation and batches, the unsupervised ones the
    initialisation): the gain's mean and 95% interval in points and the word "better" / "worse" where the interval
    excludes 0, else "tied". ``base`` itself is left out."""
    if base not in values:
        raise ValueError(f"the baseline {base!r} is not among the methods {list(values)}")
    rows = []
    for name, v in values.items():
        if name == base:
            continue
        d = evidence.paired(values[base], v)
        low, high = d["ci"]
        word = "better" if low > 0 else "worse" if high < 0 else "tied"
        rows.append({"method": name, "gain": 100 * d["mean"], "low": 100 * low, "high": 100 * high, "": word})
    return pd.DataFrame(rows, columns=["method", "gain", "low", "high", ""]).set_index("method")


def term_gains(values: dict) -> pd.DataFrame:
    """Each method with a :attr:`Method.base` against that base, paired by seed, as :func:`versus` words it
    (issue #48: DCDL's rows train on DCDL's own triplet, so their term's gain is read against that triplet alone;
    EC's and EPS's against the random semi-hard triplet they change). ``values``: ``{method: per-seed values}``;
    a method whose base is not among them is left out. Rows ``"<method> vs <base>"``."""
    rows = []
    for name, v in values.items():
        base = METHODS[name].base if name in METHODS else None
        if base in values:
            rows.append(versus({base: values[base], name: v}, base).rename(index={name: f"{name} vs {base}"}))
    columns = ["gain", "low", "high", ""]
    return pd.concat(rows) if rows else pd.DataFrame(columns=columns, index=pd.Index([], name="method"))


def gated(table: dict, metric: str = "R@1", smallest_effect: float | None = None, confidence: float = 0.95) -> dict:
    """``{method: (passes, reason)}``: the book's one gate rule (:func:`dml_tutorial.evidence.gate`) for every
    method row of a bench table ``{row: {metric: per-seed values}}``: does its ``metric`` beat each reference row
    the table holds (:data:`~dml_tutorial.tables.REFERENCES`, and the pretrained start where there is one) by
    ``smallest_effect`` (a fraction; ``None``: the book's smallest retrieval effect,
    :data:`dml_tutorial.claims.RETRIEVAL`, 2 points of R@1), paired by seed at ``confidence`` adjusted for the
    methods tested (Bonferroni), with room below the ceiling? Issue #48: "training helps" and robustness are
    reported on R@1, and robustness only for the rows that pass. A table without both reference rows gates
    nothing: every row fails."""
    names = [n for n in table if n in METHODS and metric in table[n]]
    refs = claims.gate_references(table, metric)
    if refs is None:
        return {n: (False, claims.NO_REFERENCES) for n in names}
    effect = claims.RETRIEVAL[0] / 100 if smallest_effect is None else smallest_effect
    level = evidence.adjusted_confidence(max(1, len(names)), confidence)
    return {n: evidence.gate(table[n][metric], refs, effect, level) for n in names}


# --- what the bench says, in sentences (the chapter's section 6) ----------------------------------------------------
def said(where: str, table: dict, robust: dict) -> str:
    """What a recorded bench run says, as one list item of the chapter: ``table`` (``{row: {"MAP@R", "R@1", ...:
    per-seed values}}``, the methods and the reference rows) and ``robust`` (``{method: {"p = <rate>": per-seed
    ratios}}``, :func:`robustness`'s). The methods sharing rank 1 by MAP@R (:func:`ranking`), the best and worst
    means, each method against :func:`baseline` and each term against its own loss (:func:`versus`,
    :func:`term_gains`), how many pass the gate on R@1 (:func:`gated`), and among those the most and least robust
    at the largest noise rate, with how many lie above their topline with their whole interval."""
    frame = ranking({n: table[n]["MAP@R"] for n in table if n in METHODS})
    top = list(frame.index[frame["rank"] == 1])
    maps = {n: table[n]["MAP@R"] for n in frame.index}
    base = baseline(maps)
    gains, terms = versus(maps, base)[""], term_gains(maps)[""]
    gate = gated(table)  # R@1 against every reference row, 2 points
    helps = [n for n, (passes, _) in gate.items() if passes]
    text = [(f"- **{where}**: {len(top)} of {len(frame)} methods share rank 1 by MAP@R "
             f"({'; '.join(label_tex(n) for n in top)}); the best mean is {frame['mean'].iloc[0]:.1f}% "
             f"({label_tex(frame.index[0])}), the worst {frame['mean'].iloc[-1]:.1f}%. Paired by seed against "
             f"{label_tex(base)}, {(gains == 'better').sum()} method(s) are better, "
             f"{(gains == 'worse').sum()} worse and {(gains == 'tied').sum()} tied.")]
    if len(terms):
        count = terms.value_counts()
        text.append(f"Terms against their own loss: {count.get('better', 0)} better, {count.get('worse', 0)} worse, "
                    f"{count.get('tied', 0)} tied.")
    text.append(f"{len(helps)} of {len(gate)} pass the gate on R@1.")
    worst = max(float(c.split("= ")[1]) for c in next(iter(robust.values())))
    held = ranking({n: robust[n][f"p = {worst:g}"] for n in robust if n in helps})
    if held.empty:
        return " ".join(text)
    above = int((held["low"] > 100).sum())
    text.append(f"Of those, under noise p = {worst:g}, the most robust is {label_tex(held.index[0])} "
                f"({held['mean'].iloc[0]:.1f}% of its topline's Recall@1), the least {label_tex(held.index[-1])} "
                f"({held['mean'].iloc[-1]:.1f}%); {int((held['rank'] == 1).sum())} method(s) share the first rank, "
                f"and {above} lie above 100% with their whole interval")
    text.append("(for those, all the images with their noisy labels beat the clean 1 - p fraction: at this scale "
                "more images help more than the wrong labels hurt, and the topline is no upper bound)." if above
                else "(the topline bounds them).")
    return " ".join(text)


def first_look(where: str, table: dict) -> str:
    """A recorded bench run with fewer seeds than a rank needs (:data:`dml_tutorial.evidence.MIN_SEEDS`), as one
    list item: the leading and trailing methods by mean MAP@R and the reference rows' means, no ranks."""
    means = {n: 100 * np.mean(table[n]["MAP@R"]) for n in table if n in METHODS}
    best, worst = max(means, key=means.get), min(means, key=means.get)
    refs = [f"{r} {100 * np.mean(table[r]['MAP@R']):.1f}%" for r in table if r not in means]
    return (f"- **{where}**: fewer seeds than the {evidence.MIN_SEEDS} a rank needs, so no ranks yet. By mean MAP@R "
            f"{label_tex(best)} leads ({means[best]:.1f}%) and {label_tex(worst)} trails ({means[worst]:.1f}%); "
            + "; ".join(refs) + ".")


def climbing(runs: list[dict]) -> str:
    """How many of the lengths the run files ``runs`` chose (seeds x methods) the budget set, not the curve
    (:func:`still_climbing`), as a sentence; ``""`` where none chose a length."""
    capped_, chosen = still_climbing(runs)
    if not chosen:
        return ""
    return (f" In {capped_} of the {chosen} lengths chosen (seeds x methods) the best validation checkpoint was the "
            "last one tried: still climbing at the budget's end.")


def validated_text(runs: list[dict]) -> str:
    """Where DCDL's validated weights in the findings come from (test bed I's bench), beside what test bed II's bench
    search chose on each seed, from the run files ``runs`` (:func:`dml_tutorial.report.load_runs`)."""
    from .labels import label_tex

    fixed = ", ".join(f"{label_tex('L^' + t)} {lam}" for t, lam in claims.DCDL_VALIDATED.items())
    text = (f"The validated weights of the findings ({fixed}) are test bed I's: its bench searched them on "
            "validation characters.")
    searches = {t["seeds"][0]: recorded_choice(t["measured"])  # each seed its own search
                for r in runs if r["chapter"] == "bench" and r.get("profile") == "glyphs2"
                for t in r["tables"] if t["table"] == "Search: MAP@R on the validation classes"}
    if not searches:
        return text
    seeds = sorted(searches)
    picks = "; ".join(f"{label_tex('L^' + t)} " + ", ".join(f"{searches[s]['Triplet + L^' + t][0]:g}" for s in seeds)
                      for t in claims.DCDL_VALIDATED)
    chose = f"seed{'s' * (len(seeds) > 1)} {', '.join(map(str, seeds))}"
    return f"{text} Test bed II's bench search chose, on {chose}: {picks}."
