r"""The HMM's probe and geometry splits: clean stationary sentences the book reads its encoders on.

Chapters 1, 4, 5, 10 and 11 describe the same test occurrences of $w$: chapter 1's Bayes accuracy,
chapter 4's geometry table, chapter 5's probes, chapter 10's readers' probes and chapter 11's
probe caveats are all measured on the splits of `SPLITS`, sampled by
[`hmm_split`][mlm_book.hmm_splits.hmm_split] from the book's HMM with a fixed seed (the training
split first, then the test split, from one generator).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np

from mlm_book.hmm import default_hmm, sample
from mlm_book.validation import as_int_array, check_instance, check_positive_int

__all__ = ["MAX_SPLIT_TOKENS", "SplitConfig", "SPLITS", "Split", "hmm_split"]

#: Most tokens one split may hold (refused before anything is sampled).
MAX_SPLIT_TOKENS = 10**8


@dataclass(frozen=True)
class SplitConfig:
    """The HMM probe/geometry data: two independent sets of clean stationary sequences.

    Parameters
    ----------
    n_train : int
        Training sequences (probes only).
    n_test : int
        Test sequences: the geometry table and every probe score use these.
    length : int
        Sequence length (the encoder's training length).
    split_seed : int
        Seed of the generator that samples the training split and then the test split.
    geometry_seed : int
        Seed of the generator that draws token samples and the isotropic simulation.

    Raises
    ------
    TypeError, ValueError
        If a size is not a positive integer, a seed is negative, or a split would hold more
        than `MAX_SPLIT_TOKENS` tokens.

    Examples
    --------
    >>> SPLITS.n_test, SPLITS.length, SPLITS == SplitConfig()
    (1500, 24, True)
    """

    n_train: int = 1500
    n_test: int = 1500
    length: int = 24
    split_seed: int = 2
    geometry_seed: int = 4103

    def __post_init__(self):
        for name in ("n_train", "n_test", "length"):
            check_positive_int(getattr(self, name), name)
        for name in ("split_seed", "geometry_seed"):
            check_positive_int(getattr(self, name), name, minimum=0)
        for name in ("n_train", "n_test"):
            if getattr(self, name) * self.length > MAX_SPLIT_TOKENS:
                raise ValueError(f"{name} * length must be at most {MAX_SPLIT_TOKENS:,} tokens, "
                                 f"got {getattr(self, name)} * {self.length}")


SPLITS = SplitConfig()
"""The book's splits: chapter 1's train and test split too (the same sizes, length and seed,
sampled in the same order), so the Bayes accuracy there is over the occurrences probed here."""


@dataclass(frozen=True)
class Split:
    """Sampled hidden states and tokens of one split, each (n_sequences, length).

    Raises
    ------
    TypeError, ValueError
        If ``name`` is not a non-empty string, or ``states`` and ``tokens`` are not non-empty
        integer arrays of one shape (n_sequences, length) holding state and token ids of the
        book's HMM.

    Examples
    --------
    >>> toy = Split(name="toy", states=np.array([[0, 4, 4]]), tokens=np.array([[0, 24, 12]]))
    >>> toy.tokens.shape
    (1, 3)
    """

    name: str
    states: np.ndarray
    tokens: np.ndarray

    def __post_init__(self):
        if not isinstance(self.name, str) or not self.name:
            raise TypeError(f"name must be a non-empty str (e.g. 'test'), got {self.name!r:.40}")
        hmm = default_hmm()
        for field_name, size in (("states", hmm.n_states), ("tokens", hmm.vocab_size)):
            ids = as_int_array(getattr(self, field_name), field_name, ndim=2)
            if ids.size == 0:
                raise ValueError(f"{field_name} must not be empty, got shape {ids.shape}")
            if ids.min() < 0 or ids.max() >= size:
                raise ValueError(f"{field_name} must hold ids in [0, {size}), got values from {ids.min()} to {ids.max()}")
        if np.shape(self.states) != np.shape(self.tokens):
            raise ValueError(f"tokens must have the shape of states {np.shape(self.states)}, got {np.shape(self.tokens)}")


def hmm_split(name: str, config: SplitConfig = SPLITS) -> Split:
    """The ``"train"`` or ``"test"`` split of ``config`` (default `SPLITS`), memoised.

    Raises
    ------
    TypeError
        If ``config`` is not a `SplitConfig`.
    ValueError
        If ``name`` is not ``"train"`` or ``"test"``.

    Examples
    --------
    >>> s = hmm_split("test")
    >>> s.tokens.shape
    (1500, 24)
    """
    if name not in ("train", "test"):
        raise ValueError(f"name must be 'train' or 'test', got {name!r}")
    return _hmm_split(name, check_instance(config, "config", SplitConfig))


@functools.cache
def _hmm_split(name: str, config: SplitConfig) -> Split:
    rng = np.random.default_rng(config.split_seed)
    states, tokens = sample(default_hmm(), config.n_train, config.length, rng)
    if name == "test":  # drawn after the training split from the same generator, as in chapter 1
        states, tokens = sample(default_hmm(), config.n_test, config.length, rng)
    return Split(name=name, states=states, tokens=tokens)
