r"""Chapter 11's polarity experiments on the filing encoder (open question Q8), as an artefact: one run per encoder.

Can a representation built from the filing encoder recover a lexicon word's polarity, pooled the
way document-pooled semantic orientation pools? A run reads one filing encoder
([`mlm_book.artefacts.filing_encoder`][mlm_book.artefacts.filing_encoder]) on the book's filings
([`mlm_book.artefacts.filings`][mlm_book.artefacts.filings]) and stores the three experiments'
numbers: the word's own vectors pooled per filing then over filings
([`document_pooled`][mlm_book.artefacts.filing_polarity.document_pooled]), the vectors around each
occurrence within a radius ([`neighbour_pooled`][mlm_book.artefacts.filing_polarity.neighbour_pooled]),
each probed by chapter 6's leave-one-out probe
([`loo_accuracy`][mlm_book.artefacts.filing_polarity.loo_accuracy]), and orientation from the head's
own predictions at the seed slots ([`head_orientation`][mlm_book.artefacts.filing_polarity.head_orientation]).
The question, the rules and what they find are chapter 11's:
[`mlm_book.experiments.ch11_polarity`][mlm_book.experiments.ch11_polarity].

Examples
--------
Averaging within a filing first, then over filings: a word seen twice in filing 0 and once in
filing 1 weighs the two filings equally.

>>> document_pooled([[0.0], [2.0], [4.0]], words=[0, 0, 0], documents=[0, 0, 1], n_words=1).tolist()
[[2.5]]
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

import numpy as np

from mlm_book import artefacts, cache, probe
from mlm_book.artefacts import filing_encoder as fe
from mlm_book.artefacts import filings
from mlm_book.nn import runtime
from mlm_book.validation import (
    as_float_array,
    as_int_array,
    check_instance,
    check_positive_int,
    check_real,
)

__all__ = ["LAYERS", "RADII", "READ_STRIDE", "SMOOTHING", "MAX_WORDS", "MAX_FEATURES", "loo_accuracy",
           "document_pooled", "neighbour_pooled", "pooled_orientation", "head_orientation", "spearman",
           "PolaritySetup", "measured", "is_built", "book_setups", "tiny_setup", "ARTEFACT_KINDS"]

# --------------------------------------------------------------------------------------
# The protocol, fixed before any number was computed
# --------------------------------------------------------------------------------------

LAYERS = (0, 1, 2)
"""The filing encoder's layers probed: the input $E[x] + P$ and the stream after each of its two blocks."""

RADII = (0, 8, 16, 32, None)
"""Pooling radii $k$ of experiment 2, in tokens of the filing ([SEP] included); ``None`` is the whole filing.
$k = 0$ is the occurrence's own vector; 16 reaches the edges of the occurrence's own centred window; 32 and the
whole filing reach beyond any window."""

READ_STRIDE = 16
"""Stride of the fixed windows of the nearest-centre reading that gives every token's vector in experiment 2
(chapter 6's ``nearest_stride``)."""

SMOOTHING = 0.5
r"""$\alpha$ of the orientation formula, chapter 6's."""

MAX_WORDS = 1000
"""Most items `loo_accuracy` accepts (it fits one probe per item) and most words `document_pooled` pools."""

MAX_FEATURES = 4096
"""Most feature columns `loo_accuracy` and the pooling functions accept."""


# --------------------------------------------------------------------------------------
# The pieces
# --------------------------------------------------------------------------------------


def _features(value, name: str) -> np.ndarray:
    array = as_float_array(value, name, ndim=2)
    if array.shape[0] == 0 or array.shape[1] == 0:
        raise ValueError(f"{name} must have at least one row and one column, got shape {array.shape}")
    if array.shape[1] > MAX_FEATURES:
        raise ValueError(f"{name} must have at most {MAX_FEATURES} columns, got {array.shape[1]}")
    return array


