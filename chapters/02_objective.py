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
# # Chapter 2 — The masked-LM objective
#
# A masked language model is trained to guess tokens that have been hidden or tampered
# with. This chapter pins down exactly what that training asks for. Theorem 1 says the
# loss is a proper scoring rule: its minimiser is the true conditional distribution of the
# hidden token given the corrupted sentence. Theorem 2 writes that distribution in closed
# form, as Bayes' rule with what the context predicts as prior and the corruption channel
# as likelihood. On the HMM language of Chapter 1 every quantity is computable exactly, so
# both theorems can be checked against brute force. We also state exactly what BERT's own
# channel does: it selects a fixed number of positions per input, which breaks an
# assumption of Theorem 2. Finally a small BERT-style encoder, trained on the HMM, is
# measured against the exact posterior that Theorem 2 says it should learn.
#
# The code lives in [`mlm_book.channel`](../api/mlm_book.channel.html),
# [`mlm_book.scoring`](../api/mlm_book.scoring.html) and
# [`mlm_book.bruteforce`](../api/mlm_book.bruteforce.html); the chapter's results are built
# in [`mlm_book.experiments.ch02_objective`](../api/mlm_book.experiments.ch02_objective.html)
# and, for the encoder, [`mlm_book.experiments.hmm_encoder`](../api/mlm_book.experiments.hmm_encoder.html).

# %%
import inspect

from mlm_book.channel import (
    Channel,
    bert_prediction_count,
    display_matrix,
    evidence_factor,
    half_mass_threshold,
    selection_count,
)
from mlm_book.experiments import ch02_objective as ch2
from mlm_book.experiments import ch06_finance as ch6
from mlm_book.experiments import hmm_encoder
from mlm_book.experiments.hmm_encoder import SETUP
from mlm_book.readings.hmm_encoder import evaluation
from mlm_book.figures import show
from mlm_book.hmm import default_hmm
from mlm_book.ledger import chapter_summary, verify
from mlm_book.report import Markdown, answer, table

hmm = default_hmm()
bert = Channel(ch2.HMM_VOCAB)

# %% [markdown]
# ## The corruption channel
#
# **Definition 2 (corruption channel, masked-LM loss).** Let $x = (x_1, \dots, x_n)$ be a
# sentence over $V$ tokens. A set $M$ of positions is *selected*, each position
# independently with probability $\rho$. Each selected position then shows, independently
# of everything else,
#
# * the symbol `[MASK]` with probability $m$,
# * a token drawn uniformly from the $V$ tokens with probability $r$ (the draw may return
#   the position's own token),
# * its own token with probability $\kappa = 1 - m - r$;
#
# an unselected position shows its own token. Call the result $\tilde x$. The law of what a
# selected position shows, given that its token is $y$, is
#
# $$S(\texttt{[MASK]} \mid y) = m, \qquad S(v \mid y) = \kappa\,\mathbb{1}[v = y] + \frac{r}{V}
#   \quad (v \text{ a token}).$$
#
# A predictor $q(\cdot \mid \tilde x)$ gives, at each position, a distribution over the $V$
# tokens. Its *masked-LM loss* is the mean of $-\log q(x_i \mid \tilde x)$ over the
# selected positions $i \in M$, and only over them.
#
# `[MASK]` is a display symbol only: it is shown, never predicted and never drawn as a
# replacement. In the code it is the id $V$, and $S$ is a $(V + 1) \times V$ matrix whose
# columns sum to $m + \kappa + r = 1$.

# %% tags=["hide-input"]
Markdown(
    f"BERT's settings ([Devlin et al. 2019](../references.html#devlin-2019)) are $\\rho = {bert.rho:g}$ and "
    f"$(m, r, \\kappa) = ({bert.mask:g}, {bert.random:g}, {round(bert.keep, 12):g})$, the defaults of "
    "[`Channel`](../api/mlm_book.channel.html). BERT's data script differs from the definition in one respect: "
    "instead of tossing a coin per position, it selects a fixed number of positions of each input, uniformly "
    "without replacement. The book's version of that rule, `Channel(..., selection=\"fixed\")`, selects "
    f"$k = \\max(1, \\operatorname{{round}}({bert.rho:g}\\,n))$ of a sentence's $n$ tokens, rounding with "
    "Python 3's `round`, which sends halves to the even neighbour. BERT's own count also counts its special "
    "tokens and sometimes comes out higher; the section on fixed-count selection gives it exactly, and says "
    "what a fixed count does to Theorem 2. Here is the channel the book uses for the HMM, and the book's fixed "
    "count for a few lengths:"
)

# %%
table(["setting", "symbol", "value"],
      [("selection rate", "ρ", f"{bert.rho:g}"), ("share shown as [MASK]", "m", f"{bert.mask:g}"),
       ("share replaced by a random token", "r", f"{bert.random:g}"),
       ("share kept", "κ", f"{round(bert.keep, 12):g}"), ("id of [MASK]", "", bert.mask_id),
       ("selection", "", bert.selection)])

# %%
lengths = (3, 6, 7, 10, 24, 32)
table(["length n"] + [str(n) for n in lengths],
      [["fixed count k"] + [selection_count(n, bert.rho) for n in lengths]])

# %%
small = Channel(4)

# %% tags=["hide-input"]
Markdown(f"For a vocabulary of {small.vocab_size} tokens the matrix $S$ is small enough to read. Column $y$ is "
         "the law of what a selected position whose token is $y$ shows; each column sums to 1, and the "
         f"diagonal entry $\\kappa + r/V = {small.keep + small.random / small.vocab_size:.3f}$ is the chance that "
         "the position shows its own token, by keeping it or by drawing it at random.")

# %%
S = display_matrix(small)
table(["shown ↓ / true →"] + [f"y = {y}" for y in range(small.vocab_size)],
      [[str(s) if s < small.vocab_size else "[MASK]"] + list(S[s]) for s in range(small.vocab_size + 1)],
      formats=[None] + [".3f"] * small.vocab_size)

# %% tags=["hide-input"]
Markdown(f"A sampled channel has to match $S$. We corrupt tokens drawn uniformly from the {bert.vocab_size} "
         "tokens and compare the counts of (shown, true) pairs at selected positions with $S$ by Pearson's "
         f"chi-square, summed over the {bert.vocab_size} columns ({bert.vocab_size} degrees of freedom each: "
         f"{bert.vocab_size + 1} cells, whose counts must add up to the column's total).")

# %%
chi = ch2.chi_square_check()
table(["selected positions", "chi-square", "degrees of freedom", "p-value", "smallest expected count"],
      [(chi.positions, chi.statistic, chi.dof, chi.p_value, chi.min_expected)],
      formats=[",d", ".1f", "d", ".2f", ".1f"])

# %% tags=["hide-input"]
Markdown(f"The statistic is close to its {chi.dof} degrees of freedom, as it should be when the sampler draws from "
         f"$S$ (p-value {chi.p_value:.2f}), and every cell expects at least {chi.min_expected:.0f} counts, so the "
         "chi-square approximation applies.\n\n"
         "Because the loss averages over selected positions only, the gradient of the loss with respect to the "
         "logits of an unselected position is exactly zero: whatever the predictor does there is neither rewarded "
         f"nor punished. It is *free* at the other {100 * (1 - bert.rho):.0f} % of positions. "
         "[`masked_lm_loss_and_grad`](../api/mlm_book.scoring.html#mlm_book.scoring.masked_lm_loss_and_grad) makes "
         "this concrete: the analytic gradient vanishes on unselected rows, moving their logits at random leaves the "
         "loss bit for bit unchanged, and on selected rows the gradient agrees with central differences.")

# %%
g = ch2.loss_gradient_check()
table(["check", "result"],
      [("largest |gradient| at unselected rows", g["grad_unselected"]),
       ("change of the loss after moving unselected logits", g["loss_change"]),
       ("selected rows: relative error against central differences", g["fd_rel_error"])],
      formats=[None, "residual"])

