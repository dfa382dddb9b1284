r"""Training loop: fresh corrupted batches at every step, Adam(W), a warm-up then cosine schedule.

At each step the loop draws a batch of clean sequences from a *sequence source* (any
callable ``source(batch_size, rng) -> (B, n) int array``), passes it through a
[`mlm_book.channel.Channel`][mlm_book.channel.Channel], and takes one Adam step on the mean cross-entropy of the
selected positions. No batch is ever reused, so the loss curve estimates the population
risk of the current parameters. A batch in which the channel selected nothing (possible in
principle with independent selection) is redrawn.

The learning rate rises linearly over ``warmup`` steps to ``lr`` and then follows a cosine
down to ``lr * final_lr_fraction`` at the last step.

[`cached_training`][mlm_book.nn.train.cached_training] stores the result in [`mlm_book.cache`][mlm_book.cache], keyed by the encoder
and training configurations, the channel, a description of the source, and the source
code of the model and of the loop; a stored entry is validated when loaded (a NaN in a
parameter raises a ``ValueError``).
"""

from __future__ import annotations

import math
import sys
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np

from mlm_book import cache
from mlm_book import progress as progress_module
from mlm_book.channel import Channel, corrupt
from mlm_book.nn import adam as adam_module
from mlm_book.nn import encoder as enc
from mlm_book.nn import layers, runtime
from mlm_book.validation import check_generator, check_positive_int

__all__ = ["TrainConfig", "TrainResult", "decayed_names", "learning_rate", "train", "cached_training",
           "is_cached_training", "channel_description"]


@dataclass(frozen=True)
class TrainConfig:
    """How an encoder is trained.

    Parameters
    ----------
    steps : int
        Adam steps (one fresh batch each).
    batch_size : int
        Sequences per batch.
    lr : float
        Peak learning rate.
    warmup : int
        Steps of linear warm-up from ``lr / warmup`` to ``lr``.
    final_lr_fraction : float
        Learning rate at the last step as a fraction of ``lr`` (cosine decay in between).
    beta1, beta2, eps : float
        Adam's constants ([`mlm_book.nn.adam.AdamConfig`][mlm_book.nn.adam.AdamConfig]).
    weight_decay : float
        Decoupled weight decay (AdamW) of the matrices and tables named by
        [`decayed_names`][mlm_book.nn.train.decayed_names]; 0 is plain Adam.
    seed : int
        Seed of the generator that initialises the parameters and draws every batch.
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
        if self.dtype not in ("float32", "float64"):
            raise ValueError(f"dtype must be 'float32' or 'float64', got {self.dtype!r}")
        self.adam()  # validates beta1, beta2, eps, weight_decay

    def adam(self) -> adam_module.AdamConfig:
        """Adam's constants as an [`AdamConfig`][mlm_book.nn.adam.AdamConfig]."""
        return adam_module.AdamConfig(beta1=self.beta1, beta2=self.beta2, eps=self.eps,
                                      weight_decay=self.weight_decay)

    def to_dict(self) -> dict:
        """The fields as a JSON-serialisable dict."""
        return asdict(self)


def decayed_names(config: enc.EncoderConfig) -> tuple[str, ...]:
    """The parameters that weight decay applies to: the embedding tables and the weight matrices.

    As in BERT: the token table ``E`` (tied to the output layer), the position table ``P``
    and every ``W_*`` matrix are decayed; biases (``b_*``, ``b_out``) and LayerNorm gains and
    offsets (``*.g``, ``*.b``) are not.

    Examples
    --------
    >>> decayed_names(enc.EncoderConfig(vocab_size=5, length=3, d_model=8, n_blocks=1, n_heads=2))
    ('E', 'P', 'blocks.0.attn.W_qkv', 'blocks.0.attn.W_o', 'blocks.0.mlp.W_1', 'blocks.0.mlp.W_2')
    """
    return tuple(name for name in enc.param_names(config)
                 if name in ("E", "P") or name.rsplit(".", 1)[-1].startswith("W_"))


def learning_rate(config: TrainConfig, step: int) -> float:
    r"""Learning rate at ``step`` (0-based): linear warm-up, then cosine to ``lr * final_lr_fraction``.

    Examples
    --------
    >>> cfg = TrainConfig(steps=1000, lr=1e-3, warmup=100, final_lr_fraction=0.0)
    >>> [round(learning_rate(cfg, s), 6) for s in (0, 99, 550, 999)]
    [1e-05, 0.001, 0.0005, 0.0]
    """
    if step < config.warmup:
        return config.lr * (step + 1) / config.warmup
    span = max(config.steps - 1 - config.warmup, 1)
    progress = min((step - config.warmup) / span, 1.0)
    floor = config.final_lr_fraction
    return config.lr * (floor + (1.0 - floor) * 0.5 * (1.0 + math.cos(math.pi * progress)))


