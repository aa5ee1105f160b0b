"""A chapter run the way Colab runs it: the package built as a wheel and installed into a fresh virtual environment
outside the repository, the chapter's ``.ipynb`` alone in an empty folder, executed with papermill. It must finish
and show the committed findings, which the wheel carries (``setup.py``, :mod:`dml_tutorial.chapters`).

The fresh environment takes Colab's versions of the packages in ``tests/colab_pip_freeze.gpu.txt`` where this
machine can install them for its Python (torch and torchvision excepted: their CUDA builds are gigabytes, so the
development environment's build is used); everything else the wheel needs comes from the development environment,
which the fresh one sees after its own packages (a ``.pth`` line), without the editable install of the checkout.
"""

import json
import os
import re
import shutil
import site
import subprocess
import sys
import warnings
import zipfile
from pathlib import Path

import pytest
from helpers import ROOT

from dml_tutorial import report

CHAPTER = "07_noise_guarantees"  # a paper chapter with real-data sections and a findings box
#: The smoke profile shrunk further: what this test checks is the committed runs and findings the wheel shows, which
#: no training here changes, and nbval runs the chapter's whole smoke profile beside it (`make test`).
SHORTER = "SETTINGS: {epochs: 1, rates: [0.0, 0.4]}"
SHORT = CHAPTER.split("_", 1)[1]
BUILD_INPUTS = ["pyproject.toml", "setup.py", "MANIFEST.in", "README.md", "LICENSE", "dml_tutorial", "data/results"]


def _sh(*args, **kwargs):
    result = subprocess.run([str(a) for a in args], check=False, capture_output=True, text=True, **kwargs)
    assert result.returncode == 0, f"{' '.join(map(str, args))} failed:\n{result.stdout[-3000:]}\n{result.stderr[-3000:]}"
    return result.stdout


def _build_wheel(tmp: Path) -> Path:
    """The wheel as ``pip install git+<repository>`` builds it, from a copy of what the build reads (the source
    tree stays clean: setuptools writes build/ and egg-info folders beside its input)."""
    src = tmp / "src"
    for name in BUILD_INPUTS:
        path = ROOT / name
        if path.is_dir():
            shutil.copytree(path, src / name, ignore=shutil.ignore_patterns("__pycache__", "_committed"))
        else:
            (src / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy(path, src / name)
    (src / "notebooks").mkdir()
    for record in ROOT.glob("notebooks/[0-9][0-9]_*.results.json"):
        shutil.copy(record, src / "notebooks" / record.name)
    _sh(sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--no-build-isolation", "-w", tmp / "dist", src)
    (wheel,) = (tmp / "dist").glob("dml_tutorial-*.whl")
    return wheel


def _colab_versions() -> list[str]:
    lines = (ROOT / "tests" / "colab_pip_freeze.gpu.txt").read_text().splitlines()
    return [line for line in lines if line and not line.startswith("#") and not line.startswith("torch")]


def _fresh_environment(tmp: Path, wheel: Path) -> Path:
    venv = tmp / "colab-like"
    _sh(sys.executable, "-m", "venv", venv)
    python = venv / "bin" / "python"
    purelib = Path(_sh(python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])").strip())
    (purelib / "zz_development_packages.pth").write_text("\n".join(site.getsitepackages()) + "\n")
    # --no-compile: no .pyc of every module of numpy, scipy, pandas... at install; the kernel compiles what it imports
    pins = subprocess.run([python, "-m", "pip", "install", "--quiet", "--no-compile", "--only-binary=:all:",
                           *_colab_versions()], check=False, capture_output=True, text=True, timeout=600)
    if pins.returncode != 0:  # no such wheel for this Python, or no registry: the development versions stand in
        warnings.warn(f"Colab's versions not installed here, the development ones used: {pins.stderr[-500:]}")
    _sh(python, "-m", "pip", "install", "--quiet", "--no-compile", "--no-deps", wheel)
    _sh(python, "-m", "ipykernel", "install", "--sys-prefix", "--name", "colab-like")
    return python


@pytest.mark.slow
def test_a_chapter_alone_runs_with_the_installed_wheel_and_shows_the_committed_findings(tmp_path):
    wheel = _build_wheel(tmp_path)
    with zipfile.ZipFile(wheel) as archive:  # the licence travels with the package (PEP 639's licenses/ folder)
        licences = [n for n in archive.namelist() if n.endswith(".dist-info/licenses/LICENSE")]
        assert licences, "the wheel carries no LICENSE"
        assert archive.read(licences[0]) == (ROOT / "LICENSE").read_bytes()
    python = _fresh_environment(tmp_path, wheel)
    where = _sh(python, "-c", "import dml_tutorial, dml_tutorial.chapters as c; "
                "print(dml_tutorial.__file__); print(c.notebooks_folder()); print(c.results_folder())",
                cwd=tmp_path).splitlines()
    assert all(str(tmp_path / "colab-like") in line for line in where), where  # the wheel, not the checkout
    assert not str(ROOT) in " ".join(where)
    colab = tmp_path / "content"  # Colab's working folder: the notebook and nothing else
    colab.mkdir()
    shutil.copy(ROOT / "notebooks" / f"{CHAPTER}.ipynb", colab)
    env = {k: v for k, v in os.environ.items() if not k.startswith("DML_TUTORIAL") or k == "DML_TUTORIAL_THREADS"}
    _sh(python, "-m", "papermill", "--kernel", "colab-like", "--cwd", colab, colab / f"{CHAPTER}.ipynb",
        colab / "executed.ipynb", "-p", "PROFILE", "smoke", "-y", SHORTER, cwd=colab, env=env, timeout=900)
    cells = json.loads((colab / "executed.ipynb").read_text())["cells"]
    shown = "\n".join("".join(o.get("text", "")) + "".join(o.get("data", {}).get("text/markdown", ""))
                      for c in cells if c["cell_type"] == "code" for o in c.get("outputs", []))
    assert "is recorded here" not in shown
    unrun = set(re.findall(r"\*\*Not run yet\*\*: no `(\w+)` run", shown))
    recorded = {r.get("profile") for r in report.load_runs(ROOT / "data" / "results") if r["chapter"] == SHORT}
    assert not unrun & recorded, f"the wheel lost the committed runs of {unrun & recorded}"  # "not run" only if true
    assert recorded - unrun, "no section shows a committed run"
    assert shown.count(":::{admonition} Findings") == 1
    assert "glyphs" in shown and "Fashion-MNIST" in shown  # the committed runs' scales, read from the wheel
    assert "supported" in shown or "contradicted" in shown  # their verdicts, not placeholders
