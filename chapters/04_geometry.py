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
# layer. The measures are Ethayarajh's (2019); the model is the book's trained HMM encoder,
# so we can also colour every point by the exact posterior of its sense.
#
# The code is in [`mlm_book.geometry`](../../api/mlm_book.geometry/) (measures that apply to any
# cloud of vectors) and [`mlm_book.experiments.ch04_geometry`](../../api/mlm_book.experiments.ch04_geometry/)
# (the HMM encoder's clouds).

# %%
import numpy as np
from IPython.display import Markdown

from mlm_book import geometry
from mlm_book.experiments import ch04_geometry as ch4

ch4.SPLITS

# %% [markdown]
# ## Three measures of a cloud
#
# Fix a layer and collect the vectors $h_1, \dots, h_k \in \mathbb{R}^d$ of the $k$ occurrences
# of a word; stack them as the rows of the **occurrence matrix** $H \in \mathbb{R}^{k \times d}$.
#
# **Definition 3.** *(Self-similarity, anisotropy baseline, maximum explainable variance.)*
#
# * The **self-similarity** of the word is the average cosine between two *different*
#   occurrences,
#   $$\mathrm{SelfSim} = \frac{1}{k(k-1)} \sum_{j \ne l} \cos(h_j, h_l).$$
# * The **anisotropy baseline** of the layer is the same average taken over vectors of tokens
#   drawn uniformly from the corpus, whatever their word, two distinct draws at a time. The
#   **adjusted self-similarity** is $\mathrm{SelfSim}$ minus the baseline.
# * The **maximum explainable variance** is
#   $$\mathrm{MEV} = \frac{\sigma_1^2}{\sum_i \sigma_i^2},$$
#   where $\sigma_1 \ge \sigma_2 \ge \dots$ are the singular values of $H$ itself — not of
#   $H$ with its mean removed.
#
# Why the baseline? Cosines are measured from the origin. If every vector at a layer lives
# in a narrow cone, any two of them have a large cosine, related or not; a high
# self-similarity then says only that the word lives in the cone. Subtracting the mean
# cosine of random pairs asks whether the word's occurrences are closer to *each other* than
# random tokens are. For an isotropic cloud the baseline is zero; near one, every vector
# points the same way.
#
# Two computational remarks. First, the average over all $k(k-1)$ ordered pairs needs no
# pair loop: for unit vectors $u_j = h_j/\lVert h_j\rVert$,
# $\sum_{j\ne l}\langle u_j,u_l\rangle = \lVert\sum_j u_j\rVert^2 - k$, so the exact mean costs
# $O(kd)$. The baseline below is therefore exact over every pair of distinct token positions
# of the test split, not a sample of pairs. Second, an isotropic cloud of finitely many
# points does *not* have MEV $1/d$: its top singular value is inflated by sampling, to about
# $(\sqrt k + \sqrt d)^2$ against a total energy of about $kd$ (the edge of the
# Marchenko–Pastur law). So MEV must be compared with an isotropic cloud *of the same size*:

# %%
rng = np.random.default_rng(0)
for n, d in [(1000, 64), (6000, 32), (200, 32)]:
    ref = geometry.isotropic_mev(n, d, rng, repeats=40)
    print(f"n = {n:5d}, d = {d}:  simulated MEV {ref.mean:.4f} ± {ref.stderr:.4f}   "
          f"Marchenko–Pastur {ref.asymptotic:.4f}   1/d = {ref.naive:.4f}")

# %% [markdown]
# ## What a single direction can carry
#
# MEV has a clean meaning, which is why it is computed on the uncentred matrix.
#
# **Proposition 2.** *(The best static summary.)* Let $H \in \mathbb{R}^{k\times d}$ have rank
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
# By the Eckart–Young theorem the best rank-one approximation of $H$ in Frobenius norm is
# $\sigma_1 u_1 v_1^\top$, which misses $\sum_{i\ge2}\sigma_i^2$ of the energy. So $1-\mathrm{MEV}$
# is exactly the share of the cloud that the best "one direction, one scale per occurrence"
# summary fails to capture, and MEV is an upper bound on how well any single static vector,
# rescaled per occurrence, could stand in for the word's contextual vectors. Statement (1)
# is the centred, zero-dimensional counterpart: the best *constant* stand-in is the mean.
# Principal component analysis proves the centred, many-direction version; (2) is the
# uncentred, one-direction case, through the origin instead of the mean.
#
# The package checks each statement by computing both sides independently (an SVD against
# the symmetric eigensolver, an explicit rank-one residual against $1-\mathrm{MEV}$, the
# gradient at the mean) and returns the gaps. On random matrices of several shapes, and on
# a rank-one matrix:

# %%
def show_checks(checks, names):
    print(f"{'cloud':34s} {'k':>5s} {'d':>3s} {'rank':>4s} {'MEV':>7s} {'(i)':>8s} {'(ii)':>8s} "
          f"{'MEV-1/r':>8s} {'1-MEV':>8s} {'E-Y':>8s}")
    for name, c in zip(names, checks):
        print(f"{name:34s} {c.k:5d} {c.d:3d} {c.rank:4d} {c.mev:7.4f} {c.mean_gradient:8.1e} "
              f"{c.variational:8.1e} {c.lower_slack:8.1e} {c.upper_slack:8.1e} {c.eckart_young:8.1e}")


show_checks(ch4.random_proposition2(), ["Gaussian + offset", "Gaussian + offset", "Gaussian + offset",
                                        "Gaussian + offset", "rank one"])

# %% [markdown]
# ## The HMM encoder's clouds of $w$
#
# We read the trained HMM encoder on the clean test split (the same sequences chapter 1 used
# for the Bayes accuracy and chapter 5 uses for the probes). **Layer 0** is the encoder's input
# $E[x_i] + P_i$, the token-table row plus the position-table row of the occurrence's own
# position; **layer 1** and **layer 2** are the residual stream after the first and second
# block (layer 2 before the final LayerNorm). The same checks on $w$'s three clouds:

# %%
table = ch4.geometry_table()
show_checks(ch4.encoder_proposition2(), [f"w, {name.split(':')[0]}" for name in ch4.LAYER_NAMES])

# %% [markdown]
# Now Definition 3 at each layer. "Token MEV" is the MEV of as many uniformly drawn token
# vectors (any word) as $w$ has occurrences, at the same layer; "isotropic MEV" is the
# expected MEV of an isotropic Gaussian cloud of that size and dimension.

# %%
Markdown(ch4.geometry_markdown(table))

# %%
col = table.column
ss, mv, base, adj = col("self_similarity"), col("mev"), col("baseline"), col("adjusted")


def moves(values, a, b):
    return "falls" if values[b] < values[a] else "rises"


Markdown(
    f"The table uses **{table.n_occurrences}** occurrences of $w$ among **{table.n_tokens}** test tokens. "
    f"Layer 0 is not a single point: positions vary across occurrences, and its "
    f"**{table.rows[0].distinct_vectors}** distinct vectors are one per position. It is static "
    f"*given the position*, and in a stationary language the position says nothing about the sense. "
    f"From layer 0 to layer 1, where attention first mixes in the context, self-similarity "
    f"{moves(ss, 0, 1)} from **{ss[0]:.3f}** to **{ss[1]:.3f}** (**{ss[2]:.3f}** at layer 2) and MEV "
    f"{moves(mv, 0, 1)} from **{mv[0]:.3f}** to **{mv[1]:.3f}** (**{mv[2]:.3f}**). The baseline "
    f"{moves(base, 0, 1)} from **{base[0]:.3f}** to **{base[1]:.3f}** (**{base[2]:.3f}** at layer 2): "
    f"token vectors of every word drift towards a common cone, as Ethayarajh found in BERT, ELMo and "
    f"GPT-2, so part of any raw self-similarity is that cone. Net of it, the adjusted self-similarity "
    f"{moves(adj, 0, 1)} from **{adj[0]:.3f}** to **{adj[1]:.3f}** at layer 1 and is **{adj[2]:.3f}** "
    f"at layer 2."
)

# %% [markdown]
# ### Where the spread comes from
#
# The pooled comparison mixes what context does with two sizes that have nothing to do with
# context. At layer 0, occurrence $j$ at position $i_j$ is $E[w] + P_{i_j}$. If the position
# rows are nearly orthogonal to each other and to $E[w]$, then
# $\cos(E[w]+P_i, E[w]+P_{i'}) \approx \lVert E[w]\rVert^2 / (\lVert E[w]\rVert^2 + \lVert P\rVert^2)$ for
# $i \ne i'$: the larger the position table relative to the token table, the lower the
# layer-0 self-similarity, with no context involved at all. After a block, the cloud is
# a large shared component (what the blocks write for "$w$") plus a context-dependent
# spread. So we measure both, and also the self-similarity among occurrences *at one
# position*, which removes the position table from the comparison (at layer 0 it is one).

