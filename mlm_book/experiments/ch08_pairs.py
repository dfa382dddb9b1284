r"""Chapter 8: sentence pairs, ``[CLS]``, next-sentence prediction and fine-tuning, on the filings.

**The world.** Pre-training reads chapter 6's 300 filings (its corpus, vocabulary and
tokens, unchanged). Labelled data come from two *fresh* corpora drawn by the same generator
with the same configuration and other seeds (`LABELLED_SEED`, `TEST_SEED`), read through
chapter 6's vocabulary (a word it lacks becomes ``[UNK]``): a pool to draw labelled
training sets from, and a test set no encoder has seen. Every sentence carries the
generator's gold facts: its filing, the filer, and for a *news sentence* the news it
reports (good or bad: the aspect's polarity times the direction, written on the direction
word or evaluative verb).

**Two pre-trainings at equal steps** ([`PairSetup`][mlm_book.artefacts.pair_encoder.PairSetup]), both through BERT's channel
on the real tokens (``[CLS]``, ``[SEP]`` and ``[PAD]`` are never selected):

* ``"nsp"``: BERT. ``[CLS] A [SEP] B [SEP]`` with B the sentence after A in its filing
  (half the pairs) or a sentence drawn uniformly from *another* filing; loss MLM + NSP;
* ``"packed"``: after RoBERTa's FULL-SENTENCES. ``[CLS]`` then contiguous text from a
  sentence start, running on across sentence and filing boundaries (``[SEP]`` between
  sentences) to the length, so the last sentence may be cut; one segment; loss MLM alone.
  (RoBERTa packs whole sentences and adds an extra separator at a document boundary.)

A third run, ``"packed"`` with every selected token shown as ``[MASK]`` (``mask = 1``),
was meant to isolate the pre-train/fine-tune mismatch; at this size and length it stays on
the unigram plateau, so it measures the channel's effect on training instead (chapter 8).

The recipe is the filing encoder's (d = 64, 4 heads, 2 blocks, AdamW at peak 1e-2 with
the same warm-up share, cosine to 2 %, total decay 0.5; selection 0.15, 0.8/0.1/0.1
uniform replacement), with batches of 64 sequences of 32 slots. The step count was set by
the chapter's compute budget before any measurement: [`STEPS`][mlm_book.artefacts.pair_encoder.STEPS].

The runs themselves (sentences, pre-trainings, measurements) live on the artefact floor,
[`mlm_book.artefacts.pair_encoder`][mlm_book.artefacts.pair_encoder]; this module reads them.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

# the runs live on the artefact floor; the chapter (and its readers) take them from here too
from mlm_book.artefacts.pair_encoder import (  # noqa: F401
    as_pair_encoder,
    book_setups,
    chapter6_transfer,
    check_variant,
    COMPARED,
    filing_encoder_key,
    filing_pair_encoder,
    FINE_TUNE,
    FINE_TUNINGS,
    LABELLED_SEED,
    labelled_sentences,
    labelled_subset,
    MAX_DOCUMENTS,
    MEASURE,
    measurements,
    news_task,
    packed_batch,
    pair_batch,
    pair_inputs,
    PairMeasure,
    PairSetup,
    POOL_DOCUMENTS,
    pool_sentences,
    pretrain,
    PretrainedPair,
    pretraining_code,
    scratch,
    SEEDS,
    Sentences,
    sentences,
    sentences_of,
    single_inputs,
    SIZES,
    STEPS,
    TEST_SEED,
    VARIANTS,
    vocab_size,
)
from mlm_book.artefacts.pair_encoder import assemble, text_stream  # noqa: F401
from mlm_book.artefacts.pair_encoder import check_variant as _check_variant
from mlm_book.ledger import Claim, over_seeds
from mlm_book.report import seed_band
from mlm_book.validation import check_format, check_positive_int

__all__ = ["band", "nsp_table", "probe_table", "curve_table", "figure_input", "figure_losses", "figure_nsp",
           "figure_curves", "mlm_table", "mismatch_table", "transfer_gain", "nsp_balanced_accuracy", "longest_pair",
           "plateau", "final_losses", "news_probe", "news_fine_tune", "figure_probes", "CLAIMS"]


# ----------------------------------------------------------------------------- reading the results
def _runs(variant: str) -> tuple[dict, ...]:
    """The measurements of a pre-training variant (``"nsp"``, ``"packed"``, ``"all-mask"``) at every seed, the book's first.

    Examples
    --------
    >>> len(_runs("nsp")), sorted(_runs("nsp")[0])[:2]  # doctest: +BOOK
    (5, ['curve/frozen/cls/1024', 'curve/frozen/cls/16'])
    """
    _check_variant(variant)
    return tuple(measurements(replace(VARIANTS[variant], seed=seed)) for seed in SEEDS)


def _scratch_runs() -> tuple[dict, ...]:
    """The from-scratch learning curves at every seed."""
    return tuple(scratch(seed) for seed in SEEDS)


def _filing_encoder_runs() -> tuple[dict, ...]:
    """Chapter 7's filing encoders fine-tuned, at every seed."""
    return tuple(chapter6_transfer(seed) for seed in SEEDS)


def _runs_of(source: str) -> tuple[dict, ...]:
    if not isinstance(source, str):
        raise TypeError(f"source must be a str, got {type(source).__name__}")
    if source not in (*VARIANTS, "scratch", "filing encoder"):
        raise ValueError(f"source must be one of {[*VARIANTS, 'scratch', 'filing encoder']}, got {source!r}")
    return {"scratch": _scratch_runs, "filing encoder": _filing_encoder_runs}.get(source, lambda: _runs(source))()


