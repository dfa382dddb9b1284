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
# # Chapter 7 — A contextual encoder on the filings
#
# [Chapter 6](06_finance.html) asked three questions of the filings and measured what a
# reader with one vector per word can answer: is *kestrel* the company or its product, is
# *rose* good news or bad, and is *strong* a positive word? The first two are written in
# the sentence, a few tokens from the word, and no static vector reaches them; the third is
# not written in any one sentence, and only pooling co-occurrences over all filings
# recovers it.
#
# This chapter trains the book's BERT on the same filings: the encoder of the [objective
# chapter](02_objective.html), built in [`mlm_book.nn`](../api/mlm_book.nn.html), at the
# reference size for this case study (width 64, 4 heads, 2 pre-LN blocks, windows of 32
# tokens), trained with the masked-LM objective on the filings alone, five times from five
# seeds. It has BERT's objective and channel; its architecture differs from BERT's in the
# five places that [chapter 4](04_geometry.html#what-may-not-carry-over-to-bert) lists, which
# bear most on the geometry at the end of this chapter. It is then probed exactly as
# chapter 6 probed the static vectors, layer by layer,
# against chapter 6's caps. At the end it meets Theorem 2 again, at the words the encoder
# can see, and falls short of it.

# %%
import numpy as np

from mlm_book import geometry
from mlm_book.artefacts import filing_encoder, prompting
from mlm_book.artefacts import filings as filings_artefact
from mlm_book.experiments import ch06_finance, ch07_encoder, ch07_prompting
from mlm_book.figures import show
from mlm_book.finance.world import DIRECTION_WORDS, LEXICON
from mlm_book.ledger import chapter_summary, verify
from mlm_book.readings import hmm_encoder
from mlm_book.report import Markdown, answer, seed_band

r = ch06_finance.results()  # chapter 6's filings, readings and static caps
c = r.counts
d_min, _, v_min, v_max = ch06_finance.news_distances(r)
se = np.sqrt(0.25 / len(LEXICON))  # standard error of chance on the lexicon words

# %% [markdown]
# ## Training the encoder

# %% tags=["hide-input"]
m = ch07_encoder.book()
runs = ch07_encoder.seeds()
setup, cfg = filing_encoder.SETUP, filing_encoder.training_config()
held = filing_encoder.split()
bert40 = filing_encoder.training_config(filing_encoder.BERT_PASSES)
Markdown(
    f"**Data.** The vocabulary is chapter 6's ({c.vocabulary_size} output classes, `[UNK]` and `[SEP]` "
    f"included) plus two input-only ids: `[MASK]`, and `[PAD]` for the slots of a window beyond its filing's "
    f"edge, which every attention layer masks as keys, so that a window reads only its own filing. "
    f"**{len(held.test_documents)}** of the {c.n_documents} filings, drawn once by document, are held out "
    f"({held.test_tokens.size:,} tokens); the encoder trains on the other {held.train_tokens.size:,}. A training "
    f"window is the centred window of a token drawn uniformly from the training filings: the same shape in which "
    f"every token is read afterwards. Each batch is corrupted afresh by BERT's channel (selection rate "
    f"{setup.rho}, then `[MASK]` / random token / kept = {setup.mask} / {setup.random} / {setup.kept:.1f}).\n\n"
    f"**How long.** Every setting was fixed before any measurement was looked at, by one of two rules. The first "
    f"was BERT's own length, about 40 passes over the training text: here {bert40.steps} steps. That encoder "
    f"was still learning steeply when its schedule ended (the red curve below), because 40 passes over a corpus "
    f"this small are few updates. The book's encoder takes the second rule, the HMM encoder's recipe: "
    f"**{cfg.steps} steps** of {cfg.batch_size} windows ({cfg.batch_size * setup.length:,} token slots, as many as "
    f"the HMM encoder's batches), AdamW at peak rate {cfg.lr:g} with {cfg.warmup} warm-up steps and a cosine to "
    f"{cfg.final_lr_fraction:.0%}, and weight decay $\\lambda =$ {cfg.weight_decay:.4f}, which gives BERT's "
    f"total decay $\\lambda \\sum_t \\eta_t = 0.5$. No claim's value chose between the two; the 40-pass encoder "
    f"stays in the book as a contrast.\n\n"
    f"**Seeds.** Five seeds (initialisation and batch order; the split and every evaluation draw fixed) were "
    f"trained. Every learned number below is the book's seed's; the tables give the mean and standard deviation "
    f"over the five, and the text says where the seeds disagree."
)

# %%
ch07_encoder.training_table()

# %% tags=["hide-input"]
sizes = ch07_encoder.encoder_sizes()
Markdown(
    f"**Size.** The encoder has **{sizes[1][2]:,}** parameters, counted from its trained arrays (the HMM encoder "
    f"of chapter 2 has {sizes[0][2]:,}). Published models are larger by orders of magnitude, encoders and causal "
    "language models alike, each size as its paper states it:"
)

# %%
ch07_encoder.size_table()

