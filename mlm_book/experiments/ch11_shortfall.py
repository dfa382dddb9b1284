r"""Chapter 11, open question Q7: does the filing encoder's visible-word shortfall close with training, or with κ?

At a selected position that shows its own word $v$, Theorem 2's optimum keeps
$q(v) = (\kappa + r/V)\,p(v) / (\kappa\,p(v) + r/V)$ of its mass on $v$, where $p$ is the context's prediction. With
the encoder's own `[MASK]` guess as $p$, that *plug-in* is what the encoder should keep when the word is visible; the
*shortfall* is the plug-in minus what it keeps, averaged over chapter 7's 512 held-out words
(``FilingMeasurements.visible``). The *realised share* $(\text{visible} - \text{guess}) / (\text{plug-in} -
\text{guess})$ is the part of the lift from the masked guess to the plug-in that the encoder makes: it is free of
the plug-in's own dependence on κ, so the kept-share arm can be set beside the longer ones.

The encoders ([`mlm_book.artefacts.filing_shortfall`][mlm_book.artefacts.filing_shortfall]): the book's filing
recipe at the first three seeds, trained for 1, 2 and 4 times its 3000 steps, and with the kept share doubled
(κ = 0.2, mask 0.7) at 1×.

The rules (``CLAIMS``), each judged at each of the three seeds, with the verdicts stated before the runs in
``STATED_BEFORE_RUN``:

* Q7, *training shrinks it*: the shortfall falls from 1× to 2× and from 2× to 4× steps;
* Q7a, *training closes it*: at 4× steps the shortfall is within
  [`KEPT_TOLERANCE`][mlm_book.experiments.ch11_shortfall.KEPT_TOLERANCE] (0.05) of zero, the tolerance the HMM
  encoder meets against its exact optimum (chapter 2);
* Q7b, *more kept tokens shrink it*: with κ = 0.2 the shortfall is below the same seed's at κ = 0.1, same steps.

Call [`results`][mlm_book.experiments.ch11_shortfall.results] for every number,
[`seed_table`][mlm_book.experiments.ch11_shortfall.seed_table],
[`rules_table`][mlm_book.experiments.ch11_shortfall.rules_table] and
[`figure_shortfall`][mlm_book.experiments.ch11_shortfall.figure_shortfall].

Examples
--------
>>> sorted(STATED_BEFORE_RUN) == sorted(claim.id for claim in CLAIMS)
True
>>> [claim.rule for claim in CLAIMS][1]
'shortfall at 4× steps ≤ 0.05, at a seed'
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np

from mlm_book.artefacts import filing_encoder, filing_shortfall
from mlm_book.ledger import VERDICTS, Claim, over_seeds, verify
from mlm_book.report import Markdown, seed_band, seed_words, table
from mlm_book.validation import as_float_array, check_instance, check_seeds, check_sequence

__all__ = [
    "ARMS",
    "CLAIMS",
    "KEPT_TOLERANCE",
    "SECTION",
    "STATED_BEFORE_RUN",
    "ShortfallStudy",
    "figure_shortfall",
    "results",
    "rules_table",
    "seed_table",
    "verdict_answer",
]

ARMS = ("1x", "2x", "4x", "kept")
"""The study's encoders: the book's recipe at 1, 2 and 4 times its steps, and at 1× with the kept share doubled."""

KEPT_TOLERANCE = 0.05
"""How close to its plug-in an encoder's kept-word probability must come to count as no shortfall: chapter 2's
tolerance for the HMM encoder against its exact optimum, which chapter 11's unigram-replacement section uses too."""

SECTION = "does-the-visible-word-shortfall-close-with-training"
"""The anchor of chapter 11's section that shows these numbers."""


