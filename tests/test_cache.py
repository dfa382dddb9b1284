"""The content-addressed store: keys follow config and code, damage is detected and rebuilt."""

import json

import numpy as np
import pytest

from mlm_book import cache


def _counting_builder(calls, value=1.0):
    def build():
        calls.append(1)
        return {"weights": np.full((2, 3), value), "steps": np.arange(4)}, {"note": "demo"}
    return build


def test_round_trip_preserves_arrays_dtypes_and_metadata(tmp_path):
    calls = []
    arrays, metadata = cache.cached("demo", {"a": 1}, ["src"], _counting_builder(calls), directory=tmp_path)
    again, metadata_again = cache.cached("demo", {"a": 1}, ["src"], _counting_builder(calls), directory=tmp_path)
    assert len(calls) == 1
    assert again["weights"].dtype == np.float64 and again["steps"].dtype == np.arange(4).dtype
    np.testing.assert_array_equal(again["weights"], arrays["weights"])
    assert metadata == metadata_again == {"note": "demo"}


@pytest.mark.parametrize("change", [{"config": {"a": 2}}, {"source": "other src"}])
def test_a_change_of_config_or_code_is_a_new_entry(tmp_path, change):
    calls = []
    cache.cached("demo", {"a": 1}, ["src"], _counting_builder(calls), directory=tmp_path)
    cache.cached("demo", change.get("config", {"a": 1}), [change.get("source", "src")],
                 _counting_builder(calls), directory=tmp_path)
    assert len(calls) == 2



def _key_of_module(tmp_path, name, text):
    import importlib.util

    path = tmp_path / f"{name}.py"
    path.write_text(text, encoding="utf-8")
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return cache.cache_key("demo", {}, [module])


CODE = 'def scale(x):\n    return 2 * x\n\nLABEL = f"{scale(1)!r:>4}"\n'
PROSE = ('"""A module — with a non-ASCII docstring."""\n\n# why it doubles\ndef scale(x):\n'
         '    """Twice ``x``.\n\n    >>> scale(2)\n    4\n    """\n    return 2 * x  # exact in floats\n\n'
         'LABEL = f"{scale(1)!r:>4}"\n')


ONE_LINE = 'def scale(x): "doc"; return 2 * x\n'


@pytest.mark.parametrize("before, after, same", [
    (CODE, PROSE, True),                                      # docstrings and comments only
    (CODE, CODE.replace("2 * x", "3 * x"), False),            # the code itself
    (ONE_LINE, ONE_LINE.replace("2 * x", "3 * x"), False),    # code sharing a docstring's line is kept
])
def test_keys_follow_code_not_prose(tmp_path, before, after, same):
    assert (_key_of_module(tmp_path, "before", before) == _key_of_module(tmp_path, "after", after)) is same


def _entry(tmp_path):
    return cache.CacheEntry("demo", cache.cache_key("demo", {"a": 1}, ["src"]), tmp_path)


