r"""Chapter 8's subword half: a filing encoder pre-trained on BPE pieces, and taggers that read words through them.

**The encoder.** Chapter 6's filings with every word split by the matched BPE
([`ch08_spans.matched_bpe`][mlm_book.experiments.ch08_spans.matched_bpe]: as many ids as chapter 6's
word vocabulary, learned on the same filings), pre-trained by chapter 6's recipe
([`filing_encoder.SETUP`][mlm_book.artefacts.filing_encoder.SETUP]: same shape, channel, learning
rate, warm-up share and total weight decay) at the same five seeds, with three changes fixed
before any run ([`SETUP`][mlm_book.experiments.ch08_subwords.SETUP]):

* windows of 48 pieces, so that a window holds about as much text as chapter 6's 32 words
  (the filings have about 1.5 pieces per word), and 80 windows a batch, so that a step
  still reads 3840 slots;
* 1000 steps instead of 3000: what chapter 8's four-minute training budget allows at five
  seeds. The encoder is therefore compared with itself (two ways of decoding), and with
  chapter 6's word encoder only with that caveat.

**The taggers** are chapter 8's, on the same training and test sentences, with each word read
as its pieces: ``[SEP] pieces [SEP]``. In training every piece carries its word's BIO tag
(D-40). A word's tag is decoded from its **first** piece's distribution, or from the **mean**
of its pieces' distributions; then argmax (with ``conlleval``'s repair) or constrained Viterbi
over the words, exactly as for the word encoder. Frozen probes read the residual stream after
0, 1 and 2 blocks; one tagger is fine-tuned through both blocks with chapter 8's schedule.
"""

from __future__ import annotations

import functools
import hashlib
from dataclasses import asdict, dataclass, replace

import numpy as np

from mlm_book import artefacts, cache, crf, crf_fit, probe, subword, tagging
from mlm_book.artefacts import filing_encoder, pair_encoder
from mlm_book.experiments import ch07_pairs, ch08_spans
from mlm_book.finance import corpus as corpus_module
from mlm_book.finance import windows as windows_module
from mlm_book.finance.vocab import SEP_ID
from mlm_book.ledger import Claim, over_seeds
from mlm_book.nn import token_finetune
from mlm_book.nn.train import TrainResult, cached_training, is_cached_training
from mlm_book.scoring import log_softmax
from mlm_book.validation import as_int_array, check_choice, check_instance

__all__ = ["SETUP", "SEEDS", "LAYERS", "TUNED_DEPTH", "DECODERS", "PieceData", "pieces_of", "piece_stream",
           "trained_encoder", "pieces_per_word", "training_seconds", "final_losses", "TAGGERS", "predictions", "scores", "mean_f1", "f1_table",
           "unknown_recall", "decoder_gap", "split_words", "figure_decoders", "figure_losses", "CLAIMS"]

SETUP = replace(filing_encoder.SETUP, length=48, batch_windows=80, steps=1000)
"""Chapter 6's recipe on pieces: 48-piece windows, 80 a batch, 1000 steps (seed set per run)."""
SEEDS = filing_encoder.SEEDS
"""Chapter 6's five training seeds."""
LAYERS = ch08_spans.LAYERS
"""Layers the frozen probes read."""
TUNED_DEPTH = 2
"""The fine-tuned tagger trains both blocks (chapter 8's best word tagger)."""
DECODERS = ("first", "mean")
"""How a word's distribution is read from its pieces: the first piece's, or the mean of all of them."""

if subword.SPECIAL_TOKENS.index("[SEP]") != SEP_ID:      # the pair reading puts [CLS] on the [SEP] row
    raise ImportError("subword's [SEP] id must equal the word vocabulary's SEP_ID")


def _setup(seed: int):
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
    ids, word = ch08_spans.matched_bpe().tokenize(world.corpus.tokens.tolist())
    return ids, world.corpus.document[word]


def _train_pieces(setup) -> np.ndarray:
    # the pieces of chapter 6's training filings (its held-out filings stay held out)
    _, document = piece_stream()
    return np.flatnonzero(~np.isin(document, filing_encoder.split(setup).test_documents))


def _source(setup):
    ids, document = piece_stream()
    train_pieces = _train_pieces(setup)
    pad_id = setup.encoder(ch08_spans.matched_bpe().vocabulary_size).pad_id

    def source(batch, rng):
        picks = train_pieces[rng.integers(0, train_pieces.size, size=batch)]
        return windows_module.centred_windows(ids, document, length=setup.length, pad_id=pad_id, select=picks)[0]

    return source


