r"""Skip-gram with negative sampling (word2vec), vectorised NumPy minibatch SGD.

Each (centre $c$, context $o$) pair within ``window`` words of each other in the same filing
(``[SEP]`` removed first, so the window counts words) is a positive example; ``negatives``
noise words $n_1..n_k$ drawn from the unigram distribution raised to ``noise_power`` are
negative examples. With input vectors $u$ and output vectors $v$ the loss of a pair is

$$\ell = -\log \sigma(u_c^\top v_o) - \sum_{j=1}^{k} \log \sigma(-u_c^\top v_{n_j}),$$

in nats. Training visits every pair once per epoch in a shuffled order, in minibatches.
Each row of $u$ or $v$ touched by a minibatch moves against the *mean* of its gradients in
that minibatch (a sparse SGD step; summing would multiply a frequent word's step by its
count in the batch and diverge). The learning rate decays linearly to ``min_learning_rate``. The static vector of a
word is its input vector $u$.

Examples
--------
>>> import numpy as np
>>> rng = np.random.default_rng(0)
>>> ids = np.tile([2, 3, 4, 5], 200); document = np.repeat(np.arange(8), 100)
>>> model = train_skipgram(ids, document, 6, SkipGramConfig(dim=4, epochs=3), rng)
>>> model.input_vectors.shape, bool(model.epoch_loss[-1] < model.epoch_loss[0])
((6, 4), True)
"""

from __future__ import annotations

from dataclasses import dataclass, fields

import numpy as np

from mlm_book.validation import (as_float_array, as_int_array, check_generator, check_instance, check_positive_int,
                                 check_probability, check_tokens)

__all__ = ["SkipGramConfig", "SkipGramModel", "skipgram_pairs", "train_skipgram", "cosine_neighbours"]

#: Most (centre, context) pairs and most vector-table entries a call may build: each is
#: hundreds of MB at this size, far beyond the book's corpus (~10^5 pairs, ~10^5 entries).
MAX_PAIRS = 10**8
MAX_TABLE = 10**8


def _check_drop(drop) -> None:
    if drop is not None and (isinstance(drop, bool) or not isinstance(drop, (int, np.integer))):
        raise TypeError(f"drop must be an integer id or None, got {type(drop).__name__}")


@dataclass(frozen=True)
class SkipGramConfig:
    """Hyper-parameters of skip-gram with negative sampling.

    Parameters
    ----------
    window : int
        Context half-width in words ($\\pm 2$).
    dim : int
        Vector dimension $d$ (25).
    negatives : int
        Noise words per positive pair.
    epochs : int
        Passes over all pairs.
    batch_size : int
        Pairs per SGD step.
    learning_rate, min_learning_rate : float
        Start and end of the linear learning-rate schedule.
    noise_power : float
        Exponent of the unigram counts in the noise distribution.
    """

    window: int = 2
    dim: int = 25
    negatives: int = 5
    epochs: int = 8
    batch_size: int = 256
    learning_rate: float = 0.25
    min_learning_rate: float = 0.0001
    noise_power: float = 0.75

    def __post_init__(self):
        for name in ("window", "dim", "negatives", "epochs", "batch_size"):
            check_positive_int(getattr(self, name), name)
        check_probability(self.learning_rate, "learning_rate", high=10.0)
        check_probability(self.min_learning_rate, "min_learning_rate", high=self.learning_rate)
        check_probability(self.noise_power, "noise_power", high=1.0)

    def as_dict(self) -> dict:
        """The settings as a JSON-ready mapping (a cache key)."""
        return {field.name: getattr(self, field.name) for field in fields(self)}


