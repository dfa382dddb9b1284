r"""Chapter 11's test of the evaluative verbs' distance (open question Q6), as an artefact: one run per seed.

Chapter 7 probes the news polarity of the direction words (*rose*, *grew*, ..., right after their aspect's head)
and of the seven evaluative verbs (*surpassed*, *beat*, ..., 3 to 6 tokens after it) at the filing encoder's
layers: the direction words read well, the verbs pooled much worse, and direction words cut to the verbs' counts
still read well, so sample size does not explain the gap. Distance was the likelier cause, never isolated.

A run of this kind isolates it. The filings are rewritten with every verb sentence's phrase between aspect and
verb moved after the target ([`ADJACENT`][mlm_book.artefacts.verb_distance.ADJACENT], chapter 6's generator with
``verb_placement="adjacent"``): the same verbs, the same number of verb sentences per filing, the same words per
sentence, each verb now right after its aspect's head, as a direction word is. The book's filing-encoder recipe
([`mlm_book.artefacts.filing_encoder`][mlm_book.artefacts.filing_encoder]) trains on those filings at one seed,
and the run then measures chapter 7's news-polarity probe on them, exactly as chapter 7 measures it on the
book's filings (chapter 7's own function, reading each selected token at the centre of its own centred window
of the adjacent filings). The comparison, its rules and its answer are chapter 11's:
[`mlm_book.experiments.ch11_verb_distance`][mlm_book.experiments.ch11_verb_distance].

Examples
--------
>>> ADJACENT.corpus.verb_placement, len(SEEDS)
('adjacent', 3)
>>> VerbDistanceSetup(fe.SETUP).encoder.filings_setup == ADJACENT      # the book's encoder reads the book's filings
False
"""

from __future__ import annotations

import time
from dataclasses import dataclass, replace

import numpy as np

from mlm_book import artefacts, cache
from mlm_book.artefacts import filing_encoder as fe
from mlm_book.artefacts import filings

# Chapter 7's polarity probe itself, not a copy: the comparison with chapter 7's numbers is only fair if both
# sides run the same code. It is private to a keyed module (making it public would change every filing kind's
# key), so this is the one private read across modules that tests/test_architecture.py allows.
from mlm_book.artefacts.filing_encoder import _polarity
from mlm_book.finance.corpus import CorpusConfig
from mlm_book.finance.windows import centre_position, centred_windows
from mlm_book.nn import encoder as enc
from mlm_book.nn import runtime
from mlm_book.validation import check_instance

__all__ = [
    "ADJACENT",
    "ARTEFACT_KINDS",
    "SEEDS",
    "VerbDistanceSetup",
    "adjacent_setup",
    "book_setups",
    "is_built",
    "measured",
    "tiny_setup",
]

ADJACENT = filings.FilingsSetup(corpus=CorpusConfig(verb_placement="adjacent"))
"""The book's filings with every evaluative verb moved next to its aspect's head (everything else chapter 6's)."""

SEEDS = fe.SEEDS[:3]
"""Training seeds of the runs: the filing encoder's first three, the book's own first."""


@dataclass(frozen=True)
class VerbDistanceSetup:
    """One run: a filing encoder, trained on the filings it names, then probed for news polarity on them.

    Attributes
    ----------
    encoder : FilingEncoderSetup
        The encoder and its training; its ``filings_setup`` is the filings it trains on and is probed on
        ([`ADJACENT`][mlm_book.artefacts.verb_distance.ADJACENT] in the book).

    Raises
    ------
    TypeError
        If ``encoder`` is not a ``FilingEncoderSetup``.

    Examples
    --------
    >>> adjacent_setup(SEEDS[1]).encoder.seed, adjacent_setup(SEEDS[1]).encoder.steps == fe.SETUP.steps
    (1, True)
    >>> VerbDistanceSetup("the book's encoder")
    Traceback (most recent call last):
    ...
    TypeError: encoder must be FilingEncoderSetup, got str
    """

    encoder: fe.FilingEncoderSetup

    def __post_init__(self):
        check_instance(self.encoder, "encoder", fe.FilingEncoderSetup)


def adjacent_setup(seed: int) -> VerbDistanceSetup:
    """The book's filing-encoder recipe at training seed ``seed``, on the adjacent-verb filings.

    Raises
    ------
    TypeError
        If ``seed`` is not an integer.
    ValueError
        If ``seed`` is negative.

    Examples
    --------
    >>> setup = adjacent_setup(2)
    >>> setup.encoder == replace(fe.seed_setup(2), filings_setup=ADJACENT)
    True
    """
    return VerbDistanceSetup(replace(fe.seed_setup(seed), filings_setup=ADJACENT))


def _centre_states(result, world: filings.Filings, select: np.ndarray, batch: int = 512) -> np.ndarray:
    """``(m, n_blocks + 1, d)``: the hidden states at the centre of each selected token's own centred window of
    ``world`` (chapter 7's reading, on the filings the encoder was trained on)."""
    config = result.encoder
    windows, _ = centred_windows(world.ids, world.corpus.document, length=config.length, pad_id=config.pad_id,
                                 select=select)
    centre = centre_position(config.length)
    out = np.empty((select.size, config.n_blocks + 1, config.d_model))
    for start in range(0, select.size, batch):
        hidden = enc.hidden_states(result.params, config, windows[start:start + batch])
        out[start:start + batch] = np.stack([h[:, centre] for h in hidden], axis=1)
    return out


