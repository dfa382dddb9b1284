"""mlm_book: every number in the book *Contextual embeddings and the masked-LM objective*.

The package is layered: the model modules (:mod:`mlm_book.hmm`, :mod:`mlm_book.channel`,
:mod:`mlm_book.scoring`, ...) know nothing of the book; :mod:`mlm_book.experiments` holds
one module per chapter with the book's configurations and the claims it registers in
:mod:`mlm_book.ledger`; :mod:`mlm_book.cli` and the chapters sit on top.
"""

__version__ = "0.1.0"
