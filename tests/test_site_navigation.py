"""The built site's navigation, clicked as a reader clicks it: from disk, in Chromium driven by Playwright.

Every entry of the sidebar opens its page, the previous and next links walk the book in the
sidebar's order, and the search finds a chapter without a server. These tests are about
where links lead, so MathJax is not loaded (``test_book`` and ``test_site`` typeset every page
with math).
"""

from __future__ import annotations

import re

import pytest

pytestmark = pytest.mark.book  # builds the site and opens it in a browser


@pytest.fixture(scope="module")
def page(browser):
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    context.route("**/assets/mathjax/**", lambda route: route.abort())  # typesetting is not what is tested here
    opened = context.new_page()
    errors: list[str] = []
    opened.on("pageerror", lambda error: errors.append(str(error)))
    opened.errors = errors
    yield opened
    context.close()


def _h1(page) -> str:
    page.wait_for_load_state("domcontentloaded")  # the whole page, footer included, is parsed
    return page.locator("article h1").first.inner_text().replace("¶", "").strip()


def _expected_h1(title: str) -> str:
    """The nav's title of a page is its heading, except Home's and an API page's backticks."""
    return {"Home": "Contextual embeddings and the masked-LM objective"}.get(title, title)


def _nav_entries(page) -> list[tuple[str, str]]:
    """(href, title) of every page in the primary sidebar, in order, as the page shows them."""
    entries = page.eval_on_selector_all(
        "nav.md-nav--primary a.md-nav__link[href]",
        "links => links.map(a => [a.getAttribute('href'), a.textContent.trim()])")
    seen, pages = set(), []
    for href, title in entries:
        path = href.split("#")[0]
        if path and path not in seen:
            seen.add(path)
            pages.append((path, title))
    return pages


def _lands_on_a_page(page, title):
    url = page.url
    assert url.startswith("file://") and url.split("#")[0].endswith(".html"), f"{title}: landed on {url}"
    assert _h1(page) == _expected_h1(title), f"clicked {title!r}, the page's heading is {_h1(page)!r}"


def test_every_sidebar_entry_opens_its_page(site, page):
    page.goto((site / "index.html").as_uri())
    entries = _nav_entries(page)
    titles = [title for _, title in entries]
    assert titles[0] == "Home" and any(title.startswith("Chapter 3") for title in titles)
    assert "Sources and references" in titles and "Claims" in titles
    assert sum(title.startswith("mlm_book") for title in titles) >= 10, "the API reference is missing"
    for href, title in entries:
        # From the page we are on, find the entry by its title; open its collapsed section first.
        link = page.locator("nav.md-nav--primary a.md-nav__link[href]").filter(
            has_text=re.compile(rf"^\s*{re.escape(title)}\s*$")).first
        if not link.is_visible():
            section = link.locator("xpath=ancestor::li[contains(@class, 'md-nav__item--nested')][1]/label").first
            section.click()
        link.click()
        _lands_on_a_page(page, title)
    assert not page.errors, page.errors


def test_previous_and_next_links_walk_the_book_in_order(site, page):
    """Next from Home walks the reader's pages in the sidebar's order into the API reference, and
    previous walks back to Home (the API pages' footers come from the same template, and the
    sidebar test opens every one of them)."""
    page.goto((site / "index.html").as_uri())
    order = [_expected_h1(title) for _, title in _nav_entries(page)]
    stop = order.index("mlm_book") + 2  # into the API reference by two pages
    visited = [_h1(page)]
    while len(visited) < stop and page.locator("a.md-footer__link--next").count():
        page.locator("a.md-footer__link--next").click()
        visited.append(_h1(page))
    assert visited == order[:stop], (visited, order[:stop])
    back = [visited[-1]]
    while page.locator("a.md-footer__link--prev").count():
        page.locator("a.md-footer__link--prev").click()
        back.append(_h1(page))
    assert back == visited[::-1], back
    assert page.url.endswith("/index.html"), page.url


def test_search_works_from_disk_and_ranks_the_chapter_first(site, page):
    page.goto((site / "index.html").as_uri())
    page.locator("input.md-search__input").click()
    page.keyboard.type("pseudo-likelihood", delay=20)  # Material searches on key events, not on fill()
    results = page.locator("li.md-search-result__item > a.md-search-result__link")
    results.first.wait_for(timeout=20000)
    hrefs = [results.nth(i).get_attribute("href") for i in range(min(3, results.count()))]
    assert any("chapters/03_pseudo_likelihood.html" in href for href in hrefs), hrefs
    titles = page.locator("li.md-search-result__item").all_inner_texts()
    assert not any("¶" in title for title in titles), "a search result shows a stray pilcrow"
