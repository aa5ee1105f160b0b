"""Where `make test`'s time goes: per kind (unit, chapter runs, book build, browser/screenshots, nbval), per file
and per test.

`make test` runs pytest once with ``--junitxml`` (the unit tests, the book and nbval over the chapters, on two
workers) and then this script, which reads the XML file (or several) and writes ``_build/test-durations.txt``:

    python benchmarks/bench_suite.py _build/test-suite.xml --out _build/test-durations.txt
    python benchmarks/bench_suite.py ... --save benchmarks/results/suite_<host>.json   # keep a measurement

Times are each test's own seconds (set-up, call and tear-down) as pytest's JUnit report gives them; the tests
run on two workers, so their wall time (the report's ``time`` attribute, also printed) is about half their sum.
A notebook's nbval time is the sum of its cells', which is the time of executing the chapter.
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import xml.etree.ElementTree as ET
from collections import defaultdict
from pathlib import Path

BROWSER_TESTS = ("test_book.py",)  # the built book served to headless Chromium: pages, screenshots, math
#: Unit tests that execute whole chapters: the full and colab profiles' dry runs, the wheel's chapter run.
CHAPTER_RUN_TESTS = ("test_full_profile.py", "test_colab_profile.py", "test_wheel.py")


def kind(file: str, name: str) -> str:
    """The part of the suite a test belongs to: ``nbval``, ``screenshots`` (the full-page screenshots),
    ``book`` (the book built and checked in a browser), ``chapter runs`` (:data:`CHAPTER_RUN_TESTS`) or ``unit``."""
    if file.endswith(".ipynb"):
        return "nbval"
    if file.endswith(CHAPTER_RUN_TESTS):
        return "chapter runs"
    if file.endswith(BROWSER_TESTS):
        return "screenshots" if "screenshot" in name else "book"
    return "unit"


def read(paths) -> tuple[list[dict], dict]:
    """Every test case of the JUnit files ``paths``: ``[{file, name, seconds, outcome}]``, and each file's
    (pytest run's) wall time."""
    cases, wall = [], {}
    for path in paths:
        root = ET.parse(path).getroot()
        suites = [root] if root.tag == "testsuite" else root.findall("testsuite")
        wall[str(path)] = sum(float(s.get("time", 0)) for s in suites)
        for case in root.iter("testcase"):
            classname, name = case.get("classname", ""), case.get("name", "")
            file = case.get("file") or _file_of(classname)
            outcome = next((child.tag for child in case if child.tag in ("failure", "error", "skipped")), "passed")
            cases.append({"file": file, "name": name, "seconds": float(case.get("time", 0)), "outcome": outcome})
    return cases, wall


def _file_of(classname: str) -> str:
    """``tests.test_losses`` -> ``tests/test_losses.py``; nbval's ``notebooks.03_dcdl.ipynb`` keeps its suffix."""
    if classname.endswith(".ipynb"):
        return classname[: -len(".ipynb")].replace(".", "/") + ".ipynb"
    parts = classname.split(".")
    while parts and parts[-1][:1].isupper():  # a test class
        parts.pop()
    return "/".join(parts) + ".py"


def summary(cases: list[dict], wall: dict, slowest: int = 15) -> dict:
    by_kind, by_file = defaultdict(float), defaultdict(float)
    for c in cases:
        by_kind[kind(c["file"], c["name"])] += c["seconds"]
        by_file[c["file"]] += c["seconds"]
    top = sorted(cases, key=lambda c: -c["seconds"])[:slowest]
    return {"host": platform.node(), "cpu": _cpu(), "tests": len(cases),
            "passed": sum(c["outcome"] == "passed" for c in cases),
            "failed": sum(c["outcome"] in ("failure", "error") for c in cases),
            "skipped": sum(c["outcome"] == "skipped" for c in cases),
            "wall_seconds": wall, "seconds_by_kind": dict(sorted(by_kind.items(), key=lambda kv: -kv[1])),
            "seconds_by_file": dict(sorted(by_file.items(), key=lambda kv: -kv[1])),
            "slowest": [{"test": f"{c['file']}::{c['name']}", "seconds": round(c["seconds"], 1)} for c in top]}


def _cpu() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                flags = Path("/proc/cpuinfo").read_text()
                return f"{line.split(':', 1)[1].strip()} ({'AVX-512' if 'avx512f' in flags else 'AVX2'})"
    except OSError:
        pass
    return platform.processor() or platform.machine()


def text(s: dict) -> str:
    lines = [f"`make test` durations on {s['cpu']}: {s['tests']} tests, {s['failed']} failed", "",
             "wall time of each pytest run (s):"]
    lines += [f"  {Path(p).name:<28} {t:8.0f}" for p, t in s["wall_seconds"].items()]
    lines += ["", "test time by kind (s; two workers run them):"]
    lines += [f"  {k:<28} {t:8.0f}" for k, t in s["seconds_by_kind"].items()]
    lines += ["", "test time by file (s):"]
    lines += [f"  {f:<50} {t:8.1f}" for f, t in s["seconds_by_file"].items()]
    lines += ["", f"slowest {len(s['slowest'])} tests (s):"]
    lines += [f"  {c['seconds']:8.1f}  {c['test']}" for c in s["slowest"]]
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("junit", nargs="+", type=Path, help="pytest --junitxml files")
    parser.add_argument("--out", type=Path, default=Path("_build/test-durations.txt"))
    parser.add_argument("--save", type=Path, help="also write the summary as JSON here")
    parser.add_argument("--slowest", type=int, default=15)
    args = parser.parse_args(argv)
    present = [p for p in args.junit if p.exists()]
    if not present:
        print(f"no JUnit file among {[str(p) for p in args.junit]}: run the tests first", file=sys.stderr)
        return 1
    s = summary(*read(present), slowest=args.slowest)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(text(s))
    print(text(s), end="")
    # the suite's closing line (every JUnit file together), in the plain form CI reads
    print(f"suite: {s['passed']} passed, {s['failed']} failed, {s['skipped']} skipped")
    if args.save:
        args.save.parent.mkdir(parents=True, exist_ok=True)
        args.save.write_text(json.dumps(s, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
