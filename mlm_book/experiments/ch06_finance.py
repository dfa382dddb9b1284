r"""Chapter 6 — the finance case study's world and its static side.

The filings corpus ([`mlm_book.finance.corpus`][mlm_book.finance.corpus]) is regenerated, not the topic page's
shared corpus, so its counts are the book's own. The seed was chosen once, on the corpus's
*counts* alone: among seeds 0–11, the one whose counts all fall in the page's scale
(kestrel near balanced with at least 100 occurrences, every direction word 100–135 and every
evaluative verb 25–45 labelled occurrences, about 1720 aliases and 1400 lexicon occurrences)
with the kestrel split nearest the page's 57 / 61. No baseline result entered the choice.

[`results`][mlm_book.experiments.ch06_finance.results] builds everything once per process (skip-gram vectors are cached on disk);
tables and figures read from it.

Examples
--------
>>> config = Chapter6Config()
>>> config.corpus.n_documents, config.window_length, config.skipgram.window, config.skipgram.dim
(300, 32, 2, 25)
"""

from __future__ import annotations

import functools
import itertools
import math
from dataclasses import dataclass, field

import numpy as np

from mlm_book import probe
from mlm_book.cache import cached
from mlm_book.finance import caps, corpus as corpus_module, orientation, skipgram, vocab as vocab_module, voting, world
from mlm_book.finance.caps import MajorityCap, alias_cap, polarity_cap, polarity_words, word_cap
from mlm_book.finance.corpus import Corpus, CorpusConfig, corpus_fingerprint, generate_corpus, render_document
from mlm_book.finance.orientation import Orientation, semantic_orientation
from mlm_book.finance.skipgram import SkipGramConfig, SkipGramModel, cosine_neighbours, train_skipgram
from mlm_book.finance.vocab import SEP_ID, UNK_ID, Vocabulary, build_vocabulary
from mlm_book.finance.voting import Vote, lexicon_vote
from mlm_book.finance.windows import centre_position, centred_windows, fixed_windows, nearest_centre
from mlm_book.finance.world import COMPANIES, DIRECTION_WORDS, ENTITY_ORG, ENTITY_PRODUCT, EVALUATIVE_VERBS, LEXICON
from mlm_book.ledger import Claim

__all__ = [
    "Chapter6Config", "Chapter6Results", "CorpusCounts", "results", "counts_table", "caps_table",
    "neighbours_table", "lexicon_neighbour_agreement", "orientation_table", "voting_table", "example_filing", "window_view", "figure_aliases",
    "figure_positions", "figure_polarity", "CLAIMS",
]


@dataclass(frozen=True)
class Chapter6Config:
    """The chapter's settings.

    Parameters
    ----------
    corpus : CorpusConfig
        Generator settings of the filings.
    corpus_seed : int
        Seed of the generator that writes them.
    min_count : int
        Vocabulary threshold.
    window_length : int
        Encoder window (tokens); centred tokens sit at position ``window_length // 2``.
    nearest_stride : int
        Stride of the fixed windows of the nearest-centre reading.
    skipgram : SkipGramConfig
        The static baseline's hyper-parameters.
    skipgram_seed : int
        Seed of its training.
    polarity_min_count : int
        Labelled occurrences a word needs to enter the news-polarity probe set.
    vote_windows : tuple
        Windows (words; ``None`` = whole filing) of lexicon-neighbour voting.
    position_folds : int
        Folds of the position-only reader of *kestrel* (stratified, seeded by ``position_seed``).
    position_seed : int
        Seed of its fold assignment.
    neighbour_words : tuple of str
        Words whose skip-gram neighbours the chapter shows.
    """

    corpus: CorpusConfig = field(default_factory=CorpusConfig)
    corpus_seed: int = 9
    min_count: int = 5
    window_length: int = 32
    nearest_stride: int = 16
    skipgram: SkipGramConfig = field(default_factory=SkipGramConfig)
    skipgram_seed: int = 0
    polarity_min_count: int = 20
    vote_windows: tuple = (8, 32, None)
    position_folds: int = 5
    position_seed: int = 0
    neighbour_words: tuple = ("revenue", "costs", "rose", "surpassed", "kestrel", "strong", "weak")


