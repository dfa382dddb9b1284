"""The book builds: every chapter executes, math is typeset offline, a failing chapter fails.

These tests use the real site built once per session (``conftest.py``), then open its
pages in headless Chromium and count typeset equations. ``make test`` installs Debian's
``chromium`` when it is missing and it can.
"""

from __future__ import annotations

import hashlib
import re
import shutil
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path

import pytest

from conftest import ROOT, build_site

pytestmark = pytest.mark.book  # builds the site, executing every chapter

CHAPTERS = sorted(path for path in (ROOT / "chapters").glob("[0-9][0-9]_*.py"))


def _page(site: Path, src_uri: str) -> Path:
    """Where a source file's page is built (the site uses .html URLs, not folders)."""
    return site / (src_uri.removesuffix(".py").removesuffix(".md") + ".html")


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
    assert re.search(r'<figure class="book-figure"><img [^>]*src="data:image/svg\+xml;base64,', html), \
        "the chapter shows no figure"
    assert not re.search(r'<img [^>]*src="data:image/png', html), \
        "a figure bypassed mlm_book.figures.show (a bitmap without alt text)"


def test_the_site_loads_nothing_from_the_network(site):
    external = re.compile(r"""<(?:script|link|img)\b[^>]*\b(?:src|href)=["'](?:https?:)?//""", re.IGNORECASE)
    offenders = {str(page.relative_to(site)): external.findall(page.read_text(encoding="utf-8"))
                 for page in site.rglob("*.html")}
    offenders = {page: found for page, found in offenders.items() if found}
    assert not offenders, offenders


def test_the_claims_page_shows_every_claim_passing_grouped_by_chapter(site):
    from mlm_book import ledger

    html = _page(site, "claims.md").read_text(encoding="utf-8")
    claims = ledger.all_claims()
    assert all(f'<tr id="{claim.id}">' in html for claim in claims)
    # each row's id links to the section of its chapter (or of the lab) that makes the claim; the link checker of
    # test_site.py checks that the anchors exist
    links = dict(re.findall(r'<tr id="([^"]+)"><td><a href="([^"]+)"', html))
    assert all(re.fullmatch(r"(chapters/\d\d_\w+|lab)\.html" + (f"#{claim.section}" if claim.section else ""),
                            links.get(claim.id, "")) for claim in claims), links
    assert "FAIL" not in html.split('<dl class="claims-legend">')[1].split("</dl>")[1]  # the legend names it
    # the verdicts are totalled on top, and the totals count every stated verdict
    counts = re.search(r"<strong>\d+ of (\d+) claims pass:</strong> (\d+) reproduced, (\d+) seed-dependent, "
                       r"(\d+) not reproduced, (\d+) checked on a single value", html)
    assert counts, "no totals by verdict on top"
    judged, *by_verdict = map(int, counts.groups())
    assert judged == sum(not claim.reported for claim in claims) == sum(by_verdict)
    assert sum(by_verdict[:3]) == sum(claim.expected is not None for claim in claims)
    # one section per chapter, in order, each linking its chapter; reported values in tables of their own
    sections = re.findall(r'<h2 id="[^"]*">(Chapter (\d+) — [^<]*|The lab)', html)
    numbers = [int(number) for _, number in sections if number]
    assert numbers == sorted(numbers) and len(numbers) >= 10, sections
    assert all(f'href="chapters/{script.stem}.html"' in html for script in (ROOT / "chapters").glob("[0-9][0-9]_*.py"))
    reported = html.split("with no rule (")[1:]
    assert sum(claim.reported for claim in claims) == sum(int(part.split(")")[0]) for part in reported)
    # the rules' plain-text math is typeset
    tables = "".join(re.findall(r"<table>.*?</table>", html, re.S))
    assert "&gt;=" not in tables and "&lt;=" not in tables and "pi_k" not in tables and "<sub>" in tables


@pytest.mark.parametrize("folder, name", [("mathjax", "tex-svg-full.js"), ("iframe-worker", "shim.js")])
def test_vendored_assets_are_the_recorded_files(folder, name):
    readme = (ROOT / f"docs/assets/{folder}/README.md").read_text()
    recorded = re.search(r"sha256: ([0-9a-f]{64})", readme).group(1)
    actual = hashlib.sha256((ROOT / f"docs/assets/{folder}/{name}").read_bytes()).hexdigest()
    assert actual == recorded


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


