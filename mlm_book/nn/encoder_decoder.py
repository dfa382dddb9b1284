r"""The encoder–decoder: the book's encoder reads the source, a decoder writes the target left to right.

The encoder is the book's pre-LN stack without a mask ([`mlm_book.nn.layers.block_forward`][mlm_book.nn.layers.block_forward])
followed by a final LayerNorm; its output rows are the *memory*. A decoder block is three pre-LN
sub-layers, each added to the residual stream (Vaswani et al., 2017, with the LayerNorm moved before
each sub-layer as in the book's encoder):

$$h \mathrel{+}= \mathrm{MHA}_\text{causal}(\mathrm{LN}_1 h), \quad
  h \mathrel{+}= \mathrm{Cross}(\mathrm{LN}_c h, M), \quad
  h \mathrel{+}= \mathrm{MLP}(\mathrm{LN}_2 h).$$

The decoder reads the target shifted right behind a BOS id (*teacher forcing*): position $t$ sees
$\text{BOS}, y_1, \dots, y_{t-1}$ through causal self-attention and the whole source through
cross-attention ([`mlm_book.nn.cross_attention`][mlm_book.nn.cross_attention]), and a final LayerNorm
and an output matrix give logits over the target vocabulary. The loss is the mean negative
log-probability of every target token, in nats; [`loss_and_grads`][mlm_book.nn.encoder_decoder.loss_and_grads]
returns it with every parameter's gradient, by hand-written backward passes.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from mlm_book.nn.cross_attention import (
    CROSS_PARAMS,
    cross_attention_backward,
    cross_attention_forward,
)
from mlm_book.nn.layers import (
    attention_backward,
    attention_forward,
    block_backward,
    block_forward,
    causal_bias,
    cross_entropy_forward,
    embedding_backward,
    embedding_forward,
    layer_norm_backward,
    layer_norm_forward,
    mlp_backward,
    mlp_forward,
)
from mlm_book.validation import (
    as_int_array,
    check_generator,
    check_instance,
    check_positive_int,
    check_real,
)

__all__ = [
    "EncoderDecoderConfig",
    "decayed_names",
    "init_params",
    "log_probabilities",
    "loss_and_grads",
    "param_shapes",
]

_ENC_BLOCK = ("ln1.g", "ln1.b", "attn.W_qkv", "attn.b_qkv", "attn.W_o", "attn.b_o", "ln2.g", "ln2.b",
              "mlp.W_1", "mlp.b_1", "mlp.W_2", "mlp.b_2")


@dataclass(frozen=True)
class EncoderDecoderConfig:
    r"""Shape of an encoder–decoder.

    Parameters
    ----------
    source_vocab, target_vocab : int
        Source and target vocabulary sizes; the decoder's input vocabulary has one more id, BOS
        ``= target_vocab``.
    source_length, target_length : int
        Rows of the two position tables: the longest source and target.
    d_model : int
        Width $d$ of both residual streams.
    n_encoder_blocks, n_decoder_blocks : int
    n_heads : int
        Heads of every attention layer; must divide ``d_model``.
    mlp_ratio : int
        MLP hidden width as a multiple of $d$.
    init_std : float
        Standard deviation of every matrix and position table at initialisation (the matrices that
        write into a residual stream are further divided by $\sqrt{2 \cdot \text{blocks}}$).
    token_init_std : float
        Standard deviation of the two token tables at initialisation.
    ln_eps : float

    Raises
    ------
    TypeError, ValueError
        If a field has the wrong type or range, or ``n_heads`` does not divide ``d_model``.

    Examples
    --------
    >>> cfg = EncoderDecoderConfig(source_vocab=25, target_vocab=6, source_length=16, target_length=16)
    >>> cfg.bos_id, cfg.d_model
    (6, 32)
    >>> EncoderDecoderConfig(25, 6, 16, 16, d_model=30, n_heads=4)
    Traceback (most recent call last):
    ...
    ValueError: n_heads must divide d_model (30), got 4
    """

    source_vocab: int
    target_vocab: int
    source_length: int
    target_length: int
    d_model: int = 32
    n_encoder_blocks: int = 1
    n_decoder_blocks: int = 1
    n_heads: int = 4
    mlp_ratio: int = 4
    init_std: float = 0.02
    token_init_std: float = 1.0
    ln_eps: float = 1e-5

    def __post_init__(self):
        for name in ("source_vocab", "target_vocab", "source_length", "target_length", "d_model",
                     "n_encoder_blocks", "n_decoder_blocks", "n_heads", "mlp_ratio"):
            check_positive_int(getattr(self, name), name, maximum=1 << 16)
        if self.d_model % self.n_heads:
            raise ValueError(f"n_heads must divide d_model ({self.d_model}), got {self.n_heads}")
        check_real(self.init_std, "init_std", low=0.0, high=10.0)
        check_real(self.token_init_std, "token_init_std", low=0.0, high=10.0)
        check_real(self.ln_eps, "ln_eps", low=0.0, high=1.0)

    @property
    def bos_id(self) -> int:
        """The decoder's start id, ``target_vocab``."""
        return self.target_vocab


