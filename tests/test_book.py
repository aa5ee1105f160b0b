"""The book builds offline from the committed notebooks, each chapter page holds its figures, and the site works in
a real browser (headless Chromium): no console errors, every image loaded, links resolve, search, Colab links."""

import functools
import http.server
import json
import mimetypes
import os
import re
import shutil
import subprocess
import sys
import threading
import urllib.request
from pathlib import Path
from urllib.parse import urlparse

import pytest
import yaml
from helpers import ROOT


@pytest.fixture(scope="module")
def html(tmp_path_factory) -> Path:
    mathjax = ROOT / "book" / "_vendor" / "mathjax" / "tex-chtml.js"
    assert mathjax.exists(), "no local MathJax: `make setup` fetches it (python book/fetch_mathjax.py)"
    out = tmp_path_factory.mktemp("book")
    exe = Path(sys.executable).with_name("jupyter-book")
    jb = str(exe) if exe.exists() else shutil.which("jupyter-book")
    result = subprocess.run([jb, "build", str(ROOT), "--path-output", str(out)], capture_output=True, text=True, check=False,
                            timeout=900)
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-4000:]
    (out / "build.log").write_text(result.stdout + result.stderr)  # read by the API page's test
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


def test_a_cells_printed_lines_render_as_one_box(html):
    """A cell that prints line by line while it computes stores one stream output per flush (EPS's section 1 has
    six); the page shows them as one box (``nb_merge_streams``), not a stack of boxes each with its own margins."""
    nb = json.loads((ROOT / "notebooks" / "05_eps.ipynb").read_text())
    cell = next(c for c in nb["cells"] if "toys.preferred_embeddings(" in "".join(c["source"]))
    assert len([o for o in cell["outputs"] if o["output_type"] == "stream"]) > 1  # what makes the case
    text = (html / "notebooks" / "05_eps.html").read_text()
    first = text.index("positives=all")
    box = text.rindex('<div class="output stream', 0, first)
    assert text.index("positives=easy", first) < text.index("</pre>", box)  # the next line is in the same box


def test_intro_and_colab_button(html):
    assert (html / "book" / "intro.html").exists()
    page = (html / "notebooks" / "01_foundations.html").read_text()
    assert "colab.research.google.com/github/dml-reproduced/dml-tutorial/blob/main/notebooks/01_foundations.ipynb" in page


def test_pages_carry_social_card_metadata_and_the_favicon(html):
    cfg = yaml.safe_load((ROOT / "_config.yml").read_text())
    base = cfg["html"]["baseurl"]
    for file in ("book/intro", "notebooks/03_dcdl"):
        text = (html / f"{file}.html").read_text()
        meta = dict(re.findall(r'<meta property="(og:[a-z:]+)" content="([^"]*)"', text))
        assert meta.get("og:title") and len(meta.get("og:description", "")) > 40, (file, meta)
        assert meta["og:url"] == f"{base}{file}.html" and meta["og:image"] == f"{base}_static/logo.png"
        assert re.search(r'<meta name="description" content="[^"]{40,}"', text), file
        assert re.search(r'<link rel="icon" href="[^"]*favicon.png"', text), file
    assert (html / "_static" / "logo.png").exists() and (html / "404.html").exists()


def test_references_page_lists_every_entry_with_its_link_and_citations_reach_it(html):
    bib = (ROOT / "book" / "references.bib").read_text()
    keys = re.findall(r"^@\w+\{([^,]+),", bib, flags=re.MULTILINE)
    page = (html / "book" / "references.html").read_text()
    entries = re.findall(r'<div class="citation".*?</div>', page, flags=re.DOTALL)
    assert len(entries) >= len(keys), f"{len(entries)} entries listed for {len(keys)} in references.bib"
    unlinked = [e for e in entries if "https://" not in e]
    assert len(unlinked) <= 2, f"entries without an arXiv page or DOI: {unlinked}"  # two NeurIPS papers have neither
    intro = (html / "book" / "intro.html").read_text()
    assert intro.count("references.html#") >= 5  # the five papers, cited in the chapter table


