"""Plumbing of chapters 4 and 5's experiments, on a stand-in encoder (random initialisation).

The trained encoder's numbers are judged by the claims ledger (``mlm-book verify --only S5- S6-``);
these tests check what holds for *any* encoder: the splits, the bookkeeping of the tables, and the
relations that are exact whatever the vectors.
"""

import numpy as np
import pytest

from mlm_book.experiments import ch01_static_vectors as ch1
from mlm_book.experiments import ch04_geometry as ch4
from mlm_book import hmm_splits
from mlm_book.readings import hmm_encoder as readings
from mlm_book.experiments import ch05_probing as ch5
from mlm_book.readings import sense_probes
from mlm_book.hmm import default_hmm, sample
from mlm_book.nn import encoder as enc


def _clear():
    for function in (readings._split_vectors, readings.geometry_table, ch4.encoder_proposition2, sense_probes.probe_table,
                     ch5._control_spread, ch5._bayes_comparison):
        function.cache_clear()


@pytest.fixture
def stub_encoder(monkeypatch):
    config = enc.EncoderConfig(vocab_size=25, length=24, d_model=16, n_blocks=2, n_heads=2, init_std=0.3)
    params = enc.init_params(config, np.random.default_rng(0), dtype=np.float64)

    class Stub:
        @staticmethod
        def hidden_states(tokens):
            return enc.hidden_states(params, config, tokens)

        @staticmethod
        def token_table():
            return params["E"]

    monkeypatch.setattr(readings, "hidden_states", Stub.hidden_states)
    monkeypatch.setattr(readings, "token_table", Stub.token_table)
    _clear()
    yield Stub
    _clear()


def test_splits_are_chapter_one_splits():
    config = ch1.Chapter1Config()
    rng = np.random.default_rng(config.split_seed)
    train = sample(default_hmm(), config.train_sequences, config.length, rng)
    test = sample(default_hmm(), config.test_sequences, config.length, rng)
    assert np.array_equal(hmm_splits.hmm_split("train").tokens, train[1])
    assert np.array_equal(hmm_splits.hmm_split("test").states, test[0])
    assert (hmm_splits.SPLITS.n_train, hmm_splits.SPLITS.n_test, hmm_splits.SPLITS.length) == (1500, 1500, 24)
    with pytest.raises(ValueError, match="name"):
        hmm_splits.hmm_split("validation")


def test_tables_bookkeeping(stub_encoder):
    vectors = readings.split_vectors("test")
    hmm = default_hmm()
    split = hmm_splits.hmm_split("test")
    assert vectors.n_occurrences == int(np.sum(split.tokens == hmm.shared_token))
    # Senses are the sampled states; posteriors are probabilities.
    assert set(np.unique(vectors.senses)) <= {0, 1}
    assert np.all((vectors.posterior >= 0) & (vectors.posterior <= 1))
    # Layer 0 of w is E[w] + P_i: one distinct vector per position at most.
    table = readings.geometry_table()
    assert table.rows[0].distinct_vectors <= hmm_splits.SPLITS.length
    for row in table.rows:
        g = row.geometry
        assert g.adjusted == pytest.approx(g.self_similarity - g.baseline, abs=1e-15)
        assert g.n_occurrences == vectors.n_occurrences
    assert all(check.holds(1e-12) for check in ch4.encoder_proposition2())

    probes = sense_probes.probe_table()
    # The token-table probe is a constant classifier: exactly the majority share of the test labels.
    assert probes.token_table == probes.token_table_majority
    # Trained and scored on permuted senses: at most the majority share up to sampling error
    # (4 binomial sd of ~6700 test rows is ~0.025).
    for row in probes.rows:
        assert row.control <= max(probes.token_table_majority, 1 - probes.token_table_majority) + 0.025
        assert row.gradient_norm < 1e-9
    assert probes.cap == pytest.approx(0.509, abs=0.005)
    assert probes.n_test == vectors.n_occurrences
