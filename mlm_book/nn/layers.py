r"""The encoder's layers, each a forward pass and a hand-written backward pass.

Every layer has the same contract. ``*_forward(x, ...)`` returns ``(output, cache)``, where
the cache holds what the backward pass needs; ``*_backward(grad_out, cache)`` returns
``(grad_in, grads)``, with ``grads`` a dict of gradients named like the layer's parameters.
The functions follow the dtype of their inputs: float64 for the gradient check, float32
for training.

Rows are flattened: a batch of ``B`` sequences of length ``n`` with width ``d`` travels as
an ``(B*n, d)`` array, so that every dense layer is one contiguous 2-D matrix product.
Only attention needs the ``(B, n)`` structure, which it receives as ``shape``.

Attention and the block accept ``rows``, flat indices of the positions whose outputs are
wanted. Keys and values are still computed at every position (each position attends to
all of them unless an attention bias hides some), but queries, scores, the output projection, the
residual, the second LayerNorm and the MLP then run on those rows only. The loss needs
only the selected positions, so the last block uses this; the result is identical to
computing every row and discarding the rest (tested to 1e-12).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Mapping

import numpy as np

from mlm_book.validation import as_int_array, check_positive_int, check_real

__all__ = [
    "GELU_C",
    "layer_norm_forward",
    "layer_norm_backward",
    "gelu",
    "gelu_derivative",
    "attention_forward",
    "attention_backward",
    "key_bias_from_valid",
    "causal_bias",
    "MAX_CAUSAL_LENGTH",
    "mlp_forward",
    "mlp_backward",
    "mlp_backward_reference",
    "block_forward",
    "block_backward",
    "embedding_forward",
    "embedding_backward",
    "head_forward",
    "head_backward",
    "plain_head_forward",
    "plain_head_backward",
    "cross_entropy_forward",
]

#: $\sqrt{2/\pi}$, the constant of the tanh form of GELU.
GELU_C = math.sqrt(2.0 / math.pi)
_GELU_A = 0.044715


# --------------------------------------------------------------------------- argument checks
# The layers run about twenty times per training step, so their checks are O(1) (type, dtype,
# shape, with fast paths for the common case) plus at most one BLAS reduction per array. Where
# the pass already computes a reduction that a NaN or infinity would poison (row variances,
# softmax row sums, bias gradients, the loss), that one is checked instead, which costs
# nothing; the inputs themselves are looked at only after such a check fails, to name the
# culprit. block_forward runs the unchecked cores (_layer_norm, _attention, _mlp).
_FLOAT_CHARS = frozenset("fd")                  # float32, float64


class _NonFinite(ValueError, FloatingPointError):
    """A NaN or infinity where a layer needs numbers.

    A `ValueError` like every bad argument, and also a `FloatingPointError`: inside a training
    step a non-finite activation means training diverged, which is what
    [`train`][mlm_book.nn.train.train] reports with that class.
    """


def _diverged(text: str) -> _NonFinite:
    return _NonFinite(f"{text}; in a training step this means training diverged (lower the learning rate)")


def _floats(value, name: str, shape: tuple, why: str = "") -> np.ndarray:
    """``value`` if it is a float32/float64 ndarray of ``shape``; a str entry of ``shape`` is any size (O(1))."""
    if type(value) is np.ndarray and value.dtype.char in _FLOAT_CHARS and value.shape == shape:
        return value
    if not isinstance(value, np.ndarray):
        raise TypeError(f"{name} must be a float32 or float64 numpy array, got {type(value).__name__}")
    if value.dtype.char not in _FLOAT_CHARS:
        raise TypeError(f"{name} must be a float32 or float64 array, got dtype {value.dtype}")
    got = value.shape
    if got != shape:
        wrong = len(got) != len(shape)
        for size, want in zip(got, shape):
            wrong = wrong or (size != want and not isinstance(want, str))
        if wrong:
            text = "(" + ", ".join(map(str, shape)) + ("," if len(shape) == 1 else "") + ")"
            raise ValueError(f"{name} must have shape {text}{why}, got {got}")
    return value


def _finite(value: np.ndarray, name: str) -> None:
    """Raise unless ``value`` is finite: one dot product of its entries with themselves, which a NaN
    or infinity makes non-finite; only if it is not (or overflows) are the entries looked at."""
    if not math.isfinite(np.vdot(value, value)) and not np.isfinite(value).all():
        raise _diverged(f"{name} must be finite (no NaN or infinity)")


def _blame(error: Exception, arrays) -> None:
    """After a free check failed: raise naming the first of ``(name, array)`` holding a NaN or
    infinity, or re-raise ``error`` (finite inputs whose products overflowed)."""
    for name, value in arrays:
        if value is not None and not np.isfinite(value).all():
            raise _diverged(f"{name} must be finite (no NaN or infinity)") from None
    raise error


def _width(x: np.ndarray, name: str = "x") -> int:
    d = x.shape[1]
    if d == 0:
        raise ValueError(f"{name} must have at least one column (the width d), got shape {x.shape}")
    return d


def _positive_int(value, name: str) -> int:
    if type(value) is int and value >= 1:      # the common case, without the ABC check
        return value
    return check_positive_int(value, name)


def _ints(value, name: str, ndim: int) -> np.ndarray:
    if type(value) is np.ndarray and value.dtype.kind == "i" and value.ndim == ndim:
        return value
    return as_int_array(value, name, ndim=ndim)


def _check_eps(eps) -> None:
    # validated, never converted: the caller's object is added to the variances as before
    if not (type(eps) is float and 0.0 <= eps < math.inf):
        check_real(eps, "eps", low=0.0)


def _check_heads(n_heads, d: int) -> None:
    _positive_int(n_heads, "n_heads")
    if d % n_heads:
        raise ValueError(f"n_heads must divide the width of x (d = {d}), got n_heads = {n_heads}")


def _check_shape(shape, N: int) -> tuple[int, int]:
    if not isinstance(shape, (tuple, list)) or len(shape) != 2:
        raise TypeError(f"shape must be a pair (B, n) of sequences and positions, got {shape!r:.60}")
    B, n = shape
    _positive_int(B, "shape[0] (B)")
    _positive_int(n, "shape[1] (n)")
    if B * n != N:
        raise ValueError(f"shape {tuple(shape)} has B*n = {B * n} positions, but x has {N} rows")
    return B, n


def _check_rows(rows, N: int):
    if rows is None:
        return None
    rows = _ints(rows, "rows", 1)
    if rows.size:
        # strictly increasing, as the query slots of each sequence are numbered in order
        if rows.size > 1 and not (rows[1:] > rows[:-1]).all():
            raise ValueError("rows must be strictly increasing flat positions (no repeats)")
        if rows[0] < 0 or rows[-1] >= N:
            raise ValueError(f"rows must be flat positions in [0, B*n = {N}) (the rows of x), "
                             f"got {rows[0]} to {rows[-1]}")
    return rows


def _check_key_bias(key_bias, B: int, n: int) -> None:
    if key_bias is not None:
        per_query = isinstance(key_bias, np.ndarray) and key_bias.ndim == 3
        _floats(key_bias, "key_bias", (B, n, n) if per_query else (B, n),
                " = shape (B, n, n)" if per_query else " = shape (B, n) or (B, n, n)")
        _finite(key_bias, "key_bias")


def _add_bias(s: np.ndarray, key_bias: np.ndarray, queries=None) -> None:
    """Add an attention bias to scores ``s`` (B, h, m, n) in place.

    A ``(B, n)`` bias is the same for every query; a ``(B, n, n)`` bias has one row per query
    position, and with ``queries = (seq, slot, positions)`` (the packed query slots of
    ``rows``) each slot takes its position's row; empty slots get no bias.
    """
    if key_bias.ndim == 2:
        s += key_bias[:, None, None, :]
    elif queries is None:
        s += key_bias[:, None]
    else:
        seq, slot, positions = queries
        rows = np.zeros((s.shape[0], s.shape[2], s.shape[3]), dtype=s.dtype)
        rows[seq, slot] = key_bias[seq, positions]
        s += rows[:, None]


def _cache(cache, size: int, producer: str) -> tuple:
    if type(cache) is not tuple or len(cache) != size:
        raise TypeError(f"cache must be the tuple {producer} returned, got {type(cache).__name__}")
    return cache


def _cached_array(value, producer: str, ndim: int) -> np.ndarray:
    if not isinstance(value, np.ndarray) or value.ndim != ndim:
        raise ValueError(f"cache does not come from {producer}: it holds {type(value).__name__} "
                         f"where a {ndim}-D array belongs")
    return value


def _finite_sums(sums: np.ndarray, name: str) -> None:
    """Bias gradients are column sums of the incoming gradient: free evidence that it is finite."""
    if not math.isfinite(np.vdot(sums, sums)) and not np.isfinite(sums).all():
        raise _diverged(f"{name} must be finite (no NaN or infinity) and its column sums too")


# --------------------------------------------------------------------------- reductions
# NumPy reduces a short last axis row by row, which costs several nanoseconds per element;
# a matrix-vector product with a vector of ones does the same sums through BLAS at a
# fraction of the cost. These helpers are used on every hot path below.
def _row_sums(a: np.ndarray) -> np.ndarray:
    """Sums over the last axis of a C-contiguous array, keeping the axis: shape ``a.shape[:-1] + (1,)``."""
    ones = np.ones(a.shape[-1], dtype=a.dtype)
    return (a.reshape(-1, a.shape[-1]) @ ones).reshape(a.shape[:-1] + (1,))


def _column_sums(a: np.ndarray) -> np.ndarray:
    """Sums over the first axis of a 2-D array (bias gradients)."""
    return np.ones(a.shape[0], dtype=a.dtype) @ a


def _softmax_last(s: np.ndarray, what: str = "x, W_qkv, b_qkv and key_bias") -> np.ndarray:
    r"""Softmax over the last axis of ``s`` (B, h, n, n), in place.

    The stabilising shift is the maximum of each whole (B, h) score matrix, one fast
    reduction instead of one per row. A row whose entries all lie far below that maximum
    could then underflow; if any row sum falls below 1e-20 the scores are recomputed with
    the exact per-row maximum, so the result never silently loses a row. A NaN or infinite
    score makes a row sum NaN, which takes the same branch and is refused there (``what``
    names the arguments the scores come from).
    """
    B, h, n, m = s.shape
    shift = s.reshape(B * h, n * m).max(axis=1).reshape(B, h, 1, 1)
    shifted = s - shift
    np.exp(shifted, out=shifted)
    total = _row_sums(shifted)
    if not total.min() >= 1e-20:                   # "not >=" so that NaN enters too
        shifted = s - s.max(axis=-1, keepdims=True)
        np.exp(shifted, out=shifted)
        total = _row_sums(shifted)
        if np.isnan(total.min()):                  # finite scores give row sums >= 1 here
            raise _diverged(f"the attention scores are not finite: {what} must be finite and small "
                            "enough that the scores do not overflow")
    shifted /= total
    return shifted


# --------------------------------------------------------------------------- LayerNorm
def layer_norm_forward(x: np.ndarray, gamma: np.ndarray, beta: np.ndarray, eps: float = 1e-5):
    r"""LayerNorm over the last axis: $y = \gamma \odot (x - \mu)/\sqrt{\sigma^2 + \epsilon} + \beta$.

    Parameters
    ----------
    x : ndarray, shape (N, d)
    gamma, beta : ndarray, shape (d,)
    eps : float
        Added to the variance.

    Returns
    -------
    y : ndarray, shape (N, d)
    cache : tuple
        ``(xhat, rstd, gamma)`` for [`layer_norm_backward`][mlm_book.nn.layers.layer_norm_backward].

    Raises
    ------
    TypeError
        If an array is not a float32/float64 ndarray, or ``eps`` is not a real number.
    ValueError
        If the shapes do not match, ``eps`` is negative, an array holds NaN or infinity
        (the error is also a `FloatingPointError`), or ``eps`` is 0 and a row of ``x`` is
        constant (0/0).

    Examples
    --------
    >>> y, _ = layer_norm_forward(np.array([[1.0, 2.0, 3.0]]), np.ones(3), np.zeros(3), 0.0)
    >>> np.round(y, 4)
    array([[-1.2247,  0.    ,  1.2247]])
    """
    d = _width(_floats(x, "x", ("N", "d")))
    _finite(_floats(gamma, "gamma", (d,), " for x of width d"), "gamma")
    _finite(_floats(beta, "beta", (d,), " for x of width d"), "beta")
    _check_eps(eps)
    return _layer_norm(x, gamma, beta, eps)


def _layer_norm(x, gamma, beta, eps, name="x"):
    """LayerNorm without argument checks; a NaN or infinity in ``x`` is caught from the row variances."""
    d = x.shape[-1]
    w = np.full(d, 1.0 / d, dtype=x.dtype)
    xc = x - (x @ w)[:, None]
    var = (xc * xc) @ w
    var += eps
    rstd = (1.0 / np.sqrt(var))[:, None]
    if rstd.size and not rstd.max() < math.inf:   # N numbers, not N*d: a NaN or inf in x makes its row's NaN
        if not np.isfinite(x).all():
            raise _diverged(f"{name} must be finite (no NaN or infinity)")
        raise ValueError(f"{name} has a constant row, which LayerNorm cannot normalise with eps = {eps}; "
                         "use eps > 0")
    xhat = xc * rstd
    y = xhat * gamma
    y += beta
    return y, (xhat, rstd, gamma)


def layer_norm_backward(dy: np.ndarray, cache):
    r"""Backward pass of [`layer_norm_forward`][mlm_book.nn.layers.layer_norm_forward].

    With $\hat x$ the normalised input and $g = \gamma \odot dy$,
    $dx = r\,(g - \overline{g} - \hat x\, \overline{g \hat x})$, where $r$ is the
    reciprocal standard deviation and bars are means over the last axis.

    Parameters
    ----------
    dy : ndarray, shape (N, d)
    cache : tuple
        From [`layer_norm_forward`][mlm_book.nn.layers.layer_norm_forward].

    Returns
    -------
    dx : ndarray, shape (N, d)
    grads : dict
        ``{"g": (d,), "b": (d,)}``.

    Raises
    ------
    TypeError
        If ``dy`` is not a float32/float64 ndarray or ``cache`` not the forward's tuple.
    ValueError
        If ``dy`` does not have the shape of the forward's ``x``, or holds NaN or infinity
        (also a `FloatingPointError`).

    Examples
    --------
    >>> y, cache = layer_norm_forward(np.array([[1.0, 2.0, 3.0]]), np.ones(3), np.zeros(3), 0.0)
    >>> dx, grads = layer_norm_backward(np.ones((1, 3)), cache)   # shifting every output moves no input
    >>> bool(np.abs(dx).max() < 1e-12), grads["b"].tolist()
    (True, [1.0, 1.0, 1.0])
    """
    xhat, rstd, gamma = _cache(cache, 3, "layer_norm_forward")
    _floats(dy, "dy", _cached_array(xhat, "layer_norm_forward", 2).shape, " (the shape of the forward's x)")
    d = xhat.shape[-1]
    w = np.full(d, 1.0 / d, dtype=dy.dtype)
    ones = np.ones(dy.shape[0], dtype=dy.dtype)
    dbeta = ones @ dy
    _finite_sums(dbeta, "dy")
    prod = dy * xhat
    dgamma = ones @ prod
    g = dy * gamma
    prod = g * xhat
    mean_gx = (prod @ w)[:, None]
    g -= (g @ w)[:, None]
    np.multiply(xhat, mean_gx, out=prod)
    g -= prod
    g *= rstd
    return g, {"g": dgamma, "b": dbeta}


# --------------------------------------------------------------------------- GELU
def _real_values(u, name: str = "u") -> np.ndarray:
    """``u`` as a finite real array: float dtypes kept (float32 stays float32), integers as float64."""
    if u is None or isinstance(u, (str, bytes)):
        raise TypeError(f"{name} must be a real number or array of real numbers, got {type(u).__name__}")
    try:
        array = np.asarray(u)
    except (TypeError, ValueError) as error:
        raise TypeError(f"{name} must be a real number or array (not ragged), got {type(u).__name__}") from error
    if array.dtype.kind in "iu":
        array = array.astype(np.float64)
    elif array.dtype.kind != "f":
        raise TypeError(f"{name} must hold real numbers, got dtype {array.dtype}")
    if not np.isfinite(array).all():
        raise ValueError(f"{name} must be finite (no NaN or infinity)")
    return array


def gelu(u: np.ndarray) -> np.ndarray:
    r"""GELU in its tanh form, $\tfrac12 u\,(1 + \tanh(c\,(u + 0.044715\,u^3)))$, $c = \sqrt{2/\pi}$.

    Raises
    ------
    TypeError
        If ``u`` is not real numbers (strings, complex, ragged lists).
    ValueError
        If ``u`` holds NaN or infinity.

    Examples
    --------
    >>> np.round(gelu(np.array([-1.0, 0.0, 1.0])), 4)
    array([-0.1588,  0.    ,  0.8412])
    """
    u = _real_values(u)
    return 0.5 * u * (1.0 + np.tanh(GELU_C * (u + _GELU_A * u * u * u)))


def gelu_derivative(u: np.ndarray) -> np.ndarray:
    r"""Derivative of [`gelu`][mlm_book.nn.layers.gelu], computed from scratch (the reference form).

    Raises
    ------
    TypeError
        If ``u`` is not real numbers.
    ValueError
        If ``u`` holds NaN or infinity, or a value so large that ``u**2`` overflows.

    Examples
    --------
    >>> u, h = 0.3, 1e-6
    >>> bool(abs(gelu_derivative(np.array(u)) - (gelu(np.array(u + h)) - gelu(np.array(u - h))) / (2 * h)) < 1e-9)
    True
    """
    u = _real_values(u)
    t = np.tanh(GELU_C * (u + _GELU_A * u ** 3))
    result = 0.5 * (1.0 + t) + 0.5 * u * (1.0 - t ** 2) * GELU_C * (1.0 + 3.0 * _GELU_A * u ** 2)
    if not np.isfinite(result).all():          # (1 - t^2) = 0 times u^2 = inf where |u| > sqrt(float max)
        limit = math.sqrt(np.finfo(np.result_type(u)).max)
        raise ValueError(f"u must stay below {limit:.3g} in magnitude, where u**2 overflows, "
                         f"got {float(np.max(np.abs(u))):.3g}")
    return result


# --------------------------------------------------------------------------- attention
def attention_forward(x: np.ndarray, W_qkv: np.ndarray, b_qkv: np.ndarray, W_o: np.ndarray,
                      b_o: np.ndarray, n_heads: int, shape: tuple[int, int], rows: np.ndarray | None = None,
                      key_bias: np.ndarray | None = None):
    r"""Multi-head self-attention with biases, every position attending to every position.

    The queries, keys and values come from one fused product $x W_{qkv} + b_{qkv}$; head
    $h$ computes $\operatorname{softmax}(Q_h K_h^\top/\sqrt{d_h})\,V_h$; the heads are
    concatenated and projected by $W_o$, $b_o$. Without ``key_bias`` there is no causal mask.

    Parameters
    ----------
    x : ndarray, shape (B*n, d)
        The (normalised) input rows.
    W_qkv : ndarray, shape (d, 3d)
        Columns ``[0, d)`` give queries, ``[d, 2d)`` keys, ``[2d, 3d)`` values; within each,
        head ``h`` owns columns ``[h d_h, (h+1) d_h)``.
    b_qkv : ndarray, shape (3d,)
    W_o : ndarray, shape (d, d)
    b_o : ndarray, shape (d,)
    n_heads : int
        Must divide ``d``.
    shape : tuple of int
        ``(B, n)``.
    rows : ndarray of int, optional
        Flat indices into ``B*n`` of the outputs wanted (all if ``None``).
    key_bias : ndarray, shape (B, n) or (B, n, n), optional
        Added to the scores: 0 for a key that may be read, a large negative number
        ([`key_bias_from_valid`][mlm_book.nn.layers.key_bias_from_valid]) for one that may not, whose attention
        weight is then exactly 0. Shape ``(B, n)`` gives every query the same bias of each key
        (a padded slot); ``(B, n, n)`` gives query $i$ its own row ``key_bias[:, i]``, e.g.
        the causal mask ([`causal_bias`][mlm_book.nn.layers.causal_bias]), under which position $i$
        reads only positions $\le i$. It is a constant, so the backward pass is unchanged (a
        zero weight passes no gradient).

    Returns
    -------
    y : ndarray, shape (B*n, d) or (len(rows), d)
    cache : tuple

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> x = rng.normal(size=(6, 4))
    >>> W, b, Wo, bo = rng.normal(size=(4, 12)), np.zeros(12), np.eye(4), np.zeros(4)
    >>> y, _ = attention_forward(x, W, b, Wo, bo, 2, (2, 3))
    >>> y.shape
    (6, 4)
    >>> y_rows, _ = attention_forward(x, W, b, Wo, bo, 2, (2, 3), rows=np.array([1, 5]))
    >>> bool(np.allclose(y_rows, y[[1, 5]]))
    True

    A padded key is invisible: changing its row changes no other output.

    >>> bias = key_bias_from_valid(np.array([[True, True, False], [True, True, True]]), x.dtype)
    >>> x2 = x.copy(); x2[2] += 5.0
    >>> ya, _ = attention_forward(x, W, b, Wo, bo, 2, (2, 3), key_bias=bias)
    >>> yb, _ = attention_forward(x2, W, b, Wo, bo, 2, (2, 3), key_bias=bias)
    >>> bool(np.allclose(ya[[0, 1]], yb[[0, 1]], atol=1e-12))
    True

    Under the causal mask a later position is invisible to every earlier one:

    >>> causal = np.broadcast_to(causal_bias(3, x.dtype), (2, 3, 3))
    >>> yc, _ = attention_forward(x, W, b, Wo, bo, 2, (2, 3), key_bias=causal)
    >>> yd, _ = attention_forward(x2, W, b, Wo, bo, 2, (2, 3), key_bias=causal)
    >>> bool(np.allclose(yc[[0, 1]], yd[[0, 1]], atol=1e-12)), bool(np.allclose(yc[2], yd[2]))
    (True, False)

    Raises
    ------
    TypeError
        If an array is not a float32/float64 ndarray, ``n_heads`` not an integer, ``shape``
        not a pair, or ``rows`` not integers.
    ValueError
        If the shapes disagree (``B*n`` rows of width ``d``, weights for that ``d``),
        ``n_heads`` does not divide ``d``, ``rows`` are not increasing positions inside the
        batch, or an array (or the scores) holds NaN or infinity (also a `FloatingPointError`).
    """
    d = _width(_floats(x, "x", ("N", "d")))
    _check_heads(n_heads, d)
    B, n = _check_shape(shape, x.shape[0])
    _finite(_floats(W_qkv, "W_qkv", (d, 3 * d), " = (d, 3d) for x of width d"), "W_qkv")
    _finite(_floats(b_qkv, "b_qkv", (3 * d,), " = (3d,) for x of width d"), "b_qkv")
    _finite(_floats(W_o, "W_o", (d, d), " = (d, d) for x of width d"), "W_o")
    _finite(_floats(b_o, "b_o", (d,), " for x of width d"), "b_o")
    _finite(x, "x")
    rows = _check_rows(rows, B * n)
    _check_key_bias(key_bias, B, n)
    return _attention(x, W_qkv, b_qkv, W_o, b_o, n_heads, shape, rows, key_bias)


def _attention(x, W_qkv, b_qkv, W_o, b_o, n_heads, shape, rows=None, key_bias=None,
               what="x, W_qkv, b_qkv and key_bias"):
    """Attention without argument checks (``what`` names the arguments in the score error)."""
    if rows is not None:
        return _attention_rows_forward(x, W_qkv, b_qkv, W_o, b_o, n_heads, shape, rows, key_bias, what)
    B, n = shape
    d = x.shape[-1]
    dh = d // n_heads
    qkv = x @ W_qkv
    qkv += b_qkv
    q, k, v = _heads(qkv, B, n, n_heads, dh)               # strided (B, h, n, dh) views, no copies
    scale = 1.0 / math.sqrt(dh)
    q *= scale                                             # the cache keeps the scaled queries
    s = q @ k.transpose(0, 1, 3, 2)
    if key_bias is not None:
        _add_bias(s, key_bias)
    a = _softmax_last(s, what)                             # (B, h, n, n): rows are queries
    o = np.empty((B * n, d), dtype=x.dtype)                # heads concatenated, written in place
    np.matmul(a, v, out=o.reshape(B, n, n_heads, dh).transpose(0, 2, 1, 3))
    y = o @ W_o
    y += b_o
    return y, ("all", x, qkv, a, o, W_qkv, W_o, n_heads, shape, scale)


def key_bias_from_valid(valid: np.ndarray, dtype=np.float32) -> np.ndarray:
    """Additive attention bias of a ``(B, n)`` validity mask: 0 where True, ``-1e9`` where False.

    ``-1e9`` is finite, so a score stays a number, and its exponential underflows to
    exactly 0 next to any valid key; every sequence must keep at least one valid key.

    Examples
    --------
    >>> key_bias_from_valid(np.array([[True, False]])).tolist()
    [[0.0, -1000000000.0]]

    Raises
    ------
    TypeError
        If ``valid`` is ragged or not array-like, or ``dtype`` is not float32 or float64
        (a narrower float would round ``-1e9`` to infinity).
    ValueError
        If ``valid`` is not a 2-D boolean array, or a sequence has no valid position.
    """
    try:
        valid = np.asarray(valid)
    except (TypeError, ValueError) as error:
        raise TypeError(f"valid must be a 2-D boolean array (B, n), got a ragged {type(valid).__name__}") from error
    try:
        kind = np.dtype(dtype)
    except (TypeError, ValueError) as error:
        raise TypeError(f"dtype must be float32 or float64, got {dtype!r:.60}") from error
    if kind.char not in _FLOAT_CHARS:
        raise TypeError(f"dtype must be float32 or float64, got {kind}")
    if valid.dtype != np.bool_ or valid.ndim != 2:
        raise ValueError(f"valid must be a 2-D boolean array (B, n), got dtype {valid.dtype} and shape {valid.shape}")
    if not valid.any(axis=1).all():
        raise ValueError("valid must keep at least one position of every sequence")
    return np.where(valid, 0.0, -1e9).astype(dtype)


#: Longest sequence a causal mask is built for: 4096 * 4096 entries are 64 MB in float32, far beyond
#: any encoder here (their position tables hold at most 48 rows).
MAX_CAUSAL_LENGTH = 4096


def causal_bias(n: int, dtype=np.float32) -> np.ndarray:
    """The causal mask as an additive bias ``(n, n)``: row $i$ is 0 at keys $j \\le i$ and ``-1e9`` after.

    Broadcast to ``(B, n, n)`` it is a per-query ``key_bias`` of
    [`attention_forward`][mlm_book.nn.layers.attention_forward]: position $i$ then reads only itself and
    the positions before it, as a left-to-right language model must.

    Examples
    --------
    >>> causal_bias(3).tolist()
    [[0.0, -1000000000.0, -1000000000.0], [0.0, 0.0, -1000000000.0], [0.0, 0.0, 0.0]]

    Raises
    ------
    TypeError
        If ``n`` is not an integer or ``dtype`` is not float32 or float64.
    ValueError
        If ``n`` is not in ``[1, MAX_CAUSAL_LENGTH]`` (the mask has $n^2$ entries).
    """
    n = _positive_int(n, "n")
    if n > MAX_CAUSAL_LENGTH:
        raise ValueError(f"n must be at most {MAX_CAUSAL_LENGTH} (the mask has n * n entries), got {n}")
    try:
        kind = np.dtype(dtype)
    except (TypeError, ValueError) as error:
        raise TypeError(f"dtype must be float32 or float64, got {dtype!r:.60}") from error
    if kind.char not in _FLOAT_CHARS:
        raise TypeError(f"dtype must be float32 or float64, got {kind}")
    return np.where(np.tri(n, dtype=bool), 0.0, -1e9).astype(kind)


def _heads(qkv: np.ndarray, B: int, n: int, n_heads: int, dh: int):
    """Views ``(B, h, n, dh)`` of the query, key and value blocks of an ``(B*n, 3d)`` array.

    Each head's ``(n, dh)`` matrix has unit column stride, so batched products read the
    views directly.
    """
    five = qkv.reshape(B, n, 3, n_heads, dh)
    return tuple(five[:, :, part].transpose(0, 2, 1, 3) for part in range(3))


def _query_slots(rows: np.ndarray, B: int, n: int):
    """Sequence and slot of each wanted row, slots numbered within each sequence, and the slot count."""
    seq = rows // n
    counts = np.bincount(seq, minlength=B)
    starts = np.cumsum(counts) - counts
    slot = np.arange(len(rows)) - starts[seq]
    return seq, slot, max(int(counts.max()), 1)


def _attention_rows_forward(x, W_qkv, b_qkv, W_o, b_o, n_heads, shape, rows, key_bias=None,
                            what="x, W_qkv, b_qkv and key_bias"):
    """Attention outputs at ``rows`` only: keys and values everywhere, queries at ``rows``.

    The queries of each sequence are packed into ``m`` slots (``m`` = the most rows any
    sequence has); empty slots attend like any query and are discarded.
    """
    B, n = shape
    d = x.shape[-1]
    dh = d // n_heads
    seq, slot, m = _query_slots(rows, B, n)
    kv = x @ W_qkv[:, d:]
    kv += b_qkv[d:]
    five = kv.reshape(B, n, 2, n_heads, dh)
    k, v = five[:, :, 0].transpose(0, 2, 1, 3), five[:, :, 1].transpose(0, 2, 1, 3)
    x_rows = x[rows]
    scale = 1.0 / math.sqrt(dh)
    q_rows = x_rows @ W_qkv[:, :d]
    q_rows += b_qkv[:d]
    q_rows *= scale
    q = np.zeros((B, m, d), dtype=x.dtype)
    q[seq, slot] = q_rows
    q = q.reshape(B, m, n_heads, dh).transpose(0, 2, 1, 3)      # (B, h, m, dh)
    s = q @ k.transpose(0, 1, 3, 2)                              # (B, h, m, n)
    if key_bias is not None:
        _add_bias(s, key_bias, (seq, slot, rows % n))
    a = _softmax_last(s, what)
    o = np.empty((B, m, d), dtype=x.dtype)
    np.matmul(a, v, out=o.reshape(B, m, n_heads, dh).transpose(0, 2, 1, 3))
    o_rows = o[seq, slot]
    y = o_rows @ W_o
    y += b_o
    return y, ("rows", x, x_rows, kv, q, a, o_rows, W_qkv, W_o, n_heads, shape, rows, seq, slot, m, scale)


def _attention_rows_backward(dy, cache, db_o):
    _, x, x_rows, kv, q, a, o_rows, W_qkv, W_o, n_heads, (B, n), rows, seq, slot, m, scale = cache
    d = x.shape[-1]
    dh = d // n_heads
    dW_o = o_rows.T @ dy
    do = np.zeros((B, m, d), dtype=dy.dtype)
    do[seq, slot] = dy @ W_o.T
    do = do.reshape(B, m, n_heads, dh).transpose(0, 2, 1, 3)    # (B, h, m, dh)
    five = kv.reshape(B, n, 2, n_heads, dh)
    k, v = five[:, :, 0].transpose(0, 2, 1, 3), five[:, :, 1].transpose(0, 2, 1, 3)
    dkv = np.empty_like(kv)
    dfive = dkv.reshape(B, n, 2, n_heads, dh)
    dk, dv = dfive[:, :, 0].transpose(0, 2, 1, 3), dfive[:, :, 1].transpose(0, 2, 1, 3)
    np.matmul(a.transpose(0, 1, 3, 2), do, out=dv)
    da = do @ v.transpose(0, 1, 3, 2)                            # (B, h, m, n)
    da -= _row_sums(da * a)
    da *= a
    np.matmul(da.transpose(0, 1, 3, 2), q, out=dk)               # from the scaled queries
    dq = np.empty((B, m, d), dtype=dy.dtype)
    np.matmul(da, k, out=dq.reshape(B, m, n_heads, dh).transpose(0, 2, 1, 3))
    dq_rows = dq[seq, slot]
    dq_rows *= scale
    dW_qkv = np.empty_like(W_qkv)
    np.matmul(x_rows.T, dq_rows, out=dW_qkv[:, :d])
    np.matmul(x.T, dkv, out=dW_qkv[:, d:])
    db_qkv = np.concatenate([_column_sums(dq_rows), _column_sums(dkv)])
    dx = dkv @ W_qkv[:, d:].T
    dx[rows] += dq_rows @ W_qkv[:, :d].T
    return dx, {"W_qkv": dW_qkv, "b_qkv": db_qkv, "W_o": dW_o, "b_o": db_o}


def attention_backward(dy: np.ndarray, cache):
    r"""Backward pass of [`attention_forward`][mlm_book.nn.layers.attention_forward].

    Through the softmax, $dS = A \odot (dA - \operatorname{rowsum}(dA \odot A))$.

    Parameters
    ----------
    dy : ndarray, shape like the forward output
    cache : tuple

    Returns
    -------
    dx : ndarray, shape (B*n, d)
    grads : dict
        ``{"W_qkv", "b_qkv", "W_o", "b_o"}``.

    Raises
    ------
    TypeError
        If ``dy`` is not a float32/float64 ndarray or ``cache`` not the forward's tuple.
    ValueError
        If ``dy`` does not have the shape of the forward's output, or holds NaN or infinity
        (also a `FloatingPointError`).

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> x, W = rng.normal(size=(6, 4)), rng.normal(size=(4, 12))
    >>> y, cache = attention_forward(x, W, np.zeros(12), np.eye(4), np.zeros(4), 2, (2, 3))
    >>> dx, grads = attention_backward(np.ones_like(y), cache)
    >>> dx.shape, grads["b_o"].tolist()
    ((6, 4), [6.0, 6.0, 6.0, 6.0])
    """
    tag = cache[0] if isinstance(cache, tuple) and cache and isinstance(cache[0], str) else None
    rows_mode = tag == "rows" and len(cache) == 16
    if not rows_mode and not (tag == "all" and len(cache) == 10):
        raise TypeError(f"cache must be the tuple attention_forward returned, got {type(cache).__name__}")
    x = _cached_array(cache[1], "attention_forward", 2)
    out_rows = len(_cached_array(cache[11], "attention_forward", 1)) if rows_mode else x.shape[0]
    _floats(dy, "dy", (out_rows, x.shape[1]), " (the shape of the forward's output)")
    db_o = _column_sums(dy)
    _finite_sums(db_o, "dy")
    if rows_mode:
        return _attention_rows_backward(dy, cache, db_o)
    _, x, qkv, a, o, W_qkv, W_o, n_heads, (B, n), scale = cache
    d = x.shape[-1]
    dh = d // n_heads
    dW_o = o.T @ dy
    do = dy @ W_o.T
    do = do.reshape(B, n, n_heads, dh).transpose(0, 2, 1, 3)   # (B, h, n, dh) view
    q, k, v = _heads(qkv, B, n, n_heads, dh)
    dqkv = np.empty_like(qkv)
    dq, dk, dv = _heads(dqkv, B, n, n_heads, dh)
    np.matmul(a.transpose(0, 1, 3, 2), do, out=dv)
    da = do @ v.transpose(0, 1, 3, 2)                      # (B, h, n, n)
    da -= _row_sums(da * a)
    da *= a                                                # dS, gradient of the scores
    np.matmul(da, k, out=dq)
    dq *= scale                                            # scores = scale q k^T
    np.matmul(da.transpose(0, 1, 3, 2), q, out=dk)         # from the scaled queries
    dW_qkv = x.T @ dqkv
    db_qkv = _column_sums(dqkv)
    dx = dqkv @ W_qkv.T
    return dx, {"W_qkv": dW_qkv, "b_qkv": db_qkv, "W_o": dW_o, "b_o": db_o}


# --------------------------------------------------------------------------- MLP
def mlp_forward(x: np.ndarray, W_1: np.ndarray, b_1: np.ndarray, W_2: np.ndarray, b_2: np.ndarray):
    r"""Two-layer perceptron $\operatorname{GELU}(x W_1 + b_1) W_2 + b_2$ (hidden width $4d$ in the encoder).

    Parameters
    ----------
    x : ndarray, shape (N, d)
    W_1 : ndarray, shape (d, k)
    b_1 : ndarray, shape (k,)
    W_2 : ndarray, shape (k, d)
    b_2 : ndarray, shape (d,)

    Returns
    -------
    y : ndarray, shape (N, d)
    cache : tuple

    Examples
    --------
    >>> y, _ = mlp_forward(np.ones((2, 3)), np.zeros((3, 12)), np.zeros(12), np.zeros((12, 3)), np.ones(3))
    >>> y.tolist()
    [[1.0, 1.0, 1.0], [1.0, 1.0, 1.0]]

    Raises
    ------
    TypeError
        If an array is not a float32/float64 ndarray.
    ValueError
        If the shapes disagree, or an array holds NaN or infinity (also a `FloatingPointError`).
    """
    _check_mlp(x, W_1, b_1, W_2, b_2)
    return _mlp(x, W_1, b_1, W_2, b_2)


def _check_mlp(x, W_1, b_1, W_2, b_2) -> None:
    d = _width(_floats(x, "x", ("N", "d")))
    _floats(W_1, "W_1", (d, "k"), " for x of width d")
    k = W_1.shape[1]
    _floats(b_1, "b_1", (k,), " with k = W_1.shape[1]")
    _floats(W_2, "W_2", (k, d), " with k = W_1.shape[1] and d the width of x")
    _floats(b_2, "b_2", (d,), " for x of width d")
    for name, value in (("x", x), ("W_1", W_1), ("b_1", b_1), ("W_2", W_2), ("b_2", b_2)):
        _finite(value, name)


def _mlp(x, W_1, b_1, W_2, b_2):
    """The MLP without argument checks."""
    u = x @ W_1
    u += b_1
    u2 = u * u
    tp1 = u2 * (GELU_C * _GELU_A)
    tp1 += GELU_C
    tp1 *= u                                   # c (u + a u^3)
    np.tanh(tp1, out=tp1)
    tp1 += 1.0                                 # 1 + tanh(...)
    h = tp1 * u                                # 2 GELU(u); the 1/2 is applied to the small output
    y = h @ W_2
    y *= 0.5
    y += b_2
    return y, (x, u, u2, tp1, h, W_1, W_2)


def mlp_backward(dy: np.ndarray, cache):
    r"""Backward pass of [`mlp_forward`][mlm_book.nn.layers.mlp_forward], reusing the forward's $\tanh$, $u^2$ and activations.

    With $t = \tanh(c(u + a u^3))$, $a = 0.044715$, $c = \sqrt{2/\pi}$ and the cached
    $h = u(1 + t) = 2\,\operatorname{GELU}(u)$,

    $$ \operatorname{GELU}'(u) = \tfrac12\bigl[(1 + t) + h\,(1 - t)\, c\,(1 + 3 a u^2)\bigr] , $$

    which takes seven passes over the hidden activations; the factor $\tfrac12$ is applied
    to the narrow output gradient instead. [`mlp_backward_reference`][mlm_book.nn.layers.mlp_backward_reference] recomputes
    everything from scratch and the tests check the two agree to 1e-12.

    Parameters
    ----------
    dy : ndarray, shape (N, d)
    cache : tuple
        From [`mlp_forward`][mlm_book.nn.layers.mlp_forward].

    Returns
    -------
    dx : ndarray, shape (N, d)
    grads : dict
        ``{"W_1", "b_1", "W_2", "b_2"}``.

    Raises
    ------
    TypeError
        If ``dy`` is not a float32/float64 ndarray or ``cache`` not the forward's tuple.
    ValueError
        If ``dy`` does not have the shape of the forward's output, or holds NaN or infinity
        (also a `FloatingPointError`).
    """
    x, u, u2, tp1, h, W_1, W_2 = _cache(cache, 7, "mlp_forward")
    N = _cached_array(x, "mlp_forward", 2).shape[0]
    _floats(dy, "dy", (N, _cached_array(W_2, "mlp_forward", 2).shape[1]), " (the shape of the forward's output)")
    db_2 = _column_sums(dy)
    _finite_sums(db_2, "dy")
    dW_2 = h.T @ dy
    dW_2 *= 0.5
    du = (dy * 0.5) @ W_2.T                    # gradient of the loss w.r.t. GELU(u), times 1/2
    deriv = u2 * (3.0 * _GELU_A * GELU_C)
    deriv += GELU_C
    one_minus_t = np.subtract(2.0, tp1)
    deriv *= one_minus_t
    deriv *= h
    deriv += tp1                               # 2 GELU'(u)
    du *= deriv
    dW_1 = x.T @ du
    db_1 = _column_sums(du)
    dx = du @ W_1.T
    return dx, {"W_1": dW_1, "b_1": db_1, "W_2": dW_2, "b_2": db_2}


def mlp_backward_reference(dy: np.ndarray, x: np.ndarray, W_1: np.ndarray, b_1: np.ndarray,
                           W_2: np.ndarray, b_2: np.ndarray):
    r"""The plain MLP backward pass: recompute the forward, apply the chain rule step by step.

    The reference against which [`mlp_backward`][mlm_book.nn.layers.mlp_backward] (the faster, fused one) is tested.

    Parameters
    ----------
    dy : ndarray, shape (N, d)
        Gradient of the loss with respect to the MLP's output.
    x, W_1, b_1, W_2, b_2
        As for [`mlp_forward`][mlm_book.nn.layers.mlp_forward] (``b_2`` does not enter the gradients).

    Returns
    -------
    dx : ndarray, shape (N, d)
    grads : dict
        ``{"W_1", "b_1", "W_2", "b_2"}``.

    Raises
    ------
    TypeError
        If an array is not a float32/float64 ndarray.
    ValueError
        If the shapes disagree, or an array holds NaN or infinity.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> x, dy = rng.normal(size=(4, 3)), rng.normal(size=(4, 3))
    >>> W_1, b_1, W_2, b_2 = rng.normal(size=(3, 12)), rng.normal(size=12), rng.normal(size=(12, 3)), np.zeros(3)
    >>> dx, grads = mlp_backward_reference(dy, x, W_1, b_1, W_2, b_2)
    >>> dx_fast, grads_fast = mlp_backward(dy, mlp_forward(x, W_1, b_1, W_2, b_2)[1])
    >>> bool(np.abs(dx - dx_fast).max() < 1e-12), grads["W_1"].shape
    (True, (3, 12))
    """
    _check_mlp(x, W_1, b_1, W_2, b_2)
    _floats(dy, "dy", x.shape, " (the shape of x)")
    _finite(dy, "dy")
    u = x @ W_1 + b_1
    g = gelu(u)
    dW_2 = g.T @ dy
    db_2 = dy.sum(axis=0)
    du = (dy @ W_2.T) * gelu_derivative(u)
    return du @ W_1.T, {"W_1": x.T @ du, "b_1": du.sum(axis=0), "W_2": dW_2, "b_2": db_2}


# --------------------------------------------------------------------------- block


def block_forward(x: np.ndarray, params, prefix: str, n_heads: int, shape: tuple[int, int],
                  eps: float = 1e-5, rows: np.ndarray | None = None, key_bias: np.ndarray | None = None):
    r"""Pre-LN transformer block: $h = x + \mathrm{MHA}(\mathrm{LN}_1(x))$, $y = h + \mathrm{MLP}(\mathrm{LN}_2(h))$.

    Parameters
    ----------
    x : ndarray, shape (B*n, d)
        Residual stream entering the block.
    params : mapping
        Holds ``prefix + name`` for ``ln1.g, ln1.b, attn.W_qkv, attn.b_qkv, attn.W_o,
        attn.b_o, ln2.g, ln2.b, mlp.W_1, mlp.b_1, mlp.W_2, mlp.b_2``.
    prefix : str
        E.g. ``"blocks.0."``.
    n_heads : int
    shape : tuple of int
        ``(B, n)``.
    eps : float
        LayerNorm epsilon.
    rows : ndarray of int, optional
        Flat positions whose output is wanted; attention still reads every position.
    key_bias : ndarray, shape (B, n) or (B, n, n), optional
        Hidden keys (padded slots, the causal mask), as for
        [`attention_forward`][mlm_book.nn.layers.attention_forward].

    Returns
    -------
    y : ndarray, shape (B*n, d) or (len(rows), d)
    cache : tuple

    Examples
    --------
    >>> from mlm_book.nn.encoder import EncoderConfig, init_params
    >>> cfg = EncoderConfig(vocab_size=5, length=3, d_model=8, n_blocks=1, n_heads=2)
    >>> p = init_params(cfg, np.random.default_rng(0), dtype=np.float64)
    >>> x = np.random.default_rng(1).normal(size=(6, 8))
    >>> y, _ = block_forward(x, p, "blocks.0.", 2, (2, 3))
    >>> y2, _ = block_forward(x, p, "blocks.0.", 2, (2, 3), rows=np.array([0, 4]))
    >>> bool(np.allclose(y2, y[[0, 4]]))
    True

    Raises
    ------
    TypeError
        If ``x`` or a parameter is not a float32/float64 ndarray, ``params`` not a mapping,
        ``prefix`` not a string, or another argument of the wrong kind (as for
        [`attention_forward`][mlm_book.nn.layers.attention_forward]).
    ValueError
        If ``params`` lacks a name under ``prefix``, a shape disagrees with ``x``, or an
        array holds NaN or infinity (also a `FloatingPointError`); and as for
        [`attention_forward`][mlm_book.nn.layers.attention_forward] and
        [`layer_norm_forward`][mlm_book.nn.layers.layer_norm_forward].
    """
    d = _width(_floats(x, "x", ("N", "d")))
    if not isinstance(params, Mapping):
        raise TypeError(f"params must be a mapping of parameter names to arrays, got {type(params).__name__}")
    if not isinstance(prefix, str):
        raise TypeError(f"prefix must be a str such as 'blocks.0.', got {type(prefix).__name__}")
    _check_heads(n_heads, d)
    B, n = _check_shape(shape, x.shape[0])
    _check_eps(eps)
    rows = _check_rows(rows, B * n)
    _check_key_bias(key_bias, B, n)
    P = _block_params(params, prefix, d)
    try:
        # NaN or infinity in x, in a parameter or in key_bias shows in the LayerNorms' row
        # variances, the softmax row sums or, for the MLP's parameters, the output: one reduction
        a_in, c_ln1 = _layer_norm(x, P["ln1.g"], P["ln1.b"], eps)
        att, c_att = _attention(a_in, P["attn.W_qkv"], P["attn.b_qkv"], P["attn.W_o"], P["attn.b_o"],
                                n_heads, shape, rows, key_bias, "x, params and key_bias")
        h = att
        h += x if rows is None else x[rows]
        m_in, c_ln2 = _layer_norm(h, P["ln2.g"], P["ln2.b"], eps, "the stream after attention (from x and params)")
        m, c_mlp = _mlp(m_in, P["mlp.W_1"], P["mlp.b_1"], P["mlp.W_2"], P["mlp.b_2"])
        m += h
        if not math.isfinite(np.vdot(m, m)) and not np.isfinite(m).all():
            raise _diverged("the block's output is not finite: x and params must be finite and small enough "
                            "not to overflow")
    except _NonFinite as error:
        _blame(error, [("x", x), *((f"params[{prefix + name!r}]", P[name]) for name in _BLOCK_PARAMS),
                       ("key_bias", key_bias)])
    return m, (c_ln1, c_att, c_ln2, c_mlp, rows, prefix, x.shape)


def _block_params(params, prefix: str, d: int) -> dict[str, np.ndarray]:
    """The block's twelve arrays, each checked for its shape (width ``d``); finiteness is checked on the way."""
    found = {}
    for name in _BLOCK_PARAMS:
        try:
            found[name] = params[prefix + name]
        except KeyError:
            raise ValueError(f"params has no {prefix + name!r} (prefix {prefix!r} + {name!r})") from None
    W_1 = found["mlp.W_1"]
    k = W_1.shape[1] if isinstance(W_1, np.ndarray) and W_1.ndim == 2 else -1
    for name, shape in zip(_BLOCK_PARAMS, _block_shapes(d, k)):
        value = found[name]
        if not (type(value) is np.ndarray and value.dtype.char in _FLOAT_CHARS and value.shape == shape):
            _floats(value, f"params[{prefix + name!r}]", shape, f" for x of width d = {d}")   # raises
    return found


