"""Tag schemes, span round trips, entity-level scores (checked against seqeval) and the paired bootstrap."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mlm_book import tagging
from mlm_book.tagging import (
    allowed_transitions,
    check_tags,
    entity_scores,
    io_merges,
    paired_bootstrap,
    spans_from_tags,
    tags_for_types,
    tags_from_spans,
    token_accuracy,
)

TYPES = ("LOC", "ORG", "PER")


# ----------------------------------------------------------------------------- random data
def random_spans(rng, length, types=TYPES, density=0.5):
    """Non-overlapping spans in [0, length), touching ones included."""
    spans, position = [], 0
    while position < length:
        if rng.random() < density:
            end = int(min(length, position + rng.integers(1, 4)))
            spans.append((position, end, str(rng.choice(types))))
            position = end
        else:
            position += 1
    return spans


@st.composite
def span_sets(draw):
    length = draw(st.integers(0, 12))
    spans, position = [], 0
    while position < length:
        if draw(st.booleans()):
            end = min(length, position + draw(st.integers(1, 4)))
            spans.append((position, end, draw(st.sampled_from(TYPES[:2]))))
            position = end
        else:
            position += draw(st.integers(1, 2))
    return length, spans


# ----------------------------------------------------------------------------- schemes
def test_hand_made_tags():
    spans = [(0, 2, "PER"), (2, 3, "PER"), (4, 7, "ORG")]
    assert tags_from_spans(spans, 8, "BIO") == ["B-PER", "I-PER", "B-PER", "O", "B-ORG", "I-ORG", "I-ORG", "O"]
    assert tags_from_spans(spans, 8, "BIOES") == ["B-PER", "E-PER", "S-PER", "O", "B-ORG", "I-ORG", "E-ORG", "O"]
    assert tags_from_spans(spans, 8, "IO") == ["I-PER"] * 3 + ["O"] + ["I-ORG"] * 3 + ["O"]
    assert spans_from_tags(tags_from_spans(spans, 8, "IO"), "IO") == [(0, 3, "PER"), (4, 7, "ORG")]
    assert io_merges(spans) == 1
    assert tags_from_spans([], 0, "BIO") == [] and spans_from_tags([], "BIOES") == []
    # spans may come in any order
    assert tags_from_spans(spans[::-1], 8, "BIO") == tags_from_spans(spans, 8, "BIO")


@pytest.mark.parametrize("scheme", ["BIO", "BIOES"])
@settings(max_examples=150, deadline=None, derandomize=True, database=None)
@given(case=span_sets())
def test_round_trip_is_exact_for_bio_and_bioes(scheme, case):
    length, spans = case
    tags = tags_from_spans(spans, length, scheme)
    assert check_tags(tags, scheme) == tags
    assert spans_from_tags(tags, scheme) == sorted(spans)
    assert spans_from_tags(tags, scheme, strict=False) == sorted(spans)


@settings(max_examples=150, deadline=None, derandomize=True, database=None)
@given(case=span_sets())
def test_io_loses_exactly_the_merges(case):
    length, spans = case
    recovered = spans_from_tags(tags_from_spans(spans, length, "IO"), "IO")
    assert len(recovered) == len(spans) - io_merges(spans)
    # IO gives back the same tokens and types, only merged
    assert tags_from_spans(recovered, length, "IO") == tags_from_spans(spans, length, "IO")
    if io_merges(spans) == 0:
        assert recovered == sorted(spans)


def test_random_round_trips_with_three_types():
    rng = np.random.default_rng(0)
    for _ in range(300):
        length = int(rng.integers(0, 20))
        spans = random_spans(rng, length)
        for scheme in ("BIO", "BIOES"):
            assert spans_from_tags(tags_from_spans(spans, length, scheme), scheme) == spans


@pytest.mark.parametrize("tags,scheme,position,reason", [
    (["O", "I-ORG"], "BIO", "tags[1]", "I-ORG must follow B-ORG or I-ORG, not O"),
    (["I-ORG"], "BIO", "tags[0]", "not the sentence start"),
    (["B-PER", "I-ORG"], "BIO", "tags[1]", "not B-PER"),
    (["B-ORG", "O"], "BIOES", "tags[1]", "B-ORG must be followed by I-ORG or E-ORG, not O"),
    (["O", "B-ORG"], "BIOES", "tags[1] (the last tag)", "not the sentence end"),
    (["S-ORG", "E-ORG"], "BIOES", "tags[1]", "E-ORG must follow B-ORG or I-ORG, not S-ORG"),
    (["B-ORG", "I-ORG", "I-PER"], "BIOES", "tags[2]", "not I-PER"),
])
def test_invalid_sequences_name_tags_the_position_and_the_rule(tags, scheme, position, reason):
    with pytest.raises(ValueError) as caught:
        check_tags(tags, scheme)
    message = str(caught.value)
    assert message.startswith(position) and reason in message and scheme in message
    with pytest.raises(ValueError, match=r"tags\["):
        spans_from_tags(tags, scheme)


@pytest.mark.parametrize("tags,scheme", [(["S-ORG"], "BIO"), (["B-ORG"], "IO"), (["B-"], "BIO"), (["X-ORG"], "BIOES"),
                                         (["ORG"], "BIO")])
def test_tags_not_of_the_scheme_are_refused_even_when_not_strict(tags, scheme):
    with pytest.raises(ValueError, match=r"tags\[0\] must be 'O' or one of"):
        spans_from_tags(tags, scheme, strict=False)


def test_bad_inputs_name_the_argument():
    with pytest.raises(ValueError, match="spans must not overlap"):
        tags_from_spans([(0, 2, "A"), (1, 3, "B")], 4)
    with pytest.raises(ValueError, match=r"spans\[0\] must lie inside the sentence"):
        tags_from_spans([(2, 5, "A")], 4)
    with pytest.raises(ValueError, match=r"spans\[0\] must have 0 <= start < end"):
        tags_from_spans([(2, 2, "A")], 4)
    with pytest.raises(ValueError, match=r"spans\[0\] must have 0 <= start < end"):
        tags_from_spans([(-1, 2, "A")], 4)
    with pytest.raises(TypeError, match=r"spans\[0\] type must be a str"):
        tags_from_spans([(0, 1, 3)], 4)
    with pytest.raises(ValueError, match=r"spans\[0\] type must be a non-empty"):
        tags_from_spans([(0, 1, "")], 4)
    with pytest.raises(ValueError, match="scheme must be one of"):
        tags_from_spans([], 4, "BILOU")
    with pytest.raises(ValueError, match="scheme must be one of"):
        check_tags([], "IOB1")
    with pytest.raises(TypeError, match=r"tags\[1\] must be a tag \(str\)"):
        check_tags(["O", 3], "BIO")
    with pytest.raises(TypeError, match="tags must be a sequence"):
        spans_from_tags("B-ORG", "BIO")
    with pytest.raises(ValueError, match="length must be at most"):
        tags_from_spans([], 10**12)
    with pytest.raises(ValueError, match="predicted_spans must not overlap|gold_spans and predicted_spans"):
        entity_scores([[]], [[], []])
    with pytest.raises(ValueError, match=r"predicted_spans\[0\] must not overlap"):
        entity_scores([[]], [[(0, 2, "A"), (1, 2, "A")]])
    with pytest.raises(ValueError, match="types must be distinct"):
        tags_for_types(["A", "A"])


def test_allowed_transitions_say_what_check_tags_says():
    rng = np.random.default_rng(1)
    for scheme in ("IO", "BIO", "BIOES"):
        tag_set = tags_for_types(["A", "B"], scheme)
        mask = allowed_transitions(tag_set, scheme)
        k = len(tag_set)
        assert mask.shape == (k + 1, k + 1) and mask.dtype == bool
        for _ in range(300):
            ids = rng.integers(0, k, size=int(rng.integers(1, 6)))
            ok = bool(mask[k, ids[0]] and mask[ids[-1], k] and all(mask[a, b] for a, b in itertools.pairwise(ids)))
            try:
                check_tags([tag_set[i] for i in ids], scheme)
                valid = True
            except ValueError:
                valid = False
            assert valid == ok
    assert allowed_transitions(tags_for_types(["A"], "IO"), "IO").all()
    bioes = allowed_transitions(["O", "B-A", "I-A", "E-A", "S-A"], "BIOES")
    assert bioes[:5, 5].tolist() == [True, False, False, True, True]   # may end the sentence
    with pytest.raises(ValueError, match="tag_set must not repeat"):
        allowed_transitions(["O", "O"], "BIO")
    with pytest.raises(ValueError, match=r"tag_set\[1\]"):
        allowed_transitions(["O", "S-A"], "BIO")


# ----------------------------------------------------------------------------- seqeval
def _random_tags(rng, length, scheme, valid=True):
    if valid:
        return tags_from_spans(random_spans(rng, length, types=("LOC", "ORG", "PER"), density=0.4), length, scheme)
    prefixes = tagging.SCHEMES[scheme]
    return ["O" if rng.random() < 0.3 else f"{rng.choice(prefixes)}-{rng.choice(['A', 'B'])}" for _ in range(length)]


@pytest.mark.slow  # seqeval over the whole corpus: 8 s
@pytest.mark.parametrize("scheme", ["BIO", "BIOES", "IO"])
def test_not_strict_reading_is_conllevals_as_in_seqeval_get_entities(scheme):
    pytest.importorskip("seqeval")
    from seqeval.metrics.sequence_labeling import get_entities

    rng = np.random.default_rng(2)
    for _ in range(500):
        tags = _random_tags(rng, int(rng.integers(0, 10)), scheme, valid=False)
        expected = [(start, end + 1, kind) for kind, start, end in get_entities(list(tags))]
        assert spans_from_tags(tags, scheme, strict=False) == sorted(expected), tags


@pytest.mark.parametrize("scheme", ["BIO", "BIOES"])
def test_strict_reading_is_seqeval_strict_mode_on_valid_sequences(scheme):
    pytest.importorskip("seqeval")
    from seqeval.scheme import IOB2, IOBES, Tokens

    rng = np.random.default_rng(3)
    for _ in range(300):
        tags = _random_tags(rng, int(rng.integers(1, 12)), scheme)
        entities = Tokens(tags, IOB2 if scheme == "BIO" else IOBES).entities
        assert spans_from_tags(tags, scheme) == [(e.start, e.end, e.tag) for e in entities]


def test_on_invalid_sequences_seqeval_strict_drops_what_strict_refuses():
    pytest.importorskip("seqeval")
    from seqeval.metrics.sequence_labeling import get_entities
    from seqeval.scheme import IOB2, Tokens

    tags = ["O", "I-PER", "I-PER", "B-ORG"]
    assert [(e.start, e.end, e.tag) for e in Tokens(tags, IOB2).entities] == [(3, 4, "ORG")]     # seqeval strict
    assert [(s, e + 1, k) for k, s, e in get_entities(tags)] == [(1, 3, "PER"), (3, 4, "ORG")]  # seqeval default
    assert spans_from_tags(tags, "BIO", strict=False) == [(1, 3, "PER"), (3, 4, "ORG")]
    with pytest.raises(ValueError, match=r"tags\[1\] is invalid under 'BIO'"):
        spans_from_tags(tags, "BIO")


def test_entity_scores_equal_seqeval_strict_iob2_on_random_corpora():
    """>= 200 random valid BIO sequences per corpus; predictions perturb the gold spans."""
    pytest.importorskip("seqeval")
    from seqeval.metrics import classification_report
    from seqeval.scheme import IOB2

    rng = np.random.default_rng(4)
    for corpus in range(8):
        lengths = rng.integers(1, 15, size=250)
        gold = [random_spans(rng, int(n), density=0.4) for n in lengths]
        predicted = []
        for n, spans in zip(lengths, gold):
            if rng.random() < 0.5:
                predicted.append(list(spans))       # same sentence: many exact matches
            else:
                predicted.append(random_spans(rng, int(n), density=0.4))
        gold_tags = [tags_from_spans(s, int(n), "BIO") for s, n in zip(gold, lengths)]
        predicted_tags = [tags_from_spans(s, int(n), "BIO") for s, n in zip(predicted, lengths)]
        # the tags read back give the spans scored
        ours = entity_scores([spans_from_tags(t, "BIO") for t in gold_tags],
                             [spans_from_tags(t, "BIO") for t in predicted_tags])
        report = classification_report(gold_tags, predicted_tags, mode="strict", scheme=IOB2,
                                       output_dict=True, zero_division=0)
        assert set(ours.types) == set(report) - {"micro avg", "macro avg", "weighted avg"}
        for kind in ours.types:
            row = ours.row(kind)
            for ours_key, their_key in (("precision", "precision"), ("recall", "recall"), ("f1", "f1-score")):
                assert abs(row[ours_key] - report[kind][their_key]) < 1e-12, (corpus, kind, ours_key)
            assert row["tp"] + row["fn"] == report[kind]["support"]
        assert abs(ours.micro_precision - report["micro avg"]["precision"]) < 1e-12
        assert abs(ours.micro_recall - report["micro avg"]["recall"]) < 1e-12
        assert abs(ours.micro_f1 - report["micro avg"]["f1-score"]) < 1e-12


def test_zero_division_conventions_match_seqeval():
    pytest.importorskip("seqeval")
    from seqeval.metrics import classification_report
    from seqeval.scheme import IOB2

    gold_tags = [["B-PER", "O"], ["O", "O"]]
    predicted_tags = [["O", "O"], ["B-ORG", "O"]]   # PER never predicted, ORG never expected
    scores = entity_scores([spans_from_tags(t) for t in gold_tags], [spans_from_tags(t) for t in predicted_tags])
    report = classification_report(gold_tags, predicted_tags, mode="strict", scheme=IOB2, output_dict=True,
                                   zero_division=0)
    assert scores.types == ("ORG", "PER")
    for kind in scores.types:
        assert scores.row(kind)["precision"] == report[kind]["precision"] == 0.0
        assert scores.row(kind)["recall"] == report[kind]["recall"] == 0.0
        assert scores.row(kind)["f1"] == report[kind]["f1-score"] == 0.0
    empty = entity_scores([[], []], [[], []])
    assert empty.types == () and empty.micro_f1 == 0.0 and empty.micro_precision == 0.0


# ----------------------------------------------------------------------------- hand-made scores
def test_exact_f1_on_hand_made_cases():
    gold = [[(0, 2, "PER"), (3, 4, "ORG")], [(1, 3, "LOC")], []]
    predicted = [[(0, 1, "PER"), (3, 4, "ORG")], [(1, 3, "ORG")], [(0, 1, "PER")]]
    scores = entity_scores(gold, predicted)
    assert scores.types == ("LOC", "ORG", "PER")
    assert scores.tp.tolist() == [0, 1, 0] and scores.fp.tolist() == [0, 1, 2] and scores.fn.tolist() == [1, 0, 1]
    assert scores.micro_precision == 1 / 4 and scores.micro_recall == 1 / 3
    assert abs(scores.micro_f1 - 2 / 7) < 1e-15
    assert scores.row("ORG") == {"precision": 0.5, "recall": 1.0, "f1": 2 / 3, "tp": 1, "fp": 1, "fn": 0}
    assert entity_scores(gold, gold).micro_f1 == 1.0


def test_token_accuracy():
    assert token_accuracy([["O", "B-A"], ["I-A"]], [["O", "B-A"], ["O"]]) == 2 / 3
    with pytest.raises(ValueError, match="same length"):
        token_accuracy([["O"]], [["O", "O"]])
    with pytest.raises(ValueError, match="gold_tags must hold at least one token"):
        token_accuracy([[]], [[]])


# ----------------------------------------------------------------------------- bootstrap
def _corpus(rng, n):
    gold = [random_spans(rng, 8, density=0.4) for _ in range(n)]
    a = [spans if rng.random() < 0.8 else random_spans(rng, 8, density=0.4) for spans in gold]
    b = [spans if rng.random() < 0.6 else random_spans(rng, 8, density=0.4) for spans in gold]
    return gold, a, b


def test_identical_systems_differ_by_zero_with_p_value_one():
    rng = np.random.default_rng(5)
    gold, a, _ = _corpus(rng, 40)
    result = paired_bootstrap(gold, a, a, np.random.default_rng(0), n_resamples=500)
    assert result.difference == 0.0 and result.low == 0.0 and result.high == 0.0 and result.p_value == 1.0


def test_bootstrap_is_deterministic_and_matches_a_loop_over_resamples():
    rng = np.random.default_rng(6)
    gold, a, b = _corpus(rng, 30)
    first = paired_bootstrap(gold, a, b, np.random.default_rng(11), n_resamples=300)
    second = paired_bootstrap(gold, a, b, np.random.default_rng(11), n_resamples=300)
    assert (first.low, first.high, first.p_value) == (second.low, second.high, second.p_value)
    # the same resamples, scored one by one with entity_scores
    drawn = np.random.default_rng(11).integers(0, 30, size=(300, 30))
    differences = np.array([entity_scores([gold[i] for i in idx], [a[i] for i in idx]).micro_f1
                            - entity_scores([gold[i] for i in idx], [b[i] for i in idx]).micro_f1
                            for idx in drawn])
    observed = entity_scores(gold, a).micro_f1 - entity_scores(gold, b).micro_f1
    assert abs(first.difference - observed) < 1e-15
    assert first.p_value == np.mean(differences >= 2 * observed)
    low, high = np.percentile(differences, [2.5, 97.5])
    assert abs(first.low - low) < 1e-12 and abs(first.high - high) < 1e-12


def test_a_clearly_better_system_gets_a_small_p_value_and_the_reverse_a_large_one():
    rng = np.random.default_rng(7)
    gold, a, b = _corpus(rng, 200)
    better = paired_bootstrap(gold, a, b, np.random.default_rng(0), n_resamples=1000)
    assert better.difference > 0 and better.low > 0 and better.p_value < 0.01
    worse = paired_bootstrap(gold, b, a, np.random.default_rng(0), n_resamples=1000)
    assert worse.p_value > 0.99


def test_bootstrap_bad_inputs():
    gold = [[(0, 1, "A")]]
    with pytest.raises(ValueError, match="gold and pred_b must hold the same number"):
        paired_bootstrap(gold, gold, [[], []], np.random.default_rng(0))
    with pytest.raises(TypeError, match="rng"):
        paired_bootstrap(gold, gold, gold, 0)
    with pytest.raises(ValueError, match="n_resamples must be at most"):
        paired_bootstrap(gold, gold, gold, np.random.default_rng(0), n_resamples=10**9)
    with pytest.raises(ValueError, match="gold must hold at least one sentence"):
        paired_bootstrap([], [], [], np.random.default_rng(0))
