"""Command line: ``dml-tutorial`` (or ``python -m dml_tutorial``) with seven commands.

- ``run CHAPTER|all [--profile P] [-p NAME VALUE ...] [--output DIR] [--results FILE]`` executes chapter notebooks
  with papermill. Without ``--output`` a notebook is executed in place, which is how the committed notebooks get
  their stored outputs. Every table the notebook records (:func:`dml_tutorial.report.record`) goes into a
  self-describing JSON file, by default next to the executed notebook (``<name>.results.json``).
- ``sweep GRID.yaml [--devices 0,1] [--results DIR] [--dry-run]`` runs one chapter over a parameter grid (e.g.
  several seeds of the full profile), one ``run`` per point, skipping points whose results file exists, so an interrupted sweep
  resumes; with several GPUs, runs go in parallel, one per GPU, and ``--jobs N`` runs N at once on a CPU, each on
  its share of the cores (:func:`_threads_per_point`). ``--executor slurm`` submits each pending point as
  a SLURM job instead (:mod:`dml_tutorial.slurm`, through submitit); ``--status`` shows each point's state (a
  local point that runs or has begun with its cached trainings: :func:`local_state`);
  ``--commit`` commits each run file as it finishes, so that a sweep spanning several sittings loses at most the
  run in progress (``data/pending/``, data/README.md), and the run in progress keeps its finished trainings
  (:func:`point_runs`), so that resuming it loads them instead of training them again; ``--pack`` carries those
  to another machine in the repository (:mod:`dml_tutorial.carry`). ``--dry-run`` runs the first point with the
  sweep file's ``dry_run`` parameters (tiny SETTINGS) before the sweep (:func:`dry_run`).
- ``land GRID.yaml`` moves such a sweep's run files from ``data/pending/`` into ``data/results/`` once every point has
  one, all made from clean commits of this history under the same settings, replacing the profile's old runs; it
  stages the move and commits nothing.
- ``report [--results DIR] [--pages DIR]`` writes the "At paper scale" page, the verdict table and the claims
  registry page from the run files.
- ``grid CHAPTER [--profile P]`` lists a chapter's declared runs under a profile; nothing is trained.
- ``pretrain NAME`` builds a test bed's pretrained start once (:mod:`dml_tutorial.pretrain`).
- ``compare RUNFILE [--results DIR]`` checks a re-run seed of a test bed against its committed run
  (:func:`dml_tutorial.reference.compare_seed`); exit 1 when a number left its tolerance.

Errors (unknown chapter or parameter, a bad grid file, a failing cell) give one message and a non-zero exit; the
partially executed notebook is kept for inspection.
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import datetime
import itertools
import json
import os
import queue
import random
import re
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor, as_completed
from pathlib import Path

from . import __version__, carry, slurm
from .chapters import FOLDER_ENV, chapters, in_checkout, results_path
from .profiles import PROFILE_NAMES
from .settings import THREADS_ENV, trained

GRID_KEYS = {"chapter", "profile", "parameters", "grid", "devices", "dry_run"}
#: Notebook parameters that say where things are kept, not what runs (a sweep point's run cache, a mounted Drive
#: folder, the datasets' folder): left out of a run file's parameters and command, which another machine re-runs.
LOCATIONS = ("RUNS", "DATA_ROOT")


def _value(text: str):
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError):
        return text


def check_parameters(notebook: Path, params: dict):
    """Raise ``ValueError`` naming the notebook's parameters when ``params`` sets one it does not have (papermill
    itself would only warn and run with the default)."""
    import papermill as pm

    known = pm.inspect_notebook(str(notebook))
    unknown = sorted(set(params) - set(known))
    if unknown:
        raise ValueError(f"{notebook.name} has no parameter {unknown[0]!r}; its parameters: {', '.join(known)}")


def _arguments(params: dict) -> list[str]:
    """Command-line arguments that give ``params`` back through :func:`_value` (``--profile`` for PROFILE)."""
    args = []
    for key, value in params.items():
        text = value if isinstance(value, str) and _value(value) == value else repr(value)
        args += ["--profile", text] if key == "PROFILE" else ["-p", key, text]
    return args


def run_chapter(name: str, src: Path, out: Path, params: dict, results_file: Path, figures: bool = False,
                commit: str | None = None) -> float:
    """Execute ``src`` into ``out`` with ``params`` and write the run's results file; returns the seconds taken.
    With a run cache (``RUNS``, a sweep point's: :func:`point_runs`), the file records too how many trainings it
    holds and the seconds they took over every sitting (``trainings``, ``trained_seconds``:
    :func:`dml_tutorial.experiment.cache_seconds`; a folder several runs share counts all of theirs); ``seconds``
    is this sitting's wall time.
    With ``figures``, the figures the notebook records (:func:`dml_tutorial.report.record_figure`) are kept in
    ``<results file>.figures/`` beside it and listed in it. ``commit``: the tree the run started from (default:
    read before the notebook runs, since executing it in place rewrites its outputs and dirties the tree)."""
    import papermill as pm

    from . import report

    out.parent.mkdir(parents=True, exist_ok=True)
    kept_tables(out).unlink(missing_ok=True)  # an earlier failure's, which this run replaces
    what = {key: value for key, value in params.items() if key not in LOCATIONS}  # what ran, not where it kept things
    command = shlex.join(["dml-tutorial", "run", name] + _arguments(what))
    commit = commit or report.git_commit()
    with tempfile.TemporaryDirectory() as tmp:
        recorded = Path(tmp) / "tables.jsonl"
        saved = {key: os.environ.get(key) for key in (report.ENV, report.FIGURES_ENV)}
        os.environ[report.ENV] = str(recorded)  # the kernel inherits both
        os.environ.pop(report.FIGURES_ENV, None)
        if figures:
            os.environ[report.FIGURES_ENV] = "1"
        start = time.perf_counter()
        try:
            _execute(pm, src, out, params)
        except BaseException:  # what the run measured before it failed is kept beside its notebook, never lost
            if recorded.exists():
                shutil.copyfile(recorded, kept_tables(out))
            raise
        finally:
            for key, value in saved.items():
                os.environ.pop(key, None)
                if value is not None:
                    os.environ[key] = value
        seconds = time.perf_counter() - start
        kept = []
        if figures and recorded.with_suffix(".figures").exists():
            folder = results_file.with_name(results_file.stem + ".figures")
            shutil.rmtree(folder, ignore_errors=True)
            shutil.copytree(recorded.with_suffix(".figures"), folder)
            kept = sorted(f"{folder.name}/{p.name}" for p in folder.glob("*.png"))
        run = report.run_file(name, what, recorded, command, seconds, kept, commit=commit)
        if params.get("RUNS") and Path(params["RUNS"]).is_dir():  # a sweep point's cache holds every sitting's
            from .experiment import cache_seconds

            trained, run["trainings"] = cache_seconds(params["RUNS"])
            run["trained_seconds"] = round(trained, 1)
    results_file.parent.mkdir(parents=True, exist_ok=True)
    tmp_file = results_file.with_name(results_file.name + ".tmp")
    tmp_file.write_text(json.dumps(run, indent=1) + "\n")
    os.replace(tmp_file, results_file)
    return seconds


def kept_tables(notebook: Path) -> Path:
    """Where a failed run keeps the tables it recorded before failing: beside its partially executed notebook, as
    ``<notebook>.tables.jsonl`` (one recorded table a line, as :func:`dml_tutorial.report.record` wrote them). Not a
    run file: a result in the book comes from a run that finished."""
    return notebook.with_name(notebook.stem + ".tables.jsonl")


def _run(args, parser) -> int:
    known = chapters()
    names = list(known) if args.chapter == "all" else [args.chapter]
    if names[0] not in known:
        parser.error(f"unknown chapter {names[0]!r}; known chapters: {', '.join(known)}")
    if args.results and len(names) > 1:
        parser.error("--results names one file: use it with one chapter")
    params = {name: _value(value) for name, value in args.parameter}
    if args.profile:
        params["PROFILE"] = args.profile
    from .report import git_commit

    if warning := busy_cores_warning(run_threads(names[0], params)):
        print(warning, file=sys.stderr, flush=True)
    commit = git_commit()  # every chapter starts from this tree, though `run all` rewrites the earlier notebooks
    for name in names:
        src = known[name]
        if not src.exists():  # an installed wheel carries the chapters' records, not their notebooks
            parser.error(f"no notebook {src.name} here (only its record): clone the repository and run from it, "
                         f"or point {FOLDER_ENV} at a folder of chapter notebooks")
        out = src if args.output is None else args.output / src.name
        results_file = args.results or results_path(out)
        print(f"== {name}: {src} -> {out}", flush=True)
        try:
            check_parameters(src, params)
        except ValueError as err:
            parser.error(str(err))
        try:
            seconds = run_chapter(name, src, out, params, results_file, figures=args.figures, commit=commit)
        except Exception as err:  # noqa: BLE001 (papermill raises PapermillExecutionError and kernel errors)
            tables = kept_tables(out)
            print(f"error: chapter {name!r} failed: {failure(err)}\n"
                  f"the partially executed notebook is kept at {out}"
                  + (f", the tables it recorded at {tables}" if tables.exists() else ""), file=sys.stderr)
            return 1
        print(f"== {name}: done in {seconds:.0f} s; results: {results_file}", flush=True)
    return 0


#: How many times a run starts its kernel when the kernel dies before its first reply: two kernels started at the
#: same moment (a sweep's ``--jobs`` points) can be given the same free TCP port by jupyter_client, and the second
#: to bind it dies ("Address already in use"; seen once in `make test`, 2026-12-07). No cell has run by then.
KERNEL_STARTS = 3
#: The message of that death (jupyter_client's ``wait_for_ready``, through nbclient and papermill).
KERNEL_DIED = "Kernel died before replying to kernel_info"


def _execute(pm, src: Path, out: Path, params: dict) -> None:
    """papermill's run of ``src`` into ``out`` from the repository root, its kernel started again (up to
    :data:`KERNEL_STARTS` times, a second or two apart) where it died before replying."""
    for start in range(1, KERNEL_STARTS + 1):
        try:
            pm.execute_notebook(str(src), str(out), parameters=params, cwd=str(src.parent.parent), progress_bar=True,
                                kernel_name="python3")
            return
        except RuntimeError as err:
            if KERNEL_DIED not in str(err) or start == KERNEL_STARTS:
                raise
            print(f"the kernel died as it started ({err}): starting it again, {start + 1} of {KERNEL_STARTS}",
                  file=sys.stderr, flush=True)
            time.sleep(1.0 + start * random.random())  # the other kernel's start is over by then


def failure(err: Exception) -> str:
    """One line that names what failed: the cell's exception type and message (a message over several lines, e.g.
    a download's tries, joined), and where. Not the traceback's last line, which for an error raised inside a call
    spread over several lines is its closing ")"."""
    ename, evalue = getattr(err, "ename", None), getattr(err, "evalue", None)
    if ename is None:  # a dead kernel, a timeout: not an exception raised in a cell
        lines = str(err).strip().splitlines()
        return lines[-1] if lines else repr(err)
    where = f" (in cell In [{err.exec_count}])" if getattr(err, "exec_count", None) is not None else ""
    return f"{ename}: {' '.join(str(evalue).split())}{where}"


def load_grid(path: Path) -> dict:
    """Read and check a sweep file: ``chapter``, ``grid`` ({parameter: [values]}) and optionally ``profile``
    (default ``full``), ``parameters`` (fixed for every run), ``devices`` (GPU ids to spread runs over) and
    ``dry_run`` (the parameters, e.g. tiny ``SETTINGS``, that ``sweep --dry-run`` gives the first point)."""
    import yaml

    spec = yaml.safe_load(Path(path).read_text()) or {}
    if not isinstance(spec, dict) or set(spec) - GRID_KEYS or "chapter" not in spec:
        raise ValueError(f"{path}: a sweep file is a mapping with 'chapter' and 'grid' (and optionally 'profile', "
                         f"'parameters', 'devices', 'dry_run'); got keys "
                         f"{sorted(spec) if isinstance(spec, dict) else spec}")
    if spec["chapter"] not in chapters():
        raise ValueError(f"{path}: unknown chapter {spec['chapter']!r}; known chapters: {', '.join(chapters())}")
    grid = spec.get("grid")
    if not isinstance(grid, dict) or not grid or not all(isinstance(v, list) and v for v in grid.values()):
        raise ValueError(f"{path}: 'grid' must map each parameter to a non-empty list of values, got {grid!r}")
    spec.setdefault("profile", "full")
    spec.setdefault("parameters", {})
    if spec["profile"] not in ("auto",) + PROFILE_NAMES:
        raise ValueError(f"{path}: profile must be 'auto' or one of {', '.join(PROFILE_NAMES)}, "
                         f"got {spec['profile']!r}")
    dry = spec.setdefault("dry_run", {})
    if not isinstance(dry, dict) or not all(isinstance(name, str) for name in dry):
        raise ValueError(f"{path}: 'dry_run' must map parameter names to values, got {dry!r}")
    params = {**spec["parameters"], **grid, **spec["dry_run"]}
    check_parameters(chapters()[spec["chapter"]], params)
    return spec


def sweep_points(spec: dict) -> list[tuple[str, dict]]:
    """``[(run_id, parameters)]``: every point of the grid, named by the profile and the values that define it."""
    names = list(spec["grid"])
    points = []
    for values in itertools.product(*spec["grid"].values()):
        params = {"PROFILE": spec["profile"], **spec["parameters"], **dict(zip(names, values))}
        slug = "_".join(f"{k.lower()}-{re.sub(r'[^A-Za-z0-9.]+', '-', str(v)).strip('-')}"
                        for k, v in sorted(params.items()) if k != "PROFILE")
        points.append((f"{spec['profile']}_{slug}", params))
    return points


def _devices(option: str | None, spec: dict) -> list[str | None]:
    if option is None and "devices" in spec:
        option = ",".join(map(str, spec["devices"]))
    if option is None or option == "auto":
        import torch

        return [str(i) for i in range(torch.cuda.device_count())] or [None]
    return [d.strip() for d in option.split(",") if d.strip()] or [None]


def _command(chapter: str, rid: str, params: dict, args) -> tuple[list[str], Path]:
    """The ``dml-tutorial run`` of one sweep point, and its log file: the same on every executor. A chapter with a
    ``RUNS`` parameter that the grid does not set keeps the point's finished trainings in :func:`point_runs`."""
    log = args.output / chapter / f"{rid}.log"
    log.parent.mkdir(parents=True, exist_ok=True)
    if "RUNS" not in params and _takes(chapter, "RUNS"):
        params = {**params, "RUNS": str(point_runs(args.output, chapter, rid).resolve())}  # the kernel's cwd differs
    return _run_argv(chapter, args.output / chapter / rid, args.results / chapter / f"{rid}.json", params), log


