"""Every chapter notebook: a `parameters` cell with PROFILE/SEED/DEVICE, a Colab install cell that does nothing
outside Colab, and the repository URL taken from _config.yml (the one place it is set)."""

import json
import os
import re

import pytest
import tomllib
import yaml
from helpers import ROOT, load_script

from dml_tutorial.chapters import chapters
from dml_tutorial.profiles import CHAPTERS

NOTEBOOKS = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))
URL = yaml.safe_load((ROOT / "_config.yml").read_text())["repository"]["url"]
RELEASE = load_script(".ci/release.py")  # the release step: pins the install cells to the release commit


def _code_cells(path):
    return [c for c in json.loads(path.read_text())["cells"] if c["cell_type"] == "code"]


def test_there_are_chapters():
    assert NOTEBOOKS


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_parameters_cell(path):
    cells = [c for c in _code_cells(path) if "parameters" in c["metadata"].get("tags", [])]
    assert len(cells) == 1, "exactly one cell tagged 'parameters'"
    src = "".join(cells[0]["source"])
    for name, value in (("PROFILE", '"auto"'), ("SEED", None), ("DEVICE", '"auto"')):
        assert re.search(rf"^{name} = {value or ''}", src, re.MULTILINE), f"{name} default missing"
    listed = re.search(r'^PROFILE = "auto"  # (.*)$', src, re.MULTILINE)
    chapter = next((c for c, p in chapters().items() if p == path), None)
    if listed and chapter in CHAPTERS:  # the comment names every profile the chapter has, no other
        assert set(re.findall(r'"(\w+)"', listed[1])) == {"auto", *CHAPTERS[chapter]}, listed[1]


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_colab_install_cell_comes_first_and_uses_the_configured_url(path):
    first = "".join(_code_cells(path)[0]["source"])
    assert 'if "google.colab" in sys.modules:' in first
    assert f'REPOSITORY = "{URL}"' in first
    assert "torch" not in first.split("if")[1], "the install cell must not reinstall torch"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_colab_install_cell_is_a_no_op_outside_colab(path):
    import sys

    first = "".join(_code_cells(path)[0]["source"])
    assert "google.colab" not in sys.modules
    # IPython magics are not Python: run the cell with the magic line replaced by a marker that would fail
    namespace = {}
    exec(first.replace("%pip install", "raise RuntimeError  #"), namespace)  # noqa: S102 (our own notebook)
    assert "RELEASE" not in namespace  # the Colab branch did not run


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_colab_install_cell_installs_the_release_the_pages_were_executed_with(path, monkeypatch, capsys):
    """On Colab the cell installs its pinned release commit, and main only where pip cannot install that (a fork,
    a commit not pushed yet), saying so: run with a stand-in google.colab module and pip."""
    import subprocess
    import sys
    import types

    first = "".join(_code_cells(path)[0]["source"])
    release = RELEASE.pinned(path)
    monkeypatch.setitem(sys.modules, "google.colab", types.ModuleType("google.colab"))
    for published, expected in ((True, [release]), (False, [release, "main"])):
        asked = []

        def pip(cmd, published=published, asked=asked):
            asked.append(cmd[-1].rsplit("@", 1)[1])
            assert cmd[1:5] == ["-m", "pip", "install", "--quiet"] and f"git+{URL}@" in cmd[-1]
            return subprocess.CompletedProcess(cmd, 0 if published or asked[-1] == "main" else 1)

        monkeypatch.setattr(subprocess, "run", pip)
        exec(first, {})  # noqa: S102 (our own notebook)
        assert asked == expected
        out = capsys.readouterr().out
        assert f"installed from {expected[-1]}" in out and (f"{release} did not install" in out) is not published


def _git_history():
    import subprocess

    def git(*args):
        return subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True, check=False)

    if git("rev-parse", "--git-dir").returncode != 0:
        pytest.skip("not a git checkout")
    if git("rev-parse", "--is-shallow-repository").stdout.strip() == "true":
        pytest.skip("a shallow clone may not hold the release commit")


