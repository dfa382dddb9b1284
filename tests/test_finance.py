"""Tests of the finance world: corpus, vocabulary, windows, skip-gram, caps, orientation, voting."""

from __future__ import annotations

import dataclasses
import itertools
import math

import numpy as np
import pytest

from mlm_book.finance.caps import alias_cap, majority_cap, polarity_cap, polarity_words, word_cap
from mlm_book.finance.corpus import CorpusConfig, corpus_fingerprint, generate_corpus, render_document
from mlm_book.finance.orientation import document_counts, semantic_orientation
from mlm_book.finance.skipgram import SkipGramConfig, cosine_neighbours, skipgram_pairs, train_skipgram
from mlm_book.finance.vocab import MASK, SEP_ID, UNK_ID, build_vocabulary
from mlm_book.finance.voting import lexicon_vote, word_positions
from mlm_book.finance.windows import (
    centre_position, centred_windows, fixed_windows, gather_windows, nearest_centre,
)
from mlm_book.finance.world import (
    ASPECTS, COMPANIES, DIRECTION_WORDS, ENTITY_ORG, ENTITY_PRODUCT, EVALUATIVE_VERBS, LEXICON,
    NEGATIVE_SEEDS, POSITIVE_SEEDS,
)


@pytest.fixture(scope="module")
def small():
    return generate_corpus(CorpusConfig(n_documents=40), np.random.default_rng(3))


@pytest.fixture(scope="module")
def book():
    from mlm_book.experiments.ch06_finance import results
    return results()


# ----------------------------------------------------------------------------- corpus


def test_corpus_is_byte_identical_for_the_same_seed():
    config = CorpusConfig()
    a = generate_corpus(config, np.random.default_rng(9))
    b = generate_corpus(config, np.random.default_rng(9))
    assert corpus_fingerprint(a) == corpus_fingerprint(b)
    assert " ".join(a.tokens.tolist()).encode() == " ".join(b.tokens.tolist()).encode()
    c = generate_corpus(config, np.random.default_rng(10))
    assert corpus_fingerprint(c) != corpus_fingerprint(a)


def test_corpus_is_byte_identical_across_processes():
    # two fresh interpreters with different string-hash seeds: no set or dict order may leak in
    import os
    import subprocess
    import sys
    code = ("import numpy as np; from mlm_book.finance.corpus import CorpusConfig, generate_corpus, "
            "corpus_fingerprint; print(corpus_fingerprint(generate_corpus(CorpusConfig(n_documents=60), "
            "np.random.default_rng(9))))")
    prints = set()
    for hash_seed in ("1", "2"):
        env = dict(os.environ, PYTHONHASHSEED=hash_seed)
        out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
        prints.add(out.stdout.strip())
    local = corpus_fingerprint(generate_corpus(CorpusConfig(n_documents=60), np.random.default_rng(9)))
    assert prints == {local}


@pytest.mark.slow  # trains the book's skip-gram
def test_chapter_tables_and_position_reader(book):
    from mlm_book.experiments import ch06_finance as ch6
    for table in (ch6.counts_table, ch6.caps_table, ch6.neighbours_table, ch6.orientation_table, ch6.voting_table):
        text = table(book)
        assert text.startswith("| ") and "nan" not in text
    view = ch6.window_view(book).split()
    assert len(view) == 32 and view[16] == "[[kestrel]]"
    # under centred reading the position is constant: the probe is intercept-only and, with
    # stratified folds, scores kestrel's majority share exactly
    assert book.position_reader["centred"] == book.kestrel_cap.accuracy
    # products close a filing, so under nearest-centre reading position alone is a strong cue
    assert book.position_reader["nearest-centre"] >= book.kestrel_cap.accuracy + 0.2


