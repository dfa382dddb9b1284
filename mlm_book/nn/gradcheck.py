r"""Central differences against the hand-written backward pass, in float64.

For every entry $\theta_k$ of every parameter tensor, and every entry of the input rows
$x_0 = E[\tilde x] + P$, the numerical derivative

$$ \frac{\mathcal L(\theta + h e_k) - \mathcal L(\theta - h e_k)}{2h} $$

is compared with the analytic gradient. The error of a tensor is its largest entrywise
discrepancy relative to the tensor's gradient scale,

$$ \frac{\max_k |g_k - \hat g_k|}{\max(\max_k |g_k|, \max_k |\hat g_k|, \tau)} , $$

with a tiny floor $\tau$. Dividing each entry by its own magnitude instead would divide
rounding noise by zero wherever the true derivative vanishes, and some do exactly: the
gradient of the key bias is zero because a softmax ignores a constant shift of its scores.
With $h = 10^{-5}$ in float64 the truncation error is about $h^2 \approx 10^{-10}$ times
the third derivative and the rounding error about $10^{-16}/h \approx 10^{-11}$, so a
correct backward pass scores far below the book's threshold of $10^{-6}$.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from mlm_book.nn import encoder as enc
from mlm_book.nn import layers
from mlm_book.validation import (
    as_float_array,
    check_generator,
    check_instance,
    check_positive_float,
    check_positive_int,
    check_real,
)

__all__ = ["GradCheckResult", "central_differences", "gradient_check", "relative_error"]


def relative_error(analytic: np.ndarray, numeric: np.ndarray, floor: float = 1e-12) -> float:
    """Largest entrywise discrepancy between two gradient arrays, relative to their largest entry.

    Raises
    ------
    TypeError
        If ``analytic`` or ``numeric`` is not real numbers, or ``floor`` not a real number.
    ValueError
        If the arrays are empty, differ in shape or hold NaN or infinity, or ``floor`` is
        not positive.

    Examples
    --------
    >>> relative_error(np.array([2.0, 0.0]), np.array([2.0, 2e-9]))
    1e-09
    """
    analytic = as_float_array(analytic, "analytic")
    numeric = as_float_array(numeric, "numeric")
    if analytic.shape != numeric.shape:
        raise ValueError(f"analytic and numeric must have the same shape, got {analytic.shape} and {numeric.shape}")
    if analytic.size == 0:
        raise ValueError("analytic and numeric must not be empty")
    check_positive_float(floor, "floor")
    scale = max(float(np.max(np.abs(analytic))), float(np.max(np.abs(numeric))), floor)
    with np.errstate(over="ignore"):
        largest = float(np.max(np.abs(analytic - numeric)))
    if not math.isfinite(largest):   # a difference of two floats near the largest overflows; scaled, it cannot
        return float(np.max(np.abs(analytic / scale - numeric / scale)))
    return largest / scale


@dataclass(frozen=True)
class GradCheckResult:
    """Outcome of [`gradient_check`][mlm_book.nn.gradcheck.gradient_check].

    Attributes
    ----------
    errors : dict of str to float
        Largest relative error per parameter tensor, plus ``"x0"`` for the input rows.
    max_error : float
        The largest of them.
    n_entries : int
        Number of entries checked.

    Raises
    ------
    TypeError
        If ``errors`` is not a mapping of names to real numbers, or a field not a number.
    ValueError
        If an error is negative, NaN or infinite, ``max_error`` is not the largest of
        ``errors``, or ``n_entries`` is negative.

    Examples
    --------
    >>> result = GradCheckResult({"W_E": 3e-9, "x0": 1e-8}, 1e-8, 120)
    >>> max(result.errors, key=result.errors.get)
    'x0'
    """

    errors: dict
    max_error: float
    n_entries: int

    def __post_init__(self):
        if not isinstance(self.errors, Mapping):
            raise TypeError(f"errors must be a dict of tensor names to errors, got {type(self.errors).__name__}")
        for name, value in self.errors.items():
            if not isinstance(name, str):
                raise TypeError(f"errors must be keyed by tensor names (str), got {type(name).__name__}")
            check_real(value, f"errors[{name!r}]", low=0.0)
        check_real(self.max_error, "max_error", low=0.0)
        if self.errors and self.max_error != max(self.errors.values()):
            raise ValueError(f"max_error must be the largest of errors ({max(self.errors.values())}), "
                             f"got {self.max_error}")
        check_positive_int(self.n_entries, "n_entries", minimum=0)


#: Most positions (batch * length) a gradient check accepts; the book's use 18.
_MAX_POSITIONS = 1000


def _loss_from_embeddings(params, config, x0, shape, rows, target_rows, key_bias=None):
    out, _ = enc.blocks_and_head(params, config, x0, shape, rows, key_bias=key_bias)
    return layers.cross_entropy_forward(out, target_rows)[0]


def central_differences(array: np.ndarray, evaluate, h: float = 1e-5) -> np.ndarray:
    r"""The numerical gradient of ``evaluate()`` with respect to ``array``, entry by entry.

    Each entry is moved to $\theta_k \pm h$ in place, ``evaluate()`` (which must read
    ``array``) is called at both, and the entry is restored, so ``array`` ends unchanged.

    Examples
    --------
    >>> x = np.array([1.0, -2.0])
    >>> central_differences(x, lambda: float(x @ x)).round(6).tolist(), x.tolist()
    ([2.0, -4.0], [1.0, -2.0])
    """
    if not isinstance(array, np.ndarray) or array.dtype.kind != "f":
        raise TypeError(f"array must be a float numpy array (it is perturbed in place), got "
                        f"{type(array).__name__}" + (f" of dtype {array.dtype}" if isinstance(array, np.ndarray) else ""))
    if not array.flags.writeable or not array.flags.c_contiguous:
        raise ValueError("array must be writeable and C-contiguous (it is perturbed in place)")
    if not callable(evaluate):
        raise TypeError(f"evaluate must be a callable that reads array, got {type(evaluate).__name__}")
    if isinstance(h, bool) or not isinstance(h, (int, float, np.floating)) or not 0 < h < 1:
        raise ValueError(f"h must be a step in (0, 1), got {h!r}")
    out = np.zeros_like(array)
    flat, grad = array.reshape(-1), out.reshape(-1)
    for k in range(flat.size):
        keep = flat[k]
        flat[k] = keep + h
        plus = evaluate()
        flat[k] = keep - h
        minus = evaluate()
        flat[k] = keep
        grad[k] = (plus - minus) / (2.0 * h)
    return out


def gradient_check(config: enc.EncoderConfig, rng: np.random.Generator, batch: int = 2, length: int | None = None,
                   h: float = 1e-5, floor: float = 1e-12) -> GradCheckResult:
    """Check every gradient of a freshly initialised float64 encoder by central differences.

    A random corrupted batch (some [MASK], some selected positions) and random targets are
    drawn; parameters are perturbed away from their special initial values (gains one,
    biases zero) so that every term of the backward pass is exercised.

    Parameters
    ----------
    config : EncoderConfig
        Keep it small: the check costs two forward passes per parameter entry.
    rng : numpy.random.Generator
    batch : int
        Sequences in the batch.
    length : int, optional
        Sequence length (default ``config.length``).
    h : float
        Finite-difference step.
    floor : float
        Denominator floor of [`relative_error`][mlm_book.nn.gradcheck.relative_error].

    Returns
    -------
    GradCheckResult

    Raises
    ------
    TypeError
        If ``config`` is not an [`EncoderConfig`][mlm_book.nn.encoder.EncoderConfig], ``rng``
        not a generator, or a size or step not a number of the right kind.
    ValueError
        If ``batch`` is not positive, ``length`` not in ``[2, config.length]``, the batch has
        more than 1000 positions (each entry costs two forward passes), ``h`` is not in
        ``(0, 1]`` or ``floor`` is not positive.

    Examples
    --------
    >>> cfg = enc.EncoderConfig(vocab_size=4, length=3, d_model=4, n_blocks=1, n_heads=2)
    >>> result = gradient_check(cfg, np.random.default_rng(0))
    >>> result.max_error < 1e-6
    True
    """
    check_instance(config, "config", enc.EncoderConfig)
    check_generator(rng)
    check_positive_int(batch, "batch")
    if length is None:
        length = config.length
        if length < 2:
            raise ValueError(f"length (default config.length) must be at least 2, got {length}")
    else:
        # the first sequence shows [MASK] at its start and leaves its last position unselected
        check_positive_int(length, "length", minimum=2)
        if length > config.length:
            raise ValueError(f"length must be at most config.length = {config.length} (the rows of the position "
                             f"table), got {length}")
    if batch * length > _MAX_POSITIONS:
        raise ValueError(f"batch * length = {batch * length} positions is more than a gradient check can afford "
                         f"({_MAX_POSITIONS}): it runs two forward passes per entry of every input row")
    if check_positive_float(h, "h") > 1.0:
        raise ValueError(f"h must be a small finite-difference step in (0, 1], got {h}")
    check_positive_float(floor, "floor")
    params = enc.init_params(config, rng, dtype=np.float64)
    for name, value in params.items():
        value += rng.normal(0.0, 0.3, size=value.shape)
    shown = rng.integers(0, config.input_vocab_size, size=(batch, length))
    shown[0, 0] = config.mask_id
    if config.pad:                                  # a padded key in the first sequence, a real one in each
        shown[1:, 0] = np.where(shown[1:, 0] == config.pad_id, 0, shown[1:, 0])
        shown[0, -1] = config.pad_id
    key_bias = enc.key_bias(config, shown, np.float64)
    targets = rng.integers(0, config.vocab_size, size=(batch, length))
    selected = rng.random((batch, length)) < 0.5
    selected[0, 0] = True
    selected[-1, -1] = False
    value, grads = enc.loss_and_grads(params, config, shown, targets, selected)

    rows = np.flatnonzero(selected.reshape(-1))
    target_rows = targets.reshape(-1)[rows]
    errors, count = {}, 0

    def full_loss():
        x0, _ = layers.embedding_forward(shown, params["E"], params["P"])
        return _loss_from_embeddings(params, config, x0, shown.shape, rows, target_rows, key_bias)

    for name in enc.param_names(config):
        numeric = central_differences(params[name], full_loss, h)
        errors[name] = relative_error(grads[name], numeric, floor)
        count += numeric.size

    x0, cache = layers.embedding_forward(shown, params["E"], params["P"])
    out, enc_cache = enc.blocks_and_head(params, config, x0, shown.shape, rows, key_bias=key_bias)
    _, dlogits = layers.cross_entropy_forward(out, target_rows)
    dx0, _, _ = enc.blocks_and_head_backward(dlogits, enc_cache, config)
    numeric = central_differences(x0, lambda: _loss_from_embeddings(params, config, x0, shown.shape, rows, target_rows,
                                                                 key_bias))
    errors["x0"] = relative_error(dx0, numeric, floor)
    count += numeric.size
    return GradCheckResult(errors=errors, max_error=max(errors.values()), n_entries=count)
