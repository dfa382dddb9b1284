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
# # Chapter 4 — The geometry of contextual vectors
#
# A static embedding gives the shared token $w$ one vector. A contextual encoder gives it one
# vector per occurrence, so at each layer the occurrences of $w$ form a *cloud*. This chapter
# asks what that cloud looks like: how tightly its vectors point the same way, how much of it
# a single direction captures, and how both compare with the cloud of all tokens at the same
# layer. The measures are those of [Ethayarajh (2019)](../references.html#ethayarajh-2019),
# who used them on BERT, ELMo and GPT-2. Here the model is the book's trained HMM encoder, so
# we can also colour every point by the exact probability of its sense, and retrain the
# encoder to see which findings survive a change of random seed.
#
# The code is in [`mlm_book.geometry`](../api/mlm_book.geometry.html) (measures that apply to
# any cloud of vectors) and
# [`mlm_book.experiments.ch04_geometry`](../api/mlm_book.experiments.ch04_geometry.html) (the
# HMM encoder's clouds).

# %%
import numpy as np

from mlm_book import geometry, hmm_splits
from mlm_book.experiments import ch04_geometry as ch4
from mlm_book.readings import hmm_encoder
from mlm_book.experiments.hmm_encoder import SETUP
from mlm_book.figures import show
from mlm_book.ledger import chapter_summary, verify
from mlm_book.report import Markdown, answer, table

# %% [markdown]
# ## Three measures of a cloud
#
# Fix a layer and collect the vectors $h_1, \dots, h_k \in \mathbb{R}^d$ of the $k$ occurrences
# of a word; stack them as the rows of the **occurrence matrix** $H \in \mathbb{R}^{k \times d}$.
#
# **Definition 3** *(self-similarity, anisotropy baseline, maximum explainable variance)*.
#
# * The **self-similarity** of the word is the average cosine between two *different*
#   occurrences,
#   $$\mathrm{SelfSim} = \frac{1}{k(k-1)} \sum_{j \ne l} \cos(h_j, h_l).$$
# * The **anisotropy baseline** of the layer is the same average taken over vectors of tokens
#   drawn uniformly from the corpus, whatever their word, two distinct draws at a time. The
#   **adjusted self-similarity** is $\mathrm{SelfSim}$ minus the baseline.
# * The **maximum explainable variance** is
#   $$\mathrm{MEV} = \frac{\sigma_1^2}{\sum_i \sigma_i^2},$$
#   where $\sigma_1 \ge \sigma_2 \ge \dots$ are the singular values of $H$ itself, not of
#   $H$ with its mean removed.
#
# Why the baseline? Cosines are measured from the origin. If every vector at a layer lives
# in a narrow cone, any two of them have a large cosine, related or not; a high
# self-similarity then says only that the word lives in the cone. Subtracting the mean
# cosine of random pairs asks whether the word's occurrences are closer to *each other* than
# random tokens are. For an isotropic cloud (one that favours no direction) the baseline is
# zero; when every vector points the same way, it is one.
#
# Such cones are common. Static word vectors already share a large common mean and a few
# dominant directions ([Mu and Viswanath 2018](../references.html#mu-2018)), and Ethayarajh
# found contextual vectors in such cones. A cone need not involve many coordinates: in BERT
# and similar models, [Timkey and van Schijndel (2021)](../references.html#timkey-2021) found
# that a few *rogue dimensions*, often just one to three, dominate the cosine, so a high
# baseline can be the work of a handful of coordinates.
#
# So the cosine between two contextual vectors says how similar two words in context are
# only after some transformation of the vectors or of the cosine. Subtracting the
# baseline, as the adjusted self-similarity does, is one such transformation; others remove
# the common mean and the dominant directions from the vectors (Mu and Viswanath) or
# standardise each coordinate so that no rogue dimension dominates (Timkey and van
# Schijndel).
#
# Two computational remarks. First, the average over all $k(k-1)$ ordered pairs needs no
# loop over pairs: for unit vectors $u_j = h_j/\lVert h_j\rVert$,
# $\sum_{j\ne l}\langle u_j,u_l\rangle = \lVert\sum_j u_j\rVert^2 - k$, so the exact mean costs
# $O(kd)$. The baseline below is therefore exact over every pair of distinct token positions
# of the test split, not a sample of pairs.
#
# Second, an isotropic cloud of finitely many points does *not* have MEV $1/d$. Sampling
# inflates its top singular value: for $k$ standard Gaussian vectors, $\sigma_1^2$ is about
# $(\sqrt k + \sqrt d)^2$ while the total energy $\sum_i \sigma_i^2$ is about $kd$, so MEV is
# about $(\sqrt k + \sqrt d)^2/(kd)$. This is the upper edge of the Marchenko–Pastur law
# ([Marchenko and Pastur 1967](../references.html#marchenko-1967)), which describes the bulk of
# the eigenvalues of $H^\top H$; that the largest eigenvalue itself converges to the edge, and
# does not stray beyond it, is a separate theorem, proved by [Geman
# (1980)](../references.html#geman-1980) and, under a finite fourth moment, by [Yin, Bai and
# Krishnaiah (1988)](../references.html#yin-1988). The column *asymptotic* below adds
# [Johnstone's (2001)](../references.html#johnstone-2001) correction for the mean of the
# largest eigenvalue, which matters when $k$ or $d$ is small. The column *simulated*
# averages the MEV of independent Gaussian clouds of the same shape. An MEV must therefore be
# compared with an isotropic cloud *of the same size*:

