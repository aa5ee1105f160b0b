"""One training loop for every chapter: seed, device, batches, loss, progress bar, history, checkpoint/resume.

    history = fit(model, lambda z, y: triplet_loss(z, y), splits.train, epochs=20,
                  sampler=PKSampler(splits.train.labels, p=6, k=16, seed=0), seed=0,
                  evaluate=lambda m: evaluate(embed(m, splits.test), splits.test.labels),
                  checkpoint="runs/foundations.pt")

A checkpoint is written after every epoch, or every ``checkpoint_every`` seconds (atomically: a half-written file
never replaces a good one) with the model, optimiser, scheduler, history and all random-number states, and always
after the last epoch. Calling ``fit`` again with the same checkpoint path resumes after the last saved epoch, and
on CPU ends with exactly the weights of an uninterrupted run (tests/test_train.py kills a run and checks this).
"""

from __future__ import annotations

import inspect
import os
import random
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import threadpoolctl
import torch
from tqdm import tqdm

from . import recorder
from .data import ArrayDataset
from .settings import THREADS_ENV


def resolve_device(device: str | torch.device = "auto") -> torch.device:
    """``"auto"``: CUDA when available, else CPU. Anything else is passed to ``torch.device``."""
    if str(device) == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    try:
        dev = torch.device(device)
    except RuntimeError as err:
        raise ValueError(f"unknown device {device!r}; use 'auto', 'cpu' or 'cuda'") from err
    if dev.type == "cuda" and not torch.cuda.is_available():
        raise ValueError("device 'cuda' was asked for but no CUDA GPU is available; use DEVICE='auto' or 'cpu'")
    return dev


#: What the BLAS and OpenMP pools loaded after :func:`seed_everything` read their thread count from.
POOL_ENV = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")


def seed_everything(seed: int, threads: int | None = None, deterministic: bool = False):
    """Seed Python, NumPy and torch (CPU and CUDA); optionally fix the CPU thread count (``threads``, or
    :data:`~dml_tutorial.settings.THREADS_ENV` when set), which also fixes the order of floating-point reductions
    (so CPU results repeat exactly on a machine): torch's, and through threadpoolctl those of the BLAS and OpenMP
    pools that scikit-learn, NumPy and SciPy loaded (the probe's logistic regression, k-means), which otherwise
    take every core. Two sweep points on one thread each (``dml-tutorial sweep --jobs 2``) then do not overrun two
    cores: side by side, their probe fits ran 6.4x faster so (``benchmarks/bench_thread_pools.py``). Threads are
    never chosen from how busy the machine is (that would change the sums' order from run to run); the command
    line warns instead where they do not fit beside other work (``cli.busy_cores_warning``).

    On a GPU, seeding is not enough: some CUDA kernels (cuBLAS reductions, atomic adds) round differently from run
    to run, so two seeded runs agree only to about 1e-5 (measured on an H100). ``deterministic=True`` turns on
    ``torch.use_deterministic_algorithms`` (and the cuBLAS workspace setting it needs, which must come before the
    first cuBLAS call), at some cost in speed; it stays on for the process. An MLP then repeats bit for bit on
    CUDA; ops with no deterministic CUDA kernel, such as the backward of adaptive average pooling in ``ConvNet``
    and ``VGG9``, warn and stay as they are (``warn_only``) rather than stop the run."""
    random.seed(seed)
    np.random.seed(seed % 2**32)
    torch.manual_seed(seed)
    threads = int(os.environ[THREADS_ENV]) if os.environ.get(THREADS_ENV) else threads
    if threads:
        torch.set_num_threads(threads)
        threadpoolctl.threadpool_limits(threads)  # the pools loaded so far, for the rest of the process
        os.environ.update(dict.fromkeys(POOL_ENV, str(threads)))  # those loaded later read it as they start
    if deterministic:
        os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
        torch.use_deterministic_algorithms(True, warn_only=True)


