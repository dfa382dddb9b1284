r"""The lab's data: everything the interactive page shows, computed here, none of it in the browser.

The lab (``docs/lab.md``, drawn by ``docs/assets/lab.js``) has four views, Figures A to D (an
HMM sentence, four filing windows, the four-cycle test, the clouds), and
[`viz_payload`][mlm_book.lab.viz_payload] returns one JSON-serialisable dict with every
number they show; the docs build writes it into the page (``docs/hooks/lab.py``), and a
test checks that the page's copy equals this function's result exactly. The browser only
lays out what it is given and follows the reader's choices.

* **HMM view** (``"hmm"``): a default sentence of the book's HMM with the shared token $w$
  once in each sense ([`default_sentence`][mlm_book.lab.default_sentence]). For every
  position and each of three displays (``[MASK]``, the token itself, a random substitute)
  the exact posterior of Theorem 2 under the HMM encoder's channel
  ([`mlm_book.channel.exact_posterior`][mlm_book.channel.exact_posterior]) and the trained
  encoder's prediction, their KL, the probability each gives the true token; the exact
  $P(\text{sense} \mid x)$ of the two occurrences of $w$; and the held-out means of
  [`evaluation`][mlm_book.readings.hmm_encoder.evaluation] for the caption.
* **Four-cycle view** (``"cycles"``): chapter 3's 200 draws, and for each of three families
  (the HMM's exact conditionals, the trained encoder, Theorem 2's population optimum) the
  four log-odds that make up the gap $\delta$ of each draw, and $\delta$ itself exactly as
  chapter 3 reports it.
* **Filing view** (``"filings"``): four windows of chapter 7's held-out filings
  ([`filing_windows`][mlm_book.lab.filing_windows] says which, and why), read by the filing
  encoder. For every token that is not [PAD]: the encoder's five best guesses with that token
  shown as [MASK], the probability that guess puts on the token, the probability the encoder
  keeps on the token when it is visible, and Theorem 2's plug-in from the guess
  ([`mlm_book.channel.optimum`][mlm_book.channel.optimum] under the encoder's own channel):
  the word-by-word version of chapter 7's visible-word check, whose means the caption copies.
* **Clouds** (``"clouds"``): $w$'s test occurrences at layers 0, 1, 2 on their own two
  principal axes (a seeded subset of [`CLOUD_POINTS`][mlm_book.lab.CLOUD_POINTS] points,
  coordinates to four significant digits), with true senses and exact sense posteriors, and
  beside them chapter 4's Definition 3 measures and chapter 5's probe accuracies, copied
  from their tables unrounded.
* **kestrel's clouds** (``"kestrel"``): the 116 typed occurrences of *kestrel* in the
  filings at layers 0, 1, 2, each read at the centre of its own window, on their own two
  principal axes and coloured by their gold type (company or product); beside them chapter
  7's Definition 3 measures, probes and majority shares, copied unrounded from
  [`filing_encoder.seed_results`][mlm_book.artefacts.filing_encoder.seed_results] with their
  mean and standard deviation over the five training seeds. At layer 0 the 116 vectors are
  one vector, $E[\text{kestrel}] + P_{16}$: the payload says so instead of projecting it.

The filing view's probabilities, the clouds' coordinates and *kestrel*'s explained shares are
rounded to [`FILING_DIGITS`][mlm_book.lab.FILING_DIGITS] significant digits (the page shows at
most three decimals); every other number is the package's float.
"""

from __future__ import annotations

import copy
import functools
import json

import numpy as np

__all__ = ["SENTENCE_SEED", "SENTENCE_SAMPLE", "SENSE_CONFIDENCE", "SUBSTITUTE_SEED", "CLOUD_POINTS",
           "DISPLAYS", "DELTA_FLOOR", "FILING_TOP", "FILING_DIGITS", "ENTITY_COLORS", "default_sentence",
           "substitutes", "filing_windows",
           "viz_payload", "payload_json", "clear_caches"]

