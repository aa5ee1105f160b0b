"""Typed, frozen settings (dml_tutorial/settings.py) and the profiles written as differences from named bases."""

import dataclasses
import json

import pytest
from helpers import ROOT, load_script

from dml_tutorial import profiles, report
from dml_tutorial.settings import MACHINE, TYPES, CBSwRSettings, DCDLSettings, Frozen, Settings, conforms


def test_an_undeclared_setting_is_an_error_that_names_the_known_ones():
    with pytest.raises(ValueError, match=r"unknown setting\(s\) \['taus'\] for chapter 'cbswr'.*known: .*batch_size"):
        profiles.settings("cbswr", "smoke", {"taus": 0.05})
    with pytest.raises(ValueError, match=r"known: .*epochs"):
        profiles.settings("dcdl", "smoke").replace(epoch=3)
    # the keys the code reads are declared: CBSwR's temperature and head were refused before 0.22.0
    assert profiles.settings("cbswr", "smoke", {"tau": 0.05, "head": "cosine"}).tau == 0.05


@pytest.mark.parametrize("changes, message", [
    ({"epochs": "3"}, "'epochs' of CBSwRSettings must be int, got '3'"),
    ({"epochs": 2.5}, "must be int"),
    ({"amp": 1}, "'amp' of CBSwRSettings must be bool"),
    ({"lr": True}, "'lr' of CBSwRSettings must be float"),
    ({"ks": [16, "64"]}, "'ks'"),
    ({"dataset_options": [1]}, "'dataset_options'"),
])
def test_a_value_of_the_wrong_type_is_refused_with_its_type(changes, message):
    with pytest.raises(ValueError, match=message):
        profiles.settings("cbswr", "smoke", changes)


def test_settings_are_frozen_to_the_last_nested_value():
    cfg = profiles.settings("dcdl", "glyphs2")
    with pytest.raises(dataclasses.FrozenInstanceError):
        cfg.epochs = 3
    with pytest.raises(TypeError, match="frozen"):
        cfg.dataset_options["n_classes"] = 10
    with pytest.raises(TypeError):
        cfg["epochs"] = 3  # no item assignment: a run's choice goes beside the settings
    assert isinstance(cfg.noise, tuple) and isinstance(cfg.dataset_options, Frozen)
    assert hash(cfg) == hash(profiles.settings("dcdl", "glyphs2")) and cfg == profiles.settings("dcdl", "glyphs2")
    assert cfg.replace(epochs=3) != cfg and cfg.epochs == 30  # replace makes a copy


def test_json_settings_become_the_declared_tuples_and_go_back_to_lists():
    cfg = profiles.settings("dcdl", "smoke", {"noise": [None, ["symmetric", 0.3]], "lambdas": [0.1, 1]})
    assert cfg.noise == (None, ("symmetric", 0.3)) and cfg.lambdas == (0.1, 1)
    data = cfg.to_dict()
    assert data["noise"] == [None, ["symmetric", 0.3]] and json.loads(json.dumps(data)) == data
    assert DCDLSettings(**data) == cfg  # a run file's settings rebuild the object
    with pytest.raises(ValueError, match="'noise'"):
        cfg.replace(noise=(("symmetric", "0.3"),))


def test_dict_style_reading_knows_only_declared_settings():
    cfg = profiles.settings("cbswr", "smoke")
    assert cfg["epochs"] == cfg.get("epochs") == cfg.epochs and "tau" in cfg and "lambdas" not in cfg
    with pytest.raises(KeyError, match="no setting 'lambdas' in CBSwRSettings; known: .*tau"):
        cfg.get("lambdas", 0.1)  # never the silent default a dict gave
    assert {**cfg}["k"] == 32 and dict(cfg.items()) == {**cfg}


def test_conforms_reads_the_declared_types():
    assert conforms(None, int | None) and conforms(3, float) and not conforms(True, int) and not conforms(3.0, int)
    assert conforms(((None, ("symmetric", 0.3))), tuple[tuple[str, float] | None, ...])
    assert not conforms(("symmetric", 0.3, 1), tuple[str, float])


