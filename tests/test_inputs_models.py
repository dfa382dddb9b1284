"""Bad inputs of the model modules (bruteforce, compat, hmm, channel, ising, geometry), issue 10.

Each call must fail with a ValueError or TypeError that names the caller's argument, or
refuse a huge size before allocating.
"""

import dataclasses

import numpy as np
import pytest

from mlm_book import bruteforce, channel, compat, geometry, hmm, ising
from mlm_book.channel import Channel

HMM = hmm.default_hmm()
HUGE = 10**12


def rng():
    return np.random.default_rng(0)


def raises(error, name, call, *args, **kwargs):
    with pytest.raises(error) as info:
        call(*args, **kwargs)
    assert name in str(info.value), str(info.value)


def replace_field(record, **changes):
    return lambda: dataclasses.replace(record, **changes)


# --- records validate their fields -----------------------------------------------------

def _records():
    fc = bruteforce.fixed_count_error(HMM, Channel(25), 4, 10, rng())
    fb = hmm.forward_backward(HMM.transition, HMM.initial, np.ones((1, 3, 8)))
    _, tokens = hmm.sample(HMM, 20, 24, rng())
    bayes = hmm.bayes_sense_accuracy(HMM, tokens)
    draws = compat.hmm_four_cycle_draws(HMM, rng(), count=3, length=4)
    batch = channel.corrupt(Channel(5), np.zeros((2, 4), dtype=int), rng())
    cloud = rng().standard_normal((6, 3)) + 1.0
    estimate = ising.fit_maximum_likelihood([0.5, 0.5], 4)
    return [
        (fc, ["length", "rho", "count", "rate", "positions", "max_abs", "mean_kl", "max_kl", "mean_entropy"]),
        (fb, ["posterior", "leave_one_out", "log_evidence"]),
        (bayes, ["expected", "n_occurrences", "standard_error"]),
        (draws, ["tokens", "first", "second", "a", "a_alt", "b", "b_alt"]),
        (batch, ["shown", "kind"]),
        (geometry.isotropic_mev(5, 3, rng(), repeats=3), ["n", "d", "mean", "std", "stderr", "repeats", "asymptotic"]),
        (geometry.check_proposition2(cloud), ["k", "d", "rank", "mev", "mean_gradient", "variational",
                                              "lower_slack", "upper_slack", "eckart_young"]),
        (geometry.principal_axes(cloud), ["coordinates", "axes", "explained", "mean"]),
        (geometry.describe_cloud(cloud[:3], cloud, rng(), repeats=3),
         ["n_occurrences", "dim", "self_similarity", "mev", "baseline", "adjusted", "token_mev", "isotropic_mev"]),
        (estimate, ["theta", "gradient_norm", "iterations"]),
        (ising.asymptotic_covariances(ising.IsingChain(4, 0.2, 0.5)),
         ["fisher", "sensitivity", "variability", "maximum_likelihood", "pseudo_likelihood"]),
    ]


@pytest.mark.parametrize("index", range(11))
def test_records_refuse_nan_fields(index):
    record, names = _records()[index]
    for name in names:
        value = getattr(record, name)
        bad = np.full(np.shape(value), np.nan) if np.ndim(value) else float("nan")
        raises((ValueError, TypeError), name, replace_field(record, **{name: bad}))


def test_dense_table_and_hmm_fields():
    table = bruteforce.dense_posteriors(HMM, Channel(25))
    raises(ValueError, "joint", replace_field(table, joint=np.full_like(table.joint, np.nan)))
    raises(TypeError, "channel", replace_field(table, channel=None))
    raises(TypeError, "sense_states", replace_field(HMM, sense_states=None))
    raises(TypeError, "token_names", replace_field(HMM, token_names=None))
    raises(TypeError, "config", replace_field(HMM, config=float("nan")))


def test_bayes_sense_accuracy_needs_two_sentences():
    _, tokens = hmm.sample(HMM, 1, 200, rng())
    raises(ValueError, "tokens", hmm.bayes_sense_accuracy, HMM, tokens)


# --- huge sizes are refused before allocating ---------------------------------------------

@pytest.mark.parametrize("call, name", [
    (lambda: hmm.sample(HMM, HUGE, 5, rng()), "batch"),
    (lambda: hmm.sample(HMM, 5, HUGE, rng()), "length"),
    (lambda: bruteforce.fixed_count_error(HMM, Channel(25), HUGE, 4, rng()), "length"),
    (lambda: bruteforce.fixed_count_errors(HMM, Channel(25), 4, HUGE, rng()), "batch"),
    (lambda: channel.zipf_unigram(HUGE), "vocab_size"),
    (lambda: compat.hmm_four_cycle_draws(HMM, rng(), count=HUGE), "count"),
    (lambda: compat.four_cycle_protocol(compat.hmm_conditionals(HMM), HMM, rng(), length=HUGE), "length"),
    (lambda: compat.random_positive_joint(HUGE, 3, rng()), "length"),
    (lambda: compat.rebuild_joint(compat.hmm_conditionals(HMM), HUGE, 3), "vocab_size"),
    (lambda: geometry.isotropic_mev(HUGE, 8, rng()), "n"),
    (lambda: geometry.isotropic_mev(100, HUGE, rng()), "d"),
    (lambda: geometry.isotropic_mev(100, 8, rng(), repeats=HUGE), "repeats"),
    (lambda: geometry.describe_cloud(np.eye(3) + 1, np.eye(3) + 1, rng(), repeats=HUGE), "repeats"),
    (lambda: geometry.mev_variational_gap(np.eye(3) + 1, rng(), directions=HUGE), "directions"),
    (lambda: ising.sample(ising.book_chain(), HUGE, rng()), "size"),
    (lambda: ising.sample_state_counts(ising.book_chain(), 10, rng(), replicates=HUGE), "replicates"),
])
def test_huge_sizes_are_refused(call, name):
    raises(ValueError, name, call)


