"""The package's import graph, read from the source (AST): no cycle, and the private reads held to what they are.

The rules: no import cycle anywhere in ``mlm_book`` (the build's move to ``mlm_book.artefacts``
broke the ten-module cycle of the chapter modules); no module outside the chapters imports a
chapter module, except the entry points (the command line and the lab), so the artefact floor
never does; and no more private ``module._name`` reads across modules than today (12: 94 before
the move, 49 after it; the names of ``mlm_book.nn``, ``mlm_book.crf`` and the runtime that other
modules read are public now). Lower that ceiling as the private reads go.
"""

from __future__ import annotations

import ast
import collections
import functools
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "mlm_book"

#: The chapter modules that import each other in a cycle today (the ceiling: none may join).
CYCLE_TODAY: frozenset[str] = frozenset()
#: Cross-module reads of private names today (the ceiling).
PRIVATE_READS_TODAY = 12
#: The entry points, which may import the chapter modules: the command line and the lab's payload.
ENTRY_POINTS = frozenset({"mlm_book.cli", "mlm_book.lab"})


def _modules() -> dict[str, Path]:
    found = {}
    for path in PACKAGE.rglob("*.py"):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        found[name] = path
    return found


@functools.cache
def _scan():
    """``(imports, private)``: module -> the package modules it imports (anywhere in its
    source), and the list of ``(reader, module._name)`` private reads across modules."""
    modules = _modules()
    imports: dict[str, set[str]] = collections.defaultdict(set)
    private: list[tuple[str, str]] = []
    for name, path in modules.items():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
        aliases: dict[str, str] = {}
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.name.startswith("mlm_book"):
                        imports[name].add(alias.name)
                        aliases[alias.asname or alias.name.split(".")[0]] = alias.name
            elif isinstance(node, ast.ImportFrom):
                source = node.module or ""
                if node.level:
                    base = package
                    for _ in range(node.level - 1):
                        base = base.rsplit(".", 1)[0]
                    source = f"{base}.{source}" if source else base
                if not source.startswith("mlm_book"):
                    continue
                for alias in node.names:
                    full = f"{source}.{alias.name}"
                    if full in modules:
                        imports[name].add(full)
                        aliases[alias.asname or alias.name] = full
                    else:
                        imports[name].add(source)
                        if alias.name.startswith("_"):
                            private.append((name, full))
        for node in ast.walk(tree):
            if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
                    and node.attr.startswith("_") and not node.attr.startswith("__")):
                target = aliases.get(node.value.id)
                if target is not None and target != name:
                    private.append((name, f"{target}.{node.attr}"))
    return {name: {m for m in targets if m in modules} for name, targets in imports.items()}, private


def _cycles(graph: dict[str, set[str]]) -> list[set[str]]:
    """The strongly connected components of more than one module (Tarjan, iteratively)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[set[str]] = []
    for start in graph:
        if start in index:
            continue
        work = [(start, iter(sorted(graph.get(start, ()))))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = set()
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.add(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(component)
    return found


def test_the_scanner_finds_a_cycle_and_a_private_read():
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [{"a", "b", "c"}]
    assert _cycles({"a": {"b"}, "b": set()}) == []
    imports, private = _scan()
    assert "mlm_book.hmm" in imports["mlm_book.channel"] or "mlm_book.validation" in imports["mlm_book.channel"]
    assert private, "the scanner found no private read at all: it is broken, not the package clean"


def test_no_import_cycle_anywhere_in_the_package():
    imports, _ = _scan()
    cycles = [sorted(component) for component in _cycles(imports) if not component <= CYCLE_TODAY]
    assert not cycles, f"import cycles: {cycles}"


def test_only_the_entry_points_import_a_chapter_module_from_outside_the_chapters():
    imports, _ = _scan()
    offenders = sorted((reader, target) for reader, targets in imports.items() for target in targets
                       if target.startswith("mlm_book.experiments")
                       and not reader.startswith("mlm_book.experiments") and reader not in ENTRY_POINTS)
    assert not offenders, offenders


def test_private_reads_across_modules_do_not_grow():
    _, private = _scan()
    assert len(private) <= PRIVATE_READS_TODAY, (
        f"{len(private)} private reads across modules, over the ceiling of {PRIVATE_READS_TODAY}; the most read: "
        f"{collections.Counter(target for _, target in private).most_common(5)}")


#: Imports of one chapter module by another today (the ceiling: what a later chapter reads of an
#: earlier one's results should move down to the artefact floor or the core, and this shrink).
CHAPTER_TO_CHAPTER_TODAY = 30


def test_chapter_modules_import_each_other_no_more_than_today():
    imports, _ = _scan()
    found = sorted((reader, target) for reader, targets in imports.items() for target in targets
                   if reader.startswith("mlm_book.experiments.") and target.startswith("mlm_book.experiments.")
                   and target != reader)
    assert len(found) <= CHAPTER_TO_CHAPTER_TODAY, (
        f"{len(found)} imports between chapter modules, over the ceiling of {CHAPTER_TO_CHAPTER_TODAY}: {found}")
