"""Tests of mlm_book.scoring: entropy, cross-entropy, KL, Theorem 1, the masked-LM loss."""

import warnings

import numpy as np
import pytest

from mlm_book.scoring import (
    cross_entropy,
    entropy,
    kl_divergence,
    log_softmax,
    masked_lm_loss_and_grad,
    risk_decomposition,
)

RNG = np.random.default_rng(0)


def dirichlet(size, vocab=25, alpha=0.5, seed=0):
    return np.random.default_rng(seed).dirichlet(np.full(vocab, alpha), size=size)


# ------------------------------------------------------------------ the three quantities


def test_known_values():
    assert float(entropy(np.full(25, 1 / 25))) == pytest.approx(np.log(25), abs=1e-15)
    assert float(entropy([1.0, 0.0, 0.0])) == 0.0
    assert float(entropy([0.5, 0.5, 0.0])) == pytest.approx(np.log(2), abs=1e-16)
    assert float(cross_entropy([0.5, 0.5], [0.25, 0.75])) == pytest.approx(-0.5 * np.log(0.25) - 0.5 * np.log(0.75),
                                                                           abs=1e-15)
    assert float(kl_divergence([0.5, 0.5], [0.25, 0.75])) == pytest.approx(
        0.5 * np.log(2) + 0.5 * np.log(0.5 / 0.75), abs=1e-15)


def test_zero_conventions_without_warnings_or_nan():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        # 0 log 0 = 0: a zero of p contributes nothing even where q is zero too
        assert float(cross_entropy([1.0, 0.0], [1.0, 0.0])) == 0.0
        assert float(kl_divergence([1.0, 0.0], [1.0, 0.0])) == 0.0
        assert float(kl_divergence([0.0, 1.0], [0.3, 0.7])) == pytest.approx(-np.log(0.7), abs=1e-15)
        # q misses mass of p: infinite, never NaN
        assert float(cross_entropy([0.5, 0.5], [1.0, 0.0])) == np.inf
        assert float(kl_divergence([0.5, 0.5], [1.0, 0.0])) == np.inf
        batch = kl_divergence([[0.5, 0.5], [1.0, 0.0]], [[1.0, 0.0], [1.0, 0.0]])
        assert batch.tolist() == [np.inf, 0.0]


def test_vectorised_over_leading_axes_and_broadcasting():
    p = dirichlet(24).reshape(2, 3, 4, 25)
    q = dirichlet(24, seed=1).reshape(2, 3, 4, 25)
    assert entropy(p).shape == cross_entropy(p, q).shape == kl_divergence(p, q).shape == (2, 3, 4)
    for index in np.ndindex(2, 3, 4):
        assert float(kl_divergence(p[index], q[index])) == pytest.approx(float(kl_divergence(p, q)[index]), abs=0)
    # one predictor against many distributions
    assert kl_divergence(p, q[0, 0, 0]).shape == (2, 3, 4)


def test_kl_nonnegative_zero_at_equality_and_accurate_when_tiny():
    p, q = dirichlet(1000), dirichlet(1000, seed=1)
    assert np.all(kl_divergence(p, q) > 0)
    assert np.all(kl_divergence(p, p) == 0.0)
    # second-order accuracy: KL(p || p + eps d) ~ eps^2/2 * sum d^2/p for a zero-sum d
    base = np.full(4, 0.25)
    direction = np.array([1.0, -1.0, 0.5, -0.5])
    eps = 1e-7
    expected = 0.5 * eps**2 * np.sum(direction**2 / base)
    assert float(kl_divergence(base, base + eps * direction)) == pytest.approx(expected, rel=1e-3)


def test_identity_cross_entropy_is_entropy_plus_kl():
    p, q = dirichlet(500, alpha=0.1), dirichlet(500, seed=1, alpha=0.1)
    gap = cross_entropy(p, q) - entropy(p) - kl_divergence(p, q)
    assert np.abs(gap).max() <= 1e-12


@pytest.mark.parametrize("function", [cross_entropy, kl_divergence])
@pytest.mark.parametrize("p, q, name", [
    ([0.5, 0.6], [0.5, 0.5], "p must sum"),
    ([0.5, 0.5], [0.5, 0.6], "q must sum"),
    ([1.5, -0.5], [0.5, 0.5], "p must be non-negative"),
    ([np.nan, 1.0], [0.5, 0.5], "p must be finite"),
    ([0.5, 0.5], [[0.2, 0.3, 0.5]], "p and q"),
    ([[0.5, 0.5]] * 3, [[0.5, 0.5]] * 2, "p and q"),
    ("abc", [0.5, 0.5], "p"),
])
def test_pair_bad_input(function, p, q, name):
    with pytest.raises((ValueError, TypeError), match=name):
        function(p, q)


def test_entropy_bad_input():
    with pytest.raises(ValueError, match="p must sum"):
        entropy([0.2, 0.2])
    with pytest.raises(ValueError, match="p must hold"):
        entropy(np.zeros((3, 0)))


# ------------------------------------------------------------------ Theorem 1


