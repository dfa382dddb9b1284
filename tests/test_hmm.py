"""Tests of mlm_book.hmm: forward–backward against brute force, sampling, validation."""

from __future__ import annotations

import dataclasses
import itertools

import numpy as np
import pytest

from mlm_book.hmm import (
    ForwardBackward,
    HiddenMarkovLanguage,
    HMMConfig,
    bayes_sense_accuracy,
    build_hmm,
    default_hmm,
    emission_likelihood,
    enumerate_joint,
    enumerate_posteriors,
    forward_backward,
    sample,
    sense_posteriors,
    stationary_distribution,
    token_conditionals,
)

HMM = default_hmm()


def brute_force_smoothing(transition, initial, likelihood):
    """Posterior, leave-one-out posterior and evidence by summing over all S**n state paths.

    likelihood has shape (n, S); returns ((n, S), (n, S), float).
    """
    n, n_states = likelihood.shape
    paths = np.array(list(itertools.product(range(n_states), repeat=n)))  # (S**n, n)
    prior = initial[paths[:, 0]] * np.prod(transition[paths[:, :-1], paths[:, 1:]], axis=1)
    rows = likelihood[np.arange(n), paths]  # (S**n, n)
    weight = prior * np.prod(rows, axis=1)
    posterior = np.zeros((n, n_states))
    leave = np.zeros((n, n_states))
    for i in range(n):
        others = prior * np.prod(np.delete(rows, i, axis=1), axis=1)
        np.add.at(posterior[i], paths[:, i], weight)
        np.add.at(leave[i], paths[:, i], others)
    return posterior / weight.sum(), leave / leave.sum(axis=1, keepdims=True), weight.sum()


def random_transition(rng, n_states):
    matrix = rng.dirichlet(np.ones(n_states), size=n_states)
    return matrix


# ---------------------------------------------------------------- the model itself


def test_default_hmm_structure():
    hmm = HMM
    assert (hmm.n_states, hmm.vocab_size) == (8, 25)
    assert np.all(hmm.transition > 0)
    np.testing.assert_allclose(hmm.transition.sum(axis=1), 1.0, atol=1e-15)
    np.testing.assert_allclose(hmm.initial @ hmm.transition, hmm.initial, atol=1e-15)
    # every state emits exactly 3 own tokens; the heavy states also emit w with 0.4
    own = hmm.emission[:, : hmm.shared_token] > 0
    assert own.sum(axis=1).tolist() == [3] * 8 and own.sum(axis=0).tolist() == [1] * 24
    assert hmm.emission[:, hmm.shared_token].tolist() == [0.4, 0, 0, 0, 0.4, 0, 0, 0]
    for k, state in enumerate(hmm.sense_states):
        members = np.flatnonzero(hmm.regime == k)
        assert state == members[np.argmax(hmm.initial[members])]
    assert hmm.token_names[hmm.shared_token] == "w" and len(set(hmm.token_names)) == 25


def test_default_hmm_targets():
    pi = HMM.initial[list(HMM.sense_states)]
    shares = pi / pi.sum()
    assert 0.504 <= shares.max() <= 0.514  # 0.509 +- 0.005 (claims.md S2-05)
    assert abs(pi.sum() - 0.463) < 0.01  # w about 18.5 % of tokens
    assert HMM is default_hmm()


def test_arrays_are_read_only_and_hmm_is_hashable():
    with pytest.raises(ValueError):
        HMM.transition[0, 0] = 0.5
    assert hash(HMM) == hash(HMM)
    with pytest.raises(dataclasses.FrozenInstanceError):
        HMM.shared_token = 3


def test_stationary_distribution():
    rng = np.random.default_rng(0)
    transition = random_transition(rng, 5)
    pi = stationary_distribution(transition)
    np.testing.assert_allclose(pi @ transition, pi, atol=1e-14)
    assert abs(pi.sum() - 1) < 1e-14


# ---------------------------------------------------------------- forward–backward