@pytest.mark.slow  # trains the book's skip-gram
def test_book_corpus_counts_are_at_the_page_scale(book):
    c = book.counts
    assert c.n_documents == 300
    total, org, product = c.kestrel
    assert total >= 100 and org + product == total and 0.4 <= org / total <= 0.6
    assert 1550 <= c.aliases[0] <= 1900 and 0.12 <= c.aliases[2] / c.aliases[0] <= 0.18
    assert all(100 <= n <= 135 for n in c.direction.values())
    assert all(25 <= n <= 45 for n in c.verbs.values())
    assert 1250 <= c.lexicon_occurrences <= 1550
    assert 800 <= c.vocabulary_words <= 950 and 0.935 <= c.coverage <= 0.955
    # kestrel is the only alias near balance; every other is mostly ORG
    counts = book.alias_cap.counts
    shares = counts[:, 1] / counts.sum(axis=1)
    assert 0.4 <= shares[0] <= 0.6 and np.all(shares[1:] < 0.3)


def test_annotations_follow_the_polarity_rules(small):
    c = small
    labelled = np.flatnonzero(c.news != 0)
    assert labelled.size > 0
    heads = c.head[labelled]
    assert np.all(c.aspect[heads] >= 0)
    polarity = np.array([a.polarity for a in ASPECTS])[c.aspect[heads]]
    assert np.array_equal(c.news[labelled], polarity)
    distance = labelled - heads
    direction = np.isin(c.tokens[labelled], DIRECTION_WORDS)
    verb = np.isin(c.tokens[labelled], EVALUATIVE_VERBS)
    assert np.all(direction | verb)
    assert np.all(distance[direction] == 1)
    assert np.all((distance[verb] >= 3) & (distance[verb] <= 6))
    # the aspect is in the same sentence; news words appear nowhere unlabelled
    assert np.array_equal(c.sentence[heads], c.sentence[labelled])
    assert np.all(c.news[np.isin(c.tokens, DIRECTION_WORDS + EVALUATIVE_VERBS)] != 0)
    # lexicon annotation = the dictionary, exactly on lexicon words
    lex = np.array([LEXICON.get(t, 0) for t in c.tokens.tolist()])
    assert np.array_equal(lex, c.lexicon)


def test_adjacent_verbs_keep_the_sentences_and_move_the_verb():
    """``verb_placement="adjacent"`` puts every verb right after its aspect's head, where the book's sit 3 to 6
    tokens after it; the default stays the book's corpus."""
    config = CorpusConfig(n_documents=80)
    book = generate_corpus(config, np.random.default_rng(4))
    near = generate_corpus(dataclasses.replace(config, verb_placement="adjacent"), np.random.default_rng(4))
    assert corpus_fingerprint(generate_corpus(config, np.random.default_rng(4))) == corpus_fingerprint(book)

    def verbs(c):
        index = np.flatnonzero(np.isin(c.tokens, EVALUATIVE_VERBS))
        return index, index - c.head[index]

    (book_verbs, book_distance), (near_verbs, near_distance) = verbs(book), verbs(near)
    assert np.all((book_distance >= 3) & (book_distance <= 6)) and np.all(near_distance == 1)
    assert book_verbs.size > 20 and abs(near_verbs.size - book_verbs.size) <= 0.2 * book_verbs.size
    # the moved phrase follows the target: the token before an adjacent verb is its aspect's head
    assert np.all(near.aspect[near_verbs - 1] >= 0) and not np.any(book.aspect[book_verbs - 1] >= 0)
    with pytest.raises(ValueError, match="verb_placement"):
        CorpusConfig(verb_placement="far")
    with pytest.raises(TypeError, match="verb_placement"):
        CorpusConfig(verb_placement=1)


def test_entities_products_and_separators(small):
    c = small
    aliases = np.array([co.alias for co in COMPANIES])
    typed = np.flatnonzero(c.entity > 0)
    assert np.array_equal(c.tokens[typed], aliases[c.alias[typed]])
    assert np.all(c.alias[c.entity == 0] == -1)
    assert not np.isin(c.tokens[c.entity == 0], aliases).any()
    nouns = np.array([co.noun for co in COMPANIES])
    product = np.flatnonzero(c.entity == ENTITY_PRODUCT)
    assert np.all(c.tokens[product - 1] == "the") and np.array_equal(c.tokens[product + 1], nouns[c.alias[product]])
    org = np.flatnonzero(c.entity == ENTITY_ORG)
    assert np.all(c.alias[org] == c.filer[c.document[org]])      # ORG mentions name the filer
    # products sit in the last sentence of their filing
    last_sentence = np.array([c.sentence[c.document == d].max() for d in range(c.n_documents)])
    assert np.array_equal(c.sentence[product], last_sentence[c.document[product]])
    # [SEP] only between sentences: never first or last in a filing, never doubled
    bounds = c.document_bounds()
    sep = c.tokens == "[SEP]"
    assert not sep[bounds[:-1]].any() and not sep[bounds[1:] - 1].any()
    assert not (sep[1:] & sep[:-1]).any()
    assert np.all(np.diff(c.sentence)[~sep[:-1] & (np.diff(c.document) == 0)] == 0)
    assert all(t == t.lower() for t in set(c.tokens.tolist()) - {"[SEP]"})
    assert "[ORG]" in render_document(c, 0)


