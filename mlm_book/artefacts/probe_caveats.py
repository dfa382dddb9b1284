r"""Chapter 11's three probe caveats as artefacts: control tasks, the position leak against the stride, one causal test.

Each kind is one run over the five training seeds of its encoder (the protocol's constants below
were fixed before any number was computed; chapter 11's rules, what they find and the tables are
[`mlm_book.experiments.ch11_probes`][mlm_book.experiments.ch11_probes]):

* **control-tasks**: on the HMM encoder's vectors of every token of the probe splits
  ([`mlm_book.hmm_splits`][mlm_book.hmm_splits]), the regime probe and probes of random per-type
  labels ([`control_labels`][mlm_book.artefacts.probe_caveats.control_labels]), with the exact
  Bayes references ([`regime_posteriors`][mlm_book.artefacts.probe_caveats.regime_posteriors]);
* **stride-leak**: the filing encoder's layer-0 *kestrel* probe with its mentions read at the
  slot the nearest-centre reading gives them at each stride
  ([`window_positions`][mlm_book.artefacts.probe_caveats.window_positions]);
* **causal-test**: the sense direction of the layer-1 probe removed from the HMM encoder's
  stream at $w$ ([`sense_direction`][mlm_book.artefacts.probe_caveats.sense_direction],
  [`ablate`][mlm_book.artefacts.probe_caveats.ablate]) and the rest of the network run again
  ([`stream_at`][mlm_book.artefacts.probe_caveats.stream_at],
  [`resume`][mlm_book.artefacts.probe_caveats.resume]) at the positions next to $w$
  ([`neighbour_positions`][mlm_book.artefacts.probe_caveats.neighbour_positions]), against
  random directions moved by the same amounts.

Each run takes tens of seconds of one core.
"""

from __future__ import annotations

import functools
from dataclasses import asdict, dataclass, replace

import numpy as np

from mlm_book import artefacts, cache, probe
from mlm_book.artefacts import filing_encoder as fe
from mlm_book.artefacts import filings, hmm_encoder
from mlm_book.finance.windows import centre_position
from mlm_book.finance.world import ENTITY_PRODUCT
from mlm_book.hmm import default_hmm
from mlm_book.hmm_splits import SPLITS, SplitConfig, hmm_split
from mlm_book.nn import encoder as enc
from mlm_book.nn import layers, runtime
from mlm_book.validation import (
    as_float_array,
    as_int_array,
    check_instance,
    check_positive_int,
    check_real,
    check_tokens,
)

__all__ = [
    "CONTROL_DRAWS", "CONTROL_LABELLED", "CONTROL_SEED", "STRIDES", "ABLATION_DRAWS", "ABLATION_SEED",
    "ABLATION_LAYER", "RESUME_CHECK", "MAX_CONTROL_VOCABULARY", "MAX_CONTROL_DRAWS",
    "control_labels", "regime_posteriors", "ControlTasksSetup", "CONTROL_TASKS", "control_tasks",
    "control_tasks_built", "window_positions", "kestrel_mentions", "StrideLeakSetup", "STRIDE_LEAK", "stride_leak",
    "stride_leak_built", "stream_at", "resume", "sense_direction", "ablate", "neighbour_positions",
    "CausalTestSetup", "CAUSAL_TEST", "causal_test", "causal_test_built", "ARTEFACT_KINDS",
]

# --------------------------------------------------------------------------------------
# The protocol, fixed before any number was computed
# --------------------------------------------------------------------------------------

CONTROL_DRAWS = 5
"""Random per-type labellings of the control task, each fitted and scored at every layer and seed."""

CONTROL_LABELLED = 12
"""Types labelled 1 by each control draw (of the HMM's 25): the task labels 12 types a, 12 types b and
$w$ by context, so the control has the task's number of types per class, $w$ included at random."""

CONTROL_SEED = 5110
"""Draw $r$ of the control labels comes from ``numpy.random.default_rng([CONTROL_SEED, r])``."""

STRIDES = (1, 2, 4, 8, 16, 32)
"""Window strides swept (windows of 32 tokens: every stride from 1 to 32 covers every token; 16 is chapter 6's)."""

ABLATION_DRAWS = 8
"""Random directions of the causal test's control, per encoder."""

ABLATION_SEED = 5120
"""Draw $r$ of encoder seed $s$ comes from ``numpy.random.default_rng([ABLATION_SEED, s, r])``."""

RESUME_CHECK = 512
"""Measured copies on which the resumed pass is compared with the encoder's own forward pass."""

ABLATION_LAYER = 1
"""The layer whose stream is modified (after block 1): the sense probe reaches its ceiling there (chapter 5)."""


def _check_encoders(encoders, kind: type) -> tuple:
    if not isinstance(encoders, tuple) or not encoders:
        raise TypeError(f"encoders must be a non-empty tuple of {kind.__name__}, got {encoders!r:.60}")
    for encoder in encoders:
        check_instance(encoder, "encoders", kind)
    return encoders


# --------------------------------------------------------------------------------------
# 1. Control tasks
# --------------------------------------------------------------------------------------


MAX_CONTROL_VOCABULARY = 10**6
"""Largest vocabulary `control_labels` labels (the filing vocabulary has under a thousand types)."""
MAX_CONTROL_DRAWS = 1000
"""Most control draws `control_labels` makes (the chapter uses five)."""


