r"""Brute-force checks of Theorem 2, and its error under BERT's fixed-count selection.

Nothing here reuses [`mlm_book.channel.observation_matrix`][mlm_book.channel.observation_matrix] or
[`mlm_book.channel.exact_posterior`][mlm_book.channel.exact_posterior]: the point is an independent computation.

* [`path_joint`][mlm_book.bruteforce.path_joint] sums the HMM over every hidden path to get $P(x)$ of short sentences.
* [`brute_force_posterior`][mlm_book.bruteforce.brute_force_posterior] enumerates, for every position, its selection event and
  its channel draw (unselected; ``[MASK]``; replacement by each token $t$; kept), keeps the
  combinations in which position $i$ is selected, and applies Bayes' rule over the
  enumerated joint of sentence and events.
* [`dense_posteriors`][mlm_book.bruteforce.dense_posteriors] builds the whole table $P(x_i = y, \tilde x \mid i \in M)$ of a
  length-3 sentence under independent or fixed-count selection, by summing over the
  selection sets.
* [`fixed_count_posterior`][mlm_book.bruteforce.fixed_count_posterior] is the exact posterior under fixed-count selection for
  longer sentences, by enumerating the selection sets that contain $i$ and running
  forward–backward once per set; [`fixed_count_error`][mlm_book.bruteforce.fixed_count_error] measures how far Theorem 2's
  closed form (which assumes independent selection) is from it.
"""

from __future__ import annotations

import itertools
import string
from dataclasses import dataclass
from math import comb

import numpy as np

from mlm_book.hmm import forward_backward, sample
from mlm_book.channel import Channel, context_prediction, corrupt, optimum, selection_count
from mlm_book.scoring import entropy, kl_divergence
from mlm_book.validation import (
    as_float_array,
    check_generator,
    check_instance,
    check_positive_int,
    check_probability,
    check_real,
    check_sequence,
    check_table_size,
    check_tokens,
)

__all__ = [
    "path_joint",
    "channel_events",
    "brute_force_posterior",
    "DenseTable",
    "dense_posteriors",
    "fixed_count_posterior",
    "fixed_count_posterior_by_sets",
    "FixedCountError",
    "fixed_count_error",
    "fixed_count_errors",
]

#: Largest $V^n S^n$ [`path_joint`][mlm_book.bruteforce.path_joint] will build (about 100 MB of float64 work).
MAX_PATH_ENTRIES = 12_000_000

#: Largest ``(rates + 1) * batch * length * V`` posterior table [`fixed_count_errors`][mlm_book.bruteforce.fixed_count_errors]
#: holds (2^26 float64: 512 MiB).
MAX_POSTERIOR_ENTRIES = 2**26


def _arrays(hmm):
    for attribute in ("transition", "emission", "initial"):
        if not hasattr(hmm, attribute):
            raise TypeError(f"hmm must have a '{attribute}' array (a HiddenMarkovLanguage), got {type(hmm).__name__}")
    return (np.asarray(hmm.transition, dtype=np.float64), np.asarray(hmm.emission, dtype=np.float64),
            np.asarray(hmm.initial, dtype=np.float64))


def _check_position(position, length: int) -> None:
    if isinstance(position, bool) or not isinstance(position, (int, np.integer)) or not 0 <= position < length:
        raise ValueError(f"position must be an int in [0, {length}) (a position of shown, of length {length}), "
                         f"got {position!r}")


def _fixed_count_inputs(hmm, channel: Channel, shown, position: int):
    """The checked ``(transition, emission, initial, shown)`` of the two fixed-count posteriors."""
    if not isinstance(channel, Channel):
        raise TypeError(f"channel must be a Channel, got {type(channel).__name__}")
    transition, emission, initial = _arrays(hmm)
    V = channel.vocab_size
    if emission.shape[1] != V:
        raise ValueError(f"channel.vocab_size ({V}) must equal the HMM's vocabulary size ({emission.shape[1]})")
    shown = check_tokens(shown, "shown", V + 1, ndim=2)
    _check_position(position, shown.shape[1])
    return transition, emission, initial, shown


