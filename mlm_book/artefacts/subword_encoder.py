r"""Chapter 9's subword half: a filing encoder pre-trained on BPE pieces, and taggers that read words through them.

**The encoder.** Chapter 6's filings with every word split by the matched BPE
([`matched_bpe`][mlm_book.artefacts.subword_encoder.matched_bpe]: as many ids as chapter 6's
word vocabulary, learned on the same filings), pre-trained by chapter 7's recipe
([`filing_encoder.SETUP`][mlm_book.artefacts.filing_encoder.SETUP]: same shape, channel, learning
rate, warm-up share and total weight decay) at the same five seeds, with three changes fixed
before any run ([`SETUP`][mlm_book.artefacts.subword_encoder.SETUP]):

* windows of 48 pieces, so that a window holds about as much text as chapter 6's 32 words
  (the filings have about 1.5 pieces per word), and 80 windows a batch, so that a step
  still reads 3840 slots;
* 1000 steps instead of 3000: what chapter 9's four-minute training budget allows at five
  seeds. The encoder is therefore compared with itself (two ways of decoding), and with
  chapter 7's word encoder only with that caveat.

**The taggers** are chapter 9's, on the same training and test sentences, with each word read
as its pieces: ``[SEP] pieces [SEP]``. In training every piece carries its word's BIO tag
(D-40). A word's tag is decoded from its **first** piece's distribution, or from the **mean**
of its pieces' distributions; then argmax (with ``conlleval``'s repair) or constrained Viterbi
over the words, exactly as for the word encoder. Frozen probes read the residual stream after
0, 1 and 2 blocks; one tagger is fine-tuned through both blocks with chapter 9's schedule.
"""

from __future__ import annotations

import functools
import hashlib
from dataclasses import asdict, dataclass, replace

import numpy as np

from mlm_book import artefacts, cache, probe, subword
from mlm_book.artefacts import filing_encoder, filings, pair_encoder, span_taggers
from mlm_book.finance import windows as windows_module
from mlm_book.finance.vocab import SEP_ID
from mlm_book.nn import token_finetune
from mlm_book.nn.train import TrainResult, cached_training, is_cached_training
from mlm_book.scoring import log_softmax
from mlm_book.validation import (
    as_int_array,
    check_choice,
    check_instance,
    check_positive_int,
)

__all__ = ["SETUP", "SEEDS", "LAYERS", "TUNED_DEPTH", "DECODERS", "matched_bpe", "seed_setup", "piece_stream",
           "train_pieces", "trained", "trained_encoder", "is_trained", "PieceData", "pieces_of", "word_log_probs",
           "book_run", "tagger_predictions", "tiny_setup", "ARTEFACT_KINDS"]

SETUP = replace(filing_encoder.SETUP, length=48, batch_windows=80, steps=1000)
"""Chapter 7's recipe on pieces: 48-piece windows, 80 a batch, 1000 steps (seed set per run)."""
SEEDS = filing_encoder.SEEDS
"""Chapter 7's five training seeds."""
LAYERS = span_taggers.LAYERS
"""Layers the frozen probes read."""
TUNED_DEPTH = 2
"""The fine-tuned tagger trains both blocks (chapter 9's best word tagger)."""
DECODERS = ("first", "mean")
"""How a word's distribution is read from its pieces: the first piece's, or the mean of all of them."""
_MAX_WORDS = 4096
"""Most words a row of `word_log_probs` holds (a filing sentence has at most 13): a mistaken size is refused."""

if subword.SPECIAL_TOKENS.index("[SEP]") != SEP_ID:      # the pair reading puts [CLS] on the [SEP] row
    raise ImportError("subword's [SEP] id must equal the word vocabulary's SEP_ID")


@functools.cache
def matched_bpe() -> subword.BPE:
    """The BPE whose vocabulary has as many ids as chapter 6's word vocabulary (learned on chapter 6's filings)."""
    world = filings.filings()
    train = world.corpus.tokens.tolist()
    base = subword.learn_bpe(subword.count_words(train), 0).vocabulary_size
    return subword.learn_bpe(subword.count_words(train), world.vocabulary.size - base)