# %%
rng = np.random.default_rng(0)
isotropic = [geometry.isotropic_mev(k, d, rng, repeats=40) for k, d in [(200, 32), (1000, 64), (6000, 32)]]
table(["vectors k", "dimension d", "simulated MEV", "standard error", "asymptotic", "1/d"],
      [(ref.n, ref.d, ref.mean, ref.stderr, ref.asymptotic, ref.naive) for ref in isotropic],
      formats=["d", "d", ".4f", ".4f", ".4f", ".4f"])

# %% tags=["hide-input"]
small = isotropic[0]
Markdown(
    f"Over {small.repeats} simulated clouds of {small.n} vectors in {small.d} dimensions the MEV of pure "
    f"noise is **{small.mean:.4f}**, **{small.mean / small.naive:.1f}** times $1/d$; the asymptotic formula "
    f"gives {small.asymptotic:.4f}. The more vectors per dimension, the closer the simulated value comes to "
    f"$1/d$, but for the cloud sizes of this chapter the difference is still far from negligible."
)

# %% [markdown]
# ## What a single direction can carry
#
# MEV has a clean meaning, which is why it is computed on the uncentred matrix.
#
# **Proposition 2** *(the best static summary)*. Let $H \in \mathbb{R}^{k\times d}$ have rank
# $r \ge 1$ and nonzero singular values $\sigma_1 \ge \dots \ge \sigma_r$.
#
# 1. Among constant vectors $c$, the sum of squared distances $\sum_j \lVert h_j - c\rVert^2$ is
#    smallest at the row mean $\bar h = \frac1k\sum_j h_j$.
# 2. $\displaystyle \mathrm{MEV} = \max_{\lVert u\rVert = 1} \frac{\sum_j \langle h_j, u\rangle^2}{\sum_j \lVert h_j\rVert^2}$:
#    the largest share of the cloud's energy that one direction through the origin carries.
# 3. $1/r \le \mathrm{MEV} \le 1$, and $\mathrm{MEV} = 1$ exactly when all occurrences lie on
#    one line through the origin ($r = 1$).
#
# *Proof.* (1) The function $f(c) = \sum_j\lVert h_j - c\rVert^2$ is a strictly convex
# quadratic with gradient $\nabla f(c) = -2\sum_j (h_j - c) = -2k(\bar h - c)$, which vanishes
# only at $c = \bar h$; a strictly convex function's only stationary point is its minimum.
# Equivalently, $f(c) = f(\bar h) + k\lVert c - \bar h\rVert^2$.
#
# (2) The numerator is $\sum_j\langle h_j,u\rangle^2 = \lVert Hu\rVert^2 = u^\top H^\top H u$.
# Over unit vectors a quadratic form is maximised by the top eigenvector of the symmetric
# matrix $H^\top H$, with value its top eigenvalue $\sigma_1^2$. The denominator is
# $\sum_j\lVert h_j\rVert^2 = \lVert H\rVert_F^2 = \operatorname{tr}(H^\top H) = \sum_i\sigma_i^2$.
# Their ratio is MEV.
#
# (3) The numbers $\sigma_1^2,\dots,\sigma_r^2$ are positive and sum to $\lVert H\rVert_F^2$.
# The largest of $r$ positive numbers is at least their average and at most their sum, so
# $\frac1r \le \sigma_1^2/\sum_i\sigma_i^2 \le 1$. The right-hand inequality is an equality
# exactly when the other $r-1$ numbers vanish, that is when $r = 1$: every row is a multiple
# of one vector. $\blacksquare$
#
# By the Eckart–Young theorem ([Eckart and Young 1936](../references.html#eckart-1936)) the
# best rank-one approximation of $H$ in Frobenius norm is $\sigma_1 u_1 v_1^\top$, which
# misses $\sum_{i\ge2}\sigma_i^2$ of the energy. So $1-\mathrm{MEV}$ is exactly the share of the
# cloud that the best "one direction, one scale per occurrence" summary fails to capture, and
# MEV is an upper bound on how well any single static vector, rescaled per occurrence, could
# stand in for the word's contextual vectors. Statement (1) is the centred, zero-dimensional
# counterpart: the best *constant* stand-in is the mean. Principal component analysis is the
# centred, many-direction version; (2) is the uncentred, one-direction case, through the
# origin instead of the mean.
#
# The package checks each statement by computing both sides independently and reports the
# gaps. It tries the checks on random Gaussian matrices of several shapes, with a different
# scale and offset in each column, and on a rank-one matrix. The first table gives each cloud's
# shape, its rank $r$, its MEV, and the two slacks of statement (3), which must not be
# negative:

# %%
random_checks = ch4.random_proposition2()
random_names = ["Gaussian + offset"] * (len(random_checks) - 1) + ["rank one"]
table(["cloud", "k × d", "rank r", "MEV", "MEV − 1/r", "1 − MEV"],
      [(name, f"{c.k} × {c.d}", c.rank, c.mev, c.lower_slack, c.upper_slack)
       for name, c in zip(random_names, random_checks)],
      formats=[None, None, "d", ".4f", ".4f", ".4f"])

