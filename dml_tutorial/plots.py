"""Figures shared by the chapters: embeddings with t-SNE and UMAP side by side, training curves, result tables.

One palette for the whole book (``PALETTE``, colour-blind safe) so that class 3 has the same colour everywhere.
"""

from __future__ import annotations

import collections
import sys
import textwrap
import warnings

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import seaborn as sns
import torch

from . import discrepancy, metrics, objective, sampling
from ._checks import check_embeddings
from .labels import label_html, label_mpl, label_tex, mean_std  # noqa: F401 (plots.label_tex, as before)
from .noise import noise_multiplier, pair_noise_rates
from .tables import results_table, styled  # noqa: F401 (plots.results_table, as before)

PALETTE = sns.color_palette("colorblind", 10) + sns.color_palette("dark", 10)
MARKERS = ("o", "^", "s", "D", "v", "P", "X", "*")


def project_2d(embeddings, method: str = "t-SNE", seed: int = 0) -> np.ndarray:
    """2-D projection with scikit-learn's t-SNE (perplexity 30, PCA init) or umap-learn's UMAP (15 neighbours)."""
    z = check_embeddings(embeddings).detach().cpu().double().numpy()
    if z.shape[1] == 2:
        return z
    if method == "t-SNE":
        from sklearn.manifold import TSNE

        return TSNE(2, perplexity=min(30, len(z) - 1), init="pca", random_state=seed).fit_transform(z)
    if method == "UMAP":
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # umap warns that random_state disables parallelism
            return umap_module().UMAP(n_neighbors=15, random_state=seed).fit_transform(z)
    raise ValueError(f"unknown projection {method!r}; use 't-SNE' or 'UMAP'")


def umap_module():
    """umap-learn, with numba's on-disk cache switched on for its compiled functions and pynndescent's. umap-learn
    compiles most of them without ``cache=True``, so every new Python process (each chapter's kernel, each test
    worker) compiled them again before its first projection; cached, a later process loads the machine code
    (``benchmarks/bench_umap_cache.py`` times both and checks the projection unchanged). A Python function that
    umap compiles twice (``layouts``: with and without ``parallel``) is left uncached, since numba's cache keys an
    entry by function and signature, not by those options. The cache lives where numba puts it (``__pycache__``
    beside umap's files, or ``NUMBA_CACHE_DIR``); with nowhere to write, everything compiles as before."""
    import numba.core.caching
    import numba.core.dispatcher
    import umap

    found = {id(f): f for name, module in list(sys.modules.items())  # by id: a module may re-export a function
             if module is not None and name.split(".")[0] in ("umap", "pynndescent")
             for f in list(vars(module).values()) if isinstance(f, numba.core.dispatcher.Dispatcher)}.values()
    jitted = collections.Counter(id(f.py_func) for f in found)
    for f in found:
        if jitted[id(f.py_func)] == 1 and isinstance(f._cache, numba.core.caching.NullCache):
            try:
                f.enable_caching()
            except RuntimeError:  # numba: "no locator available" (nowhere writable)
                pass
    return umap


def scatter(ax, xy, labels, groups=None, names=None, title="", s=8):
    """Points coloured by ``labels`` (palette order) with a marker per entry of ``groups`` (e.g. even/odd)."""
    labels = np.asarray(labels)
    groups = np.zeros(len(labels), int) if groups is None else np.asarray(groups)
    for i, c in enumerate(np.unique(labels)):
        labelled = False  # one legend entry per class, on its first group that has points
        for g_i, g in enumerate(np.unique(groups)):
            m = (labels == c) & (groups == g)
            if m.any():
                name = names[c] if names is not None else str(c)
                ax.scatter(xy[m, 0], xy[m, 1], s=s, color=PALETTE[i % len(PALETTE)], marker=MARKERS[g_i % 8],
                           label=None if labelled else name, alpha=0.8, linewidths=0)
                labelled = True
    ax.set(title=title, xlabel="component 1", ylabel="component 2", xticks=[], yticks=[])


#: Fonts that draw the glyph test bed's CJK characters, the first found (:func:`cjk_font`): the Debian packages the
#: test bed renders its characters from.
CJK_FONTS = ("Noto Sans CJK JP", "Noto Sans CJK SC", "AR PL UMing TW", "WenQuanYi Zen Hei")


def cjk_font() -> str | None:
    """The first of :data:`CJK_FONTS` matplotlib finds on this machine, ``None`` where there is none (Colab)."""
    from matplotlib import font_manager

    for family in CJK_FONTS:
        try:
            font_manager.findfont(font_manager.FontProperties(family=family), fallback_to_default=False)
            return family
        except ValueError:
            continue
    return None


def _latin(name) -> bool:
    """Whether matplotlib's default font (DejaVu Sans) draws ``name``: Latin, Greek and Cyrillic, no CJK."""
    return all(ord(ch) < 0x2E80 for ch in str(name))


def _drawable(name) -> bool:
    """Whether the legend can draw ``name``: matplotlib's default font (DejaVu Sans) draws Latin, Greek and
    Cyrillic; the glyph test bed's CJK characters where a CJK font is installed (:func:`cjk_font`), else they fall
    back to the class numbers."""
    return _latin(name) or cjk_font() is not None


def embedding_plots(embeddings, labels, title: str = "", groups=None, names=None, methods=("t-SNE", "UMAP"),
                    seed: int = 0, axes=None, max_points: int = 2000, max_classes: int = 20):
    """t-SNE and UMAP of the same embedding, side by side, coloured by class and named by ``names`` (a dataset's
    ``class_names``, indexed by label; numbers where there are none or the font cannot draw them). Returns the
    figure.

    At most ``max_classes`` classes are shown (the first ones in label order, said in the title: a picture of the
    glyph test bed's 1,000 characters would be two dots a class and a legend of a thousand), and at most
    ``max_points`` points (a fixed random subset), which keeps t-SNE fast on full-size test sets. Drawn into
    ``axes`` of a figure that already has a legend (another row of the same classes), it adds none: one legend a
    figure, in two columns beyond ten classes, so that it does not squash the panels."""
    embeddings, labels = check_embeddings(embeddings, labels)
    labels = labels.cpu().numpy()
    classes = np.unique(labels)
    drawable = names is not None and len(names) > labels.max() and all(_drawable(n) for n in names)
    names = list(names) if drawable else None  # class names, where the dataset has them and the font draws them
    if len(classes) > max_classes:
        keep = np.isin(labels, classes[:max_classes])
        embeddings, labels = embeddings[np.flatnonzero(keep)], labels[keep]
        groups = None if groups is None else np.asarray(groups)[keep]
        title = f"{title} ({max_classes} of {len(classes):,} classes)".strip()
    if len(labels) > max_points:
        keep = np.sort(np.random.default_rng(seed).choice(len(labels), max_points, replace=False))
        embeddings, labels = embeddings[keep], labels[keep]
        groups = None if groups is None else np.asarray(groups)[keep]
    if axes is None:
        _fig, axes = plt.subplots(1, len(methods), figsize=(5 * len(methods), 4.4), constrained_layout=True)
    axes = np.atleast_1d(axes)
    for ax, method in zip(axes, methods):
        scatter(ax, project_2d(embeddings, method, seed), labels, groups, names, f"{title} — {method}".strip(" —"))
    fig = axes[0].figure
    if not any(ax.get_legend() for ax in fig.axes):  # rows of one figure share the classes' colours: one legend
        cjk = names and not all(_latin(n) for n in names)  # the characters themselves: a per-glyph fallback
        family = ["DejaVu Sans"] + ([cjk_font()] if cjk else [])
        axes[-1].legend(title="class", loc="upper left", bbox_to_anchor=(1.0, 1.0), markerscale=2, frameon=False,
                        ncols=1 + (len(np.unique(labels)) > 10), columnspacing=0.8, handletextpad=0.2,
                        prop={"family": family, "size": 8})
    return fig


