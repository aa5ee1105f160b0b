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


def test_a_claims_false_alarm_rate_is_alarm_over_the_family_under_a_redraw(monkeypatch):
    # Two runs of 3 seeds of a claim's paired difference drawn from the same distribution (another machine that
    # re-drew every seed): flagged with probability ALARM / family (here a family of one claim), whatever the spread.
    monkeypatch.setattr(reference, "family", lambda: 1)
    rng = np.random.default_rng(4)
    draws = 20000
    a, b = rng.normal(0.02, 0.005, (draws, 3)), rng.normal(0.02, 0.005, (draws, 3))
    fired = np.mean([abs(y.mean() - x.mean()) > reference.tolerance(x, y, claim=True) for x, y in zip(a, b)])
    assert abs(fired - reference.ALARM) < 5 * np.sqrt(reference.ALARM * (1 - reference.ALARM) / draws)
    assert reference.critical(4, 1) == pytest.approx(stats.t.ppf(1 - reference.ALARM / 2, 4))


def test_a_claim_has_no_floor_and_its_family_is_every_claim_of_the_committed_records():
    # a gain whose seeds agree to 0.1 point moves by 2 points: under the cells' 3-point floor, caught as a claim
    was, now = [0.030, 0.031, 0.032], [0.010, 0.011, 0.012]
    assert reference.tolerance(was, now) == reference.FLOOR
    s = np.std(was, ddof=1)
    assert reference.tolerance(was, now, claim=True) == pytest.approx(reference.critical(4) * s * np.sqrt(2 / 3))
    assert reference.tolerance(was, now, claim=True) < 0.02
    counted = sum(len(d) >= 2 for chapter, notebook in chapters().items() if results_path(notebook).exists()
                  for t in json.loads(results_path(notebook).read_text())["tables"]
                  for d in reference.claim_differences(chapter, tables.key(t), t["measured"]).values())
    assert reference.family() == counted > 20


def test_the_cells_z_is_the_one_derived_from_the_measured_drift():
    """Z is benchmarks/bench_nbval_drift.py's derivation (a 1% chance of any false alarm over every checked cell,
    from the drift measured on the emulated other machine), rounded up to a tenth: the measured drift is far below a
    re-draw of the seeds (the t model above). On the committed drift, no claim and no cell beyond the floor reaches
    its critical value (a cell inside the floor passes at any z: a 1-thread kernel's ECAML R@4 drifts 0.8 points at
    z 5.4)."""
    drift = json.loads((ROOT / "benchmarks" / "results" / "nbval_drift.json").read_text())
    assert reference.Z == pytest.approx(np.ceil(10 * drift["derived Z"]) / 10)
    assert drift["largest z / critical beyond the floor"] < 1 and drift["rule"]["Z"] == reference.Z
    assert drift["rule"]["claims' alarm"] == reference.ALARM


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


def _seed_runs(gains, base, table=tables.ECAML_MAIN.id):
    """Run files of one seed each (chapter ecaml, profile glyphs2): Triplet at ``base``, ECAML(Tri) ``gains`` above."""
    return [{"chapter": "ecaml", "profile": "glyphs2", "seeds": [k], "tables": [
        {"table": "Main", "id": table, "seeds": [k], "paper": {},
         "measured": {"Triplet": {"R@1": [b]}, "ECAML(Tri)": {"R@1": [b + g]}}}]}
        for k, (g, b) in enumerate(zip(gains, base))]


