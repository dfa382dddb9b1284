r"""Chapter 11's control task where the word types far outnumber the dimensions: the filing encoder.

Hewitt and Liang's control task (on the references page) gives every word *type* a random label,
fixed per type, with the task's label distribution; a probe can fit it only by telling the types
apart and memorising their labels. On the HMM encoder (25 types in d = 32) that is always possible
(Cover's count, chapter 11). Here it is run where it is not: the filing encoder (chapter 7; 867
vocabulary ids in d = 64), at each of its five training seeds.

The protocol (every constant below was fixed before any number was computed):

* **the tokens**: a fixed sample of token occurrences, none of them ``[SEP]``:
  [`TRAIN_EACH`][mlm_book.artefacts.filing_controls.TRAIN_EACH] tokens inside a named mention and as
  many outside one, drawn uniformly from the training filings of the encoder's split, and
  [`TEST_EACH`][mlm_book.artefacts.filing_controls.TEST_EACH] of each from its held-out filings
  ([`token_sample`][mlm_book.artefacts.filing_controls.token_sample]). Half the sample is in a mention
  so that the majority label does not decide every accuracy;
* **the task**: the type of the mention a token belongs to, five classes (none, ORG, PRODUCT, PERSON,
  LOC; the corpus's ``mention_type`` plus one). It is mostly a function of the type (a place name is
  LOC wherever it stands) but not only: an alias is ORG or PRODUCT by context, and the rare names the
  vocabulary reads as ``[UNK]`` are people, places or neither by context;
* **the control**: each vocabulary id gets a label drawn from the task's label distribution over the
  training sample ([`control_labels`][mlm_book.artefacts.filing_controls.control_labels]),
  [`DRAWS`][mlm_book.artefacts.filing_controls.DRAWS] draws; the ``[UNK]`` id is one type like any other;
* **the probe and its capacity**: [`mlm_book.probe.fit_and_score`][mlm_book.probe.fit_and_score] on the
  centre vector of each token's own centred window
  ([`mlm_book.artefacts.filing_encoder.centre_states`][mlm_book.artefacts.filing_encoder.centre_states]),
  layers 0, 1, 2, at each ridge strength of [`STRENGTHS`][mlm_book.artefacts.filing_controls.STRENGTHS]
  (the book's 1e-3 first; larger is less capacity).

A run over five encoders fits 240 probes on 4000 tokens: a few minutes of one core.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, replace

import numpy as np

from mlm_book import artefacts, cache, probe
from mlm_book.artefacts import filing_encoder as fe
from mlm_book.artefacts import filings
from mlm_book.nn import runtime
from mlm_book.validation import as_int_array, check_instance, check_positive_int

__all__ = ["TRAIN_EACH", "TEST_EACH", "SAMPLE_SEED", "DRAWS", "CONTROL_SEED", "STRENGTHS", "N_CLASSES",
           "token_sample", "control_labels", "FilingControlsSetup", "FILING_CONTROLS", "filing_controls",
           "filing_controls_built", "ARTEFACT_KINDS"]

TRAIN_EACH = 2000
"""Training tokens inside a named mention, and as many outside one, drawn from the training filings."""

TEST_EACH = 1000
"""Test tokens inside a mention, and as many outside one, drawn from the held-out filings."""

SAMPLE_SEED = 5301
"""Seed of the token sample (``default_rng([SAMPLE_SEED, 0])`` for the training draw, ``[.., 1]`` the test draw)."""

DRAWS = 3
"""Control labellings, each fitted and scored at every layer, strength and seed."""

CONTROL_SEED = 5310
"""Draw $r$ of the control labels comes from ``numpy.random.default_rng([CONTROL_SEED, r])``."""

STRENGTHS = (1e-3, 1e-2, 1e-1, 1.0)
"""Ridge strengths of the probe, the book's first: the capacity varied (larger, less capacity)."""

N_CLASSES = 5
"""Task classes: 0 outside any mention, then ORG, PRODUCT, PERSON, LOC."""


def _draw(pool: np.ndarray, size: int, rng: np.random.Generator) -> np.ndarray:
    if pool.size < size:
        raise ValueError(f"the sample needs {size} tokens from a pool of {pool.size}")
    return np.sort(rng.choice(pool, size=size, replace=False))


