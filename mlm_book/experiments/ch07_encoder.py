r"""Chapter 7 — the contextual encoder on the filings: the filing encoder's tables, figures and claims.

Every number comes from [`mlm_book.artefacts.filing_encoder`][mlm_book.artefacts.filing_encoder]'s measurements of
five trained seeds ([`seeds`][mlm_book.experiments.ch07_encoder.seeds]); a table shows the book's seed and the mean ± sd
over the five, and a claim is judged on the book's seed with the count of seeds that satisfy
its rule beside the verdict.
"""

from __future__ import annotations

import functools
import math

import numpy as np

from mlm_book import probe
from mlm_book.artefacts import filing_encoder as fe
from mlm_book.channel import optimum
from mlm_book.figures import NARROW, PALETTE, SENSE_COLORS, WIDE, DescribedFigure, describe, subplots
from mlm_book.finance.windows import centre_position, centred_windows
from mlm_book.finance.world import DIRECTION_WORDS, ENTITY_PRODUCT, EVALUATIVE_VERBS
from mlm_book.ledger import Claim, over_seeds, reported_value
from mlm_book.readings import filing_baselines
from mlm_book.report import Markdown, seed_band, seed_words, table
from mlm_book.validation import check_format, check_instance, check_positive_int, check_real, check_sequence

__all__ = [
    "seeds", "book", "band", "band_text", "in_words", "static", "training_table", "ce_table", "typing_table",
    "kestrel_table", "kestrel_folds_table", "polarity_table", "polarity_words_table", "lexicon_table",
    "visible_table", "visible_by_frequency", "geometry_table", "layer0_baseline_parts", "read_word",
    "probe_kestrel", "probe_news", "figure_loss", "figure_typing", "figure_cue",
    "figure_polarity_words", "figure_visible", "PUBLISHED_SIZES", "parameter_count", "encoder_sizes", "size_table",
    "CLAIMS",
]

_LAYERS = ("0", "1", "2")


@functools.cache
def seeds() -> tuple[fe.FilingMeasurements, ...]:
    """Measurements of the five seeds, the book's first (trained in parallel when missing)."""
    return fe.all_seed_results()


def book() -> fe.FilingMeasurements:
    """Measurements of the book's seed.

    Examples
    --------
    >>> book().seed == fe.SETUP.seed, book() is seeds()[0]  # doctest: +BOOK
    (True, True)
    """
    return seeds()[0]


def static() -> filing_baselines.FilingBaselines:
    """Chapter 6's static baselines on the book's filings ([`filing_baselines.baselines`][mlm_book.readings.filing_baselines.baselines]):
    the majority shares and document-pooled orientation the encoder's probes are compared with.

    Examples
    --------
    >>> round(static().kestrel_cap.accuracy, 3), static() is static()     # memoised: built once per process
    (0.526, True)
    """
    return filing_baselines.baselines()


def band(getter, runs=None) -> tuple[float, float, float]:
    """``(book, mean, sd)`` of ``getter(measurements)`` over the five seeds.

    Parameters
    ----------
    getter : callable
        Maps one seed's result to a number.
    runs : sequence, optional
        Per-seed results, the book's first: by default the filing encoder's
        ([`seeds`][mlm_book.experiments.ch07_encoder.seeds]); chapter 6's skip-gram rows pass
        [`skipgram_seeds`][mlm_book.readings.filing_baselines.skipgram_seeds].

    Raises
    ------
    TypeError
        If ``getter`` is not callable or returns something other than a real number, or
        ``runs`` is not a sequence.
    ValueError
        If ``getter`` returns NaN or an infinity, or ``runs`` holds fewer than two results.

    Examples
    --------
    The chapter passes getters such as ``lambda r: r.typing["2"]`` over the five seeds; two
    runs given explicitly:

    >>> book, mean, sd = band(lambda run: run["typing"], [{"typing": 0.9}, {"typing": 0.8}])
    >>> book, round(mean, 2), round(sd, 4)
    (0.9, 0.85, 0.0707)
    """
    values = _seed_values(getter, runs)
    mean, sd = fe.spread(values)
    return values[0], mean, sd


def _seed_values(getter, runs) -> list[float]:
    if not callable(getter):
        raise TypeError(f"getter must be callable (measurements -> number), got {type(getter).__name__}")
    runs = seeds() if runs is None else check_sequence(runs, "runs")
    if len(runs) < 2:
        raise ValueError(f"runs must hold at least two per-seed results, got {len(runs)}")
    try:
        raw = [getter(r) for r in runs]
    except (AttributeError, KeyError, IndexError, TypeError) as error:  # runs of another kind than getter reads
        raise TypeError(f"getter must map each of runs to a number; it raised {error!r:.120}") from None
    return [check_real(value, "getter(measurements)") for value in raw]


def band_text(getter, fmt: str = ".3f", runs=None) -> str:
    """``"book (mean ± sd)"`` of a measurement over the five seeds, as text.

    Raises
    ------
    TypeError
        If ``getter`` is not callable (or returns no real number), or ``fmt`` is not a str.
    ValueError
        If ``fmt`` is not a float format spec with width and precision at most 100, or
        ``getter`` returns NaN or an infinity.

    Examples
    --------
    >>> import types
    >>> band_text(lambda run: run.x, runs=[types.SimpleNamespace(x=1.0), types.SimpleNamespace(x=3.0)])
    '1.000 (2.000 ± 1.414)'
    >>> band_text(lambda run: 0.5, ".2f", runs=[{}, {}, {}])   # one value at every seed
    '0.50 at every seed'
    """
    check_format(fmt, "fmt")
    return seed_band(_seed_values(getter, runs), fmt)


def in_words(getter, fmt: str = ".3f", runs=None) -> str:
    """A measurement over the five seeds as a sentence gives it ([`seed_words`][mlm_book.report.seed_words]).

    Raises
    ------
    TypeError
        If ``getter`` is not callable (or returns no real number), or ``fmt`` is not a str.
    ValueError
        If ``fmt`` is not a float format spec, or ``getter`` returns NaN or an infinity.

    Examples
    --------
    >>> import types
    >>> in_words(lambda run: run.x, runs=[types.SimpleNamespace(x=1.0), types.SimpleNamespace(x=3.0)])
    '1.000 (seeds 1.000 to 3.000)'
    """
    check_format(fmt, "fmt")
    return seed_words(_seed_values(getter, runs), fmt)


def _skipgram_runs() -> tuple:
    return filing_baselines.skipgram_seeds()


def _count(rule) -> int:
    return sum(bool(rule(r)) for r in seeds())


def _judged(getter, rule, margin=None):
    """A claim's value: the book seed's number(s), mean ± sd over the seeds, and how many seeds satisfy ``rule``;
    with ``margin``, each seed's signed distance from the rule's threshold (non-negative exactly where it holds)."""
    margins = None if margin is None else [margin(r) for r in seeds()]
    return over_seeds([getter(r) for r in seeds()], _count(rule), margins=margins)


# ----------------------------------------------------------------------------- tables
def training_table() -> Markdown:
    """How the encoders were trained: steps, passes, weight decay, kept share.

    Examples
    --------
    >>> [row.split(" | ")[1:3] for row in training_table().splitlines()[2:]]     # steps, passes  # doctest: +BOOK
    [['3000', '241'], ['6000', '482'], ['3000', '241'], ['499', '40']]
    """
    rows = []
    tokens = fe.split().train_tokens.size
    for label, setup in (("book (5 seeds)", fe.SETUP), ("twice as long", fe.LONGER),
                         ("kept share 0.2", fe.MORE_KEPT), ("BERT's 40 passes", fe.BERT_PASSES)):
        cfg = fe.training_config(setup)
        passes = cfg.steps * cfg.batch_size * setup.length / tokens
        rows.append((label, cfg.steps, f"{passes:.0f}", f"{cfg.weight_decay:.4f}", f"{setup.kept:.1f}"))
    return table(("encoder", "steps", "passes over the training filings", "weight decay λ", "kept share κ"), rows)


def ce_table() -> Markdown:
    """Masked-LM cross-entropy at the selected positions, training fit and held out, against the unigram.

    Examples
    --------
    >>> rows = ce_table().splitlines()  # doctest: +BOOK
    >>> [row.split(" | ")[0] for row in rows[2:]], rows[2].split(" | ")[3]      # the unigram's cross-entropy
    (['| training filings (fit)', '| held-out filings'], '5.261')
    """
    rows = []
    for split_name, label in (("train", "training filings (fit)"), ("test", "held-out filings")):
        rows.append((label, band_text(lambda r: r.ce[split_name]["all"]),
                     band_text(lambda r: r.ce[split_name]["mask"]),
                     f"{book().ce[split_name]['unigram']:.3f}",
                     band_text(lambda r: r.ce[split_name]["unigram"] - r.ce[split_name]["all"])))
    return table(("windows from", "all selected positions", "[MASK] positions", "unigram",
                  "gain over the unigram"), rows)


