r"""A polyseme's PMI is a log-mixture of its senses' PMIs, and a static vector is capped.

Let a word $w$ have senses $s_1, \dots, s_K$ with shares $\pi_k = P(s_k \mid w)$, and let
a context $c$ depend on an occurrence of $w$ only through its sense. Proposition 1 says

$$\operatorname{PMI}(w, c) = \log \sum_k \pi_k \exp \operatorname{PMI}(s_k, c),$$

so $\max_k(\log \pi_k + \operatorname{PMI}(s_k, c)) \le \operatorname{PMI}(w, c) \le
\max_k \operatorname{PMI}(s_k, c)$, and the lower bound is within $\log K$ of the truth.
Corollary 1 (the static cap): a classifier that reads one vector per type gives every
occurrence of $w$ the same label, so its sense accuracy is the share of that label, at
most $\max_k \pi_k$.

On the two-regime HMM ([`mlm_book.hmm`][mlm_book.hmm]) the senses of the shared token are the two
heavy states, and a context is the token at a fixed offset from the occurrence: the
next token (offset $+1$), the previous one ($-1$), the one two to the right ($+2$), ...
Here $\operatorname{PMI}(w, c)$ is computed from the enumerated token joint
([`mlm_book.hmm.enumerate_joint`][mlm_book.hmm.enumerate_joint]), without any reference to senses, and
$\operatorname{PMI}(s_k, c)$ from the hidden chain, so the identity's residual is a real
check of the Markov property and the algebra.

Examples
--------
>>> from mlm_book.hmm import default_hmm
>>> hmm = default_hmm()
>>> result = polyseme_pmi(hmm, offset=1)
>>> result.identity_residual < 1e-12        # Proposition 1's identity, next-token context
True
>>> round(static_cap(hmm), 3)               # Corollary 1's cap for w
0.509
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from mlm_book.hmm import HiddenMarkovLanguage, check_hmm, enumerate_joint
from mlm_book.validation import as_float_array, as_int_array, check_distribution, check_probability, check_tokens

__all__ = [
    "sense_shares",
    "static_cap",
    "context_given_state",
    "log_mixture",
    "proposition1_bounds",
    "PolysemePMI",
    "polyseme_pmi",
    "StaticClassifierOutcome",
    "classify_static",
    "sense_screening_residual",
]

#: Largest |offset| for which [`polyseme_pmi`][mlm_book.pmi.polyseme_pmi] enumerates the token joint (length |offset| + 1 <= 4).
MAX_OFFSET = 3


def sense_shares(hmm: HiddenMarkovLanguage) -> np.ndarray:
    r"""Shares $\pi_k = P(\text{sense } k \mid w)$ of the shared token's two senses.

    $\pi_k \propto \pi(h_k)\, P(w \mid h_k)$ with $\pi$ the stationary distribution and
    $h_k$ the sense states; with equal emission probabilities this is
    $\pi(h_k) / (\pi(h_a) + \pi(h_b))$.

    Parameters
    ----------
    hmm : HiddenMarkovLanguage
        The language.

    Returns
    -------
    ndarray, shape (2,)
        Shares of sense a and sense b; they sum to one.

    Examples
    --------
    >>> from mlm_book.hmm import default_hmm
    >>> sense_shares(default_hmm()).round(3)
    array([0.491, 0.509])
    """
    hmm = check_hmm(hmm)
    states = list(hmm.sense_states)
    weight = hmm.initial[states] * hmm.emission[states, hmm.shared_token]
    return weight / weight.sum()


def static_cap(hmm: HiddenMarkovLanguage) -> float:
    r"""Corollary 1's cap $\max_k \pi_k$ on the sense accuracy of any static classifier.

    Parameters
    ----------
    hmm : HiddenMarkovLanguage
        The language.

    Returns
    -------
    float

    Examples
    --------
    >>> from mlm_book.hmm import default_hmm
    >>> round(static_cap(default_hmm()), 3)
    0.509
    """
    return float(sense_shares(hmm).max())


def context_given_state(hmm: HiddenMarkovLanguage, offset: int) -> np.ndarray:
    r"""$P(x_{t+d} = c \mid z_t = s)$ for every state $s$ and token $c$, at offset $d \ne 0$.

    For $d > 0$ this is $(T^d E)_{sc}$. For $d < 0$ the stationary chain is run backwards
    with the reversed kernel $R_{sr} = \pi_r T_{rs} / \pi_s$, giving $(R^{|d|} E)_{sc}$.

    Parameters
    ----------
    hmm : HiddenMarkovLanguage
        The language (its initial distribution is stationary).
    offset : int
        The context's position relative to the occurrence; nonzero.

    Returns
    -------
    ndarray, shape (S, V)
        Each row is a distribution over context tokens.

    Raises
    ------
    ValueError
        If ``offset`` is zero.

    Examples
    --------
    >>> from mlm_book.hmm import default_hmm
    >>> p = context_given_state(default_hmm(), -1)
    >>> p.shape, bool(np.allclose(p.sum(axis=1), 1))
    ((8, 25), True)
    """
    hmm = check_hmm(hmm)
    offset = _check_offset(offset, limit=None)
    if offset > 0:
        kernel = hmm.transition
    else:
        kernel = _reversed_transition(hmm)
    return np.linalg.matrix_power(kernel, abs(offset)) @ hmm.emission


def _reversed_transition(hmm: HiddenMarkovLanguage) -> np.ndarray:
    r"""$R_{sr} = \pi_r T_{rs} / \pi_s$: the stationary chain's kernel run backwards in time."""
    return (hmm.transition * hmm.initial[:, None]).T / hmm.initial[:, None]


