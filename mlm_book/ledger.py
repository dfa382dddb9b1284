"""The book's claims ledger: every number the topic page states, recomputed and judged.

Each claim carries the identifier it has in the project's claims list (``S2-16``,
``S3-17``, ...), the quantity in words, the seed's value as printed on the topic page,
a function that computes the book's value, and the acceptance rule, both in words and
as a predicate on the computed value. Rules are the claims list's or tighter, never
looser.

Claims are declared where their numbers are computed: each module of
[`mlm_book.experiments`][mlm_book.experiments] exposes a tuple ``CLAIMS``. [`all_claims`][mlm_book.ledger.all_claims] collects them,
[`verify`][mlm_book.ledger.verify] evaluates them, and ``mlm-book verify`` prints the table that the docs
site's Claims page shows.
"""

from __future__ import annotations

import html
import importlib
import numbers
import pkgutil
import re
import time
import traceback
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from mlm_book.report import ROUNDING, residual
from mlm_book.validation import (
    as_float_array,
    check_bool,
    check_format,
    check_instance,
    check_positive_int,
    check_real,
    check_sequence,
)

__all__ = ["reported_value", "VERDICTS", "over_seeds", "seed_verdict", "verdict_counts", "Claim", "ClaimResult", "ChapterSummary", "all_claims",
           "verify", "format_value", "to_markdown", "to_html", "to_text", "chapter_summary", "typeset",
           "claim_modules", "verdict_text"]

# S<section>-<n>: the reference text's claims; D-<n>: the study notes' concepts that the
# reference text leaves out (claims list section D), judged by rules the book states;
# Q<n>: the open questions (claims list section F) that the book answers by experiment, and
# Q<n><letter> (Q5a, Q5b, ...) for a question's further rules, each fixed before its numbers
_ID_PATTERN = re.compile(r"^(?:S(\d+)-(W?\d+)|D-(\d+[a-z]?)|Q(\d+[a-z]?))$")
#: Where the study notes' D claims sort: after every section of the reference text.
_D_SECTION = 100
#: Where the open questions' Q claims sort: after the D claims.
_Q_SECTION = 101
# A heading's anchor as the site's table of contents writes it (mkdocs' slugify: lower case, word characters, and
# single hyphens where the heading had spaces or hyphens)
_SECTION_PATTERN = re.compile(r"[a-z0-9_]+(?:-[a-z0-9_]+)*")


def format_value(value: Any, fmt: str = ".3f") -> str:
    """Render a claim's value: numbers with ``fmt``, sequences and mappings element-wise.

    ``fmt`` is a format specification for numbers, or ``"residual"`` for a value whose
    numbers should be zero up to floating-point rounding (an identity's error, the gap
    between two exact computations): each then reads ``"0 exactly"`` or ``"0 to rounding"``
    below [`ROUNDING`][mlm_book.report.ROUNDING] and is a number (``".1e"``) above it, so
    that a real error shows. ``"residual:.3g"`` formats the numbers above ``ROUNDING`` with
    ``".3g"``, for a value that sets such a residual beside real quantities.

    Raises
    ------
    TypeError
        If ``fmt`` is not a string.
    ValueError
        If ``fmt`` is not a format specification for numbers (or only for integers, such as
        ``"d"``, and the value holds a float).

    Examples
    --------
    >>> format_value(0.50912)
    '0.509'
    >>> format_value({"mask": 0.0213, "kept_max": 0.04}, ".2f")
    'mask 0.02, kept max 0.04'
    >>> format_value((1e-14, 3), ".1e")
    '1.0e-14 / 3'
    >>> format_value({"shrinkage": 0.0, "brute force": 9.4e-16, "context": 0.0822}, "residual:.2g")
    'shrinkage 0 exactly, brute force 0 to rounding, context 0.082'
    >>> format_value(True)
    'yes'
    """
    fmt = _check_fmt(fmt)
    return _format(value, fmt)


def _residual_spec(fmt: str) -> str | None:
    """The number format of a ``"residual"`` format (``".1e"``, or what follows ``"residual:"``); None for another."""
    if fmt == "residual":
        return ".1e"
    return fmt[len("residual:"):] if fmt.startswith("residual:") else None


def _check_fmt(fmt) -> str:
    if not isinstance(fmt, str):
        raise TypeError(f"fmt must be a format specification (str) such as '.3f', got {type(fmt).__name__}")
    spec = _residual_spec(fmt)
    for number in (0.5,) if spec is not None else (0.5, 1):  # "d" formats the integer counts some claims report
        try:
            format(number, fmt if spec is None else spec)
            return fmt
        except ValueError:
            pass
    raise ValueError(f"fmt must be a format specification for numbers such as '.3f', 'd' or 'residual:.2e', "
                     f"got {fmt!r}")


def _number(value: float, fmt: str) -> str:
    """One float as ``fmt`` prints it (a ``"residual"`` format in words below ROUNDING)."""
    spec = _residual_spec(fmt)
    return format(value, fmt) if spec is None else residual(value, spec)


def _format(value: Any, fmt: str) -> str:
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        try:
            return _number(value, fmt)
        except ValueError:  # an integer-only spec such as "d"
            raise ValueError(f"fmt {fmt!r} cannot format the float {value!r}") from None
    if isinstance(value, Mapping):
        return ", ".join(f"{str(key).replace('_', ' ')} {_format(item, fmt)}" for key, item in value.items())
    if isinstance(value, (tuple, list)):
        return " / ".join(_format(item, fmt) for item in value)
    try:
        return _number(float(value), fmt)
    except (TypeError, ValueError):
        return str(value)


VERDICTS = ("reproduced", "seed-dependent", "not reproduced")
"""Verdicts of a learned claim over its training seeds: its rule holds for every seed, for some, for none."""