def _bpe_digest() -> str:
    bpe = ch08_spans.matched_bpe()
    return hashlib.sha256(repr((bpe.merges, bpe.alphabet, bpe.end_of_word)).encode()).hexdigest()


_PRODUCERS = (subword, windows_module, corpus_module, piece_stream, _train_pieces, _source)


def _training_arguments(seed: int):
    setup = _setup(seed)
    V = ch08_spans.matched_bpe().vocabulary_size
    key = {**filing_encoder.source_key(setup), "subwords": _bpe_digest(), "windows": "centred on a uniform "
           "training piece"}
    return ("subword-encoder", setup.encoder(V), filing_encoder.training_config(setup), _source(setup),
            setup.channel(V), key)


@functools.cache
def trained_encoder(seed: int) -> TrainResult:
    """The subword encoder at ``seed`` (one of `SEEDS`; from the cache, or trained now and stored)."""
    return cached_training(*_training_arguments(seed), producers=_PRODUCERS)


def _is_trained(seed: int) -> bool:
    name, encoder, training, _, channel, key = _training_arguments(seed)
    return is_cached_training(name, encoder, training, channel, key, producers=_PRODUCERS)


def pieces_per_word() -> float:
    """Pieces per token of chapter 6's filings (``[SEP]`` counts as one of each): what sets the window length.

    Examples
    --------
    >>> round(pieces_per_word() * filing_encoder.SETUP.length) <= SETUP.length
    True
    """
    return piece_stream()[0].size / filing_encoder.filing_world().ids.size


def training_seconds() -> np.ndarray:
    """Wall time of each seed's pre-training, as recorded when it was trained."""
    return np.array([trained_encoder(seed).seconds for seed in SEEDS])


def final_losses() -> np.ndarray:
    """Each seed's mean training loss over its last 100 steps (nats per selected piece)."""
    return np.array([float(np.mean(trained_encoder(seed).losses[-100:])) for seed in SEEDS])


# ----------------------------------------------------------------------------- sentences as pieces
@dataclass(frozen=True, eq=False)
class PieceData:
    """Chapter 8's sentences read as pieces.

    Attributes
    ----------
    text : Sentences
        Piece ids per sentence (``-1`` padding), with the sentences' filings and facts.
    word : ndarray of int, shape (N, p)
        The word each piece belongs to (``-1`` past the sentence).
    tags : ndarray of int, shape (N, p)
        Each piece's tag: its word's BIO tag id (``-1`` past the sentence).
    """

    text: ch07_pairs.Sentences
    word: np.ndarray
    tags: np.ndarray

    def __post_init__(self):
        check_instance(self.text, "text", ch07_pairs.Sentences)
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
        if not np.array_equal(tags < 0, word < 0) or tags.min() < -1 or tags.max() >= len(ch08_spans.TAGS):
            raise ValueError(f"tags must be tag ids (0 .. {len(ch08_spans.TAGS) - 1}) where word is set, -1 elsewhere")
        object.__setattr__(self, "word", word)
        object.__setattr__(self, "tags", tags)


def pieces_of(data: ch08_spans.SpanData) -> PieceData:
    """``data``'s sentences split by the matched BPE, every piece tagged with its word's tag.

    Examples
    --------
    >>> pieces = pieces_of(ch08_spans.train_data())
    >>> int(pieces.text.lengths.max()) + 2 <= SETUP.length, bool((pieces.tags >= 0).sum() == pieces.text.lengths.sum())
    (True, True)
    """
    check_instance(data, "data", ch08_spans.SpanData)
    bpe = ch08_spans.matched_bpe()
    split = [bpe.tokenize(list(words)) for words in data.words]
    lengths = np.array([ids.size for ids, _ in split])
    width = int(lengths.max())
    ids = np.full((len(split), width), -1, dtype=np.int64)
    word = np.full((len(split), width), -1, dtype=np.int64)
    for k, (piece_ids, index) in enumerate(split):
        ids[k, :piece_ids.size], word[k, :piece_ids.size] = piece_ids, index
    tags = np.where(word >= 0, np.take_along_axis(data.tags, np.maximum(word, 0), axis=1), -1)
    t = data.text
    return PieceData(ch07_pairs.Sentences(ids, lengths, t.filing, t.filer, t.news, t.last), word, tags)


def _word_log_probs(piece_log_probs: np.ndarray, pieces: PieceData, n_words: int, decoder: str) -> np.ndarray:
    """Per-word log-probabilities, shape (N, n_words, K), from the pieces' (N, p, K) (slots 1 .. p of the input)."""
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


