"""The pair encoder: hand-written gradients against central differences, identities, bad input."""

from __future__ import annotations

import numpy as np
import pytest

from mlm_book.nn import encoder as enc
from mlm_book.nn import pairs
from mlm_book.nn.gradcheck import central_differences, relative_error

CFG = pairs.PairEncoderConfig(enc.EncoderConfig(vocab_size=7, length=9, d_model=4, n_blocks=2, n_heads=2, mlp_ratio=2,
                                                pad=True, token_init_std=1.0))


def _batch(rng):
    rows = [pairs.encode_pair([2, 3, 4], [5, 6], CFG), pairs.encode_pair([3], [2, 2, 5, 6], CFG),
            pairs.encode_pair([6, 5], [4], CFG)]
    tokens = np.stack([r[0] for r in rows])
    segments = np.stack([r[1] for r in rows])
    real = (tokens < CFG.vocab_size) & (tokens != pairs.SEP_ID)
    selected = real & (rng.random(tokens.shape) < 0.5)
    selected[0, 1] = True
    shown = tokens.copy()
    shown[selected] = CFG.mask_id
    shown[1, 2] = 4                       # a random replacement at an unselected slot changes nothing
    return shown, segments, tokens, selected, np.array([0, 1, 1])


@pytest.mark.parametrize("nsp", [None, 0.7])
def test_gradients_match_central_differences(nsp):
    rng = np.random.default_rng(3)
    params = pairs.init_pair_params(CFG, rng, dtype=np.float64)
    shown, segments, targets, selected, labels = _batch(rng)
    nsp_labels = None if nsp is None else labels
    weight = 1.0 if nsp is None else nsp

    def total(p):
        mlm, value, _ = pairs.pair_loss_and_grads_unchecked(p, CFG, shown, segments, targets, selected, nsp_labels,
                                                            weight)
        return mlm + (0.0 if nsp is None else weight * value)

    _, _, grads = pairs.pair_loss_and_grads(params, CFG, shown, segments, targets, selected, nsp_labels, weight)
    for name, array in params.items():
        numeric = central_differences(array, lambda: total(params))
        # a tensor whose whole gradient is tiny (the [CLS] row without NSP reaches the loss only
        # through attention) is judged by the absolute error of central differences, ~1e-11
        assert relative_error(grads[name], numeric) < 1e-6 or np.abs(grads[name] - numeric).max() < 1e-9, name
    if nsp is None:
        assert not grads["nsp.W"].any() and not grads["nsp.b"].any()


def test_without_cls_and_segments_it_is_the_encoder():
    """Zero segment rows and no [CLS]: the pair encoder's masked-LM loss and gradients are the encoder's."""
    rng = np.random.default_rng(0)
    params = pairs.init_pair_params(CFG, rng, dtype=np.float64)
    params["S"][...] = 0.0
    shown, _, targets, selected, _ = _batch(rng)
    shown, targets, selected = shown[:, 1:], targets[:, 1:], selected[:, 1:]
    segments = np.zeros_like(shown)
    mlm, nsp, grads = pairs.pair_loss_and_grads(params, CFG, shown, segments, targets, selected)
    base = {k: v for k, v in params.items() if k not in ("cls", "S", "nsp.W", "nsp.b")}
    value, base_grads = enc.loss_and_grads(base, CFG.encoder, shown, targets, selected)
    assert abs(mlm - value) < 1e-12 and nsp is None
    for name, g in base_grads.items():
        assert np.allclose(grads[name], g, atol=1e-12, rtol=0), name
    assert not grads["cls"].any()


def test_nsp_probabilities_read_the_cls_row_only_through_attention():
    """The head reads position 0; [PAD] slots change nothing; the probabilities sum to one."""
    rng = np.random.default_rng(1)
    params = pairs.init_pair_params(CFG, rng, dtype=np.float64)
    tokens, segments = pairs.encode_pair([2, 3], [4], CFG)
    p = pairs.nsp_probabilities(params, CFG, tokens[None], segments[None])
    shorter = pairs.nsp_probabilities(params, CFG, tokens[None, :6], segments[None, :6])
    assert np.allclose(p, shorter, atol=1e-12) and abs(p.sum() - 1) < 1e-12
    hidden = pairs.pair_hidden_states(params, CFG, tokens[None], segments[None])
    assert len(hidden) == CFG.encoder.n_blocks + 1
    swapped = segments.copy()
    swapped[4] = 0
    assert np.abs(pairs.nsp_probabilities(params, CFG, tokens[None], swapped[None]) - p).max() > 1e-9


