"""The chapters' figures from their runs: which runs and which images each picture shows, then one call into
:mod:`dml_tutorial.plots` (which draws, knowing nothing of a chapter) and, for the pictures a run file keeps,
:func:`dml_tutorial.recording.record_figure`. A notebook section draws its figure with one line,

    figures.embeddings({"SME": ablation["SME"], "CBSwR": ablation["CBSwR"]}, splits, SEED)

and the selection it used to write by hand in a folded cell is here, read once (issue #87).
"""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import torch

from . import bench, clustering, data, dcdl, ecaml, eps, experiment, guarantees, plots, profiles, report
from .noise import describe
from .recording import record_figure
from .tables import CBSWR_ABLATION, DCDL_MAIN

#: Each side of a run's embeddings: its split, what its classes are, the title's words.
PARTS = {"test": ("unseen", "Unseen test classes"), "train": ("seen", "Seen training classes")}


def embeddings(runs: dict, splits, seed: int, part: str = "test", name: str | None = None):
    """t-SNE and UMAP of each run's first seed (``runs``: ``{row: [Run per seed]}``) on the unseen test classes
    (``part="test"``) or the seen training classes (``"train"``), one row of panels a run
    (:func:`plots.embedding_rows`), kept for the run file as ``name`` (default ``"<unseen|seen> embeddings"``)."""
    side, title = PARTS[part]
    shown = {f"{row}, {side}": getattr(r[0], f"{part}_embeddings") for row, r in runs.items()}
    split = getattr(splits, part)
    fig = plots.embedding_rows(shown, split.labels, f"{title}, seed {seed}", names=splits.class_names, seed=seed)
    return record_figure(fig, name or f"{side} embeddings")


#: The seed-by-seed pictures of the paper chapters (:func:`report.seed_lines`): table, rows, columns, y label.
SEED_LINES = {
    "dcdl": (DCDL_MAIN.id, ["L_Trip", "L_Trip + L^L", "L_Trip + L^W", "L_Trip + L^W-GeomLoss"],
             ["clean", "sym 0.3"], "probe accuracy (%)"),
    "cbswr": (CBSWR_ABLATION.id, ["pretrained, not fine-tuned", "SME", "CBS", "CBSwR"], ["R@1"], "R@1 (%)"),
}


def seed_lines(chapter: str):
    """The chapter's main test bed II table seed by seed (:data:`SEED_LINES`), from the committed runs."""
    table, rows, columns, ylabel = SEED_LINES[chapter]
    return report.seed_lines(chapter, table, rows, columns, ylabel=ylabel)


# Foundations

def untrained_and_trained(before, after, labels, seed: int, trained: str = "trained on 0-5"):
    """UMAP of the same unseen images before and after training, side by side (:func:`plots.embedding_plots`)."""
    fig, axes = plt.subplots(1, 2, figsize=(10, 4.4), constrained_layout=True)
    for ax, z, state in zip(axes, (before, after), ("untrained", trained), strict=True):
        plots.embedding_plots(z, labels, state, methods=("UMAP",), seed=seed, axes=ax)
    fig.suptitle(f"Unseen test digits 6-9 (UMAP), seed {seed}")
    return fig


def glyph_specimen(seed: int, character: str = "\u6c38", renders: int = 4):
    """One character (default 永, "eternity") in the 11 faces of the glyph test bed, plain and as it is drawn
    (:func:`plots.glyph_specimen`), test bed II's unseen faces marked; or why not (the fonts are Debian packages,
    not on Colab)."""
    from .data import rendered

    try:
        drawn = rendered.specimen(character, renders=renders, seed=seed)
    except FileNotFoundError as missing:
        print(missing)
        return None
    return plots.glyph_specimen(drawn, [face.name for face in rendered.FACES],
                                unseen=profiles.GLYPHS2["dataset_options"]["unseen_faces"],
                                title="One character in the 11 faces, plain and as the test bed draws it")


# DCDL (Roy et al.)

