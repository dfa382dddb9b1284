"""Tests of the NumPy encoder: gradients, the selected-rows loss, structure, Adam, bad input."""

from __future__ import annotations

import numpy as np
import pytest

from mlm_book.channel import Channel
from mlm_book.nn import adam as adam_module
from mlm_book.nn import encoder as enc
from mlm_book.nn import gradcheck, layers
from mlm_book.nn import train as train_module
from mlm_book.nn.loop import TrainConfig, learning_rate
from mlm_book.nn.runtime import blas_threads, tune_allocator

SMALL = enc.EncoderConfig(vocab_size=6, length=5, d_model=8, n_blocks=2, n_heads=2)


def perturbed_params(config=SMALL, seed=0):
    """float64 parameters moved away from their special initial values (gains 1, biases 0)."""
    rng = np.random.default_rng(seed)
    params = enc.init_params(config, rng, dtype=np.float64)
    for value in params.values():
        value += rng.normal(0.0, 0.3, size=value.shape)
    return params


def random_batch(config=SMALL, batch=3, seed=1):
    rng = np.random.default_rng(seed)
    shown = rng.integers(0, config.input_vocab_size, size=(batch, config.length))
    targets = rng.integers(0, config.vocab_size, size=(batch, config.length))
    selected = rng.random((batch, config.length)) < 0.4
    selected[0, 0] = True
    return shown, targets, selected


def full_forward_loss(params, config, shown, targets, selected):
    """The loss recomputed from every position's logits, in float64 log-sum-exp."""
    z = enc.logits(params, config, shown).astype(np.float64)[selected]
    y = targets[selected]
    top = z.max(axis=1, keepdims=True)
    lse = np.log(np.exp(z - top).sum(axis=1)) + top[:, 0]
    return float(np.mean(lse - z[np.arange(len(y)), y]))


# --------------------------------------------------------------------------- gradients
@pytest.mark.parametrize("config", [SMALL, enc.EncoderConfig(vocab_size=4, length=4, d_model=6, n_blocks=1, n_heads=3)])
def test_gradient_check_every_tensor_and_the_input(config):
    result = gradcheck.gradient_check(config, np.random.default_rng(3), batch=3)
    assert set(result.errors) == set(enc.param_names(config)) | {"x0"}
    assert result.max_error <= 1e-6, result.errors


PADDED = enc.EncoderConfig(vocab_size=6, length=5, d_model=8, n_blocks=2, n_heads=2, pad=True)


def test_gradient_check_with_padded_keys():
    result = gradcheck.gradient_check(PADDED, np.random.default_rng(4), batch=3)
    assert result.max_error <= 1e-6, result.errors


def test_a_padded_slot_reaches_no_other_position():
    # Whatever a [PAD] slot's row holds, the other positions' outputs and hidden states are unchanged.
    params = perturbed_params(PADDED, seed=2)
    pad = PADDED.pad_id
    shown = np.array([[1, 2, 3, pad, pad], [pad, 0, 6, 4, 5]])
    z = enc.logits(params, PADDED, shown)
    moved = {k: v.copy() for k, v in params.items()}
    moved["E"][pad] += np.linspace(-10.0, 10.0, 8)   # the [PAD] embedding (not constant: LayerNorm removes that)
    moved["P"][3] += np.linspace(5.0, -5.0, 8)       # a position only padded slots hold in the first row ...
    z_moved = enc.logits(moved, PADDED, shown)
    valid = shown != pad
    # ... but the second row holds a real token at position 3, so only the first row is comparable there
    assert np.allclose(z[0][valid[0]], z_moved[0][valid[0]], atol=1e-9)
    h = enc.hidden_states(params, PADDED, shown)
    h_moved = enc.hidden_states({**params, "E": moved["E"]}, PADDED, shown)
    for a, b in zip(h, h_moved):
        assert np.allclose(a[valid], b[valid], atol=1e-9)
    # without the mask the same change moves them: the test can fail
    unmasked = pytest.MonkeyPatch()
    unmasked.setattr(enc, "key_bias", lambda *args: None)
    try:
        assert not np.allclose(enc.logits(params, PADDED, shown)[0][valid[0]],
                               enc.logits(moved, PADDED, shown)[0][valid[0]], atol=1e-6)
    finally:
        unmasked.undo()


