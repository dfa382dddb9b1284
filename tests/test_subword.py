"""Byte-pair encoding: hand-checked merges, the incremental learner against a naive one, round
trips on the filings, Hugging Face ``tokenizers`` as a reference, and the trade-off table."""

from __future__ import annotations

import itertools
import json
import time
from collections import Counter

import numpy as np
import pytest

from mlm_book.experiments.ch06_finance import book_corpus
from mlm_book.finance.corpus import CorpusConfig, generate_corpus
from mlm_book.finance.vocab import build_vocabulary
from mlm_book.subword import (
    BPE,
    SPECIAL_TOKENS,
    UNK_ID,
    SubwordStatistics,
    count_words,
    learn_bpe,
    subword_statistics,
    subword_tradeoff,
    word_starts,
)

SENNRICH = {"low": 5, "lower": 2, "newest": 6, "widest": 3}


@pytest.fixture(scope="module")
def tokens() -> list[str]:
    """The chapter-6 filings (300 documents, seed 9), as one token stream with ``[SEP]``."""
    return book_corpus().tokens.tolist()


@pytest.fixture(scope="module")
def bpe(tokens) -> BPE:
    """Every merge the filings allow at min_frequency 2 (about 2,900)."""
    return learn_bpe(count_words(tokens), 10**6)


# ----------------------------------------------------------------------------- by hand
def test_the_sennrich_example_gives_the_merges_worked_out_by_hand():
    """Initial symbols ``l o w</w>`` (5), ``l o w e r</w>`` (2), ``n e w e s t</w>`` (6),
    ``w i d e s t</w>`` (3). Ids: d e i l n o r s t w are 4..13, their final forms 14..23.

    1. ``e s`` and ``s t</w>`` both count 9: ``e s`` has the smaller left id (5 < 11).
    2. ``es t</w>`` 9.  3. ``l o`` 7.
    4-6. count 6: ``n e`` (8, 5), ``e w`` (5, 13), ``w est</w>`` (13, 25): ``e w`` first; then
       ``n ew`` (8, 27) before ``ew est</w>`` (27, 25); then ``new est</w>``.
    7. ``lo w</w>`` 5.
    8-10. count 3: ``w i`` (13, 6), ``i d`` (6, 4), ``d est</w>`` (4, 25): ``d est</w>``, then
       ``i dest</w>`` (6, 31) before ``w i`` (13, 6), then ``w idest</w>``.
    11-13. count 2 (lower): ``e r</w>`` (5, 20) first, then ``w er</w>``, then ``lo wer</w>``.
    """
    merges = learn_bpe(SENNRICH, 100).merges
    assert merges == (
        ("e", "s"), ("es", "t</w>"), ("l", "o"), ("e", "w"), ("n", "ew"), ("new", "est</w>"),
        ("lo", "w</w>"), ("d", "est</w>"), ("i", "dest</w>"), ("w", "idest</w>"),
        ("e", "r</w>"), ("w", "er</w>"), ("lo", "wer</w>"),
    )
    assert learn_bpe(SENNRICH, 100, min_frequency=3).merges == merges[:10]  # lower's merges count 2
    assert learn_bpe(SENNRICH, 4).merges == merges[:4]
    assert learn_bpe(SENNRICH, 0).merges == ()


def test_every_training_word_becomes_one_symbol_when_all_merges_are_learned():
    bpe = learn_bpe(SENNRICH, 100)
    assert [bpe.encode_word(word) for word in SENNRICH] == [(word + "</w>",) for word in SENNRICH]
    assert bpe.encode_word("lowest") == ("lo", "w", "est</w>")
    assert bpe.vocabulary_size == len(SPECIAL_TOKENS) + 2 * 10 + 13


def _naive_bpe(word_counts: dict[str, int], n_merges: int, min_frequency: int = 2) -> list[tuple[str, str]]:
    """The textbook loop: recount every pair of every word before each merge; ties to the
    smaller (left id, right id) with the ids of the module's layout."""
    alphabet = sorted({char for word in word_counts for char in word})
    ids = {symbol: i for i, symbol in enumerate(list(SPECIAL_TOKENS) + alphabet + [c + "</w>" for c in alphabet])}
    words = {tuple(word[:-1]) + (word[-1] + "</w>",): count for word, count in word_counts.items()}
    merges = []
    while len(merges) < n_merges:
        pairs = Counter()
        for symbols, count in words.items():
            for pair in itertools.pairwise(symbols):
                pairs[pair] += count
        if not pairs:
            break
        best = min(pairs, key=lambda p: (-pairs[p], ids[p[0]], ids[p[1]]))
        if pairs[best] < min_frequency:
            break
        merged = best[0] + best[1]
        ids.setdefault(merged, len(ids))
        merges.append(best)
        rewritten = {}
        for symbols, count in words.items():
            out, i = [], 0
            while i < len(symbols):
                if symbols[i:i + 2] == best:
                    out.append(merged)
                    i += 2
                else:
                    out.append(symbols[i])
                    i += 1
            rewritten[tuple(out)] = rewritten.get(tuple(out), 0) + count
        words = rewritten
    return merges