@dataclass(frozen=True)
class ShortfallStudy:
    """Chapter 7's visible-word check on each encoder of the study, one value per seed.

    Attributes
    ----------
    seeds : tuple of int
        Training seeds, the book's first.
    guess, plugin, visible : dict of str to tuple of float
        Arm (one of `ARMS`) -> the mean probability on the word with the word masked (the guess), Theorem 2's
        plug-in from that guess under the arm's channel, and the mean probability kept with the word visible; one
        per seed.
    seconds : dict of str to tuple of float
        Arm -> each seed's training time in seconds, as the store recorded it (one core, a build's worker).

    Raises
    ------
    TypeError
        If a field is not of its type.
    ValueError
        If the arms are not `ARMS`, a row does not hold one probability in [0, 1] per seed, or the seeds repeat.
    """

    seeds: tuple
    guess: dict
    plugin: dict
    visible: dict
    seconds: dict

    def __post_init__(self):
        check_seeds(self.seeds)
        if len(set(self.seeds)) != len(self.seeds):
            raise ValueError(f"seeds must not repeat, got {self.seeds}")
        for name in ("guess", "plugin", "visible", "seconds"):
            value = check_instance(getattr(self, name), name, dict)
            if list(value) != list(ARMS):
                raise ValueError(f"{name} must have one entry per arm {ARMS}, in order, got {list(value)}")
            for row in value.values():
                if name == "seconds":
                    if not isinstance(row, tuple) or len(row) != len(self.seeds) or any(
                            isinstance(v, bool) or not isinstance(v, (int, float)) or not 0.0 < v < float("inf")
                            for v in row):
                        raise ValueError(f"seconds must hold a tuple of one positive finite time per seed "
                                         f"({len(self.seeds)}), got {row!r:.60}")
                    continue
                if not isinstance(row, tuple) or len(row) != len(self.seeds):
                    raise ValueError(f"{name} must hold a tuple of one probability per seed ({len(self.seeds)}), "
                                     f"got {row!r:.60}")
                if any(isinstance(v, bool) or not isinstance(v, (int, float)) or not 0.0 <= v <= 1.0 for v in row):
                    raise ValueError(f"{name} must hold probabilities in [0, 1], got {row!r:.60}")

    def shortfall(self, arm: str) -> list[float]:
        """Each seed's plug-in minus visible for ``arm``.

        Raises
        ------
        ValueError
            If ``arm`` is not one of `ARMS`.
        """
        self._check_arm(arm)
        return [p - v for p, v in zip(self.plugin[arm], self.visible[arm])]

    def realised(self, arm: str) -> list[float]:
        """Each seed's realised share (visible − guess) / (plug-in − guess) for ``arm``.

        Raises
        ------
        ValueError
            If ``arm`` is not one of `ARMS`.
        """
        self._check_arm(arm)
        return [(v - g) / (p - g) for g, p, v in zip(self.guess[arm], self.plugin[arm], self.visible[arm])]

    @staticmethod
    def _check_arm(arm):
        if arm not in ARMS:
            raise ValueError(f"arm must be one of {ARMS}, got {arm!r:.40}")


@functools.cache
def results() -> ShortfallStudy:
    """The study's twelve encoders' visible-word checks (chapter 7's measurements); from the store, built on a miss.

    Examples
    --------
    >>> study = results()  # doctest: +BOOK
    >>> study.seeds, len(study.shortfall("4x"))  # doctest: +BOOK
    ((20240601, 1, 2), 3)
    """
    arms = filing_shortfall.study_setups()
    measured = {arm: [filing_encoder.seed_results(setup) for setup in arms[arm]] for arm in ARMS}
    field = {name: {arm: tuple(float(m.visible[name]) for m in measured[arm]) for arm in ARMS}
             for name in ("guess", "plugin", "visible")}
    seconds = {arm: tuple(float(m.seconds) for m in measured[arm]) for arm in ARMS}
    return ShortfallStudy(seeds=tuple(filing_shortfall.SEEDS), seconds=seconds, **field)