def seed_setup(seed: int) -> filing_encoder.FilingEncoderSetup:
    """`SETUP` at ``seed``, one of `SEEDS`.

    Examples
    --------
    >>> seed_setup(SEEDS[0]).seed == SEEDS[0], seed_setup(SEEDS[0]).d_model == SETUP.d_model
    (True, True)
    """
    return filing_encoder.seed_setup(pair_encoder.check_book_seed(seed), SETUP)


# ----------------------------------------------------------------------------- the piece stream and its encoder
@functools.cache
def piece_stream() -> tuple[np.ndarray, np.ndarray]:
    """Chapter 6's filings as matched-BPE ids: ``(ids, document)``, one entry per piece.

    Examples
    --------
    >>> ids, document = piece_stream()
    >>> ids.size > filing_encoder.filing_world().ids.size, int(document[-1]) + 1
    (True, 300)
    """
    world = filing_encoder.filing_world()
    ids, word = matched_bpe().tokenize(world.corpus.tokens.tolist())
    return ids, world.corpus.document[word]


def train_pieces(setup) -> np.ndarray:
    """The pieces of the training filings of chapter 7's split (its held-out filings stay held out).

    Parameters
    ----------
    setup : FilingEncoderSetup
        The encoder whose split is read.

    Returns
    -------
    numpy.ndarray of int, shape (p,)
        Indices into [`piece_stream`][mlm_book.artefacts.subword_encoder.piece_stream]'s pieces, increasing.

    Examples
    --------
    >>> pieces = train_pieces(SETUP)
    >>> ids, document = piece_stream()
    >>> pieces.size < ids.size, np.unique(document[pieces]).size      # 240 of the 300 filings
    (True, 240)

    Raises
    ------
    TypeError
        If ``setup`` is not a `FilingEncoderSetup`.
    """
    check_instance(setup, "setup", filing_encoder.FilingEncoderSetup)     # before the memoised split reads it
    _, document = piece_stream()
    return np.flatnonzero(~np.isin(document, filing_encoder.split(setup).test_documents))


def _source(setup):
    ids, document = piece_stream()
    pieces = train_pieces(setup)
    pad_id = setup.encoder(matched_bpe().vocabulary_size).pad_id

    def source(batch, rng):
        picks = pieces[rng.integers(0, pieces.size, size=batch)]
        return windows_module.centred_windows(ids, document, length=setup.length, pad_id=pad_id, select=picks)[0]

    return source


def _bpe_digest() -> str:
    bpe = matched_bpe()
    return hashlib.sha256(repr((bpe.merges, bpe.alphabet, bpe.end_of_word)).encode()).hexdigest()


def _training_arguments(setup):
    V = matched_bpe().vocabulary_size
    key = {**filing_encoder.source_key(setup), "subwords": _bpe_digest(), "windows": "centred on a uniform "
           "training piece"}
    return ("subword-encoder", setup.encoder(V), filing_encoder.training_config(setup), _source(setup),
            setup.channel(V), key)


@functools.cache
def trained(setup) -> TrainResult:
    """The subword encoder of ``setup`` (from the store, or trained now and stored)."""
    check_instance(setup, "setup", filing_encoder.FilingEncoderSetup)
    return cached_training(*_training_arguments(setup), producers=[artefacts.key_source("subword-encoder")])


def trained_encoder(seed: int) -> TrainResult:
    """The book's subword encoder at ``seed`` (one of `SEEDS`)."""
    return trained(seed_setup(seed))


