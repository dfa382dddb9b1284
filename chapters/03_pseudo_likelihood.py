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
# position, what does minimising its loss estimate? The loss is the objective of a classical
# estimator, Besag's pseudo-likelihood ([Besag 1975](../references.html#besag-1975)); its
# population optimum is the language's full conditionals, and on a model whose exact answer
# is known we watch the estimator converge. Second: can the conditionals a masked
# model learns be assembled back into a joint distribution over sentences? Brook's lemma
# ([Brook 1964](../references.html#brook-1964)) says a genuine joint is determined by its
# conditionals, and a corollary of it gives a test, the four-cycle test, that any family of
# conditionals can fail. The exact conditionals of the book's HMM pass it to rounding; on
# the same HMM the best predictor that BERT's objective can ask for does not, and neither
# does an encoder trained with it.
#
# The code behind every number is in [`mlm_book.ising`](../api/mlm_book.ising.html),
# [`mlm_book.compat`](../api/mlm_book.compat.html) and
# [`mlm_book.experiments.ch03_pseudo_likelihood`](../api/mlm_book.experiments.ch03_pseudo_likelihood.html).

# %%
import inspect
from dataclasses import replace

import numpy as np

from mlm_book import compat, ising
from mlm_book.experiments import ch03_pseudo_likelihood as ch3
from mlm_book import four_cycles
from mlm_book.experiments import hmm_encoder
from mlm_book.readings.hmm_encoder import four_cycle_summary
from mlm_book.figures import show
from mlm_book.hmm import default_hmm
from mlm_book.ledger import chapter_summary, verify
from mlm_book.report import Markdown, answer, table


def default(function, name):
    """The default value of one of ``function``'s parameters (the setting the book uses)."""
    return inspect.signature(function).parameters[name].default


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
# (Theorem 1 of [Chapter 2](02_objective.html), with no corruption). The divergence is
# non-negative and vanishes exactly when the two conditionals agree. Each of the $n$ terms
# is therefore smallest at $\theta^\ast$, and so is their sum. A $\theta$ that also reaches
# the minimum must have zero divergence at every position for almost every context, that
# is, it must give $p$'s conditionals; if those pin down the parameter, $\theta = \theta^\ast$.
# $\blacksquare$
#
# So a masked LM trained with one uncorrupted mask per sentence maximises the average log
# pseudo-likelihood of its predictor, and its population optimum is the language's full
# conditionals whenever its family can express them. That makes it Besag's maximum
# pseudo-likelihood estimator only when the family comes from a joint, $q_\theta(x_i \mid x_{-i}) =
# p_\theta(x_i \mid x_{-i})$ for one parametric law $p_\theta$, as it does for the Ising chain
# below. A neural masked LM has no such joint behind it: its network outputs a conditional for
# each position and context, and nothing ties these together into one distribution over
# sentences. Training it is composite conditional-likelihood estimation
# ([Lindsay 1988](../references.html#lindsay-1988); [Varin, Reid and Firth
# 2011](../references.html#varin-2011)): a sum of log conditionals, each a valid likelihood on
# its own, maximised together. Whether the fitted conditionals fit together is the second
# question of this chapter. Both sides of the identity can be computed exactly on models small
# enough to enumerate, for the true conditionals and for wrong ones.

# %% tags=["hide-input"]
Markdown(
    f"On the Ising chain of the next section, the left side masks each position of each of the "
    f"$2^{{{ch3.ISING.n}}}$ states, and the right side comes from the expected counts of local configurations. "
    f"Besides the true conditionals, the check uses {len(ch3.THEOREM3_PREDICTORS)} wrong predictors: the "
    "chain's own conditional formula with other values of the field $h$ and the coupling $J$, listed in the "
    "table."
)

# %%
table(["predictor", "field $h$", "coupling $J$", "masked-LM risk (nats/token)",
       r"$-\frac{1}{n}\mathbb{E}\log\mathrm{PL}$"],
      ch3.theorem3_ising_rows(), formats=[None, "g", "g", ".6f", ".6f"])

