"""Tests of the encoder–decoder: cross-attention and full-model gradients in float64, causality, bad input,
and the translation world's exact laws."""

from __future__ import annotations

import numpy as np
import pytest

from mlm_book import translation
from mlm_book.nn import encoder_decoder as ed
from mlm_book.nn.cross_attention import (
    CROSS_PARAMS,
    cross_attention_backward,
    cross_attention_forward,
)
from mlm_book.nn.gradcheck import central_differences, relative_error

# A correct backward pass scores ~1e-9 with h = 1e-5 in float64 (truncation ~h^2, rounding ~1e-16/h;
# see mlm_book.nn.gradcheck); the book's threshold for every hand-written backward pass is 1e-6.
TOL = 1e-6
SMALL = ed.EncoderDecoderConfig(source_vocab=5, target_vocab=4, source_length=5, target_length=4, d_model=8,
                                n_encoder_blocks=2, n_decoder_blocks=2, n_heads=2)


def perturbed(config=SMALL, seed=0):
    rng = np.random.default_rng(seed)
    params = ed.init_params(config, rng, np.float64)
    for value in params.values():
        value += rng.normal(0.0, 0.3, size=value.shape)
    return params


def test_cross_attention_gradients_match_central_differences():
    rng = np.random.default_rng(3)
    d, B, m, n = 6, 2, 3, 4
    p = {"W_q": rng.normal(size=(d, d)), "b_q": rng.normal(size=d), "W_kv": rng.normal(size=(d, 2 * d)),
         "b_kv": rng.normal(size=2 * d), "W_o": rng.normal(size=(d, d)), "b_o": rng.normal(size=d)}
    x, mem = rng.normal(size=(B * m, d)), rng.normal(size=(B * n, d))
    w = rng.normal(size=(B * m, d))

    def value():
        return float((cross_attention_forward(x, mem, p, 3, (B, m), (B, n))[0] * w).sum())

    _, cache = cross_attention_forward(x, mem, p, 3, (B, m), (B, n))
    dx, dmem, grads = cross_attention_backward(w, cache)
    assert relative_error(dx, central_differences(x, value)) < TOL
    assert relative_error(dmem, central_differences(mem, value)) < TOL
    for name in CROSS_PARAMS:
        assert relative_error(grads[name], central_differences(p[name], value)) < TOL, name


def test_every_encoder_decoder_gradient_matches_central_differences():
    params = perturbed()
    rng = np.random.default_rng(1)
    source = rng.integers(0, SMALL.source_vocab, size=(3, 5))
    target = rng.integers(0, SMALL.target_vocab, size=(3, 4))
    loss, grads = ed.loss_and_grads(params, SMALL, source, target)
    assert set(grads) == set(params)

    def forward_loss():
        # the loss from the forward pass alone (a third of loss_and_grads' work per perturbed entry)
        return -np.take_along_axis(ed.log_probabilities(params, SMALL, source, target), target[:, :, None], 2).mean()

    assert abs(forward_loss() - loss) < 1e-12
    for name, value in params.items():
        assert relative_error(grads[name], central_differences(value, forward_loss)) < TOL, name


def test_loss_is_the_mean_negative_log_probability_and_the_decoder_is_causal():
    params = perturbed(seed=2)
    rng = np.random.default_rng(2)
    source = rng.integers(0, SMALL.source_vocab, size=(2, 5))
    target = rng.integers(0, SMALL.target_vocab, size=(2, 4))
    lp = ed.log_probabilities(params, SMALL, source, target)
    loss, _ = ed.loss_and_grads(params, SMALL, source, target)
    assert abs(loss + np.take_along_axis(lp, target[:, :, None], axis=2).mean()) < 1e-12
    later = target.copy()
    later[:, 2:] = (later[:, 2:] + 1) % SMALL.target_vocab
    lp2 = ed.log_probabilities(params, SMALL, source, later)
    np.testing.assert_allclose(lp[:, :3], lp2[:, :3], atol=1e-12)      # y_t reaches positions > t only
    source2 = source.copy()
    source2[:, -1] = (source2[:, -1] + 1) % SMALL.source_vocab
    assert not np.allclose(ed.log_probabilities(params, SMALL, source2, target)[:, 0], lp[:, 0])  # reads all x


@pytest.mark.parametrize("source, target, error", [
    ([[0, 1, 2]], [[0, 4]], ValueError),           # target id out of range
    ([[0, 1, 2, 3, 4, 0]], [[0]], ValueError),     # source longer than its table
    ([[0, 1]], [[0], [1]], ValueError),            # different numbers of pairs
    ("abc", [[0]], (TypeError, ValueError)),
])
def test_bad_token_arrays_are_refused(source, target, error):
    with pytest.raises(error):
        ed.loss_and_grads(perturbed(), SMALL, source, target)


