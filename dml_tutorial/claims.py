"""Each paper's central claims, tested on recorded runs: the comparison, our paired gain with its interval adjusted
for the chapter's family of comparisons, the paper's own gain beside it, and the verdict in the book's one
vocabulary (:mod:`dml_tutorial.evidence`).

A claim names a recorded table (what :func:`dml_tutorial.report.record` wrote), the baseline row, the row the paper
says is better and the column compared; optionally a ``control`` column, for claims about how an effect changes
with a cause (the noise claims: random semi-hard's lead at p minus its lead at p = 0, paired by seed, so that a gap
that already exists without noise is not counted as robustness to noise). Each claim states its **smallest effect
of interest** in points on our test beds, with its reason, and never another dataset's gain. These were set in
this form on 2026-11-25, after the smoke and Fashion-MNIST runs had been seen and before any run on the glyph
test bed. :func:`assess` reads the tables from run files (a chapter's record ``notebooks/<name>.results.json``, the
sweeps' ``data/results/<chapter>/*.json``) or from the tables a notebook's kernel recorded
(:func:`dml_tutorial.records.session_run`), pairs the rows seed by seed, checks the one gate rule
(:func:`dml_tutorial.evidence.gate`, on the claim's control: its clean-label column for a claim about noise), and
gives the verdict from the Bonferroni-adjusted interval over the chapter's assessed claims; a smoke run gets its
numbers and no word. Each word's p-value (:func:`dml_tutorial.evidence.word_p`) lets the verdict table adjust
every test the book made as one family too (Holm; :func:`book_family`).

    rows = claims.assess("ecaml", report.load_runs()["ecaml"])  # one row per claim, as a DataFrame
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
import pandas as pd

from . import evidence
from . import tables as declared
from .labels import label_tex
from .records import merge_seeds
from .tables import ECAML_AT_PAPER as AT_PAPER
from .tables import REFERENCES, STARTED, Table  # the reference rows every main table carries; a start's

#: Why 2 points of Recall@1 is the smallest effect of interest for a retrieval claim: one unseen-class query in
#: fifty finds a right neighbour it did not before, about the spread of a method's R@1 between seeds on our test
#: beds; a smaller gain would not change which loss a reader picks.
RETRIEVAL = (2.0, "2 points of R@1: one query in fifty; below it, no reader would change losses")
#: The same threshold on MAP@R, where R@1 sits at or near its ceiling (issue #86).
RANKED = (2.0, "2 points of MAP@R: the retrieval threshold, read on every same-class neighbour, not the first")


@dataclass(frozen=True)
class Claim:
    """``row`` beats ``base`` on ``column`` of ``table`` (a declared table, :mod:`dml_tutorial.tables`), by at least
    ``smallest_effect`` points to matter (``why``). With ``control``, the claim is about the change of the gain
    from ``control`` to ``column``, and the gate asks whether training helps without the cause (at ``control``):
    under heavy noise every trained row may fall below the raw input, which is the phenomenon, not a test bed where
    training fails. ``gated``: whether the gate applies at all (``False`` only for claims whose baseline is *meant*
    to lose structure the input has, with the reason in ``why``). ``paper_row``: the paper's row for ``row`` where
    the names differ (a variant of the method, e.g. EC as the released code computes it, has the paper's number).
    ``base_column``: the base's column where it differs from ``column`` (a weight sweep compares one row's weight
    0 with its weight lambda); ``gate``: ``(table, row, column)`` of the baseline the gate checks against that
    table's reference rows, where the claim's own table has none (a sweep's table carries no reference rows), or
    in another column of the claim's own table (a claim about what the baseline is meant to lose: the gate asks
    whether training works on the labels it had); ``paper_base``: the paper's row for ``base`` where the names
    differ (a baseline sampled as the paper states, named by how)."""

    text: str
    table: Table
    base: str
    row: str
    column: str
    smallest_effect: float
    why: str
    control: str | None = None
    gated: bool = True
    paper_row: str | None = None
    base_column: str | None = None
    gate: tuple[Table, str, str] | None = None
    paper_base: str | None = None


#: DCDL's weights chosen on held-out classes: the bench's search on the glyph validation characters (chapter 8's
#: "Triplet + L^W" and "Triplet + L^L" rows, DCDL's own triplet; ``tests/test_profiles.py`` reads them back). Test
#: bed II's claims keep these registered weights: its bench searches zero-shot from the pretrained start, not DCDL's
#: closed-set protocol from scratch, and ran after the claims were registered; the chapter prints its choice beside
#: them, and its weight table holds every weight it chose from.
DCDL_VALIDATED = {"W": "0.1", "L": "0.05"}


def _dcdl() -> list[Claim]:
    table = declared.DCDL_MAIN
    why = "1 point of linear-probe accuracy: one test image in a hundred changes class"
    clean = (table, "L_Trip", "clean")  # a claim under noise is gated on its clean control
    at_paper = [Claim(f"+ L^{term} beats L_Trip ({column})", table, "L_Trip", f"L_Trip + L^{term}", column, 1.0, why,
                      gate=None if column == "clean" else clean)
                for term in ("W", "L") for column in ("clean", "sym 0.3", "asym 0.2")]
    validated = [Claim(f"+ L^{term} at lambda = {lam} beats L_Trip (clean)", declared.DCDL_WEIGHT,
                       f"L_Trip + L^{term}", f"L_Trip + L^{term}", lam, 1.0, why, base_column="0.0",
                       gate=clean) for term, lam in DCDL_VALIDATED.items()]
    # L^W as GeomLoss's defaults compute it (annealed, not converged at epsilon): our reading of what the paper ran,
    # so the paper's L^W numbers are its; on the test beds that run it (the glyphs: clean and symmetric noise)
    geomloss = [Claim(f"+ L^W as GeomLoss computes it beats L_Trip ({column})", table, "L_Trip",
                      "L_Trip + L^W-GeomLoss", column, 1.0, why, paper_row="L_Trip + L^W",
                      gate=None if column == "clean" else clean)
                for column in ("clean", "sym 0.3")]
    # registered 2026-12-05 before test bed II's re-run (issue #86), controls that explain "+ L^W beats L_Trip
    # (sym 0.3)": does the term help a triplet whose miner does not memorise the noise (Le & Odobez's random
    # semi-hard negative)? and is the local loss needed at all under noise (supplement Table 2 trains the terms
    # alone: below Table 1's L_Trip + L^W, on CIFAR-10 at delta = 0.3)?
    rsh = "L_Trip (random semi-hard)"
    controls = [Claim(f"+ L^W improves {rsh} (sym 0.3)", table, rsh, f"{rsh} + L^W", "sym 0.3", 1.0, why,
                      gate=clean),
                Claim("L_Trip + L^W beats L^W alone (sym 0.3)", table, "L^W", "L_Trip + L^W", "sym 0.3", 1.0, why,
                      gate=clean)]
    return at_paper + validated + geomloss + controls


def _ecaml() -> list[Claim]:
    """EC as the paper describes it (ours), and as the released code computes it (rows ``<row>, released EC``,
    where a profile runs them), and EC at the paper's weight (rows ``<row> at the paper's lambda``, where the
    weight is searched): the paper's numbers come from the released code, so all compare with them. The released code also holds the fc rows at unit norm (a penalty of weight 0.5): the released-EC
    rows are compared with baselines that carry the same penalty (``<base>, fc unit norm``), so that the difference
    is EC's alone."""
    table = declared.ECAML_MAIN
    rows = (("Triplet", "ECAML(Tri)"), ("N-Pair", "ECAML(N-Pair)"), ("Binomial", "ECAML(Binomial)"))
    # registered 2026-12-05 before test bed II's re-run (issue #86): with each row's weight searched (0 a
    # candidate), "EC improves" asks whether EC helps at its best weight; these ask it at the paper's weight, at the
    # EC row's chosen rate and length (rows "<row> at the paper's lambda", ecaml.AT_PAPER)
    at_paper = [Claim(f"EC at the paper's lambda improves {base} (unseen R@1)", table, base, f"{row}{AT_PAPER}",
                      "R@1", *RETRIEVAL, paper_row=row) for base, row in rows]
    # registered 2026-12-05 before test bed II's re-run (issue #86): Fig. 2's mechanism, the seen-class curve of
    # EC ending lower than its baseline's ("stops rising at a relatively lower level (80% vs. 90%)"; the unseen
    # curve ending higher is "EC improves"), and Table 2's "the performances ... increase with embedding size" as
    # EC's gain growing with the size (an interaction, the smallest size as control); both gated on Tables 4/5
    # The seen half on MAP@R, not R@1 (changed the same day, before any run of it): the seen R@1 of every test bed II
    # curve ends at 100%, where no loss can be lower; MAP@R ranks all of a class's images, below its ceiling there
    seen = [Claim(f"EC lowers {base}'s seen-class MAP@R at the end of training (Fig. 2)", declared.ECAML_CURVES, row,
                  base, "seen MAP@R, last epoch", *RANKED, gate=(table, base, "R@1")) for base, row in rows]
    sizes = [Claim("EC's gain on Binomial grows from d = 16 to d = 128 (unseen R@1)", declared.ECAML_DIMS,
                   "Binomial R@1", "ECAML(Binomial) R@1", "d = 128", RETRIEVAL[0],
                   "2 points of R@1 more gain at the larger size: the retrieval threshold, on the part of the gain "
                   "that grows with the size", control="d = 16", gate=(table, "Binomial", "R@1"))]
    # the three claims "from a softmax-pretrained start" were retired on 2026-12-05 (data/retired.jsonl): test bed
    # II has no such row, every run there already starting from its own pretrained start
    return ([Claim(f"EC improves {base} (unseen R@1)", table, base, row, "R@1", *RETRIEVAL) for base, row in rows]
            + [Claim(f"EC as released improves {base} (unseen R@1)", table, f"{base}, fc unit norm",
                     f"{row}, released EC", "R@1", *RETRIEVAL, paper_row=row, paper_base=base)
               for base, row in rows]
            + at_paper + seen + sizes)


