"""One noisy-label experiment end to end on a small offline dataset, the grid with its cache, the paired
comparison against scipy's t distribution, and the table layout."""

import dataclasses

import numpy as np
import pytest
import torch
from scipy import stats

from dml_tutorial import data, dcdl, ecaml, experiment, metrics, models, objective, profiles, train
from dml_tutorial.settings import Settings

CFG = {"model": "mlp", "dim": 8, "dropout": 0.1, "epochs": 2, "lr": 1e-3, "lr_step": 1, "threads": 1}


@pytest.fixture(scope="module")
def splits():
    return data.load_dataset("subclusters", split="samples", seed=0, num_classes=4, modes_per_class=2,
                             samples_per_mode=30)


def test_corrupt_keeps_the_clean_labels_and_repeats(splits):
    assert experiment.corrupt(splits.train, None) is splits.train
    noisy = experiment.corrupt(splits.train, ("symmetric", 0.5), seed=3)
    again = experiment.corrupt(splits.train, ("symmetric", 0.5), seed=3)
    assert np.array_equal(noisy.labels, again.labels)
    assert np.array_equal(noisy.extras["clean"], splits.train.labels)
    assert 0.3 < np.mean(noisy.labels != splits.train.labels) < 0.7
    pairs = {0: 1}
    asym = experiment.corrupt(splits.train, ("asymmetric", 1.0), pairs=pairs)
    assert set(asym.labels[splits.train.labels == 0]) == {1}
    assert np.array_equal(asym.labels[splits.train.labels != 0], splits.train.labels[splits.train.labels != 0])


@pytest.fixture
def deterministic():
    """Bit-for-bit repeats need deterministic kernels on CUDA (see train.seed_everything); CPU is exact anyway."""
    train.seed_everything(0, deterministic=True)
    yield
    torch.use_deterministic_algorithms(False)


def test_train_and_probe_measures_and_repeats(splits, deterministic):
    runs = [experiment.train_and_probe(splits, dcdl.dcdl_loss("trip", "W"), CFG, k=4, noise=("symmetric", 0.2),
                                       seed=1) for _ in range(2)]
    m = runs[0].metrics
    assert set(m) == {"accuracy", "R@1", "flipped", "seconds"}
    assert 0 <= m["accuracy"] <= 1 and 0 <= m["R@1"] <= 1 and 0 < m["flipped"] < 0.5
    assert runs[0].test_embeddings.shape == (len(splits.test), CFG["dim"])
    assert len(runs[0].history) == CFG["epochs"]
    assert m["accuracy"] == runs[1].metrics["accuracy"]
    assert torch.equal(runs[0].test_embeddings, runs[1].test_embeddings)
    # the probe's predictions give its accuracy back, and are kept for per-class readings
    assert m["accuracy"] == pytest.approx(np.mean(runs[0].test_predictions == splits.test.labels))
    assert "|grad| W" not in runs[0].history.records[-1]  # curves off: no pulls
    curved = experiment.train_and_probe(splits, dcdl.dcdl_loss("trip", "W"), CFG, k=4, seed=1, curves=True)
    last = curved.history.records[-1]
    assert last["|grad| W"] > 0 and last["|grad| L_Trip"] >= 0 and len(curved.history) == CFG["epochs"]
    alone = experiment.train_and_probe(splits, dcdl.dcdl_loss("trip", None), CFG, k=4, seed=1, curves=True)
    last = alone.history.records[-1]  # the local loss alone: its value and pull, and the spread (issue #48)
    assert set(last) == {"epoch", "loss", "seconds", "within-class spread", "L_Trip", "|grad| L_Trip"}
    assert last["within-class spread"] > 0 and last["L_Trip"] >= 0


def _fake_run(calls):
    def run(value, seed):
        calls.append((value, seed))
        return experiment.Run({"accuracy": value + seed / 100}, torch.full((2, 2), float(seed)), train.History())
    return run


def test_grid_runs_every_seed_and_resumes_from_its_cache(tmp_path):
    calls = []
    configs = {("row", "clean"): {"value": 0.5}, ("row", "sym 0.3"): {"value": 0.25}}
    first = experiment.grid(configs, [0, 1], _fake_run(calls), cache=tmp_path)
    assert len(calls) == 4 and [r.metrics["accuracy"] for r in first[("row", "sym 0.3")]] == [0.25, 0.26]
    second = experiment.grid(configs, [0, 1], _fake_run(calls), cache=tmp_path)
    assert len(calls) == 4  # nothing re-run
    assert torch.equal(second[("row", "clean")][1].test_embeddings, torch.ones(2, 2))
    assert experiment.table(second) == {"row": {"clean": [0.5, 0.51], "sym 0.3": [0.25, 0.26]}}
    with pytest.raises(ValueError, match="at least one seed"):
        experiment.grid(configs, [], _fake_run(calls))