def loo_accuracy(features, labels) -> float:
    r"""Chapter 6's polarity probe: leave-one-out accuracy of the ridge-logistic probe over one vector per word.

    The probe is [`mlm_book.probe.cross_validate`][mlm_book.probe.cross_validate] at the book's strength,
    each split leaving one item out ([`mlm_book.probe.leave_one_group_out`][mlm_book.probe.leave_one_group_out]
    over ``arange(n)``), exactly as chapter 6 probes the 35 lexicon words' skip-gram vectors and chapter 7
    their mean contextual vectors.

    Parameters
    ----------
    features : array_like, shape (n, d)
        One finite vector per item; ``3 <= n <= MAX_WORDS``, ``d <= MAX_FEATURES``.
    labels : array_like of int, shape (n,)
        0 or 1, each class at least twice (every training split then holds both).

    Returns
    -------
    float
        Share of the items whose held-out prediction is right.

    Raises
    ------
    TypeError
        If ``features`` is not numeric or ``labels`` does not hold integers.
    ValueError
        If ``features`` is not 2-D and finite with ``n`` in ``[3, MAX_WORDS]``, or ``labels`` is not 0/1 of
        length ``n`` with each class at least twice.

    Examples
    --------
    >>> x = np.array([[1.0], [2.0], [3.0], [-1.0], [-2.0], [-3.0]])
    >>> loo_accuracy(x, [1, 1, 1, 0, 0, 0])
    1.0
    """
    x = _features(features, "features")
    n = x.shape[0]
    if not 3 <= n <= MAX_WORDS:
        raise ValueError(f"features must have between 3 and {MAX_WORDS} rows (one probe per row), got {n}")
    y = as_int_array(labels, "labels", ndim=1)
    if y.size != n:
        raise ValueError(f"labels must have one entry per row of features ({n}), got {y.size}")
    if np.any((y != 0) & (y != 1)):
        raise ValueError("labels must hold 0 or 1")
    if np.bincount(y, minlength=2).min() < 2:
        raise ValueError("labels must hold each class at least twice (each training split needs both)")
    return float(probe.cross_validate(x, y, probe.leave_one_group_out(np.arange(n))).accuracy)


def document_pooled(vectors, words, documents, n_words: int) -> np.ndarray:
    r"""Each word's vectors averaged within each filing first, then over the filings.

    For word $w$ with occurrences in filings $D_w$, the result is
    $\frac{1}{|D_w|} \sum_{d \in D_w} \frac{1}{n_d(w)} \sum_{i \in d,\, x_i = w} h_i$.

    Parameters
    ----------
    vectors : array_like, shape (m, d)
        One finite vector per occurrence.
    words : array_like of int, shape (m,)
        The word of each occurrence, in ``[0, n_words)``; every word must occur.
    documents : array_like of int, shape (m,)
        The filing of each occurrence (any non-negative labels).
    n_words : int
        Number of words, at most ``MAX_WORDS``.

    Returns
    -------
    numpy.ndarray, shape (n_words, d)

    Raises
    ------
    TypeError
        If ``vectors`` is not numeric, ``words`` or ``documents`` does not hold integers, or ``n_words`` is not
        an integer.
    ValueError
        If the shapes disagree, a word id is outside ``[0, n_words)``, a word never occurs, a filing label is
        negative, or ``n_words`` is outside ``[1, MAX_WORDS]``.

    Examples
    --------
    >>> document_pooled([[1.0, 0.0], [3.0, 0.0], [0.0, 6.0]], [0, 0, 1], [4, 7, 4], 2).tolist()
    [[2.0, 0.0], [0.0, 6.0]]
    """
    h = _features(vectors, "vectors")
    n_words = check_positive_int(n_words, "n_words")
    if n_words > MAX_WORDS:
        raise ValueError(f"n_words must be at most {MAX_WORDS}, got {n_words}")
    w = as_int_array(words, "words", ndim=1)
    d = as_int_array(documents, "documents", ndim=1)
    for name, array in (("words", w), ("documents", d)):
        if array.size != h.shape[0]:
            raise ValueError(f"{name} must have one entry per row of vectors ({h.shape[0]}), got {array.size}")
    if w.min() < 0 or w.max() >= n_words:
        raise ValueError(f"words must hold ids in [0, n_words) = [0, {n_words}), got values from {w.min()} to "
                         f"{w.max()}")
    if d.min() < 0:
        raise ValueError(f"documents must hold non-negative filing labels, got {d.min()}")
    if np.unique(w).size != n_words:
        raise ValueError(f"words must contain every id in [0, {n_words}) (a word without occurrences has no mean)")
    pairs, pair_of = np.unique(np.stack([w, d], axis=1), axis=0, return_inverse=True)
    pair_of = pair_of.ravel()
    sums = np.zeros((pairs.shape[0], h.shape[1]))
    np.add.at(sums, pair_of, h)
    per_pair = sums / np.bincount(pair_of, minlength=pairs.shape[0])[:, None]
    out = np.zeros((n_words, h.shape[1]))
    np.add.at(out, pairs[:, 0], per_pair)
    return out / np.bincount(pairs[:, 0], minlength=n_words)[:, None]