def _eps() -> list[Claim]:
    table = declared.EPS_MAIN
    even_odd = [Claim("EPS keeps the sub-classes of an even/odd class apart (train R@1)", declared.EPS_EVEN_ODD,
                      "Triplet", "EPS + Triplet", "train R@1", 5.0,
                      "5 points of R@1 by sub-class: less does not show as separate modes in the 2-D picture; "
                      "not gated, since the claim is that the baseline loses structure the input has",
                      gated=False)]
    bases = ("Trip. + SH", "Dist-Margin", "MS")
    regular = [Claim(f"EPS improves {base} (unseen R@1)", table, base, f"EPS + {base}", "R@1", *RETRIEVAL)
               for base in bases]
    # section 5.2.2: Table 2's semi-hard baselines sampled the positives "as suggest[ed] in the original papers",
    # every positive pair for FaceNet's triplets and for Wu et al.'s margin loss
    original = [Claim(f"EPS improves {base} sampled as the original papers, every positive pair (unseen R@1)", table,
                      f"{base}, all positives", f"EPS + {base}", "R@1", *RETRIEVAL, paper_base=base)
                for base in bases[:2]]
    # registered 2026-12-05 before test bed II's re-run (issue #86): there the baselines of Table 2 sit at 91-95%
    # unseen R@1, where one neighbour ranks little; MAP@R ranks every image of the class (Musgrave et al. 2020)
    ranked = [replace(c, text=c.text.replace("(unseen R@1)", "(unseen MAP@R)"), column="MAP@R", why=RANKED[1])
              for c in regular + original]
    letters = declared.EPS_LETTERS
    why = (f"{RETRIEVAL[1]}; gated on retrieving the superclasses it was trained on, since the claim is that "
           "the baseline loses the letters")
    superclasses = [Claim(f"EPS improves {base} on the letters of unseen superclasses (R@1)", letters, base,
                          f"EPS + {base}", "R@1", RETRIEVAL[0], why, gate=(letters, base, "R@1 (superclass)"))
                    for base in bases]
    # registered 2026-12-05 before test bed II's re-run (issue #86): Fig. 3b ("increasing the number of positive
    # samples enhances the model performance", Omniglot letters), on unseen characters at as many images a batch,
    # and whether that growth is EPS's own (the margin loss without EPS at each k: an interaction, 2 as control);
    # gated on Table 2's Dist-Margin, since Fig. 3b's table carries no reference rows
    positives, gate = declared.EPS_POSITIVES, (table, "Dist-Margin", "R@1")
    fig3b = [Claim("EPS + Dist-Margin with 16 positives per class beats 2 (unseen R@1)", positives,
                   "EPS + Dist-Margin", "EPS + Dist-Margin", "16 per class", *RETRIEVAL, base_column="2 per class",
                   gate=gate),
             Claim("EPS's gain on Dist-Margin grows from 2 to 16 positives per class (unseen R@1)", positives,
                   "Dist-Margin", "EPS + Dist-Margin", "16 per class", RETRIEVAL[0],
                   "2 points of R@1 more gain at 16 positives than at 2: the retrieval threshold, on the part of "
                   "the gain that grows with k", control="2 per class", gate=gate)]
    # registered 2026-12-05 before test bed II's re-run (issue #86): Fig. 3b's mechanism where the paper names it,
    # the letters (section 5.3: the number of positives "determines the probability that the set of positive
    # samples will include a sample from the same letter"): Dist-Margin with and without EPS on the superclasses
    # at 5 and 30 images a superclass in Table 3's 60 a batch (glyphs2: a same-letter positive in the batch for
    # 7% and 42% of the anchors), gated like Table 3's claims on the superclasses the baseline was trained on
    by_k, sup_gate = declared.EPS_LETTERS_POSITIVES, (letters, "Dist-Margin", "R@1 (superclass)")
    letters_k = [Claim("EPS + Dist-Margin reads more letters at 30 samples per superclass than at 5 (R@1)", by_k,
                       "EPS + Dist-Margin", "EPS + Dist-Margin", "30 per superclass", RETRIEVAL[0], why,
                       base_column="5 per superclass", gate=sup_gate),
                 Claim("EPS's gain on Dist-Margin's letters grows from 5 to 30 samples per superclass (R@1)", by_k,
                       "Dist-Margin", "EPS + Dist-Margin", "30 per superclass", RETRIEVAL[0],
                       "2 points of R@1 by letter more gain at 30 than at 5: the retrieval threshold, on the part "
                       "of the gain that grows with k", control="5 per superclass", gate=sup_gate)]
    return even_odd + regular + original + ranked + superclasses + fig3b + letters_k


