"""nbval over the chapters, run as another machine would run them.

The stored outputs come from one machine; a reader's laptop, a hosted CI runner or a colleague's server rounds
floats differently, and trained numbers then drift. So that a passing check means "passes anywhere", the kernels
nbval starts here (:func:`pytest_runtest_setup` gives them this environment) differ from the machine that stored
the outputs:

- every linear and convolutional layer's initial weights are perturbed by a relative 1e-7
  (``tests/other_machine/perturb_weights.py``, an IPython start-up file);
- PyTorch's own CPU kernels and MKL are held to AVX2 code paths (``ATEN_CPU_CAPABILITY``,
  ``MKL_ENABLE_INSTRUCTIONS``), so vectorised sums run in another order on a CPU with AVX-512;
- no GPU is visible (the stored outputs are the CPU smoke profile's; on a GPU ``PROFILE="auto"`` picks another);
- one CPU thread per kernel (``DML_TUTORIAL_THREADS``, ``OMP_NUM_THREADS``) where the outputs were stored with
  two, so that ``make test`` runs two chapters side by side on two cores (pytest-xdist) without oversubscribing.

What nbval compares as text must therefore be machine-independent; trained numbers are compared with the
chapter's committed record by :func:`dml_tutorial.reference.check`, switched on by ``DML_TUTORIAL_CHECK``.
``DML_TUTORIAL_SAME_MACHINE=1`` turns the emulation off (to see whether a failure is the emulation's).
"""

import os
import shutil
import tempfile
from pathlib import Path

import pytest

import dml_tutorial

# found through the package, so that a copy of this file next to a copied notebook works too (the tests do that)
START_UP = Path(dml_tutorial.__file__).resolve().parent.parent / "tests" / "other_machine" / "perturb_weights.py"


def emulate_other_machine(environ) -> None:
    """Set ``environ`` (a kernel's environment) as this module describes."""
    ipython = Path(tempfile.mkdtemp(prefix="dml-tutorial-ipython-"))  # the kernel writes its history there
    (ipython / "profile_default" / "startup").mkdir(parents=True)
    shutil.copy(START_UP, ipython / "profile_default" / "startup" / "00_perturb_weights.py")
    environ.update(IPYTHONDIR=str(ipython), ATEN_CPU_CAPABILITY="avx2", MKL_ENABLE_INSTRUCTIONS="AVX2",
                   DML_TUTORIAL_THREADS="1", OMP_NUM_THREADS="1")


#: What the kernels of this folder's notebooks get on top of the test process's environment (filled in once per
#: process by :func:`kernel_environment`).
KERNEL_ENV: dict[str, str] = {}


def kernel_environment() -> dict[str, str]:
    """The environment variables this module describes, for nbval's kernels: the reference check, no GPU and,
    unless ``DML_TUTORIAL_SAME_MACHINE=1``, the other machine's emulation."""
    if not KERNEL_ENV:
        KERNEL_ENV.update(DML_TUTORIAL_CHECK=os.environ.get("DML_TUTORIAL_CHECK", "1"), CUDA_VISIBLE_DEVICES="")
        if os.environ.get("DML_TUTORIAL_SAME_MACHINE") != "1":
            emulate_other_machine(KERNEL_ENV)
    return KERNEL_ENV


def pytest_configure(config):
    if "DML_TUTORIAL_DRIFT" not in os.environ:  # every checked number, for benchmarks/bench_nbval_drift.py (set
        drift = Path(config.rootpath) / "_build" / "nbval-drift.jsonl"  # before pytest-xdist starts its workers,
        drift.parent.mkdir(exist_ok=True)  # which then share the file; nothing reads it unless the check is on)
        drift.write_text("")
        os.environ["DML_TUTORIAL_DRIFT"] = str(drift)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_setup(item):
    """nbval starts a notebook's kernel when its first cell is set up, and the kernel inherits the environment of
    that moment: set :func:`kernel_environment` for the set-up only. A hook of this folder's ``conftest.py``, so it
    runs for the notebooks' cells alone, and the unit tests collected in the same run (``make test`` runs both on
    the same two workers) keep their own environment, and their own small notebooks run unchecked."""
    saved = {name: os.environ.get(name) for name in kernel_environment()}
    os.environ.update(kernel_environment())
    try:
        return (yield)
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def pytest_unconfigure(config):
    if KERNEL_ENV.get("IPYTHONDIR", "").startswith(tempfile.gettempdir()):
        shutil.rmtree(KERNEL_ENV["IPYTHONDIR"], ignore_errors=True)
