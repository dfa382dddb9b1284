r"""Translation between two HMM languages that share one hidden path, and its exact output law.

A *pair* $(x, y)$ is emitted from one path $z_1, \dots, z_n$ of the book's hidden chain
([`mlm_book.hmm.default_hmm`][mlm_book.hmm.default_hmm]): the source $x_i$ from the book's emission
table (language A, 25 tokens) and the target $y_i$ from a second table (language B, its own smaller
vocabulary). Because the path is hidden, the target is a loose function of the source: B's token at
position $i$ depends on $z_i$, which the source pins down only up to its own noise.

Every next-target law is exact, by forward–backward over the hidden chain
([`target_conditionals`][mlm_book.translation.target_conditionals]):

* ``"prefix"`` — $p(y_t \mid y_{<t})$, the optimum of a target-only left-to-right reader (a decoder);
* ``"source+prefix"`` — $p(y_t \mid y_{<t}, x)$, the optimum of an encoder–decoder, which reads the
  whole source and the target so far;
* ``"source+both"`` — $p(y_t \mid y_{-t}, x)$, the optimum of a reader of everything but $y_t$ (an
  encoder filling in one hidden target word).

Their mean negative log-probabilities on sampled pairs estimate three conditional entropies in nats per
target token, ordered by what each reader sees; [`emission_floor`][mlm_book.translation.emission_floor]
is the entropy left when the hidden state itself is known.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np

from mlm_book.hmm import HiddenMarkovLanguage, default_hmm, sample
from mlm_book.validation import (
    as_int_array,
    check_choice,
    check_distribution,
    check_generator,
    check_instance,
    check_positive_int,
    check_real,
)

__all__ = [
    "MAX_PAIR_ENTRIES",
    "READS",
    "ExactLosses",
    "TranslationWorld",
    "default_world",
    "emission_floor",
    "exact_losses",
    "sample_pairs",
    "target_conditionals",
]

READS = ("prefix", "source+prefix", "source+both")
"""What each exact reference reads of a pair besides the target's own past (see the module docstring)."""
MAX_PAIR_ENTRIES = 2**26
"""Most ``batch * length * states`` entries a call computes at once (a mistaken size is refused)."""


@dataclass(frozen=True, eq=False)
class TranslationWorld:
    r"""Two languages over one hidden chain: the source HMM and the target's emission table.

    Parameters
    ----------
    source : HiddenMarkovLanguage
        The hidden chain and the source emission $P(x_i \mid z_i)$.
    target_emission : ndarray, shape (S, V_B)
        $P(y_i = v \mid z_i = s)$; rows are distributions.
    target_names : tuple of V_B str
        Readable names of the target tokens.

    Raises
    ------
    TypeError, ValueError
        If ``source`` is not an HMM, the table is not (S, V_B) with distribution rows, or the names do not
        match its columns.

    Examples
    --------
    >>> world = default_world()
    >>> world.target_vocab, world.source.vocab_size, world.target_names[:2]
    (6, 25, ('r0', 'r1'))

    A target language that says "a" or "b" at random, whatever the state: no reader does better than
    $\log 2$ nats a token.

    >>> hmm = default_hmm()
    >>> coin = TranslationWorld(hmm, np.full((hmm.n_states, 2), 0.5), ("a", "b"))
    >>> coin.target_vocab, round(emission_floor(coin), 4)
    (2, 0.6931)
    """

    source: HiddenMarkovLanguage
    target_emission: np.ndarray
    target_names: tuple

    def __post_init__(self):
        check_instance(self.source, "source", HiddenMarkovLanguage)
        table = check_distribution(self.target_emission, "target_emission", axis=-1)
        if table.ndim != 2 or table.shape[0] != self.source.n_states:
            raise ValueError(f"target_emission must have shape ({self.source.n_states}, V_B), got {table.shape}")
        check_instance(self.target_names, "target_names", tuple)
        if len(self.target_names) != table.shape[1] or not all(isinstance(n, str) for n in self.target_names):
            raise ValueError(f"target_names must be {table.shape[1]} strings, one per target token")
        table = np.array(table, dtype=np.float64)
        table.setflags(write=False)
        object.__setattr__(self, "target_emission", table)

    @property
    def target_vocab(self) -> int:
        """$V_B$, the number of target tokens."""
        return self.target_emission.shape[1]