def neighbour_pooled(vectors, document, index, radius: int | None) -> np.ndarray:
    r"""At each indexed token, the mean of the vectors of every token of its filing within ``radius`` positions.

    Token $t$ of filing $d$ (stream positions $[s_d, e_d)$) gets
    $\frac{1}{|J_t|}\sum_{j \in J_t} h_j$ with $J_t = \{j : s_d \le j < e_d,\ |j - t| \le k\}$; the token itself
    is included, so ``radius = 0`` returns its own vector, and ``None`` the whole filing's mean. Cumulative sums
    over the stream: linear in its length whatever the radius.

    Parameters
    ----------
    vectors : array_like, shape (n, d)
        One finite vector per token of the stream.
    document : array_like of int, shape (n,)
        Filing of each token, non-decreasing (filings stored one after another).
    index : array_like of int, shape (m,)
        Stream positions to pool around, in ``[0, n)``.
    radius : int or None
        $k \ge 0$ (any size: a filing bounds it), or ``None`` for the whole filing.

    Returns
    -------
    numpy.ndarray, shape (m, d)

    Raises
    ------
    TypeError
        If ``vectors`` is not numeric, ``document`` or ``index`` does not hold integers, or ``radius`` is neither
        an integer nor ``None``.
    ValueError
        If the shapes disagree, ``document`` decreases, ``index`` is empty or out of range, or ``radius`` is
        negative.

    Examples
    --------
    >>> h = [[0.0], [1.0], [2.0], [3.0], [10.0]]
    >>> doc = [0, 0, 0, 0, 1]
    >>> neighbour_pooled(h, doc, [1, 4], 1).tolist()        # filing 1 holds one token
    [[1.0], [10.0]]
    >>> neighbour_pooled(h, doc, [0], None).tolist(), neighbour_pooled(h, doc, [2], 0).tolist()
    ([[1.5]], [[2.0]])
    """
    h = _features(vectors, "vectors")
    n = h.shape[0]
    doc = as_int_array(document, "document", ndim=1)
    if doc.size != n:
        raise ValueError(f"document must have one entry per row of vectors ({n}), got {doc.size}")
    if np.any(np.diff(doc) < 0):
        raise ValueError("document must be non-decreasing (filings stored one after another)")
    at = as_int_array(index, "index", ndim=1)
    if at.size == 0:
        raise ValueError("index must hold at least one stream position")
    if at.min() < 0 or at.max() >= n:
        raise ValueError(f"index must hold stream positions in [0, {n}), got values from {at.min()} to {at.max()}")
    if radius is not None:
        radius = check_positive_int(radius, "radius", minimum=0)
    change = np.flatnonzero(np.diff(doc)) + 1
    starts = np.concatenate([[0], change])
    stops = np.concatenate([change, [n]])
    run = np.repeat(np.arange(starts.size), stops - starts)[at]
    low, high = starts[run], stops[run] - 1
    if radius is not None:
        low = np.maximum(low, at - min(radius, n))
        high = np.minimum(high, at + min(radius, n))
    total = np.concatenate([np.zeros((1, h.shape[1])), np.cumsum(h, axis=0)])
    return (total[high + 1] - total[low]) / (high - low + 1)[:, None]


