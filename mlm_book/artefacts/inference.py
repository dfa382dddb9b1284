r"""Chapter 8, sentence pairs: does one filing sentence entail, contradict or say nothing about another?

**The world.** A *fact sentence* is a news sentence of the filings generator that names its
company and reports one aspect moving in one direction ("at gannet debt advanced 11
percent during the year"). The generator only writes upward direction words, so a world
where facts can disagree needs falls: [`with_falls`][mlm_book.artefacts.inference.with_falls] rewrites each direction word
of a generated corpus, with probability [`FALL_SHARE`][mlm_book.artefacts.inference.FALL_SHARE], as one of
[`FALLING_WORDS`][mlm_book.artefacts.inference.FALLING_WORDS] and reverses the news it reports. The generator and
chapter 6's corpus are untouched: the rewrite acts on fresh corpora of chapter 6's
configuration (`POOL_SEED`, `TEST_SEED`), read through chapter 6's vocabulary. That
vocabulary never saw a falling number, so every falling verb reaches the encoder as
``[UNK]``.

**The task.** A pair (A, B) of fact sentences is labelled by the facts alone:

* **entails**: B states A's fact again: same company, same aspect, same direction (another
  sentence, usually another template, number and year);
* **contradicts**: same company and aspect, the other direction;
* **neutral**: B is about another aspect of A's company, or about A's aspect at another
  company.

Facts are read as standing statements about a company (the filings' years are ignored),
which is what makes a restatement from another filing an entailment.

**The models.** The `[CLS]` head of [`mlm_book.nn.finetune`][mlm_book.nn.finetune], full fine-tuning, from chapter 8's
MLM + NSP encoder and from the same encoder untrained, on `LABELLED_PAIRS` labelled pairs
(a fresh draw per seed), with two schedules: the chapter's news schedule (200 steps)
and five times as long (1000 steps, about 8 epochs), added after a one-seed trial showed
200 steps too short for a relation between two sentences.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, replace

import numpy as np

from mlm_book import artefacts, cache
from mlm_book.artefacts import filings, pair_encoder
from mlm_book.finance import corpus as corpus_module
from mlm_book.finance.world import ASPECTS, COMPANIES, DIRECTION_WORDS, ENTITY_ORG
from mlm_book.nn import finetune, pairs
from mlm_book.nn.finetune import FineTuneConfig
from mlm_book.validation import (
    as_int_array,
    check_choice,
    check_generator,
    check_instance,
    check_positive_int,
    check_probability,
)

__all__ = ["FALLING_WORDS", "FALL_SHARE", "POOL_SEED", "TEST_SEED", "DOCUMENTS", "LABELLED_PAIRS", "TEST_PAIRS",
           "MAX_PAIRS", "KINDS", "KIND_SHARES", "RELATIONS", "RELATION_OF_KIND", "SCHEDULES", "SOURCES", "SEEDS",
           "with_falls", "FactSentences", "fact_sentences", "FactPairs", "fact_pairs", "held_out_pairs",
           "word_overlap", "InferenceRun", "book_run", "run_predictions", "ARTEFACT_KINDS"]

FALLING_WORDS: tuple[str, ...] = ("fell", "declined", "decreased", "dropped", "slipped", "eased")
"""Six downward direction words; none is in chapter 6's vocabulary (each reads as ``[UNK]``)."""
FALL_SHARE = 0.5
"""Probability that `with_falls` turns a direction word into a falling one."""
POOL_SEED, TEST_SEED = 7003, 7004
"""Seeds of the two fresh corpora: labelled pairs come from the first, test pairs from the second."""
DOCUMENTS = 1500
"""Filings in each fresh corpus (each gives about 1150 fact sentences)."""
LABELLED_PAIRS = 4096
"""Labelled training pairs per run."""
TEST_PAIRS = 3000
"""Test pairs (one fixed draw from the test corpus)."""
MAX_PAIRS = 100_000
"""The most pairs `fact_pairs` draws at once (its working memory grows with pairs × sentences)."""
KINDS = ("restates", "reverses", "other aspect", "other company")
"""How B relates to A, finer than the label: the two kinds of neutral pair are told apart."""
KIND_SHARES = (1 / 3, 1 / 3, 1 / 6, 1 / 6)
"""Probability of each kind in a draw: the three labels equally often."""
RELATIONS = ("entails", "contradicts", "neutral")
"""The labels, in class order."""
RELATION_OF_KIND = (0, 1, 2, 2)
"""The label of each kind."""
SCHEDULES = {"200 steps": pair_encoder.FINE_TUNE, "1000 steps": replace(pair_encoder.FINE_TUNE, steps=1000)}
"""The two fine-tuning schedules: the chapter's news schedule, and five times as many steps."""
SOURCES = {"nsp": "MLM + NSP pre-trained", "scratch": "from scratch"}
"""Where each fine-tuning starts."""
SEEDS = pair_encoder.SEEDS
"""Training seeds (the book's first); seed s fine-tunes the pre-training of seed s."""


