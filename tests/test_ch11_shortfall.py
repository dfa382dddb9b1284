"""Chapter 11, Q7: does the filing encoder's visible-word shortfall close with training, or with the kept share?

The kind's declaration (the runs chapter 7 does not already read, each a filing encoder of the book's recipe at
another length or κ), the study record's arithmetic and checks, the rules' registration and that they can fail, the
answer written from their verdicts, and the figure. The book tier reads the built runs.
"""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import numpy as np
import pytest

from mlm_book import artefacts, ledger
from mlm_book.artefacts import filing_encoder as fe
from mlm_book.artefacts import filing_shortfall as fs
from mlm_book.experiments import ch11_shortfall as q7

KIND = "filing-shortfall"


# ----------------------------------------------------------------------------- the kind and its setups
def test_the_kind_declares_the_runs_chapter_7_does_not_read():
    runs = artefacts.book_runs(KIND)
    setups = [run.setup for run in runs]
    assert len(setups) == len(set(setups)) == 7
    chapter7 = set(fe.book_setups())
    assert not set(setups) & chapter7
    # together with chapter 7's, they are every encoder of the study: 3 seeds at 1x, 2x, 4x and with kappa = 0.2
    study = [setup for arm in fs.study_setups().values() for setup in arm]
    assert set(study) == set(setups) | (set(study) & chapter7) and len(study) == 12
    for setup in setups:
        # the book's recipe but for the seed, the length and the kept share
        assert dataclasses.replace(setup, steps=fe.SETUP.steps, mask=fe.SETUP.mask,
                                   random=fe.SETUP.random) == fe.seed_setup(setup.seed)
        assert setup.seed in fs.SEEDS and setup.steps in (3000, 6000, 12000)
        assert setup.mask == 0.8 or (setup.mask == 0.7 and setup.steps == 3000)
    # longest first, so that a build starts them first
    assert [fe.training_config(s).steps for s in setups] == sorted((fe.training_config(s).steps for s in setups),
                                                                   reverse=True)
    # the runs are filing encoders: the filing encoder's code keys them, and its readers say whether they are built
    assert set(artefacts.kinds()["filing-encoder"].modules) < set(artefacts.key_modules(KIND))
    assert artefacts.kinds()[KIND].is_built is fe.is_trained


def test_a_run_four_times_as_long_keeps_the_schedules_shape():
    book, long = fe.training_config(fe.SETUP), fe.training_config(fs.length_setup(fe.SETUP.seed, 4))
    assert long.steps == 4 * book.steps and long.warmup == 4 * book.warmup
    # the same total decay spread over four times the rate: a quarter of the strength, to rounding
    assert long.weight_decay == pytest.approx(book.weight_decay / 4, rel=1e-3)
    # cost in proportion to the steps: a 1x run about 140 s on one core, as the stored filing encoders trained
    four, kept = (artefacts.cost(artefacts.Run(KIND, setup)) for setup in (fs.length_setup(1, 4), fs.kept_setup(1)))
    assert four == pytest.approx(4 * kept, rel=1e-12) and 120 <= kept <= 160


@pytest.mark.parametrize("call, error, name", [
    (lambda: fs.length_setup("1", 2), TypeError, "seed"),
    (lambda: fs.length_setup(1, 0), ValueError, "times"),
    (lambda: fs.length_setup(1, 2.0), TypeError, "times"),
    (lambda: fs.kept_setup(None), TypeError, "seed"),
])
def test_bad_setups_are_refused_by_name(call, error, name):
    with pytest.raises(error, match=name):
        call()


# ----------------------------------------------------------------------------- the record and the rules
def _study(s1=(0.15, 0.14, 0.14), s2=(0.12, 0.11, 0.12), s4=(0.09, 0.08, 0.1), kept=(0.08, 0.07, 0.09)):
    guess = (0.68, 0.68, 0.68)
    plugin = {"1x": (0.966,) * 3, "2x": (0.956,) * 3, "4x": (0.95,) * 3, "kept": (0.977,) * 3}
    shortfalls = {"1x": s1, "2x": s2, "4x": s4, "kept": kept}
    return q7.ShortfallStudy(
        seeds=fs.SEEDS, guess={arm: guess for arm in q7.ARMS}, plugin=plugin,
        visible={arm: tuple(p - s for p, s in zip(plugin[arm], shortfalls[arm])) for arm in q7.ARMS},
        seconds={arm: (100.0, 110.0, 120.0) for arm in q7.ARMS})


def test_the_record_computes_shortfalls_and_realised_shares():
    study = _study()
    assert study.shortfall("4x") == pytest.approx([0.09, 0.08, 0.1], abs=1e-12)
    # (visible - guess) / (plugin - guess): 1 when the encoder keeps the plug-in, 0 when it keeps its guess
    assert study.realised("1x")[0] == pytest.approx((0.966 - 0.15 - 0.68) / (0.966 - 0.68), abs=1e-12)
    with pytest.raises(ValueError, match="arm"):
        study.shortfall("8x")


@pytest.mark.parametrize("change, error, name", [
    ({"seeds": [20240601, 1, 2]}, TypeError, "seeds"),
    ({"seeds": (1, 1, 2)}, ValueError, "seeds"),
    ({"guess": {"1x": (0.5,) * 3}}, ValueError, "guess"),
    ({"plugin": {arm: (0.5, 1.5, 0.5) for arm in q7.ARMS}}, ValueError, "plugin"),
    ({"visible": {arm: (0.5, float("nan"), 0.5) for arm in q7.ARMS}}, ValueError, "visible"),
    ({"visible": {arm: (0.5, 0.5) for arm in q7.ARMS}}, ValueError, "visible"),
    ({"seconds": {arm: (1.0, 0.0, 2.0) for arm in q7.ARMS}}, ValueError, "seconds"),
    ({"seconds": [1.0]}, TypeError, "seconds"),
])
def test_the_record_refuses_what_would_draw_a_wrong_table(change, error, name):
    fields = {f.name: getattr(_study(), f.name) for f in dataclasses.fields(q7.ShortfallStudy)}
    with pytest.raises(error, match=name):
        q7.ShortfallStudy(**{**fields, **change})