def _check_offset(offset, limit: int | None) -> int:
    if isinstance(offset, bool) or not isinstance(offset, (int, np.integer)):
        raise TypeError(f"offset must be an integer, got {type(offset).__name__}")
    offset = int(offset)
    if offset == 0:
        raise ValueError("offset must be nonzero (the context is another position)")
    if limit is not None and abs(offset) > limit:
        raise ValueError(f"offset must be within +-{limit} (the token joint is enumerated), got {offset}")
    return offset


def log_mixture(shares, pmi_senses) -> np.ndarray:
    r"""Proposition 1's right-hand side $\log \sum_k \pi_k \exp \operatorname{PMI}(s_k, c)$.

    Computed with the log-sum-exp shift, so large PMIs do not overflow.

    Parameters
    ----------
    shares : array_like, shape (K,)
        Sense shares $\pi_k$ (a distribution).
    pmi_senses : array_like, shape (K, C)
        $\operatorname{PMI}(s_k, c)$ for $C$ context values, in nats.

    Returns
    -------
    ndarray, shape (C,)

    Examples
    --------
    >>> log_mixture([0.5, 0.5], [[0.0, 1.0], [0.0, -1.0]]).round(4)
    array([0.    , 0.4338])
    """
    shares, pmi_senses = _check_shares_and_pmi(shares, pmi_senses)
    terms = np.log(shares)[:, None] + pmi_senses
    top = terms.max(axis=0)
    return top + np.log(np.exp(terms - top).sum(axis=0))


def proposition1_bounds(shares, pmi_senses) -> tuple[np.ndarray, np.ndarray]:
    r"""Proposition 1's lower and upper bounds on $\operatorname{PMI}(w, c)$.

    Lower: $\max_k(\log \pi_k + \operatorname{PMI}(s_k, c))$; upper: $\max_k \operatorname{PMI}(s_k, c)$.

    Parameters
    ----------
    shares : array_like, shape (K,)
        Sense shares $\pi_k$.
    pmi_senses : array_like, shape (K, C)
        Sense PMIs in nats.

    Returns
    -------
    lower : ndarray, shape (C,)
    upper : ndarray, shape (C,)

    Examples
    --------
    >>> lower, upper = proposition1_bounds([0.5, 0.5], [[0.0, 1.0], [0.0, -1.0]])
    >>> lower.round(4), upper
    (array([-0.6931,  0.3069]), array([0., 1.]))
    """
    shares, pmi_senses = _check_shares_and_pmi(shares, pmi_senses)
    lower = (np.log(shares)[:, None] + pmi_senses).max(axis=0)
    return lower, pmi_senses.max(axis=0)


def _check_shares_and_pmi(shares, pmi_senses) -> tuple[np.ndarray, np.ndarray]:
    shares = check_distribution(shares, "shares", strictly_positive=True)
    if shares.ndim != 1:
        raise ValueError(f"shares must be a vector, got shape {shares.shape}")
    pmi_senses = as_float_array(pmi_senses, "pmi_senses", ndim=2)
    if pmi_senses.shape[0] != shares.shape[0]:
        raise ValueError(f"pmi_senses must have one row per sense ({shares.shape[0]}), got shape {pmi_senses.shape}")
    return shares, pmi_senses