def path_joint(hmm, length: int) -> np.ndarray:
    r"""$P(x_1, \dots, x_n) = \sum_{z} \pi(z_1) E_{z_1 x_1} \prod_{t \ge 2} T_{z_{t-1} z_t} E_{z_t x_t}$ by one sum over all paths.

    A single ``einsum`` over the $S^n$ hidden paths, with no recursion shared with
    forward–backward.

    Parameters
    ----------
    hmm : HiddenMarkovLanguage
        The language.
    length : int
        $n$, small (at most 3 for the book's $V = 25$, $S = 8$ beyond which the table is large).

    Returns
    -------
    numpy.ndarray
        ``(V,) * length``, sums to one.

    Examples
    --------
    >>> from mlm_book.hmm import default_hmm, enumerate_joint
    >>> joint = path_joint(default_hmm(), 3)
    >>> joint.shape, float(np.abs(joint - enumerate_joint(default_hmm(), 3)).max()) < 1e-15
    ((25, 25, 25), True)
    """
    transition, emission, initial = _arrays(hmm)
    length = check_positive_int(length, "length")
    S, V = emission.shape
    check_table_size(V * S, length, MAX_PATH_ENTRIES * S, f"every path and sentence of length {length}")
    states = string.ascii_lowercase[:length]
    tokens = string.ascii_uppercase[:length]
    operands, subscripts = [initial], [states[0]]
    for t in range(length):
        if t:
            operands.append(transition)
            subscripts.append(states[t - 1] + states[t])
        operands.append(emission)
        subscripts.append(states[t] + tokens[t])
    return np.einsum(",".join(subscripts) + "->" + tokens, *operands, optimize=True)


@dataclass(frozen=True)
class _Event:
    probability: float
    selected: bool
    symbol: int | None      # what is shown; None means "the position's own token"


def channel_events(channel: Channel) -> tuple[_Event, ...]:
    r"""Every elementary outcome of the channel at one position, with its probability.

    Unselected ($1 - \rho$, shows its token); selected and ``[MASK]`` ($\rho m$); selected
    and replaced by token $t$ ($\rho r u(t)$, one event per $t$); selected and kept
    ($\rho\kappa$). The probabilities sum to one.

    Parameters
    ----------
    channel : Channel
        The channel.

    Returns
    -------
    tuple
        Events with fields ``probability``, ``selected`` and ``symbol`` (``None`` = own token).

    Examples
    --------
    >>> events = channel_events(Channel(vocab_size=4))
    >>> len(events), round(sum(e.probability for e in events), 15)
    (7, 1.0)
    """
    if not isinstance(channel, Channel):
        raise TypeError(f"channel must be a Channel, got {type(channel).__name__}")
    rho, u = channel.rho, channel.unigram
    events = [_Event(1.0 - rho, False, None), _Event(rho * channel.mask, True, channel.mask_id)]
    events += [_Event(rho * channel.random * float(u[t]), True, t) for t in range(channel.vocab_size)]
    events.append(_Event(rho * channel.keep, True, None))
    return tuple(events)


