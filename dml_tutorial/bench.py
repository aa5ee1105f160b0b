"""Chapter 8's bench: every method of the course on one backbone, one dataset and the same seeds, with the same
search for each of its knob, its learning rate and its training length (Musgrave et al. 2020, "A Metric Learning
Reality Check": gains shrink when methods are compared so), and each one's robustness to label noise measured as
Le & Odobez 2018 do (section 6.1: the ratio to a topline trained on the 1 - p clean samples).

    val = bench.validation_split(splits, held_out=2)            # inside the seen classes
    run = bench.run(splits, "Triplet + EC", cfg, value=0.1, seed=0)
    run.metrics  # {"MAP@R": ..., "R@1": ..., "NMI": ..., "seconds": ...}
    choices = bench.best_shots(cfg, 0, trial_run)               # each row's rate, length and knob (issue #86)
    specs = bench.grid(cfg, seeds, choices)                     # every training after the searches

A method (:data:`METHODS`) is a local loss of the zoo with its sampling strategy, plus at most one class-wise term
of :mod:`dml_tutorial.objective`, or an unsupervised method of :mod:`dml_tutorial.clustering` (SME, CBSwR), which
sees no labels at all. Each has one hyperparameter, its ``knob``, which the one search of
:mod:`dml_tutorial.search` walks from the paper's own setting along a ladder, with its learning rate and its
length (:func:`search_rule`), on held-out seen classes, each row on its own: every method on clean labels and
every labelled one at each noise rate, on held-out labels as noisy (:func:`best_shots`); a control (DCDL's
triplet alone) keeps the one setting of the rows it is the base of. Each loss
keeps the reduction of its definition (:mod:`dml_tutorial.losses`: the triplet loss the mean over its sampled
triplets, zeros included; the margin loss the mean over its non-zero terms; multi-similarity a mean over anchors,
N-pair over anchor/positive pairs, binomial a mean over positive pairs plus one over negative pairs), each added
term its own (:mod:`dml_tutorial.objective`). Every method is measured by :func:`scores`, on the same test
embeddings.
"""

from __future__ import annotations

import dataclasses
import sys
from dataclasses import dataclass
from functools import partial

import numpy as np
import pandas as pd

from . import claims, clustering, dcdl, ecaml, evidence, experiment, grids, metrics, search, tables, train
from . import noise as label_noise
from .eps import SYMBOLS
from .labels import label_tex
from .objective import TERMS, objective
from .settings import BenchSettings, CBSwRSettings, Settings
from .spec import RunSpec
from .tables import Recorded


@dataclass(frozen=True)
class Method:
    """``local`` (a key of :data:`dml_tutorial.objective.LOCAL`) with ``options`` (its sampling strategies), or the
    :mod:`~dml_tutorial.clustering` method ``unsupervised``; ``knob`` is the searched hyperparameter: a term of
    :data:`dml_tutorial.objective.TERMS` (its weight), ``"lr"`` (the learning rate), a local-loss option, or a
    setting of the unsupervised method (``tau``, ``k``); ``values`` the paper's default, where every search
    starts (:func:`search_rule`), then two others of test bed I's search; ``ladder`` the values a search's walk
    may reach, in order, ``values`` among them;
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
#: The ladders a search's knob walks (:func:`search_rule`): a step beyond each end of test bed I's candidates, or two
#: where the bench's first test bed II search chose an end (N-pair's scale 10, a triplet margin of 0.4).
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
    way (a rate a search chose, :func:`best_shots`); so does ``epochs`` the number of epochs (a length it chose)."""
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
    curve a search reads, on a validation split). :func:`fit` with the method's :func:`settings`."""
    own = settings(name, cfg, value, lr, epochs)
    if every is not None:
        own = own.replace(eval_every=every)
    return fit(splits, name, own, value=value, seed=seed, device=device, noise=noise, fraction=fraction,
               measures=measures, curve=measures[0] if every is not None else None)


