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
# A **probe** is a deliberately simple classifier, trained on frozen vectors to read a property
# off them. If a linear probe recovers the sense of $w$ from an encoder's vectors, the sense is
# *linearly decodable* there. On real models the story usually stops at that score, because
# nobody knows how well the property could be recovered at all. On the HMM we know both ends of
# the scale: Corollary 1 gives the best that any static vector can do, and forward–backward
# gives the best that any reader of the whole sentence can do. A probe's score can be placed
# between the two.
#
# This chapter probes the trained encoder layer by layer, checks that its evaluation leaks no
# labels, and shows how a probe can be fooled by where a token sits in its input. It
# ends with what, on this language, a probe does and does not establish. The code is in
# [`mlm_book.probe`](../api/mlm_book.probe.html) (the probe, its cross-validation schemes and
# controls, for any labelled vectors) and
# [`mlm_book.experiments.ch05_probing`](../api/mlm_book.experiments.ch05_probing.html) (the
# experiments on the HMM encoder).

# %%
import math

from mlm_book import hmm_splits, probe
from mlm_book.experiments import ch04_geometry as ch4
from mlm_book.readings import hmm_encoder
from mlm_book.experiments import ch05_probing as ch5
from mlm_book.readings import sense_probes
from mlm_book.experiments import ch06_finance as ch6
from mlm_book.experiments.hmm_encoder import SETUP
from mlm_book.figures import show
from mlm_book.ledger import chapter_summary, verify
from mlm_book.report import Markdown, answer, table

pt = sense_probes.probe_table()

# %% [markdown]
# ## The data
#
# The vectors are those of the encoder trained on the HMM with BERT's objective in
# [chapter 2](02_objective.html), read at the occurrences of the ambiguous token $w$ in clean
# sentences (no token masked). Each occurrence is one row, labelled with its true sense: the
# hidden state that emitted it, which the sampler records. A row's features are the encoder's
# vector of that occurrence at one layer: layer 0 is the input $E[w] + P_i$ (token table plus
# position table at the occurrence's position $i$), layers 1 and 2 are the residual stream after
# the first and the second block.

# %% tags=["hide-input"]
Markdown(
    f"The encoder has {SETUP.encoder.n_blocks} blocks of width $d = {SETUP.encoder.d_model}$. The probes are "
    f"trained on the occurrences of $w$ in {hmm_splits.SPLITS.n_train:,} training sentences of length "
    f"{hmm_splits.SPLITS.length} (**{pt.n_train:,}** rows) and scored on those in {hmm_splits.SPLITS.n_test:,} test "
    f"sentences (**{pt.n_test:,}** rows). The test sentences are chapter 1's test split, so the exact "
    "Bayes accuracy computed there is over the very occurrences probed here."
)

# %% [markdown]
# ## The probe, fixed in advance
#
# The probe is a logistic regression with a ridge penalty. Each feature is standardised with
# the mean and standard deviation of the **training** rows only; a feature that is constant on
# the training rows is set to zero, so it gets no weight. With $z$ the standardised vector and
# $y = 1$ for sense b, the probe predicts $P(\text{sense b} \mid z) = \sigma(\beta^\top z + \beta_0)$
# and minimises
#
# $$ \frac1n\sum_{i=1}^n \Big[\log\big(1+e^{\beta^\top z_i+\beta_0}\big) - y_i\,(\beta^\top z_i + \beta_0)\Big]
# + \frac{\lambda}{2}\lVert \beta\rVert^2 , $$
#
# with the intercept $\beta_0$ left unpenalised. The objective is strongly convex, so Newton's
# method finds its unique minimum. The strength $\lambda$ was set before any probe was run, by
# an argument that does not look at data. At the minimum the objective is no larger than at
# $\beta = 0$ with the best intercept, where it is the entropy of the class shares, at most
# $\log 2$; so $\frac{\lambda}{2}\lVert\beta\rVert^2 \le \log 2$, which keeps the weights
# finite even when the classes separate. It is never tuned on a test split.

