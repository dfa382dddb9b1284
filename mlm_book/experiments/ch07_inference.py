r"""Chapter 7, sentence pairs: does one filing sentence entail, contradict or say nothing about another?

**The world.** A *fact sentence* is a news sentence of the filings generator that names its
company and reports one aspect moving in one direction ("at gannet debt advanced 11
percent during the year"). The generator only writes upward direction words, so a world
where facts can disagree needs falls: [`with_falls`][mlm_book.experiments.ch07_inference.with_falls] rewrites each direction word
of a generated corpus, with probability [`FALL_SHARE`][mlm_book.experiments.ch07_inference.FALL_SHARE], as one of
[`FALLING_WORDS`][mlm_book.experiments.ch07_inference.FALLING_WORDS] and reverses the news it reports. The generator and
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

**The models.** The `[CLS]` head of [`mlm_book.nn.finetune`][mlm_book.nn.finetune], full fine-tuning, from chapter 7's
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
from mlm_book.experiments import ch07_pairs
from mlm_book.finance import corpus as corpus_module
from mlm_book.finance.world import ASPECTS, COMPANIES, DIRECTION_WORDS, ENTITY_ORG
from mlm_book.ledger import Claim, over_seeds
from mlm_book.nn import finetune, pairs
from mlm_book.validation import as_int_array, check_generator, check_instance, check_positive_int, check_probability

__all__ = ["FALLING_WORDS", "FALL_SHARE", "POOL_SEED", "TEST_SEED", "DOCUMENTS", "LABELLED_PAIRS", "TEST_PAIRS", "MAX_PAIRS",
           "KINDS", "KIND_SHARES", "RELATIONS", "RELATION_OF_KIND", "SCHEDULES", "SOURCES", "SEEDS", "with_falls",
           "FactSentences", "fact_sentences", "FactPairs", "fact_pairs", "held_out_pairs", "word_overlap",
           "predictions", "company_blind_predictions", "direction_agreement", "accuracies", "recalls", "answer_shares", "confusion", "accuracy_table", "kind_table", "error_by_overlap",
           "error_table", "figure_inference", "CLAIMS"]

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
SCHEDULES = {"200 steps": ch07_pairs.FINE_TUNE, "1000 steps": replace(ch07_pairs.FINE_TUNE, steps=1000)}
"""The two fine-tuning schedules: the chapter's news schedule, and five times as many steps."""
SOURCES = {"nsp": "MLM + NSP pre-trained", "scratch": "from scratch"}
"""Where each fine-tuning starts."""
SEEDS = ch07_pairs.SEEDS
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
    """

    text: ch07_pairs.Sentences
    rows: np.ndarray
    company: np.ndarray
    aspect: np.ndarray
    direction: np.ndarray
    words: tuple

    def __post_init__(self):
        check_instance(self.text, "text", ch07_pairs.Sentences)
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
    from mlm_book.experiments import ch06_finance
    world = ch06_finance.results()
    corpus = corpus_module.generate_corpus(replace(world.config.corpus, n_documents=DOCUMENTS),
                                           np.random.default_rng(seed))
    tokens, fallen = with_falls(corpus, np.random.default_rng([seed, 1]))
    text = ch07_pairs.sentences_of(corpus, world.vocabulary.encode(tokens.tolist()))
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
    return ch07_pairs.pair_inputs(facts.text, facts.rows[pairs_.a], facts.rows[pairs_.b], config)


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
def _run(source: str, schedule: str, seed: int) -> dict:
    """Fine-tune one classifier and return its test predictions and its losses."""
    pool, test = fact_sentences(POOL_SEED), fact_sentences(TEST_SEED)
    model = ch07_pairs.pretrain(replace(ch07_pairs.VARIANTS["nsp"], seed=seed))
    config = model.config
    params = model.params if source == "nsp" else pairs.init_pair_params(config, np.random.default_rng(seed))
    train = fact_pairs(pool, LABELLED_PAIRS, np.random.default_rng([seed, POOL_SEED]))
    tokens, segments = _inputs(pool, train, config)
    tuned = finetune.fine_tune(params, config, tokens, segments, train.label,
                               replace(SCHEDULES[schedule], seed=seed), n_classes=len(RELATIONS))
    test_tokens, test_segments = _inputs(test, held_out_pairs(), config)
    predicted = finetune.classify(tuned, test_tokens, test_segments).argmax(axis=1)
    return {"predicted": predicted.astype(np.int64), "losses": tuned.losses}


_CODE = (finetune, pairs, corpus_module, ch07_pairs.sentences_of, ch07_pairs.pair_inputs, with_falls,
         _fact_sentences, fact_pairs, held_out_pairs, _inputs, _run)
_KEY = {"falling": list(FALLING_WORDS), "share": FALL_SHARE, "seeds": [POOL_SEED, TEST_SEED],
        "documents": DOCUMENTS, "labelled": LABELLED_PAIRS, "test": TEST_PAIRS, "kinds": list(KIND_SHARES),
        "schedules": {name: settings.__dict__ for name, settings in SCHEDULES.items()}}


@functools.cache
def _source() -> str:
    return cache.source_of(_CODE) + ch07_pairs.pretraining_code()


def _config(source: str, schedule: str, seed: int) -> dict:
    return {"source": source, "schedule": schedule, "seed": seed, **_KEY}


def _check_run(source, schedule) -> None:
    for value, name, options in ((source, "source", SOURCES), (schedule, "schedule", SCHEDULES)):
        if not isinstance(value, str):
            raise TypeError(f"{name} must be a str, got {type(value).__name__}")
        if value not in options:
            raise ValueError(f"{name} must be one of {list(options)}, got {value!r}")


@functools.cache
def _predictions(source: str, schedule: str, seed: int) -> dict:
    arrays, _ = cache.cached("pair-inference", _config(source, schedule, seed), [_source()],
                             lambda: _run(source, schedule, seed))
    return arrays


def predictions(source: str, schedule: str) -> tuple[np.ndarray, ...]:
    """Test predictions (class indices into `RELATIONS`) of each seed's run, the book's first (cached; run on a miss).

    Examples
    --------
    >>> [p.shape for p in predictions("nsp", "200 steps")][:2]  # doctest: +BOOK
    [(3000,), (3000,)]
    """
    _check_run(source, schedule)
    return tuple(np.array(_predictions(source, schedule, seed)["predicted"]) for seed in SEEDS)


def _build(work) -> None:
    _predictions(*work)


def _book_work() -> list:
    return [(source, schedule, seed) for schedule in reversed(list(SCHEDULES)) for source in SOURCES for seed in SEEDS]


def _is_built(work) -> bool:
    return cache.load(cache.entry_for("pair-inference", _config(*work), [_source()])) is not None


ARTEFACT_KINDS = (artefacts.Kind(
    name="inference", summary="chapter 7's inference classifiers: two starts, two schedules, 5 seeds",
    modules=(), after=("pair",), setups=_book_work, is_built=_is_built, build=_build,
    cost=lambda work: 120.0 if work[1] == "1000 steps" else 30.0,   # measured on the cold build of 2026-12-02
    describe=lambda work: f"{work[0]}, {work[1]}, seed {work[2]}", reason="its build code still lives in a chapter module, keyed by a list of that module's functions"),)




# ----------------------------------------------------------------------------- reading the runs
def accuracies(source: str, schedule: str) -> np.ndarray:
    """Test accuracy of each seed's run, shape (seeds,)."""
    labels = held_out_pairs().label
    return np.array([np.mean(p == labels) for p in predictions(source, schedule)])


