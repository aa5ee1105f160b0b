import pytest
import torch

from dml_tutorial import profiles, train


def test_auto_follows_cuda_availability(monkeypatch):
    assert profiles.resolve_profile("auto") == ("colab" if torch.cuda.is_available() else "smoke")
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    assert profiles.resolve_profile("auto") == "colab"  # the profile sized for one Colab session, never "full"
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert profiles.resolve_profile("auto") == "smoke"


@pytest.mark.parametrize("name", ["smoke", "colab", "full"])
def test_explicit_profiles_pass_through(name):
    assert profiles.settings("foundations", name)["profile"] == name


def test_unknown_profile_is_a_clear_error():
    with pytest.raises(ValueError, match="unknown profile 'fast'"):
        profiles.resolve_profile("fast")


def test_overrides_apply_and_none_keeps_the_profile_value():
    base = profiles.settings("foundations", "smoke")
    assert profiles.settings("foundations", "smoke", epochs=None)["epochs"] == base["epochs"]
    assert profiles.settings("foundations", "smoke", epochs=3)["epochs"] == 3
    with pytest.raises(ValueError, match="unknown setting"):
        profiles.settings("foundations", "smoke", epoch=3)
    with pytest.raises(ValueError, match="unknown chapter"):
        profiles.settings("nope", "smoke")


def test_settings_dict_changes_any_setting_and_parameters_come_last():
    full = profiles.settings("ecaml", "full")
    cfg = profiles.settings("ecaml", "full", {"p": 8, "lr_step": 3, "epochs": 5}, epochs=7, dataset=None)
    assert (cfg["p"], cfg["lr_step"], cfg["epochs"], cfg["dataset"]) == (8, 3, 7, full["dataset"])
    assert profiles.settings("ecaml", "full", {"batches_per_epoch": None})["batches_per_epoch"] is None  # kept
    assert full["batches_per_epoch"] is not None
    with pytest.raises(ValueError, match="unknown setting"):
        profiles.settings("ecaml", "full", {"batch": 3})
    with pytest.raises(ValueError, match="SETTINGS must be a dict"):
        profiles.settings("ecaml", "full", [("p", 3)])


def test_device_resolution():
    assert train.resolve_device("cpu").type == "cpu"
    assert train.resolve_device("auto").type == ("cuda" if torch.cuda.is_available() else "cpu")
    with pytest.raises(ValueError):
        train.resolve_device("tpu:7")
    if not torch.cuda.is_available():
        with pytest.raises(ValueError, match="no CUDA GPU"):
            train.resolve_device("cuda")


@pytest.mark.parametrize("chapter", sorted(profiles.CHAPTERS))
def test_colab_profiles_run_the_papers_data_with_one_seed_and_keep_their_runs(chapter):
    cfg, full = profiles.settings(chapter, "colab"), profiles.settings(chapter, "full")
    assert cfg["model"] == full["model"] and cfg["epochs"] < full["epochs"]
    assert cfg["n_seeds"] == (full["n_seeds"] if chapter == "foundations" else 1)  # foundations: 3 quick seeds
    assert cfg["dataset"] in ("mnist", "cifar10", "cub200")  # downloads itself, with checksums (CUB: 1.2 GB)
    assert profiles.default_cache(cfg) == f"runs/{chapter}-{cfg['dataset']}-{profiles.settings_hash(cfg)}"
    assert profiles.default_cache(profiles.settings(chapter, "smoke")) is None
    assert profiles.default_cache(profiles.settings(chapter, "smoke"), "/drive/runs").startswith("/drive/runs/")
    if full.get("workers"):  # images decoded from disk: Colab has two CPUs
        assert cfg["workers"] == 2


def test_the_noise_toplines_train_as_many_steps_as_the_noisy_runs():
    # a PK sampler without batches_per_epoch sizes the epoch by the data, so the (1 - p) topline got fewer steps
    assert all(p["batches_per_epoch"] for p in profiles.CHAPTERS["noise_guarantees"].values())


@pytest.mark.parametrize("chapter", [c for c, p in profiles.CHAPTERS.items() if "fashion" in p])
def test_fashion_profiles_run_the_smoke_experiments_on_real_data_with_enough_seeds(chapter):
    cfg, smoke = profiles.settings(chapter, "fashion"), profiles.settings(chapter, "smoke")
    assert cfg["dataset"] == "fashion_mnist" and cfg["profile"] == "fashion"
    assert cfg["n_seeds"] >= 5  # a verdict rests on paired intervals over at least five seeds (evidence.py)
    assert set(smoke) <= set(cfg)  # every setting the notebook reads is there
    if cfg.seen is not None:  # the class-disjoint chapters
        assert cfg.seen == profiles.FASHION_SEEN and (cfg.p or 0) <= len(cfg.seen)


def test_a_missing_profile_names_the_chapters_profiles():
    with pytest.raises(ValueError, match="no 'fashion' profile; its profiles: smoke, colab, full"):
        profiles.settings("foundations", "fashion")


