r"""Fine-tuning a plain encoder to tag every position: a softmax head over hidden states on the last layer.

Chapter 9 tags the HMM language's hidden states (its "parts of speech") with the book's
HMM encoder and with chapter 10's left-to-right reader. Both are plain
[`EncoderConfig`][mlm_book.nn.encoder.EncoderConfig] encoders (no ``[CLS]``, no segments),
so the head sits directly on the last layer as the encoder's own output layer does: with
the final LayerNorm, $h_i = \operatorname{LN}_f(x_{L,i})$ (the residual stream $x_{L,i}$
itself for an encoder with the ``"plain"`` head, which has no final LayerNorm), and

$$ p(s_i = k \mid x) = \operatorname{softmax}(h_i W + b)_k, \qquad W \in \mathbb R^{d \times K} . $$

A causal encoder keeps its mask, so its tag at $i$ reads $x_{\le i}$ only. The loss of a
batch is the mean cross-entropy over its scored positions (a tag of ``-1`` is not scored).
Training is **full fine-tuning**: the head and every parameter the tags read (the token
and position tables, every block, the final LayerNorm) train; the masked-LM output bias
``b_out`` (and an untied ``E_out``) are never read and stay unchanged. AdamW with a linear
warm-up over a tenth of the steps and a cosine decay to zero, decay on the matrices, the
tables and the head's $W$ ([`mlm_book.nn.loop.fit`][mlm_book.nn.loop.fit]). The gradients
are the layers' backward passes, chained; ``tests/test_ch09_states.py`` checks them against
central differences in float64.

Examples
--------
A tag that is a function of the token alone is learned in a few steps:

>>> cfg = enc.EncoderConfig(vocab_size=4, length=5, d_model=8, n_blocks=1, n_heads=2)
>>> rng = np.random.default_rng(0)
>>> tokens = rng.integers(0, 4, size=(16, 5)); tags = tokens % 2
>>> params = enc.init_params(cfg, rng)
>>> tagger = fine_tune_states(params, cfg, tokens, tags, StateTaggerConfig(steps=60, lr=1e-2, batch_size=8), 2)
>>> float(np.mean(state_log_probabilities(tagger, tokens).argmax(axis=2) == tags))
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

__all__ = ["StateTaggerConfig", "StateTagger", "state_features", "loss_and_grads", "fine_tune_states",
           "state_log_probabilities", "MAX_TAGS"]

MAX_TAGS = 10_000
"""Most tags a head may have (a mistaken ``n_tags`` is refused rather than allocating a huge head)."""


@dataclass(frozen=True)
class StateTaggerConfig:
    """How a state tagger is fine-tuned.

    Parameters
    ----------
    steps, batch_size : int
        Adam steps, and sentences per batch (drawn with replacement; every scored position
        of a sentence counts).
    lr : float
        Peak learning rate.
    weight_decay : float
        AdamW's decoupled decay of the matrices, the tables and the head's $W$.
    seed : int
        Initialises the head and draws the batches.

    Raises
    ------
    TypeError, ValueError
        If a field is not a number of the right kind or out of range.

    Examples
    --------
    >>> StateTaggerConfig(steps=300).schedule().warmup
    30
    >>> StateTaggerConfig(lr=0)
    Traceback (most recent call last):
    ...
    ValueError: lr must be a positive finite number, got 0
    """

    steps: int = 300
    batch_size: int = 32
    lr: float = 1e-3
    weight_decay: float = 0.01
    seed: int = 0

    def __post_init__(self):
        check_positive_int(self.steps, "steps")
        check_positive_int(self.batch_size, "batch_size")
        check_real(self.lr, "lr")
        if not self.lr > 0 or not math.isfinite(self.lr):
            raise ValueError(f"lr must be a positive finite number, got {self.lr!r}")
        check_real(self.weight_decay, "weight_decay", low=0.0)
        check_positive_int(self.seed, "seed", minimum=0)

    def schedule(self) -> TrainConfig:
        """Warm-up over a tenth of the steps, cosine to zero, as a [`TrainConfig`][mlm_book.nn.loop.TrainConfig]."""
        return TrainConfig(steps=self.steps, batch_size=self.batch_size, lr=self.lr,
                           warmup=max(1, self.steps // 10), final_lr_fraction=0.0,
                           weight_decay=self.weight_decay, seed=self.seed)


def _check_n_tags(n_tags) -> int:
    n_tags = check_positive_int(n_tags, "n_tags", minimum=2)
    if n_tags > MAX_TAGS:
        raise ValueError(f"n_tags must be at most {MAX_TAGS}, got {n_tags}")
    return n_tags


def _check_head(W, b, d: int, name: str = "W"):
    W = as_float_array(W, name, ndim=2)
    if W.shape[0] != d or not 2 <= W.shape[1] <= MAX_TAGS or not np.all(np.isfinite(W)):
        raise ValueError(f"{name} must be a finite (d = {d}, n_tags) matrix with 2 to {MAX_TAGS} tags, got shape "
                         f"{W.shape}")
    b = as_float_array(b, "b", ndim=1)
    if b.shape != (W.shape[1],) or not np.all(np.isfinite(b)):
        raise ValueError(f"b must hold one finite bias per tag ({W.shape[1]}), got shape {b.shape}")
    return W, b


@dataclass(frozen=True, eq=False)
class StateTagger:
    """A fine-tuned state tagger: the encoder's parameters after training, the head, the losses.

    Parameters
    ----------
    encoder : EncoderConfig
    params : mapping
        The encoder's parameters (every array of ``encoder``).
    W : array, shape (d, n_tags)
    b : array, shape (n_tags,)
    losses : array, shape (steps,)
        The training loss at each step (nats per scored position).

    Raises
    ------
    TypeError
        If a field has the wrong type.
    ValueError
        If ``params`` does not match ``encoder``, or ``W``, ``b`` or ``losses`` has the wrong
        shape or holds NaN or infinity.

    Examples
    --------
    >>> cfg = enc.EncoderConfig(vocab_size=4, length=5, d_model=8, n_blocks=1, n_heads=2)
    >>> StateTagger(cfg, enc.init_params(cfg, np.random.default_rng(0)), np.zeros((8, 3)), np.zeros(3), [1.0]).n_tags
    3
    """

    encoder: enc.EncoderConfig
    params: dict
    W: np.ndarray
    b: np.ndarray
    losses: np.ndarray

    def __post_init__(self):
        check_instance(self.encoder, "encoder", enc.EncoderConfig)
        object.__setattr__(self, "params", enc.check_params(self.params, self.encoder))
        W, b = _check_head(self.W, self.b, self.encoder.d_model)
        losses = as_float_array(self.losses, "losses", ndim=1)
        if not np.all(np.isfinite(losses)):
            raise ValueError("losses must be finite")
        for name, value in (("W", W), ("b", b), ("losses", losses)):
            object.__setattr__(self, name, value)

    @property
    def n_tags(self) -> int:
        """The number of tags $K$ (columns of ``W``)."""
        return self.W.shape[1]


# --------------------------------------------------------------------------- checks
def _check_tokens(tokens, config: enc.EncoderConfig) -> np.ndarray:
    tokens = enc.check_shown(tokens, config, "tokens")
    if tokens.size == 0:
        raise ValueError(f"tokens must hold at least one sentence of at least one token, got shape {tokens.shape}")
    if np.any(tokens >= config.vocab_size):
        raise ValueError(f"tokens must be real tokens (ids below vocab_size = {config.vocab_size}): a tagger reads "
                         "clean sentences, without [MASK] or [PAD]")
    return tokens


def _check_tags(tags, tokens: np.ndarray, n_tags: int) -> np.ndarray:
    if tags is None:
        raise TypeError("tags must be an array of tag ids (-1 for an unscored position), got None")
    tags = as_int_array(tags, "tags", ndim=2)
    if tags.shape != tokens.shape:
        raise ValueError(f"tags must hold one tag per position of tokens {tokens.shape}, got shape {tags.shape}")
    low, high = int(tags.min()), int(tags.max())
    if low < -1 or high >= n_tags:
        raise ValueError(f"tags must be tag ids in [0, n_tags = {n_tags}) or -1 (not scored), got values from "
                         f"{low} to {high}")
    if high < 0:
        raise ValueError("tags must score at least one position (a tag >= 0), got -1 everywhere")
    return tags


# --------------------------------------------------------------------------- passes
def _normalised(config: enc.EncoderConfig) -> bool:
    return config.head == "normalised"


def _trained_names(params, config: enc.EncoderConfig) -> list[str]:
    """Every encoder parameter the tags read: the tables, the blocks and the final LayerNorm (not ``b_out``, ``E_out``)."""
    return [name for name in params if name in ("E", "P") or name.startswith("blocks.")
            or (_normalised(config) and name.startswith("ln_f."))]


def _forward(params, config: enc.EncoderConfig, tokens: np.ndarray, rows=None):
    """The rows the head reads, ``(len(rows) or B*n, d)``, and the caches of the backward pass."""
    x0, emb_cache = layers.embedding_forward(tokens, params["E"], params["P"])
    bias = enc.key_bias(config, tokens, x0.dtype)
    x, caches = x0, []
    for block in range(config.n_blocks):
        x, cache = layers.block_forward(x, params, f"blocks.{block}.", config.n_heads, tokens.shape, config.ln_eps,
                                        rows if block == config.n_blocks - 1 else None, bias)
        caches.append(cache)
    ln_cache = None
    if _normalised(config):
        x, ln_cache = layers.layer_norm_forward(x, params["ln_f.g"], params["ln_f.b"], config.ln_eps)
    return x, (emb_cache, caches, ln_cache)


def _loss_and_grads(params, config: enc.EncoderConfig, tokens: np.ndarray, tags: np.ndarray):
    """Mean cross-entropy of the head (``params["head.W"]``, ``params["head.b"]``) over the scored positions, and
    the gradients of the head and of every encoder parameter the tags read. Unchecked: the training step."""
    flat = tags.reshape(-1)
    scored = np.flatnonzero(flat >= 0)
    h, (emb_cache, caches, ln_cache) = _forward(params, config, tokens, scored)
    W = params["head.W"]
    value, dz = layers.cross_entropy_forward(h @ W + params["head.b"], flat[scored])
    grads = {"head.W": h.T @ dz, "head.b": dz.sum(axis=0)}
    dx = dz @ W.T
    if ln_cache is not None:
        dx, g = layers.layer_norm_backward(dx, ln_cache)
        grads["ln_f.g"], grads["ln_f.b"] = g["g"], g["b"]
    for cache in reversed(caches):
        dx, g = layers.block_backward(dx, cache)
        grads.update(g)
    _, emb = layers.embedding_backward(dx, emb_cache)
    grads["E"], grads["P"] = emb["E"], emb["P"]
    return value, grads


# --------------------------------------------------------------------------- public
def state_features(params, config: enc.EncoderConfig, tokens, batch: int = 512) -> np.ndarray:
    r"""What the head reads at every position: $\operatorname{LN}_f(x_L)$ (or $x_L$ for a plain-head encoder).

    Parameters
    ----------
    params : mapping
    config : EncoderConfig
    tokens : array of int, shape (B, n)
        Clean sentences (ids below ``vocab_size``).
    batch : int
        Sentences per forward pass.

    Returns
    -------
    ndarray, shape (B, n, d), float64

    Raises
    ------
    TypeError
        If an argument has the wrong type.
    ValueError
        If ``params`` does not match ``config``, ``tokens`` is not a 2-D array of real token ids
        no longer than ``config.length``, or ``batch`` is not positive.

    Examples
    --------
    >>> cfg = enc.EncoderConfig(vocab_size=4, length=5, d_model=8, n_blocks=1, n_heads=2)
    >>> h = state_features(enc.init_params(cfg, np.random.default_rng(0)), cfg, [[0, 1, 2]])
    >>> h.shape, bool(np.allclose(h.mean(axis=2), 0.0, atol=1e-6))   # after the final LayerNorm (its offset is 0)
    ((1, 3, 8), True)
    """
    check_instance(config, "config", enc.EncoderConfig)
    params = enc.check_params(params, config)
    tokens = _check_tokens(tokens, config)
    batch = check_positive_int(batch, "batch")
    B, n = tokens.shape
    out = np.empty((B, n, config.d_model))
    for start in range(0, B, batch):
        t = tokens[start:start + batch]
        h, _ = _forward(params, config, t)
        out[start:start + t.shape[0]] = h.reshape(t.shape[0], n, -1)
    return out


def loss_and_grads(params, config: enc.EncoderConfig, W, b, tokens, tags):
    """The tagging loss of a batch and its gradients: what one fine-tuning step computes.

    Parameters
    ----------
    params : mapping
        The encoder's parameters.
    config : EncoderConfig
    W : array, shape (d, n_tags)
    b : array, shape (n_tags,)
        The head.
    tokens : array of int, shape (B, n)
        Clean sentences.
    tags : array of int, shape (B, n)
        Tag ids ``0 .. n_tags - 1``, or ``-1`` at a position that is not scored; at least one scored.

    Returns
    -------
    loss : float
        Mean cross-entropy over the scored positions, in nats.
    grads : dict of str to ndarray
        ``"head.W"``, ``"head.b"`` and every encoder parameter the tags read (the tables, the
        blocks, the final LayerNorm).

    Raises
    ------
    TypeError
        If an argument has the wrong type.
    ValueError
        If ``params`` does not match ``config``, the head's shapes are wrong, ``tokens`` is not clean
        sentences of ``config``, or ``tags`` has another shape, an id out of range or scores nothing.

    Examples
    --------
    >>> cfg = enc.EncoderConfig(vocab_size=4, length=5, d_model=8, n_blocks=1, n_heads=2)
    >>> p = enc.init_params(cfg, np.random.default_rng(0), dtype=np.float64)
    >>> value, grads = loss_and_grads(p, cfg, np.zeros((8, 3)), np.zeros(3), [[0, 1, 2]], [[0, -1, 2]])
    >>> round(value, 12) == round(float(np.log(3)), 12), "b_out" in grads
    (True, False)
    """
    check_instance(config, "config", enc.EncoderConfig)
    params = enc.check_params(params, config)
    W, b = _check_head(W, b, config.d_model)
    tokens = _check_tokens(tokens, config)
    tags = _check_tags(tags, tokens, W.shape[1])
    return _loss_and_grads({**params, "head.W": W, "head.b": b}, config, tokens, tags)


def fine_tune_states(params, config: enc.EncoderConfig, tokens, tags, settings: StateTaggerConfig,
                     n_tags: int) -> StateTagger:
    """Full fine-tuning of an encoder with a per-position softmax head over ``n_tags`` tags.

    Parameters
    ----------
    params : mapping
        The starting encoder (pre-trained, or fresh from [`init_params`][mlm_book.nn.encoder.init_params]);
        it is copied, not changed.
    config : EncoderConfig
        A causal encoder keeps its mask: its tag at ``i`` reads positions ``<= i`` only.
    tokens : array of int, shape (B, n)
        Clean sentences.
    tags : array of int, shape (B, n)
        Tag ids ``0 .. n_tags - 1``, ``-1`` where a position is not scored; at least one scored.
        Sentences with no scored position are never drawn.
    settings : StateTaggerConfig
    n_tags : int
        Number of tags $K$, 2 to ``MAX_TAGS``.

    Returns
    -------
    StateTagger

    Raises
    ------
    TypeError
        If an argument has the wrong type.
    ValueError
        If the inputs are malformed (as for [`loss_and_grads`][mlm_book.nn.state_tagger.loss_and_grads])
        or ``n_tags`` is out of range.
    FloatingPointError
        If training diverges.

    Examples
    --------
    >>> cfg = enc.EncoderConfig(vocab_size=4, length=5, d_model=8, n_blocks=1, n_heads=2)
    >>> p = enc.init_params(cfg, np.random.default_rng(0))
    >>> tagger = fine_tune_states(p, cfg, [[0, 1, 2]], [[0, 1, 0]], StateTaggerConfig(steps=3), 2)
    >>> tagger.losses.shape, bool(np.array_equal(tagger.params["b_out"], p["b_out"]))
    ((3,), True)
    >>> fine_tune_states(p, cfg, [[0, 1, 2]], [[0, 1, 2]], StateTaggerConfig(steps=3), 2)
    Traceback (most recent call last):
    ...
    ValueError: tags must be tag ids in [0, n_tags = 2) or -1 (not scored), got values from 0 to 2
    """
    check_instance(config, "config", enc.EncoderConfig)
    params = enc.check_params(params, config)
    tokens = _check_tokens(tokens, config)
    check_instance(settings, "settings", StateTaggerConfig)
    n_tags = _check_n_tags(n_tags)
    tags = _check_tags(tags, tokens, n_tags)
    rng = np.random.default_rng(settings.seed)
    dtype = params["E"].dtype
    params = {k: v.copy() for k, v in params.items()}
    W = rng.normal(0.0, config.init_std, size=(config.d_model, n_tags)).astype(dtype)
    b = np.zeros(n_tags, dtype)
    trained = _trained_names(params, config)
    decayed = [name for name in trained if name in enc.decayed_names(config)] + ["head.W"]
    eligible = np.flatnonzero((tags >= 0).any(axis=1))
    size = min(settings.batch_size, eligible.size)

    def draw(rng, step):
        return eligible[rng.integers(0, eligible.size, size=size)]

    def step(state, rows):
        return _loss_and_grads(state, config, tokens[rows], tags[rows])

    # the encoder's arrays, then the head: the order of the optimiser's state
    objective = loop.Objective({**params, "head.W": W, "head.b": b}, draw, step, decayed=decayed,
                               frozen=[name for name in params if name not in trained], label="state tagging")
    fitted = loop.fit(objective, settings.schedule(), rng, progress=False)
    return StateTagger(config, params, W, b, fitted.loss)


def state_log_probabilities(tagger: StateTagger, tokens, batch: int = 512) -> np.ndarray:
    r"""$\log p(s_i = k \mid x)$ of a tagger at every position (of $x_{\le i}$ for a causal encoder).

    Parameters
    ----------
    tagger : StateTagger
    tokens : array of int, shape (B, n)
        Clean sentences.
    batch : int
        Sentences per forward pass.

    Returns
    -------
    ndarray, shape (B, n, n_tags), float64

    Raises
    ------
    TypeError
        If ``tagger`` is not a `StateTagger` or ``tokens`` does not hold integers.
    ValueError
        If ``tokens`` is malformed (as for [`state_features`][mlm_book.nn.state_tagger.state_features]).

    Examples
    --------
    >>> cfg = enc.EncoderConfig(vocab_size=4, length=5, d_model=8, n_blocks=1, n_heads=2)
    >>> tagger = StateTagger(cfg, enc.init_params(cfg, np.random.default_rng(0)), np.zeros((8, 3)), np.zeros(3), [])
    >>> bool(np.allclose(state_log_probabilities(tagger, [[0, 1]]), -np.log(3)))
    True
    """
    check_instance(tagger, "tagger", StateTagger)
    h = state_features(tagger.params, tagger.encoder, tokens, batch)
    z = h @ tagger.W.astype(np.float64) + tagger.b
    z -= z.max(axis=2, keepdims=True)
    z -= np.log(np.exp(z).sum(axis=2, keepdims=True))
    return z
