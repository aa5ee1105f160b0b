"""A run as data (dml_tutorial/spec.py): every parameter of a loss reaches the cache's key."""

from functools import partial

import pytest
import torch

from dml_tutorial import dcdl, ecaml, eps, experiment, losses, profiles, train
from dml_tutorial.objective import objective
from dml_tutorial.spec import RunSpec, as_data


def _key(method, settings=None, **options) -> str:
    cfg = settings or profiles.settings("dcdl", "smoke")
    return RunSpec("Table", "row", method, cfg, options=options).digest()


def test_a_loss_parameter_changes_the_cache_key(monkeypatch):
    """The issue that made the key an objective's name: sigma 0.05 and 1.0 of L^L, or the triplet's margin and
    miner, gave one key, so an edited term reran nothing and the old runs came back as new."""
    before = _key(dcdl.dcdl_loss("trip", "L"))
    assert _key(dcdl.dcdl_loss("trip", "L")) == before  # the same loss, built again: the same key
    monkeypatch.setitem(dcdl.TERMS, "L", {**dcdl.TERMS["L"], "sigma": 1.0})  # the edit dcdl's docstring invites
    assert _key(dcdl.dcdl_loss("trip", "L")) != before
    fixed = objective("triplet", negatives="semihard-fixed", margin=0.4)
    assert len({_key(fixed), _key(objective("triplet", negatives="semihard-random", margin=0.4)),
                _key(objective("triplet", negatives="semihard-fixed", margin=0.1)),
                _key(objective("triplet", negatives="semihard-fixed", margin=0.4, terms={"sinkhorn": 0.5})),
                _key(objective("triplet", negatives="semihard-fixed", margin=0.4, terms={"sinkhorn": 0.1}))}) == 5
    assert _key(fixed) == _key(objective("triplet", negatives="semihard-fixed", margin=0.4))
    # ECAML's released EC with the fc penalty is a closure, not an Objective: its weights reach the key too
    assert len({_key(ecaml.ecaml_loss("binomial", lam, ec="released", fc_unit_norm=fc))
                for lam in (0.1, 1.0) for fc in (0.5, 1.0)}) == 4


def test_every_paper_presets_parameters_are_in_its_description():
    released = as_data(ecaml.ecaml_loss("npair", 0.1, ec="released", fc_unit_norm=0.5, local_options={"scale": 10.0}))
    assert released["terms"]["energy_confusion"]["weight"] == 0.1 and released["layer_normalize"] is False
    assert released["local_fn"]["keywords"] == {"scale": 10.0}
    assert as_data(eps.eps_loss("triplet", True, margin=0.1))["local_fn"]["keywords"]["positives"] == "easy"
    w = as_data(dcdl.dcdl_loss("trip", "W"))
    assert w["terms"]["W"]["fn"]["keywords"]["epsilon"] == dcdl.TERMS["W"]["epsilon"]
    assert w["local_fn"]["keywords"] == {"margin": 0.5, "negatives": "semihard-band", "squared": True}
    noise_arm = as_data(partial(losses.triplet_loss, margin=0.2, negatives="semihard-fixed", reduction="pairs"))
    assert noise_arm["function"] == "dml_tutorial.losses.triplet_loss" and noise_arm["keywords"]["margin"] == 0.2


def test_settings_seed_split_and_options_make_the_key_and_the_row_name_does_not():
    cfg, loss = profiles.settings("cbswr", "smoke"), "CBS"
    spec = RunSpec("Tables 1-2", "CBS", loss, cfg)
    assert spec.digest() == RunSpec("cluster heads", "CBS, linear head", loss, cfg).digest()  # the same training
    others = [RunSpec("T", "CBS", loss, cfg.replace(head="released")), RunSpec("T", "CBS", loss, cfg, seed=1),
              RunSpec("T", "CBS", loss, cfg, split="validation"), RunSpec("T", "CBS", "SME", cfg),
              RunSpec("T", "CBS", loss, cfg, options={"noise": ("symmetric", 0.2)})]
    assert len({spec.digest(), *(o.digest() for o in others)}) == 6
    assert spec.key == ("Tables 1-2", "CBS", "") and hash(spec) == hash(RunSpec("T", "CBS", loss, cfg))
    with pytest.raises(TypeError):
        spec.options["noise"] = None  # frozen


def test_the_grid_cache_keys_on_the_loss_parameters(tmp_path, monkeypatch):
    calls = []

    def run(loss_fn, seed):
        calls.append(loss_fn)
        return experiment.Run({"accuracy": 0.5}, torch.zeros(1, 1), train.History())

    for sigma in (0.05, 0.05, 1.0, 0.05):
        monkeypatch.setitem(dcdl.TERMS, "L", {**dcdl.TERMS["L"], "sigma": sigma})
        experiment.grid({"L_Trip + L^L": {"loss_fn": dcdl.dcdl_loss("trip", "L")}}, [0], run, cache=tmp_path)
    assert len(calls) == 2  # sigma 0.05 trained once and loaded twice; sigma 1.0 trained


def test_how_a_run_uses_its_machine_is_not_in_the_key():
    """A sweep resumed with another ``--jobs`` gives its points other threads (SETTINGS' ``threads``): under a key
    that held them, EPS's seed 9 of test bed II trained its finished trainings again in a new cache folder. Threads,
    loader workers and the checkpoint cadence leave the key (and the cache folder) as it was; a trained setting
    does not."""
    cfg, loss = profiles.settings("cbswr", "smoke"), "CBS"
    spec = RunSpec("T", "CBS", loss, cfg)
    machine = cfg.replace(threads=1, workers=4, checkpoint_seconds=60.0)
    assert RunSpec("T", "CBS", loss, machine).digest() == spec.digest()
    assert profiles.default_cache(machine, "runs") == profiles.default_cache(cfg, "runs")
    assert "threads" not in as_data(machine) and as_data(machine)["lr"] == cfg.lr
    trained = cfg.replace(lr=cfg.lr * 3)
    assert RunSpec("T", "CBS", loss, trained).digest() != spec.digest()
    assert profiles.default_cache(trained, "runs") != profiles.default_cache(cfg, "runs")
