"""The plan a chapter prints first: the record of trainings it is checked against, the downloads it lists, the
probe it times, and that the check fails when a notebook's grids and the plan's count disagree. (That the count
matches each chapter's real grids is checked by the chapters themselves: their last cell runs ``Plan.check`` in
every execution, nbval's included, and the full/colab dry runs in test_full_profile.py.)"""

import dataclasses
import json
import math
from types import SimpleNamespace

import numpy as np
import pytest
import torch
from helpers import ROOT

from dml_tutorial import (
    bench,
    clustering,
    data,
    dcdl,
    ecaml,
    eps,
    experiment,
    losses,
    models,
    plan,
    profiles,
    sampling,
    train,
)
from dml_tutorial.spec import as_data as spec_data


def test_fit_records_each_training_with_its_steps():
    s = data.load_dataset("digits", split="samples")
    before = len(train.TRAININGS)
    train.fit(models.MLP(64, dim=8), lambda z, y: losses.triplet_loss(z, y), s.train, epochs=3, progress=False,
              sampler=sampling.PKSampler(s.train.labels, 5, 8, batches_per_epoch=4), description="three epochs")
    (record,) = train.TRAININGS[before:]
    assert record["description"] == "three epochs" and record["steps"] == 3 * 4 and not record["cached"]
    assert record["seconds"] > 0


def test_unsupervised_training_is_recorded_too():
    s = data.load_dataset("mnist1d", split="classes", seen=range(6))
    cfg = profiles.settings("cbswr", "smoke").replace(epochs=1, batch_size=128, threads=1)
    before = len(train.TRAININGS)
    clustering.train_and_retrieve(s, "SME", cfg)
    (record,) = train.TRAININGS[before:]
    assert record["steps"] == math.ceil((len(s.train) - 1) / 128)  # every batch of images and their views


def test_runs_loaded_from_a_grids_cache_are_recorded_as_cached(tmp_path):
    def run(seed):
        train.record_training("fake", 1, 0.0)  # what a real run's fit records
        return experiment.Run({"R@1": 0.5}, torch.zeros(2, 2), train.History())

    experiment.grid({"row": {}}, [0, 1], run, cache=tmp_path)
    before = len(train.TRAININGS)
    experiment.grid({"row": {}}, [0, 1], run, cache=tmp_path)
    assert [r["cached"] for r in train.TRAININGS[before:]] == [True, True]


def _plan(runs, made=0.0):
    return plan.Plan("dcdl", "smoke", "CPU", [], [plan.Trainings("Table 1", runs, 10, 4, "mlp", (2,))],
                     {("mlp", 4, (2,), None, None): 0.5}, start=len(train.TRAININGS), made=made)


def test_check_fails_when_the_chapter_ran_other_trainings_than_planned(monkeypatch):
    monkeypatch.setattr(plan.time, "perf_counter", lambda: 25.0)  # the chapter took 25 s since its plan
    p = _plan(runs=2)
    assert p.estimate() == 2 * 10 * 0.5
    train.record_training("one", 10, 3.0)
    with pytest.raises(AssertionError, match=r"the plan counts 2 trainings, the notebook ran 1: it trains outside "
                                             r"the chapter's declared grid \(dml_tutorial.plan.GRIDS\['dcdl'\]\)"):
        p.check()
    train.record_training("two", 0, 0.0, cached=True)
    assert p.check() == ("2 trainings as planned (1 loaded from the cache): 3 s of training, estimated 10 s; the "
                         "chapter since its plan: 25 s, estimated 10 s in all")
    p.reading = plan.Reading(decoded=300, jpeg=0, evaluated=1000, jpeg_per_second=100.0, forward_seconds=0.01,
                             measured=True)  # 3 s decoding both splits, 10 s embedding: 13 s beyond the training
    assert p.whole() == 10 + 13 and p.check().endswith("25 s, estimated 23 s in all")
    p.evaluation = plan.Evaluation({"final scorings": (2, 0.5), "search checkpoints": (0, 0.0)})  # 1 s more
    assert p.whole() == 10 + 13 + 1 and p.check().endswith("25 s, estimated 24 s in all")
    train.record_training("three", 10, 3.0)
    with pytest.raises(AssertionError, match="counts 2 trainings, the notebook ran 3"):
        p.check()


