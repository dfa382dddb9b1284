"""Semantic orientation on other corpora of the same generator settings, as an artefact.

Chapter 6's corpus seed was chosen among seeds 0-11 on the corpus's counts alone; the accuracy of
document-pooled semantic orientation ([`mlm_book.finance.orientation`][mlm_book.finance.orientation])
on the corpus of each of those seeds shows how much the book's number owes to its seed. A run
generates every corpus ([`mlm_book.finance.corpus`][mlm_book.finance.corpus]) and scores orientation
on it: seconds in all, so the quick tests may compute it. Chapter 6 reads it as
[`orientation_over_corpora`][mlm_book.experiments.ch06_finance.orientation_over_corpora].
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from mlm_book import artefacts, cache
from mlm_book.finance.corpus import CorpusConfig, generate_corpus
from mlm_book.finance.orientation import semantic_orientation
from mlm_book.validation import check_instance, check_positive_int

__all__ = ["SEEDS", "OrientationSetup", "SETUP", "accuracies", "is_built", "ARTEFACT_KINDS"]

SEEDS = tuple(range(12))
"""The corpus seeds the book's was chosen from."""


@dataclass(frozen=True)
class OrientationSetup:
    """The generator's settings and the corpus seeds to score.

    Raises
    ------
    TypeError, ValueError
        If ``corpus`` is not a ``CorpusConfig``, or ``seeds`` not a non-empty tuple of
        non-negative integers.

    Examples
    --------
    >>> SETUP.seeds == SEEDS, SETUP.corpus == CorpusConfig()
    (True, True)
    >>> OrientationSetup(seeds=())
    Traceback (most recent call last):
    ...
    ValueError: seeds must be a non-empty tuple of corpus seeds, got ()

    >>> len(OrientationSetup().seeds)
    12
    """

    corpus: CorpusConfig = field(default_factory=CorpusConfig)
    seeds: tuple = SEEDS

    def __post_init__(self):
        check_instance(self.corpus, "corpus", CorpusConfig)
        if not isinstance(self.seeds, tuple) or not self.seeds:
            raise ValueError(f"seeds must be a non-empty tuple of corpus seeds, got {self.seeds!r:.60}")
        for seed in self.seeds:
            check_positive_int(seed, "seeds", minimum=0)


SETUP = OrientationSetup()
"""Chapter 6's: the book's generator settings, seeds 0-11."""


def _entry(setup: OrientationSetup) -> tuple:
    check_instance(setup, "setup", OrientationSetup)
    return ("orientation-corpora", {"corpus": setup.corpus.as_dict(), "seeds": list(setup.seeds)},
            [artefacts.key_source("orientation-corpora")])


def _score(setup: OrientationSetup) -> dict:
    return {"accuracy": np.array([semantic_orientation(generate_corpus(setup.corpus, np.random.default_rng(seed)))
                                  .accuracy for seed in setup.seeds])}


def accuracies(setup: OrientationSetup = SETUP) -> np.ndarray:
    """``(len(seeds),)`` orientation accuracy on each seed's corpus (from the store; computed on a miss).

    Raises
    ------
    TypeError
        If ``setup`` is not an `OrientationSetup`.

    Examples
    --------
    >>> accuracies().shape
    (12,)
    """
    name, key, producers = _entry(setup)
    arrays, _ = cache.cached(name, key, producers, lambda: _score(setup), book_sized=False)
    return arrays["accuracy"]


def is_built(setup: OrientationSetup) -> bool:
    """Whether the store holds the accuracies of ``setup`` (a damaged entry counts as absent).

    Raises
    ------
    TypeError
        If ``setup`` is not an `OrientationSetup`.

    Examples
    --------
    >>> isinstance(is_built(SETUP), bool)       # chapter 6's twelve corpora: True once they are scored
    True
    """
    return cache.load(cache.entry_for(*_entry(setup))) is not None


# ----------------------------------------------------------------------------- the declaration (not keyed)
#: Seconds per corpus of the book's size on one core (generating it and scoring orientation), measured on 2026-12-03.
_SECONDS_PER_CORPUS = 0.25

ARTEFACT_KINDS = (artefacts.Kind(
    name="orientation-corpora", chapter=6,
    summary="chapter 6's semantic orientation on the corpora of seeds 0-11",
    # nn.runtime: the store keys every entry on the BLAS kernel family it names
    modules=("mlm_book.artefacts.orientation_corpora", "mlm_book.finance.corpus", "mlm_book.finance.orientation",
             "mlm_book.finance.world", "mlm_book.nn.runtime"),
    setups=lambda: (SETUP,), is_built=is_built, build=accuracies,
    cost=lambda setup: _SECONDS_PER_CORPUS * len(setup.seeds) * setup.corpus.n_documents / CorpusConfig().n_documents,
    describe=lambda setup: f"{len(setup.seeds)} corpora",
    tiny=lambda: OrientationSetup(CorpusConfig(n_documents=20), seeds=(0, 1))),)
