"""The finance case study's world: synthetic filings, their vocabulary, windows and static baselines.

* :mod:`~mlm_book.finance.world` — companies, aspects, news words, the polarity lexicon, seeds.
* :mod:`~mlm_book.finance.corpus` — the seeded filings generator with gold annotations per token.
* :mod:`~mlm_book.finance.vocab` — the min-count vocabulary with [UNK], [SEP] and [MASK].
* :mod:`~mlm_book.finance.windows` — centred and nearest-centre document-internal windows.
* :mod:`~mlm_book.finance.skipgram` — skip-gram with negative sampling.
* :mod:`~mlm_book.finance.caps` — static caps (per-type majorities) from the labels.
* :mod:`~mlm_book.finance.orientation` — document-pooled semantic orientation.
* :mod:`~mlm_book.finance.voting` — lexicon-neighbour voting.
"""
