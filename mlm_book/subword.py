r"""Byte-pair encoding (BPE) over words, written for the book: learn, tokenize, decode, measure.

Sennrich, Haddow and Birch (2016) split every word into characters and repeatedly merge the
most frequent adjacent pair of symbols into a new symbol. Counts are taken over word *types*
weighted by their corpus counts, so learning never walks the token stream.

Conventions of this module:

* **End of word.** A word is its characters with an end-of-word marker (``"</w>"`` by
  default) attached to the *last* character, as in Sennrich et al.'s code and in the
  ``end_of_word_suffix`` of Hugging Face ``tokenizers``: ``low`` starts as
  ``l``, ``o``, ``w</w>``. So ``est</w>`` (a word ending) and ``est`` (inside a word) are
  different symbols, and a token sequence can be cut back into words without knowing
  where the words were. Words may not contain the marker or whitespace.
* **Ties.** The pair with the largest count is merged; among equal counts, the pair whose
  left symbol has the smaller id wins, then the smaller right id. Ids follow the vocabulary
  layout below, so a merged symbol's id is the order in which it was created. This is the
  rule of ``tokenizers``' ``BpeTrainer`` (given the same ids), which the tests check merge by merge.
  A pair is merged when its count is at least ``min_frequency``.
* **Vocabulary layout.** Ids ``0 .. 3`` are the special tokens ``[UNK]``, ``[SEP]``,
  ``[MASK]``, ``[PAD]`` (kept whole: a word equal to one of them is that one id); then every
  character seen in training, by code point; then the same characters with the
  end-of-word marker, in the same order; then the merged symbols in the order they were first
  created (a merge whose result already exists reuses its id).
* **Unknown characters.** A character never seen in training becomes one ``[UNK]`` id *per
  character* (``tokenizers``' default, ``fuse_unk=False``); the rest of the word is still
  encoded. Such a word cannot be decoded exactly, and if its last character is unknown the
  end-of-word marker is lost with it, so pass the word index to
  [`BPE.decode`][mlm_book.subword.BPE.decode] to keep the word boundaries.
* **Encoding** a word applies the learned merges by rank: repeatedly merge the adjacent pair
  with the lowest rank, the leftmost occurrence first, which reproduces the segmentation the
  learner reached for every training word.

Examples
--------
>>> bpe = learn_bpe({"low": 5, "lower": 2, "newest": 6, "widest": 3}, 4)
>>> bpe.merges
(('e', 's'), ('es', 't</w>'), ('l', 'o'), ('e', 'w'))
>>> bpe.encode_word("lowest")
('lo', 'w', 'est</w>')
>>> ids, word_index = bpe.tokenize(["newest", "[SEP]", "low"])
>>> word_index.tolist()
[0, 0, 0, 1, 2, 2]
>>> bpe.decode(ids)
['newest', '[SEP]', 'low']
"""

from __future__ import annotations

import heapq
import itertools
import numbers
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np

from mlm_book.validation import (
    as_int_array,
    check_instance,
    check_positive_int,
    check_sequence,
    check_tokens,
)

__all__ = [
    "BPE",
    "END_OF_WORD",
    "SPECIAL_TOKENS",
    "UNK_ID",
    "SubwordStatistics",
    "count_words",
    "learn_bpe",
    "subword_statistics",
    "subword_tradeoff",
    "word_starts",
]

#: The special tokens, ids 0 to 3, each kept whole (never split, never merged).
SPECIAL_TOKENS = ("[UNK]", "[SEP]", "[MASK]", "[PAD]")
#: Id of ``[UNK]``: an unknown character (one id per character).
UNK_ID = 0
#: The default end-of-word marker, attached to a word's last character.
END_OF_WORD = "</w>"


def _check_marker(end_of_word) -> str:
    if not isinstance(end_of_word, str):
        raise TypeError(f"end_of_word must be a str such as '</w>', got {type(end_of_word).__name__}")
    if not end_of_word or any(char.isspace() for char in end_of_word):
        raise ValueError(f"end_of_word must be a non-empty str without whitespace, got {end_of_word!r}")
    return end_of_word