@pytest.mark.parametrize("seed", range(5))
def test_the_incremental_learner_matches_the_naive_one(seed):
    """Random words over three letters, so ties and overlapping pairs (``aaaa``) are common."""
    rng = np.random.default_rng(seed)
    words = {}
    for _ in range(60):
        word = "".join(rng.choice(list("aabc"), size=rng.integers(1, 9)))
        words[word] = words.get(word, 0) + int(rng.integers(1, 6))
    for min_frequency in (1, 2, 4):
        assert list(learn_bpe(words, 500, min_frequency=min_frequency).merges) == \
            _naive_bpe(words, 500, min_frequency)


# ----------------------------------------------------------------------------- the filings
def test_learning_every_merge_of_the_filings_is_fast(tokens):
    counts = count_words(tokens)
    assert 2000 < len(counts) < 4000  # word types, the learner's input (not the 53,000 tokens)
    start = time.perf_counter()
    bpe = learn_bpe(counts, 2000)
    elapsed = time.perf_counter() - start
    assert len(bpe.merges) == 2000
    assert elapsed < 2.0, f"2000 merges took {elapsed:.2f} s"  # about 0.1 s on the 2-core machine


def test_encode_decode_round_trips_every_word_of_the_filings(tokens, bpe):
    ids, word_index = bpe.tokenize(tokens)
    assert bpe.decode(ids) == tokens
    assert bpe.decode(ids, word_index) == tokens
    assert word_index[-1] == len(tokens) - 1
    starts = word_starts(word_index)
    assert starts.size == len(tokens)
    sep = np.flatnonzero(np.asarray(tokens) == "[SEP]")
    assert np.all(ids[starts[sep]] == SPECIAL_TOKENS.index("[SEP]"))  # kept whole
    for k in (0, 50, 500):
        small = bpe.truncated(k)
        assert small.decode(small.tokenize(tokens)[0]) == tokens


def test_an_unseen_character_is_one_unk_per_character(bpe):
    pieces = bpe.encode_word("rev€nue")
    assert pieces.count("[UNK]") == 1 and "".join(pieces) == "rev[UNK]nue</w>"  # the rest still merged
    assert bpe.encode_word("ÿÿ") == ("[UNK]", "[UNK]")
    words = ["revenue", "co€", "[MASK]", "rose"]
    ids, word_index = bpe.tokenize(words)
    assert np.sum(ids == UNK_ID) == 1
    # the unknown last character took the end-of-word marker with it: the word index keeps the boundary
    assert bpe.decode(ids, word_index) == ["revenue", "co[UNK]", "[MASK]", "rose"]


# ----------------------------------------------------------------------------- tokenizers as a reference
def _hf_tokenizer(bpe: BPE):
    tokenizers = pytest.importorskip("tokenizers")
    model = tokenizers.models.BPE(bpe.vocabulary, list(bpe.merges), unk_token="[UNK]",
                                  end_of_word_suffix=bpe.end_of_word)
    tokenizer = tokenizers.Tokenizer(model)
    tokenizer.pre_tokenizer = tokenizers.pre_tokenizers.WhitespaceSplit()
    tokenizer.add_special_tokens(list(SPECIAL_TOKENS))  # kept whole, with the ids already in the vocabulary
    return tokenizer


@pytest.mark.slow  # a tokenizer library over every word of the filings
@pytest.mark.parametrize("n_merges", [0, 300, None])
def test_tokenizers_cuts_every_word_of_the_filings_as_we_do(tokens, bpe, n_merges):
    """The same vocabulary and merges in ``tokenizers.models.BPE`` (``end_of_word_suffix``,
    whitespace pre-tokenizer, special tokens added): identical ids and word indices for the
    whole stream, every distinct word included, plus words with unseen characters."""
    model = bpe if n_merges is None else bpe.truncated(n_merges)
    tokenizer = _hf_tokenizer(model)
    stream = tokens + ["café", "€uro", "x€", "[PAD]"]
    encoding = tokenizer.encode(" ".join(stream))
    ids, word_index = model.tokenize(stream)
    assert encoding.ids == ids.tolist()
    assert encoding.word_ids == word_index.tolist()
    for word in sorted(set(stream)):  # one word at a time too
        assert tokenizer.encode(word).tokens == list(model.encode_word(word))