# %% [markdown]
# ## Theorem 1: the loss is a proper scoring rule
#
# At a selected position $i$, let $P_i(\cdot \mid \tilde x) = P(x_i = \cdot \mid \tilde x,
# i \in M)$ be the true conditional law of the hidden token given everything the predictor
# sees.
#
# **Theorem 1.** For every predictor $q$,
#
# $$\mathbb{E}\bigl[-\log q(x_i \mid \tilde x) \bigm| i \in M\bigr]
#   = \mathbb{E}\, H\bigl(P_i(\cdot \mid \tilde x)\bigr)
#   + \mathbb{E}\, \mathrm{KL}\bigl(P_i(\cdot \mid \tilde x) \,\big\|\, q(\cdot \mid \tilde x)\bigr),$$
#
# so the expected loss is smallest exactly when $q = P_i$ for almost every $\tilde x$.
#
# *Proof.* Fix the corrupted sentence $\tilde x$ and average over the hidden token only.
# Since $x_i$ has law $P_i(\cdot \mid \tilde x)$ given $\tilde x$ and $i \in M$, the
# conditional expected loss is $-\sum_y P_i(y) \log q(y)$. Writing $\log q = \log P_i -
# \log(P_i / q)$ turns it into $-\sum_y P_i \log P_i + \sum_y P_i \log(P_i/q)$, an
# entropy plus a Kullback–Leibler divergence. Averaging over $\tilde x$ gives the identity.
# The entropy does not depend on $q$; the divergence is non-negative and zero only when
# $q = P_i$ (Gibbs' inequality, i.e. Jensen's inequality for the concave logarithm), so the
# minimum is reached there and only there. $\blacksquare$
#
# Nothing in the proof used how positions were selected: the identity holds for any
# corruption, fixed-count selection included. It is the decomposition that makes the log
# score a *strictly proper* scoring rule ([Gneiting and Raftery 2007](../references.html#gneiting-2007)),
# the same one behind perplexity, applied to the hidden token. Two consequences are used
# throughout the book: the excess loss of any predictor over the best one is exactly its
# mean KL from $P_i$, and no predictor's loss can fall below the mean entropy of $P_i$.
# What makes the theorem useful is that the target $P_i$ can be written down, which is
# Theorem 2.

# %% tags=["hide-input"]
Markdown(
    "[`risk_decomposition`](../api/mlm_book.scoring.html#mlm_book.scoring.risk_decomposition) computes the risk "
    "directly and the two terms separately. The table checks the identity on random pairs of distributions over "
    f"the {ch2.HMM_VOCAB} tokens, and on the exact table of all HMM sentences of length "
    f"{ch2.BruteForceConfig().length} under BERT's "
    "fixed-count selection, with every corrupted sentence enumerated and Theorem 2's closed form as the "
    "predictor $q$."
)

# %%
n_small = ch2.BruteForceConfig().length
d, d_self = ch2.theorem1_random()
fixed = ch2.theorem1_fixed_count()
table(["case", "risk", "entropy", "KL", "risk − entropy − KL"],
      [("random p, random q", d.risk, d.entropy, d.kl, abs(d.gap)),
       ("random p, q = p", d_self.risk, d_self.entropy, d_self.kl, abs(d_self.gap)),
       (f"HMM, n = {n_small}, fixed count, closed form", fixed.risk, fixed.entropy, fixed.kl, fixed.gap)],
      formats=[None, ".4f", ".4f", ".4f", "residual"])

# %% tags=["hide-input"]
Markdown(
    "The identity holds to rounding in every row, and the risk is least at $q = p$, where the KL term vanishes. "
    "The last row shows something more: under fixed-count selection Theorem 2's closed form is *not* the "
    f"minimiser, since its mean KL to the true $P_i$ is {fixed.kl:.4f} nats, not 0. The section on fixed-count "
    "selection returns to this."
)

# %% [markdown]
# ## Theorem 2: the optimum under the channel
#
# Let $p(y) = P(x_i = y \mid \tilde x_{-i})$ be what the rest of the corrupted sentence
# says about position $i$: the *context's prediction*.
#
# **Theorem 2.** Under independent selection, the minimiser of Theorem 1 is
#
# $$q(y) = \frac{p(y)\, S(\tilde x_i \mid y)}{\sum_{y'} p(y')\, S(\tilde x_i \mid y')}.$$
#
# In particular:
#
# - (i) at a `[MASK]`, $q = p$;
# - (ii) at a visible token $v$, $q(y) = p(y)\bigl(\kappa\mathbb{1}[y = v] + r/V\bigr) /
#    \bigl(\kappa p(v) + r/V\bigr)$, so the visible token keeps
#    $q(v) = p(v)(\kappa + r/V)/(\kappa p(v) + r/V)$;
# - (iii) the selection rate $\rho$ does not appear in the formula;
# - (iv) if $r = 0 < \kappa$ then $q(v) = 1$, and if $\kappa = 0$ then $q = p$.
#
# *Proof.* Position $i$'s selection coin and its display draw are independent of the
# sentence and of every other position's coin and draw. Hence the event $i \in M$ carries
# no information about $(x, \tilde x_{-i})$, and $P(x_i = y \mid \tilde x_{-i}, i \in M) =
# p(y)$. Given $i \in M$ and the sentence, position $i$ shows $s$ with probability
# $S(s \mid x_i)$, whatever the other positions show. So
#
# $$P(x_i = y,\ \tilde x_i = s \mid \tilde x_{-i},\ i \in M) = p(y)\, S(s \mid y),$$
#
# and dividing by the sum over $y$ (Bayes' rule) gives $q = P_i$, the minimiser by Theorem 1.
# The rate $\rho$ entered only through the event $i \in M$, on which everything is
# conditioned: that is (iii). For (i), $S(\texttt{[MASK]} \mid y) = m$ is the same for every
# $y$ and cancels. For (ii), the denominator is $\sum_{y'} p(y')(\kappa\mathbb{1}[y'=v] +
# r/V) = \kappa p(v) + r/V$. For (iv), with $r = 0$ the likelihood $\kappa\mathbb{1}[y = v]$
# is zero off $v$; with $\kappa = 0$ it is $r/V$ for every $y$ and cancels. $\blacksquare$
#
# **A trap in (iii).** The shrinkage step $p \mapsto q$ does not involve $\rho$, but $p$
# does: it is the prediction from the *corrupted* context, and how corrupted the other
# positions are depends on $\rho$, $m$ and $r$. On the HMM, $p$ is computed exactly by
# forward–backward with each other position read through its full observation law
# $(1-\rho)\mathbb{1}[s = y] + \rho S(s \mid y)$
# ([`context_prediction`](../api/mlm_book.channel.html#mlm_book.channel.context_prediction));
# Theorem 2 on top of it is
# [`exact_posterior`](../api/mlm_book.channel.html#mlm_book.channel.exact_posterior). The
# table compares two selection rates: once the shrinkage step applied to the same $p$, once
# $p$ itself computed from the same corrupted sentences.

# %%
rate_a, rate_b = ch2.BruteForceConfig().rhos
rf = ch2.rho_free_check()
table([f"what is compared between ρ = {rate_a:g} and ρ = {rate_b:g}", "largest difference"],
      [("the shrinkage p ↦ q, for the same p", f"{rf['shrinkage']:.1e}"),
       ("the context's prediction p, for the same corrupted sentences", f"{rf['context']:.3f}")])

# %% tags=["hide-input"]
ex = ch2.worked_example()
names = hmm.token_names
sentence = " ".join(f"`{names[t]}`" for t in ex.tokens)
others = " ".join("`[MASK]`" if s == ch2.HMM_VOCAB else f"`{names[s]}`" for j, s in enumerate(ex.shown)
                  if j != ex.position)
