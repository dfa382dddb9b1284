"""Argument checks shared by every public function of the package.

Each check raises `TypeError` for a value of the wrong kind and `ValueError`
for a value of the right kind outside its domain, and names the argument in the message,
so that a reader who passes a bad probability vector learns which one and why.
"""

from __future__ import annotations

import math
import numbers
import re

import numpy as np

__all__ = [
    "as_float_array",
    "as_int_array",
    "check_probability",
    "check_distribution",
    "check_tokens",
    "check_positive_int",
    "check_seeds",
    "check_generator",
    "check_table_size",
    "check_positive_float",
    "check_real",
    "check_instance",
    "check_choice",
    "check_bool",
    "check_sequence",
    "check_format",
    "check_finite_numbers",
]

#: Tolerance on a probability vector's sum. Rows built in float64 sum to one within a few
#: ulp per entry; 1e-9 admits that rounding and rejects any real mistake.
SUM_TOLERANCE = 1e-9

#: Largest width or precision a float format specification may ask for: enough for any table
#: cell, while ``"1000000000000"`` would allocate a terabyte-long string.
FORMAT_LIMIT = 100


def as_float_array(value, name: str, *, ndim: int | tuple[int, ...] | None = None) -> np.ndarray:
    """Return ``value`` as a finite float64 array, checking its number of dimensions.

    Examples
    --------
    >>> as_float_array([1, 2], "x").dtype
    dtype('float64')
    >>> as_float_array([[1.0]], "x", ndim=1)
    Traceback (most recent call last):
    ...
    ValueError: x must have 1 dimension(s), got shape (1, 1)
    """
    if value is None or isinstance(value, (str, bytes)):
        raise TypeError(f"{name} must be array-like of numbers, got {type(value).__name__}")
    try:
        raw = np.asarray(value)
        if raw.dtype.kind in "OUSV" and raw.size:
            # object arrays (mixed or nested items) and strings are converted one by one below
            raw = np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError, OverflowError) as error:
        raise TypeError(f"{name} must be array-like of numbers (not ragged), got {type(value).__name__}") from error
    if raw.dtype.kind == "c":
        # Casting would silently drop the imaginary part (numpy only warns).
        raise TypeError(f"{name} must be real, got complex values")
    if raw.dtype.kind in "OUSVmM":
        raise TypeError(f"{name} must be array-like of numbers, got dtype {raw.dtype}")
    array = raw.astype(np.float64, copy=False)
    if ndim is not None:
        allowed = (ndim,) if isinstance(ndim, int) else tuple(ndim)
        if array.ndim not in allowed:
            raise ValueError(f"{name} must have {' or '.join(map(str, allowed))} dimension(s), got shape {array.shape}")
    if not np.all(np.isfinite(array)):
        raise ValueError(f"{name} must be finite (no NaN or infinity)")
    return array


def as_int_array(value, name: str, *, ndim: int | tuple[int, ...] | None = None) -> np.ndarray:
    """Return ``value`` as an int64 array; floats, booleans and objects are refused.

    Examples
    --------
    >>> as_int_array([0, 3], "tokens")
    array([0, 3])
    >>> as_int_array([0.5], "tokens")
    Traceback (most recent call last):
    ...
    TypeError: tokens must hold integers, got dtype float64
    """
    if value is None or isinstance(value, (str, bytes)):
        raise TypeError(f"{name} must hold integers, got {type(value).__name__}")
    try:
        array = np.asarray(value)
    except (TypeError, ValueError) as error:
        raise TypeError(f"{name} must be array-like of integers (not ragged), got {type(value).__name__}") from error
    if array.dtype == bool or not np.issubdtype(array.dtype, np.integer):
        if array.size == 0 and array.dtype == np.float64:
            array = array.astype(np.int64)
        else:
            raise TypeError(f"{name} must hold integers, got dtype {array.dtype}")
    if ndim is not None:
        allowed = (ndim,) if isinstance(ndim, int) else tuple(ndim)
        if array.ndim not in allowed:
            raise ValueError(f"{name} must have {' or '.join(map(str, allowed))} dimension(s), got shape {array.shape}")
    return array.astype(np.int64, copy=False)