# %% tags=["hide-input"]
ising_t3, hmm_t3 = ch3.theorem3_ising(), ch3.theorem3_hmm()
lengths = default(ch3.theorem3_hmm, "lengths")
Markdown(
    f"The two columns agree to **{ising_t3['gap']:.1e}**, and every wrong predictor pays more than the truth: "
    f"the true conditionals have risk **{ising_t3['risk_at_truth']:.4f}** nats per token, the best wrong one "
    f"**{ising_t3['smallest_other_risk']:.4f}**. On the HMM of [Chapter 1](01_static_vectors.html) the left side "
    f"runs one forward–backward pass per masked position over every sequence of length "
    f"{' and '.join(str(n) for n in lengths)}, and the right side reads all positions' leave-one-out posteriors "
    "from a single pass. The wrong predictor there is a perturbed copy of the HMM, its transition and emission "
    f"matrices each mixed with a uniform matrix. The two sides agree to **{hmm_t3['gap']:.1e}**, and the "
    f"perturbed predictor's risk exceeds the truth's by **{hmm_t3['excess']:.4f}** nats per token."
)

# %% [markdown]
# ## The Ising chain
#
# Theorem 3 speaks about the population. Whether the maximiser for a finite *sample*
# converges to $\theta^\ast$ is a separate question. For independent samples from a fully
# visible Boltzmann machine, the family of binary models with pairwise interactions to which
# the chain below belongs, [Hyvärinen (2006)](../references.html#hyvarinen-2006) proved that
# the maximum pseudo-likelihood estimate is consistent. We watch it converge on a model whose
# normaliser looks intractable but can in fact be computed. The open Ising chain has $n$
# spins $s_i \in \{-1, +1\}$ and
#
# $$p_{h,J}(s) \propto \exp\Bigl(h\sum_{i} s_i + J\sum_{i} s_i s_{i+1}\Bigr).$$
#
# The full conditional of a spin depends only on its neighbours' sum $m_i$ (one neighbour
# at an end): $p(s_i \mid s_{-i}) = e^{s_i(h + J m_i)}/2\cosh(h + J m_i)$. So the log
# pseudo-likelihood of a sample is a sum over the $2 \times 5$ local configurations
# $(s_i, m_i)$, weighted by how often each occurs, and it is concave in $(h, J)$. The
# normaliser is a product of $2\times 2$ transfer matrices, so the chain's exact
# maximum-likelihood estimate (MLE) is available for comparison, and exact samples are
# cheap: the histogram of $N$ independent draws over the $2^n$ states is multinomial, and
# we draw it directly. The book's chain and study:

# %%
config = ch3.ISING
table(["setting", "value"],
      [("spins $n$", config.n), ("field $h$", config.h), ("coupling $J$", config.J),
       ("sample sizes $N$ (sequences)", ", ".join(f"{size:,}" for size in config.sizes)),
       ("independent samples per size", f"{config.replicates:,}")])

# %%
population = ch3.population_check(config)

# %% tags=["hide-input"]
Markdown(
    "The maximum pseudo-likelihood estimate (MPLE) is found by Newton's method until the gradient is below "
    f"{default(ising.fit_pseudo_likelihood, 'tolerance'):.0e}; the MLE likewise. Theorem 3 says that the "
    f"population objective peaks at the truth. Exactly over the $2^{{{config.n}}}$ states, the gradient of "
    f"$\\mathbb{{E}}\\log\\mathrm{{PL}}$ at the true $(h, J) = ({config.h:g}, {config.J:g})$ has largest entry "
    f"**{population['gradient']:.1e}**, and on a grid of {population['grid_points']} points around it the "
    f"objective peaks at **{population['argmax']}**, ahead of the best other grid point by "
    f"**{population['margin']:.2e}** nats."
)