def test_site_holds_only_the_book(html):
    """No stray sources in the site (before exclude_patterns, a .venv inside the repository added ~280 pages)."""
    pages = {p.relative_to(html).with_suffix("").as_posix() for p in html.rglob("*.html")
             if not p.relative_to(html).parts[0].startswith("_")}
    assert pages == set(_toc_files()) | {"index", "search", "genindex", "404"}


# ---- the book in a real browser: Debian's chromium driven by Playwright (no browser download) ----------------

CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
                 "--disable-sync", "--no-first-run"]
# Third-party scripts a page may ask for: none. MathJax is served by the site itself (book/fetch_mathjax.py), so
# math is typeset here as it is online, and any outside request fails the test (it is answered with an empty
# script, so that a page never hangs on it).
EXTERNAL_SCRIPTS = ()
# Console messages known to be benign, each with its cause. Everything else fails the test.
BENIGN = (
    # pydata-sphinx-theme, when no theme mode has been stored yet: it resets to "auto" (a console.error call)
    "Got invalid theme mode: . Resetting to auto.",
    # sphinx-thebe 0.3.1 adds its `const THEBE_JS_URL = ...` config script once per env-before-read-docs, and the
    # page gets two copies; the first one stands, and live code (thebe) is off in this book anyway
    "Identifier 'THEBE_JS_URL' has already been declared",
)


def _toc_files():
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text())
    return [toc["root"]] + [c["file"] for part in toc["parts"] for c in part["chapters"]]


@pytest.fixture(scope="module")
def site(html):
    """The built book served on localhost."""
    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *args):
            pass

    class QuietServer(http.server.ThreadingHTTPServer):
        def handle_error(self, request, client_address):
            if not isinstance(sys.exc_info()[1], ConnectionError):  # the browser may close a connection early
                super().handle_error(request, client_address)

    server = QuietServer(("127.0.0.1", 0), functools.partial(Quiet, directory=str(html)))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_port}"
    server.shutdown()


@pytest.fixture(scope="module")
def pages_site(html):
    """The built book as GitHub Pages serves a project site: under /<repository name>/, and 404.html, with status
    404, for any path that does not exist there."""
    prefix = yaml.safe_load((ROOT / "_config.yml").read_text())["sphinx"]["config"]["notfound_urls_prefix"]

    class Pages(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            path = urlparse(self.path).path
            target = html / path.removeprefix(prefix) if path.startswith(prefix) else html / "missing"
            target = target / "index.html" if target.is_dir() else target
            found = target.is_file() and html in target.resolve().parents
            body = (target if found else html / "404.html").read_bytes()
            self.send_response(200 if found else 404)
            kind = (mimetypes.guess_type(target.name)[0] or "application/octet-stream") if found else "text/html"
            self.send_header("Content-Type", kind)  # a stylesheet served as text/html would not apply
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Pages)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_port}{prefix}"
    server.shutdown()


@pytest.fixture(scope="module")
def browser():
    path = os.environ.get("CHROMIUM") or next(filter(None, map(shutil.which, ("chromium", "chromium-browser"))), None)
    if not path:
        pytest.fail("no Chromium: `make setup` installs Debian's chromium (apt-get install chromium); or set CHROMIUM")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        chromium = p.chromium.launch(executable_path=path, args=CHROMIUM_ARGS)
        yield chromium
        chromium.close()


