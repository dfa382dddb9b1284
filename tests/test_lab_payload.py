"""The lab's payload (``mlm_book.lab.viz_payload``) without the trained encoders: quick, not slow.

The payload is built once with stand-in encoders (random initialisation, as in
``test_ch04_ch05.py``) and, for the filings, stand-in measurements of five seeds, so that these
tests never train or measure; they check what holds for any encoder: that the payload survives
JSON, has the shapes the page reads, and that each of its numbers is the package function's
(or chapter 7's measurements, whatever they are). The trained encoders' payload is checked
against the built page by ``tests/test_lab.py`` and judged by the claims (S7-03 ... S7-16, S10-14).
"""

from __future__ import annotations

import dataclasses
import json
import math
from types import SimpleNamespace

import numpy as np
import pytest

from mlm_book import lab
from mlm_book.channel import exact_posterior, optimum
from mlm_book import four_cycles
from mlm_book.readings import sense_probes
from mlm_book.experiments import ch06_finance as ch6
from mlm_book.artefacts import filing_encoder as fe
from mlm_book.experiments import hmm_encoder, lab_figures
from mlm_book.artefacts import hmm_encoder as hmm_artefact
from mlm_book.readings import hmm_encoder as readings
from mlm_book.figures import PALETTE, SENSE_COLORS
from mlm_book.finance.windows import centred_windows
from mlm_book.finance.world import (
    DIRECTION_WORDS,
    ENTITY_ORG,
    ENTITY_PRODUCT,
    EVALUATIVE_VERBS,
)
from mlm_book.geometry import principal_axes
from mlm_book.hmm import default_hmm, sense_posteriors
from mlm_book.nn import encoder as enc
from mlm_book.scoring import kl_divergence

_CACHED = (readings._evaluation, readings._four_cycle_summary, readings._split_vectors, readings.geometry_table,
           sense_probes.probe_table, lab._hmm_view, lab._cycle_view, lab._cloud_view, lab._filing_view, lab._kestrel_view)
_GEOMETRY = ("self_similarity", "baseline", "adjusted", "mev", "token_mev", "isotropic_mev")


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
    for module in (hmm_encoder, hmm_artefact):     # the chapter module's own name and the artefact's
        patch.setattr(module, "trained_encoder", lambda setup=hmm_encoder.SETUP: result)
    _clear()
    yield result
    patch.undo()
    _clear()


def _measurements(seed: int, rng) -> fe.FilingMeasurements:
    """Stand-in measurements of one seed: the fields the lab reads, random numbers in them."""
    layers = ("0", "1", "2")
    return fe.FilingMeasurements(
        seed=seed, steps=1, seconds=0.0, ce={}, layer0_spread=0.0,
        typing={k: float(rng.uniform(0.5, 1)) for k in layers},
        kestrel={k: float(rng.uniform(0.5, 1)) for k in layers}, cue=[], leak={}, polarity={}, lexicon={},
        visible={"guess": float(rng.uniform()), "plugin": float(rng.uniform()), "visible": float(rng.uniform()),
                 "per_guess": [0.5] * 512},
        geometry={"kestrel": {k: {name: float(rng.uniform()) for name in _GEOMETRY} for k in layers}})


@pytest.fixture(scope="module")
def filing_stub():
    """A random filing encoder of the book's vocabulary and window (narrower) and five seeds' stand-in measurements."""
    V = fe.filing_world().vocabulary.size
    config = dataclasses.replace(fe.SETUP.encoder(V), d_model=16, n_heads=2, init_std=0.3)
    params = enc.init_params(config, np.random.default_rng(1), dtype=np.float64)
    result = SimpleNamespace(params=params, encoder=config, losses=np.zeros(3))
    rng = np.random.default_rng(2)
    runs = tuple(_measurements(seed, rng) for seed in fe.SEEDS)
    patch = pytest.MonkeyPatch()
    patch.setattr(fe, "trained_encoder", lambda setup=fe.SETUP: result)
    patch.setattr(fe, "seed_results", lambda setup=fe.SETUP: runs[0])
    patch.setattr(fe, "all_seed_results", lambda setup=fe.SETUP: runs)
    _clear()
    yield SimpleNamespace(result=result, runs=runs)
    patch.undo()
    _clear()


@pytest.fixture(scope="module")
def payload(stub, filing_stub):
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
    evaluation = readings.evaluation()
    assert view["caption"]["mean_kl"] == evaluation.mean_kl
    assert view["caption"]["mean_entropy"] == evaluation.mean_entropy


