r"""Sentence pairs for the encoder: ``[CLS] A [SEP] B [SEP]``, segment embeddings and the NSP head.

BERT reads two sentences at once. The input is

$$ [\mathrm{CLS}]\; a_1 \dots a_p\; [\mathrm{SEP}]\; b_1 \dots b_q\; [\mathrm{SEP}] , $$

and each input row is the sum of three tables: the token's row of $E$, the position's row of
$P$ and the *segment*'s row of $S$ (segment 0 for ``[CLS]``, A and the first ``[SEP]``;
segment 1 for B and the last ``[SEP]``):

$$ x_0 = E[\tilde x_t] + P_t + S_{s_t} . $$

The blocks are [`mlm_book.nn.layers`][mlm_book.nn.layers]'s, unchanged. Two heads read the last layer after
the final LayerNorm $h = \operatorname{LN}_f(x_L)$:

* the masked-LM head of [`mlm_book.nn.encoder`][mlm_book.nn.encoder] at the selected positions
  ($h E_{:V}^\top/\sqrt d + b$, tied to the token table);
* the next-sentence head at ``[CLS]`` (position 0): $\operatorname{softmax}(h_{\mathrm{CLS}} W_{\mathrm{NSP}} + b_{\mathrm{NSP}})$
  over {is next, is random}.

The pre-training loss is the masked-LM cross-entropy (mean over the batch's selected
positions) plus ``nsp_weight`` times the NSP cross-entropy (mean over the batch's pairs);
``nsp_weight = 0`` trains the masked LM alone, as RoBERTa does on packed text.

``[CLS]`` is one more input-only id, ``cls_id = V + 2`` (after [MASK] = V and [PAD] = V + 1),
with its own row ``params["cls"]``; like [MASK] and [PAD] it is never a target. The
parameters are the encoder's ([`mlm_book.nn.encoder.init_params`][mlm_book.nn.encoder.init_params]) plus ``cls`` (d,),
``S`` (n_segments, d), ``nsp.W`` (d, 2) and ``nsp.b`` (2,), so the encoder's own functions
still read a pair encoder's parameters for single-segment input without ``[CLS]``.

Every gradient is written by hand from the layers' backward passes and checked against
central differences in float64 (``tests/test_pairs.py``).

Examples
--------
>>> cfg = PairEncoderConfig(enc.EncoderConfig(vocab_size=6, length=8, d_model=8, n_blocks=1, n_heads=2, pad=True))
>>> tokens, segments = encode_pair([2, 3], [4], cfg)
>>> tokens.tolist(), segments.tolist()
([8, 2, 3, 1, 4, 1, 7, 7], [0, 0, 0, 0, 1, 1, 0, 0])
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from mlm_book.nn import encoder as enc
from mlm_book.nn import layers
from mlm_book.validation import (
    as_int_array,
    check_generator,
    check_instance,
    check_positive_int,
    check_real,
    check_tokens,
)

__all__ = ["PairEncoderConfig", "SEP_ID", "encode_pair", "init_pair_params", "check_pair_params",
           "pair_loss_and_grads", "pair_hidden_states", "nsp_probabilities", "pair_param_names"]

#: The id of ``[SEP]`` in the book's filing vocabulary (a real token, id 1).
SEP_ID = 1

_EXTRA = ("cls", "S", "nsp.W", "nsp.b")


@dataclass(frozen=True)
class PairEncoderConfig:
    """An encoder that reads sentence pairs.

    Parameters
    ----------
    encoder : EncoderConfig
        The encoder's shape; it must have ``pad=True`` (pairs are padded to ``length``).
    n_segments : int
        Rows of the segment table (BERT's 2).

    Raises
    ------
    TypeError
        If ``encoder`` is not an [`EncoderConfig`][mlm_book.nn.encoder.EncoderConfig].
    ValueError
        If ``encoder.pad`` is False, ``encoder.causal`` is True or ``n_segments`` is not a positive integer.

    Examples
    --------
    >>> cfg = PairEncoderConfig(enc.EncoderConfig(vocab_size=6, length=8, pad=True))
    >>> cfg.mask_id, cfg.pad_id, cfg.cls_id, cfg.input_vocab_size
    (6, 7, 8, 9)
    """

    encoder: enc.EncoderConfig
    n_segments: int = 2

    def __post_init__(self):
        check_instance(self.encoder, "encoder", enc.EncoderConfig)
        if not self.encoder.pad:
            raise ValueError("encoder must have pad=True: pairs are padded to the encoder's length")
        if self.encoder.causal:
            raise ValueError("encoder must not be causal: a pair encoder reads both segments whole")
        check_positive_int(self.n_segments, "n_segments")

    @property
    def vocab_size(self) -> int:
        """$V$, the output classes of the masked-LM head."""
        return self.encoder.vocab_size

    @property
    def mask_id(self) -> int:
        """Input id of [MASK] ($V$)."""
        return self.encoder.mask_id

    @property
    def pad_id(self) -> int:
        """Input id of [PAD] ($V + 1$)."""
        return self.encoder.pad_id

    @property
    def cls_id(self) -> int:
        """Input id of [CLS] ($V + 2$)."""
        return self.encoder.input_vocab_size

    @property
    def input_vocab_size(self) -> int:
        """Every input id: the $V$ tokens, [MASK], [PAD] and [CLS]."""
        return self.cls_id + 1

    def to_dict(self) -> dict:
        """The fields as a JSON-serialisable dict (used in cache keys)."""
        return {"encoder": self.encoder.to_dict(), "n_segments": self.n_segments}


def pair_param_names(config: PairEncoderConfig) -> tuple[str, ...]:
    """The encoder's parameter names followed by ``cls``, ``S``, ``nsp.W``, ``nsp.b``.

    Examples
    --------
    >>> cfg = PairEncoderConfig(enc.EncoderConfig(vocab_size=6, length=8, d_model=8, n_blocks=1, n_heads=2, pad=True))
    >>> pair_param_names(cfg)[-4:]
    ('cls', 'S', 'nsp.W', 'nsp.b')
    """
    check_instance(config, "config", PairEncoderConfig)
    return (*enc.param_names(config.encoder), *_EXTRA)


def _extra_shapes(config: PairEncoderConfig) -> dict[str, tuple[int, ...]]:
    d = config.encoder.d_model
    return {"cls": (d,), "S": (config.n_segments, d), "nsp.W": (d, 2), "nsp.b": (2,)}


def init_pair_params(config: PairEncoderConfig, rng: np.random.Generator, dtype=np.float32) -> dict[str, np.ndarray]:
    """Fresh parameters: the encoder's, then ``cls`` like a token row, ``S`` like ``P``, the NSP head like a matrix.

    All arrays are views of one contiguous buffer, so [`mlm_book.nn.adam.Adam`][mlm_book.nn.adam.Adam] updates
    them with a handful of vector operations.

    Parameters
    ----------
    config : PairEncoderConfig
    rng : numpy.random.Generator
    dtype : numpy dtype
        float32 (training) or float64 (gradient checks).

    Returns
    -------
    dict of str to ndarray

    Raises
    ------
    TypeError
        If ``config`` is not a `PairEncoderConfig`, ``rng`` not a Generator or ``dtype`` not
        float32/float64.

    Examples
    --------
    >>> cfg = PairEncoderConfig(enc.EncoderConfig(vocab_size=6, length=8, d_model=8, n_blocks=1, n_heads=2, pad=True))
    >>> p = init_pair_params(cfg, np.random.default_rng(0))
    >>> p["S"].shape, p["nsp.W"].shape, float(p["nsp.b"].sum())
    ((2, 8), (8, 2), 0.0)
    """
    check_instance(config, "config", PairEncoderConfig)
    rng = check_generator(rng)
    base = enc.init_params(config.encoder, rng, dtype=dtype)
    cfg = config.encoder
    token_std = cfg.token_init_std if cfg.token_init_std is not None else cfg.init_std
    extra = {"cls": rng.normal(0.0, token_std, size=(cfg.d_model,)),
             "S": rng.normal(0.0, cfg.init_std, size=(config.n_segments, cfg.d_model)),
             "nsp.W": rng.normal(0.0, cfg.init_std, size=(cfg.d_model, 2)),
             "nsp.b": np.zeros(2)}
    names = pair_param_names(config)
    arrays = {**base, **extra}
    buffer = np.empty(sum(arrays[name].size for name in names), dtype=base["E"].dtype)
    params, offset = {}, 0
    for name in names:
        size = arrays[name].size
        params[name] = buffer[offset:offset + size].reshape(arrays[name].shape)
        params[name][...] = arrays[name]
        offset += size
    return params


def check_pair_params(params, config: PairEncoderConfig, name: str = "params") -> dict[str, np.ndarray]:
    """Check ``params`` holds every array of ``config`` with its shape, one float dtype and finite values.

    Raises
    ------
    TypeError
        If ``config`` is not a `PairEncoderConfig` or ``params`` not a mapping of float arrays.
    ValueError
        If an array is missing, has the wrong shape or holds NaN or infinity.

    Examples
    --------
    >>> cfg = PairEncoderConfig(enc.EncoderConfig(vocab_size=6, length=8, d_model=8, n_blocks=1, n_heads=2, pad=True))
    >>> sorted(check_pair_params(init_pair_params(cfg, np.random.default_rng(0)), cfg))[:2]
    ['E', 'P']
    """
    check_instance(config, "config", PairEncoderConfig)
    if not isinstance(params, Mapping):
        raise TypeError(f"{name} must be a mapping of parameter names to arrays, got {type(params).__name__}")
    out = enc.check_params({k: v for k, v in params.items() if k not in _EXTRA}, config.encoder, name)
    dtype = out["E"].dtype
    for key, shape in _extra_shapes(config).items():
        if key not in params:
            raise ValueError(f"{name} is missing {key!r}")
        array = params[key]
        if not isinstance(array, np.ndarray) or array.dtype != dtype:
            raise TypeError(f"{name}[{key!r}] must be a {dtype} ndarray like {name}['E'], got "
                            f"{getattr(array, 'dtype', type(array).__name__)}")
        if array.shape != shape:
            raise ValueError(f"{name}[{key!r}] must have shape {shape}, got {array.shape}")
        if not np.all(np.isfinite(array)):
            raise ValueError(f"{name}[{key!r}] contains NaN or infinite values")
        out[key] = array
    return out


def encode_pair(a, b, config: PairEncoderConfig, *, sep_id: int = SEP_ID) -> tuple[np.ndarray, np.ndarray]:
    """The input row of one pair, ``[CLS] A [SEP] B [SEP]`` padded with [PAD], and its segment ids.

    Parameters
    ----------
    a, b : sequence of int
        The two sentences' token ids, each non-empty, real tokens other than ``[SEP]``.
    config : PairEncoderConfig
    sep_id : int
        The separator's id (the filing vocabulary's 1).

    Returns
    -------
    tokens, segments : ndarray of int, shape (length,)
        The token ids and the segment ids (0 for ``[CLS]``, A, the first ``[SEP]`` and the
        padding; 1 for B and the last ``[SEP]``).

    Raises
    ------
    TypeError
        If ``a`` or ``b`` is not a sequence of integers, or ``config`` not a `PairEncoderConfig`.
    ValueError
        If a sentence is empty, holds ``[SEP]`` or an id outside ``[0, V)``, or the pair is
        longer than ``config.encoder.length``.

    Examples
    --------
    >>> cfg = PairEncoderConfig(enc.EncoderConfig(vocab_size=6, length=7, d_model=8, n_blocks=1, n_heads=2, pad=True))
    >>> [row.tolist() for row in encode_pair([2], [3, 4], cfg)]
    [[8, 2, 1, 3, 4, 1, 7], [0, 0, 0, 1, 1, 1, 0]]
    >>> encode_pair([2, 1], [3], cfg)
    Traceback (most recent call last):
    ...
    ValueError: a must be one sentence without [SEP] (id 1), got [SEP] at index 1
    """
    check_instance(config, "config", PairEncoderConfig)
    sep_id = check_positive_int(sep_id, "sep_id", minimum=0)
    if sep_id >= config.vocab_size:
        raise ValueError(f"sep_id must be a token id in [0, {config.vocab_size}), got {sep_id}")
    sentences = []
    for name, sentence in (("a", a), ("b", b)):
        ids = check_tokens(sentence, name, config.vocab_size, ndim=1)
        where = np.flatnonzero(ids == sep_id)
        if where.size:
            raise ValueError(f"{name} must be one sentence without [SEP] (id {sep_id}), got [SEP] at index "
                             f"{int(where[0])}")
        sentences.append(ids)
    a, b = sentences
    n = a.size + b.size + 3
    length = config.encoder.length
    if n > length:
        raise ValueError(f"a and b make a pair of {n} slots ([CLS], [SEP] twice and {a.size} + {b.size} tokens), "
                         f"longer than the encoder's length {length}")
    out = np.zeros((2, length), dtype=np.int64)
    out[0] = config.pad_id
    out[0, :n] = np.concatenate([[config.cls_id], a, [sep_id], b, [sep_id]])
    out[1, a.size + 2:n] = 1
    return out[0], out[1]


# --------------------------------------------------------------------------- building blocks (unchecked)
# Public for the package's fine-tuning and pre-training, which check their inputs once and then
# call these at every step; not in `__all__`, so the bad-input sweep does not feed them what only
# a checked entry point must refuse.
def key_bias(config: PairEncoderConfig, tokens: np.ndarray, dtype):
    """The attention bias that hides [PAD] keys, or ``None`` when a batch holds no [PAD].

    Parameters
    ----------
    config : PairEncoderConfig
    tokens : ndarray of int, shape (B, n)
        Checked input ids (as by [`check_pair_input`][mlm_book.nn.pairs.check_pair_input]).
    dtype : numpy dtype
        That of the attention scores.

    Returns
    -------
    ndarray, shape (B, n), or None

    Examples
    --------
    >>> cfg = PairEncoderConfig(enc.EncoderConfig(vocab_size=6, length=8, d_model=8, n_blocks=1, n_heads=2, pad=True))
    >>> tokens, _ = encode_pair([2, 3], [4], cfg)
    >>> bias = key_bias(cfg, tokens[None], np.float32)
    >>> bias.shape, bool(bias[0, -1] < -1e3), float(bias[0, 0])
    ((1, 8), True, 0.0)
    """
    valid = tokens != config.pad_id
    return None if valid.all() else layers.key_bias_from_valid(valid, dtype)


def pair_embedding_forward(params, config: PairEncoderConfig, tokens: np.ndarray, segments: np.ndarray):
    r"""The input rows $x_0 = E[\tilde x_t] + P_t + S_{s_t}$ (``[CLS]`` reads ``params["cls"]``), and their cache.

    Parameters
    ----------
    params : mapping
        Checked parameters of ``config``.
    config : PairEncoderConfig
    tokens, segments : ndarray of int, shape (B, n)
        Checked inputs (as by [`check_pair_input`][mlm_book.nn.pairs.check_pair_input]).

    Returns
    -------
    x0 : ndarray, shape (B*n, d)
    cache
        For [`pair_embedding_backward`][mlm_book.nn.pairs.pair_embedding_backward].

    Examples
    --------
    >>> cfg = PairEncoderConfig(enc.EncoderConfig(vocab_size=6, length=8, d_model=8, n_blocks=1, n_heads=2, pad=True))
    >>> p = init_pair_params(cfg, np.random.default_rng(0))
    >>> tokens, segments = encode_pair([2, 3], [4], cfg)
    >>> x0, _ = pair_embedding_forward(p, cfg, tokens[None], segments[None])
    >>> x0.shape, bool(np.allclose(x0[0], p["cls"] + p["P"][0] + p["S"][0]))
    ((8, 8), True)
    """
    table = np.concatenate([params["E"], params["cls"][None]], axis=0)
    x0, cache = layers.embedding_forward(tokens, table, params["P"])
    x0 += params["S"][segments.reshape(-1)]
    return x0, (cache, segments)


def pair_embedding_backward(dx0: np.ndarray, cache, config: PairEncoderConfig):
    """The gradients of the tables ``E``, ``cls``, ``P`` and ``S`` from that of the input rows.

    Parameters
    ----------
    dx0 : ndarray, shape (B*n, d)
    cache
        From [`pair_embedding_forward`][mlm_book.nn.pairs.pair_embedding_forward].
    config : PairEncoderConfig

    Returns
    -------
    dict of str to ndarray
        ``"E"``, ``"cls"``, ``"P"`` and ``"S"``, shaped like the tables.
    """
    emb_cache, segments = cache
    _, grads = layers.embedding_backward(dx0, emb_cache)
    d = dx0.shape[1]
    flat = (segments.reshape(-1)[:, None] * d + np.arange(d)).reshape(-1)
    dS = np.bincount(flat, weights=dx0.reshape(-1), minlength=config.n_segments * d)
    return {"E": grads["E"][:-1], "cls": grads["E"][-1], "P": grads["P"],
            "S": dS.reshape(config.n_segments, d).astype(dx0.dtype)}


def blocks_forward(params, config: PairEncoderConfig, x, shape, rows, key_bias, first: int = 0):
    """Blocks ``first .. n_blocks - 1`` from the residual stream ``x``; the last computes ``rows`` only.

    Parameters
    ----------
    params : mapping
        Checked parameters of ``config``.
    config : PairEncoderConfig
    x : ndarray, shape (B*n, d)
        The stream entering block ``first`` (the input rows when ``first`` is 0).
    shape : tuple of int
        ``(B, n)``.
    rows : ndarray of int or None
        Flat positions the last block computes (all when ``None``).
    key_bias : ndarray or None
        From [`key_bias`][mlm_book.nn.pairs.key_bias].
    first : int
        The first block run.

    Returns
    -------
    x : ndarray
        The last block's output, ``(len(rows), d)`` or ``(B*n, d)``.
    caches : list
        For [`blocks_backward`][mlm_book.nn.pairs.blocks_backward].
    hidden : list of ndarray
        The stream entering block ``first`` and after every block run.

    Examples
    --------
    >>> cfg = PairEncoderConfig(enc.EncoderConfig(vocab_size=6, length=8, d_model=8, n_blocks=2, n_heads=2, pad=True))
    >>> p = init_pair_params(cfg, np.random.default_rng(0))
    >>> tokens, segments = encode_pair([2, 3], [4], cfg)
    >>> x0, _ = pair_embedding_forward(p, cfg, tokens[None], segments[None])
    >>> x, caches, hidden = blocks_forward(p, cfg, x0, (1, 8), None, key_bias(cfg, tokens[None], x0.dtype))
    >>> x.shape, len(caches), len(hidden)
    ((8, 8), 2, 3)
    """
    cfg = config.encoder
    caches, hidden = [], [x]
    for block in range(first, cfg.n_blocks):
        block_rows = rows if block == cfg.n_blocks - 1 else None
        x, cache = layers.block_forward(x, params, f"blocks.{block}.", cfg.n_heads, shape, cfg.ln_eps,
                                        block_rows, key_bias)
        caches.append(cache)
        hidden.append(x)
    return x, caches, hidden


def blocks_backward(dx, caches):
    """The backward pass of [`blocks_forward`][mlm_book.nn.pairs.blocks_forward]: ``(dx, grads)``.

    Parameters
    ----------
    dx : ndarray
        The gradient of the last block's output.
    caches : list
        From [`blocks_forward`][mlm_book.nn.pairs.blocks_forward].

    Returns
    -------
    dx : ndarray, shape (B*n, d)
        The gradient of the stream entering the first block run.
    grads : dict of str to ndarray
        The gradients of every array of the blocks run.
    """
    grads = {}
    for cache in reversed(caches):
        dx, g = layers.block_backward(dx, cache)
        grads.update(g)
    return dx, grads


def pair_loss_and_grads_unchecked(params, config: PairEncoderConfig, shown, segments, targets, selected, nsp_labels,
                         nsp_weight: float):
    """[`pair_loss_and_grads`][mlm_book.nn.pairs.pair_loss_and_grads] without its checks: the pre-training step's core.

    The caller vouches for the inputs (as that function checks them). Returns ``(mlm, nsp,
    grads)`` with ``nsp`` NaN (not ``None``) when no NSP loss is computed.

    Examples
    --------
    >>> cfg = PairEncoderConfig(enc.EncoderConfig(vocab_size=6, length=8, d_model=8, n_blocks=1, n_heads=2, pad=True))
    >>> p = init_pair_params(cfg, np.random.default_rng(0), dtype=np.float64)
    >>> tokens, segments = encode_pair([2, 3], [4], cfg)
    >>> selected = np.zeros((1, 8), bool); selected[0, 2] = True
    >>> shown = tokens[None].copy(); shown[selected] = cfg.mask_id
    >>> mlm, nsp, _ = pair_loss_and_grads_unchecked(p, cfg, shown, segments[None], tokens[None], selected, None, 1.0)
    >>> mlm == pair_loss_and_grads(p, cfg, shown, segments[None], tokens[None], selected)[0], nsp
    (True, nan)
    """
    B, n = shown.shape
    cfg = config.encoder
    V = cfg.vocab_size
    mlm_rows = np.flatnonzero(selected.reshape(-1))
    use_nsp = nsp_labels is not None and nsp_weight > 0
    cls_rows = np.arange(B) * n
    rows = np.union1d(mlm_rows, cls_rows) if use_nsp else mlm_rows
    x0, emb_cache = pair_embedding_forward(params, config, shown, segments)
    x, caches, _ = blocks_forward(params, config, x0, (B, n), rows, key_bias(config, shown, x0.dtype))
    at_mlm = np.searchsorted(rows, mlm_rows)
    logits, head_cache = layers.head_forward(x[at_mlm], params["ln_f.g"], params["ln_f.b"], params["E"][:V],
                                             params["b_out"], cfg.ln_eps)
    mlm, dlogits = layers.cross_entropy_forward(logits, targets.reshape(-1)[mlm_rows])
    dx_rows, head = layers.head_backward(dlogits, head_cache)
    dx = np.zeros_like(x)
    dx[at_mlm] = dx_rows
    grads = {"ln_f.g": head["ln_f.g"], "ln_f.b": head["ln_f.b"], "b_out": head["b_out"]}
    nsp = math.nan
    W, b = params["nsp.W"], params["nsp.b"]
    grads["nsp.W"], grads["nsp.b"] = np.zeros_like(W), np.zeros_like(b)
    if use_nsp:
        at_cls = np.searchsorted(rows, cls_rows)
        h, ln_cache = layers.layer_norm_forward(x[at_cls], params["ln_f.g"], params["ln_f.b"], cfg.ln_eps)
        z = h @ W + b
        nsp, dz = layers.cross_entropy_forward(z, nsp_labels)
        dz *= nsp_weight
        grads["nsp.W"] = h.T @ dz
        grads["nsp.b"] = dz.sum(axis=0)
        dh, g = layers.layer_norm_backward(dz @ W.T, ln_cache)
        dx[at_cls] += dh
        grads["ln_f.g"] = grads["ln_f.g"] + g["g"]
        grads["ln_f.b"] = grads["ln_f.b"] + g["b"]
    dx0, block_grads = blocks_backward(dx, caches)
    grads.update(block_grads)
    emb = pair_embedding_backward(dx0, emb_cache, config)
    emb["E"][:V] += head["E_out"]
    grads.update(emb)
    return mlm, nsp, grads


# --------------------------------------------------------------------------- checked entry points
def check_pair_input(tokens, segments, config: PairEncoderConfig, name: str = "tokens"):
    """``tokens`` and ``segments`` as contiguous int arrays, checked against ``config`` (public, not in ``__all__``).

    Parameters
    ----------
    tokens, segments : array of int, shape (B, n)
        Input ids (tokens, [MASK], [PAD], [CLS]) and segment ids; ``n`` at most the position
        table's length, and a slot that is not [PAD] in every row.
    config : PairEncoderConfig
        Trusted (the caller's checked value).
    name : str
        The name of ``tokens`` in messages.

    Raises
    ------
    TypeError
        If an array does not hold integers.
    ValueError
        If it is empty, too long, holds an id or segment out of range, has a row of [PAD] only,
        or the shapes differ.

    Examples
    --------
    >>> cfg = PairEncoderConfig(enc.EncoderConfig(vocab_size=6, length=8, d_model=8, n_blocks=1, n_heads=2, pad=True))
    >>> tokens, segments = encode_pair([2, 3], [4], cfg)
    >>> [a.shape for a in check_pair_input(tokens[None], segments[None], cfg)]
    [(1, 8), (1, 8)]
    """
    tokens = as_int_array(tokens, name, ndim=2)
    if tokens.size == 0:
        raise ValueError(f"{name} must not be empty, got shape {tokens.shape}")
    if tokens.shape[1] > config.encoder.length:
        raise ValueError(f"{name} has length {tokens.shape[1]}, longer than the position table "
                         f"({config.encoder.length})")
    if tokens.min() < 0 or tokens.max() >= config.input_vocab_size:
        raise ValueError(f"{name} must be input ids in [0, {config.input_vocab_size}) (tokens, [MASK], [PAD], "
                         f"[CLS]), got values from {int(tokens.min())} to {int(tokens.max())}")
    if np.any((tokens == config.pad_id).all(axis=1)):
        raise ValueError(f"{name} must have at least one slot that is not [PAD] in every row")
    segments = as_int_array(segments, "segments", ndim=2)
    if segments.shape != tokens.shape:
        raise ValueError(f"segments must have the shape of {name} {tokens.shape}, got {segments.shape}")
    if segments.min() < 0 or segments.max() >= config.n_segments:
        raise ValueError(f"segments must hold segment ids in [0, {config.n_segments}), got values from "
                         f"{int(segments.min())} to {int(segments.max())}")
    return np.ascontiguousarray(tokens), np.ascontiguousarray(segments)


def pair_loss_and_grads(params, config: PairEncoderConfig, shown, segments, targets, selected, nsp_labels=None,
                        nsp_weight: float = 1.0):
    r"""Masked-LM and NSP losses of a batch of pairs, and the gradient of $\mathcal L_{\mathrm{MLM}} + w\,\mathcal L_{\mathrm{NSP}}$.

    Parameters
    ----------
    params : mapping
        As made by [`init_pair_params`][mlm_book.nn.pairs.init_pair_params].
    config : PairEncoderConfig
    shown : array of int, shape (B, n)
        The corrupted input ids (tokens, [MASK], [PAD], [CLS]).
    segments : array of int, shape (B, n)
    targets : array of int, shape (B, n)
        The clean tokens; read at the selected positions only.
    selected : array of bool, shape (B, n)
        The masked-LM positions; at least one, never [PAD] or [CLS].
    nsp_labels : array of int, shape (B,), optional
        0 = B follows A, 1 = B is random; ``None`` trains no NSP.
    nsp_weight : float
        $w \ge 0$.

    Returns
    -------
    mlm : float
        Mean cross-entropy over the selected positions (nats).
    nsp : float or None
        Mean NSP cross-entropy over the pairs (``None`` without ``nsp_labels`` or with $w = 0$).
    grads : dict of str to ndarray
        One array per parameter, shaped like it.

    Raises
    ------
    TypeError
        If an argument has the wrong type.
    ValueError
        If the shapes disagree, an id or segment is out of range, nothing is selected, a
        [PAD] or [CLS] slot is selected, a target is not a real token, an NSP label is not 0
        or 1, or ``nsp_weight`` is negative or not finite.

    Examples
    --------
    >>> cfg = PairEncoderConfig(enc.EncoderConfig(vocab_size=6, length=8, d_model=8, n_blocks=1, n_heads=2, pad=True))
    >>> p = init_pair_params(cfg, np.random.default_rng(0), dtype=np.float64)
    >>> tokens, segments = encode_pair([2, 3], [4], cfg)
    >>> selected = np.zeros((1, 8), bool); selected[0, 2] = True
    >>> shown = tokens[None].copy(); shown[selected] = cfg.mask_id
    >>> mlm, nsp, grads = pair_loss_and_grads(p, cfg, shown, segments[None], tokens[None], selected, [0])
    >>> bool(0 < mlm < 10 and abs(nsp - np.log(2)) < 0.1), grads["S"].shape
    (True, (2, 8))
    """
    params = check_pair_params(params, config)
    shown, segments = check_pair_input(shown, segments, config, "shown")
    targets = as_int_array(targets, "targets", ndim=2)
    if targets.shape != shown.shape:
        raise ValueError(f"targets must have the shape of shown {shown.shape}, got {targets.shape}")
    try:
        selected = np.asarray(selected)
    except (TypeError, ValueError) as error:
        raise TypeError(f"selected must be a boolean array (not ragged): {error}") from None
    if selected.dtype != bool:
        raise TypeError(f"selected must be a boolean array, got dtype {selected.dtype}")
    if selected.shape != shown.shape:
        raise ValueError(f"selected must have the shape of shown {shown.shape}, got {selected.shape}")
    if not selected.any():
        raise ValueError("selected must select at least one position")
    if np.any(selected & ((shown == config.pad_id) | (shown == config.cls_id))):
        raise ValueError("selected must not select a [PAD] or [CLS] slot")
    chosen = targets[selected]
    if chosen.min() < 0 or chosen.max() >= config.vocab_size:
        raise ValueError(f"targets must be real token ids in [0, {config.vocab_size}) at the selected positions, "
                         f"got values from {int(chosen.min())} to {int(chosen.max())}")
    nsp_weight = check_real(nsp_weight, "nsp_weight")
    if not (math.isfinite(nsp_weight) and nsp_weight >= 0):
        raise ValueError(f"nsp_weight must be a finite number >= 0, got {nsp_weight!r}")
    if nsp_labels is not None:
        nsp_labels = as_int_array(nsp_labels, "nsp_labels", ndim=1)
        if nsp_labels.shape != (shown.shape[0],):
            raise ValueError(f"nsp_labels must hold one label per row of shown ({shown.shape[0]}), got shape "
                             f"{nsp_labels.shape}")
        if np.any((nsp_labels != 0) & (nsp_labels != 1)):
            raise ValueError("nsp_labels must be 0 (B follows A) or 1 (B is random)")
        if np.any(shown[:, 0] != config.cls_id):
            raise ValueError("shown must start every row with [CLS] when nsp_labels are given")
    mlm, nsp, grads = pair_loss_and_grads_unchecked(params, config, shown, segments, targets, selected, nsp_labels,
                                                    nsp_weight)
    return mlm, (None if math.isnan(nsp) else nsp), grads


def pair_hidden_states(params, config: PairEncoderConfig, tokens, segments) -> list[np.ndarray]:
    """The residual stream at every layer for (clean or corrupted) pair inputs.

    Parameters
    ----------
    params : mapping
    config : PairEncoderConfig
    tokens, segments : array of int, shape (B, n)

    Returns
    -------
    list of ndarray, each (B, n, d), float64
        Index 0 is $E[x] + P + S$; index $\\ell$ the stream after block $\\ell$, before the
        final LayerNorm (as [`mlm_book.nn.encoder.hidden_states`][mlm_book.nn.encoder.hidden_states]).

    Raises
    ------
    TypeError
        If an argument has the wrong type.
    ValueError
        If ``params`` does not match ``config``, an id or segment is out of range, the
        shapes disagree, or a row is all [PAD].

    Examples
    --------
    >>> cfg = PairEncoderConfig(enc.EncoderConfig(vocab_size=6, length=8, d_model=8, n_blocks=2, n_heads=2, pad=True))
    >>> p = init_pair_params(cfg, np.random.default_rng(0))
    >>> tokens, segments = encode_pair([2, 3], [4], cfg)
    >>> hs = pair_hidden_states(p, cfg, tokens[None], segments[None])
    >>> len(hs), hs[2].shape
    (3, (1, 8, 8))
    """
    params = check_pair_params(params, config)
    tokens, segments = check_pair_input(tokens, segments, config)
    B, n = tokens.shape
    x0, _ = pair_embedding_forward(params, config, tokens, segments)
    _, _, hidden = blocks_forward(params, config, x0, (B, n), None, key_bias(config, tokens, x0.dtype))
    return [h.reshape(B, n, -1).astype(np.float64) for h in hidden]


def nsp_probabilities(params, config: PairEncoderConfig, tokens, segments) -> np.ndarray:
    """The NSP head's probabilities (is next, is random) of each pair.

    Parameters
    ----------
    params : mapping
    config : PairEncoderConfig
    tokens, segments : array of int, shape (B, n)
        Pair inputs, each row starting with [CLS].

    Returns
    -------
    ndarray, shape (B, 2), float64

    Raises
    ------
    TypeError
        If an argument has the wrong type.
    ValueError
        As for [`pair_hidden_states`][mlm_book.nn.pairs.pair_hidden_states], or a row does not start with [CLS].

    Examples
    --------
    >>> cfg = PairEncoderConfig(enc.EncoderConfig(vocab_size=6, length=8, d_model=8, n_blocks=1, n_heads=2, pad=True))
    >>> p = init_pair_params(cfg, np.random.default_rng(0))
    >>> tokens, segments = encode_pair([2, 3], [4], cfg)
    >>> proba = nsp_probabilities(p, cfg, tokens[None], segments[None])
    >>> proba.shape, bool(abs(proba.sum() - 1) < 1e-6)
    ((1, 2), True)
    """
    params = check_pair_params(params, config)
    tokens, segments = check_pair_input(tokens, segments, config)
    if np.any(tokens[:, 0] != config.cls_id):
        raise ValueError(f"tokens must start every row with [CLS] (id {config.cls_id})")
    B, n = tokens.shape
    x0, _ = pair_embedding_forward(params, config, tokens, segments)
    x, _, _ = blocks_forward(params, config, x0, (B, n), np.arange(B) * n, key_bias(config, tokens, x0.dtype))
    h, _ = layers.layer_norm_forward(x, params["ln_f.g"], params["ln_f.b"], config.encoder.ln_eps)
    z = (h @ params["nsp.W"] + params["nsp.b"]).astype(np.float64)
    z -= z.max(axis=1, keepdims=True)
    np.exp(z, out=z)
    return z / z.sum(axis=1, keepdims=True)
