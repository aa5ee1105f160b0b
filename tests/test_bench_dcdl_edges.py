"""benchmarks/bench_dcdl_edges.py: its paired summary on hand-made seeds, the run files it refuses, and a stopped
check resuming where it stopped."""

import json

import pytest
from helpers import load_benchmark

from dml_tutorial import dcdl


@pytest.fixture
def edges():
    return load_benchmark("bench_dcdl_edges")


def seed(chapter, again, lw, epochs):
    """One seed of the short-noisy check as the script writes it (L_Trip and L^L searched again alike), in %."""
    row = {"accuracy": again, "chapter's accuracy": chapter, "search": {"epochs": epochs}}
    return {"L_Trip": row, "L_Trip + L^L": row, "L_Trip + L^W": {"chapter's accuracy": lw},
            "L_Trip + L^W-GeomLoss": {"chapter's accuracy": lw + 1}}


def test_the_summary_pairs_each_seed_and_reads_in_points(edges):
    # searched again - chapter = -1, -2, -3: mean -2, sd 1, t(0.975, 2) = 4.303, half-width 4.303 / sqrt(3) = 2.48;
    # t = -2 / (1 / sqrt(3)) = -3.46 on 2 degrees of freedom: two-sided p = 0.074
    seeds = {"0": seed(35.0, 34.0, 65.0, 4), "1": seed(36.0, 34.0, 66.0, 5), "2": seed(37.0, 34.0, 67.0, 2)}
    out = edges.summary(seeds)
    assert out["L_Trip: searched again against the chapter's"] == \
        "-2.0 points (95% CI -4.5 to +0.5, p = 0.07, 3 seeds)"
    assert out["L_Trip: chosen lengths (epochs)"] == [4, 5, 2]
    assert "L_Trip + L^W: chosen lengths (epochs)" not in out  # not searched again
    # L^W - the baseline searched again = 31, 32, 33 (the same spread, shifted); as the chapter measured it, 30 each
    assert out["L_Trip + L^W against L_Trip"] == ("+32.0 points (95% CI +29.5 to +34.5, p < 0.01, 3 seeds); as the "
                                                  "chapter measured it: +30.0 points (the same in all 3 seeds)")
    assert out["L_Trip + L^W-GeomLoss against L_Trip"].startswith("+33.0 points")
    assert out["L_Trip + L^L against L_Trip"].startswith("+0.0 points (the same in all 3 seeds)")
    assert edges.summary({}) == {}


def write_run(folder, seed_number, tables):
    (folder / "dcdl").mkdir(parents=True, exist_ok=True)
    run = {"chapter": "dcdl", "profile": "glyphs2", "parameters": {"SEED": seed_number}, "date": "2026-11-30",
           "tables": [{"table": name, "measured": measured} for name, measured in tables.items()]}
    (folder / "dcdl" / f"glyphs2_seed-{seed_number}.json").write_text(json.dumps(run))


def test_it_refuses_a_missing_seed_and_a_run_made_without_the_search(edges, tmp_path):
    write_run(tmp_path, 0, {"Tables 1/4: local losses with and without the discrepancy term": {}})
    with pytest.raises(SystemExit, match="made no search"):
        edges.recorded_seed(tmp_path, 0)
    with pytest.raises(SystemExit, match="no dcdl glyphs2 run of seed 1"):
        edges.recorded_seed(tmp_path, 1)
    write_run(tmp_path, 1, {"The rate and length each row trained at": {"L_Trip (sym 0.3)": {}}})
    assert dcdl.CHOICE_TABLE.id in edges.recorded_seed(tmp_path, 1)  # by its id, from the title of an old file


