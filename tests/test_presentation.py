"""What chapters display: figures (style, alt text, size), tables, answers, claims summaries,
progress lines and the encoder's diagram."""

from __future__ import annotations

import base64
import re

import matplotlib
import numpy as np
import pytest

from mlm_book import figures, ledger, progress, report
from mlm_book.nn.diagram import figure_architecture
from mlm_book.nn.encoder import EncoderConfig

ALT = "A straight line rising from the origin."


def _line_figure(width=figures.NARROW):
    fig, ax = figures.subplots(width=width, height=2.0)
    ax.plot([0, 1], [0, 1], label="a line")
    ax.set_xlabel("x")
    return fig


def test_show_writes_alt_text_and_draws_at_the_page_size():
    shown = figures.show(_line_figure(), alt=ALT, caption=r"A line; $y = x$.")
    html = shown._repr_html_()
    assert f'alt="{ALT}"' in html
    assert f'width="{round(figures.NARROW * 96)}"' in html  # 96 CSS px per inch: drawn size = shown size
    assert "<figcaption>A line; $y = x$.</figcaption>" in html
    svg = base64.b64decode(re.search(r"base64,([^\"]+)", html).group(1))
    assert svg.startswith(b"<?xml") and b"<svg" in svg


def test_show_closes_the_figure_so_the_notebook_does_not_show_it_twice():
    import matplotlib.pyplot as plt

    fig = _line_figure()
    figures.show(fig, alt=ALT)
    assert fig.number not in plt.get_fignums()


def test_the_svg_is_the_same_on_every_rebuild():
    assert figures.svg_bytes(_line_figure()) == figures.svg_bytes(_line_figure())


@pytest.mark.parametrize("alt", ["", "a line", "The line $y = x$ rises steadily."])
def test_show_refuses_an_alt_text_that_describes_nothing_or_holds_tex(alt):
    with pytest.raises(ValueError, match="alt"):
        figures.show(_line_figure(), alt=alt)


def test_show_refuses_what_is_not_a_figure():
    with pytest.raises(TypeError, match="fig"):
        figures.show("figure.png", alt=ALT)


def test_a_described_figure_brings_its_words_and_refuses_others():
    described = figures.describe(_line_figure(), alt=ALT, caption="A line.")
    html = figures.show(described)._repr_html_()
    assert f'alt="{ALT}"' in html and "<figcaption>A line.</figcaption>" in html
    with pytest.raises(TypeError, match="alt"):
        figures.show(figures.describe(_line_figure(), alt=ALT), alt=ALT)
    with pytest.raises(TypeError, match="alt is required"):
        figures.show(_line_figure())
    with pytest.raises(ValueError, match="alt"):
        figures.describe(_line_figure(), alt="a line")
    with pytest.raises(TypeError, match="figure"):
        figures.describe("figure.png", alt=ALT)


@pytest.mark.parametrize("width", [0, -1, 13, "wide", True])
def test_subplots_refuses_sizes_that_are_not_page_inches(width):
    with pytest.raises(ValueError, match="width"):
        figures.subplots(width=width)


def test_the_style_sets_no_global_state():
    before = dict(matplotlib.rcParams)
    figures.show(_line_figure(), alt=ALT)
    assert dict(matplotlib.rcParams) == before


def test_tick_labels_are_at_least_the_minimum_size_when_rendered():
    fig = _line_figure()
    figures.svg_bytes(fig)  # ticks are made while rendering, inside the style
    sizes = [label.get_fontsize() for ax in fig.axes for label in ax.get_xticklabels() + ax.get_yticklabels()]
    assert sizes and min(sizes) >= figures.MIN_FONT_SIZE


def test_the_palette_is_okabe_ito():
    assert figures.PALETTE["blue"] == "#0072B2" and figures.PALETTE["vermillion"] == "#D55E00"
    assert figures.SENSE_COLORS == (figures.PALETTE["blue"], figures.PALETTE["orange"])


def test_table_formats_numbers_per_column_and_escapes_pipes():
    text = report.table(["name", "value"], [("a|b", 0.123456), ("c", 7)], formats=[None, ".2f"])
    assert text.splitlines() == ["| name | value |", "|---|---|", "| a\\|b | 0.12 |", "| c | 7.00 |"]
    assert text._repr_markdown_() == str(text)


def test_table_leaves_booleans_and_text_alone():
    assert report.table(["flag"], [(True,)], formats=[".2f"]).splitlines()[-1] == "| True |"


@pytest.mark.parametrize("rows, formats", [([(1,)], None), ([(1, 2, 3)], None), ([(1, 2)], [None])])
def test_table_refuses_rows_or_formats_of_the_wrong_length(rows, formats):
    with pytest.raises(ValueError):
        report.table(["a", "b"], rows, formats=formats)


def test_answer_is_folded_escaped_and_keeps_math():
    html = report.answer("The cap is **0.51** for `x < y`.\n\nSecond: $\\pi_a$ and *both*.")._repr_html_()
    assert html.startswith('<details class="exercise-answer"><summary>Answer</summary>')
    assert "<strong>0.51</strong>" in html and "<code>x &lt; y</code>" in html
    assert html.count("<p>") == 2 and "$\\pi_a$" in html and "<em>both</em>" in html


