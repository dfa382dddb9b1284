r"""Chapter 7: sentence pairs, ``[CLS]``, next-sentence prediction and fine-tuning, on the filings.

**The world.** Pre-training reads chapter 6's 300 filings (its corpus, vocabulary and
tokens, unchanged). Labelled data come from two *fresh* corpora drawn by the same generator
with the same configuration and other seeds (`LABELLED_SEED`, `TEST_SEED`), read through
chapter 6's vocabulary (a word it lacks becomes ``[UNK]``): a pool to draw labelled
training sets from, and a test set no encoder has seen. Every sentence carries the
generator's gold facts: its filing, the filer, and for a *news sentence* the news it
reports (good or bad: the aspect's polarity times the direction, written on the direction
word or evaluative verb).

**Two pre-trainings at equal steps** ([`PairSetup`][mlm_book.experiments.ch07_pairs.PairSetup]), both through BERT's channel
on the real tokens (``[CLS]``, ``[SEP]`` and ``[PAD]`` are never selected):

* ``"nsp"``: BERT. ``[CLS] A [SEP] B [SEP]`` with B the sentence after A in its filing
  (half the pairs) or a sentence drawn uniformly from *another* filing; loss MLM + NSP;
* ``"packed"``: RoBERTa's full sentences. ``[CLS]`` then contiguous text from a sentence
  start, running on across sentence and filing boundaries (``[SEP]`` between sentences)
  to the length; one segment; loss MLM alone.

A third run, ``"packed"`` with every selected token shown as ``[MASK]`` (``mask = 1``),
isolates the pre-train/fine-tune mismatch.

The recipe is the filing encoder's (d = 64, 4 heads, 2 blocks, AdamW at peak 1e-2 with
the same warm-up share, cosine to 2 %, total decay 0.5; selection 0.15, 0.8/0.1/0.1
uniform replacement), with batches of 64 sequences of 32 slots. The step count was set by
the chapter's compute budget before any measurement: [`STEPS`][mlm_book.experiments.ch07_pairs.STEPS].
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass, replace

import numpy as np

from mlm_book import artefacts, cache, probe
from mlm_book.channel import Channel, corrupt
from mlm_book.artefacts.filing_encoder import SEEDS as _FILING_SEEDS
from mlm_book.finance import corpus as corpus_module
from mlm_book.finance.vocab import SEP_ID
from mlm_book.ledger import Claim, over_seeds
from mlm_book.nn import adam as adam_module
from mlm_book.nn import encoder as enc
from mlm_book.nn import finetune, layers, pairs
from mlm_book.nn.finetune import FineTuneConfig
from mlm_book.nn.train import TrainConfig, decayed_names, learning_rate
from mlm_book.validation import (
    as_float_array,
    as_int_array,
    check_format,
    check_generator,
    check_instance,
    check_positive_int,
    check_probability,
    check_real,
)

__all__ = ["STEPS", "LABELLED_SEED", "TEST_SEED", "SEEDS", "POOL_DOCUMENTS", "SIZES", "FINE_TUNINGS", "COMPARED",
           "FINE_TUNE", "VARIANTS", "Sentences", "sentences", "sentences_of", "labelled_sentences", "pool_sentences", "pair_batch",
           "packed_batch", "pair_inputs", "single_inputs", "news_task", "labelled_subset", "PairSetup", "PretrainedPair", "pretrain", "pretraining_code",
           "measurements", "scratch", "chapter6_transfer", "filing_pair_encoder", "as_pair_encoder", "filing_encoder_key", "book_setups", "runs",
           "band", "band_text", "nsp_table", "probe_table", "curve_table", "figure_input", "figure_losses",
           "figure_nsp", "figure_curves", "mlm_table", "mismatch_table", "transfer_gain", "nsp_balanced_accuracy",
           "longest_pair", "plateau", "final_losses", "pretrained_seeds", "figure_probes", "MAX_DOCUMENTS", "CLAIMS"]

STEPS = 1000
"""Adam steps of every pre-training here: a third of the filing encoder's 3000, so that three pre-trainings at five seeds fit the chapter's four-minute budget on two cores."""
LABELLED_SEED, TEST_SEED = 7001, 7002
"""Seeds of the fresh labelled corpora (pool and test)."""
MAX_DOCUMENTS = 5000
"""The largest fresh corpus `labelled_sentences` generates."""
SEEDS = _FILING_SEEDS
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
    >>> from mlm_book.experiments import ch06_finance
    >>> world = ch06_finance.results()
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
    from mlm_book.experiments import ch06_finance
    world = ch06_finance.results()
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
    from mlm_book.experiments import ch06_finance
    world = ch06_finance.results()
    config = world.config.corpus if n_documents is None else replace(world.config.corpus, n_documents=n_documents)
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


def _assemble(text: Sentences, a: np.ndarray, b: np.ndarray | None, config: pairs.PairEncoderConfig):
    """``[CLS] A [SEP] B [SEP]`` (or ``[CLS] A [SEP]``) rows for sentence indices, vectorised."""
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
    tokens, segments = _assemble(text, a, b, config)
    return tokens, segments, labels


def pair_inputs(text: Sentences, a, b, config: pairs.PairEncoderConfig):
    """``[CLS] A [SEP] B [SEP]`` for given pairs of sentences ``(a[k], b[k])``, cut to the longest pair.

    Returns
    -------
    tokens, segments : ndarray of int, shape (len(a), width)

    Examples
    --------
    >>> cfg = PairSetup().config(_vocab_size())
    >>> tokens, segments = pair_inputs(sentences(), [0, 5], [1, 2], cfg)
    >>> int(tokens[0, 0]) == cfg.cls_id, int(segments[0].max())
    (True, 1)
    """
    _check_fit(text, config, pair=True)
    a = _check_rows(a, text, "a")
    b = _check_rows(b, text, "b")
    if a.shape != b.shape:
        raise ValueError(f"a and b must hold the same number of sentences, got {a.size} and {b.size}")
    tokens, segments = _assemble(text, a, b, config)
    width = int((text.lengths[a] + text.lengths[b]).max()) + 3
    return tokens[:, :width], segments[:, :width]


def packed_batch(stream: np.ndarray, starts, config: pairs.PairEncoderConfig):
    """``[CLS]`` then ``length - 1`` contiguous tokens of ``stream`` from each start (one segment).

    Raises
    ------
    TypeError, ValueError
        If ``stream`` is not 1-D token ids of the configuration's vocabulary, or a start
        leaves fewer than ``length - 1`` tokens.
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
    """A pre-trained pair encoder: its setup, configuration, parameters and per-step losses."""

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


