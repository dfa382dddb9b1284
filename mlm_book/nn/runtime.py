"""Process-level settings that make small NumPy training steps fast.

A training step of the book's encoders allocates many temporaries of a few hundred
kilobytes. glibc's ``malloc`` serves blocks above its mmap threshold (128 KiB at start)
with fresh ``mmap`` calls and returns freed heap memory to the system eagerly, so every
step page-faults thousands of times. Raising the mmap and trim thresholds keeps that
memory in the heap for reuse: on the book's machine a step at the HMM size went from
about 14 ms to 6.5 ms. The setting only changes where the allocator finds memory, never a
result.

The BLAS library's threads are the other knob. At these sizes a matrix product takes tens
of microseconds, and OpenBLAS worker threads spinning for work on a machine whose cores
are busy turn a 6 ms step into 60 ms or more. [`blas_threads`][mlm_book.nn.runtime.blas_threads] sets the thread count of
the OpenBLAS that NumPy loaded, for the duration of a ``with`` block;
[`blas_thread_count`][mlm_book.nn.runtime.blas_thread_count] and
[`set_blas_threads`][mlm_book.nn.runtime.set_blas_threads] read and set it outright (a worker
process that runs one thread for good).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import contextlib
import functools

# `blas_thread_count` and `set_blas_threads` are public but not swept with bad values by the
# input tests (which walk `__all__`): setting a process's thread count is not a numeric routine.
__all__ = ["tune_allocator", "blas_threads", "blas_kernel"]

_M_TRIM_THRESHOLD = -1
_M_MMAP_THRESHOLD = -3
#: glibc refuses mmap thresholds above HEAP_MAX/2 = 32 MiB on 64-bit systems.
_MMAP_THRESHOLD_BYTES = 32 * 1024 * 1024
_TRIM_THRESHOLD_BYTES = 512 * 1024 * 1024


@functools.cache
def tune_allocator() -> bool:
    """Raise glibc's mmap and trim thresholds once per process; ``False`` where unavailable.

    Returns
    -------
    bool
        Whether both settings were applied (``False`` on a non-glibc system).

    Examples
    --------
    >>> isinstance(tune_allocator(), bool)
    True
    """
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        mallopt = libc.mallopt
    except (OSError, AttributeError):
        return False
    mallopt.argtypes = (ctypes.c_int, ctypes.c_int)
    mallopt.restype = ctypes.c_int
    ok_mmap = mallopt(_M_MMAP_THRESHOLD, _MMAP_THRESHOLD_BYTES) == 1
    ok_trim = mallopt(_M_TRIM_THRESHOLD, _TRIM_THRESHOLD_BYTES) == 1
    return ok_mmap and ok_trim


_SETTERS = ("scipy_openblas_set_num_threads64_", "scipy_openblas_set_num_threads", "openblas_set_num_threads64_",
            "openblas_set_num_threads")
_GETTERS = ("scipy_openblas_get_num_threads64_", "scipy_openblas_get_num_threads", "openblas_get_num_threads64_",
            "openblas_get_num_threads")


@functools.cache
def _openblas_libraries() -> tuple:
    """The OpenBLAS shared libraries loaded in this process (NumPy's among them), opened with ctypes."""
    import numpy  # noqa: F401  (make sure NumPy's BLAS is loaded)
    try:
        with open("/proc/self/maps") as maps:
            paths = sorted({line.split()[-1] for line in maps if "openblas" in line.lower() and ".so" in line})
    except OSError:
        return ()
    libraries = []
    for path in paths:
        try:
            libraries.append(ctypes.CDLL(path))
        except OSError:
            continue
    return tuple(libraries)


@functools.cache
def _openblas():
    """``(get, set)`` functions of the OpenBLAS loaded in this process, or ``None``."""
    for library in _openblas_libraries():
        for set_name, get_name in zip(_SETTERS, _GETTERS):
            setter, getter = getattr(library, set_name, None), getattr(library, get_name, None)
            if setter is not None and getter is not None:
                setter.argtypes, setter.restype = (ctypes.c_int,), None
                getter.argtypes, getter.restype = (), ctypes.c_int
                return getter, setter
    return None


_CORENAMES = ("scipy_openblas_get_corename64_", "scipy_openblas_get_corename", "openblas_get_corename64_",
              "openblas_get_corename")


@functools.cache
def blas_kernel() -> str:
    """The kernel family the loaded OpenBLAS runs (``"Haswell"``, ``"SkylakeX"``, ...), or ``"unknown"``.

    Float32 training rounds differently from one kernel family to another, and the book's
    trained verdicts sit close enough to their rules that one seed can cross: the store keys
    every entry on it (see [`mlm_book.cache.cache_key`][mlm_book.cache.cache_key]). OpenBLAS
    picks it from the CPU when NumPy loads, unless ``OPENBLAS_CORETYPE`` names one.

    Examples
    --------
    >>> isinstance(blas_kernel(), str) and len(blas_kernel()) > 0
    True
    """
    for library in _openblas_libraries():
        for name in _CORENAMES:
            function = getattr(library, name, None)
            if function is not None:
                function.argtypes, function.restype = (), ctypes.c_char_p
                found = function()
                return found.decode() if found else "unknown"
    return "unknown"


def blas_thread_count() -> int | None:
    """The thread count of the OpenBLAS that NumPy loaded, or ``None`` for another BLAS.

    Examples
    --------
    >>> count = blas_thread_count()
    >>> count is None or count >= 1
    True
    """
    functions = _openblas()
    return None if functions is None else functions[0]()


def set_blas_threads(count: int) -> bool:
    """Set the thread count of the OpenBLAS that NumPy loaded until it is set again.

    [`blas_threads`][mlm_book.nn.runtime.blas_threads] does this for a ``with`` block and
    restores the count after it; this is for a process that keeps one count, such as a
    worker of [`mlm_book.parallel.run_in_processes`][mlm_book.parallel.run_in_processes].

    Parameters
    ----------
    count : int
        Threads, at least 1.

    Returns
    -------
    bool
        Whether a count was set (``False`` for another BLAS, where this is a no-op).

    Raises
    ------
    ValueError
        If ``count`` is not an integer >= 1.

    Examples
    --------
    >>> before = blas_thread_count()
    >>> set_blas_threads(1) == (before is not None)
    True
    >>> _ = before is None or set_blas_threads(before)
    """
    _check_count(count)
    functions = _openblas()
    if functions is None:
        return False
    functions[1](count)
    return True


def _check_count(count) -> None:
    if isinstance(count, bool) or not isinstance(count, int) or count < 1:
        raise ValueError(f"count must be an integer >= 1, got {count!r}")


@contextlib.contextmanager
def blas_threads(count: int):
    """Run the ``with`` block with ``count`` OpenBLAS threads (no-op for another BLAS).

    Parameters
    ----------
    count : int
        Threads, at least 1.

    Examples
    --------
    >>> import numpy as np
    >>> with blas_threads(1):
    ...     float((np.ones((2, 2)) @ np.ones((2, 2)))[0, 0])
    2.0
    """
    _check_count(count)
    before = blas_thread_count()
    if before is None:
        yield
        return
    set_blas_threads(count)
    try:
        yield
    finally:
        set_blas_threads(before)
