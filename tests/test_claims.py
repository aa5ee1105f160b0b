"""The claims table: paired gains against scipy's paired t-test, the paper's gain from the quoted numbers, the
verdict words, the Benjamini-Hochberg adjustment by hand, the reference-row check, and the pages and figure built
from them."""

import json

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import pytest
from scipy import stats

from dml_tutorial import claims, plots, report

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
                "raw input": {"R@1": [0.77] * 5}, "untrained network": {"R@1": (base - 0.1).tolist()}}
    paper = {"Triplet": {"R@1": 50.0}, "ECAML(Tri)": {"R@1": 52.0}, "Binomial": {"R@1": 60.0},
             "ECAML(Binomial)": {"R@1": 61.0}}
    return [_run(measured, paper)]


def test_gains_intervals_and_words_match_a_paired_t_test(runs):
    frame = claims.assess("ecaml", runs).set_index("claim")
    measured = runs[0]["tables"][0]["measured"]
    for base, row in BASES.items():
        r = frame.loc[f"EC improves {base} (unseen R@1)"]
        a, b = np.array(measured[base]["R@1"]), np.array(measured[row]["R@1"])
        test = stats.ttest_rel(b, a)
        low, high = test.confidence_interval(0.95)
        assert r["ours"] == pytest.approx(100 * (b - a).mean())
        assert (r["low"], r["high"]) == pytest.approx((100 * low, 100 * high))
        assert r["p"] == pytest.approx(test.pvalue) and r["seeds"] == 5
    assert frame.loc["EC improves Triplet (unseen R@1)", "verdict"] == "reproduced"
    assert frame.loc["EC improves N-Pair (unseen R@1)", "verdict"] == "not reproduced"  # the opposite effect
    assert frame.loc["EC improves Triplet (unseen R@1)", "paper"] == pytest.approx(2.0)
    assert frame.loc["EC improves Binomial (unseen R@1)", "paper"] == pytest.approx(1.0)
    assert pd.isna(frame.loc["EC improves N-Pair (unseen R@1)", "paper"])  # not quoted: direction only


def test_benjamini_hochberg_by_hand(runs):
    frame = claims.assess("ecaml", runs)
    p = frame["p"].to_numpy()
    order = np.argsort(p)
    m = len(p)
    adjusted = np.minimum.accumulate((p[order] * m / np.arange(1, m + 1))[::-1])[::-1]
    expected = np.empty(m)
    expected[order] = np.minimum(adjusted, 1)
    assert frame["q (BH)"].to_numpy() == pytest.approx(expected)


def test_missing_tables_rows_and_chapters_give_no_claims(runs):
    assert claims.assess("ecaml", [_run({"Triplet": {"R@1": [0.5] * 5}})]).empty
    assert claims.assess("ecaml", [_run({}, table="another table")]).empty
    assert claims.assess("foundations", runs).empty


def test_references_show_whether_training_beat_the_raw_input(runs):
    refs = claims.above_references(runs, "ecaml")
    assert len(refs) == 1 and refs.loc[0, "raw input"] == pytest.approx(77.0)
    best = max((np.mean(v["R@1"]), k) for k, v in runs[0]["tables"][0]["measured"].items()
               if k not in claims.REFERENCES)
    assert refs.loc[0, "best trained row"] == best[1] and refs.loc[0, "best trained"] == pytest.approx(100 * best[0])


def test_claims_name_tables_and_rows_the_chapters_record():
    """Every claim points at a table a chapter's committed record holds, with both rows: a renamed row or table
    would silently drop the claim from every page."""
    from dml_tutorial.chapters import chapters, results_path

    for chapter, notebook in chapters().items():
        record = results_path(notebook)
        if chapter not in claims.CLAIMS:
            continue
        tables = {t["table"]: t["measured"] for t in json.loads(record.read_text())["tables"]}
        for claim in claims.CLAIMS[chapter]:
            assert claim.table in tables, (chapter, claim.table)
            assert claim.column in tables[claim.table][claim.base], (chapter, claim)
            assert claim.column in tables[claim.table][claim.row], (chapter, claim)
            assert set(claims.REFERENCES) <= set(tables[claim.table]), (chapter, "reference rows")


def test_markdown_and_figure_show_every_claim(runs):
    frame = claims.assess("ecaml", runs)
    lines = claims.markdown(frame).splitlines()
    assert len(lines) == 2 + len(frame) and "direction only" in lines[3] and "**reproduced**" in lines[2]
    fig = plots.gains(frame, "t")
    ax = fig.axes[0]
    top_down = sorted(ax.get_yticklabels(), key=lambda t: -t.get_position()[1])
    assert [t.get_text() for t in top_down] == list(frame["claim"])  # the first claim on top
    assert ax.get_xlabel().startswith("gain in points")
    plt.close(fig)
    with pytest.raises(ValueError, match="no claims"):
        plots.gains(frame.iloc[:0])


def test_pages_carry_the_verdicts(runs, tmp_path):
    (tmp_path / "ecaml").mkdir()
    (tmp_path / "ecaml" / "fashion_seed-0.json").write_text(json.dumps(runs[0]))
    report.write_report(tmp_path, tmp_path / "pages")
    page = (tmp_path / "pages" / "ecaml.md").read_text()
    assert "### Verdicts" in page and "EC improves Triplet" in page and "fashion profile" in page
    table = (tmp_path / "pages" / "verdicts.md").read_text()
    row = next(line for line in table.splitlines() if "EC improves Triplet" in line)
    assert "| reproduced (+5" in row and row.endswith("| not run yet |")  # no full-profile run


def test_show_displays_the_section_and_returns_the_figure(runs, tmp_path, capsys):
    assert report.show("ecaml", "fashion", tmp_path) is None  # nothing recorded
    (tmp_path / "ecaml").mkdir()
    (tmp_path / "ecaml" / "fashion_seed-0.json").write_text(json.dumps(runs[0]))
    fig = report.show("ecaml", "fashion", tmp_path)
    assert fig is not None and len(fig.axes[0].get_yticklabels()) == 3
    plt.close(fig)
