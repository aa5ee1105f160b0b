"""Results as data: what a notebook records, the run files, how seeds merge, and the committed "results at scale"
pages, which must be exactly what the committed run files give."""

import json
import subprocess

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import pytest
import torch
import yaml
from helpers import ROOT, verdict_lines

from dml_tutorial import claims, evidence, plots, report, tables
from dml_tutorial.chapters import chapters
from dml_tutorial.profiles import CHAPTERS
from dml_tutorial.settings import ECAMLSettings, Settings

CFG = Settings(profile="full", dataset="cifar10", model="vgg9", epochs=100, seen=(0, 1))


def _run(seeds, values, date, epochs=100, chapter="dcdl", device="cuda: NVIDIA H100", command=None):
    return {"chapter": chapter, "parameters": {"SEED": seeds[0]}, "profile": "full",
            "settings": {**CFG, "epochs": epochs}, "seeds": seeds, "device": device, "version": "0.1.0",
            "commit": "a" * 40, "date": date, "command": command or f"dml-tutorial run {chapter} -p SEED {seeds[0]}",
            "seconds": 3600.0, "tables": [{"table": "Table 1", "seeds": seeds,
                                           "measured": {"L_Trip": {"accuracy": values}},
                                           "paper": {"L_Trip": {"accuracy": 91.0}}}]}


def test_record_shows_the_table_and_writes_nothing_outside_the_cli(monkeypatch, tmp_path):
    monkeypatch.delenv(report.ENV, raising=False)
    monkeypatch.chdir(tmp_path)
    measured = {"a": {"R@1": [0.5, 0.7]}}
    shown = report.record("T", measured, {"a": {"R@1": 61.0}}, cfg=CFG, seeds=[0, 1], device="cpu")
    pd.testing.assert_frame_equal(shown.data, plots.results_table(measured, {"a": {"R@1": 61.0}}))
    assert list(tmp_path.iterdir()) == []


def test_record_appends_one_value_per_seed_with_json_keys(monkeypatch, tmp_path):
    path = tmp_path / "tables.jsonl"
    monkeypatch.setenv(report.ENV, str(path))
    report.record("T1", {("L", "clean"): {0.1: np.array([0.25, 0.5])}}, cfg=CFG, seeds=[3, 4], device="cpu")
    report.record("T2", {"r": {"R@1": [np.float32(0.75)]}}, {"r": {"R@1": 80.0}}, cfg=CFG, seeds=[3], device="cpu")
    first, second = (json.loads(line) for line in path.read_text().splitlines())
    assert first["table"] == "T1" and first["seeds"] == [3, 4] and first["paper"] == {}
    assert first["measured"] == {"('L', 'clean')": {"0.1": [0.25, 0.5]}}
    assert second["measured"] == {"r": {"R@1": [0.75]}} and second["paper"] == {"r": {"R@1": 80.0}}
    assert first["settings"]["epochs"] == 100 and first["device"].startswith("cpu: ")


def test_record_keeps_the_per_loss_settings(monkeypatch, tmp_path):
    """A loss's own settings (a dict, e.g. N-pair's scale) made the numbers: the run file must name them."""
    path = tmp_path / "tables.jsonl"
    monkeypatch.setenv(report.ENV, str(path))
    cfg = ECAMLSettings(**{**CFG.to_dict(), "local_options": {"npair": {"scale": 10.0}},
                           "dataset_options": {"n_classes": 300}})
    report.record("T", {"r": {"R@1": [0.5]}}, cfg=cfg, seeds=[0], device="cpu")
    settings = json.loads(path.read_text())["settings"]
    assert settings["local_options"] == {"npair": {"scale": 10.0}} and settings["dataset_options"] == {"n_classes": 300}


def test_a_table_the_profile_leaves_out_is_announced_and_not_recorded(monkeypatch, tmp_path, capsys):
    path = tmp_path / "tables.jsonl"
    monkeypatch.setenv(report.ENV, str(path))
    assert report.record("Table 2", {}, {"a": {"R@1": 61.0}}, cfg=CFG, seeds=[0], device="cpu") is None
    assert capsys.readouterr().out == "Table 2: not part of the full profile\n"
    assert not path.exists()


