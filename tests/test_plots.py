import matplotlib

matplotlib.use("Agg")

from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pytest
import torch

from dml_tutorial import plots
from dml_tutorial.train import History


def test_embedding_plots_side_by_side_with_legend():
    g = torch.Generator().manual_seed(0)
    z = torch.randn(60, 8, generator=g)
    y = torch.arange(60) % 3
    fig = plots.embedding_plots(z, y, "demo", groups=(np.arange(60) % 2))
    titles = [ax.get_title() for ax in fig.axes]
    assert titles == ["demo — t-SNE", "demo — UMAP"]
    assert fig.axes[-1].get_legend() is not None
    # each class keeps its palette colour in both panels
    colours = [tuple(np.round(c.get_facecolor()[0][:3], 3)) for c in fig.axes[0].collections]
    assert tuple(np.round(plots.PALETTE[0], 3)) in colours


def test_umaps_compiled_functions_go_through_numbas_cache():
    """umap-learn's numba functions compile into numba's on-disk cache (issue #47: each kernel and test worker
    compiled them again, about 15 s each), except one Python function jitted twice with other options, which one
    cache entry cannot tell apart."""
    from numba.core.caching import FunctionCache, NullCache

    umap = plots.umap_module()
    plots.project_2d(torch.randn(40, 4, generator=torch.Generator().manual_seed(0)), "UMAP")
    fit = umap.umap_.smooth_knn_dist  # compiled by every fit
    assert isinstance(fit._cache, FunctionCache)
    assert fit.stats.cache_hits or fit.stats.cache_misses  # loaded from the cache, or compiled and saved there
    assert any(Path(fit.stats.cache_path).glob("*smooth_knn_dist*.nbi"))
    twice = (umap.layouts._nb_optimize_layout_euclidean_single_epoch,
             umap.layouts._nb_optimize_layout_euclidean_single_epoch_parallel)
    assert twice[0].py_func is twice[1].py_func and all(isinstance(f._cache, NullCache) for f in twice)


@pytest.mark.parametrize("names, shown", [(["T-shirt/top", "Trouser", "Pullover"], ["T-shirt/top", "Trouser", "Pullover"]),
                                          (["a", "b"], ["0", "1", "2"]),  # fewer names than classes
                                          (None, ["0", "1", "2"])])
def test_embedding_plots_name_the_classes_where_they_can(names, shown):
    z, y = torch.randn(30, 4, generator=torch.Generator().manual_seed(0)), torch.arange(30) % 3
    fig = plots.embedding_plots(z, y, names=names, methods=("t-SNE",))
    assert [t.get_text() for t in fig.axes[0].get_legend().get_texts()] == shown


def test_embedding_plots_subsample_large_inputs():
    z = torch.randn(300, 4)
    fig = plots.embedding_plots(z, torch.zeros(300), methods=("t-SNE",), max_points=50)
    assert sum(len(c.get_offsets()) for c in fig.axes[0].collections) == 50


def test_unknown_projection():
    with pytest.raises(ValueError, match="unknown projection"):
        plots.project_2d(torch.randn(10, 3), "PCA")


def test_training_curves_plot_each_key():
    h = History([{"epoch": 1, "loss": 1.0, "R@1": None}, {"epoch": 2, "loss": 0.5, "R@1": 0.9}])
    fig = plots.training_curves({"run": h}, keys=("loss", "R@1"))
    assert [len(ax.lines) for ax in fig.axes] == [1, 1]
    assert list(fig.axes[1].lines[0].get_xdata()) == [2]


def test_results_table_puts_paper_beside_measured():
    t = plots.results_table({"triplet": {"R@1": [0.5, 0.7]}}, paper={"triplet": {"R@1": 63.2}})
    assert t.loc["triplet", ("R@1", "paper")] == 63.2
    assert t.loc["triplet", ("R@1", "measured")] == "60.0 ± 14.1"
    assert plots.mean_std([0.25]) == "25.0"


