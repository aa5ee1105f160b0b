"""Each paper chapter's findings box: what the paper claims, what we found on each test bed, and why, in one place.

The box is generated, never typed: its verdicts come from :func:`dml_tutorial.claims.assess` on the same tables as
the book's verdict table and the results pages (:func:`dml_tutorial.report.scale_frames`), with the run of the
notebook's own kernel standing in for its profile's recorded run. The sentences that are not numbers (what the
paper claims, why the result reads as it does) are the chapter's, below, and hold no number of ours.

    findings.show("dcdl", cfg, records.session_run("dcdl"))   # the box (Markdown) and one forest plot
"""

from __future__ import annotations

from pathlib import Path

from . import claims, evidence, plots, registry, report
from .chapters import chapters, notebooks_folder

#: What each paper claims, in one sentence: :data:`dml_tutorial.claims.CLAIMED` (the summary page reads it too).
CLAIMED = claims.CLAIMED

#: Why the results read as they do: the chapter's explanation, pointing at the section that shows it.
WHY = {
    "dcdl": "Where $L^W$ is *contradicted*, at the paper's weight, it dominates the training: its weighted pull "
            "on the embedding stays well above the triplet's for the whole run (the chapter's *Where the weight "
            "acts*, on the glyphs too); at smaller weights its share falls as the triplet's classes form, and the "
            "probe holds even where the term still takes about half of the pull. Once classes are compact the "
            "class-against-the-rest transport cost depends only on the sum of the class centres: two antipodal "
            "blobs score as well as classes kept apart (section 4, *One class against the rest*), so the term "
            "cannot ask for look-alike classes to stay apart. On the glyphs its cost at the paper's weight is "
            "spread evenly over the classes with a close look-alike and the others (the crowding table), so what "
            "costs the probe there is the term crowding out the triplet on every class, not look-alike classes "
            "merging; on the digits the crowded classes pay for a heavy $L^L$ instead. The paper set its weight "
            "for its own triplet reduction. On the glyphs each term also runs at the weight the bench's search "
            "chose on held-out characters: there neither term moves the probe detectably (*inconclusive*: the "
            "intervals hold zero and the smallest effect of interest), and over the weights from 0.01 to 0.2 "
            "neither lifts it (the dose-response under the glyph Table 3): the paper's weight was the departure "
            "that made $L^W$ harmful, and at the bench-chosen weight no gain shows (a weight the bench's retrieval "
            "search chose, not one this chapter's probe protocol validated). $L^W$ as GeomLoss's defaults "
            "compute it (annealed, stopped at the paper's $\\varepsilon$ unconverged: our reading of what the "
            "paper ran) costs the clean probe less in the mean than the converged term at the same weight, but "
            "still costs it. Under 30% symmetric noise the triplet baseline falls below the raw pixels' probe; the "
            "claims under noise are gated on the clean control, which clears the raw pixels, so they are tested: "
            "both $L^W$ rows sit far above the noisy baseline, the direction the paper reports (*supported*), and "
            "$L^L$ below it, yet every row compared there stays below the raw pixels (the table's mark): the "
            "term slows the damage the noise does, it does not undo it.",
    "cbswr": "Read the chapter's entropy curves and its table of cluster heads before the verdicts: with our "
             "linear head, $H(Y \\mid X)$ stays near $\\log K$, the assignments barely leave their initial weights "
             "and CBS contrasts each image with the centroids of an almost fixed partition, so a gap to SME "
             "measures our head, not the method. On the glyphs the ablation therefore runs with the head that CBS "
             "does best with on 200 held-out seen characters (the validation table: the released code's head); "
             "there CBS and CBSwR still trail SME, and CBSwR is no better than CBS: a negative result at the "
             "validated head, not our head's. Whether that head's clusters follow the hidden classes is not "
             "shown: the recorded run measured NMI of a batch's clusters, which random clusters score as high on "
             "batches of 64 images from hundreds of characters; pair precision against its chance level replaces "
             "it. The oracle head (the true classes as clusters) shows what better clusters would give. The "
             "recorded run's SME keeps each sample's similarity to itself in its denominator, as the equations "
             "print it; the ablation's SME is now the released codes' form, without it, which scored lower on the "
             "glyphs, close to CBSwR (the heads table's row *SME, without self-similarity*, and the paired line "
             "below the glyph results): part of the recorded SME's lead is that detail. Where the trained rows do "
             "not beat the raw input, the claim cannot show at all.",
    "eps": "The even/odd experiment is the paper's mechanism (section 2) and is not gated: its baseline is meant "
           "to lose structure the input has. The chapter's own collapse test on sub-cluster data (section 3, its "
           "figure against the noise rate and the sentences under it) does not follow Theorem 1 in the smoke run: "
           "there label noise moves the triplet baseline's modes apart and EPS's closer, the opposite of the "
           "theorem's prediction, which is about the loss's optimum, not a short training. The retrieval claims "
           "need a test bed where training helps; on "
           "Fashion-MNIST's five seen classes it does not. On the glyphs each loss runs at the setting the bench's "
           "search validated on held-out characters, and Table 2's baseline is judged in two readings. With one "
           "random positive per anchor (section 5.1's regular loss) EPS is *inconclusive* for the margin loss and "
           "*contradicted* for MS, whose own mining weighs every informative positive where EPS keeps only the "
           "easiest one (our reading, not a measurement); that triplet stays below the raw pixels, so its claim is "
           "not testable. With every positive pair, as section 5.2.2 says the baselines sampled them (\"as "
           "suggested in the original papers\": FaceNet's triplets, Wu et al.'s margin loss), both baselines are "
           "stronger, yet neither clears the raw pixels by the gate's margin at the chapter's adjusted level, so "
           "the triplet's claim is not testable and the margin loss's is *inconclusive* (its interval reaches a "
           "harm of the smallest effect); in both EPS lowers the mean R@1. On Omniglot's protocol (Table 3: trained on superclasses only, here Hangul syllables labelled by "
           "their lead consonant) every loss retrieves the unseen syllables worse than their raw pixels do, the "
           "collapse the paper describes; EPS lessens it for MS (*supported*, though both rows stay below the raw "
           "pixels by letter), while the triplet and the margin loss trained on consonants do not beat the raw "
           "pixels by the gate's margin even at retrieving consonants (*not testable*). Those claims "
           "are gated on retrieving the superclasses, since the baseline is meant to lose the letters. MS also runs "
           "at the paper's lambda and at the official MS code's (Table 2's rows marked with their lambda), and EPS "
           "lowers its mean R@1 at each of them. The number of positives per class rises as the paper's Fig. 3b "
           "does (the table below the glyph Table 2), though here the batch grows with it.",
    "ecaml": "Three departures decided this chapter on the glyphs, and it now runs each as the released code does. "
             "The start: the released code fine-tunes a softmax-pretrained backbone with a new embedding layer at "
             "10x its learning rate. From that kind of start (the trunk softmax-pretrained on the seen characters, "
             "the fine-tuning rate chosen on held-out ones; the rows marked *pretrained*) every baseline clears the "
             "gate, the triplet and the binomial loss by a wide margin, where from scratch neither beat the raw "
             "pixels. N-pair at the released code's similarity scale (also the bench's validated choice); at scale "
             "1 it stayed far below the raw pixels. And EC as the released code computes it (`ec=\"released\"`: "
             "the raw output of a unit-norm classifier layer, ten random partners per anchor), not our EC, which "
             "pulls class means together on the normalised embedding. The recorded run compared each released-EC "
             "row with a baseline that lacked the released code's other addition, a penalty holding the fc rows "
             "at unit norm, so its differences mixed EC with that penalty; the claims now compare with baselines "
             "that carry it (the rows marked *fc unit norm*), which the recorded run does not hold, so they read "
             "*not run yet* until the next test bed. From scratch, our EC is *contradicted* for N-pair; the "
             "triplet and binomial baselines from scratch do not beat the raw pixels, so their claims are *not "
             "testable* there. EC's share of the pull at the "
             "embedding layer shrinks over training for the triplet and N-pair and is largest for the binomial "
             "loss, where it hurts most (its table in section 3). On Fashion-MNIST's "
             "five seen classes no loss beats the raw pixels, so nothing is testable there. The binomial rows of "
             "these runs took one mean over all pairs, which at our batches gives the pull a small fraction of "
             "the weight Yi et al. and the released layer give it; the loss now averages positive and negative "
             "pairs apart, as they do, and the next test bed re-runs those rows.",
    "noise_guarantees": "The claim is about the change of a gap with noise, so each verdict pairs the gap at a "
                        "noise rate with the same seed's gap without noise: a lead that exists on clean labels is "
                        "not counted as robustness. The gate asks whether training helps on clean labels. On the "
                        "glyphs the chapter trains as the paper does, with RMSprop, at the learning rate its "
                        "validation characters chose; the optimizer was the departure that mattered (with Adam, "
                        "the profile's earlier choice, the same claims were inconclusive: run file of commit "
                        "4e1e44a). The theorem itself does not reach these rates: at either miner's max skew "
                        "(section 4) the tolerated rate lies far below the smallest rate trained, and both miners "
                        "never pick most negative pairs, for which the strict bound is zero. What the verdicts "
                        "test is the paper's empirical claim (its Fig. 1d), not its guarantee.",
}


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