@dataclass(frozen=True)
class CorpusCounts:
    """The corpus facts the page states, recounted on the regenerated filings.

    Attributes
    ----------
    n_documents, n_tokens, n_words, n_sentences : int
        Filings, tokens (``[SEP]`` included), word tokens, sentences.
    kestrel : tuple of int
        (occurrences, ORG, PRODUCT).
    aliases : tuple of int
        (typed alias occurrences, ORG, PRODUCT) over the 21 aliases.
    direction : dict
        Labelled occurrences of each direction word.
    verbs : dict
        Labelled occurrences of each evaluative verb.
    lexicon_occurrences : int
    vocabulary_words : int
        Words seen at least ``min_count`` times.
    vocabulary_size : int
        ``vocabulary_words`` + [UNK] + [SEP] (output classes; [MASK] is input-only).
    coverage : float
        Share of word tokens in the vocabulary.
    unigram_cross_entropy : float
        Entropy (nats) of the unigram distribution over the encoded stream ([SEP], [UNK] included).
    """

    n_documents: int
    n_tokens: int
    n_words: int
    n_sentences: int
    kestrel: tuple
    aliases: tuple
    direction: dict
    verbs: dict
    lexicon_occurrences: int
    vocabulary_words: int
    vocabulary_size: int
    coverage: float
    unigram_cross_entropy: float


@dataclass(frozen=True, eq=False)
class Chapter6Results:
    """Everything the chapter shows (static half)."""

    config: Chapter6Config
    corpus: Corpus
    vocabulary: Vocabulary
    ids: np.ndarray
    counts: CorpusCounts
    alias_cap: MajorityCap
    kestrel_cap: MajorityCap
    polarity_words: tuple
    polarity_cap: MajorityCap
    skipgram: SkipGramModel
    typing: probe.CrossValidation
    lexicon_probe: probe.CrossValidation
    orientation: Orientation
    votes: tuple
    nearest_positions: np.ndarray
    centre: int
    position_reader: dict


def _unigram_entropy(ids: np.ndarray, size: int) -> float:
    counts = np.bincount(ids, minlength=size).astype(np.float64)
    p = counts[counts > 0] / ids.size
    return float(-(p * np.log(p)).sum())


def _count(corpus: Corpus, vocabulary: Vocabulary, ids: np.ndarray) -> CorpusCounts:
    tokens = corpus.tokens
    kestrel = (tokens == "kestrel") & (corpus.entity > 0)
    typed = corpus.entity > 0
    labelled = corpus.news != 0
    return CorpusCounts(
        n_documents=corpus.n_documents, n_tokens=corpus.n_tokens,
        n_words=int((tokens != "[SEP]").sum()), n_sentences=int(np.unique(corpus.sentence).size),
        kestrel=(int(kestrel.sum()), int((corpus.entity[kestrel] == ENTITY_ORG).sum()),
                 int((corpus.entity[kestrel] == ENTITY_PRODUCT).sum())),
        aliases=(int(typed.sum()), int((corpus.entity == ENTITY_ORG).sum()),
                 int((corpus.entity == ENTITY_PRODUCT).sum())),
        direction={w: int(((tokens == w) & labelled).sum()) for w in DIRECTION_WORDS},
        verbs={w: int(((tokens == w) & labelled).sum()) for w in EVALUATIVE_VERBS},
        lexicon_occurrences=int((corpus.lexicon != 0).sum()),
        vocabulary_words=vocabulary.n_words, vocabulary_size=vocabulary.size,
        coverage=vocabulary.coverage(tokens.tolist()),
        unigram_cross_entropy=_unigram_entropy(ids, vocabulary.size),
    )


def _skipgram_model(config: Chapter6Config, corpus: Corpus, vocabulary: Vocabulary, ids: np.ndarray) -> SkipGramModel:
    key = {"skipgram": config.skipgram.as_dict(), "seed": config.skipgram_seed,
           "corpus": config.corpus.as_dict(), "corpus_seed": config.corpus_seed,
           "min_count": config.min_count, "fingerprint": corpus_fingerprint(corpus)}

    def build():
        model = train_skipgram(ids, corpus.document, vocabulary.size, config.skipgram,
                               np.random.default_rng(config.skipgram_seed), drop=SEP_ID)
        return {"input": model.input_vectors, "output": model.output_vectors, "loss": model.epoch_loss}

    arrays, _ = cached("ch06-skipgram", key, [skipgram, corpus_module, vocab_module], build)
    return SkipGramModel(arrays["input"], arrays["output"], arrays["loss"], config.skipgram)


def _typing_probe(corpus: Corpus, ids: np.ndarray, vectors: np.ndarray) -> probe.CrossValidation:
    typed = np.flatnonzero(corpus.entity > 0)
    features = vectors[ids[typed]]
    labels = (corpus.entity[typed] == ENTITY_PRODUCT).astype(np.int64)
    return probe.cross_validate(features, labels, probe.leave_one_group_out(corpus.alias[typed]))


