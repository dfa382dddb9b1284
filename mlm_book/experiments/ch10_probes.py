r"""Chapter 10, open question Q5: do probes find what the encoder uses, or any cue at all?

**The question.** A probe shows that a property can be read off a layer by a linear map, not
that the encoder reads it there. Chapter 5's sense probe on the HMM encoder nearly reaches the
exact Bayes accuracy from layer 1 on; chapter 6's layer-0 probe types *kestrel* as company or
product far above the majority share only because the token's window position differs between
the two kinds of mention (the position leak). Three experiments, each at the five training
seeds of the encoder involved ([`mlm_book.experiments.hmm_encoder.SEEDS`][mlm_book.artefacts.hmm_encoder.SEEDS],
[`mlm_book.artefacts.filing_encoder.SEEDS`][mlm_book.artefacts.filing_encoder.SEEDS]).

**1. Control tasks** (Hewitt and Liang 2019, on the references page;
[`control_tasks`][mlm_book.experiments.ch10_probes.control_tasks]). A control task gives every
*word type* a random label, so a probe can solve it only by memorising types; a probe's
*selectivity* is its accuracy on the real task minus its accuracy on the control. The sense
probe concerns one type ($w$), on which a per-type label is a constant, so the control is
applied to a probe over *every* token's vector. The task is the hidden regime (a or b) of the
HMM state at each position: the sense of $w$ generalised to every token, sampled with the
sequence and known exactly, and its Bayes accuracy $\mathbb{E}\max_k P(\text{regime}_i = k \mid x)$
is computed by forward–backward ([`regime_posteriors`][mlm_book.experiments.ch10_probes.regime_posteriors]).
Every other token is emitted by one regime only, so the task is a property of the type except at
$w$, where it needs the context. The control labels a uniformly random
[`CONTROL_LABELLED`][mlm_book.experiments.ch10_probes.CONTROL_LABELLED] of the 25 types 1 and the
rest 0 ([`control_labels`][mlm_book.experiments.ch10_probes.control_labels]; the task labels 12
types a, 12 types b and $w$ by context, so both tasks have the same number of types per class),
[`CONTROL_DRAWS`][mlm_book.experiments.ch10_probes.CONTROL_DRAWS] draws with fixed seeds. Data:
chapter 4's splits (every token of the 1500 training and 1500 test sequences), the probe and its
fixed strength of [`mlm_book.probe.fit_and_score`][mlm_book.probe.fit_and_score], layers 0, 1, 2.

**2. The position leak against the window stride**
([`stride_leak`][mlm_book.experiments.ch10_probes.stride_leak]). Chapter 6 reads a token from
document-internal windows of 32 tokens starting every ``stride`` tokens of a filing (plus one
flush with its end), at the window where it sits nearest the centre
([`mlm_book.finance.windows.fixed_windows`][mlm_book.finance.windows.fixed_windows],
[`mlm_book.finance.windows.nearest_centre`][mlm_book.finance.windows.nearest_centre]; the book's
stride is 16). A stride is between 1 and 32 (no gaps); the sweep is
[`STRIDES`][mlm_book.experiments.ch10_probes.STRIDES]. At each stride the layer-0 vector
$E[\textit{kestrel}] + P_{\text{slot}}$ of each of *kestrel*'s typed mentions is probed with
chapter 6's stratified five folds, beside the centred reading (every token at slot 16, chapter
6's layer 0) and the majority share. The expectation under test: at stride 1 every token can sit
at the centre, so the leak should vanish as the stride shrinks. That holds only for a token with
16 tokens of its filing before it and 15 after it; a token nearer a filing's edge can only be read
at its distance from that edge ([`window_positions`][mlm_book.experiments.ch10_probes.window_positions]).

**3. One causal test** ([`causal_test`][mlm_book.experiments.ch10_probes.causal_test]; after the
amnesic probing of Elazar et al. 2021, on the references page). On each HMM encoder
(parameters in float64):

* the *sense direction* is the normal of the layer-1 sense probe's boundary in the residual
  stream, $u = W / \sigma$ (the probe's weights over the training occurrences' standard
  deviations), normalised ([`sense_direction`][mlm_book.experiments.ch10_probes.sense_direction]);
  the probe is chapter 5's, fitted on the training split's occurrences of $w$;
* the *ablation* sets the component along $\hat u$ of the layer-1 stream, at every position that
  shows $w$, to the training occurrences' mean: $x \mapsto x - ((x - \mu)\cdot\hat u)\,\hat u$
  ([`ablate`][mlm_book.experiments.ch10_probes.ablate]). The layer-1 probe then reads the same logit
  (its intercept) at every occurrence;
* the *control* moves the same positions by the same signed amounts along a random unit direction
  $\hat s$ instead, $x \mapsto x - ((x - \mu)\cdot\hat u)\,\hat s$: every occurrence is displaced by
  exactly the norm the ablation displaces it by, and the sense direction is left intact.
  [`ABLATION_DRAWS`][mlm_book.experiments.ch10_probes.ABLATION_DRAWS] directions per encoder;
* the network is resumed from layer 1 on the modified stream (block 2 and the tied head,
  [`resume`][mlm_book.experiments.ch10_probes.resume]; unmodified, it reproduces the encoder's
  logits to rounding);
* **what is measured, fixed before computing**: the test split's sequences; every position $j$ next
  to an occurrence of $w$ ($x_{j-1} = w$ or $x_{j+1} = w$) that is not itself $w$
  ([`neighbour_positions`][mlm_book.experiments.ch10_probes.neighbour_positions]), each in its own
  copy of its clean sequence with ``[MASK]`` at $j$ and every other token shown as it is. At $j$:
  the mean $\operatorname{KL}(q \,\|\, q_{\text{ablated}})$ from the unablated prediction, and the
  change of the mean cross-entropy against the exact posterior of the book's channel
  ([`mlm_book.channel.exact_posterior`][mlm_book.channel.exact_posterior], the optimum the encoder
  was trained towards), with its standard error over sequences (a paired difference).
  Alongside: chapter 5's layer-2 probe on the test split's occurrences of $w$ with the ablation made
  at layer 1 (does block 2 restore the sense?).

Two diagnostics were added after the rule's numbers were in, to say why it fails; neither enters a
rule: a layer-1 probe *retrained* on the ablated vectors (is the sense gone, or only that direction?),
and the same measurement with $w$'s *whole* layer-1 vector set to the training occurrences' mean (how
much do the predictions next to $w$ depend on $w$'s layer-1 vector at all?).

**The rules, fixed before any number was computed** (module constants, the claims below).

* Control tasks ([`PRESTATED`][mlm_book.experiments.ch10_probes.PRESTATED]): the probe is selective
  at layers 1 and 2 (selectivity above zero), and its selectivity at layers 1 and 2 exceeds layer 0's
  by at least [`SELECTIVITY_RISE`][mlm_book.experiments.ch10_probes.SELECTIVITY_RISE].
* Stride ([`PRESTATED`][mlm_book.experiments.ch10_probes.PRESTATED]): the expectation above, at
  stride 1 the layer-0 accuracy is at most the majority share plus
  [`LEAK_MARGIN`][mlm_book.experiments.ch10_probes.LEAK_MARGIN]. Read off the corpus before the
  sweep (not off any probe): *kestrel*'s product mentions all lie within three tokens of their
  filing's end, which no document-internal window can centre, so the prediction was that this
  rule fails.
* Causal ([`CLAIMS`][mlm_book.experiments.ch10_probes.CLAIMS]): removing the sense direction moves
  the predictions next to $w$ more than every equal-norm random displacement does (mean KL from the
  unablated prediction) *and* raises the cross-entropy against the exact posterior by more than
  [`CAUSAL_SE`][mlm_book.experiments.ch10_probes.CAUSAL_SE] standard errors.

**What it finds** ([`results`][mlm_book.experiments.ch10_probes.results], the three tables and the two
figures; each statement is checked by ``tests/test_ch10_probes.py``).

* *Control tasks.* A random label per word type is learned almost perfectly at every layer: the types
  are linearly separable in the residual stream (exactly so at layer 0), so a linear probe of a
  property that is mostly a function of the type scores high whatever it means. The regime probe is
  therefore *less* accurate than its control at every layer, and its selectivity is negative: at layer
  0 by about the share of $w$ times what the static cap leaves, at layers 1 and 2 by about a
  hundredth or less. The first rule (selectivity above zero) fails at every seed. The second holds at every
  seed: from layer 0 to layers 1 and 2 the selectivity rises by about the amount the contextual
  reading of $w$ adds, and that rise, not the accuracy, is what the probe says about context. The
  regime probe's accuracy on $w$'s occurrences alone is chapter 5's sense probe again, below the exact
  Bayes accuracy.
* *Stride.* The leak does not vanish at any stride: at stride 1 the layer-0 probe still types almost
  every mention, far above the majority share, at every seed. Every product mention lies within three
  tokens of its filing's end and is read at slots 28–30 at every stride; the company mentions never
  reach those slots below stride 32, where the flush last window mixes them. The stride only changes
  where the other tokens sit; the leak lives at the filings' edges, and only the centred reading,
  which pads instead of shifting the window, removes it. The expectation's rule fails at every seed,
  as the corpus layout predicted.
* *Causal test.* Removing the sense direction moves the predictions next to $w$ by about
  $10^{-6}$ nats, no more than moving the same positions by the same amounts in random directions,
  and changes their cross-entropy against the exact posterior by amounts of the same size, of either
  sign: the rule fails at every seed. The diagnostics say why: a probe retrained on the ablated layer-1
  vectors reads the sense as well as before (one direction does not hold it), and even replacing $w$'s
  whole layer-1 vector moves the neighbours' predictions by less than a hundredth of their divergence
  from the exact posterior. When block 2 predicts a neighbour of $w$ it barely reads $w$'s layer-1
  vector: the prediction rests on what block 1 gathered at the neighbour, from $w$'s *input* vector and
  the rest of the context. The sense is encoded at $w$ (chapter 5's probe reads it, and removing the
  direction does change $w$'s own layer-2 vector: chapter 5's layer-2 probe loses accuracy there) but,
  for predicting its neighbours, it is not used there.
"""

from __future__ import annotations

import functools
from dataclasses import asdict, dataclass

