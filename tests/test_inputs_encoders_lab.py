"""Bad input to the encoder experiments and the lab is refused with an error naming the argument (issue 10).

Every check here fails before a trained encoder is loaded or the lab's payload is built, so
the file runs in seconds and never trains. It also pins what keeps the cached measurements
valid: the code hashed into their key is the reader, not its checks.
"""

from __future__ import annotations

import dataclasses
import math
from types import SimpleNamespace

import numpy as np
import pytest

from mlm_book import cache
from mlm_book import lab
from mlm_book.artefacts import filing_encoder as fe
from mlm_book.experiments import hmm_encoder as he
from mlm_book.readings import hmm_encoder as readings
from mlm_book.experiments import lab_figures
from mlm_book.nn import encoder as enc

NAN = math.nan


# ----------------------------------------------------------------------------- filing encoder
@pytest.mark.parametrize("field, value, error", [
    ("rho", NAN, ValueError), ("rho", 0.0, ValueError), ("mask", 1.5, ValueError), ("random", "0.1", TypeError),
    ("final_lr_fraction", NAN, ValueError), ("final_lr_fraction", -0.1, ValueError), ("n_heads", 5, ValueError),
])
def test_filing_setup_checks_its_fields(field, value, error):
    with pytest.raises(error, match=field):
        dataclasses.replace(fe.SETUP, **{field: value})


def test_filing_setup_refuses_mask_and_random_above_one():
    with pytest.raises(ValueError, match="mask \\+ random"):
        dataclasses.replace(fe.SETUP, mask=0.95)


def _measurements(**changes) -> fe.FilingMeasurements:
    fields = dict(seed=1, steps=3, seconds=0.5, ce={"train": {"all": 1.0}}, layer0_spread=0.0,
                  typing={"0": 0.5}, kestrel={"folds0": [(1, 0.5)]}, cue=[0.5, None], leak={}, polarity={},
                  lexicon={}, visible={"per_guess": [0.25, 0.5]}, geometry={})
    return fe.FilingMeasurements(**{**fields, **changes})


@pytest.mark.parametrize("field, value, error", [
    ("seed", NAN, TypeError), ("seed", -1, ValueError), ("steps", 0, ValueError), ("seconds", math.inf, ValueError),
    ("layer0_spread", -1.0, ValueError), ("ce", NAN, TypeError), ("ce", {"train": {"all": NAN}}, ValueError),
    ("cue", [1.5], ValueError), ("cue", None, TypeError), ("visible", {"per_guess": [0.5, math.inf]}, ValueError),
    ("geometry", [1.0], TypeError),
])
def test_filing_measurements_check_their_fields(field, value, error):
    with pytest.raises(error, match=field):
        _measurements(**{field: value})


def test_filing_measurements_accept_a_record_and_replace_rechecks():
    record = _measurements()
    assert record.cue == [0.5, None]
    with pytest.raises(ValueError, match="steps"):
        dataclasses.replace(record, steps=-2)


@pytest.fixture(scope="module")
def filing_stub():
    """A random encoder of the filing encoder's vocabulary and window (narrower), standing in for the trained one."""
    V = fe.filing_world().vocabulary.size
    config = dataclasses.replace(fe.SETUP.encoder(V), d_model=16, n_heads=2)
    params = enc.init_params(config, np.random.default_rng(0), dtype=np.float64)
    return SimpleNamespace(params=params, encoder=config)


@pytest.mark.parametrize("arguments, name", [
    (dict(result=None), "result"),
    (dict(select=[[0, 1], [2]]), "select"), (dict(select=[0.5]), "select"), (dict(select=[]), "select"),
    (dict(select=[-1]), "select"), (dict(select=[10**12]), "select"),
    (dict(mask_centre=1), "mask_centre"), (dict(mask_at=-1), "mask_at"), (dict(mask_at=32), "mask_at"),
    (dict(mask_at=2.5), "mask_at"), (dict(batch=0), "batch"), (dict(batch=NAN), "batch"),
])
def test_centre_states_checks_its_arguments(filing_stub, arguments, name):
    call = dict(result=filing_stub, select=[0, 1])
    with pytest.raises((TypeError, ValueError), match=name):
        fe.centre_states(**{**call, **arguments})


def test_centre_states_refuses_an_encoder_of_another_vocabulary():
    config = enc.EncoderConfig(vocab_size=25, length=24, d_model=8, n_blocks=1, n_heads=2)
    with pytest.raises(ValueError, match="result must be a filing encoder"):
        fe.centre_states(SimpleNamespace(params={}, encoder=config), [0])


def test_centre_states_reads_as_before(filing_stub):
    select = np.array([0, 5, 17])
    assert np.array_equal(fe.centre_states(filing_stub, select, mask_at=3, batch=2),
                          fe._read_centre_states(filing_stub, select, mask_at=3, batch=2))


@pytest.mark.parametrize("values, error", [(None, TypeError), ("12", TypeError), ([1.0], ValueError),
                                           ([1.0, NAN], ValueError), ([[1.0, 2.0], [3.0]], TypeError)])
def test_spread_checks_values(values, error):
    with pytest.raises(error, match="values"):
        fe.spread(values)


def test_training_config_and_ensure_trained_check_their_arguments():
    with pytest.raises(TypeError, match="setup"):
        fe.training_config(None)
    for bad in (object(), "SETUP", [fe.SETUP, None]):
        with pytest.raises(TypeError, match="setups"):
            fe.ensure_trained(bad)
        with pytest.raises(TypeError, match="setups"):
            he.ensure_trained(bad)
    assert fe.ensure_trained([]) == he.ensure_trained([]) == 0