def brute_force_posterior(hmm, channel: Channel, shown, position: int) -> np.ndarray:
    r"""$P(x_i = y \mid \tilde x, i \in M)$ by Bayes' rule over the enumerated joint of sentence and channel events.

    For each combination of one event per position in which position $i$ is selected,
    the probability of the combination times $P(x)$ is added to every sentence $x$ whose
    display under those events is ``shown``. Events that cannot produce the shown symbol at
    their position for any token contribute nothing and are skipped; this is exact.

    Parameters
    ----------
    hmm : HiddenMarkovLanguage
        The language.
    channel : Channel
        The channel (independent selection; the selection rate enters explicitly).
    shown : array_like
        ``(n,)`` the displayed sentence, ids in ``[0, V]``, with small ``n`` (3 in the book).
    position : int
        $i$.

    Returns
    -------
    numpy.ndarray
        ``(V,)``.

    Raises
    ------
    ValueError
        If ``position`` is not a position of ``shown``.

    Examples
    --------
    >>> from mlm_book.hmm import default_hmm
    >>> q = brute_force_posterior(default_hmm(), Channel(25), [3, 25, 7], 1)
    >>> q.shape, round(float(q.sum()), 12)
    ((25,), 1.0)

    Theorem 2's closed form ([`mlm_book.channel.exact_posterior`][mlm_book.channel.exact_posterior]) against this brute
    force, at $\rho = 0.15$ and $0.4$, with a ``[MASK]``, a kept and a substituted display:

    >>> from mlm_book.channel import exact_posterior
    >>> gaps = []
    >>> for rho in (0.15, 0.4):
    ...     channel = Channel(25, rho=rho)
    ...     for shown in ([3, 25, 7], [3, 4, 7], [3, 20, 7]):
    ...         closed = exact_posterior(default_hmm(), channel, np.array([shown]))[0, 1]
    ...         gaps.append(np.abs(closed - brute_force_posterior(default_hmm(), channel, shown, 1)).max())
    >>> float(max(gaps)) < 1e-12
    True
    """
    if not isinstance(channel, Channel):
        raise TypeError(f"channel must be a Channel, got {type(channel).__name__}")
    shown = check_tokens(shown, "shown", channel.vocab_size + 1, ndim=1)
    length = shown.shape[0]
    _check_position(position, length)
    joint = path_joint(hmm, length)
    V = channel.vocab_size
    events = channel_events(channel)
    per_position = []
    for j in range(length):
        usable = []
        for event in events:
            if j == position and not event.selected:
                continue                       # condition on i in M: only selected events at i
            if event.symbol is None:
                indicator = np.arange(V) == shown[j]   # shows its own token: needs x_j = shown_j
            else:
                indicator = np.full(V, event.symbol == shown[j])
            if indicator.any():
                usable.append((event.probability, indicator))
        per_position.append(usable)
    accumulated = np.zeros_like(joint)
    for combination in itertools.product(*per_position):
        weight = 1.0
        mask = np.ones((), dtype=bool)
        for probability, indicator in combination:
            weight *= probability
            mask = np.multiply.outer(mask, indicator)
        accumulated += weight * joint * mask
    marginal = accumulated.sum(axis=tuple(a for a in range(length) if a != position))
    total = marginal.sum()
    if total <= 0:
        raise ValueError("shown has probability zero with position selected")
    return marginal / total


@dataclass(frozen=True, eq=False)
class DenseTable:
    r"""The table $P(x_i = y, \tilde x \mid i \in M)$ of length-3 sentences, for each position.

    Attributes
    ----------
    joint : numpy.ndarray
        ``(3, V+1, V+1, V+1, V)``: ``joint[i, d1, d2, d3, y]``.
    channel : Channel
        The channel it was built for (its ``selection`` decides the law).

    Examples
    --------
    >>> table = DenseTable(np.full((3, 3, 3, 3, 2), 1 / 54), Channel(2))   # two words: 3 displays a position
    >>> round(float(table.joint[0].sum()), 12), table.displays().shape
    (1.0, (27, 3))
    """

    joint: np.ndarray
    channel: Channel

    def __post_init__(self):
        check_instance(self.channel, "channel", Channel)
        joint = as_float_array(self.joint, "joint", ndim=5)
        W, V = self.channel.vocab_size + 1, self.channel.vocab_size
        if joint.shape != (3, W, W, W, V):
            raise ValueError(f"joint must have shape (3, V+1, V+1, V+1, V) = {(3, W, W, W, V)} for the channel's "
                             f"V, got {joint.shape}")
        if np.any(joint < 0):
            raise ValueError("joint must hold probabilities (non-negative)")

    def displays(self) -> np.ndarray:
        """All ``(V+1)**3`` displays as a ``((V+1)**3, 3)`` array, in the table's order."""
        W = self.channel.vocab_size + 1
        return np.stack(np.unravel_index(np.arange(W**3), (W,) * 3), axis=1).astype(np.int64)

    def posterior(self, position: int) -> tuple[np.ndarray, np.ndarray]:
        """``(P(displays), P(x_i | display, i in M))``, flattened over displays; rows of
        zero-probability displays are left uniform and should be weighted by the first array."""
        table = self.joint[position].reshape(-1, self.channel.vocab_size)
        evidence = table.sum(axis=1)
        safe = np.where(evidence > 0, evidence, 1.0)[:, None]
        posterior = np.where(evidence[:, None] > 0, table / safe, 1.0 / self.channel.vocab_size)
        return evidence, posterior


