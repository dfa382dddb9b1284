"""The filings' static baselines, which chapter 6's two halves, chapter 10 and the lab compare the encoder with.

What several chapters read of chapter 6's static side, for the book's filings
([`mlm_book.artefacts.filings`][mlm_book.artefacts.filings]):

* [`baselines`][mlm_book.readings.filing_baselines.baselines]: the majority shares a reader of one
  vector per word type cannot beat on the filings' gold labels (per alias, for *kestrel* alone,
  per news word; [`mlm_book.finance.caps`][mlm_book.finance.caps]) and document-pooled semantic
  orientation of the lexicon ([`mlm_book.finance.orientation`][mlm_book.finance.orientation]);
* [`skipgram_seeds`][mlm_book.readings.filing_baselines.skipgram_seeds]: the skip-gram baseline's
  learned numbers at each of its training seeds, from the artefact
  [`mlm_book.artefacts.skipgram`][mlm_book.artefacts.skipgram].
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

from mlm_book.artefacts import filings, skipgram
from mlm_book.finance.caps import MajorityCap, alias_cap, polarity_cap, word_cap
from mlm_book.finance.orientation import Orientation, semantic_orientation
from mlm_book.validation import check_instance, check_positive_int, check_real

__all__ = ["FilingBaselines", "baselines", "SkipGramSeedRun", "skipgram_seeds"]


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
