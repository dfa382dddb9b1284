"""The book tier of the bad-input sweep: the chapters' store readers answer bad input clearly too.

``tests/test_bad_inputs.py`` varies the arguments of every public callable from a valid call
a doctest makes; the tables, figures, studies and readers of ``mlm_book.experiments`` and
``mlm_book.readings``, and the artefact modules' readers of trained runs, have none, since their
default reads the book's trained artefacts and the package's doctests read none. Here each of them is called from the valid call registered in
``tests/store_readers.py`` (mostly the default call, ``{}``; else the smallest arguments its chapter
passes), and then, one parameter at a time, with the sweep's deterministic bad values
(``bad_values``; no generated ones, to keep the tier inside ``make test-book``'s budget). Every
outcome is judged as the sweep judges it (``outcome``): a ``ValueError``/``TypeError`` naming the
parameter, or a success with finite results, within the time budget, with one addition:

* ``MLM_BOOK_BUILD_NOTHING`` is set for the whole tier, so a varied value that is valid but names a
  run the book did not build (another seed, another setup) raises ``cache.NotInStoreError`` instead
  of training; that counts as valid, since the value passed every check and reached the store.

The registered valid call itself must succeed with a finite result (a ``NotInStoreError`` there
fails: run ``mlm-book build`` first). Nothing is skipped: a public callable of the package with
neither a doctest example nor a registered one fails ``test_registry_covers_the_store_readers``
(``slow``, in ``make test``: it records the doctests' calls), and a registered callable that is
no longer public, or is left out of the sweep, fails ``test_registry_names_public_callables``.
A fault deferred with a reason is listed in the sweep's ``OPEN`` (empty now), with the same xfail rule.

Counts as measured in issue 36 (the 165 callables the ordinary sweep skipped in these packages):
12 were given store-free doctest examples (the records a reader can rebuild from a store-free
result, ``check_tagger``, and ``decoded``/``entity_scores``/``recall_among``, which read only the
test corpus), 2 are in ``NOT_DRIVEN`` (``ch11_sparse.Scores`` and ``SparseStudy`` hold NaN by
design), none could be made private (a chapter or test calls every one), and 151 are registered
here: 112 by their default call, 30 with the chapter's arguments, 9 with arguments read from the
store. The artefact modules' 25 readers of trained runs (``filing_controls``, ``seed_results``,
``pretrain``, ``lab.viz_payload`` ...) are registered too, by their default call or the kind's first
book setup, 176 in all. On the full store the tier takes 80-100 s on one core, most of it first reads that the
chapters pay too (``trained_rules_table`` measures the checkpoints, about 20 s; ``figure_f1`` and
``f1_table`` decode every tagger's test predictions, about 35 s); the bad values themselves take
seconds, since the valid call is memoised.
"""

from __future__ import annotations

import functools
import inspect
import time
import warnings

import matplotlib.pyplot as plt
import pytest

import store_readers
import test_bad_inputs as sweep
from mlm_book import cache

#: Seconds a registered valid call may take (it reads the store, and the first read of an artefact
#: loads and measures it; later calls are memoised).
FIRST_CALL = 120.0
#: The packages whose store readers this tier drives.


def _reaching_the_store_is_valid(obj):
    """``obj`` with ``NotInStoreError`` turned into a result: the value passed every check."""
    @functools.wraps(obj)
    def call(*args, **kwargs):
        try:
            return obj(*args, **kwargs)
        except cache.NotInStoreError:
            return None
    return call


def test_registry_names_public_callables():
    """Every registered key is a public callable the ordinary sweep leaves to this tier."""
    stale = sorted(set(store_readers.REGISTERED) - set(sweep.CALLABLES))
    assert not stale, f"registered but no longer public (remove them from tests/store_readers.py): {stale}"
    undriven = sorted(set(store_readers.REGISTERED) & set(sweep.NOT_DRIVEN))
    assert not undriven, f"registered and also listed in NOT_DRIVEN: {undriven}"
    assert not set(store_readers.REGISTERED) & set(sweep.drivable()), "the ordinary sweep drives a registered key"


@pytest.mark.slow  # it records every doctest's calls, as the ordinary sweep does
def test_registry_covers_the_store_readers():
    """Every public callable of the package is driven: by a doctest example or a registered call (no skips)."""
    recorded = sweep.examples()
    public = [key for key in sweep.CALLABLES if key not in sweep.NOT_DRIVEN]
    missing = sorted(key for key in public if key not in recorded and key not in store_readers.REGISTERED)
    assert not missing, ("no doctest example and no registered call in tests/store_readers.py "
                         f"(give it a store-free doctest, or register its chapter's call): {missing}")
    doubled = sorted(key for key in store_readers.REGISTERED if key in recorded)
    assert not doubled, f"a doctest now gives these an example: drop them from tests/store_readers.py: {doubled}"


def _valid_call(key, obj, arguments):
    """The registered call must succeed with a finite result (any exception fails, a ``ValueError`` too)."""
    try:
        with sweep.budget(FIRST_CALL), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            result = obj(**arguments)
    except cache.NotInStoreError as error:
        pytest.fail(f"{key}: the registered valid call reads a run the store lacks (run `mlm-book build`): {error}")
    except sweep.Hang:
        pytest.fail(f"{key}: the registered valid call took over {FIRST_CALL} s")
    finally:
        plt.close("all")
    assert not sweep.non_finite(result), f"{key}: the registered valid call gives a NaN or infinity"


@pytest.fixture
def _build_nothing(monkeypatch):
    monkeypatch.setenv(cache.BUILD_NOTHING_VARIABLE, "1")


@pytest.mark.book
@pytest.mark.parametrize("key", sorted(store_readers.REGISTERED))
def test_store_readers_answer_bad_values(key, _build_nothing):
    obj = sweep.CALLABLES[key]
    start = time.perf_counter()
    try:
        arguments = store_readers.arguments(key)
    except cache.NotInStoreError as error:
        pytest.fail(f"{key}: its registered arguments read a run the store lacks (run `mlm-book build`): {error}")
    _valid_call(key, obj, arguments)
    seconds = sweep.BUDGETS.get(key, sweep.BUDGET)
    tolerant = _reaching_the_store_is_valid(obj)
    faults = []
    for parameter in sweep._params(key, arguments):
        default = inspect.signature(obj).parameters[parameter].default
        valid = arguments.get(parameter, default)
        for value in sweep.bad_values(valid):
            if sweep._is_the_default(value, default):
                continue
            fault = sweep.outcome(tolerant, dict(arguments, **{parameter: value}), parameter, seconds)
            if fault:
                faults.append(f"{parameter}={sweep.describe(value)}: {fault}")
    print(f"{key}: {time.perf_counter() - start:.1f} s")
    if key in sweep.OPEN:
        assert faults, f"{key} no longer has the fault listed in OPEN ({sweep.OPEN[key]}): remove it from OPEN"
        pytest.xfail(sweep.OPEN[key])
    assert not faults, f"{key}:\n  " + "\n  ".join(faults)
