r"""A linear-chain conditional random field over tags, with hand-written gradients and Viterbi.

A token classifier gives each position $t$ of a sentence of $n$ tokens a score
$e_t(y)$ for every tag $y$ (the *emissions*, shape ``(n, K)``). A linear-chain CRF adds
scores for tag pairs and for the first and last tag, and scores a whole tag sequence:

$$s(y) = a_{y_1} + \sum_{t=1}^{n} e_t(y_t) + \sum_{t=2}^{n} T_{y_{t-1} y_t} + b_{y_n},
  \qquad P(y \mid x) = \frac{\exp s(y)}{Z}, \quad Z = \sum_{y'} \exp s(y'),$$

with $T$ the ``transitions`` ``(K, K)``, $a$ the ``start`` and $b$ the ``end`` scores
``(K,)``. The sum over all $K^n$ sequences is a forward recursion in log space,

$$\alpha_1(j) = a_j + e_1(j), \qquad
  \alpha_t(j) = e_t(j) + \log \sum_i \exp\bigl(\alpha_{t-1}(i) + T_{ij}\bigr), \qquad
  \log Z = \log \sum_j \exp\bigl(\alpha_n(j) + b_j\bigr),$$

which is chapter 1's HMM forward algorithm
([`mlm_book.hmm.forward_backward`][mlm_book.hmm.forward_backward]) with scores in place of
log probabilities. An HMM *is* such a CRF: take $a = \log \pi$, $T = \log A$,
$e_t(j) = \log B_{j x_t}$ and $b = 0$; then $\exp s(y) = P(x, y)$, and $\log Z = \log P(x)$,
the log likelihood of the observed tokens. A CRF drops the constraint that the scores be
log probabilities, and normalises once over whole sequences instead of at every step.

The negative log likelihood $-\log P(y \mid x) = \log Z - s(y)$ has the gradient *expected
counts minus observed counts*: with node marginals $P(y_t = j \mid x)$ and edge marginals
$P(y_{t-1} = i, y_t = j \mid x)$ from forward–backward ([`marginals`][mlm_book.crf.marginals]),

$$\frac{\partial}{\partial e_t(j)} = P(y_t = j \mid x) - [y_t = j], \qquad
  \frac{\partial}{\partial T_{ij}} = \sum_{t=2}^{n} P(y_{t-1} = i, y_t = j \mid x)
  - \#\{t : y_{t-1} = i, y_t = j\},$$

and likewise for the start and end scores with the first and last position's marginals.
[`viterbi`][mlm_book.crf.viterbi] replaces the log-sum-exp by a max to find the best
sequence, optionally under a mask of allowed transitions (e.g. from
[`mlm_book.tagging.allowed_transitions`][mlm_book.tagging.allowed_transitions]).

One sentence per call; every step is vectorised over tags (a ``(K, K)`` array per
position), and the loop over positions is the recursion itself.

Beside the functions of ``__all__``, four building blocks are public for code that batches
these recursions ([`mlm_book.crf_fit`][mlm_book.crf_fit]): the argument checks
[`check_scores`][mlm_book.crf.check_scores] and [`check_allowed`][mlm_book.crf.check_allowed],
[`logsumexp`][mlm_book.crf.logsumexp] and the batched max-product recursion
[`best_paths`][mlm_book.crf.best_paths], which trusts checked inputs.

Examples
--------
>>> import numpy as np
>>> rng = np.random.default_rng(0)
>>> emissions, transitions = rng.normal(size=(4, 3)), rng.normal(size=(3, 3))
>>> start, end = np.zeros(3), np.zeros(3)
>>> node, edge = marginals(emissions, transitions, start, end)
>>> bool(np.allclose(node.sum(axis=1), 1.0)), edge.shape
(True, (3, 3, 3))
>>> path, score = viterbi(emissions, transitions, start, end)
>>> bool(np.isclose(score, sequence_score(path, emissions, transitions, start, end)))
True
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from mlm_book.validation import as_float_array, check_tokens

__all__ = [
    "MAX_CELLS",
    "MAX_SCORE_SUM",
    "log_partition",
    "marginals",
    "sequence_score",
    "negative_log_likelihood",
    "CRFGradient",
    "nll_gradient",
    "viterbi",
]

MAX_CELLS = 10**8
"""Largest ``n * K * K`` a call works on (the cells of the forward recursion): a sentence of 1,000 tokens with 300 tags; beyond it a mistaken shape is refused rather than run for minutes."""

MAX_SCORE_SUM = 1e300
r"""Largest bound on a sequence's score, $n(\max|e| + \max|T| + \log K) + \max|a| + \max|b|$, that a call accepts: far beyond any trained model's scores, and far enough below float64's 1.8e308 that no sum in the recursions overflows."""


