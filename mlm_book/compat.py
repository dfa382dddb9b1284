r"""Do a family of conditionals come from one joint? Brook's lemma and the four-cycle test.

A *family of conditionals* is any callable

``conditional(tokens, positions) -> probabilities``

that takes token sequences ``tokens`` of shape ``(B, n)`` and one position per sequence,
``positions`` of shape ``(B,)``, and returns ``(B, V)``: row $b$ is the family's
distribution $q_i(\cdot \mid x_{-i})$ of the token at ``positions[b]`` given the rest of
``tokens[b]``. The family decides what it reads at position $i$ itself: exact full
conditionals ignore it, and a masked LM wants a ``[MASK]`` there. Functions that take a
family accept ``mask_id``: when it is given they write that id at the queried position
before every call, so an encoder can be passed as it is. [`from_all_positions`][mlm_book.compat.from_all_positions] turns a
function returning all positions at once, ``(B, n, V)``, into a family.

**Brook's lemma** (Theorem 4). For a positive joint $p$ and sequences $x, y$,

$$\frac{p(x)}{p(y)} = \prod_{i=1}^{n} \frac{p(x_i \mid x_{<i}, y_{>i})}{p(y_i \mid x_{<i}, y_{>i})}.$$

[`brook_log_ratio`][mlm_book.compat.brook_log_ratio] evaluates the right side for any family and
[`rebuild_joint`][mlm_book.compat.rebuild_joint] rebuilds a whole joint table from it.

**The four-cycle test** (Corollary 2). For positions $i \ne j$, the rest fixed, and values
$a, a'$ at $i$ and $b, b'$ at $j$,

$$\delta = \Bigl[\log\tfrac{q_i(a\mid b)}{q_i(a'\mid b)} + \log\tfrac{q_j(b\mid a')}{q_j(b'\mid a')}\Bigr]
         - \Bigl[\log\tfrac{q_j(b\mid a)}{q_j(b'\mid a)} + \log\tfrac{q_i(a\mid b')}{q_i(a'\mid b')}\Bigr]$$

is zero for the conditionals of any positive joint: [`four_cycle_gap`][mlm_book.compat.four_cycle_gap].
[`four_cycle_protocol`][mlm_book.compat.four_cycle_protocol] runs the book's protocol (random HMM sequences, an adjacent
pair of positions, the two likeliest values at each) on any family.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from mlm_book.channel import Channel, exact_posterior
from mlm_book.hmm import MAX_SAMPLE_ENTRIES, HiddenMarkovLanguage, check_hmm, token_conditionals
from mlm_book.hmm import sample as sample_hmm
from mlm_book.validation import (
    SUM_TOLERANCE,
    as_float_array,
    as_int_array,
    check_bool,
    check_generator,
    check_positive_float,
    check_positive_int,
    check_table_size,
)

__all__ = [
    "ConditionalFamily",
    "query",
    "from_all_positions",
    "joint_conditionals",
    "hmm_conditionals",
    "population_optimum_conditionals",
    "brook_log_ratio",
    "rebuild_joint",
    "four_cycle_gap",
    "FourCycleDraws",
    "choose_four_cycles",
    "hmm_four_cycle_draws",
    "four_cycle_protocol",
    "random_positive_joint",
]

MAX_TABLE_ENTRIES = 2**25
"""Largest joint table (``V**n`` entries) the module builds: 256 MB of float64."""

#: ``conditional(tokens (B, n) int, positions (B,) int) -> (B, V)`` probabilities.
ConditionalFamily = Callable[[np.ndarray, np.ndarray], np.ndarray]


def _check_family(conditional, name: str = "conditional") -> ConditionalFamily:
    if not callable(conditional):
        raise TypeError(f"{name} must be callable (tokens, positions) -> (B, V), got {type(conditional).__name__}")
    return conditional


def _check_mask_id(mask_id) -> int | None:
    return None if mask_id is None else check_positive_int(mask_id, "mask_id", minimum=0)


def _per_row(value, name: str, batch: int) -> np.ndarray:
    """``value`` as ``(batch,)`` int64: a scalar is broadcast, anything else must have that shape."""
    array = as_int_array(value, name)
    if array.ndim > 1 or (array.ndim == 1 and array.shape[0] not in (1, batch)):
        raise ValueError(f"{name} must be an int or have shape ({batch},) (one per row), got shape {array.shape}")
    return np.broadcast_to(array, (batch,)).copy()


def _table_what(vocab_size: int, length: int) -> str:
    return f"a joint table of vocab_size**length = {vocab_size}**{length} sequences"


def _check_sequences(tokens, name: str) -> np.ndarray:
    tokens = as_int_array(tokens, name, ndim=2)
    if tokens.shape[0] == 0:
        raise ValueError(f"{name} must hold at least one sequence, got shape {tokens.shape}")
    if tokens.shape[1] < 2:
        raise ValueError(f"{name} must have length n >= 2, got shape {tokens.shape}")
    if tokens.min() < 0:
        raise ValueError(f"{name} must hold non-negative token ids")
    return tokens


def query(conditional: ConditionalFamily, tokens, positions, *, mask_id: int | None = None) -> np.ndarray:
    r"""Call a family once and check its answer: ``(B, V)`` probability vectors.

    Parameters
    ----------
    conditional : callable
        The family (see the module docstring).
    tokens : array_like of int
        ``(B, n)`` sequences.
    positions : array_like of int
        ``(B,)`` queried positions (a scalar is broadcast).
    mask_id : int, optional
        If given, written at each queried position before the call.

    Returns
    -------
    numpy.ndarray
        ``(B, V)``.

    Raises
    ------
    TypeError
        If ``mask_id`` is not an integer or ``positions`` not integers.
    ValueError
        If ``positions`` is neither a scalar nor of shape ``(B,)``.
    ValueError
        If the answer has the wrong shape, or its rows are not probability vectors
        (the message names ``conditional``).

    Examples
    --------
    >>> uniform = lambda tokens, positions: [[1 / 3] * 3] * len(tokens)
    >>> query(uniform, [[0, 1], [2, 2]], 0).shape
    (2, 3)
    >>> query(lambda t, p: [[0.5] * 3] * len(t), [[0, 1]], 0)
    Traceback (most recent call last):
    ...
    ValueError: conditional must return probability vectors: rows sum to 1 within 1e-09, largest deviation 0.5
    """
    return _query(conditional, tokens, positions, mask_id, "tokens")


def _query(conditional, tokens, positions, mask_id, name: str) -> np.ndarray:
    """[`query`][mlm_book.compat.query]; ``name`` is the caller's argument the sequences were built from."""
    conditional = _check_family(conditional)
    tokens = _check_sequences(tokens, "tokens")
    positions = _per_row(positions, "positions", tokens.shape[0])
    mask_id = _check_mask_id(mask_id)
    if positions.min() < 0 or positions.max() >= tokens.shape[1]:
        raise ValueError(f"positions must lie in [0, {tokens.shape[1]}), got {positions.min()} to {positions.max()}")
    if mask_id is not None:
        tokens = tokens.copy()
        tokens[np.arange(len(tokens)), positions] = mask_id
    try:
        answer = np.asarray(conditional(tokens, positions), dtype=np.float64)
    except (TypeError, ValueError) as error:
        if name == "tokens":
            raise
        # the family only sees the rows built here: say which argument they came from
        raise (TypeError if isinstance(error, TypeError) else ValueError)(f"conditional refused the sequences built from {name}: {error}") from error
    if answer.ndim != 2 or answer.shape[0] != tokens.shape[0]:
        raise ValueError(f"conditional must return shape (B, V) = ({tokens.shape[0]}, V), got {answer.shape}")
    context = tokens.copy()
    context[np.arange(len(context)), positions] = 0  # the queried position may show [MASK]
    if context.max() >= answer.shape[1]:
        raise ValueError(f"{name} must be ids in [0, V) = [0, {answer.shape[1]}) away from the queried position, "
                         f"got {context.max()}")
    if not np.all(np.isfinite(answer)) or np.any(answer < 0):
        raise ValueError("conditional must return probability vectors: finite and non-negative entries")
    deviation = float(np.max(np.abs(answer.sum(axis=1) - 1.0)))
    if deviation > SUM_TOLERANCE:
        raise ValueError(f"conditional must return probability vectors: rows sum to 1 within {SUM_TOLERANCE:g}, "
                         f"largest deviation {deviation:.3g}")
    return answer