def _stream(text: Sentences) -> np.ndarray:
    """The pre-training text as one stream, ``[SEP]`` after every sentence (filings run on)."""
    rows = np.where(text.ids >= 0, text.ids, SEP_ID)
    keep = np.arange(rows.shape[1] + 1)[None, :] <= text.lengths[:, None]
    rows = np.concatenate([rows, np.full((text.count, 1), SEP_ID)], axis=1)
    return rows[keep]


def _train(setup: PairSetup):
    import time

    from mlm_book.nn import runtime

    text = sentences()
    from mlm_book.experiments import ch06_finance
    V = ch06_finance.results().vocabulary.size
    config = setup.config(V)
    train_config = setup.train_config()
    channel = Channel(vocab_size=V, rho=setup.rho, mask=setup.mask, random=setup.random)
    rng = np.random.default_rng(setup.seed)
    runtime.tune_allocator()
    params = pairs.init_pair_params(config, rng)
    names = tuple(n for n in pairs.pair_param_names(config)
                  if n in decayed_names(config.encoder) or n in ("S", "nsp.W"))
    optimiser = adam_module.Adam(params, train_config.adam(), decayed=names)
    firsts = np.flatnonzero(~text.last)
    stream = _stream(text)
    sentence_starts = np.concatenate([[0], np.cumsum(text.lengths + 1)[:-1]])
    sentence_starts = sentence_starts[sentence_starts + setup.length - 1 <= stream.size]
    mlm_losses = np.empty(setup.steps)
    nsp_losses = np.empty(setup.steps if setup.objective == "nsp" else 0)
    weight = 1.0 if setup.objective == "nsp" else 0.0
    start = time.perf_counter()
    with runtime.blas_threads(1):
        for step in range(setup.steps):
            if setup.objective == "nsp":
                a = firsts[rng.integers(0, firsts.size, size=setup.batch_size)]
                clean, segments, labels = pair_batch(text, a, config, rng)
            else:
                picks = sentence_starts[rng.integers(0, sentence_starts.size, size=setup.batch_size)]
                clean, segments = packed_batch(stream, picks, config)
                labels = None
            shown, selected = _corrupt(channel, clean, config, rng)
            mlm, nsp, grads = pairs._pair_loss_and_grads(params, config, shown, segments, clean, selected, labels,
                                                         weight)
            if not math.isfinite(mlm):
                raise FloatingPointError(f"pre-training loss became {mlm} at step {step}")
            mlm_losses[step] = mlm
            if labels is not None:
                nsp_losses[step] = nsp
            optimiser.step(grads, learning_rate(train_config, step))
    return config, params, mlm_losses, nsp_losses, time.perf_counter() - start


_PRODUCERS = (pairs, layers, enc, adam_module, corpus_module, _sentences, _assemble, pair_batch, packed_batch,
              _corrupt, _stream, _train, PairSetup)


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


@functools.cache
def _pretrain_source() -> str:
    # read once per process: hashing the modules' source for each of the chapter's many reads took seconds
    return cache.source_of(_PRODUCERS)


def pretraining_code() -> str:
    """The source that keys every pre-training here: a cache built on a pre-trained encoder includes it in its key."""
    return _pretrain_source()


@functools.cache
def _pretrain(setup: PairSetup) -> PretrainedPair:
    from dataclasses import asdict

    def build():
        config, params, mlm, nsp, seconds = _train(setup)
        arrays = {f"param/{k}": v for k, v in params.items()}
        arrays["mlm_losses"], arrays["nsp_losses"] = mlm, nsp
        return arrays, {"seconds": seconds}

    arrays, metadata = cache.cached("pair-encoder", asdict(setup), [_pretrain_source()], build)
    from mlm_book.experiments import ch06_finance
    config = setup.config(ch06_finance.results().vocabulary.size)
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


def _vocab_size() -> int:
    from mlm_book.experiments import ch06_finance
    return ch06_finance.results().vocabulary.size


@functools.cache
def pool_sentences() -> Sentences:
    """The labelled pool: a fresh corpus of `POOL_DOCUMENTS` filings (seed `LABELLED_SEED`)."""
    return labelled_sentences(LABELLED_SEED, POOL_DOCUMENTS)


def single_inputs(text: Sentences, rows, config: pairs.PairEncoderConfig):
    """``[CLS] s [SEP]`` for the sentences ``rows``, cut to the longest (padding is masked anyway)."""
    _check_fit(text, config, pair=False)
    rows = _check_rows(rows, text, "rows")
    tokens, segments = _assemble(text, rows, None, config)
    width = int(text.lengths[rows].max()) + 2
    return tokens[:, :width], segments[:, :width]


def news_task(text: Sentences, config: pairs.PairEncoderConfig):
    """The news sentences of ``text`` as classifier inputs with labels 1 = good news, 0 = bad."""
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
        x0, _ = pairs._embed(params, config, shown, seg)
        x, _, _ = pairs._blocks(params, config, x0, shown.shape, rows, pairs._key_bias(config, shown, x0.dtype))
        logits, _ = layers.head_forward(x, params["ln_f.g"], params["ln_f.b"], params["E"][:cfg.vocab_size],
                                        params["b_out"], cfg.ln_eps)
        loss, _ = layers.cross_entropy_forward(logits.astype(np.float64), clean.reshape(-1)[rows])
        total += loss * rows.size
        count += rows.size
    return total / count