def is_trained(setup) -> bool:
    """Whether the store holds the subword encoder of ``setup``.

    Examples
    --------
    The book's encoder at its first seed (the answer depends on what the store holds; asking trains nothing):

    >>> isinstance(is_trained(seed_setup(SEEDS[0])), bool)
    True

    Raises
    ------
    TypeError
        If ``setup`` is not a `FilingEncoderSetup`.
    """
    check_instance(setup, "setup", filing_encoder.FilingEncoderSetup)
    name, encoder, training, _, channel, key = _training_arguments(setup)
    return is_cached_training(name, encoder, training, channel, key,
                              producers=[artefacts.key_source("subword-encoder")])


# ----------------------------------------------------------------------------- sentences as pieces
@dataclass(frozen=True, eq=False)
class PieceData:
    """Chapter 9's sentences read as pieces.

    Attributes
    ----------
    text : Sentences
        Piece ids per sentence (``-1`` padding), with the sentences' filings and facts.
    word : ndarray of int, shape (N, p)
        The word each piece belongs to (``-1`` past the sentence).
    tags : ndarray of int, shape (N, p)
        Each piece's tag: its word's BIO tag id (``-1`` past the sentence).

    Raises
    ------
    TypeError
        If ``text`` is not ``Sentences`` or ``word`` or ``tags`` does not hold integers.
    ValueError
        If ``word`` or ``tags`` is not of ``text.ids``' shape, or ``word`` does not number each sentence's
        words 0, 1, 2, ... where ``text`` has pieces (and ``-1`` elsewhere), or a tag is not a tag id there.

    Examples
    --------
    One sentence of three pieces, its first word split in two:

    >>> from mlm_book.artefacts.pair_encoder import Sentences
    >>> text = Sentences(np.array([[5, 6, 7]]), np.array([3]), np.array([0]), np.array([0]), np.array([0]),
    ...                  np.array([True]))
    >>> B, O = span_taggers.TAGS.index("B-ORG"), span_taggers.TAGS.index("O")
    >>> pieces = PieceData(text, word=np.array([[0, 0, 1]]), tags=np.array([[B, B, O]]))
    >>> int(pieces.word.max()) + 1      # words
    2
    >>> PieceData(text, word=np.array([[0, 2, 3]]), tags=np.array([[B, O, O]]))
    Traceback (most recent call last):
    ...
    ValueError: word must number each sentence's words 0, 1, 2, ... (steps of 0 or 1)
    """

    text: pair_encoder.Sentences
    word: np.ndarray
    tags: np.ndarray

    def __post_init__(self):
        check_instance(self.text, "text", pair_encoder.Sentences)
        shape = self.text.ids.shape
        word, tags = as_int_array(self.word, "word", ndim=2), as_int_array(self.tags, "tags", ndim=2)
        for name, value in (("word", word), ("tags", tags)):
            if value.shape != shape:
                raise ValueError(f"{name} must have the shape of text.ids {shape}, got {value.shape}")
        if not np.array_equal(word < 0, self.text.ids < 0) or word.min() < -1:
            raise ValueError("word must be -1 exactly where text.ids is padding, and a word index elsewhere")
        steps = np.diff(np.where(word >= 0, word, word.max() + 1), axis=1)
        if np.any(word[:, 0] > 0) or np.any((steps != 0) & (steps != 1) & (word[:, 1:] >= 0)):
            raise ValueError("word must number each sentence's words 0, 1, 2, ... (steps of 0 or 1)")
        if not np.array_equal(tags < 0, word < 0) or tags.min() < -1 or tags.max() >= len(span_taggers.TAGS):
            raise ValueError(f"tags must be tag ids (0 .. {len(span_taggers.TAGS) - 1}) where word is set, -1 elsewhere")
        object.__setattr__(self, "word", word)
        object.__setattr__(self, "tags", tags)