def pooled_orientation(word_counts, positive, negative, truth, smoothing: float = SMOOTHING):
    r"""Chapter 6's document-pooled semantic orientation from per-filing counts, observed or expected.

    $\operatorname{SO}(w) = \log\frac{C(w,P) + \alpha}{C(w,N) + \alpha} - \log\frac{\sum_d n_d(P)}{\sum_d n_d(N)}$,
    $C(w, P) = \sum_d n_d(w)\, n_d(P)$: the formula of
    [`mlm_book.finance.orientation.semantic_orientation`][mlm_book.finance.orientation.semantic_orientation],
    with the seed counts given (they may be the head's expected counts, not integers). A word is predicted
    positive when $\operatorname{SO}(w) > 0$; an exact zero scores one half.

    Parameters
    ----------
    word_counts : array_like, shape (D, W)
        $n_d(w)$, non-negative.
    positive, negative : array_like, shape (D,)
        $n_d(P)$ and $n_d(N)$, non-negative, each with a positive total.
    truth : array_like of int, shape (W,)
        Dictionary polarity, +1 or -1.
    smoothing : float
        $\alpha > 0$ (at most 10^6).

    Returns
    -------
    score : numpy.ndarray, shape (W,)
        $\operatorname{SO}(w)$ in nats.
    accuracy : float
        Share of the words whose sign is right.

    Raises
    ------
    TypeError
        If an array is not numeric (``truth`` not integers) or ``smoothing`` is not a real number.
    ValueError
        If the shapes disagree, a count is negative, a seed total is zero, ``truth`` is not ±1, or ``smoothing``
        is not in ``(0, 1e6]``.

    Examples
    --------
    >>> score, accuracy = pooled_orientation([[2, 0], [0, 1]], [1, 0], [0, 1], [1, -1])
    >>> score.round(4).tolist(), accuracy
    ([1.6094, -1.0986], 1.0)
    """
    counts = as_float_array(word_counts, "word_counts", ndim=2)
    if counts.size == 0 or counts.min() < 0:
        raise ValueError("word_counts must be a non-empty array of non-negative counts")
    if counts.shape[1] > MAX_WORDS:
        raise ValueError(f"word_counts must have at most {MAX_WORDS} columns (words), got {counts.shape[1]}")
    seeds = []
    for name, value in (("positive", positive), ("negative", negative)):
        array = as_float_array(value, name, ndim=1)
        if array.size != counts.shape[0]:
            raise ValueError(f"{name} must have one entry per row (filing) of word_counts ({counts.shape[0]}), "
                             f"got {array.size}")
        if array.min() < 0 or array.sum() <= 0:
            raise ValueError(f"{name} must hold non-negative counts with a positive total")
        seeds.append(array)
    y = as_int_array(truth, "truth", ndim=1)
    if y.size != counts.shape[1]:
        raise ValueError(f"truth must have one entry per column (word) of word_counts ({counts.shape[1]}), got "
                         f"{y.size}")
    if np.any(np.abs(y) != 1):
        raise ValueError("truth must hold polarities +1 or -1")
    alpha = check_real(smoothing, "smoothing", low=0.0, high=1e6)
    if alpha <= 0:
        raise ValueError(f"smoothing must be positive (a zero count would give log 0), got {smoothing}")
    with_positive, with_negative = counts.T @ seeds[0], counts.T @ seeds[1]
    score = (np.log((with_positive + alpha) / (with_negative + alpha)) - np.log(seeds[0].sum() / seeds[1].sum()))
    correct = np.where(score == 0, 0.5, (np.sign(score) == y).astype(np.float64))
    return score, float(correct.mean())


def head_orientation(word_counts, slot_documents, positive_mass, negative_mass, truth,
                     smoothing: float = SMOOTHING):
    r"""Orientation from the masked-LM head: chapter 6's formula with each filing's seed counts replaced by the
    head's expected counts at its seed slots.

    $\hat n_d(P) = \sum_{j \in d} q_j(P)$ over the seed slots $j$ of filing $d$ (likewise $N$), then
    [`pooled_orientation`][mlm_book.artefacts.filing_polarity.pooled_orientation]. With
    $q_j(P) = 1$ at a positive seed and 0 elsewhere (a head that knows the word that stands there), this is
    chapter 6's orientation.

    Parameters
    ----------
    word_counts : array_like, shape (D, W)
        $n_d(w)$, non-negative.
    slot_documents : array_like of int, shape (J,)
        The filing of each seed slot, in ``[0, D)``.
    positive_mass, negative_mass : array_like, shape (J,)
        The head's probability of the positive and of the negative seed words at each slot, in [0, 1], summing
        to at most 1 at each slot, each with a positive total.
    truth : array_like of int, shape (W,)
        Dictionary polarity, +1 or -1.
    smoothing : float
        $\alpha > 0$.

    Returns
    -------
    score : numpy.ndarray, shape (W,)
    accuracy : float

    Raises
    ------
    TypeError
        If an array is not numeric (``slot_documents`` and ``truth`` not integers), or ``smoothing`` is not a
        real number.
    ValueError
        If the shapes disagree, a slot's filing is outside ``[0, D)``, a mass is outside [0, 1] or a slot's two
        masses sum above 1, or as [`pooled_orientation`][mlm_book.artefacts.filing_polarity.pooled_orientation].

    Examples
    --------
    A head that is sure at filing 0's slot and undecided at filing 1's:

    >>> score, accuracy = head_orientation([[2, 0], [0, 1]], [0, 1], [0.9, 0.4], [0.1, 0.4], [1, -1])
    >>> score.round(3).tolist(), accuracy
    ([0.234, -0.956], 1.0)
    """
    counts = as_float_array(word_counts, "word_counts", ndim=2)
    slots = as_int_array(slot_documents, "slot_documents", ndim=1)
    if slots.size == 0:
        raise ValueError("slot_documents must hold at least one seed slot")
    if slots.min() < 0 or slots.max() >= counts.shape[0]:
        raise ValueError(f"slot_documents must hold filings in [0, {counts.shape[0]}) (rows of word_counts), got "
                         f"values from {slots.min()} to {slots.max()}")
    masses = []
    for name, value in (("positive_mass", positive_mass), ("negative_mass", negative_mass)):
        array = as_float_array(value, name, ndim=1)
        if array.size != slots.size:
            raise ValueError(f"{name} must have one entry per seed slot of slot_documents ({slots.size}), "
                             f"got {array.size}")
        if array.min() < 0 or array.max() > 1:
            raise ValueError(f"{name} must hold probabilities in [0, 1]")
        masses.append(array)
    if np.any(masses[0] + masses[1] > 1 + 1e-9):
        raise ValueError("positive_mass + negative_mass must be at most 1 at every slot (one distribution)")
    expected = [np.bincount(slots, weights=mass, minlength=counts.shape[0]) for mass in masses]
    return pooled_orientation(counts, expected[0], expected[1], truth, smoothing)


