r"""The lab's claims: the numbers its figures show, judged like the chapters' numbers.

The lab page (``docs/lab.md``) draws what [`mlm_book.lab.viz_payload`][mlm_book.lab.viz_payload]
computes. The claims here read that payload:

* Figure A's default example (the default sentence, its sense-a occurrence of $w$ shown as
  ``[MASK]``): the KL from the exact posterior to the encoder's prediction, the probability
  each gives the true token, and $P(\text{sense a} \mid x)$. These depend on the example and are
  illustrative: each is reported and judged only as what it is (finite, a probability), the
  encoder's probability also as close to the exact one;
* the caption's held-out mean KL and entropy, which must be chapter 2's exactly;
* Figure D's numbers at layer 1, which must equal chapter 4's and chapter 5's tables exactly,
  and its caption's reading of layers 0 and 1 (chance, then almost Bayes);
* Figure B's filing windows: four windows, the five best guesses at every word that is not
  [PAD] (structural), and its readout at each window's centre, which must be chapter 7's
  visible-word reading of that word (the encoder's masked guess, the probability kept on the
  visible word, Theorem 2's plug-in) to the payload's four significant digits;
* Figure D for *kestrel*: every measure and probe shown must equal chapter 7's
  ([`filing_encoder.seed_results`][mlm_book.artefacts.filing_encoder.seed_results], the
  majority shares of [`filing_baselines.baselines`][mlm_book.readings.filing_baselines.baselines])
  exactly, and layer 0 must be shown as the one point it is;
* the payload is deterministic: recomputed from scratch it gives the same JSON, byte for byte.
  That the page holds exactly this JSON is checked by the site's browser test
  (``tests/test_lab.py``).

Figure D's MEV of random tokens ("MEV (its baseline)") is chapter 4's claim S7-15
([`mlm_book.experiments.ch04_geometry`][mlm_book.experiments.ch04_geometry]); the payload copies it.
"""

from __future__ import annotations

import math

from mlm_book.ledger import Claim

__all__ = ["PAYLOAD_LIMIT", "CLAIMS"]

PAYLOAD_LIMIT = 1_500_000
"""Largest size of the lab's JSON payload in bytes (UTF-8)."""


def _default_example() -> dict:
    """Figure A's default example as the payload has it: KL, the true token's probabilities, the sense posterior."""
    from mlm_book.lab import viz_payload

    hmm = viz_payload()["hmm"]
    position, display = hmm["default"]["position"], hmm["default"]["display"]
    view = hmm["views"][position][display]
    sense = hmm["sense_posterior"][hmm["w_positions"].index(position)]
    return {"position": position, "display": display, "kl": view["kl"], "p_true_exact": view["p_true_exact"],
            "p_true_encoder": view["p_true_encoder"], "sense_a": sense[0]}


def _caption() -> dict:
    from mlm_book.lab import viz_payload
    from mlm_book.readings import hmm_encoder

    caption = viz_payload()["hmm"]["caption"]
    evaluation = hmm_encoder.evaluation()
    return {"KL": caption["mean_kl"], "entropy": caption["mean_entropy"],
            "equal to chapter 2": caption["mean_kl"] == evaluation.mean_kl
            and caption["mean_entropy"] == evaluation.mean_entropy}


def _clouds_default(layer: int = 1) -> dict:
    """Figure D's numbers at ``layer`` as the payload has them, and whether they equal the chapters' tables.

    Raises
    ------
    TypeError
        If ``layer`` is not an integer.
    ValueError
        If ``layer`` is not one of the clouds' layers 0, 1, 2.
    """
    from mlm_book.lab import viz_payload
    from mlm_book.readings import hmm_encoder, sense_probes
    from mlm_book.validation import check_positive_int

    # checked before the payload is built (seconds on a warm cache)
    layers = len(hmm_encoder.LAYER_NAMES)
    if check_positive_int(layer, "layer", minimum=0) >= layers:
        raise ValueError(f"layer must be one of the clouds' layers 0 to {layers - 1}, got {layer}")

    clouds = viz_payload()["clouds"]
    shown = clouds["layers"][layer]
    g = hmm_encoder.geometry_table().rows[layer].geometry
    probes = sense_probes.probe_table()
    values = {"self-similarity": shown["self_similarity"], "baseline": shown["baseline"],
              "adjusted": shown["adjusted"], "MEV": shown["mev"], "probe": shown["probe"], "cap": clouds["cap"],
              "Bayes": clouds["bayes"]}
    tables = {"self-similarity": g.self_similarity, "baseline": g.baseline, "adjusted": g.adjusted, "MEV": g.mev,
              "probe": probes.rows[layer].probe, "cap": probes.cap, "Bayes": probes.bayes}
    return {**values, "equal to the tables": all(values[key] == float(tables[key]) for key in tables)}


