"""One module per chapter: the book's configurations, results and registered claims.

Each module builds what its chapter shows from the model modules and declares a tuple
``CLAIMS`` of [`mlm_book.ledger.Claim`][mlm_book.ledger.Claim] that [`mlm_book.ledger`][mlm_book.ledger] collects.
"""
