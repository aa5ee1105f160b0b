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


def _package_imports() -> dict:
    """``{module: {package modules it imports}}`` for dml_tutorial's top-level modules (imports inside functions
    included: a lazy import hides a circle, it does not remove it)."""
    import ast

    package = ROOT / "dml_tutorial"
    names = {p.stem for p in package.glob("*.py")} | {p.name for p in package.iterdir() if (p / "__init__.py").exists()}
    graph = {}
    for path in package.glob("*.py"):
        found = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.level == 1:
                if node.module:
                    found.add(node.module.split(".")[0])
                else:
                    found |= {a.name for a in node.names if a.name in names}
        graph[path.stem] = found & names - {path.stem, "__init__"}
    return graph


def test_the_package_has_no_import_circle():
    """One concept per module, layered: objective below the paper modules (dcdl, ecaml, eps), records below
    claims and report. A circle means two modules that can only be read together."""
    graph, state = _package_imports(), {}

    def visit(module, path):
        state[module] = "open"
        for dep in sorted(graph.get(module, ())):
            assert state.get(dep) != "open", "import circle: " + " -> ".join(path + [dep])
            if dep not in state:
                visit(dep, path + [dep])
        state[module] = "done"

    for module in sorted(graph):
        if module not in state:
            visit(module, [module])
    assert "objective" in graph["dcdl"] and "dcdl" not in graph["objective"]
