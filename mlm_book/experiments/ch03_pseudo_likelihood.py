r"""Chapter 3: pseudo-likelihood and the missing joint.

Everything the chapter shows, built from [`mlm_book.ising`][mlm_book.ising], [`mlm_book.compat`][mlm_book.compat],
[`mlm_book.hmm`][mlm_book.hmm] and [`mlm_book.channel`][mlm_book.channel]:

- Theorem 3 on the Ising chain and on enumerated HMM sequences (both sides exactly);
- the population gradient and the grid maximum of the expected log pseudo-likelihood;
- the maximum-pseudo-likelihood estimate's error over many replicates and sample sizes,
  next to the exact MLE's and the sandwich formula's prediction (the estimates are the
  artefact [`mlm_book.artefacts.ising_estimates`][mlm_book.artefacts.ising_estimates]);
- Brook's lemma and the HMM's joint rebuilt from its conditionals;
- the four-cycle test on any number of families of conditionals, and its dependence on
  the selection rate $\rho$ for Theorem 2's population optimum.

The four-cycle protocol is shared: [`mlm_book.four_cycles`][mlm_book.four_cycles] evaluates any
family on the book's 200 draws (seeded by [`FourCycleConfig`][mlm_book.four_cycles.FourCycleConfig]),
so another family (a trained encoder) is compared draw by draw with the two exact ones; this
module shows what the protocol finds.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any
from dataclasses import dataclass
from functools import cache

import numpy as np

from mlm_book import compat, ising
from mlm_book.artefacts import ising_estimates
from mlm_book.channel import exact_posterior
from mlm_book.figures import PALETTE, WIDE, DescribedFigure, describe, subplots
from mlm_book.four_cycles import FOUR_CYCLE, FourCycleConfig, exact_families, four_cycle_draws, rho_sweep
from mlm_book.hmm import (
    default_hmm,
    emission_likelihood,
    enumerate_joint,
    forward_backward,
    sample,
    stationary_distribution,
    token_conditionals,
)
from mlm_book.ledger import Claim, over_seeds
from mlm_book.readings.hmm_encoder import seed_four_cycles
from mlm_book.validation import (
    as_float_array,
    as_int_array,
    check_choice,
    check_instance,
    check_positive_float,
    check_positive_int,
    check_probability,
    check_real,
    check_sequence,
    check_table_size,
)

__all__ = [
    "IsingStudyConfig",
    "THEOREM3_PREDICTORS",
    "theorem3_ising",
    "theorem3_ising_rows",
    "theorem3_hmm",
    "population_check",
    "EstimatorSweep",
    "estimator_sweep",
    "gaussian_error_quantiles",
    "page_draw_percentiles",
    "efficiency_table",
    "efficiency_by_coupling",
    "brook_check",
    "rebuild_check",
    "random_joint_check",
    "population_gaps",
    "describe_draw",
    "rebuild_disagreement",
    "mask_kl",
    "figure_error_vs_n",
    "figure_delta_vs_rho",
    "figure_delta_histogram",
    "CLAIMS",
]


# --------------------------------------------------------------------------------------
# Configurations
# --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class IsingStudyConfig:
    """The chain, the sample sizes and the replicates of the finite-sample study.

    Attributes
    ----------
    n, h, J : int, float, float
        The book's chain.
    sizes : tuple of int
        Sample sizes $N$ (numbers of independent sequences).
    replicates : int
        Independent samples per size.
    seed : int
        Seed of the study's generator.
    page_sizes : tuple of int
        The sizes the topic page quotes.
    page_errors : tuple of float
        The topic page's single-draw errors at those sizes.

    Raises
    ------
    TypeError, ValueError
        If ``n`` is not in 2..16 (the study enumerates the $2^n$ states, as `ising` does up to 16), ``h`` or ``J`` not
        finite, ``sizes`` not a non-empty tuple of positive integers (at most 10**7),
        ``replicates`` not in 1..100,000, ``seed`` negative, ``page_sizes`` not among ``sizes``
        or ``page_errors`` not one finite non-negative error per page size.

    Examples
    --------
    >>> config = IsingStudyConfig()
    >>> config.chain.n, config.chain.J, config.page_sizes[0] in config.sizes
    (10, 0.5, True)
    """

    n: int = ising_estimates.STUDY.n
    h: float = ising_estimates.STUDY.h
    J: float = ising_estimates.STUDY.J
    sizes: tuple[int, ...] = ising_estimates.STUDY.sizes
    replicates: int = ising_estimates.STUDY.replicates
    seed: int = ising_estimates.STUDY.seed
    page_sizes: tuple[int, int] = (200, 20000)
    page_errors: tuple[float, float] = (0.011, 0.004)

    def __post_init__(self):
        # the study enumerates the 2**n states, as far as `ising` does
        check_positive_int(self.n, "n", minimum=2, maximum=ising.MAX_ENUMERATED_LENGTH)
        check_real(self.h, "h")
        check_real(self.J, "J")
        # tuples keep the config hashable (the study's results are memoised per config)
        for name in ("sizes", "page_sizes", "page_errors"):
            value = getattr(self, name)
            if not isinstance(value, tuple) or not value:
                raise TypeError(f"{name} must be a non-empty tuple, got {value!r:.60}")
        for size in self.sizes:
            if check_positive_int(size, "sizes") > 10**7:
                raise ValueError(f"sizes must be at most 10,000,000 sequences, got {size}")
        if check_positive_int(self.replicates, "replicates") > 10**5:
            raise ValueError(f"replicates must be at most 100,000, got {self.replicates}")
        check_positive_int(self.seed, "seed", minimum=0)
        for size in self.page_sizes:
            if check_positive_int(size, "page_sizes") not in self.sizes:
                raise ValueError(f"page_sizes must be among sizes {self.sizes}, got {size}")
        if len(self.page_errors) != len(self.page_sizes):
            raise ValueError(f"page_errors must give one error per page size ({len(self.page_sizes)}), "
                             f"got {len(self.page_errors)}")
        for error in self.page_errors:
            check_real(error, "page_errors", low=0.0)

    @property
    def chain(self) -> ising.IsingChain:
        return ising.IsingChain(self.n, self.h, self.J)

    @property
    def estimates_setup(self) -> ising_estimates.IsingEstimatesSetup:
        """The artefact that holds this study's estimates (the book's is `ising_estimates.STUDY`)."""
        return ising_estimates.IsingEstimatesSetup(n=self.n, h=self.h, J=self.J, sizes=self.sizes,
                                                   replicates=self.replicates, seed=self.seed)


def _check_rate(rho, name: str) -> float:
    """A selection rate in (0, 1]: zero selects nothing."""
    if check_probability(rho, name) == 0.0:
        raise ValueError(f"{name} must be a rate in (0, 1], got 0")
    return float(rho)


def _check_config(config, kind: type):
    """``config`` if it is a ``kind``; named ``config`` in the error."""
    return check_instance(config, "config", kind)


ISING = IsingStudyConfig()

# Upper bounds of the size arguments below: each is far above the book's value and keeps a call
# within seconds and megabytes (without them, ``10**12`` allocates terabytes or runs for days).
#: Longest HMM sequence `theorem3_hmm` enumerates (25**4 sequences).
MAX_THEOREM3_LENGTH = 4
#: Largest grid step of `population_check` (the grid spans ``2 * half_width * spacing`` around the truth).
MAX_SPACING = 1.0
#: Largest ``half_width`` of `population_check` (a grid of 401 x 401 points).
MAX_HALF_WIDTH = 200
#: Most Gaussian ``draws`` of `gaussian_error_quantiles` (its quantiles are within 0.3 % at 400,000).
MAX_DRAWS = 10**7
#: Most sequence ``pairs`` of `brook_check`, and its longest sequences.
MAX_PAIRS = 10**5
MAX_BROOK_LENGTH = 1000
#: Most pairs x length**2 `brook_check` takes (its time and memory grow so: each of the pairs x length
#: conditionals is a forward-backward pass over a whole sequence); the book's call is 200 x 24**2.
MAX_BROOK_WORK = 500_000
#: Longest sequences whose joint `rebuild_check` rebuilds (25**5 entries).
MAX_REBUILD_LENGTH = 5
#: Most four-cycles of `random_joint_check` per joint.
MAX_CYCLES = 10**6
#: Most ``sequences`` of `mask_kl`, its longest sequences and its most masked copies (sequences x length**2).
MAX_MASK_KL_SEQUENCES = 10**5
MAX_MASK_KL_LENGTH = 1000
MAX_MASK_KL_ENTRIES = 10**7


def _check_sizes(values, name: str, *, minimum: int, maximum: int) -> tuple[int, ...]:
    """``values`` as a non-empty tuple of integers in ``[minimum, maximum]`` (hashable, for the caches)."""
    items = check_sequence(values, name)
    if not items:
        raise ValueError(f"{name} must not be empty")
    return tuple(check_positive_int(value, name, minimum=minimum, maximum=maximum) for value in items)


def _check_rhos(rhos) -> tuple[float, ...]:
    """``rhos`` as a non-empty tuple of selection rates in (0, 1] (a rate of 0 shows no [MASK])."""
    items = check_sequence(rhos, "rhos")
    if not items:
        raise ValueError("rhos must not be empty")
    checked = tuple(check_probability(rho, "rhos") for rho in items)
    if min(checked) == 0:
        raise ValueError("rhos must be selection rates in (0, 1] (at 0 no position is masked), got 0.0")
    return checked


# --------------------------------------------------------------------------------------
# Theorem 3 and the population objective
# --------------------------------------------------------------------------------------


THEOREM3_PREDICTORS: tuple[tuple[float, float], ...] = ((0.0, 0.0), (-0.5, 1.0), (0.6, 0.1), (1.5, -0.7))
"""The wrong predictors of Theorem 3's check on the Ising chain: conditionals $q_{h,J}$ at these $(h, J)$."""