# %% [markdown]
# ### How far off is a finite sample?
#
# We measure the error of an estimate as the larger of its two absolute errors,
# $\max(|\hat h - h|, |\hat J - J|)$, and repeat each sample size over many independent
# samples. The table gives the median error of both estimators and the range of the
# MPLE's middle 80 %. Its last column is the median that the MPLE's asymptotic normal law
# (derived in the next section) predicts: the median of $\max(|Z_h|, |Z_J|)$ for a normal
# vector $Z$ with the sandwich covariance, divided by $\sqrt N$.

# %%
sweep = ch3.estimator_sweep(config)
predicted_median = ch3.gaussian_error_quantiles("pseudo", config)[0]
rows = []
for size in sweep.sizes:
    median, low, high = sweep.quantiles(int(size))
    rows.append((f"{size:,}", median, f"{low:.4f}–{high:.4f}", sweep.quantiles(int(size), "maximum")[0],
                 predicted_median / np.sqrt(size)))
table(["N", "MPLE median", "MPLE 10–90 %", "MLE median", "predicted MPLE median"], rows,
      formats=[None, ".4f", None, ".4f", ".4f"])

# %%
show(ch3.figure_error_vs_n(config))

# %% tags=["hide-input"]
small, large = config.page_sizes
ratio = sweep.quantiles(small)[0] / sweep.quantiles(large)[0]
single = sweep.at(small) / sweep.at(large)
Markdown(
    f"The error falls like $1/\\sqrt N$ from the smallest sample on: {large // small} times more data, from "
    f"N = {small:,} "
    f"to N = {large:,}, divides the median error by **{ratio:.2f}**, against $\\sqrt{{{large // small}}} = "
    f"{np.sqrt(large / small):.0f}$. A single sample at each size says much less: the ratio of one sample's "
    f"error at N = {small:,} to another's at N = {large:,} ranges from **{np.quantile(single, 0.1):.1f}** to "
    f"**{np.quantile(single, 0.9):.1f}** (10 % and 90 % over the {config.replicates:,} pairs), because the "
    "error of one sample has a spread comparable to its median."
)

# %% [markdown]
# ### What pseudo-likelihood gives up
#
# [Besag (1977)](../references.html#besag-1977) compared the efficiency of the two estimators
# for simple Gaussian fields; on the Ising chain the comparison can be made exactly.
# The MLE of a regular model is asymptotically efficient: $\sqrt N(\hat\theta - \theta^\ast)$
# tends to a normal law with covariance $I^{-1}$, the inverse Fisher information, which
# for this exponential family is the inverse covariance of the sufficient statistics
# $T(s) = (\sum_i s_i, \sum_i s_i s_{i+1})$. The MPLE solves a different estimating
# equation, the zero of the pseudo-score $u(s) = \nabla_\theta \log\mathrm{PL}_\theta(s)$.
# The usual M-estimator argument gives the sandwich covariance
#
# $$\Sigma_{\mathrm{PL}} = H^{-1} K H^{-1}, \qquad H = -\mathbb{E}\,\nabla^2_\theta \log\mathrm{PL}_\theta, \quad K = \mathrm{Var}\, u,$$
#
# the inverse of the Godambe information, the form a composite-likelihood
# estimator's asymptotic covariance takes ([Lindsay 1988](../references.html#lindsay-1988); [Varin, Reid and Firth
# 2011](../references.html#varin-2011)). Both matrices are sums over the $2^n$ states,
# so the asymptotic ratio of the two estimators' variances is computed exactly, and the
# samples above give its finite-sample counterpart. In the table, the first two columns
# are $\mathrm{Var}(\text{MPLE}) / \mathrm{Var}(\text{MLE})$ for each parameter over the
# samples of one size, and the last two are $N$ times the MPLE's variance, which should
# settle at the sandwich formula's diagonal.

# %%
efficiency = ch3.efficiency_table(config)
rows = [(f"{size:,}", *efficiency["empirical"][k], *efficiency["scaled_pseudo"][k])
        for k, size in enumerate(efficiency["sizes"])]