def check_probability(value, name: str, *, low: float = 0.0, high: float = 1.0) -> float:
    """Return ``value`` as a float in ``[low, high]``; NaN, strings and out-of-range values fail.

    Examples
    --------
    >>> check_probability(0.15, "rho")
    0.15
    >>> check_probability(float("nan"), "rho")
    Traceback (most recent call last):
    ...
    ValueError: rho must be a finite number in [0.0, 1.0], got nan
    """
    return check_real(value, name, low=low, high=high)


def check_distribution(value, name: str, *, axis: int = -1, strictly_positive: bool = False) -> np.ndarray:
    """Return ``value`` as float64 probability vectors along ``axis`` (non-negative, sum to one).

    Examples
    --------
    >>> check_distribution([0.25, 0.75], "p")
    array([0.25, 0.75])
    >>> check_distribution([0.5, 0.6], "p")
    Traceback (most recent call last):
    ...
    ValueError: p must sum to 1 along axis -1 (largest deviation 0.1)
    """
    array = as_float_array(value, name)
    if array.ndim == 0 or array.size == 0:
        raise ValueError(f"{name} must hold at least one probability vector, got shape {array.shape}")
    if strictly_positive and np.any(array <= 0):
        raise ValueError(f"{name} must be strictly positive")
    if np.any(array < 0):
        raise ValueError(f"{name} must be non-negative")
    deviation = float(np.max(np.abs(array.sum(axis=axis) - 1.0)))
    if deviation > SUM_TOLERANCE:
        raise ValueError(f"{name} must sum to 1 along axis {axis} (largest deviation {deviation:.3g})")
    return array


def check_tokens(value, name: str, vocab_size: int, *, ndim: int | tuple[int, ...] | None = None,
                 allow_empty: bool = False) -> np.ndarray:
    """Return ``value`` as int64 token ids in ``[0, vocab_size)``.

    Examples
    --------
    >>> check_tokens([[0, 24]], "tokens", 25)
    array([[ 0, 24]])
    >>> check_tokens([25], "tokens", 25)
    Traceback (most recent call last):
    ...
    ValueError: tokens must be token ids in [0, 25), got values from 25 to 25
    """
    array = as_int_array(value, name, ndim=ndim)
    if array.size == 0 or (array.ndim >= 1 and array.shape[-1] == 0):
        if not allow_empty:
            raise ValueError(f"{name} must not be empty, got shape {array.shape}")
        return array
    low, high = int(array.min()), int(array.max())
    if low < 0 or high >= vocab_size:
        raise ValueError(f"{name} must be token ids in [0, {vocab_size}), got values from {low} to {high}")
    return array


def check_positive_int(value, name: str, *, minimum: int = 1, maximum: int | None = None) -> int:
    """Return ``value`` as an int at least ``minimum`` and, when given, at most ``maximum``.

    ``maximum`` is the bound of a size argument (a count of permutations, a sample size, a batch):
    without one, ``10**12`` would allocate terabytes or loop for days; the error names the bound.

    Examples
    --------
    >>> check_positive_int(3, "length")
    3
    >>> check_positive_int(0, "length")
    Traceback (most recent call last):
    ...
    ValueError: length must be an integer >= 1, got 0
    >>> check_positive_int(10**12, "n_permutations", maximum=10_000)
    Traceback (most recent call last):
    ...
    ValueError: n_permutations must be an integer in [1, 10000], got 1000000000000
    """
    for bound, bound_name in ((minimum, "minimum"), (maximum, "maximum")):
        if bound_name == "maximum" and bound is None:
            continue
        if isinstance(bound, bool) or not isinstance(bound, numbers.Integral):
            raise TypeError(f"{bound_name} must be an integer, got {type(bound).__name__}")
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be an integer, got {type(value).__name__}")
    if maximum is not None and not minimum <= value <= maximum:
        raise ValueError(f"{name} must be an integer in [{minimum}, {maximum}], got {value}")
    if value < minimum:
        raise ValueError(f"{name} must be an integer >= {minimum}, got {value}")
    return int(value)