def _nsp_accuracies(params, config, text: Sentences) -> dict:
    """Share of pairs the NSP head calls "next", and accuracy, in four test conditions."""
    rng = np.random.default_rng(TEST_SEED)
    firsts = np.flatnonzero(~text.last)
    a = firsts[rng.choice(firsts.size, size=NSP_TEST_PAIRS, replace=False)]
    out = {}
    for condition in ("next", "swapped", "same", "other"):
        if condition in ("next", "swapped"):
            first, second = (a, a + 1) if condition == "next" else (a + 1, a)
            tokens, segments = _assemble(text, first, second, config)
        else:
            tokens, segments, labels = pair_batch(text, a, config, rng, negatives=condition)
            keep = labels == 1
            tokens, segments = tokens[keep], segments[keep]
        proba = pairs.nsp_probabilities(params, config, tokens, segments)
        out[condition] = float(np.mean(proba[:, 0] > 0.5))
    return out


def _probe_scores(params, config, pool: Sentences, test: Sentences) -> dict:
    """Probe accuracies for the filer and the news, on [CLS] and on the mean of the token vectors."""
    rng = np.random.default_rng(LABELLED_SEED)
    train_rows = rng.choice(pool.count, size=COMPANY_PROBE_SENTENCES, replace=False)
    test_rows = rng.choice(test.count, size=COMPANY_PROBE_SENTENCES, replace=False)
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


def _learning_curves(params, config, seed: int, runs=FINE_TUNINGS) -> dict:
    """Test accuracy of the news classifier at each labelled-set size: frozen probes and fine-tunings."""
    pool_tokens, pool_segments, pool_labels = news_task(pool_sentences(), config)
    test_tokens, test_segments, test_labels = news_task(labelled_sentences(TEST_SEED), config)
    out = {}
    frozen = {pooling: (finetune.pooled_features(params, config, pool_tokens, pool_segments, pooling),
                        finetune.pooled_features(params, config, test_tokens, test_segments, pooling))
              for pooling in ("cls", "mean")}
    for size in SIZES:
        rows = labelled_subset(size, seed, pool_labels.size)
        for pooling, (train_x, test_x) in frozen.items():
            out[f"frozen/{pooling}/{size}"] = probe.fit_and_score(train_x[rows], pool_labels[rows], test_x,
                                                                  test_labels).accuracy
        for mode, pooling in runs:
            settings = replace(FINE_TUNE, mode=mode, pooling=pooling, seed=seed)
            model = finetune.fine_tune(params, config, pool_tokens[rows], pool_segments[rows], pool_labels[rows],
                                       settings, n_classes=2)
            predicted = finetune.classify(model, test_tokens, test_segments).argmax(axis=1)
            out[f"{mode}/{pooling}/{size}"] = float(np.mean(predicted == test_labels))
    return out


def _measure(setup: PairSetup) -> dict:
    """Every number chapter 7 reads from one pre-trained encoder (the encoder is trained on a miss)."""
    model = pretrain(setup)
    params, config = model.params, model.config
    test = labelled_sentences(TEST_SEED)
    rng = np.random.default_rng(TEST_SEED)
    firsts = np.flatnonzero(~test.last)
    a = firsts[rng.choice(firsts.size, size=NSP_TEST_PAIRS, replace=False)]
    pair_tokens, pair_segments = _assemble(test, a, a + 1, config)
    stream = _stream(test)
    starts = rng.integers(0, stream.size - config.encoder.length, size=NSP_TEST_PAIRS)
    packed_tokens, packed_segments = packed_batch(stream, starts, config)
    values = {"mlm/pairs": _mlm_cross_entropy(params, config, pair_tokens[:MLM_TEST_SEQUENCES],
                                              pair_segments[:MLM_TEST_SEQUENCES], setup, TEST_SEED),
              "mlm/packed": _mlm_cross_entropy(params, config, packed_tokens[:MLM_TEST_SEQUENCES],
                                               packed_segments[:MLM_TEST_SEQUENCES], setup, TEST_SEED),
              "mlm/train_last100": float(model.mlm_losses[-100:].mean())}
    if setup.objective == "nsp":
        values.update({f"nsp/{k}": v for k, v in _nsp_accuracies(params, config, test).items()})
    values.update({f"probe/{k}": v for k, v in _probe_scores(params, config, pool_sentences(), test).items()})
    runs = FINE_TUNINGS if setup.objective == "nsp" else COMPARED
    values.update({f"curve/{k}": v for k, v in _learning_curves(params, config, setup.seed, runs).items()})
    values["pretrain_seconds"] = model.seconds
    return values


def filing_pair_encoder(seed: int):
    """Chapter 6's filing encoder at ``seed`` (one of `SEEDS`) as a pair encoder: ``(params, config)``.

    That encoder has no [CLS] and no segments: [CLS] is its [SEP] row (so ``[CLS] s [SEP]``
    reads as the ``[SEP] s [SEP]`` of its training windows), both segment rows are zero and
    the NSP head is zero, so it computes exactly what it was trained to.

    Examples
    --------
    >>> params, config = filing_pair_encoder(SEEDS[0])  # doctest: +BOOK
    >>> bool(np.array_equal(params["cls"], params["E"][SEP_ID])), float(np.abs(params["S"]).max())
    (True, 0.0)
    """
    from mlm_book.artefacts import filing_encoder
    _check_book_seed(seed)
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
    """What identifies chapter 6's encoder at ``seed`` in a cache key: its setup, schedule and training code."""
    import hashlib
    from dataclasses import asdict

    from mlm_book.artefacts import filing_encoder
    setup = filing_encoder.seed_setup(_check_book_seed(seed))
    return {"encoder": asdict(setup), "training": asdict(filing_encoder.training_config(setup)),
            "code": hashlib.sha256(filing_encoder.training_code().encode()).hexdigest()}


def _chapter6(seed: int) -> dict:
    """The news classifier fine-tuned from chapter 6's filing encoder at ``seed`` (3000 steps on windows), the
    head fitted exactly as on the pair encoders."""
    params, config = filing_pair_encoder(seed)
    return {f"curve/{k}": v for k, v in _learning_curves(params, config, seed, COMPARED).items()}


def _scratch(seed: int) -> dict:
    """The news classifier trained from a fresh encoder on the labels alone (full, [CLS] head)."""
    config = PairSetup().config(_vocab_size())
    params = pairs.init_pair_params(config, np.random.default_rng(seed))
    return {f"curve/{k}": v for k, v in _learning_curves(params, config, seed, COMPARED).items()
            if not k.startswith("frozen/")}