import numpy as np

from mlm_book import artefacts, probe
from mlm_book.nn import runtime
from mlm_book.ledger import Claim, over_seeds
from mlm_book.report import Markdown, table
from mlm_book.report import seed_band
from mlm_book.validation import (
    as_float_array,
    as_int_array,
    check_instance,
    check_positive_int,
    check_probability,
    check_real,
    check_tokens,
)

__all__ = [
    "CONTROL_DRAWS", "CONTROL_LABELLED", "CONTROL_SEED", "STRIDES", "ABLATION_DRAWS", "ABLATION_SEED",
    "ABLATION_LAYER", "RESUME_CHECK", "MAX_CONTROL_VOCABULARY", "MAX_CONTROL_DRAWS",
    "SELECTIVITY_RISE", "LEAK_MARGIN", "CAUSAL_SE",
    "control_labels", "regime_posteriors", "ControlTasks", "control_tasks",
    "window_positions", "StrideLeak", "stride_leak",
    "stream_at", "resume", "sense_direction", "ablate", "neighbour_positions", "CausalTest", "causal_test",
    "ProbeCaveats", "results", "control_table", "stride_table", "causal_table", "figure_controls",
    "figure_causal", "PRESTATED", "CLAIMS",
]

# --------------------------------------------------------------------------------------
# The protocol and the rules, fixed before any number was computed
# --------------------------------------------------------------------------------------

CONTROL_DRAWS = 5
"""Random per-type labellings of the control task, each fitted and scored at every layer and seed."""

CONTROL_LABELLED = 12
"""Types labelled 1 by each control draw (of the HMM's 25): the task labels 12 types a, 12 types b and
$w$ by context, so the control has the task's number of types per class, $w$ included at random."""

CONTROL_SEED = 5110
"""Draw $r$ of the control labels comes from ``numpy.random.default_rng([CONTROL_SEED, r])``."""

STRIDES = (1, 2, 4, 8, 16, 32)
"""Window strides swept (windows of 32 tokens: every stride from 1 to 32 covers every token; 16 is chapter 6's)."""

ABLATION_DRAWS = 8
"""Random directions of the causal test's control, per encoder."""

ABLATION_SEED = 5120
"""Draw $r$ of encoder seed $s$ comes from ``numpy.random.default_rng([ABLATION_SEED, s, r])``."""

RESUME_CHECK = 512
"""Measured copies on which the resumed pass is compared with the encoder's own forward pass."""

ABLATION_LAYER = 1
"""The layer whose stream is modified (after block 1): the sense probe reaches its ceiling there (chapter 5)."""

SELECTIVITY_RISE = 0.05
"""Rule of the control tasks: selectivity at layers 1 and 2 at least this much above layer 0's. Why 0.05:
$w$ is about 18 % of the tokens, and the contextual layers' sense probe beats the static cap by about 0.45
there (chapter 5), so if the control stayed where it is, the task (and the selectivity) would rise by about
0.08; 0.05 asks for most of that."""

LEAK_MARGIN = 0.05
"""Rule of the stride sweep: "the leak vanishes" means a layer-0 accuracy at most the majority share plus
this (about one binomial standard error of an accuracy over *kestrel*'s 116 typed mentions)."""

CAUSAL_SE = 2.0
"""Rule of the causal test: the sense ablation's rise in cross-entropy against the exact posterior must
exceed this many standard errors (over sequences) of the paired difference."""


def _check_seeds(seeds, allowed: tuple, what: str) -> tuple:
    if not isinstance(seeds, tuple) or len(seeds) < 2 or not all(
            isinstance(s, int) and not isinstance(s, bool) for s in seeds):
        raise TypeError(f"seeds must be a tuple of at least two integer training seeds, got {seeds!r:.60}")
    if len(set(seeds)) != len(seeds):
        raise ValueError(f"seeds must be distinct, got {seeds}")
    unknown = [s for s in seeds if s not in allowed]
    if unknown:
        raise ValueError(f"seeds must be among the {what}'s trained seeds {allowed} (another seed would train a "
                         f"new encoder), got {unknown[0]}")
    return seeds


def _hmm_seeds():
    from mlm_book.experiments import hmm_encoder
    return hmm_encoder.SEEDS


def _filing_seeds():
    from mlm_book.artefacts import filing_encoder
    return filing_encoder.SEEDS


# --------------------------------------------------------------------------------------
# 1. Control tasks
# --------------------------------------------------------------------------------------


MAX_CONTROL_VOCABULARY = 10**6
"""Largest vocabulary `control_labels` labels (the filing vocabulary has under a thousand types)."""
MAX_CONTROL_DRAWS = 1000
"""Most control draws `control_labels` makes (the chapter uses five)."""


def control_labels(vocab_size: int = 25, draws: int = CONTROL_DRAWS, labelled: int = CONTROL_LABELLED,
                   seed: int = CONTROL_SEED) -> np.ndarray:
    r"""Random per-type labels: row $r$ gives label 1 to a uniformly random ``labelled`` of the types.

    A control task in Hewitt and Liang's sense: the label of an occurrence is its type's, so it is
    constant per type and a probe can learn it only by telling the types apart.

    Parameters
    ----------
    vocab_size : int
        Number of types (at least 2).
    draws : int
        Independent labellings (at least 1).
    labelled : int
        Types labelled 1 per draw, in ``[1, vocab_size)`` (both labels occur).
    seed : int
        Draw $r$ uses ``default_rng([seed, r])``.

    Returns
    -------
    numpy.ndarray of int64, shape (draws, vocab_size)

    Raises
    ------
    TypeError
        If an argument is not an integer.
    ValueError
        If ``vocab_size`` is below 2 or above ``MAX_CONTROL_VOCABULARY``, ``draws`` below 1 or above
        ``MAX_CONTROL_DRAWS``, ``labelled`` outside ``[1, vocab_size)`` or ``seed`` negative.

    Examples
    --------
    >>> labels = control_labels()
    >>> labels.shape, labels.sum(axis=1).tolist()
    ((5, 25), [12, 12, 12, 12, 12])
    >>> tokens = np.array([[3, 24, 3]])
    >>> labels[0][tokens].tolist()      # an occurrence takes its type's label
    [[1, 0, 1]]
    >>> control_labels(4, labelled=4)
    Traceback (most recent call last):
    ...
    ValueError: labelled must be in [1, vocab_size) = [1, 4) so that both labels occur, got 4
    """
    vocab_size = check_positive_int(vocab_size, "vocab_size", minimum=2)
    draws = check_positive_int(draws, "draws")
    labelled = check_positive_int(labelled, "labelled")
    seed = check_positive_int(seed, "seed", minimum=0)
    if labelled >= vocab_size:
        raise ValueError(f"labelled must be in [1, vocab_size) = [1, {vocab_size}) so that both labels occur, "
                         f"got {labelled}")
    if vocab_size > MAX_CONTROL_VOCABULARY or draws > MAX_CONTROL_DRAWS:
        raise ValueError(f"vocab_size must be at most {MAX_CONTROL_VOCABULARY} and draws at most "
                         f"{MAX_CONTROL_DRAWS} (a label per type and draw), got vocab_size={vocab_size}, draws={draws}")
    out = np.zeros((draws, vocab_size), dtype=np.int64)
    for r in range(draws):
        out[r, np.random.default_rng([seed, r]).permutation(vocab_size)[:labelled]] = 1
    return out


def regime_posteriors(tokens) -> np.ndarray:
    r"""Exact $P(\text{regime}_i = b \mid x)$ at every position of clean sequences of the book's HMM.

    Forward–backward's posterior over the hidden states, summed over regime b's four states.
    At $w$ it is the sense posterior of chapter 5; at any other token it is 0 or 1 (each regime
    token is emitted by one regime only).

    Parameters
    ----------
    tokens : array_like of int, shape (B, n)
        Token ids in ``[0, 25)``.

    Returns
    -------
    numpy.ndarray, shape (B, n)

    Raises
    ------
    TypeError
        If ``tokens`` does not hold integers.
    ValueError
        If ``tokens`` is not 2-D or holds an id outside ``[0, 25)``.

    Examples
    --------
    >>> from mlm_book.hmm import default_hmm, sense_posteriors
    >>> hmm = default_hmm()
    >>> x = np.array([[0, hmm.shared_token, 13]])
    >>> p = regime_posteriors(x)
    >>> p[0, [0, 2]].tolist(), bool(abs(p[0, 1] - sense_posteriors(hmm, x)[0, 1, 1]) < 1e-12)
    ([0.0, 1.0], True)
    """
    from mlm_book.hmm import default_hmm, emission_likelihood, forward_backward

    hmm = default_hmm()
    tokens = check_tokens(tokens, "tokens", hmm.vocab_size, ndim=2)
    smoothed = forward_backward(hmm.transition, hmm.initial, emission_likelihood(hmm, tokens))
    return smoothed.posterior @ (hmm.regime == 1).astype(np.float64)