def summary(frames: dict) -> str:
    """The claims against the scales as a narrow Markdown table: the verdict and our gain in points."""
    scales = list(frames)
    names = list(dict.fromkeys(c for f in frames.values() for c in f["claim"]))
    lines = ["| claim | " + " | ".join(scales) + " |", "|---" * (1 + len(scales)) + "|"]
    for name in names:
        cells = []
        for frame in frames.values():
            hit = frame[frame["claim"] == name]
            r = hit.iloc[0].to_dict() if len(hit) else None
            cells.append("–" if r is None else f"n = {r['seeds']}, no verdict ({r['ours']:+.1f})"
                         if r["verdict"] == evidence.NO_VERDICT else f"**{claims.verdict_text(r)}** ({r['ours']:+.1f})")
        lines.append(f"| {plots.label_tex(name)} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def gate_notes(frames: dict) -> list[str]:
    """One item per scale: whether the test bed's gate passed, and every reason it failed with the claims it
    failed for (claims on one baseline share a reason; claims on different baselines fail for their own)."""
    out = []
    for scale, frame in frames.items():
        if (frame["verdict"] == evidence.NO_VERDICT).all():
            out.append(f"- {scale}: {frame['reason'].iloc[0]}; the numbers show that the pipeline runs.")
            continue
        failed = frame[frame["verdict"] == "not testable here"]
        if failed.empty:
            out.append(f"- {scale}: the gate passes for every claim (training beats the raw input and the "
                       "untrained network by the smallest effect of interest), so the words apply.")
            continue
        reasons = {}  # the gate's reason -> the claims it withholds the word from
        for claim, reason in zip(failed["claim"], failed["gate"]):
            reasons.setdefault(reason[:1].lower() + reason[1:], []).append(plots.label_tex(claim))
        head = f"- {scale}: {len(failed)} of {len(frame)} claims are not testable here"
        if len(reasons) == 1:
            out.append(f"{head}: {next(iter(reasons))}.")
        else:
            out.append(head + ":" + "".join(f"\n  - {' and '.join(names)}: {reason}."
                                             for reason, names in reasons.items()))
    return out


def markdown(chapter: str, frames: dict) -> str:
    """The box as MyST Markdown: an admonition titled "Findings"."""
    body = [f"**The paper claims** that {CLAIMED[chapter]}", "",
            ("**What we found**, in the book's five words (our gain in points, paired by seed; the interval, "
             "adjusted for the chapter's comparisons, is in the figure below):"), "", summary(frames), "",
            "**Where each test bed can show the claim**:", "", *gate_notes(frames), "", f"**Why.** {WHY[chapter]}"]
    return "\n".join([":::{admonition} Findings", ":class: important", "", *body, ":::"])


def figure(frames: dict, title: str = ""):
    """One forest plot for the box: a panel per test bed, our adjusted intervals beside the paper's gain."""
    return plots.gains_by_scale(frames, title)


def missing(chapter: str, results=report.RESULTS) -> str:
    """What a findings box says when no scale of ``chapter`` has a record: where it looked and how to get one."""
    return (f"No claim of chapter {chapter!r} is recorded here: no record of its stored run among the chapters of "
            f"`{notebooks_folder()}` and no run of it under `{Path(results) / chapter}`. The course's own records "
            "come with the package (`pip install` of the repository); `dml-tutorial sweep "
            f"data/sweeps/{chapter}-<profile>.yaml` in a clone of the repository records new runs.")


def show(chapter: str, cfg: dict | None = None, session: dict | None = None, results=report.RESULTS):
    """Display the chapter's findings box; return its forest plot (``None`` when no scale has a recorded claim)."""
    from IPython.display import Markdown, display

    frames = scale_frames(chapter, cfg, session, results)
    if not frames:
        display(Markdown(":::{admonition} Findings\n" + missing(chapter, results) + "\n:::"))
        return None
    display(Markdown(markdown(chapter, frames)))
    return figure(frames, f"{claims.NAMES[chapter]}: our gains, every test bed")