# ----------------------------------------------------------------------------- the world
def with_falls(corpus: corpus_module.Corpus, rng: np.random.Generator,
               share: float = FALL_SHARE) -> tuple[np.ndarray, np.ndarray]:
    """Rewrite each direction word of ``corpus`` as a falling word with probability ``share``.

    Returns
    -------
    tokens : ndarray of str, shape (n,)
        The corpus's tokens with the falls written in (a falling word drawn uniformly).
    fallen : ndarray of bool, shape (n,)
        Where a direction word was turned: there the news reverses (a fall in costs is good news).

    Examples
    --------
    >>> from mlm_book.finance.corpus import CorpusConfig, generate_corpus
    >>> corpus = generate_corpus(CorpusConfig(n_documents=20), np.random.default_rng(0))
    >>> tokens, fallen = with_falls(corpus, np.random.default_rng(1))
    >>> bool(np.isin(tokens[fallen], FALLING_WORDS).all()), bool(np.isin(corpus.tokens[fallen], DIRECTION_WORDS).all())
    (True, True)
    """
    check_instance(corpus, "corpus", corpus_module.Corpus)
    rng = check_generator(rng)
    share = check_probability(share, "share")
    direction = np.isin(corpus.tokens, DIRECTION_WORDS)
    fallen = direction & (rng.random(corpus.tokens.size) < share)
    tokens = corpus.tokens.copy()
    tokens[fallen] = np.asarray(FALLING_WORDS)[rng.integers(0, len(FALLING_WORDS), int(fallen.sum()))]
    return tokens, fallen


@dataclass(frozen=True, eq=False)
class FactSentences:
    """The fact sentences of one rewritten corpus, with their facts.

    Attributes
    ----------
    text : Sentences
        Every sentence of the corpus (chapter 6's vocabulary); the pairs index into it.
    rows : ndarray of int, shape (M,)
        Which sentences of ``text`` are fact sentences.
    company, aspect, direction : ndarray of int, shape (M,)
        Index into `COMPANIES` and `ASPECTS`; +1 for a rise, -1 for a fall.
    words : tuple of str, shape (M,)
        Each fact sentence as written (falling verbs included).

    Raises
    ------
    TypeError, ValueError
        If ``text`` is not `Sentences`, ``rows`` not at least two increasing indices of its
        sentences, a fact not one value in range per row (``direction`` +1 or -1), or ``words``
        not one str per row.

    Examples
    --------
    Two facts, the first company's and the second's first aspect, one rising and one falling (two
    sentences of chapter 6's filings stand in for their sentences):

    >>> text = pair_encoder.sentences()
    >>> facts = FactSentences(text, [0, 1], [0, 1], [0, 0], [1, -1], ("revenue rose", "revenue fell"))
    >>> facts.count, facts.rows.dtype
    (2, dtype('int64'))
    >>> FactSentences(text, [0, 1], [0, 1], [0, 0], [1, 0], ("revenue rose", "revenue held"))
    Traceback (most recent call last):
    ...
    ValueError: direction must be +1 or -1
    """

    text: pair_encoder.Sentences
    rows: np.ndarray
    company: np.ndarray
    aspect: np.ndarray
    direction: np.ndarray
    words: tuple

    def __post_init__(self):
        check_instance(self.text, "text", pair_encoder.Sentences)
        rows = as_int_array(self.rows, "rows", ndim=1)
        if rows.size < 2 or rows.min() < 0 or rows.max() >= self.text.count or np.any(np.diff(rows) <= 0):
            raise ValueError(f"rows must be at least two increasing sentence indices in [0, {self.text.count})")
        bounds = {"company": (0, len(COMPANIES) - 1), "aspect": (0, len(ASPECTS) - 1), "direction": (-1, 1)}
        for name, (low, high) in bounds.items():
            array = as_int_array(getattr(self, name), name, ndim=1)
            if array.shape != rows.shape or array.min() < low or array.max() > high:
                raise ValueError(f"{name} must hold one value in [{low}, {high}] per fact sentence ({rows.size})")
            object.__setattr__(self, name, array)
        if np.any(self.direction == 0):
            raise ValueError("direction must be +1 or -1")
        if not isinstance(self.words, tuple) or len(self.words) != rows.size or not all(
                isinstance(w, str) for w in self.words):
            raise TypeError(f"words must be a tuple of {rows.size} str")
        object.__setattr__(self, "rows", rows)

    @property
    def count(self) -> int:
        """Number of fact sentences."""
        return int(self.rows.size)