# %% tags=["hide-input"]
worst_gradient = max(row.gradient_norm for row in pt.rows)
Markdown(
    f"The book uses $\\lambda = {probe.PROBE_STRENGTH:g}$, so the weight norm stays below "
    f"$\\sqrt{{2 \\log 2 / \\lambda}} \\approx$ {math.sqrt(2 * math.log(2) / probe.PROBE_STRENGTH):.0f}: on "
    "standardised features that is a cap no sensible boundary reaches, and elsewhere the penalty costs "
    f"almost nothing. Every fit of the chapter's table converged in at most "
    f"**{max(row.iterations for row in pt.rows)}** Newton iterations, with a final gradient of at most "
    f"**{worst_gradient:.0e}**."
)

# %% [markdown]
# ## Two references: the static cap and the Bayes accuracy
#
# The HMM makes two accuracies computable that bracket every probe of the sense of $w$.
#
# * The **static cap** $\max_k \pi_k$, the share of the commoner sense
#   ([Corollary 1](01_static_vectors.html#corollary-1-the-static-cap)). A classifier that sees
#   only a static vector of $w$, one vector for every occurrence, gives every occurrence the
#   same label, so it can do no better than always answering the commoner sense.
# * The **exact Bayes accuracy** $\mathbb{E}\max_k P(\text{sense } k \mid x)$, averaged over the
#   test occurrences, with the posterior of each occurrence's sense given its whole sentence $x$
#   computed exactly by forward–backward
#   ([chapter 1](01_static_vectors.html#the-ceiling-exact-bayes-sense-accuracy)). No classifier
#   of the sentence beats it in expectation, however it reads the sentence.
#
# The second reference applies to probes because an encoder's vector is computed from the
# sentence: it cannot tell a probe more about the sense than the sentence does.
# [Pimentel et al. (2020)](../references.html#pimentel-2020) made this point in terms of
# information, treating probing as estimating the mutual information between a
# representation and a property, which by the data-processing inequality is at most that
# between the sentence and the property. The exact Bayes accuracy is the same bound in
# accuracy rather than in bits; on a real model it cannot be computed, and here it can.

# %% tags=["hide-input"]
Markdown(
    f"Here the static cap is **{pt.cap:.3f}** and the exact Bayes accuracy **{pt.bayes:.3f}** (standard error "
    f"{pt.bayes_stderr:.3f}, with occurrences as units). The Bayes rule, which picks the sense with the larger "
    f"posterior, matches the sampled senses at **{pt.bayes_realised:.3f}** of the test occurrences: the "
    "realised accuracy scatters around the expected one like any score on a finite test set."
)

# %% [markdown]
# ## A leak check, not a control task
#
# A flexible enough probe can fit anything, including labels that mean nothing, and then its
# score says more about the probe than about the vectors. [Hewitt and Liang
# (2019)](../references.html#hewitt-2019) made it standard to report a probe beside a *control
# task* that it should fail, and to trust the difference of the two scores, which they call
# *selectivity*, rather than the probe's score alone. Their control tasks give each word type a
# random label. With a single word type, that would give every occurrence of $w$ one label and
# leave nothing to learn. This chapter runs something weaker:
#
# **Shuffled-label leak check.** Permute the senses among the training rows, and independently
# among the test rows; train the same probe on the permuted training senses and score it on the
# permuted test senses.
#
# The permuted test senses are independent of the probe's predictions, so if the probe predicts
# sense $c$ on a share $q_c$ of the test rows, its expected accuracy is
# $\sum_c q_c\,\text{share}_c \le \max_c \text{share}_c$: *any* probe, however expressive, scores
# at most the majority share up to sampling error. That is why it is not a control task: a
# control task is one that a probe *could* learn by memorising, so that a probe's score on it
# measures the probe's capacity; this one no probe can learn. It checks the evaluation
# instead: a score clearly above the majority would mean that labels leak from training into
# test. In the tables, *probe − leak check* is how far the probe rises above a probe that reads
# nothing; it is not Hewitt and Liang's selectivity, which [chapter 11](11_caveats.html)
# measures with their control task.

