r"""Chapter 11, open question Q12: dense retrieval with the filing encoder's pooled vectors, against BM25.

**What it computes.** Queries built from the corpus's gold are run over the 60 held-out filings
(chapter 7's split, [`mlm_book.artefacts.filing_encoder.split`][mlm_book.artefacts.filing_encoder.split]),
once by BM25 on the filings' words and once by the cosine of pooled vectors of the filing encoder,
at each of its five training seeds; each ranking is scored by recall@k and mean reciprocal rank.

* *Queries* ([`retrieval_gold`][mlm_book.experiments.ch11_retrieval.retrieval_gold]). For every pair
  (company $c$, aspect $a$) such that at least one held-out filing of $c$ reports news on $a$ (has a token
  whose gold ``aspect`` is $a$; every aspect term of the corpus sits in a news sentence), the query is the
  text "<alias of c> <words of a>", e.g. "kestrel gross margin". Its *relevant* filings are the held-out
  filings of $c$ that report news on $a$; every other held-out filing is not relevant, other filings of $c$
  included.
* *Filings as BM25 reads them.* A filing's tokens are its vocabulary ids, ``[SEP]`` left out; the collection
  statistics (document frequencies, mean length) are those of the 60 held-out filings.
* *BM25* ([`bm25_scores`][mlm_book.experiments.ch11_retrieval.bm25_scores]), Robertson and Zaragoza (2009),
  with $k_1$ = 1.2 and $b$ = 0.75:
  $s(q, d) = \sum_{t \in q} \operatorname{idf}(t)\, \frac{f_{t,d}\,(k_1 + 1)}{f_{t,d} + k_1 (1 - b + b\,|d| / \overline{|d|})}$
  with $\operatorname{idf}(t) = \log \frac{N - n_t + 0.5}{n_t + 0.5}$, $N$ filings, $n_t$ of them containing
  $t$, a query term counted as often as it occurs in the query.
* *Dense reading* (`_dense_vectors`). Every token of a
  held-out filing is read at the centre of its own window, as chapter 6 reads tokens
  ([`centre_states`][mlm_book.artefacts.filing_encoder.centre_states]); a query is read the same way as a
  short document of its own (its windows hold the query's words and ``[PAD]``). The vectors at layer 0
  ($E[x] + P_{16}$, the static table), 1 and 2 are kept for every word token (``[SEP]`` left out), and
  the mean of the held-out filings' word-token vectors at that layer and seed is subtracted from every
  vector, filing's and query's, before pooling (the vectors share a large common direction; chapter 4).
* *Poolings* ([`POOLINGS`][mlm_book.experiments.ch11_retrieval.POOLINGS]): ``"mean"`` and ``"max"``
  (element-wise) over the tokens, and ``"first"``, the vector of the first token. The filing encoder has no
  ``[CLS]``: it was trained on windows cut anywhere in a filing, with no token that stands for the window.
  The first token is the nearest thing to BERT's ``[CLS]`` position, a fixed slot whose window covers the
  filing's opening line, which names its filer; it is the "[CLS]-style" pooling here, and it cannot see a
  filing's news (no filing opens with news).
* *Score and ranking.* A filing's score is the cosine of its pooled vector with the query's. Filings are
  ranked by score; a tie is broken against the relevant filings, so that no tie helps a method.
* *Measures* ([`retrieval_metrics`][mlm_book.experiments.ch11_retrieval.retrieval_metrics]), means over the
  queries: recall@k, the share of a query's relevant filings among its top $k$, for $k$ in
  [`KS`][mlm_book.experiments.ch11_retrieval.KS]; the mean reciprocal rank (MRR) of the first relevant
  filing. A uniformly random order gives [`chance_metrics`][mlm_book.experiments.ch11_retrieval.chance_metrics].

**Rules, fixed before any retrieval number was computed** (each judged at each of the five seeds; BM25 is
computed once): see ``CLAIMS`` and ``PRESTATED``.

Examples
--------
BM25 of a two-word query over five tiny documents:

>>> docs = [["kestrel", "gross", "margin", "rose"], ["osprey", "sales", "rose"], ["kestrel", "debt"],
...         ["heron", "orders", "fell"], ["osprey", "margin"]]
>>> bm25_scores(docs, ["kestrel", "margin"]).round(3).tolist()
[0.573, 0.0, 0.381, 0.0, 0.381]
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import numpy as np

from mlm_book import cache
from mlm_book.artefacts import filing_encoder
from mlm_book.finance.vocab import SEP_ID
from mlm_book.finance.windows import centre_position, centred_windows
from mlm_book.finance.world import ASPECTS, COMPANIES
from mlm_book.ledger import Claim, over_seeds, verify
from mlm_book.nn import encoder as enc
from mlm_book.nn import runtime
from mlm_book.report import Markdown, seed_band, table
from mlm_book.validation import (as_float_array, as_int_array, check_choice, check_finite_numbers, check_instance,
                                 check_positive_int, check_seeds, check_sequence)

__all__ = ["K1", "B", "KS", "POOLINGS", "LAYERS", "RULE_LAYER", "bm25_scores", "retrieval_metrics", "chance_metrics",
           "RetrievalGold", "retrieval_gold", "query_ids", "bm25_matrix", "RetrievalStudy", "results", "retrieve",
           "summary_table", "rules_table", "STATED_BEFORE_RUN", "figure_retrieval", "PRESTATED", "CLAIMS"]

K1 = 1.2
"""BM25's term-frequency saturation $k_1$ (Robertson and Zaragoza 2009)."""