@pytest.mark.parametrize("text, error", [("  ", ValueError), (3, TypeError)])
def test_answer_refuses_nothing(text, error):
    with pytest.raises(error):
        report.answer(text)


def _claim(claim_id, value, accept):
    return ledger.Claim(claim_id, "a quantity", seed="0.5", rule="close to 0.5", compute=lambda: value,
                        accept=accept)


def test_chapter_summary_counts_verdicts_links_each_claim_and_folds_the_table():
    results = ledger.verify(claims=[_claim("S1-01", 0.5, lambda v: True), _claim("S1-02", 0.9, lambda v: False)])
    summary = ledger.chapter_summary(results, claims_page="../claims.html")
    assert summary.counts == (1, 1)
    assert "1 checked on a single value, 1 failing" in str(summary) and "The failing claim does not" in str(summary)
    with_reported = ledger.verify(claims=[_claim("S1-01", 0.5, lambda v: True),
                                          ledger.reported_value("S1-03", "a number", "0.5", lambda: 0.5)])
    text = str(ledger.chapter_summary(with_reported))
    assert text.startswith("The book checks 1 claim of this chapter") and "1 more number is reported" in text
    html = summary._repr_html_()
    assert "<details>" in html and 'href="../claims.html"' in html
    assert 'href="../claims.html#S1-01"' in html and 'href="../claims.html#S1-02"' in html
    assert "FAIL" in html


def test_chapter_summary_refuses_an_empty_chapter():
    with pytest.raises(ValueError):
        ledger.chapter_summary([])


def test_the_claims_page_table_carries_each_id_as_an_anchor():
    results = ledger.verify(claims=[_claim("S1-01", 0.5, lambda v: True)])
    html = ledger.to_html(results)
    assert '<tr id="S1-01"><td>S1-01</td>' in html and "<th>reference</th>" in html


def test_progress_goes_to_the_named_file_and_nowhere_else(tmp_path, monkeypatch, capsys):
    target = tmp_path / "progress.log"
    monkeypatch.setenv(progress.ENVIRONMENT_VARIABLE, str(target))
    progress.report("step 1")
    progress.report("step 2\n")
    assert target.read_text() == "step 1\nstep 2\n"
    monkeypatch.delenv(progress.ENVIRONMENT_VARIABLE)
    progress.report("unseen")  # stderr is not a terminal under pytest: a page would get it
    assert capsys.readouterr().err == ""
    assert not progress.enabled()


def test_the_diagram_shows_the_configured_sizes():
    config = EncoderConfig(vocab_size=25, length=24, d_model=32, n_blocks=3, n_heads=4)
    fig = figure_architecture(config, rho=0.15)
    texts = " ".join(text.get_text() for text in fig.axes[0].texts)
    assert "26 \\times 32" in texts and "24 \\times 32" in texts  # token table has the [MASK] row
    assert "block 3" in texts and "block 4" not in texts and "4 heads" in texts
    assert "ρ = 0.15" in texts and "32 \\to 128 \\to 32" in texts
    assert fig.get_size_inches()[0] == pytest.approx(figures.WIDE)
    matplotlib.pyplot.close(fig)


@pytest.mark.parametrize("kwargs", [{"rho": 0}, {"rho": 1.5}, {"masked_position": 4}, {"masked_position": 9}])
def test_the_diagram_refuses_bad_arguments(kwargs):
    with pytest.raises(ValueError):
        figure_architecture(EncoderConfig(vocab_size=5, length=8, d_model=8, n_blocks=1, n_heads=2), **kwargs)


def test_every_text_of_the_diagram_is_at_least_the_minimum_size():
    fig = figure_architecture(EncoderConfig(vocab_size=25, length=24, d_model=32, n_blocks=2, n_heads=2))
    sizes = np.array([text.get_fontsize() for text in fig.axes[0].texts])
    assert sizes.min() >= figures.MIN_FONT_SIZE
    matplotlib.pyplot.close(fig)


def test_a_residual_column_writes_rounding_in_words_and_real_numbers_in_its_format():
    from mlm_book import report

    rows = [["exact", 0.0], ["rounding", -4.4e-16], ["real", 5.8e-5]]
    assert [line.split(" | ")[1].rstrip(" |") for line in report.table(["case", "gap"], rows, [None, "residual"])
            .splitlines()[2:]] == ["0 exactly", "0 to rounding", "5.8e-05"]
    assert report.table(["case", "gap"], rows, [None, "residual:.3e"]).splitlines()[-1] == "| real | 5.800e-05 |"
    assert report.residual(report.ROUNDING) == "1.0e-12"  # ROUNDING itself is a number
    with pytest.raises(ValueError, match="value"):
        report.residual(float("nan"))
    with pytest.raises(ValueError, match="fmt"):
        report.residual(0.5, "d")