def fit(splits, name: str, own, *, value=None, seed: int = 0, device="auto", noise=None, fraction: float = 1.0,
        measures=MEASURES, curve: str | None = None) -> experiment.Run:
    """Train method ``name`` with its own settings ``own`` (:func:`settings`: the bench's for a labelled method,
    whose knob is ``value``; a :class:`~dml_tutorial.settings.CBSwRSettings` holding its knob for an unsupervised
    one) and measure :func:`scores` on ``splits.test``; with ``curve``, that measure on ``splits.test`` every
    ``own.eval_every`` epochs and after the last, into the history. Labelled methods:
    :func:`dml_tutorial.experiment.train_and_retrieve` on P x K batches (``own.p`` classes, at most as many as the
    training split has, x ``own.k``, so the batch size is kept when a validation split has fewer classes), with
    label ``noise`` and a ``fraction`` of the samples. Unsupervised methods:
    :func:`dml_tutorial.clustering.train_and_retrieve`; labels never reach them, so ``noise`` and ``fraction`` are
    refused. Either way only the test split is embedded, and measured once, here."""
    m = method(name)
    evaluate = None if curve is None else _checkpoint(splits.test, seed, curve, own)
    if m.supervised:
        classes = len(np.unique(splits.train.labels))
        p = min(own["p"], classes)
        result = experiment.train_and_retrieve(splits, make_loss(name, value), own, p=p, k=own["p"] * own["k"] // p,
                                               seed=seed, device=device, noise=noise, fraction=fraction,
                                               score=False, evaluate=evaluate)
    else:
        if noise is not None or fraction != 1.0:
            raise ValueError(f"{name} trains without labels: label noise and the topline do not apply to it")
        result = clustering.train_and_retrieve(splits, m.unsupervised, own, seed=seed, device=device, score=False,
                                               evaluate=evaluate)
    seconds = result.metrics["seconds"]
    result.metrics = {**scores(result.test_embeddings, splits.test.labels, seed, measures, own.get("cluster_classes"),
                               train.resolve_device(device)), "seconds": seconds}
    return result


# --- the chapter's experiment, as data: every training it runs, declared once ---------------------------------------
#: The bench's tables, in the order it runs them: each row's search on the validation split, then the bench and
#: the noise rates on the chapter's split.
BEST_SHOT, MAIN, NOISE = "best shot", "bench", "noise rates"


def row_name(name: str, rate: float = 0.0) -> str:
    """A searched row: the method's name on clean labels, ``"<name>, p = <rate>"`` under symmetric noise."""
    return name if not rate else f"{name}, p = {rate:g}"


def rows(cfg) -> dict:
    """``{row: (method, rate)}``: every method of the profile on clean labels, and every labelled one at each noisy
    rate of ``cfg.rates``: each row searched on its own (issue #86: a noisy row on noisy held-out labels, not at
    the setting its clean labels chose)."""
    names = selected(cfg)
    out = {row_name(n): (n, 0.0) for n in names}
    out.update({row_name(n, r): (n, r) for r in cfg.rates if r for n in names if method(n).supervised})
    return out


def search_rule(cfg, name: str) -> search.Search | None:
    """The one search (:mod:`dml_tutorial.search`) of method ``name``'s rows: its rate along ``cfg.search_lrs``
    from ``cfg.search_lr_start``; its knob from the paper's value along its ladder, as every chapter's search
    starts, a term's weight 0 always a candidate (:attr:`Method.values`, :attr:`Method.ladder`; a control keeps
    its one value); its length from ``cfg.search_lengths`` (``cfg.unsup_search_lengths`` for an unsupervised method, whose
    epochs are passes over the images), on the validation split's MAP@R (R@1 saturates on test bed II); ``None``
    where the profile searches nothing (no ``search_lrs``)."""
    if not cfg.search_lrs:
        return None
    m = method(name)
    knob = None
    if len(m.values) > 1:
        knob = search.Axis(m.knob, m.ladder or m.values, m.values[:1], 0.0 if m.knob in TERMS else None)
    lengths, every = ((cfg.search_lengths, cfg.search_every) if m.supervised else
                      (cfg.unsup_search_lengths, cfg.unsup_search_every))
    return search.Search("MAP@R", search.Axis("lr", cfg.search_lrs, cfg.search_lr_start), lengths, knob, every,
                         patience=cfg.search_patience)


def _row_spec(cfg, row: str, seed: int) -> RunSpec:
    name, rate = rows(cfg)[row]
    m = method(name)
    return RunSpec(BEST_SHOT, row, name, settings(name, cfg), rate, seed=seed,
                   options={"measures": ("MAP@R",), **_knob(m, m.values[0]), **_noisy(rate)})


def _knob(m: Method, value) -> dict:
    """A labelled method's knob, as a run's option (an unsupervised method's is a setting: :func:`settings`)."""
    return {"value": value} if m.supervised else {}


def _noisy(rate: float) -> dict:
    return {"noise": ("symmetric", rate)} if rate else {}


