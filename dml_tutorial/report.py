"""Results as data: what a chapter run records, one JSON file per run, and the "At paper scale" page built from
them.

A notebook shows each table with :func:`record`, which returns the table it displays. Under
``dml-tutorial run`` (which sets ``DML_TUTORIAL_RECORD`` to a file for the kernel) it also appends the table's raw
numbers, one value per seed, to that file; anywhere else (Colab, nbval, a plain Jupyter session) it writes nothing.
Under nbval it checks them against the chapter's committed record instead (:mod:`dml_tutorial.reference`).
The command line then writes one self-describing run file (:func:`run_file`) into ``data/results/<chapter>/``, and
:func:`write_report` turns all of them into one page, ``book/results/at_scale.md``, with a section per chapter: paper
reported beside measured (mean ± std over every seed recorded for the same settings), with the device, profile,
epochs and command, or what a run needs while none is recorded.
"""

from __future__ import annotations

import datetime
import json
import math
import os
import subprocess
from collections import defaultdict
from pathlib import Path

from . import __version__, claims, evidence, recorder, reference, registry
from . import tables as declared
from .chapters import REPOSITORY, chapters, in_checkout, results_folder, results_path
from .labels import label_tex
from .recording import device_name, record, record_figure, record_for  # noqa: F401 (the chapters' names)
from .records import merge_seeds, row_seeds
from .tables import REFERENCES, STARTED, results_table, title_of

ENV = "DML_TUTORIAL_RECORD"
ROOT = REPOSITORY
RESULTS = results_folder()  # the committed runs: the checkout's data/results, or the wheel's copy of it
PAGES = ROOT / "book" / "results" if in_checkout() else Path("book") / "results"
GROUP_KEYS = ("profile", "dataset", "model", "epochs")  # runs that agree on these are seeds of one experiment


class RunFile:
    """A sink (:mod:`dml_tutorial.recorder`): each table appended as one JSON line to ``path`` (what
    ``dml-tutorial run`` turns into the run file), and with ``figures`` each figure saved as a PNG in the folder
    ``<path without suffix>.figures``."""

    def __init__(self, path, figures: bool = False):
        self.path, self.figures = Path(path), figures

    def table(self, entry: dict) -> None:
        with open(self.path, "a", encoding="utf-8") as f:
            f.write(json.dumps(entry) + "\n")

    def figure(self, fig, name: str) -> None:
        if self.figures:
            folder = self.path.with_suffix(".figures")
            folder.mkdir(exist_ok=True)
            fig.savefig(folder / f"{_slug(name)}.png", dpi=90, bbox_inches="tight")


class DriftCheck:
    """A sink: each table checked against the chapter's committed record (:func:`dml_tutorial.reference.check`:
    raises :class:`~dml_tutorial.reference.ResultsDrifted` beyond the tolerance)."""

    def table(self, entry: dict) -> None:
        table = declared.by_id(entry["id"]) if "id" in entry else entry["table"]
        reference.check(table, entry["measured"], entry["settings"], entry["seeds"])


class FromEnvironment:
    """The default recorder's sink: a :class:`RunFile` where ``DML_TUTORIAL_RECORD`` names one (with figures where
    ``DML_TUTORIAL_FIGURES`` is set), a :class:`DriftCheck` where ``DML_TUTORIAL_CHECK`` is set, read at each
    table: how ``dml-tutorial run`` and nbval ask a notebook's kernel, another process, for them."""

    def sinks(self) -> list:
        path = os.environ.get(ENV)
        return ([RunFile(path, figures=bool(os.environ.get(FIGURES_ENV)))] if path else []) + (
            [DriftCheck()] if os.environ.get(reference.ENV) else [])

    def table(self, entry: dict) -> None:
        for sink in self.sinks():
            sink.table(entry)

    def figure(self, fig, name: str) -> None:
        for sink in self.sinks():
            if hasattr(sink, "figure"):
                sink.figure(fig, name)


recorder.DEFAULT.sinks[:] = [FromEnvironment()]  # the process's default recorder: the environment's sinks
FIGURES_ENV = "DML_TUTORIAL_FIGURES"


def _slug(name: str) -> str:
    return "".join(c if c.isalnum() or c in "-_" else "-" for c in name).strip("-") or "figure"


def _outputs_only(path: str, root: Path) -> bool:
    """Whether a changed tracked file holds only what running a chapter writes: a chapter's record
    (``notebooks/*.results.json``), or a chapter notebook whose cells' sources are the commit's (re-executed in
    place: its outputs, counts and metadata differ)."""
    if not path.startswith("notebooks/") or not path.endswith((".ipynb", ".results.json")):
        return False
    if path.endswith(".results.json"):
        return True
    try:
        committed = subprocess.run(["git", "show", f"HEAD:{path}"], cwd=root, capture_output=True, text=True,
                                   check=True).stdout
        now = (Path(root) / path).read_text()
    except (OSError, subprocess.CalledProcessError):
        return False

    def sources(text):
        return [(c["cell_type"], "".join(c["source"])) for c in json.loads(text)["cells"]]

    return sources(committed) == sources(now)


def git_commit(root: Path = ROOT) -> str:
    """The checked-out commit, with ``-dirty`` when tracked files differ from it (other than a chapter re-executed
    in place, :func:`_outputs_only`: `dml-tutorial run` of one chapter after another); ``"unknown"`` outside git."""
    try:
        commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=root, capture_output=True, text=True, check=True)
        status = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=root,
                                capture_output=True, text=True, check=True)
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    changed = [line[3:] for line in status.stdout.splitlines() if line.strip()]
    dirty = [path for path in changed if not _outputs_only(path, root)]
    return commit.stdout.strip() + ("-dirty" if dirty else "")


def _choices(tables: list[dict]) -> dict:
    """What the run chose, from its tables' records: each kind of choice (a head, the searches' ``"best shot"``)
    once, the rows of searches recorded with different tables together (EPS's Table 1 and Table 2)."""
    out = {}
    for table in tables:
        for kind, value in table.get("choices", {}).items():
            both = isinstance(value, dict) and isinstance(out.get(kind), dict)
            out[kind] = {**out[kind], **value} if both else value
    return out