SENTENCE_SEED = 20261301
"""Seed of the HMM sample the default sentence is taken from."""
SENTENCE_SAMPLE = 2000
"""Size of that sample."""
SENSE_CONFIDENCE = 0.99
"""Both occurrences of $w$ in the default sentence have an exact sense posterior at least this sure."""
SUBSTITUTE_SEED = 20261302
"""Seed of the random substitute shown at each position (one per position, never the token itself)."""
CLOUD_POINTS = 2000
"""Occurrences of $w$ drawn in the clouds (a seeded random subset; the measures use them all)."""
DISPLAYS = ("mask", "self", "random")
"""What a position can show, in the order of the page's controls."""
DELTA_FLOOR = 1e-17
"""Where exact zeros of $|\\delta|$ are drawn on the log axis (as in chapter 3's histogram)."""

FILING_TOP = 5
"""The filing view's bars: the encoder's this-many best guesses for a masked word."""
FILING_DIGITS = 4
"""Significant digits of the filing view's probabilities and of the clouds' coordinates in the payload."""
ENTITY_COLORS = {"ORG": "green", "PRODUCT": "purple"}
"""*kestrel*'s two types in the lab, as names of the book's palette (unlike $w$'s two senses' colours)."""

_PROBABILITY_DECIMALS = 3
_LOG_ODDS_DECIMALS = 4
_COORDINATE_DIGITS = FILING_DIGITS


def _probabilities(row) -> list[float]:
    return [round(float(x), _PROBABILITY_DECIMALS) for x in row]


def _significant(x: float, digits: int = _COORDINATE_DIGITS) -> float:
    return float(f"{float(x):.{digits}g}")


@functools.cache
def default_sentence() -> dict:
    """The HMM view's sentence: the first of a seeded sample with $w$ exactly twice, sense a then sense b.

    Both occurrences must have an exact sense posterior of at least `SENSE_CONFIDENCE` for
    their own (sampled) sense, so that the sentence shows $w$ once in each sense beyond doubt.

    Returns
    -------
    dict
        ``tokens`` (24 ids), ``states`` (24 hidden states), ``index`` (its row in the sample),
        ``w_positions`` (the two positions of $w$, sense a's first).

    Examples
    --------
    >>> s = default_sentence()
    >>> len(s["tokens"]), len(s["w_positions"])
    (24, 2)
    """
    from mlm_book.artefacts.hmm_encoder import SETUP
    from mlm_book.hmm import default_hmm, sample, sense_posteriors

    hmm = default_hmm()
    states, tokens = sample(hmm, SENTENCE_SAMPLE, SETUP.length, np.random.default_rng(SENTENCE_SEED))
    posteriors = sense_posteriors(hmm, tokens)
    for row in range(SENTENCE_SAMPLE):
        where = np.flatnonzero(tokens[row] == hmm.shared_token)
        if len(where) != 2:
            continue
        senses = [int(states[row, i] == hmm.sense_states[1]) for i in where]
        sure = [float(posteriors[row, i, k]) for i, k in zip(where, senses)]
        if senses == [0, 1] and min(sure) >= SENSE_CONFIDENCE:
            return {"tokens": [int(t) for t in tokens[row]], "states": [int(s) for s in states[row]],
                    "index": row, "w_positions": [int(i) for i in where]}
    raise RuntimeError("no sentence of the sample has w once in each sense")  # pragma: no cover


def substitutes(tokens) -> list[int]:
    """One random substitute per position: uniform over the 24 tokens other than the one there (seeded).

    Parameters
    ----------
    tokens : array_like of int, shape (n,)
        A sentence of the book's HMM (ids in ``[0, 25)``).

    Raises
    ------
    TypeError
        If ``tokens`` does not hold integers.
    ValueError
        If ``tokens`` is not a non-empty 1-D sequence of ids in ``[0, 25)``.

    Examples
    --------
    >>> shown = substitutes([0, 5, 24])
    >>> len(shown), all(s != t and 0 <= s < 25 for s, t in zip(shown, [0, 5, 24]))
    (3, True)
    """
    from mlm_book.hmm import default_hmm
    from mlm_book.validation import check_tokens

    vocab = default_hmm().vocab_size
    tokens = check_tokens(tokens, "tokens", vocab, ndim=1).tolist()
    draws = np.random.default_rng(SUBSTITUTE_SEED).integers(0, vocab - 1, size=len(tokens))
    return [int(d + (d >= t)) for d, t in zip(draws, tokens)]


