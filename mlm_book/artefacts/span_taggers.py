r"""Chapter 9's word-level taggers as artefacts: the labelled sentences, and taggers on the filing encoder.

The filings generator annotates every *mention* as a span
([`mlm_book.finance.corpus.mention_spans`][mlm_book.finance.corpus.mention_spans]). Taggers
train on `TRAIN_SENTENCES` sentences of chapter 6's corpus and are tested on every sentence
of a fresh corpus of the same configuration (`TEST_SEED`), read through chapter 6's
vocabulary. A run ([`TaggerRun`][mlm_book.artefacts.span_taggers.TaggerRun]) fits every tagger
of chapter 9 (frozen probes by layer, a CRF on the top layer, fine-tuned taggers by depth) on
one filing encoder and stores their predicted tags;
[`mlm_book.experiments.ch09_spans`][mlm_book.experiments.ch09_spans] scores them.
"""

from __future__ import annotations

import functools
from dataclasses import asdict, dataclass, replace

import numpy as np

from mlm_book import artefacts, cache, crf_fit, probe, tagging
from mlm_book.artefacts import filing_encoder, filings, pair_encoder
from mlm_book.finance import corpus as corpus_module
from mlm_book.nn import token_finetune
from mlm_book.nn.token_finetune import TaggerConfig
from mlm_book.scoring import log_softmax
from mlm_book.validation import (
    as_float_array,
    as_int_array,
    check_instance,
    check_positive_int,
)

__all__ = ["TEST_SEED", "TRAIN_SEED", "TRAIN_SENTENCES", "SCHEME", "TAGS", "LAYERS", "CRF_LAYER", "TAGGER", "SEEDS",
           "ALLOWED", "UNSEEN", "SpanData", "span_data", "train_data", "test_data", "inputs", "slot_tags",
           "viterbi_all", "TaggerRun", "book_run", "tagger_predictions", "ARTEFACT_KINDS"]

TEST_SEED = 8001
"""Seed of the fresh test corpus (chapter 6's configuration)."""
TRAIN_SEED = 8000
"""Draws the training sentences from chapter 6's corpus."""
TRAIN_SENTENCES = 2000
"""Labelled training sentences (about a third of chapter 6's corpus), the same for every tagger."""
SCHEME = "BIO"
"""The tag scheme of every tagger."""
TAGS = tuple(tagging.tags_for_types(corpus_module.MENTION_TYPES, SCHEME))
"""The tags, in the order of the taggers' class ids (``O`` first)."""
LAYERS = (0, 1, 2)
"""Residual-stream layers the softmax taggers read: after 0, 1 and 2 blocks."""
CRF_LAYER = 2
"""The layer the CRF reads: the top one, as a CRF is put on BERT."""
TAGGER = TaggerConfig(depth=2, steps=300, batch_size=32, lr=1e-3, weight_decay=0.01)
"""The fine-tuning schedule (its depth is set per run): BERT's fine-tuning rates, fixed before any run."""
SEEDS = filing_encoder.SEEDS
"""The filing encoder's seeds (the book's first)."""
ALLOWED = tagging.allowed_transitions(list(TAGS), SCHEME)
"""The BIO transitions a valid tag sequence may take."""
UNSEEN = -1e4
"""Log-probability of a tag the probe never saw (finite, so Viterbi can still compare paths)."""
_MAX_WIDTH = 4096
"""Most input slots `slot_tags` lays out (the encoders read 32 or 48): a mistaken width is refused, not allocated."""


