"""Tests of chapter 11's Q13 module: the filing encoder's masked-LM head as SPLADE term weights.

Identities first (the pooling against a loop over positions, the batched cached reading against
one window at a time, the PMI diagnosis against its definition, the ranking helpers against brute
force), then the gold the measures rest on, bad inputs, and the statements the chapter makes
(every word weighted, frequency first, the rules' verdicts).
"""

import matplotlib

matplotlib.use("Agg")

import math  # noqa: E402

import numpy as np  # noqa: E402
import pytest  # noqa: E402

from mlm_book import ledger  # noqa: E402
from mlm_book.experiments import ch11_sparse as q13  # noqa: E402
from mlm_book.artefacts import sparse_weights as sw
from mlm_book.artefacts import filing_encoder as fe  # noqa: E402
from mlm_book.finance.windows import centre_position, centred_windows  # noqa: E402
from mlm_book.finance.world import ASPECTS, COMPANIES  # noqa: E402
from mlm_book.nn import encoder as enc  # noqa: E402

BOOK = fe.SEEDS[0]
# The encoders hold float32 parameters: a logit of size ~20 computed along two summation orders
# (a batch of one window with every position's head, or a batch of many with the centre row only)
# differs by float32 rounding, a few 1e-6 relative; log(1 + x) only shrinks differences above zero.
FLOAT32_ATOL = 2e-4


def _shortest_held_out() -> int:
    gold = q13.filing_gold()
    sizes = np.diff(fe.filing_world().corpus.document_bounds())[gold.documents]
    return int(gold.documents[np.argmin(sizes)])


# ----------------------------------------------------------------------------- identities
def test_pooling_is_the_max_over_positions_of_log1p_relu():
    rng = np.random.default_rng(0)
    z = rng.normal(0.0, 2.0, size=(7, 9))
    z[:, 4] = -np.abs(z[:, 4]) - 0.1           # every logit of word 4 negative
    z[:, 5] = 0.0                              # all zero: ReLU gives zero
    z[3, 6] = 50.0
    loop = np.array([max(math.log1p(max(z[i, v], 0.0)) for i in range(7)) for v in range(9)])
    w = sw.splade_weights(z, exclude=())
    assert np.allclose(w, loop, atol=1e-15, rtol=0)
    assert np.all(w >= 0)
    assert np.array_equal(w == 0, np.all(z <= 0, axis=0))          # zero exactly where no logit is positive
    assert w[4] == 0 and w[5] == 0 and w[6] == pytest.approx(math.log(51.0))
    excluded = sw.splade_weights(z)                                 # [UNK] and [SEP] by default
    assert excluded[0] == excluded[1] == 0 and np.array_equal(excluded[2:], w[2:])


@pytest.mark.book
def test_cached_weights_equal_one_window_at_a_time():
    # the shortest held-out filing, read token by token with the encoder's full logits, pooled by a loop
    result = fe.trained_encoder()
    config = result.encoder
    world = fe.filing_world()
    document = _shortest_held_out()
    start, stop = world.corpus.document_bounds()[document:document + 2]
    centre = centre_position(config.length)
    row = q13.filing_gold().documents.tolist().index(document)
    for reading in sw.READINGS:
        best = np.full(config.vocab_size, -np.inf)
        for token in range(start, stop):
            window, _ = centred_windows(world.ids, world.corpus.document, length=config.length,
                                        pad_id=config.pad_id, select=[token])
            if reading == "masked":
                window[0, centre] = config.mask_id
            best = np.maximum(best, enc.logits(result.params, config, window)[0, centre].astype(np.float64))
        direct = np.log1p(np.maximum(best, 0.0))
        direct[[0, 1]] = 0.0
        cached = q13._seed_weights(BOOK, reading)[row]
        assert np.abs(cached - direct).max() < FLOAT32_ATOL
        public = sw.filing_weights(result, [document], reading=reading)[0]
        assert np.abs(public - direct).max() < FLOAT32_ATOL


@pytest.mark.book
def test_pmi_pooling_is_its_definition():
    result = fe.trained_encoder()
    world = fe.filing_world()
    document = _shortest_held_out()
    row = q13.filing_gold().documents.tolist().index(document)
    z = sw.filing_logits(result, document, reading="shown")
    log_q = z - np.log(np.exp(z - z.max(axis=1, keepdims=True)).sum(axis=1, keepdims=True)) - z.max(axis=1,
                                                                                                  keepdims=True)
    unigram = np.bincount(world.ids, minlength=z.shape[1]) / world.ids.size
    direct = log_q.max(axis=0) - np.log(unigram)
    cached = q13._seed_weights(BOOK, "shown", "pmi")[row]
    assert np.abs(cached[2:] - direct[2:]).max() < FLOAT32_ATOL
    assert cached[0] == cached[1] == cached[2:].min()


