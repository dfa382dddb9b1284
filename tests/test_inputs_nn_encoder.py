"""Bad input to the encoder, Adam and the training loop (issue 10): each is refused with a
``TypeError``/``ValueError`` naming the caller's argument, before any work is done."""

from __future__ import annotations

import math
import types

import numpy as np
import pytest

from mlm_book.channel import Channel
from mlm_book.nn import adam as adam_module
from mlm_book.nn import encoder as enc
from mlm_book.nn import train as train_module
from mlm_book.nn.loop import TrainConfig, learning_rate

TINY = enc.EncoderConfig(vocab_size=3, length=4, d_model=8, n_blocks=1, n_heads=2)
TINY_TRAIN = TrainConfig(steps=3, batch_size=2, warmup=1)
SHOWN = [[0, 3, 2, 1]]
TARGETS = [[0, 1, 2, 1]]
SELECTED = [[False, True, False, True]]


def uniform(batch, rng):
    return rng.integers(0, 3, size=(batch, 4))


@pytest.fixture
def params():
    return enc.init_params(TINY, np.random.default_rng(0), dtype=np.float64)


# --------------------------------------------------------------------------- encoder
@pytest.mark.parametrize("call", [
    lambda p: enc.param_names(None),
    lambda p: enc.param_shapes(None),
    lambda p: enc.init_params(None, np.random.default_rng(0)),
    lambda p: enc.check_params(p, None),
    lambda p: enc.forward(p, None, SHOWN),
    lambda p: enc.loss_and_grads(p, None, SHOWN, TARGETS, SELECTED),
    lambda p: enc.loss(p, None, SHOWN, TARGETS, SELECTED),
    lambda p: enc.logits(p, None, SHOWN),
    lambda p: enc.predict_proba(p, None, SHOWN),
    lambda p: enc.hidden_states(p, None, SHOWN),
    lambda p: enc.decayed_names(None),
])
def test_a_missing_config_is_named(params, call):
    with pytest.raises(TypeError, match="config must be EncoderConfig, got NoneType"):
        call(params)


def test_a_ragged_selection_is_named(params):
    for call in (enc.forward, lambda *a: enc.loss(*a[:3], TARGETS, a[3]),
                 lambda *a: enc.loss_and_grads(*a[:3], TARGETS, a[3])):
        with pytest.raises(TypeError, match="selected must be a boolean array"):
            call(params, TINY, SHOWN, [[True, False], [True]])


def test_init_params_names_a_bad_dtype():
    for dtype in ("text", object(), math.nan):
        with pytest.raises(TypeError, match="dtype must be float32 or float64"):
            enc.init_params(TINY, np.random.default_rng(0), dtype=dtype)


def test_check_params_names_a_bad_name(params):
    with pytest.raises(TypeError, match="name must be str"):
        enc.check_params(params, TINY, name=None)


def test_backward_checks_its_gradient_and_cache(params):
    z, cache = enc.forward(params, TINY, SHOWN, SELECTED)
    grads = enc.backward(np.ones_like(z), cache)
    assert grads["b_out"].tolist() == [2.0, 2.0, 2.0]
    with pytest.raises(ValueError, match=r"dlogits must have the logits' shape \(2, 3\)"):
        enc.backward(np.ones((4, 3)), cache)
    poisoned = np.ones_like(z)
    poisoned[0, 0] = np.nan
    with pytest.raises(ValueError, match="dlogits must be finite"):
        enc.backward(poisoned, cache)
    with pytest.raises(TypeError, match="dlogits must be a real array"):
        enc.backward(z.astype(complex), cache)
    with pytest.raises(TypeError, match="dlogits must be a real array"):
        enc.backward([[1.0, 2.0], [3.0]], cache)
    for bad in (None, "abc", (1, 2, 3), cache[:2]):
        with pytest.raises(TypeError, match="cache must be the cache returned by forward"):
            enc.backward(np.ones_like(z), bad)
    with pytest.raises(TypeError, match="input_grad must be True or False"):
        enc.backward(np.ones_like(z), cache, input_grad=None)


def test_backward_keeps_the_dtype_of_its_gradient(params):
    # validation must not convert: a float32 dlogits gives the same gradients as before
    z, cache = enc.forward(params, TINY, SHOWN)
    dz = np.random.default_rng(2).normal(size=z.shape).astype(np.float32)
    grads, dx0 = enc.backward(dz, cache, input_grad=True)
    again, dx0_again = enc.backward(dz.copy(), cache, input_grad=True)
    assert all(np.array_equal(grads[k], again[k]) for k in grads) and np.array_equal(dx0, dx0_again)