def _noise() -> list[Claim]:
    table = declared.NOISE_MAIN
    return [Claim(f"random semi-hard's lead over fixed grows with noise (R@1, {column} vs p = 0)", table,
                  "triplet, fixed semi-hard", "triplet, random semi-hard", column, 2.0,
                  "2 points of R@1 more lead under noise than without: the retrieval threshold, on the "
                  "noise-specific part of the gap", control="p = 0")
            for column in ("p = 0.2", "p = 0.4", "p = 0.6")]


def _cbswr() -> list[Claim]:
    table = declared.CBSWR_ABLATION
    ablation = [Claim(f"CBSwR beats {base} (R@1)", table, base, "CBSwR", "R@1", *RETRIEVAL) for base in ("SME", "CBS")]
    # registered 2026-12-05 before test bed II's re-run (issue #86): the clustering's own claim (Table 1: CBS 47.3
    # against SME 46.2 on CUB), and Table 4's robustness to K (the paper: R@1 within 0.8 points from K = 16 to 64,
    # so "no effect detected" agrees with it), gated on the ablation's CBSwR, since Table 4 has no reference rows
    robust = (f"{RETRIEVAL[1]}; the paper reads Table 4 as flat in K, which is this claim's 'no effect detected'")
    return ablation + [
        Claim("CBS beats SME (R@1)", table, "SME", "CBS", "R@1", *RETRIEVAL),
        Claim("CBSwR with K = 64 clusters beats K = 16 (R@1)", declared.CBSWR_CLUSTERS, "K = 16", "K = 64", "R@1",
              RETRIEVAL[0], robust, gate=(table, "CBSwR", "R@1"))]