def test_results_table_keeps_paper_beside_measured_when_the_first_row_has_no_paper_number():
    t = plots.results_table({"ours only": {"R@1": [0.5], "NMI": [0.2]}, "both": {"R@1": [0.6], "NMI": [0.3]}},
                            paper={"both": {"R@1": 40.0, "NMI": 30.0}})
    assert list(t.columns) == [("R@1", "paper"), ("R@1", "measured"), ("NMI", "paper"), ("NMI", "measured")]
    assert t.loc["ours only", ("R@1", "paper")] == "–" and t.loc["both", ("NMI", "paper")] == 30.0


def test_labels_write_the_papers_symbols_as_the_prose_does():
    assert plots.label_html("L_Trip + L^W-GeomLoss") == "<i>L</i><sub>Trip</sub> + <i>L</i><sup>W</sup>-GeomLoss"
    assert plots.label_html("only L_rim <b>") == "only <i>L</i><sub>rim</sub> &lt;b&gt;"  # the rest stays text
    assert plots.label_html("MS, sym 0.2") == "MS, sym 0.2"  # no shorthand: unchanged
    assert plots.label_tex("L_Trip + L^L") == r"$L_{\text{Trip}}$ + $L^{\text{L}}$"


def test_styled_table_renders_labels_and_numbers_the_same_on_every_call():
    t = plots.results_table({"L_Trip + L^W": {"R@1": [0.5, 0.7]}, "raw input": {"R@1": [0.25]}},
                            paper={"L_Trip + L^W": {"R@1": 63.2}})
    page = plots.styled(t).to_html()
    assert page == plots.styled(t).to_html()  # no random element ids: nbval compares this HTML
    assert "<i>L</i><sub>Trip</sub> + <i>L</i><sup>W</sup>" in page and 'class="dataframe"' in page
    assert ">63.2<" in page and "63.200000" not in page and ">60.0 ± 14.1<" in page
    assert plots.styled(t).data is t
    lambdas = plots.styled(plots.results_table({"L_Trip + L^W": {0.0: [0.5, 0.6], 0.5: [0.4, 0.5]}},
                                               paper={"L_Trip + L^W": {0.0: 59.9}})).to_html()
    assert ">0<" in lambdas and ">0.5<" in lambdas and "0.000000" not in lambdas  # numeric column headings


@pytest.mark.parametrize("shape", [(1, 40), (1, 8, 8), (3, 8, 8)], ids=["signals", "images", "colour"])
def test_cluster_reconstructions_one_row_per_cluster(shape):
    x = torch.randn(12, *shape)  # colour images come ImageNet-normalised, outside [0, 1]
    assign = torch.tensor([3, 3, 3, 3, 3, 1, 1, 1, 0, 0, 5, 5])
    recon = {c: torch.rand(*shape) for c in (0, 1, 3, 5)}
    fig = plots.cluster_reconstructions(x, assign, recon, clusters=3, members=4)
    axes = np.array(fig.axes).reshape(3, -1)
    assert axes.shape == ((3, 1) if len(shape) == 2 else (3, 5))
    assert "cluster 3" in axes[0, 0].get_ylabel()  # the largest cluster first
    if len(shape) == 3:
        shown = axes[0, 1].get_images()[0].get_array()
        assert shown.shape == shape[1:] + ((3,) if shape[0] == 3 else ())
        assert shape[0] == 1 or 0 <= shown.min() <= shown.max() <= 1  # grey: matplotlib scales the colormap
    plt.close(fig)


def test_sampling_panel_rings_the_picked_samples():
    xy = np.random.default_rng(0).normal(size=(12, 2))
    labels = np.repeat(np.arange(3), 4)
    freq = np.zeros(12)
    freq[[5, 9]] = [0.25, 0.75]
    fig, ax = plt.subplots()
    plots.sampling_panel(ax, xy, labels, 0, 1, freq, title="t", margin=0.2)
    rings = ax.collections[1]
    assert len(rings.get_offsets()) == 2 and rings.get_sizes()[1] > rings.get_sizes()[0]
    assert len(ax.patches) == 2 and ax.get_title() == "t"
    plt.close(fig)