def control_labels(vocab_size: int = 25, draws: int = CONTROL_DRAWS, labelled: int = CONTROL_LABELLED,
                   seed: int = CONTROL_SEED) -> np.ndarray:
    r"""Random per-type labels: row $r$ gives label 1 to a uniformly random ``labelled`` of the types.

    A control task in Hewitt and Liang's sense: the label of an occurrence is its type's, so it is
    constant per type and a probe can learn it only by telling the types apart.

    Parameters
    ----------
    vocab_size : int
        Number of types (at least 2).
    draws : int
        Independent labellings (at least 1).
    labelled : int
        Types labelled 1 per draw, in ``[1, vocab_size)`` (both labels occur).
    seed : int
        Draw $r$ uses ``default_rng([seed, r])``.

    Returns
    -------
    numpy.ndarray of int64, shape (draws, vocab_size)

    Raises
    ------
    TypeError
        If an argument is not an integer.
    ValueError
        If ``vocab_size`` is below 2 or above ``MAX_CONTROL_VOCABULARY``, ``draws`` below 1 or above
        ``MAX_CONTROL_DRAWS``, ``labelled`` outside ``[1, vocab_size)`` or ``seed`` negative.

    Examples
    --------
    >>> labels = control_labels()
    >>> labels.shape, labels.sum(axis=1).tolist()
    ((5, 25), [12, 12, 12, 12, 12])
    >>> tokens = np.array([[3, 24, 3]])
    >>> labels[0][tokens].tolist()      # an occurrence takes its type's label
    [[1, 0, 1]]
    >>> control_labels(4, labelled=4)
    Traceback (most recent call last):
    ...
    ValueError: labelled must be in [1, vocab_size) = [1, 4) so that both labels occur, got 4
    """
    vocab_size = check_positive_int(vocab_size, "vocab_size", minimum=2)
    draws = check_positive_int(draws, "draws")
    labelled = check_positive_int(labelled, "labelled")
    seed = check_positive_int(seed, "seed", minimum=0)
    if labelled >= vocab_size:
        raise ValueError(f"labelled must be in [1, vocab_size) = [1, {vocab_size}) so that both labels occur, "
                         f"got {labelled}")
    if vocab_size > MAX_CONTROL_VOCABULARY or draws > MAX_CONTROL_DRAWS:
        raise ValueError(f"vocab_size must be at most {MAX_CONTROL_VOCABULARY} and draws at most "
                         f"{MAX_CONTROL_DRAWS} (a label per type and draw), got vocab_size={vocab_size}, draws={draws}")
    out = np.zeros((draws, vocab_size), dtype=np.int64)
    for r in range(draws):
        out[r, np.random.default_rng([seed, r]).permutation(vocab_size)[:labelled]] = 1
    return out


def regime_posteriors(tokens) -> np.ndarray:
    r"""Exact $P(\text{regime}_i = b \mid x)$ at every position of clean sequences of the book's HMM.

    Forward–backward's posterior over the hidden states, summed over regime b's four states.
    At $w$ it is the sense posterior of chapter 5; at any other token it is 0 or 1 (each regime
    token is emitted by one regime only).

    Parameters
    ----------
    tokens : array_like of int, shape (B, n)
        Token ids in ``[0, 25)``.

    Returns
    -------
    numpy.ndarray, shape (B, n)

    Raises
    ------
    TypeError
        If ``tokens`` does not hold integers.
    ValueError
        If ``tokens`` is not 2-D or holds an id outside ``[0, 25)``.

    Examples
    --------
    >>> from mlm_book.hmm import default_hmm, sense_posteriors
    >>> hmm = default_hmm()
    >>> x = np.array([[0, hmm.shared_token, 13]])
    >>> p = regime_posteriors(x)
    >>> p[0, [0, 2]].tolist(), bool(abs(p[0, 1] - sense_posteriors(hmm, x)[0, 1, 1]) < 1e-12)
    ([0.0, 1.0], True)
    """
    from mlm_book.hmm import default_hmm, emission_likelihood, forward_backward

    hmm = default_hmm()
    tokens = check_tokens(tokens, "tokens", hmm.vocab_size, ndim=2)
    smoothed = forward_backward(hmm.transition, hmm.initial, emission_likelihood(hmm, tokens))
    return smoothed.posterior @ (hmm.regime == 1).astype(np.float64)


def _float64(params) -> dict:
    return {key: np.asarray(value, dtype=np.float64) for key, value in params.items()}


def _split_streams(params, config, tokens) -> list[np.ndarray]:
    """``[(B*n, d)]`` the residual stream after 0, 1, ... blocks (float64 parameters)."""
    from mlm_book.nn import layers

    x, _ = layers.embedding_forward(tokens, params["E"], params["P"])
    out = [x]
    for block in range(config.n_blocks):
        x, _ = layers.block_forward(x, params, f"blocks.{block}.", config.n_heads, tokens.shape, config.ln_eps)
        out.append(x)
    return out


def _control_encoder(encoder: hmm_encoder.HMMEncoderSetup, splits: SplitConfig, draws: int, labelled: int,
                     seed: int) -> dict:
    """Task, controls and task-at-w accuracies of the HMM encoder of ``encoder`` on ``splits``."""
    hmm = default_hmm()
    result = hmm_encoder.trained_encoder(encoder)
    params = _float64(result.params)
    train, test = hmm_split("train", splits), hmm_split("test", splits)
    controls = control_labels(hmm.vocab_size, draws, labelled, seed)
    streams = {name: _split_streams(params, result.encoder, split.tokens) for name, split in
               (("train", train), ("test", test))}
    y_train, y_test = hmm.regime[train.states].ravel(), hmm.regime[test.states].ravel()
    at_w = test.tokens.ravel() == hmm.shared_token
    task, task_w, control = [], [], []
    for layer in range(result.encoder.n_blocks + 1):
        x_train, x_test = streams["train"][layer], streams["test"][layer]
        fitted = probe.fit_and_score(x_train, y_train, x_test, y_test)
        task.append(fitted.accuracy)
        task_w.append(float(np.mean(fitted.model.predict(x_test[at_w]) == y_test[at_w])))
        control.append([probe.fit_and_score(x_train, labels[train.tokens.ravel()], x_test,
                                            labels[test.tokens.ravel()]).accuracy for labels in controls])
    return {"task": task, "task_at_w": task_w, "control": control}


def _control_references(splits: SplitConfig) -> dict:
    hmm = default_hmm()
    train, test = hmm_split("train", splits), hmm_split("test", splits)
    p = regime_posteriors(test.tokens)
    best = np.maximum(p, 1.0 - p)
    at_w = test.tokens == hmm.shared_token
    majority_class = int(np.bincount(hmm.regime[train.states].ravel(), minlength=2).argmax())
    return {"bayes": float(best.mean()), "bayes_at_w": float(best[at_w].mean()),
            "majority": float(np.mean(hmm.regime[test.states] == majority_class)), "w_share": float(at_w.mean())}


