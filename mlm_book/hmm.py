r"""The two-regime hidden Markov language: sampling, forward–backward and exact conditionals.

The book's synthetic language has $S = 8$ hidden states in two regimes of four. Each
state emits three tokens of its own (24 regime tokens ``a0 … a11``, ``b0 … b11``), and
the heaviest state of each regime (largest stationary mass) also emits a shared token
$w$ with probability $0.4$, so $V = 25$. The two senses of $w$ are those two heavy
states. Every transition is positive, so every finite sequence has positive probability,
and sequences start from the stationary distribution.

Because the language is a known distribution, everything about it is exact:
[`forward_backward`][mlm_book.hmm.forward_backward] gives the posterior of every hidden state and its
leave-one-out version $P(z_i \mid x_{-i})$, from which [`token_conditionals`][mlm_book.hmm.token_conditionals] gives
$P(x_i = v \mid x_{-i})$ and [`sense_posteriors`][mlm_book.hmm.sense_posteriors] gives $P(\text{sense} \mid x)$.
[`enumerate_joint`][mlm_book.hmm.enumerate_joint] lists the probability of every sequence of a short length, the
brute force the tests check forward–backward against.

Examples
--------
>>> import numpy as np
>>> hmm = default_hmm()
>>> hmm.n_states, hmm.vocab_size, hmm.token_names[hmm.shared_token]
(8, 25, 'w')
>>> states, tokens = sample(hmm, 2, 5, np.random.default_rng(0))
>>> tokens.shape, tokens.dtype
((2, 5), dtype('int64'))
>>> bool(np.allclose(token_conditionals(hmm, tokens).sum(-1), 1.0))
True
"""

from __future__ import annotations

import functools
import hashlib
from dataclasses import asdict, dataclass, field

import numpy as np

from mlm_book.validation import (
    as_float_array,
    as_int_array,
    check_distribution,
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
    "HMMConfig",
    "HiddenMarkovLanguage",
    "check_hmm",
    "cache_description",
    "ForwardBackward",
    "build_hmm",
    "default_hmm",
    "stationary_distribution",
    "sample",
    "emission_likelihood",
    "forward_backward",
    "token_conditionals",
    "sense_posteriors",
    "BayesSenseAccuracy",
    "bayes_sense_accuracy",
    "enumerate_joint",
    "enumerate_posteriors",
]

#: Tolerance for "this vector is the stationary distribution of that matrix".
STATIONARY_TOLERANCE = 1e-9
#: Largest number of float64 entries [`enumerate_joint`][mlm_book.hmm.enumerate_joint] may hold at once (256 MiB).
MAX_ENUMERATION_ENTRIES = 2**25
#: Largest ``batch * length * max(S, V)`` [`sample`][mlm_book.hmm.sample] may draw through at
#: once (its inverse-CDF step holds one CDF row per draw): 2^28 float64 is 2 GiB.
MAX_SAMPLE_ENTRIES = 2**28


# --------------------------------------------------------------------------------------
# The model
# --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class HMMConfig:
    r"""Named parameters of the book's two-regime HMM (see [`build_hmm`][mlm_book.hmm.build_hmm]).

    Within a regime the four states are one *heavy* state $h$ and three *light* states.
    A step first decides whether to leave the regime (probability ``switch_a`` from
    regime a, ``switch_b`` from regime b); a switch lands on the other regime's heavy
    state with probability ``entry_heavy`` and on its light states with the rest, in the
    proportions ``heavy_to_light``. A step that stays in the regime moves by the within-regime
    matrix: the heavy state stays with ``heavy_stay`` and otherwise goes to the light
    states in the proportions ``heavy_to_light``; a light state returns to $h$ with
    ``light_return``, stays with ``light_stay``, and moves on to the next light state
    with the rest, split ``light_forward`` to the next light state (cyclically
    ``1 → 2 → 3 → 1``) and the remainder to the previous one.

    Parameters
    ----------
    switch_a, switch_b : float
        Probability of leaving regime a / regime b at each step; their ratio sets the
        regimes' masses and hence the senses' shares.
    entry_heavy : float
        Probability that a regime switch lands on the heavy state.
    heavy_stay : float
        Within-regime probability that the heavy state stays.
    heavy_to_light : tuple of 3 floats
        Proportions in which the heavy state moves to the three light states.
    light_return : float
        Within-regime probability that a light state returns to the heavy state.
    light_stay : float
        Within-regime probability that a light state stays.
    light_forward : float
        Share of a light state's remaining mass that moves to the next light state.
    shared_emission : float
        Probability that a heavy state emits the shared token $w$.
    own_split : tuple of 3 floats
        How a state's remaining emission mass is split over its three own tokens.

    Notes
    -----
    The defaults were chosen (by a small search, then rounded) to match the topic page's
    description of its HMM, and each target is governed mainly by one parameter:

    * the senses' shares (target 0.491 / 0.509) by the ratio ``switch_b / switch_a``,
      which sets the regimes' masses;
    * the heavy states' total mass (target about 0.463, so that $w$ is about 18.5 % of
      tokens) by ``heavy_stay`` against ``light_return``;
    * the largest next-token PMI gap between the senses (target 3.654 nats) by the switch
      rates: with ``entry_heavy == heavy_stay`` a switch enters a regime exactly as its
      heavy state moves inside it, so every token of regime a is
      $(1 - \text{switch}_a) / \text{switch}_b$ times likelier after sense a than after
      sense b, and the gap is the logarithm of that ratio;
    * the exact Bayes sense accuracy (target about 0.97) by the switch rates too (a
      switch next to an occurrence of $w$ is what makes its sense ambiguous);
    * the mean exact-posterior entropy under BERT's channel (target about 1.87 nats) by
      ``own_split`` and the stickiness of the states; a peaked, not uniform, split.

    The values this gives are computed, not typed, in Chapter 1 and by the claims ledger.

    Examples
    --------
    >>> config = HMMConfig()
    >>> hmm = build_hmm(config)
    >>> a_token, sense_a, sense_b = 3, *hmm.sense_states      # a light state's token of regime a
    >>> after = hmm.transition @ hmm.emission                  # P(next token | state)
    >>> gap = np.log(after[sense_a, a_token] / after[sense_b, a_token])
    >>> bool(np.isclose(gap, np.log((1 - config.switch_a) / config.switch_b), atol=1e-12))
    True
    """

    switch_a: float = 0.0261
    switch_b: float = 0.0252
    entry_heavy: float = 0.7
    heavy_stay: float = 0.7
    heavy_to_light: tuple[float, float, float] = (0.5, 0.2, 0.3)
    light_return: float = 0.25
    light_stay: float = 0.4
    light_forward: float = 0.8
    shared_emission: float = 0.4
    own_split: tuple[float, float, float] = (0.7, 0.2, 0.1)

    def __post_init__(self):
        for name in ("switch_a", "switch_b", "entry_heavy", "heavy_stay", "light_return", "light_stay",
                     "light_forward"):
            check_probability(getattr(self, name), name, low=1e-12, high=1.0 - 1e-12)
        check_probability(self.shared_emission, "shared_emission", low=1e-12, high=1.0 - 1e-12)
        if self.light_return + self.light_stay >= 1.0:
            raise ValueError("light_return + light_stay must be < 1 so that every transition is positive")
        check_distribution(self.heavy_to_light, "heavy_to_light", strictly_positive=True)
        check_distribution(self.own_split, "own_split", strictly_positive=True)
        if len(self.heavy_to_light) != 3 or len(self.own_split) != 3:
            raise ValueError("heavy_to_light and own_split must have 3 entries each")


