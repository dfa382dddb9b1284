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
all of them: there is no causal mask), but queries, scores, the output projection, the
residual, the second LayerNorm and the MLP then run on those rows only. The loss needs
only the selected positions, so the last block uses this; the result is identical to
computing every row and discarding the rest (tested to 1e-12).
"""

from __future__ import annotations

import math

import numpy as np

__all__ = [
    "GELU_C",
    "layer_norm_forward",
    "layer_norm_backward",
    "gelu",
    "gelu_derivative",
    "attention_forward",
    "attention_backward",
    "key_bias_from_valid",
    "mlp_forward",
    "mlp_backward",
    "mlp_backward_reference",
    "block_forward",
    "block_backward",
    "embedding_forward",
    "embedding_backward",
    "head_forward",
    "head_backward",
    "cross_entropy_forward",
]

#: $\sqrt{2/\pi}$, the constant of the tanh form of GELU.
GELU_C = math.sqrt(2.0 / math.pi)
_GELU_A = 0.044715


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


def _softmax_last(s: np.ndarray) -> np.ndarray:
    r"""Softmax over the last axis of ``s`` (B, h, n, n), in place.

    The stabilising shift is the maximum of each whole (B, h) score matrix, one fast
    reduction instead of one per row. A row whose entries all lie far below that maximum
    could then underflow; if any row sum falls below 1e-20 the scores are recomputed with
    the exact per-row maximum, so the result never silently loses a row.
    """
    B, h, n, m = s.shape
    shift = s.reshape(B * h, n * m).max(axis=1).reshape(B, h, 1, 1)
    shifted = s - shift
    np.exp(shifted, out=shifted)
    total = _row_sums(shifted)
    if total.min() < 1e-20:
        shifted = s - s.max(axis=-1, keepdims=True)
        np.exp(shifted, out=shifted)
        total = _row_sums(shifted)
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

    Examples
    --------
    >>> y, _ = layer_norm_forward(np.array([[1.0, 2.0, 3.0]]), np.ones(3), np.zeros(3), 0.0)
    >>> np.round(y, 4)
    array([[-1.2247,  0.    ,  1.2247]])
    """
    d = x.shape[-1]
    w = np.full(d, 1.0 / d, dtype=x.dtype)
    xc = x - (x @ w)[:, None]
    var = (xc * xc) @ w
    var += eps
    rstd = (1.0 / np.sqrt(var))[:, None]
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
    """
    xhat, rstd, gamma = cache
    d = xhat.shape[-1]
    w = np.full(d, 1.0 / d, dtype=dy.dtype)
    ones = np.ones(dy.shape[0], dtype=dy.dtype)
    prod = dy * xhat
    dgamma = ones @ prod
    dbeta = ones @ dy
    g = dy * gamma
    prod = g * xhat
    mean_gx = (prod @ w)[:, None]
    g -= (g @ w)[:, None]
    np.multiply(xhat, mean_gx, out=prod)
    g -= prod
    g *= rstd
    return g, {"g": dgamma, "b": dbeta}


# --------------------------------------------------------------------------- GELU
def gelu(u: np.ndarray) -> np.ndarray:
    r"""GELU in its tanh form, $\tfrac12 u\,(1 + \tanh(c\,(u + 0.044715\,u^3)))$, $c = \sqrt{2/\pi}$.

    Examples
    --------
    >>> np.round(gelu(np.array([-1.0, 0.0, 1.0])), 4)
    array([-0.1588,  0.    ,  0.8412])
    """
    return 0.5 * u * (1.0 + np.tanh(GELU_C * (u + _GELU_A * u * u * u)))


def gelu_derivative(u: np.ndarray) -> np.ndarray:
    r"""Derivative of [`gelu`][mlm_book.nn.layers.gelu], computed from scratch (the reference form).

    Examples
    --------
    >>> u, h = 0.3, 1e-6
    >>> bool(abs(gelu_derivative(np.array(u)) - (gelu(np.array(u + h)) - gelu(np.array(u - h))) / (2 * h)) < 1e-9)
    True
    """
    t = np.tanh(GELU_C * (u + _GELU_A * u ** 3))
    return 0.5 * (1.0 + t) + 0.5 * u * (1.0 - t ** 2) * GELU_C * (1.0 + 3.0 * _GELU_A * u ** 2)


# --------------------------------------------------------------------------- attention
def attention_forward(x: np.ndarray, W_qkv: np.ndarray, b_qkv: np.ndarray, W_o: np.ndarray,
                      b_o: np.ndarray, n_heads: int, shape: tuple[int, int], rows: np.ndarray | None = None,
                      key_bias: np.ndarray | None = None):
    r"""Multi-head self-attention with biases, every position attending to every position.

    The queries, keys and values come from one fused product $x W_{qkv} + b_{qkv}$; head
    $h$ computes $\operatorname{softmax}(Q_h K_h^\top/\sqrt{d_h})\,V_h$; the heads are
    concatenated and projected by $W_o$, $b_o$. No causal mask.

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
    key_bias : ndarray, shape (B, n), optional
        Added to every query's score of each key: 0 for a key that may be read, a large
        negative number ([`key_bias_from_valid`][mlm_book.nn.layers.key_bias_from_valid]) for a padded slot, whose
        attention weight is then exactly 0. It is a constant, so the backward pass is
        unchanged (a zero weight passes no gradient).

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
    """
    if rows is not None:
        return _attention_rows_forward(x, W_qkv, b_qkv, W_o, b_o, n_heads, shape, rows, key_bias)
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
        s += key_bias[:, None, None, :]
    a = _softmax_last(s)                                   # (B, h, n, n): rows are queries
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
    """
    valid = np.asarray(valid)
    if valid.dtype != np.bool_ or valid.ndim != 2:
        raise ValueError(f"valid must be a 2-D boolean array (B, n), got dtype {valid.dtype} and shape {valid.shape}")
    if not valid.any(axis=1).all():
        raise ValueError("valid must keep at least one position of every sequence")
    return np.where(valid, 0.0, -1e9).astype(dtype)


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