def test_an_absurd_encoder_is_refused_when_made():
    for field in ("vocab_size", "length", "d_model", "n_blocks", "mlp_ratio"):
        kwargs = {"vocab_size": 3, "length": 4, "d_model": 8, "n_blocks": 1, "n_heads": 2}
        kwargs[field] = 10**12
        with pytest.raises(ValueError, match=f"{field}=1000000000000.*more than the limit"):
            enc.EncoderConfig(**kwargs)


@pytest.mark.parametrize("kwargs", [
    {"vocab_size": 3, "length": 4, "d_model": 8, "n_blocks": 1, "n_heads": 2},
    {"vocab_size": 25, "length": 24, "d_model": 32, "n_blocks": 2, "n_heads": 2},
    {"vocab_size": 867, "length": 24, "d_model": 64, "n_blocks": 3, "n_heads": 4, "mlp_ratio": 3, "pad": True},
])
def test_the_parameter_count_of_the_size_check_is_the_real_one(kwargs):
    config = enc.EncoderConfig(**kwargs)
    counted = sum(int(np.prod(shape)) for shape in enc.param_shapes(config).values())
    limit = enc.MAX_PARAMETERS
    try:
        enc.MAX_PARAMETERS = counted - 1
        with pytest.raises(ValueError, match=f"has {counted} parameters"):
            enc.EncoderConfig(**kwargs)
        enc.MAX_PARAMETERS = counted
        enc.EncoderConfig(**kwargs)
    finally:
        enc.MAX_PARAMETERS = limit


# --------------------------------------------------------------------------- Adam
@pytest.mark.parametrize("decayed", [object(), math.nan, 3, [["w"]], [1]])
def test_adam_names_bad_decayed(decayed):
    with pytest.raises(TypeError, match="decayed"):
        adam_module.Adam({"w": np.zeros(2)}, adam_module.AdamConfig(weight_decay=0.1), decayed=decayed)


@pytest.mark.parametrize("fused", [True, False])
def test_adam_step_refuses_a_non_real_gradient_and_changes_nothing(fused):
    params = (enc.init_params(TINY, np.random.default_rng(0)) if fused
              else {"w": np.ones(2), "b": np.zeros(1)})
    optimiser = adam_module.Adam(params)
    assert optimiser.fused == fused
    before = {k: v.copy() for k, v in params.items()}
    name = next(iter(params))
    good = {k: np.ones_like(v) for k, v in params.items()}
    for bad, kind in ((good[name].astype(complex), "must be a real array"),
                      ([[1.0], [1.0, 2.0]], r"must be a real array \(not ragged\)"),
                      (np.full(good[name].shape, "x"), "must be a real array")):
        with pytest.raises(TypeError, match=rf"grads\['{name}'\] {kind}"):
            optimiser.step(dict(good, **{name: bad}), 0.1)
    assert optimiser.t == 0 and all(np.array_equal(params[k], before[k]) for k in params)
    optimiser.step(good, 0.1)  # a valid step still runs
    assert optimiser.t == 1


# --------------------------------------------------------------------------- schedule, records
def test_learning_rate_names_its_arguments():
    with pytest.raises(TypeError, match="config must be TrainConfig"):
        learning_rate(None, 0)
    for step, error in ((None, TypeError), (2.5, TypeError), (True, TypeError), (-1, ValueError)):
        with pytest.raises(error, match="step"):
            learning_rate(TINY_TRAIN, step)
    assert learning_rate(TINY_TRAIN, np.int64(10**12)) == pytest.approx(
        TINY_TRAIN.lr * TINY_TRAIN.final_lr_fraction)


def test_channel_description_names_its_channel():
    with pytest.raises(TypeError, match="channel must be Channel"):
        train_module.channel_description(None)


def test_train_result_checks_its_fields(params):
    losses = np.array([1.2, 1.1, 1.0])
    result = train_module.TrainResult(TINY, TINY_TRAIN, params, losses, 0.25)
    assert result.seconds == 0.25 and train_module.TrainResult(TINY, TINY_TRAIN, params, losses).seconds == 0.0
    bad = {
        "encoder": (math.nan, TypeError), "train": (TINY, TypeError), "params": ({"E": 1.0}, ValueError),
        "losses": (losses[:2], ValueError), "seconds": (math.nan, ValueError),
    }
    for field, (value, error) in bad.items():
        fields = {"encoder": TINY, "train": TINY_TRAIN, "params": params, "losses": losses, "seconds": 0.25}
        fields[field] = value
        with pytest.raises(error, match=field):
            train_module.TrainResult(**fields)
    with pytest.raises(ValueError, match="losses must be finite"):
        train_module.TrainResult(TINY, TINY_TRAIN, params, np.array([1.0, math.nan, 1.0]), 0.0)
    with pytest.raises(TypeError, match="losses must be a float numpy array"):
        train_module.TrainResult(TINY, TINY_TRAIN, params, [1.0, 1.0, 1.0], 0.0)
    with pytest.raises(ValueError, match="seconds must be a finite number in"):
        train_module.TrainResult(TINY, TINY_TRAIN, params, losses, -1.0)