def _vary(spec: RunSpec, name: str, value) -> RunSpec:
    """A search trial's knob: a labelled method's loss parameter (its option ``value``), an unsupervised one's
    setting."""
    if method(spec.method).supervised:
        return dataclasses.replace(spec, options={**spec.options, "value": value})
    return dataclasses.replace(spec, settings=spec.settings.replace(**{name: value}))


def best_shots(cfg, seed: int, run) -> dict:
    """Each row of :func:`rows` at its best shot (:func:`dml_tutorial.search.best_shot` under
    :func:`search_rule`) on the validation split, its held-out labels as noisy as the row's, on ``seed``, each
    trial run by ``run`` (:func:`run_spec`, through a grid's cache). Returns the run's choices, ``{"best shot":
    {row: Choice as data}}`` (``{}`` where the profile searches nothing), which :func:`grid` applies and the run
    file records."""
    chosen = {row: search.best_shot(_row_spec(cfg, row, seed), rule, run, _vary).as_data()
              for row, (name, _) in rows(cfg).items() if (rule := search_rule(cfg, name))}
    return {"best shot": chosen} if chosen else {}


def best_shot_trials(cfg, seed: int) -> list[RunSpec]:
    """The trials :func:`best_shots` makes whatever the scores, for the plan (the walks': :func:`unplanned`)."""
    return [trial for row, (name, _) in rows(cfg).items() if (rule := search_rule(cfg, name))
            for trial in search.starting_trials(_row_spec(cfg, row, seed), rule, _vary)]


def unplanned(cfg, choices: dict) -> int:
    """How many trials :func:`best_shots` made beyond :func:`best_shot_trials`."""
    found = rows(cfg)
    return search.walked(choices, lambda row: search_rule(cfg, found[row][0]))


def trained(cfg, choices: dict | None, name: str, rate: float = 0.0) -> tuple:
    """``(settings, options)`` of method ``name`` at noise ``rate`` as its row's search chose them (rate, length,
    knob: :func:`dml_tutorial.search.chosen`); the profile's and the paper's knob where none searched it."""
    m, values = method(name), search.chosen(choices, row_name(name, rate))
    value = values.get(m.knob, m.values[0])
    own = settings(name, cfg, value).replace(**{k: values[k] for k in ("lr", "epochs") if k in values})
    return own, _knob(m, value)


def grid(cfg, seeds, choices: dict | None = None) -> list[RunSpec]:
    """Every training of the bench after its searches, at the run's ``choices`` (:func:`best_shots`: each row's
    rate, length and knob; the profile's and the paper's where none searched): the bench (every method, all three
    measures) and the noise rates (each labelled method at each noisy rate at its noisy row's choice, and its
    topline, the 1 - p clean samples, at its clean row's: Le & Odobez's; R@1 only), each on every seed. Their
    method is the bench method's name, their settings its own (:func:`settings`), their options :func:`fit`'s
    arguments. The notebook runs them (:func:`run_spec`), the plan counts and times them, the cache keys on
    them."""
    names, seeds = selected(cfg), list(seeds)
    specs = []
    for n in names:
        own, knob = trained(cfg, choices, n)
        specs += [RunSpec(MAIN, n, n, own, seed=s, options=knob) for s in seeds]
    for n in [n for n in names if method(n).supervised]:
        clean, clean_knob = trained(cfg, choices, n)
        for rate in [r for r in cfg.rates if r]:
            own, knob = trained(cfg, choices, n, rate)
            specs += [RunSpec(NOISE, n, n, own, (rate, "noisy"), seed=s,
                              options={**knob, "measures": ("R@1",), **_noisy(rate)}) for s in seeds]
            specs += [RunSpec(NOISE, n, n, clean, (rate, "topline"), seed=s,
                              options={**clean_knob, "measures": ("R@1",), "fraction": 1 - rate}) for s in seeds]
    return specs


def run_spec(splits: dict, device="auto"):
    """``run(spec) -> Run`` for :func:`dml_tutorial.experiment.run_grid`: one :class:`~dml_tutorial.spec.RunSpec`
    of :func:`grid` or of a search, trained and measured by :func:`fit` on ``splits[spec.split]``. A search's
    trial (``options["curve"]``) records its measure on the split's held-out classes at every checkpoint, their
    labels as noisy as its training labels (:func:`dml_tutorial.noise.held_out_noise`). A ``functools.partial``,
    so that the cache's key holds the data it binds."""
    return partial(_train_spec, splits=splits, device=device)