def test_run_file_describes_the_run(tmp_path):
    recorded = tmp_path / "tables.jsonl"
    recorded.write_text(json.dumps({"table": "T", "seeds": [1], "device": "cpu: x", "settings": CFG.to_dict(),
                                    "measured": {"r": {"m": [0.5]}}, "paper": {}}) + "\n")
    run = report.run_file("dcdl", {"SEED": 1}, recorded, "dml-tutorial run dcdl -p SEED 1", 12.34)
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True, check=True).stdout.strip()
    assert run["commit"].removesuffix("-dirty") == head
    assert (run["chapter"], run["profile"], run["seeds"], run["device"]) == ("dcdl", "full", [1], "cpu: x")
    assert run["parameters"] == {"SEED": 1} and run["seconds"] == 12.3 and run["settings"]["dataset"] == "cifar10"
    assert run["version"] and run["date"][:4].isdigit() and run["tables"][0]["measured"] == {"r": {"m": [0.5]}}
    empty = report.run_file("dcdl", {}, tmp_path / "missing.jsonl", "cmd", 1.0)
    assert empty["tables"] == [] and empty["profile"] is None
    with recorded.open("a") as f:  # a later table with more seeds (a search on one seed, then the bench on three)
        f.write(json.dumps({"table": "U", "seeds": [0, 1, 2], "device": "cpu: x", "settings": CFG.to_dict(),
                            "measured": {"r": {"m": [0.1, 0.2, 0.3]}}, "paper": {}}) + "\n")
    both = report.run_file("dcdl", {}, recorded, "cmd", 1.0)
    assert both["seeds"] == [0, 1, 2] and [t["seeds"] for t in both["tables"]] == [[1], [0, 1, 2]]
    page = "\n".join(report._section(("full", "cifar10", "vgg9", 1), [both]))
    assert "seeds 0, 1, 2" in page and "mean ± std over seeds 1." in page and "over seeds 0, 1, 2." in page
    assert "every sitting" not in page  # no run recorded its cache's trainings
    resumed = {**both, "trained_seconds": 5400.0, "trainings": 12}  # a sweep point resumed over sittings
    page = "\n".join(report._section(("full", "cifar10", "vgg9", 1), [both, resumed]))
    assert "- hours of training, every sitting: 1.50, 12 trainings (1 of the 2 runs recorded it)" in page


def test_a_run_file_names_the_start_its_runs_loaded(tmp_path, monkeypatch):
    from dml_tutorial import data, pretrain

    monkeypatch.setattr(data, "DATA_ROOT", tmp_path)
    recorded = tmp_path / "tables.jsonl"
    recorded.write_text(json.dumps({"table": "T", "seeds": [0], "device": "cpu", "settings": {**CFG, "start": "glyphs2"},
                                    "measured": {}, "paper": {}}) + "\n")
    assert report.run_file("cbswr", {}, recorded, "cmd", 1.0)["start_sha256"] is None  # not built here
    state = {"trunk.w": torch.arange(6.0).reshape(2, 3)}
    record = pretrain.start_paths("glyphs2")[1]
    record.parent.mkdir()
    record.write_text(json.dumps({"sha256": pretrain.weights_sha256(state)}))
    sha = report.run_file("cbswr", {}, recorded, "cmd", 1.0)["start_sha256"]
    assert len(sha) == 64 and sha == pretrain.weights_sha256({"trunk.w": torch.arange(6.0).reshape(2, 3)})
    assert sha != pretrain.weights_sha256({"trunk.w": torch.arange(6.0).reshape(3, 2)})
    assert "start_sha256" not in report.run_file("dcdl", {}, recorded.with_name("none.jsonl"), "cmd", 1.0)
    older = {**report.run_file("cbswr", {}, recorded, "cmd", 1.0)}
    del older["start_sha256"]  # a run file made before run files named their start
    page = "\n".join(report._section(("glyphs2", "glyphs", "glyphnet", 1), [older, report.run_file(
        "cbswr", {}, recorded, "cmd", 1.0)]))
    assert f"- pretrained start: glyphs2, SHA-256 of its weights {sha[:12]}, not recorded (" in page
    scratch = report.run_file("dcdl", {}, recorded.with_name("none.jsonl"), "cmd", 1.0)
    assert "pretrained start" not in "\n".join(report._section(("full", "cifar10", "vgg9", 1), [scratch]))


def test_a_run_file_names_its_seeds_own_start_where_each_seed_has_one(tmp_path, monkeypatch):
    """Issue #86: with a start made once per seed, the run file records the SHA-256 of its seed's start (of each
    seed's, by seed, where it ran several), and the results page lists them all."""
    from dml_tutorial import data, pretrain

    monkeypatch.setattr(data, "DATA_ROOT", tmp_path)
    shas = {}
    for seed in (0, 1):
        record = pretrain.start_paths(pretrain.resolved("glyphs2-seeded", seed)[0])[1]
        record.parent.mkdir(exist_ok=True)
        shas[seed] = pretrain.weights_sha256({"trunk.w": torch.full((2,), float(seed))})
        record.write_text(json.dumps({"sha256": shas[seed]}))
    recorded = tmp_path / "tables.jsonl"
    settings = {**CFG, "start": "glyphs2-seeded"}
    recorded.write_text(json.dumps({"table": "T", "seeds": [1], "device": "cpu", "settings": settings,
                                    "measured": {}, "paper": {}}) + "\n")
    one = report.run_file("cbswr", {}, recorded, "cmd", 1.0)
    assert one["start_sha256"] == shas[1]
    assert report.start_of(settings, [0, 1]) == {"start_sha256": {"0": shas[0], "1": shas[1]}}
    both = {**one, "start_sha256": {"0": shas[0], "1": shas[1]}}
    page = "\n".join(report._section(("glyphs2", "glyphs", "glyphnet", 1), [one, both]))
    assert f"SHA-256 of its weights {', '.join(sorted(s[:12] for s in shas.values()))} (" in page


