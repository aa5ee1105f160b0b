"""Run profiles: the settings of each chapter at ``smoke`` scale (CPU, offline data, about 90 s on 2 cores) and at
``full`` scale (the paper's data and model, or the closest that runs on one GPU).

``PROFILE = "auto"`` in a notebook means ``full`` when a CUDA GPU is present and ``smoke`` otherwise.
"""

from __future__ import annotations

import copy

import torch

PROFILE_NAMES = ("smoke", "full")

CHAPTERS = {
    "foundations": {
        "smoke": {"dataset": "digits", "seen": list(range(6)), "model": "convnet", "dim": 32, "epochs": 25,
                  "p": 6, "k": 16, "lr": 1e-3, "margin": 0.2, "n_seeds": 3, "threads": 2},
        "full": {"dataset": "mnist", "seen": list(range(6)), "model": "convnet", "dim": 64, "epochs": 30,
                 "p": 6, "k": 32, "lr": 1e-3, "margin": 0.2, "n_seeds": 3, "threads": None},
    },
}


def resolve_profile(profile: str = "auto") -> str:
    """``"auto"`` -> ``"full"`` with CUDA, ``"smoke"`` without; ``"smoke"``/``"full"`` pass through."""
    if profile == "auto":
        return "full" if torch.cuda.is_available() else "smoke"
    if profile not in PROFILE_NAMES:
        raise ValueError(f"unknown profile {profile!r}; use 'auto', 'smoke' or 'full'")
    return profile


def settings(chapter: str, profile: str = "auto", **overrides) -> dict:
    """The settings of ``chapter`` under ``profile`` (resolved), with ``overrides`` applied (``None`` values are
    ignored, so notebook parameters left at ``None`` keep the profile's value)."""
    if chapter not in CHAPTERS:
        raise ValueError(f"unknown chapter {chapter!r}; known chapters: {', '.join(CHAPTERS)}")
    name = resolve_profile(profile)
    cfg = copy.deepcopy(CHAPTERS[chapter][name])
    unknown = set(overrides) - set(cfg)
    if unknown:
        raise ValueError(f"unknown setting(s) {sorted(unknown)} for chapter {chapter!r}; known: {sorted(cfg)}")
    cfg.update({k: v for k, v in overrides.items() if v is not None})
    cfg["profile"] = name
    return cfg