def _shown(tokens, substitute, mask_id) -> np.ndarray:
    """Every (position, display) variant of the sentence, rows ordered position-major, ``(3n, n)``."""
    n = len(tokens)
    rows = []
    for i in range(n):
        for display in DISPLAYS:
            row = list(tokens)
            row[i] = {"mask": mask_id, "self": tokens[i], "random": substitute[i]}[display]
            rows.append(row)
    return np.array(rows, dtype=np.int64)


@functools.cache
def _hmm_view() -> dict:
    from mlm_book.artefacts import hmm_encoder
    from mlm_book.channel import exact_posterior
    from mlm_book.hmm import default_hmm, sense_posteriors
    from mlm_book.nn import encoder as enc
    from mlm_book.readings.hmm_encoder import evaluation as held_out_evaluation
    from mlm_book.scoring import kl_divergence

    hmm = default_hmm()
    setup = hmm_encoder.SETUP
    channel = setup.channel()
    sentence = default_sentence()
    tokens = sentence["tokens"]
    substitute = substitutes(tokens)
    n = len(tokens)
    shown = _shown(tokens, substitute, channel.mask_id)
    rows = np.arange(len(shown))
    where = np.repeat(np.arange(n), len(DISPLAYS))
    exact = exact_posterior(hmm, channel, shown)[rows, where]                     # (3n, V)
    result = hmm_encoder.trained_encoder()
    model = enc.predict_proba(result.params, result.encoder, shown)[rows, where]  # (3n, V)
    kl = kl_divergence(exact, model)
    truth = np.repeat(np.asarray(tokens), len(DISPLAYS))
    views = []
    for i in range(n):
        per = {}
        for k, display in enumerate(DISPLAYS):
            r = i * len(DISPLAYS) + k
            per[display] = {"shown": int(shown[r, i]), "exact": _probabilities(exact[r]),
                            "encoder": _probabilities(model[r]), "kl": float(kl[r]),
                            "p_true_exact": float(exact[r, truth[r]]), "p_true_encoder": float(model[r, truth[r]])}
        views.append(per)
    senses = sense_posteriors(hmm, tokens)                                         # (n, 2)
    evaluation = held_out_evaluation()
    return {
        "tokens": tokens,
        "regimes": [int(hmm.regime[s]) for s in sentence["states"]],
        "w_positions": sentence["w_positions"],
        "w_senses": [int(sentence["states"][i] == hmm.sense_states[1]) for i in sentence["w_positions"]],
        "sense_posterior": [[float(senses[i, 0]), float(senses[i, 1])] for i in sentence["w_positions"]],
        "substitutes": substitute,
        "displays": list(DISPLAYS),
        "default": {"position": sentence["w_positions"][0], "display": "mask"},
        "views": views,
        "channel": {"rho": channel.rho, "mask": channel.mask, "random": channel.random, "keep": channel.keep},
        "caption": {"mean_kl": evaluation.mean_kl, "mean_entropy": evaluation.mean_entropy,
                    "kl_by_kind": dict(evaluation.kl_by_kind), "n_positions": evaluation.n_positions,
                    "n_sequences": evaluation.n_sequences},
    }



def _log_odds(conditional, draws, *, mask_id=None) -> np.ndarray:
    """The four log-odds of each draw's cycle, ``(4, count)``, in the order of Corollary 2's formula.

    ``[log q_i(a|b)/q_i(a'|b), log q_j(b|a')/q_j(b'|a'), log q_j(b|a)/q_j(b'|a), log q_i(a|b')/q_i(a'|b')]``,
    so that $\\delta$ = first + second − third − fourth.
    """
    from mlm_book import compat

    count = len(draws.first)
    rows = np.arange(count)
    out = []
    for position, other, setting, top, alt in ((draws.first, draws.second, draws.b, draws.a, draws.a_alt),
                                               (draws.second, draws.first, draws.a_alt, draws.b, draws.b_alt),
                                               (draws.second, draws.first, draws.a, draws.b, draws.b_alt),
                                               (draws.first, draws.second, draws.b_alt, draws.a, draws.a_alt)):
        block = draws.tokens.copy()
        block[rows, other] = setting
        q = compat.query(conditional, block, position, mask_id=mask_id)
        out.append(np.log(q[rows, top]) - np.log(q[rows, alt]))
    return np.array(out)