@dataclass(frozen=True, eq=False)
class ControlTasks:
    r"""The regime task and its control tasks on every token's vector, by seed and layer.

    Attributes
    ----------
    seeds : tuple of int
        The HMM encoder's training seeds, the book's first; ``S`` of them.
    task : numpy.ndarray, shape (S, L)
        Test accuracy of the probe of the regime of every token, at layers 0 .. L-1.
    control : numpy.ndarray, shape (S, L, D)
        Test accuracy of the same probe on each of ``D`` control labellings.
    task_at_w : numpy.ndarray, shape (S, L)
        The regime probe's accuracy on the test occurrences of $w$ only.
    bayes : float
        Exact Bayes accuracy of the regime over every test token.
    bayes_at_w : float
        The same over the test occurrences of $w$ (chapter 5's Bayes accuracy).
    majority : float
        Test share of the training-majority regime.
    w_share : float
        Share of the test tokens that are $w$.

    Raises
    ------
    TypeError, ValueError
        If ``seeds`` is not a tuple of integers, an array is not of the shapes above (``S`` seeds, the
        same ``L``) or holds a value outside [0, 1], or a share is not in [0, 1].

    Examples
    --------
    >>> c = ControlTasks(seeds=(1, 2), task=np.full((2, 3), 0.9), control=np.full((2, 3, 4), 0.95),
    ...                  task_at_w=np.full((2, 3), 0.5), bayes=0.99, bayes_at_w=0.97, majority=0.51, w_share=0.18)
    >>> c.selectivity.round(2).tolist()[0]
    [-0.05, -0.05, -0.05]
    """

    seeds: tuple
    task: np.ndarray
    control: np.ndarray
    task_at_w: np.ndarray
    bayes: float
    bayes_at_w: float
    majority: float
    w_share: float

    def __post_init__(self):
        if not isinstance(self.seeds, tuple) or not all(isinstance(s, int) for s in self.seeds):
            raise TypeError(f"seeds must be a tuple of integers, got {self.seeds!r:.60}")
        task = _shares(self.task, "task", 2)
        shape = (len(self.seeds), task.shape[1])
        if task.shape != shape:
            raise ValueError(f"task must have shape {shape} (seeds by layers), got {task.shape}")
        control = _shares(self.control, "control", 3)
        if control.shape[:2] != shape or control.shape[2] < 1:
            raise ValueError(f"control must have shape {shape} + (draws,), task's seeds by layers, got {control.shape}")
        if _shares(self.task_at_w, "task_at_w", 2).shape != shape:
            raise ValueError(f"task_at_w must have shape {shape}, got {np.shape(self.task_at_w)}")
        for name in ("bayes", "bayes_at_w", "majority", "w_share"):
            check_probability(getattr(self, name), name)
        _freeze(self, ("task", "control", "task_at_w"))

    @property
    def layers(self) -> int:
        """Number of layers probed."""
        return int(self.task.shape[1])

    @property
    def control_mean(self) -> np.ndarray:
        """``(S, L)`` control accuracy, mean over the draws."""
        return self.control.mean(axis=2)

    @property
    def selectivity(self) -> np.ndarray:
        """``(S, L)`` task accuracy minus the mean control accuracy (Hewitt and Liang's selectivity)."""
        return self.task - self.control_mean


def _shares(value, name: str, ndim: int) -> np.ndarray:
    array = as_float_array(value, name, ndim=ndim)
    if array.size == 0 or array.min() < 0 or array.max() > 1:
        raise ValueError(f"{name} must hold accuracies in [0, 1]")
    return array


def _freeze(record, names) -> None:
    for name in names:
        value = np.array(getattr(record, name), dtype=np.float64)
        value.flags.writeable = False
        object.__setattr__(record, name, value)


def _float64(params) -> dict:
    return {key: np.asarray(value, dtype=np.float64) for key, value in params.items()}


def _split_streams(params, config, tokens) -> list[np.ndarray]:
    """``[(B*n, d)]`` the residual stream after 0, 1, ... blocks (float64 parameters)."""
    from mlm_book.nn import layers

    x, _ = layers.embedding_forward(tokens, params["E"], params["P"])
    out = [x]
    for block in range(config.n_blocks):
        x, _ = layers.block_forward(x, params, f"blocks.{block}.", config.n_heads, tokens.shape, config.ln_eps)
        out.append(x)
    return out


def _control_seed(seed: int) -> dict:
    """Task, controls and task-at-w accuracies of the HMM encoder trained with ``seed``."""
    from mlm_book.experiments import hmm_encoder
    from mlm_book.hmm_splits import hmm_split
    from mlm_book.hmm import default_hmm

    hmm = default_hmm()
    result = hmm_encoder.trained_encoder(hmm_encoder.seed_setup(seed))
    params = _float64(result.params)
    train, test = hmm_split("train"), hmm_split("test")
    controls = control_labels(hmm.vocab_size)
    streams = {name: _split_streams(params, result.encoder, split.tokens) for name, split in
               (("train", train), ("test", test))}
    y_train, y_test = hmm.regime[train.states].ravel(), hmm.regime[test.states].ravel()
    at_w = test.tokens.ravel() == hmm.shared_token
    task, task_w, control = [], [], []
    for layer in range(result.encoder.n_blocks + 1):
        x_train, x_test = streams["train"][layer], streams["test"][layer]
        fitted = probe.fit_and_score(x_train, y_train, x_test, y_test)
        task.append(fitted.accuracy)
        task_w.append(float(np.mean(fitted.model.predict(x_test[at_w]) == y_test[at_w])))
        control.append([probe.fit_and_score(x_train, labels[train.tokens.ravel()], x_test,
                                            labels[test.tokens.ravel()]).accuracy for labels in controls])
    return {"task": task, "task_at_w": task_w, "control": control}


def _control_references() -> dict:
    from mlm_book.hmm_splits import hmm_split
    from mlm_book.hmm import default_hmm

    hmm = default_hmm()
    train, test = hmm_split("train"), hmm_split("test")
    p = regime_posteriors(test.tokens)
    best = np.maximum(p, 1.0 - p)
    at_w = test.tokens == hmm.shared_token
    majority_class = int(np.bincount(hmm.regime[train.states].ravel(), minlength=2).argmax())
    return {"bayes": float(best.mean()), "bayes_at_w": float(best[at_w].mean()),
            "majority": float(np.mean(hmm.regime[test.states] == majority_class)), "w_share": float(at_w.mean())}


def control_tasks(seeds: tuple | None = None) -> ControlTasks:
    r"""The regime task and the control tasks at layers 0, 1, 2 of the HMM encoder at each seed.

    For every seed: the probe of [`mlm_book.probe.fit_and_score`][mlm_book.probe.fit_and_score] on every
    token's vector of chapter 4's training split (36,000 tokens), scored on the test split's, with the
    sampled regime as the label, and again with each of the [`control_labels`][mlm_book.experiments.ch10_probes.control_labels].
    Computed once and kept on disk (a cold run takes tens of seconds); memoised per ``seeds``.

    Parameters
    ----------
    seeds : tuple of int, optional
        Training seeds among [`mlm_book.experiments.hmm_encoder.SEEDS`][mlm_book.artefacts.hmm_encoder.SEEDS]
        (all five by default, the book's first).

    Returns
    -------
    ControlTasks

    Raises
    ------
    TypeError
        If ``seeds`` is not a tuple of at least two integers.
    ValueError
        If a seed repeats or is not one the book trains.

    Examples
    --------
    >>> c = control_tasks()  # doctest: +BOOK
    >>> c.task.shape, c.control.shape, c.seeds[0] == _hmm_seeds()[0]
    ((5, 3), (5, 3, 5), True)
    >>> control_tasks((1, 99))
    Traceback (most recent call last):
    ...
    ValueError: seeds must be among the HMM encoder's trained seeds (20240601, 1, 2, 3, 4) (another seed would train a new encoder), got 99
    """
    seeds = _hmm_seeds() if seeds is None else seeds
    return _control_tasks(_check_seeds(seeds, _hmm_seeds(), "HMM encoder"))


def _hmm_key_and_code(seeds, constants: dict, functions) -> tuple[dict, list]:
    from mlm_book import hmm_splits
    from mlm_book.experiments import hmm_encoder
    from mlm_book.nn import encoder as enc
    from mlm_book.nn import layers, train

    key = {"setups": [asdict(hmm_encoder.seed_setup(seed)) for seed in seeds],
           "splits": asdict(hmm_splits.SPLITS), "strength": probe.PROBE_STRENGTH, **constants}
    code = [*functions, probe, enc, layers, train, hmm_splits.hmm_split, artefacts.key_source("hmm-encoder")]
    return key, code


@functools.cache
def _control_tasks(seeds: tuple) -> ControlTasks:
    from mlm_book import cache
    from mlm_book.experiments import hmm_encoder

    def build():
        hmm_encoder.ensure_trained([hmm_encoder.seed_setup(seed) for seed in seeds])
        with runtime.blas_threads(1):      # the probes' small products: threads only contend
            rows = [_control_seed(seed) for seed in seeds]
        arrays = {name: np.array([row[name] for row in rows]) for name in ("task", "task_at_w", "control")}
        return arrays, _control_references()

    constants = {"draws": CONTROL_DRAWS, "labelled": CONTROL_LABELLED, "control_seed": CONTROL_SEED}
    key, code = _hmm_key_and_code(seeds, constants, [control_labels, regime_posteriors, _control_seed,
                                                     _control_references, _split_streams, _float64])
    arrays, meta = cache.cached("ch10-control-tasks", key, code, build)
    return ControlTasks(seeds=seeds, task=arrays["task"], control=arrays["control"], task_at_w=arrays["task_at_w"],
                        **{name: float(meta[name]) for name in ("bayes", "bayes_at_w", "majority", "w_share")})


# --------------------------------------------------------------------------------------
# 2. The position leak against the stride
# --------------------------------------------------------------------------------------


def window_positions(stride: int, length: int = 32) -> np.ndarray:
    r"""The slot at which chapter 6's nearest-centre reading puts every token of the filings, at ``stride``.

    Chapter 6's own reading generalised from its stride (16) to any: each filing is cut into windows
    of ``length`` tokens starting every ``stride`` tokens, plus one flush with its end
    ([`mlm_book.finance.windows.fixed_windows`][mlm_book.finance.windows.fixed_windows]), and a token is
    read in the window where it sits nearest the centre, ties to the earlier window
    ([`mlm_book.finance.windows.nearest_centre`][mlm_book.finance.windows.nearest_centre]). At stride 1 a
    token with at least ``length // 2`` tokens of its filing before it and ``length - length // 2 - 1``
    after it sits at slot ``length // 2``, the centred reading's; a token nearer an edge cannot.

    Parameters
    ----------
    stride : int
        Between 1 and ``length`` (the windows must cover every token).
    length : int
        Window length, 2 to the shortest filing's length (chapter 6's windows hold 32 tokens).

    Returns
    -------
    numpy.ndarray of int, shape (n_tokens,)
        The slot of each token of chapter 6's stream, in ``[0, length)``.

    Raises
    ------
    TypeError
        If ``stride`` or ``length`` is not an integer.
    ValueError
        If ``stride`` is not in ``[1, length]`` or ``length`` is below 2 or above the shortest filing.

    Examples
    --------
    >>> slots = window_positions(1)
    >>> from mlm_book.experiments.ch06_finance import results
    >>> bool(np.array_equal(window_positions(16), results().nearest_positions))     # chapter 6's reading
    True
    >>> window_positions(33)
    Traceback (most recent call last):
    ...
    ValueError: stride must be in [1, length] = [1, 32] (windows must cover every token), got 33
    """
    length = check_positive_int(length, "length", minimum=2)
    stride = check_positive_int(stride, "stride")
    if stride > length:
        raise ValueError(f"stride must be in [1, length] = [1, {length}] (windows must cover every token), "
                         f"got {stride}")
    return _window_positions(stride, length)


