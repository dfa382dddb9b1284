"""Replaced-token detection: the discriminator's gradients, the joint step's gradients, the oracle's draws, the
FLOP count and bad input."""

from __future__ import annotations

import math

import numpy as np
import pytest

from mlm_book.hmm import default_hmm, sample
from mlm_book.nn import encoder as enc
from mlm_book.nn import replaced_tokens as rt
from mlm_book.nn.gradcheck import central_differences, relative_error
from mlm_book.nn.loop import TrainConfig

HMM = default_hmm()


def _config(**changes):
    return enc.EncoderConfig(**{"vocab_size": 5, "length": 6, "d_model": 8, "n_blocks": 2, "n_heads": 2, **changes})


@pytest.mark.parametrize("changes", [{}, {"tied": False}])
def test_discriminator_gradients_match_central_differences(changes):
    config = _config(**changes)
    rng = np.random.default_rng(3)
    params = enc.init_params(config, rng, dtype=np.float64)
    for name in params:                              # move the LayerNorms away from (1, 0) so every path matters
        params[name] += 0.1 * rng.normal(size=params[name].shape)
    everything = {**params, "w": rng.normal(size=8), "c": rng.normal(size=1)}
    tokens = rng.integers(0, config.vocab_size, size=(3, 5))
    replaced = rng.random((3, 5)) < 0.3

    def loss():
        return rt._disc_unchecked(everything, config, everything["w"], everything["c"], tokens, replaced)[0]

    value, grads = rt._disc_unchecked(everything, config, everything["w"], everything["c"], tokens, replaced)
    for name, g in grads.items():
        assert g.shape == everything[name].shape and g.dtype == np.float64, name
        assert relative_error(g, central_differences(everything[name], loss)) < 1e-6, name
    for name in set(params) - set(grads):            # b_out (and E_out) are not read
        everything[name] += 1.0
        assert loss() == value, name
    public_value, public = rt.discriminator_loss_and_grads(params, config, everything["w"], everything["c"], tokens,
                                                           replaced)
    assert public_value == value and all(np.array_equal(public[n], grads[n]) for n in grads)


def test_discriminator_loss_is_the_mean_binary_cross_entropy_over_every_position():
    config = _config()
    rng = np.random.default_rng(0)
    params = enc.init_params(config, rng, dtype=np.float64)
    w, c = rng.normal(size=8), np.array([0.3])
    tokens = rng.integers(0, 5, size=(2, 6))
    replaced = rng.random((2, 6)) < 0.5
    value, _ = rt.discriminator_loss_and_grads(params, config, w, c, tokens, replaced)
    x = enc.hidden_states(params, config, tokens)[-1].reshape(-1, 8)
    mu, var = x.mean(axis=1, keepdims=True), x.var(axis=1, keepdims=True)
    h = (x - mu) / np.sqrt(var + config.ln_eps) * params["ln_f.g"] + params["ln_f.b"]
    p = 1 / (1 + np.exp(-(h @ w + c)))
    y = replaced.reshape(-1)
    assert value == pytest.approx(float(-np.mean(np.where(y, np.log(p), np.log(1 - p)))), rel=1e-10)


def test_joint_step_trains_both_networks_and_the_total_weights_the_discriminator():
    disc = _config(vocab_size=25)
    gen = _config(vocab_size=25, d_model=4, n_heads=1)
    source = lambda b, rng: sample(HMM, b, 6, rng)[1]
    r = rt.train_rtd(disc, gen, TrainConfig(steps=4, batch_size=8, warmup=1), source, np.random.default_rng(1),
                     progress=False)
    assert np.allclose(r.losses["total"], r.losses["generator"] + rt.LAMBDA * r.losses["discriminator"])
    assert np.all((r.losses["replaced"] >= 0) & (r.losses["replaced"] <= 1))
    assert r.generator == gen and set(r.generator_params) == set(enc.param_names(gen))
    start = enc.init_params(disc, np.random.default_rng(1))
    assert np.array_equal(r.params["b_out"], start["b_out"])            # never read, never changed
    assert not np.array_equal(r.params["E"], start["E"])


def test_oracle_draws_follow_the_exact_posterior_and_keep_the_rest():
    V = HMM.vocab_size
    channel = rt.generator_channel(V)
    clean = np.tile(sample(HMM, 1, 8, np.random.default_rng(2))[1], (4000, 1))
    shown = clean.copy()
    shown[:, 3] = V
    filled = rt.oracle_replacements(HMM, channel, clean, shown, np.random.default_rng(5))
    assert np.array_equal(np.delete(filled, 3, axis=1), np.delete(clean, 3, axis=1))
    from mlm_book.channel import context_prediction
    q = context_prediction(HMM, channel, shown[:1])[0, 3]
    counts = np.bincount(filled[:, 3], minlength=V) / len(filled)
    assert np.max(np.abs(counts - q)) < 4 * math.sqrt(0.25 / len(filled))


