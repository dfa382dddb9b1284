"""Independent trainings run in parallel processes and land in the cache once."""

from __future__ import annotations

import os
from dataclasses import replace

import pytest

from mlm_book import cache
from mlm_book.experiments import hmm_encoder
from mlm_book.parallel import available_cores, run_in_processes


def _square(x):
    return x * x


def _pid_and_threads(_):
    return os.getpid(), os.environ.get("OPENBLAS_NUM_THREADS")


def test_results_come_back_in_order_from_worker_processes():
    assert run_in_processes(_square, list(range(7)), processes=2) == [x * x for x in range(7)]
    assert run_in_processes(_pid_and_threads, [None], processes=2)[0][0] == os.getpid()  # one call: no pool


def test_workers_are_other_processes_with_one_blas_thread():
    found = run_in_processes(_pid_and_threads, [None] * 4, processes=2)
    assert all(pid != os.getpid() and threads == "1" for pid, threads in found)


@pytest.mark.parametrize("arguments, processes, error", [([1], 0, ValueError), ("ab", 2, TypeError),
                                                          ([1], True, TypeError)])
def test_bad_arguments_are_refused(arguments, processes, error):
    with pytest.raises(error):
        run_in_processes(_square, arguments, processes=processes)


@pytest.mark.book
def test_missing_encoders_train_in_parallel_once_and_then_only_load(tmp_path, monkeypatch):
    monkeypatch.setenv(cache.ENVIRONMENT_VARIABLE, str(tmp_path))  # workers inherit the variable
    tiny = replace(hmm_encoder.SETUP, training=replace(hmm_encoder.SETUP.training, steps=6, warmup=2,
                                                       batch_size=8))
    setups = [hmm_encoder.seed_setup(seed, tiny) for seed in (11, 12)]
    assert hmm_encoder.ensure_trained(setups + setups[:1]) == 2  # duplicates count once
    assert len(list(tmp_path.glob("hmm-encoder-*.npz"))) == 2
    assert hmm_encoder.ensure_trained(setups) == 0
    with pytest.raises(TypeError, match="setups"):
        hmm_encoder.ensure_trained(["not a setup"])


def test_the_book_reads_both_recipes_at_five_seeds():
    setups = hmm_encoder.book_setups()
    n = len(hmm_encoder.SEEDS)
    assert n >= 5 and len(setups) == 2 * n
    assert [s.training.seed for s in setups] == 2 * list(hmm_encoder.SEEDS)
    assert setups[0] == hmm_encoder.SETUP and setups[n] == hmm_encoder.CONTRAST and available_cores() >= 1
    # the contrast's seeds differ from the contrast in the seed only
    assert all(s == hmm_encoder.seed_setup(s.training.seed, hmm_encoder.CONTRAST) for s in setups[n:])


def _blas_threads_here(_):
    from mlm_book.nn import runtime
    return runtime.blas_thread_count()


def test_workers_run_one_blas_thread_each():
    """Two workers on two cores must not run two OpenBLAS threads each (numpy is loaded before the initializer)."""
    from mlm_book.parallel import run_in_processes
    counts = run_in_processes(_blas_threads_here, [0, 1], processes=2)
    assert all(count in (None, 1) for count in counts), counts


def test_on_done_reports_every_call_once_and_results_keep_their_order():
    seen = []
    results = run_in_processes(abs, [-3, 1, -2, 4], processes=2, on_done=lambda index, result: seen.append((index, result)))
    assert results == [3, 1, 2, 4]
    assert sorted(seen) == [(0, 3), (1, 1), (2, 2), (3, 4)]
    seen.clear()
    assert run_in_processes(abs, [-5, 6], processes=1, on_done=lambda i, r: seen.append((i, r))) == [5, 6]
    assert seen == [(0, 5), (1, 6)]  # without a pool: in order
    with pytest.raises(TypeError, match="on_done"):
        run_in_processes(abs, [1], on_done="print")


def _blas_threads_seen(_):
    import os
    return os.environ.get("OPENBLAS_NUM_THREADS")


def test_calls_on_a_foreign_executor_run_with_one_blas_thread_as_in_the_local_pool(monkeypatch):
    from concurrent.futures import ThreadPoolExecutor

    from mlm_book import parallel
    monkeypatch.setenv("OPENBLAS_NUM_THREADS", "8")
    monkeypatch.setenv("OMP_NUM_THREADS", "8")
    monkeypatch.setenv("MKL_NUM_THREADS", "8")
    with ThreadPoolExecutor(max_workers=2) as executor:
        assert parallel.run_in_processes(_blas_threads_seen, [0, 1], executor=executor) == ["1", "1"]
