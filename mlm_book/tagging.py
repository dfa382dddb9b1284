r"""Tag schemes for named entities, and entity-level evaluation with a paired bootstrap.

A sentence of $n$ tokens carries its entities as *spans* ``(start, end, type)``: the tokens
``start, ..., end - 1`` (``end`` exclusive) form one entity of ``type``, a non-empty string.
Spans of one sentence never overlap. A token classifier predicts one *tag* per token
instead, and a scheme says how spans become tags:

* ``"IO"``: ``I-X`` inside an entity of type ``X``, ``O`` outside. Two entities of the same
  type that touch (``end`` of one is ``start`` of the next) get the same tags as one long
  entity, so IO cannot tell them apart: [`io_merges`][mlm_book.tagging.io_merges] counts the
  spans a corpus loses this way.
* ``"BIO"`` (IOB2): ``B-X`` on an entity's first token, ``I-X`` on the others.
* ``"BIOES"``: ``S-X`` for a one-token entity; otherwise ``B-X``, then ``I-X``, then ``E-X``
  on the last token.

BIO and BIOES are lossless: [`spans_from_tags`][mlm_book.tagging.spans_from_tags] inverts
[`tags_from_spans`][mlm_book.tagging.tags_from_spans] exactly. Not every tag sequence is
valid (BIO: ``I-X`` must follow ``B-X`` or ``I-X``); [`check_tags`][mlm_book.tagging.check_tags]
says where and why, and [`allowed_transitions`][mlm_book.tagging.allowed_transitions] gives
the same rules as a boolean matrix for constrained Viterbi decoding
([`mlm_book.crf.viterbi`][mlm_book.crf.viterbi]).

Evaluation is by entity, as in CoNLL: a predicted span counts only if its start, end and
type all equal a gold span's ([`entity_scores`][mlm_book.tagging.entity_scores]);
[`paired_bootstrap`][mlm_book.tagging.paired_bootstrap] says how sure one may be that one
system's micro-F1 beats another's on the same sentences.

Examples
--------
>>> tags = tags_from_spans([(0, 2, "PER"), (3, 4, "ORG")], 4, "BIO")
>>> tags
['B-PER', 'I-PER', 'O', 'B-ORG']
>>> spans_from_tags(tags, "BIO")
[(0, 2, 'PER'), (3, 4, 'ORG')]
>>> round(entity_scores([[(0, 2, "PER")]], [[(0, 1, "PER")]]).micro_f1, 3)
0.0
"""

from __future__ import annotations

import itertools
import numbers
from dataclasses import dataclass

import numpy as np

from mlm_book.validation import (
    check_bool,
    check_generator,
    check_positive_int,
    check_probability,
    check_sequence,
)

__all__ = [
    "SCHEMES",
    "MAX_LENGTH",
    "MAX_RESAMPLES",
    "tags_for_types",
    "tags_from_spans",
    "check_spans",
    "check_tags",
    "spans_from_tags",
    "io_merges",
    "allowed_transitions",
    "EntityScores",
    "entity_scores",
    "token_accuracy",
    "BootstrapResult",
    "paired_bootstrap",
]

SCHEMES = {"IO": ("I",), "BIO": ("B", "I"), "BIOES": ("B", "I", "E", "S")}
"""The tag schemes, each with the prefixes its tags may carry besides ``O``."""

MAX_LENGTH = 10**6
"""Longest sentence [`tags_from_spans`][mlm_book.tagging.tags_from_spans] builds tags for: a million tokens is far beyond any sentence, while ``length=10**12`` would exhaust memory."""

MAX_RESAMPLES = 10**6
"""Most resamples [`paired_bootstrap`][mlm_book.tagging.paired_bootstrap] draws (the usual 1,000 to 10,000 fit many times over)."""

_BLOCK_DRAWS = 2**21
"""Index draws per block of resamples in [`paired_bootstrap`][mlm_book.tagging.paired_bootstrap]: memory stays near 32 MB whatever the corpus size."""


# ----------------------------------------------------------------------------- checks
def _check_scheme(scheme) -> str:
    if not isinstance(scheme, str):
        raise TypeError(f"scheme must be one of {sorted(SCHEMES)} (a str), got {type(scheme).__name__}")
    if scheme not in SCHEMES:
        raise ValueError(f"scheme must be one of {sorted(SCHEMES)}, got {scheme!r:.40}")
    return scheme


def _parse_tag(tag, scheme: str, name: str) -> tuple[str, str]:
    """``(prefix, type)`` of a tag; ``("O", "")`` for ``O``."""
    if not isinstance(tag, str):
        raise TypeError(f"{name} must be a tag (str) such as 'O' or 'B-ORG', got {type(tag).__name__}")
    if tag == "O":
        return "O", ""
    prefix, dash, kind = tag.partition("-")
    if dash != "-" or not kind or prefix not in SCHEMES[scheme]:
        allowed = ", ".join(f"'{p}-X'" for p in SCHEMES[scheme])
        raise ValueError(f"{name} must be 'O' or one of {allowed} with a non-empty type X under scheme "
                         f"{scheme!r}, got {tag!r:.40}")
    return prefix, kind