@pytest.mark.parametrize("length", [1, 2, 3, 4])
def test_forward_backward_matches_brute_force_on_hmm(length):
    rng = np.random.default_rng(length)
    _, tokens = sample(HMM, 4, length, rng)
    tokens[0, 0] = HMM.shared_token  # always include an occurrence of w
    result = forward_backward(HMM.transition, HMM.initial, emission_likelihood(HMM, tokens))
    assert isinstance(result, ForwardBackward)
    assert result.posterior.shape == result.leave_one_out.shape == (4, length, 8)
    for b in range(4):
        posterior, leave, evidence = brute_force_smoothing(HMM.transition, HMM.initial, HMM.emission.T[tokens[b]])
        np.testing.assert_allclose(result.posterior[b], posterior, atol=1e-12, rtol=0)
        np.testing.assert_allclose(result.leave_one_out[b], leave, atol=1e-12, rtol=0)
        assert abs(result.log_evidence[b] - np.log(evidence)) < 1e-12


@pytest.mark.parametrize("length", [1, 2, 3, 4])
def test_forward_backward_generic_likelihoods(length):
    """Arbitrary non-negative rows, rows of ones (unobserved) and zeros, random transitions."""
    rng = np.random.default_rng(100 + length)
    n_states = 3
    transition = random_transition(rng, n_states)
    initial = rng.dirichlet(np.ones(n_states))
    likelihood = rng.uniform(0.01, 3.0, size=(5, length, n_states))
    likelihood[1, :] = 1.0  # nothing observed: posterior = prior marginals
    likelihood[2, -1] = 1.0
    likelihood[3, 0, 1] = 0.0
    likelihood[4] *= 1e-200  # tiny rows must not underflow
    result = forward_backward(transition, initial, likelihood)
    for b in range(5):
        posterior, leave, evidence = brute_force_smoothing(transition, initial, likelihood[b] if b != 4
                                                            else likelihood[b] * 1e200)
        np.testing.assert_allclose(result.posterior[b], posterior, atol=1e-12, rtol=0)
        np.testing.assert_allclose(result.leave_one_out[b], leave, atol=1e-12, rtol=0)
        expected = np.log(evidence) - (length * np.log(1e200) if b == 4 else 0.0)
        assert abs(result.log_evidence[b] - expected) < 1e-10
    # with nothing observed, each marginal is initial @ T^(i)
    marginal = initial.copy()
    for i in range(length):
        np.testing.assert_allclose(result.posterior[1, i], marginal, atol=1e-14)
        marginal = marginal @ transition
    assert abs(result.log_evidence[1]) < 1e-14


def test_leave_one_out_ignores_own_row():
    """Changing row i's likelihood changes the posterior at i but not the leave-one-out at i."""
    rng = np.random.default_rng(7)
    likelihood = rng.uniform(0.1, 1.0, size=(1, 6, 8))
    changed = likelihood.copy()
    changed[0, 3] = rng.uniform(0.1, 1.0, size=8)
    a = forward_backward(HMM.transition, HMM.initial, likelihood)
    b = forward_backward(HMM.transition, HMM.initial, changed)
    np.testing.assert_allclose(a.leave_one_out[0, 3], b.leave_one_out[0, 3], atol=1e-14)
    assert np.abs(a.posterior[0, 3] - b.posterior[0, 3]).max() > 1e-3


def test_long_sequence_is_stable():
    _, tokens = sample(HMM, 2, 3000, np.random.default_rng(3))
    result = forward_backward(HMM.transition, HMM.initial, emission_likelihood(HMM, tokens))
    assert np.all(np.isfinite(result.log_evidence)) and np.all(result.log_evidence < -3000)
    np.testing.assert_allclose(result.posterior.sum(axis=2), 1.0, atol=1e-12)
    # log evidence is the sum of the one-step predictive log probabilities (chain rule)
    prefix = forward_backward(HMM.transition, HMM.initial, emission_likelihood(HMM, tokens[:, :2999]))
    predictive = forward_backward(HMM.transition, HMM.initial,
                                  np.concatenate([emission_likelihood(HMM, tokens[:, :2999]),
                                                  np.ones((2, 1, 8))], axis=1))
    last = predictive.posterior[:, -1] @ HMM.emission  # P(x_n = v | x_{<n})
    step = np.log(last[np.arange(2), tokens[:, -1]])
    np.testing.assert_allclose(result.log_evidence, prefix.log_evidence + step, atol=1e-9)


# ---------------------------------------------------------------- exact conditionals


