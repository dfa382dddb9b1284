"""MkDocs hook: chapters from the top-level ``chapters/``, one API page per module, the nav.

* ``on_config`` writes the navigation: Home, the chapters in file order (titled by each
  chapter's first Markdown heading), the pages of ``docs/`` that are not Home, and the API
  reference as one collapsed section (``claims.py`` inserts the Claims page). It also
  points the chapters' Jupyter kernel at an IPC transport (no TCP socket: quiet, and the
  book builds in a network namespace without loopback), sends the kernel's warnings and
  the package's progress lines (``mlm_book.progress``) to the build's log, never a page.
* ``on_files`` adds every ``chapters/NN_name.py`` to the site's files with the
  repository root as its source directory, so that mkdocs-jupyter (which runs after this
  hook, hence the priority) converts and executes it; and it generates one mkdocstrings
  page per public module of ``mlm_book``, ranked low in the search so that chapters come
  first.
* ``on_nav`` executes the chapters that the execution store lacks, on every core at once (each
  chapter in its own kernel); mkdocs-jupyter then renders each page from that store. An
  executed chapter is kept under a key of everything its output depends on: its own text
  (mkdocs-jupyter's key) and, naming the store's folder, the package's source, this hook,
  every installed distribution's version, the Python and the BLAS kernel family. A rebuild with
  nothing changed executes nothing; a change anywhere in the package executes every chapter
  again (the same rule as the artefact store: a hit is the same computation).
* ``on_page_content`` turns the notebook's heading
  anchors into Material's (so search results carry no stray pilcrow), and adds links to
  download the chapter as a notebook or a script; ``on_post_build`` writes those notebooks
  and removes ``404.html`` (its links are root-absolute: broken from disk, never served).

Nothing here knows a chapter or module by name, so adding either never touches
``mkdocs.yml``.
"""

from __future__ import annotations

import concurrent.futures
import hashlib
import importlib.metadata
import json
import logging
import os
import pkgutil
import platform
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import mkdocs.plugins
from mkdocs.exceptions import PluginError
from mkdocs.structure.files import File

CHAPTER_PATTERN = re.compile(r"^\d\d_[a-z0-9_]+\.py$")
#: The store's folder of executed chapters: one subfolder per execution key.
EXECUTED_FOLDER = "executed-chapters"
#: Execution folders kept besides the one in use, the most recently used first (other clones', recent edits').
OTHER_EXECUTIONS_KEPT = 3

# One chapter executed and rendered by mkdocs-jupyter in a process of its own, its page written
# atomically where the plugin's cache looks: argv = chapter, page, toc depth, nb2html's options.
EXECUTE_CHAPTER = """
import json, os, sys
from mkdocs_jupyter import convert
from mkdocs_jupyter.plugin import _get_nb_toc_tokens
path, entry, toc_depth, arguments = sys.argv[1], sys.argv[2], int(sys.argv[3]), json.loads(sys.argv[4])
content = convert.nb2html(path, **arguments)
toc_tokens, title = _get_nb_toc_tokens(path, toc_depth)
partial = f"{entry}.{os.getpid()}.tmp"
with open(partial, "w", encoding="utf-8") as stream:
    json.dump({"content": content, "toc_tokens": toc_tokens, "title": title}, stream)
os.replace(partial, entry)
"""
# API pages rank well below the chapters in the site's search.
API_SEARCH_BOOST = 0.2

log = logging.getLogger("mkdocs.hooks.book")
_state: dict = {}


def _root(config) -> Path:
    return Path(config["config_file_path"]).resolve().parent


def chapter_paths(root: Path) -> list[Path]:
    """The chapter scripts in reading order (their file names start with two digits).

    ``$MLM_BOOK_ONLY``, a glob such as ``03_*``, keeps only the matching chapters: a quick
    preview of one chapter (build it without ``--strict``: other pages link to the rest).
    """
    only = os.environ.get("MLM_BOOK_ONLY", "*.py")
    return sorted(path for path in (root / "chapters").glob("*.py")
                  if CHAPTER_PATTERN.match(path.name) and path.match(only if only.endswith(".py") else only + "*"))


