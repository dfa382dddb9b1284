r"""Chapter 10, part 2 (exact): a family of HMM languages, and how a multilingual mixture samples them.

**The family** ([`language_family`][mlm_book.experiments.ch10_languages.language_family]). $K$
languages share the book's hidden dynamics: chapter 1's transition matrix and the pattern of
its emissions. Each writes its own 24 tokens, and all of them share the token $w$ (as languages
share numbers and names). Every language is an [`HiddenMarkovLanguage`][mlm_book.hmm.HiddenMarkovLanguage]
over the joint vocabulary of $24K + 1$ tokens that gives zero probability to the other
languages' tokens, so each has an exact optimum of its own, and, the dynamics being shared, the
same one: relabelling tokens changes no entropy. Language $k$ holds a share $p_k$ of the
sentences ([`DATA_SHARES`][mlm_book.experiments.ch10_languages.DATA_SHARES]: 0.70, 0.20, 0.07, 0.03).

**Sampling** ([`sampling_shares`][mlm_book.experiments.ch10_languages.sampling_shares]).
Training draws each sentence's language with probability

$$q_k(\alpha) = \frac{p_k^{\alpha}}{\sum_j p_j^{\alpha}},$$

so $\alpha = 1$ samples the data as it is, $\alpha = 0$ uniformly, and XLM-R's $\alpha = 0.3$ in
between. With sentences of one length, $q_k$ is also the exact expected share of language $k$'s
tokens in a step, and a batch of $b$ sentences holds a Binomial$(b, q_k)$ number of them
([`absent_probability`][mlm_book.experiments.ch10_languages.absent_probability]: the chance
that it holds none). A budget that reads $B$ sentences from a corpus of $D$ passes
$(B / D)\, q_k / p_k$ times over language $k$'s data
([`passes`][mlm_book.experiments.ch10_languages.passes]): below 1 a language is neglected,
above 1 it is repeated.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from mlm_book.hmm import HiddenMarkovLanguage, HMMConfig, build_hmm, check_hmm
from mlm_book.ledger import reported_value
from mlm_book.validation import as_float_array, check_instance, check_positive_int, check_real

__all__ = ["DATA_SHARES", "ALPHAS", "BATCH", "check_shares", "sampling_shares", "passes", "absent_probability",
           "LanguageFamily", "language_family", "sampling_table", "figure_sampling", "CLAIMS"]

DATA_SHARES = (0.70, 0.20, 0.07, 0.03)
"""The languages' shares of the sentences: one dominant language, one mid-sized, two small ones."""
ALPHAS = (1.0, 0.7, 0.3, 0.0)
"""Sampling exponents shown: the data as it is, mBERT's 0.7, XLM-R's 0.3, and uniform."""
BATCH = 64
"""Sentences per training step (the HMM encoder's batch)."""
_SHARE_TOLERANCE = 1e-9


def check_shares(shares, name: str = "shares") -> np.ndarray:
    """``shares`` as a 1-D float array of positive values summing to one (within 1e-9).

    Examples
    --------
    >>> check_shares([0.5, 0.5]).tolist()
    [0.5, 0.5]
    >>> check_shares([0.7, 0.2])
    Traceback (most recent call last):
    ...
    ValueError: shares must sum to 1, got 0.9
    """
    values = as_float_array(shares, name, ndim=1)
    if values.size < 1 or not np.all(np.isfinite(values)) or np.any(values <= 0):
        raise ValueError(f"{name} must hold at least one positive finite share, got {values.tolist()[:8]}")
    if abs(values.sum() - 1.0) > _SHARE_TOLERANCE:
        raise ValueError(f"{name} must sum to 1, got {values.sum():.12g}")
    return values


def _check_alpha(alpha) -> float:
    return check_real(alpha, "alpha", low=0.0)


