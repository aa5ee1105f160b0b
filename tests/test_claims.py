"""The claims table: paired gains against scipy's paired t-test, the paper's gain from the quoted numbers, the
verdict words, the Benjamini-Hochberg adjustment by hand, the reference-row check, and the pages and figure built
from them."""

import json
import re

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import pytest
from helpers import verdict_cells
from scipy import stats

from dml_tutorial import claims, evidence, experiment, plots, report
from dml_tutorial.labels import label_tex
from dml_tutorial.records import merge_seeds
from dml_tutorial.tables import key

TABLE = "Tables 4/5: unseen classes with and without EC"
BASES = {"Triplet": "ECAML(Tri)", "N-Pair": "ECAML(N-Pair)", "Binomial": "ECAML(Binomial)"}


def _run(measured, paper=None, profile="fashion", seeds=(0, 1, 2, 3, 4), table=TABLE):
    return {"chapter": "ecaml", "parameters": {}, "profile": profile,
            "settings": {"profile": profile, "dataset": "fashion_mnist", "model": "mlp", "epochs": 10},
            "seeds": list(seeds), "device": "cpu: x86_64, 2 threads", "version": "0.1.0", "commit": "a" * 40,
            "date": "2026-11-24T00:00:00+00:00", "command": "dml-tutorial run ecaml --profile fashion",
            "seconds": 60.0, "tables": [{"table": table, "seeds": list(seeds), "measured": measured,
                                         "paper": paper or {}}]}


@pytest.fixture
def runs():
    rng = np.random.default_rng(0)
    base = rng.uniform(0.5, 0.6, 5)
    measured = {"Triplet": {"R@1": base.tolist()}, "ECAML(Tri)": {"R@1": (base + 0.05 + rng.normal(0, 0.005, 5)).tolist()},
                "N-Pair": {"R@1": base.tolist()}, "ECAML(N-Pair)": {"R@1": (base - 0.04 + rng.normal(0, 0.005, 5)).tolist()},
                "Binomial": {"R@1": base.tolist()}, "ECAML(Binomial)": {"R@1": (base + rng.normal(0, 0.05, 5)).tolist()},
                "raw input": {"R@1": (base - 0.2 + rng.normal(0, 0.01, 5)).tolist()},
                "untrained network": {"R@1": (base - 0.1 + rng.normal(0, 0.01, 5)).tolist()}}
    paper = {"Triplet": {"R@1": 50.0}, "ECAML(Tri)": {"R@1": 52.0}, "Binomial": {"R@1": 60.0},
             "ECAML(Binomial)": {"R@1": 61.0}}
    return [_run(measured, paper)]


def test_gains_and_adjusted_intervals_match_a_paired_t_test(runs):
    frame = claims.assess("ecaml", runs).set_index("claim")
    measured = runs[0]["tables"][0]["measured"]
    for base, row in BASES.items():
        r = frame.loc[f"EC improves {base} (unseen R@1)"]
        a, b = np.array(measured[base]["R@1"]), np.array(measured[row]["R@1"])
        test = stats.ttest_rel(b, a)
        low, high = test.confidence_interval(1 - 0.05 / 3)  # Bonferroni over the chapter's three claims
        assert r["ours"] == pytest.approx(100 * (b - a).mean()) and r["confidence"] == pytest.approx(1 - 0.05 / 3)
        assert (r["low"], r["high"]) == pytest.approx((100 * low, 100 * high))
        assert r["p"] == pytest.approx(test.pvalue) and r["seeds"] == 5
        assert r["smallest effect"] == 2.0
    assert frame.loc["EC improves Triplet (unseen R@1)", "verdict"] == "supported"
    assert frame.loc["EC improves N-Pair (unseen R@1)", "verdict"] == "contradicted"  # the opposite effect
    assert frame.loc["EC improves Triplet (unseen R@1)", "paper"] == pytest.approx(2.0)
    assert frame.loc["EC improves Triplet (unseen R@1)", "paper relative"] == pytest.approx(2 / 50)
    assert frame.loc["EC improves Binomial (unseen R@1)", "paper"] == pytest.approx(1.0)
    assert pd.isna(frame.loc["EC improves N-Pair (unseen R@1)", "paper"])  # not quoted: direction only


def test_released_ec_rows_are_claims_of_their_own_with_the_papers_number(runs):
    """EC as the released code computes it: a claim where the run has its rows (the family grows with it), held
    against the paper's ECAML row, whose numbers the released code produced, and compared with the baseline that
    carries the released code's fc unit-norm penalty too (not the plain baseline)."""
    measured = runs[0]["tables"][0]["measured"]
    assert not claims.assess("ecaml", runs)["claim"].str.contains("as released").any()  # no such rows: no claim
    base = np.array(measured["Triplet"]["R@1"]) + 0.2  # the penalised baseline: far above the plain one
    measured["Triplet, fc unit norm"] = {"R@1": base.tolist()}
    measured["ECAML(Tri), released EC"] = {"R@1": (base - 0.06 + np.linspace(-0.004, 0.004, 5)).tolist()}
    frame = claims.assess("ecaml", runs).set_index("claim")
    r = frame.loc["EC as released improves Triplet (unseen R@1)"]
    assert r["verdict"] == "contradicted" and r["paper"] == pytest.approx(2.0)  # the paper's ECAML(Tri) gain
    assert r["confidence"] == pytest.approx(1 - 0.05 / 4)  # four claims found now: Bonferroni over four
    assert r["ours"] == pytest.approx(100 * (np.array(measured["ECAML(Tri), released EC"]["R@1"]) - base).mean())