Markdown(
    f"The shrinkage is the same at both rates to the last bit; the context's prediction moves by up to "
    f"{rf['context']:.3f} in probability. A trained model therefore still depends on the corruption rate, but "
    "only through how far it trusts the other positions, not through how it weighs the token at the selected one."
    "\n\n"
    f"**A worked example.** Take the sampled sentence {sentence} and select its position {ex.position + 1} "
    f"(the token `{names[ex.true_token]}`). The other positions are corrupted by BERT's channel and show "
    f"{others}. The table gives the context's prediction $p$ and the optimum $q$ when the selected position "
    f"shows `[MASK]`, its true token, or the random token `{names[ex.random_token]}`, for those two tokens and "
    "the context's favourites."
)

# %%
ch2.worked_example_table()

# %% tags=["hide-input"]
t_true, t_rand = ex.true_token, ex.random_token
Markdown(
    "At `[MASK]` the optimum is $p$ itself (Theorem 2 (i)): the blank is filled from its context alone. This is "
    "the *cloze* task, which [Taylor (1953)](../references.html#taylor-1953) introduced to measure how readable a "
    "text is: words are deleted from a passage and readers restore them. "
    f"When the true token `{names[t_true]}` is shown, its "
    f"probability rises from {ex.p[t_true]:.3f} to {ex.q['kept'][t_true]:.3f}, and every other token keeps its "
    f"share of the rest. When `{names[t_rand]}` is shown, a token the context finds implausible "
    f"(it gives it {ex.p[t_rand]:.0e}), the optimum gives it only {ex.q['random'][t_rand]:.0e} and leaves the other "
    "probabilities as they were: a visible token is a strong hint, but it cannot overrule a context that rules "
    "it out."
)

# %% [markdown]
# ## The brute-force check

# %% tags=["hide-input"]
bf = ch2.BruteForceConfig()
Markdown(
    "The closed form is checked against a computation that shares none of its code. For sentences of length "
    f"{bf.length}, "
    "[`brute_force_posterior`](../api/mlm_book.bruteforce.html#mlm_book.bruteforce.brute_force_posterior) "
    "sums the HMM over all hidden paths to get $P(x)$, then enumerates, for every position, its selection coin and "
    f"its channel draw (unselected; `[MASK]`; replaced by each of the {ch2.HMM_VOCAB} tokens; kept), keeps the "
    "combinations in which position $i$ is selected, and applies Bayes' rule to the enumerated joint of sentence "
    f"and events. Each row of the table is the largest difference over {bf.sentences} sampled sentences and all "
    f"{bf.length} positions, with position $i$ showing `[MASK]`, its own token, or a different token, at two "
    "selection rates."
)

# %%
ch2.brute_force_markdown()

# %% tags=["hide-input"]
Markdown(
    "A second, table-level check builds $P(x_i = y, \\tilde x \\mid i \\in M)$ for *every* corrupted sentence of "
    f"length {bf.length} by summing over selection sets, and compares its Bayes posterior with the closed form at "
    "every display of positive probability: the largest difference is "
    + " and ".join(f"**{ch2.dense_agreement(rho):.1e}** at $\\rho = {rho:g}$" for rho in bf.rhos)
    + ". Theorem 2 holds on this language to the rounding of double precision."
)

# %% [markdown]
# ## How strong a hint is a visible token?
#
# At a visible token $v$, Theorem 2 is Bayes' rule with likelihood ratio
#
# $$\frac{S(v \mid v)}{S(v \mid y \neq v)} = \frac{\kappa + r/V}{r/V} = 1 + \frac{\kappa V}{r},$$
#
# the *evidence factor*: seeing $v$ multiplies the odds of $v$ by it,
# $q(v)/(1 - q(v)) = (1 + \kappa V/r)\, p(v)/(1 - p(v))$. The factor grows with the
# vocabulary: a random replacement lands on any particular token only with probability
# $r/V$, so a visible token is a good witness for itself when $V$ is large. Setting
# $q(v) = 1/2$ in (ii) gives the *half-mass threshold*, below which the context overrules
# the visible token: $q(v) \ge 1/2$ exactly when $p(v) \ge (r/V)/(\kappa + 2r/V)$.

# %% tags=["hide-input"]
filing_V = ch2.filing_vocab_size()
filing_vocabulary = ch6.book_vocabulary()
Markdown(f"The HMM has $V = {ch2.HMM_VOCAB}$; the filing corpus of the finance chapter has $V = {filing_V}$: "
         f"the {filing_vocabulary.n_words} words seen at least {filing_vocabulary.min_count} times, `[UNK]` and "
         "`[SEP]`. At BERT's channel:")

# %%
evidence = ch2.evidence_table()
table(["V", "evidence factor 1 + κV/r", "r/V", "half-mass threshold on p(v)"],
      [(V, row["factor"], row["r_over_V"], row["threshold"]) for V, row in evidence.items()],
      formats=["d", ".0f", ".3e", ".4g"])

# %% tags=["hide-input"]
reference_V = ch2.REFERENCE_FILING_VOCAB
reference = ch2.evidence_table([reference_V])[reference_V]
Markdown(
    "On the filings a visible word keeps at least half the mass unless the context gives it less than "
    f"**{evidence[filing_V]['threshold']:.2g}**; on the HMM the bar is "
    f"**{evidence[ch2.HMM_VOCAB]['threshold']:.2g}**. The finance case study this book follows "
    "([where the book comes from](../references.html#where-the-book-comes-from)) used filings of its own, with "
    f"$V = {reference_V}$; the book generates its filings and counts $V = {filing_V}$, so the factor is "
    f"{evidence[filing_V]['factor']:.0f} instead of {reference['factor']:.0f} and the threshold "
    f"{evidence[filing_V]['threshold']:.4g} instead of {reference['threshold']:.4g}: the same channel on a "
    f"vocabulary {100 * (1 - filing_V / reference_V):.1f} % smaller.\n\n"
    "**Unigram replacement.** Some descriptions of BERT say the random token is drawn by unigram frequency $u$ "
    "rather than uniformly; BERT's code draws uniformly. With a unigram draw "
    "$S(v \\mid y) = \\kappa\\mathbb{1}[v = y] + r\\,u(v)$, the same proof gives "
    "$q(v) = p(v)(\\kappa + r u(v))/(\\kappa p(v) + r u(v))$, and the evidence factor becomes "
    "$1 + \\kappa/(r\\,u(v))$: it now depends on the word. A frequent word is often a replacement, so seeing it "
    "proves less; a rare word is almost never a replacement, so seeing it proves more. The figure shows $q(v)$ "
    "against $p(v)$ for both vocabularies, under uniform replacement and under a Zipf-like unigram "
    f"($u(k) \\propto k^{{-{ch2.ShrinkageConfig().zipf_exponent:g}}}$ by rank $k$), for the most and the least "
    "frequent word; the filings' own frequencies come after it."
)

# %%
show(ch2.shrinkage_figure())

# %% tags=["hide-input"]
Markdown("Evidence factors and half-mass thresholds of the curves in the figure:")

# %%
curves = ch2.shrinkage_curves()
table(["V", "replacement", "evidence factor", "half-mass threshold"],
      [(c.vocab_size, name, c.factors[name], c.thresholds[name]) for c in curves for name in c.factors],
      formats=["d", None, ".4g", ".2e"])

# %% tags=["hide-input"]
big = curves[-1]
Markdown(
    f"At $V = {big.vocab_size}$ the Zipf unigram spreads the factor from "
    f"{big.factors['unigram, frequent word']:.3g} for the most frequent word to "
    f"{big.factors['unigram, rare word']:.4g} for the rarest, on both sides of the uniform "
    f"{big.factors['uniform']:.0f}: under unigram replacement, how far a visible word is trusted depends on how "
    "common it is."
)

# %% [markdown]
# ### The filings' own word frequencies
#
# A Zipf law is a stand-in. The filings of the finance chapter give real frequencies: count
# every token of the encoded corpus, `[SEP]` and `[UNK]` included, and divide by the length
# of the stream. With the random token drawn by these frequencies $u$ (as
# `Channel(V, replacement=u)`), Theorem 2 (ii) gives a visible token $v$ the evidence factor
# $1 + \kappa/(r\,u(v))$ in place of $1 + \kappa V/r$, and the half-mass threshold
# $r u(v)/(\kappa + 2 r u(v))$ in place of $(r/V)/(\kappa + 2r/V)$.

