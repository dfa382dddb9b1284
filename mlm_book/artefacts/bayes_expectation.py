r"""The exact Bayes sense accuracy of $w$ in expectation, $E \max_k P(\text{sense } k \mid x)$, on a large sample, as an artefact.

Chapter 1's ceiling for any classifier of the sentence is not enumerable ($25^{24}$ sentences),
so it is a large-sample mean: ``sequences`` stationary sentences of the HMM, in ``chunks``
equal chunks drawn one after another from one generator, and in each chunk the exact
posterior of every occurrence of $w$ ([`mlm_book.hmm.bayes_sense_accuracy`][mlm_book.hmm.bayes_sense_accuracy]).
A run stores each chunk's sum of $\max_k P(\text{sense } k \mid x)$ and its count of occurrences;
the spread of the chunk means gives the standard error (so the correlation of occurrences within
a sentence is accounted for). What chapter 1 makes of it is
[`mlm_book.experiments.ch01_static_vectors.bayes_expectation`][mlm_book.experiments.ch01_static_vectors.bayes_expectation].
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

import numpy as np

from mlm_book import artefacts, cache
from mlm_book.hmm import HMMConfig, HiddenMarkovLanguage, bayes_sense_accuracy, build_hmm, check_hmm, sample
from mlm_book.validation import check_instance, check_positive_int

__all__ = ["MAX_CHUNK_TOKENS", "BayesExpectationSetup", "SETUP", "chunk_sums", "sums", "is_built", "tiny_setup", "ARTEFACT_KINDS"]

#: Most tokens one chunk may hold (refused before sampling).
MAX_CHUNK_TOKENS = 10**8


@dataclass(frozen=True)
class BayesExpectationSetup:
    """The sample: the HMM, the sentence length, the number of sentences and chunks, the seed.

    Raises
    ------
    TypeError, ValueError
        If ``hmm`` is not an ``HMMConfig``, a count is not a positive integer (``chunks`` at
        least 2 and at most ``sequences``; a chunk at most ``MAX_CHUNK_TOKENS`` tokens) or
        ``seed`` is negative.

    Examples
    --------
    >>> SETUP.sequences, SETUP.chunks, SETUP.length
    (200000, 20, 24)
    >>> BayesExpectationSetup(chunks=1)
    Traceback (most recent call last):
    ...
    ValueError: chunks must be an integer >= 2, got 1

    >>> BayesExpectationSetup(sequences=40, chunks=4).length
    24
    """

    hmm: HMMConfig = field(default_factory=HMMConfig)
    length: int = 24
    sequences: int = 200_000
    chunks: int = 20
    seed: int = 3

    def __post_init__(self):
        check_instance(self.hmm, "hmm", HMMConfig)
        check_positive_int(self.length, "length")
        check_positive_int(self.sequences, "sequences")
        # two chunks at least: the standard error is the spread of the chunk means
        check_positive_int(self.chunks, "chunks", minimum=2)
        check_positive_int(self.seed, "seed", minimum=0)
        if self.chunks > self.sequences:
            raise ValueError(f"chunks must be at most sequences ({self.sequences}), got {self.chunks}")
        if self.sequences // self.chunks * self.length > MAX_CHUNK_TOKENS:
            raise ValueError(f"sequences / chunks * length must be at most {MAX_CHUNK_TOKENS:,} tokens per chunk, "
                             f"got {self.sequences} / {self.chunks} * {self.length}")


SETUP = BayesExpectationSetup()
"""Chapter 1's sample: 200,000 sentences of the book's HMM, of length 24, in 20 chunks, seed 3."""


def chunk_sums(hmm: HiddenMarkovLanguage, length: int, sequences: int, chunks: int, seed: int) -> dict:
    """Per chunk, the sum of $\\max_k P(\\text{sense } k \\mid x)$ over the occurrences of $w$ and their count.

    ``sequences // chunks`` sentences per chunk, every chunk drawn from one generator seeded
    with ``seed``: what a run of this kind stores, for any HMM (chapter 1 computes it directly
    for an HMM no ``HMMConfig`` describes).

    Returns
    -------
    dict
        ``sums`` and ``counts``, each ``(chunks,)``.

    Raises
    ------
    TypeError, ValueError
        If ``hmm`` is not a ``HiddenMarkovLanguage`` or a count is not what a
        `BayesExpectationSetup` takes.

    Examples
    --------
    >>> from mlm_book.hmm import default_hmm
    >>> found = chunk_sums(default_hmm(), 24, 40, 4, seed=0)
    >>> found["sums"].shape, bool(np.all(found["sums"] <= found["counts"]))
    ((4,), True)
    """
    hmm = check_hmm(hmm)
    BayesExpectationSetup(length=length, sequences=sequences, chunks=chunks, seed=seed)   # the same checks
    rng = np.random.default_rng(seed)
    per_chunk = sequences // chunks
    sums = np.empty(chunks)
    counts = np.empty(chunks)
    for chunk in range(chunks):
        _, tokens = sample(hmm, per_chunk, length, rng)
        found = bayes_sense_accuracy(hmm, tokens)
        sums[chunk] = found.expected * found.n_occurrences
        counts[chunk] = found.n_occurrences
    return {"sums": sums, "counts": counts}


def _entry(setup: BayesExpectationSetup) -> tuple:
    return "bayes-expectation", asdict(check_instance(setup, "setup", BayesExpectationSetup)), \
        [artefacts.key_source("bayes-expectation")]


def sums(setup: BayesExpectationSetup = SETUP) -> dict:
    """The chunk sums and counts of ``setup`` (from the store; computed and stored on a miss: seconds, even in the quick tests).

    Raises
    ------
    TypeError
        If ``setup`` is not a `BayesExpectationSetup`.

    Examples
    --------
    >>> found = sums()
    >>> found["counts"].shape, 0.95 < float(found["sums"].sum() / found["counts"].sum()) < 0.99
    ((20,), True)
    """
    name, config, producers = _entry(setup)
    arrays, _ = cache.cached(name, config, producers, lambda: chunk_sums(build_hmm(setup.hmm), setup.length,
                                                                          setup.sequences, setup.chunks, setup.seed),
                             book_sized=False)
    return arrays


def is_built(setup: BayesExpectationSetup) -> bool:
    """Whether the store holds the sums of ``setup`` (a damaged entry counts as absent).

    Raises
    ------
    TypeError
        If ``setup`` is not a `BayesExpectationSetup`.

    Examples
    --------
    >>> isinstance(is_built(SETUP), bool)       # the book's sample: True once `mlm-book build` stored it
    True
    """
    return cache.load(cache.entry_for(*_entry(setup))) is not None


def tiny_setup() -> BayesExpectationSetup:
    """Forty sentences in four chunks: the same code in a fraction of a second.

    Examples
    --------
    >>> tiny_setup().sequences, tiny_setup().chunks
    (40, 4)
    """
    return BayesExpectationSetup(sequences=40, chunks=4)


# ----------------------------------------------------------------------------- the declaration (not keyed)
#: Seconds per sentence token on one core, measured on 2026-12-03 (the book's sample: 3.6 s).
_SECONDS_PER_TOKEN = 7.5e-7

ARTEFACT_KINDS = (artefacts.Kind(
    name="bayes-expectation", chapter=1,
    summary="chapter 1's exact Bayes sense accuracy in expectation, on 200,000 sampled sentences",
    # nn.runtime: the store keys every entry on the BLAS kernel family it names
    modules=("mlm_book.artefacts.bayes_expectation", "mlm_book.hmm", "mlm_book.nn.runtime"),
    setups=lambda: (SETUP,), is_built=is_built, build=sums,
    cost=lambda setup: _SECONDS_PER_TOKEN * setup.sequences * setup.length,
    describe=lambda setup: f"{setup.sequences} sentences", tiny=tiny_setup),)