def check_seeds(value, name: str = "seeds") -> tuple[int, ...]:
    """Return ``value`` if it is a non-empty tuple of training seeds (non-negative integers).

    A result record's seeds are a tuple, not a list, so the record stays hashable and its order is the
    order of its per-seed rows.

    Examples
    --------
    >>> check_seeds((20240601, 1, 2))
    (20240601, 1, 2)
    >>> check_seeds([1, 2])
    Traceback (most recent call last):
    ...
    TypeError: seeds must be a non-empty tuple of integers, got [1, 2]
    >>> check_seeds((1, -2))
    Traceback (most recent call last):
    ...
    ValueError: seeds must be an integer >= 0, got -2
    """
    if not isinstance(value, tuple) or not value:
        raise TypeError(f"{name} must be a non-empty tuple of integers, got {value!r:.60}")
    for seed in value:
        check_positive_int(seed, name, minimum=0)
    return value


def check_generator(value, name: str = "rng") -> np.random.Generator:
    """Return ``value`` if it is a `numpy.random.Generator`; seeds and ``None`` are refused.

    The book passes seeded generators explicitly so that every number is reproducible;
    accepting a bare seed here would hide where randomness enters.

    Examples
    --------
    >>> check_generator(np.random.default_rng(0)).__class__.__name__
    'Generator'
    >>> check_generator(0)
    Traceback (most recent call last):
    ...
    TypeError: rng must be a numpy.random.Generator (e.g. np.random.default_rng(0)), got int
    """
    if not isinstance(value, np.random.Generator):
        raise TypeError(f"{name} must be a numpy.random.Generator (e.g. np.random.default_rng(0)), "
                        f"got {type(value).__name__}")
    return value


def check_table_size(base: int, exponent: int, limit: int, what: str, *, factor: int = 1) -> int:
    """Return ``factor * base**exponent`` if it is at most ``limit``, else raise, without computing it.

    Enumerations grow as a power of the sequence length; the size is compared in log space
    first, so that an absurd request (``length=10**10``) is refused at once instead of
    building a number with ten billion digits.

    Examples
    --------
    >>> check_table_size(25, 3, 10**6, "the joint of 3 tokens")
    15625
    >>> check_table_size(25, 10**10, 10**8, "the joint of 10000000000 tokens")
    Traceback (most recent call last):
    ...
    ValueError: the joint of 10000000000 tokens has about 10^13979400087 entries, more than the limit 100000000
    """
    for argument, argument_name in ((base, "base"), (exponent, "exponent"), (limit, "limit"), (factor, "factor")):
        if isinstance(argument, bool) or not isinstance(argument, numbers.Integral) or argument < 0:
            raise TypeError(f"{argument_name} must be a non-negative integer (a size is counted, not measured), "
                            f"got {argument!r:.40}")
    if base <= 1:
        size = factor * base**exponent
    elif exponent * math.log10(base) + math.log10(max(factor, 1)) > math.log10(limit) + 1e-12:
        magnitude = exponent * math.log10(base) + math.log10(max(factor, 1))
        raise ValueError(f"{what} has about 10^{magnitude:.0f} entries, more than the limit {limit}")
    else:
        size = factor * base**exponent
    if size > limit:
        raise ValueError(f"{what} has {size} entries, more than the limit {limit}")
    return size


