"""Chapter 1's words (dml_tutorial.foundations) read its tables: the means they quote and the comparison they make,
and its retrieval table (dml_tutorial.metrics.retrieval_rows) is metrics.evaluate of each embedding."""

import numpy as np
import pytest
import torch

from dml_tutorial import foundations, metrics


def test_the_retrieval_table_holds_each_embeddings_evaluation_in_order():
    g = torch.Generator().manual_seed(0)
    labels = np.arange(30) % 3
    a, b = torch.randn(30, 4, generator=g), torch.randn(30, 4, generator=g)
    table = metrics.retrieval_rows({"raw": [a], "two seeds": [a, b]}, labels, ks=(1, 2), seed=1)
    assert list(table["raw"]) == ["R@1", "R@2", "NMI"]
    assert table["two seeds"]["R@1"] == [metrics.evaluate(z, labels, ks=(1, 2), seed=1)["R@1"] for z in (a, b)]


def test_the_chapters_sentences_quote_the_means_and_name_the_references_beaten():
    table = {foundations.RAW: {"R@1": [0.5], "NMI": [0.4]},
             foundations.UNTRAINED: {"R@1": [0.2, 0.4], "NMI": [0.1, 0.3]},
             foundations.TRAINED: {"R@1": [0.8, 0.9], "NMI": [0.6, 0.7]}}
    assert foundations.training_words(table) == ("Training moves Recall@1 from 30.0 % (untrained) to 85.0 % and NMI "
                                                 "from 20.0 % to 65.0 %; raw pixels reach 50.0 % and 40.0 %.")
    zero = {**table, foundations.TRAINED_ON_SEEN: {"R@1": [0.35], "NMI": [0.2]}}
    words = foundations.zero_shot_words(zero)
    assert words.endswith("it is better than the untrained network.") and "Recall@1 35.0 %" in words
    zero[foundations.TRAINED_ON_SEEN]["R@1"] = [0.1]
    assert foundations.zero_shot_words(zero).endswith("**not** better than either reference.")
    assert foundations.means(table)[foundations.TRAINED]["R@1"] == pytest.approx(85.0)