def from_all_positions(all_positions: Callable[[np.ndarray], np.ndarray]) -> ConditionalFamily:
    """Wrap ``f(tokens (B, n)) -> (B, n, V)`` into a family that reads one position per row.

    Examples
    --------
    >>> f = lambda tokens: np.full(tokens.shape + (4,), 0.25)
    >>> from_all_positions(f)(np.zeros((2, 3), dtype=int), np.array([0, 2])).shape
    (2, 4)
    """
    if not callable(all_positions):
        raise TypeError(f"all_positions must be callable, got {type(all_positions).__name__}")

    def family(tokens: np.ndarray, positions: np.ndarray) -> np.ndarray:
        every = np.asarray(all_positions(tokens))
        return every[np.arange(len(tokens)), positions]

    return family


def _check_positive_joint(joint, name: str = "joint") -> np.ndarray:
    joint = as_float_array(joint, name)
    if joint.ndim < 2:
        raise ValueError(f"{name} must have n >= 2 axes (one per position), got shape {joint.shape}")
    if len(set(joint.shape)) != 1:
        raise ValueError(f"{name} must have the same vocabulary on every axis, got shape {joint.shape}")
    if np.any(joint <= 0):
        raise ValueError(f"{name} must be strictly positive (Brook's lemma needs a positive joint)")
    if abs(joint.sum() - 1.0) > SUM_TOLERANCE:
        raise ValueError(f"{name} must sum to 1, got {joint.sum():.12g}")
    return joint