def embedding_rows(rows: dict, labels, title: str, names=None, seed: int = 0):
    """One row of :func:`embedding_plots` (t-SNE, UMAP) for each ``{row title: embeddings}``, all of the same
    ``labels`` (one legend for the figure), under ``title``; returns the figure."""
    fig, axes = plt.subplots(len(rows), 2, figsize=(10, 4.3 * len(rows)), constrained_layout=True, squeeze=False)
    for row_axes, (name, embeddings) in zip(axes, rows.items()):
        embedding_plots(embeddings, labels, name, names=names, seed=seed, axes=row_axes)
    fig.suptitle(title)
    return fig


#: The frames of :func:`retrieval`: a neighbour of the query's class, one of another class (the palette's green
#: and vermillion, told apart by a mark as well as a colour), and the query.
RIGHT, WRONG, QUERY = PALETTE[2], PALETTE[3], "black"


def _image(x) -> np.ndarray:
    """One image for ``imshow``: ``[C, H, W]`` or ``[H, W]`` (a single channel drawn in grey), or a flat 8x8 or
    square vector."""
    x = np.asarray(x, dtype=float)
    if x.ndim == 1:
        x = x.reshape(round(np.sqrt(x.size)), -1)
    if x.ndim == 3:
        x = x[0] if x.shape[0] == 1 else np.moveaxis(x, 0, -1)
    return (x - x.min()) / (np.ptp(x) or 1.0)


def retrieval(images, labels, embeddings: dict, queries, k: int = 5, title: str = ""):
    """Deep metric learning's defining picture: each query (left, framed black) and its ``k`` nearest other images
    under each embedding of ``embeddings`` (``{name: [N, D]}``, e.g. untrained and trained, on the same images;
    :func:`dml_tutorial.metrics.nearest_neighbours`, the query excluded), framed green with a tick where the
    neighbour shares the query's class and vermillion with a cross where it does not. One row per (query,
    embedding); Recall@k of a row is whether any frame of it is green. Returns the figure."""
    from .metrics import nearest_neighbours

    labels = np.asarray(labels)
    found = {name: nearest_neighbours(torch.as_tensor(z, dtype=torch.float32), k).numpy()
             for name, z in embeddings.items()}
    rows = [(q, name) for q in queries for name in embeddings]
    fig, axes = plt.subplots(len(rows), k + 1, figsize=(1.05 * (k + 1) + 1.8, 1.1 * len(rows)), squeeze=False,
                             constrained_layout=True)
    for (q, name), row in zip(rows, axes):
        for j, (ax, i) in enumerate(zip(row, [q, *found[name][q]])):
            ax.imshow(_image(images[i]), aspect="equal", cmap="gray_r" if np.ndim(images[i]) < 3 or np.shape(images[i])[0] == 1
                      else None)
            ax.set_xticks([])
            ax.set_yticks([])
            right = labels[i] == labels[q]
            color = QUERY if j == 0 else (RIGHT if right else WRONG)
            for spine in ax.spines.values():
                spine.set_edgecolor(color)
                spine.set_linewidth(3)
            if j:
                ax.text(0.97, 0.03, "✓" if right else "✗", transform=ax.transAxes, ha="right", va="bottom",
                        color="white", fontsize=9, fontweight="bold",
                        bbox={"boxstyle": "square,pad=0.1", "facecolor": color, "edgecolor": "none"})
        row[0].set_ylabel(name, rotation=0, ha="right", va="center", fontsize=9)
    axes[0, 0].set_title("query", fontsize=9)
    for j in range(1, k + 1):
        axes[0, j].set_title(f"neighbour {j}" if j == 1 else f"{j}", fontsize=9)
    if title:
        fig.suptitle(title)
    return fig


def glyph_specimen(specimen: np.ndarray, faces: list[str], unseen: int = 3, title: str = ""):
    """The glyph test bed in one picture: a row per font face (:func:`dml_tutorial.data.rendered.specimen`: the
    character plain, then its jittered draws), the last ``unseen`` faces' names in vermillion (test bed II tests on
    faces it never trained on). Returns the figure."""
    n_faces, n_draws = specimen.shape[:2]
    fig, axes = plt.subplots(n_faces, n_draws, figsize=(0.62 * n_draws + 2.2, 0.62 * n_faces), squeeze=False,
                             constrained_layout=True)
    for f, row in enumerate(axes):
        for j, ax in enumerate(row):
            ax.imshow(specimen[f, j], cmap="gray", vmin=0, vmax=255)
            ax.set_xticks([])
            ax.set_yticks([])
        held_out = f >= n_faces - unseen
        row[0].set_ylabel(faces[f] + (" (unseen)" if held_out else ""), rotation=0, ha="right", va="center",
                          fontsize=8, color=WRONG if held_out else "black")
    axes[0, 0].set_title("plain", fontsize=8)
    for j in range(1, n_draws):
        axes[0, j].set_title(f"jittered {j}", fontsize=8)
    if title:
        fig.suptitle(title)
    return fig


def training_curves(histories: dict, keys=("loss",), title: str = ""):
    """One panel per key of the histories (``{name: History}``), epochs on the x axis; at most 10 inches wide
    (the text column), so that three panels still read at the page's size."""
    fig, axes = plt.subplots(1, len(keys), figsize=(min(10, 4 * len(keys)), 3.4), constrained_layout=True,
                             squeeze=False)
    for ax, key in zip(axes[0], keys):
        for i, (name, h) in enumerate(histories.items()):
            pts = [(r["epoch"], r[key]) for r in h.records if r.get(key) is not None]
            if pts:
                ax.plot(*zip(*pts), marker=".", color=PALETTE[i % len(PALETTE)], label=name)
        ax.set(xlabel="epoch", ylabel=key, title=f"{title} {key}".strip())
        ax.legend(frameon=False)
    return fig


def rim_curves(histories: dict, k: int, batch: int, title: str = ""):
    """CBSwR's clustering as it trains (``{name: History}``): the RIM loss's two entropies H(Y) and H(Y|X) beside
    log K, the largest entropy, and the clusters a batch uses, per epoch (:func:`training_curves`). Returns the
    figure and a line saying how many clusters a batch of ``batch`` images can use."""
    fig = training_curves(histories, keys=("H(Y)", "H(Y|X)", "clusters"), title=title)
    for ax in fig.axes[:2]:
        ax.axhline(np.log(k), color="0.5", ls=":", lw=1)  # the largest entropy, log K
    fig.axes[2].set_ylabel("clusters used by a batch")
    return fig, (f"log K = {np.log(k):.2f} (K = {k}); a batch of {batch} images can use at most {min(k, batch)} "
                 "clusters")


