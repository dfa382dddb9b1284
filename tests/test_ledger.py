"""The claims ledger and the ``mlm-book verify`` command."""

import ast
import re
import unicodedata
from pathlib import Path

import pytest

from conftest import ROOT
from mlm_book import cli, ledger
from mlm_book.ledger import Claim


def _claim(id_, value, accept):
    return Claim(id_, "a quantity", seed="1", rule="a rule", compute=lambda: value, accept=accept)


def test_claim_ids_must_follow_the_claims_list():
    with pytest.raises(ValueError, match="id"):
        _claim("2-16", 1.0, lambda v: True)


def test_verify_judges_values_and_reports_errors():
    def broken():
        raise ZeroDivisionError("no")
    claims = [_claim("S1-01", 1.0, lambda v: v == 1.0), _claim("S1-02", 2.0, lambda v: v < 1),
              Claim("S1-03", "q", "1", "r", compute=broken, accept=lambda v: True)]
    results = ledger.verify(claims=claims)
    assert [result.passed for result in results] == [True, False, False]
    assert "ZeroDivisionError" in results[2].error
    text = ledger.to_text(results)
    assert text.splitlines()[-3] == "1 passed, 2 failed" or "1 passed, 2 failed" in text
    assert "| S1-02 |" in ledger.to_markdown(results)


def test_only_filters_by_prefix_and_rejects_unknown_prefixes():
    claims = [_claim("S1-01", 1.0, bool), _claim("S2-01", 1.0, bool)]
    assert [r.claim.id for r in ledger.verify(only="S2-", claims=claims)] == ["S2-01"]
    with pytest.raises(ValueError, match="matches no"):
        ledger.verify(only="S9-", claims=claims)


def test_registered_claims_are_unique_and_sorted():
    claims = ledger.all_claims()
    assert claims, "no claim is registered"
    keys = [claim.sort_key for claim in claims]
    assert keys == sorted(keys)


def test_cli_exit_status_follows_the_verdicts(capsys, monkeypatch):
    monkeypatch.setattr(ledger, "all_claims", lambda: (_claim("S1-01", 1.0, lambda v: True),))
    assert cli.main(["verify"]) == 0
    monkeypatch.setattr(ledger, "all_claims", lambda: (_claim("S1-01", 1.0, lambda v: False),))
    assert cli.main(["verify"]) == 1
    assert cli.main(["verify", "--only", "S7-"]) == 2
    assert "FAIL" in capsys.readouterr().out


def test_a_bare_section_is_that_section_only_and_unknown_ones_list_the_sections():
    claims = [_claim("S1-01", 1.0, bool), _claim("S10-01", 1.0, bool), _claim("S2-01", 1.0, bool)]
    assert [r.claim.id for r in ledger.verify(only="S1", claims=claims)] == ["S1-01"]
    assert [r.claim.id for r in ledger.verify(only=["S10", "S2"], claims=claims)] == ["S10-01", "S2-01"]
    with pytest.raises(ValueError, match="the sections are S1, S2, S10"):
        ledger.verify(only="S3", claims=claims)


def test_a_numbered_question_is_that_question_and_its_parts_only():
    claims = [_claim(id_, 1.0, bool) for id_ in ("Q1", "Q10", "Q14", "Q8", "Q8a", "Q8c")]
    assert [r.claim.id for r in ledger.verify(only="Q1", claims=claims)] == ["Q1"]
    assert [r.claim.id for r in ledger.verify(only="Q8", claims=claims)] == ["Q8", "Q8a", "Q8c"]
    assert [r.claim.id for r in ledger.verify(only="Q", claims=claims)] == ["Q1", "Q10", "Q14", "Q8", "Q8a", "Q8c"]


def test_study_note_ids_sort_after_the_reference_sections_and_select_as_a_section():
    claims = [_claim("D-18", 1.0, bool), _claim("S10-01", 1.0, bool), _claim("D-02", 1.0, bool)]
    assert [c.id for c in sorted(claims, key=lambda c: c.sort_key)] == ["S10-01", "D-02", "D-18"]
    assert [r.claim.id for r in ledger.verify(only="D", claims=claims)] == ["D-18", "D-02"]
    with pytest.raises(ValueError, match="the sections are S10, D"):
        ledger.verify(only="S3", claims=claims)
    for bad in ("D18", "D-", "Q-1", "S-2", "D-1ab", "D-a"):
        with pytest.raises(ValueError, match="id must look like"):
            _claim(bad, 1.0, bool)