@functools.lru_cache(maxsize=64)
def _block_shapes(d: int, k: int) -> tuple:
    """Shapes of ``_BLOCK_PARAMS`` at width ``d`` and MLP width ``k`` (``"k"`` if W_1 is malformed)."""
    k = "k" if k < 0 else k
    return ((d,), (d,), (d, 3 * d), (3 * d,), (d, d), (d,), (d,), (d,), (d, k), (k,), (k, d), (d,))


_BLOCK_PARAMS = ("ln1.g", "ln1.b", "attn.W_qkv", "attn.b_qkv", "attn.W_o", "attn.b_o", "ln2.g", "ln2.b",
                 "mlp.W_1", "mlp.b_1", "mlp.W_2", "mlp.b_2")


def block_backward(dy: np.ndarray, cache):
    """Backward pass of [`block_forward`][mlm_book.nn.layers.block_forward].

    Returns
    -------
    dx : ndarray, shape (B*n, d)
    grads : dict
        Keyed by the full parameter names (``prefix + name``).

    Raises
    ------
    TypeError
        If ``dy`` is not a float32/float64 ndarray or ``cache`` not the forward's tuple.
    ValueError
        If ``dy`` does not have the shape of the forward's output, or holds NaN or infinity
        (also a `FloatingPointError`).

    Examples
    --------
    >>> from mlm_book.nn.encoder import EncoderConfig, init_params
    >>> cfg = EncoderConfig(vocab_size=5, length=3, d_model=8, n_blocks=1, n_heads=2)
    >>> p = init_params(cfg, np.random.default_rng(0), dtype=np.float64)
    >>> y, cache = block_forward(np.random.default_rng(1).normal(size=(6, 8)), p, "blocks.0.", 2, (2, 3))
    >>> dx, grads = block_backward(np.ones_like(y), cache)
    >>> dx.shape, len(grads), grads["blocks.0.mlp.b_2"].tolist() == [6.0] * 8
    ((6, 8), 12, True)
    """
    c_ln1, c_att, c_ln2, c_mlp, rows, prefix, x_shape = _cache(cache, 7, "block_forward")
    if not isinstance(prefix, str) or not (rows is None or isinstance(rows, np.ndarray)):
        raise ValueError("cache does not come from block_forward")
    grads = {}
    dm_in, g = mlp_backward(dy, c_mlp)
    grads.update({"mlp." + k: v for k, v in g.items()})
    dh, g = layer_norm_backward(dm_in, c_ln2)
    grads.update({"ln2." + k: v for k, v in g.items()})
    dh += dy
    da_in, g = attention_backward(dh, c_att)
    grads.update({"attn." + k: v for k, v in g.items()})
    dx, g = layer_norm_backward(da_in, c_ln1)
    grads.update({"ln1." + k: v for k, v in g.items()})
    if rows is None:
        dx += dh
    else:
        dx[rows] += dh
    return dx, {prefix + k: v for k, v in grads.items()}


