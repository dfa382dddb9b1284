r"""Chapter 10, part 2 (trained): one encoder on a family of HMM languages, each against its own exact optimum.

**What it reads.** The runs of [`mlm_book.artefacts.multilingual`][mlm_book.artefacts.multilingual]: the
book's HMM-encoder recipe in 2000 steps, trained at width 32 on the four languages of
``DATA_SHARES`` (0.70 / 0.20 / 0.07 / 0.03) sampled with $q \propto p^\alpha$ at $\alpha$ = 1, 0.7, 0.3
and 0 (``SHOWN_ALPHAS``), three seeds a point; the smallest language alone with the same number of its own
sentences per step as the mixture at $\alpha = 0.3$ gives it; the curse grid, 1, 2, 4 and 8 languages with
equal sampling shares at width 32 (``CURSE_LANGUAGES``); and the mixture at
$\alpha = 0.3$ with the large language's light states cycling the other way (``RULE``).

**What it measures.** Per language, the *excess loss*: the encoder's masked-LM cross-entropy minus the exact
optimum's under that language, in nats per selected position (zero is the best any model can do); the sense
probe at $w$ against the exact Bayes ceiling. For the bleed, at the smallest language's [MASK] positions
where its own exact reading of the hidden state differs from the reading under the large language's rule,
the share of a state probe's guesses that take the rule's reading.

**Rules, fixed before any run** (each judged at each of the three seeds, paired by seed): ``CLAIMS`` and
``STATED_BEFORE_RUN``.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np

from mlm_book.artefacts import multilingual as art
from mlm_book.ledger import Claim, over_seeds, verify
from mlm_book.report import Markdown, seed_band, table
from mlm_book.validation import as_float_array, check_finite_numbers, check_instance, check_real

__all__ = ["ALPHAS", "DATA_SHARES", "SEEDS", "SHOWN_ALPHAS", "CURSE_LANGUAGES", "CURSE_WIDTH",
           "SENSE_TOLERANCE", "BLEED_SHIFT", "MultilingualStudy", "results", "sweep_table", "sense_table",
           "alone_table", "curse_table", "bleed_table", "rules_table", "figure_excess", "figure_curse",
           "STATED_BEFORE_RUN", "CLAIMS"]

ALPHAS = art.ALPHAS
"""The sampling exponents of the sweep as designed."""
SHOWN_ALPHAS = ALPHAS
"""The sampling exponents the chapter reads: all of the sweep's."""
CURSE_LANGUAGES = art.CURSE_LANGUAGES
"""Numbers of languages of the curse grid (equal sampling shares)."""
CURSE_WIDTH = 32
"""The curse grid's fixed width (the book's). The width arm (8 languages at width 64) is left out of the build to
keep its cost down: see the declaration of [`mlm_book.artefacts.multilingual`][mlm_book.artefacts.multilingual]."""
DATA_SHARES = art.DATA_SHARES
SEEDS = art.SEEDS

SENSE_TOLERANCE = 0.03
"""D-23c: how far the smallest language's sense probe may sit below its exact ceiling (about six binomial
standard errors of an accuracy near 0.95 on the roughly 1,800 occurrences of w it is scored on)."""
BLEED_SHIFT = 0.03
"""D-26: how much larger the share of rule-reading guesses must be with the rule than without it (about two
standard errors of a difference of two shares near 0.1 on the roughly 600 positions where the readings differ)."""


