r"""Chapter 11, open question Q13: the filing encoder's masked-LM head as a sparse retriever.

**The question.** SPLADE (Formal, Piwowarski and Clinchant 2021) turns a masked-LM
head into a sparse bag of term weights for a document: with $z_{i,v}$ the head's logit for
word $v$ at position $i$, the max pooling of SPLADE v2 (Formal, Lassance, Piwowarski and
Clinchant 2021) gives

$$ w_v = \max_i \log\bigl(1 + \operatorname{ReLU}(z_{i,v})\bigr), $$

and a query is scored against a document by the dot product of their weights. SPLADE then
*trains* the encoder for retrieval. Without that training, what does the book's filing encoder's
head give: do its weights rank a filing's terms sensibly, and do they *expand* a filing with
related terms it does not contain?

**The method** (fixed before any weight was computed; the weights of each encoder are one run of the
artefact [`mlm_book.artefacts.sparse_weights`][mlm_book.artefacts.sparse_weights]).

* *Reading.* Every token of a filing, ``[SEP]`` and ``[UNK]`` included, is read at the centre
  of its own 32-token window, cut at the filing's edge, as chapter 6 reads tokens
  ([`mlm_book.finance.windows.centred_windows`][mlm_book.finance.windows.centred_windows]);
  the head's logits at the centre are pooled by the maximum over the filing's positions
  ([`splade_weights`][mlm_book.artefacts.sparse_weights.splade_weights]). Two readings
  ([`READINGS`][mlm_book.artefacts.sparse_weights.READINGS]): ``"shown"``, the token itself at
  the centre, which is what SPLADE feeds its encoder (the document as written), and ``"masked"``,
  ``[MASK]`` at the centre, where the head says what the context predicts there and nothing
  of the token itself. The rules below are judged on the shown reading; the masked one is the
  contrast.
* *Vocabulary.* The head has one logit per output class: the frequent words, ``[UNK]`` and
  ``[SEP]`` (``[MASK]`` and ``[PAD]`` are input-only and have none). ``[UNK]`` and ``[SEP]``
  are not terms a query can ask for, so their weights are set to zero
  ([`EXCLUDED_IDS`][mlm_book.artefacts.sparse_weights.EXCLUDED_IDS]).
* *Filings.* The 60 filings held out from every filing encoder's training, at each of the five
  training seeds ([`mlm_book.artefacts.filing_encoder.SEEDS`][mlm_book.artefacts.filing_encoder.SEEDS]).
* *Gold* ([`filing_gold`][mlm_book.experiments.ch11_sparse.filing_gold]), from the corpus's
  annotations: a filing's *own terms* are its filer's alias, industry noun and its plural
  ("merlin", "drill", "drills"; the legal suffix is shared by several companies and not
  counted); its *aspect words* are the words of the aspects its news sentences report
  ("operating", "expenses"); a *generic* word occurs in at least half of the training filings
  ([`GENERIC_SHARE`][mlm_book.experiments.ch11_sparse.GENERIC_SHARE]: "the", "percent", ...),
  and is counted as generic in a filing where it is not one of that filing's own terms or
  aspect words. The opening line names the filer in full, so alias and noun occur in every
  filing; the plural occurs only in the company description of four of the five templates.
  So the one own term a filing can lack is its plural: the test of expansion.
* *Measures* (`_score_weights`), per filing:
  the AUC ([`rank_auc`][mlm_book.experiments.ch11_sparse.rank_auc], ties counted half) of
  the filing's own terms, and of its aspect words, against its generic words; where the plural
  is absent, its rank among all the filing's absent terms (1 = heaviest, ties sharing their
  mean rank), reported as the share within the top
  [`TOP_K`][mlm_book.experiments.ch11_sparse.TOP_K] and the mean reciprocal rank; the share of
  the top absent terms that name *another* company; the Spearman correlation of the weights
  of the filing's terms with their corpus counts (is the weight frequency?); the number of
  terms with a positive weight. Across filings, a retrieval check: each company's plural as a
  one-word query, its own held-out filings the relevant ones, scored by the AUC of the query
  term's weight. The same measures on bag-of-words vectors (term frequency, idf, tf-idf) are
  the baselines; they give every absent term zero weight, so they cannot expand.

**Rules, fixed before the numbers** (each over the five seeds; "reproduced" means at every seed).

* [`SALIENCE_THRESHOLD`][mlm_book.experiments.ch11_sparse.SALIENCE_THRESHOLD] (the registered
  claim): the mean AUC of a filing's own terms against its generic words is above one half.
* [`ASPECT_THRESHOLD`][mlm_book.experiments.ch11_sparse.ASPECT_THRESHOLD]: the same for its
  aspect words.
* [`EXPANSION_SHARE`][mlm_book.experiments.ch11_sparse.EXPANSION_SHARE]: in at least half of
  the filings that lack their plural, it ranks within the top ten of their absent terms.
* [`RETRIEVAL_RULE`][mlm_book.experiments.ch11_sparse.RETRIEVAL_RULE]: the plural queries'
  mean AUC under the weights is above term frequency's.

**A diagnosis, chosen after the numbers** ([`POOLINGS`][mlm_book.artefacts.sparse_weights.POOLINGS],
``"pmi"``): the maximum over positions of the head's log-probability, which no shift of a position's logits
changes, less the word's log corpus frequency. No rule judges it.

What the experiments show is written in chapter 11, from this module's tables and figures; the
tests check each statement there.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import numpy as np

from mlm_book.artefacts import filing_encoder, sparse_weights
from mlm_book.artefacts.sparse_weights import EXCLUDED_IDS, POOLINGS, READINGS
from mlm_book.finance.world import ASPECTS, COMPANIES
from mlm_book.ledger import Claim, over_seeds, verify
from mlm_book.report import Markdown, table
from mlm_book.report import seed_band
from mlm_book.validation import (
    as_float_array,
    as_int_array,
    check_choice,
    check_finite_numbers,
    check_instance,
    check_positive_int,
    check_seeds,
)

__all__ = ["GENERIC_SHARE", "TOP_K", "SALIENCE_THRESHOLD", "ASPECT_THRESHOLD", "EXPANSION_SHARE", "RETRIEVAL_RULE",
           "BASELINES", "MEASURES", "rank_auc", "FilingGold", "filing_gold", "Scores", "baseline_weights",
           "SparseStudy", "results", "example_document", "top_terms_table", "summary_table", "diagnosis_table",
           "rules_table", "figure_sparse", "PRESTATED", "CLAIMS"]

# ----------------------------------------------------------------------------- the rules, fixed first
GENERIC_SHARE = 0.5
"""A word is generic when it occurs in at least this share of the training filings (fixed before computing)."""

TOP_K = 10
"""The expansion rule's cut: the absent plural should rank within this many of a filing's absent terms."""

SALIENCE_THRESHOLD = 0.5
"""The registered rule, fixed before computing: on the shown reading, the mean over the held-out filings of
the AUC of each filing's own terms (its filer's alias, noun and plural that occur in it) against its generic
words is above this (one half: no preference). Judged at each of the five seeds."""

ASPECT_THRESHOLD = 0.5
"""Rule fixed before computing: the same mean AUC for each filing's aspect words against its generic words
is above this. Judged at each seed."""

EXPANSION_SHARE = 0.5
"""Rule fixed before computing: among the held-out filings that lack their filer's plural, the share in which
the plural ranks within the top ``TOP_K`` of the filing's absent terms (shown reading) is at least this.
Judged at each seed."""

RETRIEVAL_RULE = "SPLADE's mean AUC above term frequency's"
"""Rule fixed before computing: with each company's plural as a one-word query over the held-out filings
(relevant: the company's own), the mean AUC over the companies of the plural's weight (shown reading) is above
that of its term frequency. Judged at each seed."""

BASELINES = ("tf", "idf", "tf-idf")
"""Bag-of-words weights of the filing's own words: count in the filing, smoothed idf over the training
filings $\\log((1 + N) / (1 + n_v)) + 1$, and their product; every absent word weighs zero."""

# ----------------------------------------------------------------------------- ranking helpers
def rank_auc(positive, negative) -> float:
    """The probability that a random positive scores above a random negative, ties counted half.

    Parameters
    ----------
    positive, negative : array_like, shape (p,) and (q,)
        Scores, each with at least one entry.

    Returns
    -------
    float
        In [0, 1]; one half when the scores do not separate the two.

    Raises
    ------
    TypeError
        If either is not numeric.
    ValueError
        If either is empty, not 1-D or not finite.

    Examples
    --------
    >>> rank_auc([3.0, 1.0], [2.0, 0.0])
    0.75
    >>> rank_auc([0.0], [0.0, 0.0])
    0.5
    """
    p = as_float_array(positive, "positive", ndim=1)
    q = as_float_array(negative, "negative", ndim=1)
    if p.size == 0 or q.size == 0:
        raise ValueError(f"positive and negative must each hold at least one score, got {p.size} and {q.size}")
    return _auc(p, q)


def _auc(p: np.ndarray, q: np.ndarray) -> float:
    return float((p[:, None] > q[None, :]).mean() + 0.5 * (p[:, None] == q[None, :]).mean())


def _average_ranks(x: np.ndarray) -> np.ndarray:
    """Ranks 1..n of ``x`` (ascending), tied values sharing their mean rank."""
    order = np.argsort(x, kind="stable")
    sorted_x = x[order]
    starts = np.flatnonzero(np.concatenate([[True], sorted_x[1:] != sorted_x[:-1]]))
    ends = np.concatenate([starts[1:], [x.size]])
    mean_rank = (starts + ends + 1) / 2.0
    ranks = np.empty(x.size)
    ranks[order] = np.repeat(mean_rank, ends - starts)
    return ranks


def _spearman(x: np.ndarray, y: np.ndarray) -> float:
    rx, ry = _average_ranks(x), _average_ranks(y)
    rx, ry = rx - rx.mean(), ry - ry.mean()
    denominator = math.sqrt(float(rx @ rx) * float(ry @ ry))
    return float(rx @ ry / denominator) if denominator > 0 else math.nan


# ----------------------------------------------------------------------------- gold
@dataclass(frozen=True, eq=False)
class FilingGold:
    """What the corpus's annotations say about the held-out filings, in the vocabulary's ids.

    Attributes
    ----------
    documents : numpy.ndarray, shape (F,)
        The held-out filing indices (chapter 7's split), sorted.
    filer : numpy.ndarray, shape (F,)
        Each filing's company (index into ``COMPANIES``).
    tf : numpy.ndarray, shape (F, V)
        Count of each word in the filing (``[UNK]`` and ``[SEP]`` zero).
    terms : numpy.ndarray, shape (21, 3)
        Ids of each company's alias, noun and plural.
    aspect : numpy.ndarray of bool, shape (F, V)
        The words of the aspects the filing's news sentences report.
    generic : numpy.ndarray of bool, shape (F, V)
        Words in the filing that occur in at least ``GENERIC_SHARE`` of the training filings, other
        than its own terms and aspect words.
    document_share : numpy.ndarray, shape (V,)
        Share of the training filings each word occurs in.
    training_filings : int
        Their number $N$.
    corpus_count : numpy.ndarray, shape (V,)
        Count of each word in the whole corpus.

    Raises
    ------
    TypeError, ValueError
        If an array is of the wrong kind or shape.

    Examples
    --------
    >>> gold = filing_gold()
    >>> FilingGold(**{**vars(gold), "training_filings": 100}).training_filings     # a record rebuilt is checked
    100
    """

    documents: np.ndarray
    filer: np.ndarray
    tf: np.ndarray
    terms: np.ndarray
    aspect: np.ndarray
    generic: np.ndarray
    document_share: np.ndarray
    training_filings: int
    corpus_count: np.ndarray

    def __post_init__(self):
        documents = as_int_array(self.documents, "documents", ndim=1)
        F = documents.size
        tf = as_float_array(self.tf, "tf")
        V = tf.shape[-1] if tf.ndim == 2 else -1
        if F == 0 or V < 3:
            raise ValueError("documents must be non-empty and tf of shape (F, V) with V >= 3")
        shapes = {"filer": (F,), "tf": (F, V), "terms": (len(COMPANIES), 3), "aspect": (F, V), "generic": (F, V),
                  "document_share": (V,), "corpus_count": (V,)}
        for name, shape in shapes.items():
            try:
                value = np.asarray(getattr(self, name))
            except (TypeError, ValueError) as error:
                raise TypeError(f"{name} must be an array of shape {shape}, got a ragged "
                                f"{type(getattr(self, name)).__name__}") from error
            if value.shape != shape:
                raise ValueError(f"{name} must have shape {shape} (F = {F} documents, V = {V} words of tf), "
                                 f"got {value.shape}")
            if value.dtype.kind not in "biuf" or (value.dtype.kind == "f" and not np.isfinite(value).all()):
                raise ValueError(f"{name} must hold finite numbers")
        for name in ("aspect", "generic"):
            if np.asarray(getattr(self, name)).dtype != bool:
                raise TypeError(f"{name} must be a boolean array")
        check_positive_int(self.training_filings, "training_filings")

    @property
    def own_terms(self) -> np.ndarray:
        """``(F, 3)`` ids of each filing's filer's alias, noun and plural."""
        return self.terms[self.filer]

    @property
    def company_terms(self) -> np.ndarray:
        """``(21, V)`` bool: row $c$ marks company $c$'s alias, noun and plural."""
        marks = np.zeros((len(COMPANIES), self.tf.shape[1]), dtype=bool)
        marks[np.arange(len(COMPANIES))[:, None], self.terms] = True
        return marks

    @property
    def present(self) -> np.ndarray:
        """``(F, V)`` bool: the word occurs in the filing (``[UNK]`` and ``[SEP]`` never)."""
        return self.tf > 0

    @property
    def plural_absent(self) -> np.ndarray:
        """``(F,)`` bool: the filing lacks its filer's plural."""
        return self.tf[np.arange(self.documents.size), self.own_terms[:, 2]] == 0

    @property
    def idf(self) -> np.ndarray:
        """``(V,)`` smoothed idf over the training filings, $\\log((1 + N) / (1 + n_v)) + 1$."""
        n_v = np.rint(self.document_share * self.training_filings)
        return np.log((1.0 + self.training_filings) / (1.0 + n_v)) + 1.0


@functools.cache
def filing_gold() -> FilingGold:
    """The gold of the 60 held-out filings (memoised; no encoder is read).

    Raises
    ------
    RuntimeError
        If a company's alias, noun or plural, or an aspect word, is not in the vocabulary.

    Examples
    --------
    >>> gold = filing_gold()
    >>> gold.documents.size, gold.tf.shape[1], bool(gold.present[:, gold.own_terms[:, :2]].any())
    (60, 867, True)
    >>> bool(np.all(gold.tf[np.arange(60)[:, None], gold.own_terms[:, :2]] > 0))   # alias and noun always occur
    True
    """
    world = filing_encoder.filing_world()
    corpus, ids, vocabulary = world.corpus, world.ids, world.vocabulary
    V = vocabulary.size
    the_split = filing_encoder.split()
    documents = np.asarray(the_split.test_documents, dtype=np.int64)
    training = np.setdiff1d(np.arange(corpus.n_documents), documents)
    occurs = np.zeros((corpus.n_documents, V), dtype=bool)
    occurs[corpus.document, ids] = True
    occurs[:, list(EXCLUDED_IDS)] = False
    share = occurs[training].mean(axis=0)
    try:
        company_ids = np.array([[vocabulary.lookup(word) for word in (c.alias, c.noun, c.plural)] for c in COMPANIES])
        for aspect in ASPECTS:
            for word in aspect.words:
                vocabulary.lookup(word)
    except KeyError as error:
        raise RuntimeError(f"the gold terms must all be in the vocabulary: {error}") from None
    company_terms = np.zeros((len(COMPANIES), V), dtype=bool)
    company_terms[np.arange(len(COMPANIES))[:, None], company_ids] = True
    tf = np.zeros((documents.size, V), dtype=np.int64)
    aspect = np.zeros((documents.size, V), dtype=bool)
    row_of = {int(d): k for k, d in enumerate(documents.tolist())}
    held = np.flatnonzero(np.isin(corpus.document, documents))
    rows = np.array([row_of[int(d)] for d in corpus.document[held]])
    np.add.at(tf, (rows, ids[held]), 1)
    tf[:, list(EXCLUDED_IDS)] = 0
    on_aspect = held[corpus.aspect[held] >= 0]
    aspect[np.array([row_of[int(d)] for d in corpus.document[on_aspect]], dtype=np.int64), ids[on_aspect]] = True
    filer = corpus.filer[documents]
    own_mask = company_terms[filer]
    generic = (tf > 0) & (share >= GENERIC_SHARE)[None, :] & ~own_mask & ~aspect
    return FilingGold(documents=documents, filer=filer, tf=tf, terms=company_ids, aspect=aspect, generic=generic,
                      document_share=share, training_filings=int(training.size),
                      corpus_count=np.bincount(ids, minlength=V))


def baseline_weights(name: str) -> np.ndarray:
    """Bag-of-words weights of the held-out filings: ``"tf"``, ``"idf"`` or ``"tf-idf"`` (see ``BASELINES``).

    Returns
    -------
    numpy.ndarray, shape (F, V)
        Zero for every word absent from the filing.

    Raises
    ------
    TypeError, ValueError
        If ``name`` is not one of ``BASELINES``.

    Examples
    --------
    >>> tf, idf = baseline_weights("tf"), baseline_weights("idf")
    >>> bool(np.all((tf > 0) == (idf > 0))), bool(np.allclose(baseline_weights("tf-idf"), tf * idf))
    (True, True)
    """
    name = check_choice(name, "name", BASELINES)
    gold = filing_gold()
    tf = gold.tf.astype(np.float64)
    idf = np.where(gold.present, gold.idf[None, :], 0.0)
    return {"tf": tf, "idf": idf, "tf-idf": tf * idf}[name]


# ----------------------------------------------------------------------------- scores
@dataclass(frozen=True, eq=False)
class Scores:
    """The measures of one set of term weights over the held-out filings.

    Per-filing arrays have shape ``(F,)`` and hold NaN where the measure is undefined (no aspect
    word or no generic word; the plural present; all weights tied).

    Attributes
    ----------
    label : str
        What was scored ("shown, seed 20240601", "tf", ...).
    own_auc, aspect_auc : numpy.ndarray
        AUC of the filing's own terms, and of its aspect words, against its generic words.
    plural_rank : numpy.ndarray
        Rank of the absent plural among the filing's absent terms (1 = heaviest, ties share their mean rank).
    absent_terms : numpy.ndarray
        Number of absent terms the rank is among.
    other_company_share : numpy.ndarray
        Share of the filing's ``TOP_K`` heaviest absent terms that are another company's alias, noun or plural.
    frequency_spearman : numpy.ndarray
        Spearman correlation, over the words in the filing, of weight and corpus count.
    nonzero : numpy.ndarray
        Number of words with a positive weight.
    retrieval_auc : numpy.ndarray, shape (21,)
        Per company: AUC of its plural's weight, its own held-out filings against the others.

    Raises
    ------
    TypeError, ValueError
        If ``label`` is not a str, an array is not 1-D real numbers, holds an infinity, or the
        per-filing arrays differ in length (NaN is allowed: an undefined measure).

    Examples
    --------
    >>> tf = baseline_weights("tf")
    >>> scores = Scores(**vars(_score_weights(tf, "tf")))
    >>> scores.own_auc.shape, round(scores.mean_own_auc, 3) > 0.5
    ((60,), True)
    """

    label: str
    own_auc: np.ndarray
    aspect_auc: np.ndarray
    plural_rank: np.ndarray
    absent_terms: np.ndarray
    other_company_share: np.ndarray
    frequency_spearman: np.ndarray
    nonzero: np.ndarray
    retrieval_auc: np.ndarray

    def __post_init__(self):
        check_instance(self.label, "label", str)
        per_filing = ("own_auc", "aspect_auc", "plural_rank", "absent_terms", "other_company_share",
                      "frequency_spearman", "nonzero")
        for name in (*per_filing, "retrieval_auc"):
            raw = getattr(self, name)
            try:
                value = np.asarray(raw)
                if value.dtype.kind not in "biuf":  # complex, strings, objects (None, ragged rows)
                    raise TypeError
                value = value.astype(np.float64)
            except (TypeError, ValueError):
                raise TypeError(f"{name} must be a 1-D array of real numbers, got {type(raw).__name__}") from None
            if value.ndim != 1:
                raise ValueError(f"{name} must be 1-D, got shape {value.shape}")
            # NaN marks a measure undefined on a filing; an infinity is never a measure
            if np.isinf(value).any():
                raise ValueError(f"{name} must hold finite numbers or NaN (undefined), got an infinity")
            object.__setattr__(self, name, value)
        if len({getattr(self, name).size for name in per_filing}) != 1:
            raise ValueError(f"the per-filing arrays ({', '.join(per_filing)}) must have one length, got "
                             f"{[getattr(self, name).size for name in per_filing]}")

    @property
    def mean_own_auc(self) -> float:
        """Mean own-term AUC over the filings (the registered rule's value)."""
        return float(np.nanmean(self.own_auc))

    @property
    def mean_aspect_auc(self) -> float:
        """Mean aspect-word AUC over the filings that have aspect words."""
        return float(np.nanmean(self.aspect_auc))

    @property
    def top_k_share(self) -> float:
        """Share of the filings lacking their plural in which it ranks within ``TOP_K`` of the absent terms."""
        ranks = self.plural_rank[~np.isnan(self.plural_rank)]
        return float(np.mean(ranks <= TOP_K))

    @property
    def reciprocal_rank(self) -> float:
        """Mean reciprocal rank of the absent plural."""
        return float(np.nanmean(1.0 / self.plural_rank))

    @property
    def chance_reciprocal_rank(self) -> float:
        """The mean reciprocal rank of a uniformly random order of the same absent terms."""
        counts = self.absent_terms[~np.isnan(self.plural_rank)].astype(np.int64)
        return float(np.mean([np.sum(1.0 / np.arange(1, n + 1)) / n for n in counts]))

    @property
    def mean_retrieval_auc(self) -> float:
        """Mean over the companies of the plural query's AUC."""
        return float(np.mean(self.retrieval_auc))

    @property
    def mean_other_company_share(self) -> float:
        """Mean over the filings of the share of the top absent terms that name another company."""
        return float(np.mean(self.other_company_share))

    @property
    def mean_nonzero(self) -> float:
        """Mean over the filings of the number of words with a positive weight."""
        return float(np.mean(self.nonzero))

    @property
    def mean_spearman(self) -> float:
        """Mean over the filings of the weight–corpus-count Spearman correlation."""
        return float(np.nanmean(self.frequency_spearman))


def _score_weights(weights, label: str = "weights") -> Scores:
    """Every measure of term weights of the held-out filings, against
    [`filing_gold`][mlm_book.experiments.ch11_sparse.filing_gold].

    Parameters
    ----------
    weights : array_like, shape (F, V)
        Finite weights, one row per held-out filing in ``filing_gold().documents`` order (every measure
        but ``nonzero``, the count of positive weights, depends on their order only).
    label : str
        Name carried by the result.

    Returns
    -------
    Scores

    Raises
    ------
    TypeError
        If ``weights`` is not numeric or ``label`` not a str.
    ValueError
        If ``weights`` is not finite and of shape (F, V).

    Examples
    --------
    >>> s = _score_weights(baseline_weights("idf"), "idf")
    >>> s.mean_own_auc, s.top_k_share < 0.1           # generic words have the lowest idf by definition
    (1.0, True)
    """
    gold = filing_gold()
    w = as_float_array(weights, "weights", ndim=2)
    if w.shape != gold.tf.shape:
        raise ValueError(f"weights must have shape {gold.tf.shape} (held-out filings by words), got {w.shape}")
    check_instance(label, "label", str)
    F, V = w.shape
    present, generic = gold.present, gold.generic
    candidates = np.ones(V, dtype=bool)
    candidates[list(EXCLUDED_IDS)] = False
    company_terms = gold.company_terms
    nan = np.full(F, np.nan)
    own_auc, aspect_auc, plural_rank = nan.copy(), nan.copy(), nan.copy()
    absent_terms, other_share, spearman = nan.copy(), nan.copy(), nan.copy()
    for f in range(F):
        row = w[f]
        negatives = row[generic[f]]
        own = gold.own_terms[f][present[f, gold.own_terms[f]]]
        if negatives.size and own.size:
            own_auc[f] = _auc(row[own], negatives)
        aspect_words = gold.aspect[f] & present[f]
        if negatives.size and aspect_words.any():
            aspect_auc[f] = _auc(row[aspect_words], negatives)
        absent = candidates & ~present[f]
        absent_terms[f] = absent.sum()
        plural = gold.own_terms[f, 2]
        if absent[plural]:
            others = row[absent]
            plural_rank[f] = 1 + np.sum(others > row[plural]) + 0.5 * (np.sum(others == row[plural]) - 1)
        absent_ids = np.flatnonzero(absent)
        top = absent_ids[np.argsort(-row[absent_ids], kind="stable")[:TOP_K]]
        other_companies = company_terms.any(axis=0) & ~company_terms[gold.filer[f]]
        other_share[f] = other_companies[top].mean()
        words = np.flatnonzero(present[f])
        spearman[f] = _spearman(row[words], gold.corpus_count[words].astype(np.float64))
    retrieval = []
    for c in range(len(COMPANIES)):         # every company files at least one held-out filing (tested)
        relevant = gold.filer == c
        if relevant.any() and (~relevant).any():
            retrieval.append(_auc(w[relevant, gold.terms[c, 2]], w[~relevant, gold.terms[c, 2]]))
    return Scores(label=label, own_auc=own_auc, aspect_auc=aspect_auc, plural_rank=plural_rank,
                  absent_terms=absent_terms, other_company_share=other_share, frequency_spearman=spearman,
                  nonzero=(w[:, candidates] > 0).sum(axis=1), retrieval_auc=np.array(retrieval))


# ----------------------------------------------------------------------------- the encoders' weights, cached
def _check_seed(seed) -> int:
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)):
        raise TypeError(f"seed must be an integer, got {type(seed).__name__}")
    if int(seed) not in filing_encoder.SEEDS:
        raise ValueError(f"seed must be one of the filing encoders' seeds {filing_encoder.SEEDS}, got {seed}")
    return int(seed)