def test_transport_panel_draws_one_segment_per_carried_mass():
    x, y = np.zeros((2, 2)), np.ones((3, 2))
    plan = np.array([[0.5, 0.0, 0.0], [0.0, 0.25, 0.25]])
    fig, ax = plt.subplots()
    plots.transport_panel(ax, x, y, plan, title="plan")
    alphas = sorted(line.get_alpha() for line in ax.lines)
    assert alphas == [0.5, 0.5, 1.0] and len(ax.collections) == 2 and ax.get_title() == "plan"
    with pytest.raises(ValueError, match="shape"):
        plots.transport_panel(ax, x, y, plan.T)
    plt.close(fig)


def test_gradient_flows_one_row_per_divergence_one_column_per_time():
    target = np.random.default_rng(0).normal(size=(10, 2))
    flows = {"a": [torch.zeros(6, 2) + t for t in range(5)], "b": [torch.ones(6, 2) * t for t in range(5)]}
    fig = plots.gradient_flows(flows, target, times=(0, 2, 4))
    assert len(fig.axes) == 6 and fig.get_size_inches()[0] <= 10
    assert [ax.get_title() for ax in fig.axes[:3]] == ["a, step 0", "a, step 2", "a, step 4"]
    assert np.allclose(fig.axes[5].collections[1].get_offsets(), 4.0)  # b's cloud at step 4
    assert fig.axes[0].get_legend() is not None
    with pytest.raises(ValueError, match="'a' has 4 steps, fewer than the time 7"):
        plots.gradient_flows(flows, target, times=(0, 7))
    plt.close("all")


def test_diagram_draws_one_box_per_node_and_one_arrow_per_edge_and_names_unknown_boxes():
    nodes = {"encoder": (0.1, 0.5), "clusters": (0.5, 0.5), "loss": (0.9, 0.5)}
    fig = plots.diagram(nodes, [("encoder", "clusters", "features"), ("clusters", "loss", "")])
    ax = fig.axes[0]
    arrows = [t for t in ax.texts if isinstance(t, matplotlib.text.Annotation)]
    assert len(arrows) == 2 and all(a.arrow_patch is not None for a in arrows)
    assert {t.get_text() for t in ax.texts if t not in arrows} == {"encoder", "clusters", "loss", "features"}
    with pytest.raises(ValueError, match="decoder"):
        plots.diagram(nodes, [("encoder", "decoder", "")])


def test_similarity_histograms_show_no_overlap_for_separated_classes_and_full_overlap_for_one_cloud():
    separated = torch.tensor([[1.0, 0.0]] * 5 + [[0.0, 1.0]] * 5)  # same class: cos 1, other class: cos 0
    labels = [0] * 5 + [1] * 5
    fig = plots.similarity_histograms({"separated": separated}, labels)
    assert fig.axes[0].get_title().endswith("overlap 0.00")
    cloud = torch.randn(400, 8, generator=torch.Generator().manual_seed(0))
    fig = plots.similarity_histograms({"one cloud": cloud}, [0, 1] * 200, bins=4)
    overlap = float(fig.axes[0].get_title().split("overlap ")[1])
    assert overlap > 0.8  # labels carry no information: the two histograms nearly coincide
    with pytest.raises(ValueError, match="NaN"):
        plots.similarity_histograms({"bad": torch.full((4, 2), float("nan"))}, [0, 0, 1, 1])


def test_easy_positives_draws_the_nearest_same_class_point_by_hand():
    g = torch.Generator().manual_seed(1)
    xy, y = torch.randn(30, 2, generator=g), torch.randint(0, 2, (30,), generator=g)
    _fig, ax = plt.subplots()
    plots.easy_positives(ax, xy, y, anchors=[0, 7])
    thick = [line for line in ax.lines if line.get_linewidth() == 2.0]
    for anchor, line in zip([0, 7], thick):
        mates = [j for j in range(30) if j != anchor and y[j] == y[anchor]]
        nearest = min(mates, key=lambda j: float(((xy[j] - xy[anchor]) ** 2).sum()))
        assert np.allclose(line.get_xydata(), xy[[anchor, nearest]].numpy())
    legend = ax.get_legend()
    assert [t.get_text() for t in legend.get_texts()] == ["0", "1"] and legend.get_title().get_text() == "class"
    assert ax.get_aspect() == 1.0 and ax.get_adjustable() == "datalim"  # an elongated cloud keeps its panel
    with pytest.raises(ValueError, match="2-D"):
        plots.easy_positives(ax, torch.randn(5, 3), [0, 0, 1, 1, 1], anchors=[0])