def run_file(chapter: str, parameters: dict, recorded: Path, command: str, seconds: float,
             figures: list[str] | None = None, commit: str | None = None) -> dict:
    """The self-describing record of one chapter run: what ran (chapter, parameters, command), where and when
    (device, package version, the ``commit`` it started from, default the current one; date), every table the
    notebook recorded into ``recorded``, what the run chose for itself (``choices``: a searched rate, a cluster head;
    beside the ``settings``, never in them), the pretrained start it loaded (:func:`start_of`), the hash of its
    protocol (:func:`protocol_of`) and the files of the figures it recorded (``figures``, relative to the run
    file's folder)."""
    tables = [json.loads(line) for line in Path(recorded).read_text().splitlines() if line.strip()] \
        if Path(recorded).exists() else []
    first = tables[0] if tables else {"settings": {}, "seeds": [], "device": None}
    return {"chapter": chapter, "parameters": parameters, "profile": first["settings"].get("profile"),
            "settings": first["settings"], "seeds": sorted({s for t in tables for s in t["seeds"]}),
            "device": first["device"], **start_of(first["settings"], sorted({s for t in tables for s in t["seeds"]})),
            **protocol_of(chapter, first["settings"].get("profile")),
            **({"choices": choices} if (choices := _choices(tables)) else {}),
            "version": __version__, "commit": commit or git_commit(), "date": datetime.datetime.now(datetime.timezone.utc)
            .isoformat(timespec="seconds"), "command": command, "seconds": round(seconds, 1),
            "tables": [{k: t[k] for k in ("table", "id", "seeds", "measured", "paper") if k in t} for t in tables],
            **({"figures": figures} if figures else {})}


def protocol_of(chapter: str, profile: str | None) -> dict:
    """``{"protocol": hash}``: the hash of the protocol the run was made under (:mod:`dml_tutorial.protocol`), where
    its profile is one whose protocols are registered; ``{}`` elsewhere."""
    from . import protocol

    return {"protocol": protocol.sha256(chapter, profile)} if profile in protocol.REGISTERED else {}


def start_of(settings: dict, seeds=()) -> dict:
    """``{"start_sha256": ...}``: the SHA-256 of the pretrained start the run loaded (``settings["start"]``, its
    record under ``data/pretrained/``), or ``{}`` where it names none; for a start made once per seed
    (:func:`dml_tutorial.pretrain.resolved`), that of the run's seed, ``{seed: SHA-256}`` where it ran several. A
    start is built on the machine that runs it and another CPU family rounds differently, so two machines' starts
    differ; the run file says which it had."""
    name = settings.get("start")
    if not name:
        return {}
    from .pretrain import resolved, start_paths

    def sha(seed=None):
        kept = start_paths(resolved(name, seed)[0])[1]
        return json.loads(kept.read_text())["sha256"] if kept.exists() else None

    if not _per_seed_start(name):
        return {"start_sha256": sha()}
    shas = {str(s): sha(s) for s in seeds}
    return {"start_sha256": shas.popitem()[1] if len(shas) == 1 else (shas or None)}


def _per_seed_start(name: str) -> bool:
    from .pretrain import STARTS

    return bool(STARTS.get(name, {}).get("per_seed"))


def load_runs(folder: Path = RESULTS) -> list[dict]:
    """Every run file under ``folder`` (``<chapter>/<run>.json``), oldest first."""
    runs = [json.loads(p.read_text()) for p in sorted(Path(folder).glob("*/*.json"))]
    return sorted(runs, key=lambda r: r["date"])


def runs_of(chapter: str, profile: str, folder: Path = RESULTS) -> list[dict]:
    """The committed run files of ``chapter`` under ``profile`` (:func:`load_runs`), one per seed, oldest first."""
    return [r for r in load_runs(folder) if r["chapter"] == chapter and r.get("profile") == profile]


def recorded(chapter: str, profile: str, folder: Path = RESULTS) -> dict:
    """``{table: measured}`` of the committed runs of ``chapter`` under ``profile``, seeds merged (``{}`` when
    none has run): what a chapter reads to write about its real-data runs."""
    runs = runs_of(chapter, profile, folder)
    return {table: measured for table, (measured, _) in merge_seeds(runs).items()}


def group(runs: list[dict]) -> dict:
    """``{(profile, dataset, model, epochs): [runs]}``: runs of the same experiment that differ only in seed."""
    groups = defaultdict(list)
    for run in runs:
        groups[tuple(run["settings"].get(k) for k in GROUP_KEYS)].append(run)
    return dict(groups)


def markdown_table(frame) -> str:
    """A pandas table (as :func:`dml_tutorial.tables.results_table` makes it) as a Markdown table."""
    columns = [" ".join(str(p) for p in c) if isinstance(c, tuple) else str(c) for c in frame.columns]
    lines = ["| | " + " | ".join(columns) + " |", "|---" * (len(columns) + 1) + "|"]
    lines += [f"| {label_tex(name)} | " + " | ".join(str(v) for v in row) + " |"
              for name, row in zip(frame.index, frame.values)]
    return "\n".join(lines)


def _title(notebook: Path) -> str:
    import nbformat

    cells = nbformat.read(notebook, as_version=4).cells
    heading = next(line for c in cells if c.cell_type == "markdown" for line in c.source.splitlines()
                   if line.startswith("# "))
    return heading[2:].strip()


def _section(key: tuple, runs: list[dict], registration: dict | None = None, level: int = 2) -> list[str]:
    """One group of runs (:func:`group`): where and how they ran, each table over the seeds, the verdicts; its
    heading at ``level`` (``##``), the tables' one below."""
    profile, dataset, model, epochs = key
    seeds = sorted({s for r in runs for t in r["tables"] for s in t["seeds"]})
    h, sub = "#" * level, "#" * (level + 1)
    lines = [f"{h} {profile} profile: {dataset}, {model}, {epochs} epochs", "",
             f"- runs: {len(runs)}, seeds {', '.join(map(str, seeds))}",
             f"- device: {', '.join(sorted({str(r['device']) for r in runs}))}",
             f"- package: {', '.join(sorted({r['version'] for r in runs}))}",
             f"- commits: {', '.join(sorted({r['commit'][:12] for r in runs}))}",
             f"- dates: {min(r['date'] for r in runs)[:10]} to {max(r['date'] for r in runs)[:10]}",
             f"- hours of compute: {sum(r['seconds'] for r in runs) / 3600:.2f}", *_trained_line(runs),
             *_start_line(runs), "", "```bash"]
    lines += sorted({r["command"] for r in runs}) + ["```", ""]
    for table, (measured, paper) in merge_seeds(runs).items():
        quoted = "; paper columns quoted from the paper" if any(paper.values()) else ""
        used = sorted({s for r in runs for t in r["tables"] if declared.key(t) == table for s in t["seeds"]})
        fewer = [f"{row} (seeds {', '.join(map(str, s))})" for row, s in row_seeds(runs, table).items() if s != used]
        lines += [f"{sub} {title_of(table)}", "", markdown_table(results_table(measured, paper)), "",
                  f"In %, mean ± std over seeds {', '.join(map(str, used))}{quoted}"
                  + (f"; these rows over fewer seeds: {'; '.join(fewer)}." if fewer else "."), ""]
    verdicts = registry.annotate(claims.assess(runs[0]["chapter"], runs), runs[0]["chapter"], profile, registration)
    if not verdicts.empty:
        lines += [f"{sub} Verdicts", "", claims.markdown(verdicts), "", VERDICT_NOTE, ""]
    return lines


