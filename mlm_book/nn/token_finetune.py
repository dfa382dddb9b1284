r"""Fine-tuning an encoder for token classification: a softmax head on every tagged slot.

Named-entity tagging asks for one label per token, not one per input. The head reads the
residual stream after ``depth`` blocks, $h_t = x_{\mathrm{depth}, t}$ (``depth = 0`` is the
embedding layer's output $E[x_t] + P_t + S_{s_t}$; no final LayerNorm is applied, so the
head reads exactly the raw stream that chapters 5 and 7 probe as frozen features), and
gives every slot

$$ p(y_t \mid x) = \operatorname{softmax}(h_t W + b), \qquad W \in \mathbb R^{d \times K} . $$

The tags are an array of the input's shape; a tag of ``-1`` marks a slot that is not scored
(``[CLS]``, ``[SEP]``, ``[PAD]``, or a token the task leaves out). The loss of a batch is
the mean cross-entropy over its scored slots. Trained are the head, the embedding tables
(``E``, ``P``, ``cls``, ``S``) and the blocks below ``depth``; the blocks from ``depth`` on,
the final LayerNorm, the masked-LM bias ``b_out`` and the NSP head are never read and stay
unchanged. With ``depth = 0`` only the tables and the head train.

Training is [`mlm_book.nn.finetune`][mlm_book.nn.finetune]'s: AdamW with a linear warm-up over a
tenth of the steps and a cosine decay to zero, decay 0.01 on the matrices, the tables and
the head's $W$, on batches drawn with replacement from the rows that hold at least one
scored slot ([`mlm_book.nn.loop.fit`][mlm_book.nn.loop.fit] on the tagging objective). No
gradient here is new: they are the layers' backward passes, chained, and
``tests/test_token_finetune.py`` checks them against central differences in float64.

The log-probabilities of [`tag_log_probabilities`][mlm_book.nn.token_finetune.tag_log_probabilities]
are per-slot emission scores, ready for a Viterbi decoder or a CRF layer.

Examples
--------
A tag that is a function of the token alone is learned from the embedding layer:

>>> from mlm_book.nn import encoder as enc
>>> cfg = pairs.PairEncoderConfig(enc.EncoderConfig(vocab_size=6, length=6, d_model=8, n_blocks=1, n_heads=2, pad=True))
>>> rows = [pairs.encode_pair([a, b], [c], cfg) for a, b, c in [(2, 3, 4), (5, 4, 3), (3, 2, 5)] * 4]
>>> tokens = np.stack([r[0] for r in rows]); segments = np.stack([r[1] for r in rows])
>>> tags = np.where(tokens == 2, 0, np.where(tokens == 3, 1, np.where((tokens == 4) | (tokens == 5), 2, -1)))
>>> params = pairs.init_pair_params(cfg, np.random.default_rng(0))
>>> settings = TaggerConfig(depth=1, steps=60, lr=1e-2, batch_size=8)
>>> tagger = fine_tune_tagger(params, cfg, tokens, segments, tags, settings, n_tags=3)
>>> guess = tag_log_probabilities(tagger, tokens, segments).argmax(axis=2)
>>> float(np.mean(guess[tags >= 0] == tags[tags >= 0]))
1.0
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from mlm_book.nn import encoder as enc
from mlm_book.nn import layers, loop, pairs
from mlm_book.nn.finetune import FineTuneConfig
from mlm_book.nn.loop import TrainConfig
from mlm_book.validation import as_float_array, as_int_array, check_instance, check_positive_int

__all__ = ["TaggerConfig", "Tagger", "token_features", "fine_tune_tagger", "tag_log_probabilities", "MAX_TAGS"]

MAX_TAGS = 10_000
"""Most tags a head may have (a mistaken ``n_tags`` is refused rather than allocating a huge head)."""

#: The tables every tagger trains (the token, position, [CLS] and segment rows).
_TABLES = ("E", "P", "cls", "S")


@dataclass(frozen=True)
class TaggerConfig:
    """How a token tagger is fine-tuned.

    Parameters
    ----------
    depth : int
        The head reads the residual stream after this many blocks (0: the embedding layer's
        output); the blocks below it train, the others are unused. Checked against the
        encoder's ``n_blocks`` when training.
    steps, batch_size : int
        Adam steps, and rows per batch (each row contributes all its scored slots).
    lr : float
        Peak learning rate.
    weight_decay : float
        AdamW's decoupled decay of the matrices, the tables and the head's $W$ (0.01, BERT's
        fine-tuning value).
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
    >>> TaggerConfig(depth=2).schedule().warmup
    30
    >>> TaggerConfig(depth=-1)
    Traceback (most recent call last):
    ...
    ValueError: depth must be an integer >= 0, got -1
    """

    depth: int
    steps: int = 300
    batch_size: int = 32
    lr: float = 1e-3
    weight_decay: float = 0.01
    seed: int = 0

    def __post_init__(self):
        check_positive_int(self.depth, "depth", minimum=0)
        self._sequence_settings()           # the other fields mean what they mean for a sequence classifier

    def _sequence_settings(self) -> FineTuneConfig:
        return FineTuneConfig(steps=self.steps, batch_size=self.batch_size, lr=self.lr,
                              weight_decay=self.weight_decay, seed=self.seed)

    def schedule(self) -> TrainConfig:
        """The warm-up and decay: [`FineTuneConfig.schedule`][mlm_book.nn.finetune.FineTuneConfig.schedule]'s."""
        return self._sequence_settings().schedule()


