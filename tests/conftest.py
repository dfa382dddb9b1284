"""Fixtures shared by the site tests: the built book and a real Chromium.

The tests read ``site/`` when ``make book`` built it from the sources as they are now;
otherwise the book is built once per session (``mkdocs build --strict``, executing every
chapter) into a temporary folder, once for all workers of a distributed (pytest-xdist)
run. The browser is the first found of ``$CHROMIUM``, ``chromium``,
``chromium-browser`` and ``google-chrome``; with none, the browser tests are skipped with
one line saying how to get one, except under CI (``CI`` set), where that is an error.
"""

from __future__ import annotations

import fcntl
import importlib.util
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
BROWSER_CANDIDATES = ("chromium", "chromium-browser", "google-chrome")
NO_BROWSER = ("no Chromium found ($CHROMIUM, chromium, chromium-browser, google-chrome): install one "
              "(Debian/Ubuntu: apt-get install chromium) or point $CHROMIUM at it to run the browser tests")


def _worker() -> str | None:
    """The pytest-xdist worker running this process (``"gw0"``, ...), or ``None`` in a plain run."""
    return os.environ.get("PYTEST_XDIST_WORKER")


def pytest_sessionstart(session) -> None:
    """Before a whole run that includes the book's tests, train every encoder the book reads that is not cached.

    Left to the tests, a cold cache trains the encoders as each test first reads one: the
    HMM seeds in one pool, the filing seeds in another, the single diagnostic runs one by
    one, each pool's last round leaving a core idle. One pool for all of them, longest first
    (``mlm_book.artefacts.build``), keeps both cores busy to the end. It runs in a
    subprocess, so that no memoised loader is warmed before the tests that record first
    calls, and in the controller of a distributed run, before its workers start. With a warm
    cache it only checks the cache. A run of chosen files trains lazily what it reads; a run without
    the book's tests (``make check``, ``make test``) trains nothing.
    """
    config = session.config
    if _worker() is not None or config.option.collectonly or "not book" in (config.option.markexpr or ""):
        return
    if getattr(config, "args_source", None) != pytest.Config.ArgsSource.TESTPATHS:
        return
    reporter = config.pluginmanager.get_plugin("terminalreporter")
    start = time.perf_counter()
    program = ("from mlm_book import artefacts; runs = artefacts.missing(); artefacts.build(runs); "
               "print(len(runs))")
    result = subprocess.run([sys.executable, "-c", program], cwd=ROOT, capture_output=True, text=True, check=False)
    if result.returncode != 0:
        raise pytest.UsageError(f"training the book's encoders failed:\n{result.stderr[-4000:]}")
    trained = int(result.stdout.split()[-1])
    if reporter is not None and trained:
        reporter.write_line(f"trained {trained} encoders missing from the cache in "
                            f"{time.perf_counter() - start:.0f} s (one pool, both cores)")
    if not config.option.keyword and _current_site() is None:
        _start_background_build()


# The site build of a whole run starts at session start, in the background, so that it
# overlaps the tests that do not read the site (which run first: pytest_collection_modifyitems).
_BACKGROUND = "MLM_BOOK_TEST_SITE"
_background: dict = {}

_WRAPPER = """
import json, os, subprocess, sys
folder, command = sys.argv[1], sys.argv[2:]
try:
    result = subprocess.run(command, capture_output=True, text=True, timeout=3000)
    saved = {"args": command, "returncode": result.returncode, "stdout": result.stdout, "stderr": result.stderr}
except Exception as error:
    saved = {"args": command, "returncode": -1, "stdout": "", "stderr": repr(error)}
with open(os.path.join(folder, "build.tmp"), "w") as stream:
    json.dump(saved, stream)
os.replace(os.path.join(folder, "build.tmp"), os.path.join(folder, "build.json"))
"""