@dataclass
class History:
    """Per-epoch records: ``epoch``, ``loss`` (mean over batches), ``seconds`` and the evaluation metrics."""

    records: list = field(default_factory=list)

    def __getitem__(self, key):
        return [r.get(key) for r in self.records]

    def __len__(self):
        return len(self.records)

    @property
    def last(self) -> dict:
        return self.records[-1] if self.records else {}


def _rng_state():
    return {"python": random.getstate(), "numpy": np.random.get_state(), "torch": torch.get_rng_state(),
            "cuda": torch.cuda.get_rng_state_all() if torch.cuda.is_available() else None}


def _set_rng_state(s):
    """Restore the states saved by `_rng_state`. torch wants CPU byte tensors here, and ``torch.load(...,
    map_location="cuda")`` moves every tensor of a checkpoint to the GPU, hence the ``.cpu()``."""
    random.setstate(s["python"])
    np.random.set_state(s["numpy"])
    torch.set_rng_state(s["torch"].cpu())
    if s["cuda"] is not None and torch.cuda.is_available():
        torch.cuda.set_rng_state_all([state.cpu() for state in s["cuda"]])


def save_checkpoint(path, **state):
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    torch.save(state, tmp)
    os.replace(tmp, path)


def loader_worker_init(worker_id: int) -> None:
    """Each DataLoader worker decodes images with one torch thread (PyTorch's own default for workers, stated
    here so that no version or environment change lets ``workers`` processes each start one thread per core
    beside the training process)."""
    torch.set_num_threads(1)


def loader(data, num_workers: int = 0, device=None, **kwargs) -> torch.utils.data.DataLoader:
    """The package's one way to build a DataLoader: ``num_workers`` processes with one thread each
    (:func:`loader_worker_init`), pinned memory for a CUDA ``device``."""
    pin = device is not None and torch.device(device).type == "cuda"
    return torch.utils.data.DataLoader(data, num_workers=num_workers, pin_memory=pin,
                                       worker_init_fn=loader_worker_init if num_workers else None, **kwargs)


def _batches(data, sampler, device, num_workers):
    if isinstance(data, ArrayDataset):
        view = getattr(data, "training_batch", data.batch)  # images decoded once: a random crop and flip
        for idx in sampler:  # made on the host in uint8 where the data is there, scaled on the device
            yield view(idx, device=device), torch.as_tensor(data.labels[idx], device=device), idx
        return
    start = 0
    for x, y in loader(data, num_workers, device, batch_sampler=sampler):
        yield x.to(device, non_blocking=True), y.to(device), list(range(start, start + len(y)))
        start += len(y)


def amp_precision(device: torch.device) -> torch.dtype:
    """The half precision ``fit(amp=True)`` uses on ``device``: bfloat16 (no loss scaling needed) on CPUs and on
    GPUs that compute in it natively (Ampere and later); float16 on older GPUs such as Colab's T4, where bfloat16 is
    only emulated, slowly."""
    if device.type == "cuda" and not torch.cuda.is_bf16_supported(including_emulation=False):
        return torch.float16
    return torch.bfloat16


def _loss_arity(loss_fn) -> int:
    try:
        fn = loss_fn.forward if isinstance(loss_fn, torch.nn.Module) else loss_fn
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return 2
    if any(p.kind == p.VAR_POSITIONAL or p.name == "batch" for p in params):  # e.g. an Objective: (z, y, batch=None)
        return 3
    return len([p for p in params if p.default is p.empty and p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)])


#: The trainings the process's default recorder holds (deprecated: read ``recorder.current().trainings``).
TRAININGS: list[dict] = recorder.DEFAULT.trainings


def record_training(description: str, steps: int, seconds: float, cached: bool = False) -> None:
    """Keep one training in the current recorder (:mod:`dml_tutorial.recorder`): one per :func:`fit` (and per
    :func:`dml_tutorial.clustering.train_unsupervised`), ``cached`` for a run a grid loaded from its cache
    instead; :mod:`dml_tutorial.plan` checks a chapter's plan against them."""
    recorder.current().training(description, steps, seconds, cached)


