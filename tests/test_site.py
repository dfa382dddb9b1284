"""The built site read as a reader reads it: from disk, in a real browser, at two widths.

The first tests read the built files (links, leftovers of Sphinx roles, the build's log,
the downloadable notebooks); the rest open the site over ``file://`` in Chromium driven by
Playwright: a figure opened full size, and, at 1280 and 390 px, what overflows, what lacks
alt text and what is left untypeset. ``test_site_navigation`` clicks through the sidebar,
the previous/next links and the search.
"""

from __future__ import annotations

import re
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlsplit

import pytest

from conftest import ROOT

pytestmark = pytest.mark.book  # builds the site and opens it in a browser

CHAPTERS = sorted(path for path in (ROOT / "chapters").glob("[0-9][0-9]_*.py"))
WIDTHS = (1280, 390)


class _Links(HTMLParser):
    """Collects the href/src of links, scripts, images and styles, and every element id."""

    def __init__(self):
        super().__init__()
        self.targets: list[str] = []
        self.ids: set[str] = set()

    def handle_starttag(self, tag, attrs):
        attributes = dict(attrs)
        if "id" in attributes:
            self.ids.add(attributes["id"])
        if tag == "a" and attributes.get("name"):
            self.ids.add(attributes["name"])
        for name in ("href", "src"):
            value = attributes.get(name)
            if value and tag in ("a", "link", "script", "img", "iframe"):
                self.targets.append(value)


def _parse(page: Path) -> _Links:
    parser = _Links()
    parser.feed(page.read_text(encoding="utf-8"))
    return parser


def _pages(site: Path) -> list[Path]:
    return sorted(site.rglob("*.html"))


def test_every_internal_link_names_an_existing_file_and_anchor(site):
    """Over file:// a link to a folder shows a listing: every link must name a file, and its anchor must exist."""
    parsed = {page: _parse(page) for page in _pages(site)}
    broken = []
    for page, links in parsed.items():
        for target in links.targets:
            parts = urlsplit(target)
            if parts.scheme in ("http", "https", "mailto", "data", "javascript") or target.startswith("//"):
                continue
            if not parts.path:  # a same-page anchor
                if parts.fragment and unquote(parts.fragment) not in links.ids:
                    broken.append(f"{page.relative_to(site)}: #{parts.fragment} (no such id)")
                continue
            resolved = (page.parent / unquote(parts.path)).resolve()
            if not resolved.is_file():
                broken.append(f"{page.relative_to(site)}: {target} (not a file)")
                continue
            if parts.fragment and resolved in parsed and unquote(parts.fragment) not in parsed[resolved].ids:
                broken.append(f"{page.relative_to(site)}: {target} (no such id)")
    assert not broken, f"{len(broken)} broken links, e.g.\n" + "\n".join(broken[:20])


def test_no_page_shows_a_raw_sphinx_role(site):
    role = re.compile(r":(?:func|class|meth|mod|attr|data|obj|exc):`")
    offenders = [str(page.relative_to(site)) for page in _pages(site) if role.search(page.read_text(encoding="utf-8"))]
    assert not offenders, offenders


def test_the_build_is_quiet_and_says_where_each_chapter_came_from(built):
    """Each chapter either executed in this build (timed) or came from the execution store (said once)."""
    _, result = built
    log = result.stdout + result.stderr
    assert "eavesdropping" not in log, "the chapters' kernel talked TCP (the build should use IPC)"
    assert "project.license" not in log
    for chapter in CHAPTERS:  # every page is rendered from the store, executed in this build or before
        assert re.search(rf"Cache hit: \S*/{re.escape(chapter.name)}$", log, re.M), chapter.name
    executed = re.findall(r"chapter (\S+) executed \(\d+ s since the first started\)", log)
    assert ("nothing executed" in log) != bool(executed), executed
    assert set(executed) <= {chapter.name for chapter in CHAPTERS}
    assert re.search(r"claims judged in \d+ s", log)


