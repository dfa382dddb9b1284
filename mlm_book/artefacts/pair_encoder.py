r"""Chapter 8's pair encoders as artefacts: the sentences, the pre-trainings, and what is measured on them.

**The world.** Pre-training reads chapter 6's 300 filings ([`mlm_book.artefacts.filings`][mlm_book.artefacts.filings]:
its corpus, vocabulary and tokens, unchanged). Labelled data come from two *fresh* corpora drawn
by the same generator with the same configuration and other seeds (`LABELLED_SEED`,
`TEST_SEED`), read through chapter 6's vocabulary (a word it lacks becomes ``[UNK]``): a pool
to draw labelled training sets from, and a test set no encoder has seen.

**Two pre-trainings at equal steps** ([`PairSetup`][mlm_book.artefacts.pair_encoder.PairSetup]),
both through BERT's channel on the real tokens (``[CLS]``, ``[SEP]`` and ``[PAD]`` are never
selected): ``"nsp"`` (BERT: ``[CLS] A [SEP] B [SEP]``, MLM + NSP) and ``"packed"`` (RoBERTa's
full sentences, MLM alone); a third, ``"packed"`` with every selected token shown as
``[MASK]``, isolates the pre-train/fine-tune mismatch. What is measured on each
([`PairMeasure`][mlm_book.artefacts.pair_encoder.PairMeasure]) is stored beside it, so chapter 8
([`mlm_book.experiments.ch08_pairs`][mlm_book.experiments.ch08_pairs]) only reads.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, replace

import numpy as np

from mlm_book import artefacts, cache, probe
from mlm_book.artefacts import filing_encoder, filings
from mlm_book.channel import Channel, corrupt
from mlm_book.finance import corpus as corpus_module
from mlm_book.finance.vocab import SEP_ID
from mlm_book.nn import encoder as enc
from mlm_book.nn import finetune, layers, loop, pairs
from mlm_book.nn.finetune import FineTuneConfig
from mlm_book.nn.loop import TrainConfig, learning_rate
from mlm_book.validation import (
    as_float_array,
    as_int_array,
    check_generator,
    check_instance,
    check_positive_int,
    check_probability,
    check_real,
    check_sequence,
)

__all__ = ["STEPS", "LABELLED_SEED", "TEST_SEED", "SEEDS", "POOL_DOCUMENTS", "SIZES", "FINE_TUNINGS", "COMPARED",
           "FINE_TUNE", "VARIANTS", "Sentences", "sentences", "sentences_of", "labelled_sentences",
           "pool_sentences", "pair_batch", "packed_batch", "pair_inputs", "single_inputs", "news_task",
           "labelled_subset", "PairSetup", "PretrainedPair", "pretrain", "pretraining_code", "measurements",
           "scratch", "chapter6_transfer", "filing_pair_encoder", "as_pair_encoder", "filing_encoder_key",
           "book_setups", "MAX_DOCUMENTS", "PairMeasure", "MEASURE", "vocab_size", "check_variant", "check_book_seed", "assemble", "text_stream",
           "ARTEFACT_KINDS"]

STEPS = 1000
"""Adam steps of every pre-training here: a third of the filing encoder's 3000, so that three pre-trainings at five seeds fit the chapter's four-minute budget on two cores."""
LABELLED_SEED, TEST_SEED = 7001, 7002
"""Seeds of the fresh labelled corpora (pool and test)."""
MAX_DOCUMENTS = 5000
"""The largest fresh corpus `labelled_sentences` generates."""
SEEDS = filing_encoder.SEEDS
"""Training seeds of every pre-training: the filing encoder's, the book's first."""


# ----------------------------------------------------------------------------- sentences
@dataclass(frozen=True, eq=False)
class Sentences:
    """The sentences of a corpus as a padded id matrix with their gold facts.

    Attributes
    ----------
    ids : ndarray of int, shape (N, m)
        Token ids of each sentence (its ``[SEP]`` dropped), left-aligned, padded with -1.
    lengths : ndarray of int, shape (N,)
    filing, filer : ndarray of int, shape (N,)
        The sentence's filing and that filing's company.
    news : ndarray of int, shape (N,)
        +1 / -1 for a news sentence (the news it reports), 0 otherwise.
    last : ndarray of bool, shape (N,)
        Whether the sentence is its filing's last (it has no next sentence).

    Examples
    --------
    >>> from mlm_book.finance.corpus import CorpusConfig, generate_corpus
    >>> from mlm_book.finance.vocab import build_vocabulary
    >>> corpus = generate_corpus(CorpusConfig(n_documents=2), np.random.default_rng(0))
    >>> ids = build_vocabulary(corpus.tokens.tolist(), min_count=1).encode(corpus.tokens.tolist())
    >>> text = sentences_of(corpus, ids)
    >>> rebuilt = Sentences(text.ids, text.lengths, text.filing, text.filer, text.news, text.last)   # its fields are checked
    >>> rebuilt.count == len(np.unique(corpus.sentence))        # one row per sentence
    True
    """

    ids: np.ndarray
    lengths: np.ndarray
    filing: np.ndarray
    filer: np.ndarray
    news: np.ndarray
    last: np.ndarray

    def __post_init__(self):
        ids = as_int_array(self.ids, "ids", ndim=2)
        lengths = as_int_array(self.lengths, "lengths", ndim=1)
        if ids.shape[0] == 0 or lengths.shape != (ids.shape[0],):
            raise ValueError(f"lengths must hold one length per row of ids ({ids.shape[0]}, at least one), got "
                             f"shape {lengths.shape}")
        if lengths.min() < 1 or lengths.max() > ids.shape[1]:
            raise ValueError(f"lengths must lie in [1, {ids.shape[1]}] (the columns of ids)")
        inside = np.arange(ids.shape[1])[None, :] < lengths[:, None]
        if ids[inside].min() < 0 or np.any(ids[~inside] != -1):
            raise ValueError("ids must hold token ids (>= 0) up to each sentence's length and -1 after it")
        for name in ("filing", "filer", "news"):
            array = as_int_array(getattr(self, name), name, ndim=1)
            if array.shape != lengths.shape:
                raise ValueError(f"{name} must hold one value per sentence ({lengths.size}), got shape {array.shape}")
            object.__setattr__(self, name, array)
        if np.any(np.diff(self.filing) < 0) or self.filing.min() < 0:
            raise ValueError("filing must be non-negative and non-decreasing (sentences in filing order)")
        if np.any(np.abs(self.news) > 1):
            raise ValueError("news must hold -1, 0 or +1")
        try:
            last = np.asarray(self.last)
        except (TypeError, ValueError) as error:
            raise TypeError(f"last must be a boolean array (not ragged): {error}") from None
        if last.dtype != bool or last.shape != lengths.shape:
            raise TypeError(f"last must be a boolean array with one entry per sentence, got "
                            f"{getattr(last, 'dtype', type(last).__name__)} of shape {np.shape(last)}")
        if not np.array_equal(last, np.append(self.filing[1:] != self.filing[:-1], True)):
            raise ValueError("last must mark exactly each filing's last sentence")
        object.__setattr__(self, "ids", ids)
        object.__setattr__(self, "lengths", lengths)
        object.__setattr__(self, "last", last)

    @property
    def count(self) -> int:
        """Number of sentences."""
        return int(self.lengths.size)


def _sentences(corpus, ids: np.ndarray) -> Sentences:
    real = corpus.tokens != corpus_module.SEP
    sentence = corpus.sentence
    first = sentence.min()
    index = sentence - first
    N = int(index.max()) + 1
    lengths = np.bincount(index[real], minlength=N)
    # a token's slot inside its sentence: its rank among the sentence's real tokens
    starts = np.concatenate([[0], np.cumsum(lengths)[:-1]])
    real_index = index[real]
    slot = np.arange(real_index.size) - starts[real_index]
    matrix = np.full((N, int(lengths.max())), -1, dtype=np.int64)
    matrix[real_index, slot] = ids[real]
    filing = np.zeros(N, dtype=np.int64)
    filing[index] = corpus.document
    news = np.zeros(N, dtype=np.int64)
    np.add.at(news, index, corpus.news)
    last = np.append(filing[1:] != filing[:-1], True)
    return Sentences(matrix, lengths, filing, corpus.filer[filing], np.sign(news), last)


def sentences_of(corpus: corpus_module.Corpus, ids) -> Sentences:
    """The sentences of ``corpus`` with its tokens read as ``ids`` (one id per token, ``[SEP]`` included).

    Examples
    --------
    >>> from mlm_book.artefacts import filings
    >>> world = filings.filings()
    >>> sentences_of(world.corpus, world.ids).count == sentences().count
    True
    """
    check_instance(corpus, "corpus", corpus_module.Corpus)
    ids = as_int_array(ids, "ids", ndim=1)
    if ids.shape != corpus.tokens.shape or ids.min() < 0:
        raise ValueError(f"ids must hold one non-negative token id per corpus token ({corpus.tokens.size}), got "
                         f"shape {ids.shape}")
    return _sentences(corpus, ids)


@functools.cache
def sentences() -> Sentences:
    """Chapter 6's filings as sentences (the pre-training text).

    Examples
    --------
    >>> s = sentences()
    >>> s.count, int(s.lengths.max()), int(s.last.sum())
    (6167, 13, 300)
    """
    world = filings.filings()
    return _sentences(world.corpus, world.ids)


def labelled_sentences(seed: int, n_documents: int | None = None) -> Sentences:
    """A fresh corpus of the chapter 6 configuration drawn with ``seed``, read through chapter 6's vocabulary.

    ``n_documents`` replaces the configuration's number of filings (nothing else changes).

    Examples
    --------
    >>> s = labelled_sentences(TEST_SEED)
    >>> s.count > 5000, sorted(set(s.news.tolist()))
    (True, [-1, 0, 1])
    """
    seed = check_positive_int(seed, "seed", minimum=0)
    if n_documents is not None:
        n_documents = check_positive_int(n_documents, "n_documents")
        if n_documents > MAX_DOCUMENTS:
            raise ValueError(f"n_documents must be at most {MAX_DOCUMENTS} (a fresh corpus is generated), got "
                             f"{n_documents}")
    return _labelled_sentences(seed, n_documents)


@functools.cache
def _labelled_sentences(seed: int, n_documents: int | None) -> Sentences:
    world = filings.filings()
    config = world.setup.corpus if n_documents is None else replace(world.setup.corpus, n_documents=n_documents)
    corpus = corpus_module.generate_corpus(config, np.random.default_rng(seed))
    return _sentences(corpus, world.vocabulary.encode(corpus.tokens.tolist()))


# ----------------------------------------------------------------------------- inputs
def _check_rows(rows, text: Sentences, name: str) -> np.ndarray:
    rows = as_int_array(rows, name, ndim=1)
    if rows.size == 0:
        raise ValueError(f"{name} must hold at least one sentence index")
    if rows.min() < 0 or rows.max() >= text.count:
        raise ValueError(f"{name} must be sentence indices in [0, {text.count}), got values from {int(rows.min())} "
                         f"to {int(rows.max())}")
    return rows


def _check_fit(text: Sentences, config, pair: bool) -> None:
    check_instance(text, "text", Sentences)
    check_instance(config, "config", pairs.PairEncoderConfig)
    if int(text.ids.max()) >= config.vocab_size:
        raise ValueError(f"text holds token id {int(text.ids.max())}, outside config's vocabulary of "
                         f"{config.vocab_size}")
    longest = (2 * int(text.lengths.max()) + 3) if pair else int(text.lengths.max()) + 2
    if longest > config.encoder.length:
        raise ValueError(f"config's length {config.encoder.length} is too short for the sentences of text "
                         f"({longest} slots needed)")


def assemble(text: Sentences, a: np.ndarray, b: np.ndarray | None, config: pairs.PairEncoderConfig):
    """``[CLS] A [SEP] B [SEP]`` (or ``[CLS] A [SEP]``) rows for sentence indices, vectorised.

    The batch builders' own step, uncut: [`pair_inputs`][mlm_book.artefacts.pair_encoder.pair_inputs]
    cuts the rows to the longest pair.

    Parameters
    ----------
    text : Sentences
    a : array_like of int, shape (m,)
        Indices of the first sentences.
    b : array_like of int, shape (m,), or None
        Indices of the second sentences (None: single sentences).
    config : PairEncoderConfig
        Its length must hold every pair (or sentence) of ``text``.

    Returns
    -------
    tokens, segments : ndarray of int, shape (len(a), length)
        Padded with [PAD]; segment 1 from B's first token to its closing [SEP].

    Raises
    ------
    TypeError, ValueError
        If ``text`` or ``config`` is of the wrong type, the sentences do not fit ``config``, ``a`` or
        ``b`` is not sentence indices, or ``a`` and ``b`` differ in length.

    Examples
    --------
    >>> cfg = PairSetup().config(vocab_size())
    >>> tokens, segments = assemble(sentences(), np.array([0]), np.array([1]), cfg)
    >>> seps = np.flatnonzero(tokens[0] == SEP_ID)
    >>> int(tokens[0, 0]) == cfg.cls_id, seps.tolist(), int(segments[0].sum())   # B and its [SEP]: 13 + 1 slots
    (True, [14, 28], 14)
    """
    _check_fit(text, config, pair=b is not None)
    a = _check_rows(a, text, "a")
    if b is not None:
        b = _check_rows(b, text, "b")
        if a.shape != b.shape:
            raise ValueError(f"a and b must hold the same number of sentences, got {a.size} and {b.size}")
    n = config.encoder.length
    la = text.lengths[a][:, None]
    j = np.arange(n)[None, :]
    tokens = np.full((a.size, n), config.pad_id, dtype=np.int64)
    segments = np.zeros((a.size, n), dtype=np.int64)
    tokens[:, 0] = config.cls_id
    in_a = (j >= 1) & (j <= la)
    tokens[in_a] = text.ids[np.broadcast_to(a[:, None], in_a.shape)[in_a], np.broadcast_to(j - 1, in_a.shape)[in_a]]
    tokens[j == la + 1] = SEP_ID
    if b is not None:
        lb = text.lengths[b][:, None]
        in_b = (j >= la + 2) & (j <= la + lb + 1)
        tokens[in_b] = text.ids[np.broadcast_to(b[:, None], in_b.shape)[in_b], (j - la - 2)[in_b]]
        end = j == la + lb + 2
        tokens[end] = SEP_ID
        segments[in_b | end] = 1
    return tokens, segments


def pair_batch(text: Sentences, a, config: pairs.PairEncoderConfig, rng: np.random.Generator, *,
               negatives: str = "other"):
    """Pairs starting at sentences ``a``: half with the next sentence, half with a random one.

    Parameters
    ----------
    text : Sentences
    a : ndarray of int
        Indices of first sentences, none its filing's last.
    config : PairEncoderConfig
    rng : numpy.random.Generator
    negatives : {"other", "same"}
        Where a random B comes from: another filing (BERT's corpus-wide draw, in effect), or
        the same filing (any sentence but A and the one after it).

    Returns
    -------
    tokens, segments : ndarray of int, shape (len(a), length)
    labels : ndarray of int, shape (len(a),)
        0 = B follows A, 1 = B is random.

    Raises
    ------
    TypeError, ValueError
        If ``text``, ``config`` or ``rng`` is of the wrong type, the sentences do not fit
        ``config``, ``a`` is not sentence indices (or holds a filing's last), or ``negatives``
        is neither ``"other"`` nor ``"same"``.

    Examples
    --------
    >>> cfg = PairSetup().config(vocab_size())
    >>> tokens, segments, labels = pair_batch(sentences(), [0, 1, 2, 3], cfg, np.random.default_rng(0))
    >>> tokens.shape, labels.tolist(), int(tokens[0, 0]) == cfg.cls_id
    ((4, 32), [0, 1, 1, 1], True)
    """
    _check_fit(text, config, pair=True)
    a = _check_rows(a, text, "a")
    if np.any(text.last[a]):
        raise ValueError("a must not hold a filing's last sentence (it has no next sentence)")
    rng = check_generator(rng)
    if not isinstance(negatives, str) or negatives not in ("other", "same"):
        raise ValueError(f"negatives must be 'other' or 'same', got {negatives!r}")
    if negatives == "other" and text.filing.max() == 0:
        raise ValueError("text must hold at least two filings for negatives='other'")
    labels = (rng.random(a.size) < 0.5).astype(np.int64)
    b = a + 1
    random_rows = np.flatnonzero(labels == 1)
    if negatives == "other":
        draw = rng.integers(0, text.count, size=random_rows.size)
        clash = text.filing[draw] == text.filing[a[random_rows]]
        while clash.any():
            draw[clash] = rng.integers(0, text.count, size=int(clash.sum()))
            clash = text.filing[draw] == text.filing[a[random_rows]]
    elif negatives == "same":
        bounds = np.searchsorted(text.filing, np.arange(text.filing.max() + 2))
        start, stop = bounds[text.filing[a[random_rows]]], bounds[text.filing[a[random_rows]] + 1]
        draw = start + (rng.random(random_rows.size) * (stop - start)).astype(np.int64)
        clash = (draw == a[random_rows]) | (draw == a[random_rows] + 1)
        while clash.any():
            draw[clash] = start[clash] + (rng.random(int(clash.sum())) * (stop - start)[clash]).astype(np.int64)
            clash = (draw == a[random_rows]) | (draw == a[random_rows] + 1)
    b[random_rows] = draw
    tokens, segments = assemble(text, a, b, config)
    return tokens, segments, labels


def pair_inputs(text: Sentences, a, b, config: pairs.PairEncoderConfig):
    """``[CLS] A [SEP] B [SEP]`` for given pairs of sentences ``(a[k], b[k])``, cut to the longest pair.

    Returns
    -------
    tokens, segments : ndarray of int, shape (len(a), width)

    Examples
    --------
    >>> cfg = PairSetup().config(vocab_size())
    >>> tokens, segments = pair_inputs(sentences(), [0, 5], [1, 2], cfg)
    >>> int(tokens[0, 0]) == cfg.cls_id, int(segments[0].max())
    (True, 1)
    """
    _check_fit(text, config, pair=True)
    a = _check_rows(a, text, "a")
    b = _check_rows(b, text, "b")
    if a.shape != b.shape:
        raise ValueError(f"a and b must hold the same number of sentences, got {a.size} and {b.size}")
    tokens, segments = assemble(text, a, b, config)
    width = int((text.lengths[a] + text.lengths[b]).max()) + 3
    return tokens[:, :width], segments[:, :width]


def packed_batch(stream: np.ndarray, starts, config: pairs.PairEncoderConfig):
    """``[CLS]`` then ``length - 1`` contiguous tokens of ``stream`` from each start (one segment).

    Raises
    ------
    TypeError, ValueError
        If ``stream`` is not 1-D token ids of the configuration's vocabulary, or a start
        leaves fewer than ``length - 1`` tokens.

    Examples
    --------
    >>> cfg = PairSetup(objective="packed").config(vocab_size())
    >>> tokens, segments = packed_batch(text_stream(sentences()), [0, 100], cfg)
    >>> tokens.shape, int(tokens[0, 0]) == cfg.cls_id, int(segments.max())   # one segment, sentences run on
    ((2, 32), True, 0)
    """
    check_instance(config, "config", pairs.PairEncoderConfig)
    n = config.encoder.length
    stream = as_int_array(stream, "stream", ndim=1)
    if stream.size < n - 1 or stream.min() < 0 or stream.max() >= config.vocab_size:
        raise ValueError(f"stream must hold at least {n - 1} token ids in [0, {config.vocab_size})")
    starts = as_int_array(starts, "starts", ndim=1)
    if starts.size == 0 or starts.min() < 0 or starts.max() > stream.size - (n - 1):
        raise ValueError(f"starts must be non-empty offsets in [0, {stream.size - (n - 1)}] (each reads "
                         f"{n - 1} tokens)")
    tokens = np.empty((starts.size, n), dtype=np.int64)
    tokens[:, 0] = config.cls_id
    tokens[:, 1:] = stream[starts[:, None] + np.arange(n - 1)[None, :]]
    return tokens, np.zeros_like(tokens)


# ----------------------------------------------------------------------------- pre-training
@dataclass(frozen=True)
class PairSetup:
    """One pre-training of the pair encoder.

    Attributes
    ----------
    objective : {"nsp", "packed"}
    mask, random : float
        Shares of a selected token shown as [MASK] and as a random token (the rest is kept).
    seed : int
    steps, batch_size, length, d_model, n_heads, n_blocks : int
    lr, warmup_share, final_lr_fraction, total_decay, rho : float
    """

    objective: str = "nsp"
    mask: float = 0.8
    random: float = 0.1
    seed: int = SEEDS[0]
    steps: int = STEPS
    batch_size: int = 64
    length: int = 32
    d_model: int = 64
    n_heads: int = 4
    n_blocks: int = 2
    lr: float = 1e-2
    warmup_share: float = 1.0 / 15.0
    final_lr_fraction: float = 0.02
    total_decay: float = 0.5
    rho: float = 0.15

    def __post_init__(self):
        if self.objective not in ("nsp", "packed"):
            raise ValueError(f"objective must be 'nsp' or 'packed', got {self.objective!r}")
        for name in ("steps", "batch_size", "length", "d_model", "n_heads", "n_blocks"):
            check_positive_int(getattr(self, name), name)
        for name in ("mask", "random", "rho", "final_lr_fraction"):
            check_probability(getattr(self, name), name)
        check_positive_int(self.seed, "seed", minimum=0)
        for name in ("lr", "total_decay"):
            if check_real(getattr(self, name), name) <= 0:
                raise ValueError(f"{name} must be a positive number, got {getattr(self, name)!r}")
        if not 0 < check_real(self.warmup_share, "warmup_share") < 1:
            raise ValueError(f"warmup_share must lie strictly between 0 and 1, got {self.warmup_share!r}")
        if self.rho == 0:
            raise ValueError("rho must be > 0: a channel that selects nothing gives no loss to train on")
        if self.d_model % self.n_heads:
            raise ValueError(f"n_heads must divide d_model, got d_model={self.d_model}, n_heads={self.n_heads}")
        if self.mask + self.random > 1 + 1e-12:
            raise ValueError(f"mask + random must be at most 1, got {self.mask} + {self.random}")

    def config(self, vocab_size: int) -> pairs.PairEncoderConfig:
        """The pair encoder over ``vocab_size`` output classes."""
        return pairs.PairEncoderConfig(enc.EncoderConfig(
            vocab_size=vocab_size, length=self.length, d_model=self.d_model, n_blocks=self.n_blocks,
            n_heads=self.n_heads, token_init_std=1.0, pad=True))

    def train_config(self) -> TrainConfig:
        """Schedule and AdamW constants; the decay follows from ``total_decay`` as for the filing encoder."""
        warmup = max(1, round(self.warmup_share * self.steps))
        base = TrainConfig(steps=self.steps, batch_size=self.batch_size, lr=self.lr, warmup=warmup,
                           final_lr_fraction=self.final_lr_fraction, seed=self.seed)
        total = sum(learning_rate(base, step) for step in range(self.steps))
        return replace(base, weight_decay=self.total_decay / total)


@dataclass(frozen=True, eq=False)
class PretrainedPair:
    """A pre-trained pair encoder: its setup, configuration, parameters and per-step losses.

    Raises
    ------
    TypeError, ValueError
        If ``setup`` or ``config`` is of the wrong type, ``params`` does not match ``config``, a
        loss array does not hold one finite value per step (``nsp_losses`` empty unless the
        objective is ``"nsp"``), or ``seconds`` is negative.

    Examples
    --------
    A two-step setup with fresh parameters (`pretrain` fills one from the store):

    >>> setup = PairSetup(steps=2, batch_size=4, d_model=8, n_heads=2, n_blocks=1, seed=0)
    >>> config = setup.config(vocab_size())
    >>> model = PretrainedPair(setup, config, pairs.init_pair_params(config, np.random.default_rng(0)),
    ...                        np.array([6.9, 6.7]), np.array([0.70, 0.69]), 0.1)
    >>> model.mlm_losses.shape, model.params["S"].shape          # one loss per step; two segment rows of d
    ((2,), (2, 8))
    """

    setup: PairSetup
    config: pairs.PairEncoderConfig
    params: dict
    mlm_losses: np.ndarray
    nsp_losses: np.ndarray
    seconds: float

    def __post_init__(self):
        check_instance(self.setup, "setup", PairSetup)
        check_instance(self.config, "config", pairs.PairEncoderConfig)
        object.__setattr__(self, "params", pairs.check_pair_params(self.params, self.config))
        steps = {"mlm_losses": self.setup.steps, "nsp_losses": self.setup.steps if self.setup.objective == "nsp" else 0}
        for name, size in steps.items():
            array = as_float_array(getattr(self, name), name, ndim=1)
            if array.shape != (size,):
                raise ValueError(f"{name} must hold {size} values for this setup, got shape {array.shape}")
            if not np.all(np.isfinite(array)):
                raise ValueError(f"{name} must be finite")
            object.__setattr__(self, name, array)
        object.__setattr__(self, "seconds", check_real(self.seconds, "seconds", low=0.0))


def _corrupt(channel: Channel, clean: np.ndarray, config: pairs.PairEncoderConfig, rng):
    special = (clean >= config.vocab_size) | (clean == SEP_ID)
    while True:
        batch = corrupt(channel, np.where(special, 0, clean), rng)
        shown = np.where(special, clean, batch.shown)
        selected = batch.selected & ~special
        if selected.any():
            return shown, selected


def text_stream(text: Sentences) -> np.ndarray:
    """The pre-training text as one stream, ``[SEP]`` after every sentence (filings run on).

    Examples
    --------
    >>> from mlm_book.finance.corpus import CorpusConfig, generate_corpus
    >>> from mlm_book.finance.vocab import build_vocabulary
    >>> corpus = generate_corpus(CorpusConfig(n_documents=2), np.random.default_rng(0))
    >>> ids = build_vocabulary(corpus.tokens.tolist(), min_count=1).encode(corpus.tokens.tolist())
    >>> text = sentences_of(corpus, ids)
    >>> stream = text_stream(text)
    >>> int((stream == SEP_ID).sum()) == text.count, int(stream[-1]) == SEP_ID     # a [SEP] closes every sentence
    (True, True)

    Raises
    ------
    TypeError
        If ``text`` is not `Sentences`.
    """
    check_instance(text, "text", Sentences)
    rows = np.where(text.ids >= 0, text.ids, SEP_ID)
    keep = np.arange(rows.shape[1] + 1)[None, :] <= text.lengths[:, None]
    rows = np.concatenate([rows, np.full((text.count, 1), SEP_ID)], axis=1)
    return rows[keep]


def _train(setup: PairSetup):
    text = sentences()
    V = vocab_size()
    config = setup.config(V)
    channel = Channel(vocab_size=V, rho=setup.rho, mask=setup.mask, random=setup.random)
    rng = np.random.default_rng(setup.seed)
    params = pairs.init_pair_params(config, rng)
    decayed = tuple(n for n in pairs.pair_param_names(config)
                    if n in enc.decayed_names(config.encoder) or n in ("S", "nsp.W"))
    firsts = np.flatnonzero(~text.last)
    stream = text_stream(text)
    sentence_starts = np.concatenate([[0], np.cumsum(text.lengths + 1)[:-1]])
    sentence_starts = sentence_starts[sentence_starts + setup.length - 1 <= stream.size]
    nsp = setup.objective == "nsp"

    def draw(rng, step):
        if nsp:
            a = firsts[rng.integers(0, firsts.size, size=setup.batch_size)]
            clean, segments, labels = pair_batch(text, a, config, rng)
        else:
            picks = sentence_starts[rng.integers(0, sentence_starts.size, size=setup.batch_size)]
            clean, segments = packed_batch(stream, picks, config)
            labels = None
        shown, selected = _corrupt(channel, clean, config, rng)
        return shown, segments, clean, selected, labels

    def loss_and_grads(params, batch):
        mlm, nsp_loss, grads = pairs.pair_loss_and_grads_unchecked(params, config, *batch, 1.0 if nsp else 0.0)
        return ((mlm, nsp_loss) if nsp else mlm), grads

    objective = loop.Objective(params, draw, loss_and_grads, decayed=decayed,
                               loss_names=("mlm", "nsp") if nsp else ("mlm",),
                               label=f"pre-training ({setup.objective}, seed {setup.seed})")
    fitted = loop.fit(objective, setup.train_config(), rng)
    return config, params, fitted.losses["mlm"], fitted.losses.get("nsp", np.empty(0)), fitted.seconds


def pretrain(setup: PairSetup = PairSetup()) -> PretrainedPair:
    """The pre-trained pair encoder of ``setup`` (cached; trained on a miss).

    Examples
    --------
    >>> PairSetup(objective="mlm")
    Traceback (most recent call last):
    ...
    ValueError: objective must be 'nsp' or 'packed', got 'mlm'
    """
    check_instance(setup, "setup", PairSetup)
    return _pretrain(setup)


def pretraining_code() -> str:
    """The source that keys every pre-training here: a store entry built on a pre-trained encoder includes it.

    Examples
    --------
    >>> "def " in pretraining_code()
    True
    """
    return artefacts.key_source("pair")


@functools.cache
def _pretrain(setup: PairSetup) -> PretrainedPair:
    from dataclasses import asdict

    def build():
        config, params, mlm, nsp, seconds = _train(setup)
        arrays = {f"param/{k}": v for k, v in params.items()}
        arrays["mlm_losses"], arrays["nsp_losses"] = mlm, nsp
        return arrays, {"seconds": seconds}

    arrays, metadata = cache.cached("pair-encoder", asdict(setup), [pretraining_code()], build)
    config = setup.config(vocab_size())
    params = pairs.check_pair_params({k[6:]: v for k, v in arrays.items() if k.startswith("param/")}, config)
    return PretrainedPair(setup, config, params, arrays["mlm_losses"], arrays["nsp_losses"],
                          float(metadata["seconds"]))


# ----------------------------------------------------------------------------- what is measured
POOL_DOCUMENTS = 450
"""Documents of the labelled pool corpus (chapter 6's 300 would give too few news sentences for 1024)."""
SIZES = (16, 64, 256, 1024)
"""Labelled-set sizes of the learning curves."""
NSP_TEST_PAIRS = 2000
"""Pairs drawn per NSP test condition."""
MLM_TEST_SEQUENCES = 1000
"""Held-out sequences per format on which the masked-LM cross-entropy is measured."""
COMPANY_PROBE_SENTENCES = 3000
"""Sentences per probe split for the company probe (training from the pool, testing on the test corpus)."""
FINE_TUNINGS = (("full", "cls"), ("full", "mean"), ("top", "cls"))
"""Fine-tuning runs, (mode, pooling): every head and mode on the MLM + NSP encoder; the other encoders, and training from scratch, are compared through the full [CLS] run."""
COMPARED = (("full", "cls"),)
FINE_TUNE = FineTuneConfig()
"""The fine-tuning schedule of every run (steps, batch, peak rate, decay), fixed in advance."""


@dataclass(frozen=True)
class PairMeasure:
    """How much is measured on a pre-trained encoder: the book's sizes by default, a tiny build's smaller.

    Attributes
    ----------
    pool_documents : int
        Filings of the labelled pool corpus (`POOL_DOCUMENTS`).
    sizes : tuple of int
        Labelled-set sizes of the learning curves (`SIZES`).
    nsp_test_pairs, mlm_sequences, company_sentences : int
        `NSP_TEST_PAIRS`, `MLM_TEST_SEQUENCES`, `COMPANY_PROBE_SENTENCES`.
    fine_tune : FineTuneConfig
        The fine-tuning schedule (`FINE_TUNE`).

    Examples
    --------
    >>> PairMeasure().sizes
    (16, 64, 256, 1024)
    """

    pool_documents: int = POOL_DOCUMENTS
    sizes: tuple = SIZES
    nsp_test_pairs: int = NSP_TEST_PAIRS
    mlm_sequences: int = MLM_TEST_SEQUENCES
    company_sentences: int = COMPANY_PROBE_SENTENCES
    fine_tune: FineTuneConfig = FINE_TUNE

    def __post_init__(self):
        for name in ("pool_documents", "nsp_test_pairs", "mlm_sequences", "company_sentences"):
            check_positive_int(getattr(self, name), name)
        object.__setattr__(self, "sizes", tuple(check_positive_int(size, "sizes")
                                                for size in check_sequence(self.sizes, "sizes")))
        check_instance(self.fine_tune, "fine_tune", FineTuneConfig)

    def key(self) -> dict:
        """What enters a store key."""
        return {"sizes": list(self.sizes), "nsp_test_pairs": self.nsp_test_pairs, "mlm_sequences": self.mlm_sequences,
                "company_sentences": self.company_sentences, "fine_tune": self.fine_tune.__dict__,
                "pool_documents": self.pool_documents, "fine_tunings": [list(run) for run in FINE_TUNINGS],
                "compared": [list(run) for run in COMPARED], "seeds": [LABELLED_SEED, TEST_SEED]}


MEASURE = PairMeasure()
"""The book's measurements."""


def vocab_size() -> int:
    """Output classes of every pair encoder: chapter 6's vocabulary (without [MASK], [PAD], [CLS])."""
    return filings.filings().vocabulary.size


@functools.cache
def pool_sentences(n_documents: int = POOL_DOCUMENTS) -> Sentences:
    """The labelled pool: a fresh corpus of `POOL_DOCUMENTS` filings (seed `LABELLED_SEED`)."""
    return labelled_sentences(LABELLED_SEED, n_documents)


def single_inputs(text: Sentences, rows, config: pairs.PairEncoderConfig):
    """``[CLS] s [SEP]`` for the sentences ``rows``, cut to the longest (padding is masked anyway).

    Raises
    ------
    TypeError, ValueError
        If ``text`` or ``config`` is of the wrong type, the sentences do not fit ``config``, or
        ``rows`` is not sentence indices.

    Examples
    --------
    >>> cfg = PairSetup().config(vocab_size())
    >>> tokens, segments = single_inputs(sentences(), [0, 1], cfg)
    >>> tokens.shape, sentences().lengths[:2].tolist()          # 13 words, [CLS] and [SEP]
    ((2, 15), [13, 13])
    """
    _check_fit(text, config, pair=False)
    rows = _check_rows(rows, text, "rows")
    tokens, segments = assemble(text, rows, None, config)
    width = int(text.lengths[rows].max()) + 2
    return tokens[:, :width], segments[:, :width]


def news_task(text: Sentences, config: pairs.PairEncoderConfig):
    """The news sentences of ``text`` as classifier inputs with labels 1 = good news, 0 = bad.

    Raises
    ------
    TypeError, ValueError
        As [`single_inputs`][mlm_book.artefacts.pair_encoder.single_inputs], or if ``text`` holds
        no news sentence.

    Examples
    --------
    >>> tokens, segments, labels = news_task(sentences(), PairSetup().config(vocab_size()))
    >>> tokens.shape, np.bincount(labels).tolist()            # chapter 6's filings: bad news, good news
    ((964, 14), [502, 462])
    """
    check_instance(text, "text", Sentences)
    rows = np.flatnonzero(text.news != 0)
    if rows.size == 0:
        raise ValueError("text must hold at least one news sentence")
    tokens, segments = single_inputs(text, rows, config)
    return tokens, segments, (text.news[rows] > 0).astype(np.int64)


def labelled_subset(size: int, seed: int, n_pool: int) -> np.ndarray:
    """Which pool examples a labelled set of ``size`` holds at ``seed`` (without replacement).

    Examples
    --------
    >>> labelled_subset(4, 1, 10).tolist()
    [3, 4, 8, 9]
    """
    n_pool = check_positive_int(n_pool, "n_pool")
    size = check_positive_int(size, "size")
    seed = check_positive_int(seed, "seed", minimum=0)
    if size > n_pool:
        raise ValueError(f"size must be at most n_pool = {n_pool}, got {size}")
    return np.sort(np.random.default_rng([seed, size]).choice(n_pool, size=size, replace=False))


def _mlm_cross_entropy(params, config, tokens, segments, setup: PairSetup, seed: int) -> float:
    """Masked-LM cross-entropy (nats) of a fixed corruption draw of ``tokens`` (forward passes only)."""
    channel = Channel(vocab_size=config.vocab_size, rho=setup.rho, mask=0.8, random=0.1)
    rng = np.random.default_rng(seed)
    cfg = config.encoder
    total, count = 0.0, 0
    for start in range(0, tokens.shape[0], 256):
        clean, seg = tokens[start:start + 256], segments[start:start + 256]
        shown, selected = _corrupt(channel, clean, config, rng)
        rows = np.flatnonzero(selected.reshape(-1))
        x0, _ = pairs.pair_embedding_forward(params, config, shown, seg)
        x, _, _ = pairs.blocks_forward(params, config, x0, shown.shape, rows, pairs.key_bias(config, shown, x0.dtype))
        logits, _ = layers.head_forward(x, params["ln_f.g"], params["ln_f.b"], params["E"][:cfg.vocab_size],
                                        params["b_out"], cfg.ln_eps)
        loss, _ = layers.cross_entropy_forward(logits.astype(np.float64), clean.reshape(-1)[rows])
        total += loss * rows.size
        count += rows.size
    return total / count


def _nsp_accuracies(params, config, text: Sentences, m: PairMeasure) -> dict:
    """Share of pairs the NSP head calls "next", and accuracy, in four test conditions."""
    rng = np.random.default_rng(TEST_SEED)
    firsts = np.flatnonzero(~text.last)
    a = firsts[rng.choice(firsts.size, size=m.nsp_test_pairs, replace=False)]
    out = {}
    for condition in ("next", "swapped", "same", "other"):
        if condition in ("next", "swapped"):
            first, second = (a, a + 1) if condition == "next" else (a + 1, a)
            tokens, segments = assemble(text, first, second, config)
        else:
            tokens, segments, labels = pair_batch(text, a, config, rng, negatives=condition)
            keep = labels == 1
            tokens, segments = tokens[keep], segments[keep]
        proba = pairs.nsp_probabilities(params, config, tokens, segments)
        out[condition] = float(np.mean(proba[:, 0] > 0.5))
    return out


def _probe_scores(params, config, pool: Sentences, test: Sentences, m: PairMeasure) -> dict:
    """Probe accuracies for the filer and the news, on [CLS] and on the mean of the token vectors."""
    rng = np.random.default_rng(LABELLED_SEED)
    train_rows = rng.choice(pool.count, size=m.company_sentences, replace=False)
    test_rows = rng.choice(test.count, size=m.company_sentences, replace=False)
    news_train, news_test = np.flatnonzero(pool.news != 0), np.flatnonzero(test.news != 0)
    out = {}
    for pooling in ("cls", "mean"):
        def features(text, rows):
            tokens, segments = single_inputs(text, rows, config)
            return finetune.pooled_features(params, config, tokens, segments, pooling)
        out[f"company/{pooling}"] = probe.fit_and_score(
            features(pool, train_rows), pool.filer[train_rows], features(test, test_rows),
            test.filer[test_rows]).accuracy
        out[f"news/{pooling}"] = probe.fit_and_score(
            features(pool, news_train), pool.news[news_train], features(test, news_test),
            test.news[news_test]).accuracy
    return out


def _learning_curves(params, config, seed: int, runs, m: PairMeasure) -> dict:
    """Test accuracy of the news classifier at each labelled-set size: frozen probes and fine-tunings."""
    pool_tokens, pool_segments, pool_labels = news_task(pool_sentences(m.pool_documents), config)
    test_tokens, test_segments, test_labels = news_task(labelled_sentences(TEST_SEED), config)
    out = {}
    frozen = {pooling: (finetune.pooled_features(params, config, pool_tokens, pool_segments, pooling),
                        finetune.pooled_features(params, config, test_tokens, test_segments, pooling))
              for pooling in ("cls", "mean")}
    for size in m.sizes:
        rows = labelled_subset(size, seed, pool_labels.size)
        for pooling, (train_x, test_x) in frozen.items():
            out[f"frozen/{pooling}/{size}"] = probe.fit_and_score(train_x[rows], pool_labels[rows], test_x,
                                                                  test_labels).accuracy
        for mode, pooling in runs:
            settings = replace(m.fine_tune, mode=mode, pooling=pooling, seed=seed)
            model = finetune.fine_tune(params, config, pool_tokens[rows], pool_segments[rows], pool_labels[rows],
                                       settings, n_classes=2)
            predicted = finetune.classify(model, test_tokens, test_segments).argmax(axis=1)
            out[f"{mode}/{pooling}/{size}"] = float(np.mean(predicted == test_labels))
    return out


def _measure(setup: PairSetup, m: PairMeasure) -> dict:
    """Every number chapter 8 reads from one pre-trained encoder (the encoder is trained on a miss)."""
    model = pretrain(setup)
    params, config = model.params, model.config
    test = labelled_sentences(TEST_SEED)
    rng = np.random.default_rng(TEST_SEED)
    firsts = np.flatnonzero(~test.last)
    a = firsts[rng.choice(firsts.size, size=m.nsp_test_pairs, replace=False)]
    pair_tokens, pair_segments = assemble(test, a, a + 1, config)
    stream = text_stream(test)
    starts = rng.integers(0, stream.size - config.encoder.length, size=m.nsp_test_pairs)
    packed_tokens, packed_segments = packed_batch(stream, starts, config)
    values = {"mlm/pairs": _mlm_cross_entropy(params, config, pair_tokens[:m.mlm_sequences],
                                              pair_segments[:m.mlm_sequences], setup, TEST_SEED),
              "mlm/packed": _mlm_cross_entropy(params, config, packed_tokens[:m.mlm_sequences],
                                               packed_segments[:m.mlm_sequences], setup, TEST_SEED),
              "mlm/train_last100": float(model.mlm_losses[-100:].mean())}
    if setup.objective == "nsp":
        values.update({f"nsp/{k}": v for k, v in _nsp_accuracies(params, config, test, m).items()})
    values.update({f"probe/{k}": v for k, v in _probe_scores(params, config, pool_sentences(m.pool_documents), test, m).items()})
    runs = FINE_TUNINGS if setup.objective == "nsp" else COMPARED
    values.update({f"curve/{k}": v for k, v in _learning_curves(params, config, setup.seed, runs, m).items()})
    values["pretrain_seconds"] = model.seconds
    return values


def filing_pair_encoder(seed: int):
    """Chapter 7's filing encoder at ``seed`` (one of `SEEDS`) as a pair encoder: ``(params, config)``.

    That encoder has no [CLS] and no segments: [CLS] is its [SEP] row (so ``[CLS] s [SEP]``
    reads as the ``[SEP] s [SEP]`` of its training windows), both segment rows are zero and
    the NSP head is zero, so it computes exactly what it was trained to.

    Examples
    --------
    >>> params, config = filing_pair_encoder(SEEDS[0])  # doctest: +BOOK
    >>> bool(np.array_equal(params["cls"], params["E"][SEP_ID])), float(np.abs(params["S"]).max())
    (True, 0.0)
    """
    check_book_seed(seed)
    return as_pair_encoder(filing_encoder.trained_encoder(filing_encoder.seed_setup(seed)))


def as_pair_encoder(result):
    """A trained window encoder (a ``TrainResult`` with [PAD]) as a pair encoder that computes what it was trained to.

    [CLS] is its [SEP] row (``[CLS] s [SEP]`` reads as the ``[SEP] s [SEP]`` of its training
    windows; its vocabulary must put [SEP] at ``SEP_ID``), both segment rows are zero and
    the NSP head is zero.

    Raises
    ------
    TypeError
        If ``result`` is not a ``TrainResult``.
    ValueError
        If its encoder has no [PAD] slot.

    Examples
    --------
    An untrained encoder of the tiny filing setup stands in for chapter 7's:

    >>> from mlm_book.nn.train import TrainResult
    >>> setup = filing_encoder.tiny_setup()
    >>> window = setup.encoder(vocab_size())
    >>> result = TrainResult(window, filing_encoder.training_config(setup),
    ...                      enc.init_params(window, np.random.default_rng(0)), np.zeros(3))
    >>> params, config = as_pair_encoder(result)
    >>> bool(np.array_equal(params["cls"], params["E"][SEP_ID])), float(np.abs(params["nsp.W"]).max()), config.cls_id
    (True, 0.0, 869)
    """
    from mlm_book.nn.train import TrainResult
    check_instance(result, "result", TrainResult)
    config = pairs.PairEncoderConfig(result.encoder)
    d = result.encoder.d_model
    params = {name: np.array(value) for name, value in result.params.items()}
    dtype = params["E"].dtype
    params.update({"cls": params["E"][SEP_ID].copy(), "S": np.zeros((2, d), dtype),
                   "nsp.W": np.zeros((d, 2), dtype), "nsp.b": np.zeros(2, dtype)})
    return params, config


def filing_encoder_key(seed: int) -> dict:
    """What identifies chapter 7's encoder at ``seed`` in a cache key: its setup, schedule and training code.

    Examples
    --------
    >>> sorted(filing_encoder_key(SEEDS[0]))
    ['code', 'encoder', 'training']
    """
    return filing_encoder.identity(filing_encoder.seed_setup(check_book_seed(seed)))


def _chapter6(setup, m: PairMeasure) -> dict:
    """The news classifier fine-tuned from the filing encoder of ``setup`` (chapter 7's: 3000 steps on windows),
    the head fitted exactly as on the pair encoders."""
    params, config = as_pair_encoder(filing_encoder.trained_encoder(setup))
    return {f"curve/{k}": v for k, v in _learning_curves(params, config, setup.seed, COMPARED, m).items()}


def _scratch(seed: int, m: PairMeasure, setup: PairSetup | None = None) -> dict:
    """The news classifier trained from a fresh encoder (``setup``'s shape) on the labels alone (full, [CLS] head)."""
    config = (PairSetup() if setup is None else setup).config(vocab_size())
    params = pairs.init_pair_params(config, np.random.default_rng(seed))
    return {f"curve/{k}": v for k, v in _learning_curves(params, config, seed, COMPARED, m).items()
            if not k.startswith("frozen/")}


def _entry(kind: str, config: dict, m: PairMeasure, source_kind: str) -> cache.CacheEntry:
    return cache.entry_for(f"pair-{kind}", {**config, **m.key()}, [artefacts.key_source(source_kind)])


def _cached_values(kind: str, config: dict, m: PairMeasure, source_kind: str, compute) -> dict:
    """``compute()``'s numbers through the store, under the key `_entry` checks for."""
    def build():
        values = compute()
        return {key: np.asarray(value, dtype=np.float64) for key, value in values.items()}

    arrays, _ = cache.cached(f"pair-{kind}", {**config, **m.key()}, [artefacts.key_source(source_kind)], build)
    return {key: float(value) for key, value in arrays.items()}


def check_book_seed(seed) -> int:
    """``seed`` if it is one of the book's `SEEDS`; a clear error otherwise.

    Examples
    --------
    >>> check_book_seed(SEEDS[0]) == SEEDS[0]
    True
    """
    seed = check_positive_int(seed, "seed", minimum=0)
    if seed not in SEEDS:
        raise ValueError(f"seed must be one of the book's seeds {SEEDS} (each is trained once, in the book's pool), "
                         f"got {seed}")
    return seed


def check_variant(variant) -> str:
    """``variant`` if it names one of `VARIANTS`; a clear error otherwise.

    Examples
    --------
    >>> check_variant("nsp")
    'nsp'
    """
    if not isinstance(variant, str):
        raise TypeError(f"variant must be a str, got {type(variant).__name__}")
    if variant not in VARIANTS:
        raise ValueError(f"variant must be one of {sorted(VARIANTS)}, got {variant!r}")
    return variant


def measurements(setup: PairSetup = PairSetup()) -> dict:
    """Every number chapter 8 reads from the encoder of ``setup`` (cached on disk).

    Keys: ``mlm/pairs``, ``mlm/packed`` (held-out masked-LM cross-entropy, nats, in each
    input format), ``nsp/<condition>`` (share called "next": ``next``, ``swapped``, ``same``,
    ``other``; NSP encoders only), ``probe/<fact>/<pooling>`` and
    ``curve/<mode>/<pooling>/<size>`` (test accuracies).
    """
    check_instance(setup, "setup", PairSetup)
    return dict(_measurements(setup, MEASURE))


@functools.cache
def _measurements(setup: PairSetup, m: PairMeasure) -> dict:
    from dataclasses import asdict
    return _cached_values("measurements", asdict(setup), m, "pair", lambda: _measure(setup, m))


def scratch(seed: int) -> dict:
    """The from-scratch learning curve at ``seed``, one of `SEEDS` (cached): keys ``curve/full/cls/<size>``."""
    return dict(_scratch_values(check_book_seed(seed), MEASURE))


@functools.cache
def _scratch_values(seed: int, m: PairMeasure, setup: PairSetup | None = None) -> dict:
    config = {"seed": seed} if setup is None else {"seed": seed, "shape": setup.config(vocab_size()).encoder.to_dict()}
    return _cached_values("scratch", config, m, "pair-scratch", lambda: _scratch(seed, m, setup))


def chapter6_transfer(seed: int) -> dict:
    """Learning curves of chapter 7's filing encoder at ``seed``, one of `SEEDS`, fine-tuned (cached): keys as in `measurements`."""
    return dict(_transfer_values(filing_encoder.seed_setup(check_book_seed(seed)), MEASURE))


@functools.cache
def _transfer_values(setup, m: PairMeasure) -> dict:
    # a run fine-tuning chapter 7's encoder is redone when that encoder is retrained
    config = {"seed": setup.seed, **filing_encoder.identity(setup)}
    return _cached_values("chapter6", config, m, "pair-transfer", lambda: _chapter6(setup, m))


VARIANTS = {"nsp": PairSetup(objective="nsp"), "packed": PairSetup(objective="packed"),
            "all-mask": PairSetup(objective="packed", mask=1.0, random=0.0)}
"""The pre-training variants, each trained at every seed of `SEEDS`."""


def book_setups() -> tuple[PairSetup, ...]:
    """Every pre-training the chapter reads: each variant at each seed.

    Examples
    --------
    >>> len(book_setups()) == len(VARIANTS) * len(SEEDS)
    True
    """
    return tuple(replace(setup, seed=seed) for setup in VARIANTS.values() for seed in SEEDS)


# ----------------------------------------------------------------------------- the kinds
def _tiny_measure() -> PairMeasure:
    return PairMeasure(pool_documents=20, sizes=(8,), nsp_test_pairs=40, mlm_sequences=16, company_sentences=60,
                       fine_tune=replace(FINE_TUNE, steps=2, batch_size=4))


_TINY_SHAPE = dict(steps=2, batch_size=4, d_model=8, n_heads=2, n_blocks=1, seed=0)


def _pair_built(run) -> bool:
    from dataclasses import asdict
    setup, m = run
    pretrained = cache.load(cache.entry_for("pair-encoder", asdict(setup), [pretraining_code()])) is not None
    measured = cache.load(_entry("measurements", asdict(setup), m, "pair")) is not None   # asked either way
    return pretrained and measured


def _scratch_built(run) -> bool:
    seed, m, setup = run
    config = {"seed": seed} if setup is None else {"seed": seed, "shape": setup.config(vocab_size()).encoder.to_dict()}
    return cache.load(_entry("scratch", config, m, "pair-scratch")) is not None


def _transfer_built(run) -> bool:
    setup, m = run
    return cache.load(_entry("chapter6", {"seed": setup.seed, **filing_encoder.identity(setup)}, m, "pair-transfer")) is not None


# ----------------------------------------------------------------------------- the declaration (not keyed)
# Seconds on one core, measured on the cold build of 2026-12-02.
_COSTS = {"nsp": 30.0, "packed": 24.0, "scratch": 4.1, "transfer": 2.2}
_MODULES = ("mlm_book.artefacts.pair_encoder", "mlm_book.artefacts.filings", "mlm_book.finance.corpus",
            "mlm_book.finance.vocab", "mlm_book.finance.caps", "mlm_book.finance.windows", "mlm_book.finance.world",
            "mlm_book.channel", "mlm_book.probe", "mlm_book.nn.pairs", "mlm_book.nn.finetune", "mlm_book.nn.loop",
            "mlm_book.nn.encoder", "mlm_book.nn.layers", "mlm_book.nn.adam", "mlm_book.nn.runtime")

ARTEFACT_KINDS = (
    artefacts.Kind(
        name="pair", chapter=8, summary="chapter 8's pair-encoder pre-trainings (MLM + NSP, packed, all-[MASK]) and their "
                             "measurements, 5 seeds each",
        modules=_MODULES, setups=lambda: tuple((setup, MEASURE) for setup in book_setups()),
        is_built=_pair_built, build=lambda run: _measurements(*run),
        cost=lambda run: _COSTS[run[0].objective] * run[0].steps / STEPS,
        describe=lambda run: f"{run[0].objective}, mask {run[0].mask:g}, seed {run[0].seed}",
        tiny=lambda: (PairSetup(**_TINY_SHAPE), _tiny_measure())),
    artefacts.Kind(
        name="pair-scratch", chapter=8, summary="chapter 8's news classifier trained from scratch, 5 seeds",
        modules=_MODULES, setups=lambda: tuple((seed, MEASURE, None) for seed in SEEDS),
        is_built=_scratch_built, build=lambda run: _scratch_values(*run), cost=lambda run: _COSTS["scratch"],
        describe=lambda run: f"seed {run[0]}",
        tiny=lambda: (0, _tiny_measure(), PairSetup(**_TINY_SHAPE))),
    artefacts.Kind(
        name="pair-transfer", chapter=8, summary="chapter 8's news task learnt by fine-tuning chapter 7's filing encoders, 5 seeds",
        modules=_MODULES, after=("filing-encoder",),
        setups=lambda: tuple((filing_encoder.seed_setup(seed), MEASURE) for seed in SEEDS),
        is_built=_transfer_built, build=lambda run: _transfer_values(*run), cost=lambda run: _COSTS["transfer"],
        describe=lambda run: f"seed {run[0].seed}",
        tiny=lambda: (filing_encoder.tiny_setup(), _tiny_measure())),
)
