"""Bad input to the ledger, report, probe, PMI and scoring helpers (issue 10): a clear error naming the argument."""

import math
import time

import numpy as np
import pytest

from mlm_book import cache, ledger, pmi, probe, report, scoring
from mlm_book.hmm import default_hmm
from mlm_book.ledger import Claim, ClaimResult


def _claim(value=0.5, **fields):
    arguments = {"id": "S1-01", "quantity": "a quantity", "seed": "0.5", "rule": "a rule", "compute": lambda: value,
                     "accept": lambda v: True}
    arguments.update(fields)
    return Claim(**arguments)


@pytest.mark.parametrize("only", [object(), math.nan, -1, [1, 2], ""])
def test_verify_refuses_a_bad_only_before_running_any_claim(only):
    start = time.perf_counter()
    with pytest.raises(TypeError, match="only"):
        ledger.verify(only=only)
    assert time.perf_counter() - start < 0.5


@pytest.mark.parametrize("claims", ["text", [[1, 2], [3]], math.nan, object()])
def test_verify_refuses_claims_that_are_not_claims(claims):
    with pytest.raises(TypeError, match="claims"):
        ledger.verify(only="S1-01", claims=claims)


def test_verify_still_runs_given_claims():
    assert [r.passed for r in ledger.verify(claims=(_claim(),))] == [True]


@pytest.mark.parametrize("fmt, error", [(None, TypeError), ("text", ValueError), (3, TypeError)])
def test_format_value_names_a_bad_fmt(fmt, error):
    with pytest.raises(error, match="fmt"):
        ledger.format_value(0.5, fmt)


def test_format_value_keeps_integer_specs_for_counts():
    assert ledger.format_value(7, "d") == "7"
    with pytest.raises(ValueError, match="fmt"):
        ledger.format_value(0.5, "d")


@pytest.mark.parametrize("name", ["fmt", "sd_fmt"])
@pytest.mark.parametrize("fmt, error", [(b".3f", TypeError), (3, TypeError), ("d", ValueError), ("s", ValueError),
                                         ("1000000000000", ValueError), (".1000000000000f", ValueError),
                                         ("1" * 5000, ValueError)])
def test_over_seeds_names_a_bad_format(name, fmt, error):
    """Both formats go through validation.check_format, which names the caller's parameter."""
    with pytest.raises(error, match=f"^{name} must"):
        ledger.over_seeds([0.5, 0.7], 1, **{name: fmt})


@pytest.mark.parametrize("field, value, error", [
    ("id", None, TypeError), ("quantity", math.nan, TypeError), ("compute", None, TypeError),
    ("accept", 3, TypeError), ("fmt", None, TypeError), ("fmt", "text", ValueError), ("expected", "maybe", ValueError),
])
def test_claim_checks_each_field(field, value, error):
    with pytest.raises(error, match=field):
        _claim(**{field: value})


@pytest.mark.parametrize("field, value, error", [
    ("claim", math.nan, TypeError), ("value", math.nan, ValueError), ("value", {"a": (1.0, math.inf)}, ValueError),
    ("book", math.nan, TypeError), ("passed", math.nan, TypeError), ("seconds", math.nan, ValueError),
    ("seconds", -1.0, ValueError), ("error", math.nan, TypeError), ("verdict", math.nan, ValueError),
])
def test_claim_result_checks_each_field(field, value, error):
    arguments = {"claim": _claim(), "value": 0.5, "book": "0.500", "passed": True, "seconds": 0.1}
    arguments[field] = value
    with pytest.raises(error, match=field):
        ClaimResult(**arguments)


def test_a_claim_computing_nan_fails_with_its_reason():
    (result,) = ledger.verify(claims=[_claim(math.nan)])
    assert not result.passed and result.value is None and "value must be finite" in result.error


def test_result_tables_and_summaries_name_their_arguments():
    results = ledger.verify(claims=[_claim()])
    for function in (ledger.to_markdown, ledger.to_html, ledger.to_text, ledger.verdict_counts,
                     ledger.chapter_summary):
        with pytest.raises(TypeError, match="results"):
            function(None)
        with pytest.raises(TypeError, match="results"):
            function(["text"])
    with pytest.raises(TypeError, match="claims_page"):
        ledger.to_html(results, claims_page=object())
    with pytest.raises(TypeError, match="wide"):
        ledger.to_text(results, wide="yes")
    with pytest.raises(TypeError, match="claims_page"):
        ledger.ChapterSummary(tuple(results), math.nan)
    with pytest.raises(ValueError, match="results"):
        ledger.ChapterSummary((), "claims.html")
    assert ledger.ChapterSummary(list(results), "claims.html").results == tuple(results)


@pytest.mark.parametrize("package, error", [(None, TypeError), ("", ValueError), ("no_such_package_x", ValueError),
                                            ("mlm_book.ledger", ValueError)])
def test_all_claims_names_a_bad_package(package, error):
    with pytest.raises(error, match="package"):
        ledger.all_claims(package)


