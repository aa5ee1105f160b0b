"""How long each chapter's page is and how far down its answer sits, at a desktop and a phone width (issue #87).

For every page of the table of contents, in Chromium (Playwright, as ``tests/test_book.py`` drives it) at 1,400 and
390 px wide, folds closed as a reader first sees them:

- the page's height in px (``document.documentElement.scrollHeight``);
- where the answer box starts (the top of the first ``.verdict-line``, ``findings.opening``'s box), in px from the
  top of the page and as a share of the page;
- where the first visible figure starts (an image of a cell's output outside a closed fold), in px;
- how many code cells show their code (their input not folded).

    python benchmarks/bench_pages.py [--site _build/html] [--label after]

Build the site first (``make html``). Writes benchmarks/results/pages_<label>.json; two labels (e.g. the commit
before and after a change, each built from its own checkout) compare side by side.
"""

import argparse
import functools
import http.server
import json
import os
import shutil
import threading
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
WIDTHS = {"desktop": 1400, "phone": 390}

MEASURE = """() => {
    const visible = e => e.offsetParent !== null && !e.closest('details:not([open])');  // folds closed
    const top = e => e.getBoundingClientRect().top + window.scrollY;
    const answer = document.querySelector('.verdict-line');
    const figure = [...document.querySelectorAll('.cell_output img')].find(visible);
    const shown = [...document.querySelectorAll('.cell_input')].filter(visible).length;
    return {height: document.documentElement.scrollHeight, answer: answer ? Math.round(top(answer)) : null,
            figure: figure ? Math.round(top(figure)) : null, code_cells_shown: shown};
}"""


def pages(root: Path = ROOT) -> list[str]:
    """The table of contents' files, in its order."""
    toc = yaml.safe_load((root / "_toc.yml").read_text())
    return [toc["root"]] + [c["file"] for part in toc["parts"] for c in part["chapters"]]


def serve(folder: Path) -> tuple[str, http.server.HTTPServer]:
    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(Quiet, directory=str(folder)))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return f"http://127.0.0.1:{server.server_port}", server


def measure(site: Path, files: list[str]) -> dict:
    """``{file: {device: {height, answer, answer_share, figure, code_cells_shown}}}`` of the site at ``site``."""
    from playwright.sync_api import sync_playwright

    chromium = os.environ.get("CHROMIUM") or shutil.which("chromium") or shutil.which("chromium-browser")
    url, server = serve(site)
    out = {}
    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=chromium, args=["--no-sandbox"])
            for file in files:
                for device, width in WIDTHS.items():
                    page = browser.new_page(viewport={"width": width, "height": 900})
                    page.route("**/*", lambda r: r.continue_() if "127.0.0.1" in r.request.url else r.abort())
                    page.goto(f"{url}/{file}.html", wait_until="load")
                    page.wait_for_timeout(1500)  # MathJax typesets; the heights settle
                    m = page.evaluate(MEASURE)
                    m["answer_share"] = round(m["answer"] / m["height"], 3) if m["answer"] is not None else None
                    out.setdefault(file, {})[device] = m
                    page.close()
            browser.close()
    finally:
        server.shutdown()
    return out


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--site", type=Path, default=ROOT / "_build" / "html")
    parser.add_argument("--label", default="after")
    args = parser.parse_args(argv)
    if not (args.site / "index.html").exists():
        raise SystemExit(f"no built site at {args.site}: run `make html` first")
    result = {"label": args.label, "site": str(args.site), "widths": WIDTHS,
              "pages": measure(args.site, pages())}
    for file, devices in result["pages"].items():
        print(f"{file:34s} " + "  ".join(
            f"{d}: {m['height']:>6,} px, answer at {m['answer'] if m['answer'] is not None else '-':>5}, "
            f"figure at {m['figure'] if m['figure'] is not None else '-':>6}, code cells {m['code_cells_shown']:>2}"
            for d, m in devices.items()))
    path = ROOT / "benchmarks" / "results" / f"pages_{args.label}.json"
    path.write_text(json.dumps(result, indent=1) + "\n")
    print(f"wrote {path.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