def check_real(value, name: str, *, low: float = -math.inf, high: float = math.inf) -> float:
    """Return ``value`` as a finite float in ``[low, high]``; NaN, infinity, complex and strings fail.

    Examples
    --------
    >>> check_real(2, "scale")
    2.0
    >>> check_real(float("inf"), "scale")
    Traceback (most recent call last):
    ...
    ValueError: scale must be a finite number, got inf
    """
    if isinstance(value, np.ndarray) and value.ndim == 0:
        value = value[()]
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a real number, got {type(value).__name__}")
    value = float(value)
    if not (math.isfinite(value) and low <= value <= high):
        if math.isinf(low) and math.isinf(high):
            raise ValueError(f"{name} must be a finite number, got {value}")
        raise ValueError(f"{name} must be a finite number in [{low}, {high}], got {value}")
    return value


def check_positive_float(value, name: str) -> float:
    """Return ``value`` as a finite float greater than zero (a tolerance, a step size, a scale).

    Examples
    --------
    >>> check_positive_float(1e-9, "tol")
    1e-09
    >>> check_positive_float(float("nan"), "tol")
    Traceback (most recent call last):
    ...
    ValueError: tol must be a finite number > 0, got nan
    """
    if isinstance(value, np.ndarray) and value.ndim == 0:
        value = value[()]
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a real number, got {type(value).__name__}")
    value = float(value)
    if not (math.isfinite(value) and value > 0):
        raise ValueError(f"{name} must be a finite number > 0, got {value}")
    return value


def check_instance(value, name: str, expected: type | tuple[type, ...]):
    """Return ``value`` if it is an instance of ``expected``; a config, model or corpus of the
    wrong kind is refused here rather than failing with an AttributeError deep inside.

    Examples
    --------
    >>> check_instance(3, "n", int)
    3
    >>> check_instance(None, "hmm", int)
    Traceback (most recent call last):
    ...
    TypeError: hmm must be int, got NoneType
    """
    if not isinstance(value, expected):
        kinds = expected if isinstance(expected, tuple) else (expected,)
        raise TypeError(f"{name} must be {' or '.join(kind.__name__ for kind in kinds)}, got {type(value).__name__}")
    return value


def check_choice(value, name: str, choices) -> str:
    """Return ``value`` if it is a str among ``choices`` (a collection of str: a tuple, a set, a dict's keys).

    Examples
    --------
    >>> check_choice("BIO", "scheme", ("IO", "BIO"))
    'BIO'
    >>> check_choice("IOB", "scheme", ("IO", "BIO"))
    Traceback (most recent call last):
    ...
    ValueError: scheme must be one of ['IO', 'BIO'], got 'IOB'
    >>> check_choice(2, "scheme", ("IO", "BIO"))
    Traceback (most recent call last):
    ...
    TypeError: scheme must be a str, got int
    """
    if not isinstance(value, str):
        raise TypeError(f"{name} must be a str, got {type(value).__name__}")
    if value not in choices:
        raise ValueError(f"{name} must be one of {list(choices)}, got {value[:80]!r}")
    return value


def check_bool(value, name: str) -> bool:
    """Return ``value`` if it is a bool (``numpy.bool_`` included); ``0``, ``"no"`` and ``None`` fail.

    Examples
    --------
    >>> check_bool(True, "control")
    True
    >>> check_bool("no", "control")
    Traceback (most recent call last):
    ...
    TypeError: control must be True or False, got str
    """
    if not isinstance(value, (bool, np.bool_)):
        raise TypeError(f"{name} must be True or False, got {type(value).__name__}")
    return bool(value)


def check_sequence(value, name: str, *, of: type | None = None) -> list:
    """Return ``value`` as a list if it is a non-string iterable (of ``of`` items when given).

    Examples
    --------
    >>> check_sequence(("a", "b"), "words", of=str)
    ['a', 'b']
    >>> check_sequence("ab", "words", of=str)
    Traceback (most recent call last):
    ...
    TypeError: words must be a sequence (a list or tuple), not a single str
    """
    if isinstance(value, (str, bytes)):
        raise TypeError(f"{name} must be a sequence (a list or tuple), not a single {type(value).__name__}")
    try:
        items = list(value)
    except TypeError:
        raise TypeError(f"{name} must be a sequence (a list or tuple), got {type(value).__name__}") from None
    if of is not None:
        wrong = [item for item in items if not isinstance(item, of)]
        if wrong:
            raise TypeError(f"{name} must hold {of.__name__} items, got {type(wrong[0]).__name__}")
    return items


