r"""The open Ising chain: an enumerable model for pseudo-likelihood.

A chain of $n$ spins $s_i \in \{-1, +1\}$ with field $h$ and coupling $J$ has the law

$$p_{h,J}(s) = \frac{1}{Z(h, J)} \exp\Bigl(h \sum_{i=1}^{n} s_i + J \sum_{i=1}^{n-1} s_i s_{i+1}\Bigr).$$

Its normaliser $Z$ is a product of $2 \times 2$ transfer matrices, so everything about
the chain is computable exactly: the $2^n$ state probabilities, exact samples (forward
sampling with backward messages, no Markov chain), the maximum-likelihood estimate and
the Fisher information. Its full conditionals need no normaliser at all: with the
neighbour sum $m_i = s_{i-1} + s_{i+1}$ (one neighbour at an end of the chain),

$$p(s_i \mid s_{-i}) = \frac{\exp\bigl(s_i (h + J m_i)\bigr)}{2\cosh(h + J m_i)}.$$

So the log pseudo-likelihood $\sum_i \log p(s_i \mid s_{-i})$ of a sample depends on it only
through the counts of the ten *local configurations* $(s_i, m_i)$, $s_i \in \{-1, 1\}$,
$m_i \in \{-2, \dots, 2\}$: [`local_counts`][mlm_book.ising.local_counts]. Every estimator here works on those
counts, which is what makes sweeps over thousands of replicates cheap.

The module's conventions: a sample of spins is an integer array ``(..., N, n)`` of values
in $\{-1, +1\}$; a table of local counts is a float array ``(..., 2, 5)`` indexed by
``[(s + 1) // 2, m + 2]``; objectives are *means per sequence* (log pseudo-likelihood or
log-likelihood divided by the number of sequences), in nats.
"""

from __future__ import annotations

import numbers
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from mlm_book.validation import (
    as_float_array,
    as_int_array,
    check_generator,
    check_positive_float,
    check_positive_int,
    check_table_size,
)

__all__ = [
    "IsingChain",
    "book_chain",
    "all_states",
    "check_spins",
    "log_partition",
    "log_probabilities",
    "sample",
    "sample_state_counts",
    "full_conditionals",
    "log_pseudo_likelihood",
    "local_counts",
    "state_local_counts",
    "expected_local_counts",
    "sufficient_statistics",
    "pseudo_likelihood_objective",
    "log_likelihood_objective",
    "Estimate",
    "fit_pseudo_likelihood",
    "fit_maximum_likelihood",
    "masked_risk",
    "AsymptoticCovariances",
    "asymptotic_covariances",
    "SPIN_VALUES",
    "NEIGHBOUR_SUMS",
]

#: Spin values, in the order of the first axis of a local-count table.
SPIN_VALUES = np.array([-1.0, 1.0])
#: Neighbour sums, in the order of the second axis of a local-count table.
NEIGHBOUR_SUMS = np.arange(-2.0, 3.0)
#: Largest chain that the enumeration functions accept (2^16 states).
MAX_ENUMERATED_LENGTH = 16

#: Largest sample or histogram batch (entries) [`sample`][mlm_book.ising.sample] and
#: [`sample_state_counts`][mlm_book.ising.sample_state_counts] allocate: 2^27 float64 is 1 GB.
MAX_SAMPLE_ENTRIES = 2**27


def _check_real(value, name: str) -> float:
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a real number, got {type(value).__name__}")
    value = float(value)
    if not np.isfinite(value):
        raise ValueError(f"{name} must be finite, got {value}")
    return value


@dataclass(frozen=True)
class IsingChain:
    r"""An open chain of ``n`` spins with field ``h`` and coupling ``J``.

    Parameters
    ----------
    n : int
        Number of spins, at least 2.
    h : float
        Field: the weight of $\sum_i s_i$.
    J : float
        Coupling: the weight of $\sum_i s_i s_{i+1}$.

    Examples
    --------
    >>> IsingChain(10, 0.2, 0.5).theta
    array([0.2, 0.5])
    >>> IsingChain(1, 0.2, 0.5)
    Traceback (most recent call last):
    ...
    ValueError: n must be an integer >= 2, got 1
    """

    n: int
    h: float
    J: float

    def __post_init__(self):
        object.__setattr__(self, "n", check_positive_int(self.n, "n", minimum=2))
        object.__setattr__(self, "h", _check_real(self.h, "h"))
        object.__setattr__(self, "J", _check_real(self.J, "J"))

    @property
    def theta(self) -> np.ndarray:
        """The parameter vector ``(h, J)``, shape ``(2,)``."""
        return np.array([self.h, self.J])


