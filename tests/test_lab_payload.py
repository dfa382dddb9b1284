"""The lab's payload (``mlm_book.lab.viz_payload``) without the trained encoder: quick, not slow.

The payload is built once with a stand-in encoder (random initialisation, as in
``test_ch04_ch05.py``), so that these tests never train; they check what holds for any
encoder: that the payload survives JSON, has the shapes the page reads, and that each of
its numbers is the package function's. The trained encoder's payload is checked against the
built page by ``tests/test_lab.py`` and judged by the claims (S7-07 ... S7-16, S10-14).
"""

from __future__ import annotations

import json
import math
from types import SimpleNamespace

import numpy as np
import pytest

from mlm_book import lab
from mlm_book.channel import exact_posterior
from mlm_book.experiments import ch03_pseudo_likelihood as ch3
from mlm_book.experiments import ch04_geometry as ch4
from mlm_book.experiments import ch05_probing as ch5
from mlm_book.experiments import hmm_encoder, lab_figures
from mlm_book.figures import PALETTE, SENSE_COLORS
from mlm_book.hmm import default_hmm, sense_posteriors
from mlm_book.nn import encoder as enc
from mlm_book.scoring import kl_divergence

_CACHED = (hmm_encoder.evaluation, hmm_encoder.four_cycle_summary, ch4.split_vectors, ch4.geometry_table,
           ch5.probe_table, lab._hmm_view, lab._cycle_view, lab._cloud_view)


def _clear():
    for function in _CACHED:
        function.cache_clear()


@pytest.fixture(scope="module")
def stub():
    """A random encoder of the book's shape (narrower), standing in for the trained one."""
    config = enc.EncoderConfig(vocab_size=25, length=24, d_model=16, n_blocks=2, n_heads=2, init_std=0.3)
    params = enc.init_params(config, np.random.default_rng(0), dtype=np.float64)
    result = SimpleNamespace(params=params, encoder=config, losses=np.zeros(3))
    patch = pytest.MonkeyPatch()
    patch.setattr(hmm_encoder, "trained_encoder", lambda setup=hmm_encoder.SETUP: result)
    _clear()
    yield result
    patch.undo()
    _clear()


@pytest.fixture(scope="module")
def payload(stub):
    return lab.viz_payload()


def test_payload_survives_json_and_is_small(payload):
    text = lab.payload_json(payload)
    assert json.loads(text) == payload
    assert "</" not in text and "NaN" not in text and "Infinity" not in text
    assert len(text.encode("utf-8")) <= lab_figures.PAYLOAD_LIMIT


def test_payload_is_a_fresh_copy_and_deterministic(payload):
    again = lab.viz_payload()
    assert again == payload and again is not payload
    again["hmm"]["views"][0]["mask"]["kl"] = -1.0
    assert lab.viz_payload() == payload


def test_colours_and_names_are_the_books(payload):
    assert payload["palette"] == PALETTE and payload["sense_colors"] == list(SENSE_COLORS)
    assert payload["tokens"] == [*default_hmm().token_names, "[MASK]"]


def test_default_sentence_has_w_once_in_each_sense(payload):
    hmm = default_hmm()
    view = payload["hmm"]
    tokens = view["tokens"]
    assert len(tokens) == hmm_encoder.SETUP.length
    assert [i for i, t in enumerate(tokens) if t == hmm.shared_token] == view["w_positions"]
    assert view["w_senses"] == [0, 1]
    senses = sense_posteriors(hmm, tokens)
    for k, (i, sense) in enumerate(zip(view["w_positions"], view["w_senses"])):
        assert view["sense_posterior"][k] == [float(senses[i, 0]), float(senses[i, 1])]
        assert view["sense_posterior"][k][sense] >= lab.SENSE_CONFIDENCE
    assert view["default"] == {"position": view["w_positions"][0], "display": "mask"}
    assert all(s != t for s, t in zip(view["substitutes"], tokens))


