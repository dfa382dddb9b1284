"""Fixtures shared by the site tests: the built book and a real Chromium.

The book is built once per session (``mkdocs build --strict``, executing every chapter)
into a temporary folder. The browser is the first found of ``$CHROMIUM``, ``chromium``,
``chromium-browser`` and ``google-chrome``; with none, the browser tests are skipped with
one line saying how to get one, except under CI (``CI`` set), where that is an error.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
BROWSER_CANDIDATES = ("chromium", "chromium-browser", "google-chrome")
NO_BROWSER = ("no Chromium found ($CHROMIUM, chromium, chromium-browser, google-chrome): install one "
              "(Debian/Ubuntu: apt-get install chromium) or point $CHROMIUM at it to run the browser tests")


def pytest_collection_finish(session) -> None:
    """Before a run that includes the slow tests, train every encoder the book reads that is not cached.

    Left to the tests, a cold cache trains the encoders as each test first reads one: the
    HMM seeds in one pool, the filing seeds in another, the single diagnostic runs one by
    one, each pool's last round leaving a core idle. One pool for all of them, longest first
    (``filing_encoder.ensure_book_encoders``), keeps both cores busy to the end. It runs in
    a subprocess so that no memoised loader of this process is warmed before the tests that
    record their first calls. A warm cache costs about 2 s; a run without slow tests (``make
    check``, a single file) skips it and trains lazily what it reads.
    """
    if session.config.option.collectonly or not any(item.get_closest_marker("slow") for item in session.items):
        return
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    start = time.perf_counter()
    result = subprocess.run([sys.executable, "-c", "from mlm_book.experiments import filing_encoder as fe; "
                             "print(fe.ensure_book_encoders())"], cwd=ROOT, capture_output=True, text=True)
    if result.returncode != 0:
        raise pytest.UsageError(f"training the book's encoders failed:\n{result.stderr[-4000:]}")
    trained = int(result.stdout.split()[-1])
    if reporter is not None and trained:
        reporter.write_line(f"trained {trained} encoders missing from the cache in "
                            f"{time.perf_counter() - start:.0f} s (one pool, both cores)")


def build_site(config: Path, site: Path, cwd: Path) -> subprocess.CompletedProcess:
    environment = dict(os.environ, NO_MKDOCS_2_WARNING="1")
    return subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "-f", str(config), "-d", str(site)],
                          cwd=cwd, env=environment, capture_output=True, text=True, timeout=3000)


@pytest.fixture(scope="session")
def built(tmp_path_factory) -> tuple[Path, subprocess.CompletedProcess]:
    """The real book, built once for the whole session from the repository root, and its log."""
    out = tmp_path_factory.mktemp("book") / "site"
    result = build_site(ROOT / "mkdocs.yml", out, ROOT)
    assert result.returncode == 0, f"mkdocs build failed:\n{result.stdout[-4000:]}\n{result.stderr[-8000:]}"
    return out, result


@pytest.fixture(scope="session")
def site(built) -> Path:
    return built[0]


def find_chromium() -> str | None:
    """The browser the site tests use: ``$CHROMIUM``, else the first candidate on the PATH."""
    override = os.environ.get("CHROMIUM")
    if override:
        return shutil.which(override) or (override if Path(override).is_file() else None)
    for name in BROWSER_CANDIDATES:
        found = shutil.which(name)
        if found:
            return found
    return None


@pytest.fixture(scope="session")
def chromium_path() -> str:
    found = find_chromium()
    if found is None:
        if os.environ.get("CI"):
            pytest.fail("CI must run the browser tests, but " + NO_BROWSER)
        pytest.skip(NO_BROWSER)
    return found


@pytest.fixture(scope="session")
def browser(chromium_path):
    """Playwright driving the found Chromium (never ``playwright install``: no download)."""
    sync_api = pytest.importorskip("playwright.sync_api")
    with sync_api.sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=chromium_path,
                                              args=["--no-sandbox", "--disable-gpu", "--allow-file-access-from-files"])
        yield launched
        launched.close()
