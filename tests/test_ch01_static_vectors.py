"""Chapter 1's experiments module: results are consistent, figures and table render."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402

from mlm_book.experiments import ch01_static_vectors as ch1  # noqa: E402


@pytest.fixture(scope="module")
def r():
    return ch1.results()


def test_results_are_consistent(r):
    assert r.cap == max(r.shares) and r is ch1.results()
    assert [p.offset for p in r.pmi] == list(r.config.offsets)
    # every static classifier answers one label, so it scores the share of that label
    for outcome in r.static_outcomes:
        assert outcome.one_label and outcome.accuracy in (r.test_share_b, 1 - r.test_share_b)
    # the Bayes accuracy of the split and the large-sample expectation agree within 4 standard errors
    assert abs(r.bayes_test.expected - r.bayes_expectation) < 4 * r.bayes_test.standard_error
    assert r.bayes_expectation > r.cap + 0.3
    w = r.example_tokens == r.hmm.shared_token
    assert w.sum() >= 3


def test_figures_and_table(r):
    for make in (ch1.figure_transition, ch1.figure_pmi_profiles, ch1.figure_sense_posterior):
        drawn = make(r)
        assert isinstance(drawn.figure, matplotlib.figure.Figure) and drawn.figure.axes
        assert "{" not in drawn.alt and drawn.caption  # every placeholder of the alt text was filled in
        plt.close(drawn.figure)
    with pytest.raises(ValueError, match="offset"):
        ch1.figure_pmi_profiles(r, offset=3)
    table = ch1.summary_table(r)
    assert f"{r.cap:.3f}" in table and table.count("\n") >= 8
    with pytest.raises(TypeError, match="config"):
        ch1.results("default")


@pytest.mark.book  # S2-01 reads the trained encoder
def test_claims_are_registered_once_and_pass():
    ids = [claim.id for claim in ch1.CLAIMS]
    assert len(ids) == len(set(ids))
    assert not {"S2-10", "S2-14", "S2-15", "S2-17", "S2-18", "S2-20"} & set(ids)
    for claim in ch1.CLAIMS:
        value = claim.compute()
        assert claim.accept(value), (claim.id, value)
    assert np.isfinite(ch1.results().pmi[0].sense_gap)


def test_the_bayes_expectation_is_cached_per_hmm_not_per_config(tmp_path, monkeypatch):
    """It used to key on config.hmm, so any HMM (even None) got the book's cached value."""
    from dataclasses import replace

    from mlm_book import cache
    from mlm_book.hmm import HMMConfig, build_hmm, default_hmm

    monkeypatch.setenv(cache.ENVIRONMENT_VARIABLE, str(tmp_path))
    small = replace(ch1.Chapter1Config(), expectation_sequences=400, expectation_chunks=4)
    book, _ = ch1.bayes_expectation(default_hmm(), small)
    fast = build_hmm(HMMConfig(switch_a=0.3, switch_b=0.3))
    other, _ = ch1.bayes_expectation(fast, small)
    assert other < book - 0.1  # regimes that switch every few steps leave the sense far less certain
    again, _ = ch1.bayes_expectation(fast, small)
    assert again == other
    with pytest.raises(TypeError, match="hmm"):
        ch1.bayes_expectation(None, small)
