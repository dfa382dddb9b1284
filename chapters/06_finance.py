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
# # Chapter 6 — Finance case study: a company or its product, and the news a word reports
#
# The earlier chapters worked on a language whose senses we could compute exactly. This one
# moves to text that looks like the real thing: annual reports. Three questions run through
# it. Is *kestrel* in a given sentence the company "Kestrel Turbine Services" or its product,
# "the Kestrel turbine"? Is *rose* good news or bad? (It depends on what rose: revenue or
# costs.) And is *strong* a positive word?
#
# The first two have answers that live in the sentence; the third, in these filings, does
# not. This chapter builds the corpus, with gold labels for all three questions, and measures
# what a reader with **one vector per word** can do: the static caps of Corollary 1, and
# skip-gram vectors, word2vec's static embedding. The contextual encoder is measured in the
# same world later.

# %%
import numpy as np
from IPython.display import Markdown

from mlm_book.experiments import ch06_finance as ch6
from mlm_book.finance.world import ASPECTS, COMPANIES, DIRECTION_WORDS, EVALUATIVE_VERBS, LEXICON
from mlm_book.ledger import to_markdown, verify

r = ch6.results()
c = r.counts

# %% [markdown]
# ## The filings
#
# The corpus is synthetic, written by a seeded generator
# ([`mlm_book.finance.corpus`](../../api/mlm_book.finance.corpus/)) from sentence templates
# in the register of annual reports. The topic page's shared corpus is not available to us,
# so we regenerate one at the page's scale and report our own counts next to the page's.
# A filing is written by one of the companies of
# [`mlm_book.finance.world`](../../api/mlm_book.finance.world/). Each company has a one-word
# **alias**, an industry noun and a legal suffix: "kestrel turbine services" names the
# company, "the kestrel turbine" its product. Tokens are lower-cased words, and `[SEP]`
# separates sentences. A filing is made of these parts:
#
# * an opening line and a company description, which name the filer (gold type **ORG** on
#   the alias token);
# * **news sentences**. An *aspect* (a line item such as revenue or income taxes) carries a
#   polarity: $+1$ if its increase is good news, $-1$ if bad. A **direction word** right
#   after the aspect ("costs rose") or an **evaluative verb** three to six tokens after it
#   ("income taxes in the power segment surpassed expectations") inherits that polarity as
#   the news it reports. All direction words point up, so "costs rose" really is bad news;
# * **lexicon sentences** with one or two of 35 evaluative adjectives ("strong", "weak", …).
#   Each filing has a latent tone, a good or a bad year. A lexicon word agrees with it only
#   somewhat more often than not, and in a *contrast* sentence ("despite weak demand margins
#   remained firm") the second word takes the opposite polarity of the first;
# * one **tone sentence** with a seed word ("the board regards 2014 as a good year");
# * **filler** about places, people, plants and amounts, drawn from long-tailed name pools:
#   the rare words that a min-count vocabulary leaves out;
# * often a **closing sentence** naming a product (gold type **PRODUCT**). Products close a
#   filing and appear nowhere else. Kestrel files fewer reports than the others, and other
#   filings close on its turbine too, so *kestrel* is the one alias whose mentions are near
#   balanced.
#
# The generator's settings and the seed:

# %%
print(r.config.corpus)
print("corpus seed:", r.config.corpus_seed)

# %% [markdown]
# One filing written by Kestrel, with its gold labels: `[ORG]` / `[PRODUCT]` on alias
# tokens, `[+]` / `[-]` for the news a direction word or verb reports, `{+}` / `{-}` for a
# lexicon word's dictionary polarity. Each line is a sentence (the `[SEP]`s are not shown).

# %%
print(ch6.example_filing(r))

# %% [markdown]
# The counts that matter for the case study, with the topic page's values for its shared
# corpus:

# %%
Markdown(ch6.counts_table(r))

# %%
Markdown(
    f"The vocabulary ([`mlm_book.finance.vocab`](../../api/mlm_book.finance.vocab/)) is the "
    f"**{c.vocabulary_words}** words seen at least {r.config.min_count} times. They cover "
    f"**{100 * c.coverage:.1f} %** of the word tokens; every other word becomes `[UNK]`. With `[UNK]` "
    f"and `[SEP]` that makes **V = {c.vocabulary_size}** output classes, and an encoder adds an "
    f"input-only `[MASK]` id. A unigram model of the encoded filings has cross-entropy "
    f"**{c.unigram_cross_entropy:.3f}** nats, as uncertain as a uniform choice among "
    f"**{np.exp(c.unigram_cross_entropy):.0f}** words. This is the baseline that a masked-LM fit on "
    f"these filings has to beat."
)

