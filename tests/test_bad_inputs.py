"""Every public callable answers bad input with a clear ``ValueError``/``TypeError`` naming the argument.

The test walks each module's ``__all__`` and takes every function and class defined there.
Valid example arguments come from the package's own doctests: they are run once with each
callable wrapped by a recorder that keeps a successful call's bound arguments
(so the table of valid arguments is never written by hand and follows the docstrings).
Then, one parameter at a time and with the others at their valid values, it feeds bad
values: ``None``, wrong types, strings, ragged nested lists, arrays of the wrong ndim or
shape, NaN, ±inf, complex numbers, negative and huge integers, and ids out of range; a
hypothesis strategy adds generated values of the same kinds. Each call must either

* raise ``ValueError`` or ``TypeError`` whose message contains the parameter's name, or
* succeed with finite numbers everywhere in its result (the value was in fact valid),

within a time budget (``signal.setitimer``; a call over budget counts as a hang).

Examples are chosen deterministically: only the calls a doctest makes itself are recorded (not
the package's calls to itself, whose arguments depend on what the store holds), doctests marked
``+BOOK`` (they read trained models) are not run, and of a callable's first calls one from its own
module's doctests wins, then the one whose arguments print shortest; a call with a non-finite
result is never an example. So the sweep is the same with an empty store and a full one.

Counts as measured in issue 36 (second pass, 2026-12-04): 1037 public callables; 24 not driven
(``NOT_DRIVEN``, with reasons); the doctests give valid examples for 837 of the other 1013 (724 at
the first pass, 367 when issue 10 closed), each of which receives its deterministic bad values plus
8 generated ones (a few minutes with the recording on a busy machine, so both sweeps are marked slow
and run in ``make test``). The other 176 are the store readers (the chapters' tables, figures and
studies, and the artefact modules' readers of trained runs, whose default is the book's trained
run): ``tests/store_readers.py`` registers a valid call for each and ``tests/test_bad_inputs_book.py``
drives them in ``make test-book``. None is skipped: a drivable callable with neither a doctest
example nor a registered call fails here, and ``test_registry_covers_the_store_readers`` fails on
it in ``make test``. Argument checks of the encoder readers are also tested by hand in
``tests/test_inputs_chapters_1_5.py`` and ``tests/test_inputs_encoders_lab.py``. Every fault the
examples found is fixed: the 24 in keyed modules (whose fix changes the store's keys) waited in ``OPEN``
for the next retraining of the book and were then fixed by argument checks alone, so ``OPEN`` is empty.
``test_report`` keeps these counts from shrinking unnoticed.

Callables that cannot be driven this way are listed in ``NOT_DRIVEN`` with the reason. The chapters'
store readers (tables, figures, studies and readers whose default reads the book's trained run) are
left to the book tier, ``tests/test_bad_inputs_book.py``, which varies the valid calls registered in
``tests/store_readers.py`` the same way (``make test-book``); ``drivable`` leaves them out here.

A census of the same deterministic bad calls, counted rather than asserted (issue 36's
measurement), is ``tests/sweep_census.py``: it imports this module's machinery, makes each call in a
process forked from one that has recorded the examples (address space capped, killed after a time
limit), and prints how many got a clear error, an unclear one, another exception, a silent
non-finite result, a crash, a hang or a success, listing every fault and marking ``OPEN`` ones. Run
``MLM_BOOK_BUILD_NOTHING=1 python tests/sweep_census.py [--jobs N] [--timeout 10] [--memory-gib 4]
[--only SUBSTRING] [--json PATH]`` (about 35,000 calls, six to ten minutes with one job on 2026-12-04).
"""

from __future__ import annotations

import contextlib
import copy
import dataclasses
import doctest
import importlib
import inspect
import math
import pathlib
import pkgutil
import resource
import signal
import sys
import tempfile
import warnings

import numpy as np
import pytest

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import HealthCheck, given, settings, strategies as st  # noqa: E402

import mlm_book  # noqa: E402
import store_readers  # noqa: E402

# hypothesis chains a new settings object onto the previous one at every call of a @given test, and
# pytest's parametrisation calls this module's one @given test once per callable, all in one worker
# (`--dist loadfile`): with about a thousand callables the chain's lookups outgrow Python's default
# recursion limit of 1000 frames (a RecursionError inside hypothesis, not in the package).
sys.setrecursionlimit(max(sys.getrecursionlimit(), 20_000))