# ----------------------------------------------------------------------------- the data
@dataclass(frozen=True, eq=False)
class SpanData:
    """Sentences with their gold mentions.

    Attributes
    ----------
    text : Sentences
        Token ids in chapter 6's vocabulary (``-1`` padding).
    spans : tuple of tuple of (int, int, str)
        Each sentence's gold mentions.
    tags : ndarray of int, shape (N, m)
        Gold BIO tag ids (indices into `TAGS`), ``-1`` past each sentence's length.
    words : tuple of tuple of str
        Each sentence as written.

    Examples
    --------
    >>> from mlm_book.finance.corpus import CorpusConfig, generate_corpus
    >>> from mlm_book.finance.vocab import build_vocabulary
    >>> corpus = generate_corpus(CorpusConfig(n_documents=2), np.random.default_rng(0))
    >>> ids = build_vocabulary(corpus.tokens.tolist(), min_count=1).encode(corpus.tokens.tolist())
    >>> data = span_data(corpus, ids)
    >>> rebuilt = SpanData(data.text, data.spans, data.tags, data.words)     # its fields are checked
    >>> len(rebuilt.spans) == rebuilt.text.count
    True
    """

    text: pair_encoder.Sentences
    spans: tuple
    tags: np.ndarray
    words: tuple

    def __post_init__(self):
        check_instance(self.text, "text", pair_encoder.Sentences)
        n = self.text.count
        for name in ("spans", "words"):
            if not isinstance(getattr(self, name), tuple):
                raise TypeError(f"{name} must be a tuple with one entry per sentence, got "
                                f"{type(getattr(self, name)).__name__}")
        tags = as_int_array(self.tags, "tags", ndim=2)
        if len(self.spans) != n or len(self.words) != n or tags.shape != self.text.ids.shape:
            raise ValueError(f"spans, words and tags must describe the {n} sentences of text")
        if tags.min() < -1 or tags.max() >= len(TAGS):
            raise ValueError(f"tags must be indices into TAGS (0 .. {len(TAGS) - 1}) or -1")
        object.__setattr__(self, "tags", tags)


def span_data(corpus, ids, rows=None) -> SpanData:
    """The sentences of ``corpus`` read as ``ids``, with their gold mentions and BIO tags (only ``rows``, if given).

    Examples
    --------
    >>> from mlm_book.finance.corpus import CorpusConfig, generate_corpus
    >>> from mlm_book.finance.vocab import build_vocabulary
    >>> corpus = generate_corpus(CorpusConfig(n_documents=2), np.random.default_rng(0))
    >>> ids = build_vocabulary(corpus.tokens.tolist(), min_count=1).encode(corpus.tokens.tolist())
    >>> data = span_data(corpus, ids)
    >>> data.tags.shape == data.text.ids.shape, len(data.words) == data.text.count
    (True, True)

    Raises
    ------
    TypeError, ValueError
        If ``corpus`` or ``ids`` is not one `sentences_of` reads, or ``rows`` is not a non-empty 1-D array
        of sentence indices in filing order.
    """
    if rows is not None:
        rows = as_int_array(rows, "rows", ndim=1)
    text = pair_encoder.sentences_of(corpus, ids)
    if rows is not None:
        # the rows' sentences must make a Sentences of their own: at least one, each filing's together
        if rows.size == 0 or rows.min() < 0 or rows.max() >= text.count:
            raise ValueError(f"rows must be a non-empty array of sentence indices in [0, {text.count})")
        if np.any(np.diff(text.filing[rows]) < 0):
            raise ValueError("rows must keep the sentences in filing order")
    spans = corpus_module.mention_spans(corpus)
    real = corpus.tokens != corpus_module.SEP
    index = corpus.sentence - corpus.sentence.min()
    words = [[] for _ in range(text.count)]
    for k, word in zip(index[real], corpus.tokens[real]):
        words[k].append(str(word))
    tags = np.full(text.ids.shape, -1, dtype=np.int64)
    code = {tag: k for k, tag in enumerate(TAGS)}
    for k in range(text.count):
        tags[k, :text.lengths[k]] = [code[t] for t in tagging.tags_from_spans(spans[k], int(text.lengths[k]), SCHEME)]
    if rows is not None:
        text = pair_encoder.Sentences(text.ids[rows], text.lengths[rows], text.filing[rows], text.filer[rows],
                                    text.news[rows], np.append(text.filing[rows][1:] != text.filing[rows][:-1], True))
        return SpanData(text, tuple(tuple(spans[r]) for r in rows), tags[rows], tuple(tuple(words[r]) for r in rows))
    return SpanData(text, tuple(tuple(s) for s in spans), tags, tuple(tuple(w) for w in words))


