r"""Chapter 9: labelling spans, on the filings: tag schemes, taggers on the filing encoder, entity-level scores.

**The world.** The filings generator annotates every *mention* as a span
([`mlm_book.finance.corpus.mention_spans`][mlm_book.finance.corpus.mention_spans]): ORG (a company, in full or
by its alias), PRODUCT (an alias and its noun), PERSON (first name and surname) and LOC (a
place or a country). Taggers train on `TRAIN_SENTENCES` sentences of chapter 6's corpus
(the encoder's own pre-training text, whose mentions it never saw labelled) and are tested
on every sentence of a fresh corpus of the same configuration (`TEST_SEED`), read through
chapter 6's vocabulary, so a rare surname or place is ``[UNK]`` there as it would be in use.

**The taggers**, on chapter 7's filing encoder at each of its seeds, every one over the
BIO tags of the four types ([`TAGS`][mlm_book.artefacts.span_taggers.TAGS]), reading a sentence as
``[SEP] s [SEP]`` (the encoder's own sentence boundary on both sides):

* **frozen**: chapter 5's ridge-logistic probe on the residual stream after 0, 1 or 2
  blocks, one softmax over the tags per token;
* **fine-tuned**: the same head trained together with the embeddings and the blocks below
  it ([`mlm_book.nn.token_finetune`][mlm_book.nn.token_finetune]), with a schedule fixed in advance
  ([`TAGGER`][mlm_book.artefacts.span_taggers.TAGGER]);
* **CRF**: a linear-chain CRF whose emissions are linear in the frozen top-layer vectors
  and whose transitions are learned ([`mlm_book.crf_fit`][mlm_book.crf_fit]).

Each softmax tagger is decoded two ways: the most probable tag per token (read with
``conlleval``'s repair of invalid sequences), and Viterbi over the same per-token
log-probabilities restricted to valid BIO sequences (no ``I-X`` after ``O`` or after
another type). Scores are by entity: a predicted span counts only if its start, end and
type equal a gold span's ([`mlm_book.tagging.entity_scores`][mlm_book.tagging.entity_scores]).
"""

from __future__ import annotations

import functools

import numpy as np

from mlm_book import crf, tagging

# the data and the runs live on the artefact floor; the chapter (and its readers) take them from here too
from mlm_book.artefacts.span_taggers import (  # noqa: F401
    ALLOWED,
    CRF_LAYER,
    LAYERS,
    SCHEME,
    SEEDS,
    TAGGER,
    TAGS,
    TEST_SEED,
    TRAIN_SEED,
    TRAIN_SENTENCES,
    UNSEEN,
    SpanData,
    book_run,
    inputs,
    span_data,
    tagger_predictions,
    test_data,
    train_data,
    viterbi_all,
)
from mlm_book.artefacts.subword_encoder import matched_bpe
from mlm_book.finance import corpus as corpus_module
from mlm_book.ledger import Claim, over_seeds
from mlm_book.readings.span_scores import (
    TAGGERS,
    check_tagger,
    predicted_spans,
    predictions,
    recall_among,
    scores,
)
from mlm_book.validation import check_choice, check_positive_int, check_sequence
from mlm_book.report import seed_band

__all__ = ["TAGGERS", "score_table", "token_accuracies", "bootstrap", "partial_spans", "io_example", "figure_f1",
           "figure_sentence", "CLAIMS", "mean_f1", "COMPARISONS", "BOOTSTRAP_RESAMPLES", "mention_count",
           "unknown_share", "unknown_recall", "known_recall", "example_sentence", "brute_force_log_partition",
           "MERGE_COUNTS", "subword_rows", "word_vocabulary_rates", "matched_bpe", "matched_statistics",
           "split_table", "mention_pieces", "figure_subwords", "minimum_count", "unknown_words", "touching_mentions",
           "redaction_leaks", "anonymisation"]

def token_accuracies(key: str) -> np.ndarray:
    """Share of test tokens whose tag is right, per seed."""
    gold = test_data().tags
    inside = gold >= 0
    return np.array([np.mean(p[inside] == gold[inside]) for p in predictions(key)])