def book_chain() -> IsingChain:
    """The book's chain: 10 spins, field 0.2, coupling 0.5.

    Examples
    --------
    >>> book_chain()
    IsingChain(n=10, h=0.2, J=0.5)
    """
    return IsingChain(10, 0.2, 0.5)


def _check_chain(chain) -> IsingChain:
    if not isinstance(chain, IsingChain):
        raise TypeError(f"chain must be an IsingChain, got {type(chain).__name__}")
    return chain


def _check_enumerable(n: int) -> int:
    n = check_positive_int(n, "n", minimum=2)
    if n > MAX_ENUMERATED_LENGTH:
        raise ValueError(f"n must be at most {MAX_ENUMERATED_LENGTH} to enumerate 2^n states, got {n}")
    return n


@lru_cache(maxsize=8)
def _all_states(n: int) -> np.ndarray:
    codes = np.arange(2 ** n)[:, None] >> np.arange(n - 1, -1, -1)[None, :]
    states = (2 * (codes & 1) - 1).astype(np.int64)
    states.setflags(write=False)
    return states


def all_states(n: int) -> np.ndarray:
    """Every configuration of ``n`` spins, shape ``(2**n, n)``, in binary order (-1 < +1).

    Examples
    --------
    >>> all_states(2)
    array([[-1, -1],
           [-1,  1],
           [ 1, -1],
           [ 1,  1]])
    """
    return _all_states(_check_enumerable(n))


def check_spins(spins, name: str = "spins", *, n: int | None = None) -> np.ndarray:
    """Return ``spins`` as an int64 array ``(..., n)`` of values in {-1, +1}.

    Examples
    --------
    >>> check_spins([[1, -1, 1]])
    array([[ 1, -1,  1]])
    >>> check_spins([[1, 0, 1]])
    Traceback (most recent call last):
    ...
    ValueError: spins must hold only -1 and +1, got 0
    """
    array = as_int_array(spins, name)
    if array.ndim < 1 or array.shape[-1] < 2:
        raise ValueError(f"{name} must have a last axis of at least 2 spins, got shape {array.shape}")
    if n is not None and array.shape[-1] != n:
        raise ValueError(f"{name} must have {n} spins on its last axis, got shape {array.shape}")
    bad = array[(array != 1) & (array != -1)]
    if bad.size:
        raise ValueError(f"{name} must hold only -1 and +1, got {int(bad.flat[0])}")
    return array


def log_partition(chain: IsingChain) -> float:
    r"""$\log Z(h, J)$ by the transfer-matrix recursion, in log space (no enumeration).

    Examples
    --------
    >>> chain = IsingChain(3, 0.0, 0.0)
    >>> bool(np.isclose(log_partition(chain), 3 * np.log(2)))
    True
    """
    chain = _check_chain(chain)
    # log_alpha[s] = log of the sum over s_1..s_{k-1} of exp(energy up to spin k = s).
    log_alpha = chain.h * SPIN_VALUES
    pair = chain.J * np.outer(SPIN_VALUES, SPIN_VALUES)
    for _ in range(chain.n - 1):
        log_alpha = np.logaddexp.reduce(log_alpha[:, None] + pair, axis=0) + chain.h * SPIN_VALUES
    return float(np.logaddexp.reduce(log_alpha))


def sufficient_statistics(spins) -> np.ndarray:
    r"""$T(s) = (\sum_i s_i, \sum_i s_i s_{i+1})$ for each sequence, shape ``(..., 2)``.

    Examples
    --------
    >>> sufficient_statistics([[1, 1, -1]])
    array([[1., 0.]])
    """
    spins = check_spins(spins)
    return np.stack([spins.sum(-1), (spins[..., 1:] * spins[..., :-1]).sum(-1)], axis=-1).astype(np.float64)


def _log_weights(theta: np.ndarray, n: int) -> np.ndarray:
    """Unnormalised log-probabilities of all states, shape ``theta.shape[:-1] + (2**n,)``."""
    stats = _state_statistics(n)
    return theta @ stats.T


@lru_cache(maxsize=8)
def _state_statistics(n: int) -> np.ndarray:
    stats = sufficient_statistics(_all_states(n))
    stats.setflags(write=False)
    return stats


@lru_cache(maxsize=8)
def _distinct_statistics(n: int) -> tuple[np.ndarray, np.ndarray]:
    values, counts = np.unique(_state_statistics(n), axis=0, return_counts=True)
    log_multiplicity = np.log(counts.astype(np.float64))
    values.setflags(write=False)
    log_multiplicity.setflags(write=False)
    return values, log_multiplicity