@functools.cache
def _seed_arrays(seed: int) -> dict:
    documents = tuple(int(d) for d in filing_gold().documents)
    return sparse_weights.weights(sparse_weights.WeightsSetup(filing_encoder.seed_setup(seed), documents))


def _seed_weights(seed: int, reading: str = "shown", pooling: str = "splade") -> np.ndarray:
    """Term weights of the held-out filings from the filing encoder at ``seed``.

    All of a seed's weights are computed in one pass (about five seconds of one core): the artefact
    [`mlm_book.artefacts.sparse_weights`][mlm_book.artefacts.sparse_weights], one run per seed.

    Parameters
    ----------
    seed : int
        One of ``filing_encoder.SEEDS``.
    reading : str
        One of ``READINGS``.
    pooling : str
        ``"splade"`` (SPLADE v2's max pooling) or ``"pmi"`` (the diagnostic of ``POOLINGS``).

    Returns
    -------
    numpy.ndarray, shape (F, V)
        Rows in ``filing_gold().documents`` order.

    Raises
    ------
    TypeError
        If ``seed`` is not an integer, or ``reading`` or ``pooling`` not a str.
    ValueError
        If ``seed`` is not one of ``filing_encoder.SEEDS``, ``reading`` not one of ``READINGS`` or
        ``pooling`` not one of ``POOLINGS``.

    Examples
    --------
    >>> w = _seed_weights(filing_encoder.SEEDS[0])  # doctest: +BOOK
    >>> w.shape, bool(w.min() >= 0)
    ((60, 867), True)
    """
    seed = _check_seed(seed)
    reading = check_choice(reading, "reading", READINGS)
    pooling = check_choice(pooling, "pooling", POOLINGS)
    return _seed_arrays(seed)[f"{reading}-{pooling}"]