# %%
unigram = ch2.filing_unigram_replacement()
ch2.filing_unigram_table(unigram)

# %% tags=["hide-input"]
top, first_word, median_word, rarest, everyone = (
    unigram.row(case) for case in ("most frequent token", "most frequent word", "median word", "rarest word",
                                   "uniform"))
Markdown(
    f"Counted on the {unigram.n_tokens:,} tokens of the filings, the separator `{top.token}` is "
    f"{100 * top.unigram:.1f} % of the stream. Drawn by these frequencies, the random token is often a "
    f"`{top.token}`, so a visible `{top.token}` multiplies its odds by only **{top.factor:.0f}** and keeps half "
    f"the mass only where the context gives it at least **{top.threshold:.3f}**; the most frequent word, "
    f"`{first_word.token}`, gets **{first_word.factor:.0f}**. The median word (`{median_word.token}`, seen "
    f"{median_word.count} times) gets **{median_word.factor:,.0f}**, and a rarest word (`{rarest.token}`, one of "
    f"the {unigram.rarest_ties} words seen only {unigram.min_count} times) **{rarest.factor:,.0f}**, keeping half "
    f"the mass down to a context probability of {rarest.threshold:.1e}. Uniform replacement gives every token "
    f"**{everyone.factor:.0f}**. Under unigram replacement a frequent word is a frequent replacement, so the "
    "optimum trusts a visible frequent word far less than a rare one; under BERT's uniform draw it trusts them "
    "all alike."
)

# %% [markdown]
# ## Why the random replacements matter
#
# Read (ii) and (iv) together. If the channel never substituted random tokens ($r = 0$), every
# visible token at a selected position would be the original, the optimum would copy it
# ($q(v) = 1$), and nothing in the loss would make the encoder look at the context where a
# token is visible. If it never kept tokens ($\kappa = 0$), a visible token would carry no
# information about the original at all, and the optimum would ignore it ($q = p$). With
# both, the visible token is a strong hint, worth the evidence factor, but only a hint: the
# optimum still needs $p$, the prediction from context, at every visible selected position.
# The kept tokens make the visible token informative; the random ones keep the context in
# play. Both limits, computed with
# [`optimum`](../api/mlm_book.channel.html#mlm_book.channel.optimum) on random $p$ and on
# the HMM's exact $p$:

# %%
lim = ch2.limits_check()
table(["channel", "Theorem 2 (iv) says", "largest deviation"],
      [("r = 0 < κ", "q(v) = 1", lim["copy"]), ("κ = 0", "q = p", lim["ignore"])],
      formats=[None, None, "residual"])

# %% [markdown]
# ## Fixed-count selection
#
# Theorem 2's proof used one fact about selection: that $i \in M$ tells nothing about the
# other positions. Under BERT's fixed count it does. Given that $i$ is one of the $k$
# selected positions, exactly $k - 1$ of the others are selected too; when $k = 1$ the
# others are certainly clean. The formula of Theorem 2 still gives the right *shrinkage*,
# because position $i$'s own display is drawn from $S$ whatever the selection law; what goes
# wrong is $p$, which should be $P(x_i \mid \tilde x_{-i}, i \in M)$ and is not
# $P(x_i \mid \tilde x_{-i})$ any more.
#
# Given $i \in M$, each other position is selected with probability $(k - 1)/(n - 1)$, the
# *matched* rate. When $k = 1$ that rate is 0 and when $k = n$ it is 1: every other
# position's selection is then certain, so the selections are independent given $i \in M$,
# the proof of Theorem 2 goes through at the matched rate, and the closed form at rate
# $(k - 1)/(n - 1)$ is the exact posterior. For $1 < k < n$ no rate makes it exact in
# general: the count couples the other positions' selections, which no independent rate can
# express.
#
# [`fixed_count_posterior`](../api/mlm_book.bruteforce.html#mlm_book.bruteforce.fixed_count_posterior)
# computes the exact posterior under fixed-count selection. A uniform set of $k$ positions
# containing $i$ is the same as a fair coin for each other position conditioned on exactly
# $k - 1$ heads, so a forward–backward pass over (hidden state, number selected so far) sums
# over all $\binom{n-1}{k-1}$ selection sets at once.

# %% tags=["hide-input"]
chain = inspect.signature(ch2.count_chain_agreement).parameters
longest_single = max(n for n in range(1, 100) if selection_count(n, bert.rho) == 1)
Markdown(
    "The pass agrees with an explicit enumeration of the sets to "
    f"**{ch2.count_chain_agreement():.0e}** (on sampled sentences of lengths "
    f"{', '.join(str(n) for n in chain['lengths'].default)} at $\\rho = {chain['rho'].default:g}$). At BERT's rate "
    f"$k = 1$ for every sentence of up to {longest_single} tokens, so there the closed form is exact at rate 0 "
    f"and not at the nominal $\\rho$ (the last row of the Theorem 1 table, where $n = {n_small}$ and "
    f"$k = {selection_count(n_small, bert.rho)}$). How far it is from the exact posterior at either rate, over "
    "sentence lengths and rates, is measured in [chapter 11](11_caveats.html#a-fixed-number-of-masks). A trained "
    "encoder can be compared with the closed form cleanly only when it is trained and evaluated with "
    "independent selection, as the encoder of this chapter is."
)

# %% [markdown]
# ### BERT's own count
#
# The count above is the book's, $k = \max(1, \operatorname{round}(\rho n))$ of a sentence's
# $n$ tokens. BERT's released `create_pretraining_data.py`
# ([Devlin et al. 2019](../references.html#devlin-2019)) computes it from the whole input,
# special tokens included:
#
# ```python
# num_to_predict = min(max_predictions_per_seq,
#                      max(1, int(round(len(tokens) * masked_lm_prob))))
# ```
#
# Every input the script writes is a sentence pair `[CLS] A [SEP] B [SEP]`, so for $n$ content
# tokens `len(tokens)` is $n + 3$ ($n + 2$ for a single segment `[CLS] x [SEP]`), while `[CLS]`
# and `[SEP]` are never candidates: the positions are drawn from the $n$ content tokens only.
# [`bert_prediction_count`](../api/mlm_book.channel.html#mlm_book.channel.bert_prediction_count)
# computes this count.

# %%
longest = ch6.Chapter6Config().window_length  # the length of the finance chapters' windows

# %% tags=["hide-input"]
readme_length, readme_cap = ch2.BERT_README_SEQ_LENGTH, ch2.BERT_README_MAX_PREDICTIONS
readme_count = bert_prediction_count(readme_length - 3)
Markdown(
    "The cap `max_predictions_per_seq` is a flag of the script; the example in BERT's README sets it to "
    f"{readme_cap} for inputs of {readme_length} tokens, where the count is "
    f"$\\operatorname{{round}}({bert.rho:g} \\times {readme_length}) = "
    f"\\operatorname{{round}}({bert.rho * readme_length:g}) = {readme_count}$, so "
    + ("the cap does not bind there. " if readme_count < readme_cap else "the cap binds there. ")
    + f"Up to $n = {longest}$, the length of the finance chapter's windows, BERT's count differs from the book's "
    "at these lengths:"
)

# %%
differing = ch2.bert_count_differences(longest)
table(["content tokens n", "book: max(1, round(ρn))", "BERT, one segment: n + 2", "BERT, sentence pair: n + 3"],
      differing, formats=["d", "d", "d", "d"])

