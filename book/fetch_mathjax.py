"""MathJax 3 for the site, served from the site itself: the book then reads offline, nothing is fetched from a CDN
when a page opens, and the browser test can check the typeset math (tests/test_book.py).

Fetched once from the npm registry (MathJax 3.2.2; its SHA-256 below, whose SHA-512 is the registry's published
integrity ``sha512-Bt+SSVU8eBG27zChVewOicYs7Xsdt40qm4+UpHyX7k0/O9NliPc+x77k1/FEsPsjKPZGJvtRZM1vO+geW0OhGw==``)
through :func:`dml_tutorial.data.download.download` (retries, resume, checksum), and its ``es5/`` folder unpacked
into ``book/_vendor/mathjax/`` (git-ignored), which _config.yml adds to the site's static files and names as
``mathjax_path``. ``make html`` runs it; a second run does nothing."""

import shutil
import sys
import tarfile
import tempfile
from pathlib import Path

from dml_tutorial.data.download import download

URL = "https://registry.npmjs.org/mathjax/-/mathjax-3.2.2.tgz"
SHA256 = "1b9c0a1c44df864e915690558e72adb9cc5203360daefd385084ced3b6c64c09"
TARGET = Path(__file__).resolve().parent / "_vendor" / "mathjax"
ENTRY = "tex-chtml.js"  # TeX input, CommonHTML output: what the pages' $...$ and $$...$$ need


def fetch(target: Path = TARGET, url: str = URL, sha256: str = SHA256) -> Path:
    """``target`` holding MathJax's ``es5/`` build, downloaded and unpacked unless it is there already; the folder
    appears only complete (unpacked beside it, then renamed)."""
    if (target / ENTRY).exists():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=target.parent) as tmp:
        archive = download(url, Path(tmp) / "mathjax.tgz", sha256=sha256)
        with tarfile.open(archive) as tar:
            members = [m for m in tar.getmembers() if m.name.startswith("package/es5/")]
            tar.extractall(tmp, members=members, filter="data")
        if not (Path(tmp) / "package" / "es5" / ENTRY).exists():
            raise RuntimeError(f"{url} has no es5/{ENTRY}: not the MathJax 3 package expected")
        shutil.rmtree(target, ignore_errors=True)
        (Path(tmp) / "package" / "es5").rename(target)
    return target


if __name__ == "__main__":
    print(f"MathJax in {fetch(*map(Path, sys.argv[1:2]))}")