@functools.cache
def default_world() -> TranslationWorld:
    r"""The book's pair of languages: A is the book's HMM language, B a six-word language of roles.

    Each hidden state $s$ has a *role*, $s \bmod 4$ (regime a's states are 0–3, regime b's 4–7, and the
    two regimes' dynamics mirror each other). B says its state's role word ``r0``–``r3`` with
    probability 0.6 and otherwise one of two particles, ``u`` or ``v``, which lean to the regime
    (0.3 and 0.1 in regime a, the reverse in regime b). So B names the role but only hints at the
    regime, while A's own tokens name the state itself: the source is worth most where B's past leaves
    the role uncertain.

    Examples
    --------
    >>> default_world().target_emission[0].tolist()
    [0.6, 0.0, 0.0, 0.0, 0.3, 0.1]
    """
    hmm = default_hmm()
    table = np.zeros((hmm.n_states, 6))
    for s in range(hmm.n_states):
        table[s, s % 4] = 0.6
        lean = (0.3, 0.1) if hmm.regime[s] == 0 else (0.1, 0.3)
        table[s, 4:] = lean
    return TranslationWorld(hmm, table, ("r0", "r1", "r2", "r3", "u", "v"))


def _check_size(batch: int, length: int, states: int) -> None:
    if batch * length * states > MAX_PAIR_ENTRIES:
        raise ValueError(f"batch * length * states must be at most {MAX_PAIR_ENTRIES}, got batch={batch}, "
                         f"length={length} over {states} states")