# ----------------------------------------------------------------------------- claims
def _training_shrinks_it() -> dict:
    study = results()
    s1, s2, s4 = (study.shortfall(arm) for arm in ("1x", "2x", "4x"))
    return over_seeds(list(zip(s1, s2, s4)), margins=[min(a - b, b - c) for a, b, c in zip(s1, s2, s4)])


def _training_closes_it() -> dict:
    s4 = results().shortfall("4x")
    return over_seeds(s4, margins=[KEPT_TOLERANCE - s for s in s4])


def _kept_shrinks_it() -> dict:
    study = results()
    kept, book = study.shortfall("kept"), study.shortfall("1x")
    return over_seeds(list(zip(kept, book)), margins=[b - k for k, b in zip(kept, book)])


_QUANTITY = ("The filing encoder's visible-word shortfall (Theorem 2's plug-in from its own [MASK] guess minus the "
             "probability it keeps on the word shown, mean over chapter 7's 512 held-out words), with the book's "
             f"recipe at {len(filing_shortfall.SEEDS)} training seeds: ")

CLAIMS = (
    Claim("Q7", _QUANTITY + "at 1, 2 and 4 times the book's 3000 steps (warm-up share and total weight decay kept)",
          seed="—", rule="shortfall at 1× > at 2× > at 4× steps, at a seed", compute=_training_shrinks_it,
          accept=lambda v: True, expected="reproduced", section=SECTION),
    Claim("Q7a", _QUANTITY + "at 4 times the book's steps", seed="—",
          rule=f"shortfall at 4× steps ≤ {KEPT_TOLERANCE}, at a seed", compute=_training_closes_it,
          accept=lambda v: True, expected="not reproduced", section=SECTION),
    Claim("Q7b", _QUANTITY + "with the kept share doubled (κ = 0.2, mask 0.7) and at the book's κ = 0.1, both at "
          "the book's steps", seed="—", rule="shortfall at κ = 0.2 < at κ = 0.1, at a seed",
          compute=_kept_shrinks_it, accept=lambda v: True, expected="reproduced", section=SECTION),
)
"""Does the shortfall shrink with training (Q7), close with it (Q7a), and shrink with the kept share (Q7b)? All three
rules were fixed before any of the study's new runs was read."""

STATED_BEFORE_RUN = {"Q7": "reproduced", "Q7a": "not reproduced", "Q7b": "reproduced"}
"""The verdict each rule was expected to get, committed with the rules before any new run was read, and why. The
evidence at hand was chapter 7's: the shortfall at 1× is 0.134 to 0.157 over the five seeds; at the book's seed it
is 0.153, 0.117 at 2× steps and 0.082 with κ = 0.2 (the build of 2026-12-04).

* Q7, reproduced: twice the steps took 0.036 off at the book's seed, and chapter 7's account (the shortfall is a
  rare-word effect of too few kept examples) predicts that every doubling of the kept examples helps.
* Q7a, not reproduced: if each doubling takes off about what the first did, 4× leaves about 0.08, above the 0.05
  the HMM encoder meets; an account by kept examples alone predicts slow, not complete, closing.
* Q7b, reproduced: with κ = 0.2 the book's seed fell to 0.082 from 0.153."""

_RULE_NAMES = {"Q7": "the shortfall falls from 1× to 2× to 4× steps",
               "Q7a": f"at 4× steps the shortfall is at most {KEPT_TOLERANCE}",
               "Q7b": "with κ = 0.2 the shortfall is below the book's κ = 0.1"}


def rules_table() -> Markdown:
    """The three rules: each rule, how many seeds satisfy it, its worst and best margin, the verdict stated before the
    runs and the verdict found.

    Examples
    --------
    >>> print(rules_table().splitlines()[0])  # doctest: +BOOK
    | rule (fixed before the runs) | seeds holding | margin | expected before the run | found |
    """
    rows = [(_RULE_NAMES[result.claim.id], result.value["seeds holding"], result.value["margin"],
             STATED_BEFORE_RUN[result.claim.id], result.verdict) for result in verify(claims=CLAIMS)]
    return table(["rule (fixed before the runs)", "seeds holding", "margin", "expected before the run", "found"],
                 rows)