def test_a_weight_sweep_claim_compares_weight_0_and_gates_on_the_main_table():
    """DCDL at its validated weight: Table 3's row at lambda = 0 (the triplet alone) against the same row at the
    weight, gated on Tables 1/4's triplet against the reference rows there (Table 3 has none)."""
    rng = np.random.default_rng(2)
    trip = rng.uniform(0.45, 0.5, 5)
    main = {"L_Trip": {"clean": trip.tolist()}, "raw input": {"clean": [0.38] * 5},
            "untrained network": {"clean": (trip - 0.4).tolist()}}
    sweep = {"L_Trip + L^W": {"0.0": trip.tolist(), "0.1": (trip + 0.03 + rng.normal(0, 0.002, 5)).tolist()},
             "L_Trip + L^L": {"0.0": trip.tolist(), "0.05": (trip - 0.002 + rng.normal(0, 0.002, 5)).tolist()}}
    paper = {"L_Trip + L^W": {"0.0": 59.9, "0.1": 63.8}}

    def run(raw):
        main["raw input"] = {"clean": [raw] * 5}
        tables = [{"table": "Tables 1/4: local losses with and without the discrepancy term", "seeds": list(range(5)),
                   "device": "cpu", "settings": {}, "measured": main, "paper": {}},
                  {"table": "Table 3: the weight lambda", "seeds": list(range(5)), "device": "cpu", "settings": {},
                   "measured": sweep, "paper": paper}]
        return claims.assess("dcdl", [{**_run({}), "chapter": "dcdl", "tables": tables}]).set_index("claim")

    frame = run(0.38)
    w, l = frame.loc["+ L^W at lambda = 0.1 beats L_Trip (clean)"], frame.loc["+ L^L at lambda = 0.05 beats L_Trip (clean)"]
    assert w["ours"] == pytest.approx(100 * (np.array(sweep["L_Trip + L^W"]["0.1"]) - trip).mean())
    assert w["verdict"] == "supported" and w["paper"] == pytest.approx(63.8 - 59.9)
    assert l["verdict"] == "no effect detected"
    frame = run(0.60)  # the triplet below the raw input in Tables 1/4: no word at any weight
    assert frame.loc["+ L^W at lambda = 0.1 beats L_Trip (clean)", "verdict"] == "not testable here"


def test_a_baseline_below_the_raw_input_makes_every_claim_not_testable(runs):
    """Fashion-MNIST's five seen classes: training scores below raw pixels, so no claim can show there."""
    measured = runs[0]["tables"][0]["measured"]
    measured["raw input"] = {"R@1": [0.77] * 5}
    frame = claims.assess("ecaml", runs)
    assert set(frame["verdict"]) == {"not testable here"}
    assert all("is not shown to beat the raw input by 2 points" in reason for reason in frame["reason"])


def test_noise_claims_test_the_interaction_not_a_gap_that_exists_without_noise():
    """The audit's case: random semi-hard leads fixed semi-hard by about 2 points at every rate, p = 0 included;
    the claim is about the lead growing with noise, which here it does not."""
    rng = np.random.default_rng(1)
    fixed = {f"p = {p:g}": (0.6 - 0.1 * p + rng.normal(0, 0.004, 5)).tolist() for p in (0, 0.2, 0.4, 0.6)}
    rand = {col: (np.asarray(v) + 0.02 + rng.normal(0, 0.004, 5)).tolist() for col, v in fixed.items()}
    low = {col: (np.asarray(v) - 0.3).tolist() for col, v in fixed.items()}
    measured = {"triplet, fixed semi-hard": fixed, "triplet, random semi-hard": rand, "raw input": low,
                "untrained network": low}
    run = _run(measured, table="Recall@1 and NMI under symmetric label noise")
    run["chapter"] = "noise_guarantees"
    frame = claims.assess("noise_guarantees", [run])
    assert len(frame) == 3 and set(frame["verdict"]) == {"no effect detected"}
    gap = np.asarray(rand["p = 0.4"]) - np.asarray(fixed["p = 0.4"])
    gap0 = np.asarray(rand["p = 0"]) - np.asarray(fixed["p = 0"])
    row = frame[frame["claim"].str.contains("p = 0.4")].iloc[0]
    assert row["ours"] == pytest.approx(100 * (gap - gap0).mean())  # not the +2 points of the plain gap
    assert pd.isna(row["paper"])
    # the gate of an interaction is read without the cause: noise that drags every trained row below the raw
    # input (the glyph test bed at p = 0.6) is the phenomenon, and the claim stays testable
    run["tables"][0]["measured"]["raw input"] = {col: (np.asarray(v) + 0.5 * (col != "p = 0")).tolist()
                                               for col, v in low.items()}
    frame = claims.assess("noise_guarantees", [run])
    assert set(frame["verdict"]) == {"no effect detected"} and all(g.endswith(", in the p = 0 column") for g in frame["gate"])
    run["tables"][0]["measured"]["raw input"] = {col: (np.asarray(v) + 0.5).tolist() for col, v in low.items()}
    assert set(claims.assess("noise_guarantees", [run])["verdict"]) == {"not testable here"}


