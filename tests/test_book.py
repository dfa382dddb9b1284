"""The book builds: every chapter executes, math is typeset offline, a failing chapter fails.

These tests build the real site once (``mkdocs build --strict``, executing every chapter)
into a temporary directory, then open its pages in headless Chromium and count typeset
equations. ``make test`` installs Debian's ``chromium`` when it is missing.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
MKDOCS = [sys.executable, "-m", "mkdocs"]
CHAPTERS = sorted(path for path in (ROOT / "chapters").glob("[0-9][0-9]_*.py"))
BROWSER_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync",
                 "--allow-file-access-from-files", "--virtual-time-budget=30000", "--dump-dom"]


def _build(config: Path, site: Path, cwd: Path) -> subprocess.CompletedProcess:
    environment = dict(os.environ, NO_MKDOCS_2_WARNING="1")
    return subprocess.run([*MKDOCS, "build", "--strict", "-f", str(config), "-d", str(site)],
                          cwd=cwd, env=environment, capture_output=True, text=True, timeout=3000)


@pytest.fixture(scope="session")
def site(tmp_path_factory) -> Path:
    """The real book, built once for the whole session from the repository root."""
    out = tmp_path_factory.mktemp("book") / "site"
    result = _build(ROOT / "mkdocs.yml", out, ROOT)
    assert result.returncode == 0, f"mkdocs build failed:\n{result.stdout[-4000:]}\n{result.stderr[-8000:]}"
    return out


def _page(site: Path, src_uri: str) -> Path:
    stem = src_uri.removesuffix(".py").removesuffix(".md")
    return site / "index.html" if stem == "index" else site / stem / "index.html"


def test_no_chapter_heading_holds_math():
    """Headings feed the table of contents, which MathJax does not typeset."""
    offenders = [f"{path.name}: {line}" for path in CHAPTERS for line in path.read_text().splitlines()
                 if re.match(r"^# #+ .*\$", line)]
    assert not offenders, offenders


def test_there_are_chapters():
    assert CHAPTERS, "no chapters/NN_name.py found"


@pytest.mark.parametrize("chapter", CHAPTERS, ids=lambda path: path.stem)
def test_every_chapter_is_executed_with_outputs_and_figures(site, chapter):
    html = _page(site, f"chapters/{chapter.name}").read_text(encoding="utf-8")
    assert html.count("jp-OutputArea-output") >= 3, "the chapter shows too few executed outputs"
    assert "data:image/png;base64" in html, "the chapter shows no figure"


def test_the_site_loads_nothing_from_the_network(site):
    external = re.compile(r"""<(?:script|link|img)\b[^>]*\b(?:src|href)=["'](?:https?:)?//""", re.IGNORECASE)
    offenders = {str(page.relative_to(site)): external.findall(page.read_text(encoding="utf-8"))
                 for page in site.rglob("*.html")}
    offenders = {page: found for page, found in offenders.items() if found}
    assert not offenders, offenders


def test_the_claims_page_shows_every_claim_passing(site):
    from mlm_book import ledger

    html = _page(site, "claims.md").read_text(encoding="utf-8")
    ids = [claim.id for claim in ledger.all_claims()]
    assert all(f"<td>{claim_id}</td>" in html for claim_id in ids)
    assert "FAIL" not in html


def test_vendored_mathjax_is_the_recorded_file():
    readme = (ROOT / "docs/assets/mathjax/README.md").read_text()
    recorded = re.search(r"sha256: ([0-9a-f]{64})", readme).group(1)
    actual = hashlib.sha256((ROOT / "docs/assets/mathjax/tex-svg-full.js").read_bytes()).hexdigest()
    assert actual == recorded


def _typeset_dom(page: Path) -> str:
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    assert chromium, "Debian's chromium is needed for this test: `make test` installs it"
    result = subprocess.run([chromium, *BROWSER_FLAGS, page.as_uri()], capture_output=True, text=True,
                            timeout=180)
    assert result.returncode == 0, result.stderr[-2000:]
    return result.stdout


