"""The book builds offline from the committed notebooks, and each chapter page holds its figures."""

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from conftest import ROOT


@pytest.fixture(scope="module")
def html(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("book")
    exe = Path(sys.executable).with_name("jupyter-book")
    jb = str(exe) if exe.exists() else shutil.which("jupyter-book")
    result = subprocess.run([jb, "build", str(ROOT), "--path-output", str(out)], capture_output=True, text=True, check=False,
                            timeout=900)
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-4000:]
    return out / "_build" / "html"


def _chapters():
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text())
    files = [c["file"] for part in toc["parts"] for c in part["chapters"]]
    return [f for f in files if f.startswith("notebooks/")]


def test_every_chapter_page_exists_with_its_figures(html):
    chapters = _chapters()
    assert chapters
    for chapter in chapters:
        page = html / f"{chapter}.html"
        assert page.exists(), f"missing {page}"
        text = page.read_text()
        nb = json.loads((ROOT / f"{chapter}.ipynb").read_text())
        figures = sum(1 for c in nb["cells"] if c["cell_type"] == "code" for o in c.get("outputs", [])
                      if "image/png" in o.get("data", {}))
        assert figures > 0, f"{chapter} stores no figure"
        images = re.findall(r'<img[^>]+src="([^"]+\.png)"', text)
        assert len(images) >= figures, f"{chapter}: {len(images)} images on the page, {figures} in the notebook"
        for src in images:
            assert (page.parent / src).exists(), src


def test_intro_and_colab_button(html):
    assert (html / "book" / "intro.html").exists()
    page = (html / "notebooks" / "01_foundations.html").read_text()
    assert "colab.research.google.com/github/dml-reproduced/dml-tutorial/blob/main/notebooks/01_foundations.ipynb" in page
