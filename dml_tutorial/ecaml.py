"""The ECAML training objective (Chen & Deng, *Energy Confused Adversarial Metric Learning*, eq. 11):

    L = L_m + lambda * EC,   EC = sum (or mean) over class pairs I != J of log(1 + L_ec(X_I, X_J)),

with EC computed on the embedding layer only (the backbone's features detached; section 4.2) and the paper's
metric losses (section 4.2): triplet on squared distances of unit vectors with m = 0.1 (eq. 8), N-pair (eq. 9),
binomial deviance with alpha = 2, beta = 0.5, eta = 25 (eq. 10); lambda = 0.02 / 0.3 / 0.13 on CUB and CARS
(a tenth of that on Stanford Online Products).

    loss = ecaml_loss("binomial")               # binomial + 0.13 EC
    loss = ecaml_loss("triplet", lam=0.0)       # the triplet baseline
"""

from __future__ import annotations

import dataclasses
import sys
from functools import partial

from . import experiment, grids, losses, metrics, pretrain, search, tables
from ._checks import check_choice
from .objective import Objective
from .regularizers import energy_confusion, released_energy_confusion, unit_norm_rows
from .spec import RunSpec
from .tables import Recorded

MINERS = ("band", "band-or-random", "released")


def triplet(embeddings, labels, miner: str = "band", **options):
    """ECAML's triplet loss (eq. 8: squared distances of unit vectors, m = 0.1) with one of :data:`MINERS`:
    ``"band"``, FaceNet's semi-hard band (Schroff et al., as the paper cites), which falls silent once the band
    empties; ``"band-or-random"``, a random negative where it is empty (Roth et al.'s fallback); ``"released"``,
    the released code's ``RankHardLossLayer``, half hardest and half random negatives on -z.z
    (:func:`~dml_tutorial.losses.rank_hard_triplet_loss`, margin 0.1). ``options`` go to the loss."""
    check_choice(miner, MINERS, "miner")
    if miner == "released":
        return losses.rank_hard_triplet_loss(embeddings, labels, **{"margin": 0.1, **options})
    negatives = "semihard-band" if miner == "band" else "semihard-band-or-random"
    return losses.triplet_loss(embeddings, labels, **{"margin": 0.1, "squared": True, "negatives": negatives,
                                                       **options})


#: The metric losses of section 4.2 with the paper's hyperparameters (the triplet's miner is a setting:
#: ``local_options={"triplet": {"miner": "released"}}``).
LOCAL_LOSSES = {
    "triplet": triplet,
    "npair": losses.npairs_loss,
    "binomial": partial(losses.binomial_deviance_loss, alpha=2.0, beta=0.5, eta_neg=25.0),
}
#: The paper's three losses, whose rows its tables quote.
PAPER_LOCALS = ("triplet", "npair", "binomial")
#: lambda per loss on CUB and CARS (Tables 4-5); on SOP and In-Shop a tenth of these (Tables 6-7).
LAMBDA = {"triplet": 0.02, "npair": 0.3, "binomial": 0.13}
NAMES = {"triplet": "Triplet", "npair": "N-Pair", "binomial": "Binomial"}


def paper_local(local: str) -> str:
    """The paper's loss whose lambda and rows ``local`` takes (each local loss is one of the paper's; a variant
    named ``triplet-...`` would take the triplet's)."""
    return "triplet" if local.startswith("triplet") else local


def paper_lambda(local: str, dataset: str) -> float:
    """The paper's lambda for ``local`` on ``dataset``: :data:`LAMBDA`, a tenth of it on "sop" (Tables 4-7)."""
    return LAMBDA[paper_local(local)] * (0.1 if dataset == "sop" else 1.0)


def label(local: str, lam: float | None = None) -> str:
    """A row name as the paper's tables write it: ``lam=0`` -> ``"Binomial"``; ``None`` or the paper's lambda ->
    ``"ECAML(Binomial)"``; another lambda -> ``"ECAML(Binomial), λ=0.5"``."""
    if lam == 0:
        return NAMES[local]
    short = {"triplet": "Tri"}.get(local, NAMES[local])
    return f"ECAML({short})" + ("" if lam is None or lam == LAMBDA[paper_local(local)] else f", λ={lam:g}")


def ecaml_loss(
    local: str = "binomial",
    lam: float | None = None,
    log: bool = True,
    reduction: str = "mean",
    fc_only: bool = True,
    fc_unit_norm: float = 0.0,
    ec: str = "paper",
    local_options: dict | None = None,
):
    """``loss(z, y, batch) = L_m(z, y) + lam * EC`` for ``train.fit`` (which passes
    ``batch.x`` and ``batch.model``). ``lam`` defaults to the paper's (:data:`LAMBDA`);
    ``log``: eq. 11 (True) or eq. 7; ``reduction``: "mean" over the class pairs (lambda
    independent of the classes per batch) or "sum" (the equations as printed);
    ``fc_only``: EC reaches the embedding layer only (the paper) or the whole network;
    ``fc_unit_norm``: the released code's extra ``fc_unit_norm *
    unit_norm_rows(embedding weight)`` (0.5 there; 0, the paper, by default);
    ``ec="released"``: EC as the released code computes it instead, log E over ten
    random partners per anchor on the raw (unnormalised) embedding-layer output
    (:func:`~dml_tutorial.regularizers.released_energy_confusion`; ``log`` and
    ``reduction`` then do not apply); ``local_options``: the metric loss's own
    settings over :data:`LOCAL_LOSSES`' (e.g. ``{"scale": 10}`` for N-pair)."""
    if local not in LOCAL_LOSSES:
        raise ValueError(
            f"unknown metric loss {local!r}; choose one of {sorted(LOCAL_LOSSES)}"
        )
    check_choice(ec, ("paper", "released"), "ec")
    lam = LAMBDA[paper_local(local)] if lam is None else float(lam)
    if lam < 0 or fc_unit_norm < 0:
        raise ValueError(
            f"lam and fc_unit_norm must be non-negative, got {lam} and {fc_unit_norm}"
        )
    if ec == "paper":
        ec_term = partial(energy_confusion, log=log, reduction=reduction)
    else:
        ec_term = released_energy_confusion
    ec_objective = Objective(
        NAMES[local],
        partial(LOCAL_LOSSES[local], **(local_options or {})),
        {"energy_confusion": lam},
        label(local, lam),
        term_fns={"energy_confusion": ec_term},
        # fc_only: EC's gradient reaches the embedding layer only (a pass from fc on)
        layer_only={"energy_confusion"} if fc_only else (),
        # the released layer reads the raw fc output; the paper's EC our normalised one
        layer_normalize=False if ec == "released" else None,
    )
    if fc_unit_norm == 0:
        return ec_objective

    def loss(z, y, batch):  # the released code's penalty on the embedding weights
        penalty = unit_norm_rows(batch.model.embedding.weight)
        return ec_objective(z, y, batch) + fc_unit_norm * penalty

    loss.__name__ = ec_objective.__name__
    # the terms objective.term_pulls compares (the metric loss and EC, not the penalty)
    loss.parts, loss.weights = ec_objective.parts, ec_objective.weights
    # as data (a run's cache key, spec.as_data): the objective's terms and the penalty
    loss.describe = lambda: {**ec_objective.describe(), "fc_unit_norm": fc_unit_norm}
    return loss


