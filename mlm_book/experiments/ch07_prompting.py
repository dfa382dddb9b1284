r"""Chapter 7, prompting against fine-tuning: a cloze prompt on the filing encoder against k-shot fine-tuning.

**What it computes.** For each of the filing encoder's five training seeds
([`mlm_book.artefacts.filing_encoder.SEEDS`][mlm_book.artefacts.filing_encoder.SEEDS]) it reads the runs of
[`mlm_book.artefacts.prompting`][mlm_book.artefacts.prompting] from the store: the zero-shot cloze prompt's
answers on the held-out lexicon sentences (is a sentence's evaluation positive or negative?), and the answers
of the encoder fine-tuned on ``k`` labelled training sentences for each ``k`` of the grid and each of three
draws. From them: the accuracy of each ([`results`][mlm_book.experiments.ch07_prompting.results]), the
learning curve and its table, the ``k`` where the mean fine-tuning curve crosses the mean prompt
([`crossing`][mlm_book.experiments.ch07_prompting.crossing], interpolated in $\log k$), the prompt scored with
another verbaliser ([`prompt_accuracy`][mlm_book.experiments.ch07_prompting.prompt_accuracy]), and the rules.

A seed's fine-tuning accuracy at ``k`` is the mean over its draws.

**Rules, fixed with their expected verdicts before any prompt was read or any classifier fine-tuned on the
filings** (``CLAIMS``, ``STATED_BEFORE_RUN``), each judged at each seed:

* ``D-27``: the prompt's accuracy is above fine-tuning's at ``k = 8``;
* ``D-27a``: fine-tuning on the whole balanced pool is above the prompt;
* ``D-27b``: the prompt is above every constant answer (the test set's majority share).

Examples
--------
>>> study = results()  # doctest: +BOOK
>>> len(study.seeds), study.ks[0]
(5, 8)
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import numpy as np

from mlm_book.artefacts import prompting
from mlm_book.ledger import Claim, over_seeds, verify
from mlm_book.report import Markdown, seed_band, table
from mlm_book.validation import (
    as_float_array,
    as_int_array,
    check_instance,
    check_positive_int,
    check_probability,
)

__all__ = ["PromptingStudy", "results", "prompt_accuracy", "prompt_profile", "crossing", "learning_curve_table",
           "rules_table", "figure_learning_curve", "STATED_BEFORE_RUN", "CLAIMS", "SECTION"]

SECTION = "prompting-against-fine-tuning"
"""The anchor of chapter 7's section."""


@dataclass(frozen=True, eq=False)
class PromptingStudy:
    """The prompt and fine-tuning accuracies on the held-out lexicon sentences, one row per encoder seed.

    Attributes
    ----------
    seeds : tuple of int
        The filing encoder's seeds, the book's first.
    ks : tuple of int
        Labelled training sentences per fine-tuning run.
    prompt : numpy.ndarray, shape (seeds,)
        The cloze prompt's accuracy.
    finetuned : numpy.ndarray, shape (seeds, len(ks), draws)
        Each fine-tuned classifier's accuracy.
    majority : float
        The test set's majority share: the best accuracy a constant answer gets.
    n_test, n_train : int
        Test sentences, and training sentences in the pool.
    prompt_words : numpy.ndarray, shape (seeds, n_test, 6)
        Each verbaliser word's probability at the [MASK], class 0's words first.
    labels : numpy.ndarray, shape (n_test,)
        The test sentences' classes.
    """

    seeds: tuple
    ks: tuple
    prompt: np.ndarray
    finetuned: np.ndarray
    majority: float
    n_test: int
    n_train: int
    prompt_words: np.ndarray
    labels: np.ndarray

    def __post_init__(self):
        for name in ("seeds", "ks"):
            value = getattr(self, name)
            if not isinstance(value, tuple) or not value or not all(
                    isinstance(v, (int, np.integer)) and not isinstance(v, bool) for v in value):
                raise TypeError(f"{name} must be a non-empty tuple of integers, got {value!r:.60}")
        n_test = check_positive_int(self.n_test, "n_test")
        check_positive_int(self.n_train, "n_train")
        seeds, ks = len(self.seeds), len(self.ks)
        shapes = {"prompt": (seeds,), "prompt_words": (seeds, n_test, 6)}
        for name in ("prompt", "finetuned", "prompt_words"):
            array = as_float_array(getattr(self, name), name)
            if name in shapes and array.shape != shapes[name] or name == "finetuned" and (
                    array.ndim != 3 or array.shape[:2] != (seeds, ks) or array.shape[2] < 1):
                raise ValueError(f"{name} must have one entry per seed ({seeds}) and k ({ks}) or test sentence "
                                 f"(n_test = {n_test}), got shape {array.shape}")
            if np.any((array < 0) | (array > 1)):
                raise ValueError(f"{name} must hold accuracies or probabilities in [0, 1]")
            object.__setattr__(self, name, array)
        if check_probability(self.majority, "majority") < 0.5:
            raise ValueError(f"majority must be the larger class's share, at least 0.5, got {self.majority}")
        labels = as_int_array(self.labels, "labels", ndim=1)
        if labels.shape != (n_test,) or np.any((labels != 0) & (labels != 1)):
            raise ValueError(f"labels must hold one class, 0 or 1, per test sentence ({n_test})")
        object.__setattr__(self, "labels", labels)

    @property
    def curve(self) -> np.ndarray:
        """Fine-tuning accuracy per seed and ``k``, the mean over draws: shape (seeds, len(ks))."""
        return self.finetuned.mean(axis=2)