def _check_tag_list(tags, scheme: str, name: str) -> list[tuple[str, str]]:
    items = check_sequence(tags, name)
    if len(items) > MAX_LENGTH:
        raise ValueError(f"{name} must hold at most {MAX_LENGTH} tags, got {len(items)}")
    return [_parse_tag(tag, scheme, f"{name}[{i}]") for i, tag in enumerate(items)]


def _check_index(value, name: str) -> int:
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be an integer, got {type(value).__name__}")
    return int(value)


def check_spans(spans, name: str, length: int | None = None) -> list[tuple[int, int, str]]:
    """Spans of one sentence, checked, as sorted ``(start, end, type)`` tuples.

    Parameters
    ----------
    spans : sequence of (int, int, str)
        Half-open token ranges ``[start, end)`` with a non-empty type, e.g. ``(0, 2, "ORG")``.
    name : str
        The argument's name, for error messages.
    length : int, optional
        The sentence's length, which every ``end`` must not exceed.

    Returns
    -------
    list of (int, int, str)
        The spans sorted by start.

    Raises
    ------
    TypeError
        If a span is not a ``(start, end, type)`` triple of two integers and a str.
    ValueError
        If a span is empty or out of bounds, two spans overlap, or a type is blank.

    Examples
    --------
    >>> check_spans([(3, 4, "LOC"), (0, 2, "ORG")], "spans")
    [(0, 2, 'ORG'), (3, 4, 'LOC')]
    """
    if not isinstance(name, str):
        raise TypeError(f"name must be the argument's name (str), got {type(name).__name__}")
    if length is not None:
        length = check_positive_int(length, "length", minimum=0)
    items = check_sequence(spans, name)
    checked = []
    for i, span in enumerate(items):
        where = f"{name}[{i}]"
        if isinstance(span, (str, bytes)) or not isinstance(span, (tuple, list)) or len(span) != 3:
            raise TypeError(f"{where} must be a span (start, end, type), got {type(span).__name__}")
        start, end = _check_index(span[0], f"{where} start"), _check_index(span[1], f"{where} end")
        kind = span[2]
        if not isinstance(kind, str):
            raise TypeError(f"{where} type must be a str such as 'ORG', got {type(kind).__name__}")
        if not kind or "\n" in kind or kind.isspace():
            raise ValueError(f"{where} type must be a non-empty name such as 'ORG', got {kind!r:.40}")
        if start < 0 or start >= end:
            raise ValueError(f"{where} must have 0 <= start < end (end exclusive), got ({start}, {end})")
        if length is not None and end > length:
            raise ValueError(f"{where} must lie inside the sentence [0, length) = [0, {length}), "
                             f"got ({start}, {end})")
        checked.append((start, end, kind))
    checked.sort()
    for previous, current in itertools.pairwise(checked):
        if current[0] < previous[1]:
            raise ValueError(f"{name} must not overlap, got {previous} and {current}")
    return checked


def _check_corpus(value, name: str) -> list[list[tuple[int, int, str]]]:
    sentences = check_sequence(value, name)
    return [check_spans(sentence, f"{name}[{i}]") for i, sentence in enumerate(sentences)]


# ----------------------------------------------------------------------------- schemes
def tags_for_types(types, scheme: str = "BIO") -> list[str]:
    """Every tag of ``scheme`` for the entity ``types``: ``O`` first, then each type's tags.

    Parameters
    ----------
    types : sequence of str
        Entity types, distinct and non-empty (``["ORG", "PER"]``).
    scheme : {"IO", "BIO", "BIOES"}
        The tag scheme.

    Returns
    -------
    list of str
        ``1 + len(types) * p`` tags with ``p`` the scheme's prefixes (1, 2 or 4), in the order
        ``O``, then for each type its prefixes in the order ``B, I, E, S`` that the scheme has.

    Raises
    ------
    TypeError
        If ``types`` is not a sequence of str or ``scheme`` is not a str.
    ValueError
        If a type is empty, holds ``-`` at its start or repeats, or ``scheme`` is unknown.

    Examples
    --------
    >>> tags_for_types(["ORG"], "BIOES")
    ['O', 'B-ORG', 'I-ORG', 'E-ORG', 'S-ORG']
    >>> len(tags_for_types(["ORG", "PER"], "BIO"))
    5
    """
    scheme = _check_scheme(scheme)
    kinds = check_sequence(types, "types", of=str)
    if len(set(kinds)) != len(kinds):
        raise ValueError("types must be distinct")
    if len(kinds) > MAX_LENGTH:
        raise ValueError(f"types must hold at most {MAX_LENGTH} types, got {len(kinds)}")
    for kind in kinds:
        if not kind or kind.isspace():
            raise ValueError(f"types must hold non-empty names, got {kind!r:.40}")
    return ["O"] + [f"{prefix}-{kind}" for kind in kinds for prefix in SCHEMES[scheme]]


