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
# # Chapter 3 — Pseudo-likelihood and the missing joint
#
# A masked language model is trained to guess a hidden token from the tokens around it.
# That is a different task from giving every sentence a probability. This chapter asks
# two questions about the difference. First: if the model sees exactly one hidden
# position, what does minimising its loss estimate? The answer is a classical estimator,
# Besag's pseudo-likelihood, and we watch it converge on a model whose exact answer is
# known. Second: can the conditionals a masked model learns be assembled back into a
# joint distribution over sentences? Brook's lemma says a genuine joint is determined by
# its conditionals, and a corollary of it gives a test, the four-cycle test, that any
# family of conditionals can fail. The exact conditionals of the book's HMM pass it to
# rounding; the population optimum of the masked-LM objective under BERT's corruption
# does not.
#
# The code behind every number is in [`mlm_book.ising`](../../api/mlm_book.ising/),
# [`mlm_book.compat`](../../api/mlm_book.compat/) and
# [`mlm_book.experiments.ch03_pseudo_likelihood`](../../api/mlm_book.experiments.ch03_pseudo_likelihood/).

# %%
import numpy as np
from IPython.display import Markdown

from mlm_book.experiments import ch03_pseudo_likelihood as ch3

# %% [markdown]
# ## One mask is pseudo-likelihood
#
# Let $x = (x_1, \dots, x_n)$ be drawn from a law $p$, and let $q$ be a predictor that
# returns, for a position $i$ and the rest of the sequence $x_{-i}$, a distribution
# $q(\cdot \mid x_{-i})$ over the value at $i$. The *pseudo-likelihood* of $q$ at $x$ is
# the product of its $n$ full conditionals,
#
# $$\operatorname{PL}_q(x) = \prod_{i=1}^{n} q(x_i \mid x_{-i}).$$
#
# **Theorem 3 (one mask is pseudo-likelihood).** Hide one position $I$, drawn uniformly
# from $\{1, \dots, n\}$ independently of $x$, and change nothing else. The masked-LM risk
# of $q$ is
#
# $$\mathbb{E}_{x, I}\bigl[-\log q(x_I \mid x_{-I})\bigr] = -\frac{1}{n}\,\mathbb{E}_x \log \operatorname{PL}_q(x).$$
#
# If a parametric family $q_\theta$ contains $p$'s conditionals at $\theta^\ast$, then
# $\theta^\ast$ maximises $\mathbb{E}\log\operatorname{PL}_{q_\theta}$, and it is the only
# maximiser when the conditionals determine $\theta$.
#
# *Proof.* $I$ is independent of $x$ and takes each value with probability $1/n$, so the
# expectation over $I$ is an average over positions:
# $\mathbb{E}_{x,I}[-\log q(x_I \mid x_{-I})] = \frac1n \sum_i \mathbb{E}_x[-\log q(x_i \mid x_{-i})]$,
# and the sum of logarithms is the logarithm of the product $\operatorname{PL}_q$. For the
# second part, fix $i$ and condition on $x_{-i}$. Given $x_{-i}$, the value $x_i$ has law
# $p(\cdot \mid x_{-i})$, and the expected loss of guessing it with $q(\cdot\mid x_{-i})$ is the
# entropy of $p(\cdot\mid x_{-i})$ plus the divergence $\mathrm{KL}(p(\cdot \mid x_{-i}) \,\|\, q(\cdot\mid x_{-i}))$
# (Theorem 1 with an empty channel). The divergence is non-negative and vanishes exactly
# when the two conditionals agree. Each of the $n$ terms is therefore smallest at
# $\theta^\ast$, and so is their sum. A $\theta$ that also reaches the minimum must have
# zero divergence at every position for almost every context, i.e. $p$'s conditionals;
# if those pin down the parameter, $\theta = \theta^\ast$. $\square$
#
# Both sides of the identity are computable exactly on models we can enumerate. On the
# Ising chain below the left side masks each position of each of the $2^{10}$ states,
# and the right side comes from expected counts of local configurations. On the HMM of
# Chapter 1 the left side runs one forward–backward pass per masked position over every
# sequence of length 2 and 3, and the right side reads all positions' leave-one-out
# posteriors from a single pass. Each is done for the true conditionals and for a
# predictor that is not the truth.

