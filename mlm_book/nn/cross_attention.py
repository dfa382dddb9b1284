r"""Cross-attention: the decoder's queries read the encoder's output, with a hand-written backward pass.

Queries come from the decoder's rows $x$ (``(B*m, d)``), keys and values from the encoder's output rows,
the *memory* $M$ (``(B*n, d)``): head $h$ computes
$\operatorname{softmax}(Q_h K_h^\top/\sqrt{d_h})\,V_h$ with $Q = xW_q + b_q$ and $[K, V] = MW_{kv} + b_{kv}$,
and the heads, concatenated, are projected by $W_o$, $b_o$ (Vaswani et al., 2017). There is no mask:
every target position may read the whole source. The contract is the one of
[`mlm_book.nn.layers`][mlm_book.nn.layers]: the forward returns ``(y, cache)``, the backward returns the
input gradients (here two: the decoder rows and the memory) and a dict of parameter gradients; the
functions follow their inputs' dtype.
"""

from __future__ import annotations

import math

import numpy as np

from mlm_book.validation import check_instance, check_positive_int

__all__ = ["CROSS_PARAMS", "cross_attention_backward", "cross_attention_forward"]

CROSS_PARAMS = ("W_q", "b_q", "W_kv", "b_kv", "W_o", "b_o")
"""The parameters' names, in the order of their shapes ``(d, d), (d,), (d, 2d), (2d,), (d, d), (d,)``."""


def _float(value, name: str, shape: tuple) -> np.ndarray:
    if not isinstance(value, np.ndarray) or value.dtype.char not in "fd":
        raise TypeError(f"{name} must be a float32 or float64 numpy array, got "
                        f"{type(value).__name__}" + (f" of dtype {value.dtype}" if isinstance(value, np.ndarray) else ""))
    if value.shape != shape:
        raise ValueError(f"{name} must have shape {shape}, got {value.shape}")
    if not np.isfinite(value).all():
        raise ValueError(f"{name} must be finite (no NaN or infinity)")
    return value


def _pair(value, name: str) -> tuple[int, int]:
    check_instance(value, name, tuple)
    if len(value) != 2:
        raise ValueError(f"{name} must be a pair (B, length), got {value!r}")
    return check_positive_int(value[0], f"{name}[0]"), check_positive_int(value[1], f"{name}[1]")


def _split(a: np.ndarray, B: int, n: int, h: int, dh: int) -> np.ndarray:
    """``(B*n, h*dh)`` rows as ``(B, h, n, dh)`` (a view)."""
    return a.reshape(B, n, h, dh).transpose(0, 2, 1, 3)


def cross_attention_forward(x: np.ndarray, memory: np.ndarray, params: dict, n_heads: int,
                            query_shape: tuple[int, int], memory_shape: tuple[int, int]):
    r"""Multi-head cross-attention of decoder rows ``x`` over encoder rows ``memory``.

    Parameters
    ----------
    x : ndarray, shape (B*m, d)
        The (normalised) decoder rows: one query per target position.
    memory : ndarray, shape (B*n, d)
        The encoder's output rows: keys and values.
    params : dict
        ``W_q`` (d, d), ``b_q`` (d,), ``W_kv`` (d, 2d) (keys in columns ``[0, d)``, values in ``[d, 2d)``),
        ``b_kv`` (2d,), ``W_o`` (d, d), ``b_o`` (d,).
    n_heads : int
        Must divide ``d``.
    query_shape, memory_shape : tuple of int
        ``(B, m)`` and ``(B, n)``, with the same ``B``.

    Returns
    -------
    y : ndarray, shape (B*m, d)
    cache : tuple

    Raises
    ------
    TypeError, ValueError
        If an array is not float or not finite, a shape disagrees, ``n_heads`` does not divide ``d``, or the
        two shapes have different batch sizes.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> d = 4
    >>> p = {"W_q": rng.normal(size=(d, d)), "b_q": np.zeros(d), "W_kv": rng.normal(size=(d, 2 * d)),
    ...      "b_kv": np.zeros(2 * d), "W_o": np.eye(d), "b_o": np.zeros(d)}
    >>> x, mem = rng.normal(size=(2 * 3, d)), rng.normal(size=(2 * 5, d))
    >>> y, _ = cross_attention_forward(x, mem, p, 2, (2, 3), (2, 5))
    >>> y.shape
    (6, 4)

    The second pair's memory does not reach the first pair's outputs:

    >>> mem2 = mem.copy(); mem2[5:] += 3.0
    >>> y2, _ = cross_attention_forward(x, mem2, p, 2, (2, 3), (2, 5))
    >>> bool(np.allclose(y[:3], y2[:3])), bool(np.allclose(y[3:], y2[3:]))
    (True, False)
    """
    B, m = _pair(query_shape, "query_shape")
    B2, n = _pair(memory_shape, "memory_shape")
    if B != B2:
        raise ValueError(f"query_shape and memory_shape must have the same batch size, got {B} and {B2}")
    if not isinstance(x, np.ndarray) or x.dtype.char not in "fd":
        raise TypeError(f"x must be a float32 or float64 numpy array, got {type(x).__name__}")
    if x.ndim != 2 or x.shape[1] == 0:
        raise ValueError(f"x must have shape (B*m, d) with d >= 1, got {x.shape}")
    d = x.shape[1]
    _float(x, "x", (B * m, d))
    if isinstance(memory, np.ndarray) and memory.ndim == 2 and memory.shape[1] != d:
        raise ValueError(f"x and memory must have the same width d, got {d} and {memory.shape[1]}")
    _float(memory, "memory", (B * n, d))
    n_heads = check_positive_int(n_heads, "n_heads")
    if d % n_heads:
        raise ValueError(f"n_heads must divide the width d = {d}, got {n_heads}")
    if not isinstance(params, dict):
        raise TypeError(f"params must be a dict of the arrays {CROSS_PARAMS}, got {type(params).__name__}")
    shapes = ((d, d), (d,), (d, 2 * d), (2 * d,), (d, d), (d,))
    for name, shape in zip(CROSS_PARAMS, shapes):
        if name not in params:
            raise ValueError(f"params has no {name!r}")
        _float(params[name], f"params[{name!r}]", shape)
    dh = d // n_heads
    scale = 1.0 / math.sqrt(dh)
    q = (x @ params["W_q"] + params["b_q"]) * scale
    kv = memory @ params["W_kv"] + params["b_kv"]
    qh = _split(q, B, m, n_heads, dh)
    kh = _split(np.ascontiguousarray(kv[:, :d]), B, n, n_heads, dh)
    vh = _split(np.ascontiguousarray(kv[:, d:]), B, n, n_heads, dh)
    s = qh @ kh.transpose(0, 1, 3, 2)                            # (B, h, m, n)
    s -= s.max(axis=-1, keepdims=True)
    a = np.exp(s)
    a /= a.sum(axis=-1, keepdims=True)
    o = (a @ vh).transpose(0, 2, 1, 3).reshape(B * m, d)
    y = o @ params["W_o"] + params["b_o"]
    return y, ("cross", x, memory, qh, kh, vh, a, o, params, n_heads, (B, m, n), scale)