def band(source: str, key: str) -> tuple[float, float, float]:
    """``(book seed, mean, sd)`` of one measurement over the seeds (``source`` a variant, ``"scratch"`` or ``"filing encoder"``).

    Examples
    --------
    >>> b, m, s = band("nsp", "mlm/pairs")  # doctest: +BOOK
    >>> 0 < b < 10 and s >= 0
    True
    """
    values = _values(source, key)
    return float(values[0]), float(values.mean()), float(values.std(ddof=1))


def _values(source: str, key: str) -> np.ndarray:
    """One measurement at every seed of ``source``, the book's first, arguments checked."""
    if not isinstance(key, str):
        raise TypeError(f"key must be a measurement name (str), got {type(key).__name__}")
    found = _runs_of(source)
    if key not in found[0]:
        raise ValueError(f"key must be one of the measurements of {source!r}, got {key!r}")
    return np.array([run[key] for run in found])


def _band_text(source: str, key: str, fmt: str = ".3f") -> str:
    """``"book (mean ± sd)"`` of one measurement over the seeds.

    Examples
    --------
    >>> _band_text("scratch", "curve/full/cls/64", ".2f")  # doctest: +BOOK
    '0.87 (0.85 ± 0.05)'
    >>> _band_text("scratch", "curve/full/cls/1024", ".2f")  # every seed learns the 1024 labels
    '1.00 at every seed'
    """
    check_format(fmt, "fmt")
    return seed_band(_values(source, key), fmt)


NSP_CONDITIONS = {"next": "B is A's next sentence", "swapped": "B is the sentence before A (order swapped)",
                  "same": "B is another sentence of A's filing", "other": "B is a sentence of another filing"}


def nsp_table():
    """The share of test pairs the NSP head calls "next", by condition, book seed (mean ± sd over seeds)."""
    from mlm_book.report import table
    rows = [[text, _band_text("nsp", f"nsp/{key}"), "next" if key == "next" else "random"]
            for key, text in NSP_CONDITIONS.items()]
    return table(["test pairs", "called “next”", "right answer"], rows)


def probe_table():
    """Probe accuracies for the filer and the news on [CLS] and on the mean of the token vectors."""
    from mlm_book.report import table
    rows = []
    for fact, label in (("company", "the filing's company (21 classes)"), ("news", "the sentence's news (good/bad)")):
        for pooling, name in (("cls", "[CLS]"), ("mean", "mean of tokens")):
            rows.append([label, name, *(_band_text(v, f"probe/{fact}/{pooling}") for v in VARIANTS)])
    return table(["fact", "vector", "MLM + NSP", "MLM, packed", "MLM, all [MASK]"], rows)


# learning-curve lines of the left panel: (source, key stem, label)
CURVES = (("scratch", "full/cls", "from scratch (full, [CLS])"),
          ("nsp", "frozen/mean", "frozen, mean (probe)"),
          ("nsp", "top/cls", "top block, [CLS]"),
          ("nsp", "full/cls", "full, [CLS]"),
          ("nsp", "full/mean", "full, mean"))


def curve_table(source: str):
    """Test accuracy of the news classifier by labelled-set size for every head and mode of ``source``."""
    from mlm_book.report import table
    _runs_of(source)
    stems = ["frozen/cls", "frozen/mean", "top/cls", "full/cls", "full/mean"]
    if source != "nsp":
        stems = ["frozen/cls", "frozen/mean", "full/cls"]
    names = {"frozen/cls": "frozen, [CLS]", "frozen/mean": "frozen, mean", "top/cls": "top block, [CLS]",
             "full/cls": "full, [CLS]", "full/mean": "full, mean"}
    rows = [[names[stem], *(_band_text(source, f"curve/{stem}/{size}") for size in SIZES)] for stem in stems]
    rows.append(["from scratch, [CLS]", *(_band_text("scratch", f"curve/full/cls/{size}") for size in SIZES)])
    return table(["head", *(f"{size} labels" for size in SIZES)], rows)


