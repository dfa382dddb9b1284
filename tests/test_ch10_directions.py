"""Chapter 10's exact part: left-to-right against bidirectional entropies and sense accuracies.

Identities are checked to 1e-10 (float64 sums of at most a few hundred thousand terms are
exact to about 1e-14); sampled estimates against exact values within 4 standard errors, a
two-sided band that a correct estimator leaves about once in 16,000 comparisons.
"""

from __future__ import annotations

import io
import time
from dataclasses import replace

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
import numpy as np
import pytest
from matplotlib.text import Text

from mlm_book import figures
from mlm_book.channel import Channel
from mlm_book.experiments import ch10_directions as ch10
from mlm_book import directions
from mlm_book.hmm import (
    HMMConfig,
    bayes_sense_accuracy,
    build_hmm,
    default_hmm,
    enumerate_joint,
    forward_backward,
    sample,
    sense_posteriors,
    token_conditionals,
)

IDENTITY = 1e-10
HMM = default_hmm()
BERT = Channel(HMM.vocab_size)


@pytest.fixture(scope="module")
def r():
    return ch10.results()


@pytest.fixture(scope="module")
def exact():
    return {n: directions.exact_directions(HMM, n, channel=BERT) for n in (1, 2, 3, 4)}


# ----------------------------------------------------------------------------- enumeration identities
@pytest.mark.parametrize("length", [1, 2, 3, pytest.param(4, marks=pytest.mark.slow)])  # 25^4 sentences: 6 s
def test_estimator_matches_the_enumeration_on_every_sentence(length):
    """Conditionals, log P(x) and probability-weighted expectations, at every position (n = 4:
    390,625 sentences and 4 * 17,576 displays through the estimator, a few seconds)."""
    check = directions.estimator_check(HMM, length, channel=BERT)
    for name in ("left_conditional_error", "both_conditional_error", "chain_rule_error", "left_expectation_error",
                 "both_expectation_error", "mask_conditional_error", "mask_expectation_error"):
        assert getattr(check, name) < IDENTITY, (name, getattr(check, name))
    assert check.worst < IDENTITY


def test_the_check_detects_a_wrong_reader(monkeypatch):
    """The check has power: a reader that peeks at x_i (the filtered state instead of the
    predicted one, the 'trivial next word' of a bidirectional model without the causal mask)
    and a bidirectional reader that forgets the right context both fail it by far."""
    original = directions._clean_conditionals

    def peeking(hmm, tokens):
        left, both, senses, log_evidence = original(hmm, tokens)
        wrong = directions.LeftToRight(left.predicted, left.filtered, left.filtered @ hmm.emission, left.surprisal)
        return wrong, both, senses, log_evidence

    def one_sided(hmm, tokens):
        left, _, senses, log_evidence = original(hmm, tokens)
        return left, left.conditionals, senses, log_evidence

    for wrong in (peeking, one_sided):
        monkeypatch.setattr(directions, "_clean_conditionals", wrong)
        assert directions.estimator_check(HMM, 3).worst > 1e-3
    monkeypatch.setattr(directions, "_clean_conditionals", original)
    assert directions.estimator_check(HMM, 3).worst < IDENTITY


def test_exact_values_are_joint_entropy_differences(exact):
    """Independently of the module's code: H(x_<=i) - H(x_<i) and H(x) - H(x_-i) from enumerate_joint."""
    for n, found in exact.items():
        joint = enumerate_joint(HMM, n)

        def h(table):
            p = np.asarray(table).ravel()
            p = p[p > 0]
            return float(-(p * np.log(p)).sum())

        for i in range(n):
            upto = joint.sum(axis=tuple(range(i + 1, n)))
            before = upto.sum(axis=-1) if i else np.ones(1)
            assert abs(found.left[i] - (h(upto) - h(before))) < IDENTITY
            assert abs(found.both[i] - (h(joint) - h(joint.sum(axis=i)))) < IDENTITY
        assert abs(found.joint_entropy - h(joint)) < IDENTITY


# ----------------------------------------------------------------------------- chain rule
def test_chain_rule_per_sentence():
    _, tokens = sample(HMM, 300, 24, np.random.default_rng(4))
    left = directions.left_to_right(HMM, tokens)
    smoothed = forward_backward(HMM.transition, HMM.initial, HMM.emission.T[tokens])
    assert np.abs(left.log_probability - smoothed.log_evidence).max() < IDENTITY
    # and per token: the surprisal is -log of the conditional's entry for the token there
    picked = np.take_along_axis(left.conditionals, tokens[:, :, None], axis=2)[:, :, 0]
    assert np.abs(left.surprisal + np.log(picked)).max() < IDENTITY
    # short sentences against the enumerated joint itself
    joint = enumerate_joint(HMM, 3)
    _, short = sample(HMM, 50, 3, np.random.default_rng(5))
    assert np.abs(directions.left_to_right(HMM, short).log_probability - np.log(joint[tuple(short.T)])).max() < IDENTITY