B = 0.75
"""BM25's length normalisation $b$ (Robertson and Zaragoza 2009)."""

KS = (1, 5, 10)
"""The cuts of recall@k."""

POOLINGS = ("mean", "max", "first")
"""How a text's token vectors become one vector: their mean, their element-wise maximum, or the first
token's vector (the "[CLS]-style" slot; the encoder has no ``[CLS]``)."""

LAYERS = (0, 1, 2)
"""The layers read: 0 is $E[x] + P_{16}$ (no context), 1 and 2 follow the encoder's blocks."""

RULE_LAYER = 2
"""The layer the rules judge: the encoder's last."""


# ----------------------------------------------------------------------------- BM25
def _check_texts(value, name: str) -> list:
    texts = check_sequence(value, name)
    out = []
    for text in texts:
        if isinstance(text, (str, bytes)) or not hasattr(text, "__len__"):
            raise TypeError(f"{name} must hold sequences of tokens (not strings), got {type(text).__name__}")
        out.append(_hashable_tokens(list(text), name))
    return out


def _hashable_tokens(tokens: list, name: str) -> list:
    for token in tokens:
        try:
            hash(token)
        except TypeError:
            raise TypeError(f"{name} must hold hashable tokens (words or ids), got {type(token).__name__}") from None
    return tokens


def bm25_scores(documents, query, *, k1: float = K1, b: float = B) -> np.ndarray:
    r"""BM25 scores of one query against a collection (Robertson and Zaragoza 2009).

    $s(q, d) = \sum_{t \in q} \operatorname{idf}(t)\, f_{t,d}(k_1 + 1) / (f_{t,d} + k_1(1 - b + b |d| / \overline{|d|}))$,
    $\operatorname{idf}(t) = \log((N - n_t + 0.5) / (n_t + 0.5))$. A term in more than half the documents
    gets a negative idf, as the formula gives (``rank_bm25.BM25Okapi`` floors it instead).

    Parameters
    ----------
    documents : sequence of sequences of hashable, length N
        Each document's tokens (words or ids); at least one document, not all empty.
    query : sequence of hashable
        The query's tokens; a repeated token counts each time.
    k1, b : float
        $k_1 \ge 0$ and $0 \le b \le 1$.

    Returns
    -------
    numpy.ndarray, shape (N,), float64

    Raises
    ------
    TypeError
        If ``documents`` or ``query`` is not a sequence of token sequences, or ``k1`` or ``b`` is not a number.
    ValueError
        If ``documents`` is empty or all its documents are, or ``k1`` or ``b`` is out of range.

    Examples
    --------
    >>> bm25_scores([["a", "b"], ["b", "c", "c"], ["d"]], ["c"]).round(4).tolist()
    [0.0, 0.6158, 0.0]
    """
    docs = _check_texts(documents, "documents")
    if isinstance(query, (str, bytes)):
        raise TypeError("query must be a sequence of tokens, not a string (split it first)")
    terms = _hashable_tokens(check_sequence(query, "query"), "query")
    for name, value in (("k1", k1), ("b", b)):
        if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
            raise TypeError(f"{name} must be a number, got {type(value).__name__}")
        if not math.isfinite(value):
            raise ValueError(f"{name} must be finite, got {value}")
    if k1 < 0:
        raise ValueError(f"k1 must be non-negative, got {k1}")
    if not 0 <= b <= 1:
        raise ValueError(f"b must be in [0, 1], got {b}")
    if not docs:
        raise ValueError("documents must hold at least one document")
    lengths = np.array([len(d) for d in docs], dtype=np.float64)
    if lengths.sum() == 0:
        raise ValueError("documents must not all be empty")
    counts = []
    frequency: dict = {}
    for d in docs:
        c: dict = {}
        for t in d:
            c[t] = c.get(t, 0) + 1
        counts.append(c)
        for t in c:
            frequency[t] = frequency.get(t, 0) + 1
    N = len(docs)
    norm = k1 * (1.0 - b + b * lengths / lengths.mean())
    scores = np.zeros(N)
    for t in terms:
        n = frequency.get(t, 0)
        if n == 0:
            continue
        idf = math.log((N - n + 0.5) / (n + 0.5))
        f = np.array([c.get(t, 0) for c in counts], dtype=np.float64)
        scores += idf * f * (k1 + 1.0) / (f + norm)
    return scores