@dataclass(frozen=True)
class ControlTasksSetup:
    """The control tasks of some HMM encoders: the encoders, the splits and the control labellings.

    Attributes
    ----------
    encoders : tuple of HMMEncoderSetup
        The encoders probed (the book's at each of its seeds, the book's first).
    splits : SplitConfig
        The probe splits (`SPLITS` in the book).
    draws, labelled, seed : int
        `CONTROL_DRAWS`, `CONTROL_LABELLED` and `CONTROL_SEED` in the book.

    Examples
    --------
    >>> [encoder.training.seed for encoder in CONTROL_TASKS.encoders]
    [20240601, 1, 2, 3, 4]

    >>> from mlm_book.artefacts.hmm_encoder import HMMEncoderSetup
    >>> ControlTasksSetup(encoders=(HMMEncoderSetup(),)).draws
    5
    """

    encoders: tuple
    splits: SplitConfig = SPLITS
    draws: int = CONTROL_DRAWS
    labelled: int = CONTROL_LABELLED
    seed: int = CONTROL_SEED

    def __post_init__(self):
        _check_encoders(self.encoders, hmm_encoder.HMMEncoderSetup)
        check_instance(self.splits, "splits", SplitConfig)
        control_labels(default_hmm().vocab_size, self.draws, self.labelled, self.seed)   # the same checks


CONTROL_TASKS = ControlTasksSetup(tuple(hmm_encoder.seed_setup(seed) for seed in hmm_encoder.SEEDS))
"""The book's control tasks: the HMM encoder at each of its five seeds, on the book's splits."""


def _control_entry(setup: ControlTasksSetup) -> tuple:
    return "control-tasks", asdict(check_instance(setup, "setup", ControlTasksSetup)), \
        [artefacts.key_source("control-tasks")]


def control_tasks(setup: ControlTasksSetup = CONTROL_TASKS) -> tuple[dict, dict]:
    """The run of ``setup`` (from the store; measured on a miss): ``(arrays, references)``.

    ``arrays``: ``task`` and ``task_at_w`` ``(S, L)``, ``control`` ``(S, L, draws)`` accuracies, one row per
    encoder; ``references``: the exact Bayes accuracy of the regime over every test token (``bayes``) and
    over $w$'s (``bayes_at_w``), the test share of the training-majority regime and the share of $w$.

    Raises
    ------
    TypeError
        If ``setup`` is not a `ControlTasksSetup`.
    """
    name, key, producers = _control_entry(setup)

    def build():
        with runtime.blas_threads(1):      # the probes' small products: threads only contend
            rows = [_control_encoder(encoder, setup.splits, setup.draws, setup.labelled, setup.seed)
                    for encoder in setup.encoders]
        arrays = {name: np.array([row[name] for row in rows]) for name in ("task", "task_at_w", "control")}
        return arrays, _control_references(setup.splits)

    return cache.cached(name, key, producers, build)


def control_tasks_built(setup: ControlTasksSetup) -> bool:
    """Whether the store holds the run of ``setup`` (a damaged entry counts as absent).

    Raises
    ------
    TypeError
        If ``setup`` is not a `ControlTasksSetup`.

    Examples
    --------
    The book's run (the answer depends on what the store holds; asking builds nothing):

    >>> isinstance(control_tasks_built(CONTROL_TASKS), bool)
    True
    """
    return cache.load(cache.entry_for(*_control_entry(setup))) is not None


# --------------------------------------------------------------------------------------
# 2. The position leak against the stride
# --------------------------------------------------------------------------------------


def window_positions(stride: int, length: int = 32) -> np.ndarray:
    r"""The slot at which chapter 6's nearest-centre reading puts every token of the filings, at ``stride``.

    Chapter 6's own reading generalised from its stride (16) to any: each filing is cut into windows
    of ``length`` tokens starting every ``stride`` tokens, plus one flush with its end
    ([`mlm_book.finance.windows.fixed_windows`][mlm_book.finance.windows.fixed_windows]), and a token is
    read in the window where it sits nearest the centre, ties to the earlier window
    ([`mlm_book.finance.windows.nearest_centre`][mlm_book.finance.windows.nearest_centre]). At stride 1 a
    token with at least ``length // 2`` tokens of its filing before it and ``length - length // 2 - 1``
    after it sits at slot ``length // 2``, the centred reading's; a token nearer an edge cannot.

    Parameters
    ----------
    stride : int
        Between 1 and ``length`` (the windows must cover every token).
    length : int
        Window length, 2 to the shortest filing's length (chapter 6's windows hold 32 tokens).

    Returns
    -------
    numpy.ndarray of int, shape (n_tokens,)
        The slot of each token of chapter 6's stream, in ``[0, length)``.

    Raises
    ------
    TypeError
        If ``stride`` or ``length`` is not an integer.
    ValueError
        If ``stride`` is not in ``[1, length]`` or ``length`` is below 2 or above the shortest filing.

    Examples
    --------
    >>> slots = window_positions(1)
    >>> bool(np.array_equal(window_positions(16), filings.filings().nearest_positions))     # chapter 6's reading
    True
    >>> window_positions(33)
    Traceback (most recent call last):
    ...
    ValueError: stride must be in [1, length] = [1, 32] (windows must cover every token), got 33
    """
    length = check_positive_int(length, "length", minimum=2)
    stride = check_positive_int(stride, "stride")
    if stride > length:
        raise ValueError(f"stride must be in [1, length] = [1, {length}] (windows must cover every token), "
                         f"got {stride}")
    return _window_positions(stride, length)


@functools.cache
def _window_positions(stride: int, length: int) -> np.ndarray:
    from mlm_book.finance.windows import fixed_windows, nearest_centre

    document = filings.filings().corpus.document
    starts = fixed_windows(document, length=length, stride=stride)
    _, positions = nearest_centre(document, starts, length=length)
    positions.flags.writeable = False
    return positions


