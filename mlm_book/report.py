r"""What a chapter displays besides figures: result tables, computed prose and exercise answers.

A chapter computes with the package and displays the result with one of these, so that a
table is a table (not ``print`` output), a sentence built from computed numbers reads as
body text, and an exercise's answer is folded until the reader opens it. Each returns a
small object that a notebook renders by itself (``_repr_markdown_`` or ``_repr_html_``);
the package needs no IPython.

Examples
--------
>>> print(table(["layer", "accuracy"], [[0, 0.5125], [1, 0.93]], formats=[None, ".3f"]))
| layer | accuracy |
|---|---|
| 0 | 0.512 |
| 1 | 0.930 |
>>> "<details" in answer("The cap is **0.52**.")._repr_html_()
True
"""

from __future__ import annotations

import html
import re
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from mlm_book.validation import as_float_array, check_bool, check_format, check_real, check_sequence

__all__ = ["Markdown", "table", "ROUNDING", "residual", "seed_band", "seed_words", "Answer", "answer"]


class Markdown(str):
    """Markdown text that a notebook renders (as body text when its cell hides its input).

    Raises
    ------
    TypeError
        If ``text`` is not a string (``str`` would silently print ``None`` or an object's repr).

    Examples
    --------
    >>> text = Markdown("The cap is **0.509**.")
    >>> text._repr_markdown_(), text.upper() == "THE CAP IS **0.509**."
    ('The cap is **0.509**.', True)
    """

    def __init__(self, text: str = ""):
        # str.__new__ has already made the string; this only refuses what is not text.
        if not isinstance(text, str):
            raise TypeError(f"text must be a string of Markdown, got {type(text).__name__}")
        super().__init__()

    def _repr_markdown_(self) -> str:
        return str(self)


ROUNDING = 1e-12
"""Below this size a number in a ``"residual"`` column is rounding, and the table says so in words."""


def _residual_format(fmt: str) -> str | None:
    """The number format of a ``"residual"`` format (``".1e"``, or what follows ``"residual:"``); None for another."""
    if fmt == "residual":
        return ".1e"
    return fmt[len("residual:"):] if fmt.startswith("residual:") else None


def residual(value, fmt: str = ".1e") -> str:
    """A number that should be zero up to floating-point rounding, in words when it is.

    An identity's error or the gap between two exact computations prints as ``"0 exactly"``
    when it is zero and ``"0 to rounding"`` below [`ROUNDING`][mlm_book.report.ROUNDING];
    anything larger is a number, formatted with ``fmt``, so that a real error shows.

    Parameters
    ----------
    value : float
        A finite number.
    fmt : str
        The format of a number at or above ``ROUNDING`` (a float format specification).

    Raises
    ------
    TypeError
        If ``value`` is not a real number or ``fmt`` is not a str.
    ValueError
        If ``value`` is NaN or infinite, or ``fmt`` cannot format a float.

    Examples
    --------
    >>> residual(0.0), residual(-2.2e-16), residual(3e-9), residual(5.8e-5, ".2e")
    ('0 exactly', '0 to rounding', '3.0e-09', '5.80e-05')
    """
    value = check_real(value, "value")
    fmt = check_format(fmt, "fmt")
    if value == 0:
        return "0 exactly"
    return "0 to rounding" if abs(value) < ROUNDING else format(value, fmt)


def _cell(value, fmt: str | None) -> str:
    if fmt is not None and isinstance(value, (int, float)) and not isinstance(value, bool):
        spec = _residual_format(fmt)
        text = residual(float(value), spec) if spec is not None else format(value, fmt)
    else:
        text = str(value)
    return text.replace("|", "\\|").replace("\n", " ")