# ----------------------------------------------------------------------------- measures
def _check_relevant(relevant, shape=None) -> np.ndarray:
    try:
        rel = np.asarray(relevant)
    except (TypeError, ValueError):
        raise ValueError("relevant must be a rectangular boolean array (queries, documents)") from None
    if rel.dtype != bool:
        raise TypeError(f"relevant must be a boolean array, got dtype {rel.dtype}")
    if rel.ndim != 2 or rel.shape[0] == 0 or rel.shape[1] == 0:
        raise ValueError(f"relevant must be a non-empty 2-D array (queries, documents), got shape {rel.shape}")
    if shape is not None and rel.shape != shape:
        raise ValueError(f"relevant must have the shape of scores {shape}, got {rel.shape}")
    if not rel.any(axis=1).all():
        raise ValueError("relevant must mark at least one relevant document for every query")
    return rel


def _ranks(scores: np.ndarray, relevant: np.ndarray) -> np.ndarray:
    """``(Q, N)`` 1-based rank of every document, ties broken against the relevant ones."""
    ranks = np.empty(scores.shape, dtype=np.int64)
    for q in range(scores.shape[0]):
        order = np.lexsort((relevant[q].astype(np.int8), -scores[q]))
        ranks[q, order] = np.arange(1, scores.shape[1] + 1)
    return ranks


def retrieval_metrics(scores, relevant, ks=KS) -> dict:
    """Recall@k and mean reciprocal rank of rankings by ``scores``, means over the queries.

    Parameters
    ----------
    scores : array_like, shape (Q, N)
        Finite scores of each document for each query; higher ranks first.
    relevant : numpy.ndarray of bool, shape (Q, N)
        The relevant documents of each query, at least one per query.
    ks : sequence of int
        The cuts of recall@k, each in [1, N].

    Returns
    -------
    dict
        ``"recall@k"`` for each k (share of a query's relevant documents in its top k, mean over queries)
        and ``"mrr"`` (mean over queries of one over the rank of the first relevant document). A tie is
        broken against the relevant documents.

    Raises
    ------
    TypeError
        If ``scores`` is not numeric, ``relevant`` not boolean or ``ks`` not a sequence of integers.
    ValueError
        If the shapes differ or are not 2-D, a query has no relevant document, scores are not finite
        or a k is out of range.

    Examples
    --------
    >>> relevant = np.array([[True, False, False], [False, False, True]])
    >>> retrieval_metrics([[0.9, 0.5, 0.1], [0.9, 0.5, 0.5]], relevant, ks=(1, 2))
    {'recall@1': 0.5, 'recall@2': 0.5, 'mrr': 0.6666666666666666}
    """
    s = as_float_array(scores, "scores", ndim=2)
    rel = _check_relevant(relevant, s.shape)
    cuts = [check_positive_int(k, "ks") for k in check_sequence(ks, "ks")]
    if not cuts or max(cuts) > s.shape[1]:
        raise ValueError(f"ks must hold at least one cut, each at most the {s.shape[1]} documents, got {cuts}")
    ranks = _ranks(s, rel)
    out = {}
    for k in cuts:
        out[f"recall@{k}"] = float(np.mean(((ranks <= k) & rel).sum(axis=1) / rel.sum(axis=1)))
    first = np.where(rel, ranks, s.shape[1] + 1).min(axis=1)
    out["mrr"] = float(np.mean(1.0 / first))
    return out


def chance_metrics(relevant, ks=KS) -> dict:
    r"""The expected `retrieval_metrics` of a uniformly random order: recall@k is $k / N$, and the first of $R$
    relevant documents among $N$ sits at rank $r$ with probability $\binom{N - r}{R - 1} / \binom{N}{R}$.

    Parameters
    ----------
    relevant : numpy.ndarray of bool, shape (Q, N)
    ks : sequence of int

    Returns
    -------
    dict
        The same keys as `retrieval_metrics`.

    Raises
    ------
    TypeError, ValueError
        As `retrieval_metrics`.

    Examples
    --------
    >>> chance_metrics(np.array([[True, False]]), ks=(1,))
    {'recall@1': 0.5, 'mrr': 0.75}
    """
    rel = _check_relevant(relevant)
    N = rel.shape[1]
    cuts = [check_positive_int(k, "ks") for k in check_sequence(ks, "ks")]
    if not cuts or max(cuts) > N:
        raise ValueError(f"ks must hold at least one cut, each at most the {N} documents, got {cuts}")
    out = {f"recall@{k}": k / N for k in cuts}
    reciprocal = []
    for R in rel.sum(axis=1).tolist():
        r = np.arange(1, N - R + 2)
        p = np.array([math.comb(N - i, R - 1) for i in r.tolist()], dtype=np.float64) / math.comb(N, R)
        reciprocal.append(float(np.sum(p / r)))
    out["mrr"] = float(np.mean(reciprocal))
    return out