_MEASURE_CODE = (*_PRODUCERS, finetune, probe, _measure, _scratch, _chapter6, _learning_curves, _probe_scores, _nsp_accuracies,
                 _mlm_cross_entropy, labelled_subset, news_task, single_inputs, pool_sentences, labelled_sentences,
                 _labelled_sentences)
_MEASURE_KEY = {"sizes": list(SIZES), "nsp_test_pairs": NSP_TEST_PAIRS, "mlm_sequences": MLM_TEST_SEQUENCES,
                "company_sentences": COMPANY_PROBE_SENTENCES,
                "fine_tunings": [list(run) for run in FINE_TUNINGS], "compared": [list(run) for run in COMPARED],
                "fine_tune": FINE_TUNE.__dict__,
                "pool_documents": POOL_DOCUMENTS, "seeds": [LABELLED_SEED, TEST_SEED]}


@functools.cache
def _measure_source() -> str:
    return cache.source_of(_MEASURE_CODE)


def _entry(kind: str, config: dict) -> cache.CacheEntry:
    name = f"pair-{kind}"
    return cache.entry_for(name, {**config, **_MEASURE_KEY}, [_measure_source()])


def _cached_values(kind: str, config: dict, compute) -> dict:
    """``compute()``'s numbers through the cache, under the key `_entry` checks for."""
    def build():
        values = compute()
        return {key: np.asarray(value, dtype=np.float64) for key, value in values.items()}

    arrays, _ = cache.cached(f"pair-{kind}", {**config, **_MEASURE_KEY}, [_measure_source()], build)
    return {key: float(value) for key, value in arrays.items()}


def _check_book_seed(seed) -> int:
    seed = check_positive_int(seed, "seed", minimum=0)
    if seed not in SEEDS:
        raise ValueError(f"seed must be one of the book's seeds {SEEDS} (each is trained once, in the book's pool), "
                         f"got {seed}")
    return seed


def _check_variant(variant) -> str:
    if not isinstance(variant, str):
        raise TypeError(f"variant must be a str, got {type(variant).__name__}")
    if variant not in VARIANTS:
        raise ValueError(f"variant must be one of {sorted(VARIANTS)}, got {variant!r}")
    return variant


def measurements(setup: PairSetup = PairSetup()) -> dict:
    """Every number chapter 7 reads from the encoder of ``setup`` (cached on disk).

    Keys: ``mlm/pairs``, ``mlm/packed`` (held-out masked-LM cross-entropy, nats, in each
    input format), ``nsp/<condition>`` (share called "next": ``next``, ``swapped``, ``same``,
    ``other``; NSP encoders only), ``probe/<fact>/<pooling>`` and
    ``curve/<mode>/<pooling>/<size>`` (test accuracies).
    """
    check_instance(setup, "setup", PairSetup)
    return dict(_measurements(setup))


@functools.cache
def _measurements(setup: PairSetup) -> dict:
    from dataclasses import asdict
    return _cached_values("measurements", asdict(setup), lambda: _measure(setup))


def scratch(seed: int) -> dict:
    """The from-scratch learning curve at ``seed``, one of `SEEDS` (cached): keys ``curve/full/cls/<size>``."""
    _check_book_seed(seed)
    return dict(_by_seed("scratch", seed))


@functools.cache
def _by_seed(kind: str, seed: int) -> dict:
    compute = {"scratch": _scratch, "chapter6": _chapter6}[kind]
    return _cached_values(kind, _seed_config(kind, seed), lambda: compute(seed))


def _seed_config(kind: str, seed: int) -> dict:
    # a run fine-tuning chapter 6's encoder is redone when that encoder is retrained
    return {"seed": seed, **(filing_encoder_key(seed) if kind == "chapter6" else {})}


def chapter6_transfer(seed: int) -> dict:
    """Learning curves of chapter 6's filing encoder at ``seed``, one of `SEEDS`, fine-tuned (cached): keys as in `measurements`."""
    _check_book_seed(seed)
    return dict(_by_seed("chapter6", seed))


VARIANTS = {"nsp": PairSetup(objective="nsp"), "packed": PairSetup(objective="packed"),
            "all-mask": PairSetup(objective="packed", mask=1.0, random=0.0)}
"""The pre-training variants, each trained at every seed of `SEEDS`."""


def book_setups() -> tuple[PairSetup, ...]:
    """Every pre-training the chapter reads: each variant at each seed."""
    return tuple(replace(setup, seed=seed) for setup in VARIANTS.values() for seed in SEEDS)


def _build(work) -> None:
    kind, argument = work
    {"setup": measurements, "scratch": scratch, "chapter6": chapter6_transfer}[kind](argument)


def _is_built(work) -> bool:
    from dataclasses import asdict
    kind, argument = work
    config = asdict(argument) if kind == "setup" else _seed_config(kind, argument)
    return cache.load(_entry("measurements" if kind == "setup" else kind, config)) is not None


def _book_work() -> list:
    return [("setup", setup) for setup in book_setups()] + [(kind, seed) for kind in ("scratch", "chapter6")
                                                            for seed in SEEDS]


def _cost(work) -> float:
    # measured on the cold build of 2026-12-02: a pre-training and its measurements about 5 min,
    # a from-scratch curve about 1.5 min, a chapter-6 transfer about 1 min
    kind, argument = work
    return {"setup": 300.0, "scratch": 90.0, "chapter6": 60.0}[kind]


ARTEFACT_KINDS = (artefacts.Kind(
    name="pair", summary="chapter 7's pair-encoder pre-trainings and fine-tuning curves, 5 seeds each",
    modules=(), after=("filing-encoder",), setups=_book_work, is_built=_is_built, build=_build, cost=_cost,
    describe=lambda work: f"{work[0]}, {'seed ' + str(work[1]) if work[0] != 'setup' else work[1].objective + ' mask ' + format(work[1].mask, 'g') + ' seed ' + str(work[1].seed)}",
    reason="its build code still lives in a chapter module, keyed by a list of that module's functions"),)