def sampling_panel(ax, xy, labels, anchor: int, positive: int, frequency, title: str = "", margin: float | None = None):
    """One strategy's picks for one anchor on 2-D points ``xy``: all points in their class colour, the anchor as a
    star, its positive as a diamond, each picked negative ringed in black with an area proportional to how often it
    is picked (``frequency`` from :func:`dml_tutorial.sampling.negative_frequencies`). With ``margin``, circles of
    radius d(a, p) and d(a, p) + margin around the anchor show the semi-hard band."""
    xy, labels, freq = np.asarray(xy), np.asarray(labels), np.asarray(frequency)
    ax.scatter(*xy.T, c=[PALETTE[k % len(PALETTE)] for k in labels], s=14, alpha=0.35, linewidths=0)
    picked = freq > 0
    ax.scatter(*xy[picked].T, s=20 + 180 * freq[picked] / freq.max(), facecolors="none", edgecolors="black",
               linewidths=1.0)
    ax.scatter(*xy[anchor], marker="*", s=220, c=[PALETTE[labels[anchor] % len(PALETTE)]], edgecolors="black")
    ax.scatter(*xy[positive], marker="D", s=60, c=[PALETTE[labels[positive] % len(PALETTE)]], edgecolors="black")
    if margin is not None:
        r = float(np.linalg.norm(xy[positive] - xy[anchor]))
        for radius, style in ((r, "-"), (r + margin, "--")):
            ax.add_patch(plt.Circle(xy[anchor], radius, fill=False, ls=style, lw=0.8, color="grey"))
    lim = 1.1 * np.abs(xy).max()
    ax.set(xlim=(-lim, lim), ylim=(-lim, lim), aspect="equal")
    ax.set_xticks([])
    ax.set_yticks([])
    ax.set_title(title, fontsize=10)


def transport_panel(ax, x, y, plan, title: str = "", colors=(0, 1), threshold: float = 1e-3):
    """A transport plan between 2-D clouds ``x`` [n, 2] and ``y`` [m, 2]: a segment from x_i to y_j for every
    entry of ``plan`` [n, m] above ``threshold`` x its largest entry, darker for more mass (``plan`` from POT's
    ``ot.emd`` or ``ot.sinkhorn``, for instance)."""
    x, y, plan = np.asarray(x), np.asarray(y), np.asarray(plan)
    if plan.shape != (len(x), len(y)):
        raise ValueError(f"plan must have shape {(len(x), len(y))}, got {plan.shape}")
    top = plan.max() if plan.size and plan.max() > 0 else 1.0
    for i, j in zip(*np.nonzero(plan > threshold * top)):
        ax.plot(*np.stack([x[i], y[j]]).T, color="black", lw=1.2, alpha=float(min(1.0, plan[i, j] / top)), zorder=1)
    ax.scatter(*x.T, s=40, color=PALETTE[colors[0]], edgecolors="black", linewidths=0.5, zorder=2, label="x")
    ax.scatter(*y.T, s=40, color=PALETTE[colors[1]], edgecolors="black", linewidths=0.5, zorder=2, label="y")
    ax.set(aspect="equal", xticks=[], yticks=[])
    ax.set_title(title, fontsize=10)


def cluster_reconstructions(x, assignments, reconstructions: dict, clusters: int = 4, members: int = 6):
    """CBSwR's eq. 5 made visible: for the ``clusters`` largest clusters of a batch, the decoder's output from the
    cluster's centroid (first column, or the thick line for 1-D signals) beside ``members`` of its samples."""
    x, assignments = x.detach().cpu().numpy(), assignments.detach().cpu().numpy()
    sizes = np.bincount(assignments)
    top = [c for c in np.argsort(-sizes)[:clusters] if sizes[c] > 0]
    signal = x.ndim == 3
    fig, axes = plt.subplots(len(top), 1 if signal else members + 1, squeeze=False, constrained_layout=True,
                             figsize=(6, 1.6 * len(top)) if signal else (1.3 * (members + 1), 1.4 * len(top)))
    for row, c in zip(axes, top):
        idx = np.flatnonzero(assignments == c)[:members]
        rec = reconstructions[int(c)].detach().cpu().numpy()
        if signal:
            for i in idx:
                row[0].plot(x[i, 0], color="0.7", lw=0.8)
            row[0].plot(rec[0], color=PALETTE[0], lw=2.2)
            row[0].set(yticks=[], xticks=[], ylabel=f"cluster {c}\n({sizes[c]})")
            continue
        for ax, img, title in zip(row, [rec, *x[idx]], ["D(r)", *[""] * members]):
            if img.shape[0] == 1:
                ax.imshow(img[0], cmap="gray_r")
            else:  # colour images arrive normalised (ImageNet mean/std): each is shown rescaled to [0, 1]
                ax.imshow((img - img.min()).transpose(1, 2, 0) / max(float(np.ptp(img)), 1e-12))
            ax.set(xticks=[], yticks=[], title=title)
        row[0].set_ylabel(f"cluster {c} ({sizes[c]})")
        for ax in row[len(idx) + 1:]:
            ax.axis("off")
    return fig


VERDICT_COLOURS = {"supported": PALETTE[2], "contradicted": PALETTE[3], "no effect detected": PALETTE[0],
                   "inconclusive": PALETTE[7], "not testable here": PALETTE[17], "no verdict": PALETTE[14]}


def gains(frame: pd.DataFrame, title: str = ""):
    """Our paired gains with their 95% intervals (one row per claim, coloured by verdict) beside the paper's own
    gain (a black diamond; absent where the paper gives only a direction), as :func:`dml_tutorial.claims.assess`
    returns them. Returns the figure."""
    if frame.empty:
        raise ValueError("no claims to plot: the runs recorded none of the chapter's compared tables")
    n = len(frame)
    fig, ax = plt.subplots(figsize=(9, 1.1 + 0.55 * n), constrained_layout=True)
    y = np.arange(n)[::-1]
    for yi, r in zip(y, frame.to_dict("records")):
        colour = VERDICT_COLOURS[r["verdict"]]
        ax.errorbar(r["ours"], yi, xerr=[[r["ours"] - r["low"]], [r["high"] - r["ours"]]], fmt="o", color=colour,
                    capsize=3)
        if r["paper"] is not None and not pd.isna(r["paper"]):
            ax.plot(r["paper"], yi, "D", color="black", ms=5)
    ax.axvline(0, color="grey", lw=0.8)
    ax.set_yticks(y, [textwrap.fill(c, 40) for c in frame["claim"]])  # long claims wrap, not squeeze the axes
    handles = [plt.Line2D([], [], color=c, marker="o", ls="", label=f"ours: {w}") for w, c in VERDICT_COLOURS.items()
               if w in set(frame["verdict"])]
    handles.append(plt.Line2D([], [], color="black", marker="D", ls="", label="the paper's gain"))
    ax.legend(handles=handles, fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1), frameon=False)
    levels = sorted(set(frame["confidence"])) if "confidence" in frame else [0.95]
    level = f"{100 * levels[0]:.1f}%" if len(levels) == 1 else "level per test bed"
    ax.set(xlabel=f"gain in points (paired by seed, {level} CI, adjusted)", title=title)
    return fig


