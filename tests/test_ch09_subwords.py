"""Chapter 9's subword taggers: pieces carry their words' tags, the two decoders read words as defined, and the
subword encoder is chapter 7's recipe on pieces."""

from __future__ import annotations

import numpy as np
import pytest

from mlm_book import tagging
from mlm_book.artefacts import filing_encoder, subword_encoder
from mlm_book.experiments import ch08_pairs, ch09_spans
from mlm_book.experiments import ch09_subwords as sw


@pytest.fixture(scope="module")
def test_pieces():
    return sw.pieces_of(ch09_spans.test_data())


def test_pieces_spell_their_words_and_carry_their_tags(test_pieces):
    data, bpe = ch09_spans.test_data(), ch09_spans.matched_bpe()
    for k in range(0, data.text.count, 7):
        n = int(test_pieces.text.lengths[k])
        ids, word = test_pieces.text.ids[k, :n], test_pieces.word[k, :n]
        assert bpe.decode(ids, word) == list(data.words[k])
        assert np.array_equal(test_pieces.tags[k, :n], data.tags[k, word])
        assert np.all(test_pieces.tags[k, n:] == -1) and np.all(test_pieces.word[k, n:] == -1)
    # no piece is unknown, and every sentence fits the encoder's window with [CLS] and [SEP]
    assert not np.any(test_pieces.text.ids == 0)
    assert int(test_pieces.text.lengths.max()) + 2 <= sw.SETUP.length


def test_the_two_decoders_on_a_hand_made_sentence():
    """Two words, the first of three pieces: 'first' reads piece 0, 'mean' averages the probabilities."""
    text = ch08_pairs.Sentences(np.array([[5, 6, 7, 8]]), np.array([4]), np.array([0]), np.array([0]),
                                np.array([0]), np.array([True]))
    pieces = sw.PieceData(text, np.array([[0, 0, 0, 1]]), np.array([[1, 1, 1, 0]]))
    probs = np.array([[[0.7, 0.2, 0.1], [0.1, 0.8, 0.1], [0.1, 0.2, 0.7], [0.3, 0.3, 0.4]]])
    first = sw.word_log_probs(np.log(probs), pieces, 2, "first")
    mean = sw.word_log_probs(np.log(probs), pieces, 2, "mean")
    assert np.allclose(np.exp(first[0]), probs[0, [0, 3]], atol=1e-12)
    assert np.allclose(np.exp(mean[0, 0]), [0.3, 0.4, 0.3], atol=1e-12)
    assert np.allclose(np.exp(mean[0, 1]), probs[0, 3], atol=1e-12)
    assert first[0, 0].argmax() == 0 and mean[0, 0].argmax() == 1     # the decoders disagree on the first word


def test_the_encoder_is_chapter_7s_recipe_on_pieces():
    """Only the window, the batch and the steps differ from chapter 7's setup; a step reads as many slots."""
    differ = {name for name in filing_encoder.SETUP.__dataclass_fields__
              if getattr(sw.SETUP, name) != getattr(filing_encoder.SETUP, name)}
    assert differ == {"length", "batch_windows", "steps"}
    assert sw.SETUP.length * sw.SETUP.batch_windows == filing_encoder.SETUP.length * filing_encoder.SETUP.batch_windows
    assert round(sw.pieces_per_word() * filing_encoder.SETUP.length) == sw.SETUP.length
    ids, document = sw.piece_stream()
    assert ids.size == sum(len(ch09_spans.matched_bpe().encode_word(w)) if w != "[SEP]" else 1
                           for w in filing_encoder.filing_world().corpus.tokens.tolist())
    assert np.all(np.diff(document) >= 0)
    # training windows never reach into a held-out filing
    held = set(filing_encoder.split().test_documents.tolist())
    assert not held & set(document[subword_encoder.train_pieces(subword_encoder.seed_setup(sw.SEEDS[0]))].tolist())


@pytest.mark.book
def test_bad_input_is_named():
    with pytest.raises(ValueError, match="key must be one of"):
        sw._predictions("frozen/2/last/argmax")
    with pytest.raises(TypeError, match="data must be"):
        sw.pieces_of(ch08_pairs.sentences())
    with pytest.raises(ValueError, match="kind must be one of"):
        sw.unknown_recall("GPE", "frozen/2/first/viterbi")
    with pytest.raises(ValueError, match="seed must be one of"):
        sw.trained_encoder(77)
    with pytest.raises(ValueError, match="name must look like"):
        sw.decoder_gap("frozen/2")
    with pytest.raises(ValueError, match="name must look like"):
        sw.split_words(2)
    data = ch09_spans.test_data()
    pieces = sw.pieces_of(data)
    with pytest.raises(ValueError, match="word must be -1 exactly where"):
        sw.PieceData(pieces.text, np.zeros_like(pieces.word), pieces.tags)
    with pytest.raises(ValueError, match="word must number"):
        sw.PieceData(pieces.text, np.where(pieces.word >= 0, 2 * pieces.word, -1), pieces.tags)


@pytest.mark.book
def test_trained_subword_taggers_keep_their_relationships():
    """At every seed every subword tagger beats the empty tagger by far, Viterbi output is valid BIO, and the
    fine-tuned tagger is at least as good as the frozen layer-0 probe."""
    lengths = ch09_spans.test_data().text.lengths
    for key in sw.TAGGERS:
        for score in sw._scores(key):
            assert score.micro_f1 > 0.3
        if key.endswith("/viterbi"):
            for tags in sw._predictions(key):
                for row, n in zip(tags[:500], lengths[:500]):
                    tagging.check_tags([ch09_spans.TAGS[t] for t in row[:n]], "BIO")
    for decoder in sw.DECODERS:
        tuned = [s.micro_f1 for s in sw._scores(f"tuned/{sw.TUNED_DEPTH}/{decoder}/viterbi")]
        bottom = [s.micro_f1 for s in sw._scores(f"frozen/0/{decoder}/viterbi")]
        assert all(a >= b for a, b in zip(tuned, bottom))
