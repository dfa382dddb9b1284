r"""One training loop for every objective: Adam(W) on a fresh batch at every step, a warm-up then cosine schedule.

The book trains four things: an encoder on the masked-LM or next-token objective
([`mlm_book.nn.train`][mlm_book.nn.train]), a pair encoder on masked LM with or without
next-sentence prediction ([`mlm_book.artefacts.pair_encoder`][mlm_book.artefacts.pair_encoder]),
a sequence classifier ([`mlm_book.nn.finetune`][mlm_book.nn.finetune]) and a token tagger
([`mlm_book.nn.token_finetune`][mlm_book.nn.token_finetune]). They differ in what they train,
how they draw a batch and how they score it, and in nothing else: each is an
[`Objective`][mlm_book.nn.loop.Objective], and [`fit`][mlm_book.nn.loop.fit] trains any of them.

At step $t = 0, 1, \dots$ the loop draws a batch (``objective.draw(rng, t)``), computes its
losses and the gradients of the trained parameters (``objective.loss_and_grads``), records
the losses and takes one Adam step ([`mlm_book.nn.adam.Adam`][mlm_book.nn.adam.Adam]) at the
rate of [`learning_rate`][mlm_book.nn.loop.learning_rate]: a linear rise over ``warmup`` steps
to ``lr``, then a cosine down to ``lr * final_lr_fraction`` at the last step. Weight decay is
decoupled (AdamW) and applies to the parameters the objective names. A step whose loss or
gradient is NaN or infinite raises ``FloatingPointError`` before it changes a parameter, so a
diverging run stops with the step named instead of returning non-finite parameters.

Everything random goes through the one generator passed to [`fit`][mlm_book.nn.loop.fit] (the
objective draws its batches from it), and the loop runs with
[`TrainConfig.blas_threads`][mlm_book.nn.loop.TrainConfig] OpenBLAS threads
([`mlm_book.nn.runtime.blas_threads`][mlm_book.nn.runtime.blas_threads]).

Examples
--------
Least squares on a fixed batch, $\frac12 \lVert w - (1, 2) \rVert^2$, with a frozen offset
the loss reads but the loop never changes:

>>> target = np.array([1.0, 2.0])
>>> objective = Objective(
...     params={"w": np.zeros(2), "offset": np.zeros(2)},
...     draw=lambda rng, step: target,
...     loss_and_grads=lambda p, batch: (0.5 * float(np.sum((p["w"] + p["offset"] - batch) ** 2)),
...                                      {"w": p["w"] + p["offset"] - batch}),
...     frozen=("offset",))
>>> result = fit(objective, TrainConfig(steps=300, lr=0.1, warmup=10), np.random.default_rng(0), progress=False)
>>> np.round(objective.params["w"], 2).tolist(), bool(result.loss[-1] < 1e-3 * result.loss[0])
([1.0, 2.0], True)
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, field

import numpy as np

from mlm_book import progress as progress_module
from mlm_book.nn import adam as adam_module
from mlm_book.nn import runtime
from mlm_book.validation import (
    check_bool,
    check_generator,
    check_instance,
    check_positive_int,
    check_real,
    check_sequence,
)

__all__ = ["TrainConfig", "learning_rate", "Objective", "Fit", "fit"]


@dataclass(frozen=True)
class TrainConfig:
    """How a model is trained: steps, batch size, the schedule, Adam's constants, the seed and the numerics.

    Parameters
    ----------
    steps : int
        Adam steps (one fresh batch each).
    batch_size : int
        Examples per batch.
    lr : float
        Peak learning rate.
    warmup : int
        Steps of linear warm-up from ``lr / warmup`` to ``lr``.
    final_lr_fraction : float
        Learning rate at the last step as a fraction of ``lr`` (cosine decay in between).
    beta1, beta2, eps : float
        Adam's constants ([`mlm_book.nn.adam.AdamConfig`][mlm_book.nn.adam.AdamConfig]).
    weight_decay : float
        Decoupled weight decay (AdamW) of the parameters the objective names as decayed
        (for an encoder, [`mlm_book.nn.encoder.decayed_names`][mlm_book.nn.encoder.decayed_names]);
        0 is plain Adam.
    seed : int
        Seed of the generator a training is given (e.g. by
        [`mlm_book.nn.train.cached_training`][mlm_book.nn.train.cached_training]): it initialises
        the parameters and draws every batch.
    dtype : str
        ``"float32"`` (training) or ``"float64"``.
    blas_threads : int
        OpenBLAS threads during training ([`mlm_book.nn.runtime.blas_threads`][mlm_book.nn.runtime.blas_threads]).

    Examples
    --------
    >>> TrainConfig(steps=10).steps
    10
    """

    steps: int = 3000
    batch_size: int = 64
    lr: float = 3e-3
    warmup: int = 100
    final_lr_fraction: float = 0.02
    beta1: float = 0.9
    beta2: float = 0.999
    eps: float = 1e-8
    weight_decay: float = 0.0
    seed: int = 0
    dtype: str = "float32"
    blas_threads: int = 1

    def __post_init__(self):
        check_positive_int(self.steps, "steps")
        check_positive_int(self.batch_size, "batch_size")
        check_positive_int(self.warmup, "warmup")
        check_positive_int(self.blas_threads, "blas_threads")
        if isinstance(self.seed, bool) or not isinstance(self.seed, int) or self.seed < 0:
            raise ValueError(f"seed must be a non-negative integer, got {self.seed!r}")
        if not (isinstance(self.lr, (int, float)) and self.lr > 0 and math.isfinite(self.lr)):
            raise ValueError(f"lr must be a positive number, got {self.lr!r}")
        if not (isinstance(self.final_lr_fraction, (int, float)) and 0.0 <= self.final_lr_fraction <= 1.0):
            raise ValueError(f"final_lr_fraction must be in [0, 1], got {self.final_lr_fraction!r}")
        if not isinstance(self.dtype, str) or self.dtype not in ("float32", "float64"):
            raise ValueError(f"dtype must be 'float32' or 'float64', got {self.dtype!r}")
        self.adam()  # validates beta1, beta2, eps, weight_decay

    def adam(self) -> adam_module.AdamConfig:
        """Adam's constants as an [`AdamConfig`][mlm_book.nn.adam.AdamConfig]."""
        return adam_module.AdamConfig(beta1=self.beta1, beta2=self.beta2, eps=self.eps,
                                      weight_decay=self.weight_decay)

    def to_dict(self) -> dict:
        """The fields as a JSON-serialisable dict."""
        return asdict(self)