def tags_from_spans(spans, length: int, scheme: str = "BIO") -> list[str]:
    r"""The tags of a sentence of ``length`` tokens whose entities are ``spans``.

    Under ``"IO"`` two touching spans of the same type get the tags of one span: the
    information IO loses (see [`io_merges`][mlm_book.tagging.io_merges]).

    Parameters
    ----------
    spans : sequence of (int, int, str)
        Entities ``(start, end, type)``, ``end`` exclusive, inside ``[0, length)``, not
        overlapping (in any order).
    length : int
        Number of tokens, at most [`MAX_LENGTH`][mlm_book.tagging.MAX_LENGTH]; 0 gives ``[]``.
    scheme : {"IO", "BIO", "BIOES"}
        The tag scheme.

    Returns
    -------
    list of str, length ``length``

    Raises
    ------
    TypeError
        If a span is not a triple of two integers and a str, or ``length`` is not an integer.
    ValueError
        If spans overlap, a span has ``start >= end`` or leaves the sentence, a type is empty,
        ``length`` is negative or too large, or ``scheme`` is unknown.

    Examples
    --------
    >>> tags_from_spans([(0, 1, "ORG"), (1, 3, "ORG")], 4, "BIOES")
    ['S-ORG', 'B-ORG', 'E-ORG', 'O']
    >>> tags_from_spans([(0, 1, "ORG"), (1, 3, "ORG")], 4, "IO")   # one entity, as far as IO can tell
    ['I-ORG', 'I-ORG', 'I-ORG', 'O']
    """
    length = check_positive_int(length, "length", minimum=0)
    if length > MAX_LENGTH:
        raise ValueError(f"length must be at most {MAX_LENGTH} tokens, got {length}")
    spans = check_spans(spans, "spans", length)
    scheme = _check_scheme(scheme)
    tags = ["O"] * length
    for start, end, kind in spans:
        if scheme == "IO":
            tags[start:end] = [f"I-{kind}"] * (end - start)
        elif scheme == "BIO":
            tags[start:end] = [f"B-{kind}"] + [f"I-{kind}"] * (end - start - 1)
        elif end - start == 1:
            tags[start] = f"S-{kind}"
        else:
            tags[start:end] = [f"B-{kind}"] + [f"I-{kind}"] * (end - start - 2) + [f"E-{kind}"]
    return tags


def _may_follow(previous: tuple[str, str] | None, current: tuple[str, str] | None, scheme: str) -> str | None:
    """Why ``current`` may not follow ``previous`` (``None`` = sentence boundary), or ``None`` if it may."""
    before, kind_before = previous if previous is not None else ("O", "")
    after, kind_after = current if current is not None else ("O", "")
    if scheme == "IO":
        return None
    inside = before in ("B", "I")
    if scheme == "BIO":
        if after == "I" and not (inside and kind_before == kind_after):
            what = "the sentence start" if previous is None else f"{before}-{kind_before}" if before != "O" else "O"
            return f"I-{kind_after} must follow B-{kind_after} or I-{kind_after}, not {what}"
        return None
    # BIOES: after B or I the entity must go on (I or E of the same type); otherwise it must not
    if inside:
        if current is None:
            return f"{before}-{kind_before} must be followed by I-{kind_before} or E-{kind_before}, not the sentence end"
        if not (after in ("I", "E") and kind_after == kind_before):
            shown = "O" if after == "O" else f"{after}-{kind_after}"
            return f"{before}-{kind_before} must be followed by I-{kind_before} or E-{kind_before}, not {shown}"
        return None
    if after in ("I", "E"):
        what = "the sentence start" if previous is None else "O" if before == "O" else f"{before}-{kind_before}"
        return f"{after}-{kind_after} must follow B-{kind_after} or I-{kind_after}, not {what}"
    return None


def check_tags(tags, scheme: str = "BIO") -> list[str]:
    """Return ``tags`` as a list if they form a valid sequence under ``scheme``.

    The rules, each a condition on two neighbouring tags (the sentence's start and end count
    as ``O``):

    * ``"IO"``: any sequence of ``O`` and ``I-X`` is valid.
    * ``"BIO"``: ``I-X`` follows ``B-X`` or ``I-X``.
    * ``"BIOES"``: ``B-X`` and ``I-X`` are followed by ``I-X`` or ``E-X``; ``I-X`` and ``E-X``
      follow ``B-X`` or ``I-X``. So an entity of two or more tokens reads ``B I* E``, a
      one-token entity ``S``.

    Parameters
    ----------
    tags : sequence of str
        One sentence's tags.
    scheme : {"IO", "BIO", "BIOES"}
        The tag scheme.

    Returns
    -------
    list of str

    Raises
    ------
    TypeError
        If ``tags`` is not a sequence of str or ``scheme`` is not a str.
    ValueError
        If a tag is not one of the scheme's (``S-X`` under BIO, ``B-`` with no type), or two
        neighbouring tags break a rule: the message names ``tags``, the position and the rule.

    Examples
    --------
    >>> check_tags(["B-ORG", "I-ORG", "O"], "BIO")
    ['B-ORG', 'I-ORG', 'O']
    >>> check_tags(["O", "I-ORG"], "BIO")
    Traceback (most recent call last):
    ...
    ValueError: tags[1] is invalid under 'BIO': I-ORG must follow B-ORG or I-ORG, not O
    """
    scheme = _check_scheme(scheme)
    parsed = _check_tag_list(tags, scheme, "tags")
    for i, (previous, current) in enumerate(zip([None, *parsed], [*parsed, None])):
        reason = _may_follow(previous, current, scheme)
        if reason is not None:
            where = f"tags[{i}]" if i < len(parsed) else f"tags[{i - 1}] (the last tag)"
            raise ValueError(f"{where} is invalid under {scheme!r}: {reason}")
    return check_sequence(tags, "tags")