def _check_word(word, name: str, end_of_word: str, *, specials_ok: bool) -> str:
    """A word: a non-empty str, no whitespace, no end-of-word marker (a special token is whole)."""
    if not isinstance(word, str):
        raise TypeError(f"{name} must hold str words, got {type(word).__name__}")
    if specials_ok and word in SPECIAL_TOKENS:
        return word
    if not word:
        raise ValueError(f"{name} must hold non-empty words, got ''")
    if any(char.isspace() for char in word):
        raise ValueError(f"{name} must hold words without whitespace, got {word[:40]!r}")
    if end_of_word in word:
        raise ValueError(f"{name} must not hold words containing end_of_word ({end_of_word!r}), got {word[:40]!r}")
    return word


@dataclass(frozen=True)
class BPE:
    r"""A byte-pair encoding: its alphabet, its merges in order, and the vocabulary they define.

    Build it with [`learn_bpe`][mlm_book.subword.learn_bpe]; the constructor rebuilds the
    vocabulary (layout in the module docstring) from the alphabet and the merges and checks
    that every merge joins symbols that exist by then.

    Parameters
    ----------
    merges : sequence of (str, str)
        The merges in the order learned; each joins a non-final symbol (left) with any
        symbol (right) already in the vocabulary. Stored as a tuple of pairs.
    alphabet : sequence of str
        The distinct characters seen in training (single characters, no whitespace). Stored
        sorted by code point.
    end_of_word : str
        The marker attached to a word's last character.

    Attributes
    ----------
    symbols : tuple of str
        ``symbols[i]`` is the string of id ``i`` (special tokens first).

    Raises
    ------
    TypeError
        If a field has the wrong type (``merges`` not pairs of str, ``alphabet`` not str items).
    ValueError
        If ``alphabet`` holds a repeated character, a string that is not one character, or
        whitespace; if ``end_of_word`` is empty or holds whitespace; if a merge uses a symbol
        that does not exist yet or puts a word-final symbol on the left.

    Examples
    --------
    >>> bpe = BPE(merges=[("l", "o"), ("lo", "w</w>")], alphabet=["w", "o", "l"])
    >>> bpe.symbols[4:]
    ('l', 'o', 'w', 'l</w>', 'o</w>', 'w</w>', 'lo', 'low</w>')
    >>> bpe.vocabulary_size, bpe.encode_word("low"), bpe.encode_word("owl")
    (12, ('low</w>',), ('o', 'w', 'l</w>'))
    >>> BPE(merges=[("lo", "w")], alphabet=["l", "o", "w"])
    Traceback (most recent call last):
    ...
    ValueError: merges[0] joins 'lo', which is not a symbol before that merge (a character of alphabet, one with end_of_word '</w>', or a merge)
    """

    merges: tuple
    alphabet: tuple
    end_of_word: str = END_OF_WORD
    symbols: tuple = field(init=False, repr=False, compare=False)
    _index: dict = field(init=False, repr=False, compare=False)
    _ranks: dict = field(init=False, repr=False, compare=False)
    _final: np.ndarray = field(init=False, repr=False, compare=False)

    def __post_init__(self):
        marker = _check_marker(self.end_of_word)
        alphabet = check_sequence(self.alphabet, "alphabet", of=str)
        for char in alphabet:
            if len(char) != 1 or char.isspace():
                raise ValueError(f"alphabet must hold single non-whitespace characters, got {char[:40]!r}")
        if len(set(alphabet)) != len(alphabet):
            raise ValueError("alphabet must hold distinct characters")
        alphabet = tuple(sorted(alphabet))
        merges = check_sequence(self.merges, "merges")
        pairs = []
        for merge in merges:
            if isinstance(merge, (str, bytes)) or not isinstance(merge, (tuple, list)) or len(merge) != 2:
                raise TypeError(f"merges must hold pairs of str, got {type(merge).__name__} {str(merge)[:40]}")
            if not all(isinstance(part, str) for part in merge):
                raise TypeError(f"merges must hold pairs of str, got {tuple(type(p).__name__ for p in merge)}")
            pairs.append((merge[0], merge[1]))
        symbols = list(SPECIAL_TOKENS) + list(alphabet) + [char + marker for char in alphabet]
        # whether each id ends a word: the special tokens but [UNK], the marked characters,
        # and a merge whose right part ends a word (decided by structure, not by the string)
        final = [i > UNK_ID for i in range(len(SPECIAL_TOKENS))] + [False] * len(alphabet) + [True] * len(alphabet)
        index = {symbol: i for i, symbol in enumerate(symbols) if i >= len(SPECIAL_TOKENS)}
        ranks = {}
        for rank, (left, right) in enumerate(pairs):
            for part in (left, right):
                if part not in index:
                    raise ValueError(f"merges[{rank}] joins {part[:40]!r}, which is not a symbol before that merge "
                                     f"(a character of alphabet, one with end_of_word {marker[:40]!r}, or a merge)")
            if final[index[left]]:
                raise ValueError(f"merges[{rank}] puts the word-final symbol {left[:40]!r} on the left")
            if (index[left], index[right]) in ranks:
                raise ValueError(f"merges[{rank}] repeats the merge {(left, right)}")
            merged, ends = left + right, final[index[right]]
            if merged not in index:
                if ends != merged.endswith(marker):
                    raise ValueError(f"merges[{rank}] makes {merged[:40]!r}, which ends with end_of_word "
                                     "inside a word or lacks it at a word's end")
                index[merged] = len(symbols)
                symbols.append(merged)
                final.append(ends)
            elif final[index[merged]] != ends:
                raise ValueError(f"merges[{rank}] makes {merged[:40]!r} both inside and at the end of a word")
            ranks[index[left], index[right]] = (rank, index[merged])
        object.__setattr__(self, "merges", tuple(pairs))
        object.__setattr__(self, "alphabet", alphabet)
        object.__setattr__(self, "symbols", tuple(symbols))
        object.__setattr__(self, "_index", index)
        object.__setattr__(self, "_ranks", ranks)
        object.__setattr__(self, "_final", np.array(final, dtype=bool))

    @property
    def vocabulary_size(self) -> int:
        """Number of ids: special tokens, both forms of each character, merged symbols."""
        return len(self.symbols)

    @property
    def vocabulary(self) -> dict:
        """``symbol -> id`` for every id (the dict ``tokenizers.models.BPE`` takes)."""
        return {symbol: i for i, symbol in enumerate(self.symbols)}

    def truncated(self, n_merges: int) -> BPE:
        """The encoding with only the first ``n_merges`` merges (all of them if there are fewer).

        Examples
        --------
        >>> bpe = learn_bpe({"low": 5, "lower": 2}, 10)
        >>> len(bpe.merges), bpe.truncated(1).merges
        (5, (('l', 'o'),))
        """
        n_merges = check_positive_int(n_merges, "n_merges", minimum=0)
        return BPE(merges=self.merges[:n_merges], alphabet=self.alphabet, end_of_word=self.end_of_word)

    def _encode_ids(self, word: str) -> list[int]:
        index = self._index
        ids = [index.get(char, UNK_ID) for char in word]
        if ids[-1] != UNK_ID:
            ids[-1] += len(self.alphabet)  # the same character's word-final form
        ranks = self._ranks
        while len(ids) > 1:
            best, where = None, -1
            for i in range(len(ids) - 1):  # lowest rank, leftmost occurrence first
                found = ranks.get((ids[i], ids[i + 1]))
                if found is not None and (best is None or found[0] < best[0]):
                    best, where = found, i
            if best is None:
                break
            ids[where:where + 2] = [best[1]]
        return ids

    def encode_word(self, word: str) -> tuple[str, ...]:
        """The symbols of one word; an unseen character is ``[UNK]``.

        Parameters
        ----------
        word : str
            Non-empty, no whitespace, no end-of-word marker.

        Returns
        -------
        tuple of str

        Raises
        ------
        TypeError
            If ``word`` is not a str.
        ValueError
            If ``word`` is empty or holds whitespace or the end-of-word marker.

        Examples
        --------
        >>> bpe = learn_bpe({"low": 5, "lower": 2}, 2)
        >>> bpe.encode_word("slow"), bpe.encode_word("owl")
        (('[UNK]', 'low</w>'), ('o', 'w', 'l</w>'))
        """
        word = _check_word(word, "word", self.end_of_word, specials_ok=True)
        if word in SPECIAL_TOKENS:
            return (word,)
        return tuple(self.symbols[i] for i in self._encode_ids(word))

    def tokenize(self, words) -> tuple[np.ndarray, np.ndarray]:
        """Subword ids of a word sequence and the word each subword belongs to.

        Each distinct word is encoded once. A word equal to a special token is that token's id.

        Parameters
        ----------
        words : sequence of str, length n
            The words (a token stream such as a filing, ``[SEP]`` allowed).

        Returns
        -------
        ids : ndarray of int, shape (m,)
            Subword ids, m >= n.
        word_index : ndarray of int, shape (m,)
            For each subword, the position of its word in ``words`` (non-decreasing); the first
            subword of each word is at [`word_starts`][mlm_book.subword.word_starts]``(word_index)``.

        Raises
        ------
        TypeError
            If ``words`` is a str or not a sequence of str.
        ValueError
            If a word is empty or holds whitespace or the end-of-word marker.

        Examples
        --------
        >>> bpe = learn_bpe({"low": 5, "lower": 2}, 3)
        >>> ids, word_index = bpe.tokenize(["lower", "low"])
        >>> [bpe.symbols[i] for i in ids], word_index.tolist()
        (['lo', 'w', 'er</w>', 'low</w>'], [0, 0, 0, 1])
        """
        words = check_sequence(words, "words", of=str)
        special = {token: i for i, token in enumerate(SPECIAL_TOKENS)}
        encoded: dict[str, list[int]] = {}
        ids: list[int] = []
        lengths = np.empty(len(words), dtype=np.int64)
        for position, word in enumerate(words):
            pieces = encoded.get(word)
            if pieces is None:
                _check_word(word, "words", self.end_of_word, specials_ok=True)
                pieces = [special[word]] if word in special else self._encode_ids(word)
                encoded[word] = pieces
            ids.extend(pieces)
            lengths[position] = len(pieces)
        return np.asarray(ids, dtype=np.int64), np.repeat(np.arange(len(words), dtype=np.int64), lengths)

    def decode(self, ids, word_index=None) -> list[str]:
        """Words back from subword ids: exact for words whose characters were all seen.

        Without ``word_index`` a word ends at each word-final symbol and each special token;
        an ``[UNK]`` decodes to the text ``[UNK]`` in place of its character.

        Parameters
        ----------
        ids : array_like of int, shape (m,)
            Subword ids in ``[0, vocabulary_size)``.
        word_index : array_like of int, shape (m,), optional
            The word of each subword (as returned by [`tokenize`][mlm_book.subword.BPE.tokenize]):
            starts at 0 and steps by 0 or 1. Needed for exact word boundaries when a word's
            last character was unknown.

        Returns
        -------
        list of str

        Raises
        ------
        TypeError
            If ``ids`` or ``word_index`` does not hold integers.
        ValueError
            If an id is out of range, or ``word_index`` has another length or is not a
            word numbering.

        Examples
        --------
        >>> bpe = learn_bpe({"low": 5, "lower": 2}, 3)
        >>> ids, word_index = bpe.tokenize(["lower", "owl", "lo@"])
        >>> bpe.decode(ids, word_index)
        ['lower', 'owl', 'lo[UNK]']
        >>> bpe.decode([99])
        Traceback (most recent call last):
        ...
        ValueError: ids must be token ids in [0, 17), got values from 99 to 99
        """
        ids = check_tokens(ids, "ids", self.vocabulary_size, ndim=1, allow_empty=True)
        marker = self.end_of_word
        if word_index is None:
            ends = self._final[ids]  # a word-final symbol or a special token other than [UNK]
            starts = np.r_[True, ends[:-1]] | (ids < len(SPECIAL_TOKENS)) & (ids != UNK_ID)
            number = np.cumsum(starts) - 1 if ids.size else ids
        else:
            number = _word_numbering(word_index, ids.size)
        words = [""] * (int(number[-1]) + 1 if ids.size else 0)
        symbols = self.symbols
        for i, w in zip(ids.tolist(), number.tolist(), strict=True):
            words[w] += symbols[i]
        return [word.removesuffix(marker) for word in words]


