"""Tests of mlm_book.probe: the ridge-logistic probe, its splits and its control."""

import numpy as np
import pytest

from mlm_book import probe as p


def toy(n=600, d=5, seed=0, noise=1.0):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, d)) * rng.uniform(0.01, 100.0, size=d)
    direction = rng.standard_normal(d) / x.std(axis=0)
    y = (x @ direction + noise * rng.standard_normal(n) > 0).astype(np.int64)
    return x, y


def full_gradient(model, x, y):
    """Gradient of the probe's objective recomputed from scratch (not the solver's)."""
    z = model.standardizer.transform(x)
    z1 = np.c_[z, np.ones(len(z))]
    theta = np.r_[model.weights, model.intercepts[None, :]]
    proba = model.predict_proba(x)
    onehot = (y[:, None] == model.classes[None, :]).astype(float)
    grad = z1.T @ (proba[:, 1:] - onehot[:, 1:]) / len(x)
    grad[:-1] += model.strength * theta[:-1]
    return grad


def test_newton_converges_binary():
    x, y = toy()
    model = p.fit_probe(x, y)
    assert model.gradient_norm < p.GRADIENT_TOLERANCE
    assert np.abs(full_gradient(model, x, y)).max() < 1e-9
    assert model.iterations < 20  # Newton: a handful of steps


def test_newton_converges_on_separable_data():
    # Without the ridge the weights would diverge; with it Newton stops at a finite optimum.
    x, y = toy(noise=0.0)
    model = p.fit_probe(x, y)
    assert np.abs(full_gradient(model, x, y)).max() < 1e-9
    assert np.isfinite(model.weights).all()
    assert np.linalg.norm(model.weights) < np.sqrt(2 * np.log(2) / p.PROBE_STRENGTH)
    assert p.accuracy(model, x, y) > 0.98  # the ridge trades a few margin points for a finite norm


def test_multiclass_converges_and_is_optimal():
    rng = np.random.default_rng(1)
    x = rng.standard_normal((900, 4))
    y = np.argmax(x[:, :3] + 0.7 * rng.standard_normal((900, 3)), axis=1) + 5  # labels 5, 6, 7
    model = p.fit_probe(x, y)
    assert model.classes.tolist() == [5, 6, 7]
    assert np.abs(full_gradient(model, x, y)).max() < 1e-9
    assert np.allclose(model.predict_proba(x).sum(axis=1), 1.0)
    # A strictly convex objective: any perturbation raises it.
    base = model.objective
    for _ in range(5):
        bumped = p.ProbeModel(model.classes, model.standardizer,
                              model.weights + 1e-3 * rng.standard_normal(model.weights.shape),
                              model.intercepts, model.strength, 0, 0.0, 0.0)
        logp = np.log(bumped.predict_proba(x)[np.arange(900), y - 5])
        value = -logp.mean() + 0.5 * model.strength * np.sum(bumped.weights**2)
        assert value > base


def test_intercept_is_not_penalised():
    # With an enormous ridge the weights vanish but the intercept still fits the log-odds exactly.
    x, y = toy(seed=3)
    model = p.fit_probe(x, y, strength=1e6)
    assert np.abs(model.weights).max() < 1e-5
    share = y.mean()
    assert abs(model.intercepts[0] - np.log(share / (1 - share))) < 1e-4


def test_standardisation_uses_training_rows_only():
    x, y = toy(seed=4)
    model = p.fit_probe(x[:300], y[:300])
    assert np.allclose(model.standardizer.mean, x[:300].mean(axis=0), rtol=0, atol=1e-12)
    assert np.allclose(model.standardizer.scale, x[:300].std(axis=0), rtol=1e-12)
    # Standardising makes the fit invariant to feature scale (the penalty acts on standardised weights).
    scaled = p.fit_probe(x[:300] * 1e3 + 5.0, y[:300])
    assert np.allclose(model.weights, scaled.weights, atol=1e-8)


def test_constant_features_give_intercept_only_classifier():
    # kestrel's layer 0: one vector for every occurrence.
    rng = np.random.default_rng(5)
    vector = rng.standard_normal(64)
    x = np.tile(vector, (118, 1))
    y = np.r_[np.zeros(57, int), np.ones(61, int)]
    model = p.fit_probe(x, y)
    assert not model.standardizer.active.any()
    assert np.all(model.weights == 0.0)
    assert abs(model.intercepts[0] - np.log(61 / 57)) < 1e-12
    assert np.all(model.predict(x) == 1)
    assert p.accuracy(model, x, y) == pytest.approx(61 / 118, abs=1e-15)
    # Mixed: a constant column among informative ones gets weight exactly zero.
    x2, y2 = toy(seed=6)
    x2[:, 2] = 3.25
    model2 = p.fit_probe(x2, y2)
    assert model2.weights[2, 0] == 0.0 and not model2.standardizer.active[2]


def test_fit_and_score_majority_share():
    rng = np.random.default_rng(7)
    train = np.tile(rng.standard_normal(3), (100, 1))
    train_y = np.r_[np.zeros(40, int), np.ones(60, int)]
    test = np.tile(train[0], (50, 1))
    test_y = np.r_[np.zeros(30, int), np.ones(20, int)]
    score = p.fit_and_score(train, train_y, test, test_y)
    # A constant classifier scores exactly the test share of the training-majority class.
    assert score.accuracy == score.majority_share == 0.4


