"""data/verdict_changes.py: the verdict table's words at one scale, before and after (for a closing note)."""

import subprocess

import pytest
from helpers import ROOT, load_script, verdict_cells

changes = load_script("data/verdict_changes.py")
PAGE = (ROOT / "book/results/verdicts.md").read_text()


def card_page(header: str, *rows: str) -> str:
    """A verdict page with one card table (``header``'s columns after chapter and claim) and a table after it."""
    heads = ["chapter", "claim", *header.split(",")]
    lines = ["| " + " | ".join(heads) + " |", "|" + "---|" * len(heads), *rows]
    return "intro\n\n:::{container} verdict-cards\n" + "\n".join(lines) + "\n:::\n\n| other | table |\n|---|---|\n| a | b |\n"


def test_the_committed_page_parses_as_the_tests_own_reader_reads_it():
    mine = changes.cells(PAGE)
    theirs = {claim: cell for (claim, profile), cell in verdict_cells(PAGE).items() if profile == "glyphs2"}
    assert mine and {claim: cell for (_, claim), cell in mine.items()} == theirs
    assert {chapter for chapter, _ in mine} >= {"Sinkhorn DCDL", "CBSwR", "EPS", "ECAML"}  # the {ref} link stripped


def test_its_inconclusive_count_matches_the_pages_own_list_of_what_more_seeds_would_decide():
    listed = sum(line.split(" | ")[2] == "test bed II" for line in PAGE.split("What more seeds would decide", 1)[1]
                 .splitlines() if line.startswith("| ") and not line.startswith("| chapter"))
    assert changes.counts(changes.cells(PAGE))["inconclusive"] == listed > 0


def test_a_changed_word_a_gone_claim_and_a_new_one_are_each_reported():
    label = '<span class="card-label">B: </span>'
    before = changes.cells(card_page("A,B", f"| {{ref}}`Ch <ch-findings>` | c1 | x | {label}supported (+3.0) |",
                                     f"|  | c2 | x | {label}inconclusive (+0.1) |",
                                     f"|  | gone | x | {label}not run yet |"), "B")
    after = changes.cells(card_page("B", f"| Ch | c1 | {label}inconclusive (-0.5) |",
                                    f"|  | c2 | {label}inconclusive≡ (+0.4) |",
                                    f"|  | new | {label}no effect detected (+0.0) |"), "B")
    assert before[("Ch", "c2")] == "inconclusive (+0.1)" and ("Ch", "gone") in before
    text = changes.report(before, after, ("old", "new"))
    assert "1 of 2 claims on both sides changed word" in text  # c2 kept its word: a new mark or gain is no change
    assert "| Ch | c1 | supported (+3.0) | inconclusive (-0.5) |" in text
    assert "Only old (1):\n\n- Ch: gone: not run yet" in text and "Only new (1):\n\n- Ch: new: no effect detected" in text
    assert "- old: 3 claims: 1 supported, 1 inconclusive, 1 not run yet; decisive 1 of 3 (33%)" in text
    assert "- new: 3 claims: 2 inconclusive, 1 no effect detected; decisive 1 of 3 (33%)" in text


def test_a_page_without_the_scale_gives_nothing_and_an_unknown_word_is_an_error():
    assert changes.cells(card_page("A", "| Ch | c | supported |"), "test bed II") == {}
    assert changes.word_of("") == "—" and changes.word_of("no effect detected (+0.0)") == "no effect detected"
    with pytest.raises(ValueError, match="no known word: 'maybe"):
        changes.word_of("maybe (+1.0)")


def test_the_command_compares_two_revisions(capsys):
    if subprocess.run(["git", "rev-parse", "HEAD"], check=False, cwd=ROOT, capture_output=True).returncode:
        pytest.skip("not a git checkout")
    assert changes.main(["HEAD", "HEAD"]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"0 of {len(changes.cells(changes.page('HEAD')))} claims on both sides changed word")
