"""The filing encoder's setup, split, training windows and schedule rules (no training here)."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from mlm_book.artefacts import filing_encoder as fe
from mlm_book.nn.loop import learning_rate


def test_split_is_by_document_and_covers_the_stream():
    world = fe.filing_world()
    s = fe.split()
    train_docs = np.unique(world.corpus.document[s.train_tokens])
    test_docs = np.unique(world.corpus.document[s.test_tokens])
    assert np.intersect1d(train_docs, test_docs).size == 0
    assert np.array_equal(test_docs, s.test_documents)
    assert s.train_tokens.size + s.test_tokens.size == world.ids.size
    assert len(s.test_documents) == round(fe.SETUP.test_share * world.corpus.n_documents)


def test_training_windows_stay_inside_training_filings():
    world = fe.filing_world()
    source = fe.training_source(fe.SETUP)
    windows = source(400, np.random.default_rng(0))
    config = fe.SETUP.encoder(world.vocabulary.size)
    assert windows.shape == (400, fe.SETUP.length)
    assert windows.max() <= config.pad_id and windows.min() >= 0
    assert not (windows == config.mask_id).any()           # the channel writes [MASK], the source never does
    # every real token of a window is one of the training filings' tokens, in stream order around the centre
    train = set(fe.split().train_tokens.tolist())
    assert (windows[:, fe.SETUP.length // 2] != config.pad_id).all()
    rng = np.random.default_rng(0)
    picks = fe.split().train_tokens[rng.integers(0, fe.split().train_tokens.size, size=400)]
    assert set(picks.tolist()) <= train
    valid = windows != config.pad_id
    offsets = np.arange(fe.SETUP.length) - fe.SETUP.length // 2
    stream = picks[:, None] + offsets[None, :]
    assert np.array_equal(windows[valid], world.ids[stream[valid]])
    assert np.isin(world.corpus.document[stream[valid]], fe.split().test_documents).sum() == 0


def test_schedule_rules():
    cfg = fe.training_config()
    assert (cfg.steps, cfg.batch_size, cfg.warmup) == (3000, 120, 200)
    total = sum(learning_rate(cfg, step) for step in range(cfg.steps))
    assert abs(cfg.weight_decay * total - fe.SETUP.total_decay) < 1e-4
    forty = fe.training_config(fe.BERT_PASSES)
    tokens = fe.split().train_tokens.size
    assert (forty.steps - 1) * 120 * 32 < 40 * tokens <= forty.steps * 120 * 32


def test_setups():
    assert [s.seed for s in fe.book_setups()[:5]] == list(fe.SEEDS)
    assert fe.LONGER.steps == 2 * fe.SETUP.steps and fe.MORE_KEPT.kept == pytest.approx(0.2)
    with pytest.raises(ValueError, match="exactly one of steps and passes"):
        dataclasses.replace(fe.SETUP, passes=40.0)
    with pytest.raises(ValueError, match="test_share"):
        dataclasses.replace(fe.SETUP, test_share=1.0)
    with pytest.raises(TypeError, match="setup"):
        fe.trained_encoder("book")
    with pytest.raises(TypeError, match="setups"):
        fe.ensure_trained(["book"])


def test_spread():
    assert fe.spread([1.0, 3.0]) == (2.0, pytest.approx(np.sqrt(2.0)))
    with pytest.raises(ValueError, match="at least two"):
        fe.spread([1.0])


def test_chapter_6_and_the_artefact_floor_write_the_same_filings():
    from mlm_book.artefacts import filings
    from mlm_book.experiments import ch06_finance
    chapter, floor = ch06_finance.results(), filings.filings()
    defaults = filings.FilingsSetup()
    config = chapter.config
    assert (config.corpus, config.corpus_seed, config.min_count, config.window_length, config.nearest_stride,
            config.polarity_min_count) == (defaults.corpus, defaults.corpus_seed, defaults.min_count,
                                           defaults.window_length, defaults.nearest_stride,
                                           defaults.polarity_min_count)
    assert chapter.vocabulary.words == floor.vocabulary.words
    assert np.array_equal(chapter.ids, floor.ids)
    assert np.array_equal(chapter.nearest_positions, floor.nearest_positions)
    assert tuple(chapter.polarity_words) == floor.polarity_words
