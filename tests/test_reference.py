"""The statistical check of trained numbers (dml_tutorial.reference): its false-alarm rate on runs that only differ
by chance, its power against a real change, its messages, and the committed records it checks against."""

import json

import numpy as np
import pytest
from helpers import ROOT
from scipy import stats

from dml_tutorial import plots, reference, report, tables
from dml_tutorial.chapters import chapters, results_path
from dml_tutorial.settings import Settings


def test_identical_runs_agree_and_single_values_get_the_floor():
    table = {"row": {"R@1": [0.5, 0.6, 0.7], "NMI": [0.3]}}
    assert reference.compare("T", table, table) == []
    assert reference.tolerance([0.3], [0.9]) == reference.FLOOR
    assert reference.compare("T", {"r": {"m": [0.30]}}, {"r": {"m": [0.30 + reference.FLOOR / 2]}}) == []
    assert reference.compare("T", {"r": {"m": [0.30]}}, {"r": {"m": [0.30 + 2 * reference.FLOOR]}})


def test_false_alarm_rate_matches_the_t_distribution():
    # Two runs of 3 seeds drawn from the same distribution (another machine re-draws the seeds, at worst): the
    # difference of means over its pooled standard error is t-distributed with 4 degrees of freedom, so the rule
    # fires with probability 2 t.sf(Z, 4) when the floor is out of the way (a spread of 10 points).
    rng = np.random.default_rng(0)
    draws = 20000
    a, b = rng.normal(0.5, 0.1, (draws, 3)), rng.normal(0.5, 0.1, (draws, 3))
    fired = np.mean([bool(reference.compare("T", {"r": {"m": x}}, {"r": {"m": y}})) for x, y in zip(a, b)])
    expected = 2 * stats.t.sf(reference.Z, df=4)
    assert abs(fired - expected) < 5 * np.sqrt(expected * (1 - expected) / draws) + 1e-4


def test_the_rules_z_is_the_one_derived_from_the_measured_drift():
    """Z is benchmarks/bench_nbval_drift.py's derivation (a 1% chance of any false alarm over every checked cell and
    claim, from the drift measured on the emulated other machine), rounded up to a tenth: the measured drift is far
    below a re-draw of the seeds (the t model above), which a derived Z of about 4 would not survive. A cell inside
    the floor passes at any z (a 1-thread kernel's ECAML R@4 drifts 0.8 points at z 5.4): the check is on the cells
    that drifted beyond it, where Z decides."""
    drift = json.loads((ROOT / "benchmarks" / "results" / "nbval_drift.json").read_text())
    assert reference.Z == pytest.approx(np.ceil(10 * drift["derived Z"]) / 10)
    assert drift["largest z beyond the floor"] < reference.Z and drift["rule"]["Z"] == reference.Z


def test_a_real_change_is_caught():
    rng = np.random.default_rng(1)
    committed = rng.normal(0.9, 0.01, 3)
    # a broken training: the trained row falls to the untrained network's level, 10 points lower
    problems = reference.compare("Retrieval", {"trained": {"R@1": committed}}, {"trained": {"R@1": committed - 0.1}})
    assert len(problems) == 1
    message = problems[0]
    assert "'Retrieval'" in message and "'trained'" in message and "R@1" in message
    assert f"{100 * committed.mean():.1f}" in message and f"{100 * committed.mean() - 10:.1f}" in message


def test_rows_and_metrics_missing_on_one_side_and_nan_are_reported():
    a = {"x": {"R@1": [0.5, 0.6]}, "y": {"R@1": [0.1, 0.2]}}
    b = {"x": {"R@1": [0.5, 0.6], "NMI": [0.4, 0.5]}, "z": {"R@1": [0.1, 0.2]}}
    problems = reference.compare("T", a, b)
    assert any("'y': only in the record" in p for p in problems)
    assert any("'z': only in the fresh run" in p for p in problems)
    assert any("NMI: only in the fresh run" in p for p in problems)
    assert reference.compare("T", {"x": {"p": [float("nan")]}}, {"x": {"p": [float("nan")]}}) == []
    assert reference.compare("T", {"x": {"p": [float("nan")]}}, {"x": {"p": [0.5]}})


@pytest.fixture
def record_file(tmp_path, monkeypatch):
    path = tmp_path / "01_toy.results.json"
    path.write_text(json.dumps({"profile": "smoke", "settings": {"profile": "smoke"}, "tables": [
        {"table": "T", "seeds": [0, 1, 2], "measured": {"r": {"R@1": [0.90, 0.91, 0.92]}}, "paper": {}}]}))
    monkeypatch.setenv(reference.ENV, str(path))
    return path


