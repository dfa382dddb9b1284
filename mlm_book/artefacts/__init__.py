"""The artefact floor: every trained or slow thing the book reads, declared once per kind.

A *kind* of artefact (the HMM encoder, chapter 10's next-token readers, chapter 8's
pre-trainings, ...) is declared in one place as a [`Kind`][mlm_book.artefacts.Kind]: the
setups the book reads, how to tell whether one is in the store and how to build it, an
estimate of its cost, a **tiny setup** that runs the same code in seconds, the kinds it reads,
and the package modules whose source keys its store entries. A module declares its kinds in a
module-level tuple ``ARTEFACT_KINDS`` of a module of this package;
[`kinds`][mlm_book.artefacts.kinds] finds them by walking it, so there is no list of kinds to keep by hand, and
[`missing`][mlm_book.artefacts.missing] and [`build`][mlm_book.artefacts.build] (what
``mlm-book build`` runs) read nothing else.

Keys cannot go stale by omission: an entry's key holds the source of its kind's declared
modules and of the kinds it reads ([`key_modules`][mlm_book.artefacts.key_modules]), and a
test builds every kind's tiny setup under a tracer and fails if the build executed code of a
package module outside that set (bookkeeping modules that never change a value excepted:
[`BOOKKEEPING`][mlm_book.artefacts.BOOKKEEPING]).
"""

from __future__ import annotations

import cmath
import fnmatch
import functools
import importlib
import inspect
import pkgutil
import time
import types
from collections.abc import Callable
from dataclasses import dataclass, field

from mlm_book import cache
from mlm_book.validation import check_instance, check_positive_int, check_real, check_sequence

__all__ = ["Kind", "Run", "KindCost", "ChapterCost", "BOOKKEEPING", "DECLARATION_MARKER", "CHAPTERS", "kinds", "key_modules",
           "key_source", "keyed_text", "book_runs", "tiny_runs", "missing", "build", "cost", "describe", "kind_costs",
           "chapter_cost", "cost_table", "reached_entries"]

BOOKKEEPING = frozenset({"mlm_book.validation", "mlm_book.cache", "mlm_book.progress", "mlm_book.parallel",
                         "mlm_book.artefacts"})
"""Package modules a build may execute without their source entering a key: they check arguments,
store and load entries, report progress or schedule work, and never change a value that is stored.
(``mlm_book.nn.runtime`` is not among them: it sets BLAS threads, which changes float32 rounding.)"""

DECLARATION_MARKER = "# ----------------------------------------------------------------------------- the declaration (not keyed)"
"""The line that opens an artefact module's declaration, which does not enter keys (see `keyed_text`)."""

CHAPTERS = 11
"""The book's chapters are numbered 1 to ``CHAPTERS`` (``chapters/01_*.py`` ... ``chapters/11_*.py``)."""

#: Where declarations are looked for: the artefact floor (which imports no chapter module).
_DECLARING_PACKAGES = ("mlm_book.artefacts",)