# %% tags=["hide-input"]
halves = ch2.rounding_halves(readme_length)
disagree = [(length, new, old) for length, new, old in halves if new != old]
pair_extra = sorted({pair - book for _, book, _, pair in differing})
single_more = sum(single != book for _, book, single, _ in differing)
Markdown(
    f"At these {len(differing)} of the {longest} lengths BERT's count for a sentence pair is "
    f"{' or '.join(str(extra) for extra in pair_extra)} more than the book's, and for a single segment at "
    f"{single_more} of them: the two or three special tokens push $\\rho \\times$ `len(tokens)` past the next "
    "half. At every other length the counts agree.\n\n"
    "The book's channel analyses keep $\\max(1, \\operatorname{round}(\\rho n))$ on the content tokens, and "
    "that is the right object for the theorems. The HMM's sentences have no `[CLS]` or `[SEP]`, and what the "
    "fixed-count analysis conditions on is the number $k$ of selected positions among the $n$ positions that can "
    "be selected and predicted: given $k$, the exact posterior is the same whether or not tokens that are never "
    "selected sit around the sentence. BERT's special tokens change only which $k$ goes with which $n$. To match "
    f"BERT at a length $n$, take $k$ = `bert_prediction_count(n)`: up to $n = {longest}$ it is never below the "
    f"book's $k$ and at most {max(pair_extra)} above it.\n\n"
    f"**Rounding.** At $\\rho = {bert.rho:g}$, $\\rho \\times$ length $\\ell$ is exactly a half when "
    "$3\\ell = 20j + 10$ for an integer $j$, which has solutions: up to "
    f"{readme_length} tokens, $\\ell$ = {', '.join(str(length) for length, _, _ in halves)}, and the "
    "floating-point product is then exactly a half as well. Python 3's `round` sends a half to the even "
    "neighbour, Python 2's away from zero; BERT's README says its code was tested with both, more thoroughly with "
    "Python 2, the version Google used internally. The two counts differ at "
    + ", ".join(f"{length} tokens ({new} in Python 3, {old} in Python 2)" for length, new, old in disagree)
    + ". The book rounds the Python 3 way, in its own count and in `bert_prediction_count`."
)

# %% [markdown]
# ### Eight words under BERT's count
#
# The corruption is often illustrated on one sentence, *so long and thanks for all the
# fish*, shown as *so `[MASK]` and `[MASK]` for all apricot fish*: three of the eight words
# selected, two shown as `[MASK]` and one replaced by another word. Under BERT's own rule,
# how likely is that outcome?
# [`outcome_probability`](../api/mlm_book.experiments.ch02_objective.html#mlm_book.experiments.ch02_objective.outcome_probability)
# gives the exact probability of a named outcome, with $V$ = 30,522 as in BERT's English
# vocabulary, and
# [`selected_count_law`](../api/mlm_book.experiments.ch02_objective.html#mlm_book.experiments.ch02_objective.selected_count_law)
# the law of the number of selected words, under BERT's count for the sentence as one
# segment and under the independent coins of Definition 2 at the same rate.

# %%
fish = ch2.fish_corruption()
table(["words selected"] + [str(s) for s in range(len(fish.tokens) + 1)],
      [["BERT's count, one segment"] + list(fish.law["bert"]),
       [f"independent, ρ = {fish.rho:g}"] + list(fish.law["independent"])],
      formats=[None] + [".4f"] * (len(fish.tokens) + 1))

# %%
ch2.outcome_probability(8, masked=2, replaced=1)  # long, thanks → [MASK]; the → apricot; nothing else selected

# %% tags=["hide-input"]
n_fish, chosen = len(fish.tokens), len(fish.outcome)
Markdown(
    f"With `[CLS]` and `[SEP]` the input has {n_fish + 2} tokens, and "
    f"$\\operatorname{{round}}({fish.rho:g} \\times {n_fish + 2}) = "
    f"\\operatorname{{round}}({fish.rho * (n_fish + 2):g}) = {fish.count_one_segment}$ (a half, which Python 3 and "
    f"Python 2 both round to {fish.count_one_segment} here); with a pair's three special tokens the count is "
    f"{fish.count_pair} as well. BERT's script selects exactly {fish.count_one_segment} of the {n_fish} words, "
    f"so an outcome with {chosen} selected has probability **{fish.outcome_probability['bert']:g}**: it cannot "
    f"happen. Under independent coins it can, with probability "
    f"$\\rho^{chosen}(1-\\rho)^{n_fish - chosen}\\,m^2\\,r/V$ = "
    f"**{fish.outcome_probability['independent']:.2e}**, and {chosen} of {n_fish} words are selected in "
    f"{100 * fish.law['independent'][chosen]:.1f} % of corruptions. BERT's count reaches {chosen} for this "
    f"sentence only from $\\rho = {fish.smallest_rate_for_outcome:g}$ on. The nearest outcome BERT can produce, "
    f"*long* and *thanks* shown as `[MASK]` and nothing else selected, has probability "
    f"$m^2/\\binom{{{n_fish}}}{{2}}$ = **{fish.two_masks:.4f}**. What the two selected words show, whichever "
    "they are:"
)

# %%
table(["the two selected words show", "probability"], list(fish.kinds.items()), formats=[None, ".4f"])

# %% tags=["hide-input"]
Markdown(
    f"Both are shown as `[MASK]` in {100 * fish.kinds['[MASK] + [MASK]']:.0f} % of corruptions, and in "
    f"{100 * fish.kinds['own word + own word']:.0f} % the sentence comes through unchanged, with two words still "
    "selected for the loss. “Other word” means a random draw that is not the word itself, $r(1 - 1/V)$; "
    "“own word” a kept word or a random draw that returns it, $\\kappa + r/V$."
)

# %% [markdown]
# ## A trained encoder against the exact posterior
#
# Theorems 1 and 2 say what the best predictor is; they do not say that training finds it.
# On the HMM we can measure how close a small trained encoder comes, position by position,
# because the target $P_i(\cdot \mid \tilde x)$ is computable.

# %% tags=["hide-input"]
e = SETUP.encoder
Markdown(
    "**The encoder** is a small BERT-style model, not BERT scaled down (the differences are listed after its "
    "configuration): a bidirectional transformer encoder "
    f"([Vaswani et al. 2017](../references.html#vaswani-2017)) of width $d = {e.d_model}$ with {e.n_blocks} "
    f"blocks of {e.n_heads} attention heads, written in NumPy with hand-written backward passes "
    "([`mlm_book.nn`](../api/mlm_book.nn.html)). The diagram is drawn from its configuration; read it from the "
    "bottom up."
)

# %%
channel = SETUP.channel()
show(ch2.figure_architecture(SETUP.encoder, rho=channel.rho))

# %% tags=["hide-input"]
Markdown(
    f"**Tables.** A shown token $\\tilde x_i$ enters as $E[\\tilde x_i] + P_i$: a row of the token table $E$ "
    f"({e.input_vocab_size} rows, one per token and one for `[MASK]`) plus a row of the learned position table "
    f"$P$ ({e.length} rows, one per position). This is layer 0, and it is still a static embedding in the sense "
    "of Chapter 1: at a fixed position it depends on the token alone.\n\n"
    f"**Blocks.** The {e.n_blocks} blocks that follow are *pre-LN* "
    "([Xiong et al. 2020](../references.html#xiong-2020)): each "
    "normalises its input before each sub-layer and adds the sub-layer's output back to the residual stream: "
    "$h = x + \\operatorname{MHA}(\\operatorname{LN}_1(x))$, then "
    "$x' = h + \\operatorname{MLP}(\\operatorname{LN}_2(h))$, with LayerNorm "
    f"([Ba et al. 2016](../references.html#ba-2016)) and an MLP of width {e.mlp_ratio}$d$ with the GELU "
    f"nonlinearity ([Hendrycks and Gimpel 2016](../references.html#hendrycks-2016)). Each of the "
    f"{e.n_heads} attention heads projects its input $X$ to queries $Q$, keys $K$ and values $V$ of width "
    f"$d_k = d/{e.n_heads}$ and returns $\\operatorname{{softmax}}(QK^\\top/\\sqrt{{d_k}} + M)\\,V$, a weighted "
    "average of the values in which row $i$'s weights say how much position $i$ reads each position $j$. The "
    "mask $M$ is what separates the two families of chapter 10: a causal model sets $M_{ij} = -\\infty$ for "
    "$j > i$, so those weights are exactly zero and position $i$ reads only itself and its left; this encoder sets $M = 0$, "
    "*no* causal mask, so every position reads every other, to its left and to its right: this is where context "
    "enters.\n\n"
    "**The tied head.** A final LayerNorm and the same table $E$ turn the last layer into logits, "
    "$\\operatorname{LN}(x_L) E^\\top/\\sqrt d + b$: a token scores high when its input vector points the way "
    "the final state does. There is no second output table, and the `[MASK]` row of $E$ is used for input only, "
    "never as a target.\n\n"
    "**The loss only at selected positions.** Every sentence is corrupted by the channel of this chapter, and the "
    "cross-entropy against the clean token is taken only at the selected positions, a share "
    f"$\\rho = {channel.rho:g}$ of them, whatever they show. As shown at the start of the chapter, the other "
    "positions receive no gradient, so the last block's queries, output projection and MLP are run on the "
    "selected rows alone.\n\n"
    "The encoder is trained on fresh corrupted sentences at every step, with BERT's settings and *independent* "
    "selection, the case in which Theorem 2 is exact. Its configuration:"
)

