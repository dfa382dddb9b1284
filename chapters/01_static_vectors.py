# ---
# jupyter:
#   jupytext:
#     text_representation:
#       extension: .py
#       format_name: percent
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% [markdown]
# # Chapter 1 — One vector per type
#
# A word2vec table gives a word one vector, whatever sentence it sits in. When the word has
# two meanings, that vector has to serve both. This chapter makes the loss precise on a
# language whose meanings we know exactly. Proposition 1 shows what one vector per type
# actually measures: a mixture of the senses. Corollary 1 shows what that costs a
# classifier: a ceiling set by the more common sense. And because the language is a known
# distribution, we can also compute the best accuracy any reader of the whole sentence
# could reach, which is the target that later chapters' encoders aim at.

# %%
import math
from dataclasses import replace

import numpy as np

from mlm_book.experiments import ch01_static_vectors as ch1
from mlm_book.figures import show
from mlm_book.hmm import bayes_sense_accuracy, build_hmm, sample
from mlm_book.ledger import chapter_summary, verify
from mlm_book.pmi import static_cap
from mlm_book.report import Markdown, answer, table

r = ch1.results()
hmm = r.hmm

# %% [markdown]
# ## Static and contextual embeddings
#
# **Definition 1 (static and contextual embeddings).** Write a sentence as
# $x = (x_1, \dots, x_n)$ over a vocabulary of $V$ token types. A *static* embedding
# assigns each token a vector through its type alone: $x_i \mapsto e(x_i) \in \mathbb{R}^d$.
# A *contextual* embedding assigns a vector to a position in a sentence:
# $(x, i) \mapsto h_i(x_1, \dots, x_n) \in \mathbb{R}^d$, so the same type can get different
# vectors in different sentences.
#
# The two are closer than they look. The input layer of a transformer encoder,
# $E[x_i] + P_i$ (a token table plus a position table), depends on the sentence only
# through $x_i$ once the position $i$ is fixed, so at a fixed position it is a static
# embedding. Context enters only through the blocks that mix positions; the chapters on
# the encoder check that layer-0 vectors of one token at one position are identical while
# deeper layers' vectors are not.

# %% [markdown]
# ## A language with known senses
#
# The testbed is a hidden Markov model ([`mlm_book.hmm`](../api/mlm_book.hmm.html)). Its
# hidden states come in two *regimes*, a and b, of four states each. Every state emits
# three tokens that no other state emits; in addition, the heaviest state of each regime (the
# one with the largest stationary probability) emits a shared token $w$. So $w$ is
# ambiguous: it can come from the heavy state of regime a or from that of regime b. These
# two hidden states are the two *senses* of $w$. What follows or precedes an occurrence of
# $w$ depends on the occurrence only through its hidden state, by the Markov property.
#
# A sense here is discrete: an occurrence of $w$ has one of two hidden states and nothing in
# between. An embedding, static or contextual, is continuous: a point among the real vectors
# of $d$ dimensions, which can hold the sense and more besides (the position, the
# neighbours, how sure the context is). The chapters measure how much of the discrete sense
# those continuous points recover.

# %% tags=["hide-input"]
Markdown(f"With three own tokens for each of the {hmm.n_states} states and the shared $w$, the vocabulary has "
         f"$V = {hmm.vocab_size}$ types; each heavy state emits $w$ with probability "
         f"{hmm.emission[hmm.sense_states[0], hmm.shared_token]:g}.")

# %% [markdown]
# The transition matrix is built from a handful of named parameters, listed here. In
# words: at every step the chain leaves its regime with a small probability (slightly
# different for a and b, which tilts the regimes' masses and so the senses' shares). When it
# switches, it lands in the other regime as if it were stepping out of that regime's heavy
# state. Inside a regime, the heavy state tends to stay put, and the light states either
# return to the heavy state, stay, or move around a cycle. Every entry of the matrix is
# positive, so every finite sequence has positive probability; sequences start from the
# stationary distribution, shown beside the parameters.

# %%
table(["parameter", "value"], [(name, value) for name, value in vars(hmm.config).items()])

# %%
table(["state", "stationary probability"], zip(ch1.state_names(hmm), hmm.initial), formats=[None, ".3f"])

# %%
show(ch1.figure_transition(r))

