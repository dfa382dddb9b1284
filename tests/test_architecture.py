"""The package's import graph, read from the source (AST): one way down, no cycle, no private reads across modules.

The layers, from the bottom: the core modules (models, ``nn``, ``compat``, the splits and the
four-cycle protocol, ...), the artefact floor ``mlm_book.artefacts`` (what is trained or slow,
declared once), the readings ``mlm_book.readings`` (what several chapters read off the
artefacts) with the lab's payload ``mlm_book.lab``, the chapter modules ``mlm_book.experiments``,
and the entry point (the command line).
The rules:

* no import cycle anywhere in ``mlm_book``;
* imports only go down: a core module imports no artefact, reading or chapter module; an artefact
  module no reading or chapter module; a reading module no chapter module;
* no chapter module imports another chapter's module (what a later chapter reads of an earlier
  one's results lives on the artefact floor, in a reading or in the core);
* no ``module._name`` read across modules (94 before the artefact floor; none since the encoder's,
  the CRF's and the runtime's building blocks became public), but the one in ``PRIVATE_TODAY``.
"""

from __future__ import annotations

import ast
import collections
import functools
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "mlm_book"

#: The chapter modules that import each other in a cycle today (the ceiling: none may join).
CYCLE_TODAY: frozenset[str] = frozenset()
#: The private reads across modules allowed today, each with its reason (the ceiling: none may join without one).
PRIVATE_TODAY: dict[tuple[str, str], str] = {
    ("mlm_book.artefacts.verb_distance", "mlm_book.artefacts.filing_encoder._polarity"):
        "chapter 11's verb-distance runs call chapter 7's polarity probe itself, not a copy; filing_encoder is "
        "keyed, so making the probe public would retrain every filing kind: rename it at the next retrain",
}
#: The entry points, which may import the chapter modules: the command line.
ENTRY_POINTS = frozenset({"mlm_book.cli"})
#: The layers, from the bottom; a module not named here is core (layer 0). The lab's payload reads
#: artefacts and readings, and its claims (a chapter module) read the payload: it sits with the readings.
LAYERS = (("mlm_book.artefacts", 1), ("mlm_book.readings", 2), ("mlm_book.lab", 2), ("mlm_book.experiments", 3))


def _modules() -> dict[str, Path]:
    found = {}
    for path in PACKAGE.rglob("*.py"):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        found[name] = path
    return found


@functools.cache
def _scan():
    """``(imports, private)`` of the package's own source (see `_read`)."""
    return _read({name: (path.name == "__init__.py", path.read_text(encoding="utf-8"))
                  for name, path in _modules().items()})


def _read(sources: dict[str, tuple[bool, str]]):
    """``(imports, private)``: module -> the package modules it imports (anywhere in its
    source), and the list of ``(reader, module._name)`` private reads across modules.

    ``sources`` maps each module's name to ``(is a package's __init__, its source text)``."""
    modules = sources
    imports: dict[str, set[str]] = collections.defaultdict(set)
    private: list[tuple[str, str]] = []
    for name, (is_package, text) in modules.items():
        tree = ast.parse(text)
        package = name if is_package else name.rsplit(".", 1)[0]
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


def test_the_scanner_finds_imports_a_cycle_and_private_reads():
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [{"a", "b", "c"}]
    assert _cycles({"a": {"b"}, "b": set()}) == []
    imports, private = _read({
        "mlm_book": (True, ""),
        "mlm_book.a": (False, "from mlm_book import b\nfrom mlm_book.c import _y\nb._x + b.z"),
        "mlm_book.b": (False, "import mlm_book.c as c\nc._w"),
        "mlm_book.c": (False, "from . import b\nb.__name__")})
    assert imports["mlm_book.a"] == {"mlm_book.b", "mlm_book.c"} and imports["mlm_book.c"] == {"mlm_book.b"}
    assert sorted(private) == [("mlm_book.a", "mlm_book.b._x"), ("mlm_book.a", "mlm_book.c._y"),
                               ("mlm_book.b", "mlm_book.c._w")]
    imports, _ = _scan()
    assert "mlm_book.hmm" in imports["mlm_book.channel"] or "mlm_book.validation" in imports["mlm_book.channel"]


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


def test_no_private_read_across_modules():
    _, private = _scan()
    offenders = sorted(set(private) - set(PRIVATE_TODAY))
    assert not offenders, f"private names read from another module (make them public, or move the reader): {offenders}"
    stale = sorted(set(PRIVATE_TODAY) - set(private))
    assert not stale, f"allowed private reads that no longer happen (remove them from PRIVATE_TODAY): {stale}"


#: The entry points' layer, above the chapters.
ENTRY_LAYER = 4


def _layer(module: str) -> int:
    if module in ENTRY_POINTS:
        return ENTRY_LAYER
    return next((layer for prefix, layer in LAYERS if module == prefix or module.startswith(prefix + ".")), 0)


def test_the_scanner_sees_every_layer():
    imports, _ = _scan()
    assert {_layer(module) for module in imports} == {0, 1, 2, 3, ENTRY_LAYER}


def test_imports_only_go_down_the_layers():
    imports, _ = _scan()
    upward = sorted((reader, target) for reader, targets in imports.items() for target in targets
                    if _layer(target) > _layer(reader))
    assert not upward, f"imports up the layers (core < artefacts < readings < chapters < entry points): {upward}"


def test_no_chapter_module_imports_another():
    imports, _ = _scan()
    found = sorted((reader, target) for reader, targets in imports.items() for target in targets
                   if reader.startswith("mlm_book.experiments.") and target.startswith("mlm_book.experiments.")
                   and target != reader)
    assert not found, f"chapter modules importing each other (move what they share down a layer): {found}"
