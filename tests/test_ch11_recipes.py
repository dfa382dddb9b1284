"""Tests of chapter 11's recipe variants: the setups, the measurement pieces and (on the book's artefacts) the rules.

The variants change exactly one choice of the book's recipe; the unigram law is the HMM's; the
calibration error is right on hand-made cases; the exact fixed-count posterior lands in the row of
its position; and, on the trained encoders, the measurements are consistent with chapter 2's
evaluation and the rules get the verdicts the chapter states.
"""

from dataclasses import replace

import numpy as np
import pytest

from mlm_book import ledger
from mlm_book.artefacts import hmm_encoder as he
from mlm_book.artefacts import variant_measurements as vm
from mlm_book.bruteforce import fixed_count_posterior
from mlm_book.channel import Channel, corrupt
from mlm_book.hmm import default_hmm, sample


# ----------------------------------------------------------------------------- the setups
@pytest.mark.parametrize("name", he.VARIANTS)
def test_a_variant_changes_one_choice_of_the_book_recipe(name):
    variant = he.variant_setup(name, 3)
    book = he.seed_setup(3)
    differences = [field for field in ("selection", "replacement", "rho", "mask", "random", "length", "training")
                   if getattr(variant, field) != getattr(book, field)]
    encoder = [field for field in ("head", "tied", "n_blocks", "d_model", "n_heads", "length", "mlp_ratio")
               if getattr(variant.encoder, field) != getattr(book.encoder, field)]
    assert len(differences) + len(encoder) == 1, (differences, encoder)
    assert variant.training == book.training         # same schedule and seed: paired initial draws


def test_variant_seeds_and_bad_names():
    assert all(len(he.variant_seeds(name)) == (5 if name in he.COMPARED else 3) for name in he.VARIANTS)
    assert len(set(he.variant_setups())) == sum(len(he.variant_seeds(name)) for name in he.VARIANTS)
    with pytest.raises(ValueError, match="name must be one of"):
        he.variant_setup("wider")
    with pytest.raises(ValueError, match="selection must be one of"):
        replace(he.SETUP, selection="bert")
    with pytest.raises(ValueError, match="replacement must be one of"):
        replace(he.SETUP, replacement=None)
    with pytest.raises(ValueError, match="needs the HMM's vocabulary"):
        replace(he.SETUP, replacement="unigram", encoder=replace(he.SETUP.encoder, vocab_size=10))


def test_the_unigram_law_is_the_hmms_marginal():
    hmm = default_hmm()
    u = he.unigram_replacement()
    assert np.allclose(u, hmm.initial @ hmm.emission, rtol=0, atol=1e-9)
    assert abs(u.sum() - 1) < 1e-15
    _, tokens = sample(hmm, 4000, 24, np.random.default_rng(0))
    counts = np.bincount(tokens.ravel(), minlength=len(u)) / tokens.size
    assert np.abs(counts - u).max() < 5 * np.sqrt(u.max() / tokens.size)      # the sampler agrees


def test_the_channels_follow_the_setup():
    assert he.variant_setup("fixed-count").channel().selection == "fixed"
    assert np.array_equal(he.variant_setup("unigram").channel().replacement, he.unigram_replacement())
    assert he.SETUP.channel().selection == "independent" and he.SETUP.channel().replacement is None


# ----------------------------------------------------------------------------- measurement pieces
def test_calibration_error_on_hand_made_cases():
    rng = np.random.default_rng(1)
    confidence = rng.uniform(0.2, 1.0, size=500)
    assert vm.expected_calibration_error(confidence, confidence) == 0.0              # calibrated
    assert abs(vm.expected_calibration_error(confidence, confidence - 0.1) - 0.1) < 1e-12  # uniformly over by 0.1
    # one bin holding everything: |mean confidence - mean accuracy|
    assert abs(vm.expected_calibration_error([0.55, 0.58], [0.2, 0.3], bins=1) - 0.315) < 1e-12
    with pytest.raises(ValueError, match="one shape"):
        vm.expected_calibration_error([0.5], [0.5, 0.6])
    with pytest.raises(ValueError, match="bins must be"):
        vm.expected_calibration_error([0.5], [0.5], bins=0)


def test_the_exact_fixed_count_posterior_lands_in_the_row_of_its_position():
    hmm = default_hmm()
    channel = Channel(hmm.vocab_size, rho=0.3, selection="fixed")
    _, tokens = sample(hmm, 12, 8, np.random.default_rng(2))
    batch = corrupt(channel, tokens, np.random.default_rng(3))
    rows = vm._exact(hmm, channel, batch.shown, batch.selected)
    b, i = np.nonzero(batch.selected)
    for row, (sentence, position) in enumerate(zip(b, i)):
        expected = fixed_count_posterior(hmm, channel, batch.shown[sentence:sentence + 1], int(position))[0]
        assert np.allclose(rows[row], expected, rtol=0, atol=1e-13)


def test_the_display_channels():
    setup = he.variant_setup("unigram")
    assert vm._display_channel(setup, "own") == setup.channel()
    assert vm._display_channel(setup, "independent") == he.SETUP.channel()
    assert vm._display_channel(setup, "fixed").selection == "fixed"
    with pytest.raises(TypeError, match="encoder must be"):
        vm.MeasurementSetup(he.SETUP.training)


# ----------------------------------------------------------------------------- on the book's artefacts
@pytest.mark.book
def test_the_book_recipe_measured_as_chapter_2_evaluates_it():
    from mlm_book.readings.hmm_encoder import evaluation
    arrays = vm.measured(vm.MeasurementSetup(he.SETUP))
    ev = evaluation(he.SETUP)
    # the same encoder, sentences and channel, other display draws: two estimates of one mean KL, each with
    # about the standard error measured here, agree within four standard errors of their difference
    gap = abs(arrays["own/kl"][0] - ev.mean_kl)
    assert gap < 4 * np.sqrt(2) * arrays["own/kl"][1], (arrays["own/kl"], ev.mean_kl)
    kept, plugin, exact = arrays["own/kept"]
    assert 0 < kept < 1 and 0 < plugin < 1 and 0 < exact < 1
    assert arrays["probe"].shape == (he.SETUP.encoder.n_blocks + 1,)


@pytest.mark.book
def test_the_rules_get_the_verdicts_the_chapter_states():
    from mlm_book.experiments import ch11_recipes as recipes
    results = ledger.verify(claims=recipes.CLAIMS)
    assert [result.claim.id for result in results] == list(recipes.STATED_BEFORE_RUN)
    assert all(result.passed for result in results), [(r.claim.id, r.verdict) for r in results]