@dataclass(frozen=True, eq=False)
class HiddenMarkovLanguage:
    r"""A stationary HMM over a token vocabulary, with two regimes and one two-sense token.

    Instances are immutable (their arrays are read-only) and hash by identity, so they
    can key a `functools.cache`.

    Parameters
    ----------
    transition : ndarray, shape (S, S)
        $T_{rs} = P(z_{i+1} = s \mid z_i = r)$; every entry positive, rows sum to one.
    emission : ndarray, shape (S, V)
        $E_{sv} = P(x_i = v \mid z_i = s)$; rows sum to one.
    initial : ndarray, shape (S,)
        Distribution of $z_1$; must be the stationary distribution of ``transition``.
    regime : ndarray, shape (S,)
        Regime of each state, ``0`` (a) or ``1`` (b).
    sense_states : tuple of 2 ints
        The heaviest state of regime a and of regime b: the two senses of the shared token.
    shared_token : int
        Id of the shared token $w$; exactly the two sense states emit it.
    token_names : tuple of V str
        Readable token names.
    config : HMMConfig or None
        The named parameters the matrices were built from, if any.

    Raises
    ------
    ValueError
        If a shape, a distribution, positivity, stationarity or the sense structure fails.
    """

    transition: np.ndarray
    emission: np.ndarray
    initial: np.ndarray
    regime: np.ndarray
    sense_states: tuple[int, int]
    shared_token: int
    token_names: tuple[str, ...]
    config: HMMConfig | None = field(default=None)

    def __post_init__(self):
        transition = check_distribution(self.transition, "transition", strictly_positive=True)
        if transition.ndim != 2 or transition.shape[0] != transition.shape[1]:
            raise ValueError(f"transition must be a square (S, S) matrix, got shape {transition.shape}")
        n_states = transition.shape[0]
        emission = check_distribution(self.emission, "emission")
        if emission.ndim != 2 or emission.shape[0] != n_states:
            raise ValueError(f"emission must have shape ({n_states}, V), got {emission.shape}")
        initial = check_distribution(self.initial, "initial")
        if initial.shape != (n_states,):
            raise ValueError(f"initial must have shape ({n_states},), got {initial.shape}")
        drift = float(np.max(np.abs(initial @ transition - initial)))
        if drift > STATIONARY_TOLERANCE:
            raise ValueError(f"initial must be the stationary distribution of transition (drift {drift:.3g})")
        regime = as_int_array(self.regime, "regime", ndim=1)
        if regime.shape != (n_states,) or not np.all((regime == 0) | (regime == 1)):
            raise ValueError(f"regime must hold {n_states} labels in {{0, 1}}")
        vocab_size = emission.shape[1]
        shared = self.shared_token
        if isinstance(shared, bool) or not isinstance(shared, (int, np.integer)) or not 0 <= shared < vocab_size:
            raise ValueError(f"shared_token must be a token id in [0, {vocab_size}), got {shared!r}")
        senses = check_sequence(self.sense_states, "sense_states")
        if len(senses) != 2:
            raise ValueError("sense_states must hold two states")
        for k, state in enumerate(senses):
            if isinstance(state, bool) or not isinstance(state, (int, np.integer)):
                raise TypeError(f"sense_states[{k}] must be an int state id, got {type(state).__name__}")
        senses = tuple(int(s) for s in senses)
        for k, state in enumerate(senses):
            if not 0 <= state < n_states or regime[state] != k:
                raise ValueError(f"sense_states[{k}] must be a state of regime {k}, got {state}")
            members = np.flatnonzero(regime == k)
            if initial[state] < initial[members].max():
                raise ValueError(f"sense_states[{k}] must be the heaviest state of regime {k}")
        emits_shared = np.flatnonzero(emission[:, shared] > 0)
        if sorted(emits_shared.tolist()) != sorted(senses):
            raise ValueError("shared_token must be emitted by exactly the two sense states")
        names = tuple(str(name) for name in check_sequence(self.token_names, "token_names"))
        if len(names) != vocab_size:
            raise ValueError(f"token_names must have {vocab_size} entries, got {len(names)}")
        if self.config is not None:
            check_instance(self.config, "config", HMMConfig)
        for name, array in (("transition", transition), ("emission", emission), ("initial", initial),
                            ("regime", regime)):
            array = np.array(array, copy=True)
            array.setflags(write=False)
            object.__setattr__(self, name, array)
        object.__setattr__(self, "sense_states", senses)
        object.__setattr__(self, "shared_token", int(shared))
        object.__setattr__(self, "token_names", names)

    @property
    def n_states(self) -> int:
        """Number of hidden states $S$."""
        return self.transition.shape[0]

    @property
    def vocab_size(self) -> int:
        """Number of token types $V$."""
        return self.emission.shape[1]


