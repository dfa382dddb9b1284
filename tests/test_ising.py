"""Tests for mlm_book.ising: exact identities, exact sampling, estimators, bad input."""

import numpy as np
import pytest

from mlm_book import ising
from mlm_book.ising import (
    IsingChain,
    all_states,
    asymptotic_covariances,
    book_chain,
    expected_local_counts,
    fit_maximum_likelihood,
    fit_pseudo_likelihood,
    full_conditionals,
    local_counts,
    log_likelihood_objective,
    log_partition,
    log_probabilities,
    log_pseudo_likelihood,
    masked_risk,
    pseudo_likelihood_objective,
    sample,
    sample_state_counts,
    state_local_counts,
    sufficient_statistics,
)

CHAINS = [book_chain(), IsingChain(2, -0.7, 1.3), IsingChain(5, 0.0, -0.8), IsingChain(7, 1.1, 0.05)]


def _state_index(spins):
    n = spins.shape[-1]
    return ((spins + 1) // 2) @ (2 ** np.arange(n - 1, -1, -1))


@pytest.mark.parametrize("chain", CHAINS)
def test_transfer_matrix_normaliser_equals_enumeration(chain):
    stats = sufficient_statistics(all_states(chain.n))
    brute = np.logaddexp.reduce(stats @ chain.theta)
    assert abs(log_partition(chain) - brute) < 1e-12
    assert abs(np.exp(log_probabilities(chain)).sum() - 1.0) < 1e-12


def test_all_states_are_distinct_and_complete():
    states = all_states(6)
    assert states.shape == (64, 6)
    assert len(np.unique(_state_index(states))) == 64


@pytest.mark.parametrize("chain", CHAINS)
def test_full_conditionals_equal_ratios_of_the_joint(chain):
    states = all_states(chain.n)
    p = np.exp(log_probabilities(chain))
    conditional = full_conditionals(states, chain.h, chain.J)
    for i in range(chain.n):
        up, down = states.copy(), states.copy()
        up[:, i], down[:, i] = 1, -1
        p_up, p_down = p[_state_index(up)], p[_state_index(down)]
        assert np.abs(conditional[:, i] - p_up / (p_up + p_down)).max() < 1e-13


def test_pseudo_likelihood_from_counts_equals_direct_sum():
    rng = np.random.default_rng(5)
    spins = sample(book_chain(), 300, rng)
    for theta in ([0.2, 0.5], [-1.0, 0.3], [0.0, 0.0]):
        value, _, _ = pseudo_likelihood_objective(local_counts(spins), theta, 300)
        direct = log_pseudo_likelihood(spins, *theta).mean()
        assert abs(value - direct) < 1e-12


def test_state_local_counts_match_local_counts_of_each_state():
    table = state_local_counts(4)
    direct = local_counts(all_states(4)[:, None, :])
    assert np.array_equal(table, direct)
    assert np.all(table.sum(axis=(1, 2)) == 4)


@pytest.mark.parametrize("theta", [[0.3, -0.2], [1.0, 0.9]])
def test_gradients_and_hessians_match_central_differences(theta):
    counts = expected_local_counts(book_chain())
    stats = np.exp(log_probabilities(book_chain())) @ sufficient_statistics(all_states(10))
    theta = np.array(theta)
    for objective in (lambda t: pseudo_likelihood_objective(counts, t),
                      lambda t: log_likelihood_objective(stats, t, 10)):
        _, grad, hess = objective(theta)
        step = 1e-5
        for k in range(2):
            e = np.zeros(2)
            e[k] = step
            fd_grad = (objective(theta + e)[0] - objective(theta - e)[0]) / (2 * step)
            fd_hess = (objective(theta + e)[1] - objective(theta - e)[1]) / (2 * step)
            # Central differences have O(step^2) ~ 1e-10 truncation plus ~1e-11 rounding.
            assert abs(fd_grad - grad[k]) < 1e-8
            assert np.abs(fd_hess - hess[:, k]).max() < 1e-8


@pytest.mark.parametrize("chain", CHAINS)
def test_theorem3_masked_risk_equals_scaled_pseudo_likelihood(chain):
    counts = expected_local_counts(chain)
    for h, J in [(chain.h, chain.J), (0.0, 0.0), (-0.4, 1.2), (0.9, -0.3)]:
        value, _, _ = pseudo_likelihood_objective(counts, [h, J])
        assert abs(masked_risk(chain, h, J) + value / chain.n) < 1e-12


@pytest.mark.parametrize("chain", CHAINS)
def test_population_gradient_is_zero_at_the_truth_and_truth_is_the_maximum(chain):
    counts = expected_local_counts(chain)
    value, grad, hess = pseudo_likelihood_objective(counts, chain.theta)
    assert np.abs(grad).max() < 1e-12
    assert np.all(np.linalg.eigvalsh(hess) < 0)
    grid = chain.theta + np.stack(np.meshgrid(np.linspace(-0.5, 0.5, 11), np.linspace(-0.5, 0.5, 11)), -1)
    values, _, _ = pseudo_likelihood_objective(counts, grid)
    others = np.ones(values.shape, bool)
    others[5, 5] = False
    assert values[5, 5] == pytest.approx(value, abs=1e-14)
    assert np.all(values[others] < value)


def test_fits_recover_the_truth_from_exact_expectations():
    chain = book_chain()
    fit = fit_pseudo_likelihood(expected_local_counts(chain), 1.0)
    assert np.abs(fit.theta - chain.theta).max() < 1e-10
    stats = np.exp(log_probabilities(chain)) @ sufficient_statistics(all_states(10))
    mle = fit_maximum_likelihood(stats, 10)
    assert np.abs(mle.theta - chain.theta).max() < 1e-10


def test_fits_converge_to_tolerance_on_samples():
    chain = book_chain()
    counts = sample_state_counts(chain, 200, np.random.default_rng(1), replicates=50)
    local = (counts @ state_local_counts(10).reshape(1024, 10)).reshape(50, 2, 5)
    fit = fit_pseudo_likelihood(local, 200.0)
    assert np.all(fit.gradient_norm <= 1e-10)
    _, grad, _ = pseudo_likelihood_objective(local, fit.theta, 200.0)
    assert np.abs(grad).max() <= 1e-10
    stats = counts @ sufficient_statistics(all_states(10)) / 200
    mle = fit_maximum_likelihood(stats, 10)
    assert np.all(mle.gradient_norm <= 1e-10)


def test_forward_sampling_matches_the_exact_law():
    chain = book_chain()
    size = 200_000
    spins = sample(chain, size, np.random.default_rng(2))
    observed = np.bincount(_state_index(spins), minlength=1024)
    expected = size * np.exp(log_probabilities(chain))
    chi2 = ((observed - expected) ** 2 / expected).sum()
    dof = 1023
    # Under the exact law chi2 ~ dof +- sqrt(2 dof) ~ 45 (smallest expected cell ~ 5); six
    # standard deviations above dof is a false alarm with probability < 1e-6, while a wrong
    # sampler (e.g. J of the wrong sign) gives chi2 in the hundreds of thousands.
    assert chi2 < dof + 6 * np.sqrt(2 * dof)


def test_forward_sampling_on_a_strongly_coupled_short_chain():
    chain = IsingChain(3, -0.5, 1.5)
    size = 100_000
    spins = sample(chain, size, np.random.default_rng(3))
    observed = np.bincount(_state_index(spins), minlength=8) / size
    expected = np.exp(log_probabilities(chain))
    standard_error = np.sqrt(expected * (1 - expected) / size)
    # Five standard errors per cell: a false alarm over 8 cells has probability < 1e-5.
    assert np.all(np.abs(observed - expected) < 5 * standard_error + 1e-12)


def test_histogram_sampling_matches_the_law():
    chain = book_chain()
    counts = sample_state_counts(chain, 1000, np.random.default_rng(4), replicates=400)
    mean_local = (counts @ state_local_counts(10).reshape(1024, 10)).mean(0) / 1000
    target = expected_local_counts(chain).ravel()
    # Each mean is over 400,000 sequences; per-sequence counts have sd <= 10, so the
    # standard error is < 0.016 and 0.08 is five of them.
    assert np.abs(mean_local - target).max() < 0.08


def test_asymptotic_covariances():
    chain = book_chain()
    result = asymptotic_covariances(chain)
    # Fisher information equals minus the Hessian of the mean log-likelihood.
    stats = np.exp(log_probabilities(chain)) @ sufficient_statistics(all_states(10))
    _, _, hess = log_likelihood_objective(stats, chain.theta, 10)
    assert np.abs(result.fisher + hess).max() < 1e-12
    # The MLE is efficient: the sandwich exceeds I^{-1} in the positive semi-definite order.
    assert np.linalg.eigvalsh(result.pseudo_likelihood - result.maximum_likelihood).min() > -1e-12
    assert np.all(result.variance_ratio >= 1.0)
    # The sandwich's pieces: H is PL's negative expected Hessian.
    _, _, pl_hess = pseudo_likelihood_objective(expected_local_counts(chain), chain.theta)
    assert np.abs(result.sensitivity + pl_hess).max() < 1e-12


def test_sandwich_predicts_the_spread_of_the_estimates():
    chain = book_chain()
    replicates, size = 3000, 2000
    counts = sample_state_counts(chain, size, np.random.default_rng(6), replicates=replicates)
    local = (counts @ state_local_counts(10).reshape(1024, 10)).reshape(replicates, 2, 5)
    fit = fit_pseudo_likelihood(local, float(size))
    empirical = np.var(fit.theta, axis=0) * size
    predicted = np.diag(asymptotic_covariances(chain).pseudo_likelihood)
    # A variance over 3000 replicates has relative standard error sqrt(2/3000) ~ 0.026;
    # 0.15 leaves room for that (5 SE) and for the O(1/N) bias of N = 2000.
    assert np.all(np.abs(empirical / predicted - 1) < 0.15)


def test_bad_input():
    with pytest.raises(ValueError, match="n must be"):
        IsingChain(1, 0.0, 0.0)
    with pytest.raises(TypeError, match="h must be a real number"):
        IsingChain(3, "0.2", 0.0)
    with pytest.raises(ValueError, match="J must be finite"):
        IsingChain(3, 0.2, float("nan"))
    with pytest.raises(ValueError, match="spins must hold only -1 and \\+1"):
        log_pseudo_likelihood([[1, 0, 1]], 0.2, 0.5)
    with pytest.raises(ValueError, match="spins must hold only -1 and \\+1"):
        local_counts([[[1, 2, 1]]])
    with pytest.raises(TypeError, match="spins must hold integers"):
        full_conditionals([[1.0, -1.0]], 0.2, 0.5)
    with pytest.raises(ValueError, match="spins must have a last axis of at least 2"):
        full_conditionals([[1]], 0.2, 0.5)
    with pytest.raises(TypeError, match="chain must be an IsingChain"):
        log_partition((10, 0.2, 0.5))
    with pytest.raises(TypeError, match="rng must be a numpy.random.Generator"):
        sample(book_chain(), 3, 0)
    with pytest.raises(ValueError, match="counts must have shape"):
        fit_pseudo_likelihood(np.ones((2, 4)), 1.0)
    with pytest.raises(ValueError, match="counts must be non-negative"):
        pseudo_likelihood_objective(-np.ones((2, 5)), [0.0, 0.0])
    with pytest.raises(ValueError, match="n must be at most"):
        all_states(ising.MAX_ENUMERATED_LENGTH + 1)


def test_degenerate_counts_are_refused():
    # One sequence of all +1 spins never shows a spin disagreeing with its field: no MPLE.
    counts = local_counts(np.ones((1, 1, 5), dtype=int))
    with pytest.raises(ValueError, match="fit_pseudo_likelihood"):
        fit_pseudo_likelihood(counts, 1.0)
