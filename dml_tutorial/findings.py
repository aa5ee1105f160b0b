"""Each paper chapter's findings box: what the paper claims, what we found, and why, in sentences, once.

The box is generated, never typed: its verdicts come from :func:`dml_tutorial.claims.assess` on the same tables as
the book's verdict table and the results pages (:func:`dml_tutorial.report.scale_frames`), with the run of the
notebook's own kernel standing in for its profile's recorded run. The sentences that are not numbers (what the
paper claims, why the result reads as it does) are the chapter's, below, and hold no number of ours.

    findings.opening("dcdl")                                   # the verdict lines, on the chapter's first screen
    findings.show("dcdl", cfg)                                 # the box, in sentences
"""

from __future__ import annotations

from pathlib import Path

from . import claims, evidence, plots, records, registry, report
from .chapters import chapters, notebooks_folder

#: What each paper claims, in one sentence: :data:`dml_tutorial.claims.CLAIMED` (the summary page reads it too).
CLAIMED = claims.CLAIMED

#: Why the results read as they do: the chapter's explanation in three to five plain bullets, each pointing at the
#: section that shows it; no number of ours (those come from the runs) and no name a reader cannot see on the page.
WHY = {
    "dcdl": [
        ("On test bed II (a small ConvNet trained from scratch, the paper's regime) the triplet baseline clears the "
         "gate by far, and each row trains at the rate and length a held-out training face chose for it. On clean "
         "labels neither $L^W$ nor $L^L$ moves the probe by more than these seeds can tell."),
        ("Under 30% symmetric noise both $L^W$ rows stay far above the triplet baseline, the paper's direction, yet "
         "far below their clean scores: the term slows the damage noise does without undoing it."),
        ("At the paper's weight $L^W$'s weighted pull stays above the triplet's for the whole run (*Where the weight "
         "acts*): the term, not the local loss, steers the embedding."),
        ("Once classes are compact, the term's cost depends only on the sum of the class centres: two antipodal "
         "blobs score as well as classes kept apart (*One class against the rest*), so it cannot keep look-alike "
         "classes apart."),
        ("$L^W$ as GeomLoss's defaults compute it (annealed, unconverged: our reading of what the paper ran) is the "
         "one clean gain these seeds detect; searched up to 60 epochs, its lead narrows and stays above zero (the "
         "edge checks, folded under *On test bed II*)."),
    ],
    "cbswr": [
        ("On test bed II, a pretrained network whose features already cluster (the paper's regime), every arm had "
         "its best shot: its rate, length and temperature or weight chosen on held-out characters, each seed with "
         "its own unseen faces and start. Every control beats the raw pixels, the untrained network and the start "
         "it fine-tunes, so the words apply."),
        ("Given that, CBS and CBSwR retrieve like SME, within what ten splits can tell either way. The lead of the "
         "first test bed II run came from an SME trained at a shared, untuned rate."),
        ("CBS's clusters do not follow the characters: the released head's same-cluster pairs share a character "
         "barely more often than chance, and a head given the true classes retrieves a few points higher. With our "
         "linear head CBS falls far below SME; every seed chose the released head on its held-out characters."),
        ("The instance term carries the retrieval: RIM alone trails CBS on every seed. The reconstruction term "
         "adds nothing these seeds can detect. More clusters help on every seed, where the paper reports the "
         "method robust to K."),
    ],
    "eps": [
        ("On test bed II (a pretrained network, fine-tuned: the paper's regime) every baseline clears the gate and "
         "every arm had its best shot, searched to twice the length where most arms had stopped still rising. "
         "EPS still lowers the unseen retrieval of the margin loss sampled with every positive pair; its other "
         "losses shrink inside the spread between seeds. EPS improves no loss: a negative result."),
        ("At a fixed batch size, more positives per class lower the margin loss's unseen retrieval as much without "
         "EPS as with it (*How many positives per class*): fewer classes a batch, not EPS; Fig. 3b's rise does not "
         "show."),
        ("Trained on consonants, every loss, with or without EPS, retrieves unseen syllables worse than their raw "
         "pixels: the collapse the paper describes, not undone by EPS. More same-letter positives a batch lower "
         "EPS's letter retrieval, not the margin loss's: section 5.3 expects a rise."),
        ("Neither small experiment shows the mechanism: on the even/odd characters, drawn anew each seed, both arms "
         "lose the sub-classes the raw pixels keep; on the sub-cluster data, label noise brings EPS's modes closer, "
         "where Claims 1-2 keep them apart."),
        ("The search stops lengthening a trial at its first held-out dip, so one arm may stop early while the other "
         "goes on: such seeds widen the intervals."),
    ],
    "ecaml": [
        ("For the triplet loss the held-out characters switched EC off on most seeds (the two rows are then the "
         "same run) and kept the paper's weight on the others, where the unseen characters lost recall: hence a "
         "wide interval. At the paper's weight EC lowers the triplet loss's unseen recall on every seed: "
         "*contradicted*."),
        ("For N-pair and the binomial loss, and for the released code's EC, the gains are small next to the spread "
         "between seeds: *inconclusive*."),
        ("Each row trains for the few epochs at which its held-out curve peaked; before, every row trained past "
         "the unseen curve's early peak, and the comparison read how fast each arm decayed."),
    ],
    "noise_guarantees": [
        ("Each verdict pairs the gap at a noise rate with the same seed's gap without noise: a lead on clean "
         "labels is not counted as robustness."),
        ("On test bed II (a pretrained network, fine-tuned: the paper's regime) each arm at each noise rate trains "
         "at the rate and length its own held-out characters, as noisy as its labels, chose. Random semi-hard's "
         "lead grows at the two larger rates, the paper's empirical claim; at the smallest, the growth is small "
         "beside the seeds' spread."),
        ("The lead is not one recipe's: it shows again with Adam at each arm's chosen rate and with RMSprop at the "
         "runner-up rate (the other recipes' table)."),
        ("Under noise, training longer does not help: at p = 0.4 both triplet arms stop climbing halfway through "
         "the checkpoint table and lose ground by its end, while on clean labels they still climb."),
        ("The theorem itself does not reach these rates: at either miner's skew (section 4) the rate it "
         "tolerates lies far below the smallest rate trained. The verdicts test the paper's empirical claim (its "
         "Fig. 1d), not its guarantee."),
    ],
}

