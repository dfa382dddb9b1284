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

from IPython.display import Markdown

from mlm_book.experiments import ch01_static_vectors as ch1
from mlm_book.ledger import to_markdown, verify

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
# The testbed is a hidden Markov model ([`mlm_book.hmm`](../../api/mlm_book.hmm/)). Its
# hidden states come in two *regimes*, a and b, of four states each. Every state emits
# three tokens that no other state emits, which gives 24 regime tokens; in addition, the
# heaviest state of each regime (the one with the largest stationary probability) emits a
# shared token $w$ with probability $0.4$. So the vocabulary has $V = 25$ types and $w$ is
# ambiguous: it can come from the heavy state of regime a or from that of regime b. These
# two hidden states are the two *senses* of $w$. What follows or precedes an occurrence of
# $w$ depends on the occurrence only through its hidden state, by the Markov property.
#
# The transition matrix is built from a handful of named parameters, printed here. In
# words: at every step the chain leaves its regime with a small probability (slightly
# different for a and b, which tilts the regimes' masses and so the senses' shares). When it
# switches, it lands in the other regime as if it were stepping out of that regime's heavy
# state. Inside a regime, the heavy state tends to stay put, and the light states either
# return to the heavy state, stay, or move around a cycle. Every entry of the matrix is
# positive, so every finite sequence has positive probability; sequences start from the
# stationary distribution.

# %%
print(hmm.config)
print()
print("state        " + "  ".join(f"{name:>6}" for name in ("a:h", "a:1", "a:2", "a:3", "b:h", "b:1", "b:2", "b:3")))
print("stationary   " + "  ".join(f"{p:6.3f}" for p in hmm.initial))

# %%
ch1.figure_transition(r);

# %%
share_w = float(hmm.initial @ hmm.emission[:, hmm.shared_token])
Markdown(
    f"The heavy states carry **{hmm.initial[list(hmm.sense_states)].sum():.3f}** of the stationary "
    f"mass, so $w$ is **{100 * share_w:.1f} %** of all tokens. Its two senses have shares "
    f"$\\pi_a = P(\\text{{sense a}} \\mid w) =$ **{r.shares[0]:.3f}** and $\\pi_b =$ **{r.shares[1]:.3f}**: "
    "both heavy states emit $w$ with the same probability, so the shares are the ratio of their "
    "stationary masses."
)

# %% [markdown]
# Because the model is a known distribution, forward–backward (Rabiner 1989) gives every
# conditional exactly: the posterior of each hidden state given the whole sentence, the
# posterior with one position left out, and from that the probability of each token at a
# position given all the others. The package checks these recursions against brute-force
# enumeration of every state path and every token sequence of length up to four:

# %%
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
# negative sampling fits shifted PMI at its unconstrained optimum (Levy and Goldberg; the
# word2vec topic's Theorem 1), so the row of a two-sense word in the matrix it factorises is
# exactly this log-mixture, shifted by $\log$ of the number of negatives. Arora and colleagues
# (2018) describe trained static vectors as superpositions of sense vectors, the same picture
# seen in the embedding space.
#
# On the HMM, $\operatorname{PMI}(w, c)$ can be computed with no mention of senses, from
# the enumerated joint of the tokens; the senses' PMIs come from the hidden chain. The
# contexts are the token at a fixed offset from the occurrence
# ([`mlm_book.pmi`](../../api/mlm_book.pmi/)).

# %%
lines = ["| context | identity residual | lower-bound slack (min) | upper-bound slack (min) | "
         "max gap to lower bound | largest sense-PMI gap (nats) |", "|---|---|---|---|---|---|"]
names = {1: "next token", -1: "previous token", 2: "two to the right", -2: "two to the left"}
for p in r.pmi:
    lines.append(f"| {names.get(p.offset, p.offset)} | {p.identity_residual:.1e} | {p.lower_slack:.4f} | "
                 f"{p.upper_slack:.1e} | {p.dominance_gap.max():.4f} | {p.sense_gap:.3f} |")
Markdown("\n".join(lines))

# %%
ch1.figure_pmi_profiles(r);

# %%
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
print(f"static table: {hmm.vocab_size} x {r.config.static_dim}; test split: {r.config.test_sequences} "
      f"sentences of length {r.config.length}")
lines = ["| static classifier | one label for all occurrences | accuracy | share of its label |",
         "|---|---|---|---|"]
for name, outcome in zip(r.static_names, r.static_outcomes):
    lines.append(f"| {name} | {'yes' if outcome.one_label else 'no'} | {outcome.accuracy:.4f} | "
                 f"{outcome.label_share:.4f} |")
best = max(outcome.accuracy for outcome in r.static_outcomes)
Markdown("\n".join(lines) + f"\n\nThe cap is $\\max_k \\pi_k =$ **{r.cap:.3f}**. The best static classifier "
         f"scores {best:.3f}, the test split's share of its label; it differs from the cap only because a "
         f"split of {r.bayes_test.n_occurrences} occurrences does not reproduce the shares exactly.")

# %% [markdown]
# ## The ceiling: exact Bayes sense accuracy
#
# A reader of the whole sentence can do much better. The best possible classifier of the
# sense of an occurrence given its sentence picks the sense with the larger posterior, and it
# is right with probability $\max_k P(\text{sense } k \mid x)$. Averaging this over the
# occurrences of $w$ gives the Bayes accuracy, the ceiling for any probe on any encoder. The
# figure shows the posterior along one sampled sentence: far from a regime switch the
# context settles the sense, and only the occurrences of $w$ next to the switch are in doubt.

# %%
ch1.figure_sense_posterior(r);

# %%
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
# Word2vec's other architecture, CBOW (Mikolov and colleagues 2013), predicts a word from
# the average of its neighbours' input vectors. It is already a masked predictor with one
# hidden token. What it lacks is an encoder: its summary of the context is an average of
# static vectors, with no positions and no attention, and the word it predicts still gets a
# single output vector per type.
#
# The next chapters train a small bidirectional encoder on this HMM with BERT's masked-LM
# objective. The probes on its vectors (a probe on its token table, which attains the cap, and
# probes on its layers, which approach the Bayes accuracy) come in the probing chapter.
#
# The claims of this chapter, recomputed:

# %%
Markdown(to_markdown(verify(claims=ch1.CLAIMS)))