# ----------------------------------------------------------------------------- gold
@dataclass(frozen=True, eq=False)
class RetrievalGold:
    """The queries and their relevant filings.

    Attributes
    ----------
    documents : numpy.ndarray, shape (F,)
        The held-out filings, sorted.
    company, aspect : numpy.ndarray, shape (Q,)
        Each query's company (index into ``COMPANIES``) and aspect (index into ``ASPECTS``).
    texts : tuple of tuple of str, length Q
        Each query's words, "<alias> <aspect words>".
    relevant : numpy.ndarray of bool, shape (Q, F)
        The held-out filings of the query's company that report news on its aspect.
    filing_ids : tuple of numpy.ndarray, length F
        Each filing's vocabulary ids, ``[SEP]`` left out (what BM25 reads).

    Raises
    ------
    TypeError, ValueError
        If an id array is not 1-D integers, ``relevant`` is not a (queries, filings) bool array,
        or ``texts`` and ``filing_ids`` do not hold one entry per query and per filing.

    Examples
    --------
    >>> gold = retrieval_gold()
    >>> first = RetrievalGold(**{**vars(gold), "relevant": gold.relevant[:, ::-1].copy()})   # filings relabelled
    >>> first.relevant.shape == gold.relevant.shape
    True
    """

    documents: np.ndarray
    company: np.ndarray
    aspect: np.ndarray
    texts: tuple
    relevant: np.ndarray
    filing_ids: tuple

    def __post_init__(self):
        # the record is public (a reader may rebuild it): refuse what would score against a wrong gold
        for name in ("documents", "company", "aspect"):
            as_int_array(getattr(self, name), name, ndim=1)
        try:
            relevant = np.asarray(self.relevant)
        except ValueError:  # ragged rows
            raise TypeError(f"relevant must be a 2-D bool array, got ragged {type(self.relevant).__name__}") from None
        if relevant.dtype != bool or relevant.ndim != 2:
            raise TypeError(f"relevant must be a 2-D bool array, got {relevant.dtype} of shape {relevant.shape}")
        if relevant.shape != (len(self.company), len(self.documents)):
            raise ValueError(f"relevant must have shape (len(company), len(documents)) = "
                             f"{(len(self.company), len(self.documents))}, got {relevant.shape}")
        for text in check_instance(self.texts, "texts", tuple):
            check_sequence(text, "texts", of=str)
        if len(self.texts) != len(self.company) or len(self.aspect) != len(self.company):
            raise ValueError(f"texts and aspect must hold one entry per query (per company entry, {len(self.company)})")
        if len(check_instance(self.filing_ids, "filing_ids", tuple)) != len(self.documents):
            raise ValueError(f"filing_ids must hold one id array per filing ({len(self.documents)})")

    @property
    def query_ids(self) -> tuple:
        """Each query's vocabulary ids."""
        return tuple(query_ids(text) for text in self.texts)


def query_ids(words) -> np.ndarray:
    """The vocabulary ids of a query's words.

    Parameters
    ----------
    words : str or sequence of str
        The query, as one string split at white space or as words; lower case.

    Returns
    -------
    numpy.ndarray, shape (n,), int64

    Raises
    ------
    TypeError
        If ``words`` is not a str or a sequence of str.
    ValueError
        If it holds no word, or a word is not in the filings' vocabulary (or is a special token).

    Examples
    --------
    >>> [filing_encoder.filing_world().vocabulary.words[i] for i in query_ids("kestrel gross margin")]
    ['kestrel', 'gross', 'margin']
    """
    return _query_ids(words, "words")


def _query_ids(words, name: str) -> np.ndarray:
    if isinstance(words, str):
        words = words.split()
    words = check_sequence(words, name, of=str)
    if not words:
        raise ValueError(f"{name} must hold at least one word")
    vocabulary = filing_encoder.filing_world().vocabulary
    ids = []
    for word in words:
        try:
            i = vocabulary.lookup(word)
        except KeyError:
            raise ValueError(f"{name} must be words of the filings' vocabulary, got {word!r}") from None
        if i == SEP_ID or word.startswith("["):
            raise ValueError(f"{name} must be words, not the special token {word!r}")
        ids.append(i)
    return np.array(ids, dtype=np.int64)


@functools.cache
def retrieval_gold() -> RetrievalGold:
    """The queries over the 60 held-out filings and their relevant filings (memoised; no encoder is read).

    Examples
    --------
    >>> gold = retrieval_gold()
    >>> gold.relevant.shape[1], " ".join(gold.texts[0]), bool(gold.relevant.any(axis=1).all())
    (60, 'kestrel net income', True)
    """
    world = filing_encoder.filing_world()
    corpus = world.corpus
    documents = np.asarray(sorted(int(d) for d in filing_encoder.split().test_documents), dtype=np.int64)
    bounds = corpus.document_bounds()
    reports = np.zeros((documents.size, len(ASPECTS)), dtype=bool)
    filing_ids = []
    for row, d in enumerate(documents.tolist()):
        span = slice(bounds[d], bounds[d + 1])
        aspects = corpus.aspect[span]
        reports[row, aspects[aspects >= 0]] = True
        ids = world.ids[span]
        filing_ids.append(ids[ids != SEP_ID].astype(np.int64))
    filer = corpus.filer[documents]
    company, aspect, texts, relevant = [], [], [], []
    for c in range(len(COMPANIES)):
        for a in range(len(ASPECTS)):
            hits = (filer == c) & reports[:, a]
            if hits.any():
                company.append(c)
                aspect.append(a)
                texts.append((COMPANIES[c].alias, *ASPECTS[a].words))
                relevant.append(hits)
    return RetrievalGold(documents=documents, company=np.array(company), aspect=np.array(aspect),
                         texts=tuple(texts), relevant=np.array(relevant), filing_ids=tuple(filing_ids))


