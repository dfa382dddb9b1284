"""Tests of mlm_book.channel: Definition 2's channel and Theorem 2's optimum."""

import math

import numpy as np
import pytest

from mlm_book.bruteforce import brute_force_posterior
from mlm_book.channel import (
    KEPT,
    MASKED,
    NOT_SELECTED,
    RANDOM,
    Channel,
    context_prediction,
    corrupt,
    display_matrix,
    evidence_factor,
    exact_posterior,
    half_mass_threshold,
    observation_matrix,
    optimum,
    selection_count,
    visible_mass,
    zipf_unigram,
)
from mlm_book.hmm import default_hmm, sample

HMM = default_hmm()
V = 25


def wilson_hilferty_p(statistic, dof):
    """Upper-tail p-value of a chi-square statistic (normal approximation of its cube root)."""
    z = ((statistic / dof) ** (1 / 3) - (1 - 2 / (9 * dof))) / math.sqrt(2 / (9 * dof))
    return 0.5 * math.erfc(z / math.sqrt(2))


def random_p(size, vocab=V, seed=0, alpha=0.5):
    return np.random.default_rng(seed).dirichlet(np.full(vocab, alpha), size=size)


# ------------------------------------------------------------------ the dataclass


def test_defaults_are_berts():
    c = Channel(V)
    assert (c.rho, c.mask, c.random, c.selection) == (0.15, 0.8, 0.1, "independent")
    assert abs(c.keep - 0.1) < 1e-15
    assert c.mask_id == V
    assert c.replacement is None
    np.testing.assert_allclose(c.unigram, 1 / V, rtol=0, atol=0)


@pytest.mark.parametrize("kwargs, name, error", [
    ({"rho": -0.1}, "rho", ValueError),
    ({"rho": float("nan")}, "rho", ValueError),
    ({"rho": 1.5}, "rho", ValueError),
    ({"mask": -0.01}, "mask", ValueError),
    ({"random": float("nan")}, "random", ValueError),
    ({"random": "0.1"}, "random", TypeError),
    ({"mask": 0.8, "random": 0.3}, "mask + random", ValueError),
    ({"selection": "poisson"}, "selection", ValueError),
    ({"replacement": np.full(V, 0.05)}, "replacement", ValueError),           # sums to 1.25
    ({"replacement": np.full(V - 1, 1 / (V - 1))}, "replacement", ValueError),  # wrong length
    ({"replacement": np.r_[-0.1, np.full(V - 1, 1.1 / (V - 1))]}, "replacement", ValueError),
    ({"replacement": np.full((V, 1), 1 / V)}, "replacement", ValueError),
])
def test_channel_rejects_bad_settings(kwargs, name, error):
    with pytest.raises(error, match=name.replace("+", r"\+")):
        Channel(V, **kwargs)


@pytest.mark.parametrize("vocab, error", [(0, ValueError), (2.5, TypeError), (True, TypeError)])
def test_channel_rejects_bad_vocab_size(vocab, error):
    with pytest.raises(error, match="vocab_size"):
        Channel(vocab)


def test_channel_is_immutable_hashable_and_compares_replacement():
    u = zipf_unigram(V)
    a, b = Channel(V, replacement=u), Channel(V, replacement=u.copy())
    assert a == b and hash(a) == hash(b) and len({a, b}) == 1
    assert a != Channel(V) and Channel(V) == Channel(V)
    with pytest.raises(Exception):
        a.rho = 0.5
    with pytest.raises(ValueError):
        a.replacement[0] = 1.0           # the stored unigram is read-only
    u[0] = 0.0                           # mutating the caller's array does not reach the channel
    assert a.replacement[0] > 0


def test_edge_rates_are_allowed():
    assert Channel(V, mask=1.0, random=0.0).keep == 0.0
    assert Channel(V, mask=0.0, random=0.0).keep == 1.0
    assert Channel(V, rho=0.0).rho == 0.0


# ------------------------------------------------------------------ matrices