def test_embedding_plots_show_at_most_max_classes_and_say_so():
    z = torch.randn(300, 8)
    y = torch.arange(300) % 30  # 30 classes
    fig = plots.embedding_plots(z, y, "test", methods=("t-SNE",), max_classes=5)
    ax = fig.axes[0]
    assert "(5 of 30 classes)" in ax.get_title()
    assert sum(len(c.get_offsets()) for c in ax.collections) == 50  # 5 classes x 10 points
    plt.close(fig)


def test_retrieval_frames_each_neighbour_by_whether_it_shares_the_querys_class():
    """Points on a line, so the neighbours are known by hand: query 0's two nearest others are 1 (its class) and 2
    (another); query 3's are 4 and 2 (both its class). The query is never its own neighbour."""
    z = torch.tensor([[0.0], [0.1], [0.25], [0.6], [0.62]])
    labels = np.array([0, 0, 1, 1, 1])
    images = np.random.default_rng(0).uniform(size=(5, 1, 3, 3))  # each image tells which sample it is
    fig = plots.retrieval(images, labels, {"line": z, "reversed": -z}, queries=[0, 3], k=2)
    axes = np.array(fig.axes).reshape(4, 3)
    expected = {0: [(1, plots.RIGHT), (2, plots.WRONG)], 3: [(4, plots.RIGHT), (2, plots.RIGHT)]}
    for row, query in zip(axes, (0, 0, 3, 3)):  # one row per (query, embedding); -z has the same neighbours
        assert np.allclose(row[0].images[0].get_array(), plots._image(images[query]))
        assert row[0].spines["top"].get_edgecolor()[:3] == pytest.approx((0.0, 0.0, 0.0))
        for ax, (i, colour) in zip(row[1:], expected[query]):
            assert np.allclose(ax.images[0].get_array(), plots._image(images[i]))
            assert ax.spines["left"].get_edgecolor()[:3] == pytest.approx(colour)
            assert ax.texts[0].get_text() == ("✓" if colour == plots.RIGHT else "✗")
    assert [ax.get_ylabel() for ax in axes[:, 0]] == ["line", "reversed", "line", "reversed"]
    plt.close(fig)


def test_glyph_specimen_marks_the_faces_test_bed_two_never_trains_on():
    drawn = np.random.default_rng(0).integers(0, 256, size=(5, 3, 8, 8), dtype=np.uint8)
    names = [f"face {i}" for i in range(5)]
    fig = plots.glyph_specimen(drawn, names, unseen=2)
    axes = np.array(fig.axes).reshape(5, 3)
    assert [ax.get_ylabel() for ax in axes[:, 0]] == ["face 0", "face 1", "face 2", "face 3 (unseen)",
                                                      "face 4 (unseen)"]
    colours = [matplotlib.colors.to_rgb(ax.yaxis.label.get_color()) for ax in axes[:, 0]]
    assert colours[:3] == [(0.0, 0.0, 0.0)] * 3 and colours[3:] == [pytest.approx(plots.WRONG)] * 2
    assert np.array_equal(axes[3, 2].images[0].get_array(), drawn[3, 2])  # face by row, draw by column
    plt.close(fig)


