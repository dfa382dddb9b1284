r"""Chapter 8, sentence pairs: does one filing sentence entail, contradict or say nothing about another?

The world (fact sentences of fresh corpora with falls written in), the task (entails,
contradicts, neutral) and the fine-tunings are the artefact floor's
([`mlm_book.artefacts.inference`][mlm_book.artefacts.inference], whose text describes them);
this module reads the runs: accuracies, _recalls, confusions by kind of pair, the errors by
word overlap, the tables and figure the chapter shows, and the claims it registers.
"""

from __future__ import annotations


import numpy as np

# the world and the runs live on the artefact floor; the chapter (and its readers) take them from here too
from mlm_book.artefacts.inference import (  # noqa: F401
    DOCUMENTS,
    FALL_SHARE,
    FALLING_WORDS,
    KIND_SHARES,
    KINDS,
    LABELLED_PAIRS,
    MAX_PAIRS,
    POOL_SEED,
    RELATION_OF_KIND,
    RELATIONS,
    SCHEDULES,
    SEEDS,
    SOURCES,
    TEST_PAIRS,
    TEST_SEED,
    FactPairs,
    FactSentences,
    book_run,
    fact_pairs,
    fact_sentences,
    held_out_pairs,
    run_predictions,
    with_falls,
    word_overlap,
)
from mlm_book.ledger import Claim, over_seeds
from mlm_book.validation import check_positive_int
from mlm_book.report import seed_band

__all__ = ["company_blind_predictions", "direction_agreement", "accuracies", "answer_shares", "confusion",
           "accuracy_table", "kind_table", "error_by_overlap", "error_table", "figure_inference", "CLAIMS"]


def _check_run(source, schedule) -> None:
    for value, name, options in ((source, "source", SOURCES), (schedule, "schedule", SCHEDULES)):
        if not isinstance(value, str):
            raise TypeError(f"{name} must be a str, got {type(value).__name__}")
        if value not in options:
            raise ValueError(f"{name} must be one of {list(options)}, got {value!r}")


def _predictions(source: str, schedule: str) -> tuple[np.ndarray, ...]:
    """Test predictions (class indices into `RELATIONS`) of each seed's run, the book's first (cached; run on a miss).

    Examples
    --------
    >>> [p.shape for p in _predictions("nsp", "200 steps")][:2]  # doctest: +BOOK
    [(3000,), (3000,)]
    """
    _check_run(source, schedule)
    return tuple(np.array(run_predictions(book_run(source, schedule, seed))["predicted"]) for seed in SEEDS)


# ----------------------------------------------------------------------------- reading the runs
def accuracies(source: str, schedule: str) -> np.ndarray:
    """Test accuracy of each seed's run, shape (seeds,)."""
    labels = held_out_pairs().label
    return np.array([np.mean(p == labels) for p in _predictions(source, schedule)])


def _recalls(source: str, schedule: str) -> np.ndarray:
    """Share of each relation's test pairs classified correctly, shape (seeds, 3)."""
    labels = held_out_pairs().label
    return np.array([[np.mean(p[labels == r] == r) for r in range(len(RELATIONS))]
                     for p in _predictions(source, schedule)])


def answer_shares(source: str, schedule: str) -> np.ndarray:
    """Share of the test pairs given each answer, per seed, shape (seeds, 3)."""
    return np.array([np.bincount(p, minlength=len(RELATIONS)) / p.size for p in _predictions(source, schedule)])


def confusion(source: str, schedule: str) -> np.ndarray:
    """Share of each kind's test pairs given each label, pooled over the seeds, shape (4 kinds, 3 relations).

    Examples
    --------
    >>> np.allclose(confusion("nsp", "1000 steps").sum(axis=1), 1.0)  # doctest: +BOOK
    True
    """
    kind = held_out_pairs().kind
    counts = np.zeros((len(KINDS), len(RELATIONS)))
    for p in _predictions(source, schedule):
        np.add.at(counts, (kind, p), 1.0)
    return counts / counts.sum(axis=1, keepdims=True)


def company_blind_predictions() -> np.ndarray:
    """The test answers of a reader that compares aspects and directions and never looks at the company.

    Same aspect: entails if the directions agree, contradicts if not; another aspect: neutral.
    It is right on every pair but the other-company ones, which make up a sixth of the draws.

    Examples
    --------
    >>> pairs_ = held_out_pairs()
    >>> wrong = company_blind_predictions() != pairs_.label
    >>> bool(np.all(pairs_.kind[wrong] == KINDS.index("other company")))
    True
    """
    facts, pairs_ = fact_sentences(TEST_SEED), held_out_pairs()
    same_aspect = facts.aspect[pairs_.a] == facts.aspect[pairs_.b]
    agree = facts.direction[pairs_.a] == facts.direction[pairs_.b]
    return np.where(same_aspect, np.where(agree, 0, 1), 2)