#: Each chapter's short name, for tables.
NAMES = {"dcdl": "Sinkhorn DCDL", "cbswr": "CBSwR", "eps": "EPS", "ecaml": "ECAML", "noise_guarantees": "Noise guarantees"}
#: What each paper claims, in one sentence (paraphrased; the papers' numbers are in the chapters, quoted).
CLAIMED = {
    "dcdl": "adding a class-wise discrepancy between embedding distributions (the MMD term $L^L$ or the Sinkhorn "
            "term $L^W$) to a local loss improves a linear probe on the embedding, with clean labels and more so "
            "under label noise.",
    "cbswr": "without labels, contrasting each image with the centroids of learnt clusters (CBS), with a "
             "regulariser that keeps the clusters balanced and confident (RIM), retrieves unseen classes better "
             "than contrasting images with each other (SME), and needs both terms.",
    "eps": "training on each anchor's easiest positive keeps a class made of several modes from collapsing to "
           "one point, and improves unseen-class retrieval of the triplet, margin and multi-similarity losses.",
    "ecaml": "an energy-confusion term, which makes the seen classes harder to tell apart, keeps the metric from "
             "over-fitting them and improves unseen-class retrieval of the triplet, N-pair and binomial losses.",
    "noise_guarantees": "under symmetric label noise, triplet training with a random semi-hard negative degrades "
                        "more gracefully than fixed semi-hard mining: its lead grows with the noise rate.",
}

