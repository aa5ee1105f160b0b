"""The command line on a tiny chapter folder: run (results file, failing cell, bad input), sweep (resumes, reports
failures), report, and the installed ``dml-tutorial`` script."""

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import nbformat
import pytest

from dml_tutorial import carry, chapters, cli, pretrain
from dml_tutorial.profiles import PROFILE_NAMES

PARAMETERS = 'PROFILE = "auto"\nSEED = 0\nFAIL = False\nHOLD = ""\nRUNS = None\nSETTINGS = {}'
BODY = """import os
import time

from dml_tutorial import report
from dml_tutorial.settings import Settings
if HOLD:  # a long training: say who runs it (the kernel and its parent, the run), then wait
    open(HOLD, "w").write(f"{os.getpid()} {os.getppid()}")
    time.sleep(300)
cfg = Settings(chapter="toy", profile="smoke" if PROFILE == "auto" else PROFILE, dataset="toy", model="none",
               epochs=1)
report.record("Toy table", {"row": {"R@1": [0.5 + SEED / 10]}}, {"row": {"R@1": 42.0}}, cfg=cfg, seeds=[SEED],
              device="cpu")
report.record(f"GPUs visible: {os.environ.get('CUDA_VISIBLE_DEVICES')}", {"run": {"n": [1]}}, cfg=cfg, seeds=[SEED],
              device="cpu")
if RUNS:  # the run cache: the first training is kept there (it took 2.5 s), and loaded when the point runs again
    import pathlib
    import torch
    kept = pathlib.Path(RUNS) / f"first-training-seed{SEED}.pt"
    loaded = kept.exists()
    kept.parent.mkdir(parents=True, exist_ok=True)
    if not loaded:
        torch.save({"metrics": {"seconds": 2.5}}, kept)
        (kept.parent / "not-a-result.pt").write_text("written by other code")
    report.record("Cache", {"first training": {"loaded": [float(loaded)]}}, cfg=cfg, seeds=[SEED], device="cpu")
if SETTINGS.get("threads"):  # a point run beside others (sweep --jobs): when it ran, and on how many threads
    import pathlib
    began = time.time()
    time.sleep(3)
    pathlib.Path(os.environ["TOY_JOBS"], f"seed-{SEED}").write_text(f"{SETTINGS['threads']} {began} {time.time()}")
if FAIL or os.environ.get("TOY_FAIL"):  # after two tables: a run that fails late has measured something; a message over lines, a call too
    raise RuntimeError(
        "asked to fail:\\nfirst try, got:\\n<no network>\\n"
    )
import matplotlib.pyplot as plt
report.record_figure(plt.subplots()[0], "toy figure")"""


@pytest.fixture
def folder(tmp_path, monkeypatch):
    """A repository-like folder with one chapter notebook, ``01_toy.ipynb``, made the CLI's notebook folder."""
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_markdown_cell("# A toy chapter"),
                nbformat.v4.new_code_cell(PARAMETERS, metadata={"tags": ["parameters"]}),
                nbformat.v4.new_code_cell(BODY)]
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    (tmp_path / "notebooks").mkdir()
    nbformat.write(nb, tmp_path / "notebooks" / "01_toy.ipynb")
    monkeypatch.setenv(chapters.FOLDER_ENV, str(tmp_path / "notebooks"))
    return tmp_path


def _fails(argv, capsys) -> str:
    with pytest.raises(SystemExit) as exit_info:
        cli.main(argv)
    assert exit_info.value.code == 2
    return capsys.readouterr().err


def test_unknown_chapter_and_parameter_are_one_clear_message(folder, capsys):
    err = _fails(["run", "nope"], capsys)
    assert "unknown chapter 'nope'; known chapters: toy" in err
    assert err.startswith("usage: dml-tutorial run")  # the command's usage, not the top-level one
    err = _fails(["run", "toy", "-p", "EPOCH", "3"], capsys)
    assert "01_toy.ipynb has no parameter 'EPOCH'; its parameters: PROFILE, SEED, FAIL" in err


def test_run_writes_the_executed_notebook_and_its_results(folder):
    out = folder / "out"
    assert cli.main(["run", "toy", "--profile", "smoke", "-p", "SEED", "1", "--output", str(out)]) == 0
    assert (out / "01_toy.ipynb").exists()
    run = json.loads((out / "01_toy.results.json").read_text())
    assert run["parameters"] == {"SEED": 1, "PROFILE": "smoke"} and run["seeds"] == [1]
    assert run["command"] == "dml-tutorial run toy -p SEED 1 --profile smoke"
    assert run["tables"][0]["measured"] == {"row": {"R@1": [0.6]}} and run["profile"] == "smoke"
    assert run["device"].startswith("cpu")
    assert "figures" not in run and not list(out.glob("*.figures"))  # kept only when asked for (sweeps ask)
    assert "trained_seconds" not in run  # no run cache of its own: its seconds are its compute


def test_a_run_file_records_what_ran_not_where_it_kept_its_runs_and_data(folder):
    out = folder / "out"
    argv = ["run", "toy", "-p", "SEED", "2", "-p", "RUNS", str(folder / "cache"), "--output", str(out)]
    assert cli.main(argv) == 0
    run = json.loads((out / "01_toy.results.json").read_text())
    assert run["parameters"] == {"SEED": 2} and run["command"] == "dml-tutorial run toy -p SEED 2"
    assert (folder / "cache" / "first-training-seed2.pt").exists()  # the notebook was given it all the same