# %% tags=["hide-input"]
share_w = float(hmm.initial @ hmm.emission[:, hmm.shared_token])
Markdown(
    f"The heavy states carry **{hmm.initial[list(hmm.sense_states)].sum():.3f}** of the stationary "
    f"mass, so $w$ is **{100 * share_w:.1f} %** of all tokens. Its two senses have shares "
    f"$\\pi_a = P(\\text{{sense a}} \\mid w) =$ **{r.shares[0]:.3f}** and $\\pi_b =$ **{r.shares[1]:.3f}**: "
    "both heavy states emit $w$ with the same probability, so the shares are the ratio of their "
    "stationary masses."
)

# %% [markdown]
# Because the model is a known distribution, forward–backward
# ([Rabiner 1989](../references.html#rabiner-1989)) gives every
# conditional exactly: the posterior of each hidden state given the whole sentence, the
# posterior with one position left out, and from that the probability of each token at a
# position given all the others. The package checks these recursions against brute-force
# enumeration of every state path and every token sequence of length up to four:

# %% tags=["hide-input"]
Markdown(f"Largest difference between forward–backward and enumeration: **{r.brute_force_error:.1e}**.")

# %% [markdown]
# ## Proposition 1: a static vector sees the mixture
#
# Pointwise mutual information compares how often a word and a context occur together with
# how often they would by chance: $\operatorname{PMI}(w, c) = \log P(c \mid w) / P(c)$.
# For a sense $s_k$ of $w$ we write likewise
# $\operatorname{PMI}(s_k, c) = \log P(c \mid s_k) / P(c)$.
#
# **Proposition 1.** Let $w$ have senses $s_1, \dots, s_K$ with shares
# $\pi_k = P(s_k \mid w)$, and let the context $c$ depend on an occurrence of $w$ only
# through its sense: $P(c \mid s_k, w) = P(c \mid s_k)$. Then
#
# $$\operatorname{PMI}(w, c) = \log \sum_{k=1}^K \pi_k \exp \operatorname{PMI}(s_k, c),$$
#
# and consequently
#
# $$\max_k \bigl(\log \pi_k + \operatorname{PMI}(s_k, c)\bigr) \;\le\; \operatorname{PMI}(w, c)
# \;\le\; \max_k \operatorname{PMI}(s_k, c).$$
#
# *Proof.* Condition on the sense. By the law of total probability and the hypothesis,
# $P(c \mid w) = \sum_k P(s_k \mid w)\, P(c \mid s_k, w) = \sum_k \pi_k P(c \mid s_k)$.
# Divide both sides by $P(c)$; each ratio $P(c \mid s_k)/P(c)$ is
# $\exp \operatorname{PMI}(s_k, c)$, and taking logarithms gives the identity. Write
# $a_k = \operatorname{PMI}(s_k, c)$. The sum $\sum_k \pi_k e^{a_k}$ is a weighted average
# of the numbers $e^{a_k}$, so it is at most their maximum, which is the upper bound. All
# its terms are non-negative, so it is at least its largest term $\max_k \pi_k e^{a_k}$,
# which is the lower bound. $\blacksquare$
#
# The lower bound is never far below the truth: a sum of $K$ non-negative terms is at most
# $K$ times its largest, so
# $0 \le \operatorname{PMI}(w, c) - \max_k(\log \pi_k + \operatorname{PMI}(s_k, c)) \le \log K$.
# Where one sense dominates a context, the word's PMI tracks that sense's PMI shifted down
# by $\log \pi_k$; no context makes it look like both senses at once. Skip-gram with
# negative sampling fits shifted PMI at its unconstrained optimum
# ([Levy and Goldberg 2014](../references.html#levy-2014)), so the row of a two-sense word in
# the matrix it factorises is exactly this log-mixture, shifted by $\log$ of the number of
# negatives. [Arora et al. (2018)](../references.html#arora-2018) describe trained static
# vectors as superpositions of sense vectors: the same picture, seen in the embedding space.
#
# On the HMM, $\operatorname{PMI}(w, c)$ can be computed with no mention of senses, from
# the enumerated joint of the tokens; the senses' PMIs come from the hidden chain. The
# contexts are the token at a fixed offset from the occurrence
# ([`mlm_book.pmi`](../api/mlm_book.pmi.html)). In the table, the *identity residual* is the
# largest difference between the two sides of the identity over all context values; the
# *slacks* are the smallest distances from $\operatorname{PMI}(w, c)$ down to the lower bound
# and up to the upper bound (non-negative when the bounds hold); the *largest gap to the lower
# bound* is the one the remark above limits by $\log 2$; the *sense gap* is the largest
# difference between the two senses' PMIs.

