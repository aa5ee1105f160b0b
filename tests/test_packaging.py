"""pyproject.toml and environment.yml list the same dependencies; torch is not pinned in the package."""

import re

import tomllib
import yaml
from conftest import ROOT


def _name(req: str) -> str:
    return re.split(r"[<>=!~ \[@]", req.strip(), maxsplit=1)[0].lower().replace("_", "-")


def _pyproject():
    meta = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    reqs = meta["dependencies"] + [r for extra in meta["optional-dependencies"].values() for r in extra]
    return {_name(r): r.replace(" ", "") for r in reqs}


def _environment():
    env = yaml.safe_load((ROOT / "environment.yml").read_text())
    pip = next(d["pip"] for d in env["dependencies"] if isinstance(d, dict))
    return {_name(r): r.replace(" ", "") for r in pip if not r.startswith("-e")}


def test_same_packages_in_both_lists():
    py, env = _pyproject(), _environment()
    assert set(py) == set(env), f"only in pyproject: {set(py) - set(env)}; only in environment.yml: {set(env) - set(py)}"


def test_same_version_constraints_except_the_torch_pin():
    py, env = _pyproject(), _environment()
    differ = {n for n in py if py[n] != env[n]} - {"torch", "torchvision"}
    assert not differ, {n: (py[n], env[n]) for n in differ}


def test_torch_is_not_hard_pinned_in_the_package():
    py = _pyproject()
    assert "==" not in py["torch"] and "==" not in py["torchvision"]
    assert "torch==" in (ROOT / "Makefile").read_text(), "the set-up step pins torch"


def test_issue_required_dependencies_are_declared():
    needed = {"torch", "torchvision", "pot", "scikit-learn", "matplotlib", "seaborn", "umap-learn", "tqdm", "mnist1d",
              "jupyter-book", "jupyterlab", "papermill", "nbval", "ipykernel", "pytest", "hypothesis",
              "pytorch-metric-learning", "geomloss", "ruff", "playwright"}
    assert needed <= set(_pyproject())
    assert "<2" in _pyproject()["jupyter-book"], "Jupyter Book 2 downloads its theme at build time"
