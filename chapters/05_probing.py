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
# # Chapter 5 — What probes see
#
# A **probe** is a deliberately simple classifier trained on frozen vectors to read a property
# off them. If a linear probe recovers the sense of $w$ from the encoder's layer-1 vectors, the
# sense is *linearly decodable* there. On real models that is where the story usually stops,
# because nobody knows how well the property could be recovered at all. On the HMM we know:
# Corollary 1 gives the best any static vector can do, and forward–backward gives the best
# any classifier of the whole sentence can do. A probe's score can be placed between the two.
#
# Code: [`mlm_book.probe`](../../api/mlm_book.probe/) (the probe, cross-validation schemes and
# controls, for any labelled vectors) and
# [`mlm_book.experiments.ch05_probing`](../../api/mlm_book.experiments.ch05_probing/) (the HMM table).

# %%
from IPython.display import Markdown

from mlm_book import probe
from mlm_book.experiments import ch04_geometry as ch4
from mlm_book.experiments import ch05_probing as ch5

print(ch4.SPLITS)
print("ridge strength:", probe.PROBE_STRENGTH)

# %% [markdown]
# ## The probe, fixed in advance
#
# The probe is a logistic regression with a ridge penalty. Each feature is standardised with
# the mean and standard deviation of the **training** rows only; a feature that is constant on
# the training rows is set to zero, so it gets no weight. With $z$ the standardised vector and
# $y_i = 1$ for sense $b$, the
# two-class probe predicts $P(\text{sense } b \mid z) = \sigma(\beta^\top z + b_0)$ and minimises
#
# $$ \frac1n\sum_{i=1}^n \Big[\log\big(1+e^{\beta^\top z_i+b_0}\big) - y_i\,(\beta^\top z_i + b_0)\Big] + \frac{\lambda}{2}\lVert \beta\rVert^2 , $$
#
# with the intercept $b_0$ left unpenalised. The strength $\lambda$ was set before any probe was
# run, by an argument that does not look at data: on standardised features it keeps the
# weights finite when the classes separate, and otherwise costs almost nothing (the
# docstring of `PROBE_STRENGTH` gives the numbers). It is never tuned on a test split. The
# objective is strongly convex, so Newton's method finds its unique minimum; the fit
# records the final gradient norm.
#
# Two references come with the HMM:
#
# * the **static cap** $\max_k \pi_k$ (Corollary 1): any classifier that sees only a static
#   vector of $w$ — one vector for every occurrence — can do no better than always answering
#   the commoner sense;
# * the **exact Bayes accuracy** $\mathbb{E}\max_k P(\text{sense } k\mid x)$, averaged over the
#   test occurrences, with the posterior computed exactly by forward–backward. No classifier
#   of the sentence beats it in expectation.
#
# ## The table
#
# Every occurrence of $w$ in the training sequences is a training row, labelled with its
# true (sampled) sense; every occurrence in the test sequences is a test row. At each layer we
# fit the probe and a **shuffled-label control**: the same probe trained *and scored* on
# permuted senses — the training labels shuffled among the training rows, the test labels
# shuffled among the test rows. The token-table row $E[w]$, the same vector for every
# occurrence, is probed too.

# %%
table = ch5.probe_table()
Markdown(ch5.probe_markdown(table))

# %%
fig = ch5.plot_probe_by_layer()

# %%
p0, p1, p2 = table.probes
Markdown(
    f"The probe is trained on **{table.n_train}** occurrences and tested on **{table.n_test}**. "
    f"Against the exact Bayes accuracy **{table.bayes:.3f}** (standard error **{table.bayes_stderr:.3f}** "
    f"over occurrences; the Bayes rule's realised accuracy on the sampled senses is "
    f"**{table.bayes_realised:.3f}**), the layer-1 probe reaches **{p1:.3f}** and the layer-2 probe "
    f"**{p2:.3f}**: gaps of **{table.bayes - p1:.3f}** and **{table.bayes - p2:.3f}**. The static cap is "
    f"**{table.cap:.3f}**. One block of attention already makes almost all of the sense information in "
    f"the sentence linearly readable; the second block adds "
    f"{'nothing measurable' if abs(p2 - p1) <= 0.01 else f'{p2 - p1:+.3f}'}."
)