def _current_site() -> tuple[Path, subprocess.CompletedProcess] | None:
    """``site/`` and its build's log when ``make book`` built it from the sources as they are now."""
    spec = importlib.util.spec_from_file_location("mlm_book_build_site", ROOT / "docs" / "hooks" / "build_site.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    record = module.recorded_build(ROOT / "site")
    if record is None:
        return None
    return ROOT / "site", subprocess.CompletedProcess(record["args"], 0, record["stdout"], record["stderr"])


def _start_background_build() -> None:
    folder = Path(tempfile.mkdtemp(prefix="mlm-book-site-"))
    command, environment = _build_command(ROOT / "mkdocs.yml", folder / "site")
    process = subprocess.Popen([sys.executable, "-c", _WRAPPER, str(folder), *command], cwd=ROOT, env=environment,
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    (folder / "pid").write_text(str(process.pid))
    _background.update(process=process, folder=folder)
    os.environ[_BACKGROUND] = str(folder)  # read by the built fixture, here and in every xdist worker


def pytest_sessionfinish(session) -> None:
    process, folder = _background.pop("process", None), _background.pop("folder", None)
    if process is not None and process.poll() is None:  # the run ended before the build did
        os.killpg(process.pid, signal.SIGTERM)
        process.wait()
    if folder is not None:
        os.environ.pop(_BACKGROUND, None)
        shutil.rmtree(folder, ignore_errors=True)


def pytest_collection_modifyitems(session, config, items) -> None:
    """Run the files that read the built site last, so that its background build has time to finish."""
    reads_site = {item.path for item in items if "built" in getattr(item, "fixturenames", ())}
    items.sort(key=lambda item: item.path in reads_site)  # stable: each group keeps its order


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def _background_result(folder: Path) -> subprocess.CompletedProcess:
    """Wait for the build started at session start, and return its record."""
    record, pid = folder / "build.json", int((folder / "pid").read_text())
    while not record.exists():
        if not _alive(pid) and not record.exists():
            pytest.fail("the background site build ended without writing its record")
        time.sleep(0.5)
    saved = json.loads(record.read_text())
    return subprocess.CompletedProcess(saved["args"], saved["returncode"], saved["stdout"], saved["stderr"])


def _build_command(config: Path, site: Path) -> tuple[list[str], dict]:
    """The strict mkdocs build of ``config`` into ``site``, and its environment."""
    command = [sys.executable, "-m", "mkdocs", "build", "--strict", "-f", str(config), "-d", str(site)]
    return command, dict(os.environ, NO_MKDOCS_2_WARNING="1")


def build_site(config: Path, site: Path, cwd: Path, store: Path | None = None) -> subprocess.CompletedProcess:
    """``mkdocs build --strict`` of ``config``; ``store`` replaces the user's store (and its executed chapters)."""
    command, environment = _build_command(config, site)
    if store is not None:
        environment["MLM_BOOK_CACHE"] = str(store)
    return subprocess.run(command, cwd=cwd, env=environment, capture_output=True, text=True, timeout=3000, check=False)


@pytest.fixture(scope="session")
def built(tmp_path_factory) -> tuple[Path, subprocess.CompletedProcess]:
    """The real book, built once for the whole session from the repository root, and its log.

    ``site/`` itself when ``make book`` built it from the sources as they are now (its
    record, ``site/.build.json``, holds their digest and the build's log). Otherwise a whole run started the build in the background at session start (``$MLM_BOOK_TEST_SITE``
    names its folder): wait for it. Otherwise, under pytest-xdist the workers share one build:
    the first to need it builds it into the controller's temporary folder while holding a
    lock, and the others wait for it and read it.
    """
    current = _current_site()
    if current is not None:
        return current
    background = os.environ.get(_BACKGROUND)
    if background:
        result = _background_result(Path(background))
        assert result.returncode == 0, f"mkdocs build failed:\n{result.stdout[-4000:]}\n{result.stderr[-8000:]}"
        return Path(background) / "site", result
    shared = tmp_path_factory.getbasetemp()
    if _worker() is not None:
        shared = shared.parent  # the controller's folder, common to every worker
    folder = shared / "book"
    record = folder / "build.json"
    with open(shared / "book.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if record.exists():
            saved = json.loads(record.read_text())
            result = subprocess.CompletedProcess(saved["args"], saved["returncode"], saved["stdout"], saved["stderr"])
        else:
            folder.mkdir(parents=True, exist_ok=True)
            result = build_site(ROOT / "mkdocs.yml", folder / "site", ROOT)
            record.write_text(json.dumps({"args": result.args, "returncode": result.returncode,
                                          "stdout": result.stdout, "stderr": result.stderr}))
    assert result.returncode == 0, f"mkdocs build failed:\n{result.stdout[-4000:]}\n{result.stderr[-8000:]}"
    return folder / "site", result


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