def test_every_claim_states_its_smallest_effect_and_why():
    for chapter, listed in claims.CLAIMS.items():
        for claim in listed:
            assert 0 < claim.smallest_effect <= 5 and len(claim.why) > 20, (chapter, claim)


def test_the_book_wide_family_is_every_test_made_and_holm_over_it(runs):
    """Holm over every cell whose word came from its interval: a smoke run and a failed gate made no test and stay
    out of the family; a word survives when its Holm-adjusted p (by the step-down loop) is at most 0.05."""
    glyphs = claims.assess("ecaml", runs)
    smoke = claims.assess("ecaml", [{**runs[0], "profile": "smoke"}])
    measured = json.loads(json.dumps(runs[0]["tables"][0]["measured"]))
    measured["raw input"]["R@1"] = [v + 0.3 for v in measured["Triplet"]["R@1"]]  # every gate fails
    gated = claims.assess("ecaml", [_run(measured)])
    assert set(smoke["verdict"]) == {"no verdict"} and set(gated["verdict"]) == {"not testable here"}
    assert smoke["p (word)"].isna().all() and gated["p (word)"].isna().all()
    frames = {("ecaml", "glyphs"): glyphs, ("ecaml", "smoke"): smoke, ("ecaml", "fashion"): gated}
    family = claims.book_family(frames)
    decisive = glyphs[glyphs["verdict"].isin(claims.DECISIVE)]
    assert set(family) == {("ecaml", "glyphs", c) for c in decisive["claim"]} and len(family) >= 2
    p = glyphs["p (word)"].to_numpy()
    m = np.isfinite(p).sum()
    for claim, q in zip(glyphs["claim"], p):
        if ("ecaml", "glyphs", claim) in family:  # at most 3 tests: Holm's first threshold is 0.05 / m
            rank = int((p < q).sum())
            expected = all(sorted(p)[i] <= 0.05 / (m - i) for i in range(rank + 1))
            assert family[("ecaml", "glyphs", claim)] == expected
    worse = {key: frame for key, frame in frames.items()}
    worse[("ecaml", "more")] = glyphs.assign(**{"p (word)": 0.04, "verdict": "inconclusive"})  # 3 more tests
    assert sum(claims.book_family(worse).values()) <= sum(family.values())  # a larger family never adds words


def test_missing_tables_rows_and_chapters_give_no_claims(runs):
    assert claims.assess("ecaml", [_run({"Triplet": {"R@1": [0.5] * 5}})]).empty
    assert claims.assess("ecaml", [_run({}, table="another table")]).empty
    assert claims.assess("foundations", runs).empty


def test_references_show_whether_training_beat_the_raw_input(runs):
    refs = claims.above_references(runs, "ecaml")
    raw = runs[0]["tables"][0]["measured"]["raw input"]["R@1"]
    assert len(refs) == 1 and refs.loc[0, "raw input"] == pytest.approx(100 * np.mean(raw))
    best = max((np.mean(v["R@1"]), k) for k, v in runs[0]["tables"][0]["measured"].items()
               if k not in claims.REFERENCES)
    assert refs.loc[0, "best trained row"] == best[1] and refs.loc[0, "best trained"] == pytest.approx(100 * best[0])


def test_claims_name_tables_and_rows_the_chapters_record():
    """Every claim points at a table that a chapter's committed record holds, with both rows, in the record or in
    one of the chapter's recorded runs (a variant row, e.g. the released EC, may run on one test bed only): a
    renamed row or table would silently drop the claim from every page."""
    from dml_tutorial import report
    from dml_tutorial.chapters import chapters, results_path

    for chapter, notebook in chapters().items():
        record = results_path(notebook)
        if chapter not in claims.CLAIMS:
            continue
        tables = {key(t): t["measured"] for t in json.loads(record.read_text())["tables"]}
        recorded = [{key(t): t["measured"] for t in run["tables"]}
                    for run in report.load_runs() if run["chapter"] == chapter]
        for claim in claims.CLAIMS[chapter]:
            assert claim.table.id in tables, (chapter, claim.table)
            gate_table = claim.table if claim.gate is None else claim.gate[0]  # where the reference rows are
            assert set(claims.REFERENCES) <= set(tables[gate_table.id]), (chapter, "reference rows")
            for row, column in ((claim.base, claim.base_column or claim.column), (claim.row, claim.column)):
                found = any(column in t.get(claim.table.id, {}).get(row, {}) for t in [tables, *recorded])
                awaited = (chapter, claim.text) in claims.AWAITING  # registered, not run yet: its row is missing
                if awaited and row != claim.row:
                    continue  # its base may be recorded (another table's row) or not (the same new table's)
                assert found != awaited, (chapter, claim, row, "recorded" if found else "missing")
            if claim.gate is not None:
                table, row, column = claim.gate
                assert column in tables[table.id][row] and set(claims.REFERENCES) <= set(tables[table.id]), claim


