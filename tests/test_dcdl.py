"""The DCDL objective (eq. 5): the sum of its named terms with the paper's settings, the table row names, and the
paper's numbers as quoted (checked against each other where the paper repeats a number)."""

import dataclasses
import json
import math
from types import SimpleNamespace

import numpy as np
import pytest
import torch
from helpers import load_benchmark

from dml_tutorial import data, dcdl, experiment, losses, noise, profiles, tables, train
from dml_tutorial.discrepancy import classwise_discrepancy


def _batch(classes=5, per_class=4, seed=0):
    g = torch.Generator().manual_seed(seed)
    z = torch.nn.functional.normalize(torch.randn(classes * per_class, 16, generator=g), dim=1)
    return z, torch.arange(classes).repeat_interleave(per_class)


@pytest.mark.parametrize("term", ["L", "G", "L-median", "W"])
def test_local_plus_lambda_term(term):
    z, y = _batch()
    options = dict(dcdl.TERMS[term])
    expected = losses.npairs_loss(z, y) + dcdl.LAMBDA[term] * classwise_discrepancy(z, y, **options)
    assert dcdl.dcdl_loss("np", term)(z, y).item() == pytest.approx(expected.item(), rel=1e-6)
    lam = 0.37
    expected = losses.npairs_loss(z, y) + lam * classwise_discrepancy(z, y, **options)
    assert dcdl.dcdl_loss("np", term, lam)(z, y).item() == pytest.approx(expected.item(), rel=1e-6)


def test_the_papers_local_losses_and_settings():
    z, y = _batch(seed=1)
    torch.manual_seed(3)  # semi-hard negatives are drawn at random: same seed, same draw
    ours = dcdl.dcdl_loss("trip", None)(z, y)
    torch.manual_seed(3)
    paper = losses.triplet_loss(z, y, margin=0.5, squared=True, negatives="semihard-band")  # FaceNet, as cited
    assert ours.item() == pytest.approx(paper.item(), rel=1e-6)
    assert dcdl.dcdl_loss("ang", None)(z, y).item() == pytest.approx(losses.angular_loss(z, y, 30.0).item())
    assert dcdl.dcdl_loss("ang_np", None)(z, y).item() == pytest.approx(
        (losses.npairs_loss(z, y) + 2 * losses.angular_loss(z, y, 45.0)).item(), rel=1e-6)
    assert dcdl.TERMS["W"]["epsilon"] == 2.5e-3 and dcdl.TERMS["L"]["sigma"] == 0.05
    assert dcdl.SAMPLES_PER_CLASS["trip"] == 10 and dcdl.SAMPLES_PER_CLASS["np"] == 2


def test_a_term_alone_has_weight_one_and_a_zero_weight_keeps_the_graph():
    z, y = _batch(seed=2)
    alone = dcdl.dcdl_loss(None, "W")(z, y)
    assert alone.item() == pytest.approx(classwise_discrepancy(z, y).item(), rel=1e-6)
    zz = z.clone().requires_grad_(True)
    zero = dcdl.dcdl_loss(None, "W", lam=0.0)(zz, y)
    zero.backward()
    assert zero.item() == 0.0 and torch.equal(zz.grad, torch.zeros_like(zz))


@pytest.mark.parametrize("local", sorted(dcdl.LOCAL_LOSSES))
def test_degenerate_batches_give_finite_losses(local):
    z, _ = _batch(classes=1, per_class=6, seed=3)
    for y in (torch.zeros(6, dtype=torch.long), torch.arange(6)):
        zz = z.clone().requires_grad_(True)
        value = dcdl.dcdl_loss(local, "W")(zz, y)
        value.backward()
        assert torch.isfinite(value) and torch.isfinite(zz.grad).all()


def test_bad_arguments():
    with pytest.raises(ValueError, match="unknown local loss"):
        dcdl.dcdl_loss("lifted", "W")
    with pytest.raises(ValueError, match="unknown class-wise term"):
        dcdl.dcdl_loss("trip", "wasserstein")
    with pytest.raises(ValueError, match="needs a local loss"):
        dcdl.dcdl_loss(None, None)
    with pytest.raises(ValueError, match="non-negative"):
        dcdl.dcdl_loss("trip", "W", lam=-1)


def test_row_labels_are_the_keys_of_the_quoted_tables():
    controls = {local for local, _ in dcdl.CONTROLS}  # issue #86's, not the paper's
    rows = {dcdl.label(local, term) for local in set(dcdl.LOCAL_LOSSES) - controls for term in (None, "L", "W")}
    for table in dcdl.REPORTED.values():
        assert set(table) == rows
    assert set(dcdl.REPORTED_LAMBDA) == {dcdl.label(lo, t) for lo in ("trip", "np") for t in ("L", "W")}
    assert set(dcdl.REPORTED_ALONE["C-10"]) == {dcdl.label(None, t) for t in ("L", "G", "W")}
    assert dcdl.label("np", "W", 0.1) == "L_NP + 0.1 L^W" and dcdl.label("trip", "W", 0.5) == "L_Trip + L^W"


