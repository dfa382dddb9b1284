r"""Chapter 10 (exact part): why the mask and not the next word, measured on the HMM.

The measurements are [`mlm_book.directions`][mlm_book.directions]'s (exact for any context, by
forward filtering and forward–backward, averaged over sampled sentences, and enumerated for short
ones): what a left-to-right reader and a bidirectional one face at each position of a sentence of
the book's HMM, and how well each guesses the sense of $w$. Chapter 10's span masking compares
its optimum with them, and its trained next-token readers are scored against
[`left_to_right`][mlm_book.directions.left_to_right], so they live below the chapters; this module
shows them: [`results`][mlm_book.experiments.ch10_directions.results], the tables
([`entropy_table`][mlm_book.experiments.ch10_directions.entropy_table],
[`sense_table`][mlm_book.experiments.ch10_directions.sense_table],
[`exact_table`][mlm_book.experiments.ch10_directions.exact_table]) and the figure
([`figure_directions`][mlm_book.experiments.ch10_directions.figure_directions]).

The module declares one claim, D-05's difference between encoders and left-to-right models in
the exact form of [`mlm_book.directions`][mlm_book.directions]: on the enumerated sentences of length
4, the bidirectional reader faces strictly less expected entropy than the left-to-right one at every
position but the last, where the two are equal. The other rows of the claims list's §D on
architectures (D-03, D-09, D-10, D-11, D-17) give definitions, or need training.
"""

from __future__ import annotations

from mlm_book.directions import (
    MAX_ENUMERATION_LENGTH,
    DirectionsConfig,
    DirectionsResults,
    directions_results,
    exact_directions,
)
from mlm_book.figures import PALETTE, WIDE, describe, subplots
from mlm_book.hmm import default_hmm
from mlm_book.ledger import Claim
from mlm_book.report import ROUNDING, Markdown, table
from mlm_book.validation import as_int_array, check_instance

__all__ = ["results", "entropy_table", "sense_table", "exact_table", "figure_directions", "CLAIMS"]


def results(config: DirectionsConfig | None = None) -> DirectionsResults:
    """The exact part of chapter 10 for ``config`` (default ``DirectionsConfig()``): [`directions_results`][mlm_book.directions.directions_results], memoised there.

    Raises
    ------
    TypeError
        If ``config`` is not a `DirectionsConfig` (or ``None``).

    Examples
    --------
    >>> results() is results(DirectionsConfig())
    True
    """
    return directions_results(config)


def _given_or_results(r) -> DirectionsResults:
    if r is None:
        return results()
    return check_instance(r, "r", DirectionsResults)


