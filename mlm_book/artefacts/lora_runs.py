r"""Fine-tuning a few parameters: the filing encoder adapted by LoRA, in full, or not at all, on chapter 7's task.

**The task** is chapter 7's ([`mlm_book.artefacts.prompting`][mlm_book.artefacts.prompting]): is a lexicon
sentence's evaluation positive or negative? Each run trains on ``k`` = `K` sentences of the encoder's training
filings, ``k / 2`` per class, drawn as chapter 7 draws them (the same rows for the same encoder seed and draw),
and is scored on every task sentence of the 60 held-out filings. A softmax head reads the mean of the
final-LayerNorm vectors of the sentence's tokens, as in chapter 7.

**The methods**, each run on the same rows, from the same head initialisation and on the same batches
([`mlm_book.nn.lora.fine_tune_lora`][mlm_book.nn.lora.fine_tune_lora]):

* ``full``: every array the head reads trains ([`mlm_book.nn.encoder_finetune`][mlm_book.nn.encoder_finetune]);
* ``lora-<r>``: the encoder is frozen; rank-``r`` updates $sAB$ of every block's query-key-value and output
  projections train with the head ($\alpha$ = `ALPHA`, $s = \alpha / r$; Hu et al. set $\alpha$ to the first
  rank they tried and did not tune it, and so does this recipe);
* ``frozen``: the head alone trains, by the same loop;
* ``probe``: chapter 5's ridge-logistic probe ([`mlm_book.probe.fit_probe`][mlm_book.probe.fit_probe], Newton's
  method to convergence) on the frozen encoder's pooled vectors: a frozen encoder whose head is fitted exactly,
  so that a shortfall of ``frozen`` is not an unfinished optimisation.

**The recipe** ([`LoraSetup`][mlm_book.artefacts.lora_runs.LoraSetup]) was fixed from the training loss of one
pilot run per method and rate, before any test accuracy was computed: the book's encoder, 128 sentences of a draw
no book run uses (draw 99), batch 16, AdamW with decay 0.01, a tenth of the steps of warm-up and a cosine to zero.
Chapter 7's 100 steps left LoRA's training loss near 0.6; at 400 steps every adapted method's training loss had
flattened below 0.01 at some rate of the grid {1e-3, 3e-3, 1e-2, 3e-2} (full fine-tuning by step 120, rank 8 by
step 200, rank 1 by step 280), so every method runs 400 steps. Each method's peak rate is the smallest of the grid
whose mean training loss over the pilot's last tenth came within 0.01 nats of the grid's lowest: full
fine-tuning 1e-3 (chapter 7's rate; 0.0007 against 0.0000), rank 8 3e-3 (0.0008 against 0.0001), rank 1 1e-2
(0.0022; 3e-3 left 0.048), the frozen head 3e-2 (0.358, still falling slowly: a head on frozen vectors cannot fit
these sentences, hence the converged probe beside it).
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass

import numpy as np

from mlm_book import artefacts, cache, probe
from mlm_book.artefacts import filing_encoder as fe
from mlm_book.artefacts import prompting
from mlm_book.nn import encoder_finetune as eft
from mlm_book.nn import lora, runtime
from mlm_book.validation import check_instance, check_positive_float, check_positive_int

__all__ = [
    "ALPHA",
    "ARTEFACT_KINDS",
    "DRAWS",
    "RANKS",
    "RATES",
    "STEPS",
    "K",
    "LoraSetup",
    "book_setups",
    "is_built",
    "lora_runs",
    "methods",
    "parameter_counts",
    "run_settings",
    "tiny_setup",
]

K = 128
"""Labelled training sentences of a run, ``K / 2`` per class (chapter 7's middle size, where full fine-tuning is
still far from its ceiling)."""

DRAWS = 3
"""Draws of the ``K`` sentences per encoder seed (chapter 7's draws 0, 1, 2)."""

RANKS = (1, 8)
"""LoRA's ranks."""

ALPHA = 8.0
r"""LoRA's $\alpha$ (the update is scaled by $\alpha / r$)."""

STEPS = 400
"""Adam steps of every method (see the module's note)."""

RATES = {"frozen": 3e-2, "lora-1": 1e-2, "lora-8": 3e-3, "full": 1e-3}
"""Peak rate of each method (see the module's note)."""


@dataclass(frozen=True)
class LoraSetup:
    """One filing encoder's runs.

    Attributes
    ----------
    encoder : FilingEncoderSetup
    k, draws : int
        Training sentences per run, and draws of them.
    ranks : tuple of int
        LoRA's ranks (positive, increasing).
    alpha : float
    steps, batch_size : int
    rates : tuple of (str, float)
        Peak rate of each method, ``frozen``, ``lora-<r>`` for every rank, ``full``.
    warmup_share, weight_decay : float

    Examples
    --------
    >>> LoraSetup(fe.SETUP).steps
    400
    >>> LoraSetup(fe.SETUP, ranks=(8, 1))
    Traceback (most recent call last):
    ...
    ValueError: ranks must be positive and increasing, got (8, 1)
    """

    encoder: fe.FilingEncoderSetup
    k: int = K
    draws: int = DRAWS
    ranks: tuple = RANKS
    alpha: float = ALPHA
    steps: int = STEPS
    batch_size: int = 16
    rates: tuple = tuple(RATES.items())
    warmup_share: float = 0.1
    weight_decay: float = 0.01

    def __post_init__(self):
        check_instance(self.encoder, "encoder", fe.FilingEncoderSetup)
        for name in ("k", "draws", "steps", "batch_size"):
            check_positive_int(getattr(self, name), name)
        if self.k % 2:
            raise ValueError(f"k must be even (k / 2 sentences per class), got {self.k}")
        if (not isinstance(self.ranks, tuple) or not self.ranks
                or any(isinstance(r, bool) or not isinstance(r, int) or r < 1 for r in self.ranks)
                or list(self.ranks) != sorted(set(self.ranks))):
            raise ValueError(f"ranks must be positive and increasing, got {self.ranks}")
        check_positive_float(self.alpha, "alpha")
        names = ["frozen", *(f"lora-{r}" for r in self.ranks), "full"]
        if not isinstance(self.rates, tuple) or [name for name, _ in self.rates] != names:
            raise ValueError(f"rates must name a rate for each of {names}, in that order")
        for name, rate in self.rates:
            eft.ClassifierConfig(lr=rate, warmup_share=self.warmup_share, weight_decay=self.weight_decay)


def methods(setup: LoraSetup) -> tuple[str, ...]:
    """The methods of ``setup``: ``frozen``, ``lora-<r>`` for each rank, ``full``, then ``probe``.

    Examples
    --------
    >>> methods(book_setups()[0])
    ('frozen', 'lora-1', 'lora-8', 'full', 'probe')
    """
    check_instance(setup, "setup", LoraSetup)
    return (*(name for name, _ in setup.rates), "probe")


def run_settings(setup: LoraSetup, method: str, draw: int) -> eft.ClassifierConfig:
    """The settings of one run: chapter 7's run seed for this ``k`` and draw, the setup's steps and batch, the
    method's rate.

    Examples
    --------
    >>> s = run_settings(book_setups()[0], "lora-8", 0)
    >>> s.steps, s.lr, s.seed == run_settings(book_setups()[0], "full", 0).seed
    (400, 0.003, True)
    """
    check_instance(setup, "setup", LoraSetup)
    rates = dict(setup.rates)
    check_instance(method, "method", str)
    if method not in rates:
        raise ValueError(f"method must be one of {tuple(rates)}, got {method!r}")
    draw = check_positive_int(draw, "draw", minimum=0)
    seed = prompting.recipe(prompting.PromptingSetup(setup.encoder, ks=(setup.k,)), setup.k, draw).seed
    return eft.ClassifierConfig(steps=setup.steps, batch_size=min(setup.batch_size, setup.k), lr=rates[method],
                                warmup_share=setup.warmup_share, weight_decay=setup.weight_decay, seed=seed)


def _lora_config(setup: LoraSetup, method: str) -> lora.LoraConfig:
    return lora.LoraConfig(rank=0) if method == "frozen" else lora.LoraConfig(rank=int(method[5:]), alpha=setup.alpha)


def parameter_counts(setup: LoraSetup) -> dict[str, int]:
    """Trained parameters of each method, exactly (the probe: its weights on the ``d`` features and an intercept).

    Examples
    --------
    >>> parameter_counts(book_setups()[0])
    {'frozen': 130, 'lora-1': 898, 'lora-8': 6274, 'full': 157890, 'probe': 65}
    """
    check_instance(setup, "setup", LoraSetup)
    config = setup.encoder.encoder(fe.filing_world().vocabulary.size)
    counts = {}
    for method in methods(setup):
        if method == "full":
            counts[method] = lora.full_count(config, 2)
        elif method == "probe":
            counts[method] = config.d_model + 1
        else:
            counts[method] = lora.trained_count(config, _lora_config(setup, method), 2)
    return counts


def _measure(setup: LoraSetup) -> tuple[dict, dict]:
    start = time.perf_counter()
    result = fe.trained_encoder(setup.encoder)
    config, params = result.encoder, result.params
    train, test = prompting.task_sentences(setup.encoder)
    train_windows, train_pool = prompting.sentence_windows(train, config)
    test_windows, test_pool = prompting.sentence_windows(test, config)
    train_vectors = eft.pooled_vectors(params, config, train_windows, train_pool)
    test_vectors = eft.pooled_vectors(params, config, test_windows, test_pool)
    names = methods(setup)
    positive = {name: np.empty((setup.draws, test.size)) for name in names}
    losses = {name: np.empty((setup.draws, setup.steps)) for name in names if name != "probe"}
    for r in range(setup.draws):
        rows = prompting.draw_examples(train.labels, setup.k,
                                       np.random.default_rng([prompting.DRAW_SEED, setup.encoder.seed, setup.k, r]))
        x, pool, y = train_windows[rows], train_pool[rows], train.labels[rows]
        for name in names:
            if name == "probe":
                model = probe.fit_probe(train_vectors[rows], y)
                logits = model.logits(test_vectors)
                positive[name][r] = 1.0 / (1.0 + np.exp(logits[:, 0] - logits[:, 1]))
                continue
            settings = run_settings(setup, name, r)
            if name == "full":
                model = eft.fine_tune_classifier(params, config, x, pool, y, settings, n_classes=2)
            else:
                model = lora.fine_tune_lora(params, config, x, pool, y, _lora_config(setup, name), settings,
                                            n_classes=2).classifier
            positive[name][r] = eft.classifier_proba(model, test_windows, test_pool)[:, 1]
            losses[name][r] = model.losses
    arrays = {"test_labels": test.labels, **{f"{name}/positive": v for name, v in positive.items()},
              **{f"{name}/losses": v for name, v in losses.items()}}
    return arrays, {"seconds": time.perf_counter() - start, "n_train": train.size, "n_test": test.size,
                    "counts": parameter_counts(setup)}


def _entry(setup: LoraSetup) -> tuple:
    key = {"setup": asdict(check_instance(setup, "setup", LoraSetup)), "encoder": fe.identity(setup.encoder),
           "source": fe.source_key(setup.encoder), "draw_seed": prompting.DRAW_SEED}
    return f"filing-lora-{setup.encoder.seed}", key, [artefacts.key_source("filing-lora")]


def lora_runs(setup: LoraSetup) -> tuple[dict, dict]:
    """The runs of ``setup`` (from the store; computed on a miss): ``(arrays, metadata)``.

    ``arrays``: ``test_labels`` ``(n_test,)``; ``<method>/positive`` ``(draws, n_test)``, each run's probability of
    class 1 on the held-out sentences; ``<method>/losses`` ``(draws, steps)``, each trained run's training losses
    (not the probe's). ``metadata``: build seconds, the sentence counts, and ``counts``, the trained parameters of
    each method.

    Raises
    ------
    TypeError
        If ``setup`` is not a `LoraSetup`.
    """
    name, key, producers = _entry(setup)

    def build():
        with runtime.blas_threads(1):
            return _measure(setup)

    return cache.cached(name, key, producers, build)


def is_built(setup: LoraSetup) -> bool:
    """Whether the store holds the runs of ``setup`` (a damaged entry counts as absent).

    Examples
    --------
    >>> isinstance(is_built(tiny_setup()), bool)
    True
    """
    return cache.load(cache.entry_for(*_entry(setup))) is not None


# ----------------------------------------------------------------------------- the declaration (not keyed)
def book_setups() -> tuple[LoraSetup, ...]:
    """One setup per filing encoder seed, the book's first."""
    return tuple(LoraSetup(fe.seed_setup(seed)) for seed in fe.SEEDS)


def tiny_setup() -> LoraSetup:
    """The same code in seconds: the tiny filing encoder, four sentences, one draw, three steps a run.

    Examples
    --------
    >>> methods(tiny_setup())
    ('frozen', 'lora-1', 'lora-2', 'full', 'probe')
    """
    return LoraSetup(fe.tiny_setup(), k=4, draws=1, ranks=(1, 2), steps=3,
                     rates=(("frozen", 1e-2), ("lora-1", 1e-2), ("lora-2", 1e-2), ("full", 1e-3)))


#: Seconds of one step of batch 16 on one core, for any method (each runs the whole backward pass): 100 steps took
#: 0.8-0.9 s in the pilot on the 2-core machine with nothing else running; plus the encoder's loading and the
#: pooled vectors' and the evaluations' forward passes.
_SECONDS_PER_STEP = 0.009
_SECONDS_FIXED = 4.0


def _cost(setup: LoraSetup) -> float:
    runs = (len(setup.ranks) + 2) * setup.draws
    return _SECONDS_FIXED + _SECONDS_PER_STEP * setup.steps * runs * min(setup.batch_size, setup.k) / 16


ARTEFACT_KINDS = (artefacts.Kind(
    name="filing-lora", chapter=11,
    summary="the filing encoder fine-tuned on chapter 7's task by LoRA, in full, and frozen, one run per seed",
    modules=("mlm_book.artefacts.lora_runs", "mlm_book.nn.lora", "mlm_book.nn.encoder_finetune",
             "mlm_book.artefacts.prompting", "mlm_book.probe"),
    after=("filing-encoder",), setups=book_setups, is_built=is_built, build=lora_runs, cost=_cost,
    describe=lambda setup: f"seed {setup.encoder.seed}, k = {setup.k}, ranks {setup.ranks}", tiny=tiny_setup),)