def _word_numbering(word_index, size: int | None = None) -> np.ndarray:
    word_index = as_int_array(word_index, "word_index", ndim=1)
    if size is not None and word_index.size != size:
        raise ValueError(f"word_index must have one entry per id ({size}), got {word_index.size}")
    if word_index.size:
        steps = np.diff(word_index)
        if word_index[0] != 0 or np.any((steps != 0) & (steps != 1)):
            raise ValueError("word_index must number the words 0, 1, 2, ... (start at 0, steps of 0 or 1)")
    return word_index


def word_starts(word_index) -> np.ndarray:
    """Position of each word's first subword: where a tagger reads a word's label.

    Parameters
    ----------
    word_index : array_like of int, shape (m,)
        The word of each subword, as returned by [`BPE.tokenize`][mlm_book.subword.BPE.tokenize].

    Returns
    -------
    ndarray of int, shape (n,)
        Index of the first subword of each of the n words; ``numpy.split(ids, starts[1:])``
        gives the groups.

    Raises
    ------
    TypeError
        If ``word_index`` does not hold integers.
    ValueError
        If ``word_index`` is not one-dimensional or does not number words 0, 1, 2, ...

    Examples
    --------
    >>> word_starts([0, 0, 1, 2, 2, 2]).tolist()
    [0, 2, 3]
    >>> word_starts([0, 2])
    Traceback (most recent call last):
    ...
    ValueError: word_index must number the words 0, 1, 2, ... (start at 0, steps of 0 or 1)
    """
    word_index = _word_numbering(word_index)
    return np.flatnonzero(np.r_[True, word_index[1:] != word_index[:-1]]) if word_index.size else word_index