def test_paired_seeds_draws_a_line_per_seed_and_the_mean_in_each_panel():
    """Two panels of three seeds: each panel has one line per seed through its rows' values (in %) and one for
    their mean; a sum's terms go on lines of their own, each still mathtext."""
    panels = {"clean": {"L_Trip": [0.90, 0.80, 0.70], "L_Trip + L^W": [0.95, 0.70, 0.75]},
              "sym 0.3": {"L_Trip": [0.3, 0.2, 0.1], "L_Trip + L^W": [0.6, 0.5, 0.4]}}
    fig = plots.paired_seeds(panels, "title", ylabel="probe accuracy (%)")
    assert [ax.get_title() for ax in fig.axes] == ["clean", "sym 0.3"]
    for ax, rows in zip(fig.axes, panels.values()):
        values = 100 * np.array(list(rows.values()))
        *seeds, mean = ax.lines
        assert len(seeds) == 3 and all(np.allclose(line.get_ydata(), values[:, i]) for i, line in enumerate(seeds))
        assert np.allclose(mean.get_ydata(), values.mean(1)) and ax.get_ylabel() == "probe accuracy (%)"
    assert [t.get_text() for t in fig.axes[0].get_xticklabels()] == [
        "$L_{\\mathrm{Trip}}$", "$L_{\\mathrm{Trip}}$\n+ $L^{\\mathrm{W}}$"]
    plt.close(fig)
    with pytest.raises(ValueError, match="no rows"):
        plots.paired_seeds({"clean": {}})


def test_embedding_rows_of_one_figure_share_one_legend_in_two_columns_beyond_ten_classes():
    """CBSwR's and EPS's figures draw a row per method into one figure: the second row adds no legend (two legends
    of the same classes overlapped beside squashed panels); 20 classes take two columns."""
    z = torch.randn(200, 8)
    y = torch.arange(200) % 20
    fig, axes = plt.subplots(2, 1, figsize=(6, 6))
    for row in axes:
        plots.embedding_plots(z, y, "test", methods=("t-SNE",), axes=[row])
    legends = [ax.get_legend() for ax in fig.axes if ax.get_legend() is not None]
    assert len(legends) == 1 and legends[0]._ncols == 2 and len(legends[0].get_texts()) == 20
    plt.close(fig)
    fig = plots.embedding_plots(z[:50], y[:50] % 5, "few", methods=("t-SNE",))
    assert fig.axes[0].get_legend()._ncols == 1
    plt.close(fig)


def test_the_sampling_figure_draws_every_strategy_and_says_how_many_each_uses():
    """Two classes of four points on a line: the anchor's class mates are 1, 2, 3, the nearest 1; the negatives
    4-7. "all" uses all three positives at once and all four negatives; "hard" always the nearest negative."""
    from dml_tutorial import sampling

    xy = np.array([[0.0, 0], [0.1, 0], [0.3, 0], [0.6, 0], [1.0, 0], [1.2, 0], [1.4, 0], [1.6, 0]])
    labels = np.array([0, 0, 0, 0, 1, 1, 1, 1])
    fig = plots.sampling_strategies(xy, labels, anchor=0, positive=2, margin=0.5, draws=50, seed=0)
    titles = [ax.get_title() for ax in fig.axes if ax.get_title()]
    assert len(titles) == len(sampling.POSITIVES) + len(sampling.NEGATIVES)
    assert titles[:3] == ['positives="all"\nall 3 at once', 'positives="random"\none per draw, 3 in all',
                          'positives="easy"\nthe nearest']
    assert 'negatives="all"\nall 4 at once' in titles and 'negatives="hard"\none per draw, 1 in all' in titles
    plt.close(fig)


def test_the_seen_and_unseen_curves_draw_each_rows_mean_over_seeds_dashed_and_solid():
    from types import SimpleNamespace

    def run(seen, unseen):
        return SimpleNamespace(history={"seen R@1": seen, "unseen R@1": unseen})

    panels = {"Triplet": {"Triplet": [run([0.5, 0.9], [0.4, 0.3]), run([0.7, 1.0], [0.6, 0.5])],
                          "ECAML(Tri)": [run([0.5, 0.8], [0.4, 0.45])]}}
    fig = plots.seen_unseen(panels, title="t")
    lines = {line.get_label(): (line.get_linestyle(), list(line.get_ydata())) for line in fig.axes[0].lines}
    assert lines["Triplet, seen"] == ("--", [0.6, 0.95]) and lines["Triplet, unseen"] == ("-", [0.5, 0.4])
    assert lines["ECAML(Tri), unseen"] == ("-", [0.4, 0.45]) and fig.axes[0].get_title() == "Triplet"
    plt.close(fig)