def joint_conditionals(joint) -> ConditionalFamily:
    r"""The exact full conditionals of an explicit positive joint table ``(V,) * n``.

    Examples
    --------
    >>> joint = np.array([[0.1, 0.2], [0.3, 0.4]])
    >>> joint_conditionals(joint)(np.array([[0, 1]]), np.array([0])).round(4)
    array([[0.3333, 0.6667]])
    >>> joint_conditionals(np.array([[0.5, 0.5], [0.0, 0.0]]))
    Traceback (most recent call last):
    ...
    ValueError: joint must be strictly positive (Brook's lemma needs a positive joint)
    """
    joint = _check_positive_joint(joint)
    length, vocab = joint.ndim, joint.shape[0]

    def family(tokens: np.ndarray, positions: np.ndarray) -> np.ndarray:
        tokens = np.array(tokens, dtype=np.int64)  # a copy: the queried position is overwritten below
        tokens[np.arange(len(tokens)), positions] = 0  # whatever it shows ([MASK] too) is not read
        if tokens.min() < 0 or tokens.max() >= vocab:
            raise ValueError(f"tokens must be ids in [0, {vocab}) away from the queried position, got "
                             f"{tokens.min()} to {tokens.max()}")
        index = np.repeat(tokens[:, None, :], vocab, axis=1)            # (B, V, n)
        index[np.arange(len(tokens)), :, positions] = np.arange(vocab)
        rows = joint[tuple(index[..., k] for k in range(length))]          # (B, V)
        return rows / rows.sum(axis=1, keepdims=True)

    return family


def hmm_conditionals(hmm: HiddenMarkovLanguage) -> ConditionalFamily:
    r"""The HMM's exact full conditionals $P(x_i \mid x_{-i})$ as a family (position $i$ is not read).

    Examples
    --------
    >>> from mlm_book.hmm import default_hmm
    >>> q = hmm_conditionals(default_hmm())(np.array([[0, 1, 2]]), np.array([1]))
    >>> q.shape, round(float(q.sum()), 12)
    ((1, 25), 1.0)
    """
    check_hmm(hmm)

    def family(tokens: np.ndarray, positions: np.ndarray) -> np.ndarray:
        tokens = tokens.copy()
        tokens[np.arange(len(tokens)), positions] = 0  # ignored by the leave-one-out posterior
        return token_conditionals(hmm, tokens)[np.arange(len(tokens)), positions]

    return family