# %%
ising_t3, hmm_t3 = ch3.theorem3_ising(), ch3.theorem3_hmm()
Markdown(
    f"Largest gap between the two sides: **{ising_t3['gap']:.1e}** on the Ising chain and "
    f"**{hmm_t3['gap']:.1e}** on the HMM. A predictor that is not the truth pays more: on the "
    f"chain the true conditionals have risk **{ising_t3['risk_at_truth']:.4f}** nats per token and the "
    f"best of the four others **{ising_t3['smallest_other_risk']:.4f}**; on the HMM the perturbed "
    f"predictor's risk exceeds the truth's by **{hmm_t3['excess']:.4f}** nats."
)

# %% [markdown]
# ## The Ising chain
#
# Theorem 3 speaks about the population. Whether the *sample* maximiser converges to
# $\theta^\ast$ is a separate question, which we check on a model with an intractable-looking
# but in fact computable normaliser. The open Ising chain has $n$ spins $s_i \in \{-1, +1\}$ and
#
# $$p_{h,J}(s) \propto \exp\Bigl(h\sum_{i} s_i + J\sum_{i} s_i s_{i+1}\Bigr).$$
#
# The full conditional of a spin depends only on its neighbours' sum $m_i$ (one neighbour
# at an end): $p(s_i \mid s_{-i}) = e^{s_i(h + J m_i)}/2\cosh(h + J m_i)$. So the log
# pseudo-likelihood of a sample is a sum over the ten local configurations $(s_i, m_i)$,
# weighted by how often each occurs, and it is concave in $(h, J)$. The estimate
# (MPLE) is found by Newton's method to a gradient of $10^{-10}$. The normaliser is a
# product of $2\times 2$ transfer matrices, so the chain's exact maximum-likelihood
# estimate (MLE) is available for comparison, and exact samples are cheap: the histogram
# of $N$ independent draws over the $2^{10}$ states is multinomial, and we draw it directly.

# %%
config = ch3.ISING
population = ch3.population_check(config)
print(config)
Markdown(
    f"Exactly over the $2^{{{config.n}}}$ states, the gradient of $\\mathbb{{E}}\\log\\mathrm{{PL}}$ at the true "
    f"$(h, J) = ({config.h}, {config.J})$ has largest entry **{population['gradient']:.1e}**, and on a "
    f"{population['grid_points']}-point grid around it the objective peaks at "
    f"**{population['argmax']}**, ahead of the best other grid point by **{population['margin']:.2e}** nats."
)

# %% [markdown]
# ### How far off is a finite sample?
#
# We measure the error of an estimate as the larger of its two absolute errors,
# $\max(|\hat h - h|, |\hat J - J|)$, and repeat each sample size over many independent
# replicates. The topic page quotes one draw at each of two sizes; here is where those
# draws sit.

# %%
sweep = ch3.estimator_sweep(config)
predicted = ch3.gaussian_error_quantiles("pseudo", config)
lines = ["| N | MPLE median | MPLE 10–90 % | MLE median | sandwich prediction of the MPLE median |",
         "|---:|---:|---:|---:|---:|"]
for size in sweep.sizes:
    median, low, high = sweep.quantiles(int(size))
    lines.append(f"| {size} | {median:.4f} | {low:.4f}–{high:.4f} | {sweep.quantiles(int(size), 'maximum')[0]:.4f} "
                 f"| {predicted[0] / np.sqrt(size):.4f} |")
Markdown("\n".join(lines))

# %%
percentiles = ch3.page_draw_percentiles(config)
small, large = config.page_sizes
ratio = sweep.quantiles(small)[0] / sweep.quantiles(large)[0]
Markdown(
    f"The page's error **{config.page_errors[0]}** at N = {small} sits at the **{percentiles[small]:.0f}th** percentile "
    f"of {config.replicates} replicates (a lucky draw; the median is **{sweep.quantiles(small)[0]:.4f}**), and "
    f"**{config.page_errors[1]}** at N = {large} at the **{percentiles[large]:.0f}th**. The page's ratio of the two, "
    f"{config.page_errors[0] / config.page_errors[1]:.2f}, is single-draw noise: the ratio of the medians is "
    f"**{ratio:.2f}**, against $\\sqrt{{{large // small}}} = {np.sqrt(large / small):.0f}$ for an error that "
    f"shrinks like $1/\\sqrt N$."
)