def spearman(a, b) -> float:
    r"""Spearman's rank correlation of two samples (ties get their average rank).

    Parameters
    ----------
    a, b : array_like, shape (n,)
        Finite, ``n >= 3``, neither constant.

    Returns
    -------
    float
        In [-1, 1].

    Raises
    ------
    TypeError
        If ``a`` or ``b`` is not numeric.
    ValueError
        If they are not 1-D of one length ``n >= 3``, or one is constant.

    Examples
    --------
    >>> spearman([1.0, 2.0, 3.0, 4.0], [10.0, 20.0, 40.0, 30.0])
    0.8
    """
    x = as_float_array(a, "a", ndim=1)
    y = as_float_array(b, "b", ndim=1)
    if x.size < 3 or y.size != x.size:
        raise ValueError(f"a and b must have one length of at least 3, got {x.size} and {y.size}")
    ranks = []
    for name, values in (("a", x), ("b", y)):
        if np.ptp(values) == 0:
            raise ValueError(f"{name} must not be constant (its ranks have no spread)")
        order = np.argsort(values, kind="stable")
        rank = np.empty(values.size)
        rank[order] = np.arange(values.size, dtype=np.float64)
        _, inverse, counts = np.unique(values, return_inverse=True, return_counts=True)
        sums = np.bincount(inverse.ravel(), weights=rank)
        ranks.append(sums[inverse.ravel()] / counts[inverse.ravel()])
    rx, ry = (r - r.mean() for r in ranks)
    return float(np.clip(rx @ ry / math.sqrt((rx @ rx) * (ry @ ry)), -1.0, 1.0))


# --------------------------------------------------------------------------------------
# Reading one encoder: the run of this kind
# --------------------------------------------------------------------------------------


def _world():
    return filings.filings()


