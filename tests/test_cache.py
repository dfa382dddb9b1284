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