# ----------------------------------------------------------------------------- figures
def figure_input(first: int | None = None):
    """A pair's input as the sum of three tables: token rows, position rows and segment rows (book-seed NSP encoder).

    Parameters
    ----------
    first : int, optional
        Index in the held-out corpus (``labelled_sentences(TEST_SEED)``) of sentence A; B is the
        sentence after it in its filing. By default the first pair of two sentences of at most 6 tokens.

    Returns
    -------
    DescribedFigure
        Four heat maps (token, position and segment rows and their sum, one row per slot), with an
        alt text that names the pair and each panel's largest entry.

    Raises
    ------
    ValueError
        If ``first`` is not a sentence of the held-out corpus followed by another of its filing.

    Examples
    --------
    >>> import matplotlib.pyplot as plt  # doctest: +BOOK
    >>> drawn = figure_input()
    >>> len(drawn.figure.axes) >= 4, "largest entry" in drawn.alt
    (True, True)
    >>> plt.close(drawn.figure)
    """
    from mlm_book.artefacts import filings
    from mlm_book.figures import WIDE, describe, subplots

    model = pretrain(VARIANTS["nsp"])
    params, config = model.params, model.config
    words = filings.filings().vocabulary.words
    text = labelled_sentences(TEST_SEED)
    if first is None:
        first = int(np.flatnonzero((~text.last) & (text.lengths <= 6) & (text.lengths[np.minimum(
            np.arange(text.count) + 1, text.count - 1)] <= 6))[0])
    elif isinstance(first, bool) or not isinstance(first, (int, np.integer)) \
            or not 0 <= first < text.count - 1 or text.last[first]:
        raise ValueError(f"first must index a held-out sentence followed by another of its filing "
                         f"(0 to {text.count - 2}, not a filing's last), got {first!r}")
    first = int(first)
    tokens, segments = assemble(text, np.array([first]), np.array([first + 1]), config)
    n = int(np.sum(tokens[0] != config.pad_id))
    tokens, segments = tokens[0, :n], segments[0, :n]
    labels = ["[CLS]" if t == config.cls_id else words[t] for t in tokens]
    table_rows = np.concatenate([params["E"], params["cls"][None]])
    parts = {"token  E[x]": table_rows[tokens], "position  P": params["P"][:n],
             "segment  S": params["S"][segments]}
    parts["input = sum"] = sum(parts.values())
    shown, width = 16, params["E"].shape[1]
    limits = [float(np.abs(rows).max()) for rows in parts.values()]
    fig, axes = subplots(1, 4, width=WIDE, height=3.8, sharey=True)
    for ax, (title, rows), limit in zip(axes, parts.items(), limits):
        ax.imshow(rows[:, :shown], cmap="RdBu_r", vmin=-limit, vmax=limit, aspect="auto")
        ax.set_title(f"{title}\nlargest |entry| {limit:.2f}")
        ax.set_xlabel(f"first {shown} of {width} dims")
        ax.set_xticks([])
    axes[0].set_yticks(np.arange(n), [f"{lab}  ({'A' if s == 0 else 'B'})" for lab, s in zip(labels, segments)])
    sentence_a = " ".join(lab for lab, s in zip(labels[1:], segments[1:]) if s == 0 and lab != "[SEP]")
    sentence_b = " ".join(lab for lab, s in zip(labels, segments) if s == 1 and lab != "[SEP]")
    alt = (f"Four heat maps side by side, one row per slot of the pair A = '{sentence_a}', B = '{sentence_b}' "
           f"({n} slots from [CLS] to the final [SEP]), the first {shown} of {width} dimensions, each map on its "
           f"own colour scale: the token rows, which change from word to word (largest entry {limits[0]:.2f}); "
           f"the position rows, which change from slot to slot ({limits[1]:.2f}); the segment rows, one row "
           f"repeated down sentence A and another down sentence B ({limits[2]:.2f}); and their sum, the "
           f"encoder's input ({limits[3]:.2f})"
           + (", in which the token rows dominate." if limits[0] >= 2 * max(limits[1:3]) else "."))
    caption = (f"The input of a pair as the sum of three tables (the book-seed MLM + NSP encoder after "
               f"pre-training; first {shown} of {width} dimensions, one colour scale per panel, its largest entry "
               f"above it).")
    return describe(fig, alt=alt, caption=caption)


def _between(values) -> str:
    """Words for the range of some accuracies at two decimals: "between 0.53 and 0.58", or "all 1.00"."""
    low, high = f"{min(values):.2f}", f"{max(values):.2f}"
    return f"all {low}" if low == high else f"between {low} and {high}"


def _moving(values: np.ndarray, window: int = 50) -> np.ndarray:
    return np.convolve(values, np.ones(window) / window, mode="valid")


def figure_losses():
    """Pre-training losses: masked-LM of the three variants and the NSP head's, every seed faint and their mean bold.

    Returns
    -------
    DescribedFigure
        Two panels (masked-LM and NSP cross-entropy against step), with an alt text giving where
        each variant starts and ends.

    Examples
    --------
    >>> import matplotlib.pyplot as plt  # doctest: +BOOK
    >>> drawn = figure_losses()
    >>> [ax.get_title() for ax in drawn.figure.axes]
    ['masked-LM cross-entropy', 'NSP cross-entropy']
    >>> "unigram" in drawn.alt
    True
    >>> plt.close(drawn.figure)
    """
    from mlm_book.figures import PALETTE, WIDE, describe, subplots
    from mlm_book.readings.filing_baselines import unigram_cross_entropy
    fig, axes = subplots(1, 2, width=WIDE, height=4.0)
    colors = {"nsp": PALETTE["blue"], "packed": PALETTE["orange"], "all-mask": PALETTE["green"]}
    labels = {"nsp": "MLM + NSP (pairs)", "packed": "MLM, packed", "all-mask": "MLM, packed, all [MASK]"}
    window, tail = 50, 100
    models = {variant: _pretrained_seeds(variant) for variant in VARIANTS}
    panels = [(axes[0], variant, "mlm_losses", labels[variant]) for variant in VARIANTS]
    panels.append((axes[1], "nsp", "nsp_losses", f"mean of {len(SEEDS)} seeds"))
    for ax, variant, losses, label in panels:
        curves = np.array([_moving(getattr(model, losses), window) for model in models[variant]])
        steps = np.arange(curves.shape[1]) + window
        for k, curve in enumerate(curves):  # each seed faint, the mean over seeds bold
            ax.plot(steps, curve, color=colors[variant], lw=0.8, alpha=0.4,
                    label="one seed" if ax is axes[1] and k == 0 else None)
        ax.plot(steps, curves.mean(axis=0), color=colors[variant], lw=2, label=label)
    axes[1].axhline(np.log(2), color=PALETTE["black"], ls="--", lw=1, label="chance, ln 2")
    axes[0].set_title("masked-LM cross-entropy")
    axes[1].set_title("NSP cross-entropy")
    for ax in axes:
        ax.set_xlabel(f"step (moving average of {window})")
        ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.2), ncols=2, frameon=False)  # off the curves
    axes[0].set_ylabel("nats")

    def mean_of(variant, part):  # mean over seeds of the masked-LM loss in a stretch of steps
        return float(np.mean([model.mlm_losses[part].mean() for model in models[variant]]))

    start = mean_of("nsp", slice(0, window))
    middle = len(models["packed"][0].mlm_losses) // 2
    halfway = {variant: mean_of(variant, slice(middle - window, middle + window)) for variant in VARIANTS}
    end = {variant: mean_of(variant, slice(-tail, None)) for variant in VARIANTS}
    nsp_end = [float(model.nsp_losses[-tail:].mean()) for model in models["nsp"]]
    unigram = unigram_cross_entropy()
    alt = (f"Two panels of training loss against step, each seed faint and the mean over seeds bold. Left, masked-LM "
           f"cross-entropy for the three pre-trainings, all starting near {start:.1f} nats; halfway and at the "
           f"end (means over seeds) the MLM + NSP encoder is near {halfway['nsp']:.1f} and {end['nsp']:.1f} on "
           f"its pairs, the packed 80/10/10 encoder near {halfway['packed']:.1f} and {end['packed']:.1f} on its "
           f"longer sequences, and the all-[MASK] encoder near {halfway['all-mask']:.1f} and "
           f"{end['all-mask']:.1f}, against {unigram:.1f} nats for the filings' unigram. Right, the NSP "
           f"cross-entropy of the MLM + NSP encoder, starting near the dashed line at ln 2 = {np.log(2):.2f} "
           f"and ending between {min(nsp_end):.2f} and {max(nsp_end):.2f} (mean {np.mean(nsp_end):.2f}).")
    caption = (f"Pre-training losses, {window}-step moving averages of fresh batches; the mean over "
               f"{len(SEEDS)} seeds bold, each seed faint.")
    return describe(fig, alt=alt, caption=caption)


