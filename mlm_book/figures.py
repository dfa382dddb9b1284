r"""The book's figure style: sizes, fonts, a colour-blind-safe palette, SVG with alt text.

Every figure of the book is made with [`subplots`][mlm_book.figures.subplots] and shown
with [`show`][mlm_book.figures.show], so that all of them share one look and one set of
guarantees:

* **Sizes** are in inches of the page: [`WIDE`][mlm_book.figures.WIDE] spans the content
  column of a 1280-pixel screen, [`NARROW`][mlm_book.figures.NARROW] about two thirds of it.
  A figure is drawn at the size it is displayed (SVG, 96 CSS pixels per inch), so a
  9-point label is 9 points on the page, not a scaled-down bitmap.
* **Text** is at least [`MIN_FONT_SIZE`][mlm_book.figures.MIN_FONT_SIZE] points, and
  symbols use mathtext (``r"$\pi_a$"``), never a Unicode approximation of TeX.
* **Colours** come from Okabe and Ito's palette ([`PALETTE`][mlm_book.figures.PALETTE]),
  which stays distinguishable under the common colour-vision deficiencies.
* **Alt text** is required: [`show`][mlm_book.figures.show] refuses a figure without a
  description of what it shows, and writes it into the image's ``alt``; the caption, if
  any, is printed under the figure.

Nothing here changes matplotlib's global settings: the style is applied with
``matplotlib.rc_context`` around the drawing and the rendering.

Examples
--------
>>> fig, ax = subplots(width=NARROW, height=2.0)
>>> _ = ax.plot([0, 1], [0, 1], label="a line")
>>> html = show(fig, alt="A rising straight line.")._repr_html_()
>>> html.startswith("<figure") and 'alt="A rising straight line."' in html
True
"""

from __future__ import annotations

import base64
import contextlib
import html
import io
import re
from collections.abc import Iterator
from dataclasses import dataclass

from cycler import cycler  # matplotlib's own dependency

__all__ = ["WIDE", "NARROW", "MIN_FONT_SIZE", "PALETTE", "SENSE_COLORS", "STYLE", "style", "subplots",
           "svg_bytes", "FigureHTML", "DescribedFigure", "describe", "show"]

WIDE = 8.8
"""Width in inches of a figure that spans the content column (about 845 CSS pixels)."""
NARROW = 6.4
"""Width in inches of a figure that needs less than the column (about 615 CSS pixels)."""
MIN_FONT_SIZE = 9.0
"""The smallest font size, in points, that any text of a figure may have."""

PALETTE = {
    "blue": "#0072B2",
    "orange": "#E69F00",
    "green": "#009E73",
    "vermillion": "#D55E00",
    "purple": "#CC79A7",
    "sky": "#56B4E9",
    "yellow": "#F0E442",
    "black": "#000000",
    "grey": "#7F7F7F",
}
"""Okabe and Ito's colour-blind-safe palette, by name."""

SENSE_COLORS = (PALETTE["blue"], PALETTE["orange"])
"""The colour of each sense of $w$ (regime a, regime b), used by every chapter."""

STYLE = {
    "font.size": 10.0,
    "axes.titlesize": 10.0,
    "axes.labelsize": 10.0,
    "xtick.labelsize": MIN_FONT_SIZE,
    "ytick.labelsize": MIN_FONT_SIZE,
    "legend.fontsize": MIN_FONT_SIZE,
    "legend.title_fontsize": MIN_FONT_SIZE,
    "figure.titlesize": 11.0,
    "font.family": "DejaVu Sans",
    "mathtext.fontset": "dejavusans",
    "axes.prop_cycle": cycler(color=[PALETTE[name] for name in
                                     ("blue", "orange", "green", "vermillion", "purple", "sky", "black")]),
    "axes.spines.top": False,
    "axes.spines.right": False,
    "axes.grid": False,
    "legend.frameon": False,
    "lines.linewidth": 1.5,
    "figure.constrained_layout.use": True,
    "figure.dpi": 96,
    "savefig.dpi": 200,  # bitmaps inside an SVG (heatmaps) at twice the screen's density
    "svg.fonttype": "path",  # text as outlines: the page needs no fonts
    "svg.hashsalt": "mlm-book",  # stable element ids, so a rebuild gives the same file
    "image.cmap": "viridis",
}
"""matplotlib settings applied while a book figure is drawn and rendered."""