@functools.cache
def train_data(sentences: int = TRAIN_SENTENCES) -> SpanData:
    """`TRAIN_SENTENCES` sentences of chapter 6's corpus (drawn once with `TRAIN_SEED`, kept in order).

    Examples
    --------
    >>> data = train_data()
    >>> data.text.count, TAGS[int(data.tags[0, 0])]
    (2000, 'B-ORG')
    """
    world = filings.filings()
    count = int(world.corpus.sentence.max() - world.corpus.sentence.min()) + 1
    rows = np.sort(np.random.default_rng(TRAIN_SEED).choice(count, size=sentences, replace=False))
    return span_data(world.corpus, world.ids, rows)


@functools.cache
def test_data(documents: int | None = None) -> SpanData:
    """Every sentence of a fresh corpus of chapter 6's configuration (seed `TEST_SEED`), in chapter 6's vocabulary.

    ``documents`` replaces the configuration's number of filings (a tiny build reads fewer).
    """
    world = filings.filings()
    config = world.setup.corpus if documents is None else replace(world.setup.corpus, n_documents=documents)
    corpus = corpus_module.generate_corpus(config, np.random.default_rng(TEST_SEED))
    return span_data(corpus, world.vocabulary.encode(corpus.tokens.tolist()))


def inputs(data: SpanData, config):
    """``[CLS] s [SEP]`` inputs of every sentence of ``data`` (the filing encoder reads [CLS] as [SEP]).

    Parameters
    ----------
    data : SpanData
    config : mlm_book.nn.pairs.PairEncoderConfig
        The encoder's shape (its length must hold the longest sentence and two slots).

    Returns
    -------
    tokens, segments : numpy.ndarray of int, shape (N, w)
        Cut to the longest sentence plus its two slots, ``w = max(m) + 2``; one segment (0).

    Examples
    --------
    >>> from mlm_book.finance.corpus import CorpusConfig, generate_corpus
    >>> from mlm_book.finance.vocab import SEP_ID, build_vocabulary
    >>> from mlm_book.nn import encoder as enc, pairs
    >>> corpus = generate_corpus(CorpusConfig(n_documents=2), np.random.default_rng(0))
    >>> vocabulary = build_vocabulary(corpus.tokens.tolist(), min_count=1)
    >>> data = span_data(corpus, vocabulary.encode(corpus.tokens.tolist()))
    >>> config = pairs.PairEncoderConfig(enc.EncoderConfig(vocab_size=vocabulary.size, length=32, pad=True))
    >>> tokens, segments = inputs(data, config)
    >>> tokens.shape == (data.text.count, int(data.text.lengths.max()) + 2), int(segments.max())
    (True, 0)
    >>> m = int(data.text.lengths[0])      # the first sentence's words sit at slots 1 .. m
    >>> bool(tokens[0, 0] == config.cls_id), bool(tokens[0, m + 1] == SEP_ID)
    (True, True)

    Raises
    ------
    TypeError, ValueError
        If ``data`` is not `SpanData`, or ``config`` is not a pair encoder's whose length holds the sentences.
    """
    check_instance(data, "data", SpanData)
    return pair_encoder.single_inputs(data.text, np.arange(data.text.count), config)


def slot_tags(data: SpanData, width: int) -> np.ndarray:
    """Tags on the input slots: ``-1`` on [CLS], [SEP] and padding, the words' tags at slots 1 ... m.

    Examples
    --------
    >>> from mlm_book.finance.corpus import CorpusConfig, generate_corpus
    >>> from mlm_book.finance.vocab import build_vocabulary
    >>> corpus = generate_corpus(CorpusConfig(n_documents=2), np.random.default_rng(0))
    >>> ids = build_vocabulary(corpus.tokens.tolist(), min_count=1).encode(corpus.tokens.tolist())
    >>> data = span_data(corpus, ids)
    >>> slots = slot_tags(data, 8)
    >>> slots.shape == (data.text.count, 8), bool(np.all(slots[:, 0] == -1))      # [CLS] has no tag
    (True, True)

    Raises
    ------
    TypeError, ValueError
        If ``data`` is not `SpanData`, or ``width`` is not an integer in [1, 4096].
    """
    check_instance(data, "data", SpanData)
    width = check_positive_int(width, "width", maximum=_MAX_WIDTH)
    out = np.full((data.text.count, width), -1, dtype=np.int64)
    m = min(width - 1, data.tags.shape[1])
    out[:, 1:1 + m] = data.tags[:, :m]
    return out


