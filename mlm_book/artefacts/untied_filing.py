r"""Chapter 11's test of the cone on the filing encoder (open question Q4): the book's recipe with an untied output
table, one run per seed, measured beside the same seed's tied encoder.

Gao et al. (2019) trace the representation cone to the tied output layer: every softmax gradient pushes the output
rows of the words that are not the target along one shared direction, rare words (seldom a target) furthest, and a
tied table hands that drift to the input embeddings. Chapter 11 tested it on the HMM encoder, whose 26 words are
none of them rare. The filing encoder's vocabulary (chapter 6's 865 words) has a long tail, so it is the place to
look.

A run of this kind trains the book's filing encoder
([`mlm_book.artefacts.filing_encoder`][mlm_book.artefacts.filing_encoder], its public pieces: the same windows,
channel, schedule and seed) with ``tied=False``, the output layer then having its own table ``E_out``, and measures
it and the same seed's tied book encoder the same way:

* the **tables**: the mean pairwise cosine of the rows of the vocabulary's words (the two specials left out), and
  of the rows of the rarest third of them ([`rare_words`][mlm_book.artefacts.untied_filing.rare_words]), for the
  input table ``E`` and the output table (``E[:V]`` when tied, ``E_out`` when not);
* the **layers**: at each layer, chapter 7's anisotropy baseline and MEV of its pool of uniformly drawn tokens
  ([`pool_tokens`][mlm_book.artefacts.untied_filing.pool_tokens], chapter 7's own draw, so the tied numbers are
  chapter 7's), and the mean cosine among the vectors of every occurrence of a rare word; all read as chapter 7
  reads them ([`centre_states`][mlm_book.artefacts.filing_encoder.centre_states]);
* the isotropic reference of the pool's MEV (1000 Gaussian vectors in d dimensions).

The comparison, its rules and its answer are chapter 11's:
[`mlm_book.experiments.ch11_untied_filing`][mlm_book.experiments.ch11_untied_filing].

Examples
--------
>>> len(SEEDS), SEEDS == fe.SEEDS
(5, True)
>>> untied_setup(1).encoder == fe.seed_setup(1)      # the tied twin's recipe; untying is the run's one change
True
"""

from __future__ import annotations

import time
from dataclasses import dataclass, replace

import numpy as np

from mlm_book import artefacts, cache, geometry
from mlm_book.artefacts import filing_encoder as fe
from mlm_book.finance.vocab import SEP_ID
from mlm_book.nn import encoder as enc
from mlm_book.nn import runtime
from mlm_book.nn.train import TrainResult, cached_training
from mlm_book.validation import check_instance

__all__ = [
    "ARTEFACT_KINDS",
    "SEEDS",
    "UntiedFilingSetup",
    "book_setups",
    "is_built",
    "measured",
    "pool_tokens",
    "rare_words",
    "tiny_setup",
    "trained_untied",
    "untied_setup",
]

SEEDS = fe.SEEDS
"""Training seeds of the runs: the filing encoder's five, the book's first (a registered comparison keeps five)."""


@dataclass(frozen=True)
class UntiedFilingSetup:
    """One run: the filing encoder of ``encoder``'s recipe with an untied output table, and its tied twin.

    Attributes
    ----------
    encoder : FilingEncoderSetup
        The tied recipe (the book's, at one seed). The run trains it with ``tied=False`` and nothing else changed,
        and reads the tied encoder of the same setup beside it.

    Raises
    ------
    TypeError
        If ``encoder`` is not a ``FilingEncoderSetup``.
    ValueError
        If ``encoder`` trains on other filings than the book's (the readings are chapter 7's, on those).

    Examples
    --------
    >>> UntiedFilingSetup(fe.seed_setup(2)) == untied_setup(2)
    True
    >>> untied_setup(SEEDS[2]).encoder.seed, untied_setup(SEEDS[2]).encoder.steps == fe.SETUP.steps
    (2, True)
    >>> UntiedFilingSetup("the book's encoder")
    Traceback (most recent call last):
    ...
    TypeError: encoder must be FilingEncoderSetup, got str
    """

    encoder: fe.FilingEncoderSetup

    def __post_init__(self):
        check_instance(self.encoder, "encoder", fe.FilingEncoderSetup)
        if self.encoder.filings_setup != fe.SETUP.filings_setup:
            raise ValueError("encoder must train on the book's filings (its filings_setup the default): the "
                             f"readings are chapter 7's, got {self.encoder.filings_setup!r:.120}")


def untied_setup(seed: int) -> UntiedFilingSetup:
    """The book's filing-encoder recipe at training seed ``seed``, to be trained untied.

    Raises
    ------
    TypeError
        If ``seed`` is not an integer.
    ValueError
        If ``seed`` is negative.

    Examples
    --------
    >>> untied_setup(3).encoder == fe.seed_setup(3)
    True
    >>> untied_setup(-1)
    Traceback (most recent call last):
    ...
    ValueError: seed must be a non-negative integer, got -1
    """
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise TypeError(f"seed must be an integer, got {type(seed).__name__}")
    return UntiedFilingSetup(fe.seed_setup(seed))


