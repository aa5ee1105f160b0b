"""The chapters' findings boxes: the same words as claims.assess at every scale, the kernel's own run in place of
its profile's record, one panel per test bed in the figure, and a box (with its link target) in every paper
chapter, which the verdict table links to."""

import json
import re

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import pytest
from test_claims import _run, runs  # noqa: F401  (the fixture)

from dml_tutorial import claims, evidence, findings, plots, report
from dml_tutorial.chapters import chapters


def _words(markdown: str) -> dict:
    """``{(claim, scale heading): word}`` from the box's summary table."""
    lines = [line for line in markdown.splitlines() if line.startswith("|")]
    heads = [h.strip() for h in lines[0].strip("|").split("|")][1:]
    out = {}
    for line in lines[2:]:
        cells = [c.strip() for c in line.strip("|").split("|")]
        for head, cell in zip(heads, cells[1:]):
            if cell != "–":
                out[(cells[0], head)] = cell.split("**")[1] if "**" in cell else cell.split(" (")[0]
    return out


def test_the_box_gives_the_words_of_claims_assess_at_every_scale(runs, tmp_path):  # noqa: F811
    (tmp_path / "ecaml").mkdir()
    (tmp_path / "ecaml" / "fashion_seed-0.json").write_text(json.dumps(runs[0]))
    frames = findings.scale_frames("ecaml", results=tmp_path)
    assert list(frames) == ["smoke (digits, MNIST-1D)", "Fashion-MNIST"]  # no glyph or paper-scale run here
    expected = claims.assess("ecaml", runs)
    assert frames["Fashion-MNIST"][["claim", "verdict", "ours"]].equals(expected[["claim", "verdict", "ours"]])
    box = findings.markdown("ecaml", frames)
    assert box.startswith(":::{admonition} Findings") and box.rstrip().endswith(":::")
    words = _words(box)
    for r in expected.to_dict("records"):
        assert words[(plots.label_tex(r["claim"]), "Fashion-MNIST")] == claims.verdict_text(r)
    assert "EC improves Triplet" in box and findings.CLAIMED["ecaml"] in box
    assert all(f"- {line}" in box for line in findings.WHY["ecaml"])


def test_the_kernels_own_run_replaces_its_profiles_record(runs, tmp_path):  # noqa: F811
    (tmp_path / "ecaml").mkdir()
    (tmp_path / "ecaml" / "fashion_seed-0.json").write_text(json.dumps(runs[0]))
    session = json.loads(json.dumps(runs[0]))
    measured = session["tables"][0]["measured"]
    worse = [v - 0.2 + 0.01 * (i % 2) for i, v in enumerate(measured["Triplet"]["R@1"])]  # far below Triplet
    measured["ECAML(Tri)"]["R@1"] = worse
    frames = findings.scale_frames("ecaml", {"profile": "fashion"}, session, results=tmp_path)
    row = frames["Fashion-MNIST"].set_index("claim").loc["EC improves Triplet (unseen R@1)"]
    assert row["verdict"] == "contradicted" and row["ours"] == pytest.approx(-19.6)


def test_the_gate_notes_name_the_failing_reason(runs):  # noqa: F811
    measured = json.loads(json.dumps(runs[0]["tables"][0]["measured"]))
    measured["raw input"]["R@1"] = [v + 0.3 for v in measured["Triplet"]["R@1"]]  # raw pixels beat training
    frames = {"Fashion-MNIST": claims.assess("ecaml", [_run(measured)]), "glyphs": claims.assess("ecaml", runs)}
    fashion, glyphs = findings.gate_notes(frames)
    assert fashion.startswith("- Fashion-MNIST: 3 of 3 claims are not testable here: the trained control is not "
                              "shown to beat the raw input by 2 points")
    assert "the gate passes for every claim (training beats the raw input and the untrained network by" in glyphs
    started = json.loads(json.dumps(runs))  # a pretrained start: the note names it among the rows beaten
    for run in started:
        table = run["tables"][0]["measured"]
        table["pretrained, not fine-tuned"] = {c: [0.0 for _ in v] for c, v in table["raw input"].items()}
    (note,) = findings.gate_notes({"test bed II": claims.assess("ecaml", started)})
    assert note.startswith("- test bed II: the gate passes for every claim (training beats the raw input, the "
                           "untrained network and the pretrained start (not fine-tuned) by the smallest effect")