def test_quoted_numbers_agree_where_the_paper_repeats_them():
    # Supplement Table 3 (STL-10, clean) at the chosen lambdas repeats supplement Table 4's STL-10 column.
    s10 = dcdl.REPORTED["S-10"]
    assert dcdl.REPORTED_LAMBDA["L_Trip + L^L"][0.2] == s10["L_Trip + L^L"]["clean"]
    assert dcdl.REPORTED_LAMBDA["L_Trip + L^W"][0.5] == s10["L_Trip + L^W"]["clean"]
    assert dcdl.REPORTED_LAMBDA["L_Trip + L^W"][0.0] == s10["L_Trip"]["clean"]
    assert dcdl.REPORTED_LAMBDA["L_NP + L^W"][0.5] == s10["L_NP + L^W"]["clean"]
    for table in (*dcdl.REPORTED.values(), *dcdl.REPORTED_ALONE.values(), dcdl.REPORTED_LAMBDA):
        for row in table.values():
            assert all(v is None or (0 < v < 100 and not math.isnan(v)) for v in row.values())


def test_paper_gains_read_off_tables_1_and_4():
    gains = dcdl.paper_gains("W")
    assert gains[("C-10", "L_Trip + L^W", "clean")] == pytest.approx(87.4 - 85.9)  # Table 1, CIFAR-10
    assert len(gains) == 52 and min(gains.values()) == pytest.approx(0.3) and max(gains.values()) == pytest.approx(10.3)
    assert all(row.endswith(" + L^W") for _, row, _ in gains)


def test_on_compact_classes_the_sinkhorn_term_sees_only_the_sum_of_the_centres():
    """For point-mass classes, W(class k, rest) is the mean of |c_k - v|^2 / 2 over the rest, so the term is
    -(K^2 - |sum_k c_k|^2) / (K - 1) for K unit centres: a simplex and two antipodal blobs score alike."""
    layouts = dcdl.compact_layouts(spread=1e-3)
    scores = {}
    for name, (z, y) in layouts.items():
        c = torch.stack([z[y == k].mean(0) for k in range(10)])
        closed = -(sum(c.norm(dim=1) ** 2) * 10 - c.sum(0).norm() ** 2) / 9  # K sum|c|^2 = K^2 for unit centres
        scores[name] = classwise_discrepancy(z, y, **dcdl.TERMS["W"]).item()
        assert scores[name] == pytest.approx(closed.item(), rel=0.005), name  # entropic: not exactly
    assert scores["two blobs"] == pytest.approx(scores["simplex"], rel=0.005)
    assert scores["two blobs"] < scores["apart"] and scores["apart"] < scores["merged pairs"]
    assert len(set(layouts["two blobs"][1].tolist())) == 10  # ten labels, two places


def test_cost_by_crowding_splits_the_classes_by_their_closest_look_alike():
    from types import SimpleNamespace

    # four classes of two points: 0 and 1 almost on one direction (crowded), 2 and 3 far from everything
    centres = torch.tensor([[1.0, 0.0, 0.0], [0.99, 0.14, 0.0], [0.0, 0.0, 1.0], [0.0, 1.0, -1.0]])
    labels = np.repeat(np.arange(4), 2)
    z = torch.nn.functional.normalize(centres[labels], dim=1)
    right = SimpleNamespace(test_embeddings=z, test_predictions=labels.copy())
    confused = labels.copy()
    confused[0] = 1  # one of class 0's two images goes to its look-alike: class 0 loses half its accuracy
    confused[5] = 3  # one of class 2's two images goes wrong too
    worse = SimpleNamespace(test_embeddings=z, test_predictions=confused)
    cost = dcdl.cost_by_crowding([right, right], [worse, right], labels)
    # seed 0: crowded half {0, 1} changes by (-0.5 + 0) / 2, the other half {2, 3} by (-0.5 + 0) / 2; seed 1: none
    assert cost == {"crowded half": [-0.25, 0.0], "other half": [-0.25, 0.0]}
    confused[5] = 2
    cost = dcdl.cost_by_crowding([right], [SimpleNamespace(test_embeddings=z, test_predictions=confused)], labels)
    assert cost == {"crowded half": [-0.25], "other half": [0.0]}
    with pytest.raises(ValueError):
        dcdl.cost_by_crowding([right], [right, right], labels)


def _faces(classes=4, faces=5, per_face=3, seed=0):
    """A toy closed-set test bed in the glyphs' layout: every class drawn in every face, ``extras["face"]``."""
    from dml_tutorial import data

    g = np.random.default_rng(seed)
    labels = np.repeat(np.arange(classes), faces * per_face)
    face = np.tile(np.repeat(np.arange(faces), per_face), classes)
    x = torch.as_tensor(g.normal(size=(len(labels), 1, 4, 4)), dtype=torch.float32) + torch.as_tensor(labels)[
        :, None, None, None].float()
    ds = data.ArrayDataset(x, labels, {"face": face})
    train = ds.subset(face < faces - 1)
    return data.Splits("toy", "samples", train, ds.subset(face == faces - 1), "toy faces", [str(c) for c in
                                                                                           range(classes)])


