r"""Fine-tuning a pair encoder for sequence classification: a head on ``[CLS]`` or on the mean of token vectors.

The head reads the last layer after the final LayerNorm, $h = \operatorname{LN}_f(x_L)$,
pooled one of two ways:

* ``"cls"``: the ``[CLS]`` row, $u = h_0$;
* ``"mean"``: the mean of the token rows (every slot but ``[CLS]`` and ``[PAD]``),
  $u = \frac1{|T|}\sum_{t \in T} h_t$;

then $p(y \mid x) = \operatorname{softmax}(u W_C + b_C)$ with $W_C$ of shape (d, classes),
trained by cross-entropy. What else trains is the *mode*:

* ``"top"``: the last block and the final LayerNorm too (the rest frozen, so the input to
  the last block is computed once);
* ``"full"``: every parameter of the encoder.

(A *frozen* encoder with a head trained to convergence is chapter 5's probe,
[`mlm_book.probe.fit_and_score`][mlm_book.probe.fit_and_score], on [`pooled_features`][mlm_book.nn.finetune.pooled_features].)

Training is AdamW with a linear warm-up over a tenth of the steps and a cosine decay to
zero, on batches drawn with replacement from the labelled set; decay 0.01 on the matrices
and tables, as BERT fine-tunes: an [`Objective`][mlm_book.nn.loop.Objective] for
[`mlm_book.nn.loop.fit`][mlm_book.nn.loop.fit], the loop every training of the book runs.
No gradient here is new: they are the layers' backward passes, chained, and
``tests/test_pairs.py`` checks them against central differences.

Examples
--------
>>> from mlm_book.nn import encoder as enc, pairs
>>> cfg = pairs.PairEncoderConfig(enc.EncoderConfig(vocab_size=6, length=6, d_model=8, n_blocks=1, n_heads=2, pad=True))
>>> rows = [pairs.encode_pair([k], [k], cfg) for k in (2, 3, 4, 5) * 4]
>>> tokens = np.stack([r[0] for r in rows]); segments = np.stack([r[1] for r in rows])
>>> labels = np.array([0, 1, 0, 1] * 4)
>>> params = pairs.init_pair_params(cfg, np.random.default_rng(0))
>>> tuned = fine_tune(params, cfg, tokens, segments, labels, FineTuneConfig(steps=60, lr=1e-2, batch_size=8))
>>> float(np.mean(classify(tuned, tokens, segments).argmax(1) == labels))
1.0
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from mlm_book.nn import encoder as enc
from mlm_book.nn import layers, loop, pairs
from mlm_book.nn.loop import TrainConfig
from mlm_book.validation import as_float_array, as_int_array, check_instance, check_positive_int, check_real

__all__ = ["FineTuneConfig", "FineTuned", "pooled_features", "fine_tune", "classify", "MAX_CLASSES"]

MAX_CLASSES = 10_000
"""Most classes a head may have (a mistaken label array is refused rather than allocating a huge head)."""


@dataclass(frozen=True)
class FineTuneConfig:
    """How a classifier is fine-tuned.

    Parameters
    ----------
    mode : {"top", "full"}
        What trains beside the head: the last block and final LayerNorm, or everything.
    pooling : {"cls", "mean"}
    steps, batch_size : int
    lr : float
        Peak learning rate.
    weight_decay : float
        AdamW's decoupled decay of the matrices and tables (0.01, BERT's fine-tuning value).
    seed : int
        Initialises the head and draws the batches.

    Raises
    ------
    ValueError
        If ``mode`` or ``pooling`` is unknown, or a number is out of range.

    Examples
    --------
    >>> FineTuneConfig(mode="frozen")
    Traceback (most recent call last):
    ...
    ValueError: mode must be 'top' or 'full' (a frozen encoder is a probe), got 'frozen'
    """

    mode: str = "full"
    pooling: str = "cls"
    steps: int = 200
    batch_size: int = 32
    lr: float = 1e-3
    weight_decay: float = 0.01
    seed: int = 0

    def __post_init__(self):
        if not isinstance(self.mode, str) or self.mode not in ("top", "full"):
            raise ValueError(f"mode must be 'top' or 'full' (a frozen encoder is a probe), got {self.mode!r}")
        if not isinstance(self.pooling, str) or self.pooling not in ("cls", "mean"):
            raise ValueError(f"pooling must be 'cls' or 'mean', got {self.pooling!r}")
        check_positive_int(self.steps, "steps")
        check_positive_int(self.batch_size, "batch_size")
        check_real(self.lr, "lr", low=0.0)
        if not self.lr > 0 or not math.isfinite(self.lr):
            raise ValueError(f"lr must be a positive finite number, got {self.lr!r}")
        check_real(self.weight_decay, "weight_decay", low=0.0)
        check_positive_int(self.seed, "seed", minimum=0)

    def schedule(self) -> TrainConfig:
        """The warm-up and decay as a [`TrainConfig`][mlm_book.nn.loop.TrainConfig] (its ``learning_rate``)."""
        return TrainConfig(steps=self.steps, batch_size=self.batch_size, lr=self.lr,
                           warmup=max(1, self.steps // 10), final_lr_fraction=0.0,
                           weight_decay=self.weight_decay, seed=self.seed)


@dataclass(frozen=True, eq=False)
class FineTuned:
    """A fine-tuned classifier: the encoder's parameters after training, the head, the losses.

    Attributes
    ----------
    config : mlm_book.nn.pairs.PairEncoderConfig
    params : dict of str to ndarray
        The pair encoder's arrays.
    W : numpy.ndarray, shape (d, classes)
    b : numpy.ndarray, shape (classes,)
        The head, on the pooled vector.
    pooling : str
        ``"cls"`` (the [CLS] slot's vector) or ``"mean"`` (the mean over the real slots).
    losses : numpy.ndarray, shape (steps,)
        The training loss of each step (nats per row).

    Raises
    ------
    TypeError
        If ``config`` is not a ``PairEncoderConfig`` or an array is of the wrong kind.
    ValueError
        If ``params`` does not match ``config``, the head is not finite or of the wrong shape (2 or more
        classes), ``pooling`` is not ``"cls"`` or ``"mean"``, or ``losses`` is not finite.

    Examples
    --------
    An untrained pair encoder with a zero head reads every pair as a coin flip:

    >>> cfg = pairs.PairEncoderConfig(enc.EncoderConfig(vocab_size=6, length=6, d_model=8, n_blocks=1, n_heads=2,
    ...                                                 pad=True))
    >>> params = pairs.init_pair_params(cfg, np.random.default_rng(0))
    >>> tuned = FineTuned(cfg, params, np.zeros((8, 2)), np.zeros(2), "cls", np.array([0.7, 0.6]))
    >>> t, s = pairs.encode_pair([2, 3], [4], cfg)
    >>> classify(tuned, t[None], s[None]).tolist()
    [[0.5, 0.5]]
    """

    config: pairs.PairEncoderConfig
    params: dict
    W: np.ndarray
    b: np.ndarray
    pooling: str
    losses: np.ndarray

    def __post_init__(self):
        check_instance(self.config, "config", pairs.PairEncoderConfig)
        object.__setattr__(self, "params", pairs.check_pair_params(self.params, self.config))
        d = self.config.encoder.d_model
        W = as_float_array(self.W, "W", ndim=2)
        if W.shape[0] != d or not 2 <= W.shape[1] <= MAX_CLASSES or not np.all(np.isfinite(W)):
            raise ValueError(f"W must be a finite (d = {d}, classes) matrix with 2 to {MAX_CLASSES} classes, got "
                             f"shape {W.shape}")
        b = as_float_array(self.b, "b", ndim=1)
        if b.shape != (W.shape[1],) or not np.all(np.isfinite(b)):
            raise ValueError(f"b must hold one finite bias per class ({W.shape[1]}), got shape {b.shape}")
        if not isinstance(self.pooling, str) or self.pooling not in ("cls", "mean"):
            raise ValueError(f"pooling must be 'cls' or 'mean', got {self.pooling!r}")
        losses = as_float_array(self.losses, "losses", ndim=1)
        if not np.all(np.isfinite(losses)):
            raise ValueError("losses must be finite")
        for name, value in (("W", W), ("b", b), ("losses", losses)):
            object.__setattr__(self, name, value)


def _check_inputs(config, tokens, segments, labels=None):
    tokens, segments = pairs.check_pair_input(tokens, segments, config)
    if np.any(tokens[:, 0] != config.cls_id):
        raise ValueError(f"tokens must start every row with [CLS] (id {config.cls_id})")
    if np.any(tokens[:, 1:] == config.cls_id):
        raise ValueError("tokens must hold [CLS] at position 0 only")
    if np.any(tokens == config.mask_id):
        raise ValueError("tokens must not hold [MASK]: a classifier reads clean text")
    if labels is None:
        return tokens, segments
    return tokens, segments, _check_labels(labels, tokens.shape[0])


def _check_labels(labels, rows: int) -> np.ndarray:
    if labels is None:
        raise TypeError("labels must be an array of class ids, got None")
    labels = as_int_array(labels, "labels", ndim=1)
    if labels.shape != (rows,):
        raise ValueError(f"labels must hold one class per row of tokens ({rows}), got shape {labels.shape}")
    if labels.min() < 0 or labels.max() >= MAX_CLASSES:
        raise ValueError(f"labels must be classes 0, 1, ... below {MAX_CLASSES}, got values from {int(labels.min())} "
                         f"to {int(labels.max())}")
    if np.unique(labels).size < 2:
        raise ValueError("labels must hold at least two classes")
    return labels


def _pool(h: np.ndarray, tokens: np.ndarray, config, pooling: str):
    """Pooled rows (B, d) and the weights (B*n,) that spread a pooled gradient back over the rows."""
    B, n = tokens.shape
    if pooling == "cls":
        weights = np.zeros((B, n), dtype=h.dtype)
        weights[:, 0] = 1.0
    else:
        real = (tokens != config.pad_id) & (tokens != config.cls_id)
        weights = real / real.sum(axis=1, keepdims=True)
        weights = weights.astype(h.dtype)
    pooled = np.einsum("bn,bnd->bd", weights, h.reshape(B, n, -1))
    return pooled, weights


def _forward(params, config, x_in, tokens, first: int, pooling: str):
    B, n = tokens.shape
    bias = pairs.key_bias(config, tokens, x_in.dtype)
    x, caches, _ = pairs.blocks_forward(params, config, x_in, (B, n), None, bias, first=first)
    h, ln_cache = layers.layer_norm_forward(x, params["ln_f.g"], params["ln_f.b"], config.encoder.ln_eps)
    pooled, weights = _pool(h, tokens, config, pooling)
    return pooled, (caches, ln_cache, weights)


def _loss_and_grads(params, head, config, x_in, emb_cache, tokens, labels, first: int, pooling: str):
    """Cross-entropy of the head on a batch and the gradients of the head, the blocks from ``first`` on,
    the final LayerNorm and (with ``emb_cache``, i.e. ``first == 0``) the embedding tables."""
    d = config.encoder.d_model
    pooled, (caches, ln_cache, weights) = _forward(params, config, x_in, tokens, first, pooling)
    z = pooled @ head["W"] + head["b"]
    value, dz = layers.cross_entropy_forward(z, labels)
    grads = {"head.W": pooled.T @ dz, "head.b": dz.sum(axis=0)}
    dpooled = dz @ head["W"].T
    dh = (weights[:, :, None] * dpooled[:, None, :]).reshape(-1, d)
    dx, g = layers.layer_norm_backward(dh, ln_cache)
    grads["ln_f.g"], grads["ln_f.b"] = g["g"], g["b"]
    dx, block_grads = pairs.blocks_backward(dx, caches)
    grads.update(block_grads)
    if emb_cache is not None:
        grads.update(pairs.pair_embedding_backward(dx, emb_cache, config))
    return value, grads


def pooled_features(params, config: pairs.PairEncoderConfig, tokens, segments, pooling: str = "cls",
                    batch: int = 512) -> np.ndarray:
    """The pooled last-layer vectors $u$ (after the final LayerNorm) of each input.

    Parameters
    ----------
    params : mapping
    config : PairEncoderConfig
    tokens, segments : array of int, shape (B, n)
        Clean inputs starting with [CLS].
    pooling : {"cls", "mean"}
    batch : int
        Rows per forward pass.

    Returns
    -------
    ndarray, shape (B, d), float64

    Raises
    ------
    TypeError
        If an argument has the wrong type.
    ValueError
        If ``pooling`` is unknown, or the inputs are malformed (as for
        [`fine_tune`][mlm_book.nn.finetune.fine_tune]).

    Examples
    --------
    >>> from mlm_book.nn import encoder as enc
    >>> cfg = pairs.PairEncoderConfig(enc.EncoderConfig(vocab_size=6, length=6, d_model=8, n_blocks=1, n_heads=2, pad=True))
    >>> t, s = pairs.encode_pair([2, 3], [4], cfg)
    >>> u = pooled_features(pairs.init_pair_params(cfg, np.random.default_rng(0)), cfg, t[None], s[None], "mean")
    >>> u.shape, bool(abs(u.mean()) < 1e-6)
    ((1, 8), True)
    """
    params = pairs.check_pair_params(params, config)
    tokens, segments = _check_inputs(config, tokens, segments)
    if not isinstance(pooling, str) or pooling not in ("cls", "mean"):
        raise ValueError(f"pooling must be 'cls' or 'mean', got {pooling!r}")
    batch = check_positive_int(batch, "batch")
    out = []
    for start in range(0, tokens.shape[0], batch):
        t, s = tokens[start:start + batch], segments[start:start + batch]
        x0, _ = pairs.pair_embedding_forward(params, config, t, s)
        pooled, _ = _forward(params, config, x0, t, 0, pooling)
        out.append(pooled.astype(np.float64))
    return np.concatenate(out)


def fine_tune(params, config: pairs.PairEncoderConfig, tokens, segments, labels,
              settings: FineTuneConfig = FineTuneConfig(), n_classes: int | None = None) -> FineTuned:
    """Train a classification head, and the encoder's top block or all of it, on labelled inputs.

    Parameters
    ----------
    params : mapping
        The starting encoder (pre-trained, or fresh from
        [`init_pair_params`][mlm_book.nn.pairs.init_pair_params] for training from scratch); it is copied, not changed.
    config : PairEncoderConfig
    tokens, segments : array of int, shape (B, n)
        Clean inputs, ``[CLS]`` first.
    labels : array of int, shape (B,)
        Classes ``0 .. n_classes - 1``.
    settings : FineTuneConfig
    n_classes : int, optional
        Number of classes (default: the largest label plus one).

    Returns
    -------
    FineTuned

    Raises
    ------
    TypeError
        If an argument has the wrong type.
    ValueError
        If the inputs are malformed (ids, segments, a row without [CLS] first, a [MASK]),
        the labels are not one class per row with at least two classes, or a label is not
        below ``n_classes``.
    FloatingPointError
        If the loss or a gradient becomes NaN or infinite.
    """
    params = pairs.check_pair_params(params, config)
    tokens, segments = _check_inputs(config, tokens, segments)
    labels = _check_labels(labels, tokens.shape[0])
    check_instance(settings, "settings", FineTuneConfig)
    classes = int(labels.max()) + 1 if n_classes is None else check_positive_int(n_classes, "n_classes", minimum=2)
    if classes > MAX_CLASSES:
        raise ValueError(f"n_classes must be at most {MAX_CLASSES}, got {classes}")
    if labels.max() >= classes:
        raise ValueError(f"labels must be below n_classes = {classes}, got {int(labels.max())}")
    rng = np.random.default_rng(settings.seed)
    dtype = params["E"].dtype
    cfg = config.encoder
    d = cfg.d_model
    params = {k: v.copy() for k, v in params.items()}
    head = {"W": rng.normal(0.0, cfg.init_std, size=(d, classes)).astype(dtype), "b": np.zeros(classes, dtype)}
    if settings.mode == "full":
        first = 0
        trained = [n for n in params if n not in ("nsp.W", "nsp.b", "b_out")]   # the heads this task does not use
    else:
        first = cfg.n_blocks - 1
        prefix = f"blocks.{first}."
        trained = [n for n in params if n.startswith(prefix) or n.startswith("ln_f.")]
        # the frozen blocks' output, computed once
        x_all, _ = pairs.pair_embedding_forward(params, config, tokens, segments)
        bias = pairs.key_bias(config, tokens, x_all.dtype)
        _, _, hidden = pairs.blocks_forward(params, config, x_all, tokens.shape, None, bias, first=0)
        inputs = hidden[first].reshape(tokens.shape[0], tokens.shape[1], d)
    decayed = [n for n in trained if n in enc.decayed_names(cfg) or n in ("cls", "S")] + ["head.W"]
    size = min(settings.batch_size, tokens.shape[0])

    def draw(rng, step):
        return rng.integers(0, tokens.shape[0], size=size)

    def loss_and_grads(state, rows):
        t, s = tokens[rows], segments[rows]
        if first == 0:
            x_in, emb_cache = pairs.pair_embedding_forward(state, config, t, s)
        else:
            x_in, emb_cache = np.ascontiguousarray(inputs[rows].reshape(-1, d)), None
        return _loss_and_grads(state, {"W": state["head.W"], "b": state["head.b"]}, config, x_in, emb_cache, t,
                               labels[rows], first, settings.pooling)

    # the trained arrays, then the head: the order of the optimiser's state
    objective = loop.Objective({**params, "head.W": head["W"], "head.b": head["b"]}, draw, loss_and_grads,
                               decayed=decayed, frozen=[n for n in params if n not in trained], label="fine-tuning")
    fitted = loop.fit(objective, settings.schedule(), rng, progress=False)
    return FineTuned(config, params, head["W"], head["b"], settings.pooling, fitted.loss)


def classify(model: FineTuned, tokens, segments, batch: int = 512) -> np.ndarray:
    """Class probabilities of a fine-tuned classifier, shape (B, classes).

    Raises
    ------
    TypeError
        If ``model`` is not a `FineTuned` or the inputs have the wrong type.
    ValueError
        If the inputs are malformed (as for [`fine_tune`][mlm_book.nn.finetune.fine_tune]).
    """
    check_instance(model, "model", FineTuned)
    u = pooled_features(model.params, model.config, tokens, segments, model.pooling, batch)
    z = u @ model.W.astype(np.float64) + model.b
    z -= z.max(axis=1, keepdims=True)
    np.exp(z, out=z)
    return z / z.sum(axis=1, keepdims=True)