# %% tags=["hide-input"]
published = {name: count for name, _, count, _ in sizes}
Markdown(
    f"BERT-base is about {published['BERT-base'] / sizes[1][2]:,.0f} times the book's encoder, and the largest "
    f"causal models are about {published['Llama 2 (largest)'] / published['RoBERTa-large']:,.0f} "
    f"(Llama 2) and {published['GPT-3'] / published['RoBERTa-large']:,.0f} (GPT-3) times RoBERTa-large. "
    "The book's worlds are small enough that an encoder of this size can be measured against the exact answer; "
    "what it shows is what the objective asks for, not what scale adds."
)

# %%
show(ch07_encoder.figure_loss())

# %% tags=["hide-input"]
gain_train = m.ce["train"]["unigram"] - m.ce["train"]["all"]
gain_test = m.ce["test"]["unigram"] - m.ce["test"]["all"]
Markdown(
    f"**Fit and held-out.** On {m.ce['train']['positions']:,} selected positions of fresh corruptions of "
    f"{filing_encoder.EVAL_WINDOWS:,} training windows the encoder's cross-entropy is **{m.ce['train']['all']:.3f}** nats "
    f"({m.ce['train']['mask']:.3f} at the `[MASK]` positions alone), against **{m.ce['train']['unigram']:.3f}** "
    f"for the corpus unigram at the same positions: a gain of {gain_train:.2f} nats. That is a fit. On windows "
    f"of the held-out filings the cross-entropy is **{m.ce['test']['all']:.3f}** ({m.ce['test']['mask']:.3f} at "
    f"masks), a gain of {gain_test:.2f} nats over a unigram that has even seen those filings' counts: the "
    f"templates generalise, and the {m.ce['test']['all'] - m.ce['train']['all']:.2f}-nat gap is what the "
    f"encoder memorised of the training filings' particular names and numbers."
)

# %%
ch07_encoder.ce_table()

# %% [markdown]
# ## Layer 0 is static
#
# Every token is read at the centre of its own window, so its layer-0 vector is
# $E[x] + P_{16}$: one point per word, whatever the context. This is checked, not assumed:
# the largest distance between two of *kestrel*'s layer-0 vectors is exactly 0 at every seed
# (the claims below). Layer 0 is therefore a static embedding, learned by the masked-LM
# objective, and everything Corollary 1 says about static vectors applies to it. Here is
# the check on the book's seed, with every occurrence of *kestrel* read by the trained
# encoder: the largest distance from the first occurrence's vector, at each layer.

# %%
encoder = filing_encoder.trained_encoder()  # the book's seed, read from the store
kestrel = np.flatnonzero((r.corpus.tokens == "kestrel") & (r.corpus.entity > 0))  # its typed mentions
states = filing_encoder.centre_states(encoder, kestrel)  # shape (occurrences, layer 0 to 2, 64)
[float(np.abs(states[:, layer] - states[0, layer]).max()) for layer in range(3)]

# %% [markdown]
# A probe of a static vector can only learn an intercept, and two things follow from it
# for a score measured by cross-validation: it can fall *below* the majority, and it can
# rise far *above* it when the reading leaks where the word sits.

# %% [markdown]
# ## A company or its product, in context

# %%
ch07_encoder.typing_table()

# %%
show(ch07_encoder.figure_typing())

# %% tags=["hide-input"]
def over_the_seeds(getter) -> str:
    """How one number varies over the five training seeds, in words (the tables give the bands)."""
    _, mean, sd = ch07_encoder.band(getter)
    return "the same at every training seed" if sd < 5e-4 else f"mean {mean:.3f} over the five training seeds"


Markdown(
    f"Across aliases, layer 0 scores **{m.typing['0']:.3f}**, which is what answering ORG for every held-out "
    f"alias scores, like skip-gram: a static vector, however it was trained, cannot type a held-out alias. One "
    f"attention block lifts it to **{m.typing['1']:.3f}** ({over_the_seeds(lambda x: x.typing['1'])}), "
    f"{m.typing['1'] - r.alias_cap.accuracy:+.3f} over the per-alias cap, and the second block keeps it at "
    f"{m.typing['2']:.3f} (within 0.02 of layer 1 at "
    f"{sum(x.typing['2'] >= x.typing['1'] - 0.02 for x in runs)} of {len(runs)} seeds: the second block sometimes "
    f"loses a little of what the first found). On *kestrel* alone the five-fold probe is right **{m.kestrel['1']:.3f}** and "
    f"**{m.kestrel['2']:.3f}** of the time at layers 1 and 2, against the majority's "
    f"{r.kestrel_cap.accuracy:.3f}.\n\n"
    f"A score of 1.000 does not mean the encoder is an entity tagger. The filings are written from templates, "
    f"and a company mention and a product mention sit in different templates, so a cue that tells them apart "
    f"is somewhere in the window. Which tokens does the probe rely on? Below, the layer-2 probe (trained on clean windows, five "
    f"folds) is scored with one window position at a time replaced by `[MASK]`."
)

