r"""Training a linear-chain CRF tagger over frozen vectors: a batched forward–backward and L-BFGS.

[`mlm_book.crf`][mlm_book.crf] scores one sentence at a time and is the exact reference.
This module fits the chapter's tagger: the encoder is frozen, each token's vector $x_t$
($d$ numbers) gives the emissions through one linear layer,

$$e_t(j) = x_t^\top W_{:j} + b_j, \qquad W \in \mathbb{R}^{d \times K},\ b \in \mathbb{R}^K,$$

and the transitions $T$, start scores $a$ and end scores $c$ are those of
[`mlm_book.crf`][mlm_book.crf] (which calls the end scores $b$; here $b$ is the emission
bias). Fitting maximises the penalised conditional likelihood, i.e. minimises

$$F = \frac{1}{N} \sum_{s=1}^{B} -\log P(y^{(s)} \mid x^{(s)})
      + \frac{\lambda}{2} \bigl(\lVert W \rVert_F^2 + \lVert T \rVert_F^2\bigr),$$

with $N$ the number of tokens (the sum of the lengths), so that the first term is a mean
per token, as in [`mlm_book.probe`][mlm_book.probe]: with $T$, $a$ and $c$ held at zero it
is the mean log-loss of a per-token softmax classifier with weights $(W, b)$, the model the
probe fits (there on standardised vectors, with one class as reference). The biases $b$,
$a$, $c$ are not penalised. Features are used as given (no standardisation: the caller
standardises if it wants to).

**Batching.** Sentences of a batch are padded to a common length $n$: emissions
``(B, n, K)``, ``lengths`` ``(B,)`` in $[1, n]$, tags ``(B, n)`` whose entries past a
sentence's length are ignored (any integer, e.g. ``-1``, may pad them).
[`batch_log_likelihood`][mlm_book.crf_fit.batch_log_likelihood] runs the forward and
backward recursions for all sentences at once, in log space: sentences are sorted by
length (longest first), so the ``B_t`` sentences still running at position $t$ are a prefix
of the batch, and each step works on that slice, never in a Python loop over sentences.
Padding is never stored: the recursions hold one row per real token.

**Forbidden transitions.** With ``allowed`` (a ``(K + 1, K + 1)`` mask from
[`mlm_book.tagging.allowed_transitions`][mlm_book.tagging.allowed_transitions]), every
forbidden transition, start and end score is *excluded from the parameter vector* and held
at the constant [`FORBIDDEN`][mlm_book.crf_fit.FORBIDDEN] $= -10^4$: it is not fitted and
not penalised. A sequence with one forbidden step then has probability below
$e^{-10^4} K^n$, which is exactly zero in float64, and Viterbi never picks it while the
emission scores of a sentence differ by less than $10^4$;
[`decode`][mlm_book.crf_fit.decode] with ``allowed`` excludes such sequences outright.

**Optimiser.** [`minimize_lbfgs`][mlm_book.crf_fit.minimize_lbfgs], a small limited-memory
BFGS written here (no SciPy at run time): the two-loop recursion over the last ``memory``
curvature pairs, a backtracking line search (Armijo, or Hager and Zhang's approximate Wolfe
conditions once $f$ has no more digits to decrease), and a restart along the steepest
descent direction when a step fails. It is deterministic (no randomness anywhere) and stops
when the largest gradient entry is below ``tol`` (``converged``), after ``max_iter``
iterations, or when no step decreases the objective any more (``converged`` is then false).
$F$ is convex, strictly in $W$ and $T$; adding one constant to every entry of $b$ (or of
$a$, or of $c$) changes no probability, but the gradient sums to zero over each of them, so
the iterates never move along those directions and the fit keeps the start's mean there
(zero without ``init``).

**Cost.** One evaluation of $F$ and its gradient costs two ``(N, d) x (d, K)`` matrix
products for the ``N`` real tokens, and per position one ``(B_t, K) x (K, K)`` product
forward, one backward and one ``(K, B_t) x (B_t, K)`` for the edge marginals. The
log-sum-exp of a step is computed as a matrix product of numbers in ``[0, 1]``, shifted by
the row maximum of $\alpha$ and the column maximum of $T$, which cannot overflow; a row
where it could lose precision to underflow (scores hundreds of nats apart) is recomputed
with the per-cell maximum shift, the log-sum-exp of [`mlm_book.crf`][mlm_book.crf]. Both
paths agree with [`mlm_book.crf`][mlm_book.crf] to ``1e-10`` in the tests. Measured on the
book's 2-core machine while another process kept both cores busy (``benchmarks/bench_crf_fit.py``):
``B = 3000`` sentences of ``n = 16`` tokens, ``d = 64``, ``K = 9`` (BIO tags of four types),
sampled from an HMM, [`fit_crf`][mlm_book.crf_fit.fit_crf] to ``tol = 1e-5`` took 6.7 s
(174 L-BFGS iterations, about 38 ms each) without a mask and 3.2 s (81 iterations) with
the BIO mask; with lengths drawn from 4 to 16 (30,008 tokens) 4.4 s and 2.4 s. Decoding
the 3000 sentences with [`mlm_book.crf.viterbi`][mlm_book.crf.viterbi] took 0.4 s.

Examples
--------
>>> rng = np.random.default_rng(0)
>>> features = rng.normal(size=(5, 4, 2))
>>> lengths = np.array([4, 1, 3, 4, 2])
>>> tags = np.array([[0, 1, 1, 0], [2, -1, -1, -1], [1, 1, 0, -1], [0, 0, 2, 2], [2, 1, -1, -1]])
>>> tagger = fit_crf(features, lengths, tags, 3)
>>> tagger.converged, [path.tolist() for path in decode(tagger, features, lengths)][:2]
(True, [[0, 1, 1, 0], [2]])
"""

from __future__ import annotations

import math
import numbers
from collections import deque
from dataclasses import dataclass

import numpy as np

from mlm_book.crf import MAX_SCORE_SUM, best_paths, check_allowed, check_scores, logsumexp
from mlm_book.nn import runtime
from mlm_book.validation import (
    as_float_array,
    as_int_array,
    check_bool,
    check_instance,
    check_positive_float,
    check_positive_int,
    check_real,
)

__all__ = [
    "FORBIDDEN",
    "CRF_STRENGTH",
    "GRADIENT_TOLERANCE",
    "MAX_BATCH_CELLS",
    "MAX_PARAMETERS",
    "UNDERFLOW",
    "LBFGS_MEMORY",
    "ARMIJO",
    "CURVATURE",
    "WOLFE_SLACK",
    "MAX_BACKTRACKS",
    "BatchGradient",
    "batch_log_likelihood",
    "CRFTagger",
    "TaggerGradient",
    "penalised_objective",
    "LBFGSResult",
    "minimize_lbfgs",
    "fit_crf",
    "decode",
    "viterbi_batch",
]

FORBIDDEN = -1e4
r"""The fixed score of a transition, start or end that ``allowed`` forbids: $e^{-10^4}$ is zero in float64, so such a step carries no probability, while every sum stays finite (no ``-inf - -inf``)."""

CRF_STRENGTH = 1e-3
r"""Default ridge strength $\lambda$ on $W$ and $T$, on the per-token mean log-loss: the value of the probe's ``PROBE_STRENGTH`` ([`mlm_book.probe`][mlm_book.probe]), for the same reason (it binds only when the data nearly separate the tags, and keeps the optimum finite and the problem strongly convex in $W$ and $T$)."""

GRADIENT_TOLERANCE = 1e-5
r"""Default convergence threshold of [`fit_crf`][mlm_book.crf_fit.fit_crf] on the largest absolute gradient entry of the per-token objective (of order one at the start). On a synthetic problem of chapter 9's size (``benchmarks/bench_crf_fit.py``: 3000 sentences of 16 tokens, $d = 64$, $K = 9$) a fit to ``1e-5`` ended $3 \times 10^{-6}$ above one run on to ``1e-7`` (174 against 689 iterations), and 2 of its 48,000 decoded tags differed."""