def count_words(tokens) -> dict[str, int]:
    """Counts of the word types of a token stream, special tokens (``[SEP]``, ...) left out.

    Parameters
    ----------
    tokens : sequence of str
        A token stream such as ``corpus.tokens``.

    Returns
    -------
    dict of str to int
        Sorted by decreasing count, ties by the word.

    Raises
    ------
    TypeError
        If ``tokens`` is a str or holds something else than str.
    ValueError
        If ``tokens`` holds no word.

    Examples
    --------
    >>> count_words(["low", "[SEP]", "lower", "low"])
    {'low': 2, 'lower': 1}
    """
    return _count_words(tokens, "tokens")


def _count_words(tokens, name: str) -> dict[str, int]:
    counts = Counter(check_sequence(tokens, name, of=str))
    for token in SPECIAL_TOKENS:
        counts.pop(token, None)
    if not counts:
        raise ValueError(f"{name} must contain at least one word (special tokens are not counted)")
    return dict(sorted(counts.items(), key=lambda item: (-item[1], item[0])))


def _check_word_counts(word_counts, end_of_word: str) -> dict[str, int]:
    check_instance(word_counts, "word_counts", Mapping)
    if not word_counts:
        raise ValueError("word_counts must hold at least one word")
    checked = {}
    for word, count in word_counts.items():
        if isinstance(word, str) and word in SPECIAL_TOKENS:
            raise ValueError(f"word_counts must not hold the special token {word} (it is kept whole; "
                             "count the words only, e.g. with count_words)")
        _check_word(word, "word_counts", end_of_word, specials_ok=False)
        if isinstance(count, bool) or not isinstance(count, numbers.Integral):
            raise TypeError(f"word_counts must map words to int counts, got {type(count).__name__} for {word[:40]!r}")
        if count < 1:
            raise ValueError(f"word_counts must map words to positive counts, got {count} for {word[:40]!r}")
        checked[word] = int(count)
    return checked