# --------------------------------------------------------------------------- embedding and head
def embedding_forward(tokens: np.ndarray, E: np.ndarray, P: np.ndarray):
    r"""Input rows $E[x_t] + P_t$.

    Parameters
    ----------
    tokens : ndarray of int, shape (B, n)
        Ids in ``[0, E.shape[0])`` (already validated).
    E : ndarray, shape (V_in, d)
    P : ndarray, shape (n_max, d), n_max >= n

    Returns
    -------
    x : ndarray, shape (B*n, d)
    cache : tuple

    Examples
    --------
    >>> x, _ = embedding_forward(np.array([[1, 0]]), np.eye(2), np.zeros((3, 2)))
    >>> x.tolist()
    [[0.0, 1.0], [1.0, 0.0]]

    Raises
    ------
    TypeError
        If ``tokens`` is not integers, or ``E`` or ``P`` not a float32/float64 ndarray.
    ValueError
        If ``tokens`` is not 2-D, holds an id outside the rows of ``E`` or is longer than
        ``P``, the widths of ``E`` and ``P`` differ, or ``E`` or ``P`` holds NaN or infinity
        (also a `FloatingPointError`).
    """
    _finite(_floats(E, "E", ("V_in", "d")), "E")
    _finite(_floats(P, "P", ("n_max", E.shape[1]), " with d = E.shape[1]"), "P")
    tokens = _ints(tokens, "tokens", 2)
    if tokens.shape[1] > P.shape[0]:
        raise ValueError(f"tokens has length {tokens.shape[1]}, more than the {P.shape[0]} rows of P")
    if tokens.size:
        low, high = int(tokens.min()), int(tokens.max())
        if low < 0 or high >= E.shape[0]:
            raise ValueError(f"tokens must be ids of rows of E, in [0, {E.shape[0]}), got values from {low} to {high}")
    B, n = tokens.shape
    d = E.shape[1]
    x = E[tokens.reshape(-1)]
    x.reshape(B, n, d)[...] += P[:n]
    return x, (tokens, E.shape, P.shape)


