r"""Linear probes: ridge-regularised logistic regression on standardised frozen vectors.

A *probe* is a small classifier trained on frozen representations to read off a property,
here the sense of an occurrence. The book's probe is fixed before any test score is seen:

* **Standardisation** uses the mean and standard deviation of the *training* rows only. A
  feature that is constant on the training rows carries no information there; it is set to
  zero (after standardisation) on every row, so its weight is exactly zero. A constant
  vector (the filing encoder's layer 0 for *kestrel*) therefore gives an intercept-only
  classifier: it predicts the training-majority class for every row.
* **Model**: multinomial logistic regression with class ``classes[0]`` as reference, so for
  two classes $P(y = c_1 \mid x) = \sigma(w^\top z + b)$ on standardised $z$. The objective is
  the *mean* negative log-likelihood plus $\tfrac{\lambda}{2}\lVert W \rVert_F^2$; the intercepts are
  **not** penalised.
* **Strength**: `PROBE_STRENGTH` $= \lambda$, chosen a priori (see its comment), never
  tuned on any score.
* **Solver**: Newton's method with a backtracking (Armijo) line search, vectorised over
  samples. The objective is $\lambda$-strongly convex in $W$ and strictly convex in the
  intercepts whenever every class is present, so Newton converges; the fit records the final
  gradient norm and raises if it is not below the tolerance.

Evaluation schemes: [`kfold_splits`][mlm_book.probe.kfold_splits] (plain or stratified, shuffled with a seeded
generator), [`leave_one_group_out`][mlm_book.probe.leave_one_group_out], a fixed train/test split ([`fit_and_score`][mlm_book.probe.fit_and_score]),
and a shuffled-label control ([`shuffled_control`][mlm_book.probe.shuffled_control], ``control=True`` in
[`cross_validate`][mlm_book.probe.cross_validate]) that permutes the labels *inside the training data only* and scores
against the true test labels. A probe that found structure in noise would beat the majority
share on the control; a sound one does not.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from mlm_book.validation import (
    as_float_array,
    as_int_array,
    check_bool,
    check_generator,
    check_instance,
    check_positive_float,
    check_positive_int,
    check_real,
)

__all__ = [
    "PROBE_STRENGTH",
    "GRADIENT_TOLERANCE",
    "Standardizer",
    "fit_standardizer",
    "ProbeModel",
    "fit_probe",
    "accuracy",
    "ProbeScore",
    "fit_and_score",
    "shuffled_control",
    "kfold_splits",
    "leave_one_group_out",
    "CrossValidation",
    "cross_validate",
]

#: Ridge strength $\lambda$ on the mean log-loss, fixed a priori. On standardised features a
#: weight of size one moves a logit by one standard deviation of its feature. With
#: $\lambda = 10^{-3}$ the penalty only binds when the data (nearly) separate the classes:
#: $\tfrac{\lambda}{2}\lVert W\rVert^2 \le \log K$ at the optimum, so the weight norm stays below
#: $\sqrt{2\log K/\lambda} \approx 37$ for two classes, keeping the fit finite on separable
#: data (*kestrel* at layers 1 and 2) while costing the log-loss less than $10^{-3}$ per unit of
#: squared weight norm elsewhere. It also bounds the Hessian below by $\lambda$, which makes
#: Newton's method well conditioned. It was set before any probe was run and is not tuned.
PROBE_STRENGTH = 1e-3

#: Newton stops when the largest gradient entry is below this (objective is a mean, so O(1)).
GRADIENT_TOLERANCE = 1e-9

#: A Newton step whose predicted decrease (half the Newton decrement g^T H^-1 g) is below this
#: many ulp of the objective cannot be judged by the objective any more (see `fit_probe`).
DECREMENT_ULPS = 64.0

#: A training feature whose standard deviation is below this multiple of (1 + |mean|) counts
#: as constant: float64 rounding of a constant column stays many orders below it.
CONSTANT_FEATURE_TOLERANCE = 1e-10

#: Most row indices `kfold_splits` returns (``n_folds * n_samples``, 800 MB of int64): far above any
#: probe the book fits (hundreds to thousands of rows), far below a size that exhausts memory.
MAX_SPLIT_INDICES = 10**8


@dataclass(frozen=True)
class Standardizer:
    r"""Per-feature centring and scaling learnt from training rows.

    Attributes
    ----------
    mean : numpy.ndarray, shape (d,)
    scale : numpy.ndarray, shape (d,)
        Standard deviation, or one for constant features.
    active : numpy.ndarray of bool, shape (d,)
        False for features constant on the training rows; they map to zero.

    Examples
    --------
    >>> x = fit_standardizer([[1.0, 5.0], [3.0, 5.0]])
    >>> from dataclasses import fields
    >>> rebuilt = Standardizer(**{f.name: getattr(x, f.name) for f in fields(x)})   # its fields are checked
    >>> rebuilt.transform([[2.0, 7.0]]).tolist()
    [[0.0, 0.0]]
    """

    mean: np.ndarray
    scale: np.ndarray
    active: np.ndarray

    def __post_init__(self):
        mean = as_float_array(self.mean, "mean", ndim=1)
        scale = as_float_array(self.scale, "scale", ndim=1)
        try:
            active = np.asarray(self.active) if isinstance(self.active, (np.ndarray, list, tuple)) else None
        except ValueError:  # ragged
            active = None
        if active is None or active.dtype != bool or active.ndim != 1:
            raise TypeError(f"active must be a one-dimensional array of bool, got {_kind(self.active)}")
        if not (mean.shape == scale.shape == active.shape):
            raise ValueError(f"mean, scale and active must have the same shape (d,), "
                             f"got {mean.shape}, {scale.shape} and {active.shape}")
        if np.any(scale <= 0):
            raise ValueError("scale must be positive (one for constant features)")

    def transform(self, features) -> np.ndarray:
        """Standardise ``features`` (n, d) with the training statistics; constant features -> 0."""
        array = _features(features, "features")
        if array.shape[1] != self.mean.shape[0]:
            raise ValueError(f"features must have {self.mean.shape[0]} columns, got {array.shape[1]}")
        return np.where(self.active, (array - self.mean) / self.scale, 0.0)


def _kind(value) -> str:
    """Type, and shape and dtype of an array, for error messages."""
    if isinstance(value, np.ndarray):
        return f"array of dtype {value.dtype} and shape {value.shape}"
    return type(value).__name__


def _features(features, name: str) -> np.ndarray:
    array = as_float_array(features, name, ndim=2)
    if array.shape[0] == 0:
        raise ValueError(f"{name} must hold at least one row, got shape {array.shape}")
    return array


def _labels(labels, name: str, n: int | None = None) -> np.ndarray:
    try:
        array = np.asarray(labels)
    except (TypeError, ValueError) as error:
        raise TypeError(f"{name} must be a one-dimensional array of integer class labels (not ragged), "
                        f"got {type(labels).__name__}") from error
    if array.ndim != 1:
        raise ValueError(f"{name} must be one-dimensional, got shape {array.shape}")
    if array.dtype == bool or not np.issubdtype(array.dtype, np.integer):
        raise TypeError(f"{name} must hold integer class labels, got dtype {array.dtype}")
    if n is not None and array.shape[0] != n:
        features = name.replace("labels", "features") if "labels" in name else "the features"
        raise ValueError(f"{name} must have one label per row of {features} ({n}), got {array.shape[0]}")
    return array.astype(np.int64, copy=False)


def fit_standardizer(features) -> Standardizer:
    r"""Learn per-feature mean and standard deviation from ``features`` (n, d).

    Examples
    --------
    >>> s = fit_standardizer([[1.0, 5.0], [3.0, 5.0]])
    >>> s.active.tolist(), s.transform([[2.0, 7.0]]).tolist()
    ([True, False], [[0.0, 0.0]])
    """
    array = _features(features, "features")
    mean = array.mean(axis=0)
    std = array.std(axis=0)
    active = std > CONSTANT_FEATURE_TOLERANCE * (1.0 + np.abs(mean))
    return Standardizer(mean=mean, scale=np.where(active, std, 1.0), active=active)


@dataclass(frozen=True)
class ProbeModel:
    r"""A fitted probe.

    Attributes
    ----------
    classes : numpy.ndarray, shape (K,)
        Sorted class labels; ``classes[0]`` is the reference class.
    standardizer : Standardizer
        Training-row statistics.
    weights : numpy.ndarray, shape (d, K - 1)
        Weights on standardised features for classes ``1 … K-1`` (zero rows for constant features).
    intercepts : numpy.ndarray, shape (K - 1,)
        Unpenalised intercepts.
    strength : float
        Ridge strength $\lambda$.
    iterations : int
        Newton iterations used.
    gradient_norm : float
        Largest absolute entry of the objective's gradient at the returned parameters.
    objective : float
        Mean log-loss plus penalty at the returned parameters.

    Examples
    --------
    >>> x = fit_probe([[0.0], [1.0], [2.0], [3.0]], [0, 0, 1, 1])
    >>> from dataclasses import fields
    >>> rebuilt = ProbeModel(**{f.name: getattr(x, f.name) for f in fields(x)})   # its fields are checked
    >>> rebuilt.classes.tolist()
    [0, 1]
    """

    classes: np.ndarray
    standardizer: Standardizer
    weights: np.ndarray
    intercepts: np.ndarray
    strength: float
    iterations: int
    gradient_norm: float
    objective: float

    def __post_init__(self):
        classes = as_int_array(self.classes, "classes", ndim=1)
        if classes.size < 2 or np.any(np.diff(classes) <= 0):
            raise ValueError(f"classes must be at least two sorted distinct labels, got {classes.tolist()[:10]}")
        check_instance(self.standardizer, "standardizer", Standardizer)
        weights = as_float_array(self.weights, "weights", ndim=2)
        intercepts = as_float_array(self.intercepts, "intercepts", ndim=1)
        d = self.standardizer.mean.shape[0]
        if weights.shape != (d, classes.size - 1):
            raise ValueError(f"weights must have shape (d, K - 1) = ({d}, {classes.size - 1}) for the "
                             f"standardizer's d and the K classes, got {weights.shape}")
        if intercepts.shape != (classes.size - 1,):
            raise ValueError(f"intercepts must have shape (K - 1,) = ({classes.size - 1},) for the K classes, "
                             f"got {intercepts.shape}")
        check_real(self.strength, "strength", low=0.0)
        check_positive_int(self.iterations, "iterations", minimum=0)
        check_real(self.gradient_norm, "gradient_norm", low=0.0)
        check_real(self.objective, "objective")

    def logits(self, features) -> np.ndarray:
        """Class logits, shape (n, K), with the reference class's logit fixed at zero."""
        z = self.standardizer.transform(features)
        rest = z @ self.weights + self.intercepts
        return np.concatenate([np.zeros((z.shape[0], 1)), rest], axis=1)

    def predict_proba(self, features) -> np.ndarray:
        """Class probabilities, shape (n, K), columns in the order of ``classes``."""
        logits = self.logits(features)
        logits -= logits.max(axis=1, keepdims=True)
        probabilities = np.exp(logits)
        return probabilities / probabilities.sum(axis=1, keepdims=True)

    def predict(self, features) -> np.ndarray:
        """Most probable class label per row (ties go to the earlier class)."""
        return self.classes[np.argmax(self.logits(features), axis=1)]