def dense_posteriors(hmm, channel: Channel) -> DenseTable:
    r"""Every $P(x_i = y, \tilde x \mid i \in M)$ of a length-3 sentence, exactly, by summing over selection sets.

    Given the selection set $M$ and the sentence, positions show independently: a selected
    one through $S$, an unselected one its own token. Independent selection weighs each $M
    \ni i$ by $\rho^{|M|-1}(1-\rho)^{3-|M|}$; fixed-count selection weighs the
    $\binom{2}{k-1}$ sets of size $k$ containing $i$ equally.

    Parameters
    ----------
    hmm : HiddenMarkovLanguage
        The language.
    channel : Channel
        The channel; ``channel.selection`` picks the law.

    Returns
    -------
    DenseTable

    Examples
    --------
    >>> from mlm_book.hmm import default_hmm
    >>> table = dense_posteriors(default_hmm(), Channel(25))
    >>> round(float(table.joint[0].sum()), 12)
    1.0
    """
    if not isinstance(channel, Channel):
        raise TypeError(f"channel must be a Channel, got {type(channel).__name__}")
    length = 3
    joint = path_joint(hmm, length)
    V = channel.vocab_size
    if joint.shape[0] != V:
        raise ValueError(f"channel.vocab_size ({V}) must equal the HMM's vocabulary size ({joint.shape[0]})")
    u = channel.unigram
    selected_law = np.vstack([channel.keep * np.eye(V) + channel.random * u[:, None], np.full((1, V), channel.mask)])
    unselected_law = np.vstack([np.eye(V), np.zeros((1, V))])
    k = selection_count(length, channel.rho)
    out = np.zeros((length, V + 1, V + 1, V + 1, V))
    for i in range(length):
        for size in range(1, length + 1):
            for others in itertools.combinations([j for j in range(length) if j != i], size - 1):
                members = set(others) | {i}
                if channel.selection == "fixed":
                    weight = (1.0 / comb(length - 1, k - 1)) if size == k else 0.0
                else:
                    weight = channel.rho ** (size - 1) * (1.0 - channel.rho) ** (length - size)
                if weight == 0.0:
                    continue
                laws = [selected_law if j in members else unselected_law for j in range(length)]
                # table[d1, d2, d3, x_i] = sum_{x_-i} P(x) prod_j law_j[d_j, x_j]
                letters = "abc"
                spec = ",".join(f"{'def'[j]}{letters[j]}" for j in range(length))
                out[i] += weight * np.einsum(f"abc,{spec}->def{letters[i]}", joint, *laws, optimize=True)
    return DenseTable(joint=out, channel=channel)


def fixed_count_posterior_by_sets(hmm, channel: Channel, shown, position: int) -> np.ndarray:
    r"""$P(x_i = y \mid \tilde x, i \in M)$ under fixed-count selection, exactly, one forward–backward per selection set.

    The selection set is uniform over the sets of $k = \max(1, \operatorname{round}(\rho n))$
    positions. For each set $M \ni i$, the other positions are read through $S$ if selected
    and as clean tokens otherwise; forward–backward with position $i$ left unobserved gives
    $P(\tilde x_{-i} \mid M)$ and $P(x_i \mid \tilde x_{-i}, M)$, and position $i$'s display
    enters through $S(\tilde x_i \mid y)$. Sets that put a ``[MASK]`` outside $M$ are
    impossible and skipped.

    Parameters
    ----------
    hmm : HiddenMarkovLanguage
        The language.
    channel : Channel
        The channel (its ``selection`` is ignored: fixed-count is assumed).
    shown : array_like
        ``(B, n)`` displays, ids in ``[0, V]``.
    position : int
        $i$, the selected position.

    Returns
    -------
    numpy.ndarray
        ``(B, V)``.

    Raises
    ------
    ValueError
        If ``position`` is not a position of ``shown``, or a display cannot
        arise from a fixed-count selection containing ``position``.

    Examples
    --------
    >>> from mlm_book.hmm import default_hmm
    >>> q = fixed_count_posterior_by_sets(default_hmm(), Channel(25), [[3, 25, 7]], 1)
    >>> q.shape, round(float(q.sum()), 12)
    ((1, 25), 1.0)
    """
    transition, emission, initial, shown = _fixed_count_inputs(hmm, channel, shown, position)
    V = channel.vocab_size
    batch, length = shown.shape
    k = selection_count(length, channel.rho)
    S = np.vstack([channel.keep * np.eye(V) + channel.random * channel.unigram[:, None], np.full((1, V), channel.mask)])
    selected_like = S[shown] @ emission.T                             # (B, n, S) if selected
    clean_emission = np.vstack([emission.T, np.zeros((1, emission.shape[0]))])
    unselected_like = clean_emission[shown]                           # (B, n, S); [MASK] -> 0
    others = [j for j in range(length) if j != position]
    sets = [set(c) | {position} for c in itertools.combinations(others, k - 1)]
    likelihood = np.empty((batch, len(sets), length, emission.shape[0]))
    possible = np.ones((batch, len(sets)), dtype=bool)
    for index, members in enumerate(sets):
        for j in range(length):
            if j == position:
                likelihood[:, index, j] = 1.0
            elif j in members:
                likelihood[:, index, j] = selected_like[:, j]
            else:
                likelihood[:, index, j] = unselected_like[:, j]
                possible[:, index] &= shown[:, j] != V
    likelihood[~possible] = 1.0                                       # placeholder, weight 0 below
    result = forward_backward(transition, initial, likelihood.reshape(-1, length, emission.shape[0]))
    p_state = result.posterior.reshape(batch, len(sets), length, -1)[:, :, position]
    log_weight = np.where(possible, result.log_evidence.reshape(batch, len(sets)), -np.inf)
    if np.any(np.all(~possible, axis=1)):
        raise ValueError("shown has a display that no fixed-count selection set containing position can produce")
    weight = np.exp(log_weight - log_weight.max(axis=1, keepdims=True))
    p = np.einsum("bm,bms,sy->by", weight, p_state, emission)
    q = p * S[shown[:, position]]
    return q / q.sum(axis=1, keepdims=True)


