"""Layers that point one way: the verdict, registry and page modules load no torch and no plotting, so that the
results pages and a chapter's verdicts are computed without them (and quickly)."""

import subprocess
import sys

import pytest

HEAVY = ("torch", "matplotlib", "seaborn", "sklearn", "torchvision")


@pytest.mark.parametrize("module", ["claims", "registry", "reference", "evidence", "records", "report", "tables",
                                    "labels", "settings", "profiles", "spec"])
def test_the_verdict_and_page_modules_load_no_torch_and_no_plotting(module):
    code = f"import sys, dml_tutorial.{module}; print(sorted(m for m in {HEAVY!r} if m in sys.modules))"
    loaded = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    assert loaded == "[]", f"dml_tutorial.{module} loads {loaded}"


def test_the_plotting_module_still_offers_the_labels_and_tables_it_moved():
    from dml_tutorial import labels, plots, tables

    assert plots.label_tex is labels.label_tex and plots.mean_std is labels.mean_std
    assert plots.results_table is tables.results_table and plots.styled is tables.styled
