"""One composable objective for every method of the course: a local loss of the zoo, with its positive and
negative strategies (easy positives included), plus any of the class-wise terms (the MMD and Sinkhorn
discrepancies of DCDL, ECAML's energy confusion), as a sum of named, weighted terms:

    loss = objective("multi_similarity", positives="easy", terms={"sinkhorn": 0.5, "energy_confusion": 0.1})
    loss(z, y, batch)        # what train.fit calls: the sum of the terms
    loss.parts(z, y, batch)  # {"multi_similarity": ..., "sinkhorn": ..., "energy_confusion": ...}, unweighted

The value is exactly  L_local(z, y) + sum_t w_t T_t(z, y)  (DCDL eq. 5, ECAML eq. 7 and 11, and their combinations,
which no paper ran). Each term keeps the reduction of its own definition: the local losses theirs (see
:mod:`dml_tutorial.losses`), the discrepancies a sum over the batch's classes (DCDL eq. 1-2), energy confusion a
mean over ordered class pairs of eq. 11 (log EC) on the embedding layer only, as ECAML's preset does. The paper
presets, :func:`dml_tutorial.dcdl.dcdl_loss`, :func:`dml_tutorial.ecaml.ecaml_loss` and
:func:`dml_tutorial.eps.eps_loss`, are objectives with the papers' settings.
"""

from __future__ import annotations

from functools import partial

import numpy as np
import torch

from . import losses
from .discrepancy import DCDL_TERMS, classwise_discrepancy
from .regularizers import embedding_layer_only, energy_confusion

#: The local losses, by name, with the options every method of the course can vary (``positives``, and
#: ``negatives`` where the loss samples them); their other parameters are passed to :func:`objective` as ``options``.
LOCAL = {
    "triplet": losses.triplet_loss,
    "margin": losses.margin_loss,
    "contrastive": losses.contrastive_loss,
    "npairs": losses.npairs_loss,
    "angular": losses.angular_loss,
    "angular_npairs": losses.angular_npairs_loss,
    "binomial": losses.binomial_deviance_loss,
    "multi_similarity": losses.multi_similarity_loss,
}
#: The class-wise discrepancy terms, by name, and the DCDL term (:data:`dml_tutorial.dcdl.TERMS`, one home for their
#: settings) each one is: L^W (converged Sinkhorn, epsilon = 2.5e-3) and its GeomLoss-defaults reading, L^L and L^G
#: at the paper's sigma = 0.05 and at the median bandwidth.
DISCREPANCIES = {"sinkhorn": "W", "sinkhorn_geomloss": "W-GeomLoss", "mmd": "L", "mmd_median": "L-median",
                 "mmd_gaussian": "G", "mmd_gaussian_median": "G-median"}
#: Every class-wise term: the discrepancies and ECAML's energy confusion (eq. 11, mean over class pairs).
TERMS = {**{name: partial(classwise_discrepancy, **DCDL_TERMS[term]) for name, term in DISCREPANCIES.items()},
         "energy_confusion": partial(energy_confusion, log=True, reduction="mean")}
#: Terms computed on the embedding layer alone (ECAML: EC reaches the embedding layer, not the trunk).
EMBEDDING_LAYER_ONLY = {"energy_confusion"}


class Objective:
    """A weighted sum of named terms; see the module docstring. Call it as ``loss(z, y)`` or, when a term needs
    the model (energy confusion on the embedding layer), as ``loss(z, y, batch)`` with ``batch.model``.

    ``local_fn(z, y)`` is the local loss (``None``: none), ``weights`` maps term names to weights, ``term_fns`` the
    names to functions ``f(z, y)`` (default :data:`TERMS`) and ``layer_only`` the terms computed on the embedding
    layer alone (default :data:`EMBEDDING_LAYER_ONLY`): the paper presets pass their own. ``layer_normalize``: whether
    those terms see the embedding layer's output L2-normalised (``None``: as the model's own output is)."""

    def __init__(self, local: str, local_fn, weights: dict, name: str, term_fns: dict | None = None,
                 layer_only=None, layer_normalize: bool | None = None):
        self.local, self.local_fn, self.weights, self.__name__ = local, local_fn, dict(weights), name
        self.term_fns = TERMS if term_fns is None else term_fns
        self.layer_only = EMBEDDING_LAYER_ONLY if layer_only is None else set(layer_only)
        self.layer_normalize = layer_normalize

    def parts(self, z, y, batch=None, **local_options) -> dict:
        """Every term's unweighted value: the local loss under its name (``local_options``, e.g. a sampling
        ``generator``, go to it), then each class-wise term."""
        out = {self.local: self.local_fn(z, y, **local_options)} if self.local_fn is not None else {}
        for term, weight in self.weights.items():
            if weight == 0:
                continue
            if term in self.layer_only:
                if batch is None or getattr(batch, "model", None) is None:
                    raise ValueError(f"the {term!r} term needs the model: call the objective as loss(z, y, batch)")
                out[term] = self.term_fns[term](embedding_layer_only(batch.model, self.layer_normalize), y)
            else:
                out[term] = self.term_fns[term](z, y)
        return out

    def __call__(self, z, y, batch=None, **local_options) -> torch.Tensor:
        parts = self.parts(z, y, batch, **local_options)
        value = z.sum() * 0.0  # a zero that keeps the graph when every weight is 0
        for term, part in parts.items():
            value = value + self.weights.get(term, 1.0) * part
        return value

    def describe(self) -> dict:
        """The objective as data: its name; the local loss's function with its parameters; each term's weight,
        function and parameters; which terms read the embedding layer alone, and how. What a run's cache key holds
        (:func:`dml_tutorial.spec.as_data`), so that a changed parameter (a triplet's margin, the sigma of L^L) is
        another objective."""
        return {"name": self.__name__, "local": self.local, "local_fn": _function_data(self.local_fn),
                "terms": {t: {"weight": w, "fn": _function_data(self.term_fns.get(t))}
                          for t, w in sorted(self.weights.items())},
                "layer_only": sorted(self.layer_only), "layer_normalize": self.layer_normalize}

    def __repr__(self):
        return f"objective({self.__name__})"