def test_the_sinkhorn_convergence_figure_measures_each_solver_against_the_converged_value():
    g = torch.Generator().manual_seed(0)
    u = torch.nn.functional.normalize(torch.randn(6, 4, generator=g, dtype=torch.float64), dim=1)
    v = torch.nn.functional.normalize(torch.randn(9, 4, generator=g, dtype=torch.float64), dim=1)
    solvers = {"plain": {"scaling": 1e-9, "omega": 1.0}, "ours": {}}
    fig, reference = plots.sinkhorn_convergence(u, v, solvers, epsilon=0.05, updates=range(0, 201, 50))
    from dml_tutorial import discrepancy

    assert reference == pytest.approx(discrepancy.sinkhorn_divergence(u, v, 0.05, max_iter=100_000,
                                                                      tol=1e-9).item())
    errors = {line.get_label(): line.get_ydata() for line in fig.axes[0].lines if line.get_label() in solvers}
    assert set(errors) == set(solvers) and all(e[-1] < 1e-4 for e in errors.values())  # both converge
    assert errors["ours"][0] < errors["plain"][0]  # epsilon-scaling starts nearer
    plt.close(fig)


def test_the_weight_figure_draws_each_terms_share_of_the_pull_and_two_centroid_maps():
    from types import SimpleNamespace

    g = torch.Generator().manual_seed(0)
    labels = np.repeat(np.arange(4), 5)

    def runs(share):  # |grad term| / (|grad term| + |grad L_Trip|) = share at both epochs
        z = torch.nn.functional.normalize(torch.randn(20, 8, generator=g), dim=1)
        return [SimpleNamespace(history={"|grad| W": [share, share], "|grad| L_Trip": [1 - share, 1 - share]},
                                test_embeddings=z)] * 2

    sweep = {("L_Trip + L^W", 0.0): runs(0.0), ("L_Trip + L^W", 0.1): runs(0.25), ("L_Trip + L^W", 0.5): runs(0.5)}
    fig = plots.weight_pulls(sweep, ["W"], "L_Trip", labels, most=3)
    shares = {line.get_label(): list(line.get_ydata()) for line in fig.axes[0].lines}
    assert shares == {"$L^{\\mathrm{W}}$, λ = 0.1": [0.25, 0.25], "$L^{\\mathrm{W}}$, λ = 0.5": [0.5, 0.5]}
    maps = [ax for ax in fig.axes[1:3]]
    assert [m.get_images()[0].get_array().shape for m in maps] == [(3, 3), (3, 3)]
    assert "λ = 0.5" in maps[1].get_title() and "2 seeds" in fig.axes[0].get_title()
    plt.close(fig)


def test_embedding_plots_name_cjk_classes_by_their_characters_where_a_cjk_font_is_installed(monkeypatch):
    """The glyph test bed's classes are CJK characters: drawn with a CJK font where one is installed (the test bed
    renders from them), the class numbers where none is (Colab: DejaVu Sans has none), never empty boxes."""
    z, y = torch.randn(30, 4, generator=torch.Generator().manual_seed(0)), torch.arange(30) % 3
    if plots.cjk_font() is not None:
        fig = plots.embedding_plots(z, y, names=["一", "二", "三"], methods=("t-SNE",))
        legend = fig.axes[0].get_legend()
        assert [t.get_text() for t in legend.get_texts()] == ["一", "二", "三"]
        assert plots.cjk_font() in legend.get_texts()[0].get_fontfamily()
        plt.close(fig)
    monkeypatch.setattr(plots, "cjk_font", lambda: None)  # a machine without one
    fig = plots.embedding_plots(z, y, names=["一", "二", "三"], methods=("t-SNE",))
    assert [t.get_text() for t in fig.axes[0].get_legend().get_texts()] == ["0", "1", "2"]
    plt.close(fig)


def test_the_batch_transport_figure_draws_the_exact_plan_and_its_cost():
    labels = np.array([0, 0, 0, 1, 1, 1, 2, 2, 2])
    z = torch.tensor([[0.0, 0.0]] * 3 + [[1.0, 0.0]] * 3 + [[0.0, 2.0]] * 3)
    fig = plots.batch_transport({"apart": z, "together": z / 1000}, labels, seed=0)
    titles = [ax.get_title() for ax in fig.axes]
    # class 0 against the six others, uniform weights: half the mass moves 1 (squared distance 1), half 4
    assert titles == ["apart\nOT cost 2.50", "together\nOT cost 0.00"]
    assert fig._suptitle.get_text().startswith("Class 0 (blue) against the rest of a batch")
    plt.close(fig)