def test_validation_split_holds_out_the_last_training_faces_with_the_rows_noisy_labels():
    from dml_tutorial import experiment

    splits = _faces()
    val = dcdl.validation_split(splits, faces=1)
    assert set(val.train.extras["face"]) == {0, 1, 2} and set(val.test.extras["face"]) == {3}
    assert len(val.train) + len(val.test) == len(splits.train)  # inside the training split: no test face
    two = dcdl.validation_split(splits, faces=2)
    assert set(two.train.extras["face"]) == {0, 1} and set(two.test.extras["face"]) == {2, 3}
    noise = ("symmetric", 0.5)
    noisy = dcdl.validation_split(splits, faces=1, noise=noise, seed=4)
    draw = experiment.corrupt(splits.train, noise, seed=4).labels  # the row's own run's draw, on the same images
    held = splits.train.extras["face"] == 3
    assert np.array_equal(noisy.test.labels, draw[held]) and np.array_equal(noisy.train.labels, draw[~held])
    assert np.any(noisy.test.labels != val.test.labels)  # the held-out labels are as noisy as the rest
    with pytest.raises(ValueError, match="at least one training face"):
        dcdl.validation_split(splits, faces=4)
    with pytest.raises(ValueError, match="carry none"):
        faceless = splits.train.subset(np.ones(len(splits.train), dtype=bool))
        faceless.extras.pop("face")
        dcdl.validation_split(type(splits)("toy", "samples", faceless, faceless, "no faces"))


def _curve_fit(curves, calls):
    """``fit(lr)`` returning a run whose history holds ``curves[lr]`` as the probe's checkpoints."""
    from dml_tutorial import experiment, train

    def fit(lr):
        calls.append(lr)
        records = [{"epoch": e, "loss": 0.0, "probe accuracy": v} for e, v in curves[lr].items()]
        return experiment.Run({}, torch.zeros(1, 1), train.History(records))

    return fit


#: The chapter's own search before issue #86, kept by the benchmark that checks the runs it made.
EDGES_BENCH = load_benchmark("bench_dcdl_edges")


def test_choose_trainings_walks_the_rate_until_flanked_and_takes_the_best_checkpoint():
    rising = {1e-4: {5: 0.1, 10: 0.2}, 3e-4: {5: 0.2, 10: 0.3}, 1e-3: {5: 0.5, 10: 0.4}, 3e-3: {5: 0.6, 10: 0.7},
              1e-2: {5: 0.65, 10: 0.2}}
    tied = {lr: {5: 0.4, 10: 0.4, 15: 0.3} for lr in rising}
    calls = {"a": [], "b": []}
    fits = {("A", "clean"): _curve_fit(rising, calls["a"]), ("B", "sym 0.3"): _curve_fit(tied, calls["b"])}
    chosen, table = EDGES_BENCH.choose_trainings(fits, [3e-4, 1e-3], [1e-4, 3e-4, 1e-3, 3e-3, 1e-2])
    # A: 1e-3 beats 3e-4 at the edge, so 3e-3, still the edge, so 1e-2, which flanks it; its best checkpoint, 10
    assert calls["a"] == [3e-4, 1e-3, 3e-3, 1e-2]
    assert chosen[("A", "clean")] == {"lr": 3e-3, "epochs": 10, "tried": [3e-4, 1e-3, 3e-3, 1e-2]}
    # B: every rate ties, so the first tried wins, then 1e-4 below it is tried (the better of two is always at an
    # edge) and loses the tie too; the shorter of two tied lengths
    assert calls["b"] == [3e-4, 1e-3, 1e-4]
    assert chosen[("B", "sym 0.3")] == {"lr": 3e-4, "epochs": 5, "tried": [3e-4, 1e-3, 1e-4]}
    assert table["A (clean), lr 0.003"] == {"5 epochs": [0.6], "10 epochs": [0.7]}
    assert list(table)[:4] == [f"A (clean), lr {lr:g}" for lr in (3e-4, 1e-3, 3e-3, 1e-2)]
    assert list(table)[4:] == [f"B (sym 0.3), lr {lr:g}" for lr in (1e-4, 3e-4, 1e-3)]
    with pytest.raises(ValueError, match="at least one row"):
        EDGES_BENCH.choose_trainings({}, [1e-3])
    silent = {("C", "clean"): lambda lr: _curve_fit({lr: {}}, [])(lr)}
    with pytest.raises(ValueError, match="probe_every"):
        EDGES_BENCH.choose_trainings(silent, [1e-3])