def learn_bpe(word_counts, n_merges: int, *, min_frequency: int = 2, end_of_word: str = END_OF_WORD) -> BPE:
    r"""Learn up to ``n_merges`` BPE merges from word counts (Sennrich et al., 2016).

    Every word type starts as its characters, the last one carrying ``end_of_word``; each step
    merges, in every word, the adjacent pair with the largest count summed over word types
    weighted by their counts, ties to the smaller (left id, right id). Pair counts are kept
    up to date incrementally: a merge only revisits the word types that hold the pair, and a
    heap with lazy deletion gives the next pair.

    Parameters
    ----------
    word_counts : mapping of str to int
        Word type -> count (positive). Words: non-empty, no whitespace, no ``end_of_word``,
        not a special token.
    n_merges : int
        Largest number of merges (>= 0). Learning stops earlier when no pair is left whose
        count reaches ``min_frequency``, so a large value learns every merge the data allows.
    min_frequency : int
        Smallest count of a pair that is merged (>= 1).
    end_of_word : str
        Marker attached to each word's last character.

    Returns
    -------
    BPE

    Raises
    ------
    TypeError
        If ``word_counts`` is not a mapping of str to int, or a number is not an integer.
    ValueError
        If ``word_counts`` is empty, holds a bad word or a count < 1, ``n_merges`` < 0,
        ``min_frequency`` < 1, or ``end_of_word`` is empty or holds whitespace.

    Examples
    --------
    >>> bpe = learn_bpe({"low": 5, "lower": 2, "newest": 6, "widest": 3}, 100)
    >>> len(bpe.merges), bpe.merges[:3]
    (13, (('e', 's'), ('es', 't</w>'), ('l', 'o')))
    >>> learn_bpe({"low": 1}, -1)
    Traceback (most recent call last):
    ...
    ValueError: n_merges must be an integer >= 0, got -1
    """
    end_of_word = _check_marker(end_of_word)
    counts_by_word = _check_word_counts(word_counts, end_of_word)
    n_merges = check_positive_int(n_merges, "n_merges", minimum=0)
    min_frequency = check_positive_int(min_frequency, "min_frequency")
    alphabet = sorted({char for word in counts_by_word for char in word})
    base = BPE(merges=(), alphabet=alphabet, end_of_word=end_of_word)
    index = dict(base._index)
    symbols = list(base.symbols)
    n_chars = len(alphabet)
    words = []
    for word in counts_by_word:
        ids = [index[char] for char in word]
        ids[-1] += n_chars
        words.append(ids)
    counts = list(counts_by_word.values())

    pair_counts: Counter = Counter()
    where: dict[tuple[int, int], set[int]] = {}
    for w, ids in enumerate(words):
        for pair in itertools.pairwise(ids):
            pair_counts[pair] += counts[w]
            where.setdefault(pair, set()).add(w)
    heap = [(-count, pair) for pair, count in pair_counts.items()]
    heapq.heapify(heap)

    merges = []
    while len(merges) < n_merges and heap:
        negative, pair = heapq.heappop(heap)
        current = pair_counts.get(pair, 0)
        if current != -negative:  # a stale entry: requeue with the current count
            if current > 0:
                heapq.heappush(heap, (-current, pair))
            continue
        if current < min_frequency:
            break
        left, right = pair
        merged = symbols[left] + symbols[right]
        if merged not in index:
            index[merged] = len(symbols)
            symbols.append(merged)
        new = index[merged]
        merges.append((symbols[left], symbols[right]))
        delta: Counter = Counter()
        for w in sorted(where.pop(pair)):
            ids = words[w]
            out, i = [], 0
            while i < len(ids):
                if i + 1 < len(ids) and ids[i] == left and ids[i + 1] == right:
                    out.append(new)
                    i += 2
                else:
                    out.append(ids[i])
                    i += 1
            if len(out) == len(ids):
                continue  # the pair left this word in an earlier merge
            weight = counts[w]
            for old in itertools.pairwise(ids):
                delta[old] -= weight
            for created in itertools.pairwise(out):
                delta[created] += weight
                where.setdefault(created, set()).add(w)
            words[w] = out
        for changed, change in delta.items():
            if change:
                pair_counts[changed] += change
                if change > 0:
                    heapq.heappush(heap, (-pair_counts[changed], changed))
        pair_counts.pop(pair, None)
    return BPE(merges=tuple(merges), alphabet=tuple(alphabet), end_of_word=end_of_word)


