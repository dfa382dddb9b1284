r"""What several chapters read off the trained HMM encoder: its hidden states, its vectors of the splits, its layer table and its held-out evaluation.

The encoder itself (setup, seeds, training) is the artefact
[`mlm_book.artefacts.hmm_encoder`][mlm_book.artefacts.hmm_encoder]; here is what the chapters and
the lab read off the book's encoder:

* [`hidden_states`][mlm_book.readings.hmm_encoder.hidden_states] and
  [`token_table`][mlm_book.readings.hmm_encoder.token_table] (chapters 1, 4 and 5);
* [`split_vectors`][mlm_book.readings.hmm_encoder.split_vectors]: the encoder's vectors of the
  probe/geometry splits ([`mlm_book.hmm_splits`][mlm_book.hmm_splits]) with the sense of each
  occurrence of $w$ and its exact posterior. Layer 0 is the encoder's input $E[x_i] + P_i$ at
  the occurrence's own position; layer $\ell \in \{1, 2\}$ is the residual stream after block
  $\ell$ (layer 2 is taken before the final LayerNorm). Chapters 4 and 5 and the lab read them;
* [`geometry_table`][mlm_book.readings.hmm_encoder.geometry_table]: Definition 3's measures of
  $w$'s test occurrences at each layer, with the layer's anisotropy baseline (exact over all
  distinct pairs of the test split's token vectors, any word) and the MEV of uniformly drawn
  token vectors, as many as $w$ has occurrences, against the isotropic reference at that size:
  chapter 4's layer table, which the lab's clouds copy;
* [`evaluation`][mlm_book.readings.hmm_encoder.evaluation]: on the selected positions of
  held-out sequences, the cross-entropy of the exact posterior and of the encoder, the mean
  KL(exact ‖ encoder) overall and by what the position shows, the exact entropy, and Theorem 2
  (ii) read off the encoder at kept tokens (chapter 2's numbers, which chapter 7 and the lab
  quote);
* [`encoder_conditionals`][mlm_book.readings.hmm_encoder.encoder_conditionals]: the encoder as a
  family of conditionals (``[MASK]`` at the queried position) for
  [`mlm_book.compat`][mlm_book.compat]'s four-cycle test, and
  [`four_cycle_summary`][mlm_book.readings.hmm_encoder.four_cycle_summary]: the protocol of
  [`mlm_book.four_cycles`][mlm_book.four_cycles] on it (chapter 3 and the lab).
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass, field
from functools import partial

import numpy as np

from mlm_book import four_cycles, geometry
from mlm_book import hmm as hmm_module
from mlm_book.artefacts import hmm_encoder as artefact
from mlm_book.artefacts.hmm_encoder import SETUP, HMMEncoderSetup
from mlm_book.channel import corrupt, exact_posterior, optimum
from mlm_book.hmm import default_hmm, sense_posteriors
from mlm_book.hmm_splits import SPLITS, SplitConfig, hmm_split
from mlm_book.nn import encoder as enc
from mlm_book.scoring import cross_entropy, entropy, kl_divergence
from mlm_book.validation import (
    as_float_array,
    as_int_array,
    check_choice,
    check_instance,
    check_positive_int,
    check_probability,
    check_real,
    check_tokens,
)

__all__ = ["seed_four_cycles", "hidden_states", "token_table", "LAYER_NAMES", "SplitVectors", "split_vectors", "GeometryRow",
           "GeometryTable", "geometry_table", "EncoderEvaluation", "evaluation", "encoder_conditionals",
           "FourCycleSummary", "four_cycle_summary"]


def hidden_states(tokens) -> list[np.ndarray]:
    """Hidden states of the book's trained HMM encoder for clean token sequences.

    Parameters
    ----------
    tokens : array_like of int, shape (B, n)
        Token ids in ``[0, 25)`` (``n`` at most 24).

    Returns
    -------
    list of ndarray, each (B, n, 32), float64
        Index 0: the input $E[x] + P$; index 1, 2: the residual stream after block 1, 2
        (the last one before the final LayerNorm).

    Raises
    ------
    TypeError
        If ``tokens`` does not hold integers.
    ValueError
        If ``tokens`` is not 2-D, empty, longer than 24 or holds ids outside ``[0, 26)`` (the
        25 tokens and the input-only [MASK]).

    Examples
    --------
    >>> [h.shape for h in hidden_states([[0, 1, 2]])]  # doctest: +BOOK
    [(1, 3, 32), (1, 3, 32), (1, 3, 32)]
    """
    # checked before the encoder is loaded, with the encoder's own rule (ids up to [MASK])
    tokens = check_tokens(tokens, "tokens", SETUP.encoder.input_vocab_size, ndim=2)
    if tokens.shape[1] > SETUP.encoder.length:
        raise ValueError(f"tokens has length {tokens.shape[1]}, longer than the encoder's {SETUP.encoder.length}")
    result = artefact.trained_encoder()
    return enc.hidden_states(result.params, result.encoder, tokens)


def token_table() -> np.ndarray:
    """The trained token table $E$ of the 25 real tokens (the [MASK] row excluded), ``(25, 32)`` float64.

    Examples
    --------
    >>> table = token_table()  # doctest: +BOOK
    >>> table.shape, table.dtype
    ((25, 32), dtype('float64'))
    """
    result = artefact.trained_encoder()
    return np.asarray(result.params["E"][:result.encoder.vocab_size], dtype=np.float64)


# --------------------------------------------------------------------------- the splits' vectors
#: What each layer's vector is.
LAYER_NAMES = (
    "layer 0: input E[x] + P at the occurrence's position",
    "layer 1: residual stream after block 1",
    "layer 2: residual stream after block 2 (before the final LayerNorm)",
)


def _check_name(name) -> str:
    if not isinstance(name, str) or not name:
        raise TypeError(f"name must be a non-empty str (e.g. 'test'), got {name!r:.40}")
    return name


@dataclass(frozen=True)
class SplitVectors:
    r"""The encoder's vectors of one split, and what is known about each occurrence of $w$.

    Attributes
    ----------
    name : str
        ``"train"`` or ``"test"``.
    layers : tuple of numpy.ndarray
        ``layers[l]`` has shape (n_sequences * length, d): every token's vector at layer ``l``.
    occurrences : numpy.ndarray of bool, shape (n_sequences * length,)
        Where the token is $w$.
    positions : numpy.ndarray of int, shape (k,)
        Position of each occurrence of $w$ in its sequence.
    senses : numpy.ndarray of int, shape (k,)
        True (sampled) sense of each occurrence: 0 for regime a's heavy state, 1 for regime b's.
    posterior : numpy.ndarray, shape (k,)
        Exact $P(\text{sense } 1 \mid x)$ by forward–backward.
    token_table : numpy.ndarray, shape (d,)
        The encoder's token-table row $E[w]$.

    Raises
    ------
    TypeError, ValueError
        If ``layers`` is not a non-empty tuple of finite arrays of one shape (N, d),
        ``occurrences`` not N booleans, ``positions``/``senses``/``posterior`` not one entry per
        occurrence (non-negative positions, senses 0 or 1, posteriors in [0, 1]) or
        ``token_table`` not d finite numbers.

    Examples
    --------
    >>> layer = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])
    >>> v = SplitVectors(name="toy", layers=(layer, 2 * layer), occurrences=np.array([True, False, True]),
    ...                  positions=np.array([0, 2]), senses=np.array([0, 1]), posterior=np.array([0.1, 0.8]),
    ...                  token_table=np.array([1.0, 0.0]))
    >>> v.n_occurrences, v.word(1).tolist()
    (2, [[2.0, 0.0], [2.0, 2.0]])
    """

    name: str
    layers: tuple
    occurrences: np.ndarray
    positions: np.ndarray
    senses: np.ndarray
    posterior: np.ndarray
    token_table: np.ndarray

    def __post_init__(self):
        _check_name(self.name)
        if not isinstance(self.layers, tuple) or not self.layers:
            raise TypeError(f"layers must be a non-empty tuple of arrays (n_tokens, d), got {type(self.layers).__name__}")
        shape = as_float_array(self.layers[0], "layers", ndim=2).shape
        for layer in self.layers[1:]:
            if as_float_array(layer, "layers", ndim=2).shape != shape:
                raise ValueError(f"layers must all have the shape of layer 0 {shape}, got {np.shape(layer)}")
        try:
            occurrences = np.asarray(self.occurrences)
        except (TypeError, ValueError):  # ragged
            occurrences = None
        if occurrences is None or occurrences.dtype != bool or occurrences.shape != shape[:1]:
            raise TypeError(f"occurrences must be a boolean array of shape ({shape[0]},), one per token vector")
        k = int(occurrences.sum())
        positions = as_int_array(self.positions, "positions", ndim=1)
        senses = as_int_array(self.senses, "senses", ndim=1)
        posterior = as_float_array(self.posterior, "posterior", ndim=1)
        for field_name, value in (("positions", positions), ("senses", senses), ("posterior", posterior)):
            if value.shape != (k,):
                raise ValueError(f"{field_name} must have one entry per occurrence ({k}), got shape {value.shape}")
        if k and positions.min() < 0:
            raise ValueError(f"positions must be non-negative, got {positions.min()}")
        if k and not np.all((senses == 0) | (senses == 1)):
            raise ValueError("senses must be 0 (sense a) or 1 (sense b)")
        if k and (posterior.min() < 0 or posterior.max() > 1):
            raise ValueError("posterior must hold probabilities in [0, 1]")
        if as_float_array(self.token_table, "token_table", ndim=1).shape != shape[1:]:
            raise ValueError(f"token_table must have the width of the layers ({shape[1]}), "
                             f"got shape {np.shape(self.token_table)}")

    def word(self, layer: int) -> np.ndarray:
        """Vectors of the occurrences of $w$ at ``layer``, shape (k, d)."""
        return self.layers[layer][self.occurrences]

    @property
    def n_occurrences(self) -> int:
        return int(self.occurrences.sum())


def split_vectors(name: str) -> SplitVectors:
    """Hidden states of the trained HMM encoder on a split of `SPLITS`, with sense labels and posteriors.

    Parameters
    ----------
    name : {"train", "test"}

    Returns
    -------
    SplitVectors
        ``len(layers) == 3`` (layers 0, 1, 2), each ``(n_sequences * length, 32)``.
    """
    name = check_choice(name, "name", ("train", "test"))
    return _split_vectors(name)


@functools.cache
def _split_vectors(name: str) -> SplitVectors:
    """The memoised body of `split_vectors`, which checks the arguments before the cache."""
    split = hmm_split(name)
    hmm = default_hmm()
    hidden = hidden_states(split.tokens)
    layers = tuple(np.asarray(h, dtype=np.float64).reshape(-1, np.shape(h)[-1]) for h in hidden)
    mask = split.tokens == hmm.shared_token
    positions = np.broadcast_to(np.arange(SPLITS.length), split.tokens.shape)[mask]
    senses = (split.states[mask] == hmm.sense_states[1]).astype(np.int64)
    posterior = sense_posteriors(hmm, split.tokens)[mask][:, 1]
    table = np.asarray(token_table(), dtype=np.float64)[hmm.shared_token]
    return SplitVectors(name=name, layers=layers, occurrences=mask.ravel(), positions=positions,
                        senses=senses, posterior=posterior, token_table=table)


@dataclass(frozen=True)
class GeometryRow:
    """Definition 3 at one layer (see [`mlm_book.geometry.CloudGeometry`][mlm_book.geometry.CloudGeometry]).

    Raises
    ------
    TypeError, ValueError
        If ``layer`` or ``distinct_vectors`` is not a non-negative integer, ``vector`` not a
        string or ``geometry`` not a `CloudGeometry`.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> pool = rng.standard_normal((200, 4))
    >>> row = GeometryRow(layer=0, vector="layer 0: a toy cloud",
    ...                   geometry=geometry.describe_cloud(pool[:20] + 3.0, pool, rng, repeats=5), distinct_vectors=20)
    >>> row.geometry.n_occurrences, round(row.geometry.self_similarity, 2)
    (20, 0.93)
    """

    layer: int
    vector: str
    geometry: geometry.CloudGeometry
    distinct_vectors: int

    def __post_init__(self):
        check_positive_int(self.layer, "layer", minimum=0)
        check_instance(self.vector, "vector", str)
        check_instance(self.geometry, "geometry", geometry.CloudGeometry)
        check_positive_int(self.distinct_vectors, "distinct_vectors", minimum=0)


@dataclass(frozen=True)
class GeometryTable:
    """The layer table for $w$ on the HMM encoder's test occurrences.

    Raises
    ------
    TypeError, ValueError
        If ``config`` is not a `SplitConfig`, ``rows`` not a non-empty tuple of `GeometryRow`
        or a count not a non-negative integer.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> pool = rng.standard_normal((200, 4))
    >>> row = GeometryRow(layer=0, vector="layer 0: a toy cloud",
    ...                   geometry=geometry.describe_cloud(pool[:20] + 3.0, pool, rng, repeats=5), distinct_vectors=20)
    >>> table = GeometryTable(config=SPLITS, rows=(row,), n_occurrences=20, n_tokens=200)
    >>> table.column("mev") == (row.geometry.mev,)
    True
    """

    config: SplitConfig
    rows: tuple
    n_occurrences: int
    n_tokens: int

    def __post_init__(self):
        check_instance(self.config, "config", SplitConfig)
        if not isinstance(self.rows, tuple) or not self.rows:
            raise TypeError(f"rows must be a non-empty tuple of GeometryRow, got {type(self.rows).__name__}")
        for row in self.rows:
            check_instance(row, "rows", GeometryRow)
        check_positive_int(self.n_occurrences, "n_occurrences", minimum=0)
        check_positive_int(self.n_tokens, "n_tokens", minimum=0)

    def column(self, field: str) -> tuple[float, ...]:
        """One measure across layers, e.g. ``column("adjusted")``."""
        return tuple(float(getattr(row.geometry, field)) for row in self.rows)


@functools.cache
def geometry_table() -> GeometryTable:
    """Definition 3's measures of $w$ at layers 0, 1, 2 on the test split (memoised)."""
    vectors = split_vectors("test")
    rng = np.random.default_rng(SPLITS.geometry_seed)
    rows = []
    for layer, pool in enumerate(vectors.layers):
        word = vectors.word(layer)
        rows.append(GeometryRow(layer=layer, vector=LAYER_NAMES[layer],
                                geometry=geometry.describe_cloud(word, pool, rng),
                                distinct_vectors=int(np.unique(word, axis=0).shape[0])))
    return GeometryTable(config=SPLITS, rows=tuple(rows), n_occurrences=vectors.n_occurrences,
                         n_tokens=int(vectors.layers[0].shape[0]))