def test_wide_text_cuts_nothing():
    long_rule = "a rule " * 30
    results = ledger.verify(claims=[Claim("S1-01", "q " * 40, "1", long_rule, compute=lambda: 1.0,
                                          accept=lambda v: True)])
    assert "…" in ledger.to_text(results)
    wide = ledger.to_text(results, wide=True)
    assert "…" not in wide and long_rule.strip() in wide and wide.endswith("1 passed, 0 failed")


def test_help_shows_no_raw_markup(capsys):
    with pytest.raises(SystemExit):
        cli.main(["--help"])
    assert "``" not in capsys.readouterr().out


def test_build_dry_run_lists_every_run_of_every_kind_in_an_empty_store_and_jobs_must_be_positive(capsys, monkeypatch,
                                                                                               tmp_path):
    from mlm_book import artefacts
    monkeypatch.setenv("MLM_BOOK_CACHE", str(tmp_path / "empty"))
    monkeypatch.setenv("MLM_BOOK_BUILD_NOTHING", "1")  # a dry run that started a training would raise
    assert cli.main(["build", "--dry-run"]) == 0
    out = capsys.readouterr().out.splitlines()
    kinds_at = out.index("by kind:")
    chapters_at = next(i for i, line in enumerate(out) if line.startswith("by chapter"))
    listed = {line.split()[1]: int(line.split()[0]) for line in out[kinds_at + 1:chapters_at]}
    assert listed == {name: len(kind.setups()) for name, kind in artefacts.kinds().items()}
    assert len(out[1:kinds_at]) == sum(listed.values())        # one line per run, with its cost
    charged = {int(line.split()[2]): int(line.split()[0]) for line in out[chapters_at + 1:-1]}
    assert charged == {chapter: sum(item.runs for item in artefacts.kind_costs(chapter))
                       for chapter in {kind.chapter for kind in artefacts.kinds().values()}}
    minutes = [float(line.split()[3]) for line in out[chapters_at + 1:-1]]
    assert out[-1].startswith("  total ") and abs(sum(minutes) - float(out[-1].split()[1])) <= 0.05 * len(minutes)
    assert cli.main(["build", "--dry-run", "--only", "hmm-encoder"]) == 0
    assert "10 of 10 runs missing" in capsys.readouterr().out
    assert cli.main(["build", "--only", "no-such-kind"]) == 2
    assert "matches no kind" in capsys.readouterr().err
    with pytest.raises(SystemExit) as stop:
        cli.main(["build", "--jobs", "0"])
    assert stop.value.code == 2 and "positive integer" in capsys.readouterr().err


def test_build_runs_what_is_missing_readers_last_and_reports_each_run_and_the_time_per_kind(capsys, monkeypatch):
    from mlm_book import artefacts
    built, stored = [], {"a-1"}
    common = dict(modules=(), is_built=lambda s: s in stored or s in built, build=built.append, describe=str,
                  chapter=1, reason="a test's kind")
    fake = {"reader": artefacts.Kind(name="reader", summary="reads a", setups=lambda: ("r-1",), after=("a",),
                                     cost=lambda s: 1.0, **common),
            "a": artefacts.Kind(name="a", summary="trains", setups=lambda: ("a-1", "a-2", "a-3"),
                                cost=lambda s: {"a-2": 1.0, "a-3": 5.0}.get(s, 1.0), **common)}
    monkeypatch.setattr(artefacts, "kinds", lambda: fake)
    assert cli.main(["build", "--jobs", "1"]) == 0            # one job: the runs go here, in order, without a pool
    captured = capsys.readouterr()
    assert built == ["a-3", "a-2", "r-1"]                     # the stored one skipped, longest first, readers last
    assert "built 3 runs" in captured.out and " a " in captured.out and " reader " in captured.out
    lines = captured.err.splitlines()
    assert [line.split()[:2] for line in lines] == [["[1/3]", "a"], ["[2/3]", "a"], ["[3/3]", "reader"]]
    assert all("elapsed" in line and "left" in line for line in lines) and lines[-1].endswith("about 0:00 left")
    assert cli.main(["build"]) == 0 and "nothing to build" in capsys.readouterr().out