# %%
table(["setting", "value"], SETUP.rows())

# %% [markdown]
# ### Where it differs from BERT
#
# The encoder follows BERT in its objective, its learned position table, its tied output
# table and its biases, but not everywhere in its architecture. Each
# difference below is a property of [`mlm_book.nn.encoder`](../api/mlm_book.nn.encoder.html),
# with what it could change in the geometry that [chapter 4](04_geometry.html) measures on
# this encoder and [chapter 7](07_filing_encoder.html#the-geometry-of-kestrel) on the encoder
# trained on the filings, which is built the same way.
#
# * **Pre-LN instead of post-LN.** BERT, like the original transformer, normalises *after*
#   each residual addition, $x' = \operatorname{LN}(x + \operatorname{Sublayer}(x))$, so every
#   layer it outputs has been through a LayerNorm, with its learned gain and offset. Here the
#   residual stream is never normalised between blocks, and the hidden states that chapters 4
#   and 7 read are that raw stream (the last one taken before the final LayerNorm). Cosines
#   ignore a vector's length, but not an offset added to every vector, which raises all
#   cosines together, nor a gain that stretches a few coordinates. In BERT a few coordinates of
#   very large magnitude dominate the cosines between hidden states, and with them the
#   anisotropy ([Timkey and van Schijndel 2021](../references.html#timkey-2021)); the book's
#   anisotropy baselines are this encoder's, and say nothing about whether its stream has such
#   coordinates.
# * **No LayerNorm on the embedding sum.** BERT's layer 0 is the LayerNorm of the sum of
#   its token, position and segment rows; here it is $E[\tilde x_i] + P_i$ itself. Chapter 4
#   explains layer 0's self-similarity from the lengths of the token row and the position rows
#   ([where the spread comes from](04_geometry.html#where-the-spread-comes-from)), and
#   chapter 7 its anisotropy baseline from a position row shared by every token. Both
#   accounts apply to the raw sum; in BERT they would apply to the centred, rescaled sum, with
#   the LayerNorm's offset shared by every token.
# * **No segment embeddings in the masked LM.** BERT adds the row of segment A or B to
#   every input; the masked-LM encoders here have no segment table (the sentence-pair encoder
#   of [chapter 8](08_sentence_pairs.html) adds one). In a single-segment input BERT's segment
#   row is one more vector shared by every layer-0 state, so it would raise a layer-0
#   anisotropy baseline the way a shared position row does in chapter 7.
# * **No transform before the tied head.** BERT's masked-LM head passes the last layer
#   through a dense layer, a GELU and a LayerNorm before scoring it against the token table.
#   Here only the final LayerNorm stands between the last layer and the table, so training
#   shapes the last layer's states directly as queries against the rows of $E$. The last-layer
#   geometry of chapters 4 and 7 may therefore follow the token table more closely than
#   BERT's last layer follows its own.
# * **A factor $1/\sqrt d$ on the logits.** BERT has none. The final LayerNorm's gain and
#   offset can absorb the factor, so it changes nothing the encoder can compute; it sets the
#   scale of the logits when training starts, and with it the lengths at which training
#   leaves the rows of $E$, which are among the lengths chapter 4's account of layer 0 reads.
# * **No dropout.** BERT applies dropout at rate 0.1 during pre-training; the book's
#   encoders use none.

# %% tags=["hide-input"]
grad = hmm_encoder.gradient_check_result()
Markdown(
    f"Every backward pass is checked against central differences in double precision, on {grad.n_entries:,} "
    "entries of every parameter tensor and of the input embeddings of a narrowed copy of the encoder (same "
    f"architecture, smaller width): the largest relative error is **{grad.max_error:.1e}**. The training loss:"
)

# %%
show(hmm_encoder.loss_curve_figure())

# %% [markdown]
# The moving average approaches the floor and stays above it, as Theorem 1 requires of any
# predictor's risk; single batches dip below it only because each is a noisy estimate. How
# far above the floor the encoder ends is measured on held-out data: the selected positions of sentences the
# encoder never saw, corrupted by the same channel. There the exact posterior of Theorem 2
# is computed at every position and compared with the encoder's output, distribution
# against distribution.

# %% [markdown]
# Training is random (the initial weights and the order of the batches), so one trained
# encoder is one draw. The same encoder was trained at five seeds, every other setting and the
# data source unchanged; each table below shows the book's encoder (the one whose loss curve is
# above) and, beside it, the mean ± standard deviation over the five with the smallest and
# largest value. The exact posterior's numbers do not depend on training and have no spread.

# %%
ev = evaluation()
evs = hmm_encoder.seed_evaluations()
cell = hmm_encoder.band_cell
table(["quantity", "book's encoder", "5 seeds: mean ± sd (min–max)"],
      [("held-out sentences", f"{ev.n_sequences}", "same sample"),
       ("selected positions", f"{ev.n_positions:,}", "same sample"),
       ("cross-entropy of the exact posterior (nats)", f"{ev.exact_ce:.3f}", "exact"),
       ("cross-entropy of the encoder (nats)", f"{ev.encoder_ce:.3f}", cell(lambda e: e.encoder_ce)),
       ("difference, with its standard error", f"{ev.ce_gap:.3f} ± {ev.gap_se:.3f}", cell(lambda e: e.ce_gap)),
       ("mean KL(exact ‖ encoder) (nats)", f"{ev.mean_kl:.3f}", cell(lambda e: e.mean_kl)),
       ("KL as a share of the mean entropy", f"{100 * ev.kl_share:.1f} %",
        cell(lambda e: 100 * e.kl_share, ".1f") + " %"),
       ("mean entropy of the exact posterior (nats)", f"{ev.mean_entropy:.3f}", "exact")])

# %% tags=["hide-input"]
Markdown(
    "The two cross-entropies score each distribution on the one clean token each position hid: the exact "
    f"posterior gets **{ev.exact_ce:.3f}** nats and the encoder **{ev.encoder_ce:.3f}**, a gap of "
    f"**{ev.ce_gap:.3f}** with standard error {ev.gap_se:.3f}, since it rests on one sampled token per position. "
    "The mean KL needs no sampling: it compares the two distributions in full, and by Theorem 1 it is exactly the "
    f"encoder's excess risk over the best predictor. It is **{ev.mean_kl:.3f}** nats, "
    f"**{100 * ev.kl_share:.1f} %** of the **{ev.mean_entropy:.3f}**-nat mean entropy that no predictor can "
    f"avoid (the identity of Theorem 1 holds on these outputs to {ev.theorem1_gap:.0e}). Over the five seeds the "
    f"KL ranges from {min(e.mean_kl for e in evs):.3f} to {max(e.mean_kl for e in evs):.3f} nats (the book's "
    f"encoder is number {sorted(e.mean_kl for e in evs).index(ev.mean_kl) + 1} of the five, closest first); every seed stays under 3 % of the entropy and within the 0.1-nat bound "
    "on the cross-entropy gap. Broken down by what the selected position "
    "shows:"
)

