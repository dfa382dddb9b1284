r"""Chapter 9's subword half: a filing encoder pre-trained on BPE pieces, and taggers that read words through them.

The encoder, its recipe and the taggers' runs are the artefact floor's
([`mlm_book.artefacts.subword_encoder`][mlm_book.artefacts.subword_encoder], whose text describes
them); this module reads the runs: entity scores by tagger and decoder, the gap between the
first-piece and mean decoders, the split words, the tables and figures the chapter shows, and
the claims it registers.
"""

from __future__ import annotations

import functools

import numpy as np

from mlm_book import artefacts, cache, tagging
# the encoder, its pieces and the taggers' runs live on the artefact floor; the chapter reads them here
from mlm_book.artefacts.subword_encoder import (  # noqa: F401
    DECODERS,
    LAYERS,
    SEEDS,
    SETUP,
    TUNED_DEPTH,
    PieceData,
    book_run,
    piece_stream,
    pieces_of,
    tagger_predictions,
    trained_encoder,
    word_log_probs,
)
from mlm_book.artefacts import filing_encoder
from mlm_book.artefacts.span_taggers import CRF_LAYER, test_data
from mlm_book.readings import span_scores
from mlm_book.ledger import Claim, over_seeds
from mlm_book.report import seed_band
from mlm_book.validation import check_choice

__all__ = ["pieces_per_word", "training_seconds", "TAGGERS", "mean_f1",
           "f1_table", "unknown_recall", "decoder_gap", "split_words", "figure_decoders", "figure_losses", "CLAIMS"]


def pieces_per_word() -> float:
    """Pieces per token of chapter 6's filings (``[SEP]`` counts as one of each): what sets the window length.

    Examples
    --------
    >>> round(pieces_per_word() * filing_encoder.SETUP.length) <= SETUP.length
    True
    """
    return piece_stream()[0].size / filing_encoder.filing_world().ids.size


def training_seconds() -> np.ndarray:
    """Wall time of each seed's pre-training, as recorded when it was trained."""
    return np.array([trained_encoder(seed).seconds for seed in SEEDS])


def _final_losses() -> np.ndarray:
    """Each seed's mean training loss over its last 100 steps (nats per selected piece)."""
    return np.array([float(np.mean(trained_encoder(seed).losses[-100:])) for seed in SEEDS])


# ----------------------------------------------------------------------------- scores
TAGGERS = {f"{name}/{decoder}/{how}": f"{label}, {decoder} piece{'s' if decoder == 'mean' else ''}, {how_name}"
           for name, label in [*((f"frozen/{layer}", f"frozen, layer {layer}") for layer in LAYERS),
                               (f"tuned/{TUNED_DEPTH}", f"fine-tuned, layer {TUNED_DEPTH}")]
           for decoder in DECODERS for how, how_name in (("argmax", "argmax"), ("viterbi", "Viterbi"))}
"""Every subword tagger and decoder, by key, with its name in the chapter."""


def _check_tagger(key) -> str:
    return check_choice(key, "key", TAGGERS)


def _predictions(key: str) -> tuple[np.ndarray, ...]:
    """Predicted word tag ids on the test sentences, shape (N, m), per seed (the book's first)."""
    _check_tagger(key)
    return tuple(np.array(tagger_predictions(book_run(seed))[key]) for seed in SEEDS)


@functools.cache
def _spans(key: str) -> tuple[list, ...]:
    return span_scores.decoded(key, _predictions(key))


def _scores(key: str) -> tuple[tagging.EntityScores, ...]:
    """Entity scores of each seed's run (word-level spans against chapter 9's gold)."""
    key = _check_tagger(key)
    return _scores_cached(key)


@functools.cache
def _scores_cached(key: str) -> tuple[tagging.EntityScores, ...]:
    """The memoised body of `_scores`, which checks the arguments before the cache."""
    # Stored once, as the word taggers' scores are (span_scores._scores, whose entry's layout this one repeats):
    # 15-19 s for every subword tagger in each process that reads them. Every module the computation reaches
    # keys the entry, and so does the key of the taggers' runs (which holds the subword encoder's).
    arrays, metadata = cache.cached("ch09-subword-scores", {"key": key}, _producers(),
                                    lambda: _scores_entry(_compute_scores(key)), book_sized=False)
    return _scores_from_entry(arrays, metadata)