def test_hmm_view_numbers_are_the_packages(stub, payload):
    view = payload["hmm"]
    tokens = view["tokens"]
    channel = hmm_encoder.SETUP.channel()
    assert len(view["views"]) == len(tokens)
    for i in (0, view["w_positions"][0], view["w_positions"][1], len(tokens) - 1):
        for display, shown_there in (("mask", channel.mask_id), ("self", tokens[i]), ("random", view["substitutes"][i])):
            shown = np.array([tokens])
            shown[0, i] = shown_there
            exact = exact_posterior(default_hmm(), channel, shown)[0, i]
            model = enc.predict_proba(stub.params, stub.encoder, shown)[0, i]
            entry = view["views"][i][display]
            assert entry["shown"] == shown_there
            assert entry["p_true_exact"] == pytest.approx(float(exact[tokens[i]]), rel=1e-12, abs=1e-15)
            assert entry["p_true_encoder"] == pytest.approx(float(model[tokens[i]]), rel=1e-9, abs=1e-12)
            assert entry["kl"] == pytest.approx(float(kl_divergence(exact, model)), rel=1e-9, abs=1e-12)
            assert np.allclose(entry["exact"], exact, rtol=0, atol=5.1e-4)
            assert len(entry["encoder"]) == 25 and abs(sum(entry["encoder"]) - 1) < 0.01
    evaluation = hmm_encoder.evaluation()
    assert view["caption"]["mean_kl"] == evaluation.mean_kl
    assert view["caption"]["mean_entropy"] == evaluation.mean_entropy


def test_cycle_view_is_chapter_threes(payload):
    cycles = payload["cycles"]
    draws = ch3.four_cycle_draws()
    exact = ch3.exact_families()
    assert cycles["count"] == len(draws.first) == 200
    assert cycles["tokens"] == draws.tokens.tolist() and cycles["first"] == draws.first.tolist()
    family = {f["key"]: f for f in cycles["families"]}
    assert family["exact"]["delta"] == exact["HMM conditionals"].tolist()
    assert family["population"]["delta"] == next(v for k, v in exact.items() if k.startswith("population")).tolist()
    assert family["encoder"]["delta"] == hmm_encoder.four_cycle_summary().encoder.tolist()
    for f in family.values():
        odds = np.array(f["log_odds"])
        assert odds.shape == (200, 4)
        # the four log-odds, rounded to 4 decimals, add up to delta
        assert np.abs(odds[:, 0] + odds[:, 1] - odds[:, 2] - odds[:, 3] - np.array(f["delta"])).max() <= 2.1e-4
        assert f["median_abs"] == float(np.median(np.abs(f["delta"])))
    assert family["encoder"]["median_abs"] == hmm_encoder.four_cycle_summary().encoder_median
    assert 0 <= cycles["default"] < 200


def test_cloud_view_is_chapters_four_and_fives(payload):
    clouds = payload["clouds"]
    table, probes = ch4.geometry_table(), ch5.probe_table()
    vectors = ch4.split_vectors("test")
    assert clouds["n_occurrences"] == vectors.n_occurrences
    assert clouds["n_shown"] == min(lab.CLOUD_POINTS, vectors.n_occurrences)
    assert len(clouds["senses"]) == len(clouds["posterior_b"]) == clouds["n_shown"]
    assert clouds["cap"] == probes.cap and clouds["bayes"] == probes.bayes
    for layer, row in enumerate(clouds["layers"]):
        g = table.rows[layer].geometry
        assert (row["self_similarity"], row["baseline"], row["adjusted"], row["mev"], row["token_mev"]) == (
            g.self_similarity, g.baseline, g.adjusted, g.mev, g.token_mev)
        assert (row["probe"], row["control"]) == (probes.rows[layer].probe, probes.rows[layer].control)
        assert len(row["x"]) == len(row["y"]) == clouds["n_shown"]
        assert all(math.isfinite(v) for v in row["x"] + row["y"])
        assert 0 < row["explained"][1] <= row["explained"][0] <= 1
    assert len({(x, y) for x, y in zip(clouds["layers"][0]["x"], clouds["layers"][0]["y"])}) <= 24


def test_claims_read_the_payload(stub, payload):
    example = lab_figures.default_example()
    view = payload["hmm"]["views"][example["position"]]["mask"]
    assert example["kl"] == view["kl"] and example["sense_a"] == payload["hmm"]["sense_posterior"][0][0]
    assert lab_figures.figure_b_default()["equal to the tables"]
    assert lab_figures.recomputed_identically()["identical"]
    assert {claim.id for claim in lab_figures.CLAIMS} == {"S7-07", "S7-08", "S7-09", "S7-10", "S7-12", "S7-14",
                                                         "S7-16", "S10-14"}


def test_questions_are_answered_from_the_payload(payload):
    questions = {q["id"]: q for q in payload["questions"]}
    assert sorted(questions) == ["q1", "q2", "q3"]
    kl_self = [v["self"]["kl"] for v in payload["hmm"]["views"]]
    assert questions["q1"]["value"]["position"] == int(np.argmax(kl_self))
    assert f"Position {int(np.argmax(kl_self)) + 1} " in questions["q1"]["answer"]