def test_theorem1_gap_is_rounding_and_minimum_at_p():
    p, q = dirichlet(2000), dirichlet(2000, seed=1)
    d = risk_decomposition(p, q)
    assert abs(d.gap) <= 1e-12
    assert d.kl > 0 and d.risk > d.entropy
    at_p = risk_decomposition(p, p)
    assert at_p.kl == 0.0 and abs(at_p.risk - at_p.entropy) <= 1e-12
    # every other predictor scores worse (strict propriety), including a mixture towards p
    mixed = risk_decomposition(p, 0.9 * p + 0.1 * q)
    assert at_p.risk < mixed.risk < d.risk


def test_theorem1_weighted():
    p, q = dirichlet(10), dirichlet(10, seed=1)
    w = np.arange(10.0)
    d = risk_decomposition(p, q, weights=w)
    manual = float(np.sum(w / w.sum() * cross_entropy(p, q)))
    assert d.risk == pytest.approx(manual, abs=1e-15)
    assert abs(d.gap) <= 1e-14
    # zero-weight rows may hold a predictor with infinite loss: they do not count
    q_bad = q.copy()
    q_bad[0] = np.r_[1.0, np.zeros(24)]
    assert risk_decomposition(p, q_bad, weights=w).risk == pytest.approx(d.risk, abs=1e-15)
    with pytest.raises(ValueError, match="weights"):
        risk_decomposition(p, q, weights=-w)
    with pytest.raises(ValueError, match="weights"):
        risk_decomposition(p, q, weights=w[:5])
    with pytest.raises(ValueError, match="same shape"):
        risk_decomposition(p, q[0])


# ------------------------------------------------------------------ the loss


def test_log_softmax_is_stable():
    out = log_softmax([[1000.0, 0.0, -1000.0], [-1e300, 0.0, 1.0]])
    assert np.all(np.isfinite(out[:, :2]))
    np.testing.assert_allclose(np.exp(out).sum(axis=1), 1.0, rtol=0, atol=1e-15)
    with pytest.raises(ValueError, match="logits"):
        log_softmax(np.zeros((2, 0)))


def test_loss_value_and_gradient():
    rng = np.random.default_rng(3)
    logits = rng.normal(size=(2, 5, 7))
    targets = rng.integers(0, 7, size=(2, 5))
    selected = rng.random((2, 5)) < 0.5
    selected[0, 0] = True
    loss, grad = masked_lm_loss_and_grad(logits, targets, selected)
    log_q = logits - np.log(np.exp(logits).sum(axis=-1, keepdims=True))
    direct = -np.mean([log_q[b, i, targets[b, i]] for b, i in zip(*np.nonzero(selected))])
    assert loss == pytest.approx(direct, abs=1e-14)
    # unselected rows: the gradient is exactly zero, and moving their logits changes nothing
    assert np.all(grad[~selected] == 0.0)
    moved = logits + np.where(selected[..., None], 0.0, rng.normal(scale=10, size=logits.shape))
    assert masked_lm_loss_and_grad(moved, targets, selected)[0] == loss
    # selected rows: central differences, relative error well below 1e-6 in float64
    h = 1e-6
    worst = 0.0
    for b, i in zip(*np.nonzero(selected)):
        for y in range(7):
            up, down = logits.copy(), logits.copy()
            up[b, i, y] += h
            down[b, i, y] -= h
            numeric = (masked_lm_loss_and_grad(up, targets, selected)[0]
                       - masked_lm_loss_and_grad(down, targets, selected)[0]) / (2 * h)
            worst = max(worst, abs(numeric - grad[b, i, y]))
    assert worst / np.abs(grad).max() < 1e-6
    # each selected row's gradient sums to zero (softmax minus one-hot)
    assert np.abs(grad.sum(axis=-1)).max() < 1e-15


@pytest.mark.parametrize("logits, targets, selected, error, name", [
    (np.zeros((1, 3, 4)), [[0, 1, 2]], [[False, False, False]], ValueError, "selected"),
    (np.zeros((1, 3, 4)), [[0, 1, 2]], [[1, 0, 0]], TypeError, "selected"),
    (np.zeros((1, 3, 4)), [[0, 1, 2]], [[True, False]], ValueError, "selected"),
    (np.zeros((1, 3, 4)), [[0, 1, 4]], [[True, False, False]], ValueError, "targets"),
    (np.zeros((1, 3, 4)), [[0, 1]], [[True, False, False]], ValueError, "targets"),
    (np.zeros((1, 3, 4)), [[0.0, 1.0, 2.0]], [[True, False, False]], TypeError, "targets"),
    (np.zeros((3, 4)), [[0, 1, 2]], [[True, False, False]], ValueError, "logits"),
    (np.full((1, 3, 4), np.nan), [[0, 1, 2]], [[True, False, False]], ValueError, "logits"),
    (np.zeros((1, 0, 4)), np.zeros((1, 0), dtype=int), np.zeros((1, 0), dtype=bool), ValueError, "logits"),
])
def test_loss_bad_input(logits, targets, selected, error, name):
    with pytest.raises(error, match=name):
        masked_lm_loss_and_grad(logits, np.asarray(targets), np.asarray(selected))