def figure_nsp():
    """Share of test pairs called "next" by condition: every seed's value and the mean.

    Returns
    -------
    DescribedFigure
        One bar per condition (mean over seeds) with a dot per seed, and an alt text giving each
        condition's mean.

    Examples
    --------
    >>> import matplotlib.pyplot as plt  # doctest: +BOOK
    >>> drawn = figure_nsp()
    >>> len(drawn.figure.axes[0].get_xticks()), "true next 0." in drawn.alt
    (4, True)
    >>> plt.close(drawn.figure)
    """
    from mlm_book.figures import NARROW, PALETTE, describe, subplots
    fig, ax = subplots(width=NARROW, height=3.2)
    keys = list(NSP_CONDITIONS)
    values = np.array([[run[f"nsp/{key}"] for key in keys] for run in _runs("nsp")])
    means = values.mean(axis=0)
    x = np.arange(len(keys))
    ax.bar(x, means, color=[PALETTE["blue"]] + [PALETTE["sky"]] * 3, width=0.6,
           label=f"mean of {len(SEEDS)} seeds")
    for k, row in enumerate(values):
        ax.plot(x, row, ls="none", marker="o" if k == 0 else ".", color=PALETTE["black"],
                label="book seed" if k == 0 else ("other seeds" if k == 1 else None))
    ax.axhline(0.5, color=PALETTE["black"], ls="--", lw=1)
    ax.set_xticks(x, ["next", "swapped", "same filing", "other filing"])
    ax.set_ylabel("share called “next”")
    ax.set_ylim(0, 1)
    ax.legend(loc="upper right")
    names = {"next": "true next", "swapped": "swapped", "same": "another sentence of the same filing",
             "other": "a sentence of another filing"}
    alt = (f"Bars of the share of held-out pairs the NSP head calls next, mean of {len(SEEDS)} seeds, in four "
           f"conditions, with a dot per seed and a dashed line at one half: "
           + ", ".join(f"{names[key]} {mean:.2f}" for key, mean in zip(keys, means))
           + f". The four bars lie within {means.max() - means.min():.2f} of each other, while single seeds "
           f"range from {values.min():.2f} to {values.max():.2f}.")
    caption = f"The NSP head's verdicts on held-out pairs ({MEASURE.nsp_test_pairs} per condition)."
    return describe(fig, alt=alt, caption=caption)


