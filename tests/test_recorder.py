"""The recorder (dml_tutorial/recorder.py): a chapter's tables and trainings go to the recorder its caller chose,
and to that recorder's sinks only; the default recorder keeps serving the environment's sinks."""

import json

import matplotlib
import matplotlib.pyplot as plt
import pytest

from dml_tutorial import plan, profiles, recorder, records, reference, report, tables, train

matplotlib.use("Agg")
CFG = profiles.settings("ecaml", "smoke")


def _record(name="T"):
    return report.record(name, {"a": {"R@1": [0.5, 0.7]}}, cfg=CFG, seeds=[0, 1], device="cpu")


def test_a_recording_keeps_what_its_block_records_and_nothing_leaks_to_the_default(monkeypatch, tmp_path):
    monkeypatch.setenv(report.ENV, str(tmp_path / "default.jsonl"))  # the default's sink: must stay unwritten
    before = (len(recorder.DEFAULT.tables), len(recorder.DEFAULT.trainings))
    with recorder.recording() as rec:
        _record()
        train.record_training("one", 3, 0.5)
        assert recorder.current() is rec and records.session_run("ecaml")["tables"] == rec.tables
    assert [t["table"] for t in rec.tables] == ["T"] and rec.trainings[0]["steps"] == 3
    assert (len(recorder.DEFAULT.tables), len(recorder.DEFAULT.trainings)) == before
    assert recorder.current() is recorder.DEFAULT and not (tmp_path / "default.jsonl").exists()
    with pytest.raises(RuntimeError), recorder.recording():
        raise RuntimeError  # an error inside the block restores the recorder before
    assert recorder.current() is recorder.DEFAULT


def test_the_run_file_sink_writes_each_table_and_keeps_figures_only_when_asked(tmp_path):
    path = tmp_path / "tables.jsonl"
    fig = plt.subplots()[0]
    with recorder.recording(recorder.Recorder([report.RunFile(path)])):
        _record("T1")
        _record("T2")
        assert report.record_figure(fig, "a b") is fig
    assert [json.loads(line)["table"] for line in path.read_text().splitlines()] == ["T1", "T2"]
    assert not (tmp_path / "tables.figures").exists()
    with recorder.recording(recorder.Recorder([report.RunFile(path, figures=True)])):
        report.record_figure(fig, "unseen embeddings, sym 0.3")
    assert [p.name for p in (tmp_path / "tables.figures").iterdir()] == ["unseen-embeddings--sym-0-3.png"]


def test_the_drift_sink_checks_each_table_against_the_record_after_keeping_it():
    """A declared table recorded with seeds the committed smoke record does not hold cannot be checked: the check
    says so, and the table is kept in the recorder all the same."""
    rec = recorder.Recorder([report.DriftCheck()])
    with recorder.recording(rec), pytest.raises(reference.ResultsDrifted, match="cannot check table"):
        report.record(tables.ECAML_MAIN, {"Triplet": {"R@1": [0.5]}}, cfg=CFG, seeds=[7], device="cpu")
    assert [t["id"] for t in rec.tables] == [tables.ECAML_MAIN.id]


def test_a_plan_checks_the_trainings_of_its_own_recorder(monkeypatch):
    monkeypatch.setattr(plan, "probe", lambda *a, **kw: 0.01)
    with recorder.recording() as rec:
        p = plan.make("ecaml", CFG, "cpu", n_train=1_000)
        for i in range(p.runs):
            train.record_training(f"run {i}", 1, 0.01)
        assert p.check().startswith(f"{p.runs} trainings as planned")
    assert len(rec.trainings) == p.runs
    with recorder.recording(), pytest.raises(AssertionError, match="the notebook ran 0"):
        p.check()  # another recorder: none of those trainings


@pytest.mark.parametrize("threads, words", [(1, "1 thread"), (2, "2 threads")])
def test_the_device_name_counts_the_threads_in_english(threads, words):
    import platform

    import torch

    from dml_tutorial import recording

    before = torch.get_num_threads()
    try:
        torch.set_num_threads(threads)
        assert recording.device_name("cpu") == f"cpu: {platform.machine()}, {words}"
    finally:
        torch.set_num_threads(before)