def test_seeds_merge_and_a_rerun_replaces_its_seed():
    runs = [_run([0], [0.80], "2026-01-01"), _run([1], [0.90], "2026-01-02"), _run([0], [0.70], "2026-01-03")]
    measured, paper = report.merge_seeds(runs)["Table 1"]
    assert measured == {"L_Trip": {"accuracy": [0.70, 0.90]}}
    assert paper == {"L_Trip": {"accuracy": 91.0}}


def test_a_row_some_seeds_lack_says_its_seeds():
    """The bench's search walks each seed its own way: a trial only seed 1 ran is a row over seed 1 alone, and the
    page says so instead of showing its one value as the table's mean."""
    runs = [_run([0], [0.80], "2026-01-01"), _run([1], [0.90], "2026-01-02"), _run([2], [0.85], "2026-01-03")]
    runs[1]["tables"][0]["measured"]["walked"] = {"accuracy": [0.5]}
    assert report.row_seeds(runs, "Table 1") == {"L_Trip": [0, 1, 2], "walked": [1]}
    assert report.merge_seeds(runs)["Table 1"][0]["walked"] == {"accuracy": [0.5]}  # one value: seed 1's
    page = report.report_page("dcdl", chapters()["dcdl"], runs)
    assert "over seeds 0, 1, 2; paper columns quoted from the paper; these rows over fewer seeds: walked (seeds 1)." in page
    assert "these rows over fewer seeds" not in report.report_page("dcdl", chapters()["dcdl"], runs[::2])


def test_runs_with_other_settings_are_not_merged():
    groups = report.group([_run([0], [0.8], "d1"), _run([1], [0.9], "d2"), _run([0], [0.5], "d3", epochs=10)])
    assert sorted(len(g) for g in groups.values()) == [1, 2]


def test_page_says_when_a_chapter_has_no_full_scale_run_and_what_one_needs(tmp_path):
    notebook = chapters()["dcdl"]
    page = report.report_page("dcdl", notebook, [])
    assert "Not run at full scale yet" in page and page.startswith("## Sinkhorn DCDL")
    # the full profile's download, its size from torchvision's list (170,498,071 bytes), and the sweep to run
    assert "cifar10 (torchvision), 170 MB" in page and "`dml-tutorial sweep data/sweeps/dcdl.yaml`" in page
    smoke = _run([0], [0.5], "2026-01-01")
    smoke["settings"]["profile"] = "smoke"
    assert "Not run at full scale yet" in report.report_page("dcdl", notebook, [smoke])


def test_a_page_points_to_the_chapter_for_the_runs_it_shows_itself():
    fashion = _run([0], [0.5], "2026-01-01")
    fashion["settings"]["profile"] = fashion["profile"] = "fashion"
    page = report.report_page("dcdl", chapters()["dcdl"], [fashion, _run([1], [0.9], "2026-01-02")])
    assert "`fashion`: 1 run(s)" in page and "{doc}`/notebooks/03_dcdl`" in page
    assert "\n### full profile" in page and "fashion profile" not in page  # the full run only, in full
    assert "\n#### " in page  # its tables one level below


def test_page_shows_mean_and_std_over_seeds_beside_the_paper():
    runs = [_run([s], [v], f"2026-01-0{s + 1}") for s, v in enumerate([0.80, 0.90, 0.85])]
    page = report.report_page("dcdl", chapters()["dcdl"], runs)
    assert "Not run at full scale yet" not in page and "3 full-profile run(s)" in page
    values = np.array([80.0, 90.0, 85.0])
    expected = f"{values.mean():.1f} ± {np.std(values, ddof=1):.1f}"  # computed here, not by the package
    trip = r"$L_{\text{Trip}}$"  # the row "L_Trip", in the page's math
    row = next(line for line in page.splitlines() if line.startswith(f"| {trip} |"))
    assert row == f"| {trip} | 91.0 | {expected} |"
    for needle in ("cuda: NVIDIA H100", "dml-tutorial run dcdl -p SEED 2", "seeds 0, 1, 2", "100 epochs"):
        assert needle in page