#: The Sinkhorn solvers compared at the paper's epsilon: the options of discrepancy.sinkhorn_divergence.
SOLVERS = {
    "plain Sinkhorn (no ε-scaling, ω = 1)": {"scaling": 1e-9, "omega": 1.0},
    "no ε-scaling, over-relaxed (ω = 1.8)": {"scaling": 1e-9, "omega": 1.8},
    "ε-scaling 0.7 + over-relaxed (our default)": {},
}


def digit_batch(seed: int, root="data", per_class: int = 10):
    """The first ``per_class`` training images of each of the 8x8 digits: ``(images, members)``, the digits'
    training split and the indices of the batch."""
    pixels = data.load_dataset("digits", split="samples", seed=seed, root=root).train
    members = np.concatenate([np.flatnonzero(pixels.labels == c)[:per_class] for c in range(10)])
    return pixels, members


def sinkhorn_solvers(pixels, members, digit: int = 8):
    """How fast each of :data:`SOLVERS` reaches S_eps at epsilon = 2.5e-3 between one digit's images and the rest
    of the batch (pixels as unit vectors, float64): :func:`plots.sinkhorn_convergence`, ``(fig, converged)``."""
    images = torch.nn.functional.normalize(pixels.batch(members).flatten(1).double(), dim=1)
    labels = pixels.labels[members]
    u, v = images[labels == digit], images[labels != digit]
    title = f"Convergence at ε = 2.5e-3: digit {digit} ({len(u)} images) vs the rest ({len(v)})"
    return plots.sinkhorn_convergence(u, v, SOLVERS, title=title)


def noisy_embeddings(table1: dict, splits, seed: int, rate: float = 0.3):
    """L_Trip without and with L^W trained on ``rate`` symmetric noise: their test embeddings (first seed)."""
    noisy = describe(("symmetric", rate))
    rows = [dcdl.label("trip"), dcdl.label("trip", "W")]
    if not all((row, noisy) in table1 for row in rows):
        print(f"this configuration did not run the L_Trip rows under {rate:.0%} symmetric noise")
        return None
    shown = {f"{row}, {noisy}": table1[(row, noisy)][0].test_embeddings for row in rows}
    title = f"Test embeddings after training on labels with {rate:.0%} symmetric noise, seed {seed}"
    fig = plots.embedding_rows(shown, splits.test.labels, title, names=splits.class_names, seed=seed)
    return record_figure(fig, f"test embeddings, sym {rate:g}")


def clean_similarities(table1: dict, table2: dict, local: str, terms, labels, seed: int) -> dict:
    """Cosine similarities of same- and different-class test pairs (:func:`plots.similarity_histograms`) for the
    untrained network and ``local`` without and with each of ``terms`` on clean labels (first seed); returns
    the embeddings shown, ``{name: [N, D]}``."""
    clean = describe(None)
    runs = {"untrained network": table2.get(("untrained network", clean))}
    for term in [None, *terms]:
        runs[dcdl.label(local, term)] = table1.get((dcdl.label(local, term), clean))
    shown = {name: r[0].test_embeddings for name, r in runs.items() if r}
    fig = plots.similarity_histograms(shown, labels, title=f"Test pairs, clean labels, seed {seed}")
    record_figure(fig, "similarity histograms, clean")
    return shown


def weight_text(profile: str = "glyphs2"):
    """The weight lambda on a glyph test bed, paired by seed, from the committed runs (:func:`dcdl.weight_text`),
    with where the validated weights come from (:func:`bench.validated_text`), as Markdown."""
    from IPython.display import Markdown

    validated = bench.validated_text(report.load_runs())
    return Markdown(dcdl.weight_text(profile, report.recorded("dcdl", profile), report.runs_of("dcdl", profile),
                                     validated))


def edge_checks():
    """The two edge checks of DCDL's search (``benchmarks/bench_dcdl_edges.py``) as the benchmark summarised its
    committed results (:func:`dcdl.edge_checks_text`), as Markdown."""
    from IPython.display import Markdown

    return Markdown(dcdl.edge_checks_text(report.ROOT / "benchmarks" / "results"))