def test_cache_seconds_sums_the_trainings_a_cache_holds_over_its_sittings(tmp_path):
    def run(value, seed):
        return experiment.Run({"seconds": value * 10 + seed}, torch.zeros(1, 2), train.History())
    experiment.grid({"a": {"value": 1.0}}, [0, 1], run, cache=tmp_path)  # one sitting: 10 + 11 s
    experiment.grid({"a": {"value": 1.0}, "b": {"value": 2.0}}, [0, 1], run, cache=tmp_path)  # the next: 20 + 21 s
    (tmp_path / "b-seed0-0123456789.partial.pt").write_bytes(b"a training in progress")
    (tmp_path / "notes.pt").write_text("not a result")
    torch.save(torch.zeros(3), tmp_path / "weights.pt")  # nor are weights
    torch.save([{"metrics": {"seconds": 5.0}}], tmp_path / "listed.pt")
    assert experiment.cache_seconds(tmp_path) == (62.0, 4)
    assert experiment.cache_seconds(tmp_path / "empty") == (0.0, 0)


def test_a_cached_run_trained_under_other_settings_is_trained_again(tmp_path, capsys):
    calls = []
    experiment.grid({"row": {"value": 0.5}}, [0], _fake_run(calls), cache=tmp_path)
    experiment.grid({"row": {"value": 0.5}}, [0], _fake_run(calls), cache=tmp_path)
    assert len(calls) == 1  # same settings: loaded
    changed = experiment.grid({"row": {"value": 0.75}}, [0], _fake_run(calls), cache=tmp_path)
    assert len(calls) == 2 and changed["row"][0].metrics["accuracy"] == 0.75  # same row name, other settings
    back = experiment.grid({"row": {"value": 0.5}}, [0], _fake_run(calls), cache=tmp_path)
    assert len(calls) == 2 and back["row"][0].metrics["accuracy"] == 0.5  # each kept under its own hash
    assert len(list(tmp_path.glob("row-seed0-*.pt"))) == 2
    stored = next(tmp_path.glob("row-seed0-*.pt"))  # a file whose description is not the one its name promises
    state = torch.load(stored, weights_only=False)
    torch.save({**state, "settings": {"tampered": True}}, stored)
    experiment.grid({"row": {"value": state["settings"]["kwargs"]["value"]}}, [0], _fake_run(calls), cache=tmp_path)
    assert len(calls) == 3 and "trained under other settings" in capsys.readouterr().err

    def run(value, seed, cfg):
        calls.append(cfg)
        return experiment.Run({"accuracy": cfg["lr"]}, torch.zeros(2, 2), train.History())

    from functools import partial

    for lr in (1e-3, 1e-4, 1e-4):  # the bound cfg (a notebook's run partial) counts too
        out = experiment.grid({"row": {"value": 0.0}}, [0], partial(run, cfg={"lr": lr}), cache=tmp_path / "b")
        assert out["row"][0].metrics["accuracy"] == lr
    assert len(calls) == 5


def test_progress_prints_a_line_per_run_and_passes_progress_to_runs_that_take_it(tmp_path, capsys):
    seen = []

    def run(value, seed, progress=False):
        seen.append(progress)
        return experiment.Run({"accuracy": value}, torch.zeros(1, 1), train.History())

    experiment.grid({"a": {"value": 1.0}}, [0], run, "Table 1", cache=tmp_path, progress=True)
    experiment.grid({"a": {"value": 1.0}, "b": {"value": 2.0}}, [0], run, "Table 1", cache=tmp_path, progress=True)
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("Table 1: run 1 of 1 done in ") and lines[0].endswith("about 0 min left")
    assert lines[1] == "Table 1: run 1 of 2 loaded from the cache; the time left shows after the first trained run"
    assert lines[2].startswith("Table 1: run 2 of 2 done in ") and seen == [True, True]
    experiment.grid({"c": {"value": 3.0}}, [0], run, "one bar")  # the CPU profiles: no lines, progress not passed
    shown = capsys.readouterr()
    assert shown.out == "" and "one bar: 100%" in shown.err and seen == [True, True, False]
    experiment.grid({"d": {"value": 4.0}}, [0], run, "smoke", progress=None)  # smoke: nothing at all
    assert capsys.readouterr() == ("", "") and seen == [True, True, False, False]
    assert [profiles.shows_progress(Settings(profile=p, dataset="digits", model="mlp", epochs=1))
            for p in ("full", "colab", "glyphs2", "fashion", "smoke")] == [True, True, False, False, None]


class _StopAfter:
    """A loss that stops the process (as a disconnected runtime would) after ``steps`` steps; its repr is the
    loss's, so that the resumed run has the same settings."""

    def __init__(self, steps=None):
        self.steps, self.calls, self.loss = steps, 0, dcdl.dcdl_loss("trip", None)

    def __call__(self, z, y):
        self.calls += 1
        if self.steps is not None:
            self.steps -= 1
            if self.steps < 0:
                raise KeyboardInterrupt("runtime disconnected")
        return self.loss(z, y)

    def __repr__(self):
        return "triplet"