@pytest.mark.parametrize("chapter", CHAPTERS, ids=lambda path: path.stem)
def test_nothing_written_to_stderr_reaches_a_page(site, chapter):
    """Warnings (a dependency's deprecation, a RuntimeWarning) and progress lines stay out of the book."""
    html = (site / "chapters" / f"{chapter.stem}.html").read_text(encoding="utf-8")
    html = re.sub(r"<style\b.*?</style>", "", html, flags=re.S)  # the notebook CSS names the stderr class
    assert not re.search(r'<div[^>]*data-mime-type="application/vnd\.jupyter\.stderr"', html)
    assert not re.search(r"\b\w*Warning\b:", html), re.search(r".{200}\b\w*Warning\b:.{200}", html, re.S)


@pytest.mark.parametrize("chapter", CHAPTERS, ids=lambda path: path.stem)
def test_each_chapter_offers_its_notebook_and_script(site, chapter):
    import nbformat

    html = (site / "chapters" / f"{chapter.stem}.html").read_text(encoding="utf-8")
    assert f'href="{chapter.stem}.ipynb" download' in html and f'href="{chapter.stem}.py" download' in html
    notebook = nbformat.read(site / "chapters" / f"{chapter.stem}.ipynb", as_version=4)
    nbformat.validate(notebook)
    assert (site / "chapters" / chapter.name).read_text(encoding="utf-8") == chapter.read_text(encoding="utf-8")
    sources = "".join(cell.source for cell in notebook.cells)
    assert "import" in sources and len(notebook.cells) >= 5


# ---------------------------------------------------------------------------------------------
# In the browser
# ---------------------------------------------------------------------------------------------


def test_a_figure_opens_at_its_drawn_size_and_closes(site, browser):
    """At 390 px the column shrinks a figure below reading size; tapped, it opens at its drawn
    width in an overlay that scrolls, and Escape or a click closes it and returns the focus."""
    context = browser.new_context(viewport={"width": 390, "height": 800})
    page = context.new_page()
    page.goto((site / "chapters" / "05_probing.html").as_uri())
    figure = page.locator("figure.book-figure img").first
    figure.scroll_into_view_if_needed()
    shown = figure.bounding_box()["width"]
    drawn = float(figure.get_attribute("width"))
    assert shown < drawn, (shown, drawn)
    figure.click()
    opened = page.locator(".book-lightbox img")
    assert opened.get_attribute("alt") == figure.get_attribute("alt")
    assert abs(opened.bounding_box()["width"] - drawn) < 1, (opened.bounding_box(), drawn)
    page.keyboard.press("Escape")
    assert page.locator(".book-lightbox").count() == 0
    assert page.evaluate("document.activeElement.closest('figure.book-figure') !== null")
    page.keyboard.press("Enter")
    page.locator(".book-lightbox").click()
    assert page.locator(".book-lightbox").count() == 0
    context.close()


