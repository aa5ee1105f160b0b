"""pyproject.toml and environment.yml list the same dependencies; torch is not pinned in the package."""

import re

import tomllib
import yaml
from helpers import ROOT


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


#: The newest torch calls the package relies on, with the release that introduced them, read in the Python source
#: of the torch 2.2.0, 2.3.0 and 2.4.0 wheels (PyPI): ``torch.amp.GradScaler`` (torch/amp/grad_scaler.py) first
#: ships in 2.3.0, ``is_bf16_supported(including_emulation=...)`` (torch/cuda/__init__.py) in 2.4.0.
TORCH_CALLS = {"torch.amp.GradScaler(": (2, 3), "is_bf16_supported(including_emulation=": (2, 4)}
#: torchvision's release for each torch minor version (torchvision's compatibility table).
TORCHVISION_FOR = {(2, 3): (0, 18), (2, 4): (0, 19)}


def _floor(requirement: str) -> tuple:
    return tuple(int(x) for x in re.search(r">=\s*([\d.]+)", requirement).group(1).split(".")[:2])


def test_the_torch_floor_is_the_newest_call_the_package_makes():
    """The declared floor is the release that introduced the newest call of :data:`TORCH_CALLS`, and every call
    listed is still made (a call dropped from the code must leave the table, a new one join it)."""
    code = "\n".join(p.read_text() for p in (ROOT / "dml_tutorial").rglob("*.py"))
    for call in TORCH_CALLS:
        assert call in code, f"{call} is no longer called: update TORCH_CALLS and the floor"
    needed = max(TORCH_CALLS.values())
    py = _pyproject()
    assert _floor(py["torch"]) == needed, f"torch floor {py['torch']}, the code needs >= {needed}"
    assert _floor(py["torchvision"]) == TORCHVISION_FOR[needed]