rows.append(("asymptotic (exact)", *efficiency["asymptotic"], *efficiency["sandwich"]))
table(["N", r"ratio for $\hat h$", r"ratio for $\hat J$", r"$N\,\mathrm{Var}(\hat h)$",
       r"$N\,\mathrm{Var}(\hat J)$"], rows, formats=[None, ".3f", ".3f", ".4f", ".4f"])

# %% tags=["hide-input"]
Markdown(
    f"On this chain pseudo-likelihood needs about **{(efficiency['asymptotic'][0] - 1) * 100:.0f} %** more "
    f"data than maximum likelihood for the same variance of $\\hat h$, and about "
    f"**{(efficiency['asymptotic'][1] - 1) * 100:.0f} %** more for $\\hat J$. The samples agree with the "
    "sandwich formula within their sampling noise (a variance over "
    f"{config.replicates:,} samples has a relative standard error of about "
    f"{np.sqrt(2 / config.replicates) * 100:.1f} %)."
)

# %% [markdown]
# The price depends on the coupling. With the field held fixed, the exact asymptotic
# variance ratios for other couplings are:

# %%
by_coupling = ch3.efficiency_by_coupling(config=config)
table(["coupling $J$", r"ratio for $\hat h$", r"ratio for $\hat J$"],
      [(J, *ratios) for J, ratios in by_coupling.items()], formats=["g", ".3f", ".3f"])

# %% [markdown]
# Without coupling the true conditional of each spin is its own marginal, and
# pseudo-likelihood loses almost nothing. The ratios are not exactly one because the
# estimator still fits a coupling, and its estimating equation for $J$ is not the
# likelihood's. As the coupling grows, each conditional leans harder on its neighbours
# and the ratios grow with it.

# %% [markdown]
# ### BERT's objective is not quite pseudo-likelihood
#
# Theorem 3 assumed that nothing but the hidden position is touched. BERT's objective
# ([Devlin et al. 2019](../references.html#devlin-2019)) corrupts the sentence through the
# channel of [Chapter 2](02_objective.html), so the context a prediction reads may itself be
# corrupted.

# %%
four = four_cycles.FOUR_CYCLE

# %% tags=["hide-input"]
Markdown(
    f"It selects each position with probability $\\rho = {four.rho:g}$ and shows a selected position as "
    f"`[MASK]` with probability {four.mask:g}, as a uniformly random token with probability {four.random:g}, "
    f"and as itself otherwise. Theorem 2's optimum at a `[MASK]` is then the posterior of the hidden token "
    "given the rest *read through the channel*, where any visible token might be a substitute, not the full "
    f"conditional $p(x_i \\mid x_{{-i}})$. The table masks each position of {default(ch3.mask_kl, 'sequences')} "
    f"HMM sentences of length {default(ch3.mask_kl, 'length')} in turn, shows the rest as it is, and measures "
    "how far the optimum's prediction is from the true full conditional, at several selection rates."
)

# %%
kl = ch3.mask_kl()
table([r"selection rate $\rho$", "mean KL(true conditional ‖ optimum at [MASK]) (nats)"],
      list(kl.items()), formats=["g", ".2e"])

# %% tags=["hide-input"]
rhos = sorted(kl)
Markdown(
    f"The gap vanishes as $\\rho \\to 0$: from **{kl[rhos[-1]]:.1e}** nats at $\\rho = {rhos[-1]:g}$ to "
    f"**{kl[rhos[0]]:.1e}** at $\\rho = {rhos[0]:g}$. When the rest of the sentence is certainly clean the "
    "objective becomes pseudo-likelihood; at BERT's rate it is a nearby but different objective, whose optimum "
    "is not the family of full conditionals of the language."
)

# %% [markdown]
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
# denominator is zero. $\blacksquare$
#
# The lemma ([Besag 1974](../references.html#besag-1974) uses it to build spatial models
# from their conditionals) turns conditionals into a joint.
# [`compat.rebuild_joint`](../api/mlm_book.compat.html) does it for any family of
# conditionals over $V$ values: the $k$-th factor depends on $x$ only through $x_{\le k}$,
# so it needs the family at the $V^{k-1}$ prefixes only, asked in one batch. Two checks on
# the HMM follow: its joint over all short sequences rebuilt from its conditionals, and
# Brook's product for pairs of long sequences against the forward algorithm's likelihoods.