def sampling_shares(shares, alpha: float) -> np.ndarray:
    r"""$q_k = p_k^\alpha / \sum_j p_j^\alpha$, computed in log space.

    Parameters
    ----------
    shares : array_like of float, shape (K,)
        The data shares $p_k$: positive, summing to one.
    alpha : float
        The exponent, $\alpha \ge 0$ (1: as the data; 0: uniform).

    Returns
    -------
    ndarray, shape (K,)

    Raises
    ------
    TypeError
        If ``shares`` or ``alpha`` is not numeric.
    ValueError
        If a share is not positive and finite, the shares do not sum to one, or ``alpha``
        is negative or not finite.

    Examples
    --------
    >>> sampling_shares(DATA_SHARES, 0.3).round(3).tolist()
    [0.388, 0.267, 0.195, 0.151]
    >>> sampling_shares(DATA_SHARES, 0.0).tolist(), sampling_shares([0.9, 0.1], 1.0).round(12).tolist()
    ([0.25, 0.25, 0.25, 0.25], [0.9, 0.1])
    >>> sampling_shares(DATA_SHARES, -0.5)
    Traceback (most recent call last):
    ...
    ValueError: alpha must be a finite number in [0.0, inf], got -0.5
    """
    p = check_shares(shares)
    alpha = _check_alpha(alpha)
    logits = alpha * np.log(p)
    logits -= logits.max()
    q = np.exp(logits)
    return q / q.sum()


def passes(shares, alpha: float, budget_passes: float = 1.0) -> np.ndarray:
    r"""Passes over each language's own data when training reads ``budget_passes`` corpora's worth of sentences.

    $(B / D)\, q_k / p_k$, with $B / D$ = ``budget_passes``.

    Raises
    ------
    TypeError, ValueError
        As [`sampling_shares`][mlm_book.experiments.ch10_languages.sampling_shares], or if
        ``budget_passes`` is not a positive number of at most 1e12.

    Examples
    --------
    >>> passes(DATA_SHARES, 0.3).round(2).tolist()
    [0.55, 1.33, 2.78, 5.03]
    >>> passes(DATA_SHARES, 1.0, budget_passes=2.0).round(12).tolist()
    [2.0, 2.0, 2.0, 2.0]
    """
    budget = check_real(budget_passes, "budget_passes", low=0.0, high=1e12)
    if budget <= 0:
        raise ValueError(f"budget_passes must be a positive finite number, got {budget_passes!r}")
    return budget * sampling_shares(shares, alpha) / check_shares(shares)


def absent_probability(shares, alpha: float, batch: int = BATCH) -> np.ndarray:
    r"""$(1 - q_k)^b$: the exact probability that a batch of ``batch`` sentences holds none of language $k$.

    Raises
    ------
    TypeError, ValueError
        As [`sampling_shares`][mlm_book.experiments.ch10_languages.sampling_shares], or if
        ``batch`` is not a positive integer.

    Examples
    --------
    >>> absent_probability(DATA_SHARES, 1.0, 64).round(3).tolist()
    [0.0, 0.0, 0.01, 0.142]
    """
    batch = check_positive_int(batch, "batch")
    q = sampling_shares(shares, alpha)
    with np.errstate(divide="ignore"):          # a single language (q = 1) is never absent: exp(-inf) = 0
        return np.exp(batch * np.log1p(-q))


# ----------------------------------------------------------------------------- the family
@dataclass(frozen=True, eq=False)
class LanguageFamily:
    """Languages that share hidden dynamics, over one joint vocabulary, with their data shares.

    Parameters
    ----------
    languages : tuple of HiddenMarkovLanguage
        One per language, all over the same vocabulary, with the same number of states and
        the same transition matrix (the shared dynamics).
    shares : ndarray, shape (K,)
        The data shares $p_k$ (positive, summing to one).

    Raises
    ------
    TypeError
        If ``languages`` is not a tuple of ``HiddenMarkovLanguage``.
    ValueError
        If it is empty, the languages differ in state count, vocabulary or transitions, or
        the shares are not one positive share per language summing to one.

    Examples
    --------
    >>> hmm = build_hmm(HMMConfig())
    >>> LanguageFamily((hmm, hmm), np.array([0.5, 0.5])).vocab_size
    25
    """

    languages: tuple
    shares: np.ndarray

    def __post_init__(self):
        if not isinstance(self.languages, tuple) or not self.languages:
            raise TypeError(f"languages must be a non-empty tuple of HiddenMarkovLanguage, got "
                            f"{type(self.languages).__name__}")
        for k, language in enumerate(self.languages):
            check_instance(language, f"languages[{k}]", HiddenMarkovLanguage)
        first = self.languages[0]
        for k, language in enumerate(self.languages[1:], start=1):
            if language.n_states != first.n_states:
                raise ValueError(f"languages must share their hidden states: languages[{k}] has {language.n_states} "
                                 f"states, languages[0] {first.n_states}")
            if language.vocab_size != first.vocab_size:
                raise ValueError(f"languages must share one vocabulary: languages[{k}] has {language.vocab_size} "
                                 f"tokens, languages[0] {first.vocab_size}")
            if not np.allclose(language.transition, first.transition, rtol=0, atol=1e-12):
                raise ValueError(f"languages must share their dynamics: languages[{k}] has another transition matrix")
        shares = check_shares(self.shares)
        if shares.size != len(self.languages):
            raise ValueError(f"shares must hold one share per language ({len(self.languages)}), got {shares.size}")
        shares.setflags(write=False)
        object.__setattr__(self, "shares", shares)

    @property
    def vocab_size(self) -> int:
        """Size of the joint vocabulary."""
        return self.languages[0].vocab_size

    def token_language(self) -> np.ndarray:
        """For each token id, the one language that writes it, or -1 for a token several languages write.

        Examples
        --------
        >>> family = language_family()
        >>> owner = family.token_language()
        >>> owner[:2].tolist(), int(owner[-1]), [int(np.sum(owner == k)) for k in range(4)]
        ([0, 0], -1, [24, 24, 24, 24])
        """
        writes = np.array([language.emission.max(axis=0) > 0 for language in self.languages])
        owner = np.where(writes.sum(axis=0) == 1, writes.argmax(axis=0), -1)
        return owner