def _measure(setup: VerbDistanceSetup) -> tuple[dict, dict]:
    """Train (or load) the encoder of ``setup``, then run chapter 7's polarity probe on its own filings."""
    world = filings.filings(setup.encoder.filings_setup)
    result = fe.trained_encoder(setup.encoder)
    start = time.perf_counter()
    memo: dict[int, np.ndarray] = {}

    def states_of(index):
        index = np.asarray(index, dtype=np.int64)
        missing = np.array([i for i in index.tolist() if i not in memo], dtype=np.int64)
        if missing.size:
            for i, row in zip(missing.tolist(), _centre_states(result, world, missing)):
                memo[i] = row
        return np.stack([memo[i] for i in index.tolist()])

    polarity = _polarity(states_of, world.corpus, world.polarity_words)
    arrays = {"pooled": np.array([polarity["pooled"][key] for key in sorted(polarity["pooled"], key=int)]),
              "verbs_pooled": np.array([polarity["verbs_pooled"]])}
    metadata = {"polarity": polarity, "polarity_words": list(world.polarity_words),
                "training_seconds": float(result.seconds), "probe_seconds": time.perf_counter() - start}
    return arrays, metadata


def _entry(setup: VerbDistanceSetup) -> tuple:
    check_instance(setup, "setup", VerbDistanceSetup)
    key = {"encoder": fe.identity(setup.encoder), "source": fe.source_key(setup.encoder),
           "reading": "centre of each token's own centred window of the encoder's filings",
           "probe": {"sample_seed": fe.SAMPLE_SEED, "subsample_repeats": fe.SUBSAMPLE_REPEATS}}
    return f"filing-verb-distance-{setup.encoder.seed}", key, [artefacts.key_source("filing-verb-distance")]


def measured(setup: VerbDistanceSetup) -> dict:
    """Chapter 7's news-polarity probe of the encoder of ``setup`` on its own filings (from the store; trained and
    measured on a miss).

    Returns
    -------
    dict
        Laid out as chapter 7's ``FilingMeasurements.polarity``: ``pooled`` (layer ``"0"``, ``"1"``, ``"2"`` ->
        accuracy pooled over the polarity words), ``n`` (their labelled occurrences), ``control1`` (layer 1's
        control task), ``words`` (word -> ``{"n", "accuracy"}`` at layer 1), ``subsampled`` (the direction words
        cut to the verbs' smallest, median and largest counts) and ``verbs_pooled`` (the seven verbs' layer-1
        accuracy, pooled over their occurrences).

    Raises
    ------
    TypeError
        If ``setup`` is not a `VerbDistanceSetup`.

    Examples
    --------
    >>> probe = measured(book_setups()[0])  # doctest: +BOOK
    >>> sorted(probe["pooled"]), 0.0 <= probe["verbs_pooled"] <= 1.0  # doctest: +BOOK
    (['0', '1', '2'], True)
    """
    name, key, producers = _entry(setup)

    def build():
        with runtime.blas_threads(1):          # many small probe fits: a second thread only contends
            return _measure(setup)

    _, metadata = cache.cached(name, key, producers, build)
    return metadata["polarity"]


def is_built(setup: VerbDistanceSetup) -> bool:
    """Whether the store holds the run of ``setup`` (a damaged entry counts as absent).

    Raises
    ------
    TypeError
        If ``setup`` is not a `VerbDistanceSetup`.

    Examples
    --------
    >>> isinstance(is_built(tiny_setup()), bool)
    True
    """
    return cache.load(cache.entry_for(*_entry(setup))) is not None


# ----------------------------------------------------------------------------- the declaration (not keyed)
def book_setups() -> tuple[VerbDistanceSetup, ...]:
    """The runs the book reads: the adjacent-verb filings at each of `SEEDS`, the book's first.

    Examples
    --------
    >>> [setup.encoder.seed for setup in book_setups()]
    [20240601, 1, 2]
    """
    return tuple(adjacent_setup(seed) for seed in SEEDS)


def tiny_setup() -> VerbDistanceSetup:
    """The same code in seconds: the filing encoder's tiny setup (d = 8, 3 steps) on the adjacent-verb filings.

    Examples
    --------
    >>> tiny_setup().encoder.steps, tiny_setup().encoder.filings_setup == ADJACENT
    (3, True)
    """
    return VerbDistanceSetup(replace(fe.tiny_setup(), filings_setup=ADJACENT))


#: Seconds per (step x window x token) of one run on one core, as a build runs it (two workers on the two cores):
#: the book's five filing encoders' stored training times were 127-186 s (median 135 s) for 3000 steps of
#: 120 x 32 in the build of 2026-12-04, and the polarity probe adds a few seconds, so about 140 s a run. The
#: filing-encoder kind's 8.7e-6 (100 s) was scaled from a whole build's total, as the HMM encoder's was before
#: it was measured.
_SECONDS_PER_SLOT = 1.2e-5


def _cost(setup: VerbDistanceSetup) -> float:
    encoder = setup.encoder
    steps = encoder.steps if encoder.steps is not None else fe.training_config(encoder).steps
    return _SECONDS_PER_SLOT * steps * encoder.batch_windows * encoder.length


ARTEFACT_KINDS = (artefacts.Kind(
    name="filing-verb-distance", chapter=11,
    summary="chapter 11's filing encoder on filings with each evaluative verb next to its aspect, and chapter 7's "
            "news-polarity probe on them, 3 seeds",
    # it trains a filing encoder itself (on other filings), so the filing-encoder kind's modules key it too
    modules=("mlm_book.artefacts.verb_distance", *fe.ARTEFACT_KINDS[0].modules),
    setups=book_setups, is_built=is_built, build=measured, cost=_cost,
    describe=lambda setup: f"seed {setup.encoder.seed}, verbs {setup.encoder.filings_setup.corpus.verb_placement}",
    tiny=tiny_setup),)