# %%
rebuild = ch3.rebuild_check()
brook_error = ch3.brook_check()

# %% tags=["hide-input"]
Markdown(
    f"From its full conditionals alone, the HMM's joint over all **{rebuild['sequences']:,}** sequences of "
    f"length {default(ch3.rebuild_check, 'length')} is rebuilt with largest absolute error "
    f"**{rebuild['max_error']:.1e}** (the smallest probability in the table is "
    f"{rebuild['smallest_probability']:.1e}). On {default(ch3.brook_check, 'pairs')} random pairs of HMM "
    f"sequences of length {default(ch3.brook_check, 'length')}, Brook's product matches the forward "
    f"algorithm's $\\log p(x) - \\log p(y)$ to **{brook_error:.1e}**."
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
# If the $q$ are the full conditionals of one joint that gives positive probability to the
# four configurations $(a, b)$, $(a', b)$, $(a', b')$ and $(a, b')$ (with the other positions
# at their fixed values), $\delta = 0$. Hence a single $\delta \ne 0$ proves that no joint
# giving positive mass to the four configurations has the family as its conditionals.
#
# *Proof.* Suppose $q$ is the family of conditionals of $p$, and write $p(a, b)$ for the
# probability of the sequence with $a$ at $i$, $b$ at $j$ and the fixed values elsewhere.
# A ratio of two conditionals of the same position with the same context is a ratio of
# joint probabilities: $q_i(a \mid b)/q_i(a' \mid b) = p(a, b)/p(a', b)$, because the
# normaliser, the probability of the context, is common to both, and it is positive because
# the four probabilities are. The first bracket is then
# $\log p(a,b) - \log p(a',b) + \log p(a',b) - \log p(a',b')$, the change of $\log p$
# along the path $(a,b) \to (a',b) \to (a',b')$. The second bracket is the change along
# $(a,b) \to (a,b') \to (a',b')$. Both equal $\log p(a,b) - \log p(a',b')$, so their
# difference is zero. $\blacksquare$
#
# Brook's lemma is the same computation along longer paths. For two variables
# [Arnold and Press (1989)](../references.html#arnold-1989) proved the converse:
# conditionals are compatible exactly when their ratio factors. We use only the direction
# proved here. The test is sharp on random joints, where $\delta$ must vanish:

# %%
random_worst = ch3.random_joint_check()

# %% tags=["hide-input"]
Markdown(
    "On random positive joints of several lengths, vocabulary sizes and concentrations, with "
    f"{default(ch3.random_joint_check, 'cycles')} random cycles each, the largest $|\\delta|$ is "
    f"**{random_worst:.1e}**: zero up to rounding."
)

# %% tags=["hide-input"]
Markdown(
    f"The book's protocol draws {four.count} stationary HMM sequences of length {four.length}, an adjacent pair "
    "of positions $(i, j)$ in each, and at each of the two positions the two likeliest values under the HMM's "
    "exact full conditional at the drawn sequence. The draws come from one seeded generator, so every family "
    "of conditionals is tested on exactly the same cycles. Two families are exact:\n\n"
    "- the HMM's own full conditionals $p(x_i \\mid x_{-i})$, from forward–backward;\n"
    f"- Theorem 2's *population optimum* under BERT's channel at $\\rho = {four.rho:g}$: $q_i(a \\mid b)$ is "
    "the posterior of the token at $i$ given a `[MASK]` there, $b$ shown at $j$ and the other tokens shown as "
    "they are, every shown token read through the channel. It is the best predictor BERT's objective can "
    "ask for.\n\n"
    "The third family is learned: the small encoder trained on the HMM in Chapter 2, queried the way a masked "
    "LM is used, with `[MASK]` at $i$, $b$ written at $j$ and the rest of the sentence clean."
)

# %%
summary = four_cycle_summary()
exact = four_cycles.exact_families(four)
families = {"HMM's exact conditionals": exact["HMM conditionals"],
            "population optimum": next(v for k, v in exact.items() if k.startswith("population")),
            "trained HMM encoder": summary.encoder}
seeded = hmm_encoder.seed_four_cycles()
table(["family", r"median $\lvert\delta\rvert$", "90th percentile", r"largest $\lvert\delta\rvert$"],
      [(name, np.median(np.abs(delta)), np.quantile(np.abs(delta), 0.9), np.abs(delta).max())
       for name, delta in families.items()]
      + [("trained HMM encoder, 5 seeds: mean ± sd",
          *(hmm_encoder.band_cell(lambda f, q=q: np.quantile(np.abs(f.encoder), q), ".2e", seeded, with_range=False)
            for q in (0.5, 0.9, 1.0)))],
      formats=[None, "residual:.2e", "residual:.2e", "residual:.2e"])

# %%
show(ch3.figure_delta_histogram(families))

# %% tags=["hide-input"]
optimum_deltas = families["population optimum"]
Markdown(
    f"The exact conditionals sit at rounding level. The trained encoder's median $|\\delta|$ is "
    f"**{summary.encoder_median:.3f}** nats (largest **{summary.encoder_max:.2f}**), about "
    f"**{summary.encoder_median / summary.population_median:,.0f}** times the population optimum's median of "
    f"**{summary.population_median:.1e}** on the same cycles: its conditionals are those of no joint distribution "
    "that gives the tested sentences positive probability. "
    "The same holds for each of the five training seeds: their medians range from "
    f"{min(f.encoder_median for f in seeded):.3f} to {max(f.encoder_median for f in seeded):.3f}, every one of them far above the "
    "optimum's. "
    "At a typical cycle almost all of that incompatibility comes from training falling short of the optimum. "
    f"But the optimum itself fails the test too, mildly at most cycles and badly at a few (its largest "
    f"$|\\delta|$ is **{np.abs(optimum_deltas).max():.2f}** nats). Its predictions at different positions read their "
    "contexts through the channel, where any visible token may be a substitute, and predictions built that "
    "way, one position at a time, are not the conditionals of any single joint. So on this language the "
    "incompatibility is a property of the objective, not only of training."
)

# %% [markdown]
# How does it depend on the corruption? The sweep recomputes the population optimum's
# $\delta$ on the same draws over a grid of selection rates, keeping the channel's shares.

# %%
rho = four_cycles.rho_sweep(four)
show(ch3.figure_delta_vs_rho(four, points={
    rf"trained HMM encoder: median $|\delta|$ (book seed; small: the other {len(seeded) - 1})":
        [f.encoder_median for f in seeded]}))

# %% tags=["hide-input"]
worst = int(np.argmax(np.abs(rho.deltas[0])))
draw = ch3.describe_draw(worst, four)
runner_up = np.sort(np.abs(rho.deltas[0]))[-2]
Markdown(
    f"Over the grid, the median $|\\delta|$ falls from **{rho.median[-1]:.1e}** at $\\rho = {rho.rho[-1]:g}$ "
    f"to **{rho.median[0]:.1e}** at $\\rho = {rho.rho[0]:g}$, a factor of {rho.median[-1] / rho.median[0]:.0f}, "
    f"roughly like $\\rho^{{{rho.slope():.2f}}}$. The largest $|\\delta|$ falls far less: from "
    f"**{rho.maximum[-1]:.2f}** to **{rho.maximum[0]:.2f}** nats, a factor of "
    f"{rho.maximum[-1] / rho.maximum[0]:.0f}, roughly like $\\rho^{{{rho.slope('maximum'):.2f}}}$. At the "
    f"smallest rate it is still {rho.maximum[0] / summary.encoder_median:.1f} times the trained encoder's median "
    "at BERT's rate.\n\n"
    f"That largest value is a single draw; the next largest at $\\rho = {rho.rho[0]:g}$ is "
    f"{runner_up:.1e}. Its sentence runs `{draw['context']}` (the pair in brackets), and its cycle "
    f"takes {draw['values_i']} at $i$ and {draw['values_j']} at $j$. The regime-b token "
    f"{draw['pair'].split()[0]} sits among regime-a tokens, which the HMM can explain only by two regime "
    "switches in a row. Read through the channel, the same token may instead be a random substitute, an "
    "explanation whose probability is proportional to $\\rho$; it stops mattering only once $\\rho$ is small "
    "next to the probability of the switches, and until then the optimum's conditionals around this "
    "improbable spot disagree with one another.\n\n"
    "So the numbers support a qualified conclusion. On this HMM, for neighbouring positions, the population "
    "optimum of BERT's objective is incompatible at every $\\rho > 0$ of the grid. At typical cycles the "
    "incompatibility is tiny and shrinks faster than linearly with the corruption; around improbable tokens it "
    f"stays at {rho.maximum[0]:.2f} nats or more over the whole grid down to $\\rho = {rho.rho[0]:g}$, and "
    "disappears only in the limit $\\rho \\to 0$ (Exercise 1 follows the worst draw to smaller rates).\n\n"
    "That is a property of this language and of nearby positions, not of the objective in every language. If "
    "the tokens of a language were independent, the optimum at a `[MASK]` would be the position's marginal "
    "whatever the channel shows elsewhere, and the product of the marginals is a joint with exactly those "
    "conditionals. On the HMM the gap fades as the two positions move apart and the HMM forgets; "
    "[chapter 11](11_caveats.html#is-the-optimum-incompatible-everywhere) measures how fast."
)

# %% [markdown]
# ## What this chapter shows
#
# With one hidden position and no other corruption, masked-LM training maximises the
# pseudo-likelihood of its predictor (Theorem 3). For a family that comes from a joint, as
# the Ising chain's does, that is Besag's maximum pseudo-likelihood, a sound estimator; for
# a neural masked LM it is a composite conditional likelihood. On the Ising chain its error falls like
# $1/\sqrt N$, at a moderate cost in efficiency over maximum likelihood that the sandwich
# formula predicts exactly and that grows with the coupling. A trained masked LM learns
# conditionals, and conditionals determine a joint only if they pass the four-cycle test
# (Brook's lemma and Corollary 2). The HMM's exact conditionals pass it to rounding. BERT's
# corruption changes the target: on the HMM, even its best possible predictor fails the
# test at neighbouring positions, slightly at most cycles and markedly around improbable
# tokens, and a trained encoder fails it far more at typical cycles. For such a model there
# is no sentence distribution whose conditionals it has learned. Conditionals of a masked LM
# need not belong to any joint. [Wang and Cho (2019)](../references.html#wang-2019) had
# presented BERT as a Markov random field; that claim was withdrawn after publication, with
# the remark that there may be no joint distribution from which BERT's conditionals derive
# ([Cho 2019](../references.html#cho-2019)). Their sampler, which resamples positions from
# the model's conditionals, stands as a way to generate text, but it runs a Markov chain
# whose stationary law has no stated relation to those conditionals.
# [Goyal, Dyer and Berg-Kirkpatrick (2022)](../references.html#goyal-2022) read a masked LM as
# an energy-based model over sentences and sample from that model by Metropolis–Hastings,
# with the masked conditionals as proposals; they show that the conditionals alone do not
# give a chain whose stationary law is that model. A pseudo-log-likelihood score
# ([Salazar et al. 2020](../references.html#salazar-2020)) is likewise a heuristic, not a
# likelihood. [Young and You (2023)](../references.html#young-2023) and
# [Torroba Hennigen and Kim (2023)](../references.html#hennigen-2023) study the same
# inconsistency in large masked LMs.
#
# ## Exercises
#
# **Exercise 1.** The largest $|\delta|$ of the population optimum is still far from zero at
# the smallest selection rate of the sweep. Follow that one draw to smaller rates with
# `ch3.population_gaps`. Does its gap vanish, and how fast?

# %% tags=["hide-input"]
tiny = (1e-3, 1e-4, 1e-5, 1e-6)
followed = np.abs(ch3.population_gaps(tiny, indices=[worst], config=four)[:, 0])
answer(
    "`ch3.population_gaps(rhos, indices=[worst])` gives "
    + ", ".join(f"**{gap:.1e}** at $\\rho = 10^{{{np.log10(r):.0f}}}$" for r, gap in zip(tiny, followed))
    + f". Below the sweep the gap is proportional to $\\rho$ (each tenfold cut divides it by "
    f"{followed[0] / followed[1]:.1f}), so it does vanish in the limit, but from a high start: at $\\rho = 10^{{{np.log10(tiny[-1]):.0f}}}$ it "
    f"is still about the size of the optimum's *median* gap at BERT's rate, {summary.population_median:.1e}. "
    "The random-substitute explanation of an improbable token must become rarer than the improbable event "
    "itself before the optimum's conditionals around it agree."
)

# %% [markdown]
# **Exercise 2.** Which part of BERT's channel makes the population optimum incompatible?
# Keep the selection rate and the `[MASK]` share, but let the remaining selected positions
# always keep their token (no random substitutes): `replace(four_cycles.FOUR_CYCLE, random=0.0)`.
# Run the four-cycle test on the new optimum and explain the result.

# %% tags=["hide-input"]
no_substitutes = replace(four, random=0.0)
gaps = np.abs(four_cycles.four_cycle_deltas(compat.population_optimum_conditionals(default_hmm(), no_substitutes.channel()),
                                    config=no_substitutes))
answer(
    f"Without substitutes the largest $|\\delta|$ over the {four.count} draws is **{gaps.max():.1e}** "
    f"(median {np.median(gaps):.1e}): rounding, as for the HMM's exact conditionals. A visible token is then "
    "always the original, whether it was never selected or selected and kept, so reading the context through "
    "the channel changes nothing, and the optimum at a `[MASK]` is exactly the HMM's full conditional. The "
    "incompatibility comes from the random substitutes, the same ingredient that Chapter 2 showed keeps the "
    "context in play at visible selected positions."
)

# %% tags=["hide-input"]
rebuild_length = default(ch3.rebuild_disagreement, "length")
references = [", ".join([name] * rebuild_length) for name in default(ch3.rebuild_disagreement, "references")]
Markdown(
    "**Exercise 3.** Brook's lemma turns any family of conditionals into a table, starting from a reference "
    f"sequence $y$. Rebuild the joint over all HMM sequences of length {rebuild_length} from the population "
    f"optimum's conditionals twice, with $y$ = ({references[0]}) and with $y$ = ({references[1]}), using "
    "`ch3.rebuild_disagreement`. Do the two tables agree? What do you get for the HMM's own conditionals?"
)

# %% tags=["hide-input"]
optimum_tables = ch3.rebuild_disagreement(compat.population_optimum_conditionals(default_hmm(), four.channel()))
hmm_tables = ch3.rebuild_disagreement(compat.hmm_conditionals(default_hmm()))
answer(
    f"For the population optimum the two tables are **{optimum_tables['total_variation']:.3f}** apart in total "
    f"variation, and some sequence's probability differs by a factor $e^{{{optimum_tables['max_log_ratio']:.2f}}}$ "
    f"between them. For the HMM's conditionals they agree to {hmm_tables['total_variation']:.0e}. Brook's "
    "product follows one path from $y$ to $x$; for compatible conditionals every path gives the same ratio "
    "(that is what the four-cycle test checks, one square at a time), but for incompatible ones the result "
    "depends on the path, so the \"joint\" a masked LM would define depends on an arbitrary choice of reference."
)

# %% [markdown]
# ## Claims

# %% tags=["hide-input"]
chapter_summary(verify(claims=ch3.CLAIMS))
