r"""Chapter 4: the geometry of the HMM encoder's vectors of the shared token $w$.

What the chapter shows, and where it comes from:

* the **probe/geometry splits** ([`SPLITS`][mlm_book.hmm_splits.SPLITS]): 1500 training and
  1500 test sequences of length 24 from the book's HMM, clean, with a fixed seed; they are
  chapter 1's splits, and chapter 5's probes use them too, so the Bayes accuracy, the geometry
  table and the probe table all describe the same test occurrences;
* the encoder's **hidden states** of those sequences
  ([`split_vectors`][mlm_book.readings.hmm_encoder.split_vectors]), read from the trained HMM
  encoder of [`mlm_book.artefacts.hmm_encoder`][mlm_book.artefacts.hmm_encoder]. Layer 0 is the
  encoder's input $E[x_i] + P_i$ at the occurrence's own position; layer $\ell \in \{1, 2\}$
  is the residual stream after block $\ell$ (layer 2 is taken before the final LayerNorm);
* the **layer table** ([`geometry_table`][mlm_book.readings.hmm_encoder.geometry_table],
  shown by `_geometry_markdown`):
  Definition 3's measures of $w$'s test occurrences at each layer, with the layer's anisotropy
  baseline (exact over all distinct pairs of the test split's token vectors, any word) and the
  MEV of uniformly drawn token vectors, as many as $w$ has occurrences, against the isotropic
  reference at that size (the lab's clouds copy it, so it is read where both can read it);
* Proposition 2 checked on the encoder's clouds ([`encoder_proposition2`][mlm_book.experiments.ch04_geometry.encoder_proposition2]) and on random
  and rank-1 matrices ([`random_proposition2`][mlm_book.experiments.ch04_geometry.random_proposition2]);
* the figure of $w$'s occurrences on their own principal axes, shaded by the exact sense
  posterior ([`plot_principal_axes`][mlm_book.experiments.ch04_geometry.plot_principal_axes]).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, replace

import numpy as np

from mlm_book import geometry
from mlm_book.artefacts import hmm_encoder
from mlm_book.hmm import default_hmm
from mlm_book.hmm_splits import SPLITS, SplitConfig, hmm_split
from mlm_book.readings.hmm_encoder import LAYER_NAMES, GeometryTable, geometry_table, split_vectors
from mlm_book.ledger import Claim, over_seeds, reported_value
from mlm_book.validation import as_float_array, as_int_array, check_bool, check_instance, check_positive_int, check_real

__all__ = [
    "LayerScale",
    "InputScale",
    "scale_diagnostics",
    "within_position_similarity",
    "s509_holds",
    "s510_holds",
    "s512_holds",
    "s520_holds",
    "SeedGeometry",
    "SeedRobustness",
    "seed_robustness",
    "robustness_statements",
    "init_scale_contrast", "contrast_robustness",
    "UNCERTAIN_SENSE",
    "SenseAxis",
    "sense_axes",
    "encoder_proposition2",
    "random_proposition2",
    "plot_principal_axes",
    "CLAIMS",
]


def _geometry_markdown(table: GeometryTable | None = None) -> str:
    """The layer table as Markdown.

    Raises
    ------
    TypeError
        If ``table`` is not a `GeometryTable` (or ``None``, the book's table).
    """
    table = geometry_table() if table is None else check_instance(table, "table", GeometryTable)
    lines = ["| layer | vector | self-similarity | MEV | baseline | adjusted | token MEV | isotropic MEV |",
             "|---|---|---|---|---|---|---|---|"]
    for row in table.rows:
        g = row.geometry
        lines.append(f"| {row.layer} | {row.vector.split(': ', 1)[1]} | {g.self_similarity:.3f} | {g.mev:.3f} | "
                     f"{g.baseline:.3f} | {g.adjusted:.3f} | {g.token_mev:.3f} | {g.isotropic_mev:.3f} |")
    return "\n".join(lines)


@dataclass(frozen=True)
class LayerScale:
    r"""Where the spread of $w$'s cloud at one layer comes from.

    Attributes
    ----------
    layer : int
    mean_norm : float
        Norm of the mean of $w$'s vectors (the shared part of the cloud).
    spread : float
        Root-mean-square distance of $w$'s vectors to that mean.
    within_position : float
        Self-similarity among the occurrences at one position, averaged over positions
        (weighted by occurrences). At layer 0 it is one: there the only variation is position.

    Raises
    ------
    TypeError, ValueError
        If ``layer`` is not a non-negative integer, a norm or spread not finite and
        non-negative, or ``within_position`` not in [-1, 1].

    Examples
    --------
    >>> LayerScale(layer=0, mean_norm=2.0, spread=0.5, within_position=1.0).within_position
    1.0
    """

    layer: int
    mean_norm: float
    spread: float
    within_position: float

    def __post_init__(self):
        check_positive_int(self.layer, "layer", minimum=0)
        check_real(self.mean_norm, "mean_norm", low=0.0)
        check_real(self.spread, "spread", low=0.0)
        check_real(self.within_position, "within_position", low=-1.0 - 1e-9, high=1.0 + 1e-9)


@dataclass(frozen=True)
class InputScale:
    r"""Sizes of the two tables that make layer 0.

    Attributes
    ----------
    token_norm : float
        $\lVert E[w] \rVert$.
    position_norm : float
        Mean $\lVert P_i \rVert$ over the positions.
    position_similarity : float
        Self-similarity of the position table's rows (near zero: nearly orthogonal directions).
    token_position_cosine : float
        Mean $\cos(E[w], P_i)$ over the positions.

    Raises
    ------
    TypeError, ValueError
        If a norm is not finite and non-negative, or a similarity or cosine not in [-1, 1].

    Examples
    --------
    >>> InputScale(token_norm=1.2, position_norm=0.4, position_similarity=0.01, token_position_cosine=-0.02).token_norm
    1.2
    """

    token_norm: float
    position_norm: float
    position_similarity: float
    token_position_cosine: float

    def __post_init__(self):
        check_real(self.token_norm, "token_norm", low=0.0)
        check_real(self.position_norm, "position_norm", low=0.0)
        # cosines, up to rounding
        check_real(self.position_similarity, "position_similarity", low=-1.0 - 1e-9, high=1.0 + 1e-9)
        check_real(self.token_position_cosine, "token_position_cosine", low=-1.0 - 1e-9, high=1.0 + 1e-9)


@functools.cache
def scale_diagnostics() -> tuple[InputScale, tuple[LayerScale, ...]]:
    """The size of the token and position tables, and the shared part vs the spread of $w$'s cloud."""
    vectors = split_vectors("test")
    positions = np.asarray(hmm_encoder.trained_encoder().params["P"], dtype=np.float64)[:SPLITS.length]
    token = vectors.token_table
    cosines = positions @ token / (np.linalg.norm(positions, axis=1) * np.linalg.norm(token))
    inputs = InputScale(token_norm=float(np.linalg.norm(token)),
                        position_norm=float(np.linalg.norm(positions, axis=1).mean()),
                        position_similarity=geometry.self_similarity(positions),
                        token_position_cosine=float(cosines.mean()))
    rows = []
    for layer in range(len(vectors.layers)):
        word = vectors.word(layer)
        centre = word.mean(axis=0)
        rows.append(LayerScale(layer=layer, mean_norm=float(np.linalg.norm(centre)),
                               spread=float(np.sqrt(np.mean(np.sum((word - centre) ** 2, axis=1)))),
                               within_position=within_position_similarity(word, vectors.positions)))
    return inputs, tuple(rows)


def within_position_similarity(word_vectors, positions) -> float:
    r"""Self-similarity among a word's occurrences at the same position, averaged over positions.

    For each position $i$ holding $k_i \ge 2$ occurrences, take the self-similarity of those
    $k_i$ vectors; return the average weighted by $k_i$ (positions with one occurrence carry no
    pair and are left out). At an encoder's input, where an occurrence's vector is
    $E[w] + P_i$, every group is a single repeated vector and the value is one: the measure
    removes the position table from the comparison, and what is left is the spread context adds.

    Parameters
    ----------
    word_vectors : array_like, shape (k, d)
        The word's occurrence vectors (non-zero rows).
    positions : array_like of int, shape (k,)
        Position of each occurrence; at least one position must hold two occurrences.

    Returns
    -------
    float

    Raises
    ------
    ValueError
        Mismatched lengths, no position with two occurrences, or a zero row among the
        occurrences compared.

    Examples
    --------
    >>> h = np.array([[1.0, 0.0], [2.0, 0.0], [0.0, 1.0], [1.0, 1.0], [5.0, 5.0]])
    >>> round(within_position_similarity(h, [0, 0, 1, 1, 2]), 6)  # (2 * 1 + 2 * cos 45°) / 4
    0.853553
    """
    word = as_float_array(word_vectors, "word_vectors", ndim=2)
    positions = as_int_array(positions, "positions", ndim=1)
    if positions.shape[0] != word.shape[0]:
        raise ValueError(f"positions must have one entry per row of word_vectors ({word.shape[0]}), "
                         f"got {positions.shape[0]}")
    present, counts = np.unique(positions, return_counts=True)
    usable = counts >= 2
    if not np.any(usable):
        raise ValueError("positions must hold at least two occurrences at some position")
    compared = np.isin(positions, present[usable])
    zero = np.flatnonzero(compared & ~np.any(word != 0, axis=1))
    if zero.size:
        raise ValueError(f"word_vectors has a zero vector (row {zero[0]}): its cosine with anything is undefined")
    weights = counts[usable] / counts[usable].sum()
    # A loop over the distinct positions (at most the sequence length), not over occurrences.
    return float(sum(weight * geometry.self_similarity(word[positions == position])
                     for position, weight in zip(present[usable], weights)))


# --------------------------------------------------------------------------------------
# The registered layer orderings, as rules on (layer 0, layer 1, layer 2) values
# --------------------------------------------------------------------------------------


def _layer_values(values, name: str) -> tuple[float, float, float]:
    """Three finite numbers, one per layer 0, 1, 2."""
    array = as_float_array(values, name, ndim=1)
    if array.shape != (3,):
        raise ValueError(f"{name} must hold three values (layers 0, 1, 2), got shape {array.shape}")
    return tuple(float(x) for x in array)


def s509_holds(self_similarity) -> bool:
    """S5-09's rule: self-similarity at layers 1 and 2 below layer 0.

    Raises
    ------
    TypeError, ValueError
        If ``self_similarity`` is not three finite numbers (layers 0, 1, 2).

    Examples
    --------
    >>> s509_holds((0.763, 0.620, 0.676)), s509_holds((0.6, 0.7, 0.5))
    (True, False)
    """
    self_similarity = _layer_values(self_similarity, "self_similarity")
    v = self_similarity
    return bool(v[1] < v[0] and v[2] < v[0])


def s510_holds(mev) -> bool:
    """S5-10's rule: MEV at layers 1 and 2 below layer 0, every value in (1/32, 1].

    Raises
    ------
    TypeError, ValueError
        If ``mev`` is not three finite numbers (layers 0, 1, 2).

    Examples
    --------
    >>> s510_holds((0.763, 0.638, 0.691)), s510_holds((0.763, 0.638, 0.02))
    (True, False)
    """
    mev = _layer_values(mev, "mev")
    v = mev
    return bool(v[1] < v[0] and v[2] < v[0] and all(1 / 32 < x <= 1 for x in v))


def s512_holds(adjusted) -> bool:
    """S5-12's rule: adjusted self-similarity at layers 1 and 2 below layer 0, layer 1 at most 0.02 above layer 2.

    Raises
    ------
    TypeError, ValueError
        If ``adjusted`` is not three finite numbers (layers 0, 1, 2).

    Examples
    --------
    >>> s512_holds((0.695, 0.467, 0.473)), s512_holds((0.695, 0.6, 0.473))
    (True, False)
    """
    adjusted = _layer_values(adjusted, "adjusted")
    v = adjusted
    return bool(v[1] < v[0] and v[2] < v[0] and v[1] <= v[2] + 0.02)


def s520_holds(adjusted) -> bool:
    """S5-20's rule: adjusted self-similarity at layer 1 below layer 0.

    Raises
    ------
    TypeError, ValueError
        If ``adjusted`` is not three finite numbers (layers 0, 1, 2).

    Examples
    --------
    >>> s520_holds((0.695, 0.467, 0.473)), s520_holds((0.4, 0.467, 0.473))
    (True, False)
    """
    adjusted = _layer_values(adjusted, "adjusted")
    return bool(adjusted[1] < adjusted[0])


# --------------------------------------------------------------------------------------
# How robust is the layer table? The same measures for other training runs
# --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class SeedGeometry:
    r"""The layer table's measures of $w$ for one trained encoder, on the test split.

    Every measure is a tuple over layers 0, 1, 2.

    Attributes
    ----------
    seed : int
        The encoder's training seed.
    label : str
        What distinguishes this encoder (``"book"`` for the book's encoder).
    self_similarity, mev, baseline, adjusted : tuple of float
        Definition 3 at each layer, as in [`geometry_table`][mlm_book.readings.hmm_encoder.geometry_table] (the baseline exact over all
        test-token vectors).
    within_position : tuple of float
        [`within_position_similarity`][mlm_book.experiments.ch04_geometry.within_position_similarity] of $w$'s occurrences at each layer.
    token_norm : float
        $\lVert E[w] \rVert$ of the trained token table.
    position_norm : float
        Mean $\lVert P_i \rVert$ over the positions of the trained position table.
    layer0_from_norms : float
        $\lVert E[w] \rVert^2 / (\lVert E[w] \rVert^2 + \overline{\lVert P_i \rVert^2})$: the
        layer-0 self-similarity if the position rows were orthogonal to each other and to $E[w]$
        and all of one norm, with the mean squared norm in its place.
    n_occurrences : int
        Occurrences of $w$ in the test split.
    s509, s510, s512, s520 : bool
        Whether the registered rules of S5-09 (self-similarity), S5-10 (MEV), S5-12 and S5-20
        (adjusted self-similarity) hold for this encoder.

    Raises
    ------
    TypeError, ValueError
        If ``seed`` or ``n_occurrences`` is not a non-negative integer, ``label`` not a string,
        a measure not three finite numbers in its range (similarities and cosines in [-1, 1],
        MEV in [0, 1], adjusted in [-2, 2]), a norm negative or not finite,
        ``layer0_from_norms`` not in [0, 1] or a rule flag not a bool.

    Examples
    --------
    >>> row = SeedGeometry(seed=1, label="", self_similarity=(0.76, 0.62, 0.68), mev=(0.76, 0.64, 0.69),
    ...                    baseline=(0.07, 0.15, 0.2), adjusted=(0.69, 0.47, 0.48), within_position=(1.0, 0.6, 0.7),
    ...                    token_norm=1.1, position_norm=0.4, layer0_from_norms=0.88, n_occurrences=6663,
    ...                    s509=True, s510=True, s512=True, s520=True)
    >>> row.baseline_rises, row.pooled_falls
    (True, True)
    """

    seed: int
    label: str
    self_similarity: tuple
    mev: tuple
    baseline: tuple
    adjusted: tuple
    within_position: tuple
    token_norm: float
    position_norm: float
    layer0_from_norms: float
    n_occurrences: int
    s509: bool
    s510: bool
    s512: bool
    s520: bool
    token_mev: tuple = ()

    def __post_init__(self):
        check_positive_int(self.seed, "seed", minimum=0)
        check_instance(self.label, "label", str)
        tolerance = 1e-9  # cosines and shares, up to rounding
        for name, low, high in (("self_similarity", -1.0, 1.0), ("mev", 0.0, 1.0), ("baseline", -1.0, 1.0),
                                ("adjusted", -2.0, 2.0), ("within_position", -1.0, 1.0)):
            for value in _layer_values(getattr(self, name), name):
                if not low - tolerance <= value <= high + tolerance:
                    raise ValueError(f"{name} must hold values in [{low}, {high}], got {value}")
        check_real(self.token_norm, "token_norm", low=0.0)
        check_real(self.position_norm, "position_norm", low=0.0)
        check_real(self.layer0_from_norms, "layer0_from_norms", low=0.0, high=1.0)
        check_positive_int(self.n_occurrences, "n_occurrences", minimum=0)
        for name in ("s509", "s510", "s512", "s520"):
            check_bool(getattr(self, name), name)
        if self.token_mev:
            for value in _layer_values(self.token_mev, "token_mev"):
                if not -1e-9 <= value <= 1 + 1e-9:
                    raise ValueError(f"token_mev must hold values in [0, 1], got {value}")

    @property
    def baseline_rises(self) -> bool:
        """Whether the anisotropy baseline rises from layer 0 to layer 1 (S5-21's rule)."""
        return bool(self.baseline[1] > self.baseline[0])

    @property
    def pooled_falls(self) -> bool:
        """Whether self-similarity and MEV are both below layer 0 at layers 1 and 2 (S5-09 and S5-10)."""
        return self.s509 and self.s510


@dataclass(frozen=True)
class SeedRobustness:
    """[`SeedGeometry`][mlm_book.experiments.ch04_geometry.SeedGeometry] for several trained encoders that differ only in their training seed.

    Raises
    ------
    TypeError
        If ``rows`` is not a non-empty tuple of `SeedGeometry` or ``config`` not a `SplitConfig`.

    Examples
    --------
    >>> row = SeedGeometry(seed=1, label="", self_similarity=(0.76, 0.62, 0.68), mev=(0.76, 0.64, 0.69),
    ...                    baseline=(0.07, 0.15, 0.2), adjusted=(0.69, 0.47, 0.48), within_position=(1.0, 0.6, 0.7),
    ...                    token_norm=1.1, position_norm=0.4, layer0_from_norms=0.88, n_occurrences=6663,
    ...                    s509=True, s510=True, s512=True, s520=True)
    >>> robustness = SeedRobustness(rows=(row,), config=SPLITS)
    >>> robustness.seeds, robustness.count("s512"), robustness.within_range()
    ((1,), 1, (0.6, 0.7))
    """

    rows: tuple
    config: SplitConfig

    def __post_init__(self):
        if not isinstance(self.rows, tuple) or not self.rows:
            raise TypeError(f"rows must be a non-empty tuple of SeedGeometry, got {type(self.rows).__name__}")
        for row in self.rows:
            check_instance(row, "rows", SeedGeometry)
        check_instance(self.config, "config", SplitConfig)

    @property
    def seeds(self) -> tuple[int, ...]:
        return tuple(row.seed for row in self.rows)

    def count(self, rule: str) -> int:
        """How many encoders satisfy ``rule`` (``"s509"``, ``"s510"``, ``"s512"``, ``"s520"``,
        ``"baseline_rises"`` or ``"pooled_falls"``)."""
        if rule not in ("s509", "s510", "s512", "s520", "baseline_rises", "pooled_falls"):
            raise ValueError(f"rule must name one of the registered rules, got {rule!r}")
        return sum(bool(getattr(row, rule)) for row in self.rows)

    def within_range(self, layers=(1, 2)) -> tuple[float, float]:
        """Smallest and largest within-position self-similarity over the encoders at ``layers``."""
        values = [row.within_position[layer] for row in self.rows for layer in layers]
        return min(values), max(values)

    def ratio_range(self) -> tuple[float, float]:
        r"""Smallest and largest $\text{mean}\,\lVert P_i \rVert / \lVert E[w] \rVert$ over the encoders."""
        values = [row.position_norm / row.token_norm for row in self.rows]
        return min(values), max(values)

    def table(self, extra=()) -> str:
        """The measures as a Markdown table, one row per encoder (values at layers 0 / 1 / 2).

        Parameters
        ----------
        extra : tuple of SeedGeometry, optional
            Further encoders to list after the seeds (e.g. [`init_scale_contrast`][mlm_book.experiments.ch04_geometry.init_scale_contrast]).
        """
        def triple(values):
            return " / ".join(f"{x:.3f}" for x in values)

        def mark(flag):
            return "yes" if flag else "**no**"

        lines = ["| encoder (training seed) | self-similarity | MEV | baseline | adjusted | within a position "
                 "| ‖E[w]‖ | mean ‖P_i‖ | layer 0 from the norms | S5-09 | S5-10 | S5-12 | S5-20 |",
                 "|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
        for row in self.rows + tuple(extra):
            name = f"{row.seed} ({row.label})" if row.label else str(row.seed)
            lines.append(f"| {name} | {triple(row.self_similarity)} | {triple(row.mev)} | {triple(row.baseline)} | "
                         f"{triple(row.adjusted)} | {triple(row.within_position)} | {row.token_norm:.2f} | "
                         f"{row.position_norm:.2f} | {row.layer0_from_norms:.3f} | {mark(row.s509)} | "
                         f"{mark(row.s510)} | {mark(row.s512)} | {mark(row.s520)} |")
        return "\n".join(lines)


#: The layer orderings that [`robustness_statements`][mlm_book.experiments.ch04_geometry.robustness_statements] puts in words,
#: by the name of the [`SeedGeometry`][mlm_book.experiments.ch04_geometry.SeedGeometry] field that records each.
_STATEMENTS = (
    ("self-similarity lower at layers 1 and 2 than at layer 0", "s509"),
    ("MEV lower at layers 1 and 2 than at layer 0", "s510"),
    ("adjusted self-similarity lower at layers 1 and 2 than at layer 0, layer 1 at most 0.02 above layer 2",
     "s512"),
    ("adjusted self-similarity lower at layer 1 than at layer 0", "s520"),
    ("anisotropy baseline higher at layer 1 than at layer 0", "baseline_rises"),
)


def _context_spreads(row: SeedGeometry) -> bool:
    return bool(abs(row.within_position[0] - 1.0) < 1e-9 and max(row.within_position[1:]) < 1.0)


def robustness_statements(robustness: SeedRobustness | None = None) -> tuple[tuple[str, bool, int], ...]:
    """The layer table's orderings in words, each with how far it survives a change of training seed.

    Parameters
    ----------
    robustness : SeedRobustness, optional
        Default [`seed_robustness`][mlm_book.experiments.ch04_geometry.seed_robustness]`()`; its first
        row is taken as the book's encoder.

    Returns
    -------
    tuple of (str, bool, int)
        For each statement: its wording, whether it holds for the first encoder, and for how many
        of the encoders it holds. The registered orderings come first, then the within-position
        statement (one at layer 0, below one at layers 1 and 2).

    Raises
    ------
    TypeError
        If ``robustness`` is not a `SeedRobustness` (or ``None``).

    Examples
    --------
    One encoder's row, built by hand (the chapter's come from five training seeds):

    >>> row = SeedGeometry(seed=1, label="", self_similarity=(0.76, 0.62, 0.68), mev=(0.76, 0.64, 0.69),
    ...                    baseline=(0.07, 0.15, 0.2), adjusted=(0.69, 0.47, 0.48), within_position=(1.0, 0.6, 0.7),
    ...                    token_norm=1.1, position_norm=0.4, layer0_from_norms=0.88, n_occurrences=6663,
    ...                    s509=True, s510=True, s512=True, s520=True)
    >>> statements = robustness_statements(SeedRobustness(rows=(row,), config=SPLITS))
    >>> all(holds and count == 1 for _, holds, count in statements)
    True
    """
    robustness = (seed_robustness() if robustness is None
                  else check_instance(robustness, "robustness", SeedRobustness))
    first = robustness.rows[0]
    rows = [(text, bool(getattr(first, rule)), robustness.count(rule)) for text, rule in _STATEMENTS]
    rows.append(("within-position self-similarity one at layer 0 and below one at layers 1 and 2",
                 _context_spreads(first), sum(_context_spreads(row) for row in robustness.rows)))
    return tuple(rows)


def _encoder_geometry(setup, label: str) -> SeedGeometry:
    """The layer table's measures of $w$ on the test split for the encoder trained with ``setup``."""
    from mlm_book.nn import encoder as enc

    result = hmm_encoder.trained_encoder(setup)
    split = hmm_split("test")
    hmm = default_hmm()
    hidden = enc.hidden_states(result.params, result.encoder, split.tokens)
    layers = [np.asarray(h, dtype=np.float64).reshape(-1, np.shape(h)[-1]) for h in hidden]
    mask = split.tokens == hmm.shared_token
    positions = np.broadcast_to(np.arange(SPLITS.length), split.tokens.shape)[mask]
    words = [layer[mask.ravel()] for layer in layers]
    similarity = tuple(geometry.self_similarity(word) for word in words)
    baseline = tuple(geometry.anisotropy_baseline(layer) for layer in layers)
    adjusted = tuple(s - b for s, b in zip(similarity, baseline))
    mevs = tuple(geometry.mev(word) for word in words)
    # the token pool's MEV at w's occurrence count, drawn exactly as geometry_table draws it
    rng = np.random.default_rng(SPLITS.geometry_seed)
    token_mevs = tuple(geometry.describe_cloud(word, layer, rng).token_mev for word, layer in zip(words, layers))
    token = np.asarray(result.params["E"], dtype=np.float64)[hmm.shared_token]
    position_table = np.asarray(result.params["P"], dtype=np.float64)[:SPLITS.length]
    token_energy = float(token @ token)
    position_energy = float(np.mean(np.sum(position_table**2, axis=1)))
    return SeedGeometry(
        seed=int(setup.training.seed), label=label, self_similarity=similarity, mev=mevs, baseline=baseline,
        adjusted=adjusted, within_position=tuple(within_position_similarity(word, positions) for word in words),
        token_norm=float(np.sqrt(token_energy)), position_norm=float(np.linalg.norm(position_table, axis=1).mean()),
        layer0_from_norms=token_energy / (token_energy + position_energy), n_occurrences=int(mask.sum()),
        s509=s509_holds(similarity), s510=s510_holds(mevs), s512=s512_holds(adjusted), s520=s520_holds(adjusted),
        token_mev=token_mevs)


def seed_robustness(seeds: tuple | None = None) -> SeedRobustness:
    """The layer table's measures of $w$ for the book's encoder retrained with other seeds (memoised per seeds).

    Each encoder has exactly the book's settings (`mlm_book.artefacts.hmm_encoder.SETUP`)
    except ``training.seed``; each is read on the same test split as [`geometry_table`][mlm_book.readings.hmm_encoder.geometry_table]. The
    encoders come from [`mlm_book.artefacts.hmm_encoder.trained_encoder`][mlm_book.artefacts.hmm_encoder.trained_encoder], through the
    cache (a cold build trains each one, under a minute).

    Parameters
    ----------
    seeds : tuple of int, optional
        Training seeds; default [`mlm_book.artefacts.hmm_encoder.SEEDS`][mlm_book.artefacts.hmm_encoder.SEEDS] (the book's seed first, five in all).

    Returns
    -------
    SeedRobustness
        One [`SeedGeometry`][mlm_book.experiments.ch04_geometry.SeedGeometry] per seed, in the given order.

    Raises
    ------
    TypeError
        If ``seeds`` is not a tuple of integers.
    ValueError
        If ``seeds`` is empty or repeats a seed.
    """
    seeds = hmm_encoder.SEEDS if seeds is None else seeds
    if not isinstance(seeds, tuple) or not all(isinstance(s, int) and not isinstance(s, bool) for s in seeds):
        raise TypeError(f"seeds must be a tuple of integers, got {seeds!r}")
    if not seeds or len(set(seeds)) != len(seeds):
        raise ValueError(f"seeds must be a non-empty tuple of distinct seeds, got {seeds!r}")
    return _seed_robustness(seeds)


@functools.cache
def _seed_robustness(seeds: tuple) -> SeedRobustness:
    book = hmm_encoder.SETUP.training.seed
    return _robustness([hmm_encoder.seed_setup(seed) for seed in seeds],
                       ["book" if seed == book else "" for seed in seeds])


def _robustness(setups, labels) -> SeedRobustness:
    """The layer table's measures for each setup's trained encoder (the missing ones trained first, in parallel)."""
    hmm_encoder.ensure_trained(setups)
    return SeedRobustness(rows=tuple(_encoder_geometry(setup, label) for setup, label in zip(setups, labels)),
                          config=SPLITS)


@functools.cache
def init_scale_contrast() -> SeedGeometry:
    """The same measures for the book's encoder trained the way BERT's recipe would start it.

    Two settings differ from `mlm_book.artefacts.hmm_encoder.SETUP`: the token table is
    initialised like every other table and matrix (``token_init_std=None``: standard deviation
    ``init_std``, BERT's 0.02) and the optimiser is plain Adam (``weight_decay=0``). The training
    seed is the book's.

    Returns
    -------
    SeedGeometry
        ``label`` is ``"token table at init_std, no weight decay"``.
    """
    # the book-seed row of contrast_robustness, measured once
    return replace(contrast_robustness().rows[0], label="token table at init_std, no weight decay")


@functools.cache
def contrast_robustness() -> SeedRobustness:
    """The contrast encoder ([`init_scale_contrast`][mlm_book.experiments.ch04_geometry.init_scale_contrast])
    at each of the book's training seeds, so that its findings carry their own seed spread.

    Returns
    -------
    SeedRobustness
        One row per seed of `mlm_book.artefacts.hmm_encoder.SEEDS`, the book's first (that
        row is [`init_scale_contrast`][mlm_book.experiments.ch04_geometry.init_scale_contrast]);
        every row's ``label`` is ``"contrast"``.

    Examples
    --------
    >>> robust = contrast_robustness()  # doctest: +BOOK
    >>> robust.seeds == hmm_encoder.SEEDS, robust.rows[0].self_similarity == init_scale_contrast().self_similarity
    (True, True)
    """
    return _robustness([hmm_encoder.seed_setup(seed, hmm_encoder.CONTRAST) for seed in hmm_encoder.SEEDS],
                       ["contrast"] * len(hmm_encoder.SEEDS))


#: Posterior range of the occurrences [`sense_axes`][mlm_book.experiments.ch04_geometry.sense_axes] counts as having an uncertain sense.
UNCERTAIN_SENSE = (0.25, 0.75)


@dataclass(frozen=True)
class SenseAxis:
    r"""How $w$'s cloud at one layer lines up with the sense (what the figure shows).

    Attributes
    ----------
    layer : int
    explained : tuple of float
        Shares of the centred variance on the first two principal axes.
    correlation : tuple of float
        $|\operatorname{corr}|$ between the coordinate on each of those axes and the exact
        posterior $P(\text{sense } b \mid x)$, over the test occurrences.
    uncertain_between : bool
        Whether, on the leading axis, the mean coordinate of the occurrences with an uncertain
        sense (posterior in `UNCERTAIN_SENSE`, closed) lies strictly between the mean
        coordinates of the confident ones of each sense (posterior below and above that range).
    positions_with_both_senses : int
        Positions at which occurrences of both (sampled) senses occur.
    positions : int
        Positions at which $w$ occurs at all.

    Raises
    ------
    TypeError, ValueError
        If ``layer`` or a count is not a non-negative integer (``positions_with_both_senses``
        at most ``positions``), ``explained`` or ``correlation`` not two numbers in [0, 1], or
        ``uncertain_between`` not a bool.

    Examples
    --------
    >>> axis = SenseAxis(layer=1, explained=(0.4, 0.1), correlation=(0.9, 0.05), uncertain_between=True,
    ...                  positions_with_both_senses=24, positions=24)
    >>> axis.correlation[0] > axis.correlation[1]
    True
    """

    layer: int
    explained: tuple
    correlation: tuple
    uncertain_between: bool
    positions_with_both_senses: int
    positions: int

    def __post_init__(self):
        check_positive_int(self.layer, "layer", minimum=0)
        for name in ("explained", "correlation"):
            values = as_float_array(getattr(self, name), name, ndim=1)
            if values.shape != (2,) or values.min() < 0 or values.max() > 1 + 1e-9:
                raise ValueError(f"{name} must be two numbers in [0, 1] (the first two axes), got {values.tolist()!r:.60}")
        check_bool(self.uncertain_between, "uncertain_between")
        positions = check_positive_int(self.positions, "positions", minimum=0)
        if check_positive_int(self.positions_with_both_senses, "positions_with_both_senses", minimum=0) > positions:
            raise ValueError(f"positions_with_both_senses must be at most positions ({positions}), "
                             f"got {self.positions_with_both_senses}")


@functools.cache
def sense_axes() -> tuple[SenseAxis, ...]:
    """For each layer, how the two principal axes of $w$'s test cloud correlate with the exact sense posterior."""
    vectors = split_vectors("test")
    present = np.unique(vectors.positions)
    # Positions holding both senses: the pairs (position, sense) that occur, counted per position.
    pairs = np.unique(np.stack([vectors.positions, vectors.senses], axis=1), axis=0)
    both = int(np.sum(np.bincount(pairs[:, 0]) == 2))
    posterior = vectors.posterior
    lo, hi = UNCERTAIN_SENSE
    groups = (posterior < lo, (posterior >= lo) & (posterior <= hi), posterior > hi)
    rows = []
    for layer in range(len(vectors.layers)):
        projection = geometry.principal_axes(vectors.word(layer), 2)
        correlation = tuple(abs(float(np.corrcoef(projection.coordinates[:, a], posterior)[0, 1]))
                            for a in range(2))
        low, middle, high = (float(projection.coordinates[group, 0].mean()) for group in groups)
        rows.append(SenseAxis(layer=layer, explained=tuple(float(x) for x in projection.explained[:2]),
                              correlation=correlation, uncertain_between=bool(min(low, high) < middle < max(low, high)),
                              positions_with_both_senses=both, positions=len(present)))
    return tuple(rows)


@functools.cache
def encoder_proposition2() -> tuple[geometry.Proposition2Check, ...]:
    """Proposition 2 and Eckart–Young on $w$'s test cloud at each layer."""
    vectors = split_vectors("test")
    rng = np.random.default_rng(SPLITS.geometry_seed + 1)
    return tuple(geometry.check_proposition2(vectors.word(layer), rng) for layer in range(len(vectors.layers)))


@functools.cache
def random_proposition2() -> tuple[geometry.Proposition2Check, ...]:
    """Proposition 2 on random Gaussian matrices of several shapes, with an offset, and a rank-1 matrix.

    Examples
    --------
    >>> checks = random_proposition2()
    >>> all(c.holds(1e-12) for c in checks), checks[-1].rank, abs(checks[-1].mev - 1) < 1e-12
    (True, 1, True)
    """
    rng = np.random.default_rng(SPLITS.geometry_seed + 2)
    checks = []
    for shape in ((6663, 32), (118, 64), (40, 80), (5, 3)):
        matrix = rng.standard_normal(shape) * rng.uniform(0.2, 3.0, size=shape[1]) + rng.standard_normal(shape[1])
        checks.append(geometry.check_proposition2(matrix, rng))
    rank_one = np.outer(rng.uniform(0.5, 2.0, size=500) * rng.choice([-1.0, 1.0], size=500),
                        rng.standard_normal(32))
    checks.append(geometry.check_proposition2(rank_one, rng))
    return tuple(checks)


def plot_principal_axes(layers=(0, 1, 2), position: int | None = None):
    r"""Figure: $w$'s test occurrences on their own two principal axes at each layer.

    One panel per layer, two panels to a row, and a last panel with only the occurrences at one
    position, at the last of ``layers``, on that layer's axes: at layer 0 they are a single point,
    so whatever spread this panel shows is context's. Points are coloured by the exact posterior
    $P(\text{sense b} \mid x)$, from sense a's colour through pale grey (uncertain sense) to
    sense b's. Each leading axis is oriented so that sense b lies towards its positive end.

    Parameters
    ----------
    layers : tuple of int, default (0, 1, 2)
        The layers to draw.
    position : int, optional
        The position of the last panel; default the middle of the sequence.

    Returns
    -------
    DescribedFigure
        The panels, with alt text that gives, layer by layer, how the leading axis follows the
        sense and the shape of the cloud.

    Raises
    ------
    TypeError, ValueError
        If ``layers`` is not a non-empty sequence of layer numbers in ``[0, 3)``, or
        ``position`` not ``None`` or a position in ``[0, SPLITS.length)``.

    Examples
    --------
    >>> import matplotlib.pyplot as plt  # doctest: +BOOK
    >>> drawn = plot_principal_axes(layers=(0, 1))
    >>> drawn.alt.split(". ")[2]
    'At layer 0 they sit on 24 spots, 24 of them holding occurrences of both senses, and PC 1 (45 % of the centred variance) correlates 0.01 with the posterior'
    >>> plt.close(drawn.figure)
    """
    from matplotlib.colors import LinearSegmentedColormap

    if isinstance(layers, (str, bytes)) or not hasattr(layers, "__len__"):
        raise TypeError(f"layers must be a sequence of layer numbers, got {type(layers).__name__}")
    layers = tuple(layers)
    if not layers:
        raise ValueError("layers must name at least one layer")
    for layer in layers:
        if check_positive_int(layer, "layers", minimum=0) >= len(LAYER_NAMES):
            raise ValueError(f"layers must hold layer numbers in [0, {len(LAYER_NAMES)}), got {layer}")
    if position is not None and check_positive_int(position, "position", minimum=0) >= SPLITS.length:
        raise ValueError(f"position must be in [0, {SPLITS.length}), got {position}")

    from mlm_book.figures import SENSE_COLORS, WIDE, describe, subplots

    vectors = split_vectors("test")
    table = geometry_table()
    posterior = vectors.posterior
    position = SPLITS.length // 2 if position is None else int(position)
    panels = len(layers) + 1
    rows = (panels + 1) // 2
    fig, axes = subplots(rows, 2, width=WIDE, height=3.4 * rows + 0.6)
    axes = np.atleast_1d(axes).ravel()
    cmap = LinearSegmentedColormap.from_list("senses", [SENSE_COLORS[0], "#DDDDDD", SENSE_COLORS[1]])
    # Random drawing order (seeded), so neither sense systematically hides the other where points overlap.
    order = np.random.default_rng(SPLITS.geometry_seed).permutation(vectors.n_occurrences)
    points = coords = None
    words = []
    for ax, layer in zip(axes, layers):
        projection = geometry.principal_axes(vectors.word(layer), 2)
        coords = projection.coordinates.copy()
        if np.corrcoef(coords[:, 0], posterior)[0, 1] < 0:  # the sign of a principal axis is arbitrary
            coords[:, 0] = -coords[:, 0]
        words.append(_panel_words(layer, coords, posterior, vectors.senses, projection.explained[0]))
        points = ax.scatter(coords[order, 0], coords[order, 1], c=posterior[order], cmap=cmap, vmin=0.0, vmax=1.0,
                            s=30 if layer == 0 else 5, alpha=0.8, linewidths=0, rasterized=True)
        g = table.rows[layer].geometry
        ax.set_title(f"layer {layer}: adjusted {g.adjusted:.3f}, MEV {g.mev:.3f}")
        ax.set_xlabel(f"PC 1 ({projection.explained[0]:.0%} of centred variance)")
        ax.set_ylabel(f"PC 2 ({projection.explained[1]:.0%})")
    last, one = layers[-1], axes[len(layers)]
    here = vectors.positions[order] == position
    one.scatter(coords[order][here, 0], coords[order][here, 1], c=posterior[order][here], cmap=cmap, vmin=0.0,
                vmax=1.0, s=12, alpha=0.9, linewidths=0, rasterized=True)
    one.set_xlim(axes[len(layers) - 1].get_xlim())
    one.set_ylim(axes[len(layers) - 1].get_ylim())
    similarity = geometry.self_similarity(vectors.word(last)[vectors.positions == position])
    one.set_title(f"layer {last}, position {position} only: self-similarity {similarity:.3f}")
    one.set_xlabel(f"PC 1 of layer {last} (as in the panel before)")
    one.set_ylabel(f"PC 2 of layer {last}")
    for ax in axes[panels:]:
        ax.set_visible(False)
    fig.colorbar(points, ax=list(axes[:panels]), shrink=0.5, aspect=40, location="bottom",
                 label=r"point colour: exact $P(\mathrm{sense\ b} \mid x)$")

    at = vectors.positions == position
    lo, hi = UNCERTAIN_SENSE
    sense_a, sense_b = at & (posterior < lo), at & (posterior > hi)
    ends = [f"those with P(sense b | x) {side} {bound:g} averaging {coords[group, 0].mean():.1f}"
            for side, bound, group in (("below", lo, sense_a), ("above", hi, sense_b)) if group.any()]
    alt = (f"{panels} scatter plots of occurrences of w in the test split on principal axes, PC 1 across and PC 2 "
           f"up: one panel per layer ({', '.join(map(str, layers))}) with all {vectors.n_occurrences} occurrences on "
           "that layer's own first two axes, then a panel with one position only. Points are coloured by the exact "
           "posterior P(sense b | x), from blue (sense a) through pale grey (uncertain) to orange (sense b), and PC 1 "
           "is oriented with sense b to the right. " + ". ".join(words) + f". The last panel keeps the "
           f"{int(at.sum())} layer-{last} occurrences at position {position}, on the axes of the panel before, with "
           f"self-similarity {similarity:.3f}: they spread along PC 1 from {coords[at, 0].min():.1f} to "
           f"{coords[at, 0].max():.1f}" + "".join(f", {end}" for end in ends) + ".")
    caption = (r"The occurrences of $w$ in the test split on their own first two principal axes, coloured by the "
               r"exact $P(\text{sense b} \mid x)$; each leading axis is oriented with sense b to the right."
               + (r" At layer 0 the occurrences at one position coincide, so all the spread of the last panel is "
                  r"added by the blocks." if last > 0 else ""))
    return describe(fig, alt=alt, caption=caption)


def _panel_words(layer: int, coords: np.ndarray, posterior: np.ndarray, senses: np.ndarray, explained: float) -> str:
    """What one panel of [`plot_principal_axes`][mlm_book.experiments.ch04_geometry.plot_principal_axes] shows, in words."""
    correlation = abs(float(np.corrcoef(coords[:, 0], posterior)[0, 1]))
    spots, spot = np.unique(coords.round(6), axis=0, return_inverse=True)
    axis = f"PC 1 ({explained:.0%} of the centred variance)".replace("%", " %")
    if len(spots) <= 100:   # a handful of points, each shared by many occurrences
        both = sum(len(set(senses[spot.ravel() == k])) > 1 for k in range(len(spots)))
        return (f"At layer {layer} they sit on {len(spots)} spots, {both} of them holding occurrences of both senses, "
                f"and {axis} correlates {correlation:.2f} with the posterior")
    lo, hi = UNCERTAIN_SENSE
    groups = {"a": posterior < lo, "uncertain": (posterior >= lo) & (posterior <= hi), "b": posterior > hi}
    mean = {name: float(coords[group, 0].mean()) for name, group in groups.items()}
    arm = {name: float(np.corrcoef(coords[groups[name], 0], coords[groups[name], 1])[0, 1]) for name in "ab"}
    shape = (f", and the cloud is a V: along sense a's arm PC 2 falls as PC 1 rises (correlation {arm['a']:.2f}), "
             f"along sense b's it rises with PC 1 ({arm['b']:.2f})" if arm["a"] < -0.3 < 0.3 < arm["b"] else "")
    return (f"At layer {layer}, {axis} correlates {correlation:.2f} with the posterior: the occurrences with "
            f"P(sense b | x) below {lo:g} average {mean['a']:.1f} on it, those between {lo:g} and {hi:g} "
            f"{mean['uncertain']:.1f} and those above {hi:g} {mean['b']:.1f}{shape}")


# --------------------------------------------------------------------------------------
# Claims
# --------------------------------------------------------------------------------------


def _definitions_gap() -> float:
    """S5-02: the package's measures against their literal definitions on w's layer-1 cloud."""
    word = split_vectors("test").word(1)[:1500]  # the explicit cosine matrix is quadratic in k
    cosines = geometry.cosine_matrix(word)
    k = word.shape[0]
    literal_similarity = (cosines.sum() - np.trace(cosines)) / (k * (k - 1))
    sigma = np.linalg.svd(word, compute_uv=False)  # uncentred
    return max(abs(geometry.self_similarity(word) - literal_similarity),
               abs(geometry.mev(word) - sigma[0] ** 2 / np.sum(sigma**2)))


def _isotropic_baseline() -> float:
    """S5-03: the baseline of an isotropic Gaussian sample of the test split's size and dimension."""
    table = geometry_table()
    d = table.rows[0].geometry.dim
    return geometry.anisotropy_baseline(np.random.default_rng(SPLITS.geometry_seed + 3).standard_normal((table.n_tokens, d)))


def _all_checks():
    return random_proposition2() + encoder_proposition2()


def _rounding_gap() -> float:
    table = geometry_table()
    return max(abs(round(r.geometry.adjusted, 3) - (round(r.geometry.self_similarity, 3) - round(r.geometry.baseline, 3)))
               for r in table.rows)


def _filing_rounding_gap() -> float:
    """As `_rounding_gap`, over the filing encoder's three *kestrel* rows (book seed)."""
    from mlm_book.artefacts import filing_encoder
    rows = filing_encoder.seed_results().geometry["kestrel"].values()
    return max(abs(round(g["adjusted"], 3) - (round(g["self_similarity"], 3) - round(g["baseline"], 3))) for g in rows)


def _filing_layer_pair(key: str) -> dict:
    """The filing encoder's *kestrel* measure ``key`` at layers 0 and 1: book seed, and seeds where layer 1 is
    below (adjusted) or above (baseline) layer 0."""
    from mlm_book.artefacts import filing_encoder
    pair = lambda m: (m.geometry["kestrel"]["0"][key], m.geometry["kestrel"]["1"][key])  # noqa: E731
    holds = (lambda p: p[1] < p[0]) if key == "adjusted" else (lambda p: p[1] > p[0])
    margin = (lambda p: p[0] - p[1]) if key == "adjusted" else (lambda p: p[1] - p[0])
    seeds = filing_encoder.all_seed_results()
    return over_seeds([pair(m) for m in seeds], sum(holds(pair(m)) for m in seeds),
                      margins=[margin(pair(m)) for m in seeds])


# each registered rule of SeedRobustness.count: the column it reads and a seed's margin to it (the smallest of its
# conditions' distances from their thresholds, non-negative where the rule holds; a strict inequality fails at 0)
_RULE_MARGINS = {
    "s509": ("self_similarity", lambda v: min(v[0] - v[1], v[0] - v[2])),
    "s510": ("mev", lambda v: min(v[0] - v[1], v[0] - v[2], *(x - 1 / 32 for x in v), *(1 - x for x in v))),
    "s512": ("adjusted", lambda v: min(v[0] - v[1], v[0] - v[2], v[2] + 0.02 - v[1])),
    "s520": ("adjusted", lambda v: v[0] - v[1]),
    "baseline_rises": ("baseline", lambda v: v[1] - v[0]),
}


def _book_seed_with_robustness(column: str, rule: str) -> dict:
    """A claim's value on the book's encoder, with its mean ± sd over [`seed_robustness`][mlm_book.experiments.ch04_geometry.seed_robustness]'s seeds and how many satisfy its rule.

    The rule is judged on the book's encoder (``"book"``, the layer table's column); the
    spread and ``"seeds holding"`` ([`over_seeds`][mlm_book.ledger.over_seeds]) are shown beside it
    so that the Claims page says how far the ordering depends on the training seed.
    """
    robustness = seed_robustness()
    judged, margin = _RULE_MARGINS[rule]
    value = over_seeds([getattr(row, column) for row in robustness.rows], robustness.count(rule),
                       margins=[margin(getattr(row, judged)) for row in robustness.rows])
    # the book's value as the layer table prints it (its encoder is the first row's)
    return {**value, "book": geometry_table().column(column)}


CLAIMS = (
    Claim("S5-02", "Def 3 as implemented equals the literal definitions (mean cosine over j≠l from the full "
          "cosine matrix; sigma_1^2/sum sigma_i^2 of the uncentred matrix), on 1500 of w's layer-1 vectors: "
          "largest difference", seed="—", rule="≤ 1e-12", compute=_definitions_gap,
          accept=lambda v: v <= 1e-12, fmt="residual", section="three-measures-of-a-cloud"),
    Claim("S5-03", "Anisotropy baseline of an isotropic Gaussian sample (as many vectors as test tokens, d = 32)",
          seed="0 (isotropic)", rule="abs ≤ 0.01", compute=_isotropic_baseline,
          accept=lambda v: abs(v) <= 0.01, fmt=".1e", section="three-measures-of-a-cloud"),
    Claim("S5-04", "Prop 2 (i): relative gradient of sum ||h_j - c||^2 at the row mean, worst over random "
          "matrices, a rank-1 matrix and w's clouds at layers 0-2", seed="0", rule="≤ 1e-12",
          compute=lambda: max(c.mean_gradient for c in _all_checks()), accept=lambda v: v <= 1e-12, fmt="residual",
          section="what-a-single-direction-can-carry"),
    Claim("S5-05", "Prop 2 (ii): |MEV − Rayleigh quotient at the top eigenvector of H^T H| (and no random "
          "direction above MEV), worst over the same clouds", seed="—", rule="≤ 1e-12",
          compute=lambda: max(c.variational for c in _all_checks()), accept=lambda v: v <= 1e-12, fmt="residual",
          section="what-a-single-direction-can-carry"),
    Claim("S5-06", "Prop 2 (iii): smallest slacks MEV − 1/r and 1 − MEV over the same clouds; |1 − MEV| for "
          "the rank-1 matrix", seed="—", rule="both slacks ≥ −1e-12; rank-1 MEV = 1 to 1e-12",
          compute=lambda: (min(c.lower_slack for c in _all_checks()), min(c.upper_slack for c in _all_checks()),
                           abs(1.0 - random_proposition2()[-1].mev)),
          accept=lambda v: v[0] >= -1e-12 and v[1] >= -1e-12 and v[2] <= 1e-12, fmt="residual:.2e",
          section="what-a-single-direction-can-carry"),
    Claim("S5-07", "Eckart–Young: |share of ||H||_F^2 missed by the best rank-1 fit − (1 − MEV)|, worst over "
          "the same clouds", seed="—", rule="≤ 1e-12",
          compute=lambda: max(c.eckart_young for c in _all_checks()), accept=lambda v: v <= 1e-12, fmt="residual",
          section="what-a-single-direction-can-carry"),
    Claim("S5-09", "HMM encoder, w, self-similarity at layers 0 / 1 / 2 (test occurrences); judged on the "
          "book's training seed, with how many of 5 training seeds satisfy the rule (chapter 4)",
          seed="0.763 / 0.620 / 0.676", rule="layers 1 and 2 below layer 0 (book's encoder)",
          compute=lambda: _book_seed_with_robustness("self_similarity", "s509"),
          accept=lambda v: s509_holds(v["book"]), expected="seed-dependent", section="how-robust-is-the-layer-table"),
    Claim("S5-10", "HMM encoder, w, MEV (uncentred) at layers 0 / 1 / 2; judged on the book's training seed, "
          "with how many of 5 training seeds satisfy the rule", seed="0.763 / 0.638 / 0.691",
          rule="layers 1 and 2 below layer 0; all in (1/32, 1] (book's encoder)",
          compute=lambda: _book_seed_with_robustness("mev", "s510"),
          accept=lambda v: s510_holds(v["book"]), expected="seed-dependent", section="how-robust-is-the-layer-table"),
    Claim("S5-11", "HMM encoder, anisotropy baseline (exact mean cosine over distinct pairs of all test-token "
          "vectors) at layers 0 / 1 / 2; the book's training seed, with how many of 5 training seeds satisfy "
          "the rule", seed="0.068 / 0.152 / 0.203", rule="layer 1 > layer 0",
          compute=lambda: _book_seed_with_robustness("baseline", "baseline_rises"),
          accept=lambda v: v["book"][1] > v["book"][0], expected="reproduced", section="how-robust-is-the-layer-table"),
    Claim("S5-12", "HMM encoder, w, adjusted self-similarity at layers 0 / 1 / 2; judged on the book's "
          "training seed, with how many of 5 training seeds satisfy the rule", seed="0.695 / 0.467 / 0.473",
          rule="layers 1 and 2 below layer 0; minimum at layer 1 or within 0.02 of layer 2 (book's encoder)",
          compute=lambda: _book_seed_with_robustness("adjusted", "s512"),
          accept=lambda v: s512_holds(v["book"]), expected="seed-dependent", section="how-robust-is-the-layer-table"),
    # adjusted is computed as that difference, and layer 0 has one vector per position: no rule can fail
    reported_value("S5-17", "Adjusted = self-similarity − baseline in all six rows (HMM w and filing kestrel, "
                   "layers 0-2, book seeds): |round(adjusted) − (round(self-sim) − round(baseline))|, worst row "
                   "(3 decimals)", "holds", lambda: max(_rounding_gap(), _filing_rounding_gap()),
                   section="the-hmm-encoders-clouds-of-w"),
    reported_value("S5-18", "Distinct layer-0 vectors of w over its test occurrences (one per position at most)",
                   "—", lambda: geometry_table().rows[0].distinct_vectors, fmt="d",
                   section="the-hmm-encoders-clouds-of-w"),
    Claim("S5-20", "Adjusted self-similarity at layer 1 vs layer 0, HMM encoder (w; seeds of chapter 4) and filing "
          "encoder (kestrel; 5 seeds)", seed="lower at layer 1 (both)",
          rule="adjusted(L1) < adjusted(L0), at every seed of both encoders",
          compute=lambda: {"HMM": _book_seed_with_robustness("adjusted", "s520"), "filings": _filing_layer_pair("adjusted")},
          accept=lambda v: True, expected="seed-dependent", section="how-robust-is-the-layer-table"),
    Claim("S5-21", "Anisotropy baseline at layer 0 vs layer 1, HMM encoder (book's seed) and filing encoder "
          "(5 seeds)", seed="rises (both)",
          rule="baseline(L1) > baseline(L0), at every seed of the filing encoder (the HMM's rise is S5-11)",
          compute=lambda: {"HMM": geometry_table().column("baseline")[:2], "filings": _filing_layer_pair("baseline")},
          accept=lambda v: True, expected="not reproduced", section="the-hmm-encoders-clouds-of-w"),
    Claim("S7-15", "'MEV (its baseline)' at HMM layer 1: MEV of as many uniformly drawn test-token vectors as w "
          "has occurrences, vs w's MEV (each training seed of the seed table)", seed="0.373 (w: 0.638)",
          rule="w's MEV > token MEV",
          compute=lambda: over_seeds([(row.mev[1], row.token_mev[1]) for row in seed_robustness().rows],
                                     sum(row.mev[1] > row.token_mev[1] for row in seed_robustness().rows),
                                     margins=[row.mev[1] - row.token_mev[1] for row in seed_robustness().rows]),
          accept=lambda v: True, expected="reproduced", section="two-readings-of-mev"),
)