def recalls(source: str, schedule: str) -> np.ndarray:
    """Share of each relation's test pairs classified correctly, shape (seeds, 3)."""
    labels = held_out_pairs().label
    return np.array([[np.mean(p[labels == r] == r) for r in range(len(RELATIONS))]
                     for p in predictions(source, schedule)])


def answer_shares(source: str, schedule: str) -> np.ndarray:
    """Share of the test pairs given each answer, per seed, shape (seeds, 3)."""
    return np.array([np.bincount(p, minlength=len(RELATIONS)) / p.size for p in predictions(source, schedule)])


def confusion(source: str, schedule: str) -> np.ndarray:
    """Share of each kind's test pairs given each label, pooled over the seeds, shape (4 kinds, 3 relations).

    Examples
    --------
    >>> np.allclose(confusion("nsp", "1000 steps").sum(axis=1), 1.0)  # doctest: +BOOK
    True
    """
    kind = held_out_pairs().kind
    counts = np.zeros((len(KINDS), len(RELATIONS)))
    for p in predictions(source, schedule):
        np.add.at(counts, (kind, p), 1.0)
    return counts / counts.sum(axis=1, keepdims=True)


def company_blind_predictions() -> np.ndarray:
    """The test answers of a reader that compares aspects and directions and never looks at the company.

    Same aspect: entails if the directions agree, contradicts if not; another aspect: neutral.
    It is right on every pair but the other-company ones, which make up a sixth of the draws.

    Examples
    --------
    >>> pairs_ = held_out_pairs()
    >>> wrong = company_blind_predictions() != pairs_.label
    >>> bool(np.all(pairs_.kind[wrong] == KINDS.index("other company")))
    True
    """
    facts, pairs_ = fact_sentences(TEST_SEED), held_out_pairs()
    same_aspect = facts.aspect[pairs_.a] == facts.aspect[pairs_.b]
    agree = facts.direction[pairs_.a] == facts.direction[pairs_.b]
    return np.where(same_aspect, np.where(agree, 0, 1), 2)


