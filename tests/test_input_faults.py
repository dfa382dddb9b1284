"""Faults 4-7 of issue 10: valid input that raised, and bad input that was accepted.

Each test failed before its fix: a converged probe rejected by an absolute gradient
threshold (4), non-finite or impossible settings accepted (5), vocabularies that are no
vocabularies (6) and complex input cut to its real part with only a warning (7).
"""

import math

import numpy as np
import pytest

from mlm_book import cli, geometry, ising, probe, validation
from mlm_book.experiments import ch03_pseudo_likelihood, ch05_probing, ch06_finance
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
