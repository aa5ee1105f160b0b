"""The test folder's pytest hooks and fixtures; what its files share lives in ``helpers.py``."""

import os
from pathlib import Path

import pytest
from helpers import ONE_THREAD, ROOT, mark_kinds, slow_first


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
    """Each test marked with its kind (:func:`helpers.mark_kinds`: `make test-fast` runs ``-m "unit and not
    slow"``), then `make test`'s order (:func:`helpers.slow_first`): the minutes-long files first, longest first."""
    mark_kinds(items)
    slow_first(items)


@pytest.fixture
def root() -> Path:
    return ROOT



@pytest.fixture(autouse=True)
def _own_drift_log(tmp_path_factory, monkeypatch):
    """Every unit test logs the numbers it checks to a file of its own: notebooks/conftest.py points
    ``DML_TUTORIAL_DRIFT`` at the suite's drift log before the workers start, and a test that plants a failure on
    purpose (a toy record, a chapter trained at lr = 0) would otherwise land in the drift that
    benchmarks/bench_nbval_drift.py derives the check's power from."""
    from dml_tutorial import reference

    monkeypatch.setenv(reference.DRIFT_ENV, str(tmp_path_factory.mktemp("drift") / "drift.jsonl"))