def paired_seeds(panels: dict, title: str = "", ylabel: str = "R@1 (%)"):
    """A recorded comparison seed by seed: one panel per entry of ``panels`` (``{panel title: {row: one value a
    seed, fractions}}``, every row the same seeds in the same order), a grey line per seed across the rows, so
    that a paired difference is the slope of each line and a gain that holds on every split is every line rising,
    and the mean over seeds in black. Returns the figure."""
    if not panels or not all(panels.values()):
        raise ValueError("no rows to draw: each panel needs at least one row of per-seed values")
    fig, axes = plt.subplots(1, len(panels), squeeze=False, constrained_layout=True,
                             figsize=(min(10, 1.2 + 2.2 * sum(len(rows) for rows in panels.values())), 3.8))
    for ax, (name, rows) in zip(axes[0], panels.items()):
        values = 100 * np.array([rows[row] for row in rows], dtype=float)  # [rows, seeds]
        x = np.arange(len(values))
        ax.plot(x, values, color="grey", alpha=0.55, lw=1, marker="o", ms=3)
        ax.plot(x, values.mean(1), color="black", lw=2.2, marker="D", ms=6)
        ax.set_xticks(x, [_tick(row) for row in rows], fontsize=8)
        ax.set_xlim(-0.4, len(values) - 0.6)
        ax.set_title(name, fontsize=10)
        ax.set_ylabel(ylabel)  # each panel its own scale: a clean and a noisy column differ by tens of points
    axes[0, -1].legend(handles=[plt.Line2D([], [], color="grey", marker="o", ms=3, label="one seed"),
                                plt.Line2D([], [], color="black", marker="D", lw=2.2, label="mean over seeds")],
                       fontsize=8, loc="best", frameon=False)
    fig.suptitle(title, fontsize=11)
    return fig


def _tick(row: str) -> str:
    """A row name as a tick label: a line per term of a sum (``"L_Trip + L^W"``), each term in mathtext, the
    rest wrapped at 14 characters (wrapping mathtext would break its ``$...$``)."""
    terms = row.split(" + ")
    return "\n+ ".join(label_mpl(t) if label_mpl(t) != t else textwrap.fill(t, 14) for t in terms)


def gradient_flows(flows: dict, target, times, point_size: float = 10):
    """One row per divergence, one column per time: the moving cloud (``flows[name]``: the positions
    :func:`dml_tutorial.discrepancy.gradient_flow` returns) over the fixed ``target`` (grey), at the steps in
    ``times``. Returns the figure (at most 10 inches wide)."""
    times = list(times)
    fig, axes = plt.subplots(len(flows), len(times), figsize=(10, 2.5 * len(flows) + 0.4), squeeze=False,
                             sharex=True, sharey=True, constrained_layout=True)
    target = np.asarray(target)
    for row, (name, positions) in zip(axes, flows.items()):
        if max(times) >= len(positions):
            raise ValueError(f"{name!r} has {len(positions) - 1} steps, fewer than the time {max(times)} asked for")
        for ax, t in zip(row, times):
            ax.scatter(*target.T, s=point_size, color="0.7", label="target y")
            ax.scatter(*np.asarray(positions[t]).T, s=point_size, color=PALETTE[0], label="moving x")
            ax.set(title=f"{name}, step {t}", xticks=[], yticks=[], aspect="equal")
            ax.title.set_fontsize(9)
    axes[0, 0].legend(fontsize=8, loc="lower left")
    return fig


def diagram(nodes: dict, edges, size=(10, 4.2), title: str = ""):
    """A pipeline as boxes and arrows: ``nodes`` maps a box's text to its centre (x, y) in [0, 1]^2, ``edges`` is
    a list of ``(from, to, label)`` (label may be ""), drawn as arrows between box edges. Returns the figure.
    Unknown box names in ``edges`` raise a ValueError naming them."""
    missing = sorted({n for a, b, _ in edges for n in (a, b)} - set(nodes))
    if missing:
        raise ValueError(f"edges name boxes that are not in nodes: {missing}")
    fig, ax = plt.subplots(figsize=size, constrained_layout=True)
    ax.set(xlim=(0, 1), ylim=(0, 1), xticks=[], yticks=[])
    ax.axis("off")
    boxes = {name: ax.text(x, y, name, ha="center", va="center", fontsize=9, zorder=2,
                           bbox={"boxstyle": "round,pad=0.4", "facecolor": PALETTE[i % 10] + (0.18,),
                                 "edgecolor": "0.3"})
             for i, (name, (x, y)) in enumerate(nodes.items())}
    fig.canvas.draw()  # places the boxes, so that each arrow can stop at their edges
    for a, b, label in edges:
        ax.annotate("", xy=nodes[b], xytext=nodes[a], zorder=1,
                    arrowprops={"arrowstyle": "-|>", "color": "0.25", "lw": 1.1, "shrinkA": 1, "shrinkB": 1,
                                "patchA": boxes[a].get_bbox_patch(), "patchB": boxes[b].get_bbox_patch()})
        if label:
            (xa, ya), (xb, yb) = nodes[a], nodes[b]
            ax.text((xa + xb) / 2, (ya + yb) / 2, label, ha="center", va="center", fontsize=8, color="0.2",
                    zorder=3, bbox={"facecolor": "white", "edgecolor": "none", "pad": 1.0})
    if title:
        ax.set_title(title)
    return fig


def similarity_histograms(embeddings: dict, labels, bins: int = 40, max_points: int = 2000, seed: int = 0,
                          title: str = ""):
    """One panel per embedding (``{name: [N, d]}``, e.g. before and after training): histograms of the cosine
    similarity of same-class pairs and of different-class pairs (every pair i < j once; at most ``max_points``
    samples, the same random ones in every panel), as densities, with their overlap in each title (the sum over
    bins of the smaller density times the bin width: 1 when they coincide, 0 when a threshold separates them).
    Returns the figure."""
    y = np.asarray(labels)
    keep = np.sort(np.random.default_rng(seed).permutation(len(y))[:max_points])
    fig, axes = plt.subplots(1, len(embeddings), figsize=(min(10, 3.4 * len(embeddings)), 3.2), squeeze=False,
                             sharey=True, constrained_layout=True)
    edges = np.linspace(-1, 1, bins + 1)
    i, j = np.triu_indices(len(keep), k=1)
    same = y[keep][i] == y[keep][j]
    for ax, (name, z) in zip(axes[0], embeddings.items()):
        z, _ = check_embeddings(z, y)
        u = z.detach().cpu().double().numpy()[keep]
        u = u / np.maximum(np.linalg.norm(u, axis=1, keepdims=True), 1e-12)
        sim = np.clip((u[i] * u[j]).sum(1), -1, 1)
        dens = [np.histogram(sim[mask], bins=edges, density=True)[0] for mask in (same, ~same)]
        overlap = float(np.minimum(*dens).sum() * (edges[1] - edges[0]))
        for k, (d, kind) in enumerate(zip(dens, ("same class", "different classes"))):
            ax.stairs(d, edges, fill=True, alpha=0.45, color=PALETTE[k], label=kind)
        ax.set(xlabel="cosine similarity", title=f"{name}\noverlap {overlap:.2f}")
        ax.title.set_fontsize(10)
    axes[0, 0].set_ylabel("density")
    axes[0, 0].legend(frameon=False, fontsize=8, loc="upper left")
    if title:
        fig.suptitle(title)
    return fig


def even_odd_pulls(runs: dict, parity, seed: int, size: int = 60):
    """The EPS paper's Fig. 1 on each arm's embedding (``{arm: [Run per seed]}``, the first seed's training
    embeddings): one batch of ``size`` training images drawn with ``seed`` from the even/odd splits ``parity``, and
    for an anchor of digit 0 and one of digit 3 whom each loss pulls (:func:`easy_positives`)."""
    batch = np.random.default_rng(seed).choice(len(parity.train), size=size, replace=False)
    parity_labels = np.asarray(parity.train.labels)[batch]  # what the loss sees
    digits = np.asarray(parity.train.extras["clean"])[batch]
    anchors = [int(np.flatnonzero(digits == d)[0]) for d in (0, 3) if (digits == d).any()]
    fig, axes = plt.subplots(1, len(runs), figsize=(10, 4.6), constrained_layout=True, squeeze=False)
    for ax, (name, per_seed) in zip(axes[0], runs.items()):
        easy_positives(ax, per_seed[0].train_embeddings[batch], parity_labels, anchors, modes=digits,
                       title=f"{name}: {size} training images, seed {seed}")
    fig.suptitle("Whom each anchor (star) pulls: every same-parity image (grey), or the nearest one (black)")
    return fig


