"""What a researcher needs to use and cite the course: the licence the metadata declares, a valid CITATION.cff
with the five papers, a changelog whose newest entry is the package's version, and tags on the commits it names."""

import json
import re
import subprocess

import jsonschema
import pytest
import tomllib
import yaml
from helpers import ROOT

VERSION = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
#: The Citation File Format 1.2.0 schema, as cffconvert 2.0.0 ships it (cffconvert itself needs jsonschema < 4,
#: which Jupyter's packages do not allow; its check is this schema's, with formats checked).
SCHEMA = json.loads((ROOT / "tests" / "fixtures" / "cff-1.2.0-schema.json").read_text())


def _cff() -> dict:
    return yaml.safe_load((ROOT / "CITATION.cff").read_text())


def _cff_errors(cff: dict) -> list[str]:
    validator = jsonschema.Draft7Validator(SCHEMA, format_checker=jsonschema.Draft7Validator.FORMAT_CHECKER)
    return [f"{'/'.join(map(str, e.path))}: {e.message}" for e in validator.iter_errors(cff)]


def _changelog() -> list[tuple[str, str, str]]:
    """``[(version, date, commit)]`` of CHANGELOG.md's releases, newest first."""
    text = (ROOT / "CHANGELOG.md").read_text()
    pattern = r"^## (\d+\.\d+\.\d+) \((\d{4}-\d\d-\d\d), ([0-9a-f]{7,40}|commit of this entry)\)"
    return re.findall(pattern, text, re.MULTILINE)


def _papers() -> dict:
    """``{bibtex key: title}`` of the five papers the course reproduces (book/references.bib's first section)."""
    bib = (ROOT / "book" / "references.bib").read_text()
    section = bib.split("% ---- the five papers the course reproduces")[1].split("% ----")[0]
    return dict(re.findall(r"@\w+\{(\w+),.*?title = \{(.*?)\},", section, re.DOTALL))


def test_the_licence_is_the_mit_text_the_metadata_declares():
    meta = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    text = (ROOT / "LICENSE").read_text()
    assert meta["license"] == "MIT" and meta["license-files"] == ["LICENSE"]
    assert text.startswith("MIT License\n") and "Permission is hereby granted, free of charge" in text
    assert 'THE SOFTWARE IS PROVIDED "AS IS", WITHOUT WARRANTY OF ANY KIND' in text


def test_citation_file_is_valid_cff():
    assert _cff_errors(_cff()) == []


@pytest.mark.parametrize("break_it", [lambda c: c.pop("authors"), lambda c: c.update({"date-released": "26/11/2026"}),
                                      lambda c: c["references"][0].update({"type": "paper"})],
                         ids=["no authors", "a date CFF cannot read", "an unknown reference type"])
def test_the_cff_check_catches_a_broken_file(break_it):
    cff = _cff()
    break_it(cff)
    assert _cff_errors(cff)


def test_citation_names_this_version_and_the_five_papers():
    cff, papers = _cff(), _papers()
    assert len(papers) == 5
    assert str(cff["version"]) == VERSION
    assert sorted(r["title"] for r in cff["references"]) == sorted(papers.values())
    assert cff["license"] == "MIT"
    assert cff["repository-code"] == yaml.safe_load((ROOT / "_config.yml").read_text())["repository"]["url"]


def test_the_newest_changelog_entry_is_the_package_version_and_the_citation_date():
    releases = _changelog()
    assert releases, "CHANGELOG.md lists no release"
    newest, date, _ = releases[0]
    assert newest == VERSION
    import dml_tutorial

    assert dml_tutorial.__version__ == VERSION
    assert str(_cff()["date-released"]) == date
    versions = [tuple(map(int, v.split("."))) for v, _, _ in releases]
    assert versions == sorted(versions, reverse=True) and len(set(versions)) == len(versions)


def _git(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True, check=False)


def test_each_earlier_release_names_a_commit_of_the_history():
    if _git("rev-parse", "--git-dir").returncode != 0:
        pytest.skip("not a git checkout")
    if _git("rev-parse", "--is-shallow-repository").stdout.strip() == "true":
        pytest.skip("a shallow clone holds only the newest commits")
    for version, _, commit in _changelog()[1:]:
        found = _git("cat-file", "-e", f"{commit}^{{commit}}")
        assert found.returncode == 0, f"{version}: {commit} is not a commit of this history"


def test_the_quick_start_runs_and_learns():
    """book/quickstart.md's code block, run as a reader pastes it: it trains and prints R@1, R@4, MAP@R and NMI,
    all fractions, with R@1 above the chance of a 10-class toy set."""
    import sys

    text = (ROOT / "book" / "quickstart.md").read_text()
    (code,) = re.findall(r"```python\n(.*?)```", text, re.DOTALL)
    assert len(code.strip().splitlines()) <= 20, "a quick start stays short"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, cwd=ROOT,
                         check=False)
    assert out.returncode == 0, out.stderr[-2000:]
    numbers = [float(x) for x in re.findall(r"\d\.\d+(?:e-?\d+)?", out.stdout)]
    assert len(numbers) == 4 and all(0 <= x <= 1 for x in numbers), out.stdout
    assert numbers[0] > 0.5, f"R@1 {numbers[0]}: the quick start should visibly learn"


def test_the_api_page_documents_every_module_it_names():
    text = (ROOT / "book" / "api.md").read_text()
    import importlib

    modules = re.findall(r"^\.\. automodule:: (\S+)$", text, re.MULTILINE)
    assert len(modules) >= 10
    for name in modules:
        assert importlib.import_module(name).__doc__, f"{name} has no module docstring for the API page"