@functools.cache
def _cycle_view() -> dict:
    from mlm_book import compat
    from mlm_book import four_cycles
    from mlm_book.artefacts.hmm_encoder import SETUP
    from mlm_book.hmm import default_hmm
    from mlm_book.readings import hmm_encoder

    hmm = default_hmm()
    config = four_cycles.FOUR_CYCLE
    draws = four_cycles.four_cycle_draws(config)
    exact = four_cycles.exact_families(config)
    summary = hmm_encoder.four_cycle_summary()
    mask_id = SETUP.encoder.mask_id
    families = (
        ("exact", "HMM exact", "HMM's exact conditionals", exact["HMM conditionals"], compat.hmm_conditionals(hmm),
         None),
        ("encoder", "encoder", "trained HMM encoder", summary.encoder, hmm_encoder.encoder_conditionals, mask_id),
        ("population", "optimum", f"population optimum (ρ = {config.rho:g})",
         next(v for k, v in exact.items() if k.startswith("population")),
         compat.population_optimum_conditionals(hmm, config.channel()), None),
    )
    out = []
    for key, short, name, deltas, conditional, mask in families:
        odds = _log_odds(conditional, draws, mask_id=mask)
        out.append({"key": key, "short": short, "name": name, "delta": [float(d) for d in deltas],
                    "log_odds": [[round(float(x), _LOG_ODDS_DECIMALS) for x in odds[:, k]]
                                 for k in range(len(deltas))],
                    "median_abs": float(np.median(np.abs(deltas))), "max_abs": float(np.max(np.abs(deltas)))})
    return {
        "count": int(len(draws.first)),
        "tokens": [[int(t) for t in row] for row in draws.tokens],
        "first": [int(x) for x in draws.first], "second": [int(x) for x in draws.second],
        "a": [int(x) for x in draws.a], "a_alt": [int(x) for x in draws.a_alt],
        "b": [int(x) for x in draws.b], "b_alt": [int(x) for x in draws.b_alt],
        "rho": config.rho,
        "floor": DELTA_FLOOR,
        "default": int(np.argmax(np.abs(summary.encoder))),
        "families": out,
    }



@functools.cache
def _cloud_view() -> dict:
    from mlm_book import geometry
    from mlm_book.hmm_splits import SPLITS
    from mlm_book.readings import hmm_encoder, sense_probes

    vectors = hmm_encoder.split_vectors("test")
    table = hmm_encoder.geometry_table()
    probes = sense_probes.probe_table()
    posterior = vectors.posterior
    k = vectors.n_occurrences
    shown = np.sort(np.random.default_rng(SPLITS.geometry_seed).permutation(k)[:min(CLOUD_POINTS, k)])
    layers = []
    for layer in range(len(vectors.layers)):
        projection = geometry.principal_axes(vectors.word(layer), 2)
        coords = projection.coordinates.copy()
        if np.corrcoef(coords[:, 0], posterior)[0, 1] < 0:  # as chapter 4's figure: sense b to the right
            coords[:, 0] = -coords[:, 0]
        g = table.rows[layer].geometry
        row = probes.rows[layer]
        layers.append({
            "layer": layer, "vector": hmm_encoder.LAYER_NAMES[layer],
            "x": [_significant(v) for v in coords[shown, 0]], "y": [_significant(v) for v in coords[shown, 1]],
            "explained": [float(e) for e in projection.explained[:2]],
            "self_similarity": float(g.self_similarity), "baseline": float(g.baseline),
            "adjusted": float(g.adjusted), "mev": float(g.mev), "token_mev": float(g.token_mev),
            "isotropic_mev": float(g.isotropic_mev), "distinct_vectors": int(table.rows[layer].distinct_vectors),
            "probe": float(row.probe), "probe_stderr": float(row.stderr), "control": float(row.control),
        })
    return {
        "word": "w",
        "n_occurrences": k,
        "n_shown": int(len(shown)),
        "senses": [int(s) for s in vectors.senses[shown]],
        "posterior_b": [round(float(p), 3) for p in posterior[shown]],
        "positions": [int(p) for p in vectors.positions[shown]],
        "cap": float(probes.cap), "bayes": float(probes.bayes),
        "default": 1,
        "layers": layers,
    }