def test_bpe_trainer_learns_the_same_merges_when_the_ids_are_pinned(tokens, bpe):
    """``tokenizers``' ``BpeTrainer`` merges the pair of largest count, ties to the smallest
    (left id, right id) (its ``Merge`` ordering), as ``learn_bpe`` does, so with the same ids
    the two learn the same merges. Its ids are specials, then the characters by code point,
    then the end-of-word forms (``"3</w>"``) *in the order it meets them while iterating a
    hash map of the word counts*, which changes from process to process: run as is, it
    disagrees with itself (on the filings, first at about merge 640, ``201 3</w>`` against
    ``201 4</w>``, both of count 45). Passing our base symbols as its special tokens gives them
    our ids (its alphabet and end-of-word forms reuse ids already present), which removes that
    freedom; its merged symbols then get ids in creation order, as ours do."""
    tokenizers = pytest.importorskip("tokenizers")
    counts = count_words(tokens)
    for words, reference in ((SENNRICH, learn_bpe(SENNRICH, 100)), (counts, bpe)):
        tokenizer = tokenizers.Tokenizer(tokenizers.models.BPE(unk_token="[UNK]", end_of_word_suffix="</w>"))
        tokenizer.pre_tokenizer = tokenizers.pre_tokenizers.WhitespaceSplit()
        trainer = tokenizers.trainers.BpeTrainer(
            vocab_size=reference.vocabulary_size + 10, min_frequency=2, show_progress=False,
            special_tokens=list(reference.symbols[:len(SPECIAL_TOKENS) + 2 * len(reference.alphabet)]),
            end_of_word_suffix="</w>")
        tokenizer.train_from_iterator([word for word, n in words.items() for _ in range(n)], trainer=trainer)
        learned = json.loads(tokenizer.to_str())["model"]
        assert [tuple(pair) for pair in learned["merges"]] == list(reference.merges)
        assert learned["vocab"] == reference.vocabulary


# ----------------------------------------------------------------------------- the trade-off
MERGES = [0, 100, 250, 500, 1000, 2000, 10**6]


def test_more_merges_mean_fewer_subwords_per_word_and_no_unknown(tokens):
    rows = subword_tradeoff(tokens, MERGES)
    per_word = np.array([row.subwords_per_word for row in rows])
    sizes = np.array([row.vocabulary_size for row in rows])
    assert np.all(np.diff(per_word) < 0) and np.all(np.diff(sizes) > 0)
    assert per_word[0] == pytest.approx(np.mean([len(t) for t in tokens if t != "[SEP]"]))  # characters
    assert 1.0 <= per_word[-1] < 1.05  # nearly every word is one symbol with every merge learned
    assert all(row.unknown_rate == 0 for row in rows)  # every character was seen
    assert rows[-1].n_merges < 10**6  # the data allows about 2,900 merges
    assert rows[1] == subword_statistics(learn_bpe(count_words(tokens), 100), tokens)


def test_held_out_filings_keep_no_unknown_while_the_word_vocabulary_loses_words(tokens, bpe):
    """On the chapter-6 corpus the min-count-5 word vocabulary maps about 5.7 % of word tokens to
    [UNK]; on fresh filings (another seed) more, since its rare words are new names. The subword
    tokenizer learned on the same filings has no unknown on either: every character was seen."""
    fresh = generate_corpus(CorpusConfig(), np.random.default_rng(2024)).tokens.tolist()
    vocabulary = build_vocabulary(tokens, min_count=5)
    word_unk_own, word_unk_fresh = 1 - vocabulary.coverage(tokens), 1 - vocabulary.coverage(fresh)
    assert 0.04 < word_unk_own < 0.08
    assert word_unk_fresh > word_unk_own
    for rows in (subword_tradeoff(tokens, [500, 2000]), subword_tradeoff(tokens, [500, 2000], eval_tokens=fresh)):
        assert all(row.unknown_rate == 0 for row in rows)
        assert rows[1].subwords_per_word < rows[0].subwords_per_word
    # with as many ids as the word vocabulary's input embedding, a word costs under 1.6 subwords
    base = len(SPECIAL_TOKENS) + 2 * len(bpe.alphabet)
    near = subword_tradeoff(tokens, [vocabulary.size + 2 - base])[0]
    assert near.vocabulary_size == vocabulary.size + 2
    assert near.subwords_per_word < 1.6