def test_trainings_known_only_once_run_are_added_like_a_section_of_the_plan():
    p = _plan(runs=2)
    p.add("Table 1, the walk", 3, like="Table 1")  # same steps and probe: 3 x 10 steps at 0.5 s
    assert p.runs == 5 and p.estimate() == 5 * 10 * 0.5
    p.add("Table 1, nothing more", 0, like="Table 1")
    assert [t.section for t in p.trainings] == ["Table 1", "Table 1, the walk"]
    for i in range(5):
        train.record_training(f"run {i}", 10, 1.0)
    assert p.check().startswith("5 trainings as planned")
    with pytest.raises(ValueError, match="no section 'Table 9'"):
        p.add("more", 1, like="Table 9")
    with pytest.raises(ValueError, match="0 or more, got -1"):
        p.add("fewer", -1, like="Table 1")


def test_trainings_added_at_other_epochs_are_scaled_from_their_section():
    """A search's longer trial (search.lengthened) trains more or fewer epochs than its section's trials: its
    steps and checkpoints are scaled by the ratio, its probe speed kept."""
    p = _plan(runs=2)
    base = p.trainings[0]
    p.trainings[0] = base = dataclasses.replace(base, epochs=5, checkpoints=5)
    p.add("Table 1, longer", 2, like="Table 1", epochs=15)
    longer = p.trainings[-1]
    assert (longer.steps, longer.checkpoints, longer.epochs) == (3 * base.steps, 15, 15)
    assert p.runs == 4 and p.estimate() == pytest.approx((2 * base.steps + 2 * 3 * base.steps) * 0.5)
    with pytest.raises(ValueError, match="must be >= 1"):
        p.add("Table 1, none", 1, like="Table 1", epochs=0)


def test_durations_read_in_the_unit_that_fits():
    assert [plan._duration(s) for s in (42, 600, 7200)] == ["42 s", "10.0 min", "2.0 h"]


def test_probe_times_a_training_step_of_the_model():
    seconds = plan.probe("mlp", (1, 8, 8), 32, 16, "cpu", steps=2)
    assert 0 < seconds < 10
    assert plan.probe("convnet", (1, 28, 28), 16, 16, "cpu", steps=1, amp=True) > 0  # bfloat16 autocast on CPU


def test_make_counts_probes_once_per_shape_and_prints_the_plan(monkeypatch):
    probed = []
    monkeypatch.setattr(plan, "probe", lambda model, shape, batch, dim, device, **kw: probed.append(
        (model, batch)) or 0.01)
    cfg = profiles.settings("ecaml", "smoke")
    p = plan.make("ecaml", cfg, "cpu", n_train=1_000)
    assert probed == [("mlp", cfg["p"] * cfg["k"])]  # every section of one shape: one probe
    specs = ecaml.grid(cfg, range(cfg.n_seeds))  # the chapter's grid, and a softmax pre-training for each seed
    assert p.runs == len(specs) + cfg.n_seeds
    per_epoch = 1_000 // (cfg.p * cfg.k)  # one pass over the images an epoch, as PKSampler
    steps = sum(s.settings.epochs for s in specs) * per_epoch  # the start itself: 0 epochs
    assert 0 in {s.settings.epochs for s in specs}
    assert p.estimate() == pytest.approx((steps + cfg.n_seeds * cfg.pretrained_start["epochs"] * per_epoch) * 0.01)
    curves = sum(1 for s in specs if s.options.get("curves"))  # every run of Tables 4/5 with its curves
    assert sum(t.curve_runs for t in p.trainings) == curves == 3 * len(cfg.locals) * cfg.n_seeds
    text = str(p)
    assert "Plan of the ecaml chapter, smoke profile, on CPU" in text and f"Trainings: {p.runs}" in text
    assert "Downloads:\n  none" in text
    with pytest.raises(ValueError, match="no plan for chapter 'loss_zoo'"):
        plan.make("loss_zoo", cfg)


