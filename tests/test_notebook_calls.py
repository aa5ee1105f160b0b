"""Every call a chapter makes into the package binds to the function's signature, and each literal argument (a
number, a string, an f-string, a list, a dict) has the type the parameter is annotated with. Many calls sit in a
branch that only test bed II runs (``if cfg["dataset"] == "glyphs":``), which the smoke profile that CI executes
skips: such a call, broken, fails here in seconds instead of hours into a sweep. (EPS's retrieval strip passed its
title where the neighbour count goes, 2026-12-06: ``k = "Unseen characters ..."``.)"""

import ast
import importlib
import inspect
import json
import os
import types
import typing
from pathlib import Path, PurePath

import pytest

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))
LITERALS = {ast.JoinedStr: str, ast.List: list, ast.Dict: dict, ast.Tuple: tuple, ast.Set: set}


def _cells(source: str) -> list[str]:
    """A notebook's code cells without IPython's ``%`` and ``!`` lines (not Python)."""
    cells = [c for c in json.loads(source)["cells"] if c["cell_type"] == "code"]
    return ["\n".join(line for line in "".join(c["source"]).splitlines() if not line.lstrip().startswith(("%", "!")))
            for c in cells]


def _imported(tree: ast.AST, names: dict) -> None:
    """Add to ``names`` what ``tree`` imports from the package (``from dml_tutorial import plots``,
    ``from dml_tutorial.plots import retrieval``, ``import dml_tutorial.plots as p``)."""
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "dml_tutorial":
            module = importlib.import_module(node.module)
            for alias in node.names:
                names[alias.asname or alias.name] = getattr(module, alias.name, None) or importlib.import_module(
                    f"{node.module}.{alias.name}")
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] == "dml_tutorial" and alias.asname:
                    names[alias.asname] = importlib.import_module(alias.name)


def _callee(func: ast.expr, names: dict):
    """The package's function or class that ``func`` names (``plots.retrieval``, ``retrieval``), else None."""
    if isinstance(func, ast.Name):
        target = names.get(func.id)
    elif isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name):
        target = getattr(names.get(func.value.id), func.attr, None) if func.value.id in names else None
    else:
        return None
    return target if callable(target) and not isinstance(target, types.ModuleType) else None


def _literal_type(node: ast.expr):
    if isinstance(node, ast.Constant):
        return None if node.value is None else type(node.value)
    return LITERALS.get(type(node))


def _accepts(annotation, kind: type) -> bool:
    """Whether a literal of ``kind`` may be passed where ``annotation`` is declared (an int where a float is, a
    string where a path is; any member of a union; the origin of a generic, ``list[str]`` -> list); an annotation
    it cannot read accepts."""
    if annotation is inspect.Parameter.empty or annotation is typing.Any or isinstance(annotation, str):
        return True
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        return any(_accepts(member, kind) for member in typing.get_args(annotation))
    origin = typing.get_origin(annotation) or annotation
    if not isinstance(origin, type):
        return True
    if origin is float and kind is int:
        return True
    if kind is str and (origin is os.PathLike or issubclass(origin, PurePath)):
        return True  # a path given as text
    return issubclass(kind, origin)


def problems(source: str, name: str = "notebook") -> list[str]:
    """Every package call of a notebook (its JSON text) that does not bind to its signature or passes a literal
    of another type than its parameter's; one line each, naming the cell and the call."""
    names, found = {}, []
    for index, cell in enumerate(_cells(source)):
        try:
            tree = ast.parse(cell)
        except SyntaxError as err:
            found.append(f"{name} code cell {index}: not Python ({err.msg})")
            continue
        _imported(tree, names)
        for node in ast.walk(tree):
            target = _callee(node.func, names) if isinstance(node, ast.Call) else None
            if target is None or any(isinstance(a, ast.Starred) for a in node.args) or any(
                    k.arg is None for k in node.keywords):
                continue  # not the package's, or *args / **kwargs: nothing to bind
            where = f"{name} code cell {index}: {ast.unparse(node.func)}(...) line {node.lineno}"
            try:
                signature = inspect.signature(target)
            except (TypeError, ValueError):
                continue
            try:
                bound = signature.bind(*node.args, **{k.arg: k.value for k in node.keywords})
            except TypeError as err:
                found.append(f"{where}: {err}")
                continue
            try:
                hints = typing.get_type_hints(target.__init__ if isinstance(target, type) else target)
            except (NameError, TypeError, AttributeError):  # an annotation naming a name only type checkers import
                hints = {}
            for parameter, value in bound.arguments.items():
                kind = _literal_type(value) if isinstance(value, ast.expr) else None
                if kind is not None and not _accepts(hints.get(parameter, inspect.Parameter.empty), kind):
                    found.append(f"{where}: {parameter} = {ast.unparse(value)[:40]} is a {kind.__name__}, "
                                 f"declared {hints[parameter]}")
    return found


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_every_package_call_of_a_chapter_binds_and_its_literals_have_their_types(notebook):
    assert problems(notebook.read_text(), notebook.name) == []


def _notebook(*cells: str) -> str:
    return json.dumps({"cells": [{"cell_type": "code", "source": c} for c in cells]})


def test_the_check_catches_a_title_passed_where_the_neighbour_count_goes():
    """The call EPS made before 2026-12-06, an unknown keyword, a missing argument and a literal of another type;
    a correct call, a call through ``**kwargs`` and another library's call pass."""
    broken = _notebook(
        "from dml_tutorial import plots\nfrom dml_tutorial.metrics import nearest_neighbours",
        'fig = plots.retrieval(x, y, z, q, f"Unseen characters, seed {SEED}")',
        "plots.retrieval(x, y, z, q, colour='red')",
        "plots.retrieval(x, y)",
        "nearest_neighbours(z, '5')",
    )
    found = problems(broken)
    assert len(found) == 4, found
    assert "k = f'Unseen characters, seed {SEED}' is a str" in found[0] and "code cell 1" in found[0]
    assert "colour" in found[1] and "missing a required argument" in found[2] and "k = '5' is a str" in found[3]
    fine = _notebook("%matplotlib inline\nfrom dml_tutorial import plots\nimport numpy as np",
                     'plots.retrieval(x, y, z, q, 5, title=f"seed {SEED}")', "plots.retrieval(*args, **kw)",
                     "np.zeros(3, 'int')")
    assert problems(fine) == []
