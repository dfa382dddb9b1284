r"""The lab's claims: the numbers its figures show, judged like the chapters' numbers.

The lab page (``docs/lab.md``) draws what [`mlm_book.lab.viz_payload`][mlm_book.lab.viz_payload]
computes. The claims here read that payload:

* Figure A's default example (the default sentence, its sense-a occurrence of $w$ shown as
  ``[MASK]``): the KL from the exact posterior to the encoder's prediction, the probability
  each gives the true token, and $P(\text{sense a} \mid x)$. These depend on the example and are
  illustrative: each is reported and judged only as what it is (finite, a probability), the
  encoder's probability also as close to the exact one;
* the caption's held-out mean KL and entropy, which must be chapter 2's exactly;
* Figure B's numbers at layer 1, which must equal chapter 4's and chapter 5's tables exactly,
  and its caption's reading of layers 0 and 1 (chance, then almost Bayes);
* the payload is deterministic: recomputed from scratch it gives the same JSON, byte for byte.
  That the page holds exactly this JSON is checked by the site's browser test
  (``tests/test_lab.py``).

Figure B's MEV of random tokens ("MEV (its baseline)") is chapter 4's claim S7-15
([`mlm_book.experiments.ch04_geometry`][mlm_book.experiments.ch04_geometry]); the payload copies it.
"""

from __future__ import annotations

import math

from mlm_book.ledger import Claim

__all__ = ["PAYLOAD_LIMIT", "default_example", "figure_b_default", "recomputed_identically", "CLAIMS"]

PAYLOAD_LIMIT = 1_500_000
"""Largest size of the lab's JSON payload in bytes (UTF-8)."""


def default_example() -> dict:
    """Figure A's default example as the payload has it: KL, the true token's probabilities, the sense posterior."""
    from mlm_book.lab import viz_payload

    hmm = viz_payload()["hmm"]
    position, display = hmm["default"]["position"], hmm["default"]["display"]
    view = hmm["views"][position][display]
    sense = hmm["sense_posterior"][hmm["w_positions"].index(position)]
    return {"position": position, "display": display, "kl": view["kl"], "p_true_exact": view["p_true_exact"],
            "p_true_encoder": view["p_true_encoder"], "sense_a": sense[0]}


def _caption() -> dict:
    from mlm_book.experiments import hmm_encoder
    from mlm_book.lab import viz_payload

    caption = viz_payload()["hmm"]["caption"]
    evaluation = hmm_encoder.evaluation()
    return {"KL": caption["mean_kl"], "entropy": caption["mean_entropy"],
            "equal to chapter 2": caption["mean_kl"] == evaluation.mean_kl
            and caption["mean_entropy"] == evaluation.mean_entropy}


def figure_b_default(layer: int = 1) -> dict:
    """Figure B's numbers at ``layer`` as the payload has them, and whether they equal the chapters' tables."""
    from mlm_book.experiments import ch04_geometry, ch05_probing
    from mlm_book.lab import viz_payload

    clouds = viz_payload()["clouds"]
    shown = clouds["layers"][layer]
    g = ch04_geometry.geometry_table().rows[layer].geometry
    probes = ch05_probing.probe_table()
    values = {"self-similarity": shown["self_similarity"], "baseline": shown["baseline"],
              "adjusted": shown["adjusted"], "MEV": shown["mev"], "probe": shown["probe"], "cap": clouds["cap"],
              "Bayes": clouds["bayes"]}
    tables = {"self-similarity": g.self_similarity, "baseline": g.baseline, "adjusted": g.adjusted, "MEV": g.mev,
              "probe": probes.rows[layer].probe, "cap": probes.cap, "Bayes": probes.bayes}
    return {**values, "equal to the tables": all(values[key] == float(tables[key]) for key in tables)}


