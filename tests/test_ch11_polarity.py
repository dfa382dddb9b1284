"""Chapter 11, Q8: can pooled filing-encoder representations recover a lexicon word's polarity?

Identities of the pooling and orientation pieces (to 1e-10 or exactly), then what the module's findings
rest on, each read from the cached per-seed results (no training; a cold build is about 25 s).
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from mlm_book.artefacts import filing_polarity as fp
from mlm_book.experiments import ch11_polarity as pol

# ----------------------------------------------------------------------------- identities


def _toy_stream(rng, n=40, d=3):
    document = np.sort(rng.integers(0, 4, size=n))
    return rng.normal(size=(n, d)), document


@pytest.mark.parametrize("radius", [0, 1, 3, 7, 10**12, None])
def test_neighbour_pooled_equals_a_direct_loop(radius):
    rng = np.random.default_rng(0)
    h, document = _toy_stream(rng)
    index = np.arange(h.shape[0])
    got = fp.neighbour_pooled(h, document, index, radius)
    for t in index:
        keep = document == document[t]
        if radius is not None:
            keep &= np.abs(np.arange(h.shape[0]) - t) <= radius
        assert np.allclose(got[t], h[keep].mean(axis=0), atol=1e-12, rtol=0)


def test_radius_zero_is_the_own_vector_and_none_the_filing_mean():
    rng = np.random.default_rng(1)
    h, document = _toy_stream(rng)
    index = np.array([0, 5, 17, 39])
    assert np.allclose(fp.neighbour_pooled(h, document, index, 0), h[index], atol=1e-13, rtol=0)
    whole = fp.neighbour_pooled(h, document, index, None)
    assert np.allclose(whole, [h[document == document[t]].mean(axis=0) for t in index], atol=1e-12, rtol=0)


def test_document_pooled_equals_a_direct_loop():
    rng = np.random.default_rng(2)
    m, d, words = 60, 4, 5
    h = rng.normal(size=(m, d))
    word = np.concatenate([np.arange(words), rng.integers(0, words, size=m - words)])
    document = rng.integers(0, 7, size=m)
    got = fp.document_pooled(h, word, document, words)
    for w in range(words):
        per_filing = [h[(word == w) & (document == f)].mean(axis=0) for f in np.unique(document[word == w])]
        assert np.allclose(got[w], np.mean(per_filing, axis=0), atol=1e-12, rtol=0)


def test_document_pooled_with_one_filing_is_the_plain_mean():
    rng = np.random.default_rng(3)
    h = rng.normal(size=(9, 2))
    word = np.array([0, 1, 2, 0, 1, 2, 0, 0, 1])
    got = fp.document_pooled(h, word, np.zeros(9, dtype=int), 3)
    assert np.allclose(got, [h[word == w].mean(axis=0) for w in range(3)], atol=1e-13, rtol=0)


def test_pooled_orientation_is_chapter_6s_on_observed_counts():
    from mlm_book.experiments.ch06_finance import results
    from mlm_book.finance.orientation import document_counts
    from mlm_book.finance.world import LEXICON, NEGATIVE_SEEDS, POSITIVE_SEEDS

    chapter6 = results()
    counts = document_counts(chapter6.corpus, list(LEXICON) + list(POSITIVE_SEEDS) + list(NEGATIVE_SEEDS))
    W = len(LEXICON)
    score, accuracy = fp.pooled_orientation(counts[:, :W], counts[:, W:W + 3].sum(axis=1),
                                             counts[:, W + 3:].sum(axis=1), [LEXICON[w] for w in LEXICON])
    assert np.allclose(score, chapter6.orientation.score, atol=1e-12, rtol=0)
    assert accuracy == chapter6.orientation.accuracy


def test_a_head_that_knows_the_seed_gives_chapter_6s_orientation():
    """One-hot masses at the seed slots (the head puts all its mass on the word that stands there)."""
    from mlm_book.experiments.ch06_finance import results

    chapter6 = results()
    slots, polarity = fp._seed_slots()
    score, accuracy = fp.head_orientation(fp._word_counts(), chapter6.corpus.document[slots],
                                           (polarity > 0).astype(float), (polarity < 0).astype(float),
                                           [int(v) for v in chapter6.orientation.truth])
    assert np.allclose(score, chapter6.orientation.score, atol=1e-12, rtol=0)
    assert accuracy == chapter6.orientation.accuracy


def test_head_orientation_by_hand():
    # filing 0: w0 twice, slot masses (0.9, 0.1); filing 1: w1 once, slot masses (0.4, 0.4); alpha = 0.5
    score, accuracy = fp.head_orientation([[2, 0], [0, 1]], [0, 1], [0.9, 0.4], [0.1, 0.4], [1, -1])
    prior = math.log(1.3 / 0.5)
    assert score[0] == pytest.approx(math.log((1.8 + 0.5) / (0.2 + 0.5)) - prior, abs=1e-14)
    assert score[1] == pytest.approx(math.log((0.4 + 0.5) / (0.4 + 0.5)) - prior, abs=1e-14)
    assert accuracy == 1.0


def test_an_undecided_head_scores_every_word_alike():
    """Equal masses at every slot: n_hat(P) = n_hat(N) in every filing, so every SO is exactly zero."""
    rng = np.random.default_rng(4)
    counts = rng.integers(0, 3, size=(6, 5))
    slots = np.arange(6)
    score, accuracy = fp.head_orientation(counts, slots, np.full(6, 0.3), np.full(6, 0.3), [1, 1, -1, -1, 1])
    assert np.all(score == 0) and accuracy == 0.5


def test_loo_accuracy_is_chapter_6s_protocol():
    """On the skip-gram vectors, chapter 6's lexicon probe number."""
    from mlm_book.experiments.ch06_finance import results
    from mlm_book.finance.world import LEXICON

    chapter6 = results()
    vectors = chapter6.skipgram.input_vectors[[chapter6.vocabulary.lookup(w) for w in LEXICON]]
    labels = [int(LEXICON[w] > 0) for w in LEXICON]
    assert fp.loo_accuracy(vectors, labels) == chapter6.lexicon_probe.accuracy