# ----------------------------------------------------------------------------- checks
def check_scores(emissions, transitions, start, end) -> tuple[np.ndarray, ...]:
    r"""The four score arrays as float arrays, checked to fit together and to keep every sum finite.

    Parameters
    ----------
    emissions : array_like, shape (n, K)
    transitions : array_like, shape (K, K)
    start, end : array_like, shape (K,)

    Returns
    -------
    emissions, transitions, start, end : ndarray
        As float arrays.

    Raises
    ------
    TypeError
        If an argument does not hold real numbers.
    ValueError
        If a shape is wrong, a score is not finite, ``n * K * K`` exceeds `MAX_CELLS`, or the
        bound on a sequence's score exceeds `MAX_SCORE_SUM`.

    Examples
    --------
    >>> [a.shape for a in check_scores([[0.0, 1.0]], np.zeros((2, 2)), [0, 0], [0, 0])]
    [(1, 2), (2, 2), (2,), (2,)]
    """
    emissions = as_float_array(emissions, "emissions", ndim=2)
    transitions = as_float_array(transitions, "transitions", ndim=2)
    start = as_float_array(start, "start", ndim=1)
    end = as_float_array(end, "end", ndim=1)
    length, n_tags = emissions.shape
    if length == 0 or n_tags == 0:
        raise ValueError(f"emissions must have shape (n, K) with n >= 1 positions and K >= 1 tags, "
                         f"got {emissions.shape}")
    if transitions.shape != (n_tags, n_tags):
        raise ValueError(f"transitions must have shape (K, K) = ({n_tags}, {n_tags}) for emissions of shape "
                         f"{emissions.shape}, got {transitions.shape}")
    if start.shape != (n_tags,):
        raise ValueError(f"start must have shape (K,) = ({n_tags},) for emissions of shape {emissions.shape}, "
                         f"got {start.shape}")
    if end.shape != (n_tags,):
        raise ValueError(f"end must have shape (K,) = ({n_tags},) for emissions of shape {emissions.shape}, "
                         f"got {end.shape}")
    if length * n_tags * n_tags > MAX_CELLS:
        raise ValueError(f"emissions of shape {emissions.shape} ask for {length * n_tags * n_tags} cells, "
                         f"more than the limit {MAX_CELLS}")
    # A bound on |s(y)| and |log Z|, in Python floats (no overflow warning): refused before any
    # sum in the recursions could overflow to inf and turn into NaN.
    bound = (length * (float(np.abs(emissions).max()) + float(np.abs(transitions).max()) + math.log(n_tags))
             + float(np.abs(start).max()) + float(np.abs(end).max()))
    if not bound <= MAX_SCORE_SUM:
        raise ValueError(f"emissions, transitions, start and end are too large: a sequence's score could reach "
                         f"{bound:.3g}, over the limit {MAX_SCORE_SUM:g} that keeps float64 sums finite")
    return emissions, transitions, start, end


def _check_path(tags, emissions: np.ndarray) -> np.ndarray:
    length, n_tags = emissions.shape
    tags = check_tokens(tags, "tags", n_tags, ndim=1)
    if tags.shape != (length,):
        raise ValueError(f"tags must hold one tag per position of emissions ({length}), got shape {tags.shape}")
    return tags


def _finite(value, what: str):
    """Refuse a result that overflowed (scores near the float64 limit), naming every score argument."""
    if not np.all(np.isfinite(value)):
        raise ValueError(f"{what} overflowed: emissions, transitions, start and end must be of a size whose "
                         f"sums stay finite in float64")
    return value


