"""Command line: ``python -m dml_tutorial run CHAPTER|all [--profile P] [-p NAME VALUE ...] [--output DIR]``.

Executes chapter notebooks with papermill. By default (no ``--output``) a notebook is executed in place, which is
how the committed notebooks get their stored outputs; with ``--output DIR`` the executed copy goes there and the
source is left alone. A failing cell stops the run with one message and a non-zero exit; the partially executed
notebook is kept for inspection.
"""

from __future__ import annotations

import argparse
import ast
import sys
import time
from pathlib import Path

NOTEBOOKS = Path(__file__).resolve().parent.parent / "notebooks"


def chapters(folder: Path = NOTEBOOKS) -> dict[str, Path]:
    """``{name: path}`` of the chapter notebooks, e.g. ``foundations`` for ``01_foundations.ipynb``."""
    return {p.stem.split("_", 1)[-1]: p for p in sorted(folder.glob("[0-9][0-9]_*.ipynb"))}


def _value(text: str):
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError):
        return text


def run_notebook(path: Path, output: Path, parameters: dict, cwd: Path) -> float:
    import papermill as pm

    start = time.perf_counter()
    pm.execute_notebook(str(path), str(output), parameters=parameters, cwd=str(cwd), progress_bar=True,
                        kernel_name="python3")
    return time.perf_counter() - start


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="dml-tutorial", description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    run = sub.add_parser("run", help="execute chapter notebooks with papermill")
    run.add_argument("chapter", help=f"a chapter name or 'all' (known: {', '.join(chapters()) or 'none'})")
    run.add_argument("--profile", choices=("auto", "smoke", "full"), default=None,
                     help="overrides the notebook's PROFILE parameter (default: keep the notebook's 'auto')")
    run.add_argument("-p", "--parameter", nargs=2, action="append", default=[], metavar=("NAME", "VALUE"),
                     help="set a notebook parameter (VALUE is read as a Python literal when it is one)")
    run.add_argument("--output", type=Path, default=None, help="folder for executed copies (default: in place)")
    args = parser.parse_args(argv)

    known = chapters()
    names = list(known) if args.chapter == "all" else [args.chapter]
    unknown = [n for n in names if n not in known]
    if unknown:
        parser.error(f"unknown chapter {unknown[0]!r}; known chapters: {', '.join(known)}")
    params = {name: _value(value) for name, value in args.parameter}
    if args.profile:
        params["PROFILE"] = args.profile
    for name in names:
        src = known[name]
        out = src if args.output is None else args.output / src.name
        out.parent.mkdir(parents=True, exist_ok=True)
        print(f"== {name}: {src.relative_to(NOTEBOOKS.parent)} -> {out}", flush=True)
        try:
            seconds = run_notebook(src, out, params, cwd=NOTEBOOKS.parent)
        except Exception as err:  # noqa: BLE001 (papermill raises PapermillExecutionError and kernel errors)
            print(f"error: chapter {name!r} failed: {str(err).strip().splitlines()[-1] if str(err).strip() else err!r}"
                  f"\nthe partially executed notebook is kept at {out}", file=sys.stderr)
            return 1
        print(f"== {name}: done in {seconds:.0f} s", flush=True)
    return 0