def _positions(positions, length: int) -> list[int]:
    """1-based positions to tabulate: given ones, checked, or the edges and the middle."""
    if positions is None:
        middle = {(length + 1) // 2, length // 2 + 1}
        return sorted(({1, 2, 3, length - 2, length - 1, length} | middle) & set(range(1, length + 1)))
    array = as_int_array(positions, "positions", ndim=1)
    if array.size == 0:
        raise ValueError("positions must name at least one position")
    if array.min() < 1 or array.max() > length:
        raise ValueError(f"positions must be 1-based positions in [1, {length}], got values from {array.min()} "
                         f"to {array.max()}")
    return array.tolist()


def _pm(value: float, se: float, digits: int = 3) -> str:
    # a standard error of rounding size marks an exact value (nothing was sampled); one too small
    # for the value's digits is shown to one significant figure rather than as 0.000
    if se < ROUNDING:
        return f"{value:.{digits}f} (exact)"
    return f"{value:.{digits}f} ± {se:.{digits}f}" if se >= 0.5 * 10.0 ** -digits else f"{value:.{digits}f} ± {se:.1g}"


def entropy_table(r: DirectionsResults | None = None, positions=None) -> Markdown:
    r"""A Markdown table of the expected entropies by position (nats, ± one standard error).

    Parameters
    ----------
    r : DirectionsResults, optional
        Defaults to [`results`][mlm_book.experiments.ch10_directions.results].
    positions : sequence of int, optional
        1-based positions to show; by default the first three, the middle two and the last
        three. A last row sums over all positions (the left-to-right sum is the joint
        entropy, by the chain rule; the row after it estimates that entropy directly by the
        mean of $-\log P(x)$).

    Returns
    -------
    Markdown

    Raises
    ------
    TypeError
        If ``r`` is not a `DirectionsResults` (or ``None``), or ``positions`` does not hold integers.
    ValueError
        If ``positions`` is empty, not 1-D, or outside ``[1, n]``.

    Examples
    --------
    >>> lines = entropy_table(positions=[1, 24]).splitlines()
    >>> len(lines), lines[2].startswith("| 1 | 2.803 (exact) |"), lines[3].split(" | ")[3]
    (6, True, '0.000 (exact)')
    """
    r = _given_or_results(r)
    e = r.entropies
    rows = [[i, _pm(e.left[i - 1], e.left_se[i - 1]), _pm(e.both[i - 1], e.both_se[i - 1]),
             _pm(e.gap[i - 1], e.gap_se[i - 1]), _pm(e.mask[i - 1], e.mask_se[i - 1])]
            for i in _positions(positions, e.length)]
    rows.append([f"sum over all {e.length}", f"{e.total_left:.3f}", f"{e.total_both:.3f}", f"{e.gap.sum():.3f}",
                 f"{e.mask.sum():.3f}"])
    rows.append(["mean $-\\log P(x)$", _pm(e.sequence_entropy, e.sequence_entropy_se), "", "", ""])
    header = ["position $i$", "left-to-right $H(x_i \\mid x_{<i})$", "bidirectional $H(x_i \\mid x_{-i})$",
              "gap", "[MASK], BERT's channel $H(x_i \\mid \\tilde x_{-i})$"]
    return table(header, rows)


def sense_table(r: DirectionsResults | None = None, positions=None) -> Markdown:
    r"""A Markdown table of the sense accuracy of $w$ by position, from the left and from both sides.

    Parameters
    ----------
    r : DirectionsResults, optional
        Defaults to [`results`][mlm_book.experiments.ch10_directions.results].
    positions : sequence of int, optional
        1-based positions to show (as for [`entropy_table`][mlm_book.experiments.ch10_directions.entropy_table]);
        rows for all occurrences pooled and for the static cap follow.

    Returns
    -------
    Markdown

    Raises
    ------
    TypeError, ValueError
        As [`entropy_table`][mlm_book.experiments.ch10_directions.entropy_table].

    Examples
    --------
    >>> lines = sense_table(positions=[1]).splitlines()
    >>> lines[2].split(" | ")[2], lines[-1].endswith("| 0.509 | 0.509 |")
    ('0.509 (exact)', True)
    """
    r = _given_or_results(r)
    s = r.senses
    rows = [[i, int(s.counts[i - 1]), _pm(s.left[i - 1], s.left_se[i - 1]), _pm(s.both[i - 1], s.both_se[i - 1])]
            for i in _positions(positions, s.length)]
    rows.append(["all positions (pooled)", s.n_occurrences, _pm(s.pooled_left, s.pooled_left_se),
                 _pm(s.pooled_both, s.pooled_both_se)])
    rows.append(["one vector per type (static cap $\\max_k \\pi_k$)", "", f"{s.cap:.3f}", f"{s.cap:.3f}"])
    header = ["position $i$", "occurrences of $w$", "left context $E \\max_k P(k \\mid x_{\\le i})$",
              "both sides $E \\max_k P(k \\mid x)$"]
    return table(header, rows)


def exact_table(r: DirectionsResults | None = None) -> Markdown:
    r"""A Markdown table of the enumerated expectations (nats) and the estimator's largest difference.

    Parameters
    ----------
    r : DirectionsResults, optional
        Defaults to [`results`][mlm_book.experiments.ch10_directions.results].

    Returns
    -------
    Markdown

    Raises
    ------
    TypeError
        If ``r`` is not a `DirectionsResults` (or ``None``).

    Examples
    --------
    >>> lines = exact_table().splitlines()
    >>> len(lines), lines[2].startswith("| 2 | 1 | 2.8034 | 2.2272 | 0.5762 |")
    (11, True)
    """
    r = _given_or_results(r)
    checked = {check.length: check.worst for check in r.checks}
    rows = []
    for exact in r.exact:
        for i in range(exact.length):
            check = f"{checked[exact.length]:.1e}" if i == 0 and exact.length in checked else ""
            rows.append([exact.length, i + 1, exact.left[i], exact.both[i], exact.gap[i], exact.mask[i], check])
    header = ["$n$", "position $i$", "left-to-right", "bidirectional", "gap", "[MASK], BERT's channel",
              "estimator − enumeration (largest)"]
    return table(header, rows, formats=[None, None, ".4f", ".4f", ".4f", ".4f", None])


def figure_directions(r: DirectionsResults | None = None):
    r"""The expected entropy each reader faces at each position, and the gap between the two clean ones.

    Top: $E H(x_i \mid x_{<i})$ (left-to-right), $E H(x_i \mid x_{-i})$ (bidirectional) and
    $E H(x_i \mid \tilde x_{-i})$ (Theorem 2's optimum at a [MASK], the other positions
    through BERT's channel), with bands of ± 2 standard errors. Bottom: the gap
    left-to-right minus bidirectional, with ± 2 standard errors.

    Parameters
    ----------
    r : DirectionsResults, optional
        Defaults to [`results`][mlm_book.experiments.ch10_directions.results].

    Returns
    -------
    DescribedFigure
        The figure with its alt text (the readers' levels at the ends and in the middle, read
        off ``r``) and its caption.

    Raises
    ------
    TypeError
        If ``r`` is not a `DirectionsResults` (or ``None``).

    Examples
    --------
    >>> import matplotlib.pyplot as plt
    >>> drawn = figure_directions()
    >>> [ax.get_ylabel() for ax in drawn.figure.axes], drawn.figure.axes[1].get_xlabel()
    (['expected entropy (nats)', 'gap (nats)'], 'position $i$')
    >>> f"{results().entropies.gap[0]:.2f}" in drawn.alt
    True
    >>> plt.close(drawn.figure)
    """
    r = _given_or_results(r)
    e = r.entropies
    x = e.positions
    fig, (top, bottom) = subplots(2, 1, width=WIDE, height=5.4, sharex=True, gridspec_kw={"height_ratios": [2, 1]})
    lines = ((e.left, e.left_se, PALETTE["blue"], "-", r"left-to-right $H(x_i \mid x_{<i})$"),
             (e.both, e.both_se, PALETTE["orange"], "-", r"bidirectional $H(x_i \mid x_{-i})$"),
             (e.mask, e.mask_se, PALETTE["green"], "--",
              r"at a [MASK], BERT's channel elsewhere: $H(x_i \mid \tilde{x}_{-i})$"))
    for values, se, color, style, label in lines:
        top.plot(x, values, style, color=color, marker="o", markersize=3, label=label)
        top.fill_between(x, values - 2 * se, values + 2 * se, color=color, alpha=0.25, linewidth=0)
    top.set_ylabel("expected entropy (nats)")
    top.legend(loc="upper right")
    bottom.axhline(0.0, color=PALETTE["grey"], linewidth=0.8)
    bottom.errorbar(x, e.gap, yerr=2 * e.gap_se, color=PALETTE["vermillion"], marker="o", markersize=3, capsize=2,
                    label="left-to-right minus bidirectional (± 2 SE)")
    bottom.set_ylabel("gap (nats)")
    bottom.set_xlabel("position $i$")
    bottom.set_xticks(sorted({1, *range(4, e.length + 1, 4), e.length}))
    bottom.legend(loc="upper right")
    middle = e.length // 2
    alt = (f"Two panels over positions 1 to {e.length}. Top, expected entropy: the left-to-right reader faces "
           f"{e.left[0]:.2f} nats at position 1, {e.left[2]:.2f} at position 3, {e.left[middle]:.2f} in the middle "
           f"and {e.left[-1]:.2f} at the end; the bidirectional reader {e.both[0]:.2f} at both ends and "
           f"{e.both[middle]:.2f} in the middle; the reader at a [MASK] with BERT's channel elsewhere "
           f"{e.mask[0]:.2f} at the ends and {e.mask[middle]:.2f} in the middle, just above the bidirectional one. "
           f"Bottom, the gap between left-to-right and bidirectional: {e.gap[0]:.2f} at position 1, about "
           f"{e.gap[middle]:.2f} through the middle and 0 at the last position.")
    caption = ("What each reader faces, position by position: expected entropy of the exact conditional (bands: "
               "± 2 standard errors), and the gap between the left-to-right and the bidirectional reader.")
    return describe(fig, alt=alt, caption=caption)


def _exact_gaps() -> tuple[float, ...]:
    exact = exact_directions(default_hmm(), MAX_ENUMERATION_LENGTH)
    return tuple(float(g) for g in exact.gap)


CLAIMS = (
    Claim("D-05", f"Encoders read the entire input, left-to-right models the words before: exact expected entropy "
          f"gap E H(x_i | x_<i) − E H(x_i | x_-i) at positions 1 … {MAX_ENUMERATION_LENGTH} of the HMM's sentences "
          f"(enumerated)", seed="—", rule="> 0 at every position but the last, = 0 at the last",
          compute=_exact_gaps, accept=lambda v: all(g > 1e-6 for g in v[:-1]) and abs(v[-1]) < 1e-12,
          fmt="residual:.4f",
          section="two-readers-of-one-sentence"),
)