# %% [markdown]
# ## Reading a token from a window
#
# An encoder reads a window of tokens. How a token is placed in its window decides what its
# input vector $E[x] + P_i$ can know. The book reads every analysed token at the **centre of
# its own window** ([`mlm_book.finance.windows`](../../api/mlm_book.finance.windows/)): the
# token sits at position 16 of a 32-token window (0-based), with the 16 tokens before it and
# the 15 after it. The window never crosses a filing's edge. Slots beyond the filing are
# padding, which an encoder masks. Every occurrence of a word then has the same layer-0
# vector, $E[x] + P_{16}$, so layer 0 is a static embedding.
#
# The alternative is to cut each filing into fixed windows (here every 16 tokens, plus one
# window flush with the filing's end) and read each token in the window where it sits nearest
# the centre. Interior tokens land near the middle, but a filing's first and last tokens can
# only land near a window's edge. Products close a filing. So under this reading the
# *position* alone tells most products from most company mentions, a cue that a
# context-free layer 0 can pick up. That is the position leak of the probing chapter.

# %% [markdown]
# The centred window of the product mention that closes the example filing. The centre
# token is in double brackets, and `[PAD]` marks slots beyond the filing's end:

# %%
print(ch6.window_view(r))

# %%
fig = ch6.figure_positions(r)

# %%
leak = r.position_reader
Markdown(
    f"How strong is the cue? A probe that sees only a one-hot code of *kestrel*'s window position "
    f"({r.config.position_folds}-fold stratified cross-validation) types it correctly "
    f"**{leak['nearest-centre']:.3f}** of the time under nearest-centre reading, and "
    f"**{leak['centred']:.3f}** under centred reading. Under centred reading the position is constant, "
    f"so the probe learns only an intercept and predicts each training fold's majority. An encoder read "
    f"the first way could look like it tells a company from its product without reading a word of "
    f"context."
)

# %% [markdown]
# ## A company or its product
#
# Each alias occurrence has a gold type. A reader with one vector per alias gives all
# occurrences of an alias the same answer, so the best it can do is each alias's majority
# type. Pooled over aliases, that is the **per-alias static cap**
# ([`mlm_book.finance.caps`](../../api/mlm_book.finance.caps/)).

# %%
fig = ch6.figure_aliases(r)

# %%
k_org, k_product = c.kestrel[1], c.kestrel[2]
Markdown(
    f"*kestrel* occurs **{c.kestrel[0]}** times: **{k_org}** times as the company and **{k_product}** as "
    f"its product. A classifier reading its single vector answers the same for all of them, so it is "
    f"right **{r.kestrel_cap.accuracy:.3f}** of the time at best: about half. Over all "
    f"{len(COMPANIES)} aliases ({c.aliases[0]} occurrences, {c.aliases[2]} of them PRODUCT) the "
    f"per-alias cap is **{r.alias_cap.accuracy:.3f}**."
)

# %% [markdown]
# The probe of [`mlm_book.probe`](../../api/mlm_book.probe/) (ridge-regularised logistic
# regression on standardised vectors) is trained on the occurrences of all aliases but one.
# It then types the held-out alias's occurrences, one fold per alias, and the scores are
# pooled. On skip-gram vectors, every occurrence of an alias is the same point, and a probe
# trained on aliases that are mostly ORG predicts ORG:

# %%
Markdown(ch6.caps_table(r))

# %% [markdown]
# ## The news a word reports
#
# A direction word or an evaluative verb reports good or bad news depending on its aspect:
# "revenue rose" is good news and "costs rose" is bad. The aspects are drawn independently of
# everything else, half of them good when up, so each of these words reports good and bad news
# about equally often, and its commoner polarity is only slightly commoner. The probe set is
# the words with at least 20 labelled occurrences:

# %%
rows = [(w, r.counts.direction.get(w, r.counts.verbs.get(w)),
         "direction" if w in DIRECTION_WORDS else "evaluative verb") for w in r.polarity_words]