def spans_from_tags(tags, scheme: str = "BIO", strict: bool = True) -> list[tuple[int, int, str]]:
    r"""The entities ``(start, end, type)`` of one sentence's tags, ``end`` exclusive.

    With ``strict=True`` the sequence must be valid ([`check_tags`][mlm_book.tagging.check_tags]
    raises otherwise), and the spans are read as the scheme defines them; on valid sequences
    these are exactly the entities of seqeval's strict mode (``mode="strict"`` with
    ``scheme=IOB2`` or ``IOBES``). On an invalid sequence seqeval's strict mode silently drops
    the malformed entities; here the sequence is refused instead.

    With ``strict=False`` any sequence of the scheme's tags is read with the CoNLL-2000
    ``conlleval`` rules, those of seqeval's default mode (``seqeval.metrics.sequence_labeling.
    get_entities``): an entity ends before ``O``, ``B``, ``S``, after ``E`` or ``S``, and
    before a tag of another type; an entity starts at ``B`` or ``S``, at ``I`` or ``E``
    after ``O``, ``E``, ``S`` or the sentence start, and at any tag of another type than
    the one before. So ``O I-X`` starts an entity at ``I-X``, and ``B-X I-Y`` gives two
    entities. On valid sequences both modes agree.

    Parameters
    ----------
    tags : sequence of str
        One sentence's tags.
    scheme : {"IO", "BIO", "BIOES"}
        The tag scheme.
    strict : bool
        Refuse invalid sequences (``True``) or repair them the ``conlleval`` way.

    Returns
    -------
    list of (int, int, str)
        Spans in order of ``start``.

    Raises
    ------
    TypeError
        If ``tags`` is not a sequence of str, ``scheme`` not a str or ``strict`` not a bool.
    ValueError
        If a tag does not belong to the scheme, ``scheme`` is unknown, or (``strict=True``)
        the sequence is invalid.

    Examples
    --------
    >>> spans_from_tags(["S-PER", "B-ORG", "E-ORG"], "BIOES")
    [(0, 1, 'PER'), (1, 3, 'ORG')]
    >>> spans_from_tags(["O", "I-ORG", "I-ORG"], "BIO", strict=False)   # conlleval's repair
    [(1, 3, 'ORG')]
    """
    scheme = _check_scheme(scheme)
    strict = check_bool(strict, "strict")
    if strict:
        check_tags(tags, scheme)
    parsed = _check_tag_list(tags, scheme, "tags")
    spans = []
    previous, kind_before, begin = "O", "", 0
    for i, (prefix, kind) in enumerate([*parsed, ("O", "")]):
        ends = (previous in ("E", "S")
                or (previous in ("B", "I") and prefix in ("B", "S", "O"))
                or (previous != "O" and kind != kind_before))
        starts = (prefix in ("B", "S")
                  or (previous in ("O", "E", "S") and prefix in ("I", "E"))
                  or (prefix != "O" and kind != kind_before))
        if ends:
            spans.append((begin, i, kind_before))
        if starts:
            begin = i
        previous, kind_before = prefix, kind
    return spans


def io_merges(spans) -> int:
    """How many spans of one sentence IO tags lose by merging touching spans of the same type.

    Each pair of spans with the same type where one ends where the next starts becomes one
    entity once tagged with IO, so ``len(spans) - io_merges(spans)`` entities survive the
    round trip through IO. BIO and BIOES lose none.

    Parameters
    ----------
    spans : sequence of (int, int, str)
        One sentence's entities, not overlapping.

    Returns
    -------
    int

    Raises
    ------
    TypeError
        If a span is not a triple of two integers and a str.
    ValueError
        If spans overlap, or a span has ``start >= end``, a negative start or an empty type.

    Examples
    --------
    >>> spans = [(0, 1, "ORG"), (1, 3, "ORG"), (3, 4, "PER")]
    >>> io_merges(spans)
    1
    >>> len(spans_from_tags(tags_from_spans(spans, 4, "IO"), "IO"))
    2
    """
    spans = check_spans(spans, "spans")
    return sum(1 for a, b in itertools.pairwise(spans) if a[1] == b[0] and a[2] == b[2])


