"""The lab page as a reader uses it: from disk, in Chromium, clicking its controls.

The built page must hold exactly ``mlm_book.lab.viz_payload()`` (S10-14), small enough; in the
browser, over ``file://``, the first view must be drawn within a second of navigation, and every
number shown after a choice (a position and a display, a cycle, a filing window and a word, a
word and a layer of Figure D) must be the payload's, formatted as the page says; no console
error; at 390 px nothing may stick out of the column. A screenshot of each view is saved under
the test's ``tmp_path``.
"""

from __future__ import annotations

import html
import json
import re
from decimal import ROUND_HALF_UP, Decimal
from pathlib import Path

import pytest
from test_site import READER_CHECKS

from mlm_book.experiments import lab_figures
from mlm_book.readings import hmm_encoder, sense_probes
from mlm_book.experiments.lab_figures import PAYLOAD_LIMIT
from mlm_book.lab import payload_json, viz_payload

pytestmark = pytest.mark.book  # builds the site and opens it in a browser

DATA = re.compile(r'<script type="application/json" id="lab-data">(.*?)</script>', re.S)
READY_MS = 1000


@pytest.fixture(scope="module")
def payload() -> dict:
    return viz_payload()


def _embedded_text(site: Path) -> str:
    found = DATA.findall((site / "lab.html").read_text(encoding="utf-8"))
    assert len(found) == 1, "lab.html must hold the payload once"
    return found[0]


def test_the_page_holds_exactly_the_payload(site, payload):
    text = _embedded_text(site)
    assert json.loads(text) == payload
    assert text == payload_json(payload)  # byte for byte, not only equal after parsing


def test_the_payload_is_small_and_only_on_the_lab_page(site):
    assert len(_embedded_text(site).encode("utf-8")) <= PAYLOAD_LIMIT
    for page in ("index.html", "references.html", "chapters/04_geometry.html"):
        text = (site / page).read_text(encoding="utf-8")
        assert "lab-data" not in text and "assets/lab.js" not in text and "assets/lab.css" not in text, page
    lab = (site / "lab.html").read_text(encoding="utf-8")
    assert 'href="assets/lab.css"' in lab and 'src="assets/lab.js"' in lab
    assert 'id="lab-filings"' in lab and 'id="lab-clouds"' in lab


def test_the_chapters_print_the_numbers_the_lab_shows(site, payload):
    """Figure D's three-decimal values appear in chapter 4's and chapter 5's built tables."""
    ch4 = html.unescape((site / "chapters" / "04_geometry.html").read_text(encoding="utf-8"))
    ch5 = html.unescape((site / "chapters" / "05_probing.html").read_text(encoding="utf-8"))
    table, probes = hmm_encoder.geometry_table(), sense_probes.probe_table()
    for layer, row in enumerate(payload["clouds"]["layers"]):
        g = table.rows[layer].geometry
        for key, value in (("self_similarity", g.self_similarity), ("baseline", g.baseline),
                           ("adjusted", g.adjusted), ("mev", g.mev)):
            assert row[key] == value and f"{value:.3f}" in ch4, (layer, key)
        assert row["probe"] == probes.rows[layer].probe and f"{row['probe']:.3f}" in ch5
    assert f"{probes.cap:.3f}" in ch5 and f"{probes.bayes:.3f}" in ch5


# ---------------------------------------------------------------------------------------------
# In the browser
# ---------------------------------------------------------------------------------------------


def _open(browser, site, width):
    context = browser.new_context(viewport={"width": width, "height": 900})
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(f"pageerror: {error}"))
    page.on("console", lambda message: errors.append(f"console: {message.text}") if message.type == "error" else None)
    page.goto((site / "lab.html").as_uri())
    page.wait_for_function("() => window.labReadyMs !== undefined", timeout=10000)
    return context, page, errors


def _shown(page, name: str) -> tuple[str, float]:
    """The text and the exact value of the number the page shows under ``data-lab=name``."""
    locator = page.locator(f'[data-lab="{name}"]')
    assert locator.count() == 1, name
    return locator.inner_text().strip(), float(locator.get_attribute("data-value"))


def _expect(page, name: str, value: float, text: str):
    shown_text, shown_value = _shown(page, name)
    assert shown_value == value, (name, shown_value, value)
    assert shown_text == text, (name, shown_text, text)