def _positive_share(seed: int, reading: str = "shown") -> np.ndarray:
    """Per held-out filing, the mean over its positions of the share of words whose logit is positive.

    Returns
    -------
    numpy.ndarray, shape (F,)

    Raises
    ------
    TypeError, ValueError
        As `_seed_weights`.

    Examples
    --------
    >>> share = _positive_share(filing_encoder.SEEDS[0])  # doctest: +BOOK
    >>> share.shape, bool(((share > 0) & (share < 1)).all())
    ((60,), True)
    """
    seed = _check_seed(seed)
    reading = check_choice(reading, "reading", READINGS)
    return _seed_arrays(seed)[f"{reading}-positive"]


def _bias_spearman(seed: int) -> float:
    """Spearman correlation of the head's output bias $b_v$ with the word's corpus count ([UNK], [SEP] left out).

    Raises
    ------
    TypeError, ValueError
        If ``seed`` is not one of ``filing_encoder.SEEDS``.

    Examples
    --------
    >>> -1 <= _bias_spearman(filing_encoder.SEEDS[0]) <= 1  # doctest: +BOOK
    True
    """
    seed = _check_seed(seed)
    bias = np.asarray(filing_encoder.trained_encoder(filing_encoder.seed_setup(seed)).params["b_out"], np.float64)
    keep = np.ones(bias.size, dtype=bool)
    keep[list(EXCLUDED_IDS)] = False
    return _spearman(bias[keep], filing_gold().corpus_count[keep].astype(np.float64))