def test_bad_configs_and_params_are_refused():
    with pytest.raises(ValueError, match="n_heads"):
        ed.EncoderDecoderConfig(5, 4, 5, 4, d_model=9, n_heads=2)
    with pytest.raises(ValueError, match="target_vocab"):
        ed.EncoderDecoderConfig(5, 0, 5, 4)
    params = perturbed()
    del params["out.b"]
    with pytest.raises(ValueError, match="out.b"):
        ed.loss_and_grads(params, SMALL, [[0]], [[0]])
    with pytest.raises(TypeError, match="x"):
        cross_attention_forward([[0.0]], np.zeros((1, 1)), {}, 1, (1, 1), (1, 1))


def _brute_conditionals(world, source, target, reads):
    """p(y_t | what `reads` shows) by summing the joint over every hidden path (tiny lengths only)."""
    hmm = world.source
    n = source.shape[0]
    S = hmm.n_states
    paths = np.stack(np.unravel_index(np.arange(S ** n), (S,) * n), axis=1)      # (S^n, n)
    prior = hmm.initial[paths[:, 0]] * np.prod(hmm.transition[paths[:, :-1], paths[:, 1:]], axis=1)
    out = np.empty((n, world.target_vocab))
    for t in range(n):
        weight = prior.copy()
        if reads != "prefix":
            weight *= np.prod(hmm.emission[paths, source], axis=1)
        seen = range(t) if reads != "source+both" else [i for i in range(n) if i != t]
        for i in seen:
            weight *= world.target_emission[paths[:, i], target[i]]
        out[t] = weight @ world.target_emission[paths[:, t]] / weight.sum()
    return out


@pytest.mark.parametrize("reads", translation.READS)
def test_exact_target_laws_match_enumeration_over_hidden_paths(reads):
    world = translation.default_world()
    _, x, y = translation.sample_pairs(world, 3, 4, np.random.default_rng(5))
    fast = translation.target_conditionals(world, x, y, reads)
    for b in range(3):
        np.testing.assert_allclose(fast[b], _brute_conditionals(world, x[b], y[b], reads), atol=1e-12)


def test_translation_world_refuses_bad_input():
    world = translation.default_world()
    with pytest.raises(ValueError, match="same shape"):
        translation.target_conditionals(world, [[0, 1]], [[0]])
    with pytest.raises(ValueError, match="target"):
        translation.target_conditionals(world, [[0]], [[6]])
    with pytest.raises(ValueError, match="reads"):
        translation.target_conditionals(world, [[0]], [[0]], "everything")
    with pytest.raises(ValueError, match="target_emission"):
        translation.TranslationWorld(world.source, np.full((3, 2), 0.5), ("a", "b"))


def test_the_artefact_refuses_a_model_that_does_not_fit_the_world():
    from dataclasses import replace

    from mlm_book.artefacts import encoder_decoder as artefact
    with pytest.raises(ValueError, match="vocabularies"):
        replace(artefact.book_run(), model=replace(artefact.MODEL, target_vocab=7))
    with pytest.raises(ValueError, match="seed"):
        artefact.book_run(12345)


# ----------------------------------------------------------------------------- (book) the trained models
@pytest.mark.book
def test_the_rules_get_the_verdicts_stated_before_the_run():
    from mlm_book.experiments import ch10_encoder_decoder as ch
    from mlm_book.ledger import verify
    results = verify(claims=ch.CLAIMS)
    assert [r.verdict for r in results] == [ch.STATED_BEFORE_RUN[c.id] for c in ch.CLAIMS]
    assert all(r.passed for r in results)


@pytest.mark.book
def test_the_study_is_consistent_with_the_exact_laws():
    from mlm_book.experiments import ch10_encoder_decoder as ch
    study = ch.results()
    # the held-out means of the three exact laws, on 2000 pairs, are ordered as their expectations
    # (the both-sides gain is ~5e-6 nats, so that one is allowed its sampling noise)
    assert study.exact.prefix > study.exact.source_prefix
    assert study.exact.source_both <= study.exact.source_prefix + 1e-4
    assert study.exact.source_prefix >= study.floor - 0.01       # the floor is an expectation, not this sample's
    np.testing.assert_allclose(study.model_position.mean(axis=1), study.model_loss, rtol=1e-12)
    assert [f.name for f in ch.families(study)] == ["decoder", "encoder", "encoder–decoder"]