def test_search_edges_counts_the_seeds_whose_choice_sits_at_an_edge_of_the_search():
    rising = {lr: {5: 0.1 * s, 10: 0.2 * s, 15: 0.3 * s} for lr, s in ((1e-3, 1.0), (3e-3, 1.1), (1e-2, 0.9))}
    peaked = {lr: {5: 0.3, 10: 0.5 * s, 15: 0.4} for lr, s in ((1e-3, 1.0), (3e-3, 1.1), (1e-2, 0.9))}
    early = {lr: {5: 0.5 * s, 10: 0.1, 15: 0.1} for lr, s in ((1e-3, 1.0), (3e-3, 1.1), (1e-2, 1.2))}
    fits = {("A", "clean"): _curve_fit(rising, []), ("B", "sym 0.3"): _curve_fit(peaked, []),
            ("C", "sym 0.3"): _curve_fit(early, [])}
    ladder = [1e-3, 3e-3, 1e-2]
    chosen, search = EDGES_BENCH.choose_trainings(fits, [1e-3, 3e-3], ladder)
    choice = {f"{row} ({column})": {"log10 rate": [math.log10(c["lr"])], "epochs": [c["epochs"]]}
              for (row, column), c in chosen.items()}  # as the chapter recorded its choice then
    assert choice["A (clean)"]["epochs"] == [15] and choice["B (sym 0.3)"]["epochs"] == [10]
    assert chosen[("C", "sym 0.3")] == {"lr": 1e-2, "epochs": 5, "tried": [1e-3, 3e-3, 1e-2]}
    tables = [{"table": dcdl.SEARCH_TABLE.title, "measured": search},
              {"table": dcdl.CHOICE_TABLE.title, "measured": choice}]
    run = {"settings": {"lr_ladder": ladder}, "tables": tables}
    recorded = {"tables": [{"table": "Tables 1/4", "measured": {}}]}  # a run that chose no length
    none = dict.fromkeys(dcdl.EDGES, 0)
    # A rises to its last checkpoint at a flanked rate; B peaks inside both; C peaks at its first checkpoint at the
    # ladder's top rate, where the walk had to stop
    assert dcdl.search_edges([run, recorded]) == {
        "A (clean)": {"seeds": 1, **none, "last checkpoint": 1}, "B (sym 0.3)": {"seeds": 1, **none},
        "C (sym 0.3)": {"seeds": 1, **none, "first checkpoint": 1, "highest rate": 1}}
    assert dcdl.search_edges([run, run])["C (sym 0.3)"] == {"seeds": 2, **none, "first checkpoint": 2,
                                                           "highest rate": 2}
    assert dcdl.search_edges([recorded]) == {}
    # the ladder decides the rates' edges: on a wider one C's 1e-2 is flanked; without one, the rates it tried
    wider = {"settings": {"lr_ladder": [*ladder, 3e-2]}, "tables": tables}
    assert dcdl.search_edges([wider])["C (sym 0.3)"]["highest rate"] == 0
    assert dcdl.search_edges([{"tables": tables}]) == dcdl.search_edges([run])


def test_edges_text_names_each_edge_with_its_rows_and_stays_silent_without_one():
    none = dict.fromkeys(dcdl.EDGES, 0)
    edges = {"L_Trip (sym 0.3)": {"seeds": 4, **none, "first checkpoint": 4},
             "L_Trip + L^W (sym 0.3)": {"seeds": 4, **none, "first checkpoint": 1, "highest rate": 4},
             "L_Trip (clean)": {"seeds": 4, **none}}
    text = dcdl.edges_text(edges, label=str.upper)
    assert text == ("Seeds on which the search of a row's rate and length stopped at an edge of its grid: at the "
                    "first checkpoint (its best may lie shorter), L_TRIP (sym 0.3) 4 of 4, L_TRIP + L^W (sym 0.3) "
                    "1 of 4; at the highest rate (its best may lie higher, off the ladder), L_TRIP + L^W (sym 0.3) "
                    "4 of 4.")
    assert dcdl.edges_text({"L_Trip (clean)": {"seeds": 4, **none}}) == "" and dcdl.edges_text({}) == ""


def test_row_fits_train_each_row_on_its_own_noisy_validation_split_with_the_probes_curve():
    cfg = {"model": "mlp", "dim": 8, "dropout": 0.0, "epochs": 4, "lr": 1e-3, "threads": 1, "p": 4,
           "held_out_faces": 1, "probe_every": 2}
    rows = {("L_Trip", "clean"): ("trip", None, None), ("L_Trip", "sym 0.3"): ("trip", None, ("symmetric", 0.3))}
    fits = EDGES_BENCH.row_fits(_faces(), rows, cfg, seed=1)
    run = fits[("L_Trip", "sym 0.3")](3e-3)
    probes = [(r["epoch"], r["probe accuracy"]) for r in run.history.records if "probe accuracy" in r]
    assert [e for e, _ in probes] == [2, 4] and all(0 <= a <= 1 for _, a in probes)
    # the last checkpoint is the run's own probe on the held-out face: the same network, the same probe
    assert probes[-1][1] == pytest.approx(run.metrics["accuracy"])
    assert len(run.test_embeddings) == 4 * 3  # the held-out face: 4 classes x 3 images
    from dml_tutorial import experiment

    with pytest.raises(ValueError, match="probe_every"):
        experiment.train_and_probe(_faces(), dcdl.dcdl_loss("trip", None), cfg, k=3, curves=True, probe_every=2)


