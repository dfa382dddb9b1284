"""A BERT-style encoder in NumPy with hand-written backward passes.

- [`mlm_book.nn.layers`][mlm_book.nn.layers]: LayerNorm, multi-head attention, GELU MLP, the pre-LN block,
  embeddings and the tied output head, each with a forward and a backward pass;
- [`mlm_book.nn.encoder`][mlm_book.nn.encoder]: the configuration, initialisation, forward/backward passes,
  the selected-positions loss and the hidden states per layer;
- [`mlm_book.nn.adam`][mlm_book.nn.adam]: Adam;
- [`mlm_book.nn.gradcheck`][mlm_book.nn.gradcheck]: central differences in float64 against the backward pass;
- [`mlm_book.nn.loop`][mlm_book.nn.loop]: the one training loop (Adam(W), the schedule) that every
  objective plugs into;
- [`mlm_book.nn.train`][mlm_book.nn.train]: training an encoder from scratch on freshly corrupted batches;
- [`mlm_book.nn.pairs`][mlm_book.nn.pairs], [`mlm_book.nn.finetune`][mlm_book.nn.finetune],
  [`mlm_book.nn.token_finetune`][mlm_book.nn.token_finetune]: sentence pairs and the NSP head,
  fine-tuning for sequence and for token classification.

No autograd library is used: every gradient is written out by hand and checked.
"""