def score_table():
    """Entity micro-precision, micro-recall and micro-F1, and token accuracy, of every tagger: book seed (mean ± sd over seeds)."""
    from mlm_book.report import table
    rows = [[name, seed_band([s.micro_precision for s in scores(key)]), seed_band([s.micro_recall for s in scores(key)]),
             seed_band([s.micro_f1 for s in scores(key)]), seed_band(token_accuracies(key))]
            for key, name in TAGGERS.items()]
    return table(["tagger", "entity precision", "entity recall", "entity micro-F1", "token accuracy"], rows)


BOOTSTRAP_RESAMPLES = 1000
"""Resamples of every paired bootstrap the chapter shows."""


def bootstrap(key_a: str, key_b: str, n_resamples: int = BOOTSTRAP_RESAMPLES) -> tagging.BootstrapResult:
    """Paired bootstrap of tagger A against B on the book seed's runs."""
    check_choice(key_a, "key_a", TAGGERS), check_choice(key_b, "key_b", TAGGERS)  # each error names its own key
    # checked before the taggers' mentions are read (seconds), as paired_bootstrap will check it
    if check_positive_int(n_resamples, "n_resamples") > tagging.MAX_RESAMPLES:
        raise ValueError(f"n_resamples must be at most {tagging.MAX_RESAMPLES}, got {n_resamples}")
    gold = list(test_data().spans)
    return tagging.paired_bootstrap(gold, predicted_spans(key_a)[0], predicted_spans(key_b)[0],
                                    np.random.default_rng(TEST_SEED), n_resamples)


def partial_spans(key: str, kind: str = "PERSON") -> list[tuple[int, tuple, tuple]]:
    """Test sentences where the book seed's tagger found only part of a gold ``kind`` mention: (sentence, gold, predicted)."""
    check_tagger(key)
    kind = _check_kind(kind)
    out = []
    for k, (gold, found) in enumerate(zip(test_data().spans, predicted_spans(key)[0])):
        for span in gold:
            if span[2] != kind:
                continue
            for other in found:
                if other[2] == kind and other != span and other[0] < span[1] and span[0] < other[1]:
                    out.append((k, span, other))
    return out


def io_example() -> tuple[int, int]:
    """``(touching same-type pairs in the test corpus, index of the first sentence with one)``: what IO tags lose."""
    merges = [tagging.io_merges(s) for s in test_data().spans]
    return int(sum(merges)), int(np.flatnonzero(np.asarray(merges) > 0)[0])


def mean_f1(key: str) -> float:
    """Entity micro-F1 of a tagger, mean over seeds."""
    return float(np.mean([s.micro_f1 for s in scores(check_tagger(key))]))


def _best_tagger() -> tuple[str, str, float]:
    """``(key, name, mean micro-F1)`` of the tagger with the highest mean F1."""
    key = max(TAGGERS, key=mean_f1)
    return key, TAGGERS[key], mean_f1(key)


COMPARISONS = ((f"crf/{CRF_LAYER}/viterbi", f"frozen/{CRF_LAYER}/viterbi"),
               (f"frozen/{CRF_LAYER}/viterbi", f"frozen/{CRF_LAYER}/argmax"),
               (f"tuned/{CRF_LAYER}/argmax", f"frozen/{CRF_LAYER}/argmax"),
               (f"frozen/{CRF_LAYER}/argmax", "frozen/0/argmax"))
"""The pairs of taggers the chapter tests with the paired bootstrap."""


def _unknown_id() -> int:
    from mlm_book.finance.vocab import UNK_ID
    return UNK_ID


def mention_count(kind: str) -> int:
    """Test mentions of type ``kind``."""
    _check_kind(kind)
    return sum(span[2] == kind for spans in test_data().spans for span in spans)


def unknown_share(kind: str) -> float:
    """Share of the test tokens inside ``kind`` mentions that chapter 6's vocabulary reads as ``[UNK]``."""
    _check_kind(kind)
    data, unk = test_data(), _unknown_id()
    hits = [data.text.ids[k, a:b] == unk for k, spans in enumerate(data.spans) for a, b, t in spans if t == kind]
    return float(np.mean(np.concatenate(hits)))


def _check_kind(kind) -> str:
    return check_choice(kind, "kind", corpus_module.MENTION_TYPES)


def _recall(kind: str, unknown: bool, key: str) -> float:
    return recall_among(predicted_spans(check_tagger(key))[0], kind, unknown)


def unknown_recall(kind: str, key: str = f"frozen/{CRF_LAYER}/argmax") -> float:
    """Book seed: share of the test ``kind`` mentions made only of ``[UNK]`` tokens that ``key`` finds exactly."""
    return _recall(kind, True, key)


