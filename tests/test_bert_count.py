"""BERT's fixed count (``create_pretraining_data.py``) against the book's, and the rounding of halves."""

import math

import pytest

from mlm_book.channel import bert_prediction_count, selection_count
from mlm_book.experiments import ch02_objective as ch2


def _script_count(n_content: int, rho: float, specials: int, cap: int) -> int:
    """BERT's count written out the way its script builds an input and then counts.

    A pair input is ``[CLS] A [SEP] B [SEP]`` (three specials), a single segment ``[CLS] x [SEP]``;
    the specials are not candidates, and the loop over candidates stops when they run out.
    """
    content = [f"w{i}" for i in range(n_content)]
    if specials == 3:
        tokens = ["[CLS]", *content[:1], "[SEP]", *content[1:], "[SEP]"]
    else:
        tokens = ["[CLS]", *content, "[SEP]"]
    candidates = [i for i, token in enumerate(tokens) if token not in ("[CLS]", "[SEP]")]
    num_to_predict = min(cap, max(1, int(round(len(tokens) * rho))))  # noqa: RUF046 - the script's expression
    return min(num_to_predict, len(candidates))


@pytest.mark.parametrize("specials", [2, 3])
@pytest.mark.parametrize("rho", [0.15, 0.4, 1.0])
def test_count_matches_the_script(specials, rho):
    for n in range(2, 600):
        for cap in (20, 76, 10**6):
            expected = _script_count(n, rho, specials, cap)
            assert bert_prediction_count(n, rho, specials=specials, max_predictions=cap) == expected, (n, cap)
        assert bert_prediction_count(n, rho, specials=specials) == _script_count(n, rho, specials, 10**6)


def test_readme_lengths():
    # 128 tokens: round(19.2) = 19, under the README's cap of 20; 512 tokens: round(76.8) = 77
    assert bert_prediction_count(125) == bert_prediction_count(126, specials=2) == 19
    assert bert_prediction_count(125, max_predictions=ch2.BERT_README_MAX_PREDICTIONS) == 19
    assert bert_prediction_count(509) == 77
    assert bert_prediction_count(509, max_predictions=76) == 76


def test_count_validates_its_arguments():
    with pytest.raises(ValueError, match="n_content"):
        bert_prediction_count(0)
    with pytest.raises(TypeError, match="n_content"):
        bert_prediction_count(2.0)
    with pytest.raises(ValueError, match="rho"):
        bert_prediction_count(10, 1.5)
    with pytest.raises(ValueError, match="specials"):
        bert_prediction_count(10, specials=-1)
    with pytest.raises(TypeError, match="specials"):
        bert_prediction_count(10, specials=None)
    with pytest.raises(ValueError, match="max_predictions"):
        bert_prediction_count(10, max_predictions=0)
    with pytest.raises(TypeError, match="max_predictions"):
        bert_prediction_count(10, max_predictions=2.5)


def test_differences_up_to_32():
    rows = ch2.bert_count_differences(32)
    assert [row[0] for row in rows] == [7, 8, 9, 14, 15, 16, 21, 22, 23, 28, 29, 30]
    assert [row[0] for row in rows if row[2] != row[1]] == [8, 9, 15, 16, 22, 23, 29, 30]
    for n, book, single, pair in rows:
        assert book == selection_count(n, 0.15)
        assert single == bert_prediction_count(n, specials=2) and pair == bert_prediction_count(n)
    listed = {row[0] for row in rows}
    for n in range(1, 33):
        book, pair, single = selection_count(n, 0.15), bert_prediction_count(n), bert_prediction_count(n, specials=2)
        assert book <= single <= pair <= book + 1          # the specials only ever add, and at most one
        assert (n in listed) == (pair != book or single != book)
    with pytest.raises(ValueError, match="max_length"):
        ch2.bert_count_differences(10**6)


def test_halves_and_the_two_pythons():
    halves = ch2.rounding_halves(2000)
    # 0.15 l = j + 1/2  <=>  3 l = 20 j + 10  <=>  l = 10 (mod 20); the float products stay exact halves
    assert [length for length, _, _ in halves] == list(range(10, 2001, 20))
    for length, python3, python2 in halves:
        assert python3 == round(length * 0.15) and python3 % 2 == 0
        assert python2 == math.floor(length * 0.15) + 1
    assert [length for length, new, old in halves if new != old][:3] == [30, 70, 110]
    assert all((length % 40 == 30) == (new != old) for length, new, old in halves)


def test_claim_s3_03_passes():
    claim = next(c for c in ch2.CLAIMS if c.id == "S3-03")
    value = claim.compute()
    assert claim.accept(value), value
    broken = dict(value, differ_pair=value["differ_pair"].replace("7, ", ""))
    assert not claim.accept(broken)
