"""Chapter 11's fine-tuning caveat (Q10): the design, the exercises' helpers, bad inputs, and the runs' statements."""

import matplotlib

matplotlib.use("Agg")

import numpy as np
import pytest

from mlm_book import ledger
from mlm_book.artefacts import lora_runs
from mlm_book.experiments import ch11_lora as q10


def test_the_design_counts_are_the_trained_arrays_sizes():
    plan = q10.design()
    assert plan.counts["lora-8"] == 8 * 2 * ((64 + 192) + (64 + 64)) + 65 * 2   # two blocks, W_qkv and W_o
    assert plan.counts["lora-1"] == 2 * ((64 + 192) + (64 + 64)) + 65 * 2
    assert plan.counts["frozen"] == 130 and plan.counts["probe"] == 65
    assert q10.rank_counts((1, 8)) == {1: plan.counts["lora-1"], 8: plan.counts["lora-8"]}
    # every method but the probe shares the run seed of a draw (rows, head, batches); only the rate differs
    setup = lora_runs.book_setups()[0]
    seeds = {lora_runs.run_settings(setup, m, 1).seed for m in lora_runs.methods(setup) if m != "probe"}
    assert len(seeds) == 1


def test_a_gets_no_gradient_while_b_is_zero():
    g = q10.first_step_gradients(rank=2, seed=3)
    assert g["A"] == 0.0 and g["B"] > 1e-6


@pytest.mark.parametrize("call, error, words", [
    (lambda: q10.rank_counts("8"), TypeError, "ranks"),
    (lambda: q10.rank_counts((0,)), ValueError, "ranks"),
    (lambda: q10.first_step_gradients(rank=0), ValueError, "rank"),
    (lambda: q10.summary_table("study"), TypeError, "study"),
    (lambda: lora_runs.run_settings(lora_runs.book_setups()[0], "lora-3", 0), ValueError, "method"),
    (lambda: lora_runs.LoraSetup(lora_runs.book_setups()[0].encoder, k=7), ValueError, "k"),
    (lambda: lora_runs.LoraSetup(lora_runs.book_setups()[0].encoder, rates=(("full", 1e-3),)), ValueError, "rates"),
    (lambda: lora_runs.lora_runs("setup"), TypeError, "setup"),
])
def test_bad_inputs_name_the_argument(call, error, words):
    with pytest.raises(error, match=words):
        call()


@pytest.mark.book
def test_the_runs_and_the_rules():
    study = q10.results()
    assert len(study.seeds) == 5 and study.n_test == 163
    for m in study.methods:
        assert study.accuracy[m].shape == (5, 3)
        assert np.all((study.accuracy[m] >= 0) & (study.accuracy[m] <= 1))
    # every trained adapted method fitted its sentences (the pilot's plateau held at every run)
    for m in ("lora-8", "full"):
        assert study.final_loss[m].max() < 0.05, m
    results = ledger.verify(claims=q10.CLAIMS)
    assert [r.claim.id for r in results] == list(q10.STATED_BEFORE_RUN)  # every prestated rule registered
    assert all(r.passed for r in results)                                  # the verdicts the chapter states
    assert q10.figure_parameters().alt.startswith("Held-out accuracy")
