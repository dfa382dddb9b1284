"""Chapter 9's data are the generator's mentions as BIO tags, and its trained taggers keep what the chapter reads."""

from __future__ import annotations

import numpy as np
import pytest

from mlm_book import crf, tagging
from mlm_book.experiments import ch09_spans as ch9
from mlm_book.experiments import ch09_subwords
from mlm_book.readings import span_scores


@pytest.fixture(scope="module")
def test_data():
    return ch9.test_data()


def test_gold_tags_are_the_mentions_in_bio(test_data):
    """Tags read back into the generator's spans, sentence by sentence, and the words are the sentence's tokens."""
    for k in range(0, test_data.text.count, 5):
        n = int(test_data.text.lengths[k])
        tags = [ch9.TAGS[t] for t in test_data.tags[k, :n]]
        assert tagging.spans_from_tags(tags, "BIO") == sorted(test_data.spans[k])
        assert np.all(test_data.tags[k, n:] == -1) and len(test_data.words[k]) == n


def test_training_sentences_come_from_chapter_6(test_data):
    from mlm_book.experiments import ch08_pairs
    train = ch9.train_data()
    full = ch08_pairs.sentences()
    assert train.text.count == ch9.TRAIN_SENTENCES
    # every training sentence is a sentence of chapter 6's corpus, ids and all
    rows = {tuple(full.ids[k, :full.lengths[k]].tolist()) for k in range(full.count)}
    assert all(tuple(train.text.ids[k, :train.text.lengths[k]].tolist()) in rows for k in range(0, 2000, 40))


def test_touching_mentions_are_what_io_loses(test_data):
    touching, first = ch9.io_example()
    lost = 0
    for spans in test_data.spans:
        n = max((b for _, b, _ in spans), default=0)
        read = tagging.spans_from_tags(tagging.tags_from_spans(spans, n, "IO"), "IO") if n else []
        lost += len(spans) - len(read)
    assert lost == touching > 0
    assert tagging.io_merges(test_data.spans[first]) > 0


def test_brute_force_log_partition_is_the_forward_recursion():
    rng = np.random.default_rng(3)
    for n in (1, 2, 4):
        e, T, a, b = rng.normal(size=(n, 9)), rng.normal(size=(9, 9)), rng.normal(size=9), rng.normal(size=9)
        assert ch9.brute_force_log_partition(e, T, a, b) == pytest.approx(crf.log_partition(e, T, a, b), abs=1e-10)
    with pytest.raises(ValueError, match="at most 10\\^6"):
        ch9.brute_force_log_partition(np.zeros((8, 9)), np.zeros((9, 9)), np.zeros(9), np.zeros(9))


@pytest.mark.book
def test_the_filing_encoder_reads_a_sentence_as_it_was_trained():
    """[CLS] is the [SEP] row and segments are zero: the wrapped encoder's states are the encoder's own."""
    from mlm_book.artefacts import filing_encoder
    from mlm_book.experiments import ch08_pairs
    from mlm_book.nn import encoder as enc
    from mlm_book.nn import token_finetune
    params, config = ch08_pairs.filing_pair_encoder(ch9.SEEDS[0])
    result = filing_encoder.trained_encoder(filing_encoder.seed_setup(ch9.SEEDS[0]))
    tokens, segments = ch9.inputs(ch9.test_data(), config)
    tokens, segments = tokens[:20], segments[:20]
    plain = np.where(tokens == config.cls_id, 1, tokens)          # [CLS] -> [SEP]
    ours = token_finetune.token_features(params, config, tokens, segments, 2)
    theirs = enc.hidden_states(result.params, result.encoder, np.pad(plain, ((0, 0), (0, config.encoder.length
                                                                                       - plain.shape[1])),
                                                                  constant_values=config.pad_id))[2]
    assert np.allclose(ours, theirs[:, :tokens.shape[1]], atol=1e-5)