# %%
share = {"mask": channel.mask, "kept": channel.keep, "random": channel.random}
table(["position shows", "share of training targets", "held-out positions", "mean KL, book's encoder",
       "mean KL, 5 seeds"],
      [(kind if kind != "mask" else "[MASK]", share[kind], ev.counts[kind], ev.kl_by_kind[kind],
        cell(lambda e, kind=kind: e.kl_by_kind[kind]))
       for kind in sorted(ev.kl_by_kind, key=ev.kl_by_kind.get)],
      formats=[None, ".2f", "d", ".3f", None])

# %% tags=["hide-input"]
order = sorted(ev.kl_by_kind, key=ev.kl_by_kind.get)
label = {"mask": "`[MASK]`", "kept": "a kept token", "random": "a random substitute"}
Markdown(
    f"The divergence is smallest at {label[order[0]]}, larger at {label[order[1]]} and largest at "
    f"{label[order[2]]}, and the order is the same at every one of the five seeds. Theorem 2 does not predict "
    "this ordering: it says what the target is at each kind of "
    "position, not how hard that target is to learn. Two things account for it.\n\n"
    "The first is how often training asks each question. Of the selected positions, the channel shows `[MASK]` at "
    f"a share $m = {channel.mask:g}$ and a kept or a random token at $\\kappa = {round(channel.keep, 12):g}$ and "
    f"$r = {channel.random:g}$, so the encoder sees about {channel.mask / channel.random:.0f} times as many "
    "`[MASK]` targets as kept ones or random ones.\n\n"
    "The second separates kept tokens from random ones, which training shows equally often: where the target "
    "sits on the curve of Theorem 2 (ii). In odds, the curve multiplies the context's odds of the visible token by "
    "the evidence factor, so an error $\\varepsilon$ in the encoder's log-odds of that token moves the target "
    "$q(v)$ by about $q(v)(1 - q(v))\\,\\varepsilon$: a lot where $q(v)$ is near $1/2$, little where it is near 0 "
    "or 1. The table below places the held-out visible tokens on the curve, using the exact $p$ and $q$."
)

# %%
vis = ch2.visible_tokens()
table(["position shows", "positions", "median context p(v)", "mean optimum q(v)", "share with q(v) > 1/2"],
      [(kind, vis.counts[kind], vis.median_context[kind], vis.mean_optimum[kind], vis.believed[kind])
       for kind in ("kept", "random")],
      formats=[None, "d", ".3f", ".3f", ".2f"])

# %% tags=["hide-input"]
Markdown(
    "A kept token is the true one, which the context usually finds plausible: the optimum gives it more than half "
    f"its mass at {100 * vis.believed['kept']:.0f} % of kept positions, on the flat top of the curve, where a small "
    "error in the encoder's reading of the context hardly moves the target. A random substitute is usually a token "
    f"the context finds unlikely, but not very unlikely: its median $p(v)$ of {vis.median_context['random']:.3f} "
    f"is close to the half-mass threshold {vis.threshold:.3f}, and the optimum believes it at "
    f"{100 * vis.believed['random']:.0f} % of random positions and not at the rest. Random substitutes thus sit on "
    "the steep middle of the curve, where the same error moves the target most. The largest divergence being "
    "there is consistent with this; the book does not test the mechanism further.\n\n"
    "**The shrinkage, read off the encoder.** Theorem 2 (ii) can also be tested on the encoder itself. At each kept "
    "position, replace the token by `[MASK]` and ask the encoder for its guess $\\hat p$; the formula turns that "
    "guess into the probability the visible token should keep, "
    "$\\hat p(v)(\\kappa + r/V)/(\\kappa \\hat p(v) + r/V)$. Averaged over the kept positions:"
)

# %%
table(["at kept positions, mean probability of the visible token", "book's encoder", "5 seeds"],
      [("the encoder's [MASK] guess p̂(v)", ev.kept_mask_guess, cell(lambda e: e.kept_mask_guess)),
       ("the encoder, seeing the token", ev.kept_encoder, cell(lambda e: e.kept_encoder)),
       ("Theorem 2 (ii) applied to the [MASK] guess", ev.kept_plugin, cell(lambda e: e.kept_plugin)),
       ("the exact posterior", ev.kept_exact, "exact")],
      formats=[None, ".3f", None])

# %% tags=["hide-input"]
Markdown(
    f"Seeing the token raises the encoder's probability of it from **{ev.kept_mask_guess:.3f}** (its guess with "
    f"`[MASK]` there) to **{ev.kept_encoder:.3f}**, a ratio of the two means of "
    f"**{ev.kept_encoder / ev.kept_mask_guess:.1f}**. The formula, fed the same guesses, gives "
    f"**{ev.kept_plugin:.3f}** (a ratio of **{ev.kept_plugin / ev.kept_mask_guess:.1f}**), and the exact posterior "
    f"**{ev.kept_exact:.3f}**. Two other behaviours were possible, and the numbers rule out both. An encoder that "
    f"ignored the visible token would stay at its guess, {ev.kept_mask_guess:.3f} (a ratio of 1). An encoder that "
    "copied it, which is the optimum only when the channel never substitutes random tokens (Theorem 2 (iv)), would "
    f"put probability 1 on it (a ratio of {1 / ev.kept_mask_guess:.1f}). The encoder sits within "
    f"{abs(ev.kept_plugin - ev.kept_encoder):.3f} of the formula and far from both: it has learned the shrinkage "
    "toward the visible token, not a copy of it. So do the other four: across the seeds the encoder's "
    f"probability of the kept token stays within {max(abs(e.kept_plugin - e.kept_encoder) for e in evs):.3f} of "
    "the formula and above twice its own guess"
    + (", and it is below the formula at every seed." if all(e.kept_encoder < e.kept_plugin for e in evs) else ".")
    + " [Chapter 7](07_filing_encoder.html#what-the-encoder-keeps-of-a-visible-word) puts the same test to the "
    "encoder trained on the filings."
)

# %% [markdown]
# ## An inert parameter: the key bias
#
# Each attention block computes queries, keys and values as $x W + b$, with one bias vector
# for each, as BERT does. The key bias is a curiosity: it adds $q_i \cdot b_k$ to every score
# of query $i$'s row, the same amount for every key $j$, and the softmax over $j$ cancels any
# amount added to a whole row. So the key bias changes no output, and its exact gradient is
# zero. A computed gradient there holds only rounding. Adam divides each step by the running
# size of the gradient plus a small constant $\epsilon$
# ([Kingma and Ba 2015](../references.html#kingma-2015)), so it does not simply scale rounding
# noise up to the size of a real step: for a gradient of steady size $|g|$ and sign, the step is the
# learning rate times about $|g|/(|g| + \epsilon)$, near 1 for a real gradient and small for
# one far below $\epsilon$. The package measures all of this on the trained encoder:

# %%
kb = hmm_encoder.key_bias_check()
rows = []
for block, (grad64, grad32, value) in enumerate(zip(kb.gradient_rms["float64"], kb.gradient_rms["float32"],
                                                    kb.value_rms)):
    for k, part in enumerate(("query", "key", "value")):
        rows.append((block + 1, part, grad64[k], grad32[k], value[k]))
table(["block", "bias", "gradient rms (float64)", "gradient rms (float32)", "trained value rms"], rows,
      formats=[None, None, ".1e", ".1e", ".4f"])

# %% tags=["hide-input"]
import math

