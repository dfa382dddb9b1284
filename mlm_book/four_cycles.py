r"""The four-cycle test on the book's HMM: one protocol, the same draws for every family of conditionals.

Corollary 2's gap $\delta$ of a family of conditionals on a four-cycle (two positions, two
values at each) is zero for the conditionals of any joint distribution
([`mlm_book.compat`][mlm_book.compat]). The book evaluates it on fixed draws: `FOUR_CYCLE`'s 200
stationary HMM sequences of length 24, an adjacent pair of positions each, and the two likeliest
values at each position under the HMM's exact full conditionals. Every family (the HMM's exact
conditionals, Theorem 2's population optimum at any selection rate, a trained encoder) is
evaluated on the same draws by [`four_cycle_deltas`][mlm_book.four_cycles.four_cycle_deltas], so
chapter 3, the HMM encoder's chapter, chapter 11's incompatibility study and the lab compare
families draw by draw.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cache

import numpy as np

from mlm_book import compat
from mlm_book.channel import Channel
from mlm_book.hmm import default_hmm
from mlm_book.validation import as_float_array, check_instance, check_positive_int, check_probability

__all__ = ["FourCycleConfig", "FOUR_CYCLE", "four_cycle_deltas", "exact_families", "RhoSweep", "rho_sweep",
           "four_cycle_draws"]


@dataclass(frozen=True)
class FourCycleConfig:
    """The four-cycle protocol: draws, pair type, channel settings and the rho grid.

    Attributes
    ----------
    count : int
        Number of draws.
    length : int
        HMM sequence length.
    seed : int
        Seed of the draws' generator (every family sees the same draws).
    rho : float
        Selection rate of the population optimum's channel (BERT's).
    mask, random : float
        The channel's [MASK] and random-replacement shares (BERT's 80/10/10).
    rho_grid : tuple of float
        Selection rates for the sweep.

    Raises
    ------
    TypeError, ValueError
        If ``count`` is not in 1..100,000, ``length`` not in 2..1,000, ``seed`` negative,
        ``rho`` or a rate of ``rho_grid`` (a non-empty tuple) not in (0, 1], or ``mask`` and
        ``random`` not shares in [0, 1] with ``mask + random <= 1``.

    Examples
    --------
    >>> config = FourCycleConfig()
    >>> config.count, config.length, config.channel().rho, len(config.rho_grid)
    (200, 24, 0.15, 12)
    """

    count: int = 200
    length: int = 24
    seed: int = 20260304
    rho: float = 0.15
    mask: float = 0.8
    random: float = 0.1
    rho_grid: tuple[float, ...] = field(
        default_factory=lambda: tuple(float(rho) for rho in np.round(np.geomspace(0.01, 0.5, 12), 4)))

    def __post_init__(self):
        if check_positive_int(self.count, "count") > 10**5:
            raise ValueError(f"count must be at most 100,000 draws, got {self.count}")
        if check_positive_int(self.length, "length", minimum=2) > 1000:
            raise ValueError(f"length must be at most 1,000, got {self.length}")
        check_positive_int(self.seed, "seed", minimum=0)
        _check_rate(self.rho, "rho")
        mask, random = check_probability(self.mask, "mask"), check_probability(self.random, "random")
        if mask + random > 1.0:
            raise ValueError(f"mask + random must be at most 1, got mask={mask}, random={random}")
        if not isinstance(self.rho_grid, tuple) or not self.rho_grid:
            raise TypeError(f"rho_grid must be a non-empty tuple of rates, got {self.rho_grid!r:.60}")
        for rho in self.rho_grid:
            _check_rate(rho, "rho_grid")

    def generator(self) -> np.random.Generator:
        """A fresh generator for the draws: same seed, same draws."""
        return np.random.default_rng(self.seed)

    def channel(self, rho: float | None = None) -> Channel:
        """BERT's channel on the HMM's 25 tokens at ``rho`` (default: the config's)."""
        return Channel(default_hmm().vocab_size, rho=self.rho if rho is None else rho, mask=self.mask,
                       random=self.random)


def _check_rate(rho, name: str) -> float:
    """A selection rate in (0, 1]: zero selects nothing."""
    if check_probability(rho, name) == 0.0:
        raise ValueError(f"{name} must be a rate in (0, 1], got 0")
    return float(rho)


def _check_config(config) -> FourCycleConfig:
    """``config`` if it is a `FourCycleConfig`; named ``config`` in the error."""
    return check_instance(config, "config", FourCycleConfig)


FOUR_CYCLE = FourCycleConfig()
"""The book's protocol: 200 draws of length 24, BERT's channel at rho = 0.15, twelve rates from 0.01 to 0.5."""


def four_cycle_deltas(conditional: compat.ConditionalFamily, *, mask_id: int | None = None,
                      config: FourCycleConfig = FOUR_CYCLE) -> np.ndarray:
    r"""The book's four-cycle protocol on any family: ``(count,)`` gaps $\delta$ on the shared draws.

    The draws are ``config.count`` stationary HMM sequences of length ``config.length``, an
    adjacent pair of positions each, and the two likeliest values at each position under
    the HMM's exact full conditionals at the drawn sequence. They come from a generator
    seeded with ``config.seed``, so every family is evaluated on the same cycles.

    Parameters
    ----------
    conditional : callable
        ``conditional(tokens (B, n), positions (B,)) -> (B, V)``.
    mask_id : int, optional
        Written at the queried position before each call (for an encoder's ``[MASK]``).
    config : FourCycleConfig
        The protocol's settings.

    Raises
    ------
    TypeError, ValueError
        If ``conditional`` is not callable, ``mask_id`` not ``None`` or a non-negative
        integer, or ``config`` not a `FourCycleConfig`.

    Examples
    --------
    >>> delta = four_cycle_deltas(compat.hmm_conditionals(default_hmm()), config=FourCycleConfig(count=5))
    >>> delta.shape, bool(np.abs(delta).max() < 1e-12)
    ((5,), True)
    """
    if not callable(conditional):
        raise TypeError(f"conditional must be callable (tokens, positions) -> (B, V), got {type(conditional).__name__}")
    if mask_id is not None:
        check_positive_int(mask_id, "mask_id", minimum=0)
    _check_config(config)
    return compat.four_cycle_protocol(conditional, default_hmm(), config.generator(), count=config.count,
                                      length=config.length, mask_id=mask_id)


def exact_families(config: FourCycleConfig = FOUR_CYCLE) -> dict[str, np.ndarray]:
    """Per-draw gaps for the HMM's exact conditionals and Theorem 2's population optimum at ``config.rho``."""
    config = check_instance(config, "config", FourCycleConfig)
    return _exact_families(config)


@cache
def _exact_families(config: FourCycleConfig = FOUR_CYCLE) -> dict[str, np.ndarray]:
    """The memoised body of `exact_families`, which checks the arguments before the cache."""
    hmm = default_hmm()
    return {"HMM conditionals": four_cycle_deltas(compat.hmm_conditionals(hmm), config=config),
            f"population optimum (rho = {config.rho})":
                four_cycle_deltas(compat.population_optimum_conditionals(hmm, config.channel()), config=config)}


@dataclass(frozen=True, eq=False)
class RhoSweep:
    """The population optimum's gaps over a grid of selection rates.

    Attributes
    ----------
    rho : numpy.ndarray
        ``(K,)`` selection rates.
    deltas : numpy.ndarray
        ``(K, count)`` per-draw gaps on the shared draws.

    Raises
    ------
    TypeError, ValueError
        If ``rho`` is not a non-empty 1-D array of rates in (0, 1], or ``deltas`` not a finite
        array of shape ``(len(rho), count)``.

    Examples
    --------
    >>> sweep = rho_sweep()
    >>> sweep.deltas.shape, bool(sweep.median[0] < sweep.median[-1])
    ((12, 200), True)
    """

    rho: np.ndarray
    deltas: np.ndarray

    def __post_init__(self):
        rho = as_float_array(self.rho, "rho", ndim=1)
        if rho.size == 0 or np.any(rho <= 0) or np.any(rho > 1):
            raise ValueError(f"rho must be one or more rates in (0, 1], got {rho.tolist()!r:.60}")
        deltas = as_float_array(self.deltas, "deltas", ndim=2)
        if deltas.shape[0] != rho.size or deltas.shape[1] == 0:
            raise ValueError(f"deltas must have shape (len(rho) = {rho.size}, count), got {deltas.shape}")

    @property
    def median(self) -> np.ndarray:
        return np.median(np.abs(self.deltas), axis=1)

    @property
    def maximum(self) -> np.ndarray:
        return np.abs(self.deltas).max(axis=1)

    def slope(self, statistic: str = "median") -> float:
        """Least-squares slope of log |delta| (``"median"`` or ``"maximum"`` over draws) against log rho."""
        values = {"median": self.median, "maximum": self.maximum}[statistic]
        return float(np.polyfit(np.log(self.rho), np.log(values), 1)[0])


def rho_sweep(config: FourCycleConfig = FOUR_CYCLE) -> RhoSweep:
    """Population optimum's four-cycle gaps at every rho of ``config.rho_grid``."""
    config = check_instance(config, "config", FourCycleConfig)
    return _rho_sweep(config)


@cache
def _rho_sweep(config: FourCycleConfig = FOUR_CYCLE) -> RhoSweep:
    """The memoised body of `rho_sweep`, which checks the arguments before the cache."""
    hmm = default_hmm()
    deltas = [four_cycle_deltas(compat.population_optimum_conditionals(hmm, config.channel(rho)), config=config)
              for rho in config.rho_grid]
    return RhoSweep(np.array(config.rho_grid), np.array(deltas))


def four_cycle_draws(config: FourCycleConfig = FOUR_CYCLE) -> compat.FourCycleDraws:
    """The book's four-cycle draws themselves: the sequences, position pairs and values every family is tested on.

    [`four_cycle_deltas`][mlm_book.four_cycles.four_cycle_deltas] draws exactly these (same generator, same calls).

    Examples
    --------
    >>> draws = four_cycle_draws()
    >>> draws.tokens.shape == (FOUR_CYCLE.count, FOUR_CYCLE.length)
    True

    Raises
    ------
    TypeError
        If ``config`` is not a `FourCycleConfig`.
    """
    _check_config(config)
    return compat.hmm_four_cycle_draws(default_hmm(), config.generator(), count=config.count, length=config.length)
