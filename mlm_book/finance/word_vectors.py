r"""What a table of static word vectors says about the filings: the probes and the neighbours chapter 6 reads.

Three readers of one vector per word type ($V \times d$), for the filings' gold annotations
([`mlm_book.finance.corpus`][mlm_book.finance.corpus]) and the lexicon of
[`mlm_book.finance.world`][mlm_book.finance.world]:

* [`typing_probe`][mlm_book.finance.word_vectors.typing_probe]: company or product, for every
  typed alias occurrence, from the alias's vector, leaving one alias out;
* [`lexicon_probe`][mlm_book.finance.word_vectors.lexicon_probe]: the polarity of each of the 35
  lexicon words from its vector, leaving one word out;
* [`neighbour_agreement`][mlm_book.finance.word_vectors.neighbour_agreement]: the share of a
  lexicon word's nearest lexicon words (cosine) that share its polarity, and its chance level.

Chapter 6 reads them on the skip-gram baseline's vectors, at the book's seed and at four others
(the artefact [`mlm_book.artefacts.skipgram`][mlm_book.artefacts.skipgram]).
"""

from __future__ import annotations

import numpy as np

from mlm_book import probe
from mlm_book.finance.corpus import Corpus
from mlm_book.finance.vocab import Vocabulary
from mlm_book.finance.world import ENTITY_PRODUCT, LEXICON
from mlm_book.validation import as_float_array, as_int_array, check_instance, check_positive_int

__all__ = ["typing_probe", "lexicon_probe", "neighbour_agreement"]


def _vectors(vectors, size: int | None = None) -> np.ndarray:
    table = as_float_array(vectors, "vectors", ndim=2)
    if size is not None and table.shape[0] < size:
        raise ValueError(f"vectors must hold a row per vocabulary id ({size}), got {table.shape[0]}")
    return table


def typing_probe(corpus: Corpus, ids, vectors) -> probe.CrossValidation:
    """Company/product typing of every typed alias occurrence from the alias's vector, leaving one alias out.

    Parameters
    ----------
    corpus : Corpus
        The filings with their gold types.
    ids : array_like of int, shape (n_tokens,)
        Vocabulary id of every token of ``corpus``.
    vectors : array_like, shape (V, d)
        One vector per vocabulary id.

    Raises
    ------
    TypeError, ValueError
        If ``corpus`` is not a ``Corpus``, ``ids`` not one id (a row of ``vectors``) per token, or
        ``vectors`` not a finite table.

    Examples
    --------
    >>> from mlm_book.finance.corpus import CorpusConfig, generate_corpus
    >>> from mlm_book.finance.vocab import build_vocabulary
    >>> corpus = generate_corpus(CorpusConfig(n_documents=3), np.random.default_rng(0))
    >>> vocab = build_vocabulary(corpus.tokens.tolist(), min_count=1)
    >>> vectors = np.random.default_rng(1).normal(size=(vocab.size, 4))    # vectors that know nothing
    >>> result = typing_probe(corpus, vocab.encode(corpus.tokens.tolist()), vectors)
    >>> result.n_test == int((corpus.entity > 0).sum())
    True
    """
    check_instance(corpus, "corpus", Corpus)
    ids = as_int_array(ids, "ids", ndim=1)
    if ids.size != corpus.n_tokens:
        raise ValueError(f"ids must hold one id per token of corpus ({corpus.n_tokens}), got {ids.size}")
    table = _vectors(vectors)
    # an id past the table's rows may be a wrong id or a short table: the message names both
    if ids.size and (ids.min() < 0 or ids.max() >= table.shape[0]):
        raise ValueError(f"ids must be rows of vectors, in [0, {table.shape[0]}), got values from {ids.min()} to "
                         f"{ids.max()}")
    typed = np.flatnonzero(corpus.entity > 0)
    features = table[ids[typed]]
    labels = (corpus.entity[typed] == ENTITY_PRODUCT).astype(np.int64)
    return probe.cross_validate(features, labels, probe.leave_one_group_out(corpus.alias[typed]))


def lexicon_probe(vocabulary: Vocabulary, vectors) -> probe.CrossValidation:
    """The polarity of each lexicon word from its vector, leaving one word out.

    Raises
    ------
    TypeError, ValueError
        If ``vocabulary`` is not a ``Vocabulary`` or ``vectors`` not a finite table with a row per id.

    Examples
    --------
    >>> from mlm_book.finance.vocab import build_vocabulary
    >>> from mlm_book.finance.world import LEXICON
    >>> vocab = build_vocabulary(list(LEXICON), min_count=1)
    >>> vectors = np.zeros((vocab.size, 1))
    >>> for word, sign in LEXICON.items():          # the one coordinate is the polarity
    ...     vectors[vocab.lookup(word), 0] = np.sign(sign)
    >>> result = lexicon_probe(vocab, vectors)
    >>> result.n_test, result.accuracy
    (35, 1.0)
    """
    check_instance(vocabulary, "vocabulary", Vocabulary)
    table = _vectors(vectors, vocabulary.size)
    words = list(LEXICON)
    features = table[[vocabulary.lookup(word) for word in words]]
    labels = np.array([int(LEXICON[word] > 0) for word in words])
    return probe.cross_validate(features, labels, probe.leave_one_group_out(np.arange(len(words))))


def neighbour_agreement(vectors, vocabulary: Vocabulary, k: int) -> tuple[float, float]:
    """Mean share of a lexicon word's ``k`` nearest lexicon words (cosine) with its polarity, and its chance level.

    The chance level, for a word of polarity $p$, is the share of the *other* lexicon words with
    polarity $p$, averaged over the words.

    Raises
    ------
    TypeError, ValueError
        If ``vocabulary`` is not a ``Vocabulary``, ``vectors`` not a finite table with a row per
        id, or ``k`` not in ``[1, 34]`` (the other lexicon words).

    Examples
    --------
    >>> from mlm_book.finance.vocab import build_vocabulary
    >>> from mlm_book.finance.world import LEXICON
    >>> vocab = build_vocabulary(list(LEXICON), min_count=1)
    >>> vectors = np.random.default_rng(0).normal(size=(vocab.size, 3))
    >>> for word, sign in LEXICON.items():          # polarity words point one way or the other
    ...     vectors[vocab.lookup(word)] = [np.sign(sign), 0.1 * len(word), 0.0]
    >>> share, chance = neighbour_agreement(vectors, vocab, 3)
    >>> share, round(chance, 3)
    (1.0, 0.486)
    """
    check_instance(vocabulary, "vocabulary", Vocabulary)
    words = list(LEXICON)
    k = check_positive_int(k, "k")
    if k > len(words) - 1:
        raise ValueError(f"k must be at most {len(words) - 1} (the other lexicon words), got {k}")
    polarity = np.array([LEXICON[w] for w in words])
    vectors = _vectors(vectors, vocabulary.size)[[vocabulary.lookup(w) for w in words]]
    unit = vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
    cosine = unit @ unit.T
    np.fill_diagonal(cosine, -np.inf)
    nearest = np.argsort(-cosine, axis=1, kind="stable")[:, :k]
    share = float(np.mean(polarity[nearest] == polarity[:, None]))
    same = np.array([(polarity == p).sum() - 1 for p in polarity]) / (len(words) - 1)
    return share, float(same.mean())
