"""The sentence-pair inference world is labelled by its facts, and the trained classifiers keep what the chapter reads."""

from __future__ import annotations

import numpy as np
import pytest

from mlm_book.experiments import ch08_inference as ci
from mlm_book.finance.corpus import CorpusConfig, generate_corpus
from mlm_book.finance.world import ASPECTS, COMPANIES, DIRECTION_WORDS


@pytest.fixture(scope="module")
def facts():
    return ci.fact_sentences(ci.TEST_SEED)


def test_falls_rewrite_only_direction_words_and_about_half_of_them():
    corpus = generate_corpus(CorpusConfig(n_documents=200), np.random.default_rng(3))
    tokens, fallen = ci.with_falls(corpus, np.random.default_rng(4))
    direction = np.isin(corpus.tokens, DIRECTION_WORDS)
    assert np.array_equal(tokens[~fallen], corpus.tokens[~fallen])
    assert np.all(direction[fallen]) and np.isin(tokens[fallen], ci.FALLING_WORDS).all()
    assert 0.4 < fallen.sum() / direction.sum() < 0.6
    none, _ = ci.with_falls(corpus, np.random.default_rng(4), share=0.0)
    assert np.array_equal(none, corpus.tokens)


def test_fact_sentences_state_one_fact_that_their_words_carry(facts):
    """The facts read back from the words: the company alias, the aspect term and the direction word's sense."""
    for k in range(0, facts.count, 7):
        words = facts.words[k].split()
        assert COMPANIES[facts.company[k]].alias in words
        term = " ".join(ASPECTS[facts.aspect[k]].words)
        assert f" {term} " in f" {facts.words[k]} "
        falls = [w for w in words if w in ci.FALLING_WORDS]
        rises = [w for w in words if w in DIRECTION_WORDS]
        assert len(falls) + len(rises) == 1
        assert facts.direction[k] == (-1 if falls else 1)


def test_falling_words_are_unknown_to_the_encoder(facts):
    from mlm_book.experiments import ch06_finance
    vocabulary = ch06_finance.results().vocabulary
    unk = vocabulary.encode(["fell"])[0]
    assert all(vocabulary.encode([word])[0] == unk for word in ci.FALLING_WORDS)
    assert all(vocabulary.encode([word])[0] != unk for word in DIRECTION_WORDS)


def test_pairs_are_of_the_kind_they_are_labelled(facts):
    pairs_ = ci.fact_pairs(facts, 2000, np.random.default_rng(5))
    a, b = pairs_.a, pairs_.b
    company = facts.company[a] == facts.company[b]
    aspect = facts.aspect[a] == facts.aspect[b]
    direction = facts.direction[a] == facts.direction[b]
    expected = [company & aspect & direction & (a != b), company & aspect & ~direction, company & ~aspect,
                ~company & aspect]
    for kind, holds in enumerate(expected):
        assert holds[pairs_.kind == kind].all()
    shares = np.bincount(pairs_.label, minlength=3) / a.size
    assert np.allclose(shares, 1 / 3, atol=0.04)
    assert np.array_equal(pairs_.label, np.asarray(ci.RELATION_OF_KIND)[pairs_.kind])


def test_word_overlap_is_jaccard_of_token_sets(facts):
    pairs_ = ci.FactPairs([0, 1, 0], [0, 2, 1], [0, 0, 0], [0, 0, 0])
    overlap = ci.word_overlap(facts, pairs_)
    ids = [set(facts.text.ids[r, :facts.text.lengths[r]].tolist()) for r in facts.rows[:3]]
    assert overlap[0] == 1.0
    assert overlap[1] == pytest.approx(len(ids[1] & ids[2]) / len(ids[1] | ids[2]), abs=1e-15)
    assert overlap[2] == ci.word_overlap(facts, ci.FactPairs([1], [0], [0], [0]))[0]


def test_bad_input_is_named():
    with pytest.raises(ValueError, match="seed must be POOL_SEED"):
        ci.fact_sentences(1)
    with pytest.raises(ValueError, match="label must be RELATION_OF_KIND"):
        ci.FactPairs([0], [1], [2], [0])
    with pytest.raises(ValueError, match="kind must index KINDS"):
        ci.FactPairs([0], [1], [4], [2])
    with pytest.raises(ValueError, match="source must be one of"):
        ci._predictions("electra", "200 steps")
    with pytest.raises(TypeError, match="schedule must be a str"):
        ci._predictions("nsp", 200)
    with pytest.raises(ValueError, match="share must"):
        ci.with_falls(generate_corpus(CorpusConfig(n_documents=2), np.random.default_rng(0)),
                      np.random.default_rng(0), share=1.5)


@pytest.mark.book
def test_trained_classifiers_keep_their_relationships():
    """At every seed: the longer schedule from the pre-trained encoder beats chance by far and separates a
    restatement from a reversal almost perfectly (the fall is one [UNK] at the direction slot)."""
    for accuracy in ci.accuracies("nsp", "1000 steps"):
        assert accuracy > 0.5
    kind = ci.held_out_pairs().kind
    for predicted in ci._predictions("nsp", "1000 steps"):
        restates, reverses = predicted[kind == 0], predicted[kind == 1]
        assert np.mean(restates == 1) < 0.05 and np.mean(reverses == 0) < 0.05