def _train_spec(spec: RunSpec, *, splits: dict, device="auto") -> experiment.Run:
    """:func:`run_spec`'s runner."""
    o, data = spec.options, splits[spec.split]
    if "curve" in o:
        data = dataclasses.replace(data, test=label_noise.held_out_noise(data.test, o.get("noise"), spec.seed))
    return fit(data, spec.method, spec.settings, value=o.get("value"), seed=spec.seed, device=device,
               noise=o.get("noise"), fraction=o.get("fraction", 1.0), measures=o.get("measures", MEASURES),
               curve=o.get("curve"))


def _checkpoint(test, seed: int, measure: str, cfg: dict):
    """``evaluate(model) -> {measure: value}``: :func:`scores`' ``measure`` on ``test``'s embeddings."""
    workers = cfg.get("workers", 0)

    def evaluate(model):
        z = train.embed(model, test, num_workers=workers)
        return scores(z, test.labels, seed, (measure,), cfg.get("cluster_classes"), next(model.parameters()).device)

    return evaluate


#: The held-out seen classes every search scores on (:func:`dml_tutorial.search.validation_split`).
validation_split = search.validation_split


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


#: The table of each method's validation curve at its chosen setting, in the runs made before the one search.
LENGTH_TABLE = tables.BENCH_LENGTH


def still_climbing(runs: list[dict]) -> tuple[int, int]:
    """``(capped, chosen)``: over the run files ``runs`` (:func:`dml_tutorial.report.runs_of`), seed by seed, how
    many of the lengths chosen (seeds x rows) the budget set, not the curve: a row whose search ended with its
    length at the end of its ladder (its choice's ``edges``: :func:`best_shots`), or, in a run made before the one
    search, a method whose best checkpoint of its :data:`LENGTH_TABLE` was the last (:func:`capped`); ``(0, 0)``
    when no run chose a length."""
    capped_, chosen = 0, 0
    for run in runs:
        shots = (run.get("choices") or {}).get("best shot")
        if shots:
            capped_ += sum("epochs" in c["edges"] for c in shots.values())
            chosen += len(shots)
        for t in [t["measured"] for t in run["tables"] if tables.key(t) == LENGTH_TABLE.id] if not shots else ():
            capped_, chosen = capped_ + len(capped(t)), chosen + len(t)
    return capped_, chosen


def capped(table: dict) -> list[str]:
    """The methods whose length the budget chose, not the curve, read back from a recorded length table
    (:data:`LENGTH_TABLE`, rows ``"<name>, <knob> = <value>[, lr <rate>]"``, columns ``"<n> epochs"``): those
    whose checkpoint with the highest mean over seeds (ties: the shorter, as those runs' search picked) is the
    longest one tried. Their validation curve had not stopped rising at three times their budget, so they are
    ranked while still climbing."""
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
    """How many of the lengths the run files ``runs`` chose (seeds x rows) the budget set, not the curve
    (:func:`still_climbing`), as a sentence, then, for runs of the one search, the rates and knobs chosen at an end
    of their ladders (:func:`dml_tutorial.search.edge_counts`, lengths left out); ``""`` where none chose a length."""
    capped_, chosen = still_climbing(runs)
    if not chosen:
        return ""
    ends = {row: {k: n for k, n in c.items() if k == "seeds" or k[0] != "epochs"}
            for row, c in search.edge_counts(runs).items()}
    knobs = search.edges_text(ends, symbols=SYMBOLS) if any(len(c) > 1 for c in ends.values()) else ""
    return (f" In {capped_} of the {chosen} lengths chosen (seeds x rows) the search ended at its longest length "
            "with the validation curve still rising: the budget chose the length, not the curve."
            + (f" {knobs}" if knobs else ""))


#: The search table of a bench run made before the one search (its rows ``"<name>, <knob> = <value>[, lr <rate>]"``).
SEARCH_TABLE = "Search: MAP@R on the validation classes"


def searched_knobs(run: dict) -> dict:
    """``{method: knob value}`` a bench run file's search chose on clean labels: its choices' best shots
    (:func:`best_shots`), or, for a run made before the one search, its :data:`SEARCH_TABLE`
    (:func:`recorded_choice`)."""
    shots = (run.get("choices") or {}).get("best shot")
    if shots:
        return {row: c["values"].get(METHODS[row].knob, METHODS[row].values[0])
                for row, c in shots.items() if row in METHODS}
    found = [t["measured"] for t in run["tables"] if t["table"] == SEARCH_TABLE]
    return {name: value for name, (value, _) in recorded_choice(found[0]).items()} if found else {}