def _load(browser, url, width=1400, height=900):
    """Open ``url`` in a ``width`` x ``height`` viewport and wait until MathJax has typeset the page; return the
    page, its console messages and page errors, and the outside requests it made."""
    page = browser.new_page(viewport={"width": width, "height": height})
    messages, outside = [], []
    page.on("console", lambda m: messages.append(m.text) if m.type in ("error", "warning") else None)
    page.on("pageerror", lambda e: messages.append(str(e)))

    def route(request_route):
        target = request_route.request.url
        if urlparse(target).hostname == "127.0.0.1":
            request_route.continue_()
        else:
            outside.append(target)
            request_route.fulfill(status=200, content_type="application/javascript", body="")

    page.route("**/*", route)
    page.goto(url, wait_until="networkidle")
    page.evaluate("() => window.MathJax?.startup?.promise")  # typesetting finishes after the load (or no math)
    return page, messages, outside


@pytest.fixture(scope="module")
def visited(browser, site):
    """Every page of the table of contents, loaded once: ``{file: (page, messages, outside requests)}``."""
    pages = {f: _load(browser, f"{site}/{f}.html") for f in _toc_files()}
    yield pages
    for page, _, _ in pages.values():
        page.close()


def test_every_page_loads_without_console_errors(visited):
    for file, (page, messages, outside) in visited.items():
        assert page.title(), file
        unexpected = [m for m in messages if not any(b in m for b in BENIGN)]
        assert not unexpected, f"{file}: {unexpected}"
        strays = [u for u in outside if not u.startswith(EXTERNAL_SCRIPTS)]
        assert not strays, f"{file} asks for outside resources: {strays}"


def test_every_image_has_loaded(visited):
    shown = 0
    for file, (page, _, _) in visited.items():
        images = page.evaluate("[...document.images].map(i => [i.getAttribute('src'), i.complete, i.naturalWidth])")
        broken = [src for src, complete, width in images if not (complete and width > 0)]
        assert not broken, f"{file}: images that did not load: {broken}"
        shown += len(images)
    assert shown > 20  # the chapters' figures, not only the logo


def test_navigation_links_resolve(visited, site):
    for file, (page, _, _) in visited.items():
        links = set(page.evaluate("[...document.querySelectorAll('a[href]')].map(a => a.href.split('#')[0])"))
        local = sorted(u for u in links if u.startswith(site))
        assert len(local) >= len(_toc_files()), f"{file}: the sidebar should link every page, found {local}"
        for url in local:
            with urllib.request.urlopen(url) as response:  # raises on 404
                assert response.status == 200, url


def test_search_finds_each_chapter(browser, site):
    for chapter in _chapters():
        nb = json.loads((ROOT / f"{chapter}.ipynb").read_text())
        title = next(line for c in nb["cells"] if c["cell_type"] == "markdown" for line in c["source"]
                     if line.startswith("# "))
        term = max(re.findall(r"[A-Za-z]{5,}", title), key=len)  # the longest word of the chapter's title
        page, _, _ = _load(browser, f"{site}/search.html?q={term}")
        page.wait_for_function("document.querySelector('#search-results')?.innerText.includes('Search finished')",
                               timeout=20_000)
        hits = page.evaluate("[...document.querySelectorAll('#search-results a')].map(a => a.href)")
        page.close()
        assert any(f"/{chapter}.html" in h for h in hits), f"searching {term!r} does not find {chapter}: {hits}"


def test_colab_link_of_each_chapter_points_at_its_notebook(visited):
    cfg = yaml.safe_load((ROOT / "_config.yml").read_text())["repository"]
    repo = urlparse(cfg["url"]).path.strip("/")
    for chapter in _chapters():
        page, _, _ = visited[chapter]
        links = page.evaluate("[...document.querySelectorAll('a[href*=\"colab.research.google.com\"]')].map(a => a.href)")
        expected = f"https://colab.research.google.com/github/{repo}/blob/{cfg['branch']}/{chapter}.ipynb"
        assert links == [expected], f"{chapter}: {links}"
        assert (ROOT / f"{chapter}.ipynb").exists()


