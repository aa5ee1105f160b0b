"""The noise chapter's experiment (Ding et al., *Theoretical guarantees of deep metric learning under label noise*),
declared once: its arms, the search of their shared learning rate, the grid of every training, and the runner.

    choices, search, betas = guarantees.rate_search(run, cfg, seed=0)    # test bed II: on held-out classes
    specs = guarantees.grid(cfg, seeds, choices)
    results = experiment.run_grid(specs, guarantees.run_spec(splits, device))

Every arm sums its hinge terms and divides by the positive pairs of the batch (eq. 4's 1/|S|): the triplet loss
with random or fixed semi-hard negatives (the two samplers whose ranking under noise the paper reports) and the
marginal loss with random semi-hard negatives, at the paper's beta 1.4 unless a search chose another.
"""

from __future__ import annotations

import math
from functools import partial

import numpy as np

from . import experiment, ladder, losses
from .spec import RunSpec

#: The grid's tables, in the order the chapter runs them; the search's runs are named by the first.
RATE_SEARCH, NOISE_RATES, RECIPES, CHECKPOINTS, CLEAN_START, FROM_CLEAN, SKEW = (
    "the learning rate", "noise rates", "other recipes", "checkpoints", "clean pre-training",
    "from the clean pre-training", "skew")
#: The arm the clean pre-training and its noisy fine-tuning train (section 5's initialisation).
MARGINAL = "marginal, random semi-hard"
#: The two triplet arms whose gap the recipes and the checkpoints follow (fixed, random).
PAIR = ("triplet, fixed semi-hard", "triplet, random semi-hard")


#: The marginal loss's beta in the paper.
BETA = 1.4


def marginal_loss(beta: float = BETA):
    """The marginal loss (Wu et al. 2017) with random semi-hard negatives, alpha 0.2, at ``beta``, summed over the
    batch's positive pairs."""
    return partial(losses.margin_loss, alpha=0.2, beta=beta, negatives="semihard-random", reduction="pairs")


def arms(choices: dict | None = None) -> dict:
    """``{name: loss}``: the three arms, the marginal at ``choices["marginal beta"]`` where a search chose one."""
    triplet = partial(losses.triplet_loss, margin=0.2, reduction="pairs")
    return {"triplet, random semi-hard": partial(triplet, negatives="semihard-random"),
            "triplet, fixed semi-hard": partial(triplet, negatives="semihard-fixed"),
            MARGINAL: marginal_loss((choices or {}).get("marginal beta", BETA))}


def rate_search(run, cfg, seed: int) -> tuple[dict, dict, dict]:
    """One learning rate for the three arms on the validation split (clean labels; :func:`ladder.shared_rate`
    over ``cfg.lr_candidates``, walking ``cfg.lr_ladder``), each trained by ``run`` (:func:`run_spec`) on ``seed``.
    With ``cfg.beta_candidates`` (test bed II) the marginal loss trains at each beta at each rate and enters the
    rate's mean at its best, so that an untuned beta cannot tip the shared rate; its beta is then the best at the
    chosen rate (ties: the first listed). The second-best rate is kept too where a recipe trains at it
    (``cfg.recipes``).

    Returns the run's choices ``{"lr", "runner-up lr", "marginal beta"}`` (those that apply), the search's table
    ``{lr: {arm: [R@1]}}`` and the betas' ``{lr: {beta: R@1}}`` (empty without candidates)."""
    def fit(loss, lr):
        return run(RunSpec(RATE_SEARCH, "", loss, cfg.replace(lr=lr), seed=seed, split="validation"))

    fits = {name: partial(fit, loss) for name, loss in arms().items()}
    by_beta = {}

    def marginal_at_its_best(lr):
        runs = {b: fit(marginal_loss(b), lr) for b in cfg.beta_candidates}
        by_beta[lr] = {b: r.metrics["R@1"] for b, r in runs.items()}
        return max(runs.values(), key=lambda r: r.metrics["R@1"])  # ties: the first

    if cfg.beta_candidates:
        del fits[MARGINAL]
        fits[MARGINAL + ", its best beta"] = marginal_at_its_best
    lr, search = ladder.shared_rate(fits, cfg.lr_candidates, rate_ladder=cfg.lr_ladder)
    choices = {"lr": lr}
    if any(v == "runner-up" for changes in (cfg.recipes or {}).values() for v in changes.values()):
        means = {rate: np.mean([v[0] for v in row.values()]) for rate, row in search.items()}
        choices["runner-up lr"] = sorted(means, key=means.get)[-2]
    if by_beta:
        choices["marginal beta"] = max(by_beta[lr], key=by_beta[lr].get)  # ties: the first listed
    return choices, search, by_beta


def planned_search(cfg) -> int:
    """The search's trainings whatever the scores (the walk's sure steps; its rest: ``Plan.add``): each rate
    planned times the two triplet arms and the marginal at each beta (at one without candidates)."""
    if not cfg.lr_candidates:
        return 0
    return ladder.planned(cfg.lr_candidates, cfg.lr_ladder) * (2 + len(cfg.beta_candidates or [None]))


