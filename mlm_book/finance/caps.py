r"""Static caps from the gold labels: what one answer per word type can score at best.

A classifier that reads one vector per word type gives every occurrence of a type the same
answer (Corollary 1), so on a set of labelled occurrences grouped by type its accuracy is at
most

$$\text{cap} = \frac{1}{n} \sum_{\text{types } t} \max_y \, n_{t,y},$$

the pooled per-type majority, with $n_{t,y}$ the number of occurrences of type $t$ with
label $y$. The book uses it for company/product typing of the 21 aliases (grouped by
alias), for *kestrel* alone, and for the news polarity of the direction words and
evaluative verbs (grouped by word).

Examples
--------
>>> majority_cap([1, 1, 2, 2, 2, 1], groups=[0, 0, 0, 1, 1, 1]).accuracy
0.6666666666666666
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import numpy as np

from mlm_book.finance.corpus import Corpus
from mlm_book.finance.world import COMPANIES
from mlm_book.validation import as_int_array, check_instance, check_positive_int, check_probability

__all__ = ["MajorityCap", "majority_cap", "alias_cap", "word_cap", "polarity_words", "polarity_cap"]


@dataclass(frozen=True)
class MajorityCap:
    """A pooled per-group majority.

    Attributes
    ----------
    accuracy : float
        Correct over all occurrences when each group answers its majority label.
    correct : int
        Numerator.
    n : int
        Number of occurrences.
    groups : tuple
        Group values in sorted order.
    counts : numpy.ndarray of int, shape (n_groups, n_labels)
        Occurrences per group and label (labels in sorted order, ``labels``).
    labels : tuple
        Label values in sorted order.

    Raises
    ------
    TypeError
        If a field has the wrong type (``counts`` must hold integers, ``groups`` and
        ``labels`` integer values).
    ValueError
        If ``counts`` has a negative entry or a shape other than ``(len(groups), len(labels))``,
        ``groups`` or ``labels`` is not strictly increasing, or ``n``, ``correct`` and
        ``accuracy`` disagree with ``counts``.

    Examples
    --------
    >>> from mlm_book.finance.corpus import CorpusConfig, generate_corpus
    >>> x = alias_cap(generate_corpus(CorpusConfig(n_documents=4), np.random.default_rng(0)))
    >>> from dataclasses import fields
    >>> rebuilt = MajorityCap(**{f.name: getattr(x, f.name) for f in fields(x)})   # its fields are checked
    >>> rebuilt.n == x.n
    True
    """

    accuracy: float
    correct: int
    n: int
    groups: tuple
    counts: np.ndarray
    labels: tuple

    def __post_init__(self):
        for name in ("groups", "labels"):
            values = getattr(self, name)
            if not isinstance(values, (tuple, list)):
                raise TypeError(f"{name} must be a tuple of integers, got {type(values).__name__}")
            bad = [value for value in values if isinstance(value, bool) or not isinstance(value, (int, np.integer))]
            if bad:
                raise TypeError(f"{name} must hold integers, got {type(bad[0]).__name__}")
            if not values or any(a >= b for a, b in itertools.pairwise(values)):
                raise ValueError(f"{name} must be non-empty and strictly increasing (sorted distinct values)")
            object.__setattr__(self, name, tuple(int(value) for value in values))
        counts = as_int_array(self.counts, "counts", ndim=2)
        if counts.shape != (len(self.groups), len(self.labels)):
            raise ValueError(f"counts must have shape (len(groups), len(labels)) = "
                             f"{(len(self.groups), len(self.labels))}, got {counts.shape}")
        if counts.min() < 0:
            raise ValueError("counts must be non-negative")
        n = check_positive_int(self.n, "n")
        if n != int(counts.sum()):
            raise ValueError(f"n must equal the total of counts ({int(counts.sum())}), got {n}")
        correct = check_positive_int(self.correct, "correct", minimum=0)
        if correct != int(counts.max(axis=1).sum()):
            raise ValueError(f"correct must be the sum of the per-group majorities of counts "
                             f"({int(counts.max(axis=1).sum())}), got {correct}")
        accuracy = check_probability(self.accuracy, "accuracy")
        if abs(accuracy - correct / n) > 1e-12:
            raise ValueError(f"accuracy must equal correct / n = {correct / n}, got {accuracy}")
        object.__setattr__(self, "counts", counts)


def majority_cap(labels, groups) -> MajorityCap:
    """Pooled per-group majority accuracy of integer ``labels`` (shape ``(n,)``) grouped by ``groups``.

    Examples
    --------
    >>> cap = majority_cap([1, 2, 2], groups=[5, 5, 5])
    >>> cap.correct, cap.n, cap.counts.tolist()
    (2, 3, [[1, 2]])
    """
    labels = as_int_array(labels, "labels", ndim=1)
    groups = as_int_array(groups, "groups", ndim=1)
    if labels.size == 0:
        raise ValueError("labels must not be empty")
    if labels.shape != groups.shape:
        raise ValueError(f"labels and groups must have the same shape, got {labels.shape} and {groups.shape}")
    group_values, group_index = np.unique(groups, return_inverse=True)
    label_values, label_index = np.unique(labels, return_inverse=True)
    counts = np.zeros((group_values.size, label_values.size), dtype=np.int64)
    np.add.at(counts, (group_index, label_index), 1)
    correct = int(counts.max(axis=1).sum())
    return MajorityCap(correct / labels.size, correct, int(labels.size), tuple(group_values.tolist()),
                       counts, tuple(label_values.tolist()))


def alias_cap(corpus: Corpus) -> MajorityCap:
    """Per-alias majority over every gold-typed alias occurrence (ORG = 1, PRODUCT = 2).

    Examples
    --------
    >>> import numpy as np
    >>> from mlm_book.finance.corpus import CorpusConfig, generate_corpus
    >>> corpus = generate_corpus(CorpusConfig(n_documents=20), np.random.default_rng(0))
    >>> cap = alias_cap(corpus)
    >>> cap.n == int((corpus.entity > 0).sum()), 0.5 <= cap.accuracy <= 1.0
    (True, True)
    """
    check_instance(corpus, "corpus", Corpus)
    typed = corpus.entity > 0
    return majority_cap(corpus.entity[typed], corpus.alias[typed])


def word_cap(corpus: Corpus, alias: str = "kestrel") -> MajorityCap:
    """Majority over the typed occurrences of one alias (a single group).

    Examples
    --------
    >>> import numpy as np
    >>> from mlm_book.finance.corpus import CorpusConfig, generate_corpus
    >>> corpus = generate_corpus(CorpusConfig(n_documents=20), np.random.default_rng(0))
    >>> cap = word_cap(corpus, "kestrel")
    >>> cap.groups, cap.n == int(((corpus.entity > 0) & (corpus.alias == 0)).sum())
    ((0,), True)
    >>> word_cap(corpus, "nightingale")
    Traceback (most recent call last):
    ...
    ValueError: alias must be one of the 21 company aliases, got 'nightingale'
    """
    check_instance(corpus, "corpus", Corpus)
    names = [company.alias for company in COMPANIES]
    if not isinstance(alias, str):
        raise TypeError(f"alias must be a company alias (str), got {type(alias).__name__}")
    if alias not in names:
        raise ValueError(f"alias must be one of the {len(names)} company aliases, got {alias!r}")
    mask = (corpus.entity > 0) & (corpus.alias == names.index(alias))
    if not mask.any():
        raise ValueError(f"alias {alias!r} does not occur in the corpus")
    return majority_cap(corpus.entity[mask], corpus.alias[mask])


def polarity_words(corpus: Corpus, min_count: int = 20) -> tuple[str, ...]:
    """Words with at least ``min_count`` news-labelled occurrences, most frequent first.

    Examples
    --------
    >>> import numpy as np
    >>> from mlm_book.finance.corpus import CorpusConfig, generate_corpus
    >>> corpus = generate_corpus(CorpusConfig(n_documents=60), np.random.default_rng(0))
    >>> set(polarity_words(corpus, 1)) <= set(corpus.tokens[corpus.news != 0].tolist())
    True
    """
    check_instance(corpus, "corpus", Corpus)
    check_positive_int(min_count, "min_count")
    words, counts = np.unique(corpus.tokens[corpus.news != 0], return_counts=True)
    order = np.lexsort((words, -counts))
    return tuple(str(words[i]) for i in order if counts[i] >= min_count)


def polarity_cap(corpus: Corpus, min_count: int = 20) -> MajorityCap:
    """Per-word majority of the news polarity, pooled over [`polarity_words`][mlm_book.finance.caps.polarity_words].

    Examples
    --------
    >>> import numpy as np
    >>> from mlm_book.finance.corpus import CorpusConfig, generate_corpus
    >>> corpus = generate_corpus(CorpusConfig(n_documents=60), np.random.default_rng(0))
    >>> 0.5 <= polarity_cap(corpus, 5).accuracy <= 1.0
    True
    """
    words = polarity_words(corpus, min_count)
    if not words:
        raise ValueError(f"min_count = {min_count} is more than any word's number of labelled occurrences")
    labelled = (corpus.news != 0) & np.isin(corpus.tokens, words)
    word_index = np.searchsorted(np.array(sorted(words)), corpus.tokens[labelled])
    return majority_cap(corpus.news[labelled], word_index)