# --------------------------------------------------------------------------- the held-out evaluation
#: Display kinds of [`mlm_book.channel.corrupt`][mlm_book.channel.corrupt].
_KINDS = {"mask": 1, "random": 2, "kept": 3}


@dataclass(frozen=True, eq=False)
class EncoderEvaluation:
    """The trained encoder against the exact posterior on held-out selected positions.

    All values in nats except probabilities.

    Attributes
    ----------
    setup : HMMEncoderSetup
    n_sequences, n_positions : int
        Held-out sequences and their selected positions.
    counts : dict
        Selected positions by display kind (``mask``, ``random``, ``kept``).
    exact_ce, encoder_ce : float
        Mean $-\\log$ probability of the true (clean) token, under the exact posterior and
        under the encoder: one sampled target per position.
    exact_ce_se, gap_se : float
        Standard errors of ``exact_ce`` (per-position spread of $-\\log p - H$) and of the
        paired difference ``encoder_ce - exact_ce``.
    mean_entropy : float
        Mean entropy of the exact posterior.
    mean_kl : float
        Mean KL(exact ‖ encoder), distribution against distribution.
    kl_by_kind : dict
        Mean KL by display kind.
    theorem1_gap : float
        Largest $|\\mathrm{CE}(p, q) - H(p) - \\mathrm{KL}(p \\| q)|$ over the positions
        (Theorem 1 per position, on the encoder's outputs).
    kept_encoder, kept_plugin, kept_mask_guess, kept_exact : float
        At kept positions, the mean probability on the visible token: the encoder's; Theorem
        2 (ii) applied to the encoder's own guess with [MASK] there; that guess alone; and
        the exact posterior's.

    Raises
    ------
    TypeError
        If ``setup`` is not an [`HMMEncoderSetup`][mlm_book.artefacts.hmm_encoder.HMMEncoderSetup],
        ``counts`` or ``kl_by_kind`` not a dict, or a number of the wrong kind.
    ValueError
        If a count is not positive (``n_sequences``, ``n_positions``) or negative (``counts``),
        a cross-entropy, entropy, KL or standard error is negative or not finite (the mean
        entropy must be positive), or a kept-token mean is not a probability.

    Examples
    --------
    >>> ev = evaluation()  # doctest: +BOOK
    >>> ev.n_sequences, ev.n_positions == sum(ev.counts.values())
    (400, True)
    >>> bool(0 < ev.mean_kl < ev.mean_entropy)
    True
    """

    setup: HMMEncoderSetup = field(repr=False)
    n_sequences: int
    n_positions: int
    counts: dict
    exact_ce: float
    encoder_ce: float
    exact_ce_se: float
    gap_se: float
    mean_entropy: float
    mean_kl: float
    kl_by_kind: dict
    theorem1_gap: float
    kept_encoder: float
    kept_plugin: float
    kept_mask_guess: float
    kept_exact: float

    def __post_init__(self):
        check_instance(self.setup, "setup", HMMEncoderSetup)
        for name in ("n_sequences", "n_positions"):
            check_positive_int(getattr(self, name), name)
        for name in ("counts", "kl_by_kind"):
            check_instance(getattr(self, name), name, dict)
        for count in self.counts.values():
            check_positive_int(count, "counts", minimum=0)
        for value in self.kl_by_kind.values():
            check_real(value, "kl_by_kind", low=0.0)
        for name in ("exact_ce", "encoder_ce", "exact_ce_se", "gap_se", "mean_kl", "theorem1_gap"):
            check_real(getattr(self, name), name, low=0.0)
        check_real(self.mean_entropy, "mean_entropy", low=0.0)
        if self.mean_entropy == 0:
            raise ValueError("mean_entropy must be > 0 (kl_share divides by it)")
        for name in ("kept_encoder", "kept_plugin", "kept_mask_guess", "kept_exact"):
            check_probability(getattr(self, name), name)

    @property
    def ce_gap(self) -> float:
        """Sampled cross-entropy gap, encoder minus exact."""
        return self.encoder_ce - self.exact_ce

    @property
    def kl_share(self) -> float:
        """Mean KL as a fraction of the mean exact entropy."""
        return self.mean_kl / self.mean_entropy

    def table(self) -> str:
        """A Markdown table of the numbers."""
        rows = [("selected positions", f"{self.n_positions} (of {self.n_sequences} sequences)"),
                ("cross-entropy, exact posterior", f"{self.exact_ce:.3f} nats"),
                ("cross-entropy, encoder", f"{self.encoder_ce:.3f} nats"),
                ("sampled gap", f"{self.ce_gap:.3f} ± {self.gap_se:.3f} nats"),
                ("mean KL(exact ‖ encoder)", f"{self.mean_kl:.3f} nats"),
                ("mean exact entropy", f"{self.mean_entropy:.3f} nats"),
                ("KL / entropy", f"{100 * self.kl_share:.1f} %")]
        rows += [(f"mean KL at {kind} ({self.counts[kind]} positions)", f"{value:.3f} nats")
                 for kind, value in self.kl_by_kind.items()]
        rows += [("kept token: encoder's probability", f"{self.kept_encoder:.3f}"),
                 ("kept token: Thm 2 (ii) on the encoder's [MASK] guess", f"{self.kept_plugin:.3f}"),
                 ("kept token: the [MASK] guess alone", f"{self.kept_mask_guess:.3f}"),
                 ("kept token: exact posterior", f"{self.kept_exact:.3f}")]
        return "\n".join(["| quantity | value |", "|---|---|"] + [f"| {a} | {b} |" for a, b in rows])