def test_markdown_and_figure_show_every_claim(runs):
    frame = claims.assess("ecaml", runs)
    lines = claims.markdown(frame).splitlines()
    assert len(lines) == 2 + len(frame) and "direction only" in lines[3] and "**supported**" in lines[2]
    assert "98.3%" in lines[2]  # the adjusted level is shown
    fig = plots.gains(frame, "t")
    ax = fig.axes[0]
    top_down = sorted(ax.get_yticklabels(), key=lambda t: -t.get_position()[1])
    shown = [t.get_text().replace("\n", " ") for t in top_down]  # long claims wrap onto two lines
    assert shown == list(frame["claim"])  # the first claim on top
    assert ax.get_xlabel().startswith("gain in points")
    plt.close(fig)
    with pytest.raises(ValueError, match="no claims"):
        plots.gains(frame.iloc[:0])


def test_pages_carry_the_verdicts(runs, tmp_path):
    (tmp_path / "ecaml").mkdir()
    (tmp_path / "ecaml" / "fashion_seed-0.json").write_text(json.dumps(runs[0]))
    report.write_report(tmp_path, tmp_path / "pages")
    page = (tmp_path / "pages" / "at_scale.md").read_text()  # the fashion run is the chapter's: named, not repeated
    assert "`fashion`: 1 run(s)" in page and "Verdicts" not in page and "{doc}`/notebooks/06_ecaml`" in page
    table = (tmp_path / "pages" / "verdicts.md").read_text()
    cells = verdict_cells(table)
    claim = next(c for c, _ in cells if "EC improves Triplet" in c)
    assert cells[(claim, "fashion")].startswith("supported (+5")
    assert (claim, "full") not in cells and "- **paper's data**: no chapter has an answer yet" in table


def test_details_displays_the_section_and_returns_the_figure(runs, tmp_path, capsys):
    assert report.details("ecaml", "fashion", tmp_path) is None  # nothing recorded
    (tmp_path / "ecaml").mkdir()
    (tmp_path / "ecaml" / "fashion_seed-0.json").write_text(json.dumps(runs[0]))
    fig = report.details("ecaml", "fashion", tmp_path)
    assert fig is not None and len(fig.axes[0].get_yticklabels()) == 3
    plt.close(fig)


def test_details_shows_the_figures_of_the_first_seed_only(runs, tmp_path, monkeypatch):
    """A ten-seed section showing every seed's figures made EPS's notebook 8 MB: the first seed's are shown, and a
    line says where the others are."""
    import IPython.display

    shown = []
    monkeypatch.setattr(IPython.display, "display", lambda obj: shown.append(obj))
    (tmp_path / "ecaml").mkdir()
    for seed in (2, 0, 1):  # written out of order: the lowest seed is chosen, not the first file
        folder = tmp_path / "ecaml" / f"fashion_seed-{seed}.figures"
        folder.mkdir()
        fig = plt.figure(figsize=(1, 1))
        fig.savefig(folder / "a.png")
        plt.close(fig)
        run = {**json.loads(json.dumps(runs[0])), "seeds": [seed], "figures": [f"fashion_seed-{seed}.figures/a.png"]}
        (tmp_path / "ecaml" / f"fashion_seed-{seed}.json").write_text(json.dumps(run))
    plt.close(report.details("ecaml", "fashion", tmp_path))
    images = [obj for obj in shown if isinstance(obj, IPython.display.Image)]
    assert len(images) == 1 and images[0].filename.endswith("fashion_seed-0.figures/a.png")
    assert any("The figures of seed 0's run" in getattr(obj, "data", "") for obj in shown)


def test_show_puts_the_compared_rows_in_view_and_details_holds_the_rest(runs, tmp_path, monkeypatch):
    import IPython.display

    shown = []
    monkeypatch.setattr(IPython.display, "display", lambda obj: shown.append(getattr(obj, "data", obj)))
    run = json.loads(json.dumps(runs[0]))
    measured = run["tables"][0]["measured"]
    measured["Triplet"]["NMI"] = [0.7] * 5  # a column no claim reads
    measured["Margin"] = {"R@1": [0.3] * 5}  # a row no claim compares
    run["tables"].append({"table": "Search on the validation classes", "seeds": [0], "paper": {},
                          "measured": {"Triplet, margin = 0.1": {"R@1": [0.4]}}})
    (tmp_path / "ecaml").mkdir()
    (tmp_path / "ecaml" / "fashion_seed-0.json").write_text(json.dumps(run))
    assert report.show("ecaml", "fashion", tmp_path) is None  # no figure: the findings box draws one for all
    (view,) = shown
    rows = [line.split(" | ")[0].strip("| ") for line in view.splitlines() if line.startswith("| ")][1:]
    assert rows == ["Triplet", "ECAML(Tri)", "N-Pair", "ECAML(N-Pair)", "Binomial", "ECAML(Binomial)",
                    *experiment.REFERENCES]
    for name in ("Triplet", "raw input"):  # mean ± std over the seeds, in %, the paper's number beside
        values = 100 * np.array(measured[name]["R@1"])
        quoted = {"Triplet": "50.0", "raw input": "–"}[name]
        assert f"| {name} | {quoted} | {values.mean():.1f} ± {values.std(ddof=1):.1f} |" in view
    assert "NMI" not in view and "Margin" not in view and "Search" not in view and "Verdicts" not in view
    shown.clear()
    plt.close(report.details("ecaml", "fashion", tmp_path))
    (rest,) = shown
    assert "- commits: aaaaaaaaaaaa" in rest and "### Search on the validation classes" in rest
    assert "| Margin |" in rest and "### Verdicts" in rest and "### Against the reference rows" in rest


