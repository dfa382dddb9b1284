r"""Chapter 7's prompting against fine-tuning: a cloze prompt read through the filing encoder's masked-LM head,
and the same encoder fine-tuned on k labelled sentences.

**The task** ([`task_sentences`][mlm_book.artefacts.prompting.task_sentences]). Is a sentence's evaluation
positive or negative? The sentences are the filings' *lexicon sentences* ("demand in rail remained
strong", "the group reported a weak performance in mining") whose lexicon words all have one dictionary
polarity (a one-word sentence, or two words of the same polarity; the contrast sentences and two-word
sentences of mixed polarity have no single answer and are left out). The gold is that polarity
(class 1 positive, 0 negative). Training sentences come from the encoder's training filings, test
sentences from its held-out filings (chapter 7's split): the test set is every task sentence of the 60
held-out filings, fixed.

**The cloze prompt** (zero-shot, no training). The template is one of the filings' own tone sentences,
the only one with no other slot: "<sentence> [SEP] overall it was a [MASK] year for the group"
([`TEMPLATE`][mlm_book.artefacts.prompting.TEMPLATE]). The verbaliser maps each class to the filings'
own tone words, the semantic-orientation seeds of chapter 6
([`VERBALISER`][mlm_book.artefacts.prompting.VERBALISER]): positive to *good, excellent, successful*,
negative to *bad, poor, unsuccessful*. The prompt is read as a short document of its own, at the centre
of the [MASK]'s own centred window (the book's reading of every token); a class's score is the summed
probability of its words at the [MASK], and the prompt answers the class with the larger score.

**Fine-tuning** ([`mlm_book.nn.encoder_finetune`][mlm_book.nn.encoder_finetune]). The sentence alone is
read as a short document of its own in the one window centred on its last token; a softmax head reads
the mean of the final-LayerNorm vectors of the sentence's tokens, and every array it reads trains.
``k`` training sentences are drawn at random, ``k / 2`` of each class
([`draw_examples`][mlm_book.artefacts.prompting.draw_examples]), for each ``k`` of the grid and each of
``draws`` draws; the draw and the run are seeded by the encoder's seed, ``k`` and the draw. The recipe
([`PromptingSetup`][mlm_book.artefacts.prompting.PromptingSetup]) was fixed from the training loss
curve of one pilot run, before any test accuracy was computed: the book's encoder, 128 sentences of a draw
that no book run uses, batch 16, peak rate 1e-3 warmed up over a tenth of 400 steps. Its training loss fell
from 0.71 to 0.003 by step 80, ten passes over the 128 sentences, and stayed there: so a run takes ten
passes over its ``k`` sentences, at least 100 steps (the small ``k``, whose ten passes are a few steps) and
at most 600.
"""

from __future__ import annotations

import functools
import math
import time
from dataclasses import asdict, dataclass

import numpy as np

from mlm_book import artefacts, cache
from mlm_book.artefacts import filing_encoder as fe
from mlm_book.finance.vocab import MASK, SEP
from mlm_book.finance.windows import centre_position, centred_windows
from mlm_book.finance.world import NEGATIVE_SEEDS, POSITIVE_SEEDS
from mlm_book.nn import encoder as enc
from mlm_book.nn import encoder_finetune as eft
from mlm_book.nn import runtime
from mlm_book.validation import (
    as_int_array,
    check_generator,
    check_instance,
    check_positive_int,
)

__all__ = ["TEMPLATE", "VERBALISER", "CLASS_NAMES", "KS", "DRAWS", "DRAW_SEED", "TaskSentences", "task_sentences",
           "verbaliser_ids", "prompt_windows", "sentence_windows", "draw_examples", "PromptingSetup",
           "book_setups", "recipe", "prompting_run", "is_built", "tiny_setup", "ARTEFACT_KINDS"]

TEMPLATE = ("overall", "it", "was", "a", MASK, "year", "for", "the", "group")
"""The words after the sentence and its ``[SEP]``: a tone sentence of the filings with its seed word masked."""

VERBALISER = (NEGATIVE_SEEDS, POSITIVE_SEEDS)
"""The words of each class (0 negative, 1 positive): the filings' tone words."""