def figure_curves():
    """News-classifier learning curves: MLM + NSP encoder's heads and modes, packed and chapter 7's encoder full fine-tuning, scratch.

    Returns
    -------
    DescribedFigure
        Two panels of test accuracy against labelled-set size (mean and ± sd band over seeds),
        each with its legend below it, and an alt text giving where the curves end.

    Examples
    --------
    >>> import matplotlib.pyplot as plt  # doctest: +BOOK
    >>> drawn = figure_curves()
    >>> [ax.get_title() for ax in drawn.figure.axes]
    ['heads and modes (MLM + NSP encoder)', 'full fine-tuning, [CLS] head']
    >>> "at 1024 labels" in drawn.alt
    True
    >>> plt.close(drawn.figure)
    """
    from mlm_book.figures import PALETTE, WIDE, describe, subplots
    fig, axes = subplots(1, 2, width=WIDE, height=4.6, sharey=True)
    x = np.array(SIZES)
    heads = [PALETTE["black"], PALETTE["sky"], PALETTE["green"], PALETTE["blue"], PALETTE["orange"]]
    # the right panel's encoders in the loss figure's colours
    encoders = [PALETTE["black"], PALETTE["blue"], PALETTE["orange"], PALETTE["green"], PALETTE["purple"]]
    panels = ((axes[0], CURVES, "heads and modes (MLM + NSP encoder)", heads),
              (axes[1], (("scratch", "full/cls", "from scratch"), ("nsp", "full/cls", "MLM + NSP, 1000 steps"),
                         ("packed", "full/cls", "MLM packed, 1000 steps"),
                         ("all-mask", "full/cls", "MLM packed, all [MASK]"),
                         ("filing encoder", "full/cls", "chapter 7's encoder, 3000 steps")), "full fine-tuning, [CLS] head", encoders))
    means = {}
    for ax, lines, title, colors in panels:
        for color, (source, stem, label) in zip(colors, lines):
            values = np.array([[run[f"curve/{stem}/{size}"] for size in SIZES] for run in _runs_of(source)])
            mean, sd = values.mean(axis=0), values.std(axis=0, ddof=1)
            means[source, stem] = dict(zip(SIZES, mean))
            ax.fill_between(x, mean - sd, mean + sd, color=color, alpha=0.15, lw=0)
            ax.plot(x, mean, color=color, marker="o", lw=1.5, label=label)
        ax.set_xscale("log", base=2)
        ax.set_xticks(x, [str(s) for s in SIZES])
        ax.set_xlabel("labelled sentences")
        ax.set_title(title)
        ax.axhline(0.5, color=PALETTE["black"], ls=":", lw=1)
        ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.18), ncols=2, frameon=False)  # below the axes, off the curves
    axes[0].set_ylabel(f"test accuracy (mean ± sd, {len(SEEDS)} seeds)")
    axes[0].set_ylim(0.4, 1.02)
    small, large = SIZES[0], SIZES[-1]
    compared = ("scratch", "nsp", "packed", "all-mask", "filing encoder")
    at_small = [means[source, "full/cls"][small] for source in compared]
    others = [means[source, "full/cls"][large] for source in compared if source != "all-mask"]
    lowest = all(means["all-mask", "full/cls"][size] <= min(means[source, "full/cls"][size] for source in compared)
                 for size in SIZES[1:])
    alt = (f"Two panels of test accuracy against the number of labelled sentences, {small} to {large} on a log "
           f"scale, each curve the mean over {len(SEEDS)} seeds with a band of one standard deviation, and a "
           f"dotted line at one half, chance. Left, the MLM + NSP encoder at {large} labels: the frozen probe "
           f"rises slowly to {means['nsp', 'frozen/mean'][large]:.2f}, the top-block run to "
           f"{means['nsp', 'top/cls'][large]:.2f}, full fine-tuning to {means['nsp', 'full/cls'][large]:.2f} with "
           f"the CLS head and {means['nsp', 'full/mean'][large]:.2f} with the mean; at 64 labels training from "
           f"scratch reaches {means['scratch', 'full/cls'][64]:.2f} against {means['nsp', 'full/cls'][64]:.2f} "
           f"for full fine-tuning. Right, full fine-tuning of every encoder and from scratch: "
           f"{_between(at_small)} at {small} labels and {_between(others)} at {large}, except the all-[MASK] encoder, which "
           + ("stays lowest and " if lowest else "")
           + f"ends at {means['all-mask', 'full/cls'][large]:.2f}.")
    return describe(fig, alt=alt, caption="Learning curves of the news classifier (mean ± sd over seeds).")


# ----------------------------------------------------------------------------- claims
def _seeds_of(*sources: str) -> list[tuple[dict, ...]]:
    """Per seed, one measurement dict per source (the book's seed first)."""
    columns = [_runs_of(source) for source in sources]
    return list(zip(*columns))


def _judged(sources, getter, rule, margin) -> dict:
    """``over_seeds`` of ``getter`` at each seed, counting the seeds where ``rule`` holds; ``margin`` gives each
    seed's signed distance from the rule's threshold (non-negative exactly where the rule holds)."""
    rows = _seeds_of(*sources)
    return over_seeds([getter(*row) for row in rows], sum(bool(rule(*row)) for row in rows),
                      margins=[margin(*row) for row in rows])


def _balanced(run: dict, negatives: str) -> float:
    return (run["nsp/next"] + 1.0 - run[f"nsp/{negatives}"]) / 2.0


def _claim(id_, quantity, sources, rule_text, getter, rule, margin, expected, section=None):
    """A learned claim over the seeds; it passes when its verdict is ``expected``, the one chapter 8 states
    (in its ``section``)."""
    return Claim(id_, f"{quantity} ({len(SEEDS)} seeds)", seed="—", rule=rule_text,
                 compute=lambda: _judged(sources, getter, rule, margin), accept=lambda value: True, expected=expected,
                 section=section)


def _longest_pair() -> int:
    text = sentences()
    consecutive = ~text.last[:-1]
    return int((text.lengths[:-1] + text.lengths[1:])[consecutive].max()) + 3