def logsumexp(values: np.ndarray, axis: int) -> np.ndarray:
    """``log(sum(exp(values)))`` along ``axis``, shifted by the maximum (finite inputs, unchecked).

    Examples
    --------
    >>> float(logsumexp(np.log(np.array([1.0, 3.0])), axis=0))
    1.3862943611198906
    """
    top = values.max(axis=axis, keepdims=True)
    return np.squeeze(top, axis=axis) + np.log(np.exp(values - top).sum(axis=axis))


def _forward(emissions, transitions, start) -> np.ndarray:
    r"""$\alpha_t(j)$ for every position, shape (n, K)."""
    alpha = np.empty_like(emissions)
    alpha[0] = start + emissions[0]
    for t in range(1, emissions.shape[0]):
        alpha[t] = emissions[t] + logsumexp(alpha[t - 1][:, None] + transitions, axis=0)
    return alpha


def _backward(emissions, transitions, end) -> np.ndarray:
    r"""$\beta_t(i)$, the log score of every continuation after position $t$ in tag $i$, shape (n, K)."""
    beta = np.empty_like(emissions)
    beta[-1] = end
    for t in range(emissions.shape[0] - 2, -1, -1):
        beta[t] = logsumexp(transitions + (emissions[t + 1] + beta[t + 1])[None, :], axis=1)
    return beta


# ----------------------------------------------------------------------------- public
def log_partition(emissions, transitions, start, end) -> float:
    r"""$\log Z$, the log-sum-exp of the scores of all $K^n$ tag sequences, by the forward algorithm.

    Parameters
    ----------
    emissions : array_like, shape (n, K)
        Per-position tag scores $e_t(j)$, $n \ge 1$.
    transitions : array_like, shape (K, K)
        $T_{ij}$, the score of tag $j$ right after tag $i$.
    start : array_like, shape (K,)
        Score of each tag at the first position.
    end : array_like, shape (K,)
        Score of each tag at the last position.

    Returns
    -------
    float
        In nats.

    Raises
    ------
    TypeError
        If an argument does not hold real numbers.
    ValueError
        If a shape is wrong or disagrees with the others, a score is NaN or infinite, the
        sentence is empty or too large ([`MAX_CELLS`][mlm_book.crf.MAX_CELLS]), or the scores
        are so large that the sum overflows.

    Examples
    --------
    An HMM as a CRF: $\log Z$ is the log likelihood $\log P(x)$ of the observed tokens,
    here checked against the sum of $P(x, y)$ over all $2^3$ hidden sequences.

    >>> import itertools
    >>> initial = np.array([0.6, 0.4])
    >>> A = np.array([[0.7, 0.3], [0.2, 0.8]])          # P(z_t | z_{t-1})
    >>> B = np.array([[0.5, 0.4, 0.1], [0.1, 0.3, 0.6]])  # P(x_t | z_t)
    >>> x = [0, 2, 1]
    >>> emissions = np.log(B[:, x].T)                     # (n, K): log P(x_t | z_t = j)
    >>> brute = sum(initial[z[0]] * B[z[0], x[0]] * np.prod([A[z[t - 1], z[t]] * B[z[t], x[t]] for t in (1, 2)])
    ...             for z in itertools.product(range(2), repeat=3))
    >>> log_z = log_partition(emissions, np.log(A), np.log(initial), np.zeros(2))
    >>> round(log_z, 6), bool(abs(log_z - np.log(brute)) < 1e-12)
    (-3.458085, True)

    The same number is chapter 1's log evidence:

    >>> from mlm_book.hmm import forward_backward
    >>> bool(abs(forward_backward(A, initial, B[:, x].T[None]).log_evidence[0] - log_z) < 1e-12)
    True
    """
    emissions, transitions, start, end = check_scores(emissions, transitions, start, end)
    alpha = _forward(emissions, transitions, start)
    return float(_finite(logsumexp(alpha[-1] + end, axis=0), "the log partition"))


