"""Tests for mlm_book.compat: Brook's lemma, the joint rebuild, the four-cycle gap, bad input."""

import numpy as np
import pytest

from mlm_book.channel import Channel
from mlm_book.compat import (
    brook_log_ratio,
    choose_four_cycles,
    four_cycle_gap,
    four_cycle_protocol,
    from_all_positions,
    hmm_conditionals,
    hmm_four_cycle_draws,
    joint_conditionals,
    population_optimum_conditionals,
    query,
    random_positive_joint,
    rebuild_joint,
)
from mlm_book.bruteforce import path_joint
from mlm_book.hmm import default_hmm, emission_likelihood, enumerate_joint, forward_backward, sample


@pytest.fixture(scope="module")
def hmm():
    return default_hmm()


def test_rebuild_the_hmm_joint_from_its_conditionals(hmm):
    rebuilt = rebuild_joint(hmm_conditionals(hmm), 25, 4)
    assert rebuilt.shape == (25,) * 4 and rebuilt.size == 390625
    assert np.abs(rebuilt - enumerate_joint(hmm, 4)).max() <= 1e-12


def test_rebuild_does_not_depend_on_the_reference(hmm):
    first = rebuild_joint(hmm_conditionals(hmm), 25, 3)
    second = rebuild_joint(hmm_conditionals(hmm), 25, 3, reference=[24, 3, 17])
    assert np.abs(first - second).max() < 1e-15


def test_brook_ratio_on_hmm_sequences_equals_the_forward_algorithm(hmm):
    rng = np.random.default_rng(0)
    _, x = sample(hmm, 50, 24, rng)
    _, y = sample(hmm, 50, 24, rng)
    log_p = [forward_backward(hmm.transition, hmm.initial, emission_likelihood(hmm, t)).log_evidence
             for t in (x, y)]
    ratio = brook_log_ratio(hmm_conditionals(hmm), x, y)
    assert np.abs(ratio - (log_p[0] - log_p[1])).max() < 1e-12


@pytest.mark.parametrize("length,vocab", [(2, 5), (3, 4), (4, 3)])
def test_random_positive_joints_are_rebuilt_and_pass_the_four_cycle_test(length, vocab):
    rng = np.random.default_rng(length)
    for concentration in (0.3, 1.0, 5.0):
        joint = random_positive_joint(length, vocab, rng, concentration=concentration)
        family = joint_conditionals(joint)
        assert np.abs(rebuild_joint(family, vocab, length) - joint).max() < 1e-14
        tokens = rng.integers(0, vocab, size=(300, length))
        draws = choose_four_cycles(tokens, family, rng, adjacent=False)
        # Any values, not only the likeliest: the identity holds for every cycle.
        a, a_alt, b, b_alt = (rng.integers(0, vocab, 300) for _ in range(4))
        delta = four_cycle_gap(family, tokens, draws.first, draws.second, a, a_alt, b, b_alt)
        assert np.abs(delta).max() < 1e-12
        assert np.abs(draws.gaps(family)).max() < 1e-12


def test_an_incompatible_family_fails_the_four_cycle_test():
    rng = np.random.default_rng(3)
    tables = rng.dirichlet(np.ones(3), size=(2, 3))  # q_i(. | x_other), independent tables

    def family(tokens, positions):
        other = tokens[np.arange(len(tokens)), 1 - positions]
        return tables[positions, other]

    tokens = np.zeros((1, 2), dtype=int)
    delta = four_cycle_gap(family, tokens, [0], [1], [0], [1], [0], [1])
    assert abs(delta[0]) > 1e-3


def test_hmm_family_at_rounding_level_on_the_books_protocol(hmm):
    delta = four_cycle_protocol(hmm_conditionals(hmm), hmm, np.random.default_rng(7))
    assert delta.shape == (200,)
    assert np.median(np.abs(delta)) <= 1e-13
    assert np.abs(delta).max() <= 1e-11


def test_population_optimum_is_incompatible_and_tends_to_compatible(hmm):
    medians = []
    for rho in (0.15, 0.01, 0.0001):
        family = population_optimum_conditionals(hmm, Channel(25, rho=rho))
        delta = four_cycle_protocol(family, hmm, np.random.default_rng(7), count=100)
        medians.append(np.median(np.abs(delta)))
    assert medians[0] >= 1e-7
    assert medians[0] > medians[1] > medians[2]
    assert medians[2] < 1e-8


def test_population_optimum_at_tiny_rho_is_the_true_conditional(hmm):
    # rho = 0 itself is excluded: [MASK] then has probability zero under the channel.
    _, tokens = sample(hmm, 20, 10, np.random.default_rng(1))
    positions = np.arange(20) % 10
    exact = hmm_conditionals(hmm)(tokens, positions)
    optimum = population_optimum_conditionals(hmm, Channel(25, rho=1e-10))(tokens, positions)
    # The other positions are corrupted with probability O(rho): the gap is O(1e-10).
    assert np.abs(exact - optimum).max() < 1e-8


