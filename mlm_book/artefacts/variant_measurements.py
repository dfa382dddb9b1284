r"""What chapter 11 measures on the HMM encoder and its variants, as an artefact: one run per encoder.

The encoders are the book's recipe at its five seeds
([`mlm_book.artefacts.hmm_encoder.SEEDS`][mlm_book.artefacts.hmm_encoder.SEEDS]) and every
variant of [`variant_setups`][mlm_book.artefacts.hmm_encoder.variant_setups] (one choice
changed: selection, replacement, head, tying, depth or width). A run measures one encoder:

* its distance to the exact optimum, as the mean KL divergence from the exact posterior to
  the encoder's prediction at the selected positions of held-out sentences, on three kinds of
  display: its own training channel's, the book's channel's (independent selection, uniform
  replacement: Theorem 2 is exact), and BERT's fixed count (the exact optimum by
  [`mlm_book.bruteforce.fixed_count_posterior`][mlm_book.bruteforce.fixed_count_posterior]);
* at the kept positions of its own channel, the probability it gives the visible word, the
  plug-in of Theorem 2 (ii) on its own [MASK] guess, and the exact optimum's;
* its calibration on its own channel's displays, judged against the exact posterior (so without
  sampling noise in the labels);
* on the book's test split ([`mlm_book.hmm_splits`][mlm_book.hmm_splits]), at every layer: the
  anisotropy baseline over all token vectors, and the self-similarity and MEV of $w$;
* the sense probe for $w$ at every layer, trained and scored on the book's probe splits.

What chapter 11 makes of it is [`mlm_book.experiments.ch11_recipes`][mlm_book.experiments.ch11_recipes].
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, replace

import numpy as np

from mlm_book import artefacts, cache, geometry, probe
from mlm_book.artefacts import hmm_encoder
from mlm_book.bruteforce import fixed_count_posterior
from mlm_book.channel import Channel, corrupt, exact_posterior, optimum
from mlm_book.hmm import default_hmm, sample
from mlm_book.hmm_splits import SPLITS, SplitConfig, hmm_split
from mlm_book.nn import encoder as enc
from mlm_book.scoring import kl_divergence
from mlm_book.validation import as_float_array, check_instance

__all__ = ["DISPLAYS", "CALIBRATION_BINS", "MeasurementSetup", "book_setups", "measured", "is_built",
           "expected_calibration_error", "ARTEFACT_KINDS"]

DISPLAYS = ("own", "independent", "fixed")
"""The displays an encoder is scored on: its own training channel's, the book's channel's, BERT's fixed count."""

CALIBRATION_BINS = 10
"""Equal-width bins of the top-1 probability for the expected calibration error."""

_KEPT = 3       # CorruptedBatch.kind of a selected position that shows its own word


@dataclass(frozen=True)
class MeasurementSetup:
    """One run: the encoder measured and the probe and geometry splits.

    Attributes
    ----------
    encoder : HMMEncoderSetup
        The trained encoder (its ``eval_sequences`` and ``eval_seed`` give the held-out sentences).
    splits : SplitConfig
        The probe and geometry splits (`SPLITS` in the book).

    Examples
    --------
    >>> MeasurementSetup(hmm_encoder.SETUP).splits == SPLITS
    True
    """

    encoder: hmm_encoder.HMMEncoderSetup
    splits: SplitConfig = SPLITS

    def __post_init__(self):
        check_instance(self.encoder, "encoder", hmm_encoder.HMMEncoderSetup)
        check_instance(self.splits, "splits", SplitConfig)


def book_setups() -> tuple[MeasurementSetup, ...]:
    """The book's runs: its recipe at the five seeds, then every variant.

    Examples
    --------
    >>> len(book_setups())
    37
    """
    encoders = (*(hmm_encoder.seed_setup(seed) for seed in hmm_encoder.SEEDS), *hmm_encoder.variant_setups())
    return tuple(MeasurementSetup(encoder) for encoder in encoders)


def expected_calibration_error(confidence, accuracy, bins: int = CALIBRATION_BINS) -> float:
    r"""$\sum_b \frac{n_b}{N} \lvert \bar c_b - \bar a_b \rvert$ over equal-width bins of ``confidence``.

    Parameters
    ----------
    confidence : array_like, shape (N,)
        The model's probability of its top-1 prediction, in [0, 1].
    accuracy : array_like, shape (N,)
        The probability that the prediction is right: here the exact posterior's probability of
        the predicted token (the expected 0/1 accuracy, without its sampling noise).
    bins : int

    Examples
    --------
    Two predictions at 0.9 whose exact accuracies average 0.8, and one calibrated at 0.55:

    >>> round(expected_calibration_error([0.9, 0.9, 0.55], [0.9, 0.7, 0.55]), 12)
    0.066666666667
    """
    confidence = as_float_array(confidence, "confidence", ndim=1)
    accuracy = as_float_array(accuracy, "accuracy", ndim=1)
    if confidence.shape != accuracy.shape or not len(confidence):
        raise ValueError(f"confidence and accuracy must be non-empty 1-D arrays of one shape, "
                         f"got {confidence.shape} and {accuracy.shape}")
    for name, values in (("confidence", confidence), ("accuracy", accuracy)):
        if values.min() < 0 or values.max() > 1:
            raise ValueError(f"{name} must hold probabilities in [0, 1], got values in "
                             f"[{values.min():.3g}, {values.max():.3g}]")
    if isinstance(bins, bool) or not isinstance(bins, int) or not 1 <= bins <= 10**6:
        raise ValueError(f"bins must be an integer in [1, 1000000], got {bins!r}")
    which = np.minimum((confidence * bins).astype(np.int64), bins - 1)
    total = 0.0
    for b in np.unique(which):
        inside = which == b
        total += inside.sum() * abs(confidence[inside].mean() - accuracy[inside].mean())
    return float(total / len(confidence))


def _display_channel(setup: hmm_encoder.HMMEncoderSetup, display: str) -> Channel:
    if display == "own":
        return setup.channel()
    book = hmm_encoder.SETUP.channel()
    return replace(book, selection="fixed") if display == "fixed" else book


def _exact(hmm, channel: Channel, shown: np.ndarray, selected: np.ndarray) -> np.ndarray:
    """The exact posterior at the selected positions, row-major: shape (N, V)."""
    if channel.selection == "independent":
        return exact_posterior(hmm, channel, shown)[selected]
    out = np.empty((int(selected.sum()), channel.vocab_size))
    rows, positions = np.nonzero(selected)
    order = np.flatnonzero(selected.reshape(-1))
    slot = np.empty(selected.size, dtype=np.int64)
    slot[order] = np.arange(len(order))
    for i in np.unique(positions):
        at = rows[positions == i]
        out[slot[at * selected.shape[1] + i]] = fixed_count_posterior(hmm, channel, shown[at], int(i))
    return out


def _scores(setup: hmm_encoder.HMMEncoderSetup, result, tokens: np.ndarray, display: str) -> dict:
    hmm = default_hmm()
    channel = _display_channel(setup, display)
    rng = np.random.default_rng([setup.eval_seed, DISPLAYS.index(display)])
    batch = corrupt(channel, tokens, rng)
    selected = batch.selected
    exact = _exact(hmm, channel, batch.shown, selected)                               # (N, V)
    model = enc.predict_proba(result.params, result.encoder, batch.shown)[selected]    # (N, V)
    kl = kl_divergence(exact, model)
    out = {f"{display}/kl": np.array([kl.mean(), kl.std(ddof=1) / math.sqrt(len(kl))])}
    if display != "own":
        return out
    rows = np.arange(len(model))
    top = model.argmax(axis=1)
    out["own/calibration"] = np.array([expected_calibration_error(model[rows, top], exact[rows, top]),
                                       float(np.mean(model[rows, top] - exact[rows, top]))])
    kind = batch.kind[selected]
    kept = np.flatnonzero(kind == _KEPT)
    if not len(kept):
        raise ValueError(f"the held-out displays hold no kept position: eval_sequences "
                         f"({setup.eval_sequences}) is too small")
    seq, pos = np.nonzero(selected)
    seq, pos = seq[kept], pos[kept]
    masked = batch.shown[seq].copy()
    masked[np.arange(len(kept)), pos] = result.encoder.mask_id
    guess = enc.predict_proba(result.params, result.encoder, masked)[np.arange(len(kept)), pos]   # (K, V)
    visible = tokens[seq, pos]
    plugin = optimum(guess, visible, channel)[np.arange(len(kept)), visible]
    out["own/kept"] = np.array([model[kept, visible].mean(), plugin.mean(), exact[kept, visible].mean()])
    return out


def _geometry_and_probes(result, splits: SplitConfig) -> dict:
    hmm = default_hmm()
    data = []
    for name in ("train", "test"):
        split = hmm_split(name, splits)
        where = (split.tokens == hmm.shared_token).reshape(-1)
        hidden = [np.asarray(h, dtype=np.float64).reshape(-1, result.encoder.d_model)
                  for h in enc.hidden_states(result.params, result.encoder, split.tokens)]
        senses = (split.states == hmm.sense_states[1]).reshape(-1)[where].astype(np.int64)
        data.append((hidden, where, senses))
    (train, train_at, train_y), (test, test_at, test_y) = data
    return {"baseline": np.array([geometry.anisotropy_baseline(layer) for layer in test]),
            "self_similarity": np.array([geometry.self_similarity(layer[test_at]) for layer in test]),
            "mev": np.array([geometry.mev(layer[test_at]) for layer in test]),
            "probe": np.array([probe.fit_and_score(a[train_at], train_y, b[test_at], test_y).accuracy
                               for a, b in zip(train, test)])}


def _measure(setup: MeasurementSetup) -> dict:
    encoder = setup.encoder
    result = hmm_encoder.trained_encoder(encoder)
    rng = np.random.default_rng(encoder.eval_seed)
    _, tokens = sample(default_hmm(), encoder.eval_sequences, encoder.length, rng)
    arrays = {"final_training_loss": np.array(result.losses[-100:].mean())}
    for display in DISPLAYS:
        arrays.update(_scores(encoder, result, tokens, display))
    arrays.update(_geometry_and_probes(result, setup.splits))
    return arrays


def _entry(setup: MeasurementSetup) -> tuple:
    return "hmm-variant-measurements", asdict(check_instance(setup, "setup", MeasurementSetup)), \
        [artefacts.key_source("hmm-variant-measurements")]


def measured(setup: MeasurementSetup) -> dict:
    """The arrays of ``setup``'s run (from the store; measured on a miss).

    ``"<display>/kl"`` (mean KL in nats and its standard error over positions) for each of
    `DISPLAYS`; ``"own/calibration"`` (expected calibration error, mean top-1 probability minus
    the exact probability of that token); ``"own/kept"`` (the encoder's, the plug-in's and the
    exact optimum's mean probability of the visible word at kept positions); per layer
    ``"baseline"``, ``"self_similarity"``, ``"mev"``, ``"probe"``; ``"final_training_loss"``
    (mean of the last 100 steps).

    Raises
    ------
    TypeError
        If ``setup`` is not a `MeasurementSetup`.
    """
    name, key, producers = _entry(setup)
    arrays, _ = cache.cached(name, key, producers, lambda: (_measure(setup), {}))
    return arrays


def is_built(setup: MeasurementSetup) -> bool:
    """Whether the store holds the run of ``setup`` (a damaged entry counts as absent).

    Raises
    ------
    TypeError
        If ``setup`` is not a `MeasurementSetup`.

    Examples
    --------
    The book's first run (the answer depends on what the store holds; asking builds nothing):

    >>> isinstance(is_built(book_setups()[0]), bool)
    True
    """
    return cache.load(cache.entry_for(*_entry(setup))) is not None


def _tiny() -> MeasurementSetup:
    kind = artefacts.kinds()["hmm-encoder-variants"]
    encoder = replace(kind.tiny(), eval_sequences=200)      # the same trained encoder, enough kept positions
    return MeasurementSetup(encoder, splits=replace(SPLITS, n_train=40, n_test=40, length=encoder.length))


# ----------------------------------------------------------------------------- the declaration (not keyed)
#: Seconds of one run on one core for the book's recipe (d = 32, 2 blocks), measured on 2026-12-03 (37 runs in 86 s);
#: a run's hidden states and probes scale with the encoder's size.
_SECONDS = 2.0


def _cost(setup: MeasurementSetup) -> float:
    e = setup.encoder.encoder
    return _SECONDS * (0.5 + 0.5 * e.n_blocks * e.d_model ** 2 / (2 * 32 ** 2))


ARTEFACT_KINDS = (artefacts.Kind(
    name="hmm-variant-measurements", chapter=11,
    summary="chapter 11's measurements of the HMM encoder and its variants against the exact optimum",
    modules=("mlm_book.artefacts.variant_measurements", "mlm_book.bruteforce", "mlm_book.geometry",
             "mlm_book.hmm_splits", "mlm_book.probe", "mlm_book.scoring"),
    after=("hmm-encoder", "hmm-encoder-variants"), setups=book_setups, is_built=is_built, build=measured,
    cost=_cost, describe=lambda setup: artefacts.kinds()["hmm-encoder-variants"].describe(setup.encoder), tiny=_tiny),)