def fact_sentences(seed: int) -> FactSentences:
    """The fact sentences of the rewritten fresh corpus drawn with ``seed`` (`POOL_SEED` or `TEST_SEED`).

    Examples
    --------
    >>> facts = fact_sentences(TEST_SEED)
    >>> facts.count > 1000, sorted(set(facts.direction.tolist()))
    (True, [-1, 1])
    """
    seed = check_positive_int(seed, "seed", minimum=0)
    if seed not in (POOL_SEED, TEST_SEED):
        raise ValueError(f"seed must be POOL_SEED ({POOL_SEED}) or TEST_SEED ({TEST_SEED}), got {seed}")
    return _fact_sentences(seed)


@functools.cache
def _fact_sentences(seed: int) -> FactSentences:
    return _facts_of(seed, DOCUMENTS)


@functools.cache
def _facts_of(seed: int, documents: int) -> FactSentences:
    world = filings.filings()
    corpus = corpus_module.generate_corpus(replace(world.setup.corpus, n_documents=documents),
                                           np.random.default_rng(seed))
    tokens, fallen = with_falls(corpus, np.random.default_rng([seed, 1]))
    text = pair_encoder.sentences_of(corpus, world.vocabulary.encode(tokens.tolist()))
    index = corpus.sentence - corpus.sentence.min()
    company = np.full(text.count, -1)
    named = corpus.entity == ENTITY_ORG
    company[index[named]] = corpus.alias[named]
    direction = np.zeros(text.count, dtype=np.int64)
    moved = np.isin(corpus.tokens, DIRECTION_WORDS)
    np.add.at(direction, index[moved], np.where(fallen[moved], -1, 1))
    aspect = np.full(text.count, -1)
    aspect[index[corpus.aspect >= 0]] = corpus.aspect[corpus.aspect >= 0]
    # one direction word and one named company: the sentence states exactly one fact
    count = np.bincount(index[moved], minlength=text.count)
    rows = np.flatnonzero((company >= 0) & (count == 1))
    real = corpus.tokens != corpus_module.SEP
    words = tuple(" ".join(tokens[real & (index == row)]) for row in rows)
    return FactSentences(text, rows, company[rows], aspect[rows], direction[rows], words)


@dataclass(frozen=True, eq=False)
class FactPairs:
    """Pairs of fact sentences (indices into a `FactSentences`), their kinds and labels."""

    a: np.ndarray
    b: np.ndarray
    kind: np.ndarray
    label: np.ndarray

    def __post_init__(self):
        for name in ("a", "b", "kind", "label"):
            object.__setattr__(self, name, as_int_array(getattr(self, name), name, ndim=1))
        if not self.a.size or not self.a.shape == self.b.shape == self.kind.shape == self.label.shape:
            raise ValueError("a, b, kind and label must hold one value per pair (at least one pair)")
        if self.kind.min() < 0 or self.kind.max() >= len(KINDS):
            raise ValueError(f"kind must index KINDS (0 .. {len(KINDS) - 1})")
        if not np.array_equal(self.label, np.asarray(RELATION_OF_KIND)[self.kind]):
            raise ValueError("label must be RELATION_OF_KIND of each pair's kind")