def bm25_matrix(gold: RetrievalGold | None = None) -> np.ndarray:
    """``(Q, F)`` BM25 scores of every query against every held-out filing.

    Examples
    --------
    >>> bm25_matrix().shape[1]
    60
    """
    gold = retrieval_gold() if gold is None else check_instance(gold, "gold", RetrievalGold)
    docs = [ids.tolist() for ids in gold.filing_ids]
    return np.stack([bm25_scores(docs, q.tolist()) for q in gold.query_ids])


# ----------------------------------------------------------------------------- dense reading
def _check_seed(seed) -> int:
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)):
        raise TypeError(f"seed must be an integer, got {type(seed).__name__}")
    if int(seed) not in filing_encoder.SEEDS:
        raise ValueError(f"seed must be one of the filing encoders' seeds {filing_encoder.SEEDS}, got {seed}")
    return int(seed)


def _query_states(result, ids: np.ndarray) -> np.ndarray:
    """``(n, layers, d)`` states of a query's tokens, each at the centre of its own window over the query."""
    config = result.encoder
    windows, _ = centred_windows(ids, np.zeros(ids.size, dtype=np.int64), length=config.length,
                                 pad_id=config.pad_id)
    centre = centre_position(config.length)
    hidden = enc.hidden_states(result.params, config, windows)
    return np.stack([h[:, centre] for h in hidden], axis=1)


def _pool(states: np.ndarray) -> np.ndarray:
    """``(poolings, layers, d)`` of centred ``(n, layers, d)`` token states."""
    return np.stack([states.mean(axis=0), states.max(axis=0), states[0]])


def _read(seed: int) -> dict:
    gold = retrieval_gold()
    result = filing_encoder.trained_encoder(filing_encoder.seed_setup(seed))
    world = filing_encoder.filing_world()
    bounds = world.corpus.document_bounds()
    with runtime.blas_threads(1):
        spans = [np.arange(bounds[d], bounds[d + 1]) for d in gold.documents.tolist()]
        words = [span[world.ids[span] != SEP_ID] for span in spans]
        states = filing_encoder.centre_states(result, np.concatenate(words))[:, list(LAYERS)]
        mean = states.mean(axis=0)
        starts = np.cumsum([0] + [w.size for w in words])
        filings = np.stack([_pool(states[starts[i]:starts[i + 1]] - mean) for i in range(len(words))], axis=2)
        queries = np.stack([_pool(_query_states(result, ids)[:, list(LAYERS)] - mean) for ids in gold.query_ids],
                           axis=2)
    return {"filings": filings, "queries": queries, "mean": mean}


@functools.cache
def _vectors(seed: int) -> dict:
    gold = retrieval_gold()
    key = {"encoder": filing_encoder.identity(filing_encoder.seed_setup(seed)),
           "documents": gold.documents.tolist(), "queries": [list(t) for t in gold.texts],
           "layers": list(LAYERS), "poolings": list(POOLINGS)}
    producers = [_read, _pool, _query_states, retrieval_gold, filing_encoder.centre_states]
    arrays, _ = cache.cached("ch11-dense-retrieval", key, producers, lambda: _read(seed), book_sized=False)
    return arrays


def _dense_vectors(seed: int) -> dict:
    """Pooled, centred vectors of the held-out filings and the queries, read by the filing encoder of ``seed``.

    From the store (about four seconds of one core per seed on a miss).

    Returns
    -------
    dict
        ``"filings"``: ``(3, 3, F, d)`` by pooling (``POOLINGS``), layer (``LAYERS``) and filing;
        ``"queries"``: ``(3, 3, Q, d)``; ``"mean"``: ``(3, d)``, the mean word-token vector of the held-out
        filings at each layer, subtracted from every token vector before pooling.

    Raises
    ------
    TypeError, ValueError
        If ``seed`` is not one of the filing encoders' seeds.

    Examples
    --------
    >>> v = _dense_vectors(filing_encoder.SEEDS[0])  # doctest: +BOOK
    >>> v["filings"].shape[:3], v["queries"].shape[:2]
    ((3, 3, 60), (3, 3))
    """
    return _vectors(_check_seed(seed))


def _cosine(queries: np.ndarray, filings: np.ndarray) -> np.ndarray:
    q = queries / np.linalg.norm(queries, axis=-1, keepdims=True)
    f = filings / np.linalg.norm(filings, axis=-1, keepdims=True)
    return q @ f.T


