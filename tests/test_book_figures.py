"""Every figure the chapters show meets the book's style: drawn at most WIDE inches wide (so it
is displayed at the size it is drawn) and no text below MIN_FONT_SIZE points once rendered.

The figure functions are found by name in every experiments module (``figure_*``, ``plot_*``,
``*_figure``), so a new chapter's figures are checked without being listed here.
"""

from __future__ import annotations

import importlib
import inspect
import io
import pkgutil

import matplotlib
import numpy as np
import pytest

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.text import Text  # noqa: E402

import mlm_book.experiments  # noqa: E402
from mlm_book import figures  # noqa: E402

pytestmark = pytest.mark.book  # the figures read trained encoders and the skip-gram

# Named like figure functions but returning data: what each returns instead.
NOT_FIGURES = {
    "lab_figures.clouds_default": "the values the lab's Figure D shows by default (a dict; the lab draws it)",
}

# Functions that need data the chapter computes first: the arguments the chapter passes.
ARGUMENTS = {
    "figure_delta_histogram": lambda: {"families": {"one family": np.array([1e-3, 2e-2, 0.0, 5e-4])}},
    "figure_sentence": lambda: {"sentence": _chapter8().example_sentence(),
                                "keys": ("frozen/0/argmax", "crf/2/viterbi")},
}


def _chapter8():
    from mlm_book.experiments import ch09_spans
    return ch09_spans


def _figure_functions():
    found = []
    for info in pkgutil.iter_modules(mlm_book.experiments.__path__):
        module = importlib.import_module(f"mlm_book.experiments.{info.name}")
        for name, function in inspect.getmembers(module, inspect.isfunction):
            if function.__module__ == module.__name__ and (name.startswith(("figure_", "plot_"))
                                                           or name.endswith("_figure")) \
                    and f"{info.name}.{name}" not in NOT_FIGURES:
                found.append(pytest.param(function, id=f"{info.name}.{name}"))
    return found


def test_the_figures_are_found():
    assert len(_figure_functions()) >= 10


@pytest.mark.parametrize("function", _figure_functions())
def test_every_book_figure_is_drawn_at_page_size_with_legible_text(function):
    fig = function(**ARGUMENTS.get(function.__name__, dict)())
    if isinstance(fig, figures.DescribedFigure):  # its alt text and caption were checked when it was made
        fig = fig.figure
    assert isinstance(fig, matplotlib.figure.Figure), f"returns {type(fig).__name__}: add it to NOT_FIGURES with why"
    with figures.style():  # ticks and legends are laid out while rendering, inside the style
        fig.savefig(io.BytesIO(), format="svg")
    width, _ = fig.get_size_inches()
    small = sorted({(round(text.get_fontsize(), 1), text.get_text()[:40]) for text in fig.findobj(Text)
                    if text.get_visible() and text.get_text().strip() and text.get_fontsize() < figures.MIN_FONT_SIZE})
    plt.close(fig)
    assert width <= figures.WIDE + 1e-9, f"{width} in wide: it would be shown smaller than drawn"
    assert not small, f"text below {figures.MIN_FONT_SIZE} pt: {small[:5]}"
