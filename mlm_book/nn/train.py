r"""Training an encoder from scratch: the masked-LM (or next-token) objective on fresh corrupted batches.

At each step [`train`][mlm_book.nn.train.train] draws a batch of clean sequences from a
*sequence source* (any callable ``source(batch_size, rng) -> (B, n) int array``), passes it
through a [`mlm_book.channel.Channel`][mlm_book.channel.Channel], and takes one Adam step on
the mean cross-entropy of the selected positions: an
[`Objective`][mlm_book.nn.loop.Objective] for [`mlm_book.nn.loop.fit`][mlm_book.nn.loop.fit],
the loop every training of the book runs. No batch is ever reused, so the loss curve
estimates the population risk of the current parameters. A batch in which the channel
selected nothing (possible in principle with independent selection) is redrawn.

The same loop trains a left-to-right model when it is given [`NextToken`][mlm_book.nn.train.NextToken] in
place of a channel: the clean sequence is shown and every position but the last is trained
to predict the token after it (chapter 10; with an encoder whose config has ``causal=True``).

The learning rate rises linearly over ``warmup`` steps to ``lr`` and then follows a cosine
down to ``lr * final_lr_fraction`` at the last step
([`mlm_book.nn.loop.learning_rate`][mlm_book.nn.loop.learning_rate]; the
[`TrainConfig`][mlm_book.nn.loop.TrainConfig] a run takes lives there too, and is importable
from here).

[`cached_training`][mlm_book.nn.train.cached_training] stores the result in [`mlm_book.cache`][mlm_book.cache], keyed by the encoder
and training configurations, the channel, a description of the source, and the source
code of the model, of this objective and of the loop; a stored entry is validated when
loaded (a NaN in a parameter raises a ``ValueError``).
"""

from __future__ import annotations

import json
import math
import os
import sys
import types
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from mlm_book import cache
from mlm_book.channel import Channel, corrupt
from mlm_book.nn import adam as adam_module
from mlm_book.nn import encoder as enc
from mlm_book.nn import layers, loop, runtime
from mlm_book.nn.loop import TrainConfig
from mlm_book.validation import (
    check_bool,
    check_generator,
    check_instance,
    check_positive_int,
    check_real,
    check_sequence,
)

__all__ = ["TrainResult", "NextToken", "train", "cached_training", "is_cached_training", "channel_description"]


