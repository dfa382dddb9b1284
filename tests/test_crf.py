"""The linear-chain CRF against brute-force enumeration of all K^n tag sequences."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from mlm_book import crf
from mlm_book.tagging import allowed_transitions, check_tags, tags_for_types


def _case(rng, length, n_tags, scale=1.0):
    return (scale * rng.normal(size=(length, n_tags)), scale * rng.normal(size=(n_tags, n_tags)),
            scale * rng.normal(size=n_tags), scale * rng.normal(size=n_tags))


def _all_paths(length, n_tags):
    return np.array(list(itertools.product(range(n_tags), repeat=length)), dtype=np.int64)


def _brute_scores(paths, emissions, transitions, start, end):
    """Scores of every path, shape (P,), written independently of crf.sequence_score."""
    positions = np.arange(paths.shape[1])
    return (start[paths[:, 0]] + emissions[positions, paths].sum(axis=1)
            + transitions[paths[:, :-1], paths[:, 1:]].sum(axis=1) + end[paths[:, -1]])


def _log_sum_exp(values):
    top = values.max()
    return top + np.log(np.exp(values - top).sum())


SHAPES = [(n, k) for n in range(1, 6) for k in range(1, 5)]


@pytest.mark.parametrize("length,n_tags", SHAPES)
def test_log_partition_and_marginals_equal_enumeration(length, n_tags):
    rng = np.random.default_rng(100 * length + n_tags)
    scores = _case(rng, length, n_tags)
    paths = _all_paths(length, n_tags)
    path_scores = _brute_scores(paths, *scores)
    log_z = _log_sum_exp(path_scores)
    assert abs(crf.log_partition(*scores) - log_z) < 1e-10
    probability = np.exp(path_scores - log_z)
    node, edge = crf.marginals(*scores)
    for t in range(length):
        expected = np.bincount(paths[:, t], weights=probability, minlength=n_tags)
        assert np.max(np.abs(node[t] - expected)) < 1e-10
    assert edge.shape == (length - 1, n_tags, n_tags)
    for t in range(length - 1):
        expected = np.bincount(paths[:, t] * n_tags + paths[:, t + 1], weights=probability,
                               minlength=n_tags * n_tags).reshape(n_tags, n_tags)
        assert np.max(np.abs(edge[t] - expected)) < 1e-10


@pytest.mark.parametrize("length,n_tags", [(1, 3), (3, 2), (4, 3), (5, 4)])
def test_sequence_score_and_nll_match_enumeration(length, n_tags):
    rng = np.random.default_rng(7 + length)
    scores = _case(rng, length, n_tags)
    paths = _all_paths(length, n_tags)
    path_scores = _brute_scores(paths, *scores)
    log_z = _log_sum_exp(path_scores)
    for index in rng.choice(len(paths), size=min(5, len(paths)), replace=False):
        assert abs(crf.sequence_score(paths[index], *scores) - path_scores[index]) < 1e-12
        assert abs(crf.negative_log_likelihood(paths[index], *scores) - (log_z - path_scores[index])) < 1e-10


def _relative_error(a, b):
    return np.max(np.abs(a - b)) / max(np.max(np.abs(a) + np.abs(b)), 1e-12)


@pytest.mark.parametrize("length,n_tags,seed", [(1, 2, 0), (2, 3, 1), (4, 3, 2), (5, 4, 3)])
def test_gradients_equal_central_differences(length, n_tags, seed):
    rng = np.random.default_rng(seed)
    scores = list(_case(rng, length, n_tags))
    tags = rng.integers(0, n_tags, size=length)
    gradient = crf.nll_gradient(tags, *scores)
    assert abs(gradient.loss - crf.negative_log_likelihood(tags, *scores)) < 1e-12
    step = 1e-5
    for which, analytic in enumerate((gradient.emissions, gradient.transitions, gradient.start, gradient.end)):
        numeric = np.zeros_like(scores[which])
        for index in np.ndindex(scores[which].shape):
            plus = [array.copy() for array in scores]
            minus = [array.copy() for array in scores]
            plus[which][index] += step
            minus[which][index] -= step
            numeric[index] = (crf.negative_log_likelihood(tags, *plus)
                              - crf.negative_log_likelihood(tags, *minus)) / (2 * step)
        # central differences are exact to O(step^2) ~ 1e-10 plus rounding ~ 1e-16 / step ~ 1e-11
        assert _relative_error(analytic, numeric) < 1e-6, which


def test_gradient_is_expected_minus_observed_counts():
    rng = np.random.default_rng(5)
    scores = _case(rng, 4, 3)
    tags = np.array([0, 2, 2, 1])
    gradient = crf.nll_gradient(tags, *scores)
    assert np.allclose(gradient.emissions.sum(axis=1), 0.0, atol=1e-12)
    assert abs(gradient.transitions.sum()) < 1e-12 and abs(gradient.start.sum()) < 1e-12
    _, edge = crf.marginals(*scores)
    observed = np.zeros((3, 3))
    observed[[0, 2, 2], [2, 2, 1]] = 1
    assert np.allclose(gradient.transitions, edge.sum(axis=0) - observed, atol=1e-14)


def _brute_best(paths, path_scores, valid=None):
    if valid is not None:
        path_scores = np.where(valid, path_scores, -np.inf)
    best = int(np.argmax(path_scores))
    return paths[best], path_scores[best]


@pytest.mark.parametrize("length,n_tags", SHAPES)
def test_viterbi_equals_brute_force_argmax(length, n_tags):
    rng = np.random.default_rng(1000 + 10 * length + n_tags)
    scores = _case(rng, length, n_tags)
    paths = _all_paths(length, n_tags)
    expected_path, expected_score = _brute_best(paths, _brute_scores(paths, *scores))
    path, score = crf.viterbi(*scores)
    assert np.array_equal(path, expected_path)
    assert abs(score - expected_score) < 1e-12


def _mask_allows(paths, mask):
    n_tags = mask.shape[0] - 1
    ok = mask[n_tags, paths[:, 0]] & mask[paths[:, -1], n_tags]
    if paths.shape[1] > 1:
        ok &= mask[paths[:, :-1], paths[:, 1:]].all(axis=1)
    return ok


@pytest.mark.parametrize("scheme,length", [("BIO", 1), ("BIO", 3), ("BIO", 5), ("BIOES", 1), ("BIOES", 2),
                                           ("BIOES", 4), ("IO", 3)])
def test_viterbi_with_the_scheme_mask_is_the_best_valid_sequence(scheme, length):
    tag_set = tags_for_types(["A"], scheme) if scheme == "BIOES" else tags_for_types(["A", "B"], scheme)
    mask = allowed_transitions(tag_set, scheme)
    n_tags = len(tag_set)
    paths = _all_paths(length, n_tags)
    valid = _mask_allows(paths, mask)
    # the mask says exactly which sequences check_tags accepts
    for path, ok in zip(paths, valid):
        try:
            check_tags([tag_set[i] for i in path], scheme)
            accepted = True
        except ValueError:
            accepted = False
        assert accepted == ok
    rng = np.random.default_rng(length)
    for _ in range(5):
        scores = _case(rng, length, n_tags, scale=2.0)
        expected_path, expected_score = _brute_best(paths, _brute_scores(paths, *scores), valid)
        path, score = crf.viterbi(*scores, allowed=mask)
        assert np.array_equal(path, expected_path)
        assert abs(score - expected_score) < 1e-12
        check_tags([tag_set[i] for i in path], scheme)


@pytest.mark.parametrize("seed", range(10))
def test_viterbi_with_random_masks_matches_brute_force(seed):
    rng = np.random.default_rng(seed)
    length, n_tags = int(rng.integers(1, 5)), int(rng.integers(1, 4))
    mask = rng.random((n_tags + 1, n_tags + 1)) < 0.6
    scores = _case(rng, length, n_tags)
    paths = _all_paths(length, n_tags)
    valid = _mask_allows(paths, mask)
    if not valid.any():
        with pytest.raises(ValueError, match="allowed permits no tag sequence"):
            crf.viterbi(*scores, allowed=mask)
        return
    expected_path, expected_score = _brute_best(paths, _brute_scores(paths, *scores), valid)
    path, score = crf.viterbi(*scores, allowed=mask)
    assert np.array_equal(path, expected_path) and abs(score - expected_score) < 1e-12


def test_viterbi_says_when_the_mask_allows_nothing():
    mask = np.ones((3, 3), dtype=bool)
    mask[2, :2] = False  # no tag may start a sentence
    with pytest.raises(ValueError, match="allowed permits no tag sequence of length 2"):
        crf.viterbi(np.zeros((2, 2)), np.zeros((2, 2)), np.zeros(2), np.zeros(2), allowed=mask)
    # BIOES with only a B tag and O forbidden cannot close an entity
    bioes = allowed_transitions(["B-A", "I-A"], "BIOES")
    with pytest.raises(ValueError, match="allowed"):
        crf.viterbi(np.zeros((3, 2)), np.zeros((2, 2)), np.zeros(2), np.zeros(2), allowed=bioes)


@pytest.mark.parametrize("scale", [1e3, -1e3])
def test_huge_scores_stay_finite(scale):
    rng = np.random.default_rng(3)
    scores = _case(rng, 5, 4, scale=abs(scale))
    scores = (scores[0] + scale, scores[1] + scale, scores[2], scores[3])
    paths = _all_paths(5, 4)
    log_z = _log_sum_exp(_brute_scores(paths, *scores))
    # relative to |log Z| ~ 1e4, float64 rounding of the sums is ~1e-12
    assert abs(crf.log_partition(*scores) - log_z) < 1e-9 * abs(log_z)
    node, edge = crf.marginals(*scores)
    assert np.all(np.isfinite(node)) and np.all(np.isfinite(edge))
    assert np.allclose(node.sum(axis=1), 1.0) and np.allclose(edge.sum(axis=(1, 2)), 1.0)
    gradient = crf.nll_gradient(np.zeros(5, dtype=int), *scores)
    assert all(np.all(np.isfinite(g)) for g in (gradient.emissions, gradient.transitions, gradient.start, gradient.end))
    assert np.isfinite(gradient.loss) and gradient.loss >= 0
    _, score = crf.viterbi(*scores)
    assert np.isfinite(score)


def test_scores_too_large_for_float64_are_refused_not_nan():
    big = np.full((3, 2), 1e308)
    with pytest.raises(ValueError, match="emissions"):
        crf.log_partition(big, np.full((2, 2), 1e308), np.zeros(2), np.zeros(2))
    with pytest.raises(ValueError, match="too large"):
        crf.viterbi(big, np.zeros((2, 2)), np.zeros(2), np.zeros(2))
    with pytest.raises(ValueError, match="start"):
        crf.marginals(np.zeros((3, 2)), np.zeros((2, 2)), np.array([1e308, 1e308]), np.zeros(2))


@pytest.mark.parametrize("call,match", [
    (lambda: crf.log_partition(np.zeros((0, 2)), np.zeros((2, 2)), np.zeros(2), np.zeros(2)), "emissions"),
    (lambda: crf.log_partition(np.zeros((2, 2)), np.zeros((3, 3)), np.zeros(2), np.zeros(2)), "transitions"),
    (lambda: crf.log_partition(np.zeros((2, 2)), np.zeros((2, 2)), np.zeros(3), np.zeros(2)), "start"),
    (lambda: crf.log_partition(np.zeros((2, 2)), np.zeros((2, 2)), np.zeros(2), np.zeros(3)), "end"),
    (lambda: crf.log_partition(np.array([[np.nan, 0.0]]), np.zeros((2, 2)), np.zeros(2), np.zeros(2)), "emissions"),
    (lambda: crf.sequence_score([0, 2], np.zeros((2, 2)), np.zeros((2, 2)), np.zeros(2), np.zeros(2)), "tags"),
    (lambda: crf.sequence_score([0], np.zeros((2, 2)), np.zeros((2, 2)), np.zeros(2), np.zeros(2)), "tags"),
    (lambda: crf.viterbi(np.zeros((2, 2)), np.zeros((2, 2)), np.zeros(2), np.zeros(2),
                         allowed=np.ones((2, 2), dtype=bool)), "allowed"),
])
def test_bad_shapes_and_values_name_the_argument(call, match):
    with pytest.raises(ValueError, match=match):
        call()


def test_allowed_must_be_boolean():
    with pytest.raises(TypeError, match="allowed"):
        crf.viterbi(np.zeros((2, 2)), np.zeros((2, 2)), np.zeros(2), np.zeros(2), allowed=np.ones((3, 3)))
