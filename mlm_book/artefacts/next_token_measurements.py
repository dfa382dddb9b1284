r"""What chapter 10 measures on its next-token readers, as an artefact: one run over every reader.

The readers are the artefact [`mlm_book.artefacts.next_token`][mlm_book.artefacts.next_token]
(the HMM encoder's recipe trained on next-token prediction, with the causal mask and without it,
at the book's five seeds). A run scores each reader on `EVAL_SENTENCES` held-out sentences of
the HMM language: its cross-entropy at every next-token target against the exact left-to-right
surprisal of the same sentences ([`mlm_book.directions.left_to_right`][mlm_book.directions.left_to_right]),
the attention weight each query puts on the position right after it, and a sense probe for $w$ at
each layer on the book's probe splits ([`mlm_book.hmm_splits`][mlm_book.hmm_splits]); once, the
exact sense accuracy from the left context alone, and the attention map of the unmasked book-seed
reader's copying head. What chapter 10 makes of it is
[`mlm_book.experiments.ch10_causal`][mlm_book.experiments.ch10_causal].
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, replace

import numpy as np

from mlm_book import artefacts, cache, probe
from mlm_book.artefacts import hmm_encoder, next_token
from mlm_book.directions import left_to_right
from mlm_book.hmm import default_hmm, sample
from mlm_book.hmm_splits import SPLITS, SplitConfig, hmm_split
from mlm_book.nn import encoder as enc
from mlm_book.nn.train import TrainResult
from mlm_book.validation import check_instance, check_positive_int

__all__ = ["EVAL_SENTENCES", "EVAL_SEED", "ATTENTION_SENTENCES", "MeasurementsSetup", "MEASUREMENTS", "prefix",
           "measured", "is_built", "ARTEFACT_KINDS"]

EVAL_SENTENCES = 2000
"""Held-out sentences the readers are scored on (46,000 next-token targets)."""
EVAL_SEED = hmm_encoder.SETUP.eval_seed
"""Seed of the held-out sentences (the HMM encoder's evaluation seed: never a training batch's)."""
ATTENTION_SENTENCES = 400
"""Held-out sentences whose attention weights are averaged."""


@dataclass(frozen=True)
class MeasurementsSetup:
    """One run: the readers measured, the held-out sentences and the probe splits.

    Attributes
    ----------
    readers : tuple of ReaderSetup
        Every reader measured (the book's: the causal one at each seed, then the unmasked one); the
        first unmasked one is the one whose copying head is mapped. All read sentences of one length.
    eval_sentences, eval_seed, attention_sentences : int
        `EVAL_SENTENCES`, `EVAL_SEED` and `ATTENTION_SENTENCES` in the book.
    splits : SplitConfig
        The probe splits (`SPLITS` in the book).

    Examples
    --------
    >>> len(MEASUREMENTS.readers), [prefix(reader) for reader in MEASUREMENTS.readers[4:6]]
    (10, ['causal/4/', 'unmasked/20240601/'])

    >>> from mlm_book.artefacts.next_token import ReaderSetup
    >>> MeasurementsSetup(readers=(ReaderSetup(causal=True, seed=0), ReaderSetup(causal=False, seed=0))).eval_sentences
    2000
    """

    readers: tuple
    eval_sentences: int = EVAL_SENTENCES
    eval_seed: int = EVAL_SEED
    attention_sentences: int = ATTENTION_SENTENCES
    splits: SplitConfig = SPLITS

    def __post_init__(self):
        if not isinstance(self.readers, tuple) or not self.readers:
            raise TypeError(f"readers must be a non-empty tuple of ReaderSetup, got {self.readers!r:.60}")
        for reader in self.readers:
            check_instance(reader, "readers", next_token.ReaderSetup)
        if all(reader.causal for reader in self.readers):
            raise ValueError("readers must hold an unmasked reader (its copying head is mapped)")
        if len({reader.sentences.length for reader in self.readers}) != 1:
            raise ValueError("readers must all read sentences of one length")
        for name in ("eval_sentences", "attention_sentences"):
            check_positive_int(getattr(self, name), name, minimum=2)
        check_positive_int(self.eval_seed, "eval_seed", minimum=0)
        check_instance(self.splits, "splits", SplitConfig)


MEASUREMENTS = MeasurementsSetup(tuple(next_token.reader_setup(causal, seed) for causal in next_token.READERS
                                       for seed in next_token.SEEDS))
"""The book's run: both readers at each of the five seeds."""


def prefix(reader: next_token.ReaderSetup) -> str:
    """The stored arrays' prefix of ``reader``: ``"causal/<seed>/"`` or ``"unmasked/<seed>/"``."""
    check_instance(reader, "reader", next_token.ReaderSetup)
    return f"{next_token.READERS[reader.causal]}/{reader.seed}/"


def _held_out(setup: MeasurementsSetup) -> np.ndarray:
    length = setup.readers[0].sentences.length
    return sample(default_hmm(), setup.eval_sentences, length, np.random.default_rng(setup.eval_seed))[1]


def _exact_surprisal(tokens: np.ndarray) -> np.ndarray:
    """Exact $-\\log P(x_{i+1} \\mid x_{\\le i})$ for $i = 1 \\ldots n-1$: shape (B, n - 1)."""
    return left_to_right(default_hmm(), tokens).surprisal[:, 1:]


def _reader_losses(result: TrainResult, tokens: np.ndarray) -> np.ndarray:
    """The reader's cross-entropy at every target: shape (B, n - 1)."""
    proba = enc.predict_proba(result.params, result.encoder, tokens)[:, :-1]          # (B, n - 1, V)
    picked = np.take_along_axis(proba, tokens[:, 1:, None], axis=2)[..., 0]
    return -np.log(picked)


def _next_weight(result: TrainResult, tokens: np.ndarray) -> np.ndarray:
    weights = enc.attention_weights(result.params, result.encoder, tokens)           # (L, B, h, n, n)
    n = tokens.shape[1]
    return weights[..., np.arange(n - 1), np.arange(1, n)].mean(axis=(1, 3))           # (L, h)


def _sense_data(splits: SplitConfig = SPLITS):
    """Chapter 5's train and test splits: the occurrences of w and their senses."""
    hmm = default_hmm()
    out = []
    for name in ("train", "test"):
        split = hmm_split(name, splits)
        where = split.tokens == hmm.shared_token
        out.append((split.tokens, where, (split.states[where] == hmm.sense_states[1]).astype(np.int64)))
    return out


def _probes(result: TrainResult, splits: SplitConfig = SPLITS) -> np.ndarray:
    (train_tokens, train_at, train_y), (test_tokens, test_at, test_y) = _sense_data(splits)
    train_h = enc.hidden_states(result.params, result.encoder, train_tokens)
    test_h = enc.hidden_states(result.params, result.encoder, test_tokens)
    return np.array([probe.fit_and_score(np.asarray(a, np.float64)[train_at], train_y,
                                         np.asarray(b, np.float64)[test_at], test_y).accuracy
                     for a, b in zip(train_h, test_h)])


def _left_sense(splits: SplitConfig = SPLITS) -> float:
    """Exact expected accuracy of the best guess of w's sense from the words up to it, on the test occurrences."""
    hmm = default_hmm()
    tokens, where, _ = _sense_data(splits)[1]
    filtered = left_to_right(hmm, tokens).filtered[where][:, list(hmm.sense_states)]
    filtered /= filtered.sum(axis=1, keepdims=True)
    return float(filtered.max(axis=1).mean())


def _measure(setup: MeasurementsSetup) -> dict:
    tokens = _held_out(setup)
    exact = _exact_surprisal(tokens)
    arrays = {"exact": exact.mean(axis=0), "exact_se": exact.std(axis=0, ddof=1) / np.sqrt(len(exact)),
              "exact_mean": np.array(exact.mean()), "left_sense": np.array(_left_sense(setup.splits))}
    for reader in setup.readers:
        result = next_token.trained(reader)
        losses = _reader_losses(result, tokens)
        excess = (losses - exact).mean(axis=1)                                       # per sentence
        key = prefix(reader)
        arrays[key + "position_loss"] = losses.mean(axis=0)
        arrays[key + "excess"] = np.array([excess.mean(), excess.std(ddof=1) / np.sqrt(len(excess))])
        arrays[key + "next_weight"] = _next_weight(result, tokens[:setup.attention_sentences])
        arrays[key + "probes"] = _probes(result, setup.splits)
        arrays[key + "final_training_loss"] = np.array(result.losses[-100:].mean())
    copier = next(reader for reader in setup.readers if not reader.causal)
    book = next_token.trained(copier)
    block, head = np.unravel_index(np.argmax(arrays[prefix(copier) + "next_weight"]),
                                   (book.encoder.n_blocks, book.encoder.n_heads))
    weights = enc.attention_weights(book.params, book.encoder, tokens[:setup.attention_sentences])
    arrays["mean_attention"] = weights[block, :, head].mean(axis=0)
    arrays["copy_head"] = np.array([block, head])
    return arrays


def _entry(setup: MeasurementsSetup) -> tuple:
    return "next-token-measurements", asdict(check_instance(setup, "setup", MeasurementsSetup)), \
        [artefacts.key_source("next-token-measurements")]


def measured(setup: MeasurementsSetup = MEASUREMENTS) -> dict:
    """The arrays of ``setup``'s run (from the store; measured on a miss).

    Per reader, under [`prefix`][mlm_book.artefacts.next_token_measurements.prefix]: ``position_loss``
    ``(n - 1,)``, ``excess`` (mean and standard error over sentences), ``next_weight`` ``(blocks, heads)``,
    ``probes`` ``(blocks + 1,)`` and ``final_training_loss``; once: ``exact`` and ``exact_se`` ``(n - 1,)``,
    ``exact_mean``, ``left_sense``, ``mean_attention`` ``(n, n)`` and ``copy_head``.

    Raises
    ------
    TypeError
        If ``setup`` is not a `MeasurementsSetup`.
    """
    name, key, producers = _entry(setup)
    arrays, _ = cache.cached(name, key, producers, lambda: (_measure(setup), {}))
    return arrays


def is_built(setup: MeasurementsSetup) -> bool:
    """Whether the store holds the run of ``setup`` (a damaged entry counts as absent).

    Raises
    ------
    TypeError
        If ``setup`` is not a `MeasurementsSetup`.

    Examples
    --------
    >>> isinstance(is_built(MEASUREMENTS), bool)       # the book's run: True once it is built
    True
    """
    return cache.load(cache.entry_for(*_entry(setup))) is not None


def _tiny() -> MeasurementsSetup:
    causal = next_token.tiny_setup()
    return MeasurementsSetup((causal, replace(causal, causal=False)), eval_sentences=8, attention_sentences=4,
                             splits=replace(SPLITS, n_train=40, n_test=40, length=causal.sentences.length))


# ----------------------------------------------------------------------------- the declaration (not keyed)
#: Seconds of the book's run on one core (ten readers on 2000 sentences, their probes, the exact
#: readers), measured on 2026-12-03.
_SECONDS = 30.0

ARTEFACT_KINDS = (artefacts.Kind(
    name="next-token-measurements", chapter=10,
    summary="chapter 10's measurements of the next-token readers against the exact left-to-right surprisal",
    modules=("mlm_book.artefacts.next_token_measurements", "mlm_book.directions", "mlm_book.hmm_splits",
             "mlm_book.probe"),
    after=("next-token",), setups=lambda: (MEASUREMENTS,), is_built=is_built, build=measured,
    cost=lambda setup: _SECONDS * len(setup.readers) * setup.eval_sentences / (10 * EVAL_SENTENCES),
    describe=lambda setup: f"{len(setup.readers)} readers", tiny=_tiny),)