# %%
show(ch07_encoder.figure_cue())

# %% [markdown]
# The figure scores a probe trained on clean windows. A probe can also be trained *and*
# scored with a neighbour hidden: here the token just before *kestrel* (position 15, the
# centre being 16) is `[MASK]` in every window the probe sees. Change `mask_at` to hide
# another position, or `layer` to read another layer:

# %%
ch07_encoder.probe_kestrel(layer=2, mask_at=r.centre - 1)

# %% tags=["hide-input"]
cue_all = np.array([[np.nan if v is None else v for v in x.cue] for x in runs])
near = [r.centre - 1, r.centre + 1]
far = [i for i in range(cue_all.shape[1]) if i not in near and i != r.centre]
drop_near = np.array([x.kestrel["2"] for x in runs])[:, None] - cue_all[:, near]
drop_far = np.array([x.kestrel["2"] for x in runs])[:, None] - cue_all[:, far]
Markdown(
    f"Masking a token two or more positions away from *kestrel* costs at most **{drop_far.max():.3f}** of "
    f"accuracy at any seed: no distant token is needed. The two neighbours are another matter. Masking the token "
    f"just before *kestrel* costs up to **{drop_near[:, 0].max():.3f}**, and the token just after up to "
    f"**{drop_near[:, 1].max():.3f}**, depending on the seed (the book's seed: {drop_near[0, 0]:.3f} and "
    f"{drop_near[0, 1]:.3f}). In these filings the token before a product mention is always *the* (\"the Kestrel "
    f"turbine\"), and the token after *kestrel* is *turbine* in both types (\"Kestrel Turbine Services\"), so the "
    f"second drop is not a missing cue: a window with `[MASK]` next to the word is unlike any window the probe was "
    f"trained on, and its layer-2 vector moves off the probe's training cloud. What the figure does show is that "
    f"the encoder's type signal is built from the immediate neighbours, which is what the templates make "
    f"sufficient, and a reason not to read these scores as what a real encoder does with real reports."
)

# %% [markdown]
# ### The static fold: scoring below the majority
#
# At layer 0 *kestrel* has one vector, so the probe can only learn an intercept: it predicts
# its training fold's majority. With the stratified folds used here, every training fold has
# the global majority, and the score is the majority share. The case study reports a
# layer-0 score far *below* the majority. Fold by fold:

# %%
ch07_encoder.kestrel_folds_table()

# %% [markdown]
# The probe at any layer and with either kind of fold is one call (`folds="contiguous"`
# cuts the mentions into five folds in corpus order):

# %%
ch07_encoder.probe_kestrel(layer=0, folds="contiguous"), ch07_encoder.probe_kestrel(layer=0)

# %% tags=["hide-input"]
Markdown(
    f"Each stratified fold predicts PRODUCT, the majority, and scores its own share of products: pooled "
    f"**{m.kestrel['0']:.3f}**, the majority share. With five *contiguous* folds in corpus order instead, a "
    f"fold's training majority can be its test fold's minority, and the same intercept-only probe scores "
    f"**{m.kestrel['contiguous0']:.3f}**, below the majority. A static vector cannot beat the majority; how far "
    f"below it a cross-validated score falls is a property of the fold assignment, not of the vector."
)

# %% [markdown]
# ### The position leak, with the encoder's own layer 0

# %% tags=["hide-input"]
products = r.nearest_positions[(r.corpus.tokens == "kestrel") & (r.corpus.entity == 2)]
Markdown(
    f"Read at the nearest-centre position instead, *kestrel*'s layer-0 vector is $E[x] + P_i$ with $i$ its slot, "
    f"and its product mentions all sit at slots {products.min()}–{products.max()}: they close their filings, and "
    f"where a filing's last token lands in its last window is fixed by the filing lengths and the window stride, so "
    f"another corpus puts the same leak at other slots. A "
    f"five-fold probe on these layer-0 vectors types *kestrel* with accuracy **{m.leak['nearest']:.3f}** "
    f"({over_the_seeds(lambda x: x.leak['nearest'])}) without reading any context, against "
    f"**{m.leak['centred']:.3f}** at the centred reading. The position table is the whole cue. Centring removes it "
    f"because every token then has the same position row: $P_{{16}}$ adds the same vector to every word and "
    f"carries no information about where in the filing the word was."
)

# %%
ch07_encoder.kestrel_table()

# %% [markdown]
# ## The news a word reports, in context

# %%
ch07_encoder.polarity_table()

# %% [markdown]
# One word's probe at one layer; put in an evaluative verb (*surpassed*, *missed*, ...) to
# see the verbs' failure word by word:

# %%
ch07_encoder.probe_news("rose", layer=1), ch07_encoder.probe_news("rose", layer=0)

# %%
show(ch07_encoder.figure_polarity_words())