def evaluation(setup: HMMEncoderSetup = SETUP) -> EncoderEvaluation:
    """Evaluate the trained encoder on ``setup.eval_sequences`` held-out corrupted sequences.

    Returns
    -------
    EncoderEvaluation
    """
    setup = check_instance(setup, "setup", HMMEncoderSetup)
    return _evaluation(setup)


@functools.cache
def _evaluation(setup: HMMEncoderSetup = SETUP) -> EncoderEvaluation:
    """The memoised body of `evaluation`, which checks the arguments before the cache."""
    hmm = default_hmm()
    result = artefact.trained_encoder(setup)
    config, params = result.encoder, result.params
    channel = setup.channel()
    rng = np.random.default_rng(setup.eval_seed)
    _, tokens = hmm_module.sample(hmm, setup.eval_sequences, setup.length, rng)
    batch = corrupt(channel, tokens, rng)
    selected = batch.selected
    exact = exact_posterior(hmm, channel, batch.shown)[selected]          # (N, V)
    model = enc.predict_proba(params, config, batch.shown)[selected]      # (N, V)
    targets = tokens[selected]
    kind = batch.kind[selected]
    rows = np.arange(len(targets))
    log_p = np.log(exact[rows, targets])
    log_q = np.log(model[rows, targets])
    H = entropy(exact)
    kl = kl_divergence(exact, model)
    theorem1 = float(np.max(np.abs(cross_entropy(exact, model) - H - kl)))
    n = len(targets)

    # kept positions: the encoder, its own [MASK] guess, and Theorem 2 (ii) on that guess
    kept = np.flatnonzero(kind == _KINDS["kept"])
    seq, pos = np.nonzero(selected)
    seq, pos = seq[kept], pos[kept]
    masked = batch.shown[seq].copy()
    masked[np.arange(len(kept)), pos] = config.mask_id
    guess = enc.predict_proba(params, config, masked)[np.arange(len(kept)), pos]     # (K, V)
    visible = targets[kept]
    plugin = optimum(guess, visible, channel)[np.arange(len(kept)), visible]

    return EncoderEvaluation(
        setup=setup, n_sequences=setup.eval_sequences, n_positions=n,
        counts={k: int(np.sum(kind == v)) for k, v in _KINDS.items()},
        exact_ce=float(-log_p.mean()), encoder_ce=float(-log_q.mean()),
        exact_ce_se=float(np.std(-log_p - H, ddof=1) / math.sqrt(n)),
        gap_se=float(np.std(log_p - log_q, ddof=1) / math.sqrt(n)),
        mean_entropy=float(H.mean()), mean_kl=float(kl.mean()),
        kl_by_kind={k: float(kl[kind == v].mean()) for k, v in _KINDS.items()},
        theorem1_gap=theorem1,
        kept_encoder=float(model[kept, visible].mean()), kept_plugin=float(plugin.mean()),
        kept_mask_guess=float(guess[np.arange(len(kept)), visible].mean()),
        kept_exact=float(exact[kept, visible].mean()))