CLASS_NAMES = ("negative", "positive")
"""Class 0 and class 1."""

KS = (8, 32, 128, 512)
"""Labelled training sentences of the grid, ``k / 2`` per class; the whole balanced pool is added as the last
``k`` (the training filings hold fewer than 1024 task sentences)."""

DRAWS = 3
"""Draws of the ``k`` training sentences (each fine-tuned once) per encoder seed and ``k``."""

DRAW_SEED = 2707
"""Draw ``r`` of ``k`` sentences for the encoder of seed ``s`` uses ``default_rng([DRAW_SEED, s, k, r])``."""


@dataclass(frozen=True, eq=False)
class TaskSentences:
    """The task's sentences of one side of the split.

    Attributes
    ----------
    starts, stops : numpy.ndarray of int, shape (m,)
        Stream indices of each sentence's first token and one past its last word (its ``[SEP]`` left out).
    labels : numpy.ndarray of int, shape (m,)
        1 if the sentence's lexicon words are positive, 0 if negative.

    Examples
    --------
    The first two test sentences; a sentence is the stream's tokens from its start to its stop:

    >>> train, test = task_sentences()
    >>> first = TaskSentences(test.starts[:2], test.stops[:2], test.labels[:2])
    >>> first.size, first.labels.tolist()
    (2, [0, 1])
    >>> fe.filing_world().corpus.tokens[first.starts[0]:first.stops[0]].tolist()     # "subdued": negative
    ['merlin', 'enters', '2009', 'with', 'a', 'subdued', 'results']

    Raises
    ------
    TypeError, ValueError
        If a field is not a 1-D integer array, they differ in length, a start is negative or not before
        its stop, or a label is not 0 or 1.
    """

    starts: np.ndarray
    stops: np.ndarray
    labels: np.ndarray

    def __post_init__(self):
        starts, stops, labels = (as_int_array(getattr(self, name), name, ndim=1)
                                 for name in ("starts", "stops", "labels"))
        if not starts.shape == stops.shape == labels.shape:
            raise ValueError(f"starts, stops and labels must hold one entry per sentence, got shapes "
                             f"{starts.shape}, {stops.shape} and {labels.shape}")
        if starts.size and (starts.min() < 0 or np.any(stops <= starts)):
            raise ValueError("starts must be non-negative stream indices, each before its sentence's stop in stops "
                             "(a sentence has at least one word)")
        if labels.size and (labels.min() < 0 or labels.max() > 1):
            raise ValueError(f"labels must be classes 0 and 1, got values from {labels.min()} to {labels.max()}")
        object.__setattr__(self, "starts", starts)
        object.__setattr__(self, "stops", stops)
        object.__setattr__(self, "labels", labels)

    @property
    def size(self) -> int:
        """Number of sentences."""
        return int(self.starts.size)


@functools.cache
def task_sentences(setup: fe.FilingEncoderSetup = fe.SETUP) -> tuple[TaskSentences, TaskSentences]:
    """The task's training and test sentences for the split of ``setup`` (training filings, held-out filings).

    Raises
    ------
    TypeError
        If ``setup`` is not a ``FilingEncoderSetup``.

    Examples
    --------
    >>> train, test = task_sentences()
    >>> train.size, test.size, int(test.labels.sum())
    (732, 163, 93)
    """
    check_instance(setup, "setup", fe.FilingEncoderSetup)
    corpus = fe.filing_world().corpus
    sentence, lexicon = corpus.sentence, corpus.lexicon
    n = int(sentence.max()) + 1
    positive = np.bincount(sentence[lexicon > 0], minlength=n) > 0
    negative = np.bincount(sentence[lexicon < 0], minlength=n) > 0
    words = corpus.tokens != SEP
    first = np.full(n, -1)
    first[sentence[::-1]] = np.arange(corpus.n_tokens)[::-1]
    stop = np.zeros(n, dtype=np.int64)
    stop[sentence[words]] = np.flatnonzero(words) + 1
    held = np.zeros(corpus.n_tokens, dtype=bool)
    held[fe.split(setup).test_tokens] = True
    in_test = np.zeros(n, dtype=bool)
    in_test[sentence[held]] = True
    chosen = positive ^ negative
    out = []
    for side in (~in_test, in_test):
        index = np.flatnonzero(chosen & side)
        out.append(TaskSentences(first[index], stop[index], positive[index].astype(np.int64)))
    return out[0], out[1]


