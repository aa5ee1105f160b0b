"""The verdict table's words at one scale, before and after: which claims changed word, which came and went, and how
many of each word there are. Reads the generated page ``book/results/verdicts.md`` at a git revision (and the working
tree's), so it compares any two states of the book, whatever code wrote them; it recomputes nothing.

    python data/verdict_changes.py 718d697                  # test bed II at 718d697 against the working tree
    python data/verdict_changes.py 718d697 HEAD --scale Fashion-MNIST

Prints markdown: a table of the claims whose word changed (with both cells: word, gain and interval), the claims
only one side has, and the count of each word on each side with the share of decisive words (supported,
contradicted, no effect detected) among the claims that have a cell at that scale. Claims are matched by chapter
and claim text as the page prints them, so a reworded claim shows as one gone and one new. A "—" is a cell the page
leaves empty because a line under the table says it once for the whole chapter (e.g. "every claim not testable
here"); it is counted as "—", not as that word.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PAGE = "book/results/verdicts.md"
#: The words a cell can start with, longest first where one begins another.
WORDS = ("supported", "contradicted", "no effect detected", "inconclusive", "not testable here", "not run yet",
         "no verdict", "superseded", "—")
DECISIVE = WORDS[:3]
_LABEL = re.compile(r'<span class="card-label">[^<]*</span>')
_REF = re.compile(r"\{ref\}`([^<`]+?)\s*<[^>]*>`")


def page(revision: str | None, root: Path = ROOT) -> str:
    """The verdict page at ``revision`` (``None``: the working tree's file)."""
    if revision is None:
        return (root / PAGE).read_text()
    return subprocess.run(["git", "show", f"{revision}:{PAGE}"], cwd=root, check=True, capture_output=True,
                          text=True).stdout


def word_of(cell: str) -> str:
    """The verdict word a cell starts with (``"—"`` for an empty cell); ``ValueError`` for anything else."""
    cell = cell.strip() or "—"
    for word in WORDS:
        if cell.startswith(word):
            return word
    raise ValueError(f"a verdict cell that starts with no known word: {cell!r}")


def cells(markdown: str, scale: str = "test bed II") -> dict[tuple[str, str], str]:
    """``{(chapter, claim): cell}`` from the verdict cards' table (the first table whose header starts with
    ``chapter | claim``), the card labels stripped; {} when the table has no ``scale`` column."""
    rows, header, chapter = {}, None, ""
    for line in markdown.splitlines():
        if not line.startswith("|"):
            if header is not None and rows:
                break  # the end of the first table
            continue
        parts = [_LABEL.sub("", p).strip() for p in line.strip().strip("|").split("|")]
        if header is None:
            if parts[:2] == ["chapter", "claim"]:
                header = parts
            continue
        if set("".join(parts)) <= set("-: "):
            continue  # the separator row
        if scale not in header:
            return {}
        chapter = _REF.sub(r"\1", parts[0]) or chapter
        rows[(chapter, parts[1])] = parts[header.index(scale)]
    return rows


def counts(words: dict) -> Counter:
    return Counter(word_of(c) for c in words.values())


def decisive_share(words: dict) -> tuple[int, int]:
    """(decisive words, claims with a cell at the scale: not "—", "superseded" or "no verdict")."""
    told = [word_of(c) for c in words.values() if word_of(c) not in ("—", "superseded", "no verdict")]
    return sum(w in DECISIVE for w in told), len(told)


def report(before: dict, after: dict, labels=("before", "after")) -> str:
    """The markdown comparison of two :func:`cells` dicts."""
    changed = [k for k in before if k in after and word_of(before[k]) != word_of(after[k])]
    lines = [f"| chapter | claim | {labels[0]} | {labels[1]} |", "|---|---|---|---|"]
    lines += [f"| {c} | {claim} | {before[(c, claim)]} | {after[(c, claim)]} |" for c, claim in changed]
    out = [f"{len(changed)} of {len(set(before) & set(after))} claims on both sides changed word:", "", *lines, ""]
    for side, mine, other in ((labels[0], before, after), (labels[1], after, before)):
        only = [k for k in mine if k not in other]
        out += [f"Only {side} ({len(only)}):", ""] + [f"- {c}: {claim}: {mine[(c, claim)]}" for c, claim in only]
        out.append("")
    for side, words in zip(labels, (before, after)):
        n, told = decisive_share(words)
        tally = ", ".join(f"{count} {word}" for word, count in sorted(counts(words).items(), key=lambda x: -x[1]))
        out.append(f"- {side}: {len(words)} claims: {tally}; decisive {n} of {told}"
                   + (f" ({100 * n / told:.0f}%)" if told else ""))
    return "\n".join(out)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("before", help="a git revision")
    parser.add_argument("after", nargs="?", help="a git revision (default: the working tree's page)")
    parser.add_argument("--scale", default="test bed II", help="the column to compare (default: test bed II)")
    args = parser.parse_args(argv)
    before, after = (cells(page(rev), args.scale) for rev in (args.before, args.after))
    if not before or not after:
        sys.exit(f"error: no {args.scale!r} column on the verdict page of "
                 f"{args.before if not before else args.after or 'the working tree'}")
    print(report(before, after, (args.before, args.after or "now")))
    return 0


if __name__ == "__main__":
    sys.exit(main())