def theorem3_ising(config: IsingStudyConfig = ISING) -> dict[str, float]:
    r"""Largest $|\text{risk} + \frac1n E\log\mathrm{PL}|$ over several predictors $q_{h,J}$, and the risk at the truth.

    The risk is computed by masking each position of each of the $2^n$ states
    ([`mlm_book.ising.masked_risk`][mlm_book.ising.masked_risk]); the pseudo-likelihood from expected local counts.

    Examples
    --------
    >>> theorem3_ising()["gap"] < 1e-12
    True
    """
    config = _check_config(config, IsingStudyConfig)
    return _theorem3_ising(config)


@cache
def _theorem3_ising(config: IsingStudyConfig = ISING) -> dict[str, float]:
    """The memoised body of `theorem3_ising`, which checks the arguments before the cache."""
    chain = config.chain
    counts = ising.expected_local_counts(chain)
    predictors = [(chain.h, chain.J), *THEOREM3_PREDICTORS]
    gaps, risks = [], []
    for h, J in predictors:
        risk = ising.masked_risk(chain, h, J)
        value, _, _ = ising.pseudo_likelihood_objective(counts, [h, J])
        gaps.append(abs(risk + value / chain.n))
        risks.append(risk)
    return {"gap": float(max(gaps)), "risk_at_truth": float(risks[0]), "smallest_other_risk": float(min(risks[1:]))}


def theorem3_ising_rows(config: IsingStudyConfig = ISING) -> list[tuple[str, float, float, float, float]]:
    r"""Both sides of Theorem 3 for each Ising predictor: the truth, then [`THEOREM3_PREDICTORS`][mlm_book.experiments.ch03_pseudo_likelihood.THEOREM3_PREDICTORS].

    Returns
    -------
    list of (str, float, float, float, float)
        ``(name, h, J, risk, minus_pl)`` per predictor: the one-mask masked-LM risk
        ([`mlm_book.ising.masked_risk`][mlm_book.ising.masked_risk], nats per token) and
        $-\frac1n E \log \mathrm{PL}_{q_{h,J}}$ from expected local counts.

    Examples
    --------
    >>> rows = theorem3_ising_rows()
    >>> rows[0][0], max(abs(risk - minus_pl) for _, _, _, risk, minus_pl in rows) < 1e-12
    ('truth', True)

    Raises
    ------
    TypeError
        If ``config`` is not an `IsingStudyConfig`.
    """
    chain = _check_config(config, IsingStudyConfig).chain
    counts = ising.expected_local_counts(chain)
    rows = []
    for k, (h, J) in enumerate([(chain.h, chain.J), *THEOREM3_PREDICTORS]):
        value, _, _ = ising.pseudo_likelihood_objective(counts, [h, J])
        rows.append(("truth" if k == 0 else f"wrong {k}", float(h), float(J), float(ising.masked_risk(chain, h, J)),
                     float(-value / chain.n)))
    return rows


def _masked_hmm_risk(transition, initial, emission, tokens, weights) -> float:
    """E_x E_I [-log q(x_I | x with I masked)] by one masked forward-backward per position."""
    length = tokens.shape[1]
    total = 0.0
    rows = np.arange(len(tokens))
    for position in range(length):
        likelihood = emission.T[tokens].copy()
        likelihood[:, position, :] = 1.0   # the mask: no observation at this position
        posterior = forward_backward(transition, initial, likelihood).posterior[:, position]
        prediction = posterior @ emission
        total += weights @ -np.log(prediction[rows, tokens[:, position]])
    return float(total / length)


def _log_pseudo_likelihood(transition, initial, emission, tokens) -> np.ndarray:
    """log PL of each sequence from one pass's leave-one-out posteriors."""
    conditionals = forward_backward(transition, initial, emission.T[tokens]).leave_one_out @ emission
    picked = np.take_along_axis(conditionals, tokens[..., None], axis=-1)[..., 0]
    return np.log(picked).sum(axis=1)


def theorem3_hmm(lengths: tuple[int, ...] = (2, 3)) -> dict[str, float]:
    r"""Theorem 3 on every HMM sequence of each length, for the true model and a perturbed one.

    Left side: the one-mask risk, with a forward–backward pass per masked position.
    Right side: $-\frac1n \sum_x p(x) \log \mathrm{PL}_q(x)$ from one pass's
    leave-one-out posteriors. $q$ is the HMM itself and a perturbed HMM (transitions
    and emissions mixed with uniform), so the identity is checked for a predictor that
    is not the truth too.

    Returns
    -------
    dict
        ``gap``: the largest absolute difference; ``excess``: the perturbed predictor's
        risk minus the true one's at the longest length (positive, by Theorem 3's second part).

    Examples
    --------
    >>> theorem3_hmm((2,))["gap"] < 1e-12
    True
    """
    lengths = _check_sizes(lengths, "lengths", minimum=1, maximum=MAX_THEOREM3_LENGTH)
    return _theorem3_hmm(lengths)


@cache
def _theorem3_hmm(lengths: tuple[int, ...] = (2, 3)) -> dict[str, float]:
    """The memoised body of `theorem3_hmm`, which checks the arguments before the cache."""
    hmm = default_hmm()
    states, vocab = hmm.n_states, hmm.vocab_size
    perturbed_transition = 0.7 * hmm.transition + 0.3 / states
    perturbed = (perturbed_transition, stationary_distribution(perturbed_transition),
                 0.8 * hmm.emission + 0.2 / vocab)
    truth = (hmm.transition, hmm.initial, hmm.emission)
    gaps, risks = [], {}
    for length in lengths:
        joint = enumerate_joint(hmm, length)
        tokens = np.indices(joint.shape).reshape(length, -1).T
        weights = joint.ravel()
        for name, model in (("truth", truth), ("perturbed", perturbed)):
            left = _masked_hmm_risk(*model, tokens, weights)
            right = -(weights @ _log_pseudo_likelihood(*model, tokens)) / length
            gaps.append(abs(left - right))
            risks[name] = left
    return {"gap": float(max(gaps)), "excess": float(risks["perturbed"] - risks["truth"])}


