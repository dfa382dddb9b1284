"""Chapter 9's state taggers: the head's gradients, the exact ceilings' identities, bad input, and (book) the rules."""

from __future__ import annotations

import numpy as np
import pytest

from mlm_book.artefacts import state_taggers
from mlm_book.experiments import ch09_states as ch
from mlm_book.hmm import default_hmm, enumerate_joint, forward_backward
from mlm_book.directions import left_to_right
from mlm_book.nn import encoder as enc
from mlm_book.nn import state_tagger as st
from mlm_book.nn.gradcheck import central_differences, relative_error

HMM = default_hmm()


def _config(**changes):
    return enc.EncoderConfig(**{"vocab_size": 5, "length": 6, "d_model": 8, "n_blocks": 2, "n_heads": 2, **changes})


def _batch(rng, config, n_tags=3):
    tokens = rng.integers(0, config.vocab_size, size=(3, 5))
    tags = rng.integers(0, n_tags, size=(3, 5))
    tags[0, 1] = -1                                  # an unscored position
    return tokens, tags


# ----------------------------------------------------------------------------- the head's gradients
@pytest.mark.parametrize("changes", [{}, {"causal": True}, {"head": "plain"}, {"tied": False}])
def test_gradients_match_central_differences(changes):
    config = _config(**changes)
    rng = np.random.default_rng(len(changes) + 7 * ("causal" in changes))
    params = enc.init_params(config, rng, dtype=np.float64)
    for name in params:                              # move the LayerNorms away from (1, 0) so every path matters
        params[name] += 0.1 * rng.normal(size=params[name].shape)
    everything = {**params, "head.W": rng.normal(size=(8, 3)), "head.b": rng.normal(size=3)}
    tokens, tags = _batch(rng, config)

    def loss():
        return st._loss_and_grads(everything, config, tokens, tags)[0]

    value, grads = st._loss_and_grads(everything, config, tokens, tags)
    read = {n for n in params if n in ("E", "P") or n.startswith("blocks.")
            or (config.head == "normalised" and n.startswith("ln_f."))}
    assert set(grads) == read | {"head.W", "head.b"}
    for name, g in grads.items():
        assert g.shape == everything[name].shape and g.dtype == np.float64, name
        assert relative_error(g, central_differences(everything[name], loss)) < 1e-6, name
    # what the tags do not read does not reach the loss: shifting it leaves the loss bit-identical
    for name in set(params) - set(grads):
        everything[name] += 1.0
        assert loss() == value, name
    # the public, checked entry point computes the same
    public_value, public = st.loss_and_grads(params, config, everything["head.W"], everything["head.b"], tokens, tags)
    assert public_value == value and all(np.array_equal(public[n], grads[n]) for n in grads)


def test_loss_is_the_mean_cross_entropy_of_the_log_probabilities():
    config = _config(causal=True)
    rng = np.random.default_rng(3)
    params = enc.init_params(config, rng, dtype=np.float64)
    tagger = st.StateTagger(config, params, rng.normal(size=(8, 3)), rng.normal(size=3), [])
    tokens, tags = _batch(rng, config)
    logp = st.state_log_probabilities(tagger, tokens)
    scored = tags >= 0
    expected = -np.take_along_axis(logp, np.maximum(tags, 0)[:, :, None], axis=2)[:, :, 0][scored].mean()
    value, _ = st.loss_and_grads(params, config, tagger.W, tagger.b, tokens, tags)
    assert abs(value - expected) < 1e-12


def test_a_causal_tagger_reads_only_the_left():
    config = _config(causal=True)
    rng = np.random.default_rng(4)
    tagger = st.StateTagger(config, enc.init_params(config, rng, dtype=np.float64), rng.normal(size=(8, 3)),
                            np.zeros(3), [])
    tokens = rng.integers(0, 5, size=(2, 6))
    changed = tokens.copy()
    changed[:, 3:] = (changed[:, 3:] + 1) % 5
    a, b = st.state_log_probabilities(tagger, tokens), st.state_log_probabilities(tagger, changed)
    assert np.allclose(a[:, :3], b[:, :3], rtol=0, atol=1e-12) and not np.allclose(a[:, 3:], b[:, 3:])


def test_fine_tuning_trains_what_the_tags_read_and_copies():
    config = _config()
    params = enc.init_params(config, np.random.default_rng(0))
    before = {k: v.copy() for k, v in params.items()}
    tokens, tags = _batch(np.random.default_rng(1), config)
    tagger = st.fine_tune_states(params, config, tokens, tags, st.StateTaggerConfig(steps=3), 3)
    assert all(np.array_equal(params[n], before[n]) for n in params)
    changed = {n for n in params if not np.array_equal(params[n], tagger.params[n])}
    assert changed == set(params) - {"b_out"}
    again = st.fine_tune_states(params, config, tokens, tags, st.StateTaggerConfig(steps=3), 3)
    assert np.array_equal(again.W, tagger.W) and np.array_equal(again.losses, tagger.losses)