# %%
names = {1: "next token", -1: "previous token", 2: "two to the right", -2: "two to the left"}
table(["context", "identity residual", "min slack, lower", "min slack, upper", "max gap to lower",
       "max sense gap (nats)"],
      [(names.get(p.offset, p.offset), p.identity_residual, p.lower_slack, p.upper_slack, p.dominance_gap.max(),
        p.sense_gap) for p in r.pmi],
      formats=[None, "residual", ".4f", ".1e", ".4f", ".3f"])

# %%
show(ch1.figure_pmi_profiles(r))

# %% tags=["hide-input"]
p = r.pmi[0]
Markdown(
    f"The identity holds to **{max(q.identity_residual for q in r.pmi):.0e}** at every context value, and "
    f"the distance to the lower bound stays below $\\log 2 \\approx$ {math.log(2):.3f}. "
    f"With the next token as context the two senses' PMIs differ by up to **{p.sense_gap:.3f}** nats "
    f"(at `{hmm.token_names[p.sense_gap_token]}`), a likelihood ratio of about "
    f"**{math.exp(p.sense_gap):.1f}**. In the figure the word's PMI (triangles) runs about $-\\log \\pi_k$ "
    "nats below whichever sense's profile is higher: when the next token belongs to regime a, $w$ looks "
    "like sense a, and when it belongs to regime b, like sense b. Because a switch enters a regime the way "
    "its heavy state leaves it, "
    "every regime-a token is the same number of times likelier after sense a than after sense b, which is "
    "why the profiles are parallel within each regime."
)

# %% [markdown]
# ## Corollary 1: the static cap
#
# **Corollary 1.** Any classifier that reads only a static embedding, $g \circ e$, labels
# the senses of the occurrences of $w$ with accuracy at most $\max_k \pi_k$.
#
# *Proof.* Every occurrence of $w$ is represented by the same vector $e(w)$, so $g$ returns
# the same label $\ell$ for all of them. The fraction of occurrences whose sense is $\ell$ is
# $\pi_\ell$, so that is the classifier's accuracy, and $\pi_\ell \le \max_k \pi_k$.
# $\blacksquare$
#
# The argument does not care how $e$ was trained or how clever $g$ is. Below, several static
# classifiers read a random static table at the occurrences of $w$ in a test split of clean
# sentences: two constants, the majority sense of a training split, and random linear rules.
# Each gives every occurrence one label, and each scores the test share of the label it
# picked.

# %%
table(["static classifier", "one label for all occurrences", "accuracy", "share of its label"],
      [(name, "yes" if outcome.one_label else "no", outcome.accuracy, outcome.label_share)
       for name, outcome in zip(r.static_names, r.static_outcomes)],
      formats=[None, None, ".4f", ".4f"])

# %% tags=["hide-input"]
best = max(outcome.accuracy for outcome in r.static_outcomes)
Markdown(f"The static table has {hmm.vocab_size} rows of dimension {r.config.static_dim}, and the test split "
         f"holds {r.config.test_sequences} sentences of length {r.config.length}. The cap is "
         f"$\\max_k \\pi_k =$ **{r.cap:.3f}**. The best static classifier scores {best:.3f}, the test split's "
         f"share of its label; it differs from the cap only because a split of {r.bayes_test.n_occurrences} "
         "occurrences does not reproduce the shares exactly.")

# %% [markdown]
# ## The ceiling: exact Bayes sense accuracy
#
# A reader of the whole sentence can do much better. The best possible classifier of the
# sense of an occurrence given its sentence picks the sense with the larger posterior, and it
# is right with probability $\max_k P(\text{sense } k \mid x)$. Averaging this over the
# occurrences of $w$ gives the Bayes accuracy, the ceiling for any probe on any encoder: an
# encoder's vector is computed from the sentence, so it holds no more about the sense than the
# sentence does (the data-processing argument that [Pimentel et al.
# (2020)](../references.html#pimentel-2020) make for probing, in terms of mutual information). The
# figure shows the posterior along one sampled sentence: far from a regime switch the
# context settles the sense, and only the occurrences of $w$ next to the switch are in doubt.

# %%
show(ch1.figure_sense_posterior(r))