def test_spearman_by_hand_and_with_ties():
    assert fp.spearman([1, 2, 3, 4], [10, 20, 40, 30]) == pytest.approx(0.8, abs=1e-14)
    assert fp.spearman([1, 1, 2, 3], [1, 1, 2, 3]) == pytest.approx(1.0, abs=1e-14)
    assert fp.spearman([1, 2, 3], [3, 2, 1]) == pytest.approx(-1.0, abs=1e-14)


def test_threshold_is_chapter_6s():
    assert pol.CHANCE_SE == pytest.approx(0.0845, abs=1e-4)
    assert pol.THRESHOLD == pytest.approx(0.5 + 2 * math.sqrt(0.25 / 35), abs=1e-15)


@pytest.mark.parametrize("call, name", [
    (lambda: fp.neighbour_pooled([[1.0]], [0], [0], -1), "radius"),
    (lambda: fp.neighbour_pooled([[1.0], [2.0]], [1, 0], [0], 1), "document"),
    (lambda: fp.neighbour_pooled([[1.0]], [0], [3], 1), "index"),
    (lambda: fp.neighbour_pooled([[np.nan]], [0], [0], 1), "vectors"),
    (lambda: fp.document_pooled([[1.0]], [1], [0], 2), "words"),
    (lambda: fp.document_pooled([[1.0]], [0], [0], 10**12), "n_words"),
    (lambda: fp.head_orientation([[1]], [0], [0.7], [0.6], [1]), "positive_mass + negative_mass"),
    (lambda: fp.pooled_orientation([[1]], [1], [1], [1], smoothing=0), "smoothing"),
    (lambda: fp.loo_accuracy([[1.0]] * 4, [1, 1, 1, 0]), "labels"),
    (lambda: pol.results((1, 1)), "seeds"),
    (lambda: pol.accuracy_table("x"), "r"),
])
def test_bad_input_is_named(call, name):
    with pytest.raises((TypeError, ValueError), match=name.replace("+", r"\+")):
        call()