def _trained_line(runs: list[dict]) -> list[str]:
    """``["- hours of training, every sitting: ..."]`` where the runs recorded their caches' trainings (a sweep
    point's, :func:`dml_tutorial.experiment.cache_seconds`): "hours of compute" counts a resumed point's last
    sitting alone."""
    kept = [r for r in runs if "trained_seconds" in r]
    if not kept:
        return []
    of = "" if len(kept) == len(runs) else f" ({len(kept)} of the {len(runs)} runs recorded it)"
    hours, trainings = sum(r["trained_seconds"] for r in kept) / 3600, sum(r["trainings"] for r in kept)
    return [f"- hours of training, every sitting: {hours:.2f}, {trainings:,} trainings{of}"]


def _start_line(runs: list[dict]) -> list[str]:
    """``["- pretrained start: ..."]`` where the runs' settings name a start: the first 12 hex digits of each
    SHA-256 the run files record (:func:`start_of`), "not recorded" for a run file made before they recorded it;
    ``[]`` for runs trained from scratch."""
    started = [r for r in runs if r["settings"].get("start")]
    if not started:
        return []
    names = ", ".join(sorted({r["settings"]["start"] for r in started}))
    recorded = [r.get("start_sha256") for r in started]
    shas = sorted({sha[:12] for one in recorded if one for sha in (one.values() if isinstance(one, dict) else [one])
                   if sha} | ({"not recorded"} if not all(recorded) else set()))
    return [f"- pretrained start: {names}, SHA-256 of its weights {', '.join(shas)} (each CPU family builds its own)"]


VERDICT_NOTE = ("Gains in points, paired by seed (same seed: same initialisation, batches and label noise), with "
                "t-intervals adjusted for the chapter's comparisons (Bonferroni: the level shown); the paper's gain "
                "is its own, on its own dataset, from the quoted numbers. The words: see the verdict table's note.")


#: Profiles whose runs each chapter shows itself (:func:`show`, its real-data sections and findings box): their
#: results pages point there instead of repeating them. A superseded test bed's runs (:data:`SUPERSEDED`) are shown
#: nowhere (issue #87: no test bed I sections in the chapters); the registry page lists them, data/results/ keeps
#: them.
IN_CHAPTER = ("fashion", "glyphs2")


#: The book's one page of paper-scale runs (``book/results/at_scale.md``): a section per chapter, which says what a
#: run needs until one is recorded (seven pages that each said "not run yet" were seven dead ends in the sidebar).
SCALE_PAGE = "at_scale"


def _size(n: int | None) -> str:
    return "size not published" if n is None else (f"{n / 1e9:.2f} GB" if n >= 1e9 else f"{n / 1e6:.0f} MB")


def run_needs(chapter: str) -> str:
    """What a full-profile run of ``chapter`` needs: a GPU, what it downloads (:func:`dml_tutorial.plan.downloads`
    for the full profile's defaults, with their sizes) and the commands."""
    from . import plan, profiles

    cfg = profiles.settings(chapter, "full")
    fetched = "; ".join(f"{what}, {_size(size)}" for what, size, _ in plan.downloads(cfg))
    return (f"**What a run needs**: a CUDA GPU and, fetched with their checksums on first use, "
            f"{fetched or 'nothing'}; then `dml-tutorial sweep data/sweeps/{chapter}.yaml` (resumable) and "
            "`dml-tutorial report`.")


def report_page(chapter: str, notebook: Path, runs: list[dict], registration: dict | None = None) -> str:
    """One chapter's section of the "At paper scale" page (:data:`SCALE_PAGE`): its full-profile runs (and any
    profile the chapter does not show itself), or a plain "not run at full scale yet" with what a run needs; the
    runs on real data on a CPU are the chapter's own sections (:data:`IN_CHAPTER`), named and linked, not repeated."""
    title = _title(notebook)
    groups = sorted(group(runs).items(), key=lambda kv: (kv[0][0] != "full", str(kv[0])))
    full = sum(len(g) for k, g in groups if k[0] == "full")
    status = (f"{full} full-profile run(s) recorded." if full else "**Not run at full scale yet.**")
    shown = {k[0]: len(g) for k, g in groups if k[0] in IN_CHAPTER}
    if shown:
        status += (" The runs on real data on a CPU (" + ", ".join(f"`{p}`: {n} run(s)" for p, n in shown.items())
                   + f") are in the chapter, {{doc}}`/notebooks/{notebook.stem}`.")
    old = {k[0]: len(g) for k, g in groups if k[0] in SUPERSEDED}
    if old:
        status += (" The superseded test bed's runs (" + ", ".join(f"`{p}`: {n} run(s)" for p, n in old.items())
                   + ") stay in `data/results/` and on the registry page.")
    lines = [f"## {title}", "", status, "", run_needs(chapter), ""]
    for key, members in groups:
        if key[0] not in IN_CHAPTER and key[0] not in SUPERSEDED:
            lines += _section(key, members, registration, level=3)
    return "\n".join(lines).rstrip() + "\n"


def scale_page(sections: list[str]) -> str:
    """The "At paper scale" page: the chapters' sections (:func:`report_page`) under one heading."""
    head = ["# At paper scale", "",
            "<!-- generated by `dml-tutorial report` from data/results/: do not edit by hand -->", "",
            ("Runs of each chapter's *full* profile: the paper's datasets, backbone and protocol, on a GPU, with "
             "the paper's numbers beside ours (mean ± std over seeds), the device, commit and command of each run. "
             "The chapters' own runs on real data on a CPU are in the chapters themselves."), ""]
    return "\n".join(head) + "\n" + "\n".join(sections)


#: The verdict table's marks: a decisive word that does not survive Holm's correction over the whole table, a
#: cell where every compared row lies below the raw input, and a word from seeds that all ran on the same data.
NOT_BOOK_WIDE, BELOW_RAW_MARK, SAME_DATA_MARK = "†", "↓", "≡"