# ----------------------------------------------------------------------------- the filings
_FILING_CHOICES = (
    ("kestrel-org", "kestrel, the company"),
    ("kestrel-product", "kestrel, the product"),
    ("direction", "a direction word"),
    ("verb", "an evaluative verb"),
)


@functools.cache
def _filing_windows() -> tuple[dict, ...]:
    from mlm_book.artefacts import filing_encoder as fe
    from mlm_book.finance.world import (
        DIRECTION_WORDS,
        ENTITY_ORG,
        ENTITY_PRODUCT,
        EVALUATIVE_VERBS,
    )

    corpus = fe.filing_world().corpus
    held = np.isin(corpus.document, fe.split().test_documents)
    kestrel = held & (corpus.tokens == "kestrel")
    rules = {
        "kestrel-org": kestrel & (corpus.entity == ENTITY_ORG),
        "kestrel-product": kestrel & (corpus.entity == ENTITY_PRODUCT),
        "direction": held & np.isin(corpus.tokens, DIRECTION_WORDS) & (corpus.news != 0),
        "verb": held & np.isin(corpus.tokens, EVALUATIVE_VERBS) & (corpus.news != 0),
    }
    out = []
    for key, title in _FILING_CHOICES:
        index = int(np.flatnonzero(rules[key])[0])
        word = str(corpus.tokens[index])
        out.append({"key": key, "title": title if key.startswith("kestrel") else f"{title}: {word}",
                    "index": index, "document": int(corpus.document[index]), "word": word,
                    "news": int(corpus.news[index])})
    return tuple(out)


def filing_windows() -> list[dict]:
    r"""The filing view's four windows: which token each is centred on, and why that one.

    The rule, fixed before any of the encoder's numbers was looked at: in the held-out filings
    (the encoder never trained on them), taken in stream order, the first mention of *kestrel*
    as the company, the first as the product, the first direction word (*rose*, *jumped*, ...)
    in a sentence that reports news, and the first evaluative verb (*beat*, *outpaced*, ...) in
    one. Each window is that token's own centred window, exactly as chapter 6 reads a token:
    the token at position 16 of 32, cut at its filing's edges ([PAD] beyond them).

    Returns
    -------
    list of dict
        ``key``, ``title``, ``index`` (the centre token's index in the corpus stream),
        ``document``, ``word`` and ``news`` (the sentence's news label, 0 for none).

    Examples
    --------
    >>> [w["key"] for w in filing_windows()]
    ['kestrel-org', 'kestrel-product', 'direction', 'verb']
    """
    return copy.deepcopy(list(_filing_windows()))


@functools.cache
def _filing_view() -> dict:
    from mlm_book.channel import optimum
    from mlm_book.artefacts import filing_encoder as fe
    from mlm_book.finance.windows import centre_position, centred_windows
    from mlm_book.finance.world import ENTITY_NAMES
    from mlm_book.nn import encoder as enc

    world = fe.filing_world()
    corpus = world.corpus
    result = fe.trained_encoder()
    config = result.encoder
    V = config.vocab_size
    channel = fe.SETUP.channel(V)
    words = list(world.vocabulary.words)
    counts = np.bincount(world.ids, minlength=V)
    chosen = _filing_windows()
    centres = np.array([w["index"] for w in chosen], dtype=np.int64)
    clean, valid = centred_windows(world.ids, corpus.document, length=config.length, pad_id=config.pad_id,
                                   select=centres)
    centre = centre_position(config.length)
    visible = enc.predict_proba(result.params, config, clean)                        # (4, n, V)
    windows = []
    for k, choice in enumerate(chosen):
        row = clean[k]
        real = np.flatnonzero(valid[k])
        masked = np.repeat(row[None], real.size, axis=0)
        masked[np.arange(real.size), real] = config.mask_id
        guess = enc.predict_proba(result.params, config, masked)[np.arange(real.size), real]   # (m, V)
        tokens = row[real]
        plugin = optimum(guess, tokens, channel)[np.arange(real.size), tokens]
        stream = choice["index"] - centre + real                                    # corpus index of each slot
        slots = [None] * config.length
        for j, position in enumerate(real.tolist()):
            top = np.argsort(-guess[j], kind="stable")[:FILING_TOP]
            token = int(tokens[j])
            slot = {"word": words[token], "entity": ENTITY_NAMES[int(corpus.entity[stream[j]])],
                    "count": int(counts[token]),
                    "top": [[words[int(y)], _significant(guess[j, y])] for y in top],
                    "guess": _significant(guess[j, token]), "visible": _significant(visible[k, position, token]),
                    "plugin": _significant(plugin[j])}
            if corpus.tokens[stream[j]] != words[token]:
                slot["text"] = str(corpus.tokens[stream[j]])                          # the filing's word, read as [UNK]
            slots[position] = slot
        windows.append({**choice, "slots": slots})
    runs = fe.all_seed_results()
    book = fe.seed_results()
    check = {key: book.visible[key] for key in ("guess", "plugin", "visible")}
    spread = {key: list(fe.spread([run.visible[key] for run in runs])) for key in check}
    return {
        "centre": centre,
        "length": config.length,
        "top": FILING_TOP,
        "vocab_size": V,
        "channel": {"rho": channel.rho, "mask": channel.mask, "random": channel.random, "keep": channel.keep},
        "windows": windows,
        "default": {"window": 0, "position": centre},
        "caption": {**check, "n_words": len(book.visible["per_guess"]), "seeds": len(runs), "spread": spread},
    }