def test_missing_pages_show_the_books_404_page_with_working_links(browser, pages_site):
    """A mistyped address, two folders deep, as GitHub Pages answers it: the book's own 404 page, styled (its
    stylesheets, scripts and logo load from the site's root), with a link back into the book."""
    page, messages, outside = _load(browser, f"{pages_site}notebooks/no/such-chapter.html")
    assert "page not found" in page.inner_text("main").lower()
    unexpected = [m for m in messages if not any(b in m for b in BENIGN) and "404" not in m]
    assert not unexpected and not [u for u in outside if not u.startswith(EXTERNAL_SCRIPTS)]
    assert page.evaluate("[...document.styleSheets].filter(s => s.href && s.cssRules.length > 0).length") > 0
    images = page.evaluate("[...document.images].map(i => [i.getAttribute('src'), i.naturalWidth])")
    assert images and all(width > 0 for _, width in images), images
    links = set(page.evaluate("[...document.querySelectorAll('a[href]')].map(a => a.href.split('#')[0])"))
    home = [u for u in links if u.startswith(pages_site) and u.endswith("intro.html")]
    assert home, links
    with urllib.request.urlopen(home[0]) as response:
        assert response.status == 200
    page.close()


# ---- math, overflow, figure sizes: the book as a reader sees it ----

UNRENDERED = re.compile(r"\$\$?[^$\s][^$]*\$|\\\(|\\\[")  # $...$, $$...$$, \( or \[ left in the text


def _prose(page) -> str:
    """The text of the page's main column without code, outputs printed as text, and typeset math."""
    return page.evaluate("""() => { const main = (document.querySelector('main') || document.body).cloneNode(true);
        main.querySelectorAll('pre, code, mjx-container, script, style, .output').forEach(e => e.remove());
        return main.textContent; }""")


# What MathJax makes of bad TeX: a syntax error becomes <mjx-merror data-mjx-error="...">; an undefined macro is
# typeset in red (the noundefined extension of tex-chtml), <mjx-mtext style="color: red;">.
MATH_ERRORS = """[...document.querySelectorAll('mjx-merror, mjx-mtext[style*="color: red"]')].map(e =>
    e.getAttribute('data-mjx-error') || e.closest('mjx-container').querySelector('mjx-assistive-mml')?.textContent)"""


def test_math_is_typeset_without_errors(visited):
    typeset = {}
    for file, (page, _, _) in visited.items():
        errors = page.evaluate(MATH_ERRORS)
        assert not errors, f"{file}: MathJax could not typeset {errors}"
        left = UNRENDERED.findall(_prose(page))
        assert not left, f"{file}: math left as text: {left[:5]}"
        typeset[file] = page.evaluate("document.querySelectorAll('mjx-container').length")
    for chapter in ("notebooks/03_dcdl", "notebooks/06_ecaml", "notebooks/07_noise_guarantees"):
        assert typeset[chapter] > 20, f"{chapter}: only {typeset[chapter]} formulas typeset"


def test_the_math_check_catches_tex_errors_and_a_stray_dollar(browser, site):
    """The checks above fail on what they are meant to catch: an undefined macro, a TeX syntax error, an unclosed
    brace (MathJax then leaves the whole formula as text) and a $...$ that was never typeset."""
    page, _, _ = _load(browser, f"{site}/notebooks/03_dcdl.html")
    page.evaluate("""() => { const main = document.querySelector('main');
        const add = (text, math) => { const p = document.createElement('p'); p.textContent = text;
            if (math) p.className = 'math'; main.append(p); return p; };
        const typeset = [add('\\\\(\\\\nosuchmacro\\\\)', true), add('\\\\(x^^2\\\\)', true),
                         add('\\\\(\\\\frac{1}{2\\\\)', true)];
        add('costs $x^2$ here', false);
        return MathJax.typesetPromise(typeset); }""")
    assert sorted(page.evaluate(MATH_ERRORS)) == ["Missing open brace for superscript", "\\nosuchmacro"]
    assert UNRENDERED.findall(_prose(page)) == ["\\(", "$x^2$"]
    page.close()