def _same_data(r: dict) -> bool:
    """Whether an assessed row's seeds all ran on the same data (``data varies`` false, not unknown)."""
    varies = r.get("data varies")
    unknown = varies is None or (isinstance(varies, float) and math.isnan(varies))
    return not unknown and not varies


def _verdict_cell(frame, claim: str, book_wide: dict | None = None, key: tuple = ()) -> str:
    if frame is None or claim not in set(frame["claim"]):
        return "not run yet"
    r = frame[frame["claim"] == claim].iloc[0].to_dict()
    numbers = f"({r['ours']:+.1f}, {r['low']:+.1f} to {r['high']:+.1f})" if r["seeds"] > 1 else \
        f"({r['ours']:+.1f}, one seed: no interval)"  # not "+3.6 to +3.6", which reads as certainty
    if r["verdict"] == evidence.NO_VERDICT:
        return f"n = {r['seeds']}, no verdict {numbers}"
    decisive = r["verdict"] in claims.DECISIVE
    marks = ("" if (book_wide or {}).get((*key, claim), True) else NOT_BOOK_WIDE) + \
        (BELOW_RAW_MARK if r["below raw"] and decisive else "") + \
        (SAME_DATA_MARK if _same_data(r) and r["verdict"] in evidence.WORDS[:4] else "")
    return f"{claims.verdict_text(r, marks)} {numbers}"


#: The scales of the verdict table: (column heading, profile of the runs; ``None``: the chapter's smoke record).
SCALES = (("smoke (digits, MNIST-1D)", None), ("Fashion-MNIST", "fashion"), ("glyphs", "glyphs"),
          ("test bed II", "glyphs2"), ("paper's data", "full"))
#: A test bed that another replaces: once a chapter's runs of the newer profile can give words (as many seeds as a
#: verdict needs, :data:`dml_tutorial.evidence.MIN_SEEDS`), the older one's runs give it none (issue #50: test bed
#: I's MLP, trained from scratch for about 1,000 steps, measured early optimisation, not the papers' regime). Its
#: runs stay under data/results/ and in the chapter's folded details.
SUPERSEDED = {"glyphs": "glyphs2"}
SUPERSEDED_TEXT = "superseded by test bed II"


def superseded(chapter: str, profile: str | None, runs: list[dict]) -> bool:
    """Whether ``profile``'s runs of ``chapter`` are superseded (:data:`SUPERSEDED`): ``runs`` hold at least
    :data:`~dml_tutorial.evidence.MIN_SEEDS` seeds of ``chapter`` under the profile that replaces it."""
    newer = SUPERSEDED.get(profile)
    seeds = {s for r in runs if newer is not None and r["chapter"] == chapter and r.get("profile") == newer
             for s in r.get("seeds", [])}
    return len(seeds) >= evidence.MIN_SEEDS


def scale_frames(chapter: str, notebook: Path, runs: list[dict], registration: dict | None = None) -> dict:
    """``{profile: claims.assess(...) or None}`` for each scale of :data:`SCALES`: the one assessment of each of
    the chapter's claims at each scale, which every page and the chapter's findings read; each word marked where
    ``registration`` (:func:`dml_tutorial.registry.status`) says it is post hoc."""
    committed = results_path(notebook) if notebook is not None else None
    out = {}
    for _, profile in SCALES:
        group = ([json.loads(committed.read_text())] if committed and committed.exists() else []) if profile is None else \
            [r for r in runs if r["chapter"] == chapter and r.get("profile") == profile]
        if superseded(chapter, profile, runs):  # no words from a replaced test bed
            group = []
        frame = claims.assess(chapter, group) if group else None
        out[profile or "smoke"] = registry.annotate(frame, chapter, profile, registration)
    return out


#: The cells that give no answer: a chapter whose every claim reads so at one scale is said in a sentence under
#: the table, its cells there a dash, and a scale where no chapter has an answer loses its column.
NO_ANSWER = ("not run yet", "not testable here", SUPERSEDED_TEXT)
NO_ANSWER_MARK = "—"


def _card(label: str, text: str) -> str:
    """A cell with its column's name, shown only on a phone, where the table becomes one card per claim
    (book/_css/book.css: ``.card-label``); the name travels with the cell, so columns can come and go."""
    return f'<span class="card-label">{label}: </span>{text}'


def _silent(cells: list[str]) -> str | None:
    """Why a chapter has no answer at a scale (its claims' cells), or ``None`` when one cell answers."""
    kinds = {next((k for k in NO_ANSWER if c.startswith(k)), None) for c in cells}
    if not cells or None in kinds:
        return None
    return " or ".join(k for k in NO_ANSWER if k in kinds)


def assess_book(runs: list[dict], notebooks: dict, registration: dict | None = None) -> tuple[dict, dict]:
    """Every chapter's claims assessed at every scale (:func:`scale_frames`, ``{chapter: {scale: frame}}``) and
    the book-wide Holm family over them (:func:`dml_tutorial.claims.book_family`): what the verdict table and the
    summary page both read, computed once by :func:`write_report`."""
    frames = {chapter: scale_frames(chapter, notebook, runs, registration) for chapter, notebook in notebooks.items()}
    return frames, claims.book_family({(c, scale): f for c, fs in frames.items() for scale, f in fs.items()})