_KESTREL_LAYER_NAMES = (
    "layer 0: input E[kestrel] + P16 (the window's centre)",
    "layer 1: residual stream after block 1",
    "layer 2: residual stream after block 2 (before the final LayerNorm)",
)
_GEOMETRY_KEYS = ("self_similarity", "baseline", "adjusted", "mev", "token_mev", "isotropic_mev")


@functools.cache
def _kestrel_view() -> dict:
    from mlm_book import geometry
    from mlm_book.artefacts import filing_encoder as fe
    from mlm_book.readings.filing_baselines import baselines
    from mlm_book.finance.world import ENTITY_PRODUCT

    corpus = fe.filing_world().corpus
    index = np.flatnonzero((corpus.tokens == "kestrel") & (corpus.entity > 0))
    product = (corpus.entity[index] == ENTITY_PRODUCT).astype(np.int64)
    states = fe.centre_states(fe.trained_encoder(), index)                          # (m, 3, d)
    book, runs = fe.seed_results(), fe.all_seed_results()
    static = baselines()

    def band(getter) -> list[float]:
        return list(fe.spread([getter(run) for run in runs]))

    layers = []
    for layer in range(states.shape[1]):
        vectors = states[:, layer]
        distinct = int(np.unique(vectors, axis=0).shape[0])
        key = str(layer)
        g = book.geometry["kestrel"][key]
        entry = {"layer": layer, "vector": _KESTREL_LAYER_NAMES[layer], "distinct_vectors": distinct,
                 "single_point": distinct == 1}
        if distinct == 1:
            # Every occurrence is the same vector: there is no spread, so no principal axis to project on.
            entry.update({"x": [], "y": [], "explained": []})
        else:
            projection = geometry.principal_axes(vectors, 2)
            coords = projection.coordinates.copy()
            if np.corrcoef(coords[:, 0], product)[0, 1] < 0:  # products to the right, as w's sense b
                coords[:, 0] = -coords[:, 0]
            entry.update({"x": [_significant(v) for v in coords[:, 0]], "y": [_significant(v) for v in coords[:, 1]],
                          "explained": [_significant(e) for e in projection.explained[:2]]})
        entry.update({name: float(g[name]) for name in _GEOMETRY_KEYS})
        entry.update({"probe": float(book.kestrel[key]), "typing": float(book.typing[key])})
        entry["spread"] = {**{name: band(lambda run, name=name, key=key: run.geometry["kestrel"][key][name])
                              for name in _GEOMETRY_KEYS},
                           "probe": band(lambda run, key=key: run.kestrel[key]),
                           "typing": band(lambda run, key=key: run.typing[key])}
        layers.append(entry)
    return {
        "word": "kestrel",
        "n_occurrences": int(index.size),
        "types": [int(t) for t in product],
        "type_names": ["ORG", "PRODUCT"],
        "counts": [int((product == 0).sum()), int(product.sum())],
        "majority": float(static.kestrel_cap.accuracy),
        "alias_majority": float(static.alias_cap.accuracy),
        "layer0_spread": float(book.layer0_spread),
        "seeds": len(runs),
        "default": 1,
        "layers": layers,
    }