def test_every_install_cell_pins_a_commit_of_this_history_that_carries_the_package_version():
    """A tag can move or never be pushed (v0.21.0 was named and never existed): each install cell names the
    release commit's hash, which must be in this repository and carry the version in pyproject.toml."""
    _git_history()
    assert RELEASE.check() == []
    assert len({RELEASE.pinned(p) for p in NOTEBOOKS}) == 1  # one release for the whole book


def test_pinning_rewrites_only_the_release_line_and_refuses_another_version(tmp_path):
    _git_history()
    copy = tmp_path / NOTEBOOKS[0].name
    copy.write_text(NOTEBOOKS[0].read_text())
    head = RELEASE.git("rev-parse", "HEAD")
    if RELEASE.version("HEAD") != RELEASE.version():
        pytest.skip("HEAD is not of this version (a version bump not committed yet)")
    assert RELEASE.pin("HEAD", [copy]) == head and RELEASE.pinned(copy) == head
    before, after = json.loads(NOTEBOOKS[0].read_text()), json.loads(copy.read_text())
    changed = [i for i, (a, b) in enumerate(zip(before["cells"], after["cells"])) if a != b]
    assert len(changed) <= 1 and len(before["cells"]) == len(after["cells"])
    first = RELEASE.git("rev-list", "--max-parents=0", "HEAD").split()[0]  # the first commit: another version
    with pytest.raises(SystemExit, match="pin the release commit of this version"):
        RELEASE.pin(first, [copy])


def test_installing_the_pinned_commit_gives_the_package_of_this_version(tmp_path):
    """What Colab's pip does with the install cell, from this clone instead of GitHub: build the pinned commit and
    read the version of the package it installs."""
    import subprocess
    import sys

    _git_history()
    release = RELEASE.pinned(NOTEBOOKS[0])
    target = tmp_path / "site"
    out = subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-build-isolation",
                          "--target", str(target), f"dml-tutorial @ git+file://{ROOT}@{release}"],
                         capture_output=True, text=True, timeout=600, check=False)
    assert out.returncode == 0, out.stderr[-2000:]
    (metadata,) = target.glob("dml_tutorial-*.dist-info/METADATA")
    version = re.search(r"^Version: (.+)$", metadata.read_text(), re.MULTILINE).group(1)
    assert version == RELEASE.version()
    init = (target / "dml_tutorial" / "__init__.py").read_text()
    assert f'__version__ = "{version}"' in init  # what dml-tutorial --version prints
    # and it holds every name of the package the notebooks call (a release older than its notebooks fails on Colab)
    needed = json.dumps(sorted(_package_names_the_notebooks_call()))
    check = ("import importlib, json, sys; import dml_tutorial; print(dml_tutorial.__file__); "
             "print(json.dumps([(m, a) for m, a in json.loads(sys.argv[1]) "
             "if not hasattr(importlib.import_module('dml_tutorial.' + m), a)]))")
    out = subprocess.run([sys.executable, "-c", check, needed], capture_output=True, text=True, timeout=300, cwd=tmp_path,
                         env={**os.environ, "PYTHONPATH": str(target)}, check=False)
    assert out.returncode == 0, out.stderr[-2000:]
    where, missing = out.stdout.strip().splitlines()
    assert where.startswith(str(target)) and json.loads(missing) == []


def _package_names_the_notebooks_call() -> set:
    """``{(module, name)}``: each ``module.name`` the notebooks' code uses, for the modules they import from
    dml_tutorial, that the package here has (a local variable that shares a module's name drops out)."""
    import importlib

    names = set()
    for path in NOTEBOOKS:
        code = "\n".join("".join(c["source"]) for c in _code_cells(path))
        imported = re.findall(r"from dml_tutorial import \(([^)]*)\)|from dml_tutorial import ([\w, ]+)", code)
        modules = {m.strip() for group in imported for part in group for m in part.replace("\n", ",").split(",")}
        for module in modules - {""}:
            here = importlib.import_module(f"dml_tutorial.{module}")
            names |= {(module, a) for a in re.findall(rf"(?<![\w.]){module}\.(\w+)", code) if hasattr(here, a)}
    return names


