r"""Chapter 5: sense probes on the HMM encoder, against the static cap and the exact Bayes accuracy.

The data are the book's splits ([`SPLITS`][mlm_book.hmm_splits.SPLITS], chapter 4's too): the probe is
trained on every occurrence of $w$ in the training sequences and scored on every occurrence
in the test sequences, each labelled with its true (sampled) sense. At every layer
[`probe_table`][mlm_book.readings.sense_probes.probe_table] (read in
[`mlm_book.readings.sense_probes`][mlm_book.readings.sense_probes], since chapter 10 and the lab read it
too; this module shows it, [`probe_markdown`][mlm_book.experiments.ch05_probing.probe_markdown]) has the probe
([`mlm_book.probe.fit_and_score`][mlm_book.probe.fit_and_score]) and beside it:

* the shuffled-label **control**: the same probe *trained and scored on permuted senses*
  (training labels permuted within the training data, test labels permuted independently
  within the test data; [`mlm_book.probe.shuffled_control`][mlm_book.probe.shuffled_control] with
  ``permute_test=True``). Its predictions are then independent of the labels it is scored on,
  so it cannot beat the majority share except by sampling error. The variant that scores the
  noise-trained probe against the *true* test labels is reported too
  ([`control_spread`][mlm_book.experiments.ch05_probing.control_spread]): it scatters widely around one half, because a boundary drawn
  through noise can line up with the real sense direction by chance;
* the **token-table probe**: the encoder's row $E[w]$ for every occurrence. It is a constant
  vector, so the probe is intercept-only and scores exactly the test share of the
  training-majority sense (Corollary 1 in action);
* the **static cap** $\max_k \pi_k$ ([`mlm_book.pmi.static_cap`][mlm_book.pmi.static_cap]);
* the **exact Bayes accuracy** $\mathbb{E}\max_k P(\text{sense } k \mid x)$ on the same test
  occurrences ([`mlm_book.hmm.bayes_sense_accuracy`][mlm_book.hmm.bayes_sense_accuracy]), the ceiling no classifier of the
  sentence can beat in expectation.

Around the table: [`position_probe`][mlm_book.experiments.ch05_probing.position_probe] (the probe on the
position of each occurrence alone), [`seed_probes`][mlm_book.readings.sense_probes.seed_probes] (the
probes on encoders retrained with other seeds), [`bayes_comparison`][mlm_book.experiments.ch05_probing.bayes_comparison]
(probe and Bayes rule compared occurrence by occurrence), and the chapter's two figures.

The probe's strength is `mlm_book.probe.PROBE_STRENGTH`, fixed a priori.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np

from mlm_book import probe
from mlm_book.artefacts.hmm_encoder import SETUP
from mlm_book.artefacts.sense_controls import CONTROL_SEED
from mlm_book.figures import PALETTE, WIDE, DescribedFigure, describe, style, subplots
from mlm_book.hmm import default_hmm
from mlm_book.hmm_splits import SPLITS
from mlm_book.ledger import Claim, over_seeds
from mlm_book.readings.hmm_encoder import split_vectors
from mlm_book.readings.sense_probes import (
    ABOVE_BAYES,
    ProbeTable,
    SeedProbes,
    probe_table,
    seed_controls,
    seed_probes,
)
from mlm_book.report import Markdown, table
from mlm_book.validation import (
    as_float_array,
    check_instance,
    check_positive_int,
    check_probability,
    check_real,
)

__all__ = ["probe_markdown", "figure_probes", "ControlSpread", "control_spread", "figure_control_spread",
           "position_probe", "BayesComparison", "bayes_comparison", "CLAIMS"]



@dataclass(frozen=True)
class ControlSpread:
    """Shuffled controls over several permutations at one layer, scored two ways.

    Attributes
    ----------
    layer : int
    permuted : numpy.ndarray, shape (n,)
        Trained and scored on permuted senses.
    true_labels : numpy.ndarray, shape (n,)
        Trained on permuted senses, scored on the true senses.
    binomial_sd : float
        Standard deviation of a test accuracy of 1/2 from sampling alone.

    Raises
    ------
    TypeError, ValueError
        If ``layer`` is not a non-negative integer, ``permuted`` or ``true_labels`` not a
        non-empty 1-D array of accuracies in [0, 1], or ``binomial_sd`` not finite and non-negative.

    Examples
    --------
    >>> spread = ControlSpread(layer=1, permuted=np.array([0.49, 0.51]), true_labels=np.array([0.3, 0.7]),
    ...                        binomial_sd=0.006)
    >>> float(np.ptp(spread.true_labels)) > 10 * spread.binomial_sd
    True
    """

    layer: int
    permuted: np.ndarray
    true_labels: np.ndarray
    binomial_sd: float

    def __post_init__(self):
        check_positive_int(self.layer, "layer", minimum=0)
        for name in ("permuted", "true_labels"):
            scores = as_float_array(getattr(self, name), name, ndim=1)
            if scores.size == 0 or scores.min() < 0 or scores.max() > 1:
                raise ValueError(f"{name} must hold one or more accuracies in [0, 1], got {scores.tolist()!r:.60}")
        check_real(self.binomial_sd, "binomial_sd", low=0.0)


#: Most permutations `control_spread` runs: each fits two probes (1000 take minutes).
MAX_PERMUTATIONS = 1000


def _check_layer(layer) -> int:
    """``layer`` as one of the trained encoder's layers (0 is the input), checked before any cache."""
    layer = check_positive_int(layer, "layer", minimum=0)
    layers = SETUP.encoder.n_blocks + 1  # from the configuration: checking reads no trained encoder
    if layer >= layers:
        raise ValueError(f"layer must be one of the encoder's layers, an integer in [0, {layers - 1}], got {layer}")
    return layer