@dataclass(frozen=True, eq=False)
class TrainResult:
    """A trained encoder.

    Attributes
    ----------
    encoder : EncoderConfig
        Its shape.
    train : TrainConfig
        How it was trained.
    params : dict of str to ndarray
        The trained parameters.
    losses : ndarray, shape (steps,)
        Training loss (nats per selected position) of each step's fresh batch.
    seconds : float
        Wall time of the training run (as recorded when it was built).
    """

    encoder: enc.EncoderConfig
    train: TrainConfig
    params: dict = field(repr=False)
    losses: np.ndarray = field(repr=False)
    seconds: float = float("nan")


def _pack(params: Mapping[str, np.ndarray], config: enc.EncoderConfig, dtype) -> dict[str, np.ndarray]:
    """Copy ``params`` into one contiguous buffer (views per name) for the fused Adam."""
    names = enc.param_names(config)
    buffer = np.concatenate([np.asarray(params[name], dtype=dtype).reshape(-1) for name in names])
    out, offset = {}, 0
    for name in names:
        size = int(np.prod(params[name].shape))
        out[name] = buffer[offset:offset + size].reshape(params[name].shape)
        offset += size
    return out


def _check_channel(channel, config: enc.EncoderConfig) -> Channel:
    if not isinstance(channel, Channel):
        raise TypeError(f"channel must be a mlm_book.channel.Channel, got {type(channel).__name__}")
    if channel.vocab_size != config.vocab_size:
        raise ValueError(f"channel.vocab_size ({channel.vocab_size}) must equal the encoder's vocab_size "
                         f"({config.vocab_size})")
    return channel


def _corrupt_batch(channel: Channel, clean: np.ndarray, config: enc.EncoderConfig, rng: np.random.Generator):
    """Corrupt ``clean`` through ``channel``, redrawing until a position is selected.

    [PAD] slots (an encoder with ``pad``) pass through untouched and are never selected: the
    channel sees a placeholder token there and its choices at those slots are discarded,
    which leaves every other slot's selection and display distributed as before (the
    channel treats positions independently).
    """
    pad = (clean == config.pad_id) if config.pad else None
    placeholder = clean if pad is None else np.where(pad, 0, clean)
    while True:
        batch = corrupt(channel, placeholder, rng)
        shown, selected = batch.shown, batch.selected
        if pad is not None:
            shown = np.where(pad, config.pad_id, shown)
            selected = selected & ~pad
        if selected.any():
            return shown, selected