def test_corpus_bad_input():
    with pytest.raises(ValueError, match="n_documents"):
        CorpusConfig(n_documents=0)
    with pytest.raises(TypeError, match="rng"):
        generate_corpus(CorpusConfig(n_documents=2), 0)
    with pytest.raises(ValueError, match="lexicon_tone_agreement"):
        CorpusConfig(lexicon_tone_agreement=1.5)
    with pytest.raises(ValueError, match="document"):
        render_document(generate_corpus(CorpusConfig(n_documents=2), np.random.default_rng(0)), 2)


# ----------------------------------------------------------------------------- vocabulary


def test_vocabulary_min_count_and_coverage(small):
    tokens = small.tokens.tolist()
    vocab = build_vocabulary(tokens, 5)
    words, counts = np.unique(small.tokens[small.tokens != "[SEP]"], return_counts=True)
    assert set(vocab.words[2:]) == set(words[counts >= 5].tolist())
    assert vocab.words[:2] == ("[UNK]", "[SEP]") and vocab.mask_id == vocab.size
    expected = counts[counts >= 5].sum() / counts.sum()
    assert abs(vocab.coverage(tokens) - expected) < 1e-12
    ids = vocab.encode(tokens)
    assert np.array_equal(ids == UNK_ID, ~np.isin(small.tokens, vocab.words))
    assert np.array_equal(ids == SEP_ID, small.tokens == "[SEP]")
    back = vocab.decode(ids)
    assert [b if b != "[UNK]" else None for b in back] == [t if t in vocab.index else None for t in tokens]
    assert vocab.decode([vocab.mask_id, vocab.pad_id]) == [MASK, "[PAD]"]
    assert sum(vocab.counts) == len(tokens)


def test_vocabulary_bad_input():
    vocab = build_vocabulary(["a"] * 5)
    with pytest.raises(ValueError, match="min_count"):
        build_vocabulary(["a"], min_count=0)
    with pytest.raises(KeyError, match="not in the vocabulary"):
        vocab.lookup("zebra")
    assert vocab.encode(["zebra"]).tolist() == [UNK_ID]          # documented: unknown -> [UNK]
    with pytest.raises(ValueError, match="reserved"):
        build_vocabulary(["[MASK]"])
    with pytest.raises(ValueError, match="ids"):
        vocab.decode([vocab.pad_id + 1])


# ----------------------------------------------------------------------------- windows


def test_centred_windows_put_every_token_at_the_centre(small):
    ids = np.arange(small.n_tokens)
    windows, valid = centred_windows(ids, small.document, length=32, pad_id=-1)
    centre = centre_position(32)
    assert centre == 16
    assert np.array_equal(windows[:, centre], ids)
    # valid slots hold the stream's neighbours of the same filing; the rest is padding
    offsets = np.arange(32) - centre
    source = ids[:, None] + offsets[None, :]
    assert np.array_equal(windows[valid], source[valid])
    doc = small.document
    assert np.all(doc[np.clip(windows, 0, None)][valid] == np.repeat(doc, 32).reshape(-1, 32)[valid])
    assert np.all(windows[~valid] == -1)
    # a filing's first token has 16 padded slots before it, its last 15 after
    first = small.document_bounds()[:-1]
    assert np.all(~valid[first, :centre]) and np.all(valid[first, centre:centre + 10])
    last = small.document_bounds()[1:] - 1
    assert np.all(~valid[last, centre + 1:])


def test_centred_window_longer_than_document_pads():
    windows, valid = centred_windows([7, 8, 9], [0, 0, 0], length=8, pad_id=0)
    assert windows.tolist()[1] == [0, 0, 0, 7, 8, 9, 0, 0] and valid.sum() == 9