def log_probabilities(chain: IsingChain) -> np.ndarray:
    """Exact log-probabilities of all ``2**n`` states (order of [`all_states`][mlm_book.ising.all_states]), shape ``(2**n,)``.

    Examples
    --------
    >>> logp = log_probabilities(book_chain())
    >>> logp.shape, round(float(np.exp(logp).sum()), 12)
    ((1024,), 1.0)
    """
    chain = _check_chain(chain)
    _check_enumerable(chain.n)
    return _log_weights(chain.theta, chain.n) - log_partition(chain)


def sample(chain: IsingChain, size: int, rng: np.random.Generator) -> np.ndarray:
    r"""Exact independent samples by forward sampling, shape ``(size, n)``, values in {-1, +1}.

    Backward messages $\beta_k(s) = \sum_{s'} e^{J s s' + h s'} \beta_{k+1}(s')$ make
    $p(s_1) \propto e^{h s_1}\beta_1(s_1)$ and $p(s_{k+1} \mid s_k) \propto
    e^{J s_k s_{k+1} + h s_{k+1}} \beta_{k+1}(s_{k+1})$ exact; no Markov chain is run.

    Raises
    ------
    ValueError
        If ``size * n`` exceeds ``MAX_SAMPLE_ENTRIES``.

    Examples
    --------
    >>> s = sample(book_chain(), 4, np.random.default_rng(0))
    >>> s.shape, sorted(set(s.ravel().tolist()))
    ((4, 10), [-1, 1])
    """
    chain = _check_chain(chain)
    size = check_positive_int(size, "size")
    check_table_size(size, 1, MAX_SAMPLE_ENTRIES, f"a sample of size={size} chains of {chain.n} spins",
                     factor=chain.n)
    rng = check_generator(rng)
    n, h, J = chain.n, chain.h, chain.J
    pair = J * np.outer(SPIN_VALUES, SPIN_VALUES)  # [s, s']
    log_beta = np.zeros((n, 2))
    for k in range(n - 2, -1, -1):
        log_beta[k] = np.logaddexp.reduce(pair + h * SPIN_VALUES[None, :] + log_beta[k + 1][None, :], axis=1)
    uniforms = rng.random((size, n))
    out = np.empty((size, n), dtype=np.int64)
    first = h * SPIN_VALUES + log_beta[0]
    p_up = 1.0 / (1.0 + np.exp(first[0] - first[1]))
    up = uniforms[:, 0] < p_up
    for k in range(1, n):
        logits = pair + h * SPIN_VALUES[None, :] + log_beta[k][None, :]  # [previous, next]
        p_up_given = 1.0 / (1.0 + np.exp(logits[:, 0] - logits[:, 1]))  # (2,) by previous spin
        out[:, k - 1] = np.where(up, 1, -1)
        up = uniforms[:, k] < p_up_given[up.astype(np.int64)]
    out[:, n - 1] = np.where(up, 1, -1)
    return out


def sample_state_counts(chain: IsingChain, size: int, rng: np.random.Generator,
                        replicates: int | None = None) -> np.ndarray:
    r"""Histogram over the ``2**n`` states of ``size`` exact independent samples.

    The histogram of $N$ i.i.d. draws from $p$ is multinomial$(N, p)$, so drawing it
    directly is exact sampling whose cost does not grow with $N$. Every estimator here
    depends on a sample only through its histogram.

    Parameters
    ----------
    chain : IsingChain
        The law to sample.
    size : int
        Number of sequences $N$ per replicate.
    rng : numpy.random.Generator
        Source of randomness.
    replicates : int, optional
        If given, that many independent histograms are drawn.

    Returns
    -------
    numpy.ndarray
        Counts, shape ``(2**n,)`` or ``(replicates, 2**n)``, summing to ``size``.

    Raises
    ------
    ValueError
        If ``replicates * 2**n`` exceeds ``MAX_SAMPLE_ENTRIES``.

    Examples
    --------
    >>> counts = sample_state_counts(book_chain(), 200, np.random.default_rng(0), replicates=3)
    >>> counts.shape, counts.sum(axis=1).tolist()
    ((3, 1024), [200, 200, 200])
    """
    chain = _check_chain(chain)
    size = check_positive_int(size, "size")
    rng = check_generator(rng)
    _check_enumerable(chain.n)
    if replicates is not None:
        replicates = check_positive_int(replicates, "replicates")
        check_table_size(2, chain.n, MAX_SAMPLE_ENTRIES, f"replicates={replicates} histograms of 2**{chain.n} states",
                         factor=replicates)
    probabilities = np.exp(log_probabilities(chain))
    probabilities /= probabilities.sum()
    if replicates is None:
        return rng.multinomial(size, probabilities)
    return rng.multinomial(size, probabilities, size=replicates)