@functools.cache  # the same for every key: finding and reading the modules takes a second
def _producers() -> tuple:
    return (*cache.modules_reached(__name__), artefacts.key_source("subword-taggers"))


def _compute_scores(key: str) -> tuple[tagging.EntityScores, ...]:
    return span_scores.entity_scores(_spans(key))


def _scores_entry(scores: tuple[tagging.EntityScores, ...]) -> tuple[dict, dict]:
    """Each seed's counts as arrays (``tp_0``, ``fp_0``, ``fn_0``, ``tp_1``, ...), its types as metadata."""
    arrays = {f"{name}_{k}": getattr(s, name) for k, s in enumerate(scores) for name in ("tp", "fp", "fn")}
    return arrays, {"types": [list(s.types) for s in scores]}


def _scores_from_entry(arrays: dict, metadata: dict) -> tuple[tagging.EntityScores, ...]:
    return tuple(tagging.EntityScores(tuple(types), *(arrays[f"{name}_{k}"] for name in ("tp", "fp", "fn")))
                 for k, types in enumerate(metadata["types"]))


def mean_f1(key: str) -> float:
    """Entity micro-F1 of a subword tagger, mean over seeds."""
    return float(np.mean([s.micro_f1 for s in _scores(key)]))


def f1_table():
    """Entity micro-F1 of every subword tagger, first piece against mean of pieces (book seed, mean ± sd)."""
    from mlm_book.report import table
    rows = []
    for name, label in [*((f"frozen/{layer}", f"frozen, layer {layer}") for layer in LAYERS),
                        (f"tuned/{TUNED_DEPTH}", f"fine-tuned, layer {TUNED_DEPTH}")]:
        for how, how_name in (("argmax", "argmax"), ("viterbi", "Viterbi")):
            rows.append([f"{label}, {how_name}",
                         *(seed_band([s.micro_f1 for s in _scores(f"{name}/{d}/{how}")]) for d in DECODERS)])
    return table(["tagger", "first piece", "mean of pieces"], rows)


def unknown_recall(kind: str, key: str) -> tuple[float, float]:
    """Book seed: recall of the test ``kind`` mentions that chapter 6's vocabulary reads only as ``[UNK]``,
    and of the others, by subword tagger ``key``."""
    found = _spans(_check_tagger(key))[0]
    return span_scores.recall_among(found, kind, True), span_scores.recall_among(found, kind, False)


def decoder_gap(name: str) -> tuple[float, int]:
    """``(mean over seeds of F1(mean of pieces) − F1(first piece), seeds where the mean is higher)`` for tagger
    ``name`` (``"frozen/2/viterbi"``, ``"tuned/2/argmax"``, ...: the key without its decoder)."""
    if not isinstance(name, str):
        raise TypeError(f"name must be a str, got {type(name).__name__}")
    parts = name.split("/")
    # both of its decoders' keys must be taggers, else the error would name `key`, not this argument
    if len(parts) != 3 or any(f"{parts[0]}/{parts[1]}/{d}/{parts[2]}" not in TAGGERS for d in ("first", "mean")):
        raise ValueError(f"name must look like 'frozen/2/viterbi' (a tagger key without its decoder), got {name[:60]!r}")
    first = np.array([s.micro_f1 for s in _scores(f"{parts[0]}/{parts[1]}/first/{parts[2]}")])
    mean = np.array([s.micro_f1 for s in _scores(f"{parts[0]}/{parts[1]}/mean/{parts[2]}")])
    return float(np.mean(mean - first)), int(np.sum(mean > first))


