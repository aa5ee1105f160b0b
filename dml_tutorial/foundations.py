"""Chapter 1's words, written from its tables so that they agree with them on any machine: what training changed on
the digits it saw, and what it carries to digits it never saw.

    foundations.training_words(measured)  # "Training moves Recall@1 from ..."
"""

from __future__ import annotations

import numpy as np

#: The rows of the chapter's retrieval tables.
RAW, UNTRAINED, TRAINED, TRAINED_ON_SEEN = ("raw pixels", "untrained network", "after triplet training",
                                            "after triplet training on 0-5")


def means(table: dict) -> dict:
    """``{row: {measure: mean over seeds, in %}}`` of a retrieval table (:func:`dml_tutorial.metrics.retrieval_rows`)."""
    return {row: {k: 100 * np.mean(v) for k, v in cols.items()} for row, cols in table.items()}


def training_words(table: dict) -> str:
    """How training moved Recall@1 and NMI on the test split, beside the raw pixels (the table of the closed set)."""
    avg = means(table)
    after, before, raw = avg[TRAINED], avg[UNTRAINED], avg[RAW]
    return (f"Training moves Recall@1 from {before['R@1']:.1f} % (untrained) to {after['R@1']:.1f} % and NMI from "
            f"{before['NMI']:.1f} % to {after['NMI']:.1f} %; raw pixels reach {raw['R@1']:.1f} % and "
            f"{raw['NMI']:.1f} %.")


def zero_shot_words(table: dict) -> str:
    """What the embedding trained on digits 0-5 gives on the unseen digits against the untrained network and the
    raw pixels, and which of the two it beats on Recall@1 (the zero-shot table)."""
    avg = means(table)
    after, before, raw = avg[TRAINED_ON_SEEN], avg[UNTRAINED], avg[RAW]
    better = [name for name, ref in (("the untrained network", before), ("raw pixels", raw))
              if after["R@1"] > ref["R@1"]]
    verdict = f"better than {' and '.join(better)}" if better else "**not** better than either reference"
    return (f"on the unseen digits the trained embedding reaches Recall@1 {after['R@1']:.1f} % against "
            f"{before['R@1']:.1f} % for the untrained network and {raw['R@1']:.1f} % for raw pixels, and NMI "
            f"{after['NMI']:.1f} % against {before['NMI']:.1f} % and {raw['NMI']:.1f} %: it is {verdict}.")