def test_markdown_table_has_one_cell_per_column():
    frame = plots.results_table({"a": {"R@1": [0.5], "NMI": [0.25]}, "b": {"R@1": [0.75]}},
                                {"a": {"R@1": 40.0}})
    lines = report.markdown_table(frame).splitlines()
    assert len(lines) == 2 + 2 and len({line.count("|") for line in lines}) == 1
    assert lines[0] == "| | R@1 paper | R@1 measured | NMI measured |"


def test_committed_pages_are_what_the_committed_results_give(tmp_path):
    """The report is regenerated from data/results/ here; a stale or hand-edited page fails."""
    written = report.write_report(report.RESULTS, tmp_path)
    assert {p.stem for p in written} == {report.SCALE_PAGE, "verdicts", "registry", "summary"}
    scale = (tmp_path / f"{report.SCALE_PAGE}.md").read_text()
    assert scale.count("\n## ") == len(CHAPTERS)  # one section per chapter, on one page
    for page in written:
        committed = report.PAGES / page.name
        assert committed.exists(), f"run `dml-tutorial report`: {committed} is missing"
        assert committed.read_text() == page.read_text(), f"{committed} is stale: run `dml-tutorial report`"


def test_every_results_page_is_in_the_book_and_no_stale_one_is_left():
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text())
    files = {c["file"] for part in toc["parts"] for c in part["chapters"]}
    assert f"book/results/{report.SCALE_PAGE}" in files and "book/results/registry" in files
    pages = {p.stem for p in (ROOT / "book" / "results").glob("*.md")}
    assert pages == {report.SCALE_PAGE, "verdicts", "registry", "summary"}, "a page no `dml-tutorial report` writes"
    assert "book/results/summary" in files


def test_every_committed_run_file_is_complete():
    keys = {"chapter", "parameters", "profile", "settings", "seeds", "device", "version", "commit", "date",
            "command", "seconds", "tables"}
    for path in report.RESULTS.glob("*/*.json"):
        run = json.loads(path.read_text())
        assert keys <= set(run), f"{path}: missing {keys - set(run)}"
        assert run["chapter"] == path.parent.name


@pytest.mark.parametrize("chapter", sorted(CHAPTERS))
def test_each_chapter_has_a_sweep_file(chapter):
    from dml_tutorial.cli import load_grid

    spec = load_grid(ROOT / "data" / "sweeps" / f"{chapter}.yaml")
    assert spec["chapter"] == chapter and spec["profile"] == "full"


@pytest.mark.parametrize("chapter", sorted(c for c, p in CHAPTERS.items() if "fashion" in p))
def test_each_fashion_profile_has_a_sweep_file_and_its_results_are_whole(chapter):
    from dml_tutorial.cli import load_grid, sweep_points

    spec = load_grid(ROOT / "data" / "sweeps" / f"{chapter}-fashion.yaml")
    assert spec["chapter"] == chapter and spec["profile"] == "fashion"
    for run_id, _ in sweep_points(spec):
        path = report.RESULTS / chapter / f"{run_id}.json"
        if path.exists():  # not every chapter has been run yet; the page and the verdict table say which
            run = json.loads(path.read_text())
            # at least five seeds behind the main tables (a search on a validation split may use fewer)
            assert max(len(t["seeds"]) for t in run["tables"]) >= 5 and run["settings"]["dataset"] == "fashion_mnist"
            assert all((path.parent / f).exists() for f in run.get("figures", [])), "commit the run's figures"


PENDING = sorted((ROOT / "data" / "pending").glob("*/*.json"))


@pytest.mark.parametrize("path", PENDING, ids=[f"{p.parent.name}/{p.stem}" for p in PENDING])
def test_a_pending_run_is_a_sweep_point_made_from_a_clean_commit_of_this_history(path):
    """data/pending/ holds a sweep that spans sittings (data/README.md): each file must be able to land as it is."""
    from dml_tutorial.cli import load_grid, sweep_points

    run = json.loads(path.read_text())
    assert run["chapter"] == path.parent.name and not run["commit"].endswith("-dirty")
    ancestor = subprocess.run(["git", "-C", str(ROOT), "merge-base", "--is-ancestor", run["commit"], "HEAD"],
                              check=False)
    assert ancestor.returncode == 0, f"{run['commit']} is not in this checkout's history"
    points = {rid for grid in (ROOT / "data" / "sweeps").glob(f"{run['chapter']}*.yaml")
              for rid, _ in sweep_points(load_grid(grid))}
    assert path.stem in points, f"{path.stem} is no point of a data/sweeps/{run['chapter']}*.yaml grid"
    assert all((path.parent / f).exists() for f in run.get("figures", [])), "commit the run's figures"