def test_the_chapters_grid_declares_each_run_once_with_its_rows_choice():
    """dcdl.grid is the one place a run of the chapter is declared: the notebook, the plan and the cache read it;
    each row trains at its own search's choice, each Table 3 weight too (issue #86)."""
    cfg = profiles.settings("dcdl", "glyphs2")
    rows = dcdl.main_rows(cfg)
    (key, _), *_ = rows.items()
    choices = {"best shot": {f"{key[0]} ({key[1]})": {"values": {"lr": 3e-3, "epochs": 7}},
                             "L_Trip + 0.1 L^W (clean)": {"values": {"lr": 1e-4, "epochs": 2}}}}
    specs = dcdl.grid(cfg, [0, 1], choices)
    assert len({(s.key, s.seed) for s in specs}) == len(specs) == len({s.digest() for s in specs})
    main = {s.key[1:]: s for s in specs if s.table == dcdl.MAIN and s.seed == 0}
    assert list(main) == list(rows)
    assert (main[key].settings.lr, main[key].settings.epochs) == (3e-3, 7)
    assert {s.settings.lr for k, s in main.items() if k != key} == {cfg.lr}  # no choice: the profile's
    for (row, column), (local, term, n) in rows.items():
        o = main[(row, column)].options
        assert (o["noise"], o["k"], o["curves"]) == (n, dcdl.SAMPLES_PER_CLASS[local], n is None)
    weights = [s for s in specs if s.table == dcdl.WEIGHT and s.seed == 0]
    assert {s.column for s in weights if s.row == "L_Trip + L^W"} == set(cfg.lambdas) - {0.0, dcdl.LAMBDA["W"]}
    lrs = {s.column: (s.settings.lr, s.settings.epochs) for s in weights if s.row == "L_Trip + L^W"}
    assert lrs.pop(0.1) == (1e-4, 2) and set(lrs.values()) == {(cfg.lr, cfg.epochs)}  # each weight its own choice
    alone = [s.key[1:] for s in specs if s.table == dcdl.ALONE and s.seed == 0]
    assert alone == [(dcdl.label(None, t), noise.describe(n)) for t in dcdl.ALONE_TERMS for n in cfg.alone_noise] + [
        ("untrained network", noise.describe(n)) for n in cfg.alone_noise]
    noisy_only = dcdl.grid(cfg.replace(noise=(("symmetric", 0.3),), lambdas=(0.1, 0.5)), [0])  # no clean row:
    assert {s.column for s in noisy_only if s.row == "L_Trip + L^W"} - {"sym 0.3"} == {0.1, 0.5}  # 0.5 trains


def test_every_row_and_every_weight_searches_on_a_held_out_face_as_noisy_as_its_own(monkeypatch):
    """The one search (issue #86): every row of Tables 1/4 and every Table 3 weight but 0 and the paper's is a row
    of its own; a trial trains on the validation split of its row's noise and seed and probes it every
    ``search_every`` epochs, where the grid's runs train on the whole training split."""
    cfg = profiles.settings("dcdl", "glyphs2")
    rows = dcdl.searched_rows(cfg)
    weights = [lam for lam in cfg.lambdas if lam != 0.0]
    assert len(rows) == len(dcdl.main_rows(cfg)) + len(weights) + len(weights) - 1  # L^L's 0.2 is a main row
    assert rows["L_Trip + 0.1 L^W (clean)"] == ("trip", "W", 0.1, None)
    assert rows["L_Trip + L^L (sym 0.3)"] == ("trip", "L", None, ("symmetric", 0.3))
    trials = dcdl.best_shot_trials(cfg, 4)
    assert len(trials) == len(rows) * len(cfg.search_lr_start)
    assert {(t.split, t.seed, t.settings.epochs, t.settings.eval_every) for t in trials} == {
        ("validation", 4, cfg.search_lengths[0], cfg.search_every)}
    seen = []
    monkeypatch.setattr(dcdl, "validation_split", lambda splits, faces, n, seed, pairs: ("val", faces, n, seed))
    monkeypatch.setattr(experiment, "train_and_probe", lambda data, loss_fn, s, **kw: seen.append((data, kw)) or 1)
    noisy = next(t for t in trials if t.row == "L_Trip + L^W (sym 0.3)")
    dcdl.run_spec("splits", "cpu")(noisy)
    (data, kw), = seen
    assert data == ("val", 1, ("symmetric", 0.3), 4) and kw["probe_every"] == cfg.search_every
    assert "noise" not in kw  # the validation split carries the row's noise already

    def run(trial):  # the probe peaks at lr 3e-3 and 6 epochs on every row
        curve = {e: 0.5 - abs(trial.settings.lr - 3e-3) - abs(e - 6) / 100
                 for e in range(2, trial.settings.epochs + 1, 2)}
        return experiment.Run({}, None, train.History([{"epoch": e, "probe accuracy": v} for e, v in curve.items()]))

    choices = dcdl.best_shots(cfg, 4, run)["best shot"]
    assert set(choices) == set(rows) and {c["values"]["lr"] for c in choices.values()} == {3e-3}
    assert {c["values"]["epochs"] for c in choices.values()} == {6}
    assert dcdl.best_shots(profiles.settings("dcdl", "smoke"), 0, run) == {}  # no search in the smoke profile