@functools.cache
def results() -> PromptingStudy:
    """The study over the five filing encoders (memoised; the runs come from the store)."""
    prompts, tuned, words = [], [], []
    labels = n_train = None
    setups = prompting.book_setups()
    for setup in setups:
        arrays, metadata = prompting.prompting_run(setup)
        labels = arrays["test_labels"]
        n_train = int(metadata["n_train"])
        scores = arrays["prompt_words"].reshape(-1, 2, 3).sum(axis=2)
        prompts.append(float(np.mean(scores.argmax(axis=1) == labels)))
        tuned.append(np.mean((arrays["ft_positive"] > 0.5) == labels, axis=2))
        words.append(arrays["prompt_words"])
    share = float(labels.mean())
    return PromptingStudy(seeds=tuple(s.encoder.seed for s in setups), ks=tuple(setups[0].ks),
                          prompt=np.array(prompts), finetuned=np.array(tuned), majority=max(share, 1 - share),
                          n_test=int(labels.size), n_train=n_train, prompt_words=np.array(words), labels=labels)


def prompt_accuracy(words=None) -> np.ndarray:
    """The prompt's accuracy at each seed when the verbaliser is cut down to ``words``.

    Parameters
    ----------
    words : pair of sequences of str, optional
        The negative class's words and the positive class's, each a non-empty subset of the verbaliser's
        (default: the whole verbaliser).

    Returns
    -------
    numpy.ndarray, shape (seeds,)

    Raises
    ------
    TypeError
        If ``words`` is not a pair of sequences of str.
    ValueError
        If a word is not one of its class's verbaliser words, or a class is left with none.

    Examples
    --------
    >>> prompt_accuracy((("bad",), ("good",))).shape  # doctest: +BOOK
    (5,)
    >>> prompt_accuracy((("good",), ("bad",)))
    Traceback (most recent call last):
    ...
    ValueError: words[0] must hold words of the negative class's verbaliser ('bad', 'poor', 'unsuccessful'), got 'good'
    """
    if words is None:
        words = prompting.VERBALISER
    if not isinstance(words, (tuple, list)) or len(words) != 2:
        raise TypeError(f"words must be a pair (negative words, positive words), got {words!r:.60}")
    columns = []
    for c, (chosen, allowed) in enumerate(zip(words, prompting.VERBALISER)):
        if isinstance(chosen, str) or not isinstance(chosen, (tuple, list)):
            raise TypeError(f"words[{c}] must be a sequence of str, got {type(chosen).__name__}")
        if not chosen:
            raise ValueError(f"words[{c}] must hold at least one word")
        for word in chosen:
            if not isinstance(word, str):
                raise TypeError(f"words[{c}] must hold str, got {type(word).__name__}")
            if word not in allowed:
                raise ValueError(f"words[{c}] must hold words of the {prompting.CLASS_NAMES[c]} class's verbaliser "
                                 f"{allowed}, got {word!r}")
        columns.append([3 * c + allowed.index(word) for word in dict.fromkeys(chosen)])
    study = results()
    p = study.prompt_words
    scores = np.stack([p[:, :, cols].sum(axis=2) for cols in columns], axis=2)
    return np.mean(scores.argmax(axis=2) == study.labels[None, :], axis=1)


def prompt_profile(study: PromptingStudy | None = None) -> tuple[np.ndarray, np.ndarray]:
    r"""How the prompt answers, per seed: the share of test sentences it calls positive, and the AUC of its score.

    The score is $\log$ (positive words' probability / negative words' probability) at the [MASK]; the AUC is the
    probability that a positive sentence scores above a negative one (ties count one half): 0.5 for a score
    that does not read the sentence's polarity, whatever threshold the answer takes.

    Returns
    -------
    positive_share, auc : numpy.ndarray, shape (seeds,) each

    Raises
    ------
    TypeError
        If ``study`` is not a `PromptingStudy`.
    """
    study = results() if study is None else check_instance(study, "study", PromptingStudy)
    scores = study.prompt_words.reshape(len(study.seeds), study.n_test, 2, 3).sum(axis=3)
    margin = np.log(scores[..., 1]) - np.log(scores[..., 0])
    positive = study.labels == 1
    greater = (margin[:, positive][:, :, None] > margin[:, ~positive][:, None, :]).mean(axis=(1, 2))
    ties = (margin[:, positive][:, :, None] == margin[:, ~positive][:, None, :]).mean(axis=(1, 2))
    return (margin > 0).mean(axis=1), greater + 0.5 * ties