def test_a_recorded_run_reaches_the_page_with_paper_numbers_as_quoted(monkeypatch, tmp_path):
    """record -> run file -> page, the path `dml-tutorial run` then `report` takes."""
    recorded = tmp_path / "tables.jsonl"
    monkeypatch.setenv(report.ENV, str(recorded))
    report.record("Table 1", {"L_Trip": {"accuracy": [0.8, 0.9]}}, {"L_Trip": {"accuracy": 91.0}}, cfg=CFG,
                  seeds=[0, 1], device="cpu")
    run = report.run_file("dcdl", {}, recorded, "dml-tutorial run dcdl --profile full", 1.0)
    page = report.report_page("dcdl", chapters()["dcdl"], [json.loads(json.dumps(run))])
    assert r"| $L_{\text{Trip}}$ | 91.0 | 85.0 ± 7.1 |" in page.splitlines()


def test_figures_are_saved_only_when_a_run_asks_for_them(monkeypatch, tmp_path):
    import matplotlib.pyplot as plt

    fig, _ = plt.subplots()
    recorded = tmp_path / "tables.jsonl"
    monkeypatch.setenv(report.ENV, str(recorded))
    monkeypatch.delenv(report.FIGURES_ENV, raising=False)
    assert report.record_figure(fig, "a b") is fig and not (tmp_path / "tables.figures").exists()
    monkeypatch.setenv(report.FIGURES_ENV, "1")
    report.record_figure(fig, "unseen embeddings, sym 0.3")
    saved = list((tmp_path / "tables.figures").iterdir())
    assert [p.name for p in saved] == ["unseen-embeddings--sym-0-3.png"]
    assert saved[0].read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    plt.close(fig)


def _table(page: str) -> tuple[list[str], list[list[str]]]:
    """The verdict table's column names and its rows' cells."""
    split = [[c.strip() for c in line.strip().strip("|").split("|")] for line in verdict_lines(page)]
    return split[0], split[1:]


def test_the_verdict_cards_on_a_phone_carry_their_columns_names():
    """On a phone the verdict table is one card per claim: every cell from the third column on carries its
    column's name in a span that book.css shows only there, so the names follow whatever columns the table has."""
    notebooks = {c: nb for c, nb in chapters().items() if c in ("dcdl", "cbswr")}
    page = report.verdicts_page(report.load_runs(), notebooks)
    assert ":::{container} verdict-cards" in page and page.index(":::{container}") < page.index("| chapter |")
    columns, rows = _table(page)
    assert rows and len(columns) > 3
    for cells in rows:
        assert len(cells) == len(columns)
        for name, cell in zip(columns[2:], cells[2:], strict=True):
            assert cell.startswith(f'<span class="card-label">{name}: </span>'), (name, cell)
    css = (ROOT / "book" / "_css" / "book.css").read_text()
    assert ".verdict-cards .card-label { display: none; }" in css
    assert ".verdict-cards .card-label { display: inline;" in css.split("@media (max-width: 640px)")[1]


def test_a_scale_without_any_answer_is_a_sentence_not_a_column():
    """No run at all: no column (the smoke records give numbers, never words, and have none); every other scale is
    one line under the table. With CBSwR's test bed II runs, that column returns and DCDL, with none there, gets a dash."""
    notebooks = {c: nb for c, nb in chapters().items() if c in ("dcdl", "cbswr")}
    page = report.verdicts_page([], notebooks)
    columns, rows = _table(page)
    assert columns[3:] == []  # the smoke records check the pipeline: no word, no column
    for head in ("Fashion-MNIST", "glyphs", "test bed II", "paper's data"):
        assert f"- **{head}**: no chapter has an answer yet" in page
    cbswr = [r for r in report.load_runs() if r["chapter"] == "cbswr" and r["profile"] == "glyphs2"]
    assert cbswr, "the committed test bed II runs of CBSwR"
    page = report.verdicts_page(cbswr, notebooks)
    columns, rows = _table(page)
    assert columns[3:] == ["test bed II"]
    dcdl = [cells for cells in rows if "Sinkhorn DCDL" in cells[0] or cells[0] == ""][:len(claims.CLAIMS["dcdl"])]
    assert all(cells[-1].endswith(f"</span>{report.NO_ANSWER_MARK}") for cells in dcdl)
    assert "- **test bed II** (— in its column): Sinkhorn DCDL: every claim not run yet." in page