def sample_pairs(world: TranslationWorld, batch: int, length: int,
                 rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Sample ``batch`` pairs of ``length`` tokens from one hidden path each: ``(states, source, target)``.

    The path and the source come from [`mlm_book.hmm.sample`][mlm_book.hmm.sample]; the target is then
    drawn from ``world.target_emission`` at every position, from the same generator.

    Returns
    -------
    states, source, target : ndarray of int64, each (batch, length)

    Raises
    ------
    TypeError, ValueError
        If an argument has the wrong type or range.

    Examples
    --------
    >>> z, x, y = sample_pairs(default_world(), 2, 5, np.random.default_rng(0))
    >>> z.shape, x.shape, y.shape, int(y.max()) < 6
    ((2, 5), (2, 5), (2, 5), True)
    """
    check_instance(world, "world", TranslationWorld)
    batch = check_positive_int(batch, "batch")
    length = check_positive_int(length, "length")
    _check_size(batch, length, world.source.n_states)
    rng = check_generator(rng)
    states, source = sample(world.source, batch, length, rng)
    cdf = np.cumsum(world.target_emission, axis=1)[states.ravel()]
    u = rng.random(states.size)
    target = np.minimum((u[:, None] >= cdf).sum(axis=1), world.target_vocab - 1)
    return states, source, target.reshape(batch, length).astype(np.int64)


def _tokens(value, name: str, vocab: int) -> np.ndarray:
    array = as_int_array(value, name, ndim=2)
    if array.shape[0] == 0 or array.shape[1] == 0:
        raise ValueError(f"{name} must hold at least one sequence of length >= 1, got shape {array.shape}")
    if array.min() < 0 or array.max() >= vocab:
        raise ValueError(f"{name} must hold token ids in [0, {vocab}), got values from {array.min()} to "
                         f"{array.max()}")
    return array


def _forward(transition, initial, likelihood):
    """Predictions $P(z_t \\mid \\text{obs}_{<t})$ for every t, ``(B, n, S)``, with scaled messages."""
    B, n, S = likelihood.shape
    out = np.empty((B, n, S))
    a = np.broadcast_to(initial, (B, S))
    for t in range(n):
        out[:, t] = a
        joint = a * likelihood[:, t]
        a = (joint / joint.sum(axis=1, keepdims=True)) @ transition
    return out


def _backward(transition, likelihood):
    """Messages $\\propto P(\\text{obs}_{>t} \\mid z_t)$ for every t, ``(B, n, S)``, each scaled to max 1."""
    B, n, S = likelihood.shape
    out = np.empty((B, n, S))
    b = np.ones((B, S))
    for t in range(n - 1, -1, -1):
        out[:, t] = b
        b = (likelihood[:, t] * b) @ transition.T
        b = b / b.max(axis=1, keepdims=True)
    return out


def target_conditionals(world: TranslationWorld, source, target, reads: str = "source+prefix") -> np.ndarray:
    r"""The exact law of each target token given what a reader sees: ``(B, n, V_B)`` probabilities.

    Row ``[b, t]`` is $p(y_t = \cdot \mid \cdot)$ for pair ``b``, with the conditioning set by ``reads``
    (one of `READS`): ``"prefix"`` $y_{<t}$; ``"source+prefix"`` $x$ and $y_{<t}$; ``"source+both"`` $x$ and
    $y_{-t}$. The hidden state's law is the forward prediction from the observations before $t$ times
    the backward message of those after it (times the source's likelihood at $t$ where the source is
    read), and the target's law is that mixture of the rows of ``world.target_emission``.

    Parameters
    ----------
    world : TranslationWorld
    source : array_like of int, shape (B, n)
        Source token ids (ignored by ``"prefix"``, but checked).
    target : array_like of int, shape (B, n)
    reads : str

    Raises
    ------
    TypeError, ValueError
        If an argument has the wrong type, the arrays' shapes differ, an id is out of range, or ``reads``
        is not one of `READS`.

    Examples
    --------
    >>> world = default_world()
    >>> _, x, y = sample_pairs(world, 3, 6, np.random.default_rng(1))
    >>> p = target_conditionals(world, x, y)
    >>> p.shape, bool(np.allclose(p.sum(axis=2), 1.0))
    ((3, 6, 6), True)

    The first target word read without the source is the stationary mixture of B's table:

    >>> first = target_conditionals(world, x, y, "prefix")[0, 0]
    >>> bool(np.allclose(first, world.source.initial @ world.target_emission))
    True
    """
    check_instance(world, "world", TranslationWorld)
    source = _tokens(source, "source", world.source.vocab_size)
    target = _tokens(target, "target", world.target_vocab)
    if source.shape != target.shape:
        raise ValueError(f"source and target must have the same shape (one hidden path), got {source.shape} "
                         f"and {target.shape}")
    reads = check_choice(reads, "reads", READS)
    hmm = world.source
    _check_size(*target.shape, hmm.n_states)
    like_y = world.target_emission.T[target]                     # (B, n, S)
    like_x = hmm.emission.T[source]
    if reads == "prefix":
        state = _forward(hmm.transition, hmm.initial, like_y)
    else:
        both = like_x * like_y
        ahead = _backward(hmm.transition, like_x if reads == "source+prefix" else both)
        state = _forward(hmm.transition, hmm.initial, both) * like_x * ahead
        state /= state.sum(axis=2, keepdims=True)
    return state @ world.target_emission


@dataclass(frozen=True)
class ExactLosses:
    """Mean $-\\log p(y_t \\mid \\cdot)$ in nats per target token of every exact reference on a sample.

    Attributes
    ----------
    prefix : float
        Reading the target's prefix $y_{<t}$ only.
    source_prefix : float
        Reading the source $x$ and the prefix.
    source_both : float
        Reading the source and both sides of the target, $y_{-t}$.

    Examples
    --------
    About what [`exact_losses`][mlm_book.translation.exact_losses] gives on 400 pairs of 12 tokens of the
    book's world; what the source is worth to a reader of the prefix, in nats a target token:

    >>> e = ExactLosses(prefix=1.652, source_prefix=0.900, source_both=0.900)
    >>> round(e.prefix - e.source_prefix, 3)
    0.752

    Raises
    ------
    TypeError, ValueError
        If a loss is not a finite real number.
    """

    prefix: float
    source_prefix: float
    source_both: float

    def __post_init__(self):
        for name in ("prefix", "source_prefix", "source_both"):
            check_real(getattr(self, name), name)       # checked only: the floats are kept as given


def exact_losses(world: TranslationWorld, source, target) -> ExactLosses:
    r"""Each exact reference's mean loss in nats per target token on the pairs ``(source, target)``.

    On pairs sampled from ``world`` these estimate $H(y_t \mid y_{<t})$, $H(y_t \mid y_{<t}, x)$ and
    $H(y_t \mid y_{-t}, x)$, averaged over positions; on the same pairs they are ordered on average
    (reading more cannot raise the expected loss).

    Examples
    --------
    >>> world = default_world()
    >>> _, x, y = sample_pairs(world, 400, 12, np.random.default_rng(2))
    >>> e = exact_losses(world, x, y)
    >>> e.prefix > e.source_prefix + 0.5, e.source_prefix >= e.source_both
    (True, True)
    """
    out = []
    target_ids = as_int_array(target, "target", ndim=2)
    for reads in READS:
        p = target_conditionals(world, source, target_ids, reads)
        picked = np.take_along_axis(p, target_ids[:, :, None], axis=2)[:, :, 0]
        out.append(float(-np.log(picked).mean()))
    return ExactLosses(*out)


def emission_floor(world: TranslationWorld) -> float:
    r"""$H(y_t \mid z_t)$ under the stationary law, in nats: what no reader of tokens can beat.

    Examples
    --------
    >>> round(emission_floor(default_world()), 4)
    0.8979
    """
    check_instance(world, "world", TranslationWorld)
    table = world.target_emission
    logs = np.log(np.where(table > 0, table, 1.0))
    return float(world.source.initial @ -(table * logs).sum(axis=1))