def train(encoder_config: enc.EncoderConfig, train_config: TrainConfig, source: Callable, channel: Channel,
          rng: np.random.Generator, *, progress: bool | None = None) -> TrainResult:
    """Train an encoder from scratch on freshly corrupted batches.

    Parameters
    ----------
    encoder_config : EncoderConfig
    train_config : TrainConfig
    source : callable
        ``source(batch_size, rng) -> (B, n)`` clean token ids in ``[0, V)``, ``n`` at most
        ``encoder_config.length``; with ``encoder_config.pad``, also the [PAD] id for slots
        past a document's edge (never selected, masked as keys).
    channel : Channel
        The corruption channel (its ``vocab_size`` must be the encoder's).
    rng : numpy.random.Generator
        Initialises the parameters, then drives the source and the channel.
    progress : bool, optional
        Report a progress line every tenth of the steps ([`mlm_book.progress.report`][mlm_book.progress.report]);
        default: whenever a report would be seen (a terminal, or the docs build's log).

    Returns
    -------
    TrainResult

    Raises
    ------
    FloatingPointError
        If the loss becomes NaN or infinite (the step is named).

    Examples
    --------
    >>> cfg = enc.EncoderConfig(vocab_size=3, length=4, d_model=8, n_blocks=1, n_heads=2)
    >>> source = lambda b, rng: np.tile(np.arange(4) % 3, (b, 1))
    >>> result = train(cfg, TrainConfig(steps=200, batch_size=8, lr=1e-2, warmup=10),
    ...                source, Channel(vocab_size=3, rho=0.5), np.random.default_rng(0), progress=False)
    >>> bool(result.losses[-20:].mean() < 0.5 * result.losses[:20].mean())
    True
    """
    if not isinstance(encoder_config, enc.EncoderConfig):
        raise TypeError(f"encoder_config must be an EncoderConfig, got {type(encoder_config).__name__}")
    if not isinstance(train_config, TrainConfig):
        raise TypeError(f"train_config must be a TrainConfig, got {type(train_config).__name__}")
    if not callable(source):
        raise TypeError(f"source must be callable (batch_size, rng) -> tokens, got {type(source).__name__}")
    channel = _check_channel(channel, encoder_config)
    rng = check_generator(rng)
    if progress is None:
        progress = progress_module.enabled()
    runtime.tune_allocator()
    dtype = np.dtype(train_config.dtype)
    params = enc.init_params(encoder_config, rng, dtype=dtype)
    optimiser = adam_module.Adam(params, train_config.adam(), decayed=decayed_names(encoder_config))
    losses = np.empty(train_config.steps)
    start = time.perf_counter()
    with runtime.blas_threads(train_config.blas_threads):
        for step in range(train_config.steps):
            clean = source(train_config.batch_size, rng)
            if step == 0:
                enc._check_shown(clean, encoder_config, "source(...) tokens")
            shown, selected = _corrupt_batch(channel, clean, encoder_config, rng)
            value, grads = enc._loss_and_grads(params, encoder_config, shown, clean, selected)
            if not math.isfinite(value):
                raise FloatingPointError(f"training loss became {value} at step {step}; lower the learning rate")
            losses[step] = value
            optimiser.step(grads, learning_rate(train_config, step))
            if progress and (step + 1) % max(1, train_config.steps // 10) == 0:
                recent = losses[max(0, step - 49):step + 1].mean()
                progress_module.report(f"training: step {step + 1}/{train_config.steps}  loss {recent:.4f}  "
                                       f"{time.perf_counter() - start:.1f} s")
    return TrainResult(encoder_config, train_config, params, losses, time.perf_counter() - start)


def channel_description(channel: Channel) -> dict:
    """The channel's settings as a JSON-serialisable dict (part of a cache key).

    Examples
    --------
    >>> channel_description(Channel(vocab_size=25))["rho"]
    0.15
    """
    return {"vocab_size": channel.vocab_size, "rho": channel.rho, "mask": channel.mask, "random": channel.random,
            "selection": channel.selection,
            "replacement": None if channel.replacement is None else [float(u) for u in channel.replacement]}


def _training_request(encoder_config, train_config, channel, source_key, producers):
    """The channel, cache config and producing code that key one training run."""
    channel = _check_channel(channel, encoder_config)
    key = {"encoder": encoder_config.to_dict(), "train": train_config.to_dict(),
           "channel": channel_description(channel), "source": dict(source_key)}
    code = [layers, enc, adam_module, runtime, sys.modules[__name__], *producers]
    return channel, key, code


def is_cached_training(name: str, encoder_config: enc.EncoderConfig, train_config: TrainConfig, channel: Channel,
                       source_key: Mapping, *, producers: Iterable = (), directory: Path | str | None = None) -> bool:
    """Whether [`cached_training`][mlm_book.nn.train.cached_training] with these arguments would only load.

    The entry is checked as a load checks it (a damaged entry counts as absent), so a caller
    can decide to train several missing runs in parallel first.
    """
    _, key, code = _training_request(encoder_config, train_config, channel, source_key, producers)
    directory = Path(directory) if directory is not None else cache.cache_dir()
    return cache.load(cache.CacheEntry(name, cache.cache_key(name, key, code), directory)) is not None


def cached_training(name: str, encoder_config: enc.EncoderConfig, train_config: TrainConfig, source: Callable,
                    channel: Channel, source_key: Mapping, *, producers: Iterable = (),
                    directory: Path | str | None = None, progress: bool | None = None) -> TrainResult:
    """[`train`][mlm_book.nn.train.train] through [`mlm_book.cache.cached`][mlm_book.cache.cached], with ``np.random.default_rng(train_config.seed)``.

    Parameters
    ----------
    name : str
        Cache entry name, e.g. ``"hmm-encoder"``.
    encoder_config, train_config, source, channel
        As for [`train`][mlm_book.nn.train.train].
    source_key : mapping
        JSON-serialisable description of the source (e.g. the HMM's configuration), part
        of the key.
    producers : iterable
        Extra code whose source enters the key (e.g. the source's module).
    directory : path, optional
        Cache directory (default [`mlm_book.cache.cache_dir`][mlm_book.cache.cache_dir]).
    progress : bool, optional
        As for [`train`][mlm_book.nn.train.train].

    Returns
    -------
    TrainResult

    Raises
    ------
    ValueError
        If the stored parameters do not match ``encoder_config`` or hold NaN/infinite values.
    """
    channel, key, code = _training_request(encoder_config, train_config, channel, source_key, producers)

    def build():
        result = train(encoder_config, train_config, source, channel, np.random.default_rng(train_config.seed),
                       progress=progress)
        arrays = {f"param/{k}": v for k, v in result.params.items()}
        arrays["losses"] = result.losses
        return arrays, {"seconds": result.seconds, "final_loss_last100": float(result.losses[-100:].mean())}

    arrays, metadata = cache.cached(name, key, code, build, directory=directory)
    params = {k[len("param/"):]: v for k, v in arrays.items() if k.startswith("param/")}
    try:
        params = enc.check_params(params, encoder_config, name=f"params loaded from cache entry {name!r}")
    except (TypeError, ValueError) as error:
        raise ValueError(f"{error}; delete the entry under {cache.cache_dir() if directory is None else directory} "
                         f"to retrain") from error
    params = _pack(params, encoder_config, np.dtype(train_config.dtype))
    losses = np.asarray(arrays["losses"], dtype=np.float64)
    return TrainResult(encoder_config, train_config, params, losses, float(metadata.get("seconds", float("nan"))))