def control_spread(layer: int = 1, n_permutations: int = 8) -> ControlSpread:
    """The shuffled control over ``n_permutations`` seeded permutations, scored both ways.

    Raises
    ------
    TypeError, ValueError
        If ``layer`` is not one of the encoder's layers, or ``n_permutations`` is not an
        integer in [1, 1000] (each permutation fits two probes).
    """
    n_permutations = check_positive_int(n_permutations, "n_permutations", maximum=MAX_PERMUTATIONS)
    layer = _check_layer(layer)
    return _control_spread(layer, n_permutations)


@functools.cache
def _control_spread(layer: int = 1, n_permutations: int = 8) -> ControlSpread:
    """The memoised body of `control_spread`, which checks the arguments before the cache."""
    train, test = split_vectors("train"), split_vectors("test")
    scores = {False: [], True: []}
    for index in range(n_permutations):
        for permute_test in (False, True):
            rng = np.random.default_rng([CONTROL_SEED, layer, index])
            scores[permute_test].append(probe.shuffled_control(
                train.word(layer), train.senses, test.word(layer), test.senses, rng,
                permute_test=permute_test).accuracy)
    return ControlSpread(layer=layer, permuted=np.array(scores[True]), true_labels=np.array(scores[False]),
                         binomial_sd=float(np.sqrt(0.25 / test.n_occurrences)))


def probe_markdown(table_: ProbeTable | None = None) -> Markdown:
    """The probe table as a Markdown table: one row per representation, then the two references.

    Columns: test accuracy of the probe, its binomial standard error, the shuffled-label
    control (trained and scored on permuted senses), and the probe minus the control.

    Raises
    ------
    TypeError
        If ``table_`` is not a `ProbeTable` (or ``None``, the book's table).
    """
    t = probe_table() if table_ is None else check_instance(table_, "table_", ProbeTable)
    token_se = float(np.sqrt(t.token_table * (1 - t.token_table) / t.n_test))
    names = ("layer 0: input E[w] + P_i", "layer 1: after block 1", "layer 2: after block 2")
    rows = [("token-table row E[w]", t.token_table, token_se, "—", "—")]
    rows += [(names[row.layer] if row.layer < len(names) else f"layer {row.layer}", row.probe, row.stderr,
              row.control, row.probe - row.control) for row in t.rows]
    rows += [("static cap", t.cap, "—", "—", "—"),
             ("exact Bayes accuracy", t.bayes, t.bayes_stderr, "—", "—")]
    return table(["vectors read", "probe", "SE", "leak check", "probe − leak check"], rows,
                 formats=[None, ".3f", ".3f", ".3f", "+.3f"])