def _position_reader(config: Chapter6Config, corpus: Corpus, positions: np.ndarray) -> dict:
    """Five-fold probe typing kestrel from its window position alone, under both readings.

    Features are one-hot window positions: the nearest-centre position, or the centred one
    (always the same, so the probe is intercept-only and predicts each training fold's majority).
    """
    mask = (corpus.tokens == "kestrel") & (corpus.entity > 0)
    labels = (corpus.entity[mask] == ENTITY_PRODUCT).astype(np.int64)
    splits = probe.kfold_splits(int(mask.sum()), config.position_folds,
                                np.random.default_rng(config.position_seed), labels=labels)
    eye = np.eye(config.window_length)
    nearest = probe.cross_validate(eye[positions[mask]], labels, splits)
    centred = probe.cross_validate(eye[np.full(int(mask.sum()), centre_position(config.window_length))],
                                   labels, splits)
    return {"nearest-centre": nearest.accuracy, "centred": centred.accuracy}


def _lexicon_probe(vocabulary: Vocabulary, vectors: np.ndarray) -> probe.CrossValidation:
    words = list(LEXICON)
    features = vectors[[vocabulary.lookup(word) for word in words]]
    labels = np.array([int(LEXICON[word] > 0) for word in words])
    return probe.cross_validate(features, labels, probe.leave_one_group_out(np.arange(len(words))))


@functools.cache
def results(config: Chapter6Config | None = None) -> Chapter6Results:
    """Build the chapter's static results (memoised per config; skip-gram cached on disk).

    Examples
    --------
    >>> r = results()
    >>> r.counts.n_documents, r.centre
    (300, 16)
    """
    config = Chapter6Config() if config is None else config
    corpus = generate_corpus(config.corpus, np.random.default_rng(config.corpus_seed))
    vocabulary = build_vocabulary(corpus.tokens.tolist(), config.min_count)
    ids = vocabulary.encode(corpus.tokens.tolist())
    model = _skipgram_model(config, corpus, vocabulary, ids)
    starts = fixed_windows(corpus.document, length=config.window_length, stride=config.nearest_stride)
    _, positions = nearest_centre(corpus.document, starts, length=config.window_length)
    return Chapter6Results(
        config=config, corpus=corpus, vocabulary=vocabulary, ids=ids,
        counts=_count(corpus, vocabulary, ids),
        alias_cap=alias_cap(corpus), kestrel_cap=word_cap(corpus, "kestrel"),
        polarity_words=polarity_words(corpus, config.polarity_min_count),
        polarity_cap=polarity_cap(corpus, config.polarity_min_count),
        skipgram=model,
        typing=_typing_probe(corpus, ids, model.input_vectors),
        lexicon_probe=_lexicon_probe(vocabulary, model.input_vectors),
        orientation=semantic_orientation(corpus),
        votes=tuple(lexicon_vote(corpus, window) for window in config.vote_windows),
        nearest_positions=positions, centre=centre_position(config.window_length),
        position_reader=_position_reader(config, corpus, positions),
    )


# ----------------------------------------------------------------------------- tables


def _markdown(header, rows) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(str(cell) for cell in row) + " |" for row in rows]
    return "\n".join(lines)


def example_filing(r: Chapter6Results | None = None, document: int | None = None) -> str:
    """A filing rendered with its gold labels (by default the first that closes on the kestrel turbine)."""
    r = results() if r is None else r
    corpus = r.corpus
    if document is None:
        closing = (corpus.tokens == "kestrel") & (corpus.entity == ENTITY_PRODUCT)
        candidates = np.unique(corpus.document[closing & (corpus.filer[corpus.document] == 0)])
        document = int(candidates[0]) if candidates.size else 0
    return render_document(corpus, document)


def window_view(r: Chapter6Results | None = None, index: int | None = None) -> str:
    """The centred window of stream token ``index`` as text, ``[PAD]`` beyond the filing's edge.

    By default the last PRODUCT mention of kestrel in [`example_filing`][mlm_book.experiments.ch06_finance.example_filing]'s filing. The centre
    token is shown in double brackets.
    """
    r = results() if r is None else r
    corpus = r.corpus
    if index is None:
        products = np.flatnonzero((corpus.tokens == "kestrel") & (corpus.entity == ENTITY_PRODUCT))
        index = int(products[corpus.filer[corpus.document[products]] == 0][0]) if products.size else 0
    windows, valid = centred_windows(r.ids, corpus.document, length=r.config.window_length,
                                     pad_id=r.vocabulary.pad_id,
                                     select=[index])
    words = [str(corpus.tokens[index + k - r.centre]) if ok else "[PAD]"
             for k, ok in enumerate(valid[0])]
    words[r.centre] = f"[[{words[r.centre]}]]"
    assert windows[0, r.centre] == r.ids[index]
    return " ".join(words)