@dataclass(frozen=True)
class SubwordStatistics:
    """How a BPE cuts a token stream: sequence length, unknowns and vocabulary size.

    Parameters
    ----------
    n_merges : int
        Merges of the encoding.
    vocabulary_size : int
        Its number of ids (special tokens included).
    n_words : int
        Word tokens of the stream (special tokens left out, as in ``Vocabulary.coverage``).
    n_subwords : int
        Subwords of those words.
    unknown_words : int
        Word tokens holding at least one ``[UNK]`` (an unseen character).
    unknown_subwords : int
        ``[UNK]`` ids among the subwords.

    Raises
    ------
    TypeError
        If a field is not an integer.
    ValueError
        If a count is negative, ``n_words`` is 0, or the counts contradict each other.

    Examples
    --------
    >>> s = SubwordStatistics(n_merges=3, vocabulary_size=20, n_words=4, n_subwords=6,
    ...                       unknown_words=1, unknown_subwords=1)
    >>> s.subwords_per_word, s.unknown_rate
    (1.5, 0.25)
    """

    n_merges: int
    vocabulary_size: int
    n_words: int
    n_subwords: int
    unknown_words: int
    unknown_subwords: int

    def __post_init__(self):
        for name in ("n_merges", "vocabulary_size", "n_words", "n_subwords", "unknown_words", "unknown_subwords"):
            object.__setattr__(self, name, check_positive_int(getattr(self, name), name, minimum=0))
        if self.n_words == 0:
            raise ValueError("n_words must be at least 1")
        if self.n_subwords < self.n_words:
            raise ValueError(f"n_subwords must be at least n_words ({self.n_words}), got {self.n_subwords}")
        if self.unknown_words > self.n_words:
            raise ValueError(f"unknown_words must be at most n_words ({self.n_words}), got {self.unknown_words}")
        if not self.unknown_words <= self.unknown_subwords <= self.n_subwords:
            raise ValueError(f"unknown_subwords must be between unknown_words ({self.unknown_words}) and "
                             f"n_subwords ({self.n_subwords}), got {self.unknown_subwords}")

    @property
    def subwords_per_word(self) -> float:
        """Mean number of subwords per word: how much longer the sequences get."""
        return self.n_subwords / self.n_words

    @property
    def unknown_rate(self) -> float:
        """Share of word tokens that hold an ``[UNK]`` (comparable to a word vocabulary's [UNK] rate)."""
        return self.unknown_words / self.n_words

    @property
    def unknown_subword_rate(self) -> float:
        """Share of subwords that are ``[UNK]``."""
        return self.unknown_subwords / self.n_subwords