def known_recall(kind: str, key: str = f"frozen/{CRF_LAYER}/argmax") -> float:
    """Book seed: the same share for the other ``kind`` mentions."""
    return _recall(kind, False, key)


def example_sentence() -> int:
    """The figure's sentence: the first test sentence with a PERSON and a LOC mention on which the book seed's frozen layer-0 tagger gets a tag wrong."""
    data = test_data()
    wrong = predictions("frozen/0/argmax")[0] != data.tags
    for k, spans in enumerate(data.spans):
        if {"PERSON", "LOC"} <= {span[2] for span in spans} and wrong[k, :data.text.lengths[k]].any():
            return k
    return int(np.argmax(wrong.sum(axis=1)))


def _sentence_summary(sentence: int, keys) -> str:
    """What each tagger of ``keys`` gets wrong on one test sentence (book seed), in words, for alt text.

    Examples
    --------
    >>> _sentence_summary(example_sentence(), ["frozen/0/argmax"]).startswith("“frozen, layer 0, argmax”: ")  # doctest: +BOOK
    True
    """
    data = test_data()
    n = int(data.text.lengths[sentence])
    words, gold = data.words[sentence], data.tags[sentence, :n]
    parts = []
    for key in keys:
        found = predictions(check_tagger(key))[0][sentence, :n]
        wrong = [f"{TAGS[int(found[j])]} instead of {TAGS[int(gold[j])]} on “{words[j]}”"
                 for j in np.flatnonzero(found != gold)]
        parts.append(f"“{TAGGERS[key]}”: " + (f"{len(wrong)} wrong tag{'s' if len(wrong) != 1 else ''} ("
                                              + ", ".join(wrong) + ")" if wrong else "every tag right"))
    return "; ".join(parts)


def brute_force_log_partition(emissions, transitions, start, end) -> float:
    r"""$\log Z$ of a linear-chain CRF by enumerating all $K^n$ tag sequences (at most 10^6 of them).

    Examples
    --------
    >>> rng = np.random.default_rng(1)
    >>> e, T, a, b = rng.normal(size=(3, 4)), rng.normal(size=(4, 4)), rng.normal(size=4), rng.normal(size=4)
    >>> bool(abs(brute_force_log_partition(e, T, a, b) - crf.log_partition(e, T, a, b)) < 1e-12)
    True
    """
    import itertools

    from mlm_book.validation import as_float_array
    emissions = as_float_array(emissions, "emissions", ndim=2)
    n, K = emissions.shape
    if K ** n > 10 ** 6:
        raise ValueError(f"emissions must give at most 10^6 tag sequences to enumerate, got K^n = {K}^{n}")
    crf.log_partition(emissions, transitions, start, end)       # the same checks of shapes and values
    paths = np.array(list(itertools.product(range(K), repeat=n)))
    scores = (np.asarray(start)[paths[:, 0]] + emissions[np.arange(n), paths].sum(axis=1)
              + np.asarray(transitions)[paths[:, :-1], paths[:, 1:]].sum(axis=1) + np.asarray(end)[paths[:, -1]])
    top = scores.max()
    return float(top + np.log(np.exp(scores - top).sum()))


# ----------------------------------------------------------------------------- touching mentions and anonymisation
def touching_mentions(spans=None) -> dict[tuple[str, str], tuple[int, int]]:
    """Mentions that touch (one ends where the next begins), by their two types: ``(pairs, sentences, first sentence)``.

    Two touching mentions of one type are the segmentation ambiguity IO tags cannot write
    down (see [`io_merges`][mlm_book.tagging.io_merges]); touching mentions of two types are
    still told apart by their types.

    Parameters
    ----------
    spans : sequence of sequences of (int, int, str), optional
        Each sentence's mentions, not overlapping; default the test corpus's gold mentions.

    Returns
    -------
    dict of (str, str) to (int, int, int)
        For each ordered pair of types that touch somewhere: how many touching pairs, in how
        many sentences, and the index of the first such sentence.

    Raises
    ------
    TypeError
        If ``spans`` is not a sequence of sentences of ``(start, end, type)`` triples.
    ValueError
        If a sentence's mentions overlap or a span is empty.

    Examples
    --------
    >>> touching_mentions([[(0, 1, "LOC"), (1, 2, "LOC"), (3, 4, "LOC")], [(2, 3, "LOC"), (3, 6, "ORG")]])
    {('LOC', 'LOC'): (1, 1, 0), ('LOC', 'ORG'): (1, 1, 1)}
    """
    if spans is None:
        spans = test_data().spans
    sentences = check_sequence(spans, "spans")
    found: dict[tuple[str, str], list[int]] = {}
    for k, sentence in enumerate(sentences):
        ordered = tagging.check_spans(sentence, f"spans[{k}]")     # sorted; bad or overlapping spans fail
        hit = set()
        for a, b in zip(ordered, ordered[1:]):
            if a[1] == b[0]:
                entry = found.setdefault((a[2], b[2]), [0, 0, k])
                entry[0] += 1
                if (a[2], b[2]) not in hit:
                    entry[1] += 1
                    hit.add((a[2], b[2]))
    return {pair: tuple(entry) for pair, entry in sorted(found.items())}