@contextlib.contextmanager
def style() -> Iterator[None]:
    """Apply [`STYLE`][mlm_book.figures.STYLE] inside a ``with`` block (matplotlib's rc_context).

    Examples
    --------
    >>> import matplotlib
    >>> with style():
    ...     matplotlib.rcParams["xtick.labelsize"] >= MIN_FONT_SIZE
    True
    """
    import matplotlib

    with matplotlib.rc_context(STYLE):
        yield


def subplots(nrows: int = 1, ncols: int = 1, *, width: float = WIDE, height: float = 3.6, **kwargs):
    """A figure and its axes in the book's style, ``width`` x ``height`` inches on the page.

    Parameters
    ----------
    nrows, ncols : int
        Grid of axes, as for ``matplotlib.pyplot.subplots``.
    width, height : float
        Size on the page in inches (``WIDE`` spans the content column).
    **kwargs
        Passed to ``matplotlib.pyplot.subplots`` (``sharey``, ``gridspec_kw``, ...).

    Returns
    -------
    (matplotlib.figure.Figure, axes)

    Raises
    ------
    ValueError
        If ``width`` or ``height`` is not a positive number of at most 12 inches.
    """
    import matplotlib.pyplot as plt

    for name, value in (("width", width), ("height", height)):
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value <= 12:
            raise ValueError(f"{name} must be a number of inches in (0, 12], got {value!r}")
    for name, value in (("nrows", nrows), ("ncols", ncols)):
        if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= 6:
            raise ValueError(f"{name} must be an integer from 1 to 6 (the book draws at most two panels a row), "
                             f"got {value!r}")
    with style():
        return plt.subplots(nrows, ncols, figsize=(width, height), **kwargs)


def svg_bytes(fig) -> bytes:
    """Render ``fig`` as SVG in the book's style, without a date, and close it.

    Closing matters in a notebook: a figure still open at the end of a cell would be shown
    a second time, as a bitmap without alt text, by the inline backend.

    Examples
    --------
    >>> from matplotlib.figure import Figure
    >>> svg = svg_bytes(Figure(figsize=(1.0, 1.0)))
    >>> svg.startswith(b"<?xml"), b"<dc:date>" in svg
    (True, False)
    """
    import matplotlib.pyplot as plt
    from matplotlib.figure import Figure

    if not isinstance(fig, Figure):
        raise TypeError(f"fig must be a matplotlib Figure, got {type(fig).__name__}")
    buffer = io.BytesIO()
    with style():
        fig.savefig(buffer, format="svg", metadata={"Date": None})
    plt.close(fig)
    return buffer.getvalue()


_SVG_SIZE = re.compile(rb'<svg[^>]*?width="([\d.]+)pt"[^>]*?height="([\d.]+)pt"')


@dataclass(frozen=True)
class FigureHTML:
    """A rendered figure with its alt text and caption; a notebook shows it as HTML.

    Attributes
    ----------
    svg : bytes
        The figure as SVG.
    alt : str
        Plain-text description of what the figure shows (the image's ``alt``).
    caption : str
        Text under the figure (may hold ``$...$`` math, typeset by the page).

    Examples
    --------
    >>> shown = FigureHTML(b'<svg width="300pt" height="150pt"></svg>', "An empty drawing.", "")
    >>> shown.size_px
    (400.0, 200.0)
    """

    svg: bytes
    alt: str
    caption: str

    def __post_init__(self):
        if not isinstance(self.svg, bytes) or b"<svg" not in self.svg:
            raise TypeError("svg must be the bytes of an SVG document")
        if not isinstance(self.alt, str) or not isinstance(self.caption, str):
            raise TypeError("alt and caption must be strings")

    @property
    def size_px(self) -> tuple[float, float]:
        """Width and height in CSS pixels (96 per inch) at which the figure is drawn."""
        match = _SVG_SIZE.search(self.svg)
        if match is None:
            raise ValueError("the SVG declares no width and height in points")
        return float(match.group(1)) * 4 / 3, float(match.group(2)) * 4 / 3

    def _repr_html_(self) -> str:
        width, _ = self.size_px
        data = base64.b64encode(self.svg).decode("ascii")
        caption = f"<figcaption>{html.escape(self.caption, quote=False)}</figcaption>" if self.caption else ""
        return (f'<figure class="book-figure"><img src="data:image/svg+xml;base64,{data}" '
                f'alt="{html.escape(self.alt)}" width="{width:.0f}" style="max-width: 100%; height: auto">'
                f"{caption}</figure>")