def _questions(hmm: dict, cycles: dict, clouds: dict, filings: dict, kestrel: dict) -> list[dict]:
    """The page's guided questions, answered from the payload's own numbers."""
    from mlm_book.finance.world import DIRECTION_WORDS
    names = _token_names()
    kl_self = [view["self"]["kl"] for view in hmm["views"]]
    worst = int(np.argmax(kl_self))
    family = {f["key"]: f for f in cycles["families"]}
    encoder, population, exact = family["encoder"], family["population"], family["exact"]
    above = sum(abs(e) > abs(p) for e, p in zip(encoder["delta"], population["delta"]))
    gap = [clouds["bayes"] - layer["probe"] for layer in clouds["layers"]]
    direction = next(w for w in filings["windows"] if w["key"] == "direction")
    centre = direction["slots"][filings["centre"]]
    guesses = ", ".join(f"{word} {p:.3f}" for word, p in centre["top"])
    among = sum(word in DIRECTION_WORDS for word, _ in centre["top"])
    slots = [(s["plugin"] - s["visible"], k, i, s) for k, w in enumerate(filings["windows"])
             for i, s in enumerate(w["slots"]) if s is not None]
    ranked = sorted(slots, key=lambda item: (-item[0], item[1], item[2]))
    short, k_short, i_short, lacking = ranked[0]
    median_count = float(np.median([s["count"] for *_, s in slots]))
    rare = (": the largest shortfalls are at rare words, as chapter 7 finds over its held-out words"
            if max(s["count"] for *_, s in ranked[:3]) < median_count else "")
    top3 = ", ".join(f"{s['word']} ({s['count']})" for *_, s in ranked[:3])
    reading = (": the context says that a direction word goes here, not which one the filing used"
               if among >= FILING_TOP - 1 else "")
    k_layers = kestrel["layers"]
    return [
        {"id": "q1", "answer": (
            f"Position {worst + 1} ({names[hmm['tokens'][worst]]}): with the token itself shown there, "
            f"KL(exact ‖ encoder) is {kl_self[worst]:.3f} nats, the largest of the {len(kl_self)} positions; "
            f"the median over the positions is {float(np.median(kl_self)):.3f} nats."),
         "value": {"position": worst, "kl": kl_self[worst]}},
        {"id": "q2", "answer": (
            f"The HMM's exact conditionals pass the test up to rounding (largest |δ| {exact['max_abs']:.1e}). At "
            f"{above} of the {cycles['count']} cycles the trained encoder's |δ| is larger than the population "
            f"optimum's, and its median |δ| is {encoder['median_abs']:.3g} nats against the optimum's "
            f"{population['median_abs']:.2g}: at a typical cycle the encoder's incompatibility is training's "
            f"shortfall, not the objective's. The optimum's own largest |δ| is {population['max_abs']:.2f} nats."),
         "value": {"encoder_above": above}},
        {"id": "q3", "answer": (
            f"The exact Bayes accuracy minus the probe's is {gap[0]:.3f} at layer 0, {gap[1]:.3f} at layer 1 and "
            f"{gap[2]:.3f} at layer 2: one attention block already reads off almost all the sense information. "
            f"Layer 0 is E[w] + P at the occurrence's position, so w has only "
            f"{clouds['layers'][0]['distinct_vectors']} distinct vectors there, one per position: nothing in them "
            "tells the senses apart."),
         "value": {"gaps": gap}},
        {"id": "q4", "answer": (
            f"With {centre['word']} masked, the encoder's five best guesses are {guesses}: "
            f"{'all five' if among == FILING_TOP else f'{among} of the five'} are direction words{reading}. Visible, {centre['word']} keeps {centre['visible']:.3f} of the encoder's mass; "
            f"Theorem 2's plug-in from the masked guess says {centre['plugin']:.3f}."),
         "value": {"window": direction["key"], "direction_words": among}},
        {"id": "q5", "answer": (
            f"{lacking['word']} in the window “{filings['windows'][k_short]['title']}” (position {i_short + 1}): "
            f"the masked guess puts {lacking['guess']:.3f} on it, the plug-in says a visible {lacking['word']} should keep "
            f"{lacking['plugin']:.3f}, and the encoder keeps {lacking['visible']:.3f}, {short:.3f} short. The three "
            f"largest shortfalls of the {len(slots)} words are at {top3} (in brackets, how often the word occurs "
            f"in the filings; the median word of the four windows occurs {median_count:,.0f} times){rare}."),
         "value": {"window": k_short, "position": i_short, "shortfall": short}},
        {"id": "q6", "answer": (
            f"At layer 0 all {kestrel['n_occurrences']} occurrences of kestrel are one vector, E[kestrel] + P16, so a "
            f"probe can only learn the majority: its five-fold accuracy is {k_layers[0]['probe']:.3f}, the majority "
            f"share {kestrel['majority']:.3f}. After one attention block the probe is right "
            f"{k_layers[1]['probe']:.3f} of the time, and {k_layers[2]['probe']:.3f} after the second: the type is "
            f"read off the neighbouring words (“the kestrel turbine” for the product, “kestrel turbine services” for "
            f"the company)."),
         "value": {"probes": [layer["probe"] for layer in k_layers]}},
    ]