def test_the_cbswr_step_draws_its_ten_boxes_and_its_three_losses():
    fig = plots.cbswr_step()
    texts = [t.get_text() for t in fig.axes[0].texts]
    assert sum("(eq." in t for t in texts) == 3 and len([t for t in texts if t]) >= 10  # L_rim, L_rec, L_m
    assert "eq. 10" in fig.axes[0].get_title() or any("eq. 10" in t.get_text() for t in fig.texts)


def test_the_even_odd_and_the_modes_figures_draw_a_panel_per_arm_and_split():
    from types import SimpleNamespace

    g = torch.Generator().manual_seed(0)
    run = SimpleNamespace(train_embeddings=torch.randn(12, 2, generator=g), test_embeddings=torch.randn(8, 2, generator=g))
    parity = SimpleNamespace(train=SimpleNamespace(extras={"clean": np.arange(12) % 6}),
                             test=SimpleNamespace(labels=6 + np.arange(8) % 4))
    fig = plots.even_odd_embeddings({"Triplet": [run], "EPS + Triplet": [run]}, parity, "digits", seed=3)
    titles = [ax.get_title() for ax in fig.axes]
    assert titles == ["Triplet: training digits 0-5 (labels: even/odd)", "Triplet: unseen digits 6-9",
                      "EPS + Triplet: training digits 0-5 (labels: even/odd)", "EPS + Triplet: unseen digits 6-9"]
    assert fig._suptitle.get_text().endswith("seed 3")
    test = SimpleNamespace(labels=np.arange(36) % 3, extras={"modes": np.arange(36) % 12})
    runs = {(row, noise): [SimpleNamespace(test_embeddings=torch.randn(36, 4, generator=g))]
            for row in ("A", "B") for noise in ("clean", "symmetric 0.2")}
    fig = plots.modes_tsne(runs, SimpleNamespace(test=test), ("A", "B"), seed=0)
    assert [ax.get_title() for ax in fig.axes] == ["A, symmetric 0.2", "B, symmetric 0.2"]


def test_embedding_rows_draw_a_row_a_run_with_one_legend_under_the_title():
    g = torch.Generator().manual_seed(0)
    labels = np.repeat(np.arange(3), 10)
    rows = {"before": torch.randn(30, 4, generator=g), "after": torch.randn(30, 4, generator=g)}
    fig = plots.embedding_rows(rows, labels, "Test classes, seed 0", names=["a", "b", "c"])
    try:
        assert len(fig.axes) == 4 and fig.get_suptitle() == "Test classes, seed 0"
        assert [ax.get_title() for ax in fig.axes] == ["before — t-SNE", "before — UMAP", "after — t-SNE",
                                                       "after — UMAP"]
        legends = [ax.get_legend() for ax in fig.axes if ax.get_legend()]
        assert len(legends) == 1 and [t.get_text() for t in legends[0].get_texts()] == ["a", "b", "c"]
    finally:
        plt.close(fig)


def test_pair_noise_curves_draw_eq_7_and_8():
    from dml_tutorial.noise import pair_noise_rates

    fig = plots.pair_noise_curves(classes=(3, 10), top=0.5)
    try:
        positive, negative = fig.axes
        for ax, which in ((positive, 0), (negative, 1)):
            assert [line.get_label() for line in ax.get_lines()] == ["K = 3", "K = 10"]
            for line, k in zip(ax.get_lines(), (3, 10)):
                p, q = line.get_data()
                assert len(p) == 51 and p[0] == 0 and p[-1] == pytest.approx(0.5)
                assert q[20] == pytest.approx(pair_noise_rates(float(p[20]), k)[which])
        # K = 3, p = 0.2, by counting: a positive pair stays one with 0.8^2 + 2 * 0.1^2 = 0.66
        assert positive.get_lines()[0].get_data()[1][20] == pytest.approx(1 - 0.66)
    finally:
        plt.close(fig)