def _objective(z1: np.ndarray, onehot: np.ndarray, theta: np.ndarray, strength: float, d: int):
    """Mean NLL + penalty, its gradient and the probabilities; theta is (d + 1, K - 1)."""
    logits_rest = z1 @ theta
    logits = np.concatenate([np.zeros((z1.shape[0], 1)), logits_rest], axis=1)
    top = logits.max(axis=1, keepdims=True)
    log_normaliser = top[:, 0] + np.log(np.exp(logits - top).sum(axis=1))
    n = z1.shape[0]
    nll = float(np.mean(log_normaliser - np.einsum("ik,ik->i", logits, onehot)))
    weights = theta[:d]
    value = nll + 0.5 * strength * float(np.sum(weights * weights))
    probabilities = np.exp(logits - log_normaliser[:, None])
    residual = probabilities[:, 1:] - onehot[:, 1:]
    gradient = z1.T @ residual / n
    gradient[:d] += strength * weights
    return value, gradient, probabilities


def fit_probe(features, labels, *, strength: float = PROBE_STRENGTH, tol: float = GRADIENT_TOLERANCE,
              max_iter: int = 100) -> ProbeModel:
    r"""Fit the ridge-logistic probe on standardised ``features`` by Newton's method.

    Parameters
    ----------
    features : array_like, shape (n, d)
        Training vectors (finite).
    labels : array_like of int, shape (n,)
        Training classes; at least two distinct values.
    strength : float, default `PROBE_STRENGTH`
        Ridge strength $\lambda > 0$ on the weights (not the intercepts).
    tol : float, default [`GRADIENT_TOLERANCE`][mlm_book.probe.GRADIENT_TOLERANCE]
        Convergence threshold on the largest absolute gradient entry (positive, finite). A fit
        whose Newton decrement is already below the objective's float64 resolution also counts
        as converged, since no step can then be judged better than another.
    max_iter : int, default 100
        Newton iterations allowed.

    Returns
    -------
    ProbeModel

    Raises
    ------
    ValueError
        NaN or infinite features, mismatched lengths, a single class in ``labels``, or a
        non-positive ``strength``.
    RuntimeError
        If Newton does not reach ``tol`` (it should not happen for $\lambda > 0$).

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> x = rng.standard_normal((200, 3))
    >>> y = (x[:, 0] + 0.3 * rng.standard_normal(200) > 0).astype(int)
    >>> model = fit_probe(x, y)
    >>> model.gradient_norm < 1e-9, float(np.mean(model.predict(x) == y)) > 0.85
    (True, True)
    >>> fit_probe(x, np.zeros(200, dtype=int))
    Traceback (most recent call last):
    ...
    ValueError: labels must contain at least two classes, got only 0
    """
    x = _features(features, "features")
    y = _labels(labels, "labels", x.shape[0])
    strength = check_positive_float(strength, "strength")
    tol = check_positive_float(tol, "tol")
    max_iter = check_positive_int(max_iter, "max_iter")
    classes, index = np.unique(y, return_inverse=True)
    if classes.size < 2:
        raise ValueError(f"labels must contain at least two classes, got only {classes[0]}")
    standardizer = fit_standardizer(x)
    z = standardizer.transform(x)
    n, d = z.shape
    k = classes.size
    onehot = np.zeros((n, k))
    onehot[np.arange(n), index] = 1.0
    z1 = np.concatenate([z, np.ones((n, 1))], axis=1)
    theta = np.zeros((d + 1, k - 1))
    # Start the intercepts at the training log-odds: Newton then begins near the answer.
    shares = onehot.mean(axis=0)
    theta[d] = np.log(shares[1:] / shares[0])
    value, gradient, probabilities = _objective(z1, onehot, theta, strength, d)
    penalty = np.zeros(d + 1)
    penalty[:d] = strength
    iterations = 0
    settled = False
    while float(np.max(np.abs(gradient))) > tol and iterations < max_iter:
        iterations += 1
        p = probabilities[:, 1:]
        if k == 2:
            # Binary: the mean-NLL Hessian is Z^T diag(p(1-p)) Z / n.
            hessian = (z1 * (p[:, 0] * (1.0 - p[:, 0]))[:, None]).T @ z1 / n
        else:
            # Blocks (a, b) of sum_i z_i z_i^T (diag(p_i) - p_i p_i^T)_{ab} / n, as matrix products
            # (a three-operand einsum took seconds per iteration at 21 classes and 3000 rows):
            # the p p^T part is one Gram matrix of the rows p_ia z_i, the diagonal part k - 1 more.
            weighted = (p[:, :, None] * z1[:, None, :]).reshape(n, -1)
            hessian = -(weighted.T @ weighted)
            for a in range(k - 1):
                block = slice(a * (d + 1), (a + 1) * (d + 1))
                hessian[block, block] += (z1 * p[:, a:a + 1]).T @ z1
            hessian /= n
        hessian = hessian + np.diag(np.tile(penalty, k - 1))
        flat_gradient = gradient.T.reshape(-1)
        step = np.linalg.solve(hessian, flat_gradient).reshape(k - 1, d + 1).T
        # Backtracking line search (Armijo): halve until the objective decreases enough.
        slope = float(np.sum(gradient * step))
        # Converged relative to what float64 resolves, not only by the absolute `tol`: the
        # gradient is a mean of n terms, so its rounding floor grows with n and the feature
        # scale, and near the optimum the predicted decrease slope / 2 (the Newton decrement)
        # falls below the objective's last bits. The Armijo test then compares rounding noise
        # and rejected a step that was already exact (gradient 1e-17 after it, 1.7e-9 before),
        # stalling above `tol`. The remaining gap is below float resolution, so take the full
        # Newton step (quadratic regime) and stop. Fits that met `tol` before end within
        # rounding of where they did (on chapter 5's probes: weights within 1e-8, the same
        # predictions); some now end nearer the optimum, where the old search halved a step.
        if 0.5 * slope <= DECREMENT_ULPS * np.spacing(max(1.0, abs(value))):
            theta = theta - step
            value, gradient, probabilities = _objective(z1, onehot, theta, strength, d)
            settled = True
            break
        size = 1.0
        while True:
            candidate = theta - size * step
            new_value, new_gradient, new_probabilities = _objective(z1, onehot, candidate, strength, d)
            if new_value <= value - 1e-4 * size * slope or size < 1e-10:
                break
            size *= 0.5
        theta, value, gradient, probabilities = candidate, new_value, new_gradient, new_probabilities
    gradient_norm = float(np.max(np.abs(gradient)))
    if gradient_norm > tol and not settled:
        raise RuntimeError(f"Newton's method did not converge in {max_iter} iterations "
                           f"(gradient {gradient_norm:.3g} > {tol:.3g})")
    return ProbeModel(classes=classes, standardizer=standardizer, weights=theta[:d].copy(),
                      intercepts=theta[d].copy(), strength=strength, iterations=iterations,
                      gradient_norm=gradient_norm, objective=value)