def chapter_title(path: Path) -> str:
    """The first Markdown heading of a Jupytext percent script."""
    for line in path.read_text(encoding="utf-8").splitlines():
        match = re.match(r"^#\s+#\s+(.+?)\s*$", line)
        if match:
            return match.group(1)
    raise ValueError(f"{path} has no '# # Title' Markdown heading")


def public_modules() -> list[str]:
    """Every importable module of the package whose name has no leading underscore."""
    import mlm_book

    names = ["mlm_book"]
    for info in pkgutil.walk_packages(mlm_book.__path__, prefix="mlm_book."):
        if not any(part.startswith("_") for part in info.name.split(".")):
            names.append(info.name)
    return sorted(names)


def execution_key(package: Path) -> str:
    """The digest of what a chapter's output depends on besides its own text.

    The package's source (every module a chapter can import, and through the store's keys the
    trained artefacts it reads), this hook (the kernel's startup code), the version of every
    installed distribution (NumPy's arithmetic, matplotlib's figures, nbconvert's HTML), the
    Python, the machine and the BLAS kernel family (float rounding). mkdocs-jupyter's own key
    adds the chapter's text and the rendering options.
    """
    from mlm_book.nn import runtime

    digest = hashlib.sha256()
    for path in sorted(package.rglob("*.py")):
        digest.update(path.relative_to(package).as_posix().encode() + b"\0" + path.read_bytes() + b"\0")
    digest.update(Path(__file__).read_bytes())
    distributions = sorted({f"{found.metadata['Name']}=={found.version}"
                            for found in importlib.metadata.distributions()})
    for part in (*distributions, sys.version, platform.machine(), runtime.blas_kernel()):
        digest.update(part.encode() + b"\0")
    return digest.hexdigest()[:24]


def _execution_folder() -> Path:
    """This build's folder of executed chapters in the store; older folders beyond the few kept go."""
    import mlm_book
    from mlm_book import cache

    base = cache.cache_dir() / EXECUTED_FOLDER
    folder = base / execution_key(Path(mlm_book.__file__).resolve().parent)
    folder.mkdir(parents=True, exist_ok=True)
    os.utime(folder)  # the most recently used folder sorts first
    others = sorted((path for path in base.iterdir() if path.is_dir() and path != folder),
                    key=lambda path: path.stat().st_mtime, reverse=True)
    for stale in others[OTHER_EXECUTIONS_KEPT:]:
        shutil.rmtree(stale, ignore_errors=True)
    return folder


def _readable(entry: Path) -> bool:
    """Whether a stored page is whole (a write cut short, or a damaged file, is executed again)."""
    try:
        saved = json.loads(entry.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):
        return False
    return (isinstance(saved, dict) and isinstance(saved.get("content"), str) and saved["content"]
            and isinstance(saved.get("toc_tokens"), list))


