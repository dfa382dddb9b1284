"""Chapter 6's public callables answer bad input by name (issue 10).

The fast tests need no trained model: the checks they exercise run before anything is built.
Tests marked ``slow`` read the book's results (the skip-gram, and for ``ch07_encoder`` the
five filing encoders' measurements), which are trained when the cache is cold.
"""

from __future__ import annotations

import dataclasses
import math
import time

import numpy as np
import pytest

from mlm_book.experiments import ch07_encoder as enc
from mlm_book.experiments import ch06_finance as ch6
from mlm_book.experiments.ch06_finance import Chapter6Config, OrientationExplained


# ----------------------------------------------------------------------------- Chapter6Config


@pytest.mark.parametrize("field, value, error", [
    ("corpus", math.nan, TypeError), ("skipgram", "text", TypeError),
    ("corpus_seed", math.nan, TypeError), ("corpus_seed", -1, ValueError),
    ("skipgram_seed", 2.5, TypeError), ("position_seed", -1, ValueError),
    ("min_count", 0, ValueError), ("min_count", True, TypeError),
    ("window_length", 1, ValueError), ("window_length", math.inf, TypeError),
    ("nearest_stride", 0, ValueError), ("nearest_stride", 33, ValueError),
    ("polarity_min_count", None, TypeError), ("position_folds", 1, ValueError),
    ("vote_windows", (), ValueError), ("vote_windows", (8, 0), ValueError), ("vote_windows", "8", TypeError),
    ("vote_windows", math.nan, TypeError), ("neighbour_words", ("rose", 3), TypeError),
    ("neighbour_words", "rose", TypeError),
])
def test_config_names_its_bad_field(field, value, error):
    with pytest.raises(error, match=field):
        Chapter6Config(**{field: value})


def test_config_stores_sequences_as_tuples_so_it_stays_hashable():
    config = Chapter6Config(vote_windows=[8, None], neighbour_words=["rose"])
    assert config.vote_windows == (8, None) and config.neighbour_words == ("rose",)
    assert hash(config) == hash(Chapter6Config(vote_windows=(8, None), neighbour_words=("rose",)))
    assert Chapter6Config() == Chapter6Config()


# ----------------------------------------------------------------------------- OrientationExplained


GOOD = dict(seeds_per_filing=(1, 1), seed_agrees_with_tone=0.9, lexicon_agrees_with_tone=0.8,
            lexicon_agrees_with_seed=0.7, positive_seed_share=0.5, with_positive_seed=(0.6, 0.4),
            occurrences=(20, 35, 80), predicted_accuracy=0.9)


@pytest.mark.parametrize("field, value, error", [
    ("seeds_per_filing", math.nan, TypeError), ("seeds_per_filing", (1, 1.5), TypeError),
    ("seeds_per_filing", (2, 1), ValueError), ("seeds_per_filing", (-1, 1), ValueError),
    ("occurrences", (1, 2), TypeError), ("occurrences", (3, 2, 1), ValueError),
    ("with_positive_seed", (0.5, math.nan), ValueError), ("with_positive_seed", [0.5, 0.5], TypeError),
    ("seed_agrees_with_tone", 1.5, ValueError), ("lexicon_agrees_with_tone", "0.8", TypeError),
    ("lexicon_agrees_with_seed", -0.1, ValueError), ("positive_seed_share", math.inf, ValueError),
    ("predicted_accuracy", 1j, TypeError),
])
def test_orientation_explained_record_names_its_bad_field(field, value, error):
    with pytest.raises(error, match=field):
        OrientationExplained(**dict(GOOD, **{field: value}))


def test_orientation_explained_record_accepts_valid_fields():
    assert OrientationExplained(**GOOD).occurrences == (20, 35, 80)


# ----------------------------------------------------------------------------- fast argument checks


@pytest.mark.parametrize("function", [
    ch6.settings_table, ch6.example_filing, ch6.example_filing_table, ch6.window_view, ch6.window_table,
    ch6.counts_table, ch6.caps_table, ch6.news_table, ch6.news_distances, ch6.skipgram_table,
    ch6.neighbours_table, ch6.lexicon_neighbour_agreement, ch6.orientation_table, ch6.voting_table,
    ch6.orientation_explained, ch6.figure_aliases, ch6.figure_positions, ch6.figure_polarity, ch6.figure_voting,
])
@pytest.mark.parametrize("r", [[[1, 2], [3]], "text", math.nan])
def test_results_argument_is_checked_before_anything_is_built(function, r):
    # an unhashable r used to reach a functools.cache and fail with "unhashable type: 'list'"
    with pytest.raises(TypeError, match="r must be Chapter6Results"):
        function(r)