def accuracy(model: ProbeModel, features, labels) -> float:
    """Share of rows whose predicted class equals the label.

    Raises
    ------
    TypeError
        If ``model`` is not a [`ProbeModel`][mlm_book.probe.ProbeModel], or the features or
        labels are not arrays of numbers and integers.
    ValueError
        If ``features`` is empty, NaN or infinite, has the wrong number of columns, or
        ``labels`` does not give one label per row.

    Examples
    --------
    >>> m = fit_probe([[0.0], [1.0], [2.0], [3.0]], [0, 0, 1, 1])
    >>> accuracy(m, [[0.2], [2.9]], [0, 1])
    1.0
    """
    check_instance(model, "model", ProbeModel)
    x = _features(features, "features")
    y = _labels(labels, "labels", x.shape[0])
    return float(np.mean(model.predict(x) == y))


@dataclass(frozen=True)
class ProbeScore:
    r"""Accuracy of a probe on a held-out set.

    Attributes
    ----------
    accuracy : float
        Share of test rows classified correctly.
    n_test : int
        Number of test rows.
    stderr : float
        Binomial standard error $\sqrt{a(1-a)/n}$.
    majority_share : float
        Test share of the training-majority class: what a constant classifier scores.
    model : ProbeModel
        The fitted probe.

    Raises
    ------
    TypeError
        If a field has the wrong type.
    ValueError
        If a share is outside [0, 1], ``n_test`` is below one or ``stderr`` is negative or
        not finite.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> features = rng.standard_normal((400, 2)); y = (features[:, 1] > 0).astype(int)
    >>> x = fit_and_score(features[:200], y[:200], features[200:], y[200:])
    >>> from dataclasses import fields
    >>> rebuilt = ProbeScore(**{f.name: getattr(x, f.name) for f in fields(x)})   # its fields are checked
    >>> rebuilt.n_test
    200
    """

    accuracy: float
    n_test: int
    stderr: float
    majority_share: float
    model: ProbeModel

    def __post_init__(self):
        check_real(self.accuracy, "accuracy", low=0.0, high=1.0)
        check_positive_int(self.n_test, "n_test")
        check_real(self.stderr, "stderr", low=0.0)
        check_real(self.majority_share, "majority_share", low=0.0, high=1.0)
        check_instance(self.model, "model", ProbeModel)