@functools.cache
def _window_positions(stride: int, length: int) -> np.ndarray:
    from mlm_book.experiments.ch06_finance import results
    from mlm_book.finance.windows import fixed_windows, nearest_centre

    document = results().corpus.document
    starts = fixed_windows(document, length=length, stride=stride)
    _, positions = nearest_centre(document, starts, length=length)
    positions.flags.writeable = False
    return positions


@dataclass(frozen=True, eq=False)
class StrideLeak:
    r"""The layer-0 *kestrel* probe under the nearest-centre reading at several strides.

    Attributes
    ----------
    seeds : tuple of int
        The filing encoder's training seeds, the book's first (``S``).
    strides : tuple of int
        ``K`` strides.
    nearest : numpy.ndarray, shape (S, K)
        Five-fold accuracy of the layer-0 probe at each stride.
    centred : numpy.ndarray, shape (S,)
        The same probe on the centred reading (every mention at slot 16: one vector).
    majority : float
        Share of the majority type among *kestrel*'s typed mentions.
    at_centre : numpy.ndarray, shape (K,)
        Share of those mentions read at the centre slot, per stride.
    product_slots, company_slots : numpy.ndarray of int, shape (K, 2)
        Lowest and highest slot of the product and of the company mentions, per stride.

    Raises
    ------
    TypeError, ValueError
        If ``seeds`` or ``strides`` is not a tuple of integers, an array is not of the shapes above, an
        accuracy or share not in [0, 1], or a slot range not ordered.

    Examples
    --------
    >>> s = StrideLeak(seeds=(1, 2), strides=(1, 16), nearest=np.array([[0.9, 0.8], [0.9, 0.7]]),
    ...                centred=np.array([0.34, 0.34]), majority=0.53, at_centre=np.array([0.6, 0.1]),
    ...                product_slots=np.array([[28, 30], [28, 30]]), company_slots=np.array([[0, 23], [0, 23]]))
    >>> s.column(16).tolist()
    [0.8, 0.7]
    """

    seeds: tuple
    strides: tuple
    nearest: np.ndarray
    centred: np.ndarray
    majority: float
    at_centre: np.ndarray
    product_slots: np.ndarray
    company_slots: np.ndarray

    def __post_init__(self):
        for name in ("seeds", "strides"):
            value = getattr(self, name)
            if not isinstance(value, tuple) or not value or not all(isinstance(v, int) for v in value):
                raise TypeError(f"{name} must be a non-empty tuple of integers, got {value!r:.60}")
        shape = (len(self.seeds), len(self.strides))
        if _shares(self.nearest, "nearest", 2).shape != shape:
            raise ValueError(f"nearest must have shape {shape} (seeds by strides), got {np.shape(self.nearest)}")
        if _shares(self.centred, "centred", 1).shape != shape[:1]:
            raise ValueError(f"centred must have one accuracy per seed, got shape {np.shape(self.centred)}")
        if _shares(self.at_centre, "at_centre", 1).shape != shape[1:]:
            raise ValueError(f"at_centre must have one share per stride, got shape {np.shape(self.at_centre)}")
        check_probability(self.majority, "majority")
        for name in ("product_slots", "company_slots"):
            slots = as_int_array(getattr(self, name), name, ndim=2)
            if slots.shape != (shape[1], 2) or np.any(slots[:, 0] > slots[:, 1]) or slots.min() < 0:
                raise ValueError(f"{name} must hold an ordered (lowest, highest) slot pair per stride")
        _freeze(self, ("nearest", "centred", "at_centre"))

    def column(self, stride: int) -> np.ndarray:
        """``(S,)`` the accuracies at ``stride``, one per seed."""
        if stride not in self.strides:
            raise ValueError(f"stride must be one of {self.strides}, got {stride!r}")
        return self.nearest[:, self.strides.index(stride)]


def stride_leak(seeds: tuple | None = None, strides: tuple = STRIDES) -> StrideLeak:
    r"""Chapter 6's layer-0 *kestrel* probe (S6-11) with windows every ``stride`` tokens, at each seed.

    The vectors are $E[\textit{kestrel}] + P_{\text{slot}}$ with the slot of
    [`window_positions`][mlm_book.experiments.ch10_probes.window_positions], exactly as chapter 6 builds
    them, and the folds are chapter 6's (stratified, five, seed 0): at stride 16 the accuracy is chapter
    6's. Kept on disk; memoised.

    Parameters
    ----------
    seeds : tuple of int, optional
        Among [`mlm_book.artefacts.filing_encoder.SEEDS`][mlm_book.artefacts.filing_encoder.SEEDS] (all five
        by default).
    strides : tuple of int
        Distinct strides in ``[1, 32]``.

    Returns
    -------
    StrideLeak

    Raises
    ------
    TypeError
        If ``seeds`` or ``strides`` is not a tuple of integers.
    ValueError
        If a seed is not one the book trains, or a stride repeats or lies outside ``[1, 32]``.

    Examples
    --------
    >>> s = stride_leak()  # doctest: +BOOK
    >>> s.nearest.shape, s.strides
    ((5, 6), (1, 2, 4, 8, 16, 32))
    >>> stride_leak(strides=(0,))
    Traceback (most recent call last):
    ...
    ValueError: strides must hold distinct strides in [1, 32], got (0,)
    """
    seeds = _filing_seeds() if seeds is None else seeds
    seeds = _check_seeds(seeds, _filing_seeds(), "filing encoder")
    if not isinstance(strides, tuple) or not strides or not all(
            isinstance(s, int) and not isinstance(s, bool) for s in strides):
        raise TypeError(f"strides must be a non-empty tuple of integers, got {strides!r:.60}")
    if len(set(strides)) != len(strides) or min(strides) < 1 or max(strides) > 32:
        raise ValueError(f"strides must hold distinct strides in [1, 32], got {strides}")
    return _stride_leak(seeds, strides)


def _kestrel() -> tuple[np.ndarray, np.ndarray]:
    """Stream indices of *kestrel*'s typed mentions and their labels (1 = product), as chapter 6's."""
    from mlm_book.experiments.ch06_finance import results
    from mlm_book.finance.world import ENTITY_PRODUCT

    corpus = results().corpus
    index = np.flatnonzero((corpus.tokens == "kestrel") & (corpus.entity > 0))
    return index, (corpus.entity[index] == ENTITY_PRODUCT).astype(np.int64)


def _stride_seed(seed: int, strides: tuple) -> dict:
    from mlm_book.artefacts import filing_encoder as fe
    from mlm_book.experiments.ch06_finance import results
    from mlm_book.finance.windows import centre_position

    ids = results().ids
    index, labels = _kestrel()
    splits = fe.kfold(labels)
    params = fe.trained_encoder(fe.seed_setup(seed)).params
    E, P = np.asarray(params["E"], dtype=np.float64), np.asarray(params["P"], dtype=np.float64)
    nearest = [probe.cross_validate(E[ids[index]] + P[window_positions(stride)[index]], labels, splits).accuracy
               for stride in strides]
    centred = E[ids[index]] + P[centre_position(fe.SETUP.length)]
    return {"nearest": nearest, "centred": probe.cross_validate(centred, labels, splits).accuracy}


@functools.cache
def _stride_leak(seeds: tuple, strides: tuple) -> StrideLeak:
    from mlm_book import cache
    from mlm_book.artefacts import filing_encoder as fe
    from mlm_book.finance import windows as windows_module

    def build():
        fe.ensure_trained([fe.seed_setup(seed) for seed in seeds])
        with runtime.blas_threads(1):
            rows = [_stride_seed(seed, strides) for seed in seeds]
        return {"nearest": np.array([row["nearest"] for row in rows]),
                "centred": np.array([row["centred"] for row in rows])}

    key = {"setups": [asdict(fe.seed_setup(seed)) for seed in seeds],
           "train": [fe.training_config(fe.seed_setup(seed)).to_dict() for seed in seeds],
           "source": fe.source_key(fe.SETUP), "strides": list(strides), "strength": probe.PROBE_STRENGTH}
    code = [_stride_seed, _kestrel, _window_positions, fe.kfold, probe, windows_module, fe.training_code()]
    arrays, _ = cache.cached("ch10-stride-leak", key, code, build)
    index, labels = _kestrel()
    counts = np.bincount(labels, minlength=2)
    centre = 32 // 2
    slots = [window_positions(stride)[index] for stride in strides]
    return StrideLeak(seeds=seeds, strides=strides, nearest=arrays["nearest"], centred=arrays["centred"],
                      majority=float(counts.max() / counts.sum()),
                      at_centre=np.array([float(np.mean(s == centre)) for s in slots]),
                      product_slots=np.array([[s[labels == 1].min(), s[labels == 1].max()] for s in slots]),
                      company_slots=np.array([[s[labels == 0].min(), s[labels == 0].max()] for s in slots]))


# --------------------------------------------------------------------------------------
# 3. The causal test
# --------------------------------------------------------------------------------------


def _check_encoder(params, config):
    from mlm_book.nn import encoder as enc

    check_instance(config, "config", enc.EncoderConfig)
    return enc.check_params(params, config)