def population_check(config: IsingStudyConfig = ISING, spacing: float = 0.05, half_width: int = 10) -> dict:
    r"""Population gradient at the truth and the grid maximum of $E \log \mathrm{PL}$.

    Returns
    -------
    dict
        ``gradient``: max-abs gradient at the truth; ``argmax``: the grid point with the
        largest value; ``margin``: value at the truth minus the best other grid value
        (positive when the truth is the unique grid maximiser).

    Examples
    --------
    >>> population_check()["gradient"] < 1e-12
    True
    """
    config = _check_config(config, IsingStudyConfig)
    spacing = check_real(spacing, "spacing", low=0.0, high=MAX_SPACING)
    if spacing == 0:
        raise ValueError("spacing must be a finite number > 0 (the grid's step), got 0.0")
    half_width = check_positive_int(half_width, "half_width", maximum=MAX_HALF_WIDTH)
    return _population_check(config, spacing, half_width)


@cache
def _population_check(config: IsingStudyConfig = ISING, spacing: float = 0.05, half_width: int = 10) -> dict:
    """The memoised body of `population_check`, which checks the arguments before the cache."""
    chain = config.chain
    counts = ising.expected_local_counts(chain)
    value, grad, _ = ising.pseudo_likelihood_objective(counts, chain.theta)
    offsets = spacing * np.arange(-half_width, half_width + 1)
    grid = chain.theta + np.stack(np.meshgrid(offsets, offsets, indexing="ij"), axis=-1)
    values, _, _ = ising.pseudo_likelihood_objective(counts, grid)
    best = np.unravel_index(np.argmax(values), values.shape)
    others = values.copy()
    others[half_width, half_width] = -np.inf
    return {"gradient": float(np.abs(grad).max()), "argmax": tuple(float(v) for v in grid[best]),
            "margin": float(value - others.max()), "grid_points": int(values.size)}


# --------------------------------------------------------------------------------------
# Finite samples: MPLE against MLE
# --------------------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class EstimatorSweep:
    """Estimates over replicates and sample sizes.

    Attributes
    ----------
    config : IsingStudyConfig
    sizes : numpy.ndarray
        ``(K,)`` sample sizes.
    pseudo : numpy.ndarray
        ``(K, R, 2)`` maximum-pseudo-likelihood estimates of ``(h, J)``.
    maximum : numpy.ndarray
        ``(K, R, 2)`` exact maximum-likelihood estimates from the same samples.

    Raises
    ------
    TypeError, ValueError
        If ``config`` is not an `IsingStudyConfig`, ``sizes`` not positive integers, or
        ``pseudo``/``maximum`` not finite arrays of shape ``(len(sizes), R, 2)``.

    Examples
    --------
    >>> sweep = estimator_sweep()        # from the store
    >>> sweep.pseudo.shape, sweep.at(200).shape
    ((9, 1000, 2), (1000,))
    >>> tiny = EstimatorSweep(ISING, np.array([50, 100]), np.zeros((2, 3, 2)), np.zeros((2, 3, 2)))
    >>> tiny.at(100).shape                # three replicates' errors at N = 100
    (3,)
    """

    config: IsingStudyConfig
    sizes: np.ndarray
    pseudo: np.ndarray
    maximum: np.ndarray

    def __post_init__(self):
        _check_config(self.config, IsingStudyConfig)
        sizes = as_int_array(self.sizes, "sizes", ndim=1)
        if sizes.size == 0 or sizes.min() < 1:
            raise ValueError(f"sizes must be positive sample sizes, got {sizes.tolist()!r:.60}")
        for name in ("pseudo", "maximum"):
            estimates = as_float_array(getattr(self, name), name, ndim=3)
            if estimates.shape[0] != sizes.size or estimates.shape[2] != 2 or estimates.shape[1] == 0:
                raise ValueError(f"{name} must have shape (len(sizes) = {sizes.size}, replicates, 2), "
                                 f"got {estimates.shape}")
        if np.shape(self.pseudo) != np.shape(self.maximum):
            raise ValueError(f"maximum must have the shape of pseudo {np.shape(self.pseudo)}, "
                             f"got {np.shape(self.maximum)}")

    def errors(self, which: str = "pseudo") -> np.ndarray:
        """Max-abs error over ``(h, J)``, ``(K, R)``."""
        estimates = {"pseudo": self.pseudo, "maximum": self.maximum}[which]
        return np.abs(estimates - self.config.chain.theta).max(axis=-1)

    def at(self, size: int, which: str = "pseudo") -> np.ndarray:
        """Errors ``(R,)`` at one sample size."""
        index = int(np.flatnonzero(self.sizes == size)[0])
        return self.errors(which)[index]

    def quantiles(self, size: int, which: str = "pseudo") -> tuple[float, float, float]:
        """(median, 10 %, 90 %) of the error at one size."""
        errors = self.at(size, which)
        return (float(np.median(errors)), float(np.quantile(errors, 0.1)), float(np.quantile(errors, 0.9)))


def estimator_sweep(config: IsingStudyConfig = ISING) -> EstimatorSweep:
    """MPLE and MLE over ``config.replicates`` exact samples at every size (the artefact
    [`mlm_book.artefacts.ising_estimates`][mlm_book.artefacts.ising_estimates]: from the store, computed on a miss).

    Each replicate is the histogram of ``N`` independent exact draws
    ([`mlm_book.ising.sample_state_counts`][mlm_book.ising.sample_state_counts]); both estimators read the same samples.
    """
    config = _check_config(config, IsingStudyConfig)
    return _estimator_sweep(config)


@cache
def _estimator_sweep(config: IsingStudyConfig = ISING) -> EstimatorSweep:
    """The memoised body of `estimator_sweep`, which checks the arguments before the cache."""
    arrays = ising_estimates.estimates(_check_config(config, IsingStudyConfig).estimates_setup)
    return EstimatorSweep(config, arrays["sizes"], arrays["pseudo"], arrays["maximum"])


def gaussian_error_quantiles(which: str = "pseudo", config: IsingStudyConfig = ISING,
                             draws: int = 400_000) -> tuple[float, float, float]:
    r"""(median, 10 %, 90 %) of $\max(|Z_h|, |Z_J|)$ for $Z \sim \mathcal N(0, \Sigma)$, per-sequence $\Sigma$.

    With the exact asymptotic covariance $\Sigma$ (sandwich for ``"pseudo"``, inverse
    Fisher for ``"maximum"``), the error at size $N$ is predicted to be these quantiles
    divided by $\sqrt N$. Monte Carlo over ``draws`` Gaussian draws with a fixed seed
    (relative accuracy of the quantiles ~ 0.3 %).

    Examples
    --------
    >>> median, low, high = gaussian_error_quantiles("pseudo", draws=2000)
    >>> bool(low < median < high), round(median, 1)
    (True, 0.4)
    """
    which = check_choice(which, "which", ("pseudo", "maximum"))
    config = _check_config(config, IsingStudyConfig)
    draws = check_positive_int(draws, "draws", maximum=MAX_DRAWS)
    return _gaussian_error_quantiles(which, config, draws)


@cache
def _gaussian_error_quantiles(which: str = "pseudo", config: IsingStudyConfig = ISING,
                             draws: int = 400_000) -> tuple[float, float, float]:
    """The memoised body of `gaussian_error_quantiles`, which checks the arguments before the cache."""
    covariances = ising.asymptotic_covariances(config.chain)
    sigma = {"pseudo": covariances.pseudo_likelihood, "maximum": covariances.maximum_likelihood}[which]
    z = np.random.default_rng(7).standard_normal((draws, 2)) @ np.linalg.cholesky(sigma).T
    errors = np.abs(z).max(axis=1)
    return (float(np.median(errors)), float(np.quantile(errors, 0.1)), float(np.quantile(errors, 0.9)))