def table(header: Sequence[str], rows: Sequence[Sequence], formats: Sequence[str | None] | None = None) -> Markdown:
    """A Markdown table; numbers are formatted per column with ``formats``.

    Parameters
    ----------
    header : sequence of str
        Column titles.
    rows : sequence of sequences
        One sequence per row, as long as ``header``.
    formats : sequence of (str or None), optional
        A format spec per column for numbers (``".3f"``, ``".1e"``); ``None`` uses ``str``.
        ``"residual"`` is for a check that should come out zero: ``"0 exactly"``, ``"0 to
        rounding"`` below [`ROUNDING`][mlm_book.report.ROUNDING], else the number as ``".1e"``
        (``"residual:.2e"``: as ``".2e"``); see [`residual`][mlm_book.report.residual].

    Returns
    -------
    Markdown

    Raises
    ------
    TypeError
        If ``header``, ``rows``, a row or ``formats`` is not a sequence, or a format is not a string.
    ValueError
        If ``header`` is empty, or a row or ``formats`` is not as long as ``header``.

    Examples
    --------
    >>> print(table(["model", "loss"], [["static", 1.234]], formats=[None, ".1f"]))
    | model | loss |
    |---|---|
    | static | 1.2 |
    >>> print(table(["check", "largest difference"], [["a", 0.0], ["b", 2.2e-16], ["c", 3e-9]],
    ...             formats=[None, "residual"]).splitlines()[2:])
    ['| a | 0 exactly |', '| b | 0 to rounding |', '| c | 3.0e-09 |']
    >>> print(table(["cycles", "median abs(δ)"], [["compatible", 2.2e-16], ["not", 1.32e-5]],
    ...             formats=[None, "residual:.2e"]).splitlines()[2:])
    ['| compatible | 0 to rounding |', '| not | 1.32e-05 |']
    """
    header = [str(title) for title in check_sequence(header, "header")]
    if not header:
        raise ValueError("header must name at least one column")
    formats = [None] * len(header) if formats is None else check_sequence(formats, "formats")
    if any(fmt is not None and not isinstance(fmt, str) for fmt in formats):
        raise TypeError("formats must hold format specifications (str) or None")
    rows = check_sequence(rows, "rows")
    if len(formats) != len(header):
        raise ValueError(f"formats must have {len(header)} entries (one per column of header), got {len(formats)}")
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for number, row in enumerate(rows):
        row = check_sequence(row, f"rows[{number}]")
        if len(row) != len(header):
            raise ValueError(f"rows[{number}] has {len(row)} cells, expected {len(header)} (one per header column)")
        lines.append("| " + " | ".join(_cell(value, fmt) for value, fmt in zip(row, formats)) + " |")
    return Markdown("\n".join(lines))


_BOLD = re.compile(r"\*\*(.+?)\*\*")
_ITALIC = re.compile(r"(?<![*\w])\*(?!\s)(.+?)(?<!\s)\*(?![*\w])")
_CODE = re.compile(r"`([^`]+)`")


def _per_seed(values, fmt: str) -> np.ndarray:
    """``values`` as one finite float per seed (at least two), with ``fmt`` checked: what both seed formatters take."""
    array = as_float_array(check_sequence(values, "values"), "values", ndim=1)
    if array.size < 2:
        raise ValueError(f"values must hold one number per seed, at least two, got {array.size}")
    if not np.all(np.isfinite(array)):
        raise ValueError("values must be finite")
    check_format(fmt, "fmt")
    return array


def seed_band(values, fmt: str = ".3f", *, book: bool = True, signed: bool = False, with_range: bool = False) -> str:
    """One per-seed number as the book prints it: ``"book (mean ± sd)"``, the book's seed first.

    Every learned number in the book is measured at each training seed; a table cell shows the
    book's seed's value (the first of ``values``) and, in brackets, the mean and sample
    standard deviation over all of them. When every seed prints the same, the cell says so
    (``"1.000 at every seed"``) instead of showing a band of width zero.

    Parameters
    ----------
    values : sequence of float, shape (seeds,)
        One value per seed, the book's seed first; at least two.
    fmt : str
        Format of every number.
    book : bool
        Lead with the book's seed's value (``False``: ``"mean ± sd"`` alone).
    signed : bool
        Print the sign of the book's value and of the mean (for differences).
    with_range : bool
        Append the smallest and largest value, ``"(min–max)"``.

    Raises
    ------
    TypeError
        If ``values`` does not hold real numbers, or a flag is not a bool.
    ValueError
        If ``values`` holds fewer than two numbers or a NaN or infinity, or ``fmt`` is no float format.

    Examples
    --------
    >>> seed_band([0.5, 0.7, 0.6])
    '0.500 (0.600 ± 0.100)'
    >>> seed_band([0.5, 0.7, 0.6], ".2f", book=False, with_range=True)
    '0.60 ± 0.10 (0.50–0.70)'
    >>> seed_band([-0.5, 0.7, 0.6], signed=True)
    '-0.500 (+0.267 ± 0.666)'
    >>> seed_band([0.99991, 1.0, 0.99998])
    '1.000 at every seed'
    """
    array = _per_seed(values, fmt)
    book, signed, with_range = (check_bool(flag, name) for flag, name in
                                ((book, "book"), (signed, "signed"), (with_range, "with_range")))
    lead = f"{{:{'+' if signed else ''}{fmt}}}".format
    if len({lead(value) for value in array}) == 1:  # a band of zero width says less than the words do
        return f"{lead(array[0])} at every seed"
    spread = f"{lead(array.mean())} ± {array.std(ddof=1):{fmt}}"
    text = f"{lead(array[0])} ({spread})" if book else spread
    return text + (f" ({array.min():{fmt}}–{array.max():{fmt}})" if with_range else "")