def embedding_backward(dx: np.ndarray, cache):
    r"""Gradients of [`embedding_forward`][mlm_book.nn.layers.embedding_forward] for $E$ and $P$.

    The rows of $dE$ are sums over the positions showing each token, computed with one
    `numpy.bincount` over flat indices ``token * d + column`` (much faster than
    ``np.add.at``).

    Returns
    -------
    None
        Embeddings have no input gradient (token ids are discrete).
    grads : dict
        ``{"E": (V_in, d), "P": (n_max, d)}``.

    Raises
    ------
    TypeError
        If ``dx`` is not a float32/float64 ndarray or ``cache`` not the forward's tuple.
    ValueError
        If ``dx`` does not have the shape of the forward's output, or holds NaN or infinity
        (also a `FloatingPointError`).

    Examples
    --------
    >>> x, cache = embedding_forward(np.array([[1, 0, 1]]), np.eye(2), np.zeros((4, 2)))
    >>> _, grads = embedding_backward(np.ones((3, 2)), cache)   # token 1 stands at two positions
    >>> grads["E"].tolist(), grads["P"].shape
    ([[1.0, 1.0], [2.0, 2.0]], (4, 2))
    """
    tokens, E_shape, P_shape = _cache(cache, 3, "embedding_forward")
    if not (isinstance(E_shape, tuple) and len(E_shape) == 2 and isinstance(P_shape, tuple) and len(P_shape) == 2):
        raise ValueError("cache does not come from embedding_forward: it must hold the shapes of E and P")
    B, n = _cached_array(tokens, "embedding_forward", 2).shape
    V_in, d = E_shape
    _floats(dx, "dx", (B * n, d), " = (B*n, d), the shape of the forward's output")
    sums = _column_sums(dx.reshape(B, n * d))     # the gradient of P, and free evidence dx is finite
    _finite_sums(sums, "dx")
    flat = (tokens.reshape(-1, 1) * d + np.arange(d)).reshape(-1)
    dE = np.bincount(flat, weights=dx.reshape(-1), minlength=V_in * d).reshape(V_in, d).astype(dx.dtype, copy=False)
    dP = np.zeros(P_shape, dtype=dx.dtype)
    dP[:n] = sums.reshape(n, d)
    return None, {"E": dE, "P": dP}