def fact_pairs(facts: FactSentences, n: int, rng: np.random.Generator) -> FactPairs:
    """Draw ``n`` pairs: A uniformly among the sentences that allow every kind, the kind by `KIND_SHARES`, B uniformly among the sentences of that kind.

    Examples
    --------
    >>> p = fact_pairs(fact_sentences(TEST_SEED), 600, np.random.default_rng(0))
    >>> np.bincount(p.label, minlength=3).tolist()
    [192, 206, 202]
    """
    check_instance(facts, "facts", FactSentences)
    n = check_positive_int(n, "n")
    if n > MAX_PAIRS:
        raise ValueError(f"n must be at most {MAX_PAIRS} pairs, got {n}")
    rng = check_generator(rng)
    same_company = facts.company[:, None] == facts.company[None, :]
    same_aspect = facts.aspect[:, None] == facts.aspect[None, :]
    same_direction = facts.direction[:, None] == facts.direction[None, :]
    others = ~np.eye(facts.count, dtype=bool)
    allowed = np.stack([same_company & same_aspect & same_direction & others,
                        same_company & same_aspect & ~same_direction,
                        same_company & ~same_aspect,
                        ~same_company & same_aspect])                  # (kind, A, B)
    eligible = np.flatnonzero(allowed.any(axis=2).all(axis=0))
    if eligible.size == 0:
        raise ValueError("facts must hold a sentence that allows every kind of pair")
    a = eligible[rng.integers(0, eligible.size, n)]
    kind = rng.choice(len(KINDS), size=n, p=KIND_SHARES)
    b = np.empty(n, dtype=np.int64)
    for k in range(len(KINDS)):
        chosen = np.flatnonzero(kind == k)
        u = rng.random(chosen.size)
        for start in range(0, chosen.size, 4096):              # bounded memory: (4096, M) at a time
            rows = chosen[start:start + 4096]
            options = allowed[k, a[rows]]
            # the j-th allowed B of each row, j uniform: a cumulative count finds it without a loop
            j = (u[start:start + 4096] * options.sum(axis=1)).astype(np.int64)
            b[rows] = (options.cumsum(axis=1) <= j[:, None]).sum(axis=1)
    return FactPairs(a, b, kind, np.asarray(RELATION_OF_KIND)[kind])


@functools.cache
def held_out_pairs() -> FactPairs:
    """The fixed test draw: `TEST_PAIRS` pairs of the test corpus."""
    return fact_pairs(fact_sentences(TEST_SEED), TEST_PAIRS, np.random.default_rng(TEST_SEED))


def _inputs(facts: FactSentences, pairs_: FactPairs, config: pairs.PairEncoderConfig):
    return pair_encoder.pair_inputs(facts.text, facts.rows[pairs_.a], facts.rows[pairs_.b], config)


def word_overlap(facts: FactSentences, pairs_: FactPairs) -> np.ndarray:
    """Jaccard overlap of each pair's two sets of token ids (what a bag-of-words reader compares).

    Examples
    --------
    >>> facts = fact_sentences(TEST_SEED)
    >>> overlap = word_overlap(facts, FactPairs([0], [0], [0], [0]))
    >>> float(overlap[0])
    1.0
    """
    check_instance(facts, "facts", FactSentences)
    check_instance(pairs_, "pairs_", FactPairs)
    if max(pairs_.a.max(), pairs_.b.max()) >= facts.count or min(pairs_.a.min(), pairs_.b.min()) < 0:
        raise ValueError(f"pairs_ must index the {facts.count} fact sentences of facts")
    ids, lengths = facts.text.ids, facts.text.lengths
    out = np.empty(pairs_.a.size)
    for k, (i, j) in enumerate(zip(facts.rows[pairs_.a], facts.rows[pairs_.b])):
        first, second = set(ids[i, :lengths[i]].tolist()), set(ids[j, :lengths[j]].tolist())
        out[k] = len(first & second) / len(first | second)
    return out


# ----------------------------------------------------------------------------- the runs
@dataclass(frozen=True)
class InferenceRun:
    """One fine-tuning of the relation classifier: where it starts, its schedule and seed, and the sizes it reads.

    Attributes
    ----------
    source : {"nsp", "scratch"}
        Start from the MLM + NSP pre-training ``pretraining`` or from its shape untrained.
    schedule : str
        The schedule's name (a key of `SCHEDULES` in the book).
    fine_tune : FineTuneConfig
        The schedule (its seed is replaced by ``seed``).
    seed : int
    pretraining : PairSetup
        The pre-trained encoder (chapter 8's MLM + NSP at ``seed`` in the book).
    documents, labelled_pairs, test_pairs : int
        `DOCUMENTS`, `LABELLED_PAIRS`, `TEST_PAIRS` in the book.

    Examples
    --------
    >>> run = book_run("scratch", "1000 steps", SEEDS[0])
    >>> again = InferenceRun(run.source, run.schedule, run.fine_tune, run.seed, run.pretraining)   # its fields are checked
    >>> again.fine_tune.steps
    1000
    """

    source: str
    schedule: str
    fine_tune: FineTuneConfig
    seed: int
    pretraining: pair_encoder.PairSetup
    documents: int = DOCUMENTS
    labelled_pairs: int = LABELLED_PAIRS
    test_pairs: int = TEST_PAIRS

    def __post_init__(self):
        check_choice(self.source, "source", SOURCES)
        check_instance(self.schedule, "schedule", str)
        check_instance(self.fine_tune, "fine_tune", FineTuneConfig)
        check_instance(self.pretraining, "pretraining", pair_encoder.PairSetup)
        for name in ("documents", "labelled_pairs", "test_pairs"):
            check_positive_int(getattr(self, name), name)
        check_positive_int(self.seed, "seed", minimum=0)