def _checked_text(alt, caption) -> tuple[str, str]:
    if not isinstance(alt, str) or not isinstance(caption, str):
        raise TypeError("alt and caption must be strings")
    alt = " ".join(alt.split())
    if len(alt) < 20 or "$" in alt:
        raise ValueError(f"alt must describe the figure in plain text (at least 20 characters, no '$'), got {alt!r}")
    return alt, " ".join(caption.split())


@dataclass(frozen=True)
class DescribedFigure:
    """A figure with the words that go with it: what a figure function of the book returns.

    The function that draws a figure knows its data, so it writes the alt text (computed from
    that data) and the caption too, and a chapter shows the result with
    ``show(module.figure_name())``. Made by [`describe`][mlm_book.figures.describe].

    Attributes
    ----------
    figure : matplotlib.figure.Figure
        The drawing.
    alt : str
        What the figure shows, in plain text.
    caption : str
        Printed under the figure; may hold ``$...$`` math.

    Examples
    --------
    >>> from matplotlib.figure import Figure
    >>> drawn = DescribedFigure(Figure(figsize=(1.0, 1.0)), "An empty drawing with no axes.", "Nothing yet.")
    >>> drawn.caption
    'Nothing yet.'
    """

    figure: object
    alt: str
    caption: str = ""

    def __post_init__(self):
        from matplotlib.figure import Figure

        if not isinstance(self.figure, Figure):
            raise TypeError(f"figure must be a matplotlib Figure, got {type(self.figure).__name__}")
        alt, caption = _checked_text(self.alt, self.caption)
        object.__setattr__(self, "alt", alt)
        object.__setattr__(self, "caption", caption)


def describe(fig, alt: str, caption: str = "") -> DescribedFigure:
    """``fig`` with its alt text and caption, checked as [`show`][mlm_book.figures.show] checks them.

    Raises
    ------
    TypeError
        If ``fig`` is not a matplotlib figure, or ``alt`` or ``caption`` is not a string.
    ValueError
        If ``alt`` is shorter than 20 characters or contains ``$``.

    Examples
    --------
    >>> fig, ax = subplots(width=NARROW, height=2.0)
    >>> _ = ax.plot([0, 1], [0, 1])
    >>> drawn = describe(fig, alt="A rising straight line from (0, 0) to (1, 1).", caption="A line.")
    >>> show(drawn).alt, show(drawn).caption
    ('A rising straight line from (0, 0) to (1, 1).', 'A line.')
    """
    return DescribedFigure(fig, alt, caption)


def show(fig, alt: str | None = None, caption: str | None = None) -> FigureHTML:
    """The figure as the book shows it: SVG at its page size, ``alt`` text and a caption.

    Parameters
    ----------
    fig : matplotlib.figure.Figure or DescribedFigure
        The figure; a [`DescribedFigure`][mlm_book.figures.DescribedFigure] brings its own
        alt text and caption. It is closed once rendered.
    alt : str
        What the figure shows, in plain text (no ``$``: screen readers read it aloud). At
        least 20 characters: a description, not a title. Required for a bare figure, refused
        for a described one.
    caption : str, optional
        Printed under the figure; may hold ``$...$`` math.

    Returns
    -------
    FigureHTML
        Displayed by a notebook as a ``<figure>`` with the image and its caption.

    Raises
    ------
    TypeError
        If ``alt`` or ``caption`` is not a string, ``fig`` is neither a matplotlib figure nor
        a described one, a bare figure comes without ``alt``, or a described one with ``alt``
        or ``caption`` besides its own.
    ValueError
        If ``alt`` is shorter than 20 characters or contains ``$``.
    """
    from matplotlib.figure import Figure

    if isinstance(fig, DescribedFigure):
        if alt is not None or caption is not None:
            raise TypeError("a DescribedFigure brings its own alt and caption: pass neither")
        return FigureHTML(svg_bytes(fig.figure), fig.alt, fig.caption)
    if not isinstance(fig, Figure):
        raise TypeError(f"fig must be a matplotlib Figure or a DescribedFigure, got {type(fig).__name__}")
    if alt is None:
        raise TypeError("alt is required for a bare figure: describe what it shows")
    alt, caption = _checked_text(alt, "" if caption is None else caption)
    return FigureHTML(svg_bytes(fig), alt, caption)