def counts_table(r: Chapter6Results | None = None) -> str:
    """Markdown table of the corpus counts, next to the topic page's."""
    r = results() if r is None else r
    c = r.counts
    d, v = list(c.direction.values()), list(c.verbs.values())
    rows = [
        ("filings", c.n_documents, "300"),
        ("tokens ([SEP] included) / word tokens", f"{c.n_tokens} / {c.n_words}", "—"),
        ("*kestrel*: occurrences (ORG / PRODUCT)", f"{c.kestrel[0]} ({c.kestrel[1]} / {c.kestrel[2]})", "118 (57 / 61)"),
        ("alias occurrences of the 21 aliases (ORG / PRODUCT)", f"{c.aliases[0]} ({c.aliases[1]} / {c.aliases[2]})",
         "1720 (1466 / 254)"),
        ("PRODUCT share", f"{c.aliases[2] / c.aliases[0]:.3f}", "0.148"),
        ("direction words: labelled occurrences each", f"{min(d)}–{max(d)} (6 words)", "101–133"),
        ("evaluative verbs: labelled occurrences each", f"{min(v)}–{max(v)} (7 words)", "26–45"),
        ("lexicon occurrences (35 words)", c.lexicon_occurrences, "1414"),
        ("vocabulary: words seen ≥ 5 times", c.vocabulary_words, "877"),
        ("coverage of word tokens", f"{100 * c.coverage:.1f} %", "94.3 %"),
        ("V (words + [UNK] + [SEP])", c.vocabulary_size, "879"),
        ("unigram cross-entropy (nats) / effective words", f"{c.unigram_cross_entropy:.3f} / "
         f"{math.exp(c.unigram_cross_entropy):.0f}", "5.364 / 214"),
    ]
    return _markdown(("quantity", "this book", "topic page"), rows)


def caps_table(r: Chapter6Results | None = None) -> str:
    """Markdown table: company/product typing, static cap against skip-gram."""
    r = results() if r is None else r
    rows = [
        ("per-alias majority (the static cap)", f"{r.alias_cap.accuracy:.3f}", "0.855"),
        ("skip-gram (±2, d = 25), leave one alias out", f"{r.typing.accuracy:.3f}", "0.852"),
        ("answer ORG for every alias", f"{r.counts.aliases[1] / r.counts.aliases[0]:.3f}", "0.852"),
    ]
    return _markdown(("representation", "accuracy", "topic page"), rows)


def neighbours_table(r: Chapter6Results | None = None, k: int = 5) -> str:
    """Markdown table of each chosen word's ``k`` nearest skip-gram neighbours (cosine)."""
    r = results() if r is None else r
    rows = []
    for word in r.config.neighbour_words:
        ids, cosines = cosine_neighbours(r.skipgram.input_vectors, r.vocabulary.lookup(word), k,
                                         exclude=(UNK_ID, SEP_ID))
        rows.append((word, ", ".join(f"{r.vocabulary.words[i]} ({c:.2f})" for i, c in zip(ids, cosines))))
    return _markdown(("word", f"{k} nearest neighbours (cosine)"), rows)


def lexicon_neighbour_agreement(r: Chapter6Results | None = None, k: int = 5) -> tuple[float, float]:
    """Mean share of a lexicon word's ``k`` nearest lexicon words (skip-gram cosine) with its polarity.

    Returns the share and its chance level: for a word of polarity $p$, the share of the *other*
    lexicon words with polarity $p$, averaged over the 35 words.
    """
    r = results() if r is None else r
    words = list(LEXICON)
    polarity = np.array([LEXICON[w] for w in words])
    vectors = r.skipgram.input_vectors[[r.vocabulary.lookup(w) for w in words]]
    unit = vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
    cosine = unit @ unit.T
    np.fill_diagonal(cosine, -np.inf)
    nearest = np.argsort(-cosine, axis=1, kind="stable")[:, :k]
    share = float(np.mean(polarity[nearest] == polarity[:, None]))
    same = np.array([(polarity == p).sum() - 1 for p in polarity]) / (len(words) - 1)
    return share, float(same.mean())