def _decode(piece_log_probs, pieces: PieceData, data: ch08_spans.SpanData, name: str) -> dict:
    inside = data.tags >= 0
    out = {}
    for decoder in DECODERS:
        words = _word_log_probs(piece_log_probs, pieces, data.tags.shape[1], decoder)
        out[f"{name}/{decoder}/argmax"] = np.where(inside, words.argmax(axis=2), -1)
        out[f"{name}/{decoder}/viterbi"] = ch08_spans._viterbi_all(np.maximum(words, ch08_spans._UNSEEN),
                                                                   data.text.lengths)
    return out


def _run(seed: int) -> dict:
    """Every subword tagger's predicted word tags on the test sentences (``-1`` past each length)."""
    params, config = ch07_pairs.as_pair_encoder(trained_encoder(seed))
    train, test = ch08_spans.train_data(), ch08_spans.test_data()
    p_train, p_test = pieces_of(train), pieces_of(test)
    train_tokens, train_segments = ch07_pairs.single_inputs(p_train.text, np.arange(p_train.text.count), config)
    test_tokens, test_segments = ch07_pairs.single_inputs(p_test.text, np.arange(p_test.text.count), config)
    w_train, w_test = p_train.word.shape[1], p_test.word.shape[1]
    inside_train, inside_test = p_train.tags >= 0, p_test.tags >= 0
    y = p_train.tags[inside_train]
    K = len(ch08_spans.TAGS)
    out = {}
    for layer in LAYERS:
        x_train = token_finetune.token_features(params, config, train_tokens, train_segments, layer)[:, 1:1 + w_train]
        x_test = token_finetune.token_features(params, config, test_tokens, test_segments, layer)[:, 1:1 + w_test]
        model = probe.fit_probe(x_train[inside_train], y)
        rows = np.full((int(inside_test.sum()), K), ch08_spans._UNSEEN)
        rows[:, model.classes] = log_softmax(model.logits(x_test[inside_test]))
        log_probs = np.full(inside_test.shape + (K,), ch08_spans._UNSEEN)
        log_probs[inside_test] = rows
        out.update(_decode(log_probs, p_test, test, f"frozen/{layer}"))
    slot_tags = np.full(train_tokens.shape, -1, dtype=np.int64)
    slot_tags[:, 1:1 + w_train] = p_train.tags
    tagger = token_finetune.fine_tune_tagger(params, config, train_tokens, train_segments, slot_tags,
                                             replace(ch08_spans.TAGGER, depth=TUNED_DEPTH, seed=seed), n_tags=K)
    log_probs = token_finetune.tag_log_probabilities(tagger, test_tokens, test_segments)[:, 1:1 + w_test]
    out.update(_decode(log_probs, p_test, test, f"tuned/{TUNED_DEPTH}"))
    return out


# crf and crf_fit: chapter 8's constrained decoding (_viterbi_all) runs on them
_CODE = (probe, tagging, crf, crf_fit, token_finetune, subword, ch07_pairs.as_pair_encoder, ch07_pairs.single_inputs,
         ch08_spans._span_data, ch08_spans._viterbi_all, pieces_of, _word_log_probs, _decode, _run)


@functools.cache
def _source_text() -> str:
    return cache.source_of(_CODE)


def _config(seed: int) -> dict:
    name, encoder, training, _, channel, key = _training_arguments(seed)
    return {"seed": seed, "encoder": asdict(encoder), "training": asdict(training), "source": key,
            "encoder_code": hashlib.sha256(cache.source_of(_PRODUCERS).encode()).hexdigest(),
            "layers": list(LAYERS), "tuned_depth": TUNED_DEPTH, "tagger": ch08_spans.TAGGER.__dict__,
            "tags": list(ch08_spans.TAGS), "test_seed": ch08_spans.TEST_SEED, "train_seed": ch08_spans.TRAIN_SEED,
            "train_sentences": ch08_spans.TRAIN_SENTENCES}


@functools.cache
def _predictions(seed: int) -> dict:
    arrays, _ = cache.cached("ch08-subword-taggers", _config(seed), [_source_text()], lambda: _run(seed))
    return arrays




def _tagged(seed: int) -> bool:
    return cache.load(cache.entry_for("ch08-subword-taggers", _config(seed), [_source_text()])) is not None