def over_seeds(values, holding: int | None = None, *, margins=None, fmt: str = ".3f",
               sd_fmt: str | None = None) -> dict:
    """A learned claim's value: the book seed's value, mean ± sd per number over the seeds, and how many hold.

    Parameters
    ----------
    values : sequence
        One value per training seed, the book's first: a number, a tuple of numbers or a
        mapping of numbers (the same keys at every seed).
    holding : int, optional
        How many of the seeds satisfy the claim's rule. It may be left out when ``margins``
        is given, which then counts it.
    margins : sequence of float, optional
        One per seed: how far that seed sits from the rule's threshold, in the rule's own
        units, non-negative where the rule holds and negative where it does not. For a rule of
        several conditions, the smallest of theirs, leaving out a condition that holds by
        construction or is exact to rounding (an identity checked to 1e-12, a bound on a
        constant): its tolerance says nothing about how close the learned result is, and should
        it fail, ``holding`` and the margins disagree and this raises. Given, the value gains
        ``"margin"``, the worst and the best seed's margins, so that a reader sees how close a
        verdict is to changing.
    fmt, sd_fmt : str
        Formats of the means and of the standard deviations (default ``fmt``), float format
        specifications with width and precision at most 100 (see
        [`check_format`][mlm_book.validation.check_format]). A quantity that prints the same at
        every seed shows as ``"x at every seed"``, not as a band of width zero. ``fmt`` may be
        ``"residual:<spec>"`` (see [`format_value`][mlm_book.ledger.format_value]): a quantity
        that is zero up to rounding at every seed then reads ``"0 to rounding at every seed"``,
        and the others are formatted with ``<spec>``.

    Raises
    ------
    ValueError
        If neither ``holding`` nor ``margins`` is given, if ``margins`` is not one finite
        number per seed, or if ``holding`` is not the number of non-negative margins.

    Examples
    --------
    >>> over_seeds([(1.0, 2.0), (3.0, 2.0)], 1)
    {'book': (1.0, 2.0), 'mean ± sd': '2.000 ± 1.414 / 2.000 at every seed', 'seeds holding': '1 of 2'}

    A rule "accuracy ≥ 0.9", with its margins:

    >>> accuracies = [0.93, 0.95, 0.89]
    >>> over_seeds(accuracies, margins=[a - 0.9 for a in accuracies])["margin"]
    'worst -0.01, best +0.05'
    >>> over_seeds(accuracies, 3, margins=[a - 0.9 for a in accuracies])
    Traceback (most recent call last):
    ...
    ValueError: holding is 3, but 2 of the 3 margins are non-negative: the rule and its margins disagree

    An identity checked at each seed beside a learned number:

    >>> over_seeds([(0.0187, 9.3e-16), (0.0312, 8.9e-16)], 2, fmt="residual:.3g")["mean ± sd"]
    '0.025 ± 0.00884 / 0 to rounding at every seed'
    """
    values = check_sequence(values, "values")
    if len(values) < 2:
        raise ValueError(f"values must hold one value per seed for at least two seeds, got {len(values)}")
    try:
        columns = np.array([list(v.values()) if isinstance(v, Mapping) else list(v) if isinstance(v, (tuple, list))
                            else [v] for v in values], dtype=np.float64)
    except (TypeError, ValueError):
        raise TypeError("values must hold a number, a tuple or a mapping of numbers per seed, alike at every "
                        "seed") from None
    if columns.ndim != 2 or not np.all(np.isfinite(columns)):
        raise ValueError("values must hold finite numbers, alike at every seed")
    if not isinstance(fmt, str):
        raise TypeError(f"fmt must be a format specification (str) such as '.3f', got {type(fmt).__name__}")
    spec = _residual_spec(fmt)
    sd_fmt = (fmt if spec is None else spec) if sd_fmt is None else sd_fmt
    check_format(fmt if spec is None else spec, "fmt")
    check_format(sd_fmt, "sd_fmt")
    if margins is not None:
        margins = as_float_array(margins, "margins")
        if margins.shape != (len(values),):  # as_float_array has refused NaN and infinities
            raise ValueError(f"margins must hold one finite number per seed ({len(values)}), got shape "
                             f"{margins.shape}")
        counted = int(np.sum(margins >= 0))
        if holding is None:
            holding = counted
        elif isinstance(holding, numbers.Integral) and not isinstance(holding, bool) and holding != counted:
            raise ValueError(f"holding is {holding}, but {counted} of the {len(values)} margins are non-negative: "
                             "the rule and its margins disagree")
    elif holding is None:
        raise ValueError("holding must be given (the number of seeds whose rule holds), or margins to count it")
    if isinstance(holding, bool) or not isinstance(holding, numbers.Integral) or not 0 <= holding <= len(values):
        raise ValueError(f"holding must be an integer count in [0, {len(values)}], got {holding!r:.40}")
    spreads = " / ".join(_spread(column, fmt, sd_fmt) for column in columns.T)
    value = {"book": values[0], "mean ± sd": spreads, "seeds holding": f"{holding} of {len(values)}"}
    if margins is not None:
        value["margin"] = f"worst {margins.min():+.3g}, best {margins.max():+.3g}"
    return value


def _spread(column: np.ndarray, fmt: str, sd_fmt: str) -> str:
    spec = _residual_spec(fmt)
    if spec is not None:
        if np.all(np.abs(column) < ROUNDING):  # zero up to rounding at every seed: words, not a band
            return f"{'0 exactly' if np.all(column == 0) else '0 to rounding'} at every seed"
        fmt = spec
    if len({f"{value:{fmt}}" for value in column}) == 1:  # a band of zero width says less than the words do
        return f"{column[0]:{fmt}} at every seed"
    return f"{column.mean():{fmt}} ± {column.std(ddof=1):{sd_fmt}}"


