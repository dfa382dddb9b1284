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

import importlib
import pkgutil
import re
import time
import traceback
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = ["Claim", "ClaimResult", "all_claims", "verify", "format_value", "to_markdown", "to_text"]

_ID_PATTERN = re.compile(r"^S(\d+)-(W?\d+)$")


def format_value(value: Any, fmt: str = ".3f") -> str:
    """Render a claim's value: numbers with ``fmt``, sequences and mappings element-wise.

    Examples
    --------
    >>> format_value(0.50912)
    '0.509'
    >>> format_value({"mask": 0.0213, "kept": 0.04}, ".2f")
    'mask 0.02, kept 0.04'
    >>> format_value((1e-14, 3), ".1e")
    '1.0e-14 / 3'
    >>> format_value(True)
    'yes'
    """
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return format(value, fmt)
    if isinstance(value, Mapping):
        return ", ".join(f"{key} {format_value(item, fmt)}" for key, item in value.items())
    if isinstance(value, (tuple, list)):
        return " / ".join(format_value(item, fmt) for item in value)
    try:
        return format(float(value), fmt)
    except (TypeError, ValueError):
        return str(value)


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
    """

    id: str
    quantity: str
    seed: str
    rule: str
    compute: Callable[[], Any] = field(repr=False)
    accept: Callable[[Any], bool] = field(repr=False)
    fmt: str = ".3f"

    def __post_init__(self):
        if not _ID_PATTERN.match(self.id):
            raise ValueError(f"id must look like 'S2-16', got {self.id!r}")
        if not callable(self.compute) or not callable(self.accept):
            raise TypeError("compute and accept must be callable")

    @property
    def sort_key(self) -> tuple[int, int, str]:
        section, number = _ID_PATTERN.match(self.id).groups()
        return (int(section), int(number.lstrip("W") or 0), number)


@dataclass(frozen=True)
class ClaimResult:
    """The outcome of evaluating one [`Claim`][mlm_book.ledger.Claim]."""

    claim: Claim
    value: Any
    book: str
    passed: bool
    seconds: float
    error: str | None = None


def all_claims(package: str = "mlm_book.experiments") -> tuple[Claim, ...]:
    """Every claim declared in the modules of ``package``, sorted by id; ids must be unique.

    Examples
    --------
    >>> claims = all_claims()
    >>> len({claim.id for claim in claims}) == len(claims)
    True
    """
    module = importlib.import_module(package)
    found: dict[str, Claim] = {}
    for info in sorted(pkgutil.iter_modules(module.__path__), key=lambda item: item.name):
        submodule = importlib.import_module(f"{package}.{info.name}")
        for claim in getattr(submodule, "CLAIMS", ()):
            if not isinstance(claim, Claim):
                raise TypeError(f"{package}.{info.name}.CLAIMS must hold Claim objects")
            if claim.id in found:
                raise ValueError(f"claim {claim.id} is declared twice")
            found[claim.id] = claim
    return tuple(sorted(found.values(), key=lambda claim: claim.sort_key))


def _evaluate(claim: Claim) -> ClaimResult:
    start = time.perf_counter()
    try:
        value = claim.compute()
        passed = bool(claim.accept(value))
        return ClaimResult(claim, value, format_value(value, claim.fmt), passed, time.perf_counter() - start)
    except Exception as error:  # a claim that cannot be computed fails, with its reason shown
        detail = "".join(traceback.format_exception_only(type(error), error)).strip()
        return ClaimResult(claim, None, "error", False, time.perf_counter() - start, detail)


def verify(only: str | Iterable[str] | None = None, claims: Iterable[Claim] | None = None) -> list[ClaimResult]:
    """Evaluate the claims whose id starts with ``only`` (a prefix or several), or all.

    Examples
    --------
    >>> results = verify(only="S2-16")
    >>> [(r.claim.id, r.passed) for r in results]
    [('S2-16', True)]
    """
    claims = all_claims() if claims is None else tuple(claims)
    if only is not None:
        prefixes = (only,) if isinstance(only, str) else tuple(only)
        claims = tuple(claim for claim in claims if claim.id.startswith(prefixes))
        if not claims:
            raise ValueError(f"only={only!r} matches no registered claim")
    return [_evaluate(claim) for claim in claims]


def _escape(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def to_markdown(results: Iterable[ClaimResult]) -> str:
    """A Markdown table of results: id, quantity, seed, book, rule, pass/fail."""
    lines = ["| id | quantity | seed | book | rule | verdict |", "|---|---|---|---|---|---|"]
    for result in results:
        claim = result.claim
        verdict = "pass" if result.passed else f"**FAIL**{': ' + _escape(result.error) if result.error else ''}"
        lines.append(f"| {claim.id} | {_escape(claim.quantity)} | {_escape(claim.seed)} | "
                     f"{_escape(result.book)} | {_escape(claim.rule)} | {verdict} |")
    return "\n".join(lines)


def to_text(results: Iterable[ClaimResult]) -> str:
    """A plain-text table for the terminal, one claim a line, with a closing count.

    Long cells are cut with an ellipsis so that each row fits one line; the verdict column
    comes first so that it is never the part that is cut.
    """
    results = list(results)
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