# --------------------------------------------------------------------------- the encoder as conditionals
def encoder_conditionals(tokens, positions) -> np.ndarray:
    r"""The encoder as a family of conditionals: $q_i(\cdot \mid x_{-i})$ with [MASK] at $i$.

    Usable directly by [`mlm_book.compat`][mlm_book.compat] (it writes the [MASK] itself, so passing
    ``mask_id`` there as well changes nothing).

    Parameters
    ----------
    tokens : array_like of int, shape (B, n)
        Sequences; the other positions are read as shown.
    positions : array_like of int, shape (B,)
        The queried position of each row.

    Returns
    -------
    ndarray, shape (B, 25)

    Raises
    ------
    TypeError
        If ``tokens`` or ``positions`` does not hold integers.
    ValueError
        If ``tokens`` is not 2-D, empty, longer than 24 or holds ids outside ``[0, 26)`` (the
        25 tokens and [MASK]), or ``positions`` is neither one position nor one per row, or
        lies outside the sequences.

    Examples
    --------
    >>> q = encoder_conditionals([[0, 1, 2, 3], [4, 5, 6, 7]], [1, 3])  # doctest: +BOOK
    >>> q.shape, bool(np.allclose(q.sum(axis=1), 1.0))
    ((2, 25), True)
    """
    config = SETUP.encoder
    tokens = check_tokens(tokens, "tokens", config.input_vocab_size, ndim=2)
    if tokens.shape[1] > config.length:
        raise ValueError(f"tokens has length {tokens.shape[1]}, longer than the encoder's {config.length}")
    positions = as_int_array(positions, "positions", ndim=(0, 1))
    if positions.size not in (1, len(tokens)):
        raise ValueError(f"positions must hold one position or one per row of tokens ({len(tokens)}), "
                         f"got {positions.size}")
    if positions.min() < 0 or positions.max() >= tokens.shape[1]:
        raise ValueError(f"positions must lie in [0, {tokens.shape[1]}) (the length of tokens), got values from "
                         f"{positions.min()} to {positions.max()}")
    return _conditionals(SETUP, tokens, positions)