def _word(cell: str):
    """The verdict word at the start of a cell or after "**" (longest words first: "no effect detected")."""
    for word in sorted(evidence.WORDS, key=len, reverse=True):
        if cell.strip().strip("*").startswith(word):
            return word
    return evidence.NO_VERDICT if re.match(r"\**(n = \d+, )?no verdict", cell.strip()) else None


def test_no_claim_has_two_verdicts_at_one_scale():
    """The introduction's table, each results page and each chapter's stored findings box and
    real-data sections give one word per claim and scale (they are all made by claims.assess; this fails if a page or a stored
    output is stale, or if someone computes a verdict another way)."""
    from dml_tutorial.chapters import chapters

    cells = verdict_cells((report.PAGES / "verdicts.md").read_text())
    table = {key: _word(cell) for key, cell in cells.items() if _word(cell)}
    assert table, "the verdict table has no verdicts"
    checked = 0
    profile = None
    for line in (report.PAGES / f"{report.SCALE_PAGE}.md").read_text().splitlines():  # a section per profile
        if line.startswith("### ") and " profile" in line:
            profile = line[4:].split(" profile")[0]
        cells = [c.strip() for c in line.strip("|").split("|")]
        if line.startswith("|") and len(cells) == 6 and (cells[0], profile) in table:
            assert _word(cells[4]) == table[(cells[0], profile)], (profile, cells[0])
            checked += 1
    for chapter, notebook in chapters().items():  # the stored outputs: findings, real-data sections
        if chapter not in claims.CLAIMS:
            continue
        nb = json.loads(notebook.read_text())
        for cell in nb["cells"]:
            source = "".join(cell.get("source", ""))
            out = "".join("".join(o.get("data", {}).get("text/markdown", "")) for o in cell.get("outputs", []))
            scale = ("fashion" if 'profile="fashion"' in source else "glyphs" if 'profile="glyphs"' in source
                     else None)
            if "findings.show(" in source:  # the findings box: a sentence per claim at its deciding scale
                profiles = {head: profile or "smoke" for head, profile in report.SCALES}
                deciding = re.search(r"\*\*What we found on (.+?)\*\*", out)
                for line in out.splitlines() if deciding else ():
                    if line.startswith("- ") and ": **" in line:
                        claim, rest = line[2:].removeprefix("\\").split(": **", 1)
                        key = (claim, profiles[deciding[1]])
                        if key in table:
                            assert _word(rest) == table[key], (chapter, key)
                            checked += 1
            for line in out.splitlines() if scale else ():
                if line.startswith("- ") and ": **" in line:  # a conclusions bullet
                    claim, rest = line[2:].split(": **", 1)
                    if (claim, scale) in table:
                        assert _word(rest) == table[(claim, scale)], (chapter, scale, claim)
                        checked += 1
                cells = [c.strip() for c in line.strip("|").split("|")]
                if line.startswith("|") and len(cells) == 6 and (cells[0], scale) in table:
                    assert _word(cells[4]) == table[(cells[0], scale)], (chapter, scale, cells[0])
                    checked += 1
    assert checked >= len(table), f"only {checked} verdicts were found on the pages for {len(table)} in the table"


def test_a_claim_gated_on_another_column_and_judged_against_the_papers_base_row():
    """EPS's superclass claims: the baseline is meant to lose the letters, so the gate asks whether it retrieves
    the superclasses it was trained on; a baseline sampled as the paper states carries the paper's row name."""
    rng = np.random.default_rng(1)
    letters = rng.uniform(0.05, 0.1, 5)
    sup = {"Trip. + SH": letters, "EPS + Trip. + SH": letters + 0.05 + rng.normal(0, 0.003, 5)}
    measured = {row: {"R@1": v.tolist(), "R@1 (superclass)": (v + 0.6).tolist()} for row, v in sup.items()}
    # by letter the raw pixels lead (the collapse); by superclass the baseline leads them
    measured["raw input"] = {"R@1": (letters + 0.1).tolist(), "R@1 (superclass)": (letters + 0.5).tolist()}
    measured["untrained network"] = {"R@1": (letters - 0.01).tolist(), "R@1 (superclass)": (letters + 0.3).tolist()}
    table = "Table 3: unseen superclasses by letter"
    run = {**_run(measured, table=table), "chapter": "eps"}
    frame = claims.assess("eps", [run]).set_index("claim")
    row = frame.loc["EPS improves Trip. + SH on the letters of unseen superclasses (R@1)"]
    assert row["verdict"] == "supported" and row["gate"].endswith(", in the R@1 (superclass) column")
    measured["raw input"]["R@1 (superclass)"] = (letters + 0.7).tolist()  # now the baseline fails its own task
    frame = claims.assess("eps", [{**_run(measured, table=table), "chapter": "eps"}]).set_index("claim")
    assert frame.loc["EPS improves Trip. + SH on the letters of unseen superclasses (R@1)", "verdict"] == (
        "not testable here")
    claim = next(c for c in claims.CLAIMS["eps"] if c.base == "Trip. + SH, all positives")
    paper = {"Trip. + SH": {"R@1": 50.0}, "EPS + Trip. + SH": {"R@1": 52.0}}
    assert claims.paper_gain(paper, claim) == pytest.approx((0.02, 0.04))  # the paper's own baseline row


