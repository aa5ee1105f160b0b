"""A chapter's trained grid (dml_tutorial/grids.py): ``train`` makes the calls a notebook made before (the search,
the grid, the references) and ``record`` records a table declared in the chapter's module; and the noise chapter's
declared tables read the right runs of its grid."""

import types

import numpy as np
import pytest
import torch

from dml_tutorial import data, experiment, grids, guarantees, profiles, recorder, search, spec, tables, train
from dml_tutorial.tables import Recorded

CFG = profiles.settings("noise_guarantees", "smoke").replace(model="mlp", dim=8)


@pytest.fixture(scope="module")
def splits():
    return data.load_dataset("subclusters", split="samples", seed=0, num_classes=4, modes_per_class=2,
                             samples_per_mode=30)


def _run(spec_, progress=False):  # a deterministic stand-in for a training: its numbers name its spec
    value = spec_.seed + len(spec_.row) / 100 + (spec_.column if isinstance(spec_.column, float) else 0)
    return experiment.Run({"R@1": value, "NMI": value / 2}, None, train.History([]))


def _chapter(choices):
    """A chapter's declarations, as experiment.best_shots and grids.train read them: one search trial, two rows of
    one table and one row of another, at the search's choice."""
    def best_shots(cfg, seed, run_one):
        trial = run_one(spec.RunSpec("best shot", "a", "m", cfg, 0.0, seed=seed))
        chosen = search.Choice({"lr": 0.1, "epochs": 2}, [{"curve": {2: trial.metrics["R@1"]}}], {}, [])
        return {"best shot": {"a": chosen}, "trial": trial.metrics["R@1"]} if choices else {}

    def grid(cfg, seeds, chosen):
        lr = chosen["best shot"]["a"].values["lr"] if chosen else cfg.lr
        return [spec.RunSpec(t, row, "m", cfg.replace(lr=lr), column, seed=s)
                for t, row, column in (("T", "a", 0.0), ("T", "bb", 0.4), ("U", "c", ""))
                for s in seeds]

    return types.SimpleNamespace(best_shots=best_shots, grid=grid, unplanned=lambda cfg, c: 0, BEST_SHOT="best shot")


def _start(seeds=(3, 4)):
    return profiles.Start(CFG, torch.device("cpu"), list(seeds), None, False)


def test_train_searches_runs_the_grid_at_the_choice_and_measures_the_references(splits, capsys):
    start = _start()
    made = grids.train(_chapter(True), start, _run, splits)
    assert made.choices["best shot"]["a"].values == {"lr": 0.1, "epochs": 2} and made.choices["trial"] == 3.01
    assert "a: " in capsys.readouterr().out  # the search's choice is said, as in the notebooks
    assert {s.settings.lr for s in made.specs} == {0.1}  # every run at the search's choice
    expected = experiment.run_grid(made.specs, _run)
    assert made.table("T") == spec.table_of(made.specs, expected, "T")
    assert list(made.table("T")) == [("a", 0.0), ("bb", 0.4)] and list(made.table("U")) == [("c", "")]
    assert [r.metrics["R@1"] for r in made.table("T")[("bb", 0.4)]] == [3.42, 4.42]  # one Run per seed, in order
    refs = experiment.references(splits, CFG, [3, 4])
    assert made.refs.keys() == refs.keys()
    for key, runs in refs.items():
        timeless = [{k: v for k, v in r.metrics.items() if k != "seconds"} for r in made.refs[key]]
        assert timeless == [{k: v for k, v in r.metrics.items() if k != "seconds"} for r in runs]
    assert made.table("V") == {}  # a table this profile does not train
    assert made.table("U", references=True) == {**made.table("U"), **made.refs}
    assert made.rows("T") == {"a": made.table("T")[("a", 0.0)], "bb": made.table("T")[("bb", 0.4)]}
    assert list(made.rows("U", references=True)) == ["c", *(kind for kind, _ in refs)]
    assert grids.train(_chapter(False), start, _run, splits).choices == {}  # no search: the profile's settings


def test_record_records_the_declared_table_with_its_caption_and_the_choices(splits, capsys):
    made = grids.TrainedGrid(_start(), splits, {"best shot": {"a": {"lr": 0.1}}}, [], {})

    def declared(run, scale):
        return Recorded("a shown table", {"a": {"R@1": [scale * s for s in run.seeds]}}, {"a": {"R@1": 9.0}},
                        caption=f"over {len(run.seeds)} seeds")

    def one_seed(run):
        return Recorded("one seed", {"a": {"R@1": [0.5]}}, seeds=run.seeds[:1], choices=False)

    with recorder.recording() as rec:
        shown = made.record(declared, 0.1)
        made.record(one_seed)
        assert made.record(lambda run: None) is None  # a table the profile does not train
    out = capsys.readouterr().out
    assert out.startswith("over 2 seeds\n") and "not part of the smoke profile" in out
    first, second = rec.tables
    assert first["table"] == "a shown table" and first["seeds"] == [3, 4]
    assert first["measured"] == {"a": {"R@1": [pytest.approx(0.3), pytest.approx(0.4)]}}
    assert first["paper"] == {"a": {"R@1": 9.0}} and first["choices"] == {"best shot": {"a": {"lr": 0.1}}}
    assert second["seeds"] == [3] and "choices" not in second
    assert shown.data.loc["a", ("R@1", "paper")] == 9.0
    with pytest.raises(TypeError, match="not a tables.Recorded"):
        made.record(lambda run: {"a": {"R@1": [1.0]}})