def page_draw_percentiles(config: IsingStudyConfig = ISING) -> dict[int, float]:
    """Percentile (0–100) of the topic page's single-draw error within the replicates' errors, per page size.

    Raises
    ------
    TypeError
        If ``config`` is not an `IsingStudyConfig`.

    Examples
    --------
    >>> percentiles = page_draw_percentiles()
    >>> sorted(percentiles), all(0 <= p <= 100 for p in percentiles.values())
    ([200, 20000], True)
    """
    sweep = estimator_sweep(_check_config(config, IsingStudyConfig))
    return {size: float(100 * np.mean(sweep.at(size) <= error))
            for size, error in zip(config.page_sizes, config.page_errors)}


def efficiency_table(config: IsingStudyConfig = ISING) -> dict[str, np.ndarray]:
    r"""Variance ratios Var(MPLE)/Var(MLE) per parameter: asymptotic (sandwich) and over replicates.

    Returns
    -------
    dict
        ``asymptotic``: ``(2,)``; ``sizes``: ``(K,)``; ``empirical``: ``(K, 2)``;
        ``scaled_pseudo`` / ``scaled_maximum``: ``(K, 2)`` $N \cdot$ variance over replicates,
        next to ``sandwich`` / ``inverse_fisher``: ``(2,)`` their asymptotic values.

    Raises
    ------
    TypeError
        If ``config`` is not an `IsingStudyConfig`.

    Examples
    --------
    >>> table = efficiency_table()
    >>> table["empirical"].shape, bool(np.all(table["asymptotic"] >= 1))
    ((9, 2), True)
    """
    sweep = estimator_sweep(_check_config(config, IsingStudyConfig))
    covariances = ising.asymptotic_covariances(config.chain)
    var_pseudo = sweep.pseudo.var(axis=1)
    var_maximum = sweep.maximum.var(axis=1)
    return {"asymptotic": covariances.variance_ratio, "sizes": sweep.sizes, "empirical": var_pseudo / var_maximum,
            "scaled_pseudo": var_pseudo * sweep.sizes[:, None], "scaled_maximum": var_maximum * sweep.sizes[:, None],
            "sandwich": np.diag(covariances.pseudo_likelihood),
            "inverse_fisher": np.diag(covariances.maximum_likelihood)}


def efficiency_by_coupling(couplings: tuple[float, ...] = (0.0, 0.25, 0.5, 0.75, 1.0, 1.5),
                           config: IsingStudyConfig = ISING) -> dict[float, np.ndarray]:
    r"""Exact asymptotic Var(MPLE)/Var(MLE) for ``(h, J)`` on the config's chain with other couplings $J$.

    Examples
    --------
    >>> ratios = efficiency_by_coupling((0.0, 1.0))
    >>> bool(ratios[1.0][1] > ratios[0.0][1] >= 1.0)
    True

    Raises
    ------
    TypeError, ValueError
        If ``couplings`` is not a non-empty sequence of finite numbers, or ``config`` not an
        `IsingStudyConfig`.
    """
    _check_config(config, IsingStudyConfig)
    couplings = check_sequence(couplings, "couplings")
    if not couplings:
        raise ValueError("couplings must hold at least one coupling J")
    for J in couplings:
        check_real(J, "couplings")
    return {float(J): ising.asymptotic_covariances(ising.IsingChain(config.n, config.h, J)).variance_ratio
            for J in couplings}


# --------------------------------------------------------------------------------------
# Brook's lemma
# --------------------------------------------------------------------------------------


def brook_check(pairs: int = 200, length: int = 24, seed: int = 20260305) -> float:
    r"""Largest $|\log p(x)/p(y)|$ error of Brook's product over random pairs of HMM sequences.

    The reference is the forward algorithm's $\log p(x) - \log p(y)$.

    Examples
    --------
    >>> brook_check(pairs=5) < 1e-12
    True
    """
    pairs = check_positive_int(pairs, "pairs", maximum=MAX_PAIRS)
    length = check_positive_int(length, "length", minimum=2, maximum=MAX_BROOK_LENGTH)
    seed = check_positive_int(seed, "seed", minimum=0)
    if pairs * length * length > MAX_BROOK_WORK:
        raise ValueError(f"pairs * length**2 must be at most MAX_BROOK_WORK ({MAX_BROOK_WORK:,}): Brook's product asks "
                         f"every position's conditional of every pair, a forward-backward pass over length sequences "
                         f"each; got pairs={pairs}, length={length} ({pairs * length * length:,})")
    return _brook_check(pairs, length, seed)


@cache
def _brook_check(pairs: int = 200, length: int = 24, seed: int = 20260305) -> float:
    """The memoised body of `brook_check`, which checks the arguments before the cache."""
    hmm = default_hmm()
    rng = np.random.default_rng(seed)
    _, x = sample(hmm, pairs, length, rng)
    _, y = sample(hmm, pairs, length, rng)
    log_p = [forward_backward(hmm.transition, hmm.initial, emission_likelihood(hmm, t)).log_evidence for t in (x, y)]
    ratio = compat.brook_log_ratio(compat.hmm_conditionals(hmm), x, y)
    return float(np.abs(ratio - (log_p[0] - log_p[1])).max())


def rebuild_check(length: int = 4) -> dict[str, float]:
    """The HMM's joint over all 25**length sequences rebuilt from its conditionals: max abs error and size.

    Examples
    --------
    >>> check = rebuild_check(length=2)
    >>> check["sequences"], bool(check["max_error"] < 1e-15)
    (625, True)
    """
    length = check_positive_int(length, "length", maximum=MAX_REBUILD_LENGTH)
    return _rebuild_check(length)


@cache
def _rebuild_check(length: int = 4) -> dict[str, float]:
    """The memoised body of `rebuild_check`, which checks the arguments before the cache."""
    hmm = default_hmm()
    rebuilt = compat.rebuild_joint(compat.hmm_conditionals(hmm), hmm.vocab_size, length)
    exact = enumerate_joint(hmm, length)
    return {"max_error": float(np.abs(rebuilt - exact).max()), "sequences": int(rebuilt.size),
            "smallest_probability": float(exact.min())}


def random_joint_check(seed: int = 20260306, cycles: int = 500) -> float:
    r"""Largest $|\delta|$ over random positive joints (several shapes and concentrations) and random cycles.

    Examples
    --------
    >>> random_joint_check(cycles=20) < 1e-12
    True
    """
    seed = check_positive_int(seed, "seed", minimum=0)
    cycles = check_positive_int(cycles, "cycles", maximum=MAX_CYCLES)
    return _random_joint_check(seed, cycles)


@cache
def _random_joint_check(seed: int = 20260306, cycles: int = 500) -> float:
    """The memoised body of `random_joint_check`, which checks the arguments before the cache."""
    rng = np.random.default_rng(seed)
    worst = 0.0
    for length, vocab in ((2, 6), (3, 5), (4, 4), (5, 3)):
        for concentration in (0.2, 1.0, 10.0):
            joint = compat.random_positive_joint(length, vocab, rng, concentration=concentration)
            tokens = rng.integers(0, vocab, size=(cycles, length))
            draws = compat.choose_four_cycles(tokens, compat.joint_conditionals(joint), rng, adjacent=False)
            a, a_alt, b, b_alt = (rng.integers(0, vocab, cycles) for _ in range(4))
            delta = compat.four_cycle_gap(compat.joint_conditionals(joint), tokens, draws.first, draws.second,
                                          a, a_alt, b, b_alt)
            worst = max(worst, float(np.abs(delta).max()))
    return worst


# --------------------------------------------------------------------------------------
# The four-cycle test on families of conditionals
# --------------------------------------------------------------------------------------