#: The claims tested in each chapter (the chapters' own conclusions describe more comparisons, without verdicts).
CLAIMS = {"dcdl": _dcdl(), "cbswr": _cbswr(), "eps": _eps(), "ecaml": _ecaml(), "noise_guarantees": _noise()}
#: Claims registered before the runs that first record their rows (issue #86: register, then run): ``{(chapter,
#: claim text): the run that will}``. ``tests/test_claims.py`` checks every other claim's rows are recorded, and
#: fails once one of these is (its entry goes then).
AWAITING: dict[tuple[str, str], str] = {}  # none since EPS's letters at 5-30 a superclass landed (2026-12-06)


def paper_gain(paper: dict, claim: Claim) -> tuple[float | None, float | None]:
    """The paper's own gain of ``claim.row`` over ``claim.base`` from the quoted numbers (in %): as a fraction,
    and relative to the paper's baseline; ``(None, None)`` where the paper gives no number (or the claim is an
    interaction, which the papers show only as curves)."""
    if claim.control is not None:
        return None, None
    a = paper.get(claim.paper_base or claim.base, {}).get(claim.base_column or claim.column)
    b = paper.get(claim.paper_row or claim.row, {}).get(claim.column)
    if a is None or b is None:
        return None, None
    return (b - a) / 100, ((b - a) / a if a else None)


def _values(measured: dict, claim: Claim):
    """Per-seed ``(base, row)`` values the claim compares (differences to the control column for an interaction),
    or ``None`` when the table lacks them."""
    cols = [claim.column] + ([claim.control] if claim.control else [])
    base_column = claim.base_column or claim.column
    if not all(c in measured.get(claim.row, {}) for c in cols) or base_column not in measured.get(claim.base, {}):
        return None
    if claim.control and claim.control not in measured.get(claim.base, {}):
        return None
    base = np.asarray(measured[claim.base][base_column], dtype=float)
    row = np.asarray(measured[claim.row][claim.column], dtype=float)
    if claim.control:
        base = base - np.asarray(measured[claim.base][claim.control], dtype=float)
        row = row - np.asarray(measured[claim.row][claim.control], dtype=float)
    return base, row


#: How the gate's reasons name the pretrained start's row (:data:`~dml_tutorial.experiment.STARTED`).
STARTED_NAME = "pretrained start (not fine-tuned)"
#: The gate's reason where a table lacks a reference row.
NO_REFERENCES = "the table has no raw-input and untrained-network rows to gate on"