def _dense_scores(seed: int, pooling: str = "mean", layer: int = RULE_LAYER) -> np.ndarray:
    """``(Q, F)`` cosine of each query's pooled vector with each held-out filing's.

    Raises
    ------
    TypeError, ValueError
        If ``seed`` is not a filing encoder's seed, ``pooling`` not one of ``POOLINGS`` or ``layer`` not one
        of ``LAYERS``.

    Examples
    --------
    >>> _dense_scores(filing_encoder.SEEDS[0]).shape[1]  # doctest: +BOOK
    60
    """
    seed = _check_seed(seed)
    p = POOLINGS.index(check_choice(pooling, "pooling", POOLINGS))
    layer = check_positive_int(layer, "layer", minimum=0)
    if layer not in LAYERS:
        raise ValueError(f"layer must be one of {LAYERS}, got {layer}")
    v = _dense_vectors(seed)
    return _cosine(v["queries"][p, layer], v["filings"][p, layer])


# ----------------------------------------------------------------------------- the study
@dataclass(frozen=True, eq=False)
class RetrievalStudy:
    """Every measure of every method.

    Attributes
    ----------
    seeds : tuple of int
        The filing encoders' seeds, the book's first.
    dense : dict
        ``(pooling, layer) -> list`` of one `retrieval_metrics` dict per seed.
    bm25 : dict
        BM25's `retrieval_metrics`.
    chance : dict
        `chance_metrics` of the queries.
    gold : RetrievalGold
    """

    seeds: tuple
    dense: dict
    bm25: dict
    chance: dict
    gold: RetrievalGold

    def __post_init__(self):
        # the record is public (a reader may rebuild it with other numbers): refuse what would draw a wrong table
        check_seeds(self.seeds)
        for name in ("dense", "bm25", "chance"):
            check_finite_numbers(check_instance(getattr(self, name), name, dict), name)
        check_instance(self.gold, "gold", RetrievalGold)

    def values(self, pooling: str, layer: int, measure: str = "mrr") -> list:
        """One dense measure per seed.

        Raises
        ------
        KeyError
            If there is no such method or measure.
        """
        return [m[measure] for m in self.dense[(pooling, layer)]]


@functools.cache
def results() -> RetrievalStudy:
    """Q12's study over the five filing encoders (memoised; the readings come from the store).

    Examples
    --------
    >>> study = results()  # doctest: +BOOK
    >>> sorted(study.bm25)
    ['mrr', 'recall@1', 'recall@10', 'recall@5']
    """
    gold = retrieval_gold()
    dense = {}
    for pooling in POOLINGS:
        for layer in LAYERS:
            dense[(pooling, layer)] = [retrieval_metrics(_dense_scores(seed, pooling, layer), gold.relevant)
                                       for seed in filing_encoder.SEEDS]
    return RetrievalStudy(seeds=tuple(filing_encoder.SEEDS), dense=dense,
                          bm25=retrieval_metrics(bm25_matrix(gold), gold.relevant),
                          chance=chance_metrics(gold.relevant), gold=gold)


def retrieve(query, *, method: str = "bm25", layer: int = RULE_LAYER, seed: int | None = None,
             k: int = 5) -> Markdown:
    """The top ``k`` held-out filings for a query, by BM25 or by a dense pooling.

    Parameters
    ----------
    query : str or sequence of str
        Words of the filings' vocabulary, e.g. ``"kestrel gross margin"``.
    method : str
        ``"bm25"`` or one of ``POOLINGS``.
    layer : int
        For a dense method, one of ``LAYERS``.
    seed : int, optional
        For a dense method, a filing encoder's seed (default the book's).
    k : int
        How many filings to list, 1 to 60.

    Returns
    -------
    Markdown
        A table: rank, filing, its filer, the aspects it reports news on, the score.

    Raises
    ------
    TypeError
        If an argument is of the wrong type.
    ValueError
        If ``query`` holds a word outside the vocabulary, ``method`` or ``layer`` is not one of the choices,
        ``seed`` is not a filing encoder's seed, or ``k`` is out of range.

    Examples
    --------
    >>> print(retrieve("kestrel gross margin", k=1).splitlines()[2].split("|")[3].strip())
    kestrel
    """
    ids = _query_ids(query, "query")
    method = check_choice(method, "method", ("bm25", *POOLINGS))
    gold = retrieval_gold()
    if check_positive_int(k, "k") > gold.documents.size:
        raise ValueError(f"k must be at most {gold.documents.size}, got {k}")
    if method == "bm25":
        scores = bm25_scores([f.tolist() for f in gold.filing_ids], ids.tolist())
    else:
        seed = filing_encoder.SEEDS[0] if seed is None else _check_seed(seed)
        layer = check_positive_int(layer, "layer", minimum=0)
        if layer not in LAYERS:
            raise ValueError(f"layer must be one of {LAYERS}, got {layer}")
        result = filing_encoder.trained_encoder(filing_encoder.seed_setup(seed))
        v = _dense_vectors(seed)
        p = POOLINGS.index(method)
        pooled = _pool(_query_states(result, ids)[:, list(LAYERS)] - v["mean"])[p, layer]
        scores = _cosine(pooled[None, :], v["filings"][p, layer])[0]
    corpus = filing_encoder.filing_world().corpus
    bounds = corpus.document_bounds()
    order = np.argsort(-scores, kind="stable")[:k]
    rows = []
    for rank, f in enumerate(order.tolist(), start=1):
        d = int(gold.documents[f])
        aspects = sorted(set(corpus.aspect[bounds[d]:bounds[d + 1]].tolist()) - {-1})
        rows.append((rank, d, COMPANIES[int(corpus.filer[d])].alias,
                     ", ".join(" ".join(ASPECTS[a].words) for a in aspects) or "—", float(scores[f])))
    return table(["rank", "filing", "filer", "news on", "score"], rows, formats=["d", "d", None, None, ".3f"])