trained_dtype, adam_eps = SETUP.training.dtype, SETUP.training.eps
key_grads = [g[1] for g in kb.gradient_rms[trained_dtype]]
query_grads = [g[0] for g in kb.gradient_rms[trained_dtype]]
Markdown(
    f"On {kb.sequences} held-out corrupted sentences the key bias's gradient is at the level of rounding in both "
    "precisions, while the query and value biases get gradients of ordinary size. The encoder trains in "
    f"{trained_dtype}, with Adam's $\\epsilon = 10^{{{math.log10(adam_eps):.0f}}}$. There the key bias's gradient has rms "
    + " and ".join(f"{g:.1e}" for g in key_grads)
    + " in the two blocks, far below $\\epsilon$, so a step driven by it is only about "
    "$|g|/(|g| + \\epsilon) =$ "
    + " and ".join(f"{g / (g + adam_eps):.2g}" for g in key_grads)
    + " of a full step; the query bias's gradient, of rms "
    + " and ".join(f"{g:.1e}" for g in query_grads)
    + ", loses at most "
    f"{100 * max(adam_eps / (g + adam_eps) for g in query_grads):.1g} % of its step. Rounding still moves the key bias, but "
    "slowly. The trained key bias is not at its starting value 0: its root-mean-square is "
    + " and ".join(f"{v[1]:.4f}" for v in kb.value_rms)
    + " in the two blocks, against "
    + " and ".join(f"{v[0]:.4f}" for v in kb.value_rms)
    + " for the query bias: the distance rounding noise walked it under Adam. It does nothing: setting every key "
    f"bias to 0 changes no predicted probability by more than **{kb.zeroed_difference:.1e}**, the float32 rounding "
    "of the forward pass itself. The book keeps the key bias, because BERT has it and because the point of the "
    "encoder is to be the model whose objective the theorems describe; it costs "
    f"{SETUP.encoder.n_blocks * SETUP.encoder.d_model} parameters that never matter. The price is only that two "
    "machines train encoders whose key biases differ while everything they compute agrees to rounding."
)

# %% [markdown]
# ## What this chapter shows

# %% tags=["hide-input"]
Markdown(
    "* The masked-LM loss is a strictly proper scoring rule. Its expected value is the entropy of the hidden "
    "token's true conditional plus the KL divergence from it, so the best predictor is that conditional, "
    "whatever the selection rule (Theorem 1).\n"
    "* Under independent selection the conditional has a closed form: Bayes' rule with the context's prediction "
    "as prior and the channel as likelihood (Theorem 2). On the HMM it agrees with brute-force enumeration to "
    f"{max(r.max_abs for r in ch2.brute_force_rows()):.0e}.\n"
    "* A visible token multiplies the odds of itself by $1 + \\kappa V/r$, "
    f"{evidence[ch2.HMM_VOCAB]['factor']:.0f} on the HMM and {evidence[filing_V]['factor']:.0f} on the "
    "filings; with the random token drawn by the filings' word frequencies instead, by "
    f"{top.factor:.0f} for `{top.token}` up to {rarest.factor:,.0f} for the rarest words. The kept tokens make a "
    "visible token informative; the random ones keep the context in play.\n"
    "* BERT's fixed-count selection breaks Theorem 2's assumption: the shrinkage survives, the context's "
    "prediction does not. The closed form is exact at the matched rate $(k - 1)/(n - 1)$ only when $k = 1$ or "
    "$k = n$; the exact posterior is still computable.\n"
    f"* A small encoder trained with independent selection ends {ev.mean_kl:.3f} nats "
    f"({100 * ev.kl_share:.1f} % of the entropy) from the exact optimum "
    f"({min(e.mean_kl for e in evs):.3f} to {max(e.mean_kl for e in evs):.3f} over five training seeds), closest "
    "at `[MASK]`, and at kept tokens it applies Theorem 2's shrinkage to its own guess, at every seed.\n\n"
    "The next chapter asks whether the conditionals such a model learns, one position at a time, fit together "
    "into a single joint distribution over sentences."
)

# %% [markdown]
# ## Exercises
#
# **Exercise 1.** BERT's English vocabulary has 30,522 WordPiece tokens
# ([Schuster and Nakajima 2012](../references.html#schuster-2012); [Wu et al. 2016](../references.html#wu-2016)). At BERT's channel,
# by what factor does a visible token multiply its odds, and below what context probability
# does the optimum give it less than half its mass? What happens to both numbers if the
# channel swaps the roles of its two small shares, replacing more often than it keeps
# ($\kappa = 0.05$, $r = 0.15$)?

# %% tags=["hide-input"]
wordpiece = Channel(30522)
swapped = Channel(30522, mask=0.8, random=0.15)
answer(
    f"`evidence_factor(Channel(30522))` gives **{evidence_factor(wordpiece):,.0f}** and "
    f"`half_mass_threshold(Channel(30522))` gives **{half_mass_threshold(wordpiece):.2e}**: a visible word keeps "
    "most of the mass unless the context gives it almost nothing. With $\\kappa = "
    f"{round(swapped.keep, 12):g}$ and $r = {swapped.random:g}$ the factor $1 + \\kappa V/r$ falls to "
    f"**{evidence_factor(swapped):,.0f}** and the threshold rises to **{half_mass_threshold(swapped):.2e}**. "
    "Both shares matter only through their ratio $\\kappa/r$: the factor compares the chance $\\kappa + r/V$ "
    "that a position whose token is $v$ shows $v$ with the chance $r/V$ that a position holding another token "
    "shows it. At a vocabulary this large even a three times weaker hint is still very strong."
)

# %% [markdown]
# **Exercise 2.** A lazy predictor treats every selected position as if it showed `[MASK]`:
# it answers the context's prediction $p$ even where a token is visible. Using Theorem 1,
# how much loss does it pay for that per visible selected position of the held-out sample,
# and per selected position overall? Compare with the trained encoder's excess risk.

# %% tags=["hide-input"]
visible_share = (vis.counts["kept"] + vis.counts["random"]) / vis.selected
answer(
    "Given the corrupted sentence, Theorem 1 says the lazy predictor's excess loss at a position is "
    "$\\mathrm{KL}(q \\| p)$, the divergence of $p$ from the optimum $q$. At `[MASK]` the two agree and it loses "
    f"nothing. Over the {vis.counts['kept'] + vis.counts['random']} visible selected positions, "
    f"`ch2.visible_tokens().visible_ignore_cost` gives **{vis.visible_ignore_cost:.3f}** nats. Visible tokens are "
    f"{100 * visible_share:.0f} % of the selected positions, so per selected position the lazy predictor pays "
    f"**{visible_share * vis.visible_ignore_cost:.3f}** nats, against the trained encoder's {ev.mean_kl:.3f}: "
    f"about {visible_share * vis.visible_ignore_cost / ev.mean_kl:.0f} times more. The hint a visible token "
    "carries is worth a lot, and the encoder has learned to use most of it."
)

# %% [markdown]
# **Exercise 3.** At a random substitute the shown token is the original only by the luck of
# the uniform draw, once in $V$ draws. Yet the table of held-out visible tokens shows the
# optimum giving a random substitute more than half its mass at a large share of random
# positions. Is the optimum overconfident? Check it against all visible positions together.

# %% tags=["hide-input"]
answer(
    "No. The optimum cannot see whether a visible token was kept or drawn at random; it is calibrated over the "
    "positions it cannot tell apart, not over the random ones alone. Over all "
    f"{vis.counts['kept'] + vis.counts['random']} visible selected positions of the held-out sample, its mean "
    f"probability of the visible token is **{vis.visible_mean_optimum:.3f}** "
    "(`ch2.visible_tokens().visible_mean_optimum`), and the visible token is the original at a share "
    f"**{vis.visible_original_share:.3f}** of them (`visible_original_share`), equal within the sampling error of "
    "a few hundred positions. A random substitute that the context finds plausible looks exactly like a kept "
    "token, so the optimum must give it the kept token's probability."
)

# %% [markdown]
# ## Claims

# %% tags=["hide-input"]
chapter_summary(verify(claims=ch2.CLAIMS + hmm_encoder.CLAIMS))