def param_shapes(config: EncoderDecoderConfig) -> dict[str, tuple[int, ...]]:
    """Every parameter's name and shape, in the order of the training buffer.

    Examples
    --------
    >>> shapes = param_shapes(EncoderDecoderConfig(25, 6, 16, 16))
    >>> shapes["enc.E"], shapes["dec.E"], shapes["dec.blocks.0.cross.W_kv"], shapes["out.W"]
    ((25, 32), (7, 32), (32, 64), (32, 6))
    """
    check_instance(config, "config", EncoderDecoderConfig)
    d, k = config.d_model, config.mlp_ratio * config.d_model
    shapes = {"enc.E": (config.source_vocab, d), "enc.P": (config.source_length, d)}
    enc_block = ((d,), (d,), (d, 3 * d), (3 * d,), (d, d), (d,), (d,), (d,), (d, k), (k,), (k, d), (d,))
    for i in range(config.n_encoder_blocks):
        shapes.update({f"enc.blocks.{i}.{name}": shape for name, shape in zip(_ENC_BLOCK, enc_block)})
    shapes.update({"enc.ln.g": (d,), "enc.ln.b": (d,),
                   "dec.E": (config.target_vocab + 1, d), "dec.P": (config.target_length, d)})
    for i in range(config.n_decoder_blocks):
        pre = f"dec.blocks.{i}."
        shapes.update({pre + "ln1.g": (d,), pre + "ln1.b": (d,), pre + "self.W_qkv": (d, 3 * d),
                       pre + "self.b_qkv": (3 * d,), pre + "self.W_o": (d, d), pre + "self.b_o": (d,),
                       pre + "lnc.g": (d,), pre + "lnc.b": (d,)})
        cross = ((d, d), (d,), (d, 2 * d), (2 * d,), (d, d), (d,))
        shapes.update({pre + "cross." + name: shape for name, shape in zip(CROSS_PARAMS, cross)})
        shapes.update({pre + "ln2.g": (d,), pre + "ln2.b": (d,), pre + "mlp.W_1": (d, k), pre + "mlp.b_1": (k,),
                       pre + "mlp.W_2": (k, d), pre + "mlp.b_2": (d,)})
    shapes.update({"dec.ln.g": (d,), "dec.ln.b": (d,), "out.W": (d, config.target_vocab),
                   "out.b": (config.target_vocab,)})
    return shapes


def decayed_names(config: EncoderDecoderConfig) -> tuple[str, ...]:
    """The parameters weight decay applies to: every matrix and table (not gains, biases or positions).

    Examples
    --------
    >>> names = decayed_names(EncoderDecoderConfig(25, 6, 16, 16))
    >>> "out.W" in names, "enc.ln.g" in names, "dec.P" in names
    (True, False, False)
    """
    return tuple(name for name in param_shapes(config)
                 if name.rsplit(".", 1)[-1].startswith("W") or name in ("enc.E", "dec.E"))


def init_params(config: EncoderDecoderConfig, rng: np.random.Generator, dtype=np.float32) -> dict[str, np.ndarray]:
    """Fresh parameters, all views into one contiguous buffer (for Adam's fused update).

    Examples
    --------
    >>> p = init_params(EncoderDecoderConfig(25, 6, 16, 16), np.random.default_rng(0))
    >>> p["dec.E"].shape, p["out.W"].dtype, float(p["dec.blocks.0.lnc.g"][0])
    ((7, 32), dtype('float32'), 1.0)
    """
    shapes = param_shapes(config)
    rng = check_generator(rng)
    try:
        dtype = np.dtype(dtype)
    except (TypeError, ValueError):
        raise TypeError(f"dtype must be float32 or float64, got {dtype!r:.40}") from None
    if dtype not in (np.dtype(np.float32), np.dtype(np.float64)):
        raise TypeError(f"dtype must be float32 or float64, got {dtype}")
    sizes = [int(np.prod(shape)) for shape in shapes.values()]
    buffer = np.zeros(sum(sizes), dtype=dtype)
    params, offset = {}, 0
    for (name, shape), size in zip(shapes.items(), sizes):
        view = buffer[offset:offset + size].reshape(shape)
        offset += size
        leaf = name.rsplit(".", 1)[-1]
        blocks = config.n_encoder_blocks if name.startswith("enc") else config.n_decoder_blocks
        if leaf == "g":
            view[...] = 1.0
        elif name in ("enc.E", "dec.E"):
            view[...] = rng.normal(0.0, config.token_init_std, size=shape)
        elif name in ("enc.P", "dec.P") or leaf.startswith("W"):
            scale = 1.0 / math.sqrt(2.0 * blocks) if leaf in ("W_o", "W_2") else 1.0
            view[...] = rng.normal(0.0, config.init_std * scale, size=shape)
        params[name] = view
    return params