def test_dcdl_plan_times_each_objective_with_its_own_terms(monkeypatch):
    """DCDL's Sinkhorn and MMD terms cost most of a smoke step: each objective gets its own probe, trained on its
    own loss over batches of all ten classes; the count is the chapter's grid (dcdl.grid), nothing written twice."""
    probed = []
    monkeypatch.setattr(plan, "probe", lambda model, shape, batch, dim, device, **kw: probed.append(kw) or 0.01)
    cfg = profiles.settings("dcdl", "smoke")
    p = plan.make("dcdl", cfg, "cpu", n_train=1_000)
    specs = dcdl.grid(cfg, range(cfg.n_seeds))
    assert p.runs == len(specs)
    objectives = {json.dumps(spec_data(s.method), sort_keys=True) for s in specs}
    assert len(probed) == len(objectives) and all(kw["classes"] == 10 for kw in probed)
    assert {json.dumps(spec_data(kw["loss_fn"]), sort_keys=True) for kw in probed} == objectives
    with_w = next(t for t in p.trainings if t.section.startswith("Tables 1/4 (L_Trip + L^W, clean"))
    assert spec_data(with_w.objective) == spec_data(dcdl.dcdl_loss("trip", "W"))
    # its curves are the pulls on one fixed batch: no split embedded, no curve point counted
    assert with_w.batch == 10 * dcdl.SAMPLES_PER_CLASS["trip"] and with_w.curve_runs == 0
    real = plan.probe("mlp", (1, 8, 8), 100, 16, "cpu", steps=1, loss_fn=with_w.objective, classes=10)
    assert real > 0


def test_cbswr_plan_counts_and_times_the_chapters_declared_grid(monkeypatch):
    """The plan counts the grid the notebook runs (clustering.grid), nothing written twice, and times each row
    with its own unsupervised objective (CBSwR's clustering and decoder cost more than a triplet step; K changes
    the clustering's cost) on the profile's own network (the glyph MLP's hidden width)."""
    probed = []
    monkeypatch.setattr(plan, "probe", lambda model, shape, batch, dim, device, **kw: probed.append(kw) or 0.01)
    cfg = profiles.settings("cbswr", "smoke").replace(hidden=48, model="mlp")
    p = plan.make("cbswr", cfg, "cpu", n_train=1_000)
    specs = clustering.grid(cfg, range(cfg.n_seeds))
    assert p.runs == len(specs) and {t.section for t in p.trainings} == {f"{s.table} ({s.row})" for s in specs}
    assert len(probed) == len({s.key for s in specs}) and all(kw["hidden"] == 48 for kw in probed)
    net = models.make_model("mlp", (1, 40), 8, hidden=48)
    first = {}  # each row's first spec, in the order the plan probes them
    for s in specs:
        first.setdefault(s.key, s)
    for s, kw in zip(first.values(), probed, strict=True):  # each row timed with its own objective
        built = kw["objective"](net)
        assert type(built).__name__ == ("SME" if s.method == "SME" else "CBSwR"), s.row
        for name in ("head", "head_tau", "pull", "k") if s.method != "SME" else ("self_similarity", "tau"):
            assert getattr(built, name) == getattr(s.settings, name), (s.row, name)
    sme = next(kw["objective"](net) for s, kw in zip(first.values(), probed) if s.row == "SME")
    assert not sme.self_similarity  # the ablation's SME: as the released codes compute it
    real = plan.probe("mlp", (1, 40), 16, 8, "cpu", steps=1, hidden=48,
                      objective=lambda net: clustering.make_objective("CBSwR", net, (1, 40), cfg))
    assert real > 0


