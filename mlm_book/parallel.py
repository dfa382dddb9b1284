"""Independent computations in parallel processes, one BLAS thread each.

The book trains several encoders that differ only in a seed or a setting. Each trains on
one core (one BLAS thread: at the book's sizes a second thread slows a step down), so on a
machine with two cores two of them train at once. [`run_in_processes`][mlm_book.parallel.run_in_processes]
runs a picklable function over a list of arguments in a pool of fresh ("spawn")
processes, so that no BLAS or allocator state of the parent is inherited; results land in
the content-addressed cache (whose per-key lock makes concurrent writers safe), from which
the parent then reads them.

Examples
--------
>>> run_in_processes(abs, [-1, -2, 3], processes=1)
[1, 2, 3]
"""

from __future__ import annotations

import functools
import multiprocessing
import os
import sys
from collections.abc import Callable, Sequence
from concurrent.futures import Executor, ProcessPoolExecutor, as_completed

from mlm_book.validation import check_positive_int

__all__ = ["available_cores", "run_in_processes"]


def available_cores() -> int:
    """Cores this process may run on (its CPU affinity where the platform reports it).

    Examples
    --------
    >>> cores = available_cores()
    >>> isinstance(cores, int) and 1 <= cores <= (os.cpu_count() or 1)
    True
    """
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not Linux
        return max(1, os.cpu_count() or 1)


def _one_blas_thread() -> None:
    # Read by OpenBLAS and OpenMP when numpy is first imported in the worker, and for the
    # children the worker starts.
    for name in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ[name] = "1"
    # A spawned worker has usually imported numpy already, while unpickling this initializer
    # (importing mlm_book loads it), so OpenBLAS has started with one thread per core: two
    # workers then ran four threads on two cores, and BLAS-heavy work outside a training loop
    # (probes, evaluations) took about three times as long. Set the count on the loaded library.
    if "numpy" in sys.modules:
        from mlm_book.nn import runtime
        runtime.set_blas_threads(1)


def run_in_processes(function: Callable, arguments: Sequence, *, processes: int | None = None,
                     on_done: Callable[[int, object], None] | None = None, executor: Executor | None = None) -> list:
    """``[function(a) for a in arguments]``, computed in up to ``processes`` worker processes.

    Parameters
    ----------
    function : callable
        A module-level function (it is pickled by reference into the workers).
    arguments : sequence
        One picklable argument per call.
    processes : int, optional
        Pool size; default the available cores. With one process, or one argument, the
        calls run here, in order, without a pool.
    on_done : callable, optional
        Called here as ``on_done(index, result)`` as each call finishes, in the order they
        finish (for a progress report).
    executor : concurrent.futures.Executor, optional
        Run the calls on this executor instead (a ``dask.distributed`` client's, say), which
        the caller owns and shuts down; ``processes`` is then ignored. Each call then sets one
        BLAS thread in its worker first, as the local pool's initializer does.

    Returns
    -------
    list
        The results, in the order of ``arguments``.

    Raises
    ------
    TypeError
        If ``function`` or ``on_done`` is not callable or ``arguments`` is not a sequence.
    ValueError
        If ``processes`` is not a positive integer.
    """
    if not callable(function):
        raise TypeError(f"function must be callable, got {type(function).__name__}")
    if isinstance(arguments, (str, bytes)) or not isinstance(arguments, Sequence):
        raise TypeError(f"arguments must be a sequence, got {type(arguments).__name__}")
    if on_done is not None and not callable(on_done):
        raise TypeError(f"on_done must be callable or None, got {type(on_done).__name__}")
    processes = available_cores() if processes is None else check_positive_int(processes, "processes")
    processes = min(processes, len(arguments))
    results: list = [None] * len(arguments)
    if executor is not None:
        if not isinstance(executor, Executor):
            raise TypeError(f"executor must be a concurrent.futures.Executor or None, got {type(executor).__name__}")
        # a foreign executor's workers get no initializer: each call sets its BLAS threads itself
        return _run_on(executor, functools.partial(_with_one_blas_thread, function), arguments, on_done, results)
    if processes <= 1:
        for index, argument in enumerate(arguments):
            results[index] = function(argument)
            if on_done is not None:
                on_done(index, results[index])
        return results
    context = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(max_workers=processes, mp_context=context, initializer=_one_blas_thread) as pool:
        return _run_on(pool, function, arguments, on_done, results)


def _with_one_blas_thread(function: Callable, argument):
    _one_blas_thread()
    return function(argument)


def _run_on(executor: Executor, function: Callable, arguments: Sequence, on_done, results: list) -> list:
    # submitted in order, so the pool starts them in the order given (the longest first)
    futures = {executor.submit(function, argument): index for index, argument in enumerate(arguments)}
    for future in as_completed(futures):
        index = futures[future]
        results[index] = future.result()
        if on_done is not None:
            on_done(index, results[index])
    return results