def pieces_of(data: span_taggers.SpanData) -> PieceData:
    """``data``'s sentences split by the matched BPE, every piece tagged with its word's tag.

    Examples
    --------
    >>> pieces = pieces_of(span_taggers.train_data())
    >>> int(pieces.text.lengths.max()) + 2 <= SETUP.length, bool((pieces.tags >= 0).sum() == pieces.text.lengths.sum())
    (True, True)
    """
    check_instance(data, "data", span_taggers.SpanData)
    bpe = matched_bpe()
    split = [bpe.tokenize(list(words)) for words in data.words]
    lengths = np.array([ids.size for ids, _ in split])
    width = int(lengths.max())
    ids = np.full((len(split), width), -1, dtype=np.int64)
    word = np.full((len(split), width), -1, dtype=np.int64)
    for k, (piece_ids, index) in enumerate(split):
        ids[k, :piece_ids.size], word[k, :piece_ids.size] = piece_ids, index
    tags = np.where(word >= 0, np.take_along_axis(data.tags, np.maximum(word, 0), axis=1), -1)
    t = data.text
    return PieceData(pair_encoder.Sentences(ids, lengths, t.filing, t.filer, t.news, t.last), word, tags)


def word_log_probs(piece_log_probs: np.ndarray, pieces: PieceData, n_words: int, decoder: str) -> np.ndarray:
    """Per-word log-probabilities, shape (N, n_words, K), from the pieces' (N, p, K) (slots 1 .. p of the input).

    Parameters
    ----------
    piece_log_probs : numpy.ndarray, shape (N, p, K)
        Log-probabilities of the K tags at each piece.
    pieces : PieceData
        Which word each piece belongs to.
    n_words : int
        Words per row of the result (at least the longest sentence's).
    decoder : str
        ``"first"``: a word's distribution is its first piece's; ``"mean"``: the mean of its pieces'
        probabilities (see `DECODERS`).

    Returns
    -------
    numpy.ndarray, shape (N, n_words, K)
        Zero past each sentence's words.

    Raises
    ------
    TypeError, ValueError
        If ``piece_log_probs`` is not a real (N, p, K) array of ``pieces.word``'s (N, p) with no NaN or
        +inf (-inf, a zero probability, is read), ``pieces`` not `PieceData`, ``n_words`` not an integer
        from the longest sentence's words to 4096, or ``decoder`` not one of `DECODERS`.

    Examples
    --------
    Two tags; the first word's two pieces disagree, the second word has one piece:

    >>> from mlm_book.artefacts.pair_encoder import Sentences
    >>> text = Sentences(np.array([[5, 6, 7]]), np.array([3]), np.array([0]), np.array([0]), np.array([0]),
    ...                  np.array([True]))
    >>> pieces = PieceData(text, word=np.array([[0, 0, 1]]), tags=np.array([[0, 0, 1]]))
    >>> q = np.log([[[0.8, 0.2], [0.4, 0.6], [0.1, 0.9]]])
    >>> np.exp(word_log_probs(q, pieces, 2, "first")).round(2).tolist()
    [[[0.8, 0.2], [0.1, 0.9]]]
    >>> np.exp(word_log_probs(q, pieces, 2, "mean")).round(2).tolist()
    [[[0.6, 0.4], [0.1, 0.9]]]
    """
    check_instance(pieces, "pieces", PieceData)
    piece_log_probs = _log_probs(piece_log_probs, "piece_log_probs", pieces.word.shape)
    n_words = check_positive_int(n_words, "n_words", maximum=_MAX_WORDS)
    if n_words <= pieces.word.max():
        raise ValueError(f"n_words must be at least the longest sentence's words ({int(pieces.word.max()) + 1}), "
                         f"got {n_words}")
    decoder = check_choice(decoder, "decoder", DECODERS)
    N, p, K = piece_log_probs.shape
    inside = pieces.word >= 0
    rows = np.repeat(np.arange(N), p).reshape(N, p)[inside]
    words = pieces.word[inside]
    out = np.zeros((N, n_words, K))
    if decoder == "first":
        first = inside & np.concatenate([np.ones((N, 1), bool), pieces.word[:, 1:] != pieces.word[:, :-1]], axis=1)
        out[np.nonzero(first)[0], pieces.word[first]] = piece_log_probs[first]
        return out
    flat = rows * n_words + words
    sums = np.zeros((N * n_words, K))
    np.add.at(sums, flat, np.exp(piece_log_probs[inside]))
    counts = np.bincount(flat, minlength=N * n_words)[:, None]
    with np.errstate(divide="ignore"):
        mean = np.log(np.where(counts > 0, sums / np.maximum(counts, 1), 1.0))
    return mean.reshape(N, n_words, K)