SCREENSHOTS = Path(os.environ.get("BOOK_SCREENSHOTS", ROOT / "_build" / "screenshots"))
WIDTHS = {"desktop": 1400, "phone": 390}
#: The tallest JPEG a screenshot can be (the format's 65,535 px; the API page at 390 px is taller and came out as an
#: empty file): a taller page is shot down to this height.
JPEG_MAX = 65_000


@pytest.mark.parametrize("device", sorted(WIDTHS))
def test_no_page_overflows_the_window_and_screenshots_are_written(browser, site, visited, device):
    """At a desktop and a phone width no page is wider than the window (wide tables and code scroll inside their
    own boxes); a full-page screenshot of each page (its first JPEG_MAX px where it is taller) goes to
    _build/screenshots/<device>/ for review, never an empty file. At the desktop
    width these are the pages every test reads (``visited``, loaded at 1,400 px), not loaded again."""
    width = WIDTHS[device]
    (SCREENSHOTS / device).mkdir(parents=True, exist_ok=True)
    for file in _toc_files():
        page = visited[file][0] if width == 1400 else _load(browser, f"{site}/{file}.html", width=width)[0]
        assert page.viewport_size["width"] == width
        sizes = page.evaluate("[document.documentElement.scrollWidth, window.innerWidth]")
        wide = page.evaluate("""() => [...document.querySelectorAll('main *')].filter(e => {
            const r = e.getBoundingClientRect();
            if (!(r.width > 0 && r.right > window.innerWidth + 1)) return false;
            for (let p = e.parentElement; p; p = p.parentElement) {  // inside a box that scrolls: fine
                if (['auto', 'scroll', 'hidden'].includes(getComputedStyle(p).overflowX)) return false; }
            return true; }).slice(0, 5).map(e => e.tagName.toLowerCase() + '.' + e.className)""")
        cut = page.evaluate("""() => [...document.querySelectorAll('mjx-container[display="true"]')]
            .filter(e => e.scrollWidth > e.clientWidth + 1
                         && !['auto', 'scroll'].includes(getComputedStyle(e).overflowX))
            .length""")
        assert not cut, f"{file} at {width} px: {cut} display equation(s) cut at the column's edge, not scrolling"
        shot = SCREENSHOTS / device / f"{file.replace('/', '_')}.jpg"
        height = page.evaluate("document.documentElement.scrollHeight")
        clip = {"x": 0, "y": 0, "width": width, "height": JPEG_MAX} if height > JPEG_MAX else None
        page.screenshot(path=str(shot), full_page=True, type="jpeg", quality=50, clip=clip)
        assert shot.stat().st_size > 0, f"{file} at {width} px: an empty screenshot ({height} px tall)"
        if page is not visited[file][0]:
            page.close()
        assert sizes[0] <= sizes[1], f"{file} at {width} px: the page is {sizes[0]} px wide ({wide})"


def test_figures_are_not_shrunk_below_legibility(visited):
    """The chapters' figures are drawn at the inline backend's 100 dpi, where 10-point text is 14 px; shown at less
    than 55 % of its natural width a figure's text falls below about 8 px. At 1,400 px no figure may be."""
    checked = 0
    for file, (page, _, _) in visited.items():
        shrunk = page.evaluate("""[...document.querySelectorAll('.cell_output img')].filter(i => i.naturalWidth > 200)
            .map(i => [i.getAttribute('src').slice(0, 60), i.clientWidth / i.naturalWidth])""")
        small = [(src, round(r, 2)) for src, r in shrunk if r < 0.55]
        assert not small, f"{file}: figures shown below 55 % of their size: {small}"
        checked += len(shrunk)
    assert checked > 20  # the chapters' figures were found