def redaction_leaks(gold, found, kind: str = "PERSON") -> dict[str, int]:
    """What leaks when every token inside a predicted ``kind`` mention is redacted.

    A gold ``kind`` mention *leaks* when at least one of its tokens is not inside a
    predicted ``kind`` mention: it is *missed* when none of its tokens is, and *partly
    redacted* otherwise. Tokens redacted outside every gold ``kind`` mention are
    *over-redacted*: they cost the text, not privacy.

    Parameters
    ----------
    gold, found : sequence of sequences of (int, int, str)
        Each sentence's gold and predicted mentions (the same number of sentences).
    kind : str
        The type redacted, one of the corpus's `MENTION_TYPES`.

    Returns
    -------
    dict of str to int
        ``"mentions"``, ``"leaked"``, ``"missed"``, ``"partly redacted"``, ``"tokens"`` (in
        gold ``kind`` mentions), ``"tokens leaked"`` and ``"over-redacted tokens"``.

    Raises
    ------
    TypeError
        If ``gold`` or ``found`` is not a sequence of sentences of spans, or ``kind`` is not a str.
    ValueError
        If ``gold`` and ``found`` differ in length, a span is invalid, or ``kind`` is not a
        mention type.

    Examples
    --------
    >>> gold = [[(0, 2, "PERSON"), (4, 5, "LOC")], [(1, 3, "PERSON")]]
    >>> found = [[(0, 1, "PERSON")], [(3, 4, "PERSON")]]
    >>> leaks = redaction_leaks(gold, found)
    >>> leaks["mentions"], leaks["leaked"], leaks["missed"], leaks["partly redacted"]
    (2, 2, 1, 1)
    >>> leaks["tokens"], leaks["tokens leaked"], leaks["over-redacted tokens"]
    (4, 3, 1)
    """
    kind = _check_kind(kind)
    gold, found = check_sequence(gold, "gold"), check_sequence(found, "found")
    if len(gold) != len(found):
        raise ValueError(f"gold and found must hold the same number of sentences, got {len(gold)} and {len(found)}")
    counts = dict.fromkeys(("mentions", "leaked", "missed", "partly redacted", "tokens", "tokens leaked",
                            "over-redacted tokens"), 0)
    gold = [tagging.check_spans(sentence, f"gold[{k}]") for k, sentence in enumerate(gold)]
    found = [tagging.check_spans(sentence, f"found[{k}]") for k, sentence in enumerate(found)]
    for g, f in zip(gold, found):
        redacted = {j for a, b, t in f if t == kind for j in range(a, b)}
        private = {j for a, b, t in g if t == kind for j in range(a, b)}
        counts["over-redacted tokens"] += len(redacted - private)
        for a, b, t in g:
            if t != kind:
                continue
            visible = sum(j not in redacted for j in range(a, b))
            counts["mentions"] += 1
            counts["tokens"] += b - a
            counts["tokens leaked"] += visible
            if visible:
                counts["leaked"] += 1
                counts["missed" if visible == b - a else "partly redacted"] += 1
    return counts


