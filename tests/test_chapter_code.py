"""A reader can rerun the code a chapter shows: every name a visible cell uses is defined in a visible cell.

A cell tagged ``hide-input`` shows only its output on the page; its code is not shown. If a
visible cell used a name bound only inside such a hidden cell, a reader copying the code they
see would get a ``NameError`` at that name, with nothing on the page saying where it came from.
So, for every chapter: each name that a visible code cell loads from the module (global) scope
must be a builtin or be bound at module level (assignment, import, ``def``/``class``, loop or
``with`` target, ...) by a visible code cell at or before it.

Nothing is executed. Each chapter is split into cells at its ``# %%`` markers (jupytext's percent
format) and each visible cell's scopes come from Python's own :mod:`symtable`, so comprehension
variables, ``lambda`` and ``def`` parameters and a function's own locals count as bound where
Python binds them. A name a function body reads from the module counts as used by the cell that
defines the function. Names bound anywhere in a cell count for the whole cell (the test checks
what the page shows, not the order of lines within a cell). The chapters use no ``global``.
"""

from __future__ import annotations

import builtins
import re
import symtable
from pathlib import Path

import pytest

CHAPTERS = sorted((Path(__file__).resolve().parents[1] / "chapters").glob("[0-9][0-9]_*.py"))
_MARKER = re.compile(r"^# %%(?P<rest>.*)$")

# (chapter, name) pairs allowed to break the rule, each with why; none is today. Any other pair fails the test.
ALLOWED_HIDDEN_NAMES: dict[tuple[str, str], str] = {}


def code_cells(text: str) -> list[tuple[int, bool, str]]:
    """``(line, visible, source)`` of each code cell of a percent-format script, in order.

    ``line`` is the 1-based line of the cell's ``# %%`` marker; a cell is visible unless its
    marker carries the ``hide-input`` tag; Markdown (``# %% [markdown]``) cells are skipped.
    """
    cells: list[tuple[int, bool, str]] = []
    lines = text.splitlines()
    starts = [k for k, line in enumerate(lines) if _MARKER.match(line)] + [len(lines)]
    for start, end in zip(starts, starts[1:]):
        rest = _MARKER.match(lines[start]).group("rest")
        if "[" in rest.split("tags=")[0]:        # [markdown], [raw]: not code
            continue
        cells.append((start + 1, '"hide-input"' not in rest, "\n".join(lines[start + 1:end])))
    return cells


def _module_names(source: str, filename: str) -> tuple[set[str], set[str]]:
    """Names ``source`` binds at module level, and names it reads from module (global) scope.

    A name read inside a function, lambda, class body or comprehension counts when that scope
    does not bind it and no enclosing function does (symtable marks it global, not free).
    """
    top = symtable.symtable(source, filename, "exec")
    bound = {symbol.get_name() for symbol in top.get_symbols()
             if symbol.is_assigned() or symbol.is_imported() or symbol.is_namespace()}
    used: set[str] = set()
    tables = [top]
    while tables:
        table = tables.pop()
        used |= {symbol.get_name() for symbol in table.get_symbols()
                 if symbol.is_referenced() and symbol.is_global()}
        tables.extend(table.get_children())
    return bound, used


def hidden_names(chapter: Path) -> list[tuple[int, str]]:
    """``(line of the cell's marker, name)`` for each name a visible cell reads that no visible cell binds by then."""
    defined = set(dir(builtins))
    found = []
    for line, visible, source in code_cells(chapter.read_text(encoding="utf-8")):
        if not visible:
            continue
        bound, used = _module_names(source, f"{chapter.name}, cell at line {line}")
        defined |= bound
        found += [(line, name) for name in sorted(used - defined)]
    return found


def test_chapters_are_found():
    assert len(CHAPTERS) >= 11


def test_the_check_sees_scopes_as_python_does(tmp_path):
    chapter = tmp_path / "00_example.py"
    chapter.write_text(
        '# %% tags=["hide-input"]\n'
        "hidden = 3\n"
        "# %%\n"
        "import math\n"
        "squares = [k * k for k in range(4)]\n"
        "scale = lambda x, *, by=2: x * by\n"
        "def total(values):\n"
        "    acc = 0\n"
        "    for v in values:\n"
        "        acc += v\n"
        "    return acc + later\n"      # read from the module when called: must be visible by then
        "def outer(n):\n"
        "    step = 2\n"
        "    return [lambda: n * step * unseen for _ in range(n)]\n"   # n, step: outer's; unseen: the module's
        "class Box:\n"
        "    size = 3\n"
        "    def area(self):\n"
        "        return self.size * size\n"  # a class body is no enclosing scope: size is the module's
        "print(math.pi, total(squares), scale(1), hidden, k)\n"
        "# %%\n"
        "later = 1\n"
        "with memoryview(b'ab') as view:\n"
        "    text = view.tobytes() + hidden\n",
        encoding="utf-8")
    assert hidden_names(chapter) == [(3, "hidden"), (3, "k"), (3, "later"), (3, "size"), (3, "unseen"),
                                     (20, "hidden")]


@pytest.mark.parametrize("chapter", CHAPTERS, ids=lambda path: path.stem)
def test_visible_cells_use_only_names_defined_in_visible_cells(chapter):
    found = [(line, name) for line, name in hidden_names(chapter) if (chapter.name, name) not in ALLOWED_HIDDEN_NAMES]
    assert not found, (f"{chapter.name}: visible code cells (line of their # %% marker, name) use names bound "
                       f"only in hidden cells, so a reader cannot rerun them: {found}; bind them in a visible cell")
