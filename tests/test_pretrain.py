"""The softmax-pretrained start (ECAML's released code fine-tunes an ImageNet-pretrained backbone): the
classifier's loss against a loop, what the pre-training changes and what it leaves, and its bad inputs."""

import math
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest
import torch

from dml_tutorial import data, experiment, metrics, models, pretrain, train

CFG = {"model": "mlp", "dim": 8, "hidden": 32, "p": 6, "k": 8, "lr": 3e-3, "threads": 1,
       "batches_per_epoch": 20, "epochs": 0}


@pytest.fixture(scope="module")
def splits():
    return data.load_dataset("digits", split="classes", seen=range(6))


def test_classifier_loss_is_the_mean_cross_entropy_of_a_loop():
    torch.manual_seed(0)
    classifier = pretrain.SoftmaxClassifier(5, 3)
    hidden, y = torch.randn(7, 5), torch.tensor([0, 2, 1, 1, 0, 2, 2])
    logits = hidden @ classifier.fc.weight.T + classifier.fc.bias
    expected = 0.0
    for row, label in zip(logits.tolist(), y.tolist()):
        expected += -(row[label] - math.log(sum(math.exp(v) for v in row))) / len(y)
    got = classifier(None, y, SimpleNamespace(model=SimpleNamespace(hidden=hidden)))
    assert got.item() == pytest.approx(expected, rel=1e-5)


def test_pretraining_trains_the_trunk_and_leaves_the_new_fc(splits):
    start = pretrain.softmax_pretrained(splits.train, CFG, epochs=3, seed=1)
    again = pretrain.softmax_pretrained(splits.train, CFG, epochs=3, seed=1)
    assert all(torch.equal(start[name], again[name]) for name in start)  # the seed fixes everything
    train.seed_everything(1)
    fresh = models.from_settings(CFG, data.input_shape(splits.train)).state_dict()
    assert torch.equal(start["embedding.weight"], fresh["embedding.weight"])  # the fc: the seed's random one
    assert not torch.equal(start["trunk.1.weight"], fresh["trunk.1.weight"])

    def hidden_r1(state):  # R@1 of the seen classes on the trunk's features (the classifier's input)
        model = models.from_settings(CFG, data.input_shape(splits.train))
        model.load_state_dict(state)
        with torch.no_grad():
            features = model.eval().features(splits.train.batch(np.arange(len(splits.train))))
        return metrics.recall_at_k(features, splits.train.labels, (1,))[1]

    assert hidden_r1(start) > hidden_r1(fresh) + 0.02
    # fine-tuning starts from exactly these weights (no epochs: the start's own embeddings)
    run = experiment.train_and_retrieve(splits, lambda z, y: z.sum() * 0, CFG, p=6, k=8, seed=4, init=start)
    model = models.from_settings(CFG, data.input_shape(splits.train))
    model.load_state_dict(start)
    assert torch.allclose(run.test_embeddings, train.embed(model, splits.test))


@pytest.mark.parametrize("labels, epochs, match", [([-1, 0, 1], 1, "non-negative integer"),
                                                   ([0.0, 0.5, 1.0], 1, "non-negative integer"),
                                                   ([0, 1, 1], 0, "at least 1")])
def test_bad_labels_and_epochs_are_refused(labels, epochs, match):
    bad = SimpleNamespace(labels=np.asarray(labels))  # refused before any data is read
    with pytest.raises(ValueError, match=match):
        pretrain.softmax_pretrained(bad, CFG, epochs=epochs)


def _tiny_start(monkeypatch) -> tuple:
    """A start "tiny" of 12 Latin letters in three DejaVu faces (matplotlib's), 3 steps; returns the faces."""
    import matplotlib

    from dml_tutorial.data import rendered as G

    ttf = Path(matplotlib.get_data_path()) / "fonts" / "ttf"
    monkeypatch.setitem(pretrain.STARTS, "tiny", {
        "n_classes": 12, "data_seed": 1, "disjoint_from": [20, 0], "unseen_faces": 1, "script": "latin",
        "size": 16, "model": "glyphnet", "dim": 8, "dropout": 0.0, "p": 4, "k": 2, "lr": 1e-3, "steps": 3,
        "seed": 0, "threads": 1})
    return tuple(G.Face(n, "fonts-dejavu-core", str(ttf / f"{n}.ttf")) for n in ("DejaVuSans", "DejaVuSerif",
                                                                                "DejaVuSansMono"))