def test_a_run_stopped_mid_way_resumes_from_its_last_epoch_and_equals_an_uninterrupted_one(splits, tmp_path):
    cfg = {**CFG, "epochs": 4, "batches_per_epoch": 3}

    def run(loss_fn, seed, checkpoint=None):
        return experiment.train_and_retrieve(splits, loss_fn, cfg, p=4, k=4, seed=seed, checkpoint=checkpoint)

    whole = experiment.grid({"row": {"loss_fn": _StopAfter()}}, [1], run, cache=tmp_path / "whole")["row"][0]
    with pytest.raises(KeyboardInterrupt):  # stopped in the third epoch: two epochs are in the checkpoint
        experiment.grid({"row": {"loss_fn": _StopAfter(7)}}, [1], run, cache=tmp_path / "cut")
    (partial,) = (tmp_path / "cut").glob("row-seed1-*.partial.pt")
    assert torch.load(partial, weights_only=False)["epoch"] == 2
    loss = _StopAfter()
    resumed = experiment.grid({"row": {"loss_fn": loss}}, [1], run, cache=tmp_path / "cut")["row"][0]
    assert loss.calls == 2 * 3  # the last two epochs of three batches: resumed, not restarted
    assert not partial.exists()  # done: only the finished run is kept
    assert [r["epoch"] for r in resumed.history.records] == [1, 2, 3, 4]
    assert resumed.metrics["R@1"] == whole.metrics["R@1"]
    assert torch.equal(resumed.test_embeddings, whole.test_embeddings)
    assert [r["loss"] for r in resumed.history.records] == [r["loss"] for r in whole.history.records]


def test_paired_difference_is_a_paired_t_test():
    def runs(values):
        return [experiment.Run({"accuracy": v}, None, None) for v in values]

    a, b = [0.80, 0.82, 0.79, 0.85], [0.83, 0.83, 0.84, 0.86]
    d = np.subtract(b, a)
    t = d.mean() / (d.std(ddof=1) / np.sqrt(len(d)))
    out = experiment.paired_difference(runs(a), runs(b))
    assert out["mean"] == pytest.approx(d.mean()) and out["std"] == pytest.approx(d.std(ddof=1))
    assert out["p"] == pytest.approx(2 * stats.t.sf(abs(t), len(d) - 1))
    assert np.isnan(experiment.paired_difference(runs([0.5]), runs([0.6]))["p"])
    with pytest.raises(ValueError, match="same, non-zero number"):
        experiment.paired_difference(runs(a), runs(b[:2]))


def test_train_and_retrieve_measures_unseen_classes_and_records_the_gap():
    seen_unseen = data.load_dataset("subclusters", split="classes", seed=0, num_classes=4, modes_per_class=2,
                                    samples_per_mode=20)
    run = experiment.train_and_retrieve(seen_unseen, dcdl.dcdl_loss("trip", None), CFG, p=2, k=8, seed=0,
                                        curves=True)
    assert {"R@1", "R@2", "R@4", "R@8", "NMI", "F1", "seconds"} == set(run.metrics)
    assert all(0 <= run.metrics[m] <= 1 for m in ("R@1", "R@8", "NMI", "F1"))
    assert run.metrics["R@1"] <= run.metrics["R@2"] <= run.metrics["R@4"] <= run.metrics["R@8"]
    assert len(run.history["seen R@1"]) == CFG["epochs"] and None not in run.history["unseen R@1"]
    assert run.history["unseen R@1"][-1] == pytest.approx(run.metrics["R@1"])
    # MAP@R beside R@1 (issue #86): the last epoch's unseen one is the final test embeddings' (the whole split)
    assert run.history["unseen MAP@R"][-1] == pytest.approx(metrics.map_at_r(run.test_embeddings,
                                                                              seen_unseen.test.labels))
    assert len(run.history["seen MAP@R"]) == CFG["epochs"] and all(0 < v <= 1 for v in run.history["seen MAP@R"])


def test_checkpoints_every_few_epochs_lie_on_the_path_of_the_shorter_run():
    # the noise chapter's checkpoints (test bed II): a run three times as long, evaluated every eval_every epochs,
    # passes through the shorter run of the same seed (no learning-rate step: the same path up to its length)
    seen_unseen = data.load_dataset("subclusters", split="classes", seed=0, num_classes=8, modes_per_class=4,
                                    samples_per_mode=10)
    loss, cfg = dcdl.dcdl_loss("trip", None), {**CFG, "lr": 1e-2, "lr_step": None}
    short = experiment.train_and_retrieve(seen_unseen, loss, {**cfg, "epochs": 2}, p=2, k=8, seed=0, curves=True)
    long = experiment.train_and_retrieve(seen_unseen, loss, {**cfg, "epochs": 6, "eval_every": 2}, p=2, k=8,
                                         seed=0, curves=True)
    curve = long.history["unseen R@1"]  # one entry an epoch, None where it was not evaluated
    assert [i for i, v in enumerate(curve) if v is not None] == [1, 3, 5]
    assert curve[1] == short.history["unseen R@1"][-1] and len(set(curve[1::2])) > 1  # the path, and it moves


def test_retrieval_reports_the_datasets_usual_recall_ks():
    # SOP papers report R@1/10/100/1000 (ECAML Table 6): a run on "sop" must measure those, not R@1/2/4/8
    seen_unseen = data.load_dataset("subclusters", split="classes", seed=0, num_classes=4, modes_per_class=2,
                                    samples_per_mode=20)
    run = experiment.train_and_retrieve(seen_unseen, dcdl.dcdl_loss("trip", None), {**CFG, "dataset": "sop"},
                                        p=2, k=8, seed=0)
    assert {"R@1", "R@10", "R@100", "R@1000"} <= set(run.metrics) and "R@2" not in run.metrics
    assert set(ecaml.REPORTED["SOP"]["Triplet"]) == {f"R@{k}" for k in metrics.recall_ks("sop")} | {"NMI", "F1"}
    assert profiles.PAPER_COLUMNS["ecaml"]["sop"] == "SOP"  # the paper's table a run on SOP quotes