# ----------------------------------------------------------------------------- reading the results
def runs(variant: str) -> tuple[dict, ...]:
    """The measurements of a pre-training variant (``"nsp"``, ``"packed"``, ``"all-mask"``) at every seed, the book's first.

    Examples
    --------
    >>> len(runs("nsp")), sorted(runs("nsp")[0])[:2]  # doctest: +BOOK
    (5, ['curve/frozen/cls/1024', 'curve/frozen/cls/16'])
    """
    _check_variant(variant)
    return tuple(measurements(replace(VARIANTS[variant], seed=seed)) for seed in SEEDS)


def scratch_runs() -> tuple[dict, ...]:
    """The from-scratch learning curves at every seed."""
    return tuple(scratch(seed) for seed in SEEDS)


def chapter6_runs() -> tuple[dict, ...]:
    """Chapter 6's filing encoders fine-tuned, at every seed."""
    return tuple(chapter6_transfer(seed) for seed in SEEDS)


def _runs_of(source: str) -> tuple[dict, ...]:
    if not isinstance(source, str):
        raise TypeError(f"source must be a str, got {type(source).__name__}")
    if source not in (*VARIANTS, "scratch", "chapter 6"):
        raise ValueError(f"source must be one of {[*VARIANTS, 'scratch', 'chapter 6']}, got {source!r}")
    return {"scratch": scratch_runs, "chapter 6": chapter6_runs}.get(source, lambda: runs(source))()


def band(source: str, key: str) -> tuple[float, float, float]:
    """``(book seed, mean, sd)`` of one measurement over the seeds (``source`` a variant, ``"scratch"`` or ``"chapter 6"``).

    Examples
    --------
    >>> b, m, s = band("nsp", "mlm/pairs")  # doctest: +BOOK
    >>> 0 < b < 10 and s >= 0
    True
    """
    if not isinstance(key, str):
        raise TypeError(f"key must be a measurement name (str), got {type(key).__name__}")
    found = _runs_of(source)
    if key not in found[0]:
        raise ValueError(f"key must be one of the measurements of {source!r}, got {key!r}")
    values = np.array([run[key] for run in found])
    return float(values[0]), float(values.mean()), float(values.std(ddof=1))


def band_text(source: str, key: str, fmt: str = ".3f") -> str:
    """``"book (mean ± sd)"`` of one measurement over the seeds.

    Examples
    --------
    >>> band_text("scratch", "curve/full/cls/1024", ".2f").count("±")  # doctest: +BOOK
    1
    """
    check_format(fmt, "fmt")
    b, m, s = band(source, key)
    return f"{b:{fmt}} ({m:{fmt}} ± {s:{fmt}})"


NSP_CONDITIONS = {"next": "B is A's next sentence", "swapped": "B is the sentence before A (order swapped)",
                  "same": "B is another sentence of A's filing", "other": "B is a sentence of another filing"}


def nsp_table():
    """The share of test pairs the NSP head calls "next", by condition, book seed (mean ± sd over seeds)."""
    from mlm_book.report import table
    rows = [[text, band_text("nsp", f"nsp/{key}"), "next" if key == "next" else "random"]
            for key, text in NSP_CONDITIONS.items()]
    return table(["test pairs", "called “next”", "right answer"], rows)


def probe_table():
    """Probe accuracies for the filer and the news on [CLS] and on the mean of the token vectors."""
    from mlm_book.report import table
    rows = []
    for fact, label in (("company", "the filing's company (21 classes)"), ("news", "the sentence's news (good/bad)")):
        for pooling, name in (("cls", "[CLS]"), ("mean", "mean of tokens")):
            rows.append([label, name, *(band_text(v, f"probe/{fact}/{pooling}") for v in VARIANTS)])
    return table(["fact", "vector", "MLM + NSP", "MLM, packed", "MLM, all [MASK]"], rows)


# learning-curve lines of the left panel: (source, key stem, label)
CURVES = (("scratch", "full/cls", "from scratch (full, [CLS])"),
          ("nsp", "frozen/mean", "frozen, mean (probe)"),
          ("nsp", "top/cls", "top block, [CLS]"),
          ("nsp", "full/cls", "full, [CLS]"),
          ("nsp", "full/mean", "full, mean"))


def curve_table(source: str):
    """Test accuracy of the news classifier by labelled-set size for every head and mode of ``source``."""
    from mlm_book.report import table
    _runs_of(source)
    stems = ["frozen/cls", "frozen/mean", "top/cls", "full/cls", "full/mean"]
    if source != "nsp":
        stems = ["frozen/cls", "frozen/mean", "full/cls"]
    names = {"frozen/cls": "frozen, [CLS]", "frozen/mean": "frozen, mean", "top/cls": "top block, [CLS]",
             "full/cls": "full, [CLS]", "full/mean": "full, mean"}
    rows = [[names[stem], *(band_text(source, f"curve/{stem}/{size}") for size in SIZES)] for stem in stems]
    rows.append(["from scratch, [CLS]", *(band_text("scratch", f"curve/full/cls/{size}") for size in SIZES)])
    return table(["head", *(f"{size} labels" for size in SIZES)], rows)