# %% [markdown]
# ## Probes layer by layer
#
# The table gives each probe's accuracy on the test occurrences with its binomial standard error
# (SE), the leak check and their difference. The first row is the probe on the encoder's
# token-table row $E[w]$, the same vector for every occurrence; the last two rows are the
# references.

# %%
ch5.probe_markdown(pt)

# %%
show(ch5.figure_probes(pt, seeds=sense_probes.seed_probes()))

# %% tags=["hide-input"]
p0, p1, p2 = pt.probes
Markdown(
    f"Against the exact Bayes accuracy **{pt.bayes:.3f}**, the layer-1 probe reaches **{p1:.3f}** and the "
    f"layer-2 probe **{p2:.3f}**: gaps of **{pt.bayes - p1:.3f}** and **{pt.bayes - p2:.3f}**, against "
    f"**{pt.bayes - pt.cap:.3f}** between the static cap and Bayes. One block of attention already makes "
    f"almost all of the sense information in the sentence linearly readable; the second block changes the "
    f"probe's score by {p2 - p1:+.3f}. The leak checks stay between **{min(pt.controls):.3f}** and "
    f"**{max(pt.controls):.3f}**, around the majority share ({pt.token_table_majority:.3f}): no labels leak, "
    f"and the probes at layers 1 and 2 rise about **{min(p1 - pt.controls[1], p2 - pt.controls[2]):.2f}** above "
    f"a probe that reads nothing.\n\n"
    "A probe on each layer alone, as here, asks what each layer holds. "
    "[Tenney, Das and Pavlick (2019)](../references.html#tenney-2019a) located the depth at which BERT resolves "
    "each kind of linguistic property differently: with a probe on a learned weighted mix of all the layers (a "
    "*scalar mix*), whose weights show which layers it draws on, and with *cumulative* probes on the mix of "
    "layers 0 to $\\ell$, whose gain from $\\ell - 1$ to $\\ell$ measures what layer $\\ell$ adds. "
    "[Tenney et al. (2019)](../references.html#tenney-2019b) also probed a scalar mix of the layers, and compared "
    "it with a probe on the encoder's non-contextual input layer, the role that the token-table row and layer 0 "
    "play here. On this two-block encoder the question of depth has a simple answer either way: the sense is "
    "there after the first block, and the second adds nothing a probe can measure."
)

# %% [markdown]
# ### Other training seeds
#
# The table describes one trained encoder. The same probes on encoders retrained with other
# seeds, every other setting unchanged and the same data, show which of its numbers belong to
# the method and which to the run:

# %%
seeds = sense_probes.seed_probes()
controls = sense_probes.seed_controls()
table(["training seed", "layer 0", "layer 1", "layer 2", "Bayes − layer 1", "largest leak check"],
      [(f"{seed} (the book's)" if i == 0 else seed, *values, seeds.bayes - values[1], max(control))
       for i, (seed, values, control) in enumerate(zip(seeds.seeds, seeds.probes, controls))],
      formats=[None, ".3f", ".3f", ".3f", ".3f", ".3f"])

# %% tags=["hide-input"]
gaps = [seeds.bayes - value for value in seeds.layer(1)]
within = [(seeds.bayes - values[1], seeds.bayes - values[2]) for values in seeds.probes]
worst = seeds.seeds[gaps.index(max(gaps))]
step = max(abs(b - a) for a, b in zip(seeds.layer(1), seeds.layer(2)))
Markdown(
    f"Over the **{len(seeds.seeds)}** seeds the layer-0 probe stays between **{min(seeds.layer(0)):.3f}** and "
    f"**{max(seeds.layer(0)):.3f}**, and the layer-1 probe between **{min(seeds.layer(1)):.3f}** and "
    f"**{max(seeds.layer(1)):.3f}**; the second block never moves the score by more than **{step:.3f}**. The "
    f"gap to Bayes at layer 1 ranges from **{min(gaps):.3f}** to **{max(gaps):.3f}** (seed {worst}), "
    f"while each score has a standard error of about {pt.rows[1].stderr:.3f}. So the jump from the cap to near "
    "Bayes after one block is a property of the method; how near is a property of the run. The reference's "
    "claim that the probe ends within 0.02 of Bayes at layers 1 and 2 holds at "
    f"**{sum(max(pair) <= 0.02 for pair in within)} of {len(seeds.seeds)}** seeds: it is *seed-dependent*, and "
    "the Claims page records it so. That the layer-2 probe clears the cap by "
    "0.3 or more holds at every seed, no probe exceeds Bayes by more than 0.005 at any seed, the "
    "layer-0 probe stays within 0.015 of the cap at every seed, and so does the leak check: the last column is the largest of the three "
    f"layers' shuffled-label leak checks (same permutations as above), never more than {max(map(max, controls)):.3f}, "
    f"within 0.015 of the cap {pt.cap:.3f} at every seed."
)

