"""Tests for the chapter-3 experiments: the shared four-cycle protocol and the figures."""

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402

from mlm_book import compat  # noqa: E402
from mlm_book.experiments import ch03_pseudo_likelihood as ch3  # noqa: E402
from mlm_book import four_cycles  # noqa: E402
from mlm_book.hmm import default_hmm  # noqa: E402


def test_four_cycle_deltas_reuse_the_same_draws_for_every_family():
    hmm = default_hmm()
    first = four_cycles.four_cycle_deltas(compat.hmm_conditionals(hmm))
    again = four_cycles.exact_families()["HMM conditionals"]
    assert np.array_equal(first, again)
    # A family wrapped as "all positions at once", with a [MASK] written by the driver,
    # gives the same gaps as the population-optimum family that writes it itself.
    channel = four_cycles.FOUR_CYCLE.channel()
    from mlm_book.channel import exact_posterior
    wrapped = compat.from_all_positions(lambda tokens: exact_posterior(hmm, channel, tokens))
    via_mask_id = four_cycles.four_cycle_deltas(wrapped, mask_id=channel.mask_id)
    population = next(v for k, v in four_cycles.exact_families().items() if k.startswith("population"))
    assert np.abs(via_mask_id - population).max() < 1e-12


def test_rho_sweep_goes_to_zero_with_rho():
    sweep = four_cycles.rho_sweep()
    assert np.all(np.diff(sweep.median) > 0)  # monotone on the grid from 0.01 to 0.5
    assert sweep.slope() > 0.5


def test_histogram_takes_any_number_of_families():
    rng = np.random.default_rng(0)
    families = {name: rng.normal(size=50) * scale for name, scale in (("a", 1e-15), ("b", 1e-4), ("c", 0.1))}
    families["zeros"] = np.zeros(10)
    drawn = ch3.figure_delta_histogram(families)
    assert len(drawn.figure.axes[0].get_legend().get_texts()) == 4
    assert "zeros, all 10 draws exactly zero" in drawn.alt and "The c sits furthest right." in drawn.alt
    plt.close(drawn.figure)
    with pytest.raises(ValueError, match="families must be"):
        ch3.figure_delta_histogram({})


def test_estimator_sweep_shapes_and_errors():
    sweep = ch3.estimator_sweep()
    assert sweep.pseudo.shape == (len(ch3.ISING.sizes), ch3.ISING.replicates, 2)
    errors = sweep.errors()
    assert np.all(errors >= 0) and np.all(np.isfinite(errors))
    # Median errors fall with N (each step in sizes is at least 2x more data).
    assert np.all(np.diff(np.median(errors, axis=1)) < 0)