def _execute_missing(config, plugin) -> None:
    """Execute, on every core at once, the chapters whose pages the execution store lacks.

    Each chapter runs in its own process and kernel, and its page is written where
    mkdocs-jupyter's cache looks for it, so the plugin renders it from there. A chapter that
    raises fails the build with its traceback. If this mkdocs-jupyter names its cache
    differently, nothing is executed here and the plugin executes each page itself.
    """
    try:
        from mkdocs_jupyter import convert  # noqa: F401  (the subprocesses call it)
        from mkdocs_jupyter.plugin import _compute_cache_key, _get_cache_path
    except ImportError:
        log.warning("mkdocs-jupyter's cache functions moved: the chapters execute one at a time")
        return
    options = plugin.config
    todo = []
    for path in chapter_paths(_root(config)):
        entry = _get_cache_path(options["cache_dir"], _compute_cache_key(str(path), options, options["execute"]))
        if entry.exists() and _readable(entry):
            continue
        entry.unlink(missing_ok=True)
        todo.append((path, entry))
    if not todo:
        log.info("every chapter's page is in the execution store (%s): nothing executed", options["cache_dir"])
        return
    arguments = {name: options[name] for name in (
        "execute", "kernel_name", "theme", "allow_errors", "show_input", "no_input", "no_prompt", "remove_tag_config",
        "highlight_extra_classes", "include_requirejs", "custom_mathjax_url")}
    workers = min(len(todo), len(os.sched_getaffinity(0)))
    log.info("executing %d chapters, %d at a time", len(todo), workers)
    start = time.perf_counter()

    def execute(path: Path, entry: Path) -> subprocess.CompletedProcess:
        folder, variables = _kernel_settings(_state.get("inherited_config_path", []))
        try:
            return subprocess.run([sys.executable, "-c", EXECUTE_CHAPTER, str(path), str(entry),
                                   str(options["toc_depth"]), json.dumps(arguments)],
                                  env={**os.environ, **variables}, capture_output=True, text=True, check=False)
        finally:
            shutil.rmtree(folder, ignore_errors=True)

    with concurrent.futures.ThreadPoolExecutor(workers) as pool:
        running = {pool.submit(execute, path, entry): path for path, entry in todo}
        for done in concurrent.futures.as_completed(running):
            result = done.result()
            if result.returncode != 0:
                for other in running:
                    other.cancel()
                raise PluginError(f"chapter {running[done].name} failed while executing:\n{result.stderr[-6000:]}")
            log.info("chapter %s executed (%.0f s since the first started)", running[done].name,
                     time.perf_counter() - start)


def _page_title(path: Path) -> str:
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.startswith("# "):
            return line[2:].strip()
    raise ValueError(f"{path} has no '# Title' heading")


# Run by the chapters' kernel before the first cell: a warning (a dependency's deprecation at
# either end of the supported range, a RuntimeWarning) goes to the build's log, not the page.
KERNEL_STARTUP = """\
import warnings

from mlm_book import progress


def _warning_to_log(message, category, filename, lineno, file=None, line=None):
    progress.report(f"warning kept out of the page: {category.__name__}: {message} ({filename}:{lineno})")


warnings.showwarning = _warning_to_log
"""


def _kernel_settings(inherited: list[str]) -> tuple[Path, dict]:
    """A folder of kernel settings, and the environment variables that point a Jupyter client at it.

    nbconvert reads ``jupyter_nbconvert_config`` from ``$JUPYTER_CONFIG_PATH`` (the first folder
    wins): it asks for the IPC transport, in a socket path of this folder's own, so that
    kernels started at once never share one. The folder is also the kernel's ``IPYTHONDIR``,
    whose startup file sends warnings to the build's log.
    """
    folder = Path(tempfile.mkdtemp(prefix="mlm-book-kernel-"))
    settings = {"KernelManager": {"transport": "ipc", "ip": str(folder / "kernel")}}
    (folder / "jupyter_nbconvert_config.json").write_text(json.dumps(settings), encoding="utf-8")
    startup = folder / "ipython" / "profile_default" / "startup"
    startup.mkdir(parents=True)
    (startup / "00-mlm-book.py").write_text(KERNEL_STARTUP, encoding="utf-8")
    return folder, {"JUPYTER_CONFIG_PATH": os.pathsep.join([str(folder), *inherited]),
                    "IPYTHONDIR": str(folder / "ipython")}


def _kernel_over_ipc() -> None:
    """Point the kernels this process starts (mkdocs-jupyter's) at a settings folder of their own."""
    inherited = [path for path in os.environ.get("JUPYTER_CONFIG_PATH", "").split(os.pathsep) if path]
    folder, variables = _kernel_settings(inherited)
    os.environ.update(variables)
    _state["kernel_folder"] = folder
    _state["inherited_config_path"] = inherited


def _follow_progress() -> None:
    """Copy the lines that the chapters' kernel appends to the progress file into the log."""
    from mlm_book import progress

    handle = tempfile.NamedTemporaryFile("w", prefix="mlm-book-progress-", suffix=".log", delete=False)
    handle.close()
    os.environ[progress.ENVIRONMENT_VARIABLE] = handle.name
    stop = threading.Event()

    def follow():
        with open(handle.name, encoding="utf-8") as stream:
            while True:
                line = stream.readline()
                if line:
                    log.info("  %s", line.rstrip())
                elif stop.wait(0.5):
                    for rest in stream:
                        log.info("  %s", rest.rstrip())
                    return

    thread = threading.Thread(target=follow, name="mlm-book-progress", daemon=True)
    thread.start()
    _state["progress"] = (stop, thread, handle.name)


