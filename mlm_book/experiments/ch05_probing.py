r"""Chapter 5: sense probes on the HMM encoder, against the static cap and the exact Bayes accuracy.

The data are chapter 4's splits (`mlm_book.experiments.ch04_geometry.SPLITS`): the probe is
trained on every occurrence of $w$ in the 1500 training sequences and scored on every occurrence
in the 1500 test sequences, each labelled with its true (sampled) sense. At every layer the
table has the probe ([`mlm_book.probe.fit_and_score`][mlm_book.probe.fit_and_score]) and its shuffled-label control
([`mlm_book.probe.shuffled_control`][mlm_book.probe.shuffled_control], training labels permuted, scored on the true test
labels). Beside them:

* the shuffled-label **control** as claims S6-03 … S6-08 define it: the same probe *trained and
  scored on permuted senses* (training labels permuted within the training data, test labels
  permuted independently within the test data; [`mlm_book.probe.shuffled_control`][mlm_book.probe.shuffled_control] with
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

The probe's strength is `mlm_book.probe.PROBE_STRENGTH`, fixed a priori.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np

from mlm_book import probe
from mlm_book.experiments.ch04_geometry import SPLITS, SplitConfig, hmm_split, split_vectors
from mlm_book.hmm import bayes_sense_accuracy, default_hmm
from mlm_book.ledger import Claim
from mlm_book.pmi import static_cap

__all__ = ["CONTROL_SEED", "ProbeRow", "ProbeTable", "probe_table", "probe_markdown", "plot_probe_by_layer",
           "ControlSpread", "control_spread", "CLAIMS"]

#: Seed of the permutations of the shuffled-label controls (one generator per layer: seed + layer).
CONTROL_SEED = 5101


@dataclass(frozen=True)
class ProbeRow:
    """Probe and shuffled controls at one layer (accuracies on the test occurrences).

    ``control`` is trained and scored on permuted senses; ``control_true_labels`` is trained on
    permuted senses and scored on the true ones.
    """

    layer: int
    vector: str
    probe: float
    control: float
    control_true_labels: float
    stderr: float
    iterations: int
    gradient_norm: float


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
    """

    layer: int
    permuted: np.ndarray
    true_labels: np.ndarray
    binomial_sd: float


@functools.cache
def control_spread(layer: int = 1, n_permutations: int = 8) -> ControlSpread:
    """The shuffled control over ``n_permutations`` seeded permutations, scored both ways."""
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


def probe_markdown(table: ProbeTable | None = None) -> str:
    """The probe table as Markdown."""
    table = probe_table() if table is None else table
    lines = ["| representation | probe | shuffled control |", "|---|---|---|"]
    lines.append(f"| token table E[w] | {table.token_table:.3f} | — |")
    for row in table.rows:
        lines.append(f"| layer {row.layer} ({row.vector}) | {row.probe:.3f} | {row.control:.3f} |")
    lines.append(f"| static cap | {table.cap:.3f} | — |")
    lines.append(f"| exact Bayes | {table.bayes:.3f} | — |")
    return "\n".join(lines)


def plot_probe_by_layer():
    """Figure: probe accuracy by layer with its control, the static cap and the exact Bayes accuracy.

    Returns
    -------
    matplotlib.figure.Figure
    """
    import matplotlib.pyplot as plt

    table = probe_table()
    layers = np.arange(len(table.rows))
    fig, ax = plt.subplots(figsize=(6.0, 4.0), constrained_layout=True)
    ax.errorbar(layers, table.probes, yerr=[2 * row.stderr for row in table.rows], marker="o",
                label="probe (±2 SE)", color="tab:blue", capsize=3)
    ax.plot(layers, table.controls, marker="s", linestyle="--", label="shuffled control (permuted senses)", color="tab:gray")
    ax.axhline(table.bayes, color="tab:green", label="exact Bayes accuracy")
    ax.axhline(table.cap, color="tab:red", linestyle=":", label="static cap max_k pi_k")
    ax.scatter([-0.25], [table.token_table], marker="D", color="tab:orange", label="token table E[w]", zorder=3)
    ax.set_xticks(layers, [f"layer {layer}" for layer in layers])
    ax.set_ylim(0.4, 1.02)
    ax.set_ylabel(f"sense accuracy on {table.n_test} test occurrences")
    ax.legend(loc="center right", fontsize=8)
    return fig


# --------------------------------------------------------------------------------------
# Claims
# --------------------------------------------------------------------------------------

#: Sampling error allowed above Bayes (S1-10: about 0.005 for ~6700 occurrences).
ABOVE_BAYES = 0.005


def _expected_occurrences() -> float:
    hmm = default_hmm()
    return float(SPLITS.n_test * SPLITS.length * (hmm.initial @ hmm.emission[:, hmm.shared_token]))


