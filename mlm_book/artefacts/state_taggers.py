r"""Chapter 9's state taggers as an artefact: the HMM language's hidden states tagged by fine-tuned encoders.

A run ([`StateTaggerRun`][mlm_book.artefacts.state_taggers.StateTaggerRun]) takes, at one of the book's
seeds, the bidirectional HMM encoder ([`mlm_book.artefacts.hmm_encoder`][mlm_book.artefacts.hmm_encoder])
and chapter 10's causal next-token reader ([`mlm_book.artefacts.next_token`][mlm_book.artefacts.next_token]),
and fine-tunes each in full with a softmax head over the HMM's 8 hidden states on its last layer
([`mlm_book.nn.state_tagger`][mlm_book.nn.state_tagger]), by one recipe (`TAGGER`), on `TRAIN_SENTENCES`
fresh sentences of the language with their sampled states (seed `TRAIN_SEED`). It also fits chapter 5's
ridge-logistic probe ([`mlm_book.probe.fit_probe`][mlm_book.probe.fit_probe]) on each encoder's frozen
last layer, the same vectors the head reads. It stores, for `TEST_SENTENCES` held-out sentences (seed
`TEST_SEED`), each tagger's log-probabilities and guesses and each probe's guesses, and the taggers'
training losses. What chapter 9 makes of them is
[`mlm_book.experiments.ch09_states`][mlm_book.experiments.ch09_states].
"""

from __future__ import annotations

import functools
from dataclasses import asdict, dataclass, replace

import numpy as np

from mlm_book import artefacts, cache, probe
from mlm_book.artefacts import hmm_encoder, next_token
from mlm_book.hmm import default_hmm, sample
from mlm_book.nn.state_tagger import (
    StateTaggerConfig,
    fine_tune_states,
    state_features,
    state_log_probabilities,
)
from mlm_book.validation import check_instance, check_positive_int

__all__ = ["TRAIN_SENTENCES", "TEST_SENTENCES", "TRAIN_SEED", "TEST_SEED", "TAGGER", "SEEDS", "READERS",
           "MAX_POSITIONS", "StateTaggerRun", "book_run", "sentences", "training_sentences", "held_out_sentences", "tagger_outputs",
           "is_built", "ARTEFACT_KINDS"]

TRAIN_SENTENCES = 2000
"""Labelled sentences each tagger is fine-tuned on (48,000 tagged positions)."""
TEST_SENTENCES = 1000
"""Held-out sentences every tagger is scored on."""
TRAIN_SEED = 3401
"""Seed of the labelled training sentences (no other sample of the book uses it)."""
TEST_SEED = 3402
"""Seed of the held-out sentences."""
TAGGER = StateTaggerConfig(steps=1000, batch_size=32, lr=1e-3, weight_decay=0.01)
"""The fine-tuning recipe of both taggers (its seed is set to the encoder's): chapter 9's entity taggers' batch,
peak rate and decay (BERT's fine-tuning values), a tenth of the steps of warm-up, and the length of the pilot at
the book seed whose training loss had flattened (see the declaration's note)."""
SEEDS = hmm_encoder.SEEDS
"""The HMM encoder's five training seeds, the book's first (the readers share them)."""
READERS = ("bidirectional", "left-to-right")
"""The two encoders tagged, by the prefix of their stored arrays."""
MAX_POSITIONS = 2**24
"""Most positions `sentences` draws at once (a mistaken count is refused rather than filling the memory)."""


