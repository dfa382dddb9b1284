r"""Left-to-right against bidirectional readers on the book's HMM, exactly: why the mask and not the next word.

A left-to-right (causal) language model predicts $x_i$ from the words before it,
$P(x_i \mid x_{<i})$. A masked LM predicts it from every other word,
$P(x_i \mid x_{-i})$. On the book's HMM language both conditionals are exact for any
context: forward filtering gives the first ([`left_to_right`][mlm_book.directions.left_to_right]),
and forward–backward's leave-one-out posterior gives the second
([`mlm_book.hmm.token_conditionals`][mlm_book.hmm.token_conditionals]). This module measures what each reader
faces at each position $i$ of a length-$n$ sentence:

* [`position_entropies`][mlm_book.directions.position_entropies]:
  $E_x H(x_i \mid x_{<i})$ and $E_x H(x_i \mid x_{-i})$, and the entropy of Theorem 2's
  optimum at a ``[MASK]`` when the other positions went through BERT's channel,
  $E H(x_i \mid \tilde x_{-i})$ ([`mlm_book.channel.context_prediction`][mlm_book.channel.context_prediction] and
  [`mlm_book.channel.optimum`][mlm_book.channel.optimum], reused). Each is the exact entropy of the
  conditional for each sampled context, averaged over sampled sentences (Monte Carlo over
  contexts only), with a standard error per position.
* [`sense_by_position`][mlm_book.directions.sense_by_position]: the
  exact accuracy of the best guess of the sense of $w$ from the left context alone,
  $E \max_k P(\text{sense } k \mid x_{\le i})$, and from both sides,
  $E \max_k P(\text{sense } k \mid x)$ (chapter 1's Bayes accuracy), by position.
* [`exact_directions`][mlm_book.directions.exact_directions]: the same
  entropies with no sampling at all, for $n \le 4$, from the enumerated joint
  ([`mlm_book.hmm.enumerate_joint`][mlm_book.hmm.enumerate_joint]) as differences of joint entropies;
  [`estimator_check`][mlm_book.directions.estimator_check] runs the
  Monte-Carlo estimator's per-sequence code on every enumerated sentence (or display) and
  compares its conditionals and its probability-weighted expectations with the enumeration.

Three exact facts are checked. The chain rule: per sentence,
$\sum_i -\log P(x_i \mid x_{<i}) = -\log P(x)$, so $\sum_i E H(x_i \mid x_{<i}) =
H(x_1, \dots, x_n)$: the left-to-right conditionals factorise the joint. The masked-LM
sum $\sum_i E H(x_i \mid x_{-i})$ (the *erasure entropy* of Verdú and Weissman, 2008)
factorises nothing and is smaller, because at every position $E H(x_i \mid x_{-i}) \le
E H(x_i \mid x_{<i})$: conditioning on more reduces entropy on average (not for every
context: for some sentences the bidirectional conditional is the flatter one). And at the
last position the two readers see the same words, so their conditionals are equal
sentence by sentence.

What the numbers show (they are computed, see the examples and the chapter): the gap
between the two readers is largest at the first position, where the left-to-right reader
has nothing to go on and the bidirectional one has the whole right context; it falls within
a few positions to a plateau through the middle, shrinks slightly near the end and is zero
at the last position. It is not symmetric: the bidirectional entropies are (by
stationarity, exactly in expectation) the same at the two edges, the left-to-right ones
are not. The same holds for the sense of $w$: from the left alone, an occurrence at the
first position is guessed no better than the static cap.

[`directions_results`][mlm_book.directions.directions_results] measures all of it for a
[`DirectionsConfig`][mlm_book.directions.DirectionsConfig]. Chapter 10 shows it
([`mlm_book.experiments.ch10_directions`][mlm_book.experiments.ch10_directions]) and compares its
span-masking optimum with it; its trained next-token readers are scored against
[`left_to_right`][mlm_book.directions.left_to_right].

Examples
--------
>>> import numpy as np
>>> from mlm_book.hmm import default_hmm
>>> exact = exact_directions(default_hmm(), 3)
>>> bool(np.all(exact.gap >= -1e-12)), bool(abs(exact.gap[-1]) < 1e-12)
(True, True)
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass, field

import numpy as np

from mlm_book.channel import (
    Channel,
    context_prediction,
    corrupt,
    observation_matrix,
    optimum,
)
from mlm_book.hmm import (
    MAX_ENUMERATION_ENTRIES,
    HiddenMarkovLanguage,
    HMMConfig,
    build_hmm,
    check_hmm,
    enumerate_joint,
    forward_backward,
    sample,
)
from mlm_book.pmi import static_cap
from mlm_book.scoring import entropy
from mlm_book.validation import (
    as_float_array,
    as_int_array,
    check_generator,
    check_instance,
    check_positive_int,
    check_probability,
    check_real,
    check_table_size,
    check_tokens,
)

__all__ = [
    "MAX_ENUMERATION_LENGTH",
    "MAX_LENGTH",
    "MAX_TOKENS",
    "DirectionsResults",
    "DirectionsConfig",
    "EstimatorCheck",
    "ExactDirections",
    "LeftToRight",
    "PositionEntropies",
    "SenseByPosition",
    "estimator_check",
    "exact_directions",
    "left_to_right",
    "position_entropies",
    "directions_results",
    "sense_by_position",
]

MAX_LENGTH = 1024
"""Longest sentence the sampled estimates accept (their recursions loop over positions in Python)."""
MAX_TOKENS = 2 * 10**6
"""Most tokens (``sequences * length``) one sampled estimate may draw, refused before sampling:
four times the book's sample, a few seconds of work."""
MAX_ENUMERATION_LENGTH = 4
r"""Longest sentence of the book's HMM that can be enumerated: $V^n S$ must stay within
``mlm_book.hmm.MAX_ENUMERATION_ENTRIES`` ($25^4 \cdot 8 \approx 3.1$ million entries; $n = 5$
would be 78 million)."""
#: Largest ``batch * length * max(S, V)`` float64 table [`left_to_right`][mlm_book.directions.left_to_right]
#: builds at once (2^26 entries: 512 MiB).
_MAX_TABLE_ENTRIES = 2**26
#: Tokens per chunk of the sampled estimates: bounds the (chunk, n, V) tables to about 26 MB.
_CHUNK_TOKENS = 2**17
#: Entropies are sums of ``-p log p`` of float64 rows: a row may sum to 1 + a few ulp.
_ROUNDING = 1e-12


# --------------------------------------------------------------------------------------
# Shared checks
# --------------------------------------------------------------------------------------


def _profile(value, name: str, length: int, *, low: float = -math.inf, high: float = math.inf) -> np.ndarray:
    """``value`` as a finite float64 array of shape ``(length,)`` within ``[low, high]``."""
    array = as_float_array(value, name, ndim=1)
    if array.shape != (length,):
        raise ValueError(f"{name} must have shape (length,) = ({length},), got {array.shape}")
    if array.size and (array.min() < low or array.max() > high):
        raise ValueError(f"{name} must lie in [{low}, {high}], got values from {array.min():.6g} to "
                         f"{array.max():.6g}")
    return array


def _check_length(length, name: str = "length", maximum: int = MAX_LENGTH) -> int:
    length = check_positive_int(length, name)
    if length > maximum:
        raise ValueError(f"{name} must be at most {maximum}, got {length}")
    return length


