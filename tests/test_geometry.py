"""Tests of mlm_book.geometry: Definition 3's measures and Proposition 2."""

import numpy as np
import pytest

from mlm_book import geometry as g


def brute_self_similarity(vectors):
    """Mean cosine over ordered distinct pairs, by the full cosine matrix (the slow definition)."""
    c = g.cosine_matrix(vectors)
    k = c.shape[0]
    return (c.sum() - np.trace(c)) / (k * (k - 1))


@pytest.mark.parametrize("shape,shift", [((2, 3), 0.0), ((17, 5), 0.0), ((300, 32), 2.0), ((50, 80), -1.0)])
def test_self_similarity_matches_all_pairs(shape, shift):
    rng = np.random.default_rng(shape[0])
    h = rng.standard_normal(shape) + shift
    assert abs(g.self_similarity(h) - brute_self_similarity(h)) < 1e-12


def test_self_similarity_scale_invariant_and_collinear_is_one():
    rng = np.random.default_rng(1)
    h = rng.standard_normal((40, 6))
    scales = rng.uniform(0.1, 10.0, size=(40, 1))
    assert abs(g.self_similarity(h) - g.self_similarity(h * scales)) < 1e-12
    collinear = rng.uniform(0.5, 3.0, size=(25, 1)) * rng.standard_normal(6)
    assert abs(g.self_similarity(collinear) - 1.0) < 1e-12
    # Antipodal pair: the minimum -1/(k-1) = -1 for k = 2.
    assert abs(g.self_similarity([[1.0, 2.0], [-1.0, -2.0]]) + 1.0) < 1e-12


def test_baseline_never_pairs_a_vector_with_itself():
    # Orthonormal rows: every distinct pair has cosine 0; including self-pairs would give 1/k.
    assert abs(g.anisotropy_baseline(np.eye(7))) < 1e-15


def test_baseline_near_zero_for_isotropic_samples():
    # S5-03: mean cosine of n isotropic vectors in d dims has sd about 1/(n sqrt(d)) ~ 1e-4 here.
    h = np.random.default_rng(3).standard_normal((5000, 32))
    assert abs(g.anisotropy_baseline(h)) <= 0.01
    # A shared offset makes a cone: the baseline goes up.
    assert g.anisotropy_baseline(h + 1.0) > 0.4


def test_baseline_subsample_uses_distinct_rows():
    rng = np.random.default_rng(0)
    pool = np.eye(50)
    assert abs(g.anisotropy_baseline(pool, size=20, rng=rng)) < 1e-15
    with pytest.raises(ValueError, match="rng"):
        g.anisotropy_baseline(pool, size=20)
    with pytest.raises(ValueError, match="size"):
        g.anisotropy_baseline(pool, size=60, rng=rng)


def test_adjusted_is_difference():
    h = np.random.default_rng(4).standard_normal((30, 4)) + 0.5
    assert g.adjusted_self_similarity(h, 0.25) == pytest.approx(g.self_similarity(h) - 0.25, abs=1e-15)
    with pytest.raises(ValueError, match="baseline"):
        g.adjusted_self_similarity(h, 2.0)


def test_mev_definition_and_rank_one():
    rng = np.random.default_rng(5)
    h = rng.standard_normal((60, 7))
    sigma = np.linalg.svd(h, compute_uv=False)
    assert abs(g.mev(h) - sigma[0] ** 2 / np.sum(sigma**2)) < 1e-12
    rank_one = np.outer(rng.standard_normal(60), rng.standard_normal(7))
    assert abs(g.mev(rank_one) - 1.0) < 1e-12
    # Uncentred: a shifted cloud is dominated by its mean direction.
    assert g.mev(h + 10.0) > 0.95


@pytest.mark.parametrize("seed,shape", [(0, (100, 8)), (1, (8, 100)), (2, (500, 32)), (3, (3, 2))])
def test_proposition2_on_random_matrices(seed, shape):
    rng = np.random.default_rng(seed)
    h = rng.standard_normal(shape) * rng.uniform(0.1, 5.0, size=(1, shape[1])) + rng.standard_normal(shape[1])
    check = g.check_proposition2(h, rng)
    assert check.mean_gradient < 1e-12
    assert check.variational < 1e-12
    assert check.eckart_young < 1e-12
    assert check.lower_slack > -1e-12 and check.upper_slack > -1e-12
    assert check.rank == min(shape)
    assert check.holds(1e-12)


def test_proposition2_rank_one_equality():
    rng = np.random.default_rng(7)
    h = np.outer(rng.standard_normal(30), rng.standard_normal(5))
    check = g.check_proposition2(h, rng)
    assert check.rank == 1
    assert abs(check.upper_slack) < 1e-12  # MEV = 1 exactly when collinear
    assert abs(check.lower_slack) < 1e-12  # and 1/r = 1 too
    assert check.holds(1e-12)


