"""Typed, frozen settings: what a chapter's profile declares, one type per chapter over one shared base.

Every chapter trains the same way (a model, P x K batches, an optimiser), so those settings live once, in
:class:`Settings`, each with its type, its default and its meaning; each chapter's own knobs live in its own type
(:class:`DCDLSettings`, :class:`CBSwRSettings`, ...). A profile (:mod:`dml_tutorial.profiles`) is a named set of
differences from these defaults, so that no profile inherits another's values by accident.

    cfg = profiles.settings("cbswr", "glyphs2")      # a CBSwRSettings, frozen
    cfg.epochs, cfg.tau                              # read by attribute
    cfg.replace(lr=3e-4)                             # a new, checked copy
    cfg.apply({"epochs": "3"})                       # ValueError: epochs must be int, got '3'
    cfg.apply({"epoch": 3})                          # ValueError: unknown setting 'epoch'; known: ...

A value is checked against its field's type on every construction (an ``int`` is accepted where a ``float`` is
asked for; a ``bool`` is never an ``int``); lists become tuples and dicts read-only dicts (:class:`Frozen`), so that
nothing can edit a profile in place. What a run *chooses* (a searched rate, a cluster head) is not a setting: it is
recorded beside the settings (``report.record(..., choices=...)``), never written into them.

During the move from the old settings dicts, a settings object can still be read like a dict (``cfg["epochs"]``,
``cfg.get("epochs")``, ``{**cfg}``), but only for the keys its type declares: an undeclared key is an error that
names the known ones, where a dict would have returned a silent default.
"""

from __future__ import annotations

import dataclasses
import json
import types
import typing
from collections.abc import Mapping
from typing import Any, Union

#: When set, every training's CPU thread count (the profile's ``threads`` overridden): a test harness that runs
#: two chapters side by side on two cores gives each one thread (notebooks/conftest.py). Read by
#: ``train.seed_everything`` and, without loading torch, by the command line (``cli.run_threads``).
THREADS_ENV = "DML_TUTORIAL_THREADS"
#: How a run uses its machine, not what it trains (a checkpoint's cadence changes where a resume starts, not what
#: the run ends with; a thread count only the order of floating-point sums): a registered protocol, ``land`` and
#: the run cache's keys leave them out, so that a sweep resumed with other ``--jobs`` keeps its finished trainings.
MACHINE = ("threads", "workers", "checkpoint_seconds")


def trained(settings: Mapping) -> dict:
    """``settings`` (a run file's, or :meth:`Settings.to_dict`) less how a run uses its machine (:data:`MACHINE`):
    what the run trains, which the run cache, a registered protocol and ``land`` compare."""
    return {k: v for k, v in settings.items() if k not in MACHINE}


class Frozen(dict):
    """A read-only dict (a profile's nested options): JSON writes it as a dict, and it hashes by its contents."""

    def _refuse(self, *args, **kwargs):
        raise TypeError("settings are frozen: use .replace(...) for a changed copy")

    __setitem__ = __delitem__ = clear = pop = popitem = setdefault = update = __ior__ = _refuse

    def __hash__(self):
        return hash(json.dumps(self, sort_keys=True, default=str))

    def __reduce__(self):
        return Frozen, (dict(self),)

    def __copy__(self):
        return self

    def __deepcopy__(self, memo):
        return self


def freeze(value):
    """``value`` with every list made a tuple and every dict a :class:`Frozen`, recursively (JSON's lists, e.g. a
    notebook's ``SETTINGS``, become the tuples the types declare)."""
    if isinstance(value, Mapping):
        return Frozen({k: freeze(v) for k, v in value.items()})
    if isinstance(value, (list, tuple)):
        return tuple(freeze(v) for v in value)
    return value