def easy_positives(ax, xy, labels, anchors, modes=None, title: str = ""):
    """The EPS paper's Fig. 1 on 2-D points ``xy`` (e.g. a 2-D embedding): every point coloured by its
    ``modes`` (sub-class, e.g. the digit) or else its class, and for each anchor in ``anchors`` a thin grey line
    to every same-class point (what a regular loss pulls together) and a thick black one to its nearest
    same-class point, chosen by :func:`dml_tutorial.sampling.positive_pairs` with ``positives="easy"`` (what
    EPS pulls)."""
    from .distances import pairwise_distances
    from .sampling import positive_pairs

    z, y = check_embeddings(xy, labels)
    if z.shape[1] != 2:
        raise ValueError(f"easy_positives draws 2-D points, got dimension {z.shape[1]}")
    pts, colour_by = z.detach().cpu().numpy(), np.asarray(modes if modes is not None else y)
    ax.scatter(*pts.T, c=[PALETTE[int(k) % len(PALETTE)] for k in colour_by], s=8, alpha=0.5, linewidths=0)
    a, p = positive_pairs(pairwise_distances(z), y, "easy")
    nearest = dict(zip(a.tolist(), p.tolist()))
    for anchor in anchors:
        same = np.flatnonzero((y == y[anchor]).numpy())
        for q in same[same != anchor]:
            ax.plot(*pts[[anchor, q]].T, color="0.6", lw=0.3, alpha=0.4, zorder=1)
        if anchor in nearest:
            ax.plot(*pts[[anchor, nearest[anchor]]].T, color="black", lw=2.0, zorder=3)
        ax.scatter(*pts[anchor], marker="*", s=220, color=PALETTE[int(colour_by[anchor]) % len(PALETTE)],
                   edgecolors="black", zorder=4)
    ax.set(title=title, xticks=[], yticks=[])
    ax.set_aspect("equal", adjustable="datalim")  # true distances, without shrinking an elongated cloud's panel
    shown = sorted(set(colour_by.tolist()))
    handles = [plt.Line2D([], [], marker="o", ls="", color=PALETTE[int(k) % len(PALETTE)], label=str(k))
               for k in shown]
    ax.legend(handles=handles, title="sub-class" if modes is not None else "class", fontsize=7, title_fontsize=7,
              loc="best", ncols=max(1, len(shown) // 5), frameon=False)
    return ax


def ranking(frame: pd.DataFrame, references: dict | None = None, metric: str = "MAP@R", title: str = ""):
    """The bench's ranking (:func:`dml_tutorial.bench.ranking`: mean and 95% interval in points, rank with ties),
    best at the top, each method labelled with its rank; ``references`` (``{name: value in points}``, e.g. the raw
    input and the untrained network) as dashed vertical lines. Returns the figure."""
    n = len(frame)
    fig, ax = plt.subplots(figsize=(9.5 if references else 7.5, 0.9 + 0.36 * n), constrained_layout=True)
    y = np.arange(n)[::-1]
    for yi, (name, r) in zip(y, frame.iterrows()):
        ax.errorbar(r["mean"], yi, xerr=[[r["mean"] - r["low"]], [r["high"] - r["mean"]]], fmt="o",
                    color=PALETTE[(int(r["rank"]) - 1) % len(PALETTE)], capsize=3)
    ax.set_yticks(y, [f"{int(r['rank'])}. {label_mpl(name)}" for name, r in frame.iterrows()])
    for i, (name, value) in enumerate((references or {}).items()):
        ax.axvline(value, color="grey", ls=("--", ":")[i % 2], lw=1, label=f"{name}: {value:.1f}")
    if references:
        ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1), frameon=False)
    ax.set(xlabel=f"{metric} on the unseen classes, % (mean and 95% CI over seeds)", title=title)
    return fig