@pytest.mark.parametrize("length", [1, 2, 3, 4])
def test_token_conditionals_match_enumeration(length):
    joint = enumerate_joint(HMM, length)
    rng = np.random.default_rng(10 + length)
    _, tokens = sample(HMM, 5, length, rng)
    conditionals = token_conditionals(HMM, tokens)
    assert conditionals.shape == (5, length, 25)
    for b in range(5):
        for i in range(length):
            index = list(tokens[b])
            index[i] = slice(None)
            expected = joint[tuple(index)]
            np.testing.assert_allclose(conditionals[b, i], expected / expected.sum(), atol=1e-12, rtol=0)
    evidence = forward_backward(HMM.transition, HMM.initial, emission_likelihood(HMM, tokens)).log_evidence
    np.testing.assert_allclose(evidence, np.log(joint[tuple(tokens.T)]), atol=1e-12, rtol=0)


def test_enumerate_joint_is_a_stationary_joint():
    joint3 = enumerate_joint(HMM, 3)
    joint2 = enumerate_joint(HMM, 2)
    assert abs(joint3.sum() - 1) < 1e-12
    # stationarity: dropping the first or the last token gives the same length-2 joint
    np.testing.assert_allclose(joint3.sum(axis=2), joint2, atol=1e-15)
    np.testing.assert_allclose(joint3.sum(axis=0), joint2, atol=1e-15)
    unigram = HMM.initial @ HMM.emission
    np.testing.assert_allclose(enumerate_joint(HMM, 1), unigram, atol=1e-15)
    joint4 = enumerate_joint(HMM, 4)
    # every transition is positive, so every sequence has positive probability (Brook's lemma needs it)
    assert joint4.shape == (25,) * 4 and np.all(joint4 > 0)
    assert abs(joint4.sum() - 1) < 1e-12


def test_sense_posteriors():
    tokens = np.array([[0, 24, 1, 24], [12, 24, 24, 13]])
    senses = sense_posteriors(HMM, tokens)
    assert senses.shape == (2, 4, 2)
    w = tokens == HMM.shared_token
    np.testing.assert_allclose(senses[w].sum(axis=1), 1.0, atol=1e-14)
    assert senses[0, 1, 0] > 0.9 and senses[1, 1, 1] > 0.9  # context names the regime
    posterior, _, _ = brute_force_smoothing(HMM.transition, HMM.initial, HMM.emission.T[tokens[1]])
    np.testing.assert_allclose(senses[1], posterior[:, list(HMM.sense_states)], atol=1e-12)
    # 1-d tokens give unbatched output
    np.testing.assert_allclose(sense_posteriors(HMM, tokens[1]), senses[1], atol=0)


# ---------------------------------------------------------------- sampling


def chi_square(counts, probabilities):
    expected = counts.sum() * probabilities
    return float(((counts - expected) ** 2 / expected).sum()), counts.size - 1


def test_sample_matches_model_frequencies():
    """Token pairs, first states and state transitions against the model, by chi-square.

    Tolerance: with df degrees of freedom the statistic has mean df and standard deviation
    sqrt(2 df); we fail beyond df + 6 sqrt(2 df), which a correct sampler exceeds with
    probability below 1e-6, while a wrong transition or emission row moves the statistic
    by thousands at these sample sizes. (The seed is fixed, so the test is deterministic.)
    """
    rng = np.random.default_rng(2024)
    states, tokens = sample(HMM, 60_000, 3, rng)
    assert states.dtype == tokens.dtype == np.int64
    pair_joint = enumerate_joint(HMM, 2)
    positive = pair_joint.ravel() > 0
    counts = np.bincount(tokens[:, 1] * 25 + tokens[:, 2], minlength=625)
    assert counts[~positive].sum() == 0  # impossible pairs never appear
    stat, df = chi_square(counts[positive], pair_joint.ravel()[positive])
    assert stat < df + 6 * np.sqrt(2 * df), (stat, df)
    stat, df = chi_square(np.bincount(states[:, 0], minlength=8), HMM.initial)
    assert stat < df + 6 * np.sqrt(2 * df)
    pair_states = np.bincount(states[:, 0] * 8 + states[:, 1], minlength=64)
    stat, df = chi_square(pair_states, (HMM.initial[:, None] * HMM.transition).ravel())
    assert stat < df + 6 * np.sqrt(2 * df)
    # emissions are consistent with the sampled states
    assert np.all(HMM.emission[states, tokens] > 0)