def _delta(x: float) -> str:
    if x == 0:
        return "0"
    return f"{x:.2e}".replace("e-0", "e-").replace("e+0", "e+") if abs(x) < 1e-3 else f"{x:.3f}"


def test_the_views_show_the_payloads_numbers(site, browser, payload, tmp_path):
    context, page, errors = _open(browser, site, 1280)
    ready = page.evaluate("window.labReadyMs")
    assert ready < READY_MS, f"the first view was drawn {ready:.0f} ms after navigation (limit {READY_MS})"

    # Figure A, HMM view: the default, then a chosen position and display
    hmm = payload["hmm"]
    default = hmm["views"][hmm["default"]["position"]][hmm["default"]["display"]]
    _expect(page, "kl", default["kl"], f"{default['kl']:.3f}")
    _expect(page, "sense-a", hmm["sense_posterior"][0][0], f"{hmm['sense_posterior'][0][0]:.3f}")
    _expect(page, "caption-kl", hmm["caption"]["mean_kl"], f"{hmm['caption']['mean_kl']:.3f}")
    _expect(page, "caption-entropy", hmm["caption"]["mean_entropy"], f"{hmm['caption']['mean_entropy']:.3f}")
    position = payload["questions"][0]["value"]["position"]
    page.locator(f'input[name="lab-position"][value="{position}"]').check()
    page.locator('input[name="lab-display"][value="self"]').check()
    chosen = hmm["views"][position]["self"]
    for name, key in (("kl", "kl"), ("p-true-exact", "p_true_exact"), ("p-true-encoder", "p_true_encoder")):
        _expect(page, name, chosen[key], f"{chosen[key]:.3f}")
    bars = page.locator("#lab-hmm svg text.lab-bar-value").all_text_contents()
    best = max(range(25), key=lambda y: (chosen["exact"][y], -y))
    assert bars[:2] == [f"{chosen['exact'][best]:.3f}", f"{chosen['encoder'][best]:.3f}"]
    reads = page.locator("#lab-hmm .lab-read--here").inner_text()
    assert reads == payload["tokens"][hmm["tokens"][position]]
    page.locator('input[name="lab-display"][value="random"]').check()
    substitute = hmm["views"][position]["random"]
    _expect(page, "kl", substitute["kl"], f"{substitute['kl']:.3f}")
    assert page.locator("#lab-hmm .lab-read--here").inner_text() == payload["tokens"][hmm["substitutes"][position]]
    page.locator("#lab-hmm").screenshot(path=str(tmp_path / "hmm-view.png"))

    # Figure C, the four-cycle view: pick a cycle, then the next one
    cycles = payload["cycles"]
    for pick in ("select", "next"):
        if pick == "select":
            cycle = 17
            page.select_option("#lab-cycle", str(cycle))
        else:
            page.locator("#lab-cycles button", has_text="next").click()
            cycle = 18
        for family in cycles["families"]:
            value = family["delta"][cycle]
            _expect(page, f"delta-{family['key']}", value, _delta(value))
            for r in range(4):
                odds = family["log_odds"][cycle][r]
                _expect(page, f"odds-{family['key']}-{r}", odds, f"{odds:.3f}")
    assert page.locator("#lab-cycles svg circle").count() == 3 * cycles["count"] + 3
    page.locator("#lab-cycles").screenshot(path=str(tmp_path / "four-cycle-view.png"))

    # Figure D: switch layers, with the mouse and with the keyboard
    clouds = payload["clouds"]
    names = {"self-similarity": "self_similarity", "baseline": "baseline", "adjusted": "adjusted", "mev": "mev",
             "token-mev": "token_mev", "probe": "probe", "control": "control"}
    for layer in (0, 2):
        page.locator(f'input[name="lab-layer"][value="{layer}"]').check()
        row = clouds["layers"][layer]
        for name, key in names.items():
            _expect(page, name, row[key], f"{row[key]:.3f}")
        _expect(page, "cap", clouds["cap"], f"{clouds['cap']:.3f}")
        _expect(page, "bayes", clouds["bayes"], f"{clouds['bayes']:.3f}")
        assert page.locator("#lab-clouds svg circle").count() == clouds["n_shown"]
        page.locator("#lab-clouds").screenshot(path=str(tmp_path / f"clouds-layer-{layer}.png"))
    page.locator('input[name="lab-layer"][value="2"]').focus()
    page.keyboard.press("ArrowLeft")
    assert page.locator('input[name="lab-layer"]:checked').get_attribute("value") == "1"
    _expect(page, "adjusted", clouds["layers"][1]["adjusted"], f"{clouds['layers'][1]['adjusted']:.3f}")

    # the guided questions' answers are the payload's
    for question in payload["questions"]:
        assert page.locator(f'[data-lab-answer="{question["id"]}"]').text_content() == question["answer"]
    page.screenshot(path=str(tmp_path / "lab-1280.png"), full_page=True)
    context.close()
    assert not errors, errors