@dataclass(frozen=True)
class Kind:
    """One kind of trained or slow artefact, declared once.

    Attributes
    ----------
    name : str
        Short name, e.g. ``"hmm-encoder"`` (what ``mlm-book build --only`` matches).
    summary : str
        One line for ``mlm-book build --dry-run``.
    modules : tuple of str
        The package modules whose source keys every entry of this kind (the kinds in
        ``after`` add theirs, see [`key_modules`][mlm_book.artefacts.key_modules]).
    setups : callable
        ``setups()`` -> every setup the book reads (hashable, picklable values).
    is_built : callable
        ``is_built(setup)`` -> whether the store holds it (a damaged entry counts as absent).
    build : callable
        ``build(setup)``: compute it and leave it in the store (run in a worker process).
    cost : callable
        ``cost(setup)`` -> estimated seconds on one core of the machine the book was built on
        (for ordering and the ETA; measured, see each declaration).
    chapter : int
        The chapter whose experiments the kind was declared for (others may read it too), 1 to
        [`CHAPTERS`][mlm_book.artefacts.CHAPTERS]: what ``mlm-book build --dry-run`` and
        [`kind_costs`][mlm_book.artefacts.kind_costs] charge its runs to.
    describe : callable
        ``describe(setup)`` -> a short label, e.g. ``"seed 3"``.
    tiny : callable or None
        ``tiny()`` -> a setup that runs the same build code in seconds, or None where the
        kind's code does not take its size from its setup yet (``reason`` says why).
    after : tuple of str
        Kinds whose artefacts this kind reads: they are built first, and their modules key it.
    reason : str
        Why ``tiny`` is None (empty otherwise).

    Examples
    --------
    >>> kind = kinds()["hmm-encoder"]
    >>> kind.name, "mlm_book.nn.train" in kind.modules
    ('hmm-encoder', True)

    A declaration of one's own (built-in callables stand in for the real ones):

    >>> toy = Kind("toy", "a toy kind", ("mlm_book.hmm",), setups=tuple, is_built=bool, build=print,
    ...            cost=float, chapter=1, reason="a toy has no tiny setup")
    >>> toy.describe(3), toy.tiny is None
    ('3', True)
    """

    name: str
    summary: str
    modules: tuple[str, ...]
    setups: Callable
    is_built: Callable
    build: Callable
    cost: Callable
    chapter: int
    describe: Callable = repr
    tiny: Callable | None = None
    after: tuple[str, ...] = ()
    reason: str = ""

    def __post_init__(self):
        check_instance(self.name, "name", str)
        if not self.name or any(ch in self.name for ch in "/\\ "):
            raise ValueError(f"name must be a non-empty string without slashes or spaces, got {self.name!r}")
        check_instance(self.summary, "summary", str)
        check_instance(self.reason, "reason", str)
        check_sequence(self.modules, "modules", of=str)
        check_sequence(self.after, "after", of=str)
        check_positive_int(self.chapter, "chapter", maximum=CHAPTERS)
        for name in ("setups", "is_built", "build", "cost", "describe"):
            if not callable(getattr(self, name)):
                raise TypeError(f"{name} must be callable, got {type(getattr(self, name)).__name__}")
        if self.tiny is None and not self.reason:
            raise ValueError(f"kind {self.name!r} declares no tiny setup: reason must say why")
        if self.tiny is not None and not callable(self.tiny):
            raise TypeError(f"tiny must be callable or None, got {type(self.tiny).__name__}")


@dataclass(frozen=True, order=True)
class Run:
    """One artefact to build: its kind's name and its setup (picklable, so a worker can take it).

    Raises
    ------
    TypeError
        If ``kind`` is not a string, or ``setup`` is not hashable (a setup keys the store's
        bookkeeping, so it is a frozen dataclass, a tuple, a string ...).
    ValueError
        If ``kind`` is empty or holds a slash or a space (no kind is named so), or ``setup`` is
        a NaN or infinite number.

    Examples
    --------
    >>> setup = book_runs("hmm-encoder")[0].setup
    >>> run = Run("hmm-encoder", setup)
    >>> run.kind, run == Run("hmm-encoder", ())      # runs compare by kind: the setup is not ordered
    ('hmm-encoder', True)
    """

    kind: str
    setup: object = field(compare=False)

    def __post_init__(self):
        check_instance(self.kind, "kind", str)
        if not self.kind or any(ch in self.kind for ch in "/\\ "):
            raise ValueError(f"kind must be a non-empty string without slashes or spaces, got {self.kind!r}")
        try:
            hash(self.setup)
        except TypeError:
            raise TypeError(f"setup must be hashable (a kind's setup), got {type(self.setup).__name__}") from None
        if isinstance(self.setup, (float, complex)) and not cmath.isfinite(self.setup):
            raise ValueError(f"setup must be a kind's setup, not a NaN or infinite number, got {self.setup!r}")


@functools.cache
def kinds() -> dict[str, Kind]:
    """Every declared kind, by name, in the order the package declares them.

    Walks ``mlm_book.artefacts`` for module-level ``ARTEFACT_KINDS`` tuples.

    Raises
    ------
    ValueError
        If two declarations share a name, or a kind reads a kind nobody declares.

    Examples
    --------
    >>> {"hmm-encoder", "next-token"} <= set(kinds())
    True
    """
    found: dict[str, Kind] = {}
    for package_name in _DECLARING_PACKAGES:
        package = importlib.import_module(package_name)
        for info in sorted(pkgutil.iter_modules(package.__path__), key=lambda info: info.name):
            module = importlib.import_module(f"{package_name}.{info.name}")
            for kind in getattr(module, "ARTEFACT_KINDS", ()):
                check_instance(kind, f"{module.__name__}.ARTEFACT_KINDS item", Kind)
                if kind.name in found:
                    raise ValueError(f"two kinds are named {kind.name!r}")
                found[kind.name] = kind
    for kind in found.values():
        for name in kind.after:
            if name not in found:
                raise ValueError(f"kind {kind.name!r} reads kind {name!r}, which nothing declares")
    return found