def test_flop_count_adds_blocks_and_head_and_triples_the_forward():
    cfg = _config(vocab_size=25, length=24, d_model=32, n_heads=4)
    d, n = 32, 24
    block = 2 * n * (4 * d * d + 8 * d * d) + 4 * n * n * d
    assert rt.step_flops(cfg, 10, 24, 3.6, 25) == 3 * 10 * (2 * block + 2 * d * 25 * 3.6)
    assert rt.step_flops(cfg, 1, 24, 24, 1) < rt.step_flops(cfg, 1, 24, 3.6, 25)


def test_bad_input_is_refused_by_name():
    disc = _config(vocab_size=25)
    source = lambda b, rng: sample(HMM, b, 6, rng)[1]
    with pytest.raises(ValueError, match="generator must have the discriminator's vocabulary"):
        rt.train_rtd(disc, _config(vocab_size=24), TrainConfig(steps=2), source, np.random.default_rng(0))
    with pytest.raises(TypeError, match="generator"):
        rt.train_rtd(disc, "small", TrainConfig(steps=2), source, np.random.default_rng(0))
    with pytest.raises(ValueError, match="hmm must be given"):
        rt.train_rtd(disc, None, TrainConfig(steps=2), source, np.random.default_rng(0))
    with pytest.raises(ValueError, match="config.head"):
        rt.discriminator_loss_and_grads({}, _config(head="plain"), np.zeros(8), np.zeros(1), [[0]], [[False]])
    params = enc.init_params(disc, np.random.default_rng(0))
    with pytest.raises(ValueError, match="shown must hold real tokens"):
        rt.discriminator_loss_and_grads(params, disc, np.zeros(8), np.zeros(1), [[25]], [[False]])
    with pytest.raises(ValueError, match="w must be"):
        rt.discriminator_loss_and_grads(params, disc, np.zeros(7), np.zeros(1), [[0]], [[False]])
    with pytest.raises(ValueError, match="replaced must be"):
        rt.discriminator_loss_and_grads(params, disc, np.zeros(8), np.zeros(1), [[0]], [[0]])
    with pytest.raises(ValueError, match="channel must show every selected position"):
        rt.oracle_replacements(HMM, rt.generator_channel(25).__class__(25), [[0]], [[0]], np.random.default_rng(0))
    with pytest.raises(ValueError, match="channel.vocab_size"):
        rt.oracle_replacements(HMM, rt.generator_channel(24), [[0]], [[0]], np.random.default_rng(0))
    with pytest.raises(ValueError, match="predicted must be"):
        rt.step_flops(disc, 1, 6, -1, 1)
    with pytest.raises(ValueError, match="rho must be > 0"):
        rt.generator_channel(25, 0.0)


def test_every_objective_spends_the_masked_lms_compute_to_within_half_a_step():
    from mlm_book.artefacts import replaced_tokens as art
    budget = art.BASELINE_STEPS * art.step_cost("masked-lm")
    for objective in ("electra", "oracle"):
        run = art.RTDRun(objective, 1)
        assert abs(run.training().steps * art.step_cost(objective) - budget) <= art.step_cost(objective) / 2
        assert run.training().warmup == round(run.training().steps * 200 / 3000)
    assert art.step_cost("electra") > art.step_cost("oracle") > 0


def test_recovered_share_is_one_for_the_posterior_and_zero_for_the_constant():
    from mlm_book.artefacts.replaced_tokens import recovered_share
    rng = np.random.default_rng(0)
    posterior = rng.random(50)
    assert recovered_share(posterior, np.clip(posterior, 1e-9, 1 - 1e-9), 0.4) == pytest.approx(1.0, abs=1e-6)
    assert recovered_share(posterior, np.full(50, 0.4), 0.4) == pytest.approx(0.0, abs=1e-12)
    with pytest.raises(ValueError, match="prior"):
        recovered_share(posterior, posterior, 1.0)


@pytest.mark.book
def test_the_rules_get_the_verdicts_the_chapter_states():
    from mlm_book.experiments import ch10_replaced_tokens as ch
    from mlm_book.ledger import verify
    results = verify(claims=ch.CLAIMS)
    assert [r.claim.id for r in results] == ["D-17a", "D-17b", "D-17c", "D-17d"]
    assert all(r.passed for r in results), [(r.claim.id, r.verdict) for r in results]
    assert set(ch.STATED_BEFORE_RUN) == {r.claim.id for r in results}