def test_a_reseeded_run_is_checked_against_the_spread_of_the_other_seeds():
    rng = np.random.default_rng(5)
    base, gains = rng.normal(0.6, 0.05, 10), rng.normal(0.02, 0.01, 10)
    committed = _seed_runs(gains, base)
    assert reference.compare_seed(committed[3], committed) == []
    others = np.delete(gains, 3)
    # one claim in the run: ALARM / 2 over the claims, two-sided; 8 degrees of freedom from the other 9 seeds
    allowed = stats.t.ppf(1 - reference.ALARM / 4, 8) * others.std(ddof=1) * np.sqrt(2)
    for shift, flagged in ((0.98 * allowed, False), (1.02 * allowed, True)):
        fresh = _seed_runs(gains - shift, base)[3]
        problems = reference.compare_seed(fresh, committed)
        assert any(p.startswith("claim 'EC improves Triplet (unseen R@1)': committed seed 3") for p in problems) \
            == flagged, (shift, problems)
        assert not any(p.startswith("'") for p in problems)  # the row itself moves less than its 3-point floor
    fresh = _seed_runs(gains - 0.5, base)[3]  # training broken: the row falls 50 points
    (cell, claim) = reference.compare_seed(fresh, committed)
    assert "row 'ECAML(Tri)', R@1: committed seed 3" in cell and f"this run {100 * (base[3] + gains[3] - 0.5):.1f}" \
        in cell and claim.startswith("claim")


def test_a_reseeded_run_lacking_a_row_or_without_its_committed_seed_is_reported():
    base, gains = np.linspace(0.5, 0.6, 10), np.linspace(0.01, 0.03, 10)
    committed = _seed_runs(gains, base)
    fresh = _seed_runs(gains, base)[2]
    del fresh["tables"][0]["measured"]["ECAML(Tri)"]
    problems = reference.compare_seed(fresh, committed)
    assert "'ecaml.main', row 'ECAML(Tri)', R@1: only in one of the two runs" in problems
    assert "claim 'EC improves Triplet (unseen R@1)': only in one of the two runs" in problems
    with pytest.raises(reference.ResultsDrifted, match="0 committed run"):
        reference.compare_seed(fresh, committed[:2])


def test_dml_tutorial_compare_exits_1_on_a_moved_number(tmp_path, capsys):
    from dml_tutorial import cli

    base, gains = np.linspace(0.5, 0.6, 10), np.linspace(0.01, 0.03, 10)
    (tmp_path / "ecaml").mkdir()
    for run in _seed_runs(gains, base):
        (tmp_path / "ecaml" / f"glyphs2_seed-{run['seeds'][0]}.json").write_text(json.dumps(run))
    fresh = tmp_path / "fresh.json"
    fresh.write_text(json.dumps(_seed_runs(gains, base)[4]))
    assert cli.main(["compare", str(fresh), "--results", str(tmp_path)]) == 0
    assert "every number of seed 4 of ecaml (glyphs2)" in capsys.readouterr().out
    fresh.write_text(json.dumps(_seed_runs(gains - 0.4, base)[4]))
    assert cli.main(["compare", str(fresh), "--results", str(tmp_path)]) == 1
    assert "2 number(s) of seed 4 of ecaml (glyphs2) against its committed run left" in capsys.readouterr().out
    fresh.write_text(json.dumps({**_seed_runs(gains, base)[4], "seeds": [4, 5]}))
    with pytest.raises(SystemExit):
        cli.main(["compare", str(fresh), "--results", str(tmp_path)])


@pytest.mark.parametrize("chapter", sorted(chapters()), ids=str)
def test_each_chapters_record_names_a_clean_commit_of_this_history(chapter):
    """A record made from a tree with uncommitted changes names ``<commit>-dirty``: nobody can re-run what made its
    numbers (`dml-tutorial run` from a committed tree; `git stash` first)."""
    import subprocess

    path = results_path(chapters()[chapter])
    if not path.exists():
        return
    commit = json.loads(path.read_text())["commit"]
    assert not commit.endswith("-dirty"), f"{path.name} was recorded from a dirty tree at {commit}: re-run it"
    shallow = subprocess.run(["git", "rev-parse", "--is-shallow-repository"], cwd=ROOT, capture_output=True,
                             text=True, check=False).stdout.strip()
    if shallow != "true":  # a shallow clone (GitHub's checkout) holds only the newest commits
        known = subprocess.run(["git", "merge-base", "--is-ancestor", commit, "HEAD"], cwd=ROOT, check=False)
        assert known.returncode == 0, f"{path.name} names {commit}, not a commit of this history"