def test_math_is_typeset_offline_in_a_real_browser(site, browser):
    """Each page with math, opened from disk with every request beyond ``file://`` refused, typesets
    all of it: MathJax comes from the site itself, and no TeX is left raw."""
    pages = _pages_with_math(site)
    assert any(name.startswith("mlm_book.") for name in pages), "no API page with math was found"
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    refused: list[str] = []
    context.route(re.compile(r"^(?!file:)"), lambda route: (refused.append(route.request.url), route.abort()))
    page = context.new_page()
    for name, path in pages.items():
        source = path.read_text(encoding="utf-8")
        page.goto(path.as_uri())
        page.wait_for_function("() => window.MathJax && MathJax.startup && MathJax.startup.promise", timeout=30000)
        page.evaluate("() => MathJax.startup.promise")
        dom = page.content()
        typeset = dom.count("<mjx-container")
        assert typeset > 0, f"{name}: MathJax typeset nothing"
        if "arithmatex" in source:
            assert typeset >= source.count('class="arithmatex"'), f"{name}: some arithmatex math left raw"
        left = _raw_math_left(dom)
        assert not left, f"{name}: raw TeX left on the page: {left[:5]}"
    context.close()
    assert not refused, f"pages asked the network for {refused[:5]}"


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
import warnings

warnings.warn("deliberate warning for the build test", DeprecationWarning)
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


def _minimal_book(folder: Path) -> Path:
    """The book's own mkdocs settings and hooks on a copy with one passing chapter; returns its config.

    The Claims page (every claim recomputed), the lab (its payload) and the API reference's
    rendering are left out: they are not what these builds are about.
    """
    shutil.copytree(ROOT / "docs", folder / "docs")
    config = (ROOT / "mkdocs.yml").read_text()
    assert "allow_errors: false" in config
    config = re.sub(r"\n  - docs/hooks/(claims|lab)\.py[^\n]*", "", config)
    # the API reference is not what these builds test either: its pages stay, as plain text
    config = re.sub(r"\n  - mkdocstrings:\n(?:      .*\n|\s*\n)*", "\n", config)
    assert "mkdocstrings" not in config
    for page in (folder / "docs").glob("*.md"):  # the book's pages link to its chapters
        page.unlink()
    (folder / "docs/index.md").write_text("# Home\n\nA minimal home page with $x$.\n")
    (folder / "mkdocs.yml").write_text(config)
    (folder / "chapters").mkdir()
    (folder / "chapters/01_runs.py").write_text(KERNEL_HEADER + PASSING_CHAPTER)
    return folder / "mkdocs.yml"


def test_a_chapter_that_raises_fails_the_build(tmp_path):
    config = _minimal_book(tmp_path)
    passing = build_site(config, tmp_path / "site", tmp_path, store=tmp_path / "store")
    assert passing.returncode == 0, passing.stderr[-4000:]
    page = (tmp_path / "site/chapters/01_runs.html").read_text()
    assert "42" in page
    # a warning goes to the build's log, not the page (whose code cell shows the call itself)
    assert "DeprecationWarning: deliberate warning" not in page
    assert not re.search(r'<div[^>]*data-mime-type="application/vnd\.jupyter\.stderr"', page)
    assert "warning kept out of the page: DeprecationWarning: deliberate warning" in passing.stderr

    (tmp_path / "chapters/99_raises.py").write_text(KERNEL_HEADER + FAILING_CHAPTER)
    failing = build_site(config, tmp_path / "site2", tmp_path, store=tmp_path / "store")
    assert failing.returncode != 0
    assert "deliberate failure for the build test" in failing.stdout + failing.stderr
    assert "chapter 99_raises.py failed while executing" in failing.stderr


def _executed_pages(store: Path) -> list[Path]:
    return sorted((store / "executed-chapters").glob("*/*.json"))


def test_an_unchanged_chapter_is_rendered_from_the_execution_store_and_a_changed_one_runs_again(tmp_path):
    config, store = _minimal_book(tmp_path), tmp_path / "store"
    first = build_site(config, tmp_path / "site", tmp_path, store=store)
    assert first.returncode == 0, first.stderr[-4000:]
    assert "executing 1 chapters" in first.stderr and "deliberate warning" in first.stderr
    [page] = _executed_pages(store)
    html = (tmp_path / "site/chapters/01_runs.html").read_text()

    again = build_site(config, tmp_path / "site", tmp_path, store=store)
    assert again.returncode == 0, again.stderr[-4000:]
    assert "nothing executed" in again.stderr and "deliberate warning" not in again.stderr
    assert (tmp_path / "site/chapters/01_runs.html").read_text() == html

    page.write_text(page.read_text()[:100])  # a write cut short is not trusted: the chapter runs again
    cut = build_site(config, tmp_path / "site", tmp_path, store=store)
    assert cut.returncode == 0 and "executing 1 chapters" in cut.stderr
    executed = (tmp_path / "site/chapters/01_runs.html").read_text()
    cell_ids = re.compile(r"cell-id=[0-9a-f]+")  # jupytext draws new ones at every reading
    assert cell_ids.sub("", executed) == cell_ids.sub("", html)

    chapter = tmp_path / "chapters/01_runs.py"
    chapter.write_text(chapter.read_text().replace("6 * 7", "6 * 9"))
    changed = build_site(config, tmp_path / "site", tmp_path, store=store)
    assert changed.returncode == 0 and "executing 1 chapters" in changed.stderr
    assert "54" in (tmp_path / "site/chapters/01_runs.html").read_text()
    assert len(_executed_pages(store)) == 1, "the plugin keeps only the pages this build used"