def fit(model: torch.nn.Module, loss_fn, data, *, epochs: int, sampler, optimizer=None, lr: float = 1e-3,
        scheduler=None, device="auto", seed: int = 0, evaluate=None, eval_every: int = 1, augment=None,
        checkpoint: str | Path | None = None, resume: bool = True, progress: bool = True, num_workers: int = 0,
        amp: bool = False, channels_last: bool = False, description: str = "training",
        counted: bool = True, checkpoint_every: float = 0.0) -> History:
    """Train ``model`` for ``epochs`` epochs and return its :class:`History`.

    - ``loss_fn(z, y)`` or ``loss_fn(z, y, batch)``, where ``batch`` has ``x`` (the input), ``indices`` and
      ``model``, for losses that need more than the embeddings (reconstruction, EC on the embedding layer).
      A loss that is a ``torch.nn.Module`` with parameters (e.g. :class:`~dml_tutorial.losses.MarginLoss` with
      learnable betas) is moved to the device, trained by the default optimiser and saved in the checkpoint.
    - ``sampler``: a batch sampler (e.g. :class:`~dml_tutorial.sampling.PKSampler`); its ``set_epoch`` is called.
    - ``optimizer``: default Adam(lr); ``scheduler``: stepped once per epoch.
    - ``evaluate(model) -> dict``: called in eval mode every ``eval_every`` epochs and after the last; its
      numbers join the history. ``augment(x) -> x`` transforms each batch on the device (e.g.
      :func:`dml_tutorial.augment.random_crop_flip`; with the data on the GPU, see ``ArrayDataset.to``).
    - ``amp``: the model's forward pass under bfloat16 autocast (float16 with loss scaling on GPUs without native
      bfloat16, such as Colab's T4: :func:`amp_precision`), the loss in float32 (distances, exponentials and
      log-sum-exps lose too much in bfloat16; :class:`~dml_tutorial.models.Embedder` also keeps its embedding
      layer in float32); ``channels_last``: NHWC layout for the model and image batches.
      On an H100 the two together gave 1.3-1.9x at 224 px and 0.87x for VGG-9 at 32 px
      (``benchmarks/bench_train_step.py``), so the profiles turn them on per model.
    - ``counted=False`` leaves the training out of the recorder's trainings, which a chapter's plan checks against its
      grids: for work that is no grid's, such as building a pretrained start on first use.
    - ``checkpoint_every``: the fewest seconds between two checkpoints (0: after every epoch); the last epoch's is
      always written (see :func:`epochs_of`).
    """
    if epochs < 0:
        raise ValueError(f"epochs must be non-negative, got {epochs}")
    dev = resolve_device(device)
    seed_everything(seed)
    model.to(dev, memory_format=torch.channels_last if channels_last else torch.preserve_format)
    loss_module = loss_fn.to(dev) if isinstance(loss_fn, torch.nn.Module) else None
    params = list(model.parameters()) + (list(loss_module.parameters()) if loss_module is not None else [])
    optimizer = optimizer or torch.optim.Adam(params, lr=lr)
    amp_dtype = amp_precision(dev)
    scaler = torch.amp.GradScaler(dev.type, enabled=amp and amp_dtype == torch.float16)
    arity = _loss_arity(loss_fn)

    def epoch_steps(epoch):  # one epoch of P x K batches: a {"loss"} a step
        if hasattr(sampler, "set_epoch"):
            sampler.set_epoch(epoch)
        for x, y, idx in _batches(data, sampler, dev, num_workers):
            if augment is not None:
                x = augment(x)
            if channels_last and x.dim() == 4:
                x = x.contiguous(memory_format=torch.channels_last)
            with torch.autocast(dev.type, dtype=amp_dtype, enabled=amp):
                z = model(x)
            z = z.float()
            loss = loss_fn(z, y) if arity < 3 else loss_fn(z, y, SimpleNamespace(x=x, indices=idx, model=model))
            step(loss, optimizer, scaler, epoch)
            yield {"loss": loss.item()}

    return epochs_of(model, epoch_steps, epochs=epochs, optimizer=optimizer, scaler=scaler, scheduler=scheduler,
                     evaluate=evaluate, eval_model=model, eval_every=eval_every, checkpoint=checkpoint, resume=resume,
                     checkpoint_every=checkpoint_every, device=dev, progress=progress, description=description,
                     counted=counted, extra={"loss": loss_module})