def typing_table() -> Markdown:
    """Company vs product, leave-one-alias-out: the cap, skip-gram and the encoder's layers.

    Examples
    --------
    >>> rows = typing_table().splitlines()  # doctest: +BOOK
    >>> len(rows), rows[2]
    (7, '| per-alias majority (static cap) | 0.850 |')
    """
    r = static()
    rows = [("per-alias majority (static cap)", f"{r.alias_cap.accuracy:.3f}"),
            ("skip-gram vectors", band_text(lambda run: run.typing, runs=_skipgram_runs()))]
    rows += [(f"encoder layer {layer}", band_text(lambda m, layer=layer: m.typing[layer])) for layer in _LAYERS]
    return table(("representation", "accuracy: book seed (mean ± sd of 5)"), rows)


def kestrel_table() -> Markdown:
    """*kestrel* alone: majority, five-fold accuracy by layer, and the position-leak reading of layer 0.

    Examples
    --------
    >>> rows = kestrel_table().splitlines()  # doctest: +BOOK
    >>> rows[2], rows[3].startswith("| layer 0, centred | 0.526")   # layer 0 centred: the majority share
    ('| majority share | 0.526 |', True)
    """
    r = static()
    rows = [("majority share", f"{r.kestrel_cap.accuracy:.3f}")]
    rows += [(f"layer {layer}, centred", band_text(lambda m, layer=layer: m.kestrel[layer])) for layer in _LAYERS]
    rows.append(("layer 0, nearest-centre reading", band_text(lambda m: m.leak["nearest"])))
    return table(("kestrel: five-fold probe", "accuracy: book seed (mean ± sd of 5)"), rows)


def kestrel_folds_table() -> Markdown:
    """Layer 0 on *kestrel*, fold by fold: each fold's training majority and its test accuracy.

    Examples
    --------
    >>> rows = kestrel_folds_table().splitlines()  # doctest: +BOOK
    >>> len(rows) - 2, rows[2].split(" | ")[:2]
    (5, ['| fold 1', 'PRODUCT'])
    """
    rows = [(f"fold {k + 1}", "PRODUCT" if majority else "ORG", f"{accuracy:.3f}")
            for k, (majority, accuracy) in enumerate(book().kestrel["folds0"])]
    return table(("stratified fold", "training majority", "test accuracy"), rows)


def polarity_table() -> Markdown:
    """News polarity, pooled per-word five-fold: cap, layers 0-2, control, direction words vs verbs.

    Examples
    --------
    >>> rows = polarity_table().splitlines()  # doctest: +BOOK
    >>> rows[2], rows[6].split(" | ")[0]
    ('| per-word majority (static cap) | 0.551 |', '| layer 1, shuffled labels')
    """
    r = static()
    rows = [("per-word majority (static cap)", f"{r.polarity_cap.accuracy:.3f}")]
    rows += [(f"layer {layer}", band_text(lambda m, layer=layer: m.polarity["pooled"][layer])) for layer in _LAYERS]
    rows.append(("layer 1, shuffled labels", band_text(lambda m: m.polarity["control1"])))
    rows.append(("layer 1, the six direction words", band_text(lambda m: _group(m, DIRECTION_WORDS))))
    rows.append(("layer 1, the seven evaluative verbs", band_text(lambda m: m.polarity["verbs_pooled"])))
    for size in book().polarity["subsampled"]:
        rows.append((f"layer 1, direction words subsampled to {size}",
                     band_text(lambda m, size=size: m.polarity["subsampled"][size])))
    return table(("news polarity", "accuracy: book seed (mean ± sd of 5)"), rows)


def _group(m: fe.FilingMeasurements, words) -> float:
    right = sum(v["accuracy"] * v["n"] for w, v in m.polarity["words"].items() if w in words)
    total = sum(v["n"] for w, v in m.polarity["words"].items() if w in words)
    return right / total


def polarity_words_table() -> Markdown:
    """Layer-1 accuracy of each of the 13 polarity words (book seed, and mean ± sd).

    Examples
    --------
    >>> rows = polarity_words_table().splitlines()  # doctest: +BOOK
    >>> len(rows) - 2, rows[2].split(" | ")[:3]
    (13, ['| advanced', 'direction', '122'])
    """
    words = book().polarity["words"]
    rows = [(word, "direction" if word in DIRECTION_WORDS else "evaluative verb", words[word]["n"],
             band_text(lambda m, word=word: m.polarity["words"][word]["accuracy"]))
            for word in sorted(words, key=lambda w: (w not in DIRECTION_WORDS, w))]
    return table(("word", "kind", "labelled occurrences", "layer-1 accuracy"), rows)


def lexicon_table() -> Markdown:
    """Leave-one-out lexicon polarity on mean vectors, against chance ± 2 SE and semantic orientation.

    Examples
    --------
    >>> rows = lexicon_table().splitlines()  # doctest: +BOOK
    >>> rows[2], rows[-1]
    ('| chance (± 2 SE) | 0.500 ± 0.169 |', '| document-pooled semantic orientation | 0.971 |')
    """
    r = static()
    se = math.sqrt(0.25 / 35)
    rows = [("chance (± 2 SE)", f"0.500 ± {2 * se:.3f}"), ("skip-gram vectors", band_text(lambda run: run.lexicon, runs=_skipgram_runs()))]
    rows += [(f"encoder layer {layer}, mean over occurrences", band_text(lambda m, layer=layer: m.lexicon[layer]))
             for layer in _LAYERS]
    rows.append(("document-pooled semantic orientation", f"{r.orientation.accuracy:.3f}"))
    return table(("35 lexicon words", "accuracy"), rows)


def visible_table() -> Markdown:
    """The visible-word check for the five seeds and the diagnostic runs.

    Examples
    --------
    >>> [row.split(" | ")[0] for row in visible_table().splitlines()[2:]]  # doctest: +BOOK
    ['| book seed (mean ± sd of 5)', '| twice as long', '| kept share 0.2', "| BERT's 40 passes"]
    """
    rows = [("book seed (mean ± sd of 5)", band_text(lambda m: m.visible["guess"]),
             band_text(lambda m: m.visible["plugin"]), band_text(lambda m: m.visible["visible"]),
             band_text(lambda m: m.visible["plugin"] - m.visible["visible"]))]
    for label, setup in (("twice as long", fe.LONGER), ("kept share 0.2", fe.MORE_KEPT),
                         ("BERT's 40 passes", fe.BERT_PASSES)):
        m = fe.seed_results(setup).visible
        rows.append((label, f"{m['guess']:.3f}", f"{m['plugin']:.3f}", f"{m['visible']:.3f}",
                     f"{m['plugin'] - m['visible']:.3f}"))
    return table(("encoder", "[MASK] guess", "Theorem 2 plug-in", "visible word", "shortfall"), rows)


def visible_by_frequency(m: fe.FilingMeasurements | None = None) -> list[tuple[str, int, float, float, float]]:
    """The visible-word check by corpus-frequency tercile of the word: (tercile, words, guess, plug-in, visible).

    Parameters
    ----------
    m : FilingMeasurements, optional
        One seed's measurements; default the book's seed.

    Raises
    ------
    TypeError
        If ``m`` is not a `FilingMeasurements` (or ``None``).

    Examples
    --------
    >>> [(tercile, words) for tercile, words, *_ in visible_by_frequency()]  # doctest: +BOOK
    [('rarest third', 171), ('middle third', 166), ('commonest third', 175)]
    """
    m = book() if m is None else check_instance(m, "m", fe.FilingMeasurements)
    v = m.visible
    counts = np.asarray(v["per_count"])
    edges = np.quantile(counts, [1 / 3, 2 / 3])
    which = np.searchsorted(edges, counts, side="right")
    out = []
    for k, label in enumerate(("rarest third", "middle third", "commonest third")):
        rows = which == k
        out.append((label, int(rows.sum()), float(np.mean(np.asarray(v["per_guess"])[rows])),
                    float(np.mean(np.asarray(v["per_plugin"])[rows])),
                    float(np.mean(np.asarray(v["per_visible"])[rows]))))
    return out


def geometry_table() -> Markdown:
    """Definition 3 for *kestrel* by layer, and the top layer's token cloud against the isotropic reference.

    Examples
    --------
    >>> rows = geometry_table().splitlines()  # doctest: +BOOK
    >>> len(rows), rows[2].split(" | ")[1]        # layer 0: every kestrel vector is the same point
    (5, '1.000 at every seed')
    """
    rows = []
    for layer in _LAYERS:
        g = lambda m, key, layer=layer: m.geometry["kestrel"][layer][key]  # noqa: E731
        rows.append((f"layer {layer}", band_text(lambda m: g(m, "self_similarity")),
                     band_text(lambda m: g(m, "baseline")), band_text(lambda m: g(m, "adjusted")),
                     band_text(lambda m: g(m, "mev"))))
    return table(("kestrel", "self-similarity", "baseline", "adjusted", "MEV"), rows)