def test_a_pretrained_start_joins_the_gate_where_the_table_holds_it(runs):
    """On a test bed with a pretrained start the fine-tuned control must beat the start, not fine-tuned, too: a
    baseline above raw pixels and the untrained net but not above the features it started from is not testable."""
    measured = runs[0]["tables"][0]["measured"]
    before = claims.assess("ecaml", runs).set_index("claim")
    assert "pretrained start" not in " ".join(before["gate"])
    measured[experiment.STARTED] = {"R@1": (np.array(measured["Triplet"]["R@1"]) + 0.05).tolist()}
    after = claims.assess("ecaml", runs).set_index("claim")
    r = after.loc["EC improves Triplet (unseen R@1)"]
    assert r["verdict"] == "not testable here" and "beat the pretrained start (not fine-tuned) by" in r["gate"]
    measured[experiment.STARTED] = {"R@1": (np.array(measured["Triplet"]["R@1"]) - 0.3).tolist()}
    gate = claims.assess("ecaml", runs).set_index("claim").loc["EC improves Triplet (unseen R@1)", "gate"]
    earlier = before.loc["EC improves Triplet (unseen R@1)", "gate"]
    if earlier.startswith("the trained control beats"):  # far above the start: the gate passes as before
        assert "the pretrained start (not fine-tuned)" in gate
    else:
        assert gate == earlier


def test_the_compact_view_is_one_table_a_test_bed_and_names_the_others():
    """#51: one compact results table per test bed, the one most claims compare; the others are named."""
    eps_claims = claims.CLAIMS["eps"]
    counts = {t: sum(c.table == t for c in eps_claims) for t in dict.fromkeys(c.table for c in eps_claims)}
    main = max(counts, key=counts.get)
    tables = []
    for table in counts:
        rows = {r: {c.column: [0.5, 0.6]} for c in eps_claims if c.table == table for r in (c.base, c.row)}
        rows.update({r: {c.column: [0.1, 0.2]} for c in eps_claims if c.table == table for r in experiment.REFERENCES})
        tables.append({"table": table.title, "seeds": [0, 1], "measured": rows, "paper": {}})
    run = {"chapter": "eps", "tables": tables}
    text = "\n".join(report.compact_tables("eps", [run]))
    assert f"**{main}**" in text and sum(f"**{t}**" in text for t in counts) == 1
    others = [t for t in counts if t != main]
    assert f"The other tables the claims compare ({'; '.join(map(str, others))}) are in the details below." in text


def test_a_superseded_test_bed_gives_no_words_once_its_successor_has_runs(runs, tmp_path, monkeypatch):
    """Test bed I (glyphs) leaves a chapter's verdicts once its test bed II (glyphs2) runs can give words (#50): its
    words leave the findings and the Holm family, the verdict table says so in one sentence, and the chapter's
    section says one sentence with the tables folded; before that, its words stand."""
    import IPython.display

    folder = tmp_path / "ecaml"
    folder.mkdir()
    (folder / "glyphs_seed-0.json").write_text(json.dumps(_run(runs[0]["tables"][0]["measured"], profile="glyphs")))
    alone = report.load_runs(tmp_path)
    assert report.scale_frames("ecaml", None, alone)["glyphs"] is not None
    assert not report.superseded("ecaml", "glyphs", alone)
    measured = runs[0]["tables"][0]["measured"]
    (folder / "glyphs2_seed-0.json").write_text(json.dumps(_run(measured, profile="glyphs2", seeds=(0, 1, 2, 3))))
    assert not report.superseded("ecaml", "glyphs", report.load_runs(tmp_path))  # 4 seeds: no words yet, none lost
    (folder / "glyphs2_seed-0.json").write_text(json.dumps(_run(measured, profile="glyphs2")))
    both = report.load_runs(tmp_path)
    frames = report.scale_frames("ecaml", None, both)
    assert frames["glyphs"] is None and frames["glyphs2"] is not None
    assert report.superseded("ecaml", "glyphs", both) and not report.superseded("dcdl", "glyphs", both)
    table = report.verdicts_page(both, {"ecaml": tmp_path / "06_ecaml.ipynb"})
    cells = verdict_cells(table)
    assert not any(scale == "glyphs" for _, scale in cells) and any(scale == "glyphs2" for _, scale in cells)
    assert "- **glyphs**" in table and f"every claim {report.SUPERSEDED_TEXT}" in table
    shown = []
    monkeypatch.setattr(IPython.display, "display", lambda obj: shown.append(getattr(obj, "data", obj)))
    report.show("ecaml", "glyphs", tmp_path)
    (view,) = shown
    assert view.startswith("*Superseded by test bed II") and "| Triplet |" not in view