@dataclass(frozen=True, eq=False)
class SkipGramModel:
    """Trained skip-gram vectors.

    Attributes
    ----------
    input_vectors : numpy.ndarray, shape (V, d)
        The static word vectors.
    output_vectors : numpy.ndarray, shape (V, d)
        Context vectors.
    epoch_loss : numpy.ndarray, shape (epochs,)
        Mean loss per positive pair (nats) during each epoch.
    config : SkipGramConfig

    Raises
    ------
    TypeError
        If ``config`` is not a `SkipGramConfig` or an array does not hold real numbers.
    ValueError
        If an array is not finite, the vector tables are not both ``(V, config.dim)`` with
        ``V >= 1``, or ``epoch_loss`` is negative or not of length ``config.epochs``.

    Examples
    --------
    >>> ids = np.tile([2, 3, 4, 5], 50); document = np.repeat(np.arange(2), 100)
    >>> x = train_skipgram(ids, document, 6, SkipGramConfig(dim=4, epochs=1), np.random.default_rng(0))
    >>> from dataclasses import fields
    >>> rebuilt = SkipGramModel(**{f.name: getattr(x, f.name) for f in fields(x)})   # its fields are checked
    >>> rebuilt.input_vectors.shape
    (6, 4)
    """

    input_vectors: np.ndarray
    output_vectors: np.ndarray
    epoch_loss: np.ndarray
    config: SkipGramConfig

    def __post_init__(self):
        config = check_instance(self.config, "config", SkipGramConfig)
        for name in ("input_vectors", "output_vectors"):
            table = as_float_array(getattr(self, name), name, ndim=2)
            if table.shape[0] < 1 or table.shape[1] != config.dim:
                raise ValueError(f"{name} must have shape (V, config.dim = {config.dim}) with V >= 1, "
                                 f"got {table.shape}")
            object.__setattr__(self, name, table)
        if self.input_vectors.shape != self.output_vectors.shape:
            raise ValueError(f"input_vectors and output_vectors must have the same shape, "
                             f"got {self.input_vectors.shape} and {self.output_vectors.shape}")
        loss = as_float_array(self.epoch_loss, "epoch_loss", ndim=1)
        if loss.shape != (config.epochs,) or np.any(loss < 0):
            raise ValueError(f"epoch_loss must hold config.epochs = {config.epochs} non-negative losses, "
                             f"got shape {loss.shape}")
        object.__setattr__(self, "epoch_loss", loss)


def skipgram_pairs(ids, document, window: int = 2, *, drop: int | None = 1) -> tuple[np.ndarray, np.ndarray]:
    """All (centre, context) id pairs within ``window`` words inside one filing.

    Parameters
    ----------
    ids : array_like of int, shape (n,)
        Token ids of the stream.
    document : array_like of int, shape (n,)
        Filing index of each token.
    window : int
        Half-width.
    drop : int or None
        Id removed from the stream before pairing (``[SEP]`` = 1 by default).

    Returns
    -------
    centre, context : numpy.ndarray of int, shape (n_pairs,)

    Raises
    ------
    TypeError
        If ``ids`` or ``document`` does not hold integers, ``window`` is not an integer, or
        ``drop`` is neither an integer nor ``None``.
    ValueError
        If ``ids`` and ``document`` differ in shape, ``window`` is below 1, or the pairs
        could number more than ``MAX_PAIRS``.

    Examples
    --------
    >>> c, o = skipgram_pairs([5, 6, 1, 7, 8], [0, 0, 0, 0, 1], window=1)
    >>> list(zip(c.tolist(), o.tolist()))
    [(5, 6), (6, 7), (6, 5), (7, 6)]
    """
    ids = as_int_array(ids, "ids", ndim=1)
    document = as_int_array(document, "document", ndim=1)
    if ids.shape != document.shape:
        raise ValueError(f"ids and document must have the same shape, got {ids.shape} and {document.shape}")
    check_positive_int(window, "window")
    _check_drop(drop)
    if drop is not None:
        keep = ids != drop
        ids, document = ids[keep], document[keep]
    # offsets of n or more pair nothing, so a window wider than the stream is the stream's width
    reach = max(1, min(window, ids.size))
    if 2 * ids.size * reach > MAX_PAIRS:
        raise ValueError(f"window = {window} on {ids.size} ids could make up to {2 * ids.size * reach} pairs, "
                         f"more than the limit {MAX_PAIRS}")
    centres, contexts = [], []
    for offset in list(range(1, reach + 1)) + list(range(-1, -reach - 1, -1)):
        if offset > 0:
            c, o, same = ids[:-offset], ids[offset:], document[:-offset] == document[offset:]
        else:
            c, o, same = ids[-offset:], ids[:offset], document[-offset:] == document[:offset]
        centres.append(c[same])
        contexts.append(o[same])
    return np.concatenate(centres), np.concatenate(contexts)


