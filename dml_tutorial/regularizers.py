"""The Energy Confusion (EC) regulariser of ECAML (Chen & Deng, *Energy Confused Adversarial Metric Learning for
Zero-Shot Image Retrieval and Clustering*).

EC pulls the embeddings of *different* classes towards each other, against the metric loss, so that the network
does not over-fit the seen classes (section 4.1):

    L_ec(X_I, X_J) = E ||x_I - x_J||^2                          (eq. 3: squared Euclidean, mean over all pairs)
    L = L_m + lambda * sum_{I != J} L_ec(X_I, X_J)              (eq. 7)
    L = L_m + lambda * sum_{I != J} log(1 + L_ec(X_I, X_J))     (eq. 11)

The paper applies EC to the embedding (fully connected) layer only ("the overfitting mainly appears at the fc
layer"): :func:`embedding_layer_only` recomputes the embeddings of the same forward pass from the embedding layer's
input, detached, so that the EC gradient reaches the embedding layer and not the backbone.

The authors' released Caffe code (chenbinghui1/ECAML, ``src/inner_product_layer.cu``, the ``bier_init`` branch
with ``lamda: 0.5`` in ``examples/car/train_confusion.prototxt``) also adds a term the paper does not mention,
:func:`unit_norm_rows`, which pulls every row of the embedding layer's weight matrix towards unit norm, and computes
EC itself differently (:func:`released_energy_confusion`: random partners per anchor, one log of a sum).
"""

from __future__ import annotations

import torch

from ._checks import check_choice, check_embeddings
from .distances import pairwise_sq_distances


def class_pair_energies(embeddings, labels) -> tuple[torch.Tensor, torch.Tensor]:
    """``(L, classes)``: L[I, J] = mean over x_i of class I and x_j of class J of ||x_i - x_j||^2 (eq. 3) for
    every pair of classes present, from one distance matrix: L = W D^2 W^T with W the per-class averaging matrix."""
    z, y = check_embeddings(embeddings, labels)
    classes = torch.unique(y)
    w = (y[None, :] == classes[:, None]).to(z.dtype)
    w = w / w.sum(1, keepdim=True)
    return w @ pairwise_sq_distances(z) @ w.T, classes


def energy_decomposition(embeddings, labels) -> dict:
    """What the pair energy L[I, J] of :func:`class_pair_energies` is made of (expand the square around the class
    means mu_I, mu_J):

        L[I, J] = ||mu_I - mu_J||^2 + tr S_I + tr S_J,

    with S_I the class's covariance (the biased one: mean over its samples of (x - mu_I)(x - mu_I)^T), so tr S_I is
    the mean squared distance of class I's samples to their mean. Returns ``{"between": [K, K] squared distances of
    the means, "within": [K] traces, "classes": [K]}``. Minimising EC (it is added to the loss, ECAML eq. 7 and 11)
    therefore pulls the class means together *and* shrinks every class's spread. For unit-norm samples
    tr S_I = 1 - ||mu_I||^2 and the sum is 2 - 2 mu_I . mu_J: on the sphere EC sees the class means only."""
    z, y = check_embeddings(embeddings, labels)
    classes = torch.unique(y)
    members = y[None, :] == classes[:, None]
    w = members.to(z.dtype) / members.sum(1, keepdim=True)
    means = w @ z
    within = (w * pairwise_sq_distances(means, z)).sum(1)  # mean over the class of ||x - mu_I||^2 = tr S_I
    return {"between": pairwise_sq_distances(means), "within": within, "classes": classes}


def energy_confusion(embeddings, labels, num_pairs: int | None = None, log: bool = False,
                     generator: torch.Generator | None = None, reduction: str = "sum") -> torch.Tensor:
    """The EC term: the sum of L_ec(X_I, X_J) over all ordered pairs of distinct classes of the batch (eq. 7), or
    of log(1 + L_ec) with ``log=True`` (eq. 11). ``num_pairs``: that many ordered class pairs drawn uniformly at
    random (with replacement) instead of all of them. ``reduction="mean"`` averages over the pairs instead of
    summing, so that lambda does not grow with the number of classes per batch (the scale of the authors' code,
    whose loss is lambda x one log-energy; our local losses are means too). A batch with fewer than two classes
    gives a zero term that keeps its gradient graph."""
    check_choice(reduction, ("sum", "mean"), "reduction")
    if num_pairs is not None and int(num_pairs) < 1:
        raise ValueError(f"num_pairs must be a positive integer or None, got {num_pairs}")
    energies, classes = class_pair_energies(embeddings, labels)
    if len(classes) < 2:
        return energies.sum() * 0.0
    terms = torch.log1p(energies) if log else energies
    off_diagonal = ~torch.eye(len(classes), dtype=torch.bool, device=terms.device)
    pairs = terms[off_diagonal]  # K (K - 1) ordered pairs
    if num_pairs is not None:
        pick = torch.randint(len(pairs), (int(num_pairs),), generator=generator,
                             device=generator.device if generator is not None else "cpu")
        pairs = pairs[pick.to(pairs.device)]
    return pairs.mean() if reduction == "mean" else pairs.sum()