def _raw_math_left(dom: str) -> list[str]:
    """TeX delimiters still visible as text once MathJax has run (code and scripts aside)."""
    visible = re.sub(r"<(script|style|pre|code|mjx-container|textarea)\b.*?</\1>", " ", dom, flags=re.S)
    # mkdocs-jupyter keeps each cell's source in a hidden div for its copy button
    visible = re.sub(r'<div class="clipboard-copy-txt"[^>]*>.*?</div>', " ", visible, flags=re.S)
    visible = re.sub(r"<[^>]+>", " ", visible)
    pattern = r"\$\$[^$]+\$\$|(?<![\w$])\$[^$\s][^$]*?\$(?![\w$])|\\\(.+?\\\)|\\\[.+?\\\]"
    return re.findall(pattern, visible)


def _pages_with_math(site: Path) -> dict[str, Path]:
    pages = {"index": _page(site, "index.md")}
    for chapter in CHAPTERS:
        pages[chapter.stem] = _page(site, f"chapters/{chapter.name}")
    for candidate in ("mlm_book.channel", "mlm_book.pmi", "mlm_book.scoring", "mlm_book.ising"):
        path = _page(site, f"api/{candidate}.md")
        if path.exists():
            pages[candidate] = path
            break
    return pages


def test_math_is_typeset_offline_in_a_real_browser(site):
    pages = _pages_with_math(site)
    assert any(name.startswith("mlm_book.") for name in pages), "no API page with math was found"
    for name, page in pages.items():
        source = page.read_text(encoding="utf-8")
        dom = _typeset_dom(page)
        typeset = dom.count("<mjx-container")
        assert typeset > 0, f"{name}: MathJax typeset nothing"
        if "arithmatex" in source:
            assert typeset >= source.count('class="arithmatex"'), f"{name}: some arithmatex math left raw"
        left = _raw_math_left(dom)
        assert not left, f"{name}: raw TeX left on the page: {left[:5]}"


FAILING_CHAPTER = '''# %% [markdown]
# # Chapter 99 — A chapter that raises

# %%
raise RuntimeError("deliberate failure for the build test")
'''

PASSING_CHAPTER = '''# %% [markdown]
# # Chapter 1 — A chapter that runs
#
# Inline math $a^2 + b^2$ here.

# %%
print(6 * 7)
'''

KERNEL_HEADER = '''# ---
# jupyter:
#   jupytext:
#     text_representation:
#       extension: .py
#       format_name: percent
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

'''


def test_a_chapter_that_raises_fails_the_build(tmp_path):
    """The book's own mkdocs settings, on a temporary copy whose chapters we control."""
    shutil.copytree(ROOT / "docs", tmp_path / "docs")
    config = (ROOT / "mkdocs.yml").read_text()
    assert "allow_errors: false" in config
    # The Claims page recomputes every claim; it is not what this test is about.
    config = config.replace("  - docs/hooks/claims.py\n", "")
    (tmp_path / "docs/index.md").write_text("# Home\n\nA minimal home page with $x$.\n")
    (tmp_path / "mkdocs.yml").write_text(config)
    (tmp_path / "chapters").mkdir()
    (tmp_path / "chapters/01_runs.py").write_text(KERNEL_HEADER + PASSING_CHAPTER)

    passing = _build(tmp_path / "mkdocs.yml", tmp_path / "site", tmp_path)
    assert passing.returncode == 0, passing.stderr[-4000:]
    assert "42" in (tmp_path / "site/chapters/01_runs/index.html").read_text()

    (tmp_path / "chapters/99_raises.py").write_text(KERNEL_HEADER + FAILING_CHAPTER)
    failing = _build(tmp_path / "mkdocs.yml", tmp_path / "site2", tmp_path)
    assert failing.returncode != 0
    assert "deliberate failure for the build test" in failing.stdout + failing.stderr