# %%
ch3.figure_error_vs_n(config);

# %% [markdown]
# ### What pseudo-likelihood gives up
#
# The MLE of a regular model is asymptotically efficient: $\sqrt N(\hat\theta - \theta^\ast)$
# tends to a normal law with covariance $I^{-1}$, the inverse Fisher information, which
# for this exponential family is the covariance of the sufficient statistics
# $T(s) = (\sum_i s_i, \sum_i s_i s_{i+1})$. The MPLE solves a different estimating
# equation, the zero of the pseudo-score $u(s) = \nabla_\theta \log\mathrm{PL}_\theta(s)$.
# The usual M-estimator argument gives the sandwich covariance
#
# $$\Sigma_{\mathrm{PL}} = H^{-1} K H^{-1}, \qquad H = -\mathbb{E}\,\nabla^2_\theta \log\mathrm{PL}_\theta, \quad K = \mathrm{Var}\, u,$$
#
# the inverse of the Godambe information. Both matrices are sums over the $2^{10}$ states,
# so the asymptotic variance ratio is computed exactly, and the replicates above give its
# finite-sample counterpart.

# %%
efficiency = ch3.efficiency_table(config)
lines = ["| N | Var ratio ĥ (MPLE/MLE) | Var ratio Ĵ | N·Var(ĥ_PL) | N·Var(Ĵ_PL) |", "|---:|---:|---:|---:|---:|"]
for k, size in enumerate(efficiency["sizes"]):
    lines.append(f"| {size} | {efficiency['empirical'][k, 0]:.3f} | {efficiency['empirical'][k, 1]:.3f} "
                 f"| {efficiency['scaled_pseudo'][k, 0]:.4f} | {efficiency['scaled_pseudo'][k, 1]:.4f} |")
lines.append(f"| asymptotic (exact) | {efficiency['asymptotic'][0]:.3f} | {efficiency['asymptotic'][1]:.3f} "
             f"| {efficiency['sandwich'][0]:.4f} | {efficiency['sandwich'][1]:.4f} |")
Markdown("\n".join(lines))

# %%
Markdown(
    f"On this chain pseudo-likelihood needs about **{(efficiency['asymptotic'][0] - 1) * 100:.0f} %** more "
    f"data than maximum likelihood for the same variance of $\\hat h$, and about "
    f"**{(efficiency['asymptotic'][1] - 1) * 100:.0f} %** more for $\\hat J$. The replicates agree with the "
    "sandwich formula within their sampling noise (a variance over "
    f"{config.replicates} replicates has a relative standard error of about "
    f"{np.sqrt(2 / config.replicates) * 100:.1f} %)."
)

# %% [markdown]
# The price depends on the coupling. With the field held fixed, the exact asymptotic
# ratios for other couplings are:

# %%
by_coupling = ch3.efficiency_by_coupling(config=config)
Markdown("| J | Var ratio ĥ (MPLE/MLE) | Var ratio Ĵ |\n|---:|---:|---:|\n"
         + "\n".join(f"| {J} | {r[0]:.3f} | {r[1]:.3f} |" for J, r in by_coupling.items()))

# %% [markdown]
# Without coupling the true conditional of each spin is its own marginal, and
# pseudo-likelihood loses almost nothing. The ratios are not exactly one because the
# estimator still fits a coupling, and its estimating equation for $J$ is not the
# likelihood's. As the coupling grows, each conditional leans harder on its neighbours
# and the ratios grow with it.

# %% [markdown]
# ### BERT's objective is not quite pseudo-likelihood
#
# BERT corrupts about 15 % of the positions, with the 80/10/10 channel of Chapter 2, so
# the context a prediction reads may itself be corrupted. Theorem 2's optimum at a
# `[MASK]` is then the posterior of the hidden token given the rest *read through the
# channel*, not the full conditional $p(x_i \mid x_{-i})$. The table below masks each
# position of HMM sequences in turn, shows the rest clean, and measures how far the
# optimum's prediction is from the true full conditional.