@dataclass(frozen=True, eq=False)
class MultilingualStudy:
    """Every measurement the chapter shows, one row per seed (`SEEDS`, the book's first).

    Attributes
    ----------
    sweep_excess : dict
        α → array (seeds, 4): each language's excess loss in the mixture sampled at α.
    sweep_sense, sweep_ceiling : dict
        α → array (seeds, 4): each language's sense-probe accuracy and its exact ceiling.
    alone_excess : dict
        α (in ``ALONE_ALPHAS``) → array (seeds,): the smallest language alone, at the tokens the mixture at α
        gives it.
    alone_batch : dict
        α → its sentences per step alone.
    curse_excess : dict
        number of languages K → array (seeds, K): each language's excess at width `CURSE_WIDTH`.
    bleed_rule, bleed_plain : ndarray, shape (seeds, 4)
        The bleed reading of the smallest language with and without the large language's rule: share of the
        probe's guesses equal to the rule's reading where the readings differ, share equal to its own, how many
        such positions, and the probe's accuracy against the sampled states.
    losses : dict
        α → array (seeds, steps): the sweep's training losses.
    """

    sweep_excess: dict
    sweep_sense: dict
    sweep_ceiling: dict
    alone_excess: dict
    alone_batch: dict
    curse_excess: dict
    bleed_rule: np.ndarray
    bleed_plain: np.ndarray
    losses: dict

    def __post_init__(self):
        # the record is public (a reader may rebuild it with other numbers): refuse what would draw a wrong table
        for name in ("sweep_excess", "sweep_sense", "sweep_ceiling", "alone_excess", "alone_batch", "curse_excess",
                     "losses"):
            check_finite_numbers(check_instance(getattr(self, name), name, dict), name)
        for name in ("bleed_rule", "bleed_plain"):
            as_float_array(getattr(self, name), name, ndim=2)


@functools.cache
def results() -> MultilingualStudy:
    """Read every run (from the store) into a `MultilingualStudy`.

    Examples
    --------
    >>> study = results()  # doctest: +BOOK
    >>> study.sweep_excess[0.3].shape  # doctest: +BOOK
    (3, 4)
    """
    read = art.measurements
    sweep = {a: [read(art.sweep_run(a, s)) for s in SEEDS] for a in SHOWN_ALPHAS}
    curse = {k: np.array([read(art.curse_run(k, CURSE_WIDTH, s))["excess"] for s in SEEDS])
             for k in CURSE_LANGUAGES}
    return MultilingualStudy(
        sweep_excess={a: np.array([m["excess"] for m in ms]) for a, ms in sweep.items()},
        sweep_sense={a: np.array([m["sense_probe"] for m in ms]) for a, ms in sweep.items()},
        sweep_ceiling={a: np.array([m["sense_ceiling"] for m in ms]) for a, ms in sweep.items()},
        alone_excess={a: np.array([read(art.alone_run(a, s))["excess"][-1] for s in SEEDS]) for a in art.ALONE_ALPHAS},
        alone_batch={a: art.alone_run(a).training.batch_size for a in art.ALONE_ALPHAS},
        curse_excess=curse,
        bleed_rule=np.array([read(art.bleed_run(s))["bleed"] for s in SEEDS]),
        bleed_plain=np.array([m["bleed"] for m in sweep[0.3]]),
        losses={a: np.array([m["losses"] for m in ms]) for a, ms in sweep.items()})


# ----------------------------------------------------------------------------- claims
def _smallest_helped() -> dict:
    s = results()
    at1, at03 = s.sweep_excess[1.0][:, -1], s.sweep_excess[0.3][:, -1]
    return over_seeds(list(zip(at03, at1)), margins=at1 - at03, fmt=".4f")


def _largest_pays() -> dict:
    s = results()
    at1, at03 = s.sweep_excess[1.0][:, 0], s.sweep_excess[0.3][:, 0]
    return over_seeds(list(zip(at03, at1)), margins=at03 - at1, fmt=".4f")


def _smallest_sense() -> dict:
    s = results()
    probe, ceiling = s.sweep_sense[0.3][:, -1], s.sweep_ceiling[0.3][:, -1]
    return over_seeds(list(zip(probe, ceiling)), margins=SENSE_TOLERANCE - np.abs(ceiling - probe))


