"""Keys that cannot go stale: every kind's tiny build, traced, executes only code its key holds.

Each kind of [`mlm_book.artefacts`][] declares the modules whose source keys its entries. Here
each kind's tiny setup is built in a fresh process (so nothing was computed earlier and
memoised), into a throw-away store, under ``sys.setprofile``; the test fails if the build
called a function of a package module outside the kind's key modules and the bookkeeping
modules. A helper added to a build without its module being declared fails here, by name.

The same builds check ``mlm-book build --tiny``'s promise: the tiny setup runs the kind's own
build code and leaves an entry that loads.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from mlm_book import artefacts

_TRACE = r"""
import json, sys, pkgutil, importlib
import mlm_book
from mlm_book import artefacts
# import every module first: a module's import is not part of any build, its calls are
for info in pkgutil.walk_packages(mlm_book.__path__, "mlm_book."):
    importlib.import_module(info.name)
kind = artefacts.kinds()[sys.argv[1]]
setup = kind.tiny()
root = mlm_book.__path__[0]
files = {}
for name, module in list(sys.modules.items()):
    path = getattr(module, "__file__", None)
    if name.startswith("mlm_book") and path:
        files[path] = name
called, named = set(), set()

def profile(frame, event, arg):
    if event == "call":
        module = files.get(frame.f_code.co_filename)
        if module is not None:
            called.add(module)
            named.add((module, frame.f_code.co_name, frame.f_code.co_firstlineno))

sys.setprofile(profile)
kind.build(setup)
sys.setprofile(None)
built = kind.is_built(setup)
print(json.dumps({"called": sorted(called), "built": built, "named": sorted(named)}))
"""

def _marker_line(module: str) -> float:
    import importlib
    import inspect
    lines = inspect.getsource(importlib.import_module(module)).splitlines()
    return next((k + 1 for k, line in enumerate(lines) if line == artefacts.DECLARATION_MARKER), float("inf"))


TINY = [name for name, kind in artefacts.kinds().items() if kind.tiny is not None]



@pytest.mark.slow
@pytest.mark.parametrize("name", TINY)
def test_a_tiny_build_executes_only_code_its_key_holds(name, tmp_path):
    env = {**os.environ, "MLM_BOOK_CACHE": str(tmp_path)}
    env.pop("MLM_BOOK_BUILD_NOTHING", None)    # the tiny build is the point here
    done = subprocess.run([sys.executable, "-c", _TRACE, name], env=env, capture_output=True, text=True,
                          timeout=600, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads(done.stdout.strip().splitlines()[-1])
    # every kind's build is a function of its own module: a trace without it saw nothing (a training
    # kind's shows the training loop too)
    assert artefacts.kinds()[name].build.__module__ in report["called"], \
        "the tracer saw none of the kind's own code: it is broken, not the keys clean"
    if "mlm_book.nn.loop" in artefacts.key_modules(name):
        assert "mlm_book.nn.loop" in report["called"], "the tracer saw no training: it is broken, not the keys clean"
    keyed = set(artefacts.key_modules(name)) | artefacts.BOOKKEEPING
    unkeyed = sorted(set(report["called"]) - keyed)
    assert not unkeyed, f"{name}'s build ran code of {unkeyed}, which its key does not hold: declare them"
    assert report["built"], f"{name}'s tiny build left no entry that loads"
    below = sorted(f"{module}.{function}" for module, function, line in report["named"]
                   if function != "<lambda>" and line > _marker_line(module))
    assert not below, f"{name}'s build ran {below}, below its module's declaration marker, which keys nothing"
    assert any(tmp_path.glob("*.npz")), "the tiny build stored nothing"


def test_every_kind_declares_a_tiny_setup_so_that_its_key_is_traced():
    without = sorted(name for name, kind in artefacts.kinds().items() if kind.tiny is None)
    assert not without, f"kinds without a tiny setup (their keys are not traced): {without}"
    assert len(TINY) >= 10


def test_every_declared_key_module_exists_and_no_kind_reads_itself():
    import importlib
    for name, kind in artefacts.kinds().items():
        for module in kind.modules:
            importlib.import_module(module)
        assert name not in kind.after


def test_the_declaration_schedules_and_does_not_key():
    import importlib
    import pkgutil
    import mlm_book.artefacts as floor
    declaring = [info.name for info in pkgutil.iter_modules(floor.__path__)
                 if hasattr(importlib.import_module(f"mlm_book.artefacts.{info.name}"), "ARTEFACT_KINDS")]
    assert len(declaring) >= 7
    for name in declaring:
        module = importlib.import_module(f"mlm_book.artefacts.{name}")
        kept = artefacts.keyed_text(module)
        assert "ARTEFACT_KINDS = (" not in kept, f"{name}: its declaration would key its entries"
        assert "def " in kept, f"{name}: nothing of its code keys its entries"
    source = artefacts.key_source("hmm-encoder")
    assert "def trained_encoder" in source and "_SECONDS_PER_SLOT" not in source


def test_every_kind_is_charged_to_a_chapter_of_the_book_and_its_summary_names_the_same_one():
    import re
    from pathlib import Path
    chapters = sorted(Path(__file__).resolve().parent.parent.joinpath("chapters").glob("[0-9][0-9]_*.py"))
    assert [int(path.name[:2]) for path in chapters] == list(range(1, artefacts.CHAPTERS + 1))
    named = 0
    for kind in artefacts.kinds().values():
        assert 1 <= kind.chapter <= artefacts.CHAPTERS
        said = re.match(r"chapter (\d+)'s ", kind.summary)
        if said:
            named += 1
            assert int(said.group(1)) == kind.chapter, kind.name
    assert named >= 20
    costs = artefacts.kind_costs()
    assert [item.chapter for item in costs] == sorted(item.chapter for item in costs)
    assert sum(item.runs for item in costs) == len(artefacts.book_runs())


@pytest.mark.parametrize("chapter, error", [(0, ValueError), (artefacts.CHAPTERS + 1, ValueError), ("7", TypeError),
                                            (True, TypeError), (None, TypeError)])
def test_a_kind_and_kind_costs_refuse_a_chapter_the_book_does_not_have(chapter, error):
    with pytest.raises(error, match="chapter"):
        artefacts.Kind("toy", "a toy kind", (), setups=tuple, is_built=bool, build=print, cost=float, chapter=chapter,
                       reason="a toy has no tiny setup")
    if chapter is not None:
        with pytest.raises(error, match="chapter"):
            artefacts.kind_costs(chapter)
