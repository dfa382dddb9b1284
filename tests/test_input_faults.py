"""Faults 4-7 of issue 10: valid input that raised, and bad input that was accepted.

Each test failed before its fix: a converged probe rejected by an absolute gradient
threshold (4), non-finite or impossible settings accepted (5), vocabularies that are no
vocabularies (6) and complex input cut to its real part with only a warning (7).
"""

import math

import numpy as np
import pytest

from mlm_book import cli, four_cycles, geometry, ising, probe, validation
from mlm_book.experiments import (
    ch01_static_vectors,
    ch02_objective,
    ch03_pseudo_likelihood,
    ch05_probing,
    ch06_finance,
    ch09_subwords,
    ch11_pseudo_likelihood,
)
from mlm_book.experiments import hmm_encoder as hmm_encoder_experiment
from mlm_book.readings import hmm_encoder as readings_hmm_encoder
from mlm_book.readings import span_scores
from mlm_book.finance import skipgram
from mlm_book.finance.vocab import SEP, UNK, Vocabulary, build_vocabulary
from mlm_book.nn.adam import Adam
from mlm_book.validation import as_float_array


# ----------------------------------------------------------------------------- fault 4
def stalled_fit_data():
    """Random labels on which Newton's full last step lands the objective one ulp *above* the
    previous value: the Armijo test rejected an exact step and the fit stalled at 1.8e-9."""
    rng = np.random.default_rng([1000, 8, 575])
    x = rng.standard_normal((1000, 8))
    y = (x[:, 0] + 3 * rng.standard_normal(1000) > 0).astype(int)
    return x, y


def test_probe_converged_below_float_resolution_is_accepted():
    x, y = stalled_fit_data()
    model = probe.fit_probe(x, y)  # raised "did not converge ... gradient 1.78e-09 > 1e-09"
    assert model.gradient_norm < probe.GRADIENT_TOLERANCE
    assert model.iterations < 10


def test_probe_criterion_still_rejects_an_unconverged_fit():
    x, y = stalled_fit_data()
    with pytest.raises(RuntimeError, match="did not converge"):
        probe.fit_probe(x, y, max_iter=1)


def test_shuffled_control_survives_a_stalling_permutation():
    x, y = stalled_fit_data()
    score = probe.shuffled_control(x[:700], y[:700], x[700:], y[700:], np.random.default_rng(0))
    assert 0.0 <= score.accuracy <= 1.0


# ----------------------------------------------------------------------------- fault 5
@pytest.mark.parametrize("tol", [math.nan, math.inf, -1.0, 0.0, "1e-9", None])
def test_fit_probe_refuses_bad_tol(tol):
    x, y = stalled_fit_data()
    with pytest.raises((ValueError, TypeError), match="tol"):
        probe.fit_probe(x, y, tol=tol)


@pytest.mark.parametrize("tolerance", [math.nan, math.inf, 0.0, -1e-10])
def test_ising_fits_refuse_bad_tolerance(tolerance):
    chain = ising.book_chain()
    with pytest.raises(ValueError, match="tolerance"):
        ising.fit_pseudo_likelihood(ising.expected_local_counts(chain), 1.0, tolerance=tolerance)
    stats = np.exp(ising.log_probabilities(chain)) @ ising.sufficient_statistics(ising.all_states(10))
    with pytest.raises(ValueError, match="tolerance"):
        ising.fit_maximum_likelihood(stats, 10, tolerance=tolerance)


@pytest.mark.parametrize("per", [None, -1.0, 0.0, math.nan, math.inf, "1", 1j])
def test_pseudo_likelihood_objective_refuses_bad_per(per):
    chain = ising.book_chain()
    with pytest.raises((ValueError, TypeError), match="per"):
        ising.pseudo_likelihood_objective(ising.expected_local_counts(chain), chain.theta, per)


@pytest.mark.parametrize("rtol", [math.nan, math.inf, -1.0, "small"])
def test_numerical_rank_refuses_bad_rtol(rtol):
    with pytest.raises((ValueError, TypeError), match="rtol"):
        geometry.numerical_rank(np.eye(3), rtol=rtol)


@pytest.mark.parametrize("lr", [math.nan, math.inf, -1.0, None])
def test_adam_refuses_bad_learning_rate_and_leaves_parameters(lr):
    theta = {"w": np.array([1.0, 2.0])}
    opt = Adam(theta)
    with pytest.raises((ValueError, TypeError), match="lr"):
        opt.step({"w": np.array([0.1, 0.1])}, lr=lr)
    assert theta["w"].tolist() == [1.0, 2.0] and opt.t == 0


