from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture
def root() -> Path:
    return ROOT


@pytest.fixture(autouse=True)
def _no_reference_check(monkeypatch):
    # notebooks/conftest.py switches the check of trained numbers on for nbval; a plain `pytest` that collects both
    # folders would otherwise hand it to the unit tests' own small notebooks, which have no committed record
    monkeypatch.delenv("DML_TUTORIAL_CHECK", raising=False)


def load_benchmark(name: str):
    """The script ``benchmarks/<name>.py`` as a module (benchmarks/ is not a package)."""
    import importlib.util
    import sys

    spec = importlib.util.spec_from_file_location(name, ROOT / "benchmarks" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module
