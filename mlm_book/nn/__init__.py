"""A BERT-style encoder in NumPy with hand-written backward passes.

- :mod:`mlm_book.nn.layers`: LayerNorm, multi-head attention, GELU MLP, the pre-LN block,
  embeddings and the tied output head, each with a forward and a backward pass;
- :mod:`mlm_book.nn.encoder`: the configuration, initialisation, forward/backward passes,
  the selected-positions loss and the hidden states per layer;
- :mod:`mlm_book.nn.adam`: Adam;
- :mod:`mlm_book.nn.gradcheck`: central differences in float64 against the backward pass;
- :mod:`mlm_book.nn.train`: the training loop on freshly corrupted batches.

No autograd library is used: every gradient is written out by hand and checked.
"""