# %% [markdown]
# The second table gives the residuals, which must vanish up to rounding: for (1), the
# gradient of $f$ at the row mean relative to the cloud's scale; for (2), the difference
# between MEV from the singular values and the quotient
# $\lVert Hu\rVert^2/\lVert H\rVert_F^2$ at the top eigenvector of $H^\top H$ found by the
# symmetric eigensolver (the package also checks that no random direction does better); and
# for Eckart–Young, the share of energy an explicitly built rank-one fit misses, minus
# $1 - \mathrm{MEV}$.

# %%
table(["cloud", "k × d", "(1) gradient", "(2) MEV − quotient", "Eckart–Young"],
      [(name, f"{c.k} × {c.d}", c.mean_gradient, c.variational, c.eckart_young)
       for name, c in zip(random_names, random_checks)],
      formats=[None, None, "residual", "residual", "residual"])

# %% tags=["hide-input"]
worst = max(max(c.mean_gradient, c.variational, c.eckart_young) for c in random_checks)
Markdown(
    f"Every residual is at most **{worst:.1e}**, the size of floating-point rounding, and the rank-one matrix "
    f"has MEV {random_checks[-1].mev:.4f} with both slacks zero, as statement (3) says it must."
)

# %% [markdown]
# ## The HMM encoder's clouds of *w*
#
# We read the trained HMM encoder on the clean test split: the same sentences chapter 1 used
# for the Bayes accuracy and chapter 5 uses for the probes. **Layer 0** is the encoder's input
# $E[x_i] + P_i$, the token-table row plus the position-table row of the occurrence's own
# position; **layer 1** and **layer 2** are the residual stream (the running sum of the input
# and the outputs of the blocks so far) after the first and the second block; layer 2 is taken
# before the final LayerNorm.

# %%
layer_table = hmm_encoder.geometry_table()

# %% tags=["hide-input"]
Markdown(
    f"The test split holds {hmm_splits.SPLITS.n_test} sentences of length {hmm_splits.SPLITS.length}, that is "
    f"{layer_table.n_tokens} tokens, of which **{layer_table.n_occurrences}** are occurrences of $w$; every "
    f"vector has $d = {layer_table.rows[0].geometry.dim}$ coordinates. First the checks of Proposition 2 on "
    f"$w$'s three clouds, with the largest of the three residuals in the last column:"
)

# %%
encoder_checks = ch4.encoder_proposition2()
table(["layer", "rank r", "MEV", "MEV − 1/r", "1 − MEV", "largest residual"],
      [(layer, c.rank, c.mev, c.lower_slack, c.upper_slack, max(c.mean_gradient, c.variational, c.eckart_young))
       for layer, c in enumerate(encoder_checks)],
      formats=["d", "d", ".4f", ".4f", ".4f", "residual"])

# %% tags=["hide-input"]
Markdown(
    f"The layer-0 cloud has rank **{encoder_checks[0].rank}** although it holds {encoder_checks[0].k} vectors: "
    f"at layer 0 an occurrence's vector depends only on its position, so the cloud has only "
    f"**{layer_table.rows[0].distinct_vectors}** distinct vectors, one per position. After a block the "
    f"vectors differ from sentence to sentence and the cloud fills all {encoder_checks[1].d} dimensions.\n\n"
    f"Now Definition 3 at each layer: the self-similarity of $w$, the anisotropy baseline of all "
    f"{layer_table.n_tokens} test tokens, their difference (the adjusted self-similarity), and the MEV of $w$."
)

# %%
table(["layer", "self-similarity", "baseline", "adjusted", "MEV"],
      [(row.layer, row.geometry.self_similarity, row.geometry.baseline, row.geometry.adjusted, row.geometry.mev)
       for row in layer_table.rows],
      formats=["d", ".3f", ".3f", ".3f", ".3f"])

# %% tags=["hide-input"]
col = layer_table.column
ss, mv, base, adj = col("self_similarity"), col("mev"), col("baseline"), col("adjusted")


def moves(values, a, b):
    return "falls" if values[b] < values[a] else "rises"


cone = ("the token vectors of every word drift towards a common direction, as Ethayarajh found in BERT, ELMo "
        "and GPT-2, so part of any raw self-similarity is that shared drift"
        if base[1] > base[0] else
        "unlike what Ethayarajh found in BERT, ELMo and GPT-2, the token vectors do not drift towards a "
        "common direction here")
Markdown(
    f"From layer 0 to layer 1, where attention first mixes in the context, the self-similarity of $w$ "
    f"{moves(ss, 0, 1)} from **{ss[0]:.3f}** to **{ss[1]:.3f}** (**{ss[2]:.3f}** at layer 2) and its MEV "
    f"{moves(mv, 0, 1)} from **{mv[0]:.3f}** to **{mv[1]:.3f}** (**{mv[2]:.3f}**). The baseline "
    f"{moves(base, 0, 1)} from **{base[0]:.3f}** to **{base[1]:.3f}** (**{base[2]:.3f}** at layer 2): "
    f"{cone}. Net of the baseline, the adjusted self-similarity {moves(adj, 0, 1)} from **{adj[0]:.3f}** to "
    f"**{adj[1]:.3f}** at layer 1 and is **{adj[2]:.3f}** at layer 2.\n\n"
    f"The changes in self-similarity and MEV are small, and layer 0 is not the single point one might expect of a static embedding: "
    f"its **{layer_table.rows[0].distinct_vectors}** distinct vectors are spread by the position table alone. "
    "The next section separates the two sources of spread."
)