def test_the_runner_trains_and_probes_with_the_specs_noise_and_samples_per_class(monkeypatch):
    seen = []
    monkeypatch.setattr(experiment, "train_and_probe", lambda splits, loss_fn, cfg, **kw: seen.append(kw) or "run")
    cfg = profiles.settings("dcdl", "smoke")
    spec = next(s for s in dcdl.grid(cfg, [3]) if s.options["noise"] == ("asymmetric", 0.2))
    assert dcdl.run_spec("splits", "cpu")(spec) == "run"
    assert {k: seen[0][k] for k in ("k", "noise", "seed", "curves")} == {
        "k": spec.options["k"], "noise": ("asymmetric", 0.2), "seed": 3, "curves": False}
    assert seen[0]["pairs"] == noise.PAIRS[cfg.dataset]  # the paper's flip pairs of the dataset


def test_the_controls_and_the_glyphs_asymmetric_noise_are_rows_of_tables_1_4_searched_as_the_others(monkeypatch):
    """Issue #86's controls (the term alone, the term on the random semi-hard triplet) under each control noise,
    and asymmetric noise on the glyphs, whose pairs are the look-alike characters of the run's training images."""
    cfg = profiles.settings("dcdl", "glyphs2")
    rows = dcdl.main_rows(cfg)
    assert {column for _, column in rows} == {"clean", "sym 0.3", "asym 0.2"}
    controls = {key: value for key, value in rows.items() if value[:2] in dcdl.CONTROLS}
    assert controls == {("L^W", "sym 0.3"): (None, "W", ("symmetric", 0.3)),
                        ("L_Trip (random semi-hard)", "sym 0.3"): ("trip_rsh", None, ("symmetric", 0.3)),
                        ("L_Trip (random semi-hard) + L^W", "sym 0.3"): ("trip_rsh", "W", ("symmetric", 0.3))}
    assert all(f"{row} ({column})" in dcdl.searched_rows(cfg) for row, column in controls)
    rsh = dcdl.dcdl_loss("trip_rsh", "W").local_fn
    assert (rsh.keywords["negatives"], rsh.keywords["margin"]) == ("semihard-random", 0.5)
    assert dcdl.kept_noise(cfg.replace(dataset="cifar100"), cfg.noise) == [None, ("symmetric", 0.3)]
    seen = []
    monkeypatch.setattr(experiment, "train_and_probe", lambda splits, loss_fn, s, **kw: seen.append(kw["pairs"]))
    monkeypatch.setattr(noise, "lookalike_pairs", lambda x, y: {"from": (x, y)})
    splits = type("S", (), {"train": type("D", (), {"x": torch.zeros(2), "labels": [0, 1]})()})()
    spec = next(s for s in dcdl.grid(cfg, [0]) if s.options["noise"] == ("asymmetric", 0.2))
    dcdl.run_spec(splits, "cpu")(spec)
    clean = next(s for s in dcdl.grid(cfg, [0]) if s.options["noise"] is None)
    dcdl.run_spec(splits, "cpu")(clean)
    assert seen[0]["from"][1] == [0, 1] and seen[1] is None  # pairs only where the noise is asymmetric


def test_the_weight_sweep_reads_lambda_0_and_the_papers_weight_from_tables_1_4_and_the_rest_from_table_3():
    cfg = profiles.settings("dcdl", "glyphs2")  # terms L, W, W-GeomLoss; L and W swept
    main = {("L_Trip", "clean"): "alone", ("L_Trip + L^W", "clean"): "W at 0.5", ("L_Trip + L^L", "clean"): "L at 0.2"}
    weights = {(f"L_Trip + L^{t}", lam): f"{t} at {lam}" for t in "LW" for lam in cfg.lambdas}
    sweep = dcdl.weight_sweep(cfg, main, weights)
    assert sweep[("L_Trip + L^W", 0.0)] == sweep[("L_Trip + L^L", 0.0)] == "alone"
    assert sweep[("L_Trip + L^W", 0.5)] == "W at 0.5" and sweep[("L_Trip + L^L", 0.2)] == "L at 0.2"
    assert sweep[("L_Trip + L^W", 0.1)] == "W at 0.1" and ("L_Trip + L^W-GeomLoss", 0.0) not in sweep
    # each term at 0, at the paper's weight and at the 7 swept; L^L's paper weight 0.2 is also a swept one
    assert len(sweep) == 2 * (2 + len(cfg.lambdas)) - 1