ARTEFACT_KINDS = (
    artefacts.Kind(name="subword-encoder", summary="chapter 8's subword encoder on matched BPE pieces, 5 seeds",
                   modules=(), setups=lambda: SEEDS, is_built=_is_trained, build=trained_encoder,
                   cost=lambda seed: 6.5e-6 * 4 * SETUP.steps * SETUP.batch_windows * SETUP.length,
                   describe=lambda seed: f"seed {seed}", reason="its build code still lives in a chapter module, keyed by a list of that module's functions"),
    artefacts.Kind(name="subword-taggers", summary="chapter 8's taggers on the subword encoder, 5 seeds",
                   modules=(), after=("subword-encoder",), setups=lambda: SEEDS, is_built=_tagged,
                   build=_predictions, cost=lambda seed: 150.0,   # measured on the cold build of 2026-12-02
                   describe=lambda seed: f"seed {seed}", reason="its build code still lives in a chapter module, keyed by a list of that module's functions"),
)




# ----------------------------------------------------------------------------- scores
TAGGERS = {f"{name}/{decoder}/{how}": f"{label}, {decoder} piece{'s' if decoder == 'mean' else ''}, {how_name}"
           for name, label in [*((f"frozen/{layer}", f"frozen, layer {layer}") for layer in LAYERS),
                               (f"tuned/{TUNED_DEPTH}", f"fine-tuned, layer {TUNED_DEPTH}")]
           for decoder in DECODERS for how, how_name in (("argmax", "argmax"), ("viterbi", "Viterbi"))}
"""Every subword tagger and decoder, by key, with its name in the chapter."""


def _check_tagger(key) -> str:
    return check_choice(key, "key", TAGGERS)


def predictions(key: str) -> tuple[np.ndarray, ...]:
    """Predicted word tag ids on the test sentences, shape (N, m), per seed (the book's first)."""
    _check_tagger(key)
    return tuple(np.array(_predictions(seed)[key]) for seed in SEEDS)


@functools.cache
def _spans(key: str) -> tuple[list, ...]:
    return ch08_spans._decoded(key, predictions(key))


@functools.cache
def scores(key: str) -> tuple[tagging.EntityScores, ...]:
    """Entity scores of each seed's run (word-level spans against chapter 8's gold)."""
    return ch08_spans._entity_scores(_spans(_check_tagger(key)))


def mean_f1(key: str) -> float:
    """Entity micro-F1 of a subword tagger, mean over seeds."""
    return float(np.mean([s.micro_f1 for s in scores(key)]))


def f1_table():
    """Entity micro-F1 of every subword tagger, first piece against mean of pieces (book seed, mean ± sd)."""
    from mlm_book.report import table
    rows = []
    for name, label in [*((f"frozen/{layer}", f"frozen, layer {layer}") for layer in LAYERS),
                        (f"tuned/{TUNED_DEPTH}", f"fine-tuned, layer {TUNED_DEPTH}")]:
        for how, how_name in (("argmax", "argmax"), ("viterbi", "Viterbi")):
            rows.append([f"{label}, {how_name}",
                         *(ch08_spans._band([s.micro_f1 for s in scores(f"{name}/{d}/{how}")]) for d in DECODERS)])
    return table(["tagger", "first piece", "mean of pieces"], rows)


def unknown_recall(kind: str, key: str) -> tuple[float, float]:
    """Book seed: recall of the test ``kind`` mentions that chapter 6's vocabulary reads only as ``[UNK]``,
    and of the others, by subword tagger ``key``."""
    found = _spans(_check_tagger(key))[0]
    return ch08_spans._recall_among(found, kind, True), ch08_spans._recall_among(found, kind, False)


def decoder_gap(name: str) -> tuple[float, int]:
    """``(mean over seeds of F1(mean of pieces) − F1(first piece), seeds where the mean is higher)`` for tagger
    ``name`` (``"frozen/2/viterbi"``, ``"tuned/2/argmax"``, ...: the key without its decoder)."""
    if not isinstance(name, str):
        raise TypeError(f"name must be a str, got {type(name).__name__}")
    parts = name.split("/")
    if len(parts) != 3:
        raise ValueError(f"name must look like 'frozen/2/viterbi' (a tagger key without its decoder), got {name!r}")
    first = np.array([s.micro_f1 for s in scores(f"{parts[0]}/{parts[1]}/first/{parts[2]}")])
    mean = np.array([s.micro_f1 for s in scores(f"{parts[0]}/{parts[1]}/mean/{parts[2]}")])
    return float(np.mean(mean - first)), int(np.sum(mean > first))


