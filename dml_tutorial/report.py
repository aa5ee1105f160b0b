"""Results as data: what a chapter run records, one JSON file per run, and the "results at scale" pages built from
them.

A notebook shows each table with :func:`record`, which returns the table it displays. Under
``dml-tutorial run`` (which sets ``DML_TUTORIAL_RECORD`` to a file for the kernel) it also appends the table's raw
numbers, one value per seed, to that file; anywhere else (Colab, nbval, a plain Jupyter session) it writes nothing.
Under nbval it checks them against the chapter's committed record instead (:mod:`dml_tutorial.reference`).
The command line then writes one self-describing run file (:func:`run_file`) into ``data/results/<chapter>/``, and
:func:`write_report` turns all of them into one page per chapter in ``book/results/``: paper reported beside
measured (mean ± std over every seed recorded for the same settings), with the device, profile, epochs and command.
"""

from __future__ import annotations

import datetime
import json
import os
import platform
import subprocess
from collections import defaultdict
from pathlib import Path

import numpy as np

from . import __version__, claims, evidence, plots, reference, registry
from .chapters import REPOSITORY, chapters, in_checkout, results_folder, results_path
from .records import SESSION, merge_seeds

ENV = "DML_TUTORIAL_RECORD"
ROOT = REPOSITORY
RESULTS = results_folder()  # the committed runs: the checkout's data/results, or the wheel's copy of it
PAGES = ROOT / "book" / "results" if in_checkout() else Path("book") / "results"
GROUP_KEYS = ("profile", "dataset", "model", "epochs")  # runs that agree on these are seeds of one experiment


def _jsonable(table: dict | None) -> dict:
    """``{row: {column: value or values}}`` with string keys and plain floats (JSON has no tuple or numpy keys):
    a number stays a number (a quoted paper value), a sequence becomes a list (one value per seed)."""
    def plain(v):
        return v if isinstance(v, str) else float(v) if np.ndim(v) == 0 else np.asarray(v, dtype=float).tolist()

    return {str(row): {str(col): plain(v) for col, v in cols.items()} for row, cols in (table or {}).items()}


def device_name(device) -> str:
    """``"cuda: NVIDIA H100 80GB HBM3"`` or ``"cpu: x86_64, 2 threads"``: the hardware a number came from."""
    import torch

    dev = torch.device(device)
    if dev.type == "cuda":
        return f"cuda: {torch.cuda.get_device_name(dev)}"
    return f"{dev.type}: {platform.machine()}, {torch.get_num_threads()} threads"


def record(table: str, measured: dict, paper: dict | None = None, *, cfg: dict, seeds, device, digits: int = 1):
    """Show ``measured`` (``{row: {metric: [value per seed]}}``) beside the ``paper`` numbers with
    :func:`dml_tutorial.plots.results_table` (returned styled, :func:`dml_tutorial.plots.styled`; the table is
    its ``.data``); under ``dml-tutorial run``, record them for the report; under nbval
    (``DML_TUTORIAL_CHECK`` set), check them against the chapter's committed record
    (:func:`dml_tutorial.reference.check`), which raises when they drifted beyond what another machine explains.
    An empty ``measured`` (a table the profile leaves out) prints so and records nothing."""
    if not measured:  # a profile that leaves the table out (e.g. the colab profile's short lists)
        print(f"{table}: not part of the {cfg.get('profile', 'current')} profile")
        return None
    # every setting a run file can hold, the per-loss dicts included (e.g. N-pair's scale in ``local_options``):
    # a run file must name each setting that made its numbers
    settings = {k: v for k, v in cfg.items() if isinstance(v, (str, int, float, bool, list, dict, type(None)))}
    entry = {"table": table, "seeds": [int(s) for s in seeds], "device": device_name(device),
             "settings": settings, "measured": _jsonable(measured), "paper": _jsonable(paper)}
    SESSION.append(entry)  # what the chapter's conclusions assess (records.session_run)
    path = os.environ.get(ENV)
    if path:
        with open(path, "a", encoding="utf-8") as f:
            f.write(json.dumps(entry) + "\n")
    if os.environ.get(reference.ENV):
        reference.check(table, _jsonable(measured), settings, seeds)
    return plots.styled(plots.results_table(measured, paper, digits))