CLAIMS = (
    _claim("D-02", "Transfer: full fine-tuning of chapter 7's pre-trained encoder against the same encoder trained "
           "from scratch, news accuracy at 64 labels", ("filing encoder", "scratch"),
           "pre-trained ≥ scratch + 0.02 (a real gain with few labels)",
           lambda pre, base: (pre["curve/full/cls/64"], base["curve/full/cls/64"]),
           lambda pre, base: pre["curve/full/cls/64"] >= base["curve/full/cls/64"] + 0.02,
           lambda pre, base: pre["curve/full/cls/64"] - (base["curve/full/cls/64"] + 0.02), "seed-dependent",
           section="fine-tuning-for-the-news-of-a-sentence"),
    _claim("D-14", "80/10/10 against all-[MASK] pre-training at chapter 8's budget, frozen mean-pooled news probe "
           "at 1024 labels (the all-[MASK] encoders are still on the unigram plateau, so this measures the channel's "
           "effect on training, not the pre-train / fine-tune mismatch)", ("packed", "all-mask"),
           "80/10/10 ≥ all-[MASK] + 0.01",
           lambda kept, masked: (kept["curve/frozen/mean/1024"], masked["curve/frozen/mean/1024"]),
           lambda kept, masked: kept["curve/frozen/mean/1024"] >= masked["curve/frozen/mean/1024"] + 0.01,
           lambda kept, masked: kept["curve/frozen/mean/1024"] - (masked["curve/frozen/mean/1024"] + 0.01),
           "reproduced", section="no-mask-at-fine-tuning"),
    _claim("D-18", "NSP is solved by topic: balanced accuracy of the NSP head with other-filing against "
           "same-filing negatives", ("nsp",), "other-filing ≥ same-filing + 0.05",
           lambda run: (_balanced(run, "other"), _balanced(run, "same")),
           lambda run: _balanced(run, "other") >= _balanced(run, "same") + 0.05,
           lambda run: _balanced(run, "other") - (_balanced(run, "same") + 0.05), "not reproduced",
           section="what-next-sentence-prediction-learns-here"),
    Claim("D-19", "Input [CLS] A [SEP] B [SEP]: slots of the longest pair of consecutive filing sentences",
          seed="—", rule="≤ the encoder's 32 slots (no pair is cut)", compute=_longest_pair,
          accept=lambda value: value <= PairSetup().length, fmt="d", section="exercises"),
    _claim("D-20", "The NSP head learns its task: balanced accuracy with other-filing negatives (its training "
           "distribution)", ("nsp",), "≥ 0.75", lambda run: _balanced(run, "other"),
           lambda run: _balanced(run, "other") >= 0.75, lambda run: _balanced(run, "other") - 0.75, "not reproduced",
           section="what-next-sentence-prediction-learns-here"),
    _claim("D-21", "[CLS] summarises the sequence because NSP trains it: company probe on [CLS] after MLM + NSP "
           "against packed MLM", ("nsp", "packed"), "MLM + NSP ≥ packed + 0.02",
           lambda nsp, packed: (nsp["probe/company/cls"], packed["probe/company/cls"]),
           lambda nsp, packed: nsp["probe/company/cls"] >= packed["probe/company/cls"] + 0.02,
           lambda nsp, packed: nsp["probe/company/cls"] - (packed["probe/company/cls"] + 0.02), "not reproduced",
           section="what-the-cls-vector-holds"),
    _claim("D-22", "Training without NSP costs nothing downstream: full fine-tuning at 64 / 1024 labels, packed MLM "
           "against MLM + NSP", ("packed", "nsp"), "packed ≥ MLM + NSP − 0.02 at both sizes",
           lambda packed, nsp: tuple(packed[f"curve/full/cls/{n}"] - nsp[f"curve/full/cls/{n}"] for n in (64, 1024)),
           lambda packed, nsp: all(packed[f"curve/full/cls/{n}"] >= nsp[f"curve/full/cls/{n}"] - 0.02
                                   for n in (64, 1024)),
           lambda packed, nsp: min(packed[f"curve/full/cls/{n}"] - (nsp[f"curve/full/cls/{n}"] - 0.02)
                                   for n in (64, 1024)), "seed-dependent",
                                   section="fine-tuning-for-the-news-of-a-sentence"),
    _claim("D-28", "A [CLS] head and a mean-pooled head after full fine-tuning, 1024 labels", ("nsp",),
           "within 0.02 of each other",
           lambda run: (run["curve/full/cls/1024"], run["curve/full/mean/1024"]),
           lambda run: abs(run["curve/full/cls/1024"] - run["curve/full/mean/1024"]) <= 0.02,
           lambda run: 0.02 - abs(run["curve/full/cls/1024"] - run["curve/full/mean/1024"]), "reproduced",
           section="fine-tuning-for-the-news-of-a-sentence"),
    _claim("D-29", "Minimal changes suffice: training only the top block against full fine-tuning, 1024 labels",
           ("nsp",), "top block ≥ full − 0.02",
           lambda run: (run["curve/top/cls/1024"], run["curve/full/cls/1024"]),
           lambda run: run["curve/top/cls/1024"] >= run["curve/full/cls/1024"] - 0.02,
           lambda run: run["curve/top/cls/1024"] - (run["curve/full/cls/1024"] - 0.02), "seed-dependent",
           section="fine-tuning-for-the-news-of-a-sentence"),
)


# ----------------------------------------------------------------------------- more tables
_VARIANT_NAMES = {"nsp": "MLM + NSP", "packed": "MLM, packed", "all-mask": "MLM, packed, all [MASK]"}


def mlm_table():
    """Held-out masked-LM cross-entropy (nats) of each pre-training, on pairs and on packed text."""
    from mlm_book.report import table
    return table(["pre-training", "held-out pairs", "held-out packed text"],
                 [[name, _band_text(v, "mlm/pairs"), _band_text(v, "mlm/packed")] for v, name in _VARIANT_NAMES.items()])


def mismatch_table():
    """News accuracy after 80/10/10 against all-[MASK] pre-training (packed), by head and labelled-set size."""
    from mlm_book.report import table
    names = {"frozen/cls": "frozen, [CLS]", "frozen/mean": "frozen, mean", "full/cls": "full, [CLS]"}
    rows = [[f"{names[stem]}, {size} labels", _band_text("packed", f"curve/{stem}/{size}"),
             _band_text("all-mask", f"curve/{stem}/{size}")] for stem in names for size in (64, 1024)]
    return table(["head and labels", "80 / 10 / 10", "100 % [MASK]"], rows)