def anonymisation(key: str = f"crf/{CRF_LAYER}/viterbi", kind: str = "PERSON") -> tuple[dict[str, int], ...]:
    """What leaks when tagger ``key`` redacts ``kind`` on the test corpus, per seed.

    [`redaction_leaks`][mlm_book.experiments.ch09_spans.redaction_leaks] of each seed's predicted mentions.

    Parameters
    ----------
    key : str
        One of `TAGGERS`.
    kind : str
        The type redacted.

    Returns
    -------
    tuple of dict
        One per seed of `SEEDS`, the book's first.

    Raises
    ------
    TypeError
        If ``key`` or ``kind`` is not a str.
    ValueError
        If ``key`` is not a tagger or ``kind`` not a mention type.

    Examples
    --------
    >>> runs = anonymisation()  # doctest: +BOOK
    >>> len(runs), runs[0]["mentions"] == mention_count("PERSON")  # doctest: +BOOK
    (5, True)
    """
    check_tagger(key)
    kind = _check_kind(kind)
    gold = list(test_data().spans)
    return tuple(redaction_leaks(gold, found, kind) for found in predicted_spans(key))


# ----------------------------------------------------------------------------- subwords
MERGE_COUNTS = (0, 100, 250, 500, 1000, 2000, 4000)
"""Numbers of BPE merges measured (4000 is more than the filings allow: it shows all of them)."""


@functools.cache
def _streams() -> tuple[list[str], list[str]]:
    from mlm_book.artefacts import filings
    world = filings.filings()
    test = corpus_module.generate_corpus(world.setup.corpus, np.random.default_rng(TEST_SEED))
    return world.corpus.tokens.tolist(), test.tokens.tolist()


@functools.cache
def subword_rows() -> tuple:
    """BPE learned on chapter 6's filings, measured on the test corpus, for each of `MERGE_COUNTS` (``SubwordStatistics`` rows).

    Examples
    --------
    >>> rows = subword_rows()
    >>> rows[0].subwords_per_word > rows[-1].subwords_per_word >= 1.0, rows[-1].unknown_rate
    (True, 0.0)
    """
    from mlm_book import subword
    train, test = _streams()
    return subword.subword_tradeoff(train, list(MERGE_COUNTS), eval_tokens=test)


def word_vocabulary_rates() -> tuple[int, float, float]:
    """Chapter 6's word vocabulary: ``(ids, [UNK] share of chapter 6's word tokens, of the test corpus's)``."""
    from mlm_book.artefacts import filings
    vocabulary = filings.filings().vocabulary
    rates = []
    for stream in _streams():
        words = [w for w in stream if w != corpus_module.SEP]
        rates.append(float(np.mean(np.asarray(vocabulary.encode(words)) == _unknown_id())))
    return vocabulary.size, rates[0], rates[1]


def matched_statistics():
    """``SubwordStatistics`` of `matched_bpe` on the test corpus."""
    from mlm_book import subword
    return subword.subword_statistics(matched_bpe(), _streams()[1])


def split_table(words):
    """How the word vocabulary and the matched BPE read each of ``words``."""
    from mlm_book.artefacts import filings
    from mlm_book.report import table
    words = check_sequence(words, "words", of=str)
    vocabulary, bpe = filings.filings().vocabulary, matched_bpe()
    rows = [[word, vocabulary.words[vocabulary.encode([word])[0]],
             " · ".join(piece.replace("</w>", "") for piece in bpe.encode_word(word))] for word in words]
    return table(["word", "word vocabulary", f"BPE, {bpe.vocabulary_size} ids"], rows)


def minimum_count() -> int:
    """How often chapter 6's filings must use a word for its vocabulary to keep it."""
    from mlm_book.artefacts import filings
    return int(filings.filings().setup.min_count)


def unknown_words(sentence: int) -> list[str]:
    """The words of a test sentence that chapter 6's vocabulary reads as ``[UNK]``."""
    data = test_data()
    sentence = check_positive_int(sentence, "sentence", minimum=0)
    if sentence >= data.text.count:
        raise ValueError(f"sentence must be below {data.text.count}, got {sentence}")
    ids = data.text.ids[sentence, :data.text.lengths[sentence]]
    return [word for word, i in zip(data.words[sentence], ids) if i == _unknown_id()]


def mention_pieces(kind: str) -> float:
    """Mean number of matched-BPE subwords per token of the test corpus's ``kind`` mentions."""
    _check_kind(kind)
    data, bpe = test_data(), matched_bpe()
    pieces = [len(bpe.encode_word(word)) for k, spans in enumerate(data.spans) for a, b, t in spans if t == kind
              for word in data.words[k][a:b]]
    return float(np.mean(pieces))