# ----------------------------------------------------------------------------- HMM encoder
@pytest.mark.parametrize("field, value, error", [
    ("encoder", NAN, TypeError), ("training", None, TypeError), ("rho", NAN, ValueError), ("rho", 0, ValueError),
    ("mask", -0.1, ValueError), ("random", 1j, TypeError), ("length", 25, ValueError), ("length", 2.5, TypeError),
    ("eval_sequences", 0, ValueError), ("eval_seed", -1, ValueError), ("eval_seed", NAN, TypeError),
])
def test_hmm_setup_checks_its_fields(field, value, error):
    with pytest.raises(error, match=field):
        dataclasses.replace(he.SETUP, **{field: value})


def _evaluation(**changes) -> readings.EncoderEvaluation:
    fields = dict(setup=he.SETUP, n_sequences=4, n_positions=3, counts={"mask": 1, "random": 1, "kept": 1},
                  exact_ce=1.9, encoder_ce=2.0, exact_ce_se=0.1, gap_se=0.01, mean_entropy=1.8, mean_kl=0.03,
                  kl_by_kind={"mask": 0.02, "random": 0.1, "kept": 0.04}, theorem1_gap=0.0, kept_encoder=0.7,
                  kept_plugin=0.75, kept_mask_guess=0.2, kept_exact=0.8)
    return readings.EncoderEvaluation(**{**fields, **changes})


@pytest.mark.parametrize("field, value, error", [
    ("setup", None, TypeError), ("n_positions", 0, ValueError), ("counts", [1, 2], TypeError),
    ("counts", {"mask": -1}, ValueError), ("exact_ce", NAN, ValueError), ("mean_entropy", 0.0, ValueError),
    ("kl_by_kind", {"mask": math.inf}, ValueError), ("kept_plugin", 1.5, ValueError), ("gap_se", "0.1", TypeError),
])
def test_encoder_evaluation_checks_its_fields(field, value, error):
    with pytest.raises(error, match=field):
        _evaluation(**{field: value})
    assert math.isclose(_evaluation().kl_share, 0.03 / 1.8)


def test_four_cycle_summary_and_key_bias_check_check_their_fields():
    with pytest.raises(ValueError, match="encoder"):
        readings.FourCycleSummary(encoder=np.array([0.1, NAN]), population=np.zeros(2))
    with pytest.raises(ValueError, match="population"):
        readings.FourCycleSummary(encoder=np.zeros(2), population=np.zeros(3))
    assert readings.FourCycleSummary(encoder=[0.5, -1.0], population=[0.0, 0.0]).encoder_max == 1.0
    good = dict(gradient_rms={"float64": ((1.0, 0.0, 1.0),)}, value_rms=((0.1, 0.2, 0.3),), zeroed_difference=0.0,
                sequences=4)
    assert he.KeyBiasCheck(**good).sequences == 4
    for field, value, error in (("gradient_rms", None, TypeError), ("gradient_rms", {"float64": ((NAN,),)}, ValueError),
                                ("value_rms", ((-1.0,),), ValueError), ("zeroed_difference", math.inf, ValueError),
                                ("sequences", 0, ValueError)):
        with pytest.raises(error, match=field):
            he.KeyBiasCheck(**{**good, field: value})


@pytest.mark.parametrize("call, name", [
    (lambda: readings.encoder_conditionals(None, [0]), "tokens"),
    (lambda: readings.encoder_conditionals([[0, 1], [2]], [0]), "tokens"),
    (lambda: readings.encoder_conditionals([[0, 26]], [0]), "tokens"),
    (lambda: readings.encoder_conditionals([[0] * 25], [0]), "tokens"),
    (lambda: readings.encoder_conditionals([[0, 1]], [2]), "positions"),
    (lambda: readings.encoder_conditionals([[0, 1]], [0.5]), "positions"),
    (lambda: readings.encoder_conditionals([[0, 1], [1, 0]], [0, 1, 1]), "positions"),
    (lambda: readings.hidden_states([[0, 1], [2]]), "tokens"),
    (lambda: readings.hidden_states([[0] * 25]), "tokens"),
    (lambda: he.loss_curve_figure(None), "setup"),
    (lambda: he.loss_curve_figure(window=0), "window"),
    (lambda: he.loss_curve_figure(window=3001), "window"),
])
def test_readers_check_arguments_before_loading_the_encoder(call, name):
    with pytest.raises((TypeError, ValueError), match=name):
        call()


# ----------------------------------------------------------------------------- the lab
@pytest.mark.parametrize("tokens, error", [(None, TypeError), ([0.5], TypeError), ([25], ValueError),
                                           ([], ValueError), ([[0, 1]], ValueError)])
def test_substitutes_checks_tokens(tokens, error):
    with pytest.raises(error, match="tokens"):
        lab.substitutes(tokens)


def test_substitutes_never_repeat_the_token():
    tokens = list(range(25))
    assert all(s != t for s, t in zip(lab.substitutes(tokens), tokens))


@pytest.mark.parametrize("layer, error", [(3, ValueError), (-1, ValueError), (1.0, TypeError), (None, TypeError)])
def test_clouds_default_checks_layer_before_building_the_payload(layer, error):
    with pytest.raises(error, match="layer"):
        lab_figures._clouds_default(layer)
