r"""The geometry of a cloud of contextual vectors: Definition 3 and Proposition 2.

A word's occurrences in a corpus, read at one layer of an encoder, give a cloud of vectors
$h_1, \dots, h_k \in \mathbb{R}^d$, the rows of its occurrence matrix $H \in \mathbb{R}^{k \times d}$.
This module measures such a cloud the way Ethayarajh (2019) does:

* **self-similarity**: the mean of $\cos(h_j, h_l)$ over ordered pairs $j \ne l$;
* **anisotropy baseline**: the same mean over vectors of uniformly drawn tokens of any word
  (two distinct draws, never a vector with itself);
* **adjusted self-similarity**: self-similarity minus the baseline;
* **MEV** (maximum explainable variance): $\sigma_1^2 / \sum_i \sigma_i^2$ for the singular values of
  the *uncentred* $H$.

All of them are exact: the mean cosine over all $k(k-1)$ ordered pairs is computed in $O(kd)$ by
the Gram identity below, never on a subset of pairs. For unit rows $u_j$,

$$\sum_{j \ne l} \langle u_j, u_l \rangle = \Big\lVert \sum_j u_j \Big\rVert^2 - \sum_j \lVert u_j \rVert^2 ,$$

so the self-similarity is $(\lVert \sum_j u_j \rVert^2 - k) / (k(k-1))$.

MEV is compared with an **isotropic reference at the same size**. A finite sample of $n$
isotropic Gaussian vectors in $d$ dimensions does not have MEV $1/d$: its largest squared singular
value sits near the Marchenko–Pastur edge $(\sqrt n + \sqrt d)^2$, while $\lVert H \rVert_F^2 \approx nd$,
so the reference is about $(\sqrt n + \sqrt d)^2 / (nd)$, which only tends to $1/d$ as $n \to \infty$.
[`isotropic_mev`][mlm_book.geometry.isotropic_mev] estimates it by seeded simulation and [`marchenko_pastur_mev`][mlm_book.geometry.marchenko_pastur_mev] gives
the asymptotic formula (with the Tracy–Widom mean correction).

Proposition 2 (the best static summary) is checked by [`check_proposition2`][mlm_book.geometry.check_proposition2], which returns
every gap, and by the single-statement functions it calls.

Every function takes any cloud, whatever model produced it: the book applies them to the HMM
encoder's vectors of the shared token $w$ and to the filing encoder's vectors of *kestrel*.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from mlm_book.validation import (
    as_float_array,
    check_bool,
    check_generator,
    check_positive_int,
    check_real,
    check_table_size,
)

__all__ = [
    "TRACY_WIDOM_MEAN",
    "cosine_matrix",
    "self_similarity",
    "anisotropy_baseline",
    "adjusted_self_similarity",
    "mev",
    "sample_rows",
    "isotropic_mev",
    "IsotropicReference",
    "marchenko_pastur_mev",
    "numerical_rank",
    "mean_gradient_gap",
    "mev_variational_gap",
    "mev_bound_slacks",
    "eckart_young_gap",
    "Proposition2Check",
    "check_proposition2",
    "PrincipalAxes",
    "principal_axes",
    "CloudGeometry",
    "describe_cloud",
]

#: Mean of the Tracy–Widom distribution $F_1$ (real Gaussian matrices): the largest eigenvalue
#: of a white Wishart matrix fluctuates around the Marchenko–Pastur edge by this many
#: Tracy–Widom scale units on average (Johnstone 2001 gives the centring and scale).
TRACY_WIDOM_MEAN = -1.2065335745820

#: Largest random matrix (entries) one simulation draw or one batch of directions may
#: allocate: 2^26 float64 is 512 MB.
MAX_SAMPLE_ENTRIES = 2**26

#: Largest total number of simulated entries (``repeats * n * d``) of an isotropic reference;
#: beyond it the simulation would run for minutes.
MAX_SIMULATED_ENTRIES = 2**33


def _check_simulation(n: int, d: int, repeats: int, *, n_name: str = "n", d_name: str = "d") -> None:
    """Refuse an isotropic simulation too large to allocate or to finish, before drawing."""
    check_table_size(n * d, 1, MAX_SAMPLE_ENTRIES, f"an isotropic sample of {n_name}={n} by {d_name}={d}")
    check_table_size(n * d, 1, MAX_SIMULATED_ENTRIES, f"repeats={repeats} isotropic samples of "
                     f"{n_name}={n} by {d_name}={d}", factor=repeats)


def _check_fraction(value, name: str, low: float = 0.0, high: float = 1.0) -> None:
    check_real(value, name, low=low, high=high)


def _cloud(vectors, name: str, *, nonzero_rows: bool) -> np.ndarray:
    """Validate a cloud: a finite (k, d) float array with k >= 2 (and no zero rows if asked)."""
    array = as_float_array(vectors, name, ndim=2)
    if array.shape[0] < 2:
        raise ValueError(f"{name} must hold at least two vectors (rows), got shape {array.shape}")
    if array.shape[1] < 1:
        raise ValueError(f"{name} must have at least one column, got shape {array.shape}")
    if nonzero_rows:
        norms = np.linalg.norm(array, axis=1)
        if np.any(norms == 0.0):
            bad = int(np.flatnonzero(norms == 0.0)[0])
            raise ValueError(f"{name} has a zero vector (row {bad}): its cosine with anything is undefined")
    elif not np.any(array):
        raise ValueError(f"{name} is the zero matrix: its MEV is undefined")
    return array


def _unit_rows(array: np.ndarray) -> np.ndarray:
    return array / np.linalg.norm(array, axis=1, keepdims=True)


def cosine_matrix(vectors) -> np.ndarray:
    r"""All pairwise cosines of the rows, a (k, k) matrix (quadratic memory: for small clouds).

    Parameters
    ----------
    vectors : array_like, shape (k, d)
        At least two non-zero vectors.

    Returns
    -------
    numpy.ndarray, shape (k, k)
        ``C[j, l] = cos(h_j, h_l)``; the diagonal is one.

    Examples
    --------
    >>> cosine_matrix([[1.0, 0.0], [1.0, 1.0]]).round(4)
    array([[1.    , 0.7071],
           [0.7071, 1.    ]])
    """
    units = _unit_rows(_cloud(vectors, "vectors", nonzero_rows=True))
    return units @ units.T


def self_similarity(vectors) -> float:
    r"""Mean cosine over all ordered pairs of distinct rows, exact in $O(kd)$.

    With $u_j = h_j / \lVert h_j \rVert$, the value is
    $\big(\lVert \sum_j u_j \rVert^2 - \sum_j \lVert u_j \rVert^2\big) / (k(k-1))$, the mean of
    $\cos(h_j, h_l)$ over the $k(k-1)$ ordered pairs $j \ne l$ (a vector is never paired with itself).

    Parameters
    ----------
    vectors : array_like, shape (k, d)
        The cloud: $k \ge 2$ non-zero vectors.

    Returns
    -------
    float
        In $[-1/(k-1), 1]$; one exactly when all vectors point the same way.

    Raises
    ------
    ValueError
        Fewer than two vectors, a zero vector, or a non-finite entry.

    Examples
    --------
    >>> round(self_similarity([[1.0, 0.0], [0.0, 2.0], [3.0, 3.0]]), 6)
    0.471405
    >>> self_similarity([[1.0, 2.0], [2.0, 4.0]])
    1.0
    >>> self_similarity([[1.0, 2.0]])
    Traceback (most recent call last):
    ...
    ValueError: vectors must hold at least two vectors (rows), got shape (1, 2)
    """
    units = _unit_rows(_cloud(vectors, "vectors", nonzero_rows=True))
    k = units.shape[0]
    total = units.sum(axis=0)
    off_diagonal = float(total @ total) - float(np.einsum("ij,ij->", units, units))
    return min(1.0, off_diagonal / (k * (k - 1)))


def sample_rows(vectors, size: int, rng: np.random.Generator) -> np.ndarray:
    r"""``size`` distinct rows of ``vectors`` drawn uniformly without replacement.

    Parameters
    ----------
    vectors : array_like, shape (N, d)
        The pool, e.g. the vectors of every token occurrence of a test split.
    size : int
        How many rows to draw, $2 \le$ ``size`` $\le N$.
    rng : numpy.random.Generator
        Source of randomness.

    Returns
    -------
    numpy.ndarray, shape (size, d)

    Raises
    ------
    ValueError
        If ``size`` exceeds the number of rows of ``vectors``.

    Examples
    --------
    >>> pool = np.arange(10.0).reshape(5, 2)
    >>> sample_rows(pool, 3, np.random.default_rng(0)).shape
    (3, 2)
    """
    pool = as_float_array(vectors, "vectors", ndim=2)
    size = check_positive_int(size, "size", minimum=2)
    rng = check_generator(rng)
    if size > pool.shape[0]:
        raise ValueError(f"size must be at most the number of rows of vectors ({pool.shape[0]}), got {size}")
    return pool[rng.choice(pool.shape[0], size=size, replace=False)]


def anisotropy_baseline(vectors, *, size: int | None = None, rng: np.random.Generator | None = None) -> float:
    r"""Mean cosine between the vectors of two distinct, uniformly drawn token occurrences.

    With ``size=None`` this is exact: the mean over all ordered pairs of distinct rows of the pool
    (every token occurrence of a corpus, of any word), which is the expected cosine of two
    uniformly drawn distinct occurrences. With ``size`` given, it is the same mean over ``size``
    rows drawn uniformly without replacement, for pools too large to hold.

    Parameters
    ----------
    vectors : array_like, shape (N, d)
        The pool of token vectors (non-zero rows).
    size : int, optional
        Subsample size; requires ``rng``.
    rng : numpy.random.Generator, optional
        Source of randomness for the subsample.

    Returns
    -------
    float
        Zero in expectation for an isotropic cloud; near one when all vectors share a direction.

    Examples
    --------
    >>> pool = np.random.default_rng(0).standard_normal((2000, 16))
    >>> abs(anisotropy_baseline(pool)) < 0.01
    True
    >>> round(anisotropy_baseline(pool + 5.0), 2)
    0.96
    """
    if size is None:
        if rng is not None:
            raise ValueError("rng is only used with size; pass size or drop rng")
        return self_similarity(vectors)
    if rng is None:
        raise ValueError("rng must be given when size is given")
    return self_similarity(sample_rows(vectors, size, rng))


def adjusted_self_similarity(vectors, baseline: float) -> float:
    r"""Self-similarity of ``vectors`` minus an anisotropy ``baseline`` at the same layer.

    Parameters
    ----------
    vectors : array_like, shape (k, d)
        The word's occurrence vectors.
    baseline : float
        The layer's anisotropy baseline ([`anisotropy_baseline`][mlm_book.geometry.anisotropy_baseline]).

    Returns
    -------
    float

    Raises
    ------
    TypeError
        If ``baseline`` is not a real number.
    ValueError
        If ``baseline`` is not a finite mean cosine in [-1, 1].

    Examples
    --------
    >>> round(adjusted_self_similarity([[1.0, 0.0], [1.0, 1.0]], 0.5), 4)
    0.2071
    """
    baseline = check_real(baseline, "baseline", low=-1.0, high=1.0)   # a mean cosine
    return self_similarity(vectors) - baseline


def _singular_values(array: np.ndarray) -> np.ndarray:
    return np.linalg.svd(array, compute_uv=False)


def mev(vectors) -> float:
    r"""Maximum explainable variance $\sigma_1^2 / \sum_i \sigma_i^2$ of the uncentred matrix.

    Parameters
    ----------
    vectors : array_like, shape (k, d)
        The occurrence matrix $H$, $k \ge 2$ rows, not all zero. It is *not* centred: MEV measures
        how much of the cloud's energy one direction through the origin carries.

    Returns
    -------
    float
        In $[1/r, 1]$ for $H$ of rank $r$ (Proposition 2 (iii)).

    Raises
    ------
    ValueError
        Fewer than two rows, the zero matrix, or a non-finite entry.

    Examples
    --------
    >>> mev([[1.0, 0.0], [0.0, 1.0]])
    0.5
    >>> round(mev([[1.0, 2.0], [-3.0, -6.0], [0.5, 1.0]]), 12)
    1.0
    """
    sigma = _singular_values(_cloud(vectors, "vectors", nonzero_rows=False))
    energy = sigma * sigma
    return float(energy[0] / energy.sum())


@dataclass(frozen=True)
class IsotropicReference:
    r"""The MEV of an isotropic Gaussian cloud of the same size, estimated by simulation.

    Attributes
    ----------
    n : int
        Number of vectors.
    d : int
        Dimension.
    mean : float
        Mean MEV over the simulated matrices.
    std : float
        Standard deviation of one matrix's MEV.
    stderr : float
        Standard error of ``mean``.
    repeats : int
        Number of simulated matrices.
    asymptotic : float
        [`marchenko_pastur_mev`][mlm_book.geometry.marchenko_pastur_mev] at ``(n, d)``, for comparison.

    Examples
    --------
    >>> x = isotropic_mev(200, 16, np.random.default_rng(0), repeats=5)
    >>> from dataclasses import fields
    >>> rebuilt = IsotropicReference(**{f.name: getattr(x, f.name) for f in fields(x)})   # its fields are checked
    >>> rebuilt.n, rebuilt.d
    (200, 16)
    """

    n: int
    d: int
    mean: float
    std: float
    stderr: float
    repeats: int
    asymptotic: float

    def __post_init__(self):
        check_positive_int(self.n, "n", minimum=2)
        check_positive_int(self.d, "d")
        _check_fraction(self.mean, "mean")
        check_real(self.std, "std", low=0.0)
        check_real(self.stderr, "stderr", low=0.0)
        check_positive_int(self.repeats, "repeats", minimum=2)
        _check_fraction(self.asymptotic, "asymptotic")

    @property
    def naive(self) -> float:
        """The large-sample limit $1/d$, which a finite cloud does not reach."""
        return 1.0 / self.d


def isotropic_mev(n: int, d: int, rng: np.random.Generator, *, repeats: int = 100) -> IsotropicReference:
    r"""Expected MEV of an $n \times d$ matrix of independent standard normals, by simulation.

    This is the right reference for the MEV of $n$ vectors in $d$ dimensions: an isotropic cloud of
    that size has MEV about $(\sqrt n + \sqrt d)^2/(nd)$, not $1/d$.

    Parameters
    ----------
    n : int
        Number of vectors (rows), at least 2.
    d : int
        Dimension (columns), at least 1.
    rng : numpy.random.Generator
        Source of randomness.
    repeats : int, default 100
        Number of simulated matrices.

    Returns
    -------
    IsotropicReference

    Raises
    ------
    ValueError
        If ``n`` or ``repeats`` is below 2, ``d`` below 1, or ``n * d`` (one draw) or
        ``repeats * n * d`` (the whole simulation) exceeds its limit.

    Examples
    --------
    >>> ref = isotropic_mev(1000, 64, np.random.default_rng(0), repeats=20)
    >>> round(ref.mean, 3), round(ref.naive, 4)
    (0.024, 0.0156)
    """
    n = check_positive_int(n, "n", minimum=2)
    d = check_positive_int(d, "d")
    rng = check_generator(rng)
    repeats = check_positive_int(repeats, "repeats", minimum=2)
    _check_simulation(n, d, repeats)
    values = np.empty(repeats)
    for index in range(repeats):  # one matrix at a time keeps memory at n*d floats
        sample = rng.standard_normal((n, d))
        # The smaller Gram matrix has the same non-zero eigenvalues sigma_i^2.
        eigen = np.linalg.eigvalsh(sample.T @ sample if d <= n else sample @ sample.T)
        values[index] = eigen[-1] / eigen.sum()
    std = float(values.std(ddof=1))
    return IsotropicReference(n=n, d=d, mean=float(values.mean()), std=std, stderr=std / np.sqrt(repeats),
                              repeats=repeats, asymptotic=marchenko_pastur_mev(n, d))


def marchenko_pastur_mev(n: int, d: int, *, tracy_widom: bool = True) -> float:
    r"""Asymptotic MEV of an $n \times d$ isotropic Gaussian matrix.

    The largest eigenvalue of $X^\top X$ for $X$ with independent $N(0, 1)$ entries is centred at
    $\mu = (\sqrt{n - 1/2} + \sqrt{d - 1/2})^2$ with Tracy–Widom scale
    $s = (\sqrt{n - 1/2} + \sqrt{d - 1/2})\,(1/\sqrt{n - 1/2} + 1/\sqrt{d - 1/2})^{1/3}$ (Johnstone 2001),
    and $\lVert X \rVert_F^2 \approx nd$. The reference is $(\mu + s\,\mathbb{E}[TW_1]) / (nd)$ with the
    Tracy–Widom mean, or $(\sqrt n + \sqrt d)^2/(nd)$ (the Marchenko–Pastur edge alone) with
    ``tracy_widom=False``.

    Parameters
    ----------
    n : int
        Number of vectors.
    d : int
        Dimension.
    tracy_widom : bool, default True
        Include the Tracy–Widom mean correction (it matters when $\min(n, d)$ is small).

    Returns
    -------
    float

    Examples
    --------
    >>> round(marchenko_pastur_mev(1000, 64), 4), round(marchenko_pastur_mev(1000, 64, tracy_widom=False), 4)
    (0.0241, 0.0245)
    """
    n = check_positive_int(n, "n")
    d = check_positive_int(d, "d")
    if not check_bool(tracy_widom, "tracy_widom"):
        return float((np.sqrt(n) + np.sqrt(d)) ** 2 / (n * d))
    a, b = np.sqrt(n - 0.5), np.sqrt(d - 0.5)
    centre = (a + b) ** 2
    scale = (a + b) * (1.0 / a + 1.0 / b) ** (1.0 / 3.0)
    return float(min(1.0, (centre + scale * TRACY_WIDOM_MEAN) / (n * d)))


def numerical_rank(vectors, *, rtol: float | None = None) -> int:
    r"""Number of singular values above ``rtol`` times the largest (NumPy's default tolerance).

    Examples
    --------
    >>> numerical_rank([[1.0, 2.0], [2.0, 4.0], [0.0, 0.0]])
    1
    """
    array = _cloud(vectors, "vectors", nonzero_rows=False)
    sigma = _singular_values(array)
    if rtol is None:
        rtol = max(array.shape) * np.finfo(np.float64).eps
    else:
        rtol = check_real(rtol, "rtol", low=0.0)
    return int(np.sum(sigma > rtol * sigma[0]))


def mean_gradient_gap(vectors) -> float:
    r"""Proposition 2 (i): the gradient of $\sum_j \lVert h_j - c \rVert^2$ at $c = \bar h$, relative.

    Returns $\lVert \nabla_c \rVert_2 / (2\sum_j \lVert h_j \rVert)$ at the row mean, where
    $\nabla_c = -2\sum_j (h_j - c)$: zero in exact arithmetic, rounding level in floating point.

    Examples
    --------
    >>> mean_gradient_gap(np.random.default_rng(0).standard_normal((50, 4))) < 1e-15
    True
    """
    array = _cloud(vectors, "vectors", nonzero_rows=False)
    centre = array.mean(axis=0)
    gradient = -2.0 * (array - centre).sum(axis=0)
    return float(np.linalg.norm(gradient) / (2.0 * np.linalg.norm(array, axis=1).sum()))


def mev_variational_gap(vectors, rng: np.random.Generator | None = None, *, directions: int = 256) -> float:
    r"""Proposition 2 (ii): MEV equals the largest share of energy one unit direction carries.

    Computes MEV from the singular values (LAPACK SVD) and, independently, the Rayleigh quotient
    $\lVert H v \rVert^2 / \lVert H \rVert_F^2$ at the top eigenvector $v$ of $H^\top H$ (symmetric
    eigensolver), and returns their absolute difference. With ``rng``, also draws ``directions``
    random unit vectors and adds by how much the best of them exceeds MEV (it never should).

    Raises
    ------
    ValueError
        If ``directions`` random directions would exceed ``MAX_SAMPLE_ENTRIES``.

    Examples
    --------
    >>> H = np.random.default_rng(1).standard_normal((40, 5))
    >>> mev_variational_gap(H, np.random.default_rng(2)) < 1e-13
    True
    """
    array = _cloud(vectors, "vectors", nonzero_rows=False)
    if rng is not None:
        rng = check_generator(rng)
        directions = check_positive_int(directions, "directions")
        check_table_size(max(array.shape), 1, MAX_SAMPLE_ENTRIES,
                         f"directions={directions} random directions for vectors of shape {array.shape}",
                         factor=directions)
    value = mev(array)
    energy = float(np.einsum("ij,ij->", array, array))
    _, eigenvectors = np.linalg.eigh(array.T @ array)
    top = eigenvectors[:, -1]
    projected = array @ top
    gap = abs(value - float(projected @ projected) / energy)
    if rng is not None:
        units = rng.standard_normal((array.shape[1], directions))
        units /= np.linalg.norm(units, axis=0, keepdims=True)
        shares = np.einsum("ij,ij->j", array @ units, array @ units) / energy
        gap = max(gap, float(shares.max()) - value)
    return float(max(gap, 0.0))


def mev_bound_slacks(vectors) -> tuple[float, float]:
    r"""Proposition 2 (iii): the slacks ``(MEV - 1/r, 1 - MEV)``, both $\ge 0$.

    $r$ is the numerical rank ([`numerical_rank`][mlm_book.geometry.numerical_rank]). The right slack is zero exactly when all
    rows are collinear.

    Examples
    --------
    >>> low, high = mev_bound_slacks([[1.0, 0.0], [0.0, 1.0]])
    >>> low, high
    (0.0, 0.5)
    """
    array = _cloud(vectors, "vectors", nonzero_rows=False)
    value = mev(array)
    return float(value - 1.0 / numerical_rank(array)), float(1.0 - value)


def eckart_young_gap(vectors) -> float:
    r"""Eckart–Young: $1 - \mathrm{MEV}$ is the share of $\lVert H \rVert_F^2$ the best rank-1 fit misses.

    Builds the truncated SVD $A_1 = \sigma_1 u_1 v_1^\top$, subtracts it explicitly, and returns
    $\big|\lVert H - A_1 \rVert_F^2 / \lVert H \rVert_F^2 - (1 - \mathrm{MEV})\big|$.

    Examples
    --------
    >>> eckart_young_gap(np.random.default_rng(0).standard_normal((30, 6))) < 1e-14
    True
    """
    array = _cloud(vectors, "vectors", nonzero_rows=False)
    u, sigma, vt = np.linalg.svd(array, full_matrices=False)
    residual = array - sigma[0] * np.outer(u[:, 0], vt[0])
    missed = float(np.einsum("ij,ij->", residual, residual)) / float(np.einsum("ij,ij->", array, array))
    return abs(missed - (1.0 - mev(array)))


@dataclass(frozen=True)
class Proposition2Check:
    r"""Every gap of Proposition 2 and Eckart–Young on one cloud.

    Attributes
    ----------
    k, d : int
        Shape of the cloud.
    rank : int
        Numerical rank $r$.
    mev : float
        The cloud's MEV.
    mean_gradient : float
        (i) relative gradient norm at the row mean ([`mean_gradient_gap`][mlm_book.geometry.mean_gradient_gap]).
    variational : float
        (ii) [`mev_variational_gap`][mlm_book.geometry.mev_variational_gap].
    lower_slack, upper_slack : float
        (iii) ``MEV - 1/r`` and ``1 - MEV``.
    eckart_young : float
        [`eckart_young_gap`][mlm_book.geometry.eckart_young_gap].

    Examples
    --------
    >>> x = check_proposition2(np.random.default_rng(0).standard_normal((100, 8)))
    >>> from dataclasses import fields
    >>> rebuilt = Proposition2Check(**{f.name: getattr(x, f.name) for f in fields(x)})   # its fields are checked
    >>> rebuilt.rank
    8
    """

    k: int
    d: int
    rank: int
    mev: float
    mean_gradient: float
    variational: float
    lower_slack: float
    upper_slack: float
    eckart_young: float

    def __post_init__(self):
        check_positive_int(self.k, "k", minimum=2)
        check_positive_int(self.d, "d")
        check_positive_int(self.rank, "rank")
        if self.rank > min(self.k, self.d):
            raise ValueError(f"rank must be at most min(k, d) = {min(self.k, self.d)}, got {self.rank}")
        _check_fraction(self.mev, "mev")
        for name in ("mean_gradient", "variational", "eckart_young"):
            check_real(getattr(self, name), name, low=0.0)
        # slacks are what a check measures: rounding may leave them a hair below zero
        check_real(self.lower_slack, "lower_slack", low=-1.0, high=1.0)
        check_real(self.upper_slack, "upper_slack", low=-1.0, high=1.0)

    @property
    def worst_gap(self) -> float:
        """Largest violation among (i), (ii), Eckart–Young and the two bounds of (iii)."""
        return max(self.mean_gradient, self.variational, self.eckart_young,
                   -self.lower_slack, -self.upper_slack, 0.0)

    def holds(self, tol: float = 1e-12) -> bool:
        """Whether every statement holds to ``tol``."""
        return self.worst_gap <= tol


def check_proposition2(vectors, rng: np.random.Generator | None = None) -> Proposition2Check:
    r"""Check Proposition 2 (i)–(iii) and Eckart–Young on a cloud; return every gap.

    Parameters
    ----------
    vectors : array_like, shape (k, d)
        The occurrence matrix.
    rng : numpy.random.Generator, optional
        If given, (ii) is also tested against random directions.

    Returns
    -------
    Proposition2Check

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> check = check_proposition2(rng.standard_normal((100, 8)), rng)
    >>> check.holds(1e-12), check.rank
    (True, 8)
    >>> rank_one = np.outer(rng.standard_normal(20), rng.standard_normal(5))
    >>> c = check_proposition2(rank_one)
    >>> c.rank, abs(c.mev - 1.0) < 1e-12
    (1, True)
    """
    array = _cloud(vectors, "vectors", nonzero_rows=False)
    low, high = mev_bound_slacks(array)
    return Proposition2Check(
        k=array.shape[0], d=array.shape[1], rank=numerical_rank(array), mev=mev(array),
        mean_gradient=mean_gradient_gap(array), variational=mev_variational_gap(array, rng),
        lower_slack=low, upper_slack=high, eckart_young=eckart_young_gap(array))


@dataclass(frozen=True)
class PrincipalAxes:
    r"""A cloud projected on its own principal axes (centred PCA).

    Attributes
    ----------
    coordinates : numpy.ndarray, shape (k, n_axes)
        Projections of the centred rows on the axes.
    axes : numpy.ndarray, shape (n_axes, d)
        Unit principal directions, signs fixed so each axis's largest-magnitude loading is positive.
    explained : numpy.ndarray, shape (n_axes,)
        Share of the centred cloud's variance along each axis.
    mean : numpy.ndarray, shape (d,)
        The row mean that was subtracted.

    Examples
    --------
    >>> x = principal_axes([[0.0, 0.0], [2.0, 0.0], [4.0, 0.1]], 1)
    >>> from dataclasses import fields
    >>> rebuilt = PrincipalAxes(**{f.name: getattr(x, f.name) for f in fields(x)})   # its fields are checked
    >>> rebuilt.explained.round(4).tolist()
    [0.9998]
    """

    coordinates: np.ndarray
    axes: np.ndarray
    explained: np.ndarray
    mean: np.ndarray

    def __post_init__(self):
        coordinates = as_float_array(self.coordinates, "coordinates", ndim=2)
        axes = as_float_array(self.axes, "axes", ndim=2)
        explained = as_float_array(self.explained, "explained", ndim=1)
        mean = as_float_array(self.mean, "mean", ndim=1)
        n_axes, d = axes.shape
        if coordinates.shape[1] != n_axes or explained.shape != (n_axes,) or mean.shape != (d,):
            raise ValueError(f"coordinates (k, n_axes), axes (n_axes, d), explained (n_axes,) and mean (d,) "
                             f"must agree, got {coordinates.shape}, {axes.shape}, {explained.shape} and {mean.shape}")
        if np.any((explained < 0) | (explained > 1)):
            raise ValueError("explained must hold variance shares in [0, 1]")


def principal_axes(vectors, n_axes: int = 2) -> PrincipalAxes:
    r"""Project a cloud on its first ``n_axes`` principal axes (for figures).

    Unlike MEV, this centres the cloud first: it shows the shape of the spread around the mean.

    Parameters
    ----------
    vectors : array_like, shape (k, d)
    n_axes : int, default 2
        At most ``min(k, d)``.

    Returns
    -------
    PrincipalAxes

    Examples
    --------
    >>> pa = principal_axes([[0.0, 0.0], [2.0, 0.0], [4.0, 0.1]], 1)
    >>> pa.coordinates[:, 0].round(2), pa.explained.round(4)
    (array([-2., -0.,  2.]), array([0.9998]))
    """
    array = _cloud(vectors, "vectors", nonzero_rows=False)
    n_axes = check_positive_int(n_axes, "n_axes")
    if n_axes > min(array.shape):
        raise ValueError(f"n_axes must be at most min(k, d) = {min(array.shape)}, got {n_axes}")
    centre = array.mean(axis=0)
    centred = array - centre
    _, sigma, vt = np.linalg.svd(centred, full_matrices=False)
    axes = vt[:n_axes].copy()
    signs = np.sign(axes[np.arange(n_axes), np.argmax(np.abs(axes), axis=1)])
    axes *= np.where(signs == 0, 1.0, signs)[:, None]
    total = float(np.sum(sigma * sigma))
    explained = (sigma[:n_axes] ** 2 / total) if total > 0 else np.zeros(n_axes)
    return PrincipalAxes(coordinates=centred @ axes.T, axes=axes, explained=explained, mean=centre)


@dataclass(frozen=True)
class CloudGeometry:
    r"""Definition 3's measures of one word's cloud at one layer, with their references.

    Attributes
    ----------
    n_occurrences : int
        Rows of the word's occurrence matrix.
    dim : int
        Dimension $d$.
    self_similarity : float
        Mean cosine over distinct pairs of the word's occurrences.
    mev : float
        Uncentred MEV of the word's occurrences.
    baseline : float
        Anisotropy baseline of the layer (mean cosine of distinct uniformly drawn token vectors).
    adjusted : float
        ``self_similarity - baseline``.
    token_mev : float
        MEV of uniformly drawn token vectors of any word at the same layer, as many as the word has
        occurrences (so the same finite-sample reference applies to both).
    isotropic_mev : float
        Expected MEV of an isotropic Gaussian cloud of the same size ([`isotropic_mev`][mlm_book.geometry.isotropic_mev]).

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> pool = rng.standard_normal((200, 8))
    >>> x = describe_cloud(pool[:50] + 3.0, pool, rng, repeats=5)
    >>> from dataclasses import fields
    >>> rebuilt = CloudGeometry(**{f.name: getattr(x, f.name) for f in fields(x)})   # its fields are checked
    >>> rebuilt.n_occurrences, rebuilt.dim
    (50, 8)
    """

    n_occurrences: int
    dim: int
    self_similarity: float
    mev: float
    baseline: float
    adjusted: float
    token_mev: float
    isotropic_mev: float

    def __post_init__(self):
        check_positive_int(self.n_occurrences, "n_occurrences", minimum=2)
        check_positive_int(self.dim, "dim")
        _check_fraction(self.self_similarity, "self_similarity", -1.0)
        _check_fraction(self.baseline, "baseline", -1.0)
        _check_fraction(self.adjusted, "adjusted", -2.0)
        for name in ("mev", "token_mev", "isotropic_mev"):
            _check_fraction(getattr(self, name), name)


def describe_cloud(word_vectors, pool_vectors, rng: np.random.Generator, *, repeats: int = 50) -> CloudGeometry:
    r"""Definition 3 for one word at one layer: its cloud against the layer's token pool.

    Parameters
    ----------
    word_vectors : array_like, shape (k, d)
        The word's occurrence vectors.
    pool_vectors : array_like, shape (N, d)
        Vectors of every token occurrence (of any word) at the same layer, $N \ge k$. The baseline is
        exact over all distinct pairs of the pool; the token MEV uses $k$ rows drawn without
        replacement with ``rng``.
    rng : numpy.random.Generator
        Draws the token sample and the isotropic simulation.
    repeats : int, default 50
        Simulated matrices for the isotropic reference.

    Returns
    -------
    CloudGeometry

    Raises
    ------
    ValueError
        If the clouds disagree, or ``repeats`` isotropic samples of the word's size
        would exceed the simulation limits.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> pool = rng.standard_normal((500, 8))
    >>> g = describe_cloud(pool[:100] + 3.0, pool, rng)
    >>> g.self_similarity > 0.8, abs(g.baseline) < 0.02, g.token_mev > g.isotropic_mev - 0.05
    (True, True, True)
    """
    word = _cloud(word_vectors, "word_vectors", nonzero_rows=True)
    pool = _cloud(pool_vectors, "pool_vectors", nonzero_rows=True)
    if pool.shape[1] != word.shape[1]:
        raise ValueError(f"pool_vectors must have the same dimension as word_vectors "
                         f"({word.shape[1]}), got {pool.shape[1]}")
    if pool.shape[0] < word.shape[0]:
        raise ValueError(f"pool_vectors must hold at least as many rows as word_vectors "
                         f"({word.shape[0]}), got {pool.shape[0]}")
    rng = check_generator(rng)
    repeats = check_positive_int(repeats, "repeats", minimum=2)
    _check_simulation(word.shape[0], word.shape[1], repeats, n_name="word_vectors rows", d_name="columns")
    similarity = self_similarity(word)
    baseline = anisotropy_baseline(pool)
    k, d = word.shape
    return CloudGeometry(
        n_occurrences=k, dim=d, self_similarity=similarity, mev=mev(word), baseline=baseline,
        adjusted=similarity - baseline, token_mev=mev(sample_rows(pool, k, rng)),
        isotropic_mev=isotropic_mev(k, d, rng, repeats=repeats).mean)