@dataclass(frozen=True)
class NextToken:
    r"""Next-token prediction, the objective of a left-to-right language model, in place of a channel.

    The clean sequence is shown unchanged and position $i$ is trained to predict $x_{i+1}$:
    the mean cross-entropy over positions $0 \ldots n-2$ (and, with [PAD], only where both
    the position and the next are real tokens). Without the causal mask the next token is
    in plain view one position to the right, which is why such a model must be causal.

    Parameters
    ----------
    vocab_size : int
        $V$, the encoder's (checked like a channel's).

    Raises
    ------
    TypeError, ValueError
        If ``vocab_size`` is not a positive integer.

    Examples
    --------
    >>> NextToken(vocab_size=25).batch(np.array([[3, 1, 4, 1]]))[1:]
    (array([[1, 4, 1, 0]]), array([[ True,  True,  True, False]]))
    """

    vocab_size: int

    def __post_init__(self):
        check_positive_int(self.vocab_size, "vocab_size")

    def batch(self, clean: np.ndarray, pad_id: int | None = None):
        """``(shown, targets, selected)`` for clean ``(B, n)`` ids: the input, the next tokens, the trained positions."""
        targets = np.zeros_like(clean)
        targets[:, :-1] = clean[:, 1:]
        selected = np.zeros(clean.shape, dtype=bool)
        selected[:, :-1] = True
        if pad_id is not None:
            real = clean != pad_id
            selected[:, :-1] &= real[:, :-1] & real[:, 1:]
            targets[~selected] = 0
        return clean, targets, selected


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
        Wall time of the training run (as recorded when it was built), at least 0.

    Raises
    ------
    TypeError
        If a field has the wrong type (``params`` is checked as by
        [`mlm_book.nn.encoder.check_params`][mlm_book.nn.encoder.check_params]).
    ValueError
        If ``params`` does not match ``encoder`` or is not finite, ``losses`` is not one finite
        value per step, or ``seconds`` is negative or not finite.

    Examples
    --------
    >>> cfg = enc.EncoderConfig(vocab_size=3, length=4, d_model=8, n_blocks=1, n_heads=2)
    >>> params = enc.init_params(cfg, np.random.default_rng(0))
    >>> result = TrainResult(cfg, TrainConfig(steps=2), params, np.array([1.1, 1.0]), 0.5)
    >>> result.losses.shape, result.seconds
    ((2,), 0.5)
    """

    encoder: enc.EncoderConfig
    train: TrainConfig
    params: dict = field(repr=False)
    losses: np.ndarray = field(repr=False)
    seconds: float = 0.0

    def __post_init__(self):
        check_instance(self.encoder, "encoder", enc.EncoderConfig)
        check_instance(self.train, "train", TrainConfig)
        check_instance(self.params, "params", dict)
        enc.check_params(self.params, self.encoder)
        losses = self.losses
        if not isinstance(losses, np.ndarray) or losses.dtype.kind != "f":
            raise TypeError(f"losses must be a float numpy array, got {type(losses).__name__}"
                            + (f" of dtype {losses.dtype}" if isinstance(losses, np.ndarray) else ""))
        if losses.shape != (self.train.steps,):
            raise ValueError(f"losses must have shape ({self.train.steps},) (one loss per step), got {losses.shape}")
        if not np.all(np.isfinite(losses)):
            raise ValueError("losses must be finite (no NaN or infinity)")
        check_real(self.seconds, "seconds", low=0.0)


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


def _check_channel(channel, config: enc.EncoderConfig) -> Channel | NextToken:
    if not isinstance(channel, (Channel, NextToken)):
        raise TypeError(f"channel must be a mlm_book.channel.Channel or a NextToken objective, "
                        f"got {type(channel).__name__}")
    if channel.vocab_size != config.vocab_size:
        raise ValueError(f"channel.vocab_size ({channel.vocab_size}) must equal the encoder's vocab_size "
                         f"({config.vocab_size})")
    return channel


def _check_configs(encoder_config, train_config) -> None:
    check_instance(encoder_config, "encoder_config", enc.EncoderConfig)
    check_instance(train_config, "train_config", TrainConfig)


def _check_source(source) -> None:
    if not callable(source):
        raise TypeError(f"source must be callable (batch_size, rng) -> tokens, got {type(source).__name__}")


def _check_progress(progress) -> None:
    if progress is not None:
        check_bool(progress, "progress")


def _check_clean(clean, config: enc.EncoderConfig) -> np.ndarray:
    """A batch from the source as int64 ids: 2-D, within the position table, real tokens or [PAD].

    A few passes over a (B, n) int array: nothing next to the training step that reads it.
    """
    name = "source(...) tokens"
    clean = enc.check_shown(clean, config, name)
    if (clean == config.mask_id).any():
        raise ValueError(f"{name} must be clean token ids in [0, {config.vocab_size}) (or [PAD]), "
                         f"got the [MASK] id {config.mask_id}")
    return clean


def corrupt_batch(channel: Channel, clean: np.ndarray, config: enc.EncoderConfig, rng: np.random.Generator):
    """Corrupt ``clean`` through ``channel``, redrawing until a position is selected: the batch of one training step.

    [PAD] slots (an encoder with ``pad``) pass through untouched and are never selected: the
    channel sees a placeholder token there and its choices at those slots are discarded,
    which leaves every other slot's selection and display distributed as before (the
    channel treats positions independently).

    Unchecked (public, not in ``__all__``): [`train`][mlm_book.nn.train.train] checks the
    channel against the encoder and each batch from its source first; others that corrupt
    batches as training does (a held-out evaluation, a benchmark) call it on checked inputs.

    Parameters
    ----------
    channel : Channel
        Its ``vocab_size`` is the encoder's.
    clean : ndarray of int, shape (B, n)
        Clean token ids in ``[0, V)``, or [PAD] with a padded encoder.
    config : EncoderConfig
    rng : numpy.random.Generator

    Returns
    -------
    shown : ndarray of int, shape (B, n)
        The corrupted input ([PAD] where ``clean`` has it).
    selected : ndarray of bool, shape (B, n)
        The positions the loss reads (at least one, never [PAD]).

    Examples
    --------
    >>> cfg = enc.EncoderConfig(vocab_size=5, length=4, d_model=8, n_blocks=1, n_heads=2, pad=True)
    >>> clean = np.array([[0, 1, 2, cfg.pad_id]])
    >>> shown, selected = corrupt_batch(Channel(vocab_size=5, rho=0.5), clean, cfg, np.random.default_rng(0))
    >>> int(shown[0, 3]) == cfg.pad_id, bool(selected.any() and not selected[0, 3])
    (True, True)
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


def _training_batch(channel, clean: np.ndarray, config: enc.EncoderConfig, rng: np.random.Generator):
    """``(shown, targets, selected)`` of one step: corrupted by a channel, or shifted for next-token prediction."""
    if isinstance(channel, NextToken):
        shown, targets, selected = channel.batch(clean, config.pad_id)
        if not selected.any():
            raise ValueError("source(...) tokens must hold two consecutive real tokens in some sequence "
                             "(next-token prediction has no target otherwise)")
        return shown, targets, selected
    shown, selected = corrupt_batch(channel, clean, config, rng)
    return shown, clean, selected