def released_partners(n: int, partners: int = 10, generator: torch.Generator | None = None) -> torch.Tensor:
    """The released EC layer's pairs as a boolean [n, n] matrix: row i < n - 2 ``partners`` holds ``partners``
    columns drawn uniformly without replacement from i + 2, ..., n - 1; later rows hold none."""
    if int(partners) < 1:
        raise ValueError(f"partners must be a positive integer, got {partners}")
    n, partners = int(n), int(partners)
    flags = torch.zeros(n, n, dtype=torch.bool)
    anchors = max(n - 2 * partners, 0)
    if anchors == 0:
        return flags
    i = torch.arange(n)
    # a uniform random subset of {i + 2, ..., n - 1}: the `partners` smallest of random scores there
    device = generator.device if generator is not None else "cpu"
    scores = torch.rand(anchors, n, generator=generator, device=device).cpu()
    scores = scores.masked_fill(i[None, :] < i[:anchors, None] + 2, float("inf"))
    flags[i[:anchors, None], scores.argsort(dim=1)[:, :partners]] = True
    return flags


def released_energy_confusion(embeddings, labels, partners: int = 10,
                               generator: torch.Generator | None = None) -> torch.Tensor:
    """EC as the authors' Caffe layer computes it (chenbinghui1/ECAML, ``src/energy_confusion.cpp``), not as the
    paper prints it: ``log E`` with

        E = sum over flagged pairs (i, j) of ||z_i - z_j||^2 / (2 w_ij),

    where every anchor i < n - 2 ``partners`` flags ``partners`` partners j drawn without replacement from
    i + 2, ..., n - 1 (the layer's ``random_shuffle`` from i + 2, ``random_num: 10``), and w_ij is the number of
    same-class pairs i < j of the whole batch when y_i = y_j, of different-class pairs otherwise. Same-class
    partners are not excluded (in pair-ordered batches skipping i + 1 makes them rare). The layer's backward
    divides the gradient of E by E ("for log(E)"), which is the gradient of log E. The sum over flagged pairs is
    a sum, not a mean. A batch with no flagged pair, or whose flagged pairs coincide, gives a zero term that keeps
    its gradient graph (the layer would divide by zero)."""
    z, y = check_embeddings(embeddings, labels)
    flags = released_partners(len(y), partners, generator).to(z.device)
    if not flags.any():
        return z.sum() * 0.0
    i = torch.arange(len(y), device=z.device)
    same = y[:, None] == y[None, :]
    upper = i[None, :] > i[:, None]
    w_pos, w_neg = ((pairs & upper).sum().clamp_min(1).to(z.dtype) for pairs in (same, ~same))
    weight = torch.where(same, 1.0 / w_pos, 1.0 / w_neg) * flags
    energy = (0.5 * pairwise_sq_distances(z) * weight).sum()
    return torch.where(energy > 0, torch.log(energy.clamp_min(torch.finfo(z.dtype).tiny)), z.sum() * 0.0)


def embedding_layer_only(model, normalize: bool | None = None) -> torch.Tensor:
    """The embeddings of ``model``'s latest forward pass recomputed from the embedding layer's input with the
    backbone detached: gradients of a term computed on them reach ``model.embedding`` and nothing before it (ECAML
    section 4.1; the authors' code does the same with ``F.linear(features.detach(), fc.weight, fc.bias)``). The
    input is the one that pass stored (``model.hidden``, dropout mask included), so the trunk does not run twice:
    batch-norm statistics move once per step and EC sees the same dropout mask as the metric loss. ``model`` is an
    :class:`~dml_tutorial.models.Embedder` that has just been called."""
    hidden = getattr(model, "hidden", None)
    if not hasattr(model, "embedding") or hidden is None:
        raise ValueError("embedding_layer_only needs a dml_tutorial.models.Embedder that has just embedded the batch "
                         "(it reads the embedding layer's input of that forward pass, model.hidden)")
    with torch.autocast(hidden.device.type, enabled=False):
        z = model.embedding(hidden.detach())
    use_norm = model.normalize if normalize is None else normalize
    return torch.nn.functional.normalize(z, dim=1) if use_norm else z


def unit_norm_rows(weight: torch.Tensor) -> torch.Tensor:
    """(1/N) sum_i (||w_i||^2 - 1)^2 over the N rows w_i of ``weight`` [N, K] (one row per embedding dimension):
    the released code's weight regulariser, whose gradient its CUDA kernel adds directly, 4 (lamda/N)
    (||w_i||^2 - 1) w_i; multiply by that lamda (0.5 in the code). Zero when every row has unit norm."""
    if weight.dim() != 2 or weight.shape[0] == 0:
        raise ValueError(f"expected a weight matrix [N, K] with N > 0, got shape {tuple(weight.shape)}")
    return ((weight.pow(2).sum(1) - 1.0) ** 2).mean()