# ----------------------------------------------------------------------------- figures
def figure_input():
    """A pair's input as the sum of three tables: token rows, position rows and segment rows (book-seed NSP encoder).

    Examples
    --------
    >>> import matplotlib.pyplot as plt  # doctest: +BOOK
    >>> fig = figure_input()
    >>> len(fig.axes) >= 4
    True
    >>> plt.close(fig)
    """
    from mlm_book.experiments import ch06_finance
    from mlm_book.figures import WIDE, subplots

    model = pretrain(VARIANTS["nsp"])
    params, config = model.params, model.config
    words = ch06_finance.results().vocabulary.words
    text = labelled_sentences(TEST_SEED)
    a = int(np.flatnonzero((~text.last) & (text.lengths <= 6) & (text.lengths[np.minimum(
        np.arange(text.count) + 1, text.count - 1)] <= 6))[0])
    tokens, segments = _assemble(text, np.array([a]), np.array([a + 1]), config)
    n = int(np.sum(tokens[0] != config.pad_id))
    tokens, segments = tokens[0, :n], segments[0, :n]
    labels = ["[CLS]" if t == config.cls_id else words[t] for t in tokens]
    table_rows = np.concatenate([params["E"], params["cls"][None]])
    parts = {"token  E[x]": table_rows[tokens], "position  P": params["P"][:n],
             "segment  S": params["S"][segments]}
    parts["input = sum"] = sum(parts.values())
    fig, axes = subplots(1, 4, width=WIDE, height=3.8, sharey=True)
    for ax, (title, rows) in zip(axes, parts.items()):
        limit = float(np.abs(rows).max())
        ax.imshow(rows[:, :16], cmap="RdBu_r", vmin=-limit, vmax=limit, aspect="auto")
        ax.set_title(f"{title}\nlargest |entry| {limit:.2f}")
        ax.set_xlabel("first 16 of 64 dims")
        ax.set_xticks([])
    axes[0].set_yticks(np.arange(n), [f"{lab}  ({'A' if s == 0 else 'B'})" for lab, s in zip(labels, segments)])
    return fig


def _moving(values: np.ndarray, window: int = 50) -> np.ndarray:
    return np.convolve(values, np.ones(window) / window, mode="valid")


def figure_losses():
    """Pre-training losses: masked-LM of the three variants and the NSP head's, book seed with the other seeds faint.

    Examples
    --------
    >>> import matplotlib.pyplot as plt  # doctest: +BOOK
    >>> fig = figure_losses()
    >>> [ax.get_title() for ax in fig.axes]
    ['masked-LM cross-entropy', 'NSP cross-entropy']
    >>> plt.close(fig)
    """
    from mlm_book.figures import PALETTE, WIDE, subplots
    fig, axes = subplots(1, 2, width=WIDE, height=3.2)
    colors = {"nsp": PALETTE["blue"], "packed": PALETTE["orange"], "all-mask": PALETTE["green"]}
    labels = {"nsp": "MLM + NSP (pairs)", "packed": "MLM, packed", "all-mask": "MLM, packed, all [MASK]"}
    for variant in VARIANTS:
        for k, model in enumerate(pretrained_seeds(variant)):
            curve = _moving(model.mlm_losses)
            axes[0].plot(np.arange(curve.size) + 50, curve, color=colors[variant], lw=2 if k == 0 else 0.8,
                         alpha=1.0 if k == 0 else 0.4, label=labels[variant] if k == 0 else None)
            if variant == "nsp":
                curve = _moving(model.nsp_losses)
                axes[1].plot(np.arange(curve.size) + 50, curve, color=colors[variant], lw=2 if k == 0 else 0.8,
                             alpha=1.0 if k == 0 else 0.4, label="book seed" if k == 0 else None)
    axes[1].axhline(np.log(2), color=PALETTE["black"], ls="--", lw=1, label="chance, ln 2")
    axes[0].set_title("masked-LM cross-entropy")
    axes[1].set_title("NSP cross-entropy")
    for ax in axes:
        ax.set_xlabel("step (moving average of 50)")
        ax.legend(loc="upper right")
    axes[0].set_ylabel("nats")
    return fig


def figure_nsp():
    """Share of test pairs called "next" by condition: every seed's value and the mean.

    Examples
    --------
    >>> import matplotlib.pyplot as plt  # doctest: +BOOK
    >>> fig = figure_nsp()
    >>> len(fig.axes[0].get_xticks())
    4
    >>> plt.close(fig)
    """
    from mlm_book.figures import NARROW, PALETTE, subplots
    fig, ax = subplots(width=NARROW, height=3.2)
    keys = list(NSP_CONDITIONS)
    values = np.array([[run[f"nsp/{key}"] for key in keys] for run in runs("nsp")])
    x = np.arange(len(keys))
    ax.bar(x, values.mean(axis=0), color=[PALETTE["blue"]] + [PALETTE["sky"]] * 3, width=0.6,
           label=f"mean of {len(SEEDS)} seeds")
    for k, row in enumerate(values):
        ax.plot(x, row, ls="none", marker="o" if k == 0 else ".", color=PALETTE["black"],
                label="book seed" if k == 0 else ("other seeds" if k == 1 else None))
    ax.axhline(0.5, color=PALETTE["black"], ls="--", lw=1)
    ax.set_xticks(x, ["next", "swapped", "same filing", "other filing"])
    ax.set_ylabel("share called “next”")
    ax.set_ylim(0, 1)
    ax.legend(loc="upper right")
    return fig


def figure_curves():
    """News-classifier learning curves: MLM + NSP encoder's heads and modes, packed and chapter 6 full fine-tuning, scratch.

    Examples
    --------
    >>> import matplotlib.pyplot as plt  # doctest: +BOOK
    >>> fig = figure_curves()
    >>> [ax.get_title() for ax in fig.axes]
    ['heads and modes (MLM + NSP encoder)', 'full fine-tuning, [CLS] head']
    >>> plt.close(fig)
    """
    from mlm_book.figures import PALETTE, WIDE, subplots
    fig, axes = subplots(1, 2, width=WIDE, height=3.6, sharey=True)
    x = np.array(SIZES)
    heads = [PALETTE["black"], PALETTE["sky"], PALETTE["green"], PALETTE["blue"], PALETTE["orange"]]
    # the right panel's encoders in the loss figure's colours
    encoders = [PALETTE["black"], PALETTE["blue"], PALETTE["orange"], PALETTE["green"], PALETTE["purple"]]
    panels = ((axes[0], CURVES, "heads and modes (MLM + NSP encoder)", heads),
              (axes[1], (("scratch", "full/cls", "from scratch"), ("nsp", "full/cls", "MLM + NSP, 1000 steps"),
                         ("packed", "full/cls", "MLM packed, 1000 steps"),
                         ("all-mask", "full/cls", "MLM packed, all [MASK]"),
                         ("chapter 6", "full/cls", "chapter 6, 3000 steps")), "full fine-tuning, [CLS] head", encoders))
    for ax, lines, title, colors in panels:
        for color, (source, stem, label) in zip(colors, lines):
            values = np.array([[run[f"curve/{stem}/{size}"] for size in SIZES] for run in _runs_of(source)])
            mean, sd = values.mean(axis=0), values.std(axis=0, ddof=1)
            ax.fill_between(x, mean - sd, mean + sd, color=color, alpha=0.15, lw=0)
            ax.plot(x, mean, color=color, marker="o", lw=1.5, label=label)
        ax.set_xscale("log", base=2)
        ax.set_xticks(x, [str(s) for s in SIZES])
        ax.set_xlabel("labelled sentences")
        ax.set_title(title)
        ax.axhline(0.5, color=PALETTE["black"], ls=":", lw=1)
        ax.legend(loc="lower right")
    axes[0].set_ylabel(f"test accuracy (mean ± sd, {len(SEEDS)} seeds)")
    axes[0].set_ylim(0.4, 1.02)
    return fig


