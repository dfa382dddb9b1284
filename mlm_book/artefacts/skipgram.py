"""Chapter 6's static baseline as artefacts: skip-gram vectors of the filings, and what they say at each seed.

Two kinds. **skipgram**: word2vec's skip-gram with negative sampling
([`mlm_book.finance.skipgram`][mlm_book.finance.skipgram]) trained on the book's filings
([`mlm_book.artefacts.filings`][mlm_book.artefacts.filings]), one run per training seed: the
book's (`SETUP`) and the next four (a few seconds each, so the quick tests may train one).
**skipgram-seeds**: at each of those seeds, the numbers chapter 6 reports of the vectors (the
last epoch's loss, the company/product typing probe, the lexicon-polarity probe and the share of
same-polarity lexicon neighbours, [`mlm_book.finance.word_vectors`][mlm_book.finance.word_vectors]),
whose leave-one-out probes take seconds per seed. Chapters 6 and 7 read both through
[`mlm_book.readings.filing_baselines`][mlm_book.readings.filing_baselines].
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np

from mlm_book import artefacts, cache
from mlm_book.artefacts import filings
from mlm_book.finance.skipgram import SkipGramConfig, SkipGramModel, train_skipgram
from mlm_book.finance.vocab import SEP_ID
from mlm_book.finance.word_vectors import lexicon_probe, neighbour_agreement, typing_probe
from mlm_book.validation import check_instance, check_positive_int, check_sequence

__all__ = ["SkipGramSetup", "SETUP", "SEEDS", "NEIGHBOURS_K", "trained", "is_trained", "SeedRunsSetup",
           "SEED_RUNS", "seed_runs", "seed_runs_built", "ARTEFACT_KINDS"]


@dataclass(frozen=True)
class SkipGramSetup:
    """One skip-gram training: the filings, the hyper-parameters and the training seed.

    Examples
    --------
    >>> SETUP.seed, SETUP.skipgram.dim, SETUP.filings == filings.FilingsSetup()
    (0, 25, True)
    >>> SkipGramSetup(seed=-1)
    Traceback (most recent call last):
    ...
    ValueError: seed must be an integer >= 0, got -1

    >>> SkipGramSetup().seed
    0
    """

    filings: filings.FilingsSetup = field(default_factory=filings.FilingsSetup)
    skipgram: SkipGramConfig = field(default_factory=SkipGramConfig)
    seed: int = 0

    def __post_init__(self):
        check_instance(self.filings, "filings", filings.FilingsSetup)
        check_instance(self.skipgram, "skipgram", SkipGramConfig)
        check_positive_int(self.seed, "seed", minimum=0)


SETUP = SkipGramSetup()
"""The book's baseline: chapter 6's filings, its skip-gram settings, seed 0."""
SEEDS = tuple(range(SETUP.seed, SETUP.seed + 5))
"""Training seeds of the baseline: the book's first, then the next four."""
NEIGHBOURS_K = 5
"""Nearest lexicon words whose polarity a seed run counts."""


def _model_entry(setup: SkipGramSetup) -> tuple:
    check_instance(setup, "setup", SkipGramSetup)
    key = {"skipgram": setup.skipgram.as_dict(), "seed": setup.seed, **filings.source_key(setup.filings)}
    return "skipgram", key, [artefacts.key_source("skipgram")]


def _train(setup: SkipGramSetup) -> dict:
    world = filings.filings(setup.filings)
    model = train_skipgram(world.ids, world.corpus.document, world.vocabulary.size, setup.skipgram,
                           np.random.default_rng(setup.seed), drop=SEP_ID)
    return {"input": model.input_vectors, "output": model.output_vectors, "loss": model.epoch_loss}


def trained(setup: SkipGramSetup = SETUP) -> SkipGramModel:
    """The skip-gram model of ``setup`` (from the store; trained on a miss: seconds, so the quick tests may).

    Raises
    ------
    TypeError
        If ``setup`` is not a `SkipGramSetup`.

    Examples
    --------
    >>> model = trained()
    >>> model.input_vectors.shape[1], model.epoch_loss.size
    (25, 8)
    """
    name, key, producers = _model_entry(setup)
    arrays, _ = cache.cached(name, key, producers, lambda: _train(setup), book_sized=False)
    return SkipGramModel(arrays["input"], arrays["output"], arrays["loss"], setup.skipgram)


def is_trained(setup: SkipGramSetup) -> bool:
    """Whether the store holds the model of ``setup`` (a damaged entry counts as absent).

    Raises
    ------
    TypeError
        If ``setup`` is not a `SkipGramSetup`.

    Examples
    --------
    The book's baseline (the answer depends on what the store holds; asking builds nothing):

    >>> isinstance(is_trained(SETUP), bool)
    True
    """
    return cache.load(cache.entry_for(*_model_entry(setup))) is not None


