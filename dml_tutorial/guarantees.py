"""The noise chapter's experiment (Le & Odobez, *Theoretical guarantees of deep embedding losses under label
noise*), declared once: its arms, each row's best shot, the grid of every training, and the runner.

    trained = guarantees.train_grid(start, splits, plan=chapter_plan)  # the search, the grid, the references
    trained.record(guarantees.recall_and_nmi)                     # section 3's table, declared below

Every arm sums its hinge terms and divides by the positive pairs of the batch (eq. 4's 1/|S|): the triplet loss
with random or fixed semi-hard negatives (the two samplers whose ranking under noise the paper reports) and the
marginal loss with random semi-hard negatives, at the paper's beta 1.4 unless its search chose another.

Where the profile searches (``search_lrs``), each arm at each noise rate is a row with its own best shot
(:mod:`dml_tutorial.search`: rate, length and, for the marginal loss, beta) on held-out seen classes whose labels
are as noisy as the row's training labels (issue #86): a practitioner tunes on the labels they have. The other
tables train at a searched row's choice: a topline at its arm's clean choice (it is the clean arm on fewer
samples), the recipes and checkpoints of the two triplet arms at their row's, the marginal's clean pre-training at
its clean row's and its noisy fine-tuning at each noisy row's, the skew's run at its row's.
"""

from __future__ import annotations

import dataclasses
import math
import sys
from functools import partial

import numpy as np
import torch
from scipy import stats

from . import experiment, grids, losses, search, tables
from . import noise as label_noise
from .spec import RunSpec
from .tables import Recorded