@pytest.mark.book
def test_positive_share_is_the_share_of_positive_logits():
    result = fe.trained_encoder()
    document = _shortest_held_out()
    row = q13.filing_gold().documents.tolist().index(document)
    z = sw.filing_logits(result, document, reading="masked")[:, 2:]
    assert q13._positive_share(BOOK, "masked")[row] == pytest.approx(float((z > 0).mean()), abs=1e-3)


def test_rank_auc_and_ranks_against_brute_force():
    rng = np.random.default_rng(1)
    p, q = rng.integers(0, 4, 9).astype(float), rng.integers(0, 4, 7).astype(float)     # many ties
    brute = np.mean([1.0 if a > b else 0.5 if a == b else 0.0 for a in p for b in q])
    assert q13.rank_auc(p, q) == pytest.approx(brute, abs=1e-15)
    assert q13.rank_auc([1.0], [0.0]) == 1.0 and q13.rank_auc([0.0], [1.0]) == 0.0
    x = np.array([3.0, 1.0, 3.0, 2.0, 3.0])
    assert q13._average_ranks(x).tolist() == [4.0, 1.0, 4.0, 2.0, 4.0]
    y = rng.normal(size=30)
    u = rng.normal(size=30) + y
    ranks = np.corrcoef(np.argsort(np.argsort(y)), np.argsort(np.argsort(u)))[0, 1]
    assert q13._spearman(y, u) == pytest.approx(ranks, abs=1e-12)


def test_absent_rank_counts_ties_at_their_mean():
    gold = q13.filing_gold()
    row = int(np.flatnonzero(gold.plural_absent)[0])
    w = np.zeros(gold.tf.shape)
    s = q13._score_weights(w)                      # every absent term tied at zero
    absent = s.absent_terms[row]
    assert s.plural_rank[row] == pytest.approx((absent + 1) / 2)
    w[row, gold.own_terms[row, 2]] = 1.0          # the plural alone above the others
    assert q13._score_weights(w).plural_rank[row] == 1.0
    assert math.isnan(s.plural_rank[int(np.flatnonzero(~gold.plural_absent)[0])])


# ----------------------------------------------------------------------------- the gold
def test_gold_matches_the_corpus():
    gold = q13.filing_gold()
    world = fe.filing_world()
    corpus, vocabulary = world.corpus, world.vocabulary
    bounds = corpus.document_bounds()
    assert gold.documents.tolist() == fe.split().test_documents.tolist()
    for row, document in enumerate(gold.documents.tolist()):
        words = corpus.tokens[bounds[document]:bounds[document + 1]].tolist()
        company = COMPANIES[int(corpus.filer[document])]
        assert [vocabulary.words[v] for v in gold.own_terms[row]] == [company.alias, company.noun, company.plural]
        assert company.alias in words and company.noun in words     # the opening names the filer in full
        assert gold.plural_absent[row] == (company.plural not in words)
        assert gold.tf[row, vocabulary.lookup(company.alias)] == words.count(company.alias)
        aspects = {w for i in range(bounds[document], bounds[document + 1]) if corpus.aspect[i] >= 0
                   for w in ASPECTS[int(corpus.aspect[i])].words}
        assert {vocabulary.words[v] for v in np.flatnonzero(gold.aspect[row])} == aspects
    generic = gold.generic
    assert not np.any(generic & gold.aspect) and not np.any(generic & gold.company_terms[gold.filer])
    assert np.all(gold.document_share[np.flatnonzero(generic.any(axis=0))] >= q13.GENERIC_SHARE)
    assert gold.tf[:, list(sw.EXCLUDED_IDS)].sum() == 0
    # the retrieval check needs every company to file at least one held-out filing
    assert set(gold.filer.tolist()) == set(range(len(COMPANIES)))
    assert 0 < gold.plural_absent.sum() < gold.documents.size


def test_baselines_weigh_only_the_filings_words():
    for name in q13.BASELINES:
        w = q13.baseline_weights(name)
        assert np.array_equal(w > 0, q13.filing_gold().present)
    s = q13._score_weights(q13.baseline_weights("idf"), "idf")
    assert s.mean_own_auc == 1.0 and s.mean_aspect_auc == 1.0     # generic words have the lowest idf by definition