def test_training_never_selects_or_corrupts_padded_slots():
    rng = np.random.default_rng(0)
    pad = PADDED.pad_id
    clean = rng.integers(0, PADDED.vocab_size, size=(4000, 5))
    clean[:, :2] = pad
    shown, selected = train_module.corrupt_batch(Channel(vocab_size=6, rho=0.5), clean, PADDED, rng)
    assert not selected[:, :2].any() and (shown[:, :2] == pad).all()
    rate = selected[:, 2:].mean()
    assert abs(rate - 0.5) < 4 * np.sqrt(0.25 / 12000)     # the other slots keep their selection rate


CAUSAL = enc.EncoderConfig(vocab_size=6, length=5, d_model=8, n_blocks=2, n_heads=2, causal=True)


@pytest.mark.parametrize("config", [CAUSAL, enc.EncoderConfig(vocab_size=6, length=5, d_model=8, n_blocks=2,
                                                              n_heads=2, causal=True, pad=True)])
def test_gradient_check_under_the_causal_mask(config):
    result = gradcheck.gradient_check(config, np.random.default_rng(5), batch=3)
    assert result.max_error <= 1e-6, result.errors


@pytest.mark.parametrize("config", [CAUSAL, enc.EncoderConfig(vocab_size=6, length=5, d_model=8, n_blocks=2,
                                                              n_heads=2, causal=True, pad=True)])
def test_under_the_causal_mask_no_position_reads_a_later_one(config):
    params = perturbed_params(config, seed=3)
    rng = np.random.default_rng(6)
    shown = rng.integers(0, config.vocab_size + 1, size=(4, 5))
    z = enc.logits(params, config, shown)
    hidden = enc.hidden_states(params, config, shown)
    for cut in range(1, 5):
        moved = shown.copy()
        moved[:, cut:] = (moved[:, cut:] + 1) % (config.vocab_size + 1)    # every later token changes
        assert np.allclose(z[:, :cut], enc.logits(params, config, moved)[:, :cut], atol=1e-10)
        for a, b in zip(hidden, enc.hidden_states(params, config, moved)):
            assert np.allclose(a[:, :cut], b[:, :cut], atol=1e-10)
        # the bidirectional twin of the same parameters sees the change: the test can fail
        twin = enc.EncoderConfig(**{**config.to_dict(), "causal": False})
        assert not np.allclose(enc.logits(params, twin, shown)[:, :cut], enc.logits(params, twin, moved)[:, :cut])


PLAIN = enc.EncoderConfig(vocab_size=6, length=5, d_model=8, n_blocks=2, n_heads=2, head="plain")
UNTIED = enc.EncoderConfig(vocab_size=6, length=5, d_model=8, n_blocks=2, n_heads=2, tied=False)
PLAIN_UNTIED = enc.EncoderConfig(vocab_size=6, length=5, d_model=8, n_blocks=1, n_heads=2, head="plain", tied=False)


@pytest.mark.parametrize("config", [PLAIN, UNTIED, PLAIN_UNTIED])
def test_gradient_check_of_the_other_heads(config):
    result = gradcheck.gradient_check(config, np.random.default_rng(5), batch=3)
    assert result.max_error <= 1e-6, result.errors


@pytest.mark.parametrize("config", [PLAIN, UNTIED, PLAIN_UNTIED])
def test_the_other_heads_compute_their_formula(config):
    params = perturbed_params(config, seed=8)
    shown = np.random.default_rng(9).integers(0, config.vocab_size + 1, size=(3, 5))
    x_last = enc.hidden_states(params, config, shown)[-1].reshape(-1, config.d_model)
    table = params["E"][:config.vocab_size] if config.tied else params["E_out"]
    if config.head == "plain":
        expected = x_last @ table.T / np.sqrt(config.d_model)
    else:
        y = (x_last - x_last.mean(-1, keepdims=True)) / np.sqrt(x_last.var(-1, keepdims=True) + config.ln_eps)
        expected = (y * params["ln_f.g"] + params["ln_f.b"]) @ table.T / np.sqrt(config.d_model) + params["b_out"]
    assert np.allclose(enc.logits(params, config, shown).reshape(-1, config.vocab_size), expected, atol=1e-10)
    names = set(enc.param_names(config))
    assert ("E_out" in names) == (not config.tied) and ("b_out" in names) == (config.head == "normalised")
    # the untied table is the one the head reads: moving it moves the logits, and E[:V] then only feeds the input
    if not config.tied:
        moved = {**params, "E_out": params["E_out"] + 1.0}
        assert not np.allclose(enc.logits(moved, config, shown), enc.logits(params, config, shown))