@pytest.mark.parametrize("fused", [False, True])
def test_adam_refuses_non_finite_gradients(fused):
    if fused:
        buffer = np.array([1.0, 2.0, 3.0])
        theta = {"w": buffer[:2], "b": buffer[2:]}
    else:
        theta = {"w": np.array([1.0, 2.0]), "b": np.array([3.0])}
    opt = Adam(theta)
    assert opt.fused is fused
    with pytest.raises(ValueError, match="grads"):
        opt.step({"w": np.array([np.nan, 0.1]), "b": np.array([0.0])}, lr=0.1)
    with pytest.raises(ValueError, match="grads"):
        opt.step({"w": np.array([0.1]), "b": np.array([0.0])}, lr=0.1)  # wrong shape
    assert theta["w"].tolist() == [1.0, 2.0] and theta["b"].tolist() == [3.0] and opt.t == 0
    opt.step({"w": np.array([0.1, 0.1]), "b": np.array([0.0])}, lr=0.1)
    assert np.isfinite(theta["w"]).all() and opt.t == 1


def test_cosine_neighbours_refuses_more_neighbours_than_rows():
    vectors = np.random.default_rng(0).standard_normal((40, 3))
    with pytest.raises(ValueError, match="k must be at most 39"):
        skipgram.cosine_neighbours(vectors, 0, k=100)
    with pytest.raises(ValueError, match="k must be at most 37"):
        skipgram.cosine_neighbours(vectors, 0, k=39, exclude=(1, 2))
    with pytest.raises(ValueError, match="exclude"):
        skipgram.cosine_neighbours(vectors, 0, k=3, exclude=(40,))
    ids, cosines = skipgram.cosine_neighbours(vectors, 0, k=39)
    assert 0 not in ids and np.isfinite(cosines).all()


@pytest.mark.parametrize("k", [0, -1, 35, 1.5])
def test_lexicon_neighbour_agreement_refuses_bad_k(k):
    # k is checked before the chapter's results are built, so this trains nothing
    with pytest.raises((ValueError, TypeError), match="k must be"):
        ch06_finance.lexicon_neighbour_agreement(None, k=k)


# ----------------------------------------------------------------------------- fault 6
@pytest.mark.parametrize("words, counts, min_count, match", [
    ((UNK, SEP, "a", "a"), (0, 0, 5, 5), 5, "distinct"),
    ((UNK, SEP, "a"), (0, 0, -3), 5, "counts"),
    ((UNK, SEP, "a"), (0, 0, 5), -2, "min_count"),
    ((UNK, SEP, "a"), (0, 0), 5, "counts"),
    (("a", UNK, SEP), (5, 0, 0), 5, "words must start"),
    ("ab", (0, 0), 5, "words"),
    ((UNK, SEP, 3), (0, 0, 5), 5, "words"),
])
def test_vocabulary_refuses_inconsistent_fields(words, counts, min_count, match):
    with pytest.raises((ValueError, TypeError), match=match):
        Vocabulary(words=words, counts=counts, min_count=min_count)


@pytest.mark.parametrize("tokens", [None, "aaaaab", 5, ["a", None]])
def test_build_vocabulary_refuses_non_corpora(tokens):
    with pytest.raises(TypeError, match="tokens"):
        build_vocabulary(tokens, min_count=1)


# ----------------------------------------------------------------------------- fault 7
def test_complex_input_is_refused_not_cut():
    vectors = np.random.default_rng(0).standard_normal((30, 4))
    with pytest.raises(TypeError, match="vectors must be real"):
        geometry.mev(vectors + 3j)
    with pytest.raises(TypeError, match="x must be real"):
        as_float_array([1.0, 2 + 0j], "x")