# %% tags=["hide-input"]
b = r.bayes_test
Markdown(
    f"On the test split ({r.config.test_sequences} clean sentences of length {r.config.length}, "
    f"{b.n_occurrences} occurrences of $w$) the exact Bayes accuracy is **{b.expected:.3f}** "
    f"(standard error {b.standard_error:.3f} with sentences as units); the Bayes rule's decisions match the "
    f"sampled senses at **{b.realised:.3f}** of the occurrences. Over "
    f"{r.config.expectation_sequences:,} fresh sentences the expectation "
    f"$E \\max_k P(\\text{{sense }} k \\mid x)$ is **{r.bayes_expectation:.4f}** "
    f"(± {r.bayes_expectation_se:.4f}). The static cap is **{r.cap:.3f}**: context is worth "
    f"**{r.bayes_expectation - r.cap:.3f}** of accuracy on this language."
)

# %% [markdown]
# ## CBOW and what comes next
#
# Word2vec's other architecture, CBOW ([Mikolov et al. 2013a](../references.html#mikolov-2013a)),
# predicts a word from
# the average of its neighbours' input vectors. It is already a masked predictor with one
# hidden token. What it lacks is an encoder: its summary of the context is an average of
# static vectors, with no positions and no attention, and the word it predicts still gets a
# single output vector per type.
#
# The next chapters train a small bidirectional encoder on this HMM with BERT's masked-LM
# objective. The probes on its vectors (a probe on its token table, which attains the cap, and
# probes on its layers, which approach the Bayes accuracy) come in the probing chapter.
#
# ## Exercises

# **Exercise 1.** The senses' shares are set by how often each regime is left. Keep every parameter of the
# book's HMM but make regime a twice as easy to leave as regime b
# (`switch_a = 2 * switch_b`). What is the static cap now, and why is it close to 2/3?

# %% tags=["hide-input"]
faster_a = build_hmm(replace(hmm.config, switch_a=2 * hmm.config.switch_b))
answer(f"`static_cap(build_hmm(replace(hmm.config, switch_a=2 * hmm.config.switch_b)))` gives "
       f"**{static_cap(faster_a):.3f}**. A regime's stationary mass is inversely proportional to the rate at "
       f"which it is left, so regime b now holds {faster_a.initial[faster_a.regime == 1].sum():.3f} of the time. "
       "Both heavy states emit $w$ with the same probability, so sense b's share, and with it the cap, is the "
       "heavy state b:h's share of the stationary mass over the two heavy states: close to regime b's share, "
       "but not equal, because the heavy state's share of its own regime depends on how often the regime is "
       "entered.")

# %% [markdown]
# **Exercise 2.** The remark after Proposition 1 bounds the gap between $\operatorname{PMI}(w, c)$ and the
# lower bound by $\log K$. How much of that room does this HMM use, over the four contexts
# of the table?

# %% tags=["hide-input"]
used = max(p.dominance_gap.max() for p in r.pmi)
answer(f"The largest gap over all four contexts is **{used:.4f}** nats, against $\\log 2 \\approx$ "
       f"{math.log(2):.4f}: about {100 * used / math.log(2):.0f} % of the room. The gap is largest where both "
       "senses explain the context about equally well, so the sum has two comparable terms instead of one.")

# %% [markdown]
# **Exercise 3.** Context is worth the difference between the Bayes accuracy and the cap. Make both regimes
# ten times easier to leave (`switch_a` and `switch_b` times 10): does context become worth
# more or less, and why?

# %% tags=["hide-input"]
fast = build_hmm(replace(hmm.config, switch_a=10 * hmm.config.switch_a, switch_b=10 * hmm.config.switch_b))
fast_states, fast_tokens = sample(fast, r.config.test_sequences, r.config.length, np.random.default_rng(7))
fast_bayes = bayes_sense_accuracy(fast, fast_tokens, fast_states)
answer(f"On {r.config.test_sequences} fresh sentences of the faster-switching HMM the Bayes accuracy is "
       f"**{fast_bayes.expected:.3f}** (standard error {fast_bayes.standard_error:.3f}) and the cap is "
       f"**{static_cap(fast):.3f}**, so context is worth **{fast_bayes.expected - static_cap(fast):.3f}**, "
       f"against {r.bayes_expectation - r.cap:.3f} for the book's HMM. Regimes that change more often leave "
       "more occurrences of $w$ near a switch, where the neighbours speak for both senses, so the sentence "
       "settles the sense less often. (`bayes_sense_accuracy(hmm, tokens, states)` computes it.)")

# %% [markdown]
# ## Claims

# %% tags=["hide-input"]
chapter_summary(verify(claims=ch1.CLAIMS))