counts = r.polarity_cap.counts
words_sorted = sorted(r.polarity_words)
lines = ["| word | kind | labelled | good news | bad news |", "|---|---|---|---|---|"]
for word, n, kind in rows:
    i = words_sorted.index(word)
    lines.append(f"| {word} | {kind} | {n} | {counts[i, 1]} | {counts[i, 0]} |")
Markdown("\n".join(lines))

# %%
Markdown(
    f"The **{len(r.polarity_words)}** words have **{r.polarity_cap.n}** labelled occurrences. One vector "
    f"per word can only give each word its commoner polarity, which caps any static reader at "
    f"**{r.polarity_cap.accuracy:.3f}** pooled. The cue is in the sentence: the aspect sits right "
    f"before a direction word and three to six tokens before a verb."
)

# %% [markdown]
# ## Skip-gram vectors
#
# The static baseline is skip-gram with negative sampling
# ([`mlm_book.finance.skipgram`](../../api/mlm_book.finance.skipgram/)), trained on the
# same filings with `[SEP]` removed, a context of two words on either side and 25 dimensions.
# Its settings:

# %%
print(r.skipgram.config)
print("mean loss per pair by epoch (nats):", np.round(r.skipgram.epoch_loss, 3))

# %% [markdown]
# Its nearest neighbours (cosine) look sensible. Words that share their two-word contexts
# end up close: direction words sit with direction words, verbs with verbs, aliases with
# aliases, and aspects with aspects whether their rise is good news or bad. A window of two
# words sees the slot a word fills, not what it reports.

# %%
Markdown(ch6.neighbours_table(r))

# %%
share, chance = ch6.lexicon_neighbour_agreement(r)
Markdown(
    f"The lexicon words sit together too, positive and negative mixed. Among each lexicon word's 5 "
    f"nearest lexicon words, the share that have its polarity is **{share:.3f}** on average. Drawing "
    f"the neighbours at random would give **{chance:.3f}**."
)

# %% [markdown]
# ## Is *strong* a positive word?
#
# The word2vec topic found that window-trained vectors cannot tell *strong* from *weak*. We
# rerun its test: a leave-one-out probe on the 35 lexicon words' vectors (train on 34, predict
# the held-out word's polarity). With 35 words, chance is $0.5$ with a standard error of
# $\sqrt{0.25/35}$.
#
# Polarity does show up in these filings, but only when pooled. **Semantic orientation**
# ([`mlm_book.finance.orientation`](../../api/mlm_book.finance.orientation/)) counts how
# often a lexicon word shares a filing with positive seed words ("good", "excellent",
# "successful") and with negative ones ("bad", "poor", "unsuccessful"), pooled over all
# filings:
#
# $$\operatorname{SO}(w) = \log\frac{\sum_d n_d(w)\, n_d(P) + \alpha}{\sum_d n_d(w)\, n_d(N) + \alpha}
# - \log\frac{n(P)}{n(N)},$$
#
# which is $\operatorname{PMI}(w, P) - \operatorname{PMI}(w, N)$ with smoothing $\alpha = 0.5$.
# The seed words are not lexicon words, so all 35 are scored.

# %%
Markdown(ch6.orientation_table(r))

# %% [markdown]
# One occurrence has far less to go on. In **lexicon-neighbour voting**
# ([`mlm_book.finance.voting`](../../api/mlm_book.finance.voting/)), the other lexicon words
# near an occurrence vote on its polarity. Only different words vote, and only from the same
# filing. Distance is counted in words, with `[SEP]` not counted. A tie, including the case
# of no voter at all, scores one half; the second column sets ties aside.

# %%
Markdown(ch6.voting_table(r))

# %%
fig = ch6.figure_polarity(r)

# %%
v8, v32, vdoc = r.votes
Markdown(
    f"Within 8 words the vote is right **{v8.accuracy:.3f}** of the time, within 32 words "
    f"**{v32.accuracy:.3f}**, and over the whole filing **{vdoc.accuracy:.3f}**, against "
    f"**{r.orientation.accuracy:.3f}** for orientation pooled over all filings. A lexicon word's "
    f"polarity is a fact about the filings in aggregate; the sentence it sits in barely writes it "
    f"down. The skip-gram probe gets **{r.lexicon_probe.accuracy:.3f}**, within two standard errors of "
    f"chance."
)

# %% [markdown]
# ## Claims
#
# The claims of this chapter's static half, recomputed:

# %%
Markdown(to_markdown(verify(claims=ch6.CLAIMS)))