def stream_at(params, config, shown, layer: int) -> np.ndarray:
    r"""The residual stream after ``layer`` blocks, flat: ``(B*n, d)`` in the parameters' dtype.

    Layer 0 is the input $E[x] + P$; layer $\ell$ the stream after block $\ell$ (before the final
    LayerNorm), as [`mlm_book.nn.encoder.hidden_states`][mlm_book.nn.encoder.hidden_states] but
    without the cast to float64 and in the flat layout [`resume`][mlm_book.experiments.ch10_probes.resume] reads.

    Parameters
    ----------
    params : mapping
        An encoder's parameters.
    config : mlm_book.nn.encoder.EncoderConfig
    shown : array_like of int, shape (B, n)
        Input ids.
    layer : int
        In ``[0, config.n_blocks]``.

    Returns
    -------
    numpy.ndarray, shape (B*n, d)

    Raises
    ------
    TypeError
        If ``config`` is not an ``EncoderConfig``, ``params`` does not match it, ``shown`` does not hold
        integers or ``layer`` is not an integer.
    ValueError
        If ``layer`` is outside ``[0, config.n_blocks]`` or ``shown`` is not a 2-D array of input ids.

    Examples
    --------
    >>> from mlm_book.nn.encoder import EncoderConfig, init_params, hidden_states
    >>> cfg = EncoderConfig(vocab_size=5, length=4, d_model=8, n_blocks=2, n_heads=2)
    >>> p = init_params(cfg, np.random.default_rng(0), dtype=np.float64)
    >>> x = [[0, 5, 2, 1]]
    >>> bool(np.array_equal(stream_at(p, cfg, x, 1), hidden_states(p, cfg, x)[1].reshape(4, 8)))
    True
    """
    from mlm_book.nn import encoder as enc
    from mlm_book.nn import layers

    params = _check_encoder(params, config)
    shown = enc._check_shown(shown, config)
    layer = check_positive_int(layer, "layer", minimum=0)
    if layer > config.n_blocks:
        raise ValueError(f"layer must be in [0, {config.n_blocks}] (the encoder's blocks), got {layer}")
    x, _ = layers.embedding_forward(shown, params["E"], params["P"])
    key_bias = enc._key_bias(config, shown, x.dtype)
    for block in range(layer):
        x, _ = layers.block_forward(x, params, f"blocks.{block}.", config.n_heads, shown.shape, config.ln_eps,
                                    None, key_bias)
    return x


def resume(params, config, shown, stream, *, start: int = 1, rows=None) -> np.ndarray:
    r"""The rest of the network from the stream after ``start`` blocks: blocks ``start`` .. and the tied head.

    With the stream of [`stream_at`][mlm_book.experiments.ch10_probes.stream_at] unmodified this is
    [`mlm_book.nn.encoder.logits`][mlm_book.nn.encoder.logits], operation for operation; with a modified
    stream it is the encoder's answer to an intervention at that layer.

    Parameters
    ----------
    params : mapping
        An encoder's parameters.
    config : mlm_book.nn.encoder.EncoderConfig
    shown : array_like of int, shape (B, n)
        The input ids the stream was computed from (for the [PAD] key mask of an encoder that has one).
    stream : numpy.ndarray, shape (B*n, d)
        The residual stream after ``start`` blocks, possibly modified.
    start : int
        Blocks already applied, in ``[0, config.n_blocks]``.
    rows : array_like of int, optional
        Flat positions ``b * n + i`` whose logits are wanted (attention still reads every position).

    Returns
    -------
    numpy.ndarray, shape (B*n, V) or (len(rows), V)

    Raises
    ------
    TypeError
        If ``config`` is not an ``EncoderConfig``, ``params`` does not match it, or an array is of the
        wrong kind.
    ValueError
        If ``start`` is outside ``[0, config.n_blocks]``, ``stream`` is not ``(B*n, d)`` and finite, or a
        row is outside ``[0, B*n)``.

    Examples
    --------
    >>> from mlm_book.nn.encoder import EncoderConfig, init_params, logits
    >>> cfg = EncoderConfig(vocab_size=5, length=4, d_model=8, n_blocks=2, n_heads=2)
    >>> p = init_params(cfg, np.random.default_rng(0), dtype=np.float64)
    >>> x = np.array([[0, 5, 2, 1], [3, 3, 5, 4]])
    >>> z = resume(p, cfg, x, stream_at(p, cfg, x, 1))
    >>> float(np.abs(z - logits(p, cfg, x).reshape(8, 5)).max())
    0.0
    >>> bool(np.allclose(resume(p, cfg, x, stream_at(p, cfg, x, 1), rows=[1, 6]), z[[1, 6]], atol=1e-12))
    True
    """
    from mlm_book.nn import encoder as enc

    params = _check_encoder(params, config)
    shown = enc._check_shown(shown, config)
    start = check_positive_int(start, "start", minimum=0)
    if start > config.n_blocks:
        raise ValueError(f"start must be in [0, {config.n_blocks}] (the encoder's blocks), got {start}")
    total = shown.size
    x = as_float_array(stream, "stream", ndim=2)
    if x.shape != (total, config.d_model):
        raise ValueError(f"stream must have shape (B*n, d) = ({total}, {config.d_model}) for shown of shape "
                         f"{shown.shape}, got {x.shape}")
    if rows is not None:
        rows = as_int_array(rows, "rows", ndim=1)
        if rows.size == 0 or rows.min() < 0 or rows.max() >= total:
            raise ValueError(f"rows must hold flat positions in [0, {total})")
    return _resume(params, config, shown, x, start, rows)


def _resume(params, config, shown: np.ndarray, x: np.ndarray, start: int, rows) -> np.ndarray:
    """`resume` without argument checks (the causal test calls it thousands of rows at a time)."""
    from mlm_book.nn import encoder as enc
    from mlm_book.nn import layers

    key_bias = enc._key_bias(config, shown, x.dtype)
    for block in range(start, config.n_blocks):
        last = block == config.n_blocks - 1
        x, _ = layers.block_forward(x, params, f"blocks.{block}.", config.n_heads, shown.shape, config.ln_eps,
                                    rows if last else None, key_bias)
    if rows is not None and start == config.n_blocks:
        x = x[rows]
    out, _ = layers.head_forward(x, params["ln_f.g"], params["ln_f.b"], params["E"][:config.vocab_size],
                                 params["b_out"], config.ln_eps)
    return out


def sense_direction(model: probe.ProbeModel) -> tuple[np.ndarray, float]:
    r"""The unit normal of a two-class probe's boundary in the raw space, and the training mean's coordinate on it.

    The probe reads $W^\top (x - \mu)/\sigma + b$ on standardised features, i.e. $u^\top (x - \mu) + b$
    with $u = W/\sigma$ in the space of $x$ (zero on features constant in training). Returned:
    $\hat u = u / \lVert u\rVert$ and $c = \hat u^\top \mu$, so that the probe's logit depends on $x$
    only through $\hat u^\top x - c$.

    Parameters
    ----------
    model : mlm_book.probe.ProbeModel
        A fitted two-class probe with a non-zero weight vector.

    Returns
    -------
    direction : numpy.ndarray, shape (d,)
    centre : float

    Raises
    ------
    TypeError
        If ``model`` is not a ``ProbeModel``.
    ValueError
        If it has more than two classes or its weights are all zero (an intercept-only probe).

    Examples
    --------
    The class depends on the first feature only, so the normal is the first axis and the training mean
    sits at 1 on it:

    >>> x = np.array([[0.0, 5.0], [0.0, 1.0], [2.0, 5.0], [2.0, 1.0]]); y = np.array([0, 0, 1, 1])
    >>> u, c = sense_direction(probe.fit_probe(x, y))
    >>> np.round(u, 6).tolist(), round(c, 6)
    ([1.0, 0.0], 1.0)
    """
    check_instance(model, "model", probe.ProbeModel)
    if model.classes.size != 2:
        raise ValueError(f"model must be a two-class probe, got {model.classes.size} classes")
    u = np.where(model.standardizer.active, model.weights[:, 0] / model.standardizer.scale, 0.0)
    norm = float(np.linalg.norm(u))
    if norm == 0.0:
        raise ValueError("model must have a non-zero weight vector (it is intercept-only)")
    u = u / norm
    return u, float(u @ model.standardizer.mean)


def ablate(stream, rows, direction, centre: float, along=None) -> np.ndarray:
    r"""Set the stream's coordinate along ``direction`` to ``centre`` at ``rows``; or displace by it along ``along``.

    At each row $x \mapsto x - (\hat u^\top x - c)\,\hat s$ with $\hat s = \hat u$ by default (the
    coordinate along $\hat u$ becomes $c$: mean ablation of one direction). With another unit vector
    ``along`` each row moves by exactly the same amount, in that direction instead (the random control).
    Other rows are unchanged; a new array is returned.

    Parameters
    ----------
    stream : numpy.ndarray, shape (N, d)
    rows : array_like of int or bool, or slice
        Row indices, a boolean mask of length ``N``, or a slice (``slice(None)``: every row).
    direction : array_like, shape (d,)
        A unit vector $\hat u$.
    centre : float
        The coordinate $c$ given to the rows.
    along : array_like, shape (d,), optional
        A unit vector $\hat s$ to move along instead.

    Returns
    -------
    numpy.ndarray, shape (N, d)

    Raises
    ------
    TypeError
        If an argument is of the wrong kind.
    ValueError
        If the shapes disagree, ``direction`` or ``along`` is not of unit norm (to 1e-9), or a row is
        out of range.

    Examples
    --------
    >>> x = np.array([[1.0, 2.0], [3.0, 4.0]])
    >>> ablate(x, [1], [1.0, 0.0], 0.5).tolist()
    [[1.0, 2.0], [0.5, 4.0]]
    >>> ablate(x, [1], [1.0, 0.0], 0.5, along=[0.0, 1.0]).tolist()      # moved by 2.5, along the other axis
    [[1.0, 2.0], [3.0, 1.5]]
    """
    x = as_float_array(stream, "stream", ndim=2)
    d = x.shape[1]
    vectors = []
    for name, value in (("direction", direction), ("along", direction if along is None else along)):
        v = as_float_array(value, name, ndim=1)
        if v.shape != (d,):
            raise ValueError(f"{name} must have the stream's width {d}, got shape {v.shape}")
        if abs(float(np.linalg.norm(v)) - 1.0) > 1e-9:
            raise ValueError(f"{name} must be a unit vector, got norm {float(np.linalg.norm(v)):.6g}")
        vectors.append(v)
    u, s = vectors
    centre = check_real(centre, "centre")
    if isinstance(rows, slice):
        rows = np.arange(x.shape[0])[rows]
    try:
        index = np.asarray(rows)
    except (TypeError, ValueError) as error:
        raise TypeError(f"rows must be row indices, a boolean mask or a slice, got a ragged "
                        f"{type(rows).__name__}") from error
    if index.dtype == bool:
        if index.shape != (x.shape[0],):
            raise ValueError(f"rows as a mask must have one entry per row of stream ({x.shape[0]})")
        index = np.flatnonzero(index)
    index = as_int_array(index, "rows", ndim=1)
    if index.size and (index.min() < 0 or index.max() >= x.shape[0]):
        raise ValueError(f"rows must hold row indices of stream, in [0, {x.shape[0]})")
    out = x.copy()
    out[index] -= np.outer(x[index] @ u - centre, s)
    return out


