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
    drawn = ch2.shrinkage_figure()
    assert len(drawn.figure.axes) == 2
    # the alt text names the crossings in the order the thresholds put them, at both sizes
    for c in ch2.shrinkage_curves():
        assert f"at V = {c.vocab_size}, first for the rarest word" in drawn.alt


@pytest.mark.slow  # enumerates every fixed-count selection
def test_count_chain_agrees_with_enumerating_the_sets():
    assert ch2.count_chain_agreement() <= 1e-13


def test_filing_vocabulary_is_the_books():
    from mlm_book.experiments import ch06_finance as ch6

    V = ch2.filing_vocab_size()
    vocabulary = ch6.book_vocabulary()
    assert V == vocabulary.size == vocabulary.n_words + 2 != ch2.REFERENCE_FILING_VOCAB
    assert ch6.book_vocabulary(ch6.Chapter6Config()) is vocabulary
    # counted without the vocabulary: words seen at least min_count times, plus [UNK] and [SEP]
    assert V == ch2._filing_words() + 2
    table = ch2.evidence_table()
    assert set(table) == {ch2.HMM_VOCAB, V}
    assert abs(table[V]["factor"] - (V + 1)) <= 1e-9
    assert ch2.ShrinkageConfig().sizes() == (ch2.HMM_VOCAB, V)
    assert [c.vocab_size for c in ch2.shrinkage_curves()] == [ch2.HMM_VOCAB, V]
    for claim in ch2.CLAIMS:
        if claim.id in ("S3-01", "S3-13", "S3-14", "S3-15"):
            assert claim.accept(claim.compute()), claim.id
    with pytest.raises(TypeError, match="vocab_sizes"):
        ch2.evidence_table("879")


def test_filing_unigram_replacement():
    import itertools

    from mlm_book.channel import Channel, visible_mass
    from mlm_book.experiments import ch06_finance as ch6

    result = ch2.filing_unigram_replacement()
    vocabulary = ch6.book_vocabulary()
    counts = np.array(vocabulary.counts)
    assert result.vocab_size == vocabulary.size and result.n_tokens == counts.sum()
    assert np.allclose(result.unigram, counts / counts.sum(), rtol=0, atol=1e-15)
    channel = Channel(result.vocab_size)
    kappa, r = channel.keep, channel.random
    rows = result.rows
    assert [row.case for row in rows] == ["uniform", "most frequent token", "most frequent word", "median word",
                                          "rarest word"]
    assert rows[1].token == "[SEP]" and rows[2].token not in ("[SEP]", "[UNK]")
    assert rows[4].count == result.min_count >= vocabulary.min_count and result.rarest_ties >= 1
    for row in rows[1:]:
        assert row.unigram == row.count / result.n_tokens
        assert abs(row.factor - (1 + kappa / (r * row.unigram))) <= 1e-9 * row.factor
        unigram_channel = Channel(result.vocab_size, replacement=result.unigram)
        token = vocabulary.lookup(row.token)
        assert abs(visible_mass(row.threshold, unigram_channel, token) - 0.5) <= 1e-12
    # rarer visible tokens are trusted more: factors rise and thresholds fall down the table
    assert all(a.factor < b.factor and a.threshold > b.threshold for a, b in itertools.pairwise(rows[1:]))
    assert rows[2].factor < rows[0].factor < rows[3].factor
    assert abs(rows[0].factor - (result.vocab_size + 1)) <= 1e-9
    text = ch2.filing_unigram_table(result)
    assert text.count("\n") == 1 + len(rows) and "`[SEP]`" in text
    with pytest.raises(TypeError, match="result"):
        ch2.filing_unigram_table("not a result")


@pytest.mark.parametrize("selection", ["bert", "fixed", "independent"])
def test_outcome_probabilities_sum_to_one(selection):
    """Summed over every exact outcome of a short input (each named set of positions and every other token a
    replaced position can show), the probabilities add up to 1 under each selection rule."""
    import math

    from mlm_book.channel import Channel

    n, channel = 5, Channel(7, rho=0.3)
    total = 0.0
    for masked in range(n + 1):
        for replaced in range(n + 1 - masked):
            for kept in range(n + 1 - masked - replaced):
                sets = math.comb(n, masked) * math.comb(n - masked, replaced) * math.comb(n - masked - replaced, kept)
                p = ch2.outcome_probability(n, masked, replaced, kept, channel=channel, selection=selection)
                total += sets * (channel.vocab_size - 1) ** replaced * p
    assert abs(total - 1.0) <= 1e-12
    law = ch2.selected_count_law(n, channel.rho, selection)
    assert law.shape == (n + 1,) and abs(law.sum() - 1.0) <= 1e-12


def test_fish_corruption_under_berts_count():
    f = ch2.fish_corruption()
    assert (f.count_one_segment, f.count_pair, f.outcome_probability["bert"]) == (2, 2, 0.0)
    assert f.law["bert"][2] == 1.0 and abs(sum(f.kinds.values()) - 1.0) <= 1e-12
    assert abs(f.two_masks - 0.8 ** 2 / 28) <= 1e-15
    with pytest.raises(ValueError, match="masked"):
        ch2.outcome_probability(8, masked=5, replaced=4)
    with pytest.raises(ValueError, match="selection"):
        ch2.selected_count_law(8, selection="coin")