def _sigmoid(x):
    return 0.5 * (1.0 + np.tanh(0.5 * x))


def _step(table: np.ndarray, rows: np.ndarray, gradients: np.ndarray, rate: float) -> None:
    """In place: each touched row moves by ``rate`` times the *mean* of its gradients in the batch.

    Summing instead would multiply a frequent word's step by its count in the batch (dozens
    for "the"), which diverges; averaging keeps every row's step at the scale of one pair's.
    """
    n_rows, d = table.shape
    counts = np.bincount(rows, minlength=n_rows)
    flat = (rows[:, None] * d + np.arange(d)[None, :]).ravel()          # bincount beats np.add.at
    sums = np.bincount(flat, weights=gradients.ravel(), minlength=n_rows * d).reshape(n_rows, d)
    touched = np.flatnonzero(counts)
    table[touched] -= rate * sums[touched] / counts[touched, None]


def train_skipgram(ids, document, vocab_size: int, config: SkipGramConfig, rng: np.random.Generator,
                   *, drop: int | None = 1) -> SkipGramModel:
    r"""Train skip-gram vectors on a token stream.

    Parameters
    ----------
    ids : array_like of int, shape (n,)
        Token ids in ``[0, vocab_size)``.
    document : array_like of int, shape (n,)
        Filing index of each token.
    vocab_size : int
        Number of ids $V$.
    config : SkipGramConfig
    rng : numpy.random.Generator
        Initialisation, pair order and noise words.
    drop : int or None
        Id removed before pairing (``[SEP]``).

    Returns
    -------
    SkipGramModel

    Raises
    ------
    TypeError
        If ``config`` is not a `SkipGramConfig`, ``rng`` not a Generator, ``ids`` not integers
        or ``drop`` neither an integer nor ``None``.
    ValueError
        If an id is outside ``[0, vocab_size)``, ``vocab_size * config.dim`` exceeds
        ``MAX_TABLE``, or the stream has no pair within the window.

    Examples
    --------
    >>> import numpy as np
    >>> m = train_skipgram([2, 3] * 50, [0] * 100, 4, SkipGramConfig(dim=2, epochs=1), np.random.default_rng(0))
    >>> m.output_vectors.shape
    (4, 2)
    """
    if not isinstance(config, SkipGramConfig):
        raise TypeError(f"config must be a SkipGramConfig, got {type(config).__name__}")
    check_generator(rng)
    vocab_size = check_positive_int(vocab_size, "vocab_size")
    if vocab_size * config.dim > MAX_TABLE:
        raise ValueError(f"vocab_size = {vocab_size} times config.dim = {config.dim} vector entries is more "
                         f"than the limit {MAX_TABLE}")
    _check_drop(drop)
    ids = as_int_array(ids, "ids", ndim=1)
    if ids.size and (ids.min() < 0 or ids.max() >= vocab_size):
        raise ValueError(f"ids must be in [0, {vocab_size})")
    centre, context = skipgram_pairs(ids, document, config.window, drop=drop)
    if centre.size == 0:
        raise ValueError("the stream has no pairs within the window")
    counts = np.bincount(ids if drop is None else ids[ids != drop], minlength=vocab_size).astype(np.float64)
    noise = counts ** config.noise_power
    noise_cdf = np.cumsum(noise / noise.sum())
    noise_cdf[-1] = 1.0
    d, k, batch = config.dim, config.negatives, config.batch_size
    u = (rng.random((vocab_size, d)) - 0.5) / d
    v = np.zeros((vocab_size, d))
    n_pairs = centre.size
    n_steps = config.epochs * int(np.ceil(n_pairs / batch))
    step = 0
    epoch_loss = np.zeros(config.epochs)
    for epoch in range(config.epochs):
        order = rng.permutation(n_pairs)
        total = 0.0
        for start in range(0, n_pairs, batch):
            rate = config.learning_rate + (config.min_learning_rate - config.learning_rate) * step / max(n_steps - 1, 1)
            chosen = order[start:start + batch]
            c, o = centre[chosen], context[chosen]
            negative = np.searchsorted(noise_cdf, rng.random((c.size, k)), side="right")
            targets = np.concatenate([o[:, None], negative], axis=1)           # (B, 1 + k)
            signs = np.concatenate([np.ones((c.size, 1)), -np.ones((c.size, k))], axis=1)
            uc = u[c]                                                          # (B, d)
            vt = v[targets]                                                    # (B, 1 + k, d)
            score = np.einsum("bd,bjd->bj", uc, vt)
            probability = _sigmoid(signs * score)
            total += float(-np.log(np.maximum(probability, 1e-300)).sum())
            coefficient = -(1.0 - probability) * signs                         # d loss / d score
            grad_u = np.einsum("bj,bjd->bd", coefficient, vt)
            grad_v = coefficient[:, :, None] * uc[:, None, :]
            _step(u, c, grad_u, rate)
            _step(v, targets.ravel(), grad_v.reshape(-1, d), rate)
            step += 1
        epoch_loss[epoch] = total / n_pairs
    return SkipGramModel(input_vectors=u, output_vectors=v, epoch_loss=epoch_loss, config=config)