def learning_rate(config: TrainConfig, step: int) -> float:
    r"""Learning rate at ``step`` (0-based): linear warm-up, then cosine to ``lr * final_lr_fraction``.

    Raises
    ------
    TypeError
        If ``config`` is not a [`TrainConfig`][mlm_book.nn.loop.TrainConfig] or ``step`` is not an integer.
    ValueError
        If ``step`` is negative (steps past the last keep the final rate).

    Examples
    --------
    >>> cfg = TrainConfig(steps=1000, lr=1e-3, warmup=100, final_lr_fraction=0.0)
    >>> [round(learning_rate(cfg, s), 6) for s in (0, 99, 550, 999)]
    [1e-05, 0.001, 0.0005, 0.0]
    """
    check_instance(config, "config", TrainConfig)
    step = check_positive_int(step, "step", minimum=0)
    if step < config.warmup:
        return config.lr * (step + 1) / config.warmup
    span = max(config.steps - 1 - config.warmup, 1)
    progress = min((step - config.warmup) / span, 1.0)
    floor = config.final_lr_fraction
    return config.lr * (floor + (1.0 - floor) * 0.5 * (1.0 + math.cos(math.pi * progress)))


def _names(value, name: str, params: Mapping) -> tuple[str, ...]:
    names = tuple(check_sequence(value, name, of=str))
    unknown = sorted(set(names) - set(params))
    if unknown:
        raise ValueError(f"{name} must name parameters of params, got unknown names {unknown}")
    return names