def orientation_table(r: Chapter6Results | None = None) -> str:
    """Markdown table: lexicon polarity from pooled documents, one vector, and the sentence."""
    r = results() if r is None else r
    se = math.sqrt(0.25 / len(LEXICON))
    rows = [
        ("document-pooled semantic orientation", f"{r.orientation.accuracy:.3f}", "0.829"),
        ("skip-gram vectors, leave-one-out probe", f"{r.lexicon_probe.accuracy:.3f}", "0.571"),
        ("chance ± 1 SE (35 words)", f"0.5 ± {se:.3f}", "0.5 ± 0.085"),
    ]
    return _markdown(("method", "accuracy on the 35 lexicon words", "topic page"), rows)


def voting_table(r: Chapter6Results | None = None) -> str:
    """Markdown table of lexicon-neighbour voting at each window."""
    r = results() if r is None else r
    page = {8: ("0.514", "0.530"), 32: ("0.546", "0.558"), None: ("0.571", "0.583")}
    rows = []
    for vote in r.votes:
        name = "whole filing" if vote.window is None else f"within {vote.window} words"
        seed = page.get(vote.window, ("—", "—"))
        rows.append((name, f"{vote.accuracy:.3f}", f"{vote.accuracy_decided:.3f}", vote.n - vote.n_ties,
                     f"{seed[0]} / {seed[1]}"))
    return _markdown(("voters", "ties = ½", "ties set aside", "decided votes", "topic page"), rows)


# ----------------------------------------------------------------------------- figures


def figure_aliases(r: Chapter6Results | None = None):
    """ORG and PRODUCT occurrences of each of the 21 aliases (kestrel first).

    Returns
    -------
    matplotlib.figure.Figure
    """
    import matplotlib.pyplot as plt

    r = results() if r is None else r
    counts = r.alias_cap.counts  # (21, 2): ORG, PRODUCT
    names = [COMPANIES[g].alias for g in r.alias_cap.groups]
    fig, ax = plt.subplots(figsize=(10, 3.6))
    x = np.arange(len(names))
    ax.bar(x, counts[:, 0], color="tab:blue", label="ORG (the company)")
    ax.bar(x, counts[:, 1], bottom=counts[:, 0], color="tab:orange", label="PRODUCT (its product)")
    ax.set_xticks(x, names, rotation=60, ha="right")
    ax.set_ylabel("occurrences")
    ax.set_title(f"Gold types of the 21 aliases: per-alias majority = {r.alias_cap.accuracy:.3f}")
    ax.legend(frameon=False)
    fig.tight_layout()
    return fig


def figure_positions(r: Chapter6Results | None = None):
    """Window positions of alias occurrences under nearest-centre reading, ORG vs PRODUCT.

    Returns
    -------
    matplotlib.figure.Figure
    """
    import matplotlib.pyplot as plt

    r = results() if r is None else r
    corpus, length = r.corpus, r.config.window_length
    fig, ax = plt.subplots(figsize=(8, 3.4))
    bins = np.arange(length + 1) - 0.5
    for code, name, colour in ((ENTITY_ORG, "ORG", "tab:blue"), (ENTITY_PRODUCT, "PRODUCT", "tab:orange")):
        positions = r.nearest_positions[corpus.entity == code]
        ax.hist(positions, bins=bins, density=True, alpha=0.6, color=colour, label=f"{name} ({positions.size})")
    ax.axvline(r.centre, color="black", lw=1, ls="--", label=f"centred reading: always {r.centre}")
    ax.set_xlabel("position in the window (0-based)")
    ax.set_ylabel("share of occurrences")
    ax.set_title(f"Nearest-centre reading, stride {r.config.nearest_stride}: products close a filing")
    ax.legend(frameon=False, fontsize=8)
    fig.tight_layout()
    return fig


def figure_polarity(r: Chapter6Results | None = None):
    """Left: semantic orientation of the 35 lexicon words. Right: voting accuracy by window.

    Returns
    -------
    matplotlib.figure.Figure
    """
    import matplotlib.pyplot as plt

    r = results() if r is None else r
    so = r.orientation
    order = np.argsort(so.score)
    fig, (left, right) = plt.subplots(1, 2, figsize=(12, 4.2), gridspec_kw={"width_ratios": [2.2, 1]})
    colours = np.where(so.truth[order] > 0, "tab:green", "tab:red")
    left.bar(np.arange(order.size), so.score[order], color=colours)
    left.set_xticks(np.arange(order.size), [so.words[i] for i in order], rotation=90, fontsize=7)
    left.axhline(0, color="black", lw=0.8)
    left.set_ylabel("SO (nats)")
    left.set_title(f"Document-pooled orientation (green: positive in the lexicon): {so.accuracy:.3f} correct")
    labels = ["8", "32", "filing"] if len(r.votes) == 3 else [str(v.window) for v in r.votes]
    x = np.arange(len(r.votes))
    right.plot(x, [v.accuracy for v in r.votes], "o-", label="ties = ½")
    right.plot(x, [v.accuracy_decided for v in r.votes], "s-", label="ties set aside")
    right.axhline(so.accuracy, color="tab:green", ls=":", label="pooled SO")
    se = math.sqrt(0.25 / r.votes[0].n)
    right.axhspan(0.5 - 2 * se, 0.5 + 2 * se, color="grey", alpha=0.2, label="chance ± 2 SE")
    right.set_xticks(x, labels)
    right.set_xlabel("voters within (words)")
    right.set_ylabel("accuracy")
    right.set_ylim(0.4, 1.0)
    right.set_title("Lexicon-neighbour voting")
    right.legend(frameon=False, fontsize=8)
    fig.tight_layout()
    return fig