def figure_probes(table_: ProbeTable | None = None, seeds: SeedProbes | None = None) -> DescribedFigure:
    """Figure: probe accuracy by representation with its control, the static cap and the exact Bayes accuracy.

    Parameters
    ----------
    table_ : ProbeTable, optional
        The book's [`probe_table`][mlm_book.readings.sense_probes.probe_table] by default.
    seeds : SeedProbes, optional
        Probes of encoders trained at other seeds ([`seed_probes`][mlm_book.readings.sense_probes.seed_probes]):
        their layer scores are drawn as small faint dots beside the table's.

    Returns
    -------
    DescribedFigure
        The probes, leak checks and references, with alt text that gives every value and how
        the probes stand against the cap and the Bayes accuracy.

    Raises
    ------
    TypeError
        If ``table_`` is not a `ProbeTable` (or ``None``, the book's table), or ``seeds`` not a
        `SeedProbes` (or ``None``).
    ValueError
        If ``seeds`` has a different number of layers from ``table_``.

    Examples
    --------
    >>> import matplotlib.pyplot as plt  # doctest: +BOOK
    >>> drawn = figure_probes(seeds=seed_probes())
    >>> len(drawn.figure.axes[0].lines) > 5
    True
    >>> drawn.alt.split(". ")[2]
    'The token-table row and layer 0 are within two standard errors of the static cap; layer 1 and layer 2 are 0.007 and 0.006 below the exact Bayes accuracy'
    >>> plt.close(drawn.figure)
    """
    t = probe_table() if table_ is None else check_instance(table_, "table_", ProbeTable)
    if seeds is not None:
        check_instance(seeds, "seeds", SeedProbes)
        if len(seeds.probes[0]) != len(t.rows):
            raise ValueError(f"seeds must score the table's {len(t.rows)} layers, got {len(seeds.probes[0])}")
    layers = np.arange(len(t.rows)) + 1
    fig, ax = subplots(width=WIDE, height=3.4)
    with style():
        bayes = ax.axhline(t.bayes, color=PALETTE["green"], lw=1.5, label=f"exact Bayes accuracy ({t.bayes:.3f})")
        cap = ax.axhline(t.cap, color=PALETTE["vermillion"], lw=1.5, linestyle=":",
                         label=rf"static cap $\max_k \pi_k$ ({t.cap:.3f})")
        probes = ax.errorbar(layers, t.probes, yerr=[2 * row.stderr for row in t.rows], marker="o",
                             color=PALETTE["blue"], capsize=3, label="probe on the layer (±2 SE)")
        token, = ax.plot([0], [t.token_table], marker="D", linestyle="none", color=PALETTE["blue"],
                         markerfacecolor="white", markersize=7, label="probe on the token-table row $E[w]$")
        control, = ax.plot(layers, t.controls, marker="s", linestyle="--", color=PALETTE["grey"],
                           label="leak check: trained and scored on permuted senses")
        handles = [probes, token, control, bayes, cap]
        if seeds is not None:
            others = np.array(seeds.probes[1:])
            offsets = layers[None, :] + 0.12
            dots, = ax.plot(np.broadcast_to(offsets, others.shape).ravel(), others.ravel(), marker="o",
                            linestyle="none", markersize=4, alpha=0.6, color=PALETTE["sky"],
                            label=f"probe, the other {len(others)} training seeds")
            handles.insert(1, dots)
        ax.set_xticks(np.arange(len(t.rows) + 1), ["token table"] + [f"layer {row.layer}" for row in t.rows])
        ax.set_xlim(-0.4, len(t.rows) + 0.4)
        ax.set_ylim(0.4, 1.02)
        ax.set_ylabel(f"sense accuracy ({t.n_test} test occurrences)")
        ax.legend(handles=handles, loc="center left", bbox_to_anchor=(1.0, 0.5))

    names = ["the token-table row"] + [f"layer {row.layer}" for row in t.rows]
    scores = [t.token_table] + list(t.probes)
    errors = [float(np.sqrt(t.token_table * (1 - t.token_table) / t.n_test))] + [row.stderr for row in t.rows]
    at_cap = [k for k in range(len(names)) if abs(scores[k] - t.cap) <= 2 * errors[k]]
    rest = [k for k in range(len(names)) if k not in at_cap]

    def listed(items):
        items = list(items)
        return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]

    standing = []
    if at_cap:
        standing.append(f"{listed(names[k] for k in at_cap)} {'are' if len(at_cap) > 1 else 'is'} within two "
                        "standard errors of the static cap")
    if rest:
        gaps = [t.bayes - scores[k] for k in rest]
        standing.append(f"{listed(names[k] for k in rest)} {'are' if len(rest) > 1 else 'is'} "
                        + listed(f"{abs(gap):.3f}" for gap in gaps)
                        + (" below" if all(gap > 0 for gap in gaps) else " from")
                        + " the exact Bayes accuracy")
    alt = (f"Sense accuracy on {t.n_test} test occurrences of w (vertical axis, 0.4 to 1) of a linear probe on each "
           f"representation along the bottom: the token-table row E[w] as an open diamond at {t.token_table:.3f}, "
           "then each layer as a blue circle with a bar of two standard errors, "
           + listed(f"{name} at {score:.3f}" for name, score in zip(names[1:], scores[1:]))
           + ". Grey squares on a dashed line give the leak check at each layer, "
           + listed(f"{value:.3f}" for value in t.controls)
           + f", and two horizontal lines mark the static cap at {t.cap:.3f} (dotted) and the exact Bayes accuracy at "
           f"{t.bayes:.3f} (solid). " + "; ".join(standing)[0].upper() + "; ".join(standing)[1:] + ".")
    caption = (r"Probe accuracy by representation. Error bars are $\pm 2$ binomial standard errors; where none "
               "shows, it is shorter than the marker. The leak checks are trained and scored on permuted senses.")
    if seeds is not None:
        others = np.array(seeds.probes[1:])
        alt += (f" Small dots beside each layer show the same probe on the encoders trained at the other "
                f"{len(others)} seeds: " + listed(f"{others[:, k].min():.3f} to {others[:, k].max():.3f} at layer "
                                                  f"{row.layer}" for k, row in enumerate(t.rows)) + ".")
        caption += f" Small dots: the same probe on the encoders trained at the other {len(others)} seeds."
    return describe(fig, alt=alt, caption=caption)