def verdicts_page(runs: list[dict], notebooks: dict, registration: dict | None = None,
                  assessed: tuple | None = None) -> str:
    """The book's one table of verdicts: every claim of :data:`dml_tutorial.claims.CLAIMS` at each scale of
    :data:`SCALES`, with its smallest effect of interest, each decisive word marked where it does not survive
    Holm's correction over the whole table (:func:`dml_tutorial.claims.book_family`); each chapter's name links to
    its findings box (:mod:`dml_tutorial.findings`, the target ``<chapter>-findings``). The smoke records (a
    pipeline check, never a word) have no column; a chapter with no answer at
    a scale (:data:`NO_ANSWER`) is one sentence under the table, not a column of non-answers."""
    frames, book_wide = assessed or assess_book(runs, notebooks, registration)
    cells = {(chapter, scale): [SUPERSEDED_TEXT if superseded(chapter, scale, runs) else
                                _verdict_cell(f, claim.text, book_wide, (chapter, scale))
                                for claim in claims.CLAIMS.get(chapter, [])]
             for chapter, fs in frames.items() for scale, f in fs.items()}
    silent = {key: why for key, c in cells.items() if (why := _silent(c))}
    scales = [(head, profile) for head, profile in SCALES if profile is not None]  # smoke: no word, no column
    shown = [(head, scale) for head, scale in scales
             if any((c, scale) not in silent for c in notebooks if claims.CLAIMS.get(c))]
    heads = "".join(f" {head} |" for head, _ in shown)
    lines = ["<!-- generated by `dml-tutorial report` from the chapters' records and data/results/: do not edit -->",
             "", ":::{container} verdict-cards",  # one card per claim on a phone (book/_css/book.css)
             f"| chapter | claim | smallest effect (points) |{heads}", "|---" * (3 + len(shown)) + "|"]
    for chapter in notebooks:
        for i, claim in enumerate(claims.CLAIMS.get(chapter, [])):
            name = f"{{ref}}`{claims.NAMES.get(chapter, chapter)} <{chapter}-findings>`" if i == 0 else ""
            said = {scale: NO_ANSWER_MARK if (chapter, scale) in silent else cells[chapter, scale][i]
                    for _, scale in shown}
            row = "".join(f" {_card(head, said[scale])} |" for head, scale in shown)
            lines.append(f"| {name} | {label_tex(claim.text)} | "
                         f"{_card('smallest effect (points)', f'{claim.smallest_effect:g}')} |{row}")
    kept = sum(book_wide.values())
    lines += [":::", "", *_no_answers(scales, shown, silent, notebooks), VERDICT_RULES, "",
              (f"Book-wide: {kept} of the {len(book_wide)} decisive words survive Holm's correction at 5% over every "
              f"test of this table (each cell with a word other than *not testable here*); {NOT_BOOK_WIDE} marks "
              f"the others. {BELOW_RAW_MARK}: a decisive word where every row the claim compares lies below the "
              f"raw input. {SAME_DATA_MARK}: a word from seeds that all ran on the same data (the raw input scores "
              "the same in each): its interval measures the training's noise, not the test bed's.")]
    return "\n".join(lines + _more_seeds(frames, runs)) + "\n"


def _projected(r: dict) -> int | None:
    """An assessed row's projected seeds for a word (a frame column of ints and Nones holds NaN for None)."""
    n = r["seeds for a word"]
    return None if n is None or math.isnan(n) else int(n)


def _needs(r: dict) -> str:
    """``"14 (*supported*)"``, or why an *inconclusive* cell has no projection."""
    if _projected(r) is not None:
        return f"{_projected(r)} (*{r['word with more seeds']}*)"
    return f"more than {evidence.MOST_SEEDS}" if math.isfinite(r["mde"]) else "no spread to project from"


#: What the folded table of :func:`_more_seeds` says above its rows.
MORE_SEEDS_TEXT = (
    "For each *inconclusive* cell: the seeds its adjusted interval would need for a decisive word if the gain and the "
    "spread of its seeds held (the same family, Student's t; `dml_tutorial.evidence.seeds_for_word`), and that word. "
    "A projection from the seeds that ran, not a promise: their mean and spread are estimates too. A cell that needs "
    "several times its seeds has a gain small beside its spread: more seeds of this test bed would settle it slowly. "
    f"{SAME_DATA_MARK}: its seeds all ran on the same data, so more of them would shrink only the training's noise.")


def _more_seeds(frames: dict, runs: list[dict]) -> list[str]:
    """A folded table under the verdict table: every *inconclusive* cell of a scale that is not superseded, with
    the seeds a decisive word would need (:func:`_needs`), the newest scale first, then the fewest seeds: which
    cells more seeds could settle."""
    heads = {profile: head for head, profile in SCALES}
    rows = [(chapter, scale, r) for chapter, fs in frames.items() for scale, f in fs.items()
            if f is not None and scale in heads and not superseded(chapter, scale, runs)
            for r in f.to_dict("records") if r["verdict"] == "inconclusive"]
    order = [profile for _, profile in reversed(SCALES)]  # the deciding test bed first, then the fewest seeds
    rows.sort(key=lambda row: (order.index(row[1]), _projected(row[2]) or evidence.MOST_SEEDS + 1))
    table = [f"| {claims.NAMES.get(chapter, chapter)} | {label_tex(r['claim'])}{SAME_DATA_MARK * _same_data(r)} | "
             f"{heads[scale]} | {r['ours']:+.1f} "
             f"({r['low']:+.1f} to {r['high']:+.1f}, {r['seeds']} seeds) | {_needs(r)} |" for chapter, scale, r in rows]
    return ["", f":::{{admonition}} What more seeds would decide: the {len(rows)} *inconclusive* cells",
            ":class: dropdown", "", MORE_SEEDS_TEXT, "",
            "| chapter | claim | scale | ours (points, adjusted CI) | seeds for a word (the word) |",
            "|---|---|---|---|---|", *table, ":::"] if rows else []


def _no_answers(scales, shown, silent, notebooks) -> list[str]:
    """The sentences that replace the table's non-answers: per scale, the chapters with none and why."""
    out = []
    for head, scale in scales:
        chapters = [c for c in notebooks if (c, scale) in silent]
        if not chapters:
            continue
        if (head, scale) not in shown and all(silent[c, scale] == "not run yet" for c in chapters):
            where = " ({doc}`/book/results/at_scale` says what a run needs)" if scale == "full" else ""
            out.append(f"- **{head}**: no chapter has an answer yet{where}.")
            continue
        by_reason = defaultdict(list)
        for c in chapters:
            by_reason[silent[c, scale]].append(claims.NAMES.get(c, c))
        mark = f" ({NO_ANSWER_MARK} in its column)" if (head, scale) in shown else " (no column)"
        out.append(f"- **{head}**{mark}: " + "; ".join(
            f"{', '.join(names)}: every claim {why}" for why, names in by_reason.items()) + ".")
    return (["No answer at these scales, said once instead of a cell per claim:", "", *out, ""] if out else [])


def found(frame) -> str | None:
    """What one scale shows of a chapter's claims: the words and how many of each, or the seeds so far."""
    if frame is None or frame.empty:
        return None
    words = [w for w in frame["verdict"] if w != evidence.NO_VERDICT]
    if not words:
        n = int(frame["seeds"].max())
        return f"{n} seed{'s' * (n != 1)} so far, no word yet"
    counts = {w: words.count(w) for w in evidence.WORDS if w in words}
    return ", ".join(f"{n} *{w}*" for w, n in counts.items())


#: The scales the summary reads, as its sentences name them (the smoke runs check the pipeline and say nothing).
SUMMARY_SCALES = {"fashion": "Fashion-MNIST", "glyphs": "test bed I (glyphs, an MLP from scratch)",
                  "glyphs2": "test bed II", "full": "the paper's data"}