# ----------------------------------------------------------------------------- the study
@dataclass(frozen=True, eq=False)
class SparseStudy:
    """Everything the chapter shows: the scores at every seed, reading and pooling, the baselines', diagnostics.

    Attributes
    ----------
    gold : FilingGold
    seeds : tuple of int
        The filing encoders' seeds, the book's first.
    scores : dict
        ``scores[(reading, pooling)]`` is a tuple of `Scores`, one per seed.
    baselines : dict
        ``baselines[name]`` is the `Scores` of a bag-of-words baseline (``BASELINES``).
    positive : dict
        ``positive[reading]``: per seed, the mean share of positive logits at a position.
    bias_spearman : tuple of float
        Per seed, `_bias_spearman`.

    Raises
    ------
    TypeError, ValueError
        If a field is of the wrong kind, or a reading or pooling lacks a seed's scores.
    """

    gold: FilingGold
    seeds: tuple
    scores: dict
    baselines: dict
    positive: dict
    bias_spearman: tuple

    def __post_init__(self):
        check_instance(self.gold, "gold", FilingGold)
        check_seeds(self.seeds)
        for name in ("scores", "baselines", "positive"):  # before they are read: a str would fail on .get
            check_instance(getattr(self, name), name, dict)
        for reading in READINGS:
            for pooling in POOLINGS:
                found = self.scores.get((reading, pooling), ())
                if len(found) != len(self.seeds) or not all(isinstance(s, Scores) for s in found):
                    raise ValueError(f"scores[({reading!r}, {pooling!r})] must hold one Scores per seed")
            if len(self.positive.get(reading, ())) != len(self.seeds):
                raise ValueError(f"positive[{reading!r}] must hold one share per seed")
        if set(self.baselines) != set(BASELINES):
            raise ValueError(f"baselines must hold {BASELINES}")
        if len(check_instance(self.bias_spearman, "bias_spearman", tuple)) != len(self.seeds):
            raise ValueError("bias_spearman must hold one correlation per seed")
        check_finite_numbers(self.positive, "positive")
        check_finite_numbers(self.bias_spearman, "bias_spearman")

    def values(self, reading: str, measure: str, pooling: str = "splade") -> list[float]:
        """One value of ``measure`` (a `Scores` summary property) per seed.

        Raises
        ------
        TypeError, ValueError
            If ``reading``, ``measure`` or ``pooling`` is not one of its choices.
        """
        check_choice(reading, "reading", READINGS)
        check_choice(measure, "measure", MEASURES)
        check_choice(pooling, "pooling", POOLINGS)
        return [getattr(s, measure) for s in self.scores[(reading, pooling)]]


