"""The span taggers' entity scores on the test sentences: what chapter 9's two halves (words and subwords) both read.

The taggers' runs are the artefacts [`mlm_book.artefacts.span_taggers`][mlm_book.artefacts.span_taggers]
(on chapter 7's filing encoder) and [`mlm_book.artefacts.subword_encoder`][mlm_book.artefacts.subword_encoder]
(on the subword encoders); here their predicted tag ids on the test sentences are read as mentions
([`decoded`][mlm_book.readings.span_scores.decoded]: an argmax tagger's with ``conlleval``'s repair of
invalid sequences, a Viterbi one's strictly) and scored by entity against the gold
([`entity_scores`][mlm_book.readings.span_scores.entity_scores]: a predicted span counts only if its
start, end and type equal a gold span's), and the recall of mentions made only of ``[UNK]`` tokens is
told apart from the others' ([`recall_among`][mlm_book.readings.span_scores.recall_among]).
"""

from __future__ import annotations

import functools

import numpy as np

from mlm_book import artefacts, cache, tagging
from mlm_book.artefacts.span_taggers import (CRF_LAYER, LAYERS, SCHEME, SEEDS, TAGS, book_run, tagger_predictions,
                                             test_data)
from mlm_book.finance import corpus as corpus_module
from mlm_book.finance.vocab import UNK_ID
from mlm_book.validation import as_int_array, check_bool, check_choice, check_sequence

__all__ = ["TAGGERS", "check_tagger", "predictions", "decoded", "entity_scores", "predicted_spans", "scores", "recall_among"]

TAGGERS = {**{f"frozen/{layer}/{decoder}": f"frozen, layer {layer}, {name}" for layer in LAYERS
              for decoder, name in (("argmax", "argmax"), ("viterbi", "Viterbi"))},
           f"crf/{CRF_LAYER}/viterbi": f"CRF, layer {CRF_LAYER}",
           **{f"tuned/{depth}/{decoder}": f"fine-tuned, layer {depth}, {name}" for depth in LAYERS
              for decoder, name in (("argmax", "argmax"), ("viterbi", "Viterbi"))}}
"""Every tagger and decoder, by key, with its name in the chapter."""


def check_tagger(key) -> str:
    """``key`` if it names one of `TAGGERS` (a ``ValueError`` naming ``key`` otherwise).

    Examples
    --------
    >>> check_tagger("crf/2/viterbi"), TAGGERS["crf/2/viterbi"]
    ('crf/2/viterbi', 'CRF, layer 2')
    >>> check_tagger("crf/1/viterbi")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    ValueError: key must be one of [...], got 'crf/1/viterbi'
    """
    return check_choice(key, "key", TAGGERS)


def predictions(key: str) -> tuple[np.ndarray, ...]:
    """Predicted tag ids on the test sentences, shape (N, m), per seed (the book's first); cached, run on a miss."""
    check_tagger(key)
    return tuple(np.array(tagger_predictions(book_run(seed))[key]) for seed in SEEDS)


def _spans_of(tag_ids: np.ndarray, lengths: np.ndarray, strict: bool) -> list:
    return [tagging.spans_from_tags([TAGS[t] for t in row[:n]], SCHEME, strict=strict)
            for row, n in zip(tag_ids, lengths)]


def decoded(key: str, tag_ids) -> tuple[list, ...]:
    """Each seed's test tag ids read as mentions: an argmax tagger's (``key`` ends in ``/argmax``) with
    ``conlleval``'s repair, any other strictly (a Viterbi tagger's output is valid).

    ``key`` may name a subword tagger too (chapter 9's second half), so only its decoder is checked;
    ``tag_ids`` holds one (N, m) array of tag ids (indices into ``TAGS``) per seed, N the test sentences.

    Raises
    ------
    TypeError, ValueError
        If ``key`` is not a str ending in ``/argmax`` or ``/viterbi``, or ``tag_ids`` is not a
        sequence of (N, m) integer arrays of tag ids covering every test sentence.

    Examples
    --------
    The gold tags read back as the gold mentions (the test corpus is built without the store):

    >>> data = test_data()
    >>> found = decoded("frozen/2/viterbi", [data.tags])      # -1 past each sentence's length
    >>> len(found), found[0] == [list(spans) for spans in data.spans]
    (1, True)
    """
    if not isinstance(key, str):
        raise TypeError(f"key must be a str naming a tagger, got {type(key).__name__}")
    if key.rsplit("/", 1)[-1] not in ("argmax", "viterbi"):
        raise ValueError(f"key must end in /argmax or /viterbi (the tagger's decoder), got {key[:60]!r}")
    strict = not key.endswith("/argmax")
    lengths = test_data().text.lengths
    return tuple(_spans_of(_check_tag_ids(p, lengths), lengths, strict) for p in check_sequence(tag_ids, "tag_ids"))


def _check_tag_ids(value, lengths: np.ndarray) -> np.ndarray:
    ids = as_int_array(value, "tag_ids", ndim=2)
    if ids.shape[0] != lengths.size or ids.shape[1] < lengths.max():
        raise ValueError(f"tag_ids must hold (N, m) arrays with a row per test sentence (N = {lengths.size}) and "
                         f"m >= {lengths.max()}, got shape {ids.shape}")
    # past a sentence's length the slots are padding (the runs store -1 there): only the words' tags are read
    words = ids[np.arange(ids.shape[1]) < lengths[:, None]]
    if words.size and (words.min() < 0 or words.max() >= len(TAGS)):
        raise ValueError(f"tag_ids must hold tag ids in [0, {len(TAGS)}) within each sentence's length, got values "
                         f"from {words.min()} to {words.max()}")
    return ids