def transfer_gain(source: str, size: int) -> float:
    """Mean over seeds of full [CLS] fine-tuning's news accuracy minus training from scratch's (same seed and labels).

    Examples
    --------
    >>> transfer_gain("scratch", 64)  # doctest: +BOOK
    0.0
    """
    if isinstance(size, bool) or not isinstance(size, (int, np.integer)) or size not in SIZES:
        raise ValueError(f"size must be one of {SIZES}, got {size!r}")
    key = f"curve/full/cls/{size}"
    return float(np.mean([run[key] - base[key] for run, base in zip(_runs_of(source), _scratch_runs())]))


def nsp_balanced_accuracy(negatives: str) -> float:
    """Mean over seeds of the NSP head's balanced accuracy (true next against ``negatives``: "other", "same", "swapped").

    Examples
    --------
    >>> 0.0 <= nsp_balanced_accuracy("other") <= 1.0  # doctest: +BOOK
    True
    """
    if not isinstance(negatives, str) or negatives not in ("other", "same", "swapped"):
        raise ValueError(f"negatives must be 'other', 'same' or 'swapped', got {negatives!r}")
    return float(np.mean([_balanced(run, negatives) for run in _runs("nsp")]))


def longest_pair() -> int:
    """Slots of the longest pair of consecutive filing sentences, ``[CLS]`` and both ``[SEP]`` included.

    Examples
    --------
    >>> longest_pair() <= PairSetup().length
    True
    """
    return _longest_pair()


def plateau(variant: str, window: int = 100) -> tuple[float, float]:
    """Mean over seeds of a variant's masked-LM training loss in its first and last ``window`` steps (nats).

    Examples
    --------
    >>> first, last = plateau("packed")  # doctest: +BOOK
    >>> last < first
    True
    """
    window = _check_window(window)
    first = np.mean([model.mlm_losses[:window].mean() for model in _pretrained_seeds(variant)])
    return float(first), float(np.mean(final_losses(variant, window)))


def final_losses(variant: str, window: int = 100) -> tuple[float, ...]:
    """Each seed's masked-LM training loss over its last ``window`` steps (nats), the book's seed first.

    Examples
    --------
    >>> len(final_losses("nsp"))  # doctest: +BOOK
    5
    """
    window = _check_window(window)
    return tuple(float(model.mlm_losses[-window:].mean()) for model in _pretrained_seeds(variant))


def _check_window(window) -> int:
    window = check_positive_int(window, "window")
    if window > STEPS:
        raise ValueError(f"window must be at most the {STEPS} steps, got {window}")
    return window


def _pretrained_seeds(variant: str) -> tuple[PretrainedPair, ...]:
    """The pre-trained encoders of a variant at every seed, the book's first.

    Examples
    --------
    >>> [model.setup.seed for model in _pretrained_seeds("nsp")] == list(SEEDS)  # doctest: +BOOK
    True
    """
    _check_variant(variant)
    return tuple(pretrain(replace(VARIANTS[variant], seed=seed)) for seed in SEEDS)


def news_probe(variant: str = "nsp", pooling: str = "cls", seed: int = SEEDS[0]) -> float:
    """Refit the news probe of a pre-trained encoder: its test accuracy (the table's ``probe/news/...``).

    A ridge-logistic probe ([`probe.fit_and_score`][mlm_book.probe.fit_and_score]) is trained on the
    pooled last-layer vectors of the pool corpus's news sentences, read as ``[CLS] s [SEP]``, and
    tested on every news sentence of the held-out corpus.

    Parameters
    ----------
    variant : {"nsp", "packed", "all-mask"}
    pooling : {"cls", "mean"}
        The ``[CLS]`` vector or the mean of the token vectors.
    seed : int
        One of `SEEDS` (the encoders of other seeds are not trained).

    Examples
    --------
    >>> news_probe("nsp", "cls") == _runs("nsp")[0]["probe/news/cls"]  # doctest: +BOOK
    True
    """
    from mlm_book import probe
    from mlm_book.nn import finetune

    _check_variant(variant)
    if not isinstance(pooling, str) or pooling not in ("cls", "mean"):
        raise ValueError(f"pooling must be 'cls' or 'mean', got {pooling!r}")
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or int(seed) not in SEEDS:
        raise ValueError(f"seed must be one of {SEEDS}, got {seed!r}")
    model = pretrain(replace(VARIANTS[variant], seed=int(seed)))

    def news_features(text):
        rows = np.flatnonzero(text.news != 0)
        tokens, segments = single_inputs(text, rows, model.config)
        return finetune.pooled_features(model.params, model.config, tokens, segments, pooling), text.news[rows]

    pool, test = pool_sentences(MEASURE.pool_documents), labelled_sentences(TEST_SEED)
    return float(probe.fit_and_score(*news_features(pool), *news_features(test)).accuracy)