def _layers_read() -> dict:
    from mlm_book.lab import viz_payload

    clouds = viz_payload()["clouds"]
    return {"layer 0": clouds["layers"][0]["probe"], "layer 1": clouds["layers"][1]["probe"],
            "cap": clouds["cap"], "Bayes": clouds["bayes"]}


def recomputed_identically() -> dict:
    """The payload built twice from scratch (the lab's own caches cleared): same JSON? and its size in kB."""
    from mlm_book import lab

    first = lab.payload_json(lab.viz_payload())
    for cached in (lab._hmm_view, lab._cycle_view, lab._cloud_view, lab.default_sentence):
        cached.cache_clear()
    second = lab.payload_json(lab.viz_payload())
    return {"identical": first == second, "kB": len(second.encode("utf-8")) / 1000}


def _probability(x) -> bool:
    return isinstance(x, float) and math.isfinite(x) and 0.0 <= x <= 1.0


CLAIMS = (
    Claim("S7-07", "Lab, Figure A default example (the default sentence's sense-a w shown as [MASK]): "
          "KL(exact posterior ‖ HMM encoder)", seed="0.016", rule="illustrative: reported; finite and ≥ 0",
          compute=lambda: default_example()["kl"], accept=lambda v: math.isfinite(v) and v >= 0.0),
    Claim("S7-08", "Same example: the exact posterior's probability of the true token", seed="0.217",
          rule="illustrative: reported; a probability",
          compute=lambda: default_example()["p_true_exact"], accept=_probability),
    Claim("S7-09", "Same example: the HMM encoder's probability of the true token (and the exact one)",
          seed="0.209", rule="illustrative: a probability, within 0.05 of the exact one",
          compute=lambda: {"encoder": default_example()["p_true_encoder"],
                           "exact": default_example()["p_true_exact"]},
          accept=lambda v: _probability(v["encoder"]) and abs(v["encoder"] - v["exact"]) <= 0.05),
    Claim("S7-10", "Same example: exact P(sense a | sentence) at that occurrence of w", seed="0.999",
          rule="illustrative: a probability; ≥ 0.99 (the sentence is chosen so)",
          compute=lambda: default_example()["sense_a"], accept=lambda v: _probability(v) and v >= 0.99),
    Claim("S7-12", "Lab, Figure A caption: the encoder's mean KL to the exact posterior over the held-out "
          "positions, and the mean entropy (chapter 2's evaluation)", seed="0.032 vs 1.874 nats",
          rule="exactly chapter 2's numbers (S3-25, S3-26); KL < entropy",
          compute=_caption, accept=lambda v: v["equal to chapter 2"] and v["KL"] < v["entropy"]),
    Claim("S7-14", "Lab, Figure B default (w, layer 1): self-similarity, baseline, adjusted, MEV, sense probe, "
          "static cap, exact Bayes", seed="0.620, 0.152, 0.467, 0.638, 0.963, 0.509, 0.970",
          rule="each exactly the chapters' table value (S5-09 to S5-12, S6-04, S2-16, S2-19)",
          compute=figure_b_default, accept=lambda v: v["equal to the tables"]),
    Claim("S7-16", "Lab, Figure B caption: the layer-0 probe sits at chance, the layer-1 probe almost at the "
          "exact Bayes accuracy", seed="—", rule="as S6-03 / S6-04: layer 0 ≤ cap + 0.015; layer 1 ≥ Bayes − 0.02",
          compute=_layers_read,
          accept=lambda v: v["layer 0"] <= v["cap"] + 0.015 and v["layer 1"] >= v["Bayes"] - 0.02),
    Claim("S10-14", "The lab's JSON payload is deterministic: rebuilt from scratch it is the same JSON, byte for "
          "byte (that the page holds exactly viz_payload() is the browser test); its size",
          seed="—", rule="identical; ≤ 1500 kB",
          compute=recomputed_identically,
          accept=lambda v: v["identical"] and v["kB"] <= PAYLOAD_LIMIT / 1000, fmt=".0f"),
)
