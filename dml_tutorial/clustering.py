"""Unsupervised deep metric learning with deep clustering (Nguyen et al., *Deep Metric Learning Meets Deep
Clustering: An Novel Unsupervised Approach for Feature Embedding*, BMVC 2020) and its baseline SME
(Ye et al. 2019, instance-wise softmax embedding).

No labels: each image I_i of a batch comes with an augmented view Î_i, and a clustering of the batch supplies
the pseudo-labels. With G the encoder (``model.features``), F the embedding module (``model.embedding`` + L2
normalisation), a softmax classifier over K clusters and a decoder D:

- :func:`rim_loss` -- eq. 1-3: R(theta) - lambda [H(Y) - H(Y|X)], entropies over the batch;
- :func:`centroid_representations` -- eq. 4: r_j, the mean encoder feature of the batch images in cluster j;
- :func:`reconstruction_loss` -- eq. 5: (1/m) sum_j sum_{i in X_j} ||I_i - D(r_j)||^2;
- :func:`center_softmax_loss` -- eq. 6-9, the metric loss on f_i, f̂_i and the centroid embeddings c_j = F(r_j);
- :class:`CBSwR` -- eq. 10: L = alpha L_m + beta L_rim + gamma L_rec, (0.9, 0.3, 0.01) by default;
- :func:`sme_loss` -- the SME baseline;
- :func:`train_unsupervised` -- the training loop (SGD with momentum 0.9, as in section 4.1).

Degenerate batches are defined, never NaN: an empty cluster has no centroid and takes no part in any sum; a
sample whose batch has no other non-empty cluster keeps only the pull toward its augmented view in eq. 6 (the
empty sum of eq. 6's denominator contributes nothing); K larger than the batch is allowed (most clusters are
then empty).
"""

from __future__ import annotations

import math
import sys
import time
from functools import partial

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from . import experiment, grids, metrics, models, search, tables, train
from ._checks import check_choice
from .data import ArrayDataset, input_shape
from .experiment import Run
from .spec import RunSpec
from .tables import Recorded

#: The weights of eq. 10, the temperature of eq. 6-7 and the number of clusters of section 4 (paper).
ALPHA, BETA, GAMMA, TAU, K = 0.9, 0.3, 0.01, 0.1, 32
#: The ablation of Tables 1-2: which terms of eq. 10 each model trains with (alpha, beta, gamma).
VARIANTS = {"only L_rim": (0.0, BETA, 0.0), "CBS": (ALPHA, BETA, 0.0), "CBSwR": (ALPHA, BETA, GAMMA)}
#: The cluster heads :class:`CBSwR` can use, from the embedding f to the K cluster logits:
#: ``linear``, ours (a linear layer, the paper's "softmax classifier"); ``released``, the released code's
#: (``models/dual_model.py``, ``get_cluster_block``: BatchNorm1d, Dropout(0.6), Linear, then the logits
#: L2-normalised); ``cosine``, unit-norm weights against the unit embedding over a temperature ``head_tau``; and
#: ``oracle``, the true classes of the batch as the clusters (the released code's commented-out
#: ``pred_cluster = targets``): an upper bound on what better clusters could give, never a method.
HEADS = ("linear", "released", "cosine", "oracle")


def _entropy(p: torch.Tensor) -> torch.Tensor:
    return -(p * torch.log(p.clamp(min=1e-12))).sum(-1)


