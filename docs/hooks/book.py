"""MkDocs hook: chapters from the top-level ``chapters/``, one API page per module, the nav.

* ``on_config`` writes the navigation: Home, the chapters in file order (titled by each
  chapter's first Markdown heading), and the API reference (``claims.py`` inserts the
  Claims page when it is configured).
* ``on_files`` adds every ``chapters/NN_name.py`` to the site's files with the
  repository root as its source directory, so that mkdocs-jupyter (which runs after this
  hook, hence the priority) converts and executes it; and it generates one mkdocstrings
  page per public module of ``mlm_book``.

Nothing here knows a chapter or module by name, so adding either never touches
``mkdocs.yml``.
"""

from __future__ import annotations

import pkgutil
import re
from pathlib import Path

import mkdocs.plugins
from mkdocs.structure.files import File

CHAPTER_PATTERN = re.compile(r"^\d\d_[a-z0-9_]+\.py$")


def _root(config) -> Path:
    return Path(config["config_file_path"]).resolve().parent


def chapter_paths(root: Path) -> list[Path]:
    """The chapter scripts in reading order (their file names start with two digits)."""
    return sorted(path for path in (root / "chapters").glob("*.py") if CHAPTER_PATTERN.match(path.name))


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


def on_config(config):
    root = _root(config)
    chapters = [{chapter_title(path): f"chapters/{path.name}"} for path in chapter_paths(root)]
    api = [{name: f"api/{name}.md"} for name in public_modules()]
    config["nav"] = [
        {"Home": "index.md"},
        {"Chapters": chapters},
        {"API reference": api},
    ]
    return config


@mkdocs.plugins.event_priority(100)
def on_files(files, config):
    root = _root(config)
    for path in chapter_paths(root):
        files.append(File(f"chapters/{path.name}", src_dir=str(root), dest_dir=config["site_dir"],
                          use_directory_urls=config["use_directory_urls"]))
    for name in public_modules():
        content = f"# `{name}`\n\n::: {name}\n"
        files.append(File.generated(config, f"api/{name}.md", content=content))
    return files