MAX_BATCH_CELLS = 10**9
r"""Largest ``B * n * K * K`` (the cells of one pass of the batched recursion) a call works on: 100,000 sentences of 40 tokens with 15 tags; beyond it a mistaken shape is refused rather than run for minutes."""

MAX_PARAMETERS = 10**7
r"""Largest number of parameters (``d K + K^2 + 3K``) [`fit_crf`][mlm_book.crf_fit.fit_crf] fits."""

UNDERFLOW = 1e-280
r"""A row of the batched recursion whose shifted sum falls below this in some column is recomputed with the exact per-column log-sum-exp: terms lost to float64 underflow ($< 10^{-308}$) are then below $10^{-28}$ of every sum kept."""

LBFGS_MEMORY = 20
r"""Curvature pairs [`minimize_lbfgs`][mlm_book.crf_fit.minimize_lbfgs] keeps by default. The usual range is 3 to 20. A ridge of $10^{-3}$ against curvatures of order one makes the CRF objective ill-conditioned, and on a synthetic problem of chapter 9's size (``B = 3000``, ``n = 16``, ``d = 64``, ``K = 9``) 20 pairs took 174 iterations where 10 took 188 to ``tol = 1e-5``, and 317 where 10 took 582 to ``1e-6``; the two-loop recursion costs $O(20p)$ for $p$ parameters, nothing beside one evaluation of the objective."""

ARMIJO = 1e-4
r"""Sufficient-decrease constant $c_1$ of the line search: a step $t$ along $p$ is taken when $f(x + tp) \le f(x) + c_1 t\, g^\top p$ (and $f$ strictly decreases)."""

CURVATURE = 0.9
r"""Curvature constant $\sigma$ of the approximate Wolfe conditions (the usual value for quasi-Newton methods)."""

WOLFE_SLACK = 1e-12
r"""Relative increase of $f$ the approximate Wolfe conditions tolerate: about 4,500 ulp of $f$, the order of the rounding of a sum of thousands of log partitions, and far below any real change."""

MAX_BACKTRACKS = 60
r"""Halvings of the step the line search tries before it gives up: $2^{-60} \approx 10^{-18}$ of a first step is below float64's resolution of any parameter of order one."""


# ----------------------------------------------------------------------------- checks
def _lengths(lengths, name: str, batch: int, padded: int, other: str) -> np.ndarray:
    array = as_int_array(lengths, name, ndim=1)
    if array.shape != (batch,):
        raise ValueError(f"{name} must hold one length per sentence of {other} ({batch}), got shape {array.shape}")
    low, high = int(array.min()), int(array.max())
    if low < 1 or high > padded:
        raise ValueError(f"{name} must be in [1, n] = [1, {padded}] (n: the padded length of {other}), "
                         f"got values from {low} to {high}")
    return array


def _active(lengths: np.ndarray, padded: int) -> np.ndarray:
    """``(B, n)`` bool: position ``t`` lies inside sentence ``s``."""
    return np.arange(padded)[None, :] < lengths[:, None]


def _tags(tags, name: str, shape: tuple[int, int], active: np.ndarray, n_tags: int, other: str,
          tags_of: str = "K") -> np.ndarray:
    array = as_int_array(tags, name, ndim=2)
    if array.shape != shape:
        raise ValueError(f"{name} must have shape (B, n) = {shape} like {other}, got {array.shape}")
    inside = array[active]
    low, high = int(inside.min()), int(inside.max())
    if low < 0 or high >= n_tags:
        raise ValueError(f"{name} must be tag ids in [0, {tags_of}) = [0, {n_tags}) within each sentence's "
                         f"length, got values from {low} to {high}")
    return np.where(active, array, 0)


def _check_cells(batch: int, padded: int, n_tags: int, what: str) -> None:
    cells = batch * padded * n_tags * n_tags
    if cells > MAX_BATCH_CELLS:
        raise ValueError(f"{what} ask for B * n * K * K = {cells} cells, more than the limit {MAX_BATCH_CELLS}")


