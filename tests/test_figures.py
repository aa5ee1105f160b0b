"""dml_tutorial.figures and the one-call helpers the chapters' folded cells became (issue #87): each picks the runs
and images its cell picked by hand, says why where it cannot draw, and keeps the figures a run file keeps."""

import re
from types import SimpleNamespace

import matplotlib.pyplot as plt
import numpy as np
import pytest
import torch

from dml_tutorial import clustering, dcdl, ecaml, eps, figures, findings, report
from dml_tutorial.data import Splits


@pytest.fixture
def kept(monkeypatch):
    """The names figures hands to the run file, in order."""
    names = []
    monkeypatch.setattr(figures, "record_figure", lambda fig, name: names.append(name) or fig)
    yield names
    plt.close("all")


def _runs(n=40, dim=8, seed=0):
    g = torch.Generator().manual_seed(seed)
    return [SimpleNamespace(test_embeddings=torch.randn(n, dim, generator=g),
                            train_embeddings=torch.randn(n, dim, generator=g))]


def _splits(n=40, classes=4):
    labels = np.arange(n) % classes
    part = SimpleNamespace(labels=labels)
    return SimpleNamespace(train=part, test=part, class_names=[f"c{i}" for i in range(classes)])


@pytest.mark.parametrize(("part", "side"), [("test", "unseen"), ("train", "seen")])
def test_embeddings_draw_one_row_a_run_of_the_asked_part_and_keep_it(kept, part, side):
    runs = {"SME": _runs(seed=1), "CBSwR": _runs(seed=2)}
    fig = figures.embeddings(runs, _splits(), seed=0, part=part)
    assert len(fig.axes) >= 4  # t-SNE and UMAP, two rows
    titles = " ".join(ax.get_title() for ax in fig.axes)
    assert f"SME, {side}" in titles and f"CBSwR, {side}" in titles
    assert kept == [f"{side} embeddings"]


def test_the_seed_pictures_name_rows_and_columns_the_committed_runs_recorded():
    """A row or column the test bed II record lacks would draw an empty panel: each of SEED_LINES is read back."""
    for chapter, (table, rows, columns, _) in figures.SEED_LINES.items():
        measured = report.recorded(chapter, "glyphs2")[table]
        assert set(rows) <= set(measured), (chapter, set(rows) - set(measured))
        assert all(set(columns) <= set(measured[row]) for row in rows), chapter


def test_the_solver_picture_compares_one_digit_with_the_rest_of_the_batch(kept):
    pixels, members = figures.digit_batch(0, per_class=3)
    assert len(members) == 30 and sorted(np.bincount(pixels.labels[members])) == [3] * 10
    fig, converged = figures.sinkhorn_solvers(pixels, members, digit=8)
    words = " ".join([t.get_text() for t in fig.texts] + [ax.get_title() for ax in fig.axes])
    assert "digit 8 (3 images) vs the rest (27)" in words
    assert np.isfinite(converged) and converged > 0  # S_eps of two different point sets


def test_a_missing_noisy_row_is_said_not_drawn(kept, capsys):
    assert figures.noisy_embeddings({}, _splits(), seed=0) is None
    assert "did not run the L_Trip rows under 30% symmetric noise" in capsys.readouterr().out
    assert kept == []


def test_the_similarity_picture_shows_only_the_runs_that_exist(kept):
    clean = "clean"
    table1 = {(dcdl.label("trip"), clean): _runs(), (dcdl.label("trip", "W"), clean): _runs(seed=3)}
    shown = figures.clean_similarities(table1, {}, "trip", ["L", "W"], np.arange(40) % 4, seed=0)
    assert list(shown) == [dcdl.label("trip"), dcdl.label("trip", "W")]  # no untrained row, no L^L row
    assert kept == ["similarity histograms, clean"]


def test_the_reconstruction_picture_says_why_it_cannot_draw(capsys):
    assert figures.reconstructions(SimpleNamespace(state=None), None, 8) is None
    assert figures.reconstructions(SimpleNamespace(state=SimpleNamespace(decoder=None)), None, 8) is None
    out = capsys.readouterr().out
    assert "keep no model" in out and "gamma = 0" in out