def test_polyseme_pmi_record_checks_its_fields():
    good = pmi.polyseme_pmi(default_hmm(), offset=1)
    fields = {"offset": good.offset, "shares": good.shares, "pmi_word": good.pmi_word, "pmi_senses": good.pmi_senses}
    for name, value, error in [("offset", math.nan, TypeError), ("offset", 0, ValueError),
                               ("shares", [0.5, 0.6], ValueError), ("shares", [1.0], ValueError),
                               ("pmi_word", np.full(good.pmi_word.shape, np.nan), ValueError),
                               ("pmi_senses", good.pmi_senses[:, :3], ValueError), ("pmi_senses", None, TypeError)]:
        with pytest.raises(error, match=name):
            pmi.PolysemePMI(**dict(fields, **{name: value}))
    again = pmi.PolysemePMI(**fields)
    assert again.pmi_word is good.pmi_word and again.identity_residual == good.identity_residual


def test_static_classifier_outcome_and_empty_table():
    for name, value, error in [("labels", [], ValueError), ("labels", [0.5], TypeError),
                               ("accuracy", math.nan, ValueError), ("label_share", 1.5, ValueError)]:
        arguments = dict({"labels": [1, 1], "accuracy": 0.5, "label_share": 0.5}, **{name: value})
        with pytest.raises(error, match=name):
            pmi.StaticClassifierOutcome(**arguments)
    with pytest.raises(ValueError, match="table"):
        pmi.classify_static(lambda v: np.zeros(len(v), dtype=int), np.zeros((0, 4)), [[0, 1]], [[0, 0]], word=0)


def test_masked_lm_loss_names_logits_and_selected():
    with pytest.raises(ValueError, match="logits"):
        scoring.masked_lm_loss_and_grad(np.zeros((1, 3, 1)), [[0, 1, 2]], [[True, False, False]])
    with pytest.raises(TypeError, match="selected"):
        scoring.masked_lm_loss_and_grad(np.zeros((1, 3, 4)), [[0, 1, 2]], [[1, 2], [3]])


def test_table_names_the_header_when_rows_do_not_fit_it():
    with pytest.raises(ValueError, match="header"):
        report.table([[1, 2], [3]], [[1, 2, 3, 4, 5]])


def test_probe_score_and_accuracy_check_their_arguments():
    model = probe.fit_probe([[0.0], [1.0], [2.0], [3.0]], [0, 0, 1, 1])
    fields = {"accuracy": 1.0, "n_test": 2, "stderr": 0.0, "majority_share": 0.5, "model": model}
    for name, value, error in [("accuracy", math.nan, ValueError), ("n_test", math.nan, TypeError),
                               ("n_test", 0, ValueError), ("stderr", -1.0, ValueError),
                               ("majority_share", 1.5, ValueError), ("model", None, TypeError)]:
        with pytest.raises(error, match=name):
            probe.ProbeScore(**dict(fields, **{name: value}))
    with pytest.raises(TypeError, match="model"):
        probe.accuracy(None, [[0.2]], [0])
    assert probe.accuracy(model, [[0.2], [2.9]], [0, 1]) == 1.0


@pytest.mark.parametrize("producers", [None, 3, "def f(): pass"])
def test_cache_key_names_producers_that_are_not_a_sequence(producers):
    with pytest.raises(TypeError, match="producers"):
        cache.cache_key("demo", {"n": 1}, producers)


def test_cache_key_of_a_list_is_unchanged_by_the_check():
    assert cache.source_of(("a", "b")) == "a\nb"


def test_verify_names_the_claims_given_when_only_matches_none_of_them():
    with pytest.raises(ValueError, match="none of the claims given"):
        ledger.verify(only="S2-16", claims=[])


def test_cross_validate_refuses_a_control_that_is_not_a_bool():
    x = np.arange(8.0)[:, None]
    y = np.array([0, 1] * 4)
    with pytest.raises(TypeError, match="control"):
        probe.cross_validate(x, y, probe.kfold_splits(8, 2, np.random.default_rng(0), labels=y),
                             control=np.zeros((0, 0)))


@pytest.mark.parametrize("field, value, error", [("risk", math.nan, ValueError), ("kl", -1.0, ValueError),
                                                 ("gap", math.inf, ValueError), ("entropy", "text", TypeError)])
def test_decomposition_checks_its_fields(field, value, error):
    fields = {"risk": 1.5, "entropy": 1.0, "kl": 0.5, "gap": 0.0}
    with pytest.raises(error, match=field):
        scoring.Decomposition(**dict(fields, **{field: value}))


def test_risk_decomposition_refuses_an_infinite_risk_instead_of_a_nan_gap():
    p = np.array([[0.5, 0.5], [0.5, 0.5]])
    q = np.array([[0.5, 0.5], [1.0, 0.0]])
    with pytest.raises(ValueError, match="q must be positive"):
        scoring.risk_decomposition(p, q)
    assert scoring.risk_decomposition(p, q, weights=[1.0, 0.0]).risk == pytest.approx(np.log(2))


def test_markdown_refuses_what_is_not_text():
    with pytest.raises(TypeError, match="text"):
        report.Markdown(None)
    assert report.Markdown("**a**")._repr_markdown_() == "**a**" and report.Markdown() == ""