# ----------------------------------------------------------------------------- claims


def _kestrel():
    return results().counts.kestrel


def _kestrel_ok(v) -> bool:
    total, org, product = v
    return total >= 100 and org + product == total and 0.4 <= org / total <= 0.6


def _constant_kestrel() -> tuple:
    """Probe on kestrel's single skip-gram vector, trained and scored on all its occurrences."""
    r = results()
    mask = (r.corpus.tokens == "kestrel") & (r.corpus.entity > 0)
    features = r.skipgram.input_vectors[r.ids[mask]]
    labels = (r.corpus.entity[mask] == ENTITY_PRODUCT).astype(np.int64)
    model = probe.fit_probe(features, labels)
    return probe.accuracy(model, features, labels), r.kestrel_cap.accuracy


def _vocabulary_rule() -> tuple:
    r = results()
    words, counts = np.unique(r.corpus.tokens[r.corpus.tokens != "[SEP]"], return_counts=True)
    expected = set(words[counts >= r.config.min_count].tolist())
    return r.counts.vocabulary_words, r.counts.coverage, r.counts.vocabulary_size, \
        expected == set(r.vocabulary.words[2:])


def _unigram() -> tuple:
    r = results()
    counts = np.bincount(r.ids, minlength=r.vocabulary.size)
    assert counts[UNK_ID] == r.vocabulary.counts[UNK_ID] and counts[SEP_ID] == r.vocabulary.counts[SEP_ID]
    p = counts / counts.sum()
    direct = float(-np.sum(p[p > 0] * np.log(p[p > 0])))
    return r.counts.unigram_cross_entropy, direct


def _reused_aliases() -> int:
    r = results()
    return int(np.sum((r.alias_cap.counts > 0).all(axis=1)))


def _folds() -> tuple:
    r = results()
    typed = r.corpus.entity > 0
    splits = probe.leave_one_group_out(r.corpus.alias[typed])
    single = all(np.unique(r.corpus.alias[typed][test]).size == 1 for _, test in splits)
    return len(splits), single


def _cap_recount() -> tuple:
    r = results()
    typed = r.corpus.entity > 0
    correct = 0
    for alias in range(len(COMPANIES)):
        labels = r.corpus.entity[typed & (r.corpus.alias == alias)]
        correct += max(int((labels == ENTITY_ORG).sum()), int((labels == ENTITY_PRODUCT).sum()))
    return r.alias_cap.accuracy, correct / int(typed.sum())


def _inheritance(words) -> tuple:
    r = results()
    c = r.corpus
    mask = np.isin(c.tokens, words) & (c.news != 0)
    heads = c.head[mask]
    obey = (heads >= 0) & (c.aspect[heads] >= 0)
    polarity = np.array([a.polarity for a in world.ASPECTS])[c.aspect[heads]]
    obey &= c.news[mask] == polarity
    unlabelled = int((np.isin(c.tokens, words) & (c.news == 0)).sum())
    return float(obey.mean()), int(mask.sum()), unlabelled


def _per_word_best() -> tuple:
    """Best accuracy of any one-answer-per-word classifier, by enumerating all 2^13 answer sets."""
    r = results()
    counts = r.polarity_cap.counts  # (13, 2): -1, +1
    answers = np.array(list(itertools.product((0, 1), repeat=counts.shape[0])))
    correct = counts[np.arange(counts.shape[0])[None, :], answers].sum(axis=1)
    return r.polarity_cap.accuracy, float(correct.max() / r.polarity_cap.n)


def _probe_set() -> tuple:
    r = results()
    words = set(r.polarity_words)
    return len(words), r.polarity_cap.n, words == set(DIRECTION_WORDS) | set(EVALUATIVE_VERBS)