def layer0_baseline_parts(setup: fe.FilingEncoderSetup = fe.SETUP) -> dict:
    """Why layer 0's baseline is high: the mean cosine of the token pool's $E[x]$ alone, and with $P_{16}$ added.

    Every centred token gets the same position row, a shared offset that pulls all layer-0
    vectors toward one direction. Returns ``{"tokens only", "with P16", "norm P16", "mean norm E"}``
    for the same 1000 tokens as the measured baseline.

    Raises
    ------
    TypeError
        If ``setup`` is not a `FilingEncoderSetup`.

    Examples
    --------
    >>> parts = layer0_baseline_parts()      # "with P16" is the measured layer-0 baseline (to float32 rounding)  # doctest: +BOOK
    >>> measured = book().geometry["kestrel"]["0"]["baseline"]
    >>> parts["with P16"] > parts["tokens only"], abs(parts["with P16"] - measured) < 1e-6
    (True, True)
    """
    from mlm_book import geometry

    check_instance(setup, "setup", fe.FilingEncoderSetup)

    result = fe.trained_encoder(setup)
    ids = fe.filing_world().ids
    pool = np.sort(np.random.default_rng(fe.SAMPLE_SEED + 1).choice(ids.size, size=fe.POOL_TOKENS, replace=False))
    E = np.asarray(result.params["E"], dtype=np.float64)[ids[pool]]
    P16 = np.asarray(result.params["P"], dtype=np.float64)[setup.length // 2]
    return {"tokens only": geometry.anisotropy_baseline(E), "with P16": geometry.anisotropy_baseline(E + P16),
            "norm P16": float(np.linalg.norm(P16)), "mean norm E": float(np.linalg.norm(E, axis=1).mean())}


def read_word(word: str = "rose", occurrence: int = 0, k: int = 5) -> Markdown:
    """What the book's encoder guesses at one occurrence of ``word``, read at the centre of its own window.

    The window is shown as the encoder reads it (``[UNK]`` for a word outside the vocabulary,
    ``[PAD]`` beyond the filing), then the encoder's ``k`` likeliest words at the centre twice: with
    the word shown as ``[MASK]`` and with the word visible. Under the table, the word's own
    probability both ways and Theorem 2's plug-in from the masked guess (what the optimum keeps
    on a visible word, [`optimum`][mlm_book.channel.optimum]): the visible-word check of the
    chapter, for one occurrence.

    Parameters
    ----------
    word : str
        A word of the filings' vocabulary.
    occurrence : int
        Which occurrence of ``word``, counted from 0 in corpus order.
    k : int
        Guesses shown.

    Returns
    -------
    Markdown
        The window, a table of the guesses, and a line with the three probabilities of ``word``.

    Raises
    ------
    TypeError
        If ``word`` is not a string, or ``occurrence`` or ``k`` not an integer.
    ValueError
        If ``word`` is not in the vocabulary, or ``occurrence`` or ``k`` is out of range.

    Examples
    --------
    >>> text = read_word("rose", occurrence=0, k=3)  # doctest: +BOOK
    >>> text.splitlines()[2]
    '| rank | with [MASK] at the centre | with rose visible |'
    >>> text.splitlines()[-1].startswith("p(rose): ")
    True
    """
    if not isinstance(word, str):
        raise TypeError(f"word must be a word of the filings (str), got {type(word).__name__}")
    occurrence = check_positive_int(occurrence, "occurrence", minimum=0)
    k = check_positive_int(k, "k")
    world = fe.filing_world()
    words = world.vocabulary.words
    if word not in words[2:]:
        raise ValueError(f"word must be one of the {len(words) - 2} words of the filings' vocabulary, got {word!r}")
    found = np.flatnonzero(world.corpus.tokens == word)
    if occurrence >= found.size:
        raise ValueError(f"occurrence must be below {found.size}, the occurrences of {word!r}, got {occurrence}")
    if k > len(words):
        raise ValueError(f"k must be at most the vocabulary's {len(words)} words, got {k}")
    index = int(found[occurrence])
    result = fe.trained_encoder()
    masked, visible = (fe.centre_proba(result, [index], mask_centre=hide)[0] for hide in (True, False))
    own = int(world.ids[index])
    plugin = float(optimum(masked, own, fe.SETUP.channel(result.encoder.vocab_size))[own])
    _, valid = centred_windows(world.ids, world.corpus.document, length=result.encoder.length,
                               pad_id=world.vocabulary.pad_id, select=[index])
    centre = centre_position(result.encoder.length)
    read = [words[world.ids[index + i - centre]] if ok else "[PAD]" for i, ok in enumerate(valid[0])]
    shown = [f"**{w}**" if i == centre else (f"`{w}`" if w.startswith("[") else w) for i, w in enumerate(read)]
    held = "held-out" if world.corpus.document[index] in fe.split().test_documents else "training"
    top = [np.argsort(-dist, kind="stable")[:k] for dist in (masked, visible)]
    rows = [(rank + 1, *(f"{words[top[j][rank]]} ({dist[top[j][rank]]:.3f})" for j, dist in enumerate((masked, visible))))
            for rank in range(k)]
    return Markdown(
        f"Occurrence {occurrence} of {found.size}, in a {held} filing: {' '.join(shown)}\n\n"
        + table(("rank", "with [MASK] at the centre", f"with {word} visible"), rows)
        + f"\n\np({word}): {masked[own]:.3f} with [MASK], {visible[own]:.3f} visible; Theorem 2's plug-in from the "
          f"masked guess: {plugin:.3f}")


def probe_kestrel(layer: int = 1, *, mask_at: int | None = None, folds: str = "stratified") -> float:
    """Five-fold accuracy of the probe typing *kestrel* (company or product) from one layer of the book's encoder.

    Each typed mention of *kestrel* is read at the centre of its own window, as every number of the
    chapter is; the probe is [`cross_validate`][mlm_book.probe.cross_validate]'s ridge-logistic probe.
    ``mask_at`` shows `[MASK]` at one window position instead of its token (the centre is 16), and
    ``folds="contiguous"`` cuts the mentions into five folds in corpus order instead of the
    stratified folds of the chapter's tables.

    Parameters
    ----------
    layer : int
        0 ($E[x] + P_{16}$, one point per word), 1 or 2 (after each block).
    mask_at : int, optional
        A window position in ``[0, 32)`` to hide.
    folds : {"stratified", "contiguous"}
        How the five folds are drawn.

    Returns
    -------
    float
        Pooled accuracy over the five held-out folds.

    Raises
    ------
    TypeError
        If ``layer`` or ``mask_at`` is not an integer, or ``folds`` not a string.
    ValueError
        If ``layer`` is not 0, 1 or 2, ``mask_at`` not a window position, or ``folds`` not one of the two.

    Examples
    --------
    >>> round(probe_kestrel(0), 3) == round(book().kestrel["0"], 3)  # doctest: +BOOK
    True
    """
    layer = check_positive_int(layer, "layer", minimum=0)
    if layer > fe.SETUP.n_blocks:
        raise ValueError(f"layer must be 0 to {fe.SETUP.n_blocks}, got {layer}")
    if mask_at is not None:
        mask_at = check_positive_int(mask_at, "mask_at", minimum=0)
        if mask_at >= fe.SETUP.length:
            raise ValueError(f"mask_at must be a window position in [0, {fe.SETUP.length}), got {mask_at}")
    if not isinstance(folds, str):
        raise TypeError(f"folds must be 'stratified' or 'contiguous' (str), got {type(folds).__name__}")
    if folds not in ("stratified", "contiguous"):
        raise ValueError(f"folds must be 'stratified' or 'contiguous', got {folds!r}")
    corpus = fe.filing_world().corpus
    index = np.flatnonzero((corpus.tokens == "kestrel") & (corpus.entity > 0))
    labels = (corpus.entity[index] == ENTITY_PRODUCT).astype(np.int64)
    states = fe.centre_states(fe.trained_encoder(), index, mask_at=mask_at)[:, layer]
    if folds == "stratified":
        splits = fe.kfold(labels)
    else:
        tests = np.array_split(np.arange(index.size), 5)
        splits = tuple((np.setdiff1d(np.arange(index.size), test), test) for test in tests)
    return probe.cross_validate(states, labels, splits).accuracy


def probe_news(word: str = "rose", layer: int = 1) -> float:
    """Five-fold accuracy of the probe reading the news one word reports (good or bad) from one layer.

    The labelled occurrences of ``word`` (a direction word or an evaluative verb), each read at the
    centre of its own window by the book's encoder, with the chapter's stratified folds.

    Parameters
    ----------
    word : str
        One of the direction words or evaluative verbs.
    layer : int
        0, 1 or 2.

    Returns
    -------
    float
        Pooled accuracy over the five held-out folds.

    Raises
    ------
    TypeError
        If ``word`` is not a string or ``layer`` not an integer.
    ValueError
        If ``word`` reports no news in the filings, or ``layer`` is not 0, 1 or 2.

    Examples
    --------
    >>> round(probe_news("rose", 1), 3) == round(book().polarity["words"]["rose"]["accuracy"], 3)  # doctest: +BOOK
    True
    """
    if not isinstance(word, str):
        raise TypeError(f"word must be a direction word or evaluative verb (str), got {type(word).__name__}")
    if word not in DIRECTION_WORDS and word not in EVALUATIVE_VERBS:
        raise ValueError(f"word must be one of the direction words {tuple(DIRECTION_WORDS)} or evaluative verbs "
                         f"{tuple(EVALUATIVE_VERBS)}, got {word!r}")
    layer = check_positive_int(layer, "layer", minimum=0)
    if layer > fe.SETUP.n_blocks:
        raise ValueError(f"layer must be 0 to {fe.SETUP.n_blocks}, got {layer}")
    corpus = fe.filing_world().corpus
    index = np.flatnonzero((corpus.tokens == word) & (corpus.news != 0))
    labels = (corpus.news[index] > 0).astype(np.int64)
    states = fe.centre_states(fe.trained_encoder(), index)[:, layer]
    return probe.cross_validate(states, labels, fe.kfold(labels)).accuracy


# ----------------------------------------------------------------------------- figures
def _layer_band(getter):
    values = np.array([[getter(m, layer) for layer in _LAYERS] for m in seeds()])
    return values[0], values.mean(axis=0), values.std(axis=0, ddof=1), values


def figure_loss() -> DescribedFigure:
    """Training loss (nats per selected position, 50-step means) of the five seeds and of the 40-pass contrast.

    Returns
    -------
    DescribedFigure
        The curves, with alt text that gives where they start and end.

    Examples
    --------
    >>> import matplotlib.pyplot as plt  # doctest: +BOOK
    >>> drawn = figure_loss()
    >>> len(drawn.figure.axes[0].lines), drawn.figure.axes[0].get_xlabel()  # five seeds, the 40-pass run, the unigram
    (7, 'step')
    >>> drawn.alt.split(". ")[1]
    'The 40-pass encoder stops at step 499 near 4.0 nats, still falling by 0.2 nats over its last 100 steps'
    >>> plt.close(drawn.figure)
    """
    fig, ax = subplots(width=WIDE, height=3.2)
    window = 50

    def smooth(losses):
        n = losses.size // window * window
        return np.arange(n // window) * window + window / 2, losses[:n].reshape(-1, window).mean(axis=1)

    runs = [fe.trained_encoder(fe.seed_setup(seed)).losses for seed in fe.SEEDS]
    for k, losses in enumerate(runs):
        x, y = smooth(losses)
        ax.plot(x, y, color=PALETTE["blue"] if k == 0 else PALETTE["sky"], lw=2 if k == 0 else 1,
                label="book seed" if k == 0 else ("four more seeds" if k == 1 else None))
    bert = fe.trained_encoder(fe.BERT_PASSES).losses
    bert_steps = fe.training_config(fe.BERT_PASSES).steps
    x, y = smooth(bert)
    ax.plot(x, y, color=PALETTE["vermillion"], lw=1.5, label=f"BERT's 40 passes ({bert_steps} steps)")
    unigram = book().ce["train"]["unigram"]
    ax.axhline(unigram, color=PALETTE["black"], ls="--", lw=1, label="unigram")
    ax.set_xlabel("step")
    ax.set_ylabel("loss (nats per selected position)")
    ax.set_ylim(0, unigram + 1.5)
    ax.legend(loc="center right")  # the late steps' empty middle: every curve is near 1 nat there
    ends = [losses[-100:].mean() for losses in runs]
    drop = bert[-200:-100].mean() - bert[-100:].mean()
    alt = (f"Training loss against step for the {len(runs)} seeds of the book's encoder, falling from about "
           f"{runs[0][:50].mean():.1f} nats to between {min(ends):.2f} and {max(ends):.2f} after "
           f"{runs[0].size} steps, the curves almost on top of each other. The 40-pass encoder stops at step "
           f"{bert_steps} near {bert[-50:].mean():.1f} nats, "
           + (f"still falling by {drop:.1f} nats over its last 100 steps" if drop > 0.05 else "levelling off")
           + f". A dashed line marks the unigram's {unigram:.2f} nats.")
    return describe(fig, alt=alt, caption="Training loss of the filing encoders, 50-step means of fresh batches "
                                          "(each batch is new corruptions of new windows, so the curve estimates "
                                          "the population risk of the training filings).")


def figure_typing() -> DescribedFigure:
    """Company vs product by layer, with seed bands: across aliases (left) and *kestrel* alone (right).

    Returns
    -------
    DescribedFigure
        The two panels, with alt text that gives each layer's accuracy and the static caps.

    Examples
    --------
    >>> import matplotlib.pyplot as plt  # doctest: +BOOK
    >>> drawn = figure_typing()
    >>> [ax.get_title() for ax in drawn.figure.axes]
    ['21 aliases, leave one alias out', 'kestrel alone, five folds']
    >>> drawn.alt.split(". ")[1]
    'Left, typing across the 21 aliases with one alias held out: layer 0 at 0.85, level with the per-alias majority line at 0.85, then layer 1 at 1.00 and layer 2 at 0.96; skip-gram at 0.85 at all 5 seeds'
    >>> plt.close(drawn.figure)
    """
    r = static()
    fig, axes = subplots(1, 2, width=WIDE, height=3.4, sharey=True)
    x = np.arange(3)
    panels = ((axes[0], lambda m, layer: m.typing[layer], r.alias_cap.accuracy, "per-alias majority",
               "21 aliases, leave one alias out", [run.typing for run in _skipgram_runs()]),
              (axes[1], lambda m, layer: m.kestrel[layer], r.kestrel_cap.accuracy, "majority share",
               "kestrel alone, five folds", None))
    widest = 0.0
    for ax, getter, cap, cap_label, title, skipgram in panels:
        first, mean, sd, values = _layer_band(getter)
        widest = max(widest, float(sd.max()))
        for k, row in enumerate(values[1:]):
            ax.plot(x, row, color=PALETTE["sky"], lw=1, alpha=0.8, label=None if k else f"{len(values) - 1} more seeds")
        ax.fill_between(x, mean - sd, mean + sd, color=PALETTE["sky"], alpha=0.3, lw=0, label="± sd")
        ax.plot(x, mean, color=PALETTE["black"], marker="_", ms=12, ls="none", label=f"mean of {len(values)} seeds")
        ax.plot(x, first, color=PALETTE["blue"], marker="o", lw=2, label="book seed")
        ax.axhline(cap, color=PALETTE["black"], ls="--", lw=1, label=cap_label)
        if skipgram is not None:
            ax.plot([-0.25] * len(skipgram), skipgram, marker="s", color=PALETTE["orange"], ls="none", alpha=0.6,
                    label=f"skip-gram, {len(skipgram)} seeds")
        ax.set_xticks(x, ["layer 0", "layer 1", "layer 2"])
        ax.set_title(title)
        ax.set_ylim(0.3, 1.02)
    # in regions free of data: below the curves on the left, between the curves and kestrel's majority on the right
    axes[0].legend(loc="lower right")
    axes[1].legend(loc="upper right", bbox_to_anchor=(1.0, 0.88))
    axes[0].set_ylabel("accuracy (company vs product)")
    m, sg = book(), sorted({round(run.typing, 2) for run in _skipgram_runs()})
    sg_text = (f"{sg[0]:.2f} at all {len(_skipgram_runs())} seeds" if len(sg) == 1
               else f"{sg[0]:.2f} to {sg[-1]:.2f} over {len(_skipgram_runs())} seeds")
    alt = (f"Two panels of accuracy against layer. Left, typing across the {len(r.alias_cap.groups)} aliases with one "
           f"alias held out: layer 0 at {m.typing['0']:.2f}, level with the per-alias majority line at "
           f"{r.alias_cap.accuracy:.2f}, then layer 1 at {m.typing['1']:.2f} and layer 2 at {m.typing['2']:.2f}; "
           f"skip-gram at {sg_text}. Right, kestrel alone with five folds: layer 0 at {m.kestrel['0']:.2f}, on the "
           f"majority line at {r.kestrel_cap.accuracy:.2f}, layers 1 and 2 at {m.kestrel['1']:.2f} and "
           f"{m.kestrel['2']:.2f}. The five seeds' standard deviation is at most {widest:.2f} at any layer.")
    return describe(fig, alt=alt, caption="Company or product, by layer of the filing encoder. Lines: the book's "
                                          "seed and the other four; short bars: the five seeds' mean; band: ± sd. "
                                          "Dashed: the static cap.")


def figure_cue() -> DescribedFigure:
    """Layer-2 *kestrel* accuracy when one window position is masked, position by position (seed band).

    Returns
    -------
    DescribedFigure
        The curve and band, with alt text that gives the accuracy next to *kestrel*.

    Examples
    --------
    >>> import matplotlib.pyplot as plt  # doctest: +BOOK
    >>> drawn = figure_cue()
    >>> len(drawn.figure.axes[0].lines[1].get_xdata())     # the book seed's curve: one point per window position
    32
    >>> drawn.alt.split(": ")[1].split(". ")[0]
    '0.99 with position 15 masked and 0.47 with position 17 masked'
    >>> plt.close(drawn.figure)
    """
    values = np.array([[np.nan if v is None else v for v in m.cue] for m in seeds()], dtype=float)
    positions = np.arange(values.shape[1])
    fig, ax = subplots(width=WIDE, height=3.0)
    read = ~np.isnan(values).all(axis=0)                  # every position but kestrel's own
    mean, sd = np.full(values.shape[1], np.nan), np.full(values.shape[1], np.nan)
    mean[read], sd[read] = values[:, read].mean(axis=0), values[:, read].std(axis=0, ddof=1)
    ax.fill_between(positions, mean - sd, mean + sd, color=PALETTE["sky"], alpha=0.35, lw=0,
                    label=f"± sd, {len(values)} seeds")
    ax.plot(positions, mean, color=PALETTE["black"], marker="_", ms=6, ls="none", label=f"mean of {len(values)} seeds")
    ax.plot(positions, values[0], color=PALETTE["blue"], marker="o", ms=3, lw=1.5, label="book seed")
    ax.axhline(np.nanmean([m.kestrel["2"] for m in seeds()]), color=PALETTE["black"], ls="--", lw=1,
               label="nothing masked (mean)")
    centre = values.shape[1] // 2
    ax.axvline(centre, color=PALETTE["grey"] if "grey" in PALETTE else PALETTE["black"], lw=0.8, ls=":")
    ax.text(centre + 0.3, 0.02, "kestrel", transform=ax.get_xaxis_transform(), fontsize=9)
    ax.set_xlabel("window position shown as [MASK] (0-based; kestrel sits at 16)")
    ax.set_ylabel("layer-2 accuracy")
    ax.legend(loc="lower left")
    m = book()
    wide = [int(i) for i in positions[read] if sd[i] > 0.05]
    alt = (f"Layer-2 accuracy on kestrel with one window position masked, for positions 0 to {positions[-1]} except "
           f"{centre} where kestrel sits. The book seed's accuracy stays near {m.kestrel['2']:.2f} everywhere except "
           f"next to kestrel: {m.cue[centre - 1]:.2f} with position {centre - 1} masked and {m.cue[centre + 1]:.2f} "
           f"with position {centre + 1} masked. The five seeds' band is wide only at position"
           + (f"s {' and '.join(map(str, wide))}." if len(wide) > 1 else f" {wide[0]}." if wide else "s: none."))
    return describe(fig, alt=alt, caption="What the probe reads: layer-2 accuracy on kestrel with one window "
                                          "position shown as [MASK] at a time (probes trained on clean windows).")


def figure_polarity_words() -> DescribedFigure:
    """Layer-1 polarity accuracy of each word (mean ± sd over seeds), direction words against verbs.

    Returns
    -------
    DescribedFigure
        The bars, with alt text that gives the range of each group on the book's seed.

    Examples
    --------
    >>> import matplotlib.pyplot as plt  # doctest: +BOOK
    >>> drawn = figure_polarity_words()
    >>> len(drawn.figure.axes[0].patches)                   # one bar per polarity word
    13
    >>> drawn.alt.split("; ")[1]
    'the 7 evaluative verbs between 0.24 and 0.62, around the 0.5 line.'
    >>> plt.close(drawn.figure)
    """
    words = sorted(book().polarity["words"], key=lambda w: (w not in DIRECTION_WORDS, w))
    values = np.array([[m.polarity["words"][w]["accuracy"] for w in words] for m in seeds()])
    fig, ax = subplots(width=WIDE, height=3.4)
    x = np.arange(len(words))
    colours = [PALETTE["green"] if w in DIRECTION_WORDS else PALETTE["vermillion"] for w in words]
    ax.bar(x, values.mean(axis=0), yerr=values.std(axis=0, ddof=1), color=colours, capsize=3, alpha=0.85)
    book_dots, = ax.plot(x, values[0], ls="none", marker="o", color=PALETTE["black"], ms=4, label="book seed")
    coin = ax.axhline(0.5, color=PALETTE["black"], lw=0.8, ls=":", label="0.5: a coin")
    ax.set_xticks(x, [f"{w}\n({book().polarity['words'][w]['n']})" for w in words], rotation=60)
    ax.set_ylabel("layer-1 accuracy")
    ax.set_ylim(0, 1.05)
    from matplotlib.patches import Patch
    handles = [Patch(color=PALETTE["green"], label=f"direction words, mean ± sd of {len(values)} seeds"),
               Patch(color=PALETTE["vermillion"], label=f"evaluative verbs, mean ± sd of {len(values)} seeds"),
               book_dots, coin]
    # above the axes: every bar reaches from 0, so no region inside them is free of data
    ax.legend(handles=handles, loc="lower center", bbox_to_anchor=(0.5, 1.0), ncol=2, frameon=False)
    book_seed = dict(zip(words, values[0]))
    direction = [book_seed[w] for w in words if w in DIRECTION_WORDS]
    verbs = [book_seed[w] for w in words if w in EVALUATIVE_VERBS]
    alt = (f"Bar chart of layer-1 polarity accuracy for each of the {len(words)} probe words, the mean over "
           f"{len(values)} seeds with standard-deviation error bars and a dot for the book's seed. On the book's "
           f"seed the {len(direction)} direction words reach between {min(direction):.2f} and {max(direction):.2f}; "
           f"the {len(verbs)} evaluative verbs between {min(verbs):.2f} and {max(verbs):.2f}, around the 0.5 line.")
    return describe(fig, alt=alt, caption="News polarity at layer 1, word by word (labelled occurrences in "
                                          "brackets). Bars: mean ± sd over the five seeds; dots: the book's seed.")


def figure_visible() -> DescribedFigure:
    """Per held-out word: the encoder's visible-word probability against Theorem 2's plug-in (book seed).

    Returns
    -------
    DescribedFigure
        The scatter, with alt text that gives the means and how many words fall below the diagonal.

    Examples
    --------
    >>> import matplotlib.pyplot as plt  # doctest: +BOOK
    >>> drawn = figure_visible()
    >>> len(drawn.figure.axes), len(drawn.figure.axes[0].collections[0].get_offsets())  # scatter, colour bar; 512 words
    (2, 512)
    >>> drawn.alt.split(". ")[-1]
    'Mean plug-in 0.97, mean encoder 0.81.'
    >>> plt.close(drawn.figure)
    """
    v = book().visible
    fig, ax = subplots(width=NARROW, height=4.2)
    counts = np.asarray(v["per_count"])
    points = ax.scatter(v["per_plugin"], v["per_visible"], c=np.log10(counts), cmap="viridis", s=10, alpha=0.8)
    ax.plot([0, 1], [0, 1], color=PALETTE["black"], lw=0.8, ls="--", label="encoder = plug-in")
    ax.set_xlabel("Theorem 2's plug-in from the [MASK] guess")
    ax.set_ylabel("encoder's probability of the visible word")
    ax.set_xlim(0, 1.02)
    ax.set_ylim(0, 1.02)
    bar = fig.colorbar(points, ax=ax)
    bar.set_label("log10 corpus count of the word")
    ax.legend(loc="upper left")
    plugin, visible = np.asarray(v["per_plugin"]), np.asarray(v["per_visible"])
    alt = (f"Scatter of {plugin.size} held-out words: the encoder's probability of the visible word against the "
           f"plug-in from its masked guess. {np.mean(plugin > 0.9):.0%} of the plug-ins are above 0.9; the encoder's "
           f"probabilities spread from {visible.min():.2f} to {visible.max():.2f}, {np.mean(visible < 0.5):.0%} of "
           f"them below 0.5, and "
           + ("every word sits" if np.all(visible < plugin) else f"{np.sum(visible < plugin)} of them sit")
           + f" below the diagonal. Mean plug-in {v['plugin']:.2f}, mean encoder {v['visible']:.2f}.")
    return describe(fig, alt=alt, caption="The visible-word check, word by word (book seed). On the diagonal the "
                                          "encoder would keep exactly what Theorem 2 says the optimum keeps, given "
                                          "its own masked guess; colour is the word's corpus frequency.")


# ----------------------------------------------------------------------------- sizes
PUBLISHED_SIZES = (
    ("BERT-base", "encoder (masked LM)", 110e6, "devlin-2019", "Devlin et al. 2019"),
    ("BERT-large", "encoder (masked LM)", 340e6, "devlin-2019", "Devlin et al. 2019"),
    ("RoBERTa-large", "encoder (masked LM)", 355e6, "liu-2019", "Liu et al. 2019"),
    ("GPT-2 (largest)", "decoder (causal LM)", 1.5e9, "radford-2019", "Radford et al. 2019"),
    ("Llama 2 (largest)", "decoder (causal LM)", 70e9, "touvron-2023", "Touvron et al. 2023"),
    ("GPT-3", "decoder (causal LM)", 175e9, "brown-2020", "Brown et al. 2020"),
)
"""Published parameter counts, as their papers state them.

``(model, family, parameters, reference anchor, citation)``."""


def parameter_count(params) -> int:
    """Number of scalar parameters in a parameter dict.

    Parameters
    ----------
    params : mapping of str to array_like
        Parameter name to array, as [`mlm_book.nn.encoder.init_params`][mlm_book.nn.encoder.init_params]
        returns and training stores.

    Returns
    -------
    int
        The sum of the arrays' sizes.

    Raises
    ------
    TypeError
        If ``params`` is not a mapping, a key is not a str or a value is not a numeric array.
    ValueError
        If ``params`` is empty.

    Examples
    --------
    >>> from mlm_book.nn.encoder import EncoderConfig, init_params
    >>> cfg = EncoderConfig(vocab_size=25, length=24, d_model=32, n_blocks=2, n_heads=2)
    >>> parameter_count(init_params(cfg, np.random.default_rng(0)))
    27097
    """
    from collections.abc import Mapping

    if not isinstance(params, Mapping):
        raise TypeError(f"params must be a mapping of names to arrays, got {type(params).__name__}")
    if not params:
        raise ValueError("params must hold at least one array, got an empty mapping")
    total = 0
    for name, value in params.items():
        if not isinstance(name, str):
            raise TypeError(f"params must have str keys, got {type(name).__name__}")
        array = np.asarray(value) if not isinstance(value, np.ndarray) else value
        if array.dtype == object or not (np.issubdtype(array.dtype, np.number) and not np.iscomplexobj(array)):
            raise TypeError(f"params[{name[:40]!r}] must be a real numeric array, got dtype {array.dtype}")
        total += int(array.size)
    return total


def encoder_sizes() -> tuple[tuple[str, str, int, str | None], ...]:
    """The book's two masked-LM encoders, counted from their trained parameters, and `PUBLISHED_SIZES`.

    Returns
    -------
    tuple of (str, str, int, str or None)
        ``(model, family, parameters, reference anchor)``, the book's encoders first (anchor
        ``None``), then the published models by size.

    Examples
    --------
    >>> sizes = encoder_sizes()  # doctest: +BOOK
    >>> [(name, count) for name, _, count, _ in sizes[:2]]  # doctest: +BOOK
    [('HMM encoder (chapter 2)', 27097), ('filing encoder (chapter 7)', 158627)]
    """
    from mlm_book.artefacts import hmm_encoder

    rows = [("HMM encoder (chapter 2)", "encoder (masked LM)",
             parameter_count(hmm_encoder.trained_encoder().params), None),
            ("filing encoder (chapter 7)", "encoder (masked LM)", parameter_count(fe.trained_encoder().params), None)]
    rows += [(name, family, int(count), anchor) for name, family, count, anchor, _ in PUBLISHED_SIZES]
    return tuple(rows)


def size_table() -> Markdown:
    """Parameters of the book's encoders beside published encoders and causal LLMs, and their ratio to the filing one.

    Examples
    --------
    >>> size_table().splitlines()[0]  # doctest: +BOOK
    '| model | family | parameters | × the filing encoder | source |'
    """
    sizes = encoder_sizes()
    filing = sizes[1][2]
    cite = {anchor: text for _, _, _, anchor, text in PUBLISHED_SIZES}
    rows = [(name, family, f"{count:,}" if count < 10**6 else _short(count),
             f"{count / filing:,.0f}" if count >= 10 * filing else f"{count / filing:.3g}",
             f"[{cite[anchor]}](../references.html#{anchor})" if anchor else "counted from its trained parameters")
            for name, family, count, anchor in sizes]
    return table(["model", "family", "parameters", "× the filing encoder", "source"], rows)


def _short(count: int) -> str:
    return f"{count / 1e9:g} billion" if count >= 10**9 else f"{count / 1e6:g} million"


def _size_check() -> dict:
    from mlm_book.artefacts import hmm_encoder
    from mlm_book.nn import encoder as enc

    sizes = {name: count for name, _, count, _ in encoder_sizes()}
    configured = {"HMM encoder (chapter 2)": hmm_encoder.trained_encoder().encoder,
                  "filing encoder (chapter 7)": fe.trained_encoder().encoder}
    from_config = {name: sum(int(np.prod(shape)) for shape in enc.param_shapes(cfg).values())
                   for name, cfg in configured.items()}
    encoders = [count for name, family, count, anchor in encoder_sizes() if anchor and family.startswith("encoder")]
    largest = [count for name, count in sizes.items() if name in ("GPT-3", "Llama 2 (largest)")]
    return {"hmm": sizes["HMM encoder (chapter 2)"], "filing": sizes["filing encoder (chapter 7)"],
            "config_mismatch": sum(abs(sizes[name] - from_config[name]) for name in configured),
            "smallest_llm_over_largest_encoder": min(largest) / max(encoders),
            "bert_base_over_filing": sizes["BERT-base"] / sizes["filing encoder (chapter 7)"]}


# ----------------------------------------------------------------------------- claims
def _c(getter, rule, margin=None):
    return lambda: _judged(getter, rule, margin)


def _ok(rule):
    return lambda value: bool(rule(book()))


_CAP = lambda: static().alias_cap.accuracy  # noqa: E731
_POLCAP = lambda: static().polarity_cap.accuracy  # noqa: E731


def _reported(id_, quantity, seed, getter, fmt=".3f", section=None):
    """A number measured at the five seeds and reported beside the published one, with no rule (any would hold)."""
    return reported_value(id_, quantity + " (5 training seeds)", seed, _c(getter, lambda m: True), fmt=fmt,
                          section=section)


def _claim(id_, quantity, seed, rule_text, getter, rule, margin, expected="reproduced", fmt=".3f", section=None):
    """A learned claim measured at the five seeds; it passes when its verdict is ``expected`` (what chapter 7 states).
    ``margin`` is a seed's signed distance from ``rule``'s threshold, non-negative exactly where the rule holds;
    ``section`` is where the chapter shows it."""
    return Claim(id_, quantity + " (5 training seeds)", seed=seed, rule=rule_text, compute=_c(getter, rule, margin),
                 accept=_ok(rule), fmt=fmt, expected=expected, section=section)


CLAIMS = (
    Claim("D-08", "Encoder size: the book's two encoders counted from their trained parameters, beside the published "
          "sizes of BERT-base/large, RoBERTa-large (encoders) and GPT-3, Llama 2 70B (causal LLMs)", seed="—",
          rule="CITED sizes; each count equals the count from the encoder's configuration; the two largest causal "
          "LLMs have ≥ 100 times the parameters of the largest encoder cited; BERT-base ≥ 100 times the filing "
          "encoder", compute=_size_check,
          accept=lambda v: v["config_mismatch"] == 0 and v["smallest_llm_over_largest_encoder"] >= 100
          and v["bert_base_over_filing"] >= 100, fmt=".4g", section="training-the-encoder"),
    Claim("S8-01", "Filing encoder's shape: d, heads, blocks, window length", seed="64, 4, 2, 32",
          rule="the same", compute=lambda: (fe.SETUP.d_model, fe.SETUP.n_heads, fe.SETUP.n_blocks, fe.SETUP.length),
          accept=lambda v: v == (64, 4, 2, 32), section="training-the-encoder"),
    _claim("S8-04", "Cross-entropy at the selected positions of fresh corruptions of training windows: all / "
           "[MASK] only (training fit)", "1.843 / 1.851", "≤ unigram − 2.5 nats; mask-only within 0.1 of all",
           lambda m: (m.ce["train"]["all"], m.ce["train"]["mask"]),
           lambda m: m.ce["train"]["all"] <= m.ce["train"]["unigram"] - 2.5
           and abs(m.ce["train"]["mask"] - m.ce["train"]["all"]) <= 0.1,
           lambda m: min(m.ce["train"]["unigram"] - 2.5 - m.ce["train"]["all"],
                         0.1 - abs(m.ce["train"]["mask"] - m.ce["train"]["all"])), section="training-the-encoder"),
    _claim("S8-06", "Held-out filings: cross-entropy at all / [MASK] positions (the reference reports only a fit)",
           "—", "held-out all ≤ unigram − 1 nat (a real gain on unseen filings)",
           lambda m: (m.ce["test"]["all"], m.ce["test"]["mask"]),
           lambda m: m.ce["test"]["all"] <= m.ce["test"]["unigram"] - 1.0,
           lambda m: m.ce["test"]["unigram"] - 1.0 - m.ce["test"]["all"], section="training-the-encoder"),
    Claim("S8-07", "Largest distance between two of kestrel's layer-0 vectors read at the window centre "
          "(every seed)", seed="0 (static)", rule="exactly 0 at every seed",
          compute=lambda: max(m.layer0_spread for m in seeds()), accept=lambda v: v == 0.0, fmt="residual",
          section="layer-0-is-static"),
    _claim("S8-14", "Leave-one-alias-out typing on encoder layer 0 (centred, static)", "0.852",
           "≤ per-alias cap + 0.005", lambda m: m.typing["0"], lambda m: m.typing["0"] <= _CAP() + 0.005,
           lambda m: _CAP() + 0.005 - m.typing["0"], section="a-company-or-its-product-in-context"),
    _claim("S8-15", "Leave-one-alias-out typing on encoder layer 1", "0.948", "≥ per-alias cap + 0.05",
           lambda m: m.typing["1"], lambda m: m.typing["1"] >= _CAP() + 0.05,
           lambda m: m.typing["1"] - (_CAP() + 0.05), section="a-company-or-its-product-in-context"),
    _claim("S8-16", "Leave-one-alias-out typing on encoder layer 2", "0.966",
           "≥ per-alias cap + 0.05 and ≥ layer 1 − 0.02", lambda m: m.typing["2"],
           lambda m: m.typing["2"] >= _CAP() + 0.05 and m.typing["2"] >= m.typing["1"] - 0.02,
           lambda m: min(m.typing["2"] - (_CAP() + 0.05), m.typing["2"] - (m.typing["1"] - 0.02)),
           expected="seed-dependent", section="a-company-or-its-product-in-context"),
    # stratified folds with an intercept-only probe score the majority share exactly at every seed
    _reported("S8-18", "kestrel: five-fold (stratified) accuracy on layer 0, an intercept-only probe", "0.339",
              lambda m: m.kestrel["0"], section="the-static-fold-scoring-below-the-majority"),
    _claim("S8-19", "kestrel: five-fold accuracy on layers 1 and 2", "1.000 and 1.000", "≥ 0.97 at both",
           lambda m: (m.kestrel["1"], m.kestrel["2"]), lambda m: min(m.kestrel["1"], m.kestrel["2"]) >= 0.97,
           lambda m: min(m.kestrel["1"], m.kestrel["2"]) - 0.97, section="a-company-or-its-product-in-context"),
    Claim("S8-20", "Layer 0 on kestrel, fold by fold: every fold predicts its training majority, so a fold's "
          "accuracy is its share of that class (book seed)", seed="—",
          rule="each fold's accuracy equals its test share of the training majority (to 1e-12)",
          compute=lambda: _folds_match(), accept=lambda v: v <= 1e-12, fmt="residual",
          section="the-static-fold-scoring-below-the-majority"),
    _claim("S1-04", "Five-fold accuracy typing kestrel's occurrences on encoder layers 1 / 2", "1.000",
           "≥ 0.97 at layer 1 or 2", lambda m: (m.kestrel["1"], m.kestrel["2"]),
           lambda m: max(m.kestrel["1"], m.kestrel["2"]) >= 0.97,
           lambda m: max(m.kestrel["1"], m.kestrel["2"]) - 0.97, section="a-company-or-its-product-in-context"),
    _claim("S6-11", "Position leak: layer 0 at the nearest-centre position, five-fold on kestrel", "0.907",
           "≥ majority + 0.2 and above the centred layer 0", lambda m: m.leak["nearest"],
           lambda m: m.leak["nearest"] >= static().kestrel_cap.accuracy + 0.2 and m.leak["nearest"] > m.leak["centred"],
           lambda m: min(m.leak["nearest"] - (static().kestrel_cap.accuracy + 0.2), m.leak["nearest"] - m.leak["centred"]),
           section="the-position-leak-with-the-encoders-own-layer-0"),
    Claim("S6-12", "Nearest-centre slots of kestrel's PRODUCT mentions (windows every 16 tokens): lowest, highest, "
          "and how many of them", seed="61 of 61 at slots 22-24",
          rule="every PRODUCT mention at slots 22-24, as stated (the filing lengths and the window stride, "
               "unstated there, fix the slot)",
          compute=lambda: _product_slots(), accept=lambda v: 22 <= v[0] and v[1] <= 24, fmt="d",
          expected="not reproduced", section="the-position-leak-with-the-encoders-own-layer-0"),
    Claim("S6-13", "Centred reading: slot of every read token in its window (window 32) / distinct slots",
          seed="16 of 32", rule="one slot, 16 (0-based)", compute=lambda: _centred_slots(),
          accept=lambda v: v == (16, 1), fmt="d", section="layer-0-is-static"),
    _claim("S8-27", "News polarity, pooled per-word five-fold, layer 0 (centred, static)", "0.518", "≤ per-word cap",
           lambda m: m.polarity["pooled"]["0"], lambda m: m.polarity["pooled"]["0"] <= _POLCAP() + 1e-12,
           lambda m: _POLCAP() + 1e-12 - m.polarity["pooled"]["0"], section="the-news-a-word-reports-in-context"),
    _claim("S8-28", "News polarity, pooled, layer 1", "0.868", "≥ per-word cap + 0.2",
           lambda m: m.polarity["pooled"]["1"], lambda m: m.polarity["pooled"]["1"] >= _POLCAP() + 0.2,
           lambda m: m.polarity["pooled"]["1"] - (_POLCAP() + 0.2), section="the-news-a-word-reports-in-context"),
    _claim("S8-29", "News polarity, pooled, layer 2", "0.863", "≥ cap + 0.2 and |layer 2 − layer 1| ≤ 0.03",
           lambda m: m.polarity["pooled"]["2"],
           lambda m: m.polarity["pooled"]["2"] >= _POLCAP() + 0.2
           and abs(m.polarity["pooled"]["2"] - m.polarity["pooled"]["1"]) <= 0.03,
           lambda m: min(m.polarity["pooled"]["2"] - (_POLCAP() + 0.2),
                         0.03 - abs(m.polarity["pooled"]["2"] - m.polarity["pooled"]["1"])),
                         section="the-news-a-word-reports-in-context"),
    _claim("S8-30", "Shuffled-label control, layer 1", "0.536", "≤ per-word cap + 0.02",
           lambda m: m.polarity["control1"], lambda m: m.polarity["control1"] <= _POLCAP() + 0.02,
           lambda m: _POLCAP() + 0.02 - m.polarity["control1"], section="the-news-a-word-reports-in-context"),
    _claim("S8-31", "The six direction words: lowest layer-1 accuracy among them", "0.945–0.991", "each ≥ 0.90",
           lambda m: min(m.polarity["words"][w]["accuracy"] for w in m.polarity["words"] if w in DIRECTION_WORDS),
           lambda m: min(m.polarity["words"][w]["accuracy"] for w in m.polarity["words"] if w in DIRECTION_WORDS)
           >= 0.90,
           lambda m: min(m.polarity["words"][w]["accuracy"] for w in m.polarity["words"] if w in DIRECTION_WORDS)
           - 0.90, expected="not reproduced", section="the-news-a-word-reports-in-context"),
    _claim("S8-32", "Evaluative verbs pooled vs direction words pooled, layer 1", "0.357–0.853 vs 0.945–0.991",
           "verbs ≤ direction words − 0.15", lambda m: (m.polarity["verbs_pooled"], _group(m, DIRECTION_WORDS)),
           lambda m: m.polarity["verbs_pooled"] <= _group(m, DIRECTION_WORDS) - 0.15,
           lambda m: _group(m, DIRECTION_WORDS) - 0.15 - m.polarity["verbs_pooled"],
           section="the-news-a-word-reports-in-context"),
    _claim("S8-34", "Sample-size control: direction words subsampled to the verbs' smallest / median / largest "
           "counts (layer 1), vs the verbs pooled", "≈ 0.88 / 0.91 / 0.94 vs 0.550",
           "every subsample ≥ verbs pooled + 0.2",
           lambda m: tuple(m.polarity["subsampled"].values()) + (m.polarity["verbs_pooled"],),
           lambda m: min(m.polarity["subsampled"].values()) >= m.polarity["verbs_pooled"] + 0.2,
           lambda m: min(m.polarity["subsampled"].values()) - (m.polarity["verbs_pooled"] + 0.2),
           expected="seed-dependent", section="the-news-a-word-reports-in-context"),
    # a probability is in (0, 1); the plug-in exceeds its guess for every guess in (0, 1); any shortfall passes
    _reported("S8-43", "Visible-word check on 512 held-out words: mean probability of the [MASK] guess on the word",
              "0.591", lambda m: m.visible["guess"], section="what-the-encoder-keeps-of-a-visible-word"),
    _reported("S8-44", "Theorem 2 (ii)'s plug-in from those guesses (the book's V, κ = r = 0.1), averaged", "0.950",
              lambda m: m.visible["plugin"], section="what-the-encoder-keeps-of-a-visible-word"),
    _reported("S8-45", "The encoder's probability of the word when it is visible, vs the plug-in", "0.734 vs 0.950",
              lambda m: (m.visible["visible"], m.visible["plugin"]),
              section="what-the-encoder-keeps-of-a-visible-word"),
    Claim("S8-46", "Kept share of a selected position on the filings", seed="1 in 10", rule="κ = 0.1",
          compute=lambda: round(fe.SETUP.kept, 12), accept=lambda v: abs(v - 0.1) < 1e-12,
          section="training-the-encoder"),
    _claim("S5-13", "kestrel self-similarity at layers 0 / 1 / 2 (centred reading)", "1.000 / 0.862 / 0.846",
           "layer 0 = 1 to 1e-12; layers 1-2 < 0.95",
           lambda m: tuple(m.geometry["kestrel"][k]["self_similarity"] for k in _LAYERS),
           lambda m: abs(m.geometry["kestrel"]["0"]["self_similarity"] - 1) <= 1e-12
           and max(m.geometry["kestrel"][k]["self_similarity"] for k in ("1", "2")) < 0.95,
           lambda m: 0.95 - max(m.geometry["kestrel"][k]["self_similarity"] for k in ("1", "2")),
           section="the-geometry-of-kestrel"),
    _claim("S5-14", "kestrel MEV at layers 0 / 1 / 2", "1.000 / 0.868 / 0.862", "layer 0 = 1 to 1e-12; layers 1-2 < 0.95",
           lambda m: tuple(m.geometry["kestrel"][k]["mev"] for k in _LAYERS),
           lambda m: abs(m.geometry["kestrel"]["0"]["mev"] - 1) <= 1e-12
           and max(m.geometry["kestrel"][k]["mev"] for k in ("1", "2")) < 0.95,
           lambda m: 0.95 - max(m.geometry["kestrel"][k]["mev"] for k in ("1", "2")),
           section="the-geometry-of-kestrel"),
    _claim("S5-15", "Anisotropy baseline (1000 uniformly drawn tokens, centred) at layers 0 / 1 / 2",
           "0.182 / 0.320 / 0.048", "layer 1 > layer 0 (layer 2 < layer 1 reported either way)",
           lambda m: tuple(m.geometry["kestrel"][k]["baseline"] for k in _LAYERS),
           lambda m: m.geometry["kestrel"]["1"]["baseline"] > m.geometry["kestrel"]["0"]["baseline"],
           lambda m: m.geometry["kestrel"]["1"]["baseline"] - m.geometry["kestrel"]["0"]["baseline"],
           expected="not reproduced", section="the-geometry-of-kestrel"),
    _claim("S5-16", "kestrel adjusted self-similarity at layers 0 / 1 / 2", "0.818 / 0.542 / 0.798",
           "layer 1 < layer 0, and layer 1 the minimum",
           lambda m: tuple(m.geometry["kestrel"][k]["adjusted"] for k in _LAYERS),
           lambda m: m.geometry["kestrel"]["1"]["adjusted"] < m.geometry["kestrel"]["0"]["adjusted"]
           and m.geometry["kestrel"]["1"]["adjusted"] <= m.geometry["kestrel"]["2"]["adjusted"],
           lambda m: min(m.geometry["kestrel"]["0"]["adjusted"] - m.geometry["kestrel"]["1"]["adjusted"],
                         m.geometry["kestrel"]["2"]["adjusted"] - m.geometry["kestrel"]["1"]["adjusted"]),
                         section="the-geometry-of-kestrel"),
    Claim("S5-19", "kestrel's layer-0 vectors: self-similarity − 1 and MEV − 1 (one point), worst seed",
          seed="single point", rule="both 0 to 1e-12 at every seed",
          compute=lambda: max(max(abs(m.geometry["kestrel"]["0"]["self_similarity"] - 1),
                                  abs(m.geometry["kestrel"]["0"]["mev"] - 1)) for m in seeds()),
          accept=lambda v: v <= 1e-12, fmt="residual", section="the-geometry-of-kestrel"),
    _claim("S5-22", "Filing baseline at layer 2 vs layer 1", "0.048 vs 0.320", "layer 2 < layer 1",
           lambda m: (m.geometry["kestrel"]["2"]["baseline"], m.geometry["kestrel"]["1"]["baseline"]),
           lambda m: m.geometry["kestrel"]["2"]["baseline"] < m.geometry["kestrel"]["1"]["baseline"],
           lambda m: m.geometry["kestrel"]["1"]["baseline"] - m.geometry["kestrel"]["2"]["baseline"],
           section="the-geometry-of-kestrel"),
    Claim("S5-23", "A cloud with mean cosine near 0 that is not isotropic: 1000 vectors in 64 dimensions, half "
          "along +u and half along −u (plus unit noise): mean cosine, and MEV against the isotropic reference",
          seed="(logical)", rule="|mean cosine| ≤ 0.01 and MEV ≥ 10 × the isotropic reference",
          compute=lambda: _two_sided_cone(), accept=lambda v: abs(v[0]) <= 0.01 and v[1] >= 10 * v[2], fmt=".3g",
          section="the-geometry-of-kestrel"),
    _claim("S5-24", "MEV of 1000 uniformly drawn top-layer token vectors vs the isotropic 1000 × 64 reference",
           "0.093 vs 0.0156", "≥ 2 × the finite-sample isotropic reference",
           lambda m: (m.geometry["pool_mev"], m.geometry["isotropic_mev"]),
           lambda m: m.geometry["pool_mev"] >= 2 * m.geometry["isotropic_mev"],
           lambda m: m.geometry["pool_mev"] - 2 * m.geometry["isotropic_mev"], section="the-geometry-of-kestrel"),
)


def _folds_match() -> float:
    """Largest gap between a layer-0 fold's accuracy and its test share of the training majority (book seed)."""
    from mlm_book.finance.world import ENTITY_PRODUCT

    corpus = fe.filing_world().corpus
    index = np.flatnonzero((corpus.tokens == "kestrel") & (corpus.entity > 0))
    labels = (corpus.entity[index] == ENTITY_PRODUCT).astype(np.int64)
    gaps = [abs(accuracy - float(np.mean(labels[test] == majority)))
            for (majority, accuracy), (_, test) in zip(book().kestrel["folds0"], fe.kfold(labels))]
    return max(gaps)

def _product_slots() -> tuple[int, int, int]:
    r = fe.filing_world()
    slots = r.nearest_positions[(r.corpus.tokens == "kestrel") & (r.corpus.entity == 2)]
    return int(slots.min()), int(slots.max()), int(slots.size)

def _centred_slots() -> tuple[int, int]:
    """Where [`centred_windows`][mlm_book.finance.windows.centred_windows] puts each of the stream's tokens: its slot (the same for all) and the number of distinct slots."""
    from mlm_book.finance.windows import centred_windows

    r = fe.filing_world()
    windows, valid = centred_windows(np.arange(r.ids.size), r.corpus.document, length=fe.SETUP.length, pad_id=-1)
    slots = np.argmax(windows == np.arange(r.ids.size)[:, None], axis=1)
    return int(slots[0]), int(np.unique(slots).size)

def _two_sided_cone() -> tuple[float, float, float]:
    """Mean cosine, MEV and the isotropic MEV of a cloud split evenly along +u and −u (seeded)."""
    from mlm_book import geometry

    rng = np.random.default_rng(0)
    n, d = 1000, 64
    u = np.zeros(d)
    u[0] = 6.0
    signs = np.repeat([1.0, -1.0], n // 2)[:, None]
    cloud = signs * u + rng.standard_normal((n, d))
    return (geometry.anisotropy_baseline(cloud), geometry.mev(cloud),
            geometry.isotropic_mev(n, d, rng, repeats=20).mean)
