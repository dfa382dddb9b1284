r"""Pseudo-likelihood and maximum-likelihood estimates of Ising chains over many exact samples, as an artefact.

One run is one chain $(n, h, J)$: at each sample size $N$ of ``sizes``, ``replicates`` independent
samples of $N$ exact draws (each the histogram of the $2^n$ states,
[`mlm_book.ising.sample_state_counts`][mlm_book.ising.sample_state_counts], from one generator
seeded with ``seed``), and from each sample the maximum-pseudo-likelihood estimate and the exact
maximum-likelihood estimate of $(h, J)$ ([`mlm_book.ising`][mlm_book.ising]). Chapter 3's
finite-sample study is the book's chain (`STUDY`); chapter 11's consistency study is the same
computation on a grid of nine chains ([`grid_setups`][mlm_book.artefacts.ising_estimates.grid_setups]),
chain $k$ seeded with ``GRID_SEED + k``. A run takes seconds; what reads the estimates lives in
[`mlm_book.experiments.ch03_pseudo_likelihood`][mlm_book.experiments.ch03_pseudo_likelihood] and
[`mlm_book.experiments.ch11_pseudo_likelihood`][mlm_book.experiments.ch11_pseudo_likelihood].
"""

from __future__ import annotations

import itertools
from dataclasses import asdict, dataclass

import numpy as np

from mlm_book import artefacts, cache, ising
from mlm_book.validation import check_instance, check_positive_int, check_real, check_sequence

__all__ = ["IsingEstimatesSetup", "STUDY", "GRID_FIELDS", "GRID_COUPLINGS", "GRID_SIZES", "GRID_REPLICATES",
           "GRID_SEED", "grid_setups", "estimates", "is_built", "book_setups", "tiny_setup", "ARTEFACT_KINDS"]


@dataclass(frozen=True)
class IsingEstimatesSetup:
    """One chain's estimates: the chain, the sample sizes, the replicates per size and the seed.

    Attributes
    ----------
    n, h, J : int, float, float
        The chain (2..20 spins: the estimators enumerate the $2^n$ states).
    sizes : tuple of int
        Sample sizes $N$ (numbers of independent sequences), each at most 10**7.
    replicates : int
        Independent samples per size (1..100,000).
    seed : int
        Seed of the one generator that draws every sample, size after size.

    Raises
    ------
    TypeError, ValueError
        If a field is out of its range or of the wrong type (the message names it).

    Examples
    --------
    >>> STUDY.chain, STUDY.sizes[0], STUDY.replicates
    (IsingChain(n=10, h=0.2, J=0.5), 50, 1000)
    >>> IsingEstimatesSetup(n=10, h=0.2, J=0.5, sizes=(), replicates=10, seed=0)
    Traceback (most recent call last):
    ...
    TypeError: sizes must be a non-empty tuple of sample sizes, got ()

    >>> IsingEstimatesSetup(n=4, h=0.2, J=0.5, sizes=(50, 100), replicates=5, seed=0).sizes
    (50, 100)
    """

    n: int
    h: float
    J: float
    sizes: tuple
    replicates: int
    seed: int

    def __post_init__(self):
        if check_positive_int(self.n, "n", minimum=2) > 20:
            raise ValueError(f"n must be at most 20 (the estimators enumerate 2**n states), got {self.n}")
        check_real(self.h, "h")
        check_real(self.J, "J")
        if not isinstance(self.sizes, tuple) or not self.sizes:
            raise TypeError(f"sizes must be a non-empty tuple of sample sizes, got {self.sizes!r:.60}")
        for size in self.sizes:
            if check_positive_int(size, "sizes") > 10**7:
                raise ValueError(f"sizes must be at most 10,000,000 sequences, got {size}")
        if check_positive_int(self.replicates, "replicates") > 10**5:
            raise ValueError(f"replicates must be at most 100,000, got {self.replicates}")
        check_positive_int(self.seed, "seed", minimum=0)

    @property
    def chain(self) -> ising.IsingChain:
        return ising.IsingChain(self.n, self.h, self.J)


STUDY = IsingEstimatesSetup(n=10, h=0.2, J=0.5, sizes=(50, 100, 200, 500, 1000, 2000, 5000, 20000, 50000),
                            replicates=1000, seed=20260303)
"""Chapter 3's finite-sample study: the book's chain, nine sizes from 50 to 50,000, 1000 replicates each."""

GRID_FIELDS = (0.0, 0.2, 0.5)
"""Chapter 11's grid of fields $h$."""
GRID_COUPLINGS = (0.25, 0.5, 1.0)
"""Chapter 11's grid of couplings $J$."""
GRID_SIZES = (100, 300, 1000, 3000, 10000)
"""Chapter 11's sample sizes: five, over two decades."""
GRID_REPLICATES = 1000
"""Chapter 11's replicates per chain and size."""
GRID_SEED = 20260310
"""Chapter 11's base seed: chain $k$ of the grid is seeded with ``GRID_SEED + k``."""