def test_bench_plan_times_each_method_with_its_own_objective(monkeypatch):
    """The bench's L^W step costs several triplet steps and CBSwR's clustering more again: each labelled method is
    probed with its own objective (bench.make_loss) on batches of the profile's P classes, each unsupervised one
    with its clustering objective at its default knob; the count is the search's and the grid's (bench.grid)."""
    probed = []
    monkeypatch.setattr(plan, "probe", lambda model, shape, batch, dim, device, **kw: probed.append(kw) or 0.01)
    cfg = profiles.settings("bench", "smoke")
    p = plan.make("bench", cfg, "cpu", n_train=1_000)
    names = bench.selected(cfg)
    assert p.runs == len(bench.best_shot_trials(cfg, 0)) + len(bench.grid(cfg, range(cfg.n_seeds)))
    own = []  # the first section of each probe
    for t in p.trainings:
        own += [t] if t.key not in {o.key for o in own} else []
    assert [t.loss[1] for t in own] == names and len(probed) == len(names)  # one probe a method
    net, x, y = models.make_model("mlp", (1, 8, 8), 8), torch.randn(20, 1, 8, 8), torch.arange(20) % 5

    def value(loss):  # as train.fit calls it; some methods draw their negatives at random
        torch.manual_seed(0)
        return loss(net(x), y, SimpleNamespace(x=x, indices=torch.arange(20), model=net)).item()

    for t, kw in zip(own, probed):
        if t.loss[0] == "bench":
            assert kw["classes"] == cfg["p"]
            assert value(kw["loss_fn"]) == pytest.approx(value(bench.make_loss(t.loss[1])))
        else:
            built = kw["objective"](models.make_model("mlp", (1, 8, 8), 8))
            assert type(built).__name__ == t.loss[1] == bench.method(t.loss[1]).unsupervised
    with_ec = bench.make_loss("Triplet + EC")  # a term that needs the model: the probe passes the batch as fit does
    assert plan.probe("mlp", (1, 8, 8), 20, 8, "cpu", steps=1, loss_fn=with_ec, classes=5) > 0


def test_dcdl_plan_counts_p_classes_a_batch_where_the_profile_sets_p(monkeypatch):
    """On the glyph test bed DCDL's batches hold ``p`` of its 300 characters (not every class, as on CIFAR-10)."""
    monkeypatch.setattr(plan, "probe", lambda *a, **kw: 0.01)
    cfg = profiles.settings("dcdl", "glyphs")
    p = plan.make("dcdl", cfg, "cpu", n_train=4_800)
    assert {t.batch for t in p.trainings} == {cfg["p"] * dcdl.SAMPLES_PER_CLASS["trip"]}
    assert {t.classes for t in p.trainings} == {cfg["p"]}


def test_downloads_list_the_dataset_and_the_backbone_weights_and_what_is_already_here(tmp_path, monkeypatch):
    monkeypatch.setattr(torch.hub, "get_dir", lambda: str(tmp_path / "hub"))
    cfg = profiles.settings("ecaml", "colab")
    (cub, cub_bytes, cub_here), (weights, weights_bytes, weights_here) = plan.downloads(cfg, root=tmp_path)
    assert cub.startswith("cub200") and cub_bytes == data.download.SOURCES["cub200"].size and not cub_here
    assert weights.startswith("googlenet ImageNet weights") and 40e6 < weights_bytes < 60e6 and not weights_here
    (tmp_path / "CUB_200_2011").mkdir()
    (tmp_path / "hub" / "checkpoints").mkdir(parents=True)
    (tmp_path / "hub" / "checkpoints" / "googlenet-1378be20.pth").touch()
    assert [here for _, _, here in plan.downloads(cfg, root=tmp_path)] == [True, True]
    eps = plan.downloads(profiles.settings("eps", "colab"), root=tmp_path)
    assert [what.split()[0] for what, _, _ in eps] == ["cub200", "mnist", "resnet50"]  # even/odd on MNIST
    assert plan.downloads(profiles.settings("dcdl", "smoke"), root=tmp_path) == []  # scikit-learn's digits