def test_a_kernel_that_dies_as_it_starts_is_started_again(folder, monkeypatch, capsys):
    """Two kernels started at once (a sweep's --jobs points) can draw the same TCP port, and the second dies before
    its first reply ("Address already in use": once in `make test`): the run starts its kernel again, up to
    cli.KERNEL_STARTS times; any other failure, or a kernel that keeps dying, fails the run as before."""
    import papermill

    real, calls = papermill.execute_notebook, []

    def dies(times, message=cli.KERNEL_DIED):
        def execute(*args, **kwargs):
            calls.append(1)
            if len(calls) <= times:
                raise RuntimeError(message)
            return real(*args, **kwargs)
        return execute

    monkeypatch.setattr(papermill, "execute_notebook", dies(1))
    assert cli.main(["run", "toy", "--output", str(folder / "out")]) == 0 and len(calls) == 2
    assert f"starting it again, 2 of {cli.KERNEL_STARTS}" in capsys.readouterr().err
    assert json.loads((folder / "out" / "01_toy.results.json").read_text())["tables"]  # the second start ran it
    calls.clear()
    monkeypatch.setattr(papermill, "execute_notebook", dies(cli.KERNEL_STARTS))
    assert cli.main(["run", "toy", "--output", str(folder / "out")]) == 1 and len(calls) == cli.KERNEL_STARTS
    assert cli.KERNEL_DIED in capsys.readouterr().err
    calls.clear()
    monkeypatch.setattr(papermill, "execute_notebook", dies(1, "Kernel didn't respond in 60 seconds"))
    assert cli.main(["run", "toy", "--output", str(folder / "out")]) == 1 and len(calls) == 1  # not started again


def test_a_run_records_the_commit_it_started_from_not_the_tree_it_left(folder, monkeypatch):
    """Executing chapters in place rewrites their outputs, so the tree is dirty by the time a record is written
    (and from the second chapter of ``run all`` on): the record names the tree the run started from."""
    from dml_tutorial import report

    trees = iter(["a" * 40, "b" * 40 + "-dirty"])  # before the run, then after it
    monkeypatch.setattr(report, "git_commit", lambda root=None: next(trees))
    assert cli.main(["run", "toy", "--profile", "smoke", "--output", str(folder / "out")]) == 0
    assert json.loads((folder / "out" / "01_toy.results.json").read_text())["commit"] == "a" * 40


def test_a_failing_cell_exits_non_zero_and_keeps_the_notebook(folder, capsys):
    out = folder / "out"
    assert cli.main(["run", "toy", "-p", "FAIL", "True", "--output", str(out)]) == 1
    err = capsys.readouterr().err
    assert "chapter 'toy' failed: RuntimeError: asked to fail: first try, got: <no network> (in cell In [" in err
    assert str(out / "01_toy.ipynb") in err
    kept = nbformat.read(out / "01_toy.ipynb", as_version=4)
    assert any(o.get("ename") == "RuntimeError" for c in kept.cells if c.cell_type == "code" for o in c.outputs)
    assert not (out / "01_toy.results.json").exists()  # no run file: the run did not finish
    tables = out / "01_toy.tables.jsonl"  # but what it measured before failing is kept (a 75-minute run was lost)
    assert str(tables) in err
    recorded = [json.loads(line) for line in tables.read_text().splitlines()]
    assert recorded[0]["table"] == "Toy table" and recorded[0]["measured"] == {"row": {"R@1": [0.5]}}
    assert cli.main(["run", "toy", "--output", str(out)]) == 0 and not tables.exists()  # a new run replaces it


def _grid(folder, text) -> Path:
    path = folder / "grid.yaml"
    path.write_text(text)
    return path


def test_sweep_runs_every_point_once_and_resumes(folder, capsys):
    grid = _grid(folder, "chapter: toy\nprofile: smoke\ngrid:\n  SEED: [0, 2]\n")
    results, output = folder / "results", folder / "runs"
    argv = ["sweep", str(grid), "--results", str(results), "--output", str(output)]
    assert cli.main(argv) == 0
    files = sorted((results / "toy").glob("*.json"))
    assert [f.name for f in files] == ["smoke_seed-0.json", "smoke_seed-2.json"]
    assert json.loads(files[1].read_text())["tables"][0]["measured"] == {"row": {"R@1": [0.7]}}
    assert json.loads(files[1].read_text())["figures"] == ["smoke_seed-2.figures/toy-figure.png"]
    assert (results / "toy" / "smoke_seed-2.figures" / "toy-figure.png").stat().st_size > 0
    stamps = {f: f.stat().st_mtime_ns for f in files}
    files[0].unlink()
    capsys.readouterr()
    assert cli.main(argv + ["--status"]) == 0  # runs nothing, says what is there
    made = json.loads(files[1].read_text())
    took = f"{made['trained_seconds']:.0f} s"  # the toy trains in under a minute
    assert capsys.readouterr().out.splitlines() == [  # a done point says which run file, from where and when
        "smoke_seed-0: pending",
        (f"smoke_seed-2: done ({files[1]}: made from {made['commit'][:12]} on {made['date'][:10]}; 1 training, "
         f"{took} of training)"),
        (f"1 of 2 points done, {took} of training a point (as 1 of their run files record it); the 1 left: about "
         f"{took} at that pace, one point at a time")]
    files[1].write_text("{")
    assert cli.main(argv + ["--status"]) == 0
    assert capsys.readouterr().out.splitlines()[1] == f"smoke_seed-2: done ({files[1]}: unreadable)"
    files[1].write_text(json.dumps(made))
    os.utime(files[1], ns=(stamps[files[1]], stamps[files[1]]))  # as the sweep left it
    assert not files[0].exists()
    assert cli.main(argv) == 0  # resumes: only the missing point runs again
    assert files[0].exists() and files[1].stat().st_mtime_ns == stamps[files[1]]


