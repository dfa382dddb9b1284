"""The HMM encoder as an artefact: its setup, the book's seeds and contrast, and its training.

The encoder is a small BERT ([`mlm_book.nn.encoder`][mlm_book.nn.encoder]) trained by
[`mlm_book.nn.train`][mlm_book.nn.train] on fresh sentences of chapter 1's two-regime HMM
([`mlm_book.hmm`][mlm_book.hmm]) corrupted by BERT's channel
([`mlm_book.channel`][mlm_book.channel]). What the chapters measure on it lives in
[`mlm_book.experiments.hmm_encoder`][mlm_book.experiments.hmm_encoder].
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import cache

import numpy as np

from mlm_book import artefacts
from mlm_book import hmm as hmm_module
from mlm_book.channel import Channel
from mlm_book.hmm import default_hmm
from mlm_book.nn import encoder as enc
from mlm_book.nn.loop import TrainConfig
from mlm_book.nn.train import TrainResult, cached_training, is_cached_training
from mlm_book.validation import check_instance, check_positive_int, check_probability, check_sequence

__all__ = ["HMMEncoderSetup", "SETUP", "SEEDS", "CONTRAST", "seed_setup", "book_setups", "sentence_source",
           "trained_encoder", "is_trained", "ensure_trained", "tiny_setup", "SELECTIONS", "REPLACEMENTS",
           "unigram_replacement", "VARIANTS", "COMPARED", "variant_setup", "variant_seeds", "variant_setups",
           "ARTEFACT_KINDS"]

#: The selection rules and replacement laws a setup can train with.
SELECTIONS = ("independent", "fixed")
REPLACEMENTS = ("uniform", "unigram")


@dataclass(frozen=True)
class HMMEncoderSetup:
    """Everything that defines the book's HMM encoder and its evaluation.

    Attributes
    ----------
    encoder : EncoderConfig
        d = 32, 2 pre-LN blocks, 4 heads, MLP width 4d, sequences of length 24. Matrices and
        the position table are initialised with standard deviation 0.02 (BERT's); the token
        table with standard deviation 1, so that the tied head $\\operatorname{LN}(x)E^\\top/\\sqrt d$
        starts with unit-variance logits, the scale its $1/\\sqrt d$ presumes (the Transformer's
        shared-embedding convention: a table of variance $1/d$ read at the input times
        $\\sqrt d$). At 0.02 the token table starts 50 times smaller than the normalised stream it
        is compared with and is still smaller than the position table after training, so
        position alone spreads a token's layer-0 vectors (chapter 4).
    training : TrainConfig
        3000 steps on fresh batches of 160 sequences; learning rate warmed up over 200 steps
        to 1e-2, then a cosine to 2 % of it; Adam's constants 0.9, 0.999, 1e-8. The optimiser
        is AdamW as in BERT: decoupled weight decay of the embedding tables and weight
        matrices, none on biases and LayerNorm gains and offsets. Its strength gives the
        same total decay as BERT's: a decayed parameter shrinks by the factor
        $\\exp(-\\lambda \\sum_t \\eta_t)$ over a run when its gradient is zero, and BERT's
        $\\lambda = 0.01$ with its schedule (peak $10^{-4}$, 1M steps, linear decay) gives
        $\\lambda \\sum_t \\eta_t = 0.5$; this schedule has $\\sum_t \\eta_t \\approx 15.3$, hence
        $\\lambda = 0.033$. (With the 0.02 token table the peak rate had been raised to 1.5e-2
        and the batch from 128 to 160 so that the kept-token shrinkage of S3-28 came out within
        0.05 of the plug-in for every training seed tried; with the unit-scale table it does so
        at 1e-2. A larger peak rate also lets Adam's roughly rate-sized steps grow the position
        table further relative to the token table.) How far chapter 4's pooled layer ordering
        (S5-09, S5-12) depends on the training seed is measured by
        [`mlm_book.experiments.ch04_geometry.seed_robustness`][mlm_book.experiments.ch04_geometry.seed_robustness].
    rho, mask, random : float
        The channel: selection rate and the [MASK]/random shares (the rest is kept).
    selection : {"independent", "fixed"}
        How positions are selected (see [`Channel`][mlm_book.channel.Channel]): the book's
        recipe selects each independently; ``"fixed"`` selects exactly
        [`selection_count`][mlm_book.channel.selection_count] of them (chapter 11).
    replacement : {"uniform", "unigram"}
        The law of a random replacement: uniform over the 25 tokens (the book's recipe, as
        BERT's code), or the language's unigram frequencies (chapter 11), rounded to 10
        decimals so that the key does not depend on the last bits of a linear solve.
    length : int
        Sequence length of training and evaluation.
    eval_sequences : int
        Held-out sequences for [`evaluation`][mlm_book.readings.hmm_encoder.evaluation].
    eval_seed : int
        Seed of the held-out sample and its corruption (distinct from training's).

    Raises
    ------
    TypeError
        If ``encoder`` or ``training`` is not an ``EncoderConfig`` / ``TrainConfig``, or a
        number is of the wrong kind.
    ValueError
        If ``rho`` is not in (0, 1], ``mask`` or ``random`` not in [0, 1] or their sum above 1,
        ``length`` not in [1, ``encoder.length``], ``eval_sequences`` not positive,
        ``eval_seed`` negative, or ``selection`` or ``replacement`` not one of its values.

    Examples
    --------
    >>> SETUP.length, round(SETUP.channel().keep, 12)
    (24, 0.1)
    >>> replace(SETUP, length=25)
    Traceback (most recent call last):
    ...
    ValueError: length must be at most the encoder's position table (24), got 25

    >>> HMMEncoderSetup().encoder.vocab_size
    25
    """

    encoder: enc.EncoderConfig = enc.EncoderConfig(vocab_size=25, length=24, d_model=32, n_blocks=2, n_heads=4,
                                                   token_init_std=1.0)
    training: TrainConfig = TrainConfig(steps=3000, batch_size=160, lr=1e-2, warmup=200, final_lr_fraction=0.02,
                                        weight_decay=0.033, seed=20240601)
    rho: float = 0.15
    mask: float = 0.8
    random: float = 0.1
    length: int = 24
    eval_sequences: int = 400
    eval_seed: int = 7919
    selection: str = "independent"
    replacement: str = "uniform"

    def __post_init__(self):
        check_instance(self.encoder, "encoder", enc.EncoderConfig)
        check_instance(self.training, "training", TrainConfig)
        check_probability(self.rho, "rho")
        if self.rho == 0:
            raise ValueError("rho must be > 0: a channel that selects nothing gives no loss to train on")
        for name in ("mask", "random"):
            check_probability(getattr(self, name), name)
        if self.mask + self.random > 1.0 + 1e-12:
            raise ValueError(f"mask + random must be at most 1, got {self.mask} + {self.random}")
        check_positive_int(self.length, "length")
        if self.length > self.encoder.length:
            raise ValueError(f"length must be at most the encoder's position table ({self.encoder.length}), "
                             f"got {self.length}")
        check_positive_int(self.eval_sequences, "eval_sequences")
        check_positive_int(self.eval_seed, "eval_seed", minimum=0)
        for name, allowed in (("selection", SELECTIONS), ("replacement", REPLACEMENTS)):
            if not isinstance(getattr(self, name), str) or getattr(self, name) not in allowed:
                raise ValueError(f"{name} must be one of {allowed}, got {getattr(self, name)!r}")
        if self.replacement == "unigram" and self.encoder.vocab_size != default_hmm().emission.shape[1]:
            raise ValueError(f"replacement='unigram' needs the HMM's vocabulary ({default_hmm().emission.shape[1]} "
                             f"tokens), got an encoder of vocab_size {self.encoder.vocab_size}")

    def channel(self) -> Channel:
        """The training and evaluation channel."""
        return Channel(self.encoder.vocab_size, rho=self.rho, mask=self.mask, random=self.random,
                       selection=self.selection,
                       replacement=unigram_replacement() if self.replacement == "unigram" else None)

    def rows(self) -> list[tuple[str, str]]:
        """The settings as (name, value) rows for a table in the book."""
        e, t = self.encoder, self.training
        return [("width d", str(e.d_model)), ("blocks", str(e.n_blocks)), ("heads", str(e.n_heads)),
                ("MLP width", str(e.mlp_ratio * e.d_model)), ("vocabulary (+ [MASK])", f"{e.vocab_size} + 1"),
                ("sequence length", str(self.length)), ("Adam steps", str(t.steps)),
                ("batch (sequences)", str(t.batch_size)), ("peak learning rate", f"{t.lr:g}"),
                ("warm-up steps", str(t.warmup)), ("final learning rate", f"{t.lr * t.final_lr_fraction:g}"),
                ("Adam (beta1, beta2, eps)", f"({t.beta1}, {t.beta2}, {t.eps:g})"),
                ("decoupled weight decay (tables, matrices)", f"{t.weight_decay:g}"),
                ("init std: token table / other tables and matrices",
                 f"{e.token_init_std if e.token_init_std is not None else e.init_std:g} / {e.init_std:g}"),
                ("channel (rho, m, r, kappa)", f"({self.rho}, {self.mask}, {self.random}, "
                                               f"{round(1 - self.mask - self.random, 12)})"),
                ("held-out sequences", str(self.eval_sequences))]


def unigram_replacement() -> np.ndarray:
    """The HMM's unigram frequencies, rounded to 10 decimals and renormalised: shape ``(25,)``.

    Examples
    --------
    >>> u = unigram_replacement()
    >>> u.shape, round(float(u.sum()), 12), round(float(u.max()), 3)
    ((25,), 1.0, 0.186)
    """
    hmm = default_hmm()
    frequencies = np.round(hmm.initial @ hmm.emission, 10)   # initial is the stationary law
    return frequencies / frequencies.sum()


SETUP = HMMEncoderSetup()


def _hmm_source_key(hmm, setup: HMMEncoderSetup) -> dict:
    # The HMM's defining parameters, not its stationary distribution: that comes from a
    # least-squares solve whose last bits change between BLAS builds, and a key must not.
    return {"hmm": hmm_module.cache_description(hmm), "length": setup.length}


def seed_setup(seed: int, setup: HMMEncoderSetup = SETUP) -> HMMEncoderSetup:
    """``setup`` with another training seed (initialisation and batch order), nothing else.

    Examples
    --------
    >>> seed_setup(3).training.seed, seed_setup(3).encoder == SETUP.encoder
    (3, True)
    """
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise TypeError(f"seed must be an integer, got {type(seed).__name__}")
    if not isinstance(setup, HMMEncoderSetup):
        raise TypeError(f"setup must be an HMMEncoderSetup, got {type(setup).__name__}")
    return replace(setup, training=replace(setup.training, seed=seed))


SEEDS = (SETUP.training.seed, 1, 2, 3, 4)
"""The training seeds at which the book reports its learned numbers, the book's own first."""

CONTRAST = replace(SETUP, encoder=replace(SETUP.encoder, token_init_std=None),
                   training=replace(SETUP.training, weight_decay=0.0))
"""BERT's literal start for the same encoder (chapter 4's contrast): the token table at
``init_std`` (0.02) like every other table, and plain Adam (no weight decay)."""


def _training_arguments(setup: HMMEncoderSetup):
    hmm = default_hmm()
    length = setup.length

    def source(batch, rng):
        return hmm_module.sample(hmm, batch, length, rng)[1]

    return ("hmm-encoder", setup.encoder, setup.training, source, setup.channel(), _hmm_source_key(hmm, setup))


def sentence_source(setup: HMMEncoderSetup = SETUP):
    """The training sentences of ``setup``: ``(source, source_key)``, the sampler ``source(batch, rng)`` and its key.

    Other objectives trained on the same language (chapter 10's next-token readers) draw
    their batches from it.

    Examples
    --------
    >>> import numpy as np
    >>> source, key = sentence_source()
    >>> source(2, np.random.default_rng(0)).shape, key["length"]
    ((2, 24), 24)
    """
    check_instance(setup, "setup", HMMEncoderSetup)
    arguments = _training_arguments(setup)
    return arguments[3], arguments[5]


@cache
def trained_encoder(setup: HMMEncoderSetup = SETUP) -> TrainResult:
    """The trained HMM encoder (from the cache, or trained now and stored).

    Returns
    -------
    TrainResult
        ``params``, the loss curve ``losses`` (3000 steps) and the configurations.
    """
    return cached_training(*_training_arguments(setup), producers=[artefacts.key_source("hmm-encoder")])


def is_trained(setup: HMMEncoderSetup) -> bool:
    """Whether the store holds the encoder of ``setup`` (a damaged entry counts as absent).

    Examples
    --------
    >>> is_trained(tiny_setup()) in (True, False)
    True
    """
    check_instance(setup, "setup", HMMEncoderSetup)
    name, encoder, training, _, channel, source_key = _training_arguments(setup)
    return is_cached_training(name, encoder, training, channel, source_key,
                              producers=[artefacts.key_source("hmm-encoder")])


def _build(setup: HMMEncoderSetup) -> None:
    trained_encoder(setup)  # in a worker process: it only has to land in the store


def ensure_trained(setups) -> int:
    """Train the setups that are not in the cache yet, in parallel processes; return how many.

    A cold build calls it once with every encoder the book reads, so that the missing ones
    train two at a time on two cores (one BLAS thread each) instead of one after another;
    afterwards [`trained_encoder`][mlm_book.artefacts.hmm_encoder.trained_encoder] only loads.

    Parameters
    ----------
    setups : iterable of HMMEncoderSetup

    Raises
    ------
    TypeError
        If ``setups`` is not a sequence or an element is not an
        [`HMMEncoderSetup`][mlm_book.artefacts.hmm_encoder.HMMEncoderSetup].

    Examples
    --------
    >>> ensure_trained([])          # nothing asked for, nothing trained
    0
    >>> ensure_trained([SETUP.training])
    Traceback (most recent call last):
    ...
    TypeError: setups must hold HMMEncoderSetup items, got TrainConfig
    """
    setups = list(dict.fromkeys(check_sequence(setups, "setups", of=HMMEncoderSetup)))
    runs = artefacts.missing([artefacts.Run("hmm-encoder", setup) for setup in setups])
    artefacts.build(runs)
    return len(runs)


def book_setups() -> tuple[HMMEncoderSetup, ...]:
    """Every HMM encoder the book reads: the book's recipe at each seed, then the contrast at each seed.

    Examples
    --------
    >>> setups = book_setups()
    >>> len(setups), setups[0] == SETUP, setups[len(SEEDS)] == CONTRAST
    (10, True, True)
    """
    return (*(seed_setup(seed) for seed in SEEDS), *(seed_setup(seed, CONTRAST) for seed in SEEDS))


VARIANTS = ("fixed-count", "unigram", "plain-head", "untied", "depth-1", "depth-4", "width-16", "width-64")
"""The recipes chapter 11 sets beside the book's: one choice changed each (see `variant_setup`)."""

#: The variants compared with the book's recipe seed by seed (5 seeds); the others are a sweep (3).
COMPARED = VARIANTS[:4]


def variant_setup(name: str, seed: int = SETUP.training.seed) -> HMMEncoderSetup:
    """The book's recipe with one choice changed, at training ``seed``.

    ``"fixed-count"``: BERT's fixed number of selected positions; ``"unigram"``: replacements
    drawn from the unigram law; ``"plain-head"``: the head $x_L E^\\top/\\sqrt d$ without final
    LayerNorm or bias; ``"untied"``: an output table of its own; ``"depth-1"``, ``"depth-4"``:
    1 or 4 blocks; ``"width-16"``, ``"width-64"``: $d$ = 16 or 64 (4 heads, MLP width $4d$). Every
    other setting (the schedule, the learning rate, the batch, the channel) is the book's.

    Raises
    ------
    ValueError
        If ``name`` is not one of `VARIANTS`.
    TypeError
        If ``seed`` is not an integer.

    Examples
    --------
    >>> variant_setup("width-64").encoder.d_model, variant_setup("fixed-count").channel().selection
    (64, 'fixed')
    >>> variant_setup("untied", 3) == seed_setup(3, variant_setup("untied"))
    True
    """
    if not isinstance(name, str) or name not in VARIANTS:
        raise ValueError(f"name must be one of {VARIANTS}, got {name!r}")
    if name == "fixed-count":
        setup = replace(SETUP, selection="fixed")
    elif name == "unigram":
        setup = replace(SETUP, replacement="unigram")
    elif name == "plain-head":
        setup = replace(SETUP, encoder=replace(SETUP.encoder, head="plain"))
    elif name == "untied":
        setup = replace(SETUP, encoder=replace(SETUP.encoder, tied=False))
    elif name.startswith("depth-"):
        setup = replace(SETUP, encoder=replace(SETUP.encoder, n_blocks=int(name[6:])))
    else:
        setup = replace(SETUP, encoder=replace(SETUP.encoder, d_model=int(name[6:])))
    return seed_setup(seed, setup)


def variant_seeds(name: str) -> tuple[int, ...]:
    """The training seeds of variant ``name``: the book's 5 for a compared variant, its first 3 for a sweep point.

    Examples
    --------
    >>> len(variant_seeds("untied")), variant_seeds("depth-4") == SEEDS[:3]
    (5, True)
    """
    if not isinstance(name, str) or name not in VARIANTS:
        raise ValueError(f"name must be one of {VARIANTS}, got {name!r}")
    return SEEDS if name in COMPARED else SEEDS[:3]


def variant_setups() -> tuple[HMMEncoderSetup, ...]:
    """Every variant encoder chapter 11 reads, variant by variant, seed by seed.

    Examples
    --------
    >>> len(variant_setups())
    32
    """
    return tuple(variant_setup(name, seed) for name in VARIANTS for seed in variant_seeds(name))


def tiny_setup() -> HMMEncoderSetup:
    """The book's recipe shrunk to seconds (d = 8, one block, 3 steps of 4 sentences of 6 tokens): the same code path.

    Examples
    --------
    >>> tiny_setup().training.steps, tiny_setup().length
    (3, 6)
    """
    return replace(SETUP, encoder=replace(SETUP.encoder, length=6, d_model=8, n_blocks=1, n_heads=2),
                   training=replace(SETUP.training, steps=3, batch_size=4, warmup=1), length=6, eval_sequences=4)


# ----------------------------------------------------------------------------- the declaration (not keyed)
#: Seconds per (step x sentence x token) of one run of this kind on one core, with its evaluation, as a build
#: runs it (two workers on the two cores). Measured 2026-12-04: the book's recipe (3000 steps of 160 x 24) took
#: 63 s of wall time beside a next-token run, and the fixed-count variant 61 s alone. The earlier 1.9e-6 (22 s a
#: run) was scaled from a whole build's total, not measured, and put this kind and its variants at a third of
#: what they cost (41 worker-minutes for the 32 variants in the cold build of that day, against 13.6 declared).
#: It scales with d and depth, which the book does not vary among these runs.
_SECONDS_PER_SLOT = 5.5e-6


def _cost(setup: HMMEncoderSetup) -> float:
    t = setup.training
    return _SECONDS_PER_SLOT * t.steps * t.batch_size * setup.length * _size_factor(setup.encoder)


def _size_factor(encoder) -> float:
    # Measured on the cold build of 2026-12-03 against the book's recipe (d = 32, 2 blocks) built beside it:
    # cost about proportional to the blocks, and at width d about 0.45 + 0.55 (d/32)^2 (0.6 at d = 16 and
    # 3.2 at d = 64 measured; NumPy's per-call overhead keeps a narrow encoder from getting cheaper).
    return encoder.n_blocks / 2 * (0.45 + 0.55 * (encoder.d_model / 32) ** 2)


def _describe_variant(setup: HMMEncoderSetup) -> str:
    for name in VARIANTS:
        if replace(variant_setup(name), training=setup.training) == setup:
            return f"{name}, seed {setup.training.seed}"
    return f"seed {setup.training.seed}"


ARTEFACT_KINDS = (artefacts.Kind(
    name="hmm-encoder", chapter=2,
    summary="the HMM encoder (chapters 2-5, 10, 11): the book's recipe and BERT's literal start, 5 seeds each",
    modules=("mlm_book.artefacts.hmm_encoder", "mlm_book.hmm", "mlm_book.channel", "mlm_book.nn.train",
             "mlm_book.nn.loop", "mlm_book.nn.encoder", "mlm_book.nn.layers", "mlm_book.nn.adam",
             "mlm_book.nn.runtime"),
    setups=book_setups, is_built=is_trained, build=_build, cost=_cost,
    describe=lambda setup: f"{'contrast, ' if setup.encoder.token_init_std is None else ''}seed {setup.training.seed}",
    tiny=tiny_setup),
    artefacts.Kind(
        name="hmm-encoder-variants", chapter=11,
        summary="the HMM encoder with one choice changed (chapter 11): selection, replacement, head, tying "
                "(5 seeds each), depth 1 and 4, width 16 and 64 (3 seeds each)",
        modules=("mlm_book.artefacts.hmm_encoder", "mlm_book.hmm", "mlm_book.channel", "mlm_book.nn.train",
                 "mlm_book.nn.loop", "mlm_book.nn.encoder", "mlm_book.nn.layers", "mlm_book.nn.adam",
                 "mlm_book.nn.runtime"),
        setups=variant_setups, is_built=is_trained, build=_build, cost=_cost,
        describe=_describe_variant,
        tiny=lambda: replace(tiny_setup(), selection="fixed", replacement="unigram",
                             encoder=replace(tiny_setup().encoder, head="plain", tied=False))),
)