def test_the_gate_notes_give_each_baseline_its_own_reason(runs):  # noqa: F811
    """Claims on different baselines fail the gate for different reasons: the note gives each claim its own, not
    the first claim's for all."""
    measured = json.loads(json.dumps(runs[0]["tables"][0]["measured"]))
    for shift, base in enumerate(("Triplet", "N-Pair", "Binomial")):  # three baselines, each its own gap
        measured[base]["R@1"] = [v - 0.02 * shift for v in measured[base]["R@1"]]
    measured["raw input"]["R@1"] = [v + 0.05 for v in measured["Triplet"]["R@1"]]  # above every baseline
    frame = claims.assess("ecaml", [_run(measured)])
    failed = frame[frame["verdict"] == "not testable here"]
    assert failed["gate"].nunique() == 3
    (note,) = findings.gate_notes({"glyphs": frame})
    test, _ = findings._split(failed["gate"].iloc[0])  # the same test (beat the raw input) failed three ways
    assert test == "the trained control is not shown to beat the raw input by 2 points"
    assert note.startswith(f"- glyphs: {len(failed)} of {len(frame)} claims are not testable here: {test} (the gap")
    bases = {c.text: c.base for c in claims.CLAIMS["ecaml"]}
    for claim in failed["claim"]:
        line = next(item for item in note.split("\n  - ")[1:] if item.startswith(claim))
        gap = 100 * (np.array(measured[bases[claim]]["R@1"]) - np.array(measured["raw input"]["R@1"])).mean()
        assert line.startswith(f"{claim}: {gap:+.1f} (") and "% CI " in line  # each baseline its own gap


def _frame(rows):
    """A hand-made frame of :func:`claims.assess`'s columns: ``(claim, gate reason, ours, low, high)``, every
    claim *not testable here* at the 98% level."""
    return pd.DataFrame([{"claim": c, "verdict": "not testable here", "reason": g, "gate": g, "ours": o,
                          "low": lo, "high": hi, "confidence": 0.98, "seeds": 5} for c, g, o, lo, hi in rows])


def test_the_gate_notes_say_a_test_once_and_every_failure_that_differs():
    raw = "the trained control is not shown to beat the raw input by 2 points ({}, 98.0% CI {} to {})"
    net = "the trained control is not shown to beat the untrained network by 2 points (+1.0, 98.0% CI -1.0 to +3.0)"
    one = _frame([("A", raw.format("-5.0", "-7.0", "-3.0"), 1.0, -1.0, 3.0),
                  ("B", raw.format("-5.0", "-7.0", "-3.0"), 4.0, 2.0, 6.0)])  # one baseline: one reason
    (note,) = findings.gate_notes({"glyphs": one})
    assert note == ("- glyphs: 2 of 2 claims are not testable here: " + raw.format("-5.0", "-7.0", "-3.0")
                    + ". Left without a word: B, a clear gain (+4.0 points, 98.0% CI +2.0 to +6.0).")
    two = _frame([("A", raw.format("-5.0", "-7.0", "-3.0"), 1.0, -1.0, 3.0), ("B", net, -4.0, -6.0, -2.0)])
    (note,) = findings.gate_notes({"glyphs": two})  # two tests failed: each claim its own reason in full
    assert note == ("- glyphs: 2 of 2 claims are not testable here:\n  - A: " + raw.format("-5.0", "-7.0", "-3.0")
                    + ".\n  - B: " + net + ". The claim's own difference is a clear loss (-4.0 points, 98.0% CI "
                    "-6.0 to -2.0), left without a word.")
    assert findings._split("no raw-input or untrained-network row was recorded with the control") == (
        "no raw-input or untrained-network row was recorded with the control", "")