def population_gaps(rhos, indices=None, config: FourCycleConfig = FOUR_CYCLE) -> np.ndarray:
    r"""Theorem 2's population optimum's $\delta$ on some of the book's draws, at any selection rates.

    Parameters
    ----------
    rhos : sequence of float
        Selection rates (the channel's other settings are ``config``'s).
    indices : sequence of int, optional
        Draws to evaluate (default: all).
    config : FourCycleConfig
        The protocol.

    Returns
    -------
    numpy.ndarray
        ``(len(rhos), len(indices))`` gaps in nats.

    Raises
    ------
    TypeError, ValueError
        If ``rhos`` is not a non-empty sequence of rates in (0, 1], ``indices`` not ``None`` or
        a non-empty 1-D array of draw numbers in ``[0, config.count)``, or ``config`` not a
        `FourCycleConfig`.

    Examples
    --------
    >>> gaps = population_gaps([FOUR_CYCLE.rho], indices=[0, 1])
    >>> population = next(v for k, v in exact_families().items() if k.startswith("population"))
    >>> bool(np.allclose(gaps[0], population[:2], rtol=0, atol=1e-12))
    True
    """
    from dataclasses import fields

    _check_config(config, FourCycleConfig)
    rhos = [_check_rate(rho, "rhos") for rho in check_sequence(rhos, "rhos")]
    if not rhos:
        raise ValueError("rhos must hold at least one selection rate")
    if indices is not None:
        indices = as_int_array(indices, "indices", ndim=1)
        if indices.size == 0 or indices.min() < 0 or indices.max() >= config.count:
            raise ValueError(f"indices must be one or more draw numbers in [0, {config.count}), "
                             f"got {indices.tolist()!r:.60}")
    hmm = default_hmm()
    draws = four_cycle_draws(config)
    if indices is not None:
        chosen = np.asarray(indices, dtype=np.int64)
        draws = compat.FourCycleDraws(**{f.name: getattr(draws, f.name)[chosen] for f in fields(draws)})
    return np.array([draws.gaps(compat.population_optimum_conditionals(hmm, config.channel(float(rho))))
                     for rho in rhos])


def describe_draw(index: int, config: FourCycleConfig = FOUR_CYCLE, margin: int = 3) -> dict[str, str]:
    """One four-cycle draw in words: the sentence around its pair, the pair, and the four values.

    Returns
    -------
    dict
        ``context``: the tokens from ``margin`` before the pair to ``margin`` after it, the
        pair in brackets; ``pair``: the two drawn tokens; ``values_i``, ``values_j``: the
        cycle's two values at each position.

    Examples
    --------
    >>> sorted(describe_draw(0))
    ['context', 'pair', 'values_i', 'values_j']

    Raises
    ------
    TypeError, ValueError
        If ``index`` is not a draw number in ``[0, config.count)``, ``config`` not a
        `FourCycleConfig` or ``margin`` not a non-negative integer.
    """
    _check_config(config, FourCycleConfig)
    if check_positive_int(index, "index", minimum=0) >= config.count:
        raise ValueError(f"index must be a draw number in [0, {config.count}), got {index}")
    check_positive_int(margin, "margin", minimum=0)
    names = default_hmm().token_names
    draws = four_cycle_draws(config)
    tokens, i, j = draws.tokens[index], int(draws.first[index]), int(draws.second[index])
    words = [f"[{names[t]}]" if k in (i, j) else names[t] for k, t in enumerate(tokens)]
    return {"context": " ".join(words[max(0, i - margin):j + margin + 1]),
            "pair": f"{names[tokens[i]]} {names[tokens[j]]}",
            "values_i": f"{names[draws.a[index]]}, {names[draws.a_alt[index]]}",
            "values_j": f"{names[draws.b[index]]}, {names[draws.b_alt[index]]}"}


def rebuild_disagreement(conditional: compat.ConditionalFamily, length: int = 3,
                         references: tuple[str, str] = ("a0", "w")) -> dict[str, float]:
    r"""Brook's rebuild of a family on all HMM sequences of ``length``, from two reference sequences.

    Each reference is one token repeated ``length`` times. For the conditionals of a joint
    both rebuilds return that joint; for an incompatible family they disagree.

    Returns
    -------
    dict
        ``total_variation`` between the two rebuilt tables, ``max_log_ratio``: the largest
        $|\log p_1(x) / p_2(x)|$ over the sequences.

    Examples
    --------
    >>> rebuild_disagreement(compat.hmm_conditionals(default_hmm()), length=2)["total_variation"] < 1e-12
    True

    Raises
    ------
    TypeError, ValueError
        If ``conditional`` is not callable, ``length`` not in 1..4 (the rebuild enumerates
        $25^{\text{length}}$ sequences) or ``references`` not two token names of the HMM.
    """
    if not callable(conditional):
        raise TypeError(f"conditional must be callable (tokens, positions) -> (B, V), got {type(conditional).__name__}")
    if check_positive_int(length, "length") > 4:
        raise ValueError(f"length must be at most 4 (the rebuild enumerates 25**length sequences), got {length}")
    hmm = default_hmm()
    references = check_sequence(references, "references", of=str)
    if len(references) != 2 or not all(name in hmm.token_names for name in references):
        raise ValueError(f"references must be two token names of the HMM (e.g. ('a0', 'w')), got {references!r:.60}")
    ids = [hmm.token_names.index(name) for name in references]
    first, second = (compat.rebuild_joint(conditional, hmm.vocab_size, length, reference=np.full(length, k))
                     for k in ids)
    return {"total_variation": float(0.5 * np.abs(first - second).sum()),
            "max_log_ratio": float(np.abs(np.log(first) - np.log(second)).max())}


def mask_kl(rhos: tuple[float, ...] = (0.001, 0.01, 0.05, 0.15, 0.3, 0.5), sequences: int = 100,
            length: int = 24, seed: int = 20260307) -> dict[float, float]:
    r"""Mean KL(true full conditional ‖ Theorem 2's optimum at a [MASK]) over every position, per rho.

    Each position of ``sequences`` HMM sequences is masked in turn, every other position
    shown as its clean token; the optimum reads those through the channel.

    Examples
    --------
    >>> kl = mask_kl(rhos=(0.01, 0.15), sequences=4)
    >>> kl[0.15] > kl[0.01] > 0
    True
    """
    rhos = _check_rhos(rhos)
    sequences = check_positive_int(sequences, "sequences", maximum=MAX_MASK_KL_SEQUENCES)
    length = check_positive_int(length, "length", minimum=2, maximum=MAX_MASK_KL_LENGTH)
    seed = check_positive_int(seed, "seed", minimum=0)
    check_table_size(sequences * length * length, 1, MAX_MASK_KL_ENTRIES, f"the masked copies of sequences={sequences} of length={length}")
    return _mask_kl(rhos, sequences, length, seed)


@cache
def _mask_kl(rhos: tuple[float, ...] = (0.001, 0.01, 0.05, 0.15, 0.3, 0.5), sequences: int = 100,
            length: int = 24, seed: int = 20260307) -> dict[float, float]:
    """The memoised body of `mask_kl`, which checks the arguments before the cache."""
    hmm = default_hmm()
    _, tokens = sample(hmm, sequences, length, np.random.default_rng(seed))
    truth = token_conditionals(hmm, tokens)                      # (B, n, V)
    shown = np.repeat(tokens[:, None, :], length, axis=1)        # (B, n, n): copy k masks position k
    result = {}
    for rho in rhos:
        channel = FOUR_CYCLE.channel(rho)
        masked = shown.copy()
        masked[:, np.arange(length), np.arange(length)] = channel.mask_id
        optimum = exact_posterior(hmm, channel, masked.reshape(-1, length)).reshape(sequences, length, length, -1)
        at_mask = optimum[:, np.arange(length), np.arange(length)]  # (B, n, V)
        kl = (truth * (np.log(truth) - np.log(at_mask))).sum(-1)
        result[rho] = float(kl.mean())
    return result


# --------------------------------------------------------------------------------------
# Figures
# --------------------------------------------------------------------------------------