#: Seconds one call may take before it counts as a hang (the slowest doctest call is ~0.1 s).
BUDGET = 3.0
#: Calls of one callable whose arguments are kept as candidate examples, from its own module's
#: doctests and from the others'.
CANDIDATE_CALLS = 4
#: Callables whose valid calls may take longer than ``BUDGET``, with their own budget (seconds):
#: a varied but valid argument can ask for real work (twelve new corpora take about 6 s).
BUDGETS = {"mlm_book.experiments.ch06_finance.orientation_over_corpora": 20.0,
           # a generated `only` such as "S" is valid and evaluates every claim: seconds, more on a busy machine
           "mlm_book.ledger.verify": 60.0,
           # a valid seed generates a fresh corpus of filings and splits its sentences: 3 s on a busy machine
           "mlm_book.artefacts.pair_encoder.labelled_sentences": 20.0}
#: Modules whose doctests are not run to record examples (they touch argv). The cache's doctests
#: are recorded: each works in a temporary directory and restores the environment it sets.
NO_RECORDING = {"mlm_book.cli"}
#: Public callables not driven here, with the reason.
NOT_DRIVEN = {
    "mlm_book.cli.main": "the command line: it parses argv (sys.exit on bad options), it takes no Python values",
    "mlm_book.cache.cached": "runs an arbitrary build callable; its inputs are the caller's",
    "mlm_book.nn.gradcheck.central_differences": "differentiates an arbitrary callable that reads the array it is "
                                                 "given (a doctest's function loses its globals once the doctest "
                                                 "ends); tests/test_nn.py checks its own arguments",
    "mlm_book.crf_fit.minimize_lbfgs": "minimises an arbitrary objective callable (a doctest's function loses its "
                                       "globals once the doctest ends); tests/test_crf_fit.py checks its own arguments",
    "mlm_book.parallel.run_in_processes": "forks worker processes for the caller's callables (not a numeric "
                                          "routine; a fork per bad value would take minutes)",
}
NOT_DRIVEN["mlm_book.experiments.ch11_sparse.Scores"] = (
    "a record whose per-filing arrays hold NaN by design (a measure undefined on a filing: the plural present, "
    "no aspect word), so no valid example has a finite result and a NaN put in is valid; its __post_init__ "
    "refuses non-arrays, infinities and unequal lengths by name")
NOT_DRIVEN["mlm_book.experiments.ch11_sparse.SparseStudy"] = (
    "the chapter's record of Scores, whose arrays hold NaN by design (see Scores): the book's study is not finite; "
    "its __post_init__ checks its fields' types, counts and finiteness by name")
NOT_DRIVEN["mlm_book.cache.NotInStoreError"] = ("an exception class: it takes RuntimeError's message "
                                                "(its signature is not introspectable), nothing to check")
#: The shared checks name the argument passed to them as ``name`` (the caller's), not their own
#: parameter; they are exercised by every other callable here and by their doctests.
NOT_DRIVEN.update({f"mlm_book.validation.{name}": "a shared check: its message names its `name` argument, "
                   "the caller's parameter" for name in __import__("mlm_book.validation").validation.__all__})


def _modules():
    return [importlib.import_module(info.name)
            for info in pkgutil.walk_packages(mlm_book.__path__, "mlm_book.")]


def public_callables() -> dict[str, object]:
    """Functions and classes named in a module's ``__all__`` and defined in that module."""
    found = {}
    for module in _modules():
        for name in getattr(module, "__all__", ()):
            obj = getattr(module, name)
            if (inspect.isfunction(obj) or inspect.isclass(obj)) and obj.__module__ == module.__name__:
                found[f"{module.__name__}.{name}"] = obj
    return found


def _signature(obj):
    try:
        return inspect.signature(obj)
    except (TypeError, ValueError):
        return None