# ----------------------------------------------------------------------------- claims
def _dense(measure: str, pooling: str = "mean", layer: int = RULE_LAYER) -> list:
    return results().values(pooling, layer, measure)


def _rule(values, reference) -> dict:
    """``over_seeds`` of ``values`` for the rule "value at least ``reference``" (a number, or one per seed)."""
    reference = np.broadcast_to(np.asarray(reference, dtype=np.float64), (len(values),))
    margins = [float(v - r) for v, r in zip(values, reference)]
    return over_seeds(values, margins=margins)


def _strict(values, reference) -> dict:
    """As `_rule` for "value above ``reference``": a tie does not hold."""
    reference = np.broadcast_to(np.asarray(reference, dtype=np.float64), (len(values),))
    holding = sum(float(v) > float(r) for v, r in zip(values, reference))
    return over_seeds(values, holding)


def _mrr_vs_bm25() -> dict:
    return _rule(_dense("mrr"), results().bm25["mrr"])


def _recall_vs_bm25() -> dict:
    return _rule(_dense("recall@10"), results().bm25["recall@10"])


def _mrr_vs_chance() -> dict:
    return _strict(_dense("mrr"), results().chance["mrr"])


def _mean_vs_first() -> dict:
    return _strict(_dense("mrr"), _dense("mrr", "first"))


def _context_vs_static() -> dict:
    return _strict(_dense("mrr"), _dense("mrr", "mean", 0))


_QUANTITY = ("Queries '<alias> <aspect words>' for each (company, aspect) with news in the 60 held-out filings, "
             "relevant: that company's held-out filings with news on that aspect; the filing encoder's layer-2 "
             "token vectors (each token at the centre of its own window, centred by the held-out mean) "
             "mean-pooled, ranked by cosine (5 seeds): ")
_SECTION = "dense-retrieval-against-bm25"

PRESTATED = (
    Claim("Q12a", _QUANTITY + "recall@10 against BM25's (k1 = 1.2, b = 0.75) on the same filings", seed="—",
          rule="recall@10 at least BM25's, at a seed", compute=_recall_vs_bm25, accept=lambda v: True,
          expected="not reproduced", section=_SECTION),
    Claim("Q12b", _QUANTITY + "MRR against a uniformly random order's expected MRR", seed="—",
          rule="MRR above chance, at a seed", compute=_mrr_vs_chance, accept=lambda v: True,
          expected="reproduced", section=_SECTION),
    Claim("Q12c", _QUANTITY + "MRR against that of the first token's layer-2 vector (the '[CLS]-style' pooling)",
          seed="—", rule="mean pooling's MRR above the first token's, at a seed", compute=_mean_vs_first,
          accept=lambda v: True, expected="not reproduced", section=_SECTION),
    Claim("Q12d", _QUANTITY + "MRR against that of mean-pooled layer-0 vectors (the static table plus a position)",
          seed="—", rule="layer 2's MRR above layer 0's, at a seed", compute=_context_vs_static,
          accept=lambda v: True, expected="not reproduced", section=_SECTION),
)
"""Q12's other rules (Q12a–Q12d), fixed before any retrieval number was computed, judged over the seeds."""

CLAIMS = (
    Claim("Q12", _QUANTITY + "MRR against BM25's (k1 = 1.2, b = 0.75) on the same filings", seed="—",
          rule="MRR at least BM25's, at a seed", compute=_mrr_vs_bm25, accept=lambda v: True,
          expected="not reproduced", section=_SECTION),
    *PRESTATED,
)
"""Open question Q12's claims: dense mean-pooled layer-2 retrieval against BM25 (``Q12``) and ``PRESTATED``."""


# ----------------------------------------------------------------------------- tables and figure
_MEASURES = tuple(f"recall@{k}" for k in KS) + ("mrr",)


