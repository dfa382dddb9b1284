"""Tests of the chapter-2 results module: shapes of what the chapter shows, and their relations."""

import matplotlib

matplotlib.use("Agg")

import numpy as np  # noqa: E402
import pytest  # noqa: E402

from mlm_book.experiments import ch02_objective as ch2  # noqa: E402


def test_brute_force_table_covers_every_case():
    rows = ch2.brute_force_rows()
    assert {(r.rho, r.position, r.kind) for r in rows} == {
        (rho, i, kind) for rho in (0.15, 0.4) for i in range(3) for kind in ("[MASK]", "kept", "random")}
    assert max(r.max_abs for r in rows) <= 1e-12
    assert ch2.brute_force_markdown().count("\n") == 1 + 6


def test_worked_example_follows_theorem2():
    ex = ch2.worked_example()
    assert np.abs(ex.q["[MASK]"] - ex.p).max() <= 1e-15
    assert ex.q["kept"][ex.true_token] > ex.p[ex.true_token]
    assert ex.q["random"][ex.random_token] > ex.p[ex.random_token]
    assert "[?]" in ch2.worked_example_text(ex)


def test_shrinkage_curves_order_uniform_between_frequent_and_rare():
    for c in ch2.shrinkage_curves():
        f, q = c.factors, c.curves
        assert f["unigram, frequent word"] < f["uniform"] < f["unigram, rare word"]
        # pointwise: the rare word keeps more mass than the uniform case, the frequent word less
        assert np.all(q["unigram, rare word"] >= q["uniform"] - 1e-15)
        assert np.all(q["unigram, frequent word"] <= q["uniform"] + 1e-15)
        assert np.all(q["uniform"] >= c.p - 1e-15)       # a visible token never loses mass
    fig = ch2.shrinkage_figure()
    assert len(fig.axes) == 2


@pytest.mark.slow  # enumerates every fixed-count selection
def test_fixed_count_table_relations():
    t = ch2.fixed_count_table()
    single = t["count"] == 1
    assert np.all(t["matched_max_abs"][single] <= 1e-12)   # k = 1: the matched rate 0 is exact
    assert np.all(t["nominal_mean_kl"] > 0)
    assert np.all(t["positions"] == t["count"] * ch2.FixedCountConfig().batch)
    assert ch2.fixed_count_markdown().count("\n") == 1 + len(t["length"])
    assert ch2.count_chain_agreement() <= 1e-13