def cosine_neighbours(vectors, query: int, k: int = 5, *, exclude=()) -> tuple[np.ndarray, np.ndarray]:
    """The ``k`` ids whose vectors have the largest cosine with row ``query`` (itself excluded).

    Parameters
    ----------
    vectors : array_like, shape (V, d)
    query : int
        Row index.
    k : int
        Number of neighbours.
    exclude : iterable of int
        Further ids never returned (e.g. ``[UNK]``, ``[SEP]``).

    Returns
    -------
    ids : numpy.ndarray of int, shape (k,)
    cosines : numpy.ndarray, shape (k,)

    Raises
    ------
    TypeError
        If ``vectors`` is not real numbers or ``query``, ``k`` or ``exclude`` not integers.
    ValueError
        If ``vectors`` has no row or is not finite, ``query`` is not a row index, its row is
        zero, or ``k`` exceeds the rows left after ``query`` and ``exclude``.

    Examples
    --------
    >>> ids, cos = cosine_neighbours([[1.0, 0.0], [0.9, 0.1], [0.0, 1.0]], 0, k=1)
    >>> ids.tolist(), round(float(cos[0]), 3)
    ([1], 0.994)
    """
    vectors = as_float_array(vectors, "vectors", ndim=2)
    if vectors.shape[0] == 0:
        raise ValueError(f"vectors must have at least one row, got shape {vectors.shape}")
    check_positive_int(query, "query", minimum=0)
    if query >= vectors.shape[0]:
        raise ValueError(f"query must be a row index below {vectors.shape[0]}, got {query}")
    check_positive_int(k, "k")
    excluded = check_tokens(exclude, "exclude", vectors.shape[0], ndim=1, allow_empty=True)
    candidates = vectors.shape[0] - np.union1d(excluded, [query]).size
    if k > candidates:
        # more neighbours than rows left would return excluded rows with cosine -inf
        raise ValueError(f"k must be at most {candidates} (rows other than the query and exclude), got {k}")
    norms = np.linalg.norm(vectors, axis=1)
    if norms[query] == 0:
        raise ValueError(f"vectors row query={query} is zero; its cosine is undefined")
    cosine = vectors @ vectors[query] / (np.where(norms > 0, norms, np.inf) * norms[query])
    cosine[query] = -np.inf
    cosine[excluded] = -np.inf
    top = np.argsort(-cosine, kind="stable")[:k]
    return top, cosine[top]