def record_figure(fig, name: str):
    """Under ``dml-tutorial run --figures`` (how a sweep runs a chapter), save ``fig`` as ``<name>.png`` for the run
    file, so that a page can show the run's pictures (embeddings of models that are not kept) beside its numbers;
    anywhere else, do nothing. Returns ``fig``."""
    path = os.environ.get(ENV)
    if path and os.environ.get(FIGURES_ENV):
        folder = Path(path).with_suffix(".figures")
        folder.mkdir(exist_ok=True)
        fig.savefig(folder / f"{_slug(name)}.png", dpi=90, bbox_inches="tight")
    return fig


FIGURES_ENV = "DML_TUTORIAL_FIGURES"


def _slug(name: str) -> str:
    return "".join(c if c.isalnum() or c in "-_" else "-" for c in name).strip("-") or "figure"


def git_commit(root: Path = ROOT) -> str:
    """The checked-out commit, with ``-dirty`` when tracked files differ from it; ``"unknown"`` outside git."""
    try:
        commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=root, capture_output=True, text=True, check=True)
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=root,
                               capture_output=True, text=True, check=True)
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return commit.stdout.strip() + ("-dirty" if dirty.stdout.strip() else "")


def run_file(chapter: str, parameters: dict, recorded: Path, command: str, seconds: float,
             figures: list[str] | None = None, commit: str | None = None) -> dict:
    """The self-describing record of one chapter run: what ran (chapter, parameters, command), where and when
    (device, package version, the ``commit`` it started from, default the current one; date), every table the
    notebook recorded into ``recorded`` and the files of the figures it recorded (``figures``, relative to the run
    file's folder)."""
    tables = [json.loads(line) for line in Path(recorded).read_text().splitlines() if line.strip()] \
        if Path(recorded).exists() else []
    first = tables[0] if tables else {"settings": {}, "seeds": [], "device": None}
    return {"chapter": chapter, "parameters": parameters, "profile": first["settings"].get("profile"),
            "settings": first["settings"], "seeds": sorted({s for t in tables for s in t["seeds"]}),
            "device": first["device"],
            "version": __version__, "commit": commit or git_commit(), "date": datetime.datetime.now(datetime.timezone.utc)
            .isoformat(timespec="seconds"), "command": command, "seconds": round(seconds, 1),
            "tables": [{k: t[k] for k in ("table", "seeds", "measured", "paper")} for t in tables],
            **({"figures": figures} if figures else {})}


def load_runs(folder: Path = RESULTS) -> list[dict]:
    """Every run file under ``folder`` (``<chapter>/<run>.json``), oldest first."""
    runs = [json.loads(p.read_text()) for p in sorted(Path(folder).glob("*/*.json"))]
    return sorted(runs, key=lambda r: r["date"])


def recorded(chapter: str, profile: str, folder: Path = RESULTS) -> dict:
    """``{table: measured}`` of the committed runs of ``chapter`` under ``profile``, seeds merged (``{}`` when
    none has run): what a chapter reads to write about its real-data runs."""
    runs = [r for r in load_runs(folder) if r["chapter"] == chapter and r.get("profile") == profile]
    return {table: measured for table, (measured, _) in merge_seeds(runs).items()}


def group(runs: list[dict]) -> dict:
    """``{(profile, dataset, model, epochs): [runs]}``: runs of the same experiment that differ only in seed."""
    groups = defaultdict(list)
    for run in runs:
        groups[tuple(run["settings"].get(k) for k in GROUP_KEYS)].append(run)
    return dict(groups)


def markdown_table(frame) -> str:
    """A pandas table (as :func:`dml_tutorial.plots.results_table` makes it) as a Markdown table."""
    columns = [" ".join(str(p) for p in c) if isinstance(c, tuple) else str(c) for c in frame.columns]
    lines = ["| | " + " | ".join(columns) + " |", "|---" * (len(columns) + 1) + "|"]
    lines += [f"| {plots.label_tex(name)} | " + " | ".join(str(v) for v in row) + " |"
              for name, row in zip(frame.index, frame.values)]
    return "\n".join(lines)