def test_sample_is_reproducible():
    a = sample(HMM, 3, 7, np.random.default_rng(5))
    b = sample(HMM, 3, 7, np.random.default_rng(5))
    assert all(np.array_equal(x, y) for x, y in zip(a, b))


# ---------------------------------------------------------------- bad input


def _fields(**changes):
    base = dict(transition=HMM.transition, emission=HMM.emission, initial=HMM.initial, regime=HMM.regime,
                sense_states=HMM.sense_states, shared_token=HMM.shared_token, token_names=HMM.token_names)
    base.update(changes)
    return base


@pytest.mark.parametrize("changes, name", [
    (dict(transition=HMM.transition * 1.1), "transition"),
    (dict(transition=np.where(np.eye(8) > 0, 1.0, 0.0)), "transition"),  # zero entries
    (dict(transition=HMM.transition[:4]), "transition"),
    (dict(emission=-HMM.emission), "emission"),
    (dict(emission=HMM.emission[:, :24]), "emission"),
    (dict(initial=np.full(8, 1 / 8)), "initial"),  # not stationary
    (dict(initial=HMM.initial[:7]), "initial"),
    (dict(regime=np.array([0, 1, 2, 0, 1, 1, 1, 1])), "regime"),
    (dict(sense_states=(1, 4)), "sense_states"),
    (dict(sense_states=(4, 0)), "sense_states"),
    (dict(shared_token=25), "shared_token"),
    (dict(shared_token=3), "shared_token"),
    (dict(token_names=HMM.token_names[:3]), "token_names"),
])
def test_hmm_rejects_bad_fields(changes, name):
    with pytest.raises(ValueError, match=name):
        HiddenMarkovLanguage(**_fields(**changes))


def test_bad_arguments():
    rng = np.random.default_rng(0)
    with pytest.raises(TypeError, match="rng"):
        sample(HMM, 2, 3, 0)
    with pytest.raises(ValueError, match="batch"):
        sample(HMM, 0, 3, rng)
    with pytest.raises(ValueError, match="length"):
        sample(HMM, 2, 0, rng)
    with pytest.raises(TypeError, match="length"):
        sample(HMM, 2, 2.5, rng)
    with pytest.raises(TypeError, match="hmm"):
        sample("hmm", 2, 3, rng)
    with pytest.raises(ValueError, match="tokens"):
        token_conditionals(HMM, [[0, 25]])
    with pytest.raises(ValueError, match="tokens"):
        token_conditionals(HMM, [[0, -1]])
    with pytest.raises(ValueError, match="tokens"):
        sense_posteriors(HMM, np.zeros((2, 0), dtype=int))
    with pytest.raises(ValueError, match="tokens"):
        emission_likelihood(HMM, np.zeros((2, 2, 2), dtype=int))
    with pytest.raises(TypeError, match="tokens"):
        token_conditionals(HMM, [0.5, 1.0])
    with pytest.raises(ValueError, match="length"):
        enumerate_joint(HMM, 5)
    with pytest.raises(TypeError, match="config"):
        build_hmm({"switch_a": 0.1})
    with pytest.raises(ValueError, match="switch_a"):
        HMMConfig(switch_a=0.0)
    with pytest.raises(ValueError, match="own_split"):
        HMMConfig(own_split=(0.5, 0.5, 0.5))
    with pytest.raises(ValueError, match="light_return"):
        HMMConfig(light_return=0.7, light_stay=0.3)


def test_forward_backward_rejects_bad_input():
    transition, initial = HMM.transition, HMM.initial
    ones = np.ones((1, 3, 8))
    with pytest.raises(ValueError, match="likelihood"):
        forward_backward(transition, initial, np.ones((3, 8)))  # missing batch axis
    with pytest.raises(ValueError, match="likelihood"):
        forward_backward(transition, initial, np.ones((1, 3, 7)))
    with pytest.raises(ValueError, match="likelihood"):
        forward_backward(transition, initial, np.ones((1, 0, 8)))
    with pytest.raises(ValueError, match="likelihood"):
        forward_backward(transition, initial, -ones)
    with pytest.raises(ValueError, match="likelihood"):
        forward_backward(transition, initial, np.where(np.arange(3)[None, :, None] == 1, 0.0, ones))
    with pytest.raises(ValueError, match="likelihood"):
        forward_backward(transition, initial, ones * np.nan)
    with pytest.raises(ValueError, match="transition"):
        forward_backward(transition * 2, initial, ones)
    with pytest.raises(ValueError, match="initial"):
        forward_backward(transition, initial[:3] / initial[:3].sum(), ones)
    # observations impossible under the chain: state 0 only at step 1, then a row only state 0 after a
    # chain that can never return there
    stuck = np.array([[0.0, 1.0], [0.0, 1.0]])
    with pytest.raises(ValueError, match="probability zero"):
        forward_backward(stuck, [0.5, 0.5], np.array([[[1.0, 1.0], [1.0, 0.0]]]))