def news_fine_tune(variant: str = "nsp", size: int = 64, mode: str = "full", pooling: str = "cls",
                   seed: int = SEEDS[0]) -> float:
    """Rerun one fine-tuning of the news classifier: its test accuracy (the table's ``curve/{mode}/{pooling}/{size}``).

    The labelled set of ``size`` news sentences that ``seed`` draws from the pool corpus
    ([`labelled_subset`][mlm_book.artefacts.pair_encoder.labelled_subset]) fine-tunes the stored encoder
    of ``variant`` at ``seed`` under the chapter's schedule (`FINE_TUNE`); the classifier is scored
    on every news sentence of the held-out corpus. A few seconds; nothing is stored.

    Parameters
    ----------
    variant : {"nsp", "packed", "all-mask"}
    size : int
        Labelled sentences, at most the pool's news sentences.
    mode : {"full", "top"}
        Train everything, or only the head, the last block and the final LayerNorm.
    pooling : {"cls", "mean"}
    seed : int
        One of `SEEDS` (the encoders of other seeds are not trained).

    Examples
    --------
    >>> news_fine_tune("nsp", 64) == _runs("nsp")[0]["curve/full/cls/64"]  # doctest: +BOOK
    True
    """
    from mlm_book.nn import finetune

    _check_variant(variant)
    size = check_positive_int(size, "size")
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or int(seed) not in SEEDS:
        raise ValueError(f"seed must be one of {SEEDS}, got {seed!r}")
    settings = replace(MEASURE.fine_tune, mode=mode, pooling=pooling, seed=int(seed))  # checks mode and pooling
    model = pretrain(replace(VARIANTS[variant], seed=int(seed)))
    pool_tokens, pool_segments, pool_labels = news_task(pool_sentences(MEASURE.pool_documents), model.config)
    rows = labelled_subset(size, int(seed), pool_labels.size)
    test_tokens, test_segments, test_labels = news_task(labelled_sentences(TEST_SEED), model.config)
    classifier = finetune.fine_tune(model.params, model.config, pool_tokens[rows], pool_segments[rows],
                                    pool_labels[rows], settings, n_classes=2)
    predicted = finetune.classify(classifier, test_tokens, test_segments).argmax(axis=1)
    return float(np.mean(predicted == test_labels))


def figure_probes():
    """Probe accuracy for the filing's company and the sentence's news, on [CLS] and on the token mean, per pre-training.

    Returns
    -------
    DescribedFigure
        Two panels of bars (mean over seeds) with a dot per seed, one legend below both, and an
        alt text giving the range of the bars.

    Examples
    --------
    >>> import matplotlib.pyplot as plt  # doctest: +BOOK
    >>> drawn = figure_probes()
    >>> [ax.get_title() for ax in drawn.figure.axes]
    ["the filing's company (21 classes)", "the sentence's news (good or bad)"]
    >>> "all-[MASK] encoder at 0." in drawn.alt
    True
    >>> plt.close(drawn.figure)
    """
    from mlm_book.figures import PALETTE, WIDE, describe, subplots
    fig, axes = subplots(1, 2, width=WIDE, height=3.8)
    colors = {"nsp": PALETTE["blue"], "packed": PALETTE["orange"], "all-mask": PALETTE["green"]}
    test = labelled_sentences(TEST_SEED)
    chance = {"company": float(np.bincount(test.filer).max() / test.count),
              "news": float(max(np.mean(test.news[test.news != 0] > 0), np.mean(test.news[test.news != 0] < 0)))}
    titles = {"company": f"the filing's company ({test.filer.max() + 1} classes)",
              "news": "the sentence's news (good or bad)"}
    width = 0.25
    means = {}
    for ax, fact in zip(axes, ("company", "news")):
        for k, variant in enumerate(VARIANTS):
            for j, pooling in enumerate(("cls", "mean")):
                values = np.array([run[f"probe/{fact}/{pooling}"] for run in _runs(variant)])
                means[variant, fact, pooling] = float(values.mean())
                x = j + (k - 1) * width
                ax.bar(x, values.mean(), width=width * 0.9, color=colors[variant],
                       label=_VARIANT_NAMES[variant] if j == 0 else None)
                ax.plot(np.full(values.size, x), values, ls="none", marker=".", color=PALETTE["black"],
                        label="one seed" if j == k == 0 else None)
        ax.axhline(chance[fact], color=PALETTE["black"], ls="--", lw=1, label="largest class share")
        ax.set_xticks([0, 1], ["[CLS]", "mean of tokens"])
        ax.set_title(titles[fact])
        ax.set_ylim(0, 1)
    axes[0].set_ylabel(f"probe accuracy (bars: mean of {len(SEEDS)} seeds)")
    handles, labels = axes[1].get_legend_handles_labels()
    order = sorted(range(len(labels)), key=lambda i: labels[i] not in _VARIANT_NAMES.values())  # encoders first
    fig.legend([handles[i] for i in order], [labels[i] for i in order], loc="outside lower center",
               ncols=len(labels), frameon=False)  # below both panels, off the bars
    company = [value for (v, fact, p), value in means.items() if fact == "company"]
    news = [value for (v, fact, p), value in means.items() if fact == "news" and v != "all-mask"]
    alt = (f"Two panels of probe accuracy, bars for the three pre-trainings (mean of {len(SEEDS)} seeds) with a "
           f"dot per seed, on the CLS vector and on the mean of the token vectors, and a dashed line at the "
           f"largest class's share. Left, the filing's company: every bar between {min(company):.2f} and "
           f"{max(company):.2f}, against {chance['company']:.2f} for the largest class. Right, the sentence's "
           f"news: the MLM + NSP and packed encoders between {min(news):.2f} and {max(news):.2f}, the "
           f"all-[MASK] encoder at {means['all-mask', 'news', 'cls']:.2f} on CLS and "
           f"{means['all-mask', 'news', 'mean']:.2f} on the mean, against {chance['news']:.2f} for the "
           f"larger class.")
    caption = "What a linear probe reads from one sentence's last layer, by pre-training (held-out corpus)."
    return describe(fig, alt=alt, caption=caption)