def cross_attention_backward(dy: np.ndarray, cache):
    r"""Backward pass of [`cross_attention_forward`][mlm_book.nn.cross_attention.cross_attention_forward].

    Through the softmax, $dS = A \odot (dA - \operatorname{rowsum}(dA \odot A))$; the memory's gradient
    collects the keys' and values' paths.

    Returns
    -------
    dx : ndarray, shape (B*m, d)
    dmemory : ndarray, shape (B*n, d)
    grads : dict
        Keyed by `CROSS_PARAMS`.

    Raises
    ------
    TypeError
        If ``cache`` is not the forward's tuple or ``dy`` is not a float array.
    ValueError
        If ``dy`` does not have the forward output's shape or is not finite.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> p = {"W_q": rng.normal(size=(2, 2)), "b_q": np.zeros(2), "W_kv": rng.normal(size=(2, 4)),
    ...      "b_kv": np.zeros(4), "W_o": np.eye(2), "b_o": np.zeros(2)}
    >>> y, cache = cross_attention_forward(rng.normal(size=(3, 2)), rng.normal(size=(4, 2)), p, 1, (1, 3), (1, 4))
    >>> dx, dmem, grads = cross_attention_backward(np.ones_like(y), cache)
    >>> dx.shape, dmem.shape, sorted(grads) == sorted(CROSS_PARAMS)
    ((3, 2), (4, 2), True)
    """
    if not (isinstance(cache, tuple) and len(cache) == 12 and cache[0] == "cross"):
        raise TypeError("cache must be the tuple cross_attention_forward returned")
    _, x, memory, qh, kh, vh, a, o, params, n_heads, (B, m, n), scale = cache
    d = x.shape[1]
    dh = d // n_heads
    _float(dy, "dy", (B * m, d))
    grads = {"W_o": o.T @ dy, "b_o": dy.sum(axis=0)}
    do = _split(dy @ params["W_o"].T, B, m, n_heads, dh)         # (B, h, m, dh)
    dv = a.transpose(0, 1, 3, 2) @ do                            # (B, h, n, dh)
    da = do @ vh.transpose(0, 1, 3, 2)                           # (B, h, m, n)
    ds = a * (da - (da * a).sum(axis=-1, keepdims=True))
    dq = (ds @ kh) * scale                                       # wrt the unscaled queries
    dk = ds.transpose(0, 1, 3, 2) @ qh                           # qh holds the scaled queries
    dq = dq.transpose(0, 2, 1, 3).reshape(B * m, d)
    dkv = np.concatenate([dk.transpose(0, 2, 1, 3).reshape(B * n, d),
                          dv.transpose(0, 2, 1, 3).reshape(B * n, d)], axis=1)
    grads["W_q"] = x.T @ dq
    grads["b_q"] = dq.sum(axis=0)
    grads["W_kv"] = memory.T @ dkv
    grads["b_kv"] = dkv.sum(axis=0)
    dx = dq @ params["W_q"].T
    dmemory = dkv @ params["W_kv"].T
    return dx, dmemory, {name: grads[name] for name in CROSS_PARAMS}