def direction_agreement(source: str, schedule: str) -> np.ndarray:
    """On the other-company test pairs: the share called *entails* when the two directions agree, and *contradicts* when they differ, shape (seeds, 2).

    Both near one means the classifier answers as the company-blind reader does.
    """
    facts, pairs_ = fact_sentences(TEST_SEED), held_out_pairs()
    other = pairs_.kind == KINDS.index("other company")
    agree = facts.direction[pairs_.a] == facts.direction[pairs_.b]
    return np.array([[np.mean(p[other & agree] == 0), np.mean(p[other & ~agree] == 1)]
                     for p in _predictions(source, schedule)])


def accuracy_table():
    """Test accuracy by start and schedule, book seed (mean ± sd over seeds)."""
    from mlm_book.report import table
    rows = [[SOURCES[source], *(seed_band(accuracies(source, schedule)) for schedule in SCHEDULES)]
            for source in SOURCES]
    return table(["start", *(f"fine-tuned {name}" for name in SCHEDULES)], rows)


def kind_table(source: str = "nsp", schedule: str = "1000 steps"):
    """Per kind of pair: its word overlap and how the runs label it (shares pooled over seeds)."""
    from mlm_book.report import table
    _check_run(source, schedule)
    overlap = word_overlap(fact_sentences(TEST_SEED), held_out_pairs())
    shares = confusion(source, schedule)
    kind = held_out_pairs().kind
    errors = error_by_overlap(source, schedule)
    rows = [[name, RELATIONS[RELATION_OF_KIND[k]], f"{overlap[kind == k].mean():.2f}",
             *(f"{100 * shares[k, r]:.0f} %" for r in range(len(RELATIONS))),
             f"{100 * errors[k, 0]:.0f} % / {100 * errors[k, 1]:.0f} %"] for k, name in enumerate(KINDS)]
    return table(["B …", "gold", "word overlap", *(f"called {name}" for name in RELATIONS),
                  "wrong: low / high overlap"], rows)


def error_by_overlap(source: str, schedule: str) -> np.ndarray:
    """Error rate of each kind's test pairs at or below / above that kind's median word overlap, mean over seeds, shape (4, 2)."""
    _check_run(source, schedule)
    pairs_ = held_out_pairs()
    overlap = word_overlap(fact_sentences(TEST_SEED), pairs_)
    out = np.zeros((len(KINDS), 2))
    for k in range(len(KINDS)):
        mine = pairs_.kind == k
        high = overlap > np.median(overlap[mine])
        for j, part in enumerate((mine & ~high, mine & high)):
            out[k, j] = np.mean([np.mean(p[part] != pairs_.label[part]) for p in _predictions(source, schedule)])
    return out


def error_table(source: str = "nsp", schedule: str = "1000 steps", per_kind: int = 2):
    """The book seed's first ``per_kind`` wrong answers of each kind: the two sentences, gold and predicted."""
    from mlm_book.report import table
    _check_run(source, schedule)
    per_kind = check_positive_int(per_kind, "per_kind")
    facts, pairs_ = fact_sentences(TEST_SEED), held_out_pairs()
    predicted = _predictions(source, schedule)[0]
    rows = []
    for k, name in enumerate(KINDS):
        wrong = np.flatnonzero((pairs_.kind == k) & (predicted != pairs_.label))[:per_kind]
        rows += [[f"A: {facts.words[pairs_.a[i]]}<br>B: {facts.words[pairs_.b[i]]}",
                  f"{RELATIONS[pairs_.label[i]]}<br>(B {name})", RELATIONS[predicted[i]]] for i in wrong]
    return table(["pair", "gold", "predicted"], rows)


