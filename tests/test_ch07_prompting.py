"""Chapter 7's prompting against fine-tuning: the classifier's gradients, the task's inputs, bad inputs, the runs."""

from __future__ import annotations

import numpy as np
import pytest

from mlm_book.artefacts import filing_encoder as fe
from mlm_book.artefacts import prompting
from mlm_book.nn import encoder as enc
from mlm_book.nn import encoder_finetune as eft
from mlm_book.nn.gradcheck import central_differences, relative_error


def _tiny(pad=True):
    cfg = enc.EncoderConfig(vocab_size=6, length=5, d_model=8, n_blocks=2, n_heads=2, pad=pad)
    params = enc.init_params(cfg, np.random.default_rng(0), dtype=np.float64)
    rng = np.random.default_rng(1)
    params["head.W"] = rng.normal(0, 0.5, size=(8, 3))
    params["head.b"] = rng.normal(0, 0.5, size=3)
    # layer-norm gains and biases off their initial values, so their gradients are generic
    for name in params:
        if name.endswith((".g", ".b", "b_qkv", "b_1")):
            params[name] += rng.normal(0, 0.1, size=params[name].shape)
    windows = np.array([[cfg.pad_id, 2, 3, cfg.mask_id, 1], [4, 5, 0, cfg.pad_id, cfg.pad_id],
                        [1, 1, 2, 3, 4]])
    pool = (windows != cfg.pad_id) & (windows != cfg.mask_id)
    return cfg, params, windows, pool, np.array([0, 2, 1])


def test_the_classifier_gradient_matches_central_differences():
    # float64, h = 1e-5: a correct backward pass is far below 1e-6 (see mlm_book.nn.gradcheck)
    cfg, params, windows, pool, labels = _tiny()
    _, grads = eft.classifier_loss_and_grads(params, cfg, windows, pool, labels)
    assert set(grads) == set(params) - {"b_out"}
    for name, array in params.items():
        if name == "b_out":
            continue
        numeric = central_differences(array, lambda: eft.classifier_loss_and_grads(params, cfg, windows, pool,
                                                                                  labels)[0])
        assert relative_error(grads[name], numeric) < 1e-6, name


def test_fine_tuning_leaves_the_unread_bias_and_the_input_alone():
    cfg, params, windows, pool, labels = _tiny()
    base = {k: v.astype(np.float32) for k, v in params.items() if not k.startswith("head.")}
    before = {k: v.copy() for k, v in base.items()}
    model = eft.fine_tune_classifier(base, cfg, windows, pool, labels, eft.ClassifierConfig(steps=5, batch_size=2))
    assert all(np.array_equal(base[k], before[k]) for k in base)            # copied, not changed
    assert np.array_equal(model.params["b_out"], before["b_out"])           # never read, never trained
    assert not np.array_equal(model.params["E"], before["E"])
    assert eft.classifier_proba(model, windows, pool).shape == (3, 3)


def test_the_verbaliser_reads_the_tone_words_ids():
    vocabulary = fe.filing_world().vocabulary
    ids = prompting.verbaliser_ids()
    assert [vocabulary.words[i] for i in ids[0]] == ["bad", "poor", "unsuccessful"]
    assert [vocabulary.words[i] for i in ids[1]] == ["good", "excellent", "successful"]
    assert prompting.TEMPLATE.count("[MASK]") == 1


def test_the_prompt_and_sentence_windows_hold_the_whole_sentence():
    cfg = fe.SETUP.encoder(fe.filing_world().vocabulary.size)
    world = fe.filing_world()
    train, test = prompting.task_sentences()
    assert not set(np.unique(world.corpus.document[train.starts])) & set(fe.split().test_documents.tolist())
    windows = prompting.prompt_windows(test, cfg)
    centre = 16
    assert np.all(windows[:, centre] == cfg.mask_id)
    sentence, pool = prompting.sentence_windows(test, cfg)
    lengths = test.stops - test.starts
    assert np.array_equal(pool.sum(axis=1), lengths)
    for row in range(0, test.size, 17):            # the sentence's words, then [SEP] and the template's first four
        words = world.ids[test.starts[row]:test.stops[row]]
        assert np.array_equal(windows[row, centre - 5 - words.size:centre - 5], words)
        assert np.array_equal(sentence[row, centre + 1 - words.size:centre + 1], words)
    # every task sentence has lexicon words of one polarity, and its label is that polarity
    for side in (train, test):
        for a, b, label in zip(side.starts[:50], side.stops[:50], side.labels[:50]):
            polarity = set(np.sign(world.corpus.lexicon[a:b][world.corpus.lexicon[a:b] != 0]).tolist())
            assert polarity == {1 if label else -1}