# %% [markdown]
# ## Static inputs stay at the cap
#
# Corollary 1 shows in the table twice. The token-table probe sees one vector for all
# occurrences: after standardisation every feature is constant, so the fitted probe is its
# intercept alone and answers the training-majority sense every time. Its accuracy is then
# *exactly* the test share of that sense, not approximately:

# %% tags=["hide-input"]
Markdown(
    f"token-table probe **{pt.token_table:.4f}**; test share of the training-majority sense "
    f"**{pt.token_table_majority:.4f}**; static cap **{pt.cap:.4f}**. The first two are equal; the cap differs "
    f"from them by {abs(pt.token_table - pt.cap):.4f} because {pt.n_test:,} test occurrences do not reproduce "
    "the senses' shares exactly."
)

# %% [markdown]
# Layer 0 is $E[w] + P_i$. It does vary, with the position $i$, and the probe may use that.
# But the HMM starts in its stationary distribution, so the sense of an occurrence is
# independent of where in the sentence it falls. A vector that is a function of the token and
# its position is therefore still static for this question, and the layer-0 probe stays at the
# cap.

# %% tags=["hide-input"]
Markdown(
    f"It even falls a little below the majority share: **{p0:.3f}** against {pt.token_table_majority:.3f}, "
    f"about {(pt.token_table_majority - p0) / pt.rows[0].stderr:.0f} standard errors. The probe fits the chance "
    "differences between positions in the training split, which do not recur in the test split: a probe "
    "that may use an uninformative feature pays a little for it."
)

# %% [markdown]
# ## The position leak
#
# A probe finds *any* cue that goes with the label, not just the intended one. If the label is
# correlated with something the vectors encode for other reasons (position, sentence length, a
# neighbouring word), the probe exploits it and reports a high score. The cue most easily
# overlooked is position. We call it a **position leak** when a probe reads the label off where
# the token sits in the encoder's input rather than off its context: a layer-0 probe that beats
# the static cap is the symptom, because layer 0 knows nothing but the token and its position.
#
# On the HMM there is nothing to leak. The probe on a one-hot code of the occurrence's position
# alone, with no vector at all, scores:

# %%
position = ch5.position_probe()
table(["probe on the position alone", "SE", "test share of the training-majority sense"],
      [(position.accuracy, position.stderr, position.majority_share)], formats=[".3f", ".3f", ".3f"])

# %% tags=["hide-input"]
leak = ch6.results().position_reader
n_kestrel = ch6.results().counts.kestrel[0]
Markdown(
    "That is the majority share up to sampling error, as stationarity demands. The "
    f"[finance case study](06_finance.html) shows the leak where it exists. There the ambiguous word is "
    f"*kestrel*, a company's name and also its product ({n_kestrel} occurrences), and an encoder reads each "
    "token from a window of the filing. If each token is read in the fixed window where it sits nearest the "
    "centre, product mentions, which close the filings, land near a window's edge, and a probe on the "
    f"window position alone types *kestrel* correctly **{leak['nearest-centre']:.3f}** of the time "
    f"({ch6.results().config.position_folds}-fold cross-validation). Reading every token at the centre of its "
    f"own window makes the position the same for all of them, and the same probe drops to "
    f"**{leak['centred']:.3f}**, the majority share. A layer-0 probe on the first reading would look like a "
    "contextual reader without reading a word of context."
)