def test_left_conditionals_are_the_last_leave_one_out_of_each_prefix():
    """P(x_i | x_<i) is forward-backward's leave-one-out at the end of the prefix x_<=i, and
    P(sense | x_<=i) its smoothed sense posterior there: an independent route to both."""
    _, tokens = sample(HMM, 200, 12, np.random.default_rng(6))
    left = directions.left_to_right(HMM, tokens)
    for i in range(12):
        prefix = tokens[:, :i + 1]
        assert np.abs(left.conditionals[:, i] - token_conditionals(HMM, prefix)[:, i]).max() < IDENTITY
        senses = left.filtered[:, i, list(HMM.sense_states)]
        assert np.abs(senses - sense_posteriors(HMM, prefix)[:, i]).max() < IDENTITY
    # at the last position the two readers see the same words
    assert np.abs(left.conditionals[:, -1] - token_conditionals(HMM, tokens)[:, -1]).max() < IDENTITY


def test_sampled_chain_rule_sum_matches_the_mean_log_probability(r):
    e = r.entropies
    assert e.chain_rule_error < IDENTITY
    # two estimators of H(x_1..x_n) on the same sentences: the chain rule's sum and mean -log P(x)
    assert abs(e.total_left - e.sequence_entropy) < 4 * e.sequence_entropy_se


# ----------------------------------------------------------------------------- the gap
def test_exact_gap_is_nonnegative_and_vanishes_at_the_last_position(exact):
    for n, found in exact.items():
        assert np.all(found.gap >= -IDENTITY), (n, found.gap)
        assert abs(found.gap[-1]) < IDENTITY
        if n > 1:
            assert np.all(found.gap[:-1] > 0.1)  # far from rounding: the right context is worth > 0.1 nats
            # the gap falls from the first position to the last
            assert np.all(np.diff(found.gap) < 0)
            # a [MASK] reader, even through the channel, knows more than the left context alone
            assert np.all(found.mask[:-1] < found.left[:-1])
        # stationarity: more left context never raises the entropy, and the two edges of the
        # bidirectional reader are mirror images (H(x) - H(x_2..n) = H(x) - H(x_1..n-1))
        assert np.all(np.diff(found.left) <= IDENTITY)
        assert abs(found.both[0] - found.both[-1]) < IDENTITY
        # the channel garbles the other positions: a [MASK] reader knows less than a clean one
        assert np.all(found.mask >= found.both - IDENTITY)
    # a longer sentence only adds context, for both readers
    for n in (2, 3, 4):
        assert np.all(exact[n].left[: n - 1] - exact[n - 1].left <= IDENTITY)
        assert np.all(exact[n].both[1:n - 1] <= exact[n - 1].both[1:] + IDENTITY)


def test_sampled_gap(r):
    e = r.entropies
    assert np.all(e.gap[:-1] > 4 * e.gap_se[:-1])
    assert abs(e.gap[-1]) < IDENTITY and e.negative_gap_share[-1] == 0
    assert int(np.argmax(e.gap)) == 0  # largest at the first position
    # conditioning reduces entropy on average only: some contexts have a flatter bidirectional conditional
    assert 0.05 < e.negative_gap_share[1:-1].min() and e.negative_gap_share.max() < 0.5
    assert np.all(e.mask > e.both) and np.all(e.mask[:-1] < e.left[:-1])


# ----------------------------------------------------------------------------- Monte Carlo against enumeration
@pytest.mark.parametrize("length", [2, 3, 4])
def test_monte_carlo_agrees_with_the_enumeration(length, exact):
    found = directions.position_entropies(HMM, length, 20_000, np.random.default_rng(100 + length), channel=BERT)
    truth = exact[length]
    for name in ("left", "both", "mask"):
        estimate, se = getattr(found, name), getattr(found, f"{name}_se")
        # position 1 of the left reader has no context: the estimate is exact (se = 0)
        assert np.all(np.abs(estimate - getattr(truth, name)) <= 4 * se + IDENTITY), (name, estimate, se)
    assert np.all(np.abs(found.gap - truth.gap) <= 4 * found.gap_se + IDENTITY)


def test_selected_entropy_is_chapter_twos_quantity(r):
    """Theorem 2's posterior at what the selected positions show: chapter 2 reports 1.874 nats on
    1439 held-out positions; here the same expectation on about 72,000 positions."""
    e = r.entropies
    assert 1.84 < e.selected_entropy < 1.92 and e.selected_entropy_se < 0.005
    # a [MASK] hides the token: its entropy is above the average over what selected positions show
    assert e.mask.mean() > e.selected_entropy