# %% [markdown]
# ### Where the spread comes from
#
# Self-similarity pools the occurrences of $w$ from every position. Split each occurrence's
# vector into the mean $m$ of the cloud, which every occurrence shares, and its deviation
# from $m$, which tells it apart from the others; let the *spread* $s$ be the root-mean-square
# length of the deviations. Self-similarity is high when the shared part is long compared
# with the deviations: if all occurrences had the same norm, it would be almost exactly
# $\lVert m\rVert^2/(\lVert m\rVert^2 + s^2)$ (Exercise 2). So a change in self-similarity from
# one layer to the next compares two lengths, and both move:
#
# * **At layer 0 the deviations come from position alone.** Occurrence $j$ at position $i_j$ is
#   $E[w] + P_{i_j}$. If the position rows are nearly orthogonal to each other and to $E[w]$,
#   then for $i \ne i'$
#   $$\cos(E[w]+P_i,\ E[w]+P_{i'}) \approx \frac{\lVert E[w]\rVert^2}{\lVert E[w]\rVert^2 + \lVert P\rVert^2},$$
#   where $\lVert P\rVert^2$ is the mean squared norm of the position rows. The larger the
#   position table relative to the token row, the lower the layer-0 self-similarity, with no
#   context involved at all.
# * **After a block, the deviations carry position and context**, and the shared part is
#   whatever the blocks add to every occurrence of $w$ alike; it can grow or shrink.
#
# The pooled self-similarity therefore falls from layer 0 to layer 1 only if the deviations
# grow faster than the shared part: a race between two lengths, neither of which measures
# context alone. To see context alone, compare occurrences *at the same position*. At layer 0
# they are one and the same vector, so their self-similarity is exactly one; any drop below
# one at a later layer is spread that the context added. The **within-position
# self-similarity** is the self-similarity of the occurrences at one position, averaged over
# positions with weights proportional to their numbers of occurrences.

# %%
inputs, scales = ch4.scale_diagnostics()
table(["layer", r"shared part $\lVert m\rVert$", "spread $s$", r"$s/\lVert m\rVert$", "within a position"],
      [(row.layer, row.mean_norm, row.spread, row.spread / row.mean_norm, row.within_position) for row in scales],
      formats=["d", ".2f", ".2f", ".3f", ".3f"])

# %% tags=["hide-input"]
robust = ch4.seed_robustness()
book = robust.rows[0]
orthogonal = abs(inputs.position_similarity) < 0.1 and abs(inputs.token_position_cosine) < 0.1
ratio = [row.spread / row.mean_norm for row in scales]
race = ("the spread grows a little faster, so the ratio $s/\\lVert m\\rVert$ rises and the pooled self-similarity "
        "falls" if ratio[1] > ratio[0] else
        "the shared part grows faster, so the ratio $s/\\lVert m\\rVert$ falls and the pooled self-similarity rises")
Markdown(
    f"In the book's encoder $\\lVert E[w]\\rVert$ = **{inputs.token_norm:.2f}** and the position rows have mean "
    f"norm **{inputs.position_norm:.2f}**. The position rows are "
    f"{'nearly orthogonal' if orthogonal else 'not close to orthogonal'} to each other (their self-similarity "
    f"is **{inputs.position_similarity:.3f}**) and to $E[w]$ (mean cosine **{inputs.token_position_cosine:.3f}**), "
    f"so the formula applies: it gives **{book.layer0_from_norms:.3f}**, against the measured layer-0 "
    f"self-similarity of **{ss[0]:.3f}**.\n\n"
    f"From layer 0 to layer 1 the shared part grows from {scales[0].mean_norm:.2f} to "
    f"{scales[1].mean_norm:.2f} and the spread from {scales[0].spread:.2f} to {scales[1].spread:.2f}: {race}, "
    f"from {ss[0]:.3f} to {ss[1]:.3f}. At a fixed position, the change is not small: the occurrences that are "
    f"one vector at layer 0 fan out to a within-position self-similarity of **{scales[1].within_position:.3f}** "
    f"at layer 1 and **{scales[2].within_position:.3f}** at layer 2. That is the spread the context adds, and "
    f"the figure further down shows that it follows the sense."
)

# %% [markdown]
# How long the position rows grow relative to the token row is decided by training; nothing
# in the masked-LM objective fixes it. To see how much this matters, the package also trains
# a *contrast encoder*: the same architecture, data and seed, with two settings changed. Its
# token table starts small, as BERT's does, and it trains without weight decay.

# %% tags=["hide-input"]
contrast = ch4.init_scale_contrast()
contrasts = ch4.contrast_robustness()