#: The scale whose words the summary gives claim by claim, with their numbers: the one that decides them now.
DECIDING = "glyphs2"


def _claim_lines(frame) -> list[str]:
    """The summary's claim-by-claim account of the deciding scale: each claim with a word in a sentence
    (:func:`dml_tutorial.claims.sentence`), most decisive words first."""
    rows = [r for r in frame.to_dict("records") if r["verdict"] in evidence.WORDS]
    rows.sort(key=lambda r: evidence.WORDS.index(r["verdict"]))
    return [f"- {claims.sentence(r)}" for r in rows]


def summary_page(runs: list[dict], notebooks: dict, registration: dict | None = None,
                 assessed: tuple | None = None) -> str:
    """The book's first page after the introduction: per paper, what it claims (the findings box's sentence), what
    our runs found on the scale that decides the words (:data:`DECIDING`), claim by claim with its gain and
    interval, what the other scales found (their words counted) and how sure the words are (those that survive the
    book-wide Holm correction, and those decided post hoc). Generated, so it cannot disagree with the verdict
    table."""
    frames, book_wide = assessed or assess_book(runs, notebooks, registration)
    lines = ["# Summary: what reproduced", "",
             "<!-- generated by `dml-tutorial report` from the chapters' records and data/results/: do not edit -->",
             "",
             ("Per paper: its claim, what our runs found claim by claim on test bed II (the scale that decides the "
              "words), what the other scales found, and how sure the words are. The words are the book's five "
              "({doc}`/book/glossary`); each chapter's Findings box says why, and {doc}`the verdict table "
              "</book/results/verdicts>` holds every cell."), ""]
    for chapter, fs in frames.items():
        if chapter not in claims.CLAIMED:
            continue
        others = [f"on {SUMMARY_SCALES[scale]}: {text}" for scale, f in fs.items()
                  if scale in SUMMARY_SCALES and scale != DECIDING and (text := found(f))]
        deciding = fs.get(DECIDING)
        each = _claim_lines(deciding) if deciding is not None and not deciding.empty else []
        decisive = {k: v for k, v in book_wide.items() if k[0] == chapter}
        marks = [r for f in fs.values() if f is not None for r, w in zip(f["registration"], f["verdict"])
                 if w in evidence.WORDS]
        post_hoc = sum(bool(r) for r in marks)  # registry.mark: "" unless the word is post hoc
        kept = sum(decisive.values())
        sure = ((f"{kept} of its {len(decisive)} decisive words survive" if len(decisive) > 1 else
                 f"its one decisive word {'survives' if kept else 'does not survive'}")
                + " the book-wide Holm correction" if decisive else "no decisive word yet")
        n = len(marks)
        if marks and not post_hoc:
            sure += (f"; {'its one word' if n == 1 else f'each of its {n} words'} was registered before the run "
                     "that decided it")
        elif marks:
            which = ("its one word is" if n == 1 else f"every one of its {n} words is" if post_hoc == n else
                     f"{post_hoc} of its {n} words {'is' if post_hoc == 1 else 'are'}")
            sure += f"; {which} *post hoc*, decided by a run made before the claim's definition was committed"
        scale = SUMMARY_SCALES[DECIDING]
        sure += _open_words(deciding, scale)
        lines += [f"## {claims.NAMES.get(chapter, chapter)}", "",
                  f"**The paper claims** that {claims.CLAIMED[chapter]}", "",
                  (f"**What we found on {scale}**, where the words are decided (our gain, paired by seed, with its "
                   "interval adjusted for the chapter's comparisons):" if each else
                   f"**What we found**: no word on {scale} yet."), "", *each, "",
                  (f"**Elsewhere**: {'; '.join(others)}. " if others else "") + f"**How sure**: {sure}. "
                  f"{{ref}}`Why, in the findings <{chapter}-findings>`.", ""]
    return "\n".join(lines).rstrip() + "\n"


def _open_words(frame, scale: str) -> str:
    """The summary's clause on the deciding scale's *inconclusive* words: the seeds a word would need at their
    seeds' gain and spread (:func:`_projected`), and how many of them ran on the same data every seed."""
    rows = [] if frame is None else [r for r in frame.to_dict("records") if r["verdict"] == "inconclusive"]
    if not rows:
        return ""
    needs = sorted(n for r in rows if (n := _projected(r)) is not None)
    same = sum(_same_data(r) for r in rows)
    words = "its one *inconclusive* word" if len(rows) == 1 else f"its {len(rows)} *inconclusive* words"
    said = (f"; {words} on {scale} would need {needs[0] if len(needs) == 1 else f'{needs[0]} to {needs[-1]}'} "
            f"seeds for a word at {'its' if len(rows) == 1 else 'their'} seeds' gain and spread" if needs else
            f"; {words} on {scale}: no projection")
    if len(needs) < len(rows) and needs:
        said += f" ({len(rows) - len(needs)} more than {evidence.MOST_SEEDS} or none)"
    if not same:
        return said
    which = "it comes" if len(rows) == 1 else "all of them come" if same == len(rows) else \
        f"{same} of them come" if same > 1 else "one comes"
    return f"{said}; {which} from seeds that share their data and vary only the training"


VERDICT_RULES = (
    "Each cell: the verdict, then our gain and its interval in points, paired by seed and adjusted for the "
    "chapter's comparisons at that scale (Bonferroni, the chapter's family). A replication in a proxy setting (our "
    "data and network, not the paper's), in five words (`dml_tutorial/evidence.py`), with delta the claim's "
    "smallest effect of interest: **supported** when the interval lies above 0 (*smaller than reported* when it "
    "also lies below the paper's gain relative to its baseline); **contradicted** when it lies below 0; **no effect "
    "detected** when it lies within -delta and +delta; **inconclusive** otherwise; **not testable here** when the "
    "one gate rule fails: the claim's control (its no-term baseline, on clean labels for a claim about noise) is "
    "not shown to beat the raw input and the untrained network by delta at the same adjusted level, or lies "
    "within delta of 100%. Smoke runs (3 seeds, small offline data) check the pipeline: no word, so no column "
    "here. Two families: each word is decided within its chapter at one scale; the book-wide family is every test "
    "of this table at once (Holm). *Post hoc*: the claim's definition was committed after a run that decided it "
    "was made, or the run's protocol was not registered before it, or the claims and rule that decide its words "
    "changed since ({doc}`the claims registry </book/results/registry>` names the run).")