# ----------------------------------------------------------------------------- senses
def test_sense_accuracy_by_position(r):
    s = r.senses
    assert abs(s.left[0] - s.cap) < IDENTITY and s.left_se[0] < IDENTITY  # w alone: the static cap, exactly
    assert abs(s.left[-1] - s.both[-1]) < IDENTITY
    assert np.all(s.both[:-1] > s.left[:-1] + 4 * np.hypot(s.both_se[:-1], s.left_se[:-1]))
    assert s.pooled_both > s.pooled_left > s.cap + 0.3
    assert abs(s.pooled_both - 0.968) < 0.005  # chapter 1's expectation on 200,000 sentences is 0.9682


def test_pooled_both_sides_is_chapter_ones_bayes_accuracy():
    """On one chunk of sentences (300 * 5 tokens), the sampled sentences are hmm.sample's own."""
    senses = directions.sense_by_position(HMM, 5, 300, np.random.default_rng(8))
    _, tokens = sample(HMM, 300, 5, np.random.default_rng(8))
    bayes = bayes_sense_accuracy(HMM, tokens)
    assert abs(senses.pooled_both - bayes.expected) < IDENTITY
    assert abs(senses.pooled_both_se - bayes.standard_error) < IDENTITY
    assert senses.n_occurrences == bayes.n_occurrences


def test_the_same_seed_gives_the_same_sentences_with_or_without_a_channel(r):
    config = r.config
    alone = directions.sense_by_position(r.hmm, config.length, config.sequences, np.random.default_rng(config.seed))
    assert np.array_equal(alone.counts, r.senses.counts) and np.array_equal(alone.both, r.senses.both)
    clean = directions.position_entropies(r.hmm, config.length, config.sequences, np.random.default_rng(config.seed))
    assert np.array_equal(clean.left, r.entropies.left) and clean.mask is None


def test_sample_size_meets_the_standard_errors_it_was_chosen_for(r):
    """DirectionsConfig.sequences: at most 0.002 nats per position, at most 0.005 per sense accuracy."""
    e, s = r.entropies, r.senses
    for name in ("left_se", "both_se", "gap_se", "mask_se"):
        assert getattr(e, name).max() <= 0.002, name
    assert max(s.left_se.max(), s.both_se.max()) <= 0.005


# ----------------------------------------------------------------------------- tables and figure
def test_tables_and_figure(r):
    entropies = ch10.entropy_table(r)
    assert entropies.count("\n") == 2 + 8 + 2 - 1 and f"{r.entropies.left[0]:.3f}" in entropies
    assert ch10.sense_table(r, positions=[1, 12]).count("\n") == 2 + 2 + 2 - 1
    assert ch10.exact_table(r).count("\n") == 2 + 2 + 3 + 4 - 1
    drawn = ch10.figure_directions(r)
    assert f"{r.entropies.gap[0]:.2f}" in drawn.alt and "$" not in drawn.alt and drawn.caption
    fig = drawn.figure
    with figures.style():
        fig.savefig(io.BytesIO(), format="svg")
    small = [text.get_text() for text in fig.findobj(Text)
             if text.get_visible() and text.get_text().strip() and text.get_fontsize() < figures.MIN_FONT_SIZE]
    assert fig.get_size_inches()[0] <= figures.WIDE and not small
    assert len(fig.axes[0].lines) == 3
    plt.close(fig)


# ----------------------------------------------------------------------------- bad input
def _quick(call, error, match):
    """The call is refused with ``error`` naming the argument, at once (nothing was built)."""
    start = time.perf_counter()
    with pytest.raises(error, match=match):
        call()
    assert time.perf_counter() - start < 1.0


@pytest.mark.parametrize("function", [directions.position_entropies, directions.sense_by_position])
def test_sampled_estimates_refuse_bad_input(function):
    rng = np.random.default_rng(0)
    _quick(lambda: function("hmm", 4, 10, rng), TypeError, "hmm")
    _quick(lambda: function(HMM, 4.0, 10, rng), TypeError, "length")
    _quick(lambda: function(HMM, 0, 10, rng), ValueError, "length")
    _quick(lambda: function(HMM, -3, 10, rng), ValueError, "length")
    _quick(lambda: function(HMM, 10**9, 2, rng), ValueError, "length")
    _quick(lambda: function(HMM, 4, 1, rng), ValueError, "sequences")
    _quick(lambda: function(HMM, 4, 10**12, rng), ValueError, "sequences")
    _quick(lambda: function(HMM, 4, True, rng), TypeError, "sequences")
    for bad in (0, None, "seed", np.random.RandomState(0)):
        _quick(lambda bad=bad: function(HMM, 4, 10, bad), TypeError, "rng")