def token_sample(split: fe.Split, each: tuple[int, int] = (TRAIN_EACH, TEST_EACH),
                 seed: int = SAMPLE_SEED) -> tuple[np.ndarray, np.ndarray]:
    """Stream indices of the training and test tokens: half inside a mention, half outside, no ``[SEP]``.

    Parameters
    ----------
    split : filing_encoder.Split
        The encoder's held-out filings.
    each : tuple of int
        Tokens of each half in the training and the test sample.
    seed : int
        The draws use ``default_rng([seed, 0])`` and ``default_rng([seed, 1])``.

    Returns
    -------
    tuple of numpy.ndarray of int, shapes (2 * each[0],) and (2 * each[1],)
        Sorted stream indices, training then test.

    Raises
    ------
    TypeError
        If ``split`` is not a ``Split`` or a count or the seed not an integer.
    ValueError
        If a count is not positive, the seed negative, or a pool holds fewer tokens than asked.

    Examples
    --------
    >>> train, test = token_sample(fe.split(), (10, 5))
    >>> train.shape, test.shape, bool(np.isin(test, fe.split().test_tokens).all())
    ((20,), (10,), True)
    """
    check_instance(split, "split", fe.Split)
    if not isinstance(each, tuple) or len(each) != 2:
        raise TypeError(f"each must be a pair of counts, got {each!r:.60}")
    each = tuple(check_positive_int(n, "each") for n in each)
    seed = check_positive_int(seed, "seed", minimum=0)
    corpus = filings.filings().corpus
    word = corpus.tokens != "[SEP]"
    inside = corpus.mention_type >= 0
    out = []
    for k, (tokens, n) in enumerate(((split.train_tokens, each[0]), (split.test_tokens, each[1]))):
        rng = np.random.default_rng([seed, k])
        chosen = [_draw(tokens[word[tokens] & inside[tokens]], n, rng),
                  _draw(tokens[word[tokens] & ~inside[tokens]], n, rng)]
        out.append(np.sort(np.concatenate(chosen)))
    return out[0], out[1]


def control_labels(train_labels, vocab_size: int, draws: int = DRAWS, seed: int = CONTROL_SEED) -> np.ndarray:
    """Hewitt and Liang's control: a label per type, drawn from the task's label distribution.

    Parameters
    ----------
    train_labels : array_like of int, shape (n,)
        The task's labels of the training tokens (classes ``0 .. N_CLASSES - 1``).
    vocab_size : int
        Number of types (vocabulary ids).
    draws : int
        Independent labellings.
    seed : int
        Draw $r$ uses ``default_rng([seed, r])``.

    Returns
    -------
    numpy.ndarray of int64, shape (draws, vocab_size)
        Row $r$: the label of each type in draw $r$.

    Raises
    ------
    TypeError
        If a count or the seed is not an integer, or ``train_labels`` not integers.
    ValueError
        If ``train_labels`` is empty or holds a class outside ``[0, N_CLASSES)``, or a count is not positive.

    Examples
    --------
    >>> labels = control_labels(np.array([0, 0, 0, 4]), vocab_size=1000, draws=2)
    >>> labels.shape, round(float(np.mean(labels == 0)), 1)
    ((2, 1000), 0.8)
    """
    y = as_int_array(train_labels, "train_labels", ndim=1)
    if y.size == 0 or y.min() < 0 or y.max() >= N_CLASSES:
        raise ValueError(f"train_labels must be a non-empty array of classes in [0, {N_CLASSES})")
    vocab_size = check_positive_int(vocab_size, "vocab_size")
    if vocab_size > 10**6:
        raise ValueError(f"vocab_size must be at most 1,000,000 (one label per vocabulary id), got {vocab_size}")
    draws = check_positive_int(draws, "draws")
    if draws > 1000:
        raise ValueError(f"draws must be at most 1000 (each is a labelling of the whole vocabulary), got {draws}")
    seed = check_positive_int(seed, "seed", minimum=0)
    shares = np.bincount(y, minlength=N_CLASSES) / y.size
    return np.stack([np.random.default_rng([seed, r]).choice(N_CLASSES, size=vocab_size, p=shares)
                     for r in range(draws)]).astype(np.int64)