def head_forward(x: np.ndarray, gamma: np.ndarray, beta: np.ndarray, E_out: np.ndarray, b: np.ndarray,
                 eps: float = 1e-5):
    r"""Final LayerNorm and tied output layer: logits $= \mathrm{LN}(x) E^\top/\sqrt d + b$.

    Parameters
    ----------
    x : ndarray, shape (N, d)
    gamma, beta : ndarray, shape (d,)
    E_out : ndarray, shape (V, d)
        The output rows of the token table (the [MASK] row excluded).
    b : ndarray, shape (V,)
    eps : float

    Returns
    -------
    logits : ndarray, shape (N, V)
    cache : tuple

    Examples
    --------
    >>> z, _ = head_forward(np.array([[1.0, -1.0]]), np.ones(2), np.zeros(2), np.eye(2), np.zeros(2), 0.0)
    >>> np.round(z * np.sqrt(2), 6).tolist()
    [[1.0, -1.0]]

    Raises
    ------
    TypeError
        If an array is not a float32/float64 ndarray, or ``eps`` is not a real number.
    ValueError
        If the shapes disagree (``E_out`` of width ``d``, ``b`` one per row of ``E_out``),
        ``eps`` is negative, or an array holds NaN or infinity (also a `FloatingPointError`).
    """
    d = _width(_floats(x, "x", ("N", "d")))
    _finite(_floats(gamma, "gamma", (d,), " for x of width d"), "gamma")
    _finite(_floats(beta, "beta", (d,), " for x of width d"), "beta")
    _finite(_floats(E_out, "E_out", ("V", d), " for x of width d"), "E_out")
    _finite(_floats(b, "b", (E_out.shape[0],), " = (V,), one per row of E_out"), "b")
    _check_eps(eps)
    y, c_ln = _layer_norm(x, gamma, beta, eps)
    scale = 1.0 / math.sqrt(x.shape[-1])
    logits = y @ E_out.T
    logits *= scale
    logits += b
    return logits, (c_ln, y, E_out, scale)