def test_mev_lower_bound_attained_by_orthogonal_equal_energy():
    # Equal singular values: MEV = 1/r exactly, the left end of (iii).
    q, _ = np.linalg.qr(np.random.default_rng(8).standard_normal((20, 4)))
    low, high = g.mev_bound_slacks(3.0 * q)
    assert abs(low) < 1e-12 and abs(high - 0.75) < 1e-12


def test_variational_gap_detects_a_wrong_mev(monkeypatch):
    # The check can fail: if MEV were computed wrongly the gap would be large.
    h = np.random.default_rng(9).standard_normal((50, 6))
    monkeypatch.setattr(g, "mev", lambda vectors: 0.01)
    assert g.mev_variational_gap(h) > 0.1


def test_isotropic_reference_is_not_one_over_d():
    # S5-24's reference: 1000 x 64 isotropic Gaussian. Marchenko-Pastur (+ Tracy-Widom mean) gives
    # 0.0241; 1/d = 0.0156 is far below. 40 simulated matrices: sd ~ 4e-4, so stderr ~ 7e-5; the
    # asymptotic formula is good to a few 1e-4 at this size, hence the 1e-3 tolerance.
    ref = g.isotropic_mev(1000, 64, np.random.default_rng(0), repeats=40)
    assert abs(ref.mean - ref.asymptotic) < 1e-3
    assert abs(ref.mean - 0.024) < 1e-3
    assert ref.mean > 1.4 * ref.naive
    # Same seed, same numbers.
    again = g.isotropic_mev(1000, 64, np.random.default_rng(0), repeats=40)
    assert again.mean == ref.mean
    # Large n approaches 1/d.
    assert abs(g.marchenko_pastur_mev(10**8, 32) - 1 / 32) < 1e-4


def test_isotropic_reference_small_sizes_match_simulation():
    # Where n is small relative to d the finite-sample effect is big; the formula still tracks it.
    ref = g.isotropic_mev(200, 32, np.random.default_rng(1), repeats=200)
    assert abs(ref.mean - g.marchenko_pastur_mev(200, 32)) < 0.003
    assert ref.mean > 1.8 * ref.naive  # 0.058 vs 1/32 = 0.031


def test_principal_axes():
    rng = np.random.default_rng(10)
    h = rng.standard_normal((200, 5)) * np.array([5.0, 2.0, 1.0, 0.5, 0.1]) + 7.0
    pa = g.principal_axes(h, 2)
    assert pa.coordinates.shape == (200, 2)
    assert np.allclose(pa.axes @ pa.axes.T, np.eye(2), atol=1e-12)
    assert abs(pa.coordinates.mean(axis=0)).max() < 1e-10  # centred
    assert pa.explained[0] > pa.explained[1] > 0
    assert abs(abs(pa.axes[0, 0]) - 1.0) < 0.05 and pa.axes[0, 0] > 0  # sign convention
    with pytest.raises(ValueError, match="n_axes"):
        g.principal_axes(h, 6)


def test_describe_cloud_consistency():
    rng = np.random.default_rng(11)
    pool = rng.standard_normal((3000, 16)) + 0.3
    word = pool[:400] + 2.0
    geo = g.describe_cloud(word, pool, rng, repeats=10)
    assert geo.adjusted == pytest.approx(geo.self_similarity - geo.baseline, abs=1e-15)
    assert geo.self_similarity == pytest.approx(g.self_similarity(word), abs=1e-15)
    assert geo.baseline == pytest.approx(g.self_similarity(pool), abs=1e-15)
    assert geo.mev > geo.token_mev > geo.isotropic_mev
    with pytest.raises(ValueError, match="pool_vectors"):
        g.describe_cloud(word, pool[:, :8], rng)
    with pytest.raises(ValueError, match="pool_vectors"):
        g.describe_cloud(word, pool[:100], rng)


@pytest.mark.parametrize("function", [g.self_similarity, g.mev, g.anisotropy_baseline, g.check_proposition2,
                                      g.principal_axes, g.mean_gradient_gap, g.eckart_young_gap])
def test_fewer_than_two_vectors(function):
    with pytest.raises(ValueError, match="at least two vectors"):
        function([[1.0, 2.0, 3.0]])
    with pytest.raises(ValueError, match="dimension"):
        function([1.0, 2.0, 3.0])


def test_zero_vectors_and_nan():
    with pytest.raises(ValueError, match="zero vector"):
        g.self_similarity([[1.0, 0.0], [0.0, 0.0]])
    with pytest.raises(ValueError, match="zero vector"):
        g.anisotropy_baseline([[0.0, 0.0], [1.0, 1.0], [2.0, 1.0]])
    with pytest.raises(ValueError, match="zero matrix"):
        g.mev(np.zeros((3, 2)))
    # A zero row is harmless for MEV (it adds no energy), and documented as such.
    assert g.mev([[1.0, 0.0], [0.0, 0.0]]) == 1.0
    with pytest.raises(ValueError, match="finite"):
        g.self_similarity([[1.0, np.nan], [1.0, 1.0]])
    with pytest.raises(TypeError, match="rng"):
        g.isotropic_mev(10, 3, 0)