# CBSwR (Nguyen et al.)

def reconstructions(run, splits, batch_size: int, device="cpu"):
    """CBSwR's eq. 5 on one batch of training images and their views: the decoder's output from each large
    cluster's centroid beside its members (:func:`plots.cluster_reconstructions`); says why where it cannot."""
    objective = run.state
    if objective is None:
        print("the reconstruction picture needs a run trained in this session (runs loaded from the cache keep no "
              "model)")
        return None
    if objective.decoder is None:  # the search chose gamma = 0: CBSwR trained as CBS
        print("CBSwR's search switched the reconstruction off (gamma = 0): no decoder")
        return None
    x = data.stack(splits.train, np.arange(2 * batch_size)).to(device)
    assign, recon = clustering.reconstruct(objective, x)
    fig = plots.cluster_reconstructions(x, assign, recon)
    fig.suptitle("decoder output from each centroid (thick) and the cluster's members (grey)")
    return fig


# EPS (Levi et al.)

def retrieval(table2: dict, splits, losses, seed: int, queries: int = 4):
    """Test bed II's defining picture: ``queries`` unseen characters and their five nearest neighbours under the
    untrained network and ``losses[0]`` without and with EPS (first seed), kept for the run file and closed (the
    page shows the committed run's, :func:`report.figure`). Glyphs only."""
    rows = ("untrained network", eps.label(losses[0], False), eps.label(losses[0], True))
    labels = np.asarray(splits.test.labels)
    chosen = np.random.default_rng(seed).choice(len(labels), queries, replace=False)
    fig = plots.retrieval(splits.test.x.numpy(), labels, {r: table2[r][0].test_embeddings for r in rows}, chosen,
                          title=f"Unseen characters and their five nearest neighbours, seed {seed}")
    record_figure(fig, "retrieval of unseen characters")
    plt.close(fig)


def collapse_table(start, collapse: dict):
    """Class collapse on the sub-cluster data (:func:`eps.collapse_table`), recorded (separation as a ratio, the
    rest in %) and shown with the separation first."""
    shown = {r: {k: c[k] for k in c if k != "separation"} for r, c in collapse.items()}
    caption = f"held-out samples, mean ± std over {len(start.seeds)} seeds (separation as a ratio, the rest in %)"
    table = report.record_for(start, "Class collapse on sub-cluster data", shown, caption=caption).data
    table.insert(0, "separation", [plots.mean_std(c["separation"], 2, 1.0) for c in collapse.values()])
    return plots.styled(table)


def collapse_curves(collapse: dict, cfg, seeds: int):
    """Mode separation against the noise rate (:func:`plots.collapse_curves`) for :data:`eps.COLLAPSE_ROWS`;
    returns the columns, ``{column: rate}``."""
    columns = eps.noise_columns(cfg)  # {"clean": 0.0, "sym 0.2": 0.2, ...}
    title = f"Class collapse against the noise rate, mean ± std over {seeds} seeds"
    plots.collapse_curves(collapse, columns, eps.COLLAPSE_ROWS, title)
    return columns


# ECAML (Chen & Deng)

def seen_unseen(table4: dict, locals_):
    """Fig. 2: each metric loss without and with EC, its seen (dashed) and unseen (solid) R@1 during training."""
    panels = {ecaml.NAMES[local]: {ecaml.label(local, lam): table4[(ecaml.label(local, lam), "")]
                                   for lam in (0.0, None)} for local in locals_}
    fig = plots.seen_unseen(panels, title="Recall@1 on the seen (dashed) and unseen (solid) classes during training")
    return record_figure(fig, "seen and unseen curves")


def ec_pulls(table4: dict, locals_, seeds: int) -> dict:
    """EC's value and share of the pull on one fixed batch after each epoch (:func:`ecaml.pulls`), printed and
    drawn (:func:`plots.ec_pulls`); returns the curves."""
    curves = ecaml.pulls(table4, locals_)
    print("\n".join(ecaml.pull_lines(curves)))
    plots.ec_pulls(curves, f"One fixed batch of seen classes after each epoch, mean over {seeds} seeds")
    return curves