@pytest.mark.parametrize("chapter", sorted(profiles.CHAPTERS))
def test_every_profile_of_a_chapter_is_of_the_chapters_type(chapter):
    for name, cfg in profiles.CHAPTERS[chapter].items():
        assert type(cfg) is TYPES[chapter] and (cfg.chapter, cfg.profile) == (chapter, name)
    with pytest.raises(ValueError, match="not a setting to change"):
        profiles.settings(chapter, "smoke", {"profile": "full"})


def test_the_test_beds_are_differences_from_their_own_base_never_from_smoke():
    for chapter, by_profile in profiles._PROFILES.items():
        for name, (base, _) in by_profile.items():
            assert base is {"smoke": profiles.SMOKE, "fashion": profiles.FASHION, "glyphs": profiles.GLYPHS,
                            "glyphs2": profiles.GLYPHS2, "colab": profiles.COLAB, "full": profiles.GPU}[name], \
                (chapter, name)


@pytest.mark.parametrize("chapter", ["dcdl", "cbswr", "eps", "ecaml", "noise_guarantees", "bench"])
def test_test_bed_ii_profiles_are_those_its_committed_runs_were_made_with(chapter):
    """The profile that decides verdicts cannot change by accident (a CI speed edit, a new default): every setting
    each committed test bed II run recorded equals the profile's now (the run's own choices sit beside them),
    but for the changes declared for the next re-run (profiles.CHANGED_SINCE_RUNS), each of which must differ, and
    how a run used its machine (settings.MACHINE: a sweep's points run side by side on fewer threads each)."""
    runs = report.runs_of(chapter, "glyphs2")
    assert len(runs) >= 10
    now = profiles.settings(chapter, "glyphs2").to_dict()
    declared = profiles.CHANGED_SINCE_RUNS.get(chapter, {})
    defaults = type(profiles.settings(chapter, "glyphs2"))(dataset="-", model="-", epochs=1).to_dict()
    for run in runs:
        differ = {k: (v, now.get(k, "<not a setting>")) for k, v in run["settings"].items()
                  if now.get(k) != v and k not in MACHINE}  # threads: a sweep's points side by side
        new = {k for k in declared if k not in run["settings"]}  # a setting the runs did not have yet
        # a setting added since the runs, which the profile sets away from its type's default (a new row, a new
        # knob), changes what the runs compute: it must be declared too
        added = {k for k, v in now.items() if k not in run["settings"] and v != defaults.get(k)}
        assert added <= set(declared), f"{chapter}: settings the runs did not have: {sorted(added)}"
        assert set(differ) | new == set(declared), f"{chapter} seed {run['seeds']}: {differ}, declared {declared}"


def test_a_run_records_its_choices_beside_its_settings(monkeypatch, tmp_path):
    path = tmp_path / "tables.jsonl"
    monkeypatch.setenv(report.ENV, str(path))
    cfg = profiles.settings("cbswr", "glyphs2")
    report.record("T", {"r": {"R@1": [0.5]}}, cfg=cfg, choices={"head": "released"}, seeds=[0], device="cpu")
    report.record("U", {"r": {"R@1": [0.6]}}, cfg=cfg, seeds=[0], device="cpu")
    entry = json.loads(path.read_text().splitlines()[0])
    assert entry["choices"] == {"head": "released"} and entry["settings"]["head"] == "linear"
    run = report.run_file("cbswr", {}, path, "cmd", 1.0)
    assert run["choices"] == {"head": "released"} and run["settings"] == cfg.to_dict()