def test_the_default_head_keeps_its_parameters_and_draws():
    # an untied encoder draws every shared array exactly as the tied one at the same seed
    tied = enc.init_params(enc.EncoderConfig(**{**UNTIED.to_dict(), "tied": True}), np.random.default_rng(0))
    untied = enc.init_params(UNTIED, np.random.default_rng(0))
    assert all(np.array_equal(tied[name], untied[name]) for name in tied)
    assert "head" not in UNTIED.to_dict() and UNTIED.to_dict()["tied"] is False
    with pytest.raises(ValueError, match="head must be one of"):
        enc.EncoderConfig(vocab_size=6, length=5, head="linear")
    with pytest.raises(TypeError, match="tied must be a bool"):
        enc.EncoderConfig(vocab_size=6, length=5, tied=1)


def test_causal_loss_on_selected_rows_equals_the_full_forward():
    params = perturbed_params(CAUSAL, seed=4)
    shown, targets, selected = random_batch(CAUSAL, batch=4, seed=7)
    value, _ = enc.loss_and_grads(params, CAUSAL, shown, targets, selected)
    assert abs(value - full_forward_loss(params, CAUSAL, shown, targets, selected)) < 1e-12


def test_next_token_batches_shift_the_sequence_and_skip_padding():
    objective = train_module.NextToken(vocab_size=6)
    clean = np.array([[1, 2, 3, 4, 5], [7, 7, 0, 1, 7]])        # 7 is [PAD] for vocab_size 6 with pad
    shown, targets, selected = objective.batch(clean, pad_id=7)
    assert (shown == clean).all()
    assert selected.tolist() == [[True, True, True, True, False], [False, False, True, False, False]]
    assert targets[0, :4].tolist() == [2, 3, 4, 5] and targets[1, 2] == 1
    assert (targets[~selected] == 0).all()


def test_next_token_training_copies_without_the_mask_and_cannot_with_it():
    # i.i.d. uniform tokens: nothing on the left predicts the next one, so a causal model
    # stays at log V while the bidirectional one reads the answer one slot to the right
    source = lambda b, rng: rng.integers(0, 6, size=(b, 5))
    config = TrainConfig(steps=300, batch_size=16, lr=1e-2, warmup=20)
    losses = {}
    for causal in (False, True):
        cfg = enc.EncoderConfig(vocab_size=6, length=5, d_model=16, n_blocks=1, n_heads=2, causal=causal)
        result = train_module.train(cfg, config, source, train_module.NextToken(vocab_size=6),
                                    np.random.default_rng(0), progress=False)
        losses[causal] = result.losses[-50:].mean()
    assert losses[False] < 0.2
    assert abs(losses[True] - np.log(6)) < 0.1


def test_gradient_check_catches_a_wrong_backward(monkeypatch):
    # A check that cannot fail proves nothing: break the LayerNorm gain gradient.
    original = layers.layer_norm_backward

    def broken(dy, cache_):
        dx, grads = original(dy, cache_)
        return dx, {"g": grads["g"] * 1.01, "b": grads["b"]}

    monkeypatch.setattr(layers, "layer_norm_backward", broken)
    result = gradcheck.gradient_check(SMALL, np.random.default_rng(3), batch=2)
    assert result.errors["ln_f.g"] > 1e-3


def test_faster_mlp_backward_matches_the_reference():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(7, 5))
    W_1, b_1 = rng.normal(size=(5, 20)), rng.normal(size=20)
    W_2, b_2 = rng.normal(size=(20, 5)), rng.normal(size=5)
    dy = rng.normal(size=(7, 5))
    _, cache_ = layers.mlp_forward(x, W_1, b_1, W_2, b_2)
    dx, grads = layers.mlp_backward(dy, cache_)
    dx_ref, grads_ref = layers.mlp_backward_reference(dy, x, W_1, b_1, W_2, b_2)
    assert np.max(np.abs(dx - dx_ref)) < 1e-12
    for name in grads:
        assert np.max(np.abs(grads[name] - grads_ref[name])) < 1e-12


# --------------------------------------------------------------------------- the selected-rows loss
@pytest.mark.parametrize("empty_row", [False, True])
def test_selected_rows_loss_equals_the_full_forward_loss(empty_row):
    params = perturbed_params()
    shown, targets, selected = random_batch()
    if empty_row:
        selected[1] = False
    assert abs(enc.loss(params, SMALL, shown, targets, selected)
               - full_forward_loss(params, SMALL, shown, targets, selected)) <= 1e-12