def test_balanced_draws():
    labels = np.array([0] * 10 + [1] * 6)
    rows = prompting.draw_examples(labels, 8, np.random.default_rng(0))
    assert np.bincount(labels[rows]).tolist() == [4, 4]
    with pytest.raises(ValueError, match="k must be even"):
        prompting.draw_examples(labels, 7, np.random.default_rng(0))
    with pytest.raises(ValueError, match="labels must hold"):
        prompting.draw_examples(labels, 14, np.random.default_rng(0))


@pytest.mark.parametrize("call, error, words", [
    (lambda c, p, w, q, y: eft.classifier_loss_and_grads(p, c, w, q.astype(int), y), TypeError, "pool"),
    (lambda c, p, w, q, y: eft.classifier_loss_and_grads(p, c, w, q[:, :2], y), ValueError, "pool"),
    (lambda c, p, w, q, y: eft.classifier_loss_and_grads(p, c, w, np.zeros_like(q), y), ValueError, "pool"),
    (lambda c, p, w, q, y: eft.classifier_loss_and_grads(p, c, w, w == c.pad_id, y), ValueError, "pool"),
    (lambda c, p, w, q, y: eft.classifier_loss_and_grads(p, c, w, q, y[:2]), ValueError, "labels"),
    (lambda c, p, w, q, y: eft.classifier_loss_and_grads(p, c, w + 10, q, y), ValueError, "windows"),
    (lambda c, p, w, q, y: eft.classifier_loss_and_grads({"E": p["E"]}, c, w, q, y), TypeError, "params"),
    (lambda c, p, w, q, y: eft.fine_tune_classifier(p, c, w, q, np.zeros(3, int)), ValueError, "two classes"),
    (lambda c, p, w, q, y: eft.fine_tune_classifier(p, c, w, q, y, "fast"), TypeError, "settings"),
    (lambda c, p, w, q, y: eft.fine_tune_classifier(p, "cfg", w, q, y), TypeError, "config"),
    (lambda c, p, w, q, y: eft.classifier_proba("model", w, q), TypeError, "model"),
    (lambda c, p, w, q, y: eft.ClassifierConfig(warmup_share=1.0), ValueError, "warmup_share"),
    (lambda c, p, w, q, y: eft.ClassifierConfig(steps=0), ValueError, "steps"),
    (lambda c, p, w, q, y: prompting.PromptingSetup("encoder"), TypeError, "encoder"),
    (lambda c, p, w, q, y: prompting.PromptingSetup(fe.SETUP, draws=0), ValueError, "draws"),
    (lambda c, p, w, q, y: prompting.task_sentences("setup"), TypeError, "setup"),
])
def test_bad_inputs_name_the_argument(call, error, words):
    cfg, params, windows, pool, labels = _tiny()
    base = {k: v for k, v in params.items()}
    with pytest.raises(error, match=words):
        if "fine_tune" in repr(call.__code__.co_names):
            call(cfg, {k: v for k, v in base.items() if not k.startswith("head.")}, windows, pool, labels)
        else:
            call(cfg, base, windows, pool, labels)


def test_prompt_accuracy_refuses_words_outside_the_verbaliser():
    from mlm_book.experiments import ch07_prompting

    with pytest.raises(ValueError, match="words\\[1\\]"):
        ch07_prompting.prompt_accuracy((("bad",), ("great",)))
    with pytest.raises(TypeError, match="words"):
        ch07_prompting.prompt_accuracy("good")


@pytest.mark.book
def test_the_runs_relationships_at_every_seed():
    from mlm_book.experiments import ch07_prompting

    study = ch07_prompting.results()
    assert study.finetuned.shape == (len(fe.SEEDS), len(study.ks), prompting.DRAWS)
    # the curve's mean rises from the first k to the last (the grid spans 8 to the whole pool)
    assert study.curve.mean(axis=0)[-1] > study.curve.mean(axis=0)[0]
    # the prompt's accuracy with the whole verbaliser is what prompt_accuracy computes
    assert np.allclose(ch07_prompting.prompt_accuracy(), study.prompt)
    shares, auc = ch07_prompting.prompt_profile()
    assert np.all((0 <= shares) & (shares <= 1)) and np.all((0 <= auc) & (auc <= 1))