def test_show_keeps_a_test_bed_with_too_few_seeds_for_words_folded(runs, tmp_path, monkeypatch):
    """A chapter's section shows its tables in view once the runs can give words; with fewer seeds it says so in
    one line and the numbers stay in the details (issue #51's budgets: a one-seed table decides nothing)."""
    import IPython.display

    shown = []
    monkeypatch.setattr(IPython.display, "display", lambda obj: shown.append(getattr(obj, "data", obj)))
    (tmp_path / "ecaml").mkdir()
    one = _run(runs[0]["tables"][0]["measured"], profile="glyphs2", seeds=(0,))
    one["tables"][0]["measured"] = {row: {m: v[:1] for m, v in cols.items()} for row, cols in
                                    one["tables"][0]["measured"].items()}
    (tmp_path / "ecaml" / "glyphs2_seed-0.json").write_text(json.dumps(one))
    report.show("ecaml", "glyphs2", tmp_path)
    (view,) = shown
    assert "seeds 0 so far: fewer than the 5 seeds" in view and "| Triplet |" not in view
    table = one["tables"][0]  # the room a gain has, read off the one seed's compared rows by hand
    compared = {n for c in claims.CLAIMS["ecaml"] if c.table.title == table["table"] for n in (c.base, c.row)}
    best = max(100 * cols["R@1"][0] for row, cols in table["measured"].items() if row in compared)
    assert "(R@1), the best compared row" in view and f"reaches {best:.1f}%," in view
    assert f"{100 - best:.1f} points below 100" in view


def test_show_says_searched_lengths_where_each_row_chose_its_own(runs, tmp_path, monkeypatch):
    """The line above a test bed's tables names how long the runs trained: the profile's epochs, unless each row's
    best-shot search chose its length (the run's ``choices["best shot"]``), when no row trained the profile's."""
    import IPython.display

    shown = []
    monkeypatch.setattr(IPython.display, "display", lambda obj: shown.append(getattr(obj, "data", obj)))
    (tmp_path / "ecaml").mkdir()
    run = _run(runs[0]["tables"][0]["measured"], profile="glyphs2")
    path = tmp_path / "ecaml" / "glyphs2_seed-0.json"
    path.write_text(json.dumps(run))
    report.show("ecaml", "glyphs2", tmp_path)
    epochs = run["settings"]["epochs"]
    assert f", {epochs} epochs, seeds " in shown[-1] and "searched lengths" not in shown[-1]
    choice = {"values": {"lr": 1e-3, "epochs": 2 * epochs}, "trials": [], "ladders": {}, "edges": []}
    path.write_text(json.dumps({**run, "choices": {"best shot": {"Triplet": choice}}}))
    report.show("ecaml", "glyphs2", tmp_path)
    assert ", searched lengths, seeds " in shown[-1] and f"{epochs} epochs" not in shown[-1]


def test_a_one_seed_cell_gives_no_interval(runs, tmp_path):
    """One seed has no spread: the verdict table says so instead of an interval "+3.6 to +3.6", which reads as
    certainty; with two seeds the cell carries the interval again."""
    (tmp_path / "ecaml").mkdir()

    def cells_with(n):  # ECAML's test bed II cells with the first n seeds of the fixture's run recorded
        run = _run(runs[0]["tables"][0]["measured"], profile="glyphs2", seeds=tuple(range(n)))
        run["tables"][0]["measured"] = {row: {m: v[:n] for m, v in cols.items()} for row, cols in
                                        run["tables"][0]["measured"].items()}
        (tmp_path / "ecaml" / "glyphs2_seed-0.json").write_text(json.dumps(run))
        page = report.verdicts_page(report.load_runs(tmp_path), {"ecaml": tmp_path / "06_ecaml.ipynb"})
        return [cell for (_, scale), cell in verdict_cells(page).items() if scale == "glyphs2" and cell != "not run yet"]

    one = cells_with(1)
    assert one and all(cell.startswith("n = 1, no verdict (") and cell.endswith(", one seed: no interval)")
                       for cell in one), one
    two = cells_with(2)
    assert two and all(" to " in cell and "no interval" not in cell for cell in two), two