@pytest.mark.parametrize("empty_row", [False, True])
def test_selected_rows_gradients_equal_the_full_forward_gradients(empty_row):
    params = perturbed_params()
    shown, targets, selected = random_batch()
    if empty_row:                     # a sequence with no selected position still feeds keys and values
        selected[1] = False
    _, grads = enc.loss_and_grads(params, SMALL, shown, targets, selected)
    # Full forward at every position; the loss gradient is zero at unselected rows.
    z, cache_ = enc.forward(params, SMALL, shown)
    _, d_sel = layers.cross_entropy_forward(z[selected.reshape(-1)], targets[selected])
    dz = np.zeros_like(z)
    dz[selected.reshape(-1)] = d_sel
    full = enc.backward(dz, cache_)
    for name in grads:
        assert np.max(np.abs(grads[name] - full[name])) <= 1e-12, name


# --------------------------------------------------------------------------- structure
def test_permuting_the_batch_permutes_the_outputs():
    params = perturbed_params()
    shown, _, _ = random_batch(batch=5)
    order = np.array([3, 0, 4, 1, 2])
    out = enc.logits(params, SMALL, shown)
    assert np.max(np.abs(enc.logits(params, SMALL, shown[order]) - out[order])) <= 1e-12
    hidden = enc.hidden_states(params, SMALL, shown)
    hidden_perm = enc.hidden_states(params, SMALL, shown[order])
    for layer, layer_perm in zip(hidden, hidden_perm):
        assert np.max(np.abs(layer_perm - layer[order])) <= 1e-12


def test_every_output_depends_on_every_position():
    # No causal mask: changing the token at j changes the logits at every i, before and after j.
    params = perturbed_params()
    shown, _, _ = random_batch(batch=1)
    base = enc.logits(params, SMALL, shown)[0]
    for j in range(SMALL.length):
        changed = shown.copy()
        changed[0, j] = (changed[0, j] + 1) % SMALL.input_vocab_size
        delta = np.abs(enc.logits(params, SMALL, changed)[0] - base).max(axis=1)
        assert np.all(delta > 1e-8), (j, delta)


def test_hidden_states_layers():
    params = perturbed_params()
    shown, _, _ = random_batch(batch=2)
    hidden = enc.hidden_states(params, SMALL, shown)
    assert len(hidden) == SMALL.n_blocks + 1
    assert np.allclose(hidden[0], params["E"][shown] + params["P"][None], atol=1e-14, rtol=0)
    # the last layer is the residual stream before the final LayerNorm: the head maps it to the logits
    z, _ = layers.head_forward(hidden[-1].reshape(-1, SMALL.d_model), params["ln_f.g"], params["ln_f.b"],
                               params["E"][:SMALL.vocab_size], params["b_out"], SMALL.ln_eps)
    assert np.max(np.abs(z - enc.logits(params, SMALL, shown).reshape(z.shape))) <= 1e-12


def test_softmax_survives_a_row_far_below_the_rest():
    s = np.random.default_rng(0).normal(size=(1, 2, 3, 3)).astype(np.float32)
    s[0, 1, 2] -= 1000.0                     # exp underflows for this row under a global shift
    a = layers._softmax_last(s.copy())
    e = np.exp(s - s.max(axis=-1, keepdims=True))
    assert np.all(np.isfinite(a))
    assert np.allclose(a, e / e.sum(axis=-1, keepdims=True), atol=1e-6)


# --------------------------------------------------------------------------- Adam
def test_adam_matches_a_hand_computed_two_steps():
    theta = {"w": np.array([1.0, -2.0]), "b": np.array([0.5])}
    opt = adam_module.Adam(theta, adam_module.AdamConfig(beta1=0.9, beta2=0.999, eps=1e-8))
    g1 = {"w": np.array([0.2, -0.4]), "b": np.array([1.0])}
    g2 = {"w": np.array([-0.1, 0.3]), "b": np.array([2.0])}
    opt.step(g1, lr=0.01)
    opt.step(g2, lr=0.02)
    expected = {}
    for name, start in (("w", np.array([1.0, -2.0])), ("b", np.array([0.5]))):
        m = 0.1 * g1[name]
        v = 0.001 * g1[name] ** 2
        p = start - 0.01 * (m / 0.1) / (np.sqrt(v / 0.001) + 1e-8)
        m = 0.9 * m + 0.1 * g2[name]
        v = 0.999 * v + 0.001 * g2[name] ** 2
        p = p - 0.02 * (m / (1 - 0.9 ** 2)) / (np.sqrt(v / (1 - 0.999 ** 2)) + 1e-8)
        expected[name] = p
    assert not opt.fused
    for name in theta:
        assert np.max(np.abs(theta[name] - expected[name])) < 1e-15