MEASURES = ("mean_own_auc", "mean_aspect_auc", "top_k_share", "reciprocal_rank", "chance_reciprocal_rank",
            "mean_retrieval_auc", "mean_spearman", "mean_other_company_share", "mean_nonzero")
"""The `Scores` summaries a `SparseStudy` reports per seed."""


@functools.cache
def results() -> SparseStudy:
    """The study on the five filing encoders (weights from the cache; scoring takes about a second).

    Examples
    --------
    >>> study = results()  # doctest: +BOOK
    >>> len(study.scores[("shown", "splade")]), study.seeds[0] == filing_encoder.SEEDS[0]
    (5, True)
    """
    seeds = tuple(filing_encoder.SEEDS)
    scores = {(reading, pooling): tuple(_score_weights(_seed_weights(seed, reading, pooling),
                                                      f"{reading}, {pooling}, seed {seed}") for seed in seeds)
              for reading in READINGS for pooling in POOLINGS}
    baselines = {name: _score_weights(baseline_weights(name), name) for name in BASELINES}
    positive = {reading: tuple(float(_positive_share(seed, reading).mean()) for seed in seeds) for reading in READINGS}
    return SparseStudy(gold=filing_gold(), seeds=seeds, scores=scores, baselines=baselines, positive=positive,
                       bias_spearman=tuple(_bias_spearman(seed) for seed in seeds))