def marginals(emissions, transitions, start, end) -> tuple[np.ndarray, np.ndarray]:
    r"""Node and edge marginals $P(y_t = j \mid x)$ and $P(y_t = i, y_{t+1} = j \mid x)$ by forward–backward.

    With $\alpha$ from the forward recursion and $\beta_t(i) = \log \sum \exp(\text{scores
    after } t \mid y_t = i)$ from the backward one,

    $$P(y_t = j \mid x) = \exp(\alpha_t(j) + \beta_t(j) - \log Z), \qquad
      P(y_t = i, y_{t+1} = j \mid x) = \exp(\alpha_t(i) + T_{ij} + e_{t+1}(j)
      + \beta_{t+1}(j) - \log Z).$$

    Everything stays in log space until the final ``exp`` of a number at most about 0, so
    scores in the thousands neither overflow nor underflow to NaN.

    Parameters
    ----------
    emissions : array_like, shape (n, K)
        Per-position tag scores.
    transitions : array_like, shape (K, K)
        Tag-pair scores.
    start : array_like, shape (K,)
        First-tag scores.
    end : array_like, shape (K,)
        Last-tag scores.

    Returns
    -------
    node : ndarray, shape (n, K)
        Each row sums to one.
    edge : ndarray, shape (n - 1, K, K)
        ``edge[t, i, j]`` $= P(y_t = i, y_{t+1} = j \mid x)$; each slice sums to one, and its
        row and column sums are ``node[t]`` and ``node[t + 1]``.

    Raises
    ------
    TypeError
        If an argument does not hold real numbers.
    ValueError
        As [`log_partition`][mlm_book.crf.log_partition].

    Examples
    --------
    >>> node, edge = marginals([[1.0, 0.0], [0.0, 0.0]], np.zeros((2, 2)), np.zeros(2), np.zeros(2))
    >>> node.round(4)
    array([[0.7311, 0.2689],
           [0.5   , 0.5   ]])
    >>> bool(np.allclose(edge[0].sum(axis=1), node[0]))
    True
    """
    emissions, transitions, start, end = check_scores(emissions, transitions, start, end)
    alpha = _forward(emissions, transitions, start)
    beta = _backward(emissions, transitions, end)
    log_z = _finite(logsumexp(alpha[-1] + end, axis=0), "the log partition")
    node = np.exp(alpha + beta - log_z)
    edge = np.exp(alpha[:-1, :, None] + transitions[None] + (emissions[1:] + beta[1:])[:, None, :] - log_z)
    return _finite(node, "the node marginals"), _finite(edge, "the edge marginals")


def sequence_score(tags, emissions, transitions, start, end) -> float:
    r"""The score $s(y)$ of one tag sequence: start, emissions, transitions and end scores summed.

    Parameters
    ----------
    tags : array_like of int, shape (n,)
        Tag ids in ``[0, K)``.
    emissions : array_like, shape (n, K)
        Per-position tag scores.
    transitions : array_like, shape (K, K)
        Tag-pair scores.
    start : array_like, shape (K,)
        First-tag scores.
    end : array_like, shape (K,)
        Last-tag scores.

    Returns
    -------
    float

    Raises
    ------
    TypeError
        If ``tags`` does not hold integers or a score array not real numbers.
    ValueError
        If ``tags`` has the wrong length or an id outside ``[0, K)``, or as
        [`log_partition`][mlm_book.crf.log_partition].

    Examples
    --------
    >>> sequence_score([0, 1], [[1.0, 0.0], [0.0, 2.0]], [[0.0, 0.5], [0.0, 0.0]], [0.1, 0.0], [0.0, 0.3])
    3.9
    """
    emissions, transitions, start, end = check_scores(emissions, transitions, start, end)
    tags = _check_path(tags, emissions)
    total = (start[tags[0]] + emissions[np.arange(tags.size), tags].sum()
             + transitions[tags[:-1], tags[1:]].sum() + end[tags[-1]])
    return float(_finite(total, "the sequence score"))