def fixed_count_posterior(hmm, channel: Channel, shown, position: int) -> np.ndarray:
    r"""$P(x_i = y \mid \tilde x, i \in M)$ under fixed-count selection, exactly, by a count-augmented chain.

    A uniform selection set of size $k$ containing $i$ is the same as selecting each
    other position by a fair coin and conditioning on exactly $k - 1$ heads. So a
    forward–backward pass over pairs (hidden state, number of other positions selected so
    far) sums over all $\binom{n-1}{k-1}$ sets at once: an unselected position contributes
    $E_{s,\tilde x_j}$ (zero for ``[MASK]``), a selected one $\sum_y E_{sy} S(\tilde x_j \mid y)$
    and one more count, position $i$ contributes nothing until its display enters through
    $S(\tilde x_i \mid y)$. Cost $O(n k S^2)$ per sentence instead of one pass per set; it
    agrees with [`fixed_count_posterior_by_sets`][mlm_book.bruteforce.fixed_count_posterior_by_sets] to rounding.

    Parameters
    ----------
    hmm : HiddenMarkovLanguage
        The language.
    channel : Channel
        The channel (its ``selection`` is ignored: fixed-count is assumed).
    shown : array_like
        ``(B, n)`` displays, ids in ``[0, V]``.
    position : int
        $i$, the selected position.

    Returns
    -------
    numpy.ndarray
        ``(B, V)``.

    Raises
    ------
    ValueError
        If a display cannot arise from a fixed-count selection containing ``position``.

    Examples
    --------
    >>> from mlm_book.hmm import default_hmm
    >>> shown = [[3, 25, 7, 25, 1, 2]]
    >>> c = Channel(25, rho=0.4)
    >>> a = fixed_count_posterior(default_hmm(), c, shown, 1)
    >>> b = fixed_count_posterior_by_sets(default_hmm(), c, shown, 1)
    >>> float(np.abs(a - b).max()) < 1e-13
    True
    """
    transition, emission, initial, shown = _fixed_count_inputs(hmm, channel, shown, position)
    V = channel.vocab_size
    batch, length = shown.shape
    others = selection_count(length, channel.rho) - 1          # other positions to select
    S = np.vstack([channel.keep * np.eye(V) + channel.random * channel.unigram[:, None], np.full((1, V), channel.mask)])
    selected_like = S[shown] @ emission.T                             # (B, n, S)
    unselected_like = np.vstack([emission.T, np.zeros((1, emission.shape[0]))])[shown]

    def step(message, j):
        # message: (B, S, others + 1) over (state at j, count so far); apply position j
        if j == position:
            return message
        out = message * unselected_like[:, j, :, None]
        out[:, :, 1:] += message[:, :, :-1] * selected_like[:, j, :, None]
        return out

    def normalise(message):
        total = message.sum(axis=(1, 2), keepdims=True)
        if np.any(total <= 0):
            raise ValueError("shown has a display that no fixed-count selection set containing position can produce")
        return message / total

    alpha = np.zeros((batch, emission.shape[0], others + 1))
    alpha[:, :, 0] = initial
    alpha = normalise(step(alpha, 0))
    for j in range(1, position + 1):
        alpha = normalise(step(np.einsum("bsc,st->btc", alpha, transition), j))
    beta = np.zeros((batch, emission.shape[0], others + 1))
    beta[:, :, 0] = 1.0                                              # no more selections after the end
    for j in range(length - 1, position, -1):
        # beta over (state at j-1, selections still needed after j-1)
        incoming = beta * unselected_like[:, j, :, None]
        incoming[:, :, 1:] += beta[:, :, :-1] * selected_like[:, j, :, None]
        beta = normalise(np.einsum("st,btc->bsc", transition, incoming))
    state = np.einsum("bsc,bsc->bs", alpha, beta[:, :, ::-1])          # counts before + after = others
    if np.any(state.sum(axis=1) <= 0):
        raise ValueError("shown has a display that no fixed-count selection set containing position can produce")
    q = (state @ emission) * S[shown[:, position]]
    return q / q.sum(axis=1, keepdims=True)