def population_optimum_conditionals(hmm: HiddenMarkovLanguage, channel: Channel) -> ConditionalFamily:
    r"""Theorem 2's population optimum at a ``[MASK]``, as a family.

    $q_i(y \mid x_{-i}) = P(x_i = y \mid \tilde x,\ i \text{ selected})$ with ``[MASK]``
    shown at $i$ and every other position *shown* as its token, which the optimum reads
    through the channel (it may be a kept, replaced or unselected token). As
    $\rho \to 0$ the other positions become certainly clean and $q_i$ tends to the true
    full conditional.

    Examples
    --------
    >>> from mlm_book.hmm import default_hmm
    >>> hmm = default_hmm()
    >>> q = population_optimum_conditionals(hmm, Channel(25))(np.array([[0, 1, 2]]), np.array([1]))
    >>> q.shape, round(float(q.sum()), 12)
    ((1, 25), 1.0)
    """
    check_hmm(hmm)
    if not isinstance(channel, Channel):
        raise TypeError(f"channel must be a Channel, got {type(channel).__name__}")

    def family(tokens: np.ndarray, positions: np.ndarray) -> np.ndarray:
        shown = tokens.copy()
        shown[np.arange(len(shown)), positions] = channel.mask_id
        return exact_posterior(hmm, channel, shown)[np.arange(len(shown)), positions]

    return family


def brook_log_ratio(conditional: ConditionalFamily, x, y, *, mask_id: int | None = None) -> np.ndarray:
    r"""$\log p(x) - \log p(y)$ from full conditionals alone, by Brook's lemma, for each pair.

    All $n$ factors of all pairs are asked of the family in one call.

    Parameters
    ----------
    conditional : callable
        A family of full conditionals (see the module docstring).
    x, y : array_like of int
        ``(B, n)`` sequences (``(n,)`` for one pair).
    mask_id : int, optional
        Written at the queried position before each call.

    Returns
    -------
    numpy.ndarray
        ``(B,)`` log ratios (a float for one pair).

    Raises
    ------
    ValueError
        If ``x`` or ``y`` holds ids outside the family's vocabulary.
    ValueError
        If a needed conditional probability is zero (the joint is not positive).

    Examples
    --------
    >>> joint = random_positive_joint(4, 4, np.random.default_rng(0))
    >>> x, y = (0, 2, 1, 1), (3, 0, 0, 2)
    >>> bool(abs(brook_log_ratio(joint_conditionals(joint), x, y) - np.log(joint[x] / joint[y])) < 1e-12)
    True
    """
    conditional = _check_family(conditional)
    x, y = as_int_array(x, "x", ndim=(1, 2)), as_int_array(y, "y", ndim=(1, 2))
    single = x.ndim == 1
    x = _check_sequences(np.atleast_2d(x), "x")
    y = _check_sequences(np.atleast_2d(y), "y")
    if x.shape != y.shape:
        raise ValueError(f"x and y must have the same shape, got {x.shape} and {y.shape}")
    mask_id = _check_mask_id(mask_id)
    batch, length = x.shape
    # mixed[b, i] = (x_<i, ., y_>i): prefix from x, suffix from y.
    before = np.arange(length)[None, :] < np.arange(length)[:, None]   # [i, k]: k < i
    mixed = np.where(before[None], x[:, None, :], y[:, None, :])         # (B, n, n)
    positions = np.tile(np.arange(length), batch)
    q = _query(conditional, mixed.reshape(batch * length, length), positions, mask_id, "x and y")
    for name, array in (("x", x), ("y", y)):
        if array.max() >= q.shape[1]:
            raise ValueError(f"{name} must be token ids in [0, V) = [0, {q.shape[1]}), got {int(array.max())}")
    rows = np.arange(batch * length)
    numerator, denominator = q[rows, x.ravel()], q[rows, y.ravel()]
    if np.any(numerator <= 0) or np.any(denominator <= 0):
        raise ValueError("conditional gives probability zero to a value Brook's lemma needs: "
                         "the joint must be strictly positive")
    ratio = (np.log(numerator) - np.log(denominator)).reshape(batch, length).sum(axis=1)
    return float(ratio[0]) if single else ratio