def test_check_raises_with_a_message_naming_what_moved(record_file):
    cfg = {"profile": "smoke", "chapter": "toy"}
    reference.check("T", {"r": {"R@1": [0.905, 0.915, 0.925]}}, cfg, [0, 1, 2])  # within: no error
    with pytest.raises(reference.ResultsDrifted, match=r"'T', row 'r', R@1: committed 91.0 ± 1.0, this run 50.0"):
        reference.check("T", {"r": {"R@1": [0.5, 0.5, 0.5]}}, cfg, [0, 1, 2])
    with pytest.raises(reference.ResultsDrifted, match="is not in the committed record"):
        reference.check("U", {}, cfg, [0, 1, 2])
    with pytest.raises(reference.ResultsDrifted, match="smoke profile with seeds"):
        reference.check("T", {"r": {"R@1": [0.9]}}, {**cfg, "profile": "full"}, [0])
    record_file.unlink()
    with pytest.raises(reference.ResultsDrifted, match="no committed record"):
        reference.check("T", {}, cfg, [0, 1, 2])


def test_record_checks_only_when_asked(record_file, monkeypatch):
    cfg = Settings(chapter="toy", profile="smoke", dataset="digits", model="mlp", epochs=1)
    with pytest.raises(reference.ResultsDrifted):
        report.record("T", {"r": {"R@1": [0.1, 0.1, 0.1]}}, cfg=cfg, seeds=[0, 1, 2], device="cpu")
    monkeypatch.delenv(reference.ENV)
    report.record("T", {"r": {"R@1": [0.1, 0.1, 0.1]}}, cfg=cfg, seeds=[0, 1, 2], device="cpu")


def _stored_text(notebook) -> str:
    """Every stored output as text: plain text, and the HTML of the results tables (a pandas Styler's plain text
    is only its repr)."""
    nb = json.loads(notebook.read_text())
    return "\n".join("".join(o.get("data", {}).get(kind, "")) for c in nb["cells"] if c["cell_type"] == "code"
                     for o in c.get("outputs", []) for kind in ("text/plain", "text/html"))


@pytest.mark.parametrize("chapter", sorted(chapters()), ids=str)
def test_each_chapter_has_the_record_of_its_stored_run(chapter):
    # the committed record and the stored outputs must come from one run: every recorded table is shown as is
    notebook = chapters()[chapter]
    shown = _stored_text(notebook)
    if "report.record(" not in notebook.read_text():
        return
    record = json.loads(results_path(notebook).read_text())
    names = [t["table"] for t in record["tables"]]
    assert len(names) == len(set(names)), f"{chapter}: a table name is recorded twice, so checks would be ambiguous"
    assert record["profile"] == "smoke"
    for t in record["tables"]:  # every measured cell, as the table shows it (1 to 3 decimals: record's ``digits``)
        cells = [[plots.mean_std(v, digits) for cols in t["measured"].values() for v in cols.values()]
                 for digits in (1, 2, 3)]
        assert any(all(c in shown for c in shows) for shows in cells), \
            f"{chapter}: table {t['table']!r} is not shown as recorded"


def test_a_claims_paired_difference_is_checked_where_each_cell_stays_inside():
    """Seeds spread widely (10 points), so each cell's tolerance is wide; a claim's gain, paired by seed, moves by 5
    points while both cells stay inside: the claim check catches it, the cell check cannot."""
    rng = np.random.default_rng(3)
    base = rng.normal(0.6, 0.1, 5)
    gain = 0.03 + rng.normal(0, 0.004, 5)
    committed = {"Triplet": {"R@1": base.tolist()}, "ECAML(Tri)": {"R@1": (base + gain).tolist()}}
    fresh = {"Triplet": {"R@1": base.tolist()}, "ECAML(Tri)": {"R@1": (base + gain - 0.05).tolist()}}
    table = tables.ECAML_MAIN.id  # the claims' table, by its id
    assert reference.compare(table, committed, fresh) == []
    (problem,) = reference.compare_claims("ecaml", table, committed, fresh)
    assert problem.startswith("claim 'EC improves Triplet (unseen R@1)': committed gain")
    assert reference.compare_claims("ecaml", table, committed, committed) == []
    assert reference.claim_differences("ecaml", table, committed) == {
        "EC improves Triplet (unseen R@1)": pytest.approx(gain.tolist())}
    assert reference.compare_claims("ecaml", "another table", committed, fresh) == []