def split_words(name: str = f"frozen/{CRF_LAYER}/argmax") -> tuple[float, float, float, float]:
    """Book seed: ``(share of test words split into pieces, tag accuracy on split words from the first piece, from
    the mean, and on unsplit words)`` for tagger ``name`` (a key without its decoder; the two decoders agree on an
    unsplit word)."""
    parts = name.split("/") if isinstance(name, str) else None
    if parts is None or len(parts) != 3:
        raise ValueError(f"name must look like 'frozen/2/argmax' (a tagger key without its decoder), got {name!r}")
    data = test_data()
    pieces = pieces_of(data)
    counts = np.zeros(data.tags.shape, dtype=np.int64)
    inside = pieces.word >= 0
    np.add.at(counts, (np.nonzero(inside)[0], pieces.word[inside]), 1)
    words = data.tags >= 0
    split = words & (counts > 1)
    first = _predictions(f"{parts[0]}/{parts[1]}/first/{parts[2]}")[0]
    mean = _predictions(f"{parts[0]}/{parts[1]}/mean/{parts[2]}")[0]
    return (float(split.sum() / words.sum()), float(np.mean(first[split] == data.tags[split])),
            float(np.mean(mean[split] == data.tags[split])),
            float(np.mean(first[words & ~split] == data.tags[words & ~split])))


def figure_decoders():
    """Entity micro-F1 by layer: subword taggers decoded from the first piece and from the mean, and the word encoder's.

    Returns
    -------
    DescribedFigure
        The drawing, with alt text and a caption computed from the same scores.

    Examples
    --------
    >>> drawn = figure_decoders()  # doctest: +BOOK
    >>> len(drawn.figure.axes), f"{mean_f1(f'frozen/{CRF_LAYER}/mean/viterbi'):.2f}" in drawn.alt
    (1, True)
    """
    from mlm_book.figures import PALETTE, WIDE, describe, subplots
    fig, ax = subplots(width=WIDE, height=3.4)
    names = [*(f"frozen/{layer}" for layer in LAYERS), f"tuned/{TUNED_DEPTH}"]
    labels = [*(f"frozen, layer {layer}" for layer in LAYERS), f"fine-tuned, layer {TUNED_DEPTH}"]
    series = [("pieces, first piece", lambda n: _scores(f"{n}/first/viterbi"), PALETTE["sky"]),
              ("pieces, mean of pieces", lambda n: _scores(f"{n}/mean/viterbi"), PALETTE["blue"]),
              ("words (chapter 7's encoder)", lambda n: span_scores.scores(f"{n}/viterbi"), PALETTE["orange"])]
    width = 0.26
    means = np.zeros((len(series), len(names)))
    for j, (label, get, colour) in enumerate(series):
        for k, name in enumerate(names):
            values = np.array([s.micro_f1 for s in get(name)])
            means[j, k] = values.mean()
            x = k + (j - 1) * width
            ax.bar(x, values.mean(), width=width * 0.9, color=colour, label=label if k == 0 else None)
            ax.plot(np.full(values.size, x), values, ls="none", marker=".", color=PALETTE["black"])
    ax.set_xticks(range(len(names)), labels)
    ax.set_ylabel(f"entity micro-F1, Viterbi\n(bars: mean of {len(SEEDS)} seeds)")
    ax.set_ylim(0, 1.02)  # a seed at F1 = 1 is drawn whole
    # below the tick labels, off the bars
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.12), ncol=3, frameon=False)
    groups = "; ".join(f"{label}: {first:.2f}, {mean:.2f} and {word:.2f}"
                       for label, (first, mean, word) in zip(labels, means.T))
    count = lambda holds: (f"all {len(names)} groups" if holds.all()
                           else f"{int(holds.sum())} of the {len(names)} groups")
    alt = (f"Bars of entity micro-F1 with Viterbi decoding (mean of {len(SEEDS)} seeds, with a dot per seed) in "
           f"{len(names)} groups, one per tagger; in each, the subword tagger decoded from the first piece, the "
           f"same decoded from the mean of the pieces, and chapter 7's word tagger. {groups}. The mean of the pieces "
           f"is above the first piece in {count(means[1] > means[0])}, and the word tagger above both subword "
           f"taggers in {count(means[2] > means[:2].max(axis=0))}.")
    return describe(fig, alt=alt, caption="Entity micro-F1 (Viterbi) of the subword taggers decoded from the first "
                                          "piece and from the mean of the pieces, beside the word encoder's taggers "
                                          f"(bars: mean over {len(SEEDS)} seeds; dots: each seed).")