#: Tables 4 (CARS) and 5 (CUB): Recall@K, NMI and F1 in %, quoted; lambda = 0.02 / 0.3 / 0.13.
REPORTED = {
    "CARS": {
        "Triplet": {"R@1": 68.3, "R@2": 78.3, "R@4": 86.2, "R@8": 91.7, "NMI": 59.2, "F1": 26.2},
        "ECAML(Tri)": {"R@1": 81.0, "R@2": 88.2, "R@4": 92.8, "R@8": 96.0, "NMI": 65.7, "F1": 33.0},
        "N-Pair": {"R@1": 74.3, "R@2": 83.6, "R@4": 90.2, "R@8": 93.1, "NMI": 61.8, "F1": 29.9},
        "ECAML(N-Pair)": {"R@1": 80.4, "R@2": 88.2, "R@4": 92.4, "R@8": 95.8, "NMI": 64.6, "F1": 32.7},
        "Binomial": {"R@1": 74.2, "R@2": 83.1, "R@4": 86.7, "R@8": 92.9, "NMI": 61.5, "F1": 28.8},
        "ECAML(Binomial)": {"R@1": 84.5, "R@2": 90.4, "R@4": 93.8, "R@8": 96.6, "NMI": 68.4, "F1": 38.4},
    },
    "CUB": {
        "Triplet": {"R@1": 49.5, "R@2": 61.7, "R@4": 73.2, "R@8": 82.5, "NMI": 57.2, "F1": 24.1},
        "ECAML(Tri)": {"R@1": 53.4, "R@2": 64.7, "R@4": 75.1, "R@8": 84.7, "NMI": 60.1, "F1": 26.9},
        "N-Pair": {"R@1": 51.9, "R@2": 63.3, "R@4": 73.9, "R@8": 83.0, "NMI": 59.7, "F1": 26.5},
        "ECAML(N-Pair)": {"R@1": 53.2, "R@2": 65.1, "R@4": 75.9, "R@8": 84.9, "NMI": 60.4, "F1": 28.5},
        "Binomial": {"R@1": 52.9, "R@2": 65.0, "R@4": 75.4, "R@8": 83.6, "NMI": 59.0, "F1": 26.5},
        "ECAML(Binomial)": {"R@1": 55.7, "R@2": 66.5, "R@4": 76.7, "R@8": 85.1, "NMI": 61.8, "F1": 30.5},
    },
}
_SOP = ("R@1", "R@10", "R@100", "R@1000", "NMI", "F1")
#: Table 6 (Stanford Online Products): Recall@1/10/100/1000, NMI and F1 in %, quoted; lambda a tenth of CUB/CARS's.
REPORTED["SOP"] = {row: dict(zip(_SOP, values, strict=True)) for row, values in {
    "Triplet": (57.9, 75.6, 88.5, 96.3, 86.4, 20.8), "ECAML(Tri)": (64.9, 80.0, 90.5, 96.9, 87.0, 23.3),
    "N-Pair": (68.0, 84.0, 93.1, 97.8, 87.6, 25.8), "ECAML(N-Pair)": (69.8, 84.7, 93.2, 97.8, 88.0, 27.2),
    "Binomial": (68.5, 84.0, 93.1, 97.7, 88.5, 29.9), "ECAML(Binomial)": (71.3, 85.6, 93.6, 98.0, 89.9, 32.8)}.items()}