@dataclass(frozen=True)
class FilingControlsSetup:
    """The control task on some filing encoders: the encoders and the protocol's constants.

    Attributes
    ----------
    encoders : tuple of FilingEncoderSetup
        The encoders probed (chapter 7's at each of its seeds, the book's first); one split for all.
    train_each, test_each, sample_seed, draws, control_seed : int
        `TRAIN_EACH`, `TEST_EACH`, `SAMPLE_SEED`, `DRAWS` and `CONTROL_SEED` in the book.
    strengths : tuple of float
        `STRENGTHS` in the book.

    Examples
    --------
    >>> [encoder.seed for encoder in FILING_CONTROLS.encoders] == list(fe.SEEDS)
    True
    >>> FilingControlsSetup(FILING_CONTROLS.encoders, strengths=())
    Traceback (most recent call last):
    ...
    ValueError: strengths must be a non-empty tuple of positive ridge strengths, got ()

    >>> from mlm_book.artefacts.filing_encoder import FilingEncoderSetup
    >>> FilingControlsSetup(encoders=(FilingEncoderSetup(),)).draws
    3
    """

    encoders: tuple
    train_each: int = TRAIN_EACH
    test_each: int = TEST_EACH
    sample_seed: int = SAMPLE_SEED
    draws: int = DRAWS
    control_seed: int = CONTROL_SEED
    strengths: tuple = STRENGTHS

    def __post_init__(self):
        if not isinstance(self.encoders, tuple) or not self.encoders:
            raise TypeError(f"encoders must be a non-empty tuple of FilingEncoderSetup, got {self.encoders!r:.60}")
        for encoder in self.encoders:
            check_instance(encoder, "encoders", fe.FilingEncoderSetup)
        if len({(e.test_share, e.split_seed) for e in self.encoders}) != 1:
            raise ValueError("encoders must share one held-out split (test_share and split_seed)")
        for name in ("train_each", "test_each", "draws"):
            check_positive_int(getattr(self, name), name)
        for name in ("sample_seed", "control_seed"):
            check_positive_int(getattr(self, name), name, minimum=0)
        if not isinstance(self.strengths, tuple) or not self.strengths or not all(
                isinstance(s, float) and s > 0 for s in self.strengths):
            raise ValueError(f"strengths must be a non-empty tuple of positive ridge strengths, got {self.strengths}")


FILING_CONTROLS = FilingControlsSetup(tuple(fe.seed_setup(seed) for seed in fe.SEEDS))
"""The book's run: the filing encoder at each of its five seeds."""


def _labels(index: np.ndarray) -> np.ndarray:
    return (filings.filings().corpus.mention_type[index] + 1).astype(np.int64)


def _encoder_run(encoder: fe.FilingEncoderSetup, train: np.ndarray, test: np.ndarray, control: np.ndarray,
                 strengths: tuple) -> dict:
    ids = filings.filings().ids
    result = fe.trained_encoder(encoder)
    train_x, test_x = fe.centre_states(result, train), fe.centre_states(result, test)
    train_y, test_y = _labels(train), _labels(test)
    layers = train_x.shape[1]
    task = np.empty((layers, len(strengths)))
    controls = np.empty((layers, len(strengths), control.shape[0]))
    for layer in range(layers):
        for c, strength in enumerate(strengths):
            task[layer, c] = probe.fit_and_score(train_x[:, layer], train_y, test_x[:, layer], test_y,
                                                 strength=strength).accuracy
            for r, labels in enumerate(control):
                controls[layer, c, r] = probe.fit_and_score(train_x[:, layer], labels[ids[train]], test_x[:, layer],
                                                            labels[ids[test]], strength=strength).accuracy
    return {"task": task, "control": controls}