def figure_error_vs_n(config: IsingStudyConfig = ISING) -> DescribedFigure:
    r"""Log–log error against $N$ for MPLE and MLE: medians, 10–90 % bands and the asymptotic prediction.

    Returns
    -------
    DescribedFigure
        The medians, bands and predictions, with alt text that gives each estimator's slope
        and how close the prediction comes.

    Raises
    ------
    TypeError
        If ``config`` is not an `IsingStudyConfig`.

    Examples
    --------
    >>> import matplotlib.pyplot as plt
    >>> drawn = figure_error_vs_n()
    >>> drawn.figure.axes[0].get_xscale(), len(drawn.figure.axes[0].lines)     # median and asymptote per estimator
    ('log', 4)
    >>> drawn.alt.split(". ")[1]
    'The MPLE median falls from 0.054 to 0.0017, a fitted slope of -0.50 on the log-log axes, and the MLE median from 0.05 to 0.0016, a slope of -0.50'
    >>> plt.close(drawn.figure)
    """
    sweep = estimator_sweep(_check_config(config, IsingStudyConfig))
    sizes = sweep.sizes.astype(float)
    fig, ax = subplots(width=WIDE, height=4.6)
    for which, name, colour, marker in (("pseudo", "max. pseudo-likelihood (MPLE)", PALETTE["blue"], "o"),
                                        ("maximum", "exact max. likelihood (MLE)", PALETTE["orange"], "s")):
        errors = sweep.errors(which)
        ax.fill_between(sizes, np.quantile(errors, 0.1, axis=1), np.quantile(errors, 0.9, axis=1), color=colour,
                        alpha=0.18, lw=0, label=f"{name}: 10–90 % of replicates")
        ax.plot(sizes, np.median(errors, axis=1), marker=marker, color=colour, ms=5,
                label=f"{name}: median")
        median = gaussian_error_quantiles(which, config)[0]
        ax.plot(sizes, median / np.sqrt(sizes), "--", color=colour, lw=1.2,
                label=rf"{name.split(' (')[1][:-1]}: asymptotic median $\propto 1/\sqrt{{N}}$")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("number of sequences $N$")
    ax.set_ylabel(r"error $\max(|\hat h - h|,\ |\hat J - J|)$")
    fig.legend(loc="outside lower center", ncol=2)

    medians, off, bands = {}, 0.0, {}
    for which in ("pseudo", "maximum"):
        errors = sweep.errors(which)
        medians[which] = np.median(errors, axis=1)
        predicted = gaussian_error_quantiles(which, config)[0] / np.sqrt(sizes)
        off = max(off, float(np.max(np.abs(medians[which] / predicted - 1))))
        bands[which] = (np.quantile(errors, 0.1, axis=1), np.quantile(errors, 0.9, axis=1))
    slopes = {which: np.polyfit(np.log(sizes), np.log(m), 1)[0] for which, m in medians.items()}
    ratio = medians["pseudo"] / medians["maximum"]
    above = ("above the MLE's at every size" if (ratio > 1).all() else
             "below the MLE's at every size" if (ratio < 1).all() else "on both sides of the MLE's")
    low, high = bands["pseudo"][0][0], bands["pseudo"][1][0]
    alt = (f"Log-log plot of the estimation error, the larger of the errors of h and J, against the number of "
           f"sequences N from {sizes[0]:,.0f} to {sizes[-1]:,.0f}, for maximum pseudo-likelihood (MPLE, blue circles) "
           f"and exact maximum likelihood (MLE, orange squares). The MPLE median falls from "
           f"{medians['pseudo'][0]:.2g} to {medians['pseudo'][-1]:.2g}, a fitted slope of {slopes['pseudo']:.2f} on "
           f"the log-log axes, and the MLE median from {medians['maximum'][0]:.2g} to {medians['maximum'][-1]:.2g}, a "
           f"slope of {slopes['maximum']:.2f}. The MPLE median is {above}, {ratio.min():.2f} to {ratio.max():.2f} "
           f"times it. Each estimator's dashed asymptotic median, proportional to one over the square root of N, "
           f"stays within {np.ceil(100 * off):.0f} % of its measured median at every size. Shaded bands show the 10 "
           f"to 90 percent range of the replicates, for the MPLE from {low:.2g} to {high:.2g} at N = {sizes[0]:,.0f}.")
    return describe(fig, alt=alt, caption=r"Error of the two estimators on the Ising chain over independent exact "
                                          r"samples at each $N$: medians, 10–90 % bands, and the median predicted by "
                                          r"each estimator's asymptotic normal law, $\propto 1/\sqrt{N}$.")


_GREEK = {r"\delta": "δ", r"\rho": "ρ", r"\pi": "π", r"\sigma": "σ"}


def _plain(label: str) -> str:
    """A legend label without TeX: ``$|\\delta|$`` becomes ``|δ|`` (alt text is read aloud, not typeset)."""
    def spoken(match):
        text = match.group(1)
        for command, letter in _GREEK.items():
            text = text.replace(command, letter)
        return re.sub(r"[\\{}]", "", text)
    return re.sub(r"\$([^$]*)\$", spoken, label).replace("$", "")