def test_bad_input_is_named():
    with pytest.raises(ValueError, match="key must be one of"):
        span_scores.predictions("frozen/9/argmax")
    with pytest.raises(ValueError, match="kind must be one of"):
        ch9.unknown_share("GPE")
    from mlm_book.experiments import ch08_pairs
    with pytest.raises(ValueError, match="seed must be one of"):
        ch08_pairs.filing_pair_encoder(77)


@pytest.mark.book
def test_trained_taggers_keep_their_relationships():
    """At every seed: every tagger beats the empty tagger by far, constrained decoding never leaves BIO, and
    token accuracy is above entity F1 for the frozen argmax taggers."""
    lengths = ch9.test_data().text.lengths
    for key in span_scores.TAGGERS:
        for score in span_scores.scores(key):
            assert score.micro_f1 > 0.3
        if not key.endswith("/argmax"):
            for tags in span_scores.predictions(key):
                for row, n in zip(tags[:500], lengths[:500]):
                    tagging.check_tags([ch9.TAGS[t] for t in row[:n]], "BIO")
    for layer in ch9.LAYERS:
        key = f"frozen/{layer}/argmax"
        assert np.all(ch9.token_accuracies(key) > np.array([s.micro_f1 for s in span_scores.scores(key)]))


def test_subword_tradeoff_against_the_word_vocabulary():
    """The matched BPE has exactly the word vocabulary's number of ids and no unknown word on the test corpus;
    more merges never lengthen the text."""
    size, unknown_train, unknown_test = ch9.word_vocabulary_rates()
    assert ch9.matched_bpe().vocabulary_size == size
    assert ch9.matched_statistics().unknown_rate == 0.0 < unknown_train < unknown_test
    per_word = [row.subwords_per_word for row in ch9.subword_rows()]
    assert all(a >= b for a, b in zip(per_word, per_word[1:])) and per_word[-1] >= 1.0
    assert ch9.split_table(["thornchester"]).count("[UNK]") == 1


@pytest.mark.book
@pytest.mark.parametrize("name", ["ch09_spans.figure_f1", "ch09_spans.figure_subwords",
                                  "ch09_subwords.figure_losses", "ch09_subwords.figure_decoders"])
def test_legends_cover_no_data(name):
    """Every legend of chapter 9's figures sits outside the axes or where no point, line vertex or bar is drawn,
    and the alt text the figure brings is computed (it holds a number)."""
    import importlib
    import re

    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from mlm_book import figures
    module, function = name.split(".")
    drawn = getattr(importlib.import_module(f"mlm_book.experiments.{module}"), function)()
    assert isinstance(drawn, figures.DescribedFigure) and re.search(r"\d\.\d\d", drawn.alt)
    fig = drawn.figure
    with figures.style():
        fig.canvas.draw()
        renderer = fig.canvas.get_renderer()
        for ax in fig.axes:
            legend = ax.get_legend()
            if legend is None:
                continue
            box = legend.get_window_extent(renderer)
            for line in ax.lines:
                points = line.get_transform().transform(line.get_xydata())
                if line.get_linestyle() not in ("None", "none", "") and len(points) > 1:  # the segments too
                    steps = np.linspace(0, 1, 25)[:, None, None]
                    points = (points[:-1] + steps * (points[1:] - points[:-1])).reshape(-1, 2)
                assert not any(box.contains(x, y) for x, y in points), f"the legend covers {line.get_label()!r}"
            for patch in ax.patches:
                assert not box.overlaps(patch.get_window_extent(renderer)), "the legend covers a bar"
    plt.close(fig)


@pytest.mark.book  # reads the stored taggers' predictions
def test_anonymisation_reads_every_seed_and_checks_its_arguments():
    from mlm_book.experiments import ch09_spans as ch9

    runs = ch9.anonymisation()
    assert len(runs) == len(ch9.SEEDS) and all(r["leaked"] == r["missed"] + r["partly redacted"] for r in runs)
    with pytest.raises(ValueError, match="key"):
        ch9.anonymisation("crf/9/viterbi")
    with pytest.raises(ValueError, match="kind"):
        ch9.anonymisation(kind="GPE")