def test_noise_fraction_and_init_in_retrieval(splits):
    seen_unseen = data.load_dataset("subclusters", split="classes", seed=0, num_classes=4, modes_per_class=2,
                                    samples_per_mode=20)
    kept = experiment.subsample(seen_unseen.train, 0.5, seed=1)
    assert 0.3 * len(seen_unseen.train) < len(kept) < 0.7 * len(seen_unseen.train)
    assert experiment.subsample(seen_unseen.train, 1.0) is seen_unseen.train
    with pytest.raises(ValueError, match="fraction"):
        experiment.subsample(seen_unseen.train, 0.0)
    loss = dcdl.dcdl_loss("trip", None)
    first = experiment.train_and_retrieve(seen_unseen, loss, CFG, p=2, k=8, seed=0, keep_state=True)
    assert first.state is not None and "embedding.weight" in first.state
    zero = {**CFG, "epochs": 0}  # no training: the embeddings are those of the initial weights
    resumed = experiment.train_and_retrieve(seen_unseen, loss, zero, p=2, k=8, seed=5, init=first.state)
    assert torch.allclose(resumed.test_embeddings, first.test_embeddings)
    noisy = experiment.train_and_retrieve(seen_unseen, loss, CFG, p=2, k=8, seed=0, noise=("symmetric", 0.5))
    assert not torch.equal(noisy.test_embeddings, first.test_embeddings)


def test_raw_input_reference_is_the_cosine_retrieval_of_the_pixels():
    zs = data.load_dataset("digits", split="classes", seen=range(6))
    cfg = {"model": "mlp", "dim": 8, "dataset": "digits"}
    before = zs.test.x.clone()
    run = experiment.reference_run(zs, cfg, "raw input")
    assert torch.equal(zs.test.x, before)  # normalised in place, but on its own copy
    pixels = zs.test.batch(np.arange(len(zs.test))).flatten(1).float()
    cosine = pixels / pixels.norm(dim=1, keepdim=True)  # by hand, not through the package's normalisation
    expected = metrics.evaluate(cosine, zs.test.labels)
    for key, value in expected.items():
        assert run.metrics[key] == pytest.approx(value)
    assert 0 < run.metrics["F1"] <= 1


@pytest.mark.parametrize("kind", experiment.REFERENCES)
def test_reference_rows_measure_on_the_runs_device(kind, monkeypatch):
    """The distances of a reference row are computed on the run's device (a GPU's on Colab: the raw-input row's
    N^2 d on CUB took minutes on two CPUs), resolved from ``"auto"`` as training is."""
    asked = []
    evaluate = metrics.evaluate
    monkeypatch.setattr(metrics, "evaluate", lambda *a, **kw: asked.append(kw["device"]) or evaluate(*a, **kw))
    zs = data.load_dataset("digits", split="classes", seen=range(6))
    experiment.reference_run(zs, {"model": "mlp", "dim": 8, "dataset": "digits", "threads": 1}, kind)
    assert asked == [train.resolve_device("auto")]


def test_the_raw_input_row_is_left_out_where_its_pixels_would_not_fit(monkeypatch):
    """SOP's 60,502 test crops of 150,528 values would be 36 GB of float32: the raw-input row is measured where the
    pixels fit (:data:`experiment.RAW_INPUT_BYTES`), photographs read from disk included, and left out above."""
    zs = data.load_dataset("digits", split="classes", seen=range(6))
    cfg = {"model": "mlp", "dim": 8, "dataset": "digits", "threads": 1}
    size = 4 * len(zs.test) * 64  # digits: 8 x 8 pixels
    assert experiment.raw_input_bytes(zs) == size
    assert experiment.reference_kinds(cfg, zs) == experiment.REFERENCES == experiment.reference_kinds(cfg)
    monkeypatch.setattr(experiment, "RAW_INPUT_BYTES", size - 1)
    assert experiment.reference_kinds(cfg, zs) == ("untrained network",)
    assert experiment.reference_kinds(cfg) == experiment.REFERENCES  # without the splits, nothing is left out
    measured = experiment.references(zs, cfg, [0, 1])
    assert list(measured) == [("untrained network", "")] and len(measured[("untrained network", "")]) == 2


def test_untrained_reference_is_the_seeded_initial_network(splits):
    cfg = {"model": "mlp", "dim": 8, "dataset": "digits", "threads": 1}
    run = experiment.reference_run(splits, cfg, "untrained network", probe=True, noise=("symmetric", 0.3), seed=3)
    train.seed_everything(3, threads=1)
    model = models.make_model("mlp", data.input_shape(splits.train), 8)
    assert torch.allclose(run.test_embeddings, train.embed(model, splits.test))
    noisy = experiment.corrupt(splits.train, ("symmetric", 0.3), seed=3)
    expected = metrics.linear_probe_accuracy(train.embed(model, noisy), noisy.labels, run.test_embeddings,
                                             splits.test.labels, seed=3)
    assert run.metrics["accuracy"] == pytest.approx(expected)
    with pytest.raises(ValueError, match="reference"):
        experiment.reference_run(splits, cfg, "pretrained network")