def test_adamw_step_matches_a_hand_computation():
    # One step of decoupled decay: theta <- theta - lr * lam * theta - lr * mhat / (sqrt(vhat) + eps),
    # applied to the decayed parameter "w" only; the bias "b" gets the plain Adam step.
    theta = {"w": np.array([1.0, -2.0]), "b": np.array([0.5])}
    opt = adam_module.Adam(theta, adam_module.AdamConfig(weight_decay=0.1), decayed=["w"])
    grads = {"w": np.array([0.2, -0.4]), "b": np.array([1.0])}
    opt.step(grads, lr=0.01)
    # after bias correction the first step's direction is g / (|g| + eps) = sign(g) (up to eps)
    w_expected = np.array([1.0, -2.0]) * (1 - 0.01 * 0.1) - 0.01 * np.array([0.2, -0.4]) / (np.array([0.2, 0.4]) + 1e-8)
    b_expected = 0.5 - 0.01 * 1.0 / (1.0 + 1e-8)
    assert np.max(np.abs(theta["w"] - w_expected)) < 1e-15
    assert abs(theta["b"][0] - b_expected) < 1e-15
    assert opt.decayed == frozenset({"w"})


def test_zero_decay_is_plain_adam_and_default_decays_everything():
    plain, zero = {"w": np.array([1.0])}, {"w": np.array([1.0])}
    adam_module.Adam(plain).step({"w": np.array([0.3])}, lr=0.1)
    adam_module.Adam(zero, adam_module.AdamConfig(weight_decay=0.0), decayed=["w"]).step({"w": np.array([0.3])}, 0.1)
    assert plain["w"][0] == zero["w"][0]
    everything = {"w": np.array([2.0]), "b": np.array([2.0])}
    opt = adam_module.Adam(everything, adam_module.AdamConfig(weight_decay=0.5))
    opt.step({"w": np.array([0.0]), "b": np.array([0.0])}, lr=0.1)  # zero gradient: only the decay acts
    assert np.allclose([everything["w"][0], everything["b"][0]], 2.0 * (1 - 0.05), rtol=0, atol=1e-15)


def test_fused_adamw_equals_per_tensor_adamw():
    fused = enc.init_params(SMALL, np.random.default_rng(0), dtype=np.float64)
    separate = {k: v.copy() for k, v in fused.items()}
    config = adam_module.AdamConfig(weight_decay=0.05)
    names = enc.decayed_names(SMALL)
    a, b = adam_module.Adam(fused, config, decayed=names), adam_module.Adam(separate, config, decayed=names)
    assert a.fused and not b.fused
    rng = np.random.default_rng(1)
    for _ in range(3):
        grads = {k: rng.normal(size=v.shape) for k, v in fused.items()}
        a.step(grads, 1e-2)
        b.step(grads, 1e-2)
    for name in fused:  # (1 - s) p and p - s p differ by rounding only
        assert np.max(np.abs(fused[name] - separate[name])) < 1e-14


def test_decayed_names_are_tables_and_matrices():
    names = enc.decayed_names(SMALL)
    assert {"E", "P"} <= set(names)
    assert all(n in ("E", "P") or n.rsplit(".", 1)[-1].startswith("W_") for n in names)
    exempt = set(enc.param_names(SMALL)) - set(names)
    assert exempt and all(n.endswith((".g", ".b")) or n.rsplit(".", 1)[-1].startswith("b_") for n in exempt)


def test_token_init_std_scales_only_the_token_table():
    base = enc.EncoderConfig(vocab_size=25, length=24, d_model=32, n_blocks=2, n_heads=4)
    unit = enc.EncoderConfig(vocab_size=25, length=24, d_model=32, n_blocks=2, n_heads=4, token_init_std=1.0)
    p0, p1 = enc.init_params(base, np.random.default_rng(0)), enc.init_params(unit, np.random.default_rng(0))
    # same draws, E scaled by 1 / 0.02 (float32 rounding of the two products)
    assert np.allclose(p1["E"], p0["E"] / 0.02, rtol=1e-6, atol=0)
    assert all(np.array_equal(p0[k], p1[k]) for k in p0 if k != "E")
    assert 0.9 < float(p1["E"].std()) < 1.1  # 26 x 32 draws: the standard error of the std is about 0.03