def verbaliser_ids() -> np.ndarray:
    """Vocabulary ids of the verbaliser's words, shape ``(2, 3)``: row ``c`` holds class ``c``'s.

    Examples
    --------
    >>> ids = verbaliser_ids()
    >>> fe.filing_world().vocabulary.decode(ids[1])
    ['good', 'excellent', 'successful']
    """
    vocabulary = fe.filing_world().vocabulary
    return np.array([[vocabulary.lookup(word) for word in words] for words in VERBALISER], dtype=np.int64)


def _check_reading(sentences, config) -> None:
    """Refuse ``sentences`` and ``config`` unless they are task sentences of chapter 6's stream and a filing encoder's shape."""
    check_instance(sentences, "sentences", TaskSentences)
    world = fe.filing_world()
    if sentences.size == 0 or sentences.stops.max() > world.ids.size:
        raise ValueError(f"sentences must hold at least one sentence of chapter 6's stream ({world.ids.size} tokens)")
    check_instance(config, "config", enc.EncoderConfig)
    if not (config.pad and config.vocab_size == world.vocabulary.size):
        raise ValueError(f"config must be a filing encoder's (with [PAD], over chapter 6's {world.vocabulary.size} "
                         f"words), got {config!r}")


def _short_documents(pieces: list[np.ndarray], read: np.ndarray, length: int, pad_id: int) -> np.ndarray:
    """Each id array of ``pieces`` as a document of its own, read in the window centred on its slot ``read[i]``."""
    sizes = np.array([piece.size for piece in pieces])
    stream = np.concatenate(pieces)
    document = np.repeat(np.arange(len(pieces)), sizes)
    select = np.concatenate([[0], np.cumsum(sizes)[:-1]]) + read
    windows, _ = centred_windows(stream, document, length=length, pad_id=pad_id, select=select)
    return windows


def prompt_windows(sentences: TaskSentences, config) -> np.ndarray:
    """The prompt of every sentence, "<sentence> [SEP] overall it was a [MASK] year for the group", shape ``(m, n)``.

    Each prompt is a document of its own, read in the window centred on its [MASK]; every word of the
    sentence is in the window (the task's sentences have at most 11 words).

    Parameters
    ----------
    sentences : TaskSentences
        The sentences (of chapter 6's stream).
    config : mlm_book.nn.encoder.EncoderConfig
        The filing encoder's shape: its window length, [MASK] and [PAD] ids.

    Returns
    -------
    numpy.ndarray of int, shape (m, n)
        One window per sentence, [PAD] outside the prompt.

    Raises
    ------
    TypeError, ValueError
        If ``sentences`` is not non-empty `TaskSentences` of chapter 6's stream, ``config`` is not a filing
        encoder's, or a prompt is too long for the window.

    Examples
    --------
    >>> train, test = task_sentences()
    >>> config = fe.SETUP.encoder(fe.filing_world().vocabulary.size)
    >>> windows = prompt_windows(test, config)
    >>> centre = centre_position(config.length)
    >>> windows.shape, bool(np.all(windows[:, centre] == config.mask_id))      # every [MASK] at the centre
    ((163, 32), True)
    >>> row = windows[0]
    >>> " ".join(fe.filing_world().vocabulary.decode(row[row != config.pad_id]))
    'merlin enters 2009 with a subdued results [SEP] overall it was a [MASK] year for the group'
    """
    _check_reading(sentences, config)
    world = fe.filing_world()
    vocabulary, ids = world.vocabulary, world.ids
    template = np.array([config.mask_id if word == MASK else vocabulary.lookup(word) for word in TEMPLATE])
    pieces = [np.concatenate([ids[a:b], [vocabulary.index[SEP]], template]) for a, b in
              zip(sentences.starts.tolist(), sentences.stops.tolist())]
    at = np.array([piece.size - len(TEMPLATE) + TEMPLATE.index(MASK) for piece in pieces])
    if at.max() > centre_position(config.length):
        raise ValueError("a sentence is too long for its prompt's window")
    return _short_documents(pieces, at, config.length, config.pad_id)