def direction(row):
    """How the pooled self-similarity and MEV at layers 1 and 2 compare with layer 0."""
    up = [row.self_similarity[l] > row.self_similarity[0] for l in (1, 2)] + [row.mev[l] > row.mev[0] for l in (1, 2)]
    if all(up):
        return "higher after the blocks than at the input"
    if not any(up):
        return "lower after the blocks than at the input"
    return "higher than at the input at some later layers and lower at others"


Markdown(
    f"The book's encoder starts its token table with standard deviation {SETUP.encoder.token_init_std:g} and "
    f"trains with decoupled weight decay of strength {SETUP.training.weight_decay:g} "
    f"([Loshchilov and Hutter 2019](../references.html#loshchilov-2019)); the contrast encoder starts the "
    f"token table like every other table, with BERT's standard deviation {SETUP.encoder.init_std:g} "
    f"([Devlin et al. 2019](../references.html#devlin-2019)), and trains with plain Adam, without weight "
    f"decay (the settings are in [`HMMEncoderSetup`](../api/mlm_book.artefacts.hmm_encoder.html#mlm_book.artefacts.hmm_encoder.HMMEncoderSetup)). "
    f"It ends with $\\lVert E[w]\\rVert$ = **{contrast.token_norm:.2f}** and position rows of mean norm "
    f"**{contrast.position_norm:.2f}**: the position rows are "
    f"{'longer' if contrast.position_norm > contrast.token_norm else 'shorter'} than the token row, where in the "
    f"book's encoder they are {'longer' if inputs.position_norm > inputs.token_norm else 'shorter'}. Its layer-0 "
    f"self-similarity is accordingly only **{contrast.self_similarity[0]:.3f}** (the formula gives "
    f"{contrast.layer0_from_norms:.3f}), and its pooled self-similarity, "
    f"{' / '.join(f'{x:.3f}' for x in contrast.self_similarity)} at "
    f"layers 0 / 1 / 2, and MEV are {direction(contrast)}: the opposite of the book's encoder, whose values are "
    f"{direction(book)}. Within a position the two encoders agree: one at layer 0, then "
    f"{contrast.within_position[1]:.3f} and {contrast.within_position[2]:.3f} for the contrast encoder.\n\n"
    f"These are the numbers of one training seed. The contrast recipe was also trained at the other "
    f"{len(contrasts.rows) - 1} seeds (the next section lists them all): its position rows end "
    f"{'longer' if contrast.position_norm > contrast.token_norm else 'shorter'} than the token row at "
    f"**{sum((r.position_norm > r.token_norm) == (contrast.position_norm > contrast.token_norm) for r in contrasts.rows)} "
    f"of {len(contrasts.rows)}** seeds, and its pooled self-similarity and MEV are {direction(contrast)} at "
    f"**{sum(direction(r) == direction(contrast) for r in contrasts.rows)} of {len(contrasts.rows)}**."
)

# %% [markdown]
# ## Two readings of MEV
#
# The MEV of $w$'s cloud can be compared with two references: an isotropic Gaussian cloud of
# the same size and dimension, and a cloud of as many token vectors drawn uniformly from the
# same layer, whatever their word. The second shares the layer's common direction but not a
# token-table row.

# %%
table(["layer", "MEV of w", "MEV of random tokens", "MEV of isotropic cloud"],
      [(row.layer, row.geometry.mev, row.geometry.token_mev, row.geometry.isotropic_mev) for row in layer_table.rows],
      formats=["d", ".3f", ".3f", ".3f"])

# %% tags=["hide-input"]
far = min(row.geometry.mev / row.geometry.isotropic_mev for row in layer_table.rows)
above_tokens = all(row.geometry.mev > row.geometry.token_mev for row in layer_table.rows)
Markdown(
    f"Against the isotropic reference, $w$'s clouds are "
    f"{'far from isotropic' if far > 2 else 'not far from isotropic'} at every layer: their MEV is at least "
    f"**{far:.0f}** times the isotropic one. Against random tokens at the same layer, $w$'s cloud is "
    f"{'more one-directional at every layer' if above_tokens else 'not more one-directional at every layer'}, "
    "as it should be if its occurrences share a token-table row and differ only through position and context. "
    "A mean cosine near zero, by contrast, is necessary for isotropy but not sufficient: vectors can cancel in "
    "the mean while still crowding a few directions, which MEV against the right finite-sample reference would "
    "show."
)

# %% [markdown]
# ## The cloud, drawn
#
# Each panel projects $w$'s test occurrences onto the cloud's own two principal axes (this
# view centres the cloud, unlike MEV). Colour is the exact posterior
# $P(\text{sense b} \mid x)$ from forward–backward: blue for sense a, orange for sense b, pale
# grey for occurrences whose sentence leaves the sense uncertain. The last panel keeps only
# the occurrences at one position.

# %%
show(ch4.plot_principal_axes())