def seed_verdict(value: Any) -> tuple[str, str] | None:
    """The three-way verdict of a claim value that carries seed counts, and the counts as text.

    Counts are ``"k of n"`` strings under the key ``"seeds holding"``, at the top of the
    value or one level down (one per encoder). ``None`` for a value without counts.

    Examples
    --------
    >>> seed_verdict({"book": 0.9, "seeds holding": "5 of 5"})
    ('reproduced', '5 of 5')
    >>> seed_verdict({"HMM": {"seeds holding": "2 of 4"}, "filings": {"seeds holding": "5 of 5"}})
    ('seed-dependent', '2 of 4; 5 of 5')
    >>> seed_verdict(0.5) is None
    True
    """
    if not isinstance(value, Mapping):
        return None
    found = [value["seeds holding"]] if "seeds holding" in value else []
    found += [item["seeds holding"] for item in value.values() if isinstance(item, Mapping) and "seeds holding" in item]
    if not found:
        return None
    counts = []
    for text in found:
        match = re.fullmatch(r"(\d+) of (\d+)", str(text))
        if not match:
            raise ValueError(f"'seeds holding' must read 'k of n', got {text!r}")
        counts.append((int(match.group(1)), int(match.group(2))))
    if all(k == n for k, n in counts):
        verdict = VERDICTS[0]
    elif all(k == 0 for k, _ in counts):
        verdict = VERDICTS[2]
    else:
        verdict = VERDICTS[1]
    return verdict, "; ".join(found)


@dataclass(frozen=True)
class Claim:
    """One checkable statement of the book.

    Parameters
    ----------
    id : str
        The claims list's identifier, e.g. ``"S2-16"``.
    quantity : str
        What is measured, self-contained.
    seed : str
        The topic page's value as text (``"—"`` for statements without a number).
    rule : str
        The acceptance rule in words.
    compute : callable
        No-argument function returning the book's value (a number, a tuple or a mapping).
    accept : callable
        Predicate on the value returned by ``compute``.
    fmt : str
        Format spec for numbers in the table.
    expected : str, optional
        For a learned claim measured over several training seeds (its value is a mapping
        with ``"seeds holding": "k of n"``, possibly inside one nested mapping per encoder):
        the verdict the book's text states, one of [`VERDICTS`][mlm_book.ledger.VERDICTS].
        The claim then passes when the measured verdict equals it, so that a sentence such as
        "this holds for every seed" is itself checked. For a rule computed once (no seed
        counts), ``accept`` gives the verdict, *reproduced* or *not reproduced*, and the claim
        passes when it is the stated one: a rule fixed before its numbers that then failed is
        registered, and checked, as *not reproduced*.
    reported : bool
        A number the book states beside the published one with no rule to judge it, because
        any rule would be true by construction (a quantity computed as the difference it is
        compared with, a probability that is in (0, 1) by definition). It always passes, gets
        no verdict, and is counted apart from the claims. Build one with
        [`reported_value`][mlm_book.ledger.reported_value].
    section : str, optional
        Where the book makes the claim: the anchor of the heading, on the page of the chapter
        that declares it (or the lab's page), of the section that shows its number or states
        it, as the site writes it: the heading's text in lower case, with characters other than
        letters, digits, underscores, spaces and hyphens removed and each run of spaces and
        hyphens made one hyphen (``"## Corollary 1: the static cap"`` gives
        ``"corollary-1-the-static-cap"``). The Claims page links the claim's row there.

    Raises
    ------
    TypeError
        If a text field or ``fmt`` is not a string, ``section`` is neither None nor a string,
        or ``compute`` or ``accept`` is not callable.
    ValueError
        If ``id`` does not look like ``"S2-16"``, ``fmt`` formats no number, ``expected``
        is not one of [`VERDICTS`][mlm_book.ledger.VERDICTS], or ``section`` is not an anchor
        (lower-case letters, digits and underscores in runs joined by single hyphens).

    Examples
    --------
    Claim S2-16 (the static cap on the HMM), declared by hand and checked:

    >>> from mlm_book.hmm import default_hmm
    >>> from mlm_book.pmi import static_cap
    >>> hmm = default_hmm()
    >>> cap = Claim("S2-16", "Static cap for w on the HMM", seed="0.509", rule="in [0.504, 0.514]",
    ...             compute=lambda: static_cap(hmm), accept=lambda value: 0.504 <= value <= 0.514,
    ...             section="corollary-1-the-static-cap")
    >>> cap.sort_key
    (2, 16, '16')
    >>> [(result.claim.id, result.book, result.passed) for result in verify(only="S2-16", claims=[cap])]
    [('S2-16', '0.509', True)]

    The same value judged by a stricter rule fails:

    >>> from dataclasses import replace
    >>> strict = replace(cap, rule="above 0.51", accept=lambda value: value > 0.51)
    >>> verify(only="S2-16", claims=[strict])[0].passed
    False

    A rule fixed before its number that then failed is registered with the verdict it got,
    and checked: it passes while it still fails, and fails the day it holds.

    >>> failed = replace(strict, expected="not reproduced")
    >>> result = verify(only="S2-16", claims=[failed])[0]
    >>> result.verdict, result.passed
    ('not reproduced', True)
    >>> verify(only="S2-16", claims=[replace(cap, expected="not reproduced")])[0].passed
    False
    """

    id: str
    quantity: str
    seed: str
    rule: str
    compute: Callable[[], Any] = field(repr=False)
    accept: Callable[[Any], bool] = field(repr=False)
    fmt: str = ".3f"
    expected: str | None = None
    reported: bool = False
    section: str | None = None

    def __post_init__(self):
        for name in ("id", "quantity", "seed", "rule"):
            if not isinstance(getattr(self, name), str):
                raise TypeError(f"{name} must be a string, got {type(getattr(self, name)).__name__}")
        if not _ID_PATTERN.match(self.id):
            raise ValueError(f"id must look like 'S2-16' (reference text), 'D-18', 'D-18a' (study notes) or 'Q3', 'Q3a' "
                             f"(open questions), got {self.id!r}")
        for name in ("compute", "accept"):
            if not callable(getattr(self, name)):
                raise TypeError(f"{name} must be callable, got {type(getattr(self, name)).__name__}")
        _check_fmt(self.fmt)
        if self.expected is not None and (not isinstance(self.expected, str) or self.expected not in VERDICTS):
            raise ValueError(f"expected must be None or one of {VERDICTS}, got {self.expected!r}")
        check_bool(self.reported, "reported")
        if self.reported and self.expected is not None:
            raise ValueError("a reported value has no rule, so it cannot state an expected verdict")
        if self.section is not None:
            if not isinstance(self.section, str):
                raise TypeError(f"section must be None or a heading's anchor (str), got {type(self.section).__name__}")
            if not _SECTION_PATTERN.fullmatch(self.section):
                raise ValueError(f"section must be a heading's anchor such as 'corollary-1-the-static-cap' (lower-case "
                                 f"letters, digits and underscores joined by single hyphens), got {self.section!r:.80}")

    @property
    def sort_key(self) -> tuple[int, int, str]:
        section, number, study_note, question = _ID_PATTERN.match(self.id).groups()
        if study_note is not None:
            return (_D_SECTION, int(study_note.rstrip("abcdefghijklmnopqrstuvwxyz")), study_note)
        if question is not None:
            return (_Q_SECTION, int(question.rstrip("abcdefghijklmnopqrstuvwxyz")), question)
        return (int(section), int(number.lstrip("W") or 0), number)