def grid_setups(n: int = 10, fields: tuple = GRID_FIELDS, couplings: tuple = GRID_COUPLINGS,
                sizes: tuple = GRID_SIZES, replicates: int = GRID_REPLICATES,
                seed: int = GRID_SEED) -> tuple[IsingEstimatesSetup, ...]:
    """One setup per chain of ``fields`` x ``couplings`` (field outer), chain $k$ seeded with ``seed + k``.

    Raises
    ------
    TypeError, ValueError
        If a value is not one an `IsingEstimatesSetup` takes, or ``fields`` or ``couplings`` is not a sequence.

    Examples
    --------
    >>> setups = grid_setups()
    >>> len(setups), setups[4].chain, setups[4].seed - GRID_SEED
    (9, IsingChain(n=10, h=0.2, J=0.5), 4)
    """
    grid = {name: tuple(check_real(value, name) for value in check_sequence(values, name))
            for name, values in (("fields", fields), ("couplings", couplings))}
    seed = check_positive_int(seed, "seed", minimum=0)
    return tuple(IsingEstimatesSetup(n=n, h=h, J=J, sizes=sizes, replicates=replicates, seed=seed + index)
                 for index, (h, J) in enumerate(itertools.product(grid["fields"], grid["couplings"])))


def _estimate(setup: IsingEstimatesSetup) -> dict[str, np.ndarray]:
    chain = setup.chain
    rng = np.random.default_rng(setup.seed)
    table = ising.state_local_counts(chain.n).reshape(2 ** chain.n, 10)
    statistics = ising.sufficient_statistics(ising.all_states(chain.n))
    pseudo, maximum = [], []
    for size in setup.sizes:
        counts = ising.sample_state_counts(chain, size, rng, replicates=setup.replicates)
        local = (counts @ table).reshape(setup.replicates, 2, 5)
        pseudo.append(ising.fit_pseudo_likelihood(local, float(size)).theta)
        maximum.append(ising.fit_maximum_likelihood(counts @ statistics / size, chain.n).theta)
    return {"sizes": np.array(setup.sizes), "pseudo": np.array(pseudo), "maximum": np.array(maximum)}


def _entry(setup: IsingEstimatesSetup) -> tuple:
    config = asdict(check_instance(setup, "setup", IsingEstimatesSetup))
    config["sizes"] = list(setup.sizes)
    return "ising-estimates", config, [artefacts.key_source("ising-estimates")]


def estimates(setup: IsingEstimatesSetup) -> dict[str, np.ndarray]:
    """The estimates of ``setup`` (from the store; computed and stored on a miss, seconds, even in the quick tests).

    Returns
    -------
    dict
        ``sizes`` ``(K,)``; ``pseudo`` and ``maximum``, ``(K, replicates, 2)``: the MPLE and the
        exact MLE of ``(h, J)`` from each replicate, both from the same samples.

    Raises
    ------
    TypeError
        If ``setup`` is not an `IsingEstimatesSetup`.

    Examples
    --------
    >>> found = estimates(STUDY)        # from the store
    >>> found["pseudo"].shape, found["maximum"].shape
    ((9, 1000, 2), (9, 1000, 2))
    """
    name, config, producers = _entry(setup)
    arrays, _ = cache.cached(name, config, producers, lambda: _estimate(setup), book_sized=False)
    return arrays


def is_built(setup: IsingEstimatesSetup) -> bool:
    """Whether the store holds the estimates of ``setup`` (a damaged entry counts as absent).

    Raises
    ------
    TypeError
        If ``setup`` is not an `IsingEstimatesSetup`.

    Examples
    --------
    >>> isinstance(is_built(STUDY), bool)       # chapter 3's study: True once it is built
    True
    """
    return cache.load(cache.entry_for(*_entry(setup))) is not None


def book_setups() -> tuple[IsingEstimatesSetup, ...]:
    """Chapter 3's study, then chapter 11's nine chains.

    Examples
    --------
    >>> len(book_setups()), book_setups()[0] == STUDY
    (10, True)
    """
    return (STUDY, *grid_setups())


def tiny_setup() -> IsingEstimatesSetup:
    """A chain of four spins, two sizes, five replicates: the same code in a fraction of a second.

    Examples
    --------
    >>> tiny_setup().n
    4
    """
    return IsingEstimatesSetup(n=4, h=0.2, J=0.5, sizes=(50, 100), replicates=5, seed=0)


# ----------------------------------------------------------------------------- the declaration (not keyed)
#: Seconds per (size x replicate x 2^n) on one core, measured on 2026-12-03: chapter 3's study (nine
#: sizes, 1000 replicates of a ten-spin chain) takes 0.8 s; the estimators' cost hardly depends on N.
_SECONDS_PER_REPLICATE_STATE = 9e-8

ARTEFACT_KINDS = (artefacts.Kind(
    name="ising-estimates", chapter=3,
    summary="MPLE and MLE of Ising chains over exact samples: chapter 3's study and chapter 11's nine chains",
    # nn.runtime: the store keys every entry on the BLAS kernel family it names
    modules=("mlm_book.artefacts.ising_estimates", "mlm_book.ising", "mlm_book.nn.runtime"),
    setups=book_setups, is_built=is_built, build=estimates,
    cost=lambda setup: _SECONDS_PER_REPLICATE_STATE * len(setup.sizes) * setup.replicates * 2 ** setup.n,
    describe=lambda setup: f"h = {setup.h:g}, J = {setup.J:g}, seed {setup.seed}", tiny=tiny_setup),)
