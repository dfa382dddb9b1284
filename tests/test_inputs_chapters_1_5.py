"""Chapters 1-5 answer bad input with a ValueError/TypeError naming the argument (issue 10).

The tables and figures whose default reads the trained encoder (``_geometry_markdown``,
``robustness_statements``, ``probe_markdown``, ``figure_probes``, ``figure_control_spread``)
have no doctest (their ``None`` default takes seconds on a fresh process, so the bad-input
sweep would time out on it); they are driven here with hand-made records instead. Nothing
here loads an encoder or trains.
"""

from __future__ import annotations

import math

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402

from mlm_book import geometry  # noqa: E402
from mlm_book.experiments import ch01_static_vectors as ch1  # noqa: E402
from mlm_book.experiments import ch02_objective as ch2  # noqa: E402
from mlm_book.experiments import ch03_pseudo_likelihood as ch3  # noqa: E402
from mlm_book import four_cycles  # noqa: E402
from mlm_book.experiments import ch04_geometry as ch4  # noqa: E402
from mlm_book import hmm_splits  # noqa: E402
from mlm_book.readings import hmm_encoder as readings  # noqa: E402
from mlm_book.experiments import ch05_probing as ch5  # noqa: E402
from mlm_book.readings import sense_probes  # noqa: E402
from mlm_book.hmm import default_hmm  # noqa: E402


def _seed_row(**changes) -> ch4.SeedGeometry:
    fields = dict(seed=1, label="", self_similarity=(0.76, 0.62, 0.68), mev=(0.76, 0.64, 0.69),
                  baseline=(0.07, 0.15, 0.2), adjusted=(0.69, 0.47, 0.48), within_position=(1.0, 0.6, 0.7),
                  token_norm=1.1, position_norm=0.4, layer0_from_norms=0.88, n_occurrences=6663,
                  s509=True, s510=True, s512=True, s520=True)
    return ch4.SeedGeometry(**{**fields, **changes})


def _geometry_table() -> readings.GeometryTable:
    rng = np.random.default_rng(0)
    pool = rng.standard_normal((200, 4))
    rows = tuple(readings.GeometryRow(layer=layer, vector=f"layer {layer}: toy",
                                 geometry=geometry.describe_cloud(pool[:20] + 3.0 / (layer + 1), pool, rng, repeats=5),
                                 distinct_vectors=20) for layer in range(3))
    return readings.GeometryTable(config=hmm_splits.SPLITS, rows=rows, n_occurrences=20, n_tokens=200)


def _probe_table() -> sense_probes.ProbeTable:
    rows = tuple(sense_probes.ProbeRow(layer=layer, vector=name, probe=p, control=0.5, control_true_labels=0.52,
                              stderr=0.002, iterations=40, gradient_norm=1e-9)
                 for layer, (name, p) in enumerate((("input E[x] + P", 0.50), ("after block 1", 0.963),
                                                    ("after block 2", 0.962))))
    return sense_probes.ProbeTable(config=hmm_splits.SPLITS, rows=rows, token_table=0.509, token_table_majority=0.509, cap=0.509,
                          bayes=0.970, bayes_stderr=0.002, bayes_realised=0.968, n_train=6700, n_test=6663)


# ----------------------------------------------------------------------------- chapter 1


@pytest.mark.parametrize("change, name", [
    ({"length": math.nan}, "length"), ({"train_sequences": 0}, "train_sequences"),
    ({"expectation_chunks": 1}, "expectation_chunks"), ({"split_seed": -1}, "split_seed"),
    ({"offsets": [1, -1]}, "offsets"), ({"offsets": (0,)}, "offsets"), ({"offsets": (True,)}, "offsets"),
    ({"test_sequences": 10**12}, "test_sequences"), ({"hmm": None}, "hmm"), ({"static_dim": 10**9}, "static_dim"),
])
def test_chapter1_config_names_its_bad_field(change, name):
    with pytest.raises((TypeError, ValueError), match=name):
        ch1.Chapter1Config(**change)