#: Table 1 (CARS, R@1 in %): the lambda ablation, as printed (lambda = 0 is the baseline).
REPORTED_LAMBDA = {
    "triplet": {0.0: 68.3, 0.001: 74.6, 0.01: 80.1, 0.02: 81.0, 0.1: 72.3, 1.0: 59.3},
    "npair": {0.0: 74.3, 0.1: 77.4, 0.2: 79.6, 0.3: 80.4, 0.4: 78.6, 0.5: 73.7},
    "binomial": {0.0: 74.2, 0.01: 76.3, 0.1: 83.1, 0.13: 84.5, 0.15: 84.3, 0.5: 69.7},
}
#: Table 3 (CARS, %): dropout after the backbone vs ECAML, binomial loss. The paper's header reads R@1, R@2, R@3,
#: R@4, but the Binomial and ECAML rows repeat Table 4's R@1, R@2, R@4, R@8: we label them so.
REPORTED_DROPOUT = {
    "Binomial": {"R@1": 74.2, "R@2": 83.1, "R@4": 86.7, "R@8": 92.9},
    "Binomial + dropout 0.1": {"R@1": 73.1, "R@2": 82.1, "R@4": 88.6, "R@8": 92.6},
    "Binomial + dropout 0.25": {"R@1": 74.5, "R@2": 83.3, "R@4": 85.9, "R@8": 92.6},
    "Binomial + dropout 0.4": {"R@1": 72.4, "R@2": 81.4, "R@4": 87.5, "R@8": 92.5},
    "ECAML(Binomial)": {"R@1": 84.5, "R@2": 90.4, "R@4": 93.8, "R@8": 96.6},
}
#: Table 2 (CARS, %): the embedding-size ablation, binomial loss with and without EC (lambda = 0.13).
REPORTED_DIM = {
    "Binomial": {128: {"R@1": 70.8, "R@2": 80.8, "R@4": 87.3, "R@8": 92.1, "NMI": 61.2, "F1": 29.3},
                 256: {"R@1": 73.3, "R@2": 82.4, "R@4": 88.5, "R@8": 92.5, "NMI": 61.5, "F1": 30.0},
                 384: {"R@1": 73.9, "R@2": 82.5, "R@4": 88.8, "R@8": 93.2, "NMI": 61.9, "F1": 30.5},
                 512: {"R@1": 74.2, "R@2": 83.1, "R@4": 86.7, "R@8": 92.9, "NMI": 61.5, "F1": 28.8}},
    "ECAML(Binomial)": {128: {"R@1": 79.6, "R@2": 87.4, "R@4": 91.8, "R@8": 94.5, "NMI": 64.6, "F1": 32.9},
                        256: {"R@1": 82.0, "R@2": 88.5, "R@4": 92.5, "R@8": 95.3, "NMI": 66.4, "F1": 35.3},
                        384: {"R@1": 83.5, "R@2": 89.8, "R@4": 93.5, "R@8": 95.9, "NMI": 67.0, "F1": 35.8},
                        512: {"R@1": 84.5, "R@2": 90.4, "R@4": 93.8, "R@8": 96.6, "NMI": 68.4, "F1": 38.4}},
}


#: EC as the paper prints it, and as the released code computes it with the released fc unit-norm penalty (0.5).
VARIANTS = {"paper": {}, "released": {"ec": "released", "fc_unit_norm": 0.5}}


def paper_gains(metric: str = "R@1") -> dict:
    """The paper's own gains from EC, from its quoted Tables 4-6: ``{(dataset, loss): points}`` of ``metric``."""
    return {(dataset, NAMES[local]): round(rows[label(local)][metric] - rows[label(local, 0.0)][metric], 2)
            for dataset, rows in REPORTED.items() for local in PAPER_LOCALS}


def paper_gain_lines(metric: str = "R@1") -> list[str]:
    """:func:`paper_gains` one line a dataset: each loss's gain from EC in points."""
    gains = paper_gains(metric)
    return [f"{dataset:4s}: " + ", ".join(f"{loss} {g:+.1f}" for (d, loss), g in gains.items() if d == dataset)
            + " points" for dataset in dict.fromkeys(d for d, _ in gains)]


# --- the chapter's experiment, as data: every training it runs, declared once ---------------------------------------
#: The grid's tables, in the order the chapter runs them.
MAIN, STARTED_ROWS, LAMBDA_TABLE, DROPOUT_TABLE, DIM_TABLE = ("Tables 4/5", "pretrained start", "Table 1", "Table 3",
                                                              "Table 2")
#: Tables 2 and 3 train the binomial loss, as the paper's.
BASE_LOSS = "binomial"


def _loss(cfg, local: str, lam: float | None, variant: str = "paper", **changes):
    """:func:`ecaml_loss` of ``local`` at ``lam`` with the profile's ``local_options`` for it and ``variant``'s
    EC (:data:`VARIANTS`), ``changes`` over them (e.g. ``fc_unit_norm=0.5``)."""
    return ecaml_loss(local, lam, local_options=cfg.local_options.get(local),
                      **{**VARIANTS[variant], **changes})


def weight(cfg, choices: dict, local: str, variant: str = "paper") -> float:
    """EC's weight for ``local`` and ``variant`` in this run: its row's best shot (:func:`best_shots`), else the
    paper's (:func:`paper_lambda`)."""
    shot = search.chosen(choices, label(local) + ("" if variant == "paper" else f", {variant} EC"))
    return shot.get("lambda", paper_lambda(local, cfg.dataset))


# --- the one best-shot search of each compared row (issue #86) ---------------------------------------------------
#: The table of the rows' searches.
BEST_SHOT = "each row's best shot"
#: The row a claim reads EC at the paper's weight from (issue #86: the searched weight may be the ladder's bottom or
#: 0, and "EC improves Triplet" then tests EC nearly off), trained at its EC row's rate and length.
AT_PAPER = tables.ECAML_AT_PAPER


def arms(cfg) -> dict:
    """``{row: (local, variant, changes)}``: the rows of Tables 4/5 that claims compare, each searched as its own
    arm: each loss without EC (``variant`` ``None``) and with EC (``"paper"``, its weight searched with 0 a
    candidate); where the profile runs the released EC, that EC (``"released"``) and its baseline with the
    released fc penalty (``changes``)."""
    out = {}
    for local in cfg.locals:
        out[label(local, 0.0)] = (local, None, {})
        out[label(local)] = (local, "paper", {})
        if "released" in cfg.ec_variants:
            out[label(local) + ", released EC"] = (local, "released", {})
            out[label(local, 0.0) + ", fc unit norm"] = (local, None, {"fc_unit_norm": 0.5})
    return out