def layers_read_at_seeds() -> list[bool]:
    """Whether S7-16's rule holds at each training seed of chapter 5's table (the book's first).

    The rule is S6-03's and S6-04's together, on the same probes and shuffled-label controls:
    the layer-0 probe and its control at most 0.015 above the static cap, the layer-1 probe
    within [Bayes − 0.02, Bayes + 0.005] and its control at most 0.015 above the cap.
    """
    from mlm_book.readings import sense_probes

    table, seeds = sense_probes.probe_table(), sense_probes.seed_probes()
    cap, bayes = table.cap, seeds.bayes
    return [probes[0] <= cap + 0.015 and controls[0] <= cap + 0.015
            and bayes - 0.02 <= probes[1] <= bayes + sense_probes.ABOVE_BAYES and controls[1] <= cap + 0.015
            for probes, controls in zip(seeds.probes, sense_probes.seed_controls())]


def _layers_read_margins() -> list[float]:
    """Each seed's margin to [`layers_read_at_seeds`][mlm_book.experiments.lab_figures.layers_read_at_seeds]'
    rule: the smallest of its five conditions' distances from their thresholds, non-negative exactly where it holds."""
    from mlm_book.readings import sense_probes

    table, seeds = sense_probes.probe_table(), sense_probes.seed_probes()
    cap, bayes = table.cap, seeds.bayes
    return [min(cap + 0.015 - probes[0], cap + 0.015 - controls[0], probes[1] - (bayes - 0.02),
                bayes + sense_probes.ABOVE_BAYES - probes[1], cap + 0.015 - controls[1])
            for probes, controls in zip(seeds.probes, sense_probes.seed_controls())]


def _layers_read_over_seeds():
    from mlm_book.ledger import over_seeds
    from mlm_book.readings import sense_probes

    seeds = sense_probes.seed_probes()
    return over_seeds([(probes[0], probes[1]) for probes in seeds.probes], sum(layers_read_at_seeds()),
                      margins=_layers_read_margins())


def _filing_structure() -> dict:
    """Figure B's filing windows as the payload has it: windows, guesses per word, and whether every word has them."""
    from mlm_book.lab import FILING_TOP, viz_payload

    filings = viz_payload()["filings"]
    slots = [slot for window in filings["windows"] for slot in window["slots"] if slot is not None]
    return {"windows": len(filings["windows"]), "top": filings["top"], "words": len(slots),
            "every word has its guesses": all(len(slot["top"]) == FILING_TOP for slot in slots),
            "no [PAD] word": all(slot["word"] != "[PAD]" for slot in slots)}


def _within_rounding(shown: float, exact: float, digits: int) -> bool:
    """``shown`` is ``exact`` to ``digits`` significant digits: at most half a unit of the last digit away.

    The lab computes a window in one batch and chapter 7 all four centres in another, so the two
    floats may differ in their last bits, and a value on a rounding boundary may round either way:
    hence the comparison with the unrounded value (with 2 % slack on the half unit) rather than
    of two rounded strings.
    """
    if exact == 0.0:
        return shown == 0.0
    unit = 10.0 ** (math.floor(math.log10(abs(exact))) - digits + 1)
    return abs(shown - exact) <= 0.51 * unit