def figure_control_spread(spread: ControlSpread | None = None) -> DescribedFigure:
    """Figure: the shuffled control over several permutations, scored on permuted and on true senses.

    Returns
    -------
    DescribedFigure
        The two rows of points, with alt text that gives their ranges against the band.

    Raises
    ------
    TypeError
        If ``spread`` is not a `ControlSpread` (or ``None``, the book's spread).

    Examples
    --------
    >>> import matplotlib.pyplot as plt
    >>> spread = ControlSpread(layer=1, permuted=np.array([0.49, 0.51]), true_labels=np.array([0.3, 0.7]),
    ...                        binomial_sd=0.006)
    >>> drawn = figure_control_spread(spread)
    >>> drawn.alt.split(". ")[2]
    'Scored on the true senses (vermillion squares), they scatter from 0.30 to 0.70, on both sides of one half.'
    >>> plt.close(drawn.figure)
    """
    s = control_spread() if spread is None else check_instance(spread, "spread", ControlSpread)
    fig, ax = subplots(width=WIDE, height=2.4)
    with style():
        band = ax.axvspan(0.5 - 2 * s.binomial_sd, 0.5 + 2 * s.binomial_sd, color="0.85",
                          label=r"$1/2 \pm 2$ binomial standard deviations")
        half = ax.axvline(0.5, color=PALETTE["black"], lw=0.8, label="one half")
        permuted, = ax.plot(s.permuted, np.ones_like(s.permuted), "o", color=PALETTE["blue"], alpha=0.8,
                            label="scored on permuted senses (the leak check)")
        true, = ax.plot(s.true_labels, np.zeros_like(s.true_labels), "s", color=PALETTE["vermillion"], alpha=0.8,
                        label="scored on the true senses")
        ax.set_yticks([0, 1], ["true senses", "permuted senses"])
        ax.set_ylim(-0.6, 1.6)
        ax.set_xlim(min(0.3, float(np.min(s.true_labels)) - 0.02), max(0.7, float(np.max(s.true_labels)) + 0.02))
        ax.set_xlabel(f"test accuracy of a probe trained on permuted senses (layer {s.layer})")
        ax.legend(handles=[permuted, true, half, band], loc="center left", bbox_to_anchor=(1.0, 0.5))

    inside = bool(np.all(np.abs(s.permuted - 0.5) <= 2 * s.binomial_sd))
    sides = ("on both sides of one half" if s.true_labels.min() < 0.5 < s.true_labels.max() else
             "all above one half" if s.true_labels.min() > 0.5 else "all at or below one half")
    alt = (f"Test accuracies, along the horizontal axis, of a layer-{s.layer} probe trained on permuted senses, for "
           f"{s.permuted.size} permutations, in two rows. Scored on permuted senses (blue circles), they sit between "
           f"{s.permuted.min():.2f} and {s.permuted.max():.2f}, "
           + ("inside" if inside else "not all inside")
           + f" the grey band of one half plus or minus two binomial standard deviations ({s.binomial_sd:.3f} each). "
           f"Scored on the true senses (vermillion squares), they scatter from {s.true_labels.min():.2f} to "
           f"{s.true_labels.max():.2f}, {sides}.")
    return describe(fig, alt=alt, caption=rf"The shuffled-label leak check at layer {s.layer}, one point per "
                                          r"permutation. The grey band is $1/2 \pm 2$ binomial standard deviations "
                                          r"of an accuracy on the test occurrences.")