@pytest.mark.parametrize("chapter", sorted(plan.GRIDS))
def test_every_colab_profile_trains_its_central_comparison_within_its_budget(chapter):
    """The colab profile's estimated T4 time (profiles.T4_ESTIMATE: the H100's measured speed divided by 9) stays
    within the training budget, and it trains at least one pair of runs."""
    cfg = profiles.settings(chapter, "colab")
    h100 = {r["model"]: r for r in json.loads((ROOT / "benchmarks/results/train_step_cuda.json").read_text())["rows"]}
    trainings = plan.GRIDS[chapter](cfg, plan.TRAIN_IMAGES[cfg["dataset"]])
    assert sum(t.runs for t in trainings) >= 2
    slower = profiles.T4_ESTIMATE["slower_than_h100"]
    images = {t.model: 0 for t in trainings}
    for t in trainings:
        images[t.model] += t.runs * t.steps * t.batch
    minutes = sum(n / (h100[m]["bf16_channels_last_images_per_s" if cfg.get("amp") else "fp32_images_per_s"] / slower)
                  for m, n in images.items() if m in h100) / 60
    assert minutes <= profiles.T4_ESTIMATE["training_minutes"], f"{minutes:.0f} min"
    assert np.isfinite(minutes)


def test_cbswr_plan_counts_the_head_search_then_the_grid_whatever_head_it_chooses(monkeypatch):
    monkeypatch.setattr(plan, "probe", lambda *a, **kw: 0.01)
    cfg = profiles.settings("cbswr", "glyphs", {"n_seeds": 2})
    p = plan.make("cbswr", cfg, "cpu", n_train=1_000)
    counts = {len(clustering.grid(cfg, [0, 1], {"head": h})) for h in cfg.head_candidates}
    assert counts == {p.runs - len(clustering.head_search(cfg, 0))}  # any choice: as many trainings


def test_reading_counts_decoding_once_or_every_pass_and_every_evaluation(monkeypatch):
    """ECAML's colab profile on CUB, counted by hand from the profile's settings: each run embeds CUB's two splits
    (5,864 + 5,924) at its end, and the two runs with curves embed curve_samples of each split after every epoch;
    decoded once, both splits are decoded once; without, every trained and every embedded image is a JPEG decode."""
    cfg = profiles.settings("ecaml", "colab")
    assert cfg["decode_once"] and cfg["curve_samples"] == 1000 and cfg["epochs"] == 15
    n_train, n_test = 5_864, 5_924
    trainings = plan.GRIDS["ecaml"](cfg, n_train)
    runs = sum(t.runs for t in trainings)
    evaluated = runs * (n_train + n_test) + 2 * 15 * 2 * 1000  # binomial with and without EC: 2 curve runs
    r = plan.reading(cfg, trainings, n_train, 1e-3, root="/nonexistent")
    assert (r.decoded, r.jpeg, r.evaluated, r.measured) == (n_train + n_test, 0, evaluated, False)
    assert r.jpeg_per_second == plan.JPEG_PER_SECOND * 2  # the profile's two loader workers, on any 2+ CPUs
    assert r.seconds(60.0) == pytest.approx((n_train + n_test) / r.jpeg_per_second + evaluated * 1e-3)
    trained = sum(t.images for t in trainings)
    jpeg = plan.reading(cfg.replace(decode_once=False), trainings, n_train, 1e-3, root="/nonexistent")
    assert (jpeg.decoded, jpeg.jpeg) == (0, trained + evaluated)
    decoding = jpeg.jpeg / jpeg.jpeg_per_second  # the workers decode while the device trains: the longer counts
    assert jpeg.seconds(60.0) == pytest.approx(max(60.0 + evaluated * 1e-3, decoding) - 60.0)
    assert jpeg.seconds(1e6) == pytest.approx(evaluated * 1e-3)  # a slow device: decoding hides behind it
    assert plan.reading(profiles.settings("ecaml", "smoke"), trainings, n_train, 1e-3) is None  # in memory


def test_the_plan_prints_reading_for_jpeg_datasets_only(monkeypatch):
    monkeypatch.setattr(plan, "probe", lambda *a, **kw: 0.01)
    monkeypatch.setattr(plan, "probe_forward", lambda *a, **kw: 0.002)
    monkeypatch.setattr(plan, "_jpeg_speed", lambda cfg, root: (100.0, False))
    text = str(plan.make("cbswr", profiles.settings("cbswr", "colab"), "cpu", root="/nonexistent"))
    assert "Reading images: 11,788 JPEG decodes (both splits once) at 100 images/s (assumed)" in text
    assert "Estimated time in all:" in text
    smoke = str(plan.make("cbswr", profiles.settings("cbswr", "smoke"), "cpu", n_train=100))
    assert "Reading images" not in smoke and "images embedded (" in smoke  # in memory: the evaluations embed