@pytest.mark.parametrize("vocab", [2, 25, 879])
@pytest.mark.parametrize("unigram", [False, True])
def test_display_matrix_entries_and_column_sums(vocab, unigram):
    u = zipf_unigram(vocab) if unigram else None
    c = Channel(vocab, mask=0.7, random=0.2, replacement=u)
    S = display_matrix(c)
    uu = c.unigram
    assert S.shape == (vocab + 1, vocab)
    np.testing.assert_array_equal(S[vocab], 0.7)
    off = S[:vocab] - np.diag(np.diag(S[:vocab]))
    np.testing.assert_allclose(off, (0.2 * uu[:, None]) * (1 - np.eye(vocab)), rtol=0, atol=1e-17)
    np.testing.assert_allclose(np.diag(S[:vocab]), c.keep + 0.2 * uu, rtol=0, atol=1e-16)
    # exact summation: the entries themselves sum to one to rounding of each entry
    assert max(abs(math.fsum(S[:, y]) - 1) for y in range(vocab)) <= 1e-15


def test_observation_matrix_mixes_identity_and_display():
    c = Channel(V, rho=0.3)
    O = observation_matrix(c)
    expected = 0.3 * display_matrix(c)
    expected[:V] += 0.7 * np.eye(V)
    np.testing.assert_allclose(O, expected, rtol=0, atol=1e-16)
    np.testing.assert_allclose(O.sum(axis=0), 1.0, rtol=0, atol=1e-14)


def test_matrices_reject_non_channel():
    with pytest.raises(TypeError, match="channel"):
        display_matrix({"vocab_size": 3})
    with pytest.raises(TypeError, match="channel"):
        observation_matrix(None)


# ------------------------------------------------------------------ sampling the channel


def test_selection_count_follows_bert():
    assert [selection_count(n, 0.15) for n in (1, 3, 6, 7, 10, 24, 32, 128)] == [1, 1, 1, 1, 2, 4, 5, 19]
    assert selection_count(5, 0.0) == 1              # BERT predicts at least one position
    assert selection_count(10, 0.25) == 2            # round(2.5) = 2: Python 3 rounds halves to even
    assert selection_count(4, 1.0) == 4
    with pytest.raises(ValueError, match="length"):
        selection_count(0, 0.15)
    with pytest.raises(ValueError, match="rho"):
        selection_count(5, 1.2)


@pytest.mark.parametrize("length, rho", [(1, 0.15), (3, 0.15), (7, 0.15), (24, 0.15), (32, 0.15), (10, 0.25),
                                         (6, 0.0), (5, 1.0), (24, 0.4)])
def test_fixed_count_selects_exactly_k_per_row(length, rho):
    c = Channel(V, rho=rho, selection="fixed")
    out = corrupt(c, np.zeros((200, length), dtype=int), np.random.default_rng(length))
    assert np.all(out.selected.sum(axis=1) == max(1, round(rho * length)))


def test_fixed_count_positions_are_uniform():
    """Each position is selected with frequency k/n. Threshold: chi-square p-value > 1e-4 over
    the 24 positions (a correct sampler fails with probability 1e-4; a position bias of a
    few percent at these counts gives p-values far below it)."""
    c = Channel(V, selection="fixed")
    out = corrupt(c, np.zeros((20000, 24), dtype=int), np.random.default_rng(3))
    counts = out.selected.sum(axis=0)
    expected = counts.sum() / 24
    stat = float(((counts - expected) ** 2 / expected).sum())
    assert wilson_hilferty_p(stat, 23) > 1e-4


def test_corrupt_structure():
    rng = np.random.default_rng(1)
    _, tokens = sample(HMM, 300, 24, rng)
    out = corrupt(Channel(V, rho=0.4), tokens, rng)
    assert out.shown.dtype == np.int64 and out.selected.dtype == bool and out.kind.dtype == np.int8
    assert out.shown.shape == out.selected.shape == out.kind.shape == tokens.shape
    assert np.array_equal(out.kind != NOT_SELECTED, out.selected)
    np.testing.assert_array_equal(out.shown[~out.selected], tokens[~out.selected])
    np.testing.assert_array_equal(out.shown[out.kind == KEPT], tokens[out.kind == KEPT])
    assert np.all((out.shown == V) == (out.kind == MASKED))
    assert np.all(out.shown[out.kind == RANDOM] < V)          # [MASK] is never a replacement
    assert out.shown.min() >= 0 and out.shown.max() <= V


