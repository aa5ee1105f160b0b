"""The chapters' findings boxes: the words of claims.assess at the deciding scale, in sentences with their intervals,
the other scales counted, the kernel's own run in place of its profile's record, and a box (with its link target)
in every paper chapter, which the verdict table links to."""

import json
import re

import pandas as pd
import pytest
from test_claims import _run, runs  # noqa: F401  (the fixture)

from dml_tutorial import claims, evidence, findings, plots, report
from dml_tutorial.chapters import chapters


def _said(markdown: str) -> dict:
    """``{claim: word}`` from the box's sentences (``- claim: **word**, ...``) or ``{claim: "no word yet"}``."""
    out = {}
    for line in markdown.splitlines():
        if found := re.match(r"- (.+?): (?:\*\*(.+?)\*\*|(no word yet)),", line):
            out[found[1]] = found[2] or found[3]
    return out


def test_the_box_gives_the_words_of_claims_assess_at_its_deciding_scale_in_sentences(runs, tmp_path):  # noqa: F811
    (tmp_path / "ecaml").mkdir()
    (tmp_path / "ecaml" / "fashion_seed-0.json").write_text(json.dumps(runs[0]))
    frames = findings.scale_frames("ecaml", results=tmp_path)
    assert list(frames) == ["smoke (digits, MNIST-1D)", "Fashion-MNIST"]  # no glyph or paper-scale run here
    assert findings.deciding(frames) == "Fashion-MNIST"  # no test bed II: the last scale with more than a smoke run
    expected = claims.assess("ecaml", runs)
    assert frames["Fashion-MNIST"][["claim", "verdict", "ours"]].equals(expected[["claim", "verdict", "ours"]])
    box = findings.markdown("ecaml", frames)
    assert box.startswith(":::{admonition} Findings") and box.rstrip().endswith(":::")
    assert "|" not in box, "a table: the full verdict table lives on the results pages"
    said = _said(box)
    for r in expected.to_dict("records"):
        assert said[plots.label_tex(r["claim"])] == claims.verdict_text(r)
        assert f"{r['ours']:+.1f} points ({r['low']:+.1f} to {r['high']:+.1f}, {r['seeds']} seeds)" in box
    assert findings.CLAIMED["ecaml"] in box and "</book/results/verdicts>" in box
    assert all(f"- {line}" in box for line in findings.WHY["ecaml"])


def test_the_box_decides_on_test_bed_ii_and_counts_the_other_scales_words(runs):  # noqa: F811
    measured = json.loads(json.dumps(runs[0]["tables"][0]["measured"]))
    measured["raw input"]["R@1"] = [v + 0.3 for v in measured["Triplet"]["R@1"]]  # nothing testable on Fashion
    fashion = claims.assess("ecaml", [_run(measured)])
    ii = claims.assess("ecaml", runs)
    frames = {"Fashion-MNIST": fashion, "test bed II": ii, "paper's data": ii}  # test bed II decides, not the last
    assert findings.deciding(frames) == "test bed II"
    box = findings.markdown("ecaml", frames)
    assert "**What we found on test bed II**" in box
    assert _said(box) == {plots.label_tex(r["claim"]): claims.verdict_text(r) for r in ii.to_dict("records")}
    assert f"**Elsewhere**: on Fashion-MNIST: {len(fashion)} *not testable here*; on the paper's data: " in box
    gated = _said(findings.markdown("ecaml", {"Fashion-MNIST": fashion}))
    assert set(gated.values()) == {"not testable here"}
    for r in fashion.to_dict("records"):  # a withheld word says why: the gate's reason, with the numbers
        assert f"{r['seeds']} seeds): {r['gate']}." in findings.markdown("ecaml", {"Fashion-MNIST": fashion})


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




def _frame(rows):
    """A hand-made frame of :func:`claims.assess`'s columns: ``(claim, gate reason, ours, low, high)``, every
    claim *not testable here* at the 98% level."""
    return pd.DataFrame([{"claim": c, "verdict": "not testable here", "reason": g, "gate": g, "ours": o,
                          "low": lo, "high": hi, "confidence": 0.98, "seeds": 5} for c, g, o, lo, hi in rows])




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
    assert findings.deciding(frames) == "glyphs"  # a pipeline check never decides
    assert set(_said(findings.markdown("ecaml", frames)).values()) <= set(evidence.WORDS)
    assert findings.deciding({"smoke (digits, MNIST-1D)": smoke}) is None
    assert "no test bed has a recorded run yet" in findings.markdown("ecaml", {"smoke (digits, MNIST-1D)": smoke})
    one = {row: {"R@1": v["R@1"][:1]} for row, v in runs[0]["tables"][0]["measured"].items()}
    few = claims.assess("ecaml", [_run(one, profile="glyphs2", seeds=(0,))])
    assert set(few["verdict"]) == {"no verdict"}
    box = findings.markdown("ecaml", {"glyphs": claims.assess("ecaml", runs), "test bed II": few})
    assert set(_said(box).values()) == {"no word yet"}  # a real test bed whose sweep is under way decides, later
    for claim, gain in zip(few["claim"], few["ours"]):
        assert f"- {claim}: no word yet, {gain:+.1f} points so far (1 seeds; a word needs 5)." in box
    opening = findings.verdict_lines("ecaml", {"smoke (digits, MNIST-1D)": smoke, "test bed II": few})
    for claim, gain in zip(few["claim"], few["ours"]):  # the opening says the sweep has no word yet, and its gain
        assert f"- {claim}: *no word yet* ({gain:+.1f} points, n = 1)." in opening
    session = claims.assess("ecaml", [{"chapter": "ecaml", "tables": runs[0]["tables"]}], profile="smoke")
    assert set(session["verdict"]) == {"no verdict"}  # a kernel's own run carries no profile: the caller's counts