def _benefit() -> dict:
    s = results()
    inside, alone = s.sweep_excess[0.3][:, -1], s.alone_excess[0.3]
    return over_seeds(list(zip(inside, alone)), margins=alone - inside, fmt=".4f")


def _curse() -> dict:
    s = results()
    first, last = CURSE_LANGUAGES[0], CURSE_LANGUAGES[-1]
    gap = s.curse_excess[last].mean(axis=1) - s.curse_excess[first].mean(axis=1)
    return over_seeds(list(gap), margins=gap, fmt=".4f")


def _bleed() -> dict:
    s = results()
    rule, plain = s.bleed_rule[:, 0], s.bleed_plain[:, 0]
    return over_seeds(list(zip(rule, plain)), margins=(rule - plain) - BLEED_SHIFT)


_BASE = ("One HMM encoder (width 32, 2 blocks, 2000 Adam steps of 160 sentences of 24 tokens, BERT's channel; "
         "3 seeds, paired) trained on four HMM languages sharing chapter 1's hidden dynamics, each with 24 own "
         "tokens and the shared w, data shares 0.70 / 0.20 / 0.07 / 0.03 sampled with q ∝ p^α: ")
_MIXTURE = "one-encoder-trained-on-the-mixture"
_ALONE = "the-smallest-language-inside-the-mixture-and-alone"
_CURSE = "the-curse-of-multilinguality"
_BLEED = "does-the-large-languages-rule-bleed-into-the-small-one"

CLAIMS = (
    Claim("D-23a", _BASE + "the smallest language's excess loss over its exact optimum (nats per selected "
          "position) at α = 0.3, then at α = 1", seed="—",
          rule="lower at α = 0.3 than at α = 1, at a seed", compute=_smallest_helped, accept=lambda v: True,
          expected="reproduced", section=_MIXTURE),
    Claim("D-23b", _BASE + "the largest language's excess loss at α = 0.3, then at α = 1", seed="—",
          rule="higher at α = 0.3 than at α = 1, at a seed", compute=_largest_pays, accept=lambda v: True,
          expected="reproduced", section=_MIXTURE),
    Claim("D-23c", _BASE + "at α = 0.3, the smallest language's sense probe at w (last layer) against its exact "
          "Bayes ceiling", seed="—", rule=f"within {SENSE_TOLERANCE} of the ceiling, at a seed",
          compute=_smallest_sense, accept=lambda v: True, expected="seed-dependent", section=_MIXTURE),
    Claim("D-24", _BASE + "the smallest language's excess loss inside the mixture at α = 0.3, then for the same "
          "encoder trained on that language alone on as many of its own sentences per step (24)", seed="—",
          rule="lower inside the mixture than alone, at a seed", compute=_benefit, accept=lambda v: True,
          expected="reproduced", section=_ALONE),
    Claim("D-25", "The same encoder and recipe on 1 and on 8 such languages with equal sampling shares, at width "
          "32: the mean over languages of the excess loss with 8, minus with 1", seed="—",
          rule="positive (8 languages worse per language), at a seed", compute=_curse, accept=lambda v: True,
          expected="reproduced", section=_CURSE),
    Claim("D-26", _BASE + "at α = 0.3, with the largest language's light states cycling the other way (a rule the "
          "smallest lacks): at the smallest language's [MASK] positions where its own exact reading of the hidden "
          "state differs from the rule's, the share of a last-layer state probe's guesses equal to the rule's "
          "reading, with the rule and without it", seed="—",
          rule=f"at least {BLEED_SHIFT} higher with the rule, at a seed", compute=_bleed, accept=lambda v: True,
          expected="seed-dependent", section=_BLEED),
)
"""The trained multilingual rules, fixed before any run."""

STATED_BEFORE_RUN = {"D-23a": "reproduced", "D-23b": "reproduced", "D-23c": "reproduced", "D-24": "reproduced",
                     "D-25": "reproduced", "D-26": "reproduced"}
