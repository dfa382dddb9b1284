"""Chapter 5's shuffled-label controls on the HMM encoders of the other training seeds, as an artefact.

The control is chapter 5's: the sense probe ([`mlm_book.probe`][mlm_book.probe]) trained and
scored on permuted senses (training and test senses each permuted within their split,
[`mlm_book.probe.shuffled_control`][mlm_book.probe.shuffled_control] with ``permute_test=True``,
the permutation of layer ``l`` drawn from ``default_rng(CONTROL_SEED + l)``), at layers 0, 1, 2
of an HMM encoder ([`mlm_book.artefacts.hmm_encoder`][mlm_book.artefacts.hmm_encoder]) on the
occurrences of $w$ in the splits of [`mlm_book.hmm_splits`][mlm_book.hmm_splits]. Permuted labels
make the probe's fit slow to converge (about 3 s per encoder in a chapter's process, whose second
BLAS thread only contends on these small products), so the controls of the four encoders the
book retrains at other seeds are stored; the book seed's control is chapter 5's own table
([`mlm_book.readings.sense_probes.probe_table`][mlm_book.readings.sense_probes.probe_table]).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, replace

import numpy as np

from mlm_book import artefacts, cache, probe
from mlm_book.artefacts import hmm_encoder
from mlm_book.hmm import default_hmm
from mlm_book.hmm_splits import SPLITS, SplitConfig, hmm_split
from mlm_book.nn import encoder as enc
from mlm_book.validation import check_instance, check_positive_int

__all__ = ["CONTROL_SEED", "SenseControlsSetup", "split_occurrences", "controls", "is_built", "book_setups",
           "tiny_setup", "ARTEFACT_KINDS"]

CONTROL_SEED = 5101
"""Seed of the permutations of the shuffled-label controls (one generator per layer: seed + layer)."""


@dataclass(frozen=True)
class SenseControlsSetup:
    """The controls of one encoder: which encoder, on which splits, with which permutations.

    Attributes
    ----------
    encoder : HMMEncoderSetup
        The trained encoder whose vectors are probed.
    splits : SplitConfig
        The probe splits (`SPLITS` in the book); their length must not exceed the encoder's.
    control_seed : int
        `CONTROL_SEED` in the book.

    Examples
    --------
    >>> SenseControlsSetup(hmm_encoder.SETUP, control_seed=-1)
    Traceback (most recent call last):
    ...
    ValueError: control_seed must be an integer >= 0, got -1

    >>> from mlm_book.artefacts.hmm_encoder import HMMEncoderSetup
    >>> SenseControlsSetup(HMMEncoderSetup()).splits.n_train
    1500
    """

    encoder: hmm_encoder.HMMEncoderSetup
    splits: SplitConfig = SPLITS
    control_seed: int = CONTROL_SEED

    def __post_init__(self):
        check_instance(self.encoder, "encoder", hmm_encoder.HMMEncoderSetup)
        check_instance(self.splits, "splits", SplitConfig)
        check_positive_int(self.control_seed, "control_seed", minimum=0)
        if self.splits.length > self.encoder.encoder.length:
            raise ValueError(f"splits.length must be at most the encoder's length {self.encoder.encoder.length}, "
                             f"got {self.splits.length}")


def split_occurrences(encoder: hmm_encoder.HMMEncoderSetup = hmm_encoder.SETUP, splits: SplitConfig = SPLITS):
    """The trained ``encoder``'s vectors of $w$'s occurrences in the two splits, and their sampled senses.

    Returns
    -------
    tuple
        ``((train layers, train senses), (test layers, test senses))``: each ``layers`` a list of
        ``(k, d)`` float64 arrays (layers 0, 1, 2), each ``senses`` ``(k,)`` ints (1 for sense b).

    Raises
    ------
    TypeError
        If ``encoder`` is not an ``HMMEncoderSetup`` or ``splits`` not a ``SplitConfig``.
    """
    check_instance(encoder, "encoder", hmm_encoder.HMMEncoderSetup)
    check_instance(splits, "splits", SplitConfig)
    hmm = default_hmm()
    result = hmm_encoder.trained_encoder(encoder)
    data = []
    for name in ("train", "test"):
        split = hmm_split(name, splits)
        mask = split.tokens == hmm.shared_token
        hidden = enc.hidden_states(result.params, result.encoder, split.tokens)
        data.append(([np.asarray(h, dtype=np.float64)[mask] for h in hidden],
                     (split.states[mask] == hmm.sense_states[1]).astype(np.int64)))
    return tuple(data)


def _controls(setup: SenseControlsSetup) -> dict:
    (train_x, train_y), (test_x, test_y) = split_occurrences(setup.encoder, setup.splits)
    return {"controls": np.array([probe.shuffled_control(train_x[layer], train_y, test_x[layer], test_y,
                                                         np.random.default_rng(setup.control_seed + layer),
                                                         permute_test=True).accuracy
                                  for layer in range(len(test_x))])}


def _entry(setup: SenseControlsSetup) -> tuple:
    return "sense-controls", asdict(check_instance(setup, "setup", SenseControlsSetup)), \
        [artefacts.key_source("sense-controls")]


def controls(setup: SenseControlsSetup) -> tuple[float, ...]:
    """The shuffled-label control's test accuracy at layers 0, 1, 2 for ``setup`` (from the store; built on a miss).

    Raises
    ------
    TypeError
        If ``setup`` is not a `SenseControlsSetup`.
    """
    name, config, producers = _entry(setup)
    arrays, _ = cache.cached(name, config, producers, lambda: _controls(setup))
    return tuple(float(x) for x in arrays["controls"])


def is_built(setup: SenseControlsSetup) -> bool:
    """Whether the store holds the controls of ``setup`` (a damaged entry counts as absent).

    Raises
    ------
    TypeError
        If ``setup`` is not a `SenseControlsSetup`.

    Examples
    --------
    The book's first control (the answer depends on what the store holds; asking builds nothing):

    >>> isinstance(is_built(book_setups()[0]), bool)
    True
    """
    return cache.load(cache.entry_for(*_entry(setup))) is not None


def book_setups() -> tuple[SenseControlsSetup, ...]:
    """The controls the book reads: the HMM encoder at each training seed but the book's (its control is chapter 5's table).

    Examples
    --------
    >>> [setup.encoder.training.seed for setup in book_setups()]
    [1, 2, 3, 4]
    """
    return tuple(SenseControlsSetup(hmm_encoder.seed_setup(seed)) for seed in hmm_encoder.SEEDS
                 if seed != hmm_encoder.SETUP.training.seed)


def tiny_setup() -> SenseControlsSetup:
    """The controls of the tiny HMM encoder on splits of 40 sentences of its length: the same code in a second.

    Examples
    --------
    >>> tiny_setup().splits.n_train
    40
    """
    tiny = hmm_encoder.tiny_setup()
    return SenseControlsSetup(tiny, replace(SPLITS, n_train=40, n_test=40, length=tiny.encoder.length))


# ----------------------------------------------------------------------------- the declaration (not keyed)
#: Seconds of one encoder's controls on one core (three probe fits on permuted senses, about
#: 6700 occurrences each, and the encoder's pass over the splits), measured on 2026-12-03.
_SECONDS = 0.4

ARTEFACT_KINDS = (artefacts.Kind(
    name="sense-controls", chapter=5,
    summary="chapter 5's shuffled-label controls on the HMM encoders of the other 4 training seeds",
    modules=("mlm_book.artefacts.sense_controls", "mlm_book.hmm_splits", "mlm_book.probe"),
    after=("hmm-encoder",), setups=book_setups, is_built=is_built, build=controls,
    cost=lambda setup: _SECONDS * setup.splits.n_train * setup.splits.length / (SPLITS.n_train * SPLITS.length),
    describe=lambda setup: f"seed {setup.encoder.training.seed}", tiny=tiny_setup),)