def crossing(study: PromptingStudy | None = None) -> float | None:
    r"""The ``k`` where the mean fine-tuning curve first rises above the mean prompt, interpolated in $\log k$.

    Returns ``None`` when fine-tuning is above the prompt already at the grid's first ``k``, and ``inf`` when it
    never rises above it on the grid.

    Examples
    --------
    >>> made_up = PromptingStudy(seeds=(0,), ks=(8, 32), prompt=np.array([0.6]),
    ...                          finetuned=np.array([[[0.5], [0.7]]]), majority=0.5, n_test=2, n_train=64,
    ...                          prompt_words=np.zeros((1, 2, 6)), labels=np.array([0, 1]))
    >>> round(crossing(made_up), 1)
    16.0

    Raises
    ------
    TypeError
        If ``study`` is not a `PromptingStudy`.
    """
    study = results() if study is None else check_instance(study, "study", PromptingStudy)
    gap = study.curve.mean(axis=0) - float(np.mean(study.prompt))
    if gap[0] > 0:
        return None
    for i in range(1, gap.size):
        if gap[i] > 0:
            a, b = math.log(study.ks[i - 1]), math.log(study.ks[i])
            return float(math.exp(a + (b - a) * (-gap[i - 1]) / (gap[i] - gap[i - 1])))
    return math.inf


# ----------------------------------------------------------------------------- claims
def _above(values, reference) -> dict:
    """``over_seeds`` for "value above ``reference``" (one per seed), a tie not holding."""
    values = [float(v) for v in values]
    reference = [float(r) for r in np.broadcast_to(np.asarray(reference, dtype=np.float64), (len(values),))]
    return over_seeds([(v, r) for v, r in zip(values, reference)], sum(v > r for v, r in zip(values, reference)))


def _prompt_vs_k8() -> dict:
    study = results()
    return _above(study.prompt, study.curve[:, 0])


def _finetuned_vs_prompt() -> dict:
    study = results()
    return _above(study.curve[:, -1], study.prompt)


def _prompt_vs_constant() -> dict:
    study = results()
    return _above(study.prompt, study.majority)


_QUANTITY = ("Held-out lexicon sentences whose lexicon words share one polarity, is the sentence positive or "
             "negative (5 filing encoders): the cloze prompt '<sentence> [SEP] overall it was a [MASK] year for the "
             "group' with verbaliser good/excellent/successful against bad/poor/unsuccessful, ")

CLAIMS = (
    Claim("D-27", _QUANTITY + "against the encoder fine-tuned on k = 8 labelled sentences (4 per class; mean of 3 "
          "draws): accuracies (prompt, fine-tuned)", seed="—", rule="prompt above fine-tuning at k = 8, at a seed",
          compute=_prompt_vs_k8, accept=lambda v: True, expected="seed-dependent", section=SECTION),
    Claim("D-27a", _QUANTITY + "against the encoder fine-tuned on the whole balanced training pool (mean of 3 "
          "draws): accuracies (fine-tuned, prompt)", seed="—",
          rule="fine-tuning on the whole pool above the prompt, at a seed", compute=_finetuned_vs_prompt,
          accept=lambda v: True, expected="reproduced", section=SECTION),
    Claim("D-27b", _QUANTITY + "against the best constant answer (the test set's majority share): accuracies "
          "(prompt, constant)", seed="—", rule="prompt above every constant answer, at a seed",
          compute=_prompt_vs_constant, accept=lambda v: True, expected="seed-dependent", section=SECTION),
)
"""Concept D-27's rules: the prompt against fine-tuning at the two ends of the grid, and against chance."""

STATED_BEFORE_RUN = {"D-27": "seed-dependent", "D-27a": "reproduced", "D-27b": "seed-dependent"}
"""The verdict each rule was expected to get, committed with the rules before any prompt was read or any
classifier fine-tuned on the filings, and why:

* ``D-27``, seed-dependent: the prompt can only read what the masked-LM objective tied to the tone words, and
  in the filings a lexicon word agrees with its filing's tone 70 % of the time and a tone word 85 %, in
  another sentence: a weak association. Fine-tuning on 8 sentences sees at most 8 of the 35 lexicon words,
  and this chapter's lexicon probe found no polarity in the encoder's vectors, so it should be right mostly
  on test sentences that reuse a word it saw. Both should sit a little above one half, neither reliably above
  the other.
* ``D-27a``, reproduced: the whole pool holds every lexicon word many times, the gold is a function of the
  word, and the test sentences use the same 35 words, so fine-tuning can learn the lexicon itself.
* ``D-27b``, seed-dependent: the association the prompt reads is weak, and the bar (the test's majority
  share) is above one half.
"""