def figure_losses():
    """Training loss by step of the subword encoders (every seed and their mean) and of chapter 7's word encoder
    (book seed).

    Returns
    -------
    DescribedFigure
        The drawing, with alt text and a caption computed from the same losses.

    Examples
    --------
    >>> drawn = figure_losses()  # doctest: +BOOK
    >>> len(drawn.figure.axes), f"stop at step {SETUP.steps}" in drawn.alt
    (1, True)
    """
    from mlm_book.figures import PALETTE, WIDE, describe, subplots
    fig, ax = subplots(width=WIDE, height=3.2)
    window = 50
    smooth = lambda losses: np.convolve(losses, np.ones(window) / window, mode="valid")
    word = filing_encoder.trained_encoder(filing_encoder.SETUP).losses
    ax.plot(np.arange(window, word.size + 1), smooth(word), color=PALETTE["orange"], lw=1.4,
            label=f"words, {word.size} steps (chapter 7, book seed)")
    pieces = np.array([trained_encoder(seed).losses for seed in SEEDS])
    steps = np.arange(window, pieces.shape[1] + 1)
    for k, losses in enumerate(pieces):
        ax.plot(steps, smooth(losses), color=PALETTE["sky"], lw=0.9,
                label=f"pieces, {pieces.shape[1]} steps (each of {len(SEEDS)} seeds)" if k == 0 else None)
    ax.plot(steps, smooth(pieces.mean(axis=0)), color=PALETTE["blue"], lw=2.0,
            label=f"pieces, mean of the {len(SEEDS)} seeds")
    ax.set_xlabel("training step")
    ax.set_ylabel(f"loss, nats per selected slot\n({window}-step mean)")
    ax.legend(loc="upper right", frameon=False)  # past the subword curves' last step: above the word curve's tail
    final = _final_losses()
    alt = (f"Training loss against step, smoothed over {window} steps. Chapter 7's word encoder ends at "
           f"{float(np.mean(word[-100:])):.2f} nats per word after {word.size} steps; the {len(SEEDS)} subword "
           f"encoders, drawn thin with their mean thick, stop at step {SETUP.steps} at {final.min():.2f} to "
           f"{final.max():.2f} nats per piece (mean {final.mean():.2f}), still falling; at that step the word "
           f"encoder's loss was {float(np.mean(word[SETUP.steps - 100:SETUP.steps])):.2f} nats per word and falling "
           f"slowly.")
    return describe(fig, alt=alt, caption="Pre-training loss of the subword encoders (thin: each seed; thick: their "
                                          "mean) and of chapter 7's word encoder (per selected piece and per selected "
                                          "word: the two are not on one scale).")


# ----------------------------------------------------------------------------- claims
def _decoder_gap(k: int) -> tuple[float, float]:
    name = f"frozen/{CRF_LAYER}"
    return (_scores(f"{name}/first/viterbi")[k].micro_f1, _scores(f"{name}/mean/viterbi")[k].micro_f1)


def _first_piece_claim() -> dict:
    values = [_decoder_gap(k) for k in range(len(SEEDS))]
    return over_seeds(values, sum(first >= mean - 0.01 for first, mean in values),
                      margins=[first - (mean - 0.01) for first, mean in values])


CLAIMS = (
    Claim("D-40", f"Subwords in tagging: every piece trained on its word's tag; a word decoded from its first "
          f"piece's distribution against the mean of its pieces' (frozen top layer, Viterbi, entity micro-F1: "
          f"first, mean; {len(SEEDS)} seeds)", seed="—", rule="first ≥ mean − 0.01",
          compute=_first_piece_claim, accept=lambda v: True, expected="not reproduced", section="tagging-pieces"),
)