def test_false_negative_lines_word_each_methods_rate(monkeypatch):
    assert "keep no model" in clustering.false_negative_lines(SimpleNamespace(state=None), None, 8)[0]
    rates = {"k-means": 0.25, "CBSwR's clusters": 0.031, "batches": 20}
    monkeypatch.setattr(clustering, "batch_false_negatives", lambda *a, **k: rates)
    lines = clustering.false_negative_lines(SimpleNamespace(state=object()), None, 64)
    assert len(lines) == 2 and "25.0 %" in lines[0] and " 3.1 %" in lines[1]
    assert all(line.endswith("(20 batches of 64)") for line in lines)


def test_the_compact_layouts_score_the_simplex_and_the_two_blobs_alike():
    """The chapter's finding, read from the printed lines: L^W cannot tell ten classes at a simplex's vertices
    from two antipodal blobs (both centre sums are zero), and scores classes at random directions worse."""
    scores = {line[:12].strip(): float(re.search(r"L\^W\s+([-+\d.]+)", line)[1]) for line in dcdl.compact_lines()}
    assert set(scores) == {"apart", "simplex", "merged pairs", "two blobs"}
    assert scores["simplex"] == pytest.approx(scores["two blobs"], rel=0.02)  # the classes' spread: 1% apart
    assert scores["apart"] > scores["simplex"] + 0.5


def test_the_paper_gain_lines_are_the_quoted_gains():
    gains = ecaml.paper_gains("R@1")
    lines = ecaml.paper_gain_lines("R@1")
    assert len(lines) == len({d for d, _ in gains})
    read = {(line.split(":")[0].strip(), loss): float(g)
            for line in lines for loss, g in re.findall(r"([\w-]+(?: [\w-]+)*?) ([-+][\d.]+)", line.split(":", 1)[1])}
    assert read == pytest.approx({k: round(v, 1) for k, v in gains.items()}, abs=0.051)


def test_even_odd_splits_train_on_parity_and_keep_the_digits():
    cfg = {"even_odd_dataset": "digits", "even_odd_options": {}}
    parity = eps.even_odd_splits(cfg, seed=0)
    assert set(np.unique(parity.train.labels)) == {0, 1}
    clean = np.asarray(parity.train.extras["clean"])
    assert set(np.unique(clean)) == set(range(6)) and (np.asarray(parity.train.labels) == clean % 2).all()
    assert set(np.unique(parity.test.labels)) == {6, 7, 8, 9}


def test_subcluster_splits_hold_four_classes_of_three_modes():
    splits = eps.subcluster_splits(seed=0)
    assert isinstance(splits, Splits)
    labels = np.concatenate([np.asarray(splits.train.labels), np.asarray(splits.test.labels)])
    assert np.bincount(labels).tolist() == [300] * 4  # 3 modes x 100 samples a class
    assert set(np.unique(np.asarray(splits.test.extras["modes"]) // 4)) <= {0, 1, 2}


def test_the_letters_table_needs_letters(capsys):
    start = SimpleNamespace(cfg={"dataset": "glyphs"}, seeds=[0])
    assert eps.letters_table(start, SimpleNamespace(test=SimpleNamespace(extras={})), {}) is None
    assert "need DATASET = 'omniglot': glyphs has none" in capsys.readouterr().out


def test_the_findings_box_reads_this_kernels_run_when_given_its_settings(monkeypatch):
    seen = []
    monkeypatch.setattr(findings.records, "session_run", lambda chapter: {"chapter": chapter})
    monkeypatch.setattr(findings, "scale_frames", lambda chapter, cfg, session, results: seen.append(session))
    monkeypatch.setattr("IPython.display.display", lambda *a: None)
    findings.show("eps", {"profile": "smoke"})
    findings.show("eps")
    assert seen == [{"chapter": "eps"}, None]  # without settings, no session run stands in


def test_the_bench_reading_says_how_to_run_what_is_not_recorded(monkeypatch, capsys):
    monkeypatch.setattr(report, "recorded", lambda *a, **k: {})
    assert figures.fashion_reading({"dataset": "fashion-mnist"}) == {}
    assert "not run yet: dml-tutorial sweep data/sweeps/bench-fashion.yaml" in capsys.readouterr().out