def _conditionals(setup: HMMEncoderSetup, tokens, positions) -> np.ndarray:
    result = artefact.trained_encoder(setup)
    config = result.encoder
    tokens = np.array(tokens, dtype=np.int64, copy=True)
    positions = np.broadcast_to(np.asarray(positions, dtype=np.int64), (len(tokens),))
    rows = np.arange(len(tokens))
    tokens[rows, positions] = config.mask_id
    return enc.predict_proba(result.params, config, tokens)[rows, positions]


@dataclass(frozen=True, eq=False)
class FourCycleSummary:
    """The four-cycle gaps of the encoder's conditionals and of Theorem 2's population optimum.

    Attributes
    ----------
    encoder, population : ndarray, shape (count,)
        Per-draw gaps $\\delta$ on the same draws (chapter 3's protocol).

    Raises
    ------
    TypeError
        If ``encoder`` or ``population`` is not an array of real numbers.
    ValueError
        If either is not 1-D, is empty or not finite, or their lengths differ.

    Examples
    --------
    >>> summary = FourCycleSummary(encoder=np.array([0.1, -0.4, 0.2]), population=np.array([0.0, 0.01, -0.02]))
    >>> summary.encoder_median, summary.encoder_max, summary.population_median
    (0.2, 0.4, 0.01)
    """

    encoder: np.ndarray = field(repr=False)
    population: np.ndarray = field(repr=False)

    def __post_init__(self):
        for name in ("encoder", "population"):
            gaps = as_float_array(getattr(self, name), name, ndim=1)
            if gaps.size == 0:
                raise ValueError(f"{name} must hold at least one gap")
            object.__setattr__(self, name, gaps)
        if self.encoder.shape != self.population.shape:
            raise ValueError(f"encoder and population must hold gaps of the same draws, got {self.encoder.size} "
                             f"and {self.population.size}")

    @property
    def encoder_median(self) -> float:
        return float(np.median(np.abs(self.encoder)))

    @property
    def encoder_max(self) -> float:
        return float(np.max(np.abs(self.encoder)))

    @property
    def population_median(self) -> float:
        return float(np.median(np.abs(self.population)))