@dataclass(frozen=True, eq=False)
class Objective:
    """What a training run optimises: the parameters, how a batch is drawn, and its losses and gradients.

    Parameters
    ----------
    params : dict of str to ndarray
        Every array the loss reads, float and finite; the loop updates the trained ones (all
        but ``frozen``) in place, in this order (parameters that are consecutive views of one
        buffer, as [`mlm_book.nn.encoder.init_params`][mlm_book.nn.encoder.init_params] makes
        them, get the fused Adam update).
    draw : callable
        ``draw(rng, step) -> batch``: the batch of step ``step`` (any object), drawn from the
        generator the loop is given and from nothing else random.
    loss_and_grads : callable
        ``loss_and_grads(params, batch) -> (losses, grads)``: the batch's losses (a float, or
        one float per name of ``loss_names``; the first is the one the gradients are of, or
        the total) and a dict holding the gradient of at least every trained parameter
        (gradients of frozen ones are ignored).
    decayed : sequence of str
        The trained parameters weight decay applies to
        ([`TrainConfig.weight_decay`][mlm_book.nn.loop.TrainConfig]).
    frozen : sequence of str
        Parameters the loss reads and the loop never changes.
    loss_names : sequence of str
        A name for each loss ``loss_and_grads`` returns (the keys of
        [`Fit.losses`][mlm_book.nn.loop.Fit]).
    label : str
        What a progress line calls the run (e.g. ``"training"``, ``"pre-training (nsp)"``).

    Raises
    ------
    TypeError
        If ``params`` is not a dict of float arrays, ``draw`` or ``loss_and_grads`` is not
        callable, or a name list is not a sequence of strings, or ``label`` not a string.
    ValueError
        If a parameter is not finite, a name is unknown or repeated, nothing is left to train,
        a frozen parameter is decayed, or ``loss_names`` or ``label`` is empty.

    Examples
    --------
    >>> objective = Objective({"w": np.zeros(3), "b": np.zeros(1)}, draw=lambda rng, step: None,
    ...                       loss_and_grads=lambda p, batch: (0.0, {"w": 0 * p["w"], "b": 0 * p["b"]}),
    ...                       decayed=["w"])
    >>> objective.trained, objective.loss_names
    (('w', 'b'), ('loss',))
    """

    params: dict = field(repr=False)
    draw: Callable = field(repr=False)
    loss_and_grads: Callable = field(repr=False)
    decayed: tuple = ()
    frozen: tuple = ()
    loss_names: tuple = ("loss",)
    label: str = "training"

    def __post_init__(self):
        if not isinstance(self.params, dict):
            raise TypeError(f"params must be a dict of str to float arrays, got {type(self.params).__name__}")
        for name, array in self.params.items():
            if not isinstance(name, str):
                raise TypeError(f"params must be keyed by str names, got {type(name).__name__}")
            if not isinstance(array, np.ndarray) or array.dtype.kind != "f":
                raise TypeError(f"params[{name!r}] must be a float numpy array, got {type(array).__name__}"
                                + (f" of dtype {array.dtype}" if isinstance(array, np.ndarray) else ""))
            if not np.all(np.isfinite(array)):
                raise ValueError(f"params[{name!r}] must be finite (no NaN or infinity)")
        for name in ("draw", "loss_and_grads"):
            if not callable(getattr(self, name)):
                raise TypeError(f"{name} must be callable, got {type(getattr(self, name)).__name__}")
        frozen = _names(self.frozen, "frozen", self.params)
        decayed = _names(self.decayed, "decayed", self.params)
        if len(set(self.params) - set(frozen)) == 0:
            raise ValueError("frozen must leave at least one parameter of params to train")
        if set(decayed) & set(frozen):
            raise ValueError(f"decayed must name trained parameters only, got frozen ones "
                             f"{sorted(set(decayed) & set(frozen))}")
        loss_names = tuple(check_sequence(self.loss_names, "loss_names", of=str))
        if not loss_names or len(set(loss_names)) != len(loss_names) or not all(loss_names):
            raise ValueError(f"loss_names must be distinct non-empty names, at least one, got {loss_names!r}")
        check_instance(self.label, "label", str)
        if not self.label:
            raise ValueError("label must be a non-empty string")
        object.__setattr__(self, "frozen", frozen)
        object.__setattr__(self, "decayed", decayed)
        object.__setattr__(self, "loss_names", loss_names)

    @property
    def trained(self) -> tuple[str, ...]:
        """The names of the parameters the loop updates, in ``params``' order."""
        frozen = set(self.frozen)
        return tuple(name for name in self.params if name not in frozen)


@dataclass(frozen=True, eq=False)
class Fit:
    """What a run of [`fit`][mlm_book.nn.loop.fit] recorded (the parameters are the objective's, updated in place).

    Parameters
    ----------
    losses : dict of str to ndarray
        One finite float64 array of shape (steps,) per loss name: each step's value on its
        fresh batch.
    seconds : float
        Wall time of the loop, at least 0.

    Raises
    ------
    TypeError
        If ``losses`` is not a dict of str to float arrays.
    ValueError
        If it is empty, an array is not 1-D and finite or the lengths differ, or ``seconds``
        is negative or not finite.

    Examples
    --------
    >>> Fit({"mlm": np.array([2.0, 1.5]), "nsp": np.array([0.7, 0.6])}, 0.25).loss
    array([2. , 1.5])
    """

    losses: dict = field(repr=False)
    seconds: float = 0.0

    def __post_init__(self):
        if not isinstance(self.losses, dict) or not self.losses:
            raise TypeError(f"losses must be a non-empty dict of str to float arrays, got "
                            f"{type(self.losses).__name__}")
        lengths = set()
        for name, values in self.losses.items():
            if not isinstance(name, str):
                raise TypeError(f"losses must be keyed by str names, got {type(name).__name__}")
            if not isinstance(values, np.ndarray) or values.dtype.kind != "f":
                raise TypeError(f"losses[{name!r}] must be a float numpy array, got {type(values).__name__}")
            if values.ndim != 1 or not np.all(np.isfinite(values)):
                raise ValueError(f"losses[{name!r}] must be a finite 1-D array (one value per step), got shape "
                                 f"{values.shape}")
            lengths.add(values.size)
        if len(lengths) != 1:
            raise ValueError(f"losses must hold one value per step for every name, got lengths {sorted(lengths)}")
        check_real(self.seconds, "seconds", low=0.0)

    @property
    def loss(self) -> np.ndarray:
        """The first loss's values, shape (steps,)."""
        return next(iter(self.losses.values()))