def _check_depth(depth, config: pairs.PairEncoderConfig, name: str = "depth") -> int:
    depth = check_positive_int(depth, name, minimum=0)
    if depth > config.encoder.n_blocks:
        raise ValueError(f"{name} must be at most the encoder's n_blocks = {config.encoder.n_blocks} "
                         f"(0 reads the embedding layer), got {depth}")
    return depth


@dataclass(frozen=True, eq=False)
class Tagger:
    """A fine-tuned token tagger: the encoder's parameters after training, the depth read, the head, the losses.

    Parameters
    ----------
    config : PairEncoderConfig
    params : mapping
        The encoder's parameters (every array of ``config``).
    depth : int
        The blocks the head reads after, ``0 .. n_blocks``.
    W : array, shape (d, n_tags)
    b : array, shape (n_tags,)
    losses : array, shape (steps,)
        The training loss at each step.

    Raises
    ------
    TypeError
        If a field has the wrong type.
    ValueError
        If ``params`` does not match ``config``, ``depth`` is out of range, or ``W``, ``b``
        or ``losses`` has the wrong shape or holds NaN or infinity.

    Examples
    --------
    >>> from mlm_book.nn import encoder as enc
    >>> cfg = pairs.PairEncoderConfig(enc.EncoderConfig(vocab_size=6, length=6, d_model=8, n_blocks=1, n_heads=2, pad=True))
    >>> params = pairs.init_pair_params(cfg, np.random.default_rng(0))
    >>> Tagger(cfg, params, 1, np.zeros((8, 3)), np.zeros(3), np.ones(4)).W.shape
    (8, 3)
    """

    config: pairs.PairEncoderConfig
    params: dict
    depth: int
    W: np.ndarray
    b: np.ndarray
    losses: np.ndarray

    def __post_init__(self):
        check_instance(self.config, "config", pairs.PairEncoderConfig)
        object.__setattr__(self, "params", pairs.check_pair_params(self.params, self.config))
        object.__setattr__(self, "depth", _check_depth(self.depth, self.config))
        d = self.config.encoder.d_model
        W = as_float_array(self.W, "W", ndim=2)
        if W.shape[0] != d or not 2 <= W.shape[1] <= MAX_TAGS:
            raise ValueError(f"W must be a (d = {d}, n_tags) matrix with 2 to {MAX_TAGS} tags, got shape {W.shape}")
        b = as_float_array(self.b, "b", ndim=1)
        if b.shape != (W.shape[1],):
            raise ValueError(f"b must hold one bias per tag ({W.shape[1]}), got shape {b.shape}")
        losses = as_float_array(self.losses, "losses", ndim=1)
        for name, value in (("W", W), ("b", b), ("losses", losses)):
            object.__setattr__(self, name, value)

    @property
    def n_tags(self) -> int:
        """The number of tags $K$ (columns of ``W``)."""
        return self.W.shape[1]