def four_cycle_summary(setup: HMMEncoderSetup = SETUP) -> FourCycleSummary:
    """Chapter 3's four-cycle protocol on the encoder (query: [MASK] at i, x_j set to b, rest clean).

    Parameters
    ----------
    setup : HMMEncoderSetup, optional
        Which trained encoder (default the book's; [`seed_setup`][mlm_book.artefacts.hmm_encoder.seed_setup]
        for another training seed). The draws are the same for every encoder.
    """
    setup = check_instance(setup, "setup", HMMEncoderSetup)
    return _four_cycle_summary(setup)


@functools.cache
def seed_four_cycles() -> tuple[FourCycleSummary, ...]:
    """`four_cycle_summary` at each of [`SEEDS`][mlm_book.artefacts.hmm_encoder.SEEDS], the book's seed first
    (the same 200 draws); read by chapter 3's claim and the HMM encoder's module."""
    return tuple(four_cycle_summary(artefact.seed_setup(seed)) for seed in artefact.SEEDS)


@functools.cache
def _four_cycle_summary(setup: HMMEncoderSetup = SETUP) -> FourCycleSummary:
    """The memoised body of `four_cycle_summary`, which checks the arguments before the cache."""
    deltas = four_cycles.four_cycle_deltas(partial(_conditionals, setup), mask_id=setup.encoder.mask_id)
    families = four_cycles.exact_families()
    population = next(value for key, value in families.items() if key.startswith("population"))
    return FourCycleSummary(encoder=deltas, population=population)