def robustness(curves: dict, metric: str = "R@1", title: str = "", ncols: int = 4):
    """Le & Odobez 2018's robustness plot for many methods, as small multiples: ``curves`` is
    ``{method: {p: interval}}`` with the intervals of :func:`dml_tutorial.bench.robustness` (mean ratio to the
    (1 - p) topline, 95% CI); one panel per method (its line and band, every other method's mean in light grey
    behind it), a shared y axis, and 1 (noise costs nothing beyond the lost samples) dotted. Returns the figure."""
    names = list(curves)
    rows = -(-len(names) // ncols)
    fig, axes = plt.subplots(rows, ncols, figsize=(2.6 * ncols, 2.2 * rows + 0.6), sharex=True, sharey=True,
                             squeeze=False, constrained_layout=True)
    for ax, (i, name) in zip(axes.flat, enumerate(names)):
        for other in names:
            if other != name:
                rates = sorted(curves[other])
                ax.plot(rates, [curves[other][p]["mean"] for p in rates], color="0.85", lw=0.8, zorder=1)
        rates = sorted(curves[name])
        low, high = ([curves[name][p]["ci"][j] for p in rates] for j in (0, 1))
        colour = PALETTE[i % len(PALETTE)]
        ax.plot(rates, [curves[name][p]["mean"] for p in rates], "-o", ms=3, color=colour, label=label_mpl(name),
                zorder=3)
        ax.fill_between(rates, low, high, color=colour, alpha=0.2, lw=0, zorder=2)
        ax.axhline(1.0, color="grey", lw=0.8, ls=":")
        ax.set_title(label_mpl(name), fontsize=9)
    for ax in axes.flat[len(names):]:
        ax.set_visible(False)
    fig.supxlabel("symmetric label noise rate p", fontsize=10)
    fig.supylabel(f"{metric}: noisy / (1 - p) topline", fontsize=10)
    fig.suptitle(title, fontsize=11)
    return fig


def risk_identity(risks: dict, num_classes: int, ks=(6, 20, 100), skew: float = 3.0):
    """Le & Odobez's section 2 in four panels, from :func:`dml_tutorial.guarantees.risk_identity` (``{p: array
    [maps, 5]}``): the noisy unhinged risk against eq. 17's prediction (on the diagonal where the identity holds),
    against the clean risk (a line whose slope falls with p), the triplet loss as trained, clean against noisy (no
    longer a line), and Q(p) (eq. 22) for ``ks`` classes, balanced and under a mining ``skew``
    (:func:`dml_tutorial.noise.noise_multiplier`). Returns the figure."""
    fig, axes = plt.subplots(2, 2, figsize=(10, 7.4), constrained_layout=True)
    for i, (p, rows) in enumerate(risks.items()):
        clean, noisy, predicted, hinge_clean, hinge_noisy = rows.T
        style = {"s": 12, "color": PALETTE[i], "label": f"p = {p:g}"}
        axes[0, 0].scatter(predicted, noisy, **style)
        axes[0, 1].scatter(clean, noisy, **style)
        axes[1, 0].scatter(hinge_clean, hinge_noisy, **style)
    lims = axes[0, 0].get_xlim()
    axes[0, 0].plot(lims, lims, "k--", lw=0.8, label="noisy = predicted")
    axes[0, 0].set(xlabel="eq. 17: expected noisy risk, from the clean labels", ylabel="noisy risk, one noise draw",
                   title="Unhinged: the identity holds")
    axes[0, 1].set(xlabel="clean risk", ylabel="noisy risk", title="Unhinged: a line whose slope falls with p")
    axes[1, 0].set(xlabel="clean triplet loss (hinge, semi-hard)", ylabel="noisy triplet loss",
                   title="With hinge and mining: no longer a line")
    ps = np.linspace(0, 0.8, 81)
    for i, k in enumerate(ks):
        axes[1, 1].plot(ps, [noise_multiplier(float(p), k) for p in ps], color=PALETTE[i], label=f"K = {k}")
        axes[1, 1].plot(ps, [noise_multiplier(float(p), k, [skew / k, 1 / (skew * k)]) for p in ps], "--",
                        color=PALETTE[i], label=f"K = {k}, mining skew η = {skew:g}")
    axes[1, 1].axhline(0, color="grey", lw=0.8)
    axes[1, 1].set(xlabel="sample noise rate p", ylabel="Q (eq. 22)", ylim=(-1, 1),
                   title="Q(p): the guarantee holds while Q ≥ 0")
    for ax in axes.flat:
        ax.legend(fontsize=7)
    return fig


def sampling_strategies(xy, labels, anchor: int, positive: int, margin: float, draws: int = 1000, seed: int = 0):
    """Every strategy of :mod:`dml_tutorial.sampling` for one anchor (star) and positive (diamond) of the 2-D
    points ``xy``, one :func:`sampling_panel` each: the positives first (which class mates each uses, over
    ``draws`` draws for ``"random"``; ``"easy"`` shows the nearest as its positive), then the negatives (how often
    each is picked over ``draws`` draws, :func:`dml_tutorial.sampling.negative_frequencies`, with the semi-hard
    band of ``margin``), each panel titled by how many it uses. Returns the figure."""
    xy, labels = np.asarray(xy), np.asarray(labels)
    dist, y = torch.cdist(torch.tensor(xy), torch.tensor(xy)), torch.tensor(labels)
    g = torch.Generator().manual_seed(seed)
    fig, axes = plt.subplots(4, 3, figsize=(10, 13))
    for ax, positives in zip(axes.flat[:3], sampling.POSITIVES):
        chosen = np.zeros(len(labels))
        for _ in range(draws if positives == "random" else 1):  # as often as the negatives
            a, p = sampling.positive_pairs(dist, y, positives, generator=g)
            chosen[p[a == anchor].numpy()] += 1
        shown = int(chosen.argmax()) if positives == "easy" else positive
        used = int((chosen > 0).sum())
        detail = {"all": f"all {used} at once", "easy": "the nearest"}.get(positives, f"one per draw, {used} in all")
        sampling_panel(ax, xy, labels, anchor, shown, chosen, title=f'positives="{positives}"\n{detail}')
    for ax, negatives in zip(axes.flat[3:], sampling.NEGATIVES):
        freq = sampling.negative_frequencies(xy, labels, anchor, positive, negatives, draws=draws, margin=margin,
                                             seed=seed)
        picked = int((freq > 0).sum())
        detail = f"all {picked} at once" if negatives == "all" else f"one per draw, {picked} in all"
        sampling_panel(ax, xy, labels, anchor, positive, freq, margin=margin,
                       title=f'negatives="{negatives}"\n{detail}')
    for ax in axes.flat[3 + len(sampling.NEGATIVES):]:
        ax.axis("off")
    fig.suptitle("Which samples each strategy uses for one anchor (star) and its positive (diamond); rings: "
                 f"picked, area = frequency over {draws:,} draws", y=1.0)
    fig.tight_layout()
    return fig


def seen_unseen(panels: dict, keys=("seen R@1", "unseen R@1"), ylabel: str = "Recall@1", title: str = ""):
    """ECAML's Fig. 2 in small multiples: ``panels`` is ``{panel title: {row: [Run per seed]}}``; each row's mean
    curve over its seeds of each of ``keys`` in its history (the seen classes dashed, the unseen solid), one colour
    a row. Returns the figure."""
    fig, axes = plt.subplots(1, len(panels), figsize=(min(10, 4.2 * len(panels)), 3.6), constrained_layout=True,
                             squeeze=False)
    for ax, (name, rows) in zip(axes[0], panels.items()):
        for color, (row, runs) in enumerate(rows.items()):
            for key, style in zip(keys, ("--", "-")):
                curve = np.mean([r.history[key] for r in runs], axis=0)
                ax.plot(np.arange(1, len(curve) + 1), curve, style, color=PALETTE[color],
                        label=f"{row}, {key.split()[0]}")
        ax.set(xlabel="epoch", ylabel=ylabel, title=name)
        ax.legend(fontsize=7)
    fig.suptitle(title)
    return fig


def pair_noise_curves(classes=(3, 6, 10, 100), top: float = 0.9):
    """The pair noise rates q+ and q- (:func:`dml_tutorial.noise.pair_noise_rates`, the noise paper's eq. 7-8)
    against the sample noise rate p from 0 to ``top``, one curve for each number of ``classes``; returns the
    figure."""
    rates = np.linspace(0, top, round(100 * top) + 1)
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.4), constrained_layout=True)
    for i, k in enumerate(classes):
        q = np.array([pair_noise_rates(float(p), k) for p in rates])
        for ax, column in zip(axes, q.T):
            ax.plot(rates, column, color=PALETTE[i], label=f"K = {k}")
    for ax, symbol, title in zip(axes, ("$q_+$", "$q_-$"), ("positive pairs observed as negative",
                                                            "negative pairs observed as positive")):
        ax.set(xlabel="sample noise rate p", ylabel=symbol, title=title)
        ax.legend(fontsize=8)
    return fig


def noise_curves(results: dict, names, rates, title: str = ""):
    """Le & Odobez's Fig. 1 in small: for each arm of ``names``, unseen R@1 (mean and std over seeds) against the
    noise rate, trained on noisy labels and on the (1 - p) clean samples (its topline), one panel an arm; the last
    panel each arm's R@1 over its topline's (Fig. 1d). ``results``: ``{(row, rate): [Run]}``, rows ``"<arm>"`` and
    ``"<arm> (topline)"`` (the topline at p = 0 is the arm itself). Returns the figure."""
    fig, axes = plt.subplots(2, 2, figsize=(10, 7.4), constrained_layout=True)
    axes, noisy = axes.ravel(), [r for r in rates if r]
    for i, name in enumerate(names):
        for style, row in (("-o", name), ("--s", f"{name} (topline)")):
            xs = [r for r in rates if (row, r) in results or r == 0]
            values = [[x.metrics["R@1"] for x in results[(row if (row, r) in results else name, r)]] for r in xs]
            axes[i].errorbar(xs, [np.mean(v) for v in values], yerr=[np.std(v, ddof=1) for v in values], fmt=style,
                             color=PALETTE[i], capsize=3,
                             label="noisy labels" if row == name else "topline: 1 - p clean samples")
        axes[i].set(xlabel="noise rate p", ylabel="unseen-class Recall@1", title=name)
        axes[i].legend(fontsize=8)
        ratio = [np.mean([n.metrics["R@1"] / t.metrics["R@1"]
                          for n, t in zip(results[(name, r)], results[(f"{name} (topline)", r)])]) for r in noisy]
        axes[3].plot(noisy, ratio, "-o", color=PALETTE[i], label=name)
    axes[3].axhline(1.0, color="grey", lw=0.8)
    axes[3].set(xlabel="noise rate p", ylabel="Recall@1 noisy / topline",
                title="ratio to the topline (paper's Fig. 1d)")
    axes[3].legend(fontsize=8)
    fig.suptitle(title)
    return fig