# %% tags=["hide-input"]
axes = ch4.sense_axes()
Markdown(
    f"At layer 0 the occurrences sit on one spot per position, and **{axes[0].positions_with_both_senses}** of the "
    f"**{axes[0].positions}** positions hold occurrences of both senses, so those spots are shared by both: "
    f"position says nothing about the sense, and the correlation between the leading axis and the exact "
    f"posterior is **{axes[0].correlation[0]:.3f}** in absolute value. After one block the leading axis "
    f"({axes[1].explained[0]:.0%} of the centred variance) follows the sense: its correlation with the posterior "
    f"is **{axes[1].correlation[0]:.3f}**, the two senses sit towards its two ends, and the occurrences with an "
    f"uncertain sense (posterior between {ch4.UNCERTAIN_SENSE[0]} and {ch4.UNCERTAIN_SENSE[1]}) "
    f"{'lie between them on average' if axes[1].uncertain_between else 'do not lie between them on average'}. "
    f"After the second block the correlation is **{axes[2].correlation[0]:.3f}**"
    f"{' and the uncertain occurrences still lie between' if axes[2].uncertain_between else ''}. This is the "
    "spread that context adds: whatever the pooled measures do, the contextual vectors now carry the sense, "
    "which a single static vector cannot. Chapter 5 measures how much of it a linear probe can read off."
)

# %% [markdown]
# ## How robust is the layer table?
#
# The layer table describes one trained encoder. To see which of its findings belong to the
# method and which to the training run, the package retrains the encoder with other seeds,
# every other setting unchanged, reads each on the same test split, and recomputes the
# measures of $w$, and does the same for the contrast recipe of the previous section. Each
# cell of the first table holds the values at layers 0 / 1 / 2.

# %%
robust, contrasts = ch4.seed_robustness(), ch4.contrast_robustness()
book = robust.rows[0]


def triple(values):
    return " / ".join(f"{x:.3f}" for x in values)


def name(row):
    recipe = "contrast, " if row.label == "contrast" else ""
    return recipe + ("book's seed" if row.seed == book.seed else f"seed {row.seed}")


encoders = robust.rows + contrasts.rows
names = [name(row) for row in encoders]
table(["encoder", "self-similarity", "MEV", "baseline", "adjusted"],
      [(name, triple(row.self_similarity), triple(row.mev), triple(row.baseline), triple(row.adjusted))
       for name, row in zip(names, encoders)])

# %% [markdown]
# The second table sets the within-position self-similarity at layers 1 and 2 (at layer 0 it
# is one for every encoder) beside the two table norms and the layer-0 self-similarity, as
# measured and as the formula of the previous section predicts from the norms.

# %%
table(["encoder", "within a position", r"$\lVert E[w]\rVert$", r"mean $\lVert P_i\rVert$", "layer 0",
       "layer 0 from norms"],
      [(name, " / ".join(f"{x:.3f}" for x in row.within_position[1:]), row.token_norm, row.position_norm,
        row.self_similarity[0], row.layer0_from_norms) for name, row in zip(names, encoders)],
      formats=[None, None, ".2f", ".2f", ".3f", ".3f"])

# %% tags=["hide-input"]
n = len(robust.rows)
low, high = robust.within_range()
unit = max(abs(row.within_position[0] - 1.0) for row in robust.rows)
layer0_gap = max(abs(row.self_similarity[0] - row.layer0_from_norms) for row in robust.rows)
layer0_values = [row.self_similarity[0] for row in robust.rows]
layer1_values = [row.self_similarity[1] for row in robust.rows]
Markdown(
    f"The {n} encoders differ only in their training seed (the book's is {book.seed}), yet their pooled "
    f"self-similarity at layer 0 ranges from **{min(layer0_values):.3f}** to **{max(layer0_values):.3f}** and at "
    f"layer 1 from **{min(layer1_values):.3f}** to **{max(layer1_values):.3f}**. Layer 0 stays within "
    f"**{layer0_gap:.3f}** of what the two table norms predict, so its value is set by how long training made "
    f"the position rows. Whether layer 1 comes out above or below it is then a matter of the run: "
    + (f"the book's encoder is the only one of the {n} whose pooled self-similarity falls. "
       if book.s509 and robust.count("s509") == 1 else
       f"the pooled self-similarity falls at both later layers for {robust.count('s509')} of the {n}. ")
    + f"Within a position, every encoder "
    f"is one at layer 0 (to within **{unit:.0e}**) and between **{low:.3f}** and **{high:.3f}** at layers 1 and 2."
)

# %% [markdown]
# ## What the chapter shows
#
# The table below collects the statements about the layers that one might read off the
# layer table: whether it holds for the book's encoder, and at how many of the training seeds
# it holds for the book's recipe and for the contrast.

# %%
table(["statement", "book's seed", "book's recipe", "contrast"],
      [(text, "yes" if book_holds else "no", f"{seeds} of {len(robust.rows)}", f"{other} of {len(contrasts.rows)}")
       for (text, book_holds, seeds), (_, _, other) in zip(ch4.robustness_statements(robust),
                                                           ch4.robustness_statements(contrasts))])