def figure_subwords():
    """Subwords per word against vocabulary size for BPE, and chapter 6's word vocabulary as one point.

    Returns
    -------
    DescribedFigure
        The drawing, with alt text and a caption computed from the same measurements.

    Examples
    --------
    >>> drawn = figure_subwords()  # doctest: +BOOK
    >>> len(drawn.figure.axes), f"{matched_statistics().subwords_per_word:.2f} tokens per word" in drawn.alt
    (1, True)
    """
    from mlm_book.figures import NARROW, PALETTE, describe, subplots
    rows = subword_rows()
    size, _, unknown = word_vocabulary_rates()
    bpe_unknown = max(r.unknown_rate for r in rows)
    fig, ax = subplots(width=NARROW, height=3.4)
    ax.plot([r.vocabulary_size for r in rows], [r.subwords_per_word for r in rows], marker="o",
            color=PALETTE["blue"], label=f"BPE ({100 * bpe_unknown:.0f} % of words with [UNK])")
    ax.plot([size], [1.0], marker="s", ls="none", color=PALETTE["vermillion"],
            label=f"word vocabulary ({100 * unknown:.1f} % [UNK])")
    matched = matched_statistics()
    ax.plot([matched.vocabulary_size], [matched.subwords_per_word], marker="*", ms=12, ls="none",
            color=PALETTE["orange"], label=f"BPE with {matched.vocabulary_size} ids")
    ax.set_xscale("log")
    ax.set_xlabel("vocabulary size (ids)")
    ax.set_ylabel("tokens per word (test corpus)")
    ax.legend(loc="upper right")  # the curve falls from the upper left: the upper right is empty
    never = ("never producing an unknown word" if bpe_unknown == 0
             else f"with at most {100 * bpe_unknown:.1f} % of the test words unknown")
    alt = (f"Tokens per word of the test corpus against vocabulary size, on a log scale. The BPE curve falls from "
           f"{rows[0].subwords_per_word:.1f} tokens per word with {rows[0].vocabulary_size} ids (characters only) to "
           f"{rows[-1].subwords_per_word:.2f} with {rows[-1].vocabulary_size} ids, {never}. Chapter 6's word "
           f"vocabulary is one point, at {size} ids and one token per word, with {100 * unknown:.1f} % of the test "
           f"words unknown; a star on the BPE curve marks the BPE of the same size, at "
           f"{matched.subwords_per_word:.2f} tokens per word.")
    return describe(fig, alt=alt,
                    caption="The subword trade-off: vocabulary size against sequence length, and unknown words.")


# ----------------------------------------------------------------------------- figures
def figure_f1():
    """Entity micro-F1 by layer for the frozen and fine-tuned taggers (argmax and Viterbi) and the CRF, a dot per seed.

    Returns
    -------
    DescribedFigure
        The drawing, with alt text and a caption computed from the same scores.

    Examples
    --------
    >>> drawn = figure_f1()  # doctest: +BOOK
    >>> len(drawn.figure.axes), f"“{_best_tagger()[1]}”, at {_best_tagger()[2]:.2f}" in drawn.alt
    (1, True)
    """
    from mlm_book.figures import PALETTE, WIDE, describe, subplots
    fig, ax = subplots(width=WIDE, height=3.6)
    styles = {("frozen", "argmax"): (PALETTE["sky"], "frozen, argmax"),
              ("frozen", "viterbi"): (PALETTE["blue"], "frozen, Viterbi"),
              ("tuned", "argmax"): (PALETTE["orange"], "fine-tuned, argmax"),
              ("tuned", "viterbi"): (PALETTE["vermillion"], "fine-tuned, Viterbi")}
    width = 0.17
    for j, ((kind, decoder), (color, label)) in enumerate(styles.items()):
        for layer in LAYERS:
            values = np.array([s.micro_f1 for s in scores(f"{kind}/{layer}/{decoder}")])
            x = layer + (j - 2) * width
            ax.bar(x, values.mean(), width=width * 0.9, color=color, label=label if layer == 0 else None)
            ax.plot(np.full(values.size, x), values, ls="none", marker=".", color=PALETTE["black"])
    values = np.array([s.micro_f1 for s in scores(f"crf/{CRF_LAYER}/viterbi")])
    x = CRF_LAYER + 2 * width
    ax.bar(x, values.mean(), width=width * 0.9, color=PALETTE["green"], label="CRF")
    ax.plot(np.full(values.size, x), values, ls="none", marker=".", color=PALETTE["black"])
    ax.set_xticks(list(LAYERS), [f"layer {layer}" for layer in LAYERS])
    ax.set_ylabel(f"entity micro-F1 (bars: mean of {len(SEEDS)} seeds)")
    ax.set_ylim(0, 1.02)  # a seed at F1 = 1 is drawn whole
    # below the tick labels, off the bars
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.12), ncol=5, frameon=False)
    _, best_name, best = _best_tagger()
    worst = min(TAGGERS, key=mean_f1)
    layers = ", ".join(str(layer) for layer in LAYERS[:-1]) + f" and {LAYERS[-1]}"
    alt = (f"Bars of entity micro-F1 (mean of {len(SEEDS)} seeds, with a dot per seed) at layers {layers} for four "
           f"softmax taggers (frozen or fine-tuned, decoded by argmax or Viterbi) and, at layer {CRF_LAYER}, the CRF. "
           f"The best is “{best_name}”, at {best:.2f}; the frozen argmax tagger climbs from "
           f"{mean_f1('frozen/0/argmax'):.2f} at layer 0 to {mean_f1(f'frozen/{LAYERS[-1]}/argmax'):.2f} at layer "
           f"{LAYERS[-1]}, and the lowest bar is “{TAGGERS[worst]}”, at {mean_f1(worst):.2f}.")
    return describe(fig, alt=alt, caption="Entity micro-F1 of every tagger on the test corpus (bars: mean over "
                                          f"{len(SEEDS)} seeds; dots: each seed).")