def rebuild_joint(conditional: ConditionalFamily, vocab_size: int, length: int, *, reference=None,
                  mask_id: int | None = None) -> np.ndarray:
    r"""Rebuild a joint table ``(V,) * n`` from its full conditionals alone (Brook's lemma).

    With a reference sequence $y$ (default all zeros),
    $\log p(x) - \log p(y) = \sum_i \log q_i(x_i \mid x_{<i}, y_{>i}) - \log q_i(y_i \mid x_{<i}, y_{>i})$.
    The $i$-th term depends on $x$ only through $x_{\le i}$, so position $i$ needs the
    family at the $V^i$ prefixes $x_{<i}$ only: $\sum_i V^i$ rows in all, asked in one call,
    and the table is their broadcast sum, exponentiated and normalised.

    Parameters
    ----------
    conditional : callable
        A family of full conditionals over ``vocab_size`` values.
    vocab_size : int
        $V$.
    length : int
        $n \ge 2$.
    reference : array_like of int, optional
        The sequence $y$, shape ``(n,)``.
    mask_id : int, optional
        Written at the queried position before the call.

    Returns
    -------
    numpy.ndarray
        The normalised joint, shape ``(V,) * n``.

    Raises
    ------
    TypeError
        If ``mask_id`` is not an integer.
    ValueError
        If any needed conditional probability is zero (not a positive joint), or if
        $V^n$ exceeds $2^{25}$.

    Examples
    --------
    >>> joint = random_positive_joint(3, 3, np.random.default_rng(1))
    >>> rebuilt = rebuild_joint(joint_conditionals(joint), 3, 3)
    >>> bool(np.abs(rebuilt - joint).max() < 1e-15)
    True
    """
    vocab_size = check_positive_int(vocab_size, "vocab_size")
    length = check_positive_int(length, "length", minimum=2)
    check_table_size(vocab_size, length, MAX_TABLE_ENTRIES, _table_what(vocab_size, length))
    conditional = _check_family(conditional)
    mask_id = _check_mask_id(mask_id)
    if reference is None:
        reference = np.zeros(length, dtype=np.int64)
    reference = as_int_array(reference, "reference", ndim=1)
    if reference.shape != (length,) or reference.min() < 0 or reference.max() >= vocab_size:
        raise ValueError(f"reference must be {length} token ids in [0, {vocab_size})")
    blocks, positions = [], []
    for i in range(length):  # loop over positions only: the rows of each are built at once
        prefixes = np.indices((vocab_size,) * i).reshape(i, -1).T if i else np.zeros((1, 0), dtype=np.int64)
        rows = np.empty((len(prefixes), length), dtype=np.int64)
        rows[:, :i] = prefixes
        rows[:, i:] = reference[i:]
        blocks.append(rows)
        positions.append(np.full(len(prefixes), i))
    q = _query(conditional, np.concatenate(blocks), np.concatenate(positions), mask_id, "reference")
    if q.shape[1] != vocab_size:
        raise ValueError(f"conditional must return {vocab_size} probabilities per row, got {q.shape[1]}")
    if np.any(q <= 0):
        raise ValueError("conditional gives probability zero somewhere: Brook's rebuild needs a positive joint")
    log_q = np.log(q)
    log_joint = np.zeros((vocab_size,) * length)
    start = 0
    for i in range(length):
        count = vocab_size ** i
        block = log_q[start:start + count]
        start += count
        term = block - block[:, reference[i]][:, None]            # (V^i, V) indexed by (x_<i, x_i)
        shape = (vocab_size,) * (i + 1) + (1,) * (length - i - 1)
        log_joint = log_joint + term.reshape(shape)
    log_joint -= log_joint.max()
    joint = np.exp(log_joint)
    return joint / joint.sum()


