r"""A training run that keeps snapshots of its parameters: [`train`][mlm_book.nn.train.train], with checkpoints.

[`train`][mlm_book.nn.train.train] keeps only the parameters of its last step.
[`train_with_checkpoints`][mlm_book.nn.checkpoints.train_with_checkpoints] runs the same run (the
same initialisation from the same generator, the same batches drawn from the source and
corrupted by the channel in the same order, the same
[`Objective`][mlm_book.nn.loop.Objective] handed to [`mlm_book.nn.loop.fit`][mlm_book.nn.loop.fit])
and copies the parameters at chosen steps on the way. The copy is taken where the loop asks for
the loss and gradients: the parameters the loop shows at its ``k``-th call (``k`` from 0) are
those after ``k`` Adam updates, before the next, so a checkpoint "at step ``k``" is the encoder
after ``k`` updates, and step ``train_config.steps`` is the trained encoder
[`train`][mlm_book.nn.train.train] returns. Copying reads the parameters and changes nothing
the run computes, so the last snapshot *is* that encoder, bit for bit (tested against the
book's stored encoders).

Only a corruption channel is supported (the masked-LM objective), not next-token prediction.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from mlm_book.channel import Channel
from mlm_book.nn import encoder as enc
from mlm_book.nn import loop
from mlm_book.nn.loop import TrainConfig
from mlm_book.nn.train import TrainResult, corrupt_batch
from mlm_book.validation import check_bool, check_generator, check_instance, check_positive_int, check_sequence

__all__ = ["CheckpointedRun", "check_steps", "train_with_checkpoints"]


def check_steps(steps, total: int) -> tuple[int, ...]:
    """``steps`` as a strictly increasing tuple of checkpoint steps in ``[0, total]``.

    Parameters
    ----------
    steps : sequence of int
        Numbers of Adam updates after which to snapshot (0: the initialisation).
    total : int
        The run's number of steps.

    Raises
    ------
    TypeError
        If ``steps`` is not a sequence of integers or ``total`` not an integer.
    ValueError
        If ``steps`` is empty, not strictly increasing, or holds a step outside ``[0, total]``.

    Examples
    --------
    >>> check_steps([1, 10, 100], 100)
    (1, 10, 100)
    >>> check_steps([10, 1], 100)
    Traceback (most recent call last):
    ...
    ValueError: steps must be strictly increasing, got [10, 1]
    """
    total = check_positive_int(total, "total")
    values = check_sequence(steps, "steps")
    out = tuple(check_positive_int(step, "steps", minimum=0) for step in values)
    if not out:
        raise ValueError("steps must hold at least one checkpoint step")
    if any(b <= a for a, b in zip(out, out[1:])):
        raise ValueError(f"steps must be strictly increasing, got {list(out)}")
    if out[-1] > total:
        raise ValueError(f"steps must lie in [0, {total}] (the run's steps), got {out[-1]}")
    return out


@dataclass(frozen=True, eq=False)
class CheckpointedRun:
    """A training run and its parameters at chosen steps.

    Attributes
    ----------
    result : TrainResult
        The run as [`train`][mlm_book.nn.train.train] returns it (final parameters, loss curve).
    steps : tuple of int
        The checkpoint steps (Adam updates done), strictly increasing, in ``[0, result.train.steps]``.
    snapshots : tuple of dict
        One parameter dict per step, each shaped as ``result.params``.

    Raises
    ------
    TypeError, ValueError
        If ``result`` is not a `TrainResult`, ``steps`` is not valid for it (see `check_steps`), or
        ``snapshots`` does not hold one valid parameter dict per step.

    Examples
    --------
    >>> cfg = enc.EncoderConfig(vocab_size=3, length=4, d_model=8, n_blocks=1, n_heads=2)
    >>> params = enc.init_params(cfg, np.random.default_rng(0))
    >>> run = CheckpointedRun(TrainResult(cfg, TrainConfig(steps=2), params, np.array([1.1, 1.0])), (0, 2),
    ...                       (params, params))
    >>> run.steps, run.snapshot(2) is params
    ((0, 2), True)
    """

    result: TrainResult
    steps: tuple
    snapshots: tuple = field(repr=False)

    def __post_init__(self):
        check_instance(self.result, "result", TrainResult)
        steps = check_steps(self.steps, self.result.train.steps)
        object.__setattr__(self, "steps", steps)
        snapshots = tuple(check_sequence(self.snapshots, "snapshots", of=dict))
        if len(snapshots) != len(steps):
            raise ValueError(f"snapshots and steps must have one parameter dict per step: {len(snapshots)} snapshots "
                             f"for {len(steps)} steps")
        for snapshot in snapshots:
            enc.check_params(snapshot, self.result.encoder, "snapshots item")
        object.__setattr__(self, "snapshots", snapshots)

    def snapshot(self, step: int) -> dict:
        """The parameters after ``step`` updates (one of `steps`)."""
        if step not in self.steps:
            raise ValueError(f"step must be one of the checkpoint steps {self.steps}, got {step!r}")
        return self.snapshots[self.steps.index(step)]


def train_with_checkpoints(encoder_config: enc.EncoderConfig, train_config: TrainConfig, source: Callable,
                           channel: Channel, rng: np.random.Generator, steps, *,
                           progress: bool | None = None) -> CheckpointedRun:
    """[`train`][mlm_book.nn.train.train]'s run, with copies of the parameters after ``steps`` updates.

    Parameters
    ----------
    encoder_config, train_config, source, rng, progress
        As for [`train`][mlm_book.nn.train.train] (the same arguments give the same run).
    channel : Channel
        The corruption channel (next-token prediction is not supported here).
    steps : sequence of int
        Checkpoint steps, strictly increasing, in ``[0, train_config.steps]``: the parameters after
        that many Adam updates (0 is the initialisation, ``train_config.steps`` the trained encoder).

    Returns
    -------
    CheckpointedRun

    Raises
    ------
    TypeError
        If an argument has the wrong type (as for [`train`][mlm_book.nn.train.train]; ``channel`` not a
        ``Channel``).
    ValueError
        If ``steps`` is not valid (see `check_steps`), ``channel.vocab_size`` differs from the
        encoder's, or a batch from ``source`` is malformed.

    Examples
    --------
    The last snapshot is the trained encoder, the first the initialisation:

    >>> from mlm_book.nn.train import train
    >>> cfg = enc.EncoderConfig(vocab_size=3, length=4, d_model=8, n_blocks=1, n_heads=2)
    >>> source = lambda b, rng: rng.integers(0, 3, size=(b, 4))
    >>> settings = TrainConfig(steps=5, batch_size=4, warmup=2)
    >>> run = train_with_checkpoints(cfg, settings, source, Channel(vocab_size=3, rho=0.5),
    ...                              np.random.default_rng(1), (0, 2, 5), progress=False)
    >>> plain = train(cfg, settings, source, Channel(vocab_size=3, rho=0.5), np.random.default_rng(1),
    ...               progress=False)
    >>> all(np.array_equal(run.snapshot(5)[name], plain.params[name]) for name in plain.params)
    True
    >>> bool(np.array_equal(run.snapshot(0)["E"], enc.init_params(cfg, np.random.default_rng(1))["E"]))
    True
    """
    check_instance(encoder_config, "encoder_config", enc.EncoderConfig)
    check_instance(train_config, "train_config", TrainConfig)
    if not callable(source):
        raise TypeError(f"source must be callable (batch_size, rng) -> tokens, got {type(source).__name__}")
    check_instance(channel, "channel", Channel)
    if channel.vocab_size != encoder_config.vocab_size:
        raise ValueError(f"channel.vocab_size ({channel.vocab_size}) must equal the encoder's vocab_size "
                         f"({encoder_config.vocab_size})")
    rng = check_generator(rng)
    if progress is not None:
        check_bool(progress, "progress")
    wanted = check_steps(steps, train_config.steps)
    # from here on, train()'s run: the same draws from rng in the same order
    params = enc.init_params(encoder_config, rng, dtype=np.dtype(train_config.dtype))

    def draw(rng, step):
        clean = enc.check_shown(source(train_config.batch_size, rng), encoder_config, "source(...) tokens")
        if (clean == encoder_config.mask_id).any():
            raise ValueError(f"source(...) tokens must be clean token ids in [0, {encoder_config.vocab_size}) "
                             f"(or [PAD]), got the [MASK] id {encoder_config.mask_id}")
        shown, selected = corrupt_batch(channel, clean, encoder_config, rng)
        return shown, clean, selected

    snapshots: dict[int, dict] = {}
    calls = [0]

    def loss_and_grads(params, batch):
        if calls[0] in wanted:       # the parameters after calls[0] updates, before the next
            snapshots[calls[0]] = {name: array.copy() for name, array in params.items()}
        calls[0] += 1
        return enc.loss_and_grads_unchecked(params, encoder_config, *batch)

    objective = loop.Objective(params, draw, loss_and_grads, decayed=enc.decayed_names(encoder_config))
    fitted = loop.fit(objective, train_config, rng, progress=progress)
    if train_config.steps in wanted:
        snapshots[train_config.steps] = {name: array.copy() for name, array in params.items()}
    result = TrainResult(encoder_config, train_config, params, fitted.loss, fitted.seconds)
    return CheckpointedRun(result, wanted, tuple(snapshots[step] for step in wanted))