def search_rule(cfg, local: str, variant: str | None) -> search.Search | None:
    """The one search (:mod:`dml_tutorial.search`) of a row's rate, length and, with EC, its weight: from the
    paper's, along the paper's weight times ``cfg.lambda_ladder``, 0 (EC off) always a candidate; unseen R@1 of
    the validation split's held-out characters. ``None`` where the profile searches nothing (no ``search_lrs``)."""
    if not cfg.search_lrs:
        return None
    paper = paper_lambda(local, cfg.dataset)
    knob = None if variant is None else search.Axis("lambda", tuple(paper * s for s in cfg.lambda_ladder),
                                                    (paper,), off=0.0)
    return search.Search("R@1", search.Axis("lr", cfg.search_lrs, cfg.search_lr_start), cfg.search_lengths, knob,
                         cfg.search_every, patience=cfg.search_patience)


def _arm_spec(cfg, row: str, seed: int) -> RunSpec:
    local, variant, changes = arms(cfg)[row]
    lam = 0.0 if variant is None else paper_lambda(local, cfg.dataset)
    return RunSpec(BEST_SHOT, row, _loss(cfg, local, lam, variant or "paper", **changes), cfg, seed=seed)


def _vary(spec: RunSpec, name: str, value, *, local: str, variant: str) -> RunSpec:
    """A trial's EC weight: the row's loss rebuilt at ``value``."""
    return dataclasses.replace(spec, method=_loss(spec.settings, local, value, variant))


def best_shots(cfg, seed: int, run) -> dict:
    """Each compared row of Tables 4/5 (:func:`arms`) at its best shot (:func:`dml_tutorial.search.best_shot`
    under :func:`search_rule`) on the validation split, on ``seed``, each trial run by ``run``. Returns the run's
    choices, ``{"best shot": {row: Choice as data}}`` (``{}`` where the profile searches nothing), which
    :func:`grid` applies and the run file records."""
    chosen = {}
    for row, (local, variant, _) in arms(cfg).items():
        rule = search_rule(cfg, local, variant)
        if rule is not None:
            vary = partial(_vary, local=local, variant=variant) if variant else None
            chosen[row] = search.best_shot(_arm_spec(cfg, row, seed), rule, run, vary).as_data()
    if (rule := start_rule(cfg)) is not None:  # the rows from the pretrained start, each its own rate
        for row, method in started_rows(cfg).items():
            chosen[row] = search.best_shot(_started(cfg, BEST_SHOT, row, method, seed), rule, run).as_data()
    return {"best shot": chosen} if chosen else {}


def best_shot_trials(cfg, seed: int) -> list[RunSpec]:
    """The trials :func:`best_shots` makes whatever the scores, for the plan (the walks': :func:`unplanned`)."""
    out = []
    for row, (local, variant, _) in arms(cfg).items():
        if (rule := search_rule(cfg, local, variant)) is not None:
            vary = partial(_vary, local=local, variant=variant) if variant else None
            out += search.starting_trials(_arm_spec(cfg, row, seed), rule, vary)
    if (rule := start_rule(cfg)) is not None:
        out += [trial for row, method in started_rows(cfg).items()
                for trial in search.starting_trials(_started(cfg, BEST_SHOT, row, method, seed), rule)]
    return out


def unplanned(cfg, choices: dict) -> int:
    """How many trials :func:`best_shots` made beyond :func:`best_shot_trials`."""
    found = arms(cfg)
    return search.walked(choices, lambda row: search_rule(cfg, *found[row][:2]) if row in found
                         else start_rule(cfg))


def _started(cfg, table: str, row: str, method, seed: int, lr: float | None = None, epochs: int | None = None,
             split: str = "main") -> RunSpec:
    """A run from the softmax-pretrained start (``cfg.pretrained_start``: its ``epochs`` of softmax pre-training
    at the profile's rate, made once per split and seed by the runner): fine-tuned at ``lr`` (default the start's),
    the embedding layer at ``head_lr_mult`` times it, for ``epochs`` (default the profile's; 0: the start itself)."""
    start = cfg.pretrained_start
    tuned = cfg.replace(lr=lr or start["lr"], head_lr_mult=start["head_lr_mult"],
                        epochs=cfg.epochs if epochs is None else epochs)
    return RunSpec(table, row, method, tuned, seed=seed, split=split,
                   options={"start": {"epochs": start["epochs"], "lr": cfg.lr}})


def started_rows(cfg) -> dict:
    """``{row: loss}``: the rows fine-tuned from the softmax-pretrained start, each loss with the released fc
    penalty, without and with the released EC at the paper's weight; none without a start."""
    if not cfg.pretrained_start:
        return {}
    rows = {}
    for local in cfg.locals:
        rows[label(local, 0.0) + ", fc unit norm, pretrained"] = _loss(cfg, local, 0.0, fc_unit_norm=0.5)
        rows[label(local) + ", released EC, pretrained"] = _loss(cfg, local, paper_lambda(local, cfg.dataset),
                                                                 "released")
    return rows


def start_rule(cfg) -> search.Search | None:
    """The one search (:mod:`dml_tutorial.search`) of each row from the pretrained start (test bed I): its
    fine-tuning rate among ``cfg.pretrained_start["lr_candidates"]``, at the profile's length, on the
    ``"start validation"`` split's R@1 (its ``held_out`` seen classes, from that split's own start); ``None``
    where the profile lists no rates (the start's own rate)."""
    rates = (cfg.pretrained_start or {}).get("lr_candidates")
    if not rates:
        return None
    return search.Search("R@1", search.Axis("lr", tuple(rates), tuple(rates)), (cfg.epochs,), None, cfg.epochs,
                         split="start validation")