def sentence_windows(sentences: TaskSentences, config) -> tuple[np.ndarray, np.ndarray]:
    """Every sentence alone, a document of its own read in the window centred on its last word: ``(windows, pool)``.

    ``pool`` marks the sentence's words (the slots the classifier's head averages).

    Parameters
    ----------
    sentences : TaskSentences
        The sentences (of chapter 6's stream).
    config : mlm_book.nn.encoder.EncoderConfig
        The filing encoder's shape: its window length and [PAD] id.

    Returns
    -------
    windows : numpy.ndarray of int, shape (m, n)
    pool : numpy.ndarray of bool, shape (m, n)

    Raises
    ------
    TypeError, ValueError
        If ``sentences`` is not non-empty `TaskSentences` of chapter 6's stream, or ``config`` is not a
        filing encoder's.

    Examples
    --------
    >>> train, test = task_sentences()
    >>> config = fe.SETUP.encoder(fe.filing_world().vocabulary.size)
    >>> windows, pool = sentence_windows(test, config)
    >>> windows.shape, bool(np.all(pool.sum(axis=1) == test.stops - test.starts))   # every word pooled, only words
    ((163, 32), True)
    """
    _check_reading(sentences, config)
    world = fe.filing_world()
    pieces = [world.ids[a:b] for a, b in zip(sentences.starts.tolist(), sentences.stops.tolist())]
    windows = _short_documents(pieces, np.array([piece.size - 1 for piece in pieces]), config.length, config.pad_id)
    return windows, windows != config.pad_id