def _title(notebook: Path) -> str:
    import nbformat

    cells = nbformat.read(notebook, as_version=4).cells
    heading = next(line for c in cells if c.cell_type == "markdown" for line in c.source.splitlines()
                   if line.startswith("# "))
    return heading[2:].strip()


def _section(key: tuple, runs: list[dict], registration: dict | None = None) -> list[str]:
    profile, dataset, model, epochs = key
    seeds = sorted({s for r in runs for t in r["tables"] for s in t["seeds"]})
    lines = [f"## {profile} profile: {dataset}, {model}, {epochs} epochs", "",
             f"- runs: {len(runs)}, seeds {', '.join(map(str, seeds))}",
             f"- device: {', '.join(sorted({str(r['device']) for r in runs}))}",
             f"- package: {', '.join(sorted({r['version'] for r in runs}))}",
             f"- commits: {', '.join(sorted({r['commit'][:12] for r in runs}))}",
             f"- dates: {min(r['date'] for r in runs)[:10]} to {max(r['date'] for r in runs)[:10]}",
             f"- hours of compute: {sum(r['seconds'] for r in runs) / 3600:.2f}", "", "```bash"]
    lines += sorted({r["command"] for r in runs}) + ["```", ""]
    for table, (measured, paper) in merge_seeds(runs).items():
        quoted = "; paper columns quoted from the paper" if any(paper.values()) else ""
        used = sorted({s for r in runs for t in r["tables"] if t["table"] == table for s in t["seeds"]})
        lines += [f"### {table}", "", markdown_table(plots.results_table(measured, paper)), "",
                  f"In %, mean ± std over seeds {', '.join(map(str, used))}{quoted}.", ""]
    verdicts = registry.annotate(claims.assess(runs[0]["chapter"], runs), runs[0]["chapter"], profile, registration)
    if not verdicts.empty:
        lines += ["### Verdicts", "", claims.markdown(verdicts), "", VERDICT_NOTE, ""]
    return lines


VERDICT_NOTE = ("Gains in points, paired by seed (same seed: same initialisation, batches and label noise), with "
                "t-intervals adjusted for the chapter's comparisons (Bonferroni: the level shown); the paper's gain "
                "is its own, on its own dataset, from the quoted numbers. The words: see the verdict table's note.")


#: Profiles whose runs each chapter shows itself (:func:`show`, its real-data sections and findings box): their
#: results pages point there instead of repeating them.
IN_CHAPTER = ("fashion", "glyphs", "glyphs2")


def report_page(chapter: str, notebook: Path, runs: list[dict], registration: dict | None = None) -> str:
    """The "results at scale" page of one chapter: its full-profile runs (and any profile the chapter does not show
    itself), or a plain "not run at full scale yet"; the Fashion-MNIST and glyph runs are the chapter's own
    sections (:data:`IN_CHAPTER`), named and linked here, not repeated."""
    title = _title(notebook)
    groups = sorted(group(runs).items(), key=lambda kv: (kv[0][0] != "full", str(kv[0])))
    full = sum(len(g) for k, g in groups if k[0] == "full")
    status = (f"{full} full-profile run(s) recorded." if full else
              "**Not run at full scale yet.** The chapter's own numbers come from its smoke profile (offline data, "
              "CPU); nobody has recorded a full-profile run of it here.")
    shown = {k[0]: len(g) for k, g in groups if k[0] in IN_CHAPTER}
    if shown:
        status += (" The runs on real data (" + ", ".join(f"`{p}`: {n} run(s)" for p, n in shown.items()) +
                   f") are in the chapter itself, {{doc}}`/notebooks/{notebook.stem}`, with their tables, figures, "
                   f"verdicts and findings box; `dml-tutorial sweep data/sweeps/{chapter}-<profile>.yaml` repeats "
                   "them.")
    lines = [f"# Results at scale: {title}", "",
             f"<!-- generated by `dml-tutorial report` from data/results/{chapter}/: do not edit by hand -->", "",
             status, "",
             (f"The chapter: {{doc}}`/notebooks/{notebook.stem}`. To add runs on a GPU: "
             f"`dml-tutorial sweep data/sweeps/{chapter}.yaml` (resumable), then `dml-tutorial report`."), ""]
    for key, members in groups:
        if key[0] not in IN_CHAPTER:
            lines += _section(key, members, registration)
    return "\n".join(lines).rstrip() + "\n"