def _check_channel(channel, hmm: HiddenMarkovLanguage) -> Channel | None:
    """``None``, or a channel whose [MASK] can be shown and whose Theorem 2 is exact on ``hmm``."""
    if channel is None:
        return None
    check_instance(channel, "channel", Channel)
    if channel.vocab_size != hmm.vocab_size:
        raise ValueError(f"channel.vocab_size must equal the HMM's vocabulary size ({hmm.vocab_size}), "
                         f"got {channel.vocab_size}")
    if channel.selection != "independent":
        raise ValueError("channel must select positions independently (selection='independent'): "
                         "Theorem 2's posterior is exact only then")
    if channel.rho * channel.mask <= 0:
        raise ValueError(f"channel must be able to show [MASK] (rho * mask > 0), got rho={channel.rho}, "
                         f"mask={channel.mask}")
    return channel


def _check_sequence_count(sequences, length: int) -> int:
    # two sentences at least: the standard errors take sentences as the independent units
    sequences = check_positive_int(sequences, "sequences", minimum=2)
    if sequences * length > MAX_TOKENS:
        raise ValueError(f"sequences * length must be at most {MAX_TOKENS:,} tokens, got {sequences} * {length}")
    return sequences


def _mean_se(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Mean and standard error over axis 0 (independent rows)."""
    count = values.shape[0]
    return values.mean(axis=0), values.std(axis=0, ddof=1) / math.sqrt(count)


def _ratio_mean(sums: np.ndarray, counts: np.ndarray) -> tuple[float, float]:
    """Pooled mean of per-sentence ``sums`` over ``counts`` items, with the ratio estimator's
    standard error (sentences are the units: items of one sentence are correlated)."""
    total = float(counts.sum())
    mean = float(sums.sum()) / total
    units = len(sums)
    spread = float(((sums - mean * counts) ** 2).sum()) * units / (units - 1)
    return mean, math.sqrt(spread) / total


# --------------------------------------------------------------------------------------
# Configuration
# --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class DirectionsConfig:
    r"""The chapter's settings.

    Parameters
    ----------
    hmm : HMMConfig
        The HMM's named parameters (the book's by default).
    length : int
        Sentence length $n$ of the sampled estimates: 24, as in chapters 1 and 2.
    sequences : int
        Sampled sentences, chosen for the standard error wanted: at most 0.002 nats per
        position for each expected entropy and for the gap (the third decimal, and the gap of
        about 0.22 nats in the middle to 1 %), and at most 0.005 for each sense accuracy.
        Across sentences, the conditional entropy at one position has a standard deviation of
        at most about 0.26 nats (the gap and the bidirectional and [MASK] entropies, away from
        the edges), which asks for $(0.26 / 0.002)^2 \approx 17{,}000$ sentences. The shared
        token $w$ is about 18.5 % of tokens, and the sense accuracies spread by at most about
        0.20 (from the left, one step after the start), which asks for
        $(0.20 / 0.005)^2 / 0.185 \approx 8{,}600$. Hence 20,000, rounded up; the test suite
        checks both bounds on the realised standard errors.
    seed : int
        Seed of the generator of the sampled sentences and of their corruption.
    rho, mask, random : float
        BERT's channel for the [MASK] column: selection rate and [MASK]/random shares (the
        rest kept), replacements uniform over the $V$ tokens. ``rho * mask`` must be
        positive (the [MASK] must be showable).
    enumeration_lengths : tuple of int
        Lengths whose expected entropies are computed exactly by enumeration, each in
        ``[1, MAX_ENUMERATION_LENGTH]``.
    check_lengths : tuple of int
        Lengths at which [`directions_results`][mlm_book.directions.directions_results] runs
        [`estimator_check`][mlm_book.directions.estimator_check]. The check
        at $n = 4$ puts all $25^4 = 390{,}625$ sentences through the estimator (about 4 s,
        twice the rest of the chapter), so the book runs it at $n \le 3$ and the test suite
        at $n = 4$ too.

    Raises
    ------
    TypeError, ValueError
        If ``hmm`` is not an `HMMConfig`, a count is not a positive integer (``sequences``
        below 2, ``length`` above `MAX_LENGTH`, ``sequences * length`` above `MAX_TOKENS`),
        ``seed`` is negative, a rate is outside $[0, 1]$, ``mask + random > 1`` or
        ``rho * mask = 0``, or ``enumeration_lengths`` or ``check_lengths`` is not a
        non-empty tuple of lengths within ``MAX_ENUMERATION_LENGTH``.

    Examples
    --------
    >>> config = DirectionsConfig()
    >>> config.length, config.sequences, config.channel(25).rho
    (24, 20000, 0.15)
    >>> DirectionsConfig(enumeration_lengths=(2, 5))
    Traceback (most recent call last):
    ...
    ValueError: enumeration_lengths must hold lengths in [1, 4] (V^n S table entries), got 5
    """

    hmm: HMMConfig = field(default_factory=HMMConfig)
    length: int = 24
    sequences: int = 20_000
    seed: int = 909
    rho: float = 0.15
    mask: float = 0.8
    random: float = 0.1
    enumeration_lengths: tuple[int, ...] = (2, 3, 4)
    check_lengths: tuple[int, ...] = (2, 3)

    def __post_init__(self):
        check_instance(self.hmm, "hmm", HMMConfig)
        length = _check_length(self.length)
        _check_sequence_count(self.sequences, length)
        check_positive_int(self.seed, "seed", minimum=0)
        for name in ("rho", "mask", "random"):
            check_probability(getattr(self, name), name)
        if self.mask + self.random > 1.0 + 1e-12:
            raise ValueError(f"mask + random must be at most 1, got {self.mask} + {self.random}")
        if self.rho * self.mask <= 0:
            raise ValueError(f"rho * mask must be > 0 (the [MASK] must be showable), got rho={self.rho}, "
                             f"mask={self.mask}")
        for name in ("enumeration_lengths", "check_lengths"):
            lengths = getattr(self, name)
            # a tuple keeps the config hashable (directions_results() is memoised per config)
            if not isinstance(lengths, tuple) or not lengths:
                raise TypeError(f"{name} must be a non-empty tuple of integers, got {lengths!r:.60}")
            for n in lengths:
                check_positive_int(n, name)
                if n > MAX_ENUMERATION_LENGTH:
                    raise ValueError(f"{name} must hold lengths in [1, {MAX_ENUMERATION_LENGTH}] "
                                     f"(V^n S table entries), got {n}")

    def channel(self, vocab_size: int) -> Channel:
        """BERT's channel over ``vocab_size`` tokens with this config's rates (independent selection)."""
        return Channel(vocab_size, rho=self.rho, mask=self.mask, random=self.random)


# --------------------------------------------------------------------------------------
# The left-to-right reader: forward filtering
# --------------------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class LeftToRight:
    r"""Forward filtering of clean sentences: what a left-to-right reader knows at each position.

    Parameters
    ----------
    predicted : ndarray, shape (B, n, S)
        $P(z_i = s \mid x_{<i})$ (the prior $\pi$ at $i = 1$).
    filtered : ndarray, shape (B, n, S)
        $P(z_i = s \mid x_{\le i})$.
    conditionals : ndarray, shape (B, n, V)
        $P(x_i = v \mid x_{<i})$; rows sum to one.
    surprisal : ndarray, shape (B, n)
        $-\log P(x_i \mid x_{<i})$ of the token the sentence has, in nats.

    Raises
    ------
    TypeError, ValueError
        If an array is not numeric, not finite, of the wrong shape, negative, or (for
        ``conditionals``) its rows do not sum to one.

    Examples
    --------
    >>> from mlm_book.hmm import default_hmm
    >>> x = left_to_right(default_hmm(), [[0, 24, 1], [24, 24, 13]])
    >>> from dataclasses import fields
    >>> rebuilt = LeftToRight(**{f.name: getattr(x, f.name) for f in fields(x)})   # its fields are checked
    >>> rebuilt.conditionals.shape
    (2, 3, 25)
    """

    predicted: np.ndarray
    filtered: np.ndarray
    conditionals: np.ndarray
    surprisal: np.ndarray

    def __post_init__(self):
        predicted = as_float_array(self.predicted, "predicted", ndim=3)
        filtered = as_float_array(self.filtered, "filtered", ndim=3)
        conditionals = as_float_array(self.conditionals, "conditionals", ndim=3)
        surprisal = as_float_array(self.surprisal, "surprisal", ndim=2)
        if filtered.shape != predicted.shape:
            raise ValueError(f"filtered must have the shape of predicted {predicted.shape}, got {filtered.shape}")
        if conditionals.shape[:2] != predicted.shape[:2]:
            raise ValueError(f"conditionals must have shape (B, n, V) with (B, n) = {predicted.shape[:2]}, got "
                             f"{conditionals.shape}")
        if surprisal.shape != predicted.shape[:2]:
            raise ValueError(f"surprisal must have shape (B, n) = {predicted.shape[:2]}, got {surprisal.shape}")
        for name, array in (("predicted", predicted), ("filtered", filtered), ("conditionals", conditionals),
                            ("surprisal", surprisal)):
            if array.size and array.min() < 0:
                raise ValueError(f"{name} must be non-negative")
        if conditionals.size and np.max(np.abs(conditionals.sum(axis=-1) - 1.0)) > 1e-9:
            raise ValueError("conditionals must hold probability rows (summing to 1)")
        for name, array in (("predicted", predicted), ("filtered", filtered), ("conditionals", conditionals),
                            ("surprisal", surprisal)):
            object.__setattr__(self, name, array)

    @property
    def log_probability(self) -> np.ndarray:
        r"""$\log P(x) = \sum_i \log P(x_i \mid x_{<i})$ per sentence (the chain rule), shape (B,)."""
        return -self.surprisal.sum(axis=1)


def _check_batch(tokens, hmm: HiddenMarkovLanguage) -> np.ndarray:
    batch = check_tokens(tokens, "tokens", hmm.vocab_size, ndim=2)
    check_table_size(batch.shape[0] * batch.shape[1], 1, _MAX_TABLE_ENTRIES,
                     f"the (B, n, V) tables of tokens of shape {batch.shape}",
                     factor=max(hmm.n_states, hmm.vocab_size))
    return batch


def left_to_right(hmm: HiddenMarkovLanguage, tokens) -> LeftToRight:
    r"""Exact $P(x_i \mid x_{<i})$ at every position of clean sentences, by forward filtering.

    With $a_i(s) = P(z_i = s \mid x_{<i})$ ($a_1 = \pi$), the left-to-right conditional is
    $P(x_i = v \mid x_{<i}) = \sum_s a_i(s) E_{sv}$; then $a_i \ell_i$ normalised is
    $P(z_i \mid x_{\le i})$, and one step of $T$ gives $a_{i+1}$. The normaliser is
    $P(x_i \mid x_{<i})$ itself, kept as its logarithm, so $\log P(x)$ is a sum of logs
    and long sentences never underflow. Vectorised over the batch; the loop is over
    positions.

    Parameters
    ----------
    hmm : HiddenMarkovLanguage
        The language.
    tokens : array_like of int, shape (B, n)
        Clean sentences, token ids in ``[0, V)``.

    Returns
    -------
    LeftToRight

    Raises
    ------
    TypeError
        If ``hmm`` is not a `HiddenMarkovLanguage` or ``tokens`` does not hold integers.
    ValueError
        If ``tokens`` is not 2-D, is empty, holds ids outside the vocabulary, is too large
        for its ``(B, n, max(S, V))`` tables (2^26 entries), or holds a sentence of
        probability zero.

    Examples
    --------
    >>> import numpy as np
    >>> from mlm_book.hmm import default_hmm, forward_backward
    >>> hmm = default_hmm()
    >>> lr = left_to_right(hmm, [[0, 24, 1], [24, 24, 13]])
    >>> lr.conditionals.shape, bool(np.allclose(lr.conditionals[:, 0], hmm.initial @ hmm.emission))
    ((2, 3, 25), True)
    >>> fb = forward_backward(hmm.transition, hmm.initial, hmm.emission.T[np.array([[0, 24, 1], [24, 24, 13]])])
    >>> float(np.abs(lr.log_probability - fb.log_evidence).max()) < 1e-12   # the chain rule
    True
    """
    hmm = check_hmm(hmm)
    batch = _check_batch(tokens, hmm)
    count, length = batch.shape
    n_states = hmm.n_states
    likelihood = hmm.emission.T[batch]  # (B, n, S): P(x_i | z_i = s)
    predicted = np.empty((count, length, n_states))
    filtered = np.empty((count, length, n_states))
    surprisal = np.empty((count, length))
    a = np.broadcast_to(hmm.initial, (count, n_states))
    for i in range(length):
        predicted[:, i] = a
        joint = a * likelihood[:, i]
        total = joint.sum(axis=1)  # P(x_i | x_<i)
        if np.any(total <= 0):
            raise ValueError("tokens holds a sentence of probability zero under hmm")
        filtered[:, i] = joint / total[:, None]
        surprisal[:, i] = -np.log(total)
        a = filtered[:, i] @ hmm.transition
    return LeftToRight(predicted=predicted, filtered=filtered, conditionals=predicted @ hmm.emission,
                       surprisal=surprisal)


# --------------------------------------------------------------------------------------
# The estimator's per-sentence conditionals (shared by the sampled and enumerated checks)
# --------------------------------------------------------------------------------------


def _clean_conditionals(hmm: HiddenMarkovLanguage, tokens: np.ndarray):
    """Left-to-right filtering and forward–backward on the same clean sentences.

    Returns the ``LeftToRight``, $P(x_i \\mid x_{-i})$ ``(B, n, V)`` (what
    [`mlm_book.hmm.token_conditionals`][mlm_book.hmm.token_conditionals] computes), the smoothed sense masses
    ``(B, n, 2)`` (what [`mlm_book.hmm.sense_posteriors`][mlm_book.hmm.sense_posteriors] computes) and $\\log P(x)$ ``(B,)``.
    """
    left = left_to_right(hmm, tokens)
    smoothed = forward_backward(hmm.transition, hmm.initial, hmm.emission.T[tokens])
    both = smoothed.leave_one_out @ hmm.emission
    senses = smoothed.posterior[:, :, list(hmm.sense_states)]
    return left, both, senses, smoothed.log_evidence


def _mask_conditionals(hmm: HiddenMarkovLanguage, channel: Channel, shown: np.ndarray):
    """Theorem 2's optimum at a [MASK] in every position, the others as ``shown``: $q = p$ (2 (i)),
    with $p(y) = P(x_i = y \\mid \\tilde x_{-i})$ from [`mlm_book.channel.context_prediction`][mlm_book.channel.context_prediction]
    (which never reads $\\tilde x_i$). Also returns $p$, for the posterior at what $i$ really shows."""
    p = context_prediction(hmm, channel, shown)
    return optimum(p, np.full(shown.shape, channel.mask_id), channel), p


def _entropy(rows: np.ndarray) -> np.ndarray:
    return np.maximum(entropy(rows), 0.0)  # -p log p of a row summing to 1 + ulp can dip below 0


# --------------------------------------------------------------------------------------
# Sampled estimates
# --------------------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class PositionEntropies:
    r"""Expected entropy of each reader's exact conditional, by position, over sampled contexts.

    All entropies in nats; every array has shape ``(length,)``, index 0 is position 1.

    Parameters
    ----------
    length, sequences : int
        Sentence length $n$ and number of sampled sentences (the units of the standard errors).
    left, left_se : ndarray
        $E_x H(x_i \mid x_{<i})$ and its standard error.
    both, both_se : ndarray
        $E_x H(x_i \mid x_{-i})$ and its standard error.
    gap, gap_se : ndarray
        ``left - both``, with the standard error of the paired per-sentence differences.
    negative_gap_share : ndarray
        Share of sampled sentences whose *own* gap $H(P(\cdot \mid x_{<i})) - H(P(\cdot \mid
        x_{-i}))$ is negative: conditioning on more reduces entropy on average, not for every
        context.
    sequence_entropy, sequence_entropy_se : float
        Mean of $-\log P(x)$ over the sentences (an estimate of $H(x_1, \dots, x_n)$, which
        ``left.sum()`` estimates too, by the chain rule) and its standard error.
    chain_rule_error : float
        Largest $|\sum_i -\log P(x_i \mid x_{<i}) + \log P(x)|$ over the sampled sentences,
        with $\log P(x)$ from forward–backward (an independent pass).
    channel : Channel or None
        The channel of the [MASK] column, if any.
    mask, mask_se : ndarray or None
        $E H(x_i \mid \tilde x_{-i})$: the entropy of Theorem 2's optimum at a [MASK] at $i$
        when the other positions went through ``channel`` (one corruption per sentence).
    selected_entropy, selected_entropy_se : float or None
        Mean entropy of Theorem 2's exact posterior over the positions the channel selected,
        whatever they show ([MASK], a random token or their own): the quantity chapter 2
        reports for held-out sentences. Standard error by sentences.

    Raises
    ------
    TypeError, ValueError
        If a field is of the wrong kind, not finite, of the wrong shape, an entropy or
        standard error is negative, a share is outside $[0, 1]$, or the [MASK] fields are
        not given exactly when ``channel`` is.

    Examples
    --------
    Two positions over ten sentences, without the [MASK] column: position 1 has no left context (its
    entropy is the marginal one, the same in every sentence), and at the last position both readers
    see the same context, so the gap is zero there:

    >>> e = PositionEntropies(length=2, sequences=10, left=[2.80, 2.23], left_se=[0.0, 0.05],
    ...                       both=[2.17, 2.23], both_se=[0.04, 0.05], gap=[0.63, 0.0], gap_se=[0.03, 0.0],
    ...                       negative_gap_share=[0.1, 0.0], sequence_entropy=5.03, sequence_entropy_se=0.1,
    ...                       chain_rule_error=0.0)
    >>> e.positions.tolist(), round(e.total_left, 2), round(e.total_both, 2)    # joint and erasure entropies
    ([1, 2], 5.03, 4.4)
    >>> from dataclasses import replace
    >>> replace(e, negative_gap_share=[1.5, 0.0])
    Traceback (most recent call last):
    ...
    ValueError: negative_gap_share must lie in [0.0, 1.0], got values from 0 to 1.5
    """

    length: int
    sequences: int
    left: np.ndarray
    left_se: np.ndarray
    both: np.ndarray
    both_se: np.ndarray
    gap: np.ndarray
    gap_se: np.ndarray
    negative_gap_share: np.ndarray
    sequence_entropy: float
    sequence_entropy_se: float
    chain_rule_error: float
    channel: Channel | None = field(default=None, repr=False)
    mask: np.ndarray | None = None
    mask_se: np.ndarray | None = None
    selected_entropy: float | None = None
    selected_entropy_se: float | None = None

    def __post_init__(self):
        length = check_positive_int(self.length, "length")
        check_positive_int(self.sequences, "sequences", minimum=2)
        for name in ("left", "left_se", "both", "both_se", "gap_se"):
            object.__setattr__(self, name, _profile(getattr(self, name), name, length, low=0.0))
        object.__setattr__(self, "gap", _profile(self.gap, "gap", length))
        object.__setattr__(self, "negative_gap_share",
                           _profile(self.negative_gap_share, "negative_gap_share", length, low=0.0, high=1.0))
        for name in ("sequence_entropy", "sequence_entropy_se", "chain_rule_error"):
            check_real(getattr(self, name), name, low=0.0)
        if self.channel is not None:
            check_instance(self.channel, "channel", Channel)
        masked = ("mask", "mask_se", "selected_entropy", "selected_entropy_se")
        for name in masked:
            if (getattr(self, name) is None) != (self.channel is None):
                raise ValueError(f"{name} must be given exactly when channel is (channel is "
                                 f"{'None' if self.channel is None else 'given'})")
        if self.channel is not None:
            for name in ("mask", "mask_se"):
                object.__setattr__(self, name, _profile(getattr(self, name), name, length, low=0.0))
            for name in ("selected_entropy", "selected_entropy_se"):
                check_real(getattr(self, name), name, low=0.0)

    @property
    def positions(self) -> np.ndarray:
        """Positions ``1 .. n``, shape (n,)."""
        return np.arange(1, self.length + 1)

    @property
    def total_left(self) -> float:
        r"""$\sum_i E H(x_i \mid x_{<i})$: the joint entropy $H(x_1, \dots, x_n)$ (chain rule)."""
        return float(self.left.sum())

    @property
    def total_both(self) -> float:
        r"""$\sum_i E H(x_i \mid x_{-i})$: the erasure entropy, at most the joint entropy."""
        return float(self.both.sum())


@dataclass(frozen=True, eq=False)
class SenseByPosition:
    r"""Exact sense accuracy of the shared token $w$ from the left context and from both sides.

    Every array has shape ``(length,)``, index 0 is position 1; accuracies are expected
    accuracies of the Bayes guess given the sentence, $E \max_k P(\text{sense } k \mid
    \cdot)$, over the occurrences of $w$ at that position.

    Parameters
    ----------
    length, sequences : int
        Sentence length and number of sampled sentences.
    counts : ndarray of int
        Occurrences of $w$ at each position (at least two).
    left, left_se : ndarray
        From the left context and $w$ itself, $\max_k P(\text{sense } k \mid x_{\le i})$,
        and the standard errors (occurrences at one position are in different sentences,
        hence independent).
    both, both_se : ndarray
        From the whole sentence, $\max_k P(\text{sense } k \mid x)$.
    pooled_left, pooled_left_se, pooled_both, pooled_both_se : float
        Over all occurrences at all positions, with the ratio estimator's standard error
        (sentences as units); ``pooled_both`` is chapter 1's Bayes sense accuracy.
    cap : float
        The static cap $\max_k \pi_k$: the accuracy of any reader of one vector per type.

    Raises
    ------
    TypeError, ValueError
        If a field is of the wrong kind, not finite, of the wrong shape, an accuracy or the
        cap is outside $[0, 1]$, a standard error is negative, or a count is below 2.

    Examples
    --------
    Two positions, five occurrences of $w$: alone at position 1, $w$ is read at the static cap; the
    pooled accuracies weigh each position by its occurrences:

    >>> s = SenseByPosition(length=2, sequences=10, counts=[3, 2], left=[0.51, 0.84], left_se=[0.05, 0.1],
    ...                     both=[0.8, 0.84], both_se=[0.1, 0.1], pooled_left=0.64, pooled_left_se=0.05,
    ...                     pooled_both=0.82, pooled_both_se=0.05, cap=0.51)
    >>> s.n_occurrences, round(float(s.counts @ s.left) / s.n_occurrences, 2)
    (5, 0.64)
    >>> from dataclasses import replace
    >>> replace(s, counts=[3, 1])
    Traceback (most recent call last):
    ...
    ValueError: counts must be at least 2 at every position (a standard error needs two), got 1
    """

    length: int
    sequences: int
    counts: np.ndarray
    left: np.ndarray
    left_se: np.ndarray
    both: np.ndarray
    both_se: np.ndarray
    pooled_left: float
    pooled_left_se: float
    pooled_both: float
    pooled_both_se: float
    cap: float

    def __post_init__(self):
        length = check_positive_int(self.length, "length")
        check_positive_int(self.sequences, "sequences", minimum=2)
        counts = as_int_array(self.counts, "counts", ndim=1)
        if counts.shape != (length,):
            raise ValueError(f"counts must have shape (length,) = ({length},), got {counts.shape}")
        if counts.min() < 2:
            raise ValueError(f"counts must be at least 2 at every position (a standard error needs two), got "
                             f"{int(counts.min())}")
        object.__setattr__(self, "counts", counts)
        for name in ("left", "both"):
            object.__setattr__(self, name, _profile(getattr(self, name), name, length, low=0.0, high=1.0))
        for name in ("left_se", "both_se"):
            object.__setattr__(self, name, _profile(getattr(self, name), name, length, low=0.0))
        for name in ("pooled_left", "pooled_both", "cap"):
            check_real(getattr(self, name), name, low=0.0, high=1.0)
        for name in ("pooled_left_se", "pooled_both_se"):
            check_real(getattr(self, name), name, low=0.0)

    @property
    def n_occurrences(self) -> int:
        """Occurrences of $w$ at all positions."""
        return int(self.counts.sum())


def _chunks(sequences: int, length: int) -> list[slice]:
    per_chunk = max(1, _CHUNK_TOKENS // length)
    return [slice(start, min(start + per_chunk, sequences)) for start in range(0, sequences, per_chunk)]


def _sampled(hmm: HiddenMarkovLanguage, length: int, sequences: int, rng: np.random.Generator,
             channel: Channel | None) -> tuple[PositionEntropies, SenseByPosition | None]:
    """One pass over sampled sentences: the entropies and (if every position has two occurrences of
    $w$ or more) the sense accuracies. Every sentence is drawn before any corruption, so the
    sentences of a seed are the same with or without a channel."""
    chunks = _chunks(sequences, length)
    tokens = np.concatenate([sample(hmm, rows.stop - rows.start, length, rng)[1] for rows in chunks])
    corrupted = [] if channel is None else [corrupt(channel, tokens[rows], rng) for rows in chunks]
    h_left, h_both, sense_left, sense_both = (np.empty((sequences, length)) for _ in range(4))
    h_mask = np.empty((sequences, length))
    log_p = np.empty(sequences)
    selected_sums, selected_counts = np.zeros(sequences), np.zeros(sequences)
    chain = 0.0
    for k, rows in enumerate(chunks):
        left, both, senses, log_evidence = _clean_conditionals(hmm, tokens[rows])
        h_left[rows] = _entropy(left.conditionals)
        h_both[rows] = _entropy(both)
        log_p[rows] = log_evidence
        chain = max(chain, float(np.max(np.abs(left.log_probability - log_evidence))))
        sense_left[rows] = left.filtered[:, :, list(hmm.sense_states)].max(axis=2)
        sense_both[rows] = senses.max(axis=2)
        if channel is not None:
            batch = corrupted[k]
            at_mask, p = _mask_conditionals(hmm, channel, batch.shown)
            h_mask[rows] = _entropy(at_mask)
            # Theorem 2's posterior at what each selected position really shows (chapter 2's average)
            shown_entropy = _entropy(optimum(p, batch.shown, channel))
            selected_sums[rows] = np.where(batch.selected, shown_entropy, 0.0).sum(axis=1)
            selected_counts[rows] = batch.selected.sum(axis=1)
    left_mean, left_se = _mean_se(h_left)
    both_mean, both_se = _mean_se(h_both)
    gap_mean, gap_se = _mean_se(h_left - h_both)
    sequence_entropy, sequence_entropy_se = _mean_se(-log_p)
    masked = {}
    if channel is not None:
        if selected_counts.sum() == 0:
            raise ValueError(f"sequences must be enough for the channel to select a position; none of "
                             f"{sequences} sentences of length {length} had one (sample more)")
        mask_mean, mask_se = _mean_se(h_mask)
        selected_mean, selected_se = _ratio_mean(selected_sums, selected_counts)
        masked = {"channel": channel, "mask": mask_mean, "mask_se": mask_se, "selected_entropy": selected_mean,
                  "selected_entropy_se": selected_se}
    entropies = PositionEntropies(
        length=length, sequences=sequences, left=left_mean, left_se=left_se, both=both_mean, both_se=both_se,
        gap=gap_mean, gap_se=gap_se, negative_gap_share=(h_left - h_both < -_ROUNDING).mean(axis=0),
        sequence_entropy=float(sequence_entropy), sequence_entropy_se=float(sequence_entropy_se),
        chain_rule_error=chain, **masked)

    occurrences = tokens == hmm.shared_token
    counts = occurrences.sum(axis=0)
    if counts.min() < 2:
        return entropies, None
    by_position = {}
    for name, values in (("left", sense_left), ("both", sense_both)):
        mean = np.where(occurrences, values, 0.0).sum(axis=0) / counts
        spread = np.where(occurrences, (values - mean) ** 2, 0.0).sum(axis=0) / (counts - 1)
        pooled, pooled_se = _ratio_mean(np.where(occurrences, values, 0.0).sum(axis=1), occurrences.sum(axis=1))
        by_position.update({name: mean, f"{name}_se": np.sqrt(spread / counts), f"pooled_{name}": pooled,
                            f"pooled_{name}_se": pooled_se})
    senses = SenseByPosition(length=length, sequences=sequences, counts=counts, cap=static_cap(hmm), **by_position)
    return entropies, senses


def _check_sampling(hmm, length, sequences, rng, channel=None):
    hmm = check_hmm(hmm)
    length = _check_length(length)
    sequences = _check_sequence_count(sequences, length)
    rng = check_generator(rng, "rng")
    return hmm, length, sequences, rng, _check_channel(channel, hmm)


def position_entropies(hmm: HiddenMarkovLanguage, length: int, sequences: int, rng: np.random.Generator, *,
                       channel: Channel | None = None) -> PositionEntropies:
    r"""Expected entropy of the exact left-to-right, bidirectional and [MASK] conditionals, by position.

    Samples ``sequences`` stationary sentences of ``length`` tokens; for each, computes the
    exact conditional distribution of every position given its left context
    ([`left_to_right`][mlm_book.directions.left_to_right]) and given all the
    other positions (forward–backward's leave-one-out posterior), and, with a ``channel``,
    Theorem 2's optimum at a [MASK] at that position when the sentence went through the
    channel once; then averages the entropies of those distributions over the sentences.
    Only the contexts are sampled: given a context, each entropy is exact (a
    Rao–Blackwellised estimate, with less spread than the sampled $-\log P(x_i \mid \cdot)$).
    All sentences are drawn before any corruption, so a seed gives the same sentences with
    or without a channel (and the same as [`sense_by_position`][mlm_book.directions.sense_by_position]).

    Parameters
    ----------
    hmm : HiddenMarkovLanguage
        The language.
    length : int
        Sentence length $n$, at most `MAX_LENGTH`.
    sequences : int
        Number of sampled sentences, at least 2 (``sequences * length`` at most `MAX_TOKENS`).
    rng : numpy.random.Generator
        Source of the sentences and of their corruption.
    channel : Channel, optional
        The corruption channel of the [MASK] column (independent selection, the HMM's
        vocabulary, ``rho * mask > 0``); without one the [MASK] fields are ``None``.

    Returns
    -------
    PositionEntropies

    Raises
    ------
    TypeError
        If ``hmm``, ``rng`` or ``channel`` is of the wrong kind, or a count is not an integer.
    ValueError
        If ``length`` or ``sequences`` is out of range (checked before anything is
        sampled), or ``channel`` does not fit (vocabulary size, fixed-count selection, no
        [MASK]), or the channel selected no position in the whole sample.

    Examples
    --------
    >>> import numpy as np
    >>> from mlm_book.channel import Channel
    >>> from mlm_book.hmm import default_hmm
    >>> found = position_entropies(default_hmm(), 6, 300, np.random.default_rng(0), channel=Channel(25))
    >>> found.left.round(2)     # position 1 has no left context: the marginal entropy, the same for all
    array([2.8 , 2.21, 2.18, 2.18, 2.17, 2.17])
    >>> float(found.left_se[0]), float(abs(found.gap[-1])) < 1e-12   # the last position: both readers agree
    (0.0, True)
    >>> bool(np.all(found.gap[:-1] > 4 * found.gap_se[:-1])), found.chain_rule_error < 1e-12
    (True, True)
    """
    hmm, length, sequences, rng, channel = _check_sampling(hmm, length, sequences, rng, channel)
    return _sampled(hmm, length, sequences, rng, channel)[0]


def sense_by_position(hmm: HiddenMarkovLanguage, length: int, sequences: int,
                      rng: np.random.Generator) -> SenseByPosition:
    r"""Exact sense accuracy of $w$ by position, from the left context alone and from both sides.

    The sense of an occurrence of $w$ at position $i$ is its hidden state. A left-to-right
    reader's best guess is right with probability $\max_k P(\text{sense } k \mid x_{\le i})$
    (forward filtering; $w$ itself is part of what it reads); a bidirectional one's with
    $\max_k P(\text{sense } k \mid x)$ (forward–backward), chapter 1's Bayes accuracy. Both
    are averaged over the occurrences of $w$ at each position of the sampled sentences (the
    same sentences as [`position_entropies`][mlm_book.directions.position_entropies]
    draws for the same seed). At position 1 the left reader has only $w$: its accuracy is
    the static cap $\max_k \pi_k$ exactly; at the last position the two readers agree.

    Parameters
    ----------
    hmm : HiddenMarkovLanguage
        The language.
    length : int
        Sentence length, at most `MAX_LENGTH`.
    sequences : int
        Sampled sentences, at least 2 (``sequences * length`` at most `MAX_TOKENS`).
    rng : numpy.random.Generator
        Source of the sentences.

    Returns
    -------
    SenseByPosition

    Raises
    ------
    TypeError
        If ``hmm`` or ``rng`` is of the wrong kind, or a count is not an integer.
    ValueError
        If ``length`` or ``sequences`` is out of range, or the sample has fewer than two
        occurrences of $w$ at some position (``sequences`` too small).

    Examples
    --------
    >>> import numpy as np
    >>> from mlm_book.hmm import default_hmm
    >>> found = sense_by_position(default_hmm(), 5, 400, np.random.default_rng(1))
    >>> round(float(found.left[0]), 4) == round(found.cap, 4), float(found.left_se[0])   # w alone: the static cap
    (True, 0.0)
    >>> bool(found.left[-1] == found.both[-1]), bool(found.pooled_both > found.pooled_left > found.cap)
    (True, True)
    """
    hmm, length, sequences, rng, _ = _check_sampling(hmm, length, sequences, rng)
    senses = _sampled(hmm, length, sequences, rng, None)[1]
    if senses is None:
        raise ValueError(f"sequences must give at least two occurrences of the shared token at every position; "
                         f"{sequences} sentences of length {length} did not (sample more)")
    return senses


# --------------------------------------------------------------------------------------
# Exact values by enumeration
# --------------------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class ExactDirections:
    r"""The expected conditional entropies of short sentences, exactly, by enumeration (nats).

    Parameters
    ----------
    length : int
        Sentence length $n$.
    left : ndarray, shape (n,)
        $E H(x_i \mid x_{<i}) = H(x_{\le i}) - H(x_{<i})$.
    both : ndarray, shape (n,)
        $E H(x_i \mid x_{-i}) = H(x) - H(x_{-i})$.
    joint_entropy : float
        $H(x_1, \dots, x_n)$.
    channel : Channel or None
        The channel of the [MASK] column, if any.
    mask : ndarray, shape (n,), or None
        $E H(x_i \mid \tilde x_{-i}) = H(x_i, \tilde x_{-i}) - H(\tilde x_{-i})$, the other
        positions read through ``channel``'s per-position law.

    Raises
    ------
    TypeError, ValueError
        If a field is of the wrong kind, not finite, of the wrong shape or negative, or
        ``mask`` is not given exactly when ``channel`` is.

    Examples
    --------
    >>> from mlm_book.channel import Channel
    >>> from mlm_book.hmm import default_hmm
    >>> x = exact_directions(default_hmm(), 2, channel=Channel(25))
    >>> from dataclasses import fields
    >>> rebuilt = ExactDirections(**{f.name: getattr(x, f.name) for f in fields(x)})   # its fields are checked
    >>> rebuilt.left.round(4).tolist()
    [2.8034, 2.2272]
    """

    length: int
    left: np.ndarray
    both: np.ndarray
    joint_entropy: float
    channel: Channel | None = field(default=None, repr=False)
    mask: np.ndarray | None = None

    def __post_init__(self):
        length = check_positive_int(self.length, "length")
        for name in ("left", "both"):
            object.__setattr__(self, name, _profile(getattr(self, name), name, length, low=-_ROUNDING))
        check_real(self.joint_entropy, "joint_entropy", low=0.0)
        if self.channel is not None:
            check_instance(self.channel, "channel", Channel)
        if (self.mask is None) != (self.channel is None):
            raise ValueError("mask must be given exactly when channel is")
        if self.mask is not None:
            object.__setattr__(self, "mask", _profile(self.mask, "mask", length, low=-_ROUNDING))

    @property
    def gap(self) -> np.ndarray:
        r"""$E H(x_i \mid x_{<i}) - E H(x_i \mid x_{-i}) \ge 0$, shape (n,)."""
        return self.left - self.both


def _joint_entropy(table: np.ndarray) -> float:
    return float(_entropy(np.reshape(table, -1)))


def _all_sequences(base: int, count: int) -> np.ndarray:
    """Every sequence of ``count`` symbols in ``[0, base)``, shape (base**count, count), last varying fastest."""
    if count == 0:
        return np.zeros((1, 0), dtype=np.int64)
    return np.indices((base,) * count).reshape(count, -1).T.astype(np.int64)


def _display_table(joint: np.ndarray, observe: np.ndarray, position: int) -> np.ndarray:
    r"""$P(\tilde x_{-i}, x_i)$: the joint read through ``observe`` $(V+1, V)$ at every other position;
    shape ``(V+1,) * (n-1) + (V,)``."""
    length = joint.ndim
    letters = [chr(ord("a") + j) for j in range(length)]
    shown = [chr(ord("A") + j) for j in range(length)]
    specs = ["".join(letters)] + [shown[j] + letters[j] for j in range(length) if j != position]
    output = "".join(shown[j] for j in range(length) if j != position) + letters[position]
    return np.einsum(",".join(specs) + "->" + output, joint, *[observe] * (length - 1), optimize=True)


def _enumeration_inputs(hmm, length, channel):
    hmm = check_hmm(hmm)
    length = check_positive_int(length, "length")
    channel = _check_channel(channel, hmm)
    V = hmm.vocab_size
    check_table_size(V, length, MAX_ENUMERATION_ENTRIES, f"enumerating every sequence of length {length}",
                     factor=hmm.n_states)
    if channel is not None:
        check_table_size(V + 1, length - 1, MAX_ENUMERATION_ENTRIES,
                         f"every display of the other positions of a sentence of length {length}", factor=V)
    return hmm, length, channel


def exact_directions(hmm: HiddenMarkovLanguage, length: int, *, channel: Channel | None = None) -> ExactDirections:
    r"""$E H(x_i \mid x_{<i})$, $E H(x_i \mid x_{-i})$ and $E H(x_i \mid \tilde x_{-i})$ of short sentences, with no sampling.

    From the enumerated joint $P(x_1, \dots, x_n)$ ([`mlm_book.hmm.enumerate_joint`][mlm_book.hmm.enumerate_joint]), as
    differences of joint entropies of its marginals: $H(x_{\le i}) - H(x_{<i})$ and
    $H(x) - H(x_{-i})$; no conditional distribution of a particular context is formed. With
    a channel, every other position is read through its per-position law
    ([`mlm_book.channel.observation_matrix`][mlm_book.channel.observation_matrix]) and the table
    $P(x_i, \tilde x_{-i})$ gives $H(x_i, \tilde x_{-i}) - H(\tilde x_{-i})$.

    Parameters
    ----------
    hmm : HiddenMarkovLanguage
        The language.
    length : int
        Sentence length $n \ge 1$ with $V^n S$ at most
        ``mlm_book.hmm.MAX_ENUMERATION_ENTRIES`` ($n \le 4$ for the book's HMM).
    channel : Channel, optional
        The channel of the [MASK] column (as for
        [`position_entropies`][mlm_book.directions.position_entropies]).

    Returns
    -------
    ExactDirections

    Raises
    ------
    TypeError
        If ``hmm`` or ``channel`` is of the wrong kind or ``length`` not an integer.
    ValueError
        If ``length`` is below 1 or its tables too large (refused before they are built), or
        ``channel`` does not fit.

    Examples
    --------
    >>> from mlm_book.channel import Channel
    >>> from mlm_book.hmm import default_hmm
    >>> exact = exact_directions(default_hmm(), 2, channel=Channel(25))
    >>> exact.left.round(4), exact.both.round(4)     # n = 2: the first position gains the whole right context
    (array([2.8034, 2.2272]), array([2.2272, 2.2272]))
    >>> round(float(exact.left.sum() - exact.joint_entropy), 12)   # the chain rule
    0.0
    >>> bool(exact.both[0] < exact.mask[0] < exact.left[0])        # the channel blurs the right neighbour
    True
    """
    hmm, length, channel = _enumeration_inputs(hmm, length, channel)
    joint = enumerate_joint(hmm, length)
    prefix = [0.0] + [_joint_entropy(joint.sum(axis=tuple(range(k, length)))) for k in range(1, length + 1)]
    whole = prefix[-1]
    left = np.diff(prefix)
    both = np.array([whole - _joint_entropy(joint.sum(axis=i)) for i in range(length)])
    mask = None
    if channel is not None:
        observe = observation_matrix(channel)
        mask = np.empty(length)
        for i in range(length):
            table = _display_table(joint, observe, i)
            mask[i] = _joint_entropy(table) - _joint_entropy(table.sum(axis=-1))
    return ExactDirections(length=length, left=left, both=both, joint_entropy=whole, channel=channel, mask=mask)


@dataclass(frozen=True, eq=False)
class EstimatorCheck:
    r"""The sampled estimator's code against the enumeration, on every sentence of one length.

    Parameters
    ----------
    length : int
        Sentence length $n$.
    left_conditional_error, both_conditional_error : float
        Largest absolute difference, over every sentence, position and token, between the
        estimator's $P(x_i = v \mid x_{<i})$ (forward filtering) or $P(x_i = v \mid x_{-i})$
        (forward–backward) and the same conditional read off the enumerated joint.
    chain_rule_error : float
        Largest $|\sum_i -\log P(x_i \mid x_{<i}) + \log P(x)|$ over every sentence, with
        $P(x)$ the enumerated joint.
    left_expectation_error, both_expectation_error : float
        Largest difference over positions between the estimator's per-sentence entropies
        weighted by each sentence's exact probability (instead of sampled) and
        [`exact_directions`][mlm_book.directions.exact_directions].
    mask_conditional_error, mask_expectation_error : float or None
        The same for the [MASK] column, over every display of the other positions.

    Raises
    ------
    TypeError, ValueError
        If a field is of the wrong kind, not finite or negative, or the two [MASK] fields
        are not both given or both ``None``.

    Examples
    --------
    >>> from mlm_book.channel import Channel
    >>> from mlm_book.hmm import default_hmm
    >>> x = estimator_check(default_hmm(), 2, channel=Channel(25))
    >>> from dataclasses import fields
    >>> rebuilt = EstimatorCheck(**{f.name: getattr(x, f.name) for f in fields(x)})   # its fields are checked
    >>> rebuilt.worst < 1e-12
    True
    """

    length: int
    left_conditional_error: float
    both_conditional_error: float
    chain_rule_error: float
    left_expectation_error: float
    both_expectation_error: float
    mask_conditional_error: float | None = None
    mask_expectation_error: float | None = None

    def __post_init__(self):
        check_positive_int(self.length, "length")
        for name in ("left_conditional_error", "both_conditional_error", "chain_rule_error",
                     "left_expectation_error", "both_expectation_error"):
            check_real(getattr(self, name), name, low=0.0)
        if (self.mask_conditional_error is None) != (self.mask_expectation_error is None):
            raise ValueError("mask_conditional_error and mask_expectation_error must both be given or both None")
        for name in ("mask_conditional_error", "mask_expectation_error"):
            if getattr(self, name) is not None:
                check_real(getattr(self, name), name, low=0.0)

    @property
    def worst(self) -> float:
        """The largest of all the differences."""
        values = [self.left_conditional_error, self.both_conditional_error, self.chain_rule_error,
                  self.left_expectation_error, self.both_expectation_error]
        values += [value for value in (self.mask_conditional_error, self.mask_expectation_error) if value is not None]
        return max(values)


#: Rows of the enumerated sentences (or displays) the check runs the estimator on at once.
_CHECK_ROWS = 2**14


def estimator_check(hmm: HiddenMarkovLanguage, length: int, *, channel: Channel | None = None) -> EstimatorCheck:
    r"""Run the sampled estimator's per-sentence code on every sentence of a short length.

    Every one of the $V^n$ sentences goes through the code
    [`position_entropies`][mlm_book.directions.position_entropies] runs on a
    sampled one. Its conditionals are compared with those of the enumerated joint, its
    $\log P(x)$ (the chain rule's sum) with the joint's, and its per-sentence entropies,
    weighted by each sentence's exact probability instead of being sampled, with the
    expectations of [`exact_directions`][mlm_book.directions.exact_directions]
    (computed from joint entropies, without conditionals). With a channel, the [MASK]
    column is run on every display $\tilde x_{-i}$ of the other positions ($(V+1)^{n-1}$ of
    them, ``[MASK]`` at $i$) and weighted by its probability. Every difference is at
    rounding level.

    Parameters
    ----------
    hmm : HiddenMarkovLanguage
        The language.
    length : int
        Sentence length, as for [`exact_directions`][mlm_book.directions.exact_directions].
    channel : Channel, optional
        The channel of the [MASK] column.

    Returns
    -------
    EstimatorCheck

    Raises
    ------
    TypeError, ValueError
        As [`exact_directions`][mlm_book.directions.exact_directions].

    Examples
    --------
    >>> from mlm_book.channel import Channel
    >>> from mlm_book.hmm import default_hmm
    >>> estimator_check(default_hmm(), 2, channel=Channel(25)).worst < 1e-12
    True
    """
    hmm, length, channel = _enumeration_inputs(hmm, length, channel)
    exact = exact_directions(hmm, length, channel=channel)
    joint = enumerate_joint(hmm, length)
    V = hmm.vocab_size
    # P(x_i | x_<i) as tables over x_<=i, and P(x_i | x_-i) with x_i moved last
    prefix = [joint.sum(axis=tuple(range(i + 1, length))) for i in range(length)]
    left_tables = [table / table.sum(axis=-1, keepdims=True) for table in prefix]
    both_tables = [np.moveaxis(joint / joint.sum(axis=i, keepdims=True), i, -1) for i in range(length)]
    errors = {"left": 0.0, "both": 0.0, "chain": 0.0}
    weighted = {"left": np.zeros(length), "both": np.zeros(length)}
    sentences = _all_sequences(V, length)
    for start in range(0, len(sentences), _CHECK_ROWS):
        part = sentences[start:start + _CHECK_ROWS]
        left, both, _, _ = _clean_conditionals(hmm, part)
        probability = joint[tuple(part.T)]
        for i in range(length):
            exact_left = left_tables[i][tuple(part[:, :i].T)]
            exact_both = both_tables[i][tuple(np.delete(part, i, axis=1).T)]
            errors["left"] = max(errors["left"], float(np.abs(left.conditionals[:, i] - exact_left).max()))
            errors["both"] = max(errors["both"], float(np.abs(both[:, i] - exact_both).max()))
        errors["chain"] = max(errors["chain"], float(np.abs(left.log_probability - np.log(probability)).max()))
        weighted["left"] += probability @ _entropy(left.conditionals)
        weighted["both"] += probability @ _entropy(both)
    masked = {}
    if channel is not None:
        observe = observation_matrix(channel)
        mask_error, mask_weighted = 0.0, np.zeros(length)
        for i in range(length):
            table = _display_table(joint, observe, i).reshape(-1, V)  # (displays of x_-i, x_i)
            evidence = table.sum(axis=1)
            conditional = table / evidence[:, None]
            displays = _all_sequences(V + 1, length - 1)
            for start in range(0, len(displays), _CHECK_ROWS):
                rows = slice(start, start + _CHECK_ROWS)
                shown = np.insert(displays[rows], i, channel.mask_id, axis=1)
                at_mask = _mask_conditionals(hmm, channel, shown)[0][:, i]
                mask_error = max(mask_error, float(np.abs(at_mask - conditional[rows]).max()))
                mask_weighted[i] += evidence[rows] @ _entropy(at_mask)
        masked = {"mask_conditional_error": mask_error,
                  "mask_expectation_error": float(np.abs(mask_weighted - exact.mask).max())}
    return EstimatorCheck(length=length, left_conditional_error=errors["left"],
                          both_conditional_error=errors["both"], chain_rule_error=errors["chain"],
                          left_expectation_error=float(np.abs(weighted["left"] - exact.left).max()),
                          both_expectation_error=float(np.abs(weighted["both"] - exact.both).max()), **masked)


# --------------------------------------------------------------------------------------
# Everything, for one config
# --------------------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class DirectionsResults:
    """What the two readers face on the HMM, sampled and enumerated, with the config that made it (chapter 10 shows it).

    Parameters
    ----------
    config : DirectionsConfig
        The settings.
    hmm : HiddenMarkovLanguage
        The language built from ``config.hmm``.
    entropies : PositionEntropies
        The sampled expected entropies by position, with BERT's channel.
    senses : SenseByPosition
        The sense accuracies of $w$ by position, on the same sentences.
    exact : tuple of ExactDirections
        The enumerated expectations, one per ``config.enumeration_lengths``.
    checks : tuple of EstimatorCheck
        The estimator against the enumeration, one per ``config.check_lengths``.

    Raises
    ------
    TypeError, ValueError
        If a field is of the wrong kind, or does not match ``config`` (lengths, sample size,
        a missing [MASK] column).

    Examples
    --------
    The parts of a small config's results put together again (the chapter's come from
    [`directions_results`][mlm_book.directions.directions_results]); they must be measured on the config's sample:

    >>> config = DirectionsConfig(length=4, sequences=400, enumeration_lengths=(2,), check_lengths=(2,))
    >>> r = directions_results(config)
    >>> again = DirectionsResults(config, r.hmm, r.entropies, r.senses, r.exact, r.checks)
    >>> again.senses.counts.tolist(), [item.length for item in again.exact]     # w at each position; enumerated
    ([66, 77, 74, 75], [2])
    >>> from dataclasses import replace
    >>> DirectionsResults(replace(config, sequences=500), r.hmm, r.entropies, r.senses, r.exact, r.checks)
    Traceback (most recent call last):
    ...
    ValueError: entropies must be measured on config's 500 sentences of length 4, got 400 of length 4
    """

    config: DirectionsConfig
    hmm: HiddenMarkovLanguage
    entropies: PositionEntropies
    senses: SenseByPosition
    exact: tuple[ExactDirections, ...]
    checks: tuple[EstimatorCheck, ...]

    def __post_init__(self):
        config = check_instance(self.config, "config", DirectionsConfig)
        check_hmm(self.hmm)
        for name, kind in (("entropies", PositionEntropies), ("senses", SenseByPosition)):
            found = check_instance(getattr(self, name), name, kind)
            if (found.length, found.sequences) != (config.length, config.sequences):
                raise ValueError(f"{name} must be measured on config's {config.sequences} sentences of length "
                                 f"{config.length}, got {found.sequences} of length {found.length}")
        if self.entropies.channel is None:
            raise ValueError("entropies must carry the [MASK] column (a channel)")
        for name, kind, lengths in (("exact", ExactDirections, config.enumeration_lengths),
                                    ("checks", EstimatorCheck, config.check_lengths)):
            value = getattr(self, name)
            if not isinstance(value, tuple):
                raise TypeError(f"{name} must be a tuple of {kind.__name__}, got {type(value).__name__}")
            for item in value:
                check_instance(item, name, kind)
            if tuple(item.length for item in value) != lengths:
                raise ValueError(f"{name} must hold one result per length {lengths} of config, got lengths "
                                 f"{tuple(item.length for item in value)}")


@functools.cache
def _results(config: DirectionsConfig) -> DirectionsResults:
    hmm = build_hmm(config.hmm)
    channel = config.channel(hmm.vocab_size)
    entropies, senses = _sampled(hmm, config.length, config.sequences, np.random.default_rng(config.seed), channel)
    if senses is None:
        raise ValueError(f"config.sequences ({config.sequences}) must give at least two occurrences of the shared "
                         f"token at every position (sample more)")
    return DirectionsResults(
        config=config, hmm=hmm, entropies=entropies, senses=senses,
        exact=tuple(exact_directions(hmm, n, channel=channel) for n in config.enumeration_lengths),
        checks=tuple(estimator_check(hmm, n, channel=channel) for n in config.check_lengths))


def directions_results(config: DirectionsConfig | None = None) -> DirectionsResults:
    """Measure (once per config) what the left-to-right and the bidirectional reader face: everything the exact part of chapter 10 shows.

    Nothing is cached on disk: the book's config takes about 2 s on one core (20,000
    sampled sentences of 24 tokens through three exact readers, the enumerations of
    lengths 2 to 4, and the estimator checks at lengths 2 and 3).

    Parameters
    ----------
    config : DirectionsConfig, optional
        Defaults to ``DirectionsConfig()``.

    Returns
    -------
    DirectionsResults

    Raises
    ------
    TypeError
        If ``config`` is not a `DirectionsConfig` (or ``None``).
    ValueError
        If the sample has fewer than two occurrences of $w$ at some position.

    Examples
    --------
    >>> r = directions_results()
    >>> e = r.entropies
    >>> round(float(e.left[0]), 3), round(float(e.left[-1] - e.both[-1]), 12)   # marginal entropy; last: equal
    (2.803, 0.0)
    >>> float(e.left_se.max()) < 0.002 and float(e.gap_se.max()) < 0.002 and float(e.mask_se.max()) < 0.002
    True
    >>> round(float(r.senses.left[0]), 3), round(r.senses.cap, 3)   # w alone: the static cap
    (0.509, 0.509)
    >>> max(check.worst for check in r.checks) < 1e-10
    True
    """
    if config is None:
        config = DirectionsConfig()
    check_instance(config, "config", DirectionsConfig)
    return _results(config)