def test_the_notebooks_call_names_of_the_package_the_release_check_reads():
    names = _package_names_the_notebooks_call()
    assert ("ecaml", "train_grid") in names and ("data", "chapter_splits") in names and len(names) > 80


def test_readme_and_pyproject_use_the_configured_url():
    slug = URL.removeprefix("https://github.com/")
    readme = (ROOT / "README.md").read_text()
    for nb in NOTEBOOKS:
        assert f"colab.research.google.com/github/{slug}/blob/main/notebooks/{nb.name}" in readme
    meta = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert meta["urls"]["Homepage"] == URL


def test_config_has_colab_launch_buttons_and_raises_on_error():
    cfg = yaml.safe_load((ROOT / "_config.yml").read_text())
    assert cfg["launch_buttons"]["colab_url"] == "https://colab.research.google.com"
    assert cfg["execute"]["raise_on_error"] is True and cfg["only_build_toc_files"] is True


def test_site_address_and_404_prefix_follow_the_repository_url():
    """GitHub Pages publishes github.com/<owner>/<name> at <owner>.github.io/<name>/; a fork that changes
    repository.url must change these two with it, and this test says so."""
    cfg = yaml.safe_load((ROOT / "_config.yml").read_text())
    owner, name = URL.removeprefix("https://github.com/").split("/")
    site = f"https://{owner}.github.io/{name}/"
    assert cfg["html"]["baseurl"] == cfg["sphinx"]["config"]["html_baseurl"] == cfg["sphinx"]["config"]["ogp_site_url"] == site
    assert cfg["sphinx"]["config"]["notfound_urls_prefix"] == f"/{name}/"
    for key in ("logo",):
        assert (ROOT / cfg[key]).exists()
    assert (ROOT / cfg["html"]["favicon"]).exists()


def _colab_packages() -> dict:
    """Colab's GPU runtime as tests/colab_pip_freeze.gpu.txt records it: {canonical name: version}."""
    from packaging.utils import canonicalize_name
    from packaging.version import Version

    lines = (ROOT / "tests" / "colab_pip_freeze.gpu.txt").read_text().splitlines()
    pairs = [line.split("==") for line in lines if line and not line.startswith("#")]
    return {canonicalize_name(name): Version(version) for name, version in pairs}


def test_the_colab_install_keeps_colabs_torch_and_adds_only_what_colab_lacks():
    """pip leaves an installed package alone when it satisfies the requirement: every dependency that Colab
    preinstalls (torch and torchvision above all: a reinstall would fetch gigabytes and may not match Colab's CUDA)
    must accept Colab's version, and so must the requirements of the packages the install cell adds."""
    import importlib.metadata

    from packaging.requirements import Requirement
    from packaging.utils import canonicalize_name

    colab = _colab_packages()
    ours = [Requirement(r) for r in tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]]
    added = sorted(canonicalize_name(r.name) for r in ours if canonicalize_name(r.name) not in colab)
    assert added == ["geomloss", "mnist1d", "pot", "submitit"]  # what Colab's list lacks
    theirs = [Requirement(r) for name in added for r in importlib.metadata.requires(name) or []]
    for req in ours + [r for r in theirs if r.marker is None]:  # extras ("backend-torch", "dev") are not installed
        name = canonicalize_name(req.name)
        if name in colab:
            assert req.specifier.contains(colab[name], prereleases=True), f"{req} would replace Colab's {colab[name]}"
    assert {"torch", "torchvision"} <= set(colab)  # the check above covered them