# %% tags=["hide-input"]
pooled_drop = max(ss[0] - ss[1], ss[0] - ss[2])
Markdown(
    f"**What the layer table shows.** For the book's encoder, the pooled measures of $w$ "
    f"{'fall slightly' if book.pooled_falls else 'change little'} once "
    f"the blocks mix in the context: self-similarity from {ss[0]:.3f} to {ss[1]:.3f} and {ss[2]:.3f}, MEV from "
    f"{mv[0]:.3f} to {mv[1]:.3f} and {mv[2]:.3f}, the adjusted self-similarity from {adj[0]:.3f} to "
    f"{adj[1]:.3f} and {adj[2]:.3f}, while the baseline of all tokens rises from {base[0]:.3f} to {base[1]:.3f} "
    f"and {base[2]:.3f}. The largest drop in self-similarity is **{pooled_drop:.3f}**.\n\n"
    f"**What holds for every seed.** At a fixed position, the occurrences of $w$ are one vector at layer 0 and "
    f"fan out at layers 1 and 2, to a within-position self-similarity between **{low:.3f}** and "
    f"**{high:.3f}**; in the book's encoder that fan follows the sense (correlation "
    f"**{axes[1].correlation[0]:.3f}** between the leading axis and the exact posterior at layer 1). The baseline "
    f"rises from layer 0 to layer 1 for **{robust.count('baseline_rises')} of {n}** seeds, but stays small "
    f"(at most **{max(max(row.baseline) for row in robust.rows):.3f}**): the vectors drift towards a common "
    f"direction only a little. And layer 0's self-similarity is set by the lengths of the token row and the "
    f"position rows, to within {layer0_gap:.3f}.\n\n"
    f"**What holds only for some.** The pooled orderings, self-similarity and MEV both lower after the blocks "
    f"than at the input, hold for **{robust.count('pooled_falls')} of {n}** seeds, and the adjusted "
    f"self-similarity is lower at "
    f"layer 1 than at layer 0 for **{robust.count('s520')} of {n}**; the contrast recipe reverses the pooled "
    f"ordering (both measures higher after the blocks) at **{sum(direction(r) == 'higher after the blocks than at the input' for r in contrasts.rows)} "
    f"of {len(contrasts.rows)}** of its seeds. On this language the "
    "direction of the pooled comparison says more about the lengths training gave the two tables than about "
    "context. The finding that survives is the within-position one: the encoder's blocks give the occurrences "
    "of $w$ different vectors in different sentences, arranged by sense, which is what a static vector cannot "
    "do."
)

# %% [markdown]
# ## What may not carry over to BERT
#
# The book's encoder is a small BERT in its objective, its corruption channel and its parts
# (multi-head attention, a GELU MLP, LayerNorm, a token table tied to the output), but it
# assembles them differently from BERT in five places
# ([`mlm_book.nn.encoder`](../api/mlm_book.nn.encoder.html)), and each could move the measures
# of this chapter and of [chapter 7](07_filing_encoder.html), whose filing encoder is built the
# same way.
#
# * **Pre-LN blocks.** Each block normalises its input before attention and before the MLP
#   and adds their outputs to a residual stream that is never normalised itself
#   ([Xiong et al. 2020](../references.html#xiong-2020)); the layers measured here are that
#   raw stream. BERT is *post-LN*: it normalises the sum after each sub-layer, so every layer
#   it outputs is a LayerNorm output $\gamma \odot z + \beta$, with $z$ of zero mean and unit
#   variance across coordinates. The offset $\beta$ is shared by every token, and a
#   coordinate with a large gain $\gamma_j$ weighs more in every cosine; the rogue dimensions
#   that dominate BERT's cosines ([Timkey and van Schijndel
#   2021](../references.html#timkey-2021)) live in such outputs. The small baselines of this
#   chapter are measured on a differently normalised stream, so they are no evidence against
#   Ethayarajh's large ones.
# * **No LayerNorm on the embedding sum.** Layer 0 here is exactly $E[x_i] + P_i$, which is why
#   its self-similarity follows from the lengths of the two rows ("Where the spread comes
#   from"). BERT normalises the sum. With unit gain and zero offset that would change little
#   (it rescales each vector and centres its coordinates), but a learned offset adds one
#   component to every input vector and a learned gain reweights the coordinates; either would
#   move the layer-0 self-similarity and baseline away from the formula of that section.
# * **No segment embeddings.** The masked LM of chapters 2 to 7 has no segment table (the pair
#   encoder of [chapter 8](08_sentence_pairs.html) adds one). In BERT every token of a
#   single-sentence input also carries the segment-A row, one more vector added to every input
#   alike. Chapter 7 measures what such a shared offset does to the layer-0 baseline, with the
#   position row that every token read at the centre of its window carries.
# * **No transform before the tied head.** BERT's masked-LM head passes the last layer through
#   a dense layer, a GELU and a LayerNorm before scoring it against the token table; here the
#   head is the final LayerNorm alone, $\operatorname{LN}(x_L) E^\top/\sqrt d + b$. The book's
#   last layer is therefore scored directly against the rows of $E$, while BERT's is one
#   learned map away from them, so the token table may shape the top layer's geometry more
#   here than in BERT. In both, $E$ is trained as an output layer as well as an input one, and
#   [Gao et al. (2019)](../references.html#gao-2019) showed that a table tied to the softmax of
#   a model trained by likelihood tends to degenerate into a narrow cone, the rows of rare words
#   pushed in a common direction. Layer 0, here and in chapter 7, is a row of that table plus
#   a position row.
# * **A $1/\sqrt d$ on the logits.** BERT's head does not divide its logits. Here a token row
#   must be $\sqrt d$ times longer to give the same logit as it would without the division, so
#   the factor is one of the things that set how long training makes the rows of $E$; and the
#   length of $E[w]$ against the position rows is what decided the layer-0 self-similarity
#   above and, in the contrast encoder, the direction of the pooled comparison.
#
# None of the five was varied in the book, so how far each would move the chapter's numbers
# is not measured. What they leave untouched is the logic of the measures: a baseline, a
# size-matched reference for MEV, and comparisons within a position apply to any encoder.

