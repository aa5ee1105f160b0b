"""benchmarks/bench_nbval_drift.py and the drift log it reads: what reference.check writes, the z of a drift by hand,
the 80%-power change against a simulation, and the per-chapter report on a hand-written log."""

import json

import numpy as np
import pytest
from helpers import load_benchmark
from scipy import stats

from dml_tutorial import reference


@pytest.fixture
def bench():
    return load_benchmark("bench_nbval_drift")


def test_the_check_logs_every_cell_both_runs_have(tmp_path, monkeypatch):
    log = tmp_path / "drift.jsonl"
    monkeypatch.setenv(reference.DRIFT_ENV, str(log))
    committed = {"row": {"R@1": [0.5, 0.6, 0.7], "NMI": [0.1, 0.2, 0.3]}, "raw input": {"R@1": [0.4]}}
    fresh = {"row": {"R@1": [0.52, 0.61, 0.69]}, "raw input": {"R@1": [0.4]}}
    reference.log_drift("eps", "Table 2", committed, fresh)
    lines = [json.loads(x) for x in log.read_text().splitlines()]
    assert [(x["row"], x["metric"]) for x in lines] == [("row", "R@1"), ("raw input", "R@1")]  # NMI: one side only
    assert lines[0]["allowed"] == pytest.approx(reference.tolerance(committed["row"]["R@1"], fresh["row"]["R@1"]))
    monkeypatch.delenv(reference.DRIFT_ENV)
    reference.log_drift("eps", "Table 2", committed, fresh)  # unset: nothing written
    assert len(log.read_text().splitlines()) == 2


def test_drift_in_standard_errors_by_hand(bench, tmp_path):
    a, b = [0.50, 0.60, 0.70], [0.55, 0.66, 0.74]
    log = tmp_path / "d.jsonl"
    log.write_text(json.dumps({"chapter": "c", "table": "t", "row": "r", "metric": "R@1", "committed": a,
                               "fresh": b, "allowed": reference.tolerance(a, b)}) + "\n")
    (cell,) = bench.cells(log)
    s = np.sqrt((np.var(a, ddof=1) + np.var(b, ddof=1)) / 2)
    assert cell["d"] == pytest.approx(100 * (np.mean(b) - np.mean(a)))
    assert cell["z"] == pytest.approx((np.mean(b) - np.mean(a)) / (s * np.sqrt(2 / 3)))


def test_the_80_percent_power_change_is_caught_four_times_in_five(bench):
    allowed, se = 3.0, 1.5
    delta = bench.power_change(allowed, se)
    rng = np.random.default_rng(0)
    caught = np.mean(np.abs(delta + rng.normal(0, se, 200_000)) > allowed)
    assert caught == pytest.approx(0.8, abs=0.005) and allowed < delta < allowed + 2 * se
    assert bench.power_change(allowed, 0.0) == allowed  # no scatter: the check is exact


def test_the_report_per_chapter_counts_failures_and_the_floor(bench, tmp_path, capsys):
    rng = np.random.default_rng(1)
    lines = []
    for i in range(40):
        a = rng.normal(0.6, 0.02, 5)
        b = a + rng.normal(0, 0.02, 5) + (0.2 if i == 0 else 0)  # one cell changed by 20 points
        lines.append({"chapter": "eps" if i < 20 else "dcdl", "table": "t", "row": f"r{i}", "metric": "R@1",
                      "committed": a.tolist(), "fresh": b.tolist(), "allowed": reference.tolerance(a, b)})
    log = tmp_path / "d.jsonl"
    log.write_text("\n".join(map(json.dumps, lines)) + "\n")
    out = tmp_path / "r.json"
    report = bench.main([str(log), "--out", str(out)])
    assert json.loads(out.read_text()) == json.loads(json.dumps(report))
    assert report["chapters"]["eps"]["failed"] == 1 and report["chapters"]["dcdl"]["failed"] == 0
    assert report["numbers with seeds"] == 40 and report["derived Z"] == pytest.approx(stats.norm.isf(0.01 / 80))
    assert "eps" in capsys.readouterr().out
    with pytest.raises(SystemExit, match="run `make test`"):
        bench.main([str(tmp_path / "missing.jsonl"), "--out", str(out)])