def neighbour_positions(tokens, word: int) -> tuple[np.ndarray, np.ndarray]:
    r"""Positions next to an occurrence of ``word`` that do not hold ``word`` themselves, in reading order.

    Position $j$ of sequence $b$ is returned once when ``tokens[b, j - 1] == word`` or
    ``tokens[b, j + 1] == word``, and ``tokens[b, j] != word``.

    Parameters
    ----------
    tokens : array_like of int, shape (B, n)
    word : int
        A token id.

    Returns
    -------
    sequence, position : numpy.ndarray of int, each (m,)

    Raises
    ------
    TypeError
        If ``tokens`` or ``word`` does not hold integers.
    ValueError
        If ``tokens`` is not 2-D or holds negative ids.

    Examples
    --------
    >>> b, j = neighbour_positions([[7, 24, 3, 24, 24, 1], [24, 0, 0, 0, 0, 0]], 24)
    >>> list(zip(b.tolist(), j.tolist()))
    [(0, 0), (0, 2), (0, 5), (1, 1)]
    """
    x = as_int_array(tokens, "tokens", ndim=2)
    if x.size and x.min() < 0:
        raise ValueError("tokens must hold non-negative ids")
    if isinstance(word, bool) or not isinstance(word, (int, np.integer)):
        raise TypeError(f"word must be an integer token id, got {type(word).__name__}")
    is_word = x == word
    near = np.zeros_like(is_word)
    near[:, 1:] |= is_word[:, :-1]
    near[:, :-1] |= is_word[:, 1:]
    return np.nonzero(near & ~is_word)


@dataclass(frozen=True, eq=False)
class CausalTest:
    r"""The sense ablation against equal-norm random displacements, per HMM encoder seed.

    Attributes
    ----------
    seeds : tuple of int
        ``S`` training seeds, the book's first.
    n_positions, n_sequences : int
        Measured positions (each a sequence with one ``[MASK]``) and the test sequences they come from.
    resume_gap : numpy.ndarray, shape (S,)
        Largest |resumed logit − encoder logit| with nothing removed (float64), on the first
        [`RESUME_CHECK`][mlm_book.experiments.ch10_probes.RESUME_CHECK] measured copies.
    kl_sense : numpy.ndarray, shape (S,)
        Mean $\operatorname{KL}(q \,\|\, q_{\text{ablated}})$ at the measured positions (nats).
    kl_random : numpy.ndarray, shape (S, D)
        The same for each random direction.
    ce_sense, ce_sense_se : numpy.ndarray, shape (S,)
        Change of the mean cross-entropy against the exact posterior (nats), and its standard error
        over sequences.
    ce_random : numpy.ndarray, shape (S, D)
        The same change for each random direction.
    kl_exact : numpy.ndarray, shape (S,)
        Mean $\operatorname{KL}(p \,\|\, q)$ of the unablated encoder from the exact posterior there, for scale.
    displacement : numpy.ndarray, shape (S,)
        Mean norm by which the ablation (and each control) moves an occurrence of $w$.
    probe1 : numpy.ndarray, shape (S,)
        The layer-1 sense probe's test accuracy (the probe whose direction is removed).
    probe2, probe2_ablated, probe2_random : numpy.ndarray, shape (S,)
        Chapter 5's layer-2 sense probe on the test occurrences of $w$: clean, with the sense direction
        removed at layer 1, and with the random displacements (mean over the draws).
    probe1_retrained : numpy.ndarray, shape (S,)
        A layer-1 sense probe fitted and scored on the ablated vectors (diagnostic): near ``probe1`` means
        the sense is still linearly readable with the direction removed.
    kl_whole, ce_whole : numpy.ndarray, shape (S,)
        Mean KL from the unablated predictions, and change of cross-entropy, with *every* coordinate of
        $w$'s layer-1 vector set to the training occurrences' mean (diagnostic: how much the predictions
        next to $w$ depend on $w$'s layer-1 vector at all).

    Raises
    ------
    TypeError, ValueError
        If ``seeds`` is not a tuple of integers, a count not positive, an array not of the shapes above
        or not finite, a divergence or norm negative, or an accuracy outside [0, 1].

    Examples
    --------
    >>> t = CausalTest(seeds=(1, 2), n_positions=10, n_sequences=5, resume_gap=np.zeros(2),
    ...                kl_sense=np.array([0.05, 0.04]), kl_random=np.full((2, 3), 0.01),
    ...                ce_sense=np.array([0.03, 0.02]), ce_sense_se=np.array([0.005, 0.004]),
    ...                ce_random=np.zeros((2, 3)), kl_exact=np.full(2, 0.03), displacement=np.ones(2),
    ...                probe1=np.full(2, 0.96), probe2=np.full(2, 0.96), probe2_ablated=np.full(2, 0.6),
    ...                probe2_random=np.full(2, 0.95), probe1_retrained=np.full(2, 0.95), kl_whole=np.full(2, 0.1),
    ...                ce_whole=np.full(2, 0.05))
    >>> t.holds.tolist()
    [True, True]
    """

    seeds: tuple
    n_positions: int
    n_sequences: int
    resume_gap: np.ndarray
    kl_sense: np.ndarray
    kl_random: np.ndarray
    ce_sense: np.ndarray
    ce_sense_se: np.ndarray
    ce_random: np.ndarray
    kl_exact: np.ndarray
    displacement: np.ndarray
    probe1: np.ndarray
    probe2: np.ndarray
    probe2_ablated: np.ndarray
    probe2_random: np.ndarray
    probe1_retrained: np.ndarray
    kl_whole: np.ndarray
    ce_whole: np.ndarray

    _PER_SEED = ("resume_gap", "kl_sense", "ce_sense", "ce_sense_se", "kl_exact", "displacement", "probe1",
                 "probe2", "probe2_ablated", "probe2_random", "probe1_retrained", "kl_whole", "ce_whole")

    def __post_init__(self):
        if not isinstance(self.seeds, tuple) or not self.seeds or not all(isinstance(s, int) for s in self.seeds):
            raise TypeError(f"seeds must be a non-empty tuple of integers, got {self.seeds!r:.60}")
        check_positive_int(self.n_positions, "n_positions")
        check_positive_int(self.n_sequences, "n_sequences")
        S = len(self.seeds)
        for name in self._PER_SEED:
            value = as_float_array(getattr(self, name), name, ndim=1)
            if value.shape != (S,):
                raise ValueError(f"{name} must have one value per seed ({S}), got shape {value.shape}")
        for name in ("kl_random", "ce_random"):
            value = as_float_array(getattr(self, name), name, ndim=2)
            if value.shape[0] != S or value.shape[1] < 1:
                raise ValueError(f"{name} must have shape ({S}, draws), got {value.shape}")
        if np.shape(self.kl_random) != np.shape(self.ce_random):
            raise ValueError("kl_random and ce_random must have the same shape (seeds, draws)")
        for name in ("resume_gap", "kl_sense", "kl_random", "ce_sense_se", "kl_exact", "displacement", "kl_whole"):
            if np.min(getattr(self, name)) < 0:
                raise ValueError(f"{name} must be non-negative")
        for name in ("probe1", "probe2", "probe2_ablated", "probe2_random", "probe1_retrained"):
            _shares(getattr(self, name), name, 1)
        _freeze(self, (*self._PER_SEED, "kl_random", "ce_random"))

    @property
    def holds(self) -> np.ndarray:
        """``(S,)`` bool: the rule of [`CLAIMS`][mlm_book.experiments.ch10_probes.CLAIMS] at each seed."""
        return (self.kl_sense > self.kl_random.max(axis=1)) & (self.ce_sense > CAUSAL_SE * self.ce_sense_se)


def _cluster_se(values: np.ndarray, groups: np.ndarray) -> float:
    """Standard error of the mean of ``values`` with ``groups`` (sequences) as the independent units."""
    mean = values.mean()
    _, inverse = np.unique(groups, return_inverse=True)
    sums = np.bincount(inverse, weights=values)
    counts = np.bincount(inverse)
    k = sums.size
    return float(np.sqrt(((sums - mean * counts) ** 2).sum() * k / (k - 1)) / values.size)