@dataclass(frozen=True)
class StateTaggerRun:
    """Both taggers and both probes at one seed, and the sentences they learn from and are scored on.

    Attributes
    ----------
    bidirectional : HMMEncoderSetup
        The masked-LM encoder fine-tuned as the bidirectional tagger.
    left_to_right : ReaderSetup
        The causal next-token reader fine-tuned as the left-to-right tagger; it must be causal and read
        sentences of the bidirectional encoder's length.
    train_sentences, test_sentences : int
        `TRAIN_SENTENCES` and `TEST_SENTENCES` in the book.
    train_seed, test_seed : int
        `TRAIN_SEED` and `TEST_SEED` in the book.
    tagger : StateTaggerConfig
        `TAGGER` in the book (its seed is replaced by the bidirectional encoder's training seed).

    Raises
    ------
    TypeError, ValueError
        If a field has the wrong type or range, the reader is not causal, the two read sentences of
        different lengths, or the two seeds are equal.

    Examples
    --------
    >>> run = book_run(3)
    >>> run.seed, run.length, run.left_to_right.causal
    (3, 24, True)
    >>> replace(run, left_to_right=next_token.reader_setup(False, 3))
    Traceback (most recent call last):
    ...
    ValueError: left_to_right must be a causal reader (causal=True)

    >>> from mlm_book.artefacts.hmm_encoder import HMMEncoderSetup
    >>> from mlm_book.artefacts.next_token import ReaderSetup
    >>> StateTaggerRun(HMMEncoderSetup(), ReaderSetup(causal=True, seed=0)).train_sentences
    2000
    """

    bidirectional: hmm_encoder.HMMEncoderSetup
    left_to_right: next_token.ReaderSetup
    train_sentences: int = TRAIN_SENTENCES
    test_sentences: int = TEST_SENTENCES
    train_seed: int = TRAIN_SEED
    test_seed: int = TEST_SEED
    tagger: StateTaggerConfig = TAGGER

    def __post_init__(self):
        check_instance(self.bidirectional, "bidirectional", hmm_encoder.HMMEncoderSetup)
        check_instance(self.left_to_right, "left_to_right", next_token.ReaderSetup)
        if not self.left_to_right.causal:
            raise ValueError("left_to_right must be a causal reader (causal=True)")
        if self.left_to_right.sentences.length != self.bidirectional.length:
            raise ValueError(f"left_to_right must read sentences of the bidirectional encoder's length "
                             f"{self.bidirectional.length}, got {self.left_to_right.sentences.length}")
        check_positive_int(self.train_sentences, "train_sentences", minimum=2)
        check_positive_int(self.test_sentences, "test_sentences", minimum=2)
        check_positive_int(self.train_seed, "train_seed", minimum=0)
        check_positive_int(self.test_seed, "test_seed", minimum=0)
        if self.train_seed == self.test_seed:
            raise ValueError(f"test_seed must differ from train_seed, got {self.test_seed} for both")
        check_instance(self.tagger, "tagger", StateTaggerConfig)

    @property
    def seed(self) -> int:
        """The bidirectional encoder's training seed (the taggers' seed too)."""
        return self.bidirectional.training.seed

    @property
    def length(self) -> int:
        """The sentences' length."""
        return self.bidirectional.length


def book_run(seed: int = SEEDS[0]) -> StateTaggerRun:
    """The book's run at ``seed`` (one of `SEEDS`): the HMM encoder and the causal reader of that seed.

    Raises
    ------
    TypeError, ValueError
        If ``seed`` is not one of `SEEDS`.
    """
    seed = next_token.check_seed(seed)
    return StateTaggerRun(hmm_encoder.seed_setup(seed), next_token.reader_setup(True, seed))


def sentences(count: int, seed: int, length: int) -> tuple[np.ndarray, np.ndarray]:
    """``count`` fresh sentences of the HMM language: ``(states, tokens)``, each (count, length), from ``seed``.

    Examples
    --------
    >>> states, tokens = sentences(3, 0, 5)
    >>> states.shape, tokens.shape
    ((3, 5), (3, 5))
    """
    count = check_positive_int(count, "count")
    seed = check_positive_int(seed, "seed", minimum=0)
    length = check_positive_int(length, "length")
    if count * length > MAX_POSITIONS:
        raise ValueError(f"count * length must be at most {MAX_POSITIONS} positions, got count={count} and "
                         f"length={length}")
    return sample(default_hmm(), count, length, np.random.default_rng(seed))


def training_sentences(run: StateTaggerRun) -> tuple[np.ndarray, np.ndarray]:
    """The labelled training sentences of ``run``: ``(states, tokens)``.

    Raises
    ------
    TypeError
        If ``run`` is not a `StateTaggerRun`.

    Examples
    --------
    >>> run = book_run()
    >>> states, tokens = training_sentences(run)
    >>> tokens.shape, int(states.max()) < default_hmm().n_states    # the hidden states are the tags
    ((2000, 24), True)
    """
    check_instance(run, "run", StateTaggerRun)
    return sentences(run.train_sentences, run.train_seed, run.length)


def held_out_sentences(run: StateTaggerRun) -> tuple[np.ndarray, np.ndarray]:
    """The held-out sentences of ``run``: ``(states, tokens)``.

    Examples
    --------
    >>> states, tokens = held_out_sentences(book_run())
    >>> tokens.shape
    (1000, 24)
    """
    check_instance(run, "run", StateTaggerRun)
    return sentences(run.test_sentences, run.test_seed, run.length)


def _encoders(run: StateTaggerRun) -> dict:
    return {"bidirectional": hmm_encoder.trained_encoder(run.bidirectional),
            "left-to-right": next_token.trained(run.left_to_right)}