def figure_sentence(sentence: int, keys: tuple[str, ...]):
    """One test sentence with its gold tags and the book seed's tags from each tagger of ``keys``.

    Returns
    -------
    DescribedFigure
        The drawing, with alt text (the sentence and each tagger's wrong tags) and a caption.

    Examples
    --------
    >>> drawn = figure_sentence(example_sentence(), ("frozen/0/argmax",))  # doctest: +BOOK
    >>> len(drawn.figure.axes), "“frozen, layer 0, argmax”: " in drawn.alt
    (1, True)
    """
    from mlm_book.figures import PALETTE, WIDE, describe, subplots
    data = test_data()
    sentence = check_positive_int(sentence, "sentence", minimum=0)
    if sentence >= data.text.count:
        raise ValueError(f"sentence must be below {data.text.count}, got {sentence}")
    # a tuple of tagger keys: a single key (a str) or anything else is refused by name
    keys = [check_choice(key, "keys", TAGGERS) for key in check_sequence(keys, "keys", of=str)]
    words = data.words[sentence]
    rows = [("gold", data.tags[sentence, :len(words)])] + [
        (TAGGERS[key], predictions(key)[0][sentence, :len(words)]) for key in keys]
    fig, ax = subplots(width=WIDE, height=0.5 + 0.42 * len(rows))
    colors = {"O": PALETTE["grey"], "ORG": PALETTE["blue"], "PRODUCT": PALETTE["orange"],
              "PERSON": PALETTE["vermillion"], "LOC": PALETTE["green"]}
    for i, (name, ids) in enumerate(rows):
        for j, t in enumerate(ids):
            tag = TAGS[int(t)]
            wrong = i > 0 and int(t) != int(rows[0][1][j])
            ax.text(j, -i, tag, ha="center", va="center", fontsize=9, color=colors[tag.split("-")[-1]],
                    fontweight="bold" if wrong else "normal")
        ax.text(-0.7, -i, name, ha="right", va="center", fontsize=9)
    for j, word in enumerate(words):
        ax.text(j, 1, word, ha="center", va="center", fontsize=9)
    ax.set_xlim(-0.6, len(words) - 0.4)
    ax.set_ylim(-len(rows) + 0.5, 1.5)
    ax.axis("off")
    gold = ", ".join(f"{' '.join(words[a:b])} ({kind})" for a, b, kind in data.spans[sentence]) or "no mention"
    alt = (f"The test sentence “{' '.join(words)}” ({len(words)} words; gold mentions: {gold}) with its gold tags "
           f"and the book seed's tags from {len(keys)} tagger{'s' if len(keys) != 1 else ''}, one row each, wrong "
           f"tags in bold. " + _sentence_summary(sentence, keys) + ".")
    which = ("the first test sentence with a person and a place on which the frozen layer-0 tagger errs"
             if sentence == example_sentence() else f"test sentence {sentence}")
    whose = "a tagger's" if len(keys) == 1 else f"{len(keys)} taggers'"
    return describe(fig, alt=alt, caption=f"Gold tags and {whose} tags on {which} (book seed; wrong tags in bold).")