def test_a_seed_already_written_is_kept_and_fresh_runs_it_again(edges, tmp_path, monkeypatch):
    ran = []

    def one_seed(cfg, number, check, rows, tables):
        ran.append((number, tuple(rows)))
        return seed(35.0, 34.0, 65.0, check["epochs"])

    monkeypatch.setattr(edges, "one_seed", one_seed)
    monkeypatch.setattr(edges, "recorded_seed", lambda folder, number: {})
    out = str(tmp_path / "edges.json")
    edges.main(["short-noisy", "--seeds", "0", "--out", out, "--threads", "1"])
    first = json.loads((tmp_path / "edges.json").read_text())["seeds"]["0"]
    assert ran == [(0, ("L_Trip", "L_Trip + L^L"))] and first["commit"] and first["cpu"]
    edges.main(["short-noisy", "--seeds", "0", "1", "--out", out, "--threads", "1"])
    assert [number for number, _ in ran] == [0, 1]  # seed 0 kept
    written = json.loads((tmp_path / "edges.json").read_text())
    assert written["seeds"]["0"] == first and written["summary"]["L_Trip: chosen lengths (epochs)"] == [5, 5]
    edges.main(["short-noisy", "--seeds", "0", "--out", out, "--threads", "1", "--rows", "L_Trip"])  # it has them
    assert len(ran) == 2
    edges.main(["short-noisy", "--seeds", "0", "--out", out, "--threads", "1", "--rows", "L_Trip", "--fresh"])
    assert ran[2:] == [(0, ("L_Trip",))]


def test_rows_named_later_are_added_to_the_kept_seeds_and_paired_only_where_present(edges, tmp_path, monkeypatch):
    ran = []

    def one_seed(cfg, number, check, rows, tables):  # as the script's: only the rows asked for are trained
        ran.append((number, tuple(rows)))
        full = seed(35.0 + number, 34.0, 65.0 + number, check["epochs"])
        return {row: full[row] if row in rows else {"chapter's accuracy": full[row]["chapter's accuracy"]}
                for row in full}

    monkeypatch.setattr(edges, "one_seed", one_seed)
    monkeypatch.setattr(edges, "recorded_seed", lambda folder, number: {})
    out, target = str(tmp_path / "edges.json"), tmp_path / "edges.json"
    edges.main(["short-noisy", "--seeds", "0", "1", "--out", out, "--threads", "1", "--rows", "L_Trip"])
    before = json.loads(target.read_text())
    assert before["rows"] == ["L_Trip"] and "L_Trip + L^L: searched again against the chapter's" not in \
        before["summary"]
    edges.main(["short-noisy", "--seeds", "0", "--out", out, "--threads", "1", "--rows", "L_Trip + L^L"])
    assert ran[2:] == [(0, ("L_Trip + L^L",))]  # L_Trip of seed 0 kept; seed 1 not asked for
    after = json.loads(target.read_text())
    assert after["rows"] == ["L_Trip", "L_Trip + L^L"]
    zero = after["seeds"]["0"]
    assert zero["L_Trip"] == before["seeds"]["0"]["L_Trip"] and zero["commit"] == before["seeds"]["0"]["commit"]
    assert zero["L_Trip + L^L"]["accuracy"] == 34.0 and zero["L_Trip + L^L"]["added"]["commit"]
    # L_Trip holds two seeds; L^L only seed 0, and its comparison with L_Trip pairs seed 0 alone (both 34 searched,
    # both 35 as the chapter measured them)
    assert after["summary"]["L_Trip: searched again against the chapter's"].endswith("2 seeds)")
    assert after["summary"]["L_Trip + L^L: chosen lengths (epochs)"] == [5]
    one = "+0.0 points (95% CI +0.0 to +0.0, 1 seed)"
    assert after["summary"]["L_Trip + L^L against L_Trip"] == f"{one}; as the chapter measured it: {one}"
    # a row not named by the file pairs every seed that holds L_Trip: L^W - searched L_Trip = 31 and 32
    assert "2 seeds" in after["summary"]["L_Trip + L^W against L_Trip"]


def test_each_seed_records_the_commit_the_check_started_from(edges, tmp_path, monkeypatch):
    # the results file is tracked: once the first seed is written the tree reads dirty, yet nothing else changed
    states = iter(["abc", "abc-dirty", "abc-dirty"])
    monkeypatch.setattr(edges.report, "git_commit", lambda: next(states))
    monkeypatch.setattr(edges, "one_seed", lambda cfg, number, check, rows, tables: seed(35.0, 34.0, 65.0, 5))
    monkeypatch.setattr(edges, "recorded_seed", lambda folder, number: {})
    edges.main(["short-noisy", "--seeds", "0", "1", "--out", str(tmp_path / "e.json"), "--threads", "1"])
    written = json.loads((tmp_path / "e.json").read_text())["seeds"]
    assert [written[key]["commit"] for key in ("0", "1")] == ["abc", "abc"]