def test_a_run_file_keeps_the_searches_of_every_table_it_recorded(monkeypatch, tmp_path):
    """EPS searches Table 1's arms and Table 2's in two calls, each table recording its own: the run file holds
    both searches' rows under one "best shot" (a later table's once replaced an earlier's), a head once."""
    path = tmp_path / "tables.jsonl"
    monkeypatch.setenv(report.ENV, str(path))
    cfg = profiles.settings("eps", "glyphs2")
    report.record("T1", {"r": {"R@1": [0.5]}}, cfg=cfg, choices={"best shot": {"Triplet": {"values": {"lr": 1}}}},
                  seeds=[0], device="cpu")
    report.record("T2", {"r": {"R@1": [0.6]}}, cfg=cfg, choices={"best shot": {"MS": {"values": {"lr": 2}}},
                                                                  "head": "x"}, seeds=[0], device="cpu")
    report.record("T3", {"r": {"R@1": [0.7]}}, cfg=cfg, choices={"head": "y"}, seeds=[0], device="cpu")
    run = report.run_file("eps", {}, path, "cmd", 1.0)
    assert run["choices"] == {"best shot": {"Triplet": {"values": {"lr": 1}}, "MS": {"values": {"lr": 2}}},
                              "head": "y"}


def test_the_migration_moves_a_written_back_choice_and_leaves_a_converted_file_alone(tmp_path):
    migrate = load_script("data/migrate_records.py")
    old = json.loads((ROOT / "data/results/cbswr/glyphs2_seed-0.json").read_text())
    old["settings"]["head"] = old.pop("choices")["head"]  # as the file stood before 0.22.0
    new = migrate.choices_beside_settings(old)
    assert new["choices"] == {"head": "released"} and "head" not in new["settings"]
    assert list(new).index("choices") == list(new).index("settings") + 1
    assert migrate.choices_beside_settings(new) == new
    # a file written since 0.22.0: its head setting ("linear") and its chosen head side by side, left alone (the
    # step once moved the setting over the choice)
    current = json.loads((ROOT / "data/results/cbswr/glyphs2_seed-0.json").read_text())
    assert current["settings"]["head"] == "linear" and "head" in current["choices"]
    assert migrate.choices_beside_settings(current) == current
    assert migrate.main(["--check"]) == 0  # every committed record is in the current schema


def test_settings_types_share_one_base():
    for kind in TYPES.values():
        assert issubclass(kind, Settings)
    assert set(Settings.known()) < set(CBSwRSettings.known())


def _unknown_options(cfg) -> dict:
    """``{dataset: options its loader does not name}`` for each dataset a profile loads with options of its own
    (the chapter's data, EPS's even/odd and its superclasses); empty when every option is a named parameter."""
    import inspect

    from dml_tutorial import data

    found = [(cfg.dataset, cfg.dataset_options)]
    if getattr(cfg, "even_odd_dataset", None):
        found.append((cfg.even_odd_dataset, cfg.even_odd_options))
    if getattr(cfg, "superclasses", None):
        found.append((cfg.superclasses["dataset"], cfg.superclasses.get("options", {})))
    unknown = {}
    for dataset, options in found:
        if dataset in data.DATASETS:
            named = {n for n, p in inspect.signature(data.DATASETS[dataset]).parameters.items()
                     if p.kind not in (p.VAR_KEYWORD, p.VAR_POSITIONAL)}
            if set(options) - named:
                unknown[dataset] = sorted(set(options) - named)
    return unknown


@pytest.mark.parametrize("chapter", sorted(profiles.CHAPTERS))
def test_every_dataset_option_of_a_profile_is_one_its_loader_names(chapter):
    """A loader that takes ``**_`` (the glyphs') would ignore a misspelt option (``vary_charaters``) and run the
    profile without it: every option a profile passes must be a named parameter of its dataset's loader."""
    for name, cfg in profiles.CHAPTERS[chapter].items():
        assert not _unknown_options(cfg), f"{chapter}/{name}: {_unknown_options(cfg)}"


def test_a_misspelt_dataset_option_is_caught():
    cfg = profiles.settings("eps", "glyphs2")
    assert _unknown_options(cfg) == {}
    typo = dataclasses.replace(cfg, even_odd_options={**cfg.even_odd_options, "vary_charaters": True})
    assert _unknown_options(typo) == {"glyphs": ["vary_charaters"]}
