"""Tests of the book's HMM encoder helpers (they train the encoder once, or load it from the cache).

The encoder's numbers themselves (KL, kept-token shrinkage, four-cycle gaps) are checked by
the claims ledger (``mlm-book verify --only S3-``); these tests check the helpers' contracts.
"""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import numpy as np  # noqa: E402
import pytest  # noqa: E402

from mlm_book.channel import optimum  # noqa: E402
from mlm_book.experiments import hmm_encoder as he  # noqa: E402
from mlm_book.readings import hmm_encoder as readings  # noqa: E402
from mlm_book.hmm import default_hmm, sample  # noqa: E402
from mlm_book.nn import encoder as enc  # noqa: E402

pytestmark = pytest.mark.book


@pytest.fixture(scope="module")
def tokens():
    return sample(default_hmm(), 3, 24, np.random.default_rng(0))[1]


def test_setup_is_the_books():
    setup = he.SETUP
    assert (setup.encoder.d_model, setup.encoder.n_blocks, setup.training.steps, setup.length) == (32, 2, 3000, 24)
    channel = setup.channel()
    assert (channel.rho, channel.mask, channel.random, channel.replacement) == (0.15, 0.8, 0.1, None)
    assert setup.eval_sequences >= 400
    assert dict(setup.rows())["Adam steps"] == "3000"


def test_weight_decay_gives_berts_total_decay():
    # SETUP's reason for lambda: lambda * sum_t lr_t equals BERT's 0.01 * 50 = 0.5 (lambda rounded to 0.033)
    from mlm_book.nn.loop import learning_rate

    t = he.SETUP.training
    total = t.weight_decay * sum(learning_rate(t, s) for s in range(t.steps))
    assert abs(total - 0.5) < 0.01
    assert he.SETUP.encoder.token_init_std == 1.0 and he.SETUP.encoder.init_std == 0.02


def test_hidden_states_per_layer(tokens):
    hidden = readings.hidden_states(tokens)
    assert len(hidden) == 3 and all(h.shape == (3, 24, 32) and h.dtype == np.float64 for h in hidden)
    result = he.trained_encoder()
    expected = result.params["E"][tokens] + result.params["P"][None]
    assert np.allclose(hidden[0], expected, atol=1e-6)
    assert readings.token_table().shape == (25, 32)
    with pytest.raises(ValueError, match="tokens must be token ids"):
        readings.hidden_states(tokens + 30)


def test_encoder_conditionals_are_a_family_reading_mask(tokens):
    positions = np.array([0, 5, 23])
    q = readings.encoder_conditionals(tokens, positions)
    assert q.shape == (3, 25) and np.allclose(q.sum(axis=1), 1.0)
    # what the queried position shows does not matter: it is replaced by [MASK]
    other = tokens.copy()
    other[np.arange(3), positions] = (other[np.arange(3), positions] + 1) % 25
    assert np.max(np.abs(readings.encoder_conditionals(other, positions) - q)) <= 1e-12
    # the input is not modified
    assert not np.any(tokens == he.SETUP.encoder.mask_id)


def test_evaluation_is_consistent():
    ev = readings.evaluation()
    assert ev.n_positions == sum(ev.counts.values())
    # the overall mean KL is the count-weighted mean of the per-kind means
    weighted = sum(ev.counts[k] * ev.kl_by_kind[k] for k in ev.counts) / ev.n_positions
    assert abs(weighted - ev.mean_kl) <= 1e-12
    assert ev.theorem1_gap <= 1e-10
    assert "mean KL(exact ‖ encoder)" in ev.table()


def test_plugin_formula_on_a_hand_case():
    # Theorem 2 (ii) at V = 25, kappa = r = 0.1: q(v) = (kappa + r/V) p(v) / (kappa p(v) + r/V)
    p = np.full(25, 0.6 / 24)
    p[3] = 0.4
    q = optimum(p, 3, he.SETUP.channel())[3]
    assert abs(q - (0.1 + 0.1 / 25) * 0.4 / (0.1 * 0.4 + 0.1 / 25)) <= 1e-12


def test_loss_curve_figure():
    drawn = he.loss_curve_figure()
    ax = drawn.figure.axes[0]
    others = len(he.SEEDS) - 1
    assert len(ax.lines) == 3 + others   # raw, its average, one average per other seed, the floor
    raw = ax.lines[0].get_ydata()
    assert len(raw) == 3000
    floor = ax.lines[-1].get_ydata()[0]
    assert abs(floor - readings.evaluation().mean_entropy) <= 1e-12
    # each faint line is another seed's moving average, not a copy of the book's
    book = ax.lines[1].get_ydata()
    for line, seed in zip(ax.lines[2:2 + others], he.SEEDS[1:]):
        losses = he.trained_encoder(he.seed_setup(seed)).losses
        assert np.allclose(line.get_ydata(), np.convolve(losses, np.ones(50) / 50, mode="valid"))
        assert not np.allclose(line.get_ydata(), book)
    assert f"floor at {floor:.2f} nats" in drawn.alt and f"at step {len(raw)}," in drawn.alt


def test_trained_params_are_finite_and_shaped():
    result = he.trained_encoder()
    enc.check_params(result.params, result.encoder)
    assert result.losses.shape == (3000,) and np.all(np.isfinite(result.losses))
    # the loss fell from about log 25 toward the floor
    assert result.losses[:20].mean() > 3.0 > 2.2 > result.losses[-200:].mean()


def test_the_key_bias_is_inert_and_only_rounding_moves_it():
    check = he.key_bias_check()
    for dtype in ("float64", "float32"):
        for query, key, value in check.gradient_rms[dtype]:
            # exact gradient 0: what is left is rounding, many orders below the other biases' gradients
            assert key < 1e-6 * min(query, value)
    for _, key_value, _ in check.value_rms:
        assert key_value > 0  # initialised at 0, walked by Adam on rounding noise
    # zeroing it changes nothing beyond float32 rounding of the forward pass (about 1e-7 per op)
    assert check.zeroed_difference < 1e-4


@pytest.mark.book
def test_definition_1_on_the_book_encoder_static_input_contextual_layers():
    from mlm_book.experiments.ch01_static_vectors import _static_at_fixed_position as static_at_fixed_position
    v = static_at_fixed_position()
    assert v["occurrences"] >= 30 and v["layer0_max_diff"] == 0.0
    assert v["layer1_min_spread"] >= 1e-3 and v["layer2_min_spread"] >= 1e-3