# Issue 36's findings that the sweep could not reach or that slipped through: each now a clear error.
@pytest.mark.parametrize("call, error, named", [
    (lambda: validation.check_positive_int(3, "n", minimum=float("nan")), TypeError, "minimum"),
    (lambda: validation.check_table_size(float("nan"), 3, 10, "t"), TypeError, "base"),
    (lambda: ch03_pseudo_likelihood.gaussian_error_quantiles("nope"), ValueError, "which"),
    (lambda: ch03_pseudo_likelihood.gaussian_error_quantiles(draws=10**12), ValueError, "draws"),
    (lambda: cli.main("abc"), TypeError, "argv"),
    (lambda: ch05_probing.control_spread(n_permutations=10**12), ValueError, "n_permutations"),
    (lambda: ch05_probing.control_spread(layer=2.5), TypeError, "layer"),
])
def test_found_faults_are_clear_errors_before_any_work(call, error, named):
    with pytest.raises(error, match=named):
        call()


# ----------------------------------------------------------------------------- issue 36, by cause
# 1. Memoised functions check their arguments before the cache: an unhashable, None or
#    wrong-typed argument gets an error naming it, not "unhashable type" from functools.
def _chapter1_results(bad):
    return ch01_static_vectors.results(bad)


@pytest.mark.parametrize("call, named", [
    (_chapter1_results, "config"),
    (lambda bad: ch01_static_vectors._static_at_fixed_position(position=bad), "position"),
    (lambda bad: ch03_pseudo_likelihood.theorem3_ising(bad), "config"),
    (lambda bad: ch03_pseudo_likelihood.theorem3_hmm(bad), "lengths"),
    (lambda bad: ch03_pseudo_likelihood.population_check(bad), "config"),
    (lambda bad: ch03_pseudo_likelihood.estimator_sweep(bad), "config"),
    (lambda bad: ch03_pseudo_likelihood.gaussian_error_quantiles(bad), "which"),
    (lambda bad: ch03_pseudo_likelihood.brook_check(pairs=bad), "pairs"),
    (lambda bad: ch03_pseudo_likelihood.rebuild_check(bad), "length"),
    (lambda bad: ch03_pseudo_likelihood.random_joint_check(cycles=bad), "cycles"),
    (lambda bad: ch03_pseudo_likelihood.mask_kl(sequences=bad), "sequences"),
    (lambda bad: ch05_probing.control_spread(bad), "layer"),
    (lambda bad: ch05_probing.bayes_comparison(bad), "layer"),
    (lambda bad: hmm_encoder_experiment.key_bias_check(bad), "setup"),
    (lambda bad: four_cycles.exact_families(bad), "config"),
    (lambda bad: four_cycles.rho_sweep(bad), "config"),
    (lambda bad: readings_hmm_encoder.split_vectors(bad), "name"),
    (lambda bad: readings_hmm_encoder.evaluation(bad), "setup"),
    (lambda bad: readings_hmm_encoder.four_cycle_summary(bad), "setup"),
    (lambda bad: span_scores.scores(bad), "key"),
    (lambda bad: ch09_subwords._scores(bad), "key"),
    (lambda bad: ch02_objective.chi_square_check(batch=bad), "batch"),
    (lambda bad: ch02_objective.theorem1_random(size=bad), "size"),
    (lambda bad: ch02_objective.theorem1_fixed_count(rho=bad), "rho"),
    (lambda bad: ch02_objective.dense_agreement(bad), "rho"),
    (lambda bad: ch02_objective.brute_force_rows(bad), "config"),
    (lambda bad: ch02_objective.worked_example(position=bad), "position"),
    (lambda bad: ch02_objective.loss_gradient_check(bad), "seed"),
    (lambda bad: ch02_objective.shrinkage_curves(bad), "config"),
    (lambda bad: ch02_objective.filing_unigram_replacement([bad]), "setup"),
    (lambda bad: ch02_objective.count_chain_agreement(batch=bad), "batch"),
    (lambda bad: ch02_objective.visible_tokens([bad]), "setup"),
    (lambda bad: ch11_pseudo_likelihood.pl_sweep(bad), "config"),
    (lambda bad: ch11_pseudo_likelihood.consistency_summary(bad), "config"),
])
@pytest.mark.parametrize("bad", [[1, 2], {"a": 1}, None, "abc"])
def test_memoised_functions_check_before_the_cache(call, named, bad):
    if bad is None and named in ("name", "key", "which") or call is _chapter1_results:
        bad = 2.5  # these take a str (or None for the default); a float is refused the same way
    if named == "lengths" and isinstance(bad, list):
        bad = [0.5, 2]  # a list of lengths is valid
    with pytest.raises((TypeError, ValueError), match=named):
        call(bad)