def kestrel_mentions() -> tuple[np.ndarray, np.ndarray]:
    """Stream indices of *kestrel*'s typed mentions in the book's filings and their labels (1 = product), as chapter 6's.

    Examples
    --------
    >>> index, labels = kestrel_mentions()
    >>> index.size, int(labels.sum())
    (116, 61)
    """
    corpus = filings.filings().corpus
    index = np.flatnonzero((corpus.tokens == "kestrel") & (corpus.entity > 0))
    return index, (corpus.entity[index] == ENTITY_PRODUCT).astype(np.int64)


def _stride_encoder(encoder: fe.FilingEncoderSetup, strides: tuple) -> dict:
    ids = filings.filings().ids
    index, labels = kestrel_mentions()
    splits = fe.kfold(labels)
    params = fe.trained_encoder(encoder).params
    E, P = np.asarray(params["E"], dtype=np.float64), np.asarray(params["P"], dtype=np.float64)
    nearest = [probe.cross_validate(E[ids[index]] + P[window_positions(stride)[index]], labels, splits).accuracy
               for stride in strides]
    centred = E[ids[index]] + P[centre_position(encoder.length)]
    return {"nearest": nearest, "centred": probe.cross_validate(centred, labels, splits).accuracy}


@dataclass(frozen=True)
class StrideLeakSetup:
    """The stride sweep of some filing encoders: the encoders and the strides.

    Attributes
    ----------
    encoders : tuple of FilingEncoderSetup
        The encoders probed (chapter 7's at each of its seeds, the book's first).
    strides : tuple of int
        Distinct strides in ``[1, 32]`` (`STRIDES` in the book).

    Examples
    --------
    >>> STRIDE_LEAK.strides, len(STRIDE_LEAK.encoders)
    ((1, 2, 4, 8, 16, 32), 5)

    >>> from mlm_book.artefacts.filing_encoder import FilingEncoderSetup
    >>> StrideLeakSetup(encoders=(FilingEncoderSetup(steps=3),)).strides
    (1, 2, 4, 8, 16, 32)
    """

    encoders: tuple
    strides: tuple = STRIDES

    def __post_init__(self):
        _check_encoders(self.encoders, fe.FilingEncoderSetup)
        if not isinstance(self.strides, tuple) or not self.strides or not all(
                isinstance(s, int) and not isinstance(s, bool) for s in self.strides):
            raise TypeError(f"strides must be a non-empty tuple of integers, got {self.strides!r:.60}")
        if len(set(self.strides)) != len(self.strides) or min(self.strides) < 1 or max(self.strides) > 32:
            raise ValueError(f"strides must hold distinct strides in [1, 32], got {self.strides}")


STRIDE_LEAK = StrideLeakSetup(tuple(fe.seed_setup(seed) for seed in fe.SEEDS))
"""The book's stride sweep: the filing encoder at each of its five seeds, at every stride of `STRIDES`."""


def _stride_entry(setup: StrideLeakSetup) -> tuple:
    check_instance(setup, "setup", StrideLeakSetup)
    key = {"encoders": [asdict(encoder) for encoder in setup.encoders], "strides": list(setup.strides)}
    return "stride-leak", key, [artefacts.key_source("stride-leak")]


def stride_leak(setup: StrideLeakSetup = STRIDE_LEAK) -> dict:
    """The run of ``setup`` (from the store; measured on a miss): ``nearest`` ``(S, K)``, the layer-0 probe's
    five-fold accuracy at each stride, and ``centred`` ``(S,)``, the same probe on the centred reading.

    Raises
    ------
    TypeError
        If ``setup`` is not a `StrideLeakSetup`.
    """
    name, key, producers = _stride_entry(setup)

    def build():
        with runtime.blas_threads(1):
            rows = [_stride_encoder(encoder, setup.strides) for encoder in setup.encoders]
        return {"nearest": np.array([row["nearest"] for row in rows]),
                "centred": np.array([row["centred"] for row in rows])}

    arrays, _ = cache.cached(name, key, producers, build)
    return arrays


def stride_leak_built(setup: StrideLeakSetup) -> bool:
    """Whether the store holds the run of ``setup`` (a damaged entry counts as absent).

    Raises
    ------
    TypeError
        If ``setup`` is not a `StrideLeakSetup`.

    Examples
    --------
    The book's run (the answer depends on what the store holds; asking builds nothing):

    >>> isinstance(stride_leak_built(STRIDE_LEAK), bool)
    True
    """
    return cache.load(cache.entry_for(*_stride_entry(setup))) is not None


# --------------------------------------------------------------------------------------
# 3. The causal test
# --------------------------------------------------------------------------------------


def _check_encoder(params, config):
    from mlm_book.nn import encoder as enc

    check_instance(config, "config", enc.EncoderConfig)
    return enc.check_params(params, config)


def stream_at(params, config, shown, layer: int) -> np.ndarray:
    r"""The residual stream after ``layer`` blocks, flat: ``(B*n, d)`` in the parameters' dtype.

    Layer 0 is the input $E[x] + P$; layer $\ell$ the stream after block $\ell$ (before the final
    LayerNorm), as [`mlm_book.nn.encoder.hidden_states`][mlm_book.nn.encoder.hidden_states] but
    without the cast to float64 and in the flat layout [`resume`][mlm_book.artefacts.probe_caveats.resume] reads.

    Parameters
    ----------
    params : mapping
        An encoder's parameters.
    config : mlm_book.nn.encoder.EncoderConfig
    shown : array_like of int, shape (B, n)
        Input ids.
    layer : int
        In ``[0, config.n_blocks]``.

    Returns
    -------
    numpy.ndarray, shape (B*n, d)

    Raises
    ------
    TypeError
        If ``config`` is not an ``EncoderConfig``, ``params`` does not match it, ``shown`` does not hold
        integers or ``layer`` is not an integer.
    ValueError
        If ``layer`` is outside ``[0, config.n_blocks]`` or ``shown`` is not a 2-D array of input ids.

    Examples
    --------
    >>> from mlm_book.nn.encoder import EncoderConfig, init_params, hidden_states
    >>> cfg = EncoderConfig(vocab_size=5, length=4, d_model=8, n_blocks=2, n_heads=2)
    >>> p = init_params(cfg, np.random.default_rng(0), dtype=np.float64)
    >>> x = [[0, 5, 2, 1]]
    >>> bool(np.array_equal(stream_at(p, cfg, x, 1), hidden_states(p, cfg, x)[1].reshape(4, 8)))
    True
    """
    from mlm_book.nn import encoder as enc
    from mlm_book.nn import layers

    params = _check_encoder(params, config)
    shown = enc.check_shown(shown, config)
    layer = check_positive_int(layer, "layer", minimum=0)
    if layer > config.n_blocks:
        raise ValueError(f"layer must be in [0, {config.n_blocks}] (the encoder's blocks), got {layer}")
    x, _ = layers.embedding_forward(shown, params["E"], params["P"])
    key_bias = enc.key_bias(config, shown, x.dtype)
    for block in range(layer):
        x, _ = layers.block_forward(x, params, f"blocks.{block}.", config.n_heads, shown.shape, config.ln_eps,
                                    None, key_bias)
    return x