@functools.cache
def position_probe() -> probe.ProbeScore:
    """The probe on the position of each occurrence of $w$ alone (one-hot over the sentence's positions).

    It sees what the position table adds to layer 0 and nothing else. The HMM starts in its
    stationary distribution, so the sense of an occurrence is independent of its position and
    this probe can only score about the majority share.
    """
    train, test = split_vectors("train"), split_vectors("test")
    eye = np.eye(SPLITS.length)
    return probe.fit_and_score(eye[train.positions], train.senses, eye[test.positions], test.senses)


@dataclass(frozen=True)
class BayesComparison:
    """The probe and the Bayes rule on the same test occurrences, occurrence by occurrence.

    Attributes
    ----------
    layer : int
    n : int
        Test occurrences.
    probe : float
        Share the probe labels with the sampled sense.
    bayes : float
        Share the Bayes rule (the sense with the larger exact posterior) labels with the sampled sense.
    bayes_only : int
        Occurrences the Bayes rule gets right and the probe wrong.
    probe_only : int
        Occurrences the probe gets right and the Bayes rule wrong.

    Raises
    ------
    TypeError, ValueError
        If ``layer`` or a count is not a non-negative integer (the two discordant counts at
        most ``n`` together), or ``probe``/``bayes`` not shares in [0, 1].

    Examples
    --------
    >>> c = BayesComparison(layer=1, n=6663, probe=0.963, bayes=0.968, bayes_only=60, probe_only=27)
    >>> round(c.z, 2)
    3.54
    """

    layer: int
    n: int
    probe: float
    bayes: float
    bayes_only: int
    probe_only: int

    def __post_init__(self):
        check_positive_int(self.layer, "layer", minimum=0)
        n = check_positive_int(self.n, "n", minimum=0)
        check_probability(self.probe, "probe")
        check_probability(self.bayes, "bayes")
        discordant = (check_positive_int(self.bayes_only, "bayes_only", minimum=0)
                      + check_positive_int(self.probe_only, "probe_only", minimum=0))
        if discordant > n:
            raise ValueError(f"bayes_only + probe_only must be at most n ({n}), got {discordant}")

    @property
    def z(self) -> float:
        """McNemar's statistic: the difference of the two discordant counts over its standard deviation."""
        discordant = self.bayes_only + self.probe_only
        return float((self.bayes_only - self.probe_only) / np.sqrt(discordant)) if discordant else 0.0