def _attention_rows_forward(x, W_qkv, b_qkv, W_o, b_o, n_heads, shape, rows, key_bias=None):
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
        s += key_bias[:, None, None, :]
    a = _softmax_last(s)
    o = np.empty((B, m, d), dtype=x.dtype)
    np.matmul(a, v, out=o.reshape(B, m, n_heads, dh).transpose(0, 2, 1, 3))
    o_rows = o[seq, slot]
    y = o_rows @ W_o
    y += b_o
    return y, ("rows", x, x_rows, kv, q, a, o_rows, W_qkv, W_o, n_heads, shape, rows, seq, slot, m, scale)


def _attention_rows_backward(dy, cache):
    _, x, x_rows, kv, q, a, o_rows, W_qkv, W_o, n_heads, (B, n), rows, seq, slot, m, scale = cache
    d = x.shape[-1]
    dh = d // n_heads
    dW_o = o_rows.T @ dy
    db_o = _column_sums(dy)
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
    """
    if cache[0] == "rows":
        return _attention_rows_backward(dy, cache)
    _, x, qkv, a, o, W_qkv, W_o, n_heads, (B, n), scale = cache
    d = x.shape[-1]
    dh = d // n_heads
    dW_o = o.T @ dy
    db_o = _column_sums(dy)
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
    """
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
    """
    x, u, u2, tp1, h, W_1, W_2 = cache
    dW_2 = h.T @ dy
    dW_2 *= 0.5
    db_2 = _column_sums(dy)
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

    Returns
    -------
    dx : ndarray, shape (N, d)
    grads : dict
        ``{"W_1", "b_1", "W_2", "b_2"}``.
    """
    u = x @ W_1 + b_1
    g = gelu(u)
    dW_2 = g.T @ dy
    db_2 = dy.sum(axis=0)
    du = (dy @ W_2.T) * gelu_derivative(u)
    return du @ W_1.T, {"W_1": x.T @ du, "b_1": du.sum(axis=0), "W_2": dW_2, "b_2": db_2}


# --------------------------------------------------------------------------- block


def block_forward(x: np.ndarray, params, prefix: str, n_heads: int, shape: tuple[int, int],
                  eps: float = 1e-5, rows: np.ndarray | None = None, key_bias: np.ndarray | None = None):
    r"""Pre-LN transformer block without causal mask: $h = x + \mathrm{MHA}(\mathrm{LN}_1(x))$, $y = h + \mathrm{MLP}(\mathrm{LN}_2(h))$.

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
    key_bias : ndarray, shape (B, n), optional
        Padded keys, as for [`attention_forward`][mlm_book.nn.layers.attention_forward].

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
    """
    P = lambda name: params[prefix + name]  # noqa: E731
    a_in, c_ln1 = layer_norm_forward(x, P("ln1.g"), P("ln1.b"), eps)
    att, c_att = attention_forward(a_in, P("attn.W_qkv"), P("attn.b_qkv"), P("attn.W_o"), P("attn.b_o"),
                                   n_heads, shape, rows, key_bias)
    h = att
    h += x if rows is None else x[rows]
    m_in, c_ln2 = layer_norm_forward(h, P("ln2.g"), P("ln2.b"), eps)
    m, c_mlp = mlp_forward(m_in, P("mlp.W_1"), P("mlp.b_1"), P("mlp.W_2"), P("mlp.b_2"))
    m += h
    return m, (c_ln1, c_att, c_ln2, c_mlp, rows, prefix, x.shape)


def block_backward(dy: np.ndarray, cache):
    """Backward pass of [`block_forward`][mlm_book.nn.layers.block_forward].

    Returns
    -------
    dx : ndarray, shape (B*n, d)
    grads : dict
        Keyed by the full parameter names (``prefix + name``).
    """
    c_ln1, c_att, c_ln2, c_mlp, rows, prefix, x_shape = cache
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
    """
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
    """
    tokens, E_shape, P_shape = cache
    B, n = tokens.shape
    V_in, d = E_shape
    flat = (tokens.reshape(-1, 1) * d + np.arange(d)).reshape(-1)
    dE = np.bincount(flat, weights=dx.reshape(-1), minlength=V_in * d).reshape(V_in, d).astype(dx.dtype, copy=False)
    dP = np.zeros(P_shape, dtype=dx.dtype)
    dP[:n] = _column_sums(dx.reshape(B, n * d)).reshape(n, d)
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
    """
    y, c_ln = layer_norm_forward(x, gamma, beta, eps)
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
    """
    c_ln, y, E_out, scale = cache
    dl = dlogits * scale
    dE_out = dl.T @ y
    dy = dl @ E_out
    dx, g = layer_norm_backward(dy, c_ln)
    return dx, {"ln_f.g": g["g"], "ln_f.b": g["b"], "E_out": dE_out, "b_out": _column_sums(dlogits)}


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
    """
    N = logits.shape[0]
    z = logits - logits.max(axis=-1, keepdims=True)
    idx = np.arange(N)
    picked = z[idx, targets].astype(np.float64)
    np.exp(z, out=z)
    total = z.sum(axis=-1, keepdims=True)
    loss = float(np.mean(np.log(total[:, 0].astype(np.float64)) - picked))
    z /= total
    z[idx, targets] -= 1.0
    z *= 1.0 / N
    return loss, z