def verdict_answer(found: dict, shortfall_4x) -> str:
    """The section's answer, written from the three rules' verdicts, so that it reads right whichever way the runs
    come out.

    Parameters
    ----------
    found : dict
        ``"Q7"``, ``"Q7a"`` and ``"Q7b"`` -> the verdict each rule got (one of ``mlm_book.ledger.VERDICTS``).
    shortfall_4x : sequence of float, shape (seeds,)
        Each seed's shortfall at 4× steps (``ShortfallStudy.shortfall("4x")``).

    Returns
    -------
    str
        Markdown, opening with ``**Answer:**``.

    Raises
    ------
    TypeError
        If ``found`` is not a dict, or ``shortfall_4x`` does not hold numbers.
    ValueError
        If ``found`` lacks a rule or holds an unknown verdict, or ``shortfall_4x`` is not one finite number per
        seed (at least two).

    Examples
    --------
    >>> found = {"Q7": "reproduced", "Q7a": "not reproduced", "Q7b": "reproduced"}
    >>> verdict_answer(found, [0.09, 0.08, 0.1])[:60]
    '**Answer:** it shrinks with training but does not close: at '
    >>> verdict_answer({"Q7": "reproduced", "Q7a": "reproduced", "Q7b": "reproduced"}, [0.03, 0.04])[:40]
    '**Answer:** yes, it closes with training'
    """
    check_instance(found, "found", dict)
    for rule in ("Q7", "Q7a", "Q7b"):
        if found.get(rule) not in VERDICTS:
            raise ValueError(f"found must give {rule}'s verdict, one of {VERDICTS}, got {found.get(rule)!r:.40}")
    s4 = as_float_array(check_sequence(shortfall_4x, "shortfall_4x"), "shortfall_4x", ndim=1)
    if s4.size < 2:
        raise ValueError(f"shortfall_4x must hold one number per seed, at least two, got {s4.size}")
    kept = (" More kept tokens shrink it too." if found["Q7b"] == "reproduced" else
            " Doubling the kept share does not shrink it at every seed." if found["Q7b"] == "seed-dependent" else
            " Doubling the kept share does not shrink it.")
    if found["Q7a"] == "reproduced":
        return (f"**Answer:** yes, it closes with training: at four times the steps the encoder keeps within "
                f"{KEPT_TOLERANCE} of what its own guess implies at every seed, so the shortfall was undertraining."
                + kept)
    if found["Q7"] == "reproduced":
        return (f"**Answer:** it shrinks with training but does not close: at four times the steps it is still "
                f"{seed_words(s4)}, above the {KEPT_TOLERANCE} the HMM encoder meets. Training length is a cause, "
                "not the whole of it." + kept)
    return ("**Answer:** training length does not explain it: the shortfall does not fall with every doubling of "
            f"the steps at every seed, and at four times the steps it is {seed_words(s4)}." + kept)


# ----------------------------------------------------------------------------- table and figure
def seed_table(study: ShortfallStudy | None = None) -> Markdown:
    """One row per encoder and quantity, one column per seed and a last one with the mean ± sd: the shortfall and
    the realised share at 1×, 2× and 4× steps and with the kept share doubled (seeds as columns keep the table
    within the page).

    Raises
    ------
    TypeError
        If ``study`` is not a `ShortfallStudy`.

    Examples
    --------
    >>> print(seed_table().splitlines()[0])  # doctest: +BOOK
    | visible-word check | seed 20240601 | seed 1 | seed 2 | mean ± sd |
    """
    study = results() if study is None else check_instance(study, "study", ShortfallStudy)
    label = {"1x": "book's steps", "2x": "2 × steps", "4x": "4 × steps", "kept": "κ = 0.2, book's steps"}
    rows = []
    for quantity, read in (("shortfall", study.shortfall), ("realised share", study.realised)):
        for arm in ARMS:
            values = read(arm)
            rows.append((f"{quantity}, {label[arm]}", *(f"{v:.3f}" for v in values), seed_band(values, book=False)))
    return table(["visible-word check", *(f"seed {seed}" for seed in study.seeds), "mean ± sd"], rows)


