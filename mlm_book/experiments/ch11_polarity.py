r"""Chapter 11, open question Q8: can a representation built from the filing encoder recover a word's polarity?

**The question.** Chapters 6 and 7 found that no single representation recovers a lexicon word's
dictionary polarity (positive or negative) above chance: a leave-one-out probe over the 35
lexicon words' mean vectors (skip-gram, or the filing encoder's layers 0, 1, 2, each
occurrence read at the centre of its own 32-token window) stays within two standard errors of
one half. Document-pooled semantic orientation
([`mlm_book.finance.orientation.semantic_orientation`][mlm_book.finance.orientation.semantic_orientation],
Turney-style co-occurrence with seed words counted per filing and summed over filings) does
recover it. The caveat: a 32-token window never pools, and the sentences barely carry the
polarity (chapter 6's lexicon-neighbour voting). Can the filing encoder's representations,
pooled the way orientation pools, recover it?

**The method.** Every experiment runs on each of the five filing encoders
([`mlm_book.artefacts.filing_encoder.SEEDS`][mlm_book.artefacts.filing_encoder.SEEDS], the
book's first; one run of the artefact [`mlm_book.artefacts.filing_polarity`][mlm_book.artefacts.filing_polarity]
per encoder, where the pieces named below live) and uses chapter 6's exact probe protocol
([`loo_accuracy`][mlm_book.artefacts.filing_polarity.loo_accuracy]): one feature vector per
lexicon word (the 35 words of `LEXICON` in [`mlm_book.finance.world`][mlm_book.finance.world], in
its order), label 1 for positive, [`mlm_book.probe.cross_validate`][mlm_book.probe.cross_validate]
with leave-one-word-out splits at the book's probe strength. Chance is one half with standard
error $\sqrt{0.25/35}$; a representation *recovers* polarity when its accuracy exceeds
[`THRESHOLD`][mlm_book.experiments.ch11_polarity.THRESHOLD] $= 0.5 + 2\sqrt{0.25/35}$.

1. **Document pooling of the word's own contextual vectors**
   ([`document_pooled`][mlm_book.artefacts.filing_polarity.document_pooled]). Each occurrence of a
   lexicon word is read as chapter 6 reads it (centre of its own window,
   [`mlm_book.artefacts.filing_encoder.centre_states`][mlm_book.artefacts.filing_encoder.centre_states]);
   its vectors are averaged within each filing first, then over the filings, so that every
   filing counts once, as a document does in orientation's pooled counts. At layer 0 the
   centred reading gives one vector per word ($E[w] + P_{16}$), so layer 0 equals chapter 7's.
   *Decided before computing:* the other reading suggested by the question, the whole-filing
   vectors of the filings a word occurs in, is experiment 2's "whole filing" row: pooled there
   with weight $n_d(w)$, the number of the word's occurrences in filing $d$, which is exactly
   the weight of orientation's co-occurrence count $C(w, P) = \sum_d n_d(w)\, n_d(P)$.
2. **Context beyond the window, averaged**
   ([`neighbour_pooled`][mlm_book.artefacts.filing_polarity.neighbour_pooled]). The position
   table has 32 rows, so windows cannot grow; instead, at each occurrence, the layer-$\ell$
   vectors of every token of its filing within $k$ positions of it are averaged
   ($k \in$ [`RADII`][mlm_book.artefacts.filing_polarity.RADII]: 0, 8, 16, 32 and the whole
   filing), and the word's feature vector is the mean of that over its occurrences (chapter 7's
   mean). Every token's vector comes from one reading of the whole corpus: chapter 6's
   nearest-centre reading (windows of 32 every [`READ_STRIDE`][mlm_book.artefacts.filing_polarity.READ_STRIDE]
   tokens, each token read in the window where it sits nearest the centre,
   [`mlm_book.finance.windows.nearest_centre`][mlm_book.finance.windows.nearest_centre]).
   *Why not the centred reading:* it takes one forward pass per token, about 25 s per encoder
   for the corpus's 59,158 tokens on one core, five times the budget of the whole section; the
   nearest-centre reading reads every token once with about 16 times fewer passes, with at
   least eight tokens of context on each side except near a filing's edges. $k = 0$ is each
   occurrence's own vector in that reading (chapter 7's probe, read the other way).
3. **Orientation from the encoder's own predictions**
   ([`head_orientation`][mlm_book.artefacts.filing_polarity.head_orientation]). Chapter 6's formula,
   $\operatorname{SO}(w) = \log\frac{C(w,P) + \alpha}{C(w,N) + \alpha} - \log\frac{n(P)}{n(N)}$
   with $C(w, P) = \sum_d n_d(w)\, n_d(P)$
   ([`pooled_orientation`][mlm_book.artefacts.filing_polarity.pooled_orientation]), with one
   substitution: each filing's *observed* seed counts $n_d(P)$, $n_d(N)$ are replaced by the
   masked-LM head's *expected* counts $\hat n_d(P) = \sum_j q_j(P)$, $\hat n_d(N) = \sum_j q_j(N)$.
   The sum runs over the filing's seed slots $j$ (the positions where one of the six seed words
   stands), each read at the centre of its own window with `[MASK]` in its place, and
   $q_j(P)$ is the head's probability of the three positive seeds there ($q_j(N)$ of the three
   negative ones). The head is told *where* a seed stands but not *which*. A head that put all
   its mass on the word that stands there would give chapter 6's orientation exactly; one that
   cannot tell the seeds' polarity from the window gives every filing the same odds and an
   orientation of noise. Compared with chapter 6's scores on the same 35 words by Spearman
   correlation and sign agreement.

**The rules, fixed before any number was computed** (the constants and claims below): each
pooled representation of experiments 1 and 2 recovers polarity when its accuracy exceeds
[`THRESHOLD`][mlm_book.experiments.ch11_polarity.THRESHOLD] at layer 1 or at layer 2 (the
contextual layers, [`CONTEXT_LAYERS`][mlm_book.experiments.ch11_polarity.CONTEXT_LAYERS]); the
head's orientation recovers it when its accuracy exceeds the same threshold. The registered
claim ([`CLAIMS`][mlm_book.experiments.ch11_polarity.CLAIMS]) is whole-filing pooling, the one
that pools as orientation does; the others are in
[`PRESTATED`][mlm_book.experiments.ch11_polarity.PRESTATED].

What the experiments show is written in chapter 11, from this module's tables and figures; the
tests check each statement there.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import numpy as np

from mlm_book.artefacts import filing_encoder as fe
from mlm_book.artefacts import filing_polarity
from mlm_book.artefacts.filing_polarity import LAYERS, MAX_WORDS, RADII, spearman
from mlm_book.ledger import Claim, over_seeds
from mlm_book.readings.filing_baselines import baselines
from mlm_book.report import Markdown, table
from mlm_book.report import seed_band
from mlm_book.validation import (
    as_float_array,
    as_int_array,
    check_instance,
    check_real,
)

__all__ = [
    "CHANCE",
    "CHANCE_SE",
    "CLAIMS",
    "CONTEXT_LAYERS",
    "PRESTATED",
    "THRESHOLD",
    "WORDS",
    "PolarityRecovery",
    "accuracy_table",
    "figure_polarity",
    "orientation_table",
    "results",
]

# --------------------------------------------------------------------------------------
# The protocol and the rules, fixed before any number was computed
# --------------------------------------------------------------------------------------


CONTEXT_LAYERS = (1, 2)
"""The contextual layers: a pooled representation recovers polarity if it does at one of these (layer 0 is
the static table plus a position, shown for comparison, judged by no rule)."""

WORDS = 35
"""Lexicon words probed (the book's lexicon: 18 positive, 17 negative)."""

CHANCE = 0.5
"""Chance accuracy of the leave-one-out polarity probe (chapter 6's)."""

CHANCE_SE = math.sqrt(0.25 / WORDS)
r"""Standard error of an accuracy over 35 coin flips, $\sqrt{0.25/35} \approx 0.0845$ (chapter 6's)."""

THRESHOLD = CHANCE + 2 * CHANCE_SE
r"""The rule of every experiment: an accuracy **above** $0.5 + 2\sqrt{0.25/35} \approx 0.669$ recovers polarity
(chapter 6's two standard errors above chance)."""


def _check_seeds(seeds) -> tuple:
    if seeds is None:
        return fe.SEEDS
    if not isinstance(seeds, tuple) or len(seeds) < 2 or not all(
            isinstance(s, int) and not isinstance(s, bool) for s in seeds):
        raise TypeError(f"seeds must be a tuple of at least two integer training seeds, got {seeds!r:.60}")
    if len(set(seeds)) != len(seeds):
        raise ValueError(f"seeds must be distinct, got {seeds}")
    unknown = [s for s in seeds if s not in fe.SEEDS]
    if unknown:
        raise ValueError(f"seeds must be among the filing encoder's trained seeds {fe.SEEDS} (another seed would "
                         f"train a new encoder), got {unknown[0]}")
    return seeds


# --------------------------------------------------------------------------------------
# The results
# --------------------------------------------------------------------------------------


def _accuracies(value, name: str, shape: tuple) -> np.ndarray:
    array = as_float_array(value, name, ndim=len(shape))
    if array.shape != shape:
        raise ValueError(f"{name} must have shape {shape}, got {array.shape}")
    if array.min() < 0 or array.max() > 1:
        raise ValueError(f"{name} must hold accuracies in [0, 1]")
    return array


@dataclass(frozen=True, eq=False)
class PolarityRecovery:
    r"""The three experiments at every seed: leave-one-out polarity accuracies and the head's orientation.

    Attributes
    ----------
    seeds : tuple of int
        The filing encoder's training seeds, the book's first; ``S`` of them.
    words : tuple of str
        The ``W`` lexicon words, in ``LEXICON``'s order.
    truth : numpy.ndarray of int, shape (W,)
        Dictionary polarity, +1 or -1.
    chapter7 : numpy.ndarray, shape (S, 3)
        Chapter 7's probe on each word's mean vector (centred reading), layers 0, 1, 2.
    document : numpy.ndarray, shape (S, 3)
        Experiment 1: the word's vectors (centred reading) averaged per filing, then over filings.
    neighbour : numpy.ndarray, shape (S, R, 3)
        Experiment 2: the mean over the word's occurrences of the vectors within each radius of ``RADII``.
    head_score : numpy.ndarray, shape (S, W)
        Experiment 3: the head's orientation of each word (nats).
    head_accuracy : numpy.ndarray, shape (S,)
        Share of the words whose head orientation has the dictionary's sign.
    slot_accuracy : numpy.ndarray, shape (S,)
        Share of the seed slots where the head puts more mass on the seeds of the polarity that stands there.
    slot_mass : numpy.ndarray, shape (S,)
        Mean mass the head puts on the six seed words at a seed slot.
    reference_score : numpy.ndarray, shape (W,)
        Chapter 6's document-pooled orientation of each word (observed seed counts).
    reference_accuracy : float
        Its accuracy.

    Raises
    ------
    TypeError, ValueError
        If ``seeds`` is not a tuple of at least two integers or ``words`` not a tuple of strings, ``truth`` is not
        ±1 per word, an array is not finite and of the shape above, or an accuracy or mass is outside [0, 1].

    Examples
    --------
    >>> r = PolarityRecovery(seeds=(1, 2), words=("up", "down", "flat"), truth=[1, -1, -1],
    ...     chapter7=np.full((2, 3), 0.5), document=np.full((2, 3), 0.5), neighbour=np.full((2, 5, 3), 0.5),
    ...     head_score=[[1.0, -1.0, -1.5], [2.0, -1.0, -0.5]], head_accuracy=[1.0, 1.0], slot_accuracy=[0.6, 0.7],
    ...     slot_mass=[0.3, 0.4], reference_score=[1.0, -2.0, -1.0], reference_accuracy=1.0)
    >>> r.head_sign_agreement.round(3).tolist(), r.head_spearman.tolist()
    ([1.0, 1.0], [0.5, 1.0])
    """

    seeds: tuple
    words: tuple
    truth: np.ndarray
    chapter7: np.ndarray
    document: np.ndarray
    neighbour: np.ndarray
    head_score: np.ndarray
    head_accuracy: np.ndarray
    slot_accuracy: np.ndarray
    slot_mass: np.ndarray
    reference_score: np.ndarray
    reference_accuracy: float

    def __post_init__(self):
        if not isinstance(self.seeds, tuple) or len(self.seeds) < 2 or not all(
                isinstance(s, int) and not isinstance(s, bool) for s in self.seeds):
            raise TypeError(f"seeds must be a tuple of at least two integers, got {self.seeds!r:.60}")
        if not isinstance(self.words, tuple) or not all(isinstance(w, str) for w in self.words):
            raise TypeError(f"words must be a tuple of strings, got {self.words!r:.60}")
        if not 3 <= len(self.words) <= MAX_WORDS:
            raise ValueError(f"words must hold between 3 and {MAX_WORDS} words, got {len(self.words)}")
        S, W, L = len(self.seeds), len(self.words), len(LAYERS)
        truth = as_int_array(self.truth, "truth", ndim=1)
        if truth.shape != (W,) or np.any(np.abs(truth) != 1):
            raise ValueError(f"truth must hold one polarity (+1 or -1) per word ({W})")
        fields = {"truth": truth,
                  "chapter7": _accuracies(self.chapter7, "chapter7", (S, L)),
                  "document": _accuracies(self.document, "document", (S, L)),
                  "neighbour": _accuracies(self.neighbour, "neighbour", (S, len(RADII), L)),
                  "head_accuracy": _accuracies(self.head_accuracy, "head_accuracy", (S,)),
                  "slot_accuracy": _accuracies(self.slot_accuracy, "slot_accuracy", (S,)),
                  "slot_mass": _accuracies(self.slot_mass, "slot_mass", (S,))}
        for name, shape in (("head_score", (S, W)), ("reference_score", (W,))):
            array = as_float_array(getattr(self, name), name, ndim=len(shape))
            if array.shape != shape:
                raise ValueError(f"{name} must have shape {shape}, got {array.shape}")
            fields[name] = array
        check_real(self.reference_accuracy, "reference_accuracy", low=0.0, high=1.0)
        for name, value in fields.items():
            value = np.array(value)
            value.flags.writeable = False
            object.__setattr__(self, name, value)

    @property
    def radii(self) -> tuple:
        """The pooling radii of ``neighbour``'s second axis (``None``: the whole filing)."""
        return RADII

    @property
    def head_spearman(self) -> np.ndarray:
        """``(S,)`` Spearman correlation of the head's orientation with chapter 6's, over the words."""
        return np.array([spearman(row, self.reference_score) for row in self.head_score])

    @property
    def head_sign_agreement(self) -> np.ndarray:
        """``(S,)`` share of the words whose head orientation has the sign of chapter 6's."""
        return np.mean(np.sign(self.head_score) == np.sign(self.reference_score), axis=1)

    def recovers(self, accuracies) -> np.ndarray:
        """``(S,)`` bool: the rule at each seed, for ``(S, 3)`` accuracies by layer (above ``THRESHOLD`` at layer
        1 or layer 2).

        Examples
        --------
        >>> r = results()  # doctest: +BOOK
        >>> r.recovers(np.array([[0.9, 0.5, 0.5], [0.5, 0.7, 0.5], [0.5, 0.5, 0.5], [0.5] * 3, [0.5] * 3])).tolist()
        [False, True, False, False, False]
        """
        values = _accuracies(accuracies, "accuracies", (len(self.seeds), len(LAYERS)))
        return np.any(values[:, list(CONTEXT_LAYERS)] > THRESHOLD, axis=1)


def results(seeds: tuple | None = None) -> PolarityRecovery:
    r"""The three experiments on the filing encoders at ``seeds`` (the artefact
    [`mlm_book.artefacts.filing_polarity`][mlm_book.artefacts.filing_polarity], one run per seed; memoised).

    A cold build reads each encoder once in the nearest-centre reading (about 4,000 windows), reads the lexicon
    occurrences and the seed slots in their centred windows, and fits 18 leave-one-out probes of 35 fits: about
    five seconds per encoder on one core.

    Parameters
    ----------
    seeds : tuple of int, optional
        Among [`mlm_book.artefacts.filing_encoder.SEEDS`][mlm_book.artefacts.filing_encoder.SEEDS] (all five
        by default, the book's first).

    Returns
    -------
    PolarityRecovery

    Raises
    ------
    TypeError
        If ``seeds`` is not a tuple of at least two integers.
    ValueError
        If a seed repeats or is not one the book trains.

    Examples
    --------
    >>> r = results()  # doctest: +BOOK
    >>> r.neighbour.shape, len(r.words), r.seeds[0]
    ((5, 5, 3), 35, 20240601)
    >>> bool(np.allclose(r.document[:, 0], r.chapter7[:, 0]))      # layer 0: one vector per word, as chapter 7's
    True
    >>> results((1, 99))
    Traceback (most recent call last):
    ...
    ValueError: seeds must be among the filing encoder's trained seeds (20240601, 1, 2, 3, 4) (another seed would train a new encoder), got 99
    """
    return _results(_check_seeds(seeds))


@functools.cache
def _results(seeds: tuple) -> PolarityRecovery:
    from mlm_book.finance.world import LEXICON

    fe.ensure_trained([fe.seed_setup(seed) for seed in seeds])
    rows = [filing_polarity.measured(filing_polarity.PolaritySetup(fe.seed_setup(seed))) for seed in seeds]
    chapter7 = [[fe.seed_results(fe.seed_setup(seed)).lexicon[str(layer)] for layer in LAYERS] for seed in seeds]
    orientation = baselines().orientation
    if orientation.words != tuple(LEXICON):
        raise RuntimeError("chapter 6's orientation no longer scores the lexicon in LEXICON's order")
    slot_accuracy = [float(np.mean(np.where(row["slot_polarity"] > 0, row["positive_mass"] > row["negative_mass"],
                                            row["negative_mass"] > row["positive_mass"]))) for row in rows]
    return PolarityRecovery(
        seeds=seeds, words=tuple(LEXICON), truth=np.array([LEXICON[word] for word in LEXICON]),
        chapter7=np.array(chapter7), document=np.array([row["document"] for row in rows]),
        neighbour=np.array([row["neighbour"] for row in rows]),
        head_score=np.array([row["head_score"] for row in rows]),
        head_accuracy=np.array([float(row["head_accuracy"][0]) for row in rows]),
        slot_accuracy=np.array(slot_accuracy),
        slot_mass=np.array([float(np.mean(row["positive_mass"] + row["negative_mass"])) for row in rows]),
        reference_score=orientation.score, reference_accuracy=orientation.accuracy)


# --------------------------------------------------------------------------------------
# Tables and the figure
# --------------------------------------------------------------------------------------


def _radius_name(radius) -> str:
    return "whole filing" if radius is None else f"k = {radius}"


def _given(r) -> PolarityRecovery:
    return results() if r is None else check_instance(r, "r", PolarityRecovery)


def accuracy_table(r: PolarityRecovery | None = None) -> Markdown:
    r"""Leave-one-out polarity accuracy of every pooled representation, by layer: the book's seed, then mean ± sd
    over the seeds in brackets; the last column counts the seeds at which the rule holds (above ``THRESHOLD`` at
    layer 1 or 2).

    Raises
    ------
    TypeError
        If ``r`` is not a `PolarityRecovery` (or ``None``, the book's).

    Examples
    --------
    The chapter's table reads [`results`][mlm_book.experiments.ch11_polarity.results]; a record built by hand
    (two seeds, three words) gives the same layout:

    >>> r = PolarityRecovery(seeds=(1, 2), words=("up", "down", "flat"), truth=[1, -1, -1],
    ...     chapter7=np.full((2, 3), 0.5), document=np.full((2, 3), 0.5), neighbour=np.full((2, 5, 3), 0.5),
    ...     head_score=[[1.0, -1.0, -1.5], [2.0, -1.0, -0.5]], head_accuracy=[1.0, 1.0], slot_accuracy=[0.6, 0.7],
    ...     slot_mass=[0.3, 0.4], reference_score=[1.0, -2.0, -1.0], reference_accuracy=1.0)
    >>> print(accuracy_table(r).splitlines()[0])
    | representation | reading | layer 0 | layer 1 | layer 2 | above chance + 2 SE at layer 1 or 2 |
    """
    r = _given(r)
    S = len(r.seeds)

    def row(name, reading, values, judged=True):
        held = f"{int(r.recovers(values).sum())} of {S} seeds" if judged else "—"
        return (name, reading, *(seed_band(values[:, layer]) for layer in range(len(LAYERS))), held)

    rows = [row("mean of the word's vectors (chapter 7)", "centred", r.chapter7, judged=False),
            row("per filing, then over filings", "centred", r.document)]
    for k, radius in enumerate(r.radii):
        name = ("the word's own vector (k = 0)" if radius == 0 else
                f"mean within {radius} tokens" if radius is not None else "mean of the whole filing")
        rows.append(row(name, "nearest centre", r.neighbour[:, k], judged=radius != 0))
    return table(["representation", "reading", "layer 0", "layer 1", "layer 2",
                  "above chance + 2 SE at layer 1 or 2"], rows)


def orientation_table(r: PolarityRecovery | None = None) -> Markdown:
    r"""Per seed: the head's orientation against the dictionary and against chapter 6's orientation, and how well
    the head tells the seed words apart at their slots; chapter 6's orientation last.

    Raises
    ------
    TypeError
        If ``r`` is not a `PolarityRecovery` (or ``None``, the book's).

    Examples
    --------
    The chapter's table reads [`results`][mlm_book.experiments.ch11_polarity.results]; a record built by hand
    (two seeds, three words) gives the same layout:

    >>> r = PolarityRecovery(seeds=(1, 2), words=("up", "down", "flat"), truth=[1, -1, -1],
    ...     chapter7=np.full((2, 3), 0.5), document=np.full((2, 3), 0.5), neighbour=np.full((2, 5, 3), 0.5),
    ...     head_score=[[1.0, -1.0, -1.5], [2.0, -1.0, -0.5]], head_accuracy=[1.0, 1.0], slot_accuracy=[0.6, 0.7],
    ...     slot_mass=[0.3, 0.4], reference_score=[1.0, -2.0, -1.0], reference_accuracy=1.0)
    >>> print(orientation_table(r).splitlines()[0])
    | orientation from | accuracy vs dictionary | Spearman with chapter 6's | same sign as chapter 6's | seed slots: right polarity more likely | seed slots: mass on the six seeds |
    """
    r = _given(r)
    rows = [(f"head, seed {seed}{' (book)' if i == 0 else ''}", f"{r.head_accuracy[i]:.3f}",
             f"{r.head_spearman[i]:+.2f}", f"{r.head_sign_agreement[i]:.3f}", f"{r.slot_accuracy[i]:.3f}",
             f"{r.slot_mass[i]:.3f}") for i, seed in enumerate(r.seeds)]
    rows.append(("observed seed counts (chapter 6)", f"{r.reference_accuracy:.3f}", "+1.00", "1.000", "1.000",
                 "1.000"))
    return table(["orientation from", "accuracy vs dictionary", "Spearman with chapter 6's",
                  "same sign as chapter 6's", "seed slots: right polarity more likely",
                  "seed slots: mass on the six seeds"], rows)


def figure_polarity(r: PolarityRecovery | None = None):
    r"""Two panels. (A) leave-one-out polarity accuracy of each pooled representation by layer (book seed as
    dots, the mean over seeds as a bar with its ± sd), against the chance band $0.5 \pm 2\,\mathrm{SE}$; (B) the
    head's orientation of each lexicon word against chapter 6's, book seed, coloured by dictionary polarity.
    One legend for both panels sits below them.

    Returns
    -------
    DescribedFigure
        The drawing, with its alt text (the ranges of the accuracies, computed) and caption.

    Raises
    ------
    TypeError
        If ``r`` is not a `PolarityRecovery` (or ``None``, the book's).

    Examples
    --------
    The chapter's table reads [`results`][mlm_book.experiments.ch11_polarity.results]; a record built by hand
    (two seeds, three words) gives the same layout:

    >>> r = PolarityRecovery(seeds=(1, 2), words=("up", "down", "flat"), truth=[1, -1, -1],
    ...     chapter7=np.full((2, 3), 0.5), document=np.full((2, 3), 0.5), neighbour=np.full((2, 5, 3), 0.5),
    ...     head_score=[[1.0, -1.0, -1.5], [2.0, -1.0, -0.5]], head_accuracy=[1.0, 1.0], slot_accuracy=[0.6, 0.7],
    ...     slot_mass=[0.3, 0.4], reference_score=[1.0, -2.0, -1.0], reference_accuracy=1.0)
    >>> drawn = figure_polarity(r)
    >>> len(drawn.figure.axes), bool(drawn.figure.axes[0].get_ylim()[1] <= 1.05)
    (2, True)
    >>> import matplotlib.pyplot as plt; plt.close(drawn.figure)
    """
    from matplotlib.lines import Line2D

    from mlm_book.figures import PALETTE, WIDE, describe, subplots

    r = _given(r)
    fig, (left, right) = subplots(1, 2, width=WIDE, height=3.9, gridspec_kw={"width_ratios": [1.6, 1.0]})
    columns = [r.chapter7, r.document, *(r.neighbour[:, k] for k in range(len(r.radii)))]
    names = ["mean\n(ch. 7)", "per\nfiling", *("own\nk = 0" if k == 0 else "whole\nfiling" if k is None else
                                                f"k = {k}" for k in r.radii)]
    x = np.arange(len(columns))
    left.axhspan(CHANCE - 2 * CHANCE_SE, THRESHOLD, color=PALETTE["grey"], alpha=0.2, lw=0,
                 label="chance ± 2 SE")
    left.axhline(r.reference_accuracy, color=PALETTE["black"], ls="--", lw=1.2,
                 label="orientation, observed counts")
    colours = (PALETTE["sky"], PALETTE["blue"], PALETTE["vermillion"])
    for layer, colour in zip(LAYERS, colours):
        shift = (layer - 1) * 0.22
        values = np.array([c[:, layer] for c in columns])             # (representations, seeds)
        left.errorbar(x + shift, values.mean(axis=1), yerr=values.std(axis=1, ddof=1), ls="none", color=colour,
                      capsize=2, lw=1, marker="_", ms=9, mew=1.6)
        left.plot(x + shift, values[:, 0], ls="none", marker="o", ms=5, color=colour, label=f"layer {layer}")
    left.axvline(1.5, color=PALETTE["grey"], lw=0.8)
    left.set_xticks(x, names)
    left.set_ylim(0.0, 1.05)
    left.set_ylabel("leave-one-word-out accuracy")
    left.set_title("A. Pooled vectors (centred | nearest centre)")
    positive = r.truth > 0
    for mask, colour, label in ((positive, PALETTE["blue"], "positive word"),
                                (~positive, PALETTE["orange"], "negative word")):
        right.plot(r.reference_score[mask], r.head_score[0, mask], ls="none", marker="o", ms=5, color=colour,
                   label=label)
    right.axhline(0.0, color=PALETTE["black"], lw=0.8)
    right.axvline(0.0, color=PALETTE["black"], lw=0.8)
    right.set_xlabel("orientation, observed seed counts (nats)")
    right.set_ylabel("orientation, head's expected counts (nats)")
    right.set_title("B. Head's orientation, book seed")
    handles, labels = left.get_legend_handles_labels()
    handles += [Line2D([], [], color=PALETTE["black"], ls="none", marker="o", ms=5),
                Line2D([], [], color=PALETTE["black"], lw=1, marker="_", ms=9, mew=1.6),
                *right.get_legend_handles_labels()[0]]
    labels += ["A: book seed", "A: mean ± sd of the seeds", *right.get_legend_handles_labels()[1]]
    fig.legend(handles, labels, loc="outside lower center", ncols=5, handletextpad=0.4, columnspacing=1.0)
    whole = r.neighbour[:, list(r.radii).index(None)]
    short = ", ".join(str(k) for k in r.radii[1:3]) + f" and {r.radii[3]}"
    near = r.neighbour[:, :4, 1:]                              # own vector and the short radii, layers 1 and 2
    alt = (f"Two panels. A: leave-one-word-out polarity accuracy of each pooled representation at layers 0, 1 "
           f"and 2, against a grey band of chance plus two standard errors, up to {THRESHOLD:.3f}. At layers 1 "
           f"and 2 the word's own vectors, averaged in any way, and means within {short} tokens stay between "
           f"{min(r.document[:, 1:].min(), near.min()):.2f} and {max(r.document[:, 1:].max(), near.max()):.2f}; "
           f"at layer 0 the means within {r.radii[2]} and {r.radii[3]} tokens reach "
           f"{r.neighbour[:, 2:4, 0].max():.2f}. The whole-filing mean ranges from {whole.min():.2f} to "
           f"{whole.max():.2f} over seeds and layers. A dashed line marks chapter 6's orientation at "
           f"{r.reference_accuracy:.2f}. B: the head's orientation of each of the {len(r.words)} words against "
           f"chapter 6's, book seed, rank correlation {r.head_spearman[0]:.2f}.")
    caption = ("Can pooled encoder representations recover a word's polarity? A: the probe's accuracy by "
               "representation and layer (dots: book seed; bars: the mean of the seeds, with whiskers ± sd). "
               "B: orientation from "
               "the head's expected seed counts against orientation from observed counts.")
    return describe(fig, alt=alt, caption=caption)


# --------------------------------------------------------------------------------------
# Claims: the rules were fixed (and committed) before any number was computed
# --------------------------------------------------------------------------------------


def _pooled_rule(kind: str, radius=None) -> dict:
    r = results()
    values = r.document if kind == "document" else r.neighbour[:, list(RADII).index(radius)]
    rows = [{f"layer {layer}": float(values[i, layer]) for layer in CONTEXT_LAYERS} for i in range(len(r.seeds))]
    # the rule's margin at a seed: its best context layer's distance above THRESHOLD (the rule asks for either)
    margins = (np.asarray(values)[:, list(CONTEXT_LAYERS)] - THRESHOLD).max(axis=1)
    return over_seeds(rows, int(r.recovers(values).sum()), margins=margins)


def _head_rule() -> dict:
    r = results()
    return over_seeds([float(v) for v in r.head_accuracy], int(np.sum(r.head_accuracy > THRESHOLD)),
                      margins=np.asarray(r.head_accuracy) - THRESHOLD)


_RULE = f"accuracy > 0.5 + 2·√(0.25/35) = {THRESHOLD:.3f} at layer 1 or at layer 2"
_PROTOCOL = ("chapter 6's leave-one-word-out probe over the 35 lexicon words (5 filing encoders)")

PRESTATED = (
    Claim("Q8a", "Document pooling of the word's own contextual vectors (centred reading): its vectors averaged "
          f"within each filing, then over filings; {_PROTOCOL}", seed="—", rule=_RULE,
          compute=lambda: _pooled_rule("document"), accept=lambda v: True, expected="not reproduced",
          section="can-context-recover-a-words-polarity"),
    *(Claim(f"Q8{letter}", f"Context beyond the window: at each occurrence the mean of the vectors of every token within "
            f"{radius} positions in its filing (nearest-centre reading), averaged over the word's occurrences; "
            f"{_PROTOCOL}", seed="—", rule=_RULE, compute=functools.partial(_pooled_rule, "neighbour", radius),
            accept=lambda v: True, expected="not reproduced", section="can-context-recover-a-words-polarity")
      for letter, radius in zip("bcd", (8, 16, 32))),
    Claim("Q8e", "Orientation from the masked-LM head: chapter 6's document-pooled orientation with each filing's "
          "seed counts replaced by the head's expected counts at its seed slots (each masked in its own window); "
          "accuracy against the dictionary over the 35 lexicon words (5 filing encoders)", seed="—",
          rule=f"accuracy > {THRESHOLD:.3f}", compute=_head_rule, accept=lambda v: True, expected="seed-dependent",
          section="can-context-recover-a-words-polarity"),
)
"""Q8's further rules (Q8a–Q8e), committed before any number and registered; ``expected`` is the verdict then
measured."""

CLAIMS = (
    Claim("Q8", "Whole-filing pooling of the filing encoder's contextual vectors: at each occurrence of a lexicon "
          "word the mean of its filing's vectors (nearest-centre reading), averaged over the word's occurrences "
          f"(orientation's weights n_d(w)); {_PROTOCOL}", seed="—", rule=_RULE,
          compute=lambda: _pooled_rule("neighbour", None), accept=lambda v: True,
          expected="seed-dependent", section="can-context-recover-a-words-polarity"),
    *PRESTATED,
)
"""Open question Q8's claims: the representation that pools as orientation does (Q8), and ``PRESTATED``."""