def _fixed(x: float, digits: int = 3) -> str:
    """JavaScript's ``x.toFixed(digits)``: the exact binary value rounded, a tie going up (for x ≥ 0)."""
    return str(Decimal(x).quantize(Decimal(1).scaleb(-digits), rounding=ROUND_HALF_UP))


def _prob(x: float) -> str:
    """The page's ``prob(x)``: three decimals, or ``toExponential(1)`` below 0.001."""
    if x == 0:
        return "0"
    if x < 1e-3:
        mantissa, exponent = f"{x:.1e}".split("e")
        return f"{mantissa}e{int(exponent)}"
    return _fixed(x)


def _expect_slot(page, slot: dict):
    for name in ("guess", "visible", "plugin"):
        _expect(page, f"filing-{name}", slot[name], _prob(slot[name]))
    labels = page.locator("#lab-filings svg text.lab-label").all_text_contents()
    values = page.locator("#lab-filings svg text.lab-bar-value").all_text_contents()
    rows = [(word, p) for word, p in slot["top"]]
    if slot["word"] not in [word for word, _ in rows]:
        rows.append((slot["word"], slot["guess"]))
    assert labels == [word + (" ✓" if word == slot["word"] else "") for word, _ in rows]
    assert values == [_prob(p) for _, p in rows]