def _score(model: ProbeModel, train_y: np.ndarray, test_x: np.ndarray, test_y: np.ndarray) -> ProbeScore:
    value = float(np.mean(model.predict(test_x) == test_y))
    classes, counts = np.unique(train_y, return_counts=True)
    majority = classes[np.argmax(counts)]
    n = test_y.shape[0]
    return ProbeScore(accuracy=value, n_test=n, stderr=float(np.sqrt(value * (1 - value) / n)),
                      majority_share=float(np.mean(test_y == majority)), model=model)


def _split_inputs(train_features, train_labels, test_features, test_labels):
    train_x = _features(train_features, "train_features")
    train_y = _labels(train_labels, "train_labels", train_x.shape[0])
    test_x = _features(test_features, "test_features")
    test_y = _labels(test_labels, "test_labels", test_x.shape[0])
    if test_x.shape[1] != train_x.shape[1]:
        raise ValueError(f"test_features must have {train_x.shape[1]} columns like train_features, "
                         f"got {test_x.shape[1]}")
    if np.unique(train_y).size < 2:
        raise ValueError(f"train_labels must contain at least two classes, got only {train_y[0]}")
    return train_x, train_y, test_x, test_y


def fit_and_score(train_features, train_labels, test_features, test_labels, *,
                  strength: float = PROBE_STRENGTH) -> ProbeScore:
    r"""Fit the probe on a training split and score it on a test split.

    Parameters
    ----------
    train_features : array_like, shape (n, d)
    train_labels : array_like of int, shape (n,)
    test_features : array_like, shape (m, d)
    test_labels : array_like of int, shape (m,)
    strength : float, default `PROBE_STRENGTH`

    Returns
    -------
    ProbeScore

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> x = rng.standard_normal((400, 2)); y = (x[:, 1] > 0).astype(int)
    >>> fit_and_score(x[:200], y[:200], x[200:], y[200:]).accuracy > 0.95
    True
    """
    train_x, train_y, test_x, test_y = _split_inputs(train_features, train_labels, test_features, test_labels)
    model = fit_probe(train_x, train_y, strength=strength)
    return _score(model, train_y, test_x, test_y)