@pytest.mark.parametrize("damage", ["truncate", "flip", "manifest_json", "manifest_shape", "missing_npz"])
def test_a_damaged_entry_is_detected_and_rebuilt(tmp_path, damage):
    calls = []
    cache.cached("demo", {"a": 1}, ["src"], _counting_builder(calls), directory=tmp_path)
    entry = _entry(tmp_path)
    data = entry.arrays_path.read_bytes()
    if damage == "truncate":
        entry.arrays_path.write_bytes(data[: len(data) // 2])
    elif damage == "flip":
        position = len(data) // 2
        entry.arrays_path.write_bytes(data[:position] + bytes([data[position] ^ 0xFF]) + data[position + 1:])
    elif damage == "manifest_json":
        entry.manifest_path.write_text("{not json")
    elif damage == "manifest_shape":
        manifest = json.loads(entry.manifest_path.read_text())
        manifest["arrays"]["weights"]["shape"] = [3, 2]
        entry.manifest_path.write_text(json.dumps(manifest))
    else:
        entry.arrays_path.unlink()
    assert cache.load(entry) is None
    assert not entry.manifest_path.exists()
    arrays, _ = cache.cached("demo", {"a": 1}, ["src"], _counting_builder(calls, 2.0), directory=tmp_path)
    assert len(calls) == 2
    assert np.all(arrays["weights"] == 2.0)


def test_the_store_never_unpickles(tmp_path):
    entry = _entry(tmp_path)
    with pytest.raises(TypeError, match="pickle"):
        cache.store(entry, {"bad": np.array([{"a": 1}], dtype=object)})


def test_bad_names_and_configs_are_refused(tmp_path):
    with pytest.raises(ValueError, match="name"):
        cache.cache_key("a/b", {}, [])
    with pytest.raises(TypeError, match="config"):
        cache.cache_key("ok", {"x": object()}, [])
    with pytest.raises(TypeError, match="config"):
        cache.cache_key("ok", {"x": float("nan")}, [])
    with pytest.raises(TypeError, match="mapping"):
        cache.cache_key("ok", [1, 2], [])


def test_environment_variable_moves_the_store(tmp_path, monkeypatch):
    monkeypatch.setenv(cache.ENVIRONMENT_VARIABLE, str(tmp_path / "elsewhere"))
    assert cache.cache_dir() == (tmp_path / "elsewhere").resolve()


# ---------------------------------------------------------------------------------------------
# Damage of other kinds, and several processes at once
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("damage", ["manifest_list", "npz_directory", "metadata_edited", "manifest_directory"])
def test_more_kinds_of_damage_are_rebuilt_not_raised(tmp_path, damage):
    calls = []
    cache.cached("demo", {"a": 1}, ["src"], _counting_builder(calls), directory=tmp_path)
    entry = _entry(tmp_path)
    if damage == "manifest_list":
        entry.manifest_path.write_text("[1, 2, 3]")
    elif damage == "npz_directory":
        entry.arrays_path.unlink()
        entry.arrays_path.mkdir()
    elif damage == "manifest_directory":
        entry.manifest_path.unlink()
        entry.manifest_path.mkdir()
    else:
        manifest = json.loads(entry.manifest_path.read_text())
        manifest["metadata"]["note"] = "edited"
        entry.manifest_path.write_text(json.dumps(manifest))
    arrays, metadata = cache.cached("demo", {"a": 1}, ["src"], _counting_builder(calls, 3.0), directory=tmp_path)
    assert len(calls) == 2 and np.all(arrays["weights"] == 3.0) and metadata == {"note": "demo"}
    assert entry.arrays_path.is_file() and entry.manifest_path.is_file()


def test_leftovers_of_a_killed_writer_are_cleaned_when_the_entry_is_computed(tmp_path):
    entry = _entry(tmp_path)
    leftover = tmp_path / f".{entry.stem}.npz.abc123.tmp"
    leftover.write_bytes(b"half an array")
    cache.cached("demo", {"a": 1}, ["src"], _counting_builder([]), directory=tmp_path)
    assert not leftover.exists()


def test_a_result_that_cannot_be_stored_is_returned_with_a_warning(tmp_path, monkeypatch):
    def refuse(*args, **kwargs):
        raise PermissionError("read-only file system")

    monkeypatch.setattr(cache, "store", refuse)
    calls = []
    with pytest.warns(RuntimeWarning, match="not stored"):
        arrays, metadata = cache.cached("demo", {"a": 1}, ["src"], _counting_builder(calls), directory=tmp_path)
    assert len(calls) == 1 and arrays["weights"].shape == (2, 3) and metadata == {"note": "demo"}


@pytest.mark.skipif(not hasattr(__import__("os"), "geteuid") or __import__("os").geteuid() == 0,
                    reason="root writes to read-only directories")
def test_a_read_only_cache_directory_still_gives_the_result(tmp_path):
    tmp_path.chmod(0o555)
    try:
        with pytest.warns(RuntimeWarning, match="not stored|cannot be written"):
            arrays, _ = cache.cached("demo", {"a": 1}, ["src"], _counting_builder([]), directory=tmp_path)
        assert arrays["weights"].shape == (2, 3)
    finally:
        tmp_path.chmod(0o755)


WORKER = r"""
import sys, time
import numpy as np
from mlm_book import cache

directory, log, size = sys.argv[1], sys.argv[2], int(sys.argv[3])

def build():
    with open(log, "a") as stream:
        stream.write("built\n")
    time.sleep(0.3)
    return {"big": np.arange(size, dtype=np.float64)}, {"size": size}

arrays, metadata = cache.cached("shared", {"size": size}, ["src"], build, directory=directory)
assert arrays["big"].shape == (size,) and arrays["big"][-1] == size - 1 and metadata == {"size": size}
print("ok")
"""


def test_several_processes_asking_for_one_key_compute_it_once(tmp_path):
    """Six processes at once, an entry of 40 MB: one builds, the others wait and load it."""
    import subprocess
    import sys

    log = tmp_path / "builds.log"
    processes = [subprocess.Popen([sys.executable, "-c", WORKER, str(tmp_path / "store"), str(log), str(5_000_000)],
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for _ in range(6)]
    outcomes = [process.communicate(timeout=120) for process in processes]
    assert all(process.returncode == 0 for process in processes), [err[-2000:] for _, err in outcomes]
    assert all(out.strip() == "ok" for out, _ in outcomes)
    assert log.read_text().count("built") == 1


def test_a_reader_polling_while_an_entry_is_written_never_deletes_it(tmp_path):
    """The reported fault: a reader saw the npz before its manifest and deleted it."""
    import subprocess
    import sys

    store = tmp_path / "store"
    log = tmp_path / "builds.log"
    writer = subprocess.Popen([sys.executable, "-c", WORKER, str(store), str(log), str(8_000_000)],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    entry = cache.CacheEntry("shared", cache.cache_key("shared", {"size": 8_000_000}, ["src"]), store)
    found = None
    while writer.poll() is None:
        found = cache.load(entry) or found
    out, err = writer.communicate(timeout=120)
    assert writer.returncode == 0, err[-2000:]
    assert cache.load(entry) is not None and log.read_text().count("built") == 1


def test_the_default_store_is_the_users_cache_directory_shared_by_every_clone(monkeypatch, tmp_path):
    monkeypatch.delenv(cache.ENVIRONMENT_VARIABLE, raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert cache.cache_dir() == (tmp_path / "xdg" / "mlm-book").resolve()
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert cache.cache_dir() == (tmp_path / "home" / ".cache" / "mlm-book").resolve()
    # a relative XDG_CACHE_HOME is invalid by the XDG spec and ignored
    monkeypatch.setenv("XDG_CACHE_HOME", "relative")
    assert cache.cache_dir() == (tmp_path / "home" / ".cache" / "mlm-book").resolve()


def test_the_quick_tiers_guard_reads_the_default_store_but_never_builds_into_it(monkeypatch, tmp_path):
    monkeypatch.setenv(cache.ENVIRONMENT_VARIABLE, str(tmp_path / "store"))
    monkeypatch.setenv(cache.BUILD_NOTHING_VARIABLE, "1")
    calls = []

    def build():
        calls.append(1)
        return {"w": np.zeros(1)}

    with pytest.raises(cache.NotInStoreError, match="mlm-book build"):
        cache.cached("demo", {"n": 1}, ["code"], build)
    assert calls == []
    cache.cached("demo", {"n": 1}, ["code"], build, directory=tmp_path / "elsewhere")  # a store of its own builds
    monkeypatch.delenv(cache.BUILD_NOTHING_VARIABLE)
    cache.cached("demo", {"n": 1}, ["code"], build)
    monkeypatch.setenv(cache.BUILD_NOTHING_VARIABLE, "1")
    arrays, _ = cache.cached("demo", {"n": 1}, ["code"], build)  # what the store holds is read
    assert len(calls) == 2 and arrays["w"].tolist() == [0.0]


def test_the_key_holds_the_blas_kernel_family(monkeypatch):
    from mlm_book.nn import runtime
    here = cache.cache_key("demo", {"n": 1}, ["code"])
    monkeypatch.setattr(runtime, "blas_kernel", lambda: "SomeOtherKernel")
    assert cache.cache_key("demo", {"n": 1}, ["code"]) != here  # float32 runs of two kernels never share an entry


def test_modules_reached_follow_the_import_statements_whatever_the_process_imported():
    """The set keys derived entries, so it must not depend on what else a process happened to import first."""
    import subprocess
    import sys
    script = ("import sys\n{first}\nfrom mlm_book import cache\nfrom mlm_book.experiments import ch11_incompatibility as m\n"
              "print(','.join(x.__name__ for x in cache.modules_reached(m)))")
    plain, busy = (subprocess.run([sys.executable, "-c", script.format(first=first)], capture_output=True, text=True,
                                  check=True).stdout.strip()
                   for first in ("", "import mlm_book.artefacts.multilingual, mlm_book.experiments.ch10_languages"))
    assert plain == busy
    names = plain.split(",")
    # what the gaps are computed with is reached (the encoder's layers through the checkpoints' reader) ...
    assert {"mlm_book.artefacts.hmm_encoder_checkpoints", "mlm_book.nn.layers", "mlm_book.four_cycles"} <= set(names)
    # ... and what the module does not import is not
    assert "mlm_book.artefacts.multilingual" not in names and "mlm_book.experiments.ch10_languages" not in names
    with pytest.raises(ValueError, match="module"):
        cache.modules_reached(np)
    with pytest.raises(ValueError, match="module"):
        cache.modules_reached("mlm_book.no_such_module")