def grid(cfg, seeds, choices: dict | None = None) -> list[RunSpec]:
    """Every training of the chapter after its searches, under the run's ``choices`` (:func:`best_shots`' rates,
    lengths and weights, the pretrained start's rows' rates), each on every seed, in the order the chapter runs
    them:

    - Tables 4/5: each of ``cfg.locals`` without and with EC (at :func:`weight`), with its per-epoch curves; with
      the released variant among ``cfg.ec_variants``, also the released EC and its baseline, the released fc
      unit-norm penalty alone;
    - from the pretrained start (``cfg.pretrained_start``): the start not fine-tuned, then each loss with the fc
      penalty, without and with the released EC at the paper's weight;
    - Table 1: ``cfg.ablation_loss`` at each of ``cfg.lambdas`` but the paper's (its lambda = 0 and chosen-weight
      columns are Tables 4/5's runs), with the paper's miner and options;
    - Table 3: the binomial loss with each of ``cfg.dropouts`` (its two other rows are Tables 4/5's);
    - Table 2: the binomial loss without and with EC at the paper's weight at each of ``cfg.dims`` but the
      profile's (whose runs are Tables 4/5's).

    The notebook runs these (:func:`run_spec`), the plan counts and times them, the cache keys on them."""
    choices = choices or {}
    main = []  # (table, row, column, method, settings, options)
    for local in cfg.locals:
        curves = {"curves": True}  # seen and unseen R@1 and EC's pull after every epoch (Fig. 2)
        base, ec = label(local, 0.0), label(local)
        main += [(MAIN, base, "", _loss(cfg, local, 0.0), search.tuned(cfg, choices, base), curves),
                 (MAIN, ec, "", _loss(cfg, local, weight(cfg, choices, local)), search.tuned(cfg, choices, ec), curves)]
        if search.chosen(choices, ec):  # the searched weight's row, and EC at the paper's weight at its rate and length
            main += [(MAIN, ec + AT_PAPER, "", _loss(cfg, local, paper_lambda(local, cfg.dataset)),
                      search.tuned(cfg, choices, ec), {})]
        if "released" in cfg.ec_variants:  # EC as the authors' code computes it, and its baseline
            released, fc = label(local) + ", released EC", label(local, 0.0) + ", fc unit norm"
            main += [(MAIN, released, "", _loss(cfg, local, weight(cfg, choices, local, "released"), "released"),
                      search.tuned(cfg, choices, released), curves),
                     (MAIN, fc, "", _loss(cfg, local, 0.0, fc_unit_norm=0.5), search.tuned(cfg, choices, fc), {})]
    local, base = cfg.ablation_loss, BASE_LOSS
    # Table 1 with the loss of Tables 4/5 (its miner), at EC's chosen rate and length; Tables 2-3 at the binomial
    # rows' own (without EC: the baseline's; with EC: EC's)
    ablations = [(LAMBDA_TABLE, label(local, lam), f"{lam:g}", _loss(cfg, local, lam),
                  search.tuned(cfg, choices, label(local)), {}) for lam in cfg.lambdas if lam != LAMBDA[local]]
    ablations += [(DROPOUT_TABLE, f"Binomial + dropout {p:g}", "", _loss(cfg, base, 0.0),
                   search.tuned(cfg, choices, label(base, 0.0)).replace(dropout=p), {}) for p in cfg.dropouts]
    ablations += [(DIM_TABLE, label(base, lam), f"d = {d}",
                   _loss(cfg, base, lam if lam == 0 else paper_lambda(base, cfg.dataset)),
                   search.tuned(cfg, choices, label(base, lam)).replace(dim=d), {})
                  for d in cfg.dims if d != cfg.dim for lam in (0.0, None)]
    return _each_seed(main, seeds) + _started_grid(cfg, seeds, choices) + _each_seed(ablations, seeds)


def _each_seed(rows, seeds) -> list[RunSpec]:
    """A spec of each ``(table, row, column, method, settings, options)`` on each seed, row by row."""
    return [RunSpec(table, row, method, settings, column, seed=s, options=options)
            for table, row, column, method, settings, options in rows for s in seeds]


def _started_grid(cfg, seeds, choices: dict) -> list[RunSpec]:
    """The rows from the pretrained start, none without one: the start not fine-tuned (0 epochs), then each of
    :func:`started_rows`, fine-tuned at the rate its search chose (:func:`start_rule`; the start's own without)."""
    if not cfg.pretrained_start:
        return []
    rows = [("softmax-pretrained start, not fine-tuned", _loss(cfg, cfg.locals[0], 0.0), 0, None)]
    rows += [(row, method, None, search.chosen(choices, row).get("lr")) for row, method in started_rows(cfg).items()]
    return [_started(cfg, STARTED_ROWS, row, method, s, lr=lr, epochs=epochs)
            for row, method, epochs, lr in rows for s in seeds]


def run_spec(splits: dict, device="auto"):
    """``run(spec, progress=False, checkpoint=None) -> Run`` for :func:`dml_tutorial.experiment.run_grid`: one
    :class:`~dml_tutorial.spec.RunSpec` of :func:`grid` or a search trained on ``splits[spec.split]``
    (:func:`dml_tutorial.experiment.train_and_retrieve`: P x K batches of its settings, curves where its options
    ask), from the softmax-pretrained start where they name one (made once per split, seed and start settings,
    then reused). A ``functools.partial``, so that the cache's key holds the data it binds."""
    return partial(_train_spec, splits=splits, device=device, starts=_Starts())


class _Starts:
    """The softmax-pretrained starts :func:`run_spec`'s runner made, by split, seed and start settings."""

    def __init__(self):
        self.made = {}

    def get(self, split: str, data, spec: RunSpec, device) -> dict:
        start = spec.options["start"]
        settings = spec.settings.replace(lr=start["lr"], epochs=start["epochs"])  # the pre-training's own
        key = (split, spec.seed, settings.digest())
        if key not in self.made:
            self.made[key] = pretrain.softmax_pretrained(data.train, settings, epochs=start["epochs"], seed=spec.seed,
                                                         device=device)
        return self.made[key]

    def describe(self) -> str:  # as data (the cache's key): what it makes, not the weights it holds
        return "softmax-pretrained starts, made once per split, seed and settings"