def _check_found(value, name: str) -> list:
    """One list of mentions per test sentence, each mention checked against its sentence's length."""
    sentences = check_sequence(value, name)
    lengths = test_data().text.lengths
    if len(sentences) != lengths.size:
        raise ValueError(f"{name} must hold one list of mentions per test sentence ({lengths.size}), "
                         f"got {len(sentences)}")
    return [tagging.check_spans(spans, name, int(n)) for spans, n in zip(sentences, lengths)]


def entity_scores(found) -> tuple[tagging.EntityScores, ...]:
    """Entity scores of each seed's mentions (one list per test sentence) against the test gold.

    Raises
    ------
    TypeError, ValueError
        If ``found`` is not a sequence (one item per seed) of one list of mentions per test sentence.

    Examples
    --------
    >>> gold = [list(spans) for spans in test_data().spans]
    >>> none = [[] for _ in gold]
    >>> [round(s.micro_f1, 3) for s in entity_scores([gold, none])]      # a perfect tagger, a silent one
    [1.0, 0.0]
    """
    gold = list(test_data().spans)
    return tuple(tagging.entity_scores(gold, _check_found(spans, "found")) for spans in check_sequence(found, "found"))


def predicted_spans(key: str) -> tuple[list, ...]:
    """Each seed's predicted mentions per test sentence (argmax output read with ``conlleval``'s repair)."""
    return _predicted_spans(check_tagger(key))


@functools.cache
def _predicted_spans(key: str) -> tuple[list, ...]:
    """The memoised body of `predicted_spans`: chapter 9 reads a tagger's mentions in several tables, and
    decoding five seeds' test sentences takes about a second."""
    return decoded(key, predictions(key))


def scores(key: str) -> tuple[tagging.EntityScores, ...]:
    """Entity scores of each seed's run."""
    key = check_tagger(key)
    return _scores(key)


@functools.cache
def _scores(key: str) -> tuple[tagging.EntityScores, ...]:
    """The memoised body of `scores`, which checks the arguments before the cache."""
    # Stored once (15-19 s for the chapter's taggers, half of it re-checking 1.2 million decoded mentions): the
    # chapter, its claims and the book's tests each read them in a process of their own. Every module the
    # computation reaches keys the entry, and so does the key of the taggers' runs it reads.
    arrays, metadata = cache.cached("ch09-span-scores", {"key": key}, _producers(),
                                    lambda: _scores_entry(_compute_scores(key)), book_sized=False)
    return _scores_from_entry(arrays, metadata)


@functools.cache  # the same for every key: finding and reading the modules takes a second
def _producers() -> tuple:
    return (*cache.modules_reached(__name__), artefacts.key_source("span-taggers"))


def _compute_scores(key: str) -> tuple[tagging.EntityScores, ...]:
    return entity_scores(predicted_spans(key))


def _scores_entry(scores: tuple[tagging.EntityScores, ...]) -> tuple[dict, dict]:
    """Each seed's counts as arrays (``tp_0``, ``fp_0``, ``fn_0``, ``tp_1``, ...), its types as metadata."""
    arrays = {f"{name}_{k}": getattr(s, name) for k, s in enumerate(scores) for name in ("tp", "fp", "fn")}
    return arrays, {"types": [list(s.types) for s in scores]}


def _scores_from_entry(arrays: dict, metadata: dict) -> tuple[tagging.EntityScores, ...]:
    return tuple(tagging.EntityScores(tuple(types), *(arrays[f"{name}_{k}"] for name in ("tp", "fp", "fn")))
                 for k, types in enumerate(metadata["types"]))


def _check_kind(kind) -> str:
    return check_choice(kind, "kind", corpus_module.MENTION_TYPES)


def recall_among(found: list, kind: str, unknown: bool) -> float:
    """Share of the test ``kind`` mentions that are (``unknown``) or are not only ``[UNK]`` tokens in chapter 6's
    vocabulary and that ``found`` (one list of predicted mentions per test sentence) holds exactly.

    Raises
    ------
    TypeError, ValueError
        If ``kind`` is not a mention type, ``unknown`` not a bool, or ``found`` not one list of
        mentions per test sentence.

    Examples
    --------
    >>> gold = [list(spans) for spans in test_data().spans]
    >>> recall_among(gold, "LOC", False), recall_among([[] for _ in gold], "LOC", False)
    (1.0, 0.0)
    """
    kind = _check_kind(kind)
    unknown = check_bool(unknown, "unknown")
    found = [set(spans) for spans in _check_found(found, "found")]
    data, unk = test_data(), UNK_ID
    hit = total = 0
    for k, spans in enumerate(data.spans):
        for span in spans:
            if span[2] == kind and bool(np.all(data.text.ids[k, span[0]:span[1]] == unk)) == unknown:
                total += 1
                hit += span in found[k]
    return hit / total if total else float("nan")