def check_format(value, name: str) -> str:
    """Return ``value`` if it is a format specification that renders a float as a short text.

    A width or precision over ``FORMAT_LIMIT`` (100) is refused before anything is formatted,
    since ``format(0.5, "1000000000000")`` would try to build a terabyte-long string;
    integer-only and string-only specifications (``"d"``, ``"s"``) are refused because they
    cannot format a float.

    Parameters
    ----------
    value : str
        The format specification, as after the colon of an f-string field (``".3f"``, ``".1e"``).
    name : str
        The caller's parameter, named in the error messages.

    Raises
    ------
    TypeError
        If ``value`` is not a str.
    ValueError
        If ``value`` asks for a width or precision over 100, or cannot format a float.

    Examples
    --------
    >>> check_format(".3f", "fmt")
    '.3f'
    >>> check_format(".1000f", "sd_fmt")
    Traceback (most recent call last):
    ...
    ValueError: sd_fmt must have width and precision at most 100, got '.1000f'
    >>> check_format("d", "fmt")
    Traceback (most recent call last):
    ...
    ValueError: fmt must be a format specification for a float such as '.3f', got 'd'
    """
    if not isinstance(value, str):
        raise TypeError(f"{name} must be a format specification (str) such as '.3f', got {type(value).__name__}")
    # digits compared by length first: int() of a 5000-digit width raises its own error
    numbers_asked = [digits.lstrip("0") or "0" for digits in re.findall(r"\d+", value)]
    if any(len(digits) > len(str(FORMAT_LIMIT)) or int(digits) > FORMAT_LIMIT for digits in numbers_asked):
        raise ValueError(f"{name} must have width and precision at most {FORMAT_LIMIT}, got {value!r:.40}")
    try:
        format(0.5, value)
    except ValueError:
        raise ValueError(f"{name} must be a format specification for a float such as '.3f', got {value!r:.40}") from None
    return value


def check_finite_numbers(value, name: str):
    """Return ``value``, a (nested) dict, list or tuple of measured numbers, if none is NaN, infinite or complex.

    Dicts, lists and tuples are searched through; NumPy arrays are checked whole. Items that
    are not numbers (labels such as strings, or ``None`` for a measurement not taken) are left
    alone: this checks a record's numbers, not its shape.

    Raises
    ------
    TypeError
        If a number in ``value`` is complex.
    ValueError
        If a number in ``value`` is NaN or infinite, or an array in it is complex or not finite.

    Examples
    --------
    >>> check_finite_numbers({"layer 1": [0.5, None], "n": 12}, "typing")
    {'layer 1': [0.5, None], 'n': 12}
    >>> check_finite_numbers({"layer 1": [0.5, float("nan")]}, "typing")
    Traceback (most recent call last):
    ...
    ValueError: typing must hold finite numbers only, got nan
    """
    if isinstance(value, dict):
        for item in value.values():
            check_finite_numbers(item, name)
    elif isinstance(value, (list, tuple)):
        for item in value:
            check_finite_numbers(item, name)
    elif isinstance(value, np.ndarray):
        if value.dtype.kind == "c" or (value.dtype.kind == "f" and not np.all(np.isfinite(value))):
            raise ValueError(f"{name} must hold finite real numbers only")
    elif isinstance(value, numbers.Complex) and not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must hold real numbers, got {type(value).__name__}")
    elif isinstance(value, numbers.Real) and not math.isfinite(value):
        raise ValueError(f"{name} must hold finite numbers only, got {value}")
    return value