"""The verdict each rule was expected to get, committed with the rules before any run, and why:

* D-23a, reproduced: at α = 0.3 the smallest language gets 15 % of the sentences instead of 3 %, five times
  the updates of its own token embeddings.
* D-23b, reproduced: the largest language falls from 70 % to 39 % of the sentences.
* D-23c, reproduced: the book's encoder's sense probe sits near the ceiling (chapter 5), and the sense is read
  from the shared dynamics, which every language trains.
* D-24, reproduced: alone, the smallest language's encoder learns the hidden dynamics from its own 24
  sentences a step; inside the mixture it learns them from all 160.
* D-25, reproduced: at a fixed budget each of 8 languages gets an eighth of the sentences, and 193 token
  embeddings share a width of 32.
* D-26, reproduced: the languages share the encoder's blocks, and the large language holds 39 % of the
  sentences; if the blocks compute the hidden dynamics once for every language, the rule leaks.

A claim's ``expected`` is the verdict the chapter states, which is the one found: D-23c and D-26 came out
seed-dependent."""

_RULE_NAMES = ("smallest language: excess loss lower at α = 0.3 than at α = 1",
               "largest language: excess loss higher at α = 0.3 than at α = 1",
               f"smallest language at α = 0.3: sense probe within {SENSE_TOLERANCE} of its ceiling",
               "smallest language: excess loss lower inside the mixture (α = 0.3) than alone",
               "8 languages against 1 at width 32: mean excess loss higher",
               f"rule-reading share at least {BLEED_SHIFT} higher with the large language's rule")


def rules_table() -> Markdown:
    """Each rule, how many seeds satisfy it, its worst and best margin, the verdict stated before the run and the
    verdict found.

    Examples
    --------
    >>> print(rules_table().splitlines()[0])  # doctest: +BOOK
    | rule (fixed before training) | seeds holding | margin | expected before the run | found |
    """
    rows = []
    for name, result in zip(_RULE_NAMES, verify(claims=CLAIMS)):
        rows.append((name, result.value["seeds holding"], result.value["margin"],
                     STATED_BEFORE_RUN[result.claim.id], result.verdict))
    return table(["rule (fixed before training)", "seeds holding", "margin", "expected before the run", "found"],
                 rows)


# ----------------------------------------------------------------------------- tables and figures
def _study(study) -> MultilingualStudy:
    if study is None:
        return results()
    if not isinstance(study, MultilingualStudy):
        raise TypeError(f"study must be a MultilingualStudy, got {type(study).__name__}")
    return study


def sweep_table(study: MultilingualStudy | None = None) -> Markdown:
    """Each language's excess loss over its exact optimum (nats per selected position) at each α: the book's seed
    and, in brackets, mean ± sd over the seeds.

    Examples
    --------
    >>> print(sweep_table().splitlines()[0])  # doctest: +BOOK
    | α | L1 (p = 0.7) | L2 (p = 0.2) | L3 (p = 0.07) | L4 (p = 0.03) |
    """
    s = _study(study)
    rows = [[f"{a:g}", *(seed_band(s.sweep_excess[a][:, k], ".3f") for k in range(len(DATA_SHARES)))]
            for a in s.sweep_excess]
    return table(["α", *(f"L{k + 1} (p = {p:g})" for k, p in enumerate(DATA_SHARES))], rows)


def sense_table(study: MultilingualStudy | None = None) -> Markdown:
    """Each language's sense probe at w minus its exact Bayes ceiling, at each α (book's seed, mean ± sd).

    Examples
    --------
    >>> print(sense_table().splitlines()[0])  # doctest: +BOOK
    | α | L1 (p = 0.7) | L2 (p = 0.2) | L3 (p = 0.07) | L4 (p = 0.03) |
    """
    s = _study(study)
    rows = [[f"{a:g}", *(seed_band(s.sweep_sense[a][:, k] - s.sweep_ceiling[a][:, k], ".3f", signed=True)
                         for k in range(len(DATA_SHARES)))] for a in s.sweep_excess]
    return table(["α", *(f"L{k + 1} (p = {p:g})" for k, p in enumerate(DATA_SHARES))], rows)


