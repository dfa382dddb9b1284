"""Every registered claim of the book passes its acceptance rule (``mlm-book verify``)."""

import pytest

from mlm_book import ledger

pytestmark = pytest.mark.slow  # recomputes every claim, trained models included


def test_every_registered_claim_passes():
    results = ledger.verify()
    failed = [result for result in results if not result.passed]
    assert not failed, "\n" + ledger.to_text(failed)