# %% [markdown]
# ## Scoring the leak check against the true senses
#
# One could instead score the noise-trained probe against the *true* test senses. That version
# of the check is less useful than it looks. A probe fitted to noise still draws some boundary,
# and at layers 1 and 2 the largest variation of $w$'s cloud *is* the sense
# ([chapter 4](04_geometry.html)). A random boundary can cut along it, in either direction, so
# the score scatters around one half far beyond binomial error. The figure shows the same probe
# trained on several permutations of the senses at layer 1, each scored both ways:

# %%
spread = ch5.control_spread(1)
show(ch5.figure_control_spread(spread))

# %% tags=["hide-input"]
below = int((spread.true_labels < 0.5).sum())
inside = bool(abs(spread.permuted - 0.5).max() <= 2 * spread.binomial_sd)
Markdown(
    f"Scored on permuted senses the leak check stays between **{spread.permuted.min():.3f}** and "
    f"**{spread.permuted.max():.3f}**, {'within' if inside else 'not always within'} two binomial standard "
    f"deviations ({spread.binomial_sd:.3f} each) of one half. Scored on the true senses it ranges from "
    f"**{spread.true_labels.min():.3f}** to **{spread.true_labels.max():.3f}**, and {below} of the "
    f"{spread.true_labels.size} scores fall *below* one "
    "half. That scatter is a property of the geometry, not evidence that the probe finds structure in noise: "
    "a boundary aligned with the sense direction by chance is as likely to be aligned the wrong way round. "
    "The permuted-score version is the leak check the table reports."
)

# %% [markdown]
# ## What a probe can and cannot show here

# %% tags=["hide-input"]
Markdown(
    "A probe answers one question: *is the property linearly decodable from these vectors?* On this "
    "language the two references grade its answer, and the chapter's numbers say the following.\n\n"
    f"**What the probes show.** The sense of $w$ is linearly decodable after one block: the layer-1 probe "
    f"scores **{p1:.3f}**, against a static cap of **{pt.cap:.3f}** and an exact Bayes accuracy of "
    f"**{pt.bayes:.3f}**, and its leak check **{pt.controls[1]:.3f}** shows that no labels leak into the test. Over "
    f"{len(seeds.seeds)} training seeds the layer-1 probe stays between {min(seeds.layer(1)):.3f} and "
    f"{max(seeds.layer(1)):.3f}. The second block adds nothing measurable. The static representations, the "
    f"token-table row and layer 0, score **{pt.token_table:.3f}** and **{p0:.3f}**, at the cap.\n\n"
    "**What they do not show.** First, that the encoder *uses* the sense. It was trained to predict hidden "
    "tokens, and the sense helps with that, but a probe would find a property that is present and ignored "
    "just as well; showing use takes an intervention, such as changing the vectors along the direction the "
    "probe found and watching whether the predictions change. Second, that the cue the probe reads is the "
    f"intended one: in the finance filings the window position alone reaches {leak['nearest-centre']:.3f}. "
    f"Here the position probe's **{position.accuracy:.3f}** says the position carries nothing, and we know "
    "why only because the language is stationary, a fact about the data that no probe can supply. Third, "
    "that a property is absent. The layer-0 and token-table scores are at the cap because Corollary 1 and "
    "stationarity say they must be; a low score on its own means only that the property is not *linearly* "
    "readable by a probe of this strength from this much data.\n\n"
    f"What the HMM adds is the ceiling. The layer-1 probe is **{pt.bayes - p1:.3f}** below the best any "
    f"reader of the sentence could do, so here \"decodable\" means nearly all of what the sentence says about "
    "the sense, but not quite all of it (the first exercise asks whether that small gap is real). On a "
    "real model the ceiling is unknown, and a probe score of this size could not be read this way."
)

