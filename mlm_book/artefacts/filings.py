"""The book's filings as the encoders read them: the corpus, its vocabulary and token ids.

Chapter 6 generates 300 synthetic filings ([`mlm_book.finance.corpus`][mlm_book.finance.corpus])
and keeps the words seen at least five times; every encoder trained on filings (chapters
7-9) reads them from here, so that its key holds the code that wrote them. Chapter 6's own
[`results`][mlm_book.experiments.ch06_finance.results] generates the same filings from the
same settings (a test checks that the two agree token for token).

Computing them takes about a second and is memoised per process; nothing here is stored.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field

import numpy as np

from mlm_book.finance.caps import polarity_words
from mlm_book.finance.corpus import Corpus, CorpusConfig, corpus_fingerprint, generate_corpus
from mlm_book.finance.vocab import Vocabulary, build_vocabulary
from mlm_book.finance.windows import fixed_windows, nearest_centre
from mlm_book.validation import (
    as_int_array,
    check_instance,
    check_positive_int,
    check_tokens,
)

__all__ = ["FilingsSetup", "Filings", "filings", "source_key"]


@dataclass(frozen=True)
class FilingsSetup:
    """What defines the filings and the readings chapter 6 takes of them.

    Attributes
    ----------
    corpus : CorpusConfig
        Generator settings of the filings.
    corpus_seed : int
        Seed of the generator.
    min_count : int
        Vocabulary threshold (rarer words read as [UNK]).
    window_length, nearest_stride : int
        The fixed windows of chapter 6's nearest-centre reading.
    polarity_min_count : int
        Labelled occurrences a word needs to enter the news-polarity probe set.

    Examples
    --------
    >>> FilingsSetup(min_count=0)
    Traceback (most recent call last):
    ...
    ValueError: min_count must be an integer >= 1, got 0
    """

    corpus: CorpusConfig = field(default_factory=CorpusConfig)
    corpus_seed: int = 9
    min_count: int = 5
    window_length: int = 32
    nearest_stride: int = 16
    polarity_min_count: int = 20

    def __post_init__(self):
        check_instance(self.corpus, "corpus", CorpusConfig)
        check_positive_int(self.corpus_seed, "corpus_seed", minimum=0)
        for name in ("min_count", "window_length", "nearest_stride", "polarity_min_count"):
            check_positive_int(getattr(self, name), name)


@dataclass(frozen=True, eq=False)
class Filings:
    """The filings, their vocabulary, their ids, and the per-token readings chapter 7's encoder measurements use.

    Attributes
    ----------
    setup : FilingsSetup
    corpus : Corpus
    vocabulary : Vocabulary
    ids : numpy.ndarray of int, shape (n_tokens,)
        Vocabulary ids of the token stream.
    nearest_positions : numpy.ndarray of int, shape (n_tokens,)
        Each token's position in the fixed window whose centre is nearest to it.
    polarity_words : tuple of str
        Words with enough labelled news occurrences for the polarity probe.

    Examples
    --------
    Two filings read as `filings` reads the book's 300 (every word kept, no polarity words):

    >>> from mlm_book.finance.corpus import CorpusConfig, generate_corpus
    >>> from mlm_book.finance.vocab import build_vocabulary
    >>> from mlm_book.finance.windows import fixed_windows, nearest_centre
    >>> setup = FilingsSetup(corpus=CorpusConfig(n_documents=2), min_count=1)
    >>> corpus = generate_corpus(setup.corpus, np.random.default_rng(setup.corpus_seed))
    >>> vocabulary = build_vocabulary(corpus.tokens.tolist(), setup.min_count)
    >>> starts = fixed_windows(corpus.document, length=32, stride=16)
    >>> _, positions = nearest_centre(corpus.document, starts, length=32)
    >>> small = Filings(setup, corpus, vocabulary, vocabulary.encode(corpus.tokens.tolist()), positions, ())
    >>> small.ids.size == small.corpus.tokens.size, int(small.nearest_positions.max()) < 32   # a slot of a window
    (True, True)

    Raises
    ------
    TypeError, ValueError
        If a field is of the wrong type, ``ids`` is not one id of ``vocabulary`` per token of ``corpus``,
        ``nearest_positions`` not one position of a ``setup.window_length`` window per token, or
        ``polarity_words`` not a tuple of str.
    """

    setup: FilingsSetup
    corpus: Corpus
    vocabulary: Vocabulary
    ids: np.ndarray
    nearest_positions: np.ndarray
    polarity_words: tuple

    def __post_init__(self):
        check_instance(self.setup, "setup", FilingsSetup)
        check_instance(self.corpus, "corpus", Corpus)
        check_instance(self.vocabulary, "vocabulary", Vocabulary)
        n_tokens = self.corpus.tokens.size
        ids = check_tokens(self.ids, "ids", self.vocabulary.size, ndim=1)
        if ids.size != n_tokens:
            raise ValueError(f"ids must hold one id per token of corpus ({n_tokens}), got {ids.size}")
        positions = as_int_array(self.nearest_positions, "nearest_positions", ndim=1)
        length = self.setup.window_length
        if positions.size != n_tokens or positions.min() < 0 or positions.max() >= length:
            raise ValueError(f"nearest_positions must hold one window position in [0, {length}) per token of "
                             f"corpus ({n_tokens})")
        check_instance(self.polarity_words, "polarity_words", tuple)
        if not all(isinstance(word, str) for word in self.polarity_words):
            raise TypeError("polarity_words must hold str items")
        # the int64 arrays `filings` builds are kept as they are (read-only, shared by every reader)
        object.__setattr__(self, "ids", ids)
        object.__setattr__(self, "nearest_positions", positions)


@functools.cache
def _filings(setup: FilingsSetup) -> Filings:
    corpus = generate_corpus(setup.corpus, np.random.default_rng(setup.corpus_seed))
    vocabulary = build_vocabulary(corpus.tokens.tolist(), setup.min_count)
    ids = vocabulary.encode(corpus.tokens.tolist())
    starts = fixed_windows(corpus.document, length=setup.window_length, stride=setup.nearest_stride)
    _, positions = nearest_centre(corpus.document, starts, length=setup.window_length)
    for array in (ids, positions):
        array.flags.writeable = False   # shared by every reader in the process
    return Filings(setup, corpus, vocabulary, ids, positions,
                   tuple(polarity_words(corpus, setup.polarity_min_count)))


def filings(setup: FilingsSetup | None = None) -> Filings:
    """The filings of ``setup`` (default the book's), memoised per process.

    Examples
    --------
    >>> f = filings()
    >>> f.corpus.n_documents, f.ids.size == f.corpus.tokens.size
    (300, True)
    """
    return _filings(FilingsSetup() if setup is None else check_instance(setup, "setup", FilingsSetup))


def source_key(setup: FilingsSetup | None = None) -> dict:
    """What identifies the filings in a store key: the generator's settings and a fingerprint of its output.

    Raises
    ------
    TypeError
        If ``setup`` is neither None nor a `FilingsSetup`.

    Examples
    --------
    >>> key = source_key()
    >>> sorted(key), key["corpus_seed"]
    (['corpus', 'corpus_seed', 'fingerprint', 'min_count'], 9)
    """
    f = filings(setup)
    return {"corpus": f.setup.corpus.as_dict(), "corpus_seed": f.setup.corpus_seed, "min_count": f.setup.min_count,
            "fingerprint": corpus_fingerprint(f.corpus)}