def _lexicon_occurrences() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Stream index, word id (``LEXICON`` order) and filing of every occurrence of a lexicon word (chapter 6's
    set: every token that is a lexicon word)."""
    from mlm_book.finance.world import LEXICON

    corpus = _world().corpus
    lookup = {word: i for i, word in enumerate(LEXICON)}
    column = np.fromiter((lookup.get(token, -1) for token in corpus.tokens.tolist()), dtype=np.int64)
    index = np.flatnonzero(column >= 0)
    return index, column[index], corpus.document[index]


def _seed_slots() -> tuple[np.ndarray, np.ndarray]:
    """Stream index of every seed word, and its polarity (+1 positive seed, -1 negative)."""
    from mlm_book.finance.world import NEGATIVE_SEEDS, POSITIVE_SEEDS

    tokens = _world().corpus.tokens
    positive, negative = np.isin(tokens, POSITIVE_SEEDS), np.isin(tokens, NEGATIVE_SEEDS)
    index = np.flatnonzero(positive | negative)
    return index, np.where(positive[index], 1, -1)


def _word_counts() -> np.ndarray:
    from mlm_book.finance.orientation import document_counts
    from mlm_book.finance.world import LEXICON

    return document_counts(_world().corpus, list(LEXICON))


def _nearest_vectors(result, stride: int = READ_STRIDE) -> np.ndarray:
    """``(n_tokens, layers, d)`` every token's vectors in chapter 6's nearest-centre reading (stride 16 in the book)."""
    from mlm_book.finance.windows import fixed_windows, gather_windows, nearest_centre
    from mlm_book.nn import encoder as enc

    world = _world()
    document = world.corpus.document
    config = result.encoder
    starts = fixed_windows(document, length=config.length, stride=stride)
    window, position = nearest_centre(document, starts, length=config.length)
    windows = gather_windows(world.ids, starts, length=config.length)
    out = np.empty((document.size, config.n_blocks + 1, config.d_model))
    order = np.argsort(window, kind="stable")
    bounds = np.searchsorted(window[order], np.arange(0, starts.size + 512, 512))
    for block, start in enumerate(range(0, starts.size, 512)):
        hidden = enc.hidden_states(result.params, config, windows[start:start + 512])
        tokens = order[bounds[block]:bounds[block + 1]]
        for layer, h in enumerate(hidden):
            out[tokens, layer] = h[window[tokens] - start, position[tokens]]
    return out


def _head_masses(result, slots: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The head's probability of the positive and the negative seeds at each slot, masked in its centred window."""
    from mlm_book.finance.windows import centre_position, centred_windows
    from mlm_book.finance.world import NEGATIVE_SEEDS, POSITIVE_SEEDS
    from mlm_book.nn import encoder as enc

    world = _world()
    config = result.encoder
    windows, _ = centred_windows(world.ids, world.corpus.document, length=config.length, pad_id=config.pad_id,
                                 select=slots)
    centre = centre_position(config.length)
    windows[:, centre] = config.mask_id
    q = np.concatenate([enc.predict_proba(result.params, config, windows[start:start + 512])[:, centre]
                        for start in range(0, slots.size, 512)])
    lookup = world.vocabulary.lookup
    return (q[:, [lookup(word) for word in POSITIVE_SEEDS]].sum(axis=1),
            q[:, [lookup(word) for word in NEGATIVE_SEEDS]].sum(axis=1))


@dataclass(frozen=True)
class PolaritySetup:
    """One run: the filing encoder read, and the protocol it is read with (the book's constants above).

    Attributes
    ----------
    encoder : FilingEncoderSetup
        The trained filing encoder (chapter 7's at one of its seeds in the book).
    layers, radii, read_stride, smoothing
        `LAYERS`, `RADII`, `READ_STRIDE` and `SMOOTHING` in the book.

    Examples
    --------
    >>> [setup.encoder.seed for setup in book_setups()]
    [20240601, 1, 2, 3, 4]
    >>> PolaritySetup(fe.SETUP, read_stride=0)
    Traceback (most recent call last):
    ...
    ValueError: read_stride must be an integer >= 1, got 0

    >>> from mlm_book.artefacts.filing_encoder import FilingEncoderSetup
    >>> PolaritySetup(FilingEncoderSetup(steps=3)).layers
    (0, 1, 2)
    """

    encoder: fe.FilingEncoderSetup
    layers: tuple = LAYERS
    radii: tuple = RADII
    read_stride: int = READ_STRIDE
    smoothing: float = SMOOTHING

    def __post_init__(self):
        check_instance(self.encoder, "encoder", fe.FilingEncoderSetup)
        if not isinstance(self.layers, tuple) or not self.layers:
            raise TypeError(f"layers must be a non-empty tuple of layer numbers, got {self.layers!r:.60}")
        for layer in self.layers:
            check_positive_int(layer, "layers", minimum=0)
        if not isinstance(self.radii, tuple) or not self.radii:
            raise TypeError(f"radii must be a non-empty tuple of radii (None: the whole filing), got {self.radii!r:.60}")
        for radius in self.radii:
            if radius is not None:
                check_positive_int(radius, "radii", minimum=0)
        check_positive_int(self.read_stride, "read_stride")
        check_real(self.smoothing, "smoothing", low=0.0)