# --------------------------------------------------------------------------- checks
def _check_inputs(config, tokens, segments):
    tokens, segments = pairs.check_pair_input(tokens, segments, config)
    if np.any(tokens == config.mask_id):
        raise ValueError("tokens must not hold [MASK]: a tagger reads clean text")
    return tokens, segments


def _check_tags(tags, tokens: np.ndarray, config, n_tags: int) -> np.ndarray:
    if tags is None:
        raise TypeError("tags must be an array of tag ids (-1 for an unscored slot), got None")
    tags = as_int_array(tags, "tags", ndim=2)
    if tags.shape != tokens.shape:
        raise ValueError(f"tags must hold one tag per slot of tokens {tokens.shape}, got shape {tags.shape}")
    low, high = int(tags.min()), int(tags.max())
    if low < -1 or high >= n_tags:
        raise ValueError(f"tags must be tag ids in [0, n_tags = {n_tags}) or -1 (not scored), got values from "
                         f"{low} to {high}")
    if high < 0:
        raise ValueError("tags must score at least one slot (a tag >= 0), got -1 everywhere")
    special = (tokens == config.pad_id) | (tokens == config.cls_id)
    if np.any(special & (tags >= 0)):
        raise ValueError("tags must be -1 at every [PAD] and [CLS] slot: those slots are not text")
    return tags


def _check_n_tags(n_tags) -> int:
    n_tags = check_positive_int(n_tags, "n_tags", minimum=2)
    if n_tags > MAX_TAGS:
        raise ValueError(f"n_tags must be at most {MAX_TAGS}, got {n_tags}")
    return n_tags


# --------------------------------------------------------------------------- passes
def _stream(params, config, x, shape, depth: int, key_bias, rows=None):
    """Blocks ``0 .. depth - 1`` from the embedding output ``x``; the last computes ``rows`` only (all when ``None``).

    With ``depth == 0`` the stream is ``x`` itself (``x[rows]`` with ``rows``) and no cache is kept.
    """
    cfg = config.encoder
    caches = []
    for block in range(depth):
        block_rows = rows if block == depth - 1 else None
        x, cache = layers.block_forward(x, params, f"blocks.{block}.", cfg.n_heads, shape, cfg.ln_eps,
                                        block_rows, key_bias)
        caches.append(cache)
    if depth == 0 and rows is not None:
        x = x[rows]
    return x, caches


def _trained_names(params, depth: int) -> list[str]:
    """The encoder's parameters a tagger reading after ``depth`` blocks trains, in ``params``' order."""
    prefixes = tuple(f"blocks.{block}." for block in range(depth))
    return [name for name in params if name in _TABLES or (prefixes and name.startswith(prefixes))]


def _loss_and_grads(params, head, config, tokens, segments, tags, depth: int):
    """Mean cross-entropy of the head over the scored slots of a batch (``tags >= 0``), and its gradients.

    Unchecked: the training step of [`fine_tune_tagger`][mlm_book.nn.token_finetune.fine_tune_tagger].
    The gradients are those of ``head.W``, ``head.b``, the tables ``E``, ``P``, ``cls``, ``S``
    and every array of the blocks below ``depth``; nothing else reaches the loss.
    """
    B, n = tokens.shape
    flat_tags = tags.reshape(-1)
    scored = np.flatnonzero(flat_tags >= 0)
    x0, emb_cache = pairs.pair_embedding_forward(params, config, tokens, segments)
    h, caches = _stream(params, config, x0, (B, n), depth, pairs.key_bias(config, tokens, x0.dtype), scored)
    z = h @ head["W"] + head["b"]
    value, dz = layers.cross_entropy_forward(z, flat_tags[scored])
    grads = {"head.W": h.T @ dz, "head.b": dz.sum(axis=0)}
    dh = dz @ head["W"].T
    if depth:
        dx0, block_grads = pairs.blocks_backward(dh, caches)
        grads.update(block_grads)
    else:
        dx0 = np.zeros_like(x0)
        dx0[scored] = dh
    grads.update(pairs.pair_embedding_backward(dx0, emb_cache, config))
    return value, grads