def test_recorded_merges_the_seeds_of_one_chapter_and_profile(tmp_path):
    """What a chapter reads of its committed runs: only its own chapter and profile, seeds merged; {} when none."""
    for chapter, profile, seed, value in (("bench", "glyphs", 0, 0.4), ("bench", "glyphs", 1, 0.6),
                                          ("bench", "fashion", 0, 0.1), ("eps", "glyphs", 0, 0.9)):
        folder = tmp_path / chapter
        folder.mkdir(exist_ok=True)
        run = {"chapter": chapter, "profile": profile, "date": f"2026-11-25T0{seed}", "seeds": [seed],
               "settings": {}, "tables": [{"table": "T", "seeds": [seed], "measured": {"A": {"R@1": [value]}},
                                           "paper": {}}]}
        (folder / f"{profile}_seed-{seed}.json").write_text(json.dumps(run))
    assert report.recorded("bench", "glyphs", tmp_path) == {"T": {"A": {"R@1": [0.4, 0.6]}}}
    assert report.recorded("cbswr", "glyphs", tmp_path) == {}


@pytest.mark.parametrize("chapter", sorted(c for c, p in CHAPTERS.items() if "glyphs2" in p))
def test_each_test_bed_ii_profile_has_ten_seeds_of_its_own_split_and_the_start(chapter):
    """Test bed II (issue #50): GlyphNet on unseen characters in unseen faces, from the pretrained start (DCDL from
    scratch, on its closed-set split), ten seeds as ten resumable runs of one seed, each with its own class split,
    its own unseen faces and its own start (issue #86)."""
    from dml_tutorial import profiles
    from dml_tutorial.cli import load_grid, sweep_points

    cfg = profiles.settings(chapter, "glyphs2")
    assert cfg["model"] == "glyphnet" and cfg["dataset"] == "glyphs" and cfg["n_seeds"] == 1
    spec = load_grid(ROOT / "data" / "sweeps" / f"{chapter}-glyphs2.yaml")
    assert spec["chapter"] == chapter and spec["profile"] == "glyphs2" and len(list(sweep_points(spec))) == 10
    if chapter == "dcdl":
        assert cfg["start"] is None and cfg["dataset_options"] == {"n_classes": 300, "vary_faces": True}
    else:
        fewer = {"train_characters": 100} if chapter == "ecaml" else {}  # the papers' CUB/Cars: about 100 classes
        assert cfg["start"] == "glyphs2-seeded" and cfg["dataset_options"] == {
            "unseen_faces": 3, "vary_split": True, "vary_faces": True, **fewer}
    if chapter == "eps":  # NMI+ cannot ask for more clusters per character than its 3 unseen faces x 2 renders
        assert cfg["nmi_plus_factor"] <= 3 * 2


def test_the_summary_counts_the_words_of_the_verdict_table():
    """book/results/summary.md gives, per paper, each claim's word on the deciding scale (test bed II) with its
    gain, and counts the words of the other scales: regenerated from the committed runs, each is read back here
    from the two pages and compared."""
    import re as regex

    from helpers import verdict_cells

    summary = (report.PAGES / "summary.md").read_text()
    table = verdict_cells((report.PAGES / "verdicts.md").read_text())
    names = {plots.label_tex(c.text): chapter for chapter, cs in claims.CLAIMS.items() for c in cs}
    checked = 0
    for chapter in claims.CLAIMS:
        section = summary.split(f"## {claims.NAMES[chapter]}\n", 1)[1].split("\n## ", 1)[0]
        for claim in claims.CLAIMS[chapter]:  # the deciding scale: claim by claim, as the verdict table words it
            cell = table.get((plots.label_tex(claim.text), report.DECIDING))
            word = next((w for w in evidence.WORDS if cell and cell.startswith(w)), None)
            if word:
                line = next(x for x in section.splitlines() if x.startswith(f"- {plots.label_tex(claim.text)}: **"))
                assert line.split("**")[1].split(",")[0] == word and cell.split("(")[1].split(",")[0] in line
                checked += 1
        for profile, scale in report.SUMMARY_SCALES.items():
            if profile == report.DECIDING:
                continue
            said = regex.search(rf"on {regex.escape(scale)}: ([^;.]*)", section)
            cells = [cell for (claim, p), cell in table.items() if p == profile and names.get(claim) == chapter]
            if cells and all(cell == report.NO_ANSWER_MARK for cell in cells):  # said once under the table
                counted = regex.findall(r"(\d+) \*([a-z ]+)\*", said.group(1)) if said else []
                assert {w for _, w in counted} <= {"not testable here"}, (chapter, profile)
                assert sum(int(n) for n, _ in counted) <= len(cells)
                continue
            words = [w for cell in cells for w in evidence.WORDS if cell.startswith(w)]
            if not words:
                assert said is None or "no word yet" in said.group(1), (chapter, profile)
                continue
            counted = {w: int(n) for n, w in regex.findall(r"(\d+) \*([a-z ]+)\*", said.group(1))}
            assert counted == {w: words.count(w) for w in set(words)}, (chapter, profile)
            checked += 1
    assert checked >= 5


