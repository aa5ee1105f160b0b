"""Pre-registration checked by git: the committed registry is the claims' code, the stored status is what git says
of each committed run, and in a repository built here a claim defined (or changed) after its run is post hoc."""

import json
import re
import subprocess

import pandas as pd
import pytest
from helpers import ROOT, verdict_cells

from dml_tutorial import claims, plots, protocol, registry, report


def test_the_committed_registry_is_the_claims_code():
    committed = (ROOT / registry.REGISTRY).read_text().splitlines()
    assert committed == registry.lines(), f"{registry.REGISTRY} is stale: run `dml-tutorial report` and commit it"
    entries = [json.loads(line) for line in committed]
    assert len(entries) == sum(len(c) for c in claims.CLAIMS.values())
    assert len({(e["chapter"], e["claim"]) for e in entries}) == len(entries)  # one line per claim


def test_the_stored_status_is_what_git_says_of_the_committed_runs():
    stored = registry.stored(report.RESULTS / registry.STATUS.name)
    fresh = registry.compute(report.load_runs(report.RESULTS), ROOT)
    assert stored == json.loads(json.dumps(fresh)), (
        f"{registry.STATUS} is stale: commit {registry.REGISTRY}, then run `dml-tutorial report` and commit again")


def _git(root, *args):
    return subprocess.run(["git", "-C", str(root), *args], check=True, capture_output=True, text=True).stdout.strip()


@pytest.fixture
def repository(tmp_path):
    """A repository whose history is: claim A registered, a run, claim B registered, then A's definition changed."""
    root = tmp_path / "repo"
    (root / "data").mkdir(parents=True)
    _git(root, "init", "-q")
    _git(root, "config", "user.email", "t@example.org")
    _git(root, "config", "user.name", "t")
    a, b = claims.CLAIMS["dcdl"][:2]
    line_a, line_b = (json.dumps(registry.definition("dcdl", c), ensure_ascii=False) for c in (a, b))

    def commit(text, message):
        (root / registry.REGISTRY).write_text(text)
        (root / "log").write_text(message)
        _git(root, "add", "-A")
        _git(root, "commit", "-q", "-m", message)
        return _git(root, "rev-parse", "HEAD")

    first = commit(line_a + "\n", "register A")
    ran = commit(line_a + "\n", "the run's tree")
    second = commit(line_a + "\n" + line_b + "\n", "register B after the run")
    changed = json.dumps({**json.loads(line_a), "smallest_effect": 3.0})
    return {"root": root, "a": a, "b": b, "first": first, "ran": ran, "second": second,
            "commit": commit, "lines": (changed, line_b)}


def _run(commit, table, date="2026-11-26T00:00:00+00:00"):
    return {"chapter": "dcdl", "profile": "glyphs", "commit": commit, "date": date, "tables": [{"table": str(table)}]}


def test_a_claim_defined_after_its_run_is_post_hoc_and_one_defined_before_is_not(repository):
    r = repository
    runs = [_run(r["ran"] + "-dirty", r["a"].table)]  # a dirty tree still started from the commit it names
    status = registry.status(runs, r["root"])
    before, after = (status[f"dcdl/glyphs/{c.text}"] for c in (r["a"], r["b"]))
    assert before == {"registered": r["first"], "runs": [r["ran"]], "post hoc": False, "after": None, "why": None}
    assert after == {"registered": r["second"], "runs": [r["ran"]], "post hoc": True, "after": r["ran"],
                     "why": registry.LATE_DEFINITION}
    assert registry.is_ancestor(r["first"], r["ran"], r["root"]) and not registry.is_ancestor(
        r["second"], r["ran"], r["root"])
    later = registry.status(runs + [_run(r["second"], r["a"].table, "2026-11-27T00:00:00+00:00")], r["root"])
    assert later[f"dcdl/glyphs/{r['b'].text}"]["after"] == r["ran"]  # the first run it followed, not the last


