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

from mlm_book.validation import check_sequence

__all__ = ["Markdown", "table", "Answer", "answer"]


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


def _cell(value, fmt: str | None) -> str:
    if fmt is not None and isinstance(value, (int, float)) and not isinstance(value, bool):
        text = format(value, fmt)
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