def test_corrupt_is_reproducible():
    tokens = np.arange(24).reshape(2, 12) % V
    a = corrupt(Channel(V), tokens, np.random.default_rng(9))
    b = corrupt(Channel(V), tokens, np.random.default_rng(9))
    assert np.array_equal(a.shown, b.shown) and np.array_equal(a.kind, b.kind)


@pytest.mark.parametrize("unigram", [False, True])
def test_corrupt_matches_display_matrix(unigram):
    """Counts of (shown, selected) given y against N_y * rho * S(s | y), and of unselected
    positions against N_y (1 - rho): Pearson chi-square, p-value > 1e-4 (a correct channel
    fails one in ten thousand runs; the seed is fixed). Every expected count is >= 5 here,
    so the chi-square approximation holds. Power, measured on these counts: moving 0.02 of
    probability between m and r gives p-values below 1e-9; a selection rate off by 0.01
    gives below 1e-3 (uniform) and 1e-7 (unigram)."""
    u = zipf_unigram(V, 0.5) if unigram else None
    c = Channel(V, rho=0.3, mask=0.6, random=0.25, replacement=u)
    rng = np.random.default_rng(11)
    tokens = rng.integers(0, V, size=(6000, 60))
    out = corrupt(c, tokens, rng)
    counts = np.zeros((V + 2, V))            # rows: shown if selected (V + 1), and "unselected"
    np.add.at(counts, (out.shown[out.selected], tokens[out.selected]), 1.0)
    np.add.at(counts[V + 1], tokens[~out.selected], 1.0)
    probabilities = np.vstack([c.rho * display_matrix(c), np.full((1, V), 1 - c.rho)])
    expected = probabilities * counts.sum(axis=0, keepdims=True)
    assert expected.min() >= 5
    stat = float(((counts - expected) ** 2 / expected).sum())
    dof = V * (V + 1)
    assert wilson_hilferty_p(stat, dof) > 1e-4, stat
    # and the per-position display law is observation_matrix, whether selected or not
    shown_given_y = np.zeros((V + 1, V))
    np.add.at(shown_given_y, (out.shown.ravel(), tokens.ravel()), 1.0)
    freq = shown_given_y / shown_given_y.sum(axis=0, keepdims=True)
    # binomial standard error of a frequency is at most 0.5 / sqrt(N_y) ~ 0.0013; allow 6 SE
    assert np.abs(freq - observation_matrix(c)).max() < 6 * 0.5 / math.sqrt(shown_given_y.sum(axis=0).min())


@pytest.mark.parametrize("tokens, error, name", [
    (np.array([[0, 25]]), ValueError, "tokens"),
    (np.array([[-1, 2]]), ValueError, "tokens"),
    (np.zeros((2, 0), dtype=int), ValueError, "tokens"),
    (np.zeros((0, 5), dtype=int), ValueError, "tokens"),
    (np.array([0, 1, 2]), ValueError, "tokens"),
    (np.zeros((1, 2, 3), dtype=int), ValueError, "tokens"),
    (np.array([[0.0, 1.0]]), TypeError, "tokens"),
])
def test_corrupt_rejects_bad_tokens(tokens, error, name):
    with pytest.raises(error, match=name):
        corrupt(Channel(V), tokens, np.random.default_rng(0))


@pytest.mark.parametrize("rng", [0, None, np.random.RandomState(0)])
def test_corrupt_rejects_non_generator(rng):
    with pytest.raises(TypeError, match="rng"):
        corrupt(Channel(V), np.zeros((1, 3), dtype=int), rng)


def test_corrupt_rejects_non_channel():
    with pytest.raises(TypeError, match="channel"):
        corrupt(0.15, np.zeros((1, 3), dtype=int), np.random.default_rng(0))


# ------------------------------------------------------------------ Theorem 2


