"""Chapter 11's runs on the filing encoder's visible-word shortfall (open question Q7): longer, and more kept.

Chapter 7 finds that the filing encoder keeps less probability on a visible word than Theorem 2's formula, applied
to the encoder's own `[MASK]` guess, says it should (the *shortfall*), and diagnoses it at the book's seed alone:
twice the steps, or twice the kept share ($\\kappa$ = 0.2, mask 0.7), each shrinks it. This kind trains the book's
filing-encoder recipe ([`mlm_book.artefacts.filing_encoder`][mlm_book.artefacts.filing_encoder]) at the first three
of its seeds for 1, 2 and 4 times its steps ([`LENGTHS`][mlm_book.artefacts.filing_shortfall.LENGTHS]) and with the
kept share doubled, each run measured by chapter 7's own measurements
([`seed_results`][mlm_book.artefacts.filing_encoder.seed_results]). The runs chapter 7 already reads (every seed
at 1×, the book's seed at 2× and with $\\kappa$ = 0.2) belong to the filing-encoder kind and are not declared here
again. What chapter 11 makes of them: [`mlm_book.experiments.ch11_shortfall`][mlm_book.experiments.ch11_shortfall].

Examples
--------
>>> length_setup(SEEDS[0], 2) == fe.LONGER, kept_setup(SEEDS[0]) == fe.MORE_KEPT
(True, True)
>>> [(setup.seed, fe.training_config(setup).steps, setup.mask) for setup in book_setups()][:3]
[(20240601, 12000, 0.8), (1, 12000, 0.8), (2, 12000, 0.8)]
"""

from __future__ import annotations

from dataclasses import replace

from mlm_book import artefacts
from mlm_book.artefacts import filing_encoder as fe
from mlm_book.validation import check_positive_int

__all__ = ["ARTEFACT_KINDS", "LENGTHS", "SEEDS", "book_setups", "kept_setup", "length_setup", "study_setups"]

SEEDS = fe.SEEDS[:3]
"""Training seeds of the study: the filing encoder's first three, the book's own first (3 a point, a sweep)."""

LENGTHS = (1, 2, 4)
"""Training lengths, as multiples of the book's steps."""


def length_setup(seed: int, times: int) -> fe.FilingEncoderSetup:
    """The book's filing encoder at training seed ``seed``, trained ``times`` times its steps (warm-up share and total
    weight decay kept, as `training_config` derives them for any length).

    Raises
    ------
    TypeError
        If ``seed`` or ``times`` is not an integer.
    ValueError
        If ``times`` is not positive.

    Examples
    --------
    >>> fe.training_config(length_setup(1, 4)).steps, fe.training_config(length_setup(1, 4)).warmup
    (12000, 800)
    """
    times = check_positive_int(times, "times")
    return fe.seed_setup(seed, replace(fe.SETUP, steps=times * fe.SETUP.steps))


def kept_setup(seed: int) -> fe.FilingEncoderSetup:
    """The book's filing encoder at training seed ``seed`` with the kept share doubled (mask 0.7, random 0.1).

    Raises
    ------
    TypeError
        If ``seed`` is not an integer.

    Examples
    --------
    >>> kept_setup(2).mask, kept_setup(2).random, kept_setup(2).steps == fe.SETUP.steps
    (0.7, 0.1, True)
    """
    return fe.seed_setup(seed, fe.MORE_KEPT)


def study_setups() -> dict[str, tuple[fe.FilingEncoderSetup, ...]]:
    """Every encoder the study reads, by arm: ``"1x"``, ``"2x"``, ``"4x"`` and ``"kept"``, one per seed of `SEEDS`.

    Examples
    --------
    >>> {arm: len(setups) for arm, setups in study_setups().items()}
    {'1x': 3, '2x': 3, '4x': 3, 'kept': 3}
    """
    arms = {f"{times}x": tuple(length_setup(seed, times) for seed in SEEDS) for times in LENGTHS}
    arms["kept"] = tuple(kept_setup(seed) for seed in SEEDS)
    return arms


# ----------------------------------------------------------------------------- the declaration (not keyed)
def book_setups() -> tuple[fe.FilingEncoderSetup, ...]:
    """The study's runs that the filing-encoder kind does not already build, longest first.

    Examples
    --------
    >>> len(book_setups()), set(book_setups()) & set(fe.book_setups())
    (7, set())
    """
    chapter7 = set(fe.book_setups())
    arms = study_setups()
    return tuple(setup for arm in ("4x", "2x", "kept", "1x") for setup in arms[arm] if setup not in chapter7)


ARTEFACT_KINDS = (artefacts.Kind(
    name="filing-shortfall", chapter=11,
    summary="chapter 11's filing encoders for the visible-word shortfall: 2 and 4 times the steps and the kept "
            "share doubled, at the first 3 seeds (those chapter 7 already reads left to the filing-encoder kind)",
    # the runs are filing encoders, trained and measured by the filing-encoder kind's own code and keys
    modules=("mlm_book.artefacts.filing_shortfall", *fe.ARTEFACT_KINDS[0].modules),
    setups=book_setups, is_built=fe.is_trained, build=fe.seed_results, cost=fe.ARTEFACT_KINDS[0].cost,
    describe=fe.ARTEFACT_KINDS[0].describe, tiny=fe.tiny_setup),)