#: The test beds as the opening's verdict lines name them (a scale heading of :data:`dml_tutorial.report.SCALES`
#: to its short name; the glossary defines each).
SHORT = {"Fashion-MNIST": "Fashion-MNIST", "glyphs": "the glyphs", "test bed II": "test bed II",
         "paper's data": "the paper's data"}
TEST_BEDS = {"glyphs": "rendered characters, an MLP trained from scratch",
             "test bed II": "a pretrained ConvNet on unseen characters in unseen faces"}
#: Where a chapter's test bed II is not the others' (DCDL trains from scratch, as its paper does).
CHAPTER_TEST_BEDS = {"dcdl": {**TEST_BEDS, "test bed II": ("a small ConvNet trained from scratch, probed on the same "
                                                          "characters in unseen faces")}}


def _item(label: str) -> str:
    """A claim's label as the start of a list item: a leading ``+`` (DCDL's "+ L^W beats ...") escaped, which
    Markdown would read as a second, nested list."""
    return "\\" + label if label[:1] in "+-*" else label


def scale_frames(chapter: str, cfg: dict | None = None, session: dict | None = None,
                 results=report.RESULTS) -> dict:
    """``{scale heading: claims.assess frame}`` for every scale with a recorded run of ``chapter``; the kernel's
    own run (``session``, recorded under ``cfg["profile"]``) replaces that profile's record."""
    notebook = chapters().get(chapter)  # None where neither the notebook nor its record is here
    runs = [r for r in report.load_runs(results) if r["chapter"] == chapter]
    registration = registry.stored(Path(results) / registry.STATUS.name)
    frames = report.scale_frames(chapter, notebook, runs, registration)
    if session is not None and cfg is not None:
        frame = claims.assess(chapter, [session], profile=cfg["profile"])
        frames[cfg["profile"]] = registry.annotate(frame, chapter, cfg["profile"], registration)
    heads = {profile or "smoke": head for head, profile in report.SCALES}
    return {heads[p]: f for p, f in frames.items() if p in heads and f is not None and not f.empty}


def _pipeline_check(frame) -> bool:
    """Whether a scale's frame is a smoke run: numbers that show the pipeline runs, never words."""
    return (frame["verdict"] == evidence.NO_VERDICT).all() and evidence.PIPELINE_CHECK in frame["reason"].iloc[0]


def _short(r: dict) -> str:
    """One claim's word and mean gain for the opening; its interval is the Findings' (:func:`claims.sentence`)."""
    if r["verdict"] == evidence.NO_VERDICT:  # a sweep under way: its gain so far, without a word
        return f"*no word yet* ({r['ours']:+.1f} points, n = {r['seeds']})"
    if r["verdict"] in report.NO_ANSWER:
        return f"*{r['verdict']}*"
    return f"**{claims.verdict_text(r)}** ({r['ours']:+.1f} points)"


def elsewhere(frames: dict, scale: str | None) -> list[str]:
    """The other scales' words, counted (:func:`dml_tutorial.report.found`): ``["on Fashion-MNIST: 4 *not
    testable here*", ...]``, smoke runs left out."""
    return [f"on {SHORT.get(s, s)}: {text}" for s, f in frames.items()
            if s != scale and not _pipeline_check(f) and (text := report.found(f))]