def test_building_a_start_is_not_one_of_the_chapters_trainings(tmp_path, monkeypatch, splits):
    """A chapter's plan checks the trainings it ran (train.TRAININGS) against its grids; a start built on first use
    inside a chapter run is no grid's, and counting it failed a 75-minute test bed II run at its last cell (the plan
    counts 70 trainings, the notebook ran 71). A softmax pre-training that is a chapter's arm still counts."""
    faces = _tiny_start(monkeypatch)
    before = len(train.TRAININGS)
    pretrain.build_start("tiny", root=tmp_path, progress=False, faces=faces)
    assert len(train.TRAININGS) == before
    pretrain.softmax_pretrained(splits.train, CFG, epochs=1, seed=1)  # ECAML's test bed I arm: counted
    assert len(train.TRAININGS) == before + 1


def test_a_start_is_built_once_recorded_with_its_checksum_and_loads_its_trunk_only(tmp_path, monkeypatch):
    """``build_start`` pretrains on characters disjoint from the test bed's, in its training faces, and records
    what it saw with the SHA-256 of its weights; ``load_start`` returns the trunk (no embedding layer), refuses a
    file that no longer matches its record, and a fresh run starts from that trunk with its own embedding layer."""
    import json

    from dml_tutorial.data import rendered as G

    tiny = _tiny_start(monkeypatch)
    record = pretrain.build_start("tiny", root=tmp_path, progress=False, faces=tiny)
    assert record["images"] == 12 * 2 * 2 and record["faces"] == [0, 1] and record["classes"] == 12
    weights, record_path = pretrain.start_paths("tiny", tmp_path)
    saved = torch.load(weights, weights_only=True)["state"]
    assert json.loads(record_path.read_text())["sha256"] == pretrain.weights_sha256(saved)
    again = pretrain.build_start("tiny", root=tmp_path, progress=False, faces=tiny, save_as="tiny-again")
    assert again["sha256"] == record["sha256"]  # deterministic on one machine, whatever the file's name
    bed = G.load_arrays(20, size=16, script="latin", data_seed=0, faces=tiny, root=tmp_path, progress=False)[0]
    seen = G.load_arrays(12, size=16, script="latin", data_seed=1, faces=tiny, root=tmp_path, progress=False,
                         disjoint_from=(20, 0))[0]
    assert not set(bed["code"]) & set(seen["code"])
    trunk = pretrain.load_start("tiny", root=tmp_path)
    assert trunk and not any(k.startswith("embedding.") for k in trunk)
    model = models.make_model("glyphnet", (1, 16, 16), 8)
    experiment.load_init(model, trunk)
    assert all(torch.equal(model.state_dict()[k], v) for k, v in trunk.items())
    with pytest.raises(ValueError, match="does not fit"):
        experiment.load_init(models.make_model("glyphnet", (1, 16, 16), 8, width=(8, 16)), trunk)
    torch.save({"state": {k: v + 1 if v.is_floating_point() else v for k, v in saved.items()}}, weights)
    with pytest.raises(ValueError, match="SHA-256"):
        pretrain.load_start("tiny", root=tmp_path)
    weights.write_bytes(b"not a checkpoint")
    with pytest.raises(ValueError, match="cannot be read"):
        pretrain.load_start("tiny", root=tmp_path)
    with pytest.raises(FileNotFoundError, match="dml-tutorial pretrain"):
        pretrain.load_start("other", root=tmp_path, build=False)


def test_a_per_seed_start_leaves_out_each_seeds_unseen_faces(tmp_path, monkeypatch):
    """Issue #86: a start made once per seed (``per_seed``), each pretrained with its seed and without the faces
    that seed's test bed draws as unseen (``vary_faces``), saved under its own name and loaded by the run's seed;
    a run that names no seed is refused, and the fixed start still needs none."""
    from dml_tutorial.data import rendered as G

    tiny = _tiny_start(monkeypatch)
    monkeypatch.setitem(pretrain.STARTS, "tiny-seeded", {**pretrain.STARTS["tiny"], "per_seed": True})
    records = {}
    for seed in (0, 1, 2):
        file, changes = pretrain.resolved("tiny-seeded", seed)
        assert file == f"tiny-seeded-seed{seed}" and changes == {"seed": seed, "faces_seed": seed}
        records[seed] = pretrain.build_start("tiny-seeded", root=tmp_path, progress=False, faces=tiny, save_as=file,
                                             **changes)
        unseen = G.unseen_face_ids(len(tiny), pretrain.STARTS["tiny"]["unseen_faces"], seed)
        assert records[seed]["faces"] == sorted(set(range(len(tiny))) - set(unseen))
        assert pretrain.start_paths(file, tmp_path)[0].exists()
    assert len({r["sha256"] for r in records.values()}) == 3  # three seeds, three starts
    assert pretrain.load_start("tiny-seeded", root=tmp_path, build=False, seed=1)
    with pytest.raises(ValueError, match="once per seed"):
        pretrain.resolved("tiny-seeded")
    assert pretrain.resolved("tiny") == ("tiny", {}) and pretrain.resolved("tiny", 3) == ("tiny", {})
