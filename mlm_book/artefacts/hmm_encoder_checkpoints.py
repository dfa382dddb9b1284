"""The book's HMM encoder runs again, keeping their parameters at log-spaced steps (chapter 11).

The HMM encoder artefact ([`mlm_book.artefacts.hmm_encoder`][mlm_book.artefacts.hmm_encoder])
stores only the trained parameters. This kind re-runs each of the book's five runs with exactly
its recipe, initialisation and batches
([`mlm_book.nn.checkpoints.train_with_checkpoints`][mlm_book.nn.checkpoints.train_with_checkpoints],
the same generator seeded by the training seed as
[`mlm_book.nn.train.cached_training`][mlm_book.nn.train.cached_training] uses) and stores its
parameters after each of `CHECKPOINT_STEPS` Adam updates. The last is the stored book encoder
of that seed, bit for bit (a test compares them), so the snapshots are checkpoints of the book's
own runs. What chapter 11 measures on them (the four-cycle gap and the KL to the exact posterior
through training) lives in
[`mlm_book.experiments.ch11_incompatibility`][mlm_book.experiments.ch11_incompatibility].
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np

from mlm_book import artefacts, cache
from mlm_book.artefacts import hmm_encoder
from mlm_book.artefacts.hmm_encoder import HMMEncoderSetup
from mlm_book.nn import encoder as enc
from mlm_book.nn.checkpoints import CheckpointedRun, check_steps, train_with_checkpoints
from mlm_book.nn.train import TrainResult, channel_description
from mlm_book.validation import check_instance

__all__ = ["CHECKPOINT_STEPS", "SEEDS", "CheckpointSetup", "book_setups", "checkpointed_run", "is_built",
           "tiny_setup", "ARTEFACT_KINDS"]

CHECKPOINT_STEPS = (1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 3000)
"""Adam updates after which the parameters are kept: 1-2-5 steps a decade, from the first update to the last."""

SEEDS = hmm_encoder.SEEDS
"""The book's five training seeds, its own first."""


@dataclass(frozen=True)
class CheckpointSetup:
    """One book run to repeat with checkpoints: its setup and the checkpoint steps.

    Attributes
    ----------
    encoder : HMMEncoderSetup
        The run (an HMM encoder setup, e.g. [`seed_setup`][mlm_book.artefacts.hmm_encoder.seed_setup]).
    steps : tuple of int
        Checkpoint steps, strictly increasing, in ``[0, encoder.training.steps]``, the last the run's
        last step (the trained encoder).

    Raises
    ------
    TypeError, ValueError
        If ``encoder`` is not an ``HMMEncoderSetup`` or ``steps`` is not valid for it or does not end at
        the run's last step.

    Examples
    --------
    >>> setup = CheckpointSetup(hmm_encoder.SETUP)
    >>> setup.seed, setup.steps[-1]
    (20240601, 3000)
    >>> CheckpointSetup(hmm_encoder.SETUP, (1, 4000))
    Traceback (most recent call last):
    ...
    ValueError: steps must lie in [0, 3000] (the run's steps), got 4000
    """

    encoder: HMMEncoderSetup = hmm_encoder.SETUP
    steps: tuple = CHECKPOINT_STEPS

    def __post_init__(self):
        check_instance(self.encoder, "encoder", HMMEncoderSetup)
        steps = check_steps(self.steps, self.encoder.training.steps)
        if steps[-1] != self.encoder.training.steps:
            raise ValueError(f"steps must end at the run's last step {self.encoder.training.steps} (the trained "
                             f"encoder), got {steps[-1]}")
        object.__setattr__(self, "steps", steps)

    @property
    def seed(self) -> int:
        """The training seed."""
        return self.encoder.training.seed


def book_setups() -> tuple[CheckpointSetup, ...]:
    """The book's recipe at each of `SEEDS`, with `CHECKPOINT_STEPS`.

    Examples
    --------
    >>> [setup.seed for setup in book_setups()] == list(SEEDS)
    True
    """
    return tuple(CheckpointSetup(hmm_encoder.seed_setup(seed)) for seed in SEEDS)


def _key(setup: CheckpointSetup) -> dict:
    source, source_key = hmm_encoder.sentence_source(setup.encoder)
    return {"encoder": setup.encoder.encoder.to_dict(), "train": setup.encoder.training.to_dict(),
            "channel": channel_description(setup.encoder.channel()), "source": source_key,
            "steps": list(setup.steps)}