@dataclass(frozen=True)
class ClaimResult:
    """The outcome of evaluating one [`Claim`][mlm_book.ledger.Claim].

    Parameters
    ----------
    claim : Claim
        The claim evaluated.
    value : object
        What its ``compute`` returned (``None`` after an error); every number in it is finite.
    book : str
        ``value`` as the table prints it.
    passed : bool
        Whether the claim holds.
    seconds : float
        Time the evaluation took (non-negative).
    error : str, optional
        Why the value could not be computed.
    verdict : str, optional
        One of [`VERDICTS`][mlm_book.ledger.VERDICTS] for a value measured over seeds, or for a
        rule computed once whose claim states the verdict (*reproduced* or *not reproduced*).

    Raises
    ------
    TypeError
        If a field has the wrong type.
    ValueError
        If ``value`` holds a NaN or infinity, ``seconds`` is negative or not finite, or
        ``verdict`` is not one of the verdicts.

    Examples
    --------
    >>> claim = reported_value("S2-16", "Static cap for w on the HMM", "0.509", lambda: 0.509)
    >>> result = ClaimResult(claim, 0.509, "0.509", True, 0.01)
    >>> result.claim.id, result.passed, result.verdict
    ('S2-16', True, None)
    """

    claim: Claim
    value: Any
    book: str
    passed: bool
    seconds: float
    error: str | None = None
    verdict: str | None = None

    def __post_init__(self):
        check_instance(self.claim, "claim", Claim)
        _check_finite_value(self.value)
        check_instance(self.book, "book", str)
        check_bool(self.passed, "passed")
        check_real(self.seconds, "seconds", low=0.0)
        if self.error is not None:
            check_instance(self.error, "error", str)
        if self.verdict is not None and (not isinstance(self.verdict, str) or self.verdict not in VERDICTS):
            raise ValueError(f"verdict must be None or one of {VERDICTS}, got {self.verdict!r}")


def _no_rule(value) -> bool:
    return True


def reported_value(id: str, quantity: str, seed: str, compute: Callable[[], Any], fmt: str = ".3f", *,
                   why: str = "any rule would hold by construction", section: str | None = None) -> Claim:
    """A number the book states beside the published one, with no rule (see ``Claim.reported``).

    ``why`` says why no rule is given (the Claims page shows it as the rule); ``section`` is
    where the book shows the number (see [`Claim`][mlm_book.ledger.Claim]).

    Examples
    --------
    >>> value = reported_value("S2-16", "Static cap for w on the HMM", "0.509", lambda: 0.509)
    >>> result = verify(claims=[value])[0]
    >>> result.passed, result.verdict, verdict_counts([result])["reported"]
    (True, None, 1)
    """
    if not isinstance(why, str) or not why:
        raise TypeError(f"why must be a non-empty str, got {why!r:.60}")
    return Claim(id, quantity, seed, f"reported, no rule: {why}", compute=compute, accept=_no_rule, fmt=fmt,
                 reported=True, section=section)


def _check_finite_value(value, depth: int = 0) -> None:
    """Refuse a claim value holding NaN or infinity: a table would print it as a number."""
    if isinstance(value, (str, bytes, bool)) or value is None or depth > 8:
        return
    if isinstance(value, Mapping):
        for item in value.values():
            _check_finite_value(item, depth + 1)
    elif isinstance(value, (tuple, list)):
        for item in value:
            _check_finite_value(item, depth + 1)
    elif isinstance(value, (numbers.Number, np.ndarray, np.generic)):
        array = np.asarray(value)
        if array.dtype.kind in "fc" and not np.all(np.isfinite(array)):
            raise ValueError(f"value must be finite (no NaN or infinity), got {value!r}")