@dataclass(frozen=True, eq=False)
class PolysemePMI:
    r"""Proposition 1 on the HMM for the context "the token at ``offset``".

    Parameters
    ----------
    offset : int
        Position of the context token relative to the occurrence of $w$.
    shares : ndarray, shape (2,)
        Sense shares $\pi_k$.
    pmi_word : ndarray, shape (V,)
        $\operatorname{PMI}(w, c) = \log P(c \mid w) / P(c)$ for every context token $c$,
        from the enumerated token joint.
    pmi_senses : ndarray, shape (2, V)
        $\operatorname{PMI}(s_k, c) = \log P(c \mid z_t = h_k) / P(c)$, from the chain.

    Raises
    ------
    TypeError
        If ``offset`` is not an integer or an array holds something else than real numbers.
    ValueError
        If ``offset`` is zero, ``shares`` is not a strictly positive distribution over at least
        two senses, a PMI is NaN or infinite, or the shapes disagree (one row of ``pmi_senses``
        per share, one column per entry of ``pmi_word``).

    Examples
    --------
    >>> result = PolysemePMI(offset=1, shares=np.array([0.5, 0.5]), pmi_word=np.array([0.0, np.log(1.5)]),
    ...                      pmi_senses=np.log([[1.0, 1.0], [1.0, 2.0]]))
    >>> result.identity_residual < 1e-15, result.sense_gap_token
    (True, 1)
    """

    offset: int
    shares: np.ndarray
    pmi_word: np.ndarray
    pmi_senses: np.ndarray

    def __post_init__(self):
        object.__setattr__(self, "offset", _check_offset(self.offset, limit=None))
        shares = check_distribution(self.shares, "shares", strictly_positive=True)
        if shares.ndim != 1 or shares.size < 2:
            raise ValueError(f"shares must be a vector of at least two senses' shares, got shape {shares.shape}")
        pmi_word = as_float_array(self.pmi_word, "pmi_word", ndim=1)
        pmi_senses = as_float_array(self.pmi_senses, "pmi_senses", ndim=2)
        if pmi_word.size == 0:
            raise ValueError("pmi_word must hold one PMI per context token, got none")
        if pmi_senses.shape != (shares.size, pmi_word.size):
            raise ValueError(f"pmi_senses must have shape (senses, contexts) = ({shares.size}, {pmi_word.size}) "
                             f"for the shares and pmi_word given, got {pmi_senses.shape}")
        # Stored as the checked float arrays (the same objects when float64 arrays were given).
        for name, value in (("shares", shares), ("pmi_word", pmi_word), ("pmi_senses", pmi_senses)):
            object.__setattr__(self, name, value)

    @property
    def mixture(self) -> np.ndarray:
        """Right-hand side of the identity, shape (V,)."""
        return log_mixture(self.shares, self.pmi_senses)

    @property
    def identity_residual(self) -> float:
        """Largest $|\\operatorname{PMI}(w, c) - \\log \\sum_k \\pi_k e^{\\operatorname{PMI}(s_k, c)}|$ over $c$."""
        return float(np.abs(self.pmi_word - self.mixture).max())

    @property
    def lower_slack(self) -> float:
        """Smallest $\\operatorname{PMI}(w, c) - \\max_k(\\log \\pi_k + \\operatorname{PMI}(s_k, c))$ (>= 0)."""
        return float(self.dominance_gap.min())

    @property
    def upper_slack(self) -> float:
        """Smallest $\\max_k \\operatorname{PMI}(s_k, c) - \\operatorname{PMI}(w, c)$ over $c$ (>= 0)."""
        _, upper = proposition1_bounds(self.shares, self.pmi_senses)
        return float((upper - self.pmi_word).min())

    @property
    def dominance_gap(self) -> np.ndarray:
        r"""Distance to the lower bound, in $[0, \log K]$, shape (V,).

        $\operatorname{PMI}(w, c) - \max_k(\log \pi_k + \operatorname{PMI}(s_k, c))$ for every $c$.
        """
        lower, _ = proposition1_bounds(self.shares, self.pmi_senses)
        return self.pmi_word - lower

    @property
    def sense_gap(self) -> float:
        """$\\max_c |\\operatorname{PMI}(s_a, c) - \\operatorname{PMI}(s_b, c)|$ in nats."""
        return float(np.abs(self.pmi_senses[0] - self.pmi_senses[1]).max())

    @property
    def sense_gap_token(self) -> int:
        """The context token attaining [`sense_gap`][mlm_book.pmi.PolysemePMI.sense_gap]."""
        return int(np.abs(self.pmi_senses[0] - self.pmi_senses[1]).argmax())