def language_family(shares=DATA_SHARES, config: HMMConfig | None = None) -> LanguageFamily:
    """The book's HMM as ``len(shares)`` languages: language k writes tokens ``24k … 24k + 23``; all write ``w``.

    Parameters
    ----------
    shares : array_like of float, shape (K,)
        Data shares (default `DATA_SHARES`).
    config : HMMConfig, optional
        The shared dynamics (default: the book's).

    Raises
    ------
    TypeError, ValueError
        As [`check_shares`][mlm_book.experiments.ch10_languages.check_shares], or if ``config``
        is not an ``HMMConfig``.

    Examples
    --------
    >>> family = language_family()
    >>> len(family.languages), family.vocab_size, family.languages[2].token_names[48], family.languages[2].token_names[-1]
    (4, 97, 'L3:a0', 'w')
    """
    shares = check_shares(shares)
    base = check_hmm(build_hmm(HMMConfig() if config is None else check_instance(config, "config", HMMConfig)))
    own = base.vocab_size - 1                      # the base HMM's own tokens; w is its last id
    K = shares.size
    vocab = own * K + 1
    languages = []
    for k in range(K):
        emission = np.zeros((base.n_states, vocab))
        emission[:, own * k: own * (k + 1)] = base.emission[:, :own]
        emission[:, -1] = base.emission[:, base.shared_token]
        names = [f"L{j + 1}:{name}" for j in range(K) for name in base.token_names[:own]] + ["w"]
        languages.append(HiddenMarkovLanguage(
            transition=base.transition, emission=emission, initial=base.initial, regime=base.regime,
            sense_states=base.sense_states, shared_token=vocab - 1, token_names=tuple(names), config=base.config))
    return LanguageFamily(tuple(languages), shares)


# ----------------------------------------------------------------------------- shown in the chapter
def sampling_table(shares=DATA_SHARES, alphas=ALPHAS, batch: int = BATCH):
    """For each α: every language's sampling share (its data share in brackets), the passes over the largest and
    the smallest language's data per corpus-sized budget, and the chance that a batch of ``batch`` sentences holds
    none of the smallest (languages named L1, L2, ... in the order of ``shares``).

    Examples
    --------
    >>> sampling_table().splitlines()[4].startswith("| 0.3 | 0.388 | 0.267 | 0.195 | 0.151 | 0.55 | 5.03 |")
    True
    """
    from mlm_book.report import table
    p = check_shares(shares)
    batch = check_positive_int(batch, "batch")
    alphas = [_check_alpha(a) for a in as_float_array(alphas, "alphas", ndim=1)]
    largest, smallest = int(np.argmax(p)), int(np.argmin(p))
    rows = []
    for alpha in alphas:
        q, n = sampling_shares(p, alpha), passes(p, alpha)
        rows.append([f"{alpha:g}", *q, n[largest], n[smallest], absent_probability(p, alpha, batch)[smallest]])
    header = ["α", *(f"$q_{k + 1}$ ({share:g})" for k, share in enumerate(p)),
              f"passes over L{largest + 1}", f"passes over L{smallest + 1}", f"no L{smallest + 1} in {batch}"]
    return table(header, rows, formats=[None, *[".3f"] * p.size, ".2f", ".2f", ".3f"])