def alone_table(study: MultilingualStudy | None = None) -> Markdown:
    """The smallest language inside the mixture and alone at the same sentences of its own per step.

    Examples
    --------
    >>> print(alone_table().splitlines()[0])  # doctest: +BOOK
    | α | its sentences per step | excess inside the mixture | excess alone | alone minus inside |
    """
    s = _study(study)
    rows = []
    for a in art.ALONE_ALPHAS:
        inside, alone = s.sweep_excess[a][:, -1], s.alone_excess[a]
        rows.append([f"{a:g}", str(s.alone_batch[a]), seed_band(inside, ".3f"), seed_band(alone, ".3f"),
                     seed_band(alone - inside, ".3f", signed=True)])
    return table(["α", "its sentences per step", "excess inside the mixture", "excess alone", "alone minus inside"],
                 rows)


def curse_table(study: MultilingualStudy | None = None) -> Markdown:
    """The mean excess per language at each number of languages (width `CURSE_WIDTH`).

    Examples
    --------
    >>> print(curse_table().splitlines()[0])  # doctest: +BOOK
    | languages | width | sentences per language per step | mean excess per language | worst language |
    """
    s = _study(study)
    rows = []
    for k in CURSE_LANGUAGES:
        width, excess = CURSE_WIDTH, s.curse_excess[k]
        rows.append([str(k), str(width), f"{art.RECIPE.batch_size / k:g}", seed_band(excess.mean(axis=1), ".3f"),
                     seed_band(excess.max(axis=1), ".3f")])
    return table(["languages", "width", "sentences per language per step", "mean excess per language",
                  "worst language"], rows)


def bleed_table(study: MultilingualStudy | None = None) -> Markdown:
    """The smallest language's state probe at [MASK], with and without the large language's rule.

    Examples
    --------
    >>> print(bleed_table().splitlines()[0])  # doctest: +BOOK
    | large language | positions where readings differ | probe takes the rule's reading | probe takes its own | probe accuracy, all [MASK]s |
    """
    s = _study(study)
    rows = []
    for name, b in (("cycles the other way", s.bleed_rule), ("shares the dynamics", s.bleed_plain)):
        rows.append([name, f"{int(b[0, 2])}", seed_band(b[:, 0]), seed_band(b[:, 1]), seed_band(b[:, 3])])
    return table(["large language", "positions where readings differ", "probe takes the rule's reading",
                  "probe takes its own", "probe accuracy, all [MASK]s"], rows)