def _stop_following() -> None:
    """End the progress copy and remove the build's temporary files (progress log, kernel folder)."""
    kernel_folder = _state.pop("kernel_folder", None)
    if kernel_folder is not None:
        shutil.rmtree(kernel_folder, ignore_errors=True)
    found = _state.pop("progress", None)
    if found:
        stop, thread, name = found
        stop.set()
        thread.join(timeout=5)
        Path(name).unlink(missing_ok=True)


def on_config(config):
    root = _root(config)
    chapters = [{chapter_title(path): f"chapters/{path.name}"} for path in chapter_paths(root)]
    docs = Path(config["docs_dir"])
    pages = [{_page_title(path): path.name} for path in sorted(docs.glob("*.md")) if path.name != "index.md"]
    api = [{name: f"api/{name}.md"} for name in public_modules()]
    config["nav"] = [{"Home": "index.md"}, *chapters, *pages, {"API reference": api}]
    _kernel_over_ipc()
    _follow_progress()
    # mkdocs-jupyter's cache keys on a chapter's text alone, so it is on (mkdocs.yml leaves it off)
    # only with a folder named by everything else the output depends on
    # (a preview of some chapters, $MLM_BOOK_ONLY, leaves it off: the plugin would evict the others)
    if "MLM_BOOK_ONLY" not in os.environ:
        plugin = config.plugins["mkdocs-jupyter"]
        plugin.config["cache"] = True
        plugin.config["cache_dir"] = str(_execution_folder())
    return config


def on_nav(nav, config, files):
    # after on_files: the artefact build has ended and the claims thread started (docs/hooks/claims.py)
    plugin = config.plugins["mkdocs-jupyter"]
    if plugin.config["cache"]:
        _execute_missing(config, plugin)
    return nav


@mkdocs.plugins.event_priority(100)
def on_files(files, config):
    root = _root(config)
    for path in chapter_paths(root):
        files.append(File(f"chapters/{path.name}", src_dir=str(root), dest_dir=config["site_dir"],
                          use_directory_urls=config["use_directory_urls"]))
    for name in public_modules():
        content = f"---\nsearch:\n  boost: {API_SEARCH_BOOST}\n---\n\n# `{name}`\n\n::: {name}\n"
        files.append(File.generated(config, f"api/{name}.md", content=content))
    return files


def _is_chapter(page) -> bool:
    return page.file.src_uri.startswith("chapters/") and page.file.src_uri.endswith(".py")


def on_page_content(html, page, config, files):
    if not _is_chapter(page):
        return html
    html = html.replace('class="anchor-link"', 'class="headerlink"')
    stem = Path(page.file.src_uri).stem
    download = (f'<p class="book-download">Run this chapter yourself: download it as a '
                f'<a href="{stem}.ipynb" download>notebook</a> or as a '
                f'<a href="{stem}.py" download>Python script</a>.</p>')
    return re.sub(r"(</h1>)", r"\1" + download.replace("\\", "\\\\"), html, count=1)


def on_post_build(config):
    import jupytext

    root = _root(config)
    for path in chapter_paths(root):
        target = Path(config["site_dir"]) / "chapters" / f"{path.stem}.ipynb"
        target.parent.mkdir(parents=True, exist_ok=True)
        jupytext.write(jupytext.read(path), str(target), fmt="ipynb")
    # mkdocs writes 404.html with root-absolute links, for a web server to send on any
    # missing URL. This site is read from disk or served by http.server, which never send
    # it, and from disk its links point at the file system's root: leave it out.
    (Path(config["site_dir"]) / "404.html").unlink(missing_ok=True)
    _stop_following()


def on_build_error(error):
    _stop_following()