def four_cycle_gap(conditional: ConditionalFamily, tokens, first, second, a, a_alt, b, b_alt, *,
                   mask_id: int | None = None) -> np.ndarray:
    r"""The four-cycle gap $\delta$ of Corollary 2 for each row, from 4 queries per row in one call.

    Parameters
    ----------
    conditional : callable
        Any family of conditionals.
    tokens : array_like of int
        ``(B, n)`` sequences fixing every other position.
    first, second : array_like of int
        ``(B,)`` positions $i \ne j$.
    a, a_alt : array_like of int
        ``(B,)`` values $a, a'$ at position $i$.
    b, b_alt : array_like of int
        ``(B,)`` values $b, b'$ at position $j$.
    mask_id : int, optional
        Written at the queried position before the call.

    Returns
    -------
    numpy.ndarray
        ``(B,)`` gaps in nats; zero (to rounding) for the conditionals of a positive joint.

    Raises
    ------
    ValueError
        If a position is outside the sequence, or a value outside the vocabulary.
    ValueError
        If $i = j$ in some row, or a needed probability is zero.

    Examples
    --------
    >>> joint = random_positive_joint(3, 3, np.random.default_rng(2))
    >>> delta = four_cycle_gap(joint_conditionals(joint), [[0, 0, 1]], [0], [1], [0], [2], [1], [0])
    >>> bool(abs(delta[0]) < 1e-13)
    True
    """
    conditional = _check_family(conditional)
    tokens = _check_sequences(tokens, "tokens")
    batch, length = tokens.shape
    values = {}
    for name, value in (("first", first), ("second", second), ("a", a), ("a_alt", a_alt),
                        ("b", b), ("b_alt", b_alt)):
        array = _per_row(value, name, batch)
        low, high = (0, length) if name in ("first", "second") else (0, None)
        if array.min() < low or (high is not None and array.max() >= high):
            where = f"positions in [0, {length})" if high is not None else "non-negative token ids"
            raise ValueError(f"{name} must hold {where}, got values from {int(array.min())} to {int(array.max())}")
        values[name] = array
    mask_id = _check_mask_id(mask_id)
    i, j = values["first"], values["second"]
    if np.any(i == j):
        raise ValueError("first and second must differ in every row")
    rows = np.arange(batch)
    # Four query blocks: q_i(.|x_j=b), q_i(.|x_j=b'), q_j(.|x_i=a), q_j(.|x_i=a').
    blocks = []
    for position, other, setting in ((i, j, values["b"]), (i, j, values["b_alt"]),
                                     (j, i, values["a"]), (j, i, values["a_alt"])):
        block = tokens.copy()
        block[rows, other] = setting
        blocks.append((block, position))
    q = _query(conditional, np.concatenate([blk for blk, _ in blocks]),
               np.concatenate([pos for _, pos in blocks]), mask_id, "tokens, a, a_alt, b and b_alt").reshape(4, batch, -1)
    for name in ("a", "a_alt", "b", "b_alt"):
        if values[name].max() >= q.shape[-1]:
            raise ValueError(f"{name} must be token ids in [0, V) = [0, {q.shape[-1]}), "
                             f"got {int(values[name].max())}")
    a_, a2, b_, b2 = values["a"], values["a_alt"], values["b"], values["b_alt"]
    needed = np.stack([q[0, rows, a_], q[0, rows, a2], q[1, rows, a_], q[1, rows, a2],
                       q[2, rows, b_], q[2, rows, b2], q[3, rows, b_], q[3, rows, b2]])
    if np.any(needed <= 0):
        raise ValueError("conditional gives probability zero to a value of the four-cycle")
    log = np.log(needed)
    qi_a_b, qi_a2_b, qi_a_b2, qi_a2_b2, qj_b_a, qj_b2_a, qj_b_a2, qj_b2_a2 = log
    return ((qi_a_b - qi_a2_b) + (qj_b_a2 - qj_b2_a2)) - ((qj_b_a - qj_b2_a) + (qi_a_b2 - qi_a2_b2))