def gate_references(measured: dict, column: str) -> dict | None:
    """``{name: per-seed values}`` of the rows the gate asks a control to beat at ``column`` of a table
    ``{row: {column: values}}``: the raw input and the untrained network, and the pretrained start where the table
    has one (the fine-tuned control must beat it too), named as the gate's reason prints them; ``None`` when the
    table lacks the raw-input or the untrained-network row."""
    refs = {r: measured[r][column] for r in REFERENCES if column in measured.get(r, {})}
    if len(refs) < len(REFERENCES):
        return None
    if column in measured.get(STARTED, {}):
        refs[STARTED_NAME] = measured[STARTED][column]
    return refs


def _control(measured: dict, claim: Claim, tables: dict | None) -> tuple[dict, str, str]:
    """``(table, row, column)`` of the claim's control, the baseline the gate reads: the base row at the claim's
    column, or at its ``control`` column (an interaction), or the table, row and column its ``gate`` names
    (``tables``: :func:`~dml_tutorial.records.merge_seeds` of the run; an empty table where the run lacks it)."""
    if claim.gate is not None:  # the control as another table or column of the same run records it
        table, base, column = claim.gate
        return (tables or {}).get(table.id, ({},))[0], base, column
    return measured, claim.base, claim.control or claim.column


def data_varies(measured: dict, claim: Claim, tables: dict | None) -> bool | None:
    """Whether the seeds varied the claim's data, not only its training: the raw input's score at the control's
    table and column (:func:`_control`) differs between seeds, as it does when each seed draws its own split,
    characters or faces (issue #86). ``None`` where that table has no raw-input row, or one seed."""
    measured, _, column = _control(measured, claim, tables)
    raw = measured.get(REFERENCES[0], {}).get(column)
    return None if raw is None or len(raw) < 2 else len(set(raw)) > 1


def _gate(measured: dict, claim: Claim, tables: dict | None, confidence: float) -> tuple[bool, str]:
    """The one gate rule (:func:`dml_tutorial.evidence.gate`) for ``claim``, on its control: the base row at the
    claim's column, or at its ``control`` column (an interaction: does training help without the cause?), or the
    row and column its ``gate`` names; at the chapter's adjusted ``confidence``."""
    if not claim.gated:
        return True, "not gated: " + claim.why
    measured, base, column = _control(measured, claim, tables)
    if claim.gate is not None and column not in measured.get(base, {}):
        return False, f"the run has no {base} ({column}) in {claim.gate[0].title!r} to gate on"
    refs = gate_references(measured, column)
    if refs is None:
        return False, NO_REFERENCES
    passes, reason = evidence.gate(measured[base][column], refs, claim.smallest_effect / 100, confidence)
    # the control's column named as a column, not in parentheses: "(p = 0)" beside p-values read as one of them
    return passes, (f"{reason}, in the {column} column" if column != claim.column else reason)


def _below_raw(measured: dict, claim: Claim) -> bool:
    """Whether every row the claim compares lies below the raw input at the claim's column (mean over seeds): a
    cell to read with care, since neither arm learned more than the input holds."""
    raw = measured.get(REFERENCES[0], {}).get(claim.column)
    compared = [measured[r][c] for r, c in ((claim.base, claim.base_column or claim.column), (claim.row, claim.column))
                if c in measured.get(r, {})]
    return raw is not None and len(compared) == 2 and all(np.mean(v) < np.mean(raw) for v in compared)


COLUMNS = ["claim", "ours", "low", "high", "confidence", "p", "p (sign-flip)", "seeds", "mde", "smallest effect", "paper",
           "paper relative", "verdict", "reason", "gate", "below raw", "p (word)", "seeds for a word",
           "word with more seeds", "data varies"]


def _profile(runs: list[dict]) -> str | None:
    """The profile the runs were recorded under; a pipeline-check profile wins where runs mix them."""
    profiles = {r.get("profile") for r in runs}
    checks = profiles & set(evidence.PIPELINE_PROFILES)
    return next(iter(checks)) if checks else (profiles.pop() if len(profiles) == 1 else None)