def _filing_centres() -> dict:
    """The filing view's readout at each window's centre, beside chapter 7's visible-word reading of that word.

    Chapter 7 reads a word at the centre of its own window, masked and visible
    (``filing_encoder.centre_proba``), and applies Theorem 2 under the encoder's channel; each
    window of the lab is centred on its word, so the two must agree to the payload's rounding.
    """
    import numpy as np

    from mlm_book.channel import optimum
    from mlm_book.artefacts import filing_encoder as fe
    from mlm_book.lab import FILING_DIGITS, viz_payload

    filings = viz_payload()["filings"]
    result = fe.trained_encoder()
    index = np.array([window["index"] for window in filings["windows"]], dtype=np.int64)
    words = fe.filing_world().ids[index]
    rows = np.arange(index.size)
    guess = fe.centre_proba(result, index, mask_centre=True)
    visible = fe.centre_proba(result, index, mask_centre=False)
    plugin = optimum(guess, words, fe.SETUP.channel(result.encoder.vocab_size))[rows, words]
    chapter = {"guess": guess[rows, words], "visible": visible[rows, words], "plugin": plugin}
    shown = {key: [window["slots"][filings["centre"]][key] for window in filings["windows"]] for key in chapter}
    agree = all(_within_rounding(a, b, FILING_DIGITS) for key in chapter for a, b in zip(shown[key], chapter[key]))
    return {"words": [window["word"] for window in filings["windows"]], "kept": shown["visible"],
            "plug-in": shown["plugin"], "equal to chapter 7's reading": agree}


def _kestrel_shown() -> dict:
    """Figure D's *kestrel* numbers as the payload has them, and whether they equal chapter 7's."""
    from mlm_book.artefacts import filing_encoder as fe
    from mlm_book.lab import viz_payload
    from mlm_book.readings.filing_baselines import baselines

    kestrel = viz_payload()["kestrel"]
    book, runs, static = fe.seed_results(), fe.all_seed_results(), baselines()
    keys = ("self_similarity", "baseline", "adjusted", "mev", "token_mev", "isotropic_mev")
    equal = kestrel["majority"] == static.kestrel_cap.accuracy and kestrel["alias_majority"] == static.alias_cap.accuracy
    for entry in kestrel["layers"]:
        layer = str(entry["layer"])
        geometry = book.geometry["kestrel"][layer]
        equal &= all(entry[key] == geometry[key] for key in keys)
        equal &= entry["probe"] == book.kestrel[layer] and entry["typing"] == book.typing[layer]
        equal &= entry["spread"]["probe"] == list(fe.spread([run.kestrel[layer] for run in runs]))
    layer0 = kestrel["layers"][0]
    return {"layer 1 adjusted": kestrel["layers"][1]["adjusted"], "layer 1 probe": kestrel["layers"][1]["probe"],
            "majority": kestrel["majority"], "equal to chapter 7": bool(equal),
            "layer 0 one point": layer0["single_point"] and kestrel["layer0_spread"] == 0.0}


def _recomputed_identically() -> dict:
    """The payload built twice from scratch (the lab's own caches cleared): same JSON? and its size in kB."""
    from mlm_book import lab

    first = lab.payload_json(lab.viz_payload())
    lab.clear_caches()
    second = lab.payload_json(lab.viz_payload())
    return {"identical": first == second, "kB": len(second.encode("utf-8")) / 1000}


def _probability(x) -> bool:
    return isinstance(x, float) and math.isfinite(x) and 0.0 <= x <= 1.0