def key_modules(name: str) -> tuple[str, ...]:
    """The modules whose source keys kind ``name``'s entries: its own and those of every kind it reads, sorted.

    Examples
    --------
    >>> "mlm_book.hmm" in key_modules("next-token")     # it reads the HMM encoder's sentences
    True
    """
    every = kinds()
    check_instance(name, "name", str)
    if name not in every:
        raise ValueError(f"name must be a declared kind ({', '.join(every)}), got {name!r}")
    seen: set[str] = set()
    stack = [name]
    modules: set[str] = set()
    while stack:
        current = stack.pop()
        if current in seen:
            continue
        seen.add(current)
        modules.update(every[current].modules)
        stack.extend(every[current].after)
    return tuple(sorted(modules))


def key_source(name: str) -> str:
    """The source text (no docstrings or comments) of [`key_modules`][mlm_book.artefacts.key_modules]: what enters a key.

    Read once per process: hashing a dozen modules takes a noticeable fraction of a second.

    Examples
    --------
    >>> "def trained_encoder" in key_source("hmm-encoder")
    True
    """
    return _key_source(key_modules(name))


@functools.cache
def _key_source(modules: tuple[str, ...]) -> str:
    return "\n".join(cache.without_prose(keyed_text(importlib.import_module(module))) for module in modules)


def keyed_text(module) -> str:
    """The part of ``module``'s source that keys entries: all of it, or, in an artefact module, what precedes its
    declaration (`DECLARATION_MARKER`).

    The declaration (the ``Kind`` with its setups, cost estimates and tiny setup) schedules
    builds and computes nothing stored, so estimates can be recalibrated without retraining.
    The key tracer checks that no named function below the marker runs during a build.

    Parameters
    ----------
    module : module or str
        A module of the package, or its dotted name.

    Raises
    ------
    TypeError
        If ``module`` is neither a module nor a string.
    ValueError
        If ``module`` names no module of the package.

    Examples
    --------
    >>> text = keyed_text("mlm_book.artefacts.hmm_encoder")
    >>> DECLARATION_MARKER in text, "ARTEFACT_KINDS = (" in text, "def trained_encoder" in text
    (False, False, True)
    """
    check_instance(module, "module", (types.ModuleType, str))
    if isinstance(module, str):
        if module != "mlm_book" and not module.startswith("mlm_book."):
            raise ValueError(f"module must name a module of the package (mlm_book...), got {module!r}")
        try:
            module = importlib.import_module(module)
        except ImportError:
            raise ValueError(f"module must name a module of the package, got {module!r}") from None
    source = inspect.getsource(module)
    cut = source.find(DECLARATION_MARKER)
    return source if cut < 0 else source[:cut]


def book_runs(only: str | None = None) -> list[Run]:
    """Every run the book reads, as [`Run`][mlm_book.artefacts.Run] items, kinds in declaration order.

    Parameters
    ----------
    only : str, optional
        A shell pattern on kind names (``"hmm-*"``); default every kind.

    Examples
    --------
    >>> len(book_runs("hmm-encoder"))
    10
    >>> book_runs("nothing-matches-this")
    []
    """
    if only is not None:
        check_instance(only, "only", str)
    return [Run(kind.name, setup) for kind in kinds().values()
            if only is None or fnmatch.fnmatchcase(kind.name, only) for setup in kind.setups()]