def verdict_lines(chapter: str, frames: dict) -> str:
    """The chapter's answer on its first screen, in an admonition that links to the Findings: one line per claim
    with its word and our mean gain at the deciding scale (:func:`deciding`; a sweep with too few seeds gives its
    gain so far), then the other scales' words counted in one line, from the same frames as the Findings box."""
    scale = deciding(frames)
    lines, waiting = [], 0
    for claim in claims.CLAIMS.get(chapter, []):
        hit = frames[scale][frames[scale]["claim"] == claim.text] if scale else None
        if hit is None or hit.empty:
            waiting += 1  # counted in one line: a line each made the answer a list of promises
            continue
        lines.append(f"- {_item(plots.label_tex(claim.text))}: {_short(hit.iloc[0].to_dict())}.")
    if waiting:
        noun, them = ("claims", "them") if waiting > 1 else ("claim", "it")
        lines.append(f"- Not run yet: {waiting} more {noun}, registered before the runs that will decide {them} "
                     f"({{doc}}`the verdict table </book/results/verdicts>` names {them}).")
    beds = CHAPTER_TEST_BEDS.get(chapter, TEST_BEDS).get(scale, "")
    intro = (f"What our runs say on {SHORT.get(scale, scale)}{f' ({beds})' if beds else ''}, claim by claim (the "
             "words are the {doc}`glossary's </book/glossary>`):" if scale else
             "No test bed has a recorded run yet: only the pipeline check.")
    others = elsewhere(frames, scale)
    tail = (f"Elsewhere: {'; '.join(others)}. " if others else "") + \
        f"Why, and the evidence: {{ref}}`the Findings <{chapter}-findings>`."
    return "\n".join([":::{admonition} Our answer, in short", ":class: tip verdict-line", "", intro, "", *lines, "",
                      tail, ":::"])


def deciding(frames: dict) -> str | None:
    """The scale whose words a chapter gives claim by claim: test bed II (:data:`dml_tutorial.report.DECIDING`)
    where it is recorded, else the last scale of :data:`dml_tutorial.report.SCALES` with more than a pipeline
    check; ``None`` when only smoke runs are recorded."""
    decides = dict(report.SCALES)
    real = [scale for scale, frame in frames.items() if not _pipeline_check(frame)]
    return next((s for s in real if decides.get(s) == report.DECIDING), real[-1] if real else None)


def markdown(chapter: str, frames: dict) -> str:
    """The box as MyST Markdown, an admonition titled "Findings": what the paper claims; what we found on the
    deciding scale (:func:`deciding`), a sentence per claim with its word, gain and adjusted interval
    (:func:`dml_tutorial.claims.sentence`); the other scales' words counted in one line; why, in the chapter's
    bullets; and where the rest of the apparatus (every scale's table, gates, families, registry) lives."""
    scale = deciding(frames)
    head = (f"**What we found on {scale}**, where the words are decided (our gain in points, paired by seed, "
            "with its interval adjusted for the chapter's comparisons):")
    found = ([head, "",
              *(f"- {_item(claims.sentence(r))}." for r in frames[scale].to_dict("records"))]
             if scale else ["**What we found**: no test bed has a recorded run yet, only the pipeline check."])
    others = elsewhere(frames, scale)
    body = [f"**The paper claims** that {CLAIMED[chapter]}", "", *found, "", "**Why**:", "",
            *(f"- {line}" for line in WHY[chapter]), "",
            (f"**Elsewhere**: {'; '.join(others)}. " if others else "") +
            "Every scale's verdicts, with their gates, families and registration: {doc}`the verdict table "
            "</book/results/verdicts>`."]
    return "\n".join([":::{admonition} Findings", ":class: important", "", *body, ":::"])


def missing(chapter: str, results=report.RESULTS) -> str:
    """What a findings box says when no scale of ``chapter`` has a record: where it looked and how to get one."""
    return (f"No claim of chapter {chapter!r} is recorded here: no record of its stored run among the chapters of "
            f"`{notebooks_folder()}` and no run of it under `{Path(results) / chapter}`. The course's own records "
            "come with the package (`pip install` of the repository); `dml-tutorial sweep "
            f"data/sweeps/{chapter}-<profile>.yaml` in a clone of the repository records new runs.")


def opening(chapter: str, results=report.RESULTS) -> None:
    """Display the chapter's verdict lines (:func:`verdict_lines`) from its recorded runs, for its first screen;
    before any record, say where it looked (:func:`missing`)."""
    from IPython.display import Markdown, display

    frames = scale_frames(chapter, results=results)
    display(Markdown(verdict_lines(chapter, frames) if frames else
                     ":::{admonition} Our answer, in short\n:class: tip verdict-line\n" + missing(chapter, results)
                     + "\n:::"))


def show(chapter: str, cfg: dict | None = None, session: dict | None = None, results=report.RESULTS) -> None:
    """Display the chapter's findings box (:func:`markdown`), the kernel's own ``session`` run (with ``cfg``, by
    default this kernel's, :func:`records.session_run`) standing in for its profile's record; before any record,
    say where it looked (:func:`missing`)."""
    from IPython.display import Markdown, display

    if session is None and cfg is not None:
        session = records.session_run(chapter)
    frames = scale_frames(chapter, cfg, session, results)
    display(Markdown(markdown(chapter, frames) if frames else
                     ":::{admonition} Findings\n" + missing(chapter, results) + "\n:::"))