def _train_spec(spec: RunSpec, progress: bool = False, checkpoint=None, *, splits: dict, device="auto",
                starts: _Starts) -> experiment.Run:
    """:func:`run_spec`'s runner; a search's trial (``options["curve"]``, R@1) records the R@1 of its split's test
    side at every checkpoint (:func:`dml_tutorial.experiment.recall_checkpoint`)."""
    data, s = splits[spec.split], spec.settings
    init = starts.get(spec.split, data, spec, device) if "start" in spec.options else None
    evaluate = experiment.recall_checkpoint(data.test, spec.options["curve"], s) if "curve" in spec.options else None
    return experiment.train_and_retrieve(data, spec.method, s, p=s.p, k=s.k, seed=spec.seed, device=device,
                                         progress=progress, checkpoint=checkpoint,
                                         curves=spec.options.get("curves", False), init=init, evaluate=evaluate,
                                         score=evaluate is None)


# --- EC during training, read from the recorded curves of Table 4's runs -------------------------------------------
def seed_panels() -> dict:
    """The chapter's opening picture as data (:func:`dml_tutorial.report.seed_panels`): per paper loss, the recorded
    Tables 4/5 rows of the loss alone, with EC at its held-out weight, and with EC at the paper's weight."""
    arms = {"alone": "{loss}", "EC, held-out λ": "ECAML({ec})", "EC, paper's λ": "ECAML({ec})" + AT_PAPER}
    losses_ = {"Triplet": "Tri", "N-Pair": "N-Pair", "Binomial": "Binomial"}
    return {loss: {arm: row.format(loss=loss, ec=ec) for arm, row in arms.items()} for loss, ec in losses_.items()}


def train_grid(start, splits, plan=None) -> grids.TrainedGrid:
    """The chapter's experiment on ``splits`` (:func:`dml_tutorial.grids.train`): where the profile searches, each
    row's rate, length and EC weight on held-out seen classes (:func:`best_shots`), and the pretrained start's
    fine-tuning rate on its own held-out classes; every training of :func:`grid`; the reference rows."""
    cfg = start.cfg
    parts = {"main": splits}  # what the grid and the searches train on, by name
    if cfg["search_lrs"]:
        parts["validation"] = search.validation_split(splits, held_out=cfg["held_out"])
    pretrained = cfg["pretrained_start"]  # None in full: its backbone is ImageNet's
    if pretrained and pretrained["lr_candidates"]:
        parts["start validation"] = search.validation_split(splits, held_out=pretrained["held_out"])
    return grids.train(sys.modules[__name__], start, run_spec(parts, start.device), splits, plan)


def table4(run: grids.TrainedGrid) -> dict:
    """Tables 4/5's runs, ``{(row, ""): [Run per seed]}``: each loss without and with EC, the reference rows, then
    the rows from the pretrained start."""
    return run.table(MAIN, references=True) | run.table(STARTED_ROWS)


def _caption(run: grids.TrainedGrid, quoted: str) -> str:
    return f"unseen classes, in %, mean ± std over {len(run.seeds)} seeds; paper: {quoted}, quoted"


def _recalls(run: grids.TrainedGrid) -> list[str]:
    return [f"R@{k}" for k in metrics.recall_ks(run.cfg["dataset"])]  # R@1/2/4/8, or R@1/10/100/1000 on SOP


def unseen_classes(run: grids.TrainedGrid) -> Recorded:
    """:data:`~dml_tutorial.tables.ECAML_MAIN`, Tables 4/5: R@K, NMI and F1 of :func:`table4`'s rows on the unseen
    classes, beside the paper's column of the profile."""
    columns = _recalls(run) + ["NMI", "F1"]
    rows = {row: {m: [r.metrics[m] for r in runs] for m in columns} for (row, _), runs in table4(run).items()}
    cfg, quoted = run.cfg, run.start.paper
    caption = (f"unseen classes, in %, mean ± std over {len(run.seeds)} seeds ({cfg['profile']} profile, "
               f"{cfg['dataset']}); paper: {quoted}, quoted")
    return Recorded(tables.ECAML_MAIN, rows, REPORTED[quoted], caption)


def seen_and_unseen(run: grids.TrainedGrid) -> Recorded:
    """:data:`~dml_tutorial.tables.ECAML_CURVES`, Fig. 2's claims: where each curve ends (:func:`curve_ends`)."""
    return Recorded(tables.ECAML_CURVES, curve_ends(table4(run), run.cfg["locals"]), choices=False)


def ec_share(run: grids.TrainedGrid, curves: dict) -> Recorded:
    """EC's share of the pull at the embedding layer (:func:`share_table` of :func:`pulls`' ``curves``)."""
    return Recorded("EC's share of the pull at the embedding layer", share_table(curves), choices=False,
                    caption="EC's share of the pull, in % of the two pulls, mean ± std over seeds")


def lambda_sweep(run: grids.TrainedGrid) -> dict:
    """Table 1's runs, ``{(row, lambda): [Run per seed]}``: the ablation loss at each weight of the grid's
    :data:`LAMBDA_TABLE`, at 0 and at the weight its Tables 4/5 row trained at (test bed II: its validated one)."""
    local, main = run.cfg["ablation_loss"], table4(run)
    sweep = {(row, float(lam)): runs for (row, lam), runs in run.table(LAMBDA_TABLE).items()}
    sweep[(label(local, 0.0), 0.0)] = main[(label(local, 0.0), "")]
    used = weight(run.cfg, run.choices, local)
    sweep[(label(local, used), used)] = main[(label(local), "")]
    return sweep


def by_lambda(run: grids.TrainedGrid) -> Recorded:
    """Table 1: unseen R@1 of the ablation loss by EC's weight (:func:`lambda_sweep`), beside the paper's CARS
    row."""
    local = run.cfg["ablation_loss"]
    row = f"{NAMES[local]} + λ EC"
    rows = {row: {lam: [r.metrics["R@1"] for r in runs]
                  for (_, lam), runs in sorted(lambda_sweep(run).items(), key=lambda kv: kv[0][1])}}
    return Recorded("Table 1: the weight lambda", rows, {row: REPORTED_LAMBDA[local]}, choices=False,
                    caption=f"unseen-class Recall@1 in %, mean ± std over {len(run.seeds)} seeds; paper: CARS, "
                    "quoted")