@pytest.mark.parametrize("config", ["text", math.nan, [[1, 2], [3]]])
def test_config_arguments_are_named(config):
    for function in (ch6.results, ch6.book_corpus, ch6.book_vocabulary, ch6.orientation_over_corpora):
        with pytest.raises(TypeError, match="config"):
            function(config)


@pytest.mark.parametrize("seeds, error", [
    (None, TypeError), ("text", TypeError), ([[1, 2], [3]], TypeError), ([0.5], TypeError), (1j, TypeError),
    (3, ValueError), ([], ValueError), ([-1, 2], ValueError), ([[1, 2]], ValueError), ([2**70], TypeError),
])
def test_orientation_over_corpora_refuses_bad_seeds_at_once(seeds, error):
    start = time.perf_counter()
    with pytest.raises(error, match="seeds"):
        ch6.orientation_over_corpora(seeds=seeds)
    assert time.perf_counter() - start < 0.5   # refused before any corpus is generated


def test_orientation_explained_names_a_bad_corpus():
    with pytest.raises(TypeError, match="corpus"):
        ch6.orientation_explained(corpus="text")


@pytest.mark.parametrize("index, error", [("text", TypeError), (2.5, TypeError), (-1, ValueError)])
def test_window_index_type_and_sign_are_checked_first(index, error):
    with pytest.raises(error, match="index"):
        ch6.window_view(index=index)


@pytest.mark.parametrize("per_row, error", [(None, TypeError), (0, ValueError), (1.5, TypeError)])
def test_window_table_per_row(per_row, error):
    with pytest.raises(error, match="per_row"):
        ch6.window_table(per_row=per_row)


@pytest.mark.parametrize("k, error", [(0, ValueError), (None, TypeError), (2.0, TypeError)])
def test_neighbours_k_is_checked_first(k, error):
    with pytest.raises(error, match="k must"):
        ch6.neighbours_table(k=k)


@pytest.mark.parametrize("getter", [None, "text", 3, [[1, 2], [3]]])
def test_band_needs_a_callable_getter(getter):
    for function in (enc.band, enc.band_text):
        with pytest.raises(TypeError, match="getter"):
            function(getter)


@pytest.mark.parametrize("fmt, error", [(None, TypeError), (3, TypeError), ("d", ValueError), ("s", ValueError),
                                         ("1000000000000", ValueError), (".1000000000000f", ValueError)])
def test_band_text_format_is_checked_before_reading_the_seeds(fmt, error):
    with pytest.raises(error, match="fmt"):
        enc.band_text(lambda m: 0.5, fmt)


@pytest.mark.parametrize("arguments, error, name", [
    ((3,), TypeError, "word"), ((None,), TypeError, "word"), (("rose", 1.5), TypeError, "occurrence"),
    (("rose", -1), ValueError, "occurrence"), (("rose", 0, 0), ValueError, "k"), (("rose", 0, "5"), TypeError, "k"),
])
def test_read_word_names_a_bad_argument_before_reading_the_encoder(arguments, error, name):
    with pytest.raises(error, match=name):
        enc.read_word(*arguments)


@pytest.mark.book  # reads the book's filing encoder (trained when the store lacks it)
def test_read_word_refuses_a_word_or_occurrence_the_filings_lack():
    with pytest.raises(ValueError, match="word must be one of"):
        enc.read_word("nightingale")
    with pytest.raises(ValueError, match="occurrence must be below"):
        enc.read_word("rose", 10**6)
    with pytest.raises(ValueError, match="k must be at most"):
        enc.read_word("rose", 0, 10**6)
    assert enc.read_word("rose", 0, 2).count("\n| ") == 3      # the header and two guesses


def test_encoder_record_arguments_are_named():
    with pytest.raises(TypeError, match="m must be FilingMeasurements"):
        enc.visible_by_frequency("text")
    with pytest.raises(TypeError, match="setup must be FilingEncoderSetup"):
        enc.layer0_baseline_parts(None)


# ----------------------------------------------------------------------------- with the book's results


@pytest.fixture(scope="module")
def book():
    return ch6.results()


