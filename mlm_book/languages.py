r"""A family of HMM languages over one joint vocabulary, and the multilingual mixture that samples them.

Language $k$ of a family of $K$ is the book's HMM ([`mlm_book.hmm`][mlm_book.hmm]) with its 24 own tokens
relabelled to ids $24k \dots 24k + 23$; every language writes the shared token $w$ (the last id, as
languages share numerals and names). Each is a [`HiddenMarkovLanguage`][mlm_book.hmm.HiddenMarkovLanguage]
over the joint vocabulary of $24K + 1$ tokens that gives zero probability to the other languages' tokens,
so each has its own exact optimum under any corruption channel
([`mlm_book.channel.exact_posterior`][mlm_book.channel.exact_posterior]).

The languages share chapter 1's hidden dynamics unless the first (the large one) is given dynamics of its
own ([`family`][mlm_book.languages.family]'s ``first``): a transition rule the others lack.

A mixture draws each sentence's language with probability $q_k \propto p_k^\alpha$
([`sampling_shares`][mlm_book.languages.sampling_shares]) and then the sentence from that language
([`mixture_sample`][mlm_book.languages.mixture_sample], [`mixture_source`][mlm_book.languages.mixture_source]).
"""

from __future__ import annotations

import numpy as np

from mlm_book.hmm import MAX_SAMPLE_ENTRIES, HiddenMarkovLanguage, HMMConfig, build_hmm, check_hmm, sample
from mlm_book.validation import (as_float_array, check_bool, check_generator, check_instance, check_positive_int,
                                 check_real)

__all__ = ["MAX_LANGUAGES", "MAX_LENGTH", "check_weights", "sampling_shares", "family", "check_family",
           "mixture_sample", "mixture_source", "own_tokens"]

MAX_LANGUAGES = 64
"""Most languages a family holds (the joint vocabulary then has 1537 tokens)."""
MAX_LENGTH = 4096
"""Longest sentence the mixture samples (the batch is then bounded so that the sampler's tables stay below
`mlm_book.hmm.MAX_SAMPLE_ENTRIES`)."""
_TOLERANCE = 1e-9


def check_weights(weights, name: str = "weights", *, allow_zero: bool = True) -> np.ndarray:
    """``weights`` as a 1-D float array of non-negative (or positive) finite values summing to one within 1e-9.

    Raises
    ------
    TypeError
        If ``weights`` is not numeric or ``allow_zero`` not a bool.
    ValueError
        If it is empty, holds a negative, non-finite (or, with ``allow_zero=False``, zero) value, or does not
        sum to one.

    Examples
    --------
    >>> check_weights([0.25, 0.75]).tolist()
    [0.25, 0.75]
    >>> check_weights([0.7, 0.2], "shares")
    Traceback (most recent call last):
    ...
    ValueError: shares must sum to 1, got 0.9
    """
    allow_zero = check_bool(allow_zero, "allow_zero")
    values = as_float_array(weights, name, ndim=1)
    if values.size < 1 or not np.all(np.isfinite(values)) or np.any(values < 0):
        raise ValueError(f"{name} must hold at least one non-negative finite value, got {values.tolist()[:8]}")
    if not allow_zero and np.any(values == 0):
        raise ValueError(f"{name} must be positive, got {values.tolist()[:8]}")
    if abs(values.sum() - 1.0) > _TOLERANCE:
        raise ValueError(f"{name} must sum to 1, got {values.sum():.12g}")
    return values / values.sum()


def sampling_shares(shares, alpha: float) -> np.ndarray:
    r"""$q_k = p_k^\alpha / \sum_j p_j^\alpha$ for data shares ``shares`` (positive, summing to one), $\alpha \ge 0$.

    Raises
    ------
    TypeError
        If ``shares`` or ``alpha`` is not numeric.
    ValueError
        If a share is not positive, the shares do not sum to one, or ``alpha`` is negative or not finite.

    Examples
    --------
    >>> sampling_shares([0.7, 0.2, 0.07, 0.03], 0.3).round(3).tolist()
    [0.388, 0.267, 0.195, 0.151]
    >>> sampling_shares([0.9, 0.1], -1.0)
    Traceback (most recent call last):
    ...
    ValueError: alpha must be a finite number in [0.0, inf], got -1.0
    """
    p = check_weights(shares, "shares", allow_zero=False)
    alpha = check_real(alpha, "alpha", low=0.0)
    logits = alpha * np.log(p)
    q = np.exp(logits - logits.max())
    return q / q.sum()