def _causal_seed(seed: int) -> dict:
    """Every number of the causal test on the HMM encoder trained with ``seed``."""
    from mlm_book.channel import exact_posterior
    from mlm_book.experiments import hmm_encoder
    from mlm_book.hmm_splits import hmm_split
    from mlm_book.hmm import default_hmm
    from mlm_book.nn import encoder as enc
    from mlm_book.nn import layers
    from mlm_book.scoring import cross_entropy, kl_divergence

    hmm = default_hmm()
    setup = hmm_encoder.seed_setup(seed)
    result = hmm_encoder.trained_encoder(setup)
    config, params = result.encoder, _float64(result.params)
    train, test = hmm_split("train"), hmm_split("test")
    w, n = hmm.shared_token, test.tokens.shape[1]

    # the probes: chapter 5's, on the float64 streams of the clean splits
    def occurrences(split):
        streams = _split_streams(params, config, split.tokens)
        mask = (split.tokens == w).ravel()
        senses = (split.states.ravel()[mask] == hmm.sense_states[1]).astype(np.int64)
        return streams, mask, senses

    train_streams, train_mask, train_senses = occurrences(train)
    test_streams, test_mask, test_senses = occurrences(test)
    layer1 = probe.fit_probe(train_streams[1][train_mask], train_senses)
    layer2 = probe.fit_probe(train_streams[2][train_mask], train_senses)
    u, centre = sense_direction(layer1)
    rng = np.random.default_rng([ABLATION_SEED, seed])
    randoms = rng.standard_normal((ABLATION_DRAWS, config.d_model))
    randoms /= np.linalg.norm(randoms, axis=1, keepdims=True)

    def layer2_accuracy(stream):
        # block 2 only, at the occurrences of w: the probe reads the stream before the final LayerNorm
        out, _ = layers.block_forward(stream, params, f"blocks.{ABLATION_LAYER}.", config.n_heads,
                                      test.tokens.shape, config.ln_eps, np.flatnonzero(test_mask))
        return float(np.mean(layer2.predict(out) == test_senses))

    clean1 = test_streams[1]
    probe2_ablated = layer2_accuracy(ablate(clean1, test_mask, u, centre))
    # diagnostic: a layer-1 probe retrained on the ablated vectors (is the sense gone, or only that direction?)
    retrained = probe.fit_and_score(ablate(train_streams[1][train_mask], slice(None), u, centre), train_senses,
                                    ablate(clean1[test_mask], slice(None), u, centre), test_senses).accuracy
    probe2_random = float(np.mean([layer2_accuracy(ablate(clean1, test_mask, u, centre, along=s)) for s in randoms]))

    # the measured positions: a [MASK] at each neighbour of w in its own copy of its clean test sequence
    sequence, position = neighbour_positions(test.tokens, w)
    shown = test.tokens[sequence].copy()
    shown[np.arange(sequence.size), position] = config.mask_id
    rows = np.arange(sequence.size) * n + position
    exact = exact_posterior(hmm, setup.channel(), shown)[np.arange(sequence.size), position]
    stream = stream_at(params, config, shown, ABLATION_LAYER)
    base_logits = _resume(params, config, shown, stream, ABLATION_LAYER, rows)
    # the resumed pass against the encoder's own forward pass, on the first RESUME_CHECK copies (the
    # identity is per copy; the encoder's full pass over all of them would cost more than the test itself)
    check = min(RESUME_CHECK, sequence.size)
    full = enc.logits(params, config, shown[:check])[np.arange(check), position[:check]]
    resume_gap = float(np.abs(base_logits[:check] - full).max())

    def proba(z):
        z = z - z.max(axis=1, keepdims=True)
        q = np.exp(z)
        return q / q.sum(axis=1, keepdims=True)

    q0 = proba(base_logits)
    ce0 = cross_entropy(exact, q0)
    at_w = (shown == w).ravel()

    def effect(modified):
        q = proba(_resume(params, config, shown, modified, ABLATION_LAYER, rows))
        change = cross_entropy(exact, q) - ce0
        return float(kl_divergence(q0, q).mean()), float(change.mean()), _cluster_se(change, sequence)

    kl_sense, ce_sense, ce_se = effect(ablate(stream, at_w, u, centre))
    random_effects = [effect(ablate(stream, at_w, u, centre, along=s)) for s in randoms]
    # diagnostic: every coordinate of w's layer-1 vector set to the training occurrences' mean
    whole = stream.copy()
    whole[at_w] = layer1.standardizer.mean
    kl_whole, ce_whole, _ = effect(whole)
    return {"resume_gap": resume_gap, "kl_sense": kl_sense, "ce_sense": ce_sense, "ce_sense_se": ce_se,
            "kl_random": [e[0] for e in random_effects], "ce_random": [e[1] for e in random_effects],
            "kl_exact": float(kl_divergence(exact, q0).mean()),
            "displacement": float(np.abs(stream[at_w] @ u - centre).mean()),
            "probe1": float(np.mean(layer1.predict(test_streams[1][test_mask]) == test_senses)),
            "probe2": float(np.mean(layer2.predict(test_streams[2][test_mask]) == test_senses)),
            "probe2_ablated": probe2_ablated, "probe2_random": probe2_random, "probe1_retrained": retrained,
            "kl_whole": kl_whole, "ce_whole": ce_whole,
            "n_positions": int(sequence.size), "n_sequences": int(np.unique(sequence).size)}


def causal_test(seeds: tuple | None = None) -> CausalTest:
    r"""The causal test at each seed of the HMM encoder (see the module's description; kept on disk, memoised).

    Parameters
    ----------
    seeds : tuple of int, optional
        Among [`mlm_book.experiments.hmm_encoder.SEEDS`][mlm_book.artefacts.hmm_encoder.SEEDS] (all five by
        default, the book's first).

    Returns
    -------
    CausalTest

    Raises
    ------
    TypeError
        If ``seeds`` is not a tuple of at least two integers.
    ValueError
        If a seed repeats or is not one the book trains.

    Examples
    --------
    >>> t = causal_test()  # doctest: +BOOK
    >>> t.kl_random.shape, bool(t.resume_gap.max() <= 1e-10)
    ((5, 8), True)
    """
    seeds = _hmm_seeds() if seeds is None else seeds
    return _causal_test(_check_seeds(seeds, _hmm_seeds(), "HMM encoder"))


@functools.cache
def _causal_test(seeds: tuple) -> CausalTest:
    from mlm_book import cache, channel, scoring
    from mlm_book.experiments import hmm_encoder

    names = CausalTest._PER_SEED + ("kl_random", "ce_random")

    def build():
        hmm_encoder.ensure_trained([hmm_encoder.seed_setup(seed) for seed in seeds])
        with runtime.blas_threads(1):
            rows = [_causal_seed(seed) for seed in seeds]
        counts = {name: rows[0][name] for name in ("n_positions", "n_sequences")}
        return {name: np.array([row[name] for row in rows]) for name in names}, counts

    constants = {"draws": ABLATION_DRAWS, "ablation_seed": ABLATION_SEED, "layer": ABLATION_LAYER,
                 "resume_check": RESUME_CHECK}
    key, code = _hmm_key_and_code(seeds, constants, [
        _causal_seed, _cluster_se, stream_at, resume, _resume, sense_direction, ablate, neighbour_positions,
        _split_streams, _float64, channel, scoring])
    arrays, meta = cache.cached("ch10-causal-test", key, code, build)
    return CausalTest(seeds=seeds, n_positions=int(meta["n_positions"]), n_sequences=int(meta["n_sequences"]),
                      **{name: arrays[name] for name in names})


# --------------------------------------------------------------------------------------
# Results, tables, figures
# --------------------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class ProbeCaveats:
    """The three experiments of the chapter's section.

    Raises
    ------
    TypeError
        If a field is not of its type.

    Examples
    --------
    >>> r = results()  # doctest: +BOOK
    >>> type(r.controls).__name__, type(r.strides).__name__, type(r.causal).__name__
    ('ControlTasks', 'StrideLeak', 'CausalTest')
    """

    controls: ControlTasks
    strides: StrideLeak
    causal: CausalTest

    def __post_init__(self):
        check_instance(self.controls, "controls", ControlTasks)
        check_instance(self.strides, "strides", StrideLeak)
        check_instance(self.causal, "causal", CausalTest)


@functools.cache
def results() -> ProbeCaveats:
    """The chapter's three experiments at every seed (from the cache; a cold run computes and stores them)."""
    return ProbeCaveats(control_tasks(), stride_leak(), causal_test())


def control_table(controls: ControlTasks | None = None) -> Markdown:
    r"""Per layer: the regime probe, its control, the selectivity, the probe at $w$ only; then the references.

    Each cell: the book seed's value, then mean ± sd over the seeds in brackets.

    Raises
    ------
    TypeError
        If ``controls`` is not a `ControlTasks` (or ``None``, the book's).

    Examples
    --------
    >>> print(control_table().splitlines()[0])  # doctest: +BOOK
    | layer | regime probe (every token) | control (random label per type) | selectivity | regime probe at w |
    """
    c = control_tasks() if controls is None else check_instance(controls, "controls", ControlTasks)
    rows = [(f"layer {layer}", seed_band(c.task[:, layer]), seed_band(c.control_mean[:, layer]),
             seed_band(c.selectivity[:, layer], signed=True), seed_band(c.task_at_w[:, layer])) for layer in range(c.layers)]
    rows.append(("majority share", f"{c.majority:.3f}", "—", "—", "—"))
    rows.append(("exact Bayes accuracy", f"{c.bayes:.3f}", "—", "—", f"{c.bayes_at_w:.3f}"))
    return table(["layer", "regime probe (every token)", "control (random label per type)", "selectivity",
                  "regime probe at w"], rows)


def stride_table(leak: StrideLeak | None = None) -> Markdown:
    r"""Per stride: where *kestrel*'s mentions are read and the layer-0 probe's accuracy; then the references.

    Raises
    ------
    TypeError
        If ``leak`` is not a `StrideLeak` (or ``None``, the book's).

    Examples
    --------
    >>> print(stride_table().splitlines()[0])  # doctest: +BOOK
    | reading | mentions at the centre slot | product slots | company slots | layer-0 probe, five folds |
    """
    s = stride_leak() if leak is None else check_instance(leak, "leak", StrideLeak)
    rows = [(f"nearest centre, stride {stride}", f"{s.at_centre[k]:.2f}",
             f"{s.product_slots[k, 0]}–{s.product_slots[k, 1]}", f"{s.company_slots[k, 0]}–{s.company_slots[k, 1]}",
             seed_band(s.nearest[:, k])) for k, stride in enumerate(s.strides)]
    rows.append(("centred (every mention at slot 16)", "1.00", "16", "16", seed_band(s.centred)))
    rows.append(("majority share", "—", "—", "—", f"{s.majority:.3f}"))
    return table(["reading", "mentions at the centre slot", "product slots", "company slots",
                  "layer-0 probe, five folds"], rows)


def causal_table(test: CausalTest | None = None) -> Markdown:
    r"""Per seed: the sense ablation's and the random displacements' effects on the predictions next to $w$,
    the two diagnostics, and whether the rule holds.

    KL and changes of cross-entropy in nats, at the measured positions; the probes' accuracies on the test
    occurrences of $w$.

    Raises
    ------
    TypeError
        If ``test`` is not a `CausalTest` (or ``None``, the book's).

    Examples
    --------
    >>> print(causal_table().splitlines()[0])  # doctest: +BOOK
    | seed | KL, sense removed | KL, random (largest of 8) | KL, whole vector replaced | ΔCE vs exact, sense removed (± SE) | ΔCE, random (mean) | layer-1 probe: as fitted / retrained after removal | layer-2 probe: clean / after removal | rule holds |
    """
    t = causal_test() if test is None else check_instance(test, "test", CausalTest)
    rows = []
    for i, seed in enumerate(t.seeds):
        rows.append((f"{seed}{' (book)' if i == 0 else ''}", f"{t.kl_sense[i]:.1e}", f"{t.kl_random[i].max():.1e}",
                     f"{t.kl_whole[i]:.1e}", f"{t.ce_sense[i]:+.1e} ± {t.ce_sense_se[i]:.1e}",
                     f"{t.ce_random[i].mean():+.1e}", f"{t.probe1[i]:.3f} / {t.probe1_retrained[i]:.3f}",
                     f"{t.probe2[i]:.3f} / {t.probe2_ablated[i]:.3f}", "yes" if t.holds[i] else "no"))
    return table(["seed", "KL, sense removed", f"KL, random (largest of {t.kl_random.shape[1]})",
                  "KL, whole vector replaced", "ΔCE vs exact, sense removed (± SE)", "ΔCE, random (mean)",
                  "layer-1 probe: as fitted / retrained after removal", "layer-2 probe: clean / after removal",
                  "rule holds"], rows)