@dataclass(frozen=True)
class FixedCountError:
    """How far Theorem 2's closed form is from the exact fixed-count posterior.

    Attributes
    ----------
    length : int
        Sentence length $n$.
    rho : float
        The channel's selection rate.
    count : int
        $k$, positions selected per sentence.
    rate : float
        The independent-selection rate the closed form was evaluated at.
    positions : int
        Number of selected positions compared.
    max_abs : float
        Largest $|q_{\\text{closed}}(y) - q_{\\text{fixed}}(y)|$ over positions and tokens.
    mean_kl : float
        Mean $\\operatorname{KL}(q_{\\text{fixed}} \\| q_{\\text{closed}})$, nats.
    max_kl : float
        Largest KL, nats.
    mean_entropy : float
        Mean entropy of $q_{\\text{fixed}}$, nats (for scale).

    Examples
    --------
    >>> error = FixedCountError(length=8, rho=0.25, count=2, rate=0.25, positions=40, max_abs=0.01,
    ...                         mean_kl=1e-4, max_kl=5e-4, mean_entropy=1.2)
    >>> error.mean_kl / error.mean_entropy < 1e-3       # small beside the posterior's own spread
    True
    """

    length: int
    rho: float
    count: int
    rate: float
    positions: int
    max_abs: float
    mean_kl: float
    max_kl: float
    mean_entropy: float

    def __post_init__(self):
        check_positive_int(self.length, "length")
        check_probability(self.rho, "rho")
        check_positive_int(self.count, "count")
        if self.count > self.length:
            raise ValueError(f"count must be at most length ({self.length}), got {self.count}")
        check_probability(self.rate, "rate")
        check_positive_int(self.positions, "positions")
        check_probability(self.max_abs, "max_abs")
        for name in ("mean_kl", "max_kl", "mean_entropy"):
            check_real(getattr(self, name), name, low=0.0)


def fixed_count_errors(hmm, channel: Channel, length: int, batch: int, rng: np.random.Generator,
                       rates=(None,)) -> tuple[FixedCountError, ...]:
    r"""Like [`fixed_count_error`][mlm_book.bruteforce.fixed_count_error] for several closed-form rates on the same sampled displays.

    Parameters
    ----------
    hmm : HiddenMarkovLanguage
        The language.
    channel : Channel
        The channel (rates and replacement; selection is taken as fixed-count).
    length : int
        Sentence length $n$.
    batch : int
        Number of sampled sentences.
    rng : numpy.random.Generator
        Source of randomness.
    rates : sequence of float or None
        Selection rates assumed by the closed form (``None``: the channel's $\rho$).

    Returns
    -------
    tuple of FixedCountError
        One per rate, in order.

    Raises
    ------
    ValueError
        If a rate is outside [0, 1] or the posterior tables of ``batch * length``
        displays exceed ``MAX_POSTERIOR_ENTRIES``.

    Examples
    --------
    >>> from mlm_book.hmm import default_hmm
    >>> nominal, matched = fixed_count_errors(default_hmm(), Channel(25), 5, 40,
    ...                                       np.random.default_rng(0), rates=(None, 0.0))
    >>> nominal.count, nominal.mean_kl > 1e-4, matched.max_abs < 1e-12   # k = 1: others are clean
    (1, True, True)
    """
    rates = check_sequence(rates, "rates")
    return _fixed_count_errors(hmm, channel, length, batch, rng, rates, [f"rates[{i}]" for i in range(len(rates))])