def test_cycle_view_is_chapter_threes(payload):
    cycles = payload["cycles"]
    draws = four_cycles.four_cycle_draws()
    exact = four_cycles.exact_families()
    assert cycles["count"] == len(draws.first) == 200
    assert cycles["tokens"] == draws.tokens.tolist() and cycles["first"] == draws.first.tolist()
    family = {f["key"]: f for f in cycles["families"]}
    assert family["exact"]["delta"] == exact["HMM conditionals"].tolist()
    assert family["population"]["delta"] == next(v for k, v in exact.items() if k.startswith("population")).tolist()
    assert family["encoder"]["delta"] == readings.four_cycle_summary().encoder.tolist()
    for f in family.values():
        odds = np.array(f["log_odds"])
        assert odds.shape == (200, 4)
        # the four log-odds, rounded to 4 decimals, add up to delta
        assert np.abs(odds[:, 0] + odds[:, 1] - odds[:, 2] - odds[:, 3] - np.array(f["delta"])).max() <= 2.1e-4
        assert f["median_abs"] == float(np.median(np.abs(f["delta"])))
    assert family["encoder"]["median_abs"] == readings.four_cycle_summary().encoder_median
    assert 0 <= cycles["default"] < 200


def test_cloud_view_is_chapters_four_and_fives(payload):
    clouds = payload["clouds"]
    table, probes = readings.geometry_table(), sense_probes.probe_table()
    vectors = readings.split_vectors("test")
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
    example = lab_figures._default_example()
    view = payload["hmm"]["views"][example["position"]]["mask"]
    assert example["kl"] == view["kl"] and example["sense_a"] == payload["hmm"]["sense_posterior"][0][0]
    assert lab_figures._clouds_default()["equal to the tables"]
    assert lab_figures._recomputed_identically()["identical"]
    assert lab_figures._filing_structure()["every word has its guesses"]
    assert lab_figures._filing_centres()["equal to chapter 7's reading"]
    shown = lab_figures._kestrel_shown()
    assert shown["equal to chapter 7"] and shown["layer 0 one point"]
    assert {claim.id for claim in lab_figures.CLAIMS} == {"S7-03", "S7-04", "S7-06", "S7-07", "S7-08", "S7-09",
                                                         "S7-10", "S7-12", "S7-14", "S7-16", "S10-14"}


def test_questions_are_answered_from_the_payload(payload):
    questions = {q["id"]: q for q in payload["questions"]}
    assert sorted(questions) == ["q1", "q2", "q3", "q4", "q5", "q6"]
    kl_self = [v["self"]["kl"] for v in payload["hmm"]["views"]]
    assert questions["q1"]["value"]["position"] == int(np.argmax(kl_self))
    assert f"Position {int(np.argmax(kl_self)) + 1} " in questions["q1"]["answer"]


# ---------------------------------------------------------------------------------------------
# The filings: Figure B's filing windows and Figure D's kestrel
# ---------------------------------------------------------------------------------------------


def test_filing_windows_follow_the_stated_rule():
    world = fe.filing_world()
    corpus = world.corpus
    held = set(fe.split().test_documents.tolist())
    chosen = lab.filing_windows()
    assert [w["key"] for w in chosen] == ["kestrel-org", "kestrel-product", "direction", "verb"]
    rules = {"kestrel-org": lambda i: corpus.tokens[i] == "kestrel" and corpus.entity[i] == ENTITY_ORG,
             "kestrel-product": lambda i: corpus.tokens[i] == "kestrel" and corpus.entity[i] == ENTITY_PRODUCT,
             "direction": lambda i: corpus.tokens[i] in DIRECTION_WORDS and corpus.news[i] != 0,
             "verb": lambda i: corpus.tokens[i] in EVALUATIVE_VERBS and corpus.news[i] != 0}
    for window in chosen:
        index, rule = window["index"], rules[window["key"]]
        assert int(corpus.document[index]) in held and rule(index)
        # the first such token of the held-out filings, in stream order
        earlier = [i for i in range(index) if int(corpus.document[i]) in held and rule(i)]
        assert not earlier, window
        assert window["word"] == corpus.tokens[index] and window["document"] == corpus.document[index]