# %% tags=["hide-input"]
direction = ch07_encoder._group(m, DIRECTION_WORDS)
sizes = list(m.polarity["subsampled"])
subsampled = ", ".join(f"{m.polarity['subsampled'][size]:.3f}" for size in sizes)
Markdown(
    f"Pooled over the {m.polarity['n']} labelled occurrences, layer 0 scores **{m.polarity['pooled']['0']:.3f}**, "
    f"below the per-word cap of {r.polarity_cap.accuracy:.3f} (a static vector under cross-validation, as for "
    f"*kestrel*). Layer 1 reads the news: **{m.polarity['pooled']['1']:.3f}** "
    f"({over_the_seeds(lambda x: x.polarity['pooled']['1'])}), and layer 2 "
    f"{m.polarity['pooled']['2']:.3f}. The same probe trained and scored on shuffled labels scores "
    f"{m.polarity['control1']:.3f}: the evaluation leaks no labels (a leak check, as in "
    f"[chapter 5](05_probing.html), not a control task).\n\n"
    f"The pooled number hides two populations. The direction words, whose aspect is the token right before them, "
    f"score **{direction:.3f}** together; the evaluative verbs, whose aspect sits {v_min} to {v_max} tokens back, "
    f"score **{m.polarity['verbs_pooled']:.3f}**, near chance. The verbs also have fewer occurrences, so the "
    f"direction words were subsampled to the verbs' smallest, median and largest counts ({', '.join(sizes)}; "
    f"{filing_encoder.SUBSAMPLE_REPEATS} draws each): they still score "
    f"{subsampled}. Sample size alone does not explain the "
    f"verbs' failure. Distance is the likelier cause, but this experiment does not isolate it: the verbs also "
    f"differ from the direction words in their templates. [Chapter 11](11_caveats.html#is-distance-why-the-verbs-fail) "
    f"isolates it, moving every verb next to its aspect and training the encoder again.\n\n"
    f"How robust is this across seeds? In the case study the direction words each reach 0.945 to 0.991; here the "
    f"weakest of the six is {ch07_encoder.in_words(lambda x: min(v['accuracy'] for w, v in x.polarity['words'].items() if w in DIRECTION_WORDS))}, "
    f"and at {sum(min(v['accuracy'] for w, v in x.polarity['words'].items() if w in DIRECTION_WORDS) >= 0.9 for x in runs)} "
    f"of {len(runs)} seeds do all six reach 0.90. The verbs' gap to the subsampled direction words exceeds 0.2 at "
    f"{sum(min(x.polarity['subsampled'].values()) >= x.polarity['verbs_pooled'] + 0.2 for x in runs)} of "
    f"{len(runs)} seeds: the direction of the finding holds at every seed, its size does not."
)

# %%
ch07_encoder.polarity_words_table()

# %% [markdown]
# ## Is *strong* a positive word, in context?
#
# The lexicon probe of the static half, on each lexicon word's **mean** contextual vector
# (its occurrences read at their centres, averaged), layer by layer:

# %%
ch07_encoder.lexicon_table()

# %% [markdown]
# Why averaging cannot help is visible in two mean vectors. The cosine between the mean
# vectors of *strong* and *weak*, layer by layer:

# %%
strong, weak = (filing_encoder.centre_states(encoder, np.flatnonzero(r.corpus.tokens == word)).mean(axis=0)
                for word in ("strong", "weak"))
[round(float(geometry.cosine_matrix(np.stack([strong[layer], weak[layer]]))[0, 1]), 3) for layer in range(3)]

# %% tags=["hide-input"]
best = max(m.lexicon.values())
best_any = max(max(x.lexicon.values()) for x in runs)
Markdown(
    f"No layer comes within reach: the best is {best:.3f} on the book's seed and {best_any:.3f} over all "
    f"{len(runs)} seeds and layers, against a two-standard-error bar of {0.5 + 2 * se:.3f} (skip-gram's {ch06_finance.SKIPGRAM_SEED_COUNT} seeds "
    f"stay below it too). The encoder reads what an occurrence reports (the news, the type of a name) because the "
    f"sentence writes it; whether *strong* is a positive word the sentence does not write, and averaging "
    f"occurrences cannot find what no occurrence holds. Only pooling co-occurrences across filings, as semantic "
    f"orientation does ({r.orientation.accuracy:.3f}), recovers it."
)

# %% [markdown]
# ## What the encoder keeps of a visible word
#
# Theorem 2 says what the optimal predictor does at a selected position that shows its own
# token $v$: it reweights the context's prediction $p$ by the channel's likelihood of
# showing $v$, which gives
# $q(v) = (\kappa + r/V)\, p(v) / (\kappa\, p(v) + r/V)$. With the encoder's own `[MASK]`
# guess as $p$, this plug-in is what the encoder *should* keep on the word when the word is
# visible, if its two answers came from one optimal predictor. The check: 512 words of the held-out filings,
# each read in its clean centred window, once with the word masked and once visible.

# %%
ch07_encoder.visible_table()

# %%
show(ch07_encoder.figure_visible())

# %% [markdown]
# The same check at a single occurrence: the book's encoder reads the occurrence's window with
# the word masked, then with the word shown. Any word of the vocabulary and any of its
# occurrences can be read this way:

# %%
ch07_encoder.read_word("rose", occurrence=0, k=5)

# %% tags=["hide-input"]
hmm_eval = hmm_encoder.evaluation()
freq = ch07_encoder.visible_by_frequency()
longer, kept2 = filing_encoder.seed_results(filing_encoder.LONGER).visible, filing_encoder.seed_results(filing_encoder.MORE_KEPT).visible
short = m.visible["plugin"] - m.visible["visible"]
Markdown(
    f"The encoder's masked guess puts **{m.visible['guess']:.3f}** on the word, on average; the plug-in from that "
    f"guess is **{m.visible['plugin']:.3f}**, and the encoder keeps **{m.visible['visible']:.3f}** on the word when "
    f"it is visible: a shortfall of {short:.3f} "
    f"({over_the_seeds(lambda x: x.visible['plugin'] - x.visible['visible'])}). On the HMM the same check came "
    f"within {abs(hmm_eval.kept_plugin - hmm_eval.kept_encoder):.3f} "
    f"({hmm_eval.kept_encoder:.3f} against {hmm_eval.kept_plugin:.3f}, [chapter 2](02_objective.html)). What "
    f"explains it here?\n\n"
    f"* **Frequency.** By corpus-frequency thirds of the 512 words, the shortfall is "
    + ", ".join(f"{f[3] - f[4]:.3f} ({f[0]})" for f in freq)
    + ". "
    + ("It is largest for the rarest words. " if freq[0][3] - freq[0][4] > freq[2][3] - freq[2][4] else
       "It is not largest for the rarest words. ")
    + f"\n* **Training length.** Twice as many steps on the book's seed: shortfall "
    f"**{longer['plugin'] - longer['visible']:.3f}** (from {short:.3f}).\n"
    f"* **The kept share.** With $\\kappa$ = 0.2 (mask 0.7), the channel's evidence factor doubles and so does the "
    f"kept-token signal: the plug-in becomes {kept2['plugin']:.3f} and the encoder keeps {kept2['visible']:.3f}, a "
    f"shortfall of **{kept2['plugin'] - kept2['visible']:.3f}**.\n"
    f"* **The kept signal is rare.** Kept tokens are {setup.rho * setup.kept:.1%} of the positions the encoder "
    f"sees; over the run that is about {cfg.steps * cfg.batch_size * setup.length * setup.rho * setup.kept / c.vocabulary_size:,.0f} "
    f"kept examples per vocabulary word on average, far fewer for a rare word. The two diagnostic runs double "
    f"that count in two different ways.\n\n"
    f"Together: the shortfall is a rare-word effect ({freq[0][3] - freq[0][4]:.3f} on the rarest third against "
    f"{freq[2][3] - freq[2][4]:.3f} on the commonest), and both ways of giving the encoder more kept examples "
    f"shrink it ({short:.3f} to {longer['plugin'] - longer['visible']:.3f} and {kept2['plugin'] - kept2['visible']:.3f}). "
    f"That is what one expects if the encoder has not yet seen enough kept occurrences of a rare word to learn that "
    f"the word itself, shown, is strong evidence, while its `[MASK]` guess, which every occurrence of the word "
    f"trains, is already good. Neither run removes the shortfall, so this account is supported, not proven: the "
    f"optimum of Theorem 2 is a population statement, and on these filings the rare words are where the sample "
    f"is thin."
)

# %% [markdown]
# ## The geometry of *kestrel*

# %%
ch07_encoder.geometry_table()

# %% [markdown]
# Definition 3's measures are functions of a cloud of vectors. The *kestrel* cloud read
# above, at each layer: self-similarity, then MEV.

# %%
[(round(geometry.self_similarity(states[:, layer]), 3), round(geometry.mev(states[:, layer]), 3)) for layer in range(3)]

# %% tags=["hide-input"]
g = m.geometry
parts = ch07_encoder.layer0_baseline_parts()
Markdown(
    f"At layer 0 *kestrel*'s {g['kestrel']['0']['n_occurrences']} vectors are one point: self-similarity and MEV "
    f"are exactly 1. Context spreads them: self-similarity falls to "
    f"{g['kestrel']['1']['self_similarity']:.3f} and {g['kestrel']['2']['self_similarity']:.3f} at layers 1 and "
    f"2. The anisotropy baseline, the mean cosine between {filing_encoder.POOL_TOKENS} uniformly drawn tokens, is "
    f"{g['kestrel']['0']['baseline']:.3f} at layer 0, {g['kestrel']['1']['baseline']:.3f} at layer 1 and "
    f"{g['kestrel']['2']['baseline']:.3f} at layer 2"
    + (f": it falls from layer 0 to layer 1, at {sum(x.geometry['kestrel']['1']['baseline'] < x.geometry['kestrel']['0']['baseline'] for x in runs)} "
       f"of {len(runs)} seeds, where Ethayarajh found BERT's baseline rising. The reason is the centred reading "
       f"itself: every token at layer 0 carries the same position row $P_{{16}}$ (norm {parts['norm P16']:.2f}, "
       f"against {parts['mean norm E']:.2f} for a token row on average), a shared offset that pulls all layer-0 "
       f"vectors one way. The token rows alone have a mean cosine of {parts['tokens only']:.3f}; with $P_{{16}}$ "
       f"added, {parts['with P16']:.3f}. The HMM encoder's layer 0 mixes positions, so its offsets do not all point "
       f"the same way" if g['kestrel']['1']['baseline'] <= g['kestrel']['0']['baseline']
       else ": it rises from layer 0 to layer 1") + ". "
    f"At the top layer the mean cosine is {g['pool_mean_cosine']:.3f}, yet the same 1000 vectors have MEV "
    f"**{g['pool_mev']:.3f}**, against **{g['isotropic_mev']:.4f}** for 1000 isotropic Gaussian vectors in 64 "
    f"dimensions (not $1/64 = 0.0156$: a finite sample has a top direction by chance). A mean cosine near zero is "
    f"necessary for isotropy but not sufficient: vectors can cancel on average and still crowd along a few "
    f"directions, and MEV sees that where the mean cosine cannot."
)