def tiny_runs(only: str | None = None) -> list[Run]:
    """One run per kind that declares a tiny setup (the same code as the book's, in seconds).

    Parameters
    ----------
    only : str, optional
        A shell pattern on kind names (``"hmm-*"``); default every kind.

    Examples
    --------
    >>> [run.kind for run in tiny_runs("hmm-encoder")]
    ['hmm-encoder']
    >>> tiny_runs("nothing-matches-this")
    []
    """
    if only is not None:
        check_instance(only, "only", str)
    return [Run(kind.name, kind.tiny()) for kind in kinds().values()
            if kind.tiny is not None and (only is None or fnmatch.fnmatchcase(kind.name, only))]


def _stage(name: str) -> int:
    every = kinds()
    return 0 if not every[name].after else 1 + max(_stage(after) for after in every[name].after)


def _check_run(run) -> Run:
    check_instance(run, "run", Run)
    if run.kind not in kinds():
        raise ValueError(f"run must be of a declared kind ({', '.join(kinds())}), got {run.kind!r}")
    return run


def cost(run: Run) -> float:
    """Estimated seconds of ``run`` on one core.

    Raises
    ------
    TypeError
        If ``run`` is not a [`Run`][mlm_book.artefacts.Run].
    ValueError
        If its kind is not declared.

    Examples
    --------
    >>> cost(book_runs("hmm-encoder")[0]) > 0
    True
    """
    run = _check_run(run)
    return float(kinds()[run.kind].cost(run.setup))


def describe(run: Run) -> str:
    """``"kind (label)"`` for progress lines and listings.

    Raises
    ------
    TypeError
        If ``run`` is not a [`Run`][mlm_book.artefacts.Run].
    ValueError
        If its kind is not declared.

    Examples
    --------
    >>> describe(book_runs("hmm-encoder")[0]).startswith("hmm-encoder (")
    True
    """
    run = _check_run(run)
    return f"{run.kind} ({kinds()[run.kind].describe(run.setup)})"


@dataclass(frozen=True)
class KindCost:
    """What one kind's book runs cost: ``runs`` of them, ``seconds`` estimated on one core, charged to ``chapter``.

    Raises
    ------
    TypeError
        If ``kind`` or ``summary`` is not a string, ``chapter`` or ``runs`` not an integer, or
        ``seconds`` not a real number.
    ValueError
        If ``kind`` is empty, ``chapter`` is not between 1 and [`CHAPTERS`][mlm_book.artefacts.CHAPTERS],
        ``runs`` is negative, or ``seconds`` is negative or not finite.

    Examples
    --------
    >>> item = KindCost("hmm-encoder", "the HMM encoder", chapter=2, runs=10, seconds=636.0)
    >>> item.seconds / item.runs
    63.6
    """

    kind: str
    summary: str
    chapter: int
    runs: int
    seconds: float

    def __post_init__(self):
        check_instance(self.kind, "kind", str)
        if not self.kind:
            raise ValueError("kind must be a kind's name, got an empty string")
        check_instance(self.summary, "summary", str)
        check_positive_int(self.chapter, "chapter", maximum=CHAPTERS)
        check_positive_int(self.runs, "runs", minimum=0)
        check_real(self.seconds, "seconds", low=0.0)


def kind_costs(chapter: int | None = None) -> list[KindCost]:
    """The estimated cost of every book run, by kind, whether the store holds it or not.

    The estimates are each kind's declared ``cost`` (seconds on one core of the machine the
    book was built on, measured: see each declaration); a cold ``mlm-book build`` spends about
    their sum over the cores it has.

    Parameters
    ----------
    chapter : int, optional
        Only the kinds charged to this chapter (1 to [`CHAPTERS`][mlm_book.artefacts.CHAPTERS]);
        default every kind.

    Returns
    -------
    list of KindCost
        By chapter, then most expensive first.

    Raises
    ------
    TypeError
        If ``chapter`` is not an integer.
    ValueError
        If ``chapter`` is not between 1 and ``CHAPTERS``.

    Examples
    --------
    >>> hmm = next(item for item in kind_costs(2) if item.kind == "hmm-encoder")
    >>> hmm.runs, round(hmm.seconds) == round(sum(cost(run) for run in book_runs("hmm-encoder")))
    (10, True)
    >>> sum(item.runs for item in kind_costs()) == len(book_runs())
    True
    """
    if chapter is not None:
        chapter = check_positive_int(chapter, "chapter", maximum=CHAPTERS)
    found = []
    for kind in kinds().values():
        if chapter is None or kind.chapter == chapter:
            setups = kind.setups()
            found.append(KindCost(kind.name, kind.summary, kind.chapter, len(setups),
                                  sum(float(kind.cost(setup)) for setup in setups)))
    return sorted(found, key=lambda item: (item.chapter, -item.seconds))