def test_a_click_enlarges_a_figure_to_the_window_and_another_closes_it(browser, site):
    page, _, _ = _load(browser, f"{site}/notebooks/03_dcdl.html")
    image = page.locator(".cell_output img").first
    image.scroll_into_view_if_needed()
    before = image.evaluate("i => i.getBoundingClientRect().width")
    image.click()
    assert image.evaluate("i => [i.getBoundingClientRect().width, window.innerWidth]") == [1400, 1400] != before
    image.click()
    assert image.evaluate("i => i.getBoundingClientRect().width") == before
    page.close()


def test_the_api_page_lists_the_package_from_its_docstrings_without_a_warning(html):
    """book/api.md is generated by autodoc when the book builds: every module it names shows its functions, and
    no docstring of the package, nor the API or quick-start page, makes Sphinx warn (a docstring that is not valid
    reStructuredText, e.g. ``|S|`` read as a substitution, would)."""
    log = (html.parent.parent / "build.log").read_text()
    bad = [line for line in log.splitlines() if re.search(r"WARNING|ERROR", line)
           and re.search(r"docstring of dml_tutorial|book/api|book/quickstart", line)]
    assert not bad, "\n".join(bad[:20])
    page = (html / "book" / "api.html").read_text()
    for name in ("dml_tutorial.losses.triplet_loss", "dml_tutorial.metrics.map_at_r", "dml_tutorial.sampling.PKSampler",
                 "dml_tutorial.discrepancy.sinkhorn_divergence", "dml_tutorial.regularizers.energy_confusion"):
        assert f'id="{name}"' in page, f"{name} is not on the API page"
    assert "Our names and pytorch-metric-learning" in (html / "book" / "quickstart.html").read_text()


PAPERS = {"03_dcdl": "dcdl", "04_cbswr": "cbswr", "05_eps": "eps", "06_ecaml": "ecaml",
          "07_noise_guarantees": "noise_guarantees"}


@pytest.mark.parametrize("stem", sorted(PAPERS))
def test_each_paper_chapter_shows_its_answer_first_and_its_evidence_unfolded(visited, stem):
    """The reader's book (#51): the verdict lines above the first section, the Findings box with its target, and
    every compact results table of the real-data sections visible without opening a fold."""
    page, _, _ = visited[f"notebooks/{stem}"]
    layout = page.evaluate("""() => {
        const line = document.querySelector('.admonition.verdict-line');
        const first = document.querySelector('.bd-article h2');  // not the page's "Contents" sidebar
        return {line: line !== null && line.offsetParent !== null,
                above: line !== null && first !== undefined &&
                       (line.compareDocumentPosition(first) & Node.DOCUMENT_POSITION_FOLLOWING) !== 0,
                claims: line ? line.querySelectorAll('li').length : 0};
    }""")
    assert layout["line"], f"{stem}: no verdict line on the page"
    assert layout["above"], f"{stem}: the verdict line is not above the first section"
    from dml_tutorial import claims, findings

    lines = findings.verdict_lines(PAPERS[stem], findings.scale_frames(PAPERS[stem])).splitlines()
    waiting = [line for line in lines if line.startswith("- Not run yet: ")]
    # a line per claim with a word or a gain, and one line counting those not run yet
    assert layout["claims"] == len([line for line in lines if line.startswith("- ")])
    assert len(waiting) <= 1 and layout["claims"] - len(waiting) + sum(
        int(w.split()[4]) for w in waiting) == len(claims.CLAIMS[PAPERS[stem]])
    findings = page.evaluate(f"""() => {{
        const target = document.getElementById('{PAPERS[stem].replace("_", "-")}-findings');
        const box = [...document.querySelectorAll('.admonition')].find(
            a => a.querySelector('.admonition-title')?.textContent.trim() === 'Findings');
        return [target !== null, box !== undefined && box.offsetParent !== null];
    }}""")
    assert findings == [True, True], f"{stem}: the Findings box or its target is missing"
    tables = page.evaluate("""() => [...document.querySelectorAll('main strong')]
        .filter(s => s.parentElement.textContent.includes('the rows and columns the claims compare'))
        .map(s => [s.textContent, s.closest('details') === null, s.offsetParent !== null])""")
    assert tables, f"{stem}: no compact results table"
    folded = [name for name, outside, shown in tables if not (outside and shown)]
    assert not folded, f"{stem}: results tables folded: {folded}"