# ----------------------------------------------------------------------------- claims
def _seeds_of(*sources: str) -> list[tuple[dict, ...]]:
    """Per seed, one measurement dict per source (the book's seed first)."""
    columns = [_runs_of(source) for source in sources]
    return list(zip(*columns))


def _judged(sources, getter, rule) -> dict:
    rows = _seeds_of(*sources)
    return over_seeds([getter(*row) for row in rows], sum(bool(rule(*row)) for row in rows))


def _balanced(run: dict, negatives: str) -> float:
    return (run["nsp/next"] + 1.0 - run[f"nsp/{negatives}"]) / 2.0


def _claim(id_, quantity, sources, rule_text, getter, rule, expected):
    """A learned claim over the seeds; it passes when its verdict is ``expected``, the one chapter 7 states."""
    return Claim(id_, f"{quantity} ({len(SEEDS)} seeds)", seed="—", rule=rule_text,
                 compute=lambda: _judged(sources, getter, rule), accept=lambda value: True, expected=expected)


def _longest_pair() -> int:
    text = sentences()
    consecutive = ~text.last[:-1]
    return int((text.lengths[:-1] + text.lengths[1:])[consecutive].max()) + 3


CLAIMS = (
    _claim("D-02", "Transfer: full fine-tuning of chapter 6's pre-trained encoder against the same encoder trained "
           "from scratch, news accuracy at 64 labels", ("chapter 6", "scratch"),
           "pre-trained ≥ scratch + 0.02 (a real gain with few labels)",
           lambda pre, base: (pre["curve/full/cls/64"], base["curve/full/cls/64"]),
           lambda pre, base: pre["curve/full/cls/64"] >= base["curve/full/cls/64"] + 0.02, "seed-dependent"),
    _claim("D-14", "80/10/10 against all-[MASK] pre-training at chapter 7's budget, frozen mean-pooled news probe "
           "at 1024 labels (the all-[MASK] encoders are still on the unigram plateau, so this measures the channel's "
           "effect on training, not the pre-train / fine-tune mismatch)", ("packed", "all-mask"),
           "80/10/10 ≥ all-[MASK] + 0.01",
           lambda kept, masked: (kept["curve/frozen/mean/1024"], masked["curve/frozen/mean/1024"]),
           lambda kept, masked: kept["curve/frozen/mean/1024"] >= masked["curve/frozen/mean/1024"] + 0.01,
           "reproduced"),
    _claim("D-18", "NSP is solved by topic: balanced accuracy of the NSP head with other-filing against "
           "same-filing negatives", ("nsp",), "other-filing ≥ same-filing + 0.05",
           lambda run: (_balanced(run, "other"), _balanced(run, "same")),
           lambda run: _balanced(run, "other") >= _balanced(run, "same") + 0.05, "not reproduced"),
    Claim("D-19", "Input [CLS] A [SEP] B [SEP]: slots of the longest pair of consecutive filing sentences",
          seed="—", rule="≤ the encoder's 32 slots (no pair is cut)", compute=_longest_pair,
          accept=lambda value: value <= PairSetup().length, fmt="d"),
    _claim("D-20", "The NSP head learns its task: balanced accuracy with other-filing negatives (its training "
           "distribution)", ("nsp",), "≥ 0.75", lambda run: _balanced(run, "other"),
           lambda run: _balanced(run, "other") >= 0.75, "not reproduced"),
    _claim("D-21", "[CLS] summarises the sequence because NSP trains it: company probe on [CLS] after MLM + NSP "
           "against packed MLM", ("nsp", "packed"), "MLM + NSP ≥ packed + 0.02",
           lambda nsp, packed: (nsp["probe/company/cls"], packed["probe/company/cls"]),
           lambda nsp, packed: nsp["probe/company/cls"] >= packed["probe/company/cls"] + 0.02, "not reproduced"),
    _claim("D-22", "Training without NSP costs nothing downstream: full fine-tuning at 64 / 1024 labels, packed MLM "
           "against MLM + NSP", ("packed", "nsp"), "packed ≥ MLM + NSP − 0.02 at both sizes",
           lambda packed, nsp: tuple(packed[f"curve/full/cls/{n}"] - nsp[f"curve/full/cls/{n}"] for n in (64, 1024)),
           lambda packed, nsp: all(packed[f"curve/full/cls/{n}"] >= nsp[f"curve/full/cls/{n}"] - 0.02
                                   for n in (64, 1024)), "seed-dependent"),
    _claim("D-28", "A [CLS] head and a mean-pooled head after full fine-tuning, 1024 labels", ("nsp",),
           "within 0.02 of each other",
           lambda run: (run["curve/full/cls/1024"], run["curve/full/mean/1024"]),
           lambda run: abs(run["curve/full/cls/1024"] - run["curve/full/mean/1024"]) <= 0.02, "reproduced"),
    _claim("D-29", "Minimal changes suffice: training only the top block against full fine-tuning, 1024 labels",
           ("nsp",), "top block ≥ full − 0.02",
           lambda run: (run["curve/top/cls/1024"], run["curve/full/cls/1024"]),
           lambda run: run["curve/top/cls/1024"] >= run["curve/full/cls/1024"] - 0.02, "seed-dependent"),
)