def figure_controls(controls: ControlTasks | None = None, leak: StrideLeak | None = None):
    r"""Two panels: (A) the regime probe and its control by layer, with the Bayes ceiling; (B) the layer-0
    *kestrel* probe against the window stride, with the centred reading and the majority share.

    Lines are the book seed; shaded bands mean ± sd over the seeds.

    Returns
    -------
    matplotlib.figure.Figure

    Raises
    ------
    TypeError
        If ``controls`` is not a `ControlTasks` or ``leak`` not a `StrideLeak` (or ``None``, the book's).

    Examples
    --------
    >>> fig = figure_controls()  # doctest: +BOOK
    >>> len(fig.axes), fig.axes[1].get_xscale()
    (2, 'log')
    """
    from mlm_book.figures import PALETTE, WIDE, subplots

    c = control_tasks() if controls is None else check_instance(controls, "controls", ControlTasks)
    s = stride_leak() if leak is None else check_instance(leak, "leak", StrideLeak)
    fig, (left, right) = subplots(1, 2, width=WIDE, height=3.6)
    x = np.arange(c.layers)
    for values, colour, label in ((c.task, PALETTE["blue"], "regime (the task)"),
                                  (c.control_mean, PALETTE["orange"], "random label per type (control)")):
        mean, sd = values.mean(axis=0), values.std(axis=0, ddof=1)
        left.fill_between(x, mean - sd, mean + sd, color=colour, alpha=0.25, lw=0)
        left.plot(x, values[0], color=colour, marker="o", label=label)
    left.axhline(c.bayes, color=PALETTE["green"], ls="--", lw=1.2, label="exact Bayes accuracy of the regime")
    left.axhline(c.majority, color=PALETTE["grey"], ls=":", lw=1.2, label="majority share")
    left.set_xticks(x, [f"layer {layer}" for layer in x])
    left.set_ylabel("test accuracy, every token")
    left.set_title("A. Control task (HMM encoder)")
    left.legend(loc="center right")
    strides = np.array(s.strides)
    mean, sd = s.nearest.mean(axis=0), s.nearest.std(axis=0, ddof=1)
    right.fill_between(strides, mean - sd, mean + sd, color=PALETTE["vermillion"], alpha=0.25, lw=0)
    right.plot(strides, s.nearest[0], color=PALETTE["vermillion"], marker="o", label="nearest-centre reading")
    # the centred reading is one vector for every mention, so it scores the training majority: the two
    # lines may coincide, and the majority's is drawn wide and faint underneath
    right.axhline(s.majority, color=PALETTE["grey"], lw=5, alpha=0.35, label="majority share")
    right.axhline(s.centred[0], color=PALETTE["blue"], ls="--", lw=1.2, label="centred reading")
    right.set_xscale("log", base=2)
    right.set_xticks(list(strides), [str(v) for v in strides])
    right.minorticks_off()
    right.set_ylim(0.0, 1.05)
    right.set_xlabel("window stride (tokens)")
    right.set_ylabel("layer-0 accuracy, kestrel, five folds")
    right.set_title("B. Position leak (filing encoder)")
    right.legend(loc="lower left")
    return fig


def figure_causal(test: CausalTest | None = None):
    r"""Two panels, one column per seed: (A) mean KL of the predictions next to $w$ from the unablated ones,
    (B) the change of cross-entropy against the exact posterior; the sense ablation as a diamond (with
    ± 2 standard errors in B), each random displacement as a small dot, the whole-vector replacement as an
    open square.

    Returns
    -------
    matplotlib.figure.Figure

    Raises
    ------
    TypeError
        If ``test`` is not a `CausalTest` (or ``None``, the book's).

    Examples
    --------
    >>> fig = figure_causal()  # doctest: +BOOK
    >>> len(fig.axes), fig.axes[0].get_yscale()
    (2, 'log')
    """
    from mlm_book.figures import PALETTE, WIDE, subplots

    t = causal_test() if test is None else check_instance(test, "test", CausalTest)
    fig, (left, right) = subplots(1, 2, width=WIDE, height=3.8)
    x = np.arange(len(t.seeds))
    draws = t.kl_random.shape[1]
    jitter = np.linspace(-0.15, 0.15, draws)
    for ax, sense, random, whole in ((left, t.kl_sense, t.kl_random, t.kl_whole),
                                     (right, t.ce_sense, t.ce_random, t.ce_whole)):
        for i in x:
            ax.plot(i + jitter, random[i], ls="none", marker="o", ms=3.5, color=PALETTE["grey"],
                    label="random direction, equal shift" if i == 0 else None)
        ax.plot(x, sense, ls="none", marker="D", ms=7, color=PALETTE["vermillion"],
                label="sense direction removed")
        ax.plot(x + 0.3, whole, ls="none", marker="s", ms=6, mfc="none", color=PALETTE["blue"],
                label="whole vector of w replaced")
        ax.set_xticks(x, [f"{seed}\n(book)" if i == 0 else str(seed) for i, seed in enumerate(t.seeds)])
        ax.set_xlabel("training seed")
    right.errorbar(x, t.ce_sense, yerr=CAUSAL_SE * t.ce_sense_se, ls="none", color=PALETTE["vermillion"], capsize=3)
    right.axhline(0.0, color=PALETTE["black"], lw=0.8)
    right.ticklabel_format(axis="y", style="sci", scilimits=(0, 0))
    left.set_yscale("log")
    left.set_ylabel(r"mean KL($q\,\|\,q_{\mathrm{ablated}}$) (nats)")
    left.set_title("A. How far the predictions move")
    right.set_ylabel("change of cross-entropy vs exact (nats)")
    right.set_title("B. How much worse they get")
    fig.legend(*left.get_legend_handles_labels(), loc="outside lower center", ncols=3)
    return fig


# --------------------------------------------------------------------------------------
# Claims
# --------------------------------------------------------------------------------------


def _selectivity_positive() -> dict:
    c = control_tasks()
    values = [{"layer 1": float(row[1]), "layer 2": float(row[2])} for row in c.selectivity]
    return over_seeds(values, sum(row[1] > 0 and row[2] > 0 for row in c.selectivity), fmt="+.3f", sd_fmt=".3f")


def _selectivity_rise() -> dict:
    c = control_tasks()
    values = [{"layer 0": float(row[0]), "layer 1": float(row[1]), "layer 2": float(row[2])} for row in c.selectivity]
    holding = sum(row[1] >= row[0] + SELECTIVITY_RISE and row[2] >= row[0] + SELECTIVITY_RISE for row in c.selectivity)
    return over_seeds(values, holding, fmt="+.3f", sd_fmt=".3f")


def _leak_vanishes() -> dict:
    s = stride_leak()
    first = s.column(min(s.strides))
    values = [{"stride 1": float(v), "majority": s.majority} for v in first]
    return over_seeds(values, int(np.sum(first <= s.majority + LEAK_MARGIN)))


def _causal() -> dict:
    t = causal_test()
    values = [{"KL sense": float(t.kl_sense[i]), "largest KL random": float(t.kl_random[i].max()),
               "ΔCE sense": float(t.ce_sense[i]), "its SE": float(t.ce_sense_se[i])} for i in range(len(t.seeds))]
    return over_seeds(values, int(t.holds.sum()), fmt=".4f")


PRESTATED = (
    Claim("Q5a", "Control task on the HMM encoder: a probe of the hidden regime of every token (chapter 4's splits) "
          f"minus the same probe on a random binary label per word type (mean of {CONTROL_DRAWS} draws): "
          "selectivity at layers 1 and 2 (5 training seeds)", seed="—",
          rule="selectivity > 0 at layer 1 and at layer 2", compute=_selectivity_positive, accept=lambda v: True,
          fmt="+.3f", expected="not reproduced"),
    Claim("Q5b", "The same selectivity at layers 0, 1 and 2 (5 training seeds)", seed="—",
          rule=f"selectivity at layers 1 and 2 each ≥ layer 0's + {SELECTIVITY_RISE}", compute=_selectivity_rise,
          accept=lambda v: True, fmt="+.3f", expected="reproduced"),
    Claim("Q5c", "Position leak at window stride 1: chapter 6's layer-0 five-fold probe of kestrel's type at the "
          "nearest-centre slot, windows every token (5 training seeds), and the majority share", seed="—",
          rule=f"≤ majority share + {LEAK_MARGIN} (the leak vanishes)", compute=_leak_vanishes,
          accept=lambda v: True, expected="not reproduced"),
)
"""Q5's further rules, each fixed before its numbers and registered with the verdict it got (Q5a–Q5c)."""

CLAIMS = (
    Claim("Q5", "Causal test on the HMM encoder: the layer-1 sense probe's direction removed from the stream at "
          "every w (mean ablation), the network resumed; at the [MASK]ed neighbours of w in the test split, the mean "
          "KL from the unablated predictions against 8 equal-displacement random directions, and the change of "
          "cross-entropy against the exact posterior with its SE over sequences (5 training seeds)", seed="—",
          rule=f"KL(sense) > every random direction's KL, and ΔCE(sense) > {CAUSAL_SE:g} SE",
          compute=_causal, accept=lambda v: True, fmt=".4f", expected="not reproduced"),
    *PRESTATED,
)
"""Open question Q5's claims, every rule fixed before its numbers: the causal test (Q5) and ``PRESTATED``."""