def validated_text(runs: list[dict]) -> str:
    """Where DCDL's validated weights in the findings come from (test bed I's bench), beside what test bed II's bench
    search chose on each seed, from the run files ``runs`` (:func:`dml_tutorial.report.load_runs`)."""
    fixed = ", ".join(f"{label_tex('L^' + t)} {lam}" for t, lam in claims.DCDL_VALIDATED.items())
    text = (f"The validated weights of the findings ({fixed}) are test bed I's: its bench searched them on "
            "validation characters.")
    searches = {r["seeds"][0]: knobs for r in runs if r["chapter"] == "bench" and r.get("profile") == "glyphs2"
                if (knobs := searched_knobs(r))}  # each seed its own search
    if not searches:
        return text
    seeds = sorted(searches)
    picks = "; ".join(f"{label_tex('L^' + t)} " + ", ".join(f"{searches[s]['Triplet + L^' + t]:g}" for s in seeds)
                      for t in claims.DCDL_VALIDATED)
    chose = f"seed{'s' * (len(seeds) > 1)} {', '.join(map(str, seeds))}"
    return f"{text} Test bed II's bench search chose, on {chose}: {picks}."


# --- the chapter's tables, from its runs ----------------------------------------------------------------------------
#: The bench's two recorded tables.
TABLE = "All methods on the unseen classes"
ROBUSTNESS = "Robustness: Recall@1 under noise over the (1 - p) topline"


def bench_table(results: dict, refs: dict, labels, seeds, cfg, device=None) -> dict:
    """:data:`TABLE`, ``{row: {measure: [one per seed]}}``: each method's runs of :data:`MAIN` (``results``,
    ``{(name, ""): [Run]}``, measured by :func:`fit`), then each reference row of ``refs`` (``{(kind, ""): [Run]}``,
    :func:`dml_tutorial.experiment.references`) scored the same way (:func:`scores`, the seed's k-means)."""
    table = {name: {m: [r.metrics[m] for r in runs] for m in MEASURES} for (name, _), runs in results.items()}
    for (kind, _), runs in refs.items():
        per_seed = [scores(r.test_embeddings, labels, s, cluster_classes=cfg.get("cluster_classes"), device=device)
                    for r, s in zip(runs, seeds)]
        table[kind] = {m: [x[m] for x in per_seed] for m in MEASURES}
    return table


def methods_table(names) -> pd.DataFrame:
    """The methods ``names`` as the chapter lists them: each one's loss (or its unsupervised method), its options,
    the knob its search varies (or keeps fixed), from the paper's value along its ladder."""
    rows = [{"method": m.name, "loss": m.local or f"{m.unsupervised}, no labels",
             "options": ", ".join(f"{k}={v}" for k, v in m.options) or "defaults",
             "searched": m.knob if len(m.values) > 1 else f"{m.knob} (fixed)",
             "from (the paper's)": f"{m.values[0]:g}", "along": ", ".join(f"{v:g}" for v in m.ladder)}
            for m in map(method, names)]
    return pd.DataFrame(rows).set_index("method")


def train_grid(start, splits, plan=None) -> grids.TrainedGrid:
    """The bench on ``splits`` (:func:`dml_tutorial.grids.train`): each row's rate, length and knob on
    ``cfg.held_out`` held-out seen classes (:func:`best_shots`, each row its own search), every training of
    :func:`grid` (the methods, then the noise rates), and the reference rows."""
    validation = validation_split(splits, start.cfg["held_out"])
    print(splits, validation, sep="\n")
    run = run_spec({"main": splits, "validation": validation}, start.device)
    return grids.train(sys.modules[__name__], start, run, splits, plan, search_progress=start.progress or None)


def unseen_table(run: grids.TrainedGrid) -> Recorded:
    """:data:`TABLE`: every method and the reference rows on the unseen classes (:func:`bench_table`)."""
    rows = bench_table(run.table(MAIN), run.refs, run.splits.test.labels, run.seeds, run.cfg, run.start.device)
    return Recorded(TABLE, rows, caption=f"unseen classes, in %, mean ± std over {len(run.seeds)} seeds "
                    f"({run.cfg['profile']})")