# ----------------------------------------------------------------------------- the findings


@pytest.fixture(scope="module")
def found():
    return pol.results()


@pytest.mark.book
def test_layer_0_of_document_pooling_is_chapter_7s(found):
    # the centred reading gives one vector per word at layer 0, however it is averaged (rounding of the probe's
    # standardisation only)
    assert np.allclose(found.document[:, 0], found.chapter7[:, 0], atol=1e-12)


@pytest.mark.book
def test_document_pooling_of_own_vectors_changes_little_and_never_passes(found):
    # "within a few hundredths": the same vectors, averaged with other weights
    assert np.abs(found.document - found.chapter7).max() <= 0.06
    assert np.all(found.document <= pol.THRESHOLD)


@pytest.mark.book
def test_radius_zero_is_chapter_7s_probe_read_the_other_way(found):
    # nearest-centre reading: at most about chance + 2 SE, like chapter 7's probe on the centred reading
    assert not found.recovers(found.neighbour[:, 0]).any()


@pytest.mark.book
def test_windows_and_just_beyond_do_not_recover_polarity(found):
    for radius in (8, 16, 32):
        assert not found.recovers(found.neighbour[:, fp.RADII.index(radius)]).any(), radius


@pytest.mark.book
def test_whole_filing_pooling_is_seed_dependent(found):
    holding = found.recovers(found.neighbour[:, fp.RADII.index(None)])
    assert 0 < holding.sum() < len(found.seeds)


@pytest.mark.book
def test_layer_0_rises_with_the_radius(found):
    # diagnostic, no rule: the static table plus a position, averaged over more neighbours, on average over seeds
    layer0 = found.neighbour[:, :, 0].mean(axis=0)
    assert min(layer0[2:]) > max(layer0[:2])


@pytest.mark.book
def test_whole_filing_layer_0_does_as_well_as_the_contextual_layers(found):
    whole = found.neighbour[:, fp.RADII.index(None)].mean(axis=0)
    assert whole[0] >= whole[1] and whole[0] >= whole[2]


@pytest.mark.book
def test_head_orientation_is_seed_dependent_and_below_observed_counts(found):
    above = found.head_accuracy > pol.THRESHOLD
    assert 0 < above.sum() < len(found.seeds)
    assert np.all(found.head_accuracy < found.reference_accuracy)
    # "correlates only moderately": positive at every seed, below 0.8 at every seed
    assert np.all(found.head_spearman > 0) and np.all(found.head_spearman < 0.8)


@pytest.mark.book
def test_the_head_knows_a_seed_stands_there_but_barely_which(found):
    assert np.all(found.slot_mass > 0.95)
    assert np.all(np.abs(found.slot_accuracy - 0.5) < 0.1)


@pytest.mark.book
def test_claims_verdicts_are_the_measured_ones():
    from mlm_book.ledger import verify

    outcomes = verify(claims=pol.CLAIMS)
    assert all(result.passed for result in outcomes), [(r.claim.quantity[:40], r.verdict) for r in outcomes]
    assert [c.id for c in pol.CLAIMS] == ["Q8", "Q8a", "Q8b", "Q8c", "Q8d", "Q8e"]  # every prestated rule registered


@pytest.mark.book
def test_tables_and_figure_render(found):
    assert len(pol.accuracy_table(found).splitlines()) == 2 + 2 + len(fp.RADII)
    assert len(pol.orientation_table(found).splitlines()) == 2 + len(found.seeds) + 1
    drawn = pol.figure_polarity(found)
    assert f"{found.reference_accuracy:.2f}" in drawn.alt and drawn.caption
    fig = drawn.figure
    for text in fig.findobj(lambda artist: hasattr(artist, "get_fontsize")):
        assert text.get_fontsize() >= 9