# %%
kl = ch3.mask_kl()
Markdown("| ρ | mean KL(true conditional ‖ optimum at [MASK]) (nats) |\n|---:|---:|\n"
         + "\n".join(f"| {rho} | {value:.2e} |" for rho, value in kl.items()))

# %% [markdown]
# The gap vanishes as $\rho \to 0$, where the rest of the sentence is certainly clean and
# the objective becomes pseudo-likelihood, and it grows with $\rho$.
#
# ## Brook's lemma
#
# **Theorem 4 (Brook's lemma).** Let $p$ be a distribution on sequences of length $n$
# that gives every sequence positive probability. For any two sequences $x$ and $y$,
#
# $$\frac{p(x)}{p(y)} = \prod_{i=1}^{n} \frac{p(x_i \mid x_{<i}, y_{>i})}{p(y_i \mid x_{<i}, y_{>i})}.$$
#
# In particular the full conditionals of $p$ fix $p$ up to a constant, which normalisation removes.
#
# *Proof.* Walk from $y$ to $x$ one coordinate at a time: let $z^{(k)}$ agree with $x$ in
# its first $k$ coordinates and with $y$ in the rest, so $z^{(0)} = y$ and $z^{(n)} = x$. Then
# $p(x)/p(y)$ is the telescoping product of $p(z^{(k)})/p(z^{(k-1)})$ over $k = 1, \dots, n$.
# The two sequences in the $k$-th factor differ only at position $k$, where one holds
# $x_k$ and the other $y_k$; everywhere else both hold $(x_{<k}, y_{>k})$. Write each as
# the probability of those shared coordinates times the conditional of position $k$
# given them. The shared factor cancels, leaving
# $p(x_k \mid x_{<k}, y_{>k})/p(y_k \mid x_{<k}, y_{>k})$. Positivity guarantees that no
# denominator is zero. $\square$
#
# The lemma turns conditionals into a joint. [`compat.rebuild_joint`](../../api/mlm_book.compat/)
# does it for any family of conditionals: the $k$-th factor depends on $x$ only through
# $x_{\le k}$, so it needs the family at the $V^{k-1}$ prefixes only, asked in one batch.

# %%
rebuild = ch3.rebuild_check()
Markdown(
    f"From its four full conditionals alone, the HMM's joint over all **{rebuild['sequences']}** sequences of "
    f"length 4 is rebuilt with largest absolute error **{rebuild['max_error']:.1e}** (the smallest "
    f"probability in the table is {rebuild['smallest_probability']:.1e}). On 200 random pairs of length-24 "
    f"sequences, Brook's product matches the forward algorithm's $\\log p(x) - \\log p(y)$ to "
    f"**{ch3.brook_check():.1e}**."
)

# %% [markdown]
# ## The four-cycle test
#
# **Corollary 2 (four-cycle test).** Fix two positions $i \ne j$ and the values at all
# other positions. Write $q_i(a \mid b)$ for a conditional of position $i$ when position
# $j$ holds $b$, and $q_j(b \mid a)$ for one of position $j$ when $i$ holds $a$. For
# values $a, a'$ at $i$ and $b, b'$ at $j$ let
#
# $$\delta = \Bigl[\log\tfrac{q_i(a\mid b)}{q_i(a'\mid b)} + \log\tfrac{q_j(b\mid a')}{q_j(b'\mid a')}\Bigr]
#          - \Bigl[\log\tfrac{q_j(b\mid a)}{q_j(b'\mid a)} + \log\tfrac{q_i(a\mid b')}{q_i(a'\mid b')}\Bigr].$$
#
# If the $q$ are the full conditionals of one positive joint, $\delta = 0$. Hence a single
# $\delta \ne 0$ proves that no joint distribution has the family as its conditionals.
#
# *Proof.* Suppose $q$ is the family of conditionals of $p$, and write $p(a, b)$ for the
# probability of the sequence with $a$ at $i$, $b$ at $j$ and the fixed values elsewhere.
# A ratio of two conditionals of the same position with the same context is a ratio of
# joint probabilities: $q_i(a \mid b)/q_i(a' \mid b) = p(a, b)/p(a', b)$, because the
# normaliser, the probability of the context, is common to both. The first bracket is then
# $\log p(a,b) - \log p(a',b) + \log p(a',b) - \log p(a',b')$, the change of $\log p$
# along the path $(a,b) \to (a',b) \to (a',b')$. The second bracket is the change along
# $(a,b) \to (a,b') \to (a',b')$. Both equal $\log p(a,b) - \log p(a',b')$, so their
# difference is zero. $\square$
#
# (Brook's lemma is the same computation along longer paths. For two variables Arnold and
# Press proved the converse: conditionals are compatible exactly when their ratio factors.
# We use only the direction proved here.)