def _check(params, config, source, target):
    check_instance(config, "config", EncoderDecoderConfig)
    if not isinstance(params, dict):
        raise TypeError(f"params must be a dict of str to arrays, got {type(params).__name__}")
    for name, shape in param_shapes(config).items():
        if name not in params:
            raise ValueError(f"params has no {name!r}")
        value = params[name]
        if not isinstance(value, np.ndarray) or value.dtype.char not in "fd" or value.shape != shape:
            raise ValueError(f"params[{name!r}] must be a float array of shape {shape}")
    source = as_int_array(source, "source", ndim=2)
    target = as_int_array(target, "target", ndim=2)
    for name, ids, vocab, length in (("source", source, config.source_vocab, config.source_length),
                                     ("target", target, config.target_vocab, config.target_length)):
        if ids.shape[0] == 0 or ids.shape[1] == 0 or ids.shape[1] > length:
            raise ValueError(f"{name} must be (B, n) with B >= 1 and 1 <= n <= {length}, got {ids.shape}")
        if ids.min() < 0 or ids.max() >= vocab:
            raise ValueError(f"{name} must hold ids in [0, {vocab}), got values from {ids.min()} to {ids.max()}")
    if source.shape[0] != target.shape[0]:
        raise ValueError(f"source and target must hold the same number of pairs, got {source.shape[0]} and "
                         f"{target.shape[0]}")
    return source, target


def _forward(params, config, source, target):
    B, n = source.shape
    m = target.shape[1]
    H, eps = config.n_heads, config.ln_eps
    x, c_emb_e = embedding_forward(source, params["enc.E"], params["enc.P"])
    enc_caches = []
    for i in range(config.n_encoder_blocks):
        x, c = block_forward(x, params, f"enc.blocks.{i}.", H, (B, n), eps)
        enc_caches.append(c)
    memory, c_lne = layer_norm_forward(x, params["enc.ln.g"], params["enc.ln.b"], eps)
    shifted = np.concatenate([np.full((B, 1), config.bos_id, dtype=target.dtype), target[:, :-1]], axis=1)
    h, c_emb_d = embedding_forward(shifted, params["dec.E"], params["dec.P"])
    bias = np.broadcast_to(causal_bias(m, h.dtype), (B, m, m))
    dec_caches = []
    for i in range(config.n_decoder_blocks):
        pre = f"dec.blocks.{i}."
        a_in, c1 = layer_norm_forward(h, params[pre + "ln1.g"], params[pre + "ln1.b"], eps)
        att, c2 = attention_forward(a_in, params[pre + "self.W_qkv"], params[pre + "self.b_qkv"],
                                    params[pre + "self.W_o"], params[pre + "self.b_o"], H, (B, m), key_bias=bias)
        h = h + att
        c_in, c3 = layer_norm_forward(h, params[pre + "lnc.g"], params[pre + "lnc.b"], eps)
        cross, c4 = cross_attention_forward(c_in, memory, {k: params[pre + "cross." + k] for k in CROSS_PARAMS},
                                            H, (B, m), (B, n))
        h = h + cross
        m_in, c5 = layer_norm_forward(h, params[pre + "ln2.g"], params[pre + "ln2.b"], eps)
        mlp, c6 = mlp_forward(m_in, params[pre + "mlp.W_1"], params[pre + "mlp.b_1"], params[pre + "mlp.W_2"],
                              params[pre + "mlp.b_2"])
        h = h + mlp
        dec_caches.append((c1, c2, c3, c4, c5, c6))
    out, c_lnd = layer_norm_forward(h, params["dec.ln.g"], params["dec.ln.b"], eps)
    logits = out @ params["out.W"] + params["out.b"]
    return logits, (c_emb_e, enc_caches, c_lne, c_emb_d, dec_caches, c_lnd, out)