def test_no_table_overflows_its_column_on_a_phone(browser, site):
    """At 390 px a visible table fits its column: a wide one turns into cards (cards.js), each cell headed by its
    column's name, so the unseen-class columns and the glyph column of a findings table are on screen."""
    checked = 0
    for file in _toc_files():
        page, _, _ = _load(browser, f"{site}/{file}.html", width=390)
        over = page.evaluate("""() => [...document.querySelectorAll('.bd-article table')]
            .filter(t => t.offsetParent !== null)
            .map(t => [t.scrollWidth, t.parentElement.clientWidth, t.textContent.trim().slice(0, 50)])""")
        checked += len(over)
        wide = [text for width, column, text in over if width > column + 1]
        page.close()
        assert not wide, f"{file} at 390 px: tables wider than their column: {wide}"
    assert checked > 30


def test_a_wide_table_becomes_cards_labelled_by_its_columns_on_a_phone(browser, site):
    page, _, _ = _load(browser, f"{site}/notebooks/05_eps.html", width=390)
    card = page.evaluate("""() => {
        const t = document.querySelector('table.dml-cards');
        if (!t) return null;
        const cell = t.querySelector('tbody td[data-label]');
        return [getComputedStyle(t.querySelector('tbody tr')).display, cell.dataset.label,
                getComputedStyle(cell, '::before').content];
    }""")
    page.close()
    assert card is not None, "no wide table turned into cards at 390 px"
    display, name, before = card
    assert display == "block" and name and before == f'"{name}: "'


def test_on_a_phone_a_click_opens_a_wide_figure_at_its_own_size_in_a_box_that_pans(browser, site):
    page, _, _ = _load(browser, f"{site}/notebooks/03_dcdl.html", width=390)
    image = page.locator(".cell_output img").first
    image.scroll_into_view_if_needed()
    assert page.locator(".dml-hint").count() > 0  # "Click to enlarge." under the shrunk figures
    image.click()
    sizes = page.evaluate("""() => {
        const box = document.querySelector('.dml-pan'), img = box.querySelector('img');
        return [img.getBoundingClientRect().width, img.naturalWidth, box.scrollWidth > box.clientWidth];
    }""")
    assert sizes[0] == sizes[1] and sizes[2], sizes
    page.locator(".dml-pan").click()
    assert page.locator(".dml-pan").count() == 0
    page.close()


#: Page heights at 1,400 px (#51), as measured at 0.10.0 (fresh-clone `make test`, AMD EPYC host) plus 1% for
#: rendering on another machine: DCDL 16,891, CBSwR 14,393, EPS 16,560, ECAML 16,420, noise 16,242 px; EPS 16,051 at
#: 0.13.0 (test bed I's section cut to three sentences); ECAML 15,941 at 0.15.0 (test bed I superseded, a figure in
#: one row). The reader's budgets for DCDL (20,873) and EPS (15,826, its 2026-11-25 height) are met; so is ECAML's
#: (15,493, its 2026-11-25 height) since 0.18.0 (15,468 px: its test bed paragraphs shorter).
HEIGHTS = {"03_dcdl": 17_060, "04_cbswr": 14_540, "05_eps": 15_826, "06_ecaml": 15_493,
           "07_noise_guarantees": 16_400}


@pytest.mark.parametrize("stem", sorted(HEIGHTS))
def test_paper_chapters_are_no_taller_than_at_the_last_reading(visited, stem):
    page, _, _ = visited[f"notebooks/{stem}"]
    height = page.evaluate("document.documentElement.scrollHeight")
    assert height <= HEIGHTS[stem], f"{stem}: {height} px at 1,400 px, budget {HEIGHTS[stem]}"