def _run_argv(chapter: str, output: Path, result: Path, params: dict) -> list[str]:
    """``dml-tutorial run`` of ``chapter`` with ``params`` into ``output``, its run file ``result``, figures kept."""
    return [sys.executable, "-m", "dml_tutorial", "run", chapter, "--output", str(output), "--results", str(result),
            "--figures", *_arguments(params)]


def point_runs(output: Path, chapter: str, rid: str) -> Path:
    """Where a sweep point keeps its finished trainings (the notebook's run cache, ``RUNS``) while it runs: a point
    stopped part-way (a session's end, a pre-empted job, Ctrl-C) loads them when the sweep resumes it, instead of
    training them again, and records the same tables (``dml_tutorial.experiment``'s cache is keyed on each run's
    settings and seed). Removed once the point's run file is written."""
    return output / chapter / f"{rid}.runs"


def point_marker(output: Path, chapter: str, rid: str) -> Path:
    """The file a local sweep keeps while one of its points runs (JSON: the run's pid, the host, when it began),
    removed when the run ends; ``--status`` reads it (:func:`local_state`)."""
    return output / chapter / f"{rid}.running"


def _mark(marker: Path, pid: int) -> None:
    """Write :func:`point_marker`'s file for the run ``pid``."""
    import socket

    began = _utc(time.time())
    marker.write_text(json.dumps({"pid": pid, "host": socket.gethostname(), "began": began}) + "\n")


