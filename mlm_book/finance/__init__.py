"""The finance case study's world: synthetic filings, their vocabulary, windows and static baselines.

* [`world`][mlm_book.finance.world] — companies, aspects, news words, the polarity lexicon, seeds.
* [`corpus`][mlm_book.finance.corpus] — the seeded filings generator with gold annotations per token.
* [`vocab`][mlm_book.finance.vocab] — the min-count vocabulary with [UNK], [SEP] and [MASK].
* [`windows`][mlm_book.finance.windows] — centred and nearest-centre document-internal windows.
* [`skipgram`][mlm_book.finance.skipgram] — skip-gram with negative sampling.
* [`caps`][mlm_book.finance.caps] — static caps (per-type majorities) from the labels.
* [`orientation`][mlm_book.finance.orientation] — document-pooled semantic orientation.
* [`voting`][mlm_book.finance.voting] — lexicon-neighbour voting.
"""