def _run(setup: CheckpointSetup) -> tuple[dict, dict]:
    source, _ = hmm_encoder.sentence_source(setup.encoder)
    run = train_with_checkpoints(setup.encoder.encoder, setup.encoder.training, source, setup.encoder.channel(),
                                 np.random.default_rng(setup.encoder.training.seed), setup.steps)
    arrays = {f"step{step}/{name}": array for step, snapshot in zip(run.steps, run.snapshots)
              for name, array in snapshot.items()}
    arrays["losses"] = run.result.losses
    return arrays, {"seconds": run.result.seconds}


def _entry_producers() -> list:
    return [artefacts.key_source("hmm-encoder-checkpoints")]


def checkpointed_run(setup: CheckpointSetup = CheckpointSetup()) -> CheckpointedRun:
    """The run of ``setup`` with its checkpoints (from the store, or trained now and stored).

    Returns
    -------
    CheckpointedRun
        The run (final parameters, the loss of every step) and the parameters at ``setup.steps``.

    Raises
    ------
    TypeError
        If ``setup`` is not a `CheckpointSetup`.

    Examples
    --------
    >>> run = checkpointed_run(tiny_setup())  # doctest: +BOOK
    >>> run.steps, run.result.losses.shape  # doctest: +BOOK
    ((0, 1, 3), (3,))
    """
    check_instance(setup, "setup", CheckpointSetup)
    return _checkpointed_run(setup)


@functools.cache
def _checkpointed_run(setup: CheckpointSetup) -> CheckpointedRun:
    """The memoised body of `checkpointed_run`, which checks the argument before the cache."""
    arrays, metadata = cache.cached("hmm-encoder-checkpoints", _key(setup), _entry_producers(),
                                    lambda: _run(setup))
    config = setup.encoder.encoder
    names = enc.param_names(config)
    snapshots = tuple({name: arrays[f"step{step}/{name}"] for name in names} for step in setup.steps)
    result = TrainResult(config, setup.encoder.training, snapshots[-1], arrays["losses"], float(metadata["seconds"]))
    return CheckpointedRun(result, setup.steps, snapshots)


def is_built(setup: CheckpointSetup) -> bool:
    """Whether the store holds the run of ``setup`` (a damaged entry counts as absent).

    Examples
    --------
    >>> is_built(tiny_setup()) in (True, False)
    True
    """
    check_instance(setup, "setup", CheckpointSetup)
    return cache.load(cache.entry_for("hmm-encoder-checkpoints", _key(setup), _entry_producers())) is not None


def tiny_setup() -> CheckpointSetup:
    """The HMM encoder's tiny setup (3 steps) with checkpoints at 0, 1 and 3 updates: the same code path.

    Examples
    --------
    >>> tiny_setup().steps
    (0, 1, 3)
    """
    return CheckpointSetup(hmm_encoder.tiny_setup(), (0, 1, 3))


def _build(setup: CheckpointSetup) -> None:
    checkpointed_run(setup)  # in a worker process: it only has to land in the store


# ----------------------------------------------------------------------------- the declaration (not keyed)
# A run costs what the book's encoder run costs (the snapshots are a dozen copies of 30,000 numbers), so the cost
# is the hmm-encoder kind's own estimate (measured there).
ARTEFACT_KINDS = (artefacts.Kind(
    name="hmm-encoder-checkpoints", chapter=11,
    summary="the book's HMM encoder runs repeated with their parameters kept at 12 log-spaced steps "
            "(chapter 11), 5 seeds",
    modules=("mlm_book.artefacts.hmm_encoder_checkpoints", "mlm_book.nn.checkpoints",
             "mlm_book.artefacts.hmm_encoder", "mlm_book.hmm", "mlm_book.channel", "mlm_book.nn.train",
             "mlm_book.nn.loop", "mlm_book.nn.encoder", "mlm_book.nn.layers", "mlm_book.nn.adam",
             "mlm_book.nn.runtime"),
    setups=book_setups, is_built=is_built, build=_build,
    cost=lambda setup: hmm_encoder.ARTEFACT_KINDS[0].cost(setup.encoder),
    describe=lambda setup: f"seed {setup.seed}", tiny=tiny_setup),)