def _distances() -> tuple:
    r = results()
    c = r.corpus
    labelled = np.flatnonzero(c.news != 0)
    distance = labelled - c.head[labelled]
    is_direction = np.isin(c.tokens[labelled], DIRECTION_WORDS)
    return (int(distance[is_direction].min()), int(distance[is_direction].max()),
            int(distance[~is_direction].min()), int(distance[~is_direction].max()))


def _chance() -> tuple:
    se = math.sqrt(0.25 / len(LEXICON))
    return 0.5, se, results().lexicon_probe.accuracy


def _votes(decided: bool) -> tuple:
    return tuple(v.accuracy_decided if decided else v.accuracy for v in results().votes)


def _votes_ok(v) -> bool:
    return all(a <= b for a, b in zip(v, v[1:])) and max(v) <= 0.65


CLAIMS = (
    Claim("S1-01", "Occurrences of kestrel in the 300 regenerated filings: (total, ORG, PRODUCT)", seed="118",
          rule="regenerated corpus: >= 100 occurrences, ORG + PRODUCT = total, each side 40-60 %",
          compute=_kestrel, accept=_kestrel_ok),
    Claim("S1-02", "kestrel's split: company (ORG) vs product (PRODUCT) mentions, and their sum",
          seed="57 + 61 = 118", rule="counts sum to the total exactly; each side 40-60 %",
          compute=lambda: (_kestrel()[1], _kestrel()[2], _kestrel()[0]),
          accept=lambda v: v[0] + v[1] == v[2] and _kestrel_ok((v[2], v[0], v[1]))),
    Claim("S1-03", "Accuracy of the probe reading kestrel's one skip-gram vector (fit and scored on all its "
          "occurrences), vs its majority share", seed="about half (0.517)",
          rule="equals the majority share exactly (|diff| < 1e-12): one answer for all occurrences",
          compute=_constant_kestrel, accept=lambda v: abs(v[0] - v[1]) < 1e-12 and v[1] <= 0.6),
    Claim("S8-02", "Training text of the case study: number of filings (regenerated corpus)", seed="300",
          rule="exactly 300 filings", compute=lambda: results().counts.n_documents, accept=lambda v: v == 300),
    Claim("S8-03", "Vocabulary: words seen >= 5 times / their coverage of word tokens / V with [UNK], [SEP] / "
          "min-count rule holds", seed="877 / 0.943 / 879",
          rule="the vocabulary is exactly the words with count >= 5; V = words + 2; coverage reported (>= 0.90)",
          compute=_vocabulary_rule, accept=lambda v: v[3] and v[2] == v[0] + 2 and v[1] >= 0.90),
    Claim("S8-05", "Cross-entropy (nats) of the unigram distribution at uniformly chosen positions of the "
          "encoded filings (its entropy) / recomputed from the counts", seed="5.364",
          rule="computed exactly from the corpus counts (two computations agree to 1e-12); "
               "between log 100 and log V",
          compute=_unigram,
          accept=lambda v: abs(v[0] - v[1]) < 1e-12 and math.log(100) <= v[0] <= math.log(results().vocabulary.size)),
    Claim("S8-08", "Static baseline: skip-gram context window and dimension", seed="±2, d = 25",
          rule="window 2 and d = 25 exactly", compute=lambda: (results().skipgram.config.window,
                                                               results().skipgram.input_vectors.shape[1]),
          accept=lambda v: v == (2, 25)),
    Claim("S8-09", "Company aliases reused as product names (aliases with both ORG and PRODUCT occurrences)",
          seed="21", rule="exactly 21", compute=_reused_aliases, accept=lambda v: v == 21),
    Claim("S8-10", "Gold-typed occurrences of the 21 aliases: (total, ORG, PRODUCT)", seed="1720 (1466 / 254)",
          rule="regenerated: total 1550-1900, PRODUCT share 0.12-0.18",
          compute=lambda: results().counts.aliases,
          accept=lambda v: 1550 <= v[0] <= 1900 and v[1] + v[2] == v[0] and 0.12 <= v[2] / v[0] <= 0.18),
    Claim("S8-11", "Protocol: leave one alias out: number of folds / each test fold is one alias",
          seed="leave-one-alias-out (21 folds)", rule="21 folds, each holding out exactly one alias",
          compute=_folds, accept=lambda v: v == (21, True)),
    Claim("S8-12", "Per-alias majority accuracy over the alias occurrences (the static cap) / recounted",
          seed="0.855", rule="computed exactly from the labels (two counts agree); in [0.80, 0.90]",
          compute=_cap_recount, accept=lambda v: v[0] == v[1] and 0.80 <= v[0] <= 0.90),
    Claim("S8-13", "Leave-one-alias-out company/product typing on skip-gram vectors (±2, d = 25), "
          "ridge-logistic probe", seed="0.852", rule="<= per-alias cap + 0.005",
          compute=lambda: results().typing.accuracy,
          accept=lambda v: v <= results().alias_cap.accuracy + 0.005),
    Claim("S8-17", "kestrel alone: ORG / PRODUCT counts and the majority share", seed="57 / 61, 0.517",
          rule="majority share = max(ORG, PRODUCT) / total exactly",
          compute=lambda: (_kestrel()[1], _kestrel()[2], results().kestrel_cap.accuracy),
          accept=lambda v: v[2] == max(v[0], v[1]) / (v[0] + v[1])),
    Claim("S8-22", "Direction words inherit the polarity of the aspect before them: share of labelled "
          "occurrences obeying / labelled / unlabelled occurrences", seed="—",
          rule="every labelled direction word obeys (share 1), none is unlabelled",
          compute=lambda: _inheritance(DIRECTION_WORDS), accept=lambda v: v[0] == 1.0 and v[1] > 0 and v[2] == 0),
    Claim("S8-23", "Evaluative verbs inherit the polarity of their aspect: share obeying / labelled / unlabelled",
          seed="—", rule="every labelled verb obeys (share 1), none is unlabelled",
          compute=lambda: _inheritance(EVALUATIVE_VERBS), accept=lambda v: v[0] == 1.0 and v[1] > 0 and v[2] == 0),
    Claim("S8-24", "One answer per word: pooled per-word majority vs the best of all 2^13 one-answer-per-word "
          "classifiers", seed="—", rule="equal to 1e-12 (Corollary 1)", compute=_per_word_best,
          accept=lambda v: abs(v[0] - v[1]) < 1e-12),
    Claim("S8-25", "Polarity probe set: words with >= 20 labelled occurrences / their occurrences / they are "
          "the 6 direction words and 7 verbs", seed="13 words, 973 occurrences",
          rule="13 words = 6 direction words + 7 verbs; 850-1100 occurrences",
          compute=_probe_set, accept=lambda v: v[0] == 13 and v[2] and 850 <= v[1] <= 1100),
    Claim("S8-26", "Pooled per-word polarity static cap over the probe set", seed="0.559",
          rule="exact from labels (= S8-24); in [0.50, 0.60]", compute=lambda: results().polarity_cap.accuracy,
          accept=lambda v: 0.50 <= v <= 0.60 and abs(v - _per_word_best()[1]) < 1e-12),
    Claim("S8-33", "Aspect-term distance (tokens): direction words min/max, evaluative verbs min/max",
          seed="1 / 1, 3 / 6", rule="direction words exactly 1; verbs within 3-6",
          compute=_distances, accept=lambda v: v[0] == v[1] == 1 and 3 <= v[2] and v[3] <= 6, fmt="d"),
    Claim("S8-36", "Leave-one-out polarity probe on the 35 lexicon words' skip-gram vectors (skip-gram part)",
          seed="0.571", rule="within 0.5 ± 0.17 (2 SE)", compute=lambda: results().lexicon_probe.accuracy,
          accept=lambda v: abs(v - 0.5) <= 0.17),
    Claim("S8-37", "Chance level and its SE for 35 words; the skip-gram probe is not two SE above",
          seed="0.5 ± 0.085", rule="SE = sqrt(0.25/35) = 0.0845 (to 1e-4); skip-gram LOO < 0.5 + 2 SE",
          compute=_chance, accept=lambda v: abs(v[1] - 0.0845) < 1e-4 and v[2] < 0.5 + 2 * v[1]),
    Claim("S8-38", "Document-pooled semantic orientation on the 35 lexicon words (seeds good/excellent/"
          "successful vs bad/poor/unsuccessful)", seed="0.829", rule=">= 0.70",
          compute=lambda: results().orientation.accuracy, accept=lambda v: v >= 0.70),
    Claim("S8-39", "Lexicon occurrences in the corpus", seed="1414", rule="regenerated: 1250-1550",
          compute=lambda: results().counts.lexicon_occurrences, accept=lambda v: 1250 <= v <= 1550),
    Claim("S8-40", "Lexicon-neighbour voting (ties = 1/2): within 8 words / 32 words / whole filing",
          seed="0.514 / 0.546 / 0.571", rule="non-decreasing in window size; all <= 0.65",
          compute=lambda: _votes(False), accept=_votes_ok),
    Claim("S8-41", "Same with ties set aside", seed="0.530 / 0.558 / 0.583",
          rule="non-decreasing in window size; all <= 0.65", compute=lambda: _votes(True), accept=_votes_ok),
)