def test_a_column_whose_words_are_all_post_hoc_says_so_once_with_the_run():
    frame = _frame([("A", "g", 1.0, -1.0, 3.0), ("B", "g", 1.0, -1.0, 3.0)]).assign(verdict="inconclusive")
    late = frame.assign(registration=", post hoc after cb5ddc8")
    table = findings.summary({"glyphs": late, "Fashion-MNIST": frame.assign(registration="")})
    head = table.splitlines()[0]
    assert head == "| claim | glyphs, *post hoc* | Fashion-MNIST |"
    assert "| A | **inconclusive** (+1.0) | **inconclusive** (+1.0) |" in table
    assert table.splitlines()[-1].startswith("*Post hoc*: decided by a run made before the claim was registered "
                                             "(the first such run: cb5ddc8 on the glyphs;")
    mixed = frame.assign(registration=["", ", post hoc after cb5ddc8"])  # one claim registered in time
    table = findings.summary({"glyphs": mixed})
    assert "| B | **inconclusive, post hoc** (+1.0) |" in table and "| A | **inconclusive** (+1.0) |" in table
    assert findings.summary({"glyphs": frame}).splitlines()[-1].startswith("| B |")  # nothing post hoc


def test_the_figure_has_one_panel_per_test_bed_and_the_claims_once(runs):  # noqa: F811
    frame = claims.assess("ecaml", runs)
    fig = findings.figure({"smoke": frame.iloc[:2], "glyphs": frame})
    assert [ax.get_title() for ax in fig.axes] == ["smoke", "glyphs"]
    labels = [t.get_text() for t in fig.axes[0].get_yticklabels()]
    assert len(labels) == 3 and labels[-1].startswith("EC improves Triplet")  # the first claim on top
    smoke_rows = [line for line in fig.axes[0].lines if len(line.get_xdata()) == 1 and line.get_marker() == "o"]
    assert len(smoke_rows) == 2  # a test bed shows only the claims it recorded
    plt.close(fig)
    with pytest.raises(ValueError, match="no claims"):
        findings.figure({"smoke": frame.iloc[:0]})


@pytest.mark.parametrize("chapter", sorted(claims.CLAIMS))
def test_every_paper_chapter_has_one_findings_box_that_the_verdict_table_links_to(chapter):
    nb = json.loads(chapters()[chapter].read_text())
    sources = ["".join(c["source"]) for c in nb["cells"]]
    targets = [s for s in sources if f"({chapter}-findings)=" in s]
    assert len(targets) == 1 and re.search(r"^## \d+\. Findings$", targets[0], re.MULTILINE)
    box = next(c for c in nb["cells"] if f'findings.show("{chapter}"' in "".join(c["source"]))
    assert "remove-input" in box["metadata"]["tags"]
    shown = "".join("".join(o.get("data", {}).get("text/markdown", "")) for o in box["outputs"])
    assert shown.startswith(":::{admonition} Findings"), "the stored chapter has no executed findings box"
    assert f"<{chapter}-findings>`" in (report.PAGES / "verdicts.md").read_text()


def test_a_chapter_with_no_record_anywhere_says_where_it_looked_instead_of_raising(tmp_path, monkeypatch):
    """Colab's case before the wheel carried the records: no notebook, no record, no run. The box says what is
    missing and how to get it; the real-data section says "Not run yet" with its folder."""
    import IPython.display

    displayed = []
    monkeypatch.setattr(IPython.display, "display", lambda obj: displayed.append(obj.data))
    monkeypatch.setenv("DML_TUTORIAL_NOTEBOOKS", str(tmp_path / "empty"))
    (tmp_path / "empty").mkdir()
    assert findings.scale_frames("ecaml", results=tmp_path / "results") == {}
    assert findings.show("ecaml", results=tmp_path / "results") is None
    assert report.show("ecaml", "glyphs", results=tmp_path / "results") is None
    assert report.details("ecaml", "glyphs", results=tmp_path / "results") is None  # says nothing a second time
    shown = "\n".join(displayed)
    assert "No claim of chapter 'ecaml' is recorded here" in shown and str(tmp_path / "empty") in shown
    assert shown.count("Not run yet") == 1 and str(tmp_path / "results" / "ecaml") in shown