#: The grid's tables, in the order the chapter runs them; the searches' trials are named by the first.
BEST_SHOT, NOISE_RATES, RECIPES, CHECKPOINTS, CLEAN_START, FROM_CLEAN, SKEW = (
    "best shot", "noise rates", "other recipes", "checkpoints", "clean pre-training",
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


def arms(beta: float = BETA) -> dict:
    """``{name: loss}``: the three arms, the marginal loss at ``beta``."""
    triplet = partial(losses.triplet_loss, margin=0.2, reduction="pairs")
    return {"triplet, random semi-hard": partial(triplet, negatives="semihard-random"),
            "triplet, fixed semi-hard": partial(triplet, negatives="semihard-fixed"),
            MARGINAL: marginal_loss(beta)}


def row_name(arm: str, rate: float) -> str:
    """A searched row: ``"triplet, random semi-hard, p = 0.4"``."""
    return f"{arm}, p = {rate:g}"


def rows(cfg) -> dict:
    """``{row: (arm, rate)}``: every arm at every noise rate of ``cfg.rates``, each searched on its own."""
    return {row_name(arm, rate): (arm, rate) for arm in arms() for rate in cfg.rates}


def search_rule(cfg, arm: str) -> search.Search | None:
    """The one search (:mod:`dml_tutorial.search`) of ``arm``'s rows: the rate and length, and the marginal loss's
    beta along ``cfg.beta_candidates`` from the paper's 1.4, on the validation split's R@1; ``None`` where the
    profile searches nothing (no ``search_lrs``)."""
    if not cfg.search_lrs:
        return None
    knob = None
    if arm == MARGINAL and cfg.beta_candidates:
        betas = tuple(cfg.beta_candidates)
        knob = search.Axis("beta", betas, (BETA if np.isclose(BETA, betas).any() else betas[-1],))
    return search.Search("R@1", search.Axis("lr", cfg.search_lrs, cfg.search_lr_start), cfg.search_lengths, knob,
                         cfg.search_every, patience=cfg.search_patience)


def _noisy(rate: float):
    return ("symmetric", rate) if rate else None


def _row_spec(cfg, row: str, seed: int) -> RunSpec:
    arm, rate = rows(cfg)[row]
    return RunSpec(BEST_SHOT, row, arms()[arm], cfg, rate, seed=seed, options={"noise": _noisy(rate)})


def _vary(spec: RunSpec, name: str, value) -> RunSpec:
    """A trial's knob: the marginal loss's beta."""
    if name != "beta":
        raise ValueError(f"the noise chapter searches beta, not {name!r}")
    return dataclasses.replace(spec, method=marginal_loss(value))


def best_shots(cfg, seed: int, run) -> dict:
    """Each row of :func:`rows` at its best shot (:func:`dml_tutorial.search.best_shot` under :func:`search_rule`)
    on the validation split, its labels as noisy as the row's, on ``seed``, each trial run by ``run``. Returns the
    run's choices, ``{"best shot": {row: Choice as data}}`` (``{}`` where the profile searches nothing)."""
    chosen = {row: search.best_shot(_row_spec(cfg, row, seed), rule, run, _vary).as_data()
              for row, (arm, _) in rows(cfg).items() if (rule := search_rule(cfg, arm))}
    return {"best shot": chosen} if chosen else {}


def best_shot_trials(cfg, seed: int) -> list[RunSpec]:
    """The trials :func:`best_shots` makes whatever the scores, for the plan (the walks': :func:`unplanned`)."""
    return [trial for row, (arm, _) in rows(cfg).items() if (rule := search_rule(cfg, arm))
            for trial in search.starting_trials(_row_spec(cfg, row, seed), rule, _vary)]


def unplanned(cfg, choices: dict) -> int:
    """How many trials :func:`best_shots` made beyond :func:`best_shot_trials`."""
    found = rows(cfg)
    return search.walked(choices, lambda row: search_rule(cfg, found[row][0]))


def stand_in(cfg) -> dict | None:
    """Choices any search of ``cfg`` could make (the profile's rate and length for every row, another rate tried
    before it), for a plan that counts the grid before the searches ran: a choice changes what a run trains with,
    not how many runs there are."""
    if not cfg.search_lrs:
        return None
    other = next(lr for lr in cfg.search_lrs if not np.isclose(lr, cfg.lr))
    trials = [{"lr": lr, "epochs": cfg.epochs, "curve": {cfg.epochs: 0.5}} for lr in (cfg.lr, other)]
    return {"best shot": {row: {"values": {"lr": cfg.lr, "epochs": cfg.epochs}, "trials": trials}
                          for row in rows(cfg)}}


def trained(cfg, choices: dict | None, arm: str, rate: float) -> tuple:
    """``(loss, settings)`` of ``arm`` at noise ``rate`` as its row's search chose them (rate, length, beta); the
    profile's own where none searched it."""
    row = row_name(arm, rate)
    return arms(search.chosen(choices, row).get("beta", BETA))[arm], search.tuned(cfg, choices, row)


def _recipe(settings, changes: dict, choices: dict | None, row: str):
    """``settings`` under a recipe's ``changes``; ``"runner-up"`` is the row's search's next-best rate."""
    def value(v):
        if v != "runner-up":
            return v
        if (lr := search.runner_up(choices, row)) is None:
            raise ValueError(f"the recipe's runner-up rate needs {row!r}'s search to have tried another rate")
        return lr

    return settings.replace(**{k: value(v) for k, v in changes.items()})


def grid(cfg, seeds, choices: dict | None = None) -> list[RunSpec]:
    """Every training of the chapter after its searches, at the run's ``choices`` (:func:`best_shots`; the
    profile's settings without them), in the order the chapter runs them, each on every seed (the skew's run on
    the first):

    - noise rates: each arm at each of ``cfg.rates`` of symmetric noise, at its row's choice, and at each noisy
      rate p its topline, the 1 - p clean samples (Le & Odobez's), at its arm's clean choice;
    - other recipes (``cfg.recipes``, test bed II): the two triplet arms at each rate, at their row's choice under
      each recipe's changes (``"runner-up"``: the row's search's next-best rate);
    - checkpoints (``cfg.checkpoint_steps``): the two triplet arms at each of ``cfg.checkpoint_rates``, at their
      row's rate, trained to the last checkpoint with R@1 after every gcd of them;
    - the marginal trained on clean labels keeping its weights, then from them at each noisy rate;
    - skew, last: the random semi-hard triplet at ``cfg.skew_rate`` on the first seed, keeping its weights (the
      miners' skew is measured on them).

    The notebook runs these (:func:`run_spec`), the plan counts and times them, the cache keys on them."""
    seeds = list(seeds)
    specs = []
    for arm in arms():
        clean_loss, clean = trained(cfg, choices, arm, 0.0)
        for rate in cfg.rates:
            loss, settings = trained(cfg, choices, arm, rate)
            specs += [RunSpec(NOISE_RATES, arm, loss, settings, rate, seed=s, options={"noise": _noisy(rate)})
                      for s in seeds]
            if rate:
                specs += [RunSpec(NOISE_RATES, f"{arm} (topline)", clean_loss, clean, rate, seed=s,
                                  options={"fraction": 1 - rate}) for s in seeds]
    for recipe, changes in (cfg.recipes or {}).items():
        for m in PAIR:
            for rate in cfg.rates:
                loss, settings = trained(cfg, choices, m, rate)
                own = _recipe(settings, changes, choices, row_name(m, rate))
                specs += [RunSpec(RECIPES, f"{m}, {recipe}", loss, own, rate, seed=s, options={"noise": _noisy(rate)})
                          for s in seeds]
    for m in PAIR if cfg.checkpoint_steps else ():
        for rate in cfg.checkpoint_rates:
            loss, settings = trained(cfg, choices, m, rate)
            specs += [RunSpec(CHECKPOINTS, m, loss, _checkpointed(settings, cfg.checkpoint_steps), rate, seed=s,
                              options={"noise": _noisy(rate), "curves": True}) for s in seeds]
    loss, settings = trained(cfg, choices, MARGINAL, 0.0)
    specs += [RunSpec(CLEAN_START, MARGINAL, loss, settings, 0.0, seed=s, options={"keep_state": True})
              for s in seeds]
    for rate in [r for r in cfg.rates if r]:
        loss, settings = trained(cfg, choices, MARGINAL, rate)
        specs += [RunSpec(FROM_CLEAN, MARGINAL, loss, settings, rate, seed=s,
                          options={"noise": _noisy(rate), "start": CLEAN_START}) for s in seeds]
    loss, settings = trained(cfg, choices, "triplet, random semi-hard", cfg.skew_rate)
    return specs + [RunSpec(SKEW, "triplet, random semi-hard", loss, settings, cfg.skew_rate, seed=seeds[0],
                            options={"noise": _noisy(cfg.skew_rate), "keep_state": True})]


def _checkpointed(chosen, steps):
    """``chosen`` trained to the last of ``steps`` (each a whole number of epochs of ``batches_per_epoch``
    batches), evaluated after every gcd of them."""
    per = chosen.batches_per_epoch
    if not per or any(s % per for s in steps):
        raise ValueError(f"checkpoint_steps {list(steps)}: each a multiple of batches_per_epoch ({per}) steps")
    return chosen.replace(epochs=max(steps) // per, eval_every=math.gcd(*steps) // per)


def run_spec(splits: dict, device="auto"):
    """``run(spec, progress=False, checkpoint=None) -> Run`` for :func:`dml_tutorial.experiment.run_grid`: one
    :class:`~dml_tutorial.spec.RunSpec` of :func:`grid` or of a search trained on ``splits[spec.split]``
    (:func:`dml_tutorial.experiment.train_and_retrieve`, P x K batches of its settings, with the label noise, the
    fraction, the curves and the kept weights its options name); a run whose options name a ``start`` starts from
    the weights of the same seed's run of that table (which keeps them: :data:`CLEAN_START`). A search's trial
    (``options["curve"]``) records the R@1 of its split's held-out classes at every checkpoint, their labels as
    noisy as its training labels (:func:`dml_tutorial.noise.held_out_noise`). A ``functools.partial``, so that the
    cache's key holds the data it binds."""
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
    o, s, data = spec.options, spec.settings, splits[spec.split]
    evaluate = None
    if "curve" in o:  # a search's trial: its held-out classes' labels as noisy as its training labels
        data = dataclasses.replace(data, test=label_noise.held_out_noise(data.test, o.get("noise"), spec.seed))
        evaluate = experiment.recall_checkpoint(data.test, o["curve"], s)
    init = states.kept[(o["start"], spec.seed)] if "start" in o else None
    out = experiment.train_and_retrieve(data, spec.method, s, p=s.p, k=s.k, seed=spec.seed, device=device,
                                        progress=progress, checkpoint=checkpoint, noise=o.get("noise"),
                                        fraction=o.get("fraction", 1.0), curves=o.get("curves", False),
                                        keep_state=o.get("keep_state", False), init=init, evaluate=evaluate,
                                        score=evaluate is None)
    if o.get("keep_state"):
        states.kept[(spec.table, spec.seed)] = out.state
    return out


def train_grid(start, splits, plan=None) -> grids.TrainedGrid:
    """The chapter's experiment on ``splits`` (:func:`dml_tutorial.grids.train`): where the profile searches,
    each row's best shot on held-out seen classes (:func:`best_shots`, on ``splits``' validation split), then every
    training of :func:`grid` and the reference rows."""
    parts = {"main": splits}  # what the grid and the searches train on, by name
    if start.cfg["search_lrs"]:
        parts["validation"] = search.validation_split(splits, held_out=start.cfg["held_out"])
    return grids.train(sys.modules[__name__], start, run_spec(parts, start.device), splits, plan)


# --- section 3's tables, from the grid's runs ------------------------------------------------------------------------
def main_table(results: dict, refs: dict, rates, kinds) -> dict:
    """The chapter's main table (:data:`dml_tutorial.tables.NOISE_MAIN`), ``{row: {"p = <rate>": [one per seed]}}``,
    from the runs of :data:`NOISE_RATES` (``results``, ``{(row, rate): [Run]}``) and the reference rows ``refs``
    (``{(kind, ""): [Run]}`` of ``kinds``): each arm's R@1 at every rate, each arm's (1 - p) clean topline at every
    rate but 0 (section 6.1), the reference rows (no training label enters them: one value for every p), then each
    arm's NMI at every rate (rows ``"<arm> NMI"``)."""
    names, noisy = list(arms()), [r for r in rates if r]
    table = {name: {f"p = {r:g}": [x.metrics["R@1"] for x in results[(name, r)]] for r in rates} for name in names}
    table |= {f"{name} (topline)": {f"p = {r:g}": [x.metrics["R@1"] for x in results[(f"{name} (topline)", r)]]
                                    for r in noisy} for name in names}
    table |= {kind: {f"p = {r:g}": [x.metrics["R@1"] for x in refs[(kind, "")]] for r in rates} for kind in kinds}
    return table | {f"{name} NMI": {f"p = {r:g}": [x.metrics["NMI"] for x in results[(name, r)]] for r in rates}
                    for name in names}


def topline_ratios(results: dict, rates) -> dict:
    """The paper's Fig. 1d as a table: each arm's R@1 under noise over its topline's, paired by seed, at every
    rate but 0, ``{arm: {"p = <rate>": [ratio per seed]}}`` (:func:`dml_tutorial.bench.robustness`'s ratios)."""
    from .bench import robustness  # the bench's ratio to the topline, one definition for both chapters

    return {name: {f"p = {r:g}": robustness(results[(name, r)], results[(f"{name} (topline)", r)])["ratios"]
                   for r in rates if r} for name in arms()}


def by_rate(runs: dict, rates) -> dict:
    """``{row: {"p = <rate>": [R@1 per seed]}}`` of a table of the grid (``{(row, rate): [Run per seed]}``), the
    rows in the grid's order: the other recipes' table (:data:`RECIPES`)."""
    return {row: {f"p = {r:g}": [x.metrics["R@1"] for x in runs[(row, r)]] for r in rates}
            for row in dict.fromkeys(row for row, _ in runs)}


def miner_gaps(results: dict, rates) -> list[str]:
    """Random minus fixed semi-hard R@1 at each noise rate of ``rates``, paired by seed in ``results`` (the
    noise-rate table, ``{(arm, rate): [Run per seed]}``): its mean and std in points, and the paired t-test's p."""
    fixed, rand = PAIR
    lines = []
    for rate in rates:
        d = experiment.paired_difference(results[(fixed, rate)], results[(rand, rate)], "R@1")
        lines.append(f"p = {rate:.1f}: random - fixed semi-hard R@1 = {100 * d['mean']:+5.1f} ± "
                     f"{100 * d['std']:.1f} points (p-value {d['p']:.2f})")
    return lines


def recipe_gaps(table: dict, recipes, rates) -> list[str]:
    """One line a recipe of ``recipes`` (``{name: its overrides}``): random minus fixed semi-hard R@1, in points,
    at each noise rate, the mean of the seeds' paired differences in ``table`` (:func:`by_rate`'s)."""
    fixed, rand = PAIR
    lines = []
    for recipe, overrides in recipes.items():
        gaps = [100 * np.mean(np.subtract(table[f"{rand}, {recipe}"][f"p = {r:g}"],
                                          table[f"{fixed}, {recipe}"][f"p = {r:g}"])) for r in rates]
        lines.append(f"{recipe} ({overrides}): random - fixed R@1 by p, points: "
                     + ", ".join(f"{r:g}: {g:+.1f}" for r, g in zip(rates, gaps)))
    return lines


def checkpoint_table(runs: dict, steps, batches_per_epoch: int) -> dict:
    """``{"<arm>, p = <rate>": {"<steps> steps": [unseen R@1 per seed]}}``: the long runs of :data:`CHECKPOINTS`
    (``{(arm, rate): [Run per seed]}``, each with its per-epoch history) read at the epochs ending at ``steps``."""
    at = [s // batches_per_epoch - 1 for s in steps]
    return {f"{m}, p = {r:g}": {f"{s:,} steps": [x.history["unseen R@1"][i] for x in runs[(m, r)]]
                                for s, i in zip(steps, at)} for (m, r) in runs}


def checkpoint_gaps(table: dict, steps, rates) -> list[str]:
    """One line a noisy rate of ``rates``: how much more random semi-hard leads fixed semi-hard there than at
    p = 0, in points, at each of ``steps`` (means over seeds of :func:`checkpoint_table`'s values)."""
    fixed, rand = PAIR

    def lead(rate, column):
        return np.mean(np.subtract(table[f"{rand}, p = {rate:g}"][column], table[f"{fixed}, p = {rate:g}"][column]))

    columns = list(table[f"{fixed}, p = 0"])
    return [f"random - fixed at p = {r:g} minus at p = 0, points: " + ", ".join(
        f"{s:,} steps {100 * (lead(r, c) - lead(0, c)):+.1f}" for s, c in zip(steps, columns)) for r in rates if r]


# --- the tables section 3 records, each from the trained grid (trained.record) ---------------------------------------
def recall_and_nmi(run: grids.TrainedGrid) -> Recorded:
    """:data:`~dml_tutorial.tables.NOISE_MAIN`: each arm, its (1 - p) clean topline, the reference rows, each
    arm's NMI (:func:`main_table`)."""
    kinds = experiment.reference_kinds(run.cfg, run.splits)
    rows = main_table(run.table(NOISE_RATES), run.refs, run.cfg["rates"], kinds)
    return Recorded(tables.NOISE_MAIN, rows, caption="unseen-class Recall@1 and NMI in %, mean ± std over "
                    f"{len(run.seeds)} seeds ({run.cfg['profile']} profile)")


def share_of_topline(run: grids.TrainedGrid) -> Recorded:
    """The paper's Fig. 1d, paired by seed (:func:`topline_ratios`)."""
    return Recorded("Recall@1 as a share of the topline's (Fig. 1d)",
                    topline_ratios(run.table(NOISE_RATES), run.cfg["rates"]))


def other_recipes(run: grids.TrainedGrid) -> Recorded | None:
    """Test bed II: the two triplet arms under each of ``cfg.recipes`` (:func:`by_rate`); ``None`` where the
    profile has none."""
    if not run.cfg["recipes"]:
        return None
    return Recorded("Recall@1 under symmetric label noise, other recipes",
                    by_rate(run.table(RECIPES), run.cfg["rates"]))


def at_checkpoints(run: grids.TrainedGrid) -> Recorded | None:
    """Test bed II: the two triplet arms' R@1 at ``cfg.checkpoint_steps`` (:func:`checkpoint_table`); ``None``
    where the profile has none."""
    cfg = run.cfg
    if not cfg["checkpoint_steps"]:
        return None
    rows = checkpoint_table(run.table(CHECKPOINTS), cfg["checkpoint_steps"], cfg["batches_per_epoch"])
    return Recorded("Recall@1 at checkpoints (steps)", rows, caption="unseen-class Recall@1 in %, mean over "
                    f"{len(run.seeds)} seeds, by steps")


def recipe_gap_lines(run: grids.TrainedGrid) -> list[str]:
    """:func:`recipe_gaps` of :func:`other_recipes`' table; none where the profile has no other recipe."""
    made = other_recipes(run)
    return recipe_gaps(made.rows, run.cfg["recipes"], run.cfg["rates"]) if made else []


def checkpoint_gap_lines(run: grids.TrainedGrid) -> list[str]:
    """:func:`checkpoint_gaps` of :func:`at_checkpoints`' table; none where the profile has no checkpoints."""
    made = at_checkpoints(run)
    cfg = run.cfg
    return checkpoint_gaps(made.rows, cfg["checkpoint_steps"], cfg["checkpoint_rates"]) if made else []


def corrupted_positives(run: grids.TrainedGrid, bad_positives: dict) -> Recorded:
    """Section 4: each miner's active triplets with a corrupted positive (:func:`corrupted_positive_table`, from
    :func:`miner_skews` on the first seed)."""
    return Recorded("Active triplets with a corrupted positive, per miner", corrupted_positive_table(bad_positives),
                    seeds=run.seeds[:1], caption="active triplets with a corrupted positive pair, %, "
                    f"p = {run.cfg['skew_rate']:g}, one seed")


def tolerated_noise(run: grids.TrainedGrid, most: dict) -> Recorded:
    """Section 4: Q (eq. 22) at each trained noise rate and the tolerated p (eq. 27), balanced and at each
    miner's max skew (:func:`q_table`, from :func:`miner_skews` on the first seed)."""
    k_seen = len(np.unique(run.splits.train.labels))
    return Recorded("Q at each noise rate, and the tolerated p (eqs. 22, 27)",
                    q_table(most, run.cfg["rates"], k_seen), seeds=run.seeds[:1],
                    caption=f"Q in % at K = {k_seen} (a guarantee where Q >= 0), and the largest such p")


def clean_pretraining(run: grids.TrainedGrid) -> Recorded:
    """Section 5's oracle: the marginal from a random start and from its clean pre-training
    (:func:`pretraining_table`)."""
    from_clean = {rate: runs for (_, rate), runs in run.table(FROM_CLEAN).items()}
    return Recorded("Clean pre-training before noisy training",
                    pretraining_table(run.table(NOISE_RATES), from_clean, run.cfg["rates"]),
                    caption=f"unseen-class Recall@1 in %, mean ± std over {len(run.seeds)} seeds")


def skews(run: grids.TrainedGrid) -> tuple:
    """:func:`miner_skews` of the :data:`SKEW` run (its weights kept: the first seed at ``cfg.skew_rate``), on the
    training split with that run's noisy labels."""
    rate, first = run.cfg["skew_rate"], run.seeds[0]
    noisy_train = experiment.corrupt(run.splits.train, ("symmetric", rate), seed=first)
    state = run.table(SKEW)[("triplet, random semi-hard", rate)][0].state
    return miner_skews(run.cfg, run.splits.train, noisy_train, state, first)


# --- section 2: the identity behind the bounds, measured on real inputs ---------------------------------------------
#: The columns of :func:`risk_identity`'s arrays.
IDENTITY_COLUMNS = ("clean", "noisy", "predicted", "hinge clean", "hinge noisy")


def risk_identity(images, labels, num_classes: int, rates=(0.2, 0.4, 0.6), maps: int = 24, dim: int = 16,
                  seed: int = 0) -> dict:
    """Eq. 11-17 on real inputs: ``maps`` linear maps theta ``[dim, pixels]`` of the centred ``images``, from a
    random one (s = 0) to the class templates (s = 1: the classes' mean centred images), so a spread of clean risks
    from useless to good; for each noise rate p one labelling drawn by
    :func:`dml_tutorial.noise.corrupt_labels` (``seed``). Per map and rate: the unhinged pair risk (eq. 14,
    :func:`~dml_tutorial.noise.auxiliary_pair_risk`) on the clean labels and on the noisy ones, its expectation
    under the noise from the clean ones (eq. 17, :func:`~dml_tutorial.noise.expected_noisy_pair_risk`), and the
    triplet loss as trained (unit embeddings, margin 0.2, random semi-hard negatives, a mean over positive pairs)
    on the clean and the noisy labels. ``{p: array [maps, 5]}``, columns :data:`IDENTITY_COLUMNS`."""
    x = torch.as_tensor(images).flatten(1).double()
    x = x - x.mean(0)
    y = np.asarray(labels)
    templates = torch.zeros(dim, x.shape[1], dtype=x.dtype)
    templates[:num_classes] = torch.stack([x[torch.as_tensor(y == c)].mean(0) for c in range(num_classes)])
    g = torch.Generator().manual_seed(seed)
    risks = {p: [] for p in rates}
    for s in np.linspace(0, 1, maps):
        random_map = torch.randn(dim, x.shape[1], generator=g, dtype=x.dtype)
        theta = (1 - s) * random_map / random_map.norm() + s * templates / templates.norm()
        z = x @ theta.T
        unit = torch.nn.functional.normalize(z, dim=1).float()
        for p, rows in risks.items():
            noisy = label_noise.corrupt_labels(y, num_classes, p, seed=seed)
            hinge = [losses.triplet_loss(unit, torch.as_tensor(t), margin=0.2, reduction="pairs",
                                         generator=torch.Generator().manual_seed(seed)).item() for t in (y, noisy)]
            rows.append((label_noise.auxiliary_pair_risk(z, y), label_noise.auxiliary_pair_risk(z, noisy, num_classes),
                         label_noise.expected_noisy_pair_risk(z, y, p, num_classes), *hinge))
    return {p: np.array(rows) for p, rows in risks.items()}


def identity_lines(risks: dict, num_classes: int) -> list[str]:
    """What :func:`risk_identity` shows, a line per noise rate: how far one noisy draw lies from eq. 17's
    prediction, the slope of the noisy risk against the clean one beside eq. 24's multipliers of the negative and
    positive pairs, and the rank correlation of noisy and clean risks, unhinged and with the hinge and mining (1:
    the minimiser survives the noise)."""
    out = []
    for p, rows in risks.items():
        clean, noisy, predicted, hinge_clean, hinge_noisy = rows.T
        q_pos, q_neg = label_noise.pair_noise_rates(p, num_classes)
        multipliers = (1 - q_pos - q_pos / num_classes, 1 - q_neg - q_neg * num_classes)  # eq. 24
        rho = stats.spearmanr(clean, noisy).statistic, stats.spearmanr(hinge_clean, hinge_noisy).statistic
        out.append(f"p = {p:g}: unhinged: noisy - predicted within {np.abs(noisy - predicted).max():.3f}, noisy vs "
                   f"clean slope {np.polyfit(clean, noisy, 1)[0]:.2f} (eq. 24's multipliers: {multipliers[1]:.2f} "
                   f"negative pairs, {multipliers[0]:.2f} positive), rank correlation {rho[0]:.2f}; with hinge and "
                   f"mining: rank correlation {rho[1]:.2f}")
    return out


# --- section 4: the skew of each miner, and what the theorem then guarantees ----------------------------------------
#: The miners whose skew section 4 measures.
MINERS = ("random", "semihard-random", "semihard-fixed", "hard")


def miner_skews(cfg, train_split, noisy_train, state, seed: int) -> tuple[dict, dict, dict, list[str]]:
    """Section 4's measurements, for an untrained network (drawn from ``seed``) and the one with ``state`` (a run
    trained on ``noisy_train``, the training split with its noisy labels): each of :data:`MINERS` mining batches
    of the profile's P x K in ``noisy_train``'s embeddings (margin 0.2, batches drawn with ``seed``), with the noisy
    labels deciding positives and negatives. Returns ``({(when, miner): mean skew}``
    (:func:`dml_tutorial.noise.negative_skew`), ``{(when, miner): {"max", "never"}}``
    (:func:`~dml_tutorial.noise.max_skew`), ``{(when, miner): {"active", "pairs"}}``
    (:func:`~dml_tutorial.noise.corrupted_positive_share`), and a line per pair with the tolerated p at its max
    skew (:func:`~dml_tutorial.noise.triplet_noise_bound`, K the seen classes)."""
    from . import data, models, train

    k_seen = len(np.unique(train_split.labels))
    batches = {"p": cfg["p"], "k": cfg["k"], "seed": seed}  # mining in training-sized batches
    skews, most, bad_positives, lines = {}, {}, {}, []
    torch.manual_seed(seed)  # the untrained network: drawn from the first seed
    for when, weights in (("untrained", None), ("trained", state)):
        model = models.from_settings(cfg, data.input_shape(train_split))
        if weights is not None:
            model.load_state_dict(weights)
        z = train.embed(model, noisy_train)
        for miner in MINERS:
            key = (when, miner)
            skews[key] = label_noise.negative_skew(z, noisy_train.labels, train_split.labels, miner, margin=0.2,
                                                   **batches)
            most[key] = label_noise.max_skew(z, noisy_train.labels, miner, margin=0.2, **batches)
            bad_positives[key] = label_noise.corrupted_positive_share(z, noisy_train.labels, train_split.labels,
                                                                      miner, margin=0.2, **batches)
            lines.append(f"{when:9s} {miner:16s} mean eta {skews[key]:5.2f} | max eta {most[key]['max']:5.1f}, never "
                         f"picked {100 * most[key]['never']:4.1f}% | tolerated p at the max (K = {k_seen}) "
                         f"{label_noise.triplet_noise_bound(most[key]['max'], k_seen):.3f}")
    return skews, most, bad_positives, lines


def corrupted_positive_table(bad_positives: dict) -> dict:
    """``{miner: {"<when>, active triplets": [share], "all positive pairs": [share]}}``: the share of each miner's
    active triplets whose positive pair is corrupted, untrained and trained, beside the share among all positive
    pairs (from :func:`miner_skews`)."""
    return {miner: {f"{when}, active triplets": [bad_positives[(when, miner)]["active"]]
                    for when in ("untrained", "trained")} | {"all positive pairs": [bad_positives[("trained", miner)]
                                                                                    ["pairs"]]}
            for miner in MINERS}


def q_table(most: dict, rates, k_seen: int) -> dict:
    """Eq. 22's Q at each noisy rate of ``rates`` and eq. 27's tolerated p, for balanced 1-1 weights (eta = 1,
    eq. 24) and for each semi-hard miner at its trained max skew (:func:`miner_skews`), K = ``k_seen``."""
    etas = {"balanced weights (eta = 1, eq. 24)": 1.0,
            "random semi-hard, max eta": most[("trained", "semihard-random")]["max"],
            "fixed semi-hard, max eta": most[("trained", "semihard-fixed")]["max"]}
    return {row: {**{f"p = {r:g}": [label_noise.triplet_multiplier(r, eta, k_seen)] for r in rates if r},
                  "tolerated p": [label_noise.triplet_noise_bound(eta, k_seen)]} for row, eta in etas.items()}


def pretraining_table(results: dict, from_clean: dict, rates) -> dict:
    """The marginal loss at each noisy rate of ``rates`` from a random start (``results``, ``{(row, rate): [Run]}``
    of :data:`NOISE_RATES`) and from its clean pre-training (``from_clean``, ``{rate: [Run]}`` of
    :data:`FROM_CLEAN`, an oracle: the clean labels decide its start), R@1 per seed."""
    return {"marginal, random init": {f"p = {r:g}": [x.metrics["R@1"] for x in results[(MARGINAL, r)]]
                                      for r in rates if r},
            "marginal, clean pre-training (oracle)": {f"p = {r:g}": [x.metrics["R@1"] for x in runs]
                                                      for r, runs in from_clean.items()}}