# %% [markdown]
# These baselines are cosines on the residual stream of a pre-LN encoder whose input has no
# segment row and no LayerNorm. BERT's layers are LayerNorm outputs, in which a few rogue
# dimensions dominate every cosine ([Timkey and van Schijndel
# 2021](../references.html#timkey-2021)), and BERT's input adds the segment-A row to every
# token of a sentence: one more offset shared by every token, like $P_{16}$ here. A comparison
# with Ethayarajh's baselines is therefore a comparison across architectures as well as
# corpora ([chapter 4](04_geometry.html#what-may-not-carry-over-to-bert)).

# %% [markdown]
# ## Prompting against fine-tuning

# %% tags=["hide-input"]
study = ch07_prompting.results()
setting = prompting.book_setups()[0]
corpus_config = filings_artefact.FilingsSetup().corpus
positive_share = float(study.labels.mean())
Markdown(
    f"A masked-LM head can answer a question with no labelled example if the question is written as a cloze "
    f"([Schick and Schütze 2021](../references.html#schick-2021)): the input, then a template holding a `[MASK]`, "
    f"and a *verbaliser* that maps each class to words the head may put there. The question here is whether a "
    f"sentence's evaluation is positive or negative. The sentences are the filings' lexicon sentences whose lexicon "
    f"words share one polarity (\"demand in rail remained strong\"): **{study.n_train}** in the training filings "
    f"and **{study.n_test}** in the held-out ones ({positive_share:.0%} positive), the gold being the words' "
    f"dictionary polarity. The template is one of the filings' own tone sentences, \"*sentence* `[SEP]` "
    f"{' '.join(w if w != '[MASK]' else '`[MASK]`' for w in prompting.TEMPLATE)}\", read at the "
    f"centre of the `[MASK]`'s own window, and the verbaliser the filings' tone words: "
    f"*{', '.join(prompting.VERBALISER[1])}* for positive, "
    f"*{', '.join(prompting.VERBALISER[0])}* for negative, a class scored by its words' summed "
    f"probability. Template and verbaliser were fixed in code before any prompt was read.\n\n"
    f"Against the prompt, the same encoder is fine-tuned on $k$ labelled training sentences, $k/2$ of each class, "
    f"for $k$ = {', '.join(str(k) for k in study.ks)}; the last is the whole balanced pool, since the training "
    f"filings hold fewer than 1024 task sentences. A softmax head reads the mean of the sentence's last-layer "
    f"vectors and every weight trains: {setting.epochs:g} passes over the $k$ sentences, at least "
    f"{setting.min_steps} steps, AdamW at peak rate {setting.lr:g}. That recipe came from one pilot run's training "
    f"loss, which had levelled off after ten passes; no test accuracy was looked at. Each seed's encoder is "
    f"fine-tuned on {study.finetuned.shape[2]} draws of the $k$ sentences at every $k$, and its accuracy at $k$ "
    f"is the mean over them. The prompt needs no training: one number per seed."
)

# %%
ch07_prompting.learning_curve_table()

# %%
show(ch07_prompting.figure_learning_curve())