def test_not_run_yet_names_a_folder_of_the_repository_as_every_clone_reads_it(monkeypatch):
    """The stored outputs are compared by nbval in clones at other paths (CI's is not the author's): inside the
    repository the folder is named relative to it, never by the checkout's absolute path."""
    import IPython.display

    displayed = []
    monkeypatch.setattr(IPython.display, "display", lambda obj: displayed.append(obj.data))
    assert not [r for r in report.load_runs(report.RESULTS) if r["chapter"] == "ecaml" and r.get("profile") == "full"]
    report.show("ecaml", "full", results=report.RESULTS)
    (shown,) = displayed
    assert "under `data/results/ecaml`." in shown and str(report.RESULTS) not in shown


def test_a_record_without_its_notebook_is_a_chapter(tmp_path, monkeypatch):
    """What an installed wheel holds: the chapters' records, not their notebooks."""
    (tmp_path / "06_ecaml.results.json").write_text("{}")
    (tmp_path / "01_toy.ipynb").write_text("{}")
    assert chapters(tmp_path) == {"toy": tmp_path / "01_toy.ipynb", "ecaml": tmp_path / "06_ecaml.ipynb"}


def test_a_smoke_run_shows_its_numbers_as_a_pipeline_check_and_a_short_sweep_as_a_first_look(runs):  # noqa: F811
    smoke = claims.assess("ecaml", [{**runs[0], "profile": "smoke", "seeds": [0, 1, 2]}])
    assert set(smoke["verdict"]) == {"no verdict"} and smoke["reason"].str.startswith("smoke profile, n = 5").all()
    frames = {"smoke (digits, MNIST-1D)": smoke, "glyphs": claims.assess("ecaml", runs)}
    box = findings.markdown("ecaml", frames)
    words = _words(box)
    assert {head for _, head in words} == {"glyphs"}  # a pipeline check has no column of non-answers
    assert {w for (_, head), w in words.items() if head == "glyphs"} <= set(evidence.WORDS)
    note = findings.gate_notes(frames)[0]
    assert note == "- smoke (digits, MNIST-1D): smoke profile, n = 5: a pipeline check, no verdict; the numbers show " \
                   "that the pipeline runs."
    one = {row: {"R@1": v["R@1"][:1]} for row, v in runs[0]["tables"][0]["measured"].items()}
    few = claims.assess("ecaml", [_run(one, profile="glyphs2", seeds=(0,))])
    assert set(few["verdict"]) == {"no verdict"}
    note = findings.gate_notes({"test bed II": few})[0]  # a real test bed whose sweep is under way: no smoke words
    gains = _words(findings.summary({"glyphs": claims.assess("ecaml", runs), "test bed II": few}))
    assert {w for (_, head), w in gains.items() if head == "test bed II, first look (n = 1)"} == {
        f"{g:+.1f}" for g in few["ours"]}  # its gains, without a word
    assert note == ("- test bed II: n = 1, fewer than 5 seeds: no verdict; the numbers are a first look; the words "
                    "come once 5 seeds are recorded.")
    lines = _lines(findings.verdict_lines("ecaml", {"smoke (digits, MNIST-1D)": smoke, "test bed II": few}))
    for claim, gain in zip(few["claim"], few["ours"]):  # the opening says the sweep has no word yet, and its gain
        assert lines[claim] == {"test bed II": "no word yet"}
        assert f"{claim}: *no word yet* on test bed II ({gain:+.1f} points, n = 1)." in findings.verdict_lines(
            "ecaml", {"test bed II": few})
    session = claims.assess("ecaml", [{"chapter": "ecaml", "tables": runs[0]["tables"]}], profile="smoke")
    assert set(session["verdict"]) == {"no verdict"}  # a kernel's own run carries no profile: the caller's counts