def test_fixed_windows_and_nearest_centre_against_brute_force(small):
    length, stride = 32, 16
    starts = fixed_windows(small.document, length=length, stride=stride)
    doc = small.document
    assert np.all(doc[starts] == doc[starts + length - 1])       # document-internal
    window, position = nearest_centre(doc, starts, length=length)
    for t in range(0, small.n_tokens, 37):                        # brute force on a sample of tokens
        containing = [k for k, s in enumerate(starts) if s <= t < s + length]
        best = min(containing, key=lambda k: (abs(t - starts[k] - (length - 1) / 2), k))
        assert window[t] == best and position[t] == t - starts[best]
    # every token covered; interior tokens sit in the middle half under stride 16
    assert np.all((position >= 0) & (position < length))
    windows = gather_windows(np.arange(small.n_tokens), starts, length=length)
    assert np.array_equal(windows[:, 0], starts) and np.all(np.diff(windows, axis=1) == 1)
    # last window of each filing is flush with its end
    ends = small.document_bounds()[1:]
    last = np.searchsorted(starts, ends, side="left") - 1
    assert np.array_equal(starts[last] + length, ends)


def test_window_bad_input():
    with pytest.raises(ValueError, match="at least length"):
        fixed_windows([0] * 40 + [1] * 10, length=32, stride=16)
    with pytest.raises(ValueError, match="stride"):
        fixed_windows([0] * 40, length=32, stride=33)
    with pytest.raises(ValueError, match="non-decreasing"):
        centred_windows([1, 2], [1, 0], length=4, pad_id=0)
    with pytest.raises(ValueError, match="window_starts"):
        gather_windows([1, 2, 3], [2], length=2)
    with pytest.raises(TypeError, match="pad_id"):
        centred_windows([1, 2], [0, 0], length=4, pad_id=None)


# ----------------------------------------------------------------------------- skip-gram


def test_skipgram_pairs_against_brute_force():
    ids = np.array([5, 6, 1, 7, 8, 9, 4])
    document = np.array([0, 0, 0, 0, 0, 1, 1])
    centre, context = skipgram_pairs(ids, document, window=2, drop=1)
    words = [(5, 0), (6, 0), (7, 0), (8, 0), (9, 1), (4, 1)]
    expected = sorted((a[0], b[0]) for (i, a), (j, b) in itertools.product(enumerate(words), repeat=2)
                      if i != j and a[1] == b[1] and abs(i - j) <= 2)
    assert sorted(zip(centre.tolist(), context.tolist())) == expected


@pytest.mark.slow  # trains the book's skip-gram
def test_skipgram_loss_falls_and_neighbours_are_sensible(book):
    loss = book.skipgram.epoch_loss
    assert np.all(np.diff(loss) < 0)                              # every epoch lowers the mean loss
    v = book.vocabulary
    vectors = book.skipgram.input_vectors
    # substitutable words share their +-2 contexts: the nearest neighbours of a direction word are
    # direction words, of a verb verbs, of an alias aliases (5 of 5 for the two closed classes)
    ids, _ = cosine_neighbours(vectors, v.lookup("rose"), 5, exclude=(UNK_ID, SEP_ID))
    assert {v.words[i] for i in ids} <= set(DIRECTION_WORDS)
    ids, _ = cosine_neighbours(vectors, v.lookup("surpassed"), 5, exclude=(UNK_ID, SEP_ID))
    assert {v.words[i] for i in ids} <= set(EVALUATIVE_VERBS)
    ids, _ = cosine_neighbours(vectors, v.lookup("kestrel"), 5, exclude=(UNK_ID, SEP_ID))
    assert len({v.words[i] for i in ids} & {c.alias for c in COMPANIES}) >= 4
    ids, _ = cosine_neighbours(vectors, v.lookup("revenue"), 5, exclude=(UNK_ID, SEP_ID))
    assert {v.words[i] for i in ids} <= {w for a in ASPECTS for w in a.words}
    # but the +-2 window carries no lexicon polarity: neighbours agree in polarity about as often as
    # random words would (35 words x 5 neighbours; 0.15 is about 2.5 binomial SE at n = 175)
    from mlm_book.experiments.ch06_finance import lexicon_neighbour_agreement
    share, chance = lexicon_neighbour_agreement(book)
    assert abs(chance - 17 / 35) < 1e-12 and abs(share - chance) < 0.15