def rim_entropies(logits: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """The two entropies of the RIM loss (eq. 2-3) for a batch's cluster logits, y_i = softmax(logits_i):
    H(Y), the entropy of the batch's mean assignment (log K when the clusters are used equally, 0 when one
    takes all), and H(Y|X), the mean over samples of each assignment's entropy (0 when every one is confident)."""
    y = logits.softmax(dim=1)
    return _entropy(y.mean(0)), _entropy(y).mean()


def rim_loss(logits: torch.Tensor, lam: float = 1.0, l2: float = 0.0, params=(), code_variant: bool = False):
    """Eq. 1-3: ``l2 * ||theta||^2 - lam * [H(mean_i y_i) - mean_i h(y_i)]`` with y_i = softmax(logits_i).

    Maximising the marginal entropy H(Y) balances the clusters; minimising the conditional entropy H(Y|X) makes each
    assignment confident. ``params`` are the classifier's (theta) for the l2 term. ``code_variant=True`` divides
    both entropies by log K, so each lies in [0, 1]: close to the authors' released code, which divides the
    marginal entropy by log K and the conditional one by log N."""
    h_marginal, h_conditional = rim_entropies(logits)
    if code_variant:
        h_marginal, h_conditional = h_marginal / np.log(logits.shape[1]), h_conditional / np.log(logits.shape[1])
    reg = sum((p ** 2).sum() for p in params) if l2 else 0.0
    return l2 * reg - lam * (h_marginal - h_conditional)


def centroid_representations(features: torch.Tensor, assignments: torch.Tensor, k: int):
    """Eq. 4: ``(r [k, d], present [k])`` with r_j the mean of ``features`` over the samples assigned to cluster j;
    rows of empty clusters are zero and ``present`` is False there."""
    counts = torch.bincount(assignments, minlength=k).to(features.dtype)
    sums = torch.zeros(k, features.shape[1], dtype=features.dtype, device=features.device)
    sums = sums.index_add(0, assignments, features)
    return sums / counts.clamp(min=1)[:, None], counts > 0


def reconstruction_loss(images: torch.Tensor, reconstructions: torch.Tensor, assignments: torch.Tensor,
                        pixels: str = "mean"):
    """Eq. 5, (1/m) sum_j sum_{i in X_j} ||I_i - D(r_j)||^2, with ``reconstructions`` = D(r) for every cluster: the
    squared error of each image against its cluster's reconstruction, averaged over the m images, and over the
    pixels with ``pixels="mean"`` (the released ``train.py``'s ``F.mse_loss``; the default, since the paper's
    gamma = 0.01 was set with it) or summed over them with ``pixels="sum"`` (eq. 5 as printed, which at
    3 x 224 x 224 is 150,528 times larger and lets gamma = 0.01 outweigh every other term)."""
    check_choice(pixels, ("mean", "sum"), "pixels")
    diff = images - reconstructions[assignments]
    per_image = diff.pow(2).flatten(1)
    return (per_image.mean(1) if pixels == "mean" else per_image.sum(1)).mean()


def center_softmax_loss(
    f: torch.Tensor,
    f_hat: torch.Tensor,
    centroids: torch.Tensor,
    present: torch.Tensor,
    assignments: torch.Tensor,
    tau: float = TAU,
) -> torch.Tensor:
    """Eq. 9, summed over the samples: for anchor f_i (unit norm) of cluster q, its
    augmented view f̂_i and the centroid embeddings c_k of the non-empty clusters::

        -log l(I_i, Î_i) = -f_i.f̂_i / tau + log sum_{k != q} exp(f_i.c_k / tau) (eq. 6)
        -log l(I_i, c_j) = -log(1 - softmax_k(f_i.c_k / tau)_j)               (eq. 7)
                           for every non-empty j != q

    Both are computed in log space (eq. 7 as logsumexp over k != j minus logsumexp over
    all k), so a confident softmax gives a large finite loss, not inf."""
    s = f @ centroids.T / tau
    s = s.masked_fill(~present[None, :], float("-inf"))
    own = F.one_hot(assignments, len(present)).bool()
    others = s.masked_fill(own, float("-inf"))
    has_other = (present[None, :] & ~own).any(1)
    pull = -(f * f_hat).sum(1) / tau
    push = torch.where(
        has_other, torch.logsumexp(others, dim=1), torch.zeros_like(pull)
    )
    log_all = torch.logsumexp(s, dim=1, keepdim=True)
    # log(1 - p_j) = logsumexp_{k != j} s_k - logsumexp_k s_k, for every j at once
    eye = torch.eye(len(present), dtype=torch.bool, device=f.device)
    without_j = torch.logsumexp(
        s[:, None, :].masked_fill(eye[None], float("-inf")), dim=2
    )
    log_one_minus = without_j - log_all
    terms = present[None, :] & ~own & has_other[:, None]
    eq7 = -(log_one_minus.masked_fill(~terms, 0.0)).sum(1)
    return (pull + push + eq7).sum()


def sme_loss(f: torch.Tensor, f_hat: torch.Tensor, tau: float = TAU,
             self_similarity: bool = True) -> torch.Tensor:
    """SME (Ye et al. 2019, eq. 2-5): every instance is its own class. With

        P(i | x̂_i) = exp(f_i.f̂_i / tau) / sum_k exp(f_k.f̂_i / tau)        (invariance to augmentation)
        P(i | x_j) = exp(f_i.f_j / tau) / sum_k exp(f_k.f_j / tau), j != i  (spreading instances out)

    the loss is -sum_i log P(i | x̂_i) - sum_i sum_{j != i} log(1 - P(i | x_j)), computed in log space (a sum
    over the batch; the callers divide by its size). The sums over k run over the whole batch, as the equations
    print them, so P(i | x_j)'s denominator holds x_j's similarity to itself, exp(1 / tau), which dwarfs the
    others at a small tau. ``self_similarity=False`` leaves k = j out of it, as Ye et al.'s and the CBSwR
    authors' released code do (``all_prob * diag_mat``, the diagonal zeroed)."""
    eye = torch.eye(len(f), dtype=torch.bool, device=f.device)
    logits_hat = f_hat @ f.T / tau                                  # [i, k] = f_k . f̂_i / tau
    invariance = torch.logsumexp(logits_hat, dim=1) - logits_hat.diagonal()
    logits = f @ f.T / tau                                          # [j, i] = f_i . f_j / tau (query x_j)
    if not self_similarity:
        logits = logits.masked_fill(eye, float("-inf"))
    without_i = torch.logsumexp(logits[:, None, :].masked_fill(eye[None], float("-inf")), dim=2)
    log_one_minus = without_i - torch.logsumexp(logits, dim=1, keepdim=True)
    # without self-similarity a batch of two has P(i | x_j) = 1: log(1 - P) = -inf, floored to stay finite
    log_one_minus = log_one_minus.clamp_min(math.log(torch.finfo(f.dtype).tiny))
    return invariance.sum() - log_one_minus.masked_fill(eye, 0.0).sum()


def make_decoder(feature_dim: int, image_shape, width: int = 64) -> nn.Sequential:
    """D: a linear map of the centroid representation to a ``width``-channel map of side s, then transposed
    convolutions (kernel 4, stride 2) that double the side up to the input size, each but the last followed by
    batch norm and ReLU (section 4.1); a linear output, since inputs may be normalised (ImageNet mean and std on
    the full profile's photographs) rather than in [0, 1]. ``image_shape`` is
    (C, H, W) with H = W = s 2^n (images) or (C, L) with L = s 2^n (1-D signals such as MNIST-1D), s <= 7."""
    c, *spatial = image_shape
    if len(spatial) == 2 and spatial[0] != spatial[1]:
        raise ValueError(f"the decoder needs square images, got {spatial[0]}x{spatial[1]}")
    side, steps = spatial[0], 0
    while side > 7 and side % 2 == 0:
        side, steps = side // 2, steps + 1
    if steps == 0 or side > 7:
        raise ValueError(f"input side {spatial[0]} cannot be reached by doubling from a side of 7 or less")
    deconv, norm = (nn.ConvTranspose2d, nn.BatchNorm2d) if len(spatial) == 2 else (nn.ConvTranspose1d, nn.BatchNorm1d)
    start = (width, side, side) if len(spatial) == 2 else (width, side)
    layers: list[nn.Module] = [nn.Linear(feature_dim, width * side ** len(spatial)), nn.Unflatten(1, start)]
    channels = width
    for step in range(steps):
        last = step == steps - 1
        out = c if last else max(channels // 2, 16)
        layers.append(deconv(channels, out, 4, stride=2, padding=1))
        if not last:
            layers += [norm(out), nn.ReLU()]
        channels = out
    return nn.Sequential(*layers)


class CBSwR(nn.Module):
    """The clustering module, the decoder and eq. 10 around an :class:`~dml_tutorial.models.Embedder` (G =
    ``model.features``, F = ``model.embedding`` + L2 normalisation). Call it on a batch of images and their
    augmented views; it returns the total loss and its parts.

    ``weights`` = (alpha, beta, gamma) of eq. 10 (:data:`VARIANTS` holds the ablation); ``detach_centroids=True``
    stops the metric loss's gradient through the centroids, as the released code does (the reconstruction still
    trains the encoder through them); ``code_variant`` is passed to :func:`rim_loss`. The paper gives neither
    lambda nor the l2 weight of eq. 1; ``lam=1`` and ``l2=1e-4`` are our choices. ``head`` is one of
    :data:`HEADS`. ``pull="detached"`` is the released code's pull (``loss.py``: ``pos = x . reordered_x.data``):
    each view is pulled toward the other view held fixed, half the gradient of eq. 6 taken through both views
    (``"both"``, ours)."""

    def __init__(self, model: nn.Module, feature_dim: int, dim: int, k: int = K, image_shape=None,
                 weights=VARIANTS["CBSwR"], tau: float = TAU, lam: float = 1.0, l2: float = 1e-4,
                 detach_centroids: bool = False, code_variant: bool = False, head: str = "linear",
                 head_tau: float = TAU, pull: str = "both"):
        super().__init__()
        if k < 2:
            raise ValueError(f"the clustering needs at least 2 clusters, got k={k}")
        check_choice(head, HEADS, "head")
        check_choice(pull, ("both", "detached"), "pull")
        self.model, self.k, self.weights, self.tau, self.lam, self.l2 = model, k, tuple(weights), tau, lam, l2
        self.detach_centroids, self.code_variant = detach_centroids, code_variant
        self.head, self.head_tau, self.pull = head, head_tau, pull
        linear = nn.Linear(dim, k, bias=head != "cosine")
        self.classifier = nn.Sequential(nn.BatchNorm1d(dim), nn.Dropout(0.6), linear) if head == "released" else linear
        self.decoder = make_decoder(feature_dim, image_shape) if weights[2] and image_shape is not None else None
        if weights[2] and self.decoder is None:
            raise ValueError("the reconstruction term (gamma > 0) needs the image_shape for its decoder")

    def embed(self, features):
        return F.normalize(self.model.embedding(features), dim=1)

    def logits(self, f: torch.Tensor) -> torch.Tensor:
        """The cluster logits of unit embeddings ``f`` under :attr:`head`."""
        if self.head == "cosine":
            return f @ F.normalize(self.classifier.weight, dim=1).T / self.head_tau
        out = self.classifier(f)
        return F.normalize(out, dim=1) if self.head == "released" else out

    def forward(self, x: torch.Tensor, x_hat: torch.Tensor, labels: torch.Tensor | None = None):
        alpha, beta, gamma = self.weights
        images = torch.cat([x, x_hat])
        with _mixed(self, images.device.type):
            features = self.model.features(images)
        features = features.float()
        f_all = self.embed(features)
        logits = self.logits(f_all)
        k = self.k
        if self.head == "oracle":  # the batch's classes, numbered 0..m-1, as its clusters (as many as it holds)
            if labels is None:
                raise ValueError("the oracle head needs the batch's labels: objective(x, x_hat, labels)")
            assign = torch.unique(labels, return_inverse=True)[1].repeat(2)
            k = max(k, int(assign.max()) + 1)
        else:
            assign = logits.argmax(1).detach()
        parts = {"rim": rim_loss(logits, self.lam, self.l2, self.classifier.parameters(), self.code_variant)}
        r, present = centroid_representations(features, assign, k)
        if alpha:
            c = self.embed(r.detach() if self.detach_centroids else r)
            f, f_hat = f_all.chunk(2)
            a, a_hat = assign.chunk(2)
            held = (f_hat.detach(), f.detach()) if self.pull == "detached" else (f_hat, f)
            parts["metric"] = (center_softmax_loss(f, held[0], c, present, a, self.tau)
                               + center_softmax_loss(f_hat, held[1], c, present, a_hat, self.tau)) / len(images)
        if gamma:  # decode the non-empty clusters only (empty ones would skew the decoder's batch norm)
            idx = present.nonzero().flatten()
            recon = images.new_zeros((k, *images.shape[1:])).index_copy(0, idx, self.decoder(r[idx]))
            parts["rec"] = reconstruction_loss(images, recon, assign)
        total = beta * parts["rim"] + alpha * parts.get("metric", 0.0) + gamma * parts.get("rec", 0.0)
        h_marginal, h_conditional = rim_entropies(logits.detach())
        diagnostics = {"clusters": int(present.sum()), "H(Y)": h_marginal.item(), "H(Y|X)": h_conditional.item()}
        if labels is not None:  # how well the batch's clusters follow the hidden classes (never used to train)
            diagnostics |= pair_counts(assign[:len(x)], labels)
        return total, {name: v.item() for name, v in parts.items()} | diagnostics


def pair_counts(clusters: torch.Tensor, classes: torch.Tensor) -> dict:
    """Counts over the unordered pairs of a batch (its images, not their views): ``pairs``, ``class pairs`` (same
    hidden class), ``cluster pairs`` (same cluster) and ``cluster pairs, same class`` (both). Their ratios, taken
    over an epoch's batches by :func:`pair_precision`, say whether the clusters follow the classes: NMI of a
    batch's clusters does not (a batch of 64 from 1,000 classes holds about 62 classes, and a random assignment to
    32 clusters already scores NMI 86)."""
    same_cluster = clusters[:, None] == clusters[None, :]
    same_class = classes[:, None] == classes[None, :]
    upper = torch.triu(torch.ones_like(same_cluster), diagonal=1)
    return {"pairs": int(upper.sum()), "class pairs": int((same_class & upper).sum()),
            "cluster pairs": int((same_cluster & upper).sum()),
            "cluster pairs, same class": int((same_cluster & same_class & upper).sum())}


def pair_precision(record: dict) -> tuple[float, float]:
    """(precision, chance) from a history record of :func:`pair_counts`' per-batch means: the share of same-cluster
    pairs that are same-class pairs, and the share of all pairs that are (what clusters drawn independently of
    the classes score in expectation). Precision is NaN for an epoch without a same-cluster pair."""
    precision = record["cluster pairs, same class"] / record["cluster pairs"] if record["cluster pairs"] else math.nan
    return precision, record["class pairs"] / record["pairs"]


#: The ablation's columns (Tables 1/2 and 5/6: Recall@K and NMI).
COLUMNS = ("R@1", "R@2", "R@4", "R@8", "NMI")


def ablation_table(ablation: dict, references: dict, kinds) -> dict:
    """The ablation's table (:data:`dml_tutorial.tables.CBSWR_ABLATION`), ``{row: {column: [one per seed]}}`` over
    :data:`COLUMNS`: each method's runs (``{method: [Run per seed]}``), then the reference rows of ``kinds`` from
    ``references`` (``{(kind, ""): [Run per seed]}``, :func:`dml_tutorial.experiment.references`)."""
    rows = {**ablation, **{kind: references[(kind, "")] for kind in kinds}}
    return {row: {c: [r.metrics[c] for r in runs] for c in COLUMNS} for row, runs in rows.items()}


def k_table(by_k: dict) -> dict:
    """Table 4's numbers, ``{"K = <k>": {"R@1" ... "R@8": [one per seed]}}``, from CBSwR's runs at each number of
    clusters (``{k: [Run per seed]}``), K ascending."""
    return {f"K = {k}": {c: [r.metrics[c] for r in by_k[k]] for c in COLUMNS[:4]} for k in sorted(by_k)}


def head_table(rows: dict, references: dict) -> dict:
    """The table of CBS with each cluster head, ``{row: {"R@1", "NMI"[, "pair precision", "chance"]: [one per
    seed]}}``: each row's runs (``{row: [Run]}``, SME first) with the last epoch's :func:`pair_precision` where the
    row clusters (SME has no clusters), then the reference rows, ``references`` (``{kind: {"R@1": [...], "NMI":
    [...]}}``, as the ablation's table holds them)."""
    table = {name: {c: [r.metrics[c] for r in runs] for c in ("R@1", "NMI")} for name, runs in rows.items()}
    for name, runs in rows.items():
        if "cluster pairs" in runs[0].history.records[-1]:
            last = [pair_precision(r.history.records[-1]) for r in runs]
            table[name] |= {"pair precision": [p for p, _ in last], "chance": [c for _, c in last]}
    return table | {kind: {c: measured[c] for c in ("R@1", "NMI")} for kind, measured in references.items()}


class SME(nn.Module):
    """The SME baseline as a module with the same call as :class:`CBSwR`; by default without each sample's
    similarity to itself in the spreading term's denominator, as Ye et al.'s and the CBSwR authors' released codes
    compute it (``self_similarity=True``: the sums as the equations print them, :func:`sme_loss`)."""

    def __init__(self, model: nn.Module, tau: float = TAU, self_similarity: bool = False):
        super().__init__()
        self.model, self.tau, self.self_similarity = model, tau, self_similarity

    def forward(self, x, x_hat, labels=None):
        with _mixed(self, x.device.type):
            z = self.model(torch.cat([x, x_hat]))
        f, f_hat = z.float().chunk(2)
        loss = sme_loss(f, f_hat, self.tau, self.self_similarity) / len(f)
        return loss, {"sme": loss.item()}


def random_shift(x: torch.Tensor, max_shift: int = 1, generator: torch.Generator | None = None) -> torch.Tensor:
    """Each image (``[N, C, H, W]``) or signal (``[N, C, L]``) moved by up to ``max_shift`` positions along each
    spatial axis, with zero padding: the small-input stand-in for the paper's random crops. Flips are left out
    (digits are not mirror-symmetric)."""
    n, _, *spatial = x.shape
    padded = F.pad(x, (max_shift,) * (2 * len(spatial)))
    offsets = torch.randint(0, 2 * max_shift + 1, (n, len(spatial)), generator=generator).tolist()
    crops = [padded[(i, slice(None), *(slice(o, o + size) for o, size in zip(offsets[i], spatial)))] for i in range(n)]
    return torch.stack(crops)


def train_unsupervised(objective: nn.Module, data, *, epochs: int, batch_size: int = 64, lr: float = 1e-2,
                       momentum: float = 0.9, weight_decay: float = 0.0, augment=random_shift, device="auto",
                       seed: int = 0, progress: bool = True, description: str = "unsupervised", num_workers: int = 0,
                       evaluate=None, eval_every: int = 1, checkpoint=None, resume: bool = True, amp: bool = False,
                       checkpoint_every: float = 0.0):
    """Train ``objective`` (:class:`CBSwR` or :class:`SME`, which holds the model) without labels: shuffled batches
    of ``batch_size`` images, each with its augmented view (``augment`` on the device for in-memory data; a second
    draw of the dataset's random transform for images on disk, decoded by ``num_workers`` loader processes), SGD
    with momentum, in the loop every training shares (:func:`dml_tutorial.train.epochs_of`). Returns a
    :class:`~dml_tutorial.train.History` with the loss, its parts and seconds per epoch; ``evaluate(model) -> dict``
    (the objective's model, in eval mode) adds its entries after every ``eval_every`` epochs and after the last, as
    :func:`dml_tutorial.train.fit` does; with ``checkpoint`` the training is saved there (the order's and the
    views' generator too; after the last epoch and every ``checkpoint_every`` seconds or more, 0: every epoch) and
    resumes from it; ``amp``: the trunk under mixed precision, as in
    :func:`~dml_tutorial.train.fit`, the embedding layer and the losses in float32."""
    dev = train.resolve_device(device)
    train.seed_everything(seed)
    objective.to(dev).train()
    opt = torch.optim.SGD(objective.parameters(), lr=lr, momentum=momentum, weight_decay=weight_decay)
    amp_dtype = train.amp_precision(dev)
    scaler = torch.amp.GradScaler(dev.type, enabled=amp and amp_dtype == torch.float16)
    objective.trunk_precision = amp_dtype if amp else None
    g = torch.Generator().manual_seed(seed)

    def epoch_steps(epoch):  # one pass over the data in batches of images and their views
        for x, x_hat, y in _pairs(data, batch_size, augment, g, dev, num_workers):
            loss, parts = objective(x, x_hat, y)  # y: for the diagnostics and the oracle head only
            train.step(loss, opt, scaler, epoch)
            yield {"loss": loss.item(), **parts}

    try:
        return train.epochs_of(objective, epoch_steps, epochs=epochs, optimizer=opt, scaler=scaler,
                               evaluate=evaluate, eval_model=objective.model, eval_every=eval_every,
                               checkpoint=checkpoint, resume=resume, checkpoint_every=checkpoint_every,
                               device=dev, progress=progress,
                               description=description, extra={"generator": train.GeneratorState(g)})
    finally:
        objective.trunk_precision = None


def _mixed(objective, device_type: str):
    """Autocast at the objective's ``trunk_precision`` while :func:`train_unsupervised` trains with ``amp``, else
    nothing: the objectives run their model's trunk in it, and what follows in float32 (as
    :class:`~dml_tutorial.models.Embedder` keeps its embedding layer)."""
    dtype = getattr(objective, "trunk_precision", None)
    return torch.autocast(device_type, dtype=dtype or torch.bfloat16, enabled=dtype is not None)


def _pairs(data, batch_size, augment, generator, device, num_workers=0):
    order = torch.randperm(len(data), generator=generator)
    if isinstance(data, ArrayDataset):
        for s in range(0, len(order) - 1, batch_size):
            idx = order[s:s + batch_size].numpy()
            y = torch.as_tensor(data.labels[idx], device=device)
            if hasattr(data, "training_batch"):  # images decoded once: two draws of the random crop and flip
                yield data.training_batch(idx, device=device), data.training_batch(idx, device=device), y
                continue
            x = data.batch(idx, device=device)
            yield x, augment(x, generator=generator), y
        return
    subset = torch.utils.data.Subset(data, order.tolist())
    views = [train.loader(subset, num_workers, batch_size=batch_size) for _ in range(2)]
    for (x, y), (x_hat, _) in zip(*views):  # two draws of the random transform: an image and its view
        yield x.to(device), x_hat.to(device), torch.as_tensor(y, device=device)


METHODS = ("SME", *VARIANTS)


def make_objective(method: str, model: nn.Module, in_shape, cfg: dict) -> nn.Module:
    """``SME`` or a :data:`VARIANTS` entry (``only L_rim``, ``CBS``, ``CBSwR``) around ``model``, with ``cfg``'s
    ``k`` (clusters), ``dim``, ``tau``, ``detach_centroids``, ``code_variant``, ``head``, ``head_tau`` and
    ``pull`` (see :class:`CBSwR`), CBSwR's ``gamma`` where set (its reconstruction weight; ``None``: the paper's);
    SME's ``self_similarity`` (:func:`sme_loss`; default False, as released)."""
    if method == "SME":
        return SME(model, cfg.get("tau", TAU), cfg.get("self_similarity", False))
    if method not in VARIANTS:
        raise ValueError(f"unknown method {method!r}; choose one of {', '.join(METHODS)}")
    weights = VARIANTS[method]
    if method == "CBSwR" and cfg.get("gamma") is not None:  # a searched reconstruction weight
        weights = (*weights[:2], cfg["gamma"])
    return CBSwR(model, model.embedding.in_features, cfg["dim"], k=cfg.get("k", K), image_shape=in_shape,
                 weights=weights, tau=cfg.get("tau", TAU), detach_centroids=cfg.get("detach_centroids", False),
                 code_variant=cfg.get("code_variant", False), head=cfg.get("head", "linear"),
                 head_tau=cfg.get("head_tau", TAU), pull=cfg.get("pull", "both"))


def train_and_retrieve(splits, method: str, cfg: dict, *, seed: int = 0, device="auto", progress: bool = False,
                       keep_objective: bool = False, score: bool = True, evaluate=None, checkpoint=None):
    """Section 4's protocol: train ``cfg["model"]`` with ``method`` on the training split's images (the seen
    classes; labels unused), then measure retrieval and clustering on the test split (the unseen classes):
    Recall@1/2/4/8 and NMI. ``cfg`` keys: model, dim, epochs, batch_size, lr, max_shift, k, ``start`` (a
    pretrained trunk, :func:`dml_tutorial.pretrain.load_start`) and those of :func:`make_objective`. Returns an :class:`~dml_tutorial.experiment.Run`; with ``keep_objective`` its ``state``
    holds the trained objective (model, cluster classifier, decoder) for pictures; ``score=False`` leaves the
    measuring to the caller (``Run.metrics`` holds only the seconds), as the bench does and a search's trial (scored
    at its checkpoints) needs; ``evaluate(model) ->
    dict`` goes into the history after every ``cfg["eval_every"]`` epochs (default 1) and after the last
    (:func:`train_unsupervised`, which also takes ``checkpoint``, where a disconnected training resumes, and
    ``cfg["amp"]``)."""
    from . import experiment, pretrain

    # a pretrained trunk (the papers' ImageNet start), read before the seed: building a missing one seeds and threads
    # its own training (experiment._train); the embedding layer stays the seed's
    trunk = pretrain.load_start(cfg["start"], seed=seed) if pretrain.applies(cfg) else None
    train.seed_everything(seed, threads=cfg.get("threads"))
    in_shape = input_shape(splits.train)
    model = models.from_settings(cfg, in_shape, dropout=0.0, normalize=True)
    if trunk is not None:
        experiment.load_init(model, trunk)
    objective = make_objective(method, model, in_shape, cfg)
    data = splits.train
    if cfg.get("data_on_device") and isinstance(data, ArrayDataset):  # the images held on the GPU once, as uint8
        data = data.to(train.resolve_device(device))
    start = time.perf_counter()
    history = train_unsupervised(objective, data, epochs=cfg["epochs"], batch_size=cfg["batch_size"],
                                 lr=cfg["lr"], augment=partial(random_shift, max_shift=cfg.get("max_shift", 1)),
                                 device=device, seed=seed, progress=progress, description=method,
                                 num_workers=cfg.get("workers", 0), evaluate=evaluate,
                                 eval_every=cfg.get("eval_every", 1), checkpoint=checkpoint,
                                 checkpoint_every=cfg.get("checkpoint_seconds", 0.0), amp=cfg.get("amp", False))
    seconds = time.perf_counter() - start
    z_test = train.embed(model, splits.test, num_workers=cfg.get("workers", 0))
    scores = metrics.evaluate(z_test, splits.test.labels, ks=(1, 2, 4, 8), seed=seed,
                              cluster_classes=cfg.get("cluster_classes"),
                              device=train.resolve_device(device)) if score else {}
    return Run({**scores, "seconds": seconds}, z_test, history, objective if keep_objective else None)


# --- the chapter's experiment, as data: every training it runs, declared once ---------------------------------------
#: The grid's tables, in the order the chapter runs them.
SEARCH, ABLATION, HEAD_ROWS, CLUSTERS = "the cluster head's search", "Tables 1-2", "cluster heads", "Table 4"
#: The rows of the cluster heads' table besides CBS with each other head: the released code's head, centroids and
#: pull together, and its SME denominator (method, the settings each changes).
RELEASED_ROWS = {"CBS, released head and pull": ("CBS", {"head": "released", "pull": "detached",
                                                          "detach_centroids": True}),
                 "SME, with self-similarity": ("SME", {"self_similarity": True})}


#: The table of each ablation arm's best-shot search (issue #86), and the knob each arm searches besides its rate
#: and length: the temperature of eq. 6-7 for the arms with a metric loss (SME's too), the reconstruction weight
#: for CBSwR, on top of CBS's chosen temperature (its gamma = 0, CBS itself, always a candidate); RIM alone has none.
BEST_SHOT = "each arm's best shot"
KNOBS = {"SME": "tau", "CBS": "tau", "CBSwR": "gamma", "only L_rim": None}


def search_rule(cfg, method: str) -> search.Search | None:
    """The one search (:mod:`dml_tutorial.search`) of ``method``'s rate, knob (:data:`KNOBS`) and length under the
    profile ``cfg``: unseen R@1 of the validation split's held-out characters; ``None`` where the profile searches
    nothing (no ``search_lrs``)."""
    if not cfg.search_lrs:
        return None
    knob = {"tau": lambda: search.Axis("tau", cfg.tau_ladder, (cfg.tau,)),
            "gamma": lambda: search.Axis("gamma", cfg.gamma_ladder, (GAMMA,), off=0.0)}.get(KNOBS[method])
    return search.Search("R@1", search.Axis("lr", cfg.search_lrs, cfg.search_lr_start), cfg.search_lengths,
                         knob() if knob else None, cfg.search_every, patience=cfg.search_patience)


def best_shots(cfg, seed: int, run) -> dict:
    """Each arm of the ablation (``cfg.methods``) at its best shot (:func:`dml_tutorial.search.best_shot` under
    :func:`search_rule`), on ``seed``, each trial run by ``run`` (:func:`run_spec`, through a grid's cache); CBSwR
    searched at CBS's chosen temperature. Returns the run's choices, ``{"best shot": {method: Choice as data}}``
    (``{}`` where the profile searches nothing), which :func:`grid` applies and the run file records."""
    chosen = {}
    for method in cfg.methods:  # CBS before CBSwR, whose temperature is CBS's
        rule = search_rule(cfg, method)
        if rule is None:
            continue
        tau = chosen.get("CBS", {}).get("values", {}).get("tau") if method == "CBSwR" else None
        at = cfg.replace(tau=tau) if tau is not None else cfg
        chosen[method] = search.best_shot(RunSpec(BEST_SHOT, method, method, at, seed=seed), rule, run).as_data()
    return {"best shot": chosen} if chosen else {}


def best_shot_trials(cfg, seed: int) -> list[RunSpec]:
    """The trials :func:`best_shots` makes whatever the scores (:func:`dml_tutorial.search.starting_trials` of each
    arm), for the plan; the walks' further trials are added once run (:func:`unplanned`)."""
    return [trial for method in cfg.methods if (rule := search_rule(cfg, method))
            for trial in search.starting_trials(RunSpec(BEST_SHOT, method, method, cfg, seed=seed), rule)]


def unplanned(cfg, choices: dict) -> int:
    """How many trials :func:`best_shots` made beyond :func:`best_shot_trials`."""
    return search.walked(choices, lambda method: search_rule(cfg, method))


def _best(choices: dict, method: str) -> dict:
    """The settings ``method``'s search chose (:func:`best_shots`), ``{}`` where none searched it."""
    values = search.chosen(choices, method)
    if method == "CBSwR":  # searched on CBS's chosen temperature
        values.setdefault("tau", search.chosen(choices, "CBS").get("tau"))
    return {k: v for k, v in values.items() if v is not None}


def head_search(cfg, seed: int) -> list[RunSpec]:
    """The cluster head's search: CBS with each head of ``cfg.head_candidates`` on the validation split (held-out
    seen classes), on ``seed`` (the first); none where the profile names no candidates (the head is then the
    profile's own)."""
    return [RunSpec(SEARCH, f"CBS, {h} head", "CBS", cfg.replace(head=h), seed=seed, split="validation")
            for h in cfg.head_candidates or ()]


def choose_head(searched: dict) -> dict:
    """The run's choice from :func:`head_search`'s runs (``{(table, row, column): [Run]}``): ``{"head": h}`` of
    the best validation R@1 (ties: the first tried), or ``{}`` where nothing was searched."""
    if not searched:
        return {}
    r1 = {row: runs[0].metrics["R@1"] for (_, row, _), runs in searched.items()}
    return {"head": max(r1, key=r1.get).removeprefix("CBS, ").removesuffix(" head")}


def grid(cfg, seeds, choices: dict | None = None) -> list[RunSpec]:
    """Every training of the chapter after its searches, under the run's ``choices`` (:func:`choose_head`'s head,
    :func:`best_shots`' settings of each arm): the ablation of Tables 1-2 (each of ``cfg.methods`` at its own best
    shot); CBS with each other head of ``cfg.heads`` and the released code's rows (:data:`RELEASED_ROWS`), where
    the profile lists heads, each at its method's best shot; CBSwR at each other K of ``cfg.ks`` (Table 4), at
    CBSwR's. Each on every seed. The notebook runs these, the plan counts and times them, the cache keys on them."""
    choices = choices or {}
    chosen = cfg.replace(**{k: v for k, v in choices.items() if k != "best shot"})
    rows = [(ABLATION, m, m, {}) for m in cfg.methods]
    others = [h for h in cfg.heads if h != chosen.head]  # the ablation's head has its row there
    if others:
        rows += [(HEAD_ROWS, f"CBS, {h} head", "CBS", {"head": h}) for h in others]
        rows += [(HEAD_ROWS, row, method, changes) for row, (method, changes) in RELEASED_ROWS.items()]
    rows += [(CLUSTERS, f"K = {k}", "CBSwR", {"k": k}) for k in cfg.ks]
    return [RunSpec(table, row, method, chosen.replace(**_best(choices, method), **changes), seed=s)
            for table, row, method, changes in rows for s in seeds]


def train_grid(start, splits, plan=None) -> grids.TrainedGrid:
    """The chapter's experiment on ``splits`` (:func:`dml_tutorial.grids.train`): where the profile searches, the
    cluster head chosen on held-out seen classes (:func:`head_search`, :func:`choose_head`, its runs kept as the
    grid's ``trials``), then each arm's rate, knob and length from that head (:func:`best_shots`), every training
    of :func:`grid`, and the reference rows."""
    cfg, device, seeds, _, progress = start
    searched = cfg["head_candidates"] or cfg["search_lrs"]
    held_out = search.validation_split(splits, cfg["held_out"]) if searched else None
    run = run_spec({"main": splits, "validation": held_out}, device)
    trials = experiment.run_grid(head_search(cfg, seeds[0]), run, "head search", progress=progress)
    head = choose_head(trials)  # recorded beside the settings, not in them
    print(f"cluster head: {cfg.replace(**head)['head']}")
    return grids.train(sys.modules[__name__], start, run, splits, plan, chosen=head, trials=trials,
                       search_progress=progress)


def run_spec(splits: dict, device="auto"):
    """``run(spec, progress=False) -> Run`` for :func:`dml_tutorial.experiment.run_grid`: one
    :class:`~dml_tutorial.spec.RunSpec` of :func:`grid` or :func:`head_search` trained on ``splits[spec.split]``
    (:func:`train_and_retrieve`). A ``functools.partial``, so that the cache's key holds the data it binds."""
    return partial(_train_spec, splits=splits, device=device)


def _train_spec(spec: RunSpec, progress: bool = False, checkpoint=None, *, splits: dict, device="auto") -> Run:
    """:func:`run_spec`'s runner; the ablation's runs keep their trained objective (``Run.state``) for the
    chapter's pictures; with a grid's cache, a run in progress is kept at ``checkpoint`` and resumes there; a
    search's trial (``options["curve"]``, R@1) records the R@1 of its split's test side at every checkpoint."""
    data = splits[spec.split]
    curve = spec.options.get("curve")
    evaluate = experiment.recall_checkpoint(data.test, curve, spec.settings) if curve else None
    return train_and_retrieve(data, spec.method, spec.settings, seed=spec.seed, device=device, progress=progress,
                              keep_objective=spec.table == ABLATION, checkpoint=checkpoint, evaluate=evaluate,
                              score=evaluate is None)



@torch.no_grad()
def assignments(objective: CBSwR, x: torch.Tensor) -> torch.Tensor:
    """Each sample's cluster: the argmax of the clustering module's softmax on its embedding (eq. 1's classifier),
    in eval mode."""
    objective.eval()
    return objective.logits(objective.embed(objective.model.features(x))).argmax(1)


def false_negative_rates(labels, clusters) -> dict:
    """The paper's motivation, measured: of the pairs of a batch that a method treats as negative, the fraction
    whose hidden (never used) class labels agree. Instance discrimination (SME) treats every other image of the
    batch as a negative; the cluster-based loss (eq. 6-9) only images in other clusters. ``labels`` and
    ``clusters`` [n]; a mean over ordered pairs i != j, ``nan`` where a method has no negative pair."""
    y, c = torch.as_tensor(np.asarray(labels)), torch.as_tensor(np.asarray(clusters))
    if len(y) != len(c) or len(y) < 2:
        raise ValueError(f"need at least 2 samples with a label and a cluster each, got {len(y)} and {len(c)}")
    same = y[:, None] == y[None]
    others = ~torch.eye(len(y), dtype=torch.bool)
    across = (c[:, None] != c[None]) & others

    def rate(negative):
        return float(same[negative].float().mean()) if negative.any() else float("nan")

    return {"instance negatives (SME)": rate(others), "cluster negatives (CBS, CBSwR)": rate(across)}


def batch_false_negatives(objective: CBSwR, train, batch_size: int, batches: int = 20, seed: int = 0,
                          device="cpu") -> dict:
    """:func:`false_negative_rates` over ``batches`` batches of ``batch_size`` training samples (a permutation of
    ``train`` by ``seed``) under ``objective``'s clusters: ``{method: mean rate}``, a mean over batches of each
    batch's rate (NaN-skipping: a batch in one cluster has no cluster negative)."""
    from .data import stack

    rates, order = [], np.random.default_rng(seed).permutation(len(train))
    for start in range(0, min(len(order), batches * batch_size), batch_size):
        idx = np.sort(order[start:start + batch_size])
        clusters = assignments(objective, stack(train, idx).to(device)).cpu()
        rates.append(false_negative_rates(train.labels[idx], clusters))
    return {name: float(np.nanmean([r[name] for r in rates])) for name in rates[0]} | {"batches": len(rates)}


def heads_words(runs: list[dict]) -> str:
    """Markdown: CBS with each cluster head against the linear head and against SME, unseen R@1 paired by seed (95%
    intervals, not adjusted), and an SME variant against the run's SME, from ``runs`` (run files of the chapter's
    test bed that hold the table "CBS with each cluster head")."""
    from . import evidence, records

    heads = records.merge_seeds(runs).get("CBS with each cluster head")
    if not heads:
        return "No test bed II run of the cluster heads is recorded."
    r1 = {name: cols["R@1"] for name, cols in heads[0].items()}
    linear = next(name for name in r1 if name.startswith("CBS, linear head"))
    lines = [f"- {name}: {evidence.describe(evidence.paired(r1[linear], r1[name]))}; against SME "
             f"{evidence.describe(evidence.paired(r1['SME'], r1[name]))}"
             for name in r1 if name.startswith("CBS, ") and name != linear]
    # the SME variant the run holds: before the released form became the ablation's SME, a run's "SME" kept the
    # self-similarity and its variant left it out
    lines += [f"- {variant}, against the run's SME: {evidence.describe(evidence.paired(r1['SME'], r1[variant]))}"
              for variant in ("SME, with self-similarity", "SME, without self-similarity") if variant in r1]
    return ("**The cluster head on test bed II.** Unseen R@1 of CBS with each head, against our linear head and "
            "against SME, paired by seed (95% intervals, not adjusted: a description of the departures, not a "
            "verdict):\n\n" + "\n".join(lines))


@torch.no_grad()
def false_negative_lines(run: Run, train, batch_size: int, seed: int = 0, device="cpu") -> list[str]:
    """:func:`batch_false_negatives` of a trained CBSwR ``run`` in words, one line a method; or why not (a run loaded
    from the cache keeps no model)."""
    if run.state is None:
        return ["needs a CBSwR run trained in this session (runs loaded from the cache keep no model)"]
    rates = batch_false_negatives(run.state, train, batch_size, seed=seed, device=device)
    return [f"{name:32s}: {100 * value:4.1f} % of the negative pairs share the hidden class "
            f"({rates['batches']} batches of {batch_size})" for name, value in list(rates.items())[:-1]]


def reconstruct(objective: CBSwR, x: torch.Tensor):
    """For a batch ``x``: each sample's cluster and the decoder's image of every non-empty cluster's centroid,
    ``(assignments [n], {cluster: D(r_cluster)})`` -- what eq. 5 compares with the cluster's members."""
    if objective.decoder is None:
        raise ValueError("this objective has no decoder (gamma = 0); use the CBSwR variant")
    assign = assignments(objective, x)
    features = objective.model.features(x)
    r, present = centroid_representations(features, assign, objective.k)
    idx = present.nonzero().flatten()
    return assign, dict(zip(idx.tolist(), objective.decoder(r[idx])))


_R = ("R@1", "R@2", "R@4", "R@8")
#: Tables 1-2: the ablation (R@K in %, K = 32 clusters), quoted.
REPORTED = {
    "CUB": {"SME": dict(zip(_R, (46.2, 59.0, 70.1, 80.2))), "only L_rim": dict(zip(_R, (40.6, 52.9, 65.7, 77.5))),
            "CBS": dict(zip(_R, (47.3, 59.1, 70.5, 80.2))), "CBSwR": dict(zip(_R, (47.5, 59.6, 70.6, 80.5)))},
    "CARS": {"SME": dict(zip(_R, (41.3, 52.3, 63.6, 74.9))), "only L_rim": dict(zip(_R, (35.7, 47.5, 59.8, 71.0))),
             "CBS": dict(zip(_R, (42.2, 54.0, 65.4, 76.0))), "CBSwR": dict(zip(_R, (42.6, 54.4, 65.4, 76.0)))},
}
#: Tables 5-6 add the NMI of SME and CBSwR (the unsupervised rows we train), in %, quoted.
for _name, _nmi in {"CUB": {"SME": 55.4, "CBSwR": 55.9}, "CARS": {"SME": 35.8, "CBSwR": 37.6}}.items():
    for _row, _value in _nmi.items():
        REPORTED[_name][_row]["NMI"] = _value
#: Table 3: training seconds for 20 epochs on a GTX 1080 Ti, quoted.
REPORTED_SECONDS = {"CUB": {"SME": 696, "only L_rim": 620, "CBS": 660, "CBSwR": 882},
                    "CARS": {"SME": 772, "only L_rim": 700, "CBS": 727, "CBSwR": 1025}}
#: Table 4: CBSwR on CUB against the number of clusters K, quoted.
REPORTED_K = {16: dict(zip(_R, (46.7, 59.0, 70.0, 79.7))), 32: dict(zip(_R, (47.5, 59.6, 70.6, 80.5))),
              48: dict(zip(_R, (47.1, 58.9, 70.6, 80.1))), 64: dict(zip(_R, (47.4, 58.9, 69.6, 80.2)))}


# --- the chapter's sentences, from its runs -------------------------------------------------------------------------
#: The ablation's steps, each ``(from, to)``: what adding the centres, the reconstruction and the instance term does.
STEPS = (("SME", "CBS"), ("CBS", "CBSwR"), ("only L_rim", "CBS"), ("SME", "CBSwR"))


# --- the tables the chapter records, each from the trained grid (TrainedGrid.record) ---------------------------------
def head_choice(run: grids.TrainedGrid) -> Recorded | None:
    """The cluster head's search on the held-out seen classes (CBS, R@1, the first seed); ``None`` where the
    profile searched none."""
    if not run.trials:
        return None
    rows = {row: {"R@1": [r[0].metrics["R@1"]]} for (_, row, _), r in run.trials.items()}
    return Recorded("The cluster head on the validation classes (CBS, R@1)", rows, seeds=run.seeds[:1])


def ablation_runs(run: grids.TrainedGrid) -> dict:
    """Tables 1-2's runs, ``{method: [Run per seed]}``."""
    return run.rows(ABLATION)


def _reference_rows(run: grids.TrainedGrid) -> dict:
    kinds = experiment.reference_kinds(run.cfg, run.splits)  # raw pixels where they fit in memory
    return {kind: run.refs[(kind, "")] for kind in kinds}


def loss_terms(run: grids.TrainedGrid) -> Recorded:
    """:data:`~dml_tutorial.tables.CBSWR_ABLATION`, Tables 1/2 and 5/6: each method and the reference rows
    (:func:`ablation_table`), beside the paper's column of the profile."""
    kinds = list(_reference_rows(run))
    rows = ablation_table(ablation_runs(run), run.refs, kinds)
    cfg, quoted = run.cfg, run.start.paper
    caption = (f"unseen classes, in %, mean ± std over {len(run.seeds)} seeds ({cfg['profile']} profile, "
               f"{cfg['dataset']}); paper: {quoted}, Tables {'1 and 5' if quoted == 'CUB' else '2 and 6'}, quoted")
    return Recorded(tables.CBSWR_ABLATION, rows, REPORTED[quoted], caption)


def each_head(run: grids.TrainedGrid) -> Recorded | None:
    """CBS with each cluster head beside SME and the ablation's CBS, with its pair precision (:func:`head_table`);
    ``None`` where the profile runs no other head."""
    fidelity = run.rows(HEAD_ROWS)
    if not fidelity:
        return None
    ablation = ablation_runs(run)
    head = run.choices.get("head", run.cfg["head"])  # the ablation's head
    ours = f"CBS, {head} head" + (" (ours)" if head == "linear" else " (ablation)")
    rows = {"SME": ablation["SME"], ours: ablation["CBS"], **fidelity}
    references = {kind: {c: [r.metrics[c] for r in runs] for c in COLUMNS}
                  for kind, runs in _reference_rows(run).items()}
    return Recorded("CBS with each cluster head", head_table(rows, references),
                    caption=f"unseen classes, in %, mean ± std over {len(run.seeds)} seeds; pair precision: the "
                    "share of a training batch's same-cluster pairs that share a hidden class, and its chance "
                    "level, last epoch")


def head_gap_lines(run: grids.TrainedGrid) -> list[str]:
    """:func:`head_lines` of the grid's runs; none where the profile runs no other head."""
    fidelity = run.rows(HEAD_ROWS)
    return head_lines(ablation_runs(run), fidelity) if fidelity else []


def cluster_counts(run: grids.TrainedGrid) -> Recorded:
    """:data:`~dml_tutorial.tables.CBSWR_CLUSTERS`, Table 4: CBSwR at each number of clusters K, the profile's own
    K from the ablation (:func:`k_table`), beside the paper's CUB rows."""
    by_k = {s.settings.k: run.runs[s.key] for s in run.specs if s.table == CLUSTERS}
    by_k[run.cfg["k"]] = ablation_runs(run)["CBSwR"]
    paper = {f"K = {k}": v for k, v in REPORTED_K.items()}
    return Recorded(tables.CBSWR_CLUSTERS, k_table(by_k), paper, caption="CBSwR, unseen classes, in %, mean ± std "
                    f"over {len(run.seeds)} seeds; paper: CUB Table 4, quoted")


def ablation_lines(ablation: dict, steps=STEPS) -> list[str]:
    """Each step of the ablation (``ablation``: ``{method: [Run per seed]}``) paired by seed
    (:func:`dml_tutorial.experiment.paired_difference`), R@1 and NMI: a line each, mean ± SD in points and the
    paired t-test's p."""
    lines = []
    for a, b in steps:
        for metric in ("R@1", "NMI"):
            d = experiment.paired_difference(ablation[a], ablation[b], metric)
            lines.append(f"{b:10s} - {a:10s} {metric:4s}: {100 * d['mean']:+5.1f} ± {100 * d['std']:.1f} points "
                         f"(p = {d['p']:.2f})")
    return lines


def head_lines(ablation: dict, fidelity: dict) -> list[str]:
    """Each row of the heads' table (``fidelity``: ``{row: [Run]}``) against the ablation's row it changes (SME
    for SME's rows, else CBS), R@1 paired by seed, a line each."""
    from . import evidence

    lines = []
    for name, runs in fidelity.items():
        base = "SME" if name.startswith("SME") else "CBS"
        d = experiment.paired_difference(ablation[base], runs, "R@1")
        lines.append(f"{name:28s} - {base}: R@1 {evidence.describe(d)}")
    return lines


def time_lines(ablation: dict, paper_seconds: dict) -> list[str]:
    """Table 3: each method's mean training seconds over SME's (``ablation``: ``{method: [Run per seed]}``), beside
    the paper's ratio (``paper_seconds``: :data:`REPORTED_SECONDS` of its dataset), a line each."""
    sme = np.mean([r.metrics["seconds"] for r in ablation["SME"]])
    return [f"{m:10s}: {np.mean([r.metrics['seconds'] for r in runs]) / sme:4.2f}x SME here, "
            f"{paper_seconds[m] / paper_seconds['SME']:4.2f}x in the paper" for m, runs in ablation.items()]
