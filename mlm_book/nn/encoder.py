r"""A BERT-style encoder: configuration, initialisation, forward and backward passes.

The model. A token table $E$ with $V + 1$ rows (the last, id $V$, is the input-only
[MASK] token) and a learned position table $P$ give the input rows $x_0 = E[\tilde x] + P$.
An encoder configured with ``pad=True`` has one more input-only row, [PAD] (id $V + 1$):
a slot holding [PAD] is masked as a key in every attention layer, so nothing it holds
reaches any other position (windows cut at a document's edge, chapter 6).
Then ``n_blocks`` pre-LN blocks ([`mlm_book.nn.layers.block_forward`][mlm_book.nn.layers.block_forward], no causal mask
unless the config asks for one: ``causal=True``, chapter 10's left-to-right reader) update
the residual stream, a final LayerNorm normalises it, and the output layer reuses
the first $V$ rows of $E$:

$$ \text{logits} = \operatorname{LN}(x_L)\, E_{:V}^\top / \sqrt d + b . $$

Two other heads can be configured, for the experiments that ask what this form does:
``tied=False`` gives the output layer its own table ``E_out`` in place of $E_{:V}$, and
``head="plain"`` drops the final LayerNorm and the bias, $\text{logits} = x_L E_{:V}^\top/\sqrt d$,
the form $u = hE^\top$ of many accounts of BERT, in this table's scale (the book's $E$ is $\sqrt d$ times
a table of the Transformer's convention, so $hE'^\top = hE^\top/\sqrt d$).

[MASK] is never a target, so it has no output logit.

The loss is the mean cross-entropy over the selected positions of a batch (normalised by
the number of selected positions in the whole batch). Only those rows reach the loss, so
the last block's output projection, MLP and the head run on the selected rows only
([`forward`][mlm_book.nn.encoder.forward] with ``selected``); the result equals the full forward pass restricted to
those rows (tested to 1e-12 in float64).

Hidden states ([`hidden_states`][mlm_book.nn.encoder.hidden_states]): layer 0 is $E[x] + P$; layer $\ell$ is the residual
stream after block $\ell$. The last layer is taken *before* the final LayerNorm.

Parameters live in a flat ``dict`` of named arrays ([`param_names`][mlm_book.nn.encoder.param_names] gives the order),
which is what the cache stores and Adam updates.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

import numpy as np

from mlm_book.nn import layers
from mlm_book.validation import (
    as_int_array,
    check_bool,
    check_generator,
    check_instance,
    check_positive_int,
    check_tokens,
)

__all__ = [
    "EncoderConfig",
    "param_names",
    "decayed_names",
    "param_shapes",
    "init_params",
    "check_params",
    "forward",
    "backward",
    "loss_and_grads",
    "loss",
    "logits",
    "predict_proba",
    "hidden_states",
    "attention_weights",
]

#: Most parameters an encoder may have (4 GB in float32): far beyond a NumPy encoder, and a
#: config past it is refused when made instead of failing to allocate (or looping) later.
MAX_PARAMETERS = 10**9

#: The output heads an encoder can have (see [`EncoderConfig`][mlm_book.nn.encoder.EncoderConfig]).
HEADS = ("normalised", "plain")

_BLOCK_PARAMS = ("ln1.g", "ln1.b", "attn.W_qkv", "attn.b_qkv", "attn.W_o", "attn.b_o",
                 "ln2.g", "ln2.b", "mlp.W_1", "mlp.b_1", "mlp.W_2", "mlp.b_2")


@dataclass(frozen=True)
class EncoderConfig:
    """Shape of an encoder.

    Parameters
    ----------
    vocab_size : int
        $V$, the number of real tokens (output classes). The input vocabulary has one more
        id, ``mask_id = V``.
    length : int
        Rows of the position table: the longest sequence the encoder reads.
    d_model : int
        Width $d$ of the residual stream.
    n_blocks : int
        Number of pre-LN blocks.
    n_heads : int
        Attention heads; must divide ``d_model``.
    mlp_ratio : int
        MLP hidden width as a multiple of $d$ (4 in the book).
    ln_eps : float
        LayerNorm epsilon.
    init_std : float
        Standard deviation of the normal initialisation of every matrix and table; the
        two matrices that write into the residual stream (``attn.W_o``, ``mlp.W_2``) are
        further divided by $\\sqrt{2 \\cdot n_\\text{blocks}}$.
    token_init_std : float, optional
        Standard deviation of the token table $E$'s initialisation; default ``init_std``.
        With 1, the tied head $\\operatorname{LN}(x)E^\\top/\\sqrt d$ starts with logits of unit
        variance (each of the $d$ normalised coordinates has unit variance), the scale the
        $1/\\sqrt d$ is there for.
    pad : bool
        Add the input-only [PAD] id ``V + 1``, masked as a key wherever it appears.
    causal : bool
        Apply the causal mask in every attention layer: position $i$ reads only positions
        $\\le i$ (a left-to-right reader, trained on next-token prediction in chapter 10).
    head : {"normalised", "plain"}
        ``"normalised"`` (the book's): $\\operatorname{LN}(x_L) E_{:V}^\\top/\\sqrt d + b$.
        ``"plain"``: $x_L E_{:V}^\\top/\\sqrt d$, no final LayerNorm and no output bias.
    tied : bool
        Whether the output layer reuses the token table's first $V$ rows (BERT's choice) or
        has its own table ``E_out`` of shape ``(V, d)``, initialised and decayed like ``E``.

    Raises
    ------
    TypeError, ValueError
        If a field has the wrong type or range, ``n_heads`` does not divide ``d_model``, or the
        encoder would have more than ``MAX_PARAMETERS`` parameters.

    Examples
    --------
    >>> cfg = EncoderConfig(vocab_size=25, length=24, d_model=32, n_blocks=2, n_heads=2)
    >>> cfg.mask_id, cfg.input_vocab_size
    (25, 26)
    >>> EncoderConfig(vocab_size=25, length=24, pad=True).pad_id
    26
    >>> "causal" in EncoderConfig(vocab_size=25, length=24).to_dict()
    False
    """

    vocab_size: int
    length: int
    d_model: int = 32
    n_blocks: int = 2
    n_heads: int = 2
    mlp_ratio: int = 4
    ln_eps: float = 1e-5
    init_std: float = 0.02
    token_init_std: float | None = None
    pad: bool = False
    causal: bool = False
    head: str = "normalised"
    tied: bool = True

    def __post_init__(self):
        if not isinstance(self.head, str) or self.head not in HEADS:
            raise ValueError(f"head must be one of {HEADS}, got {self.head!r}")
        for name in ("pad", "causal", "tied"):
            if not isinstance(getattr(self, name), bool):
                raise TypeError(f"{name} must be a bool, got {type(getattr(self, name)).__name__}")
        for name in ("vocab_size", "length", "d_model", "n_blocks", "n_heads", "mlp_ratio"):
            check_positive_int(getattr(self, name), name)
        if self.d_model % self.n_heads:
            raise ValueError(f"n_heads must divide d_model, got d_model={self.d_model}, n_heads={self.n_heads}")
        names = ("ln_eps", "init_std") + (("token_init_std",) if self.token_init_std is not None else ())
        for name in names:
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0 or not math.isfinite(value):
                raise ValueError(f"{name} must be a positive finite number, got {value!r}")
        # Python ints: numpy integer fields could overflow and wrap below the limit
        V, n, d, L, r = (int(getattr(self, name)) for name in ("vocab_size", "length", "d_model", "n_blocks",
                                                               "mlp_ratio"))
        per_block = (4 + 2 * r) * d * d + (9 + r) * d  # as param_shapes lays them out
        count = (V + 1 + int(self.pad) + n) * d + L * per_block
        count += (2 * d + V) * (self.head == "normalised") + V * d * (not self.tied)
        if count > MAX_PARAMETERS:
            raise ValueError(f"an encoder with vocab_size={V}, length={n}, d_model={d}, n_blocks={L}, "
                             f"mlp_ratio={r} has {count} parameters, more than the limit {MAX_PARAMETERS}")

    @property
    def mask_id(self) -> int:
        """Input id of [MASK] (equal to ``vocab_size``)."""
        return self.vocab_size

    @property
    def pad_id(self) -> int | None:
        """Input id of [PAD] (``vocab_size + 1``), or ``None`` without ``pad``."""
        return self.vocab_size + 1 if self.pad else None

    @property
    def input_vocab_size(self) -> int:
        """Rows of the token table: the $V$ tokens, [MASK], and [PAD] if configured."""
        return self.vocab_size + 1 + int(self.pad)

    def to_dict(self) -> dict:
        """The fields as a JSON-serialisable dict (used in cache keys).

        ``pad`` and ``causal`` are left out when False, ``head`` and ``tied`` when they have
        the book's values, so the keys of encoders without them are as before.
        """
        fields = asdict(self)
        for name in ("pad", "causal"):
            if not fields[name]:
                del fields[name]
        if fields["head"] == "normalised":
            del fields["head"]
        if fields["tied"]:
            del fields["tied"]
        return fields


def param_names(config: EncoderConfig) -> tuple[str, ...]:
    """Names of the parameter arrays, in a fixed order.

    Raises
    ------
    TypeError
        If ``config`` is not an [`EncoderConfig`][mlm_book.nn.encoder.EncoderConfig].

    Examples
    --------
    >>> names = param_names(EncoderConfig(vocab_size=5, length=3, d_model=8, n_blocks=1, n_heads=2))
    >>> names[:3], len(names)
    (('E', 'P', 'blocks.0.ln1.g'), 17)
    """
    check_instance(config, "config", EncoderConfig)
    names = ["E", "P"]
    for block in range(config.n_blocks):
        names += [f"blocks.{block}.{name}" for name in _BLOCK_PARAMS]
    if config.head == "normalised":
        names += ["ln_f.g", "ln_f.b", "b_out"]
    # last, so that every other array draws the same initial values as in the tied encoder
    if not config.tied:
        names.append("E_out")
    return tuple(names)


def decayed_names(config: EncoderConfig) -> tuple[str, ...]:
    """The parameters that weight decay applies to: the embedding tables and the weight matrices.

    As in BERT: the token table ``E`` (tied to the output layer), the position table ``P``
    and every ``W_*`` matrix are decayed; biases (``b_*``, ``b_out``) and LayerNorm gains and
    offsets (``*.g``, ``*.b``) are not.

    Raises
    ------
    TypeError
        If ``config`` is not an [`EncoderConfig`][mlm_book.nn.encoder.EncoderConfig].

    Examples
    --------
    >>> decayed_names(EncoderConfig(vocab_size=5, length=3, d_model=8, n_blocks=1, n_heads=2))
    ('E', 'P', 'blocks.0.attn.W_qkv', 'blocks.0.attn.W_o', 'blocks.0.mlp.W_1', 'blocks.0.mlp.W_2')
    """
    check_instance(config, "config", EncoderConfig)
    return tuple(name for name in param_names(config)
                 if name in ("E", "P", "E_out") or name.rsplit(".", 1)[-1].startswith("W_"))


def param_shapes(config: EncoderConfig) -> dict[str, tuple[int, ...]]:
    """Shape of every parameter array.

    Raises
    ------
    TypeError
        If ``config`` is not an [`EncoderConfig`][mlm_book.nn.encoder.EncoderConfig].

    Examples
    --------
    >>> shapes = param_shapes(EncoderConfig(vocab_size=25, length=24, d_model=32, n_blocks=2, n_heads=2))
    >>> shapes["E"], shapes["blocks.1.attn.W_qkv"], shapes["blocks.0.mlp.W_1"], shapes["b_out"]
    ((26, 32), (32, 96), (32, 128), (25,))
    >>> sum(int(np.prod(s)) for s in shapes.values())
    27097
    """
    check_instance(config, "config", EncoderConfig)
    d, k = config.d_model, config.mlp_ratio * config.d_model
    block = {"ln1.g": (d,), "ln1.b": (d,), "attn.W_qkv": (d, 3 * d), "attn.b_qkv": (3 * d,),
             "attn.W_o": (d, d), "attn.b_o": (d,), "ln2.g": (d,), "ln2.b": (d,),
             "mlp.W_1": (d, k), "mlp.b_1": (k,), "mlp.W_2": (k, d), "mlp.b_2": (d,)}
    shapes = {"E": (config.input_vocab_size, d), "P": (config.length, d)}
    for index in range(config.n_blocks):
        shapes.update({f"blocks.{index}.{name}": shape for name, shape in block.items()})
    if config.head == "normalised":
        shapes.update({"ln_f.g": (d,), "ln_f.b": (d,), "b_out": (config.vocab_size,)})
    if not config.tied:
        shapes["E_out"] = (config.vocab_size, d)
    return shapes


def init_params(config: EncoderConfig, rng: np.random.Generator, dtype=np.float32) -> dict[str, np.ndarray]:
    r"""Fresh parameters: normal matrices and tables, LayerNorm gains one, biases zero.

    Every matrix and the position table are drawn with standard deviation ``init_std`` (the
    two residual-stream writers further scaled down), the token table with
    ``token_init_std`` when it is set.

    All arrays are views into one contiguous buffer (in [`param_names`][mlm_book.nn.encoder.param_names] order), which
    lets [`mlm_book.nn.adam.Adam`][mlm_book.nn.adam.Adam] update every parameter with a handful of vector
    operations.

    Parameters
    ----------
    config : EncoderConfig
    rng : numpy.random.Generator
    dtype : numpy dtype
        ``float32`` for training, ``float64`` for the gradient check.

    Returns
    -------
    dict of str to ndarray

    Raises
    ------
    TypeError
        If ``config`` is not an [`EncoderConfig`][mlm_book.nn.encoder.EncoderConfig], ``rng`` is not a
        ``numpy.random.Generator`` or ``dtype`` is not float32 or float64.

    Examples
    --------
    >>> cfg = EncoderConfig(vocab_size=5, length=3, d_model=8, n_blocks=1, n_heads=2)
    >>> p = init_params(cfg, np.random.default_rng(0))
    >>> p["E"].shape, p["E"].dtype, float(p["blocks.0.ln1.g"][0])
    ((6, 8), dtype('float32'), 1.0)
    """
    check_instance(config, "config", EncoderConfig)
    check_generator(rng)
    try:
        dtype = np.dtype(dtype)
    except (TypeError, ValueError):
        raise TypeError(f"dtype must be float32 or float64, got {dtype!r}") from None
    if dtype not in (np.dtype(np.float32), np.dtype(np.float64)):
        raise TypeError(f"dtype must be float32 or float64, got {dtype}")
    shapes = param_shapes(config)
    sizes = [int(np.prod(shapes[name])) for name in param_names(config)]
    buffer = np.zeros(sum(sizes), dtype=dtype)
    params, offset = {}, 0
    residual_scale = 1.0 / math.sqrt(2.0 * config.n_blocks)
    for name, size in zip(param_names(config), sizes):
        view = buffer[offset:offset + size].reshape(shapes[name])
        offset += size
        leaf = name.rsplit(".", 1)[-1]
        if leaf == "g":
            view[...] = 1.0
        elif name in ("E", "E_out") and config.token_init_std is not None:
            view[...] = rng.normal(0.0, config.token_init_std, size=view.shape)
        elif name in ("E", "P", "E_out") or leaf.startswith("W_"):
            std = config.init_std * (residual_scale if leaf in ("W_o", "W_2") else 1.0)
            view[...] = rng.normal(0.0, std, size=view.shape)
        params[name] = view
    return params


def check_params(params, config: EncoderConfig, name: str = "params") -> dict[str, np.ndarray]:
    """Check that ``params`` has every array of ``config`` with its shape, a float dtype, finite values.

    Raises
    ------
    TypeError
        Not a mapping, an array of non-float dtype, ``config`` not an
        [`EncoderConfig`][mlm_book.nn.encoder.EncoderConfig] or ``name`` not a string.
    ValueError
        A missing or extra name, a wrong shape, or a NaN/infinite entry (as a corrupted or
        diverged cache entry would have).

    Examples
    --------
    >>> cfg = EncoderConfig(vocab_size=5, length=3, d_model=8, n_blocks=1, n_heads=2)
    >>> p = init_params(cfg, np.random.default_rng(0))
    >>> p["P"][0, 0] = np.nan
    >>> check_params(p, cfg)
    Traceback (most recent call last):
    ...
    ValueError: params['P'] contains NaN or infinite values

    >>> len(check_params(init_params(cfg, np.random.default_rng(0)), cfg)) == len(p)     # a valid table passes whole
    True
    """
    check_instance(config, "config", EncoderConfig)
    check_instance(name, "name", str)
    if not hasattr(params, "keys"):
        raise TypeError(f"{name} must be a mapping of parameter names to arrays, got {type(params).__name__}")
    shapes = param_shapes(config)
    missing = sorted(set(shapes) - set(params))
    extra = sorted(set(params) - set(shapes))
    if missing or extra:
        raise ValueError(f"{name} does not match the config: missing {missing}, unexpected {extra}")
    out = {}
    for key in param_names(config):
        array = np.asarray(params[key])
        if array.dtype not in (np.float32, np.float64):
            raise TypeError(f"{name}[{key!r}] must be float32 or float64, got {array.dtype}")
        if array.shape != shapes[key]:
            raise ValueError(f"{name}[{key!r}] must have shape {shapes[key]}, got {array.shape}")
        if not np.all(np.isfinite(array)):
            raise ValueError(f"{name}[{key!r}] contains NaN or infinite values")
        out[key] = array
    return out


# --------------------------------------------------------------------------- building blocks (unchecked)
# Public for the package's own passes and loops (the training step, the gradient check, the
# probes that resume the stream at a block), which check their inputs once; not in `__all__`,
# so the bad-input sweep does not feed them what only a checked entry point must refuse.
def key_bias(config: EncoderConfig, shown: np.ndarray, dtype):
    """The attention bias that hides [PAD] keys and, for a causal encoder, later positions.

    Parameters
    ----------
    config : EncoderConfig
    shown : ndarray of int, shape (B, n)
        Input ids, checked (as by [`check_shown`][mlm_book.nn.encoder.check_shown]).
    dtype : numpy dtype
        That of the attention scores.

    Returns
    -------
    ndarray or None
        ``None`` when nothing is hidden; ``(B, n)`` for [PAD] alone; ``(B, n, n)`` (one row
        per query) with the causal mask. Hidden entries hold a large negative number, the
        others 0.

    Examples
    --------
    >>> cfg = EncoderConfig(vocab_size=5, length=4, d_model=8, n_blocks=1, n_heads=2, pad=True)
    >>> key_bias(cfg, np.array([[0, 1, 2, 3]]), np.float32) is None
    True
    >>> bool(key_bias(cfg, np.array([[0, 1, cfg.pad_id, 3]]), np.float32)[0, 2] < -1e3)
    True
    """
    bias = None
    if config.pad:
        valid = shown != config.pad_id
        if not valid.all():
            bias = layers.key_bias_from_valid(valid, dtype)
    if not config.causal:
        return bias
    causal = layers.causal_bias(shown.shape[1], dtype)
    if bias is None:
        return np.broadcast_to(causal, (shown.shape[0],) + causal.shape)
    return causal[None] + bias[:, None, :]


def blocks_and_head(params, config: EncoderConfig, x0: np.ndarray, shape, rows, keep_hidden=False, key_bias=None):
    """The blocks and the output layer from the input rows ``x0``; the last block computes ``rows`` only.

    Parameters
    ----------
    params : mapping
        Checked parameters of ``config``.
    config : EncoderConfig
    x0 : ndarray, shape (B*n, d)
        The embedding layer's output.
    shape : tuple of int
        ``(B, n)``.
    rows : ndarray of int or None
        Flat positions whose logits are wanted (all when ``None``).
    keep_hidden : bool
        Return the residual stream after every block instead (no head).
    key_bias : ndarray or None
        From [`key_bias`][mlm_book.nn.encoder.key_bias].

    Returns
    -------
    logits, cache
        ``(len(rows), V)`` logits and the cache of
        [`blocks_and_head_backward`][mlm_book.nn.encoder.blocks_and_head_backward]; with
        ``keep_hidden``, the list ``[x0, x1, ..., xL]`` of (B*n, d) arrays instead.

    Examples
    --------
    >>> cfg = EncoderConfig(vocab_size=5, length=4, d_model=8, n_blocks=1, n_heads=2)
    >>> p = init_params(cfg, np.random.default_rng(0), dtype=np.float64)
    >>> shown = np.array([[0, 5, 2, 3]])
    >>> x0, _ = layers.embedding_forward(shown, p["E"], p["P"])
    >>> out, _ = blocks_and_head(p, cfg, x0, shown.shape, np.array([1]))
    >>> bool(np.allclose(out, forward(p, cfg, shown)[0][1:2], atol=1e-12, rtol=0))
    True
    """
    x, caches, hidden = x0, [], [x0]
    for block in range(config.n_blocks):
        block_rows = rows if block == config.n_blocks - 1 else None
        x, cache = layers.block_forward(x, params, f"blocks.{block}.", config.n_heads, shape,
                                        config.ln_eps, block_rows, key_bias)
        caches.append(cache)
        if keep_hidden:
            hidden.append(x)
    if keep_hidden:
        return hidden
    out, head_cache = head_logits(params, config, x)
    return out, (caches, head_cache)


def output_table(params, config: EncoderConfig) -> np.ndarray:
    """The output layer's table, shape ``(V, d)``: ``E[:V]`` when tied, else ``E_out``.

    Examples
    --------
    >>> cfg = EncoderConfig(vocab_size=5, length=3, d_model=8, n_blocks=1, n_heads=2, tied=False)
    >>> p = init_params(cfg, np.random.default_rng(0))
    >>> output_table(p, cfg) is p["E_out"], output_table(p, EncoderConfig(5, 3, 8, 1, 2)).shape
    (True, (5, 8))
    """
    check_instance(config, "config", EncoderConfig)
    return params["E"][:config.vocab_size] if config.tied else params["E_out"]


def head_logits(params, config: EncoderConfig, x: np.ndarray):
    """The configured head on residual-stream rows ``x`` of shape ``(N, d)``: ``(logits, cache)``.

    Unchecked beyond what the layer functions check (the encoder's passes call it on their own
    rows); [`head_logits_backward`][mlm_book.nn.encoder.head_logits_backward] takes the cache.

    Examples
    --------
    >>> cfg = EncoderConfig(vocab_size=5, length=3, d_model=8, n_blocks=1, n_heads=2, head="plain")
    >>> p = init_params(cfg, np.random.default_rng(0), dtype=np.float64)
    >>> x = np.random.default_rng(1).normal(size=(2, 8))
    >>> z, _ = head_logits(p, cfg, x)
    >>> bool(np.allclose(z, x @ p["E"][:5].T / np.sqrt(8), rtol=0, atol=1e-12))
    True
    """
    table = output_table(params, config)
    if config.head == "plain":
        return layers.plain_head_forward(x, table)
    return layers.head_forward(x, params["ln_f.g"], params["ln_f.b"], table, params["b_out"], config.ln_eps)


def head_logits_backward(dlogits: np.ndarray, cache, config: EncoderConfig):
    """Backward of [`head_logits`][mlm_book.nn.encoder.head_logits]: ``(dx, grads, d_table)``.

    ``grads`` holds the head's own parameters (none for the plain head); ``d_table`` is the
    gradient of [`output_table`][mlm_book.nn.encoder.output_table].
    """
    if config.head == "plain":
        dx, head = layers.plain_head_backward(dlogits, cache)
        return dx, {}, head["E_out"]
    dx, head = layers.head_backward(dlogits, cache)
    return dx, {"ln_f.g": head["ln_f.g"], "ln_f.b": head["ln_f.b"], "b_out": head["b_out"]}, head["E_out"]


def blocks_and_head_backward(dlogits: np.ndarray, cache, config: EncoderConfig):
    """The backward pass of [`blocks_and_head`][mlm_book.nn.encoder.blocks_and_head].

    Parameters
    ----------
    dlogits : ndarray, shape like the logits
    cache : tuple
        From [`blocks_and_head`][mlm_book.nn.encoder.blocks_and_head].
    config : EncoderConfig

    Returns
    -------
    dx0 : ndarray, shape (B*n, d)
        The gradient with respect to the input rows.
    grads : dict of str to ndarray
        The gradients of the blocks, the final LayerNorm and ``b_out``.
    dE_out : ndarray, shape (V, d)
        The gradient of the output table: to add to ``E[:V]``'s when tied (see
        [`add_table_gradient`][mlm_book.nn.encoder.add_table_gradient]).
    """
    caches, head_cache = cache
    dx, grads, dE_out = head_logits_backward(dlogits, head_cache, config)
    for block_cache in reversed(caches):
        dx, g = layers.block_backward(dx, block_cache)
        grads.update(g)
    return dx, grads, dE_out


def add_table_gradient(grads: dict, emb: dict, dE_out: np.ndarray, config: EncoderConfig) -> dict:
    """Put the embedding's and the output table's gradients into ``grads`` (tied: both into ``E``).

    Examples
    --------
    >>> cfg = EncoderConfig(vocab_size=2, length=3, d_model=2, n_blocks=1, n_heads=1)
    >>> g = add_table_gradient({}, {"E": np.zeros((3, 2)), "P": np.zeros((3, 2))}, np.ones((2, 2)), cfg)
    >>> g["E"].tolist()
    [[1.0, 1.0], [1.0, 1.0], [0.0, 0.0]]
    """
    if config.tied:
        emb["E"][:config.vocab_size] += dE_out
    else:
        grads["E_out"] = dE_out
    grads["E"], grads["P"] = emb["E"], emb["P"]
    return grads


def _rows_and_targets(targets: np.ndarray, selected: np.ndarray):
    rows = np.flatnonzero(selected.reshape(-1))
    return rows, targets.reshape(-1)[rows]


def loss_and_grads_unchecked(params, config: EncoderConfig, shown: np.ndarray, targets: np.ndarray,
                             selected: np.ndarray):
    """[`loss_and_grads`][mlm_book.nn.encoder.loss_and_grads] without its checks: the training step's core.

    The caller vouches for the inputs (checked parameters, input ids as by
    [`check_shown`][mlm_book.nn.encoder.check_shown], at least one selected position, targets
    in ``[0, V)`` there); the training loop checks each batch once instead.

    Returns
    -------
    loss : float
        Nats per selected position.
    grads : dict of str to ndarray
        One per parameter (not in [`param_names`][mlm_book.nn.encoder.param_names]' order).

    Examples
    --------
    >>> cfg = EncoderConfig(vocab_size=5, length=4, d_model=8, n_blocks=2, n_heads=2)
    >>> p = init_params(cfg, np.random.default_rng(0), dtype=np.float64)
    >>> args = (np.array([[0, 5, 2, 3]]), np.array([[0, 1, 2, 3]]), np.array([[False, True, False, True]]))
    >>> loss_and_grads_unchecked(p, cfg, *args)[0] == loss_and_grads(p, cfg, *args)[0]
    True
    """
    rows, target_rows = _rows_and_targets(targets, selected)
    x0, emb_cache = layers.embedding_forward(shown, params["E"], params["P"])
    out, cache = blocks_and_head(params, config, x0, shown.shape, rows, key_bias=key_bias(config, shown, x0.dtype))
    value, dlogits = layers.cross_entropy_forward(out, target_rows)
    dx0, grads, dE_out = blocks_and_head_backward(dlogits, cache, config)
    _, emb = layers.embedding_backward(dx0, emb_cache)
    return value, add_table_gradient(grads, emb, dE_out, config)


# --------------------------------------------------------------------------- validation
# `check_shown` is public (not in `__all__`) for the package's loops and probes that check ids once.
def check_shown(shown, config: EncoderConfig, name: str = "shown") -> np.ndarray:
    """``shown`` as a contiguous 2-D array of input ids of ``config``, no longer than its position table.

    Parameters
    ----------
    shown : array of int, shape (B, n)
        Ids in ``[0, V]`` ([MASK] is ``V``), and ``V + 1`` ([PAD]) if the config has it.
    config : EncoderConfig
        Trusted (the caller's checked value).
    name : str
        The argument's name in messages.

    Raises
    ------
    TypeError
        If ``shown`` does not hold integers.
    ValueError
        If it is not 2-D, holds an id out of range or is longer than ``config.length``.

    Examples
    --------
    >>> cfg = EncoderConfig(vocab_size=5, length=4, d_model=8, n_blocks=1, n_heads=2)
    >>> check_shown([[0, 5, 2]], cfg).shape
    (1, 3)
    >>> check_shown([[0, 1, 2, 3, 4]], cfg, "tokens")
    Traceback (most recent call last):
    ...
    ValueError: tokens has length 5, longer than the position table (4)
    """
    shown = check_tokens(shown, name, config.input_vocab_size, ndim=2)
    if shown.shape[1] > config.length:
        raise ValueError(f"{name} has length {shown.shape[1]}, longer than the position table ({config.length})")
    return np.ascontiguousarray(shown)


def _check_selection(targets, selected, shape, config: EncoderConfig):
    try:
        selected = np.asarray(selected)
    except (TypeError, ValueError) as error:
        raise TypeError(f"selected must be a boolean array (not ragged), got {type(selected).__name__}") from error
    if selected.dtype != bool:
        raise TypeError(f"selected must be a boolean array, got dtype {selected.dtype}")
    if selected.shape != shape:
        raise ValueError(f"selected must have the shape of shown {shape}, got {selected.shape}")
    if not selected.any():
        raise ValueError("selected must select at least one position (the loss averages over selected positions)")
    targets = as_int_array(targets, "targets", ndim=2)
    if targets.shape != shape:
        raise ValueError(f"targets must have the shape of shown {shape}, got {targets.shape}")
    picked = targets[selected]
    if picked.min() < 0 or picked.max() >= config.vocab_size:
        raise ValueError(f"targets at selected positions must be token ids in [0, {config.vocab_size}) "
                         f"([MASK] is never a target), got values from {picked.min()} to {picked.max()}")
    return targets, selected


def _check_dlogits(dlogits, cache) -> np.ndarray:
    """``dlogits`` as an array of the shape of the logits that ``cache`` (from `forward`) belongs to."""
    try:
        encode_cache, _, config = cache
        rows = encode_cache[1][1].shape[0]  # the head's normalised input y, one row per logit row
    except (TypeError, ValueError, IndexError, AttributeError):
        raise TypeError(f"cache must be the cache returned by forward, got {type(cache).__name__}") from None
    if not isinstance(cache, tuple) or not isinstance(config, EncoderConfig):
        raise TypeError(f"cache must be the cache returned by forward, got {type(cache).__name__}")
    try:
        array = np.asarray(dlogits)
    except (TypeError, ValueError) as error:
        raise TypeError(f"dlogits must be a real array (not ragged), got {type(dlogits).__name__}") from error
    if array.dtype.kind not in "fiu":
        raise TypeError(f"dlogits must be a real array, got dtype {array.dtype}")
    if array.shape != (rows, config.vocab_size):
        raise ValueError(f"dlogits must have the logits' shape {(rows, config.vocab_size)}, got {array.shape}")
    if not np.isfinite(array.sum()) and not np.all(np.isfinite(array)):
        raise ValueError("dlogits must be finite (no NaN or infinity)")
    return array


# --------------------------------------------------------------------------- public passes
def forward(params, config: EncoderConfig, shown, selected=None):
    """Logits at the selected positions (or all), with the cache for [`backward`][mlm_book.nn.encoder.backward].

    Parameters
    ----------
    params : mapping
        From [`init_params`][mlm_book.nn.encoder.init_params] or a trained encoder.
    config : EncoderConfig
    shown : array of int, shape (B, n)
        Displayed (corrupted) tokens, ids in ``[0, V]`` (``V`` is [MASK]; ``V + 1`` is
        [PAD] if the config has it, masked as a key).
    selected : array of bool, shape (B, n), optional
        Positions whose logits are wanted; ``None`` means every position.

    Returns
    -------
    logits : ndarray, shape (number selected, V), in row-major order of ``selected``
        (``(B*n, V)`` if ``selected`` is None).
    cache : tuple
        For [`backward`][mlm_book.nn.encoder.backward].

    Raises
    ------
    TypeError
        If ``config`` is not an [`EncoderConfig`][mlm_book.nn.encoder.EncoderConfig], ``params`` is not a
        mapping of float arrays or ``shown`` (``selected``) does not hold integers (booleans).
    ValueError
        If ``params`` does not match ``config`` or is not finite, or ``shown`` is not a 2-D array of input ids no longer than ``config.length``, or ``selected``
        does not have its shape or selects nothing.

    Examples
    --------
    >>> cfg = EncoderConfig(vocab_size=5, length=4, d_model=8, n_blocks=2, n_heads=2)
    >>> p = init_params(cfg, np.random.default_rng(0), dtype=np.float64)
    >>> shown = np.array([[0, 5, 2, 3], [4, 1, 5, 0]])
    >>> sel = shown == 5
    >>> z, _ = forward(p, cfg, shown, sel)
    >>> z_all, _ = forward(p, cfg, shown)
    >>> z.shape, bool(np.allclose(z, z_all[sel.reshape(-1)], atol=1e-12, rtol=0))
    ((2, 5), True)
    """
    params = check_params(params, config)
    shown = check_shown(shown, config)
    if selected is None:
        rows = None
    else:
        _, selected = _check_selection(np.zeros(shown.shape, dtype=np.int64), selected, shown.shape, config)
        rows = np.flatnonzero(selected.reshape(-1))
    x0, emb_cache = layers.embedding_forward(shown, params["E"], params["P"])
    out, cache = blocks_and_head(params, config, x0, shown.shape, rows, key_bias=key_bias(config, shown, x0.dtype))
    return out, (cache, emb_cache, config)


def backward(dlogits: np.ndarray, cache, *, input_grad: bool = False):
    """Gradients of every parameter given the gradient of the logits from [`forward`][mlm_book.nn.encoder.forward].

    Parameters
    ----------
    dlogits : ndarray, shape like the logits
    cache : tuple
        From [`forward`][mlm_book.nn.encoder.forward].
    input_grad : bool
        Also return the gradient with respect to the input rows $x_0 = E[x] + P$.

    Returns
    -------
    grads : dict of str to ndarray
        Same names and shapes as the parameters.
    dx0 : ndarray, shape (B*n, d)
        Only if ``input_grad``.

    Raises
    ------
    TypeError
        If ``cache`` is not a cache from [`forward`][mlm_book.nn.encoder.forward], ``dlogits`` is not a
        real array or ``input_grad`` is not a bool.
    ValueError
        If ``dlogits`` does not have the logits' shape or holds NaN or infinite values.

    Examples
    --------
    The gradient of the sum of all logits: each output bias collects one unit per row.

    >>> cfg = EncoderConfig(vocab_size=5, length=4, d_model=8, n_blocks=1, n_heads=2)
    >>> p = init_params(cfg, np.random.default_rng(0), dtype=np.float64)
    >>> z, cache = forward(p, cfg, [[0, 5, 2, 3]])
    >>> g, dx0 = backward(np.ones_like(z), cache, input_grad=True)
    >>> g["b_out"].tolist(), g["E"].shape, dx0.shape
    ([4.0, 4.0, 4.0, 4.0, 4.0], (6, 8), (4, 8))
    """
    check_bool(input_grad, "input_grad")
    dlogits = _check_dlogits(dlogits, cache)
    encode_cache, emb_cache, config = cache
    dx0, grads, dE_out = blocks_and_head_backward(dlogits, encode_cache, config)
    _, emb = layers.embedding_backward(dx0, emb_cache)
    grads = add_table_gradient(grads, emb, dE_out, config)
    grads = {name: grads[name] for name in param_names(config)}
    return (grads, dx0) if input_grad else grads


def loss_and_grads(params, config: EncoderConfig, shown, targets, selected):
    r"""Mean cross-entropy over the selected positions and its gradient for every parameter.

    $$ \mathcal L = -\frac{1}{|M|} \sum_{(b, i) \in M} \log q_\theta(x_{b,i} \mid \tilde x_b) , $$

    computed on the selected rows only.

    Parameters
    ----------
    params : mapping
    config : EncoderConfig
    shown : array of int, shape (B, n)
        Corrupted input, ids in ``[0, V]``.
    targets : array of int, shape (B, n)
        Clean tokens; only the selected entries are read (ids in ``[0, V)``).
    selected : array of bool, shape (B, n)
        The selected positions; at least one.

    Returns
    -------
    loss : float
        Nats per selected position.
    grads : dict of str to ndarray

    Raises
    ------
    TypeError
        If ``config`` is not an [`EncoderConfig`][mlm_book.nn.encoder.EncoderConfig], ``params`` is not a
        mapping of float arrays or ``shown`` and ``targets`` (``selected``) do not hold integers (booleans).
    ValueError
        If ``params`` does not match ``config`` or is not finite, or ``shown`` is not a 2-D array of input ids no longer than ``config.length``, ``targets`` or
        ``selected`` does not have its shape, ``selected`` selects nothing or a selected target is
        not in ``[0, V)``.

    Examples
    --------
    >>> cfg = EncoderConfig(vocab_size=5, length=4, d_model=8, n_blocks=2, n_heads=2)
    >>> p = init_params(cfg, np.random.default_rng(0), dtype=np.float64)
    >>> value, g = loss_and_grads(p, cfg, [[0, 5, 2, 3]], [[0, 1, 2, 3]], [[False, True, False, True]])
    >>> round(value, 2), g["E"].shape
    (1.61, (6, 8))
    """
    params = check_params(params, config)
    shown = check_shown(shown, config)
    targets, selected = _check_selection(targets, selected, shown.shape, config)
    value, grads = loss_and_grads_unchecked(params, config, shown, targets, selected)
    return value, {name: grads[name] for name in param_names(config)}


def loss(params, config: EncoderConfig, shown, targets, selected) -> float:
    """The value of [`loss_and_grads`][mlm_book.nn.encoder.loss_and_grads] without the backward pass (selected rows only).

    Raises
    ------
    TypeError, ValueError
        As [`loss_and_grads`][mlm_book.nn.encoder.loss_and_grads], naming the bad argument.

    Examples
    --------
    >>> cfg = EncoderConfig(vocab_size=5, length=4, d_model=8, n_blocks=2, n_heads=2)
    >>> p = init_params(cfg, np.random.default_rng(0), dtype=np.float64)
    >>> round(loss(p, cfg, [[0, 5, 2, 3]], [[0, 1, 2, 3]], [[False, True, False, True]]), 2)
    1.61
    """
    params = check_params(params, config)
    shown = check_shown(shown, config)
    targets, selected = _check_selection(targets, selected, shown.shape, config)
    rows, target_rows = _rows_and_targets(targets, selected)
    x0, _ = layers.embedding_forward(shown, params["E"], params["P"])
    out, _ = blocks_and_head(params, config, x0, shown.shape, rows, key_bias=key_bias(config, shown, x0.dtype))
    value, _ = layers.cross_entropy_forward(out, target_rows)
    return value


def logits(params, config: EncoderConfig, shown) -> np.ndarray:
    """Logits at every position.

    Parameters
    ----------
    params : mapping
    config : EncoderConfig
    shown : array of int, shape (B, n)

    Returns
    -------
    ndarray, shape (B, n, V)
        In the parameters' dtype.

    Raises
    ------
    TypeError
        If ``config`` is not an [`EncoderConfig`][mlm_book.nn.encoder.EncoderConfig], ``params`` is not a
        mapping of float arrays or ``shown`` does not hold integers.
    ValueError
        If ``params`` does not match ``config`` or is not finite, or ``shown`` is not a 2-D array of
        input ids no longer than ``config.length``.

    Examples
    --------
    >>> cfg = EncoderConfig(vocab_size=5, length=4, d_model=8, n_blocks=2, n_heads=2)
    >>> p = init_params(cfg, np.random.default_rng(0))
    >>> logits(p, cfg, [[0, 5, 2]]).shape
    (1, 3, 5)
    """
    params = check_params(params, config)
    shown = check_shown(shown, config)
    x0, _ = layers.embedding_forward(shown, params["E"], params["P"])
    out, _ = blocks_and_head(params, config, x0, shown.shape, None, key_bias=key_bias(config, shown, x0.dtype))
    return out.reshape(shown.shape + (config.vocab_size,))


def predict_proba(params, config: EncoderConfig, shown) -> np.ndarray:
    r"""The encoder's conditionals $q_\theta(\cdot \mid \tilde x)$ at every position, in float64.

    Parameters
    ----------
    params : mapping
    config : EncoderConfig
    shown : array of int, shape (B, n)

    Returns
    -------
    ndarray, shape (B, n, V)
        Rows sum to one.

    Raises
    ------
    TypeError
        If ``config`` is not an [`EncoderConfig`][mlm_book.nn.encoder.EncoderConfig], ``params`` is not a
        mapping of float arrays or ``shown`` does not hold integers.
    ValueError
        If ``params`` does not match ``config`` or is not finite, or ``shown`` is not a 2-D array of
        input ids no longer than ``config.length``.

    Examples
    --------
    >>> cfg = EncoderConfig(vocab_size=5, length=4, d_model=8, n_blocks=2, n_heads=2)
    >>> p = init_params(cfg, np.random.default_rng(0))
    >>> q = predict_proba(p, cfg, [[0, 5, 2]])
    >>> bool(np.allclose(q.sum(-1), 1.0))
    True
    """
    z = logits(params, config, shown).astype(np.float64)
    z -= z.max(axis=-1, keepdims=True)
    np.exp(z, out=z)
    z /= z.sum(axis=-1, keepdims=True)
    return z


def hidden_states(params, config: EncoderConfig, tokens) -> list[np.ndarray]:
    """The residual stream at every layer for the given (clean or corrupted) sequences.

    Parameters
    ----------
    params : mapping
    config : EncoderConfig
    tokens : array of int, shape (B, n)
        Ids in ``[0, V]``.

    Returns
    -------
    list of ndarray, each (B, n, d), float64
        Index 0 is the input $E[x] + P$; index $\\ell$ is the residual stream after block
        $\\ell$, before the final LayerNorm.

    Raises
    ------
    TypeError
        If ``config`` is not an [`EncoderConfig`][mlm_book.nn.encoder.EncoderConfig], ``params`` is not a
        mapping of float arrays or ``tokens`` does not hold integers.
    ValueError
        If ``params`` does not match ``config`` or is not finite, or ``tokens`` is not a 2-D array of
        input ids no longer than ``config.length``.

    Examples
    --------
    >>> cfg = EncoderConfig(vocab_size=5, length=4, d_model=8, n_blocks=2, n_heads=2)
    >>> p = init_params(cfg, np.random.default_rng(0))
    >>> hs = hidden_states(p, cfg, [[0, 1, 2]])
    >>> len(hs), hs[2].shape
    (3, (1, 3, 8))
    """
    params = check_params(params, config)
    tokens = check_shown(tokens, config, "tokens")
    B, n = tokens.shape
    x0, _ = layers.embedding_forward(tokens, params["E"], params["P"])
    hidden = blocks_and_head(params, config, x0, tokens.shape, None, keep_hidden=True,
                             key_bias=key_bias(config, tokens, x0.dtype))
    return [h.reshape(B, n, config.d_model).astype(np.float64) for h in hidden]


def attention_weights(params, config: EncoderConfig, tokens) -> np.ndarray:
    """Every attention layer's weights for the given sequences: which positions each position reads.

    Parameters
    ----------
    params : mapping
    config : EncoderConfig
    tokens : array of int, shape (B, n)
        Ids in ``[0, V]`` (and [PAD] with ``pad``).

    Returns
    -------
    ndarray, shape (n_blocks, B, n_heads, n, n), float64
        Entry ``[l, b, h, i, j]`` is the weight query position ``i`` of head ``h`` in block
        ``l`` puts on key position ``j``; each row sums to 1, and is 0 at hidden keys ([PAD],
        and positions after ``i`` under the causal mask).

    Raises
    ------
    TypeError
        If ``config`` is not an [`EncoderConfig`][mlm_book.nn.encoder.EncoderConfig], ``params`` is not a
        mapping of float arrays or ``tokens`` does not hold integers.
    ValueError
        If ``params`` does not match ``config`` or is not finite, or ``tokens`` is not a 2-D array of
        input ids no longer than ``config.length``.

    Examples
    --------
    >>> cfg = EncoderConfig(vocab_size=5, length=4, d_model=8, n_blocks=2, n_heads=2, causal=True)
    >>> a = attention_weights(init_params(cfg, np.random.default_rng(0)), cfg, [[0, 1, 2]])
    >>> a.shape, bool(np.allclose(a.sum(-1), 1.0)), float(a[..., 0, 1:].max())
    ((2, 1, 2, 3, 3), True, 0.0)
    """
    params = check_params(params, config)
    tokens = check_shown(tokens, config, "tokens")
    x, _ = layers.embedding_forward(tokens, params["E"], params["P"])
    bias = key_bias(config, tokens, x.dtype)
    weights = []
    for block in range(config.n_blocks):
        x, cache = layers.block_forward(x, params, f"blocks.{block}.", config.n_heads, tokens.shape, config.ln_eps,
                                        None, bias)
        weights.append(cache[1][3])       # the attention cache's (B, h, n, n) weights
    return np.stack(weights).astype(np.float64)