def resume(params, config, shown, stream, *, start: int = 1, rows=None) -> np.ndarray:
    r"""The rest of the network from the stream after ``start`` blocks: blocks ``start`` .. and the tied head.

    With the stream of [`stream_at`][mlm_book.artefacts.probe_caveats.stream_at] unmodified this is
    [`mlm_book.nn.encoder.logits`][mlm_book.nn.encoder.logits], operation for operation; with a modified
    stream it is the encoder's answer to an intervention at that layer.

    Parameters
    ----------
    params : mapping
        An encoder's parameters.
    config : mlm_book.nn.encoder.EncoderConfig
    shown : array_like of int, shape (B, n)
        The input ids the stream was computed from (for the [PAD] key mask of an encoder that has one).
    stream : numpy.ndarray, shape (B*n, d)
        The residual stream after ``start`` blocks, possibly modified.
    start : int
        Blocks already applied, in ``[0, config.n_blocks]``.
    rows : array_like of int, optional
        Flat positions ``b * n + i`` whose logits are wanted (attention still reads every position).

    Returns
    -------
    numpy.ndarray, shape (B*n, V) or (len(rows), V)

    Raises
    ------
    TypeError
        If ``config`` is not an ``EncoderConfig``, ``params`` does not match it, or an array is of the
        wrong kind.
    ValueError
        If ``start`` is outside ``[0, config.n_blocks]``, ``stream`` is not ``(B*n, d)`` and finite, or a
        row is outside ``[0, B*n)``.

    Examples
    --------
    >>> from mlm_book.nn.encoder import EncoderConfig, init_params, logits
    >>> cfg = EncoderConfig(vocab_size=5, length=4, d_model=8, n_blocks=2, n_heads=2)
    >>> p = init_params(cfg, np.random.default_rng(0), dtype=np.float64)
    >>> x = np.array([[0, 5, 2, 1], [3, 3, 5, 4]])
    >>> z = resume(p, cfg, x, stream_at(p, cfg, x, 1))
    >>> float(np.abs(z - logits(p, cfg, x).reshape(8, 5)).max())
    0.0
    >>> bool(np.allclose(resume(p, cfg, x, stream_at(p, cfg, x, 1), rows=[1, 6]), z[[1, 6]], atol=1e-12))
    True
    """
    from mlm_book.nn import encoder as enc

    params = _check_encoder(params, config)
    shown = enc.check_shown(shown, config)
    start = check_positive_int(start, "start", minimum=0)
    if start > config.n_blocks:
        raise ValueError(f"start must be in [0, {config.n_blocks}] (the encoder's blocks), got {start}")
    total = shown.size
    x = as_float_array(stream, "stream", ndim=2)
    if x.shape != (total, config.d_model):
        raise ValueError(f"stream must have shape (B*n, d) = ({total}, {config.d_model}) for shown of shape "
                         f"{shown.shape}, got {x.shape}")
    if rows is not None:
        rows = as_int_array(rows, "rows", ndim=1)
        if rows.size == 0 or rows.min() < 0 or rows.max() >= total:
            raise ValueError(f"rows must hold flat positions in [0, {total})")
    return _resume(params, config, shown, x, start, rows)


def _resume(params, config, shown: np.ndarray, x: np.ndarray, start: int, rows) -> np.ndarray:
    """`resume` without argument checks (the causal test calls it thousands of rows at a time)."""
    from mlm_book.nn import encoder as enc
    from mlm_book.nn import layers

    key_bias = enc.key_bias(config, shown, x.dtype)
    for block in range(start, config.n_blocks):
        last = block == config.n_blocks - 1
        x, _ = layers.block_forward(x, params, f"blocks.{block}.", config.n_heads, shown.shape, config.ln_eps,
                                    rows if last else None, key_bias)
    if rows is not None and start == config.n_blocks:
        x = x[rows]
    out, _ = layers.head_forward(x, params["ln_f.g"], params["ln_f.b"], params["E"][:config.vocab_size],
                                 params["b_out"], config.ln_eps)
    return out