def all_claims(package: str = "mlm_book.experiments") -> tuple[Claim, ...]:
    """Every claim declared in the modules of ``package``, sorted by id; ids must be unique.

    Raises
    ------
    TypeError
        If ``package`` is not a string, or a module's ``CLAIMS`` holds something else than claims.
    ValueError
        If ``package`` names no importable package, or an id is declared twice.

    Examples
    --------
    >>> claims = all_claims()
    >>> len({claim.id for claim in claims}) == len(claims)
    True
    """
    found = _declared(package)
    return tuple(sorted((claim for claim, _ in found.values()), key=lambda claim: claim.sort_key))


def _declared(package) -> dict[str, tuple[Claim, str]]:
    """id -> (claim, name of the module that declares it) over the modules of a package."""
    if not isinstance(package, str):
        raise TypeError(f"package must be a dotted package name (str), got {type(package).__name__}")
    if not package or package.startswith("."):
        raise ValueError(f"package must be an absolute dotted package name, got {package!r}")
    try:
        module = importlib.import_module(package)
    except ModuleNotFoundError as error:
        if error.name is None or not package.startswith(error.name):
            raise  # the package exists, one of its imports is missing
        raise ValueError(f"package must name an importable package, got {package!r} ({error})") from None
    if not hasattr(module, "__path__"):
        raise ValueError(f"package must be a package (a directory of modules), got the module {package!r}")
    found: dict[str, tuple[Claim, str]] = {}
    for info in sorted(pkgutil.iter_modules(module.__path__), key=lambda item: item.name):
        submodule = importlib.import_module(f"{package}.{info.name}")
        for claim in getattr(submodule, "CLAIMS", ()):
            if not isinstance(claim, Claim):
                raise TypeError(f"{package}.{info.name}.CLAIMS must hold Claim objects")
            if claim.id in found:
                raise ValueError(f"claim {claim.id} is declared twice")
            found[claim.id] = (claim, info.name)
    return found


def claim_modules(package: str = "mlm_book.experiments") -> dict[str, str]:
    """Which module of ``package`` declares each claim: id -> the module's name within the package.

    The Claims page groups the claims by the chapter whose module declares them.

    Raises
    ------
    TypeError, ValueError
        As [`all_claims`][mlm_book.ledger.all_claims].

    Examples
    --------
    >>> claim_modules()["S2-16"]
    'ch01_static_vectors'
    """
    return {id_: name for id_, (_, name) in _declared(package).items()}


def _evaluate(claim: Claim) -> ClaimResult:
    start = time.perf_counter()
    try:
        value = claim.compute()
        if claim.reported and isinstance(value, Mapping):  # no rule, so nothing holds at any seed
            value = {key: item for key, item in value.items() if key != "seeds holding"}
        found = seed_verdict(value)
        verdict = None if found is None else found[0]
        if claim.reported:
            passed = True
        elif claim.expected is not None:
            if found is None:  # a rule computed once: it holds or it does not
                if claim.expected == VERDICTS[1]:
                    raise ValueError("the claim expects 'seed-dependent' but its value carries no seed counts")
                verdict = VERDICTS[0] if claim.accept(value) else VERDICTS[2]
            passed = verdict == claim.expected
        else:
            passed = bool(claim.accept(value))
        return ClaimResult(claim, value, format_value(value, claim.fmt), passed, time.perf_counter() - start,
                           verdict=verdict)
    except Exception as error:  # a claim that cannot be computed fails, with its reason shown
        detail = "".join(traceback.format_exception_only(type(error), error)).strip()
        return ClaimResult(claim, None, "error", False, time.perf_counter() - start, detail)


def _sections(claims: Iterable[Claim]) -> list[str]:
    names = {"Q" if claim.id.startswith("Q") else claim.id.split("-")[0] for claim in claims}
    order = {"D": _D_SECTION, "Q": _Q_SECTION}
    return sorted(names, key=lambda section: order.get(section, None) or int(section[1:]))


def _id_starts_with(claim_id: str, prefix: str) -> bool:
    """Whether ``claim_id`` starts with ``prefix`` and does not go on with a digit of the prefix's last number."""
    if not claim_id.startswith(prefix):
        return False
    rest = claim_id[len(prefix):]
    return not (prefix[-1].isdigit() and rest[:1].isdigit())


def verify(only: str | Iterable[str] | None = None, claims: Iterable[Claim] | None = None) -> list[ClaimResult]:
    """Evaluate the claims whose id starts with ``only`` (a prefix or several), or all.

    A prefix ends where a number ends: ``"S1"`` means section 1 (``S1-``), not ``S10-``, and
    ``"Q1"`` means Q1 (and its parts, such as ``Q1b``), not Q10 to Q14.

    Raises
    ------
    TypeError
        If ``only`` is not a non-empty string or sequence of them, or ``claims`` is not a
        sequence of [`Claim`][mlm_book.ledger.Claim] (checked before any claim is computed).
    ValueError
        If ``only`` matches no claim.

    Examples
    --------
    >>> results = verify(only="S2-16")
    >>> [(r.claim.id, r.passed) for r in results]
    [('S2-16', True)]
    >>> verify(only="S99")
    Traceback (most recent call last):
    ...
    ValueError: only='S99' matches no registered claim; the sections are S1, S2, S3, S4, S5, S6, S7, S8, S10, D, Q
    """
    # Arguments are checked before any claim runs: evaluating them all takes minutes.
    if only is not None:
        given = (only,) if isinstance(only, str) else tuple(check_sequence(only, "only"))
        if not given or not all(isinstance(prefix, str) and prefix for prefix in given):
            raise TypeError(f"only must be a non-empty string or strings, got {only!r}")
    given_claims = claims is not None
    if given_claims:
        claims = tuple(check_sequence(claims, "claims", of=Claim))
    claims = all_claims() if claims is None else claims
    if only is not None:
        selected = tuple(claim for claim in claims if any(_id_starts_with(claim.id, prefix) for prefix in given))
        if not selected:
            among = "none of the claims given" if given_claims else "no registered claim"
            raise ValueError(f"only={only!r} matches {among}; the sections are "
                             f"{', '.join(_sections(claims)) or 'none'}")
        claims = selected
    return [_evaluate(claim) for claim in claims]