def test_probe_forward_times_an_evaluation_pass():
    assert 0 < plan.probe_forward("convnet", (1, 28, 28), 8, "cpu", batch=8, steps=1) < 10


def test_dcdl_plan_counts_the_search_of_each_rows_rate_and_length(monkeypatch):
    """Test bed II searches each row of Tables 1/4 (local loss alone and with each term, per noise setting) and
    each of Table 3's weights on the held-out face: each search's first trials are counted, each timed with its
    row's own objective; the walks are added by the chapter once run (Plan.add)."""
    monkeypatch.setattr(plan, "probe", lambda *a, **kw: 0.01)
    cfg = profiles.settings("dcdl", "glyphs2")
    searched = plan.make("dcdl", cfg, "cpu", n_train=4_800)
    plain = plan.make("dcdl", cfg.replace(search_lrs=()), "cpu", n_train=4_800)
    lambdas = len(cfg["lambdas"])  # Table 3: each weight, L^L's but its paper's 0.2 (a main row); W's 0.5 is not
    controls = len(dcdl.CONTROLS) * len(cfg["control_noise"])  # issue #86's controls, under noise
    rows = (1 + len(cfg["terms"])) * len(cfg["noise"]) + controls + lambdas + lambdas - 1
    assert searched.runs - plain.runs == rows * len(cfg["search_lr_start"]) == 28 * 2
    search = [t for t in searched.trainings if t.section.startswith(dcdl.BEST_SHOT)]
    assert sum(t.runs for t in search) == 56 and {t.steps for t in search} == {
        cfg["search_lengths"][0] * cfg["batches_per_epoch"]}
    assert {json.dumps(spec_data(t.objective), sort_keys=True) for t in search} == {
        json.dumps(spec_data(dcdl.dcdl_loss(*row[:3])), sort_keys=True) for row in dcdl.searched_rows(cfg).values()}


def test_a_search_trial_scores_its_validation_split_every_eval_every_epochs_and_after_the_last():
    base = dcdl.best_shot_trials(profiles.settings("dcdl", "glyphs2"), 0)[0]
    assert "curve" in base.options
    for epochs, every, expected in ((6, 2, 3), (6, 4, 2), (5, 1, 5), (3, 5, 1)):
        trial = dataclasses.replace(base, settings=base.settings.replace(epochs=epochs, eval_every=every))
        assert plan.checkpoints(trial) == expected  # {2, 4, 6}; {4, 6}; 1..5; {3}: the last
    assert plan.checkpoints(dcdl.grid(profiles.settings("dcdl", "glyphs2"), [0])[0]) == 0  # a run of the grid


def test_the_evaluations_are_counted_from_the_trainings_and_timed_once_each():
    """Counted by hand: 3 search trials of the chapter's model with 4 checkpoints each (no final scoring: the last
    checkpoint is a trial's score; its test split embedded once at its end), 2 runs with curves over 5 epochs of
    100 images, and a run of another model (EPS's sub-clusters: not counted); 1,000 training and 500 test images."""
    cfg = profiles.settings("eps", "glyphs2")
    shape = plan._shape(cfg)
    trainings = [plan.Trainings("trials", 3, 10, 8, cfg.model, shape, checkpoints=4),
                 plan.Trainings("curves", 2, 10, 8, cfg.model, shape, curve_runs=2, curve_images=100, epochs=5),
                 plan.Trainings("modes", 7, 10, 8, "mlp", (2,))]
    asked = []

    def scoring(cfg, n_train, n_test, classes, device, *, probe, checkpoint, curve):
        asked.append((n_train, n_test, classes, probe, checkpoint, curve))
        return {"final": 2.0, "checkpoint": 0.5, "curve": 0.25}

    e = plan.evaluation(cfg, trainings, (1_000, 500, 50), "cpu", forward_seconds=1e-3, scoring=scoring)
    assert asked == [(1_000, 500, 50, False, True, True)]
    embedded = 2 * (1_000 + 500) + 3 * 500 + 3 * 4 * 500 + 2 * 5 * 100
    assert e.parts == {"final scorings": (2, 2.0), "search checkpoints": (12, 0.5), "curve points": (10, 0.25),
                       "images embedded": (embedded, 1e-3)}
    assert e.seconds() == pytest.approx(2 * 2.0 + 12 * 0.5 + 10 * 0.25 + embedded * 1e-3)
    assert str(e).startswith("Evaluations: 2 final scorings (2 s each), 12 search checkpoints (0.5 s each)")
    on_disk = plan.evaluation(cfg, trainings[:1], (1_000, 500, 50), "cpu", scoring=scoring)  # Reading embeds
    assert "images embedded" not in on_disk.parts and asked[-1][-1] is False  # no curve: not timed