def example_document() -> int:
    """The filing the chapter shows: the first held-out filing (by index) that lacks its filer's plural.

    Examples
    --------
    >>> d = example_document()
    >>> bool(filing_gold().plural_absent[list(filing_gold().documents).index(d)])
    True
    """
    gold = filing_gold()
    return int(gold.documents[np.flatnonzero(gold.plural_absent)[0]])


# ----------------------------------------------------------------------------- tables and figure
def _role(gold: FilingGold, row: int, word: int) -> str:
    filer = int(gold.filer[row])
    if gold.company_terms[filer, word]:
        return "own term"
    if gold.company_terms[:, word].any():
        return "another company's"
    if gold.aspect[row, word]:
        return "aspect word"
    if gold.document_share[word] >= GENERIC_SHARE:
        return "generic"
    return ""


def _ranks(w: np.ndarray) -> np.ndarray:
    """Competition ranks (1 = heaviest) of every word among the candidate words (``[UNK]``, ``[SEP]`` get 0)."""
    keep = np.ones(w.size, dtype=bool)
    keep[list(EXCLUDED_IDS)] = False
    ranks = np.zeros(w.size, dtype=np.int64)
    values = w[keep]
    ranks[keep] = 1 + np.sum(values[None, :] > values[:, None], axis=1)
    return ranks


def top_terms_table(document: int | None = None, seed: int | None = None, reading: str = "shown",
                    pooling: str = "splade", k: int = 12) -> Markdown:
    """The ``k`` heaviest terms of one held-out filing, then its filer's own terms wherever they rank.

    Each row: the term's rank among the 865 words (1 = heaviest; ties share the best rank), its
    weight, its count in the filing and in the corpus, and its role (own term, another company's
    term, aspect word, generic word).

    Parameters
    ----------
    document : int, optional
        A held-out filing; default [`example_document`][mlm_book.experiments.ch11_sparse.example_document].
    seed : int, optional
        A filing encoder's seed; default the book's.
    reading, pooling : str
        One of ``READINGS`` and one of ``POOLINGS``.
    k : int
        Rows of heaviest terms, 1 to 100.

    Raises
    ------
    TypeError
        If an argument is of the wrong kind.
    ValueError
        If ``document`` is not a held-out filing, ``seed`` not a filing encoder's, ``reading`` or
        ``pooling`` not one of its choices, or ``k`` out of range.

    Examples
    --------
    >>> lines = top_terms_table(k=2).splitlines()  # doctest: +BOOK
    >>> lines[0], len(lines)        # header, rule, two heaviest, the three own terms
    ('| rank | term | weight | count in the filing | corpus count | role |', 7)
    """
    gold = filing_gold()
    document = example_document() if document is None else check_positive_int(document, "document", minimum=0)
    if document not in gold.documents.tolist():
        raise ValueError(f"document must be a held-out filing, one of {gold.documents.tolist()}, got {document}")
    seed = filing_encoder.SEEDS[0] if seed is None else _check_seed(seed)
    if check_positive_int(k, "k") > 100:
        raise ValueError(f"k must be at most 100, got {k}")
    row = gold.documents.tolist().index(document)
    w = _seed_weights(seed, reading, pooling)[row]
    ranks = _ranks(w)
    words = filing_encoder.filing_world().vocabulary.words
    keep = np.flatnonzero(ranks > 0)
    order = keep[np.argsort(-w[keep], kind="stable")[:k]].tolist()
    order += [int(v) for v in gold.own_terms[row] if int(v) not in order]
    rows = [(int(ranks[v]), words[v], float(w[v]), int(gold.tf[row, v]), int(gold.corpus_count[v]),
             _role(gold, row, v)) for v in order]
    return table(["rank", "term", "weight", "count in the filing", "corpus count", "role"], rows,
                 formats=["d", None, ".2f", "d", "d", None])


_ROWS = {"mean_own_auc": ("own terms above generic words (AUC)", ".3f"),
         "mean_aspect_auc": ("aspect words above generic words (AUC)", ".3f"),
         "top_k_share": (f"absent plural in the top {TOP_K} absent terms (share of filings)", ".2f"),
         "reciprocal_rank": ("absent plural, mean reciprocal rank", ".4f"),
         "mean_other_company_share": (f"another company's terms among the top {TOP_K} absent terms (share)", ".3f"),
         "mean_retrieval_auc": ("plural as a query, its company's filings first (AUC)", ".3f"),
         "mean_spearman": ("Spearman of a filing's weights and its words' corpus counts", ".3f"),
         "mean_nonzero": ("words with a positive weight (mean per filing)", ".0f")}