def test_fused_adam_equals_per_tensor_adam():
    fused = enc.init_params(SMALL, np.random.default_rng(0), dtype=np.float64)
    separate = {k: v.copy() for k, v in fused.items()}
    a, b = adam_module.Adam(fused), adam_module.Adam(separate)
    assert a.fused and not b.fused
    rng = np.random.default_rng(1)
    for _ in range(3):
        grads = {k: rng.normal(size=v.shape) for k, v in fused.items()}
        a.step(grads, 1e-2)
        b.step(grads, 1e-2)
    for name in fused:
        assert np.max(np.abs(fused[name] - separate[name])) < 1e-15


def test_learning_rate_schedule():
    cfg = TrainConfig(steps=300, lr=1e-2, warmup=100, final_lr_fraction=0.1)
    rates = [learning_rate(cfg, s) for s in range(cfg.steps)]
    assert rates[99] == pytest.approx(1e-2) and rates[-1] == pytest.approx(1e-3)
    assert all(x <= y for x, y in zip(rates[:100], rates[1:101]))      # warm-up rises
    assert all(x >= y for x, y in zip(rates[100:], rates[101:]))       # then decays


# --------------------------------------------------------------------------- training and cache
TINY = enc.EncoderConfig(vocab_size=3, length=4, d_model=8, n_blocks=1, n_heads=2)
TINY_TRAIN = TrainConfig(steps=30, batch_size=4, lr=1e-2, warmup=5)


def tiny_source(batch, rng):
    return rng.integers(0, 3, size=(batch, 4))


def test_training_is_reproducible_and_cached(tmp_path):
    channel = Channel(vocab_size=3, rho=0.5)
    first = train_module.cached_training("tiny", TINY, TINY_TRAIN, tiny_source, channel, {"source": "uniform"},
                                         directory=tmp_path, progress=False)
    again = train_module.train(TINY, TINY_TRAIN, tiny_source, channel, np.random.default_rng(TINY_TRAIN.seed),
                               progress=False)
    loaded = train_module.cached_training("tiny", TINY, TINY_TRAIN, tiny_source, channel, {"source": "uniform"},
                                          directory=tmp_path, progress=False)
    assert len(list(tmp_path.glob("tiny-*.npz"))) == 1
    assert np.array_equal(first.losses, again.losses) and np.array_equal(loaded.losses, again.losses)
    for name in again.params:
        assert np.array_equal(loaded.params[name], again.params[name])
    assert adam_module.Adam(loaded.params).fused


def test_nan_parameters_from_the_cache_are_refused(tmp_path, monkeypatch):
    def diverged(encoder_config, train_config, source, channel, rng, progress=None):
        params = enc.init_params(encoder_config, rng)
        result = train_module.TrainResult(encoder_config, train_config, params, np.zeros(train_config.steps), 0.0)
        params["P"][0, 0] = np.nan  # after the record's own check: the diverged run's arrays reach the store
        return result

    monkeypatch.setattr(train_module, "train", diverged)
    with pytest.raises(ValueError, match=r"params loaded from cache entry 'tiny'\['P'\] contains NaN"):
        train_module.cached_training("tiny", TINY, TINY_TRAIN, tiny_source, Channel(vocab_size=3, rho=0.5),
                                     {"source": "uniform"}, directory=tmp_path, progress=False)


def test_training_stops_on_a_non_finite_loss():
    bad = TrainConfig(steps=50, batch_size=4, lr=1e30, warmup=1)
    with pytest.raises(FloatingPointError, match="step"), np.errstate(all="ignore"):
        train_module.train(TINY, bad, tiny_source, Channel(vocab_size=3, rho=0.5), np.random.default_rng(0),
                           progress=False)


def test_runtime_helpers():
    assert isinstance(tune_allocator(), bool)
    with blas_threads(1):
        assert float((np.ones((3, 3)) @ np.ones(3))[0]) == 3.0
    with pytest.raises(ValueError, match="count"):
        with blas_threads(0):
            pass


# --------------------------------------------------------------------------- bad input
@pytest.fixture
def params():
    return perturbed_params()


