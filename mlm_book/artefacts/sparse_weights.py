r"""Chapter 11's sparse-retrieval study (open question Q13), as an artefact: the filing encoder's head read as SPLADE term weights.

SPLADE turns a masked-LM head into a bag of term weights for a document: with $z_{i,v}$ the
head's logit for word $v$ at position $i$, SPLADE v2's max pooling gives
$w_v = \max_i \log(1 + \operatorname{ReLU}(z_{i,v}))$ ([`splade_weights`][mlm_book.artefacts.sparse_weights.splade_weights]).
A run reads one filing encoder ([`mlm_book.artefacts.filing_encoder`][mlm_book.artefacts.filing_encoder])
on the held-out filings, every token at the centre of its own window, shown or masked
([`READINGS`][mlm_book.artefacts.sparse_weights.READINGS]), and stores each filing's weights under
both [`POOLINGS`][mlm_book.artefacts.sparse_weights.POOLINGS] and the share of positive logits at its
positions (about five seconds of one core per encoder). The question, the gold, the measures and
the rules are chapter 11's: [`mlm_book.experiments.ch11_sparse`][mlm_book.experiments.ch11_sparse].

Examples
--------
Max pooling of $\log(1 + \operatorname{ReLU}(z))$ over two positions, three words:

>>> w = splade_weights([[2.0, -1.0, 0.0], [0.5, -3.0, np.e - 1]], exclude=())
>>> np.round(w, 6).tolist()
[1.098612, 0.0, 1.0]
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np

from mlm_book import artefacts, cache
from mlm_book.artefacts import filing_encoder
from mlm_book.finance.vocab import SEP_ID, UNK_ID
from mlm_book.finance.windows import centre_position, centred_windows
from mlm_book.nn import encoder as enc
from mlm_book.nn import runtime
from mlm_book.validation import as_float_array, as_int_array, check_choice, check_instance, check_positive_int, check_sequence

__all__ = ["READINGS", "EXCLUDED_IDS", "POOLINGS", "splade_weights", "filing_logits", "filing_weights",
           "WeightsSetup", "held_out_documents", "weights", "is_built", "book_setups", "tiny_setup", "ARTEFACT_KINDS"]

READINGS = ("shown", "masked")
"""How each token is read: itself at the centre of its window (SPLADE's input), or ``[MASK]`` there."""

EXCLUDED_IDS = (UNK_ID, SEP_ID)
"""Output classes that get no weight: ``[UNK]`` and ``[SEP]`` (``[MASK]`` and ``[PAD]`` have no logit)."""

POOLINGS = ("splade", "pmi")
"""How a filing's positions are pooled. ``"splade"``: SPLADE v2's $\\max_i \\log(1 + \\operatorname{ReLU}(z_{i,v}))$,
the method under test. ``"pmi"``: $\\max_i \\log q_i(v) - \\log u(v)$, the head's log-probability (which no
shift of the logits changes) less the word's log corpus frequency. The second is a diagnosis chosen after the
first's numbers were seen (is the head's ranking buried under the logits' level and the words' frequency?);
no rule judges it."""

_BATCH = 512


# ----------------------------------------------------------------------------- pooling and reading
def splade_weights(logits, exclude=EXCLUDED_IDS) -> np.ndarray:
    r"""SPLADE v2's max pooling: $w_v = \max_i \log(1 + \operatorname{ReLU}(z_{i,v}))$.

    Since $\log(1 + \operatorname{ReLU}(\cdot))$ is non-decreasing, this is
    $\log(1 + \operatorname{ReLU}(\max_i z_{i,v}))$: non-negative, and zero exactly where every
    position's logit for $v$ is at most zero.

    Parameters
    ----------
    logits : array_like, shape (n, V)
        A head's logits at the $n \ge 1$ positions of one document.
    exclude : sequence of int
        Output classes whose weight is set to zero (default ``[UNK]`` and ``[SEP]``).

    Returns
    -------
    numpy.ndarray, shape (V,), float64

    Raises
    ------
    TypeError
        If ``logits`` is not numeric or ``exclude`` does not hold integers.
    ValueError
        If ``logits`` is not a finite 2-D array with at least one row, or an ``exclude`` id is
        outside ``[0, V)``.

    Examples
    --------
    >>> splade_weights([[1.0, 5.0, -2.0], [3.0, 0.0, -1.0]]).round(4).tolist()   # ids 0 and 1 excluded
    [0.0, 0.0, 0.0]
    >>> splade_weights([[1.0, 5.0, -2.0], [3.0, 0.0, -1.0]], exclude=()).round(4).tolist()
    [1.3863, 1.7918, 0.0]
    """
    z = as_float_array(logits, "logits", ndim=2)
    if z.shape[0] == 0 or z.shape[1] == 0:
        raise ValueError(f"logits must have at least one position and one word, got shape {z.shape}")
    if not isinstance(exclude, np.ndarray):
        exclude = check_sequence(exclude, "exclude")
    drop = as_int_array(exclude, "exclude", ndim=1) if len(exclude) else np.zeros(0, dtype=np.int64)
    if drop.size and (drop.min() < 0 or drop.max() >= z.shape[1]):
        raise ValueError(f"exclude must hold output classes of logits, in [0, {z.shape[1]}), got {drop.tolist()}")
    weights = np.log1p(np.maximum(z.max(axis=0), 0.0))
    weights[drop] = 0.0
    return weights


def _check_result(result):
    config = getattr(result, "encoder", None)
    if not isinstance(config, enc.EncoderConfig) or not hasattr(result, "params"):
        raise TypeError(f"result must be a trained encoder (a TrainResult), got {type(result).__name__}")
    world = filing_encoder.filing_world()
    if not (config.pad and config.vocab_size == world.vocabulary.size):
        raise ValueError(f"result must be a filing encoder (with [PAD], over chapter 6's {world.vocabulary.size} "
                         f"words), got encoder {config!r}")
    return result


def _check_document(document, name: str = "document") -> int:
    n = filing_encoder.filing_world().corpus.n_documents
    document = check_positive_int(document, name, minimum=0)
    if document >= n:
        raise ValueError(f"{name} must hold filing indices in [0, {n}), got {document}")
    return document


def _centre_logits(result, select: np.ndarray, reading: str) -> np.ndarray:
    """Unchecked: ``(m, V)`` centre logits (the parameters' dtype) of the tokens at stream indices ``select``."""
    world = filing_encoder.filing_world()
    config = result.encoder
    windows, _ = centred_windows(world.ids, world.corpus.document, length=config.length, pad_id=config.pad_id,
                                 select=select)
    centre = centre_position(config.length)
    if reading == "masked":
        windows[:, centre] = config.mask_id
    rows = []
    for start in range(0, windows.shape[0], _BATCH):
        shown = windows[start:start + _BATCH]
        selected = np.zeros(shown.shape, dtype=bool)
        selected[:, centre] = True
        rows.append(enc.forward(result.params, config, shown, selected)[0])
    return np.concatenate(rows)


def _filing_logits(result, document: int, reading: str) -> np.ndarray:
    """Unchecked: ``(n, V)`` float64 centre logits of every token of ``document``."""
    bounds = filing_encoder.filing_world().corpus.document_bounds()
    select = np.arange(bounds[document], bounds[document + 1])
    return np.asarray(_centre_logits(result, select, reading), dtype=np.float64)


def filing_logits(result, document: int, *, reading: str = "shown") -> np.ndarray:
    """The head's logits at the centre of each token's own window, for every token of one filing.

    Parameters
    ----------
    result : TrainResult
        A trained filing encoder, e.g. [`trained_encoder`][mlm_book.artefacts.filing_encoder.trained_encoder].
    document : int
        A filing index of chapter 6's corpus.
    reading : str
        ``"shown"`` (the token at the centre) or ``"masked"`` (``[MASK]`` there).

    Returns
    -------
    numpy.ndarray, shape (n, V), float64
        Row $i$ is the logits for the filing's $i$-th token (``[SEP]`` included); $V$ output classes.

    Raises
    ------
    TypeError
        If ``result`` is not a trained encoder, ``document`` not an integer or ``reading`` not a str.
    ValueError
        If ``result`` is not a filing encoder, ``document`` is not a filing index, or ``reading``
        is not one of ``READINGS``.

    Examples
    --------
    The shapes need no training: a small untrained encoder over the filing vocabulary reads filing 0
    (the book reads [`trained_encoder`][mlm_book.artefacts.filing_encoder.trained_encoder]).

    >>> from dataclasses import replace
    >>> from mlm_book.nn.train import TrainConfig, TrainResult
    >>> V = filing_encoder.filing_world().vocabulary.size
    >>> config = replace(filing_encoder.SETUP.encoder(V), d_model=8, n_blocks=1, n_heads=2)
    >>> untrained = TrainResult(config, TrainConfig(steps=1), enc.init_params(config, np.random.default_rng(0)),
    ...                         np.zeros(1))
    >>> z = filing_logits(untrained, 0)
    >>> z.shape == (int(np.sum(filing_encoder.filing_world().corpus.document == 0)), V), z.dtype
    (True, dtype('float64'))
    """
    result = _check_result(result)
    document = _check_document(document)
    reading = check_choice(reading, "reading", READINGS)
    return _filing_logits(result, document, reading)


def filing_weights(result, documents, *, reading: str = "shown") -> np.ndarray:
    """SPLADE term weights of each filing: [`splade_weights`][mlm_book.artefacts.sparse_weights.splade_weights] of
    its [`filing_logits`][mlm_book.artefacts.sparse_weights.filing_logits].

    Parameters
    ----------
    result : TrainResult
        A trained filing encoder.
    documents : array_like of int, shape (F,)
        Filing indices.
    reading : str
        One of ``READINGS``.

    Returns
    -------
    numpy.ndarray, shape (F, V), float64
        Non-negative; ``[UNK]`` and ``[SEP]`` weigh zero.

    Raises
    ------
    TypeError
        If ``result`` is not a trained encoder, ``documents`` does not hold integers or ``reading`` is not a str.
    ValueError
        If ``result`` is not a filing encoder, ``documents`` is empty or holds a non-filing index, or
        ``reading`` is not one of ``READINGS``.

    Examples
    --------
    A small untrained encoder over the filing vocabulary (the book reads
    [`trained_encoder`][mlm_book.artefacts.filing_encoder.trained_encoder]): one row per filing,
    non-negative, ``[UNK]`` (id 0) and ``[SEP]`` (id 1) at zero.

    >>> from dataclasses import replace
    >>> from mlm_book.nn.train import TrainConfig, TrainResult
    >>> config = replace(filing_encoder.SETUP.encoder(867), d_model=8, n_blocks=1, n_heads=2)
    >>> untrained = TrainResult(config, TrainConfig(steps=1), enc.init_params(config, np.random.default_rng(0)),
    ...                         np.zeros(1))
    >>> w = filing_weights(untrained, [0, 1])
    >>> w.shape, bool(w.min() >= 0), float(w[:, :2].max())
    ((2, 867), True, 0.0)
    """
    result = _check_result(result)
    documents = as_int_array(documents, "documents", ndim=1)
    if documents.size == 0:
        raise ValueError("documents must hold at least one filing index")
    for document in documents.tolist():
        _check_document(document, "documents")
    reading = check_choice(reading, "reading", READINGS)
    return np.stack([splade_weights(_filing_logits(result, d, reading)) for d in documents.tolist()])


# ----------------------------------------------------------------------------- the run: one encoder's weights
def _pooled(result, documents, reading: str) -> dict:
    """SPLADE and PMI pooling of the held-out filings' centre logits, read in one batched pass, and the share of
    positive logits at each filing's positions. PMI: $\\max_i \\log q_i(v) - \\log u(v)$ with $u$ the corpus unigram
    over the output classes; ``[UNK]`` and ``[SEP]`` get the filing's smallest PMI weight."""
    world = filing_encoder.filing_world()
    bounds = world.corpus.document_bounds()
    select = np.concatenate([np.arange(bounds[d], bounds[d + 1]) for d in documents])
    starts = np.concatenate([[0], np.cumsum([bounds[d + 1] - bounds[d] for d in documents])[:-1]])
    z = _centre_logits(result, select, reading)
    V = z.shape[1]
    keep = np.ones(V, dtype=bool)
    keep[list(EXCLUDED_IDS)] = False
    splade = np.log1p(np.maximum(np.maximum.reduceat(z, starts, axis=0), 0.0)).astype(np.float64)
    splade[:, ~keep] = 0.0
    top = z.max(axis=1, keepdims=True)
    log_q = z - (top + np.log(np.exp(z - top).sum(axis=1, keepdims=True)))
    unigram = np.bincount(world.ids, minlength=V) / world.ids.size
    pmi = np.maximum.reduceat(log_q, starts, axis=0).astype(np.float64) - np.log(unigram)[None, :]
    pmi[:, ~keep] = pmi[:, keep].min(axis=1, keepdims=True)
    positive = np.add.reduceat((z[:, keep] > 0).mean(axis=1), starts) / np.diff(np.append(starts, z.shape[0]))
    return {"splade": splade, "pmi": pmi, "positive": positive}


def held_out_documents(setup: filing_encoder.FilingEncoderSetup = filing_encoder.SETUP) -> tuple[int, ...]:
    """The filings held out from the training of ``setup``'s encoder (the book's 60), in order.

    Examples
    --------
    >>> len(held_out_documents())
    60
    """
    check_instance(setup, "setup", filing_encoder.FilingEncoderSetup)
    return tuple(int(d) for d in filing_encoder.split(setup).test_documents)


@dataclass(frozen=True)
class WeightsSetup:
    """One run: the filing encoder read and the filings it reads.

    Attributes
    ----------
    encoder : FilingEncoderSetup
        The trained filing encoder (chapter 7's at one of its seeds in the book).
    documents : tuple of int
        The filings read, in order (the book's 60 held-out filings).

    Examples
    --------
    >>> [setup.encoder.seed for setup in book_setups()]
    [20240601, 1, 2, 3, 4]
    >>> WeightsSetup(filing_encoder.SETUP, documents=())
    Traceback (most recent call last):
    ...
    ValueError: documents must hold at least one filing index

    >>> from mlm_book.artefacts.filing_encoder import FilingEncoderSetup
    >>> WeightsSetup(FilingEncoderSetup(steps=3), (0, 1)).documents
    (0, 1)
    """

    encoder: filing_encoder.FilingEncoderSetup
    documents: tuple

    def __post_init__(self):
        check_instance(self.encoder, "encoder", filing_encoder.FilingEncoderSetup)
        if not isinstance(self.documents, tuple):
            raise TypeError(f"documents must be a tuple of filing indices, got {type(self.documents).__name__}")
        if not self.documents:
            raise ValueError("documents must hold at least one filing index")
        for document in self.documents:
            _check_document(document, "documents")


def _build(setup: WeightsSetup) -> dict:
    result = filing_encoder.trained_encoder(setup.encoder)
    documents = list(setup.documents)
    arrays = {}
    with runtime.blas_threads(1):      # many small products: a second thread only contends
        for reading in READINGS:
            for name, value in _pooled(result, documents, reading).items():
                arrays[f"{reading}-{name}"] = value
    return arrays


def _entry(setup: WeightsSetup) -> tuple:
    check_instance(setup, "setup", WeightsSetup)
    key = {"encoder": asdict(setup.encoder), "documents": list(setup.documents), "readings": list(READINGS),
           "excluded": list(EXCLUDED_IDS), "batch": _BATCH}
    return "sparse-weights", key, [artefacts.key_source("sparse-weights")]


def weights(setup: WeightsSetup) -> dict:
    """The run of ``setup`` (from the store; read on a miss): ``"<reading>-splade"`` and ``"<reading>-pmi"``,
    ``(F, V)`` weights of each filing, and ``"<reading>-positive"``, ``(F,)`` the mean share of positive logits
    at its positions, for each of `READINGS`.

    Raises
    ------
    TypeError
        If ``setup`` is not a `WeightsSetup`.
    """
    name, key, producers = _entry(setup)
    arrays, _ = cache.cached(name, key, producers, lambda: _build(setup))
    return arrays


def is_built(setup: WeightsSetup) -> bool:
    """Whether the store holds the run of ``setup`` (a damaged entry counts as absent).

    Raises
    ------
    TypeError
        If ``setup`` is not a `WeightsSetup`.

    Examples
    --------
    The book's run at its first seed (the answer depends on what the store holds; asking builds nothing):

    >>> isinstance(is_built(book_setups()[0]), bool)
    True
    """
    return cache.load(cache.entry_for(*_entry(setup))) is not None


def book_setups() -> tuple[WeightsSetup, ...]:
    """The filing encoder at each of its five seeds, the book's first, on the 60 held-out filings."""
    documents = held_out_documents()
    return tuple(WeightsSetup(filing_encoder.seed_setup(seed), documents) for seed in filing_encoder.SEEDS)


def tiny_setup() -> WeightsSetup:
    """The tiny filing encoder on two held-out filings: the same code in seconds.

    Examples
    --------
    >>> len(tiny_setup().documents)
    2
    """
    return WeightsSetup(filing_encoder.tiny_setup(), held_out_documents()[:2])


# ----------------------------------------------------------------------------- the declaration (not keyed)
#: Seconds of one encoder's run on one core (both readings of the 60 held-out filings), measured on 2026-12-03.
_SECONDS = 5.0

ARTEFACT_KINDS = (artefacts.Kind(
    name="sparse-weights", chapter=11,
    summary="chapter 11's SPLADE reading of the filing encoder's head on the held-out filings, 5 seeds",
    modules=("mlm_book.artefacts.sparse_weights",), after=("filing-encoder",),
    setups=book_setups, is_built=is_built, build=weights,
    cost=lambda setup: _SECONDS * len(setup.documents) / 60,
    describe=lambda setup: f"seed {setup.encoder.seed}", tiny=tiny_setup),)