@dataclass(frozen=True, eq=False)
class FourCycleDraws:
    """The random choices of the four-cycle protocol, shared by every family tested.

    Attributes
    ----------
    tokens : numpy.ndarray
        ``(B, n)`` sequences.
    first, second : numpy.ndarray
        ``(B,)`` the pair of positions $i$, $j$.
    a, a_alt : numpy.ndarray
        ``(B,)`` the likeliest and second likeliest values at $i$ (under the reference).
    b, b_alt : numpy.ndarray
        ``(B,)`` the same at $j$.

    Examples
    --------
    >>> draws = FourCycleDraws(tokens=np.array([[0, 1, 2]]), first=np.array([0]), second=np.array([1]),
    ...                        a=np.array([0]), a_alt=np.array([3]), b=np.array([1]), b_alt=np.array([2]))
    >>> draws.tokens.shape, int(draws.second[0] - draws.first[0])
    ((1, 3), 1)
    """

    tokens: np.ndarray
    first: np.ndarray
    second: np.ndarray
    a: np.ndarray
    a_alt: np.ndarray
    b: np.ndarray
    b_alt: np.ndarray

    def __post_init__(self):
        tokens = _check_sequences(self.tokens, "tokens")
        batch, length = tokens.shape
        for name in ("first", "second", "a", "a_alt", "b", "b_alt"):
            array = as_int_array(getattr(self, name), name, ndim=1)
            if array.shape != (batch,):
                raise ValueError(f"{name} must have shape ({batch},) (one per sequence of tokens), got {array.shape}")
            high = length if name in ("first", "second") else None
            if array.min() < 0 or (high is not None and array.max() >= high):
                where = f"positions in [0, {length})" if high is not None else "non-negative token ids"
                raise ValueError(f"{name} must hold {where}, got values from {int(array.min())} to {int(array.max())}")
        if np.any(np.asarray(self.first) == np.asarray(self.second)):
            raise ValueError("first and second must differ in every row")

    def gaps(self, conditional: ConditionalFamily, *, mask_id: int | None = None) -> np.ndarray:
        """[`four_cycle_gap`][mlm_book.compat.four_cycle_gap] of ``conditional`` on these draws, ``(B,)``."""
        return four_cycle_gap(conditional, self.tokens, self.first, self.second, self.a, self.a_alt,
                              self.b, self.b_alt, mask_id=mask_id)


def choose_four_cycles(tokens, reference: ConditionalFamily, rng: np.random.Generator, *,
                       adjacent: bool = True) -> FourCycleDraws:
    r"""Pick a position pair per sequence and the two likeliest values at each under ``reference``.

    Position $i$ is uniform over the positions that have a right neighbour and
    $j = i + 1$ (``adjacent``), or $(i, j)$ is a uniform ordered pair of distinct
    positions. The values $a, a'$ are the two largest entries of
    ``reference``'s $q_i(\cdot \mid x_{-i})$ at the sequence itself, and $b, b'$ those of
    $q_j(\cdot \mid x_{-j})$ (ties broken by the lower id).

    Parameters
    ----------
    tokens : array_like of int
        ``(B, n)`` sequences.
    reference : callable
        The family that ranks the values (the book uses the HMM's exact conditionals, so
        every family is tested on the same cycles).
    rng : numpy.random.Generator
        Chooses the positions.
    adjacent : bool
        Adjacent pairs (the book's protocol) or any pair.

    Returns
    -------
    FourCycleDraws

    Examples
    --------
    >>> from mlm_book.hmm import default_hmm
    >>> tokens = np.array([[0, 1, 2, 3], [4, 5, 6, 7]])
    >>> draws = choose_four_cycles(tokens, hmm_conditionals(default_hmm()), np.random.default_rng(0))
    >>> bool(np.all(draws.second == draws.first + 1)), bool(np.all(draws.a != draws.a_alt))
    (True, True)
    """
    tokens = _check_sequences(tokens, "tokens")
    reference = _check_family(reference, "reference")
    rng = check_generator(rng)
    batch, length = tokens.shape
    if check_bool(adjacent, "adjacent"):
        first = rng.integers(0, length - 1, size=batch)
        second = first + 1
    else:
        first = rng.integers(0, length, size=batch)
        second = (first + rng.integers(1, length, size=batch)) % length
    q = _query(reference, np.concatenate([tokens, tokens]), np.concatenate([first, second]), None, "tokens")
    order = np.argsort(-q, axis=1, kind="stable")[:, :2]
    return FourCycleDraws(tokens=tokens, first=first, second=second, a=order[:batch, 0], a_alt=order[:batch, 1],
                          b=order[batch:, 0], b_alt=order[batch:, 1])


