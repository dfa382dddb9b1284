r"""Lexicon-neighbour voting: how much of a word's lexicon polarity its surroundings write down.

For each lexicon occurrence $i$ in a filing, the *voters* are the other lexicon occurrences
of a **different** lexicon word in the same filing whose distance to $i$ is at most
``window`` words (``None``: the whole filing). Distance counts words only: ``[SEP]`` tokens
are removed before positions are taken, so a sentence boundary costs nothing. The vote is the
sign of the voters' summed polarities; it is correct if it equals $i$'s own polarity.

A tie (equal numbers for and against, including no voter at all) is scored one half in
`Vote.accuracy`, and set aside in `Vote.accuracy_decided`. Everything is
deterministic given the corpus.

Examples
--------
>>> import numpy as np
>>> from mlm_book.finance.corpus import CorpusConfig, generate_corpus
>>> corpus = generate_corpus(CorpusConfig(n_documents=30), np.random.default_rng(0))
>>> votes = [lexicon_vote(corpus, w) for w in (8, 32, None)]
>>> [v.n for v in votes] == [int((corpus.lexicon != 0).sum())] * 3
True
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from mlm_book.finance.corpus import SEP, Corpus
from mlm_book.validation import check_instance, check_positive_int, check_probability

__all__ = ["Vote", "word_positions", "lexicon_vote"]


@dataclass(frozen=True)
class Vote:
    """Result of lexicon-neighbour voting at one window size.

    Attributes
    ----------
    window : int or None
        Maximum distance in words (``None`` = whole filing).
    accuracy : float
        Ties scored one half.
    accuracy_decided : float
        Ties set aside (NaN-free: raises if every vote ties).
    n : int
        Lexicon occurrences scored.
    n_ties : int
        Occurrences whose vote tied.

    Raises
    ------
    TypeError
        If ``window``, ``n`` or ``n_ties`` is not an integer (``window`` may be ``None``), or an
        accuracy not a real number.
    ValueError
        If ``window`` or ``n`` is below 1, ``n_ties`` is not in ``[0, n)``, or an accuracy is
        outside ``[0, 1]``.

    Examples
    --------
    >>> vote = Vote(window=5, accuracy=0.75, accuracy_decided=0.8, n=40, n_ties=5)
    >>> vote.n - vote.n_ties       # occurrences whose vote was decided
    35
    """

    window: int | None
    accuracy: float
    accuracy_decided: float
    n: int
    n_ties: int

    def __post_init__(self):
        if self.window is not None:
            check_positive_int(self.window, "window")
        check_probability(self.accuracy, "accuracy")
        check_probability(self.accuracy_decided, "accuracy_decided")
        n = check_positive_int(self.n, "n")
        # lexicon_vote raises when every vote ties, so at least one vote is decided
        if check_positive_int(self.n_ties, "n_ties", minimum=0) >= n:
            raise ValueError(f"n_ties must be below n = {n} (at least one decided vote), got {self.n_ties}")


def word_positions(corpus: Corpus) -> np.ndarray:
    """Index of each token among the *words* of its filing (``[SEP]`` not counted), shape ``(n,)``.

    A ``[SEP]`` gets the index of the word after it.

    Examples
    --------
    >>> import numpy as np
    >>> from mlm_book.finance.corpus import CorpusConfig, generate_corpus
    >>> corpus = generate_corpus(CorpusConfig(n_documents=2), np.random.default_rng(0))
    >>> p = word_positions(corpus)
    >>> bool(p[0] == 0), int(p[corpus.tokens != "[SEP]"].max()) < corpus.n_tokens
    (True, True)
    """
    check_instance(corpus, "corpus", Corpus)
    is_word = (corpus.tokens != SEP).astype(np.int64)
    before = np.cumsum(is_word) - is_word                    # words strictly before, stream-wide
    first = corpus.document_bounds()[:-1][corpus.document]
    return before - before[first]


def lexicon_vote(corpus: Corpus, window: int | None) -> Vote:
    """Vote of the other lexicon words within ``window`` words on each lexicon occurrence.

    Parameters
    ----------
    corpus : Corpus
    window : int or None
        Maximum distance in words, at least 1; ``None`` for the whole filing.

    Returns
    -------
    Vote

    Raises
    ------
    ValueError
        If the corpus has no lexicon occurrence, or every vote ties.

    Examples
    --------
    >>> import numpy as np
    >>> from mlm_book.finance.corpus import CorpusConfig, generate_corpus
    >>> corpus = generate_corpus(CorpusConfig(n_documents=30), np.random.default_rng(0))
    >>> lexicon_vote(corpus, 0)
    Traceback (most recent call last):
    ...
    ValueError: window must be an integer >= 1, got 0
    """
    check_instance(corpus, "corpus", Corpus)
    if window is not None:
        check_positive_int(window, "window")
    index = np.flatnonzero(corpus.lexicon != 0)
    if index.size == 0:
        raise ValueError("the corpus has no lexicon occurrence")
    position = word_positions(corpus)[index]
    document = corpus.document[index]
    polarity = corpus.lexicon[index]
    word = corpus.tokens[index]
    voter = (document[:, None] == document[None, :]) & (word[:, None] != word[None, :])
    if window is not None:
        voter &= np.abs(position[:, None] - position[None, :]) <= window
    total = (voter * polarity[None, :]).sum(axis=1)
    tie = total == 0
    correct = np.sign(total) == polarity
    if tie.all():
        raise ValueError("every vote ties; the decided accuracy is undefined")
    accuracy = float(np.where(tie, 0.5, correct).mean())
    decided = float(correct[~tie].mean())
    return Vote(window, accuracy, decided, int(index.size), int(tie.sum()))
