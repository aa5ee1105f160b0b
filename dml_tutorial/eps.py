"""Class collapse and easy positive sampling (*Reducing Class Collapse in Metric Learning with Easy
Positive Sampling*, Levi et al. 2020).

Under label noise, the minimisers of the triplet and margin losses put every sample of a class on one point
(Theorems 1-2). EPS (section 4.3) pulls each anchor only toward its *nearest* same-class sample of the batch,
x_p = argmin_{y_t = y_a} ||f(t) - f(a)||, which leaves a class free to keep several modes (Claims 1-2). In this
package EPS is the ``positives="easy"`` option of the losses (:func:`dml_tutorial.sampling.positive_pairs`).

    loss = eps_loss("margin", eps=True)      # EPS + Dist-Margin
"""

from __future__ import annotations

import dataclasses
from dataclasses import replace
from functools import partial
from types import SimpleNamespace

import numpy as np
import torch

from . import data, experiment, grids, losses, metrics, recording, search, tables
from ._checks import check_embeddings
from .distances import pairwise_distances
from .objective import Objective
from .spec import RunSpec
from .tables import Recorded

#: The losses of section 5.2 with the defaults the paper keeps (Roth et al.'s framework; section 5 and Appendix C):
#: triplet + semi-hard negatives (FaceNet's band d_ap < d_an < d_ap + margin, Schroff et al. as cited; margin 0.2),
#: margin loss + distance-weighted negatives (alpha = 0.2, beta = 1.2), multi-similarity with its own mining
#: (alpha = 2, lambda = 1, beta = 50).
LOSSES = {
    "triplet": partial(losses.triplet_loss, margin=0.2, negatives="semihard-band"),
    "margin": partial(losses.margin_loss, alpha=0.2, beta=1.2, negatives="distance"),
    "ms": partial(losses.multi_similarity_loss, alpha=2.0, lam=1.0, beta=50.0),
}
NAMES = {"triplet": "Trip. + SH", "margin": "Dist-Margin", "ms": "MS"}


#: The positives of each loss without EPS, as the paper's baselines sample them: one random positive per anchor for
#: the triplet and margin losses ("random sampling of positive examples (the regular loss)", section 5.1; Roth et
#: al.'s semi-hard and distance miners, the framework of section 5.2), MS's own positive mining for MS.
BASELINE_POSITIVES = {"triplet": "random", "margin": "random", "ms": "all"}


def eps_loss(name: str, eps: bool = True, baseline_positives: str | None = None, **options):
    """The loss ``name`` of :data:`LOSSES` with easy positives (``eps=True``) or with the paper's baseline
    positives (:data:`BASELINE_POSITIVES`, or ``baseline_positives``: ``"all"``, every positive pair, as FaceNet's
    semi-hard triplets and Wu et al.'s margin loss take them, the "original papers" of section 5.2.2).
    ``options`` replace the loss's settings there (a margin, MS's lambda, a negative miner: a test bed's validated
    ones); the positives are this function's to choose."""
    if name not in LOSSES:
        raise ValueError(f"unknown loss {name!r}; choose one of {sorted(LOSSES)}")
    if "positives" in options:
        raise ValueError("eps_loss chooses the positives (eps=True: easy; eps=False: the paper's baseline's)")
    if eps and baseline_positives is not None:
        raise ValueError("baseline_positives replaces the baseline's positives; with eps=True they are the easy ones")
    positives = "easy" if eps else baseline_positives or BASELINE_POSITIVES[name]
    fn = partial(LOSSES[name], **options, positives=positives)
    return Objective(NAMES[name], fn, {}, label(name, eps))  # a local loss alone: the composable objective's simplest


def label(name: str, eps: bool) -> str:
    """The row name the paper's tables use, e.g. ``EPS + Dist-Margin``."""
    return ("EPS + " if eps else "") + NAMES[name]


def classes_per_batch(cfg: dict, k: int) -> int:
    """The classes of a batch of the positives-per-class runs (Fig. 3b) at ``k`` images per class: ``cfg["p"]``,
    or ``positives_images // k`` where the profile sets ``positives_images``, so that every ``k`` trains on as
    many images per step (the number of positives changes, not the batch's size or memory)."""
    images = cfg.get("positives_images")
    if not images:
        return cfg["p"]
    if images // k < 2:
        raise ValueError(f"positives_images = {images} holds fewer than 2 classes of {k} images: no negatives")
    return images // k