def _diverged(objective: Objective, step: int, what: str) -> FloatingPointError:
    return FloatingPointError(f"{objective.label} {what} at step {step}; lower the learning rate")


def fit(objective: Objective, config: TrainConfig, rng: np.random.Generator, *,
        progress: bool | None = None) -> Fit:
    """Train ``objective``'s parameters in place: ``config.steps`` Adam(W) steps on fresh batches.

    Parameters
    ----------
    objective : Objective
    config : TrainConfig
        Steps, schedule ([`learning_rate`][mlm_book.nn.loop.learning_rate]), Adam's constants
        and weight decay, BLAS threads (``batch_size``, ``seed`` and ``dtype`` are the
        objective's to use).
    rng : numpy.random.Generator
        Passed to ``objective.draw`` at every step (its only source of randomness).
    progress : bool, optional
        Report a progress line every tenth of the steps ([`mlm_book.progress.report`][mlm_book.progress.report]:
        the label, the step, the mean of each loss over the last 50 steps, the time); default:
        whenever a report would be seen (a terminal, or the docs build's log).

    Returns
    -------
    Fit
        Every step's losses and the wall time.

    Raises
    ------
    TypeError
        If an argument has the wrong type.
    FloatingPointError
        If a loss or a gradient becomes NaN or infinite (the step is named; the parameters
        are left as they were before that step).

    Examples
    --------
    A loss whose gradient overflows stops the run at once:

    >>> objective = Objective({"w": np.ones(1)}, draw=lambda rng, step: None,
    ...                       loss_and_grads=lambda p, batch: (1.0, {"w": np.array([np.inf])}), label="toy")
    >>> fit(objective, TrainConfig(steps=5), np.random.default_rng(0), progress=False)
    Traceback (most recent call last):
    ...
    FloatingPointError: toy gradient of 'w' became NaN or infinite at step 0; lower the learning rate
    """
    check_instance(objective, "objective", Objective)
    check_instance(config, "config", TrainConfig)
    rng = check_generator(rng)
    if progress is None:
        progress = progress_module.enabled()
    else:
        check_bool(progress, "progress")
    runtime.tune_allocator()
    names = objective.trained
    optimiser = adam_module.Adam({name: objective.params[name] for name in names}, config.adam(),
                                 decayed=objective.decayed)
    losses = np.empty((len(objective.loss_names), config.steps))
    single = len(objective.loss_names) == 1
    every = max(1, config.steps // 10)
    start = time.perf_counter()
    with runtime.blas_threads(config.blas_threads):
        for step in range(config.steps):
            batch = objective.draw(rng, step)
            values, grads = objective.loss_and_grads(objective.params, batch)
            if single and not isinstance(values, (tuple, list)):
                values = (values,)
            if len(values) != len(objective.loss_names):
                raise ValueError(f"objective.loss_and_grads must return {len(objective.loss_names)} losses "
                                 f"({', '.join(objective.loss_names)}), got {len(values)}")
            for name, value in zip(objective.loss_names, values):
                if not math.isfinite(value):
                    raise _diverged(objective, step, f"loss became {value}" if single else
                                    f"{name} loss became {value}")
            losses[:, step] = values
            try:
                optimiser.step({name: grads[name] for name in names}, learning_rate(config, step))
            except ValueError as error:
                bad = [name for name in names if not np.all(np.isfinite(grads[name]))]
                if bad:
                    raise _diverged(objective, step, f"gradient of {bad[0]!r} became NaN or infinite") from error
                raise
            if progress and (step + 1) % every == 0:
                recent = "  ".join(f"{name} {losses[k, max(0, step - 49):step + 1].mean():.4f}"
                                   for k, name in enumerate(objective.loss_names))
                progress_module.report(f"{objective.label}: step {step + 1}/{config.steps}  {recent}  "
                                       f"{time.perf_counter() - start:.1f} s")
    return Fit({name: losses[k] for k, name in enumerate(objective.loss_names)}, time.perf_counter() - start)