def summary_table(study: SparseStudy | None = None, pooling: str = "splade") -> Markdown:
    """Every measure for both readings (book's seed, then mean ± sd over the seeds), and the bag-of-words baselines.

    Parameters
    ----------
    study : SparseStudy, optional
        Default [`results`][mlm_book.experiments.ch11_sparse.results].
    pooling : str
        One of ``POOLINGS``.

    Raises
    ------
    TypeError
        If ``study`` is not a `SparseStudy` or ``pooling`` not a str.
    ValueError
        If ``pooling`` is not one of ``POOLINGS``.

    Examples
    --------
    >>> print(summary_table().splitlines()[0])  # doctest: +BOOK
    | measure | shown | masked | tf | idf | tf-idf |
    """
    study = results() if study is None else check_instance(study, "study", SparseStudy)
    pooling = check_choice(pooling, "pooling", POOLINGS)
    rows = []
    for measure, (label, fmt) in _ROWS.items():
        cells = [label] + [seed_band(study.values(reading, measure, pooling), fmt) for reading in READINGS]
        if measure == "mean_other_company_share":
            cells += ["—"] * len(BASELINES)                 # a baseline's absent terms all weigh zero
        else:
            cells += [format(getattr(study.baselines[name], measure), fmt) for name in BASELINES]
        rows.append(cells)
    return table(["measure", *READINGS, *BASELINES], rows)


def diagnosis_table(study: SparseStudy | None = None) -> Markdown:
    """Why the pooling gives what it gives: the share of positive logits at a position by reading, and the
    Spearman correlation of the head's output bias with corpus counts (book's seed, then mean ± sd).

    Raises
    ------
    TypeError
        If ``study`` is not a `SparseStudy`.

    Examples
    --------
    >>> print(diagnosis_table().splitlines()[0])  # doctest: +BOOK
    | quantity | book's seed (mean ± sd over seeds) |
    """
    study = results() if study is None else check_instance(study, "study", SparseStudy)
    rows = [(f"words with a positive logit at a position, {reading} (share)", seed_band(study.positive[reading]))
            for reading in READINGS]
    rows.append(("Spearman of the output bias and corpus count", seed_band(study.bias_spearman)))
    return table(["quantity", "book's seed (mean ± sd over seeds)"], rows)


def figure_sparse(study: SparseStudy | None = None):
    r"""Two panels. A: the example filing's SPLADE weights (book's seed, shown reading) against the words'
    corpus counts, by role. B: per seed, the mean AUC of own terms and of aspect words against generic
    words, SPLADE (filled) and the PMI diagnosis (hollow) at both readings, a bar at each one's mean over the
    seeds, with the bag-of-words baselines. Both legends sit below their panels.

    Returns
    -------
    DescribedFigure
        The drawing, with its alt text (the example filing's words and the ranges of the weights and AUCs,
        computed) and caption.

    Raises
    ------
    TypeError
        If ``study`` is not a `SparseStudy`.

    Examples
    --------
    >>> drawn = figure_sparse()  # doctest: +BOOK
    >>> len(drawn.figure.axes), drawn.figure.axes[0].get_xscale()
    (2, 'log')
    >>> drawn.alt.startswith("Two panels. A: the SPLADE weight of every word")  # doctest: +BOOK
    True
    """
    from matplotlib.lines import Line2D

    from mlm_book.figures import PALETTE, WIDE, describe, subplots

    study = results() if study is None else check_instance(study, "study", SparseStudy)
    gold = study.gold
    row = gold.documents.tolist().index(example_document())
    w = _seed_weights(study.seeds[0])[row]
    words = filing_encoder.filing_world().vocabulary.words
    fig, (ax, bx) = subplots(1, 2, width=WIDE, height=4.6, gridspec_kw={"width_ratios": [1.45, 1.0]})
    count = np.maximum(gold.corpus_count, 1)
    candidates = np.ones(w.size, dtype=bool)
    candidates[list(EXCLUDED_IDS)] = False
    present = gold.present[row]
    own = gold.company_terms[gold.filer[row]]
    groups = [("absent from the filing", candidates & ~present & ~own, PALETTE["grey"], 7, "o", True),
              ("in the filing, other", present & ~gold.generic[row] & ~gold.aspect[row] & ~own, PALETTE["blue"],
               10, "o", False),
              ("generic", gold.generic[row], PALETTE["orange"], 16, "s", False),
              ("aspect word", gold.aspect[row] & present, PALETTE["green"], 20, "D", False),
              ("own term", own, PALETTE["vermillion"], 60, "*", False)]
    for label, mask, colour, size, marker, hollow in groups:
        kwargs = {"facecolors": "none", "edgecolors": colour} if hollow else {"color": colour}
        ax.scatter(count[mask], w[mask], s=size, marker=marker, label=label, linewidths=0.6, **kwargs)
    offsets = {0: ((7, 2), "left"), 1: ((-7, 2), "right"), 2: ((7, -3), "left")}     # alias, noun, plural
    for slot, v in enumerate(gold.own_terms[row].tolist()):
        (dx, dy), align = offsets[slot]
        ax.annotate(words[v] + ("" if present[v] else " (absent)"), (count[v], w[v]), xytext=(dx, dy),
                    textcoords="offset points", fontsize=9, ha=align, va="center", color=PALETTE["vermillion"],
                    bbox={"boxstyle": "round,pad=0.1", "facecolor": "white", "edgecolor": "none", "alpha": 0.85})
    ax.set_xscale("log")
    ax.set_xlabel("count of the word in the corpus")
    ax.set_ylabel(r"SPLADE weight $w_v$")
    ax.set_title(f"A. one held-out filing ({COMPANIES[int(gold.filer[row])].alias}), book's seed", loc="left")
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.14), ncols=3, handletextpad=0.3, columnspacing=0.8)
    measures = (("mean_own_auc", "own terms"), ("mean_aspect_auc", "aspect words"))
    series = [(reading, pooling, colour, pooling == "pmi") for pooling in POOLINGS
              for reading, colour in zip(READINGS, (PALETTE["blue"], PALETTE["sky"]))]
    for m, (measure, _) in enumerate(measures):
        for j, (reading, pooling, colour, hollow) in enumerate(series):
            values = study.values(reading, measure, pooling)
            x = m + (j - 1.5) * 0.16 + np.linspace(-0.03, 0.03, len(values))
            kwargs = {"facecolors": "none", "edgecolors": colour} if hollow else {"color": colour}
            name = "SPLADE" if pooling == "splade" else "PMI (diagnosis)"
            bx.scatter(x, values, s=16, zorder=3, label=f"{name}, {reading}" if m == 0 else None, **kwargs)
            bx.hlines(np.mean(values), x[0] - 0.04, x[-1] + 0.04, color=colour, lw=1.6, zorder=4)
        for name, colour, style in zip(BASELINES, (PALETTE["black"], PALETTE["orange"], PALETTE["green"]),
                                       (":", "--", "-.")):
            bx.hlines(getattr(study.baselines[name], measure), m - 0.4, m + 0.4, color=colour, linestyles=style,
                      lw=1.2, label=name if m == 0 else None)
    bx.axhline(0.5, color=PALETTE["grey"], lw=0.8)
    bx.set_xticks(range(len(measures)), [label for _, label in measures])
    bx.set_xlim(-0.55, len(measures) - 0.45)
    bx.set_ylim(-0.03, 1.05)
    bx.set_ylabel("AUC against generic words")
    bx.set_title("B. five seeds; bag-of-words lines", loc="left")
    handles, labels = bx.get_legend_handles_labels()
    handles.append(Line2D([], [], color=PALETTE["black"], lw=1.6))
    labels.append("mean of the seeds")
    bx.legend(handles, labels, loc="upper center", bbox_to_anchor=(0.5, -0.1), ncols=2, handletextpad=0.3,
              columnspacing=0.8)
    alias, _, plural = (words[v] for v in gold.own_terms[row].tolist())
    kinds = [measure for measure, _ in measures]

    def auc_range(pooling):
        values = [v for reading in READINGS for m in kinds for v in study.values(reading, m, pooling)]
        return f"{min(values):.2f} and {max(values):.2f}"

    alt = (f"Two panels. A: the SPLADE weight of every word against its corpus count for one held-out {alias} "
           f"filing at the book's seed; every word has a positive weight, between {w[candidates].min():.1f} and "
           f"{w[candidates].max():.1f}, rising with corpus count, generic words at the top, the absent plural "
           f"'{plural}' among the low absent words. B: per seed, the mean AUC of own terms and aspect words "
           f"against generic words: SPLADE between {auc_range('splade')}, below term frequency, idf and tf-idf; "
           f"the PMI diagnosis between {auc_range('pmi')}.")
    caption = (f"The filing encoder's head as SPLADE weights. A: one held-out filing, each word's weight against "
               f"its count in the corpus, by role. B: how well the weights put a filing's own terms and aspect "
               f"words above its generic words, at {len(study.seeds)} seeds (dots, a bar at their mean) and for "
               f"bag-of-words weights (lines).")
    return describe(fig, alt=alt, caption=caption)