def grid(cfg, seeds, choices: dict | None = None) -> list[RunSpec]:
    """Every training of the chapter after its search, at the run's ``choices`` (:func:`rate_search`; the
    profile's rate without one), in the order the chapter runs them, each on every seed (the skew's run on
    the first):

    - noise rates: each arm at each of ``cfg.rates`` of symmetric noise, and at each noisy rate p its topline, the
      1 - p clean samples (Le & Odobez's);
    - other recipes (``cfg.recipes``, test bed II): the two triplet arms at each rate under each recipe's changes
      (``"runner-up"``: the search's second-best rate);
    - checkpoints (``cfg.checkpoint_steps``): the two triplet arms at each of ``cfg.checkpoint_rates``, trained to
      the last checkpoint with R@1 after every gcd of them;
    - the marginal trained on clean labels keeping its weights, then from them at each noisy rate;
    - skew, last: the random semi-hard triplet at ``cfg.skew_rate`` on the first seed, at the profile's settings,
      keeping its weights (the miners' skew is measured on them, and on an untrained network the notebook draws
      from the random state this run leaves: the recorded numbers repeat only in this order).

    The notebook runs these (:func:`run_spec`), the plan counts and times them, the cache keys on them."""
    choices = dict(choices or {})
    chosen = cfg.replace(**{k: v for k, v in choices.items() if k == "lr"})
    seeds = list(seeds)
    methods = arms(choices)

    def noisy(rate):
        return ("symmetric", rate) if rate else None

    specs = []
    for name, loss in methods.items():
        for rate in cfg.rates:
            specs += [RunSpec(NOISE_RATES, name, loss, chosen, rate, seed=s, options={"noise": noisy(rate)})
                      for s in seeds]
            if rate:
                specs += [RunSpec(NOISE_RATES, f"{name} (topline)", loss, chosen, rate, seed=s,
                                  options={"fraction": 1 - rate}) for s in seeds]
    for recipe, changes in (cfg.recipes or {}).items():
        own = chosen.replace(**{k: choices["runner-up lr"] if v == "runner-up" else v for k, v in changes.items()})
        specs += [RunSpec(RECIPES, f"{m}, {recipe}", methods[m], own, rate, seed=s, options={"noise": noisy(rate)})
                  for m in PAIR for rate in cfg.rates for s in seeds]
    if cfg.checkpoint_steps:
        longer = _checkpointed(chosen, cfg.checkpoint_steps)
        specs += [RunSpec(CHECKPOINTS, m, methods[m], longer, rate, seed=s,
                          options={"noise": noisy(rate), "curves": True})
                  for m in PAIR for rate in cfg.checkpoint_rates for s in seeds]
    marginal = methods[MARGINAL]
    specs += [RunSpec(CLEAN_START, MARGINAL, marginal, chosen, 0.0, seed=s, options={"keep_state": True})
              for s in seeds]
    specs += [RunSpec(FROM_CLEAN, MARGINAL, marginal, chosen, rate, seed=s,
                      options={"noise": noisy(rate), "start": CLEAN_START})
              for rate in cfg.rates if rate for s in seeds]
    # last: the chapter's untrained network for the skew is drawn from the random state this run leaves behind
    return specs + [RunSpec(SKEW, "triplet, random semi-hard", methods["triplet, random semi-hard"], cfg,
                            cfg.skew_rate, seed=seeds[0],
                            options={"noise": ("symmetric", cfg.skew_rate), "keep_state": True})]


def _checkpointed(chosen, steps):
    """``chosen`` trained to the last of ``steps`` (each a whole number of epochs of ``batches_per_epoch``
    batches), evaluated after every gcd of them."""
    per = chosen.batches_per_epoch
    if not per or any(s % per for s in steps):
        raise ValueError(f"checkpoint_steps {list(steps)}: each a multiple of batches_per_epoch ({per}) steps")
    return chosen.replace(epochs=max(steps) // per, eval_every=math.gcd(*steps) // per)


def run_spec(splits: dict, device="auto"):
    """``run(spec, progress=False, checkpoint=None) -> Run`` for :func:`dml_tutorial.experiment.run_grid`: one
    :class:`~dml_tutorial.spec.RunSpec` of :func:`grid` or :func:`rate_search` trained on ``splits[spec.split]``
    (:func:`dml_tutorial.experiment.train_and_retrieve`, P x K batches of its settings, with the label noise, the
    fraction, the curves and the kept weights its options name); a run whose options name a ``start`` starts from
    the weights of the same seed's run of that table (which keeps them: :data:`CLEAN_START`). A
    ``functools.partial``, so that the cache's key holds the data it binds."""
    return partial(_train_spec, splits=splits, device=device, states=_States())


class _States:
    """The weights kept by :func:`run_spec`'s runs that keep them, by table and seed."""

    def __init__(self):
        self.kept = {}

    def describe(self) -> str:  # as data (the cache's key): what it holds, not the weights
        return "the weights of the runs that keep them, by table and seed"


def _train_spec(spec: RunSpec, progress: bool = False, checkpoint=None, *, splits: dict, device="auto",
                states: _States) -> experiment.Run:
    """:func:`run_spec`'s runner."""
    o, s = spec.options, spec.settings
    init = states.kept[(o["start"], spec.seed)] if "start" in o else None
    out = experiment.train_and_retrieve(splits[spec.split], spec.method, s, p=s.p, k=s.k, seed=spec.seed,
                                        device=device, progress=progress, checkpoint=checkpoint,
                                        noise=o.get("noise"), fraction=o.get("fraction", 1.0),
                                        curves=o.get("curves", False), keep_state=o.get("keep_state", False),
                                        init=init)
    if o.get("keep_state"):
        states.kept[(spec.table, spec.seed)] = out.state
    return out
