r"""The corruption channel of the masked-LM objective, and Theorem 2's optimum.

A sentence $x = (x_1, \dots, x_n)$ over a vocabulary of $V$ tokens $\{0, \dots, V-1\}$ is
corrupted in two steps. First a set $M$ of positions is *selected*: either each position
independently with probability $\rho$ (``selection="independent"``, what Theorem 2
assumes), or, like BERT's data script, a fixed number $\max(1, \operatorname{round}(\rho
n))$ of positions uniformly without replacement (``selection="fixed"``; BERT's own count
also counts ``[CLS]`` and ``[SEP]`` in the length, see [`bert_prediction_count`][mlm_book.channel.bert_prediction_count]).
Then each selected position shows

* the symbol ``[MASK]`` with probability $m$,
* a replacement token with probability $r$, drawn from a distribution $u$ over the $V$
  tokens (uniform, $u = 1/V$, by default; possibly the token itself),
* its own token with probability $\kappa = 1 - m - r$,

and every unselected position shows its own token. The law of what a selected position
shows given its token $y$ is the *display matrix*

$$S(s \mid y) = m\,\mathbb{1}[s = \texttt{[MASK]}] + \kappa\,\mathbb{1}[s = y] + r\,u(s).$$

``[MASK]`` gets the id $V$ ([`Channel.mask_id`][mlm_book.channel.Channel.mask_id]): it can be shown, never be a target
and never be drawn as a replacement.

Theorem 2 says that the best predictor at a selected position $i$ is Bayes' rule with
$p(y) = P(x_i = y \mid \tilde x_{-i})$ as prior and $S(\tilde x_i \mid y)$ as likelihood
([`optimum`][mlm_book.channel.optimum]). On the HMM language, $p$ itself is exact: the other positions are read
through the channel's per-position observation law ([`observation_matrix`][mlm_book.channel.observation_matrix]) inside
forward–backward ([`context_prediction`][mlm_book.channel.context_prediction], [`exact_posterior`][mlm_book.channel.exact_posterior]).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from mlm_book.hmm import forward_backward
from mlm_book.validation import (
    as_float_array,
    as_int_array,
    check_distribution,
    check_generator,
    check_positive_int,
    check_probability,
    check_table_size,
    check_tokens,
)

__all__ = [
    "Channel",
    "CorruptedBatch",
    "NOT_SELECTED",
    "MASKED",
    "RANDOM",
    "KEPT",
    "selection_count",
    "bert_prediction_count",
    "corrupt",
    "display_matrix",
    "observation_matrix",
    "optimum",
    "context_prediction",
    "exact_posterior",
    "evidence_factor",
    "half_mass_threshold",
    "visible_mass",
    "zipf_unigram",
]

#: Codes of [`CorruptedBatch.kind`][mlm_book.channel.CorruptedBatch.kind].
NOT_SELECTED, MASKED, RANDOM, KEPT = 0, 1, 2, 3

_SELECTIONS = ("independent", "fixed")

#: Largest vocabulary [`zipf_unigram`][mlm_book.channel.zipf_unigram] builds a table for (2^27 float64: 1 GiB).
MAX_UNIGRAM_SIZE = 2**27


@dataclass(frozen=True, eq=False)
class Channel:
    r"""The corruption channel of Definition 2.

    Parameters
    ----------
    vocab_size : int
        $V$, the number of tokens that can be targets and replacements (ids ``0 .. V-1``).
    rho : float
        Selection rate $\rho$.
    mask : float
        $m$, probability that a selected position shows ``[MASK]``.
    random : float
        $r$, probability that a selected position shows a replacement token.
    selection : {"independent", "fixed"}
        ``"independent"``: each position is selected with probability $\rho$.
        ``"fixed"``: exactly [`selection_count`][mlm_book.channel.selection_count] positions per sequence, uniformly
        without replacement (as BERT's ``create_pretraining_data.py`` selects; its count is
        [`bert_prediction_count`][mlm_book.channel.bert_prediction_count]).
    replacement : numpy.ndarray or None
        Distribution $u$ of replacement tokens, shape ``(V,)``; ``None`` means uniform.

    Raises
    ------
    ValueError
        If a rate is outside $[0, 1]$ or NaN, if $m + r > 1$, if ``selection`` is unknown,
        or if ``replacement`` is not a probability vector of length $V$.

    Examples
    --------
    >>> bert = Channel(vocab_size=25)
    >>> (bert.rho, bert.mask, bert.random, round(bert.keep, 12), bert.mask_id)
    (0.15, 0.8, 0.1, 0.1, 25)
    >>> Channel(vocab_size=25, mask=0.8, random=0.3)
    Traceback (most recent call last):
    ...
    ValueError: mask + random must be at most 1, got 0.8 + 0.3
    """

    vocab_size: int
    rho: float = 0.15
    mask: float = 0.8
    random: float = 0.1
    selection: str = "independent"
    replacement: np.ndarray | None = field(default=None)

    def __post_init__(self):
        check_positive_int(self.vocab_size, "vocab_size")
        for name in ("rho", "mask", "random"):
            object.__setattr__(self, name, check_probability(getattr(self, name), name))
        if self.mask + self.random > 1.0 + 1e-12:
            raise ValueError(f"mask + random must be at most 1, got {self.mask} + {self.random}")
        if self.selection not in _SELECTIONS:
            raise ValueError(f"selection must be one of {_SELECTIONS}, got {self.selection!r}")
        if self.replacement is not None:
            u = check_distribution(self.replacement, "replacement")
            if u.shape != (self.vocab_size,):
                raise ValueError(f"replacement must have shape ({self.vocab_size},), got {u.shape}")
            u = u.copy()
            u.flags.writeable = False
            object.__setattr__(self, "replacement", u)

    @property
    def keep(self) -> float:
        r"""$\kappa = 1 - m - r$, probability that a selected position shows its own token."""
        return max(0.0, 1.0 - self.mask - self.random)

    @property
    def mask_id(self) -> int:
        """Id of the ``[MASK]`` display symbol: ``vocab_size``."""
        return self.vocab_size

    @property
    def unigram(self) -> np.ndarray:
        """The replacement distribution $u$ as an array of shape ``(V,)`` (uniform if unset)."""
        if self.replacement is None:
            return np.full(self.vocab_size, 1.0 / self.vocab_size)
        return self.replacement

    def _key(self):
        u = None if self.replacement is None else self.replacement.tobytes()
        return (self.vocab_size, self.rho, self.mask, self.random, self.selection, u)

    def __eq__(self, other):
        if not isinstance(other, Channel):
            return NotImplemented
        return self._key() == other._key()

    def __hash__(self):
        return hash(self._key())

    def __repr__(self):
        replacement = "uniform" if self.replacement is None else "unigram"
        return (f"Channel(vocab_size={self.vocab_size}, rho={self.rho}, mask={self.mask}, "
                f"random={self.random}, selection={self.selection!r}, replacement={replacement})")


def _check_channel(channel) -> Channel:
    if not isinstance(channel, Channel):
        raise TypeError(f"channel must be a Channel, got {type(channel).__name__}")
    return channel


def selection_count(length: int, rho: float) -> int:
    r"""Number of positions the book's fixed-count selection picks in a sequence of ``length``.

    $\max(1, \operatorname{round}(\rho n))$ over the $n$ positions that can be selected, with
    Python 3's ``round`` (halves to even). BERT's ``create_pretraining_data.py`` rounds $\rho$
    times the length *with* ``[CLS]`` and ``[SEP]`` and caps the count by
    ``max_predictions_per_seq``: that count is [`bert_prediction_count`][mlm_book.channel.bert_prediction_count].

    Parameters
    ----------
    length : int
        Sequence length $n \ge 1$.
    rho : float
        Selection rate.

    Returns
    -------
    int

    Examples
    --------
    >>> [selection_count(n, 0.15) for n in (3, 6, 10, 24, 32)]
    [1, 1, 2, 4, 5]
    """
    length = check_positive_int(length, "length")
    rho = check_probability(rho, "rho")
    return max(1, round(length * rho))


def bert_prediction_count(n_content: int, rho: float = 0.15, *, specials: int = 3,
                          max_predictions: int | None = None) -> int:
    r"""Number of positions BERT's ``create_pretraining_data.py`` predicts in one input.

    The script computes ``num_to_predict = min(max_predictions_per_seq, max(1,
    int(round(len(tokens) * masked_lm_prob))))``, where ``tokens`` holds the special tokens
    too: every pretraining input is a sentence pair ``[CLS] A [SEP] B [SEP]``, so
    ``len(tokens)`` $= n + 3$ for $n$ content tokens ($n + 2$ for one segment ``[CLS] x
    [SEP]``). ``[CLS]`` and ``[SEP]`` are never candidates, so the positions are drawn from
    the $n$ content tokens, and no more than $n$ can be predicted. Python 3's ``round`` sends
    halves to the even neighbour, as here; Python 2's sent them away from zero.

    Compare [`selection_count`][mlm_book.channel.selection_count], the book's
    $\max(1, \operatorname{round}(\rho n))$ over the content tokens alone.

    Parameters
    ----------
    n_content : int
        Content tokens $n \ge 1$ (the positions that can be predicted).
    rho : float
        ``masked_lm_prob``, the selection rate.
    specials : int
        Special tokens counted in the length: 3 for BERT's sentence pairs, 2 for one segment.
    max_predictions : int, optional
        ``max_predictions_per_seq`` (BERT's README uses 20 for inputs of 128 tokens);
        ``None`` means no cap.

    Returns
    -------
    int
        $\min(n, \text{max\_predictions}, \max(1, \operatorname{round}(\rho (n + \text{specials}))))$.

    Raises
    ------
    TypeError
        If ``n_content``, ``specials`` or ``max_predictions`` is not an integer.
    ValueError
        If ``n_content < 1``, ``specials < 0``, ``max_predictions < 1`` or ``rho`` is not in $[0, 1]$.

    Examples
    --------
    >>> [bert_prediction_count(n) for n in (6, 7, 24, 125)]       # sentence pairs: n + 3 tokens
    [1, 2, 4, 19]
    >>> [selection_count(n, 0.15) for n in (6, 7, 24, 125)]       # the book's count on n tokens
    [1, 1, 4, 19]
    >>> bert_prediction_count(8, specials=2), bert_prediction_count(509, max_predictions=76)
    (2, 76)
    >>> bert_prediction_count(0)
    Traceback (most recent call last):
    ...
    ValueError: n_content must be an integer >= 1, got 0
    """
    n_content = check_positive_int(n_content, "n_content")
    rho = check_probability(rho, "rho")
    specials = check_positive_int(specials, "specials", minimum=0)
    count = max(1, round((n_content + specials) * rho))
    if max_predictions is not None:
        count = min(count, check_positive_int(max_predictions, "max_predictions"))
    return min(count, n_content)


@dataclass(frozen=True, eq=False)
class CorruptedBatch:
    """A batch after the channel: what is shown, what was selected, and what happened.

    Attributes
    ----------
    shown : numpy.ndarray
        ``(B, n)`` int64 ids in ``[0, V]``; ``V`` is ``[MASK]``.
    selected : numpy.ndarray
        ``(B, n)`` bool, the set $M$ of each row.
    kind : numpy.ndarray
        ``(B, n)`` int8: 0 not selected, 1 ``[MASK]``, 2 replacement draw, 3 kept.

    Examples
    --------
    >>> x = corrupt(Channel(vocab_size=5, rho=0.5, selection="fixed"), np.zeros((4, 6), dtype=int), np.random.default_rng(0))
    >>> from dataclasses import fields
    >>> rebuilt = CorruptedBatch(**{f.name: getattr(x, f.name) for f in fields(x)})   # its fields are checked
    >>> rebuilt.selected.sum(axis=1).tolist()
    [3, 3, 3, 3]
    """

    shown: np.ndarray
    selected: np.ndarray
    kind: np.ndarray

    def __post_init__(self):
        shown = as_int_array(self.shown, "shown", ndim=2)
        if shown.size and shown.min() < 0:
            raise ValueError(f"shown must hold display ids >= 0, got {int(shown.min())}")
        selected = np.asarray(self.selected) if isinstance(self.selected, np.ndarray) else None
        if selected is None or selected.dtype != bool:
            raise TypeError(f"selected must be a numpy array of bool, got {type(self.selected).__name__}"
                            + ("" if selected is None else f" of dtype {selected.dtype}"))
        kind = as_int_array(self.kind, "kind", ndim=2)
        if not (shown.shape == selected.shape == kind.shape):
            raise ValueError(f"shown, selected and kind must have the same shape (B, n), "
                             f"got {shown.shape}, {selected.shape} and {kind.shape}")
        if kind.size and (kind.min() < NOT_SELECTED or kind.max() > KEPT):
            raise ValueError(f"kind must hold codes {NOT_SELECTED}..{KEPT}, got values from "
                             f"{int(kind.min())} to {int(kind.max())}")
        if np.any(selected != (kind != NOT_SELECTED)):
            raise ValueError("selected must be True exactly where kind is not NOT_SELECTED")


def corrupt(channel: Channel, tokens, rng: np.random.Generator) -> CorruptedBatch:
    """Pass a batch of sentences through the channel.

    Parameters
    ----------
    channel : Channel
        The channel.
    tokens : array_like
        ``(B, n)`` token ids in ``[0, V)``.
    rng : numpy.random.Generator
        Source of randomness.

    Returns
    -------
    CorruptedBatch

    Raises
    ------
    ValueError
        If ``tokens`` is not 2-D, empty, or holds ids outside the vocabulary.
    TypeError
        If ``rng`` is not a Generator or ``channel`` not a Channel.

    Examples
    --------
    >>> channel = Channel(vocab_size=5, rho=0.5, selection="fixed")
    >>> batch = corrupt(channel, np.zeros((4, 6), dtype=int), np.random.default_rng(0))
    >>> batch.selected.sum(axis=1).tolist()
    [3, 3, 3, 3]
    >>> bool(np.all(batch.shown[~batch.selected] == 0))
    True
    """
    channel = _check_channel(channel)
    tokens = check_tokens(tokens, "tokens", channel.vocab_size, ndim=2)
    rng = check_generator(rng)
    batch, length = tokens.shape
    if channel.selection == "independent":
        selected = rng.random((batch, length)) < channel.rho
    else:
        count = selection_count(length, channel.rho)
        # Ranks of i.i.d. uniform keys are a uniform random permutation of each row.
        ranks = np.argsort(np.argsort(rng.random((batch, length)), axis=1), axis=1)
        selected = ranks < count
    draw = rng.random((batch, length))
    kind = np.zeros((batch, length), dtype=np.int8)
    kind[selected & (draw < channel.mask)] = MASKED
    kind[selected & (draw >= channel.mask) & (draw < channel.mask + channel.random)] = RANDOM
    kind[selected & (draw >= channel.mask + channel.random)] = KEPT
    if channel.replacement is None:
        replacement = rng.integers(0, channel.vocab_size, size=(batch, length))
    else:
        cumulative = np.cumsum(channel.replacement)
        replacement = np.searchsorted(cumulative, rng.random((batch, length)) * cumulative[-1], side="right")
        replacement = np.minimum(replacement, channel.vocab_size - 1)
    shown = tokens.copy()
    shown[kind == MASKED] = channel.mask_id
    shown[kind == RANDOM] = replacement[kind == RANDOM]
    return CorruptedBatch(shown=shown, selected=selected, kind=kind)


def display_matrix(channel: Channel) -> np.ndarray:
    r"""The display law $S(s \mid y)$ of a selected position, shape ``(V + 1, V)``.

    Row $s < V$ is token $s$, row $V$ is ``[MASK]``; column $y$ is the true token.
    $S(\texttt{[MASK]} \mid y) = m$ and $S(v \mid y) = \kappa \mathbb{1}[v = y] + r u(v)$.
    Each column sums to $m + \kappa + r = 1$.

    Parameters
    ----------
    channel : Channel
        The channel.

    Returns
    -------
    numpy.ndarray
        ``(V + 1, V)`` float64.

    Examples
    --------
    >>> S = display_matrix(Channel(vocab_size=4))
    >>> S[:, 0].round(3).tolist()
    [0.125, 0.025, 0.025, 0.025, 0.8]
    >>> float(np.abs(S.sum(axis=0) - 1).max()) < 1e-15
    True
    """
    channel = _check_channel(channel)
    V = channel.vocab_size
    S = np.empty((V + 1, V))
    S[:V] = channel.keep * np.eye(V) + channel.random * channel.unigram[:, None]
    S[V] = channel.mask
    return S


def observation_matrix(channel: Channel) -> np.ndarray:
    r"""What any position shows given its token, selected or not: $(1-\rho)\mathbb{1}[s=y] + \rho S(s \mid y)$.

    Under independent selection this is the exact per-position law of the display, and the
    positions are conditionally independent given $x$; it is what forward–backward reads the
    other positions through.

    Parameters
    ----------
    channel : Channel
        The channel (its ``selection`` is ignored: this is the independent-selection law).

    Returns
    -------
    numpy.ndarray
        ``(V + 1, V)`` float64, columns sum to one.

    Examples
    --------
    >>> O = observation_matrix(Channel(vocab_size=4))
    >>> round(float(O[0, 0]), 6), round(float(O[4, 0]), 6)
    (0.86875, 0.12)
    """
    channel = _check_channel(channel)
    V = channel.vocab_size
    O = channel.rho * display_matrix(channel)
    O[:V] += (1.0 - channel.rho) * np.eye(V)
    return O


def optimum(p, shown, channel: Channel) -> np.ndarray:
    r"""Theorem 2: $q(y) = p(y) S(\tilde x_i \mid y) / \sum_{y'} p(y') S(\tilde x_i \mid y')$.

    Parameters
    ----------
    p : array_like
        ``(..., V)`` rows $p(y) = P(x_i = y \mid \tilde x_{-i})$.
    shown : array_like
        ``(...)`` what position $i$ shows, ids in ``[0, V]`` (``V`` is ``[MASK]``).
    channel : Channel
        The channel.

    Returns
    -------
    numpy.ndarray
        ``(..., V)`` the optimal predictor at a selected position.

    Raises
    ------
    ValueError
        If ``p`` is not a distribution over ``V`` tokens, if the shapes disagree, or if a
        display has probability zero under ``p`` and the channel (e.g. $r = 0$ and a
        visible token with $p(v) = 0$): Bayes' rule is then undefined.

    Examples
    --------
    >>> channel = Channel(vocab_size=3, mask=0.8, random=0.1)
    >>> p = np.array([0.5, 0.3, 0.2])
    >>> optimum(p, 3, channel).tolist()          # [MASK]: q = p
    [0.5, 0.3, 0.2]
    >>> optimum(p, 2, channel).round(4).tolist()  # token 2 visible
    [0.3125, 0.1875, 0.5]
    """
    channel = _check_channel(channel)
    p = check_distribution(p, "p")
    if p.shape[-1] != channel.vocab_size:
        raise ValueError(f"p must have last axis of length {channel.vocab_size}, got shape {p.shape}")
    shown = as_int_array(shown, "shown")
    if shown.shape != p.shape[:-1]:
        raise ValueError(f"shown must have shape {p.shape[:-1]} (p's leading axes), got {shown.shape}")
    if shown.size and (shown.min() < 0 or shown.max() > channel.vocab_size):
        raise ValueError(f"shown must be ids in [0, {channel.vocab_size}], got values from "
                         f"{int(shown.min())} to {int(shown.max())}")
    likelihood = display_matrix(channel)[shown]
    joint = p * likelihood
    evidence = joint.sum(axis=-1, keepdims=True)
    if np.any(evidence <= 0):
        raise ValueError("shown has probability zero under p and the channel at some position: "
                         "Theorem 2's posterior is undefined there")
    return joint / evidence


def _check_hmm(hmm, channel: Channel):
    for attribute in ("transition", "emission", "initial"):
        if not hasattr(hmm, attribute):
            raise TypeError(f"hmm must have a '{attribute}' array (a HiddenMarkovLanguage), got {type(hmm).__name__}")
    emission = np.asarray(hmm.emission, dtype=np.float64)
    if emission.shape[1] != channel.vocab_size:
        raise ValueError(f"channel.vocab_size ({channel.vocab_size}) must equal the HMM's vocabulary "
                         f"size ({emission.shape[1]})")
    return emission


def _context_and_emission(hmm, channel: Channel, shown):
    channel = _check_channel(channel)
    emission = _check_hmm(hmm, channel)
    shown = check_tokens(shown, "shown", channel.vocab_size + 1, ndim=2)
    # likelihood[b, j, s] = sum_y emission[s, y] O[shown_j, y]: the HMM state's chance of
    # producing what position j shows, through the channel, whether or not j was selected.
    observed = observation_matrix(channel)[shown]
    if np.any(observed.max(axis=-1) <= 0):
        raise ValueError("shown holds a display this channel cannot produce (e.g. [MASK] with rho * mask = 0)")
    likelihood = observed @ emission.T
    result = forward_backward(hmm.transition, hmm.initial, likelihood)
    p = result.leave_one_out @ emission
    return p / p.sum(axis=-1, keepdims=True), shown


def context_prediction(hmm, channel: Channel, shown) -> np.ndarray:
    r"""$p(y) = P(x_i = y \mid \tilde x_{-i})$ at every position, exactly, on an HMM language.

    The other positions are read through [`observation_matrix`][mlm_book.channel.observation_matrix], so $p$ depends on
    $\rho$, $m$ and $r$ (the trap of Theorem 2 (iii)): only the shrinkage step is free of
    $\rho$. Exact under independent selection.

    Parameters
    ----------
    hmm : HiddenMarkovLanguage
        The language (``transition``, ``initial``, ``emission`` with ``V`` columns).
    channel : Channel
        The channel, with ``vocab_size`` equal to the HMM's.
    shown : array_like
        ``(B, n)`` displayed ids in ``[0, V]``.

    Returns
    -------
    numpy.ndarray
        ``(B, n, V)``.

    Examples
    --------
    >>> from mlm_book.hmm import default_hmm
    >>> hmm = default_hmm()
    >>> V = hmm.emission.shape[1]
    >>> p = context_prediction(hmm, Channel(V), np.full((1, 3), V))
    >>> p.shape  # all [MASK]: p is the marginal of x_i
    (1, 3, 25)
    >>> bool(np.allclose(p[0, 1], hmm.initial @ hmm.transition @ hmm.emission))
    True
    """
    p, _ = _context_and_emission(hmm, channel, shown)
    return p


def exact_posterior(hmm, channel: Channel, shown) -> np.ndarray:
    r"""$P(x_i = y \mid \tilde x, i \in M)$ at every position: Theorem 2 on exact $p$.

    Exact under independent selection; under fixed-count selection it is the closed form's
    approximation (see [`mlm_book.bruteforce.fixed_count_error`][mlm_book.bruteforce.fixed_count_error]).

    Parameters
    ----------
    hmm : HiddenMarkovLanguage
        The language.
    channel : Channel
        The channel, with ``vocab_size`` equal to the HMM's.
    shown : array_like
        ``(B, n)`` displayed ids in ``[0, V]``.

    Returns
    -------
    numpy.ndarray
        ``(B, n, V)``.

    Examples
    --------
    >>> from mlm_book.hmm import default_hmm
    >>> hmm = default_hmm()
    >>> V = hmm.emission.shape[1]
    >>> q = exact_posterior(hmm, Channel(V), np.array([[0, V, 2]]))
    >>> q.shape, bool(np.allclose(q.sum(-1), 1))
    ((1, 3, 25), True)
    """
    p, shown = _context_and_emission(hmm, channel, shown)
    return optimum(p, shown, channel)


def evidence_factor(channel: Channel, token: int | None = None) -> float:
    r"""Likelihood ratio $S(v \mid v)/S(v \mid y \ne v) = 1 + \kappa / (r u(v))$ of a visible token.

    With uniform replacement $u(v) = 1/V$ and the factor is $1 + \kappa V / r$.

    Parameters
    ----------
    channel : Channel
        The channel (needs $r > 0$).
    token : int, optional
        The visible token $v$; needed only for a non-uniform replacement distribution.

    Returns
    -------
    float

    Examples
    --------
    >>> evidence_factor(Channel(vocab_size=25)), evidence_factor(Channel(vocab_size=879))
    (26.0, 880.0)
    """
    channel = _check_channel(channel)
    if channel.random <= 0:
        raise ValueError("channel.random must be positive: with r = 0 a visible token is proof, not evidence")
    u = _unigram_at(channel, token)
    return 1.0 + channel.keep / (channel.random * u)


def _unigram_at(channel: Channel, token) -> float:
    if channel.replacement is None:
        return 1.0 / channel.vocab_size
    if token is None:
        raise ValueError("token must be given when the channel's replacement is not uniform")
    token = int(check_tokens([token], "token", channel.vocab_size)[0])
    return float(channel.replacement[token])


def visible_mass(p_visible, channel: Channel, token: int | None = None):
    r"""Theorem 2 (ii): $q(v) = p(v)(\kappa + r u(v)) / (\kappa p(v) + r u(v))$ at a visible $v$.

    Parameters
    ----------
    p_visible : float or array_like
        $p(v)$, the context's probability of the visible token.
    channel : Channel
        The channel.
    token : int, optional
        The visible token (needed for non-uniform replacement).

    Returns
    -------
    float or numpy.ndarray

    Raises
    ------
    TypeError
        If ``p_visible`` is not numeric.
    ValueError
        If ``p_visible`` is not in [0, 1] or the visible token is impossible.

    Examples
    --------
    >>> round(float(visible_mass(0.176, Channel(vocab_size=25))), 3)
    0.847
    """
    channel = _check_channel(channel)
    p = as_float_array(p_visible, "p_visible")
    if np.any((p < 0) | (p > 1)):
        raise ValueError("p_visible must hold probabilities in [0, 1]")
    ru = channel.random * _unigram_at(channel, token)
    denominator = channel.keep * p + ru
    with np.errstate(invalid="ignore", divide="ignore"):
        q = np.where(denominator > 0, p * (channel.keep + ru) / np.where(denominator > 0, denominator, 1.0), np.nan)
    if np.any(np.isnan(q)):
        raise ValueError("p_visible = 0 with r u(v) = 0: the visible token is impossible under this channel")
    return float(q) if q.ndim == 0 else q


def half_mass_threshold(channel: Channel, token: int | None = None) -> float:
    r"""The $p(v)$ at which the visible token keeps exactly half the mass: $r u / (\kappa + 2 r u)$.

    $q(v) \ge 1/2$ iff $p(v) \ge$ this threshold (for $\kappa > 0$).

    Parameters
    ----------
    channel : Channel
        The channel (needs $\kappa > 0$).
    token : int, optional
        The visible token (needed for non-uniform replacement).

    Returns
    -------
    float

    Examples
    --------
    >>> round(half_mass_threshold(Channel(vocab_size=879)), 7)
    0.0011351
    """
    channel = _check_channel(channel)
    if channel.keep <= 0:
        raise ValueError("channel.keep must be positive: with kappa = 0 the visible token never gets half the mass on its own")
    ru = channel.random * _unigram_at(channel, token)
    return ru / (channel.keep + 2.0 * ru)


def zipf_unigram(vocab_size: int, exponent: float = 1.0) -> np.ndarray:
    r"""A Zipf-like unigram $u(k) \propto (k + 1)^{-a}$ over ``vocab_size`` tokens (rank order).

    A stand-in for a corpus's word frequencies when studying unigram replacement (chapter 2
    also uses the filing corpus's own unigram).

    Parameters
    ----------
    vocab_size : int
        Number of tokens.
    exponent : float
        Zipf exponent $a \ge 0$.

    Returns
    -------
    numpy.ndarray
        ``(vocab_size,)``, decreasing, sums to one.

    Raises
    ------
    ValueError
        If ``vocab_size`` exceeds ``MAX_UNIGRAM_SIZE`` or ``exponent`` is negative.

    Examples
    --------
    >>> u = zipf_unigram(4)
    >>> u.round(3).tolist()
    [0.48, 0.24, 0.16, 0.12]
    """
    vocab_size = check_positive_int(vocab_size, "vocab_size")
    check_table_size(vocab_size, 1, MAX_UNIGRAM_SIZE, f"a unigram over vocab_size={vocab_size} tokens")
    if isinstance(exponent, bool) or not isinstance(exponent, (int, float)) or not math.isfinite(exponent) or exponent < 0:
        raise ValueError(f"exponent must be a finite number >= 0, got {exponent!r}")
    weights = np.arange(1, vocab_size + 1, dtype=np.float64) ** (-float(exponent))
    return weights / weights.sum()