def allowed_transitions(tag_set, scheme: str = "BIO") -> np.ndarray:
    r"""Which tag may follow which under ``scheme``, with the sentence boundary as an extra state.

    For ``K`` tags the result is a ``(K + 1, K + 1)`` boolean matrix ``A`` whose index ``K``
    stands for the sentence boundary: ``A[i, j]`` says tag ``j`` may follow tag ``i``,
    ``A[K, j]`` that tag ``j`` may start a sentence, and ``A[i, K]`` that tag ``i`` may end
    one (BIOES needs this: a sentence cannot end on ``B-X`` or ``I-X``). ``A[K, K]`` (the
    empty sentence) is ``True``. A tag sequence is valid under
    [`check_tags`][mlm_book.tagging.check_tags] exactly when every neighbouring pair,
    boundaries included, is allowed; this is the mask
    [`mlm_book.crf.viterbi`][mlm_book.crf.viterbi] takes.

    Parameters
    ----------
    tag_set : sequence of str
        The ``K`` distinct tags, in the order of the model's tag ids (e.g. from
        [`tags_for_types`][mlm_book.tagging.tags_for_types]).
    scheme : {"IO", "BIO", "BIOES"}
        The tag scheme.

    Returns
    -------
    ndarray of bool, shape (K + 1, K + 1)

    Raises
    ------
    TypeError
        If ``tag_set`` is not a sequence of str or ``scheme`` is not a str.
    ValueError
        If ``tag_set`` is empty, repeats a tag or holds a tag not of the scheme, or
        ``scheme`` is unknown.

    Examples
    --------
    >>> allowed = allowed_transitions(["O", "B-ORG", "I-ORG"], "BIO")
    >>> allowed.astype(int)                     # rows: from O, B, I, start; columns: to O, B, I, end
    array([[1, 1, 0, 1],
           [1, 1, 1, 1],
           [1, 1, 1, 1],
           [1, 1, 0, 1]])
    """
    scheme = _check_scheme(scheme)
    tags = check_sequence(tag_set, "tag_set")
    if not tags:
        raise ValueError("tag_set must hold at least one tag")
    if len(tags) > 10**4:
        raise ValueError(f"tag_set must hold at most 10000 tags, got {len(tags)}")
    parsed = _check_tag_list(tags, scheme, "tag_set")
    if len(set(tags)) != len(tags):
        raise ValueError("tag_set must not repeat a tag")
    states = [*parsed, None]
    size = len(states)
    allowed = np.ones((size, size), dtype=bool)
    for i, previous in enumerate(states):
        for j, current in enumerate(states):
            if previous is None and current is None:
                continue
            allowed[i, j] = _may_follow(previous, current, scheme) is None
    return allowed


# ----------------------------------------------------------------------------- scores
def _f1(tp, fp, fn):
    """``2 tp / (2 tp + fp + fn)``, 0 where nothing was predicted or expected (works on arrays)."""
    tp, fp, fn = (np.asarray(value, dtype=np.float64) for value in (tp, fp, fn))
    denominator = 2 * tp + fp + fn
    return np.divide(2 * tp, denominator, out=np.zeros_like(denominator), where=denominator > 0)


def _ratio(numerator, denominator):
    numerator, denominator = np.asarray(numerator, dtype=np.float64), np.asarray(denominator, dtype=np.float64)
    return np.divide(numerator, denominator, out=np.zeros_like(denominator), where=denominator > 0)


def _check_counts(value, name: str, size: int) -> np.ndarray:
    if value is None or isinstance(value, (str, bytes)):
        raise TypeError(f"{name} must be array-like of counts, got {type(value).__name__}")
    try:
        array = np.asarray(value)
    except (TypeError, ValueError) as error:
        raise TypeError(f"{name} must be array-like of counts (not ragged)") from error
    if array.dtype == bool or (array.size and not np.issubdtype(array.dtype, np.integer)):
        raise TypeError(f"{name} must hold integer counts, got dtype {array.dtype}")
    if array.shape != (size,):
        raise ValueError(f"{name} must have shape ({size},), one count per entry of types, got {array.shape}")
    array = array.astype(np.int64)
    if np.any(array < 0):
        raise ValueError(f"{name} must hold non-negative counts")
    return array