# ----------------------------------------------------------------------------- tables and figure
def learning_curve_table(study: PromptingStudy | None = None) -> Markdown:
    """Accuracy of fine-tuning at each ``k`` and of the prompt: the book's seed (mean ± sd over the seeds).

    Raises
    ------
    TypeError
        If ``study`` is not a `PromptingStudy`.
    """
    study = results() if study is None else check_instance(study, "study", PromptingStudy)
    rows = [("cloze prompt (no labelled sentence)", "0", seed_band(study.prompt))]
    for i, k in enumerate(study.ks):
        rows.append(("fine-tuned" + (" (the whole balanced pool)" if i == len(study.ks) - 1 and k > 512 else ""),
                     str(k), seed_band(study.curve[:, i])))
    rows.append(("a constant answer (the majority)", "—", f"{study.majority:.3f}"))
    return table(["reader", "labelled sentences k", "test accuracy"], rows)


_RULE_NAMES = {"D-27": "prompt above fine-tuning at k = 8", "D-27a": "fine-tuning on the whole pool above the prompt",
               "D-27b": "prompt above every constant answer"}


def rules_table() -> Markdown:
    """The rules: each rule, how many seeds satisfy it, the verdict stated before the run and the one found."""
    rows = [(_RULE_NAMES[r.claim.id], r.value["seeds holding"], STATED_BEFORE_RUN[r.claim.id], r.verdict)
            for r in verify(claims=CLAIMS)]
    return table(["rule (fixed before the runs)", "seeds holding", "expected before the run", "found"], rows)


def figure_learning_curve(study: PromptingStudy | None = None):
    """Test accuracy against ``k`` (log scale): each seed's fine-tuning curve, their mean, the prompt's seeds and
    mean as flat lines, and the best constant answer.

    Returns
    -------
    DescribedFigure

    Raises
    ------
    TypeError
        If ``study`` is not a `PromptingStudy`.
    """
    from mlm_book.figures import NARROW, PALETTE, describe, subplots

    study = results() if study is None else check_instance(study, "study", PromptingStudy)
    fig, ax = subplots(1, 1, width=NARROW, height=3.6)
    ks = np.array(study.ks, dtype=float)
    curve = study.curve
    for row in curve:
        ax.plot(ks, row, color=PALETTE["blue"], lw=0.8, alpha=0.45, marker="o", ms=3)
    mean, sd = curve.mean(axis=0), curve.std(axis=0, ddof=1)
    ax.fill_between(ks, mean - sd, mean + sd, color=PALETTE["blue"], alpha=0.15, lw=0)
    ax.plot(ks, mean, color=PALETTE["blue"], lw=2.0, label="fine-tuned (mean of seeds)")
    for value in study.prompt:
        ax.axhline(value, color=PALETTE["orange"], lw=0.8, alpha=0.45)
    ax.axhline(float(study.prompt.mean()), color=PALETTE["orange"], lw=2.0, ls="--", label="cloze prompt (mean)")
    ax.axhline(study.majority, color=PALETTE["grey"], lw=1.2, ls=":", label="constant answer")
    where = crossing(study)
    if where is not None and math.isfinite(where):
        ax.axvline(where, color=PALETTE["black"], lw=0.8, ls="-.")
    ax.set_xscale("log", base=2)
    ax.set_xticks(ks, [str(k) for k in study.ks])
    ax.set_xlabel("labelled training sentences k")
    ax.set_ylabel("test accuracy")
    ax.set_ylim(0.3, 1.02)
    ax.legend(loc="lower right")
    cross = ("below the first k" if where is None else "nowhere on the grid" if math.isinf(where)
             else f"at k of about {where:.0f}")
    alt = (f"Test accuracy on {study.n_test} held-out sentences against k from {study.ks[0]} to {study.ks[-1]} on a "
           f"log scale: the fine-tuned encoder's mean rises from {mean[0]:.2f} to {mean[-1]:.2f}; the cloze prompt is "
           f"flat at {study.prompt.min():.2f} to {study.prompt.max():.2f} over the seeds; a constant answer scores "
           f"{study.majority:.2f}; the mean curves cross {cross}.")
    caption = (f"Prompting against fine-tuning on the filing encoder: thin lines are the {len(study.seeds)} seeds "
               f"(fine-tuning: the mean of {study.finetuned.shape[2]} draws of the k sentences), thick lines their "
               "means, the band ± one standard deviation.")
    return describe(fig, alt=alt, caption=caption)