def book_run(source: str, schedule: str, seed: int) -> InferenceRun:
    """The book's run of ``source`` under the schedule named ``schedule`` at ``seed``.

    Examples
    --------
    >>> run = book_run("nsp", "200 steps", SEEDS[0])
    >>> run.fine_tune.steps, run.pretraining.seed == SEEDS[0]
    (200, True)

    Raises
    ------
    TypeError, ValueError
        If ``schedule`` is not a name of `SCHEDULES`, or ``source`` or ``seed`` is not one
        [`InferenceRun`][mlm_book.artefacts.inference.InferenceRun] takes.
    """
    check_choice(schedule, "schedule", SCHEDULES)
    return InferenceRun(source, schedule, SCHEDULES[schedule], seed,
                        replace(pair_encoder.VARIANTS["nsp"], seed=seed))


def _held_out(run: InferenceRun) -> FactPairs:
    if (run.documents, run.test_pairs) == (DOCUMENTS, TEST_PAIRS):
        return held_out_pairs()
    return fact_pairs(_facts_of(TEST_SEED, run.documents), run.test_pairs, np.random.default_rng(TEST_SEED))


def _run(run: InferenceRun) -> dict:
    """Fine-tune one classifier and return its test predictions and its losses."""
    pool, test = _facts_of(POOL_SEED, run.documents), _facts_of(TEST_SEED, run.documents)
    model = pair_encoder.pretrain(run.pretraining)
    config = model.config
    params = model.params if run.source == "nsp" else pairs.init_pair_params(config, np.random.default_rng(run.seed))
    train = fact_pairs(pool, run.labelled_pairs, np.random.default_rng([run.seed, POOL_SEED]))
    tokens, segments = _inputs(pool, train, config)
    tuned = finetune.fine_tune(params, config, tokens, segments, train.label,
                               replace(run.fine_tune, seed=run.seed), n_classes=len(RELATIONS))
    test_tokens, test_segments = _inputs(test, _held_out(run), config)
    predicted = finetune.classify(tuned, test_tokens, test_segments).argmax(axis=1)
    return {"predicted": predicted.astype(np.int64), "losses": tuned.losses}


_KEY = {"falling": list(FALLING_WORDS), "share": FALL_SHARE, "seeds": [POOL_SEED, TEST_SEED],
        "kinds": list(KIND_SHARES)}


def _config(run: InferenceRun) -> dict:
    from dataclasses import asdict
    return {**asdict(run), **_KEY}


@functools.cache
def run_predictions(run: InferenceRun) -> dict:
    """The stored result of ``run`` (``predicted``: test class indices; ``losses``), built on a miss."""
    check_instance(run, "run", InferenceRun)
    arrays, _ = cache.cached("pair-inference", _config(run), [artefacts.key_source("inference")], lambda: _run(run))
    return arrays


def _is_built(run: InferenceRun) -> bool:
    entry = cache.entry_for("pair-inference", _config(run), [artefacts.key_source("inference")])
    return cache.load(entry) is not None


def _tiny() -> InferenceRun:
    tiny_pair = pair_encoder.ARTEFACT_KINDS[0].tiny()[0]
    return InferenceRun("nsp", "tiny", replace(pair_encoder.FINE_TUNE, steps=2, batch_size=4), 0, tiny_pair,
                        documents=300, labelled_pairs=16, test_pairs=16)


# ----------------------------------------------------------------------------- the declaration (not keyed)
ARTEFACT_KINDS = (artefacts.Kind(
    name="inference", chapter=8, summary="chapter 8's relation classifiers: two starts, two schedules, 5 seeds",
    modules=("mlm_book.artefacts.inference",), after=("pair",),
    setups=lambda: tuple(book_run(source, schedule, seed) for schedule in reversed(list(SCHEDULES))
                         for source in SOURCES for seed in SEEDS),
    is_built=_is_built, build=run_predictions,
    # seconds on one core, measured on the cold build of 2026-12-02
    cost=lambda run: 0.0059 * run.fine_tune.steps * run.labelled_pairs / LABELLED_PAIRS,
    describe=lambda run: f"{run.source}, {run.schedule}, seed {run.seed}", tiny=_tiny),)