def test_the_rules_are_registered_with_their_thresholds_before_the_run():
    declared = {claim.id: claim for claim in ledger.all_claims()}
    assert [declared[rule] for rule in ("Q7", "Q7a", "Q7b")] == list(q7.CLAIMS)
    assert f"≤ {q7.KEPT_TOLERANCE}" in q7.CLAIMS[1].rule and q7.KEPT_TOLERANCE == 0.05
    # the tolerance the HMM encoder is held to, in chapter 2 and in the unigram-replacement section
    from mlm_book.experiments import ch11_recipes
    assert q7.KEPT_TOLERANCE == ch11_recipes.KEPT_TOLERANCE
    assert q7.STATED_BEFORE_RUN == {"Q7": "reproduced", "Q7a": "not reproduced", "Q7b": "reproduced"}
    chapter = (Path(__file__).resolve().parents[1] / "chapters" / "11_caveats.py").read_text(encoding="utf-8")
    heading = re.search(r"^# ## (Does the visible-word shortfall.*)$", chapter, re.MULTILINE).group(1)
    assert re.sub(r"[\s-]+", "-", re.sub(r"[^\w\s-]", "", heading.lower())).strip("-") == q7.SECTION
    assert all(claim.section == q7.SECTION for claim in q7.CLAIMS) and "shortfall.CLAIMS" in chapter


@pytest.mark.parametrize("fields, verdicts", [
    ({}, ("reproduced", "not reproduced", "reproduced")),
    ({"s4": (0.04, 0.03, 0.045)}, ("reproduced", "reproduced", "reproduced")),
    ({"s4": (0.04, 0.09, 0.045)}, ("reproduced", "seed-dependent", "reproduced")),
    ({"s2": (0.16, 0.11, 0.12)}, ("seed-dependent", "not reproduced", "reproduced")),
    ({"s2": (0.16, 0.15, 0.15), "kept": (0.16, 0.15, 0.15)}, ("not reproduced", "not reproduced", "not reproduced")),
])
def test_the_rules_judge_each_seed_and_can_fail(monkeypatch, fields, verdicts):
    monkeypatch.setattr(q7, "results", lambda: _study(**fields))
    found = {result.claim.id: result for result in ledger.verify(claims=q7.CLAIMS)}
    assert tuple(found[rule].verdict for rule in ("Q7", "Q7a", "Q7b")) == verdicts
    expected = {claim.id: claim.expected for claim in q7.CLAIMS}
    assert [found[rule].passed for rule in ("Q7", "Q7a", "Q7b")] == [v == expected[rule]
                                                                      for rule, v in zip(("Q7", "Q7a", "Q7b"), verdicts)]


def test_the_answer_follows_the_verdicts():
    answers = {(a, b, c): q7.verdict_answer({"Q7": a, "Q7a": b, "Q7b": c}, [0.09, 0.08, 0.1])
               for a in ledger.VERDICTS for b in ledger.VERDICTS for c in ledger.VERDICTS}
    assert all(text.startswith("**Answer:** ") for text in answers.values())
    assert answers["reproduced", "reproduced", "reproduced"].startswith("**Answer:** yes")
    assert "does not close" in answers["reproduced", "not reproduced", "reproduced"]
    assert "does not explain" in answers["seed-dependent", "not reproduced", "reproduced"]
    assert answers["reproduced", "not reproduced", "not reproduced"].endswith("does not shrink it.")
    with pytest.raises(ValueError, match="found"):
        q7.verdict_answer({"Q7": "reproduced"}, [0.1, 0.1])
    with pytest.raises(ValueError, match="shortfall_4x"):
        q7.verdict_answer({"Q7": "reproduced", "Q7a": "reproduced", "Q7b": "reproduced"}, [0.1])


def test_the_figure_and_table_draw_any_study():
    study = _study()
    drawn = q7.figure_shortfall(study)
    assert "3,000 steps 0.140 to 0.150" in drawn.alt and "12,000 steps 0.080 to 0.100" in drawn.alt
    lines = q7.seed_table(study).splitlines()
    assert len(lines) == 2 + 8 and all(line.count("|") == len(study.seeds) + 3 for line in lines)


# ----------------------------------------------------------------------------- the built runs (book tier)
@pytest.mark.book
def test_the_study_reads_chapter_7s_measurements_of_each_encoder():
    study = q7.results()
    arms = fs.study_setups()
    for arm in q7.ARMS:
        for k, setup in enumerate(arms[arm]):
            visible = fe.seed_results(setup).visible
            assert study.visible[arm][k] == visible["visible"] and study.plugin[arm][k] == visible["plugin"]
            # the plug-in is Theorem 2's optimum from the guess: above the guess whenever the guess is below 1
            assert study.guess[arm][k] < study.plugin[arm][k] <= 1.0
    # the 4x runs trained four times the steps
    assert all(fe.seed_results(setup).steps == 4 * fe.SETUP.steps for setup in arms["4x"])
    assert np.all(np.array(study.seconds["4x"]) > np.array(study.seconds["1x"]))