def _log_probs(value, name: str, rows: tuple[int, int]) -> np.ndarray:
    """``value`` as an array of per-piece log-probabilities of shape ``rows + (K,)``, its dtype kept."""
    try:
        array = np.asarray(value)
    except (TypeError, ValueError) as error:
        raise TypeError(f"{name} must be an array of log-probabilities (not ragged), got {type(value).__name__}") \
            from error
    # kept as given (a float32 model's output is decoded in float32); -inf is a zero probability, NaN and +inf no
    # probability at all
    if array.dtype.kind not in "iuf":
        raise TypeError(f"{name} must hold real log-probabilities, got dtype {array.dtype}")
    if array.ndim != 3 or array.shape[:2] != rows or array.shape[2] == 0:
        raise ValueError(f"{name} must have shape (N, p, K) with (N, p) = {rows} (the pieces' rows), got "
                         f"{array.shape}")
    if np.isnan(array).any() or np.isposinf(array).any():
        raise ValueError(f"{name} must hold log-probabilities (no NaN or +inf)")
    return array


def _decode(piece_log_probs, pieces: PieceData, data: span_taggers.SpanData, name: str) -> dict:
    inside = data.tags >= 0
    out = {}
    for decoder in DECODERS:
        words = word_log_probs(piece_log_probs, pieces, data.tags.shape[1], decoder)
        out[f"{name}/{decoder}/argmax"] = np.where(inside, words.argmax(axis=2), -1)
        out[f"{name}/{decoder}/viterbi"] = span_taggers.viterbi_all(np.maximum(words, span_taggers.UNSEEN),
                                                                   data.text.lengths)
    return out


def book_run(seed: int) -> span_taggers.TaggerRun:
    """The book's taggers on the subword encoder at ``seed`` (one of `SEEDS`).

    Examples
    --------
    >>> book_run(SEEDS[0]).encoder == seed_setup(SEEDS[0])
    True
    """
    return span_taggers.TaggerRun(seed_setup(seed))


def _run(run: span_taggers.TaggerRun) -> dict:
    """Every subword tagger's predicted word tags on the test sentences (``-1`` past each length)."""
    params, config = pair_encoder.as_pair_encoder(trained(run.encoder))
    train, test = span_taggers.train_data(run.train_sentences), span_taggers.test_data(run.test_documents)
    p_train, p_test = pieces_of(train), pieces_of(test)
    train_tokens, train_segments = pair_encoder.single_inputs(p_train.text, np.arange(p_train.text.count), config)
    test_tokens, test_segments = pair_encoder.single_inputs(p_test.text, np.arange(p_test.text.count), config)
    w_train, w_test = p_train.word.shape[1], p_test.word.shape[1]
    inside_train, inside_test = p_train.tags >= 0, p_test.tags >= 0
    y = p_train.tags[inside_train]
    K = len(span_taggers.TAGS)
    out = {}
    for layer in LAYERS:
        x_train = token_finetune.token_features(params, config, train_tokens, train_segments, layer)[:, 1:1 + w_train]
        x_test = token_finetune.token_features(params, config, test_tokens, test_segments, layer)[:, 1:1 + w_test]
        model = probe.fit_probe(x_train[inside_train], y)
        rows = np.full((int(inside_test.sum()), K), span_taggers.UNSEEN)
        rows[:, model.classes] = log_softmax(model.logits(x_test[inside_test]))
        log_probs = np.full(inside_test.shape + (K,), span_taggers.UNSEEN)
        log_probs[inside_test] = rows
        out.update(_decode(log_probs, p_test, test, f"frozen/{layer}"))
    slot_tags = np.full(train_tokens.shape, -1, dtype=np.int64)
    slot_tags[:, 1:1 + w_train] = p_train.tags
    tagger = token_finetune.fine_tune_tagger(params, config, train_tokens, train_segments, slot_tags,
                                             replace(run.tagger, depth=TUNED_DEPTH, seed=run.encoder.seed), n_tags=K)
    log_probs = token_finetune.tag_log_probabilities(tagger, test_tokens, test_segments)[:, 1:1 + w_test]
    out.update(_decode(log_probs, p_test, test, f"tuned/{TUNED_DEPTH}"))
    return out