# The noise guarantees (Le & Odobez)

def risk_identity(seed: int, root="data", images: int = 360, classes: int = 6):
    """Section 2's identity on ``images`` training digits of ``classes`` classes (:func:`guarantees.risk_identity`):
    its lines printed and its four panels drawn (:func:`plots.risk_identity`)."""
    digits = data.load_dataset("digits", split="classes", seen=range(classes), seed=seed, root=root).train
    keep = np.sort(np.random.default_rng(seed).choice(len(digits), images, replace=False))
    risks = guarantees.risk_identity(digits.batch(keep), digits.labels[keep], classes, seed=seed)
    print("\n".join(guarantees.identity_lines(risks, classes)))
    return plots.risk_identity(risks, classes)


def noise_curves(results: dict, cfg, seeds: int):
    """Fig. 1 in small (:func:`plots.noise_curves`): each arm's unseen R@1 against the noise rate of its seen
    labels, kept for the run file."""
    title = ("Noisy labels on the seen classes, retrieval on the unseen "
             f"ones\n({cfg['dataset']}; mean ± std, {seeds} seeds)")
    fig = plots.noise_curves(results, list(guarantees.arms()), cfg["rates"], title=title)
    return record_figure(fig, "robustness curves")


def clean_and_noisy(results: dict, splits, rates, seed: int, at_most: int = 2000):
    """The first arm's training images (at most ``at_most``), trained on clean and on the noisiest labels,
    coloured by their true class."""
    name = next(iter(guarantees.arms()))
    keep = np.random.default_rng(seed).permutation(len(splits.train))[:at_most]
    rows = {f"{name}, p = {p:g}": results[(name, p)][0].train_embeddings[keep] for p in (0, max(rates))}
    title = f"Seen classes, training images coloured by their true class, seed {seed}"
    fig = plots.embedding_rows(rows, np.asarray(splits.train.labels)[keep], title, seed=seed)
    return record_figure(fig, "seen classes, clean and noisy training")


# The benchmark

def robustness(trained, dataset: str):
    """Each method's R@1 against the symmetric noise rate (:func:`bench.noise_curves`), kept for the run file."""
    fig = plots.robustness(bench.noise_curves(trained), title=f"{dataset}: robustness to symmetric label noise")
    return record_figure(fig, "robustness to label noise")


def fashion_reading(cfg) -> dict:
    """The committed Fashion-MNIST sweep read (:func:`bench.reading`): its sentences and tables shown; or how to
    run it. Returns its recorded tables (``{}`` when none)."""
    from IPython.display import display

    recorded = report.recorded("bench", "fashion")
    if not recorded:
        print("not run yet: dml-tutorial sweep data/sweeps/bench-fashion.yaml")
    for item in bench.reading(recorded, experiment.reference_kinds(cfg)) if recorded else []:
        print(item) if isinstance(item, str) else display(item)
    return recorded


def bench_words(cfg, measured, noisy_rows, recorded: dict):
    """The benchmark's conclusions in sentences written from its numbers (:func:`bench.said`,
    :func:`bench.recorded_line`): this session's run, the Fashion-MNIST sweep and each glyph test bed's."""
    from IPython.display import Markdown

    lines = [bench.said(f"{cfg['profile']} profile, {cfg['dataset']}", measured, noisy_rows)]
    if recorded:
        lines.append(bench.said("Fashion-MNIST, five seeds", recorded[bench.TABLE], recorded[bench.ROBUSTNESS]))
    for profile, bed in (("glyphs2", "test bed II"), ("glyphs", "test bed I")):
        if runs := report.recorded("bench", profile):
            lines.append(bench.recorded_line(bed, runs, report.runs_of("bench", profile)))
    return Markdown("\n".join(lines))