def _function_data(fn):
    """A loss or term function as data: a ``functools.partial`` as its function, arguments and keywords (nested
    partials too), a function as ``module.name``, anything else (a loss module) by its ``repr``."""
    if fn is None:
        return None
    if isinstance(fn, partial):
        return {"function": _function_data(fn.func), "args": [_function_data(a) if callable(a) else a
                                                              for a in fn.args],
                "keywords": {k: _function_data(v) if callable(v) else v for k, v in sorted(fn.keywords.items())}}
    if hasattr(fn, "__module__") and hasattr(fn, "__qualname__"):
        return f"{fn.__module__}.{fn.__qualname__}"
    return repr(fn)


def objective(local: str | None = "triplet", *, positives: str | None = None, negatives: str | None = None,
              terms: dict | None = None, name: str | None = None, **options) -> Objective:
    """``local`` (a key of :data:`LOCAL`, or ``None`` for class-wise terms alone) with ``positives`` /
    ``negatives`` (the loss's own default when ``None``) and its ``options``, plus ``terms`` (``{name in
    :data:`TERMS`: weight}``). Unknown names, negative weights and strategies a loss does not sample raise
    ``ValueError`` here, not at the first batch."""
    terms = dict(terms or {})
    if local is not None and local not in LOCAL:
        raise ValueError(f"unknown local loss {local!r}; choose one of {sorted(LOCAL)} or None")
    unknown = sorted(set(terms) - set(TERMS))
    if unknown:
        raise ValueError(f"unknown term(s) {unknown}; choose among {sorted(TERMS)}")
    if any(w < 0 for w in terms.values()):
        raise ValueError(f"term weights must be non-negative, got {terms}")
    if local is None and not any(terms.values()):
        raise ValueError("an objective needs a local loss or a class-wise term with a positive weight")
    local_fn = None
    if local is not None:
        import inspect

        accepted = inspect.signature(LOCAL[local]).parameters
        chosen = {k: v for k, v in (("positives", positives), ("negatives", negatives)) if v is not None}
        for key in chosen:
            if key not in accepted:
                raise ValueError(f"the {local} loss takes no {key!r} strategy")
        local_fn = partial(LOCAL[local], **chosen, **options)
    label = name or " + ".join(([f"{local}" + (f" ({positives} positives)" if positives else "")] if local else [])
                               + [f"{w:g} {t}" for t, w in terms.items() if w])
    return Objective(local or "none", local_fn, terms, label)


def term_pulls(loss: Objective, model: torch.nn.Module, x: torch.Tensor, y: torch.Tensor) -> dict:
    """Each term of ``loss`` on one batch, as it pulls on the network: ``{term: {"value": T_t, "grad":
    ||d(w_t T_t)/d W||}}`` with T_t unweighted and W the parameters of ``model.embedding``, the one layer every
    term reaches (a term on the embedding layer only, such as ECAML's EC, reaches nothing else; the others also
    move the layers below). The model is put in eval mode (no dropout) and gradients are on even when called under
    ``torch.no_grad`` (as ``train.fit``'s ``evaluate`` is); the parameters' ``.grad``, the model's mode and the
    random-number state are left as they were."""
    from types import SimpleNamespace

    params = [p for p in model.embedding.parameters() if p.requires_grad]
    was_training = model.training
    model.eval()
    cuda = [x.device.index or 0] if x.device.type == "cuda" else []
    try:  # fork_rng: a loss that samples (random semi-hard negatives) leaves the training's random stream alone
        with torch.enable_grad(), torch.random.fork_rng(devices=cuda):
            parts = loss.parts(model(x), y, SimpleNamespace(x=x, indices=None, model=model))
            out = {}
            for term, part in parts.items():
                weighted = loss.weights.get(term, 1.0) * part
                norm = 0.0
                if weighted.requires_grad:  # a term with no input from the network (e.g. no pairs) pulls nothing
                    grads = torch.autograd.grad(weighted, params, retain_graph=True, allow_unused=True)
                    norm = float(torch.sqrt(sum(((g.float() ** 2).sum() for g in grads if g is not None),
                                                torch.zeros(()))))
                out[term] = {"value": float(part.detach()), "grad": norm}
    finally:
        model.train(was_training)
    return out


def pull_share(runs, term: str, other: str) -> np.ndarray:
    """``[runs, epochs]``: ``term``'s share of two weighted pulls, ``|grad term| / (|grad term| + |grad other|)``,
    from histories recorded with curves (the ``"|grad| <term>"`` entries of :func:`term_pulls`); nan in an epoch
    where neither pulls."""
    pull = np.array([r.history[f"|grad| {term}"] for r in runs], dtype=float)
    both = pull + np.array([r.history[f"|grad| {other}"] for r in runs], dtype=float)
    return np.where(both > 0, pull / np.where(both > 0, both, 1.0), np.nan)