# %% [markdown]
# ## Static inputs stay at the cap
#
# Corollary 1 is visible twice in the table. The token-table probe sees one vector for all
# occurrences: after standardisation every feature is constant, so the fitted probe is its
# intercept alone and answers the training-majority sense every time. Its accuracy is then
# *exactly* the test share of that sense — not approximately:

# %%
Markdown(
    f"token-table probe **{table.token_table:.4f}**; test share of the training-majority sense "
    f"**{table.token_table_majority:.4f}**; static cap **{table.cap:.4f}**."
)

# %% [markdown]
# Layer 0 is $E[w] + P_i$. It does vary, with the position $i$, and the probe may use that.
# But the HMM starts in its stationary distribution, so the sense of an occurrence is
# independent of where in the sentence it falls: a vector that is a function of (token,
# position) is still static for this question, and the layer-0 probe stays at the cap.
#
# ## Controls: does the probe find structure in noise?
#
# A flexible enough probe can fit anything, including labels that mean nothing. The control
# asks whether this one does. Trained on permuted senses and scored on permuted senses, its
# predictions are independent of the labels it is scored against, so its expected accuracy
# is $\sum_c P(\text{predict } c)\,\text{share}_c$, at most the majority share. A probe that
# memorised its training noise would not do better on the test split either; a score above
# the cap here would mean the evaluation itself is leaking.

# %%
Markdown("\n".join(
    f"* layer {row.layer}: probe **{row.probe:.3f}**, control **{row.control:.3f}** "
    f"(Newton: {row.iterations} iterations, final gradient {row.gradient_norm:.1e})"
    for row in table.rows))

# %% [markdown]
# Hewitt and Liang (2019) made controls of this kind standard: report a probe beside a task
# it should fail, and trust the gap rather than the score.
#
# One could instead score the noise-trained probe against the *true* test senses. That
# version is less useful than it looks. A probe fitted to noise still draws some boundary,
# and at layers 1 and 2 the largest variation of $w$'s cloud *is* the sense (chapter 4's
# figure). A random boundary can cut along it, in either direction, so the score scatters
# around one half far beyond binomial error. Eight permutations at layer 1, scored both ways:

# %%
spread = ch5.control_spread(1)
print("scored on permuted senses:", " ".join(f"{a:.3f}" for a in spread.permuted))
print("scored on true senses:    ", " ".join(f"{a:.3f}" for a in spread.true_labels))
print(f"binomial sd of an accuracy of 1/2 on these test rows: {spread.binomial_sd:.3f}")

# %% [markdown]
# The second row is a property of the geometry, not evidence that the probe finds structure
# in noise: it would fall *below* one half as often as above. The first row is the control
# the table reports.
#
# ## What a probe can and cannot show
#
# A probe answers one question: *is the property linearly decodable from these vectors?*
# High accuracy, above its control, says yes. It does not say that the model **uses** the
# property. The encoder was trained to predict hidden tokens; the sense of $w$ helps with
# that, and the probe shows it is present after one block — but a probe would find a
# property that is present and ignored just as well, for instance any fact that happens to
# be correlated with the vectors' coordinates. Showing use takes an intervention: change
# the direction the probe found and see whether the model's predictions change.
#
# A probe also finds *any* cue, not just the intended one. If the label is correlated with
# something the vectors encode for other reasons — position, sentence length, a
# neighbouring word — the probe will exploit it and report a high score. The finance case
# study shows an example: read each token at whatever position it happens to land in its
# window, and the position table alone "types" a company name as company or product,
# because product mentions sit at the end of documents. Reading every token at the same
# position removes the cue. On the HMM this failure cannot happen at layer 0, because the
# language is stationary, which is why the layer-0 probe sits at the cap.
#
# Finally, a low probe score does not show that information is absent, only that it is not
# *linearly* available to a probe of this strength with this much data. The Bayes accuracy is
# what makes the HMM table unusual: we know the probe at layers 1 and 2 is within sampling
# distance of the best possible, so here "decodable" means "all of it".