def _lines(markdown: str) -> dict:
    """``{claim: {short scale name: word}}`` from the opening's verdict lines."""
    out = {}
    for line in markdown.splitlines():
        if not line.startswith("- "):
            continue
        claim, _, rest = line[2:].partition(": ")
        words = {}
        if rest == "no run on real data yet.":
            out[claim] = words
            continue
        for part in rest.rstrip(".").split("; "):
            word, _, where = part.partition(" on ")
            for scale in where.split(" (")[0].split(" and "):
                words[scale] = word.strip("*").removesuffix(", post hoc")
        out[claim] = words
    return out


def test_the_opening_gives_each_claim_the_boxs_word_at_every_scale_with_words(runs):  # noqa: F811
    measured = json.loads(json.dumps(runs[0]["tables"][0]["measured"]))
    measured["raw input"]["R@1"] = [v + 0.3 for v in measured["Triplet"]["R@1"]]  # nothing testable here
    smoke = claims.assess("ecaml", [{**runs[0], "profile": "smoke", "seeds": [0, 1, 2]}])
    frames = {"smoke (digits, MNIST-1D)": smoke, "Fashion-MNIST": claims.assess("ecaml", [_run(measured)]),
              "glyphs": claims.assess("ecaml", runs)}
    opening = findings.verdict_lines("ecaml", frames)
    assert opening.startswith(":::{admonition} Our answer, in short\n:class: tip verdict-line")
    assert "{ref}`the Findings <ecaml-findings>`" in opening
    lines, box = _lines(opening), _words(findings.markdown("ecaml", frames))
    assert len(lines) == len(claims.CLAIMS["ecaml"])  # a line per claim, recorded or not
    for claim in claims.CLAIMS["ecaml"]:
        said = lines[plots.label_tex(claim.text)]
        for head, short in (("Fashion-MNIST", "Fashion-MNIST"), ("glyphs", "the glyphs")):
            in_box = box.get((plots.label_tex(claim.text), head))
            assert said.get(short) == (in_box and re.sub(r", post hoc after \w+", "", in_box))
        assert not any(scale.startswith("smoke") for scale in said)  # smoke runs give no word
    assert set(lines["EC improves Triplet (unseen R@1)"].values()) == {"supported", "not testable here"}
    assert lines["EC as released improves Triplet (unseen R@1)"] == {}


def test_a_clear_difference_the_gate_withholds_gets_a_sentence(runs):  # noqa: F811
    measured = json.loads(json.dumps(runs[0]["tables"][0]["measured"]))
    measured["raw input"]["R@1"] = [v + 0.3 for v in measured["Triplet"]["R@1"]]  # the gate fails everywhere
    frame = claims.assess("ecaml", [_run(measured)])
    assert set(frame["verdict"]) == {"not testable here"}
    clear = frame[(frame["low"] > 0) | (frame["high"] < 0)]["claim"].tolist()
    assert clear == ["EC improves Triplet (unseen R@1)", "EC improves N-Pair (unseen R@1)"]  # +5 and -4 points
    (note,) = findings.gate_notes({"Fashion-MNIST": frame})  # one baseline's reason, shared by all three claims
    for claim, kind in zip(clear, ("gain", "loss")):
        r = frame.set_index("claim").loc[claim]
        assert (f"{claim}, a clear {kind} ({r['ours']:+.1f} points, {100 * r['confidence']:.1f}% CI "
                f"{r['low']:+.1f} to {r['high']:+.1f})") in note
    assert "Left without a word" not in findings.gate_notes({"glyphs": claims.assess("ecaml", runs)})[0]


