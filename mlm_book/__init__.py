"""mlm_book: every number in the book *Contextual embeddings and the masked-LM objective*.

The package is layered: the model modules ([`mlm_book.hmm`][mlm_book.hmm], [`mlm_book.channel`][mlm_book.channel],
[`mlm_book.scoring`][mlm_book.scoring], ...) know nothing of the book; [`mlm_book.experiments`][mlm_book.experiments] holds
one module per chapter with the book's configurations and the claims it registers in
[`mlm_book.ledger`][mlm_book.ledger]; [`mlm_book.cli`][mlm_book.cli] and the chapters sit on top.
"""

__version__ = "0.1.0"