def polyseme_pmi(hmm: HiddenMarkovLanguage, offset: int = 1) -> PolysemePMI:
    r"""Both sides of Proposition 1 for the shared token and the token at ``offset``.

    $\operatorname{PMI}(w, c)$ comes from the enumerated joint of the $|d| + 1$ tokens
    from the occurrence to the context (stationarity makes the occurrence's position
    irrelevant); $\operatorname{PMI}(s_k, c)$ from [`context_given_state`][mlm_book.pmi.context_given_state].

    Parameters
    ----------
    hmm : HiddenMarkovLanguage
        The language.
    offset : int
        Context position relative to the occurrence, $1 \le |d| \le 3$.

    Returns
    -------
    PolysemePMI

    Raises
    ------
    ValueError
        If ``offset`` is zero or beyond ``MAX_OFFSET``.

    Examples
    --------
    >>> from mlm_book.hmm import default_hmm
    >>> result = polyseme_pmi(default_hmm(), offset=1)
    >>> result.identity_residual < 1e-12, result.lower_slack >= 0, result.upper_slack >= 0
    (True, True, True)
    >>> round(result.sense_gap, 3)
    3.654
    """
    hmm = check_hmm(hmm)
    offset = _check_offset(offset, limit=MAX_OFFSET)
    joint = enumerate_joint(hmm, abs(offset) + 1)
    w = hmm.shared_token
    if offset > 0:  # axes: occurrence, tokens in between, context
        with_w = joint[w].reshape(-1, hmm.vocab_size).sum(axis=0)
    else:  # axes: context, tokens in between, occurrence
        with_w = joint[..., w].reshape(hmm.vocab_size, -1).sum(axis=1)
    # with_w[c] = P(x_t = w, x_{t+d} = c)
    unigram = joint.sum(axis=tuple(range(1, joint.ndim)))  # P(x = c) (stationary)
    p_w = with_w.sum()
    pmi_word = np.log(with_w / p_w) - np.log(unigram)
    given_state = context_given_state(hmm, offset)[list(hmm.sense_states)]  # (2, V)
    pmi_senses = np.log(given_state) - np.log(unigram)[None, :]
    return PolysemePMI(offset=offset, shares=sense_shares(hmm), pmi_word=pmi_word, pmi_senses=pmi_senses)


@dataclass(frozen=True, eq=False)
class StaticClassifierOutcome:
    """What a classifier reading one vector per type does to the occurrences of one word.

    Parameters
    ----------
    labels : ndarray of int, shape (N,)
        The label given to each occurrence.
    accuracy : float
        Fraction of occurrences whose label equals their sense.
    label_share : float
        Share, among the occurrences, of the sense the classifier answered (the first
        label): equals ``accuracy`` whenever all labels are identical.

    Raises
    ------
    TypeError
        If ``labels`` does not hold integers or a share is not a real number.
    ValueError
        If ``labels`` is empty or not one-dimensional, or a share is outside [0, 1].

    Examples
    --------
    >>> StaticClassifierOutcome(labels=np.array([1, 1, 1]), accuracy=2 / 3, label_share=2 / 3).one_label
    True
    """

    labels: np.ndarray
    accuracy: float
    label_share: float

    def __post_init__(self):
        labels = as_int_array(self.labels, "labels", ndim=1)
        if labels.size == 0:
            raise ValueError("labels must hold one label per occurrence, got none")
        object.__setattr__(self, "labels", labels)
        check_probability(self.accuracy, "accuracy")
        check_probability(self.label_share, "label_share")

    @property
    def one_label(self) -> bool:
        """Whether every occurrence received the same label (Corollary 1 says it must)."""
        return bool(np.all(self.labels == self.labels[0]))