def head_backward(dlogits: np.ndarray, cache):
    """Backward pass of [`head_forward`][mlm_book.nn.layers.head_forward].

    Returns
    -------
    dx : ndarray, shape (N, d)
    grads : dict
        ``{"ln_f.g", "ln_f.b", "E_out", "b_out"}`` (``E_out`` is the gradient for the
        output rows of the tied table).

    Raises
    ------
    TypeError
        If ``dlogits`` is not a float32/float64 ndarray or ``cache`` not the forward's tuple.
    ValueError
        If ``dlogits`` does not have the shape of the logits, or holds NaN or infinity
        (also a `FloatingPointError`).

    Examples
    --------
    >>> z, cache = head_forward(np.array([[1.0, -1.0]]), np.ones(2), np.zeros(2), np.eye(2), np.zeros(2), 0.0)
    >>> dx, grads = head_backward(np.ones((1, 2)), cache)
    >>> dx.shape, grads["b_out"].tolist()
    ((1, 2), [1.0, 1.0])
    """
    c_ln, y, E_out, scale = _cache(cache, 4, "head_forward")
    shape = (_cached_array(y, "head_forward", 2).shape[0], _cached_array(E_out, "head_forward", 2).shape[0])
    _floats(dlogits, "dlogits", shape, " (the shape of the logits)")
    db = _column_sums(dlogits)
    _finite_sums(db, "dlogits")
    dl = dlogits * scale
    dE_out = dl.T @ y
    dy = dl @ E_out
    dx, g = layer_norm_backward(dy, c_ln)
    return dx, {"ln_f.g": g["g"], "ln_f.b": g["b"], "E_out": dE_out, "b_out": db}