def record_examples(callables: dict[str, object]) -> dict[str, dict]:
    """Run the doctests with every callable wrapped; return ``key -> bound arguments`` of a
    successful call with a finite result (deep-copied before the call, so later mutation does
    not leak). Of a callable's first calls, one made by its own module's doctests wins over
    others, then the one whose arguments print shortest (the first on a tie): a deterministic
    stand-in for the cheapest, so every run sweeps the same example."""
    records: dict[str, tuple[tuple[int, int], dict]] = {}
    restore = []

    calls: dict[tuple[str, bool], int] = {}
    running = [""]  # the doctest being run: calls from the callable's own module's doctests come first

    def note(key, signature, args, kwargs, call, produced=lambda result: result):
        # Only a callable's first few calls are candidates: a training loop calls the layers
        # thousands of times, and deep-copying each call's arguments would dominate the run.
        # a module's own doctests are its cheap examples; another module's call may be a
        # book-sized one (training an encoder when one argument is varied)
        if not sys._getframe(2).f_code.co_filename.startswith("<doctest "):
            # the package calling itself: what it passes depends on what the store holds
            return call()
        own = running[0].startswith(key.rsplit(".", 1)[0] + ".")
        calls[key, own] = calls.get((key, own), 0) + 1
        if calls[key, own] > CANDIDATE_CALLS:
            return call()
        try:
            snapshot = copy.deepcopy(dict(signature.bind(*args, **kwargs).arguments))
            size = (0 if own else 1, len(repr(snapshot)))
        except Exception:
            snapshot = None
        result = call()
        # a call that returns inf on purpose (a documented infinite cross-entropy) is no base to vary
        if snapshot is not None and not non_finite(produced(result)) and (key not in records
                                                                          or records[key][0] > size):
            records[key] = (size, snapshot)
        return result

    # Find the doctests before wrapping: the finder skips a function whose globals are not its
    # module's, so a wrapped function's own docstring would never run.
    finder, runner = doctest.DocTestFinder(), doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
    modules = _modules()
    # a doctest that reads a trained model (``+BOOK``) is left out, so the examples are the same
    # whatever the store holds and in every tier
    book = doctest.OPTIONFLAGS_BY_NAME["BOOK"]
    tests = [test for module in modules if module.__name__ not in NO_RECORDING
             for test in finder.find(module)
             if not any(example.options.get(book) for example in test.examples)]
    wrappers = {}
    for key, obj in callables.items():
        signature = _signature(obj)
        if signature is None:
            continue
        if inspect.isclass(obj):
            original = obj.__dict__.get("__init__")
            init = obj.__init__

            def recording_init(self, *args, __key=key, __sig=signature, __init=init, **kwargs):
                note(__key, __sig, args, kwargs, lambda: __init(self, *args, **kwargs), lambda _: self)
            try:
                obj.__init__ = recording_init
            except (TypeError, AttributeError):
                continue
            restore.append((obj, "__init__", original))
        else:
            def wrapper(*args, __key=key, __sig=signature, __fn=obj, **kwargs):
                return note(__key, __sig, args, kwargs, lambda: __fn(*args, **kwargs))
            wrappers[obj] = wrapper
    for module in modules:
        for attribute, value in list(vars(module).items()):
            if inspect.isfunction(value) and value in wrappers:
                restore.append((module, attribute, value))
                setattr(module, attribute, wrappers[value])
    for test in tests:  # each test's globals are a copy of its module's, taken before wrapping
        test.globs.update({name: wrappers[value] for name, value in test.globs.items()
                           if inspect.isfunction(value) and value in wrappers})
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            for test in tests:
                running[0] = test.name
                runner.run(test, out=lambda text: None)
    finally:
        for owner, attribute, value in reversed(restore):
            if value is None:
                delattr(owner, attribute)
            else:
                setattr(owner, attribute, value)
        import matplotlib.pyplot as plt
        plt.close("all")
    return {key: arguments for key, (_, arguments) in records.items()}


CALLABLES = public_callables()
_EXAMPLES: dict[str, dict] | None = None


def examples() -> dict[str, dict]:
    global _EXAMPLES
    if _EXAMPLES is None:
        _EXAMPLES = record_examples(CALLABLES)
    return _EXAMPLES


# ----------------------------------------------------------------------------- bad values
class _Opaque:
    """An object of no expected type (a config, model or corpus of the wrong kind)."""


def bad_values(valid) -> list:
    """Deterministic bad values for a parameter whose valid example is ``valid``."""
    values = [None, "text", _Opaque(), [[1, 2], [3]], math.nan, math.inf, -math.inf, 1j, -1, 10**12, -(10**12)]
    array = valid if isinstance(valid, np.ndarray) else None
    if array is None and isinstance(valid, (list, tuple)) and valid and not isinstance(valid[0], str):
        with contextlib.suppress(Exception):
            candidate = np.asarray(valid)
            if candidate.dtype.kind in "iuf":
                array = candidate
    if array is not None and array.dtype.kind in "iuf" and array.size:
        values += [array[None], np.zeros((0,) + array.shape[1:], dtype=array.dtype), array.astype(complex)]
        if array.ndim >= 1:
            values += [array[..., :1] if array.shape[-1] > 1 else np.concatenate([array, array], -1)]
        if array.ndim >= 2:
            values += [array.reshape(-1)]
        if array.dtype.kind == "f":
            poisoned = array.copy()
            poisoned.flat[0] = np.nan
            values += [poisoned, np.full(array.shape, np.inf)]
        else:
            for out_of_range in (-1, int(array.max()) + 10**6):
                shifted = array.astype(np.int64)
                shifted.flat[0] = out_of_range
                values.append(shifted)
    elif isinstance(valid, (int, np.integer)) and not isinstance(valid, bool):
        values += [0, int(valid) + 10**9, 2.5]
    elif isinstance(valid, (float, np.floating)):
        values += [-float(valid) - 1.0, 1e308]
    return values


