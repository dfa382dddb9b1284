"""Registered valid calls of the chapters' store readers, for the book tier of the bad-input sweep.

The callables here are the public tables, figures, studies and readers of ``mlm_book.experiments``
and ``mlm_book.readings`` whose default reads the book's trained artefacts, so no store-free
doctest can call them and ``tests/test_bad_inputs.py`` has no recorded example for them.
``tests/test_bad_inputs_book.py`` drives them instead, from the valid call registered here:

* a dict is the call's keyword arguments, ``{}`` the default call (the book's run);
* a zero-argument function returns them, for arguments that are themselves read from the store
  (the fields of the book's result record, the chapter's example sentence), computed only when
  the book tier runs.

Where a function needs arguments, they are the smallest valid ones its chapter passes. This
module imports nothing from the package at import time, so ``tests/test_bad_inputs.py`` can read
its keys (to leave these callables to the book tier) without reading the store.
"""

from __future__ import annotations

import dataclasses
import importlib


def _module(name: str):
    return importlib.import_module(f"mlm_book.{name}")


def _fields(module: str, function: str, pick=lambda result: result):
    """The fields of ``pick(module.function())`` (a result record the book's run makes) as keyword arguments."""
    def arguments():
        record = pick(getattr(_module(module), function)())
        return {field.name: getattr(record, field.name) for field in dataclasses.fields(record)}
    return arguments


def _reading(module: str, build):
    """Arguments computed by ``build(module)`` when the tier runs (they read the store)."""
    return lambda: build(_module(module))


def _first_setup(module: str):
    """``{"setup": <the kind's first book setup>}`` (``module.book_setups()[0]``), read when the tier runs."""
    return _reading(f"artefacts.{module}", lambda found: {"setup": found.book_setups()[0]})


_CH7 = "mlm_book.experiments.ch07_encoder."
_CH8I = "mlm_book.experiments.ch08_inference."
_CH8 = "mlm_book.experiments.ch08_pairs."
_CH9 = "mlm_book.experiments.ch09_spans."
_SUB = "mlm_book.experiments.ch09_subwords."
_SPANS = "mlm_book.readings.span_scores."
#: The chapter's top tagger (chapter 9 reads its partial spans and token accuracy).
_TOP = "frozen/2/argmax"