READER_CHECKS = r"""() => {
  const width = document.documentElement.clientWidth;
  const scrolls = el => { for (let p = el.parentElement; p; p = p.parentElement) {
      const o = getComputedStyle(p).overflowX; if (o === 'auto' || o === 'scroll') return true; } return false; };
  const overflowing = [...document.querySelectorAll('article *')]
    .filter(e => e.getBoundingClientRect().right > width + 1 && e.getBoundingClientRect().width > 0)
    .filter(e => !scrolls(e) && getComputedStyle(e).overflowX !== 'auto')
    .map(e => e.tagName + '.' + (e.className.baseVal ?? e.className)).slice(0, 5);
  const images = [...document.querySelectorAll('article img')];
  const noAlt = images.filter(i => !i.alt || i.alt.length < 20 || /no description/i.test(i.alt)).length;
  const clone = document.querySelector('article').cloneNode(true);
  clone.querySelectorAll('pre, code, script, style, mjx-container, .highlight, .jp-InputArea, textarea')
    .forEach(e => e.remove());
  const text = clone.textContent;
  const rawMath = text.match(/\$[^$\n]{1,80}\$|\\\(|\\\[/g) || [];
  const roles = text.match(/:(func|class|meth|mod|attr):/g) || [];
  const prompts = text.match(/\b(Out|In)\s*\[\s*\d*\s*\]:/g) || [];
  // A displayed equation drawn smaller than its own size (MathJax's svg height, in ex of its font):
  // squeezed into the column, or collapsed to nothing by the theme's narrow-screen rules.
  const shrunkMath = [...document.querySelectorAll('mjx-container[display="true"] > svg')].filter(svg => {
    const probe = document.createElement('span');
    probe.style.cssText = 'display:inline-block;width:10ex';
    svg.parentElement.parentElement.appendChild(probe);
    const ex = probe.getBoundingClientRect().width / 10;
    probe.remove();
    return svg.getBoundingClientRect().height < 0.9 * parseFloat(svg.getAttribute('height')) * ex;
  }).map(svg => svg.parentElement.textContent.slice(0, 40) || svg.getAttribute('width')).slice(0, 5);
  // On a wide screen every table fits the column (on a phone a table may scroll in its own box).
  const wideTables = width < 1000 ? [] : [...document.querySelectorAll('article table')]
    .filter(table => table.scrollWidth > table.clientWidth + 1)
    .map(table => (table.querySelector('th') || table).textContent.trim().slice(0, 40)).slice(0, 5);
  return {pageScroll: document.documentElement.scrollWidth - width, overflowing, images: images.length,
          noAlt, rawMath: rawMath.slice(0, 5), roles, prompts, shrunkMath, wideTables};
}"""


def _reader_pages(site: Path) -> list[Path]:
    pages = [site / "index.html", *(site / "chapters" / f"{c.stem}.html" for c in CHAPTERS)]
    others = sorted(path for path in site.glob("*.html") if path.name not in ("index.html",))
    return pages + others  # references, claims, the lab, and any page added to docs/


@pytest.mark.parametrize("width", WIDTHS)
def test_pages_fit_have_alt_text_and_no_raw_markup(site, browser, width):
    context = browser.new_context(viewport={"width": width, "height": 900})
    page = context.new_page()
    problems = {}
    for path in _reader_pages(site):
        page.goto(path.as_uri())
        page.wait_for_function("() => window.MathJax && MathJax.startup && MathJax.startup.promise", timeout=30000)
        page.evaluate("() => MathJax.startup.promise")
        found = page.evaluate(READER_CHECKS)
        bad = {key: value for key, value in found.items()
               if key not in ("images",) and value not in (0, [], None)}
        if path.parent.name == "chapters":
            assert found["images"] >= 1, f"{path.name}: no figure"
        if bad:
            problems[path.name] = bad
    context.close()
    assert not problems, problems


@pytest.mark.parametrize("chapter", CHAPTERS, ids=lambda path: path.stem)
def test_prose_cells_show_their_output_and_no_code(site, chapter):
    """Every cell tagged hide-input renders an output and no input area (nbconvert tags it celltag_hide-input)."""
    html = (site / "chapters" / f"{chapter.stem}.html").read_text(encoding="utf-8")
    cells = re.split(r'(?=<div class="jp-Cell )', html)
    # mkdocs-jupyter wraps each cell in a twin div without an id: count the cells themselves
    prose = [cell for cell in cells if re.match(r'<div class="jp-Cell [^"]*celltag_hide-input" id="cell-id=', cell)]
    tagged = chapter.read_text(encoding="utf-8").count('# %% tags=["hide-input"]')
    assert tagged >= 3, f"{chapter.name}: prose written from computed numbers should sit in hide-input cells"
    assert len(prose) == tagged
    for cell in prose:
        assert "jp-Cell-inputWrapper" not in cell and "jp-OutputArea-output" in cell