CLAIMS = (
    Claim("S7-03", "Lab, Figure B: filing windows from chapter 7's held-out filings; clicking a word "
          "shows the filing encoder's best guesses with that word masked", seed="4 windows, top-5",
          rule="structural: 4 windows; 5 guesses at every word that is not [PAD]",
          compute=_filing_structure,
          accept=lambda v: v["windows"] == 4 and v["top"] == 5 and v["every word has its guesses"]
          and v["no [PAD] word"], section="figure-b-four-filing-windows-word-by-word"),
    Claim("S7-04", "Lab, Figure B filing readout: the encoder's probability of the visible word beside Theorem 2's "
          "plug-in from its own [MASK] guess (at each window's centre word)", seed="—",
          rule="structural: at each window's centre, chapter 7's visible-word reading of that word (S8-43 to S8-45) "
          "to the payload's 4 significant digits",
          compute=_filing_centres, accept=lambda v: v["equal to chapter 7's reading"],
          section="figure-b-four-filing-windows-word-by-word"),
    Claim("S7-06", "Lab, Figure D for kestrel: its mentions at layers 0-2 on their own principal axes beside "
          "Definition 3's measures, the probes and the majority shares", seed="—",
          rule="every number exactly chapter 7's (book seed, and mean ± sd over its seeds); layer 0 shown as one point",
          compute=_kestrel_shown, accept=lambda v: v["equal to chapter 7"] and v["layer 0 one point"],
          section="figure-d-the-clouds-of-w-and-kestrel-layer-by-layer"),
    Claim("S7-07", "Lab, Figure A default example (the default sentence's sense-a w shown as [MASK]): "
          "KL(exact posterior ‖ HMM encoder)", seed="0.016", rule="illustrative: reported; finite and ≥ 0",
          compute=lambda: _default_example()["kl"], accept=lambda v: math.isfinite(v) and v >= 0.0,
          section="figure-a-one-sentence-position-by-position"),
    Claim("S7-08", "Same example: the exact posterior's probability of the true token", seed="0.217",
          rule="illustrative: reported; a probability",
          compute=lambda: _default_example()["p_true_exact"], accept=_probability,
          section="figure-a-one-sentence-position-by-position"),
    Claim("S7-09", "Same example: the HMM encoder's probability of the true token (and the exact one)",
          seed="0.209", rule="illustrative: a probability, within 0.05 of the exact one",
          compute=lambda: {"encoder": _default_example()["p_true_encoder"],
                           "exact": _default_example()["p_true_exact"]},
          accept=lambda v: _probability(v["encoder"]) and abs(v["encoder"] - v["exact"]) <= 0.05,
          section="figure-a-one-sentence-position-by-position"),
    Claim("S7-10", "Same example: exact P(sense a | sentence) at that occurrence of w", seed="0.999",
          rule="illustrative: a probability; ≥ 0.99 (the sentence is chosen so)",
          compute=lambda: _default_example()["sense_a"], accept=lambda v: _probability(v) and v >= 0.99,
          section="figure-a-one-sentence-position-by-position"),
    Claim("S7-12", "Lab, Figure A caption: the encoder's mean KL to the exact posterior over the held-out "
          "positions, and the mean entropy (chapter 2's evaluation)", seed="0.032 vs 1.874 nats",
          rule="exactly chapter 2's numbers (S3-25, S3-26); KL < entropy",
          compute=_caption, accept=lambda v: v["equal to chapter 2"] and v["KL"] < v["entropy"],
          section="figure-a-one-sentence-position-by-position"),
    Claim("S7-14", "Lab, Figure D default (w, layer 1): self-similarity, baseline, adjusted, MEV, sense probe, "
          "static cap, exact Bayes", seed="0.620, 0.152, 0.467, 0.638, 0.963, 0.509, 0.970",
          rule="each exactly the chapters' table value (S5-09 to S5-12, S6-04, S2-16, S2-19)",
          compute=_clouds_default, accept=lambda v: v["equal to the tables"],
          section="figure-d-the-clouds-of-w-and-kestrel-layer-by-layer"),
    Claim("S7-16", "Lab, Figure D caption: the layer-0 probe sits at chance, the layer-1 probe almost at the "
          "exact Bayes accuracy (each training seed of chapter 5's table)", seed="—",
          rule="S6-03's and S6-04's rules together: layer-0 probe and control ≤ cap + 0.015; layer-1 probe in "
               "[Bayes − 0.02, Bayes + 0.005] and its control ≤ cap + 0.015",
          compute=_layers_read_over_seeds, accept=lambda v: True, expected="seed-dependent",
          section="figure-d-the-clouds-of-w-and-kestrel-layer-by-layer"),
    Claim("S10-14", "The lab's JSON payload is deterministic: rebuilt from scratch it is the same JSON, byte for "
          "byte (that the page holds exactly viz_payload() is the browser test); its size",
          seed="—", rule="identical; ≤ 1500 kB",
          compute=_recomputed_identically,
          accept=lambda v: v["identical"] and v["kB"] <= PAYLOAD_LIMIT / 1000, fmt=".0f", section="the-lab"),
)