def seed_words(values, fmt: str = ".3f", unit: str = "") -> str:
    """One per-seed number as prose gives it: the book's seed's value, and how far the seeds spread.

    A sentence cannot carry a band inside a band: it gives the book's seed's value and, when
    the seeds do not all print the same, the smallest and largest of them. The mean and
    standard deviation stay in the tables ([`seed_band`][mlm_book.report.seed_band]).

    Parameters
    ----------
    values : sequence of float, shape (seeds,)
        One value per seed, the book's seed first; at least two.
    fmt : str
        Format of every number.
    unit : str
        Written after the book's value (``"nats"``), before the seeds' range.

    Raises
    ------
    TypeError
        If ``values`` does not hold real numbers, or ``unit`` is not a str.
    ValueError
        If ``values`` holds fewer than two numbers or a NaN or infinity, or ``fmt`` is no float format.

    Examples
    --------
    >>> seed_words([0.9912, 0.9908, 0.9911])
    '0.991 at every seed'
    >>> seed_words([0.686, 0.404, 0.8, 0.55, 0.61])
    '0.686 (seeds 0.404 to 0.800)'
    >>> seed_words([1.4e-6, 4.9e-6, 1.3e-6], ".1e", unit="nats")
    '1.4e-06 nats (seeds 1.3e-06 to 4.9e-06)'
    """
    array = _per_seed(values, fmt)
    if not isinstance(unit, str):
        raise TypeError(f"unit must be a str, got {type(unit).__name__}")
    printed = [f"{value:{fmt}}" for value in array]
    lead = f"{printed[0]} {unit}".rstrip()
    if len(set(printed)) == 1:
        return f"{lead} at every seed"
    return f"{lead} (seeds {array.min():{fmt}} to {array.max():{fmt}})"


def _inline(text: str) -> str:
    text = html.escape(text, quote=False)
    text = _CODE.sub(r"<code>\1</code>", text)
    text = _BOLD.sub(r"<strong>\1</strong>", text)
    return _ITALIC.sub(r"<em>\1</em>", text)


@dataclass(frozen=True)
class Answer:
    """An exercise's answer, folded in a ``<details>`` element until the reader opens it.

    Attributes
    ----------
    text : str
        Paragraphs separated by blank lines; ``**bold**``, ``*italic*``, ```code``` and
        ``$...$`` math (typeset by the page) are understood.

    Examples
    --------
    >>> Answer("The cap is **0.52**.")._repr_html_().endswith("<p>The cap is <strong>0.52</strong>.</p></details>")
    True
    """

    text: str

    def __post_init__(self):
        if not isinstance(self.text, str):
            raise TypeError(f"text must be a string, got {type(self.text).__name__}")
        if not self.text.strip():
            raise ValueError("text must not be blank")

    def _repr_html_(self) -> str:
        paragraphs = [" ".join(part.split()) for part in re.split(r"\n\s*\n", self.text.strip())]
        body = "".join(f"<p>{_inline(part)}</p>" for part in paragraphs if part)
        return f'<details class="exercise-answer"><summary>Answer</summary>{body}</details>'


def answer(text: str) -> Answer:
    """The folded answer to an exercise, written from numbers the package computed.

    Parameters
    ----------
    text : str
        See [`Answer`][mlm_book.report.Answer].

    Raises
    ------
    TypeError
        If ``text`` is not a string.
    ValueError
        If ``text`` is blank.
    """
    return Answer(text)