def test_optimum_at_mask_is_p():
    p = random_p(300)
    q = optimum(p, np.full(300, V), Channel(V))
    assert np.abs(q - p).max() <= 1e-15


@pytest.mark.parametrize("unigram", [False, True])
def test_optimum_at_visible_token_matches_formula(unigram):
    u = zipf_unigram(V) if unigram else None
    c = Channel(V, replacement=u)
    p = random_p(50, seed=1)
    y = np.arange(V)
    for v in range(V):
        q = optimum(p, np.full(50, v), c)
        ru = c.random * c.unigram[v]
        formula = p * (c.keep * (y == v) + ru) / (c.keep * p[:, [v]] + ru)
        assert np.abs(q - formula).max() <= 1e-15
        assert np.abs(q[:, v] - visible_mass(p[:, v], c, v)).max() <= 1e-15


def test_optimum_shrinkage_is_rho_free_but_context_is_not():
    p = random_p(100, seed=2)
    shown = np.random.default_rng(2).integers(0, V + 1, size=100)
    a = optimum(p, shown, Channel(V, rho=0.15))
    b = optimum(p, shown, Channel(V, rho=0.4))
    assert np.array_equal(a, b)
    rng = np.random.default_rng(3)
    _, tokens = sample(HMM, 20, 8, rng)
    displays = corrupt(Channel(V, rho=0.4), tokens, rng).shown
    moved = np.abs(context_prediction(HMM, Channel(V, rho=0.15), displays)
                   - context_prediction(HMM, Channel(V, rho=0.4), displays)).max()
    assert moved > 1e-3       # the trap of (iii): p itself depends on rho


def test_optimum_limits():
    p = random_p(100, seed=4)
    visible = np.argmax(p, axis=1)
    copy = optimum(p, visible, Channel(V, mask=0.8, random=0.0))
    assert np.abs(copy[np.arange(100), visible] - 1).max() <= 1e-12
    ignore = optimum(p, visible, Channel(V, mask=0.8, random=0.2))
    assert np.abs(ignore - p).max() <= 1e-12
    assert visible_mass(0.3, Channel(V, mask=0.8, random=0.0)) == 1.0


def test_optimum_bad_input():
    c = Channel(3)
    with pytest.raises(ValueError, match="p must sum"):
        optimum([0.5, 0.6, 0.0], 0, c)
    with pytest.raises(ValueError, match="p must be non-negative"):
        optimum([1.2, -0.2, 0.0], 0, c)
    with pytest.raises(ValueError, match="p must be finite"):
        optimum([np.nan, 0.5, 0.5], 0, c)
    with pytest.raises(ValueError, match="last axis"):
        optimum([0.5, 0.5], 0, c)
    with pytest.raises(ValueError, match="shown must have shape"):
        optimum([[0.5, 0.5, 0.0]], [0, 1], c)
    with pytest.raises(ValueError, match="shown must be ids"):
        optimum([0.5, 0.5, 0.0], 4, c)
    with pytest.raises(TypeError, match="shown"):
        optimum([0.5, 0.5, 0.0], 1.0, c)
    # a visible token the context rules out, with no replacements: Bayes' rule is undefined
    with pytest.raises(ValueError, match="probability zero"):
        optimum([0.5, 0.5, 0.0], 2, Channel(3, random=0.0))


# ------------------------------------------------------------------ on the HMM


@pytest.mark.parametrize("rho", [0.15, 0.4])
def test_exact_posterior_matches_brute_force(rho):
    c = Channel(V, rho=rho)
    rng = np.random.default_rng(5)
    _, tokens = sample(HMM, 3, 3, rng)
    shown = corrupt(c, tokens, rng).shown
    for i in range(3):
        for display in (V, tokens[0, i], (tokens[0, i] + 3) % V):     # [MASK], kept, random
            row = shown[0].copy()
            row[i] = display
            q = exact_posterior(HMM, c, row[None])[0, i]
            assert np.abs(q - brute_force_posterior(HMM, c, row, i)).max() <= 1e-12