def thaw(value):
    """``value`` as plain JSON data: tuples as lists, :class:`Frozen` as dicts."""
    if isinstance(value, Mapping):
        return {k: thaw(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [thaw(v) for v in value]
    return value


def _describe(kind) -> str:
    return getattr(kind, "__name__", None) or str(kind).replace("typing.", "")


def conforms(value, kind) -> bool:
    """Whether ``value`` (already frozen) is of type ``kind``: a class, ``X | None``, ``tuple[X, ...]``,
    ``tuple[X, Y]``, ``Mapping`` (any read-only dict) or ``Any``."""
    if kind is Any:
        return True
    origin = typing.get_origin(kind)
    if origin in (Union, types.UnionType):
        return any(conforms(value, k) for k in typing.get_args(kind))
    if kind is type(None):
        return value is None
    if origin is tuple:
        args = typing.get_args(kind)
        if not isinstance(value, tuple):
            return False
        if len(args) == 2 and args[1] is Ellipsis:
            return all(conforms(v, args[0]) for v in value)
        return len(value) == len(args) and all(conforms(v, k) for v, k in zip(value, args))
    if origin is not None and issubclass(origin, Mapping) or kind is Mapping:
        return isinstance(value, Mapping)
    if kind is float:
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if kind is int:
        return isinstance(value, int) and not isinstance(value, bool)
    return isinstance(value, kind)


Noise = tuple[str, float] | None  # None (clean labels) or (kind, rate), e.g. ("symmetric", 0.3)


@dataclasses.dataclass(frozen=True, kw_only=True)
class Settings:
    """What every chapter's training shares. ``chapter`` and ``profile`` are filled in by
    :func:`dml_tutorial.profiles.settings`."""

    chapter: str = ""
    profile: str = ""
    # the data
    dataset: str  # a name of dml_tutorial.data.load_dataset
    dataset_options: Mapping = dataclasses.field(default_factory=Frozen)  # e.g. test bed II's unseen faces
    seen: tuple[int, ...] | None = None  # the seen (training) classes of a class-disjoint split; None: the dataset's
    image_size: int | None = None  # images read from disk are cropped to this side (224 for the papers' backbones)
    decode_once: bool = False  # images read from disk decoded once into memory, then cropped on the device
    cluster_classes: int | None = None  # NMI and F1 cluster the first this many unseen classes (None: all)
    compare_with: str | None = None  # the paper's column the tables quote beside ours
    # the network
    model: str  # a name of dml_tutorial.models.make_model
    hidden: int | None = None  # the MLP's hidden width (None: its default)
    dim: int = 64  # the embedding's dimension
    dropout: float = 0.0
    normalize: bool = True  # L2-normalised embeddings
    start: str | None = None  # a pretrained start (dml_tutorial.pretrain.STARTS) the trunk is loaded from
    # the training
    epochs: int
    batches_per_epoch: int | None = None  # None: one pass over the training split
    p: int | None = None  # classes per P x K batch (None: every class)
    k: int | None = None  # samples per class in a P x K batch
    lr: float = 1e-3
    lr_step: int | None = None  # the rate divided by 10 every this many epochs (None: never)
    optimizer: str = "adam"  # "adam" or "rmsprop"
    weight_decay: float = 0.0
    head_lr_mult: float = 1  # the embedding layer's rate, times lr (ECAML's released code: 10)
    augment: str | None = None  # a key of dml_tutorial.experiment.AUGMENTATIONS
    eval_every: int = 1  # epochs between a training's evaluations (when it has any)
    curve_samples: int | None = None  # images per split a per-epoch curve embeds (None: experiment.CURVE_SAMPLES)
    # the one best-shot search (dml_tutorial.search, issue #86), on held-out seen classes; () searches nothing
    search_lrs: tuple[float, ...] = ()  # the rate's ladder
    search_lr_start: tuple[float, ...] = ()  # the rates each search starts from (neighbouring rungs)
    search_lengths: tuple[int, ...] = ()  # a trial's epochs, then longer while its best checkpoint is in its last half
    search_every: int = 1  # epochs between a trial's checkpoints
    search_patience: float = 0.5  # the last share of a trial where its best checkpoint counts as still rising
    # seeds and the machine
    n_seeds: int = 3
    threads: int | None = 2  # torch's CPU threads (None: torch's default)
    workers: int = 0  # loader processes decoding images read from disk
    checkpoint_seconds: float = 0.0  # fewest seconds between a run's resume checkpoints (0: every epoch)
    data_on_device: bool = False  # in-memory datasets moved to the GPU once
    amp: bool = False  # bfloat16 (float16 on older GPUs) autocast of the model's forward pass
    channels_last: bool = False

    def __post_init__(self):
        hints = typing.get_type_hints(type(self))
        for f in dataclasses.fields(self):
            value = freeze(getattr(self, f.name))
            object.__setattr__(self, f.name, value)
            if not conforms(value, hints[f.name]):
                raise ValueError(f"setting {f.name!r} of {type(self).__name__} must be {_describe(hints[f.name])}, "
                                 f"got {value!r}")

    # --- reading, changing, writing ---
    def datasets(self) -> tuple[str, ...]:
        """The datasets the chapter reads (what its plan downloads): its ``dataset``."""
        return (self.dataset,)

    @classmethod
    def known(cls) -> list[str]:
        """The names of the settings this type declares, sorted."""
        return sorted(f.name for f in dataclasses.fields(cls))

    def replace(self, **changes) -> Settings:
        """A copy with ``changes``, each checked like :meth:`apply`'s."""
        return self.apply(changes)

    def apply(self, changes: Mapping | None) -> Settings:
        """A copy with ``changes`` (a notebook's ``SETTINGS``: ``{"epochs": 5, "p": 16}``); an unknown name is an
        error naming the known ones, a value of the wrong type an error naming the type."""
        if changes is None:
            return self
        if not isinstance(changes, Mapping):
            raise ValueError(f"SETTINGS must be a dict of settings or None, got {changes!r}")  # noqa: TRY004
        unknown = sorted(set(changes) - set(self.known()))
        if unknown:
            raise ValueError(f"unknown setting(s) {unknown} for chapter {self.chapter!r} ({type(self).__name__}); "
                             f"known: {', '.join(self.known())}")
        return dataclasses.replace(self, **changes)

    def to_dict(self) -> dict:
        """The settings as plain JSON data (what a run file stores)."""
        return {f.name: thaw(getattr(self, f.name)) for f in dataclasses.fields(self)}

    def trained(self) -> dict:
        """The settings that decide what a run trains, as plain JSON data (:func:`trained`)."""
        return trained(self.to_dict())

    def digest(self) -> str:
        """The SHA-256 of the settings as sorted JSON (hex)."""
        import hashlib

        return hashlib.sha256(json.dumps(self.to_dict(), sort_keys=True).encode()).hexdigest()

    def __hash__(self):
        return hash(self.digest())

    # --- read-only dict access, while code moves to attributes (see the module docstring) ---
    def __getitem__(self, key: str):
        if key not in self.known():
            raise KeyError(f"no setting {key!r} in {type(self).__name__}; known: {', '.join(self.known())}")
        return getattr(self, key)

    def get(self, key: str, default=None):
        """``self[key]``: a declared setting's value (its type's default when the profile leaves it); an undeclared
        ``key`` is a ``KeyError``, never ``default``."""
        return self[key]

    def __contains__(self, key) -> bool:
        return key in self.known()

    def keys(self):
        return self.known()

    def items(self):
        return [(k, getattr(self, k)) for k in self.known()]

    def __iter__(self):
        return iter(self.known())

    def __len__(self):
        return len(self.known())


@dataclasses.dataclass(frozen=True, kw_only=True)
class FoundationsSettings(Settings):
    """Chapter 1: a triplet loss, closed set then zero-shot."""

    margin: float = 0.2  # the triplet loss's margin


@dataclasses.dataclass(frozen=True, kw_only=True)
class DCDLSettings(Settings):
    """Chapter 3 (Roy et al.): Tables 1/4, 2 and 3 and each row's searched rate and length."""

    locals: tuple[str, ...] = ("trip",)  # keys of dcdl.LOCAL_LOSSES
    terms: tuple[str, ...] = ("L", "W")  # keys of dcdl.TERMS
    noise: tuple[Noise, ...] = (None,)  # Tables 1/4's label-noise columns
    alone_noise: tuple[Noise, ...] = ()  # Table 2's (each term alone)
    control_noise: tuple[Noise, ...] = ()  # the noise columns of dcdl.CONTROLS (Tables 1/4's rows)
    lambdas: tuple[float, ...] = ()  # Table 3's weights
    held_out_faces: int | None = None  # faces of the training split the searches hold out (with search_lrs)


@dataclasses.dataclass(frozen=True, kw_only=True)
class ECAMLSettings(Settings):
    """Chapter 6 (Chen & Deng): Tables 4/5 with and without EC, and the lambda, dropout and size ablations."""

    locals: tuple[str, ...] = ("triplet", "npair", "binomial")  # keys of ecaml.LOCALS
    local_options: Mapping = dataclasses.field(default_factory=Frozen)  # {local: {option: value}}
    ablation_loss: str = "triplet"
    lambdas: tuple[float, ...] = ()  # Table 1's weights
    dropouts: tuple[float, ...] = ()  # Table 3's
    dims: tuple[int, ...] = ()  # Table 2's
    ec_variants: tuple[str, ...] = ("paper",)  # "paper" and/or "released"
    pretrained_start: Mapping | None = None  # the released code's softmax start (test bed I)
    held_out: int | None = None  # seen classes held out for EC's weight (None: no search)
    lambda_ladder: tuple[float, ...] | None = None  # ... and its walk


@dataclasses.dataclass(frozen=True, kw_only=True)
class CBSwRSettings(Settings):
    """Chapter 4 (Nguyen et al.): unsupervised, on images and their views. ``k`` here is the number of clusters K
    (section 4), not samples per class: CBSwR draws no P x K batches."""

    k: int | None = 32  # clusters K
    batch_size: int = 64  # images a batch (each with its view)
    max_shift: int = 1  # the view: the image shifted by up to this many pixels
    methods: tuple[str, ...] = ("SME", "only L_rim", "CBS", "CBSwR")  # Tables 1-2's rows
    ks: tuple[int, ...] = ()  # Table 4's other K
    heads: tuple[str, ...] = ()  # the cluster heads CBS also runs with (clustering.HEADS)
    head_candidates: tuple[str, ...] | None = None  # the heads the search chooses among (None: the linear head)
    held_out: int | None = None  # seen classes held out for that search
    # the method's own settings (clustering.make_objective), at the paper's values unless a run changes them
    tau: float = 0.1  # the temperature of eq. 6-7 (SME's too)
    head: str = "linear"  # the cluster head (clustering.HEADS)
    head_tau: float = 0.1  # the cosine head's temperature
    pull: str = "both"  # what the metric loss pulls: "both", or "detached" centroids as released
    detach_centroids: bool = False
    code_variant: bool = False  # RIM's entropies divided by log K, as the released code
    self_similarity: bool = False  # SME's denominator with each image's own similarity
    gamma: float | None = None  # CBSwR's reconstruction weight (None: the paper's, clustering.GAMMA)
    tau_ladder: tuple[float, ...] = ()  # the search's ladder of tau (SME, CBS; clustering.KNOBS)
    gamma_ladder: tuple[float, ...] = ()  # ... and of gamma (CBSwR, whose gamma = 0 is CBS)


@dataclasses.dataclass(frozen=True, kw_only=True)
class EPSSettings(Settings):
    """Chapter 5 (Levi et al.): Table 2, Fig. 3b's positives per class, Table 3's superclasses, even/odd."""

    losses: tuple[str, ...] = ("triplet", "margin", "ms")
    loss_options: Mapping = dataclasses.field(default_factory=Frozen)  # {loss: {option: value}}, shared by both arms
    loss_variants: Mapping = dataclasses.field(default_factory=Frozen)  # {loss: [options, ...]} of extra rows
    knob_candidates: Mapping | None = None  # {loss: {knob: [values]}} searched per arm (None: no search)
    held_out: int | None = None  # seen classes held out for that search
    all_positives: tuple[str, ...] = ()  # losses also run with every positive pair
    nmi_plus_factor: int | None = None  # NMI+'s clusters per unseen class (None: the paper's)
    positives_per_class: tuple[int, ...] = ()  # Fig. 3b's
    positives_batches: int | None = None  # batches a Fig. 3b epoch
    positives_images: int | None = None  # images a Fig. 3b batch (None: p x k)
    superclasses: Mapping | None = None  # Table 3's dataset, options and batches (None: not run)
    superclass_positives: tuple[int, ...] = ()  # Table 3's Dist-Margin at these k, as many images a batch
    even_odd_dataset: str = "digits"
    even_odd_options: Mapping = dataclasses.field(default_factory=Frozen)
    even_odd_epochs: int = 20
    even_odd_k: int = 32
    even_odd_replicates: int = 1  # Table 1's arms trained this many times a seed (other starts), R@1 averaged
    even_odd_search_epochs: int | None = None  # Table 1's arms' search: checkpoints up to this length (with search_lrs)
    subcluster_noise: tuple[Noise, ...] = ()

    def datasets(self) -> tuple[str, ...]:
        """The chapter's dataset and even/odd's."""
        return tuple(dict.fromkeys((self.dataset, self.even_odd_dataset)))


@dataclasses.dataclass(frozen=True, kw_only=True)
class NoiseSettings(Settings):
    """Chapter 7 (Le & Odobez): three arms against the noise rate, with their (1 - p) toplines."""

    rates: tuple[float, ...] = (0.0, 0.2, 0.4, 0.6)  # symmetric noise rates p
    skew_rate: float = 0.4  # the rate the skew of mining is measured at
    held_out: int | None = None  # seen classes held out for the searches (with search_lrs)
    beta_candidates: tuple[float, ...] | None = None  # the marginal loss's beta: its search's ladder
    recipes: Mapping | None = None  # {name: overrides} the two triplet arms also train under
    checkpoint_steps: tuple[int, ...] | None = None  # R@1 of the two triplet arms at these steps
    checkpoint_rates: tuple[float, ...] | None = None


@dataclasses.dataclass(frozen=True, kw_only=True)
class BenchSettings(Settings):
    """Chapter 8: every method on one bench, each row at its best shot by the one search (bench.best_shots)."""

    methods: tuple[str, ...] | None = None  # names of bench.METHODS (None: all)
    rates: tuple[float, ...] = (0.0, 0.4)  # symmetric noise rates, with their toplines
    held_out: int = 2  # seen classes held out for the search
    unsup_epochs: int = 3  # the unsupervised methods' own budget
    unsup_batch_size: int = 64
    unsup_lr: float = 1e-3
    unsup_search_lengths: tuple[int, ...] = ()  # their search's lengths (passes over the images), as search_lengths
    unsup_search_every: int = 1
    max_shift: int = 1


#: Each chapter's settings type.
TYPES = {"foundations": FoundationsSettings, "dcdl": DCDLSettings, "ecaml": ECAMLSettings, "cbswr": CBSwRSettings,
         "eps": EPSSettings, "noise_guarantees": NoiseSettings, "bench": BenchSettings}