def _escape(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _results(results) -> list[ClaimResult]:
    return check_sequence(results, "results", of=ClaimResult)


def to_markdown(results: Iterable[ClaimResult]) -> str:
    """A Markdown table of results: id, quantity, seed, book, rule, pass/fail.

    Raises
    ------
    TypeError
        If ``results`` is not a sequence of [`ClaimResult`][mlm_book.ledger.ClaimResult].

    Examples
    --------
    >>> print(to_markdown(verify(only="S2-16")).splitlines()[2])
    | S2-16 | Static cap for w on the HMM: max_k pi_k | 0.509 | 0.509 | = max(pi_a, pi_b) exactly; in [0.504, 0.514] | pass |
    """
    results = _results(results)
    lines = ["| id | quantity | seed | book | rule | verdict |", "|---|---|---|---|---|---|"]
    for result in results:
        claim = result.claim
        verdict = _verdict(result) if result.passed else f"**{_verdict(result)}**"
        lines.append(f"| {claim.id} | {_escape(claim.quantity)} | {_escape(claim.seed)} | "
                     f"{_escape(result.book)} | {_escape(claim.rule)} | {verdict} |")
    return "\n".join(lines)


def _verdict(result: ClaimResult) -> str:
    """The verdict cell: pass/FAIL, or for a claim measured over seeds its three-way verdict."""
    if result.error:
        return f"FAIL: {result.error}"
    claim = result.claim
    if claim.reported:
        return "reported"
    if result.verdict is None:
        return "pass" if result.passed else "FAIL"
    if claim.expected is not None:
        if result.passed:
            return result.verdict
        return f"FAIL: {result.verdict}, the book states {claim.expected}"
    return f"{'pass' if result.passed else 'FAIL'} on the book's seed; {result.verdict} over seeds"


def verdict_counts(results: Iterable[ClaimResult]) -> dict[str, int]:
    """How many claims are reproduced, seed-dependent, not reproduced, checked on one value, reported without a rule, failing.

    Raises
    ------
    TypeError
        If ``results`` is not a sequence of [`ClaimResult`][mlm_book.ledger.ClaimResult].

    Examples
    --------
    >>> verdict_counts(verify(only="S2-16"))
    {'reproduced': 0, 'seed-dependent': 0, 'not reproduced': 0, 'single value': 1, 'reported': 0, 'failing': 0}
    """
    results = _results(results)
    counts = dict.fromkeys((*VERDICTS, "single value", "reported", "failing"), 0)
    for result in results:
        if not result.passed:
            counts["failing"] += 1
        elif result.claim.reported:
            counts["reported"] += 1
        elif result.verdict is not None:
            counts[result.verdict] += 1
        else:
            counts["single value"] += 1
    return counts


_GREEK = {"alpha": "α", "beta": "β", "delta": "δ", "kappa": "κ", "lambda": "λ", "mu": "μ", "pi": "π", "rho": "ρ",
          "sigma": "σ", "tau": "τ"}
_SUBSCRIPT = re.compile(r"\b(" + "|".join(_GREEK) + r"|max|min|sum|[A-Za-z])_(?:\{([^{}]*)\}|([A-Za-z0-9]+))")
_SUPERSCRIPT = re.compile(r"\^(?:\{([^{}]*)\}|(-?[A-Za-z0-9α-ω]+))")
_GREEK_WORD = re.compile(r"\b(" + "|".join(_GREEK) + r")\b")


def typeset(text: str) -> str:
    """HTML for a claim's text, with its plain-text math set as symbols, subscripts and superscripts.

    Claims are written in plain text so that ``mlm-book verify`` prints them in a terminal;
    the Claims page and the chapters' summaries show them through this: ``>=`` and ``<=`` as
    ≥ and ≤, ``x_i`` and ``s_{i+1}`` with subscripts, ``E^T`` and ``2^10`` with superscripts,
    ``sqrt`` as √ and Greek names (``pi``, ``sigma``, ``lambda``, ...) as letters. Everything
    else is escaped.

    Raises
    ------
    TypeError
        If ``text`` is not a string.

    Examples
    --------
    >>> typeset("max_k pi_k >= 0.5, sigma_1^2 / sum_i sigma_i^2 < 2^10")
    'max<sub>k</sub> π<sub>k</sub> ≥ 0.5, σ<sub>1</sub><sup>2</sup> / sum<sub>i</sub> σ<sub>i</sub><sup>2</sup> &lt; 2<sup>10</sup>'
    >>> typeset("LN(x)E^T/sqrt(d) with s_{i+1}; mlm_book.lab.viz_payload")
    'LN(x)E<sup>T</sup>/√(d) with s<sub>i+1</sub>; mlm_book.lab.viz_payload'
    """
    check_instance(text, "text", str)
    for plain, symbol in ((">=", "≥"), ("<=", "≤"), ("!=", "≠"), ("sqrt(", "√("), ("||", "‖")):
        text = text.replace(plain, symbol)
    text = html.escape(text, quote=False)
    text = _SUBSCRIPT.sub(lambda m: f"{_GREEK.get(m.group(1), m.group(1))}<sub>{m.group(2) or m.group(3)}</sub>", text)
    text = re.sub(r"‖_(\w+)", r"‖<sub>\1</sub>", text)
    text = _SUPERSCRIPT.sub(lambda m: f"<sup>{m.group(1) or m.group(2)}</sup>", text)
    return _GREEK_WORD.sub(lambda m: _GREEK[m.group(1)], text)


_OVER_SEEDS = ("book", "mean ± sd", "seeds holding")


def _over_seeds_value(value: Any) -> bool:
    """Whether ``value`` is what [`over_seeds`][mlm_book.ledger.over_seeds] returns (a reported value drops its count)."""
    return isinstance(value, Mapping) and tuple(value)[:2] == _OVER_SEEDS[:2]


def _value_html(value: Any, fmt: str) -> str:
    """A value over seeds as lines (the book's seed, mean ± sd, how many hold); others as formatted."""
    if _over_seeds_value(value):
        lines = [f"{html.escape(_format(value['book'], fmt))} at the book's seed",
                 f"{html.escape(str(value['mean ± sd']))} (mean ± sd)"]
        if "seeds holding" in value:
            lines.append(f"{html.escape(str(value['seeds holding']))} seeds hold")
        if "margin" in value:
            lines.append(f"distance from the rule's threshold: {html.escape(str(value['margin']))}")
        lines += [f"{html.escape(str(key))} {html.escape(_format(item, fmt))}" for key, item in value.items()
                  if key not in (*_OVER_SEEDS, "margin")]
        return "<br>".join(lines)
    if isinstance(value, Mapping) and value and all(_over_seeds_value(item) for item in value.values()):
        return "<br>".join(f"<b>{html.escape(str(key))}</b>: {_value_html(item, fmt).replace('<br>', '; ')}"
                           for key, item in value.items())
    return html.escape(_format(value, fmt))


def verdict_text(counts: Mapping[str, int]) -> str:
    """[`verdict_counts`][mlm_book.ledger.verdict_counts] in words, leaving out the verdicts no claim got.

    Raises
    ------
    TypeError
        If ``counts`` is not a mapping, or a count is not an int.
    ValueError
        If a count ``verdict_counts`` gives is missing, or one is negative.

    Examples
    --------
    >>> verdict_text(verdict_counts(verify(only="S2-16")))
    '1 checked on a single value'
    """
    check_instance(counts, "counts", Mapping)
    needed = (*VERDICTS, "single value", "failing")
    missing = [key for key in needed if key not in counts]
    if missing:
        raise ValueError(f"counts must hold a count for each of {needed} (verdict_counts' keys), missing {missing}")
    counts = {key: check_positive_int(counts[key], f"counts[{key!r}]", minimum=0) for key in needed}
    parts = [f"{counts[v]} {v}" for v in VERDICTS if counts[v]]
    if counts["single value"]:
        parts.append(f"{counts['single value']} checked on a single value")
    if counts["failing"]:
        parts.append(f"{counts['failing']} failing")
    return ", ".join(parts) or "none"


def to_html(results: Iterable[ClaimResult], claims_page: str | None = None, chapter_page: str | None = None) -> str:
    """An HTML table of results: claim, quantity, reference, book, rule, verdict.

    The texts' plain-text math is typeset (see [`typeset`][mlm_book.ledger.typeset]); a value
    measured over training seeds shows the book's seed, the mean ± standard deviation and how
    many seeds hold, one to a line.

    Parameters
    ----------
    results : iterable of ClaimResult
    claims_page : str, optional
        URL of the Claims page. Given, each id links to its row there; omitted, each row
        carries its id as an HTML ``id``, so that such links land on it.
    chapter_page : str, optional
        URL of the page that makes the claims (their chapter's, or the lab's), for a table
        without ``claims_page``. Given, each id links to its claim's section there
        ([`Claim.section`][mlm_book.ledger.Claim]), or to the page itself for a claim
        without one.

    Raises
    ------
    TypeError
        If ``results`` is not a sequence of [`ClaimResult`][mlm_book.ledger.ClaimResult], or
        ``claims_page`` or ``chapter_page`` is neither None nor a string.
    ValueError
        If ``claims_page`` or ``chapter_page`` is empty, or both are given (an id links to
        one place).

    Examples
    --------
    >>> results = verify(only="S2-16")
    >>> '<tr id="S2-16">' in to_html(results)
    True
    >>> 'href="claims.html#S2-16"' in to_html(results, claims_page="claims.html")
    True
    >>> print(to_html(results, chapter_page="chapters/01_static_vectors.html").split("<tbody>")[1].split("</td>")[0])
    <tr id="S2-16"><td><a href="chapters/01_static_vectors.html#corollary-1-the-static-cap" title="Where the book makes claim S2-16">S2-16</a>
    >>> "max<sub>k</sub> π<sub>k</sub>" in to_html(results)
    True
    """
    results = _results(results)
    if claims_page is not None:
        _check_page(claims_page)
    if chapter_page is not None:
        _check_page(chapter_page, "chapter_page")
        if claims_page is not None:
            raise ValueError("give claims_page or chapter_page, not both: a claim's id links to one place")
    rows = ["<table><thead><tr><th>claim</th><th>quantity</th><th>reference</th><th>book</th><th>rule</th>"
            "<th>verdict</th></tr></thead><tbody>"]
    for result in results:
        claim = result.claim
        book = html.escape(result.book) if result.error else _value_html(result.value, claim.fmt)
        cells = [typeset(claim.quantity), typeset(claim.seed), book, typeset(claim.rule), html.escape(_verdict(result))]
        if claims_page is not None:
            row, first = "<tr>", f'<td><a href="{html.escape(claims_page)}#{claim.id}">{claim.id}</a></td>'
        elif chapter_page is not None:
            target = html.escape(chapter_page) + (f"#{claim.section}" if claim.section else "")
            row = f'<tr id="{claim.id}">'
            first = f'<td><a href="{target}" title="Where the book makes claim {claim.id}">{claim.id}</a></td>'
        else:
            row, first = f'<tr id="{claim.id}">', f"<td>{claim.id}</td>"
        rows.append(row + first + "".join(f"<td>{cell}</td>" for cell in cells) + "</tr>")
    rows.append("</tbody></table>")
    return "".join(rows)


@dataclass(frozen=True)
class ChapterSummary:
    """A chapter's claims in brief: counts by verdict, a link, and the table folded away.

    A notebook displays it as HTML (``_repr_html_``); ``str`` gives the sentence alone.

    Examples
    --------
    >>> claim = reported_value("S2-16", "Static cap for w on the HMM", "0.509", lambda: 0.509)
    >>> summary = ChapterSummary((ClaimResult(claim, 0.509, "0.509", True, 0.01),), "../claims.html")
    >>> summary.counts
    (1, 0)
    """

    results: tuple[ClaimResult, ...]
    claims_page: str

    def __post_init__(self):
        results = _results(self.results)
        if not results:
            raise ValueError("results must hold at least one ClaimResult")
        object.__setattr__(self, "results", tuple(results))  # frozen; a list would be shared with the caller
        _check_page(self.claims_page)

    @property
    def counts(self) -> tuple[int, int]:
        """(passed, failed)."""
        passed = sum(result.passed for result in self.results)
        return passed, len(self.results) - passed

    def __str__(self) -> str:
        counts = verdict_counts(self.results)
        reported = counts["reported"]
        total = len(self.results) - reported
        noun = "claim" if total == 1 else "claims"
        text = f"The book checks {total} {noun} of this chapter, each by a rule fixed in advance: {verdict_text(counts)}."
        if counts["failing"]:
            text += (f" {'The failing claim does' if counts['failing'] == 1 else 'The failing claims do'} not get "
                     "the verdict the chapter states, or could not be computed: the Claims page says which.")
        elif any(counts[v] for v in VERDICTS):
            text += " Each verdict is the one the chapter states."
        if reported:
            text += (f" {reported} more {'number is' if reported == 1 else 'numbers are'} reported beside the "
                     "published value with no rule, since any rule would hold by construction.")
        return text

    def _repr_html_(self) -> str:
        link = f'<a href="{html.escape(self.claims_page)}">Claims page</a>'
        return (f'<div class="claims-summary"><p>{html.escape(str(self))} The {link} lists every claim of the '
                "book with its rule and the published value it is compared with, if there is one.</p>"
                f"<details><summary>The chapter's claims, one by one</summary>"
                f'<div class="claims-table">{to_html(self.results, claims_page=self.claims_page)}</div>'
                f"</details></div>")


def chapter_summary(results: Iterable[ClaimResult], claims_page: str = "../claims.html") -> ChapterSummary:
    """The compact claims summary that ends a chapter (see [`ChapterSummary`][mlm_book.ledger.ChapterSummary]).

    Parameters
    ----------
    results : iterable of ClaimResult
        The chapter's claims, evaluated by [`verify`][mlm_book.ledger.verify].
    claims_page : str
        URL of the Claims page relative to the chapter's page.

    Examples
    --------
    >>> str(chapter_summary(verify(only="S2-16")))
    'The book checks 1 claim of this chapter, each by a rule fixed in advance: 1 checked on a single value.'
    """
    results = tuple(_results(results))
    if not results:
        raise ValueError("results must be a non-empty sequence of ClaimResult (from verify)")
    _check_page(claims_page)
    return ChapterSummary(results, claims_page)


def _check_page(page, name: str = "claims_page") -> str:
    if not isinstance(page, str):
        raise TypeError(f"{name} must be a URL string, got {type(page).__name__}")
    if not page:
        raise ValueError(f"{name} must be a non-empty URL string")
    return page


def to_text(results: Iterable[ClaimResult], wide: bool = False) -> str:
    """A plain-text table for the terminal, one claim a line, with a closing count.

    Long cells are cut with an ellipsis so that each row fits one line; the verdict column
    comes first so that it is never the part that is cut. With ``wide``, nothing is cut:
    each claim takes a block of lines (verdict and id, then the quantity, values and rule).

    Raises
    ------
    TypeError
        If ``results`` is not a sequence of [`ClaimResult`][mlm_book.ledger.ClaimResult] or
        ``wide`` is not a bool.

    Examples
    --------
    >>> print(to_text(verify(only="S2-16"), wide=True))
    pass  S2-16  Static cap for w on the HMM: max_k pi_k
          reference: 0.509
          book:      0.509
          rule:      = max(pi_a, pi_b) exactly; in [0.504, 0.514]
    1 passed, 0 failed
    """
    results = _results(results)
    wide = check_bool(wide, "wide")
    if wide:
        lines = []
        for result in results:
            claim = result.claim
            lines += [f"{'pass' if result.passed else 'FAIL'}  {claim.id}  {claim.quantity}",
                      f"      reference: {claim.seed}", f"      book:      {result.book}",
                      f"      rule:      {claim.rule}"]
            if result.verdict is not None:
                lines.append(f"      verdict:   {_verdict(result)}")
            if result.error:
                lines.append(f"      error:     {result.error}")
    else:
        rows = [("verdict", "id", "quantity", "seed", "book", "rule")]
        for result in results:
            claim = result.claim
            rows.append(("pass" if result.passed else "FAIL", claim.id, claim.quantity, claim.seed, result.book,
                         claim.rule))
        limits = (7, 7, 52, 18, 30, 50)

        def cell(text, limit):
            text = str(text).replace("\n", " ")
            return text if len(text) <= limit else text[: limit - 1] + "…"

        lines = ["  ".join(cell(text, limit).ljust(limit) for text, limit in zip(row, limits)).rstrip()
                 for row in rows]
        for result in results:
            if result.error:
                lines.append(f"{result.claim.id}: {result.error}")
    failed = sum(not result.passed for result in results)
    lines.append(f"{len(results) - failed} passed, {failed} failed")
    return "\n".join(lines)