def split_words(name: str = f"frozen/{ch08_spans.CRF_LAYER}/argmax") -> tuple[float, float, float, float]:
    """Book seed: ``(share of test words split into pieces, tag accuracy on split words from the first piece, from
    the mean, and on unsplit words)`` for tagger ``name`` (a key without its decoder; the two decoders agree on an
    unsplit word)."""
    parts = name.split("/") if isinstance(name, str) else None
    if parts is None or len(parts) != 3:
        raise ValueError(f"name must look like 'frozen/2/argmax' (a tagger key without its decoder), got {name!r}")
    data = ch08_spans.test_data()
    pieces = pieces_of(data)
    counts = np.zeros(data.tags.shape, dtype=np.int64)
    inside = pieces.word >= 0
    np.add.at(counts, (np.nonzero(inside)[0], pieces.word[inside]), 1)
    words = data.tags >= 0
    split = words & (counts > 1)
    first = predictions(f"{parts[0]}/{parts[1]}/first/{parts[2]}")[0]
    mean = predictions(f"{parts[0]}/{parts[1]}/mean/{parts[2]}")[0]
    return (float(split.sum() / words.sum()), float(np.mean(first[split] == data.tags[split])),
            float(np.mean(mean[split] == data.tags[split])),
            float(np.mean(first[words & ~split] == data.tags[words & ~split])))


def figure_decoders():
    """Entity micro-F1 by layer: subword taggers decoded from the first piece and from the mean, and the word encoder's."""
    from mlm_book.figures import PALETTE, WIDE, subplots
    fig, ax = subplots(width=WIDE, height=3.4)
    names = [*(f"frozen/{layer}" for layer in LAYERS), f"tuned/{TUNED_DEPTH}"]
    series = [("pieces, first piece", lambda n: scores(f"{n}/first/viterbi"), PALETTE["sky"]),
              ("pieces, mean of pieces", lambda n: scores(f"{n}/mean/viterbi"), PALETTE["blue"]),
              ("words (chapter 6's encoder)", lambda n: ch08_spans.scores(f"{n}/viterbi"), PALETTE["orange"])]
    width = 0.26
    for j, (label, get, colour) in enumerate(series):
        for k, name in enumerate(names):
            values = np.array([s.micro_f1 for s in get(name)])
            x = k + (j - 1) * width
            ax.bar(x, values.mean(), width=width * 0.9, color=colour, label=label if k == 0 else None)
            ax.plot(np.full(values.size, x), values, ls="none", marker=".", color=PALETTE["black"])
    ax.set_xticks(range(len(names)), [*(f"frozen, layer {layer}" for layer in LAYERS),
                                      f"fine-tuned, layer {TUNED_DEPTH}"])
    ax.set_ylabel(f"entity micro-F1, Viterbi\n(bars: mean of {len(SEEDS)} seeds)")
    ax.set_ylim(0, 1)
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.1), ncol=3, frameon=False)
    return fig


def figure_losses():
    """Training loss by step of the subword encoders (every seed) and of chapter 6's word encoder (book seed)."""
    from mlm_book.figures import PALETTE, WIDE, subplots
    fig, ax = subplots(width=WIDE, height=3.2)
    window = 50
    smooth = lambda losses: np.convolve(losses, np.ones(window) / window, mode="valid")
    word = filing_encoder.trained_encoder(filing_encoder.SETUP).losses
    ax.plot(np.arange(window, word.size + 1), smooth(word), color=PALETTE["orange"], lw=1.4,
            label=f"words, {word.size} steps (chapter 6, book seed)")
    for k, seed in enumerate(SEEDS):
        losses = trained_encoder(seed).losses
        ax.plot(np.arange(window, losses.size + 1), smooth(losses), color=PALETTE["blue"], lw=1.0, alpha=0.8,
                label=f"pieces, {losses.size} steps ({len(SEEDS)} seeds)" if k == 0 else None)
    ax.set_xlabel("training step")
    ax.set_ylabel(f"loss, nats per selected slot\n({window}-step mean)")
    ax.legend(frameon=False)
    return fig


# ----------------------------------------------------------------------------- claims
def _decoder_gap(k: int) -> tuple[float, float]:
    name = f"frozen/{ch08_spans.CRF_LAYER}"
    return (scores(f"{name}/first/viterbi")[k].micro_f1, scores(f"{name}/mean/viterbi")[k].micro_f1)


def _first_piece_claim() -> dict:
    values = [_decoder_gap(k) for k in range(len(SEEDS))]
    return over_seeds(values, sum(first >= mean - 0.01 for first, mean in values))


CLAIMS = (
    Claim("D-40", f"Subwords in tagging: every piece trained on its word's tag; a word decoded from its first "
          f"piece's distribution against the mean of its pieces' (frozen top layer, Viterbi, entity micro-F1: "
          f"first, mean; {len(SEEDS)} seeds)", seed="—", rule="first ≥ mean − 0.01",
          compute=_first_piece_claim, accept=lambda v: True, expected="not reproduced"),
)