#: The verdict table's marks: a decisive word that does not survive Holm's correction over the whole table, and a
#: cell where every compared row lies below the raw input.
NOT_BOOK_WIDE, BELOW_RAW_MARK = "†", "↓"


def _verdict_cell(frame, claim: str, book_wide: dict | None = None, key: tuple = ()) -> str:
    if frame is None or claim not in set(frame["claim"]):
        return "not run yet"
    r = frame[frame["claim"] == claim].iloc[0].to_dict()
    numbers = f"({r['ours']:+.1f}, {r['low']:+.1f} to {r['high']:+.1f})"
    if r["verdict"] == evidence.NO_VERDICT:
        return f"n = {r['seeds']}, no verdict {numbers}"
    decisive = r["verdict"] in claims.DECISIVE
    marks = ("" if (book_wide or {}).get((*key, claim), True) else NOT_BOOK_WIDE) + \
        (BELOW_RAW_MARK if r["below raw"] and decisive else "")
    return f"{claims.verdict_text(r, marks)} {numbers}"


#: The scales of the verdict table: (column heading, profile of the runs; ``None``: the chapter's smoke record).
SCALES = (("smoke (digits, MNIST-1D)", None), ("Fashion-MNIST", "fashion"), ("glyphs", "glyphs"),
          ("test bed II", "glyphs2"), ("paper's data", "full"))


def scale_frames(chapter: str, notebook: Path, runs: list[dict], registration: dict | None = None) -> dict:
    """``{profile: claims.assess(...) or None}`` for each scale of :data:`SCALES`: the one assessment of each of
    the chapter's claims at each scale, which every page and the chapter's findings read; each word marked where
    ``registration`` (:func:`dml_tutorial.registry.status`) says it is post hoc."""
    record = results_path(notebook) if notebook is not None else None
    out = {}
    for _, profile in SCALES:
        group = ([json.loads(record.read_text())] if record and record.exists() else []) if profile is None else \
            [r for r in runs if r["chapter"] == chapter and r.get("profile") == profile]
        frame = claims.assess(chapter, group) if group else None
        out[profile or "smoke"] = registry.annotate(frame, chapter, profile, registration)
    return out


def verdicts_page(runs: list[dict], notebooks: dict, registration: dict | None = None) -> str:
    """The book's one table of verdicts: every claim of :data:`dml_tutorial.claims.CLAIMS` at each scale of
    :data:`SCALES`, with its smallest effect of interest, each decisive word marked where it does not survive
    Holm's correction over the whole table (:func:`dml_tutorial.claims.book_family`); each chapter's name links to
    its findings box (:mod:`dml_tutorial.findings`, the target ``<chapter>-findings``)."""
    heads = " | ".join(head for head, _ in SCALES)
    frames = {chapter: scale_frames(chapter, notebook, runs, registration) for chapter, notebook in notebooks.items()}
    book_wide = claims.book_family({(c, scale): f for c, fs in frames.items() for scale, f in fs.items()})
    lines = ["<!-- generated by `dml-tutorial report` from the chapters' records and data/results/: do not edit -->",
             "", ":::{container} verdict-cards",  # one card per claim on a phone (book/_css/book.css)
             f"| chapter | claim | smallest effect (points) | {heads} |", "|---" * (3 + len(SCALES)) + "|"]
    for chapter in notebooks:
        for i, claim in enumerate(claims.CLAIMS.get(chapter, [])):
            name = f"{{ref}}`{claims.NAMES.get(chapter, chapter)} <{chapter}-findings>`" if i == 0 else ""
            cells = " | ".join(_verdict_cell(f, claim.text, book_wide, (chapter, scale))
                               for scale, f in frames[chapter].items())
            lines.append(f"| {name} | {plots.label_tex(claim.text)} | {claim.smallest_effect:g} | {cells} |")
    kept = sum(book_wide.values())
    lines += [":::", "", VERDICT_RULES, "",
              (f"Book-wide: {kept} of the {len(book_wide)} decisive words survive Holm's correction at 5% over every "
              f"test of this table (each cell with a word other than *not testable here*); {NOT_BOOK_WIDE} marks "
              f"the others. {BELOW_RAW_MARK}: a decisive word where every row the claim compares lies below the "
              "raw input.")]
    return "\n".join(lines) + "\n"