def stationary_distribution(transition) -> np.ndarray:
    r"""The stationary distribution $\pi = \pi T$ of a positive transition matrix.

    Parameters
    ----------
    transition : array_like, shape (S, S)
        Row-stochastic matrix with every entry positive.

    Returns
    -------
    ndarray, shape (S,)
        The unique stationary distribution (solved as a linear system).

    Examples
    --------
    >>> stationary_distribution([[0.9, 0.1], [0.2, 0.8]]).round(4)
    array([0.6667, 0.3333])
    """
    transition = check_distribution(transition, "transition", strictly_positive=True)
    if transition.ndim != 2 or transition.shape[0] != transition.shape[1]:
        raise ValueError(f"transition must be a square (S, S) matrix, got shape {transition.shape}")
    n = transition.shape[0]
    system = np.vstack([transition.T - np.eye(n), np.ones((1, n))])
    rhs = np.zeros(n + 1)
    rhs[-1] = 1.0
    pi, *_ = np.linalg.lstsq(system, rhs, rcond=None)
    pi = np.clip(pi, 0.0, None)
    # One power step polishes the least-squares solution to machine precision.
    pi = pi / pi.sum()
    return (pi @ transition) / (pi @ transition).sum()


def build_hmm(config: HMMConfig) -> HiddenMarkovLanguage:
    """Build the two-regime HMM from its named parameters.

    States ``0–3`` are regime a (state ``0`` heavy), ``4–7`` regime b (state ``4`` heavy).
    State ``s`` emits its own tokens ``3s, 3s+1, 3s+2`` (named ``a0 … a11``, ``b0 … b11``);
    the heavy states also emit ``w`` (id 24).

    Parameters
    ----------
    config : HMMConfig
        The named parameters.

    Returns
    -------
    HiddenMarkovLanguage

    Raises
    ------
    TypeError
        If ``config`` is not an [`HMMConfig`][mlm_book.hmm.HMMConfig].

    Examples
    --------
    >>> hmm = build_hmm(HMMConfig())
    >>> bool((hmm.transition > 0).all()), hmm.sense_states
    (True, (0, 4))
    """
    if not isinstance(config, HMMConfig):
        raise TypeError(f"config must be an HMMConfig, got {type(config).__name__}")
    per_regime = 4
    within = np.zeros((per_regime, per_regime))
    within[0, 0] = config.heavy_stay
    within[0, 1:] = (1.0 - config.heavy_stay) * np.asarray(config.heavy_to_light)
    for light in range(1, per_regime):
        following = 1 + light % (per_regime - 1)  # 1 -> 2 -> 3 -> 1
        preceding = 1 + (light - 2) % (per_regime - 1)  # 1 -> 3, 2 -> 1, 3 -> 2
        moving_on = 1.0 - config.light_return - config.light_stay
        within[light, 0] = config.light_return
        within[light, light] = config.light_stay
        within[light, following] = moving_on * config.light_forward
        within[light, preceding] = moving_on * (1.0 - config.light_forward)
    entry = np.empty(per_regime)
    entry[0] = config.entry_heavy
    entry[1:] = (1.0 - config.entry_heavy) * np.asarray(config.heavy_to_light)

    n_states = 2 * per_regime
    transition = np.zeros((n_states, n_states))
    for regime, switch in enumerate((config.switch_a, config.switch_b)):
        rows = slice(regime * per_regime, (regime + 1) * per_regime)
        same = rows
        other = slice((1 - regime) * per_regime, (2 - regime) * per_regime)
        transition[rows, same] = (1.0 - switch) * within
        transition[rows, other] = switch * entry[None, :]

    own = 3
    vocab_size = n_states * own + 1
    shared = vocab_size - 1
    emission = np.zeros((n_states, vocab_size))
    split = np.asarray(config.own_split)
    for state in range(n_states):
        heavy = state % per_regime == 0
        own_mass = 1.0 - config.shared_emission if heavy else 1.0
        emission[state, own * state: own * state + own] = own_mass * split
        if heavy:
            emission[state, shared] = config.shared_emission

    names = tuple(f"a{i}" for i in range(12)) + tuple(f"b{i}" for i in range(12)) + ("w",)
    return HiddenMarkovLanguage(
        transition=transition,
        emission=emission,
        initial=stationary_distribution(transition),
        regime=np.repeat([0, 1], per_regime),
        sense_states=(0, per_regime),
        shared_token=shared,
        token_names=names,
        config=config,
    )