@dataclass(frozen=True, eq=False)
class EntityScores:
    r"""Entity-level counts per type, with precision, recall and F1 per type and micro-averaged.

    Conventions for empty denominators (those of seqeval with ``zero_division=0``):
    precision is 0 when nothing of the type was predicted ($tp + fp = 0$), recall is 0 when
    nothing of the type was expected ($tp + fn = 0$), and F1 $= 2\,tp / (2\,tp + fp + fn)$
    (the harmonic mean of precision and recall) is 0 when both are 0. Micro scores apply
    the same formulas to the counts summed over types.

    Parameters
    ----------
    types : tuple of str
        Entity types seen in the gold or the predicted spans, sorted.
    tp, fp, fn : ndarray of int, shape (T,)
        Per type: predicted spans that match a gold span exactly (true positives), predicted
        spans that match none (false positives), gold spans no prediction matches (false
        negatives).

    Raises
    ------
    TypeError
        If ``types`` is not a sequence of str or a count array does not hold integers.
    ValueError
        If ``types`` repeats or is unsorted, or a count array has the wrong shape or a
        negative count.

    Examples
    --------
    >>> scores = EntityScores(types=("ORG", "PER"), tp=[1, 0], fp=[0, 1], fn=[0, 1])
    >>> scores.precision, scores.micro_f1
    (array([1., 0.]), 0.5)
    """

    types: tuple
    tp: np.ndarray
    fp: np.ndarray
    fn: np.ndarray

    def __post_init__(self):
        types = tuple(check_sequence(self.types, "types", of=str))
        if list(types) != sorted(set(types)):
            raise ValueError("types must be distinct and sorted")
        object.__setattr__(self, "types", types)
        for name in ("tp", "fp", "fn"):
            object.__setattr__(self, name, _check_counts(getattr(self, name), name, len(types)))

    @property
    def precision(self) -> np.ndarray:
        """Per type $tp / (tp + fp)$, 0 when $tp + fp = 0$; shape (T,)."""
        return _ratio(self.tp, self.tp + self.fp)

    @property
    def recall(self) -> np.ndarray:
        """Per type $tp / (tp + fn)$, 0 when $tp + fn = 0$; shape (T,)."""
        return _ratio(self.tp, self.tp + self.fn)

    @property
    def f1(self) -> np.ndarray:
        """Per type $2\\,tp / (2\\,tp + fp + fn)$, 0 when the denominator is 0; shape (T,)."""
        return _f1(self.tp, self.fp, self.fn)

    @property
    def micro_precision(self) -> float:
        """Precision of the counts summed over types."""
        return float(_ratio(self.tp.sum(), self.tp.sum() + self.fp.sum()))

    @property
    def micro_recall(self) -> float:
        """Recall of the counts summed over types."""
        return float(_ratio(self.tp.sum(), self.tp.sum() + self.fn.sum()))

    @property
    def micro_f1(self) -> float:
        """F1 of the counts summed over types."""
        return float(_f1(self.tp.sum(), self.fp.sum(), self.fn.sum()))

    def row(self, kind: str) -> dict:
        """Precision, recall, F1 and counts of one type, as a dict.

        Examples
        --------
        >>> EntityScores(types=("ORG",), tp=[1], fp=[1], fn=[0]).row("ORG")["precision"]
        0.5
        """
        if not isinstance(kind, str):
            raise TypeError(f"kind must be a type name (str), got {type(kind).__name__}")
        if kind not in self.types:
            raise ValueError(f"kind must be one of the scored types {list(self.types)}, got {kind!r:.40}")
        i = self.types.index(kind)
        return {"precision": float(self.precision[i]), "recall": float(self.recall[i]), "f1": float(self.f1[i]),
                "tp": int(self.tp[i]), "fp": int(self.fp[i]), "fn": int(self.fn[i])}


def _sentence_counts(gold: list, predicted: list, types: list[str]) -> np.ndarray:
    """Counts ``(sentences, types, 3)`` of tp, fp, fn."""
    index = {kind: t for t, kind in enumerate(types)}
    counts = np.zeros((len(gold), len(types), 3), dtype=np.int64)
    for s, (expected, found) in enumerate(zip(gold, predicted)):
        expected, found = set(expected), set(found)
        for span in found:
            counts[s, index[span[2]], 0 if span in expected else 1] += 1
        for span in expected - found:
            counts[s, index[span[2]], 2] += 1
    return counts


def _check_pair(gold, predicted, gold_name: str, predicted_name: str):
    gold = _check_corpus(gold, gold_name)
    predicted = _check_corpus(predicted, predicted_name)
    if len(gold) != len(predicted):
        raise ValueError(f"{gold_name} and {predicted_name} must hold the same number of sentences, "
                         f"got {len(gold)} and {len(predicted)}")
    return gold, predicted