def test_references_give_every_kind_every_column_and_seed(splits):
    cfg = {"model": "mlp", "dim": 8, "dataset": "digits", "threads": 1}
    noises = (None, ("symmetric", 0.3))
    refs = experiment.references(splits, cfg, [0, 1], probe=True, noises=noises)
    assert set(refs) == {(k, c) for k in experiment.REFERENCES for c in ("clean", "sym 0.3")}
    assert all(len(runs) == 2 for runs in refs.values())
    clean_raw = [r.metrics["accuracy"] for r in refs[("raw input", "clean")]]
    assert clean_raw[0] == clean_raw[1]  # measured once: no seed enters it
    untrained = [r.metrics["accuracy"] for r in refs[("untrained network", "clean")]]
    assert untrained[0] != untrained[1]  # two initialisations
    table = experiment.table(refs)
    assert set(table) == set(experiment.REFERENCES) and set(table["raw input"]) == {"clean", "sym 0.3"}
    assert all(r.train_embeddings is not None for runs in refs.values() for r in runs)  # a probe needs them
    retrieval = experiment.references(splits, cfg, [0, 1])
    assert all(r.train_embeddings is None for runs in retrieval.values() for r in runs)
    kept = experiment.references(splits, cfg, [0, 1], train_embeddings=True)
    for kind in experiment.REFERENCES:
        runs = kept[(kind, "")]
        assert all(r.train_embeddings.shape[0] == len(splits.train) for r in runs)
        alone = experiment.reference_run(splits, cfg, kind, seed=1, train_embeddings=True)
        torch.testing.assert_close(runs[1].train_embeddings, alone.train_embeddings)


def test_references_are_kept_with_the_runs_in_a_cache_and_never_counted_as_trainings(splits, tmp_path,
                                                                                     monkeypatch):
    """Issue #88: the reference rows were measured again on every run of a chapter (CUB's raw input: minutes of
    distances and clustering); with the grid's cache they are kept there, and a load is no training for the plan."""
    from dml_tutorial import recorder

    cfg = {"model": "mlp", "dim": 8, "dataset": "digits", "threads": 1}
    first = experiment.references(splits, cfg, [0, 1], cache=tmp_path)
    measured = []
    real = experiment._measure  # what each measurement runs (the cache's key names reference_run itself)
    monkeypatch.setattr(experiment, "_measure", lambda *a: measured.append(a[6]) or real(*a))
    before = len(recorder.current().trainings)
    again = experiment.references(splits, cfg, [0, 1], cache=tmp_path)
    assert measured == [] and len(recorder.current().trainings) == before  # loaded, and not counted
    for key, runs in first.items():
        assert [r.metrics for r in again[key]] == [r.metrics for r in runs]
        torch.testing.assert_close(again[key][1].test_embeddings, runs[1].test_embeddings)
    experiment.references(splits, {**cfg, "dim": 16}, [0, 1], cache=tmp_path)  # other settings: measured anew
    assert measured == [0, 0, 1]  # the raw input once (the pixels: no seed), the untrained network per seed


def test_curves_use_a_fixed_subset_of_large_splits_and_all_of_small_ones():
    big = data.ArrayDataset(torch.zeros(7000, 2), np.arange(7000) % 5)
    first, again = experiment._curve_subset(big, seed=1), experiment._curve_subset(big, seed=1)
    assert len(first) == experiment.CURVE_SAMPLES and np.array_equal(first.labels, again.labels)
    small = data.ArrayDataset(torch.zeros(300, 2), np.arange(300) % 5)
    assert experiment._curve_subset(small, seed=1) is small


def test_curves_of_an_objective_with_terms_record_each_terms_value_and_pull_without_changing_training():
    seen_unseen = data.load_dataset("subclusters", split="classes", seed=0, num_classes=4, modes_per_class=2,
                                    samples_per_mode=20)
    loss = ecaml.ecaml_loss("triplet", 0.5)
    with_curves = experiment.train_and_retrieve(seen_unseen, loss, CFG, p=2, k=8, seed=0, curves=True)
    for key in ("Triplet", "energy_confusion", "|grad| Triplet", "|grad| energy_confusion"):
        values = with_curves.history[key]
        assert len(values) == CFG["epochs"] and all(v is not None and np.isfinite(v) and v >= 0 for v in values)
    # EC as released, with the fc unit-norm penalty around the objective: its pulls are recorded too (they were not:
    # the wrapper hid the objective's terms, and test bed II's first ECAML run recorded no share for it)
    released = ecaml.ecaml_loss("binomial", 0.5, **ecaml.VARIANTS["released"])
    wider = data.load_dataset("subclusters", split="classes", seed=0, num_classes=8, modes_per_class=2,
                              samples_per_mode=20)  # 4 x 8 a batch: the released layer flags partners past 20
    run = experiment.train_and_retrieve(wider, released, CFG, p=4, k=8, seed=0, curves=True)
    share = objective.pull_share([run], "energy_confusion", "Binomial")
    assert share.shape == (1, CFG["epochs"]) and np.isfinite(share).all() and (share > 0).all()
    without = experiment.train_and_retrieve(seen_unseen, loss, CFG, p=2, k=8, seed=0)
    assert "|grad| Triplet" not in without.history.records[-1]
    # the probe batch draws no random numbers of the training's: the same weights either way
    assert torch.equal(with_curves.test_embeddings, without.test_embeddings)