# %%
Markdown(
    f"On random positive joints (four shapes, three concentrations, 500 random cycles each) the largest "
    f"$|\\delta|$ is **{ch3.random_joint_check():.1e}**."
)

# %% [markdown]
# The book's protocol draws a stationary HMM sequence of length 24, an adjacent pair of
# positions, and at each of the two positions the two likeliest values under the HMM's
# exact full conditional at the drawn sequence. The draws come from one seeded generator,
# so every family of conditionals is tested on exactly the same cycles. Two families are
# exact:
#
# - the HMM's own full conditionals $p(x_i \mid x_{-i})$, from forward–backward;
# - Theorem 2's population optimum under BERT's channel: $q_i(a \mid b)$ is the posterior of
#   the token at $i$ given a `[MASK]` there, $b$ shown at $j$ and the other tokens shown as
#   they are, every shown token read through the channel.
#
# The third family is learned: the HMM encoder of Chapter 2, queried the way a masked LM
# is used, with `[MASK]` at $i$, $b$ written at $j$ and the rest of the sentence clean.

# %%
from mlm_book.experiments import hmm_encoder

four = ch3.FOUR_CYCLE
families = {**ch3.exact_families(four), "trained HMM encoder": hmm_encoder.four_cycle_summary().encoder}
print(four)
lines = ["| family | median abs(δ) | 90 % | max |", "|---|---:|---:|---:|"]
for name, delta in families.items():
    size = np.abs(delta)
    lines.append(f"| {name} | {np.median(size):.2e} | {np.quantile(size, 0.9):.2e} | {size.max():.2e} |")
Markdown("\n".join(lines))

# %%
ch3.figure_delta_histogram(families);

# %%
summary = hmm_encoder.four_cycle_summary()
Markdown(
    f"The trained encoder's median $|\\delta|$ is **{summary.encoder_median:.3f}** (largest "
    f"**{summary.encoder_max:.2f}**), about **{summary.encoder_median / summary.population_median:,.0f}** times the "
    f"population optimum's median of **{summary.population_median:.1e}** on the same cycles. Its conditionals "
    f"belong to no joint distribution. At a typical cycle almost all of that incompatibility comes from "
    f"training falling short of the optimum; at the worst cycles the optimum itself is far from compatible "
    f"(its largest $|\\delta|$ is **{np.abs(summary.population).max():.2f}**)."
)

# %% [markdown]
# The exact conditionals sit at rounding level (exact zeros are drawn at $10^{-17}$).
# The population optimum fails the test too, far more mildly: its targets at different positions read their
# contexts through the channel, where any visible token may be a substitute, and
# predictions built that way, one position at a time, are not the conditionals of any
# single joint. So the incompatibility is a property of the objective, not only of
# training. It disappears as the corruption does:

# %%
rho = ch3.rho_sweep(four)
ch3.figure_delta_vs_rho(four);

# %%
Markdown(
    f"The median $|\\delta|$ of the population optimum falls from **{rho.median[-1]:.1e}** at ρ = {rho.rho[-1]} to "
    f"**{rho.median[0]:.1e}** at ρ = {rho.rho[0]}; on the log–log plot it falls roughly like $\\rho^{{{rho.slope():.2f}}}$."
)

# %% [markdown]
# ## What follows
#
# A trained masked LM learns conditionals, and conditionals determine a joint only if
# they pass the four-cycle test. When they fail it, there is no sentence distribution for
# them to be the conditionals of: Gibbs-style resampling from the model runs a Markov
# chain whose stationary law has no stated relation to them, and a pseudo-log-likelihood
# score is a heuristic rather than a likelihood. Pseudo-likelihood itself, the objective
# with one mask and no corruption, is a sound estimator: consistent on the chain, at a
# moderate cost in efficiency that the sandwich formula predicts exactly.
