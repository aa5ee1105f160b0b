"""The training loop: a run killed mid-way and resumed from its checkpoint ends with exactly the weights of an
uninterrupted run (CPU); errors are clear."""

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
import torch

from dml_tutorial import data, losses, models, sampling, train

SCRIPT = Path(__file__).with_name("_train_script.py")
EPOCHS = 6


def _run(tmp, name, delay=0.0):
    return subprocess.Popen([sys.executable, str(SCRIPT), str(tmp / f"{name}.pt"), str(tmp / f"{name}.final"),
                             str(EPOCHS), str(delay)], env={**os.environ, "OMP_NUM_THREADS": "1"})


def test_killed_and_resumed_run_matches_uninterrupted_run(tmp_path):
    assert _run(tmp_path, "straight").wait(timeout=300) == 0
    proc = _run(tmp_path, "killed", delay=0.7)
    ckpt = tmp_path / "killed.pt"
    deadline = time.time() + 240
    while time.time() < deadline:
        if ckpt.exists() and torch.load(ckpt, weights_only=False)["epoch"] >= 2:
            break
        time.sleep(0.1)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    stopped_at = torch.load(ckpt, weights_only=False)["epoch"]
    assert 2 <= stopped_at < EPOCHS, "the run must be killed in the middle"
    assert not (tmp_path / "killed.final").exists()
    assert _run(tmp_path, "killed").wait(timeout=300) == 0
    a = torch.load(tmp_path / "straight.final")
    b = torch.load(tmp_path / "killed.final")
    for k in a:  # exact on CPU; on CUDA ConvNet's pooling backward has no deterministic kernel (seed_everything)
        assert torch.equal(a[k], b[k]) if a[k].device.type == "cpu" else torch.allclose(a[k], b[k], atol=1e-4), k
    assert len(torch.load(ckpt, weights_only=False)["history"]) == EPOCHS


def test_history_records_loss_and_evaluation(tmp_path):
    s = data.load_dataset("digits", split="samples")
    model = models.MLP(64, dim=8)
    h = train.fit(model, lambda z, y: losses.triplet_loss(z, y), s.train, epochs=3, progress=False,
                  sampler=sampling.PKSampler(s.train.labels, 5, 8, batches_per_epoch=4),
                  evaluate=lambda m: {"n": len(train.embed(m, s.test))}, eval_every=2)
    assert h["epoch"] == [1, 2, 3] and h["n"] == [None, len(s.test), len(s.test)]
    assert all(np.isfinite(h["loss"]))


def test_loss_receiving_the_batch():
    s = data.load_dataset("digits", split="samples")
    seen = []

    def loss(z, y, batch):
        seen.append(batch.x.shape)
        return losses.triplet_loss(z, y)

    train.fit(models.MLP(64, dim=4), loss, s.train, epochs=1, progress=False,
              sampler=sampling.PKSampler(s.train.labels, 2, 3, batches_per_epoch=2))
    assert seen == [torch.Size([6, 1, 8, 8])] * 2


def test_non_finite_loss_stops_with_a_message():
    s = data.load_dataset("digits", split="samples")
    with pytest.raises(FloatingPointError, match="lower the learning rate"):
        train.fit(models.MLP(64, dim=4), lambda z, y: z.sum() * float("nan"), s.train, epochs=1, progress=False,
                  sampler=sampling.PKSampler(s.train.labels, 2, 3, batches_per_epoch=1))


def test_a_loss_module_is_trained_and_checkpointed(tmp_path):
    s = data.load_dataset("digits", split="samples")
    loss = losses.MarginLoss(num_classes=10, negatives="all")
    ckpt = tmp_path / "margin.pt"
    train.fit(models.MLP(64, dim=8), loss, s.train, epochs=2, progress=False, lr=1e-2, checkpoint=ckpt,
              sampler=sampling.PKSampler(s.train.labels, 5, 4, batches_per_epoch=3))
    beta = loss.beta.detach().cpu()  # fit moves the loss module to the device (CUDA where there is one)
    assert not torch.allclose(beta, torch.full((10,), 1.2)), "the betas must be optimised"
    assert torch.equal(torch.load(ckpt, weights_only=False, map_location="cpu")["loss"]["beta"], beta)
    resumed = losses.MarginLoss(num_classes=10, negatives="all")
    train.fit(models.MLP(64, dim=8), resumed, s.train, epochs=2, progress=False, checkpoint=ckpt,
              sampler=sampling.PKSampler(s.train.labels, 5, 4, batches_per_epoch=3))
    assert torch.equal(resumed.beta.detach(), loss.beta.detach())


class _Threads(torch.utils.data.Dataset):
    """Reports, from inside a loader worker, how many threads torch uses there."""

    def __len__(self):
        return 4

    def __getitem__(self, i):
        return torch.tensor(torch.get_num_threads()), 0