def test_filing_view_numbers_are_the_packages(filing_stub, payload):
    filings = payload["filings"]
    result = filing_stub.result
    config = result.encoder
    world = fe.filing_world()
    words = list(world.vocabulary.words)
    channel = fe.SETUP.channel(config.vocab_size)
    assert len(filings["windows"]) == 4 and filings["top"] == lab.FILING_TOP == 5
    assert filings["centre"] == 16 and filings["default"] == {"window": 0, "position": 16}
    centres = np.array([w["index"] for w in filings["windows"]])
    clean, valid = centred_windows(world.ids, world.corpus.document, length=config.length, pad_id=config.pad_id,
                                   select=centres)
    for k, window in enumerate(filings["windows"]):
        assert [slot is not None for slot in window["slots"]] == valid[k].tolist()   # [PAD] slots are skipped
        for i, slot in enumerate(window["slots"]):
            if slot is not None:
                assert slot["word"] == words[clean[k, i]] and len(slot["top"]) == 5
                assert slot["count"] == int(np.sum(world.ids == clean[k, i]))
    assert filings["windows"][1]["slots"][-1] is None  # a product mention closes its filing
    # one window, three of its words, recomputed one masked window at a time
    k = 2
    window = filings["windows"][k]
    real = np.flatnonzero(valid[k])
    visible = enc.predict_proba(result.params, config, clean[k:k + 1])[0]
    for i in (int(real[0]), filings["centre"], int(real[-1])):
        masked = clean[k:k + 1].copy()
        masked[0, i] = config.mask_id
        guess = enc.predict_proba(result.params, config, masked)[0, i]
        token = int(clean[k, i])
        slot = window["slots"][i]
        best = np.argsort(-guess, kind="stable")[:5]
        assert [word for word, _ in slot["top"]] == [words[y] for y in best]
        for (_, p), y in zip(slot["top"], best):
            assert lab_figures._within_rounding(p, guess[y], lab.FILING_DIGITS)
        plugin = optimum(guess, token, channel)[token]
        for key, exact in (("guess", guess[token]), ("visible", visible[i, token]), ("plugin", plugin)):
            assert lab_figures._within_rounding(slot[key], float(exact), lab.FILING_DIGITS), (i, key)
    book = filing_stub.runs[0].visible
    caption = filings["caption"]
    assert (caption["guess"], caption["plugin"], caption["visible"]) == (book["guess"], book["plugin"],
                                                                          book["visible"])
    assert caption["spread"]["visible"] == list(fe.spread([run.visible["visible"] for run in filing_stub.runs]))


def test_within_rounding():
    assert lab_figures._within_rounding(0.1235, 0.123456, 4)
    assert lab_figures._within_rounding(1.0, 0.99996, 4)
    assert not lab_figures._within_rounding(0.1236, 0.123456, 4)
    assert lab_figures._within_rounding(2.5e-07, 2.50049e-07, 4)


def test_kestrel_view_is_chapter_sixs(filing_stub, payload):
    kestrel = payload["kestrel"]
    corpus = fe.filing_world().corpus
    static = ch6.results()
    index = np.flatnonzero((corpus.tokens == "kestrel") & (corpus.entity > 0))
    assert kestrel["n_occurrences"] == index.size == len(kestrel["types"])
    assert kestrel["types"] == (corpus.entity[index] == ENTITY_PRODUCT).astype(int).tolist()
    assert kestrel["counts"] == [kestrel["types"].count(0), kestrel["types"].count(1)]
    assert kestrel["majority"] == static.kestrel_cap.accuracy and kestrel["alias_majority"] == static.alias_cap.accuracy
    book, runs = filing_stub.runs[0], filing_stub.runs
    for entry in kestrel["layers"]:
        layer = str(entry["layer"])
        for name in _GEOMETRY:
            assert entry[name] == book.geometry["kestrel"][layer][name], (layer, name)
            assert entry["spread"][name] == list(fe.spread([r.geometry["kestrel"][layer][name] for r in runs]))
        assert entry["probe"] == book.kestrel[layer] and entry["typing"] == book.typing[layer]
        assert entry["spread"]["typing"] == list(fe.spread([r.typing[layer] for r in runs]))
    # layer 0 is E[kestrel] + P16 for every mention: one point, no axes; layers 1 and 2 are clouds
    zero, one = kestrel["layers"][0], kestrel["layers"][1]
    assert zero["single_point"] and zero["distinct_vectors"] == 1 and zero["x"] == [] and zero["explained"] == []
    assert not one["single_point"] and len(one["x"]) == len(one["y"]) == index.size
    assert 0 < one["explained"][1] <= one["explained"][0] <= 1
    coords = principal_axes(fe.centre_states(filing_stub.result, index)[:, 1], 2).coordinates
    sign = 1.0 if np.corrcoef(coords[:, 0], kestrel["types"])[0, 1] >= 0 else -1.0
    assert one["x"] == [lab._significant(v) for v in sign * coords[:, 0]]
    assert one["y"] == [lab._significant(v) for v in coords[:, 1]]
    products = np.array(kestrel["types"]) == 1
    assert np.mean(np.array(one["x"])[products]) > np.mean(np.array(one["x"])[~products])  # products to the right
    assert payload["entity_colors"] == {name: PALETTE[color] for name, color in lab.ENTITY_COLORS.items()}
