r"""Low-rank adaptation (LoRA, Hu et al. 2021) of a plain encoder fine-tuned as a sequence classifier.

Full fine-tuning ([`mlm_book.nn.encoder_finetune`][mlm_book.nn.encoder_finetune]) trains every array the
classifier reads. LoRA freezes the encoder and trains, beside the classification head, a low-rank update of
chosen weight matrices: a matrix $W \in \mathbb R^{d_{in} \times d_{out}}$ (applied as $x W$) is read as

$$ W' = W + s\, A B, \qquad A \in \mathbb R^{d_{in} \times r},\; B \in \mathbb R^{r \times d_{out}},
   \qquad s = \alpha / r, $$

with $A$ drawn at random ($\mathcal N(0, 1/d_{in})$) and $B$ zero, so that training starts from the
pretrained encoder exactly. The trained arrays are the $A$, $B$ of each target and the head; the encoder's own
arrays never change. A frozen encoder is the case with no targets: only the head trains.

**The backward pass.** The encoder's backward pass gives the gradient $G = \partial \mathcal L / \partial W'$ of
every weight matrix it reads. Since $W'_{ij} = W_{ij} + s \sum_k A_{ik} B_{kj}$,

$$ \frac{\partial \mathcal L}{\partial A_{ik}} = s \sum_j G_{ij} B_{kj} = s\,(G B^\top)_{ik}, \qquad
   \frac{\partial \mathcal L}{\partial B_{kj}} = s \sum_i A_{ik} G_{ij} = s\,(A^\top G)_{kj}, $$

([`low_rank_grads`][mlm_book.nn.lora.low_rank_grads]); ``tests/test_lora.py`` checks both, and the whole
classifier's, against central differences in float64.

Examples
--------
A label that is a function of one token is learned with rank-1 updates of the attention matrices:

>>> from mlm_book.nn import encoder as enc
>>> cfg = enc.EncoderConfig(vocab_size=6, length=4, d_model=8, n_blocks=1, n_heads=2, pad=True)
>>> windows = np.array([[2, 3, 7, 7], [4, 3, 7, 7], [2, 5, 7, 7], [4, 5, 7, 7]] * 4)
>>> pool = windows != cfg.pad_id
>>> labels = (windows[:, 0] == 2).astype(int)
>>> params = enc.init_params(cfg, np.random.default_rng(0))
>>> settings = eft.ClassifierConfig(steps=80, lr=1e-2, batch_size=8)
>>> model = fine_tune_lora(params, cfg, windows, pool, labels, LoraConfig(rank=1), settings)
>>> float(np.mean(eft.classifier_proba(model.classifier, windows, pool).argmax(1) == labels)), model.trained
(1.0, 66)
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from mlm_book.nn import encoder as enc
from mlm_book.nn import encoder_finetune as eft
from mlm_book.nn import loop
from mlm_book.validation import (
    as_float_array,
    as_int_array,
    check_instance,
    check_positive_float,
    check_positive_int,
)

__all__ = [
    "TARGETS",
    "LoraClassifier",
    "LoraConfig",
    "fine_tune_lora",
    "full_count",
    "init_low_rank",
    "lora_loss_and_grads",
    "low_rank_grads",
    "low_rank_names",
    "merge",
    "target_names",
    "trained_count",
]

TARGETS = ("attn.W_qkv", "attn.W_o", "mlp.W_1", "mlp.W_2")
"""The weight matrices of a block that LoRA may adapt (the query-key-value and output projections of
attention, the MLP's two matrices)."""

MAX_RANK = 4096
"""Largest rank accepted (a mistaken rank is refused rather than allocating huge factors)."""


@dataclass(frozen=True)
class LoraConfig:
    """Which matrices are adapted, at what rank and scale.

    Parameters
    ----------
    rank : int
        $r$, the inner dimension of $A B$ (0: no update at all, a frozen encoder with a trained head).
    alpha : float
        $\alpha$; the update is scaled by $s = \alpha / r$. Default: ``rank`` (so $s = 1$).
    targets : tuple of str
        Names of the adapted matrices within every block, from [`TARGETS`][mlm_book.nn.lora.TARGETS]
        (ignored at rank 0).

    Raises
    ------
    TypeError, ValueError
        If a field has the wrong type or range, naming it.

    Examples
    --------
    >>> LoraConfig(rank=4, alpha=8).scale
    2.0
    >>> LoraConfig(rank=2, targets=("attn.W_q",))
    Traceback (most recent call last):
    ...
    ValueError: targets must be names from ('attn.W_qkv', 'attn.W_o', 'mlp.W_1', 'mlp.W_2'), got ('attn.W_q',)
    """

    rank: int
    alpha: float | None = None
    targets: tuple = ("attn.W_qkv", "attn.W_o")

    def __post_init__(self):
        check_positive_int(self.rank, "rank", minimum=0, maximum=MAX_RANK)
        if self.alpha is not None:
            check_positive_float(self.alpha, "alpha")
        if (not isinstance(self.targets, tuple) or not self.targets or len(set(self.targets)) != len(self.targets)
                or any(t not in TARGETS for t in self.targets)):
            raise ValueError(f"targets must be names from {TARGETS}, got {self.targets!r}")

    @property
    def scale(self) -> float:
        """$s = \\alpha / r$ (1 at rank 0, where nothing is scaled)."""
        if self.rank == 0:
            return 1.0
        return float(self.rank if self.alpha is None else self.alpha) / self.rank


@dataclass(frozen=True, eq=False)
class LoraClassifier:
    """A LoRA-fine-tuned classifier.

    Attributes
    ----------
    classifier : EncoderClassifier
        The encoder with every update merged into its matrices ($W + sAB$) and the head: read it with
        [`classifier_proba`][mlm_book.nn.encoder_finetune.classifier_proba].
    lora : LoraConfig
    factors : dict of str to ndarray
        The trained $A$ and $B$ of every target (empty at rank 0).
    trained : int
        Number of trained parameters (factors and head).

    Examples
    --------
    Fresh factors of rank 1 on the output projection ($B = 0$: the merged encoder is the original)
    and a two-class head; what LoRA trains is the factors and the head:

    >>> cfg = enc.EncoderConfig(vocab_size=5, length=4, d_model=8, n_blocks=1, n_heads=2, pad=True)
    >>> lo = LoraConfig(rank=1, targets=("attn.W_o",))
    >>> factors = init_low_rank(cfg, lo, np.random.default_rng(1))
    >>> head = {"head.W": np.zeros((8, 2)), "head.b": np.zeros(2)}
    >>> p = enc.init_params(cfg, np.random.default_rng(0))
    >>> classifier = eft.EncoderClassifier(cfg, merge(p, factors, cfg, lo) | head, np.array([0.7]))
    >>> model = LoraClassifier(classifier, lo, factors, trained_count(cfg, lo, 2))
    >>> model.trained, sorted(model.factors)       # 1 x (8 + 8) factor entries, (8 + 1) x 2 in the head
    (34, ['lora.blocks.0.attn.W_o.A', 'lora.blocks.0.attn.W_o.B'])

    Raises
    ------
    TypeError, ValueError
        If a field is of the wrong type, a factor is not a finite matrix, or ``trained`` is negative.
    """

    classifier: eft.EncoderClassifier
    lora: LoraConfig
    factors: dict
    trained: int

    def __post_init__(self):
        check_instance(self.classifier, "classifier", eft.EncoderClassifier)
        check_instance(self.lora, "lora", LoraConfig)
        check_instance(self.factors, "factors", dict)
        for name, factor in self.factors.items():
            if not isinstance(name, str):
                raise TypeError(f"factors must be keyed by parameter names (str), got {type(name).__name__}")
            as_float_array(factor, "factors", ndim=2)       # checked only: the trained arrays keep their dtype
        check_positive_int(self.trained, "trained", minimum=0)


def _check_config(config) -> enc.EncoderConfig:
    check_instance(config, "config", enc.EncoderConfig)
    if config.head != "normalised":
        raise ValueError(f"config must have the normalised head (a final LayerNorm to read), got head={config.head!r}")
    return config


def target_names(config: enc.EncoderConfig, lora: LoraConfig) -> tuple[str, ...]:
    """The encoder's parameter names that ``lora`` adapts (none at rank 0).

    Raises
    ------
    TypeError
        If ``config`` or ``lora`` has the wrong type.

    Examples
    --------
    >>> cfg = enc.EncoderConfig(vocab_size=5, length=3, d_model=8, n_blocks=2, n_heads=2)
    >>> target_names(cfg, LoraConfig(rank=1, targets=("attn.W_o",)))
    ('blocks.0.attn.W_o', 'blocks.1.attn.W_o')
    """
    check_instance(config, "config", enc.EncoderConfig)
    check_instance(lora, "lora", LoraConfig)
    if lora.rank == 0:
        return ()
    return tuple(f"blocks.{block}.{target}" for block in range(config.n_blocks) for target in lora.targets)


def low_rank_names(config: enc.EncoderConfig, lora: LoraConfig) -> tuple[str, ...]:
    """Names of the factors: ``"lora.<target>.A"`` and ``"lora.<target>.B"`` for every target.

    Raises
    ------
    TypeError
        If ``config`` or ``lora`` has the wrong type.

    Examples
    --------
    >>> cfg = enc.EncoderConfig(vocab_size=5, length=3, d_model=8, n_blocks=1, n_heads=2)
    >>> low_rank_names(cfg, LoraConfig(rank=1, targets=("attn.W_o",)))
    ('lora.blocks.0.attn.W_o.A', 'lora.blocks.0.attn.W_o.B')
    """
    return tuple(f"lora.{name}.{factor}" for name in target_names(config, lora) for factor in "AB")


def init_low_rank(config: enc.EncoderConfig, lora: LoraConfig, rng: np.random.Generator,
                  dtype=np.float32) -> dict[str, np.ndarray]:
    r"""Fresh factors: $A \sim \mathcal N(0, 1/d_{in})$ entrywise, $B = 0$ (the update starts at zero).

    Raises
    ------
    TypeError
        If an argument has the wrong type.

    Examples
    --------
    >>> cfg = enc.EncoderConfig(vocab_size=5, length=3, d_model=8, n_blocks=1, n_heads=2)
    >>> f = init_low_rank(cfg, LoraConfig(rank=2, targets=("attn.W_qkv",)), np.random.default_rng(0))
    >>> f["lora.blocks.0.attn.W_qkv.A"].shape, f["lora.blocks.0.attn.W_qkv.B"].shape, float(np.abs(f["lora.blocks.0.attn.W_qkv.B"]).sum())
    ((8, 2), (2, 24), 0.0)
    """
    names = target_names(config, lora)
    if not isinstance(rng, np.random.Generator):
        raise TypeError(f"rng must be a numpy.random.Generator, got {type(rng).__name__}")
    dtype = _float_dtype(dtype)
    shapes = enc.param_shapes(config)
    out = {}
    for name in names:
        d_in, d_out = shapes[name]
        out[f"lora.{name}.A"] = rng.normal(0.0, 1.0 / np.sqrt(d_in), size=(d_in, lora.rank)).astype(dtype)
        out[f"lora.{name}.B"] = np.zeros((lora.rank, d_out), dtype=dtype)
    return out


def _float_dtype(dtype) -> np.dtype:
    try:
        resolved = np.dtype(dtype)
    except (TypeError, ValueError):
        raise TypeError(f"dtype must be float32 or float64, got {dtype!r:.40}") from None
    if resolved not in (np.float32, np.float64) or isinstance(dtype, bool):
        raise TypeError(f"dtype must be float32 or float64, got {dtype!r:.40}")
    return resolved


def _check_factors(factors, config: enc.EncoderConfig, lora: LoraConfig) -> dict:
    if not isinstance(factors, dict):
        raise TypeError(f"factors must be a dict of the low-rank factors, got {type(factors).__name__}")
    shapes = enc.param_shapes(config)
    for name in target_names(config, lora):
        d_in, d_out = shapes[name]
        for factor, shape in (("A", (d_in, lora.rank)), ("B", (lora.rank, d_out))):
            key = f"lora.{name}.{factor}"
            if key not in factors:
                raise ValueError(f"factors must hold {key!r}")
            array = as_float_array(factors[key], f"factors[{key!r}]", ndim=2)
            if array.shape != shape:
                raise ValueError(f"factors[{key!r}] must have shape {shape}, got {array.shape}")
    return factors


def _merge(params, factors, names, scale) -> dict:
    merged = dict(params)
    for name in names:
        A, B = factors[f"lora.{name}.A"], factors[f"lora.{name}.B"]
        merged[name] = params[name] + (scale * (A @ B)).astype(params[name].dtype)
    return merged


def merge(params, factors, config: enc.EncoderConfig, lora: LoraConfig) -> dict:
    r"""The encoder's arrays with every target read as $W + sAB$ (a new dict; ``params`` is not changed).

    Other entries of ``params`` (e.g. a head's ``head.W``) are passed through.

    Raises
    ------
    TypeError, ValueError
        If an argument has the wrong type or a factor the wrong shape, naming it.

    Examples
    --------
    >>> cfg = enc.EncoderConfig(vocab_size=5, length=3, d_model=8, n_blocks=1, n_heads=2)
    >>> p = enc.init_params(cfg, np.random.default_rng(0))
    >>> lo = LoraConfig(rank=1, targets=("attn.W_o",))
    >>> f = init_low_rank(cfg, lo, np.random.default_rng(1))
    >>> bool(np.array_equal(merge(p, f, cfg, lo)["blocks.0.attn.W_o"], p["blocks.0.attn.W_o"]))  # B = 0
    True
    """
    config = _check_config(config)
    if not isinstance(params, dict):
        raise TypeError(f"params must be a dict of the encoder's arrays, got {type(params).__name__}")
    enc.check_params({k: v for k, v in params.items() if not k.startswith("head.")}, config)
    factors = _check_factors(factors, config, lora)
    return _merge(params, factors, target_names(config, lora), lora.scale)


def low_rank_grads(dW, A, B, scale: float) -> tuple[np.ndarray, np.ndarray]:
    r"""Gradients of the factors from the gradient of the merged matrix: $(s\,G B^\top,\; s\,A^\top G)$.

    Parameters
    ----------
    dW : array, shape (d_in, d_out)
        $G = \partial \mathcal L / \partial W'$ where $W' = W + sAB$.
    A : array, shape (d_in, r)
    B : array, shape (r, d_out)
    scale : float
        $s$.

    Returns
    -------
    dA : ndarray, shape (d_in, r)
    dB : ndarray, shape (r, d_out)

    Raises
    ------
    TypeError, ValueError
        If an array is not real or the shapes disagree, naming the argument.

    Examples
    --------
    >>> dA, dB = low_rank_grads(np.ones((2, 3)), np.ones((2, 1)), np.full((1, 3), 2.0), 0.5)
    >>> dA.tolist(), dB.tolist()
    ([[3.0], [3.0]], [[1.0, 1.0, 1.0]])
    """
    dW = as_float_array(dW, "dW", ndim=2)
    A = as_float_array(A, "A", ndim=2)
    B = as_float_array(B, "B", ndim=2)
    scale = check_positive_float(scale, "scale")
    if A.shape[0] != dW.shape[0] or B.shape[1] != dW.shape[1] or A.shape[1] != B.shape[0]:
        raise ValueError(f"A (d_in, r), B (r, d_out) and dW (d_in, d_out) must agree, got {A.shape}, {B.shape}, "
                         f"{dW.shape}")
    with np.errstate(over="ignore", invalid="ignore"):
        dA, dB = scale * (dW @ B.T), scale * (A.T @ dW)
    if not (np.all(np.isfinite(dA)) and np.all(np.isfinite(dB))):
        raise ValueError(f"scale (with dW, A and B) is too large: the gradients overflow, scale = {scale!r}")
    return dA, dB


def _loss_and_grads(params, factors, names, scale, config, windows, pool, labels):
    merged = _merge(params, factors, names, scale)
    value, grads = eft.classifier_loss_and_grads(merged, config, windows, pool, labels)
    out = {"head.W": grads["head.W"], "head.b": grads["head.b"]}
    for name in names:
        A, B, G = factors[f"lora.{name}.A"], factors[f"lora.{name}.B"], grads[name]
        out[f"lora.{name}.A"] = scale * (G @ B.T)
        out[f"lora.{name}.B"] = scale * (A.T @ G)
    return value, out


def lora_loss_and_grads(params, factors, config: enc.EncoderConfig, lora: LoraConfig, windows, pool, labels):
    """Mean cross-entropy of the head on a batch, and the gradients of the trained arrays (factors and head).

    Parameters
    ----------
    params : dict
        The encoder's arrays of ``config`` with the head's ``"head.W"`` ``(d, K)`` and ``"head.b"`` ``(K,)``.
    factors : dict
        The factors of ``lora`` (see [`init_low_rank`][mlm_book.nn.lora.init_low_rank]).
    config : EncoderConfig
    lora : LoraConfig
    windows : array of int, shape (B, n)
    pool : array of bool, shape (B, n)
    labels : array of int, shape (B,)

    Returns
    -------
    loss : float
        Nats per row.
    grads : dict of str to ndarray
        ``head.W``, ``head.b`` and every factor.

    Raises
    ------
    TypeError, ValueError
        If an argument has the wrong type, shape or range, naming it.

    Examples
    --------
    >>> cfg = enc.EncoderConfig(vocab_size=5, length=4, d_model=8, n_blocks=1, n_heads=2, pad=True)
    >>> p = enc.init_params(cfg, np.random.default_rng(0), dtype=np.float64)
    >>> p |= {"head.W": np.zeros((8, 2)), "head.b": np.zeros(2)}
    >>> lo = LoraConfig(rank=2)
    >>> f = init_low_rank(cfg, lo, np.random.default_rng(1), dtype=np.float64)
    >>> value, g = lora_loss_and_grads(p, f, cfg, lo, [[0, 1, 6, 6]], [[True, True, False, False]], [1])
    >>> round(value, 4), len(g)
    (0.6931, 6)
    """
    config = _check_config(config)
    if not isinstance(params, dict):
        raise TypeError(f"params must be a dict of the encoder's arrays and the head's, got {type(params).__name__}")
    check_instance(lora, "lora", LoraConfig)
    factors = _check_factors(factors, config, lora)
    names = target_names(config, lora)
    # classifier_loss_and_grads checks the merged arrays, the head, the windows, the pool and the labels
    return _loss_and_grads(params, factors, names, lora.scale, config, windows, pool, labels)


def full_count(config: enc.EncoderConfig, n_classes: int) -> int:
    """Trained parameters of full fine-tuning: every array the classifier reads, and the head.

    Raises
    ------
    TypeError, ValueError
        If ``config`` is not an `EncoderConfig` or ``n_classes`` is below 2.

    Examples
    --------
    >>> full_count(enc.EncoderConfig(vocab_size=5, length=3, d_model=8, n_blocks=1, n_heads=2), 2)
    978
    """
    config = _check_config(config)
    n_classes = check_positive_int(n_classes, "n_classes", minimum=2, maximum=eft.MAX_CLASSES)
    shapes = enc.param_shapes(config)
    encoder = sum(int(np.prod(shapes[name])) for name in enc.param_names(config) if name not in ("b_out", "E_out"))
    return encoder + (config.d_model + 1) * n_classes


def trained_count(config: enc.EncoderConfig, lora: LoraConfig, n_classes: int) -> int:
    r"""Trained parameters of LoRA: $r (d_{in} + d_{out})$ per target, and the head's $(d + 1) K$.

    Raises
    ------
    TypeError, ValueError
        If an argument has the wrong type or ``n_classes`` is below 2.

    Examples
    --------
    >>> cfg = enc.EncoderConfig(vocab_size=5, length=3, d_model=8, n_blocks=1, n_heads=2)
    >>> trained_count(cfg, LoraConfig(rank=0), 2), trained_count(cfg, LoraConfig(rank=1), 2)
    (18, 66)
    """
    config = _check_config(config)
    n_classes = check_positive_int(n_classes, "n_classes", minimum=2, maximum=eft.MAX_CLASSES)
    shapes = enc.param_shapes(config)
    factors = sum(lora.rank * (shapes[name][0] + shapes[name][1]) for name in target_names(config, lora))
    return factors + (config.d_model + 1) * n_classes


def fine_tune_lora(params, config: enc.EncoderConfig, windows, pool, labels, lora: LoraConfig,
                   settings: eft.ClassifierConfig | None = None, n_classes: int | None = None
                   ) -> LoraClassifier:
    """Train a head and low-rank updates of the targets on labelled windows, the encoder frozen.

    The recipe is full fine-tuning's ([`ClassifierConfig`][mlm_book.nn.encoder_finetune.ClassifierConfig]:
    AdamW on batches drawn with replacement, warm-up then cosine decay); decay applies to the head's $W$ and the
    factors. The head is initialised as full fine-tuning's is, from the same seed.

    Parameters
    ----------
    params : mapping
        The starting encoder; copied, not changed.
    config : EncoderConfig
        With the normalised head.
    windows : array of int, shape (B, n)
    pool : array of bool, shape (B, n)
    labels : array of int, shape (B,)
    lora : LoraConfig
        Rank 0 trains the head alone (a frozen encoder).
    settings : ClassifierConfig, optional
        Default: ``ClassifierConfig()``.
    n_classes : int, optional
        Default: the largest label plus one.

    Returns
    -------
    LoraClassifier

    Raises
    ------
    TypeError, ValueError
        If an argument has the wrong type, shape or range, naming it.
    FloatingPointError
        If the loss or a gradient becomes NaN or infinite.
    """
    config = _check_config(config)
    params = enc.check_params(params, config)
    check_instance(lora, "lora", LoraConfig)
    settings = eft.ClassifierConfig() if settings is None else check_instance(settings, "settings",
                                                                              eft.ClassifierConfig)
    windows = enc.check_shown(windows, config, "windows")
    labels = as_int_array(labels, "labels", ndim=1)
    if labels.shape != (windows.shape[0],):
        raise ValueError(f"labels must hold one class per row of windows ({windows.shape[0]}), got shape "
                         f"{labels.shape}")
    classes = int(labels.max()) + 1 if n_classes is None else check_positive_int(n_classes, "n_classes", minimum=2,
                                                                                  maximum=eft.MAX_CLASSES)
    if labels.min() < 0 or labels.max() >= min(classes, eft.MAX_CLASSES) or np.unique(labels).size < 2:
        raise ValueError(f"labels must hold at least two classes, all in [0, {classes})")
    rng = np.random.default_rng(settings.seed)
    dtype = params["E"].dtype
    state = {name: np.array(params[name], dtype=dtype) for name in enc.param_names(config)}
    # the head as full fine-tuning draws it (same seed, same values); the factors from a generator of their own,
    # so that the batches are full fine-tuning's too
    state["head.W"] = rng.normal(0.0, config.init_std, size=(config.d_model, classes)).astype(dtype)
    state["head.b"] = np.zeros(classes, dtype=dtype)
    factors = init_low_rank(config, lora, np.random.default_rng([settings.seed, 1]), dtype)
    state |= factors
    names = target_names(config, lora)
    base = [*enc.param_names(config), "head.W", "head.b"]
    # the windows, the pool and the labels are checked by one forward and backward pass over every row
    try:
        pool_array = np.asarray(pool) if pool is not None else None
    except (TypeError, ValueError):
        raise TypeError("pool must be a boolean array of the windows' shape (not ragged)") from None
    eft.classifier_loss_and_grads({name: state[name] for name in base}, config, windows, pool_array, labels)
    pool = pool_array
    frozen = list(enc.param_names(config))
    decayed = ["head.W"] + list(factors)
    size = min(settings.batch_size, windows.shape[0])

    def draw(rng, step):
        return rng.integers(0, windows.shape[0], size=size)

    def loss_and_grads(current, rows):
        return _loss_and_grads({name: current[name] for name in base}, current, names, lora.scale, config,
                               windows[rows], pool[rows], labels[rows])

    objective = loop.Objective(state, draw, loss_and_grads, decayed=decayed, frozen=frozen, label="LoRA")
    fitted = loop.fit(objective, settings.schedule(), rng, progress=False)
    merged = _merge({name: state[name] for name in base}, state, names, lora.scale)
    return LoraClassifier(eft.EncoderClassifier(config, merged, fitted.loss), lora,
                          {name: state[name] for name in factors}, trained_count(config, lora, classes))