@dataclass(frozen=True)
class ChapterCost:
    """The kinds charged to one chapter, most expensive first, beside the whole book's estimated seconds.

    Raises
    ------
    TypeError
        If ``chapter`` is not an integer, ``kinds`` not a sequence of
        [`KindCost`][mlm_book.artefacts.KindCost], or ``book_seconds`` not a real number.
    ValueError
        If ``chapter`` is not between 1 and [`CHAPTERS`][mlm_book.artefacts.CHAPTERS], a kind is
        charged to another chapter, or ``book_seconds`` is negative, not finite or below the chapter's own.

    Examples
    --------
    >>> item = KindCost("hmm-encoder", "the HMM encoder", chapter=2, runs=10, seconds=600.0)
    >>> spent = ChapterCost(2, (item,), book_seconds=2400.0)
    >>> spent.runs, spent.minutes, spent.book_minutes, spent.share
    (10, 10.0, 40.0, 0.25)
    """

    chapter: int
    kinds: tuple[KindCost, ...]
    book_seconds: float

    def __post_init__(self):
        check_positive_int(self.chapter, "chapter", maximum=CHAPTERS)
        object.__setattr__(self, "kinds", tuple(check_sequence(self.kinds, "kinds", of=KindCost)))
        for item in self.kinds:
            if item.chapter != self.chapter:
                raise ValueError(f"kinds must be charged to chapter {self.chapter}, got {item.kind!r} of chapter "
                                 f"{item.chapter}")
        check_real(self.book_seconds, "book_seconds", low=0.0)
        if self.book_seconds < self.seconds:
            raise ValueError(f"book_seconds must be at least the chapter's {self.seconds}, got {self.book_seconds}")

    @property
    def runs(self) -> int:
        """The chapter's runs."""
        return sum(item.runs for item in self.kinds)

    @property
    def seconds(self) -> float:
        """The chapter's estimated seconds on one core."""
        return sum(item.seconds for item in self.kinds)

    @property
    def minutes(self) -> float:
        """The chapter's estimated minutes on one core."""
        return self.seconds / 60

    @property
    def book_minutes(self) -> float:
        """The whole book's estimated minutes on one core."""
        return self.book_seconds / 60

    @property
    def share(self) -> float:
        """The chapter's share of the whole book's estimate."""
        return self.seconds / self.book_seconds if self.book_seconds else 0.0


def chapter_cost(chapter: int) -> ChapterCost:
    """What the book runs charged to ``chapter`` cost, beside the whole book's: what a chapter says of its training.

    Parameters
    ----------
    chapter : int
        1 to [`CHAPTERS`][mlm_book.artefacts.CHAPTERS].

    Returns
    -------
    ChapterCost

    Raises
    ------
    TypeError
        If ``chapter`` is not an integer.
    ValueError
        If ``chapter`` is not between 1 and ``CHAPTERS``.

    Examples
    --------
    >>> spent = chapter_cost(2)
    >>> spent.kinds[0].kind, spent.runs, 0 < spent.share < 1
    ('hmm-encoder', 10, True)
    >>> chapter_cost(4).kinds       # chapter 4 reads the HMM encoders that chapter 2 is charged for
    ()
    """
    chapter = check_positive_int(chapter, "chapter", maximum=CHAPTERS)
    every = kind_costs()
    return ChapterCost(chapter, tuple(item for item in every if item.chapter == chapter),
                       sum(item.seconds for item in every))