def test_skipgram_is_seeded_and_validates():
    ids = np.tile([2, 3, 4, 5], 50)
    doc = np.zeros(ids.size, dtype=int)
    config = SkipGramConfig(dim=3, epochs=2)
    a = train_skipgram(ids, doc, 6, config, np.random.default_rng(1))
    b = train_skipgram(ids, doc, 6, config, np.random.default_rng(1))
    assert np.array_equal(a.input_vectors, b.input_vectors)
    with pytest.raises(ValueError, match="ids"):
        train_skipgram(ids, doc, 5, config, np.random.default_rng(1))
    with pytest.raises(TypeError, match="rng"):
        train_skipgram(ids, doc, 6, config, 1)
    with pytest.raises(ValueError, match="dim"):
        SkipGramConfig(dim=0)


# ----------------------------------------------------------------------------- caps


def test_caps_equal_their_definition(small):
    cap = alias_cap(small)
    correct = 0
    for alias in range(len(COMPANIES)):
        labels = small.entity[(small.entity > 0) & (small.alias == alias)]
        if labels.size:
            correct += max((labels == 1).sum(), (labels == 2).sum())
    assert cap.correct == correct and cap.n == int((small.entity > 0).sum())
    k = word_cap(small, "kestrel")
    labels = small.entity[(small.tokens == "kestrel")]
    assert k.accuracy == max((labels == 1).sum(), (labels == 2).sum()) / labels.size
    words = polarity_words(small, 5)
    pc = polarity_cap(small, 5)
    by_word = [small.news[(small.tokens == w) & (small.news != 0)] for w in words]
    assert pc.correct == sum(max((x > 0).sum(), (x < 0).sum()) for x in by_word)
    # any one-answer-per-group classifier scores at most the cap (random answer sets)
    rng = np.random.default_rng(0)
    labels, groups = rng.integers(0, 2, 200), rng.integers(0, 6, 200)
    best = majority_cap(labels, groups).accuracy
    for _ in range(50):
        answer = rng.integers(0, 2, 6)
        assert np.mean(answer[groups] == labels) <= best + 1e-15
    with pytest.raises(ValueError, match="alias"):
        word_cap(small, "robin")


# ----------------------------------------------------------------------------- orientation, voting


def test_semantic_orientation_matches_a_direct_count(small):
    so = semantic_orientation(small)
    assert so.words == tuple(LEXICON) and so.positive_seeds == POSITIVE_SEEDS
    docs = [small.tokens[small.document == d].tolist() for d in range(small.n_documents)]
    n_pos = sum(doc.count(s) for doc in docs for s in POSITIVE_SEEDS)
    n_neg = sum(doc.count(s) for doc in docs for s in NEGATIVE_SEEDS)
    for i, word in enumerate(so.words[:6]):
        with_pos = sum(doc.count(word) * sum(doc.count(s) for s in POSITIVE_SEEDS) for doc in docs)
        with_neg = sum(doc.count(word) * sum(doc.count(s) for s in NEGATIVE_SEEDS) for doc in docs)
        expected = math.log((with_pos + 0.5) / (with_neg + 0.5)) - math.log(n_pos / n_neg)
        assert abs(so.score[i] - expected) < 1e-12
    # seeds that are lexicon words are left out of the scoring
    reduced = semantic_orientation(small, positive=["strong"], negative=["weak"])
    assert "strong" not in reduced.words and "weak" not in reduced.words and len(reduced.words) == 33
    assert document_counts(small, ["strong"]).shape == (small.n_documents, 1)
    with pytest.raises(ValueError, match="disjoint"):
        semantic_orientation(small, positive=["good"], negative=["good"])


@pytest.mark.slow  # trains the book's skip-gram
def test_book_orientation_beats_voting(book):
    # the point of S8-38..41: pooled over filings the lexicon's polarity shows, in context it barely does
    assert book.orientation.accuracy >= 0.70
    assert max(v.accuracy_decided for v in book.votes) <= 0.65