def _live(marker: Path) -> dict | None:
    """The marker's contents where it names a process alive on this host; ``None`` otherwise (no marker, a sweep
    killed before it could remove it, or another host's, which cannot be checked from here)."""
    import socket

    try:
        held = json.loads(marker.read_text())
        if held["host"] != socket.gethostname():
            return None
        os.kill(int(held["pid"]), 0)  # signal 0: is it there
    except (OSError, ValueError, KeyError, TypeError):  # ProcessLookupError is an OSError
        return None
    return held


def _utc(seconds: float) -> str:
    return datetime.datetime.fromtimestamp(seconds, datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")


def local_state(output: Path, chapter: str, rid: str, pack: Path | None = None) -> tuple[str, float]:
    """A point with no run file as ``--status`` shows it on the local executor: ``running`` (its sweep's marker,
    :func:`point_marker`, names a live process here), ``begun`` (its run cache, :func:`point_runs`, holds
    trainings and nothing runs it: the same command resumes from them) or ``pending``; where it has begun, how
    many trainings its cache holds and the seconds they took (:func:`dml_tutorial.experiment.cache_seconds`), how
    many it holds part-way (a training's ``.partial.pt``, written every epoch or every few minutes) and when it last
    wrote to it. A point run by a sweep older than the marker reads ``begun``: that time tells whether it still
    moves. ``pack``: the point's pack (:mod:`dml_tutorial.carry`), whose trainings are counted where it exists:
    ``packed`` where nothing is cached here yet. Returns that line and the seconds of training its cache holds."""
    from .experiment import cache_seconds

    cache = point_runs(output, chapter, rid)
    files = list(cache.rglob("*.pt")) if cache.is_dir() else []
    finished = sum(not f.name.endswith((".state.pt", ".partial.pt")) for f in files)
    partial = sum(f.name.endswith(".partial.pt") for f in files)
    last = max((f.stat().st_mtime for f in files), default=None)
    trained = cache_seconds(cache)[0] if files else 0.0
    detail = (f"{finished} training{'s' * (finished != 1)} cached"
              + (f", {_span(trained)} of training" if trained else "") + (f", {partial} part-way" if partial else "")
              + (f"; its cache last written at {_utc(last)}" if files else ""))
    packed = carry.count(pack) if pack is not None and pack.exists() else None
    if packed is not None:
        detail += f"; its pack {pack} holds {packed}"
    if held := _live(point_marker(output, chapter, rid)):
        return f"running (pid {held['pid']} since {held['began']}; {detail})", trained
    if files:
        return f"begun ({detail}; the same command resumes from them)", trained
    if packed is not None:
        unpacks = "the sweep unpacks them where it resumes it"
        return f"packed ({packed} training{'s' * (packed != 1)} in {pack}; {unpacks})", 0.0
    return "pending", 0.0


def done_state(file: Path) -> str:
    """A point with a run file as ``--status`` shows it: ``done``, with the file and the commit and date it records,
    so that a run landed long ago in the default ``--results`` (``data/results``) is not read as a re-run's, whose
    sweep writes into another folder (``--results data/pending``): the status needs the same ``--results``."""
    try:
        run = json.loads(file.read_text())
        made = f"made from {run['commit'][:12]} on {run['date'][:10]}"
    except (OSError, ValueError, KeyError, TypeError):
        return f"done ({file}: unreadable)"
    if (seconds := _trained_seconds(run)) is not None:
        n = run.get("trainings", "?")
        made += f"; {n} training{'s' * (n != 1)}, {_span(seconds)} of training"
    return f"done ({file}: {made})"


def _trained_seconds(run) -> float | None:
    """The seconds of training a run file's data records (``trained_seconds``: over every sitting), None where it
    records none (a run file older than 0.27.5)."""
    try:
        return float(run["trained_seconds"])
    except (KeyError, TypeError, ValueError):
        return None


def _read(file: Path):
    try:
        return json.loads(file.read_text())
    except (OSError, ValueError):
        return None


def _span(seconds: float) -> str:
    return f"{seconds / 3600:.1f} h" if seconds >= 3600 else f"{seconds / 60:.0f} min" if seconds >= 60 else (
        f"{seconds:.0f} s")


def outlook(done: list[Path], left: int, begun: list[float] = ()) -> str | None:
    """``--status``'s last line where points are done and others left: the training the done points' run files
    record (:func:`_trained_seconds`), and the rest at their mean pace: how long a sweep's remaining points will
    train at the done points' threads, less what the begun ones have cached (``begun``: their caches' seconds, each
    counted up to one point's pace). A rough guide: a point resumed after a stop counts only what its cache kept,
    and another seed's searches may walk further."""
    seconds = [s for f in done if (s := _trained_seconds(_read(f))) is not None]
    if not seconds or not left:
        return None
    mean = sum(seconds) / len(seconds)
    line = (f"{len(done)} of {len(done) + left} points done, {_span(mean)} of training a point (as {len(seconds)} of "
            f"their run files record it); the {left} left: about {_span(mean * left)} at that pace")
    if had := sum(min(s, mean) for s in begun):
        line += f" ({_span(max(0.0, mean * left - had))} beyond the {_span(had)} their caches hold)"
    return line + ", one point at a time"


def _takes(chapter: str, parameter: str) -> bool:
    """Whether ``chapter``'s notebook has the papermill ``parameter`` (read each time: a notebook may change)."""
    import papermill as pm

    return parameter in pm.inspect_notebook(str(chapters()[chapter]))


def _threads_per_point(chapter: str, jobs: int) -> int | None:
    """The threads each of ``jobs`` points running at once on this CPU gets (its cores shared out, at least one),
    given through the chapter's ``SETTINGS`` (``threads``, a machine setting: :data:`~dml_tutorial.settings.
    MACHINE`; torch's threads and the BLAS and OpenMP pools', :func:`dml_tutorial.train.seed_everything`); ``None``
    for one point at a time, which keeps the profile's. Several single-threaded trainings make more steps a second
    than one on every core (test bed II: 1.16x, ``benchmarks/bench_sweep_parallel.py``)."""
    if jobs < 1:
        raise ValueError(f"--jobs must be at least 1, got {jobs}")
    if jobs == 1:
        return None
    if not _takes(chapter, "SETTINGS"):
        raise ValueError(f"{chapter}'s notebook takes no SETTINGS, through which each point gets its threads: "
                         "run its points one at a time (--jobs 1)")
    return max(1, (os.cpu_count() or 1) // jobs)


def _on_threads(params: dict, threads: int | None) -> dict:
    """A point's parameters with its ``threads`` added to its ``SETTINGS`` (``None``: as they are)."""
    return params if threads is None else {**params, "SETTINGS": {**(params.get("SETTINGS") or {}), "threads": threads}}


def run_threads(chapter: str, params: dict) -> int | None:
    """The torch threads a run of ``chapter`` with the papermill ``params`` trains on (``seed_everything``'s
    order): ``DML_TUTORIAL_THREADS``, else its ``SETTINGS``' ``threads``, else its profile's; ``None`` for torch's
    own (one per core), or where the chapter has no profiles."""
    from . import profiles

    if os.environ.get(THREADS_ENV):
        return int(os.environ[THREADS_ENV])
    changes = params.get("SETTINGS") or {}
    try:
        return changes["threads"] if "threads" in changes else profiles.settings(
            chapter, params.get("PROFILE", "auto"), changes).threads
    except ValueError:  # no profiles (the loss zoo), or settings the notebook itself will refuse
        return None


def busy_cores_warning(threads: int | None, runs: int = 1, busy: float | None = None,
                       cores: int | None = None) -> str | None:
    """A warning where ``runs`` trainings of ``threads`` threads each (``None``: torch's own, one per core) are
    about to start on ``cores`` cores (default: this process's) that other work keeps busy (``busy`` of them;
    default: measured over half a second with psutil) and do not fit beside it; ``None`` where they fit or run on
    one thread. torch's OpenMP threads spin while they wait for each other, so a thread that loses its core to a
    neighbour stalls the rest: on the 2-core Xeon test bed II's training steps on 2 threads beside 2 busy
    single-threaded processes took 1.8-4.1x as long as on 1 thread (four runs), where on idle cores 2 threads were
    1.5-1.8x as fast as 1 (``benchmarks/bench_busy_cores.py``)."""
    mine = sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else range(os.cpu_count() or 1)
    cores = cores or len(mine)
    threads = threads or cores
    if threads == 1:
        return None
    if busy is None:
        import psutil

        per_core = psutil.cpu_percent(interval=0.5, percpu=True)
        busy = sum(per_core[i] for i in mine if i < len(per_core)) / 100  # the cores this process may run on
    if busy + threads * runs <= cores + 0.25:  # a quarter of a core: a brief job beside the run is no warning
        return None
    return (f"warning: other work keeps {busy:.1f} of this machine's {cores} cores busy; {runs} run"
            f"{'s' * (runs > 1)} of {threads} threads beside it can take several times as long as on one thread "
            "(torch's threads spin waiting for a thread that lost its core: benchmarks/bench_busy_cores.py). Give "
            f"each run one thread ({THREADS_ENV}=1; a sweep: --jobs {cores}) or wait for the cores to be free")


class _Stop(Exception):
    """The sweep was told to stop (SIGTERM, SIGINT)."""

    def __init__(self, signum: int):
        super().__init__(signum)
        self.signum, self.name = signum, signal.Signals(signum).name


@contextlib.contextmanager
def _stopped_by_signals(running: set, stopping: threading.Event):
    """While the sweep runs: SIGTERM or SIGINT stops every run in progress (SIGTERM to its process group), starts
    no more and raises :class:`_Stop`; a run left alone would go on training, and its kernel with it."""
    def stop(signum, frame):
        stopping.set()
        for child in list(running):
            with contextlib.suppress(ProcessLookupError):
                os.killpg(child.pid, signal.SIGTERM)
        raise _Stop(signum)

    if threading.current_thread() is not threading.main_thread():  # signals reach only the main thread
        yield
        return
    before = {s: signal.signal(s, stop) for s in (signal.SIGTERM, signal.SIGINT)}
    try:
        yield
    finally:
        for s, handler in before.items():
            signal.signal(s, handler)


def _git(folder: Path, *argv: str) -> subprocess.CompletedProcess:
    return subprocess.run(["git", "-C", str(folder), *argv], check=False, capture_output=True, text=True)


def check_committable(results: Path, asker: str = "--commit") -> str | None:
    """Why run files written into ``results`` could not be committed (not in a git work tree, or ignored by it),
    or None, each reason prefixed with ``asker``: asked before a sweep with ``--commit`` starts, not hours later,
    and by ``land``."""
    results.mkdir(parents=True, exist_ok=True)
    if _git(results, "rev-parse", "--is-inside-work-tree").stdout.strip() != "true":
        return f"{asker}: {results} is not inside a git work tree"
    if _git(results, "check-ignore", "-q", "probe.json").returncode == 0:
        return (f"{asker}: git ignores the run files in {results} (see .gitignore; the repository's "
                "data/pending/ is not ignored)")
    return None


def commit_run(file: Path) -> str | None:
    """Commit one finished run file and its figures folder, and the removal of its point's pack (which it
    replaces), and nothing else (a path-limited commit leaves whatever else is staged alone), to the git repository
    that holds it; returns why not, or None."""
    paths = [p for p in (file, file.with_suffix(".figures")) if p.exists()]
    made = json.loads(file.read_text()).get("commit", "unknown")[:12]
    return commit_paths(paths, f"Sweep run {file.parent.name}/{file.stem} (made from {made})",
                        removed=[file.with_name(file.stem + carry.SUFFIX)])


def commit_paths(paths: list[Path], message: str, removed: list[Path] = ()) -> str | None:
    """Commit ``paths`` (all in one git repository) with ``message``, and the removal of the ``removed`` files
    (deleted here; one git never tracked is just deleted), nothing else; returns why not, or None (also where
    they are committed as they are already: a pack made again with no new training)."""
    tracked = [f for f in removed if _git(f.parent, "ls-files", "--error-unmatch", "--", f.name).returncode == 0]
    for f in removed:
        f.unlink(missing_ok=True)
    paths = [str(Path(p).resolve()) for p in [*paths, *tracked]]
    if not paths:
        return None
    folder = Path(paths[0]).parent
    if (done := _git(folder, "add", "-A", "--", *paths)).returncode:
        return f"git add failed: {(done.stderr or done.stdout).strip()}"
    if _git(folder, "diff", "--cached", "--quiet", "--", *paths).returncode == 0:
        return None  # nothing changed
    if (done := _git(folder, "commit", "-q", "-m", message, "--", *paths)).returncode:
        return f"git commit failed: {(done.stderr or done.stdout).strip()}"
    return None


def land_problems(spec: dict, pending: Path) -> tuple[list[Path], list[str]]:
    """The run files of every point of a sweep grid in ``pending/<chapter>/``, and why they may not land yet: a
    point without its file; a file of another chapter or profile, made from a ``-dirty`` commit or from one that is
    not in the history of the repository holding ``pending``, missing a figure, or silent on the pretrained start
    its settings name; files trained under different settings or pretrained starts (a profile changed between
    sittings)."""
    chapter, files, problems, kinds = spec["chapter"], [], [], {}
    for rid, _ in sweep_points(spec):
        file = pending / chapter / f"{rid}.json"
        if not file.exists():
            problems.append(f"{rid}: no run file in {file.parent} yet")
            continue
        run = json.loads(file.read_text())
        commit = str(run.get("commit", "unknown"))
        if (run.get("chapter"), run.get("profile")) != (chapter, spec["profile"]):
            problems.append(f"{rid}: a run of {run.get('chapter')}/{run.get('profile')}, not {chapter}/{spec['profile']}")
        if commit.endswith("-dirty") or not re.fullmatch(r"[0-9a-f]{40}", commit):
            problems.append(f"{rid}: made from {commit!r}, not a clean commit: nobody can run it again")
        elif _git(file.parent, "merge-base", "--is-ancestor", commit, "HEAD").returncode:
            problems.append(f"{rid}: made from {commit[:12]}, which is not in this repository's history")
        problems += [f"{rid}: figure {f} is missing" for f in run.get("figures", []) if not (file.parent / f).exists()]
        if run.get("settings", {}).get("start") and not run.get("start_sha256"):
            problems.append(f"{rid}: the pretrained start it loaded is not recorded (start_sha256; each CPU family "
                            "builds other weights): nobody can tell which start to load to run it again")
        settings = trained(run.get("settings", {}))
        shared_start = None if _per_seed(settings.get("start")) else run.get("start_sha256")  # one start a seed:
        kinds.setdefault(json.dumps([settings, shared_start], sort_keys=True), []).append(rid)  # theirs differ
        files.append(file)
    if len(kinds) > 1:
        problems.append("the runs differ in their settings or pretrained start: "
                        + "; ".join(", ".join(rids) for rids in kinds.values()))
    return files, problems


def _per_seed(start: str | None) -> bool:
    """Whether the pretrained start ``start`` is made once per seed (:func:`dml_tutorial.pretrain.resolved`)."""
    from . import pretrain

    return bool(start) and bool(pretrain.STARTS.get(start, {}).get("per_seed"))


def land(files: list[Path], profile: str, into: Path) -> tuple[list[Path], list[Path]]:
    """Move a whole grid's run files (and their figures), as :func:`land_problems` found them without a problem,
    into ``into`` (``data/results/<chapter>``), where they replace every run file of the same profile (a profile's
    record is one grid), remove any pack left of their points (:mod:`dml_tutorial.carry`), and stage both folders'
    change in git; nothing is committed. Returns (the landed files, the replaced ones)."""
    into.mkdir(parents=True, exist_ok=True)
    replaced = [f for f in sorted(into.glob("*.json")) if json.loads(f.read_text()).get("profile") == profile]
    for old in replaced:
        old.unlink()
        shutil.rmtree(old.with_suffix(".figures"), ignore_errors=True)
    for file in files:
        for path in (file, file.with_suffix(".figures")):
            if path.exists():
                shutil.move(str(path), str(into / path.name))
        file.with_name(file.stem + carry.SUFFIX).unlink(missing_ok=True)  # a leftover pack: its point is done
    for folder in {file.parent for file in files} | {into}:
        done = _git(folder, "add", "-A", "--", ".")
        if done.returncode:
            raise OSError(f"git add failed in {folder}: {(done.stderr or done.stdout).strip()}")
    return [into / f.name for f in files], replaced


def _land(args, parser) -> int:
    try:
        spec = load_grid(args.grid)
    except (ValueError, OSError) as err:
        parser.error(str(err))
    if why := check_committable(args.pending, "land"):
        parser.error(why)
    files, problems = land_problems(spec, args.pending)
    if problems:
        print(f"error: {args.grid} cannot land yet ({len(files)} of {len(sweep_points(spec))} points have a run "
              "file); nothing was moved:\n  " + "\n  ".join(problems), file=sys.stderr)
        return 1
    into = args.results / spec["chapter"]
    old = [f for f in sorted(into.glob("*.json")) if json.loads(f.read_text()).get("profile") == spec["profile"]]
    if old and not (args.why or "").strip():
        parser.error(f"the grid replaces {len(old)} run files of {spec['chapter']}/{spec['profile']}: say why with "
                     "--why (the registry page lists every replaced run with its reason)")
    if old:
        from . import registry

        registry.retire({"kind": "runs", "chapter": spec["chapter"], "profile": spec["profile"],
                         "runs": [[f.stem, json.loads(f.read_text()).get("commit", "unknown")] for f in old],
                         "date": datetime.date.today().isoformat(), "why": args.why.strip()},
                        path=args.results.parent / registry.RETIRED.name)  # data/retired.jsonl
    landed, replaced = land(files, spec["profile"], into)
    if old:
        _git(args.results.parent, "add", "--", registry.RETIRED.name)
    print(f"{spec['chapter']}: {len(landed)} run files moved into {landed[0].parent}, replacing "
          f"{len(replaced)} of profile {spec['profile']} ({', '.join(f.stem for f in replaced) or 'none'}); staged, "
          "not committed. Next: `dml-tutorial report`, the chapter run again (`dml-tutorial run "
          f"{spec['chapter']}`), then one commit", flush=True)
    return 0


def point_data_root(chapter: str, params: dict, data_root: Path | None = None) -> Path:
    """The data root a sweep point's run reads: ``data_root`` where given, else its ``DATA_ROOT`` parameter, else
    ``data/`` in the folder its kernel runs in (the notebooks folder's parent: :func:`_execute`)."""
    if data_root is not None:
        return Path(data_root)
    return Path(params["DATA_ROOT"]) if params.get("DATA_ROOT") else chapters()[chapter].parent.parent / "data"


def point_start(chapter: str, params: dict, data_root: Path | None = None) -> tuple[Path, Path] | None:
    """The pretrained start a sweep point's run fine-tunes (its settings' ``start``, that seed's build of a start
    made once per seed), as its weights and record under its data root (:func:`point_data_root`), where they are
    there; else ``None``."""
    from . import pretrain, profiles

    data_root = point_data_root(chapter, params, data_root)
    try:
        name = profiles.settings(chapter, params.get("PROFILE", "auto"), params.get("SETTINGS") or {}).start
        paths = pretrain.start_paths(pretrain.resolved(name, params.get("SEED"))[0], data_root) if name else ()
    except ValueError:  # no profiles (the loss zoo), or a per-seed start and no SEED
        return None
    return paths if paths and all(p.exists() for p in paths) else None


def pack_points(chapter: str, points: list, output: Path, results: Path, commit: bool = False,
                data_root: Path | None = None) -> int:
    """``sweep --pack``: each point without a run file whose cache holds finished trainings packed beside the run
    files with the pretrained start they began from (:func:`point_start`; :func:`dml_tutorial.carry.pack`,
    replacing its older pack), a done point's leftover pack removed; with ``commit``, those files committed and
    nothing else. Safe while the sweep runs: a pack holds finished results only. Returns the exit status."""
    written, removed = [], []
    for rid, params in points:
        file = carry.pack_path(results, chapter, rid)
        if (results / chapter / f"{rid}.json").exists():
            removed += [file] if file.exists() else []
            continue
        if carry.finished(point_runs(output, chapter, rid)):
            start = point_start(chapter, params, data_root)
            n, left = carry.pack(point_runs(output, chapter, rid), file, start)
            print(f"{rid}: {n} training{'s' * (n != 1)}" + (f" and the start {start[0].stem}" if start else "")
                  + f" packed into {file} ({file.stat().st_size / 1e6:.2f} MB)"
                  + (f"; {left} left out, cheaper to train again than to keep" if left else ""), flush=True)
            written.append(file)
    print(f"{chapter}: {len(written)} point{'s' * (len(written) != 1)} packed"
          + (f", {len(removed)} pack{'s' * (len(removed) != 1)} of done points removed" if removed else ""),
          flush=True)
    if not commit:
        for file in removed:
            file.unlink()
        return 0
    message = f"Sweep points packed: {', '.join(f'{chapter}/{f.name[:-len(carry.SUFFIX)]}' for f in written)}"
    if why := commit_paths(written, message if written else f"{chapter}: done points' packs removed", removed):
        print(f"error: the packs were written but not committed: {why}", file=sys.stderr)
        return 1
    return 0


def unpack_points(chapter: str, todo: list, output: Path, results: Path, data_root: Path | None = None) -> int:
    """Each pending point's pack, where there is one, unpacked into the point's cache and its start under its data
    root (:func:`point_data_root`; what they lack: :func:`dml_tutorial.carry.unpack`), before the sweep runs it: a
    sweep resumed on another machine loads the trainings an earlier machine finished. Returns how many trainings
    it added."""
    added = 0
    for rid, params in todo:
        if (file := carry.pack_path(results, chapter, rid)).exists():
            n = carry.unpack(file, point_runs(output, chapter, rid), point_data_root(chapter, params, data_root))
            print(f"{rid}: {n} training{'s' * (n != 1)} unpacked from {file}", flush=True)
            added += n
    return added


def dry_run(spec: dict, output: Path, threads: int | None = None) -> int:
    """``sweep --dry-run``: the grid's first point with the sweep file's ``dry_run`` parameters (tiny SETTINGS:
    every cell of the chapter's path on this profile, in minutes), run as a sweep runs it into
    ``<output>/<chapter>/dry-run/`` with its run file there, never into the results, on ``threads`` (the share of
    the cores ``--jobs`` gives each point, in its SETTINGS; ``None``: the profile's); says how long it took and how
    many tables it recorded. Returns the run's exit status."""
    if not spec["dry_run"]:
        print("error: the sweep file gives no dry_run parameters (e.g. dry_run: {SETTINGS: {epochs: 1}})",
              file=sys.stderr)
        return 2
    chapter, (rid, params) = spec["chapter"], sweep_points(spec)[0]
    folder = output / chapter / "dry-run"
    result = folder / f"{rid}.json"
    result.unlink(missing_ok=True)
    print(f"{chapter}: a dry run of {rid} with {spec['dry_run']}", flush=True)
    began = time.perf_counter()
    argv = _run_argv(chapter, folder, result, _on_threads({**params, **spec["dry_run"]}, threads))
    if code := subprocess.run(argv, check=False).returncode:
        print(f"error: the dry run failed (exit {code}): the sweep would fail the same way", file=sys.stderr)
        return code
    tables = len(json.loads(result.read_text())["tables"])
    print(f"{chapter}: the dry run passed in {time.perf_counter() - began:.0f} s, {tables} tables recorded "
          f"({result})", flush=True)
    return 0


def _sweep(args, parser) -> int:
    try:
        spec = load_grid(args.grid)
    except (ValueError, OSError) as err:
        parser.error(str(err))
    if args.dry_run:
        try:
            return dry_run(spec, args.output, _threads_per_point(spec["chapter"], args.jobs))
        except ValueError as err:
            parser.error(str(err))
    if args.commit and args.executor == "slurm":
        parser.error("--commit works with the local executor (a SLURM job's run file is committed by hand)")
    if (args.pack or args.unpack) and (args.executor == "slurm" or args.status):
        parser.error("--pack and --unpack work with the local executor, without --status")
    if args.commit and not args.status and (why := check_committable(args.results)):
        parser.error(why)
    chapter = spec["chapter"]
    points = sweep_points(spec)
    if args.executor == "slurm":
        return _sweep_slurm(args, parser, chapter, points)
    todo = [(rid, p) for rid, p in points if not (args.results / chapter / f"{rid}.json").exists()]
    if args.status:
        pending, begun = {rid for rid, _ in todo}, []
        for rid, _ in points:
            if rid in pending:
                line, seconds = local_state(args.output, chapter, rid, carry.pack_path(args.results, chapter, rid))
                begun.append(seconds)
            print(f"{rid}: " + (line if rid in pending else done_state(args.results / chapter / f"{rid}.json")))
        done = [args.results / chapter / f"{rid}.json" for rid, _ in points if rid not in pending]
        if line := outlook(done, len(todo), begun):
            print(line)
        return 0
    if args.pack:
        return pack_points(chapter, points, args.output, args.results, args.commit, args.data_root)
    try:
        unpack_points(chapter, todo, args.output, args.results, args.data_root)
    except ValueError as err:
        print(f"error: {err}", file=sys.stderr)
        return 1
    if args.unpack:
        return 0
    devices = _devices(args.devices, spec)
    if args.jobs > 1 and devices != [None]:
        parser.error("--jobs runs several points at once on a CPU; on GPUs each point takes one (--devices)")
    try:
        threads = _threads_per_point(chapter, args.jobs)
    except ValueError as err:
        parser.error(str(err))
    if todo and devices == [None] and (warning := busy_cores_warning(threads or run_threads(chapter, todo[0][1]),
                                                                     args.jobs)):
        print(warning, file=sys.stderr, flush=True)
    slots = devices * args.jobs
    where = ", ".join(f"GPU {d}" if d else "the default device" for d in devices)
    print(f"{chapter}: {len(points)} runs in the grid, {len(points) - len(todo)} already have results, "
          f"{len(todo)} to run on {where}" + (f", {args.jobs} at once on {threads} thread{'s' * (threads > 1)} each"
                                               if threads else ""),
          flush=True)
    free = queue.Queue()
    for d in slots:
        free.put(d)
    running, stopping = set(), threading.Event()  # the runs in progress; set once the sweep is told to stop

    def one(rid, params):
        device = free.get()
        try:
            cmd, log = _command(chapter, rid, _on_threads(params, threads), args)
            env = {**os.environ, **({"CUDA_VISIBLE_DEVICES": device} if device is not None else {})}
            with open(log, "w") as f:
                if stopping.is_set():
                    return None, log  # told to stop before this point started: it stays pending
                # its own process group, so that a stop reaches the run (whose kernel follows its parent)
                child = subprocess.Popen(cmd, stdout=f, stderr=subprocess.STDOUT, env=env, start_new_session=True)
                running.add(child)
                marker = point_marker(args.output, chapter, rid)
                if stopping.is_set():  # the stop came between the start and the line above
                    os.killpg(child.pid, signal.SIGTERM)
                try:
                    _mark(marker, child.pid)
                    return child.wait(), log
                finally:
                    running.discard(child)
                    marker.unlink(missing_ok=True)
        finally:
            free.put(device)

    from tqdm import tqdm

    failed, done = [], 0
    try:
        with _stopped_by_signals(running, stopping), ThreadPoolExecutor(len(slots)) as pool:
            futures = {pool.submit(one, rid, p): rid for rid, p in todo}
            for future in tqdm(as_completed(futures), total=len(futures), desc=f"sweep {chapter}", file=sys.stderr):
                code, log = future.result()
                done += code == 0
                if code:
                    failed.append(f"{futures[future]} (exit {code}, log: {log})")
                    continue
                if args.commit and (why := commit_run(args.results / chapter / f"{futures[future]}.json")):
                    print(f"warning: {futures[future]} finished but was not committed: {why}", file=sys.stderr)
                shutil.rmtree(point_runs(args.output, chapter, futures[future]), ignore_errors=True)
    except _Stop as stop:
        print(f"{chapter}: stopped by {stop.name}; {done} of {len(todo)} runs finished, the runs in progress were "
              "stopped (their logs kept); the same command resumes", file=sys.stderr)
        return 128 + stop.signum
    if failed:
        print(f"error: {len(failed)} of {len(todo)} runs failed:\n  " + "\n  ".join(failed), file=sys.stderr)
        return 1
    print(f"{chapter}: all {len(points)} runs have results in {args.results / chapter}; "
          "`dml-tutorial report` updates the book's pages", flush=True)
    return 0


def _print_states(chapter: str, now: dict) -> None:
    from collections import Counter

    counts = Counter(state for state, _ in now.values())
    print(f"{chapter}: " + ", ".join(f"{counts[s]} {s}" for s in slurm.STATES if counts[s]), flush=True)
    for rid, (state, detail) in now.items():
        print(f"  {rid}: {state}" + (f" ({detail})" if detail else ""), flush=True)


def _sweep_slurm(args, parser, chapter: str, points: list) -> int:
    """SLURM: report every point's state, submit those with no results and no live job, and return (or wait)."""
    try:
        extra = dict(item.split("=", 1) for item in args.slurm_param)
    except ValueError:
        parser.error(f"--slurm-param takes KEY=VALUE, got {args.slurm_param}")
    run_ids = [rid for rid, _ in points]
    now = slurm.states(chapter, run_ids, args.results, args.output)
    for rid, (state, detail) in now.items():
        if state in ("failed", "cancelled"):
            print(f"{rid}: {state}: {detail}; submitting it again", file=sys.stderr, flush=True)
    if not args.status:
        todo = {}
        for rid, params in points:
            if now[rid][0] in ("not submitted", "failed", "cancelled"):
                cmd, log = _command(chapter, rid, params, args)
                todo[rid] = (cmd, {}, log)
        options = slurm.Options(partition=args.partition, gpus_per_run=args.gpus_per_run, time=args.time,
                                cpus_per_run=args.cpus_per_run, extra=extra)
        submitted = slurm.submit(chapter, todo, options, args.output)
        print(f"{chapter}: submitted {len(submitted)} job(s): "
              + ", ".join(f"{rid} -> {job}" for rid, job in submitted.items()), flush=True)
        now = slurm.states(chapter, run_ids, args.results, args.output)
    if args.wait:
        now = slurm.wait(chapter, run_ids, args.results, args.output, poll=args.poll)
    for rid, (state, _) in now.items():
        if state == "done":  # its run file is written: its trainings are not needed again
            shutil.rmtree(point_runs(args.output, chapter, rid), ignore_errors=True)
    _print_states(chapter, now)
    return 1 if any(state in ("failed", "cancelled") for state, _ in now.values()) else 0


def _report(args, parser) -> int:
    """The registry and what git says of each run first (a checkout only), then the pages that read them."""
    from . import protocol, registry, report

    if in_checkout():
        if Path(args.results).resolve() == report.RESULTS.resolve():  # the course's own runs: its registry too
            print(f"wrote {registry.write()}")
            print(f"wrote {protocol.write()}")
        for path in (registry.REGISTRY, protocol.PROTOCOLS):
            if registry._git(registry.REPOSITORY, "status", "--porcelain", "--", str(path)).stdout.strip():
                print(f"note: {path} has changes that are not committed: every claim they touch is post hoc for "
                      "every run that records them; commit it, then run `dml-tutorial report` again")
        path = registry.write_status(report.load_runs(args.results), path=args.results / registry.STATUS.name)
        print(f"wrote {path}")
        late = [key for key, e in registry.stored(path)["runs"].items() if e["post hoc"]]
        if late:
            print(f"post hoc: {len(late)} claim x profile cells were decided by runs made before their definition "
                  f"was committed (listed in {report.PAGES / 'registry.md'})")
    else:
        print("not a clone of the repository: the claims' registration is read as stored, not checked with git")
    for page in report.write_report(args.results, args.pages):
        print(f"wrote {page}")
    return 0


def _pretrain(args, parser) -> int:
    """``dml-tutorial pretrain NAME``: build a test bed's pretrained start (:func:`dml_tutorial.pretrain.build_start`)
    under ``--root``, and print its record."""
    from . import pretrain

    if args.name not in pretrain.STARTS:
        parser.error(f"unknown start {args.name!r}; known: {', '.join(pretrain.STARTS)}")
    try:
        file, changes = pretrain.resolved(args.name, args.seed)
    except ValueError as e:
        parser.error(f"{e} (--seed)")
    record = pretrain.build_start(args.name, root=args.root, progress=True, save_as=file, **changes)
    weights, record_path = pretrain.start_paths(file, args.root)
    print(f"wrote {weights} (SHA-256 {record['sha256'][:12]}...) and {record_path}: {record['images']:,} images "
          f"of {record['classes']:,} characters, {record['seconds']:.0f} s")
    return 0


def _compare(args, parser) -> int:
    """``dml-tutorial compare``: a re-run seed against the committed runs of its chapter and profile."""
    from .reference import ResultsDrifted, compare_seed

    try:
        fresh = json.loads(args.run.read_text())
    except (OSError, ValueError) as e:
        parser.error(f"cannot read the run file {args.run}: {e}")
    if len(fresh.get("seeds", [])) != 1 or "chapter" not in fresh:
        parser.error(f"{args.run} is not the run file of one seed (seeds: {fresh.get('seeds')})")
    folder = args.results / fresh["chapter"]
    committed = [json.loads(f.read_text()) for f in sorted(folder.glob(f"{fresh['profile']}_*.json"))]
    committed = [r for r in committed if r.get("profile") == fresh["profile"] and len(r.get("seeds", [])) == 1]
    try:
        problems = compare_seed(fresh, committed)
    except ResultsDrifted as e:
        parser.error(f"{e} in {folder}")
    (seed,) = fresh["seeds"]
    what = f"seed {seed} of {fresh['chapter']} ({fresh['profile']}) against its committed run"
    if problems:
        print(f"{len(problems)} number(s) of {what} left their tolerance:\n  " + "\n  ".join(problems))
        return 1
    print(f"every number of {what} is within its tolerance ({len(committed) - 1} other seeds give the spread)")
    return 0


def _grid(args, parser) -> int:
    """``dml-tutorial grid``: print a chapter's declared grid (:func:`dml_tutorial.plan.describe_grid`)."""
    from . import plan, profiles

    try:
        print(plan.describe_grid(args.chapter, profiles.settings(args.chapter, args.profile)))
    except ValueError as e:
        parser.error(str(e))
    return 0


def _parser() -> argparse.ArgumentParser:
    from .report import PAGES, RESULTS

    written = RESULTS if in_checkout() else Path("data") / "results"  # never into an installed package

    parser = argparse.ArgumentParser(prog="dml-tutorial", description=__doc__.split("\n\n")[0].replace("``", ""))
    parser.add_argument("--version", action="version", version=f"dml-tutorial {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)
    run = sub.add_parser("run", help="execute chapter notebooks with papermill")
    run.add_argument("chapter", help=f"a chapter name or 'all' (known: {', '.join(chapters()) or 'none'})")
    run.add_argument("--profile", choices=("auto",) + PROFILE_NAMES, default=None,
                     help="overrides the notebook's PROFILE parameter (default: keep the notebook's 'auto')")
    run.add_argument("-p", "--parameter", nargs=2, action="append", default=[], metavar=("NAME", "VALUE"),
                     help="set a notebook parameter (VALUE is read as a Python literal when it is one)")
    run.add_argument("--output", type=Path, default=None, help="folder for executed copies (default: in place)")
    run.add_argument("--results", type=Path, default=None,
                     help="results file (default: <notebook>.results.json next to the executed notebook)")
    run.add_argument("--figures", action="store_true",
                     help="keep the figures the notebook records as PNG files beside the results file (sweeps do)")
    sweep = sub.add_parser("sweep", help="run a chapter over a parameter grid, resumably")
    sweep.add_argument("grid", type=Path, help="a YAML sweep file, e.g. data/sweeps/dcdl.yaml")
    sweep.add_argument("--devices", default=None, help="GPU ids to run on in parallel, e.g. 0,1 (default: all)")
    sweep.add_argument("--jobs", type=int, default=1,
                       help="points to run at once on a CPU, each on its share of the cores (its SETTINGS' threads; "
                            "default 1: one point at a time on the profile's threads)")
    sweep.add_argument("--results", type=Path, default=written, help="results folder (default: data/results)")
    sweep.add_argument("--output", type=Path, default=Path("runs/sweeps"), help="executed notebooks and logs")
    sweep.add_argument("--dry-run", action="store_true",
                       help="run the grid's first point with the sweep file's dry_run parameters (tiny SETTINGS) "
                            "into --output, not --results: every cell of the path, in minutes, before the sweep "
                            "(with --jobs N, on the share of the cores each of N points gets: beside a sweep)")
    sweep.add_argument("--status", action="store_true", help="show each point's state (done, running, begun, "
                       "pending; SLURM's: failed, cancelled, not submitted) and run nothing; a point that runs or "
                       "has begun, with how many trainings it has cached and when it last wrote to its cache")
    sweep.add_argument("--pack", action="store_true",
                       help="pack each begun point's finished trainings beside its run file in --results "
                            "(<point>.runs.tar.gz; with --commit, committed) and run nothing: a sweep resumed on "
                            "another machine unpacks them (safe while the sweep runs)")
    sweep.add_argument("--unpack", action="store_true",
                       help="unpack each pending point's pack into its cache under --output and run nothing (the "
                            "sweep itself does this first; for a sweep run by an older checkout)")
    sweep.add_argument("--data-root", type=Path, default=None,
                       help="with --pack and --unpack: the data root of the sweep's runs, where a point's "
                            "pretrained start is (default: the grid's DATA_ROOT, else data/ beside the notebooks "
                            "folder, as a run's kernel sees it; give the sweep's own where it runs another checkout)")
    sweep.add_argument("--commit", action="store_true",
                       help="commit each run file (and its figures) to the git repository holding --results as "
                            "soon as it finishes, removing its point's pack, and nothing else (e.g. --results "
                            "data/pending); with --pack, commit the packs")
    sweep.add_argument("--executor", choices=("local", "slurm"), default="local",
                       help="local: run here, one point per device at a time (default); slurm: one job per point "
                            "through submitit, and return (see --wait)")
    cluster = sweep.add_argument_group("SLURM (with --executor slurm)")
    cluster.add_argument("--partition", default=None, help="the partition to submit to (default: the cluster's)")
    cluster.add_argument("--gpus-per-run", type=int, default=1, help="GPUs per job (0: none requested; default 1)")
    cluster.add_argument("--cpus-per-run", type=int, default=4, help="CPU cores per job (default 4)")
    cluster.add_argument("--time", type=int, default=240, help="time limit per job in minutes (default 240)")
    cluster.add_argument("--slurm-param", action="append", default=[], metavar="KEY=VALUE",
                         help="any other sbatch option, e.g. --slurm-param account=abc --slurm-param qos=high")
    cluster.add_argument("--wait", action="store_true", help="wait until no job is queued or running")
    cluster.add_argument("--poll", type=float, default=30.0, help="seconds between squeue calls with --wait")
    report = sub.add_parser("report", help="write the 'At paper scale' page, the verdicts and the registry from the run files")
    report.add_argument("--results", type=Path, default=RESULTS, help="results folder (default: data/results)")
    report.add_argument("--pages", type=Path, default=PAGES, help="pages folder (default: book/results)")
    landing = sub.add_parser("land", help="move a finished sweep's run files from data/pending into data/results")
    landing.add_argument("grid", type=Path, help="the sweep file the runs were made from")
    landing.add_argument("--pending", type=Path, default=written.parent / "pending",
                         help="where the sweep committed its run files (default: data/pending)")
    landing.add_argument("--results", type=Path, default=written, help="results folder (default: data/results)")
    landing.add_argument("--why", default=None, help="why the grid replaces the profile's runs (recorded in "
                         "data/retired.jsonl, shown on the registry page); needed where it replaces any")
    listing = sub.add_parser("grid", help="list a chapter's declared runs under a profile (nothing is trained)")
    listing.add_argument("chapter", help="a chapter with a declared grid: dcdl, cbswr, eps, ecaml, "
                                          "noise_guarantees or bench")
    listing.add_argument("--profile", choices=PROFILE_NAMES, default="smoke", help="the profile (default: smoke)")
    pretrain = sub.add_parser("pretrain", help="build a test bed's pretrained start (its ImageNet), once")
    pretrain.add_argument("name", help="the start, e.g. glyphs2 (dml_tutorial.pretrain.STARTS)")
    pretrain.add_argument("--root", type=Path, default=Path("data"), help="the data folder (default: data)")
    pretrain.add_argument("--seed", type=int, default=None, help="the seed of a start made once per seed")
    compare = sub.add_parser("compare", help="check a re-run seed of a test bed against its committed run")
    compare.add_argument("run", type=Path, help="the run file of the re-run seed (dml-tutorial run --results)")
    compare.add_argument("--results", type=Path, default=RESULTS, help="the committed runs (default: data/results)")
    for command, handler in ((run, _run), (sweep, _sweep), (landing, _land), (report, _report),
                             (listing, _grid), (pretrain, _pretrain), (compare, _compare)):
        command.set_defaults(handler=handler, command_parser=command)  # errors print the command's own usage
    return parser


def main(argv=None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    return args.handler(args, args.command_parser)