# ----------------------------------------------------------------------------- exact ceilings
def _enumerated(length):
    joint = enumerate_joint(HMM, length)
    tokens = np.indices(joint.shape).reshape(length, -1).T
    return tokens, joint.reshape(-1)


def test_left_only_ceiling_is_below_both_sides_exactly_and_the_tower_identity():
    tokens, weights = _enumerated(3)
    both, left = ch.max_posteriors(HMM, tokens)
    ceiling_both, ceiling_left = weights @ both, weights @ left           # exact expectations, per position
    assert np.all(ceiling_left <= ceiling_both + 1e-12)
    assert ceiling_both[0] - ceiling_left[0] > 0.01                      # position 1: the right context matters
    # the left-only Bayes tagger judged by the full posterior: E[P(s_i = argmax P(. | x_<=i) | x)] = E[max P(. | x_<=i)]
    guess = left_to_right(HMM, tokens).filtered.argmax(axis=2)
    assert np.allclose(weights @ ch.guess_mass(HMM, tokens, guess), ceiling_left, rtol=0, atol=1e-12)


def test_ceilings_meet_at_the_last_position_and_are_one_off_w():
    rng = np.random.default_rng(0)
    from mlm_book.hmm import sample
    _, tokens = sample(HMM, 200, 24, rng)
    both, left = ch.max_posteriors(HMM, tokens)
    assert np.max(np.abs(both[:, -1] - left[:, -1])) < 1e-12
    off = tokens != HMM.shared_token
    assert np.all(both[off] == 1.0) and np.all(left[off] == 1.0)
    guess = forward_backward(HMM.transition, HMM.initial, HMM.emission.T[tokens]).posterior.argmax(axis=2)
    assert np.all(ch.guess_mass(HMM, tokens, guess) <= both + 1e-15)
    c = ch.ceilings(HMM, tokens)
    assert c["left"]["w"] < c["both"]["w"] and abs(c["left"]["w_by_position"][0] - ch.first_position_ceiling()) < 1e-12
    assert abs(c["both"]["all"] - both.mean()) < 1e-15


# ----------------------------------------------------------------------------- bad input
def test_bad_input_is_refused_by_name():
    config = _config()
    params = enc.init_params(config, np.random.default_rng(0))
    tokens, tags = _batch(np.random.default_rng(1), config)
    settings = st.StateTaggerConfig(steps=2)
    with pytest.raises(ValueError, match="tags"):
        st.fine_tune_states(params, config, tokens, tags[:, :3], settings, 3)
    with pytest.raises(ValueError, match="tags"):
        st.fine_tune_states(params, config, tokens, np.full_like(tags, -1), settings, 3)
    with pytest.raises(ValueError, match="n_tags"):
        st.fine_tune_states(params, config, tokens, tags, settings, 1)
    with pytest.raises(ValueError, match="tokens"):
        st.state_features(params, config, np.full((1, 3), config.mask_id))
    with pytest.raises(TypeError, match="settings"):
        st.fine_tune_states(params, config, tokens, tags, {"steps": 2}, 3)
    with pytest.raises(ValueError, match="W"):
        st.loss_and_grads(params, config, np.zeros((7, 3)), np.zeros(3), tokens, tags)
    with pytest.raises(ValueError, match="batch_size"):
        st.StateTaggerConfig(batch_size=0)
    with pytest.raises(ValueError, match="guesses"):
        ch.guess_mass(HMM, [[0, 1]], [[0, HMM.n_states]])
    with pytest.raises(ValueError, match="tokens"):
        ch.ceilings(HMM, [[0, HMM.vocab_size]])
    with pytest.raises(TypeError, match="hmm"):
        ch.max_posteriors("hmm", [[0]])
    with pytest.raises(ValueError, match="count"):
        state_taggers.sentences(2**23, 0, 24)
    with pytest.raises(ValueError, match="seed"):
        state_taggers.book_run(99)
    with pytest.raises(ValueError, match="test_seed"):
        state_taggers.StateTaggerRun(state_taggers.book_run().bidirectional, state_taggers.book_run().left_to_right,
                                     test_seed=state_taggers.TRAIN_SEED)
    with pytest.raises(TypeError, match="study"):
        ch.summary_table("study")


def test_the_book_data_seeds_are_fresh():
    run = state_taggers.book_run()
    assert run.train_seed not in state_taggers.SEEDS and run.test_seed not in state_taggers.SEEDS
    assert run.left_to_right.seed == run.seed and run.left_to_right.causal


# ----------------------------------------------------------------------------- the book's taggers
@pytest.mark.book
def test_the_rules_get_the_verdicts_the_chapter_states():
    from mlm_book.ledger import verify
    for result in verify(claims=ch.CLAIMS):
        assert result.passed, (result.claim.id, result.value, result.verdict)


@pytest.mark.book
def test_no_tagger_beats_the_both_sides_ceiling_in_expectation():
    study = ch.results()
    for tagger in ch.TAGGERS:
        # the posterior mass of any guesses is at most the both-sides maximum on every sentence
        assert max(study.values(*tagger, "expected_w")) <= study.ceilings["both"]["w"] + 1e-12