def _local_fields(spins: np.ndarray) -> np.ndarray:
    """Neighbour sums m_i, same shape as ``spins``."""
    m = np.zeros(spins.shape, dtype=np.int64)
    m[..., 1:] += spins[..., :-1]
    m[..., :-1] += spins[..., 1:]
    return m


def _check_overflow(value, what: str) -> None:
    # |h| + 2|J| near the float64 limit makes a log-probability overflow: refuse, don't return inf
    if not np.all(np.isfinite(value)):
        raise ValueError(f"h and J are too large in magnitude: the {what} overflows float64 "
                         "(keep |h| + 2|J| well below 1e308)")


def _check_theta(h, J, spins: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    h = as_float_array(h, "h")
    J = as_float_array(J, "J")
    try:
        np.broadcast_shapes(h.shape, J.shape, spins.shape)
    except ValueError:
        raise ValueError(f"h and J must broadcast against the spins' shape {spins.shape}, got shapes "
                         f"{h.shape} and {J.shape}") from None
    return h, J


def full_conditionals(spins, h, J) -> np.ndarray:
    r"""$p_{h,J}(s_i = +1 \mid s_{-i})$ at every position, shape ``spins.shape``.

    The spin at position $i$ itself is not read, so a masked position may hold any
    value in {-1, +1}.

    Parameters
    ----------
    spins : array_like of int
        Sequences ``(..., n)`` in {-1, +1}.
    h, J : float
        Parameters of the conditionals (any real values).

    Examples
    --------
    >>> full_conditionals([[1, 1, 1]], 0.0, 0.5).round(4)
    array([[0.7311, 0.8808, 0.7311]])
    """
    spins = check_spins(spins)
    h, J = _check_theta(h, J, spins)
    field = h + J * _local_fields(spins)
    return 1.0 / (1.0 + np.exp(-2.0 * field))


def log_pseudo_likelihood(spins, h, J) -> np.ndarray:
    r"""$\log \mathrm{PL}_{h,J}(s) = \sum_i \log p_{h,J}(s_i \mid s_{-i})$ of each sequence, shape ``(...)``.

    Computed directly from the sequences; [`pseudo_likelihood_objective`][mlm_book.ising.pseudo_likelihood_objective] computes
    its mean from local counts instead.

    Raises
    ------
    ValueError
        If ``h`` and ``J`` are so large that the value overflows float64.

    Examples
    --------
    >>> log_pseudo_likelihood([[1, -1], [1, 1]], 0.0, 0.0).round(4)
    array([-1.3863, -1.3863])
    """
    spins = check_spins(spins)
    h, J = _check_theta(h, J, spins)
    with np.errstate(over="ignore", invalid="ignore"):
        field = h + J * _local_fields(spins)
        value = (spins * field - np.logaddexp(field, -field)).sum(-1)
    _check_overflow(value, "log pseudo-likelihood")
    return value


def local_counts(spins) -> np.ndarray:
    r"""Counts of the local configurations $(s_i, m_i)$ over a sample, shape ``(..., 2, 5)``.

    Parameters
    ----------
    spins : array_like of int
        A sample ``(..., N, n)``; the last two axes are summed over.

    Returns
    -------
    numpy.ndarray
        ``counts[..., (s + 1) // 2, m + 2]``, float64.

    Examples
    --------
    >>> local_counts([[[1, 1, -1]]])[0]
    array([[0., 0., 1., 0., 0.],
           [0., 0., 1., 1., 0.]])
    """
    spins = check_spins(spins)
    if spins.ndim < 2:
        raise ValueError(f"spins must have shape (..., N, n), got {spins.shape}")
    cell = (spins + 1) // 2 * 5 + _local_fields(spins) + 2
    batch = spins.shape[:-2]
    flat = cell.reshape(-1, spins.shape[-2] * spins.shape[-1])
    offsets = np.arange(flat.shape[0])[:, None] * 10
    counts = np.bincount((flat + offsets).ravel(), minlength=10 * flat.shape[0])
    return counts.reshape(batch + (2, 5)).astype(np.float64)


@lru_cache(maxsize=8)
def _state_local_counts(n: int) -> np.ndarray:
    table = local_counts(_all_states(n)[:, None, :])
    table.setflags(write=False)
    return table


def state_local_counts(n: int) -> np.ndarray:
    """Local-configuration counts of every state, shape ``(2**n, 2, 5)``.

    Examples
    --------
    >>> state_local_counts(10).sum(axis=(1, 2))[:3]
    array([10., 10., 10.])
    """
    return _state_local_counts(_check_enumerable(n))


def expected_local_counts(chain: IsingChain) -> np.ndarray:
    """Expected local counts of one sequence under the chain's exact law, shape ``(2, 5)``.

    Examples
    --------
    >>> round(float(expected_local_counts(book_chain()).sum()), 12)
    10.0
    """
    chain = _check_chain(chain)
    probabilities = np.exp(log_probabilities(chain))
    return np.tensordot(probabilities, state_local_counts(chain.n), axes=1)


def _check_counts(counts, name: str = "counts") -> np.ndarray:
    counts = as_float_array(counts, name)
    if counts.ndim < 2 or counts.shape[-2:] != (2, 5):
        raise ValueError(f"{name} must have shape (..., 2, 5), got {counts.shape}")
    if np.any(counts < 0):
        raise ValueError(f"{name} must be non-negative")
    return counts


def _cell_parts(theta: np.ndarray):
    """Per-cell value, gradient and Hessian of log p(s | m) at parameters ``theta (..., 2)``."""
    h = theta[..., 0, None, None]
    J = theta[..., 1, None, None]
    s = SPIN_VALUES[:, None]
    m = NEIGHBOUR_SUMS[None, :]
    field = h + J * m                                  # (..., 1, 5)
    value = s * field - np.logaddexp(field, -field)    # (..., 2, 5)
    residual = s - np.tanh(field)                      # (..., 2, 5)
    grad = np.stack([residual, residual * m], axis=-1)  # (..., 2, 5, 2)
    curvature = 1.0 / np.cosh(field) ** 2              # (..., 1, 5)
    outer = np.stack([np.stack([np.ones_like(m), m], -1), np.stack([m, m * m], -1)], -1)  # (1, 5, 2, 2)
    hess = -curvature[..., None, None] * outer          # (..., 1, 5, 2, 2)
    return value, grad, hess


def pseudo_likelihood_objective(counts, theta, per: float | np.ndarray = 1.0):
    r"""Log pseudo-likelihood from local counts, with its gradient and Hessian in $(h, J)$.

    $$\ell_{\mathrm{PL}}(h, J) = \frac{1}{N} \sum_{(s, m)} c(s, m)\,\bigl[s(h + Jm) - \log 2\cosh(h + Jm)\bigr].$$

    Parameters
    ----------
    counts : array_like
        Local counts ``(..., 2, 5)`` (of a sample, or expected counts of one sequence).
    theta : array_like
        Parameters ``(..., 2)`` = ``(h, J)``, broadcast against ``counts``.
    per : float or array_like
        Divisor $N$ (number of sequences), broadcast to the batch shape.

    Returns
    -------
    value : numpy.ndarray
        Shape ``(...)``.
    grad : numpy.ndarray
        Shape ``(..., 2)``.
    hess : numpy.ndarray
        Shape ``(..., 2, 2)``, negative semi-definite (the objective is concave).

    Examples
    --------
    >>> chain = book_chain()
    >>> _, grad, _ = pseudo_likelihood_objective(expected_local_counts(chain), chain.theta)
    >>> bool(np.abs(grad).max() < 1e-12)
    True
    """
    counts = _check_counts(counts)
    theta = as_float_array(theta, "theta")
    if theta.shape[-1:] != (2,):
        raise ValueError(f"theta must have shape (..., 2), got {theta.shape}")
    per = as_float_array(per, "per")
    if np.any(per <= 0):
        # a divisor of zero or below is no number of sequences (and would flip the objective)
        raise ValueError(f"per must be a positive number of sequences, got {per.min()}")
    try:
        np.broadcast_shapes(per.shape, counts.shape[:-2], theta.shape[:-1])
    except ValueError:
        raise ValueError(f"per of shape {per.shape} does not broadcast against counts {counts.shape} "
                         f"and theta {theta.shape}") from None
    value, grad, hess = _cell_parts(theta)
    total = (counts * value).sum((-2, -1)) / per
    gradient = (counts[..., None] * grad).sum((-3, -2)) / per[..., None]
    hessian = (counts[..., None, None] * hess).sum((-4, -3)) / per[..., None, None]
    return total, gradient, hessian


def log_likelihood_objective(statistics, theta, n: int):
    r"""Mean log-likelihood $\theta \cdot \bar T - \log Z(\theta)$ with gradient and Hessian.

    Parameters
    ----------
    statistics : array_like
        Mean sufficient statistics $\bar T$ ``(..., 2)`` of a sample (see [`sufficient_statistics`][mlm_book.ising.sufficient_statistics]).
    theta : array_like
        Parameters ``(..., 2)``.
    n : int
        Chain length; the moments of $T$ are computed over all $2^n$ states.

    Returns
    -------
    value, grad, hess : numpy.ndarray
        Shapes ``(...)``, ``(..., 2)``, ``(..., 2, 2)``; the gradient is $\bar T - E_\theta T$
        and the Hessian $-\mathrm{Cov}_\theta T$.

    Raises
    ------
    ValueError
        If ``statistics`` or ``theta`` is not of shape ``(..., 2)`` or they do not broadcast.

    Examples
    --------
    >>> chain = book_chain()
    >>> stats = np.exp(log_probabilities(chain)) @ sufficient_statistics(all_states(10))
    >>> _, grad, _ = log_likelihood_objective(stats, chain.theta, 10)
    >>> bool(np.abs(grad).max() < 1e-12)
    True
    """
    statistics = as_float_array(statistics, "statistics")
    theta = as_float_array(theta, "theta")
    n = _check_enumerable(n)
    if statistics.shape[-1:] != (2,):
        raise ValueError(f"statistics must have shape (..., 2), got {statistics.shape}")
    if theta.shape[-1:] != (2,):
        raise ValueError(f"theta must have shape (..., 2), got {theta.shape}")
    try:
        np.broadcast_shapes(statistics.shape, theta.shape)
    except ValueError:
        raise ValueError(f"statistics of shape {statistics.shape} does not broadcast against theta "
                         f"{theta.shape}") from None
    # The states enter only through T(s): sum over its distinct values with multiplicities.
    table, log_multiplicity = _distinct_statistics(n)
    logits = theta @ table.T + log_multiplicity
    log_z = np.logaddexp.reduce(logits, axis=-1)
    weights = np.exp(logits - log_z[..., None])
    mean = weights @ table
    second = np.einsum("...k,ka,kb->...ab", weights, table, table)
    covariance = second - mean[..., :, None] * mean[..., None, :]
    value = (theta * statistics).sum(-1) - log_z
    return value, statistics - mean, -covariance


@dataclass(frozen=True)
class Estimate:
    """Result of a Newton fit, batched over replicates.

    Attributes
    ----------
    theta : numpy.ndarray
        Estimates ``(..., 2)`` of ``(h, J)``.
    gradient_norm : numpy.ndarray
        Final max-abs gradient of the mean objective, ``(...)``.
    iterations : int
        Newton iterations used.

    Examples
    --------
    >>> x = fit_pseudo_likelihood(expected_local_counts(book_chain()), 1.0)
    >>> from dataclasses import fields
    >>> rebuilt = Estimate(**{f.name: getattr(x, f.name) for f in fields(x)})   # its fields are checked
    >>> rebuilt.theta.round(10).tolist()
    [0.2, 0.5]
    """

    theta: np.ndarray
    gradient_norm: np.ndarray
    iterations: int

    def __post_init__(self):
        theta = as_float_array(self.theta, "theta")
        if theta.shape[-1:] != (2,):
            raise ValueError(f"theta must have shape (..., 2), got {theta.shape}")
        norm = as_float_array(self.gradient_norm, "gradient_norm")
        if norm.shape != theta.shape[:-1]:
            raise ValueError(f"gradient_norm must have theta's batch shape {theta.shape[:-1]}, got {norm.shape}")
        if np.any(norm < 0):
            raise ValueError("gradient_norm must be non-negative (a max-abs gradient)")
        check_positive_int(self.iterations, "iterations", minimum=0)


def _newton(objective, start: np.ndarray, tolerance: float, max_iterations: int, what: str,
            data: str) -> Estimate:
    theta = start.copy()
    value, grad, hess = objective(theta)
    for iteration in range(max_iterations + 1):
        norm = np.abs(grad).max(-1)
        if np.all(norm <= tolerance):
            # A tiny gradient far out along a ray where the objective keeps rising (separable
            # counts) shows itself by a vanishing curvature: no finite maximiser exists.
            if np.any(np.linalg.eigvalsh(-hess)[..., 0] < 1e-8):
                raise ValueError(f"{what}: the objective has no finite maximiser; {data} do not "
                                 "identify (h, J) (too few or degenerate samples)")
            return Estimate(theta, norm, iteration)
        if iteration == max_iterations:
            break
        det = hess[..., 0, 0] * hess[..., 1, 1] - hess[..., 0, 1] * hess[..., 1, 0]
        if np.any(~(det > 0)) or np.any(~(hess[..., 0, 0] < 0)):
            raise ValueError(f"{what}: the Hessian is not negative definite; {data} do not identify (h, J) "
                             "(too few or degenerate samples)")
        step = -np.linalg.solve(hess, grad[..., None])[..., 0]
        step = np.where((norm > tolerance)[..., None], step, 0.0)
        # Backtracking: halve the step wherever the concave objective would decrease.
        scale = np.ones(theta.shape[:-1])
        for _ in range(40):
            trial = theta + scale[..., None] * step
            trial_value, trial_grad, trial_hess = objective(trial)
            worse = trial_value < value - 1e-12 * np.abs(value)
            if not np.any(worse):
                break
            scale = np.where(worse, scale / 2, scale)
        theta, value, grad, hess = trial, trial_value, trial_grad, trial_hess
    raise ValueError(f"{what}: Newton did not reach gradient {tolerance:g} in {max_iterations} iterations "
                     f"(largest {float(np.abs(grad).max()):.3g})")


def fit_pseudo_likelihood(counts, per, *, tolerance: float = 1e-10, max_iterations: int = 100) -> Estimate:
    r"""Maximum pseudo-likelihood estimate of $(h, J)$ by Newton's method, batched.

    The objective is concave; Newton's step is halved wherever it would decrease the
    objective, and the fit stops when the max-abs gradient of the mean log
    pseudo-likelihood is at most ``tolerance`` for every replicate.

    Parameters
    ----------
    counts : array_like
        Local counts ``(..., 2, 5)``.
    per : float or array_like
        Number of sequences behind each count table.
    tolerance : float
        Convergence threshold on the gradient.
    max_iterations : int
        Newton iterations allowed.

    Returns
    -------
    Estimate

    Raises
    ------
    ValueError
        If the counts do not identify $(h, J)$ or Newton fails to converge.

    Examples
    --------
    >>> chain = book_chain()
    >>> fit = fit_pseudo_likelihood(expected_local_counts(chain), 1.0)
    >>> fit.theta.round(10).tolist(), bool(fit.gradient_norm <= 1e-10)
    ([0.2, 0.5], True)
    """
    counts = _check_counts(counts)
    tolerance = check_positive_float(tolerance, "tolerance")
    start = np.zeros(counts.shape[:-2] + (2,))
    pseudo_likelihood_objective(counts, start, per)  # checks per before Newton starts
    return _newton(lambda t: pseudo_likelihood_objective(counts, t, per), start, tolerance,
                   check_positive_int(max_iterations, "max_iterations"), "fit_pseudo_likelihood",
                   "the counts per sequence (counts / per)")


def fit_maximum_likelihood(statistics, n: int, *, tolerance: float = 1e-10, max_iterations: int = 100) -> Estimate:
    r"""Exact maximum-likelihood estimate of $(h, J)$ by Newton's method, batched.

    Parameters
    ----------
    statistics : array_like
        Mean sufficient statistics ``(..., 2)`` of each sample.
    n : int
        Chain length (the normaliser is computed over all $2^n$ states).
    tolerance : float
        Convergence threshold on the gradient of the mean log-likelihood.
    max_iterations : int
        Newton iterations allowed.

    Returns
    -------
    Estimate

    Examples
    --------
    >>> chain = book_chain()
    >>> stats = np.exp(log_probabilities(chain)) @ sufficient_statistics(all_states(10))
    >>> fit_maximum_likelihood(stats, 10).theta.round(10).tolist()
    [0.2, 0.5]
    """
    statistics = as_float_array(statistics, "statistics")
    if statistics.shape[-1:] != (2,):
        raise ValueError(f"statistics must have shape (..., 2), got {statistics.shape}")
    n = _check_enumerable(n)
    tolerance = check_positive_float(tolerance, "tolerance")
    start = np.zeros(statistics.shape)
    return _newton(lambda t: log_likelihood_objective(statistics, t, n), start, tolerance,
                   check_positive_int(max_iterations, "max_iterations"), "fit_maximum_likelihood",
                   "the statistics")


def masked_risk(chain: IsingChain, h: float, J: float) -> float:
    r"""Masked-LM risk of the predictor $q_{h,J}$ with one uniformly chosen mask, computed exactly.

    The data are the chain's exact law. A position $I$ is drawn uniformly, replaced by a
    mask (coded 0, so the masked sequence carries no trace of the hidden spin), and the
    predictor $q_{h,J}(s_I \mid \text{masked sequence})$ reads its neighbours in the masked
    sequence. The risk $E_{s} E_I[-\log q(s_I \mid \tilde s)]$ is a sum over all $2^n$
    states and $n$ positions. Theorem 3 says it equals $-\frac{1}{n} E \log
    \mathrm{PL}_{h,J}$, which [`pseudo_likelihood_objective`][mlm_book.ising.pseudo_likelihood_objective] computes from expected
    local counts instead.

    Raises
    ------
    ValueError
        If ``h`` and ``J`` are so large that the risk overflows float64.

    Examples
    --------
    >>> chain = book_chain()
    >>> risk = masked_risk(chain, 0.1, 0.3)
    >>> value, _, _ = pseudo_likelihood_objective(expected_local_counts(chain), [0.1, 0.3])
    >>> bool(abs(risk + value / chain.n) < 1e-12)
    True
    """
    chain = _check_chain(chain)
    h, J = _check_real(h, "h"), _check_real(J, "J")
    states = all_states(chain.n)
    probabilities = np.exp(log_probabilities(chain))
    n = chain.n
    # masked[k, I, :] is state k with position I replaced by the mask code 0.
    masked = np.repeat(states[:, None, :], n, axis=1)
    masked[:, np.arange(n), np.arange(n)] = 0
    padded = np.pad(masked, ((0, 0), (0, 0), (1, 1)))
    positions = np.arange(n)
    neighbour_sum = padded[:, positions, positions] + padded[:, positions, positions + 2]  # (2^n, n)
    hidden = states  # the value to restore at I
    with np.errstate(over="ignore", invalid="ignore"):
        field = h + J * neighbour_sum
        loss = -(hidden * field - np.logaddexp(field, -field))  # (2^n, n): -log q(s_I | masked)
        risk = float(probabilities @ loss.mean(axis=1))
    _check_overflow(risk, "masked risk")
    return risk


@dataclass(frozen=True)
class AsymptoticCovariances:
    r"""Exact per-sequence asymptotic covariances of the two estimators at the truth.

    $\sqrt{N}(\hat\theta - \theta^\ast) \to \mathcal{N}(0, \Sigma)$ with
    $\Sigma_{\mathrm{ML}} = I^{-1}$ (Fisher information $I = \mathrm{Cov}\,T$) and the
    sandwich $\Sigma_{\mathrm{PL}} = H^{-1} K H^{-1}$, the inverse Godambe information, with
    $H = -E \nabla^2 \log\mathrm{PL}$ and $K = \mathrm{Cov}\, \nabla \log \mathrm{PL}$.

    Attributes
    ----------
    fisher : numpy.ndarray
        $I$, shape ``(2, 2)``.
    sensitivity : numpy.ndarray
        $H$, shape ``(2, 2)``.
    variability : numpy.ndarray
        $K$, shape ``(2, 2)``.
    maximum_likelihood : numpy.ndarray
        $\Sigma_{\mathrm{ML}}$, shape ``(2, 2)``.
    pseudo_likelihood : numpy.ndarray
        $\Sigma_{\mathrm{PL}}$, shape ``(2, 2)``.

    Examples
    --------
    >>> x = asymptotic_covariances(book_chain())
    >>> from dataclasses import fields
    >>> rebuilt = AsymptoticCovariances(**{f.name: getattr(x, f.name) for f in fields(x)})   # its fields are checked
    >>> rebuilt.fisher.shape
    (2, 2)
    """

    fisher: np.ndarray
    sensitivity: np.ndarray
    variability: np.ndarray
    maximum_likelihood: np.ndarray
    pseudo_likelihood: np.ndarray

    def __post_init__(self):
        for name in ("fisher", "sensitivity", "variability", "maximum_likelihood", "pseudo_likelihood"):
            matrix = as_float_array(getattr(self, name), name, ndim=2)
            if matrix.shape != (2, 2):
                raise ValueError(f"{name} must be a (2, 2) matrix over (h, J), got shape {matrix.shape}")

    @property
    def variance_ratio(self) -> np.ndarray:
        """Per-parameter ratio Var(MPLE) / Var(MLE), shape ``(2,)`` for ``(h, J)``; at least 1."""
        return np.diag(self.pseudo_likelihood) / np.diag(self.maximum_likelihood)


def asymptotic_covariances(chain: IsingChain) -> AsymptoticCovariances:
    r"""Fisher information and the Godambe sandwich for the chain, computed exactly over $2^n$ states.

    Examples
    --------
    >>> ratio = asymptotic_covariances(book_chain()).variance_ratio
    >>> bool(np.all(ratio >= 1.0))
    True
    """
    chain = _check_chain(chain)
    probabilities = np.exp(log_probabilities(chain))
    stats = _state_statistics(chain.n)
    mean = probabilities @ stats
    fisher = (stats - mean).T @ ((stats - mean) * probabilities[:, None])
    _, cell_grad, cell_hess = _cell_parts(chain.theta)
    table = state_local_counts(chain.n)                       # (2^n, 2, 5)
    scores = np.einsum("kab,abp->kp", table, cell_grad)       # per-state PL score
    variability = scores.T @ (scores * probabilities[:, None])
    expected = probabilities @ table.reshape(len(table), -1)
    sensitivity = -np.einsum("c,cpq->pq", expected, np.broadcast_to(cell_hess, (2, 5, 2, 2)).reshape(10, 2, 2))
    inverse_h = np.linalg.inv(sensitivity)
    return AsymptoticCovariances(fisher, sensitivity, variability, np.linalg.inv(fisher),
                                 inverse_h @ variability @ inverse_h)
