r"""Fine-tuning a plain encoder (no ``[CLS]``, no segments) for sequence classification.

[`mlm_book.nn.finetune`][mlm_book.nn.finetune] fine-tunes the pair encoder, which has a
``[CLS]`` row to pool. The filing encoder of chapter 7 has none: it reads windows of a
filing, with ``[PAD]`` beyond the filing's edge. Here the head reads the mean of the last
layer after the final LayerNorm over the slots a caller names (``pool``, shape ``(B, n)``;
e.g. the tokens of a sentence),

$$ u = \frac{1}{|T|} \sum_{t \in T} \operatorname{LN}_f(x_L)_t, \qquad
   p(y \mid x) = \operatorname{softmax}(u W + b), \quad W \in \mathbb R^{d \times K}, $$

and every parameter the classifier reads trains: the token and position tables, every block,
the final LayerNorm and the head (the masked-LM output bias ``b_out``, and ``E_out`` of an
untied encoder, are not read and stay as they were). Training is AdamW on batches drawn with
replacement from the labelled rows, a linear warm-up over ``warmup_share`` of the steps and a
cosine decay to zero, decay on the matrices, the tables and $W$: an
[`Objective`][mlm_book.nn.loop.Objective] for [`mlm_book.nn.loop.fit`][mlm_book.nn.loop.fit].
The gradients are the layers' backward passes, chained; ``tests/test_ch07_prompting.py``
checks them against central differences in float64.

Examples
--------
A label that is a function of one token is learned from a few rows:

>>> from mlm_book.nn import encoder as enc
>>> cfg = enc.EncoderConfig(vocab_size=6, length=4, d_model=8, n_blocks=1, n_heads=2, pad=True)
>>> windows = np.array([[2, 3, 7, 7], [4, 3, 7, 7], [2, 5, 7, 7], [4, 5, 7, 7]] * 4)
>>> pool = windows != cfg.pad_id
>>> labels = (windows[:, 0] == 2).astype(int)
>>> params = enc.init_params(cfg, np.random.default_rng(0))
>>> model = fine_tune_classifier(params, cfg, windows, pool, labels, ClassifierConfig(steps=80, lr=1e-2, batch_size=8))
>>> float(np.mean(classifier_proba(model, windows, pool).argmax(1) == labels))
1.0
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from mlm_book.nn import encoder as enc
from mlm_book.nn import layers, loop
from mlm_book.nn.loop import TrainConfig
from mlm_book.validation import (
    as_float_array,
    as_int_array,
    check_instance,
    check_positive_int,
    check_real,
)

__all__ = ["ClassifierConfig", "EncoderClassifier", "pooled_vectors", "classifier_loss_and_grads",
           "fine_tune_classifier", "classifier_proba", "MAX_CLASSES"]

MAX_CLASSES = 10_000
"""Most classes a head may have (a mistaken label array is refused rather than allocating a huge head)."""

#: Parameters of the encoder that a classifier does not read (never trained here).
_UNREAD = ("b_out", "E_out")


@dataclass(frozen=True)
class ClassifierConfig:
    """How a classifier is fine-tuned.

    Parameters
    ----------
    steps, batch_size : int
        Adam steps, and rows per batch (drawn with replacement; at most the labelled rows).
    lr : float
        Peak learning rate.
    warmup_share : float
        Share of the steps of the linear warm-up, in (0, 1).
    weight_decay : float
        AdamW's decoupled decay of the matrices, the tables and the head's $W$.
    seed : int
        Initialises the head and draws the batches.

    Raises
    ------
    TypeError
        If a field is not a number of the right kind.
    ValueError
        If a number is out of range.

    Examples
    --------
    >>> ClassifierConfig(steps=200).schedule().warmup
    20
    >>> ClassifierConfig(lr=0.0)
    Traceback (most recent call last):
    ...
    ValueError: lr must be a positive finite number, got 0.0
    """

    steps: int = 200
    batch_size: int = 16
    lr: float = 1e-3
    warmup_share: float = 0.1
    weight_decay: float = 0.01
    seed: int = 0

    def __post_init__(self):
        check_positive_int(self.steps, "steps")
        check_positive_int(self.batch_size, "batch_size")
        check_real(self.lr, "lr")
        if not (self.lr > 0 and math.isfinite(self.lr)):
            raise ValueError(f"lr must be a positive finite number, got {self.lr!r}")
        check_real(self.warmup_share, "warmup_share")
        if not 0 < self.warmup_share < 1:
            raise ValueError(f"warmup_share must lie strictly between 0 and 1, got {self.warmup_share!r}")
        check_real(self.weight_decay, "weight_decay", low=0.0)
        check_positive_int(self.seed, "seed", minimum=0)

    def schedule(self) -> TrainConfig:
        """The steps, warm-up and decay as a [`TrainConfig`][mlm_book.nn.loop.TrainConfig]."""
        return TrainConfig(steps=self.steps, batch_size=self.batch_size, lr=self.lr,
                           warmup=max(1, round(self.warmup_share * self.steps)), final_lr_fraction=0.0,
                           weight_decay=self.weight_decay, seed=self.seed)


@dataclass(frozen=True, eq=False)
class EncoderClassifier:
    """A fine-tuned classifier: the encoder's parameters with the head (``head.W``, ``head.b``), and the losses.

    Attributes
    ----------
    config : mlm_book.nn.encoder.EncoderConfig
    params : dict of str to ndarray
        The encoder's arrays, and the head: ``head.W`` ``(d, classes)`` and ``head.b`` ``(classes,)``.
    losses : numpy.ndarray, shape (steps,)
        The training loss of each step (nats per row).

    Raises
    ------
    TypeError
        If ``config`` is not an ``EncoderConfig`` or ``params`` is not a dict with the head's arrays.
    ValueError
        If ``params`` does not match ``config``, ``head.W`` is not ``(d, classes)`` with 2 or more classes,
        or ``losses`` is not finite.

    Examples
    --------
    An untrained encoder with a zero head: three classes, each read as equally likely.

    >>> cfg = enc.EncoderConfig(vocab_size=5, length=4, d_model=8, n_blocks=1, n_heads=2, pad=True)
    >>> p = enc.init_params(cfg, np.random.default_rng(0)) | {"head.W": np.zeros((8, 3)), "head.b": np.zeros(3)}
    >>> model = EncoderClassifier(cfg, p, np.array([1.1, 0.9]))
    >>> model.n_classes, classifier_proba(model, [[0, 1, 6, 6]], [[True, True, False, False]]).round(3).tolist()
    (3, [[0.333, 0.333, 0.333]])
    """

    config: enc.EncoderConfig
    params: dict
    losses: np.ndarray

    def __post_init__(self):
        check_instance(self.config, "config", enc.EncoderConfig)
        if not isinstance(self.params, dict) or "head.W" not in self.params or "head.b" not in self.params:
            raise TypeError("params must be a dict holding the encoder's arrays and 'head.W', 'head.b'")
        enc.check_params({k: v for k, v in self.params.items() if not k.startswith("head.")}, self.config)
        W = as_float_array(self.params["head.W"], "params['head.W']", ndim=2)
        if W.shape[0] != self.config.d_model or not 2 <= W.shape[1] <= MAX_CLASSES:
            raise ValueError(f"params['head.W'] must have shape (d = {self.config.d_model}, classes), got {W.shape}")
        losses = as_float_array(self.losses, "losses", ndim=1)
        if not np.all(np.isfinite(losses)):
            raise ValueError("losses must be finite")

    @property
    def n_classes(self) -> int:
        """Number of classes of the head."""
        return int(self.params["head.W"].shape[1])


def _check_config(config) -> enc.EncoderConfig:
    check_instance(config, "config", enc.EncoderConfig)
    if config.head != "normalised":
        raise ValueError(f"config must have the normalised head (a final LayerNorm to read), got head={config.head!r}")
    return config


def _check_inputs(config: enc.EncoderConfig, windows, pool):
    windows = enc.check_shown(windows, config, "windows")
    if pool is None:
        raise TypeError("pool must be a boolean array of the windows' shape, got None")
    try:
        pool = np.asarray(pool)
    except (TypeError, ValueError):
        raise TypeError("pool must be a boolean array of the windows' shape (not ragged)") from None
    if pool.dtype != bool:
        raise TypeError(f"pool must be a boolean array, got dtype {pool.dtype}")
    if pool.shape != windows.shape:
        raise ValueError(f"pool must have the shape of windows {windows.shape}, got {pool.shape}")
    if not pool.any(axis=1).all():
        raise ValueError("pool must name at least one slot in every row of windows")
    if config.pad and np.any(pool & (windows == config.pad_id)):
        raise ValueError("pool must not name [PAD] slots (they are hidden from every other slot)")
    return windows, pool


def _check_labels(labels, rows: int, n_classes: int | None = None) -> tuple[np.ndarray, int]:
    if labels is None:
        raise TypeError("labels must be an array of class ids, got None")
    labels = as_int_array(labels, "labels", ndim=1)
    if labels.shape != (rows,):
        raise ValueError(f"labels must hold one class per row of windows ({rows}), got shape {labels.shape}")
    if labels.size and labels.max() >= MAX_CLASSES:
        raise ValueError(f"labels must be classes below {MAX_CLASSES}, got {int(labels.max())}")
    classes = int(labels.max()) + 1 if n_classes is None else check_positive_int(n_classes, "n_classes", minimum=2)
    if classes > MAX_CLASSES:
        raise ValueError(f"n_classes must be at most {MAX_CLASSES}, got {classes}")
    if labels.min() < 0 or labels.max() >= classes:
        raise ValueError(f"labels must be classes in [0, {classes}), got values from {int(labels.min())} to "
                         f"{int(labels.max())}")
    if np.unique(labels).size < 2:
        raise ValueError("labels must hold at least two classes")
    return labels, classes


def _forward(params, config: enc.EncoderConfig, windows: np.ndarray, pool: np.ndarray):
    """Pooled vectors ``(B, d)`` and the caches of the backward pass (unchecked)."""
    B, n = windows.shape
    x, emb_cache = layers.embedding_forward(windows, params["E"], params["P"])
    bias = enc.key_bias(config, windows, x.dtype)
    caches = []
    for block in range(config.n_blocks):
        x, cache = layers.block_forward(x, params, f"blocks.{block}.", config.n_heads, (B, n), config.ln_eps,
                                        None, bias)
        caches.append(cache)
    h, ln_cache = layers.layer_norm_forward(x, params["ln_f.g"], params["ln_f.b"], config.ln_eps)
    weights = (pool / pool.sum(axis=1, keepdims=True)).astype(h.dtype)
    u = np.einsum("bn,bnd->bd", weights, h.reshape(B, n, -1))
    return u, (emb_cache, caches, ln_cache, weights)


def _loss_and_grads(params, config: enc.EncoderConfig, windows, pool, labels):
    u, (emb_cache, caches, ln_cache, weights) = _forward(params, config, windows, pool)
    z = u @ params["head.W"] + params["head.b"]
    value, dz = layers.cross_entropy_forward(z, labels)
    grads = {"head.W": u.T @ dz, "head.b": dz.sum(axis=0)}
    du = dz @ params["head.W"].T
    dh = (weights[:, :, None] * du[:, None, :]).reshape(-1, config.d_model)
    dx, g = layers.layer_norm_backward(dh, ln_cache)
    grads["ln_f.g"], grads["ln_f.b"] = g["g"], g["b"]
    for cache in reversed(caches):
        dx, g = layers.block_backward(dx, cache)
        grads.update(g)
    _, emb = layers.embedding_backward(dx, emb_cache)
    grads["E"], grads["P"] = emb["E"], emb["P"]
    return value, grads


def classifier_loss_and_grads(params, config: enc.EncoderConfig, windows, pool, labels):
    """Mean cross-entropy of the head on a batch, and the gradient of every array the classifier reads.

    Parameters
    ----------
    params : dict
        The encoder's arrays of ``config`` and the head's ``"head.W"`` ``(d, K)`` and ``"head.b"`` ``(K,)``.
    config : EncoderConfig
    windows : array of int, shape (B, n)
        Input ids.
    pool : array of bool, shape (B, n)
        The slots averaged into each row's vector (at least one per row, no [PAD]).
    labels : array of int, shape (B,)
        Classes in ``[0, K)``.

    Returns
    -------
    loss : float
        Nats per row.
    grads : dict of str to ndarray
        One per array read (not ``b_out``, ``E_out``).

    Raises
    ------
    TypeError, ValueError
        If an argument has the wrong type, shape or range, naming it.

    Examples
    --------
    >>> cfg = enc.EncoderConfig(vocab_size=5, length=4, d_model=8, n_blocks=1, n_heads=2, pad=True)
    >>> p = enc.init_params(cfg, np.random.default_rng(0), dtype=np.float64)
    >>> p |= {"head.W": np.zeros((8, 2)), "head.b": np.zeros(2)}
    >>> value, g = classifier_loss_and_grads(p, cfg, [[0, 1, 6, 6]], [[True, True, False, False]], [1])
    >>> round(value, 4), sorted(set(g) - set(p))
    (0.6931, [])
    """
    config = _check_config(config)
    if not isinstance(params, dict) or "head.W" not in params or "head.b" not in params:
        raise TypeError("params must be a dict of the encoder's arrays with 'head.W' and 'head.b'")
    enc.check_params({k: v for k, v in params.items() if not k.startswith("head.")}, config)
    W = as_float_array(params["head.W"], "params['head.W']", ndim=2)
    if W.shape[0] != config.d_model:
        raise ValueError(f"params['head.W'] must have d = {config.d_model} rows, got shape {W.shape}")
    b = as_float_array(params["head.b"], "params['head.b']", ndim=1)
    if b.shape != (W.shape[1],):
        raise ValueError(f"params['head.b'] must hold one bias per class ({W.shape[1]}), got shape {b.shape}")
    windows, pool = _check_inputs(config, windows, pool)
    labels = as_int_array(labels, "labels", ndim=1)
    if labels.shape != (windows.shape[0],) or labels.min() < 0 or labels.max() >= W.shape[1]:
        raise ValueError(f"labels must hold one class in [0, {W.shape[1]}) per row of windows")
    return _loss_and_grads(params, config, windows, pool, labels)


def pooled_vectors(params, config: enc.EncoderConfig, windows, pool, batch: int = 512) -> np.ndarray:
    """The pooled vectors $u$ (mean of the final-LayerNorm rows over ``pool``), shape ``(B, d)``, float64.

    Raises
    ------
    TypeError, ValueError
        If an argument has the wrong type, shape or range, naming it.

    Examples
    --------
    >>> cfg = enc.EncoderConfig(vocab_size=5, length=4, d_model=8, n_blocks=1, n_heads=2, pad=True)
    >>> p = enc.init_params(cfg, np.random.default_rng(0))
    >>> pooled_vectors(p, cfg, [[0, 1, 6, 6]], [[True, True, False, False]]).shape
    (1, 8)
    """
    config = _check_config(config)
    params = enc.check_params({k: v for k, v in params.items() if not k.startswith("head.")}, config) \
        if isinstance(params, dict) else enc.check_params(params, config)
    windows, pool = _check_inputs(config, windows, pool)
    batch = check_positive_int(batch, "batch")
    out = [_forward(params, config, windows[s:s + batch], pool[s:s + batch])[0].astype(np.float64)
           for s in range(0, windows.shape[0], batch)]
    return np.concatenate(out)


def fine_tune_classifier(params, config: enc.EncoderConfig, windows, pool, labels,
                         settings: ClassifierConfig = ClassifierConfig(), n_classes: int | None = None
                         ) -> EncoderClassifier:
    """Fine-tune every array a mean-pooled classification head reads, on labelled windows.

    Parameters
    ----------
    params : mapping
        The starting encoder (e.g. a trained filing encoder's); copied, not changed.
    config : EncoderConfig
        With the normalised head.
    windows : array of int, shape (B, n)
    pool : array of bool, shape (B, n)
        The slots of each row that the head averages.
    labels : array of int, shape (B,)
    settings : ClassifierConfig
    n_classes : int, optional
        Default: the largest label plus one.

    Returns
    -------
    EncoderClassifier

    Raises
    ------
    TypeError, ValueError
        If an argument has the wrong type, shape or range, naming it.
    FloatingPointError
        If the loss or a gradient becomes NaN or infinite.
    """
    config = _check_config(config)
    params = enc.check_params(params, config)
    windows, pool = _check_inputs(config, windows, pool)
    labels, classes = _check_labels(labels, windows.shape[0], n_classes)
    check_instance(settings, "settings", ClassifierConfig)
    rng = np.random.default_rng(settings.seed)
    dtype = params["E"].dtype
    state = {name: np.array(params[name], dtype=dtype) for name in enc.param_names(config)}
    state["head.W"] = rng.normal(0.0, config.init_std, size=(config.d_model, classes)).astype(dtype)
    state["head.b"] = np.zeros(classes, dtype=dtype)
    frozen = [name for name in state if name in _UNREAD]
    decayed = [name for name in enc.decayed_names(config) if name not in frozen] + ["head.W"]
    size = min(settings.batch_size, windows.shape[0])

    def draw(rng, step):
        return rng.integers(0, windows.shape[0], size=size)

    def loss_and_grads(current, rows):
        return _loss_and_grads(current, config, windows[rows], pool[rows], labels[rows])

    objective = loop.Objective(state, draw, loss_and_grads, decayed=decayed, frozen=frozen, label="fine-tuning")
    fitted = loop.fit(objective, settings.schedule(), rng, progress=False)
    return EncoderClassifier(config, state, fitted.loss)


def classifier_proba(model: EncoderClassifier, windows, pool, batch: int = 512) -> np.ndarray:
    """Class probabilities of a fine-tuned classifier, shape ``(B, classes)``, float64.

    Raises
    ------
    TypeError, ValueError
        If ``model`` is not an `EncoderClassifier` or the inputs are malformed, naming the argument.
    """
    check_instance(model, "model", EncoderClassifier)
    u = pooled_vectors(model.params, model.config, windows, pool, batch)
    z = u @ model.params["head.W"].astype(np.float64) + model.params["head.b"]
    z -= z.max(axis=1, keepdims=True)
    np.exp(z, out=z)
    return z / z.sum(axis=1, keepdims=True)
