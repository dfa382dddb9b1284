"""The batched CRF fit against the one-sentence reference `mlm_book.crf`, finite differences and sampled data."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from mlm_book import crf, crf_fit
from mlm_book.crf_fit import (
    FORBIDDEN,
    CRFTagger,
    batch_log_likelihood,
    decode,
    fit_crf,
    minimize_lbfgs,
    penalised_objective,
)
from mlm_book.probe import fit_probe
from mlm_book.tagging import allowed_transitions, check_tags


# ----------------------------------------------------------------------------- helpers
def _ragged(rng, batch, padded, n_tags, scale=1.0):
    """A padded batch with garbage past each length (huge emissions, tag ids out of range)."""
    emissions = scale * rng.normal(size=(batch, padded, n_tags))
    lengths = rng.integers(1, padded + 1, size=batch)
    lengths[0] = 1                                   # always a one-token sentence
    lengths[-1] = padded                             # and a full one
    tags = rng.integers(0, n_tags, size=(batch, padded))
    past = np.arange(padded)[None, :] >= lengths[:, None]
    emissions[past] = 1e6
    tags[past] = -99
    return emissions, lengths, tags


def _reference(emissions, lengths, tags, transitions, start, end):
    """Sum of crf.nll_gradient over the sentences, each cut to its length."""
    batch, n_tags = emissions.shape[0], emissions.shape[2]
    loss, g_e = 0.0, np.zeros_like(emissions)
    g_t, g_s, g_end = np.zeros((n_tags, n_tags)), np.zeros(n_tags), np.zeros(n_tags)
    for s in range(batch):
        n = lengths[s]
        one = crf.nll_gradient(tags[s, :n], emissions[s, :n], transitions, start, end)
        assert one.loss == pytest.approx(crf.negative_log_likelihood(tags[s, :n], emissions[s, :n], transitions,
                                                                     start, end), abs=0)
        loss += one.loss
        g_e[s, :n] = one.emissions
        g_t += one.transitions
        g_s += one.start
        g_end += one.end
    return loss, g_e, g_t, g_s, g_end


def _compare(got, expected, atol, loss_rtol=0.0):
    loss, g_e, g_t, g_s, g_end = expected
    assert abs(got.loss - loss) <= max(atol, loss_rtol * abs(loss))
    assert got.log_likelihood == -got.loss
    for name, value in (("emissions", g_e), ("transitions", g_t), ("start", g_s), ("end", g_end)):
        np.testing.assert_allclose(getattr(got, name), value, rtol=0, atol=atol, err_msg=name)


BIO = ["O", "B-X", "I-X", "B-Y", "I-Y"]


def _sample_bio(rng, batch, padded, tag_set, means, noise):
    """Sentences from an HMM over valid BIO sequences with Gaussian token vectors around ``means[tag]``.

    Entities are sticky (``I`` repeats) and ``B-X`` and ``I-X`` have nearby means, so a
    token's vector alone hardly says whether it begins an entity; its neighbours do.
    """
    n_tags = len(tag_set)
    mask = allowed_transitions(tag_set, "BIO")
    weights = mask[:n_tags, :n_tags] * (1.0 + 3.0 * np.eye(n_tags))
    weights[0, 0] = 4.0
    chain = weights / weights.sum(axis=1, keepdims=True)
    first = mask[n_tags, :n_tags] / mask[n_tags, :n_tags].sum()
    tags = np.zeros((batch, padded), dtype=np.int64)
    tags[:, 0] = rng.choice(n_tags, size=batch, p=first)
    for t in range(1, padded):
        cumulative = chain[tags[:, t - 1]].cumsum(axis=1)
        tags[:, t] = np.minimum((rng.random(batch)[:, None] > cumulative).sum(axis=1), n_tags - 1)
    lengths = rng.integers(1, padded + 1, size=batch)
    features = means[tags] + noise * rng.normal(size=(batch, padded, means.shape[1]))
    return features, lengths, np.where(np.arange(padded)[None, :] < lengths[:, None], tags, -1)


def _bio_problem(seed=0, batch=400, padded=12, d=8):
    rng = np.random.default_rng(seed)
    n_tags = len(BIO)
    centres = rng.normal(size=(3, d))                          # O, X, Y
    means = np.stack([centres[0], centres[1] + 0.3 * rng.normal(size=d), centres[1],
                      centres[2] + 0.3 * rng.normal(size=d), centres[2]])
    train = _sample_bio(rng, batch, padded, BIO, means, noise=0.9)
    test = _sample_bio(rng, batch, padded, BIO, means, noise=0.9)
    return n_tags, train, test


def _tokens(features, lengths, tags):
    inside = np.arange(features.shape[1])[None, :] < lengths[:, None]
    return features[inside], tags[inside]


# ----------------------------------------------------------------------------- batched likelihood
@pytest.mark.parametrize("seed", range(12))
def test_batch_equals_sum_of_sentences(seed):
    rng = np.random.default_rng(seed)
    batch, padded, n_tags = int(rng.integers(1, 9)), int(rng.integers(1, 8)), int(rng.integers(1, 6))
    scale = (0.5, 1.0, 3.0)[seed % 3]
    emissions, lengths, tags = _ragged(rng, batch, padded, n_tags, scale)
    transitions = scale * rng.normal(size=(n_tags, n_tags))
    start, end = scale * rng.normal(size=n_tags), scale * rng.normal(size=n_tags)
    got = batch_log_likelihood(emissions, lengths, tags, transitions, start, end)
    _compare(got, _reference(emissions, lengths, tags, transitions, start, end), atol=1e-10)
    past = np.arange(padded)[None, :] >= lengths[:, None]
    assert np.all(got.emissions[past] == 0.0)


def test_batch_with_underflowing_rows_and_forbidden_steps(monkeypatch):
    """Scores of hundreds of nats send rows to the exact per-column log-sum-exp; both paths agree with crf."""
    slow_rows = []
    original = crf_fit._log_matmul

    def counting(*args):
        result, fast = original(*args)
        slow_rows.append(int((~fast).sum()))
        return result, fast

    monkeypatch.setattr(crf_fit, "_log_matmul", counting)
    rng = np.random.default_rng(7)
    n_tags, padded = 4, 6
    for scale in (1.0, 300.0, 2000.0):
        emissions, lengths, tags = _ragged(rng, 10, padded, n_tags)
        emissions[:5] *= scale                       # half the batch huge, half ordinary
        transitions = rng.normal(size=(n_tags, n_tags))
        transitions[0, 1] = transitions[2, 3] = FORBIDDEN
        start, end = rng.normal(size=n_tags), rng.normal(size=n_tags)
        got = batch_log_likelihood(emissions, lengths, tags, transitions, start, end)
        _compare(got, _reference(emissions, lengths, tags, transitions, start, end), atol=1e-10, loss_rtol=1e-12)
    assert sum(slow_rows) > 0 and len(slow_rows) > sum(1 for r in slow_rows if r)


# ----------------------------------------------------------------------------- the objective
def _random_tagger(rng, d, n_tags, scale=0.5):
    return CRFTagger(W=scale * rng.normal(size=(d, n_tags)), b=scale * rng.normal(size=n_tags),
                     transitions=scale * rng.normal(size=(n_tags, n_tags)), start=scale * rng.normal(size=n_tags),
                     end=scale * rng.normal(size=n_tags))


@pytest.mark.parametrize("masked", [False, True])
def test_objective_gradient_matches_central_differences(masked):
    rng = np.random.default_rng(3)
    tag_set = ["O", "B-X", "I-X"]
    n_tags, d, padded = 3, 4, 5
    features = rng.normal(size=(6, padded, d))
    lengths = np.array([5, 1, 3, 5, 2, 4])
    mask = allowed_transitions(tag_set, "BIO") if masked else None
    tags = np.array([[0, 1, 2, 2, 0], [1, 0, 0, 0, 0], [1, 1, 2, 0, 0], [0, 0, 1, 2, 0], [0, 1, 0, 0, 0],
                     [1, 2, 0, 1, 0]])
    tagger = _random_tagger(rng, d, n_tags)
    if masked:
        tagger = dataclasses.replace(tagger, transitions=np.where(mask[:3, :3], tagger.transitions, FORBIDDEN),
                                     start=np.where(mask[3, :3], tagger.start, FORBIDDEN))
    strength = 0.05
    analytic = penalised_objective(tagger, features, lengths, tags, strength=strength, allowed=mask)
    step = 1e-5
    for name in ("W", "b", "transitions", "start", "end"):
        base = getattr(tagger, name)
        numeric = np.zeros_like(base)
        for index in np.ndindex(base.shape):
            values = []
            for sign in (1.0, -1.0):
                moved = base.copy()
                moved[index] += sign * step
                values.append(penalised_objective(dataclasses.replace(tagger, **{name: moved}), features, lengths,
                                                  tags, strength=strength, allowed=mask).value)
            numeric[index] = (values[0] - values[1]) / (2 * step)
        exact = getattr(analytic, name)
        error = np.linalg.norm(numeric - exact) / np.linalg.norm(exact)
        assert error < 1e-6, (name, error)


def test_objective_is_the_per_token_mean_plus_penalty():
    rng = np.random.default_rng(4)
    features = rng.normal(size=(5, 4, 3))
    lengths = np.array([4, 2, 1, 3, 4])
    tags = rng.integers(0, 3, size=(5, 4))
    tagger = _random_tagger(rng, 3, 3)
    emissions = features @ tagger.W + tagger.b
    nll = batch_log_likelihood(emissions, lengths, tags, tagger.transitions, tagger.start, tagger.end).loss
    expected = nll / lengths.sum() + 0.5 * 0.1 * (np.sum(tagger.W ** 2) + np.sum(tagger.transitions ** 2))
    assert penalised_objective(tagger, features, lengths, tags, strength=0.1).value == pytest.approx(expected,
                                                                                                   rel=1e-13)


# ----------------------------------------------------------------------------- fitting
def _probe_as_init(model, n_tags):
    """A fitted softmax probe as emission weights on raw features: W (d, K), b (K,)."""
    standard = model.standardizer
    scaled = np.where(standard.active[:, None], model.weights / standard.scale[:, None], 0.0)
    W = np.zeros((standard.mean.size, n_tags))
    b = np.zeros(n_tags)
    W[:, model.classes[1:]] = scaled
    b[model.classes[1:]] = model.intercepts - standard.mean @ scaled
    return W, b


def test_fit_beats_per_token_logistic_and_lowers_the_objective():
    n_tags, (features, lengths, tags), (test_x, test_lengths, test_tags) = _bio_problem()
    d = features.shape[2]
    tagger = fit_crf(features, lengths, tags, n_tags)
    assert tagger.converged and tagger.gradient_norm < crf_fit.GRADIENT_TOLERANCE
    start = CRFTagger(W=np.zeros((d, n_tags)), b=np.zeros(n_tags), transitions=np.zeros((n_tags, n_tags)),
                      start=np.zeros(n_tags), end=np.zeros(n_tags))
    at_start = penalised_objective(start, features, lengths, tags).value
    at_end = penalised_objective(tagger, features, lengths, tags)
    assert at_end.value == pytest.approx(tagger.objective, rel=1e-12)
    assert at_end.value < at_start - 0.3
    # b, start and end are defined up to a constant each; the gradient never moves that constant
    for name in ("b", "start", "end"):
        assert abs(getattr(tagger, name).sum()) < 1e-10, name
    # Held-out accuracy: Viterbi decoding of the CRF against the per-token logistic probe.
    tokens, token_tags = _tokens(features, lengths, tags)
    probe = fit_probe(tokens, token_tags)
    held_x, held_tags = _tokens(test_x, test_lengths, test_tags)
    probe_accuracy = float(np.mean(probe.predict(held_x) == held_tags))
    paths = decode(tagger, test_x, test_lengths)
    crf_accuracy = float(np.mean(np.concatenate(paths) == held_tags))
    assert crf_accuracy >= probe_accuracy
    assert crf_accuracy > probe_accuracy + 0.02, (crf_accuracy, probe_accuracy)   # context pays: 0.84 vs 0.81
    # Starting from the probe's weights (a lower start) reaches the same minimum of F, which is convex
    # (strictly in W and T; b, start and end keep the start's mean, so the minimiser itself may differ).
    init = _probe_as_init(probe, n_tags)
    from_probe = CRFTagger(*init, transitions=np.zeros((n_tags, n_tags)), start=np.zeros(n_tags), end=np.zeros(n_tags))
    assert penalised_objective(from_probe, features, lengths, tags).value < at_start
    # F - F* <= |g|^2 p / (2 lambda) ~ 4e-10 at tol 1e-7 (80 parameters, lambda = 1e-3)
    warm = fit_crf(features, lengths, tags, n_tags, init=init, tol=1e-7, max_iter=2000)
    cold = fit_crf(features, lengths, tags, n_tags, tol=1e-7, max_iter=2000)
    assert warm.converged and cold.converged
    assert warm.objective == pytest.approx(cold.objective, abs=1e-9)
    assert cold.objective <= tagger.objective


def test_fit_with_allowed_never_decodes_an_invalid_sequence():
    tag_set = ["O", "B-X", "I-X"]
    mask = allowed_transitions(tag_set, "BIO")
    rng = np.random.default_rng(5)
    d = 6
    centre_o, centre_x = rng.normal(size=d), rng.normal(size=d)
    means = np.stack([centre_o, centre_x + 0.2 * rng.normal(size=d), centre_x])
    features, lengths, tags = _sample_bio(rng, 300, 10, tag_set, means, noise=1.2)
    test_x, test_lengths, _ = _sample_bio(rng, 300, 10, tag_set, means, noise=1.2)
    tagger = fit_crf(features, lengths, tags, 3, allowed=mask)
    assert tagger.converged
    # forbidden scores are constants, not parameters: I-X after O, I-X first
    assert tagger.transitions[0, 2] == FORBIDDEN and tagger.start[2] == FORBIDDEN
    assert np.all(tagger.transitions[mask[:3, :3]] > FORBIDDEN / 2)
    assert penalised_objective(tagger, features, lengths, tags, allowed=mask).value == pytest.approx(
        tagger.objective, rel=1e-12)
    for allowed in (mask, None):
        for path in decode(tagger, test_x, test_lengths, allowed=allowed):
            check_tags([tag_set[i] for i in path], "BIO")
    # not vacuous: the same model's emissions alone, token by token, do break the rules
    invalid = 0
    for sentence, length in zip(tagger.emissions(test_x), test_lengths):
        try:
            check_tags([tag_set[i] for i in sentence[:length].argmax(axis=1)], "BIO")
        except ValueError:
            invalid += 1
    assert invalid > 10


def test_fit_refuses_gold_tags_the_mask_forbids():
    mask = allowed_transitions(["O", "B-X", "I-X"], "BIO")
    features = np.zeros((2, 3, 2))
    with pytest.raises(ValueError, match=r"tags must be sequences that allowed permits, but sentence 1"):
        fit_crf(features, [3, 2], [[0, 1, 2], [0, 2, 0]], 3, allowed=mask)


def test_fit_reports_an_unfinished_run():
    n_tags, (features, lengths, tags), _ = _bio_problem(batch=50)
    tagger = fit_crf(features, lengths, tags, n_tags, max_iter=3)
    assert tagger.iterations == 3 and tagger.converged is False and tagger.gradient_norm > 1e-5


# ----------------------------------------------------------------------------- decoding
def test_decode_is_crf_viterbi():
    rng = np.random.default_rng(6)
    tag_set = ["O", "B-X", "I-X", "B-Y", "I-Y"]
    mask = allowed_transitions(tag_set, "BIO")
    tagger = _random_tagger(rng, 4, 5, scale=1.5)
    features, lengths, _ = _ragged(rng, 20, 7, 4)
    features[features == 1e6] = 0.0
    for allowed in (None, mask):
        paths = decode(tagger, features, lengths, allowed=allowed)
        emissions = features @ tagger.W + tagger.b
        for s, path in enumerate(paths):
            expected, _ = crf.viterbi(emissions[s, :lengths[s]], tagger.transitions, tagger.start, tagger.end,
                                      allowed=allowed)
            assert path.dtype == np.int64 and np.array_equal(path, expected)


# ----------------------------------------------------------------------------- L-BFGS
def test_lbfgs_finds_the_minimiser_of_a_convex_quadratic():
    rng = np.random.default_rng(8)
    basis, _ = np.linalg.qr(rng.normal(size=(30, 30)))
    A = basis @ np.diag(np.geomspace(0.1, 100.0, 30)) @ basis.T       # condition number 1000
    c = rng.normal(size=30)
    minimiser = np.linalg.solve(A, c)
    result = minimize_lbfgs(lambda x: (0.5 * x @ A @ x - c @ x, A @ x - c), np.zeros(30), tol=1e-10)
    assert result.converged and result.gradient_norm < 1e-10
    np.testing.assert_allclose(result.x, minimiser, rtol=0, atol=1e-8)
    assert result.value == pytest.approx(-0.5 * c @ minimiser, rel=1e-12)
    again = minimize_lbfgs(lambda x: (0.5 * x @ A @ x - c @ x, A @ x - c), np.zeros(30), tol=1e-10)
    assert np.array_equal(again.x, result.x) and again.iterations == result.iterations        # deterministic


def test_lbfgs_on_rosenbrock():
    def rosenbrock(x):
        value = (1 - x[0]) ** 2 + 100 * (x[1] - x[0] ** 2) ** 2
        gradient = np.array([-2 * (1 - x[0]) - 400 * x[0] * (x[1] - x[0] ** 2), 200 * (x[1] - x[0] ** 2)])
        return value, gradient
    result = minimize_lbfgs(rosenbrock, [-1.2, 1.0], tol=1e-8)
    assert result.converged
    np.testing.assert_allclose(result.x, [1.0, 1.0], atol=1e-6)


def test_lbfgs_stops_when_no_step_decreases():
    """A gradient that does not belong to the value: the line search fails and the run ends, unconverged."""
    result = minimize_lbfgs(lambda x: (1.0, np.ones_like(x)), np.zeros(3), max_iter=10**9)
    assert not result.converged and result.iterations == 0 and result.x.tolist() == [0.0, 0.0, 0.0]


# ----------------------------------------------------------------------------- bad input
def _valid():
    features = np.ones((2, 3, 2))
    return dict(features=features, lengths=np.array([3, 1]), tags=np.array([[0, 1, 2], [1, -5, 7]]), n_tags=3)


FIT_BAD = [
    (dict(features=np.full((2, 3, 2), np.nan)), ValueError, "features must be finite"),
    (dict(features=np.ones((2, 3))), ValueError, "features must have 3 dimension"),
    (dict(features=np.ones((0, 3, 2))), ValueError, "features must have shape"),
    (dict(features="x"), TypeError, "features"),
    (dict(lengths=np.array([3, 0])), ValueError, r"lengths must be in \[1, n\] = \[1, 3\]"),
    (dict(lengths=np.array([4, 1])), ValueError, "lengths must be in"),
    (dict(lengths=np.array([3])), ValueError, "lengths must hold one length per sentence"),
    (dict(lengths=np.array([3.0, 1.0])), TypeError, "lengths must hold integers"),
    (dict(tags=np.array([[0, 1, 3], [1, 0, 0]])), ValueError, r"tags must be tag ids in \[0, n_tags\) = \[0, 3\)"),
    (dict(tags=np.array([[0, 1, 2], [-1, 0, 0]])), ValueError, "tags must be tag ids"),
    (dict(tags=np.array([[0, 1], [1, 0]])), ValueError, r"tags must have shape \(B, n\) = \(2, 3\)"),
    (dict(n_tags=1), ValueError, "n_tags must be an integer >= 2"),
    (dict(n_tags=2.0), TypeError, "n_tags must be an integer"),
    (dict(n_tags=10**9), ValueError, "n_tags"),
    (dict(strength=0.0), ValueError, "strength"),
    (dict(max_iter=0), ValueError, "max_iter"),
    (dict(tol=float("nan")), ValueError, "tol"),
    (dict(allowed=np.ones((3, 3), dtype=bool)), ValueError, r"allowed must have shape \(K \+ 1, K \+ 1\) = \(4, 4\)"),
    (dict(allowed=np.ones((4, 4))), TypeError, "allowed must be a boolean array"),
    (dict(init=(np.zeros((3, 3)), np.zeros(3))), ValueError, r"init must hold W of shape \(d, n_tags\) = \(2, 3\)"),
    (dict(init=(np.zeros((2, 3)), np.full(3, np.inf))), ValueError, "init b must be finite"),
    (dict(init="probe"), TypeError, "init must be None, a CRFTagger or a pair"),
]


@pytest.mark.parametrize("change,error,message", FIT_BAD)
def test_fit_bad_input_is_named(change, error, message):
    arguments = dict(_valid(), **change)
    with pytest.raises(error, match=message):
        fit_crf(**arguments)


def test_padding_past_a_length_is_ignored():
    assert fit_crf(**_valid()).converged


def test_batch_bad_input_is_named():
    emissions, transitions, z = np.zeros((2, 3, 2)), np.zeros((2, 2)), np.zeros(2)
    good = dict(emissions=emissions, lengths=[3, 2], tags=[[0, 1, 1], [1, 0, 9]], transitions=transitions,
                start=z, end=z)
    batch_log_likelihood(**good)
    for change, error, message in [
        (dict(emissions=np.zeros((3, 2))), ValueError, "emissions must have 3 dimension"),
        (dict(transitions=np.zeros((3, 3))), ValueError, r"transitions must have shape \(K, K\) = \(2, 2\)"),
        (dict(start=np.zeros(3)), ValueError, "start must have shape"),
        (dict(end=[np.inf, 0.0]), ValueError, "end must be finite"),
        (dict(lengths=[3, 4]), ValueError, "lengths must be in"),
        (dict(tags=[[0, 1, 1], [1, 2, 0]]), ValueError, r"tags must be tag ids in \[0, K\) = \[0, 2\)"),
        (dict(emissions=np.full((2, 3, 2), 1e305)), ValueError, "too large"),
    ]:
        with pytest.raises(error, match=message):
            batch_log_likelihood(**dict(good, **change))


def test_decode_and_tagger_bad_input_is_named():
    tagger = _random_tagger(np.random.default_rng(0), 2, 3)
    features = np.ones((2, 3, 2))
    with pytest.raises(TypeError, match="tagger must be CRFTagger"):
        decode("tagger", features, [3, 1])
    with pytest.raises(ValueError, match="features must have d = 2"):
        decode(tagger, np.ones((2, 3, 4)), [3, 1])
    with pytest.raises(ValueError, match="lengths must be in"):
        decode(tagger, features, [0, 1])
    with pytest.raises(ValueError, match="allowed permits no tag sequence"):
        decode(tagger, features, [3, 1], allowed=np.zeros((4, 4), dtype=bool))
    with pytest.raises(ValueError, match=r"b must have shape \(K,\) = \(3,\)"):
        CRFTagger(W=np.zeros((2, 3)), b=np.zeros(2), transitions=np.zeros((3, 3)), start=np.zeros(3),
                  end=np.zeros(3))
    with pytest.raises(ValueError, match="W must be finite"):
        dataclasses.replace(tagger, W=np.full((2, 3), np.nan))
    with pytest.raises(TypeError, match="converged must be True or False"):
        dataclasses.replace(tagger, converged="yes")
    with pytest.raises(TypeError, match="fun must be callable"):
        minimize_lbfgs(None, [0.0])
    with pytest.raises(ValueError, match="fun must return a gradient of the shape of x0"):
        minimize_lbfgs(lambda x: (0.0, np.zeros(2)), [0.0])
    with pytest.raises(ValueError, match=r"fun failed at x0 \(shape \(2,\)\): matmul"):
        minimize_lbfgs(lambda x: (0.0, np.ones((3, 3)) @ x), [0.0, 1.0])
    with pytest.raises(ValueError, match="fun must be finite at x0"):
        minimize_lbfgs(lambda x: (np.inf, x), [0.0])


def test_batched_viterbi_is_viterbi_sentence_by_sentence():
    """Same paths as crf.viterbi per sentence, ties included (integer scores), masked or not; -1 past each length."""
    from mlm_book import crf, tagging
    from mlm_book.crf_fit import viterbi_batch
    tags = ["O", "B-ORG", "I-ORG", "B-LOC", "I-LOC"]
    mask = tagging.allowed_transitions(tags, "BIO")
    rng = np.random.default_rng(11)
    for trial in range(200):
        B, n, K = int(rng.integers(1, 20)), int(rng.integers(1, 12)), len(tags)
        if trial % 2:
            e, T = rng.integers(-2, 3, size=(B, n, K)).astype(float), rng.integers(-1, 2, size=(K, K)).astype(float)
        else:
            e, T = rng.normal(size=(B, n, K)), rng.normal(size=(K, K))
        a, b = rng.normal(size=K), rng.normal(size=K)
        lengths = rng.integers(1, n + 1, size=B)
        allowed = mask if trial % 3 else None
        paths = viterbi_batch(e, lengths, T, a, b, allowed=allowed)
        for s in range(B):
            assert np.array_equal(paths[s, :lengths[s]], crf.viterbi(e[s, :lengths[s]], T, a, b, allowed=allowed)[0])
            assert np.all(paths[s, lengths[s]:] == -1)
    with pytest.raises(ValueError, match="lengths must be in"):
        viterbi_batch(np.zeros((2, 3, 5)), [1, 4], np.zeros((5, 5)), np.zeros(5), np.zeros(5))
    with pytest.raises(ValueError, match="emissions must be finite"):
        viterbi_batch(np.full((1, 2, 5), np.inf), [2], np.zeros((5, 5)), np.zeros(5), np.zeros(5))