def test_the_weight_and_edge_check_words_read_the_records(tmp_path):
    from dml_tutorial import bench, evidence
    from dml_tutorial.labels import label_tex

    table = {"L_Trip + L^W": {"0.0": [0.50, 0.52, 0.51], "0.1": [0.55, 0.56, 0.52], "1.0": [0.40, 0.45, 0.41]}}
    text = dcdl.weight_text("fashion", {tables.DCDL_WEIGHT.id: table}, [])
    cols = table["L_Trip + L^W"]
    for lam in ("0.1", "1.0"):
        line = f"- {label_tex('L_Trip + L^W')}, lambda {lam}: {evidence.describe(evidence.paired(cols['0.0'], cols[lam]))}"
        assert line in text
    assert text.count("\n- ") == 2
    validated = bench.validated_text([])
    assert validated.startswith("The validated weights of the findings") and "chose" not in validated
    assert validated in dcdl.weight_text("glyphs2", {tables.DCDL_WEIGHT.id: table}, [], validated)
    assert dcdl.weight_text("fashion", {}, []) == "No `fashion` run of Table 3 is recorded yet."
    shot = {"values": {"lr": 1e-2, "epochs": 40}, "trials": [], "ladders": {"lr": [1e-4, 1e-2], "epochs": [10, 40]},
            "edges": ["lr", "epochs"]}  # a run of the one search (issue #86): its choices say where they sat
    text = dcdl.weight_text("glyphs2", {}, [{"tables": [], "choices": {"best shot": {"L_Trip (clean)": shot}}}])
    assert text.endswith(f"the highest rate: {label_tex('L_Trip')} (clean) 1 of 1; the longest length: "
                         f"{label_tex('L_Trip')} (clean) 1 of 1.")
    summary = {"L_Trip: searched again against the chapter's": "+1.0 points", "L_Trip + L^W against L_Trip": "-2.0"}
    (tmp_path / "dcdl_edges_short-noisy_cpu.json").write_text(json.dumps({"summary": summary}))
    text = dcdl.edge_checks_text(tmp_path)
    assert f"  - {label_tex('L_Trip')}, searched again, against the chapter's: +1.0 points" in text
    assert f"  - {label_tex('L_Trip + L^W')} against {label_tex('L_Trip')} searched again: -2.0" in text
    assert "- `long-clean`: not run here (`python benchmarks/bench_dcdl_edges.py long-clean`)" in text


def test_the_during_training_table_and_the_step_cost_line(tmp_path):
    from types import SimpleNamespace

    local = "trip"

    def run(loss, spread, pulls=None):  # a history of three epochs
        history = {dcdl.label(local): loss, "within-class spread": spread, **(pulls or {})}
        return SimpleNamespace(history=history)

    table1 = {(dcdl.label(local), "clean"): [run([3, 2, 1], [9, 8, 7]), run([4, 3, 2], [6, 5, 4])],
              (dcdl.label(local, "W"), "clean"): [
                  run([3, 2, 2], [9, 8, 8], {"|grad| W": [1, 0, 3], f"|grad| {dcdl.label(local)}": [1, 0, 1]})]}
    during = dcdl.during_table(table1, local, ["W", "L"])  # no L row: left out
    assert list(during) == [dcdl.label(local), dcdl.label(local, "W")]
    assert during[dcdl.label(local)] == {"L_Trip x 100, first epoch": [3, 4], "L_Trip x 100, last epoch": [1, 2],
                                         "spread x 100, first epoch": [9, 6], "spread x 100, last epoch": [7, 4]}
    share = during[dcdl.label(local, "W")]
    assert share["term's share (%), first epoch"] == [0.5] and share["term's share (%), last epoch"] == [0.75]
    assert dcdl.during_table({}, local, ["W"]) == {}
    path = tmp_path / "discrepancy.json"
    assert dcdl.step_cost_line(path).startswith("run `python benchmarks/bench_discrepancy.py`")
    path.write_text(json.dumps({"device": "cpu", "threads": 2, "date": "2026-12-05", "training_step": {
        "ms": {"L_Trip": 100.4, "L_Trip + 0.5 L^W": 401.0}, "ratio": 3.994}}))
    assert dcdl.step_cost_line(path) == ("VGG-9 step, batch 100, cpu (2 threads, 2026-12-05): L_Trip 100 ms, "
                                         "L_Trip + 0.5 L^W 401 ms, ratio 3.99x (paper, its GPU: 0.61 / 0.53 s per "
                                         "epoch = 1.15x)")