# ----------------------------------------------------------------------------- recursions
def _log_matmul(rows: np.ndarray, scores: np.ndarray, weights: np.ndarray,
                shift: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    r"""$\log \sum_i \exp(r_i + S_{ij})$ for every row $r$ of ``rows`` (R, K), and which rows took the fast path.

    Fast path: with $m = \max_i r_i$ per row and ``shift`` $\tau_j = \max_i S_{ij}$, the sum is
    $e^{m + \tau_j} \sum_i e^{r_i - m}\, e^{S_{ij} - \tau_j}$, a matrix product of numbers in
    $[0, 1]$ (``weights`` $= e^{S - \tau}$): nothing overflows. A term can only underflow, and
    terms below $10^{-308}$ are negligible unless the whole sum is tiny; a row whose sum falls
    below ``UNDERFLOW`` in some column is recomputed exactly, with
    the shift $\max_i (r_i + S_{ij})$ per column, the reference's log-sum-exp.
    """
    top = rows.max(axis=1, keepdims=True)
    total = np.exp(rows - top) @ weights
    fast = total.min(axis=1) >= UNDERFLOW
    with np.errstate(divide="ignore"):
        result = top + shift + np.log(total)
    if not fast.all():
        slow = ~fast
        result[slow] = logsumexp(rows[slow][:, :, None] + scores, axis=1)
    return result, fast


class _Layout:
    r"""Where each token of a padded batch sits in the batched recursions.

    Sentences are sorted longest first (stably), so the sentences still running at position
    ``t`` are the first ``count[t]`` of the sorted batch. Tokens are stored position by
    position: block ``t`` holds rows ``offset[t] : offset[t] + count[t]``, one per running
    sentence in sorted order, and block ``t - 1`` starts with the same sentences. Every
    array of the recursions is ``(N, K)`` for the ``N`` real tokens; padding is never stored.
    """

    def __init__(self, lengths: np.ndarray, padded: int):
        batch = lengths.shape[0]
        order = np.argsort(-lengths, kind="stable")
        sorted_lengths = lengths[order]
        self.count = (sorted_lengths[None, :] > np.arange(padded)[:, None]).sum(axis=1)   # (n,)
        self.offset = np.concatenate([[0], np.cumsum(self.count)[:-1]])
        self.row = np.concatenate([np.arange(c) for c in self.count])                     # sorted row of a token
        self.position = np.repeat(np.arange(padded), self.count)
        self.sentence = order[self.row]                                                   # its sentence
        self.order = order
        self.last = self.offset[sorted_lengths - 1] + np.arange(batch)                   # each sorted sentence's last


def _chain(scores: np.ndarray, layout: _Layout, transitions: np.ndarray, start: np.ndarray,
           end: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    r"""Forward–backward over a batch in the token layout of ``_Layout``.

    Returns the log partitions ``(B,)`` in sorted order, the node marginals ``(N, K)`` in the
    token layout, and the edge marginals summed over sentences and positions ``(K, K)``.
    Each step's log-sum-exp is ``_log_matmul`` (a shifted
    matrix product, with the exact per-column shift for the rows where it would underflow).

    The edge marginals of a sentence at step ``t`` are $A_i\, W_{ij}\, G_j$ with
    $A = e^{\alpha_{t-1} - m}$, $W = e^{T - \tau}$ and $G = e^{e_t + \beta_t + m + \tau - \log Z}$;
    since the node marginal at ``t`` is $G_j \sum_i A_i W_{ij} \le 1$, $G$ is at most
    ``1 / UNDERFLOW`` on the fast rows, and the sum over sentences is the product
    $W \odot (A^\top G)$. Rows of the slow path are summed exactly, cell by cell.
    """
    count, offset = layout.count, layout.offset
    steps = int(np.count_nonzero(count))
    into = transitions.max(axis=0)                                          # tau_j, column maxima
    out_of = transitions.max(axis=1)                                        # row maxima, for beta
    forward_weights = np.exp(transitions - into)
    backward_weights = np.ascontiguousarray(np.exp(transitions - out_of[:, None]).T)
    alpha = np.empty_like(scores)
    fast = np.ones(scores.shape[0], dtype=bool)
    batch = count[0]
    alpha[:batch] = start + scores[:batch]
    for t in range(1, steps):
        here, before = slice(offset[t], offset[t] + count[t]), slice(offset[t - 1], offset[t - 1] + count[t])
        step, fast[here] = _log_matmul(alpha[before], transitions, forward_weights, into)
        alpha[here] = scores[here] + step
    log_z = logsumexp(alpha[layout.last] + end, axis=1)
    # beta_t(i): log score of every continuation after position t in tag i; end at the last position.
    beta = np.empty_like(scores)
    for t in range(steps - 1, -1, -1):
        going_on = count[t + 1] if t + 1 < steps else 0
        if going_on:
            after = slice(offset[t + 1], offset[t + 1] + going_on)
            beta[offset[t]:offset[t] + going_on] = _log_matmul(scores[after] + beta[after], transitions.T,
                                                               backward_weights, out_of)[0]
        beta[offset[t] + going_on:offset[t] + count[t]] = end
    node = np.exp(alpha + beta - log_z[layout.row][:, None])
    edge = np.zeros_like(transitions)
    for t in range(1, steps):
        c = count[t]
        here = slice(offset[t], offset[t] + c)
        previous, ahead, z = alpha[offset[t - 1]:offset[t - 1] + c], scores[here] + beta[here], log_z[:c, None]
        top = previous.max(axis=1, keepdims=True)
        with np.errstate(over="ignore"):
            later = np.exp(ahead + top + into - z)
        ok = fast[here] & np.isfinite(later).all(axis=1)
        if ok.all():
            edge += forward_weights * (np.exp(previous - top).T @ later)
        else:
            edge += forward_weights * (np.exp(previous[ok] - top[ok]).T @ later[ok])
            slow = ~ok
            edge += np.exp(previous[slow][:, :, None] + transitions + ahead[slow][:, None, :]
                           - z[slow][:, :, None]).sum(axis=0)
    return log_z, node, edge


def _observed(tags: np.ndarray, lengths: np.ndarray, active: np.ndarray, n_tags: int):
    """Gold one-hot ``(B, n, K)`` (zero past each length) and transition, start and end counts."""
    batch = tags.shape[0]
    onehot = np.zeros(tags.shape + (n_tags,))
    onehot[active] = np.eye(n_tags)[tags[active]]
    steps = active[:, 1:]
    pairs = tags[:, :-1][steps] * n_tags + tags[:, 1:][steps]
    transitions = np.bincount(pairs, minlength=n_tags * n_tags).reshape(n_tags, n_tags).astype(float)
    start = np.bincount(tags[:, 0], minlength=n_tags).astype(float)
    end = np.bincount(tags[np.arange(batch), lengths - 1], minlength=n_tags).astype(float)
    return onehot, transitions, start, end


# ----------------------------------------------------------------------------- batched likelihood
@dataclass(frozen=True, eq=False)
class BatchGradient:
    r"""The negative log likelihood of a padded batch and its gradient with respect to every score.

    The signs are those of [`mlm_book.crf.CRFGradient`][mlm_book.crf.CRFGradient]: ``loss``
    is $-\sum_s \log P(y^{(s)} \mid x^{(s)})$ and each gradient is of ``loss``, i.e. expected
    counts minus observed counts. The log likelihood and its gradients are their negatives
    ([`log_likelihood`][mlm_book.crf_fit.BatchGradient.log_likelihood]).

    Parameters
    ----------
    loss : float
        Total negative log likelihood in nats, the sum over sentences (each clamped at zero,
        as in [`mlm_book.crf.negative_log_likelihood`][mlm_book.crf.negative_log_likelihood]).
    emissions : ndarray, shape (B, n, K)
        $\partial\,\text{loss} / \partial e^{(s)}_t(j)$: zero past each sentence's length.
    transitions : ndarray, shape (K, K)
        $\partial\,\text{loss} / \partial T_{ij}$.
    start : ndarray, shape (K,)
        $\partial\,\text{loss} / \partial a_j$.
    end : ndarray, shape (K,)
        $\partial\,\text{loss} / \partial c_j$.

    Raises
    ------
    TypeError
        If a field does not hold real numbers.
    ValueError
        If ``loss`` is negative, a value is NaN or infinite, or the shapes disagree.

    Examples
    --------
    >>> g = BatchGradient(loss=1.5, emissions=np.zeros((2, 3, 4)), transitions=np.zeros((4, 4)),
    ...                   start=np.zeros(4), end=np.zeros(4))
    >>> g.log_likelihood, g.emissions.shape
    (-1.5, (2, 3, 4))
    """

    loss: float
    emissions: np.ndarray
    transitions: np.ndarray
    start: np.ndarray
    end: np.ndarray

    def __post_init__(self):
        loss = check_real(self.loss, "loss", low=0.0)
        emissions = as_float_array(self.emissions, "emissions", ndim=3)
        n_tags = emissions.shape[2]
        transitions = as_float_array(self.transitions, "transitions", ndim=2)
        start = as_float_array(self.start, "start", ndim=1)
        end = as_float_array(self.end, "end", ndim=1)
        if transitions.shape != (n_tags, n_tags) or start.shape != (n_tags,) or end.shape != (n_tags,):
            raise ValueError(f"transitions, start and end must have shapes (K, K), (K,), (K,) with K = {n_tags} "
                             f"from emissions {emissions.shape}, got {transitions.shape}, {start.shape}, {end.shape}")
        for name, value in (("loss", loss), ("emissions", emissions), ("transitions", transitions),
                            ("start", start), ("end", end)):
            object.__setattr__(self, name, value)

    @property
    def log_likelihood(self) -> float:
        r"""$\sum_s \log P(y^{(s)} \mid x^{(s)})$, i.e. ``-loss``."""
        return -self.loss


def batch_log_likelihood(emissions, lengths, tags, transitions, start, end) -> BatchGradient:
    r"""The log likelihood of a padded batch of tagged sentences and its exact gradients, vectorised.

    The forward and backward recursions of [`mlm_book.crf.marginals`][mlm_book.crf.marginals]
    run for all sentences together, in log space (max-shifted log-sum-exp at every step), with
    a loop over positions only. The result equals the sum over sentences of
    [`mlm_book.crf.nll_gradient`][mlm_book.crf.nll_gradient] on each sentence cut to its
    length (to rounding; the tests ask for ``1e-10``).

    Parameters
    ----------
    emissions : array_like, shape (B, n, K)
        Per-position tag scores; rows past a sentence's length are ignored (any finite value).
    lengths : array_like of int, shape (B,)
        Each sentence's length, in ``[1, n]``.
    tags : array_like of int, shape (B, n)
        Gold tag ids in ``[0, K)`` within each length; entries past it are ignored.
    transitions : array_like, shape (K, K)
        $T_{ij}$, the score of tag $j$ right after tag $i$.
    start : array_like, shape (K,)
        First-tag scores.
    end : array_like, shape (K,)
        Last-tag scores.

    Returns
    -------
    BatchGradient
        ``loss`` $= -\log$ likelihood (a sum over sentences) and the gradients of ``loss``
        (expected minus observed counts); ``.log_likelihood`` is ``-loss``.

    Raises
    ------
    TypeError
        If an argument does not hold numbers of the right kind (integers for ``lengths`` and
        ``tags``).
    ValueError
        If a shape is wrong or disagrees with ``emissions``, a score is not finite, a length
        is outside ``[1, n]``, a tag within a length is outside ``[0, K)``, the batch has
        more than [`MAX_BATCH_CELLS`][mlm_book.crf_fit.MAX_BATCH_CELLS] cells, or the scores
        are so large that a sum could overflow.

    Examples
    --------
    Two sentences, of lengths 3 and 1; the padding of the second is ignored:

    >>> from mlm_book import crf
    >>> rng = np.random.default_rng(1)
    >>> emissions, transitions = rng.normal(size=(2, 3, 2)), rng.normal(size=(2, 2))
    >>> start, end = np.zeros(2), np.zeros(2)
    >>> g = batch_log_likelihood(emissions, [3, 1], [[0, 1, 1], [1, -1, -1]], transitions, start, end)
    >>> one = crf.nll_gradient([0, 1, 1], emissions[0], transitions, start, end)
    >>> two = crf.nll_gradient([1], emissions[1, :1], transitions, start, end)
    >>> bool(abs(g.loss - one.loss - two.loss) < 1e-12), g.log_likelihood < 0
    (True, True)
    >>> bool(np.allclose(g.transitions, one.transitions + two.transitions)), g.emissions[1, 1:].tolist()
    (True, [[0.0, 0.0], [0.0, 0.0]])
    """
    emissions = as_float_array(emissions, "emissions", ndim=3)
    batch, padded, n_tags = emissions.shape
    if emissions.size == 0:
        raise ValueError(f"emissions must have shape (B, n, K) with B, n, K >= 1, got {emissions.shape}")
    transitions = as_float_array(transitions, "transitions", ndim=2)
    start = as_float_array(start, "start", ndim=1)
    end = as_float_array(end, "end", ndim=1)
    if transitions.shape != (n_tags, n_tags):
        raise ValueError(f"transitions must have shape (K, K) = ({n_tags}, {n_tags}) for emissions of shape "
                         f"{emissions.shape}, got {transitions.shape}")
    for name, value in (("start", start), ("end", end)):
        if value.shape != (n_tags,):
            raise ValueError(f"{name} must have shape (K,) = ({n_tags},) for emissions of shape {emissions.shape}, "
                             f"got {value.shape}")
    _check_cells(batch, padded, n_tags, f"emissions of shape {emissions.shape}")
    lengths = _lengths(lengths, "lengths", batch, padded, "emissions")
    active = _active(lengths, padded)
    tags = _tags(tags, "tags", (batch, padded), active, n_tags, "emissions")
    inside = emissions[active]
    bound = (padded * (float(np.abs(inside).max()) + float(np.abs(transitions).max()) + math.log(n_tags))
             + float(np.abs(start).max()) + float(np.abs(end).max()))
    if not bound <= MAX_SCORE_SUM:
        raise ValueError(f"emissions, transitions, start and end are too large: a sequence's score could reach "
                         f"{bound:.3g}, over the limit {MAX_SCORE_SUM:g} that keeps float64 sums finite")
    layout = _Layout(lengths, padded)
    sorted_z, node, edge = _chain(emissions[layout.sentence, layout.position], layout, transitions, start, end)
    log_z = np.empty(batch)
    log_z[layout.order] = sorted_z
    onehot, observed_t, observed_start, observed_end = _observed(tags, lengths, active, n_tags)
    rows = np.arange(batch)
    scores = (np.where(active, np.take_along_axis(emissions, tags[:, :, None], axis=2)[:, :, 0], 0.0).sum(axis=1)
              + start[tags[:, 0]] + end[tags[rows, lengths - 1]]
              + np.where(active[:, 1:], transitions[tags[:, :-1], tags[:, 1:]], 0.0).sum(axis=1))
    loss = float(np.maximum(log_z - scores, 0.0).sum())
    gradient = -onehot
    gradient[layout.sentence, layout.position] += node
    return BatchGradient(loss=loss, emissions=gradient, transitions=edge - observed_t,
                         start=node[:batch].sum(axis=0) - observed_start,
                         end=node[layout.last].sum(axis=0) - observed_end)


# ----------------------------------------------------------------------------- the tagger
def _tagger_fields(W, b, transitions, start, end, what: str = "") -> tuple[np.ndarray, ...]:
    W = as_float_array(W, f"{what}W", ndim=2)
    n_features, n_tags = W.shape
    if n_features == 0 or n_tags == 0:
        raise ValueError(f"{what}W must have shape (d, K) with d >= 1 features and K >= 1 tags, got {W.shape}")
    b = as_float_array(b, f"{what}b", ndim=1)
    if b.shape != (n_tags,):
        raise ValueError(f"{what}b must have shape (K,) = ({n_tags},) for {what}W of shape {W.shape}, got {b.shape}")
    transitions = as_float_array(transitions, f"{what}transitions", ndim=2)
    if transitions.shape != (n_tags, n_tags):
        raise ValueError(f"{what}transitions must have shape (K, K) = ({n_tags}, {n_tags}) for {what}W of shape "
                         f"{W.shape}, got {transitions.shape}")
    start = as_float_array(start, f"{what}start", ndim=1)
    end = as_float_array(end, f"{what}end", ndim=1)
    for name, value in (("start", start), ("end", end)):
        if value.shape != (n_tags,):
            raise ValueError(f"{what}{name} must have shape (K,) = ({n_tags},) for {what}W of shape {W.shape}, "
                             f"got {value.shape}")
    return W, b, transitions, start, end


@dataclass(frozen=True, eq=False)
class CRFTagger:
    r"""A linear-chain CRF whose emissions are linear in frozen token vectors.

    Emissions are ``features @ W + b`` ([`emissions`][mlm_book.crf_fit.CRFTagger.emissions]);
    ``transitions``, ``start`` and ``end`` are the scores of [`mlm_book.crf`][mlm_book.crf].
    A tagger from [`fit_crf`][mlm_book.crf_fit.fit_crf] also records how the fit ended.

    Parameters
    ----------
    W : ndarray, shape (d, K)
        Emission weights.
    b : ndarray, shape (K,)
        Emission biases.
    transitions : ndarray, shape (K, K)
        Tag-pair scores ([`FORBIDDEN`][mlm_book.crf_fit.FORBIDDEN] where a mask forbade the pair).
    start : ndarray, shape (K,)
        First-tag scores.
    end : ndarray, shape (K,)
        Last-tag scores.
    iterations : int, default 0
        L-BFGS iterations of the fit (0 for a tagger not fitted).
    converged : bool or None, default None
        Whether the fit reached its gradient tolerance; ``None`` for a tagger not fitted.
    objective : float or None, default None
        The penalised objective at these parameters, as the fit measured it.
    gradient_norm : float or None, default None
        The largest absolute entry of the objective's gradient there.

    Raises
    ------
    TypeError
        If a field has the wrong type.
    ValueError
        If a score is NaN or infinite, the shapes disagree, or a count or norm is negative.

    Examples
    --------
    >>> tagger = CRFTagger(W=np.eye(2), b=np.zeros(2), transitions=np.zeros((2, 2)),
    ...                    start=np.zeros(2), end=np.zeros(2))
    >>> tagger.n_features, tagger.n_tags, tagger.emissions([[[1.0, 3.0]]]).tolist()
    (2, 2, [[[1.0, 3.0]]])
    """

    W: np.ndarray
    b: np.ndarray
    transitions: np.ndarray
    start: np.ndarray
    end: np.ndarray
    iterations: int = 0
    converged: bool | None = None
    objective: float | None = None
    gradient_norm: float | None = None

    def __post_init__(self):
        for name, value in zip(("W", "b", "transitions", "start", "end"),
                               _tagger_fields(self.W, self.b, self.transitions, self.start, self.end)):
            object.__setattr__(self, name, value)
        object.__setattr__(self, "iterations", check_positive_int(self.iterations, "iterations", minimum=0))
        if self.converged is not None:
            object.__setattr__(self, "converged", check_bool(self.converged, "converged"))
        if self.objective is not None:
            object.__setattr__(self, "objective", check_real(self.objective, "objective"))
        if self.gradient_norm is not None:
            object.__setattr__(self, "gradient_norm", check_real(self.gradient_norm, "gradient_norm", low=0.0))

    @property
    def n_features(self) -> int:
        """``d``, the length of a token vector."""
        return self.W.shape[0]

    @property
    def n_tags(self) -> int:
        """``K``, the number of tags."""
        return self.W.shape[1]

    def emissions(self, features) -> np.ndarray:
        """``features @ W + b``: shape ``(..., K)`` for features of shape ``(..., d)``.

        Raises ``ValueError`` naming ``features`` if its last axis is not ``d`` or the product
        overflows.
        """
        array = as_float_array(features, "features")
        if array.ndim == 0 or array.shape[-1] != self.n_features:
            raise ValueError(f"features must have d = {self.n_features} numbers per token (the rows of the "
                             f"tagger's W) on their last axis, got shape {array.shape}")
        with np.errstate(over="ignore", invalid="ignore"):
            scores = array @ self.W + self.b
        if not np.all(np.isfinite(scores)):
            raise ValueError("features @ W + b overflowed: features and the tagger's W must be of a size whose "
                             "products stay finite in float64")
        return scores


@dataclass(frozen=True, eq=False)
class TaggerGradient:
    r"""The penalised objective $F$ of a tagger on a batch and its gradient for every parameter.

    Parameters
    ----------
    value : float
        $F$: the per-token mean negative log likelihood plus the ridge penalty.
    W, b, transitions, start, end : ndarray
        $\partial F$ with respect to the field of the same name of
        [`CRFTagger`][mlm_book.crf_fit.CRFTagger], of the same shape.

    Raises
    ------
    TypeError
        If a field does not hold real numbers.
    ValueError
        If a value is NaN or infinite or the shapes disagree.

    Examples
    --------
    >>> g = TaggerGradient(value=0.7, W=np.zeros((3, 2)), b=np.zeros(2), transitions=np.zeros((2, 2)),
    ...                    start=np.zeros(2), end=np.zeros(2))
    >>> g.W.shape
    (3, 2)
    """

    value: float
    W: np.ndarray
    b: np.ndarray
    transitions: np.ndarray
    start: np.ndarray
    end: np.ndarray

    def __post_init__(self):
        object.__setattr__(self, "value", check_real(self.value, "value"))
        for name, value in zip(("W", "b", "transitions", "start", "end"),
                               _tagger_fields(self.W, self.b, self.transitions, self.start, self.end)):
            object.__setattr__(self, name, value)


# ----------------------------------------------------------------------------- the objective
class _Problem:
    """A training batch with everything that does not depend on the parameters computed once."""

    def __init__(self, features: np.ndarray, lengths: np.ndarray, tags: np.ndarray, n_tags: int,
                 strength: float, mask: np.ndarray | None):
        padded, n_features = features.shape[1:]
        self.n_tags, self.n_features = n_tags, n_features
        self.layout = _Layout(lengths, padded)
        where = (self.layout.sentence, self.layout.position)
        self.tokens = features[where]                                   # (N, d), real tokens only
        self.tokens_t = np.ascontiguousarray(self.tokens.T)
        onehot, self.observed_t, self.observed_start, self.observed_end = _observed(tags, lengths,
                                                                                   _active(lengths, padded), n_tags)
        onehot = onehot[where]
        self.observed_w = self.tokens_t @ onehot
        self.observed_b = onehot.sum(axis=0)
        self.scale = 1.0 / float(lengths.sum())
        self.strength = strength
        self.free_t = np.ones((n_tags, n_tags), dtype=bool) if mask is None else mask[:n_tags, :n_tags].copy()
        self.free_start = np.ones(n_tags, dtype=bool) if mask is None else mask[n_tags, :n_tags].copy()
        self.free_end = np.ones(n_tags, dtype=bool) if mask is None else mask[:n_tags, n_tags].copy()

    def evaluate(self, W, b, transitions, start, end) -> tuple[float, tuple[np.ndarray, ...]]:
        """F and its gradients (W, b, transitions, start, end); penalty on W and the free transitions."""
        log_z, node, edge = _chain(self.tokens @ W + b, self.layout, transitions, start, end)
        observed = (float(np.sum(W * self.observed_w)) + float(b @ self.observed_b)
                    + float(np.sum(transitions * self.observed_t)) + float(start @ self.observed_start)
                    + float(end @ self.observed_end))
        free_t = np.where(self.free_t, transitions, 0.0)
        value = ((float(log_z.sum()) - observed) * self.scale
                 + 0.5 * self.strength * (float(np.sum(W * W)) + float(np.sum(free_t * free_t))))
        grad_w = (self.tokens_t @ node - self.observed_w) * self.scale + self.strength * W
        grad_b = (node.sum(axis=0) - self.observed_b) * self.scale
        grad_t = (edge - self.observed_t) * self.scale + self.strength * free_t
        grad_start = (node[:self.layout.count[0]].sum(axis=0) - self.observed_start) * self.scale
        grad_end = (node[self.layout.last].sum(axis=0) - self.observed_end) * self.scale
        return value, (grad_w, grad_b, grad_t, grad_start, grad_end)

    # -- the parameter vector: W, b, then the free transitions, starts and ends (row-major)
    def pack(self, W, b, transitions, start, end) -> np.ndarray:
        return np.concatenate([W.ravel(), b, transitions[self.free_t], start[self.free_start], end[self.free_end]])

    def unpack(self, theta: np.ndarray) -> tuple[np.ndarray, ...]:
        n_tags = self.n_tags
        sizes = [self.n_features * n_tags, n_tags, int(self.free_t.sum()), int(self.free_start.sum()),
                 int(self.free_end.sum())]
        parts = np.split(theta, np.cumsum(sizes)[:-1])
        transitions = np.full((n_tags, n_tags), FORBIDDEN)
        transitions[self.free_t] = parts[2]
        start = np.full(n_tags, FORBIDDEN)
        start[self.free_start] = parts[3]
        end = np.full(n_tags, FORBIDDEN)
        end[self.free_end] = parts[4]
        return parts[0].reshape(self.n_features, n_tags), parts[1], transitions, start, end

    def function(self, theta: np.ndarray) -> tuple[float, np.ndarray]:
        with np.errstate(over="ignore", invalid="ignore"):
            value, gradients = self.evaluate(*self.unpack(theta))
            return value, self.pack(*gradients)


def _training_batch(features, lengths, tags, n_tags, name_k: str = "n_tags"):
    """Checked features (B, n, d), lengths (B,) and tags (B, n) (zero past each length)."""
    features = as_float_array(features, "features", ndim=3)
    batch, padded, n_features = features.shape
    if features.size == 0:
        raise ValueError(f"features must have shape (B, n, d) with B, n, d >= 1, got {features.shape}")
    _check_cells(batch, padded, n_tags, f"features of shape {features.shape} with {name_k} = {n_tags}")
    if n_features * n_tags + n_tags * n_tags + 3 * n_tags > MAX_PARAMETERS:
        raise ValueError(f"features with d = {n_features} and {name_k} = {n_tags} ask for more than "
                         f"{MAX_PARAMETERS} parameters")
    lengths = _lengths(lengths, "lengths", batch, padded, "features")
    active = _active(lengths, padded)
    tags = _tags(tags, "tags", (batch, padded), active, n_tags, "features", name_k)
    return features, lengths, tags


def penalised_objective(tagger, features, lengths, tags, *, strength: float = CRF_STRENGTH,
                        allowed=None) -> TaggerGradient:
    r"""The objective $F$ that [`fit_crf`][mlm_book.crf_fit.fit_crf] minimises, and its gradient, at ``tagger``.

    $F$ is the per-token mean negative log likelihood of the gold ``tags`` plus
    $\tfrac{\lambda}{2}(\lVert W \rVert_F^2 + \lVert T \rVert_F^2)$; with ``allowed`` the
    forbidden transitions are left out of the penalty (they are constants, not parameters),
    exactly as in the fit, so ``tagger.objective`` of a fitted tagger is this value.

    Parameters
    ----------
    tagger : CRFTagger
        The parameters.
    features : array_like, shape (B, n, d)
        Frozen token vectors, padded; rows past a sentence's length are ignored.
    lengths : array_like of int, shape (B,)
        Sentence lengths in ``[1, n]``.
    tags : array_like of int, shape (B, n)
        Gold tag ids in ``[0, K)`` within each length; entries past it are ignored.
    strength : float, default [`CRF_STRENGTH`][mlm_book.crf_fit.CRF_STRENGTH]
        $\lambda > 0$.
    allowed : ndarray of bool, shape (K + 1, K + 1), optional
        Which transitions are parameters (penalised); ``None``: all of them.

    Returns
    -------
    TaggerGradient

    Raises
    ------
    TypeError
        If ``tagger`` is not a [`CRFTagger`][mlm_book.crf_fit.CRFTagger] or an argument holds
        numbers of the wrong kind.
    ValueError
        As [`fit_crf`][mlm_book.crf_fit.fit_crf], or if ``features`` does not have the
        tagger's ``d`` or the scores overflow.

    Examples
    --------
    At zero parameters every one of the $K^n$ sequences is equally likely: $F = \log K$.

    >>> tagger = CRFTagger(W=np.zeros((2, 3)), b=np.zeros(3), transitions=np.zeros((3, 3)),
    ...                    start=np.zeros(3), end=np.zeros(3))
    >>> features = np.ones((2, 4, 2))
    >>> g = penalised_objective(tagger, features, [4, 2], [[0, 1, 2, 0], [1, 1, 0, 0]])
    >>> bool(abs(g.value - np.log(3)) < 1e-12), g.transitions.shape
    (True, (3, 3))
    """
    check_instance(tagger, "tagger", CRFTagger)
    n_tags = tagger.n_tags
    features, lengths, tags = _training_batch(features, lengths, tags, n_tags, "the tagger's K")
    if features.shape[2] != tagger.n_features:
        raise ValueError(f"features must have d = {tagger.n_features} numbers per token (the rows of the tagger's "
                         f"W), got shape {features.shape}")
    strength = check_positive_float(strength, "strength")
    mask = check_allowed(allowed, n_tags, " of the tagger")
    problem = _Problem(features, lengths, tags, n_tags, strength, mask)
    with np.errstate(over="ignore", invalid="ignore"):
        value, gradients = problem.evaluate(tagger.W, tagger.b, tagger.transitions, tagger.start, tagger.end)
    if not (math.isfinite(value) and all(np.all(np.isfinite(g)) for g in gradients)):
        raise ValueError("the objective overflowed: features, tagger and strength must be of a size whose sums "
                         "stay finite in float64")
    return TaggerGradient(value, *gradients)


# ----------------------------------------------------------------------------- L-BFGS
@dataclass(frozen=True, eq=False)
class LBFGSResult:
    r"""Where [`minimize_lbfgs`][mlm_book.crf_fit.minimize_lbfgs] stopped.

    Parameters
    ----------
    x : ndarray, shape (p,)
        The last accepted point.
    value : float
        The objective there.
    gradient_norm : float
        The largest absolute gradient entry there.
    iterations : int
        Accepted steps.
    evaluations : int
        Calls of the objective, the first included.
    converged : bool
        ``gradient_norm < tol``; false when ``max_iter`` ran out or no step decreased the
        objective any more.

    Raises
    ------
    TypeError
        If a field has the wrong type.
    ValueError
        If a value is not finite or a count or norm is negative.

    Examples
    --------
    >>> LBFGSResult(x=np.zeros(2), value=0.0, gradient_norm=0.0, iterations=0, evaluations=1,
    ...             converged=True).converged
    True
    """

    x: np.ndarray
    value: float
    gradient_norm: float
    iterations: int
    evaluations: int
    converged: bool

    def __post_init__(self):
        object.__setattr__(self, "x", as_float_array(self.x, "x", ndim=1))
        object.__setattr__(self, "value", check_real(self.value, "value"))
        object.__setattr__(self, "gradient_norm", check_real(self.gradient_norm, "gradient_norm", low=0.0))
        object.__setattr__(self, "iterations", check_positive_int(self.iterations, "iterations", minimum=0))
        object.__setattr__(self, "evaluations", check_positive_int(self.evaluations, "evaluations"))
        object.__setattr__(self, "converged", check_bool(self.converged, "converged"))


def _two_loop(gradient: np.ndarray, pairs: deque) -> np.ndarray:
    r"""$-H g$ for the L-BFGS inverse-Hessian estimate $H$ of the stored pairs $(s, y, 1/y^\top s)$."""
    q = gradient.copy()
    alphas = []
    for s, y, rho in reversed(pairs):
        a = rho * float(s @ q)
        alphas.append(a)
        q -= a * y
    s, y, _ = pairs[-1]
    q *= float(s @ y) / float(y @ y)          # H0 = gamma I, the usual scaling
    for (s, y, rho), a in zip(pairs, reversed(alphas)):
        q += (a - rho * float(y @ q)) * s
    return -q


def _evaluate(fun, x: np.ndarray) -> tuple[float, np.ndarray]:
    result = fun(x)
    try:
        value, gradient = result
    except (TypeError, ValueError):
        raise TypeError(f"fun must return a pair (value, gradient), got {type(result).__name__}") from None
    if isinstance(value, np.ndarray) and value.ndim == 0:
        value = value[()]
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"fun must return a real value first, got {type(value).__name__}")
    gradient = as_float_array(gradient, "the gradient that fun returns")
    if gradient.shape != x.shape:
        raise ValueError(f"fun must return a gradient of the shape of x0 {x.shape}, got {gradient.shape}")
    return float(value), gradient


def minimize_lbfgs(fun, x0, *, memory: int = LBFGS_MEMORY, max_iter: int = 1000,
                   tol: float = GRADIENT_TOLERANCE) -> LBFGSResult:
    r"""Minimise a smooth function by limited-memory BFGS with a backtracking (Armijo) line search.

    Each iteration: the direction $p = -H g$ from the two-loop recursion over the last
    ``memory`` pairs $s = x_{k+1} - x_k$, $y = g_{k+1} - g_k$ (a pair is stored only when
    $y^\top s > 10^{-10} \lVert s \rVert \lVert y \rVert$, which keeps $H$ positive definite),
    with $H_0 = (s^\top y / y^\top y) I$ from the newest pair; with no pair yet, $p = -g$
    scaled to length at most one. The step $t$ starts at one and is halved (at most
    [`MAX_BACKTRACKS`][mlm_book.crf_fit.MAX_BACKTRACKS] times; a NaN or infinite value or
    gradient counts as too far) until either

    * the Armijo condition holds, $f(x + tp) \le f(x) + c_1 t\, g^\top p$ with
      $c_1 =$ [`ARMIJO`][mlm_book.crf_fit.ARMIJO], and $f$ strictly decreases; or
    * near the minimum, where a decrease of $f$ is lost in its rounding, the *approximate
      Wolfe* conditions of Hager and Zhang (2005) hold: $f(x + tp) \le f(x) + 10^{-12}|f(x)|$
      and $(2c_1 - 1)\, g^\top p \ge g(x + tp)^\top p \ge 0.9\, g^\top p$. For a
      quadratic these say what Armijo says, but through the gradient, which keeps its
      precision after $f$ has lost it (a gradient of $10^{-10}$ changes $f$ by about
      $10^{-20}$).

    If no step is found the pairs are dropped and the steepest descent direction is tried; if
    that fails too, the run stops. No randomness: the same call gives the same result (for
    the same BLAS and thread count).

    Parameters
    ----------
    fun : callable
        ``fun(x)`` returns ``(value, gradient)`` for a float64 vector ``x``: a real number
        and an array of ``x``'s shape. It must be finite at ``x0``.
    x0 : array_like, shape (p,)
        The starting point (finite, at least one entry).
    memory : int, default [`LBFGS_MEMORY`][mlm_book.crf_fit.LBFGS_MEMORY]
        Pairs kept, between 1 and 1000.
    max_iter : int, default 1000
        Iterations (accepted steps) allowed.
    tol : float, default [`GRADIENT_TOLERANCE`][mlm_book.crf_fit.GRADIENT_TOLERANCE]
        The run has converged when the largest absolute gradient entry is below ``tol``.

    Returns
    -------
    LBFGSResult

    Raises
    ------
    TypeError
        If ``fun`` is not callable or returns something other than a number and an array, or
        an argument has the wrong type.
    ValueError
        If ``x0`` is empty or not finite, ``fun`` is not finite at ``x0`` or returns a
        gradient of another shape, or ``memory``, ``max_iter`` or ``tol`` is out of range.

    Examples
    --------
    A quadratic $\tfrac12 \sum_i a_i (x_i - c_i)^2$ has its minimum at $c$:

    >>> def quadratic(x):
    ...     a, c = np.array([1.0, 10.0, 100.0]), np.array([1.0, -2.0, 3.0])
    ...     return 0.5 * float(a @ (x - c) ** 2), a * (x - c)
    >>> result = minimize_lbfgs(quadratic, np.zeros(3), tol=1e-10)
    >>> result.converged, result.x.round(8).tolist()
    (True, [1.0, -2.0, 3.0])
    """
    if not callable(fun):
        raise TypeError(f"fun must be callable, returning (value, gradient), got {type(fun).__name__}")
    x = as_float_array(x0, "x0", ndim=1).copy()
    if x.size == 0:
        raise ValueError("x0 must hold at least one number, got shape (0,)")
    memory = check_positive_int(memory, "memory")
    if memory > 1000:
        raise ValueError(f"memory must be at most 1000 pairs, got {memory}")
    max_iter = check_positive_int(max_iter, "max_iter")
    tol = check_positive_float(tol, "tol")
    try:
        value, gradient = _evaluate(fun, x)
    except (TypeError, ValueError) as error:
        raise type(error)(f"fun failed at x0 (shape {x.shape}): {error}") from error
    if not (math.isfinite(value) and np.all(np.isfinite(gradient))):
        raise ValueError(f"fun must be finite at x0, got value {value} and a gradient that is "
                         f"{'' if np.all(np.isfinite(gradient)) else 'not '}finite")
    evaluations, iterations = 1, 0
    pairs: deque = deque(maxlen=memory)
    norm = float(np.max(np.abs(gradient)))
    while not norm < tol and iterations < max_iter:
        step = None
        for attempt in ("lbfgs", "steepest"):
            if attempt == "steepest" or not pairs:
                pairs.clear()
                direction = -gradient / max(1.0, float(np.linalg.norm(gradient)))
            else:
                direction = _two_loop(gradient, pairs)
            slope = float(gradient @ direction)
            if not slope < 0:           # not a descent direction (rounding): fall back at once
                continue
            t = 1.0
            for _ in range(MAX_BACKTRACKS + 1):
                trial = x + t * direction
                if np.array_equal(trial, x):
                    break
                trial_value, trial_gradient = _evaluate(fun, trial)
                evaluations += 1
                if not (math.isfinite(trial_value) and np.all(np.isfinite(trial_gradient))):
                    t *= 0.5
                    continue
                armijo = trial_value <= value + ARMIJO * t * slope and trial_value < value
                trial_slope = float(trial_gradient @ direction)
                wolfe = (trial_value <= value + WOLFE_SLACK * abs(value)
                         and (2 * ARMIJO - 1) * slope >= trial_slope >= CURVATURE * slope)
                if armijo or wolfe:
                    step = (trial, trial_value, trial_gradient)
                    break
                t *= 0.5
            if step is not None:
                break
            if attempt == "lbfgs" and not pairs:
                break                   # the steepest direction was already tried
        if step is None:
            break                       # no step decreases the objective: stalled
        trial, trial_value, trial_gradient = step
        s, y = trial - x, trial_gradient - gradient
        sy = float(s @ y)
        if sy > 1e-10 * float(np.linalg.norm(s)) * float(np.linalg.norm(y)):
            pairs.append((s, y, 1.0 / sy))
        x, value, gradient = trial, trial_value, trial_gradient
        norm = float(np.max(np.abs(gradient)))
        iterations += 1
    return LBFGSResult(x=x, value=value, gradient_norm=norm, iterations=iterations, evaluations=evaluations,
                       converged=bool(norm < tol))


# ----------------------------------------------------------------------------- fitting
def _initial(init, n_features: int, n_tags: int, shape: tuple[int, ...]) -> tuple[np.ndarray, ...]:
    zeros = np.zeros(n_tags)
    if init is None:
        return np.zeros((n_features, n_tags)), zeros, np.zeros((n_tags, n_tags)), zeros, zeros
    if isinstance(init, CRFTagger):
        fields = (init.W, init.b, init.transitions, init.start, init.end)
    elif isinstance(init, (tuple, list)) and len(init) == 2:
        W = as_float_array(init[0], "init W", ndim=2)
        b = as_float_array(init[1], "init b", ndim=1)
        fields = (W, b, np.zeros((n_tags, n_tags)), zeros, zeros)
    else:
        raise TypeError(f"init must be None, a CRFTagger or a pair (W, b), got {type(init).__name__}")
    W, b = fields[0], fields[1]
    if W.shape != (n_features, n_tags) or b.shape != (n_tags,):
        raise ValueError(f"init must hold W of shape (d, n_tags) = ({n_features}, {n_tags}) and b of shape "
                         f"({n_tags},) for features of shape {shape}, got {W.shape} and {b.shape}")
    return fields


def fit_crf(features, lengths, tags, n_tags: int, *, strength: float = CRF_STRENGTH, allowed=None,
            max_iter: int = 500, tol: float = GRADIENT_TOLERANCE, init=None) -> CRFTagger:
    r"""Fit a CRF tagger on frozen token vectors by penalised maximum likelihood with L-BFGS.

    Minimises $F$ (the per-token mean negative log likelihood plus
    $\tfrac{\lambda}{2}(\lVert W\rVert_F^2 + \lVert T\rVert_F^2)$, see the module text and
    [`penalised_objective`][mlm_book.crf_fit.penalised_objective]) over $W, b, T, a, c$ with
    [`minimize_lbfgs`][mlm_book.crf_fit.minimize_lbfgs]. $F$ is convex (a log-sum-exp of
    linear functions plus a ridge), strictly so in $W$ and $T$. Without ``init`` every
    parameter starts at zero, where each tag sequence is equally likely.

    Parameters
    ----------
    features : array_like, shape (B, n, d)
        Frozen token vectors, padded to a common length ``n``; rows past a sentence's length
        are ignored (any finite value).
    lengths : array_like of int, shape (B,)
        Sentence lengths, in ``[1, n]``.
    tags : array_like of int, shape (B, n)
        Gold tag ids in ``[0, n_tags)`` within each length; entries past it are ignored.
    n_tags : int
        ``K >= 2``, the number of tags (some may never occur in ``tags``).
    strength : float, default [`CRF_STRENGTH`][mlm_book.crf_fit.CRF_STRENGTH]
        Ridge strength $\lambda > 0$ on $W$ and the (free) transitions; biases are not penalised.
    allowed : ndarray of bool, shape (K + 1, K + 1), optional
        Mask of [`mlm_book.tagging.allowed_transitions`][mlm_book.tagging.allowed_transitions]
        (index ``K`` is the boundary). Forbidden transitions, starts and ends are left out of the
        parameters and fixed at [`FORBIDDEN`][mlm_book.crf_fit.FORBIDDEN]. Every gold sequence
        must be allowed.
    max_iter : int, default 500
        L-BFGS iterations allowed.
    tol : float, default [`GRADIENT_TOLERANCE`][mlm_book.crf_fit.GRADIENT_TOLERANCE]
        Converged when the largest absolute entry of $\nabla F$ is below ``tol``.
    init : CRFTagger or (W, b), optional
        Starting parameters: a tagger (all its scores; forbidden ones are reset), or emission
        weights ``W`` ``(d, K)`` and biases ``b`` ``(K,)``, e.g. a softmax probe's, with
        transitions, starts and ends at zero.

    Returns
    -------
    CRFTagger
        With ``iterations``, ``converged``, ``objective`` ($F$ there) and ``gradient_norm``.
        A fit that stops before ``tol`` is returned with ``converged=False``, not raised.

    Notes
    -----
    The optimisation runs with one OpenBLAS thread
    ([`mlm_book.nn.runtime.blas_threads`][mlm_book.nn.runtime.blas_threads]), as the book's
    training loop does: its matrix products are small, and on a machine whose cores are busy a
    second thread made a fit of chapter 9's size about twice as slow.

    Raises
    ------
    TypeError
        If an argument has the wrong type (integers for ``lengths``, ``tags``, ``n_tags``,
        ``max_iter``; a boolean array for ``allowed``).
    ValueError
        If ``features`` is empty or not finite; ``lengths`` or ``tags`` do not match it; a
        length is outside ``[1, n]``; a tag within a length is outside ``[0, n_tags)``;
        ``n_tags < 2``; ``allowed`` has the wrong shape or forbids a gold sequence; ``init``
        has the wrong shapes; ``strength`` or ``tol`` is not positive; or the batch is too
        large ([`MAX_BATCH_CELLS`][mlm_book.crf_fit.MAX_BATCH_CELLS]).

    Examples
    --------
    Tag 1 always follows tag 0 and the vectors say little; the transitions learn the rule.

    >>> rng = np.random.default_rng(0)
    >>> tags = np.tile([0, 1, 0, 1], (30, 1))
    >>> features = rng.normal(size=(30, 4, 2)) + 0.3 * tags[..., None]
    >>> tagger = fit_crf(features, np.full(30, 4), tags, 2)
    >>> tagger.converged, bool(tagger.transitions[0, 1] > tagger.transitions[0, 0])
    (True, True)
    """
    n_tags = check_positive_int(n_tags, "n_tags", minimum=2)
    features, lengths, tags = _training_batch(features, lengths, tags, n_tags)
    batch, padded, n_features = features.shape
    strength = check_positive_float(strength, "strength")
    max_iter = check_positive_int(max_iter, "max_iter")
    tol = check_positive_float(tol, "tol")
    mask = check_allowed(allowed, n_tags, " of n_tags")
    active = _active(lengths, padded)
    if mask is not None:
        steps = mask[tags[:, :-1], tags[:, 1:]] | ~active[:, 1:]
        firsts = mask[n_tags, tags[:, 0]]
        lasts = mask[tags[np.arange(batch), lengths - 1], n_tags]
        bad = ~(steps.all(axis=1) & firsts & lasts)
        if bad.any():
            s = int(np.flatnonzero(bad)[0])
            raise ValueError(f"tags must be sequences that allowed permits, but sentence {s} "
                             f"({tags[s, :lengths[s]].tolist()[:20]}) takes a forbidden step")
    W, b, transitions, start, end = _initial(init, n_features, n_tags, features.shape)
    problem = _Problem(features, lengths, tags, n_tags, strength, mask)
    theta = problem.pack(W, b, transitions, start, end)
    value, gradient = problem.function(theta)
    if not (math.isfinite(value) and np.all(np.isfinite(gradient))):
        raise ValueError("the objective is not finite at the start: features and init must be of a size whose sums "
                         "stay finite in float64")
    with runtime.blas_threads(1):
        result = minimize_lbfgs(problem.function, theta, max_iter=max_iter, tol=tol)
    W, b, transitions, start, end = problem.unpack(result.x)
    return CRFTagger(W=W, b=b, transitions=transitions, start=start, end=end, iterations=result.iterations,
                     converged=result.converged, objective=result.value, gradient_norm=result.gradient_norm)


def decode(tagger, features, lengths, allowed=None) -> list[np.ndarray]:
    r"""The best tag sequence of each sentence under ``tagger``, by [`mlm_book.crf.viterbi`][mlm_book.crf.viterbi].

    Emissions are ``features @ W + b``; each sentence, cut to its length, goes through
    [`mlm_book.crf.viterbi`][mlm_book.crf.viterbi] with the tagger's transitions, start and
    end scores, so the paths are exactly that function's (ties to the lowest tag id).

    Parameters
    ----------
    tagger : CRFTagger
        The model.
    features : array_like, shape (B, n, d)
        Token vectors, padded; rows past a sentence's length are ignored.
    lengths : array_like of int, shape (B,)
        Sentence lengths, in ``[1, n]``.
    allowed : ndarray of bool, shape (K + 1, K + 1), optional
        A transition mask as in [`mlm_book.crf.viterbi`][mlm_book.crf.viterbi]: every path
        returned is then allowed. ``None`` allows everything (a tagger fitted with a mask
        still scores forbidden steps [`FORBIDDEN`][mlm_book.crf_fit.FORBIDDEN]).

    Returns
    -------
    list of ndarray of int
        One path per sentence, of that sentence's length.

    Raises
    ------
    TypeError
        If ``tagger`` is not a [`CRFTagger`][mlm_book.crf_fit.CRFTagger] or an argument holds
        numbers of the wrong kind.
    ValueError
        If ``features`` is empty, not finite or does not have the tagger's ``d``, a length is
        outside ``[1, n]``, ``allowed`` has the wrong shape or permits no sequence of some
        length, or the scores overflow.

    Examples
    --------
    >>> from mlm_book.tagging import allowed_transitions
    >>> tagger = CRFTagger(W=np.eye(3), b=np.zeros(3), transitions=np.zeros((3, 3)),
    ...                    start=np.zeros(3), end=np.zeros(3))
    >>> features = np.array([[[1.0, 0, 0], [0, 0, 2.0]]])   # prefers O then I-X, which BIO forbids
    >>> decode(tagger, features, [2])[0], decode(tagger, features, [2], allowed_transitions(["O", "B-X", "I-X"]))[0]
    (array([0, 2]), array([1, 2]))
    """
    check_instance(tagger, "tagger", CRFTagger)
    features = as_float_array(features, "features", ndim=3)
    batch, padded = features.shape[:2]
    if features.size == 0:
        raise ValueError(f"features must have shape (B, n, d) with B, n, d >= 1, got {features.shape}")
    _check_cells(batch, padded, tagger.n_tags, f"features of shape {features.shape} with the tagger's "
                                               f"K = {tagger.n_tags}")
    lengths = _lengths(lengths, "lengths", batch, padded, "features")
    mask = check_allowed(allowed, tagger.n_tags, " of the tagger")
    paths = viterbi_batch(tagger.emissions(features), lengths, tagger.transitions, tagger.start, tagger.end, mask)
    return [paths[s, :lengths[s]] for s in range(batch)]


def viterbi_batch(emissions, lengths, transitions, start, end, allowed=None) -> np.ndarray:
    r"""[`mlm_book.crf.viterbi`][mlm_book.crf.viterbi] for a padded batch of sentences at once.

    The same max-product recursion (one implementation serves both), vectorised over
    sentences. Every path equals ``viterbi(emissions[s, :lengths[s]], ...)[0]``, ties included
    (to the lowest tag id).

    Parameters
    ----------
    emissions : array_like, shape (B, n, K)
        Per-position tag scores, padded (rows past a sentence's length are read, not used;
        they must be finite).
    lengths : array_like of int, shape (B,)
        Sentence lengths, in ``[1, n]``.
    transitions, start, end, allowed
        As for [`mlm_book.crf.viterbi`][mlm_book.crf.viterbi].

    Returns
    -------
    ndarray of int, shape (B, n)
        Each sentence's best path, ``-1`` past its length.

    Raises
    ------
    TypeError
        If a score array does not hold real numbers, ``lengths`` not integers, or ``allowed``
        is not a boolean array.
    ValueError
        If a shape is wrong, a score is not finite or too large, a length is outside ``[1, n]``,
        the batch asks for more than ``MAX_BATCH_CELLS`` cells, or ``allowed`` permits no
        sequence of some sentence's length.

    Examples
    --------
    >>> from mlm_book.tagging import allowed_transitions
    >>> emissions = np.log([[[0.5, 0.4, 0.1], [0.1, 0.3, 0.6]], [[0.2, 0.2, 0.6], [1.0, 1.0, 1.0]]])
    >>> zeros = np.zeros(3)
    >>> mask = allowed_transitions(["O", "B-ORG", "I-ORG"], "BIO")
    >>> viterbi_batch(emissions, [2, 1], np.zeros((3, 3)), zeros, zeros, allowed=mask)
    array([[ 1,  2],
           [ 0, -1]])
    """
    emissions = as_float_array(emissions, "emissions", ndim=3)
    batch, padded, n_tags = emissions.shape
    if emissions.size == 0:
        raise ValueError(f"emissions must have shape (B, n, K) with B, n, K >= 1, got {emissions.shape}")
    _check_cells(batch, padded, n_tags, f"emissions of shape {emissions.shape}")
    lengths = _lengths(lengths, "lengths", batch, padded, "emissions")
    # the shapes, finiteness and size of the scores, checked on the largest score at each position
    _, transitions, start, end = check_scores(np.abs(emissions).max(axis=0), transitions, start, end)
    return best_paths(emissions, lengths, transitions, start, end, check_allowed(allowed, n_tags))