def entity_scores(gold_spans, predicted_spans) -> EntityScores:
    r"""Entity-level precision, recall and F1 of predicted spans against gold spans.

    A predicted span is a true positive only if a gold span in the same sentence has the
    same start, end *and* type. A span with the right type but wrong boundaries counts
    twice: once as a false positive (the prediction) and once as a false negative (the
    gold span it missed). Zero denominators give 0 (see
    [`EntityScores`][mlm_book.tagging.EntityScores]), as seqeval with ``zero_division=0``.

    Parameters
    ----------
    gold_spans : sequence of sequences of (int, int, str)
        Per sentence, the gold entities ``(start, end, type)``.
    predicted_spans : sequence of sequences of (int, int, str)
        Per sentence, the predicted entities; as many sentences as ``gold_spans``.

    Returns
    -------
    EntityScores

    Raises
    ------
    TypeError
        If a sentence is not a sequence of spans or a span not a triple of two integers
        and a str.
    ValueError
        If the two corpora have different numbers of sentences, or spans of a sentence
        overlap or have ``start >= end`` or a negative start.

    Examples
    --------
    "Jane Villanueva joined Acme": the system finds "Jane" alone, and Acme.

    >>> gold = [[(0, 2, "PER"), (3, 4, "ORG")]]
    >>> predicted = [[(0, 1, "PER"), (3, 4, "ORG")]]
    >>> scores = entity_scores(gold, predicted)
    >>> scores.row("PER")
    {'precision': 0.0, 'recall': 0.0, 'f1': 0.0, 'tp': 0, 'fp': 1, 'fn': 1}
    >>> scores.micro_precision, scores.micro_recall, scores.micro_f1
    (0.5, 0.5, 0.5)
    """
    gold, predicted = _check_pair(gold_spans, predicted_spans, "gold_spans", "predicted_spans")
    types = sorted({span[2] for sentence in gold + predicted for span in sentence})
    counts = _sentence_counts(gold, predicted, types).sum(axis=0)
    return EntityScores(types=tuple(types), tp=counts[:, 0], fp=counts[:, 1], fn=counts[:, 2])


def token_accuracy(gold_tags, predicted_tags) -> float:
    """Share of tokens whose predicted tag equals the gold tag, over all sentences.

    Token accuracy is dominated by ``O`` tokens and ignores entity boundaries, which is why
    [`entity_scores`][mlm_book.tagging.entity_scores] is the measure reported.

    Parameters
    ----------
    gold_tags : sequence of sequences of str
        Per sentence, the gold tags.
    predicted_tags : sequence of sequences of str
        Per sentence, the predicted tags, each as long as its gold sentence.

    Returns
    -------
    float
        In ``[0, 1]``.

    Raises
    ------
    TypeError
        If a sentence is not a sequence of str.
    ValueError
        If the numbers of sentences or a sentence's lengths differ, or there is no token.

    Examples
    --------
    >>> token_accuracy([["B-PER", "I-PER", "O", "B-ORG"]], [["B-PER", "O", "O", "B-ORG"]])
    0.75
    """
    gold = check_sequence(gold_tags, "gold_tags")
    predicted = check_sequence(predicted_tags, "predicted_tags")
    if len(gold) != len(predicted):
        raise ValueError(f"gold_tags and predicted_tags must hold the same number of sentences, "
                         f"got {len(gold)} and {len(predicted)}")
    correct = total = 0
    for s, (expected, found) in enumerate(zip(gold, predicted)):
        expected = check_sequence(expected, f"gold_tags[{s}]", of=str)
        found = check_sequence(found, f"predicted_tags[{s}]", of=str)
        if len(expected) != len(found):
            raise ValueError(f"gold_tags[{s}] and predicted_tags[{s}] must have the same length, "
                             f"got {len(expected)} and {len(found)}")
        correct += sum(a == b for a, b in zip(expected, found))
        total += len(expected)
    if total == 0:
        raise ValueError("gold_tags must hold at least one token (accuracy over no token is undefined)")
    return correct / total


# ----------------------------------------------------------------------------- bootstrap
@dataclass(frozen=True, eq=False)
class BootstrapResult:
    r"""A paired bootstrap comparison of two systems' micro-F1 on the same sentences.

    Parameters
    ----------
    f1_a, f1_b : float
        Micro-F1 of systems A and B on the whole corpus.
    low, high : float
        The 95% percentile interval of the resampled differences $\delta^{(i)}$ (the
        2.5th and 97.5th percentiles, NumPy's default linear interpolation).
    p_value : float
        Share of resamples with $\delta^{(i)} \ge 2\delta$ (see
        [`paired_bootstrap`][mlm_book.tagging.paired_bootstrap]).
    n_resamples : int
        Number of resamples.

    Raises
    ------
    TypeError
        If a number is not real, or ``n_resamples`` not an integer.
    ValueError
        If an F1 or ``p_value`` lies outside ``[0, 1]``, ``low > high``, the bounds lie
        outside ``[-1, 1]``, or ``n_resamples < 1``.

    Examples
    --------
    >>> result = BootstrapResult(f1_a=0.8, f1_b=0.75, low=-0.01, high=0.11, p_value=0.04, n_resamples=1000)
    >>> round(result.difference, 2)
    0.05
    """

    f1_a: float
    f1_b: float
    low: float
    high: float
    p_value: float
    n_resamples: int

    def __post_init__(self):
        for name in ("f1_a", "f1_b", "p_value"):
            object.__setattr__(self, name, check_probability(getattr(self, name), name))
        for name in ("low", "high"):
            object.__setattr__(self, name, check_probability(getattr(self, name), name, low=-1.0))
        if self.low > self.high:
            raise ValueError(f"low must not exceed high, got {self.low} > {self.high}")
        object.__setattr__(self, "n_resamples", check_positive_int(self.n_resamples, "n_resamples"))

    @property
    def difference(self) -> float:
        r"""The observed difference $\delta = F_1(A) - F_1(B)$."""
        return self.f1_a - self.f1_b