def figure_inference():
    """Accuracy by start and schedule (a dot per seed), and how the longer pre-trained runs label each kind of pair.

    Returns
    -------
    DescribedFigure
        Bars of accuracy (mean over seeds, a dot per seed) and a heat map of the answers by kind
        of pair, with an alt text giving the bars and each kind's share of right answers.

    Examples
    --------
    >>> import matplotlib.pyplot as plt  # doctest: +BOOK
    >>> drawn = figure_inference()
    >>> len(drawn.figure.axes) >= 2, "B restates: called entails" in drawn.alt
    (True, True)
    >>> plt.close(drawn.figure)
    """
    from mlm_book.figures import PALETTE, WIDE, describe, subplots
    fig, (left, right) = subplots(1, 2, width=WIDE, height=4.0, gridspec_kw={"width_ratios": [1, 1.25]})
    colors = {"nsp": PALETTE["blue"], "scratch": PALETTE["grey"]}
    width = 0.38
    values = {(source, schedule): accuracies(source, schedule) for source in SOURCES for schedule in SCHEDULES}
    for k, source in enumerate(SOURCES):
        for j, schedule in enumerate(SCHEDULES):
            x = j + (k - 0.5) * width
            left.bar(x, values[source, schedule].mean(), width=width * 0.9, color=colors[source],
                     label=SOURCES[source] if j == 0 else None)
            left.plot(np.full(len(SEEDS), x), values[source, schedule], ls="none", marker=".",
                      color=PALETTE["black"])
    left.axhline(1 / 3, color=PALETTE["black"], ls="--", lw=1, label="chance (1/3)")
    left.set_xticks(range(len(SCHEDULES)), [f"fine-tuned {name}" for name in SCHEDULES])
    left.set_ylim(0, 1)
    left.set_ylabel(f"test accuracy (bars: mean of {len(SEEDS)} seeds)")
    left.legend(loc="upper center", bbox_to_anchor=(0.5, -0.12), ncols=2, frameon=False)  # off the bars and dots
    shares = confusion("nsp", "1000 steps")
    image = right.imshow(shares, vmin=0, vmax=1, cmap="Blues", aspect="auto")
    for (i, j), value in np.ndenumerate(shares):
        right.text(j, i, f"{100 * value:.0f} %", ha="center", va="center",
                   color="white" if value > 0.6 else PALETTE["black"])
    right.set_xticks(range(len(RELATIONS)), [f"called {name}" for name in RELATIONS])
    right.set_yticks(range(len(KINDS)), [f"B {name}" for name in KINDS])
    right.set_title("pre-trained, 1000 steps (all seeds)")
    fig.colorbar(image, ax=right, fraction=0.05)
    short, long = SCHEDULES
    bars = {schedule: " and ".join(f"{values[source, schedule].mean():.2f}" for source in SOURCES)
            for schedule in SCHEDULES}
    seeds = np.concatenate([values[source, short] for source in SOURCES])
    mostly_wrong = [kind for k, kind in enumerate(KINDS) if shares[k, RELATION_OF_KIND[k]] < 0.5]
    alt = (f"Left, bars of test accuracy (mean of {len(SEEDS)} seeds) for the pre-trained and the untrained start "
           f"under the two schedules, with a dot per seed and a dashed line at chance, 1/3: {bars[short]} after "
           f"{short}, with single runs scattered from {seeds.min():.2f} to {seeds.max():.2f}, and {bars[long]} "
           f"after {long}. Right, a heat map of shares for the pre-trained runs after {long}, pooled over seeds, "
           f"one row per kind of pair and one column per answer, each cell printed as a percentage; the right "
           f"answer's share by kind: "
           + "; ".join(f"B {kind}: called {RELATIONS[RELATION_OF_KIND[k]]} "
                       f"{100 * shares[k, RELATION_OF_KIND[k]]:.0f} %" for k, kind in enumerate(KINDS))
           + "." + (f" Only the B {mostly_wrong[0]} row is mostly wrong." if len(mostly_wrong) == 1 else ""))
    caption = ("Sentence-pair inference: accuracy by start and schedule, and what the longer pre-trained runs "
               "answer for each kind of pair (pooled over seeds).")
    return describe(fig, alt=alt, caption=caption)


# ----------------------------------------------------------------------------- claims
def _relation_recalls() -> dict:
    values = _recalls("nsp", "1000 steps")
    rows = [tuple(float(v) for v in row) for row in values]
    return over_seeds(rows, int(np.sum(values.min(axis=1) >= 0.5)), margins=values.min(axis=1) - 0.5)


def _pair_accuracy() -> dict:
    values = accuracies("nsp", "1000 steps")
    return over_seeds([float(v) for v in values], int(np.sum(values >= 0.5)), margins=values - 0.5)


CLAIMS = (
    Claim("D-30", f"A [CLS] head classifies sentence pairs: test accuracy on three balanced relations, "
          f"pre-trained encoder fine-tuned 1000 steps ({len(SEEDS)} seeds)", seed="—",
          rule="≥ 0.5 (chance 1/3)", compute=_pair_accuracy, accept=lambda value: True, expected="reproduced",
          section="two-sentences-one-verdict-entailment"),
    Claim("D-31", f"Natural language inference: recall of entails / contradicts / neutral, pre-trained encoder "
          f"fine-tuned 1000 steps ({len(SEEDS)} seeds)", seed="—", rule="every relation ≥ 0.5",
          compute=_relation_recalls, accept=lambda value: True, expected="not reproduced",
          section="two-sentences-one-verdict-entailment"),
)