def bayes_comparison(layer: int = 1) -> BayesComparison:
    """Where the probe at ``layer`` and the Bayes rule disagree on the test occurrences (memoised)."""
    layer = _check_layer(layer)
    return _bayes_comparison(layer)


@functools.cache
def _bayes_comparison(layer: int = 1) -> BayesComparison:
    """The memoised body of `bayes_comparison`, which checks the arguments before the cache."""
    train, test = split_vectors("train"), split_vectors("test")
    fitted = probe.fit_and_score(train.word(layer), train.senses, test.word(layer), test.senses)
    probe_right = fitted.model.predict(test.word(layer)) == test.senses
    bayes_right = (test.posterior > 0.5).astype(np.int64) == test.senses
    return BayesComparison(layer=layer, n=int(test.senses.size), probe=float(probe_right.mean()),
                           bayes=float(bayes_right.mean()), bayes_only=int(np.sum(bayes_right & ~probe_right)),
                           probe_only=int(np.sum(probe_right & ~bayes_right)))


# --------------------------------------------------------------------------------------
# Claims
# --------------------------------------------------------------------------------------



def _expected_occurrences() -> float:
    hmm = default_hmm()
    return float(SPLITS.n_test * SPLITS.length * (hmm.initial @ hmm.emission[:, hmm.shared_token]))



def _over_seeds(id_, quantity, *, seed, rule, getter, holds, margin, expected, controls=False, section=None):
    """A probe claim judged at each training seed of [`seed_probes`][mlm_book.readings.sense_probes.seed_probes]:
    ``getter(probes, bayes)`` (``getter(probes, controls)`` with ``controls=True``) gives one seed's value,
    ``holds`` judges it and ``margin`` gives its signed distance from the rule's threshold (non-negative exactly
    where ``holds``, which [`over_seeds`][mlm_book.ledger.over_seeds] checks); the claim passes when the verdict over the seeds is ``expected``, the one chapter 5
    states. The value is [`over_seeds`][mlm_book.ledger.over_seeds]': the book seed's, mean ± sd over the
    seeds and how many hold, as the other chapters' learned claims show theirs. ``section`` is where the chapter
    shows it (see [`Claim`][mlm_book.ledger.Claim])."""
    def compute():
        seeds = seed_probes()
        if controls:
            values = [getter(probes, control) for probes, control in zip(seeds.probes, seed_controls())]
        else:
            values = [getter(probes, seeds.bayes) for probes in seeds.probes]
        return over_seeds(values, sum(bool(holds(v)) for v in values), margins=[margin(v) for v in values])
    return Claim(id_, f"{quantity} (each training seed of the table)", seed=seed,
                 rule=rule, compute=compute, accept=lambda v: True, expected=expected, section=section)