# --------------------------------------------------------------------------- training
def test_train_names_a_bad_progress():
    for progress in ("text", 1, math.nan):
        with pytest.raises(TypeError, match="progress must be True or False"):
            train_module.train(TINY, TINY_TRAIN, uniform, Channel(vocab_size=3), np.random.default_rng(0),
                               progress=progress)


def _spoiled_at_second_batch(bad_id):
    calls = []

    def source(batch, rng):
        calls.append(1)
        tokens = rng.integers(0, 3, size=(batch, 4))
        if len(calls) == 2:
            tokens[0, 0] = bad_id
        return tokens
    return source


@pytest.mark.parametrize("bad_id, message", [
    (3, r"source\(\.\.\.\) tokens must be clean token ids .*\[MASK\] id 3"),
    (-1, r"source\(\.\.\.\) tokens must be token ids in"),
])
def test_every_batch_of_the_source_is_checked(bad_id, message):
    with pytest.raises(ValueError, match=message):
        train_module.train(TINY, TINY_TRAIN, _spoiled_at_second_batch(bad_id), Channel(vocab_size=3),
                           np.random.default_rng(0), progress=False)


def test_a_source_of_lists_trains_as_one_of_arrays():
    as_arrays = train_module.train(TINY, TINY_TRAIN, uniform, Channel(vocab_size=3), np.random.default_rng(0),
                                   progress=False)
    as_lists = train_module.train(TINY, TINY_TRAIN, lambda b, rng: uniform(b, rng).tolist(), Channel(vocab_size=3),
                                  np.random.default_rng(0), progress=False)
    assert np.array_equal(as_arrays.losses, as_lists.losses)


ARGUMENTS = {"name": "toy", "encoder_config": TINY, "train_config": TINY_TRAIN, "channel": Channel(vocab_size=3),
             "source_key": {"source": "uniform"}}


BAD_REQUESTS = [
    ("name", None, TypeError), ("name", "a b", ValueError), ("name", "", ValueError),
    ("encoder_config", None, TypeError), ("train_config", TINY, TypeError), ("channel", None, TypeError),
    ("channel", Channel(vocab_size=4), ValueError),
    ("source_key", ["source"], TypeError), ("source_key", {"x": math.nan}, TypeError),
    ("source_key", {"x": object()}, TypeError),
    ("producers", "abc", TypeError), ("producers", [1], TypeError), ("producers", object(), TypeError),
    ("directory", 5, TypeError), ("directory", "", ValueError),
]


@pytest.mark.parametrize("field, value, error",
                         BAD_REQUESTS + [("source", None, TypeError), ("progress", "text", TypeError)])
def test_cached_training_checks_everything_before_loading_or_training(tmp_path, field, value, error):
    arguments = dict(ARGUMENTS, source=uniform, directory=tmp_path, progress=False)
    arguments[field] = value
    with pytest.raises(error, match=field):
        train_module.cached_training(**arguments)
    assert not list(tmp_path.iterdir())


@pytest.mark.parametrize("field, value, error", BAD_REQUESTS)
def test_is_cached_training_checks_everything(tmp_path, field, value, error):
    arguments = dict(ARGUMENTS, directory=tmp_path)
    arguments[field] = value
    with pytest.raises(error, match=field):
        train_module.is_cached_training(**arguments)


def test_a_stored_entry_is_checked_before_it_is_returned(tmp_path, monkeypatch):
    def diverged(encoder_config, train_config, source, channel, rng, progress=None):
        params = enc.init_params(encoder_config, rng)
        # one loss too many: an entry written by other code than the record expects
        return types.SimpleNamespace(params=params, losses=np.ones(train_config.steps + 1), seconds=0.0)

    monkeypatch.setattr(train_module, "train", diverged)
    with pytest.raises(ValueError, match=r"losses must have shape \(3,\).*delete the entry"):
        train_module.cached_training(**ARGUMENTS, source=uniform, directory=tmp_path, progress=False)


def test_is_cached_training_follows_cached_training(tmp_path):
    assert not train_module.is_cached_training(**ARGUMENTS, directory=str(tmp_path))
    result = train_module.cached_training(**ARGUMENTS, source=uniform, directory=str(tmp_path), progress=False)
    assert train_module.is_cached_training(**ARGUMENTS, directory=tmp_path)
    assert result.losses.shape == (TINY_TRAIN.steps,) and result.seconds >= 0.0