# ----------------------------------------------------------------------------- bad inputs
@pytest.mark.book
def test_bad_inputs_name_the_argument():
    with pytest.raises(ValueError, match="logits"):
        sw.splade_weights(np.zeros((0, 4)))
    with pytest.raises(ValueError, match="logits"):
        sw.splade_weights([[np.nan, 1.0, 2.0]])
    with pytest.raises(ValueError, match="exclude"):
        sw.splade_weights(np.zeros((2, 3)), exclude=(5,))
    with pytest.raises(TypeError, match="exclude"):
        sw.splade_weights(np.zeros((2, 3)), exclude=(0.5,))
    with pytest.raises(ValueError, match="reading"):
        sw.filing_logits(fe.trained_encoder(), 0, reading="hidden")
    with pytest.raises(ValueError, match="document"):
        sw.filing_logits(fe.trained_encoder(), 300)
    with pytest.raises(TypeError, match="result"):
        sw.filing_weights("encoder", [0])
    with pytest.raises(ValueError, match="documents"):
        sw.filing_weights(fe.trained_encoder(), [])
    with pytest.raises(ValueError, match="seed"):
        q13._seed_weights(5)
    with pytest.raises(TypeError, match="seed"):
        q13._seed_weights("1")
    with pytest.raises(ValueError, match="pooling"):
        q13._seed_weights(BOOK, "shown", "mean")
    with pytest.raises(ValueError, match="positive and negative"):
        q13.rank_auc([], [1.0])
    with pytest.raises(ValueError, match="weights"):
        q13._score_weights(np.zeros((3, 3)))
    with pytest.raises(ValueError, match="name"):
        q13.baseline_weights("bm25")
    with pytest.raises(ValueError, match="held-out"):
        q13.top_terms_table(document=1 if 1 not in q13.filing_gold().documents else 3)
    with pytest.raises(ValueError, match="k must"):
        q13.top_terms_table(k=101)
    with pytest.raises(TypeError, match="study"):
        q13.summary_table(study="results")


# ----------------------------------------------------------------------------- what the chapter states
@pytest.mark.book
def test_every_word_gets_a_positive_weight_at_every_seed():
    # the head's logits are positive for about two words in five at a position, so the max over a filing's
    # positions is positive for every word: the vector is not sparse at all
    study = q13.results()
    vocabulary = fe.filing_world().vocabulary.size
    for reading in sw.READINGS:
        assert all(s.mean_nonzero == vocabulary - 2 for s in study.scores[(reading, "splade")])
        assert all(0.2 < share < 0.6 for share in study.positive[reading])


@pytest.mark.book
def test_the_weights_follow_frequency_and_put_generic_words_first():
    study = q13.results()
    for reading in sw.READINGS:
        assert all(v > 0.5 for v in study.values(reading, "mean_spearman"))
        assert all(v < 0.5 for v in study.values(reading, "mean_own_auc"))
        assert all(v < 0.5 for v in study.values(reading, "mean_aspect_auc"))
        for measure in ("mean_own_auc", "mean_aspect_auc"):          # below term frequency too
            assert max(study.values(reading, measure)) < getattr(study.baselines["tf"], measure)
    # the example filing's heaviest terms are generic words, its absent plural far below
    gold = study.gold
    row = gold.documents.tolist().index(q13.example_document())
    w = q13._seed_weights(BOOK)[row]
    top = np.argsort(-w, kind="stable")[:5]
    assert all(gold.generic[row, top])
    assert q13._score_weights(q13._seed_weights(BOOK)).plural_rank[row] > 100


@pytest.mark.book
def test_the_pmi_diagnosis_recovers_idf_not_expansion():
    study = q13.results()
    assert all(v > 0.9 for v in study.values("shown", "mean_own_auc", "pmi"))
    assert all(v < -0.5 for v in study.values("shown", "mean_spearman", "pmi"))
    for reading in sw.READINGS:
        assert all(v == 0.0 for v in study.values(reading, "top_k_share", "pmi"))


@pytest.mark.book
def test_the_rules_verdicts_are_those_the_module_states():
    results = ledger.verify(claims=q13.CLAIMS)
    assert all(r.passed for r in results), [r.error or r.book for r in results]
    assert [r.verdict for r in results] == [c.expected for c in q13.CLAIMS]
    assert [c.id for c in q13.CLAIMS] == ["Q13", "Q13a", "Q13b", "Q13c"]  # every prestated rule registered
    # the retrieval rule's comparison: term frequency's AUC is a number the weights fall below
    study = q13.results()
    assert all(v < study.baselines["tf"].mean_retrieval_auc for v in study.values("shown", "mean_retrieval_auc"))


@pytest.mark.book
def test_tables_and_figure_render():
    assert len(q13.summary_table().splitlines()) == 2 + len(q13._ROWS)
    assert len(q13.summary_table(pooling="pmi").splitlines()) == 2 + len(q13._ROWS)
    assert "own term" in q13.top_terms_table()
    assert len(q13.diagnosis_table().splitlines()) == 5
    from mlm_book.figures import MIN_FONT_SIZE
    drawn = q13.figure_sparse()
    assert drawn.caption and "'" in drawn.alt     # names the absent plural
    fig = drawn.figure
    texts = [t for ax in fig.axes for t in ax.texts + ax.get_xticklabels() + ax.get_yticklabels()
             + [ax.xaxis.label, ax.yaxis.label, ax.title, ax._left_title]]
    texts += [t for ax in fig.axes if ax.get_legend() for t in ax.get_legend().get_texts()]
    assert min(t.get_fontsize() for t in texts if t.get_text()) >= MIN_FONT_SIZE