def figure_sampling(shares=DATA_SHARES):
    """Sampling shares and passes over each language's data against α (a corpus-sized budget).

    Left: $q_k(\\alpha)$ for each language, α from 1 (the data's proportions) to 0 (uniform),
    with dots at the α values of [`ALPHAS`][mlm_book.experiments.ch10_languages.ALPHAS].
    Right: $q_k / p_k$, the passes over language $k$'s own data, on a log scale.

    Parameters
    ----------
    shares : sequence of float
        The languages' data shares $p_k$ (default `DATA_SHARES`).

    Returns
    -------
    DescribedFigure
        The figure with its alt text (the largest and smallest language's shares and passes at
        α = 1 and α = 0, computed from ``shares``) and its caption.

    Raises
    ------
    ValueError
        If ``shares`` are not positive numbers summing to one.

    Examples
    --------
    >>> import matplotlib.pyplot as plt
    >>> drawn = figure_sampling([0.5, 0.3, 0.2])
    >>> [ax.get_xlabel() for ax in drawn.figure.axes]
    ['α', 'α']
    >>> "for the 3 languages" in drawn.alt, f"{passes([0.5, 0.3, 0.2], 0.0).max():.2f}" in drawn.alt
    (True, True)
    >>> plt.close(drawn.figure)
    """
    from mlm_book.figures import PALETTE, WIDE, describe, subplots
    p = check_shares(shares)
    alphas = np.linspace(0.0, 1.0, 101)
    q = np.array([sampling_shares(p, a) for a in alphas])
    colours = [PALETTE[c] for c in ("blue", "orange", "green", "vermillion", "purple", "sky", "yellow", "grey")]
    fig, (left, right) = subplots(1, 2, width=WIDE, height=3.4)
    for k in range(p.size):
        colour = colours[k % len(colours)]
        left.plot(alphas, q[:, k], color=colour, label=f"L{k + 1} ($p = {p[k]:g}$)")
        right.plot(alphas, q[:, k] / p[k], color=colour)
        for a in ALPHAS:
            left.plot(a, sampling_shares(p, a)[k], "o", color=colour, ms=3)
    right.axhline(1.0, color=PALETTE["grey"], lw=0.8, ls="--")
    right.set_yscale("log")
    ticks = [t for t in (0.25, 0.5, 1, 2, 4, 8, 16, 32) if (q / p).min() / 1.5 <= t <= (q / p).max() * 1.5]
    right.set_yticks(ticks, [f"{t:g}" for t in ticks])
    right.minorticks_off()
    left.set_xlabel("α")
    right.set_xlabel("α")
    left.set_ylabel("sampling share $q_k$")
    right.set_ylabel("passes over own data\n(corpus-sized budget)")
    left.legend(frameon=False)
    for ax in (left, right):
        ax.invert_xaxis()
    uniform, spread = 1 / p.size, passes(p, 0.0)
    alt = (f"Two panels, α running from 1 on the left to 0 on the right. Left: sampling share against α for the "
           f"{p.size} languages; the largest falls from {p.max():g} to {uniform:g} and the smallest rises from "
           f"{p.min():g} to {uniform:g}, every line meeting at {uniform:g}. Right: passes over each language's data "
           f"per corpus-sized budget, on a log scale: 1 for every language at α = 1, and at α = 0 from "
           f"{spread.min():.2f} for the largest to {spread.max():.2f} for the smallest.")
    caption = ("Sampling shares and passes over each language's own data as α goes from the data's proportions "
               "(α = 1) to uniform (α = 0); dots mark the α values of the table.")
    return describe(fig, alt=alt, caption=caption)


def _upweighting() -> tuple[float, float, float, float]:
    p = np.asarray(DATA_SHARES)
    q = sampling_shares(p, 0.3)
    small, large = int(np.argmin(p)), int(np.argmax(p))
    return float(p[small]), float(q[small]), float(p[large]), float(q[large])


CLAIMS = (
    # for any α < 1, p^α / Σ p^α raises the smallest share and lowers the largest: true by construction
    reported_value("D-23", "Sampling languages by q ∝ p^α with α = 0.3 upweights the less-represented: (p, q) of the "
                   "smallest language, then of the largest, for shares 0.70 / 0.20 / 0.07 / 0.03", "—",
                   _upweighting, section="one-encoder-many-languages-how-often-to-show-each"),
)