def _token_names() -> list[str]:
    from mlm_book.hmm import default_hmm

    return [*default_hmm().token_names, "[MASK]"]


def viz_payload() -> dict:
    """Everything the lab page shows, as one JSON-serialisable dict (a fresh copy on every call).

    Keys: ``version``; ``tokens`` (the 25 token names and ``[MASK]``, by id); ``palette``,
    ``sense_colors`` and ``entity_colors`` (the book's colours, [`mlm_book.figures`][mlm_book.figures],
    and [`ENTITY_COLORS`][mlm_book.lab.ENTITY_COLORS]); ``hmm`` (the HMM view),
    ``cycles`` (the four-cycle view), ``filings`` (the filing view), ``clouds`` (the clouds of
    chapters 4 and 5), ``kestrel`` (*kestrel*'s clouds and chapter 7's measures); ``questions`` (the guided questions'
    answers). Only dicts, lists, strings, ints and finite floats: ``json.loads(json.dumps(p)) == p``.
    """
    from mlm_book.figures import PALETTE, SENSE_COLORS

    hmm, cycles, clouds, filings, kestrel = (copy.deepcopy(view()) for view in (
        _hmm_view, _cycle_view, _cloud_view, _filing_view, _kestrel_view))
    return {
        "version": 2,
        "tokens": _token_names(),
        "palette": dict(PALETTE),
        "sense_colors": list(SENSE_COLORS),
        "entity_colors": {name: PALETTE[color] for name, color in ENTITY_COLORS.items()},
        "hmm": hmm,
        "cycles": cycles,
        "filings": filings,
        "clouds": clouds,
        "kestrel": kestrel,
        "questions": _questions(hmm, cycles, clouds, filings, kestrel),
    }


def clear_caches() -> None:
    """Forget every view computed in this process, so that the next [`viz_payload`][mlm_book.lab.viz_payload]
    computes the payload from scratch (what the lab's determinism claim compares against the first).

    Examples
    --------
    >>> clear_caches()
    >>> default_sentence.cache_info().currsize
    0
    """
    for cached in (_hmm_view, _cycle_view, _cloud_view, _filing_windows, _filing_view, _kestrel_view,
                   default_sentence):
        cached.cache_clear()


def payload_json(payload: dict) -> str:
    """The payload as compact JSON, safe inside an HTML ``<script>`` element (``</`` written ``<\\/``).

    Parameters
    ----------
    payload : dict
        What [`viz_payload`][mlm_book.lab.viz_payload] returns (any dict of JSON values).

    Raises
    ------
    TypeError
        If ``payload`` is not a dict or holds a value JSON cannot write.
    ValueError
        If ``payload`` holds NaN or an infinity.

    Examples
    --------
    >>> payload_json({"a": "</script>"})
    '{"a":"<\\\\/script>"}'
    """
    if not isinstance(payload, dict):
        raise TypeError(f"payload must be a dict, got {type(payload).__name__}")
    try:
        text = json.dumps(payload, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
    except ValueError as error:
        raise ValueError(f"payload must hold only finite numbers: {error}") from None
    except TypeError as error:
        raise TypeError(f"payload must hold only JSON values: {error}") from None
    return text.replace("</", "<\\/")
