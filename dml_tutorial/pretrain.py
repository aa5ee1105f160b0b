"""A softmax-pretrained start, the released codes' ImageNet start in small.

ECAML's released code (like most deep metric learning code) fine-tunes a backbone that a softmax classifier
trained on ImageNet, with a new, randomly initialised embedding layer ("fc") at 10x the backbone's learning rate.
No pretrained weights reach the offline test beds, so :func:`softmax_pretrained` makes the same kind of start on
the training split itself: the model's trunk and a linear classifier over its features (the embedding layer's
input) trained with cross-entropy on the seen classes' labels; the embedding layer gets no gradient and keeps its
random initialisation, as the new fc does.

    start = softmax_pretrained(splits.train, cfg, epochs=10, seed=0)
    run = experiment.train_and_retrieve(splits, loss, {**cfg, "lr": 1e-4, "head_lr_mult": 10}, ..., init=start)

The seen classes are the ones the metric loss trains on afterwards, never the unseen test classes.
"""

from __future__ import annotations

import numpy as np
import torch
import torch.nn.functional as F

from . import models, sampling, train
from .data import input_shape


class SoftmaxClassifier(torch.nn.Module):
    """Cross-entropy of a linear classifier over the embedding layer's input (``batch.model.hidden``, the trunk's
    features after dropout), mean over the batch; a loss for :func:`dml_tutorial.train.fit`, which trains its
    weights with the model's."""

    def __init__(self, features: int, n_classes: int):
        super().__init__()
        self.fc = torch.nn.Linear(features, n_classes)

    def forward(self, z, y, batch):
        return F.cross_entropy(self.fc(batch.model.hidden), y)


def softmax_pretrained(data, cfg: dict, *, epochs: int, seed: int = 0, device="auto",
                       progress: bool = False) -> dict:
    """The state dict of ``cfg["model"]`` (as :func:`dml_tutorial.experiment.train_and_retrieve` builds it for
    ``seed``) after ``epochs`` epochs of :class:`SoftmaxClassifier` on ``data`` (labels: class indices 0..C-1 or
    any non-negative integers), Adam at ``cfg["lr"]`` on ``cfg["p"]`` x ``cfg["k"]`` batches
    (``batches_per_epoch`` of them). The trunk is trained; the embedding layer is the seed's random one."""
    labels = np.asarray(data.labels)
    if labels.size == 0 or labels.min() < 0 or not np.issubdtype(labels.dtype, np.integer):
        raise ValueError("softmax pre-training needs non-negative integer class labels")
    if epochs < 1:
        raise ValueError(f"epochs must be at least 1, got {epochs}")
    train.seed_everything(seed, threads=cfg.get("threads"))
    model = models.from_settings(cfg, input_shape(data))
    classifier = SoftmaxClassifier(model.embedding.in_features, int(labels.max()) + 1)
    sampler = sampling.PKSampler(labels, p=cfg["p"], k=cfg["k"], seed=seed,
                                 batches_per_epoch=cfg.get("batches_per_epoch"))
    train.fit(model, classifier, data, epochs=epochs, sampler=sampler, lr=cfg["lr"], device=device, seed=seed,
              progress=progress, num_workers=cfg.get("workers", 0), description="softmax pre-training")
    return {name: t.detach().cpu().clone() for name, t in model.state_dict().items()}