def summary_table(study: RetrievalStudy | None = None) -> Markdown:
    """Recall@k and MRR of every method: BM25 and chance once, each dense pooling and layer as the book's seed's
    value (mean ± sd over the seeds).

    Raises
    ------
    TypeError
        If ``study`` is not a `RetrievalStudy`.

    Examples
    --------
    >>> print(summary_table().splitlines()[0])  # doctest: +BOOK
    | method | layer | recall@1 | recall@5 | recall@10 | MRR |
    """
    study = results() if study is None else check_instance(study, "study", RetrievalStudy)
    rows = [("BM25", "—", *(format(study.bm25[m], ".3f") for m in _MEASURES)),
            ("random order (expected)", "—", *(format(study.chance[m], ".3f") for m in _MEASURES))]
    names = {"mean": "mean pooling", "max": "max pooling", "first": "first token ([CLS]-style)"}
    for pooling in POOLINGS:
        for layer in LAYERS:
            rows.append((names[pooling], str(layer),
                         *(seed_band(study.values(pooling, layer, m)) for m in _MEASURES)))
    return table(["method", "layer", *(f"recall@{k}" for k in KS), "MRR"], rows)


STATED_BEFORE_RUN = {"Q12": "not reproduced", "Q12a": "not reproduced", "Q12b": "reproduced",
                     "Q12c": "reproduced", "Q12d": "not reproduced"}
"""The verdict each rule was expected to get, committed with the rules before any retrieval number was computed.
A claim's ``expected`` is the verdict the chapter states, which is the one found: Q12c's differs from this one."""

_RULE_NAMES = ("MRR at least BM25's", "recall@10 at least BM25's", "MRR above chance",
               "mean pooling above the first token", "layer 2 above layer 0")


def rules_table() -> Markdown:
    """Q12's five rules: each rule, how many seeds satisfy it, the verdict stated before the run and the verdict
    found (a rule whose found verdict differs is shown, not hidden). The numbers are in `summary_table`.

    Examples
    --------
    >>> print(rules_table().splitlines()[0])  # doctest: +BOOK
    | rule (fixed before computing) | seeds holding | expected before the run | found |
    """
    rows = []
    for name, result in zip(_RULE_NAMES, verify(claims=CLAIMS)):
        rows.append((name if "layer" in name or "pooling" in name else f"{name} (mean-pooled layer 2)",
                     result.value["seeds holding"], STATED_BEFORE_RUN[result.claim.id], result.verdict))
    return table(["rule (fixed before computing)", "seeds holding", "expected before the run", "found"], rows)


def figure_retrieval(study: RetrievalStudy | None = None):
    """MRR of every method: one dot per seed for each dense pooling at each layer, a bar at their mean, and
    horizontal lines at BM25 and at chance.

    Returns
    -------
    DescribedFigure
        The drawing, with its alt text (the ranges of the dense MRRs, BM25's and chance, computed) and caption.

    Raises
    ------
    TypeError
        If ``study`` is not a `RetrievalStudy`.

    Examples
    --------
    >>> drawn = figure_retrieval()  # doctest: +BOOK
    >>> drawn.alt.startswith("Mean reciprocal rank")  # doctest: +BOOK
    True
    """
    from mlm_book.figures import NARROW, PALETTE, describe, subplots

    study = results() if study is None else check_instance(study, "study", RetrievalStudy)
    fig, ax = subplots(1, 1, width=NARROW, height=3.6)
    colours = dict(zip(POOLINGS, (PALETTE["blue"], PALETTE["orange"], PALETTE["green"])))
    names = {"mean": "mean pooling", "max": "max pooling", "first": "first token ([CLS]-style)"}
    for j, pooling in enumerate(POOLINGS):
        for layer in LAYERS:
            values = study.values(pooling, layer)
            x = layer + (j - 1) * 0.25 + np.linspace(-0.05, 0.05, len(values))
            ax.scatter(x, values, s=14, color=colours[pooling], zorder=3,
                       label=names[pooling] if layer == LAYERS[0] else None)
            ax.hlines(np.mean(values), x[0] - 0.04, x[-1] + 0.04, color=colours[pooling], lw=1.6, zorder=4)
    ax.axhline(study.bm25["mrr"], color=PALETTE["black"], ls="--", lw=1.2, label="BM25")
    ax.axhline(study.chance["mrr"], color=PALETTE["grey"], ls=":", lw=1.2, label="random order")
    ax.set_xticks(list(LAYERS), [f"layer {layer}" for layer in LAYERS])
    ax.set_ylim(0, 1.02)
    ax.set_ylabel("mean reciprocal rank")
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.12), ncols=2, handletextpad=0.3, columnspacing=0.8)

    def span(pooling):
        values = [v for layer in LAYERS for v in study.values(pooling, layer)]
        return f"{min(values):.2f} to {max(values):.2f}"

    alt = (f"Mean reciprocal rank of {len(study.gold.texts)} company-and-aspect queries over 60 held-out filings, "
           f"one dot per seed at layers 0, 1 and 2: mean pooling {span('mean')}, max pooling {span('max')}, "
           f"first token {span('first')}; BM25 at {study.bm25['mrr']:.2f} and a random order at "
           f"{study.chance['mrr']:.2f} are horizontal lines.")
    caption = (f"Dense retrieval with the filing encoder's pooled vectors against BM25: the MRR of "
               f"{len(study.gold.texts)} queries at {len(study.seeds)} seeds (dots, a bar at their mean), by layer "
               f"and pooling.")
    return describe(fig, alt=alt, caption=caption)