def test_the_verdict_table_folds_the_seeds_each_inconclusive_cell_would_need(runs, tmp_path):
    """Under the verdict table, folded: every inconclusive cell and only those, each with the seeds a word would
    need at its seeds' mean and spread (recomputed here from the recorded values at the chapter's level)."""
    (tmp_path / "ecaml").mkdir()
    (tmp_path / "ecaml" / "fashion_seed-0.json").write_text(json.dumps(runs[0]))
    page = report.verdicts_page(report.load_runs(tmp_path), {"ecaml": tmp_path / "06_ecaml.ipynb"})
    frame = claims.assess("ecaml", [runs[0]])
    words = set(frame["verdict"])
    assert "inconclusive" in words and words - {"inconclusive"}  # the fixture has both kinds
    folded = page[page.index(":::{admonition} What more seeds would decide"):]
    assert f"the {sum(frame['verdict'] == 'inconclusive')} *inconclusive* cells" in folded
    measured = runs[0]["tables"][0]["measured"]
    for r in frame.to_dict("records"):
        claim = next(c for c in claims.CLAIMS["ecaml"] if c.text == r["claim"])
        line = next((x for x in folded.splitlines() if x.startswith(f"| ECAML | {label_tex(claim.text)} |")), None)
        assert (line is not None) == (r["verdict"] == "inconclusive"), r["claim"]
        if line is not None:
            diff = evidence.paired(measured[claim.base]["R@1"], measured[claim.row]["R@1"], r["confidence"])
            n, word = evidence.seeds_for_word(diff, claim.smallest_effect / 100)
            assert line.endswith(f"| Fashion-MNIST | {r['ours']:+.1f} ({r['low']:+.1f} to {r['high']:+.1f}, 5 seeds) "
                                 f"| {n} (*{word}*) |")


def test_a_word_from_seeds_that_all_ran_on_the_same_data_is_marked(runs, tmp_path):
    """The fixture's raw input differs by seed (its split follows the seed); the same raw score in every seed means
    the seeds varied only the training: ``data varies`` is false and the table marks the word."""
    (tmp_path / "ecaml").mkdir()

    def cells_with(raw):
        run = json.loads(json.dumps(runs[0]))
        if raw is not None:
            run["tables"][0]["measured"]["raw input"]["R@1"] = raw
        (tmp_path / "ecaml" / "fashion_seed-0.json").write_text(json.dumps(run))
        frame = claims.assess("ecaml", [run])
        page = report.verdicts_page(report.load_runs(tmp_path), {"ecaml": tmp_path / "06_ecaml.ipynb"})
        return frame, [cell for (_, scale), cell in verdict_cells(page).items() if scale == "fashion"]

    varied, cells = cells_with(None)
    assert varied["data varies"].all() and cells and not any(report.SAME_DATA_MARK in c for c in cells)
    same, cells = cells_with([0.3] * 5)
    assert not same["data varies"].any()
    worded = [c for c in cells if _word(c) in evidence.WORDS[:4]]
    assert worded and all(report.SAME_DATA_MARK in c for c in worded)
    measured = runs[0]["tables"][0]["measured"]
    claim = claims.CLAIMS["ecaml"][0]
    assert claims.data_varies({k: v for k, v in measured.items() if k != "raw input"}, claim, {}) is None
    assert claims.data_varies({"raw input": {"R@1": [0.3]}}, claim, {}) is None  # one seed: nothing to vary


def test_the_test_bed_ii_cells_on_the_same_data_every_seed_are_the_re_runs_still_pending():
    """Issue #86's done-means: the raw input's score differs across the ten seeds in every test bed II cell. The
    committed runs that do not yet: DCDL's (before its registered re-run, which draws faces by the seed; EPS's
    even/odd and letters tables left the list when its second re-run landed, 0.31.0). A re-run that lands must take
    its tables off this list; a new table on the same data every seed fails here."""
    pending = {("dcdl", "dcdl.main")}
    runs = report.load_runs()
    same = set()
    for chapter, cs in claims.CLAIMS.items():
        tables = merge_seeds([r for r in runs if r["chapter"] == chapter and r.get("profile") == "glyphs2"])
        for claim in cs:
            if claim.table.id in tables and claims.data_varies(tables[claim.table.id][0], claim, tables) is False:
                same.add((chapter, (claim.gate[0] if claim.gate else claim.table).id))
    assert same == pending


def test_a_claims_sentence_gives_its_word_interval_and_what_its_seeds_could_detect():
    """The findings' and the summary's sentence (claims.sentence): an inconclusive word says how large a gain the
    seeds would detect four times in five (what more seeds must reach), a withheld word the gate's reason, a sweep
    under way its gain so far; a decisive word its interval alone."""
    row = {"claim": "A beats B (R@1)", "verdict": "inconclusive", "reason": "", "ours": 1.04, "low": -2.0,
           "high": 4.0, "seeds": 10, "mde": 6.04}
    assert claims.sentence(row) == ("A beats B (R@1): **inconclusive**, +1.0 points (-2.0 to +4.0, 10 seeds), where "
                                    "these seeds detect about 6.0 points")
    assert claims.sentence({**row, "verdict": "supported", "low": 0.5}) == (
        "A beats B (R@1): **supported**, +1.0 points (+0.5 to +4.0, 10 seeds)")
    assert claims.sentence({**row, "verdict": "inconclusive", "mde": float("nan")}).endswith("10 seeds)")
    gated = claims.sentence({**row, "verdict": "not testable here", "gate": "the control does not beat raw input"})
    assert gated.endswith("10 seeds): the control does not beat raw input")
    assert claims.sentence({**row, "verdict": "no verdict", "seeds": 2}) == (
        "A beats B (R@1): no word yet, +1.0 points so far (2 seeds; a word needs 5)")