def assess(chapter: str, runs: list[dict], profile: str | None = None) -> pd.DataFrame:
    """One row per claim of ``chapter`` that ``runs`` recorded: our gain (mean, interval at the family-adjusted
    confidence, the paired t-test's p and the exact sign-flip p, seeds, minimum detectable effect at that level, all
    in points), the claim's smallest effect of
    interest, the paper's gain (points, and relative to its baseline), the verdict and its reason, the gate's
    reason, whether every compared row lies below the raw input, the p-value of the word's decision
    (:func:`dml_tutorial.evidence.word_p`; ``nan`` where no test was made), and, for an *inconclusive* word, the
    seeds a decisive one would need if the mean and spread held, and that word
    (:func:`dml_tutorial.evidence.seeds_for_word`; ``None`` otherwise), and whether the seeds varied the data
    (:func:`data_varies`). The family is the claims assessed
    here (one chapter at one scale). ``profile``: the runs' profile where they do not carry it (a kernel's own
    run); a pipeline-check profile gets no words. Claims whose table or rows the runs lack are left out (an empty
    frame when none is)."""
    tables = merge_seeds(runs)
    profile = profile or _profile(runs)
    found = [(c, tables[c.table.id]) for c in CLAIMS.get(chapter, []) if c.table.id in tables]
    found = [(c, measured, paper, v) for c, (measured, paper) in found if (v := _values(measured, c)) is not None]
    confidence = evidence.adjusted_confidence(max(1, len(found)))
    rows = []
    for claim, measured, paper, (base, row) in found:
        diff = evidence.paired(base, row, confidence)
        gain, relative = paper_gain(paper, claim)
        testable = _gate(measured, claim, tables, confidence)
        base_mean = float(np.mean(measured[claim.base][claim.base_column or claim.column]))
        effect = claim.smallest_effect / 100
        word, reason = evidence.verdict(diff, effect, paper_relative=relative, base_mean=base_mean,
                                        testable=testable, decided=evidence.decides(profile, diff["n"]))
        rows.append({"claim": claim.text, "ours": 100 * diff["mean"], "low": 100 * diff["ci"][0],
                     "high": 100 * diff["ci"][1], "confidence": confidence, "p": diff["p"],
                     "p (sign-flip)": diff["p_sign_flip"], "seeds": diff["n"],
                     "mde": 100 * diff["mde"], "smallest effect": claim.smallest_effect,
                     "paper": None if gain is None else 100 * gain, "paper relative": relative, "verdict": word,
                     "reason": reason, "gate": testable[1], "below raw": _below_raw(measured, claim),
                     "p (word)": evidence.word_p(diff, word, effect),
                     **_projection(diff, word, effect), "data varies": data_varies(measured, claim, tables)})
    return pd.DataFrame(rows, columns=COLUMNS)


def _projection(diff: dict, word: str, effect: float) -> dict:
    """The seeds an *inconclusive* cell's word would need, and the word (:func:`evidence.seeds_for_word`)."""
    n, then = evidence.seeds_for_word(diff, effect) if word == "inconclusive" else (None, None)
    return {"seeds for a word": n, "word with more seeds": then}


#: The words that decide something.
DECISIVE = ("supported", "contradicted", "no effect detected")


def book_family(frames: dict, alpha: float = 0.05) -> dict:
    """Holm's correction over every test the verdict table made (``frames``: ``{(chapter, scale): assess
    frame}``): each cell whose word came from its interval (the first four words, so neither a smoke run nor a
    failed gate), a family fixed by what was tested, not by what came out. Returns ``{(chapter, scale, claim):
    survives}`` for the cells whose word is in :data:`DECISIVE`, where ``survives`` says whether the word's
    p-value (:func:`dml_tutorial.evidence.word_p`) stays at or below ``alpha`` after adjusting over the family."""
    cells = [((chapter, scale, r["claim"]), r["verdict"], r["p (word)"]) for (chapter, scale), f in frames.items()
             if f is not None for r in f.to_dict("records") if r["verdict"] in evidence.WORDS[:4]]
    adjusted = evidence.holm([p for *_, p in cells])
    return {key: bool(q <= alpha) for (key, word, _), q in zip(cells, adjusted) if word in DECISIVE}