def shuffled_control(train_features, train_labels, test_features, test_labels, rng: np.random.Generator, *,
                     strength: float = PROBE_STRENGTH, permute_test: bool = False) -> ProbeScore:
    r"""The same probe trained on randomly permuted training labels, scored on the true test labels.

    Only the training labels are permuted (a permutation keeps the class shares), so the probe sees
    the real vectors paired with noise. It should score at most about the test share of the
    training-majority class; more would mean the probe finds structure where there is none.

    A probe fitted to noise still draws *some* boundary, and on vectors whose main variation is
    the real label that boundary can line up with it by chance, in either direction: the score
    against true labels then scatters around one half by more than the binomial error. With
    ``permute_test=True`` the test labels are permuted too (independently), so the test labels
    are independent of the predictions and the expected score is at most the majority share.

    Parameters
    ----------
    train_features, train_labels, test_features, test_labels
        As in [`fit_and_score`][mlm_book.probe.fit_and_score].
    rng : numpy.random.Generator
        Draws the permutation.
    strength : float, default `PROBE_STRENGTH`
    permute_test : bool, default False
        Also permute the test labels (the probe is then trained *and* scored on permuted labels).

    Returns
    -------
    ProbeScore

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> x = rng.standard_normal((400, 2)); y = (x[:, 1] > 0).astype(int)
    >>> shuffled_control(x[:200], y[:200], x[200:], y[200:], rng).accuracy < 0.65
    True
    """
    train_x, train_y, test_x, test_y = _split_inputs(train_features, train_labels, test_features, test_labels)
    rng = check_generator(rng)
    permuted = train_y[rng.permutation(train_y.shape[0])]
    if permute_test:
        test_y = test_y[rng.permutation(test_y.shape[0])]
    model = fit_probe(train_x, permuted, strength=strength)
    return _score(model, permuted, test_x, test_y)