ROUGH = st.one_of(
    st.none(), st.booleans(), st.text(max_size=4),
    st.integers(-(10**15), 10**15),
    st.floats(allow_nan=True, allow_infinity=True),
    st.complex_numbers(allow_nan=True, allow_infinity=True),
    st.lists(st.integers(-5, 50), max_size=4),
    st.lists(st.lists(st.floats(allow_nan=True), max_size=3), min_size=2, max_size=3),  # often ragged
    st.tuples(st.integers(-3, 3), st.integers(-3, 3)).map(lambda shape: np.full(
        tuple(abs(side) for side in shape), float(shape[0]))),
)


# ----------------------------------------------------------------------------- one call
class Hang(BaseException):
    """A call past its time limit; a BaseException, so code that catches Exception cannot swallow it."""


@contextlib.contextmanager
def budget(seconds: float):
    def expire(signum, frame):
        raise Hang(f"no answer within {seconds} s")
    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def non_finite(value, depth: int = 0) -> bool:
    """Whether ``value`` holds a NaN or infinity anywhere (numbers, arrays, containers, records)."""
    if depth > 4 or value is None or isinstance(value, (str, bytes, bool)):
        return False
    if isinstance(value, (float, complex, np.floating, np.complexfloating)):
        return not np.isfinite(value)
    if isinstance(value, np.ndarray):
        return value.dtype.kind in "fc" and not np.all(np.isfinite(value))
    if isinstance(value, dict):
        return any(non_finite(item, depth + 1) for item in value.values())
    if isinstance(value, (list, tuple)):
        return any(non_finite(item, depth + 1) for item in value[:1000])
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return any(non_finite(getattr(value, f.name), depth + 1) for f in dataclasses.fields(value))
    return False


#: Extra address space a call may take: a huge size must be refused, not allocated (or swapped).
MEMORY = 4 * 2**30


@contextlib.contextmanager
def memory_cap():
    """Cap the address space (RLIMIT_AS) for the call, so an absurd size gives MemoryError."""
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    with open("/proc/self/statm") as statm:
        current = int(statm.read().split()[0]) * resource.getpagesize()
    cap = current + MEMORY if hard == resource.RLIM_INFINITY else min(hard, current + MEMORY)
    resource.setrlimit(resource.RLIMIT_AS, (cap, hard))
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_AS, (soft, hard))


def outcome(obj, arguments: dict, parameter: str, seconds: float = BUDGET) -> str | None:
    """``None`` if the call behaves, else a one-line description of the fault."""
    signature = _signature(obj)
    bound = signature.bind_partial()
    bound.arguments.update(copy.deepcopy(arguments))
    try:
        with budget(seconds), memory_cap(), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            result = obj(*bound.args, **bound.kwargs)
    except (ValueError, TypeError) as error:
        if parameter not in str(error):
            return f"{type(error).__name__} not naming {parameter!r}: {str(error)[:160]}"
        return None
    except Hang:
        return "hang"
    except Exception as error:  # noqa: BLE001 - exactly what the test looks for
        return f"{type(error).__name__}: {str(error)[:160]}"
    finally:
        import matplotlib.pyplot as plt
        plt.close("all")
    if non_finite(result):
        return "silent NaN/inf in the result"
    return None


def _is_the_default(value, default) -> bool:
    """Passing ``None`` where ``None`` is the default is the documented default call, not bad input
    (for some callables, such as ``verify`` or ``ensure_trained``, a book-sized one)."""
    return value is None and default is None


def describe(value) -> str:
    if isinstance(value, np.ndarray):
        return f"ndarray{value.shape}/{value.dtype}"
    text = repr(value)
    return text if len(text) < 40 else text[:37] + "..."


#: Faults still open, key -> the reason they are deferred; each is an xfail until fixed. None: the
#: 24 faults of keyed modules deferred by issue 36 (a fix changes the store's keys) were fixed when
#: the book was next retrained, by argument checks that leave every valid call's results unchanged.
#: A new fault goes here only with a reason to defer it.
OPEN: dict[str, str] = {}


def drivable() -> list[str]:
    """Callables this sweep drives: all but ``NOT_DRIVEN`` and the store readers that the book tier
    (``tests/test_bad_inputs_book.py``) drives from the calls registered in ``tests/store_readers.py``."""
    return sorted(key for key in CALLABLES if key not in NOT_DRIVEN and key not in store_readers.REGISTERED)