def _statistics(bpe: BPE, types: list[str], counts: np.ndarray) -> SubwordStatistics:
    lengths = np.empty(len(types), dtype=np.int64)
    unknown = np.empty(len(types), dtype=np.int64)
    for t, word in enumerate(types):
        ids = bpe._encode_ids(word)
        lengths[t] = len(ids)
        unknown[t] = ids.count(UNK_ID)
    return SubwordStatistics(n_merges=len(bpe.merges), vocabulary_size=bpe.vocabulary_size,
                             n_words=int(counts.sum()), n_subwords=int(counts @ lengths),
                             unknown_words=int(counts @ (unknown > 0)), unknown_subwords=int(counts @ unknown))


def _types(tokens, bpe: BPE, name: str) -> tuple[list[str], np.ndarray]:
    if isinstance(tokens, Mapping):
        raise TypeError(f"{name} must be a sequence of str tokens, got a mapping")
    counts = _count_words(tokens, name)
    for word in counts:
        _check_word(word, name, bpe.end_of_word, specials_ok=False)
    return list(counts), np.fromiter(counts.values(), dtype=np.int64, count=len(counts))


def subword_statistics(bpe: BPE, tokens) -> SubwordStatistics:
    """Subwords per word, unknowns and vocabulary size of ``bpe`` on a token stream.

    Each word type is encoded once and weighted by its count; special tokens are left out.

    Parameters
    ----------
    bpe : BPE
        The encoding.
    tokens : sequence of str, length n
        The stream (``[SEP]`` allowed).

    Returns
    -------
    SubwordStatistics

    Raises
    ------
    TypeError
        If ``bpe`` is not a `BPE` or ``tokens`` not a sequence of str.
    ValueError
        If ``tokens`` holds no word, or a word that is empty or holds whitespace or the marker.

    Examples
    --------
    >>> bpe = learn_bpe({"low": 5, "lower": 2, "newest": 6, "widest": 3}, 6)
    >>> s = subword_statistics(bpe, ["lowest", "[SEP]", "newest", "low!"])
    >>> s.n_words, s.n_subwords, s.unknown_words, s.vocabulary_size
    (3, 7, 1, 30)
    """
    check_instance(bpe, "bpe", BPE)
    types, counts = _types(tokens, bpe, "tokens")
    return _statistics(bpe, types, counts)