def test_touching_mentions_and_redaction_leaks():
    from mlm_book.experiments import ch09_spans as ch9

    touch = ch9.touching_mentions()
    pairs, sentences, first = touch[("LOC", "LOC")]
    assert pairs == ch9.io_example()[0] and first == ch9.io_example()[1] and 0 < sentences <= pairs
    # a tagger that finds every gold mention leaks nothing and over-redacts nothing
    gold = list(ch9.test_data().spans)
    perfect = ch9.redaction_leaks(gold, gold)
    assert perfect["leaked"] == perfect["over-redacted tokens"] == 0
    assert perfect["mentions"] == ch9.mention_count("PERSON")
    nothing = ch9.redaction_leaks(gold, [[] for _ in gold])
    assert nothing["leaked"] == nothing["missed"] == nothing["mentions"]
    with pytest.raises(ValueError, match="gold and found"):
        ch9.redaction_leaks(gold, gold[:3])
    with pytest.raises(ValueError, match=r"found\[0\]"):
        ch9.redaction_leaks([[]], [[(2, 1, "PERSON")]])


# The entity scores of both halves of the chapter are stored once: (module, its memoised reader, the entry's name).
_STORED = {"words": (span_scores, "_scores", "ch09-span-scores"),
           "subwords": (ch09_subwords, "_scores_cached", "ch09-subword-scores")}


def _assert_same_scores(read, expected):
    assert len(read) == len(expected)
    for value, wanted in zip(read, expected):
        assert value.types == wanted.types
        for name in ("tp", "fp", "fn"):
            got, want = getattr(value, name), getattr(wanted, name)
            assert got.dtype == want.dtype and np.array_equal(got, want), name


@pytest.mark.parametrize("half", _STORED)
def test_the_scores_are_stored_once_and_a_changed_producer_makes_a_new_entry(half, monkeypatch, tmp_path):
    """A constructed record (a seed without types included) reads back field for field and dtype for dtype; a
    second reading computes nothing; changing the runs' key or a module reached gives a new entry."""
    from mlm_book import artefacts, cache
    module, reader, name = _STORED[half]
    monkeypatch.setenv(cache.ENVIRONMENT_VARIABLE, str(tmp_path))
    made = (tagging.EntityScores(("LOC", "PERSON"), [3, 0], [1, 2], [0, 5]),
            tagging.EntityScores((), [], [], []),
            tagging.EntityScores(("ORG",), [7], [0], [1]))
    calls = []
    monkeypatch.setattr(module, "_compute_scores", lambda key: calls.append(key) or made)
    # unmemoised, so the edits below reach the key (and this process's memo is left alone)
    monkeypatch.setattr(module, "_producers", module._producers.__wrapped__)
    key = next(iter(module.TAGGERS))
    read = lambda: getattr(module, reader).__wrapped__(key)
    first, second = read(), read()
    assert calls == [key] and len(list(tmp_path.glob(f"{name}-*.npz"))) == 1
    for scores in (first, second):
        _assert_same_scores(scores, made)
    key_source = artefacts.key_source
    monkeypatch.setattr(artefacts, "key_source", lambda kind: key_source(kind) + "\nEDITED = 1")
    _assert_same_scores(read(), made)
    reached = cache.modules_reached
    monkeypatch.setattr(cache, "modules_reached", lambda module: (*reached(module), "EDITED = 2"))
    _assert_same_scores(read(), made)
    assert calls == [key] * 3 and len(list(tmp_path.glob(f"{name}-*.npz"))) == 3


@pytest.mark.book  # reads the stored taggers' predictions; about 1.5 s a tagger
@pytest.mark.parametrize("half,keys", [("words", ("frozen/2/argmax", "crf/2/viterbi")),
                                       ("subwords", ("frozen/2/mean/argmax", "tuned/2/first/viterbi"))])
def test_the_stored_scores_are_the_computed_ones(half, keys):
    """An argmax tagger (decoded with the repair) and a Viterbi one per half: the entry read from the store equals
    the scores computed afresh from the runs' predictions, field for field."""
    module, reader, _ = _STORED[half]
    for key in keys:
        _assert_same_scores(getattr(module, reader).__wrapped__(key), module._compute_scores(key))
