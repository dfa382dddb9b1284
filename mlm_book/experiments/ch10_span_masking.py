r"""Chapter 10: span masking, another corruption with an exact optimum on the HMM.

BERT hides a fixed number of positions per input, drawn uniformly with no regard to which are
neighbours (chapter 2 gives the count,
[`mlm_book.channel.bert_prediction_count`][mlm_book.channel.bert_prediction_count]). SpanBERT
(Joshi et al. 2020, in the references page) hides runs of consecutive positions. When a span
$[a, a + m)$ of a sentence is hidden and the model predicts every position in it from the
words outside, the optimum at position $i$ of the span is

$$P(x_i \mid x_{\text{out}}) = \sum_s P(z_i = s \mid x_{\text{out}})\, E_{s x_i},$$

and $P(z_i \mid x_{\text{out}})$ is forward–backward with the span's likelihood rows set to
ones ([`mlm_book.hmm.forward_backward`][mlm_book.hmm.forward_backward]: a row of ones is an
unobserved position). [`span_masking`][mlm_book.experiments.ch10_span_masking.span_masking]
measures the expected entropy of that optimum, per hidden position, as the span grows; a
span of one is chapter 1's bidirectional reader, and a span that covers the sentence leaves
only the marginal. Sentences are sampled (the conditionals are exact per sentence), and
[`enumerated_span_entropy`][mlm_book.experiments.ch10_span_masking.enumerated_span_entropy]
gives the same expectation with no sampling for short sentences.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np

from mlm_book.hmm import (
    HiddenMarkovLanguage,
    check_hmm,
    default_hmm,
    emission_likelihood,
    enumerate_joint,
    forward_backward,
    sample,
)
from mlm_book.ledger import Claim
from mlm_book.scoring import entropy
from mlm_book.validation import as_float_array, as_int_array, check_generator, check_instance, check_positive_int

__all__ = ["SPAN_LENGTHS", "LENGTH", "SEQUENCES", "SEED", "SpanMasking", "span_start", "span_masking",
           "enumerated_span_entropy", "results", "span_table", "figure_spans", "CLAIMS"]

SPAN_LENGTHS = (1, 2, 3, 4, 6, 8, 12, 16, 24)
"""Span lengths measured, from one position (BERT's single mask) to the whole sentence."""
LENGTH = 24
"""Sentence length (chapters 1, 2 and 10)."""
SEQUENCES = 20_000
"""Sampled sentences (as chapter 10's other sampled readers)."""
SEED = 919
"""Seed of the sampled sentences."""


def span_start(length: int, span: int) -> int:
    """First position (0-based) of a span of ``span`` positions centred in a sentence of ``length``.

    Examples
    --------
    >>> span_start(24, 1), span_start(24, 4), span_start(24, 24)
    (11, 10, 0)
    """
    length = check_positive_int(length, "length")
    span = check_positive_int(span, "span")
    if span > length:
        raise ValueError(f"span must be at most length ({length}), got {span}")
    return (length - span) // 2


@dataclass(frozen=True, eq=False)
class SpanMasking:
    """Expected entropy of the span-masking optimum, by span length.

    Attributes
    ----------
    span_lengths : ndarray of int, shape (K,)
    per_position, per_position_se : ndarray, shape (K,)
        $E\\,H(x_i \\mid x_{\\text{out}})$ averaged over the span's positions, and its standard error
        over sentences.
    centre, centre_se : ndarray, shape (K,)
        The same at the span's centre position (``span_start + span // 2``).
    length, sequences : int

    Examples
    --------
    A record built by hand (the chapter's comes from the exact HMM computation):

    >>> r = SpanMasking(span_lengths=np.array([1, 3]), per_position=np.array([1.5, 1.7]),
    ...                 per_position_se=np.array([0.01, 0.01]), centre=np.array([1.5, 1.8]),
    ...                 centre_se=np.array([0.01, 0.02]), length=12, sequences=200)
    >>> bool(r.centre[1] > r.per_position[1])   # the centre of a longer span is the hardest to guess
    True
    """

    span_lengths: np.ndarray
    per_position: np.ndarray
    per_position_se: np.ndarray
    centre: np.ndarray
    centre_se: np.ndarray
    length: int
    sequences: int

    def __post_init__(self):
        length = check_positive_int(self.length, "length")
        check_positive_int(self.sequences, "sequences", minimum=2)
        spans = as_int_array(self.span_lengths, "span_lengths", ndim=1)
        if spans.size == 0 or spans.min() < 1 or spans.max() > length:
            raise ValueError(f"span_lengths must hold one or more span lengths in [1, {length}]")
        for name in ("per_position", "per_position_se", "centre", "centre_se"):
            value = as_float_array(getattr(self, name), name, ndim=1)
            if value.shape != spans.shape or not np.all(np.isfinite(value)) or np.any(value < 0):
                raise ValueError(f"{name} must hold one finite non-negative value per entry of span_lengths "
                                 f"({spans.size}), got shape {value.shape}")


def _mean_se(values: np.ndarray) -> tuple[float, float]:
    return float(values.mean()), float(values.std(ddof=1) / np.sqrt(values.size))


def span_masking(hmm: HiddenMarkovLanguage, length: int, span_lengths, sequences: int,
                 rng: np.random.Generator) -> SpanMasking:
    r"""Expected entropy of $P(x_i \mid x_{\text{out}})$ inside a centred span, for each span length.

    Parameters
    ----------
    hmm : HiddenMarkovLanguage
    length : int
        Sentence length $n$.
    span_lengths : sequence of int
        Span lengths, each in $[1, n]$.
    sequences : int
        Sampled sentences (at least 2), the same sentences for every span length.
    rng : numpy.random.Generator

    Returns
    -------
    SpanMasking

    Raises
    ------
    TypeError, ValueError
        If ``hmm`` or ``rng`` is of the wrong kind, or a count or span length is out of range.

    Examples
    --------
    >>> r = span_masking(default_hmm(), 6, [1, 6], 2000, np.random.default_rng(0))
    >>> round(float(r.per_position[1]), 4)      # the whole sentence hidden: the marginal entropy of a token
    2.8034
    """
    hmm = check_hmm(hmm)
    length = check_positive_int(length, "length")
    sequences = check_positive_int(sequences, "sequences", minimum=2)
    spans = as_int_array(span_lengths, "span_lengths", ndim=1)
    if spans.size == 0 or spans.min() < 1 or spans.max() > length:
        raise ValueError(f"span_lengths must hold at least one span length, each in [1, length] = [1, {length}], "
                         f"got {spans.tolist()[:8]}")
    starts = [span_start(length, int(m)) for m in spans]
    rng = check_generator(rng)
    _, tokens = sample(hmm, sequences, length, rng)
    clean = emission_likelihood(hmm, tokens)
    rows = {name: [] for name in ("per_position", "per_position_se", "centre", "centre_se")}
    for m, a in zip(spans.tolist(), starts):
        likelihood = clean.copy()
        likelihood[:, a:a + m] = 1.0
        posterior = forward_backward(hmm.transition, hmm.initial, likelihood).posterior[:, a:a + m]
        h = entropy(np.clip(posterior @ hmm.emission, 0.0, None))          # (B, m)
        for name, values in (("per_position", h.mean(axis=1)), ("centre", h[:, m // 2])):
            mean, se = _mean_se(values)
            rows[name].append(mean)
            rows[f"{name}_se"].append(se)
    return SpanMasking(spans, *(np.array(rows[k]) for k in ("per_position", "per_position_se", "centre",
                                                             "centre_se")), length, sequences)


def enumerated_span_entropy(hmm: HiddenMarkovLanguage, length: int, start: int, span: int) -> np.ndarray:
    r"""$E\,H(x_i \mid x_{\text{out}})$ for each position of the span, by enumerating every sentence.

    $H(x_i \mid x_{\text{out}}) = H(x_i, x_{\text{out}}) - H(x_{\text{out}})$, from the marginals of
    [`mlm_book.hmm.enumerate_joint`][mlm_book.hmm.enumerate_joint] (so ``length`` is at most 4 for the
    book's HMM).

    Examples
    --------
    >>> enumerated_span_entropy(default_hmm(), 4, 1, 2).round(4).tolist()     # x_2, x_3 hidden: not symmetric
    [2.1178, 2.1193]
    >>> enumerated_span_entropy(default_hmm(), 4, 1, 1).round(4).tolist()     # one hidden: the bidirectional reader
    [1.9633]
    """
    hmm = check_hmm(hmm)
    length = check_positive_int(length, "length")
    span = check_positive_int(span, "span")
    start = check_positive_int(start, "start", minimum=0)
    if start + span > length:
        raise ValueError(f"start + span must be at most length ({length}), got {start} + {span}")
    joint = enumerate_joint(hmm, length)
    outside = [k for k in range(length) if not start <= k < start + span]

    def h(axes_kept):
        dropped = tuple(k for k in range(length) if k not in axes_kept)
        p = joint.sum(axis=dropped) if dropped else joint
        p = p.ravel()
        p = p[p > 0]
        return float(-(p * np.log(p)).sum())

    return np.array([h(sorted(outside + [i])) - h(outside) for i in range(start, start + span)])


@functools.cache
def results() -> SpanMasking:
    """The chapter's measurement: `SEQUENCES` sentences of `LENGTH` tokens, every span in `SPAN_LENGTHS`."""
    return span_masking(default_hmm(), LENGTH, SPAN_LENGTHS, SEQUENCES, np.random.default_rng(SEED))


def span_table(r: SpanMasking | None = None):
    """Per-position and centre entropy of the span-masking optimum by span length (nats, ± one standard error).

    Examples
    --------
    >>> r = SpanMasking(span_lengths=np.array([1, 3]), per_position=np.array([1.5, 1.7]),
    ...                 per_position_se=np.array([0.01, 0.01]), centre=np.array([1.5, 1.8]),
    ...                 centre_se=np.array([0.01, 0.02]), length=12, sequences=200)
    >>> print(str(span_table(r)).splitlines()[-1])
    | 3 | 1.700 ± 0.010 | 1.800 ± 0.020 |
    """
    from mlm_book.report import table
    r = results() if r is None else check_instance(r, "r", SpanMasking)
    rows = [[int(m), f"{p:.3f} ± {ps:.3f}", f"{c:.3f} ± {cs:.3f}"]
            for m, p, ps, c, cs in zip(r.span_lengths, r.per_position, r.per_position_se, r.centre, r.centre_se)]
    return table(["span length $m$", "per hidden position", "at the span's centre"], rows)


def figure_spans(r: SpanMasking | None = None):
    """Expected entropy of the optimum inside a hidden span against its length, with the two readers' levels.

    Per hidden position and at the span's centre (± 2 standard errors), against the
    bidirectional reader in the middle of a sentence and the marginal entropy of one token
    (chapter 10's [`directions_results`][mlm_book.directions.directions_results]).

    Parameters
    ----------
    r : SpanMasking, optional
        Defaults to [`results`][mlm_book.experiments.ch10_span_masking.results].

    Returns
    -------
    DescribedFigure
        The figure with its alt text (the entropies from one hidden word to the whole
        sentence, read off ``r``) and its caption.

    Raises
    ------
    TypeError
        If ``r`` is not a `SpanMasking` (or ``None``).

    Examples
    --------
    A small study of its own (the chapter's, [`results`][mlm_book.experiments.ch10_span_masking.results],
    takes seconds):

    >>> import matplotlib.pyplot as plt
    >>> from mlm_book.hmm import default_hmm
    >>> small = span_masking(default_hmm(), 12, [1, 3, 6], 500, np.random.default_rng(0))
    >>> drawn = figure_spans(small)
    >>> drawn.figure.axes[0].get_ylabel()
    'expected entropy (nats)'
    >>> f"{small.per_position[-1]:.2f} for 6 words" in drawn.alt
    True
    >>> plt.close(drawn.figure)
    """
    from mlm_book.directions import directions_results
    from mlm_book.figures import NARROW, PALETTE, describe, subplots
    r = results() if r is None else check_instance(r, "r", SpanMasking)
    e = directions_results().entropies
    fig, ax = subplots(width=NARROW, height=3.2)
    ax.errorbar(r.span_lengths, r.per_position, yerr=2 * r.per_position_se, marker="o", ms=4, capsize=2,
                color=PALETTE["blue"], label="per hidden position")
    ax.errorbar(r.span_lengths, r.centre, yerr=2 * r.centre_se, marker="s", ms=4, capsize=2,
                color=PALETTE["vermillion"], label="at the span's centre")
    middle = r.length // 2
    # the two levels are labelled on their lines, the legend keeps to the empty lower right
    ax.axhline(e.both[middle], color=PALETTE["orange"], ls="--", lw=1)
    ax.annotate("bidirectional reader, middle position", (1.0, e.both[middle]), xycoords=("axes fraction", "data"),
                xytext=(-2, 2), textcoords="offset points", ha="right", va="bottom", color=PALETTE["orange"])
    ax.axhline(e.left[0], color=PALETTE["grey"], ls=":", lw=1)
    ax.annotate("one token alone (marginal)", (0.0, e.left[0]), xycoords=("axes fraction", "data"),
                xytext=(4, -2), textcoords="offset points", ha="left", va="top", color=PALETTE["grey"])
    ax.set_xscale("log", base=2)
    ax.set_xticks(list(r.span_lengths), [str(int(m)) for m in r.span_lengths])
    ax.minorticks_off()
    ax.set_xlabel(f"span length $m$ (centred in a sentence of {r.length})")
    ax.set_ylabel("expected entropy (nats)")
    ax.legend(frameon=False, loc="lower right", bbox_to_anchor=(1.0, 0.1))
    lengths = [int(m) for m in r.span_lengths]
    harder = [m for m, c, c_se, v, v_se in zip(lengths, r.centre, r.centre_se, r.per_position, r.per_position_se)
              if c - v > 2 * np.hypot(c_se, v_se)]
    centre = (f"the span's centre lies above the average position for spans of {harder[0]} to {harder[-1]} words"
              if harder else "the span's centre is no harder than its average position")
    alt = (f"Expected entropy of the span-masking optimum against span length {', '.join(map(str, lengths))}, on a "
           f"logarithmic axis. Per hidden position it rises from {r.per_position[0]:.2f} nats for one word to "
           f"{r.per_position[-2]:.2f} for {lengths[-2]} words and {r.per_position[-1]:.2f} "
           f"{'when the whole sentence is hidden' if lengths[-1] == r.length else f'for {lengths[-1]} words'}; {centre}. "
           f"A dashed line marks the bidirectional reader in the middle of a sentence, {e.both[middle]:.2f}, which "
           f"the span of one meets; a dotted line the marginal, {e.left[0]:.2f}, which the whole sentence meets.")
    caption = ("The exact optimum inside a hidden span: expected entropy per hidden position and at the span's "
               "centre (± 2 standard errors), against the span's length.")
    return describe(fig, alt=alt, caption=caption)


def _monotone() -> tuple[float, ...]:
    return tuple(float(v) for v in results().per_position)


CLAIMS = (
    Claim("D-11", "Span masking, another denoising corruption, has an exact optimum on the HMM whose expected "
          f"entropy per hidden position grows with the span: spans of {', '.join(map(str, SPAN_LENGTHS))} "
          f"(sampled sentences, ± 2 standard errors)", seed="—", rule="rises with every longer span",
          compute=_monotone, accept=lambda v: all(b > a for a, b in zip(v, v[1:])), fmt=".3f",
          section="hiding-more-than-one-word"),
)