def sense_direction(model: probe.ProbeModel) -> tuple[np.ndarray, float]:
    r"""The unit normal of a two-class probe's boundary in the raw space, and the training mean's coordinate on it.

    The probe reads $W^\top (x - \mu)/\sigma + b$ on standardised features, i.e. $u^\top (x - \mu) + b$
    with $u = W/\sigma$ in the space of $x$ (zero on features constant in training). Returned:
    $\hat u = u / \lVert u\rVert$ and $c = \hat u^\top \mu$, so that the probe's logit depends on $x$
    only through $\hat u^\top x - c$.

    Parameters
    ----------
    model : mlm_book.probe.ProbeModel
        A fitted two-class probe with a non-zero weight vector.

    Returns
    -------
    direction : numpy.ndarray, shape (d,)
    centre : float

    Raises
    ------
    TypeError
        If ``model`` is not a ``ProbeModel``.
    ValueError
        If it has more than two classes or its weights are all zero (an intercept-only probe).

    Examples
    --------
    The class depends on the first feature only, so the normal is the first axis and the training mean
    sits at 1 on it:

    >>> x = np.array([[0.0, 5.0], [0.0, 1.0], [2.0, 5.0], [2.0, 1.0]]); y = np.array([0, 0, 1, 1])
    >>> u, c = sense_direction(probe.fit_probe(x, y))
    >>> np.round(u, 6).tolist(), round(c, 6)
    ([1.0, 0.0], 1.0)
    """
    check_instance(model, "model", probe.ProbeModel)
    if model.classes.size != 2:
        raise ValueError(f"model must be a two-class probe, got {model.classes.size} classes")
    u = np.where(model.standardizer.active, model.weights[:, 0] / model.standardizer.scale, 0.0)
    norm = float(np.linalg.norm(u))
    if norm == 0.0:
        raise ValueError("model must have a non-zero weight vector (it is intercept-only)")
    u = u / norm
    return u, float(u @ model.standardizer.mean)


def ablate(stream, rows, direction, centre: float, along=None) -> np.ndarray:
    r"""Set the stream's coordinate along ``direction`` to ``centre`` at ``rows``; or displace by it along ``along``.

    At each row $x \mapsto x - (\hat u^\top x - c)\,\hat s$ with $\hat s = \hat u$ by default (the
    coordinate along $\hat u$ becomes $c$: mean ablation of one direction). With another unit vector
    ``along`` each row moves by exactly the same amount, in that direction instead (the random control).
    Other rows are unchanged; a new array is returned.

    Parameters
    ----------
    stream : numpy.ndarray, shape (N, d)
    rows : array_like of int or bool, or slice
        Row indices, a boolean mask of length ``N``, or a slice (``slice(None)``: every row).
    direction : array_like, shape (d,)
        A unit vector $\hat u$.
    centre : float
        The coordinate $c$ given to the rows.
    along : array_like, shape (d,), optional
        A unit vector $\hat s$ to move along instead.

    Returns
    -------
    numpy.ndarray, shape (N, d)

    Raises
    ------
    TypeError
        If an argument is of the wrong kind.
    ValueError
        If the shapes disagree, ``direction`` or ``along`` is not of unit norm (to 1e-9), or a row is
        out of range.

    Examples
    --------
    >>> x = np.array([[1.0, 2.0], [3.0, 4.0]])
    >>> ablate(x, [1], [1.0, 0.0], 0.5).tolist()
    [[1.0, 2.0], [0.5, 4.0]]
    >>> ablate(x, [1], [1.0, 0.0], 0.5, along=[0.0, 1.0]).tolist()      # moved by 2.5, along the other axis
    [[1.0, 2.0], [3.0, 1.5]]
    """
    x = as_float_array(stream, "stream", ndim=2)
    d = x.shape[1]
    vectors = []
    for name, value in (("direction", direction), ("along", direction if along is None else along)):
        v = as_float_array(value, name, ndim=1)
        if v.shape != (d,):
            raise ValueError(f"{name} must have the stream's width {d}, got shape {v.shape}")
        if abs(float(np.linalg.norm(v)) - 1.0) > 1e-9:
            raise ValueError(f"{name} must be a unit vector, got norm {float(np.linalg.norm(v)):.6g}")
        vectors.append(v)
    u, s = vectors
    centre = check_real(centre, "centre")
    if isinstance(rows, slice):
        rows = np.arange(x.shape[0])[rows]
    try:
        index = np.asarray(rows)
    except (TypeError, ValueError) as error:
        raise TypeError(f"rows must be row indices, a boolean mask or a slice, got a ragged "
                        f"{type(rows).__name__}") from error
    if index.dtype == bool:
        if index.shape != (x.shape[0],):
            raise ValueError(f"rows as a mask must have one entry per row of stream ({x.shape[0]})")
        index = np.flatnonzero(index)
    index = as_int_array(index, "rows", ndim=1)
    if index.size and (index.min() < 0 or index.max() >= x.shape[0]):
        raise ValueError(f"rows must hold row indices of stream, in [0, {x.shape[0]})")
    out = x.copy()
    out[index] -= np.outer(x[index] @ u - centre, s)
    return out


def neighbour_positions(tokens, word: int) -> tuple[np.ndarray, np.ndarray]:
    r"""Positions next to an occurrence of ``word`` that do not hold ``word`` themselves, in reading order.

    Position $j$ of sequence $b$ is returned once when ``tokens[b, j - 1] == word`` or
    ``tokens[b, j + 1] == word``, and ``tokens[b, j] != word``.

    Parameters
    ----------
    tokens : array_like of int, shape (B, n)
    word : int
        A token id.

    Returns
    -------
    sequence, position : numpy.ndarray of int, each (m,)

    Raises
    ------
    TypeError
        If ``tokens`` or ``word`` does not hold integers.
    ValueError
        If ``tokens`` is not 2-D or holds negative ids.

    Examples
    --------
    >>> b, j = neighbour_positions([[7, 24, 3, 24, 24, 1], [24, 0, 0, 0, 0, 0]], 24)
    >>> list(zip(b.tolist(), j.tolist()))
    [(0, 0), (0, 2), (0, 5), (1, 1)]
    """
    x = as_int_array(tokens, "tokens", ndim=2)
    if x.size and x.min() < 0:
        raise ValueError("tokens must hold non-negative ids")
    if isinstance(word, bool) or not isinstance(word, (int, np.integer)):
        raise TypeError(f"word must be an integer token id, got {type(word).__name__}")
    is_word = x == word
    near = np.zeros_like(is_word)
    near[:, 1:] |= is_word[:, :-1]
    near[:, :-1] |= is_word[:, 1:]
    return np.nonzero(near & ~is_word)


def _cluster_se(values: np.ndarray, groups: np.ndarray) -> float:
    """Standard error of the mean of ``values`` with ``groups`` (sequences) as the independent units."""
    mean = values.mean()
    _, inverse = np.unique(groups, return_inverse=True)
    sums = np.bincount(inverse, weights=values)
    counts = np.bincount(inverse)
    k = sums.size
    return float(np.sqrt(((sums - mean * counts) ** 2).sum() * k / (k - 1)) / values.size)