def test_bad_tokens(params):
    shown, targets, selected = random_batch()
    with pytest.raises(ValueError, match="shown must be token ids in"):
        enc.logits(params, SMALL, shown + SMALL.input_vocab_size)
    with pytest.raises(ValueError, match="shown must be token ids in"):
        enc.logits(params, SMALL, shown - SMALL.input_vocab_size)
    with pytest.raises(ValueError, match="shown must have 2 dimension"):
        enc.logits(params, SMALL, shown[0])
    with pytest.raises(TypeError, match="shown must hold integers"):
        enc.logits(params, SMALL, shown.astype(float))
    with pytest.raises(ValueError, match="longer than the position table"):
        enc.logits(params, SMALL, np.zeros((1, SMALL.length + 1), dtype=int))
    with pytest.raises(ValueError, match="tokens must be token ids"):
        enc.hidden_states(params, SMALL, shown + 10)


def test_bad_selection_and_targets(params):
    shown, targets, selected = random_batch()
    with pytest.raises(ValueError, match="selected must select at least one position"):
        enc.loss_and_grads(params, SMALL, shown, targets, np.zeros_like(selected))
    with pytest.raises(TypeError, match="selected must be a boolean array"):
        enc.loss(params, SMALL, shown, targets, selected.astype(int))
    with pytest.raises(ValueError, match="selected must have the shape of shown"):
        enc.loss(params, SMALL, shown, targets, selected[:, :2])
    with pytest.raises(ValueError, match="targets must have the shape of shown"):
        enc.loss(params, SMALL, shown, targets[:1], selected)
    bad_targets = targets.copy()
    bad_targets[0, 0] = SMALL.mask_id          # [MASK] is never a target
    with pytest.raises(ValueError, match=r"targets at selected positions .*\[MASK\] is never a target"):
        enc.loss(params, SMALL, shown, bad_targets, selected)
    with pytest.raises(TypeError, match="targets must hold integers"):
        enc.loss(params, SMALL, shown, targets.astype(float), selected)


def test_bad_params(params):
    shown, _, _ = random_batch()
    broken = dict(params)
    broken["E"] = params["E"][:, :4]
    with pytest.raises(ValueError, match=r"params\['E'\] must have shape"):
        enc.logits(broken, SMALL, shown)
    missing = {k: v for k, v in params.items() if k != "b_out"}
    with pytest.raises(ValueError, match="missing \\['b_out'\\]"):
        enc.logits(missing, SMALL, shown)
    nan = {k: v.copy() for k, v in params.items()}
    nan["blocks.1.mlp.W_2"][0, 0] = np.nan
    with pytest.raises(ValueError, match=r"params\['blocks.1.mlp.W_2'\] contains NaN"):
        enc.predict_proba(nan, SMALL, shown)
    with pytest.raises(TypeError, match="params must be a mapping"):
        enc.logits([1, 2], SMALL, shown)
    ints = dict(params)
    ints["b_out"] = np.zeros(SMALL.vocab_size, dtype=int)
    with pytest.raises(TypeError, match=r"params\['b_out'\] must be float32 or float64"):
        enc.logits(ints, SMALL, shown)


def test_bad_configs():
    with pytest.raises(ValueError, match="n_heads must divide d_model"):
        enc.EncoderConfig(vocab_size=5, length=4, d_model=10, n_heads=3)
    with pytest.raises(ValueError, match="vocab_size must be an integer >= 1"):
        enc.EncoderConfig(vocab_size=0, length=4)
    with pytest.raises(TypeError, match="length must be an integer"):
        enc.EncoderConfig(vocab_size=5, length=4.0)
    with pytest.raises(ValueError, match="init_std"):
        enc.EncoderConfig(vocab_size=5, length=4, init_std=float("nan"))
    with pytest.raises(ValueError, match="token_init_std"):
        enc.EncoderConfig(vocab_size=5, length=4, token_init_std=0.0)
    with pytest.raises(ValueError, match="weight_decay"):
        TrainConfig(weight_decay=-0.01)
    with pytest.raises(ValueError, match="weight_decay"):
        adam_module.AdamConfig(weight_decay=float("inf"))
    with pytest.raises(ValueError, match="lr must be a positive number"):
        TrainConfig(lr=-1.0)
    with pytest.raises(ValueError, match="beta2"):
        TrainConfig(beta2=1.0)
    with pytest.raises(ValueError, match="dtype"):
        TrainConfig(dtype="float16")
    with pytest.raises(TypeError, match="dtype must be float32 or float64"):
        enc.init_params(SMALL, np.random.default_rng(0), dtype=np.int32)
    with pytest.raises(TypeError, match="rng must be a numpy.random.Generator"):
        enc.init_params(SMALL, 0)