# --------------------------------------------------------------------------- public
def token_features(params, config: pairs.PairEncoderConfig, tokens, segments, depth: int,
                   batch: int = 512) -> np.ndarray:
    r"""The residual stream after ``depth`` blocks at every slot: what a tagger's head reads.

    Parameters
    ----------
    params : mapping
    config : PairEncoderConfig
    tokens, segments : array of int, shape (B, n)
        Clean inputs (no ``[MASK]``); ``[CLS]`` is not required.
    depth : int
        Blocks run, ``0 .. n_blocks`` (0: $E[x] + P + S$). No final LayerNorm is applied.
    batch : int
        Rows per forward pass.

    Returns
    -------
    ndarray, shape (B, n, d), float64
        Index ``depth`` of [`pair_hidden_states`][mlm_book.nn.pairs.pair_hidden_states], computed
        without the blocks above ``depth``.

    Raises
    ------
    TypeError
        If an argument has the wrong type.
    ValueError
        If ``params`` does not match ``config``, the inputs are malformed (an id or segment
        out of range, shapes that disagree, a row of [PAD] only, a [MASK]), ``depth`` is
        above ``n_blocks`` or ``batch`` is not positive.

    Examples
    --------
    >>> from mlm_book.nn import encoder as enc
    >>> cfg = pairs.PairEncoderConfig(enc.EncoderConfig(vocab_size=6, length=6, d_model=8, n_blocks=2, n_heads=2, pad=True))
    >>> p = pairs.init_pair_params(cfg, np.random.default_rng(0))
    >>> t, s = pairs.encode_pair([2, 3], [4], cfg)
    >>> h = token_features(p, cfg, t[None], s[None], 1)
    >>> h.shape, h.dtype
    ((1, 6, 8), dtype('float64'))
    """
    params = pairs.check_pair_params(params, config)
    tokens, segments = _check_inputs(config, tokens, segments)
    depth = _check_depth(depth, config)
    batch = check_positive_int(batch, "batch")
    B, n = tokens.shape
    out = np.empty((B, n, config.encoder.d_model))
    for start in range(0, B, batch):
        t, s = tokens[start:start + batch], segments[start:start + batch]
        x0, _ = pairs.pair_embedding_forward(params, config, t, s)
        x, _ = _stream(params, config, x0, t.shape, depth, pairs.key_bias(config, t, x0.dtype))
        out[start:start + t.shape[0]] = x.reshape(t.shape[0], n, -1)
    return out