def rare_words() -> np.ndarray:
    """Ids of the rarest third of chapter 6's words: the vocabulary without its two specials ([UNK], [SEP]),
    ordered by count in the book's filings (ties by id), the first third of them.

    Returns
    -------
    numpy.ndarray of int, shape (n_words // 3,)
        Sorted ids.

    Examples
    --------
    >>> rare = rare_words()
    >>> world = fe.filing_world()
    >>> counts = np.bincount(world.ids, minlength=world.vocabulary.size)
    >>> rare.size == (world.vocabulary.size - 2) // 3, int(rare.min()) > SEP_ID
    (True, True)
    >>> int(counts[rare].max()) <= int(np.median(counts[SEP_ID + 1:]))     # the tail, below the median word
    True
    """
    world = fe.filing_world()
    counts = np.bincount(world.ids, minlength=world.vocabulary.size)
    words = np.arange(SEP_ID + 1, world.vocabulary.size)
    by_count = words[np.argsort(counts[words], kind="stable")]
    return np.sort(by_count[:words.size // 3])


def pool_tokens() -> np.ndarray:
    """Stream indices of chapter 7's pool of uniformly drawn tokens (its draw exactly: ``POOL_TOKENS`` of them with
    ``SAMPLE_SEED + 1``), sorted.

    Examples
    --------
    >>> pool = pool_tokens()
    >>> pool.size == fe.POOL_TOKENS, bool(np.all(np.diff(pool) > 0))
    (True, True)
    """
    size = fe.filing_world().ids.size
    return np.sort(np.random.default_rng(fe.SAMPLE_SEED + 1).choice(size, size=fe.POOL_TOKENS, replace=False))


def _training_arguments(setup: UntiedFilingSetup):
    encoder = setup.encoder
    V = fe.filing_world().vocabulary.size
    return (replace(encoder.encoder(V), tied=False), fe.training_config(encoder), fe.training_source(encoder),
            encoder.channel(V), fe.source_key(encoder))


def trained_untied(setup: UntiedFilingSetup) -> TrainResult:
    """The untied filing encoder of ``setup`` (from the store; trained on a miss).

    Raises
    ------
    TypeError
        If ``setup`` is not an `UntiedFilingSetup`.

    Examples
    --------
    >>> result = trained_untied(book_setups()[0])  # doctest: +BOOK
    >>> result.encoder.tied, result.params["E_out"].shape  # doctest: +BOOK
    (False, (867, 64))
    """
    check_instance(setup, "setup", UntiedFilingSetup)
    return cached_training("filing-untied", *_training_arguments(setup),
                           producers=[fe.training_code(), artefacts.key_source("filing-untied")])


def _mean_cosine(rows: np.ndarray) -> float:
    return geometry.anisotropy_baseline(np.asarray(rows, dtype=np.float64))


def _geometry(result: TrainResult, rare: np.ndarray, pool: np.ndarray, rare_tokens: np.ndarray) -> dict:
    """The tables' and the layers' measurements of one trained filing encoder (tied or not)."""
    config = result.encoder
    words = np.arange(SEP_ID + 1, config.vocab_size)
    tables = {"input": np.asarray(result.params["E"])[:config.vocab_size],
              "output": np.asarray(enc.output_table(result.params, config))}
    found = {name: {"words": _mean_cosine(table[words]), "rare": _mean_cosine(table[rare])}
             for name, table in tables.items()}
    pool_states = fe.centre_states(result, pool)
    rare_states = fe.centre_states(result, rare_tokens)
    found["layers"] = {str(layer): {"pool_baseline": _mean_cosine(pool_states[:, layer]),
                                    "pool_mev": geometry.mev(pool_states[:, layer]),
                                    "rare_baseline": _mean_cosine(rare_states[:, layer])}
                       for layer in range(config.n_blocks + 1)}
    return found


def _measure(setup: UntiedFilingSetup) -> tuple[dict, dict]:
    """Train (or load) the untied encoder of ``setup``, load its tied twin, and measure both the same way."""
    untied = trained_untied(setup)
    tied = fe.trained_encoder(setup.encoder)
    start = time.perf_counter()
    rare = rare_words()
    pool = pool_tokens()
    rare_tokens = np.flatnonzero(np.isin(fe.filing_world().ids, rare))
    found = {"tied": _geometry(tied, rare, pool, rare_tokens), "untied": _geometry(untied, rare, pool, rare_tokens)}
    # one reference for both encoders: it depends on the pool's size and the width only
    iso = geometry.isotropic_mev(pool.size, setup.encoder.d_model, np.random.default_rng(fe.SAMPLE_SEED + 2))
    layers = sorted(found["tied"]["layers"], key=int)
    arrays = {f"{name}_pool_baseline": np.array([found[name]["layers"][k]["pool_baseline"] for k in layers])
              for name in found}
    metadata = {**found, "isotropic_mev": iso.mean, "isotropic_sd": iso.std, "rare_words": int(rare.size),
                "rare_tokens": int(rare_tokens.size), "pool_rare_tokens": int(np.isin(pool, rare_tokens).sum()),
                "training_seconds": float(untied.seconds), "measure_seconds": time.perf_counter() - start}
    return arrays, metadata


def _entry(setup: UntiedFilingSetup) -> tuple:
    check_instance(setup, "setup", UntiedFilingSetup)
    key = {"encoder": fe.identity(setup.encoder), "tied": False, "source": fe.source_key(setup.encoder),
           "reading": "centre of each token's own centred window of the book's filings",
           "pool": {"sample_seed": fe.SAMPLE_SEED, "pool_tokens": fe.POOL_TOKENS},
           "rare": "rarest third of the words by count, specials left out, ties by id"}
    return f"filing-untied-geometry-{setup.encoder.seed}", key, [artefacts.key_source("filing-untied")]


def measured(setup: UntiedFilingSetup) -> dict:
    """The tables' and layers' measurements of the untied encoder of ``setup`` and of its tied twin (from the
    store; trained and measured on a miss).

    Returns
    -------
    dict
        ``"tied"`` and ``"untied"`` -> ``{"input": {"words", "rare"}, "output": {"words", "rare"}, "layers":
        {"0", "1", "2" -> {"pool_baseline", "pool_mev", "rare_baseline"}}}`` (mean pairwise cosines of the tables'
        rows, and by layer the pool's anisotropy baseline and MEV and the rare words' occurrences' mean cosine);
        ``"isotropic_mev"`` and ``"isotropic_sd"`` (the pool's isotropic reference); ``"rare_words"``,
        ``"rare_tokens"`` and ``"pool_rare_tokens"`` (how many rare words, their occurrences, and those of them in
        the pool); ``"training_seconds"`` of the untied run.

    Raises
    ------
    TypeError
        If ``setup`` is not an `UntiedFilingSetup`.

    Examples
    --------
    >>> found = measured(book_setups()[0])  # doctest: +BOOK
    >>> sorted(found["untied"]["layers"]), sorted(found["tied"]["input"])  # doctest: +BOOK
    (['0', '1', '2'], ['rare', 'words'])
    """
    name, key, producers = _entry(setup)

    def build():
        with runtime.blas_threads(1):          # the readings are small forward passes: a second thread contends
            return _measure(setup)

    _, metadata = cache.cached(name, key, producers, build)
    return {k: v for k, v in metadata.items() if k != "measure_seconds"}


def is_built(setup: UntiedFilingSetup) -> bool:
    """Whether the store holds the measurements of ``setup`` (a damaged entry counts as absent).

    Raises
    ------
    TypeError
        If ``setup`` is not an `UntiedFilingSetup`.

    Examples
    --------
    >>> isinstance(is_built(tiny_setup()), bool)
    True
    """
    return cache.load(cache.entry_for(*_entry(setup))) is not None


# ----------------------------------------------------------------------------- the declaration (not keyed)
def book_setups() -> tuple[UntiedFilingSetup, ...]:
    """The runs the book reads: the book's recipe untied at each of `SEEDS`, the book's first.

    Examples
    --------
    >>> [setup.encoder.seed for setup in book_setups()]
    [20240601, 1, 2, 3, 4]
    """
    return tuple(untied_setup(seed) for seed in SEEDS)


def tiny_setup() -> UntiedFilingSetup:
    """The same code in seconds: the filing encoder's tiny setup (d = 8, 3 steps), untied.

    Examples
    --------
    >>> tiny_setup().encoder == fe.tiny_setup()
    True
    """
    return UntiedFilingSetup(fe.tiny_setup())


def _cost(setup: UntiedFilingSetup) -> float:
    # the filing-encoder kind's own estimate for the same recipe: untying adds one V x d table to a step's
    # output layer, which the estimate's spread covers; the readings add seconds
    return fe.ARTEFACT_KINDS[0].cost(setup.encoder)


ARTEFACT_KINDS = (artefacts.Kind(
    name="filing-untied", chapter=11,
    summary="chapter 11's filing encoder with an untied output table, measured beside its tied twin, 5 seeds",
    # it trains a filing encoder itself, so the filing-encoder kind's modules key it; it reads the tied ones too
    modules=("mlm_book.artefacts.untied_filing", *fe.ARTEFACT_KINDS[0].modules),
    setups=book_setups, is_built=is_built, build=measured, cost=_cost,
    describe=lambda setup: f"seed {setup.encoder.seed}, untied", tiny=tiny_setup, after=("filing-encoder",)),)
