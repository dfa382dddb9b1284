"""Chapter 10's next-token readers as an artefact: the HMM encoder's recipe with the objective replaced.

A reader is the book's HMM encoder
([`HMMEncoderSetup`][mlm_book.artefacts.hmm_encoder.HMMEncoderSetup]: same shape, batch, peak
learning rate, Adam constants and sentences) trained on next-token prediction
([`NextToken`][mlm_book.nn.train.NextToken]), with the causal mask or without it, over
`STEPS` steps with the warm-up's share of the run and the weight decay's total kept. What
chapter 10 measures on the readers lives in
[`mlm_book.experiments.ch10_causal`][mlm_book.experiments.ch10_causal].
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, replace

from mlm_book import artefacts
from mlm_book.artefacts import hmm_encoder
from mlm_book.nn.loop import TrainConfig, learning_rate
from mlm_book.nn.train import NextToken, TrainResult, cached_training, is_cached_training
from mlm_book.validation import check_bool, check_instance, check_positive_int

__all__ = ["STEPS", "SEEDS", "READERS", "ReaderSetup", "check_seed", "reader_setup", "training_config",
           "trained_reader", "trained", "is_trained", "book_setups", "tiny_setup", "ARTEFACT_KINDS"]

STEPS = 1000
"""Adam steps of each next-token reader (the masked-LM encoder takes 3000; see chapter 10's module)."""
SEEDS = hmm_encoder.SEEDS
"""The HMM encoder's five training seeds, the book's first."""
READERS = {True: "causal", False: "unmasked"}
"""The two readers by their ``causal`` flag, with the names the chapter gives them."""


def check_seed(seed) -> int:
    """``seed`` if it is one of the book's `SEEDS`.

    Raises
    ------
    TypeError
        If ``seed`` is not an integer.
    ValueError
        If it is not one of `SEEDS`.

    Examples
    --------
    >>> check_seed(SEEDS[0]) == SEEDS[0]
    True
    """
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise TypeError(f"seed must be an integer, got {type(seed).__name__}")
    if seed not in SEEDS:
        raise ValueError(f"seed must be one of the book's seeds {SEEDS}, got {seed}")
    return seed


@dataclass(frozen=True)
class ReaderSetup:
    """One next-token reader: with or without the causal mask, its seed, its length and its sentences.

    Attributes
    ----------
    causal : bool
        Whether attention is causal.
    seed : int
        Training seed (initialisation and batch order).
    steps : int
        Adam steps (`STEPS` in the book).
    sentences : HMMEncoderSetup
        The HMM encoder whose shape, schedule constants and sentences the reader takes.

    Examples
    --------
    >>> ReaderSetup(causal=1, seed=0)
    Traceback (most recent call last):
    ...
    TypeError: causal must be True or False, got int

    >>> ReaderSetup(causal=True, seed=0, steps=3).sentences.encoder.length
    24
    """

    causal: bool
    seed: int
    steps: int = STEPS
    sentences: hmm_encoder.HMMEncoderSetup = hmm_encoder.SETUP

    def __post_init__(self):
        check_bool(self.causal, "causal")
        check_positive_int(self.seed, "seed", minimum=0)
        check_positive_int(self.steps, "steps")
        check_instance(self.sentences, "sentences", hmm_encoder.HMMEncoderSetup)


@functools.cache
def _training(setup: ReaderSetup) -> TrainConfig:
    base = setup.sentences.training
    draft = replace(base, steps=setup.steps, warmup=max(1, round(base.warmup * setup.steps / base.steps)),
                    seed=setup.seed)
    # the same total decay lambda * sum(eta_t) as the masked-LM encoder's longer run
    decay = base.weight_decay * sum(learning_rate(base, step) for step in range(base.steps))
    return replace(draft, weight_decay=round(decay / sum(learning_rate(draft, step) for step in range(setup.steps)),
                                             6))


def reader_setup(causal: bool, seed: int = SEEDS[0]) -> ReaderSetup:
    """The book's reader with (``causal=True``) or without the causal mask at ``seed`` (one of `SEEDS`)."""
    return ReaderSetup(causal=check_bool(causal, "causal"), seed=check_seed(seed))


def training_config(seed: int = SEEDS[0]) -> TrainConfig:
    """The readers' training at ``seed``: the HMM encoder's, over `STEPS` steps with its warm-up share and total decay.

    Raises
    ------
    TypeError, ValueError
        If ``seed`` is not one of `SEEDS`.

    Examples
    --------
    >>> cfg = training_config()
    >>> cfg.steps, cfg.warmup, cfg.batch_size, cfg.lr
    (1000, 67, 160, 0.01)
    >>> base = hmm_encoder.SETUP.training
    >>> total = lambda c: c.weight_decay * sum(learning_rate(c, s) for s in range(c.steps))
    >>> bool(abs(total(cfg) - total(base)) < 1e-4 * total(base))
    True
    """
    return _training(reader_setup(False, seed))


def training_arguments(setup: ReaderSetup):
    """``(name, encoder, training, source, objective, source_key)`` of ``setup``'s training run."""
    check_instance(setup, "setup", ReaderSetup)
    source, source_key = hmm_encoder.sentence_source(setup.sentences)
    encoder = replace(setup.sentences.encoder, causal=setup.causal)
    return ("next-token-reader", encoder, _training(setup), source, NextToken(encoder.vocab_size),
            {**source_key, "sentences": "the HMM encoder's"})


def trained(setup: ReaderSetup) -> TrainResult:
    """The reader of ``setup`` (from the store, or trained now and stored)."""
    return cached_training(*training_arguments(setup), producers=[artefacts.key_source("next-token")])


def trained_reader(causal: bool, seed: int = SEEDS[0]) -> TrainResult:
    """The book's next-token reader with (``causal=True``) or without the causal mask at ``seed``.

    Raises
    ------
    TypeError, ValueError
        If ``causal`` is not a bool or ``seed`` not one of `SEEDS`.
    """
    return trained(reader_setup(causal, seed))


def is_trained(setup: ReaderSetup) -> bool:
    """Whether the store holds the reader of ``setup`` (a damaged entry counts as absent).

    Raises
    ------
    TypeError
        If ``setup`` is not a `ReaderSetup`.

    Examples
    --------
    >>> isinstance(is_trained(reader_setup(True)), bool)       # the book's causal reader: True once it is built
    True
    """
    name, encoder, training, _, objective, key = training_arguments(setup)
    return is_cached_training(name, encoder, training, objective, key,
                              producers=[artefacts.key_source("next-token")])


def book_setups() -> tuple[ReaderSetup, ...]:
    """Both readers at each of the book's seeds.

    Examples
    --------
    >>> len(book_setups())
    10
    """
    return tuple(ReaderSetup(causal=causal, seed=seed) for seed in SEEDS for causal in READERS)


def tiny_setup() -> ReaderSetup:
    """A causal reader of the tiny HMM encoder, 3 steps: the same code path in a second.

    Examples
    --------
    >>> tiny_setup().steps
    3
    """
    return ReaderSetup(causal=True, seed=0, steps=3, sentences=hmm_encoder.tiny_setup())


def _build(setup: ReaderSetup) -> None:
    trained(setup)  # in a worker process: it only has to land in the store


# ----------------------------------------------------------------------------- the declaration (not keyed)
#: Seconds per (step x sentence x token) of one run on one core, as a build runs it (two workers on the two
#: cores): every position is a target. Measured 2026-12-04: the causal reader's 1000 steps of 160 x 24 took 35 s
#: beside an HMM-encoder run (the earlier 2.4e-6, 9 s, was scaled from a whole build's total; that day's cold
#: build gave the ten readers 7 worker-minutes against 1.5 declared).
_SECONDS_PER_SLOT = 9.0e-6


def _cost(setup: ReaderSetup) -> float:
    training = setup.sentences.training
    return _SECONDS_PER_SLOT * setup.steps * training.batch_size * setup.sentences.length


ARTEFACT_KINDS = (artefacts.Kind(
    name="next-token", chapter=10,
    summary="chapter 10's next-token readers, with and without the causal mask, 5 seeds each",
    modules=("mlm_book.artefacts.next_token",), after=("hmm-encoder",),
    setups=book_setups, is_built=is_trained, build=_build, cost=_cost,
    describe=lambda setup: f"{READERS[setup.causal]}, seed {setup.seed}", tiny=tiny_setup),)