# ----------------------------------------------------------------------------- claims
def _rule_value(measure: str, holds, margin) -> dict:
    """``over_seeds`` of ``measure``, counting the seeds where ``holds``; ``margin(v)`` is a seed's signed distance
    from the rule's threshold."""
    values = results().values("shown", measure)
    return over_seeds(values, sum(bool(holds(v)) for v in values), margins=[margin(v) for v in values])


def _salience_claim() -> dict:
    return _rule_value("mean_own_auc", lambda v: v > SALIENCE_THRESHOLD, lambda v: v - SALIENCE_THRESHOLD)


def _aspect_claim() -> dict:
    return _rule_value("mean_aspect_auc", lambda v: v > ASPECT_THRESHOLD, lambda v: v - ASPECT_THRESHOLD)


def _expansion_claim() -> dict:
    return _rule_value("top_k_share", lambda v: v >= EXPANSION_SHARE, lambda v: v - EXPANSION_SHARE)


def _retrieval_claim() -> dict:
    tf = results().baselines["tf"].mean_retrieval_auc
    return _rule_value("mean_retrieval_auc", lambda v: v > tf, lambda v: v - tf)


_RULE_NAMES = ("own terms above generic words", "aspect words above generic words",
               f"absent plural within the top {TOP_K} absent terms", "plural as a query, above term frequency")


def rules_table() -> Markdown:
    """The four rules fixed before the numbers: each rule, its value at the book's seed and over the seeds, and
    the verdict over the five seeds (all computed by [`mlm_book.ledger.verify`][mlm_book.ledger.verify]).

    Raises
    ------
    RuntimeError
        If a rule's verdict differs from the one the module states (its claim's ``expected``).

    Examples
    --------
    >>> print(rules_table().splitlines()[0])  # doctest: +BOOK
    | question | rule (fixed before computing) | book's seed | mean ± sd | seeds holding | verdict |
    """
    found = verify(claims=CLAIMS)
    rows = []
    for name, result in zip(_RULE_NAMES, found):
        if not result.passed:
            raise RuntimeError(f"the rule '{name}' gives {result.verdict or result.error}, not the "
                               f"{result.claim.expected} the module states")
        value = result.value
        rows.append((name, result.claim.rule, float(value["book"]), value["mean ± sd"], value["seeds holding"],
                     result.verdict))
    return table(["question", "rule (fixed before computing)", "book's seed", "mean ± sd", "seeds holding",
                  "verdict"], rows, formats=[None, None, ".3f", None, None, None])


_QUANTITY = ("The filing encoder's masked-LM head as SPLADE term weights, max over a held-out filing's positions of "
             "log(1 + ReLU(logit)), each token read at the centre of its own window (5 seeds, 60 held-out filings): ")

PRESTATED = (
    Claim("Q13a", _QUANTITY + "mean AUC of each filing's aspect words against its generic words", seed="—",
          rule=f"mean AUC > {ASPECT_THRESHOLD:g} at a seed", compute=_aspect_claim, accept=lambda v: True,
          expected="not reproduced", section="a-masked-lm-head-as-a-sparse-retriever"),
    Claim("Q13b", _QUANTITY + f"share of the filings lacking their filer's plural in which it ranks within the top "
          f"{TOP_K} of their absent terms", seed="—", rule=f"share ≥ {EXPANSION_SHARE:g} at a seed",
          compute=_expansion_claim, accept=lambda v: True, expected="not reproduced",
          section="a-masked-lm-head-as-a-sparse-retriever"),
    Claim("Q13c", _QUANTITY + "each company's plural as a one-word query, its own held-out filings relevant: mean AUC "
          "over the companies", seed="—", rule="above the mean AUC of the plural's term frequency, at a seed",
          compute=_retrieval_claim, accept=lambda v: True, expected="not reproduced",
          section="a-masked-lm-head-as-a-sparse-retriever"),
)
"""Q13's other rules (Q13a–Q13c), fixed before the numbers, judged over the seeds and registered."""

CLAIMS = (
    Claim("Q13", _QUANTITY + "mean AUC of each filing's own terms (its filer's alias, noun and plural) against its "
          f"generic words (in at least {GENERIC_SHARE:g} of the training filings)", seed="—",
          rule=f"mean AUC > {SALIENCE_THRESHOLD:g} at a seed", compute=_salience_claim, accept=lambda v: True,
          expected="not reproduced", section="a-masked-lm-head-as-a-sparse-retriever"),
    *PRESTATED,
)
"""Open question Q13's claims: the salience rule (``SALIENCE_THRESHOLD``) and ``PRESTATED``."""