def fine_tune_tagger(params, config: pairs.PairEncoderConfig, tokens, segments, tags, settings: TaggerConfig,
                     n_tags: int) -> Tagger:
    """Train a per-slot tag head, the embedding tables and the blocks below ``settings.depth``.

    Parameters
    ----------
    params : mapping
        The starting encoder (pre-trained, or fresh from
        [`init_pair_params`][mlm_book.nn.pairs.init_pair_params]); it is copied, not changed.
    config : PairEncoderConfig
    tokens, segments : array of int, shape (B, n)
        Clean inputs (no ``[MASK]``).
    tags : array of int, shape (B, n)
        Tag ids ``0 .. n_tags - 1`` at the scored slots, ``-1`` elsewhere (always at
        ``[CLS]`` and ``[PAD]``); at least one slot must be scored. Rows without a scored
        slot are never drawn.
    settings : TaggerConfig
    n_tags : int
        Number of tags $K$, 2 to ``MAX_TAGS``.

    Returns
    -------
    Tagger

    Raises
    ------
    TypeError
        If an argument has the wrong type.
    ValueError
        If the inputs are malformed (ids, segments, shapes, a [MASK]), ``tags`` does not
        have the shape of ``tokens``, holds a value below -1 or not below ``n_tags``, scores
        a [PAD] or [CLS] slot or scores nothing, ``n_tags`` is out of range, or
        ``settings.depth`` is above the encoder's ``n_blocks``.
    FloatingPointError
        If training diverges: the loss, a gradient, or a layer's output on the way, becomes NaN or infinite.

    Examples
    --------
    >>> from mlm_book.nn import encoder as enc
    >>> cfg = pairs.PairEncoderConfig(enc.EncoderConfig(vocab_size=6, length=6, d_model=8, n_blocks=1, n_heads=2, pad=True))
    >>> t, s = pairs.encode_pair([2, 3], [4], cfg)
    >>> tags = np.where(t == 2, 1, np.where((t == 3) | (t == 4), 0, -1))
    >>> p = pairs.init_pair_params(cfg, np.random.default_rng(0))
    >>> tagger = fine_tune_tagger(p, cfg, t[None], s[None], tags[None], TaggerConfig(depth=0, steps=5), 2)
    >>> tagger.depth, tagger.W.shape, tagger.losses.shape
    (0, (8, 2), (5,))
    >>> bool(np.array_equal(tagger.params["blocks.0.attn.W_qkv"], p["blocks.0.attn.W_qkv"]))
    True
    """
    params = pairs.check_pair_params(params, config)
    tokens, segments = _check_inputs(config, tokens, segments)
    check_instance(settings, "settings", TaggerConfig)
    n_tags = _check_n_tags(n_tags)
    tags = _check_tags(tags, tokens, config, n_tags)
    depth = _check_depth(settings.depth, config, "settings.depth")
    rng = np.random.default_rng(settings.seed)
    dtype = params["E"].dtype
    cfg = config.encoder
    params = {k: v.copy() for k, v in params.items()}
    head = {"W": rng.normal(0.0, cfg.init_std, size=(cfg.d_model, n_tags)).astype(dtype),
            "b": np.zeros(n_tags, dtype)}
    trained = _trained_names(params, depth)
    decayed = [n for n in trained if n in enc.decayed_names(cfg) or n in ("cls", "S")] + ["head.W"]
    eligible = np.flatnonzero((tags >= 0).any(axis=1))
    size = min(settings.batch_size, eligible.size)

    def draw(rng, step):
        return eligible[rng.integers(0, eligible.size, size=size)]

    def loss_and_grads(state, rows):
        return _loss_and_grads(state, {"W": state["head.W"], "b": state["head.b"]}, config, tokens[rows],
                               segments[rows], tags[rows], depth)

    # the trained arrays, then the head: the order of the optimiser's state
    objective = loop.Objective({**params, "head.W": head["W"], "head.b": head["b"]}, draw, loss_and_grads,
                               decayed=decayed, frozen=[n for n in params if n not in trained], label="fine-tuning")
    fitted = loop.fit(objective, settings.schedule(), rng, progress=False)
    return Tagger(config, params, depth, head["W"], head["b"], fitted.loss)


def tag_log_probabilities(tagger: Tagger, tokens, segments, batch: int = 512) -> np.ndarray:
    r"""$\log p(y_t = k \mid x)$ of a tagger at every slot: the emission scores for a Viterbi decoder or a CRF.

    Parameters
    ----------
    tagger : Tagger
    tokens, segments : array of int, shape (B, n)
        Clean inputs (as for [`fine_tune_tagger`][mlm_book.nn.token_finetune.fine_tune_tagger]).
    batch : int
        Rows per forward pass.

    Returns
    -------
    ndarray, shape (B, n, n_tags), float64
        Log-softmax of the head at every slot, the unscored ones ([CLS], [SEP], [PAD])
        included; callers read the slots they tag.

    Raises
    ------
    TypeError
        If ``tagger`` is not a `Tagger` or the inputs have the wrong type.
    ValueError
        If the inputs are malformed (as for [`token_features`][mlm_book.nn.token_finetune.token_features]).

    Examples
    --------
    >>> from mlm_book.nn import encoder as enc
    >>> cfg = pairs.PairEncoderConfig(enc.EncoderConfig(vocab_size=6, length=6, d_model=8, n_blocks=1, n_heads=2, pad=True))
    >>> tagger = Tagger(cfg, pairs.init_pair_params(cfg, np.random.default_rng(0)), 1, np.zeros((8, 3)), np.zeros(3), [])
    >>> t, s = pairs.encode_pair([2, 3], [4], cfg)
    >>> logp = tag_log_probabilities(tagger, t[None], s[None])
    >>> logp.shape, bool(np.allclose(logp, -np.log(3)))
    ((1, 6, 3), True)
    """
    check_instance(tagger, "tagger", Tagger)
    h = token_features(tagger.params, tagger.config, tokens, segments, tagger.depth, batch)
    z = h @ tagger.W + tagger.b
    z -= z.max(axis=2, keepdims=True)
    z -= np.log(np.exp(z).sum(axis=2, keepdims=True))
    return z
