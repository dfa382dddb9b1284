"""Bad input to mlm_book.finance (issue 10): clear ValueError/TypeError naming the argument.

Everything here is cheap: small generated corpora, no trained encoder or skip-gram.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest

from mlm_book.finance.caps import majority_cap
from mlm_book.finance.corpus import CorpusConfig, corpus_fingerprint, generate_corpus, render_document
from mlm_book.finance.orientation import semantic_orientation
from mlm_book.finance.skipgram import MAX_PAIRS, SkipGramConfig, cosine_neighbours, skipgram_pairs, train_skipgram
from mlm_book.finance.vocab import build_vocabulary
from mlm_book.finance.voting import lexicon_vote
from mlm_book.finance.windows import centred_windows, fixed_windows, gather_windows, nearest_centre
from mlm_book.finance.world import ASPECTS, COMPANIES, Aspect, Company


@pytest.fixture(scope="module")
def corpus():
    return generate_corpus(CorpusConfig(n_documents=4), np.random.default_rng(0))


# ----------------------------------------------------------------------------- Corpus


def test_generated_corpus_passes_its_own_checks_unchanged(corpus):
    again = dataclasses.replace(corpus)
    assert corpus_fingerprint(again) == corpus_fingerprint(corpus)
    assert again.tokens is corpus.tokens and again.document is corpus.document


def _poke(array, index, value):
    array = array.copy()
    array[index] = value
    return array


@pytest.mark.parametrize("field, value, error", [
    ("tokens", None, TypeError),
    ("tokens", np.arange(3), TypeError),
    ("tokens", np.array([["a"]]), ValueError),
    ("config", None, TypeError),
    ("document", math.nan, TypeError),
    ("document", "doc", TypeError),
    ("sentence", [[1, 2], [3]], TypeError),
    ("position", np.zeros(3, dtype=np.int64), ValueError),
    ("tone", np.zeros(0, dtype=np.int64), ValueError),
    ("filer", np.full(4, 1.5), TypeError),
])
def test_corpus_refuses_wrong_kinds_and_shapes(corpus, field, value, error):
    with pytest.raises(error, match=field):
        dataclasses.replace(corpus, **{field: value})


@pytest.mark.parametrize("field, index, value", [
    ("document", 0, -1), ("document", -1, 10**6), ("sentence", 0, -1), ("sentence", 0, 10**6),
    ("position", 0, 10**6), ("entity", 0, 3), ("alias", 0, len(COMPANIES)), ("aspect", 0, -2),
    ("news", 0, 2), ("head", 0, 10**9), ("lexicon", 0, -5), ("tone", 0, 0), ("filer", 0, -1),
])
def test_corpus_refuses_out_of_range_annotations(corpus, field, index, value):
    with pytest.raises(ValueError, match=field):
        dataclasses.replace(corpus, **{field: _poke(getattr(corpus, field), index, value)})


def test_corpus_relations_name_both_arrays(corpus):
    short_tone = corpus.tone[:1]
    with pytest.raises(ValueError, match="tone"):
        dataclasses.replace(corpus, tone=short_tone)
    with pytest.raises(ValueError, match="tokens"):
        dataclasses.replace(corpus, entity=corpus.entity[:-1])


@pytest.mark.parametrize("function", [corpus_fingerprint, lambda corpus: render_document(corpus, 0)])
def test_corpus_functions_refuse_a_non_corpus(function):
    with pytest.raises(TypeError, match="corpus"):
        function(None)


# ----------------------------------------------------------------------------- records


def test_majority_cap_record_checks_its_fields():
    cap = majority_cap([1, 2, 2], groups=[5, 5, 5])
    assert dataclasses.replace(cap).accuracy == cap.accuracy
    for field, value, error in [("accuracy", math.nan, ValueError), ("accuracy", 0.5, ValueError),
                                ("correct", 3, ValueError), ("correct", 2.5, TypeError), ("n", 0, ValueError),
                                ("groups", (5, 6), ValueError), ("groups", [[1, 2], [3]], TypeError),
                                ("counts", np.array([[1.0, 2.0]]), TypeError),
                                ("counts", np.array([[-1, 4]]), ValueError), ("labels", (2, 1), ValueError)]:
        with pytest.raises(error, match=field):
            dataclasses.replace(cap, **{field: value})


def test_vote_record_checks_its_fields(corpus):
    vote = lexicon_vote(generate_corpus(CorpusConfig(n_documents=30), np.random.default_rng(0)), 8)
    assert dataclasses.replace(vote, window=None).window is None
    for field, value, error in [("window", 0, ValueError), ("window", math.nan, TypeError),
                                ("accuracy", math.inf, ValueError), ("accuracy_decided", -0.1, ValueError),
                                ("n", -1, ValueError), ("n_ties", vote.n, ValueError), ("n_ties", None, TypeError)]:
        with pytest.raises(error, match=field):
            dataclasses.replace(vote, **{field: value})


def test_orientation_record_checks_its_fields():
    corpus = generate_corpus(CorpusConfig(n_documents=40), np.random.default_rng(0))
    result = semantic_orientation(corpus)
    assert np.array_equal(dataclasses.replace(result).score, result.score)
    poisoned = result.score.copy()
    poisoned[0] = np.nan
    for field, value, error in [("words", "strong", TypeError), ("words", (), ValueError),
                                ("score", poisoned, ValueError), ("score", result.score[:3], ValueError),
                                ("truth", np.zeros(len(result.words), dtype=int), ValueError),
                                ("accuracy", 1.5, ValueError), ("positive_seeds", None, TypeError)]:
        with pytest.raises(error, match=field):
            dataclasses.replace(result, **{field: value})


def test_skipgram_model_record_checks_its_fields():
    model = train_skipgram([2, 3] * 50, [0] * 100, 4, SkipGramConfig(dim=2, epochs=1), np.random.default_rng(0))
    bad_loss = np.array([np.inf])
    for field, value, error in [("input_vectors", np.zeros((4, 3)), ValueError),
                                ("output_vectors", np.full((4, 2), np.nan), ValueError),
                                ("epoch_loss", bad_loss, ValueError), ("epoch_loss", np.array([-1.0]), ValueError),
                                ("epoch_loss", np.ones(2), ValueError), ("config", None, TypeError)]:
        with pytest.raises(error, match=field):
            dataclasses.replace(model, **{field: value})


def test_world_records_check_their_fields():
    assert Company("kestrel", "turbine", "turbines", "services") == COMPANIES[0]
    assert Aspect(["revenue"], 1) == ASPECTS[0]
    with pytest.raises(TypeError, match="alias"):
        Company(None, "turbine", "turbines", "services")
    with pytest.raises(ValueError, match="suffix"):
        Company("kestrel", "turbine", "turbines", "two words")
    with pytest.raises(ValueError, match="polarity"):
        Aspect(("revenue",), 0)
    with pytest.raises(TypeError, match="polarity"):
        Aspect(("revenue",), math.nan)
    with pytest.raises(TypeError, match="words"):
        Aspect((1,), 1)


# ----------------------------------------------------------------------------- functions


def test_skipgram_pairs_treats_a_window_wider_than_the_stream_as_the_stream():
    ids, document = [5, 6, 1, 7, 8], [0, 0, 0, 0, 1]
    wide = skipgram_pairs(ids, document, window=10**12)
    exact = skipgram_pairs(ids, document, window=4)
    assert all(np.array_equal(a, b) for a, b in zip(wide, exact))
    with pytest.raises(ValueError, match="window"):
        skipgram_pairs(np.zeros(10**5, dtype=int), np.zeros(10**5, dtype=int), window=MAX_PAIRS)


def test_skipgram_refuses_a_bad_drop_and_huge_vocabulary():
    with pytest.raises(TypeError, match="drop"):
        skipgram_pairs([5, 6], [0, 0], drop=[[1, 2], [3]])
    config = SkipGramConfig(dim=2, epochs=1)
    with pytest.raises(TypeError, match="drop"):
        train_skipgram([2, 3] * 5, [0] * 10, 4, config, np.random.default_rng(0), drop=1.5)
    with pytest.raises(ValueError, match="vocab_size"):
        train_skipgram([2, 3] * 5, [0] * 10, 10**12, config, np.random.default_rng(0))


def test_cosine_neighbours_refuses_empty_vectors():
    with pytest.raises(ValueError, match="vectors"):
        cosine_neighbours(np.zeros((0, 2)), 0)


def test_build_vocabulary_refuses_ragged_tokens():
    with pytest.raises(TypeError, match="tokens"):
        build_vocabulary([[1, 2], [3]])


def test_window_functions_name_the_arguments():
    with pytest.raises(ValueError, match="length"):
        centred_windows(np.arange(5), np.zeros(5, int), length=10**12, pad_id=9)
    with pytest.raises(ValueError, match="document"):
        fixed_windows([0], length=32)
    with pytest.raises(ValueError, match="ids"):
        gather_windows(np.zeros(0, int), [0], length=3)
    starts = fixed_windows(np.zeros(7, int), length=4, stride=2)
    with pytest.raises(ValueError, match="document"):
        nearest_centre([0], starts, length=4)
    with pytest.raises(ValueError, match="length"):
        nearest_centre(np.zeros(7, int), starts, length=10**12)
    with pytest.raises(ValueError, match="document"):
        nearest_centre([0, 0, 0, 1, 1, 1, 1], starts, length=4)