# ----------------------------------------------------------------------------- the seed runs
@dataclass(frozen=True)
class SeedRunsSetup:
    """The baseline's numbers at several training seeds: the trainings, and the neighbours counted.

    Attributes
    ----------
    models : tuple of SkipGramSetup
        One per seed, the book's first; all on the same filings.
    neighbours : int
        `NEIGHBOURS_K` in the book.

    Examples
    --------
    >>> [model.seed for model in SEED_RUNS.models], SEED_RUNS.neighbours
    ([0, 1, 2, 3, 4], 5)

    >>> SeedRunsSetup(models=(SkipGramSetup(),)).neighbours
    5
    """

    models: tuple
    neighbours: int = NEIGHBOURS_K

    def __post_init__(self):
        models = check_sequence(self.models, "models", of=SkipGramSetup)
        if not isinstance(self.models, tuple) or not models:
            raise TypeError("models must be a non-empty tuple of SkipGramSetup")
        if len({model.filings for model in models}) != 1:
            raise ValueError("models must all train on the same filings")
        check_positive_int(self.neighbours, "neighbours")


SEED_RUNS = SeedRunsSetup(tuple(replace(SETUP, seed=seed) for seed in SEEDS))
"""The book's seed runs: `SETUP` at each of `SEEDS`."""


def _seed_runs_entry(setup: SeedRunsSetup) -> tuple:
    check_instance(setup, "setup", SeedRunsSetup)
    first = setup.models[0]
    key = {"skipgram": [model.skipgram.as_dict() for model in setup.models],
           "seeds": [model.seed for model in setup.models], "neighbours": setup.neighbours,
           **filings.source_key(first.filings)}
    return "skipgram-seeds", key, [artefacts.key_source("skipgram-seeds")]


def _measure(setup: SeedRunsSetup) -> dict:
    world = filings.filings(setup.models[0].filings)
    rows = []
    for model_setup in setup.models:
        model = trained(model_setup)
        rows.append((float(model.epoch_loss[-1]), typing_probe(world.corpus, world.ids, model.input_vectors).accuracy,
                     lexicon_probe(world.vocabulary, model.input_vectors).accuracy,
                     neighbour_agreement(model.input_vectors, world.vocabulary, setup.neighbours)[0]))
    return {"values": np.array(rows)}


def seed_runs(setup: SeedRunsSetup = SEED_RUNS) -> np.ndarray:
    """``(seeds, 4)``: per seed, the last epoch's loss, the typing probe's and the lexicon probe's accuracy,
    and the share of same-polarity lexicon neighbours (from the store; measured on a miss).

    Raises
    ------
    TypeError
        If ``setup`` is not a `SeedRunsSetup`.
    """
    name, key, producers = _seed_runs_entry(setup)
    arrays, _ = cache.cached(name, key, producers, lambda: _measure(setup))
    return arrays["values"]


def seed_runs_built(setup: SeedRunsSetup) -> bool:
    """Whether the store holds the seed runs of ``setup`` (a damaged entry counts as absent).

    Raises
    ------
    TypeError
        If ``setup`` is not a `SeedRunsSetup`.

    Examples
    --------
    The book's seed runs (the answer depends on what the store holds; asking builds nothing):

    >>> isinstance(seed_runs_built(SEED_RUNS), bool)
    True
    """
    return cache.load(cache.entry_for(*_seed_runs_entry(setup))) is not None


def _tiny_model() -> SkipGramSetup:
    return SkipGramSetup(skipgram=replace(SETUP.skipgram, epochs=1, dim=4), seed=0)


# ----------------------------------------------------------------------------- the declaration (not keyed)
#: Seconds of one skip-gram training (8 epochs over the filings) and of one seed's two leave-one-out
#: probes on one core, measured on 2026-12-03.
_TRAIN_SECONDS, _PROBE_SECONDS = 3.2, 1.0

ARTEFACT_KINDS = (
    artefacts.Kind(
        name="skipgram", chapter=6,
        summary="chapter 6's skip-gram baseline on the filings, 5 training seeds",
        # nn.runtime: the store keys every entry on the BLAS kernel family it names
        modules=("mlm_book.artefacts.skipgram", "mlm_book.artefacts.filings", "mlm_book.finance.skipgram",
                 "mlm_book.finance.corpus", "mlm_book.finance.vocab", "mlm_book.finance.windows",
                 "mlm_book.finance.caps", "mlm_book.finance.world", "mlm_book.nn.runtime"),
        setups=lambda: SEED_RUNS.models, is_built=is_trained, build=trained,
        cost=lambda setup: _TRAIN_SECONDS * setup.skipgram.epochs / SETUP.skipgram.epochs,
        describe=lambda setup: f"seed {setup.seed}", tiny=_tiny_model),
    artefacts.Kind(
        name="skipgram-seeds", chapter=6,
        summary="chapter 6's skip-gram numbers (loss, typing and lexicon probes, neighbours) at each seed",
        modules=("mlm_book.finance.word_vectors", "mlm_book.probe"), after=("skipgram",),
        setups=lambda: (SEED_RUNS,), is_built=seed_runs_built, build=seed_runs,
        cost=lambda setup: _PROBE_SECONDS * len(setup.models),
        describe=lambda setup: f"{len(setup.models)} seeds",
        tiny=lambda: SeedRunsSetup((_tiny_model(), replace(_tiny_model(), seed=1)))),
)