def test_context_prediction_all_masks_is_the_marginal():
    p = context_prediction(HMM, Channel(V), np.full((2, 4), V))
    marginal = HMM.initial @ HMM.emission         # stationary chain: same at every position
    assert np.abs(p - marginal).max() <= 1e-13


def test_exact_posterior_at_rate_zero_is_clean_conditional():
    """rho = 0: the others are clean, so p is the HMM's exact token conditional."""
    from mlm_book.hmm import token_conditionals
    rng = np.random.default_rng(6)
    _, tokens = sample(HMM, 5, 6, rng)
    p = context_prediction(HMM, Channel(V, rho=0.0), tokens)
    assert np.abs(p - token_conditionals(HMM, tokens)).max() <= 1e-12


def test_exact_posterior_bad_input():
    with pytest.raises(ValueError, match="vocab_size"):
        exact_posterior(HMM, Channel(24), np.zeros((1, 3), dtype=int))
    with pytest.raises(ValueError, match="shown"):
        exact_posterior(HMM, Channel(V), np.array([[0, 26, 1]]))
    with pytest.raises(ValueError, match="shown"):
        exact_posterior(HMM, Channel(V), np.array([0, 1, 2]))
    with pytest.raises(ValueError, match="shown"):
        exact_posterior(HMM, Channel(V), np.zeros((1, 0), dtype=int))
    with pytest.raises(TypeError, match="hmm"):
        exact_posterior("hmm", Channel(V), np.zeros((1, 3), dtype=int))
    with pytest.raises(ValueError, match="cannot produce"):
        context_prediction(HMM, Channel(V, rho=0.0), np.array([[0, V, 1]]))


# ------------------------------------------------------------------ evidence and shrinkage


def test_evidence_factor_and_threshold():
    for vocab in (25, 879):
        c = Channel(vocab)
        assert evidence_factor(c) == pytest.approx(1 + c.keep * vocab / c.random, rel=1e-15)
        t = half_mass_threshold(c)
        assert abs(visible_mass(t, c) - 0.5) <= 1e-12
        assert visible_mass(t * 1.01, c) > 0.5 > visible_mass(t * 0.99, c)
    assert round(half_mass_threshold(Channel(879)), 6) == 0.001135
    assert round(half_mass_threshold(Channel(25)), 3) == 0.037
    u = zipf_unigram(V)
    c = Channel(V, replacement=u)
    for v in (0, V - 1):
        assert evidence_factor(c, v) == pytest.approx(1 + c.keep / (c.random * u[v]), rel=1e-15)
        S = display_matrix(c)
        assert evidence_factor(c, v) == pytest.approx(S[v, v] / S[v, (v + 1) % V], rel=1e-14)
    # frequent words are weaker hints than under uniform replacement, rare ones stronger
    assert evidence_factor(c, 0) < evidence_factor(Channel(V)) < evidence_factor(c, V - 1)


def test_evidence_bad_input():
    with pytest.raises(ValueError, match="random"):
        evidence_factor(Channel(V, random=0.0))
    with pytest.raises(ValueError, match="keep"):
        half_mass_threshold(Channel(V, mask=0.9, random=0.1))
    with pytest.raises(ValueError, match="token"):
        evidence_factor(Channel(V, replacement=zipf_unigram(V)))
    with pytest.raises(ValueError, match="token"):
        evidence_factor(Channel(V, replacement=zipf_unigram(V)), V)
    with pytest.raises(ValueError, match="p_visible"):
        visible_mass(1.5, Channel(V))
    with pytest.raises(ValueError, match="p_visible"):
        visible_mass(float("nan"), Channel(V))


def test_zipf_unigram():
    u = zipf_unigram(879, 1.0)
    assert abs(u.sum() - 1) < 1e-15 and np.all(np.diff(u) < 0)
    np.testing.assert_allclose(zipf_unigram(5, 0.0), 0.2, rtol=0, atol=1e-16)
    with pytest.raises(ValueError, match="exponent"):
        zipf_unigram(5, -1.0)
    with pytest.raises(ValueError, match="vocab_size"):
        zipf_unigram(0)
