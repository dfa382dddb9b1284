"""The record ``make book`` leaves in ``site/``: the site's tests trust it only while the sources match it."""

from __future__ import annotations

import importlib.util
import json

import pytest
from conftest import ROOT

pytest.importorskip("mkdocs", reason="the site's build tooling needs the docs extra (make check-oldest installs only test)")

spec = importlib.util.spec_from_file_location("build_site", ROOT / "docs" / "hooks" / "build_site.py")
build_site = importlib.util.module_from_spec(spec)
spec.loader.exec_module(build_site)


@pytest.fixture(scope="module")
def digest():
    return build_site.site_digest()


def _site(tmp_path, **record):
    (tmp_path / build_site.RECORD).write_text(json.dumps({"args": [], "stdout": "log", "stderr": "", **record}))
    return tmp_path


def test_a_successful_build_of_the_current_sources_is_used(tmp_path, digest):
    record = build_site.recorded_build(_site(tmp_path, returncode=0, digest=digest))
    assert record is not None and record["stdout"] == "log"


@pytest.mark.parametrize("change", ["digest", "returncode"])
def test_a_stale_or_failed_build_is_not_used(tmp_path, digest, change):
    record = {"returncode": 0, "digest": digest} | {change: {"digest": "0" * 24, "returncode": 1}[change]}
    assert build_site.recorded_build(_site(tmp_path, **record)) is None


@pytest.mark.parametrize("text", [None, "", "{not json", "[]"])
def test_a_missing_or_damaged_record_is_not_used(tmp_path, text):
    if text is not None:
        (tmp_path / build_site.RECORD).write_text(text)
    assert build_site.recorded_build(tmp_path) is None


def test_the_digest_follows_a_chapter_and_a_page(tmp_path):
    for folder in ("mlm_book", "docs", "chapters"):
        (tmp_path / folder).mkdir()
    (tmp_path / "mkdocs.yml").write_text("site_name: x\n")
    (tmp_path / "mlm_book" / "__init__.py").write_text("")
    (tmp_path / "chapters" / "01_a.py").write_text("print(1)\n")
    (tmp_path / "docs" / "index.md").write_text("# Home\n")
    first = build_site.site_digest(tmp_path)
    (tmp_path / "docs" / "__pycache__").mkdir()
    (tmp_path / "docs" / "__pycache__" / "x.pyc").write_bytes(b"\0")
    assert build_site.site_digest(tmp_path) == first, "bytecode written during a build is not a source"
    (tmp_path / "chapters" / "01_a.py").write_text("print(2)\n")
    second = build_site.site_digest(tmp_path)
    (tmp_path / "docs" / "index.md").write_text("# Home page\n")
    assert len({first, second, build_site.site_digest(tmp_path)}) == 3