def _fixed_count_errors(hmm, channel, length, batch, rng, rates, names) -> tuple[FixedCountError, ...]:
    """[`fixed_count_errors`][mlm_book.bruteforce.fixed_count_errors], with each rate checked under the caller's name."""
    if not isinstance(channel, Channel):
        raise TypeError(f"channel must be a Channel, got {type(channel).__name__}")
    length = check_positive_int(length, "length")
    batch = check_positive_int(batch, "batch")
    rng = check_generator(rng)
    if not rates:
        raise ValueError("rates must hold at least one rate")
    rates = tuple(channel.rho if rate is None else check_probability(rate, name) for rate, name in zip(rates, names))
    check_table_size(batch * length, 1, MAX_POSTERIOR_ENTRIES,
                     f"posteriors of batch={batch} sentences of length={length} for {len(rates)} rate(s)",
                     factor=channel.vocab_size * (len(rates) + 1))
    fixed = Channel(channel.vocab_size, channel.rho, channel.mask, channel.random, "fixed", channel.replacement)
    closed_forms = [Channel(channel.vocab_size, rate, channel.mask, channel.random, "independent",
                            channel.replacement) for rate in rates]
    _, tokens = sample(hmm, batch, length, rng)
    corrupted = corrupt(fixed, tokens, rng)
    closed = np.empty((len(rates),) + corrupted.shown.shape + (fixed.vocab_size,))
    exact = np.empty(corrupted.shown.shape + (fixed.vocab_size,))
    for i in range(length):
        rows = corrupted.selected[:, i]
        if not rows.any():
            continue
        shown = corrupted.shown[rows]
        exact[rows, i] = fixed_count_posterior(hmm, fixed, shown, i)
        # p at i ignores what i shows; give i a token display so that a rate of 0 (the
        # matched rate when k = 1) does not make i's own [MASK] an impossible row.
        context = shown.copy()
        context[:, i] = tokens[rows, i]
        for index, independent in enumerate(closed_forms):
            p = context_prediction(hmm, independent, context)[:, i]
            closed[index, rows, i] = optimum(p, shown[:, i], independent)
    chosen = corrupted.selected
    exact_rows = exact[chosen]
    results = []
    for index, rate in enumerate(rates):
        closed_rows = closed[index][chosen]
        kl = kl_divergence(exact_rows, closed_rows)
        results.append(FixedCountError(length=length, rho=channel.rho, count=selection_count(length, channel.rho),
                                       rate=float(rate), positions=int(chosen.sum()),
                                       max_abs=float(np.abs(exact_rows - closed_rows).max()),
                                       mean_kl=float(kl.mean()), max_kl=float(kl.max()),
                                       mean_entropy=float(entropy(exact_rows).mean())))
    return tuple(results)


def fixed_count_error(hmm, channel: Channel, length: int, batch: int, rng: np.random.Generator,
                      rate: float | None = None) -> FixedCountError:
    r"""Error of Theorem 2's closed form when selection is BERT's fixed count (open question Q1).

    Samples ``batch`` sentences of ``length`` from the HMM, corrupts them with fixed-count
    selection, and compares at every selected position the exact fixed-count posterior
    ([`fixed_count_posterior`][mlm_book.bruteforce.fixed_count_posterior]) with Theorem 2's closed form under independent
    selection at ``rate`` (default: the channel's $\rho$). The comparison is exact per
    display; only the displays are a sample.

    Parameters
    ----------
    hmm : HiddenMarkovLanguage
        The language.
    channel : Channel
        The channel (rates and replacement; selection is taken as fixed-count).
    length : int
        Sentence length $n$.
    batch : int
        Number of sampled sentences.
    rng : numpy.random.Generator
        Source of randomness.
    rate : float, optional
        Selection rate assumed by the closed form.

    Returns
    -------
    FixedCountError

    Raises
    ------
    ValueError
        If ``rate`` is outside [0, 1] or the posterior tables of ``batch * length``
        displays exceed ``MAX_POSTERIOR_ENTRIES``.

    Examples
    --------
    >>> from mlm_book.hmm import default_hmm
    >>> e = fixed_count_error(default_hmm(), Channel(25), 4, 50, np.random.default_rng(0))
    >>> e.count, e.max_abs > 1e-3
    (1, True)
    """
    return _fixed_count_errors(hmm, channel, length, batch, rng, (rate,), ("rate",))[0]