# ----------------------------------------------------------------------------- the runs
def viterbi_all(log_probs: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """Constrained Viterbi per sentence over per-token log-probabilities (no learned transitions).

    Examples
    --------
    >>> log_probs = np.log(np.full((2, 3, len(TAGS)), 1.0 / len(TAGS)))
    >>> log_probs[:, :, TAGS.index("O")] = 0.0          # "outside" is certain everywhere
    >>> viterbi_all(log_probs, np.array([3, 2])).tolist() == [[TAGS.index("O")] * 3, [TAGS.index("O")] * 2 + [-1]]
    True

    Raises
    ------
    TypeError, ValueError
        If ``log_probs`` is not a finite (B, n, len(TAGS)) array with B, n >= 1, or ``lengths`` not one
        length in [1, n] per sentence.
    """
    log_probs = as_float_array(log_probs, "log_probs", ndim=3)
    if log_probs.shape[0] == 0 or log_probs.shape[1] == 0 or log_probs.shape[2] != len(TAGS):
        raise ValueError(f"log_probs must have shape (B, n, {len(TAGS)}) (one column per tag) with B, n >= 1, "
                         f"got {log_probs.shape}")
    K = log_probs.shape[2]
    return crf_fit.viterbi_batch(log_probs, lengths, np.zeros((K, K)), np.zeros(K), np.zeros(K), allowed=ALLOWED)


@dataclass(frozen=True)
class TaggerRun:
    """Every tagger of chapter 9 on one encoder of the filings, and what they read.

    The same run describes the taggers on chapter 7's word encoder (here) and on chapter 9's
    subword encoder ([`mlm_book.artefacts.subword_encoder`][mlm_book.artefacts.subword_encoder]).

    Attributes
    ----------
    encoder : FilingEncoderSetup
        The encoder (chapter 7's at one of `SEEDS`, or the subword encoder's setup at one).
    train_sentences : int
        `TRAIN_SENTENCES` in the book.
    test_documents : int or None
        Filings of the test corpus (None: the configuration's 300).
    tagger : TaggerConfig
        The fine-tuning schedule (`TAGGER`; its depth and seed are set per tagger).

    Examples
    --------
    >>> from mlm_book.artefacts.filing_encoder import FilingEncoderSetup
    >>> TaggerRun(FilingEncoderSetup(steps=3)).train_sentences
    2000
    """

    encoder: filing_encoder.FilingEncoderSetup
    train_sentences: int = TRAIN_SENTENCES
    test_documents: int | None = None
    tagger: TaggerConfig = TAGGER

    def __post_init__(self):
        check_instance(self.encoder, "encoder", filing_encoder.FilingEncoderSetup)
        check_positive_int(self.train_sentences, "train_sentences")
        if self.test_documents is not None:
            check_positive_int(self.test_documents, "test_documents")
        check_instance(self.tagger, "tagger", TaggerConfig)


def book_run(seed: int) -> TaggerRun:
    """The book's taggers on chapter 7's filing encoder at ``seed`` (one of `SEEDS`).

    Examples
    --------
    >>> book_run(SEEDS[0]).encoder.seed == SEEDS[0]
    True
    """
    return TaggerRun(filing_encoder.seed_setup(pair_encoder.check_book_seed(seed)))


def _run(run: TaggerRun) -> dict:
    """Every tagger's predicted tag ids on the test sentences (``-1`` past each length)."""
    params, config = pair_encoder.as_pair_encoder(filing_encoder.trained_encoder(run.encoder))
    train, test = train_data(run.train_sentences), test_data(run.test_documents)
    train_tokens, train_segments = inputs(train, config)
    test_tokens, test_segments = inputs(test, config)
    m_train, m_test = train.text.lengths, test.text.lengths
    w_train, w_test = train.tags.shape[1], test.tags.shape[1]       # slots 1 .. w hold the words
    inside_train, inside_test = train.tags >= 0, test.tags >= 0
    y = train.tags[inside_train]
    out = {}
    for layer in LAYERS:
        x_train = token_finetune.token_features(params, config, train_tokens, train_segments, layer)[:, 1:1 + w_train]
        x_test = token_finetune.token_features(params, config, test_tokens, test_segments, layer)[:, 1:1 + w_test]
        model = probe.fit_probe(x_train[inside_train], y)
        logits = model.logits(x_test[inside_test])
        # a tag no training sentence shows (I-LOC: every place is one word) gets a vanishing probability
        rows = np.full((logits.shape[0], len(TAGS)), UNSEEN)
        rows[:, model.classes] = log_softmax(logits)
        log_probs = np.zeros(inside_test.shape + (len(TAGS),))
        log_probs[inside_test] = rows
        out[f"frozen/{layer}/argmax"] = np.where(inside_test, log_probs.argmax(axis=2), -1)
        out[f"frozen/{layer}/viterbi"] = viterbi_all(log_probs, m_test)
        if layer == CRF_LAYER:
            scaler = probe.fit_standardizer(x_train[inside_train])
            scaled_train = np.zeros_like(x_train)
            scaled_train[inside_train] = scaler.transform(x_train[inside_train])
            scaled_test = np.zeros_like(x_test)
            scaled_test[inside_test] = scaler.transform(x_test[inside_test])
            tags = np.where(inside_train, train.tags, 0)
            model_crf = crf_fit.fit_crf(scaled_train, m_train, tags, len(TAGS), allowed=ALLOWED)
            paths = crf_fit.decode(model_crf, scaled_test, m_test, allowed=ALLOWED)
            out[f"crf/{layer}/viterbi"] = np.array([np.pad(p, (0, inside_test.shape[1] - p.size),
                                                           constant_values=-1) for p in paths])
    slot = slot_tags(train, train_tokens.shape[1])
    for depth in LAYERS:
        tagger = token_finetune.fine_tune_tagger(params, config, train_tokens, train_segments, slot,
                                                 replace(run.tagger, depth=depth, seed=run.encoder.seed),
                                                 n_tags=len(TAGS))
        log_probs = token_finetune.tag_log_probabilities(tagger, test_tokens, test_segments)[:, 1:1 + w_test]
        out[f"tuned/{depth}/argmax"] = np.where(inside_test, log_probs.argmax(axis=2), -1)
        out[f"tuned/{depth}/viterbi"] = viterbi_all(log_probs, m_test)
    return out


def _config(run: TaggerRun) -> dict:
    # the encoder's identity keys these runs too: a retrained encoder re-runs its taggers
    return {"run": asdict(run), "encoder": filing_encoder.identity(run.encoder), "test_seed": TEST_SEED,
            "train_seed": TRAIN_SEED, "tags": list(TAGS), "layers": list(LAYERS), "crf_layer": CRF_LAYER}


def _entry(run: TaggerRun) -> cache.CacheEntry:
    return cache.entry_for("ch08-taggers", _config(run), [artefacts.key_source("span-taggers")])


@functools.cache
def tagger_predictions(run: TaggerRun) -> dict:
    """Every tagger's predicted tag ids of ``run``, by tagger key (from the store, or run now and stored)."""
    check_instance(run, "run", TaggerRun)
    arrays, _ = cache.cached("ch08-taggers", _config(run), [artefacts.key_source("span-taggers")],
                             lambda: _run(run))
    return arrays


def _tiny() -> TaggerRun:
    return TaggerRun(filing_encoder.tiny_setup(), train_sentences=40, test_documents=4,
                     tagger=replace(TAGGER, steps=2, batch_size=4))


# ----------------------------------------------------------------------------- the declaration (not keyed)
ARTEFACT_KINDS = (artefacts.Kind(
    name="span-taggers", chapter=9, summary="chapter 9's word-level taggers on the filing encoder, 5 seeds",
    modules=("mlm_book.artefacts.span_taggers", "mlm_book.artefacts.pair_encoder", "mlm_book.tagging",
             "mlm_book.crf", "mlm_book.crf_fit", "mlm_book.scoring", "mlm_book.nn.token_finetune", "mlm_book.nn.finetune",
             "mlm_book.nn.pairs"),
    after=("filing-encoder",), setups=lambda: tuple(book_run(seed) for seed in SEEDS),
    is_built=lambda run: cache.load(_entry(run)) is not None, build=tagger_predictions,
    cost=lambda run: 11.0 * run.train_sentences / TRAIN_SENTENCES,   # seconds on one core, cold build of 2026-12-02
    describe=lambda run: f"seed {run.encoder.seed}", tiny=_tiny),)