def plain_head_forward(x: np.ndarray, E_out: np.ndarray):
    r"""The plain output layer: logits $= x E^\top/\sqrt d$, no LayerNorm and no bias.

    The form $u = hE^\top$ of many accounts of BERT, in the book's table scale (see
    [`mlm_book.nn.encoder`][mlm_book.nn.encoder]).

    Parameters
    ----------
    x : ndarray, shape (N, d)
    E_out : ndarray, shape (V, d)

    Returns
    -------
    logits : ndarray, shape (N, V)
    cache : tuple
        Laid out as [`head_forward`][mlm_book.nn.layers.head_forward]'s (its second item the rows read).

    Raises
    ------
    TypeError
        If an array is not a float32/float64 ndarray.
    ValueError
        If ``E_out`` is not of width ``d``, or an array holds NaN or infinity.

    Examples
    --------
    >>> z, _ = plain_head_forward(np.array([[2.0, 0.0]]), np.eye(2))
    >>> np.round(z * np.sqrt(2), 6).tolist()
    [[2.0, 0.0]]
    """
    d = _width(_floats(x, "x", ("N", "d")))
    _finite(x, "x")
    _finite(_floats(E_out, "E_out", ("V", d), " for x of width d"), "E_out")
    scale = 1.0 / math.sqrt(d)
    logits = x @ E_out.T
    logits *= scale
    return logits, (None, x, E_out, scale)