def write_report(results: Path = RESULTS, pages: Path = PAGES, notebooks: dict | None = None) -> list[Path]:
    """Write the "At paper scale" page (``pages/at_scale.md``, a section for every chapter notebook of
    ``notebooks``, ``{chapter: path}``, default: the book's), the verdict table and the claims registry page from
    the run files under ``results``; returns the pages written."""
    from .profiles import CHAPTERS

    runs = load_runs(results)
    notebooks = notebooks or {c: nb for c, nb in chapters().items() if c in CHAPTERS}
    registration = registry.stored(Path(results) / registry.STATUS.name)  # `dml-tutorial report` writes it
    pages.mkdir(parents=True, exist_ok=True)
    scale = pages / f"{SCALE_PAGE}.md"
    scale.write_text(scale_page([report_page(chapter, notebook, [r for r in runs if r["chapter"] == chapter],
                                             registration) for chapter, notebook in notebooks.items()]))
    written = [scale]
    page = pages / "verdicts.md"  # included by the introduction; not a page of its own
    assessed = assess_book(runs, notebooks, registration)  # one assessment for the table and the summary
    page.write_text(verdicts_page(runs, notebooks, registration, assessed))
    summary = pages / "summary.md"
    summary.write_text(summary_page(runs, notebooks, registration, assessed))
    written.append(summary)
    claims_page = pages / "registry.md"
    claims_page.write_text(registry.page(registration))
    return written + [page, claims_page]


def _shown(path: Path) -> str:
    """``path`` as a reader should see it: relative to the repository when inside it (the stored outputs then read
    the same in every clone), else whole."""
    from .chapters import REPOSITORY

    try:
        return str(Path(path).resolve().relative_to(REPOSITORY.resolve()))
    except ValueError:
        return str(path)


def _recorded_group(chapter: str, profile: str, results: Path, say: bool = True) -> tuple[tuple, list[dict]] | None:
    """The one group of recorded runs of ``chapter`` under ``profile`` (:func:`group`), or ``None``; with ``say``,
    shows where it looked while there is none (:func:`show` says it; :func:`details`, the cell under it, does not
    say it again)."""
    from IPython.display import Markdown, display

    runs = runs_of(chapter, profile, results)
    if not runs and say:
        where = _shown(Path(results) / chapter)
        display(Markdown(f"**Not run yet**: no `{profile}` run of this chapter under `{where}`. "
                         f"`dml-tutorial sweep data/sweeps/{chapter}-{profile}.yaml`, in a clone of the repository, "
                         "records it."))
    return next(iter(group(runs).items())) if runs else None  # one profile: one group


def _claims_per_table(chapter: str, tables: dict) -> dict[str, int]:
    """``{table: number of the chapter's claims comparing it}`` over the recorded ``tables``, in claim order."""
    mine = [c.table.id for c in claims.CLAIMS.get(chapter, []) if c.table.id in tables]
    return {t: mine.count(t) for t in dict.fromkeys(mine)}


def headroom(chapter: str, runs: list[dict]) -> str:
    """One sentence on the room a claimed gain has (#50: a baseline near 100 leaves a method little to add): in
    the table most of the chapter's claims compare, the best compared row against the reference rows and 100,
    means over seeds (:func:`claims.above_references`). ``""`` when nothing is compared."""
    counts = _claims_per_table(chapter, merge_seeds(runs))
    if not counts:
        return ""
    refs = claims.above_references(runs, chapter)
    row = refs[refs["table"] == title_of(max(counts, key=counts.get))].head(1).to_dict("records")
    if not row:
        return ""
    r = row[0]
    return (f"In {r['table']} ({r['column']}), the best compared row ({r['best trained row']}) reaches "
            f"{r['best trained']:.1f}%, against the raw input's {r['raw input']:.1f}% and the untrained network's "
            f"{r['untrained network']:.1f}% (means): {100 - r['best trained']:.1f} points below 100, the most a "
            "method could add to it.")


def compact_tables(chapter: str, runs: list[dict]) -> list[str]:
    """The evidence a reader needs in view, as Markdown: one compact table per test bed (#51), the recorded table
    that most of the chapter's claims compare, cut to the rows they compare, the reference rows and the columns
    they read (mean ± std over seeds, the paper's numbers beside), and the names of the other compared tables
    (:func:`details` shows them); for a chapter without claims, each table that carries the reference rows, whole."""
    tables = merge_seeds(runs)
    mine = [c for c in claims.CLAIMS.get(chapter, []) if c.table.id in tables]
    keep = {t: (None, None) for t, (m, _) in tables.items() if all(r in m for r in REFERENCES)} if not mine else {}
    counts = _claims_per_table(chapter, tables)
    main = max(counts, key=counts.get) if counts else None  # max: the first of equal counts
    for c in mine:
        if c.table.id != main:
            continue
        rows, columns = keep.setdefault(c.table.id, ({}, {}))
        rows.update(dict.fromkeys((c.base, c.row, *REFERENCES, STARTED)))
        columns.update(dict.fromkeys(x for x in (c.control, c.base_column, c.column) if x))
    others = [t for t in counts if t != main]
    lines = []
    for table, (rows, columns) in keep.items():
        if table not in tables:
            continue
        measured, paper = tables[table]
        names = [r for r in measured if rows is None or r in rows]

        def cut(numbers, names=names, columns=columns):
            return {r: {k: v for k, v in numbers.get(r, {}).items() if columns is None or k in columns}
                    for r in names}

        quoted = cut(paper)
        seeds = sorted({s for r in runs for t in r["tables"] if declared.key(t) == table for s in t["seeds"]})
        lines += [f"**{title_of(table)}**" + ("" if rows is None else ": the rows and columns the claims compare"), "",
                  markdown_table(results_table(cut(measured), quoted if any(quoted.values()) else None)), "",
                  f"In %, mean ± std over seeds {', '.join(map(str, seeds))}"
                  + ("; paper columns quoted from the paper." if any(quoted.values()) else "."), ""]
    if others:
        named = "; ".join(map(title_of, others))
        lines += [f"The other tables the claims compare ({named}) are in the details below.", ""]
    return lines