def family(n_languages: int, config: HMMConfig | None = None, *, first: HMMConfig | None = None) -> tuple:
    """``n_languages`` HMM languages over one joint vocabulary: language k writes ids ``24k … 24k + 23``, all write w.

    Parameters
    ----------
    n_languages : int
        $K$, from 1 to `MAX_LANGUAGES`.
    config : HMMConfig, optional
        The shared dynamics and emission pattern (default: the book's).
    first : HMMConfig, optional
        Dynamics of the first language alone (the others keep ``config``'s): a rule the others lack. It must
        give the same number of states and the same emission pattern, which every ``HMMConfig`` does.

    Returns
    -------
    tuple of HiddenMarkovLanguage
        Each over the $24K + 1$ joint tokens, [MASK] not included.

    Raises
    ------
    TypeError, ValueError
        If ``n_languages`` is not an integer in [1, 64], or ``config`` / ``first`` is not an ``HMMConfig``.

    Examples
    --------
    >>> languages = family(4)
    >>> len(languages), languages[0].vocab_size, languages[2].token_names[48], languages[2].token_names[-1]
    (4, 97, 'L3:a0', 'w')
    >>> reversed_cycle = family(2, first=HMMConfig(light_forward=0.2))
    >>> bool(np.allclose(reversed_cycle[0].transition, reversed_cycle[1].transition))
    False
    >>> family(0)
    Traceback (most recent call last):
    ...
    ValueError: n_languages must be an integer >= 1, got 0
    """
    n_languages = check_positive_int(n_languages, "n_languages")
    if n_languages > MAX_LANGUAGES:
        raise ValueError(f"n_languages must be at most {MAX_LANGUAGES}, got {n_languages}")
    config = HMMConfig() if config is None else check_instance(config, "config", HMMConfig)
    base = check_hmm(build_hmm(config))
    firsts = base if first is None else check_hmm(build_hmm(check_instance(first, "first", HMMConfig)))
    own = base.vocab_size - 1                      # the base HMM's own tokens; w is its last id
    vocab = own * n_languages + 1
    names = tuple([f"L{j + 1}:{name}" for j in range(n_languages) for name in base.token_names[:own]] + ["w"])
    languages = []
    for k in range(n_languages):
        source = firsts if k == 0 else base
        emission = np.zeros((source.n_states, vocab))
        emission[:, own * k: own * (k + 1)] = source.emission[:, :own]
        emission[:, -1] = source.emission[:, source.shared_token]
        languages.append(HiddenMarkovLanguage(
            transition=source.transition, emission=emission, initial=source.initial, regime=source.regime,
            sense_states=source.sense_states, shared_token=vocab - 1, token_names=names, config=source.config))
    return tuple(languages)


def check_family(languages, name: str = "languages") -> tuple:
    """``languages`` as a non-empty tuple of HMM languages with one state count and one vocabulary.

    Raises
    ------
    TypeError
        If it is not a sequence of ``HiddenMarkovLanguage``.
    ValueError
        If it is empty, or two languages differ in their number of hidden states or their vocabulary.

    Examples
    --------
    >>> len(check_family(family(2)))
    2
    >>> from mlm_book.hmm import default_hmm
    >>> check_family((family(2)[0], default_hmm()))
    Traceback (most recent call last):
    ...
    ValueError: languages must share one vocabulary: languages[1] has 25 tokens, languages[0] 49
    """
    if not isinstance(languages, (tuple, list)) or not languages:
        raise TypeError(f"{name} must be a non-empty tuple of HiddenMarkovLanguage, got {type(languages).__name__}")
    languages = tuple(languages)
    for k, language in enumerate(languages):
        check_instance(language, f"{name}[{k}]", HiddenMarkovLanguage)
    head = languages[0]
    for k, language in enumerate(languages[1:], start=1):
        if language.n_states != head.n_states:
            raise ValueError(f"{name} must share their number of hidden states: {name}[{k}] has "
                             f"{language.n_states}, {name}[0] {head.n_states}")
        if language.vocab_size != head.vocab_size or language.token_names != head.token_names:
            raise ValueError(f"{name} must share one vocabulary: {name}[{k}] has {language.vocab_size} tokens, "
                             f"{name}[0] {head.vocab_size}")
    return languages


def own_tokens(languages, k: int) -> np.ndarray:
    """The token ids that language ``k`` alone writes (its own tokens, w excluded).

    Examples
    --------
    >>> own_tokens(family(3), 1)[[0, -1]].tolist()
    [24, 47]
    """
    languages = check_family(languages)
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or not 0 <= k < len(languages):
        raise ValueError(f"k must be a language index in [0, {len(languages)}), got {k!r}")
    writes = np.array([language.emission.max(axis=0) > 0 for language in languages])
    return np.flatnonzero(writes[k] & (writes.sum(axis=0) == 1))