def figure_excess(study: MultilingualStudy | None = None):
    """Excess loss by language and α, one dot a seed, with the smallest language alone beside it.

    Returns
    -------
    DescribedFigure

    Examples
    --------
    >>> import matplotlib.pyplot as plt
    >>> drawn = figure_excess()  # doctest: +BOOK
    >>> drawn.figure.axes[0].get_ylabel()  # doctest: +BOOK
    'excess loss (nats per selected token)'
    >>> plt.close(drawn.figure)  # doctest: +BOOK
    """
    from mlm_book.figures import PALETTE, WIDE, describe, subplots
    s = _study(study)
    colours = [PALETTE[c] for c in ("blue", "orange", "green", "vermillion")]
    fig, ax = subplots(1, 1, width=WIDE, height=3.6)
    K = len(DATA_SHARES)
    shown = list(s.sweep_excess)
    offsets = np.linspace(-0.27, 0.27, len(shown))
    for j, a in enumerate(shown):
        values = s.sweep_excess[a]
        for k in range(K):
            ax.plot(np.full(len(SEEDS), k + offsets[j]), values[:, k], "o", ms=4, color=colours[j],
                    label=f"α = {a:g}" if k == 0 else None)
    for a in art.ALONE_ALPHAS:
        ax.plot(np.full(len(SEEDS), K - 1 + 0.45), s.alone_excess[a], "x", ms=6, color=PALETTE["grey"],
                label=f"L{K} alone (as at α = {a:g})")
    ax.set_xticks(range(K), [f"L{k + 1}\n(p = {p:g})" for k, p in enumerate(DATA_SHARES)])
    ax.set_ylabel("excess loss (nats per selected token)")
    top = max(max(v.max() for v in s.sweep_excess.values()), max(v.max() for v in s.alone_excess.values()))
    ax.set_ylim(0, 1.35 * top)                       # room for the legend above the dots
    ax.legend(frameon=False, ncol=3, loc="upper left")
    smallest = {a: s.sweep_excess[a][:, -1].mean() for a in shown}
    largest = {a: s.sweep_excess[a][:, 0].mean() for a in shown}
    high, low = shown[0], shown[-1]
    alt = (f"Dots for the excess loss of each of {K} languages, one dot per seed and colour per α. The largest "
           f"language's mean excess goes from {largest[high]:.3f} at α = {high:g} to {largest[low]:.3f} at "
           f"α = {low:g}; the smallest's from {smallest[high]:.3f} to {smallest[low]:.3f}. Crosses beside the smallest language: the "
           f"same encoder trained on it alone, mean {np.mean(s.alone_excess[art.ALONE_ALPHAS[0]]):.3f}.")
    caption = ("Excess masked-LM loss over each language's exact optimum after training on the mixture at each "
               "α; one dot a seed.")
    return describe(fig, alt=alt, caption=caption)


def figure_curse(study: MultilingualStudy | None = None):
    """The curse curve: mean excess per language against the number of languages, one dot a seed.

    Returns
    -------
    DescribedFigure

    Examples
    --------
    >>> import matplotlib.pyplot as plt
    >>> drawn = figure_curse()  # doctest: +BOOK
    >>> drawn.figure.axes[0].get_xlabel()  # doctest: +BOOK
    'languages in the mixture (equal shares)'
    >>> plt.close(drawn.figure)  # doctest: +BOOK
    """
    from mlm_book.figures import PALETTE, describe, subplots
    s = _study(study)
    fig, ax = subplots(1, 1, height=3.4)
    xs = np.array(CURSE_LANGUAGES, dtype=float)
    means = np.array([s.curse_excess[k].mean() for k in CURSE_LANGUAGES])
    for j, k in enumerate(CURSE_LANGUAGES):
        ax.plot(np.full(len(SEEDS), float(k)), s.curse_excess[k].mean(axis=1), "o", ms=5, color=PALETTE["blue"],
                label=f"width {CURSE_WIDTH}" if j == 0 else None)
    ax.plot(xs, means, "-", lw=1, color=PALETTE["blue"])
    ax.set_xscale("log", base=2)
    ax.set_xticks(xs, [str(k) for k in CURSE_LANGUAGES])
    ax.minorticks_off()
    ax.set_xlabel("languages in the mixture (equal shares)")
    ax.set_ylabel("mean excess loss per language (nats)")
    ax.set_ylim(0, 1.25 * max(means.max(), max(v.mean(axis=1).max() for v in s.curse_excess.values())))
    ax.legend(frameon=False, loc="upper left")
    first, last = CURSE_LANGUAGES[0], CURSE_LANGUAGES[-1]
    alt = (f"Dots for the mean excess loss per language of an encoder of width {CURSE_WIDTH} trained on "
           f"{', '.join(str(k) for k in CURSE_LANGUAGES)} languages, one dot per seed: the mean over seeds goes "
           f"from {means[0]:.3f} with {first} to {means[-1]:.3f} with {last}.")
    caption = "Mean excess loss per language as the number of languages grows at a fixed width; one dot a seed."
    return describe(fig, alt=alt, caption=caption)
