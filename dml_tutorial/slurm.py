"""Sweeps on a SLURM cluster, through submitit: one job per grid point, resumable across calls.

``dml-tutorial sweep GRID.yaml --executor slurm --partition gpu --gpus-per-run 1 --time 240`` submits every point
that has no results file and no job still queued or running, and returns; call it again (or with ``--wait``) to
collect. Each job runs exactly what a local sweep runs for that point (``dml-tutorial run CHAPTER --output ...
--results ... --figures``), so the results files land in ``data/results/<chapter>/`` as before.

What a call knows about each point (:func:`states`), without SLURM accounting (many clusters do not give users
``sacct``): **done** (its results file exists), **running** or **pending** (its job is in ``squeue``), **failed**
(its job ended with an error: submitit's result file holds the traceback; the log path is reported), **cancelled**
(its job left the queue without a result: scancel, pre-emption, a node failure, a time limit) and **not
submitted**. Failed and cancelled points are submitted again by the next call. The job ids live in
``<output>/<chapter>/slurm/jobs.json``; submitit's own files (the pickled call, stdout/stderr) beside it.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

STATES = ("done", "running", "pending", "failed", "cancelled", "not submitted")


@dataclass
class Options:
    """What each job asks SLURM for: ``partition``, ``gpus_per_run`` (0: no GPU requested), ``time`` (minutes),
    ``cpus_per_run``, and ``extra`` ``sbatch`` options (``{"account": "abc", "qos": "high"}``) passed through."""

    partition: str | None = None
    gpus_per_run: int = 1
    time: int = 240
    cpus_per_run: int = 4
    extra: dict = field(default_factory=dict)


def run_point(cmd: list[str], env: dict, log: str) -> str:
    """The job itself: ``cmd`` (a local sweep's ``dml-tutorial run`` of one point) with its output in ``log``;
    raises, so that submitit records a failure, when it exits non-zero."""
    with open(log, "w") as f:
        code = subprocess.run(cmd, stdout=f, stderr=subprocess.STDOUT, env={**os.environ, **env}, check=False).returncode
    if code < 0:  # SLURM stopped the job (scancel, pre-emption, time limit): SIGTERM reached the run too
        raise RuntimeError(f"{STOPPED} {-code}; log: {log}")
    if code:
        raise RuntimeError(f"{' '.join(cmd[:5])} ... exited with {code}; log: {log}")
    return log


STOPPED = "the run was stopped by signal"


def _folder(output: Path, chapter: str) -> Path:
    return Path(output) / chapter / "slurm"


def _jobs(output: Path, chapter: str) -> dict:
    path = _folder(output, chapter) / "jobs.json"
    return json.loads(path.read_text()) if path.exists() else {}


def _save_jobs(output: Path, chapter: str, jobs: dict) -> None:
    path = _folder(output, chapter) / "jobs.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(jobs, indent=1) + "\n")
    os.replace(tmp, path)


def queued(job_ids) -> dict:
    """``{job id: "running" | "pending"}`` for the jobs among ``job_ids`` that ``squeue`` still lists."""
    ids = [str(j) for j in job_ids]
    if not ids:
        return {}
    if shutil.which("squeue") is None:
        raise RuntimeError("squeue not found: run this where the SLURM client commands are installed")
    out = subprocess.run(["squeue", "-h", "-o", "%i %T", "-j", ",".join(ids)], capture_output=True, text=True,
                         check=False).stdout
    listed = dict(line.split() for line in out.splitlines() if line.strip())
    return {j: "running" if s in ("RUNNING", "COMPLETING") else "pending" for j, s in listed.items() if j in ids}


def states(chapter: str, run_ids, results: Path, output: Path) -> dict:
    """``{run id: (state, detail)}`` for every point (:data:`STATES`); ``detail`` is the job id and, for a failed
    job, its error and log."""
    import submitit

    jobs, out = _jobs(output, chapter), {}
    in_queue = queued(jobs[r] for r in run_ids if r in jobs and not (Path(results) / chapter / f"{r}.json").exists())
    for rid in run_ids:
        job_id = jobs.get(rid)
        if (Path(results) / chapter / f"{rid}.json").exists():
            out[rid] = ("done", f"job {job_id}" if job_id else "")
        elif job_id is None:
            out[rid] = ("not submitted", "")
        elif str(job_id) in in_queue:
            out[rid] = (in_queue[str(job_id)], f"job {job_id}")
        else:
            job = submitit.SlurmJob(folder=_folder(output, chapter), job_id=str(job_id))
            if job.paths.result_pickle.exists():
                outcome, value = submitit.core.utils.pickle_load(job.paths.result_pickle)
                last = str(value).strip().splitlines()[-1] if outcome == "error" else "no results file"
                state = "cancelled" if STOPPED in last else "failed"
                out[rid] = (state, f"job {job_id}: {last}; log: {job.paths.stderr}")
            else:
                out[rid] = ("cancelled", f"job {job_id} left the queue without a result; log: {job.paths.stderr}")
    return out


def submit(chapter: str, points: dict, options: Options, output: Path) -> dict:
    """Submit ``points`` (``{run id: (command, env, log)}``) as one job each; returns and records their job ids."""
    import submitit

    executor = submitit.SlurmExecutor(folder=_folder(output, chapter), max_num_timeout=0)
    params = {"time": options.time, "cpus_per_task": options.cpus_per_run, "job_name": f"dml-{chapter}",
              "additional_parameters": dict(options.extra)}
    if options.partition:
        params["partition"] = options.partition
    if options.gpus_per_run:
        params["gpus_per_node"] = options.gpus_per_run
    executor.update_parameters(**params)
    jobs = _jobs(output, chapter)
    for rid, (cmd, env, log) in points.items():
        jobs[rid] = str(executor.submit(run_point, cmd, env, str(log)).job_id)
        _save_jobs(output, chapter, jobs)  # after every submission: an interrupted call loses nothing
    return {rid: jobs[rid] for rid in points}


def wait(chapter: str, run_ids, results: Path, output: Path, poll: float = 10.0, progress=None) -> dict:
    """Poll until no point is running or pending; returns the final :func:`states`."""
    while True:
        now = states(chapter, run_ids, results, output)
        if progress is not None:
            progress(now)
        if not any(s in ("running", "pending") for s, _ in now.values()):
            return now
        time.sleep(poll)
