"""Declared tables (dml_tutorial/tables.py): claims and code read a table by a constant id, never by its title."""

import json
import shutil
import subprocess
import sys

import pytest
from helpers import ROOT

from dml_tutorial import claims, profiles, records, report, tables


def test_renaming_a_declared_table_fails_when_the_package_is_imported(tmp_path):
    """A claim names its table by a constant: renaming the table (or dropping it) cannot silently drop the claim and
    shrink its family, as a reworded English title did; the import fails and says where."""
    package = tmp_path / "dml_tutorial"
    shutil.copytree(ROOT / "dml_tutorial", package, ignore=shutil.ignore_patterns("__pycache__"))
    source = (package / "tables.py").read_text()
    assert source.count("CBSWR_ABLATION = _declare(") == 1
    (package / "tables.py").write_text(source.replace("CBSWR_ABLATION = _declare(", "CBSWR_TABLES_1_2 = _declare("))
    done = subprocess.run([sys.executable, "-c", "import dml_tutorial.claims"], cwd=tmp_path, capture_output=True, check=False,
                          text=True)
    assert done.returncode != 0 and "has no attribute 'CBSWR_ABLATION'" in done.stderr
    assert "claims.py" in done.stderr


def test_a_table_is_found_by_its_id_whatever_its_title_reads():
    run = json.loads((ROOT / "data/results/cbswr/glyphs2_seed-0.json").read_text())
    for t in run["tables"]:
        if t.get("id") == tables.CBSWR_ABLATION.id:
            t["table"] = "Tables 1-2, reworded on the page"
    assert records.merge_seeds([run])[tables.CBSWR_ABLATION.id]
    frame = claims.assess("cbswr", [run], profile="glyphs2")
    assert set(frame["claim"]) == {c.text for c in claims.CLAIMS["cbswr"]}


def test_every_claim_names_a_declared_table_and_every_committed_record_carries_its_id():
    for listed in claims.CLAIMS.values():
        for claim in listed:
            assert tables.by_id(claim.table.id) is claim.table
            assert claim.gate is None or claim.gate[0] in tables.TABLES.values()
    files = sorted((ROOT / "data" / "results").glob("*/*_seed-*.json")) + sorted(ROOT.glob("notebooks/*.results.json"))
    for path in files:
        for t in json.loads(path.read_text())["tables"]:
            assert t.get("id") == tables.id_of(t["table"]), (path.name, t["table"])


def test_a_declared_table_recorded_by_its_title_is_refused_and_unknown_ids_named():
    cfg = profiles.settings("cbswr", "smoke")
    with pytest.raises(ValueError, match=r"record it as tables.CBSWR_ABLATION"):
        report.record(tables.CBSWR_ABLATION.title, {"r": {"R@1": [0.5]}}, cfg=cfg, seeds=[0], device="cpu")
    with pytest.raises(KeyError, match=r"no table 'cbswr.main'; declared: dcdl.main"):
        tables.by_id("cbswr.main")
    with pytest.raises(ValueError, match="declared twice"):
        tables._declare("dcdl.main", "another title")


def test_a_run_file_keeps_each_declared_tables_id(monkeypatch, tmp_path):
    path = tmp_path / "tables.jsonl"
    monkeypatch.setenv(report.ENV, str(path))
    cfg = profiles.settings("cbswr", "smoke")
    report.record(tables.CBSWR_ABLATION, {"r": {"R@1": [0.5]}}, cfg=cfg, seeds=[0], device="cpu")
    report.record("A table only shown", {"r": {"R@1": [0.5]}}, cfg=cfg, seeds=[0], device="cpu")
    run = report.run_file("cbswr", {}, path, "cmd", 1.0)
    assert [(t["table"], t.get("id")) for t in run["tables"]] == [
        (tables.CBSWR_ABLATION.title, "cbswr.ablation"), ("A table only shown", None)]