def show(chapter: str, profile: str = "fashion", results: Path = RESULTS) -> None:
    """A chapter's evidence on recorded runs of ``profile`` (the sweeps' results, committed), to read unfolded:
    the tables its claims compare (:func:`compact_tables`); one line instead while the runs hold fewer seeds than a
    word needs, or are superseded (:func:`superseded`). Displays Markdown; returns ``None``. :func:`details`
    shows the rest (the verdicts with their forest plot: the findings box draws every test bed's in one)."""
    from IPython.display import Markdown, display

    found = _recorded_group(chapter, profile, results)
    if found is None:
        return
    (_, dataset, model, epochs), members = found
    seeds = sorted({s for r in members for t in r["tables"] for s in t["seeds"]})
    # where each row's best-shot search chose its length (dml_tutorial.search), the profile's epochs trained none
    length = ("searched lengths" if any("best shot" in r.get("choices", {}) for r in members) else f"{epochs} epochs")
    if superseded(chapter, profile, load_runs(results)):
        head = SUPERSEDED_TEXT[0].upper() + SUPERSEDED_TEXT[1:]
        display(Markdown(f"*{head}: these runs ({dataset}, {model}, {length}, seeds "
                         f"{', '.join(map(str, seeds))}) give this chapter no words any more; their tables, verdicts "
                         "as they were and figures are in the next cell's output.*"))
        return
    if claims.CLAIMS.get(chapter) and len(seeds) < evidence.MIN_SEEDS:  # numbers only: nothing to read in view
        display(Markdown(f"*{dataset}, {model}, {length}, seeds {', '.join(map(str, seeds))} so far: fewer "
                         f"than the {evidence.MIN_SEEDS} seeds a word needs, so the tables wait in the next cell's "
                         f"output until the sweep records more.* {headroom(chapter, members)}".rstrip()))
        return
    lines = [(f"*{dataset}, {model}, {length}, seeds {', '.join(map(str, seeds))}: the verdicts with their "
              "reasons, where and how it ran, every table and the run's figures are in the next cell's output.*"),
             "", *compact_tables(chapter, members)]
    display(Markdown("\n".join(lines)))


def seed_lines(chapter: str, table: str, rows: list[str], columns: list[str], profile: str = "glyphs2",
               ylabel: str = "R@1 (%)", results: Path = RESULTS):
    """Draw one recorded table of ``chapter``'s ``profile`` runs seed by seed (:func:`dml_tutorial.plots.
    paired_seeds`): a panel per column, the ``rows`` on each; returns the figure, or ``None`` (and says so) when
    the table is not recorded."""
    cells = {column: {row: (row, column) for row in rows} for column in columns}
    return _seed_figure(chapter, table, cells, profile, ylabel, results)


def seed_panels(chapter: str, table: str, panels: dict[str, dict[str, str]], column: str,
                profile: str = "glyphs2", ylabel: str = "R@1 (%)", results: Path = RESULTS):
    """As :func:`seed_lines`, one ``column`` of the table and a panel per entry of ``panels`` (``{panel title:
    {tick label: recorded row}}``): each panel its own rows, e.g. one loss without and with a term."""
    cells = {panel: {tick: (row, column) for tick, row in ticks.items()} for panel, ticks in panels.items()}
    return _seed_figure(chapter, table, cells, profile, ylabel, results)


def _seed_figure(chapter, table, cells: dict, profile: str, ylabel: str, results: Path):
    """``cells``: ``{panel: {tick: (row, column)}}`` of the recorded ``table``, drawn by
    :func:`dml_tutorial.plots.paired_seeds`."""
    from IPython.display import Markdown, display

    from . import plots

    measured = recorded(chapter, profile, results).get(table)
    if not measured:
        display(Markdown(f"*No {profile} run of {chapter} has recorded the table {table!r} yet.*"))
        return None
    panels = {panel: {tick: measured[row][column] for tick, (row, column) in ticks.items()}
              for panel, ticks in cells.items()}
    seeds = len(next(iter(next(iter(panels.values())).values())))
    where = SUMMARY_SCALES.get(profile, profile)
    return plots.paired_seeds(panels, f"{where[:1].upper()}{where[1:]}, {seeds} seeds: each grey line is one "
                              "seed's run", ylabel)


def figure(chapter: str, name: str, profile: str = "glyphs2", results: Path = RESULTS) -> None:
    """Display the figure ``name`` (its file's stem, as :func:`dml_tutorial.report.record_figure` named it) of the
    first seed's recorded ``profile`` run of ``chapter``, in view: a picture of a real-data run where the kernel's
    own run is a smoke run."""
    from IPython.display import Image, Markdown, display

    runs = sorted(runs_of(chapter, profile, results), key=lambda run: min(run.get("seeds") or [0]))
    found = [f for run in runs[:1] for f in run.get("figures", []) if Path(f).stem == name]
    if not found:
        display(Markdown(f"*No {profile} run of {chapter} has recorded the figure {name!r} yet.*"))
        return
    display(Image(filename=str(Path(results) / chapter / found[0])))


def details(chapter: str, profile: str = "fashion", results: Path = RESULTS):
    """The rest of a recorded profile's section, for a folded cell under :func:`show`: where and how the runs ran
    (device, package, commits, dates, compute, command), every recorded table over the seeds, the verdicts with
    their reasons, the reference rows against the best trained row, and the figures of the first seed's run (every
    seed's would make a ten-seed chapter's notebook several MB; the others stay in their run folders). Returns
    the figure of our paired gains beside the paper's (``None`` when nothing is recorded or no claim is)."""
    from IPython.display import Image, Markdown, display

    found = _recorded_group(chapter, profile, results, say=False)
    if found is None:
        return None
    key, members = found
    text = _section(key, members, registry.stored(Path(results) / registry.STATUS.name))
    refs = [f"- {r['table']}, {r['column']}: the best trained row ({r['best trained row']}) "
            f"{r['best trained']:.1f}%, the raw input {r['raw input']:.1f}%, the untrained network "
            f"{r['untrained network']:.1f}% (means over seeds)" for r in claims.above_references(members, chapter)
            .to_dict("records")]
    references = ["### Against the reference rows", ""] + refs + [""] if refs else []
    display(Markdown("\n".join(text[2:] + references)))  # without the heading: the notebook gives its own
    first = min(members, key=lambda run: min(run.get("seeds") or [0]))
    if len(members) > 1 and first.get("figures"):
        display(Markdown(f"The figures of seed {min(first.get('seeds') or [0])}'s run; every seed's are in "
                         f"`data/results/{chapter}/`."))
    for figure in first.get("figures", []):
        display(Image(filename=str(Path(results) / chapter / figure)))
    verdicts = claims.assess(chapter, members)
    from . import plots  # a figure in a notebook: the pages themselves draw none

    return None if verdicts.empty else plots.gains(verdicts, f"{chapter}, {profile} profile: our gain vs the paper's")