def test_the_execution_store_is_keyed_on_the_package_source(tmp_path):
    """A change anywhere in the package names another folder: no chapter is served from before it."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("book_hook", ROOT / "docs/hooks/book.py")
    hook = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(hook)
    import mlm_book

    package = shutil.copytree(Path(mlm_book.__file__).parent, tmp_path / "mlm_book",
                              ignore=shutil.ignore_patterns("__pycache__"))
    before = hook.execution_key(package)
    assert hook.execution_key(package) == before
    (package / "ledger.py").write_text((package / "ledger.py").read_text() + "\n# one more line\n")
    assert hook.execution_key(package) != before


def test_a_chapter_builds_with_no_network_at_all(tmp_path):
    """The chapters' kernel talks IPC, not TCP on 127.0.0.1: it runs in a network namespace whose
    loopback is down (where a TCP kernel never answers), as on a machine without network."""
    import os

    unshare = shutil.which("unshare")
    probe = subprocess.run([unshare, "-rn", "true"], capture_output=True) if unshare else None
    if probe is None or probe.returncode != 0:
        pytest.skip("unshare -rn (a user network namespace) is not available here")
    config = _minimal_book(tmp_path)
    environment = dict(os.environ, NO_MKDOCS_2_WARNING="1")
    environment["MLM_BOOK_CACHE"] = str(tmp_path / "store")  # a fresh store: the chapter runs in a kernel here
    result = subprocess.run([unshare, "-rn", sys.executable, "-m", "mkdocs", "build", "--strict", "-f", str(config),
                             "-d", str(tmp_path / "site")], cwd=tmp_path, env=environment, capture_output=True,
                            text=True, timeout=600)
    assert result.returncode == 0, result.stderr[-4000:]
    assert "Kernel didn't respond" not in result.stderr
    assert "42" in (tmp_path / "site/chapters/01_runs.html").read_text()


#: Words a reader of the site does not have: claim ids, and the names of the book's own sources and machine.
BOOKKEEPING = re.compile(r"\b(?:S\d+-W?\d+|D-\d+)\b|reference text|study notes|the study this book|topic page|"
                         r"two cores|training time \(as built\)", re.IGNORECASE)


class _Prose(HTMLParser):
    """The text of a page's prose: rendered Markdown (cells and the chapters' Markdown outputs), code left out."""

    def __init__(self):
        super().__init__()
        self.open: list[tuple[str, bool, bool]] = []  # (tag, opens prose, opens code)
        self.prose = self.code = 0
        self.text: list[str] = []

    def handle_starttag(self, tag, attrs):
        opens_prose = "jp-RenderedMarkdown" in (dict(attrs).get("class") or "")
        opens_code = tag in ("code", "pre", "script", "style")
        self.open.append((tag, opens_prose, opens_code))
        self.prose += opens_prose
        self.code += opens_code

    def handle_endtag(self, tag):
        while self.open:
            name, opened_prose, opened_code = self.open.pop()
            self.prose -= opened_prose
            self.code -= opened_code
            if name == tag:
                break

    def handle_data(self, data):
        if self.prose and not self.code:
            self.text.append(data)


def _prose(html: str) -> str:
    parser = _Prose()
    parser.feed(html)
    return " ".join(parser.text)


def test_the_prose_scanner_reads_markdown_and_skips_code():
    html = ('<div class="jp-RenderedHTMLCommon jp-RenderedMarkdown"><p>as S3-26 says <code>S2-16</code></p></div>'
            '<div class="jp-RenderedHTML"><td>S1-01</td></div>')
    assert BOOKKEEPING.findall(_prose(html)) == ["S3-26"]


@pytest.mark.parametrize("chapter", CHAPTERS, ids=lambda path: path.stem)
def test_the_prose_names_no_claim_id_and_no_bookkeeping(site, chapter):
    """Claim ids belong on the Claims page and in the folded claims table, not in sentences."""
    text = _prose(_page(site, f"chapters/{chapter.name}").read_text(encoding="utf-8"))
    found = sorted({match.group(0) for match in BOOKKEEPING.finditer(text)})
    assert not found, found
