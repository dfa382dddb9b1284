r"""Entropy, cross-entropy and KL divergence in nats, Theorem 1's decomposition, and the masked-LM loss.

All functions work on probability vectors along the last axis and broadcast over leading
axes. Conventions:

* $0 \log 0 = 0$: a zero of $p$ contributes nothing, whatever $q$ is there.
* A zero of $q$ where $p > 0$ makes the cross-entropy and the KL divergence $+\infty$
  (returned as ``inf``, without a warning and never as NaN): the log score of a predictor
  that rules out something that happens is infinitely bad, and that is the honest value.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from mlm_book.validation import as_float_array, as_int_array, check_distribution, check_real

__all__ = [
    "entropy",
    "cross_entropy",
    "kl_divergence",
    "Decomposition",
    "risk_decomposition",
    "log_softmax",
    "masked_lm_loss_and_grad",
]


def _pair(p, q):
    p = check_distribution(p, "p")
    q = check_distribution(q, "q")
    try:
        np.broadcast_shapes(p.shape, q.shape)
    except ValueError as error:
        raise ValueError(f"p and q must have broadcastable shapes, got {p.shape} and {q.shape}") from error
    if p.shape[-1] != q.shape[-1]:
        raise ValueError(f"p and q must have the same last axis, got {p.shape} and {q.shape}")
    return p, q


def _plogq(p: np.ndarray, q: np.ndarray) -> np.ndarray:
    """Elementwise p log q with 0 log anything = 0 and p log 0 = -inf for p > 0."""
    with np.errstate(divide="ignore"):
        log_q = np.log(q)
    return np.where(p > 0, p * np.where(p > 0, log_q, 0.0), 0.0)


def entropy(p) -> np.ndarray:
    r"""Shannon entropy $H(p) = -\sum_y p(y) \log p(y)$ in nats, over the last axis.

    Parameters
    ----------
    p : array_like
        ``(..., V)`` probability vectors.

    Returns
    -------
    numpy.ndarray
        ``(...)`` entropies (a 0-d array for one vector).

    Examples
    --------
    >>> float(entropy([0.5, 0.5, 0.0])) == float(np.log(2))
    True
    """
    p = check_distribution(p, "p")
    return -_plogq(p, p).sum(axis=-1)


def cross_entropy(p, q) -> np.ndarray:
    r"""Cross-entropy $-\sum_y p(y) \log q(y)$ in nats; ``inf`` if $q$ misses mass of $p$.

    Parameters
    ----------
    p : array_like
        ``(..., V)`` the distribution scoring is taken under.
    q : array_like
        ``(..., V)`` the predictor (broadcastable with ``p``).

    Returns
    -------
    numpy.ndarray
        ``(...)``.

    Examples
    --------
    >>> round(float(cross_entropy([0.5, 0.5], [0.25, 0.75])), 4)
    0.8370
    >>> float(cross_entropy([0.5, 0.5], [1.0, 0.0]))
    inf
    """
    p, q = _pair(p, q)
    return -_plogq(p, q).sum(axis=-1)


def kl_divergence(p, q) -> np.ndarray:
    r"""$\operatorname{KL}(p \,\|\, q) = \sum_y p(y) \log (p(y)/q(y))$ in nats; ``inf`` if $q$ misses mass of $p$.

    Computed termwise as $p (\log p - \log q)$, not as a difference of cross-entropy and
    entropy, so that it is exactly 0 at $q = p$ and accurate when tiny.

    Parameters
    ----------
    p : array_like
        ``(..., V)``.
    q : array_like
        ``(..., V)`` (broadcastable with ``p``).

    Returns
    -------
    numpy.ndarray
        ``(...)``, non-negative up to rounding.

    Examples
    --------
    >>> float(kl_divergence([0.2, 0.8], [0.2, 0.8]))
    0.0
    >>> round(float(kl_divergence([0.5, 0.5], [0.25, 0.75])), 4)
    0.1438
    """
    p, q = _pair(p, q)
    with np.errstate(divide="ignore"):
        log_ratio = np.log(np.where(p > 0, p, 1.0)) - np.log(q)
    terms = np.where(p > 0, p * np.where(p > 0, log_ratio, 0.0), 0.0)
    return np.maximum(terms.sum(axis=-1), 0.0)


class _DecompositionFields(NamedTuple):
    risk: float
    entropy: float
    kl: float
    gap: float


class Decomposition(_DecompositionFields):
    """Theorem 1's pieces, averaged over a batch of positions (nats); a named tuple.

    Attributes
    ----------
    risk : float
        Mean cross-entropy $\\mathbb{E}[-\\log q(x_i)]$ with $x_i \\sim p$.
    entropy : float
        Mean entropy of $p$.
    kl : float
        Mean $\\operatorname{KL}(p \\| q)$.
    gap : float
        ``risk - (entropy + kl)``: rounding only.

    Raises
    ------
    TypeError
        If a field is not a real number.
    ValueError
        If a field is NaN or infinite, or ``risk``, ``entropy`` or ``kl`` is negative.

    Examples
    --------
    >>> d = Decomposition(risk=1.5, entropy=1.0, kl=0.5, gap=0.0)
    >>> d.risk == d.entropy + d.kl, tuple(d)
    (True, (1.5, 1.0, 0.5, 0.0))
    """

    __slots__ = ()

    def __init__(self, risk, entropy, kl, gap):
        # A tuple's fields are set by __new__ (NamedTuple forbids overriding it); this checks them.
        for name in ("risk", "entropy", "kl"):
            check_real(getattr(self, name), name, low=0.0)
        check_real(self.gap, "gap")


def risk_decomposition(p, q, weights=None) -> Decomposition:
    r"""Theorem 1: $\mathbb{E}[-\log q(x_i)] = \mathbb{E} H(p) + \mathbb{E}\operatorname{KL}(p \,\|\, q)$.

    ``p`` holds the true conditional law at each position, ``q`` the predictor's; the
    risk is computed directly as the mean cross-entropy, and the two terms separately, so
    the returned ``gap`` measures the identity, not a tautology of the code.

    Parameters
    ----------
    p : array_like
        ``(..., V)`` true conditionals $P_i(\cdot \mid \tilde x)$.
    q : array_like
        ``(..., V)`` predictor, same shape.
    weights : array_like, optional
        ``(...)`` non-negative weights of the positions (e.g. the probability of each
        corrupted sentence); normalised to sum to one. Default: a plain mean.

    Returns
    -------
    Decomposition
        ``(risk, entropy, kl, gap)`` as floats.

    Raises
    ------
    ValueError
        If ``p`` or ``q`` is not a distribution along the last axis, their shapes differ,
        ``weights`` is not a non-negative array of the positions' shape with a positive sum,
        or ``q`` is zero where ``p`` is not on a weighted position (infinite risk).

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> p = rng.dirichlet(np.ones(25), size=1000)
    >>> q = rng.dirichlet(np.ones(25), size=1000)
    >>> d = risk_decomposition(p, q)
    >>> d.kl > 0, abs(d.gap) <= 1e-12
    (True, True)
    >>> abs(risk_decomposition(p, p).kl) <= 1e-15
    True
    """
    p, q = _pair(p, q)
    if p.shape != q.shape:
        raise ValueError(f"p and q must have the same shape, got {p.shape} and {q.shape}")
    if weights is None:
        weights = np.full(p.shape[:-1], 1.0 / max(1, int(np.prod(p.shape[:-1]))))
    else:
        weights = as_float_array(weights, "weights")
        if weights.shape != p.shape[:-1]:
            raise ValueError(f"weights must have shape {p.shape[:-1]}, got {weights.shape}")
        if np.any(weights < 0) or weights.sum() <= 0:
            raise ValueError("weights must be non-negative with a positive sum")
        weights = weights / weights.sum()
    used = weights > 0          # zero-weight rows (impossible sentences) may hold anything
    if np.any((p[used] > 0) & (q[used] == 0)):
        # The risk would be infinite and the gap inf - inf = NaN: Theorem 1 needs q > 0 where p > 0.
        raise ValueError("q must be positive wherever p is (on positions of positive weight): "
                         "the risk would be infinite")
    risk = float(np.sum(weights[used] * cross_entropy(p[used], q[used])))
    mean_entropy = float(np.sum(weights[used] * entropy(p[used])))
    mean_kl = float(np.sum(weights[used] * kl_divergence(p[used], q[used])))
    return Decomposition(risk, mean_entropy, mean_kl, risk - (mean_entropy + mean_kl))


def log_softmax(logits) -> np.ndarray:
    """Numerically stable log-softmax over the last axis.

    Parameters
    ----------
    logits : array_like
        ``(..., V)`` real scores.

    Returns
    -------
    numpy.ndarray
        ``(..., V)``.

    Examples
    --------
    >>> np.exp(log_softmax([1000.0, 1000.0])).tolist()
    [0.5, 0.5]
    """
    logits = as_float_array(logits, "logits")
    if logits.ndim == 0 or logits.shape[-1] == 0:
        raise ValueError(f"logits must have a non-empty last axis, got shape {logits.shape}")
    shifted = logits - logits.max(axis=-1, keepdims=True)
    return shifted - np.log(np.exp(shifted).sum(axis=-1, keepdims=True))


def masked_lm_loss_and_grad(logits, targets, selected) -> tuple[float, np.ndarray]:
    r"""The masked-LM loss (mean $-\log q(x_i \mid \tilde x)$ over selected positions) and its gradient.

    Only selected rows enter the loss, so the gradient with respect to the logits of an
    unselected position is exactly zero: the predictor is free there.

    Parameters
    ----------
    logits : array_like
        ``(B, n, V)`` scores; $q = \operatorname{softmax}$ of each row.
    targets : array_like
        ``(B, n)`` true token ids in ``[0, V)`` (values at unselected positions are ignored
        but must still be valid ids).
    selected : array_like
        ``(B, n)`` bool, the selected positions; at least one must be selected.

    Returns
    -------
    loss : float
        Mean negative log-likelihood over the selected positions, in nats.
    grad : numpy.ndarray
        ``(B, n, V)`` gradient of ``loss`` with respect to ``logits``:
        $(\operatorname{softmax} - \text{one-hot})/|M|$ on selected rows, 0 elsewhere.

    Raises
    ------
    TypeError
        If an argument is not an array of the right kind (``selected`` must be boolean).
    ValueError
        If ``logits`` is not a finite non-empty 3-D array, ``targets`` or ``selected`` does not
        match its first two axes, a target is outside ``[0, V)``, or nothing is selected.

    Examples
    --------
    >>> logits = np.zeros((1, 3, 4))
    >>> loss, grad = masked_lm_loss_and_grad(logits, [[0, 1, 2]], [[True, False, False]])
    >>> round(loss, 6) == round(float(np.log(4)), 6), float(np.abs(grad[0, 1:]).max())
    (True, 0.0)
    """
    logits = as_float_array(logits, "logits", ndim=3)
    batch, length, V = logits.shape
    if length == 0 or V == 0 or batch == 0:
        raise ValueError(f"logits must be non-empty, got shape {logits.shape}")
    targets = as_int_array(targets, "targets", ndim=2)
    if targets.shape != (batch, length):
        raise ValueError(f"targets must have shape {(batch, length)} (the first two axes of logits), "
                         f"got {targets.shape}")
    if targets.min() < 0 or targets.max() >= V:
        raise ValueError(f"targets must be token ids in [0, {V}) (V is the last axis of logits), "
                         f"got values from {targets.min()} to {targets.max()}")
    try:
        selected = np.asarray(selected)
    except (TypeError, ValueError) as error:
        raise TypeError(f"selected must be a boolean array (not ragged), got {type(selected).__name__}") from error
    if selected.dtype != bool:
        raise TypeError(f"selected must be a boolean array, got dtype {selected.dtype}")
    if selected.shape != (batch, length):
        raise ValueError(f"selected must have shape {(batch, length)}, got {selected.shape}")
    count = int(selected.sum())
    if count == 0:
        raise ValueError("selected must mark at least one position: the loss is a mean over selected positions")
    rows = logits[selected]                       # (count, V): only these reach the loss
    log_q = log_softmax(rows)
    chosen = targets[selected]
    loss = float(-log_q[np.arange(count), chosen].mean())
    row_grad = np.exp(log_q)
    row_grad[np.arange(count), chosen] -= 1.0
    grad = np.zeros_like(logits)
    grad[selected] = row_grad / count
    return loss, grad