@pytest.mark.parametrize("a, b, match", [
    ([], [2], "a must not be empty"),
    ([2], [], "b must not be empty"),
    ([2, 1], [3], r"a must be one sentence without \[SEP\]"),
    ([2], [9], r"b must be token ids in \[0, 7\)"),
    ([2] * 4, [3] * 3, "longer than the encoder's length 9"),
])
def test_bad_pairs(a, b, match):
    with pytest.raises(ValueError, match=match):
        pairs.encode_pair(a, b, CFG)


def test_bad_batches():
    rng = np.random.default_rng(0)
    params = pairs.init_pair_params(CFG, rng, dtype=np.float64)
    shown, segments, targets, selected, labels = _batch(rng)
    with pytest.raises(ValueError, match=r"segments must hold segment ids in \[0, 2\)"):
        pairs.pair_loss_and_grads(params, CFG, shown, segments + 1, targets, selected)
    with pytest.raises(ValueError, match="selected must not select a \\[PAD\\] or \\[CLS\\]"):
        bad = selected.copy(); bad[0, 0] = True
        pairs.pair_loss_and_grads(params, CFG, shown, segments, targets, bad)
    with pytest.raises(ValueError, match="nsp_labels must be 0"):
        pairs.pair_loss_and_grads(params, CFG, shown, segments, targets, selected, [0, 2, 1])
    with pytest.raises(ValueError, match="shown must start every row with \\[CLS\\]"):
        pairs.pair_loss_and_grads(params, CFG, shown[:, 1:], segments[:, 1:], targets[:, 1:], selected[:, 1:],
                                  labels)
    with pytest.raises(ValueError, match="at least one slot that is not \\[PAD\\]"):
        pairs.pair_hidden_states(params, CFG, np.full((1, 4), CFG.pad_id), np.zeros((1, 4), int))
    with pytest.raises(ValueError, match="encoder must have pad=True"):
        pairs.PairEncoderConfig(enc.EncoderConfig(vocab_size=7, length=9))
    with pytest.raises(ValueError, match="encoder must not be causal"):
        pairs.PairEncoderConfig(enc.EncoderConfig(vocab_size=7, length=9, pad=True, causal=True))


@pytest.mark.parametrize("pooling", ["cls", "mean"])
def test_classifier_gradients_match_central_differences(pooling):
    from mlm_book.nn import finetune

    rng = np.random.default_rng(5)
    params = pairs.init_pair_params(CFG, rng, dtype=np.float64)
    _, segments, tokens, _, _ = _batch(rng)
    labels = np.array([0, 2, 1])
    head = {"W": rng.normal(size=(4, 3)), "b": rng.normal(size=3)}
    everything = {**params, **{f"head.{k}": v for k, v in head.items()}}

    def total():
        x0, cache = pairs.pair_embedding_forward(params, CFG, tokens, segments)
        return finetune._loss_and_grads(params, head, CFG, x0, cache, tokens, labels, 0, pooling)

    _, grads = total()
    assert set(grads) == set(everything) - {"b_out", "nsp.W", "nsp.b"}
    for name, g in grads.items():
        numeric = central_differences(everything[name], lambda: total()[0])
        assert relative_error(g, numeric) < 1e-6 or np.abs(g - numeric).max() < 1e-9, name


def test_top_mode_changes_only_the_top_block_and_the_final_norm():
    from mlm_book.nn import finetune

    rng = np.random.default_rng(2)
    params = pairs.init_pair_params(CFG, rng, dtype=np.float64)
    _, segments, tokens, _, _ = _batch(rng)
    tuned = finetune.fine_tune(params, CFG, tokens, segments, [0, 1, 1], finetune.FineTuneConfig(mode="top", steps=5))
    changed = {n for n in params if not np.array_equal(params[n], tuned.params[n])}
    assert changed and all(n.startswith(("blocks.1.", "ln_f.")) for n in changed), changed
    full = finetune.fine_tune(params, CFG, tokens, segments, [0, 1, 1], finetune.FineTuneConfig(steps=5))
    assert {"E", "P", "S", "cls", "blocks.0.attn.W_qkv"} <= {n for n in params
                                                          if not np.array_equal(params[n], full.params[n])}
    with pytest.raises(ValueError, match="tokens must not hold \\[MASK\\]"):
        bad = tokens.copy(); bad[0, 1] = CFG.mask_id
        finetune.fine_tune(params, CFG, bad, segments, [0, 1, 1])
    with pytest.raises(ValueError, match="labels must hold at least two classes"):
        finetune.fine_tune(params, CFG, tokens, segments, [1, 1, 1])
