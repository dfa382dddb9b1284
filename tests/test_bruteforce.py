"""Tests of mlm_book.bruteforce: independent checks of Theorem 2 and the fixed-count posterior."""

import math

import numpy as np
import pytest

from mlm_book.bruteforce import (
    brute_force_posterior,
    channel_events,
    dense_posteriors,
    fixed_count_error,
    fixed_count_errors,
    fixed_count_posterior,
    fixed_count_posterior_by_sets,
    path_joint,
)
from mlm_book.channel import KEPT, MASKED, RANDOM, Channel, corrupt, exact_posterior, zipf_unigram
from mlm_book.hmm import default_hmm, enumerate_joint, sample
from mlm_book.scoring import kl_divergence

HMM = default_hmm()
V = 25


def test_path_joint_matches_enumeration():
    for n in (1, 2, 3):
        assert np.abs(path_joint(HMM, n) - enumerate_joint(HMM, n)).max() <= 1e-16
    with pytest.raises(ValueError, match="length 6 .*more than the limit"):
        path_joint(HMM, 6)


@pytest.mark.parametrize("unigram", [False, True])
def test_channel_events_cover_everything(unigram):
    c = Channel(V, rho=0.4, replacement=zipf_unigram(V) if unigram else None)
    events = channel_events(c)
    assert len(events) == V + 3
    assert abs(math.fsum(e.probability for e in events) - 1) <= 1e-15
    assert all(e.symbol != c.mask_id or e.selected for e in events)
    assert sum(e.probability for e in events if not e.selected) == pytest.approx(0.6, abs=1e-15)


@pytest.mark.parametrize("rho", [0.15, 0.4])
@pytest.mark.parametrize("unigram", [False, True])
def test_theorem2_against_brute_force_every_position_and_display(rho, unigram):
    c = Channel(V, rho=rho, replacement=zipf_unigram(V) if unigram else None)
    rng = np.random.default_rng(int(rho * 100) + unigram)
    _, tokens = sample(HMM, 2, 3, rng)
    background = corrupt(c, tokens, rng).shown
    for i in range(3):
        for kind in (MASKED, KEPT, RANDOM):
            shown = background.copy()
            shown[:, i] = {MASKED: V, KEPT: tokens[:, i], RANDOM: (tokens[:, i] + 7) % V}[kind]
            closed = exact_posterior(HMM, c, shown)[:, i]
            for b in range(2):
                assert np.abs(closed[b] - brute_force_posterior(HMM, c, shown[b], i)).max() <= 1e-12


def test_brute_force_bad_input():
    c = Channel(V)
    with pytest.raises(ValueError, match="position"):
        brute_force_posterior(HMM, c, [0, 1, 2], 3)
    with pytest.raises(ValueError, match="shown"):
        brute_force_posterior(HMM, c, [0, 26, 2], 0)
    with pytest.raises(TypeError, match="channel"):
        brute_force_posterior(HMM, 0.15, [0, 1, 2], 0)


@pytest.mark.parametrize("rho", [0.15, 0.4])
def test_dense_table_independent_equals_closed_form(rho):
    c = Channel(V, rho=rho)
    table = dense_posteriors(HMM, c)
    assert abs(table.joint.sum() - 3) <= 1e-12          # each position's table is a distribution
    closed = exact_posterior(HMM, c, table.displays())
    for i in range(3):
        evidence, posterior = table.posterior(i)
        assert np.abs(posterior[evidence > 0] - closed[evidence > 0, i]).max() <= 1e-12


@pytest.mark.parametrize("rho", [0.15, 0.5])     # k = 1 and k = 2 at n = 3
def test_fixed_count_posterior_matches_dense_table_and_not_closed_form(rho):
    fixed = Channel(V, rho=rho, selection="fixed")
    table = dense_posteriors(HMM, fixed)
    displays = table.displays()
    closed = exact_posterior(HMM, Channel(V, rho=rho), displays)
    for i in range(3):
        evidence, posterior = table.posterior(i)
        possible = evidence > 0
        chain = fixed_count_posterior(HMM, fixed, displays[possible], i)
        assert np.abs(chain - posterior[possible]).max() <= 1e-12
        # Theorem 2's closed form is not the fixed-count optimum: expected KL clearly positive
        kl = float((evidence[possible] * kl_divergence(posterior[possible], closed[possible, i])).sum())
        assert kl > 1e-4


@pytest.mark.parametrize("rho, length", [(0.15, 12), (0.4, 6), (0.4, 8), (0.7, 6)])
def test_count_chain_equals_set_enumeration(rho, length):
    c = Channel(V, rho=rho, selection="fixed")
    rng = np.random.default_rng(length)
    _, tokens = sample(HMM, 30, length, rng)
    out = corrupt(c, tokens, rng)
    for i in range(length):
        rows = out.selected[:, i]
        if rows.any():
            a = fixed_count_posterior(HMM, c, out.shown[rows], i)
            b = fixed_count_posterior_by_sets(HMM, c, out.shown[rows], i)
            assert np.abs(a - b).max() <= 1e-13


def test_fixed_count_impossible_display_is_refused():
    c = Channel(V, selection="fixed")          # n = 3: k = 1, so two [MASK]s cannot happen
    for function in (fixed_count_posterior, fixed_count_posterior_by_sets):
        with pytest.raises(ValueError, match="no fixed-count selection"):
            function(HMM, c, [[V, V, 1]], 0)
        with pytest.raises(ValueError, match="position"):
            function(HMM, c, [[V, 0, 1]], 5)


def test_fixed_count_error_matched_rate_is_exact_when_one_position_is_selected():
    nominal, matched = fixed_count_errors(HMM, Channel(V), 5, 60, np.random.default_rng(1), rates=(None, 0.0))
    assert nominal.count == 1 and nominal.positions == 60
    assert nominal.mean_kl > 1e-5 and nominal.max_abs > 1e-3
    assert matched.max_abs <= 1e-12
    single = fixed_count_error(HMM, Channel(V), 5, 60, np.random.default_rng(1))
    assert single == nominal
    with pytest.raises(TypeError, match="rng"):
        fixed_count_error(HMM, Channel(V), 5, 60, 1)
    with pytest.raises(ValueError, match="length"):
        fixed_count_error(HMM, Channel(V), 0, 60, np.random.default_rng(1))