def plain_head_backward(dlogits: np.ndarray, cache):
    """Backward pass of [`plain_head_forward`][mlm_book.nn.layers.plain_head_forward].

    Returns
    -------
    dx : ndarray, shape (N, d)
    grads : dict
        ``{"E_out"}``, the gradient of the output table.

    Raises
    ------
    TypeError
        If ``dlogits`` is not a float32/float64 ndarray or ``cache`` not the forward's tuple.
    ValueError
        If ``dlogits`` does not have the shape of the logits, or holds NaN or infinity.

    Examples
    --------
    >>> x, E = np.array([[1.0, 2.0]]), np.eye(2)
    >>> dx, g = plain_head_backward(np.ones((1, 2)), plain_head_forward(x, E)[1])
    >>> np.round(dx * np.sqrt(2), 6).tolist(), np.round(g["E_out"] * np.sqrt(2), 6).tolist()
    ([[1.0, 1.0]], [[1.0, 2.0], [1.0, 2.0]])
    """
    _, x, E_out, scale = _cache(cache, 4, "plain_head_forward")
    shape = (_cached_array(x, "plain_head_forward", 2).shape[0],
             _cached_array(E_out, "plain_head_forward", 2).shape[0])
    _floats(dlogits, "dlogits", shape, " (the shape of the logits)")
    _finite(dlogits, "dlogits")
    dl = dlogits * scale
    return dl @ E_out, {"E_out": dl.T @ x}


def cross_entropy_forward(logits: np.ndarray, targets: np.ndarray):
    r"""Mean cross-entropy $-\frac1N\sum_r \log \operatorname{softmax}(z_r)_{y_r}$ and its logit gradient.

    Parameters
    ----------
    logits : ndarray, shape (N, V)
    targets : ndarray of int, shape (N,)

    Returns
    -------
    loss : float
        Nats.
    dlogits : ndarray, shape (N, V)
        $(\operatorname{softmax}(z) - \mathrm{onehot}(y))/N$.

    Examples
    --------
    >>> loss, grad = cross_entropy_forward(np.zeros((2, 4)), np.array([0, 3]))
    >>> bool(abs(loss - np.log(4)) < 1e-12), grad.shape
    (True, (2, 4))

    Raises
    ------
    TypeError
        If ``logits`` is not a float32/float64 ndarray or ``targets`` not integers.
    ValueError
        If ``logits`` is empty, ``targets`` does not hold one id in ``[0, V)`` per row, or
        the logits hold NaN or infinity (also a `FloatingPointError`).
    """
    _floats(logits, "logits", ("N", "V"))
    N, V = logits.shape
    if N == 0 or V == 0:
        raise ValueError(f"logits must have at least one row and one column, got shape {logits.shape}")
    targets = _ints(targets, "targets", 1)
    if targets.shape != (N,):
        raise ValueError(f"targets must hold one id per row of logits ({N}), got shape {targets.shape}")
    low, high = int(targets.min()), int(targets.max())
    if low < 0 or high >= V:
        raise ValueError(f"targets must be ids in [0, {V}), the columns of logits, got values from {low} to {high}")
    z = logits - logits.max(axis=-1, keepdims=True)
    idx = np.arange(N)
    picked = z[idx, targets].astype(np.float64)
    np.exp(z, out=z)
    total = z.sum(axis=-1, keepdims=True)
    loss = float(np.mean(np.log(total[:, 0].astype(np.float64)) - picked))
    if not math.isfinite(loss):                # free: a NaN or +inf logit, or -inf at a target, poisons the mean
        if np.isfinite(logits).all():
            raise _diverged("logits must not spread so far that their differences overflow")
        raise _diverged("logits must be finite (no NaN or infinity)")
    z /= total
    z[idx, targets] -= 1.0
    z *= 1.0 / N
    return loss, z