def figure_shortfall(study: ShortfallStudy | None = None):
    """The shortfall against training length (1×, 2×, 4× the book's steps, log scale), one dot per seed and a line
    per seed, the κ = 0.2 encoders at 1× beside them and the 0.05 tolerance marked.

    Returns
    -------
    DescribedFigure
        The drawing, with its alt text (each arm's range over the seeds, computed) and caption.

    Raises
    ------
    TypeError
        If ``study`` is not a `ShortfallStudy`.

    Examples
    --------
    >>> drawn = figure_shortfall()  # doctest: +BOOK
    >>> drawn.alt.startswith("The filing encoder's visible-word shortfall")  # doctest: +BOOK
    True
    """
    from mlm_book.figures import NARROW, PALETTE, describe, subplots

    study = results() if study is None else check_instance(study, "study", ShortfallStudy)
    steps = filing_encoder.training_config(filing_encoder.SETUP).steps
    fig, ax = subplots(1, 1, width=NARROW, height=3.6)
    lengths = [steps * times for times in filing_shortfall.LENGTHS]
    by_length = np.array([study.shortfall(f"{times}x") for times in filing_shortfall.LENGTHS])   # (lengths, seeds)
    kept = study.shortfall("kept")
    for k in range(len(study.seeds)):
        ax.plot(lengths, by_length[:, k], color=PALETTE["blue"], lw=1.0, alpha=0.6, zorder=2)
        ax.scatter(lengths, by_length[:, k], s=22, color=PALETTE["blue"], zorder=3,
                   label="κ = 0.1 (the book's)" if k == 0 else None)
    ax.scatter([steps * 1.06] * len(kept), kept, s=26, marker="D", color=PALETTE["vermillion"], zorder=3,
               label="κ = 0.2 (mask 0.7)")
    ax.axhline(KEPT_TOLERANCE, color=PALETTE["grey"], ls=":", lw=1.0)
    ax.text(lengths[-1], KEPT_TOLERANCE, f"  {KEPT_TOLERANCE}", va="center", ha="left", fontsize=9,
            color=PALETTE["grey"])
    ax.set_xscale("log", base=2)
    ax.set_xticks(lengths, [f"{n:,}" for n in lengths])
    ax.minorticks_off()
    ax.set_xlim(lengths[0] / 1.3, lengths[-1] * 1.5)
    ax.set_ylim(0.0, max(float(by_length.max()), max(kept)) * 1.15)
    ax.set_xlabel("training steps")
    ax.set_ylabel("plug-in − kept, visible word")
    ax.legend(loc="lower left")

    def span(values):
        return f"{min(values):.3f} to {max(values):.3f}"

    alt = ("The filing encoder's visible-word shortfall (plug-in minus kept probability) against training steps, "
           f"one dot per training seed ({len(study.seeds)}): "
           + ", ".join(f"{n:,} steps {span(row)}" for n, row in zip(lengths, by_length.tolist()))
           + f"; with κ = 0.2 at {steps:,} steps {span(kept)}. A dotted line marks {KEPT_TOLERANCE}.")
    caption = ("Each dot is one training seed's encoder, measured on the same 512 held-out words; a line joins a "
               "seed's three training lengths. The diamonds are the same seeds trained at the book's length with "
               f"the kept share doubled. The dotted line is the {KEPT_TOLERANCE} that the HMM encoder meets.")
    return describe(fig, alt, caption)