def noise_curves(run: grids.TrainedGrid) -> dict:
    """:func:`robustness_curves` of the grid's :data:`NOISE` runs, for the supervised methods at each noisy rate."""
    labelled = [n for n in selected(run.cfg) if METHODS[n].supervised]
    return robustness_curves(run.table(NOISE), labelled, [r for r in run.cfg["rates"] if r])


def noise_table(run: grids.TrainedGrid) -> Recorded:
    """:data:`ROBUSTNESS`: each supervised method's R@1 under noise over its (1 - p) topline's
    (:func:`robustness_table` of :func:`noise_curves`)."""
    return Recorded(ROBUSTNESS, robustness_table(noise_curves(run)), choices=False,
                    caption=f"Recall@1 under noise / Recall@1 of the topline, in %, {len(run.seeds)} seeds")


def ranked(table: dict, methods, measures=MEASURES) -> pd.DataFrame:
    """``methods`` of a bench table ranked by each of ``measures`` (:func:`ranking`), side by side: each measure's
    mean with its 95% interval, in %, and its rank with ties; rows in the first measure's order."""
    frames = []
    for measure in measures:
        frame = ranking({n: table[n][measure] for n in methods})
        cells = [f"{r['mean']:.1f} ({r['low']:.1f} to {r['high']:.1f})" for _, r in frame.iterrows()]
        frames.append(pd.DataFrame({f"{measure}, % (95% CI)": cells, f"rank ({measure})": frame["rank"]},
                                   index=frame.index))
    return frames[0].join(frames[1:])


def robustness_curves(noise_runs: dict, names, rates) -> dict:
    """``{method: {p: robustness}}``: :func:`robustness` at each noisy rate of ``rates`` for each of ``names``
    from the runs of :data:`NOISE` (``{(name, (p, "noisy" | "topline")): [Run]}``), and 1 at p = 0 (there the
    topline is the clean run)."""
    return {n: {0.0: {"mean": 1.0, "ci": (1.0, 1.0)},
                **{p: robustness(noise_runs[(n, (p, "noisy"))], noise_runs[(n, (p, "topline"))])
                   for p in rates if p}} for n in names}


def robustness_table(curves: dict) -> dict:
    """:data:`ROBUSTNESS` as recorded, ``{method: {"p = <rate>": per-seed ratios}}``, from
    :func:`robustness_curves` (p = 0 left out)."""
    return {n: {f"p = {p:g}": c["ratios"] for p, c in by_rate.items() if p} for n, by_rate in curves.items()}


def reading(recorded: dict, kinds) -> list:
    """What the chapter shows of a recorded bench run (``recorded``: its tables by title,
    :func:`dml_tutorial.report.recorded`), in order: the methods ranked (:func:`ranked`; ``kinds``: the reference
    rows, not ranked), a sentence and each method against the baseline and each term against its loss, then the
    robustness at the largest noise rate of the methods that pass the gate on R@1 (or why none is read)."""
    table, robust = recorded[TABLE], recorded[ROBUSTNESS]
    methods = [n for n in table if n not in kinds]
    maps = {n: table[n]["MAP@R"] for n in methods}
    base = baseline(methods)
    measures = [m for m in MEASURES if m in table[methods[0]]]
    out = [ranked(table, methods, measures), f"MAP@R against {base}, then each term against its loss, points (95% CI):",
           pd.concat([versus(maps, base), term_gains(maps)]).round(1)]
    worst = max(float(c.split("= ")[1]) for c in next(iter(robust.values())))
    passing = [n for n, (ok, _) in gated(table).items() if ok]
    at_worst = ranking({n: robust[n][f"p = {worst:g}"] for n in robust if n in passing})
    if at_worst.empty:
        return out + ["No labelled method passes the gate on R@1: no robustness is read."]
    return out + [(f"Recall@1 under noise p = {worst:g} over the topline, % (95% CI), for the {len(at_worst)} "
                   "methods that pass the gate on R@1, ranked:"), at_worst.round(1)]


def recorded_line(bed: str, recorded: dict, runs: list[dict]) -> str:
    """One list item of what a recorded bench run says (:func:`said` with enough seeds for ranks, else
    :func:`first_look`), named ``bed`` and its number of seeds, and how many of its lengths the budget chose
    (:func:`climbing`, from its run files ``runs``)."""
    table = recorded[TABLE]
    n = len(next(iter(table.values()))["MAP@R"])
    where = f"{bed}, {n} seed{'s' * (n > 1)}"
    line = said(where, table, recorded[ROBUSTNESS]) if n >= evidence.MIN_SEEDS else first_look(where, table)
    return line + climbing(runs)