# ---------------------------------------------------------------- brute force and Bayes accuracy


def test_enumerate_posteriors_matches_forward_backward_and_test_brute_force():
    rng = np.random.default_rng(11)
    likelihood = rng.uniform(0.0, 2.0, size=(3, 4, 8))
    likelihood[1, 2] = 1.0
    fast = forward_backward(HMM.transition, HMM.initial, likelihood)
    slow = enumerate_posteriors(HMM.transition, HMM.initial, likelihood)
    for field in ("posterior", "leave_one_out", "log_evidence"):
        np.testing.assert_allclose(getattr(fast, field), getattr(slow, field), atol=1e-12, rtol=0)
    posterior, leave, evidence = brute_force_smoothing(HMM.transition, HMM.initial, likelihood[0])
    np.testing.assert_allclose(slow.posterior[0], posterior, atol=1e-14)
    np.testing.assert_allclose(slow.leave_one_out[0], leave, atol=1e-14)
    with pytest.raises(ValueError, match="likelihood"):
        enumerate_posteriors(HMM.transition, HMM.initial, np.ones((1, 12, 8)))


def test_bayes_sense_accuracy():
    states, tokens = sample(HMM, 400, 24, np.random.default_rng(8))
    result = bayes_sense_accuracy(HMM, tokens, states)
    occurrences = tokens == HMM.shared_token
    assert result.n_occurrences == occurrences.sum()
    senses = sense_posteriors(HMM, tokens)[occurrences]
    assert result.expected == pytest.approx(senses.max(axis=1).mean(), abs=1e-15)
    # the realised accuracy estimates the expected one: within 4 binomial standard errors
    se = np.sqrt(result.expected * (1 - result.expected) / result.n_occurrences)
    assert abs(result.realised - result.expected) < 4 * se
    assert 0.5 <= result.expected <= 1.0 and bayes_sense_accuracy(HMM, tokens).realised is None
    with pytest.raises(ValueError, match="shared token"):
        bayes_sense_accuracy(HMM, np.zeros((2, 3), dtype=int))
    with pytest.raises(ValueError, match="states"):
        bayes_sense_accuracy(HMM, tokens, states[:, :5])


def test_bayes_standard_error_with_one_occurrence_per_sentence_is_the_iid_one():
    tokens = np.array([[0, 24, 1], [12, 24, 13], [0, 24, 13], [12, 24, 1], [24, 0, 0]])
    result = bayes_sense_accuracy(HMM, tokens)
    best = sense_posteriors(HMM, tokens)[tokens == 24].max(axis=1)
    assert result.standard_error == pytest.approx(best.std(ddof=1) / np.sqrt(5), rel=1e-12)


def test_a_uniform_just_below_one_never_draws_a_column_of_probability_zero():
    """The CDF of a row whose last entry has probability 0 ends at 1 - 2**-53; a uniform above
    that used to be drawn as the last column (w from a state that never emits it)."""
    from mlm_book.hmm import _draw

    row = np.cumsum([0.7, 0.2, 0.1, 0.0])
    assert row[-1] < 1.0  # the rounding that makes the fault possible
    top = np.nextafter(1.0, 0.0)
    draws = _draw(np.tile(row, (3, 1)), np.array([top, row[-1], 0.0]))
    assert draws.tolist() == [2, 2, 0]
    hmm = default_hmm()
    non_sense = [s for s in range(hmm.n_states) if s not in hmm.sense_states]
    cdf = np.cumsum(hmm.emission[non_sense], axis=1)
    assert not np.any(_draw(cdf, np.full(len(non_sense), top)) == hmm.shared_token)
