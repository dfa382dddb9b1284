r"""Document-pooled semantic orientation of lexicon words (Turney-style PMI with seed words).

Let $n_d(w)$ count word $w$ in filing $d$, and $n_d(P) = \sum_{s \in P} n_d(s)$ the count of
the positive seed words in it (likewise $N$ for the negative seeds). Pooling over filings,
the co-occurrence of $w$ with a seed set is $C(w, P) = \sum_d n_d(w)\, n_d(P)$, and

$$\operatorname{PMI}(w, P) = \log \frac{C(w, P) \, Z}{n(w)\, n(P)},$$

with $n(\cdot)$ corpus totals and $Z$ the total pair mass. The semantic orientation is

$$\operatorname{SO}(w) = \operatorname{PMI}(w, P) - \operatorname{PMI}(w, N)
 = \log \frac{C(w, P) + \alpha}{C(w, N) + \alpha} - \log \frac{n(P)}{n(N)},$$

where $n(w)$ and $Z$ cancel and $\alpha$ (0.5) smooths zero counts. A word is predicted
positive if $\operatorname{SO}(w) > 0$, negative if $< 0$; an exact zero scores one half.
Seed words are never scored (a lexicon word used as a seed would be dropped from the words
scored). The book's seeds are `POSITIVE_SEEDS` ("good",
"excellent", "successful") and `NEGATIVE_SEEDS` ("bad",
"poor", "unsuccessful"); none is a lexicon word, so all 35 are scored.

Examples
--------
>>> import numpy as np
>>> from mlm_book.finance.corpus import CorpusConfig, generate_corpus
>>> corpus = generate_corpus(CorpusConfig(n_documents=40), np.random.default_rng(0))
>>> result = semantic_orientation(corpus)
>>> len(result.words), 0.0 <= result.accuracy <= 1.0
(35, True)
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from mlm_book.finance.corpus import Corpus
from mlm_book.finance.world import LEXICON, NEGATIVE_SEEDS, POSITIVE_SEEDS
from mlm_book.validation import as_float_array, as_int_array, check_instance, check_probability, check_sequence

__all__ = ["Orientation", "document_counts", "semantic_orientation"]


@dataclass(frozen=True)
class Orientation:
    """Semantic orientation of the scored words.

    Attributes
    ----------
    words : tuple of str
    score : numpy.ndarray, shape (n_words,)
        $\\operatorname{SO}(w)$ in nats.
    truth : numpy.ndarray of int, shape (n_words,)
        Lexicon polarity (+1 / -1).
    accuracy : float
        Share of words whose SO sign matches the lexicon (zero scores count one half).
    positive_seeds, negative_seeds : tuple of str

    Raises
    ------
    TypeError
        If ``words`` or a seed set is not a sequence of str, ``score`` not real numbers,
        ``truth`` not integers, or ``accuracy`` not a real number.
    ValueError
        If ``words`` or a seed set is empty, ``score`` or ``truth`` does not have one entry
        per word, ``score`` is not finite, ``truth`` is not +1 / -1, or ``accuracy`` is
        outside ``[0, 1]``.

    Examples
    --------
    >>> from mlm_book.finance.corpus import CorpusConfig, generate_corpus
    >>> x = semantic_orientation(generate_corpus(CorpusConfig(n_documents=10), np.random.default_rng(0)))
    >>> from dataclasses import fields
    >>> rebuilt = Orientation(**{f.name: getattr(x, f.name) for f in fields(x)})   # its fields are checked
    >>> len(rebuilt.words) == len(x.words)
    True
    """

    words: tuple[str, ...]
    score: np.ndarray
    truth: np.ndarray
    accuracy: float
    positive_seeds: tuple[str, ...]
    negative_seeds: tuple[str, ...]

    def __post_init__(self):
        for name in ("words", "positive_seeds", "negative_seeds"):
            items = tuple(check_sequence(getattr(self, name), name, of=str))
            if not items:
                raise ValueError(f"{name} must not be empty")
            object.__setattr__(self, name, items)
        n_words = len(self.words)
        score = as_float_array(self.score, "score", ndim=1)
        truth = as_int_array(self.truth, "truth", ndim=1)
        for name, array in (("score", score), ("truth", truth)):
            if array.shape != (n_words,):
                raise ValueError(f"{name} must have one entry per word of words ({n_words}), got shape {array.shape}")
        if np.any(np.abs(truth) != 1):
            raise ValueError("truth must hold lexicon polarities +1 or -1")
        check_probability(self.accuracy, "accuracy")
        object.__setattr__(self, "score", score)
        object.__setattr__(self, "truth", truth)


def document_counts(corpus: Corpus, words: Sequence[str]) -> np.ndarray:
    """Counts of ``words`` per filing, shape ``(n_documents, len(words))``.

    Examples
    --------
    >>> import numpy as np
    >>> from mlm_book.finance.corpus import CorpusConfig, generate_corpus
    >>> corpus = generate_corpus(CorpusConfig(n_documents=3), np.random.default_rng(0))
    >>> int(document_counts(corpus, ["[SEP]"]).sum()) == int((corpus.tokens == "[SEP]").sum())
    True
    """
    check_instance(corpus, "corpus", Corpus)
    words = check_sequence(words, "words", of=str)
    if not words or len(set(words)) != len(words):
        raise ValueError("words must be a non-empty sequence of distinct strings")
    lookup = {word: i for i, word in enumerate(words)}
    column = np.fromiter((lookup.get(token, -1) for token in corpus.tokens.tolist()), dtype=np.int64)
    keep = column >= 0
    flat = corpus.document[keep] * len(words) + column[keep]
    counts = np.bincount(flat, minlength=corpus.n_documents * len(words))
    return counts.reshape(corpus.n_documents, len(words))


def semantic_orientation(corpus: Corpus, lexicon: Mapping[str, int] = LEXICON, *,
                         positive: Sequence[str] = POSITIVE_SEEDS, negative: Sequence[str] = NEGATIVE_SEEDS,
                         smoothing: float = 0.5) -> Orientation:
    """Document-pooled SO of the ``lexicon`` words against seed sets, and its accuracy.

    Parameters
    ----------
    corpus : Corpus
    lexicon : mapping of str to int
        Words to score and their true polarity (+1 / -1).
    positive, negative : sequence of str
        Seed words; any that are lexicon words are left out of the scoring.
    smoothing : float
        $\\alpha$ added to both co-occurrence totals.

    Returns
    -------
    Orientation

    Raises
    ------
    ValueError
        If a seed set never occurs in the corpus, or the seed sets overlap.

    Examples
    --------
    >>> import numpy as np
    >>> from mlm_book.finance.corpus import CorpusConfig, generate_corpus
    >>> corpus = generate_corpus(CorpusConfig(n_documents=40), np.random.default_rng(0))
    >>> semantic_orientation(corpus, positive=["strong"], negative=["weak"]).words[:2]
    ('robust', 'solid')
    """
    check_instance(corpus, "corpus", Corpus)
    if not isinstance(lexicon, Mapping):
        raise TypeError(f"lexicon must be a mapping of word to polarity (+1 or -1), got {type(lexicon).__name__}")
    check_sequence(lexicon, "lexicon", of=str)
    check_probability(smoothing, "smoothing", high=1e6)
    positive = tuple(check_sequence(positive, "positive", of=str))
    negative = tuple(check_sequence(negative, "negative", of=str))
    if not positive or not negative or set(positive) & set(negative):
        raise ValueError("positive and negative must be non-empty, disjoint seed sets")
    words = tuple(word for word in lexicon if word not in positive + negative)
    if not words:
        raise ValueError("no lexicon word is left to score after removing the seeds")
    truth = np.array([int(np.sign(lexicon[word])) for word in words])
    if np.any(truth == 0):
        raise ValueError("lexicon polarities must be +1 or -1")
    counts = document_counts(corpus, words + positive + negative)
    n_words = len(words)
    word_counts = counts[:, :n_words].astype(np.float64)
    seed_positive = counts[:, n_words:n_words + len(positive)].sum(axis=1).astype(np.float64)
    seed_negative = counts[:, n_words + len(positive):].sum(axis=1).astype(np.float64)
    if seed_positive.sum() == 0 or seed_negative.sum() == 0:
        raise ValueError("each seed set must occur in the corpus")
    with_positive = word_counts.T @ seed_positive
    with_negative = word_counts.T @ seed_negative
    score = (np.log((with_positive + smoothing) / (with_negative + smoothing))
             - np.log(seed_positive.sum() / seed_negative.sum()))
    correct = np.where(score == 0, 0.5, (np.sign(score) == truth).astype(np.float64))
    return Orientation(words, score, truth, float(correct.mean()), positive, negative)