def sinkhorn_convergence(u, v, solvers: dict, epsilon: float = 2.5e-3, updates=range(0, 121, 4), title: str = ""):
    """How fast each Sinkhorn solver of ``solvers`` (``{name: options of sinkhorn_divergence}``, e.g. plain
    Sinkhorn ``{"scaling": 1e-9, "omega": 1.0}``) reaches S_eps(u, v) at ``epsilon``: its relative error against a
    converged value after each number of ``updates`` at ``epsilon``, counted after its epsilon-scaling steps
    (:func:`dml_tutorial.discrepancy.epsilon_schedule`). Returns ``(figure, converged value)``."""
    reference = discrepancy.sinkhorn_divergence(u, v, epsilon, max_iter=100_000, tol=1e-9).item()
    diameter = discrepancy.pairwise_distances(torch.cat([u, v])).max().item()
    fig, ax = plt.subplots(figsize=(6.5, 3.8), constrained_layout=True)
    iters = np.asarray(list(updates))
    for i, (name, options) in enumerate(solvers.items()):
        opts = {**discrepancy.SINKHORN_DEFAULTS, **options}
        warm_up = len(discrepancy.epsilon_schedule(diameter, epsilon, opts["scaling"]))
        err = [abs(discrepancy.sinkhorn_divergence(u, v, epsilon, max_iter=int(n), tol=0.0, scaling=opts["scaling"],
                                                   omega=opts["omega"]).item() - reference) / reference
               for n in iters]
        ax.semilogy(iters + warm_up, np.maximum(err, 1e-16), "o-", ms=3, color=PALETTE[i], label=name)
    ax.axhline(1e-4, color="grey", lw=0.8, ls="--")
    ax.set(xlabel="Sinkhorn updates (ε-scaling steps + iterations at ε)", ylabel="relative error", title=title)
    ax.legend(fontsize=8)
    return fig, reference


def weight_pulls(sweep: dict, terms, base: str, labels, most: int = 20):
    """DCDL's "where the weight acts" in three panels, from a weight sweep ``{(row, lambda): [Run per seed]}`` (rows
    ``"<base> + L^<term>"`` of each of ``terms``, ``lambda = 0`` the ``base`` loss alone, runs recorded with curves):
    each term's share of the two pulls at the embedding layer per epoch (:func:`dml_tutorial.objective.pull_share`,
    mean over seeds, a colour a weight, a line style a term), then the cosines between the test classes' centroids
    (:func:`dml_tutorial.metrics.centroid_cosines`, first seed) of the ``most`` crowded classes under the base alone
    and under the last term at its strongest weight. Returns the figure."""
    lams = sorted({lam for _, lam in sweep if lam > 0})
    fig, axes = plt.subplots(1, 3, figsize=(13, 3.9), constrained_layout=True)
    for term, style in zip(terms, ("-", "--")):
        row = f"{base} + L^{term}"
        for color, lam in enumerate(lams):
            if (row, lam) in sweep:
                share = np.nanmean(objective.pull_share(sweep[(row, lam)], term, base), axis=0)
                axes[0].plot(np.arange(1, len(share) + 1), share, style, marker="o" if len(share) < 8 else None,
                             color=PALETTE[color], label=f"{label_mpl('L^' + term)}, λ = {lam:g}")
    seeds = len(next(iter(sweep.values())))
    axes[0].set(xlabel="epoch", ylim=(0, 1), title=f"The term's share of the pull, mean over {seeds} seeds",
                ylabel=r"$|\nabla \lambda L^\varphi| \,/\, (|\nabla \lambda L^\varphi| + |\nabla L_{\mathrm{Trip}}|)$")
    axes[0].xaxis.set_major_locator(plt.MaxNLocator(integer=True))  # epochs, not 1.2
    axes[0].legend(fontsize=8, ncol=2, loc="upper center", bbox_to_anchor=(0.5, -0.22))
    strongest = max(key for key in sweep if key[0] == f"{base} + L^{terms[-1]}")
    ends = {base: sweep[(strongest[0], 0.0)][0], f"{strongest[0]}, λ = {strongest[1]:g}": sweep[strongest][0]}
    cosines = {name: metrics.centroid_cosines(r.test_embeddings, labels) for name, r in ends.items()}
    classes, before = cosines[base]
    nearest = np.where(np.eye(len(classes), dtype=bool), -np.inf, before).max(1)
    shown = np.sort(np.argsort(-nearest, kind="stable")[:most])
    for ax, (name, (_, cos)) in zip(axes[1:], cosines.items()):
        image = ax.imshow(cos[np.ix_(shown, shown)], vmin=-1, vmax=1, cmap="RdBu_r")
        ax.set(title=f"{label_mpl(name)}: class centroids", xticks=[], yticks=[])
        ax.set_xlabel(f"the {len(shown)} most crowded test classes (cosine)")
    fig.colorbar(image, ax=axes[2], shrink=0.85)
    return fig