def test_voting_matches_a_loop(small):
    position = word_positions(small)
    index = np.flatnonzero(small.lexicon != 0)
    for window in (8, 32, None):
        vote = lexicon_vote(small, window)
        scores, decided = [], []
        for i in index:
            others = [j for j in index if j != i and small.document[j] == small.document[i]
                      and small.tokens[j] != small.tokens[i]
                      and (window is None or abs(position[j] - position[i]) <= window)]
            total = sum(int(small.lexicon[j]) for j in others)
            if total == 0:
                scores.append(0.5)
            else:
                hit = float(np.sign(total) == small.lexicon[i])
                scores.append(hit)
                decided.append(hit)
        assert abs(vote.accuracy - np.mean(scores)) < 1e-12
        assert abs(vote.accuracy_decided - np.mean(decided)) < 1e-12
        assert vote.n_ties == len(scores) - len(decided)
    # word positions skip [SEP]
    words = small.tokens != "[SEP]"
    first = small.document_bounds()[:-1]
    assert np.all(position[first] == 0)
    assert np.all(np.diff(position[words])[np.diff(small.document[words]) == 0] == 1)
    with pytest.raises(ValueError, match="window"):
        lexicon_vote(small, 0)


def test_mentions_are_the_named_things_the_generator_wrote():
    """Every gold mention is a full company name or an alias (ORG), an alias and its noun (PRODUCT), a first
    name and a surname (PERSON) or one place or country word (LOC); the annotation adds nothing to the text."""
    import hashlib

    from mlm_book.finance import corpus as corpus_module
    from mlm_book.finance.corpus import MENTION_TYPES, mention_spans
    from mlm_book.finance.world import COMPANIES
    corpus = generate_corpus(CorpusConfig(n_documents=40), np.random.default_rng(5))
    spans = mention_spans(corpus)
    words_of = {}
    for k, sentence in enumerate(np.unique(corpus.sentence)):
        words_of[k] = [w for w in corpus.tokens[corpus.sentence == sentence] if w != corpus_module.SEP]
    aliases = {c.alias: c for c in COMPANIES}
    seen = set()
    for k, sentence_spans in enumerate(spans):
        for start, end, kind in sentence_spans:
            words = words_of[k][start:end]
            seen.add(kind)
            if kind == "ORG":
                assert words[0] in aliases and words in ([words[0]], list(aliases[words[0]].name))
            elif kind == "PRODUCT":
                assert words == [words[0], aliases[words[0]].noun] and words_of[k][start - 1] == "the"
            elif kind == "PERSON":
                assert len(words) == 2 and words[0] in corpus_module._FIRST_NAMES
            else:
                assert len(words) == 1 and words[0] not in aliases
    assert seen == set(MENTION_TYPES)
    # the entity labels of chapter 6 sit on mentions' first tokens (aliases), and only there
    assert np.all(corpus.mention[corpus.entity > 0] >= 0)
    # chapter 6's corpus is the one the book has always used: its text and older annotations hash as before
    book = generate_corpus(CorpusConfig(), np.random.default_rng(9))
    digest = hashlib.sha256(" ".join(book.tokens.tolist()).encode())
    for name in ("document", "sentence", "position", "entity", "alias", "aspect", "news", "head", "lexicon", "tone",
                 "filer"):
        digest.update(name.encode())
        digest.update(np.ascontiguousarray(getattr(book, name), dtype="<i8").tobytes())
    assert digest.hexdigest() == "3a9b1ba53598b258454153a4dc7a912ed80af8a2a585cb699e06149d03c8c2f3"


def test_mention_annotations_are_checked():
    import dataclasses
    corpus = generate_corpus(CorpusConfig(n_documents=3), np.random.default_rng(0))
    first = int(np.flatnonzero(corpus.mention >= 0)[0])
    broken = corpus.mention_type.copy()
    broken[first] = -1
    with pytest.raises(ValueError, match="-1 on the same tokens"):
        dataclasses.replace(corpus, mention_type=broken)
    renumbered = corpus.mention.copy()
    renumbered[renumbered >= 0] += 1
    with pytest.raises(ValueError, match="in order of appearance"):
        dataclasses.replace(corpus, mention=renumbered)