# %%
inputs, scales = ch4.scale_diagnostics()
Markdown(
    f"In the book's encoder $\\lVert E[w]\\rVert$ = **{inputs.token_norm:.2f}** while the position rows "
    f"have mean norm **{inputs.position_norm:.2f}**; the position rows are nearly orthogonal to each "
    f"other (self-similarity **{inputs.position_similarity:.3f}**) and to $E[w]$ (mean cosine "
    f"**{inputs.token_position_cosine:.3f}**). So layer 0 is already a cloud, spread by position "
    f"alone, by an amount the ratio of the two norms sets.\n\n"
    + "\n".join(
        f"* layer {r.layer}: norm of the mean vector **{r.mean_norm:.2f}**, root-mean-square spread "
        f"around it **{r.spread:.2f}**, self-similarity within a position **{r.within_position:.3f}**."
        for r in scales)
)

# %%
pooled_up = ss[1] > ss[0] and mv[1] > mv[0]
Markdown(
    f"Read at a fixed position, context plainly spreads the cloud: occurrences that are one point "
    f"at layer 0 fan out, to a within-position self-similarity of **{scales[1].within_position:.3f}** at "
    f"layer 1 and **{scales[2].within_position:.3f}** at layer 2, and the fan is the sense split of the "
    f"figure below. Pooled over positions, the comparison also weighs that fan against the position "
    f"spread at layer 0 and against the size of the shared component the blocks write. In this encoder "
    f"the position rows are {'larger' if inputs.position_norm > inputs.token_norm else 'smaller'} than "
    f"the token row, and after block 1 the shared component is "
    f"{'larger' if scales[1].mean_norm > scales[1].spread else 'smaller'} than the spread around it, so "
    f"the pooled self-similarity and MEV come out "
    f"{'higher after the blocks than at the input' if pooled_up else 'lower after the blocks than at the input'}"
    f", by a margin of **{abs(ss[0] - max(ss[1], ss[2])):.3f}** in self-similarity.\n\n"
    f"That margin is a fact about a training run, not about what context does. Nothing in the "
    f"masked-LM objective fixes how large the position table grows relative to the token table. "
    f"With the token table initialised at BERT's scale (standard deviation 0.02, fifty times smaller "
    f"than the normalised stream the tied head compares it with) and plain Adam, the same architecture "
    f"ends with position rows larger than the token row, and its pooled self-similarity and MEV are then "
    f"*higher* after the blocks than at the input. The book's encoder starts its token table at unit "
    f"scale and trains with BERT's decoupled weight decay (the settings are in "
    f"[`HMMEncoderSetup`](../../api/mlm_book.experiments.hmm_encoder/)); even so, other training seeds "
    f"with the same settings do not all reproduce the ordering. The within-position fan and the "
    f"anisotropy baseline's rise with depth do not depend on these sizes."
)

# %% [markdown]
# Two readings of MEV are worth separating. Against the isotropic reference the clouds are
# far from isotropic at every layer — no cloud of learned vectors is. Against random tokens
# at the same layer, $w$'s cloud is still more one-directional than a cloud of arbitrary
# tokens of the same size, because its occurrences share a token-table row and differ only
# through position and context:

# %%
Markdown("\n".join(
    f"* layer {row.layer}: MEV of $w$ **{row.geometry.mev:.3f}**, of random tokens "
    f"**{row.geometry.token_mev:.3f}**, of an isotropic cloud **{row.geometry.isotropic_mev:.3f}**."
    for row in table.rows))

# %% [markdown]
# A mean cosine near zero is necessary for isotropy but not sufficient: vectors can cancel in
# the mean while still crowding a few directions, which MEV (against the right finite-sample
# reference) would show.
#
# ## The cloud, drawn
#
# Each panel projects $w$'s test occurrences onto their own two principal axes (this view
# centres the cloud, unlike MEV). Colour is the exact posterior $P(\text{sense } b \mid x)$ from
# forward–backward: blue for sense $a$, red for sense $b$, pale for occurrences whose
# sentence leaves the sense uncertain.

# %%
fig = ch4.plot_principal_axes()

# %% [markdown]
# At layer 0 the occurrences sit on one spot per position, each spot shared by occurrences
# of both senses (only the last one drawn is visible): position says nothing about the sense.
# After one block the two senses separate along the leading axis, with the pale, uncertain
# occurrences in between; the second block keeps that split. This is the spread that context
# adds: whatever the pooled measures do, the contextual vectors now carry the sense that a
# single static vector cannot. Chapter 5 measures how much of it a linear probe can read off.