def _config(run: span_taggers.TaggerRun) -> dict:
    name, encoder, training, _, channel, key = _training_arguments(run.encoder)
    return {"run": asdict(run), "encoder": asdict(encoder), "training": asdict(training), "source": key,
            "layers": list(LAYERS), "tuned_depth": TUNED_DEPTH, "tags": list(span_taggers.TAGS),
            "test_seed": span_taggers.TEST_SEED, "train_seed": span_taggers.TRAIN_SEED}


@functools.cache
def tagger_predictions(run: span_taggers.TaggerRun) -> dict:
    """Every subword tagger's predicted word tags of ``run``, by tagger key (from the store, or run now)."""
    check_instance(run, "run", span_taggers.TaggerRun)
    arrays, _ = cache.cached("ch08-subword-taggers", _config(run), [artefacts.key_source("subword-taggers")],
                             lambda: _run(run))
    return arrays


def _tagged(run: span_taggers.TaggerRun) -> bool:
    entry = cache.entry_for("ch08-subword-taggers", _config(run), [artefacts.key_source("subword-taggers")])
    return cache.load(entry) is not None


def tiny_setup() -> filing_encoder.FilingEncoderSetup:
    """The subword encoder shrunk to seconds (d = 8, 3 steps of 4 windows): the same code path.

    Examples
    --------
    >>> tiny_setup().d_model, tiny_setup().steps
    (8, 3)
    """
    return replace(SETUP, d_model=8, n_heads=2, steps=3, batch_windows=4, seed=0)


# ----------------------------------------------------------------------------- the declaration (not keyed)
ARTEFACT_KINDS = (
    artefacts.Kind(
        name="subword-encoder", chapter=9, summary="chapter 9's subword encoder on matched BPE pieces, 5 seeds",
        modules=("mlm_book.artefacts.subword_encoder", "mlm_book.subword", "mlm_book.artefacts.pair_encoder",
                 "mlm_book.artefacts.span_taggers"),
        after=("filing-encoder",), setups=lambda: tuple(seed_setup(seed) for seed in SEEDS), is_built=is_trained,
        build=trained, describe=lambda setup: f"seed {setup.seed}", tiny=tiny_setup,
        # seconds per (step x window x piece) on one core, cold build of 2026-12-02 (worker times scaled to that build's 1782 core-seconds in all)
        cost=lambda setup: 3.9e-6 * setup.steps * setup.batch_windows * setup.length),
    artefacts.Kind(
        name="subword-taggers", chapter=9, summary="chapter 9's taggers on the subword encoder, 5 seeds",
        modules=("mlm_book.tagging", "mlm_book.crf", "mlm_book.crf_fit", "mlm_book.scoring",
                 "mlm_book.nn.token_finetune", "mlm_book.nn.finetune", "mlm_book.nn.pairs"),
        after=("subword-encoder",), setups=lambda: tuple(book_run(seed) for seed in SEEDS), is_built=_tagged,
        build=tagger_predictions, describe=lambda run: f"seed {run.encoder.seed}",
        tiny=lambda: span_taggers.TaggerRun(tiny_setup(), train_sentences=40, test_documents=4,
                                      tagger=replace(span_taggers.TAGGER, steps=2, batch_size=4)),
        cost=lambda run: 6.2 * run.train_sentences / span_taggers.TRAIN_SENTENCES),   # cold build of 2026-12-02
)
