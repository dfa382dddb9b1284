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
* ``on_page_content`` logs each chapter's execution time, turns the notebook's heading
  anchors into Material's (so search results carry no stray pilcrow), and adds links to
  download the chapter as a notebook or a script; ``on_post_build`` writes those notebooks
  and removes ``404.html`` (its links are root-absolute: broken from disk, never served).

Nothing here knows a chapter or module by name, so adding either never touches
``mkdocs.yml``.
"""

from __future__ import annotations

import json
import logging
import os
import pkgutil
import re
import tempfile
import threading
import time
from pathlib import Path

import mkdocs.plugins
from mkdocs.structure.files import File

CHAPTER_PATTERN = re.compile(r"^\d\d_[a-z0-9_]+\.py$")
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


def _kernel_over_ipc() -> None:
    """nbconvert reads ``jupyter_nbconvert_config`` from ``$JUPYTER_CONFIG_PATH``: ask for IPC.

    The same folder serves as the kernel's ``IPYTHONDIR``, whose startup file sends warnings
    to the build's log.
    """
    folder = Path(tempfile.mkdtemp(prefix="mlm-book-kernel-"))
    settings = {"KernelManager": {"transport": "ipc", "ip": str(folder / "kernel")}}
    (folder / "jupyter_nbconvert_config.json").write_text(json.dumps(settings), encoding="utf-8")
    paths = [str(folder), *filter(None, os.environ.get("JUPYTER_CONFIG_PATH", "").split(os.pathsep))]
    os.environ["JUPYTER_CONFIG_PATH"] = os.pathsep.join(paths)
    startup = folder / "ipython" / "profile_default" / "startup"
    startup.mkdir(parents=True)
    (startup / "00-mlm-book.py").write_text(KERNEL_STARTUP, encoding="utf-8")
    os.environ["IPYTHONDIR"] = str(folder / "ipython")
    _state["kernel_folder"] = folder


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
    import shutil

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
    return config


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


def on_page_markdown(markdown, page, config, files):
    if _is_chapter(page):
        _state[page.file.src_uri] = time.perf_counter()
    return markdown


def on_page_content(html, page, config, files):
    if not _is_chapter(page):
        return html
    seconds = time.perf_counter() - _state.pop(page.file.src_uri, time.perf_counter())
    log.info("chapter %s executed in %.1f s", Path(page.file.src_uri).name, seconds)
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