def test_the_untrained_reference_recalibrates_its_batch_norm():
    images = data.ArrayDataset(torch.rand(48, 1, 8, 8) * 2 + 1, np.arange(48) % 4)
    splits = data.Splits("toy", "classes", images, images, "random pixels")
    cfg = {"model": "convnet", "dim": 4, "dataset": "digits", "threads": 1}
    run = experiment.reference_run(splits, cfg, "untrained network", seed=2)
    train.seed_everything(2, threads=1)
    model = models.from_settings(cfg, data.input_shape(images))
    stale = train.embed(model, images)  # the initial statistics, mean 0 and variance 1
    train.recalibrate_batch_norm(model, images)
    assert torch.allclose(run.test_embeddings, train.embed(model, images), atol=1e-6)
    assert not torch.allclose(run.test_embeddings, stale, atol=1e-3)


def test_a_profile_with_a_start_trains_from_its_trunk_and_measures_it_as_a_reference(monkeypatch):
    """``cfg["start"]``: every run begins from the start's trunk with its own embedding layer, and the references
    gain the start's features as they are (``STARTED``), computed from the trunk alone."""
    from dml_tutorial import pretrain

    splits = data.load_dataset("digits", split="classes", seen=range(6))
    monkeypatch.setitem(pretrain.STARTS, "fixture", {"model": "mlp"})
    cfg = {**profiles.settings("eps", "smoke"), "epochs": 0, "start": "fixture"}
    donor = models.from_settings({**cfg, "dim": 3}, (1, 8, 8))
    trunk = {k: v for k, v in donor.state_dict().items() if not k.startswith("embedding.")}
    monkeypatch.setattr(pretrain, "load_start", lambda name, root=None, build=True, seed=None: trunk)
    model, _, _ = experiment._train(splits.train, lambda z, y: z.sum() * 0, cfg, p=6, k=2, seed=0, device="cpu",
                                    progress=False, checkpoint=None)
    assert all(torch.equal(model.state_dict()[k], v) for k, v in trunk.items())
    rows = experiment.references(splits, cfg, [0], device="cpu")
    assert set(rows) == {("raw input", ""), ("untrained network", ""), (experiment.STARTED, "")}
    z = rows[(experiment.STARTED, "")][0].test_embeddings
    donor.eval()
    with torch.no_grad():
        expected = torch.nn.functional.normalize(donor.features(data.stack(splits.test, np.arange(len(splits.test)))),
                                                 dim=1)
    assert torch.allclose(z, expected, atol=1e-6)
    with pytest.raises(ValueError, match="start"):
        experiment.reference_run(splits, {**cfg, "start": None}, experiment.STARTED)
    other = {**cfg, "model": "convnet"}  # another network (EPS's even/odd): no start, no start row
    assert not pretrain.applies(other) and (experiment.STARTED, "") not in experiment.references(splits, other, [0])
    with pytest.raises(ValueError, match="unknown start"):
        pretrain.applies({**cfg, "start": "nowhere"})


def test_best_shots_runs_the_chapters_one_search_prints_each_choice_and_counts_the_walks(capsys):
    """experiment.best_shots, every chapter's search cell: the chapter's own best_shots through run_one (the same
    choices as calling it directly), one printed line a row, and the walks' trials added to the plan."""
    from dml_tutorial import search

    cfg = profiles.settings("dcdl", "glyphs2")

    def run(trial):  # the probe peaks at the top of the rate ladder, in a trial's first half: every row walks on,
        top = max(cfg.search_lrs)  # none is lengthened
        curve = {e: 0.5 + trial.settings.lr / top - abs(e - 4) / 100 for e in range(2, trial.settings.epochs + 1, 2)}
        return experiment.Run({}, None, train.History([{"epoch": e, "probe accuracy": v} for e, v in curve.items()]))

    added = []

    class Plan:
        def add(self, section, runs, like, epochs=None):
            added.append((section, runs, like) + ((epochs,) if epochs else ()))

    choices = experiment.best_shots(dcdl, cfg, 4, run, plan=Plan())
    assert choices == dcdl.best_shots(cfg, 4, run)
    lines = capsys.readouterr().out.splitlines()
    assert lines == [f"{row}: {search.describe(c)}" for row, c in choices["best shot"].items()]
    assert len(lines) == len(dcdl.searched_rows(cfg))
    walked = dcdl.unplanned(cfg, choices)
    assert walked > 0 and added == [("the searches' walks", walked, dcdl.BEST_SHOT)]
    added.clear()

    def rising(trial):  # still rising at every length: each row's best is lengthened to 20, then 40 epochs
        records = [{"epoch": e, "probe accuracy": e / 100} for e in range(2, trial.settings.epochs + 1, 2)]
        return experiment.Run({}, None, train.History(records))

    choices = experiment.best_shots(dcdl, cfg, 4, rising, plan=Plan())
    rows, longer = len(choices["best shot"]), dcdl.search_rule(cfg).lengths[1:]
    # without a cache each longer trial trains from the start: all its epochs
    assert added == [("the searches' walks", dcdl.unplanned(cfg, choices) - rows * len(longer), dcdl.BEST_SHOT)] + [
        (f"the searches' longer trials ({n} epochs each)", rows, dcdl.BEST_SHOT, n) for n in longer]
    added.clear()
    capsys.readouterr()
    assert experiment.best_shots(dcdl, profiles.settings("dcdl", "smoke"), 0, run, plan=Plan()) == {}
    assert added == [] and capsys.readouterr().out == ""  # a profile without a search: nothing run or said


