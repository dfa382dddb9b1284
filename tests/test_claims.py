"""Every registered claim of the book passes its acceptance rule (``mlm-book verify``)."""

from mlm_book import ledger


def test_every_registered_claim_passes():
    results = ledger.verify()
    failed = [result for result in results if not result.passed]
    assert not failed, "\n" + ledger.to_text(failed)