def test_chapter1_results_names_its_bad_field():
    import dataclasses

    r = ch1.results()
    for name, value in (("cap", math.nan), ("shares", np.array([0.4, 0.4])), ("test_states", r.test_states[:, :3]),
                        ("example_tokens", np.full(24, 25)), ("static_names", ("only one",)), ("bayes_test", None)):
        with pytest.raises((TypeError, ValueError), match=name):
            dataclasses.replace(r, **{name: value})


def test_brute_force_error_refuses_a_huge_batch_before_sampling():
    with pytest.raises(ValueError, match="batch"):
        ch1.brute_force_error(default_hmm(), np.random.default_rng(0), batch=10**12)
    with pytest.raises(TypeError, match="rng"):
        ch1.brute_force_error(default_hmm(), 0)


def test_chapter1_figures_check_r_and_offset():
    with pytest.raises(TypeError, match="r must be"):
        ch1.figure_transition("results")
    with pytest.raises(TypeError, match="offset"):
        ch1.figure_pmi_profiles(offset=1.0)
    with pytest.raises(ValueError, match="offset"):
        ch1.figure_pmi_profiles(offset=3)


# ----------------------------------------------------------------------------- chapter 2


def test_chapter2_configs_are_checked_before_any_work():
    with pytest.raises(ValueError, match="length"):
        ch2.BruteForceConfig(length=10)
    with pytest.raises(TypeError, match="rhos"):
        ch2.BruteForceConfig(rhos=[0.15])
    with pytest.raises(ValueError, match="p_min"):
        ch2.ShrinkageConfig(p_min=0.0)
    with pytest.raises(TypeError, match="vocab_sizes"):
        ch2.ShrinkageConfig(vocab_sizes=[25])
    with pytest.raises(TypeError, match="top"):
        ch2.worked_example_text(top="4")


def test_visible_tokens_record_checks_its_dicts():
    import dataclasses

    v = ch2.visible_tokens()
    with pytest.raises(ValueError, match="believed"):
        dataclasses.replace(v, believed={"kept": 1.5, "random": 0.1})
    with pytest.raises(ValueError, match="counts"):
        dataclasses.replace(v, counts={"kept": 3})


# ----------------------------------------------------------------------------- chapter 3


def test_chapter3_checks_configs_and_draw_numbers():
    with pytest.raises(ValueError, match=r"n must be an integer in \[2, 16\]"):  # ising enumerates up to 16
        ch3.IsingStudyConfig(n=40)
    with pytest.raises(ValueError, match="page_sizes"):
        ch3.IsingStudyConfig(page_sizes=(300, 20000))
    with pytest.raises(ValueError, match="mask"):
        four_cycles.FourCycleConfig(mask=0.95, random=0.1)
    with pytest.raises(ValueError, match="index"):
        ch3.describe_draw(four_cycles.FOUR_CYCLE.count)
    with pytest.raises(ValueError, match="indices"):
        ch3.population_gaps([0.15], indices=[0, 10**6])
    with pytest.raises(ValueError, match="references"):
        ch3.rebuild_disagreement(lambda tokens, positions: None, length=2, references=("a0", "nope"))
    with pytest.raises(ValueError, match="families"):
        ch3.figure_delta_histogram({"a": [np.nan]})


# ----------------------------------------------------------------------------- chapter 4


def test_geometry_markdown_reads_a_given_table():
    lines = ch4._geometry_markdown(_geometry_table()).splitlines()
    assert len(lines) == 5 and lines[2].startswith("| 0 | toy |")
    with pytest.raises(TypeError, match="table"):
        ch4._geometry_markdown("table")


def test_robustness_statements_on_given_rows():
    robustness = ch4.SeedRobustness(rows=(_seed_row(), _seed_row(seed=2, s520=False, adjusted=(0.4, 0.47, 0.48))),
                                    config=hmm_splits.SPLITS)
    statements = ch4.robustness_statements(robustness)
    assert len(statements) == 6
    assert statements[3][1:] == (True, 1)       # S5-20 holds for the first row only
    with pytest.raises(TypeError, match="robustness"):
        ch4.robustness_statements(robustness.rows)


