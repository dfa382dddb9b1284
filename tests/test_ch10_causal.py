"""Chapter 10's next-token readers: the recipe, the measurements' identities, and what training must show."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from mlm_book.artefacts import next_token
from mlm_book.experiments import ch10_causal as C
from mlm_book.artefacts import next_token_measurements as ntm
from mlm_book.experiments import hmm_encoder
from mlm_book.hmm import bayes_sense_accuracy, default_hmm
from mlm_book.nn import encoder as enc
from mlm_book.nn.loop import TrainConfig, learning_rate
from mlm_book.nn.train import NextToken, TrainResult


def _untrained(causal: bool, seed: int = 0) -> TrainResult:
    """A reader with the book's shape and randomly moved parameters (no training needed)."""
    config = replace(hmm_encoder.SETUP.encoder, causal=causal)
    rng = np.random.default_rng(seed)
    params = enc.init_params(config, rng, dtype=np.float64)
    for value in params.values():
        value += rng.normal(0.0, 0.2, size=value.shape)
    return TrainResult(config, TrainConfig(steps=1), params, np.array([1.0]), 0.0)


def test_the_recipe_is_the_hmm_encoders_but_for_steps_objective_and_mask():
    base, name = hmm_encoder.SETUP, "next-token-reader"
    for causal in (True, False):
        args = next_token.training_arguments(next_token.reader_setup(causal, C.SEEDS[1]))
        assert args[0] == name and args[1] == replace(base.encoder, causal=causal)
        assert args[4] == NextToken(base.encoder.vocab_size)
        training = args[2]
        assert replace(training, steps=base.training.steps, warmup=base.training.warmup,
                       weight_decay=base.training.weight_decay, seed=base.training.seed) == base.training
        assert training.seed == C.SEEDS[1]
    # the same total decay, so the shorter run shrinks its tables as much
    total = lambda c: c.weight_decay * sum(learning_rate(c, s) for s in range(c.steps))
    assert total(C.training_config()) == pytest.approx(total(base.training), rel=1e-4)


def test_reader_losses_are_the_encoders_next_token_loss():
    tokens = ntm._held_out(ntm.MEASUREMENTS)[:64]
    for causal in (True, False):
        reader = _untrained(causal)
        shown, targets, selected = NextToken(25).batch(tokens)
        expected = enc.loss(reader.params, reader.encoder, shown, targets, selected)
        assert ntm._reader_losses(reader, tokens).mean() == pytest.approx(expected, abs=1e-10)


def test_a_causal_reader_puts_no_weight_on_the_next_position_and_an_unmasked_one_does():
    tokens = ntm._held_out(ntm.MEASUREMENTS)[:32]
    assert (ntm._next_weight(_untrained(True), tokens) == 0.0).all()
    weights = ntm._next_weight(_untrained(False), tokens)
    assert weights.shape == (2, 4) and ((weights > 0.0) & (weights < 1.0)).all()


def test_exact_surprisal_adds_up_to_the_sentence_given_its_first_word():
    hmm = default_hmm()
    tokens = ntm._held_out(ntm.MEASUREMENTS)[:50]
    from mlm_book.hmm import forward_backward
    log_p = forward_backward(hmm.transition, hmm.initial, hmm.emission.T[tokens]).log_evidence
    first = np.log(hmm.initial @ hmm.emission)[tokens[:, 0]]
    assert np.allclose(ntm._exact_surprisal(tokens).sum(axis=1), -(log_p - first), atol=1e-10)


def test_the_left_context_knows_less_of_ws_sense_than_the_whole_sentence():
    from mlm_book.hmm_splits import hmm_split
    test = hmm_split("test")
    both = bayes_sense_accuracy(default_hmm(), test.tokens, test.states).expected
    left = ntm._left_sense()
    assert 0.5 < left < both


def test_bad_arguments_are_named():
    with pytest.raises(TypeError, match="causal must be True or False"):
        C.trained_reader(1)
    with pytest.raises(ValueError, match="seed must be one of"):
        C.trained_reader(True, 99)
    with pytest.raises(TypeError, match="sentences must be"):
        next_token.ReaderSetup(causal=True, seed=0, sentences="hmm")
    with pytest.raises(TypeError, match="r must be"):
        C.reader_table("results")


@pytest.mark.book
def test_trained_readers_keep_the_order_the_theory_fixes():
    r = C.results()
    for seed in C.SEEDS:
        causal, unmasked = r.reader(True, seed), r.reader(False, seed)
        # no causal reader beats the exact left-to-right conditional (up to sampling error) ...
        assert causal.excess >= -3 * causal.excess_se
        assert (causal.next_weight == 0.0).all()
        # ... and the unmasked one, which can read the answer, beats them both
        assert unmasked.loss < r.exact < causal.loss + 3 * causal.excess_se
        # probes cannot beat the exact sense accuracy of what each reader can see (three standard errors)
        n = int((ntm._sense_data()[1][1]).sum())
        assert causal.probes.max() <= r.left_sense + 3 * np.sqrt(r.left_sense * (1 - r.left_sense) / n)
    assert r.exact == pytest.approx(r.exact_position.mean())
    assert r.mean_attention.shape == (24, 24) and np.allclose(r.mean_attention.sum(axis=1), 1.0)
