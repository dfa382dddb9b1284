"""The filings vocabulary: words seen at least ``min_count`` times, plus [UNK] and [SEP].

Ids are laid out as

* ``0`` = ``[UNK]``, every word seen fewer than ``min_count`` times;
* ``1`` = ``[SEP]``, the sentence separator;
* ``2 .. size - 1`` = the frequent words, by decreasing count (ties alphabetical);
* ``size`` = ``[MASK]``, an *input-only* id for an encoder: it is never a target, so the
  output layer has ``size`` classes;
* ``size + 1`` = ``[PAD]``, also input-only: the slots of a centred window beyond a filing's
  edge ([`mlm_book.finance.windows.centred_windows`][mlm_book.finance.windows.centred_windows]), which an encoder masks as keys.
  An input embedding therefore has ``size + 2`` rows.

[`Vocabulary.encode`][mlm_book.finance.vocab.Vocabulary.encode] maps an unknown word to ``[UNK]`` (that is what ``[UNK]`` is
for); [`Vocabulary.lookup`][mlm_book.finance.vocab.Vocabulary.lookup] is the strict form and raises `KeyError` instead.

Examples
--------
>>> vocab = build_vocabulary(["a", "b", "a", "[SEP]", "a", "c"], min_count=2)
>>> vocab.words
('[UNK]', '[SEP]', 'a')
>>> vocab.encode(["a", "c", "[SEP]"]).tolist()
[2, 0, 1]
>>> vocab.size, vocab.mask_id, vocab.pad_id
(3, 3, 4)
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field

import numpy as np

from mlm_book.validation import check_positive_int, check_tokens

__all__ = ["Vocabulary", "build_vocabulary", "UNK", "SEP", "MASK", "PAD", "UNK_ID", "SEP_ID"]

UNK, SEP, MASK, PAD = "[UNK]", "[SEP]", "[MASK]", "[PAD]"
UNK_ID, SEP_ID = 0, 1


@dataclass(frozen=True)
class Vocabulary:
    """Word <-> id maps of a min-count vocabulary.

    Attributes
    ----------
    words : tuple of str
        ``words[i]`` is the string of id ``i``; ``[UNK]`` and ``[SEP]`` come first.
    counts : tuple of int
        Corpus count of each entry (``[UNK]`` counts the rare word tokens it replaces).
    min_count : int
        The threshold the words passed.

    Examples
    --------
    >>> x = build_vocabulary(["a", "b", "a", "[SEP]", "a", "c"], min_count=2)
    >>> rebuilt = Vocabulary(x.words, x.counts, x.min_count)   # its fields are checked
    >>> rebuilt.words
    ('[UNK]', '[SEP]', 'a')
    """

    words: tuple[str, ...]
    counts: tuple[int, ...]
    min_count: int
    index: dict = field(init=False, repr=False, compare=False)

    def __post_init__(self):
        if isinstance(self.words, (str, bytes)) or not isinstance(self.words, (tuple, list)):
            raise TypeError(f"words must be a tuple of str, got {type(self.words).__name__}")
        if isinstance(self.counts, (str, bytes)) or not isinstance(self.counts, (tuple, list)):
            raise TypeError(f"counts must be a tuple of int, got {type(self.counts).__name__}")
        bad = [word for word in self.words if not isinstance(word, str)]
        if bad:
            raise TypeError(f"words must hold strings, got {type(bad[0]).__name__}")
        if tuple(self.words[:2]) != (UNK, SEP):
            raise ValueError(f"words must start with {UNK!r} and {SEP!r} (ids {UNK_ID} and {SEP_ID}), "
                             f"got {tuple(self.words[:2])}")
        repeated = sorted(word for word, n in Counter(self.words).items() if n > 1)
        if repeated:
            # a repeated word would have two ids and encode() would only ever give the last
            raise ValueError(f"words must be distinct, got repeats {repeated[:5]}")
        if len(self.counts) != len(self.words):
            raise ValueError(f"counts must have one entry per word ({len(self.words)}), got {len(self.counts)}")
        for count in self.counts:
            check_positive_int(count, "counts", minimum=0)
        check_positive_int(self.min_count, "min_count")
        # stored as tuples so that the frozen vocabulary cannot change under its index
        object.__setattr__(self, "words", tuple(self.words))
        object.__setattr__(self, "counts", tuple(int(count) for count in self.counts))
        object.__setattr__(self, "index", {word: i for i, word in enumerate(self.words)})

    @property
    def size(self) -> int:
        """Number of output classes: frequent words plus [UNK] and [SEP]."""
        return len(self.words)

    @property
    def mask_id(self) -> int:
        """The input-only [MASK] id (equal to [`size`][mlm_book.finance.vocab.Vocabulary.size])."""
        return self.size

    @property
    def pad_id(self) -> int:
        """The input-only [PAD] id (equal to [`size`][mlm_book.finance.vocab.Vocabulary.size] + 1)."""
        return self.size + 1

    @property
    def n_words(self) -> int:
        """Number of frequent words (without [UNK] and [SEP])."""
        return self.size - 2

    def encode(self, tokens: Iterable[str]) -> np.ndarray:
        """Ids of ``tokens``, shape ``(n,)``; words outside the vocabulary become ``[UNK]`` (0).

        Examples
        --------
        >>> build_vocabulary(["x"] * 5).encode(["x", "never-seen"]).tolist()
        [2, 0]
        """
        get = self.index.get
        return np.fromiter((get(token, UNK_ID) for token in tokens), dtype=np.int64)

    def lookup(self, word: str) -> int:
        """Strict id of ``word``: raises `KeyError` if it is not in the vocabulary.

        Examples
        --------
        >>> build_vocabulary(["x"] * 5).lookup("y")
        Traceback (most recent call last):
        ...
        KeyError: "word 'y' is not in the vocabulary (seen fewer than 5 times); encode() maps it to [UNK]"
        """
        try:
            return self.index[word]
        except KeyError:
            raise KeyError(f"word {word!r} is not in the vocabulary (seen fewer than {self.min_count} "
                           f"times); encode() maps it to [UNK]") from None

    def decode(self, ids) -> list[str]:
        """Strings of ``ids`` (shape ``(n,)``); the input-only ids decode to ``[MASK]`` and ``[PAD]``.

        Examples
        --------
        >>> vocab = build_vocabulary(["x"] * 5)
        >>> vocab.decode([2, 1, 3, 4])
        ['x', '[SEP]', '[MASK]', '[PAD]']
        """
        ids = check_tokens(ids, "ids", self.size + 2, ndim=1, allow_empty=True)
        table = self.words + (MASK, PAD)
        return [table[i] for i in ids.tolist()]

    def coverage(self, tokens: Iterable[str]) -> float:
        """Share of the *word* tokens (``[SEP]`` excluded) that are in the vocabulary.

        Examples
        --------
        >>> build_vocabulary(["x"] * 5 + ["y"]).coverage(["x", "x", "x", "y"])
        0.75
        """
        ids = self.encode(token for token in tokens if token != SEP)
        if ids.size == 0:
            raise ValueError("tokens must contain at least one word")
        return float(np.mean(ids != UNK_ID))


def build_vocabulary(tokens: Iterable[str], min_count: int = 5) -> Vocabulary:
    """The vocabulary of the words seen at least ``min_count`` times in ``tokens``.

    Parameters
    ----------
    tokens : iterable of str
        The corpus tokens (``[SEP]`` may appear; it always gets id 1).
    min_count : int
        Threshold, at least 1.

    Returns
    -------
    Vocabulary

    Raises
    ------
    ValueError
        If ``min_count`` < 1 or a token is one of the reserved strings ``[UNK]``, ``[MASK]``, ``[PAD]``.
    TypeError
        If ``tokens`` is a string or not iterable, or holds an item that is not a str.

    Examples
    --------
    >>> build_vocabulary(["b", "a", "a", "b", "c"], min_count=2).words
    ('[UNK]', '[SEP]', 'a', 'b')
    >>> build_vocabulary(["a"], min_count=0)
    Traceback (most recent call last):
    ...
    ValueError: min_count must be an integer >= 1, got 0
    """
    check_positive_int(min_count, "min_count")
    # a bare string would count its characters, and None or a number is no corpus at all
    if isinstance(tokens, (str, bytes)) or not isinstance(tokens, Iterable):
        raise TypeError(f"tokens must be an iterable of str (e.g. a list of words), got {type(tokens).__name__}")
    try:
        counts = Counter(tokens)
    except TypeError:
        # an unhashable item (a nested list, an array) cannot be a word
        raise TypeError("tokens must hold strings (a flat list of words), got an unhashable item") from None
    bad = [token for token in counts if not isinstance(token, str)]
    if bad:
        raise TypeError(f"tokens must hold strings, got {type(bad[0]).__name__}")
    for reserved in (UNK, MASK, PAD):
        if reserved in counts:
            raise ValueError(f"tokens must not contain the reserved string {reserved}")
    n_sep = counts.pop(SEP, 0)
    frequent = sorted((word for word, n in counts.items() if n >= min_count), key=lambda w: (-counts[w], w))
    rare = sum(n for n in counts.values() if n < min_count)
    return Vocabulary(words=(UNK, SEP, *frequent), counts=(rare, n_sep, *(counts[w] for w in frequent)),
                      min_count=min_count)