def _glyph_search_choice() -> dict:
    """``{method: best value}`` of the bench's recorded search on the glyph validation characters, read from its
    run file (an independent record: the profiles below copy these values by hand)."""
    import json
    from pathlib import Path

    run = json.loads((Path(__file__).parents[1] / "data/results/bench/glyphs_seed-0.json").read_text())
    (search,) = [t for t in run["tables"] if t["table"].startswith("Search")]
    best = {}
    for row, cols in search["measured"].items():
        method, value = row.rsplit(" = ", 1)
        score = sum(cols["MAP@R"]) / len(cols["MAP@R"])
        if method not in best or score > best[method][1]:
            best[method] = (float(value), score)
    return {method: value for method, (value, _) in best.items()}


def test_glyph_profiles_take_the_benchs_validated_settings():
    """EPS's and ECAML's glyph baselines, and DCDL's weight sweep, take the settings the bench's search chose on
    validation characters."""
    chosen = _glyph_search_choice()
    eps_options = profiles.CHAPTERS["eps"]["glyphs"]["loss_options"]
    assert eps_options["triplet"] == {"margin": chosen["Triplet, random semi-hard, margin"],
                                      "negatives": "semihard-random"}
    assert eps_options["margin"] == {"beta": chosen["Margin, beta"]}
    assert eps_options["ms"] == {"lam": chosen["MS, lam"]}
    assert profiles.CHAPTERS["ecaml"]["glyphs"]["local_options"] == {"npair": {"scale": chosen["N-pair, scale"]}}
    weights = profiles.CHAPTERS["dcdl"]["glyphs"]["lambdas"]
    assert chosen["Triplet + L^W, sinkhorn"] in weights and chosen["Triplet + L^L, mmd"] in weights
    from dml_tutorial import claims  # the verdicts at the validated weights name the same ones

    assert {t: float(v) for t, v in claims.DCDL_VALIDATED.items()} == {"W": chosen["Triplet + L^W, sinkhorn"],
                                                                     "L": chosen["Triplet + L^L, mmd"]}


def test_the_cache_folder_changes_with_every_setting_and_the_version(monkeypatch):
    """A changed SETTINGS or EPOCHS, a switch from colab to full, or a new release names another folder, so that
    no run trained under other settings is reloaded as if new."""
    colab = profiles.settings("ecaml", "colab")
    folders = {profiles.default_cache(c) for c in (
        colab, profiles.settings("ecaml", "full", dataset="cub200"), profiles.settings("ecaml", "colab", epochs=3),
        profiles.settings("ecaml", "colab", {"batches_per_epoch": 10}))}
    assert len(folders) == 4 and all(f.startswith("runs/ecaml-cub200-") for f in folders)
    assert profiles.default_cache(profiles.settings("ecaml", "colab")) == profiles.default_cache(colab)
    monkeypatch.setattr(profiles, "__version__", "9.9.9")
    assert profiles.default_cache(colab) not in folders


def test_a_chapter_begins_with_its_settings_device_seeds_cache_and_progress(tmp_path):
    """profiles.begin, every chapter's setup cell: it unpacks into the five names the chapters use, seeds from
    SEED, keeps no cache on a CPU profile unless RUNS names a folder, and prints one line with the paper's column."""
    start = profiles.begin("eps", "smoke", {"epochs": 2}, seed=5, device="cpu")
    cfg, device, seeds, cache, progress = start
    assert cfg == profiles.settings("eps", "smoke", {"epochs": 2}) and str(device) == "cpu"
    assert seeds == [5, 6, 7] == [5 + i for i in range(cfg.n_seeds)] and cache is None and progress is None
    assert start.paper == cfg.compare_with == "CARS"  # digits: the profile's column
    assert str(start) == ("profile: smoke | dataset: digits | model: mlp | epochs: 2 | batches of 6 classes x 8 | "
                          "seeds: [5, 6, 7] | device: cpu | paper: CARS")
    kept = profiles.begin("bench", "glyphs2", runs=tmp_path, device="cpu")
    assert kept.cache == profiles.default_cache(kept.cfg, tmp_path) and kept.progress is False
    assert "paper" not in str(kept) and kept.paper is None
    cub = profiles.begin("cbswr", "colab", device="cpu")  # a GPU profile named on a CPU: its cache, its column
    assert cub.paper == "CUB" and cub.cache.startswith("runs/cbswr-cub200-") and "batches of 64" in str(cub)
    with pytest.raises(ValueError, match="unknown chapter"):
        profiles.begin("nope", "smoke")
    whole = profiles.begin("dcdl", "smoke", device="cpu")  # no P x K batch and no batch size: none printed
    assert "batches" not in str(whole) and str(whole).endswith("device: cpu | paper: C-10")


def test_begin_on_a_colab_cpu_runtime_says_how_to_get_a_gpu(monkeypatch, capsys):
    """The install cell used to say it; the setup cell says it now, where the device is known."""
    import sys
    import types

    profiles.begin("eps", "smoke", device="cpu")
    assert "No GPU" not in capsys.readouterr().out  # not on Colab: nothing said
    monkeypatch.setitem(sys.modules, "google.colab", types.ModuleType("google.colab"))
    profiles.begin("eps", "smoke", device="cpu")
    assert capsys.readouterr().out == "No GPU: Runtime > Change runtime type > T4 GPU, then Run all.\n"