def _probed_trial(spec, progress=False, checkpoint=None, *, splits):
    """A search trial probed as DCDL's are (train_and_probe's probe at every checkpoint)."""
    return experiment.train_and_probe(splits, spec.method, spec.settings, k=4, seed=spec.seed, progress=progress,
                                      checkpoint=checkpoint, probe_every=spec.settings.eval_every)


@pytest.mark.parametrize("lr_step", [None, 3])
@pytest.mark.parametrize("trial", ["retrieval", "probe"])
def test_a_longer_trial_goes_on_from_the_shorter_ones_last_state_to_the_run_from_the_start(tmp_path, lr_step, trial,
                                                                                          monkeypatch):
    """A search's next length (run_one's ``after``): 6 epochs gone on from the kept state of 2 equal 6 epochs from
    the start (history, metrics, embeddings), training only the 4 new epochs; for a retrieval trial (the noise
    chapter's runner: EPS, ECAML and the bench train the same way) and a probed one (DCDL's). Without a step
    (``lr_step=None``) the shorter run's scheduler steps at its own length + 1: the longer one keeps its own."""
    from functools import partial

    from dml_tutorial import guarantees, losses, spec

    splits = data.load_dataset("subclusters", split="classes", seed=0, num_classes=6, modes_per_class=2,
                               samples_per_mode=12)
    run = guarantees.run_spec({"validation": splits}, "cpu") if trial == "retrieval" else \
        partial(_probed_trial, splits=splits)
    cfg = Settings(profile="test", dataset="subclusters", model="mlp", dim=8, epochs=2, lr=1e-2, lr_step=lr_step,
                   threads=1, p=3, k=4, batches_per_epoch=3, eval_every=2)
    metric = "R@1" if trial == "retrieval" else "probe accuracy"
    short = spec.RunSpec("search", "triplet", partial(losses.triplet_loss, negatives="semihard-random"), cfg,
                         column=2, split="validation", options={"curve": metric}, seed=1)
    long = dataclasses.replace(short, settings=cfg.replace(epochs=6), column=6)
    steps = []
    monkeypatch.setattr(train, "record_training", lambda name, n, seconds, cached=False: steps.append(n))
    whole = experiment.run_one(long, run, cache=tmp_path / "whole")
    experiment.run_one(short, run, cache=tmp_path / "on", keep=True)
    assert len(list((tmp_path / "on").glob("*.state.pt"))) == 1 and not list((tmp_path / "on").glob("*.partial*"))
    on = experiment.run_one(long, run, cache=tmp_path / "on", after=short)
    assert steps == [18, 6, 12]  # 6 epochs of 3 batches; 2; then only the 4 new ones

    def without_seconds(records):
        return [{k: v for k, v in r.items() if k != "seconds"} for r in records]

    assert without_seconds(on.history.records) == without_seconds(whole.history.records)
    assert [r["epoch"] for r in on.history.records if metric in r] == [2, 4, 6]
    assert {k: v for k, v in on.metrics.items() if k != "seconds"} == \
        {k: v for k, v in whole.metrics.items() if k != "seconds"}
    assert torch.equal(on.test_embeddings, whole.test_embeddings)
    with pytest.raises(ValueError, match="only a shorter run of the same training"):
        experiment.run_one(dataclasses.replace(long, seed=2), run, cache=tmp_path / "on", after=short)


def _no_final_scoring(*args, **kwargs):
    raise AssertionError("a search's trial scored at its end: its last checkpoint is its score")