def test_same_generator_seed_gives_same_draws(hmm):
    first = hmm_four_cycle_draws(hmm, np.random.default_rng(11), count=10)
    second = hmm_four_cycle_draws(hmm, np.random.default_rng(11), count=10)
    assert np.array_equal(first.tokens, second.tokens) and np.array_equal(first.a_alt, second.a_alt)
    assert np.all(first.a != first.a_alt) and np.all(first.b != first.b_alt)


def test_mask_id_is_written_at_the_queried_position():
    seen = []

    def family(tokens, positions):
        seen.append(tokens[np.arange(len(tokens)), positions].copy())
        return np.full((len(tokens), 3), 1 / 3)

    query(family, [[0, 1, 2]], [1], mask_id=3)
    assert seen[0].tolist() == [3]
    wrapped = from_all_positions(lambda tokens: np.full(tokens.shape + (3,), 1 / 3))
    assert wrapped(np.zeros((2, 4), dtype=int), np.array([0, 3])).shape == (2, 3)


def test_bad_input():
    joint = random_positive_joint(3, 3, np.random.default_rng(0))
    family = joint_conditionals(joint)
    zero = joint.copy()
    zero[0, 0, 0] = 0.0
    zero /= zero.sum()
    with pytest.raises(ValueError, match="joint must be strictly positive"):
        joint_conditionals(zero)
    with pytest.raises(ValueError, match="joint must sum to 1"):
        joint_conditionals(joint * 2)

    def with_zeros(tokens, positions):
        q = family(tokens, positions)
        q[:, 0] = 0.0
        return q / q.sum(axis=1, keepdims=True)

    with pytest.raises(ValueError, match="positive joint"):
        rebuild_joint(with_zeros, 3, 3)
    with pytest.raises(ValueError, match="strictly positive"):
        brook_log_ratio(with_zeros, [0, 0, 0], [1, 1, 1])

    def not_a_distribution(tokens, positions):
        return np.full((len(tokens), 3), 0.5)

    with pytest.raises(ValueError, match="conditional must return probability vectors"):
        four_cycle_gap(not_a_distribution, [[0, 0, 0]], [0], [1], [0], [1], [0], [1])
    with pytest.raises(ValueError, match="conditional must return probability vectors"):
        rebuild_joint(lambda t, p: -np.ones((len(t), 3)) / 3, 3, 2)
    with pytest.raises(ValueError, match="conditional must return shape"):
        query(lambda t, p: np.ones(3) / 3, [[0, 1]], 0)
    with pytest.raises(TypeError, match="conditional must be callable"):
        query("uniform", [[0, 1]], 0)
    with pytest.raises(ValueError, match="tokens must have length n >= 2"):
        four_cycle_gap(family, [[0]], [0], [0], [0], [1], [0], [1])
    with pytest.raises(ValueError, match="length must be an integer >= 2"):
        rebuild_joint(family, 3, 1)
    with pytest.raises(ValueError, match="first and second must differ"):
        four_cycle_gap(family, [[0, 0, 0]], [1], [1], [0], [1], [0], [1])
    with pytest.raises(ValueError, match="x and y must have the same shape"):
        brook_log_ratio(family, [0, 0, 0], [0, 0])
    with pytest.raises(ValueError, match="reference must be"):
        rebuild_joint(family, 3, 3, reference=[0, 0, 5])
    with pytest.raises(TypeError, match="hmm must be a HiddenMarkovLanguage"):
        hmm_conditionals("hmm")
    with pytest.raises(TypeError, match="rng must be a numpy.random.Generator"):
        random_positive_joint(2, 2, 0)


def test_an_out_of_vocabulary_context_token_is_refused_not_clamped():
    """joint_conditionals used to clip ids into range: a context token 5 of a 3-word vocabulary read as 2."""
    joint = random_positive_joint(3, 3, np.random.default_rng(0))
    family = joint_conditionals(joint)
    with pytest.raises(ValueError, match="tokens"):
        query(family, [[0, 5, 1]], 0)
    with pytest.raises(ValueError, match="tokens"):
        family(np.array([[0, 5, 1]]), np.array([0]))
    with pytest.raises(ValueError, match="tokens"):
        four_cycle_gap(family, [[0, 5, 1]], 0, 2, 0, 1, 0, 1)
    # the queried position itself may show anything, [MASK] included: it is not read
    assert query(family, [[3, 1, 1]], 0).shape == (1, 3)


@pytest.mark.parametrize("call", [
    lambda: enumerate_joint(default_hmm(), 10**10),
    lambda: rebuild_joint(joint_conditionals(random_positive_joint(2, 2, np.random.default_rng(0))), 2, 10**9),
    lambda: random_positive_joint(10**9, 3, np.random.default_rng(0)),
    lambda: path_joint(default_hmm(), 10**10),
])
def test_impossible_table_sizes_are_refused_at_once(call):
    """These used to hang computing V**n with ten billion digits; now they are refused before any work."""
    with pytest.raises(ValueError, match="more than the limit"):
        call()