def test_probe_scoring_times_the_runs_own_scoring_and_scales_beyond_its_time_box(monkeypatch):
    """Each kind timed once through the code the runs call; a split beyond ``at_most`` costs the square of the
    ratio (a clock that advances 1 s a reading makes every timed call last exactly 1 s)."""
    cfg = profiles.settings("ecaml", "smoke").replace(curve_samples=50)
    called = []
    monkeypatch.setattr(experiment, "_measure", lambda *a, **kw: called.append(a[5]))  # its probe flag
    clock = iter(range(100))
    monkeypatch.setattr(plan.time, "perf_counter", lambda: next(clock))
    out = plan.probe_scoring(cfg, 300, 200, 10, "cpu", curve=True, at_most=100)
    assert called == [False] and out == {"final": 4.0, "checkpoint": 4.0, "curve": 1.0}  # curves: 50 images
    assert plan.probe_scoring(cfg, 300, 50, 10, "cpu", probe=True, checkpoint=False) == {"final": 1.0}
    assert called == [False, True]


def test_probe_scoring_runs_the_real_scoring_on_a_cpu():
    out = plan.probe_scoring(profiles.settings("dcdl", "smoke"), 400, 300, 10, "cpu", probe=True)
    assert set(out) == {"final", "checkpoint"} and all(0 < v < 60 for v in out.values())
    out = plan.probe_scoring(profiles.settings("ecaml", "smoke"), 400, 300, 10, "cpu", curve=True)
    assert set(out) == {"final", "checkpoint", "curve"} and all(0 < v < 60 for v in out.values())


def test_the_plan_counts_each_search_trials_checkpoints(monkeypatch):
    monkeypatch.setattr(plan, "probe", lambda *a, **kw: 0.01)
    monkeypatch.setattr(plan, "probe_forward", lambda *a, **kw: 1e-4)
    monkeypatch.setattr(plan, "probe_scoring", lambda *a, **kw: {"final": 1.0, "checkpoint": 0.1, "curve": 0.0})
    cfg = profiles.settings("eps", "glyphs2")
    p = plan.make("eps", cfg, "cpu", n_train=2_000)
    trials = eps.best_shot_trials(cfg, 0, (eps.MAIN,))  # Table 2's arms' first trials, on the characters (Table 1's,
    # a 2-D ConvNet on 24 images, are not the chapter's model on its images: the plan leaves their scoring out)
    assert p.evaluation.parts["search checkpoints"] == (sum(plan.checkpoints(t) for t in trials), 0.1)
    assert all(plan.checkpoints(t) >= 1 for t in trials)  # each trial scores at least its last epoch
    assert "Estimated time in all:" in str(p) and "search checkpoints (0.1 s each)" in str(p)