# %% tags=["hide-input"]
curve = study.curve.mean(axis=0)
cross = ch07_prompting.crossing()
share_pos, auc = ch07_prompting.prompt_profile()
all_pos, all_neg = int(np.sum(share_pos == 1)), int(np.sum(share_pos == 0))
mixed = [f"{x:.0%}" for x in share_pos if 0 < x < 1]
Markdown(
    f"Fine-tuning climbs from **{curve[0]:.3f}** at $k$ = {study.ks[0]}"
    + (", a coin's score," if abs(curve[0] - 0.5) < 0.05 else ",")
    + f" through {curve[1]:.3f} and "
    f"{curve[2]:.3f} to **{curve[3]:.3f}** at $k$ = {study.ks[3]} (means over the seeds). The gold is a function "
    f"of the lexicon word, and the held-out sentences use the same {len(LEXICON)} words: once each word has been seen with its "
    f"label, the classifier answers from memory. With {study.ks[0]} sentences it has seen at most {study.ks[0]} "
    f"of the words, and the encoder's vectors do not carry a word's polarity (the lexicon probe above), so the "
    f"rest are guesses. "
    + ("The mean curves cross " + ("before the first $k$." if cross is None else
                                   "nowhere on the grid." if not np.isfinite(cross) else
                                   f"at $k \\approx$ **{cross:.0f}** (interpolated in $\\log k$).")) + "\n\n"
    f"The prompt scores **{study.prompt[0]:.3f}** at the book's seed ({seed_band(study.prompt, book=False)} over "
    f"the seeds), " + ("above" if study.prompt.mean() > curve[0] else "below") + f" fine-tuning at $k$ = {study.ks[0]}. "
    + ("It is not reading the sentences. " if auc.max() < 0.6 else "") + f"At {all_pos} of the "
    f"{len(study.seeds)} seeds it calls every held-out sentence positive, at {all_neg} every one negative"
    + (f", and at the last it calls {', '.join(mixed)} of them positive" if mixed else "")
    + f"; a constant answer scores the share of its class, {study.majority:.3f} or {1 - study.majority:.3f}. "
    f"The ranking says the same: the chance that a positive sentence gets a larger score (its positive words' "
    f"probability over its negative words') than a negative one is {auc.min():.3f} to {auc.max():.3f} over the "
    f"seeds, where 0.5 reads nothing. The template's own lean picks the answer, and the sentence does not move it "
    f"([Zhao et al. 2021](../references.html#zhao-2021) measure that lean in large models).\n\n"
    f"The reason is in the corpus, not the head. The objective ties a tone word to what its window shows, and in "
    f"these filings the tone word and a lexicon word stand in different sentences and agree only through the "
    f"filing's tone (the lexicon word with it {corpus_config.lexicon_tone_agreement:.0%} of the time, the tone "
    f"word {corpus_config.seed_tone_agreement:.0%}); nothing in a sentence read on "
    f"its own predicts the year's verdict. A prompt reads out an association that pre-training was given. Large "
    f"encoders trained on real text have seen verdicts written beside their reasons countless times, and there a "
    f"zero-shot prompt on sentiment can beat standard fine-tuning on 16 examples per class "
    f"([Gao, Fisch and Chen 2021](../references.html#gao-2021)); on these filings fine-tuning needs only "
    + (f"about {cross:.0f} labelled sentences" if cross is not None and np.isfinite(cross) else "a few labelled sentences")
    + " to pass a prompt that starts at a constant answer."
)

# %%
ch07_prompting.rules_table()

# %% tags=["hide-input"]
rules = {r.claim.id: r for r in verify(claims=ch07_prompting.CLAIMS)}
wins = study.prompt > study.curve[:, 0]
constant_wins = int(np.sum(wins & ((share_pos == 1) | (share_pos == 0))))
Markdown(
    f"The three rules and their expected verdicts were committed before any run. The prompt beats fine-tuning at "
    f"$k$ = {study.ks[0]} at {rules['D-27'].value['seeds holding']} seeds, *{rules['D-27'].verdict}* as expected, "
    f"though for the reason just given: at {constant_wins} of the {int(wins.sum())} seeds where it wins it gave "
    f"one answer to every sentence, the majority class, against a fine-tuned classifier near chance. It beats every constant answer at "
    f"{rules['D-27b'].value['seeds holding']} seeds (*{rules['D-27b'].verdict}*), and fine-tuning on the whole "
    f"pool beats it at {rules['D-27a'].value['seeds holding']} (*{rules['D-27a'].verdict}*).\n\n"
    f"Is it the verbaliser? Score the prompt with one word per class, *good* against *bad* (one accuracy per seed):"
)

# %%
ch07_prompting.prompt_accuracy((("bad",), ("good",)))

# %% [markdown]
# ## What this chapter shows

# %% tags=["hide-input"]
Markdown(
    f"Trained with the masked-LM objective on the filings alone, the encoder's layer 0 is a static embedding and "
    f"behaves like one: it types a held-out alias no better than answering ORG everywhere ({m.typing['0']:.3f}), "
    f"and a cross-validated score of it can fall below the majority or, read at the nearest-centre position, rise "
    f"to {m.leak['nearest']:.3f} on position alone. One attention block over the window reaches "
    f"{m.typing['1']:.3f} across aliases and {m.kestrel['1']:.3f} on *kestrel*, against chapter 6's caps of "
    f"{r.alias_cap.accuracy:.3f} and {r.kestrel_cap.accuracy:.3f}, from the tokens right beside the word. It reads "
    f"the news a direction word reports ({ch07_encoder._group(m, DIRECTION_WORDS):.3f}, against a static cap of "
    f"{r.polarity_cap.accuracy:.3f}) and does much worse for evaluative verbs, whose aspect sits further back "
    f"({m.polarity['verbs_pooled']:.3f}). Whether *strong* is positive it does not find at any layer "
    f"({max(m.lexicon.values()):.3f} at best), because no sentence writes it. Finally the encoder keeps less on a "
    f"visible word than Theorem 2's optimum would, given its own masked guess ({m.visible['visible']:.3f} against "
    f"{m.visible['plugin']:.3f}): a place where the trained model and the theory part ways, most of all at rare "
    f"words. Asked as a cloze question whether a sentence is positive, its masked-LM head gives one answer to "
    f"every sentence at most seeds, and fine-tuning overtakes it "
    + ("before the first $k$." if ch07_prompting.crossing() is None else
       f"after about {ch07_prompting.crossing():.0f} labelled sentences.")
)

