r"""Chapter 5's sense probes on the HMM encoder: the table at the book's seed and the probes at every training seed.

Chapter 5 shows them; chapter 10 compares its next-token readers' probes with them, and the lab
copies them. The data are the book's splits ([`SPLITS`][mlm_book.hmm_splits.SPLITS]): the probe
([`mlm_book.probe.fit_and_score`][mlm_book.probe.fit_and_score]) is trained on every occurrence
of $w$ in the training sequences and scored on every occurrence in the test sequences, each
labelled with its true (sampled) sense, at every layer of the encoder's vectors
([`mlm_book.readings.hmm_encoder.split_vectors`][mlm_book.readings.hmm_encoder.split_vectors]).
Beside it, [`probe_table`][mlm_book.readings.sense_probes.probe_table] has the shuffled-label
control (trained and scored on permuted senses), the token-table probe, the static cap and the
exact Bayes accuracy on the same test occurrences. [`seed_probes`][mlm_book.readings.sense_probes.seed_probes]
and [`seed_controls`][mlm_book.readings.sense_probes.seed_controls] are the probe and the control
on the encoders retrained at the book's other seeds (the controls are the artefact
[`mlm_book.artefacts.sense_controls`][mlm_book.artefacts.sense_controls]).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np

from mlm_book import probe
from mlm_book.artefacts import hmm_encoder, sense_controls
from mlm_book.artefacts.sense_controls import CONTROL_SEED
from mlm_book.hmm import bayes_sense_accuracy, default_hmm
from mlm_book.hmm_splits import SPLITS, SplitConfig, hmm_split
from mlm_book.pmi import static_cap
from mlm_book.readings.hmm_encoder import split_vectors
from mlm_book.validation import check_instance, check_positive_int, check_probability, check_real, check_seeds

__all__ = ["ProbeRow", "ProbeTable", "probe_table", "SeedProbes", "seed_probes", "seed_controls", "ABOVE_BAYES"]

ABOVE_BAYES = 0.005
"""Sampling error allowed above the exact Bayes accuracy (about 0.005 for ~6700 test occurrences):
a probe higher than that above Bayes would be a bug, not luck (chapter 5's S1-10 and S6-04, the lab's S7-16)."""


@dataclass(frozen=True)
class ProbeRow:
    """Probe and shuffled controls at one layer (accuracies on the test occurrences).

    ``control`` is trained and scored on permuted senses; ``control_true_labels`` is trained on
    permuted senses and scored on the true ones.

    Raises
    ------
    TypeError, ValueError
        If ``layer`` or ``iterations`` is not a non-negative integer, ``vector`` not a string,
        an accuracy not in [0, 1], or ``stderr``/``gradient_norm`` not finite and non-negative.

    Examples
    --------
    >>> row = ProbeRow(layer=1, vector="after block 1", probe=0.963, control=0.499, control_true_labels=0.52,
    ...                stderr=0.002, iterations=40, gradient_norm=1e-9)
    >>> round(row.probe - row.control, 3)
    0.464
    """

    layer: int
    vector: str
    probe: float
    control: float
    control_true_labels: float
    stderr: float
    iterations: int
    gradient_norm: float

    def __post_init__(self):
        check_positive_int(self.layer, "layer", minimum=0)
        check_instance(self.vector, "vector", str)
        for name in ("probe", "control", "control_true_labels"):
            check_probability(getattr(self, name), name)
        check_real(self.stderr, "stderr", low=0.0)
        check_positive_int(self.iterations, "iterations", minimum=0)
        check_real(self.gradient_norm, "gradient_norm", low=0.0)


@dataclass(frozen=True)
class ProbeTable:
    r"""The HMM sense-probe table.

    Attributes
    ----------
    config : SplitConfig
        The splits.
    rows : tuple of ProbeRow
        Layers 0, 1, 2.
    token_table : float
        Accuracy of the probe on $E[w]$ (one vector for every occurrence).
    token_table_majority : float
        Test share of the training-majority sense: what any constant classifier scores.
    cap : float
        Static cap $\max_k \pi_k$.
    bayes : float
        Exact Bayes accuracy $\mathbb{E}\max_k P(\text{sense } k \mid x)$ over the test occurrences.
    bayes_stderr : float
        Its standard error over occurrences.
    bayes_realised : float
        Share of test occurrences where the Bayes classifier picks the sampled sense.
    n_train : int
        Training occurrences of $w$.
    n_test : int
        Test occurrences of $w$.

    Raises
    ------
    TypeError, ValueError
        If ``config`` is not a `SplitConfig`, ``rows`` not a non-empty tuple of `ProbeRow`, an
        accuracy, share or cap not in [0, 1], ``bayes_stderr`` negative or not finite,
        ``n_train`` negative or ``n_test`` below 1.

    Examples
    --------
    >>> row = ProbeRow(layer=1, vector="after block 1", probe=0.963, control=0.499, control_true_labels=0.52,
    ...                stderr=0.002, iterations=40, gradient_norm=1e-9)
    >>> t = ProbeTable(config=SPLITS, rows=(row,), token_table=0.509, token_table_majority=0.509, cap=0.509,
    ...                bayes=0.970, bayes_stderr=0.002, bayes_realised=0.968, n_train=6700, n_test=6663)
    >>> t.probes, t.controls
    ((0.963,), (0.499,))
    """

    config: SplitConfig
    rows: tuple
    token_table: float
    token_table_majority: float
    cap: float
    bayes: float
    bayes_stderr: float
    bayes_realised: float
    n_train: int
    n_test: int

    def __post_init__(self):
        check_instance(self.config, "config", SplitConfig)
        if not isinstance(self.rows, tuple) or not self.rows:
            raise TypeError(f"rows must be a non-empty tuple of ProbeRow, got {type(self.rows).__name__}")
        for row in self.rows:
            check_instance(row, "rows", ProbeRow)
        for name in ("token_table", "token_table_majority", "cap", "bayes", "bayes_realised"):
            check_probability(getattr(self, name), name)
        check_real(self.bayes_stderr, "bayes_stderr", low=0.0)
        check_positive_int(self.n_train, "n_train", minimum=0)
        check_positive_int(self.n_test, "n_test")

    @property
    def probes(self) -> tuple[float, ...]:
        return tuple(row.probe for row in self.rows)

    @property
    def controls(self) -> tuple[float, ...]:
        return tuple(row.control for row in self.rows)


@functools.cache
def probe_table() -> ProbeTable:
    """Probe, control, token-table probe, cap and Bayes on the HMM encoder (memoised)."""
    train, test = split_vectors("train"), split_vectors("test")
    rows = []
    for layer in range(len(test.layers)):
        fitted = probe.fit_and_score(train.word(layer), train.senses, test.word(layer), test.senses)
        control = probe.shuffled_control(train.word(layer), train.senses, test.word(layer), test.senses,
                                         np.random.default_rng(CONTROL_SEED + layer), permute_test=True)
        against_truth = probe.shuffled_control(train.word(layer), train.senses, test.word(layer), test.senses,
                                               np.random.default_rng(CONTROL_SEED + layer))
        rows.append(ProbeRow(layer=layer, vector=("input E[x] + P", "after block 1", "after block 2")[layer],
                             probe=fitted.accuracy, control=control.accuracy,
                             control_true_labels=against_truth.accuracy, stderr=fitted.stderr,
                             iterations=fitted.model.iterations, gradient_norm=fitted.model.gradient_norm))
    table_train = np.tile(train.token_table, (train.n_occurrences, 1))
    table_test = np.tile(test.token_table, (test.n_occurrences, 1))
    token = probe.fit_and_score(table_train, train.senses, table_test, test.senses)
    hmm = default_hmm()
    split = hmm_split("test")
    bayes = bayes_sense_accuracy(hmm, split.tokens, split.states)
    return ProbeTable(config=SPLITS, rows=tuple(rows), token_table=token.accuracy,
                      token_table_majority=token.majority_share, cap=static_cap(hmm), bayes=bayes.expected,
                      bayes_stderr=bayes.standard_error, bayes_realised=bayes.realised,
                      n_train=train.n_occurrences, n_test=test.n_occurrences)


@dataclass(frozen=True)
class SeedProbes:
    """Probe accuracies at layers 0, 1, 2 for encoders that differ only in their training seed.

    Attributes
    ----------
    seeds : tuple of int
        Training seeds; the first is the book's.
    probes : tuple of tuple of float
        ``probes[i][layer]``: test accuracy of the probe on the encoder trained with ``seeds[i]``.
    bayes : float
        Exact Bayes accuracy on the same test occurrences (it does not depend on the encoder).

    Raises
    ------
    TypeError, ValueError
        If ``seeds`` is not a non-empty tuple of non-negative integers, ``probes`` not one tuple
        of accuracies in [0, 1] per seed (all of one length), or ``bayes`` not in [0, 1].

    Examples
    --------
    >>> probes = SeedProbes(seeds=(20240601, 1), probes=((0.50, 0.963, 0.962), (0.51, 0.95, 0.96)), bayes=0.970)
    >>> probes.layer(1)
    (0.963, 0.95)
    """

    seeds: tuple
    probes: tuple
    bayes: float

    def __post_init__(self):
        check_seeds(self.seeds)
        if not isinstance(self.probes, tuple) or len(self.probes) != len(self.seeds):
            raise TypeError(f"probes must be a tuple with one tuple of accuracies per seed ({len(self.seeds)})")
        widths = set()
        for values in self.probes:
            if not isinstance(values, tuple) or not values:
                raise TypeError(f"probes must hold non-empty tuples of accuracies, got {values!r:.60}")
            for value in values:
                check_probability(value, "probes")
            widths.add(len(values))
        if len(widths) != 1:
            raise ValueError(f"probes must give every seed the same number of layers, got {sorted(widths)}")
        check_probability(self.bayes, "bayes")

    def layer(self, layer: int) -> tuple[float, ...]:
        """The probe's accuracy at ``layer`` for every seed."""
        return tuple(values[layer] for values in self.probes)