# %% [markdown]
# ## Exercises
#
# **Exercise 1.** The layer-1 probe falls a little short of the exact Bayes accuracy. Is the
# gap sampling error? Compare the probe's decisions with those of the Bayes
# rule (the sense with the larger exact posterior) on the same test occurrences.

# %% tags=["hide-input"]
c = ch5.bayes_comparison(1)
answer(
    f"`ch5.bayes_comparison(1)` counts the occurrences where exactly one of the two is right. The Bayes rule is "
    f"right and the probe wrong at **{c.bayes_only}** occurrences, the reverse at **{c.probe_only}**; on the "
    f"other {c.n - c.bayes_only - c.probe_only:,} of the {c.n:,} they agree. If the two classifiers were "
    "equally good, each disagreement would go either way with probability one half, so McNemar's statistic "
    "(the difference of the two counts over the square root of their sum) would be about standard normal. "
    f"It is **{c.z:.1f}**: the gap is real, not sampling error.\n\n"
    "The probe is a linear function of one vector after one block; the Bayes rule is a non-linear function "
    "of the whole sentence, and nothing forces the encoder's vector to hold it exactly or a hyperplane to "
    "match it. The gap is small, but it is there."
)

# %% [markdown]
# **Exercise 2.** How many labelled occurrences does the probe need? Train the layer-1 probe on
# only the first 25, 100 or 1000 training occurrences, and score it on the full test split.

# %% tags=["hide-input"]
train, test = hmm_encoder.split_vectors("train"), hmm_encoder.split_vectors("test")
few = {n: probe.fit_and_score(train.word(1)[:n], train.senses[:n], test.word(1), test.senses).accuracy
       for n in (25, 100, 1000)}
axis = ch4.sense_axes()[1]
answer(
    "`probe.fit_and_score(train.word(1)[:n], train.senses[:n], test.word(1), test.senses)` with "
    "`train, test = hmm_encoder.split_vectors(\"train\"), hmm_encoder.split_vectors(\"test\")` gives "
    + ", ".join(f"**{value:.3f}** with {n}" for n, value in few.items())
    + f" training occurrences, against {p1:.3f} with all {pt.n_train:,}. A few dozen labels already put the "
    "probe far above the cap, because the sense is the direction along which the layer-1 cloud varies most: "
    f"its first principal axis carries **{axis.explained[0]:.0%}** of the variance, and the coordinate along it "
    f"correlates **{axis.correlation[0]:.2f}** with the exact posterior of sense b (`ch4.sense_axes()`, "
    "chapter 4). There is little to search for. The scores do not rise steadily with the number of rows, because with "
    "few rows which ones are drawn matters as much as how many. Two conclusions: the probe's verdict on this "
    "encoder does not hinge on the amount of labelled data, and the remaining gap to Bayes is not a shortage "
    "of data either."
)

# %% [markdown]
# **Exercise 3.** At layer 1 the noise-trained probe, scored against the true senses, scatters
# far beyond binomial error. Does it at layer 0? Explain the difference.

# %% tags=["hide-input"]
spread0 = ch5.control_spread(0)
inside0 = bool(abs(spread0.true_labels - 0.5).max() <= 2 * spread0.binomial_sd)
answer(
    f"`ch5.control_spread(0)` gives scores on the true senses between **{spread0.true_labels.min():.3f}** and "
    f"**{spread0.true_labels.max():.3f}** over {spread0.true_labels.size} permutations, "
    f"{'inside' if inside0 else 'close to'} $1/2 \\pm 2$ binomial standard deviations "
    f"({spread0.binomial_sd:.3f} each), against "
    f"{spread.true_labels.min():.3f} to {spread.true_labels.max():.3f} at layer 1. At layer 0 the vector of an "
    "occurrence depends only on its position, and the position is independent of the sense. Whatever "
    "boundary the probe draws through noise, its decisions are then independent of the true senses, and the "
    "score is one half up to sampling error. At layer 1 the vectors vary most along the sense, so a random "
    "boundary is correlated with the sense, one way or the other."
)

# %% [markdown]
# ## Claims

# %% tags=["hide-input"]
chapter_summary(verify(claims=ch5.CLAIMS))