def kfold_splits(n_samples: int, n_folds: int, rng: np.random.Generator, *,
                 labels=None) -> tuple[tuple[np.ndarray, np.ndarray], ...]:
    r"""Shuffled k-fold splits; stratified by class when ``labels`` is given.

    Plain: a random permutation of the rows cut into ``n_folds`` near-equal folds. Stratified:
    each class's rows are shuffled and dealt round-robin to the folds (starting where the
    previous class stopped), so every fold's class counts differ from the proportional share by
    less than one and fold sizes differ by at most one.

    Parameters
    ----------
    n_samples : int
        Number of rows; ``n_folds * n_samples`` is at most `MAX_SPLIT_INDICES`.
    n_folds : int
        Number of folds, $2 \le$ ``n_folds`` $\le$ ``n_samples``.
    rng : numpy.random.Generator
        Shuffles the rows.
    labels : array_like of int, shape (n_samples,), optional
        Class labels for stratification.

    Returns
    -------
    tuple of (train_index, test_index)
        Sorted index arrays; the test indices partition ``range(n_samples)``.

    Examples
    --------
    >>> splits = kfold_splits(10, 5, np.random.default_rng(0), labels=[0] * 5 + [1] * 5)
    >>> [len(test) for _, test in splits], sorted(np.concatenate([t for _, t in splits]).tolist()) == list(range(10))
    ([2, 2, 2, 2, 2], True)
    """
    n_samples = check_positive_int(n_samples, "n_samples", minimum=2)
    n_folds = check_positive_int(n_folds, "n_folds", minimum=2)
    if n_folds > n_samples:
        raise ValueError(f"n_folds must be at most n_samples ({n_samples}), got {n_folds}")
    rng = check_generator(rng)
    y = None
    if labels is not None:
        y = _labels(labels, "labels")
        if y.shape[0] != n_samples:
            raise ValueError(f"labels must have one label per sample (n_samples = {n_samples}), got {y.shape[0]}")
    if n_folds * n_samples > MAX_SPLIT_INDICES:
        raise ValueError(f"n_samples * n_folds must be at most {MAX_SPLIT_INDICES} (each fold's split holds "
                         f"every row index), got n_samples = {n_samples}, n_folds = {n_folds}")
    fold_of = np.empty(n_samples, dtype=np.int64)
    if y is None:
        order = rng.permutation(n_samples)
        fold_of[order] = np.arange(n_samples) % n_folds
    else:
        offset = 0
        for value in np.unique(y):
            members = rng.permutation(np.flatnonzero(y == value))
            fold_of[members] = (offset + np.arange(members.size)) % n_folds
            offset = (offset + members.size) % n_folds
    return tuple((np.flatnonzero(fold_of != fold), np.flatnonzero(fold_of == fold)) for fold in range(n_folds))