def _causal_encoder(setup: hmm_encoder.HMMEncoderSetup, splits: SplitConfig, draws: int, ablation_seed: int,
                    ablation_layer: int, resume_check: int) -> dict:
    """Every number of the causal test on the HMM encoder of ``setup``."""
    from mlm_book.channel import exact_posterior
    from mlm_book.scoring import cross_entropy, kl_divergence

    hmm = default_hmm()
    seed = setup.training.seed
    result = hmm_encoder.trained_encoder(setup)
    config, params = result.encoder, _float64(result.params)
    train, test = hmm_split("train", splits), hmm_split("test", splits)
    w, n = hmm.shared_token, test.tokens.shape[1]

    # the probes: chapter 5's, on the float64 streams of the clean splits
    def occurrences(split):
        streams = _split_streams(params, config, split.tokens)
        mask = (split.tokens == w).ravel()
        senses = (split.states.ravel()[mask] == hmm.sense_states[1]).astype(np.int64)
        return streams, mask, senses

    train_streams, train_mask, train_senses = occurrences(train)
    test_streams, test_mask, test_senses = occurrences(test)
    layer1 = probe.fit_probe(train_streams[1][train_mask], train_senses)
    layer2 = probe.fit_probe(train_streams[2][train_mask], train_senses)
    u, centre = sense_direction(layer1)
    rng = np.random.default_rng([ablation_seed, seed])
    randoms = rng.standard_normal((draws, config.d_model))
    randoms /= np.linalg.norm(randoms, axis=1, keepdims=True)

    def layer2_accuracy(stream):
        # block 2 only, at the occurrences of w: the probe reads the stream before the final LayerNorm
        out, _ = layers.block_forward(stream, params, f"blocks.{ablation_layer}.", config.n_heads,
                                      test.tokens.shape, config.ln_eps, np.flatnonzero(test_mask))
        return float(np.mean(layer2.predict(out) == test_senses))

    clean1 = test_streams[1]
    probe2_ablated = layer2_accuracy(ablate(clean1, test_mask, u, centre))
    # diagnostic: a layer-1 probe retrained on the ablated vectors (is the sense gone, or only that direction?)
    retrained = probe.fit_and_score(ablate(train_streams[1][train_mask], slice(None), u, centre), train_senses,
                                    ablate(clean1[test_mask], slice(None), u, centre), test_senses).accuracy
    probe2_random = float(np.mean([layer2_accuracy(ablate(clean1, test_mask, u, centre, along=s)) for s in randoms]))

    # the measured positions: a [MASK] at each neighbour of w in its own copy of its clean test sequence
    sequence, position = neighbour_positions(test.tokens, w)
    shown = test.tokens[sequence].copy()
    shown[np.arange(sequence.size), position] = config.mask_id
    rows = np.arange(sequence.size) * n + position
    exact = exact_posterior(hmm, setup.channel(), shown)[np.arange(sequence.size), position]
    stream = stream_at(params, config, shown, ablation_layer)
    base_logits = _resume(params, config, shown, stream, ablation_layer, rows)
    # the resumed pass against the encoder's own forward pass, on the first RESUME_CHECK copies (the
    # identity is per copy; the encoder's full pass over all of them would cost more than the test itself)
    check = min(resume_check, sequence.size)
    full = enc.logits(params, config, shown[:check])[np.arange(check), position[:check]]
    resume_gap = float(np.abs(base_logits[:check] - full).max())

    def proba(z):
        z = z - z.max(axis=1, keepdims=True)
        q = np.exp(z)
        return q / q.sum(axis=1, keepdims=True)

    q0 = proba(base_logits)
    ce0 = cross_entropy(exact, q0)
    at_w = (shown == w).ravel()

    def effect(modified):
        q = proba(_resume(params, config, shown, modified, ablation_layer, rows))
        change = cross_entropy(exact, q) - ce0
        return float(kl_divergence(q0, q).mean()), float(change.mean()), _cluster_se(change, sequence)

    kl_sense, ce_sense, ce_se = effect(ablate(stream, at_w, u, centre))
    random_effects = [effect(ablate(stream, at_w, u, centre, along=s)) for s in randoms]
    # diagnostic: every coordinate of w's layer-1 vector set to the training occurrences' mean
    whole = stream.copy()
    whole[at_w] = layer1.standardizer.mean
    kl_whole, ce_whole, _ = effect(whole)
    return {"resume_gap": resume_gap, "kl_sense": kl_sense, "ce_sense": ce_sense, "ce_sense_se": ce_se,
            "kl_random": [e[0] for e in random_effects], "ce_random": [e[1] for e in random_effects],
            "kl_exact": float(kl_divergence(exact, q0).mean()),
            "displacement": float(np.abs(stream[at_w] @ u - centre).mean()),
            "probe1": float(np.mean(layer1.predict(test_streams[1][test_mask]) == test_senses)),
            "probe2": float(np.mean(layer2.predict(test_streams[2][test_mask]) == test_senses)),
            "probe2_ablated": probe2_ablated, "probe2_random": probe2_random, "probe1_retrained": retrained,
            "kl_whole": kl_whole, "ce_whole": ce_whole,
            "n_positions": int(sequence.size), "n_sequences": int(np.unique(sequence).size)}