def step(loss, optimizer, scaler, epoch: int) -> None:
    """One optimiser step on ``loss`` (refused when it is not finite), through ``scaler``'s loss scaling (float16
    only: against gradient underflow; a no-op otherwise)."""
    if not torch.isfinite(loss):
        raise FloatingPointError(f"loss became {loss.item()} at epoch {epoch + 1}; lower the learning rate "
                                 "or check the loss's inputs")
    optimizer.zero_grad(set_to_none=True)
    scaler.scale(loss).backward()
    scaler.step(optimizer)
    scaler.update()


#: What a resumed scheduler takes from its checkpoint: how far it got (its epoch, steps and current rates). Its
#: settings (a step size, a decay) stay its own: a longer training continued from a shorter one's last state (a
#: search's next length, :func:`dml_tutorial.experiment.run_one`) keeps the longer one's schedule, whose first
#: epochs are the shorter one's where the rate does not step before its end.
SCHEDULER_PROGRESS = ("last_epoch", "_step_count", "_last_lr", "_is_initial", "_get_lr_called_within_step")


def epochs_of(module: torch.nn.Module, epoch_steps, *, epochs: int, optimizer, scaler, scheduler=None, evaluate=None,
              eval_model=None, eval_every: int = 1, checkpoint=None, resume: bool = True,
              checkpoint_every: float = 0.0, device, progress: bool, description: str, counted: bool = True,
              extra: dict | None = None) -> History:
    """The loop every training shares (:func:`fit`'s, :func:`dml_tutorial.clustering.train_unsupervised`'s):
    ``epochs`` times ``epoch_steps(epoch)``, which trains one epoch (``module`` in train mode) and yields each
    step's numbers (``loss`` and its parts); their means over the epoch and its seconds, then ``evaluate(eval_model)``
    in eval mode every ``eval_every`` epochs and after the last, make the epoch's :class:`History` record; the
    ``scheduler`` steps once an epoch. With ``checkpoint`` the state after an epoch is saved there (``module``,
    ``optimizer``, ``scaler``, ``scheduler``, every object of ``extra`` that is not ``None``: a loss's parameters, a
    generator (:class:`GeneratorState`); the random states and the history) and, with ``resume``, a training that
    finds one there goes on from it, to the same result (the scheduler's progress from the checkpoint, its
    settings its own: :data:`SCHEDULER_PROGRESS`). It is saved after the last epoch and after any epoch that
    ends ``checkpoint_every`` seconds or more after the last save (0: every epoch): a ResNet-50 with Adam's state
    is about 300 MB a save, which every epoch of a colab chapter's runs made 12-15 GB of writes (issue #88); a
    resume then repeats at most that many seconds. The training is recorded (:func:`record_training`) unless not
    ``counted``."""
    extra = {name: obj for name, obj in (extra or {}).items() if obj is not None}
    history, start = History(), 0
    ckpt = Path(checkpoint) if checkpoint else None
    if ckpt and resume and ckpt.exists():
        state = torch.load(ckpt, map_location=device, weights_only=False)
        module.load_state_dict(state["model"])
        for name, obj in extra.items():
            if state.get(name) is not None:
                obj.load_state_dict(state[name])
        optimizer.load_state_dict(state["optimizer"])
        if scheduler is not None and state.get("scheduler"):
            scheduler.load_state_dict({**scheduler.state_dict(), **{k: v for k, v in state["scheduler"].items()
                                                                     if k in SCHEDULER_PROGRESS}})
        if state.get("scaler"):
            scaler.load_state_dict(state["scaler"])
        history, start = History(state["history"]), state["epoch"]
        _set_rng_state(state["rng"])
    began, steps = time.perf_counter(), 0
    saved = began
    bar = tqdm(range(start, epochs), desc=description, initial=start, total=epochs, disable=not progress,
               file=sys.stderr, mininterval=1.0, dynamic_ncols=True)
    for epoch in bar:
        module.train()
        t0 = time.perf_counter()
        records = list(epoch_steps(epoch))
        steps += len(records)
        if scheduler is not None:
            scheduler.step()
        means = {key: float(np.mean([r[key] for r in records])) for key in records[0]} if records else {
            "loss": float("nan")}
        record = {"epoch": epoch + 1, **means, "seconds": time.perf_counter() - t0}
        if evaluate is not None and ((epoch + 1) % eval_every == 0 or epoch + 1 == epochs):
            module.eval()
            with torch.no_grad():
                record.update(evaluate(eval_model))
        history.records.append(record)
        bar.set_postfix(loss=f"{record['loss']:.4f}", refresh=False)
        if ckpt and (epoch + 1 == epochs or time.perf_counter() - saved >= checkpoint_every):
            saved = time.perf_counter()
            save_checkpoint(ckpt, model=module.state_dict(), optimizer=optimizer.state_dict(),
                            scaler=scaler.state_dict(),
                            scheduler=scheduler.state_dict() if scheduler is not None else None,
                            **{name: obj.state_dict() for name, obj in extra.items()},
                            history=history.records, epoch=epoch + 1, rng=_rng_state())
    module.eval()
    if counted:  # a chapter's plan checks what it ran against what it counted (dml_tutorial.plan.Plan.check)
        record_training(description, steps, time.perf_counter() - began)
    return history