def test_kfold_partitions_and_stratifies():
    rng = np.random.default_rng(8)
    labels = np.r_[np.zeros(37, int), np.ones(63, int), np.full(10, 2)]
    rng.shuffle(labels)
    for strat in (None, labels):
        splits = p.kfold_splits(110, 5, np.random.default_rng(0), labels=strat)
        tests = np.concatenate([test for _, test in splits])
        assert sorted(tests.tolist()) == list(range(110))  # every row tested exactly once
        for train, test in splits:
            assert np.intersect1d(train, test).size == 0
            assert train.size + test.size == 110
        sizes = [test.size for _, test in splits]
        assert max(sizes) - min(sizes) <= 1
    splits = p.kfold_splits(110, 5, np.random.default_rng(0), labels=labels)
    for _, test in splits:
        for value in (0, 1, 2):
            expected = np.sum(labels == value) / 5
            assert abs(np.sum(labels[test] == value) - expected) < 1
    # Seeded: same generator state, same folds; a different seed shuffles differently.
    again = p.kfold_splits(110, 5, np.random.default_rng(0), labels=labels)
    assert all(np.array_equal(a[1], b[1]) for a, b in zip(splits, again))
    other = p.kfold_splits(110, 5, np.random.default_rng(1), labels=labels)
    assert not all(np.array_equal(a[1], b[1]) for a, b in zip(splits, other))


def test_leave_one_group_out():
    groups = np.array(["a", "b", "a", "c", "b", "b"])
    splits = p.leave_one_group_out(groups)
    assert [test.tolist() for _, test in splits] == [[0, 2], [1, 4, 5], [3]]
    for train, test in splits:
        assert set(groups[train]).isdisjoint(set(groups[test]))
        assert train.size + test.size == 6
    with pytest.raises(ValueError, match="groups"):
        p.leave_one_group_out(["a", "a"])


def test_control_permutes_training_labels_only(monkeypatch):
    x, y = toy(n=400, seed=9, noise=0.1)
    seen = []
    original = p.fit_probe

    def spy(features, labels, **kwargs):
        seen.append(np.array(labels))
        return original(features, labels, **kwargs)

    monkeypatch.setattr(p, "fit_probe", spy)
    test_y = y[200:].copy()
    score = p.shuffled_control(x[:200], y[:200], x[200:], test_y, np.random.default_rng(0))
    trained_on = seen[-1]
    assert sorted(trained_on.tolist()) == sorted(y[:200].tolist())  # a permutation: same class counts
    assert not np.array_equal(trained_on, y[:200])  # ... but actually permuted
    assert np.array_equal(test_y, y[200:])  # the test labels are untouched
    # Scored against the true test labels: the control is near the majority share, the probe far above.
    real = p.fit_and_score(x[:200], y[:200], x[200:], y[200:])
    assert real.accuracy > 0.9
    # Binomial sd of a 200-row accuracy is ~0.035: 0.15 above the majority would be > 4 sd.
    assert score.accuracy < score.majority_share + 0.15


def test_cross_validate_and_its_control():
    x, y = toy(n=500, seed=10, noise=0.2)
    splits = p.kfold_splits(500, 5, np.random.default_rng(0), labels=y)
    cv = p.cross_validate(x, y, splits)
    assert cv.n_test == 500 and cv.accuracy > 0.85 and not cv.control
    assert cv.accuracy == pytest.approx(np.mean(cv.fold_accuracies), abs=0.01)
    control = p.cross_validate(x, y, splits, control=True, rng=np.random.default_rng(1))
    majority = max(y.mean(), 1 - y.mean())
    assert control.control and control.accuracy < majority + 0.1  # ~4.5 sd of a 500-row accuracy
    with pytest.raises(ValueError, match="rng"):
        p.cross_validate(x, y, splits, control=True)


def test_bad_input():
    x, y = toy(n=50)
    with pytest.raises(ValueError, match="labels must contain at least two classes"):
        p.fit_probe(x, np.ones(50, int))
    with pytest.raises(ValueError, match="train_labels must contain at least two classes"):
        p.fit_and_score(x, np.ones(50, int), x, y)
    with pytest.raises(ValueError, match="features must be finite"):
        p.fit_probe(np.where(np.eye(50, 5) > 0, np.nan, x), y)
    with pytest.raises(ValueError, match="test_features must be finite"):
        p.fit_and_score(x, y, np.full((3, 5), np.nan), y[:3])
    with pytest.raises(ValueError, match="labels must have one label per row"):
        p.fit_probe(x, y[:-1])
    with pytest.raises(ValueError, match="test_labels must have one label per row"):
        p.fit_and_score(x, y, x, y[:-2])
    with pytest.raises(ValueError, match="test_features must have 5 columns"):
        p.fit_and_score(x, y, x[:, :3], y)
    with pytest.raises(TypeError, match="labels must hold integer"):
        p.fit_probe(x, y.astype(float))
    with pytest.raises(ValueError, match="strength"):
        p.fit_probe(x, y, strength=0.0)
    with pytest.raises(ValueError, match="n_folds"):
        p.kfold_splits(3, 5, np.random.default_rng(0))
    with pytest.raises(TypeError, match="rng"):
        p.kfold_splits(10, 2, 0)
    splits = ((np.arange(10), np.arange(10, 50)),)
    labels = np.r_[np.zeros(10, int), y[10:]]
    with pytest.raises(ValueError, match=r"splits\[0\] has a single class"):
        p.cross_validate(x, labels, splits)


def test_control_with_permuted_test_labels():
    # Trained and scored on permuted labels: test labels are independent of the predictions, so the
    # expected accuracy is sum_c P(pred = c) share_c <= majority share; 2000 test rows give sd ~0.011.
    x, y = toy(n=4000, seed=11, noise=0.05)
    scores = [p.shuffled_control(x[:2000], y[:2000], x[2000:], y[2000:], np.random.default_rng(s),
                                 permute_test=True) for s in range(5)]
    for score in scores:
        assert score.accuracy <= score.majority_share + 0.035
    assert abs(np.mean([s.accuracy for s in scores]) - 0.5) < 0.03