def classify_static(classifier: Callable[[np.ndarray], np.ndarray], table, tokens, senses,
                    word: int) -> StaticClassifierOutcome:
    r"""Apply a classifier $g$ to a static table $e$ at every occurrence of ``word``.

    A static representation of position $i$ is ``table[tokens[i]]``, whatever the rest of
    the sentence. The classifier is called on the stacked vectors of all occurrences at
    once, so nothing but the table reaches it; Corollary 1 is the observation that the
    resulting labels are all equal.

    Parameters
    ----------
    classifier : callable
        Maps an array of shape (N, d) to N integer labels.
    table : array_like, shape (V, d)
        One vector per token type.
    tokens : array_like of int, shape (B, n)
        Sequences.
    senses : array_like of int, shape (B, n)
        The true sense label of each position (read at occurrences of ``word`` only).
    word : int
        Token id whose occurrences are classified.

    Returns
    -------
    StaticClassifierOutcome

    Raises
    ------
    ValueError
        If shapes disagree, ``table`` has no rows, ``word`` never occurs, or the classifier
        returns the wrong number of labels.
    TypeError
        If ``classifier`` is not callable.

    Examples
    --------
    >>> import numpy as np
    >>> table = np.random.default_rng(0).normal(size=(3, 4))
    >>> tokens = np.array([[0, 2, 1, 2], [2, 2, 0, 1]])
    >>> senses = np.array([[0, 1, 0, 0], [1, 1, 0, 0]])   # three of four occurrences of 2 are sense 1
    >>> outcome = classify_static(lambda v: (v[:, 0] > 0).astype(int), table, tokens, senses, word=2)
    >>> outcome.one_label, outcome.accuracy == outcome.label_share
    (True, True)
    """
    if not callable(classifier):
        raise TypeError(f"classifier must be callable, got {type(classifier).__name__}")
    table = as_float_array(table, "table", ndim=2)
    if table.shape[0] == 0:
        raise ValueError(f"table must hold one row per token type, got shape {table.shape}")
    tokens = check_tokens(tokens, "tokens", table.shape[0], ndim=2)
    senses = as_int_array(senses, "senses", ndim=2)
    if senses.shape != tokens.shape:
        raise ValueError(f"senses must have the shape of tokens {tokens.shape}, got {senses.shape}")
    if isinstance(word, bool) or not isinstance(word, (int, np.integer)) or not 0 <= word < table.shape[0]:
        raise ValueError(f"word must be a token id in [0, {table.shape[0]}), got {word!r}")
    occurrences = tokens == word
    if not occurrences.any():
        raise ValueError("word must occur in tokens")
    vectors = table[tokens[occurrences]]
    labels = np.asarray(classifier(vectors)).astype(np.int64).reshape(-1)
    if labels.shape != (vectors.shape[0],):
        raise ValueError(f"classifier must return one label per occurrence ({vectors.shape[0]}), got {labels.shape}")
    truth = senses[occurrences]
    return StaticClassifierOutcome(labels=labels, accuracy=float(np.mean(labels == truth)),
                                   label_share=float(np.mean(truth == labels[0])))


def sense_screening_residual(hmm: HiddenMarkovLanguage) -> float:
    r"""How far Proposition 1's hypothesis fails on the HMM: zero up to rounding.

    The hypothesis is that a context sees an occurrence of $w$ only through its sense:
    $P(c \mid w) = \sum_k \pi_k P(c \mid z_t = h_k)$. This checks it for three two-token
    windows at once, the two tokens after the occurrence, the two before it, and the
    two around it, with $P(c \mid w)$ read off the enumerated length-3 token joint and
    $P(c \mid z_t = h_k)$ built from the chain.

    Parameters
    ----------
    hmm : HiddenMarkovLanguage
        The language.

    Returns
    -------
    float
        Largest absolute difference over all windows and all $V^2$ values of each.

    Examples
    --------
    >>> from mlm_book.hmm import default_hmm
    >>> sense_screening_residual(default_hmm()) < 1e-15
    True
    """
    hmm = check_hmm(hmm)
    joint = enumerate_joint(hmm, 3)
    w = hmm.shared_token
    states = list(hmm.sense_states)
    shares = sense_shares(hmm)
    forward = hmm.transition
    backward = _reversed_transition(hmm)
    emission = hmm.emission
    windows = []
    # (x_{t+1}, x_{t+2}) | z_t: sum_r T[h, r] E[r, a] (T E)[r, b]
    after = np.einsum("hr,ra,rb->hab", forward[states], emission, forward @ emission)
    windows.append((joint[w], after))
    # (x_{t-2}, x_{t-1}) | z_t: sum_r R[h, r] E[r, b] (R E)[r, a]
    before = np.einsum("hr,rb,ra->hab", backward[states], emission, backward @ emission)
    windows.append((joint[:, :, w], before))
    # (x_{t-1}, x_{t+1}) | z_t: conditionally independent given z_t
    around = np.einsum("ha,hb->hab", (backward @ emission)[states], (forward @ emission)[states])
    windows.append((joint[:, w, :], around))
    residual = 0.0
    for word_joint, given_sense in windows:
        given_word = word_joint / word_joint.sum()
        mixture = np.tensordot(shares, given_sense, axes=1)
        residual = max(residual, float(np.abs(given_word - mixture).max()))
    return residual
