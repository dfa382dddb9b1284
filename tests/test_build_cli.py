"""``mlm-book build --tiny`` end to end, on local processes and on a dask.distributed cluster.

Every kind's tiny setup runs the kind's own build code in seconds, so a build of all of them
into a throw-away store exercises the command as ``make book`` uses it: the declarations, the
order (a kind after the kinds it reads), the pool and the store. The same tiny build on a
two-worker ``LocalCluster`` must leave exactly the entries the local build leaves, byte for byte:
the executor changes where a run happens, never what it computes.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow


def _build(store: Path, *extra: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "MLM_BOOK_CACHE": str(store)}
    env.pop("MLM_BOOK_BUILD_NOTHING", None)    # tiny builds are what these tests are for
    return subprocess.run([sys.executable, "-m", "mlm_book.cli", "build", "--tiny", *extra], env=env,
                          capture_output=True, text=True, timeout=900, check=False)


def _entries(store: Path) -> dict[str, str]:
    """Each entry's stem and the SHA-256 of its arrays, from its manifest."""
    return {path.stem: json.loads(path.read_text())["sha256"] for path in store.glob("*.json")}


@pytest.fixture(scope="module")
def local_store(tmp_path_factory) -> Path:
    store = tmp_path_factory.mktemp("tiny-local")
    done = _build(store, "--jobs", "2")
    assert done.returncode == 0, done.stderr[-3000:]
    assert "built " in done.stdout and "runs in" in done.stdout
    return store


def test_a_tiny_build_builds_every_kind_once_and_a_second_finds_nothing_to_do(local_store):
    from mlm_book import artefacts
    names = {stem.rsplit("-", 1)[0] for stem in _entries(local_store)}
    assert {"hmm-encoder", "next-token-reader", "filing-encoder", "pair-encoder", "pair-measurements",
            "pair-inference", "ch08-taggers", "subword-encoder", "ch08-subword-taggers"} <= names
    again = _build(local_store, "--jobs", "2")
    assert again.returncode == 0 and "nothing to build" in again.stdout
    dry = _build(local_store, "--dry-run")
    assert f"holds all {len(artefacts.tiny_runs())} runs" in dry.stdout


def test_a_tiny_build_on_a_dask_cluster_stores_what_a_local_one_stores(local_store, tmp_path, monkeypatch):
    distributed = pytest.importorskip("distributed")
    monkeypatch.delenv("MLM_BOOK_BUILD_NOTHING", raising=False)   # the cluster's workers inherit this process's
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None,
                                  env={"MLM_BOOK_CACHE": str(tmp_path)}) as cluster:
        done = _build(tmp_path, "--scheduler", cluster.scheduler_address, "--only", "hmm-encoder")
        assert done.returncode == 0, done.stderr[-3000:]
        done = _build(tmp_path, "--scheduler", cluster.scheduler_address, "--only", "next-token")
        assert done.returncode == 0, done.stderr[-3000:]
    on_cluster = _entries(tmp_path)
    assert len(on_cluster) == 2
    local = _entries(local_store)
    assert {stem: local.get(stem) for stem in on_cluster} == on_cluster