def test_sweep_jobs_runs_points_side_by_side_each_on_its_share_of_the_cores(folder, monkeypatch, capsys):
    """``--jobs 2`` on a CPU: two points at once (their runs overlap in time), each given its share of the cores
    as ``SETTINGS`` threads, which its run file records; refused beside GPUs, below 1, or for a chapter whose
    notebook takes no SETTINGS."""
    monkeypatch.setenv("TOY_JOBS", str(folder))
    grid = _grid(folder, "chapter: toy\nprofile: smoke\ngrid:\n  SEED: [0, 1]\n")
    results, output = folder / "results", folder / "runs"
    argv = ["sweep", str(grid), "--results", str(results), "--output", str(output), "--jobs", "2"]
    assert cli.main(argv) == 0
    share = max(1, (os.cpu_count() or 1) // 2)
    assert f"2 at once on {share} thread{'s' * (share > 1)} each" in capsys.readouterr().out
    (t0, a0, b0), (t1, a1, b1) = ([float(x) for x in (folder / f"seed-{s}").read_text().split()] for s in (0, 1))
    assert t0 == t1 == share and a0 < b1 and a1 < b0  # each began before the other ended
    run = json.loads((results / "toy" / "smoke_seed-1.json").read_text())
    assert run["parameters"]["SETTINGS"] == {"threads": share} and "SETTINGS" in run["command"]
    assert "--jobs must be at least 1" in _fails(argv[:-1] + ["0"], capsys)
    assert "on GPUs each point takes one" in _fails(argv + ["--devices", "0,1"], capsys)
    nb = nbformat.read(folder / "notebooks" / "01_toy.ipynb", as_version=4)
    nb.cells[1].source = PARAMETERS.replace("\nSETTINGS = {}", "")
    nbformat.write(nb, folder / "notebooks" / "01_toy.ipynb")
    assert "takes no SETTINGS" in _fails(argv, capsys)


def test_a_run_on_more_threads_than_the_cores_have_free_is_warned_about(monkeypatch):
    """torch's threads spin while they wait for each other, so a run of 2 threads beside busy cores takes several
    times as long as on 1 (benchmarks/bench_busy_cores.py): where the threads do not fit beside the other work, a
    warning says how busy the cores are and what to do; one thread, or threads that fit, are never warned about."""
    import psutil

    warn = cli.busy_cores_warning
    assert "keeps 2.0 of this machine's 2 cores busy" in warn(2, busy=2.0, cores=2)
    assert "DML_TUTORIAL_THREADS=1" in warn(2, busy=1.0, cores=2)  # 3 threads on 2 cores
    assert warn(2, busy=0.1, cores=2) is None  # idle cores: the run's 2 threads fit
    assert warn(None, busy=1.0, cores=2) is not None  # torch's own threads: one per core
    assert warn(2, runs=2, busy=0.5, cores=4) is not None and warn(2, runs=2, busy=0.0, cores=4) is None  # --jobs 2

    def measured(interval, percpu):  # the cores this process may use, each at the share given
        assert interval > 0 and percpu
        return [share] * (os.cpu_count() or 1)

    monkeypatch.setattr(psutil, "cpu_percent", measured)
    share = 100.0
    assert warn(1) is None  # one thread: never measured, never warned
    assert "busy" in warn(2)  # every core busy
    share = 0.0
    assert warn(None) is None  # idle: torch's own threads, one per core, fit


def test_a_runs_threads_come_from_the_environment_its_settings_or_its_profile(monkeypatch):
    """``run_threads`` reads what ``train.seed_everything`` will: DML_TUTORIAL_THREADS, else the SETTINGS' threads,
    else the profile's; ``None`` (torch's own) for a profile that leaves them to torch or a chapter without
    profiles."""
    from dml_tutorial import profiles

    monkeypatch.delenv("DML_TUTORIAL_THREADS", raising=False)
    assert cli.run_threads("dcdl", {"PROFILE": "glyphs2"}) == profiles.settings("dcdl", "glyphs2").threads
    assert cli.run_threads("dcdl", {"PROFILE": "glyphs2", "SETTINGS": {"threads": 1}}) == 1
    assert cli.run_threads("dcdl", {"PROFILE": "colab"}) is None and cli.run_threads("loss_zoo", {}) is None
    monkeypatch.setenv("DML_TUTORIAL_THREADS", "3")
    assert cli.run_threads("dcdl", {"PROFILE": "glyphs2", "SETTINGS": {"threads": 1}}) == 3


def test_run_warns_where_its_threads_do_not_fit_beside_busy_cores(folder, monkeypatch, capsys):
    import psutil

    monkeypatch.setenv("DML_TUTORIAL_THREADS", "2")
    monkeypatch.setattr(psutil, "cpu_percent", lambda interval, percpu: [100.0] * (os.cpu_count() or 1))
    assert cli.main(["run", "toy", "--profile", "smoke", "--output", str(folder / "out")]) == 0
    assert "warning: other work keeps" in capsys.readouterr().err  # and the run goes on


def test_a_point_stopped_part_way_resumes_from_its_finished_trainings_which_go_once_it_is_done(folder, monkeypatch):
    """Each point keeps its trainings in its own run cache (``RUNS``): a point that stopped after its first
    training (here a failure; a session's end in practice) loads it when the sweep runs it again; once its run
    file is written the cache is removed. A grid that sets RUNS itself keeps its folder."""
    grid = _grid(folder, "chapter: toy\nprofile: smoke\ngrid:\n  SEED: [3]\n")
    (folder / "elsewhere").mkdir()
    monkeypatch.chdir(folder / "elsewhere")  # a relative --output, while the kernel runs in the repository's root
    results, output = folder / "results", Path("runs")
    argv = ["sweep", str(grid), "--results", str(results), "--output", str(output)]
    cache = cli.point_runs(output, "toy", "smoke_seed-3").resolve()
    monkeypatch.setenv("TOY_FAIL", "1")  # the run stops after its first training
    assert cli.main(argv) == 1
    assert (cache / "first-training-seed3.pt").exists()  # what the stopped point finished is kept
    monkeypatch.delenv("TOY_FAIL")
    assert cli.main(argv) == 0
    run = json.loads((results / "toy" / "smoke_seed-3.json").read_text())
    assert run["tables"][2]["measured"] == {"first training": {"loaded": [1.0]}}  # loaded, not trained again
    assert "RUNS" not in run["parameters"] and "RUNS" not in run["command"]  # where, not what: another machine re-runs it
    assert (run["trainings"], run["trained_seconds"]) == (1, 2.5)  # the first sitting's training, counted in the last
    assert not cache.exists()  # the point is done: its trainings are not needed again
    own = folder / "drive"
    grid = _grid(folder, f"chapter: toy\nprofile: smoke\nparameters: {{RUNS: '{own}'}}\ngrid:\n  SEED: [4]\n")
    assert cli.main(["sweep", str(grid), *argv[2:]]) == 0
    assert (own / "first-training-seed4.pt").exists() and not cli.point_runs(output, "toy", "smoke_seed-4").exists()


def test_a_point_packed_on_one_machine_resumes_on_another_from_its_trainings_and_its_pack_goes(folder, monkeypatch,
                                                                                               capsys):
    """A machine that does not outlive the sitting (a session's, a cloud VM, Colab) takes the point cache with it:
    ``--pack --commit`` carries the finished trainings in the repository, the sweep on another machine (another,
    empty ``--output``) unpacks and loads them, and the point's run file's commit removes the pack."""
    repo = _repo(folder, monkeypatch)
    grid = _grid(folder, "chapter: toy\nprofile: smoke\ngrid:\n  SEED: [3, 4]\n")
    pending = repo / "pending"
    first = ["sweep", str(grid), "--results", str(pending), "--output", str(repo / "ignored" / "a")]
    monkeypatch.setenv("TOY_FAIL", "1")  # each point stops after its first training
    assert cli.main([*first, "--commit"]) == 1
    capsys.readouterr()
    assert cli.main([*first, "--pack", "--commit"]) == 0
    assert "smoke_seed-3: 2 trainings packed into" in capsys.readouterr().out  # with the file other code wrote
    pack = pending / "toy" / "smoke_seed-3.runs.tar.gz"
    assert _git_lines(repo, "log", "-1", "--format=%s") == ["Sweep points packed: toy/smoke_seed-3, toy/smoke_seed-4"]
    assert sorted(_git_lines(repo, "show", "--name-only", "--format=", "HEAD")) == [
        "pending/toy/smoke_seed-3.runs.tar.gz", "pending/toy/smoke_seed-4.runs.tar.gz"]
    head = _git_lines(repo, "rev-parse", "HEAD")
    assert cli.main([*first, "--pack", "--commit"]) == 0  # packed again, no new training: nothing to commit
    assert "error" not in capsys.readouterr().err and _git_lines(repo, "rev-parse", "HEAD") == head
    monkeypatch.delenv("TOY_FAIL")
    second = ["sweep", str(grid), "--results", str(pending), "--output", str(repo / "ignored" / "b")]
    assert cli.main([*second, "--status"]) == 0
    assert "smoke_seed-3: packed (2 trainings in" in capsys.readouterr().out
    assert cli.main([*second, "--commit"]) == 0
    assert "smoke_seed-3: 2 trainings unpacked from" in capsys.readouterr().out
    run = json.loads((pending / "toy" / "smoke_seed-3.json").read_text())
    assert run["tables"][2]["measured"] == {"first training": {"loaded": [1.0]}}  # loaded, not trained again
    assert (run["trainings"], run["trained_seconds"]) == (1, 2.5)  # the first machine's training, counted
    assert not pack.exists() and not list(pending.glob("toy/*.tar.gz"))
    for seed in (3, 4):  # each pack removed by its own point's commit
        commit = _git_lines(repo, "log", "-1", "--format=%H", "--", f"pending/toy/smoke_seed-{seed}.json")[0]
        assert f"D\tpending/toy/smoke_seed-{seed}.runs.tar.gz" in _git_lines(repo, "show", "--name-status",
                                                                              "--format=", commit)
    assert _git_lines(repo, "ls-files", "pending/toy/*.tar.gz") == []
    assert _git_lines(repo, "status", "--short") == ["?? grid.yaml"]


def test_a_points_start_is_its_seeds_build_under_the_data_root_its_kernel_reads(tmp_path):
    """What ``--pack`` carries beside a point's trainings: the start they began from, where it is built."""
    params = {"PROFILE": "glyphs2", "SEED": 5}
    assert cli.point_data_root("eps", params) == chapters.chapters()["eps"].parent.parent / "data"
    assert cli.point_data_root("eps", {**params, "DATA_ROOT": "/elsewhere"}) == Path("/elsewhere")
    assert cli.point_data_root("eps", {**params, "DATA_ROOT": "/elsewhere"}, tmp_path) == tmp_path
    assert cli.point_start("eps", params, tmp_path) is None  # not built there
    weights, record = pretrain.start_paths("glyphs2-seeded-seed5", tmp_path)
    weights.parent.mkdir(parents=True)
    weights.write_bytes(b"weights")
    assert cli.point_start("eps", params, tmp_path) is None  # no record beside it: not a start
    record.write_text("{}")
    assert cli.point_start("eps", params, tmp_path) == (weights, record)
    assert cli.point_start("eps", {"PROFILE": "smoke", "SEED": 5}, tmp_path) is None  # the smoke profile has none
    assert cli.point_start("eps", {"PROFILE": "glyphs2"}, tmp_path) is None  # whose seed's: none to say


def test_pack_and_unpack_refuse_the_slurm_executor_and_unpack_runs_nothing(folder, monkeypatch, capsys):
    grid = _grid(folder, "chapter: toy\nprofile: smoke\ngrid:\n  SEED: [3]\n")
    argv = ["sweep", str(grid), "--results", str(folder / "results"), "--output", str(folder / "runs")]
    assert "--pack and --unpack work with the local executor" in _fails([*argv, "--pack", "--executor", "slurm"],
                                                                         capsys)
    assert cli.main([*argv, "--pack"]) == 0 and "toy: 0 points packed" in capsys.readouterr().out
    cache = cli.point_runs(folder / "elsewhere", "toy", "smoke_seed-3") / "toy-smoke-0123456789"
    cache.mkdir(parents=True)
    (cache / "a-seed3-0123456789.pt").write_bytes(b"a result")
    assert cli.main(["sweep", str(grid), "--results", str(folder / "results"), "--output", str(folder / "elsewhere"),
                     "--pack"]) == 0
    assert cli.main([*argv, "--unpack"]) == 0
    assert (cli.point_runs(folder / "runs", "toy", "smoke_seed-3") / "toy-smoke-0123456789" /
            "a-seed3-0123456789.pt").read_bytes() == b"a result"
    assert not (folder / "results" / "toy" / "smoke_seed-3.json").exists()  # --unpack ran nothing
    (folder / "results" / "toy" / "smoke_seed-3.json").write_text("{}")  # done since (by an older sweep)
    assert cli.main([*argv, "--pack"]) == 0 and "1 pack of done points removed" in capsys.readouterr().out
    assert not carry.pack_path(folder / "results", "toy", "smoke_seed-3").exists()


def test_a_dry_run_runs_the_first_point_with_the_files_own_parameters_and_records_no_result(folder, monkeypatch,
                                                                                          capsys):
    """``sweep --dry-run``: the rule "dry-run a profile with tiny SETTINGS before its sweep" as one command, the
    tiny parameters kept in the sweep file (``dry_run``) rather than in a comment; a failure says so, and a sweep
    file without them is refused. With ``--jobs``, it runs on a point's share of the cores, its tiny SETTINGS
    kept (beside a running sweep: a run of 2 threads beside busy cores crawls)."""
    results, output = folder / "results", folder / "runs"
    grid = _grid(folder, "chapter: toy\nprofile: smoke\ndry_run: {HOLD: ''}\ngrid:\n  SEED: [5, 6]\n")
    argv = ["sweep", str(grid), "--results", str(results), "--output", str(output), "--dry-run"]
    assert cli.main(argv) == 0
    run = json.loads((output / "toy" / "dry-run" / "smoke_seed-5.json").read_text())
    assert run["parameters"] == {"PROFILE": "smoke", "SEED": 5, "HOLD": ""} and len(run["tables"]) == 2
    assert "the dry run passed" in capsys.readouterr().out and not results.exists()  # nothing to land
    _grid(folder, "chapter: toy\nprofile: smoke\ndry_run: {FAIL: true}\ngrid:\n  SEED: [5]\n")
    assert cli.main(argv) == 1 and "the dry run failed (exit 1)" in capsys.readouterr().err
    _grid(folder, "chapter: toy\nprofile: smoke\ngrid:\n  SEED: [5]\n")
    assert cli.main(argv) == 2 and "gives no dry_run parameters" in capsys.readouterr().err
    _grid(folder, "chapter: toy\nprofile: smoke\ndry_run: {EPOCH: 1}\ngrid:\n  SEED: [5]\n")
    assert "01_toy.ipynb has no parameter 'EPOCH'" in _fails(argv, capsys)
    monkeypatch.setenv("TOY_JOBS", str(folder))
    _grid(folder, "chapter: toy\nprofile: smoke\ndry_run: {SETTINGS: {epochs: 1}}\ngrid:\n  SEED: [5]\n")
    assert cli.main(argv + ["--jobs", "2"]) == 0
    share = max(1, (os.cpu_count() or 1) // 2)
    run = json.loads((output / "toy" / "dry-run" / "smoke_seed-5.json").read_text())
    assert run["parameters"]["SETTINGS"] == {"epochs": 1, "threads": share}
    assert float((folder / "seed-5").read_text().split()[0]) == share  # what the notebook was given


def _repo(folder, monkeypatch) -> Path:
    """``folder`` made a git repository with one commit, whose .gitignore ignores ``ignored/``."""
    for key, value in {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t",
                       "GIT_COMMITTER_EMAIL": "t@t"}.items():
        monkeypatch.setenv(key, value)
    (folder / ".gitignore").write_text("ignored/\n")
    for argv in (["init", "-q"], ["add", "-A"], ["commit", "-q", "-m", "start"]):
        subprocess.run(["git", "-C", str(folder), *argv], check=True)
    return folder


def _git_lines(folder, *argv) -> list[str]:
    return subprocess.run(["git", "-C", str(folder), *argv], capture_output=True, text=True,
                          check=True).stdout.splitlines()


def test_sweep_commit_commits_each_run_file_and_nothing_else(folder, monkeypatch):
    """A sweep spanning several sittings (ten glyphs2 seeds: 5-10 hours) keeps every finished run in git."""
    repo = _repo(folder, monkeypatch)
    (repo / "staged.txt").write_text("work in progress\n")
    subprocess.run(["git", "-C", str(repo), "add", "staged.txt"], check=True)
    grid = _grid(folder, "chapter: toy\nprofile: smoke\ngrid:\n  SEED: [0, 1]\n")
    assert cli.main(["sweep", str(grid), "--results", str(repo / "pending"), "--output", str(repo / "ignored"),
                     "--commit"]) == 0
    subjects = _git_lines(repo, "log", "--format=%s")
    assert len(subjects) == 3 and all(s.startswith("Sweep run toy/smoke_seed-") for s in subjects[:2])
    touched = sorted(_git_lines(repo, "diff", "--name-only", "HEAD~2", "HEAD"))
    assert touched == ["pending/toy/smoke_seed-0.figures/toy-figure.png", "pending/toy/smoke_seed-0.json",
                       "pending/toy/smoke_seed-1.figures/toy-figure.png", "pending/toy/smoke_seed-1.json"]
    assert _git_lines(repo, "diff", "--cached", "--name-only") == ["staged.txt"]  # still staged, not committed


def test_sweep_commit_refuses_an_ignored_results_folder_before_running(folder, monkeypatch, capsys):
    repo = _repo(folder, monkeypatch)
    grid = _grid(folder, "chapter: toy\nprofile: smoke\ngrid:\n  SEED: [0]\n")
    err = _fails(["sweep", str(grid), "--results", str(repo / "ignored"), "--commit"], capsys)
    assert "git ignores the run files in" in err
    assert not (repo / "ignored" / "toy").exists()  # nothing ran
    outside = folder.parent / "outside"
    assert "is not inside a git work tree" in _fails(["sweep", str(grid), "--results", str(outside), "--commit"],
                                                     capsys)


def _run_file(chapter_folder: Path, stem: str, commit: str, profile: str = "smoke", figure: bool = True,
              **settings) -> Path:
    """A run file as `dml-tutorial run --figures` writes it, with the fields landing reads, and its figure."""
    chapter_folder.mkdir(parents=True, exist_ok=True)
    path = chapter_folder / f"{stem}.json"
    run = {"chapter": "toy", "profile": profile, "commit": commit, "start_sha256": None,
           "settings": {"epochs": 1, "threads": 2, **settings}, "figures": [f"{stem}.figures/toy-figure.png"]}
    path.write_text(json.dumps(run))
    if figure:
        (chapter_folder / f"{stem}.figures").mkdir()
        (chapter_folder / f"{stem}.figures" / "toy-figure.png").write_bytes(stem.encode())
    return path


def _commit_all(repo: Path, message: str) -> str:
    for argv in (["add", "-A"], ["commit", "-q", "-m", message]):
        subprocess.run(["git", "-C", str(repo), *argv], check=True)
    return _git_lines(repo, "rev-parse", "HEAD")[0]


def test_land_accepts_one_start_a_seed_and_still_refuses_two_shared_ones(folder, monkeypatch):
    """Runs of a start made once per seed differ in their start's SHA-256 by design; runs of one shared start that
    differ in it were made on two machines' starts, and do not land together."""
    repo = _repo(folder, monkeypatch)
    head = _git_lines(repo, "rev-parse", "HEAD")[0]
    pending = repo / "pending" / "toy"
    spec = {"chapter": "toy", "profile": "smoke", "parameters": {}, "grid": {"SEED": [0, 1]}}
    for start in ("glyphs2-seeded", "glyphs2"):
        for seed in (0, 1):
            path = _run_file(pending, f"smoke_seed-{seed}", head, figure=False, start=start)
            path.write_text(json.dumps({**json.loads(path.read_text()), "figures": [], "start_sha256": f"{seed}" * 64}))
        _, problems = cli.land_problems(spec, repo / "pending")
        assert bool(problems) == (start == "glyphs2"), problems
        assert all("differ in their settings or pretrained start" in p for p in problems)


def test_land_moves_a_whole_grid_into_the_results_replacing_the_profiles_runs(folder, monkeypatch, capsys):
    """A sweep committed seed by seed into data/pending lands in one step, once every point has its file."""
    repo = _repo(folder, monkeypatch)
    head = _git_lines(repo, "rev-parse", "HEAD")[0]
    results, pending = repo / "results" / "toy", repo / "pending" / "toy"
    for stem, profile in (("smoke_seed-0", "smoke"), ("smoke_seed-7", "smoke"), ("fashion_seed-0", "fashion")):
        _run_file(results, stem, head, profile)  # the profile's old record, and another profile's
    for seed in (0, 1):
        _run_file(pending, f"smoke_seed-{seed}", head, threads=2 + seed)  # threads: how it ran, not what
    (pending / "smoke_seed-1.runs.tar.gz").write_bytes(b"a pack its point's commit did not remove (older code)")
    landed_commit = _commit_all(repo, "old runs and the pending sweep")
    grid = _grid(folder, "chapter: toy\nprofile: smoke\ngrid:\n  SEED: [0, 1, 2]\n")
    land = ["land", str(grid), "--pending", str(repo / "pending"), "--results", str(repo / "results")]
    assert cli.main(land) == 1
    assert "smoke_seed-2: no run file in" in capsys.readouterr().err
    assert sorted(p.name for p in pending.iterdir()) == ["smoke_seed-0.figures", "smoke_seed-0.json",
                                                         "smoke_seed-1.figures", "smoke_seed-1.json",
                                                         "smoke_seed-1.runs.tar.gz"]  # untouched
    grid.write_text("chapter: toy\nprofile: smoke\ngrid:\n  SEED: [0, 1]\n")
    with pytest.raises(SystemExit):  # it replaces runs: it must say why
        cli.main(land)
    assert "say why with --why" in capsys.readouterr().err and not (repo / "retired.jsonl").exists()
    assert cli.main([*land, "--why", "issue #86: the best-shot protocol"]) == 0
    assert "replacing 2 of profile smoke (smoke_seed-0, smoke_seed-7)" in capsys.readouterr().out
    retired = [json.loads(line) for line in (repo / "retired.jsonl").read_text().splitlines()]
    assert retired == [{"kind": "runs", "chapter": "toy", "profile": "smoke", "date": retired[0]["date"],
                        "runs": [["smoke_seed-0", head], ["smoke_seed-7", head]],
                        "why": "issue #86: the best-shot protocol"}]
    assert sorted(p.name for p in results.glob("*.json")) == ["fashion_seed-0.json", "smoke_seed-0.json",
                                                              "smoke_seed-1.json"]
    assert json.loads((results / "smoke_seed-1.json").read_text())["settings"]["threads"] == 3  # the pending one
    assert not (results / "smoke_seed-7.figures").exists() and not any(pending.iterdir())
    assert _git_lines(repo, "rev-parse", "HEAD")[0] == landed_commit  # staged, not committed
    moved = _git_lines(repo, "status", "--porcelain", "--", "results", "pending", "retired.jsonl")
    assert moved and all(line[0] not in " ?" and line[1] == " " for line in moved)  # every change staged
    staged = _git_lines(repo, "diff", "--cached", "--name-status", "-M")
    assert "D\tresults/toy/smoke_seed-7.json" in staged and any(
        line.startswith("R") and line.endswith("results/toy/smoke_seed-1.json") for line in staged)


def test_land_refuses_dirty_foreign_and_mixed_runs_and_says_why(folder, monkeypatch, capsys):
    repo = _repo(folder, monkeypatch)
    head = _git_lines(repo, "rev-parse", "HEAD")[0]
    pending = repo / "pending" / "toy"
    _run_file(pending, "smoke_seed-0", head + "-dirty")
    _run_file(pending, "smoke_seed-1", "0" * 40)  # a commit this repository never had
    _run_file(pending, "smoke_seed-2", head, epochs=2)  # the profile changed between sittings
    _run_file(pending, "smoke_seed-3", head, figure=False, threads=16)
    _run_file(pending, "smoke_seed-4", head, start="glyphs2")  # a start, and no record of which
    _commit_all(repo, "a pending sweep with problems")
    grid = _grid(folder, "chapter: toy\nprofile: smoke\ngrid:\n  SEED: [0, 1, 2, 3, 4]\n")
    assert cli.main(["land", str(grid), "--pending", str(repo / "pending"), "--results", str(repo / "results")]) == 1
    err = capsys.readouterr().err
    assert "smoke_seed-0: made from '" in err and "-dirty', not a clean commit" in err
    assert "smoke_seed-1: made from 000000000000, which is not in this repository's history" in err
    assert "smoke_seed-3: figure smoke_seed-3.figures/toy-figure.png is missing" in err
    assert "smoke_seed-4: the pretrained start it loaded is not recorded" in err
    assert "smoke_seed-0: the pretrained start" not in err  # no start in its settings: nothing to record
    assert err.rstrip().endswith("differ in their settings or pretrained start: smoke_seed-0, smoke_seed-1, "
                                 "smoke_seed-3; smoke_seed-2; smoke_seed-4")  # threads alone do not count
    assert not (repo / "results").exists() and len(list(pending.glob("*.json"))) == 5


def test_sweep_gives_each_parallel_run_one_gpu(folder):
    grid = _grid(folder, "chapter: toy\nprofile: smoke\ngrid:\n  SEED: [0, 1, 2, 3]\n")
    results = folder / "results"
    assert cli.main(["sweep", str(grid), "--devices", "5,7", "--results", str(results),
                     "--output", str(folder / "runs")]) == 0
    visible = [json.loads(f.read_text())["tables"][1]["table"] for f in sorted((results / "toy").glob("*.json"))]
    assert len(visible) == 4 and set(visible) == {"GPUs visible: 5", "GPUs visible: 7"}  # two at a time


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return Path(f"/proc/{pid}/stat").read_text().split(") ")[1][0] != "Z" if Path("/proc").exists() else True


def _kill(sweep, hold):
    """Kill what a sweep test started, wherever it stopped: the sweep and its run's process group (the run is the
    leader of a new session, and its kernel is in the group)."""
    if sweep.poll() is None:
        sweep.kill()
        sweep.communicate(timeout=30)
    pids = hold.read_text().split() if hold.exists() else []
    if len(pids) == 2:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(int(pids[1]), signal.SIGKILL)


def test_a_stopped_sweep_stops_its_run_and_kernel_and_resumes_later(folder):
    """Killing the sweep used to leave its run (and the run's kernel) training in the background. SIGINT (Ctrl-C)
    has the same handler as the SIGTERM sent here."""
    hold = folder / "hold"
    grid = _grid(folder, f"chapter: toy\nprofile: smoke\nparameters: {{HOLD: '{hold}'}}\ngrid:\n  SEED: [0, 1]\n")
    sweep = subprocess.Popen([sys.executable, "-m", "dml_tutorial", "sweep", str(grid), "--results",
                              str(folder / "results"), "--output", str(folder / "runs")],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 120
        while not (hold.exists() and hold.read_text()) and sweep.poll() is None and time.monotonic() < deadline:
            time.sleep(0.2)
        assert hold.exists(), sweep.communicate(timeout=30)
        kernel, run = map(int, hold.read_text().split())
        held = subprocess.run([sys.executable, "-m", "dml_tutorial", "sweep", str(grid), "--status", "--results",
                               str(folder / "results"), "--output", str(folder / "runs")],
                              capture_output=True, text=True, check=True).stdout.splitlines()
        assert held[0].split(": ", 1)[1].startswith(f"running (pid {run} since "), held  # the sweep's marker
        assert held[1].endswith("seed-1: pending"), held
        sweep.send_signal(signal.SIGTERM)
        err = sweep.communicate(timeout=60)[1]
        assert sweep.returncode == 128 + signal.SIGTERM
        assert "stopped by SIGTERM; 0 of 2 runs finished" in err and "resumes" in err
        deadline = time.monotonic() + 30
        while (_alive(run) or _alive(kernel)) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert not _alive(run) and not _alive(kernel)
        assert not (folder / "results" / "toy").exists() or not list((folder / "results" / "toy").glob("*.json"))
    finally:  # a failed assertion must not leave the toy run sleeping in the background
        _kill(sweep, hold)
    hold.unlink()
    status = subprocess.run([sys.executable, "-m", "dml_tutorial", "sweep", str(grid), "--status", "--results",
                             str(folder / "results"), "--output", str(folder / "runs")],
                            capture_output=True, text=True, check=True).stdout.splitlines()
    assert [line.rsplit("_", 1)[1] for line in status] == ["seed-0: pending", "seed-1: pending"]  # resumable
    assert not list((folder / "runs" / "toy").glob("*.running"))  # the stopped sweep took its marker away


def test_sweep_status_tells_a_running_point_from_a_begun_one_and_a_pending_one(folder, capsys):
    """A local sweep's ``--status`` said "pending" for a point two hours into its training (test bed II's noise
    sweep): it now reads the point's run cache and its sweep's marker."""
    import socket

    grid = _grid(folder, "chapter: toy\nprofile: smoke\ngrid:\n  SEED: [0, 1, 2]\n")
    output = folder / "runs"
    argv = ["sweep", str(grid), "--results", str(folder / "results"), "--output", str(output), "--status"]
    for seed in (0, 1):  # two cached trainings, one's state, one part-way
        cache = cli.point_runs(output, "toy", f"smoke_seed-{seed}") / "toy-smoke-0123456789"
        cache.mkdir(parents=True)
        for name in ("a-seed0-1.pt", "a-seed0-1.state.pt", "b-seed0-2.pt", "c-seed0-3.partial.pt"):
            (cache / name).write_bytes(b"x")
        os.utime(cache / "c-seed0-3.partial.pt", (1_700_000_000, 1_700_000_000))  # 2023-11-14 22:13 UTC
        for other in ("a-seed0-1.pt", "a-seed0-1.state.pt", "b-seed0-2.pt"):
            os.utime(cache / other, (1_600_000_000, 1_600_000_000))
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    marker = {"host": socket.gethostname(), "began": "2026-12-06 20:22 UTC"}
    cli.point_marker(output, "toy", "smoke_seed-0").write_text(json.dumps({**marker, "pid": os.getpid()}))
    cli.point_marker(output, "toy", "smoke_seed-1").write_text(json.dumps({**marker, "pid": gone.pid}))
    capsys.readouterr()
    assert cli.main(argv) == 0
    cached = "2 trainings cached, 1 part-way; its cache last written at 2023-11-14 22:13 UTC"
    assert capsys.readouterr().out.splitlines() == [
        f"smoke_seed-0: running (pid {os.getpid()} since 2026-12-06 20:22 UTC; {cached})",
        f"smoke_seed-1: begun ({cached}; the same command resumes from them)",  # its marker's process is gone
        "smoke_seed-2: pending"]
    cli.point_marker(output, "toy", "smoke_seed-0").write_text(json.dumps({**marker, "host": "elsewhere",
                                                                           "pid": os.getpid()}))
    assert cli.main(argv) == 0 and capsys.readouterr().out.startswith("smoke_seed-0: begun (")  # not checkable


def test_sweep_status_says_what_each_done_point_trained_and_how_long_the_rest_will(folder, capsys):
    """Test bed II's sweeps ran for days, and nothing said how many hours a point had taken or the rest would."""
    grid = _grid(folder, "chapter: toy\nprofile: smoke\ngrid:\n  SEED: [0, 1, 2, 3]\n")
    results = folder / "results"
    (results / "toy").mkdir(parents=True)
    made = {"commit": "0123456789abcdef", "date": "2026-12-07T20:54:02"}
    trained = {0: {"trainings": 148, "trained_seconds": 18_000.0}, 1: {"trainings": 140, "trained_seconds": 10_800.0},
               2: {}}  # a run file older than 0.27.5 records no training seconds
    for seed, extra in trained.items():
        (results / "toy" / f"smoke_seed-{seed}.json").write_text(json.dumps({**made, **extra}))
    argv = ["sweep", str(grid), "--results", str(results), "--output", str(folder / "runs"), "--status"]
    assert cli.main(argv) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].endswith("made from 0123456789ab on 2026-12-07; 148 trainings, 5.0 h of training)")
    assert lines[2].endswith("made from 0123456789ab on 2026-12-07)") and lines[3] == "smoke_seed-3: pending"
    assert lines[4] == ("3 of 4 points done, 4.0 h of training a point (as 2 of their run files record it); "
                        "the 1 left: about 4.0 h at that pace, one point at a time")
    import torch

    begun = cli.point_runs(folder / "runs", "toy", "smoke_seed-3") / "toy-smoke-0123456789"
    begun.mkdir(parents=True)
    for name, seconds in (("a-seed3-1.pt", 1_500.0), ("b-seed3-2.pt", 1_260.0)):
        torch.save({"metrics": {"seconds": seconds}}, begun / name)
    assert cli.main(argv) == 0  # a begun point: its cache's trainings and the seconds they took
    lines = capsys.readouterr().out.splitlines()
    assert lines[3].startswith("smoke_seed-3: begun (2 trainings cached, 46 min of training; its cache last written at ")
    assert lines[4].endswith("the 1 left: about 4.0 h at that pace (3.2 h beyond the 46 min their caches hold), one "
                             "point at a time")  # 4 h less 2,760 s
    (results / "toy" / "smoke_seed-3.json").write_text(json.dumps(made))
    assert cli.main(argv) == 0 and len(capsys.readouterr().out.splitlines()) == 4  # none left: no outlook


def test_sweep_reports_failed_runs_with_their_logs(folder, capsys):
    grid = _grid(folder, "chapter: toy\nprofile: smoke\nparameters: {FAIL: true}\ngrid:\n  SEED: [0]\n")
    argv = ["sweep", str(grid), "--results", str(folder / "results"), "--output", str(folder / "runs")]
    assert cli.main(argv) == 1
    err = capsys.readouterr().err
    assert "1 of 1 runs failed" in err and "smoke_fail-True_seed-0" in err
    assert "asked to fail" in (folder / "runs" / "toy" / "smoke_fail-True_seed-0.log").read_text()


@pytest.mark.parametrize("text, message", [
    ("chapter: nope\ngrid: {SEED: [0]}\n", "unknown chapter 'nope'"),
    ("chapter: toy\ngrid: {SEED: []}\n", "'grid' must map each parameter to a non-empty list"),
    ("chapter: toy\ngrid: {EPOCHS: [1]}\n", "has no parameter 'EPOCHS'"),
    ("chapter: toy\nprofile: huge\ngrid: {SEED: [0]}\n", f"profile must be 'auto' or one of {', '.join(PROFILE_NAMES)}, got 'huge'"),
    ("chapter: toy\ngrids: {SEED: [0]}\n", "a sweep file is a mapping with 'chapter' and 'grid'"),
])
def test_bad_sweep_files_are_one_clear_message(folder, capsys, text, message):
    assert message in _fails(["sweep", str(_grid(folder, text))], capsys)


def test_report_writes_a_page_per_chapter_with_a_profile(folder, tmp_path):
    pages = tmp_path / "pages"
    assert cli.main(["report", "--results", str(folder / "none"), "--pages", str(pages)]) == 0
    # the toy chapter has no profile in dml_tutorial.profiles: no page of its own, no claim in the verdict table
    assert sorted(p.name for p in pages.iterdir()) == ["at_scale.md", "registry.md", "summary.md", "verdicts.md"]
    assert "\n## " not in (pages / "at_scale.md").read_text()  # no section for a chapter without a profile
    assert "| claim |" in (pages / "verdicts.md").read_text() and "toy" not in (pages / "verdicts.md").read_text()


def test_the_installed_script_runs():
    script = Path(sys.executable).with_name("dml-tutorial")
    assert script.exists(), "pip install -e . installs the dml-tutorial script ([project.scripts])"
    result = subprocess.run([str(script), "--help"], capture_output=True, text=True, timeout=120, check=False)
    assert result.returncode == 0 and "run" in result.stdout and "sweep" in result.stdout and "report" in result.stdout


def test_top_level_help_is_plain_text(capsys):
    with pytest.raises(SystemExit):
        cli.main(["--help"])
    out = capsys.readouterr().out
    assert "dml-tutorial" in out and "``" not in out


def test_version_names_the_package_version(capsys):
    import dml_tutorial

    with pytest.raises(SystemExit) as stop:
        cli.main(["--version"])
    assert stop.value.code == 0 and capsys.readouterr().out.strip() == f"dml-tutorial {dml_tutorial.__version__}"


def test_grid_lists_the_declared_runs_of_a_chapter_and_refuses_one_without(capsys):
    from dml_tutorial import eps, profiles

    assert cli.main(["grid", "eps", "--profile", "glyphs2"]) == 0
    out = capsys.readouterr().out
    specs = eps.grid(profiles.settings("eps", "glyphs2"), range(1))
    assert f": {len(specs)} trainings in" in out
    assert all(f"{table}: " in out for table in (eps.EVEN_ODD, eps.SUBCLUSTERS, eps.MAIN, eps.SUPERCLASSES))
    cfg = profiles.settings("eps", "glyphs2")
    p = eps.classes_per_batch(cfg, 16)  # Fig. 3b: as many images a batch at every number of positives
    assert f"EPS + Dist-Margin, 16: seeds 0; split main; p {p}; k 16\n" in out
    with pytest.raises(SystemExit):
        cli.main(["grid", "foundations"])
    assert "declares no grid" in capsys.readouterr().err