# ----------------------------------------------------------------------------- more tables
_VARIANT_NAMES = {"nsp": "MLM + NSP", "packed": "MLM, packed", "all-mask": "MLM, packed, all [MASK]"}


def mlm_table():
    """Held-out masked-LM cross-entropy (nats) of each pre-training, on pairs and on packed text."""
    from mlm_book.report import table
    return table(["pre-training", "held-out pairs", "held-out packed text"],
                 [[name, band_text(v, "mlm/pairs"), band_text(v, "mlm/packed")] for v, name in _VARIANT_NAMES.items()])


def mismatch_table():
    """News accuracy after 80/10/10 against all-[MASK] pre-training (packed), by head and labelled-set size."""
    from mlm_book.report import table
    names = {"frozen/cls": "frozen, [CLS]", "frozen/mean": "frozen, mean", "full/cls": "full, [CLS]"}
    rows = [[f"{names[stem]}, {size} labels", band_text("packed", f"curve/{stem}/{size}"),
             band_text("all-mask", f"curve/{stem}/{size}")] for stem in names for size in (64, 1024)]
    return table(["head and labels", "80 / 10 / 10", "100 % [MASK]"], rows)


def transfer_gain(source: str, size: int) -> float:
    """Mean over seeds of full [CLS] fine-tuning's news accuracy minus training from scratch's (same seed and labels).

    Examples
    --------
    >>> transfer_gain("scratch", 64)  # doctest: +BOOK
    0.0
    """
    if isinstance(size, bool) or not isinstance(size, (int, np.integer)) or size not in SIZES:
        raise ValueError(f"size must be one of {SIZES}, got {size!r}")
    key = f"curve/full/cls/{size}"
    return float(np.mean([run[key] - base[key] for run, base in zip(_runs_of(source), scratch_runs())]))


def nsp_balanced_accuracy(negatives: str) -> float:
    """Mean over seeds of the NSP head's balanced accuracy (true next against ``negatives``: "other", "same", "swapped").

    Examples
    --------
    >>> 0.0 <= nsp_balanced_accuracy("other") <= 1.0  # doctest: +BOOK
    True
    """
    if not isinstance(negatives, str) or negatives not in ("other", "same", "swapped"):
        raise ValueError(f"negatives must be 'other', 'same' or 'swapped', got {negatives!r}")
    return float(np.mean([_balanced(run, negatives) for run in runs("nsp")]))


def longest_pair() -> int:
    """Slots of the longest pair of consecutive filing sentences, ``[CLS]`` and both ``[SEP]`` included.

    Examples
    --------
    >>> longest_pair() <= PairSetup().length
    True
    """
    return _longest_pair()


def plateau(variant: str, window: int = 100) -> tuple[float, float]:
    """Mean over seeds of a variant's masked-LM training loss in its first and last ``window`` steps (nats).

    Examples
    --------
    >>> first, last = plateau("packed")  # doctest: +BOOK
    >>> last < first
    True
    """
    window = _check_window(window)
    first = np.mean([model.mlm_losses[:window].mean() for model in pretrained_seeds(variant)])
    return float(first), float(np.mean(final_losses(variant, window)))


def final_losses(variant: str, window: int = 100) -> tuple[float, ...]:
    """Each seed's masked-LM training loss over its last ``window`` steps (nats), the book's seed first.

    Examples
    --------
    >>> len(final_losses("nsp"))  # doctest: +BOOK
    5
    """
    window = _check_window(window)
    return tuple(float(model.mlm_losses[-window:].mean()) for model in pretrained_seeds(variant))


def _check_window(window) -> int:
    window = check_positive_int(window, "window")
    if window > STEPS:
        raise ValueError(f"window must be at most the {STEPS} steps, got {window}")
    return window


def pretrained_seeds(variant: str) -> tuple[PretrainedPair, ...]:
    """The pre-trained encoders of a variant at every seed, the book's first.

    Examples
    --------
    >>> [model.setup.seed for model in pretrained_seeds("nsp")] == list(SEEDS)  # doctest: +BOOK
    True
    """
    _check_variant(variant)
    return tuple(pretrain(replace(VARIANTS[variant], seed=seed)) for seed in SEEDS)


def figure_probes():
    """Probe accuracy for the filing's company and the sentence's news, on [CLS] and on the token mean, per pre-training.

    Examples
    --------
    >>> import matplotlib.pyplot as plt  # doctest: +BOOK
    >>> fig = figure_probes()
    >>> [ax.get_title() for ax in fig.axes]
    ["the filing's company (21 classes)", "the sentence's news (good or bad)"]
    >>> plt.close(fig)
    """
    from mlm_book.figures import PALETTE, WIDE, subplots
    fig, axes = subplots(1, 2, width=WIDE, height=3.4)
    colors = {"nsp": PALETTE["blue"], "packed": PALETTE["orange"], "all-mask": PALETTE["green"]}
    test = labelled_sentences(TEST_SEED)
    chance = {"company": float(np.bincount(test.filer).max() / test.count),
              "news": float(max(np.mean(test.news[test.news != 0] > 0), np.mean(test.news[test.news != 0] < 0)))}
    titles = {"company": "the filing's company (21 classes)", "news": "the sentence's news (good or bad)"}
    width = 0.25
    for ax, fact in zip(axes, ("company", "news")):
        for k, variant in enumerate(VARIANTS):
            for j, pooling in enumerate(("cls", "mean")):
                values = np.array([run[f"probe/{fact}/{pooling}"] for run in runs(variant)])
                x = j + (k - 1) * width
                ax.bar(x, values.mean(), width=width * 0.9, color=colors[variant],
                       label=_VARIANT_NAMES[variant] if j == 0 else None)
                ax.plot(np.full(values.size, x), values, ls="none", marker=".", color=PALETTE["black"])
        ax.axhline(chance[fact], color=PALETTE["black"], ls="--", lw=1, label="largest class share")
        ax.set_xticks([0, 1], ["[CLS]", "mean of tokens"])
        ax.set_title(titles[fact])
        ax.set_ylim(0, 1)
    axes[0].set_ylabel(f"probe accuracy (bars: mean of {len(SEEDS)} seeds)")
    axes[1].legend(loc="lower right")
    return fig