def test_bad_training_arguments():
    with pytest.raises(ValueError, match="channel.vocab_size"):
        train_module.train(TINY, TINY_TRAIN, tiny_source, Channel(vocab_size=4), np.random.default_rng(0))
    with pytest.raises(TypeError, match="channel must be"):
        train_module.train(TINY, TINY_TRAIN, tiny_source, "bert", np.random.default_rng(0))
    with pytest.raises(TypeError, match="rng must be"):
        train_module.train(TINY, TINY_TRAIN, tiny_source, Channel(vocab_size=3), 0)
    with pytest.raises(TypeError, match="source must be callable"):
        train_module.train(TINY, TINY_TRAIN, None, Channel(vocab_size=3), np.random.default_rng(0))
    with pytest.raises(ValueError, match=r"source\(\.\.\.\) tokens has length 5"):
        train_module.train(TINY, TINY_TRAIN, lambda b, rng: np.zeros((b, 5), dtype=int), Channel(vocab_size=3),
                           np.random.default_rng(0), progress=False)
    with pytest.raises(ValueError, match="grads must have exactly"):
        adam_module.Adam({"w": np.zeros(2)}).step({"v": np.zeros(2)}, 0.1)
    with pytest.raises(ValueError, match="params must hold at least one array"):
        adam_module.Adam({})
    with pytest.raises(ValueError, match="decayed names parameters that do not exist"):
        adam_module.Adam({"w": np.zeros(2)}, decayed=["v"])
    with pytest.raises(TypeError, match="decayed must be an iterable"):
        adam_module.Adam({"w": np.zeros(2)}, decayed="w")


def test_central_differences_names_bad_arguments_and_restores_the_array():
    from mlm_book.nn.gradcheck import central_differences
    x = np.array([[1.0, -2.0], [0.5, 3.0]])
    grad = central_differences(x, lambda: float((x ** 3).sum()))
    assert np.allclose(grad, 3 * x ** 2, atol=1e-8)        # cubic: truncation error h^2 = 1e-10
    assert x.tolist() == [[1.0, -2.0], [0.5, 3.0]]
    with pytest.raises(TypeError, match="array must be a float numpy array"):
        central_differences([1.0, 2.0], lambda: 0.0)
    with pytest.raises(TypeError, match="array must be a float numpy array"):
        central_differences(np.arange(3), lambda: 0.0)
    with pytest.raises(ValueError, match="array must be writeable"):
        central_differences(x.T, lambda: 0.0)
    with pytest.raises(TypeError, match="evaluate must be a callable"):
        central_differences(x, 3.0)
    with pytest.raises(ValueError, match="h must be a step"):
        central_differences(x, lambda: 0.0, h=0.0)


def test_attention_weights_are_the_softmax_of_the_first_block_scores():
    # recomputed by hand from the first block's LayerNorm and fused projection
    config = enc.EncoderConfig(vocab_size=6, length=5, d_model=8, n_blocks=2, n_heads=2, causal=True)
    params = perturbed_params(config, seed=8)
    shown = np.random.default_rng(9).integers(0, 7, size=(3, 5))
    weights = enc.attention_weights(params, config, shown)
    x0 = params["E"][shown] + params["P"][:5]
    mu, var = x0.mean(-1, keepdims=True), x0.var(-1, keepdims=True)
    y = (x0 - mu) / np.sqrt(var + config.ln_eps) * params["blocks.0.ln1.g"] + params["blocks.0.ln1.b"]
    qkv = y @ params["blocks.0.attn.W_qkv"] + params["blocks.0.attn.b_qkv"]
    for head in range(2):
        q, k = qkv[..., 4 * head:4 * head + 4], qkv[..., 8 + 4 * head:8 + 4 * head + 4]
        scores = q @ k.transpose(0, 2, 1) / 2.0
        scores = np.where(np.tri(5, dtype=bool), scores, -np.inf)
        expected = np.exp(scores - scores.max(-1, keepdims=True))
        expected /= expected.sum(-1, keepdims=True)
        assert np.allclose(weights[0, :, head], expected, atol=1e-12)
    assert weights.shape == (2, 3, 2, 5, 5) and np.allclose(weights.sum(-1), 1.0)