def negative_log_likelihood(tags, emissions, transitions, start, end) -> float:
    r"""$-\log P(y \mid x) = \log Z - s(y)$ in nats, for one sentence's gold ``tags``.

    Parameters
    ----------
    tags : array_like of int, shape (n,)
        Gold tag ids in ``[0, K)``.
    emissions : array_like, shape (n, K)
        Per-position tag scores.
    transitions : array_like, shape (K, K)
        Tag-pair scores.
    start : array_like, shape (K,)
        First-tag scores.
    end : array_like, shape (K,)
        Last-tag scores.

    Returns
    -------
    float
        Non-negative.

    Raises
    ------
    TypeError
        As [`sequence_score`][mlm_book.crf.sequence_score].
    ValueError
        As [`sequence_score`][mlm_book.crf.sequence_score].

    Examples
    --------
    With all scores zero every one of the $2^3$ sequences has probability $1/8$:

    >>> round(negative_log_likelihood([0, 1, 1], np.zeros((3, 2)), np.zeros((2, 2)), np.zeros(2), np.zeros(2)), 6)
    2.079442
    """
    score = sequence_score(tags, emissions, transitions, start, end)
    # rounding may leave -1e-13 when one sequence holds all the mass
    return max(log_partition(emissions, transitions, start, end) - score, 0.0)


@dataclass(frozen=True, eq=False)
class CRFGradient:
    r"""The negative log likelihood of one sentence and its gradient with respect to every score.

    Parameters
    ----------
    loss : float
        $-\log P(y \mid x)$ in nats.
    emissions : ndarray, shape (n, K)
        $\partial\,\text{loss} / \partial e_t(j)$.
    transitions : ndarray, shape (K, K)
        $\partial\,\text{loss} / \partial T_{ij}$.
    start : ndarray, shape (K,)
        $\partial\,\text{loss} / \partial a_j$.
    end : ndarray, shape (K,)
        $\partial\,\text{loss} / \partial b_j$.

    Raises
    ------
    TypeError
        If a field does not hold real numbers.
    ValueError
        If ``loss`` is negative, a value is NaN or infinite, or the shapes disagree.

    Examples
    --------
    >>> g = CRFGradient(loss=0.5, emissions=np.zeros((2, 3)), transitions=np.zeros((3, 3)),
    ...                 start=np.zeros(3), end=np.zeros(3))
    >>> g.emissions.shape
    (2, 3)
    """

    loss: float
    emissions: np.ndarray
    transitions: np.ndarray
    start: np.ndarray
    end: np.ndarray

    def __post_init__(self):
        loss = float(as_float_array(self.loss, "loss", ndim=0))
        if loss < 0:
            raise ValueError(f"loss must be non-negative (a negative log likelihood), got {loss}")
        object.__setattr__(self, "loss", loss)
        for name, value in zip(("emissions", "transitions", "start", "end"),
                               check_scores(self.emissions, self.transitions, self.start, self.end)):
            object.__setattr__(self, name, value)


def nll_gradient(tags, emissions, transitions, start, end) -> CRFGradient:
    r"""The negative log likelihood and its gradients: expected counts minus observed counts.

    From [`marginals`][mlm_book.crf.marginals]: the emission gradient is the node marginal
    minus the one-hot gold tag at each position; the transition gradient is the edge
    marginals summed over positions minus the gold sequence's transition counts; the start
    and end gradients are the first and last node marginals minus the one-hot first and last
    gold tags. Each gradient therefore sums to zero over tags (per position for emissions).

    Parameters
    ----------
    tags : array_like of int, shape (n,)
        Gold tag ids in ``[0, K)``.
    emissions : array_like, shape (n, K)
        Per-position tag scores.
    transitions : array_like, shape (K, K)
        Tag-pair scores.
    start : array_like, shape (K,)
        First-tag scores.
    end : array_like, shape (K,)
        Last-tag scores.

    Returns
    -------
    CRFGradient

    Raises
    ------
    TypeError
        As [`sequence_score`][mlm_book.crf.sequence_score].
    ValueError
        As [`sequence_score`][mlm_book.crf.sequence_score].

    Examples
    --------
    >>> g = nll_gradient([0, 1], np.zeros((2, 2)), np.zeros((2, 2)), np.zeros(2), np.zeros(2))
    >>> round(g.loss, 6), g.emissions, g.transitions
    (1.386294, array([[-0.5,  0.5],
           [ 0.5, -0.5]]), array([[ 0.25, -0.75],
           [ 0.25,  0.25]]))
    """
    emissions, transitions, start, end = check_scores(emissions, transitions, start, end)
    tags = _check_path(tags, emissions)
    node, edge = marginals(emissions, transitions, start, end)
    n_tags = emissions.shape[1]
    observed = np.eye(n_tags)[tags]                                        # (n, K) one-hot
    counts = np.bincount(tags[:-1] * n_tags + tags[1:], minlength=n_tags * n_tags).reshape(n_tags, n_tags)
    return CRFGradient(loss=negative_log_likelihood(tags, emissions, transitions, start, end),
                       emissions=node - observed,
                       transitions=edge.sum(axis=0) - counts,
                       start=node[0] - observed[0],
                       end=node[-1] - observed[-1])