def _references(train: np.ndarray, test: np.ndarray, control: np.ndarray) -> dict:
    """Ceilings read off the sample alone (no encoder): how much of each label the type decides."""
    ids = filings.filings().ids
    train_y, test_y = _labels(train), _labels(test)
    seen = np.isin(ids[test], ids[train])
    majority = int(np.bincount(train_y, minlength=N_CLASSES).argmax())
    # the task's per-type ceiling: each type's training majority label, the overall majority for unseen types
    table = np.full(ids.max() + 1, majority)
    for t in np.unique(ids[train]):
        table[t] = np.bincount(train_y[ids[train] == t], minlength=N_CLASSES).argmax()
    control_majority = [np.bincount(labels[ids[train]], minlength=N_CLASSES).argmax() for labels in control]
    control_ceiling = [float(np.mean(np.where(seen, True, labels[ids[test]] == m)))
                       for labels, m in zip(control, control_majority)]
    return {"majority": float(np.mean(test_y == majority)), "type_ceiling": float(np.mean(table[ids[test]] == test_y)),
            "control_ceiling": float(np.mean(control_ceiling)), "seen": float(seen.mean()),
            "train_types": int(np.unique(ids[train]).size), "test_types": int(np.unique(ids[test]).size),
            "vocab_size": int(filings.filings().vocabulary.size),
            "shares": (np.bincount(train_y, minlength=N_CLASSES) / train_y.size).tolist()}


def _entry(setup: FilingControlsSetup) -> tuple:
    key = asdict(check_instance(setup, "setup", FilingControlsSetup))
    return "filing-controls", key, [artefacts.key_source("filing-controls")]


def filing_controls(setup: FilingControlsSetup = FILING_CONTROLS) -> tuple[dict, dict]:
    """The run of ``setup`` (from the store; measured on a miss): ``(arrays, references)``.

    ``arrays``: ``task`` ``(S, L, C)`` and ``control`` ``(S, L, C, draws)`` test accuracies, one row per
    encoder, ``C`` strengths; ``references``: the test share of the training-majority class, the per-type
    ceilings of the task and the control, the share of test tokens whose type is in the training sample,
    the numbers of types, and the task's class shares in the training sample.

    Raises
    ------
    TypeError
        If ``setup`` is not a `FilingControlsSetup`.
    """
    name, key, producers = _entry(setup)

    def build():
        train, test = token_sample(fe.split(setup.encoders[0]), (setup.train_each, setup.test_each),
                                   setup.sample_seed)
        control = control_labels(_labels(train), filings.filings().vocabulary.size, setup.draws,
                                 setup.control_seed)
        with runtime.blas_threads(1):
            rows = [_encoder_run(encoder, train, test, control, setup.strengths) for encoder in setup.encoders]
        arrays = {name: np.array([row[name] for row in rows]) for name in ("task", "control")}
        return arrays, _references(train, test, control)

    return cache.cached(name, key, producers, build)


def filing_controls_built(setup: FilingControlsSetup) -> bool:
    """Whether the store holds the run of ``setup`` (a damaged entry counts as absent).

    Raises
    ------
    TypeError
        If ``setup`` is not a `FilingControlsSetup`.

    Examples
    --------
    >>> isinstance(filing_controls_built(FILING_CONTROLS), bool)     # the book's run: True once it is built
    True
    """
    return cache.load(cache.entry_for(*_entry(setup))) is not None


# ----------------------------------------------------------------------------- the declaration (not keyed)
#: Seconds of the book's run on one core (an estimate before the first run: 240 probe fits on 4000 tokens
#: and 30,000 windows read).
_SECONDS = 240.0

ARTEFACT_KINDS = (artefacts.Kind(
    name="filing-controls", chapter=11,
    summary="chapter 11's control task on the filing encoder (867 types in d = 64), 5 seeds in one run",
    modules=("mlm_book.artefacts.filing_controls", "mlm_book.probe"), after=("filing-encoder",),
    setups=lambda: (FILING_CONTROLS,), is_built=filing_controls_built, build=filing_controls,
    cost=lambda setup: _SECONDS * len(setup.encoders) * setup.train_each / (5 * TRAIN_EACH),
    describe=lambda setup: f"{len(setup.encoders)} seeds",
    tiny=lambda: FilingControlsSetup((fe.tiny_setup(), replace(fe.tiny_setup(), seed=1)), train_each=20,
                                     test_each=10, draws=1, strengths=(1e-3, 1.0))),)