def direction_agreement(source: str, schedule: str) -> np.ndarray:
    """On the other-company test pairs: the share called *entails* when the two directions agree, and *contradicts* when they differ, shape (seeds, 2).

    Both near one means the classifier answers as the company-blind reader does.
    """
    facts, pairs_ = fact_sentences(TEST_SEED), held_out_pairs()
    other = pairs_.kind == KINDS.index("other company")
    agree = facts.direction[pairs_.a] == facts.direction[pairs_.b]
    return np.array([[np.mean(p[other & agree] == 0), np.mean(p[other & ~agree] == 1)]
                     for p in predictions(source, schedule)])


def _band(values: np.ndarray) -> str:
    return f"{values[0]:.3f} ({values.mean():.3f} ± {values.std(ddof=1):.3f})"


def accuracy_table():
    """Test accuracy by start and schedule, book seed (mean ± sd over seeds)."""
    from mlm_book.report import table
    rows = [[SOURCES[source], *(_band(accuracies(source, schedule)) for schedule in SCHEDULES)]
            for source in SOURCES]
    return table(["start", *(f"fine-tuned {name}" for name in SCHEDULES)], rows)


def kind_table(source: str = "nsp", schedule: str = "1000 steps"):
    """Per kind of pair: its word overlap and how the runs label it (shares pooled over seeds)."""
    from mlm_book.report import table
    _check_run(source, schedule)
    overlap = word_overlap(fact_sentences(TEST_SEED), held_out_pairs())
    shares = confusion(source, schedule)
    kind = held_out_pairs().kind
    errors = error_by_overlap(source, schedule)
    rows = [[name, RELATIONS[RELATION_OF_KIND[k]], f"{overlap[kind == k].mean():.2f}",
             *(f"{100 * shares[k, r]:.0f} %" for r in range(len(RELATIONS))),
             f"{100 * errors[k, 0]:.0f} % / {100 * errors[k, 1]:.0f} %"] for k, name in enumerate(KINDS)]
    return table(["B …", "gold", "word overlap", *(f"called {name}" for name in RELATIONS),
                  "wrong: low / high overlap"], rows)


def error_by_overlap(source: str, schedule: str) -> np.ndarray:
    """Error rate of each kind's test pairs at or below / above that kind's median word overlap, mean over seeds, shape (4, 2)."""
    _check_run(source, schedule)
    pairs_ = held_out_pairs()
    overlap = word_overlap(fact_sentences(TEST_SEED), pairs_)
    out = np.zeros((len(KINDS), 2))
    for k in range(len(KINDS)):
        mine = pairs_.kind == k
        high = overlap > np.median(overlap[mine])
        for j, part in enumerate((mine & ~high, mine & high)):
            out[k, j] = np.mean([np.mean(p[part] != pairs_.label[part]) for p in predictions(source, schedule)])
    return out