def test_the_untrained_batches_lines_read_the_mmd_gradient_and_the_two_solvers():
    images = data.load_dataset("digits", split="samples", seed=0).train
    members = np.concatenate([np.flatnonzero(images.labels == c)[:4] for c in range(3)])
    a = dcdl.untrained_batch(images, members, "train", seed=1)
    assert torch.equal(a, dcdl.untrained_batch(images, members, "train", seed=1))  # seeded
    assert not torch.equal(a, dcdl.untrained_batch(images, members, "eval", seed=1))  # dropout on in training
    uniform = dcdl.untrained_batch(images, members, "eval", uniform=True, seed=1)
    assert (uniform > 0).all()  # U[0, 1] weights on non-negative pixels: every unit positive
    mmd = dcdl.untrained_mmd(images, members, seed=1)
    assert [line.split(":")[0].strip() for line in mmd] == [name for name, _, _ in dcdl.UNTRAINED]
    solvers = dcdl.untrained_solvers(images, members, seed=1)
    assert len(solvers) == 2 and all("gradient cosine" in line for line in solvers)


def test_the_paper_gain_lines_quote_tables_1_and_4s_differences():
    """The folded summary of the paper's own gains from L^W: its range and the STL-10 triplet cells, each the
    quoted L_Trip + L^W minus the quoted L_Trip of the same column."""
    first, *stl = dcdl.paper_gain_lines("W")
    trip, with_w = dcdl.REPORTED["S-10"]["L_Trip"], dcdl.REPORTED["S-10"]["L_Trip + L^W"]
    expected = {col: with_w[col] - trip[col] for col in with_w if with_w[col] is not None and trip.get(col) is not None}
    assert [line.split()[-1] for line in stl] == [f"{g:+.1f}" for g in expected.values()]
    every = [v - dcdl.REPORTED[d][row[: -len(" + L^W")]][c] for d, rows in dcdl.REPORTED.items()
             for row, cols in rows.items() if row.endswith(" + L^W") for c, v in cols.items()
             if v is not None and dcdl.REPORTED[d][row[: -len(" + L^W")]].get(c) is not None]
    assert first.startswith(f"paper, + L^W minus the local loss alone: {min(every):+.1f} to {max(every):+.1f} points")
    assert f"over {len(every)} settings" in first


def test_the_gradient_lines_read_one_batch_of_the_first_p_classes():
    """Two classes of two points: class 0's pair 0.2 apart, class 1's 0.6; with p = 1 the batch holds class 0
    only (every same-class pair within 0.25), with every class half of the pairs are."""
    z = torch.tensor([[0.0, 0.0], [0.2, 0.0], [3.0, 0.0], [3.6, 0.0]])
    labels = np.array([0, 0, 1, 1])
    lines = dcdl.gradient_lines(z, labels, "trip")
    assert len(lines) == 6 and lines[0].startswith(f"{dcdl.label('trip'):24s} |gradient| = ")
    assert [line.split(" x ")[0] for line in lines[1:5]] == [f"{dcdl.LAMBDA[t]:g}" for t in ("L", "G", "L-median", "W")]
    assert lines[-1] == "same-class pairs closer than 0.25: 50%, closer than 0.5: 50%; median same-class distance 0.20"
    assert dcdl.gradient_lines(z, labels, "trip", p=1)[-1].startswith("same-class pairs closer than 0.25: 100%")
    # the hinge of a batch whose negatives lie far beyond the margin is silent: no gradient
    assert lines[0].endswith("= 0.0e+00")


def test_the_time_lines_compare_seconds_per_epoch():
    """Rows may train for their own length: L_Trip 10 s over 5 epochs (2 s an epoch), with L^W 12 s over 2 (6 s)."""
    def runs(seconds, epochs):
        return [SimpleNamespace(metrics={"seconds": seconds}, history=[{}] * epochs)] * 2

    table = {(dcdl.label("trip"), "clean"): runs(10.0, 5), (dcdl.label("trip", "W"), "clean"): runs(12.0, 2)}
    assert dcdl.time_lines(table, "trip", ["W"]) == [
        f"{dcdl.label('trip', 'W'):20s}:   3.0x the time per epoch of {dcdl.label('trip')} alone"]


def test_a_search_trial_is_probed_at_its_checkpoints_only(monkeypatch):
    """A trial (``options["curve"]``) asks train_and_probe for no final probe (its last checkpoint's, fitted again);
    a grid run asks for it."""
    seen = []
    monkeypatch.setattr(experiment, "train_and_probe", lambda splits, loss_fn, cfg, **kw: seen.append(kw) or "run")
    monkeypatch.setattr(dcdl, "validation_split", lambda splits, *a: "held-out face")
    cfg = profiles.settings("dcdl", "glyphs2")
    grid_run = next(s for s in dcdl.grid(cfg, [0]) if s.options["noise"] is None)
    trial = dataclasses.replace(grid_run, split="validation", options={**grid_run.options, "curve": "probe accuracy"})
    dcdl.run_spec("splits", "cpu")(trial)
    dcdl.run_spec("splits", "cpu")(grid_run)
    assert seen[0]["score"] is False and seen[0]["probe_every"] == cfg.eval_every
    assert seen[1].get("score", True) is True and "probe_every" not in seen[1]