def figure_delta_vs_rho(config: FourCycleConfig = FOUR_CYCLE,
                        points: Mapping[str, Any] | None = None) -> DescribedFigure:
    r"""Population optimum's median and largest $|\delta|$ against $\rho$, with the exact conditionals' median.

    Parameters
    ----------
    config : FourCycleConfig
        The protocol; its ``rho`` (BERT's) is marked by a labelled vertical line.
    points : mapping of str to float or sequence of float, optional
        Other families' values to mark at ``config.rho`` (label: value), e.g. a trained
        encoder's median $|\delta|$; a sequence (one value per training seed, the book's
        first) draws the book's value large and the others small.

    Returns
    -------
    DescribedFigure
        The curves and points, with alt text that gives the curves' ends and each point's values.

    Raises
    ------
    TypeError, ValueError
        If ``config`` is not a `FourCycleConfig`, or ``points`` not ``None`` or a mapping of
        names to finite positive numbers or non-empty sequences of them (at most four).

    Examples
    --------
    >>> import matplotlib.pyplot as plt
    >>> drawn = figure_delta_vs_rho(points={"an encoder": 1e-3})
    >>> len(drawn.figure.axes[0].lines), drawn.figure.axes[0].get_ylabel()     # 2 curves, 2 reference lines, 1 point
    (5, '$|\\delta|$ (nats)')
    >>> plt.close(drawn.figure)
    >>> drawn = figure_delta_vs_rho(points={r"an encoder, 3 seeds: median $|\delta|$": [1e-3, 2e-3, 5e-4]})
    >>> len(drawn.figure.axes[0].lines)                                 # the book's point, then the other seeds'
    6
    >>> drawn.alt.split("; ")[-1]
    'a star marks an encoder, 3 seeds: median |δ| at 0.001, and 2 smaller stars its other values, 0.0005 to 0.002.'
    >>> plt.close(drawn.figure)
    """
    _check_config(config, FourCycleConfig)
    if points is not None:
        if not isinstance(points, Mapping):
            raise TypeError(f"points must be a mapping of names to values, got {type(points).__name__}")
        if len(points) > 4:
            raise ValueError(f"points must hold at most 4 values (one marker each), got {len(points)}")
        checked = {}
        for name, value in points.items():
            if not isinstance(name, str):
                raise TypeError(f"points must be keyed by names (str), got {type(name).__name__}")
            values = list(value) if isinstance(value, (tuple, list, np.ndarray)) else [value]
            if not values:
                raise ValueError(f"points[{name!r}] must hold at least one value")
            # the axis is logarithmic: a value must be positive to be drawn
            checked[name] = [check_positive_float(v, f"points[{name!r}]") for v in values]
        points = checked
    sweep = rho_sweep(config)
    floor = np.median(np.abs(exact_families(config)["HMM conditionals"]))
    fig, ax = subplots(width=WIDE, height=3.9)
    ax.plot(sweep.rho, sweep.maximum, "s-", color=PALETTE["vermillion"], ms=5,
            label=r"population optimum: largest $|\delta|$ of the draws")
    ax.plot(sweep.rho, sweep.median, "o-", color=PALETTE["blue"], ms=5,
            label=r"population optimum: median $|\delta|$")
    ax.axhline(max(floor, 1e-17), color=PALETTE["grey"], ls="--", lw=1.2,
               label=r"HMM's exact conditionals: median $|\delta|$ (rounding)")
    ax.axvline(config.rho, color=PALETTE["black"], ls=":", lw=1.2, label=rf"BERT's selection rate $\rho$ = {config.rho:g}")
    for (name, values), marker in zip((points or {}).items(), "*Dv^"):
        ax.plot([config.rho], values[:1], marker, color=PALETTE["green"], ms=11, ls="none", label=name)
        if len(values) > 1:
            ax.plot([config.rho] * (len(values) - 1), values[1:], marker, color=PALETTE["green"], ms=6, alpha=0.6,
                    ls="none")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel(rf"selection rate $\rho$ (channel {config.mask:.0%} [MASK], {config.random:.0%} random, "
                  rf"{1 - config.mask - config.random:.0%} kept)")
    ax.set_ylabel(r"$|\delta|$ (nats)")
    ax.legend(loc="lower left", bbox_to_anchor=(0.0, 0.06))

    def change(values):
        return "rises" if values[-1] > values[0] else "falls"

    shapes = dict(zip("*Dv^", ("star", "diamond", "downward triangle", "upward triangle")))
    marks = []
    for (name, values), marker in zip((points or {}).items(), "*Dv^"):
        shape = shapes[marker]
        marks.append(f"a {shape} marks {_plain(name)} at {values[0]:.2g}"
                     + (f", and {len(values) - 1} smaller {shape}s its other values, {min(values[1:]):.2g} to "
                        f"{max(values[1:]):.2g}" if len(values) > 1 else ""))
    median_factor = sweep.median[-1] / sweep.median[0]
    maximum_factor = sweep.maximum[-1] / sweep.maximum[0]
    alt = (f"Log-log plot of the population optimum's four-cycle gap |δ| in nats against the selection rate from "
           f"{sweep.rho.min():g} to {sweep.rho.max():g}. The median over the draws (blue circles) "
           f"{change(sweep.median)} from {sweep.median[0]:.1e} to {sweep.median[-1]:.1e}, a factor of "
           f"{median_factor:.0f}; the largest gap (vermillion squares) {change(sweep.maximum)} from {sweep.maximum[0]:.2f} to {sweep.maximum[-1]:.2f}, a "
           f"factor of {maximum_factor:.0f}. A dashed horizontal line at {max(floor, 1e-17):.0e} shows the median "
           f"gap of the HMM's exact conditionals, the level of rounding. A dotted vertical line marks BERT's rate "
           f"{config.rho:g}" + ("; " + "; ".join(marks) if marks else "") + ".")
    return describe(fig, alt=alt, caption=r"The population optimum's four-cycle gap against the selection rate "
                                          r"$\rho$: median and largest $|\delta|$ over the draws.")


def figure_delta_histogram(families: Mapping[str, np.ndarray], floor: float = 1e-17) -> DescribedFigure:
    r"""Histogram of $\log_{10}|\delta|$ for any number of families (exact zeros drawn at ``floor``).

    One legend entry per family, with its median.

    Returns
    -------
    DescribedFigure
        The histograms, with alt text that gives each family's median, spread and exact zeros.

    Raises
    ------
    TypeError, ValueError
        If ``families`` is not a non-empty mapping of names to non-empty 1-D arrays of finite
        gaps, or ``floor`` not a finite number in (0, 1).

    Examples
    --------
    >>> import matplotlib.pyplot as plt
    >>> drawn = figure_delta_histogram({"exact": np.zeros(5), "optimum": np.array([1e-4, 3e-3, 0.2])})
    >>> [text.get_text().split(":")[0] for text in drawn.figure.axes[0].get_legend().get_texts()]
    ['exact', 'optimum']
    >>> drawn.alt.split(": ", 1)[1]
    'exact, all 5 draws exactly zero; optimum, median 3.0e-03, 10th to 90th percentile 6.8e-04 to 1.6e-01, largest 2.0e-01. The optimum sits furthest right.'
    >>> plt.close(drawn.figure)
    """
    if not isinstance(families, Mapping) or not families:
        raise ValueError("families must be a non-empty mapping of names to arrays of gaps")
    floor = check_positive_float(floor, "floor")
    if floor >= 1.0:
        raise ValueError(f"floor must be below 1 (it stands for an exact zero), got {floor}")
    gaps = {}
    for name, d in families.items():
        label = f"families[{name!r:.30}]"
        gaps[name] = as_float_array(d, label, ndim=1)
        if gaps[name].size == 0:
            raise ValueError(f"{label} must hold at least one gap")
    logs = {name: np.log10(np.maximum(np.abs(d), floor)) for name, d in gaps.items()}
    low = min(v.min() for v in logs.values())
    high = max(v.max() for v in logs.values())
    bins = np.linspace(np.floor(low), np.ceil(high) + 0.01, 50)
    colours = [PALETTE[name] for name in ("grey", "blue", "vermillion", "green", "purple", "orange", "sky")]
    fig, ax = subplots(width=WIDE, height=3.4)
    for k, (name, values) in enumerate(logs.items()):
        ax.hist(values, bins=bins, alpha=0.65, color=colours[k % len(colours)],
                label=rf"{name}: median $10^{{{np.median(values):.1f}}}$")
    ax.set_xlabel(r"$\log_{10}|\delta|$ (exact zeros drawn at " + rf"$10^{{{np.log10(floor):.0f}}}$)")
    ax.set_ylabel("draws")
    ax.legend(loc="upper center")

    def number(value):
        return "0" if value == 0 else f"{value:.1e}"

    words = []
    for name, d in gaps.items():
        size, zeros, d = d.size, int((d == 0).sum()), np.abs(d)
        if zeros == size:
            words.append(f"{_plain(name)}, all {size} draws exactly zero")
            continue
        low, high = np.quantile(d, [0.1, 0.9])
        words.append(f"{_plain(name)}, median {number(np.median(d))}, 10th to 90th percentile {number(low)} to "
                     f"{number(high)}, largest {number(d.max())}"
                     + (f", {zeros} of {size} draws exactly zero" if zeros else ""))
    right = max(gaps, key=lambda name: np.median(np.abs(gaps[name])))
    alt = (f"Histograms of the base-10 logarithm of the four-cycle gap |δ| (horizontal axis; exact zeros drawn at "
           f"{floor:.0e}, the left edge) against the number of draws, one per family: " + "; ".join(words)
           + (f". The {_plain(right)} sits furthest right." if len(gaps) > 1 else "."))
    return describe(fig, alt=alt, caption=rf"Four-cycle gaps $|\delta|$ of {len(gaps)} famil"
                                          rf"{'ies' if len(gaps) > 1 else 'y'} (log scale). Exact zeros are drawn at "
                                          r"the left edge.")


# --------------------------------------------------------------------------------------
# Claims
# --------------------------------------------------------------------------------------


def _theorem3_claim() -> dict[str, float]:
    return {"Ising": theorem3_ising()["gap"], "HMM n=2,3": theorem3_hmm()["gap"]}


def _s406() -> tuple[float, float, float]:
    return estimator_sweep().quantiles(200)


def _s407() -> tuple[float, float, float, float]:
    sweep = estimator_sweep()
    median, low, high = sweep.quantiles(20000)
    return (median, low, high, sweep.quantiles(200)[0] / median)


def _within(value: float, predicted: float, relative: float) -> bool:
    return abs(value / predicted - 1.0) <= relative


def _s415() -> tuple[float, float]:
    delta = np.abs(exact_families()["HMM conditionals"])
    return (float(np.median(delta)), float(delta.max()))