@functools.cache
def default_hmm() -> HiddenMarkovLanguage:
    """The book's HMM, built from the default [`HMMConfig`][mlm_book.hmm.HMMConfig] (memoised).

    Returns
    -------
    HiddenMarkovLanguage

    Examples
    --------
    >>> hmm = default_hmm()
    >>> hmm is default_hmm(), hmm.transition.shape, hmm.emission.shape
    (True, (8, 8), (8, 25))
    """
    return build_hmm(HMMConfig())


def check_hmm(hmm) -> HiddenMarkovLanguage:
    """Return ``hmm`` if it is a [`HiddenMarkovLanguage`][mlm_book.hmm.HiddenMarkovLanguage], else raise `TypeError`.

    Examples
    --------
    >>> check_hmm(default_hmm()).vocab_size
    25
    >>> check_hmm("hmm")
    Traceback (most recent call last):
    ...
    TypeError: hmm must be a HiddenMarkovLanguage, got str
    """
    if not isinstance(hmm, HiddenMarkovLanguage):
        raise TypeError(f"hmm must be a HiddenMarkovLanguage, got {type(hmm).__name__}")
    return hmm


def cache_description(hmm) -> dict:
    """What identifies ``hmm`` in a cache key: its named parameters, or else its exact arrays.

    An HMM built by [`build_hmm`][mlm_book.hmm.build_hmm] is described by its
    [`HMMConfig`][mlm_book.hmm.HMMConfig]: the stationary distribution derived from it changes
    in its last bits between BLAS builds, and a key must not. Any other HMM (hand-made
    matrices, or a config that does not match the matrices it carries) is described by a
    SHA-256 of every array and index that defines it.

    Examples
    --------
    >>> cache_description(default_hmm())["config"]["shared_emission"]
    0.4
    >>> other = build_hmm(HMMConfig(switch_a=0.1))
    >>> cache_description(other) != cache_description(default_hmm())
    True
    >>> hand_made = HiddenMarkovLanguage(other.transition, other.emission, other.initial, other.regime,
    ...                                  other.sense_states, other.shared_token, other.token_names)
    >>> sorted(cache_description(hand_made))
    ['sha256']
    """
    hmm = check_hmm(hmm)
    if hmm.config is not None:
        built = build_hmm(hmm.config)
        if (np.array_equal(built.transition, hmm.transition) and np.array_equal(built.emission, hmm.emission)
                and np.allclose(built.initial, hmm.initial, rtol=0, atol=1e-12)
                and np.array_equal(built.regime, hmm.regime) and built.sense_states == hmm.sense_states
                and built.shared_token == hmm.shared_token):
            return {"config": asdict(hmm.config)}
    digest = hashlib.sha256()
    for array in (hmm.transition, hmm.emission, hmm.initial, hmm.regime):
        digest.update(np.ascontiguousarray(array, dtype=np.float64).tobytes())
    digest.update(repr((hmm.sense_states, hmm.shared_token, hmm.token_names)).encode())
    return {"sha256": digest.hexdigest()}


def _as_batch(tokens, vocab_size: int) -> tuple[np.ndarray, bool]:
    """Tokens as (B, n) int64 and whether the input had no batch axis."""
    array = check_tokens(tokens, "tokens", vocab_size, ndim=(1, 2))
    if array.ndim == 1:
        return array[None, :], True
    if array.shape[0] == 0:
        raise ValueError(f"tokens must not be empty, got shape {array.shape}")
    return array, False


# --------------------------------------------------------------------------------------
# Sampling
# --------------------------------------------------------------------------------------


def _draw(cdf_rows: np.ndarray, uniforms: np.ndarray) -> np.ndarray:
    """Inverse-CDF draws: one index per row of ``cdf_rows`` (shape (B, K)), vectorised.

    A cumulative sum of probabilities ends a few ulp short of 1 (``1 - 2**-53`` happens), and
    ``Generator.random()`` can return a number above that: compared with the raw row, it
    would run past every entry and land on the last column even where that column has
    probability 0 (the shared token, drawn from a state that never emits it). The uniform is
    therefore scaled by the row's own total, so it stays below the last increase of the row.
    """
    index = (uniforms[:, None] * cdf_rows[:, -1:] >= cdf_rows).sum(axis=1)
    return np.minimum(index, cdf_rows.shape[1] - 1)