def leave_one_group_out(groups) -> tuple[tuple[np.ndarray, np.ndarray], ...]:
    r"""One split per distinct group: test on that group, train on all others.

    Parameters
    ----------
    groups : array_like, shape (n,)
        Group id of each row (e.g. which alias an occurrence belongs to); at least two groups.

    Returns
    -------
    tuple of (train_index, test_index)
        In the order of the sorted group ids.

    Examples
    --------
    >>> [test.tolist() for _, test in leave_one_group_out([2, 1, 2, 3])]
    [[1], [0, 2], [3]]
    """
    try:
        array = np.asarray(groups)
    except (TypeError, ValueError) as error:
        raise TypeError(f"groups must be a one-dimensional array of group ids (not ragged), "
                        f"got {type(groups).__name__}") from error
    if array.ndim != 1:
        raise ValueError(f"groups must be one-dimensional, got shape {array.shape}")
    values = np.unique(array)
    if values.size < 2:
        raise ValueError(f"groups must contain at least two distinct groups, got {values.size}")
    return tuple((np.flatnonzero(array != value), np.flatnonzero(array == value)) for value in values)


@dataclass(frozen=True)
class CrossValidation:
    r"""Pooled cross-validated accuracy.

    Attributes
    ----------
    accuracy : float
        Correct predictions over all test rows of all splits (each row is tested once when the
        splits partition the data).
    fold_accuracies : numpy.ndarray, shape (n_splits,)
    n_test : int
        Total test rows.
    stderr : float
        Binomial standard error of ``accuracy``.
    control : bool
        Whether training labels were permuted (shuffled-label control).

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> features = rng.standard_normal((60, 2)); y = (features[:, 0] > 0).astype(int)
    >>> x = cross_validate(features, y, kfold_splits(60, 3, rng, labels=y))
    >>> from dataclasses import fields
    >>> rebuilt = CrossValidation(**{f.name: getattr(x, f.name) for f in fields(x)})   # its fields are checked
    >>> rebuilt.n_test, rebuilt.control
    (60, False)
    """

    accuracy: float
    fold_accuracies: np.ndarray
    n_test: int
    stderr: float
    control: bool

    def __post_init__(self):
        check_real(self.accuracy, "accuracy", low=0.0, high=1.0)
        folds = as_float_array(self.fold_accuracies, "fold_accuracies", ndim=1)
        if folds.size == 0 or np.any((folds < 0) | (folds > 1)):
            raise ValueError(f"fold_accuracies must hold at least one accuracy, each in [0, 1], "
                             f"got {folds.tolist()[:10]}")
        check_positive_int(self.n_test, "n_test")
        check_real(self.stderr, "stderr", low=0.0)
        check_bool(self.control, "control")