def against_dropout(run: grids.TrainedGrid) -> Recorded:
    """Table 3: the binomial loss alone, with dropout, and with EC, R@K on the unseen classes."""
    main = table4(run)
    rows = {"Binomial": main[(label(BASE_LOSS, 0.0), "")]}
    rows |= run.rows(DROPOUT_TABLE)
    rows["ECAML(Binomial)"] = main[(label(BASE_LOSS), "")]
    by_method = {n: {m: [r.metrics[m] for r in rs] for m in _recalls(run)} for n, rs in rows.items()}
    return Recorded("Table 3: EC against dropout", by_method, REPORTED_DROPOUT, _caption(run, "CARS Table 3"),
                    choices=False)


def by_size(run: grids.TrainedGrid) -> dict:
    """Table 2's runs, ``{(row, size): [Run per seed]}``: the base loss without and with EC at each of
    ``cfg.dims``, the profile's own size from Tables 4/5."""
    cfg, main, dims = run.cfg, table4(run), run.table(DIM_TABLE)
    return {(label(BASE_LOSS, lam), d): main[(label(BASE_LOSS, lam), "")] if d == cfg["dim"]
            else dims[(label(BASE_LOSS, lam), f"d = {d}")] for d in cfg["dims"] for lam in (0.0, None)}


def sizes(run: grids.TrainedGrid) -> Recorded:
    """:data:`~dml_tutorial.tables.ECAML_DIMS`, Table 2: :func:`dims_table` of :func:`by_size`."""
    rows = dims_table(by_size(run), BASE_LOSS, run.cfg["dims"])
    return Recorded(tables.ECAML_DIMS, rows, dims_paper(), _caption(run, "CARS Table 2"), choices=False)


def pulls(table4: dict, locals_) -> dict:
    """EC on the fixed batch after every epoch, ``{arm: {"share": [seeds, epochs] EC's share of the pull (NaN where
    neither pulls), "value": the mean EC per epoch, or None for the released EC (log E, another scale), "local": the
    metric loss's place in ``locals_``}}`` for each of ``locals_`` with EC and with the released EC (where Table 4's
    runs ``{(row, ""): [Run]}`` hold it); ``{arm: None}`` for an arm whose search chose lambda = 0 (no EC to
    follow)."""
    import numpy as np

    from .objective import pull_share

    out = {}
    for i, local in enumerate(locals_):
        for arm in (label(local), label(local) + ", released EC"):
            if (arm, "") not in table4:
                continue
            runs = table4[(arm, "")]
            if runs[0].history.last.get("energy_confusion") is None:
                out[arm] = None
                continue
            value = None if arm.endswith("released EC") else \
                np.mean([r.history["energy_confusion"] for r in runs], axis=0)
            out[arm] = {"share": pull_share(runs, "energy_confusion", NAMES[local]), "value": value, "local": i}
    return out


def pull_lines(curves: dict) -> list[str]:
    """One line an arm of :func:`pulls`: EC's share of the pull (and EC's value) at the first and the last epoch,
    means over seeds; or that its search chose lambda = 0."""
    import numpy as np

    lines = []
    for arm, c in curves.items():
        if c is None:
            lines.append(f"{arm:29s} EC off: its search chose lambda = 0")
            continue
        share = np.nanmean(c["share"], axis=0)
        text = f"{arm:29s} EC's share of the pull {share[0]:.2f} -> {share[-1]:.2f}"
        lines.append(text + (f"; EC {c['value'][0]:.3f} -> {c['value'][-1]:.3f}" if c["value"] is not None else ""))
    return lines


def share_table(curves: dict) -> dict:
    """The recorded table of :func:`pulls`: ``{arm: {"epoch 1": [share per seed], "epoch <last>": [...]}}``."""
    return {arm: {"epoch 1": c["share"][:, 0].tolist(), f"epoch {c['share'].shape[1]}": c["share"][:, -1].tolist()}
            for arm, c in curves.items() if c is not None}


def silent_words(table4: dict, locals_) -> str:
    """Markdown: when a metric loss falls silent on the fixed batch (no gradient at all: its share of the pull is
    0, EC's 1), from the recorded pulls of each of ``locals_``' EC runs in Table 4 (``{(row, ""): [Run]}``)."""
    import numpy as np

    silent = []
    for local in locals_:
        runs, name = table4[(label(local), "")], NAMES[local]
        quiet = (np.array([r.history[f"|grad| {name}"] for r in runs]) == 0).sum(0)
        if quiet.any():
            silent.append(f"- {label(local)}: from epoch {int(np.argmax(quiet > 0)) + 1}, its metric loss has no "
                          f"gradient at all on the fixed batch in up to {quiet.max()} of {len(runs)} seeds (in those "
                          "epochs EC's share is 1)")
    if not silent:
        return "No metric loss fell silent on the fixed batch in this run."
    return ("A share of exactly 1 means the metric loss has stopped pulling: for the triplet loss, FaceNet's semi-hard "
            "band (`negatives=\"semihard-band\"`) holds no negative once the seen classes separate, so the triplet "
            "falls silent and EC alone moves the embedding; seeds going in and out of that silence make the curve "
            "saw. `sampling` offers Roth et al.'s fallback, a random negative where the band is empty "
            "(`\"semihard-band-or-random\"`).\n\n" + "\n".join(silent))


# --- Table 2: the embedding size ------------------------------------------------------------------------------------
def dims_table(by_dim: dict, base_loss: str, dims) -> dict:
    """Table 2's recorded numbers, ``{"<row> <metric>": {"d = <d>": [one per seed]}}`` for R@1 and NMI of
    ``base_loss`` without EC (lambda = 0) and with it, from the runs ``{(row, d): [Run per seed]}``."""
    return {f"{name} {m}": {f"d = {d}": [r.metrics[m] for r in by_dim[(name, d)]] for d in dims}
            for m in ("R@1", "NMI") for name in (label(base_loss, 0.0), label(base_loss))}