def sample(hmm: HiddenMarkovLanguage, batch: int, length: int,
           rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    r"""Sample stationary sequences of hidden states and tokens, vectorised over the batch.

    Parameters
    ----------
    hmm : HiddenMarkovLanguage
        The language.
    batch : int
        Number of sequences $B \ge 1$.
    length : int
        Sequence length $n \ge 1$.
    rng : numpy.random.Generator
        Source of randomness.

    Returns
    -------
    states : ndarray of int64, shape (batch, length)
    tokens : ndarray of int64, shape (batch, length)

    Raises
    ------
    TypeError
        If ``hmm`` or ``rng`` has the wrong type, or ``batch``/``length`` is not an int.
    ValueError
        If ``batch`` or ``length`` is below 1, or ``batch * length`` draws would need more
        than ``MAX_SAMPLE_ENTRIES`` CDF entries.

    Examples
    --------
    >>> import numpy as np
    >>> states, tokens = sample(default_hmm(), 3, 4, np.random.default_rng(1))
    >>> states.shape == tokens.shape == (3, 4)
    True
    """
    hmm = check_hmm(hmm)
    batch = check_positive_int(batch, "batch")
    length = check_positive_int(length, "length")
    check_table_size(batch * length, 1, MAX_SAMPLE_ENTRIES,
                     f"sampling batch={batch} sequences of length={length} over {max(hmm.n_states, hmm.vocab_size)} "
                     "states or tokens", factor=max(hmm.n_states, hmm.vocab_size))
    rng = check_generator(rng, "rng")
    transition_cdf = np.cumsum(hmm.transition, axis=1)
    emission_cdf = np.cumsum(hmm.emission, axis=1)
    initial_cdf = np.cumsum(hmm.initial)
    states = np.empty((batch, length), dtype=np.int64)
    uniforms = rng.random((batch, length))
    states[:, 0] = _draw(np.broadcast_to(initial_cdf, (batch, hmm.n_states)), uniforms[:, 0])
    for i in range(1, length):
        states[:, i] = _draw(transition_cdf[states[:, i - 1]], uniforms[:, i])
    emission_uniforms = rng.random(batch * length)
    tokens = _draw(emission_cdf[states.ravel()], emission_uniforms).reshape(batch, length)
    return states, tokens.astype(np.int64)


# --------------------------------------------------------------------------------------
# Forward–backward
# --------------------------------------------------------------------------------------


def emission_likelihood(hmm: HiddenMarkovLanguage, tokens) -> np.ndarray:
    r"""Per-position likelihoods $P(x_i \mid z_i = s)$ of clean tokens.

    Parameters
    ----------
    hmm : HiddenMarkovLanguage
        The language.
    tokens : array_like of int, shape (B, n) or (n,)
        Token ids in ``[0, V)``.

    Returns
    -------
    ndarray, shape (B, n, S) (or (n, S) for 1-d ``tokens``)

    Examples
    --------
    >>> hmm = default_hmm()
    >>> emission_likelihood(hmm, [hmm.shared_token])[0, list(hmm.sense_states)]
    array([0.4, 0.4])
    """
    hmm = check_hmm(hmm)
    batch, squeeze = _as_batch(tokens, hmm.vocab_size)
    likelihood = hmm.emission.T[batch]  # (B, n, S)
    return likelihood[0] if squeeze else likelihood


@dataclass(frozen=True, eq=False)
class ForwardBackward:
    r"""Exact smoothing results for a batch of sequences.

    Parameters
    ----------
    posterior : ndarray, shape (B, n, S)
        $P(z_i = s \mid \text{obs}_{1:n})$.
    leave_one_out : ndarray, shape (B, n, S)
        $P(z_i = s \mid \text{obs}_{-i})$: the posterior with position $i$'s observation
        left out (its likelihood row replaced by ones).
    log_evidence : ndarray, shape (B,)
        $\log P(\text{obs}_{1:n})$ in nats (with the likelihood rows as given).

    Examples
    --------
    >>> T = np.array([[0.9, 0.1], [0.2, 0.8]]); pi0 = np.array([2 / 3, 1 / 3])
    >>> x = forward_backward(T, pi0, np.ones((1, 3, 2)))
    >>> from dataclasses import fields
    >>> rebuilt = ForwardBackward(**{f.name: getattr(x, f.name) for f in fields(x)})   # its fields are checked
    >>> rebuilt.posterior.shape
    (1, 3, 2)
    """

    posterior: np.ndarray
    leave_one_out: np.ndarray
    log_evidence: np.ndarray

    def __post_init__(self):
        posterior = as_float_array(self.posterior, "posterior", ndim=3)
        leave = as_float_array(self.leave_one_out, "leave_one_out", ndim=3)
        evidence = as_float_array(self.log_evidence, "log_evidence", ndim=1)
        if leave.shape != posterior.shape or evidence.shape != posterior.shape[:1]:
            raise ValueError(f"posterior and leave_one_out (B, n, S) and log_evidence (B,) must agree, got "
                             f"{posterior.shape}, {leave.shape} and {evidence.shape}")
        if np.any(posterior < 0) or np.any(leave < 0):
            raise ValueError("posterior and leave_one_out must hold probabilities (non-negative)")


def forward_backward(transition, initial, likelihood) -> ForwardBackward:
    r"""Scaled forward–backward for any per-position likelihoods, vectorised over a batch.

    With $a_i(s) = P(z_i = s \mid \text{obs}_{<i})$ (the forward *prediction*) and
    $b_i(s) \propto P(\text{obs}_{>i} \mid z_i = s)$ (the backward message),

    $$P(z_i = s \mid \text{obs}_{-i}) \propto a_i(s)\, b_i(s), \qquad
      P(z_i = s \mid \text{obs}) \propto a_i(s)\, \ell_i(s)\, b_i(s),$$

    where $\ell_i(s) = P(\text{obs}_i \mid z_i = s)$ is row $i$ of ``likelihood``. Rows
    are rescaled by their maximum and messages renormalised at every step, so long
    sequences and tiny likelihoods neither underflow nor overflow. A row of ones is an
    unobserved position.

    Parameters
    ----------
    transition : array_like, shape (S, S)
        Row-stochastic transition matrix.
    initial : array_like, shape (S,)
        Distribution of $z_1$.
    likelihood : array_like, shape (B, n, S)
        Non-negative $P(\text{obs}_i \mid z_i = s)$; each row must have a positive entry.

    Returns
    -------
    ForwardBackward
        Posteriors, leave-one-out posteriors and log evidence.

    Raises
    ------
    ValueError
        On wrong shapes, non-distributions, negative or all-zero likelihood rows, an
        empty sequence, or observations of probability zero.

    Examples
    --------
    >>> import numpy as np
    >>> T = np.array([[0.9, 0.1], [0.2, 0.8]]); pi0 = np.array([2 / 3, 1 / 3])
    >>> fb = forward_backward(T, pi0, np.ones((1, 3, 2)))  # nothing observed
    >>> bool(np.allclose(fb.posterior, pi0)), bool(np.allclose(fb.log_evidence, 0.0))
    (True, True)
    """
    transition = check_distribution(transition, "transition")
    if transition.ndim != 2 or transition.shape[0] != transition.shape[1]:
        raise ValueError(f"transition must be a square (S, S) matrix, got shape {transition.shape}")
    n_states = transition.shape[0]
    initial = check_distribution(initial, "initial")
    if initial.shape != (n_states,):
        raise ValueError(f"initial must have shape ({n_states},), got {initial.shape}")
    likelihood = as_float_array(likelihood, "likelihood", ndim=3)
    batch, length, width = likelihood.shape
    if width != n_states:
        raise ValueError(f"likelihood must have {n_states} states on its last axis, got shape {likelihood.shape}")
    if batch == 0 or length == 0:
        raise ValueError(f"likelihood must hold at least one sequence of length >= 1, got shape {likelihood.shape}")
    if np.any(likelihood < 0):
        raise ValueError("likelihood must be non-negative")
    row_max = likelihood.max(axis=2)
    if np.any(row_max <= 0):
        raise ValueError("likelihood must have a positive entry in every row")
    scaled = likelihood / row_max[:, :, None]

    predicted = np.empty((batch, length, n_states))
    log_norm = np.zeros(batch)
    a = np.broadcast_to(initial, (batch, n_states))
    for i in range(length):
        predicted[:, i] = a
        joint = a * scaled[:, i]
        total = joint.sum(axis=1)
        if np.any(total <= 0):
            raise ValueError("likelihood gives the observations probability zero under transition/initial")
        log_norm += np.log(total)
        a = (joint / total[:, None]) @ transition
    backward = np.empty((batch, length, n_states))
    b = np.ones((batch, n_states))
    for i in range(length - 1, -1, -1):
        backward[:, i] = b
        b = (scaled[:, i] * b) @ transition.T
        b = b / b.max(axis=1, keepdims=True)

    leave = predicted * backward
    leave_total = leave.sum(axis=2, keepdims=True)
    posterior = leave * scaled
    posterior_total = posterior.sum(axis=2, keepdims=True)
    if np.any(leave_total <= 0) or np.any(posterior_total <= 0):
        raise ValueError("likelihood gives the observations probability zero under transition/initial")
    log_evidence = log_norm + np.log(row_max).sum(axis=1)
    return ForwardBackward(posterior=posterior / posterior_total,
                           leave_one_out=leave / leave_total,
                           log_evidence=log_evidence)


def token_conditionals(hmm: HiddenMarkovLanguage, tokens) -> np.ndarray:
    r"""Exact $P(x_i = v \mid x_{-i})$ at every position of clean sequences.

    Parameters
    ----------
    hmm : HiddenMarkovLanguage
        The language.
    tokens : array_like of int, shape (B, n) or (n,)
        Token ids.

    Returns
    -------
    ndarray, shape (B, n, V) (or (n, V) for 1-d ``tokens``)
        Each row sums to one.

    Examples
    --------
    >>> hmm = default_hmm()
    >>> p = token_conditionals(hmm, [0, 1, 2])
    >>> p.shape, bool(np.allclose(p.sum(-1), 1))
    ((3, 25), True)
    """
    hmm = check_hmm(hmm)
    batch, squeeze = _as_batch(tokens, hmm.vocab_size)
    smoothed = forward_backward(hmm.transition, hmm.initial, hmm.emission.T[batch])
    conditionals = smoothed.leave_one_out @ hmm.emission
    return conditionals[0] if squeeze else conditionals


def sense_posteriors(hmm: HiddenMarkovLanguage, tokens) -> np.ndarray:
    r"""Posterior mass $P(z_i = h_k \mid x)$ of the two sense states at every position.

    Where ``tokens == hmm.shared_token`` only the sense states can have emitted the
    token, so the two entries sum to one and are $P(\text{sense } k \mid x)$.

    Parameters
    ----------
    hmm : HiddenMarkovLanguage
        The language.
    tokens : array_like of int, shape (B, n) or (n,)
        Token ids.

    Returns
    -------
    ndarray, shape (B, n, 2) (or (n, 2) for 1-d ``tokens``)

    Examples
    --------
    >>> hmm = default_hmm()
    >>> p = sense_posteriors(hmm, [0, hmm.shared_token, 1])  # w between two regime-a tokens
    >>> bool(p[1, 0] > 0.95), round(float(p[1].sum()), 12)
    (True, 1.0)
    """
    hmm = check_hmm(hmm)
    batch, squeeze = _as_batch(tokens, hmm.vocab_size)
    smoothed = forward_backward(hmm.transition, hmm.initial, hmm.emission.T[batch])
    senses = smoothed.posterior[:, :, list(hmm.sense_states)]
    return senses[0] if squeeze else senses


@dataclass(frozen=True)
class BayesSenseAccuracy:
    r"""The exact Bayes classifier of the sense of $w$ on a set of clean sequences.

    Parameters
    ----------
    expected : float
        Mean over the occurrences of $w$ of $\max_k P(\text{sense } k \mid x)$: the Bayes
        classifier's expected accuracy given exactly these sentences.
    realised : float or None
        Fraction of occurrences whose most probable sense is the sampled true state
        (``None`` when no states were given).
    n_occurrences : int
        Number of occurrences of $w$.
    standard_error : float
        Standard error of ``expected`` with sentences as the independent units (a ratio
        estimator over sentences: occurrences in one sentence are correlated).

    Examples
    --------
    >>> states, tokens = sample(default_hmm(), 20, 24, np.random.default_rng(0))
    >>> x = bayes_sense_accuracy(default_hmm(), tokens, states)
    >>> from dataclasses import fields
    >>> rebuilt = BayesSenseAccuracy(**{f.name: getattr(x, f.name) for f in fields(x)})   # its fields are checked
    >>> rebuilt.n_occurrences == x.n_occurrences
    True
    """

    expected: float
    realised: float | None
    n_occurrences: int
    standard_error: float

    def __post_init__(self):
        check_real(self.expected, "expected", low=0.0, high=1.0)
        if self.realised is not None:
            check_real(self.realised, "realised", low=0.0, high=1.0)
        check_positive_int(self.n_occurrences, "n_occurrences")
        check_real(self.standard_error, "standard_error", low=0.0)


def bayes_sense_accuracy(hmm: HiddenMarkovLanguage, tokens, states=None) -> BayesSenseAccuracy:
    r"""Exact Bayes accuracy for the sense of the shared token on given clean sequences.

    The sense of an occurrence is its hidden state; the best any classifier of the whole
    sentence can do at that occurrence is $\max_k P(\text{sense } k \mid x)$, computed by
    forward–backward. Averaged over occurrences this is the ceiling a probe is measured
    against.

    Parameters
    ----------
    hmm : HiddenMarkovLanguage
        The language.
    tokens : array_like of int, shape (B, n)
        Clean sequences.
    states : array_like of int, shape (B, n), optional
        The sampled hidden states; if given, the realised accuracy of the Bayes classifier
        against them is returned too.

    Returns
    -------
    BayesSenseAccuracy

    Raises
    ------
    ValueError
        If ``tokens`` holds no occurrence of the shared token or fewer than two sentences
        (the standard error takes sentences as units), or shapes disagree.

    Examples
    --------
    >>> import numpy as np
    >>> hmm = default_hmm()
    >>> states, tokens = sample(hmm, 200, 24, np.random.default_rng(0))
    >>> result = bayes_sense_accuracy(hmm, tokens, states)
    >>> 0.9 < result.expected < 1.0, result.n_occurrences > 500
    (True, True)
    """
    hmm = check_hmm(hmm)
    batch, _ = _as_batch(tokens, hmm.vocab_size)
    if batch.shape[0] < 2:
        # sentences are the units of the standard error: one sentence leaves it undefined
        raise ValueError(f"tokens must hold at least two sentences (B >= 2), got shape {np.shape(tokens)}")
    occurrences = batch == hmm.shared_token
    count = int(occurrences.sum())
    if count == 0:
        raise ValueError("tokens must contain at least one occurrence of the shared token")
    senses = sense_posteriors(hmm, batch)[occurrences]  # (count, 2)
    best = senses.max(axis=1)
    realised = None
    if states is not None:
        states = as_int_array(states, "states", ndim=(1, 2))
        if states.size != batch.size or states.shape[-1] != batch.shape[-1]:
            raise ValueError(f"states must have the shape of tokens, got {states.shape}")
        states = states.reshape(batch.shape)
        truth = states[occurrences]
        if not np.all(np.isin(truth, hmm.sense_states)):
            raise ValueError("states must put every occurrence of the shared token in a sense state")
        guess = np.asarray(hmm.sense_states)[senses.argmax(axis=1)]
        realised = float(np.mean(guess == truth))
    mean = float(best.mean())
    # ratio estimator over sentences: per-sentence sums of max posteriors and counts
    sums = np.zeros(batch.shape[0])
    np.add.at(sums, np.nonzero(occurrences)[0], best)
    counts = occurrences.sum(axis=1)
    n_sentences = batch.shape[0]
    spread = ((sums - mean * counts) ** 2).sum() * n_sentences / (n_sentences - 1)
    error = float(np.sqrt(spread) / count)
    return BayesSenseAccuracy(expected=mean, realised=realised, n_occurrences=count,
                              standard_error=error)


def enumerate_joint(hmm: HiddenMarkovLanguage, length: int) -> np.ndarray:
    r"""The exact probability of every token sequence of a given length.

    Built by summing out the hidden state one position at a time over all $V^t$
    prefixes (vectorised; the loop is over positions only).

    Parameters
    ----------
    hmm : HiddenMarkovLanguage
        The language.
    length : int
        Sequence length $n \ge 1$; $V^n S$ must stay below ``MAX_ENUMERATION_ENTRIES``
        (for $V = 25$: $n \le 4$).

    Returns
    -------
    ndarray, shape (V,) * length
        ``joint[x1, ..., xn] = P(x_1, ..., x_n)``; sums to one.

    Raises
    ------
    ValueError
        If ``length`` is below 1 or the table would be too large.

    Examples
    --------
    >>> joint = enumerate_joint(default_hmm(), 2)
    >>> joint.shape, round(float(joint.sum()), 12)
    ((25, 25), 1.0)
    """
    hmm = check_hmm(hmm)
    length = check_positive_int(length, "length")
    n_states, vocab_size = hmm.n_states, hmm.vocab_size
    check_table_size(vocab_size, length, MAX_ENUMERATION_ENTRIES, f"enumerating every sequence of length {length}",
                     factor=n_states)
    # forward[prefix, s] = P(x_1..x_t = prefix, z_t = s)
    forward = (hmm.initial[:, None] * hmm.emission).T  # (V, S)
    for _ in range(1, length):
        moved = forward @ hmm.transition  # (V^t, S): P(prefix, z_{t+1} = s)
        forward = (moved[:, None, :] * hmm.emission.T[None, :, :]).reshape(-1, n_states)
    return forward.sum(axis=1).reshape((vocab_size,) * length)


def enumerate_posteriors(transition, initial, likelihood) -> ForwardBackward:
    r"""Brute-force smoothing: sum over all $S^n$ hidden paths (the check on forward–backward).

    Parameters
    ----------
    transition : array_like, shape (S, S)
        Row-stochastic transition matrix.
    initial : array_like, shape (S,)
        Distribution of $z_1$.
    likelihood : array_like, shape (B, n, S)
        Non-negative per-position likelihoods; $S^n$ must stay below
        ``MAX_ENUMERATION_ENTRIES``.

    Returns
    -------
    ForwardBackward
        The same quantities as [`forward_backward`][mlm_book.hmm.forward_backward], computed without recursion.

    Raises
    ------
    ValueError
        On bad shapes or distributions, or when there are too many paths.

    Examples
    --------
    >>> import numpy as np
    >>> hmm = default_hmm()
    >>> lik = emission_likelihood(hmm, [[24, 0, 24]])
    >>> fast = forward_backward(hmm.transition, hmm.initial, lik)
    >>> slow = enumerate_posteriors(hmm.transition, hmm.initial, lik)
    >>> float(np.abs(fast.leave_one_out - slow.leave_one_out).max()) < 1e-14
    True
    """
    transition = check_distribution(transition, "transition")
    n_states = transition.shape[0]
    if transition.ndim != 2 or transition.shape[1] != n_states:
        raise ValueError(f"transition must be a square (S, S) matrix, got shape {transition.shape}")
    initial = check_distribution(initial, "initial")
    if initial.shape != (n_states,):
        raise ValueError(f"initial must have shape ({n_states},), got {initial.shape}")
    likelihood = as_float_array(likelihood, "likelihood", ndim=3)
    batch, length, width = likelihood.shape
    if width != n_states or batch == 0 or length == 0:
        raise ValueError(f"likelihood must have shape (B >= 1, n >= 1, {n_states}), got {likelihood.shape}")
    if np.any(likelihood < 0):
        raise ValueError("likelihood must be non-negative")
    check_table_size(n_states, length, MAX_ENUMERATION_ENTRIES, f"enumerating the {n_states}**{length} paths of "
                     "likelihood", factor=max(batch, length))
    paths = np.indices((n_states,) * length).reshape(length, -1).T  # (P, n)
    prior = initial[paths[:, 0]] * np.prod(transition[paths[:, :-1], paths[:, 1:]], axis=1)  # (P,)
    rows = likelihood[:, np.arange(length), paths]  # (B, P, n)
    weight = prior * np.prod(rows, axis=2)  # (B, P)
    evidence = weight.sum(axis=1)
    if np.any(evidence <= 0):
        raise ValueError("likelihood gives the observations probability zero under transition/initial")
    one_hot = paths[:, :, None] == np.arange(n_states)  # (P, n, S)
    posterior = np.einsum("bp,pis->bis", weight, one_hot) / evidence[:, None, None]
    leave = np.empty((batch, length, n_states))
    for i in range(length):
        others = prior * np.prod(np.delete(rows, i, axis=2), axis=2)  # (B, P)
        leave[:, i] = others @ one_hot[:, i]
    leave /= leave.sum(axis=2, keepdims=True)
    return ForwardBackward(posterior=posterior, leave_one_out=leave, log_evidence=np.log(evidence))