# %% [markdown]
# ## Exercises
#
# **Exercise 1.** The figure of cues masks one position at a time in windows the probe was
# *not* trained on. Train and score the layer-2 probe with the token just *after* *kestrel*
# hidden (`mask_at=17`). Does the score drop as far as in the figure? What does that say
# about the figure's drop at that position?

# %% tags=["hide-input"]
after = ch07_encoder.probe_kestrel(layer=2, mask_at=r.centre + 1)
after_figure = m.cue[r.centre + 1]
answer(f"`ch07_encoder.probe_kestrel(layer=2, mask_at=17)` gives **{after:.3f}**, against **{after_figure:.3f}** "
       f"for the clean-trained probe scored on the same masked windows (the figure, book seed) and "
       f"{m.kestrel['2']:.3f} with nothing hidden. "
       + ("A probe that has seen the masked windows recovers most of the loss: the token after *kestrel* "
          "(*turbine* in both types) was not a cue the type needed; the figure's drop there measures how far "
          "an unfamiliar window moves the vectors off the clean probe's training cloud."
          if after > after_figure + 0.05 else
          "A probe that has seen the masked windows does not recover the loss, so the encoder's layer-2 type "
          "signal does lean on that token, or on what the encoder computes from it."))

# %% [markdown]
# **Exercise 2.** Which of the evaluative verbs does the layer-1 probe read best, and does
# layer 2 do better for them than layer 1? (`ch07_encoder.probe_news(word, layer)`.)

# %% tags=["hide-input"]
verbs = [word for word in m.polarity["words"] if word not in DIRECTION_WORDS]
by_layer = {word: (ch07_encoder.probe_news(word, 1), ch07_encoder.probe_news(word, 2)) for word in verbs}
best_verb = max(by_layer, key=lambda word: by_layer[word][0])
better = sum(two > one for one, two in by_layer.values())
answer(f"Layer 1 reads *{best_verb}* best, at **{by_layer[best_verb][0]:.3f}**; the verbs range from "
       f"{min(one for one, _ in by_layer.values()):.3f} to {max(one for one, _ in by_layer.values()):.3f} at "
       f"layer 1 and from {min(two for _, two in by_layer.values()):.3f} to "
       f"{max(two for _, two in by_layer.values()):.3f} at layer 2, where {better} of the {len(verbs)} verbs score "
       f"higher than at layer 1. A second block gives attention a second chance to reach an aspect several tokens "
       f"back; "
       + ("here it uses it for most verbs, but not enough to close the gap to the direction words."
          if better > len(verbs) / 2 else
          "here it does not use it: the second block does not reach the aspect either."))

# %% [markdown]
# **Exercise 3.** The verbaliser has three words a class. Does any one pair, a negative
# word against a positive one, make the prompt read the sentences? Score all nine pairs
# with `ch07_prompting.prompt_accuracy(((negative,), (positive,)))` and compare each with
# the best constant answer.

# %% tags=["hide-input"]
pairs = {(neg, pos): ch07_prompting.prompt_accuracy(((neg,), (pos,)))
         for neg in prompting.VERBALISER[0] for pos in prompting.VERBALISER[1]}
best_pair = max(pairs, key=lambda pair: pairs[pair].mean())
above = {pair: int(np.sum(values > study.majority)) for pair, values in pairs.items()}
answer(f"The best pair on average is *{best_pair[0]}* against *{best_pair[1]}*, at "
       f"**{pairs[best_pair].mean():.3f}** over the seeds (from {pairs[best_pair].min():.3f} to "
       f"{pairs[best_pair].max():.3f}); the constant answer scores {study.majority:.3f}. "
       + ("No pair beats it at any seed. " if max(above.values()) == 0 else
          f"Over the nine pairs, a pair beats it at {min(above.values())} to {max(above.values())} of the "
          f"{len(study.seeds)} seeds. ")
       + ("No pair reads the sentences: each pair only moves the threshold, so the prompt's answer becomes another "
          "constant or a near-constant, and its accuracy the share of that class."
          if max(above.values()) < len(study.seeds) else
          "One pair beats the constant answer at every seed; look at how often it changes its answer before "
          "calling that reading."))

# %% [markdown]
# ## Claims

# %% tags=["hide-input"]
chapter_summary(verify(claims=ch07_encoder.CLAIMS + ch07_prompting.CLAIMS))
