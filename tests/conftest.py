"""The test folder's pytest hooks and fixtures; what its files share lives in ``helpers.py``."""

import os
from pathlib import Path

import pytest
from helpers import ONE_THREAD, ROOT, slow_first


def pytest_configure(config):
    """Under pytest-xdist with several workers (`make test`: two on two cores), every worker trains, and starts its
    kernels and subprocesses, with one thread (issue #47): two workers of two OpenMP threads each on two cores spin
    against each other, as two nbval kernels did several times slower (notebooks/conftest.py). A test that needs
    more threads sets them itself (tests/test_discrepancy.py, tests/test_train.py)."""
    if int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1")) > 1:
        import torch

        os.environ.update(ONE_THREAD)
        torch.set_num_threads(1)


def pytest_collection_modifyitems(config, items):
    """The nbval run's order (:func:`helpers.slow_first`): its minutes-long files first, longest first."""
    slow_first(items)


@pytest.fixture
def root() -> Path:
    return ROOT


@pytest.fixture(autouse=True)
def _no_reference_check(monkeypatch):
    # notebooks/conftest.py switches the check of trained numbers on for nbval; a plain `pytest` that collects both
    # folders would otherwise hand it to the unit tests' own small notebooks, which have no committed record
    monkeypatch.delenv("DML_TUTORIAL_CHECK", raising=False)