def cost_table(chapter: int):
    """The kinds charged to ``chapter`` as a Markdown table: name, runs, estimated minutes on one core, share of the chapter.

    The kinds' summaries (what ``mlm-book build --dry-run`` shows) are left out so that the table fits
    a page; a chapter says in its prose what the runs are.

    Parameters
    ----------
    chapter : int
        1 to [`CHAPTERS`][mlm_book.artefacts.CHAPTERS].

    Returns
    -------
    mlm_book.report.Markdown
        One row per kind, most expensive first, and a last row with the chapter's total.

    Raises
    ------
    TypeError
        If ``chapter`` is not an integer.
    ValueError
        If ``chapter`` is not between 1 and ``CHAPTERS``.

    Examples
    --------
    >>> print(cost_table(1).splitlines()[0])
    | kind | runs | core-minutes | share |
    >>> print(cost_table(1).splitlines()[2])
    | `bayes-expectation` | 1 | 0.1 | 100% |
    >>> "<1%" in cost_table(11)      # a kind under half a percent of its chapter
    True
    """
    from mlm_book.report import table

    spent = chapter_cost(chapter)
    rows = [[f"`{item.kind}`", item.runs, item.seconds / 60,
             f"{item.seconds / spent.seconds:.0%}" if item.seconds >= 0.005 * spent.seconds else "<1%"]
            for item in spent.kinds]
    rows.append(["all", spent.runs, spent.minutes, f"{1:.0%}"])
    return table(["kind", "runs", "core-minutes", "share"], rows, formats=[None, None, ".1f", None])


def missing(runs: list[Run] | None = None) -> list[Run]:
    """The runs the store lacks, in the order a pool should start them.

    Kinds that read no other kind come first, longest first, so that the pool's tail stays
    short; a kind that reads others follows them (its worker would otherwise wait on their
    lock, or build them itself).

    Parameters
    ----------
    runs : list of Run, optional
        Default [`book_runs`][mlm_book.artefacts.book_runs]'s (asking the store about each).

    Examples
    --------
    >>> missing([])      # the default asks the store about every run the book reads
    []
    """
    every = kinds()
    runs = book_runs() if runs is None else check_sequence(runs, "runs", of=Run)
    lacking = [run for run in runs if not every[run.kind].is_built(run.setup)]
    return sorted(lacking, key=lambda run: (_stage(run.kind), -cost(run)))


def reached_entries(runs: list[Run] | None = None) -> set[str]:
    """The stems (``<name>-<key>``) of the store entries the runs read: what ``mlm-book cache prune`` keeps.

    Each kind's ``is_built`` is asked; the entries it checks are the ones the current code
    would load (nothing is built).

    Parameters
    ----------
    runs : list of Run, optional
        Default [`book_runs`][mlm_book.artefacts.book_runs]'s.

    Examples
    --------
    >>> reached_entries([])
    set()
    """
    every = kinds()
    runs = book_runs() if runs is None else check_sequence(runs, "runs", of=Run)
    with cache.asking() as asked:
        for run in runs:
            every[run.kind].is_built(run.setup)
    return set(asked)


def _build_run(job: tuple[Run, str]) -> float:
    import os

    run, store = job
    os.environ[cache.ENVIRONMENT_VARIABLE] = store    # on a cluster's worker too: the shared store
    start = time.perf_counter()
    kinds()[run.kind].build(run.setup)
    return time.perf_counter() - start


def build(runs: list[Run], *, processes: int | None = None, on_done: Callable[[Run, float], None] | None = None,
          executor=None) -> dict[str, float]:
    """Build ``runs`` (in the order given) across ``processes`` worker processes; return seconds per kind.

    Parameters
    ----------
    runs : list of Run
        Usually [`missing`][mlm_book.artefacts.missing]'s list.
    processes : int, optional
        Pool size; default the available cores (each worker uses one BLAS thread).
    on_done : callable, optional
        Called as ``on_done(run, seconds)`` as each run finishes.
    executor : concurrent.futures.Executor, optional
        Run on this executor instead of a local pool (``mlm-book build --scheduler`` passes a
        ``dask.distributed`` client's); every worker must see the store's path.

    Examples
    --------
    >>> build([], processes=1)       # nothing to build: no worker starts
    {}
    """
    from mlm_book.parallel import run_in_processes

    runs = check_sequence(runs, "runs", of=Run)
    per_kind: dict[str, float] = {}

    def report(index: int, seconds: float) -> None:
        per_kind[runs[index].kind] = per_kind.get(runs[index].kind, 0.0) + seconds
        if on_done is not None:
            on_done(runs[index], seconds)

    store = str(cache.cache_dir())
    run_in_processes(_build_run, [(run, store) for run in runs], processes=processes, on_done=report,
                     executor=executor)
    return per_kind