REGISTERED: dict[str, dict | object] = {
    # chapter 4: the principal-axes figure and the seed table of the HMM encoder
    "mlm_book.experiments.ch04_geometry.plot_principal_axes": {},
    "mlm_book.experiments.ch04_geometry.seed_robustness": {},
    # chapter 5: the probes on the HMM encoder
    "mlm_book.experiments.ch05_probing.bayes_comparison": {},
    "mlm_book.experiments.ch05_probing.control_spread": {},
    "mlm_book.experiments.ch05_probing.figure_probes": {},
    "mlm_book.experiments.ch05_probing.probe_markdown": {},
    # chapter 6: the skip-gram baseline's seeds
    "mlm_book.experiments.ch06_finance.skipgram_seed_table": {},
    "mlm_book.experiments.ch06_finance.skipgram_seeds": {},
    # chapter 7: the filing encoder
    **{_CH7 + name: {} for name in (
        "book", "ce_table", "encoder_sizes", "figure_cue", "figure_loss", "figure_polarity_words", "figure_typing",
        "figure_visible", "geometry_table", "kestrel_folds_table", "kestrel_table", "layer0_baseline_parts",
        "lexicon_table", "polarity_table", "polarity_words_table", "probe_kestrel", "probe_news", "read_word",
        "size_table", "training_table", "typing_table", "visible_by_frequency", "visible_table")},
    "mlm_book.experiments.ch07_prompting.figure_learning_curve": {},
    "mlm_book.experiments.ch07_prompting.learning_curve_table": {},
    "mlm_book.experiments.ch07_prompting.prompt_accuracy": {"words": (("bad",), ("good",))},
    "mlm_book.experiments.ch07_prompting.prompt_profile": {},
    "mlm_book.experiments.ch07_prompting.rules_table": {},
    # chapter 8: entailment, then pre-training on pairs
    **{_CH8I + name: {"source": "nsp", "schedule": "1000 steps"} for name in (
        "accuracies", "answer_shares", "confusion", "direction_agreement", "error_by_overlap")},
    **{_CH8I + name: {} for name in ("accuracy_table", "error_table", "figure_inference", "kind_table")},
    _CH8 + "band": {"source": "nsp", "key": "mlm/pairs"},
    _CH8 + "curve_table": {"source": "nsp"},
    _CH8 + "final_losses": {"variant": "nsp"},
    _CH8 + "nsp_balanced_accuracy": {"negatives": "other"},
    _CH8 + "plateau": {"variant": "packed"},
    _CH8 + "transfer_gain": {"source": "nsp", "size": 64},
    **{_CH8 + name: {} for name in (
        "figure_curves", "figure_input", "figure_losses", "figure_nsp", "figure_probes", "mismatch_table",
        "mlm_table", "news_fine_tune", "news_probe", "nsp_table", "probe_table")},
    # chapter 9: spans and subwords
    _CH9 + "bootstrap": {"key_a": "crf/2/viterbi", "key_b": "frozen/2/viterbi"},
    _CH9 + "figure_sentence": _reading("experiments.ch09_spans", lambda ch9: {
        "sentence": ch9.example_sentence(), "keys": ("frozen/0/argmax", "frozen/2/argmax", "crf/2/viterbi")}),
    _CH9 + "known_recall": {"kind": "LOC"},
    _CH9 + "mean_f1": {"key": "frozen/0/viterbi"},
    _CH9 + "mention_count": {"kind": "PERSON"},
    _CH9 + "mention_pieces": {"kind": "PERSON"},
    _CH9 + "partial_spans": {"key": _TOP},
    _CH9 + "split_table": _reading("experiments.ch09_spans", lambda ch9: {
        "words": ch9.unknown_words(ch9.example_sentence())}),
    _CH9 + "token_accuracies": {"key": _TOP},
    _CH9 + "unknown_recall": {"kind": "LOC"},
    _CH9 + "unknown_share": {"kind": "LOC"},
    _CH9 + "unknown_words": _reading("experiments.ch09_spans", lambda ch9: {"sentence": ch9.example_sentence()}),
    **{_CH9 + name: {} for name in (
        "anonymisation", "example_sentence", "figure_f1", "figure_subwords", "io_example", "matched_statistics",
        "minimum_count", "score_table", "word_vocabulary_rates")},
    "mlm_book.experiments.ch09_states.StatesStudy": _fields("experiments.ch09_states", "results"),
    "mlm_book.experiments.ch09_states.figure_positions": {},
    "mlm_book.experiments.ch09_states.rules_table": {},
    "mlm_book.experiments.ch09_states.summary_table": {},
    _SUB + "decoder_gap": {"name": "tuned/2/argmax"},
    _SUB + "mean_f1": {"key": "frozen/2/mean/viterbi"},
    _SUB + "unknown_recall": {"kind": "LOC", "key": "frozen/2/mean/viterbi"},
    **{_SUB + name: {} for name in ("f1_table", "figure_decoders", "figure_losses", "split_words",
                                    "training_seconds")},
    # chapter 10: the caveats' readers, encoder–decoders, many languages, replaced tokens
    **{f"mlm_book.experiments.ch10_causal.{name}": {} for name in (
        "collapse_steps", "figure_copy_head", "figure_readers", "probe_table")},
    "mlm_book.experiments.ch10_encoder_decoder.EncoderDecoderStudy": _fields("experiments.ch10_encoder_decoder",
                                                                              "results"),
    "mlm_book.experiments.ch10_encoder_decoder.rules_table": {},
    "mlm_book.experiments.ch10_multilingual.MultilingualStudy": _fields("experiments.ch10_multilingual", "results"),
    **{f"mlm_book.experiments.ch10_multilingual.{name}": {} for name in (
        "alone_table", "bleed_table", "curse_table", "figure_curse", "figure_excess", "rules_table", "sense_table",
        "sweep_table")},
    **{f"mlm_book.experiments.ch10_replaced_tokens.{name}": {} for name in (
        "budget_table", "figure_probes", "rules_table")},
    # chapter 11: the caveats answered by experiment
    "mlm_book.experiments.ch11_incompatibility.trained_rules_table": {},
    "mlm_book.experiments.ch11_incompatibility.training_gaps": {},
    "mlm_book.experiments.ch11_lora.LoraStudy": _fields("experiments.ch11_lora", "results"),
    **{f"mlm_book.experiments.ch11_lora.{name}": {} for name in ("figure_parameters", "rules_table",
                                                                  "summary_table")},
    "mlm_book.experiments.ch11_polarity.results": {},
    "mlm_book.experiments.ch11_probes.filing_controls": {},
    **{f"mlm_book.experiments.ch11_recipes.{name}": {} for name in (
        "comparison_table", "figure_recipes", "kept_and_geometry_table", "rules_table", "sweep_table")},
    "mlm_book.experiments.ch11_retrieval.RetrievalStudy": _fields("experiments.ch11_retrieval", "results"),
    **{f"mlm_book.experiments.ch11_retrieval.{name}": {} for name in ("figure_retrieval", "rules_table",
                                                                       "summary_table")},
    **{f"mlm_book.experiments.ch11_sparse.{name}": {} for name in (
        "diagnosis_table", "figure_sparse", "rules_table", "summary_table", "top_terms_table")},
    "mlm_book.experiments.ch11_shortfall.ShortfallStudy": _fields("experiments.ch11_shortfall", "results"),
    **{f"mlm_book.experiments.ch11_shortfall.{name}": {} for name in ("figure_shortfall", "rules_table",
                                                                       "seed_table")},
    "mlm_book.experiments.ch11_verb_distance.VerbDistanceStudy": _fields("experiments.ch11_verb_distance",
                                                                          "results"),
    **{f"mlm_book.experiments.ch11_verb_distance.{name}": {} for name in ("figure_distance", "rules_table",
                                                                           "seed_table")},
    **{f"mlm_book.experiments.ch11_untied_filing.{name}": {} for name in ("rules_table", "seed_table")},
    # the HMM encoder of chapters 2-5
    **{f"mlm_book.experiments.hmm_encoder.{name}": {} for name in (
        "gradient_check_result", "key_bias_check", "loss_curve_figure")},
    # the readings several chapters share
    "mlm_book.readings.filing_baselines.skipgram_seeds": {},
    "mlm_book.readings.filing_baselines.unigram_cross_entropy": {},
    "mlm_book.readings.hmm_encoder.EncoderEvaluation": _fields("readings.hmm_encoder", "evaluation"),
    "mlm_book.readings.hmm_encoder.encoder_conditionals": {
        "tokens": [[0, 1, 2, 3], [4, 5, 6, 7]], "positions": [1, 3]},
    "mlm_book.readings.hmm_encoder.evaluation": {},
    "mlm_book.readings.hmm_encoder.four_cycle_summary": {},
    "mlm_book.readings.hmm_encoder.hidden_states": {"tokens": [[0, 1, 2]]},
    "mlm_book.readings.hmm_encoder.split_vectors": {"name": "test"},
    "mlm_book.readings.hmm_encoder.token_table": {},
    "mlm_book.readings.sense_probes.seed_probes": {},
    _SPANS + "predicted_spans": {"key": _TOP},
    _SPANS + "predictions": {"key": _TOP},
    _SPANS + "scores": {"key": _TOP},
    # the artefact modules' own readers: each returns a stored run (trained when missing, which the tier's
    # MLM_BOOK_BUILD_NOTHING forbids); the registered call is the book's first run of the kind
    **{f"mlm_book.artefacts.{name}": {} for name in (
        "filing_controls.filing_controls", "filing_encoder.all_seed_results", "filing_encoder.seed_results",
        "hmm_encoder_checkpoints.checkpointed_run", "next_token_measurements.measured", "pair_encoder.measurements",
        "pair_encoder.pretrain", "probe_caveats.causal_test", "probe_caveats.control_tasks",
        "probe_caveats.stride_leak", "sense_controls.split_occurrences", "skipgram.seed_runs")},
    **{f"mlm_book.artefacts.{name}": _first_setup(name.split(".")[0]) for name in (
        "filing_polarity.measured", "lora_runs.lora_runs", "next_token.trained", "prompting.prompting_run",
        "sense_controls.controls", "sparse_weights.weights", "untied_filing.measured",
        "untied_filing.trained_untied", "variant_measurements.measured", "verb_distance.measured")},
    "mlm_book.artefacts.next_token.trained_reader": {"causal": True},
    **{f"mlm_book.artefacts.pair_encoder.{name}": {"seed": 20240601} for name in (
        "chapter6_transfer", "filing_pair_encoder", "scratch")},
    "mlm_book.artefacts.subword_encoder.trained_encoder": {"seed": 20240601},
    # the lab's payload: no arguments, so only its valid call is checked (it must read the store whole)
    "mlm_book.lab.viz_payload": {},
}
"""Key (``module.name``) -> the registered valid call: keyword arguments, or a function returning them."""


def arguments(key: str) -> dict:
    """The registered valid call's keyword arguments (computed now if they are read from the store)."""
    found = REGISTERED[key]
    return dict(found() if callable(found) else found)
