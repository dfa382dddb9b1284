r"""Replaced-token detection (ELECTRA): a discriminator that tells, at every position, whether a token was replaced.

Clark et al. (2020) train two networks together. A small masked LM, the
*generator*, sees the sentence with a share $\rho$ of its positions selected and shown as ``[MASK]``, is trained
on the usual cross-entropy at those positions, and fills each selected position with a token *sampled* from its
own prediction. The *discriminator* reads the sentence so filled in and predicts, at every position, whether its
token differs from the original (a sampled token that happens to equal the original counts as original). Its loss
is the mean binary cross-entropy over all positions, so every position contributes; the generator's is over the
selected ones only. The total is $L_{\text{gen}} + \lambda L_{\text{disc}}$ ($\lambda = 50$ in the paper); no
gradient flows through the sampling. Here the two networks share no parameter (the paper ties their token
embeddings), so $\lambda$ only scales the discriminator's gradients, which Adam's per-parameter normalisation
undoes (up to its $\epsilon$): the total is reported with it, the updates do not depend on it.

The discriminator is a plain [`EncoderConfig`][mlm_book.nn.encoder.EncoderConfig] encoder with a one-logit head
on its last layer, as chapter 9's taggers put theirs
([`mlm_book.nn.state_tagger`][mlm_book.nn.state_tagger]):
$$ P(\text{replaced at } i \mid \hat x) = \sigma(h_i \cdot w + c), \qquad h_i = \operatorname{LN}_f(x_{L,i}) . $$
Its masked-LM output bias ``b_out`` (and an untied ``E_out``) are never read.

The *oracle generator* replaces the generator network by the exact optimum of its task on the book's HMM:
Theorem 2's posterior $P(x_i \mid \tilde x, i \in M)$ under the all-``[MASK]`` channel (at a ``[MASK]`` it is
the context prediction, [`mlm_book.channel.context_prediction`][mlm_book.channel.context_prediction]), sampled at each selected position. It isolates the discriminator from the quality
of its generator, and only a language whose posterior is computable can have one.

[`step_flops`][mlm_book.nn.replaced_tokens.step_flops] counts the floating-point operations of one training
step of an encoder, the unit of the equal-compute comparison with a masked LM.

The gradients are the layers' backward passes, chained; ``tests/test_replaced_tokens.py`` checks them against
central differences in float64.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from mlm_book.channel import Channel, context_prediction
from mlm_book.hmm import check_hmm
from mlm_book.nn import encoder as enc
from mlm_book.nn import layers, loop
from mlm_book.nn.loop import TrainConfig
from mlm_book.nn.train import corrupt_batch
from mlm_book.validation import (
    as_float_array,
    check_generator,
    check_instance,
    check_positive_int,
    check_probability,
    check_real,
    check_tokens,
)

__all__ = ["step_flops", "generator_channel", "discriminator_loss_and_grads", "oracle_replacements",
           "RTDResult", "train_rtd", "LAMBDA"]

LAMBDA = 50.0
"""Weight of the discriminator's loss in the reported total (Clark et al.'s $\\lambda$)."""


# ----------------------------------------------------------------------------- compute
def step_flops(config: enc.EncoderConfig, batch: int, length: int, predicted: float, outputs: int) -> float:
    r"""Floating-point operations of one training step (forward and backward) of an encoder on ``batch`` sequences.

    The rule is the usual dense-transformer count: the matrix products only (a multiply-add counts 2), the
    backward pass twice the forward. Per sequence of $n$ tokens, width $d$ and MLP width $r d$, a block's
    forward costs $2n(4d^2 + 2rd^2)$ in its projections and MLP and $4n^2 d$ in its attention scores and
    weighted sums; a head costs $2 d \cdot$ ``outputs`` at each of ``predicted`` positions per sequence (a
    masked LM: $V$ outputs at the selected positions; a discriminator: 1 output at every position).
    Embedding look-ups, LayerNorms, softmaxes and the loss are element-wise and left out, and every block is
    counted at every position (the book's masked LM computes only the selected rows in its last block: the
    count is the network's, not that shortcut's).

    Parameters
    ----------
    config : EncoderConfig
    batch : int
        Sequences per step.
    length : int
        Tokens per sequence, at most ``config.length``.
    predicted : float
        Positions per sequence where the head is evaluated (an expected count is allowed), in [0, length].
    outputs : int
        Outputs of the head at each such position.

    Returns
    -------
    float
        FLOPs per step.

    Raises
    ------
    TypeError, ValueError
        If ``config`` is not an ``EncoderConfig``, or a count is not a positive integer, ``length`` exceeds the
        position table, or ``predicted`` is outside [0, length].

    Examples
    --------
    The book's masked LM (d = 32, 2 blocks) on one sentence of 24 tokens, 15 % of them predicted over 25 tokens:

    >>> cfg = enc.EncoderConfig(vocab_size=25, length=24, d_model=32, n_blocks=2, n_heads=4)
    >>> step_flops(cfg, 1, 24, 0.15 * 24, 25)
    3998592.0
    >>> step_flops(cfg, 1, 24, 25, 1)
    Traceback (most recent call last):
    ...
    ValueError: predicted must be in [0, length = 24], got 25
    """
    check_instance(config, "config", enc.EncoderConfig)
    batch = check_positive_int(batch, "batch")
    length = check_positive_int(length, "length")
    if length > config.length:
        raise ValueError(f"length must be at most the encoder's position table ({config.length}), got {length}")
    check_real(predicted, "predicted")
    if not 0 <= predicted <= length:
        raise ValueError(f"predicted must be in [0, length = {length}], got {predicted}")
    outputs = check_positive_int(outputs, "outputs")
    d, n = config.d_model, length
    block = 2 * n * (4 * d * d + 2 * config.mlp_ratio * d * d) + 4 * n * n * d
    forward = config.n_blocks * block + 2 * d * outputs * float(predicted)
    return float(3 * batch * forward)


# ----------------------------------------------------------------------------- the generator's channel
def generator_channel(vocab_size: int, rho: float = 0.15) -> Channel:
    """ELECTRA's channel for the generator: a share ``rho`` of positions selected (independently), all shown as [MASK].

    Examples
    --------
    >>> c = generator_channel(25)
    >>> c.rho, c.mask, c.random
    (0.15, 1.0, 0.0)
    """
    vocab_size = check_positive_int(vocab_size, "vocab_size")
    check_probability(rho, "rho")
    if rho == 0:
        raise ValueError("rho must be > 0: a generator that selects nothing replaces nothing")
    return Channel(vocab_size, rho=rho, mask=1.0, random=0.0)


# ----------------------------------------------------------------------------- the discriminator
def _check_discriminator(config, name: str = "config") -> enc.EncoderConfig:
    check_instance(config, name, enc.EncoderConfig)
    if config.head != "normalised":
        raise ValueError(f"{name}.head must be 'normalised' (the discriminator's head reads LN_f of the last "
                         f"layer), got {config.head!r}")
    if config.causal or config.pad:
        raise ValueError(f"{name} must be a plain bidirectional encoder (causal=False, pad=False)")
    return config


def _disc_unchecked(params, config: enc.EncoderConfig, w, c, shown: np.ndarray, replaced: np.ndarray):
    """Mean binary cross-entropy over every position and its gradients (encoder parameters, ``w``, ``c``)."""
    x0, emb_cache = layers.embedding_forward(shown, params["E"], params["P"])
    x, caches = x0, []
    for block in range(config.n_blocks):
        x, cache = layers.block_forward(x, params, f"blocks.{block}.", config.n_heads, shown.shape, config.ln_eps)
        caches.append(cache)
    h, ln_cache = layers.layer_norm_forward(x, params["ln_f.g"], params["ln_f.b"], config.ln_eps)
    z = h @ w + c                                              # (B*n,)
    y = replaced.reshape(-1).astype(z.dtype)
    # mean of log(1 + e^z) - y z, computed stably
    value = float(np.mean(np.logaddexp(0.0, z) - y * z))
    dz = (1.0 / (1.0 + np.exp(-z)) - y) / z.size
    grads = {"w": h.T @ dz, "c": np.asarray(dz.sum(), dtype=z.dtype).reshape(1)}
    dx = np.outer(dz, w)
    dx, g = layers.layer_norm_backward(dx, ln_cache)
    grads["ln_f.g"], grads["ln_f.b"] = g["g"], g["b"]
    for cache in reversed(caches):
        dx, g = layers.block_backward(dx, cache)
        grads.update(g)
    _, emb = layers.embedding_backward(dx, emb_cache)
    grads["E"], grads["P"] = emb["E"], emb["P"]
    return value, grads


def discriminator_loss_and_grads(params, config: enc.EncoderConfig, w, c, shown, replaced):
    """The discriminator's loss on a batch and its gradients: what its half of one training step computes.

    Parameters
    ----------
    params : mapping
        The encoder's parameters (every array of ``config``).
    config : EncoderConfig
        A plain bidirectional encoder with the normalised head.
    w : array, shape (d,)
        The head's weights.
    c : array, shape (1,)
        The head's bias.
    shown : array of int, shape (B, n)
        The filled-in sentences: real token ids below ``config.vocab_size``.
    replaced : array of bool, shape (B, n)
        Whether each token differs from the original.

    Returns
    -------
    loss : float
        Mean binary cross-entropy over every position, in nats.
    grads : dict of str to ndarray
        Of ``E``, ``P``, every block, ``ln_f.g``, ``ln_f.b``, ``w`` and ``c`` (none of ``b_out``).

    Raises
    ------
    TypeError, ValueError
        If ``config`` is not a plain ``EncoderConfig`` with the normalised head, ``params`` does not match it,
        ``w`` or ``c`` has the wrong shape or is not finite, ``shown`` holds [MASK] or ids out of range, or
        ``replaced`` is not a boolean array of ``shown``'s shape.

    Examples
    --------
    >>> cfg = enc.EncoderConfig(vocab_size=5, length=4, d_model=8, n_blocks=1, n_heads=2)
    >>> p = enc.init_params(cfg, np.random.default_rng(0), dtype=np.float64)
    >>> loss, grads = discriminator_loss_and_grads(p, cfg, np.zeros(8), np.zeros(1), [[0, 1, 2, 3]],
    ...                                            [[False, True, False, False]])
    >>> round(loss, 6) == round(math.log(2), 6), grads["w"].shape
    (True, (8,))
    """
    config = _check_discriminator(config)
    params = enc.check_params(params, config)
    shown = enc.check_shown(shown, config, "shown")
    if np.any(shown >= config.vocab_size):
        raise ValueError(f"shown must hold real tokens (ids below vocab_size = {config.vocab_size}): the "
                         "discriminator reads filled-in sentences, without [MASK]")
    dtype = params["E"].dtype
    w = as_float_array(w, "w", ndim=1)
    if w.shape != (config.d_model,):
        raise ValueError(f"w must be a finite vector of the encoder's width ({config.d_model},), got shape {w.shape}")
    c = as_float_array(c, "c", ndim=1)
    if c.shape != (1,):
        raise ValueError(f"c must be a finite array of shape (1,), got shape {c.shape}")
    w, c = w.astype(dtype), c.astype(dtype)
    try:
        replaced = np.asarray(replaced)
    except (TypeError, ValueError) as error:
        raise TypeError(f"replaced must be a boolean array of shown's shape {shown.shape}: {error}") from None
    if replaced.dtype != bool or replaced.shape != shown.shape:
        raise ValueError(f"replaced must be a boolean array of shown's shape {shown.shape}, got "
                         f"{replaced.dtype} of shape {replaced.shape}")
    return _disc_unchecked(params, config, w, c, shown, replaced)


# ----------------------------------------------------------------------------- the oracle generator
def oracle_replacements(hmm, channel: Channel, clean, shown, rng: np.random.Generator) -> np.ndarray:
    r"""Fill the selected positions of ``shown`` with tokens drawn from the exact posterior (Theorem 2).

    At each position where ``shown`` holds [MASK], a token is drawn from
    $P(x_i \mid \tilde x, i \in M)$ on the HMM. At a [MASK] Theorem 2's optimum is the context prediction
    $p = P(x_i \mid \tilde x_{-i})$ itself ([`context_prediction`][mlm_book.channel.context_prediction], exact
    under independent selection); the other positions keep ``clean``'s token.

    Parameters
    ----------
    hmm : HiddenMarkovLanguage
    channel : Channel
        The generator's channel (all selected positions shown as [MASK], see
        [`generator_channel`][mlm_book.nn.replaced_tokens.generator_channel]); its vocabulary is the HMM's.
    clean : array of int, shape (B, n)
    shown : array of int, shape (B, n)
        ``clean`` through ``channel``.
    rng : numpy.random.Generator

    Returns
    -------
    ndarray of int, shape (B, n)
        The filled-in sentences.

    Raises
    ------
    TypeError, ValueError
        If ``channel`` shows a selected token other than as [MASK] (``mask`` below 1), its vocabulary is not the
        HMM's, ``clean`` and ``shown`` differ in shape or disagree at a position not selected.

    Examples
    --------
    >>> from mlm_book.hmm import default_hmm
    >>> hmm = default_hmm(); V = hmm.vocab_size
    >>> clean = np.array([[0, 1, 2, 3]]); shown = np.array([[0, V, 2, 3]])
    >>> filled = oracle_replacements(hmm, generator_channel(V), clean, shown, np.random.default_rng(0))
    >>> filled[0, [0, 2, 3]].tolist(), bool(0 <= filled[0, 1] < V)
    ([0, 2, 3], True)
    """
    hmm = check_hmm(hmm)
    check_instance(channel, "channel", Channel)
    if channel.mask != 1.0:
        raise ValueError(f"channel must show every selected position as [MASK] (mask = 1), got mask = {channel.mask}")
    if channel.vocab_size != hmm.vocab_size:
        raise ValueError(f"channel.vocab_size ({channel.vocab_size}) must equal the HMM's vocabulary "
                         f"({hmm.vocab_size})")
    rng = check_generator(rng)
    clean = check_tokens(clean, "clean", channel.vocab_size, ndim=2)
    shown = check_tokens(shown, "shown", channel.vocab_size + 1, ndim=2)
    if clean.shape != shown.shape:
        raise ValueError(f"shown must have clean's shape {clean.shape}, got {shown.shape}")
    masked = shown == channel.vocab_size
    if np.any(clean[~masked] != shown[~masked]):
        raise ValueError("shown must equal clean wherever it does not show [MASK]")
    q = context_prediction(hmm, channel, shown)[masked]   # Theorem 2 at a [MASK]: the optimum is p itself
    return _fill(clean, masked, q, rng.random(int(masked.sum())))


def _fill(clean: np.ndarray, masked: np.ndarray, q: np.ndarray, u: np.ndarray) -> np.ndarray:
    """``clean`` with each masked position replaced by the inverse-CDF draw of its row of ``q`` at uniform ``u``."""
    cdf = np.cumsum(q, axis=1)
    draws = (cdf < (u * cdf[:, -1])[:, None]).sum(axis=1)
    filled = clean.copy()
    filled[masked] = np.minimum(draws, q.shape[1] - 1)
    return filled


# ----------------------------------------------------------------------------- training
@dataclass(frozen=True, eq=False)
class RTDResult:
    """A trained discriminator (and its generator, if it had a network).

    Attributes
    ----------
    discriminator : EncoderConfig
    params : dict
        The discriminator's encoder parameters.
    w, c : ndarray
        Its head, shapes (d,) and (1,).
    generator : EncoderConfig or None
        None for the oracle generator.
    generator_params : dict or None
    losses : dict of str to ndarray
        Per step: ``"total"`` ($L_{\\text{gen}} + \\lambda L_{\\text{disc}}$), ``"generator"`` (0 for the oracle),
        ``"discriminator"`` and ``"replaced"`` (the share of positions whose token was replaced).
    seconds : float

    Examples
    --------
    >>> cfg = enc.EncoderConfig(vocab_size=5, length=4, d_model=8, n_blocks=1, n_heads=2)
    >>> r = RTDResult(cfg, enc.init_params(cfg, np.random.default_rng(0)), np.zeros(8), np.zeros(1), None, None,
    ...               {"total": np.ones(2)}, 0.0)
    >>> r.generator is None
    True
    """

    discriminator: enc.EncoderConfig
    params: dict = field(repr=False)
    w: np.ndarray = field(repr=False)
    c: np.ndarray = field(repr=False)
    generator: enc.EncoderConfig | None
    generator_params: dict | None = field(repr=False)
    losses: dict = field(repr=False)
    seconds: float = 0.0

    def __post_init__(self):
        _check_discriminator(self.discriminator, "discriminator")
        object.__setattr__(self, "params", enc.check_params(self.params, self.discriminator))
        w = as_float_array(self.w, "w", ndim=1)
        if w.shape != (self.discriminator.d_model,):
            raise ValueError(f"w must have the discriminator's width ({self.discriminator.d_model},), got {w.shape}")
        c = as_float_array(self.c, "c", ndim=1)
        if c.shape != (1,):
            raise ValueError(f"c must have shape (1,), got {c.shape}")
        object.__setattr__(self, "w", w)
        object.__setattr__(self, "c", c)
        if self.generator is None:
            if self.generator_params is not None:
                raise ValueError("generator_params must be None when generator is None (the oracle)")
        else:
            check_instance(self.generator, "generator", enc.EncoderConfig)
            object.__setattr__(self, "generator_params",
                               enc.check_params(self.generator_params, self.generator, name="generator_params"))
        check_instance(self.losses, "losses", dict)
        if not self.losses:
            raise ValueError("losses must hold at least one curve")
        for key, values in self.losses.items():
            check_instance(key, "losses key", str)
            as_float_array(values, f"losses[{key!r}]", ndim=1)
        check_real(self.seconds, "seconds", low=0.0)


def _check_generator_config(generator, discriminator: enc.EncoderConfig):
    if generator is None:
        return None
    check_instance(generator, "generator", enc.EncoderConfig)
    if generator.vocab_size != discriminator.vocab_size:
        raise ValueError(f"generator must have the discriminator's vocabulary ({discriminator.vocab_size} "
                         f"tokens), got a generator of vocab_size {generator.vocab_size}")
    if generator.causal or generator.pad:
        raise ValueError("generator must be a plain bidirectional encoder (causal=False, pad=False)")
    if generator.length < discriminator.length:
        raise ValueError(f"generator must read the discriminator's sentences: its length {generator.length} is "
                         f"below {discriminator.length}")
    return generator


def train_rtd(discriminator: enc.EncoderConfig, generator: enc.EncoderConfig | None, train_config: TrainConfig,
              source, rng: np.random.Generator, *, rho: float = 0.15, hmm=None,
              progress: bool | None = None) -> RTDResult:
    """Train a discriminator by replaced-token detection, with a generator network trained jointly or the oracle.

    At each step the loop ([`mlm_book.nn.loop.fit`][mlm_book.nn.loop.fit]) draws ``batch_size`` clean
    sentences from ``source``, selects positions through
    [`generator_channel`][mlm_book.nn.replaced_tokens.generator_channel] (redrawn until one is selected), fills
    them by sampling the generator (or the oracle) and takes one AdamW step on the generator's masked-LM loss and
    the discriminator's loss together. Both networks follow ``train_config`` (schedule, decay of the matrices and
    tables, and the discriminator's head weights).

    Parameters
    ----------
    discriminator : EncoderConfig
        A plain bidirectional encoder with the normalised head.
    generator : EncoderConfig or None
        The generator network, of the discriminator's vocabulary; None for the oracle (then ``hmm`` is required).
    train_config : TrainConfig
    source : callable
        ``source(batch_size, rng) -> (B, n)`` clean token ids.
    rng : numpy.random.Generator
        Initialises the discriminator, then the generator, then draws every batch and every sample.
    rho : float
        The share of positions selected.
    hmm : HiddenMarkovLanguage, optional
        The language ``source`` samples, for the oracle.
    progress : bool, optional
        As for [`mlm_book.nn.loop.fit`][mlm_book.nn.loop.fit].

    Returns
    -------
    RTDResult

    Raises
    ------
    TypeError, ValueError
        If a configuration is of the wrong type, the generator's vocabulary is not the discriminator's, the oracle
        is asked for without ``hmm`` or with an HMM of another vocabulary, or ``source`` is not callable.

    Examples
    --------
    >>> from mlm_book.hmm import default_hmm, sample
    >>> hmm = default_hmm()
    >>> disc = enc.EncoderConfig(vocab_size=25, length=6, d_model=8, n_blocks=1, n_heads=2)
    >>> gen = enc.EncoderConfig(vocab_size=25, length=6, d_model=8, n_blocks=1, n_heads=2)
    >>> source = lambda b, rng, draw=sample, hmm=hmm: draw(hmm, b, 6, rng)[1]
    >>> r = train_rtd(disc, gen, TrainConfig(steps=3, batch_size=4, warmup=1), source, np.random.default_rng(0),
    ...               progress=False)
    >>> sorted(r.losses), r.losses["discriminator"].shape
    (['discriminator', 'generator', 'replaced', 'total'], (3,))
    >>> train_rtd(disc, enc.EncoderConfig(vocab_size=24, length=6), TrainConfig(steps=3), source,
    ...           np.random.default_rng(0))
    Traceback (most recent call last):
    ...
    ValueError: generator must have the discriminator's vocabulary (25 tokens), got a generator of vocab_size 24
    """
    discriminator = _check_discriminator(discriminator, "discriminator")
    generator = _check_generator_config(generator, discriminator)
    check_instance(train_config, "train_config", TrainConfig)
    if not callable(source):
        raise TypeError(f"source must be callable (batch_size, rng) -> tokens, got {type(source).__name__}")
    rng = check_generator(rng)
    channel = generator_channel(discriminator.vocab_size, rho)
    if generator is None:
        if hmm is None:
            raise ValueError("hmm must be given for the oracle generator (generator=None)")
        hmm = check_hmm(hmm)
        if hmm.vocab_size != discriminator.vocab_size:
            raise ValueError(f"hmm must have the discriminator's vocabulary ({discriminator.vocab_size} tokens), "
                             f"got {hmm.vocab_size}")
    dtype = np.dtype(train_config.dtype)
    disc = enc.init_params(discriminator, rng, dtype=dtype)
    params = {f"disc.{k}": v for k, v in disc.items()}
    params["disc.w"] = (rng.standard_normal(discriminator.d_model) * discriminator.init_std).astype(dtype)
    params["disc.c"] = np.zeros(1, dtype=dtype)
    frozen = [f"disc.{k}" for k in ("b_out", "E_out") if k in disc]
    decayed = [f"disc.{k}" for k in enc.decayed_names(discriminator)] + ["disc.w"]
    if generator is not None:
        gen = enc.init_params(generator, rng, dtype=dtype)
        params.update({f"gen.{k}": v for k, v in gen.items()})
        decayed += [f"gen.{k}" for k in enc.decayed_names(generator)]

    def draw(rng, step):
        clean = enc.check_shown(source(train_config.batch_size, rng), discriminator, "source(...) tokens")
        if np.any(clean >= discriminator.vocab_size):
            raise ValueError("source(...) tokens must be real tokens (ids below vocab_size)")
        shown, selected = corrupt_batch(channel, clean, discriminator, rng)
        if generator is None:
            return clean, shown, selected, oracle_replacements(hmm, channel, clean, shown, rng)
        return clean, shown, selected, rng.random(int(selected.sum()))

    def loss_and_grads(p, batch):
        clean, shown, selected, extra = batch
        grads = {}
        gen_loss = 0.0
        if generator is None:
            filled = extra
        else:
            gp = {k[4:]: v for k, v in p.items() if k.startswith("gen.")}
            rows, targets = np.flatnonzero(selected.reshape(-1)), clean.reshape(-1)[selected.reshape(-1)]
            x0, emb_cache = layers.embedding_forward(shown, gp["E"], gp["P"])
            out, cache = enc.blocks_and_head(gp, generator, x0, shown.shape, rows,
                                             key_bias=enc.key_bias(generator, shown, x0.dtype))
            gen_loss, dlogits = layers.cross_entropy_forward(out, targets)
            dx0, g, dE_out = enc.blocks_and_head_backward(dlogits, cache, generator)
            _, emb = layers.embedding_backward(dx0, emb_cache)
            g = enc.add_table_gradient(g, emb, dE_out, generator)
            grads.update({f"gen.{k}": v for k, v in g.items()})
            logits = out.astype(np.float64)
            q = np.exp(logits - logits.max(axis=1, keepdims=True))
            filled = _fill(clean, selected, q / q.sum(axis=1, keepdims=True), extra)
        replaced = filled != clean
        dp = {k[5:]: v for k, v in p.items() if k.startswith("disc.")}
        disc_loss, g = _disc_unchecked(dp, discriminator, dp["w"], dp["c"], filled, replaced)
        grads.update({f"disc.{k}": LAMBDA * v for k, v in g.items()})
        total = gen_loss + LAMBDA * disc_loss
        return (total, gen_loss, disc_loss, float(replaced.mean())), grads

    objective = loop.Objective(params, draw, loss_and_grads, decayed=decayed, frozen=frozen,
                               loss_names=("total", "generator", "discriminator", "replaced"),
                               label="replaced-token detection")
    fitted = loop.fit(objective, train_config, rng, progress=progress)
    disc_params = {k[5:]: v for k, v in params.items() if k.startswith("disc.") and k not in ("disc.w", "disc.c")}
    gen_params = None if generator is None else {k[4:]: v for k, v in params.items() if k.startswith("gen.")}
    return RTDResult(discriminator, disc_params, params["disc.w"], params["disc.c"], generator, gen_params,
                     fitted.losses, fitted.seconds)