def check_allowed(allowed, n_tags: int, of: str = "") -> np.ndarray | None:
    """A transition mask checked for ``n_tags`` tags: a boolean array of shape (K + 1, K + 1), or ``None``.

    Parameters
    ----------
    allowed : ndarray of bool, shape (K + 1, K + 1), or None
        As for [`viterbi`][mlm_book.crf.viterbi].
    n_tags : int
        $K$ (trusted: the caller's checked value).
    of : str
        Where $K$ comes from, for the message (e.g. ``" of the tagger"``).

    Raises
    ------
    TypeError
        If ``allowed`` is not a boolean array.
    ValueError
        If its shape is not (K + 1, K + 1).

    Examples
    --------
    >>> check_allowed(np.ones((3, 3), bool), 2).shape, check_allowed(None, 2)
    ((3, 3), None)
    """
    if allowed is None:
        return None
    if isinstance(allowed, (str, bytes)):
        raise TypeError(f"allowed must be a boolean array, got {type(allowed).__name__}")
    try:
        mask = np.asarray(allowed)
    except (TypeError, ValueError) as error:
        raise TypeError(f"allowed must be a boolean array (not ragged), got {type(allowed).__name__}") from error
    if mask.dtype != bool:
        raise TypeError(f"allowed must be a boolean array, got dtype {mask.dtype}")
    if mask.shape != (n_tags + 1, n_tags + 1):
        raise ValueError(f"allowed must have shape (K + 1, K + 1) = ({n_tags + 1}, {n_tags + 1}) for K = {n_tags} "
                         f"tags{of} (index K is the sentence boundary), got {mask.shape}")
    return mask


def best_paths(emissions: np.ndarray, lengths: np.ndarray, transitions: np.ndarray, start: np.ndarray,
                end: np.ndarray, mask: np.ndarray | None) -> np.ndarray:
    """The max-product recursion of [`viterbi`][mlm_book.crf.viterbi] over a padded batch of checked inputs.

    A sentence's scores stop changing past its length, and its path is read back from its own
    last position, so each sentence's numbers are combined exactly as for it alone.

    Parameters
    ----------
    emissions : ndarray, shape (B, n, K)
        Each sentence's scores, left-aligned (what follows its length is never read into its path).
    lengths : ndarray of int, shape (B,)
        Each sentence's length, in ``[1, n]``.
    transitions : ndarray, shape (K, K)
    start, end : ndarray, shape (K,)
        Checked as by [`check_scores`][mlm_book.crf.check_scores] (unchecked here).
    mask : ndarray of bool, shape (K + 1, K + 1), or None
        From [`check_allowed`][mlm_book.crf.check_allowed].

    Returns
    -------
    ndarray of int, shape (B, n)
        Each sentence's best path, ``-1`` past its length (ties to the lowest tag id).

    Raises
    ------
    ValueError
        If ``mask`` permits no sequence of some sentence's length, or a best score overflows.

    Examples
    --------
    >>> emissions = np.log([[[0.5, 0.5], [0.9, 0.1]], [[0.2, 0.8], [0.5, 0.5]]])
    >>> best_paths(emissions, np.array([2, 1]), np.zeros((2, 2)), np.zeros(2), np.zeros(2), None)
    array([[ 0,  0],
           [ 1, -1]])
    """
    batch, padded, n_tags = emissions.shape
    step, first, last = transitions, start, end
    if mask is not None:
        step = np.where(mask[:n_tags, :n_tags], transitions, -np.inf)
        first = np.where(mask[n_tags, :n_tags], start, -np.inf)
        last = np.where(mask[:n_tags, n_tags], end, -np.inf)
    pointers = np.zeros((batch, padded, n_tags), dtype=np.int64)
    delta = first + emissions[:, 0]
    for t in range(1, padded):
        candidates = delta[:, :, None] + step                    # (B, K previous, K next)
        pointers[:, t] = candidates.argmax(axis=1)
        moved = emissions[:, t] + np.take_along_axis(candidates, pointers[:, t][:, None, :], axis=1)[:, 0]
        delta = np.where((t < lengths)[:, None], moved, delta)
    final = delta + last
    best = final.argmax(axis=1)
    top = final[np.arange(batch), best]
    if not np.all(np.isfinite(top)):
        bad = int(np.flatnonzero(~np.isfinite(top))[0])
        if mask is not None and top[bad] == -np.inf:
            raise ValueError(f"allowed permits no tag sequence of length {lengths[bad]} (check its start row, "
                             f"end column and transitions)")
        _finite(top[bad], "the best score")
    rows = np.arange(batch)
    paths = np.full((batch, padded), -1, dtype=np.int64)
    paths[rows, lengths - 1] = best
    current = best
    for t in range(padded - 1, 0, -1):
        inside = t < lengths
        previous = pointers[rows, t, current]
        paths[inside, t - 1] = previous[inside]
        current = np.where(inside, previous, current)
    return paths