# ----------------------------------------------------------------------------- claims
def _bio_count() -> int:
    return len(tagging.tags_for_types(corpus_module.MENTION_TYPES, "BIO"))


def _partial_counts() -> tuple[int, int, int]:
    found = tagging.entity_scores([[(0, 2, "PERSON")]], [[(0, 1, "PERSON")]])
    return int(found.tp.sum()), int(found.fp.sum()), int(found.fn.sum())


def _learned(getter, rule, margin) -> dict:
    """``over_seeds`` of ``getter(k)`` at each seed ``k``, counting the seeds where ``rule`` holds; ``margin(v)`` is a
    seed's signed distance from the rule's threshold."""
    values = [getter(k) for k in range(len(SEEDS))]
    return over_seeds(values, sum(bool(rule(v)) for v in values), margins=[margin(v) for v in values])


def _crf_gain(k: int) -> tuple[float, float]:
    return (scores(f"crf/{CRF_LAYER}/viterbi")[k].micro_f1, scores(f"frozen/{CRF_LAYER}/argmax")[k].micro_f1)


def _leak_share(k: int) -> float:
    run = anonymisation(f"crf/{CRF_LAYER}/viterbi")[k]
    return run["leaked"] / run["mentions"]


def _flattery(k: int) -> tuple[float, float]:
    key = f"frozen/{CRF_LAYER}/argmax"
    return (float(token_accuracies(key)[k]), scores(key)[k].micro_f1)


CLAIMS = (
    Claim("D-37", f"BIO tags for the {len(corpus_module.MENTION_TYPES)} mention types", seed="—",
          rule="2n + 1", compute=_bio_count, accept=lambda v: v == 2 * len(corpus_module.MENTION_TYPES) + 1, fmt="d",
          section="from-spans-to-tags"),
    Claim("D-38", "IO loses where touching mentions of one type begin: touching pairs in the test corpus",
          seed="—", rule="> 0", compute=lambda: io_example()[0], accept=lambda v: v > 0, fmt="d",
          section="from-spans-to-tags"),
    Claim("D-07", "Subwords leave no word unknown: test-corpus unknown rate of a BPE with as many ids as the word "
          "vocabulary, and of the word vocabulary", seed="—", rule="BPE = 0 < word vocabulary",
          compute=lambda: (float(matched_statistics().unknown_rate), float(word_vocabulary_rates()[2])),
          accept=lambda v: v[0] == 0 < v[1], section="splitting-words"),
    Claim("D-42", "A partial span (\"Jane\" for \"Jane Villanueva\") counts as errors: (tp, fp, fn)", seed="—",
          rule="(0, 1, 1)", compute=_partial_counts, accept=lambda v: v == (0, 1, 1), section="scores-by-entity"),
    Claim("D-35", f"Anonymisation: share of the test PERSON mentions left at least partly visible when every token "
          f"of a predicted PERSON mention is redacted, CRF on layer {CRF_LAYER} ({len(SEEDS)} seeds)", seed="—",
          rule="≤ 0.05 of the mentions leak",
          compute=lambda: _learned(_leak_share, lambda v: v <= 0.05, lambda v: 0.05 - v),
          accept=lambda v: True, expected="reproduced", section="redacting-names"),
    Claim("D-39", f"A CRF over the top layer against per-token argmax on the same frozen layer: entity micro-F1 "
          f"({len(SEEDS)} seeds)", seed="—", rule="CRF ≥ argmax + 0.01",
          compute=lambda: _learned(_crf_gain, lambda v: v[0] >= v[1] + 0.01, lambda v: v[0] - (v[1] + 0.01)),
          accept=lambda v: True,
          expected="reproduced", section="scores-by-entity"),
    Claim("D-41", f"Token accuracy flatters a tagger: token accuracy against entity micro-F1, frozen top layer, "
          f"argmax ({len(SEEDS)} seeds)", seed="—", rule="token accuracy ≥ micro-F1 + 0.05",
          compute=lambda: _learned(_flattery, lambda v: v[0] >= v[1] + 0.05, lambda v: v[0] - (v[1] + 0.05)),
          accept=lambda v: True,
          expected="not reproduced", section="scores-by-entity"),
)
