"""Span masking's optimum: one hidden position is the bidirectional reader, the whole sentence the marginal, and the
sampled expectations agree with enumeration."""

from __future__ import annotations

import numpy as np
import pytest

from mlm_book.experiments import ch10_span_masking as S
from mlm_book.hmm import default_hmm, sample, token_conditionals
from mlm_book.scoring import entropy


def test_a_span_of_one_is_the_bidirectional_reader_and_a_whole_span_the_marginal():
    hmm = default_hmm()
    r = S.span_masking(hmm, 10, [1, 10], 3000, np.random.default_rng(5))
    _, tokens = sample(hmm, 3000, 10, np.random.default_rng(5))          # the same sentences
    a = S.span_start(10, 1)
    assert r.per_position[0] == pytest.approx(float(entropy(token_conditionals(hmm, tokens)[:, a]).mean()), abs=1e-12)
    marginal = float(entropy(hmm.initial @ hmm.emission))
    assert r.per_position[1] == pytest.approx(marginal, abs=1e-12) and r.per_position_se[1] < 1e-12


def test_sampled_expectations_agree_with_enumeration():
    hmm = default_hmm()
    exact = S.enumerated_span_entropy(hmm, 4, S.span_start(4, 2), 2)
    r = S.span_masking(hmm, 4, [2], 40000, np.random.default_rng(6))
    assert abs(r.per_position[0] - exact.mean()) < 4 * r.per_position_se[0]
    assert abs(r.centre[0] - exact[1]) < 4 * r.centre_se[0]


@pytest.mark.slow  # the book's span-masking study, exactly: 6 s
def test_the_books_spans_grow_harder_and_stay_below_the_marginal():
    r = S.results()
    assert np.all(np.diff(r.per_position) > 0)
    assert r.per_position[-1] == pytest.approx(float(entropy(default_hmm().initial @ default_hmm().emission)),
                                               abs=1e-12)
    assert np.all(r.per_position_se < 0.01)


def test_bad_input_is_named():
    with pytest.raises(ValueError, match="span_lengths must hold at least one span length, each in"):
        S.span_masking(default_hmm(), 4, [5], 10, np.random.default_rng(0))
    with pytest.raises(ValueError, match="span_lengths must hold at least one"):
        S.span_masking(default_hmm(), 4, [], 10, np.random.default_rng(0))
    with pytest.raises(ValueError, match="sequences"):
        S.span_masking(default_hmm(), 4, [1], 1, np.random.default_rng(0))
    with pytest.raises(ValueError, match="start \\+ span must be at most length"):
        S.enumerated_span_entropy(default_hmm(), 4, 3, 2)