class GeneratorState:
    """A :class:`torch.Generator` as a checkpoint holds it (``state_dict``/``load_state_dict``): a training that
    draws its order and augmentations from its own generator resumes with the draws it would have made."""

    def __init__(self, generator: torch.Generator):
        self.generator = generator

    def state_dict(self):
        return self.generator.get_state()

    def load_state_dict(self, state) -> None:
        self.generator.set_state(state.cpu())


@torch.no_grad()
def embed(model: torch.nn.Module, data, batch_size: int = 512, device=None, normalize: bool | None = None,
          num_workers: int = 0):
    """Embeddings ``[N, d]`` (CPU tensor) of a dataset, in order, in eval mode; images read from disk are decoded
    by ``num_workers`` loader processes (0: in this one)."""
    dev = next(model.parameters()).device if device is None else resolve_device(device)
    was_training = model.training
    model.eval()
    out = [model(x.to(dev), normalize=normalize) for x in _in_order(data, batch_size, dev, num_workers)]
    model.train(was_training)
    return torch.cat(out).cpu()


def _in_order(data, batch_size: int, device, num_workers: int = 0):
    """The inputs of ``data`` in order, in batches of ``batch_size`` (no labels): indexed in memory for an
    :class:`ArrayDataset`, else read by a DataLoader of ``num_workers`` processes."""
    if isinstance(data, ArrayDataset):
        for s in range(0, len(data), batch_size):
            yield data.batch(np.arange(s, min(s + batch_size, len(data))), device=device)
    else:
        for x, _ in loader(data, num_workers, device, batch_size=batch_size):
            yield x


def recalibrate_batch_norm(model: torch.nn.Module, data, batch_size: int = 512, num_workers: int = 0) -> bool:
    """Re-estimates every batch-norm layer's running mean and variance on ``data``, in batches of ``batch_size``
    (the plain mean of the batches' statistics: :func:`torch.optim.swa_utils.update_bn`); no gradient, no labels.
    A network at its initialisation keeps running statistics of mean 0 and variance 1 that describe no input: any
    training, even of a loss that moves no weight, replaces them, so an untrained reference measured without this
    credits the trained rows with the recalibration. Returns whether ``model`` has a batch-norm layer (without
    one it is left as it was)."""
    if not any(isinstance(m, torch.nn.modules.batchnorm._BatchNorm) for m in model.modules()):
        return False
    dev = next(model.parameters()).device
    torch.optim.swa_utils.update_bn(_in_order(data, batch_size, dev, num_workers), model, device=dev)
    return True
