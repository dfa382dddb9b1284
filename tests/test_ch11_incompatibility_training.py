"""Chapter 11, Q3's trained half: the book's HMM encoder runs repeated with checkpoints.

The checkpoints are those of the book's runs only if the repeated run is the same run: its last
snapshot must equal the stored book encoder of its seed bit for bit (``np.array_equal``, no
tolerance: the same code on the same draws in the same order, in float32), and its measurements
at the last checkpoint must be chapter 3's and chapter 2's for that encoder (1e-12: the same
arithmetic on the same arrays).
"""

from __future__ import annotations

import numpy as np
import pytest

from mlm_book.artefacts import hmm_encoder, hmm_encoder_checkpoints
from mlm_book.channel import Channel
from mlm_book.experiments import ch11_incompatibility as q3
from mlm_book.nn import encoder as enc
from mlm_book.nn.checkpoints import CheckpointedRun, check_steps, train_with_checkpoints
from mlm_book.nn.loop import TrainConfig
from mlm_book.nn.train import NextToken, train
from mlm_book.readings import hmm_encoder as readings

TOY = enc.EncoderConfig(vocab_size=5, length=6, d_model=8, n_blocks=1, n_heads=2)
TOY_TRAINING = TrainConfig(steps=7, batch_size=4, warmup=2, weight_decay=0.01)


def _source(batch, rng):
    return rng.integers(0, 5, size=(batch, 6))


def test_the_snapshots_are_the_plain_runs_parameters():
    channel = Channel(vocab_size=5, rho=0.3)
    run = train_with_checkpoints(TOY, TOY_TRAINING, _source, channel, np.random.default_rng(3), range(8),
                                 progress=False)
    plain = train(TOY, TOY_TRAINING, _source, channel, np.random.default_rng(3), progress=False)
    initial = enc.init_params(TOY, np.random.default_rng(3))
    for name in plain.params:
        assert np.array_equal(run.snapshot(7)[name], plain.params[name])
        assert np.array_equal(run.result.params[name], plain.params[name])
        assert np.array_equal(run.snapshot(0)[name], initial[name])
    assert np.array_equal(run.result.losses, plain.losses)
    # each update moves the trained parameters, so consecutive snapshots differ: no copy is a view
    for before, after in zip(run.snapshots, run.snapshots[1:]):
        assert not np.array_equal(before["E"], after["E"])


def test_bad_arguments_are_refused():
    channel = Channel(vocab_size=5, rho=0.3)
    rng = np.random.default_rng(0)
    with pytest.raises(TypeError, match="channel"):
        train_with_checkpoints(TOY, TOY_TRAINING, _source, NextToken(vocab_size=5), rng, (1,))
    with pytest.raises(ValueError, match="steps"):
        train_with_checkpoints(TOY, TOY_TRAINING, _source, channel, rng, (3, 8))
    with pytest.raises(ValueError, match="steps"):
        check_steps([], 5)
    with pytest.raises(ValueError, match="steps must end"):
        hmm_encoder_checkpoints.CheckpointSetup(hmm_encoder.SETUP, (1, 10))
    with pytest.raises(ValueError, match="snapshots and steps"):
        plain = train(TOY, TOY_TRAINING, _source, channel, rng, progress=False)
        CheckpointedRun(plain, (0, 7), (plain.params,))


@pytest.mark.book
@pytest.mark.parametrize("seed", hmm_encoder.SEEDS)
def test_the_last_checkpoint_is_the_stored_book_encoder_bit_for_bit(seed):
    setup = hmm_encoder.seed_setup(seed)
    run = hmm_encoder_checkpoints.checkpointed_run(hmm_encoder_checkpoints.CheckpointSetup(setup))
    stored = hmm_encoder.trained_encoder(setup)
    assert set(run.result.params) == set(stored.params)
    for name, array in stored.params.items():
        assert run.result.params[name].dtype == array.dtype
        assert np.array_equal(run.result.params[name], array), name
    assert np.array_equal(run.result.losses, stored.losses)


@pytest.mark.book
def test_the_last_checkpoints_measurements_are_chapter_3s_and_chapter_2s():
    gaps = q3.training_gaps()
    assert gaps.seeds == tuple(hmm_encoder.SEEDS)
    assert gaps.steps[-1] == hmm_encoder.SETUP.training.steps
    for k, (summary, seed) in enumerate(zip(readings.seed_four_cycles(), hmm_encoder.SEEDS)):
        assert np.abs(gaps.adjacent[k, -1] - summary.encoder).max() < 1e-12
        assert np.abs(gaps.optimum_adjacent - summary.population).max() < 1e-12
        assert abs(gaps.kl[k, -1] - readings.evaluation(hmm_encoder.seed_setup(seed)).mean_kl) < 1e-12


@pytest.mark.book
def test_the_trained_rules_get_the_verdicts_stated():
    from mlm_book.ledger import verify

    found = {result.claim.id: result for result in verify(claims=q3.TRAINED)}
    assert set(found) == set(q3.STATED_BEFORE_RUN)
    assert all(result.passed for result in found.values()), {k: r.verdict for k, r in found.items()}
