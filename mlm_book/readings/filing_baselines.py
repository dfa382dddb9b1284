"""The filings' static baselines, which chapter 6 reports and chapter 7, chapter 11 and the lab compare the encoder with.

What several chapters read of chapter 6's static side, for the book's filings
([`mlm_book.artefacts.filings`][mlm_book.artefacts.filings]):

* [`baselines`][mlm_book.readings.filing_baselines.baselines]: the majority shares a reader of one
  vector per word type cannot beat on the filings' gold labels (per alias, for *kestrel* alone,
  per news word; [`mlm_book.finance.caps`][mlm_book.finance.caps]) and document-pooled semantic
  orientation of the lexicon ([`mlm_book.finance.orientation`][mlm_book.finance.orientation]);
* [`unigram_cross_entropy`][mlm_book.readings.filing_baselines.unigram_cross_entropy]: the loss of
  predicting every token by its corpus frequency, the floor a masked LM must go below;
* [`skipgram_seeds`][mlm_book.readings.filing_baselines.skipgram_seeds]: the skip-gram baseline's
  learned numbers at each of its training seeds, from the artefact
  [`mlm_book.artefacts.skipgram`][mlm_book.artefacts.skipgram].
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np

from mlm_book.artefacts import filings, skipgram
from mlm_book.finance.caps import MajorityCap, alias_cap, polarity_cap, word_cap
from mlm_book.finance.orientation import Orientation, semantic_orientation
from mlm_book.validation import check_instance, check_positive_int, check_real, check_tokens

__all__ = ["FilingBaselines", "baselines", "unigram_entropy", "unigram_cross_entropy", "SkipGramSeedRun", "skipgram_seeds"]


@dataclass(frozen=True, eq=False)
class FilingBaselines:
    """The static baselines of one set of filings.

    Attributes
    ----------
    setup : FilingsSetup
        Which filings.
    alias_cap : MajorityCap
        Per-alias majority of the company/product type (the static cap of typing).
    kestrel_cap : MajorityCap
        The majority type of *kestrel*'s typed mentions.
    polarity_cap : MajorityCap
        Per-word majority of the news polarity over the polarity probe's words.
    orientation : Orientation
        Document-pooled semantic orientation of the lexicon words.

    Raises
    ------
    TypeError
        If a field is not of its type.

    Examples
    --------
    >>> b = baselines()
    >>> round(FilingBaselines(**{**vars(b), "kestrel_cap": b.alias_cap}).kestrel_cap.accuracy, 3)
    0.85
    """

    setup: filings.FilingsSetup
    alias_cap: MajorityCap
    kestrel_cap: MajorityCap
    polarity_cap: MajorityCap
    orientation: Orientation

    def __post_init__(self):
        check_instance(self.setup, "setup", filings.FilingsSetup)
        for name in ("alias_cap", "kestrel_cap", "polarity_cap"):
            check_instance(getattr(self, name), name, MajorityCap)
        check_instance(self.orientation, "orientation", Orientation)


def baselines(setup: filings.FilingsSetup | None = None) -> FilingBaselines:
    """The static baselines of the filings of ``setup`` (default the book's), memoised per setup.

    Raises
    ------
    TypeError
        If ``setup`` is not a ``FilingsSetup`` (or ``None``).

    Examples
    --------
    >>> b = baselines()
    >>> round(b.alias_cap.accuracy, 3), b is baselines()
    (0.85, True)
    """
    return _baselines(filings.FilingsSetup() if setup is None else check_instance(setup, "setup", filings.FilingsSetup))


@functools.cache
def _baselines(setup: filings.FilingsSetup) -> FilingBaselines:
    corpus = filings.filings(setup).corpus
    return FilingBaselines(setup=setup, alias_cap=alias_cap(corpus), kestrel_cap=word_cap(corpus, "kestrel"),
                           polarity_cap=polarity_cap(corpus, setup.polarity_min_count),
                           orientation=semantic_orientation(corpus))


@dataclass(frozen=True)
class SkipGramSeedRun:
    """The skip-gram baseline's learned numbers for one training seed (same filings, same settings).

    Parameters
    ----------
    seed : int
        Seed of the training (initialisation, pair order, noise words).
    final_loss : float
        Mean loss per (word, context) pair in the last epoch (nats).
    typing : float
        Company/product typing accuracy, leave one alias out.
    lexicon : float
        Leave-one-out polarity accuracy on the 35 lexicon words' vectors.
    neighbour_agreement : float
        Mean share of a lexicon word's ``NEIGHBOURS_K`` (of [`mlm_book.artefacts.skipgram`][mlm_book.artefacts.skipgram]) nearest lexicon words with its polarity.

    Raises
    ------
    TypeError
        If ``seed`` is not an integer or a number is not real.
    ValueError
        If ``seed`` is negative, ``final_loss`` negative or not finite, or an accuracy or share
        outside [0, 1].

    Examples
    --------
    >>> SkipGramSeedRun(seed=0, final_loss=2.0, typing=0.85, lexicon=0.9, neighbour_agreement=0.5).lexicon
    0.9
    >>> SkipGramSeedRun(seed=0, final_loss=2.0, typing=0.85, lexicon=1.5, neighbour_agreement=0.5)
    Traceback (most recent call last):
    ...
    ValueError: lexicon must be a finite number in [0.0, 1.0], got 1.5
    """

    seed: int
    final_loss: float
    typing: float
    lexicon: float
    neighbour_agreement: float

    def __post_init__(self):
        check_positive_int(self.seed, "seed", minimum=0)
        check_real(self.final_loss, "final_loss", low=0.0)
        for name in ("typing", "lexicon", "neighbour_agreement"):
            check_real(getattr(self, name), name, low=0.0, high=1.0)


def unigram_entropy(ids, size: int) -> float:
    """The entropy, in nats, of the token frequencies of ``ids``: a predictor that ignores all context.

    Parameters
    ----------
    ids : array of int, shape (n,)
        Token ids, each in ``[0, size)``.
    size : int
        Vocabulary size.

    Raises
    ------
    TypeError, ValueError
        If ``size`` is not a positive int, or ``ids`` is not a non-empty 1-D array of ids in range.

    Examples
    --------
    >>> round(unigram_entropy([0, 1, 0, 1], 3), 6) == round(float(np.log(2)), 6)
    True
    """
    size = check_positive_int(size, "size")
    ids = check_tokens(ids, "ids", size, ndim=1)
    if ids.size == 0:
        raise ValueError("ids must hold at least one token")
    _, counts = np.unique(ids, return_counts=True)  # the tokens that occur, in id order: nothing sized by size
    p = counts.astype(np.float64) / ids.size
    return float(-(p * np.log(p)).sum())


def unigram_cross_entropy(setup: filings.FilingsSetup | None = None) -> float:
    """The filings' unigram entropy over their token ids (word pieces of the vocabulary, ``[UNK]`` included).

    Examples
    --------
    >>> 4.0 < unigram_cross_entropy() < 6.0  # doctest: +BOOK
    True
    """
    book = filings.filings(setup)
    return unigram_entropy(book.ids, book.vocabulary.size)


def skipgram_seeds(setup: skipgram.SeedRunsSetup = skipgram.SEED_RUNS) -> tuple[SkipGramSeedRun, ...]:
    """The skip-gram baseline's learned numbers at each training seed of ``setup``, the book's first (memoised).

    Every seed trains on the same filings with the same settings; only the training seed
    (initialisation, pair order, noise words) changes. The numbers are the stored artefact
    [`skipgram.seed_runs`][mlm_book.artefacts.skipgram.seed_runs].

    Raises
    ------
    TypeError
        If ``setup`` is not a ``SeedRunsSetup``.

    Examples
    --------
    >>> runs = skipgram_seeds()  # doctest: +BOOK
    >>> [run.seed for run in runs]
    [0, 1, 2, 3, 4]
    """
    return _skipgram_seeds(check_instance(setup, "setup", skipgram.SeedRunsSetup))


@functools.cache
def _skipgram_seeds(setup: skipgram.SeedRunsSetup) -> tuple[SkipGramSeedRun, ...]:
    values = skipgram.seed_runs(setup)
    return tuple(SkipGramSeedRun(model.seed, *map(float, row)) for model, row in zip(setup.models, values))