def collapse_curves(collapse: dict, columns: dict, rows, title: str = ""):
    """Class collapse against the noise rate (Levi et al., Theorem 1): each of ``rows``' mode separation (mean and
    std over seeds; 1: one blob) at each noise rate of ``columns`` (``{column: rate}``), from ``collapse``
    (``{"<row>, <column>": {"separation": [one per seed]}}``, :func:`dml_tutorial.eps.collapse_table`); a row with
    EPS solid, its baseline dashed, one colour a pair. Returns the figure."""
    fig, ax = plt.subplots(figsize=(6.4, 3.8), constrained_layout=True)
    for i, row in enumerate(rows):
        values = [collapse[f"{row}, {c}"]["separation"] for c in columns]
        eps = row.startswith("EPS")
        ax.errorbar(list(columns.values()), [np.mean(v) for v in values],
                    yerr=[np.std(v, ddof=1) if len(v) > 1 else 0 for v in values], fmt="-o" if eps else "--s",
                    color=PALETTE[i // 2], alpha=1.0 if eps else 0.6, capsize=3, label=row)
    ax.axhline(1.0, color="grey", lw=0.8)
    ax.set(xlabel="symmetric label noise p", ylabel="mode separation (1: one blob)", title=title)
    ax.title.set_fontsize(10)
    ax.legend(fontsize=8)
    return fig


def positives_curve(scores: dict, title: str = "Fig. 3b, with and without EPS"):
    """Levi et al.'s Fig. 3b: each row's unseen R@1 (mean and std over seeds, in %) against the same-class samples
    in a batch (log axis), from ``scores`` (``{row: {"<k> per class": [R@1 per seed]}}``,
    :func:`dml_tutorial.eps.positives_scores`). Returns the figure."""
    fig, ax = plt.subplots(figsize=(5, 3.4), constrained_layout=True)
    for row, cols in scores.items():
        ks = [int(c.split()[0]) for c in cols]
        values = [100 * np.asarray(v) for v in cols.values()]
        ax.errorbar(ks, [v.mean() for v in values], yerr=[v.std(ddof=1) if len(v) > 1 else 0 for v in values],
                    marker="o", capsize=3, label=row)
    ax.set(xscale="log", xticks=ks, xticklabels=ks, xlabel="same-class samples per batch",
           ylabel="unseen-class Recall@1 (%)", title=title)
    ax.legend(fontsize=8)
    return fig


def batch_transport(embeddings: dict, labels, seed: int = 0, classes: int = 4, per_class: int = 8):
    """DCDL's class-wise term on one batch, drawn: for each of ``embeddings`` (``{name: [n, d] tensor}``), the exact
    transport plan (POT's ``ot.emd``, uniform weights, squared Euclidean cost in the embedding space) between the
    first test class and the rest of a batch of up to ``per_class`` images of each of the first ``classes``
    classes (``labels``; drawn by ``seed``), drawn in the batch's first two principal axes, with its cost. Returns
    the figure."""
    import ot
    from sklearn.decomposition import PCA

    labels = np.asarray(labels)
    rng = np.random.default_rng(seed)
    k = int(labels[0])  # one class of the test split against the other classes of a batch

    def members(c):
        index = np.flatnonzero(labels == c)
        return rng.choice(index, min(per_class, len(index)), replace=False)

    batch = np.concatenate([members(c) for c in np.unique(labels)[:classes]])
    if k not in labels[batch]:
        batch = np.concatenate([batch, members(k)])
    mine_mask = labels[batch] == k
    fig, axes = plt.subplots(1, len(embeddings), figsize=(10, 3.2), constrained_layout=True)
    for ax, (name, z) in zip(np.atleast_1d(axes), embeddings.items()):
        zb = z[batch].double()
        mine, rest = zb[mine_mask].numpy(), zb[~mine_mask].numpy()
        cost_matrix = ot.dist(mine, rest)
        coupling = ot.emd(np.full(len(mine), 1 / len(mine)), np.full(len(rest), 1 / len(rest)), cost_matrix)
        xy = PCA(2).fit_transform(zb.numpy())
        transport_panel(ax, xy[mine_mask], xy[~mine_mask], coupling,
                        f"{name}\nOT cost {float((coupling * cost_matrix).sum()):.2f}")
    fig.suptitle(f"Class {k} (blue) against the rest of a batch (orange): the exact transport plan")
    return fig


def ec_pulls(curves: dict, title: str = ""):
    """EC during training (:func:`dml_tutorial.ecaml.pulls`): EC's value (left; EC as we write it only, the released
    EC is on another scale) and its share of the pull at the embedding layer (right), means over seeds after each
    epoch, one colour a metric loss, EC as released dashed. Returns the figure."""
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.6), constrained_layout=True)
    for arm, c in curves.items():
        if c is None:
            continue
        colour = PALETTE[c["local"]]
        style = "--s" if arm.endswith("released EC") else "-o"
        share = np.nanmean(c["share"], axis=0)
        epochs = np.arange(1, len(share) + 1)
        axes[1].plot(epochs, share, style, color=colour, label=arm)
        if c["value"] is not None:
            axes[0].plot(epochs, c["value"], style, color=colour, label=arm)
    axes[0].set(xlabel="epoch", ylabel="EC, log(1 + L_ec), mean over class pairs", title="EC's value")
    axes[1].set(xlabel="epoch", ylabel="|grad λ EC| / (|grad λ EC| + |grad L_m|)", ylim=(0, 1),
                title="EC's share of the pull at the embedding layer")
    for ax in axes:
        ax.legend(fontsize=8)
    fig.suptitle(title)
    return fig


def cbswr_step():
    """One training step of CBSwR (Li et al., eq. 10: alpha L_m + beta L_rim + gamma L_rec) as a :func:`diagram`:
    an image and its view through the encoder into the embedding and the RIM classifier, the clusters' centroids
    decoded (L_rec) and embedded into the centre-based softmax (L_m)."""
    nodes = {
        "image $I_i$ and\nits view $\\hat I_i$": (0.07, 0.5),
        "encoder\n(CNN features)": (0.25, 0.5),
        "embedding $F$\n$f_i$, $\\hat f_i$ (unit norm)": (0.47, 0.85),
        "RIM classifier\nsoftmax over K clusters": (0.47, 0.5),
        "centroids $r_k$\n(mean feature per cluster)": (0.47, 0.15),
        "$L_{rim}$ (eq. 1–3)\nbalanced, confident": (0.72, 0.6),
        "decoder $D$": (0.7, 0.06),
        "$L_{rec}$ (eq. 5)": (0.91, 0.06),
        "centroid embeddings\n$c_k = F(r_k)$": (0.88, 0.36),
        "$L_m$ (eq. 6–9)\ncenter-based softmax": (0.88, 0.85),
    }
    image, encoder, embedding, classifier, centroids, rim, decoder, rec, c_k, l_m = nodes
    edges = [(image, encoder, ""), (encoder, embedding, "features"), (embedding, classifier, ""),
             (classifier, rim, ""), (classifier, centroids, "argmax"), (encoder, centroids, "features"),
             (centroids, decoder, ""), (decoder, rec, ""), (centroids, c_k, "$F$"), (c_k, l_m, ""),
             (embedding, l_m, "")]
    return diagram(nodes, edges, title=r"CBSwR, one step (eq. 10: $\alpha L_m + \beta L_{rim} + \gamma L_{rec}$)")


def even_odd_embeddings(runs: dict, parity, unit: str, seed: int):
    """Table 1's 2-D embeddings themselves (no projection), one row per arm of ``runs`` (``{arm: [Run per seed]}``,
    its first seed's run): the training ``unit`` (digits or characters) 0-5, labelled even/odd but coloured by
    their own class (``parity.train.extras["clean"]``), and the unseen ones 6-9 (EPS, section 5.1)."""
    fig, axes = plt.subplots(len(runs), 2, figsize=(10, 4.3 * len(runs)), constrained_layout=True)
    for row, name in zip(axes, runs):
        run = runs[name][0]
        scatter(row[0], run.train_embeddings.numpy(), parity.train.extras["clean"],
                title=f"{name}: training {unit} 0-5 (labels: even/odd)")
        scatter(row[1], run.test_embeddings.numpy(), parity.test.labels, title=f"{name}: unseen {unit} 6-9")
        for ax in row:
            ax.legend(title=unit[:-1], fontsize=7, markerscale=2)
    fig.suptitle(f"The 2-D embedding itself (no projection), seed {seed}")
    return fig


def modes_tsne(runs: dict, splits, rows, seed: int = 0):
    """The sub-cluster data's held-out embeddings under label noise in t-SNE (EPS, section 5.2), one panel per row
    of ``rows`` (``runs``: ``{(row, noise): [Run]}``, the first noisy column, its first seed): colour the class,
    marker which of its 3 modes (``splits.test.extras["modes"] // 4``)."""
    fig, axes = plt.subplots(1, len(rows), figsize=(10, 4.4), constrained_layout=True)
    noisy = next(key[1] for key in runs if key[1] != "clean")
    for ax, row in zip(axes, rows):
        xy = project_2d(runs[(row, noisy)][0].test_embeddings, "t-SNE", seed=seed)
        scatter(ax, xy, splits.test.labels, groups=splits.test.extras["modes"] // 4, title=f"{row}, {noisy}")
    fig.suptitle("colour: the class; marker: which of its 3 modes")
    axes[-1].legend(title="class", loc="center left", bbox_to_anchor=(1.0, 0.5), markerscale=2, frameon=False)
    return fig