def _example(key):
    found = examples().get(key)
    if found is None:
        pytest.fail(f"{key}: no doctest calls it and tests/store_readers.py registers no call, so there is no "
                    "valid example to vary: give it a store-free doctest example")
    if key in WRITERS and "directory" in found:
        # the recorded directory is the doctest's (deleted) temporary one, which other sweeps
        # (cache.store varying its metadata) may fill with entries of their own
        found = dict(found, directory=tempfile.mkdtemp(prefix="mlm-book-sweep-"))
    if key in WRITERS and "entry" in found:
        # the same for an entry (cache.store and cache.load write into, or lock in, its directory)
        found = dict(found, entry=dataclasses.replace(found["entry"], directory=pathlib.Path(
            tempfile.mkdtemp(prefix="mlm-book-sweep-"))))
    return found


def _params(key, arguments):
    signature = _signature(CALLABLES[key])
    return [name for name, parameter in signature.parameters.items()
            if parameter.kind not in (parameter.VAR_POSITIONAL, parameter.VAR_KEYWORD) and name != "self"]


#: Callables that write files when a varied argument happens to be valid (a toy training run
#: stored under ``directory``, or in the default cache): swept from a scratch directory with
#: the cache pointed there, so the sweep leaves nothing in the book's cache or the checkout.
WRITERS = {"mlm_book.nn.train.cached_training", "mlm_book.nn.train.is_cached_training",
           "mlm_book.cache.store", "mlm_book.cache.load"}


@pytest.fixture(autouse=True)
def _scratch_for_writers(request, tmp_path, monkeypatch):
    key = request.node.callspec.params.get("key") if hasattr(request.node, "callspec") else None
    if key in WRITERS:
        examples()  # recorded against the real cache first: the doctests load trained encoders
        monkeypatch.chdir(tmp_path)
        monkeypatch.setenv("MLM_BOOK_CACHE", str(tmp_path / "cache"))


def _maybe_xfail(key):
    if key in OPEN:
        pytest.xfail(OPEN[key])


# The sweeps are slow-marked: about 5,000 + 3,000 calls take a minute or more, over `make check`'s
# budget; `make test` runs them.
@pytest.mark.slow
@pytest.mark.parametrize("key", drivable())
def test_bad_values_get_clear_errors(key):
    """An open fault is an xfail only while it is still there: a fixed one must leave OPEN."""
    arguments = _example(key)
    faults = []
    for parameter in _params(key, arguments):
        default = inspect.signature(CALLABLES[key]).parameters[parameter].default
        valid = arguments.get(parameter, default)
        for value in bad_values(valid):
            if _is_the_default(value, default):
                continue
            trial = dict(arguments, **{parameter: value})
            fault = outcome(CALLABLES[key], trial, parameter, BUDGETS.get(key, BUDGET))
            if fault:
                faults.append(f"{parameter}={describe(value)}: {fault}")
    if key in OPEN:
        assert faults, f"{key} no longer has the fault listed in OPEN ({OPEN[key]}): remove it from OPEN"
        pytest.xfail(OPEN[key])
    assert not faults, f"{key}:\n  " + "\n  ".join(faults)


@pytest.mark.slow
@pytest.mark.parametrize("key", drivable())
@settings(max_examples=8, deadline=None, derandomize=True, database=None,
          suppress_health_check=list(HealthCheck))
@given(data=st.data())
def test_generated_values_get_clear_errors(key, data):
    arguments = _example(key)
    _maybe_xfail(key)
    parameters = _params(key, arguments)
    if not parameters:
        return
    parameter = data.draw(st.sampled_from(parameters), label="parameter")
    value = data.draw(ROUGH, label="value")
    if _is_the_default(value, inspect.signature(CALLABLES[key]).parameters[parameter].default):
        return
    fault = outcome(CALLABLES[key], dict(arguments, **{parameter: value}), parameter, BUDGETS.get(key, BUDGET))
    assert fault is None, f"{key}({parameter}={describe(value)}): {fault}"


@pytest.mark.slow  # it records every doctest's calls, as the sweeps do: 6 s
def test_report():
    """The sweep still covers what the docstring reports (a shrinking table would hide faults)."""
    driven = [key for key in drivable() if key in examples()]
    assert len(CALLABLES) >= 300
    assert len(driven) >= 837, f"only {len(driven)} callables have a doctest example to vary"
    assert set(OPEN) <= set(driven), sorted(set(OPEN) - set(driven))