VERDICT_RULES = (
    "Each cell: the verdict, then our gain and its interval in points, paired by seed and adjusted for the "
    "chapter's comparisons at that scale (Bonferroni, the chapter's family). A replication in a proxy setting (our "
    "data and network, not the paper's), in five words (`dml_tutorial/evidence.py`), with delta the claim's "
    "smallest effect of interest: **supported** when the interval lies above 0 (*smaller than reported* when it "
    "also lies below the paper's gain relative to its baseline); **contradicted** when it lies below 0; **no effect "
    "detected** when it lies within -delta and +delta; **inconclusive** otherwise; **not testable here** when the "
    "one gate rule fails: the claim's control (its no-term baseline, on clean labels for a claim about noise) is "
    "not shown to beat the raw input and the untrained network by delta at the same adjusted level. Smoke runs "
    "(3 seeds, small offline data) check the pipeline and get no word. Two families: each word is decided within its "
    "chapter at one scale; the book-wide family is every test of this table at once (Holm). *Post hoc after* a "
    "commit: the claim's definition was committed after that run was made ({doc}`the claims registry "
    "</book/results/registry>`).")


def write_report(results: Path = RESULTS, pages: Path = PAGES, notebooks: dict | None = None) -> list[Path]:
    """Write ``pages/<chapter>.md`` for every chapter notebook (``{chapter: path}``, default: the book's) from
    the run files under ``results``; returns the pages written."""
    from .profiles import CHAPTERS

    runs = load_runs(results)
    notebooks = notebooks or {c: nb for c, nb in chapters().items() if c in CHAPTERS}
    registration = registry.stored(Path(results) / registry.STATUS.name)  # `dml-tutorial report` writes it
    pages.mkdir(parents=True, exist_ok=True)
    written = []
    for chapter, notebook in notebooks.items():
        page = pages / f"{chapter}.md"
        page.write_text(report_page(chapter, notebook, [r for r in runs if r["chapter"] == chapter], registration))
        written.append(page)
    page = pages / "verdicts.md"  # included by the introduction; not a page of its own
    page.write_text(verdicts_page(runs, notebooks, registration))
    claims_page = pages / "registry.md"
    claims_page.write_text(registry.page(registration))
    return written + [page, claims_page]


def show(chapter: str, profile: str = "fashion", results: Path = RESULTS):
    """A chapter's section on recorded runs of ``profile`` (the sweeps' results, committed): where and how they
    ran, each compared table (mean ± std over seeds, paper columns quoted), the verdicts, and the figure of our
    paired gains beside the paper's. Displays Markdown; returns the figure (``None`` when nothing is recorded)."""
    from IPython.display import Image, Markdown, display

    runs = [r for r in load_runs(results) if r["chapter"] == chapter and r.get("profile") == profile]
    if not runs:
        display(Markdown(f"**Not run yet**: no `{profile}` run of this chapter under `{Path(results) / chapter}`. "
                         f"`dml-tutorial sweep data/sweeps/{chapter}-{profile}.yaml`, in a clone of the repository, "
                         "records it."))
        return None
    key, members = next(iter(group(runs).items()))  # one profile: one group
    text = _section(key, members, registry.stored(Path(results) / registry.STATUS.name))
    refs = [f"- {r['table']}, {r['column']}: the best trained row ({r['best trained row']}) "
            f"{r['best trained']:.1f}%, the raw input {r['raw input']:.1f}%, the untrained network "
            f"{r['untrained network']:.1f}% (means over seeds)" for r in claims.above_references(members, chapter)
            .to_dict("records")]
    references = ["### Against the reference rows", ""] + refs + [""] if refs else []
    display(Markdown("\n".join(text[2:] + references)))  # without the heading: the notebook gives its own
    for run in members:
        for figure in run.get("figures", []):
            display(Image(filename=str(Path(results) / chapter / figure)))
    verdicts = claims.assess(chapter, members)
    return None if verdicts.empty else plots.gains(verdicts, f"{chapter}, {profile} profile: our gain vs the paper's")
