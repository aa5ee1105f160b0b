"""Sweeps on a real SLURM: a one-node cluster on localhost (munged, slurmctld and slurmd from Debian's packages,
started here as root with a small slurm.conf), a grid of two points of the loss-zoo chapter submitted through
submitit, a job cancelled mid-way and resubmitted by the next call, a failing point reported with its log."""

import json
import os
import shutil
import signal
import socket
import subprocess
import time
from pathlib import Path

import pytest

from dml_tutorial import cli

pytestmark = pytest.mark.slow
DAEMONS = ("munged", "mungekey", "slurmctld", "slurmd", "sbatch", "squeue", "scancel", "sinfo")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _conf(d: Path) -> str:
    host = socket.gethostname().split(".")[0]
    return f"""ClusterName=dmltest
SlurmctldHost={host}(127.0.0.1)
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket={d}/munge.socket
CredType=cred/munge
SlurmctldPort={_free_port()}
SlurmdPort={_free_port()}
StateSaveLocation={d}/state
SlurmdSpoolDir={d}/spool
SlurmctldPidFile={d}/slurmctld.pid
SlurmdPidFile={d}/slurmd.pid
SlurmctldLogFile={d}/slurmctld.log
SlurmdLogFile={d}/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SwitchType=switch/none
MpiDefault=none
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
ReturnToService=2
NodeName={host} NodeAddr=127.0.0.1 CPUs={os.cpu_count()} RealMemory=2000 State=UNKNOWN
PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP
"""


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    """SLURM_CONF of a running one-node cluster; skipped, saying why, where one cannot be started."""
    missing = [b for b in DAEMONS if shutil.which(b) is None]
    if missing:
        pytest.skip(f"no SLURM here ({', '.join(missing)} not found): `make setup` installs Debian's slurmctld, "
                    "slurmd, slurm-client and munge")
    if os.geteuid() != 0:
        pytest.skip("starting munged, slurmctld and slurmd needs root")
    d = tmp_path_factory.mktemp("slurm")
    for sub in ("state", "spool"):
        (d / sub).mkdir()
    conf = d / "slurm.conf"
    conf.write_text(_conf(d))
    env = {**os.environ, "SLURM_CONF": str(conf)}
    subprocess.run(["mungekey", "--create", f"--keyfile={d}/munge.key"], check=True, capture_output=True)
    os.chmod(d / "munge.key", 0o600)
    subprocess.run(["munged", f"--key-file={d}/munge.key", f"--socket={d}/munge.socket", f"--pid-file={d}/munged.pid",
                    f"--log-file={d}/munged.log", f"--seed-file={d}/munged.seed", "--force"], check=True, env=env)
    subprocess.run(["slurmctld", "-f", str(conf)], check=True, env=env)
    subprocess.run(["slurmd", "-f", str(conf)], check=True, env=env)
    deadline = time.time() + 60
    while "idle" not in subprocess.run(["sinfo", "-h", "-o", "%T"], capture_output=True, text=True, env=env, check=False).stdout:
        if time.time() > deadline:
            logs = "".join((d / f).read_text()[-800:] for f in ("slurmctld.log", "slurmd.log") if (d / f).exists())
            _stop(d)
            pytest.skip(f"the SLURM daemons did not come up within 60 s: {logs}")
        time.sleep(1)
    yield str(conf)
    subprocess.run(["scancel", "--user=root"], env=env, check=False)
    _stop(d)


def _stop(d: Path):
    for pid_file in ("slurmd.pid", "slurmctld.pid", "munged.pid"):
        try:
            os.kill(int((d / pid_file).read_text()), signal.SIGTERM)
        except (OSError, ValueError):
            pass


def _squeue(job: str) -> str:
    return subprocess.run(["squeue", "-h", "-o", "%T", "-j", job], capture_output=True, text=True, check=False).stdout.strip()


def test_a_grid_runs_resumes_and_resubmits_a_cancelled_job(cluster, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("SLURM_CONF", cluster)
    grid = tmp_path / "grid.yaml"
    grid.write_text("chapter: loss_zoo\nprofile: smoke\ngrid:\n  SEED: [0, 1]\n")
    results, output = tmp_path / "results", tmp_path / "runs"
    argv = ["sweep", str(grid), "--executor", "slurm", "--gpus-per-run", "0", "--cpus-per-run", "1", "--time", "10",
            "--results", str(results), "--output", str(output), "--poll", "2"]
    start = time.time()
    assert cli.main(argv + ["--wait"]) == 0
    files = sorted(p.name for p in (results / "loss_zoo").glob("*.json"))
    assert files == ["smoke_seed-0.json", "smoke_seed-1.json"]
    print(f"two points on SLURM: {time.time() - start:.0f} s")
    # --wait returns once the results files exist; a job may still be completing in the queue for a moment, and
    # the sweep would then see seed 1 as running instead of submitting it again (a race seen on a loaded machine)
    first_jobs = json.loads((output / "loss_zoo" / "slurm" / "jobs.json").read_text()).values()
    deadline = time.time() + 120
    while any(_squeue(str(j)) for j in first_jobs):
        assert time.time() < deadline, "the finished jobs never left the queue"
        time.sleep(0.5)

    (results / "loss_zoo" / "smoke_seed-1.json").unlink()  # as if that run had never finished
    assert cli.main(argv) == 0  # submits it again, does not wait
    jobs = (output / "loss_zoo" / "slurm" / "jobs.json").read_text()
    job = next(line.split('"')[3] for line in jobs.splitlines() if "seed-1" in line)
    deadline = time.time() + 120
    while _squeue(job) != "RUNNING":
        assert time.time() < deadline, f"job {job} never started"
        time.sleep(0.5)
    subprocess.run(["scancel", job], check=True)  # killed mid-way, as a pre-emption would
    while _squeue(job):
        time.sleep(0.5)
    capsys.readouterr()
    assert cli.main(argv + ["--status"]) == 1
    status = capsys.readouterr().out
    assert "smoke_seed-0: done" in status and f"smoke_seed-1: cancelled (job {job}" in status

    assert cli.main(argv + ["--wait"]) == 0  # the cancelled point is submitted again, and finishes
    assert (results / "loss_zoo" / "smoke_seed-1.json").exists()
    assert job not in (output / "loss_zoo" / "slurm" / "jobs.json").read_text()


def test_a_failing_point_is_reported_with_its_log(cluster, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("SLURM_CONF", cluster)
    grid = tmp_path / "grid.yaml"
    grid.write_text("chapter: loss_zoo\nprofile: smoke\ngrid:\n  SEED: [not-a-seed]\n")  # the notebook raises
    argv = ["sweep", str(grid), "--executor", "slurm", "--gpus-per-run", "0", "--cpus-per-run", "1", "--time", "10",
            "--results", str(tmp_path / "results"), "--output", str(tmp_path / "runs"), "--poll", "2", "--wait"]
    assert cli.main(argv) == 1
    out = capsys.readouterr().out
    assert "1 failed" in out and "exited with 1" in out and "log:" in out