def _s421() -> tuple[float, float, float]:
    delta = np.abs(next(v for k, v in exact_families().items() if k.startswith("population")))
    return (float(np.median(delta)), float(delta.max()), float(rho_sweep().median[0]))


def _s409() -> tuple[float, float]:
    kl = mask_kl()
    return (kl[0.15], kl[0.001])


# The median error over 1000 replicates has a relative standard error of about 2.5 %
# (bootstrap), and at N = 200 the asymptotic law is already within 1 % of the replicates'
# median, so a 10 % band around the sandwich prediction median/sqrt(N) is four standard
# errors wide. The ratio of the two medians has a standard error of about 0.4, so
# [8.5, 11.5] is nearly four of them either side of sqrt(100) = 10.
_PREDICTION_BAND = 0.10


def _four_cycles_over_seeds() -> dict:
    """S4-16's value: the trained HMM encoder's four-cycle gaps at each training seed, the book's first."""
    summaries = seed_four_cycles()
    margins = [min(f.encoder_median - 0.02, f.encoder_median - f.population_median) for f in summaries]
    return over_seeds([{"median": f.encoder_median, "max": f.encoder_max, "population median": f.population_median}
                       for f in summaries], margins=margins, fmt="residual:.3g", sd_fmt=".2g")


FOUR_CYCLE_CLAIM = Claim(
    "S4-16", "Four-cycle |δ| of the trained HMM encoder's conditionals ([MASK] at i, x_j set to b), same 200 draws: "
    "median, max, and the population optimum's median (5 training seeds)", seed="median 0.130, max 1.623",
    rule="median ≥ 0.02 and > the population optimum's median", compute=_four_cycles_over_seeds,
    accept=lambda v: True, fmt=".3g", expected="reproduced", section="the-four-cycle-test")
"""Claim S4-16, the trained encoder's four-cycle gaps over its training seeds (chapter 3 shows and states it)."""

CLAIMS = (
    Claim("S4-04", "Ising chain of the finite-sample check: open chain, spins in {-1, +1}, "
          "p(s) ∝ exp(h Σ s_i + J Σ s_i s_{i+1})", seed="open, 10 spins, h = 0.2, J = 0.5",
          rule="the study's chain is exactly n = 10, h = 0.2, J = 0.5, open, with 2^10 enumerated states",
          compute=lambda: {"n": ISING.chain.n, "h": ISING.chain.h, "J": ISING.chain.J,
                           "states": int(ising.all_states(ISING.chain.n).shape[0])},
          accept=lambda v: v == {"n": 10, "h": 0.2, "J": 0.5, "states": 1024}, fmt="g", section="the-ising-chain"),
    Claim("S4-01", "Thm 3: one-mask masked-LM risk vs −(1/n) E log PL, largest |difference| (Ising chain, "
          "5 predictors; every HMM sequence of length 2 and 3, true and perturbed predictors)", seed="—",
          rule="both ≤ 1e-12", compute=_theorem3_claim, accept=lambda v: max(v.values()) <= 1e-12, fmt="residual",
          section="one-mask-is-pseudo-likelihood"),
    Claim("S4-02", "E log PL at the truth minus its best other value on a 21×21 grid (spacing 0.05) around "
          "(h, J) = (0.2, 0.5); the grid's argmax", seed="—",
          rule="margin > 0 and argmax = (0.2, 0.5)",
          compute=lambda: (population_check()["margin"],) + population_check()["argmax"],
          accept=lambda v: v[0] > 0 and abs(v[1] - 0.2) < 1e-12 and abs(v[2] - 0.5) < 1e-12, fmt=".2e",
          section="the-ising-chain"),
    Claim("S4-05", "Max-abs gradient of E log PL at the true (h, J), exact over the 2^10 states", seed="zero to rounding",
          rule="≤ 1e-12", compute=lambda: population_check()["gradient"], accept=lambda v: v <= 1e-12, fmt="residual",
          section="the-ising-chain"),
    Claim("S4-06", f"MPLE max-abs error over (h, J), N = 200 exact samples, {ISING.replicates} replicates: "
          "median, 10 %, 90 %",
          seed="0.011 (one draw)",
          rule="median ≤ 0.06 and within 10 % of the sandwich prediction median/√N",
          compute=_s406,
          accept=lambda v: v[0] <= 0.06 and _within(v[0], gaussian_error_quantiles()[0] / np.sqrt(200),
                                                     _PREDICTION_BAND),
          fmt=".4f", section="how-far-off-is-a-finite-sample"),
    Claim("S4-07", f"MPLE max-abs error, N = 20000, {ISING.replicates} replicates: median, 10 %, 90 %; "
          "ratio of medians N=200 / N=20000",
          seed="0.004 (one draw); ratio 2.75",
          rule="median ≤ 0.006, within 10 % of the sandwich prediction; ratio in [8.5, 11.5] (√100 = 10)",
          compute=_s407,
          accept=lambda v: v[0] <= 0.006 and 8.5 <= v[3] <= 11.5
          and _within(v[0], gaussian_error_quantiles()[0] / np.sqrt(20000), _PREDICTION_BAND),
          fmt=".4f", section="how-far-off-is-a-finite-sample"),
    Claim("S4-09", "Mean KL(true full conditional ‖ Thm-2 optimum at a [MASK]), HMM, 100 length-24 sequences × "
          "24 positions: at ρ = 0.15 and at ρ = 0.001", seed="—",
          rule="KL(0.15) > 1e-6 and KL(0.001) < KL(0.15)/100 (→ 0 as ρ → 0)",
          compute=_s409, accept=lambda v: v[0] > 1e-6 and v[1] < v[0] / 100, fmt=".2e",
          section="berts-objective-is-not-quite-pseudo-likelihood"),
    Claim("S4-10", "Brook's lemma: max |log-ratio error| over 200 random pairs of length-24 HMM sequences "
          "(against the forward algorithm)", seed="—", rule="≤ 1e-12", compute=lambda: brook_check(),
          accept=lambda v: v <= 1e-12, fmt="residual", section="brooks-lemma"),
    Claim("S4-12", "HMM joint over all 25^4 sequences rebuilt from its four full conditionals: max abs error; "
          "number of sequences", seed="1e-15; 390625",
          rule="error ≤ 1e-12; exactly 390625 sequences",
          compute=lambda: (rebuild_check()["max_error"], rebuild_check()["sequences"]),
          accept=lambda v: v[0] <= 1e-12 and v[1] == 390625, fmt="residual", section="brooks-lemma"),
    Claim("S4-13", "Cor 2: max |δ| on random positive joints (4 shapes × 3 concentrations × 500 random cycles)",
          seed="—", rule="≤ 1e-12", compute=lambda: random_joint_check(), accept=lambda v: v <= 1e-12,
          fmt="residual",
          section="the-four-cycle-test"),
    Claim("S4-15", "Four-cycle |δ| of the HMM's exact conditionals over 200 draws (length 24, adjacent pair, "
          "two likeliest values under the HMM): median, max", seed="2.2e-16",
          rule="median ≤ 1e-13, max ≤ 1e-11", compute=_s415,
          accept=lambda v: v[0] <= 1e-13 and v[1] <= 1e-11, fmt="residual", section="the-four-cycle-test"),
    Claim("S4-21", "Four-cycle |δ| of Thm 2's population optimum (ρ = 0.15, 80/10/10), same 200 draws: median, max; "
          "median at ρ = 0.01", seed="median 3.55e-4, max 0.915",
          rule="median ≥ 1e-7; median at ρ = 0.01 < median at 0.15 / 10 (→ 0 as ρ → 0)",
          compute=_s421, accept=lambda v: v[0] >= 1e-7 and v[2] < v[0] / 10, fmt=".2e", section="the-four-cycle-test"),
    FOUR_CYCLE_CLAIM,  # the trained HMM encoder's four-cycle gaps over its training seeds
)