def subword_tradeoff(tokens, merge_counts, *, eval_tokens=None, min_frequency: int = 2,
                     end_of_word: str = END_OF_WORD) -> tuple[SubwordStatistics, ...]:
    """Vocabulary size against sequence length and unknowns, for several numbers of merges.

    Learns once, with the largest number of merges asked, from the words of ``tokens``; the
    encoding with ``k`` merges is the first ``k`` of them (merges are learned in order, so
    this is what learning ``k`` would give). Each is measured on ``eval_tokens``
    (``tokens`` by default), every word type encoded once per ``k``.

    Parameters
    ----------
    tokens : sequence of str
        Training stream (special tokens are not counted).
    merge_counts : array_like of int, shape (K,)
        Numbers of merges, >= 0. A number beyond what the data allows measures all the merges
        learned (the row's ``n_merges`` says how many).
    eval_tokens : sequence of str, optional
        Stream measured (held-out filings, say); defaults to ``tokens``.
    min_frequency : int
        As in [`learn_bpe`][mlm_book.subword.learn_bpe].
    end_of_word : str
        As in [`learn_bpe`][mlm_book.subword.learn_bpe].

    Returns
    -------
    tuple of SubwordStatistics, length K
        One row per entry of ``merge_counts``, in its order.

    Raises
    ------
    TypeError
        If ``merge_counts`` does not hold integers, or a stream is not a sequence of str.
    ValueError
        If ``merge_counts`` is empty, not a vector or negative, or a stream holds no word or a bad word.

    Examples
    --------
    >>> train = ["low"] * 5 + ["lower"] * 2 + ["newest"] * 6 + ["widest"] * 3
    >>> rows = subword_tradeoff(train, [0, 4, 100], eval_tokens=["lowest", "newer", "wider"])
    >>> [(r.n_merges, r.vocabulary_size, r.n_subwords, r.unknown_words) for r in rows]
    [(0, 24, 16, 0), (4, 28, 12, 0), (13, 37, 9, 0)]
    """
    merge_counts = as_int_array(merge_counts, "merge_counts", ndim=1)
    if merge_counts.size == 0:
        raise ValueError("merge_counts must hold at least one number of merges")
    if merge_counts.min() < 0:
        raise ValueError(f"merge_counts must be >= 0, got {int(merge_counts.min())}")
    bpe = learn_bpe(count_words(tokens), int(merge_counts.max()), min_frequency=min_frequency,
                    end_of_word=end_of_word)
    types, counts = _types(tokens if eval_tokens is None else eval_tokens, bpe,
                           "tokens" if eval_tokens is None else "eval_tokens")
    rows = {}
    for k in sorted(set(merge_counts.tolist())):
        rows[k] = _statistics(bpe.truncated(min(k, len(bpe.merges))), types, counts)
    return tuple(rows[k] for k in merge_counts.tolist())