def hmm_four_cycle_draws(hmm: HiddenMarkovLanguage, rng: np.random.Generator, *, count: int = 200,
                         length: int = 24, adjacent: bool = True) -> FourCycleDraws:
    """The book's draws: ``count`` HMM sequences, a pair each, the HMM's two likeliest values at each.

    Raises
    ------
    ValueError
        If ``count * length`` draws exceed the HMM sampler's limit.

    Examples
    --------
    >>> from mlm_book.hmm import default_hmm
    >>> draws = hmm_four_cycle_draws(default_hmm(), np.random.default_rng(0), count=5, length=6)
    >>> draws.tokens.shape, bool(np.all(draws.second == draws.first + 1))
    ((5, 6), True)
    """
    hmm = check_hmm(hmm)
    rng = check_generator(rng)
    count = check_positive_int(count, "count")
    length = check_positive_int(length, "length", minimum=2)
    width = max(hmm.n_states, hmm.vocab_size)
    check_table_size(count * length, 1, MAX_SAMPLE_ENTRIES,
                     f"count={count} sequences of length={length} over {width} states or tokens", factor=width)
    _, tokens = sample_hmm(hmm, count, length, rng)
    return choose_four_cycles(tokens, hmm_conditionals(hmm), rng, adjacent=adjacent)


def four_cycle_protocol(conditional: ConditionalFamily, hmm: HiddenMarkovLanguage, rng: np.random.Generator, *,
                        count: int = 200, length: int = 24, adjacent: bool = True,
                        mask_id: int | None = None) -> np.ndarray:
    r"""The book's four-cycle protocol on any family: per-draw gaps $\delta$, shape ``(count,)``.

    Draws ``count`` sequences of the HMM of length ``length``, a pair of positions each
    (adjacent by default) and the two likeliest values at each under the HMM's exact
    conditionals ([`hmm_four_cycle_draws`][mlm_book.compat.hmm_four_cycle_draws]), then evaluates [`four_cycle_gap`][mlm_book.compat.four_cycle_gap].
    Generators seeded alike give the same draws, so families are compared draw by draw.

    Parameters
    ----------
    conditional : callable
        The family under test.
    hmm : HiddenMarkovLanguage
        The language the sequences come from.
    rng : numpy.random.Generator
        Source of the draws.
    count : int
        Number of draws.
    length : int
        Sequence length.
    adjacent : bool
        Adjacent pairs (the book's protocol) or any pair.
    mask_id : int, optional
        Written at the queried position before each call (e.g. an encoder's ``[MASK]``).

    Returns
    -------
    numpy.ndarray
        ``(count,)`` gaps in nats.

    Raises
    ------
    ValueError
        If ``count * length`` draws exceed the HMM sampler's limit.
    TypeError
        If ``mask_id`` is not an integer.

    Examples
    --------
    >>> from mlm_book.hmm import default_hmm
    >>> hmm = default_hmm()
    >>> delta = four_cycle_protocol(hmm_conditionals(hmm), hmm, np.random.default_rng(0), count=20)
    >>> bool(np.abs(delta).max() < 1e-11)
    True
    """
    conditional = _check_family(conditional)
    mask_id = _check_mask_id(mask_id)
    draws = hmm_four_cycle_draws(hmm, rng, count=count, length=length, adjacent=adjacent)
    return draws.gaps(conditional, mask_id=mask_id)


def random_positive_joint(length: int, vocab_size: int, rng: np.random.Generator, *,
                          concentration: float = 1.0) -> np.ndarray:
    r"""A random strictly positive joint over ``length`` positions: a Dirichlet draw, shape ``(V,) * n``.

    Raises
    ------
    ValueError
        If ``vocab_size**length`` exceeds ``MAX_TABLE_ENTRIES``.
    TypeError
        If ``concentration`` is not a real number.

    Examples
    --------
    >>> joint = random_positive_joint(2, 3, np.random.default_rng(0))
    >>> joint.shape, round(float(joint.sum()), 12), bool(joint.min() > 0)
    ((3, 3), 1.0, True)
    """
    length = check_positive_int(length, "length", minimum=2)
    vocab_size = check_positive_int(vocab_size, "vocab_size", minimum=2)
    rng = check_generator(rng)
    concentration = check_positive_float(concentration, "concentration")
    size = check_table_size(vocab_size, length, MAX_TABLE_ENTRIES, _table_what(vocab_size, length))
    weights = rng.gamma(concentration, size=size) + 1e-12
    return (weights / weights.sum()).reshape((vocab_size,) * length)