# --- messages name the caller's argument ----------------------------------------------------

def test_bruteforce_messages_name_the_argument():
    raises(ValueError, "shown", bruteforce.brute_force_posterior, HMM, Channel(25), np.array([3]), 1)
    raises(ValueError, "shown", bruteforce.fixed_count_posterior, HMM, Channel(25), np.zeros((20, 1), int), 3)
    raises(ValueError, "position", bruteforce.fixed_count_posterior_by_sets, HMM, Channel(25),
           [[25, 25, 25]], 0)
    raises(TypeError, "rate", bruteforce.fixed_count_error, HMM, Channel(25), 4, 5, rng(), rate="text")
    raises(TypeError, "rates", bruteforce.fixed_count_errors, HMM, Channel(25), 4, 5, rng(), rates=None)


def test_compat_messages_name_the_argument():
    joint = compat.random_positive_joint(4, 4, rng())
    family = compat.joint_conditionals(joint)
    raises((TypeError, ValueError), "x", compat.brook_log_ratio, family, [[1, 2], [3]], [0, 0, 0, 0])
    raises(ValueError, "y", compat.brook_log_ratio, family, [0, 1, 2, 3], [0, 1, 2, 10**6])
    raises(ValueError, "x", compat.brook_log_ratio, family, [0, 1, 2, 10**6], [0, 1, 2, 3])
    raises(TypeError, "mask_id", compat.brook_log_ratio, family, [0, 1, 2, 3], [0, 1, 2, 3], mask_id="text")
    raises(TypeError, "reference", compat.choose_four_cycles, [[0, 1, 2]], None, rng())
    args = dict(first=[0], second=[1], a=[0], a_alt=[2], b=[1], b_alt=[0])
    three = compat.joint_conditionals(compat.random_positive_joint(3, 3, rng()))
    for name, value in (("first", -1), ("second", -1), ("a_alt", -1), ("b", -1), ("b_alt", HUGE)):
        raises(ValueError, name, compat.four_cycle_gap, three, [[0, 0, 1]], **{**args, name: value})
    raises(TypeError, "mask_id", compat.four_cycle_gap, three, [[0, 0, 1]], **args, mask_id="text")
    raises(ValueError, "positions", compat.query, family, [[0, 1, 2, 3]], np.zeros((1, 4), int))
    raises(TypeError, "mask_id", compat.query, family, [[0, 1, 2, 3]], 0, mask_id="text")
    raises(TypeError, "concentration", compat.random_positive_joint, 2, 3, rng(), concentration=None)
    raises(TypeError, "mask_id", compat.rebuild_joint, three, 3, 3, mask_id="text")
    raises(TypeError, "mask_id", compat.four_cycle_protocol, compat.hmm_conditionals(HMM), HMM, rng(),
           count=2, length=4, mask_id="text")


def test_channel_ising_geometry_messages_name_the_argument():
    raises(TypeError, "p_visible", channel.visible_mass, "text", Channel(25))
    raises(ValueError, "per", ising.fit_pseudo_likelihood,
           ising.expected_local_counts(ising.book_chain()), HUGE)
    raises(ValueError, "statistics", ising.log_likelihood_objective, np.zeros(0), [0.2, 0.5], 4)
    raises(ValueError, "theta", ising.log_likelihood_objective, [1.0, 1.0], -1, 4)
    for name in ("h", "J"):
        values = {"h": 0.2, "J": 0.5, name: 1e308}
        raises(ValueError, name, ising.log_pseudo_likelihood, [[1, -1, 1]], values["h"], values["J"])
        raises(ValueError, name, ising.masked_risk, ising.IsingChain(4, 0.2, 0.5), values["h"], values["J"])
    raises(TypeError, "baseline", geometry.adjusted_self_similarity, np.eye(2) + 1, None)
    raises(ValueError, "vectors", geometry.sample_rows, np.zeros((0, 8)), 100, rng())


def test_valid_calls_keep_their_numbers():
    chain = ising.IsingChain(4, 0.2, 0.5)
    assert np.isfinite(ising.masked_risk(chain, 3.0, -2.0))
    assert ising.log_pseudo_likelihood([[1, -1, 1]], 0.0, 0.0).round(4).tolist() == [-2.0794]
    assert round(float(channel.visible_mass(0.176, Channel(vocab_size=25))), 3) == 0.847
    single = bruteforce.fixed_count_error(HMM, Channel(25), 4, 10, rng(), rate=0.3)
    assert single.rate == 0.3