@dataclass(frozen=True)
class CausalTestSetup:
    """The causal test of some HMM encoders: the encoders, the splits and the protocol.

    Attributes
    ----------
    encoders : tuple of HMMEncoderSetup
        The encoders tested (the book's at each of its seeds, the book's first); two blocks at least.
    splits : SplitConfig
        The probe splits (`SPLITS` in the book).
    draws, ablation_seed, layer, resume_check : int
        `ABLATION_DRAWS`, `ABLATION_SEED`, `ABLATION_LAYER` and `RESUME_CHECK` in the book.

    Examples
    --------
    >>> len(CAUSAL_TEST.encoders), CAUSAL_TEST.layer
    (5, 1)

    >>> from mlm_book.artefacts.hmm_encoder import HMMEncoderSetup
    >>> CausalTestSetup(encoders=(HMMEncoderSetup(),)).draws
    8
    """

    encoders: tuple
    splits: SplitConfig = SPLITS
    draws: int = ABLATION_DRAWS
    ablation_seed: int = ABLATION_SEED
    layer: int = ABLATION_LAYER
    resume_check: int = RESUME_CHECK

    def __post_init__(self):
        _check_encoders(self.encoders, hmm_encoder.HMMEncoderSetup)
        check_instance(self.splits, "splits", SplitConfig)
        for name in ("draws", "resume_check"):
            check_positive_int(getattr(self, name), name)
        check_positive_int(self.ablation_seed, "ablation_seed", minimum=0)
        layer = check_positive_int(self.layer, "layer")
        if any(layer >= encoder.encoder.n_blocks for encoder in self.encoders):
            raise ValueError(f"layer must leave a block after it in every encoder, got {layer}")


CAUSAL_TEST = CausalTestSetup(tuple(hmm_encoder.seed_setup(seed) for seed in hmm_encoder.SEEDS))
"""The book's causal test: the HMM encoder at each of its five seeds, on the book's splits."""


def _causal_entry(setup: CausalTestSetup) -> tuple:
    return "causal-test", asdict(check_instance(setup, "setup", CausalTestSetup)), \
        [artefacts.key_source("causal-test")]


def causal_test(setup: CausalTestSetup = CAUSAL_TEST) -> tuple[dict, dict]:
    """The run of ``setup`` (from the store; measured on a miss): ``(arrays, counts)``.

    ``arrays`` holds one row per encoder of every number the test measures (chapter 11's
    ``CausalTest`` names them); ``counts``: ``n_positions`` and ``n_sequences``, the measured positions
    and the test sequences they come from.

    Raises
    ------
    TypeError
        If ``setup`` is not a `CausalTestSetup`.
    """
    name, key, producers = _causal_entry(setup)

    def build():
        with runtime.blas_threads(1):
            rows = [_causal_encoder(encoder, setup.splits, setup.draws, setup.ablation_seed, setup.layer,
                                    setup.resume_check) for encoder in setup.encoders]
        counts = {name: rows[0][name] for name in ("n_positions", "n_sequences")}
        return {name: np.array([row[name] for row in rows]) for name in rows[0] if name not in counts}, counts

    return cache.cached(name, key, producers, build)


def causal_test_built(setup: CausalTestSetup) -> bool:
    """Whether the store holds the run of ``setup`` (a damaged entry counts as absent).

    Raises
    ------
    TypeError
        If ``setup`` is not a `CausalTestSetup`.

    Examples
    --------
    The book's run (the answer depends on what the store holds; asking builds nothing):

    >>> isinstance(causal_test_built(CAUSAL_TEST), bool)
    True
    """
    return cache.load(cache.entry_for(*_causal_entry(setup))) is not None


def _tiny_hmm_encoders() -> tuple:
    tiny = hmm_encoder.tiny_setup()
    two_blocks = replace(tiny, encoder=replace(tiny.encoder, n_blocks=2))     # the causal test needs a block after it
    return (two_blocks, replace(two_blocks, training=replace(two_blocks.training, seed=1)))


def _tiny_splits() -> SplitConfig:
    return replace(SPLITS, n_train=40, n_test=40, length=hmm_encoder.tiny_setup().length)


# ----------------------------------------------------------------------------- the declaration (not keyed)
#: Seconds of each run on one core, measured on 2026-12-03: the control tasks fit 18 probes on 36,000 tokens per
#: encoder; the stride sweep 35 small five-fold probes per encoder; the causal test reads 20,000 masked copies.
_CONTROL_SECONDS, _STRIDE_SECONDS, _CAUSAL_SECONDS = 40.0, 5.0, 63.0

ARTEFACT_KINDS = (
    artefacts.Kind(
        name="control-tasks", chapter=11,
        summary="chapter 11's control tasks on the HMM encoder's vectors, 5 seeds in one run",
        modules=("mlm_book.artefacts.probe_caveats", "mlm_book.hmm_splits", "mlm_book.probe"), after=("hmm-encoder",),
        setups=lambda: (CONTROL_TASKS,), is_built=control_tasks_built, build=control_tasks,
        cost=lambda setup: _CONTROL_SECONDS * len(setup.encoders) / 5,
        describe=lambda setup: f"{len(setup.encoders)} seeds",
        tiny=lambda: ControlTasksSetup(_tiny_hmm_encoders(), _tiny_splits())),
    artefacts.Kind(
        name="stride-leak", chapter=11,
        summary="chapter 11's position leak of the filing encoder's layer 0 at six strides, 5 seeds in one run",
        modules=("mlm_book.artefacts.probe_caveats", "mlm_book.probe"), after=("filing-encoder",),
        setups=lambda: (STRIDE_LEAK,), is_built=stride_leak_built, build=stride_leak,
        cost=lambda setup: _STRIDE_SECONDS * len(setup.encoders) / 5,
        describe=lambda setup: f"{len(setup.encoders)} seeds",
        tiny=lambda: StrideLeakSetup((fe.tiny_setup(), replace(fe.tiny_setup(), seed=1)), (1, 16))),
    artefacts.Kind(
        name="causal-test", chapter=11,
        summary="chapter 11's causal test: the sense direction removed from the HMM encoder, 5 seeds in one run",
        modules=("mlm_book.artefacts.probe_caveats", "mlm_book.hmm_splits", "mlm_book.probe", "mlm_book.scoring"),
        after=("hmm-encoder",),
        setups=lambda: (CAUSAL_TEST,), is_built=causal_test_built, build=causal_test,
        cost=lambda setup: _CAUSAL_SECONDS * len(setup.encoders) / 5,
        describe=lambda setup: f"{len(setup.encoders)} seeds",
        tiny=lambda: CausalTestSetup(_tiny_hmm_encoders(), _tiny_splits(), draws=2, resume_check=4)),
)