def seed_probes(seeds: tuple | None = None) -> SeedProbes:
    """The probe at every layer of the book's encoder retrained with other seeds (memoised per seeds).

    Each encoder has exactly the book's settings except the training seed, comes from
    [`mlm_book.artefacts.hmm_encoder.trained_encoder`][mlm_book.artefacts.hmm_encoder.trained_encoder] (through the cache; a cold
    build trains it), and is probed on the same splits as [`probe_table`][mlm_book.readings.sense_probes.probe_table].

    Parameters
    ----------
    seeds : tuple of int, optional
        Training seeds; default the book's seed, then 1, 2, 3 and 4.

    Raises
    ------
    TypeError
        If ``seeds`` is not a non-empty tuple of integers.
    """
    book = hmm_encoder.SETUP.training.seed
    seeds = (book, 1, 2, 3, 4) if seeds is None else seeds
    if not isinstance(seeds, tuple) or not seeds or not all(isinstance(s, int) and not isinstance(s, bool)
                                                            for s in seeds):
        raise TypeError(f"seeds must be a non-empty tuple of integers, got {seeds!r}")
    return _seed_probes(seeds)


@functools.cache
def _seed_probes(seeds: tuple) -> SeedProbes:
    setup = hmm_encoder.SETUP
    hmm_encoder.ensure_trained([hmm_encoder.seed_setup(seed) for seed in seeds])  # the missing ones, in parallel
    rows = []
    for seed in seeds:
        if seed == setup.training.seed:
            rows.append(probe_table().probes)
            continue
        (train_x, train_y), (test_x, test_y) = sense_controls.split_occurrences(hmm_encoder.seed_setup(seed))
        rows.append(tuple(probe.fit_and_score(train_x[layer], train_y, test_x[layer], test_y).accuracy
                          for layer in range(len(test_x))))
    return SeedProbes(seeds=seeds, probes=tuple(rows), bayes=probe_table().bayes)


@functools.cache
def seed_controls() -> tuple[tuple[float, ...], ...]:
    """The shuffled-label control of [`probe_table`][mlm_book.readings.sense_probes.probe_table] (training
    and test senses each permuted, the same permutation seeds) at layers 0, 1, 2 of the encoder trained
    with each of [`seed_probes`][mlm_book.readings.sense_probes.seed_probes]'s seeds, the book's first.

    The book seed's are the table's own; the others are the stored artefact
    [`mlm_book.artefacts.sense_controls`][mlm_book.artefacts.sense_controls].

    Examples
    --------
    >>> controls = seed_controls()  # doctest: +BOOK
    >>> len(controls), controls[0] == probe_table().controls
    (5, True)
    """
    book = hmm_encoder.SETUP.training.seed
    return tuple(tuple(probe_table().controls) if seed == book
                 else sense_controls.controls(sense_controls.SenseControlsSetup(hmm_encoder.seed_setup(seed)))
                 for seed in seed_probes().seeds)