def _run(run: StateTaggerRun) -> dict:
    n_states = default_hmm().n_states
    train_states, train_tokens = training_sentences(run)
    _, test_tokens = held_out_sentences(run)
    settings = replace(run.tagger, seed=run.seed)
    out = {}
    for name, result in _encoders(run).items():
        tagger = fine_tune_states(result.params, result.encoder, train_tokens, train_states, settings, n_states)
        log_probs = state_log_probabilities(tagger, test_tokens)
        out[f"{name}/tuned/log_probs"] = log_probs.astype(np.float32)
        out[f"{name}/tuned/guess"] = log_probs.argmax(axis=2).astype(np.int8)
        out[f"{name}/tuned/losses"] = tagger.losses
        d = result.encoder.d_model
        x_train = state_features(result.params, result.encoder, train_tokens).reshape(-1, d)
        model = probe.fit_probe(x_train, train_states.reshape(-1))
        x_test = state_features(result.params, result.encoder, test_tokens).reshape(-1, d)
        out[f"{name}/probe/guess"] = model.predict(x_test).reshape(test_tokens.shape).astype(np.int8)
    return out


def _key(run: StateTaggerRun) -> dict:
    return {"run": asdict(run), "n_states": default_hmm().n_states}


@functools.cache
def tagger_outputs(run: StateTaggerRun) -> dict:
    """The stored arrays of ``run`` (from the store, or computed now and stored).

    Per reader (``"bidirectional/"`` or ``"left-to-right/"``, see `READERS`): ``tuned/log_probs``
    ``(test_sentences, length, 8)`` float32, ``tuned/guess`` and ``probe/guess`` ``(test_sentences, length)``
    state ids, and ``tuned/losses`` ``(steps,)``, the training loss of each step in nats per position.

    Raises
    ------
    TypeError
        If ``run`` is not a `StateTaggerRun`.
    """
    check_instance(run, "run", StateTaggerRun)
    arrays, _ = cache.cached("state-taggers", _key(run), [artefacts.key_source("state-taggers")],
                             lambda: (_run(run), {}))
    return arrays


def is_built(run: StateTaggerRun) -> bool:
    """Whether the store holds ``run`` (a damaged entry counts as absent).

    Raises
    ------
    TypeError
        If ``run`` is not a `StateTaggerRun`.

    Examples
    --------
    The book's run at its first seed (the answer depends on what the store holds; asking builds nothing):

    >>> isinstance(is_built(book_run()), bool)
    True
    """
    check_instance(run, "run", StateTaggerRun)
    return cache.load(cache.entry_for("state-taggers", _key(run), [artefacts.key_source("state-taggers")])) is not None


def _tiny() -> StateTaggerRun:
    reader = next_token.tiny_setup()
    return StateTaggerRun(reader.sentences, reader, train_sentences=8, test_sentences=4,
                          tagger=replace(TAGGER, steps=2, batch_size=4))


def _build(run: StateTaggerRun) -> None:
    tagger_outputs(run)  # in a worker process: it only has to land in the store


# ----------------------------------------------------------------------------- the declaration (not keyed)
# TAGGER's 1000 steps: a pilot at the book seed (bidirectional encoder, chapter 9's entity-tagger recipe: batch 32,
# peak 1e-3, decay 0.01, warm-up a tenth, 1000 steps on these training sentences) gave training-loss means over
# 50-step windows of 0.21 at step 100, 0.030 at 300, 0.021 at 550 and 0.018-0.021 over the last 400 steps (the
# exact -log P(s_i | x) of those sentences is 0.013): flat from about step 600. The pilot's own schedule was kept.
# Seconds of one run on one core (two taggers of 1000 steps, two probes), measured on the build of 2026-12-03: 19 s
# for the last run alone; 171 s of worker time for all five while another build shared both cores (1:35 wall).
_SECONDS = 20.0

ARTEFACT_KINDS = (artefacts.Kind(
    name="state-taggers", chapter=9,
    summary="chapter 9's taggers of the HMM's hidden states: the HMM encoder and the causal reader fine-tuned, "
            "and frozen probes, 5 seeds",
    modules=("mlm_book.artefacts.state_taggers", "mlm_book.nn.state_tagger", "mlm_book.probe"),
    after=("hmm-encoder", "next-token"), setups=lambda: tuple(book_run(seed) for seed in SEEDS),
    is_built=is_built, build=_build,
    cost=lambda run: _SECONDS * run.tagger.steps * run.train_sentences / (TAGGER.steps * TRAIN_SENTENCES),
    describe=lambda run: f"seed {run.seed}", tiny=_tiny),)