def test_the_filing_view_and_kestrel_show_the_payloads_numbers(site, browser, payload, tmp_path):
    context, page, errors = _open(browser, site, 1280)
    filings = payload["filings"]
    centre = filings["centre"]

    # the default: the first window, its centre word
    first = filings["windows"][0]
    _expect_slot(page, first["slots"][centre])
    caption = filings["caption"]
    for name in ("guess", "plugin", "visible"):
        _expect(page, f"filing-caption-{name}", caption[name], _fixed(caption[name]))

    # the window and word of the largest shortfall (question 5), picked with the mouse
    where = payload["questions"][4]["value"]
    page.locator(f'input[name="lab-filing-window"][value="{where["window"]}"]').check()
    window = filings["windows"][where["window"]]
    _expect_slot(page, window["slots"][centre])                  # a new window starts at its centre
    page.locator(f'label:has(input[name="lab-filing-position"][value="{where["position"]}"])').click()
    slot = window["slots"][where["position"]]
    _expect_slot(page, slot)
    assert slot["plugin"] - slot["visible"] == where["shortfall"]
    # the keyboard: the next word of the window
    page.locator(f'input[name="lab-filing-position"][value="{where["position"]}"]').focus()
    page.keyboard.press("ArrowRight")
    following = next(i for i in range(where["position"] + 1, filings["length"]) if window["slots"][i] is not None)
    assert page.locator('input[name="lab-filing-position"]:checked').get_attribute("value") == str(following)
    _expect_slot(page, window["slots"][following])
    # [PAD] slots are not words: the product window's chips are its real slots only
    page.locator('input[name="lab-filing-window"][value="1"]').check()
    product = filings["windows"][1]
    assert page.locator('input[name="lab-filing-position"]').count() == sum(s is not None for s in product["slots"])
    assert "[PAD]" in page.locator("#lab-filings .lab-pad").last.inner_text()
    page.locator("#lab-filings").screenshot(path=str(tmp_path / "filing-view.png"))

    # Figure D: kestrel, at each layer
    kestrel = payload["kestrel"]
    assert lab_figures._kestrel_shown()["equal to chapter 7"]         # the payload is chapter 7's (S7-06)
    page.locator('input[name="lab-word"][value="kestrel"]').check()
    names = {"self-similarity": "self_similarity", "baseline": "baseline", "adjusted": "adjusted", "mev": "mev",
             "token-mev": "token_mev", "kestrel-probe": "probe", "typing": "typing"}
    for layer in (0, 2, 1):
        page.locator(f'input[name="lab-layer"][value="{layer}"]').check()
        row = kestrel["layers"][layer]
        for name, key in names.items():
            _expect(page, name, row[key], _fixed(row[key]))
            mean, sd = row["spread"][key]
            assert page.locator(f'[data-lab="{name}-spread"]').inner_text() == f"{_fixed(mean)} ± {_fixed(sd)}"
        _expect(page, "majority", kestrel["majority"], _fixed(kestrel["majority"]))
        _expect(page, "alias-majority", kestrel["alias_majority"], _fixed(kestrel["alias_majority"]))
        points = page.locator("#lab-clouds svg .lab-point").count()
        if layer == 0:
            assert row["single_point"] and points == 1
            assert page.locator('#lab-clouds [data-lab="single-point"]').text_content() == "one point: layer 0 is static"
        else:
            assert points == kestrel["n_occurrences"]
            assert page.locator("#lab-clouds svg rect.lab-point").count() == kestrel["counts"][1]  # products
        page.locator("#lab-clouds").screenshot(path=str(tmp_path / f"kestrel-layer-{layer}.png"))
    # back to w: its own cloud and table
    page.locator('input[name="lab-word"][value="w"]').check()
    assert page.locator("#lab-clouds svg circle").count() == payload["clouds"]["n_shown"]
    _expect(page, "bayes", payload["clouds"]["bayes"], f"{payload['clouds']['bayes']:.3f}")
    for question in payload["questions"][3:]:
        assert page.locator(f'[data-lab-answer="{question["id"]}"]').text_content() == question["answer"]
    context.close()

    # at 390 px, the product window and kestrel's layer-1 table fit the column (no scrolling box needed)
    context, page, more = _open(browser, site, 390)
    page.locator('input[name="lab-filing-window"][value="1"]').check()
    page.locator('input[name="lab-word"][value="kestrel"]').check()
    widest = page.evaluate("""() => Math.max(...[...document.querySelectorAll(
        '#lab-filings, #lab-filings svg, #lab-filings dl, #lab-clouds, #lab-clouds svg, #lab-clouds table')]
        .map(e => e.getBoundingClientRect().right))""")
    scroll = page.evaluate("() => document.documentElement.scrollWidth - document.documentElement.clientWidth")
    page.locator("#lab-filings").screenshot(path=str(tmp_path / "filing-view-390.png"))
    page.locator("#lab-clouds").screenshot(path=str(tmp_path / "kestrel-390.png"))
    context.close()
    assert widest <= 390 and scroll == 0, (widest, scroll)
    assert not errors and not more, errors + more


def test_every_control_has_a_label(site, browser):
    context, page, errors = _open(browser, site, 1280)
    unlabelled = page.evaluate("""() => [...document.querySelectorAll('.lab input, .lab select, .lab button')]
        .filter(e => !(e.labels && e.labels.length) && !e.textContent.trim() && !e.getAttribute('aria-label'))
        .map(e => e.outerHTML.slice(0, 80))""")
    context.close()
    assert not unlabelled and not errors, (unlabelled, errors)


def test_the_lab_fits_and_draws_its_equations_at_390_px(site, browser, tmp_path):
    context, page, errors = _open(browser, site, 390)
    page.wait_for_function("() => window.MathJax && MathJax.startup && MathJax.startup.promise", timeout=30000)
    page.evaluate("() => MathJax.startup.promise")
    found = page.evaluate(READER_CHECKS)
    widest = page.evaluate("""() => Math.max(...[...document.querySelectorAll('.lab, .lab svg')]
        .map(e => e.getBoundingClientRect().right))""")
    page.screenshot(path=str(tmp_path / "lab-390.png"), full_page=True)
    context.close()
    assert found["pageScroll"] == 0 and not found["overflowing"] and not found["rawMath"], found
    assert not found["shrunkMath"], f"equations drawn smaller than their size (blank at 390 px before): {found}"
    assert widest <= 390, widest
    assert not errors, errors