def test_loader_workers_use_one_thread_each_and_leave_the_trainers_alone():
    threads = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        seen = torch.cat([x for x, _ in train.loader(_Threads(), num_workers=2, batch_size=1)])
        assert seen.tolist() == [1, 1, 1, 1]  # not one thread per core in each of the two workers
        assert torch.get_num_threads() == 2
    finally:
        torch.set_num_threads(threads)  # the test worker's own count (tests/conftest.py)
    assert train.loader(_Threads(), num_workers=0).worker_init_fn is None


def test_each_test_worker_computes_with_one_thread():
    """Under `make test`'s two pytest-xdist workers, each worker and what it starts use one thread
    (tests/conftest.py), so the two never oversubscribe the two cores."""
    from helpers import ONE_THREAD

    if int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1")) < 2:
        pytest.skip("only under several pytest-xdist workers")
    assert torch.get_num_threads() == 1 and all(os.environ[k] == v for k, v in ONE_THREAD.items())


def test_threads_reach_the_blas_and_openmp_pools_loaded_before_and_after():
    """seed_everything(threads=n) limits scikit-learn's, NumPy's and SciPy's BLAS and OpenMP pools to n, those
    loaded already and those loaded later, not torch's alone: else two sweep points on one thread each overran two
    cores (benchmarks/bench_thread_pools.py: the probe's fits 6x slower). Here n = 1, below every pool's default
    (the cores; OpenBLAS caps a larger count read at its start at the cores)."""
    import json

    if (os.cpu_count() or 1) < 2:
        pytest.skip("one core: one thread is every pool's default")
    n = 1
    code = ("import json, threadpoolctl\nfrom dml_tutorial import train\n"
            "before = {d['filepath'] for d in threadpoolctl.threadpool_info()}\n"
            f"train.seed_everything(0, threads={n})\nimport sklearn.linear_model, scipy.linalg\n"
            "print(json.dumps([(d['filepath'] in before, d['num_threads']) for d in threadpoolctl.threadpool_info()]))")
    env = {k: v for k, v in os.environ.items() if k not in train.POOL_ENV}  # the test worker's own: one thread
    pools = json.loads(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                                      env=env).stdout)
    assert {loaded_before for loaded_before, _ in pools} == {True, False}  # both kinds are there to test
    assert [threads for _, threads in pools] == [n] * len(pools)


def test_batch_norm_recalibration_takes_the_statistics_of_the_data():
    torch.manual_seed(0)
    images = data.ArrayDataset(torch.rand(40, 1, 8, 8) * 3 + 1, np.arange(40) % 4)
    model = models.ConvNet((1, 8, 8), dim=4, width=(6,), hidden=8)
    bn = next(m for m in model.modules() if isinstance(m, torch.nn.BatchNorm2d))
    seen = []
    hook = bn.register_forward_hook(lambda module, inputs, output: seen.append(inputs[0]))
    with torch.no_grad():
        model.eval()(images.batch(np.arange(40)))  # the layer's input does not depend on its statistics
    hook.remove()
    x = seen[0].transpose(0, 1).flatten(1)  # channels x (samples * pixels)
    assert torch.allclose(bn.running_mean, torch.zeros(6))  # at initialisation: mean 0, variance 1
    assert train.recalibrate_batch_norm(model, images, batch_size=40)
    assert torch.allclose(bn.running_mean, x.mean(1), atol=1e-5)
    assert torch.allclose(bn.running_var, x.var(1, unbiased=True), atol=1e-5)
    assert not model.training  # left in the mode it was in
    mlp = models.MLP(64, dim=4, hidden=8)
    before = {k: v.clone() for k, v in mlp.state_dict().items()}
    assert not train.recalibrate_batch_norm(mlp, images)  # no batch norm: nothing to do, nothing changed
    assert all(torch.equal(before[k], v) for k, v in mlp.state_dict().items())


@pytest.mark.parametrize("every, saved_after", [(0.0, [1, 2, 3, 4]), (1e9, [4]), (0.05, [2, 4])])
def test_checkpoints_are_written_at_the_cadence_asked_and_always_after_the_last_epoch(monkeypatch, tmp_path, every,
                                                                                        saved_after):
    """Issue #88: a checkpoint after every epoch wrote gigabytes on a GPU; ``checkpoint_every`` spaces them by
    seconds (on a clock that only the evaluation after each epoch moves, by 0.03 s: with 0.05 s between saves,
    every second epoch), and the last epoch's is always written, so that ``fit`` called again finds the finished
    training."""
    saved, clock = [], [0.0]
    monkeypatch.setattr(train, "save_checkpoint", lambda path, **state: saved.append(state["epoch"]))
    monkeypatch.setattr(train.time, "perf_counter", lambda: clock[0])
    splits = data.load_dataset("digits", split="classes")
    model = models.ConvNet((1, 8, 8), dim=8, width=(4, 8), hidden=16)
    train.fit(model, losses.contrastive_loss, splits.train, epochs=4, checkpoint=tmp_path / "c.pt", progress=False,
              sampler=sampling.PKSampler(splits.train.labels, 4, 4, seed=0, batches_per_epoch=1),
              evaluate=lambda m: clock.__setitem__(0, clock[0] + 0.03) or {}, checkpoint_every=every)
    assert saved == saved_after
