"""benchmarks/bench_suite.py: `make test`'s JUnit reports summed by kind, file and test, on hand-written reports."""


import helpers
import pytest
from helpers import ROOT, load_benchmark

UNIT = """<?xml version="1.0" encoding="utf-8"?><testsuites name="pytest tests"><testsuite name="pytest" errors="0"
failures="1" skipped="1" tests="6" time="30.0">
<testcase classname="tests.test_losses" name="test_a" time="1.5" />
<testcase classname="tests.test_losses.TestGroup" name="test_b" time="2.5"><failure message="x">x</failure></testcase>
<testcase classname="tests.test_book" name="test_no_page_overflows_the_window_and_screenshots_are_written[phone]"
 time="20.0" />
<testcase classname="tests.test_book" name="test_search_finds_each_chapter" time="6.0" />
<testcase classname="tests.test_slurm" name="test_cluster" time="0.0"><skipped message="no slurm" /></testcase>
<testcase classname="tests.test_wheel" name="test_a_chapter_alone" time="8.0" />
</testsuite></testsuites>"""
NBVAL = """<?xml version="1.0" encoding="utf-8"?><testsuites name="pytest tests"><testsuite name="pytest" errors="0"
failures="0" skipped="0" tests="2" time="50.0">
<testcase classname="notebooks.03_dcdl.ipynb" name="Cell 0" time="10.0" />
<testcase classname="notebooks.03_dcdl.ipynb" name="Cell 1" time="40.0" />
</testsuite></testsuites>"""


@pytest.fixture
def suite():
    return load_benchmark("bench_suite")


def test_sums_by_kind_file_and_test_and_closes_with_the_counts(suite, tmp_path, capsys):
    (tmp_path / "unit.xml").write_text(UNIT)
    (tmp_path / "nbval.xml").write_text(NBVAL)
    out = tmp_path / "durations.txt"
    assert suite.main([str(tmp_path / "unit.xml"), str(tmp_path / "nbval.xml"), "--out", str(out), "--slowest", "2",
                       "--save", str(tmp_path / "s.json")]) == 0
    s = suite.summary(*suite.read([tmp_path / "unit.xml", tmp_path / "nbval.xml"]))
    assert s["seconds_by_kind"] == {"nbval": 50.0, "screenshots": 20.0, "chapter runs": 8.0, "book": 6.0,
                                    "unit": 4.0}
    assert s["seconds_by_file"]["notebooks/03_dcdl.ipynb"] == 50.0
    assert s["seconds_by_file"]["tests/test_losses.py"] == 4.0  # a test class's tests count for its file
    assert (s["passed"], s["failed"], s["skipped"]) == (6, 1, 1)
    assert s["wall_seconds"] == {str(tmp_path / "unit.xml"): 30.0, str(tmp_path / "nbval.xml"): 50.0}
    text = out.read_text()
    assert text.index("40.0  notebooks/03_dcdl.ipynb::Cell 1") < text.index("20.0  tests/test_book.py::test_no_page")
    assert capsys.readouterr().out.splitlines()[-1] == "suite: 6 passed, 1 failed, 1 skipped"


def test_no_report_is_a_clear_error(suite, tmp_path, capsys):
    assert suite.main([str(tmp_path / "missing.xml")]) == 1
    assert "run the tests first" in capsys.readouterr().err


def test_the_slow_files_that_make_test_hands_out_first_exist_and_lead_the_collection(root):
    """A renamed slow file would drop out of SLOW_FIRST silently and run last again (tests/helpers.py)."""
    import helpers

    assert all((root / name).exists() for name in helpers.SLOW_FIRST)
    assert len(set(helpers.SLOW_FIRST)) == len(helpers.SLOW_FIRST)

    class Item:
        def __init__(self, nodeid):
            self.nodeid = nodeid

    items = [Item(n) for n in ("tests/test_a.py::x", "notebooks/06_ecaml.ipynb::Cell 0", "tests/test_a.py::z",
                               "notebooks/04_cbswr.ipynb::Cell 0", "notebooks/06_ecaml.ipynb::Cell 1")]
    helpers.slow_first(items)
    assert [i.nodeid for i in items] == ["notebooks/04_cbswr.ipynb::Cell 0", "notebooks/06_ecaml.ipynb::Cell 0",
                                         "notebooks/06_ecaml.ipynb::Cell 1", "tests/test_a.py::x",
                                         "tests/test_a.py::z"]  # stable within a file: a notebook's cells in order
    make = (root / "Makefile").read_text()
    assert "XDIST = -n 2 --dist loadfile --no-loadscope-reorder" in make  # or xdist reorders the files by test count
    assert "$(XDIST) tests notebooks" in make  # one run: no worker idles at the end of a first one


def test_no_test_file_imports_a_conftest(root):
    """pytest imports both tests/conftest.py and notebooks/conftest.py as the module ``conftest``: a test file that
    imported from it failed to import whenever the two folders were collected in one run (what the test files share
    is in tests/helpers.py)."""
    import ast

    importers = []
    for path in sorted((root / "tests").glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import) else
                     [node.module] if isinstance(node, ast.ImportFrom) else [])
            if "conftest" in names:
                importers.append(f"{path.name}:{node.lineno}")
    assert importers == [], f"import what they share from helpers, not conftest: {importers}"


def test_the_fast_lane_kinds_are_the_suites_kinds():
    """`make test-fast` and the suite's time report sort the tests into the same kinds."""
    bench_suite = load_benchmark("bench_suite")
    names = {"nbval": "nbval", "book": "book", "chapter runs": "chapter_runs", "unit": "unit", "screenshots": "book"}
    files = [str(p.relative_to(ROOT)) for p in sorted((ROOT / "tests").glob("test_*.py"))]
    files += [str(p.relative_to(ROOT)) for p in sorted((ROOT / "notebooks").glob("*.ipynb"))]
    for file in files:
        assert names[bench_suite.kind(file, "test_x")] == helpers.kind(f"{file}::test_x"), file
    assert helpers.kind("tests/test_book.py::test_screenshots") == "book"
    assert set(helpers.SLOW_UNIT_FILES) <= set(files)  # a renamed file would leave the fast lane slow
