"""A chapter's protocol on a test bed, as data and one hash, registered before the runs it decides (issue #86: the
registry saw each claim's definition, not how its runs were made, and five protocol changes after seen results went
unflagged).

The protocol of a chapter at a profile is everything that decides its words, other than the numbers:

- ``settings``: the profile's settings (:func:`dml_tutorial.profiles.settings`), less how a run uses its machine
  (threads, loader workers: :data:`~dml_tutorial.settings.MACHINE`) and less those left empty (:func:`_what`);
- ``grid``: every run of the chapter's declared grid over the sweep's seeds after searches whose choices differ row
  by row (:func:`dml_tutorial.plan.chosen_grid`: which row trains at which row's choice is part of the protocol),
  each as :meth:`~dml_tutorial.spec.RunSpec.data` (its method with every loss parameter, settings less
  :data:`~dml_tutorial.settings.MACHINE`, data, seed);
- ``seeds``: the seeds of the profile's sweep (``data/sweeps/<chapter>-<profile>.yaml``);
- ``claims``: the chapter's claims as the registry defines them (:func:`dml_tutorial.registry.definition`), the
  whole family, since a claim added or dropped changes every other's adjusted interval;
- ``rule``: the decision rule (:mod:`dml_tutorial.evidence`: its words, the 95% level, Bonferroni over the family,
  the fewest seeds that decide).

One protocol a chapter, not one a claim: the claims of a chapter share their family, so a change to any of them is
a change to all. ``dml-tutorial report`` writes each registered protocol's hash to :data:`PROTOCOLS` (tested equal
to the code, as the claims' registry is), with the hash of its part that decides words (:func:`deciding`: the
claims and the rule); each run file records the hash it ran under (:func:`sha256`). A cell is post hoc where its
runs' protocol was not registered before them, or where the claims or the rule changed since
(:func:`dml_tutorial.registry.status`): a re-run's protocol, registered before it starts, leaves the runs it will
replace as registered as they were.

    protocol.sha256("cbswr", "glyphs2")  # '3f0c...'
"""

from __future__ import annotations

import json
from pathlib import Path

from .chapters import REPOSITORY
from .registry import PROTOCOLS, definition
from .settings import trained
from .spec import fingerprint

#: The profiles whose protocols are registered: those that decide words now.
REGISTERED = ("glyphs2",)


def seeds(chapter: str, profile: str, root: Path = REPOSITORY) -> list | None:
    """The seeds of the profile's sweep file (``data/sweeps/<chapter>-<profile>.yaml``), ``None`` where there is
    none (an installed wheel, or a profile run without a sweep)."""
    import yaml  # the sweep file as `dml-tutorial sweep` reads it (cli.load_grid, which checks it)

    path = Path(root) / "data" / "sweeps" / f"{chapter}-{profile}.yaml"
    return list(yaml.safe_load(path.read_text())["grid"].get("SEED", [])) if path.exists() else None


def of(chapter: str, profile: str, root: Path = REPOSITORY) -> dict:
    """The protocol of ``chapter`` at ``profile`` as data (the module docstring's five parts)."""
    from . import plan, profiles

    cfg = profiles.settings(chapter, profile)
    ran = seeds(chapter, profile, root)
    grid = plan.chosen_grid(chapter, cfg, ran if ran is not None else range(cfg.n_seeds)) \
        if chapter in plan.SPECS else []
    return {"settings": _what(cfg.to_dict()),
            "grid": [{**data, "settings": _what(data["settings"])} for data in (spec.data() for spec in grid)],
            "seeds": ran, **deciding(chapter)}


def deciding(chapter: str) -> dict:
    """The part of a protocol that turns runs into words: the chapter's family of claims and the decision rule
    (the rest says how runs are made). Runs made under a registered protocol keep their registration while this
    part stays the same (:func:`dml_tutorial.registry.status`), so the next protocol of a chapter can be registered
    before its runs without making the runs it will replace post hoc."""
    from . import evidence
    from .claims import CLAIMS

    return {"claims": [definition(chapter, c) for c in CLAIMS.get(chapter, [])],
            "rule": {"words": list(evidence.WORDS), "confidence": 0.95, "adjustment": "Bonferroni over the chapter",
                     "min_seeds": evidence.MIN_SEEDS}}


def _what(settings: dict) -> dict:
    """``settings`` without how a run uses its machine (:func:`dml_tutorial.settings.trained`) and without the
    settings left empty (``None``, ``()``, ``{}``, ``""``: unused), so that a setting added later for another
    chapter, empty by default, leaves a registered protocol as it was; one added with a value does change it."""
    return {k: v for k, v in trained(settings).items() if v not in (None, (), [], {}, "")}


def sha256(chapter: str, profile: str, root: Path = REPOSITORY) -> str:
    """The hash of :func:`of`: what a run file records and the registry compares."""
    return fingerprint(of(chapter, profile, root))


def lines(root: Path = REPOSITORY) -> list[str]:
    """The lines of :data:`PROTOCOLS`: each chapter with claims at each profile of :data:`REGISTERED`, its
    protocol's hash and that of the part that decides words (:func:`deciding`)."""
    from .claims import CLAIMS

    return [json.dumps({"chapter": chapter, "profile": profile, "sha256": sha256(chapter, profile, root),
                        "words": fingerprint(deciding(chapter))}) for chapter in CLAIMS for profile in REGISTERED]


def write(root: Path = REPOSITORY) -> Path:
    """Write :data:`PROTOCOLS` from the code; returns its path."""
    path = Path(root) / PROTOCOLS
    path.write_text("\n".join(lines(root)) + "\n")
    return path