def _measure(setup: PolaritySetup) -> dict:
    """Every number of the three experiments on the filing encoder of ``setup``."""
    from mlm_book.finance.world import LEXICON

    result = fe.trained_encoder(setup.encoder)
    labels = np.array([int(LEXICON[word] > 0) for word in LEXICON])
    truth = 2 * labels - 1
    index, word, document = _lexicon_occurrences()
    own = fe.centre_states(result, index)                                   # (m, layers, d), centred reading
    pooled = [document_pooled(own[:, layer], word, document, len(LEXICON)) for layer in setup.layers]
    document_accuracy = [loo_accuracy(x, labels) for x in pooled]
    everything = _nearest_vectors(result, setup.read_stride)
    stream_document = _world().corpus.document
    neighbour = []
    for radius in setup.radii:
        row = []
        for layer in setup.layers:
            around = neighbour_pooled(everything[:, layer], stream_document, index, radius)
            means = document_pooled(around, word, np.zeros_like(word), len(LEXICON))    # one "filing": the mean
            row.append(loo_accuracy(means, labels))
        neighbour.append(row)
    slots, polarity = _seed_slots()
    positive, negative = _head_masses(result, slots)
    score, accuracy = head_orientation(_word_counts(), stream_document[slots], positive, negative, truth,
                                       smoothing=setup.smoothing)
    return {"document": np.array(document_accuracy), "neighbour": np.array(neighbour), "head_score": score,
            "head_accuracy": np.array([accuracy]), "positive_mass": positive, "negative_mass": negative,
            "slot_polarity": polarity}


def _entry(setup: PolaritySetup) -> tuple:
    check_instance(setup, "setup", PolaritySetup)
    key = {"encoder": asdict(setup.encoder), "layers": list(setup.layers),
           "radii": [-1 if r is None else r for r in setup.radii], "read_stride": setup.read_stride,
           "smoothing": setup.smoothing}
    return "filing-polarity", key, [artefacts.key_source("filing-polarity")]


def measured(setup: PolaritySetup) -> dict:
    """The three experiments' arrays on the encoder of ``setup`` (from the store; measured on a miss).

    Returns
    -------
    dict
        ``document`` ``(L,)`` and ``neighbour`` ``(R, L)`` leave-one-out accuracies; ``head_score`` ``(W,)`` and
        ``head_accuracy`` ``(1,)``, the head's orientation; ``positive_mass``, ``negative_mass`` and
        ``slot_polarity`` at every seed slot.

    Raises
    ------
    TypeError
        If ``setup`` is not a `PolaritySetup`.
    """
    name, key, producers = _entry(setup)

    def build():
        with runtime.blas_threads(1):          # many small products: a second thread only contends
            return _measure(setup)

    arrays, _ = cache.cached(name, key, producers, build)
    return arrays


def is_built(setup: PolaritySetup) -> bool:
    """Whether the store holds the run of ``setup`` (a damaged entry counts as absent).

    Raises
    ------
    TypeError
        If ``setup`` is not a `PolaritySetup`.

    Examples
    --------
    >>> isinstance(is_built(book_setups()[0]), bool)       # the book's seed: True once it is built
    True
    """
    return cache.load(cache.entry_for(*_entry(setup))) is not None


def book_setups() -> tuple[PolaritySetup, ...]:
    """The filing encoder at each of its five seeds, the book's first, read with the book's protocol."""
    return tuple(PolaritySetup(fe.seed_setup(seed)) for seed in fe.SEEDS)


def tiny_setup() -> PolaritySetup:
    """The tiny filing encoder read with the book's protocol: the same code in seconds.

    Examples
    --------
    >>> tiny_setup().read_stride
    16
    """
    return PolaritySetup(fe.tiny_setup())


# ----------------------------------------------------------------------------- the declaration (not keyed)
#: Seconds of one encoder's run on one core (about 4,000 windows read, 18 leave-one-out probes of 35 fits),
#: measured on 2026-12-03.
_SECONDS = 7.0

ARTEFACT_KINDS = (artefacts.Kind(
    name="filing-polarity", chapter=11,
    summary="chapter 11's polarity experiments on the filing encoder (pooled vectors, the head's orientation), 5 seeds",
    modules=("mlm_book.artefacts.filing_polarity", "mlm_book.finance.orientation"), after=("filing-encoder",),
    setups=book_setups, is_built=is_built, build=measured, cost=lambda setup: _SECONDS,
    describe=lambda setup: f"seed {setup.encoder.seed}", tiny=tiny_setup),)