def train(encoder_config: enc.EncoderConfig, train_config: TrainConfig, source: Callable,
          channel: Channel | NextToken, rng: np.random.Generator, *, progress: bool | None = None) -> TrainResult:
    """Train an encoder from scratch on freshly corrupted batches.

    Parameters
    ----------
    encoder_config : EncoderConfig
    train_config : TrainConfig
    source : callable
        ``source(batch_size, rng) -> (B, n)`` clean token ids in ``[0, V)``, ``n`` at most
        ``encoder_config.length``; with ``encoder_config.pad``, also the [PAD] id for slots
        past a document's edge (never selected, masked as keys).
    channel : Channel or NextToken
        The corruption channel, or next-token prediction (its ``vocab_size`` must be the
        encoder's).
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
    TypeError
        If an argument has the wrong type (``source`` not callable, ``progress`` neither a bool
        nor None), or a batch from ``source`` does not hold integers.
    ValueError
        If ``channel.vocab_size`` differs from the encoder's, or a batch from ``source`` is not
        2-D, is longer than ``encoder_config.length`` or holds an id outside ``[0, V)`` (or
        [PAD]).
    FloatingPointError
        If the loss or a gradient becomes NaN or infinite (the step is named).

    Examples
    --------
    A source that repeats one sequence (the row is bound when the source is made):

    >>> cfg = enc.EncoderConfig(vocab_size=3, length=4, d_model=8, n_blocks=1, n_heads=2)
    >>> source = lambda b, rng, row=np.arange(4) % 3: row[None].repeat(b, axis=0)
    >>> result = train(cfg, TrainConfig(steps=200, batch_size=8, lr=1e-2, warmup=10),
    ...                source, Channel(vocab_size=3, rho=0.5), np.random.default_rng(0), progress=False)
    >>> bool(result.losses[-20:].mean() < 0.5 * result.losses[:20].mean())
    True
    """
    _check_configs(encoder_config, train_config)
    _check_source(source)
    channel = _check_channel(channel, encoder_config)
    rng = check_generator(rng)
    _check_progress(progress)
    params = enc.init_params(encoder_config, rng, dtype=np.dtype(train_config.dtype))

    def draw(rng, step):
        clean = _check_clean(source(train_config.batch_size, rng), encoder_config)
        return _training_batch(channel, clean, encoder_config, rng)

    def loss_and_grads(params, batch):
        return enc.loss_and_grads_unchecked(params, encoder_config, *batch)

    objective = loop.Objective(params, draw, loss_and_grads, decayed=enc.decayed_names(encoder_config))
    fitted = loop.fit(objective, train_config, rng, progress=progress)
    return TrainResult(encoder_config, train_config, params, fitted.loss, fitted.seconds)


def channel_description(channel: Channel | NextToken) -> dict:
    """The channel's settings (or the next-token objective) as a JSON-serialisable dict (part of a cache key).

    Raises
    ------
    TypeError
        If ``channel`` is not a [`Channel`][mlm_book.channel.Channel] or a [`NextToken`][mlm_book.nn.train.NextToken].

    Examples
    --------
    >>> channel_description(Channel(vocab_size=25))["rho"]
    0.15
    >>> channel_description(NextToken(vocab_size=25))
    {'objective': 'next-token', 'vocab_size': 25}
    """
    if isinstance(channel, NextToken):
        return {"objective": "next-token", "vocab_size": channel.vocab_size}
    check_instance(channel, "channel", Channel)
    return {"vocab_size": channel.vocab_size, "rho": channel.rho, "mask": channel.mask, "random": channel.random,
            "selection": channel.selection,
            "replacement": None if channel.replacement is None else [float(u) for u in channel.replacement]}