def test_changing_a_definition_registers_it_anew(repository):
    r = repository
    changed = r["commit"]("\n".join(r["lines"]) + "\n", "A's smallest effect changed")
    status = registry.status([_run(r["ran"], r["a"].table)], r["root"])
    assert status[f"dcdl/glyphs/{r['a'].text}"] == {"registered": changed, "runs": [r["ran"]], "post hoc": True,
                                                    "after": r["ran"], "why": registry.LATE_DEFINITION}
    history = registry.history(r["root"])
    assert [what for _, _, what in history[("dcdl", r["a"].text)]] == ["added", "changed"]
    assert [c for c, _, _ in history[("dcdl", r["b"].text)]] == [r["second"][:7]]


def test_the_committed_protocols_are_the_codes_and_a_run_records_its_own():
    """data/protocols.jsonl holds each chapter's test bed II protocol hash as the code computes it now, and a run
    file of that profile records the same hash (one of another profile records none)."""
    committed = (ROOT / protocol.PROTOCOLS).read_text().splitlines()
    assert committed == protocol.lines(), f"{protocol.PROTOCOLS} is stale: run `dml-tutorial report` and commit it"
    assert {json.loads(line)["chapter"] for line in committed} == set(claims.CLAIMS)
    assert report.protocol_of("cbswr", "glyphs2") == {"protocol": json.loads(committed[1])["sha256"]}
    assert report.protocol_of("cbswr", "smoke") == {}


def test_a_protocol_hash_moves_with_what_decides_the_words(monkeypatch):
    """The hash changes with a setting of the profile, a loss parameter of a grid's run, the family of claims and
    the seeds; not with how a run uses its machine."""
    from dml_tutorial import profiles

    base = protocol.sha256("cbswr", "glyphs2")
    settings = profiles.settings

    def changed(**change):
        return lambda chapter, profile, **kw: settings(chapter, profile, **kw).replace(**change)

    for change, moves in (({"tau": 0.2}, True), ({"ks": (16,)}, True), ({"threads": 1}, False),
                          ({"curve_samples": None}, False)):  # an empty setting: as if it did not exist
        monkeypatch.setattr(profiles, "settings", changed(**change))
        assert (protocol.sha256("cbswr", "glyphs2") != base) == moves, change
    monkeypatch.setattr(profiles, "settings", settings)
    monkeypatch.setitem(claims.CLAIMS, "cbswr", claims.CLAIMS["cbswr"][:1])  # a claim dropped from the family
    assert protocol.sha256("cbswr", "glyphs2") != base
    monkeypatch.setitem(claims.CLAIMS, "cbswr", claims.CLAIMS["cbswr"])
    monkeypatch.setattr(protocol, "seeds", lambda chapter, profile, root=None: [0, 1, 2])
    assert protocol.sha256("cbswr", "glyphs2") != base


@pytest.mark.parametrize("chapter", ["eps", "dcdl", "noise_guarantees"])
def test_a_protocol_hash_sees_which_rows_choice_a_training_takes(chapter, monkeypatch):
    """The grid is registered after searches whose choices differ row by row (plan.chosen_grid), so a training
    moved onto another row's choice (or onto none: the profile's rate and length, as EPS's MS variants were until
    2535448) changes the hash, where the grid at the profile's own settings did not."""
    from dml_tutorial import search

    base, tuned = protocol.sha256(chapter, "glyphs2"), search.tuned
    monkeypatch.setattr(search, "tuned", lambda cfg, choices, row: cfg)  # no row at its choice
    assert protocol.sha256(chapter, "glyphs2") != base
    first = lambda choices: next(iter((choices or {}).get("best shot", {})), None)
    monkeypatch.setattr(search, "tuned", lambda cfg, choices, row: tuned(cfg, choices, first(choices)))
    assert protocol.sha256(chapter, "glyphs2") != base  # every row at the first row's choice
    monkeypatch.setattr(search, "tuned", tuned)
    assert protocol.sha256(chapter, "glyphs2") == base