@pytest.mark.parametrize("chapter", sorted(claims.CLAIMS))
def test_why_is_three_to_five_plain_bullets(chapter):
    why = findings.WHY[chapter]
    assert 3 <= len(why) <= 5
    for line in why:
        assert not re.search(r"\b[0-9a-f]{7,40}\b", line), f"a commit hash: {line}"
        assert "`" not in line and len(line.split()) <= 70, line


@pytest.mark.parametrize("chapter", sorted(claims.CLAIMS))
def test_each_paper_chapter_opens_with_its_verdict_lines(chapter):
    """The answer on the first screen: the cell that shows the verdict lines comes before the first section, and
    its stored output is the one :func:`findings.verdict_lines` gives for the committed records."""
    nb = json.loads(chapters()[chapter].read_text())
    sources = ["".join(c["source"]) for c in nb["cells"]]
    opening = next(i for i, s in enumerate(sources) if f'findings.opening("{chapter}")' in s)
    assert opening < next(i for i, s in enumerate(sources) if s.startswith("## Parameters"))
    cell = nb["cells"][opening]
    assert "remove-input" in cell["metadata"]["tags"] and "nbval-ignore-output" not in cell["metadata"]["tags"]
    shown = "".join("".join(o.get("data", {}).get("text/markdown", "")) for o in cell["outputs"])
    assert shown == findings.verdict_lines(chapter, findings.scale_frames(chapter))


@pytest.mark.parametrize("chapter", sorted(claims.CLAIMS) + ["bench"])
def test_the_evidence_is_unfolded_and_its_details_folded(chapter):
    nb = json.loads(chapters()[chapter].read_text())
    cells = nb["cells"]
    shows = [i for i, c in enumerate(cells) if "".join(c["source"]).startswith("_ = report.show(")]
    assert shows
    for i in shows:
        assert "hide-output" not in cells[i]["metadata"].get("tags", []), "a results table is folded"
        profile = re.search(r'profile="(\w+)"', "".join(cells[i]["source"]))[1]
        assert "".join(cells[i + 1]["source"]) == f'_ = report.details("{chapter}", profile="{profile}")'
        assert "hide-output" in cells[i + 1]["metadata"]["tags"]


def test_the_opening_describes_each_chapters_own_test_bed_ii_and_only_the_test_beds_it_speaks_of():
    """DCDL trains from scratch on test bed II (its paper's regime); the other chapters fine-tune the pretrained
    start: the opening says which. A test bed without lines there (superseded, or not run) is not described."""
    frame = _frame([("EC improves Triplet (unseen R@1)", "the control does not beat raw input", 1.0, -1.0, 3.0)])
    assert "a small ConvNet trained from scratch" in findings.verdict_lines("dcdl", {"test bed II": frame})
    assert "a pretrained ConvNet on unseen characters" in findings.verdict_lines("eps", {"test bed II": frame})
    only_ii = findings.verdict_lines("ecaml", {"test bed II": frame})
    assert "an MLP trained from scratch" not in only_ii and "the glyphs" not in only_ii
    both = findings.verdict_lines("ecaml", {"glyphs": frame, "test bed II": frame})
    assert "(the glyphs: rendered characters, an MLP trained from scratch; test bed II: a pretrained" in both
    assert "claim by claim (the words are the" in findings.verdict_lines("ecaml", {"Fashion-MNIST": frame})


def test_a_claim_label_that_starts_with_a_plus_stays_one_list_item():
    """DCDL's "+ L^W beats L_Trip" after "- " would open a nested list: the opening escapes it."""
    lines = [line for line in findings.verdict_lines("dcdl", findings.scale_frames("dcdl")).splitlines()
             if line.startswith("- ")]
    assert len(lines) == len(claims.CLAIMS["dcdl"]) and all(line.startswith("- \\+ ") for line in lines)
    assert findings._item("EC improves Triplet") == "EC improves Triplet"