def test_the_walks_added_after_the_search_are_evaluated_too(monkeypatch):
    """A search's walk adds trials once known (Plan.add): their checkpoints join the evaluations, at the timings
    made with the plan (nothing timed again)."""
    monkeypatch.setattr(plan, "probe", lambda *a, **kw: 0.01)
    monkeypatch.setattr(plan, "probe_forward", lambda *a, **kw: 1e-4)
    timed = []
    monkeypatch.setattr(plan, "probe_scoring", lambda *a, **kw: timed.append(1) or {"final": 1.0, "checkpoint": 0.1})
    cfg = profiles.settings("dcdl", "glyphs2")
    p = plan.make("dcdl", cfg, "cpu", n_train=1_000)
    before = p.evaluation.parts["search checkpoints"][0]
    trial = next(t for t in p.trainings if t.section.startswith(dcdl.BEST_SHOT))
    p.add("the searches' walks", 3, like=dcdl.BEST_SHOT)
    assert p.evaluation.parts["search checkpoints"] == (before + 3 * trial.checkpoints, 0.1) and timed == [1]
    trials = sum(t.runs for t in p.trainings if t.checkpoints)  # the searches' (a trial has no final scoring)
    assert trials > 0 and p.evaluation.parts["final scorings"][0] == p.runs - trials
    assert p.evaluation.parts["curve points"][0] == 0  # DCDL's curves: its pulls on one batch, nothing embedded


def test_the_plan_counts_the_pretrained_starts_the_first_run_builds(tmp_path, monkeypatch):
    """Test bed II's per-seed start (issue #86) is built once per seed on a machine that lacks it: the plan counts
    those not under the data root, at the start's own steps and batch, outside the grid's count."""
    from dml_tutorial import pretrain

    cfg = profiles.settings("eps", "glyphs2")
    start = pretrain.STARTS[cfg.start]
    missing = plan.starts_to_build(cfg, [3, 4, 4], root=tmp_path)  # seeds 3 and 4: two starts
    assert (missing.runs, missing.steps, missing.batch, missing.model) == (2, start["steps"], start["p"] * start["k"],
                                                                           start["model"])
    weights, _ = pretrain.start_paths(pretrain.resolved(cfg.start, 3)[0], tmp_path)
    weights.parent.mkdir(parents=True)
    weights.write_bytes(b"")  # seed 3's start is here
    assert plan.starts_to_build(cfg, [3, 4], root=tmp_path).runs == 1
    assert plan.starts_to_build(cfg, [3], root=tmp_path) is None
    assert plan.starts_to_build(profiles.settings("dcdl", "glyphs2"), [0], root=tmp_path) is None  # from scratch
    monkeypatch.setattr(plan, "probe", lambda *a, **kw: 0.01)
    monkeypatch.setattr(plan, "probe_forward", lambda *a, **kw: 1e-4)
    monkeypatch.setattr(plan, "probe_scoring", lambda *a, **kw: {"final": 1.0, "checkpoint": 0.1})
    p = plan.make("eps", cfg, "cpu", root=tmp_path, n_train=1_000, seeds=[4])
    assert p.building.runs == 1 and p.building_seconds() == start["steps"] * 0.01
    assert p.whole() == pytest.approx(p.estimate() + p.evaluation.seconds() + start["steps"] * 0.01)
    assert "Pretrained starts to build first (once on this machine, then kept under data/): 1 x 1,000 steps" in str(p)
    assert p.runs == sum(t.runs for t in p.trainings)  # not one of the grid's trainings


@pytest.mark.parametrize("chapter", sorted(plan.SEARCHED))
def test_a_searchs_longer_trials_can_be_counted_in_every_chapters_plan(chapter):
    """Every section of a test bed II plan built from its grid knows its runs' epochs, so that the trials a search
    lengthened (search.lengthened) are counted at theirs (Plan.add(epochs=...)). The bench's labelled rows built
    their sections without them (0 epochs), and its dry run stopped in the plan cell."""
    cfg = profiles.settings(chapter, "glyphs2")
    made = [t for t in plan.GRIDS[chapter](cfg, 1_000) if t.section != "softmax pre-training"]  # not from specs
    assert made and all(t.epochs >= 1 for t in made), [(t.section, t.epochs) for t in made if t.epochs < 1]
    p, best_shot = plan.Plan(chapter, "glyphs2", "CPU", [], list(made)), plan.SEARCHED[chapter].BEST_SHOT
    p.add("longer", 3, like=best_shot, epochs=2 * cfg.epochs)
    base = next(t for t in made if t.section.split(" (")[0] == best_shot)
    assert p.trainings[-1].steps == round(base.steps * 2 * cfg.epochs / base.epochs)
    assert p.runs == sum(t.runs for t in made) + 3