def dims_paper() -> dict:
    """Table 2 as the paper reports it (CARS), in :func:`dims_table`'s rows and columns."""
    return {f"{name} {m}": {f"d = {d}": v[m] for d, v in REPORTED_DIM[name].items()}
            for m in ("R@1", "NMI") for name in REPORTED_DIM}


def dims_lines(by_dim: dict, base_loss: str, dims) -> list[str]:
    """One line an embedding size: EC's gain on ``base_loss``'s unseen R@1, paired by seed (mean, std, p)."""
    baseline, with_ec = label(base_loss, 0.0), label(base_loss)
    lines = []
    for d in dims:
        diff = experiment.paired_difference(by_dim[(baseline, d)], by_dim[(with_ec, d)], "R@1")
        lines.append(f"d = {d:3d}: {with_ec} - {baseline} R@1 {100 * diff['mean']:+5.1f} ± {100 * diff['std']:.1f} "
                     f"points (p = {diff['p']:.2f})")
    return lines


def gradient_ratios(cfg, train_split, device, seed: int = 0) -> list[str]:
    """At the start of training, how hard EC pulls against each loss of ``cfg.locals``: on one P x K batch of
    ``train_split`` (drawn with ``seed``) through the untrained network (seeded with ``seed``), the norm of the
    gradient of lambda EC (the paper's weight, :func:`paper_lambda`) on the embedding layer's weight over that of
    the loss, a line each."""
    import numpy as np
    import torch

    from . import data, models, regularizers, sampling, train

    idx = next(iter(sampling.PKSampler(train_split.labels, cfg["p"], cfg["k"], seed=seed)))
    x = (train_split.batch(idx) if hasattr(train_split, "batch")
         else torch.stack([train_split[i][0] for i in idx]))
    y = torch.as_tensor(np.asarray(train_split.labels)[idx], device=device)
    lines = []
    for local in cfg["locals"]:
        train.seed_everything(seed)
        model = models.from_settings(cfg, data.input_shape(train_split)).to(device)
        z = model(x.to(device))
        weight = model.embedding.weight
        (g_metric,) = torch.autograd.grad(LOCAL_LOSSES[local](z, y), weight, retain_graph=True)
        ec = regularizers.energy_confusion(regularizers.embedding_layer_only(model), y, log=True, reduction="mean")
        lam = paper_lambda(local, cfg["dataset"])
        (g_ec,) = torch.autograd.grad(lam * ec, weight)
        lines.append(f"{NAMES[local]:8s} lambda = {lam:g}: |grad lambda EC| / |grad L_m| = "
                     f"{(g_ec.norm() / g_metric.norm()).item():.2g}")
    return lines


def energy_spread(table4: dict, train_labels, locals_) -> tuple[dict, list[str]]:
    """EC's pair energy split into its two parts (:func:`dml_tutorial.regularizers.energy_decomposition`) on each
    row's training embeddings (Tables 4/5's runs, ``{(row, ""): [Run]}``), each of ``locals_`` without and with
    EC: the mean over class pairs and seeds of ``||mu_I - mu_J||^2`` and of ``tr S_I``. Returns ``{row: {part:
    mean}}`` and a line per loss, without -> with EC."""
    import numpy as np
    import torch

    from .regularizers import energy_decomposition

    spread = {}
    for local in locals_:
        for lam in (0.0, None):
            name = label(local, lam)
            parts = [energy_decomposition(r.train_embeddings, train_labels) for r in table4[(name, "")]]
            pairs = ~torch.eye(len(parts[0]["classes"]), dtype=torch.bool)
            spread[name] = {"||mu_I - mu_J||^2": np.mean([p["between"][pairs].mean().item() for p in parts]),
                            "tr S_I": np.mean([p["within"].mean().item() for p in parts])}
    lines = []
    for local in locals_:
        base, ec = spread[label(local, 0.0)], spread[label(local)]
        changes = ", ".join(f"{k} {base[k]:.3f} -> {ec[k]:.3f}" for k in base)
        lines.append(f"{NAMES[local]:8s}: {changes} (without -> with EC)")
    return spread, lines


def spectral_lines(table4: dict, locals_) -> list[str]:
    """Does EC spread the embedding over more directions (Roth et al., 2020)? Each of ``locals_`` without and with
    EC (Tables 4/5's runs, ``{(row, ""): [Run]}``): the mean spectral decay rho of the unseen classes' embeddings
    (:func:`dml_tutorial.metrics.spectral_decay`; EC's argument predicts a lower rho) and with - without, paired
    by seed, with its 95% interval."""
    import numpy as np

    from .evidence import paired
    from .metrics import spectral_decay

    lines = []
    for local in locals_:
        rho = {lam: [spectral_decay(r.test_embeddings) for r in table4[(label(local, lam), "")]] for lam in (0.0, None)}
        d = paired(rho[0.0], rho[None])
        lines.append(f"{label(local):16s} rho without EC {np.mean(rho[0.0]):.3f}, with EC {np.mean(rho[None]):.3f}; "
                     f"with - without {d['mean']:+.3f} (95% CI {d['ci'][0]:+.3f} to {d['ci'][1]:+.3f})")
    return lines


def curve_ends(table4: dict, locals_) -> dict:
    """Where Fig. 2's curves end (its claims read them): each of ``locals_`` without and with EC (Tables 4/5's
    runs), the seen and unseen R@1 and MAP@R of the last epoch per seed; MAP@R still ranks where the seen R@1
    reaches 100% (test bed II). ``{row: {"<curve>, last epoch": [value per seed]}}``."""
    keys = ("seen R@1", "unseen R@1", "seen MAP@R", "unseen MAP@R")
    return {label(local, lam): {f"{key}, last epoch": [r.history[key][-1] for r in table4[(label(local, lam), "")]]
                                for key in keys}
            for local in locals_ for lam in (0.0, None)}