def above_references(runs: list[dict], chapter: str) -> pd.DataFrame:
    """For each claim's table and column: the best of the rows the claims compare against the two reference rows
    (mean over seeds, in %), so a reader sees whether training learned anything the raw input does not already
    hold."""
    tables, out = merge_seeds(runs), []
    for table, column in dict.fromkeys((c.table, c.column) for c in CLAIMS.get(chapter, [])):
        if table.id not in tables:
            continue
        measured = tables[table.id][0]
        compared = {name for c in CLAIMS[chapter] if c.table == table for name in (c.base, c.row)}
        means = {row: 100 * float(np.mean(cols[column])) for row, cols in measured.items()
                 if column in cols and (row in compared or row in REFERENCES)}
        trained = {row: m for row, m in means.items() if row not in REFERENCES}
        if not trained or not all(r in means for r in REFERENCES):
            continue
        best = max(trained, key=trained.get)
        out.append({"table": table.title, "column": column, "best trained row": best, "best trained": trained[best],
                    **{r: means[r] for r in REFERENCES}})
    return pd.DataFrame(out, columns=["table", "column", "best trained row", "best trained", *REFERENCES])


#: What a cell adds where every compared row lies below the raw input.
BELOW_RAW = "; every compared row lies below the raw input"


def verdict_text(r: dict, marks: str = "") -> str:
    """``"supported, smaller than reported"`` or the bare word, for one row of :func:`assess`, then ``marks`` and
    its registration where it is post hoc (``", post hoc"``, :mod:`dml_tutorial.registry`)."""
    smaller = r["verdict"] == "supported" and str(r["reason"]).startswith(evidence.SMALLER)
    word = f"{r['verdict']}, {evidence.SMALLER}" if smaller else r["verdict"]
    return f"{word}{marks}{r.get('registration') or ''}"


def sentence(r: dict) -> str:
    """One claim's result at one scale, for the chapters' findings and the summary page: its word, our gain and
    its adjusted interval in points; for an inconclusive word, the gain these seeds detect four times in five at
    that level (its ``mde``: what more seeds would have to reach); where the gate withholds the word, the gate's
    reason; where a sweep has too few seeds for a word, its gain so far."""
    label = label_tex(r["claim"])
    if r["verdict"] == evidence.NO_VERDICT:
        return (f"{label}: no word yet, {r['ours']:+.1f} points so far ({r['seeds']} seeds; a word needs "
                f"{evidence.MIN_SEEDS})")
    said = (f"{label}: **{verdict_text(r)}**, {r['ours']:+.1f} points ({r['low']:+.1f} to {r['high']:+.1f}, "
            f"{r['seeds']} seeds)")
    if r["verdict"] == "inconclusive" and np.isfinite(r.get("mde", np.nan)):  # what more seeds would change
        return f"{said}, where these seeds detect about {r['mde']:.1f} points"
    return f"{said}: {r.get('gate') or r['reason']}" if r["verdict"] == "not testable here" else said


def markdown(frame: pd.DataFrame) -> str:
    """The verdict table as Markdown: claim, our gain with its adjusted interval and both p-values (the paired
    t-test's and the exact sign-flip test's, :func:`dml_tutorial.evidence.p_text`), the smallest effect of
    interest, the paper's gain, the verdict and the reason."""
    lines = ["| claim | ours (points, adjusted CI) | smallest effect | paper (points) | verdict | why |",
             "|---|---|---|---|---|---|"]
    for r in frame.to_dict("records"):
        paper = "direction only" if r["paper"] is None or pd.isna(r["paper"]) else f"{r['paper']:+.1f}"
        p = evidence.p_text({"p": r["p"], "p_sign_flip": r["p (sign-flip)"]})
        ours = (f"{r['ours']:+.1f} ({r['low']:+.1f} to {r['high']:+.1f}, {100 * r['confidence']:.1f}%, "
                f"{r['seeds']} seeds{'; ' + p if p else ''})")
        lines.append(f"| {label_tex(r['claim'])} | {ours} | {r['smallest effect']:g} | {paper} | "
                     f"**{verdict_text(r)}** | {r['reason']}{BELOW_RAW if r['below raw'] else ''} |")
    return "\n".join(lines)