def _noise_grid(cfg, seeds=(0, 1)):
    """The noise chapter's grid with a stand-in Run per spec (what its declared tables read)."""
    specs = guarantees.grid(cfg, list(seeds))
    runs = experiment.run_grid(specs, _run)
    refs = {(kind, ""): [experiment.Run({"R@1": 0.1, "NMI": 0.2}, None, None)] * len(seeds)
            for kind in tables.REFERENCES}
    split = types.SimpleNamespace(train=types.SimpleNamespace(labels=np.arange(6)))
    return grids.TrainedGrid(profiles.Start(cfg, "cpu", list(seeds), None, False), split, {}, specs, runs, refs)


def test_the_noise_chapters_tables_read_their_own_runs(monkeypatch):
    cfg = profiles.settings("noise_guarantees", "smoke")
    monkeypatch.setattr(experiment, "reference_kinds", lambda cfg, splits=None: tables.REFERENCES)
    made = _noise_grid(cfg)
    main = guarantees.recall_and_nmi(made)
    assert main.table is tables.NOISE_MAIN and "over 2 seeds" in main.caption
    arm, noisy = "triplet, random semi-hard", max(cfg.rates)
    assert main.rows[arm][f"p = {noisy:g}"] == [0 + len(arm) / 100 + noisy, 1 + len(arm) / 100 + noisy]
    topline = f"{arm} (topline)"
    assert main.rows[topline][f"p = {noisy:g}"] == pytest.approx([s + len(topline) / 100 + noisy for s in (0, 1)])
    assert main.rows[f"{arm} NMI"]["p = 0"] == [(s + len(arm) / 100) / 2 for s in (0, 1)]
    pretrained = guarantees.clean_pretraining(made).rows["marginal, clean pre-training (oracle)"]
    assert list(pretrained) == [f"p = {r:g}" for r in cfg.rates if r]  # the runs of FROM_CLEAN, by noisy rate
    assert guarantees.other_recipes(made) is None and guarantees.recipe_gap_lines(made) == []  # smoke: none
    assert guarantees.at_checkpoints(made) is None and guarantees.checkpoint_gap_lines(made) == []
    share = guarantees.share_of_topline(made).rows[arm][f"p = {noisy:g}"]
    assert share == pytest.approx([(s + 0.25 + noisy) / (s + 0.35 + noisy) for s in (0, 1)])


#: The trainings of a test bed II grid whose rate and length no search chose (issue #86's done-means asks for none),
#: each with why it is left so: what a change must keep, or remove from here.
UNSEARCHED = {
    ("eps", "sub-clusters"): "section 3's demonstration on synthetic sub-clusters (an 8-d MLP); no claim reads it",
    ("noise_guarantees", "other recipes"): "a control by design: each row's runner-up rate, one its search tried",
    ("noise_guarantees", "checkpoints"): "a control by design: one run at the row's chosen rate observed at fixed "
                                         "steps (cfg.checkpoint_steps), not trained to its chosen length",
}


@pytest.mark.parametrize("chapter", ["dcdl", "cbswr", "eps", "ecaml", "noise_guarantees", "bench"])
def test_every_test_bed_ii_training_runs_at_a_rate_and_length_its_search_chose(chapter):
    """Issue #86: no row trains at a value no search chose. A stand-in training whose held-out curve peaks at each
    ladder's lowest rate and still rises at the longest length makes every search choose values no profile uses
    by default; every training of the grid must then run at a chosen (rate, length), but for the tables of
    :data:`UNSEARCHED`. (Table 2's MS at other lambdas, and Table 1's arms, trained at the profile's rate and
    length until this test.)"""
    import math

    from dml_tutorial import bench, clustering, dcdl, ecaml, eps

    module = {"dcdl": dcdl, "cbswr": clustering, "eps": eps, "ecaml": ecaml, "noise_guarantees": guarantees,
              "bench": bench}[chapter]
    cfg = profiles.settings(chapter, "glyphs2")

    def run(trial):
        s, metric = trial.settings, trial.options["curve"]
        return experiment.Run({}, None, train.History([{"epoch": e, "loss": 0.0, metric: e / 1000 - math.log10(s.lr)}
                                                       for e in range(s.eval_every, s.epochs + 1, s.eval_every)]))

    choices = module.best_shots(cfg, 0, run)
    chosen = {(c["values"]["lr"], c["values"]["epochs"]) for c in choices["best shot"].values()}
    assert (cfg.lr, cfg.epochs) not in chosen  # the stand-in tells a chosen value from the profile's
    off = {(chapter, s.table) for s in module.grid(cfg, [0], choices)
           if (s.settings.lr, s.settings.epochs) not in chosen}
    assert off == {key for key in UNSEARCHED if key[0] == chapter}