def paired_bootstrap(gold, pred_a, pred_b, rng: np.random.Generator, n_resamples: int = 1000) -> BootstrapResult:
    r"""Paired bootstrap test that system A's micro-F1 beats system B's on the same sentences.

    Each resample draws $N$ sentence indices with replacement from the $N$ sentences, the
    same indices for both systems, and recomputes both micro-F1 scores on it, giving
    $\delta^{(i)} = F_1^{(i)}(A) - F_1^{(i)}(B)$. With the observed $\delta = F_1(A) - F_1(B)$,
    the p-value is that of Berg-Kirkpatrick, Burkett and Klein (2012):

    $$p = \frac{1}{R}\,\#\{i : \delta^{(i)} \ge 2\delta\},$$

    the share of resamples whose difference exceeds the observed one by at least $\delta$.
    The bootstrap distribution is centred near $\delta$, not 0; shifting it by $\delta$ to
    stand for the null hypothesis ("A is no better than B") turns "a shifted resample is
    $\ge \delta$" into "$\delta^{(i)} \ge 2\delta$". The test is one-sided for A better than
    B (with $\delta \le 0$ the p-value is large); swap A and B for the other direction. Ties
    count against A (``>=``), so identical systems give $p = 1$.

    Per-sentence counts (tp, fp, fn, summed over types) are computed once; each resample's
    scores are sums of those counts over its drawn indices, vectorised over resamples in
    blocks of at most about two million draws.

    Parameters
    ----------
    gold, pred_a, pred_b : sequence of sequences of (int, int, str)
        Per sentence, the gold spans and the spans predicted by systems A and B.
    rng : numpy.random.Generator
        Source of the resampled indices: the same generator state gives the same result.
    n_resamples : int
        Number of resamples $R$, at most [`MAX_RESAMPLES`][mlm_book.tagging.MAX_RESAMPLES].

    Returns
    -------
    BootstrapResult

    Raises
    ------
    TypeError
        If a corpus is not a sequence of sentences of spans, ``rng`` is not a Generator or
        ``n_resamples`` is not an integer.
    ValueError
        If the corpora differ in number of sentences or hold none, spans overlap or are
        malformed, or ``n_resamples`` is below 1 or above the limit.

    Examples
    --------
    >>> gold = [[(0, 2, "PER")], [(1, 2, "ORG")], [(0, 1, "LOC")]]
    >>> a = [[(0, 2, "PER")], [(1, 2, "ORG")], []]
    >>> b = [[(0, 1, "PER")], [(1, 2, "ORG")], []]
    >>> result = paired_bootstrap(gold, a, b, np.random.default_rng(0), n_resamples=200)
    >>> round(result.f1_a, 3), round(result.f1_b, 3), round(result.difference, 3)
    (0.8, 0.4, 0.4)
    >>> round(result.p_value, 3), round(result.low, 3), round(result.high, 3)
    (0.155, 0.0, 1.0)
    >>> paired_bootstrap(gold, a, a, np.random.default_rng(0), n_resamples=200).p_value   # identical systems
    1.0
    """
    gold_checked, a_checked = _check_pair(gold, pred_a, "gold", "pred_a")
    _, b_checked = _check_pair(gold, pred_b, "gold", "pred_b")
    rng = check_generator(rng)
    n_resamples = check_positive_int(n_resamples, "n_resamples")
    if n_resamples > MAX_RESAMPLES:
        raise ValueError(f"n_resamples must be at most {MAX_RESAMPLES}, got {n_resamples}")
    n_sentences = len(gold_checked)
    if n_sentences == 0:
        raise ValueError("gold must hold at least one sentence")
    types = sorted({span[2] for corpus in (gold_checked, a_checked, b_checked) for sentence in corpus
                    for span in sentence})
    # (N, 6): tp, fp, fn of A then of B, per sentence, summed over types
    counts = np.concatenate([_sentence_counts(gold_checked, a_checked, types).sum(axis=1),
                             _sentence_counts(gold_checked, b_checked, types).sum(axis=1)], axis=1)
    totals = counts.sum(axis=0)
    f1_a, f1_b = float(_f1(*totals[:3])), float(_f1(*totals[3:]))
    observed = f1_a - f1_b

    per_block = max(1, _BLOCK_DRAWS // n_sentences)
    differences = np.empty(n_resamples)
    for first in range(0, n_resamples, per_block):
        size = min(per_block, n_resamples - first)
        drawn = rng.integers(0, n_sentences, size=(size, n_sentences))
        sums = np.stack([column[drawn].sum(axis=1) for column in counts.T], axis=1)   # (size, 6)
        differences[first:first + size] = _f1(*sums[:, :3].T) - _f1(*sums[:, 3:].T)
    low, high = np.percentile(differences, [2.5, 97.5])
    p_value = float(np.mean(differences >= 2 * observed))
    return BootstrapResult(f1_a=f1_a, f1_b=f1_b, low=float(low), high=float(high), p_value=p_value,
                           n_resamples=n_resamples)