def test_a_run_under_another_protocol_than_the_registered_one_is_post_hoc(repository):
    """Issue #86: the definition registered before the run is not enough where the run records its protocol: the
    hash it ran under must be the one registered for its chapter and profile in a commit before it."""
    r = repository
    root = r["root"]
    (root / protocol.PROTOCOLS).write_text(json.dumps({"chapter": "dcdl", "profile": "glyphs", "sha256": "aaa"}) + "\n")
    _git(root, "add", "-A")
    _git(root, "commit", "-q", "-m", "register the protocol")
    registered = _git(root, "rev-parse", "HEAD")
    assert registry.registered_protocols(root) == {("dcdl", "glyphs"): ("aaa", registered)}

    def cell(*runs):
        return registry.status(list(runs), root)[f"dcdl/glyphs/{r['a'].text}"]

    def run(commit, sha, date="2026-11-27T00:00:00+00:00"):
        return {**_run(commit, r["a"].table, date), "protocol": sha}

    assert cell(run(registered, "aaa"))["post hoc"] is False
    assert cell(run(registered, "bbb"))["why"] == registry.CHANGED_PROTOCOL  # changed after registration
    assert cell(run(r["ran"], "aaa"))["why"] == registry.CHANGED_PROTOCOL  # made before the protocol was registered
    assert cell(_run(r["ran"], r["a"].table))["post hoc"] is False  # made before runs recorded a protocol
    late = cell(run(registered, "aaa"), run(registered + "-dirty", "ccc", "2026-11-28T00:00:00+00:00"))
    assert late["post hoc"] and late["after"] == registered and late["runs"] == [registered]


def test_a_later_protocol_that_decides_words_the_same_way_leaves_earlier_runs_registered(repository):
    """Registering the protocol of a re-run before it starts (issue #86: EPS's next re-run changes how runs are
    made, not its claims) must not make the runs it will replace post hoc; a change of the claims or the rule (the
    part that decides words, its own hash) must. A protocol line without that hash is judged as before: only the
    current protocol counts."""
    r = repository
    root = r["root"]

    def register(*lines):
        (root / protocol.PROTOCOLS).write_text("".join(json.dumps({"chapter": "dcdl", "profile": "glyphs", **e})
                                                       + "\n" for e in lines))
        _git(root, "add", "-A")
        _git(root, "commit", "-q", "-m", "register")
        return _git(root, "rev-parse", "HEAD")

    def cell(made_from, sha):
        run = {**_run(made_from, r["a"].table), "protocol": sha}
        return registry.status([run], root)[f"dcdl/glyphs/{r['a'].text}"]

    first = register({"sha256": "aaa"})  # registered before any line recorded its words
    assert cell(first, "aaa")["post hoc"] is False
    register({"sha256": "bbb"})
    assert cell(first, "aaa")["why"] == registry.CHANGED_PROTOCOL  # words unknown: only the current one counts
    register({"sha256": "bbb", "words": "w1"})
    register({"sha256": "aaa", "words": "w1"})  # back to aaa, its words recorded now
    register({"sha256": "ccc", "words": "w1"})  # the next re-run's protocol, deciding words as aaa did
    history = registry.protocol_history(root)[("dcdl", "glyphs")]
    assert [(sha, words) for sha, words, _ in history] == [("aaa", "w1"), ("bbb", "w1"), ("ccc", "w1")]
    assert history[0][2] == first  # registered where it first appeared
    assert cell(first, "aaa")["post hoc"] is False
    assert cell(r["ran"], "aaa")["why"] == registry.CHANGED_PROTOCOL  # made before aaa was registered
    register({"sha256": "ddd", "words": "w2"})  # a claim added or dropped: every earlier run's words change
    assert cell(first, "aaa")["why"] == registry.CHANGED_PROTOCOL
    page = "\n".join(registry._protocol_lines(root))
    assert "| dcdl | glyphs | `ddd` | `w2` |" in page and page.count("| current |") == 1
    assert "| dcdl | glyphs | `aaa` | `w1` | " + first[:7] + " |  |" in page


def test_an_uncommitted_registry_registers_nothing(repository):
    r = repository
    (r["root"] / registry.REGISTRY).write_text("\n".join(r["lines"]) + "\n")  # edited, not committed
    status = registry.status([_run(r["ran"], r["a"].table)], r["root"])
    assert status[f"dcdl/glyphs/{r['a'].text}"]["registered"] == registry.UNCOMMITTED
    assert status[f"dcdl/glyphs/{r['a'].text}"]["post hoc"]


