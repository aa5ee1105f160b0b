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