def test_channel_is_checked():
    rng = np.random.default_rng(0)
    for bad, error in (("bert", TypeError), (Channel(24), ValueError), (Channel(25, selection="fixed"), ValueError),
                       (Channel(25, rho=0.0), ValueError), (Channel(25, mask=0.0, random=0.5), ValueError)):
        _quick(lambda bad=bad: directions.position_entropies(HMM, 4, 10, rng, channel=bad), error, "channel")
        _quick(lambda bad=bad: directions.exact_directions(HMM, 2, channel=bad), error, "channel")
    with pytest.raises(ValueError, match="sequences"):  # two sentences of one token: no position selected
        directions.position_entropies(HMM, 1, 2, np.random.default_rng(0), channel=Channel(25, rho=1e-9))


def test_too_few_occurrences_are_refused():
    with pytest.raises(ValueError, match="sequences"):
        directions.sense_by_position(HMM, 4, 2, np.random.default_rng(0))


def test_enumerations_refuse_bad_lengths():
    for function in (directions.exact_directions, directions.estimator_check):
        _quick(lambda function=function: function(HMM, 0), ValueError, "length")
        _quick(lambda function=function: function(HMM, 5), ValueError, "length")  # 25**5 * 8 entries
        _quick(lambda function=function: function(HMM, 10**12), ValueError, "length")
        _quick(lambda function=function: function(HMM, 2.0), TypeError, "length")
        _quick(lambda function=function: function(None, 2), TypeError, "hmm")


def test_left_to_right_refuses_bad_tokens():
    _quick(lambda: directions.left_to_right(HMM, [[0.5, 1.0]]), TypeError, "tokens")
    _quick(lambda: directions.left_to_right(HMM, [0, 1, 2]), ValueError, "tokens")  # (B, n) only
    _quick(lambda: directions.left_to_right(HMM, [[0, 25]]), ValueError, "tokens")
    _quick(lambda: directions.left_to_right(HMM, np.zeros((0, 3), dtype=int)), ValueError, "tokens")
    _quick(lambda: directions.left_to_right("hmm", [[0, 1]]), TypeError, "hmm")
    # refused before its (B, n, V) tables are allocated: 10^8 tokens would be 20 GB of conditionals
    huge = np.broadcast_to(np.zeros(1, dtype=np.int64), (10**4, 10**4))
    _quick(lambda: directions.left_to_right(HMM, huge), ValueError, "tokens")
    # a token no state emits makes the sentence impossible
    hmm = build_hmm(HMMConfig())
    with pytest.raises(ValueError, match="tokens"):
        directions.left_to_right(type(hmm)(hmm.transition, np.hstack([hmm.emission, np.zeros((8, 1))]), hmm.initial,
                                    hmm.regime, hmm.sense_states, hmm.shared_token, hmm.token_names + ("z",)),
                          [[0, 25]])


def test_configs_records_and_tables_refuse_bad_input(r):
    with pytest.raises(ValueError, match="sequences"):
        directions.DirectionsConfig(sequences=1)
    with pytest.raises(ValueError, match="length"):
        directions.DirectionsConfig(length=directions.MAX_LENGTH + 1)
    with pytest.raises(ValueError, match="sequences"):
        directions.DirectionsConfig(length=24, sequences=10**9)
    with pytest.raises(ValueError, match="rho"):
        directions.DirectionsConfig(rho=0.0)
    with pytest.raises(TypeError, match="check_lengths"):
        directions.DirectionsConfig(check_lengths=[2])
    with pytest.raises(TypeError, match="hmm"):
        directions.DirectionsConfig(hmm=None)
    with pytest.raises(TypeError, match="config"):
        ch10.results("default")
    with pytest.raises(TypeError, match="^r must"):
        ch10.entropy_table(r.entropies)
    for bad, error in ((0, ValueError), (25, ValueError), ([[1, 2]], ValueError), ("1", TypeError),
                       ([1.5], TypeError), ([], ValueError)):
        with pytest.raises(error, match="positions"):
            ch10.sense_table(r, positions=bad)
    e = r.entropies
    with pytest.raises(ValueError, match="left"):
        replace(e, left=e.left[:3])
    with pytest.raises(ValueError, match="channel"):
        replace(e, channel=None)
    with pytest.raises(ValueError, match="counts"):
        replace(r.senses, counts=np.ones(24, dtype=int))
    with pytest.raises(ValueError, match="exact"):
        replace(r, exact=r.exact[:1])