@pytest.mark.slow  # reads the book's skip-gram (a few seconds of training when the store lacks it)
def test_results_record_checks_its_fields(book):
    fields = vars(book)
    ids = book.ids.copy()
    ids[0] = book.vocabulary.size
    for change, error, name in [
        ({"config": "text"}, TypeError, "config"), ({"corpus": None}, TypeError, "corpus"),
        ({"ids": book.ids.astype(float)}, TypeError, "ids"), ({"ids": ids}, ValueError, "ids"),
        ({"ids": book.ids[:-1]}, ValueError, "ids"), ({"ids": book.ids[None]}, ValueError, "ids"),
        ({"nearest_positions": book.nearest_positions + 1}, ValueError, "nearest_positions"),
        ({"nearest_positions": book.nearest_positions[:5]}, ValueError, "nearest_positions"),
        ({"centre": 32}, ValueError, "centre"), ({"centre": math.nan}, TypeError, "centre"),
        ({"votes": ()}, ValueError, "votes"), ({"votes": (None,)}, TypeError, "votes"),
        ({"polarity_words": "rose"}, TypeError, "polarity_words"),
        ({"position_reader": {"centred": math.nan}}, ValueError, "position_reader"),
        ({"position_reader": None}, TypeError, "position_reader"),
        ({"typing": book.orientation}, TypeError, "typing"),
    ]:
        with pytest.raises(error, match=name):
            ch6.Chapter6Results(**{**fields, **change})
    assert dataclasses.replace(book).counts == book.counts


@pytest.mark.slow
def test_results_are_memoised_per_config(book):
    assert ch6.results() is book and ch6.results(Chapter6Config()) is book


@pytest.mark.slow
def test_window_longer_than_a_filing_is_named():
    with pytest.raises(ValueError, match="window_length"):
        ch6.results(Chapter6Config(window_length=100_000, nearest_stride=16))


@pytest.mark.slow
def test_window_index_beyond_the_stream(book):
    with pytest.raises(ValueError, match="index must be a stream position"):
        ch6.window_view(book, index=book.corpus.n_tokens)
    assert ch6.window_view(book, index=book.corpus.n_tokens - 1).split()[book.centre].startswith("[[")


@pytest.mark.slow
def test_neighbours_k_beyond_the_vocabulary(book):
    with pytest.raises(ValueError, match="k must be at most"):
        ch6.neighbours_table(book, k=10**12)
    assert ch6.neighbours_table(book, k=book.vocabulary.size - 3).count("\n") == len(book.config.neighbour_words) + 1


@pytest.mark.book  # reads the five filing encoders' measurements (trained when the cache is cold)
def test_band_refuses_a_getter_that_gives_no_finite_number():
    for value, error in ((math.nan, ValueError), (math.inf, ValueError), ("0.5", TypeError), (None, TypeError)):
        with pytest.raises(error, match="getter"):
            enc.band(lambda m, value=value: value)
    assert enc.band(lambda m: np.float32(0.25)) == (0.25, 0.25, 0.0)


@pytest.mark.parametrize("arguments, keywords, error, name", [
    ((1.5,), {}, TypeError, "layer"), ((-1,), {}, ValueError, "layer"), ((3,), {}, ValueError, "layer"),
    ((1,), {"mask_at": 32}, ValueError, "mask_at"), ((1,), {"mask_at": 2.5}, TypeError, "mask_at"),
    ((1,), {"folds": "random"}, ValueError, "folds"), ((1,), {"folds": 5}, TypeError, "folds"),
])
def test_probe_kestrel_names_a_bad_argument_before_reading_the_encoder(arguments, keywords, error, name):
    with pytest.raises(error, match=name):
        enc.probe_kestrel(*arguments, **keywords)


@pytest.mark.parametrize("arguments, error, name", [
    ((3,), TypeError, "word"), (("strong",), ValueError, "word"), (("rose", 1.5), TypeError, "layer"),
    (("rose", 3), ValueError, "layer"), (("rose", -1), ValueError, "layer"),
])
def test_probe_news_names_a_bad_argument_before_reading_the_encoder(arguments, error, name):
    with pytest.raises(error, match=name):
        enc.probe_news(*arguments)


@pytest.mark.book  # reads the book's filing encoder
def test_the_rerun_probes_give_the_stored_measurements():
    m = enc.book()
    assert enc.probe_kestrel(1) == m.kestrel["1"] and enc.probe_kestrel(0, folds="contiguous") == m.kestrel["contiguous0"]
    assert enc.probe_news("rose", 1) == m.polarity["words"]["rose"]["accuracy"]
    # a probe trained with the neighbour hidden is a different experiment from the figure's clean-trained one
    assert 0.0 <= enc.probe_kestrel(2, mask_at=17) <= 1.0