CLAIMS = (
    Claim("S1-10", "Exact Bayes sense accuracy minus the probe's, at layers 1 / 2 (HMM test split)",
          seed="0.007 / 0.008", rule="≤ 0.02 at layers 1 and 2, and no probe above Bayes by more than 0.005",
          compute=lambda: tuple(probe_table().bayes - p for p in probe_table().probes[1:]),
          accept=lambda v: all(-ABOVE_BAYES <= x <= 0.02 for x in v)),
    Claim("S1-11", "Layer-2 probe vs the static cap", seed="0.962 vs 0.509", rule="probe ≥ cap + 0.3",
          compute=lambda: (probe_table().probes[2], probe_table().cap), accept=lambda v: v[0] >= v[1] + 0.3),
    Claim("S2-15", "Cor 1: probes on static inputs (token table E[w]; layer 0 = E[w] + P at the position) vs "
          "the cap", seed="≤ cap", rule="each ≤ cap + 0.015",
          compute=lambda: {"token table": probe_table().token_table, "layer 0": probe_table().probes[0],
                           "cap": probe_table().cap},
          accept=lambda v: v["token table"] <= v["cap"] + 0.015 and v["layer 0"] <= v["cap"] + 0.015),
    Claim("S2-17", "Token-table probe (E[w] for every occurrence) vs the test share of the training-majority "
          "sense, and the cap", seed="attains the cap",
          rule="equal to the majority share exactly; within ±0.015 of the cap",
          compute=lambda: (probe_table().token_table, probe_table().token_table_majority, probe_table().cap),
          accept=lambda v: v[0] == v[1] and abs(v[0] - v[2]) <= 0.015),
    Claim("S2-18", "Sense probe on HMM-encoder layer 2, test split", seed="0.962",
          rule="≥ Bayes − 0.02 and ≥ cap + 0.3",
          compute=lambda: probe_table().probes[2],
          accept=lambda v: v >= probe_table().bayes - 0.02 and v >= probe_table().cap + 0.3),
    Claim("S6-01", "Ridge strength lambda of the probe (mean log-loss + lambda/2 ||W||^2, intercept unpenalised), "
          "a module constant fixed a priori and used by every probe", seed="unstated",
          rule="a positive constant; not tuned on any split",
          compute=lambda: probe.PROBE_STRENGTH,
          accept=lambda v: v > 0 and probe.fit_and_score.__kwdefaults__["strength"] == v, fmt=".0e"),
    Claim("S6-02", "The two computable references: static cap and exact Bayes accuracy (forward–backward, "
          "test occurrences)", seed="0.509; 0.970", rule="cap in [0.50, 0.55]; cap < Bayes ≤ 1",
          compute=lambda: (probe_table().cap, probe_table().bayes),
          accept=lambda v: 0.50 <= v[0] <= 0.55 and v[0] < v[1] <= 1.0),
    Claim("S6-03", "Probe / shuffled control at layer 0 (E[x] + P at the occurrence's position)",
          seed="0.501 / 0.504", rule="both ≤ cap + 0.015",
          compute=lambda: (probe_table().rows[0].probe, probe_table().rows[0].control),
          accept=lambda v: max(v) <= probe_table().cap + 0.015),
    Claim("S6-04", "Probe / shuffled control at layer 1", seed="0.963 / 0.499",
          rule="probe ≥ Bayes − 0.02 and ≤ Bayes + 0.005; control ≤ cap + 0.015",
          compute=lambda: (probe_table().rows[1].probe, probe_table().rows[1].control),
          accept=lambda v: probe_table().bayes - 0.02 <= v[0] <= probe_table().bayes + ABOVE_BAYES
          and v[1] <= probe_table().cap + 0.015),
    Claim("S6-05", "Probe / shuffled control at layer 2", seed="0.962 / 0.505",
          rule="as S6-04; abs(L2 − L1) ≤ 0.01",
          compute=lambda: (probe_table().rows[2].probe, probe_table().rows[2].control),
          accept=lambda v: probe_table().bayes - 0.02 <= v[0] <= probe_table().bayes + ABOVE_BAYES
          and v[1] <= probe_table().cap + 0.015 and abs(v[0] - probe_table().rows[1].probe) <= 0.01),
    Claim("S6-06", "Reference rows: static cap and exact Bayes accuracy", seed="0.509; 0.970",
          rule="cap = max_k pi_k exactly, in [0.50, 0.55]; every probe ≤ Bayes + 0.005",
          compute=lambda: (probe_table().cap, probe_table().bayes),
          accept=lambda v: 0.50 <= v[0] <= 0.55 and max(probe_table().probes) <= v[1] + ABOVE_BAYES),
    Claim("S6-07", "Probe data: training sequences / test sequences / test occurrences of w", seed="1500 / 1500 / 6663",
          rule="1500 / 1500 exactly; occurrences within 5% of their expectation 36000 P(w)",
          compute=lambda: (SPLITS.n_train, SPLITS.n_test, probe_table().n_test),
          accept=lambda v: v[0] == 1500 and v[1] == 1500 and abs(v[2] - _expected_occurrences())
          <= 0.05 * _expected_occurrences(), fmt="d"),
    Claim("S6-08", "Shuffled-label control (trained and scored on permuted senses: training and test labels "
          "each permuted within their split) at layers 0 / 1 / 2", seed="0.504 / 0.499 / 0.505", rule="each ≤ cap + 0.015",
          compute=lambda: probe_table().controls, accept=lambda v: max(v) <= probe_table().cap + 0.015),
    Claim("S6-10", "One attention block reads off almost all the sense information: layer-1 probe vs Bayes",
          seed="0.963 vs 0.970", rule="probe(L1) ≥ Bayes − 0.02",
          compute=lambda: (probe_table().probes[1], probe_table().bayes), accept=lambda v: v[0] >= v[1] - 0.02),
)