def draw_examples(labels: np.ndarray, k: int, rng: np.random.Generator) -> np.ndarray:
    """Indices of ``k`` examples, ``k / 2`` of each class, drawn without replacement (sorted).

    Raises
    ------
    ValueError
        If ``k`` is odd or a class has fewer than ``k / 2`` examples.

    Examples
    --------
    >>> draw_examples(np.array([0, 0, 1, 1, 1]), 4, np.random.default_rng(0)).size
    4
    """
    labels = as_int_array(labels, "labels", ndim=1)
    if labels.size and (labels.min() < 0 or labels.max() > 1):
        raise ValueError(f"labels must be classes 0 and 1, got values from {labels.min()} to {labels.max()}")
    k = check_positive_int(k, "k", minimum=2)
    if k % 2:
        raise ValueError(f"k must be even (k / 2 examples per class), got {k}")
    rng = check_generator(rng)
    picks = []
    for label in (0, 1):
        pool = np.flatnonzero(labels == label)
        if pool.size < k // 2:
            raise ValueError(f"labels must hold k / 2 = {k // 2} examples of class {label} for k = {k}, "
                             f"got {pool.size}")
        picks.append(rng.choice(pool, size=k // 2, replace=False))
    return np.sort(np.concatenate(picks))


@dataclass(frozen=True)
class PromptingSetup:
    """One filing encoder's prompt and fine-tuning runs.

    Attributes
    ----------
    encoder : FilingEncoderSetup
        The filing encoder read and fine-tuned.
    ks : tuple of int
        Training sentences per run, ``k / 2`` per class (even, increasing).
    draws : int
        Draws of the training sentences per ``k``.
    draw_seed : int
        See [`DRAW_SEED`][mlm_book.artefacts.prompting.DRAW_SEED].
    batch_size : int
        Rows per step (at most ``k``).
    epochs : float
        Passes over the ``k`` sentences that set the steps, ``ceil(epochs * k / batch)``, ...
    min_steps, max_steps : int
        ... with a floor (small ``k``) and a ceiling.
    lr, warmup_share, weight_decay : float
        Peak rate, warm-up share and AdamW decay.

    Examples
    --------
    >>> PromptingSetup(fe.SETUP, ks=(8, 7))
    Traceback (most recent call last):
    ...
    ValueError: ks must be even and increasing, got (8, 7)

    >>> from mlm_book.artefacts.filing_encoder import FilingEncoderSetup
    >>> PromptingSetup(FilingEncoderSetup(steps=3), ks=(2, 4), draws=1).ks
    (2, 4)
    """

    encoder: fe.FilingEncoderSetup
    ks: tuple = KS
    draws: int = DRAWS
    draw_seed: int = DRAW_SEED
    batch_size: int = 16
    epochs: float = 10.0
    min_steps: int = 100
    max_steps: int = 600
    lr: float = 1e-3
    warmup_share: float = 0.1
    weight_decay: float = 0.01

    def __post_init__(self):
        check_instance(self.encoder, "encoder", fe.FilingEncoderSetup)
        if (not isinstance(self.ks, tuple) or not self.ks or any(isinstance(k, bool) or not isinstance(k, int)
                                                                 or k < 2 or k % 2 for k in self.ks)
                or list(self.ks) != sorted(set(self.ks))):
            raise ValueError(f"ks must be even and increasing, got {self.ks}")
        for name in ("draws", "batch_size", "min_steps", "max_steps"):
            check_positive_int(getattr(self, name), name)
        check_positive_int(self.draw_seed, "draw_seed", minimum=0)
        if self.min_steps > self.max_steps:
            raise ValueError(f"min_steps must be at most max_steps, got {self.min_steps} > {self.max_steps}")
        if not (isinstance(self.epochs, (int, float)) and self.epochs > 0 and math.isfinite(self.epochs)):
            raise ValueError(f"epochs must be a positive number, got {self.epochs!r}")
        eft.ClassifierConfig(lr=self.lr, warmup_share=self.warmup_share, weight_decay=self.weight_decay)


def recipe(setup: PromptingSetup, k: int, draw: int) -> eft.ClassifierConfig:
    """The fine-tuning settings of the run on ``k`` sentences, draw ``draw``.

    Examples
    --------
    >>> [recipe(book_setups()[0], k, 0).steps for k in (8, 128, 512)]
    [100, 100, 320]
    """
    check_instance(setup, "setup", PromptingSetup)
    k = check_positive_int(k, "k")
    draw = check_positive_int(draw, "draw", minimum=0)
    batch = min(setup.batch_size, k)
    steps = min(setup.max_steps, max(setup.min_steps, math.ceil(setup.epochs * k / batch)))
    return eft.ClassifierConfig(steps=steps, batch_size=batch, lr=setup.lr, warmup_share=setup.warmup_share,
                                weight_decay=setup.weight_decay, seed=_run_seed(setup, k, draw))


def _run_seed(setup: PromptingSetup, k: int, draw: int) -> int:
    return int(np.random.default_rng([setup.draw_seed, setup.encoder.seed, k, draw, 1]).integers(2**31))


def _largest_balanced_k(encoder: fe.FilingEncoderSetup) -> int:
    train, _ = task_sentences(encoder)
    return 2 * int(min(np.sum(train.labels == 0), np.sum(train.labels == 1)))


def _measure(setup: PromptingSetup) -> tuple[dict, dict]:
    start = time.perf_counter()
    result = fe.trained_encoder(setup.encoder)
    config, params = result.encoder, result.params
    train, test = task_sentences(setup.encoder)
    # the prompt: the verbaliser's words' probabilities at the [MASK]
    windows = prompt_windows(test, config)
    centre = centre_position(config.length)
    ids = verbaliser_ids()
    q = np.concatenate([enc.predict_proba(params, config, windows[s:s + 256])[:, centre]
                        for s in range(0, windows.shape[0], 256)])
    prompt_words = q[:, ids.reshape(-1)]
    # fine-tuning, k sentences a run
    train_windows, train_pool = sentence_windows(train, config)
    test_windows, test_pool = sentence_windows(test, config)
    proba = np.empty((len(setup.ks), setup.draws, test.size))
    final_loss = np.empty((len(setup.ks), setup.draws))
    for i, k in enumerate(setup.ks):
        for r in range(setup.draws):
            rows = draw_examples(train.labels, k, np.random.default_rng([setup.draw_seed, setup.encoder.seed, k, r]))
            model = eft.fine_tune_classifier(params, config, train_windows[rows], train_pool[rows], train.labels[rows],
                                             recipe(setup, k, r), n_classes=2)
            proba[i, r] = eft.classifier_proba(model, test_windows, test_pool)[:, 1]
            final_loss[i, r] = float(model.losses[-max(1, model.losses.size // 10):].mean())
    arrays = {"prompt_words": prompt_words, "test_labels": test.labels, "ft_positive": proba,
              "ft_final_loss": final_loss, "ks": np.array(setup.ks)}
    return arrays, {"seconds": time.perf_counter() - start, "n_train": train.size, "n_test": test.size}


def _entry(setup: PromptingSetup) -> tuple:
    key = {"setup": asdict(check_instance(setup, "setup", PromptingSetup)),
           "encoder": fe.identity(setup.encoder), "source": fe.source_key(setup.encoder),
           "template": list(TEMPLATE), "verbaliser": [list(words) for words in VERBALISER]}
    return f"filing-prompting-{setup.encoder.seed}", key, [artefacts.key_source("filing-prompting")]


def prompting_run(setup: PromptingSetup) -> tuple[dict, dict]:
    """The runs of ``setup`` (from the store; computed on a miss): ``(arrays, metadata)``.

    ``arrays``: ``prompt_words`` ``(n_test, 6)``, the probability of each verbaliser word at the [MASK]
    (class 0's three, then class 1's); ``test_labels``; ``ft_positive`` ``(len(ks), draws, n_test)``, each
    fine-tuned classifier's probability of class 1; ``ft_final_loss``, the mean training loss of each run's
    last tenth of steps; ``ks``.

    Raises
    ------
    TypeError
        If ``setup`` is not a `PromptingSetup`.
    """
    name, key, producers = _entry(setup)

    def build():
        with runtime.blas_threads(1):
            return _measure(setup)

    return cache.cached(name, key, producers, build)


def is_built(setup: PromptingSetup) -> bool:
    """Whether the store holds the runs of ``setup`` (a damaged entry counts as absent).

    Raises
    ------
    TypeError
        If ``setup`` is not a `PromptingSetup`.

    Examples
    --------
    The book's run at its first seed (the answer depends on what the store holds; asking builds nothing):

    >>> isinstance(is_built(book_setups()[0]), bool)
    True
    """
    return cache.load(cache.entry_for(*_entry(setup))) is not None


# ----------------------------------------------------------------------------- the declaration (not keyed)
def book_setups() -> tuple[PromptingSetup, ...]:
    """One setup per filing encoder seed, the book's first; the grid ends with the whole balanced pool."""
    k_all = _largest_balanced_k(fe.SETUP)
    return tuple(PromptingSetup(fe.seed_setup(seed), ks=KS + ((k_all,) if k_all > KS[-1] else ()))
                 for seed in fe.SEEDS)


def tiny_setup() -> PromptingSetup:
    """The same code in seconds: the tiny filing encoder, two small ``k``, one draw, three steps a run.

    Examples
    --------
    >>> tiny_setup().ks, tiny_setup().draws
    ((2, 4), 1)
    """
    return PromptingSetup(fe.tiny_setup(), ks=(2, 4), draws=1, min_steps=3, max_steps=3, epochs=1.0)


#: Seconds of one fine-tuning step of batch 16 on one core, plus the prompt's and the evaluations' forward
#: passes. The first build of the five seeds took 2 min 29 s of wall time on the 2-core machine while another
#: build shared it (4 min 32 s of worker time, 26 s for a seed that ran alone): about 0.017 s a step there.
_SECONDS_PER_STEP = 0.017
_SECONDS_FIXED = 5.0


def _cost(setup: PromptingSetup) -> float:
    steps = sum(recipe(setup, k, 0).steps * min(setup.batch_size, k) / 16 for k in setup.ks) * setup.draws
    return _SECONDS_FIXED + _SECONDS_PER_STEP * steps


ARTEFACT_KINDS = (artefacts.Kind(
    name="filing-prompting", chapter=7,
    summary="chapter 7's cloze prompt and k-shot fine-tuning on the filing encoder, one run per seed",
    modules=("mlm_book.artefacts.prompting", "mlm_book.nn.encoder_finetune"), after=("filing-encoder",),
    setups=book_setups, is_built=is_built, build=prompting_run, cost=_cost,
    describe=lambda setup: f"seed {setup.encoder.seed}, k up to {setup.ks[-1]}", tiny=tiny_setup),)