# %% [markdown]
# ## Exercises
#
# **Exercise 1.** Draw 32 vectors of independent standard Gaussians in 32 dimensions. What
# MEV should you expect, and why is it about four times $1/d$ rather than $1/d$?

# %% tags=["hide-input"]
square = geometry.isotropic_mev(32, 32, np.random.default_rng(1), repeats=400)
answer(
    f"`geometry.isotropic_mev(32, 32, rng, repeats={square.repeats})` gives **{square.mean:.4f}** "
    f"(± {square.stderr:.4f}), against $1/d$ = {square.naive:.4f}: **{square.mean / square.naive:.1f}** times "
    f"larger. The largest eigenvalue sits near the upper edge of the Marchenko–Pastur law (Geman's theorem): "
    f"$\\sigma_1^2$ is near $(\\sqrt k + \\sqrt d)^2$, which is $4d$ when "
    f"$k = d$, while the total energy is about $kd = d^2$: MEV is about $4d/d^2 = 4/d$ = {4 / square.d:.3f}. "
    f"The finite-size correction (Johnstone's) lowers it a little: "
    f"`geometry.marchenko_pastur_mev(32, 32)` = {square.asymptotic:.3f}. With as many vectors as dimensions, "
    "the strongest direction of pure noise carries several times an average direction's share."
)

# %% [markdown]
# **Exercise 2.** Let $k$ vectors have mean $m$, spread $s$ (root-mean-square distance to
# $m$) and all the same norm. Show that their self-similarity is
# $(\lVert m\rVert^2 - s^2/(k-1))/(\lVert m\rVert^2 + s^2)$. The vectors of $w$ do not all have
# the same norm: how close does the formula come at each layer, using the shared part and
# spread of the table in "Where the spread comes from"?

# %% tags=["hide-input"]
k = layer_table.n_occurrences
predicted = [(row.mean_norm**2 - row.spread**2 / (k - 1)) / (row.mean_norm**2 + row.spread**2) for row in scales]
answer(
    "With every norm equal to $\\rho$, each cosine is $\\langle h_j, h_l\\rangle/\\rho^2$. The sum over ordered "
    "pairs $j \\ne l$ is $\\lVert \\sum_j h_j\\rVert^2 - \\sum_j \\lVert h_j\\rVert^2 = k^2\\lVert m\\rVert^2 - "
    "k\\rho^2$, and $\\rho^2$, the mean squared norm, is $\\lVert m\\rVert^2 + s^2$. Dividing by $k(k-1)\\rho^2$ "
    "gives the formula; for large $k$ it is $\\lVert m\\rVert^2/(\\lVert m\\rVert^2 + s^2)$.\n\n"
    + "With $k$ = " + f"{k}" + ", the formula gives "
    + ", ".join(f"**{p:.3f}** at layer {layer} (measured {s:.3f})" for layer, (p, s) in enumerate(zip(predicted, ss)))
    + f". It is off by at most {max(abs(p - s) for p, s in zip(predicted, ss)):.3f}: the pooled self-similarity "
    "is, to that accuracy, a function of the ratio of spread to shared part."
)

# %% [markdown]
# **Exercise 3.** Suppose training had ended with position rows twice as long as in the
# book's encoder, with the same directions and the same token row. What would the layer-0
# self-similarity of $w$ be? Compare with the contrast encoder.

# %% tags=["hide-input"]
energy = 1 / book.layer0_from_norms - 1  # mean squared position norm over the squared token norm
doubled = 1 / (1 + 4 * energy)
answer(
    f"The formula $\\lVert E[w]\\rVert^2/(\\lVert E[w]\\rVert^2 + \\lVert P\\rVert^2)$ gives "
    f"{book.layer0_from_norms:.3f} for the book's encoder, so $\\lVert P\\rVert^2/\\lVert E[w]\\rVert^2$ = "
    f"{energy:.3f}. Doubling the position rows multiplies this by four: the layer-0 self-similarity becomes "
    f"$1/(1 + 4 \\times {energy:.3f})$ = **{doubled:.3f}**, "
    f"{'below' if doubled < min(ss[1:]) else 'not below'} the book's layers 1 and 2 ({ss[1]:.3f} and "
    f"{ss[2]:.3f}). The contrast encoder is a case of this kind: its position rows are "
    f"{contrast.position_norm / contrast.token_norm:.2f} times as long as its token row (against "
    f"{inputs.position_norm / inputs.token_norm:.2f} in the book's encoder), its layer-0 self-similarity is "
    f"{contrast.self_similarity[0]:.3f}, and its pooled self-similarity and MEV are {direction(contrast)}. The "
    "objective, the data and the architecture are the same; what changed is how long training made the position "
    "rows relative to the token row."
)

# %% [markdown]
# ## Claims

# %% tags=["hide-input"]
chapter_summary(verify(claims=ch4.CLAIMS))