def superclass_batches(cfg) -> list[tuple[int, int]]:
    """``[(k, p)]``: the superclass runs at each of ``cfg.superclass_positives`` same-superclass images a batch,
    each holding as many images as Table 3's batch (``superclasses["p"] x superclasses["k"]``: ``p = images //
    k``), so that only the chance of a same-letter positive changes (issue #86: at 5 a superclass EPS seldom sees
    one). Every ``k`` must divide the images and leave 2 classes at least. :func:`grid` trains each but Table 3's
    own ``k``, whose runs are Table 3's Dist-Margin rows."""
    if not cfg.superclass_positives:
        return []
    if not cfg.superclasses:
        raise ValueError("superclass_positives needs superclasses (Table 3's dataset and batch)")
    images = cfg.superclasses["p"] * cfg.superclasses["k"]
    bad = [k for k in cfg.superclass_positives if images % k or images // k < 2]
    if bad:
        raise ValueError(f"superclass_positives {bad} do not split Table 3's {images} images a batch into 2 "
                         "classes or more of k each")
    return [(k, images // k) for k in cfg.superclass_positives]


#: A replicate ``r`` of a run of seed ``s`` trains with seed ``s + r * REPLICATE_SEEDS`` (the seeds of a sweep
#: stay below it), on seed ``s``'s split.
REPLICATE_SEEDS = 1000


def replicates(runs: dict) -> dict:
    """``{row: [(Run per replicate) per seed]}`` from a table of the grid with the replicate as its column,
    ``{(row, replicate): [Run per seed]}`` (:func:`dml_tutorial.spec.table_of`)."""
    rows = {}
    for (row, _), per_seed in runs.items():  # in the grid's order: each row's replicates in turn
        rows.setdefault(row, []).append(per_seed)
    return {row: [tuple(r) for r in zip(*columns, strict=True)] for row, columns in rows.items()}


def table1_scores(rows: dict, parity, device=None) -> dict:
    """Table 1's recorded numbers, ``{row: {"train R@1", "train R@5", "train R@10", "test R@1", ...: [one per
    seed]}}``, from each row's runs on the even/odd splits ``parity`` (:func:`even_odd`; ``{row: [Run]}``, the
    reference rows included, each with its training embeddings): Recall@K by **digit** on the training digits
    (their ``extras["clean"]``) and on the unseen ones, the neighbours on ``device``. A seed's entry may be a tuple
    of replicates (:func:`replicates`): their mean. A run that stands for several seeds (the raw input's) is scored
    once."""
    scored, out = {}, {}

    def score(r):
        if id(r) not in scored:
            seen = metrics.recall_at_k(r.train_embeddings, parity.train.extras["clean"], (1, 5, 10), device=device)
            unseen = metrics.recall_at_k(r.test_embeddings, parity.test.labels, (1, 5, 10), device=device)
            scored[id(r)] = {**{f"train R@{k}": v for k, v in seen.items()},
                             **{f"test R@{k}": v for k, v in unseen.items()}}
        return scored[id(r)]

    for row, runs in rows.items():
        for entry in runs:
            each = [score(r) for r in (entry if isinstance(entry, tuple) else (entry,))]
            for key in each[0]:
                out.setdefault(row, {}).setdefault(key, []).append(float(np.mean([e[key] for e in each])))
    return out


def table3_scores(rows: dict, letters) -> dict:
    """Table 3's recorded numbers, ``{row: {"R@1", "R@2", "R@4", "R@8", "R@1 (superclass)": [one per seed]}}``, from
    each row's runs on the superclasses (``{row: [Run]}``, the reference rows included): Recall@K of the unseen
    superclasses' images by their ``letters`` (the test split's ``extras["letters"]``), and the runs' own R@1 by
    superclass (the paper's alphabets)."""
    out = {}
    for row, runs in rows.items():
        for r in runs:
            scores = {f"R@{k}": v for k, v in metrics.recall_at_k(r.test_embeddings, letters, (1, 2, 4, 8)).items()}
            scores["R@1 (superclass)"] = r.metrics["R@1"]
            for key, value in scores.items():
                out.setdefault(row, {}).setdefault(key, []).append(value)
    return out


def omniglot_letters(rows: dict, letters, seeds) -> dict:
    """Table 3's left half on Omniglot, ``{row: {"R@1", "R@2", "R@4", "R@8", "NMI": [one per seed]}}``: each
    row's runs (trained on the alphabets) read back on the unseen alphabets' ``letters``, Recall@K and NMI (one
    cluster per letter, k-means seeded by the run's seed of ``seeds``)."""
    out = {}
    for row, runs in rows.items():
        for r, s in zip(runs, seeds, strict=True):
            scores = {f"R@{k}": v for k, v in metrics.recall_at_k(r.test_embeddings, letters, (1, 2, 4, 8)).items()}
            scores["NMI"] = metrics.nmi(r.test_embeddings, letters, seed=s)
            for key, value in scores.items():
                out.setdefault(row, {}).setdefault(key, []).append(value)
    return out


def letters_by_positives(cfg, table3: dict, runs: dict, letters) -> dict:
    """The recorded table of the letters at each k (:data:`LETTERS_POSITIVES`): ``{row: {"<k> per superclass":
    [letter R@1 per seed]}}`` for Dist-Margin with EPS and without, each run's unseen superclasses scored by letter
    (``letters``, the test split's ``extras["letters"]``). ``runs``: ``{(row, k): [Run]}`` of the grid's table;
    ``table3``: ``{row: [Run]}`` of Table 3's rows, which stand for Table 3's own ``k``."""
    own = cfg.superclasses["k"]

    def r1(run):
        return metrics.recall_at_k(run.test_embeddings, letters, (1,))[1]

    return {row: {f"{k} per superclass": [r1(r) for r in (table3[row] if k == own else runs[(row, k)])]
                  for k, _ in superclass_batches(cfg)} for row in (label("margin", True), label("margin", False))}


#: How a row names a loss's setting: MS's lambda, the margins, the margin loss's beta.
SYMBOLS = {"lam": "λ", "margin": "α", "alpha": "α", "beta": "β"}


def variant_label(name: str, eps: bool, options: dict) -> str:
    """The row of ``name`` at settings other than its table row's, e.g. ``EPS + MS (λ = 0.5)``."""
    if not options:
        raise ValueError("a variant names at least one setting; without one it is the table's own row")
    settings = ", ".join(f"{SYMBOLS.get(k, k)} = {v:g}" for k, v in options.items())
    return f"{label(name, eps)} ({settings})"


#: The arms of Table 2, each searched on its own (:func:`best_shots`): the loss with EPS, without it as the paper's
#: baselines sample positives, and without it with every positive pair (the "original papers" reading of 5.2.2).
ARMS = {"EPS": {"eps": True}, "baseline": {"eps": False}, "all positives": {"eps": False, "baseline_positives": "all"}}


def arm_label(name: str, arm: str) -> str:
    """The table row of ``name`` in ``arm`` of :data:`ARMS` (``Trip. + SH, all positives`` for the third)."""
    row = label(name, ARMS[arm]["eps"])
    return f"{row}, all positives" if arm == "all positives" else row


def positives_of(name: str, arm: str) -> str:
    """The positives ``name`` trains on in ``arm`` (what :func:`eps_loss` picks)."""
    settings = ARMS[arm]
    return "easy" if settings["eps"] else settings.get("baseline_positives") or BASELINE_POSITIVES[name]


def by_superclass(splits, size: int | None = None):
    """Omniglot's protocol (section 5.2.1: "all the characters from the same alphabet has the same class"): both
    splits labelled by ``extras["superclass"]`` (glyphs with ``script="hangul"``: the lead consonant) or, given
    ``size``, by groups of ``size`` consecutive classes (``label // size``: the digits' pairs, the smoke test of
    the protocol); each image's own class kept as ``extras["letters"]`` for Table 3's evaluation by letter. A loss
    that collapses a superclass onto one point cannot tell its letters apart."""
    def relabel(ds):
        if size is not None:
            return replace(ds, labels=ds.labels // size, extras={**ds.extras, "letters": ds.labels})
        if "superclass" not in ds.extras:
            raise ValueError("the dataset has no extras['superclass'] (glyphs: script='hangul', the lead consonant);"
                             " give size to group consecutive classes")
        return replace(ds, labels=ds.extras["superclass"], extras={**ds.extras, "letters": ds.labels})

    return replace(splits, train=relabel(splits.train), test=relabel(splits.test),
                   name=f"{splits.name} (superclass labels)")


def even_odd(splits):
    """Section 5.1: the same splits with the training labels replaced by digit parity (0 even, 1 odd); the digits
    stay in ``train.extras['clean']`` for evaluation. The test split (the unseen digits) keeps its digit labels."""
    return replace(splits, train=splits.train.with_labels(splits.train.labels % 2),
                   name=f"{splits.name} (even/odd training labels)")


def even_odd_splits(cfg, seed: int = 0, root="data"):
    """Section 5.1's data: the first six classes of ``cfg.even_odd_dataset`` (digits; on glyphs the characters
    0-9, ``cfg.even_odd_options``) seen, the rest unseen, trained on their parity (:func:`even_odd`)."""
    digits = data.load_dataset(cfg["even_odd_dataset"], split="classes", seen=range(6), seed=seed, root=root,
                               **cfg["even_odd_options"])
    return even_odd(digits)


#: What the even/odd experiment's classes are, by its dataset (the figures' words).
UNITS = {"digits": "digits", "mnist": "digits", "glyphs": "characters"}

#: Section 4's classes made of modes (:func:`dml_tutorial.data.subclusters`): 4 classes of 3 modes on the unit
#: circle, 100 samples a mode.
SUBCLUSTER_DATA = {"num_classes": 4, "modes_per_class": 3, "dim": 2, "samples_per_mode": 100, "spread": 0.05}


def subcluster_splits(seed: int = 0):
    """:data:`SUBCLUSTER_DATA`, split by sample (the held-out samples of the same modes)."""
    return data.load_dataset("subclusters", split="samples", seed=seed, **SUBCLUSTER_DATA)


def letters_table(start, splits, table2: dict):
    """Table 3's left half on Omniglot (:func:`omniglot_letters`), recorded; or why not (no letters)."""
    if "letters" not in splits.test.extras:
        print(f"Table 3's letters need DATASET = 'omniglot': {start.cfg['dataset']} has none")
        return None
    scores = omniglot_letters(table2, torch.as_tensor(splits.test.extras["letters"]), start.seeds)
    return recording.record_for(start, "Table 3: unseen alphabets by letter", scores, REPORTED_LETTERS,
                                caption="unseen alphabets evaluated on their letters, in %; paper: Table 3 (left), "
                                "quoted")


def mode_separation(embeddings, classes, modes) -> float:
    """How far apart a class keeps its modes: for each class with two or more modes, the mean distance between
    samples of *different* modes divided by the mean distance between samples of the *same* mode; averaged over
    classes. About 1 when a class has collapsed onto one blob (Theorems 1-2), large when its modes stay apart."""
    z, y = check_embeddings(embeddings, classes, min_samples=2)
    m = torch.as_tensor(np.asarray(modes), device=z.device)
    ratios = []
    for c in torch.unique(y):
        zc, mc = z[y == c], m[y == c]
        if len(torch.unique(mc)) < 2:
            continue
        d = pairwise_distances(zc)
        same = (mc[:, None] == mc[None, :]) & ~torch.eye(len(mc), dtype=torch.bool, device=z.device)
        other = mc[:, None] != mc[None, :]
        if same.any():
            ratios.append((d[other].mean() / d[same].mean().clamp(min=1e-12)).item())
    if not ratios:
        raise ValueError("mode_separation needs a class with two or more modes, one of them with two samples")
    return float(np.mean(ratios))


#: NMI+ uses this many k-means clusters per test class: 10 in Table 2's caption (Cars196, CUB), 30 in Table 3's
#: (Omniglot, where a class is an alphabet of many letters).
NMI_PLUS_FACTOR = {"omniglot": 30}


def nmi_plus_clusters(dataset: str, num_classes: int, factor: int | None = None) -> int:
    """The number of clusters of NMI+ for ``num_classes`` test classes: ``factor`` times, or the paper's factor for
    ``dataset`` (:data:`NMI_PLUS_FACTOR`, 10 for every dataset but Omniglot)."""
    return (factor or NMI_PLUS_FACTOR.get(dataset, 10)) * num_classes


#: The raw input's NMI+ is left out above this many input dimensions (CUB's 150,528: its float64 Gram matrix, the
#: eigendecomposition and k-means with ten clusters a class took minutes on two CPUs, issue #88): a reference row
#: that no claim reads.
NMI_PLUS_RAW_DIMS = 10_000


def table2_scores(rows: dict, labels, cfg, seeds) -> dict:
    """Table 2's recorded numbers, ``{row: {"R@1", "R@2", "R@4", "NMI", "NMI+", "MAP@R": [one per seed]}}``, from
    each row's runs (``{row: [Run]}``, the reference rows included) on the unseen ``labels``: the runs' Recall@K and
    NMI; NMI+ with :func:`nmi_plus_clusters` clusters on the same classes as NMI (``cfg.cluster_classes``), but for
    the raw input beyond :data:`NMI_PLUS_RAW_DIMS` dimensions; MAP@R, which ranks every same-class neighbour where
    R@1 sits near its ceiling (issue #86)."""
    clustered = np.unique(labels)[: cfg.cluster_classes]
    clusters = nmi_plus_clusters(cfg.dataset, len(clustered), cfg.nmi_plus_factor)

    def nmi_plus(run, seed):
        z, y = metrics.clustered_subset(run.test_embeddings, labels, cfg.cluster_classes)
        return metrics.nmi(z, y, n_clusters=clusters, seed=seed)

    out = {}
    for row, runs in rows.items():
        out[row] = {k: [r.metrics[k] for r in runs] for k in ("R@1", "R@2", "R@4", "NMI")}
        if row != "raw input" or runs[0].test_embeddings.shape[1] <= NMI_PLUS_RAW_DIMS:
            out[row]["NMI+"] = [nmi_plus(r, s) for r, s in zip(runs, seeds, strict=True)]
        out[row]["MAP@R"] = [metrics.map_at_r(r.test_embeddings, labels) for r in runs]
    return out


def collapse_metrics(embeddings, classes, modes, seed: int = 0) -> dict:
    """What the chapter measures on data with known modes: :func:`mode_separation`, NMI against the classes
    (k-means with one cluster per class), NMI against the modes (one cluster per mode) and Recall@1
    by mode (is the nearest neighbour from the same mode, not just the same class?)."""
    modes = torch.as_tensor(np.asarray(modes))
    return {"separation": mode_separation(embeddings, classes, modes),
            "NMI": metrics.nmi(embeddings, classes, seed=seed),
            "NMI (modes)": metrics.nmi(embeddings, modes, seed=seed),
            "mode R@1": metrics.recall_at_k(embeddings, modes, ks=(1,))[1]}


def collapse_table(runs: dict, splits) -> dict:
    """``{"<row>, <noise>": {metric: [one per seed]}}``: :func:`collapse_metrics` of each run of the sub-clusters
    (``{(row, noise column): [Run per seed]}``) on the held-out samples of ``splits`` (their classes and modes)."""
    test = splits.test
    out = {}
    for (row, noise), per_seed in runs.items():
        for r in per_seed:
            for key, value in collapse_metrics(r.test_embeddings, test.labels, test.extras["modes"]).items():
                out.setdefault(f"{row}, {noise}", {}).setdefault(key, []).append(value)
    return out


#: The sub-clusters' rows whose separation the chapter reads against Theorem 1: each baseline, then with EPS.
COLLAPSE_ROWS = ("Trip. + SH", "EPS + Trip. + SH", "Dist-Margin", "EPS + Dist-Margin")


def collapse_words(collapse: dict, columns) -> str:
    """The collapse figure against Theorem 1 in words (Markdown) from :func:`collapse_table`'s numbers: each of
    :data:`COLLAPSE_ROWS`' mean separation from the first noise column of ``columns`` to the last, and which way it
    moves."""
    if len(columns) < 2:
        return "One noise setting only: no trend to read."
    moves = []
    for name in COLLAPSE_ROWS:
        first, last = (np.mean(collapse[f"{name}, {c}"]["separation"]) for c in (columns[0], columns[-1]))
        where = "towards collapse" if last < first else "away from collapse"
        moves.append(f"- {name}: {first:.1f} ({columns[0]}) to {last:.1f} ({columns[-1]}), {where}")
    return ("Theorem 1 predicts that noise collapses the baseline's sub-clusters (separation falling towards 1) and "
            "leaves EPS's apart. In this run:\n\n" + "\n".join(moves) + "\n\nWhere a baseline moves *away* from "
            "collapse, the figure does not show the theorem's prediction in this setting; the theorem is about the "
            "loss's optimum, a short training need not reach it.")


def positives_scores(by_k: dict) -> dict:
    """Fig. 3b's recorded numbers, ``{row: {"<k> per class": [R@1 per seed]}}``, from its runs ``{(row, k): [Run per
    seed]}`` (the rows and the k in the grid's order)."""
    out = {}
    for (row, k), runs in by_k.items():
        out.setdefault(row, {})[f"{k} per class"] = [r.metrics["R@1"] for r in runs]
    return out


def all_positives_words(runs: list[dict]) -> str:
    """Markdown: each Table 2 baseline sampled as its original paper did (every positive pair) against the same
    loss with one random positive, and EPS against it, on unseen R@1 paired by seed (95% intervals, not adjusted),
    from ``runs`` (run files of the chapter's test bed)."""
    from . import evidence, records, tables

    measured = records.merge_seeds(runs).get(tables.EPS_MAIN.id, ({},))[0]
    r1 = {name: cols["R@1"] for name, cols in measured.items() if "R@1" in cols}
    lines = []
    for name in [n for n in r1 if n.endswith(", all positives")]:
        base = name.removesuffix(", all positives")
        own = evidence.describe(evidence.paired(r1[base], r1[name]))
        with_eps = evidence.describe(evidence.paired(r1[name], r1[f"EPS + {base}"]))
        lines.append(f"- {name}: against one random positive {own}; EPS + {base} against it {with_eps}")
    if not lines:
        return "No test bed II run of the baselines with every positive pair is recorded yet."
    return ("**The baselines as the original papers sample them.** Unseen R@1 on test bed II, paired by seed (95% "
            "intervals, not adjusted; the findings give the verdicts at the adjusted level):\n\n" + "\n".join(lines))


#: Table 1 (MNIST even/odd, train digits 0-5, test digits 6-9), Recall@k in %, quoted.
REPORTED_EVEN_ODD = {
    "Triplet": {"train R@1": 42.01, "train R@5": 87.51, "train R@10": 96.56,
                "test R@1": 35.16, "test R@5": 80.86, "test R@10": 93.26},
    "EPS + Triplet": {"train R@1": 65.78, "train R@5": 93.57, "train R@10": 97.38,
                      "test R@1": 42.31, "test R@5": 83.86, "test R@10": 93.61},
}
_T2 = ("R@1", "R@2", "R@4", "NMI", "NMI+")
#: Table 2 (ResNet-50, 128-d, the authors' re-implementations in Roth et al.'s framework), in %, quoted.
REPORTED = {
    "CARS": {row: dict(zip(_T2, v, strict=True)) for row, v in {
        "Trip. + SH": (76.1, 84.4, 90.0, 65.1, 68.5), "Dist-Margin": (79.6, 86.5, 91.9, 69.1, 70.4),
        "MS": (81.2, 89.1, 93.5, 60.5, 71.1), "EPS + Trip. + SH": (78.3, 85.9, 91.4, 59.8, 69.8),
        "EPS + Dist-Margin": (83.6, 89.5, 93.6, 67.3, 72.4), "EPS + MS": (82.9, 89.4, 93.2, 60.0, 72.0)}.items()},
    "CUB": {row: dict(zip(_T2, v, strict=True)) for row, v in {
        "Trip. + SH": (61.5, 73.4, 82.5, 66.2, 68.1), "Dist-Margin": (63.6, 74.4, 83.1, 69.0, 68.7),
        "MS": (62.3, 73.3, 82.1, 59.8, 68.0), "EPS + Trip. + SH": (61.8, 73.6, 82.4, 62.4, 68.0),
        "EPS + Dist-Margin": (64.7, 75.2, 84.3, 68.2, 69.4), "EPS + MS": (63.3, 74.2, 82.5, 61.2, 68.2)}.items()},
}
_OMNIGLOT = {  # Table 3: (letters R@1, R@2, R@4, R@8, NMI), (alphabets R@1, R@2, R@4, R@8, NMI+)
    "Trip. + SH": ((49.4, 60.0, 69.2, 76.9, 66.2), (71.0, 80.2, 87.6, 92.4, 38.7)),
    "Dist-Margin": ((49.4, 61.1, 70.1, 79.2, 68.9), (73.2, 82.3, 89.1, 94.0, 43.5)),
    "MS": ((57.7, 68.5, 77.3, 83.8, 69.2), (78.8, 86.4, 92.0, 95.4, 46.0)),
    "EPS + Trip. + SH": ((68.4, 79.3, 86.9, 92.1, 79.6), (85.2, 91.1, 94.9, 97.3, 52.6)),
    "EPS + Dist-Margin": ((66.2, 76.7, 84.8, 90.3, 77.9), (83.0, 89.4, 93.6, 96.4, 50.7)),
    "EPS + MS": ((68.7, 79.1, 86.9, 92.2, 77.3), (86.2, 91.7, 94.9, 97.2, 53.8)),
}
#: Table 3 (Omniglot, trained on alphabet labels), evaluated on the alphabets (its ProxyNCA row, a baseline we do
#: not run, is left out).
REPORTED["OMNIGLOT"] = {row: dict(zip(("R@1", "R@2", "R@4", "R@8", "NMI+"), alphabets, strict=True))
                        for row, (_, alphabets) in _OMNIGLOT.items()}
#: Table 3, the same models evaluated on the letters (NMI with one cluster per letter).
REPORTED_LETTERS = {row: dict(zip(("R@1", "R@2", "R@4", "R@8", "NMI"), letters, strict=True))
                    for row, (letters, _) in _OMNIGLOT.items()}
#: Table 3 as one table: the letters' Recall@K and the alphabets' Recall@1 (``R@1 (superclass)``), the columns
#: of the superclass protocol on the glyphs (Hangul syllables by lead consonant), quoted.
REPORTED_SUPERCLASSES = {row: {**letters, "R@1 (superclass)": REPORTED["OMNIGLOT"][row]["R@1"]}
                         for row, letters in REPORTED_LETTERS.items()}
#: Table 5: std of Recall@1 over 8 seeds (without EPS, with EPS), quoted. The CUB margin value 29.8 is as printed.
REPORTED_STD = {
    "CARS": {"Dist-Margin": (0.17, 0.27), "MS": (0.24, 0.29), "Trip. + SH": (0.20, 0.47)},
    "CUB": {"Dist-Margin": (29.8, 0.33), "MS": (0.43, 0.36), "Trip. + SH": (0.52, 0.35)},
}


def collapsed_and_separated(num_classes: int = 2, modes_per_class: int = 3, per_mode: int = 4, flip: float = 0.1,
                            seed: int = 0) -> dict:
    """The two embeddings that Theorems 1-2 and Claims 1-2 compare, on a small constructed batch: every mode is a
    one-hot point (all distinct points sqrt(2) apart). ``"collapsed"`` puts each sample at its *class's* point,
    ``"separated"`` at its *mode's* point. ``"labels"`` are the classes with a fraction ``flip`` of them replaced
    by another class at random (the noise of section 4.2); ``"classes"`` and ``"modes"`` are the true ones."""
    g = torch.Generator().manual_seed(seed)
    modes = torch.arange(num_classes * modes_per_class).repeat_interleave(per_mode)
    classes = modes % num_classes
    flipped = torch.rand(len(modes), generator=g) < flip
    other = (classes + torch.randint(1, num_classes, (len(modes),), generator=g)) % num_classes
    eye = torch.eye(num_classes * modes_per_class)
    return {"collapsed": eye[classes], "separated": eye[modes], "labels": torch.where(flipped, other, classes),
            "classes": classes, "modes": modes}


# --- the chapter's experiment, as data: every training it runs, declared once ---------------------------------------
#: The grid's tables, in the order the chapter runs them, and the split each trains on (:func:`run_spec`).
EVEN_ODD, SUBCLUSTERS, MAIN, SUPERCLASSES, POSITIVES = ("even/odd", "sub-clusters", "Table 2", "superclasses",
                                                        "positives per class")
LETTERS_POSITIVES = "superclass positives"
SPLITS = {EVEN_ODD: "even/odd", SUBCLUSTERS: "sub-clusters", MAIN: "main", SUPERCLASSES: "superclasses",
          POSITIVES: "main", LETTERS_POSITIVES: "superclasses"}
#: The split Table 1's arms are searched on (:func:`even_odd_validation`).
EVEN_ODD_VALIDATION = "even/odd validation"
#: The sub-cluster task's network and batches: an MLP of 8 dimensions, 20 epochs of 4 classes x 16 (section 3).
SUBCLUSTER_SETTINGS, SUBCLUSTER_BATCH = {"model": "mlp", "dim": 8, "epochs": 20, "batches_per_epoch": None}, (4, 16)


def even_odd_settings(cfg):
    """The even/odd task's network (Table 1): a ConvNet to 2 dimensions, not normalised, for
    ``cfg.even_odd_epochs``."""
    return cfg.replace(model="convnet", dim=2, normalize=False, epochs=cfg.even_odd_epochs)


def noise_column(n) -> str:
    """The sub-cluster table's column of a label noise: ``"clean"`` or ``"sym 0.4"``."""
    return "clean" if n is None else f"{n[0][:3]} {n[1]:g}"


def noise_columns(cfg) -> dict:
    """``{column: noise rate}`` of the sub-clusters' ``cfg.subcluster_noise`` (:func:`noise_column`; clean: 0)."""
    return {noise_column(n): 0.0 if n is None else n[1] for n in cfg.subcluster_noise}


def arms(cfg, choices: dict | None = None) -> list[tuple]:
    """Table 2's pairs of rows, ``(row without EPS, row with EPS, loss, settings without, settings with)``: each of
    ``cfg.losses`` at the profile's ``loss_options`` and each arm's knob chosen by :func:`best_shots`, then each of
    ``cfg.loss_variants`` at its own settings."""
    def own(name, arm):
        return {**cfg.loss_options.get(name, {}), **_knob(choices, arm_label(name, arm))}

    out = [(label(n, False), label(n, True), n, own(n, "baseline"), own(n, "EPS")) for n in cfg.losses]
    return out + [(variant_label(n, False, v), variant_label(n, True, v), n, dict(v), dict(v))
                  for n, variants in cfg.loss_variants.items() for v in variants]


def grid(cfg, seeds, choices: dict | None = None) -> list[RunSpec]:
    """Every training of the chapter, each on every seed, in the order the chapter runs them, ``options`` holding
    each run's batch (``p`` classes x ``k``) and label noise: the even/odd task (Table 1, the triplet without and
    with EPS: a 2-D ConvNet on ``cfg.even_odd_dataset``, ``cfg.even_odd_replicates`` times a seed, the column
    the replicate, each arm at its search's rate and length where the profile searches them); the sub-clusters
    (section 3: the triplet and the margin loss without and with EPS, under each of ``cfg.subcluster_noise``);
    Table 2 (each pair of :func:`arms`, then each loss of ``cfg.all_positives`` with every positive pair, at the
    run's ``choices``; a loss's variants at its arm's rate and length, their own knob); the superclasses
    (Table 3's protocol, the losses' pairs on ``cfg.superclasses``' batches); the positives per class (Fig. 3b: the
    margin loss with EPS, then without it, at each of ``cfg.positives_per_class``, as many images a batch, each at
    its arm's choice); the same on the superclasses at each of ``cfg.superclass_positives``
    (:func:`superclass_batches`). The notebook runs each
    table on its own split (:data:`SPLITS`, :func:`run_spec`), the plan counts and times them, the cache keys on
    them."""
    p, k = cfg.p, cfg.k
    rows = [(EVEN_ODD, row, r, eps_loss("triplet", use), search.tuned(even_odd_settings(cfg), choices, row),
             {"p": 2, "k": cfg.even_odd_k, **({"replicate": r} if r else {})})  # replicate 0: the seed's own start
            for row, use in EVEN_ODD_ARMS.items() for r in range(cfg.even_odd_replicates)]
    modes = cfg.replace(**SUBCLUSTER_SETTINGS)
    rows += [(SUBCLUSTERS, label(name, use), noise_column(n), eps_loss(name, use), modes,
              {"p": SUBCLUSTER_BATCH[0], "k": SUBCLUSTER_BATCH[1], "noise": None if n is None else tuple(n)})
             for n in cfg.subcluster_noise for name in ("triplet", "margin") for use in (False, True)]
    pairs = arms(cfg, choices)  # each Table 2 row at its arm's best shot; the superclasses and Fig. 3b at theirs
    rows += [(MAIN, row, "", eps_loss(name, use, **settings), search.tuned(cfg, choices, label(name, use)),
              {"p": p, "k": k})  # a loss's variant (MS at another lambda) at its arm's rate and length
             for without, with_eps, name, *both in pairs
             for row, use, settings in zip((without, with_eps), (False, True), both)]
    every = [(n, arm_label(n, "all positives")) for n in cfg.all_positives if n in cfg.losses]
    rows += [(MAIN, row, "", eps_loss(n, False, "all", **{**cfg.loss_options.get(n, {}), **_knob(choices, row)}),
              search.tuned(cfg, choices, row), {"p": p, "k": k}) for n, row in every]
    if cfg.superclasses:
        sup = cfg.superclasses
        rows += [(SUPERCLASSES, row, "", eps_loss(name, use, **settings), search.tuned(cfg, choices, row),
                  {"p": sup["p"], "k": sup["k"]})
                 for without, with_eps, name, *both in pairs[:len(cfg.losses)]
                 for row, use, settings in zip((without, with_eps), (False, True), both)]
    margins = {label("margin", use): eps_loss("margin", use, **{**cfg.loss_options.get("margin", {}),
                                                                **_knob(choices, label("margin", use))})
               for use in (True, False)}  # with EPS, then without: whose gain grows with k
    rows += [(POSITIVES, row, n, margin,
              search.tuned(cfg, choices, row).replace(batches_per_epoch=cfg.positives_batches),
              {"p": classes_per_batch(cfg, n), "k": n}) for row, margin in margins.items()
             for n in cfg.positives_per_class]
    rows += [(LETTERS_POSITIVES, row, n, margin, search.tuned(cfg, choices, row), {"p": classes, "k": n})
             for row, margin in margins.items() for n, classes in superclass_batches(cfg)
             if n != cfg.superclasses["k"]]  # Table 3's own batch is its rows' run
    return [RunSpec(table, row, method, settings, column, seed=s, split=SPLITS[table], options=options)
            for table, row, column, method, settings, options in rows for s in seeds]


# --- the one best-shot search of each arm of Table 2 (issue #86) ---------------------------------------------------
#: The table of the arms' searches.
BEST_SHOT = "each arm's best shot"


def searched_arms(cfg) -> dict:
    """``{row: (loss, arm)}``: the rows of Table 2 that claims compare, each searched as its own arm: each of
    ``cfg.losses`` with EPS and without (the paper's baseline positives), and with every positive pair for those
    of ``cfg.all_positives``."""
    out = {}
    for n in cfg.losses:
        arms_ = ("baseline", "EPS") + (("all positives",) if n in cfg.all_positives else ())
        out.update({arm_label(n, arm): (n, arm) for arm in arms_})
    return out


def search_rule(cfg, name: str) -> search.Search | None:
    """The one search (:mod:`dml_tutorial.search`) of an arm of loss ``name``: its rate, length and knob (the one
    of ``cfg.knob_candidates[name]``, from the loss's own value along the candidates), on the validation split's
    unseen R@1; ``None`` where the profile searches nothing (no ``search_lrs``)."""
    if not cfg.search_lrs:
        return None
    knob = None
    if candidates := (cfg.knob_candidates or {}).get(name):
        if len(candidates) != 1:
            raise ValueError(f"one knob a loss, got {sorted(candidates)} for {name!r}")
        ((knob_name, values),) = candidates.items()
        own = {**LOSSES[name].keywords, **cfg.loss_options.get(name, {})}.get(knob_name)
        start = own if own is not None and np.isclose(own, values).any() else values[0]
        knob = search.Axis(knob_name, tuple(values), (start,))
    return search.Search("R@1", search.Axis("lr", cfg.search_lrs, cfg.search_lr_start), cfg.search_lengths, knob,
                         cfg.search_every, patience=cfg.search_patience)


#: Table 1's arms: the triplet loss without and with EPS.
EVEN_ODD_ARMS = {"Triplet": False, "EPS + Triplet": True}


def even_odd_rule(cfg) -> search.Search | None:
    """The one search of Table 1's arms: every rate of ``cfg.search_lrs`` (all of them first, so the plan counts
    every trial) and the best checkpoint up to ``cfg.even_odd_search_epochs``, on the character R@1 of held-out
    faces (:func:`even_odd_validation`); ``None`` where the profile searches neither."""
    if not (cfg.search_lrs and cfg.even_odd_search_epochs):
        return None
    rates = tuple(cfg.search_lrs)
    return search.Search("R@1", search.Axis("lr", rates, rates), (cfg.even_odd_search_epochs,), None, 1,
                         EVEN_ODD_VALIDATION)


def even_odd_validation(parity, faces: int = 2):
    """Table 1's search split, inside its training split: the last ``faces`` font faces of the seen characters
    held out (:func:`dml_tutorial.dcdl.validation_split`), trained on their parity as Table 1 is, and scored on
    those faces' *characters*, the sub-classes the claim is about, on images no training saw."""
    from .dcdl import validation_split

    held = validation_split(parity, faces)
    return replace(held, test=held.test.with_labels(held.test.extras["clean"]))


def _even_odd_spec(cfg, row: str, seed: int) -> RunSpec:
    return RunSpec(BEST_SHOT, row, eps_loss("triplet", EVEN_ODD_ARMS[row]), even_odd_settings(cfg), seed=seed,
                   options={"p": 2, "k": cfg.even_odd_k})


def _searches(cfg, seed: int, tables) -> list[tuple]:
    """``[(row, spec, rule, vary)]``: the searches of ``tables`` (:data:`MAIN`: Table 2's arms; :data:`EVEN_ODD`:
    Table 1's) that the profile makes."""
    out = []
    if MAIN in tables:
        out += [(row, _arm_spec(cfg, row, seed), rule, partial(_vary, name=name, arm=arm))
                for row, (name, arm) in searched_arms(cfg).items() if (rule := search_rule(cfg, name)) is not None]
    if EVEN_ODD in tables and (rule := even_odd_rule(cfg)) is not None:
        out += [(row, _even_odd_spec(cfg, row, seed), rule, None) for row in EVEN_ODD_ARMS]
    return out


def _arm_spec(cfg, row: str, seed: int) -> RunSpec:
    name, arm = searched_arms(cfg)[row]
    return RunSpec(BEST_SHOT, row, eps_loss(name, **ARMS[arm], **cfg.loss_options.get(name, {})), cfg, seed=seed,
                   options={"p": cfg.p, "k": cfg.k})


def _vary(spec: RunSpec, knob: str, value, *, name: str, arm: str) -> RunSpec:
    """A trial's knob: the arm's loss rebuilt at ``value``."""
    options = {**spec.settings.loss_options.get(name, {}), knob: value}
    return dataclasses.replace(spec, method=eps_loss(name, **ARMS[arm], **options))


def best_shots(cfg, seed: int, run, tables=(MAIN, EVEN_ODD)) -> dict:
    """Each arm of Table 2 (:func:`searched_arms`, under :func:`search_rule`, on the held-out classes' split) and of
    Table 1 (:data:`EVEN_ODD_ARMS`, under :func:`even_odd_rule`, on :data:`EVEN_ODD_VALIDATION`) at its best shot
    (:func:`dml_tutorial.search.best_shot`), those of ``tables`` only, on ``seed``, each trial run by ``run``.
    Returns the run's choices, ``{"best shot": {row: Choice as data}}`` (``{}`` where the profile searches
    nothing)."""
    chosen = {row: search.best_shot(spec, rule, run, vary).as_data()
              for row, spec, rule, vary in _searches(cfg, seed, tables)}
    return {"best shot": chosen} if chosen else {}


def best_shot_trials(cfg, seed: int, tables=(MAIN, EVEN_ODD)) -> list[RunSpec]:
    """The trials :func:`best_shots` makes whatever the scores, for the plan (the walks': :func:`unplanned`)."""
    return [trial for _, spec, rule, vary in _searches(cfg, seed, tables)
            for trial in search.starting_trials(spec, rule, vary)]


def unplanned(cfg, choices: dict) -> int:
    """How many trials :func:`best_shots` made beyond :func:`best_shot_trials` (Table 1's: none, every rate is
    among its first)."""
    found = searched_arms(cfg)
    return search.walked(choices, lambda row: even_odd_rule(cfg) if row in EVEN_ODD_ARMS else
                         search_rule(cfg, found[row][0]))


def _knob(choices: dict | None, row: str) -> dict:
    """The loss setting ``row``'s search chose (its knob), ``{}`` where none searched it."""
    return {k: v for k, v in search.chosen(choices, row).items() if k not in ("lr", "epochs")}


def run_spec(splits: dict, device="auto"):
    """``run(spec, progress=False, checkpoint=None) -> Run`` for :func:`dml_tutorial.experiment.run_grid`: one
    :class:`~dml_tutorial.spec.RunSpec` of :func:`grid` trained on ``splits[spec.split]`` on the batches and with
    the label noise its options name (:func:`dml_tutorial.experiment.train_and_retrieve`). A ``functools.partial``,
    so that the cache's key holds the data it binds."""
    return partial(_train_spec, splits=splits, device=device)


def _train_spec(spec, progress: bool = False, checkpoint=None, *, splits: dict, device="auto"):
    """:func:`run_spec`'s runner; a search's trial (``options["curve"]``) records the R@1 of its split's test side
    at every checkpoint (:func:`dml_tutorial.experiment.recall_checkpoint`)."""
    o, data = spec.options, splits[spec.split]
    evaluate = experiment.recall_checkpoint(data.test, o["curve"], spec.settings) if "curve" in o else None
    seed = spec.seed + REPLICATE_SEEDS * o.get("replicate", 0)  # the same split, another start and batches
    return experiment.train_and_retrieve(data, spec.method, spec.settings, p=o["p"], k=o["k"], seed=seed,
                                         device=device, progress=progress, checkpoint=checkpoint,
                                         noise=o.get("noise"), evaluate=evaluate, score=evaluate is None)


# --- the chapter's experiment, trained table by table (each on its own split), and the tables it records ------------
def train_table(start, table: str, split, choices: dict | None = None, references: bool = False,
                **reference_options) -> grids.TrainedGrid:
    """One table of :func:`grid` trained on ``split``, the data of its :data:`SPLITS` name (the tables train on
    different data: the even/odd digits, the sub-clusters, the unseen classes, the superclasses), at the search's
    ``choices``; with ``references``, the reference rows on ``split`` (:func:`dml_tutorial.experiment.references`
    under ``reference_options``, ``cfg`` among them where not the chapter's settings). All through the start's run
    cache."""
    cfg, device, seeds, cache, progress = start
    specs = [s for s in grid(cfg, seeds, choices) if s.table == table]
    runs = experiment.run_grid(specs, run_spec({SPLITS[table]: split}, device), table, cache=cache,
                               progress=progress)
    refs = {}
    if references:
        options = {"cfg": cfg, **reference_options}
        refs = experiment.references(split, options.pop("cfg"), seeds, device=device, cache=cache, **options)
    return grids.TrainedGrid(start, split, dict(choices or {}), specs, runs, refs)


def _searching(tables) -> SimpleNamespace:
    """This chapter as :func:`dml_tutorial.experiment.best_shots` reads it, searching the arms of ``tables`` only."""
    return SimpleNamespace(best_shots=partial(best_shots, tables=tables), unplanned=unplanned, BEST_SHOT=BEST_SHOT)


def train_even_odd(start, parity) -> grids.TrainedGrid:
    """Table 1's runs on the even/odd splits ``parity`` (:func:`even_odd`): where the profile searches, each arm's
    rate and length on held-out faces (:func:`even_odd_validation`, :func:`even_odd_rule`: every trial planned);
    then the triplet loss without and with EPS at those choices, ``cfg.even_odd_replicates`` trainings a seed, and
    the reference rows on the same 2-D ConvNet (:func:`even_odd_settings`), their training embeddings kept (Table
    1 scores the seen digits too)."""
    cfg, device, seeds, cache, _ = start
    trials = run_spec({EVEN_ODD_VALIDATION: even_odd_validation(parity)}, device) if even_odd_rule(cfg) else None
    chosen = experiment.best_shots(_searching((EVEN_ODD,)), cfg, seeds[0], trials, cache=cache) if trials else {}
    return train_table(start, EVEN_ODD, parity, chosen, references=True, cfg=even_odd_settings(cfg),
                       train_embeddings=True)


def train_grid(start, splits, plan=None) -> grids.TrainedGrid:
    """Table 2 on ``splits``: where the profile searches, each arm's rate, length and knob on held-out seen classes
    (:func:`best_shots`, on ``cfg.held_out`` of them), then its rows at those choices and the reference rows."""
    cfg, device, seeds, cache, _ = start
    held_out = search.validation_split(splits, cfg["held_out"]) if cfg["search_lrs"] else None
    trials = run_spec({"validation": held_out}, device)
    chosen = experiment.best_shots(_searching((MAIN,)), cfg, seeds[0], trials, cache=cache, plan=plan)
    return train_table(start, MAIN, splits, chosen, references=True)


def rows(run: grids.TrainedGrid, table: str) -> dict:
    """``{row: [Run per seed]}`` of one table of ``run`` (whose rows have one column), the reference rows after."""
    return run.rows(table, references=True)


def first_replicates(run: grids.TrainedGrid) -> dict:
    """``{row: [Run per seed]}`` of :func:`train_even_odd`'s arms, each seed's first training (its own start): the
    runs the chapter's pictures and separations read."""
    return {row: [first for first, *_ in runs] for row, runs in replicates(run.table(EVEN_ODD)).items()}


def by_digit(run: grids.TrainedGrid) -> Recorded:
    """:data:`~dml_tutorial.tables.EPS_EVEN_ODD`, Table 1: Recall@K by digit (:func:`table1_scores`) of
    :func:`train_even_odd`'s runs, each seed the mean of its replicates, beside the paper's MNIST numbers."""
    scored = replicates(run.table(EVEN_ODD)) | {kind: runs for (kind, _), runs in run.refs.items()}
    times = run.cfg["even_odd_replicates"]  # each seed's arms trained this many times, averaged
    each = f", each the mean of {times} trainings" if times > 1 else ""
    return Recorded(tables.EPS_EVEN_ODD, table1_scores(scored, run.splits, run.start.device), REPORTED_EVEN_ODD,
                    caption=f"Recall@K by digit, in %, mean ± std over {len(run.seeds)} seeds{each}; paper: MNIST "
                    "Table 1, quoted")  # its arms' searches recorded beside it


def unseen_classes(run: grids.TrainedGrid) -> Recorded:
    """:data:`~dml_tutorial.tables.EPS_MAIN`, Table 2: R@K, NMI, NMI+ and MAP@R (:func:`table2_scores`) of
    :func:`train_grid`'s rows, beside the paper's column of the profile."""
    cfg, quoted = run.cfg, run.start.paper
    labels = run.splits.test.labels
    clustered = np.unique(labels)[: cfg.get("cluster_classes")]
    n_plus = nmi_plus_clusters(cfg["dataset"], len(clustered), cfg["nmi_plus_factor"])
    caption = (f"unseen classes, in %, mean ± std over {len(run.seeds)} seeds ({cfg['profile']} profile, "
               f"{cfg['dataset']}, NMI+ with {n_plus} clusters); paper: {quoted} Table 2, quoted")
    return Recorded(tables.EPS_MAIN, table2_scores(rows(run, MAIN), labels, cfg, run.seeds), REPORTED[quoted],
                    caption)


def superclass_splits(cfg, seed: int, root="data"):
    """The superclass protocol's splits (:func:`by_superclass` of ``cfg.superclasses``' dataset: glyphs, Hangul
    syllables by lead consonant), or ``None`` where the profile has none."""
    from .data import load_dataset

    if not (sup := cfg.get("superclasses")):
        return None
    letters = load_dataset(sup["dataset"], split="classes", seed=seed, root=root, **sup["options"])
    return by_superclass(letters, size=sup.get("size"))


def _letters(run: grids.TrainedGrid) -> torch.Tensor:
    return torch.as_tensor(run.splits.test.extras["letters"])


def by_letter(run: grids.TrainedGrid) -> Recorded:
    """:data:`~dml_tutorial.tables.EPS_LETTERS`, Table 3: the superclass runs (:func:`train_table` of
    :data:`SUPERCLASSES`) read by letter, and by superclass (:func:`table3_scores`)."""
    return Recorded(tables.EPS_LETTERS, table3_scores(rows(run, SUPERCLASSES), _letters(run)),
                    REPORTED_SUPERCLASSES, caption="unseen, in %: R@K by letter, R@1 by superclass; paper: "
                    "Omniglot, quoted", choices=False)


def letters_at_k(run: grids.TrainedGrid, at_k: grids.TrainedGrid) -> Recorded:
    """:data:`~dml_tutorial.tables.EPS_LETTERS_POSITIVES`: letter R@1 at each same-superclass k
    (:func:`letters_by_positives`), Table 3's own k from ``run``'s superclass runs, the others from ``at_k``'s."""
    scores = letters_by_positives(run.cfg, rows(run, SUPERCLASSES), at_k.table(LETTERS_POSITIVES), _letters(run))
    return Recorded(tables.EPS_LETTERS_POSITIVES, scores)


def per_class(run: grids.TrainedGrid) -> Recorded:
    """:data:`~dml_tutorial.tables.EPS_POSITIVES`, Fig. 3b: R@1 at each number of same-class samples per batch, the
    margin loss with and without EPS (:func:`positives_scores`)."""
    return Recorded(tables.EPS_POSITIVES, positives_scores(run.table(POSITIVES)))


def separations(runs: dict, train, seed: int, at_most: int = 3000) -> tuple[dict, str]:
    """Table 1's mode separation (:func:`mode_separation`) of each arm's training embeddings (``runs``: ``{arm:
    [Run per seed]}``, their ``train_embeddings`` in ``train``'s order), the parity classes' training characters as
    the modes (``train.extras["clean"]``), on at most ``at_most`` samples drawn with ``seed``. Returns ``{arm: [one
    per seed]}`` and a sentence: each arm's mean and EPS - Triplet, paired by seed, with its 95% interval."""
    from . import evidence

    keep = np.random.default_rng(seed).permutation(len(train))[:at_most]
    labels, modes = np.asarray(train.labels)[keep], np.asarray(train.extras["clean"])[keep]
    out = {arm: [mode_separation(r.train_embeddings[keep], labels, modes) for r in arm_runs]
           for arm, arm_runs in runs.items()}
    d = evidence.paired(out["Triplet"], out["EPS + Triplet"])
    text = (f"separation of the training classes inside their parity class, mean over {len(out['Triplet'])} seeds: "
            f"Triplet {np.mean(out['Triplet']):.2f}, EPS + Triplet {np.mean(out['EPS + Triplet']):.2f}; EPS - Triplet "
            f"{d['mean']:+.2f} (95% CI {d['ci'][0]:+.2f} to {d['ci'][1]:+.2f})")
    return out, text