def _backward(dlogits, cache, params, config):
    c_emb_e, enc_caches, c_lne, c_emb_d, dec_caches, c_lnd, out = cache
    grads = {"out.W": out.T @ dlogits, "out.b": dlogits.sum(axis=0)}
    dh, g = layer_norm_backward(dlogits @ params["out.W"].T, c_lnd)
    grads.update({"dec.ln.g": g["g"], "dec.ln.b": g["b"]})
    dmemory = None
    for i in reversed(range(config.n_decoder_blocks)):
        pre = f"dec.blocks.{i}."
        c1, c2, c3, c4, c5, c6 = dec_caches[i]
        dm_in, g = mlp_backward(dh, c6)
        grads.update({pre + "mlp." + k: v for k, v in g.items()})
        d, g = layer_norm_backward(dm_in, c5)
        grads.update({pre + "ln2." + k: v for k, v in g.items()})
        dh = dh + d
        dc_in, dmem, g = cross_attention_backward(dh, c4)
        grads.update({pre + "cross." + k: v for k, v in g.items()})
        dmemory = dmem if dmemory is None else dmemory + dmem
        d, g = layer_norm_backward(dc_in, c3)
        grads.update({pre + "lnc." + k: v for k, v in g.items()})
        dh = dh + d
        da_in, g = attention_backward(dh, c2)
        grads.update({pre + "self." + k: v for k, v in g.items()})
        d, g = layer_norm_backward(da_in, c1)
        grads.update({pre + "ln1." + k: v for k, v in g.items()})
        dh = dh + d
    _, g = embedding_backward(dh, c_emb_d)
    grads.update({"dec.E": g["E"], "dec.P": g["P"]})
    dx, g = layer_norm_backward(dmemory, c_lne)
    grads.update({"enc.ln.g": g["g"], "enc.ln.b": g["b"]})
    for i in reversed(range(config.n_encoder_blocks)):
        dx, g = block_backward(dx, enc_caches[i])
        grads.update(g)
    _, g = embedding_backward(dx, c_emb_e)
    grads.update({"enc.E": g["E"], "enc.P": g["P"]})
    return grads


def loss_and_grads(params: dict, config: EncoderDecoderConfig, source, target) -> tuple[float, dict]:
    r"""The teacher-forced loss (mean nats per target token) and the gradient of every parameter.

    Parameters
    ----------
    params : dict
        As [`init_params`][mlm_book.nn.encoder_decoder.init_params] makes them (float32 or float64).
    config : EncoderDecoderConfig
    source : array_like of int, shape (B, n)
    target : array_like of int, shape (B, m)

    Returns
    -------
    loss : float
    grads : dict
        One array per parameter, of its shape.

    Raises
    ------
    TypeError, ValueError
        If ``params`` lacks a parameter or has one of the wrong shape, or the token arrays are not
        (B, n) ids of the right vocabularies and lengths.

    Examples
    --------
    >>> cfg = EncoderDecoderConfig(5, 3, 4, 4, d_model=8, n_heads=2)
    >>> p = init_params(cfg, np.random.default_rng(0), np.float64)
    >>> loss, grads = loss_and_grads(p, cfg, [[0, 1, 2, 3]], [[0, 1, 2, 0]])
    >>> round(loss, 1), grads["enc.E"].shape
    (1.1, (5, 8))
    """
    source, target = _check(params, config, source, target)
    logits, cache = _forward(params, config, source, target)
    loss, dlogits = cross_entropy_forward(logits, target.reshape(-1))
    return loss, _backward(dlogits, cache, params, config)


def log_probabilities(params: dict, config: EncoderDecoderConfig, source, target) -> np.ndarray:
    r"""$\log q(y_t = v \mid y_{<t}, x)$ for every pair, position and target token: ``(B, m, V_B)``.

    Examples
    --------
    >>> cfg = EncoderDecoderConfig(5, 3, 4, 4, d_model=8, n_heads=2)
    >>> p = init_params(cfg, np.random.default_rng(0), np.float64)
    >>> lp = log_probabilities(p, cfg, [[0, 1, 2, 3]], [[0, 1, 2, 0]])
    >>> lp.shape, bool(np.allclose(np.exp(lp).sum(axis=2), 1.0))
    ((1, 4, 3), True)

    Changing a later target token changes no earlier prediction (the decoder is causal):

    >>> lp2 = log_probabilities(p, cfg, [[0, 1, 2, 3]], [[0, 1, 0, 2]])
    >>> bool(np.allclose(lp[0, :3], lp2[0, :3])), bool(np.allclose(lp[0, 3], lp2[0, 3]))
    (True, False)
    """
    source, target = _check(params, config, source, target)
    logits, _ = _forward(params, config, source, target)
    logits = logits.astype(np.float64)
    logits -= logits.max(axis=1, keepdims=True)
    logits -= np.log(np.exp(logits).sum(axis=1, keepdims=True))
    return logits.reshape(target.shape[0], target.shape[1], config.target_vocab)