def _training_request(name, encoder_config, train_config, channel, source_key, producers, directory):
    """The channel, cache config, producing code and directory of one training run, arguments checked.

    A producer's source is read, and found missing, only when the key is computed (still before
    any training); plain data among the producers is refused here.
    """
    check_instance(name, "name", str)
    if not name or any(character in name for character in "/\\ "):
        raise ValueError(f"name must be a non-empty string without slashes or spaces, got {name!r}")
    _check_configs(encoder_config, train_config)
    channel = _check_channel(channel, encoder_config)
    check_instance(source_key, "source_key", Mapping)
    try:
        json.dumps(dict(source_key), sort_keys=True, allow_nan=False)
    except (TypeError, ValueError) as error:
        raise TypeError(f"source_key must be a JSON-serialisable mapping of finite values: {error}") from None
    producers = check_sequence(producers, "producers")
    for producer in producers:
        if not (isinstance(producer, (str, types.ModuleType)) or callable(producer)):
            raise TypeError(f"producers must hold functions, classes, modules or strings, "
                            f"got {type(producer).__name__}")
    if directory is None:
        directory = cache.cache_dir()
    elif not isinstance(directory, (str, os.PathLike)):
        raise TypeError(f"directory must be a path (str or os.PathLike) or None, got {type(directory).__name__}")
    elif not os.fspath(directory):
        raise ValueError("directory must be a non-empty path (None means the default cache directory)")
    key = {"encoder": encoder_config.to_dict(), "train": train_config.to_dict(),
           "channel": channel_description(channel), "source": dict(source_key)}
    code = [layers, enc, adam_module, runtime, loop, sys.modules[__name__], *producers]
    return channel, key, code, Path(directory)


def is_cached_training(name: str, encoder_config: enc.EncoderConfig, train_config: TrainConfig,
                       channel: Channel | NextToken, source_key: Mapping, *, producers: Iterable = (),
                       directory: Path | str | None = None) -> bool:
    """Whether [`cached_training`][mlm_book.nn.train.cached_training] with these arguments would only load.

    The entry is checked as a load checks it (a damaged entry counts as absent), so a caller
    can decide to train several missing runs in parallel first.

    Parameters
    ----------
    name, encoder_config, train_config, channel, source_key, producers, directory
        As for [`cached_training`][mlm_book.nn.train.cached_training].

    Returns
    -------
    bool

    Raises
    ------
    TypeError
        If an argument has the wrong type (a config, the channel, ``source_key`` not a
        JSON-serialisable mapping, ``producers`` not a sequence of code, ``directory`` not a path).
    ValueError
        If ``name`` is empty or holds a slash or space, ``directory`` is empty, or
        ``channel.vocab_size`` differs from the encoder's.

    Examples
    --------
    A toy run asked of an empty, throw-away cache directory (nothing is trained):

    >>> import tempfile
    >>> cfg = enc.EncoderConfig(vocab_size=3, length=4, d_model=8, n_blocks=1, n_heads=2)
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     is_cached_training("toy", cfg, TrainConfig(steps=3, batch_size=2, warmup=1), Channel(vocab_size=3),
    ...                        {"source": "uniform"}, directory=tmp)
    False
    """
    _, key, code, directory = _training_request(name, encoder_config, train_config, channel, source_key, producers,
                                                directory)
    return cache.load(cache.CacheEntry(name, cache.cache_key(name, key, code), directory)) is not None


def cached_training(name: str, encoder_config: enc.EncoderConfig, train_config: TrainConfig, source: Callable,
                    channel: Channel | NextToken, source_key: Mapping, *, producers: Iterable = (),
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
    TypeError
        If an argument has the wrong type (as for [`train`][mlm_book.nn.train.train] and
        [`is_cached_training`][mlm_book.nn.train.is_cached_training]); checked before anything is loaded or trained.
    ValueError
        If ``name`` or ``directory`` is malformed, ``channel.vocab_size`` differs from the
        encoder's, or the stored entry (parameters, losses, wall time) does not match
        ``encoder_config`` and ``train_config`` or holds NaN/infinite values.

    Examples
    --------
    A toy run (three steps) trained into a throw-away cache directory, which then holds its
    arrays and manifest:

    >>> import tempfile
    >>> cfg = enc.EncoderConfig(vocab_size=3, length=4, d_model=8, n_blocks=1, n_heads=2)
    >>> source = lambda b, rng: rng.integers(0, 3, size=(b, 4))
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     result = cached_training("toy", cfg, TrainConfig(steps=3, batch_size=2, warmup=1), source,
    ...                              Channel(vocab_size=3), {"source": "uniform"}, directory=tmp, progress=False)
    ...     stored = sorted(path.suffix for path in Path(tmp).glob("toy-*"))
    >>> result.losses.shape, stored
    ((3,), ['.json', '.npz'])
    """
    channel, key, code, directory = _training_request(name, encoder_config, train_config, channel, source_key,
                                                      producers, directory)
    _check_source(source)
    _check_progress(progress)

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
        params = _pack(params, encoder_config, np.dtype(train_config.dtype))
        losses = np.asarray(arrays.get("losses"), dtype=np.float64)
        # a damaged entry's losses or wall time are refused by TrainResult's checks
        return TrainResult(encoder_config, train_config, params, losses, float(metadata.get("seconds", math.nan)))
    except (TypeError, ValueError) as error:
        raise ValueError(f"{error}; delete the entry under {directory} to retrain") from error