@pytest.mark.parametrize("chapter", ["noise_guarantees", "eps", "ecaml", "cbswr"])
def test_a_search_trial_is_scored_at_its_checkpoints_only_and_a_grid_run_at_its_end(chapter, monkeypatch):
    """Each retrieval chapter's runner trains a trial (``options["curve"]``) for real and never runs the final
    Recall@K, k-means NMI and F1 (the search reads only the curve, whose last point is the last epoch); the same
    spec without the curve, a grid run, is scored at its end."""
    from dml_tutorial import clustering, eps, guarantees, spec

    if chapter == "cbswr":
        digits = data.load_dataset("digits", split="classes")
        splits = dataclasses.replace(digits, train=digits.train.subset(range(96)), test=digits.test.subset(range(60)))
        cfg = profiles.settings("cbswr", "smoke").replace(epochs=2, batch_size=32, eval_every=1, threads=1, k=8, dim=16)
        trial = spec.RunSpec("search", "SME", "SME", cfg, column=2, split="validation", options={"curve": "R@1"})
    else:
        splits = data.load_dataset("subclusters", split="classes", seed=0, num_classes=6, modes_per_class=2,
                                   samples_per_mode=12)
        cfg = Settings(profile="test", dataset="subclusters", model="mlp", dim=8, epochs=2, lr=1e-2, threads=1, p=3,
                       k=4, batches_per_epoch=3, eval_every=1)
        trial = spec.RunSpec("search", "triplet", _triplet(), cfg, column=2, split="validation",
                             options={"curve": "R@1", "p": 3, "k": 4})
    module = {"noise_guarantees": guarantees, "eps": eps, "ecaml": ecaml, "cbswr": clustering}[chapter]
    run = module.run_spec({"validation": splits}, "cpu")
    with monkeypatch.context() as m:
        m.setattr(metrics, "evaluate", _no_final_scoring)
        m.setattr(experiment, "_measure", _no_final_scoring)
        out = run(trial)
    assert [r["epoch"] for r in out.history.records if "R@1" in r] == [1, 2]
    assert set(out.metrics) == {"seconds"} and len(out.test_embeddings) == len(splits.test)
    scored = run(dataclasses.replace(trial, options={k: v for k, v in trial.options.items() if k != "curve"}))
    assert {"R@1", "NMI"} <= set(scored.metrics)


def test_a_probed_trial_does_not_fit_its_last_checkpoints_probe_again(monkeypatch):
    """DCDL's trial (train_and_probe with ``probe_every`` and ``score=False``): the probe at every checkpoint, the
    last epoch's included, and no final probe; with ``score`` (a grid run) the final probe and R@1 as before."""
    splits = data.load_dataset("subclusters", split="classes", seed=0, num_classes=6, modes_per_class=2,
                               samples_per_mode=12)
    cfg = Settings(profile="test", dataset="subclusters", model="mlp", dim=8, epochs=2, lr=1e-2, threads=1, p=3, k=4,
                   batches_per_epoch=3)
    fits = []
    monkeypatch.setattr(metrics, "linear_probe_accuracy", lambda *a, **kw: fits.append(1) or 0.5)
    with monkeypatch.context() as m:
        m.setattr(experiment, "_measure", _no_final_scoring)
        out = experiment.train_and_probe(splits, _triplet(), cfg, k=4, probe_every=1, score=False)
    assert len(fits) == 2 and [r["probe accuracy"] for r in out.history.records] == [0.5, 0.5]
    assert set(out.metrics) == {"flipped", "seconds"} and len(out.test_embeddings) == len(splits.test)
    scored = experiment.train_and_probe(splits, _triplet(), cfg, k=4, probe_every=1)
    assert {"accuracy", "R@1"} <= set(scored.metrics) and scored.test_predictions is not None


def _triplet():
    from functools import partial

    from dml_tutorial import losses

    return partial(losses.triplet_loss, negatives="semihard-random")


@pytest.mark.parametrize("chapter", ["supervised", "cbswr"])
def test_a_run_that_builds_its_start_trains_exactly_as_one_that_loads_it(chapter, monkeypatch):
    """A missing start is built on first use by a softmax training with its own seed and threads (the glyphs2
    start: 2). The first run of a seed on a machine used to build it after seeding itself, so it trained on the
    start's 2 threads where its re-run, loading the start, trains on its own 1 (the first trial of each test bed II
    seed whose start the sweep built). Built or loaded, a run now trains on its own threads, to the same numbers."""
    from dml_tutorial import clustering, pretrain

    splits = data.load_dataset("digits", split="classes")
    splits = dataclasses.replace(splits, train=splits.train.subset(range(96)), test=splits.test.subset(range(60)))
    if chapter == "cbswr":
        cfg = profiles.settings("cbswr", "smoke").replace(epochs=1, batch_size=32, threads=1, k=8, dim=16)
    else:
        cfg = Settings(profile="test", dataset="digits", model="mlp", dim=8, epochs=1, lr=1e-2, threads=1, p=3, k=4,
                       batches_per_epoch=3)
    cfg = cfg.replace(start="a start")
    torch.manual_seed(7)
    trunk = {k: v for k, v in models.from_settings(cfg, experiment.input_shape(splits.train)).state_dict().items()
             if not k.startswith("embedding.")}
    built = []

    def load_start(name, seed=None):  # as pretrain.load_start: the first call builds (its own seed and threads)
        if not built:
            built.append(seed)
            train.seed_everything(12345, threads=2)
            torch.rand(100)
        return trunk

    monkeypatch.setattr(pretrain, "applies", lambda c: c.get("start") == "a start")
    monkeypatch.setattr(pretrain, "load_start", load_start)
    threads = []

    def evaluate(model):
        threads.append(torch.get_num_threads())
        return {"R@1": 0.0}

    def run():
        if chapter == "cbswr":
            return clustering.train_and_retrieve(splits, "SME", cfg, seed=3, device="cpu", evaluate=evaluate)
        return experiment.train_and_retrieve(splits, _triplet(), cfg, p=3, k=4, seed=3, device="cpu",
                                             evaluate=evaluate)

    first, again = run(), run()
    assert built == [3] and threads == [1, 1]
    assert torch.equal(first.test_embeddings, again.test_embeddings)
    assert [r["loss"] for r in first.history.records] == [r["loss"] for r in again.history.records]