CLAIMS = (
    _over_seeds("S1-10", "Exact Bayes sense accuracy minus the probe's, at layers 1 / 2 (HMM test split)",
                seed="0.007 / 0.008", rule="≤ 0.02 at layers 1 and 2, and no probe above Bayes by more than 0.005",
                getter=lambda probes, bayes: tuple(bayes - p for p in probes[1:]),
                holds=lambda v: all(-ABOVE_BAYES <= x <= 0.02 for x in v),
                margin=lambda v: min(min(x - -ABOVE_BAYES, 0.02 - x) for x in v), expected="seed-dependent",
                section="other-training-seeds"),
    _over_seeds("S1-11", "Layer-2 probe vs the static cap", seed="0.962 vs 0.509", rule="probe ≥ cap + 0.3",
                getter=lambda probes, bayes: (probes[2], probe_table().cap), holds=lambda v: v[0] >= v[1] + 0.3,
                margin=lambda v: v[0] - (v[1] + 0.3), expected="reproduced", section="other-training-seeds"),
    _over_seeds("S2-15", "Cor 1: probes on static inputs vs the cap: the token table E[w] (one vector for every "
                "occurrence, so the training majority at any seed: S2-17) and layer 0 = E[w] + P at the position",
                seed="≤ cap", rule="each ≤ cap + 0.015",
                getter=lambda probes, bayes: (probe_table().token_table, probes[0], probe_table().cap),
                holds=lambda v: v[0] <= v[2] + 0.015 and v[1] <= v[2] + 0.015,
                margin=lambda v: min(v[2] + 0.015 - v[0], v[2] + 0.015 - v[1]), expected="reproduced",
                section="static-inputs-stay-at-the-cap"),
    Claim("S2-17", "Token-table probe (E[w] for every occurrence) vs the test share of the training-majority "
          "sense, and the cap", seed="attains the cap",
          rule="equal to the majority share exactly; within ±0.015 of the cap",
          compute=lambda: (probe_table().token_table, probe_table().token_table_majority, probe_table().cap),
          accept=lambda v: v[0] == v[1] and abs(v[0] - v[2]) <= 0.015, section="static-inputs-stay-at-the-cap"),
    _over_seeds("S2-18", "Sense probe on HMM-encoder layer 2, test split", seed="0.962",
                rule="≥ Bayes − 0.02 and ≥ cap + 0.3", getter=lambda probes, bayes: probes[2],
                holds=lambda v: v >= probe_table().bayes - 0.02 and v >= probe_table().cap + 0.3,
                margin=lambda v: min(v - (probe_table().bayes - 0.02), v - (probe_table().cap + 0.3)),
                expected="seed-dependent", section="probes-layer-by-layer"),
    Claim("S6-01", "Ridge strength lambda of the probe (mean log-loss + lambda/2 ||W||^2, intercept unpenalised), "
          "a module constant fixed a priori and used by every probe", seed="unstated",
          rule="a positive constant; not tuned on any split",
          compute=lambda: probe.PROBE_STRENGTH,
          accept=lambda v: v > 0 and probe.fit_and_score.__kwdefaults__["strength"] == v, fmt=".0e",
          section="the-probe-fixed-in-advance"),
    Claim("S6-02", "The two computable references: static cap and exact Bayes accuracy (forward–backward, "
          "test occurrences)", seed="0.509; 0.970", rule="cap in [0.50, 0.55]; cap < Bayes ≤ 1",
          compute=lambda: (probe_table().cap, probe_table().bayes),
          accept=lambda v: 0.50 <= v[0] <= 0.55 and v[0] < v[1] <= 1.0,
          section="two-references-the-static-cap-and-the-bayes-accuracy"),
    _over_seeds("S6-03", "Probe / leak check (labels shuffled) at layer 0 (E[x] + P at the occurrence's position)",
                seed="0.501 / 0.504", rule="both ≤ cap + 0.015",
                getter=lambda probes, controls: (probes[0], controls[0]),
                holds=lambda v: max(v) <= probe_table().cap + 0.015,
                margin=lambda v: probe_table().cap + 0.015 - max(v), expected="reproduced", controls=True,
                section="probes-layer-by-layer"),
    _over_seeds("S6-04", "Probe / leak check (labels shuffled) at layer 1", seed="0.963 / 0.499",
                rule="probe ≥ Bayes − 0.02 and ≤ Bayes + 0.005; control ≤ cap + 0.015",
                getter=lambda probes, controls: (probes[1], controls[1]),
                holds=lambda v: probe_table().bayes - 0.02 <= v[0] <= probe_table().bayes + ABOVE_BAYES
                and v[1] <= probe_table().cap + 0.015,
                margin=lambda v: min(v[0] - (probe_table().bayes - 0.02), probe_table().bayes + ABOVE_BAYES - v[0],
                                     probe_table().cap + 0.015 - v[1]), expected="seed-dependent", controls=True,
                                     section="probes-layer-by-layer"),
    _over_seeds("S6-05", "Probe / leak check (labels shuffled) at layer 2", seed="0.962 / 0.505",
                rule="as S6-04; abs(L2 − L1) ≤ 0.01",
                getter=lambda probes, controls: (probes[2], controls[2], probes[1]),
                holds=lambda v: probe_table().bayes - 0.02 <= v[0] <= probe_table().bayes + ABOVE_BAYES
                and v[1] <= probe_table().cap + 0.015 and abs(v[0] - v[2]) <= 0.01,
                margin=lambda v: min(v[0] - (probe_table().bayes - 0.02), probe_table().bayes + ABOVE_BAYES - v[0],
                                     probe_table().cap + 0.015 - v[1], 0.01 - abs(v[0] - v[2])),
                expected="seed-dependent", controls=True, section="probes-layer-by-layer"),
    _over_seeds("S6-06", "Reference rows: static cap and exact Bayes accuracy, and the largest probe of the table",
                seed="0.509; 0.970", rule="cap = max_k pi_k exactly, in [0.50, 0.55]; every probe ≤ Bayes + 0.005",
                getter=lambda probes, bayes: (probe_table().cap, bayes, max(probes)),
                holds=lambda v: 0.50 <= v[0] <= 0.55 and v[2] <= v[1] + ABOVE_BAYES,
                margin=lambda v: v[1] + ABOVE_BAYES - v[2], expected="reproduced", section="probes-layer-by-layer"),
    Claim("S6-07", "Probe data: training sequences / test sequences / test occurrences of w", seed="1500 / 1500 / 6663",
          rule="1500 / 1500 exactly; occurrences within 5% of their expectation 36000 P(w)",
          compute=lambda: (SPLITS.n_train, SPLITS.n_test, probe_table().n_test),
          accept=lambda v: v[0] == 1500 and v[1] == 1500 and abs(v[2] - _expected_occurrences())
          <= 0.05 * _expected_occurrences(), fmt="d", section="the-data"),
    _over_seeds("S6-08", "Shuffled-label control (trained and scored on permuted senses: training and test labels "
                "each permuted within their split) at layers 0 / 1 / 2", seed="0.504 / 0.499 / 0.505",
                rule="each ≤ cap + 0.015", getter=lambda probes, controls: tuple(controls),
                holds=lambda v: max(v) <= probe_table().cap + 0.015,
                margin=lambda v: probe_table().cap + 0.015 - max(v), expected="reproduced", controls=True,
                section="probes-layer-by-layer"),
    _over_seeds("S6-10", "One attention block reads off almost all the sense information: layer-1 probe vs Bayes",
                seed="0.963 vs 0.970", rule="probe(L1) ≥ Bayes − 0.02",
                getter=lambda probes, bayes: (probes[1], bayes), holds=lambda v: v[0] >= v[1] - 0.02,
                margin=lambda v: v[0] - (v[1] - 0.02), expected="seed-dependent", section="probes-layer-by-layer"),
)
