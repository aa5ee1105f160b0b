"""The wheel carries the course's committed records (``dml_tutorial.chapters``): at build time, ``build_py`` copies
``notebooks/*.results.json`` and ``data/results/`` into ``dml_tutorial/_committed/`` of the build, so that a
package installed without the repository (Colab fetches only the notebook) finds them. The repository stays the one
source of truth: nothing is copied into the source tree. Everything else is in ``pyproject.toml``."""

import shutil
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

HERE = Path(__file__).resolve().parent
COPIED = {"records": (HERE / "notebooks", "[0-9][0-9]_*.results.json"),
          "results": (HERE / "data" / "results", "*/*.json")}


class BuildWithRecords(build_py):
    def run(self):
        super().run()
        if self.editable_mode:  # an editable install reads the checkout itself
            return
        target = Path(self.build_lib) / "dml_tutorial" / "_committed"
        for part, (source, pattern) in COPIED.items():
            for path in sorted(source.glob(pattern)):
                self._copy(path, target / part / path.relative_to(source))
                figures = path.with_suffix(".figures")
                for figure in sorted(figures.glob("*.png")) if figures.is_dir() else []:
                    self._copy(figure, target / part / figure.relative_to(source))

    @staticmethod
    def _copy(source: Path, destination: Path):
        destination.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source, destination)


setup(cmdclass={"build_py": BuildWithRecords})