def test_seed_lines_and_figure_show_a_recorded_run_in_view(tmp_path, monkeypatch):
    """A chapter's picture of a real-data run: a recorded table drawn seed by seed, and a recorded figure of the
    first seed's run; a table or figure not recorded says so instead of raising."""
    import IPython.display

    shown = []
    monkeypatch.setattr(IPython.display, "display", lambda obj: shown.append(obj))
    folder = tmp_path / "dcdl"
    folder.mkdir()
    for seed, value in ((1, 0.6), (0, 0.5)):
        run = {**_run([seed], [value], f"2026-12-0{seed + 1}"), "profile": "glyphs2",
               "figures": [f"glyphs2_seed-{seed}.figures/curves.png"]}
        (folder / f"glyphs2_seed-{seed}.json").write_text(json.dumps(run))
        (folder / f"glyphs2_seed-{seed}.figures").mkdir()
        plt.imsave(folder / f"glyphs2_seed-{seed}.figures" / "curves.png", np.full((4, 4), seed, dtype=float))
    fig = report.seed_lines("dcdl", "Table 1", ["L_Trip"], ["accuracy"], results=tmp_path)
    first, *_, mean = fig.axes[0].lines  # seeds in the runs' order, then their mean
    assert np.allclose(first.get_ydata(), [50.0]) and np.allclose(mean.get_ydata(), [55.0])
    assert "10 seeds" not in fig._suptitle.get_text() and "2 seeds" in fig._suptitle.get_text()
    plt.close(fig)
    report.figure("dcdl", "curves", results=tmp_path)
    assert shown[-1].filename == str(folder / "glyphs2_seed-0.figures" / "curves.png")  # the first seed's
    assert report.seed_lines("dcdl", "Table 9", ["L_Trip"], ["accuracy"], results=tmp_path) is None
    report.figure("dcdl", "nothing", results=tmp_path)
    assert [s.data for s in shown[-2:]] == ["*No glyphs2 run of dcdl has recorded the table 'Table 9' yet.*",
                                            "*No glyphs2 run of dcdl has recorded the figure 'nothing' yet.*"]


def test_seed_panels_draw_each_panel_its_own_rows_of_one_column(tmp_path):
    """ECAML's picture: a panel per loss, each with its own rows (the loss alone, with EC), one column; the seeds'
    lines in the runs' seed order and their mean, the panel's ticks the labels given, not the recorded names."""
    folder = tmp_path / "ecaml"
    folder.mkdir()
    by_seed = {0: {"Triplet": 0.70, "EC(Tri)": 0.60, "N-Pair": 0.50, "EC(N-Pair)": 0.55},
               1: {"Triplet": 0.80, "EC(Tri)": 0.80, "N-Pair": 0.40, "EC(N-Pair)": 0.65}}
    for seed, rows in by_seed.items():
        table = {"table": "main", "seeds": [seed], "measured": {r: {"R@1": [v], "NMI": [0.0]} for r, v in rows.items()},
                 "paper": {}}
        run = {**_run([seed], [0.5], f"2026-12-0{seed + 1}", chapter="ecaml"), "profile": "glyphs2", "tables": [table]}
        (folder / f"glyphs2_seed-{seed}.json").write_text(json.dumps(run))
    panels = {"Triplet": {"alone": "Triplet", "with EC": "EC(Tri)"}, "N-Pair": {"alone": "N-Pair", "with EC": "EC(N-Pair)"}}
    fig = report.seed_panels("ecaml", "main", panels, "R@1", results=tmp_path)
    assert [ax.get_title() for ax in fig.axes[:2]] == ["Triplet", "N-Pair"]
    for ax, (alone, with_ec) in zip(fig.axes, (("Triplet", "EC(Tri)"), ("N-Pair", "EC(N-Pair)"))):
        *seeds, mean = ax.lines
        assert np.allclose([line.get_ydata() for line in seeds],
                           [[100 * by_seed[s][alone], 100 * by_seed[s][with_ec]] for s in (0, 1)])
        assert list(mean.get_ydata()) == pytest.approx([100 * np.mean([by_seed[s][r] for s in (0, 1)])
                                                        for r in (alone, with_ec)])
        assert [t.get_text() for t in ax.get_xticklabels()] == ["alone", "with EC"]
    plt.close(fig)