def viterbi(emissions, transitions, start, end, allowed=None) -> tuple[np.ndarray, float]:
    r"""The highest-scoring tag sequence and its score, optionally under a transition mask.

    The max-product version of the forward recursion:
    $\delta_1(j) = a_j + e_1(j)$, $\delta_t(j) = e_t(j) + \max_i(\delta_{t-1}(i) + T_{ij})$,
    then the best last tag maximises $\delta_n(j) + b_j$ and back-pointers give the rest.
    A mask sets disallowed scores to $-\infty$; a sequence with any disallowed step is then
    never chosen, and the result is the best of the allowed sequences. Ties go to the lowest
    tag id.

    Parameters
    ----------
    emissions : array_like, shape (n, K)
        Per-position tag scores.
    transitions : array_like, shape (K, K)
        Tag-pair scores.
    start : array_like, shape (K,)
        First-tag scores.
    end : array_like, shape (K,)
        Last-tag scores.
    allowed : ndarray of bool, shape (K + 1, K + 1), optional
        ``allowed[i, j]``: tag ``j`` may follow tag ``i``; index ``K`` is the sentence
        boundary (row ``K``: may start, column ``K``: may end), the layout of
        [`mlm_book.tagging.allowed_transitions`][mlm_book.tagging.allowed_transitions].
        ``None`` allows everything.

    Returns
    -------
    path : ndarray of int, shape (n,)
        The best tag sequence.
    score : float
        Its score $s(y)$ (finite: the mask only excludes sequences, it adds no score).

    Raises
    ------
    TypeError
        If a score array does not hold real numbers or ``allowed`` is not a boolean array.
    ValueError
        If a shape is wrong (``allowed`` included), a score is not finite, or no sequence of
        length ``n`` satisfies ``allowed``.

    Examples
    --------
    BIO tags ``O, B-ORG, I-ORG``: the emissions prefer ``O I-ORG``, which BIO forbids.

    >>> from mlm_book.tagging import allowed_transitions
    >>> emissions = np.log([[0.5, 0.4, 0.1], [0.1, 0.3, 0.6]])
    >>> zeros = np.zeros(3)
    >>> viterbi(emissions, np.zeros((3, 3)), zeros, zeros)[0]
    array([0, 2])
    >>> mask = allowed_transitions(["O", "B-ORG", "I-ORG"], "BIO")
    >>> path, score = viterbi(emissions, np.zeros((3, 3)), zeros, zeros, allowed=mask)
    >>> path, round(score, 4)
    (array([1, 2]), -1.4271)
    """
    emissions, transitions, start, end = check_scores(emissions, transitions, start, end)
    length, n_tags = emissions.shape
    mask = check_allowed(allowed, n_tags)
    path = best_paths(emissions[None], np.array([length]), transitions, start, end, mask)[0]
    return path, sequence_score(path, emissions, transitions, start, end)