def test_chapter4_records_name_their_bad_field():
    with pytest.raises(ValueError, match="mev"):
        _seed_row(mev=(0.5, 1.5, 0.5))
    with pytest.raises(TypeError, match="s509"):
        _seed_row(s509=1)
    with pytest.raises(ValueError, match="tokens"):
        hmm_splits.Split(name="toy", states=np.zeros((1, 3), int), tokens=np.array([[0, 25, 1]]))
    with pytest.raises(ValueError, match="positions_with_both_senses"):
        ch4.SenseAxis(layer=0, explained=(0.5, 0.1), correlation=(0.9, 0.1), uncertain_between=False,
                      positions_with_both_senses=30, positions=24)
    with pytest.raises(ValueError, match="word_vectors"):
        ch4.within_position_similarity(np.zeros((4, 2)), [0, 0, 1, 1])


def test_plot_principal_axes_checks_layers_and_position_before_loading():
    with pytest.raises(ValueError, match="layers"):
        ch4.plot_principal_axes(layers=(0, 3))
    with pytest.raises(ValueError, match="layers"):
        ch4.plot_principal_axes(layers=())
    with pytest.raises(ValueError, match="position"):
        ch4.plot_principal_axes(position=24)
    with pytest.raises(TypeError, match="seeds"):
        ch4.seed_robustness([1, 2])


# ----------------------------------------------------------------------------- chapter 5


def test_probe_markdown_and_figure_read_a_given_table():
    table = _probe_table()
    lines = ch5.probe_markdown(table).splitlines()
    assert lines[2].startswith("| token-table row E[w] | 0.509 |") and len(lines) == 8
    drawn = ch5.figure_probes(table)
    try:
        assert drawn.figure.axes[0].get_ylabel() == "sense accuracy (6663 test occurrences)"
        assert "Small dots" not in drawn.alt  # no seeds given, none drawn
    finally:
        plt.close(drawn.figure)
    for function in (ch5.probe_markdown, ch5.figure_probes):
        with pytest.raises(TypeError, match="table_"):
            function("table")


def test_figure_control_spread_reads_a_given_spread():
    spread = ch5.ControlSpread(layer=1, permuted=np.array([0.49, 0.51]), true_labels=np.array([0.3, 0.7]),
                               binomial_sd=0.006)
    drawn = ch5.figure_control_spread(spread)
    try:
        assert drawn.figure.axes[0].get_xlabel().endswith("(layer 1)")
        assert "they scatter from 0.30 to 0.70, on both sides of one half" in drawn.alt
    finally:
        plt.close(drawn.figure)
    with pytest.raises(TypeError, match="spread"):
        ch5.figure_control_spread({"layer": 1})


def test_chapter5_records_name_their_bad_field():
    with pytest.raises(ValueError, match="n_test"):
        sense_probes.ProbeTable(**{**_probe_table().__dict__, "n_test": 0})
    with pytest.raises(ValueError, match="bayes_only"):
        ch5.BayesComparison(layer=1, n=10, probe=0.9, bayes=0.9, bayes_only=8, probe_only=5)
    with pytest.raises(ValueError, match="probes"):
        sense_probes.SeedProbes(seeds=(1, 2), probes=((0.5, 0.9), (0.5,)), bayes=0.97)
    with pytest.raises(ValueError, match="permuted"):
        ch5.ControlSpread(layer=1, permuted=np.array([]), true_labels=np.array([0.5]), binomial_sd=0.006)
    with pytest.raises(TypeError, match="seeds"):
        sense_probes.seed_probes(())


@pytest.mark.book
def test_figure_probes_draws_every_other_seed_once():
    seeds = sense_probes.seed_probes()
    drawn = ch5.figure_probes(seeds=seeds)
    try:
        dots = [line for line in drawn.figure.axes[0].lines if str(line.get_label()).startswith("probe, the other")]
        assert len(dots) == 1
        assert sorted(dots[0].get_ydata()) == sorted(np.ravel(seeds.probes[1:]).tolist())
        assert f"the other {len(seeds.seeds) - 1} seeds" in drawn.alt
    finally:
        plt.close(drawn.figure)
    with pytest.raises(TypeError, match="seeds"):
        ch5.figure_probes(seeds="seeds")
    short = sense_probes.SeedProbes(seeds=(1, 2), probes=((0.5, 0.9), (0.5, 0.9)), bayes=0.97)
    with pytest.raises(ValueError, match="seeds"):
        ch5.figure_probes(seeds=short)