def _lines(markdown: str) -> dict:
    """``{claim: word}`` from the opening's verdict lines (``- claim: **word** (+1.0 points).``)."""
    return {claim: rest.split(" (")[0].rstrip(".").strip("*") for line in markdown.splitlines()
            if line.startswith("- ") for claim, _, rest in [line[2:].partition(": ")]}


def test_the_opening_gives_each_claim_the_boxs_word_at_the_deciding_scale_and_counts_the_others(runs):  # noqa: F811
    measured = json.loads(json.dumps(runs[0]["tables"][0]["measured"]))
    measured["raw input"]["R@1"] = [v + 0.3 for v in measured["Triplet"]["R@1"]]  # nothing testable here
    smoke = claims.assess("ecaml", [{**runs[0], "profile": "smoke", "seeds": [0, 1, 2]}])
    fashion = claims.assess("ecaml", [_run(measured)])
    frames = {"smoke (digits, MNIST-1D)": smoke, "Fashion-MNIST": fashion, "test bed II": claims.assess("ecaml", runs)}
    opening = findings.verdict_lines("ecaml", frames)
    assert opening.startswith(":::{admonition} Our answer, in short\n:class: tip verdict-line")
    assert "What our runs say on test bed II (a pretrained ConvNet on unseen characters" in opening
    assert f"Elsewhere: on Fashion-MNIST: {len(fashion)} *not testable here*. " in opening  # counted, not repeated
    assert "{ref}`the Findings <ecaml-findings>`" in opening and "smoke" not in opening
    lines = _lines(opening)
    box = _said(findings.markdown("ecaml", frames))
    waiting = [c for c in claims.CLAIMS["ecaml"] if plots.label_tex(c.text) not in box]
    assert waiting and len(lines) == len(claims.CLAIMS["ecaml"]) - len(waiting) + 1  # a line per recorded claim,
    assert lines.pop("Not run yet") == f"{len(waiting)} more claims, registered before the runs that will decide them"
    for claim in claims.CLAIMS["ecaml"]:  # and the claims not run yet counted in one line
        assert lines.get(plots.label_tex(claim.text), "not run yet") == box.get(plots.label_tex(claim.text),
                                                                                 "not run yet")
    assert lines["EC improves Triplet (unseen R@1)"] == "supported"
    assert "EC as released improves Triplet (unseen R@1)" not in lines
    gated = _lines(findings.verdict_lines("ecaml", {"Fashion-MNIST": fashion}))
    assert gated["EC improves Triplet (unseen R@1)"] == "not testable here"  # no gain beside a withheld word


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


def test_the_opening_describes_each_chapters_own_test_bed_ii():
    """DCDL trains from scratch on test bed II (its paper's regime); the other chapters fine-tune the pretrained
    start: the opening says which, and only of the scale it speaks of."""
    frame = _frame([("EC improves Triplet (unseen R@1)", "the control does not beat raw input", 1.0, -1.0, 3.0)])
    assert "a small ConvNet trained from scratch" in findings.verdict_lines("dcdl", {"test bed II": frame})
    assert "a pretrained ConvNet on unseen characters" in findings.verdict_lines("eps", {"test bed II": frame})
    both = findings.verdict_lines("ecaml", {"glyphs": frame, "test bed II": frame})
    assert "an MLP trained from scratch" not in both and "Elsewhere: on the glyphs: 1 *not testable here*." in both
    assert "say on Fashion-MNIST, claim by claim (the words are the" in findings.verdict_lines(
        "ecaml", {"Fashion-MNIST": frame})


def test_a_claim_label_that_starts_with_a_plus_stays_one_list_item():
    """DCDL's "+ L^W beats L_Trip" after "- " would open a nested list: the opening escapes it."""
    lines = [line for line in findings.verdict_lines("dcdl", findings.scale_frames("dcdl")).splitlines()
             if line.startswith("- ") and not line.startswith("- Not run yet")]
    assert any(line.startswith("- \\+ ") for line in lines) and not any(line.startswith("- + ") for line in lines)
    assert findings._item("EC improves Triplet") == "EC improves Triplet"