def _compact(languages) -> tuple[np.ndarray, list, np.ndarray]:
    """Each language over the tokens it writes: supports (K, W), the distinct compact HMMs, and each one's group."""
    writes = [np.flatnonzero(language.emission.max(axis=0) > 0) for language in languages]
    if len({w.size for w in writes}) != 1:
        raise ValueError("languages must each write as many tokens for the mixture sampler, got "
                         f"{sorted({w.size for w in writes})}")
    supports = np.array(writes)
    groups, members, index = {}, [], np.empty(len(languages), dtype=np.int64)
    for k, (language, support) in enumerate(zip(languages, writes)):
        emission = language.emission[:, support]
        key = (language.transition.tobytes(), emission.tobytes())
        if key not in groups:
            shared = int(np.flatnonzero(support == language.shared_token)[0])
            groups[key] = len(members)
            members.append(HiddenMarkovLanguage(
                transition=language.transition, emission=emission, initial=language.initial,
                regime=language.regime, sense_states=language.sense_states, shared_token=shared,
                token_names=tuple(language.token_names[t] for t in support)))
        index[k] = groups[key]
    return supports, members, index


def mixture_sample(languages, weights, batch: int, length: int, rng: np.random.Generator):
    """``batch`` sentences of the mixture: each one's language drawn with probabilities ``weights``.

    Languages that differ only by the names of their tokens are sampled in one call over the tokens each
    writes, then relabelled.

    Parameters
    ----------
    languages : tuple of HiddenMarkovLanguage
        A family (see [`check_family`][mlm_book.languages.check_family]); each writes as many tokens.
    weights : array_like of float, shape (K,)
        Sampling shares $q_k$, non-negative, summing to one (a zero leaves a language out).
    batch, length : int
        Sentences and tokens per sentence: ``length`` at most `MAX_LENGTH`, ``batch`` at most what keeps the
        sampler's tables below ``MAX_SAMPLE_ENTRIES`` (about 400,000 sentences of 24 tokens).
    rng : numpy.random.Generator

    Returns
    -------
    language : ndarray of int64, shape (batch,)
        Each sentence's language.
    states, tokens : ndarray of int64, shape (batch, length)

    Raises
    ------
    TypeError, ValueError
        If an argument has the wrong type or range, or ``weights`` does not hold one weight per language.

    Examples
    --------
    >>> language, states, tokens = mixture_sample(family(2), [0.5, 0.5], 6, 4, np.random.default_rng(0))
    >>> tokens.shape, sorted(set(language.tolist())) == [0, 1]
    ((6, 4), True)
    >>> mixture_sample(family(2), [1.0], 6, 4, np.random.default_rng(0))
    Traceback (most recent call last):
    ...
    ValueError: weights must hold one weight per language (2), got 1
    """
    languages = check_family(languages)
    q = check_weights(weights)
    if q.size != len(languages):
        raise ValueError(f"weights must hold one weight per language ({len(languages)}), got {q.size}")
    length = check_positive_int(length, "length", maximum=MAX_LENGTH)
    compact = _compact(languages)
    batch = check_positive_int(batch, "batch", maximum=_max_batch(compact, length))
    rng = check_generator(rng)
    return _draw(compact, q, batch, length, rng)


def _max_batch(compact, length: int) -> int:
    """Most sentences of ``length`` one draw may hold: the sampler's tables stay below ``MAX_SAMPLE_ENTRIES``."""
    width = max(max(member.n_states, member.vocab_size) for member in compact[1])
    return max(1, MAX_SAMPLE_ENTRIES // (length * width))


def _draw(compact, q: np.ndarray, batch: int, length: int, rng: np.random.Generator):
    supports, members, index = compact
    language = rng.choice(q.size, size=batch, p=q)
    states = np.empty((batch, length), dtype=np.int64)
    tokens = np.empty((batch, length), dtype=np.int64)
    group = index[language]
    for g in np.unique(group):
        rows = np.flatnonzero(group == g)
        states[rows], local = sample(members[g], rows.size, length, rng)
        tokens[rows] = supports[language[rows][:, None], local]
    return language.astype(np.int64), states, tokens


def mixture_source(languages, weights, length: int):
    """``source(batch, rng) -> tokens (batch, length)``: the mixture as a training source for `mlm_book.nn.train`.

    Examples
    --------
    >>> source = mixture_source(family(2), [0.0, 1.0], 5)
    >>> tokens = source(3, np.random.default_rng(1))
    >>> tokens.shape, bool(np.all((tokens >= 24)))
    ((3, 5), True)
    """
    languages = check_family(languages)
    q = check_weights(weights)
    if q.size != len(languages):
        raise ValueError(f"weights must hold one weight per language ({len(languages)}), got {q.size}")
    length = check_positive_int(length, "length", maximum=MAX_LENGTH)
    compact = _compact(languages)

    def source(batch, rng):
        return _draw(compact, q, batch, length, rng)[2]

    return source