def _splits(splits, n: int) -> tuple[tuple[np.ndarray, np.ndarray], ...]:
    """``splits`` as (train, test) pairs of int64 row indices in ``[0, n)``, each test set non-empty."""
    try:
        if isinstance(splits, (str, bytes)):
            raise TypeError
        pairs = tuple(splits)
    except TypeError:
        raise TypeError(f"splits must be a sequence of (train_index, test_index) pairs, got {_kind(splits)}") from None
    if not pairs:
        raise ValueError("splits must hold at least one (train, test) pair")
    checked = []
    for number, pair in enumerate(pairs):
        try:
            if isinstance(pair, (str, bytes)):
                raise TypeError
            train, test = pair
        except (TypeError, ValueError):
            raise TypeError(f"splits[{number}] must be a (train_index, test_index) pair, got {_kind(pair)}") from None
        train = as_int_array(train, f"splits[{number}] train_index", ndim=1)
        test = as_int_array(test, f"splits[{number}] test_index", ndim=1)
        if test.size == 0:
            raise ValueError(f"splits[{number}] has an empty test_index")
        for part, index in (("train_index", train), ("test_index", test)):
            if index.size and (index.min() < 0 or index.max() >= n):
                raise ValueError(f"splits[{number}] {part} must hold row indices in [0, {n}), "
                                 f"got values from {index.min()} to {index.max()}")
        checked.append((train, test))
    return tuple(checked)


def cross_validate(features, labels, splits, *, strength: float = PROBE_STRENGTH, control: bool = False,
                   rng: np.random.Generator | None = None) -> CrossValidation:
    r"""Fit and score the probe on each ``(train, test)`` split; pool the accuracy.

    Standardisation statistics come from each split's training rows only. With ``control=True``
    the training labels of each split are permuted with ``rng`` (one permutation per split, drawn
    in order) and the test rows are scored against their true labels.

    Parameters
    ----------
    features : array_like, shape (n, d)
    labels : array_like of int, shape (n,)
    splits : sequence of (train_index, test_index)
        Integer row indices in ``[0, n)``, each test index non-empty.
        From [`kfold_splits`][mlm_book.probe.kfold_splits] or [`leave_one_group_out`][mlm_book.probe.leave_one_group_out].
    strength : float, default `PROBE_STRENGTH`
    control : bool, default False
        Run the shuffled-label control.
    rng : numpy.random.Generator, optional
        Required when ``control`` is true.

    Returns
    -------
    CrossValidation

    Raises
    ------
    ValueError
        If a split's training labels hold a single class (a probe cannot be fitted), or the
        inputs are malformed.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> x = rng.standard_normal((300, 2)); y = (x[:, 0] > 0).astype(int)
    >>> splits = kfold_splits(300, 5, rng, labels=y)
    >>> cross_validate(x, y, splits).accuracy > 0.95
    True
    """
    x = _features(features, "features")
    y = _labels(labels, "labels", x.shape[0])
    control = check_bool(control, "control")
    if control:
        if rng is None:
            raise ValueError("rng must be given when control is true")
        rng = check_generator(rng)
    splits = _splits(splits, x.shape[0])
    correct = 0
    total = 0
    folds = []
    for number, (train, test) in enumerate(splits):
        train_y = y[train]
        if np.unique(train_y).size < 2:
            raise ValueError(f"splits[{number}] has a single class in its training labels")
        if control:
            train_y = train_y[rng.permutation(train_y.shape[0])]
        model = fit_probe(x[train], train_y, strength=strength)
        hits = model.predict(x[test]) == y[test]
        folds.append(float(np.mean(hits)))
        correct += int(hits.sum())
        total += int(test.size)
    value = correct / total
    return CrossValidation(accuracy=value, fold_accuracies=np.array(folds), n_test=total,
                           stderr=float(np.sqrt(value * (1 - value) / total)), control=bool(control))
