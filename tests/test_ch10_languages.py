"""Chapter 10's language family and sampling: the shares are exact, and each language is the book's HMM relabelled."""

from __future__ import annotations

import numpy as np
import pytest

from mlm_book import hmm as hmm_module
from mlm_book.experiments import ch10_languages as L


def test_sampling_shares_are_the_formula():
    rng = np.random.default_rng(0)
    for _ in range(200):
        p = rng.dirichlet(np.full(rng.integers(1, 8), 0.7))
        p = np.maximum(p, 1e-12)
        p /= p.sum()
        alpha = float(rng.uniform(0, 2))
        direct = p ** alpha / np.sum(p ** alpha)
        assert np.allclose(L.sampling_shares(p, alpha), direct, rtol=1e-12, atol=1e-15)
    p = np.asarray(L.DATA_SHARES)
    assert np.allclose(L.sampling_shares(p, 1.0), p, atol=1e-15)
    assert np.allclose(L.sampling_shares(p, 0.0), 0.25, atol=1e-15)
    # lowering alpha moves share from the largest language to the smallest, monotonically
    q = np.array([L.sampling_shares(p, a) for a in np.linspace(0, 1, 21)])
    assert np.all(np.diff(q[:, 0]) > 0) and np.all(np.diff(q[:, -1]) < 0)


def test_passes_and_absences_are_exact():
    p = np.asarray(L.DATA_SHARES)
    for alpha in L.ALPHAS:
        n = L.passes(p, alpha, budget_passes=3.0)
        assert np.dot(p, n) == pytest.approx(3.0, abs=1e-12)          # the budget is read exactly once in all
        q = L.sampling_shares(p, alpha)
        assert np.allclose(L.absent_probability(p, alpha, 64), (1 - q) ** 64, rtol=1e-12, atol=0)
    # a batch's count of the smallest language is Binomial(64, q): its mean share matches by simulation
    rng = np.random.default_rng(1)
    q = L.sampling_shares(p, 0.3)
    draws = rng.choice(p.size, p=q, size=(20000, 64))
    assert np.mean(draws == 3) == pytest.approx(q[3], abs=0.002)


def test_each_language_is_the_books_hmm_relabelled():
    base = hmm_module.default_hmm()
    family = L.language_family()
    rng = np.random.default_rng(2)
    _, tokens = hmm_module.sample(base, 50, 12, rng)
    own = base.vocab_size - 1
    for k, language in enumerate(family.languages):
        relabelled = np.where(tokens == base.shared_token, family.vocab_size - 1, tokens + own * k)
        ours = hmm_module.token_conditionals(language, relabelled)
        theirs = hmm_module.token_conditionals(base, tokens)
        columns = np.r_[np.arange(own * k, own * (k + 1)), family.vocab_size - 1]
        assert np.allclose(ours[..., columns], theirs, atol=1e-12)
        assert np.all(np.delete(ours, columns, axis=-1) == 0)
    _, sampled = hmm_module.sample(family.languages[2], 20, 12, rng)
    owner = family.token_language()[sampled]
    assert set(np.unique(owner).tolist()) <= {-1, 2}


def test_bad_input_is_named():
    with pytest.raises(ValueError, match="alpha must be a finite number in"):
        L.sampling_shares(L.DATA_SHARES, -0.1)
    with pytest.raises(ValueError, match="shares must sum to 1"):
        L.sampling_shares([0.6, 0.3], 0.5)
    with pytest.raises(ValueError, match="positive finite share"):
        L.sampling_shares([1.2, -0.2], 0.5)
    with pytest.raises(ValueError, match="budget_passes must be a positive"):
        L.passes(L.DATA_SHARES, 0.3, budget_passes=0.0)
    base = hmm_module.default_hmm()
    tiny = hmm_module.HiddenMarkovLanguage(
        transition=np.array([[0.9, 0.1], [0.1, 0.9]]), emission=np.array([[0.5, 0.0, 0.5], [0.0, 0.5, 0.5]]),
        initial=np.array([0.5, 0.5]), regime=np.array([0, 1]), sense_states=(0, 1), shared_token=2,
        token_names=("x", "y", "w"))
    with pytest.raises(ValueError, match="languages must share their hidden states"):
        L.LanguageFamily((base, tiny), np.array([0.5, 0.5]))
    with pytest.raises(ValueError, match="one share per language"):
        L.LanguageFamily((base, base), np.array([1.0]))
    with pytest.raises(TypeError, match="languages must be a non-empty tuple"):
        L.LanguageFamily([base], np.array([1.0]))
