"""LoRA (mlm_book.nn.lora): the factors' backward pass against central differences, the counts, what trains."""

from __future__ import annotations

import numpy as np
import pytest

from mlm_book.nn import encoder as enc
from mlm_book.nn import encoder_finetune as eft
from mlm_book.nn import lora
from mlm_book.nn.gradcheck import central_differences, relative_error


def _tiny(rank=2, targets=("attn.W_qkv", "attn.W_o"), alpha=None):
    cfg = enc.EncoderConfig(vocab_size=6, length=5, d_model=8, n_blocks=2, n_heads=2, pad=True)
    params = enc.init_params(cfg, np.random.default_rng(0), dtype=np.float64)
    rng = np.random.default_rng(1)
    params["head.W"] = rng.normal(0, 0.5, size=(8, 3))
    params["head.b"] = rng.normal(0, 0.5, size=3)
    config = lora.LoraConfig(rank=rank, alpha=alpha, targets=targets)
    factors = lora.init_low_rank(cfg, config, np.random.default_rng(2), dtype=np.float64)
    # B off zero, so that the gradient of A is not zero and both are generic
    for name in factors:
        factors[name] += rng.normal(0, 0.3, size=factors[name].shape)
    windows = np.array([[cfg.pad_id, 2, 3, cfg.mask_id, 1], [4, 5, 0, cfg.pad_id, cfg.pad_id], [1, 1, 2, 3, 4]])
    pool = (windows != cfg.pad_id) & (windows != cfg.mask_id)
    return cfg, params, config, factors, windows, pool, np.array([0, 2, 1])


@pytest.mark.parametrize("rank, targets, alpha", [(1, ("attn.W_qkv", "attn.W_o"), None), (3, lora.TARGETS, 6.0),
                                                  (2, ("mlp.W_2",), 0.5)])
def test_the_factors_gradients_match_central_differences(rank, targets, alpha):
    # float64, h = 1e-5: a correct backward pass is far below 1e-6 (see mlm_book.nn.gradcheck)
    cfg, params, config, factors, windows, pool, labels = _tiny(rank, targets, alpha)
    _, grads = lora.lora_loss_and_grads(params, factors, cfg, config, windows, pool, labels)
    assert set(grads) == set(factors) | {"head.W", "head.b"}

    def loss():
        return lora.lora_loss_and_grads(params, factors, cfg, config, windows, pool, labels)[0]

    for name in [*factors, "head.W", "head.b"]:
        array = factors[name] if name in factors else params[name]
        assert relative_error(grads[name], central_differences(array, loss)) < 1e-6, name


def test_low_rank_grads_is_the_chain_rule_of_the_merged_matrix():
    # L = sum(C * (W + s A B)) has dL/dW' = C; dA = s C B^T, dB = s A^T C, checked by central differences
    rng = np.random.default_rng(0)
    W, C = rng.normal(size=(4, 5)), rng.normal(size=(4, 5))
    A, B, s = rng.normal(size=(4, 2)), rng.normal(size=(2, 5)), 1.7

    def loss():
        return float(np.sum(C * (W + s * A @ B)))

    dA, dB = lora.low_rank_grads(C, A, B, s)
    assert relative_error(dA, central_differences(A, loss)) < 1e-8
    assert relative_error(dB, central_differences(B, loss)) < 1e-8


def test_the_update_starts_at_zero_and_the_encoder_is_untouched():
    cfg, params, config, _, windows, pool, labels = _tiny()
    fresh = lora.init_low_rank(cfg, config, np.random.default_rng(3), dtype=np.float64)
    merged = lora.merge(params, fresh, cfg, config)
    assert all(np.array_equal(merged[name], params[name]) for name in params)      # B = 0: W' = W
    base = {k: v.astype(np.float32) for k, v in params.items() if not k.startswith("head.")}
    before = {k: v.copy() for k, v in base.items()}
    model = lora.fine_tune_lora(base, cfg, windows, pool, labels, config, eft.ClassifierConfig(steps=5, batch_size=2))
    assert all(np.array_equal(base[k], before[k]) for k in base)                    # copied, not changed
    changed = {k for k in before if not np.array_equal(model.classifier.params[k], before[k])}
    assert changed == set(lora.target_names(cfg, config))                           # only the adapted matrices
    for name in lora.target_names(cfg, config):                                     # and by s A B exactly
        A, B = model.factors[f"lora.{name}.A"], model.factors[f"lora.{name}.B"]
        assert np.allclose(model.classifier.params[name], before[name] + config.scale * A @ B, atol=1e-6)


def test_rank_zero_is_the_frozen_encoder_with_full_fine_tunings_head_and_batches():
    cfg, params, _, _, windows, pool, labels = _tiny()
    base = {k: v.astype(np.float32) for k, v in params.items() if not k.startswith("head.")}
    settings = eft.ClassifierConfig(steps=4, batch_size=2, seed=5)
    frozen = lora.fine_tune_lora(base, cfg, windows, pool, labels, lora.LoraConfig(rank=0), settings)
    assert frozen.factors == {} and frozen.trained == (cfg.d_model + 1) * 3
    assert all(np.array_equal(frozen.classifier.params[k], base[k]) for k in base)
    full = eft.fine_tune_classifier(base, cfg, windows, pool, labels, settings)
    # the same first batch from the same head: the first losses agree
    assert frozen.classifier.losses[0] == pytest.approx(full.losses[0], rel=1e-5)


def test_the_counts_are_the_sizes_of_the_trained_arrays():
    cfg, params, config, factors, *_ = _tiny(rank=3, targets=lora.TARGETS)
    assert lora.trained_count(cfg, config, 3) == sum(f.size for f in factors.values()) + 8 * 3 + 3
    read = [name for name in enc.param_names(cfg) if name not in ("b_out", "E_out")]
    assert lora.full_count(cfg, 3) == sum(params[name].size for name in read) + 8 * 3 + 3


@pytest.mark.parametrize("call, error, words", [
    (lambda: lora.LoraConfig(rank=-1), ValueError, "rank"),
    (lambda: lora.LoraConfig(rank=1.5), TypeError, "rank"),
    (lambda: lora.LoraConfig(rank=2, alpha=0.0), ValueError, "alpha"),
    (lambda: lora.LoraConfig(rank=2, targets=()), ValueError, "targets"),
    (lambda: lora.low_rank_grads(np.ones((2, 3)), np.ones((3, 1)), np.ones((1, 3)), 1.0), ValueError, "A"),
    (lambda: lora.full_count("config", 2), TypeError, "config"),
    (lambda: lora.trained_count(enc.EncoderConfig(vocab_size=5, length=3, d_model=8, n_blocks=1, n_heads=2),
                                "lora", 2), TypeError, "lora"),
])
def test_bad_inputs_name_the_argument(call, error, words):
    with pytest.raises(error, match=words):
        call()


def test_fine_tune_lora_refuses_bad_labels_and_factors():
    cfg, params, config, _, windows, pool, labels = _tiny()
    base = {k: v for k, v in params.items() if not k.startswith("head.")}
    with pytest.raises(ValueError, match="labels"):
        lora.fine_tune_lora(base, cfg, windows, pool, labels[:2], config)
    with pytest.raises(ValueError, match="factors"):
        lora.merge(params, {}, cfg, config)