def test_a_tree_with_chapters_re_executed_in_place_is_still_the_commit(tmp_path):
    """`dml-tutorial run a` then `run b`: b's record must name the commit, not ``-dirty`` because a's outputs
    changed; an edited cell source, or any other file, makes the tree dirty."""

    def git(*args):
        return subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", *args], cwd=tmp_path,
                              check=True, capture_output=True, text=True).stdout.strip()

    (tmp_path / "notebooks").mkdir()
    notebook = {"cells": [{"cell_type": "code", "source": ["print(1)"], "outputs": [], "metadata": {}}]}
    (tmp_path / "notebooks" / "01_a.ipynb").write_text(json.dumps(notebook))
    (tmp_path / "notebooks" / "01_a.results.json").write_text("{}")
    (tmp_path / "setup.py").write_text("")
    git("init", "-q")
    git("add", ".")
    git("commit", "-qm", "x")
    head = git("rev-parse", "HEAD")
    executed = {"cells": [{**notebook["cells"][0], "outputs": [{"text": "1"}], "execution_count": 1}]}
    (tmp_path / "notebooks" / "01_a.ipynb").write_text(json.dumps(executed))
    (tmp_path / "notebooks" / "01_a.results.json").write_text('{"tables": []}')
    assert report.git_commit(tmp_path) == head
    (tmp_path / "notebooks" / "01_a.ipynb").write_text(json.dumps(
        {"cells": [{**notebook["cells"][0], "source": ["print(2)"]}]}))
    assert report.git_commit(tmp_path) == head + "-dirty"
    (tmp_path / "notebooks" / "01_a.ipynb").write_text(json.dumps(executed))
    (tmp_path / "setup.py").write_text("# changed")
    assert report.git_commit(tmp_path) == head + "-dirty"


def test_record_for_a_start_uses_its_settings_seeds_and_device_and_prints_the_caption_first(monkeypatch, tmp_path,
                                                                                             capsys):
    """report.record_for, the chapters' one way to record a table: report.record with the start's settings, seeds
    (or the seeds it is given) and device, its caption printed above the table."""
    from dml_tutorial import profiles

    path = tmp_path / "tables.jsonl"
    monkeypatch.setenv(report.ENV, str(path))
    start = profiles.begin("eps", "smoke", {"epochs": 2}, seed=5, device="cpu")
    measured = {"r": {"R@1": [0.5, 0.6, 0.7]}}
    shown = report.record_for(start, "T", measured, {"r": {"R@1": 61.0}}, caption="the caption", choices={"head": "linear"})
    report.record_for(start, "T2", {"r": {"R@1": [0.5]}}, seeds=start.seeds[:1])
    assert capsys.readouterr().out == "the caption\n"
    pd.testing.assert_frame_equal(shown.data, plots.results_table(measured, {"r": {"R@1": 61.0}}))
    first, second = (json.loads(line) for line in path.read_text().splitlines())
    assert first["seeds"] == [5, 6, 7] and second["seeds"] == [5] and first["device"].startswith("cpu: ")
    assert first["settings"] == json.loads(json.dumps(start.cfg.to_dict())) and first["choices"] == {"head": "linear"}
    with pytest.raises(ValueError, match="declared table"):  # report.record's own checks still apply
        report.record_for(start, tables.EPS_MAIN.title, measured)


def test_the_summary_gives_the_seeds_its_inconclusive_words_would_need_as_the_verdict_tables_fold_does():
    """Each paper's "How sure": its inconclusive words on test bed II, and the fewest and most seeds they would need
    for a word; read back against the verdict table's folded list of the same cells (both regenerated from the
    committed runs), and worded for one word, for cells on shared data, and for none."""
    import re as regex

    summary = (report.PAGES / "summary.md").read_text()
    folded = (report.PAGES / "verdicts.md").read_text().split("What more seeds would decide", 1)[1]
    needs = {}
    for line in folded.splitlines():
        cells = [c.strip() for c in line.strip("|").split("|")]
        if len(cells) == 5 and cells[2] == "test bed II":
            needs.setdefault(cells[0], []).append(int(cells[4].split()[0]))
    assert needs, "the verdict table folds no test bed II cell"
    for chapter in claims.CLAIMED:
        section = summary.split(f"## {claims.NAMES[chapter]}\n", 1)[1].split("\n## ", 1)[0]
        said = regex.search(r"its (\d+) \*inconclusive\* words on test bed II would need (\d+) to (\d+) seeds", section)
        mine = needs.get(claims.NAMES[chapter])
        assert (said is None) == (mine is None or len(mine) < 2), chapter
        if said:
            assert [int(g) for g in said.groups()] == [len(mine), min(mine), max(mine)], chapter
    row = {"verdict": "inconclusive", "seeds for a word": 14, "data varies": False, "mde": 5.0}
    frame = pd.DataFrame([row, {**row, "verdict": "supported"}])
    assert report._open_words(frame, "test bed II") == (
        "; its one *inconclusive* word on test bed II would need 14 seeds for a word at its seeds' gain and spread; "
        "it comes from seeds that share their data and vary only the training")
    assert report._open_words(frame[frame["verdict"] == "supported"], "test bed II") == ""
    assert report._open_words(None, "test bed II") == ""