def error_table(source: str = "nsp", schedule: str = "1000 steps", per_kind: int = 2):
    """The book seed's first ``per_kind`` wrong answers of each kind: the two sentences, gold and predicted."""
    from mlm_book.report import table
    _check_run(source, schedule)
    per_kind = check_positive_int(per_kind, "per_kind")
    facts, pairs_ = fact_sentences(TEST_SEED), held_out_pairs()
    predicted = predictions(source, schedule)[0]
    rows = []
    for k, name in enumerate(KINDS):
        wrong = np.flatnonzero((pairs_.kind == k) & (predicted != pairs_.label))[:per_kind]
        rows += [[f"A: {facts.words[pairs_.a[i]]}<br>B: {facts.words[pairs_.b[i]]}",
                  f"{RELATIONS[pairs_.label[i]]}<br>(B {name})", RELATIONS[predicted[i]]] for i in wrong]
    return table(["pair", "gold", "predicted"], rows)


def figure_inference():
    """Accuracy by start and schedule (a dot per seed), and how the longer pre-trained runs label each kind of pair.

    Examples
    --------
    >>> import matplotlib.pyplot as plt  # doctest: +BOOK
    >>> fig = figure_inference()
    >>> len(fig.axes) >= 2
    True
    >>> plt.close(fig)
    """
    from mlm_book.figures import PALETTE, WIDE, subplots
    fig, (left, right) = subplots(1, 2, width=WIDE, height=3.4, gridspec_kw={"width_ratios": [1, 1.25]})
    colors = {"nsp": PALETTE["blue"], "scratch": PALETTE["grey"]}
    width = 0.38
    for k, source in enumerate(SOURCES):
        for j, schedule in enumerate(SCHEDULES):
            values = accuracies(source, schedule)
            x = j + (k - 0.5) * width
            left.bar(x, values.mean(), width=width * 0.9, color=colors[source],
                     label=SOURCES[source] if j == 0 else None)
            left.plot(np.full(values.size, x), values, ls="none", marker=".", color=PALETTE["black"])
    left.axhline(1 / 3, color=PALETTE["black"], ls="--", lw=1, label="chance (1/3)")
    left.set_xticks(range(len(SCHEDULES)), [f"fine-tuned {name}" for name in SCHEDULES])
    left.set_ylim(0, 1)
    left.set_ylabel(f"test accuracy (bars: mean of {len(SEEDS)} seeds)")
    left.legend(loc="upper left")
    shares = confusion("nsp", "1000 steps")
    image = right.imshow(shares, vmin=0, vmax=1, cmap="Blues", aspect="auto")
    for (i, j), value in np.ndenumerate(shares):
        right.text(j, i, f"{100 * value:.0f} %", ha="center", va="center",
                   color="white" if value > 0.6 else PALETTE["black"])
    right.set_xticks(range(len(RELATIONS)), [f"called {name}" for name in RELATIONS])
    right.set_yticks(range(len(KINDS)), [f"B {name}" for name in KINDS])
    right.set_title("pre-trained, 1000 steps (all seeds)")
    fig.colorbar(image, ax=right, fraction=0.05)
    return fig


# ----------------------------------------------------------------------------- claims
def _relation_recalls() -> dict:
    values = recalls("nsp", "1000 steps")
    rows = [tuple(float(v) for v in row) for row in values]
    return over_seeds(rows, int(np.sum(values.min(axis=1) >= 0.5)))


def _pair_accuracy() -> dict:
    values = accuracies("nsp", "1000 steps")
    return over_seeds([float(v) for v in values], int(np.sum(values >= 0.5)))


CLAIMS = (
    Claim("D-30", f"A [CLS] head classifies sentence pairs: test accuracy on three balanced relations, "
          f"pre-trained encoder fine-tuned 1000 steps ({len(SEEDS)} seeds)", seed="—",
          rule="≥ 0.5 (chance 1/3)", compute=_pair_accuracy, accept=lambda value: True, expected="reproduced"),
    Claim("D-31", f"Natural language inference: recall of entails / contradicts / neutral, pre-trained encoder "
          f"fine-tuned 1000 steps ({len(SEEDS)} seeds)", seed="—", rule="every relation ≥ 0.5",
          compute=_relation_recalls, accept=lambda value: True, expected="not reproduced"),
)
