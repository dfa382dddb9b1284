"""The language family, the mixture sampler and the multilingual artefact's setups (no training)."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from mlm_book import languages as lang
from mlm_book.artefacts import multilingual as art
from mlm_book.channel import Channel, exact_posterior
from mlm_book.hmm import HMMConfig, default_hmm, forward_backward, sample
from mlm_book.scoring import entropy


def test_each_language_is_the_book_hmm_relabelled():
    base = default_hmm()
    languages = lang.family(3)
    for k, language in enumerate(languages):
        support = np.flatnonzero(language.emission.max(axis=0) > 0)
        assert support.tolist() == list(range(24 * k, 24 * k + 24)) + [72]
        np.testing.assert_array_equal(language.emission[:, support], base.emission)
        np.testing.assert_array_equal(language.transition, base.transition)


def test_relabelling_changes_no_exact_optimum():
    # two languages of one family (one joint vocabulary, one channel): the exact masked-LM entropy of a sentence
    # and of its relabelled copy agree to rounding
    languages = lang.family(2)
    first, second = languages
    _, tokens = sample(first, 20, 12, np.random.default_rng(0))
    moved = np.where(tokens == first.shared_token, tokens, tokens + 24)
    channel = Channel(first.vocab_size)
    tokens[:, 5] = moved[:, 5] = first.vocab_size
    h_first = entropy(exact_posterior(first, channel, tokens)[:, 5])
    h_second = entropy(exact_posterior(second, channel, moved)[:, 5])
    np.testing.assert_allclose(h_first, h_second, atol=1e-10)


def test_the_rule_reverses_the_light_cycle_of_the_first_language_only():
    languages = lang.family(4, first=art.RULE)
    base = default_hmm()
    assert not np.allclose(languages[0].transition, base.transition)
    for language in languages[1:]:
        np.testing.assert_array_equal(language.transition, base.transition)


def test_mixture_draws_each_language_at_its_weight_and_from_its_own_law():
    languages = lang.family(4, first=art.RULE)
    weights = [0.4, 0.3, 0.2, 0.1]
    language, states, tokens = lang.mixture_sample(languages, weights, 40000, 8, np.random.default_rng(3))
    # binomial standard error of a share near 0.3 on 40,000 draws is 0.0023: 0.012 is five of them
    np.testing.assert_allclose(np.bincount(language, minlength=4) / language.size, weights, atol=0.012)
    for k in (0, 3):
        rows = language == k
        own = lang.own_tokens(languages, k)
        assert np.all(np.isin(tokens[rows], np.append(own, languages[k].shared_token)))
        # tokens are emitted by their states: every token has positive emission from its state
        assert np.all(languages[k].emission[states[rows], tokens[rows]] > 0)


def test_a_zero_weight_leaves_a_language_out():
    language, _, _ = lang.mixture_sample(lang.family(3), [0.0, 1.0, 0.0], 50, 4, np.random.default_rng(0))
    assert set(language.tolist()) == {1}


@pytest.mark.parametrize("call, match", [
    (lambda: lang.sampling_shares([0.7, 0.2, 0.07, 0.03], -0.3), "alpha"),
    (lambda: lang.sampling_shares([0.7, 0.2, 0.07], 0.3), "shares must sum to 1"),
    (lambda: lang.mixture_sample(lang.family(2), [0.6, 0.6], 4, 4, np.random.default_rng(0)), "weights"),
    (lambda: lang.check_family((lang.family(2)[0], default_hmm())), "languages"),
    (lambda: art.make_run(2, [0.5, 0.5, 0.0], 0), "weights"),
    (lambda: art.sweep_run(-1.0), "alpha"),
    (lambda: art.curse_run(10**12), "n_languages must be an integer in \\[1, 64\\]"),
    (lambda: art.make_run(10**9, [1.0], 0), "n_languages must be an integer in \\[1, 64\\]"),
    (lambda: lang.mixture_sample(lang.family(2), [0.5, 0.5], 10**12, 4, np.random.default_rng(0)), "batch"),
    (lambda: lang.mixture_sample(lang.family(2), [0.5, 0.5], 4, 10**12, np.random.default_rng(0)), "length"),
])
def test_bad_input_names_the_argument(call, match):
    with pytest.raises(ValueError, match=match):
        call()


def test_allow_zero_must_be_a_bool():
    with pytest.raises(TypeError, match="allow_zero"):
        lang.check_weights([0.5, 0.5], allow_zero=np.array([True, False]))


def test_languages_with_different_state_counts_are_refused():
    from mlm_book.hmm import HiddenMarkovLanguage
    base = lang.family(1)[0]
    keep = [0, 1, 2, 3, 4, 5]          # drop two light states of regime b: a 6-state language
    transition = base.transition[np.ix_(keep, keep)]
    transition = transition / transition.sum(axis=1, keepdims=True)
    from mlm_book.hmm import stationary_distribution
    small = HiddenMarkovLanguage(transition=transition, emission=base.emission[keep] / base.emission[keep].sum(1,
                                 keepdims=True), initial=stationary_distribution(transition),
                                 regime=base.regime[keep], sense_states=base.sense_states,
                                 shared_token=base.shared_token, token_names=base.token_names)
    with pytest.raises(ValueError, match="languages must share their number of hidden states"):
        lang.check_family((base, small))


def test_the_book_runs_and_their_sharing():
    runs = art.book_runs()
    assert len(runs) == len(set(runs))
    assert art.curse_run(4) in runs and art.curse_run(4) == art.sweep_run(0.0)
    # the alone run reads as many of the smallest language's sentences per step as the mixture gives it
    for alpha in art.ALONE_ALPHAS:
        q = lang.sampling_shares(art.DATA_SHARES, alpha)[-1]
        assert abs(art.alone_run(alpha).training.batch_size - 160 * q) <= 0.5
    assert all(run.training.steps == art.RECIPE.steps for run in runs)


def test_bleed_readings_differ_at_a_fifth_of_masked_positions():
    # the rule is strong enough to be measured: own and rule readings of a masked state differ often
    own = lang.family(4)[3]
    rule = lang.family(4, first=art.RULE)[0]
    _, tokens = sample(own, 500, 24, np.random.default_rng(0))
    likelihood = np.moveaxis(own.emission[:, tokens], 0, -1)
    a = forward_backward(own.transition, own.initial, likelihood).leave_one_out.argmax(-1)
    b = forward_backward(rule.transition, rule.initial, likelihood).leave_one_out.argmax(-1)
    assert 0.1 < np.mean(a != b) < 0.3


def test_tiny_run_measures_every_language(tmp_path, monkeypatch):
    monkeypatch.setenv("MLM_BOOK_CACHE", str(tmp_path))
    run = art.ARTEFACT_KINDS[0].tiny()
    measured = art._measure(run)
    assert measured["excess"].shape == (run.n_languages,)
    assert measured["losses"].shape == (run.training.steps,)
    assert np.all(np.isfinite(measured["bleed"]))
    with pytest.raises(TypeError, match="rule"):
        replace(run, rule=1)
    assert HMMConfig(light_forward=0.2) == art.RULE