def test_a_post_hoc_word_says_so_on_the_page_and_a_registered_one_is_plain(repository):
    r = repository
    stored = registry.compute([_run(r["ran"], r["a"].table)], r["root"])
    frame = pd.DataFrame({"claim": [r["a"].text, r["b"].text, r["b"].text], "verdict": ["supported", "contradicted",
                                                                                        "no verdict"],
                          "reason": ["", "", ""]})
    marked = registry.annotate(frame, "dcdl", "glyphs", stored).to_dict("records")
    assert claims.verdict_text(marked[0]) == "supported"
    assert claims.verdict_text(marked[1]) == "contradicted, post hoc"  # the run it followed: the registry page
    assert claims.verdict_text(marked[2]) == "no verdict"  # no word, nothing to register
    assert registry.annotate(None, "dcdl", "glyphs", stored) is None
    text = registry.page(stored)
    assert f"post hoc after {r['ran'][:7]}" in text and "(registered before)" in text


def test_the_verdict_table_marks_each_word_as_the_stored_status_says():
    stored = registry.stored(report.RESULTS / registry.STATUS.name)["runs"]
    names = {plots.label_tex(c.text): (chapter, c.text) for chapter, cs in claims.CLAIMS.items() for c in cs}
    checked = 0
    for (claim, profile), cell in verdict_cells((report.PAGES / "verdicts.md").read_text()).items():
        if claim not in names:
            continue
        chapter, text = names[claim]
        if cell in ("not run yet", report.NO_ANSWER_MARK) or "no verdict" in cell:
            assert "post hoc" not in cell
            continue
        entry = stored[f"{chapter}/{profile}/{text}"]
        assert ("post hoc" in cell) == entry["post hoc"], (chapter, profile, text)
        assert not re.search(r"\b[0-9a-f]{7,40}\b", cell), f"a commit in a cell: {cell}"  # the registry names it
        checked += 1
    assert checked > 0


def test_every_removed_claim_says_why_and_the_page_lists_what_was_retired(tmp_path, monkeypatch):
    """A claim taken out of the registry leaves a line in data/retired.jsonl saying why (issue #86: a dropped claim
    shrank its family and flipped another's word, unflagged); the registry page lists the retired entries and the
    registered protocols."""
    now = {(chapter, c.text) for chapter, cs in claims.CLAIMS.items() for c in cs}
    removed = {key for key, events in registry.history(ROOT).items() if key not in now}
    said = {(e["chapter"], e["claim"]) for e in registry.retired(ROOT) if e["kind"] == "claim"}
    assert removed <= said, f"removed from the registry without a reason in {registry.RETIRED}: {removed - said}"
    path = tmp_path / "retired.jsonl"
    registry.retire({"kind": "claim", "chapter": "ecaml", "claim": "EC helps", "date": "2026-12-05",
                     "why": "no such row on test bed II"}, path)
    registry.retire({"kind": "runs", "chapter": "cbswr", "profile": "glyphs2", "runs": [["glyphs2_seed-0", "a" * 40]],
                     "date": "2026-12-05", "why": "re-run under the best-shot protocol"}, path)
    with pytest.raises(ValueError, match="says why"):
        registry.retire({"kind": "claim", "chapter": "ecaml", "claim": "EC helps", "why": " "}, path)
    monkeypatch.setattr(registry, "RETIRED", path.relative_to(tmp_path))
    monkeypatch.setattr(registry, "REPOSITORY", tmp_path)
    text = registry.page({"runs": {}, "history": {}})
    assert "| 2026-12-05 | ecaml: the claim *EC helps* | no such row on test bed II |" in text
    assert "| 2026-12-05 | cbswr / glyphs2: 1 run files made from aaaaaaa | re-run under the best-shot protocol |" in text
    assert "No protocol is registered in this copy" in text  # tmp_path is no git clone