# ----------------------------------------------------------------------------- bad input
@pytest.mark.parametrize(("call", "error", "name"), [
    (lambda: learn_bpe(SENNRICH, -1), ValueError, "n_merges"),
    (lambda: learn_bpe(SENNRICH, 2.0), TypeError, "n_merges"),
    (lambda: learn_bpe(SENNRICH, 2, min_frequency=0), ValueError, "min_frequency"),
    (lambda: learn_bpe(["low", "low"], 2), TypeError, "word_counts"),
    (lambda: learn_bpe({}, 2), ValueError, "word_counts"),
    (lambda: learn_bpe({"low": 0}, 2), ValueError, "word_counts"),
    (lambda: learn_bpe({"low": 2.0}, 2), TypeError, "word_counts"),
    (lambda: learn_bpe({"low": True}, 2), TypeError, "word_counts"),
    (lambda: learn_bpe({"": 3}, 2), ValueError, "word_counts"),
    (lambda: learn_bpe({"lo w": 3}, 2), ValueError, "word_counts"),
    (lambda: learn_bpe({"low</w>": 3}, 2), ValueError, "end_of_word"),
    (lambda: learn_bpe({"[SEP]": 3}, 2), ValueError, "word_counts"),
    (lambda: learn_bpe({3: 3}, 2), TypeError, "word_counts"),
    (lambda: learn_bpe(SENNRICH, 2, end_of_word=""), ValueError, "end_of_word"),
    (lambda: learn_bpe(SENNRICH, 2, end_of_word=None), TypeError, "end_of_word"),
    (lambda: learn_bpe(SENNRICH, 2).decode([999]), ValueError, "ids"),
    (lambda: learn_bpe(SENNRICH, 2).decode([0.5]), TypeError, "ids"),
    (lambda: learn_bpe(SENNRICH, 2).decode([4, 5], [0, 2]), ValueError, "word_index"),
    (lambda: learn_bpe(SENNRICH, 2).decode([4, 5], [0]), ValueError, "word_index"),
    (lambda: learn_bpe(SENNRICH, 2).tokenize("low"), TypeError, "words"),
    (lambda: learn_bpe(SENNRICH, 2).tokenize(["low", ""]), ValueError, "words"),
    (lambda: learn_bpe(SENNRICH, 2).tokenize(["a b"]), ValueError, "words"),
    (lambda: learn_bpe(SENNRICH, 2).encode_word("lo</w>"), ValueError, "word"),
    (lambda: BPE(merges=[("l", "o")], alphabet="low"), TypeError, "alphabet"),
    (lambda: BPE(merges=[("l", "o")], alphabet=["lo"]), ValueError, "alphabet"),
    (lambda: BPE(merges=[("l", "o")], alphabet=["l", "l"]), ValueError, "alphabet"),
    (lambda: BPE(merges=[("l</w>", "o")], alphabet=["l", "o"]), ValueError, "merges"),
    (lambda: BPE(merges=[("l", "o"), ("l", "o")], alphabet=["l", "o"]), ValueError, "merges"),
    (lambda: BPE(merges=[("l",)], alphabet=["l", "o"]), TypeError, "merges"),
    (lambda: subword_statistics(None, ["low"]), TypeError, "bpe"),
    (lambda: subword_statistics(learn_bpe(SENNRICH, 2), ["[SEP]"]), ValueError, "tokens"),
    (lambda: subword_tradeoff(["low"] * 3, []), ValueError, "merge_counts"),
    (lambda: subword_tradeoff(["low"] * 3, [-1]), ValueError, "merge_counts"),
    (lambda: subword_tradeoff(["low"] * 3, [1], eval_tokens=["lo w"]), ValueError, "eval_tokens"),
    (lambda: word_starts([1, 1]), ValueError, "word_index"),
    (lambda: SubwordStatistics(1, 10, 2, 1, 0, 0), ValueError, "n_subwords"),
])
def test_bad_input_is_refused_naming_the_argument(call, error, name):
    with pytest.raises(error, match=name):
        call()


def test_a_huge_merge_count_stops_at_what_the_data_allows():
    start = time.perf_counter()
    assert len(learn_bpe(SENNRICH, 10**12).merges) == 13
    assert len(learn_bpe(SENNRICH, 10**12, min_frequency=10**12).merges) == 0
    assert time.perf_counter() - start < 0.5
