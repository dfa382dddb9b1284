"""Build the site (``mkdocs build --strict``) and record the build beside it, for the site's tests.

``make book`` runs ``python docs/hooks/build_site.py site``: mkdocs's output is shown as it
comes and kept, and once the build has succeeded ``site/.build.json`` records it: the
output, and the digest of everything the pages were made from (:func:`site_digest`). The
site's tests (``make test-book``) read ``site/`` when its record's digest is the sources'
digest now, and otherwise build the book again into a folder of their own, so a stale or
partial ``site/`` is never what they test.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
RECORD = ".build.json"


def _book_hook():
    spec = importlib.util.spec_from_file_location("mlm_book_site_hook", ROOT / "docs" / "hooks" / "book.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def site_digest(root: Path = ROOT) -> str:
    """The digest of what the site is built from.

    The chapters' execution key (the package's source, the hooks' kernel set-up, every
    installed distribution's version, the Python, the machine and its BLAS kernels), and the
    text of the site's configuration, its pages and hooks, and the chapters.
    """
    digest = hashlib.sha256(_book_hook().execution_key(root / "mlm_book").encode())
    files = [root / "mkdocs.yml", *sorted((root / "docs").rglob("*")), *sorted((root / "chapters").glob("*.py"))]
    for path in files:
        if path.is_file() and "__pycache__" not in path.parts:
            digest.update(path.relative_to(root).as_posix().encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()[:24]


def recorded_build(site: Path) -> dict | None:
    """The record of the successful build that made ``site``, if the sources are still what it was built from."""
    try:
        record = json.loads((site / RECORD).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(record, dict) or record.get("returncode") != 0 or record.get("digest") != site_digest():
        return None
    return record


def main(site_dir: str) -> int:
    site = Path(site_dir).resolve()
    before = site_digest()
    command = [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(site)]
    lines = []
    with subprocess.Popen(command, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                          bufsize=1) as process:
        for line in process.stdout:
            sys.stdout.write(line)
            lines.append(line)
    # a preview of some chapters ($MLM_BOOK_ONLY) is not the book; sources edited during the build leave no record
    if process.returncode == 0 and "MLM_BOOK_ONLY" not in os.environ and site_digest() == before:
        record = {"args": command, "returncode": 0, "digest": before, "stdout": "".join(lines), "stderr": ""}
        (site / RECORD).write_text(json.dumps(record), encoding="utf-8")
    return process.returncode


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: python docs/hooks/build_site.py SITE_DIR")
    sys.exit(main(sys.argv[1]))