# 2. Every size argument has an upper bound, named in the error.
@pytest.mark.parametrize("call, named", [
    (lambda: ch05_probing.control_spread(n_permutations=10**12), "n_permutations"),
    (lambda: ch05_probing.control_spread(layer=10**12), "layer"),
    (lambda: ch05_probing.bayes_comparison(layer=10**12), "layer"),
    (lambda: ch01_static_vectors._static_at_fixed_position(position=10**12), "position"),
    (lambda: ch01_static_vectors._static_at_fixed_position(sequences=10**12), "sequences"),
    (lambda: ch03_pseudo_likelihood.population_check(half_width=10**12), "half_width"),
    (lambda: ch03_pseudo_likelihood.theorem3_hmm((10**12,)), "lengths"),
    (lambda: ch03_pseudo_likelihood.brook_check(pairs=10**12), "pairs"),
    (lambda: ch03_pseudo_likelihood.rebuild_check(10**12), "length"),
    (lambda: ch03_pseudo_likelihood.random_joint_check(cycles=10**12), "cycles"),
    (lambda: ch03_pseudo_likelihood.mask_kl(sequences=10**12), "sequences"),
    (lambda: ch03_pseudo_likelihood.mask_kl(sequences=10**5, length=1000), "sequences=100000 of length=1000"),
    (lambda: hmm_encoder_experiment.key_bias_check(sequences=10**12), "sequences"),
    (lambda: ch02_objective.chi_square_check(batch=10**12), "batch"),
    (lambda: ch02_objective.chi_square_check(batch=10**5, length=10**4), "batch=100000 sentences of length=10000"),
    (lambda: ch02_objective.theorem1_random(size=10**12), "size"),
    (lambda: ch02_objective.theorem1_random(size=10**6, vocab=10**4), "size=1000000"),
    (lambda: ch02_objective.worked_example(position=10**12), "position"),
    (lambda: ch02_objective.count_chain_agreement(lengths=(10**12,)), "lengths"),
])
def test_sizes_have_a_named_upper_bound(call, named):
    with pytest.raises(ValueError, match=named) as caught:
        call()
    assert "in [" in str(caught.value) or "limit" in str(caught.value)  # the bound is said


def test_check_positive_int_states_its_maximum():
    with pytest.raises(ValueError, match=r"n must be an integer in \[1, 10\], got 11"):
        validation.check_positive_int(11, "n", maximum=10)
    with pytest.raises(TypeError, match="maximum"):
        validation.check_positive_int(3, "n", maximum=float("nan"))
    assert validation.check_positive_int(10, "n", maximum=10) == 10


# A degenerate size is refused too: a zero half-width grid has no other point (margin = inf).
def test_population_check_refuses_an_empty_grid():
    with pytest.raises(ValueError, match="half_width"):
        ch03_pseudo_likelihood.population_check(half_width=0)
    with pytest.raises(ValueError, match="spacing"):
        ch03_pseudo_likelihood.population_check(spacing=0.0)


# 3. The shared checks refuse NaN as a size or a bound, and non-bools as flags.
@pytest.mark.parametrize("call, error, named", [
    (lambda: validation.check_table_size(25, float("nan"), 10, "t"), TypeError, "exponent"),
    (lambda: validation.check_table_size(25, 3, float("nan"), "t"), TypeError, "limit"),
    (lambda: validation.check_positive_int(float("nan"), "size"), TypeError, "size"),
    (lambda: validation.check_bool("no", "permute_test"), TypeError, "permute_test"),
    (lambda: validation.check_bool(1, "annotate"), TypeError, "annotate"),
])
def test_shared_checks_refuse_nan_and_truthy_flags(call, error, named):
    with pytest.raises(error, match=named):
        call()


# 6. The study's chain is enumerated as far as `ising` enumerates (n <= 16, not 20).
def test_ising_study_config_stops_where_ising_does():
    with pytest.raises(ValueError, match=r"n must be an integer in \[2, 16\]"):
        ch03_pseudo_likelihood.IsingStudyConfig(n=17)
    assert ch03_pseudo_likelihood.IsingStudyConfig(n=16).n == 16


# 4. A result or config of the wrong type is named, not an AttributeError deep inside.
def test_span_table_names_a_wrong_result():
    from mlm_book.experiments import ch10_span_masking
    with pytest.raises(TypeError, match="r must be SpanMasking"):
        ch10_span_masking.span_table("abc")