def test_cache_list_gives_the_stores_size_and_entries_by_name(capsys, monkeypatch, tmp_path):
    import numpy as np

    from mlm_book import cache
    monkeypatch.setenv("MLM_BOOK_CACHE", str(tmp_path / "store"))
    for n in (1, 2):
        cache.cached("demo", {"n": n}, ["code"], lambda: {"w": np.zeros(1000)}, book_sized=False)
    assert cli.main(["cache", "list"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith(f"{tmp_path / 'store'}: 2 entries, ") and out[0].endswith(" MB")
    assert out[1].split()[-2:] == ["x", "demo"] and out[1].split()[2] == "2"


def test_cache_prune_removes_only_the_entries_of_declared_artefacts_that_nothing_reaches(capsys, monkeypatch, tmp_path):
    import numpy as np

    from mlm_book import artefacts, cache
    monkeypatch.setenv("MLM_BOOK_CACHE", str(tmp_path / "store"))

    def entry(n):
        return cache.entry_for("demo", {"n": n}, ["code"])

    kind = artefacts.Kind(name="demo", summary="a test's kind", modules=(), setups=lambda: (1,),
                          is_built=lambda n: cache.load(entry(n)) is not None, build=lambda n: None,
                          cost=lambda n: 1.0, chapter=1, reason="a test's kind")
    monkeypatch.setattr(artefacts, "kinds", lambda: {"demo": kind})
    for n in (1, 2):                      # n = 1 is what the current setup reaches; n = 2 an old setup's entry
        cache.cached("demo", {"n": n}, ["code"], lambda: {"w": np.zeros(10)}, book_sized=False)
    cache.cached("other", {}, ["code"], lambda: {"w": np.zeros(10)}, book_sized=False)
    assert cli.main(["cache", "prune", "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert f"would remove {entry(2).stem}" in out and entry(1).stem not in out and "other" in out
    assert cache.load(entry(2)) is not None                     # a dry run removes nothing
    assert cli.main(["cache", "prune"]) == 0
    assert "removed 1 entries" in capsys.readouterr().out
    assert cache.load(entry(2)) is None and cache.load(entry(1)) is not None
    assert cache.load(cache.entry_for("other", {}, ["code"])) is not None


def test_a_claims_section_is_the_anchor_of_a_heading():
    claim = Claim("S1-01", "q", "1", "r", compute=lambda: 1.0, accept=bool, section="corollary-1-the-static-cap")
    assert claim.section == "corollary-1-the-static-cap" and _claim("S1-02", 1.0, bool).section is None
    reported = ledger.reported_value("S1-03", "q", "1", lambda: 1.0, section="the-ising-chain")
    assert reported.reported and reported.section == "the-ising-chain"
    with pytest.raises(TypeError, match="section"):
        Claim("S1-01", "q", "1", "r", compute=lambda: 1.0, accept=bool, section=3)
    for bad in ("", "Corollary 1", "corollary--1", "-the-cap", "the-cap-", "#the-cap", "the cap", "théorème"):
        with pytest.raises(ValueError, match="section"):
            Claim("S1-01", "q", "1", "r", compute=lambda: 1.0, accept=bool, section=bad)


def test_each_id_links_to_its_claims_section_on_the_page_that_makes_it():
    placed = Claim("S1-01", "q", "1", "r", compute=lambda: 1.0, accept=bool, section="the-ising-chain")
    unplaced = _claim("S1-02", 1.0, bool)
    results = ledger.verify(claims=[placed, unplaced])
    table = ledger.to_html(results, chapter_page="chapters/03_pseudo_likelihood.html")
    # each row keeps its anchor (the chapters' summaries link to it) and its id links to the section
    assert '<tr id="S1-01"><td><a href="chapters/03_pseudo_likelihood.html#the-ising-chain"' in table
    assert '<tr id="S1-02"><td><a href="chapters/03_pseudo_likelihood.html" ' in table  # no section: the page
    assert "#the-ising-chain" not in ledger.to_html(results) and '<tr id="S1-01"><td>S1-01</td>' in ledger.to_html(results)
    with pytest.raises(ValueError, match="not both"):
        ledger.to_html(results, claims_page="../claims.html", chapter_page="03_pseudo_likelihood.html")
    with pytest.raises(ValueError, match="chapter_page"):
        ledger.to_html(results, chapter_page="")
    with pytest.raises(TypeError, match="chapter_page"):
        ledger.to_html(results, chapter_page=3)


def _anchor(heading: str) -> str:
    """A heading's anchor as the site writes it: Python-Markdown's toc slugify (mkdocs' default, which
    mkdocs-jupyter's heading ids follow) of the heading's text, its inline markup dropped."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # a link keeps its text
    text = re.sub(r"[*`]", "", text)  # emphasis and code marks
    text = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode("ascii")
    text = re.sub(r"[^\w\s-]", "", text).strip().lower()
    return re.sub(r"[-\s]+", "-", text)


def _headings(path: Path) -> list[str]:
    """The headings (levels 1 to 3) of a page's source: a chapter's Jupytext script (in its Markdown cells) or a
    Markdown page, fenced code left out."""
    script = path.suffix == ".py"
    headings, markdown, fenced = [], not script, False
    for line in path.read_text(encoding="utf-8").splitlines():
        if script:
            if line.startswith("# %%"):
                markdown, fenced = "[markdown]" in line, False
                continue
            if not markdown or not (line == "#" or line.startswith("# ")):
                continue
            line = line[2:]
        if line.lstrip().startswith("```"):
            fenced = not fenced
        elif not fenced and (found := re.match(r"(#{1,3}) (.+)", line)):
            headings.append(found.group(2).strip())
    return headings


def _page_of_module(module: str) -> Path:
    """The page whose claims a module of mlm_book.experiments declares, as the Claims page groups them."""
    hook = ast.parse((ROOT / "docs/hooks/claims.py").read_text(encoding="utf-8"))
    chapters = next(ast.literal_eval(node.value) for node in hook.body if isinstance(node, ast.Assign)
                    and any(getattr(target, "id", None) == "MODULE_CHAPTERS" for target in node.targets))
    found = re.match(r"ch(\d\d)_", module)
    chapter = int(found.group(1)) if found else chapters[module]
    if chapter == "lab":
        return ROOT / "docs/lab.md"
    (script,) = (ROOT / "chapters").glob(f"{chapter:02d}_*.py")
    return script


def test_the_anchors_follow_pythons_markdown():
    assert _anchor("The static fold: scoring below the majority") == "the-static-fold-scoring-below-the-majority"
    assert _anchor("The geometry of *kestrel*") == "the-geometry-of-kestrel"
    assert _anchor("Chapter 2 — The masked-LM objective") == "chapter-2-the-masked-lm-objective"
    assert _anchor("BERT's own count") == "berts-own-count"
    toc = pytest.importorskip("markdown.extensions.toc")
    for page in [*(ROOT / "chapters").glob("[0-9][0-9]_*.py"), ROOT / "docs/lab.md"]:
        for heading in _headings(page):
            assert _anchor(heading) == toc.slugify(re.sub(r"[*`]", "", heading), "-"), heading


def test_every_claim_names_a_section_of_the_page_that_makes_it():
    """Each claim's section is the anchor of one heading of its chapter's script (or the lab's page), so that the
    Claims page's link lands on it; the site's link checker checks the built links again."""
    modules = ledger.claim_modules()
    anchors = {}
    wrong = []
    for claim in ledger.all_claims():
        page = _page_of_module(modules[claim.id])
        if page not in anchors:
            anchors[page] = [_anchor(heading) for heading in _headings(page)]
        section = claim.section
        if section is None:
            wrong.append(f"{claim.id}: no section")
        elif anchors[page].count(section) != 1:
            wrong.append(f"{claim.id}: {section!r} is {'not' if section not in anchors[page] else 'not only'} a "
                         f"heading of {page.relative_to(ROOT)}")
    assert not wrong, "\n".join(wrong)
    assert len({page for page in anchors}) >= 12  # every chapter and the lab


def test_a_residual_format_prints_rounding_in_words_and_keeps_real_numbers():
    assert ledger.format_value((0.0, 2.2e-16, 3e-9), "residual") == "0 exactly / 0 to rounding / 3.0e-09"
    assert ledger.format_value({"gap": 5.6e-16, "kl": 0.00224}, "residual:.2e") == "gap 0 to rounding, kl 2.24e-03"
    assert ledger.format_value((1e-14, 3), ".1e") == "1.0e-14 / 3"  # another format leaves a tiny number alone
    claim = Claim("S1-01", "q", "1", "r", compute=lambda: 4.4e-16, accept=lambda v: v <= 1e-12, fmt="residual")
    assert ledger.verify(claims=[claim])[0].book == "0 to rounding"
    for bad in ("residual:d", "residual:x", "residuals"):
        with pytest.raises(ValueError, match="fmt"):
            ledger.format_value(0.5, bad)
    # over seeds: a quantity at rounding at every seed reads as words, a mix of zeros and rounding too
    value = ledger.over_seeds([(0.02, 9.3e-16), (0.03, 0.0), (0.025, -1e-16)], 3, fmt="residual:.3g")
    assert value["mean ± sd"] == "0.025 ± 0.005 / 0 to rounding at every seed"
    assert ledger.over_seeds([0.0, 0.0], 2, fmt="residual")["mean ± sd"] == "0 exactly at every seed"
    assert ledger.over_seeds([1e-3, 3e-3], 2, fmt="residual:.1e")["mean ± sd"] == "2.0e-03 ± 1.4e-03"
    with pytest.raises(ValueError, match="fmt"):
        ledger.over_seeds([0.5, 0.7], 1, fmt="residual:d")
