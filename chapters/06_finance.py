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
# # Chapter 6 — The filings, read one vector per word
#
# The earlier chapters worked on a language whose senses we could compute exactly. This one
# moves to text that looks like the real thing: annual reports. Three questions run through
# it. Is *kestrel* in a given sentence the company "Kestrel Turbine Services" or its
# product, "the Kestrel turbine"? Is *rose* good news or bad? (It depends on what rose:
# revenue or costs.) And is *strong* a positive word?
#
# The first two have answers that live in the sentence; the third, in these filings, does
# not. This chapter builds a corpus of filings with gold labels for all three questions and
# measures what a reader with **one vector per word** can do: the static caps of
# [Corollary 1](01_static_vectors.html#corollary-1-the-static-cap), skip-gram vectors
# ([Mikolov et al. 2013b](../references.html#mikolov-2013b)), and the classic
# document-level answer to the third question, semantic orientation
# ([Turney 2002](../references.html#turney-2002);
# [Turney and Littman 2003](../references.html#turney-2003)).
#
# This chapter is the *static* side of the case study: the caps a one-vector reader cannot
# pass, and what skip-gram vectors and pooled co-occurrence counts reach.
# [Chapter 7](07_filing_encoder.html) trains the book's BERT on the same filings and probes
# it the same way.

# %%
from dataclasses import replace

import numpy as np

from mlm_book.experiments import ch06_finance
from mlm_book.figures import show
from mlm_book.finance.caps import polarity_cap, word_cap
from mlm_book.finance.corpus import generate_corpus
from mlm_book.finance.orientation import semantic_orientation
from mlm_book.finance.skipgram import cosine_neighbours
from mlm_book.finance.vocab import SEP_ID, UNK_ID
from mlm_book.finance.voting import lexicon_vote
from mlm_book.finance.world import COMPANIES, DIRECTION_WORDS, EVALUATIVE_VERBS, LEXICON
from mlm_book.ledger import chapter_summary, verify
from mlm_book.report import Markdown, answer

r = ch06_finance.results()
c = r.counts
settings = r.config.corpus

# %% [markdown]
# ## The filings
#
# The corpus is synthetic, written by a seeded generator
# ([`mlm_book.finance.corpus`](../api/mlm_book.finance.corpus.html)) from sentence
# templates in the register of annual reports. Generating it ourselves is what gives every
# token a gold label. Tokens are lower-cased words, and `[SEP]` separates sentences.

# %% tags=["hide-input"]
Markdown(
    f"Each of the {c.n_documents} filings is written by one of the {len(COMPANIES)} companies of "
    f"[`mlm_book.finance.world`](../api/mlm_book.finance.world.html). A company has a one-word **alias**, an "
    f"industry noun and a legal suffix: \"kestrel turbine services\" names the company, \"the kestrel turbine\" "
    f"its product. Each filing also has a hidden **tone**, a good or a bad year, drawn with even odds. A filing "
    f"is made of these parts:\n\n"
    f"* an opening line and a company description, which name the filer (gold type **ORG** on the alias token);\n"
    f"* **news sentences**. An *aspect* (a line item such as revenue or income taxes) carries a polarity: "
    f"$+1$ if its increase is good news, $-1$ if bad. A **direction word** right after the aspect (\"costs "
    f"rose\") or an **evaluative verb** a few tokens after it (\"income taxes in the power segment surpassed "
    f"expectations\") reports good or bad news according to that polarity. The "
    f"{len(DIRECTION_WORDS)} direction words all say *up*, so \"costs rose\" really is bad news;\n"
    f"* **lexicon sentences** with one or two of {len(LEXICON)} evaluative adjectives (\"strong\", \"weak\", "
    f"…), each positive or negative in the lexicon. A lexicon word has the filing's tone with probability "
    f"{settings.lexicon_tone_agreement:g} only, and in a *contrast* sentence (\"despite weak demand margins "
    f"remained firm\") the second word takes the opposite polarity of the first;\n"
    f"* one **tone sentence** with a *seed word* (\"the board regards 2014 as a good year\"), which has the "
    f"filing's tone with probability {settings.seed_tone_agreement:g};\n"
    f"* **filler** about places, people, plants and amounts, drawn from long-tailed name pools: the rare words "
    f"that a vocabulary with a minimum count leaves out;\n"
    f"* with probability {settings.closing_product_rate:g}, a **closing sentence** naming a product (gold type "
    f"**PRODUCT**). Products close a filing and appear nowhere else. Kestrel files fewer reports than the "
    f"others, and other filings close on its turbine too, so *kestrel* is the one alias whose company and "
    f"product mentions are nearly balanced.\n\n"
    f"The generator's settings, with corpus seed {r.config.corpus_seed}:"
)

# %%
ch06_finance.settings_table(r)

# %% [markdown]
# Here is one filing written by Kestrel, with its gold labels: `[ORG]` / `[PRODUCT]` on
# alias tokens, `[+]` / `[-]` for the news a direction word or verb reports, `{+}` / `{-}`
# for a lexicon word's polarity in the lexicon. Each row is a sentence (the `[SEP]`s are
# not shown).

# %%
ch06_finance.example_filing_table(r)

# %% [markdown]
# The counts that matter for the case study:

# %%
ch06_finance.counts_table(r)

# %% tags=["hide-input"]
Markdown(
    f"The vocabulary ([`mlm_book.finance.vocab`](../api/mlm_book.finance.vocab.html)) is the "
    f"**{c.vocabulary_words}** words seen at least {r.config.min_count} times. They cover "
    f"**{100 * c.coverage:.1f} %** of the word tokens; every other word becomes `[UNK]`. With `[UNK]` and "
    f"`[SEP]` that makes $V =$ **{c.vocabulary_size}** output classes, and an encoder adds an input-only "
    f"`[MASK]` id. A unigram model of the encoded filings has cross-entropy **{c.unigram_cross_entropy:.3f}** "
    f"nats, as uncertain as a uniform choice among **{np.exp(c.unigram_cross_entropy):.0f}** words: the "
    f"baseline that a masked-LM fit on these filings would have to beat."
)

# %% [markdown]
# Encoding is a lookup: `[UNK]` is id 0 and `[SEP]` id 1, and the other ids go to the words in
# order of decreasing count, so a word's id is its frequency rank. A town's name from the
# filler is too rare to get one:

# %%
r.vocabulary.encode(["kestrel", "rose", "strong", "uxhaven", "[SEP]"])

# %% [markdown]
# ## Reading a token from a window
#
# An encoder reads a window of tokens, and how a token is placed in its window decides what
# its input vector $E[x] + P_i$ (token table plus position table) can know.

# %% tags=["hide-input"]
L, centre = r.config.window_length, r.centre
Markdown(
    f"The book reads every analysed token at the **centre of its own window** "
    f"([`mlm_book.finance.windows`](../api/mlm_book.finance.windows.html)): the token sits at slot {centre} "
    f"of a {L}-token window (slots counted from 0), with the {centre} tokens before it and the "
    f"{L - centre - 1} after it. The window never crosses a filing's edge; slots beyond the filing are "
    f"padding, which an encoder masks. Every occurrence of a word then has the same layer-0 vector, "
    f"$E[x] + P_{{{centre}}}$, so layer 0 is a static embedding.\n\n"
    f"The alternative is to cut each filing into fixed windows (here one every {r.config.nearest_stride} "
    f"tokens, plus one window flush with the filing's end) and read each token in the window where it sits "
    f"nearest the centre. Interior tokens land near the middle, but a filing's first and last tokens can only "
    f"land near a window's edge. Products close a filing, so under this *nearest-centre* reading the "
    f"**position alone** tells products from company mentions: a cue that a layer 0 with no context at all can "
    f"pick up. This is the kind of leak that the [probing chapter](05_probing.html) warns a probe can exploit.\n\n"
    f"The centred window of the product mention that closes the example filing, row by row; the "
    f"centre token is in bold, and `[PAD]` marks slots beyond the filing's end:"
)

# %%
ch06_finance.window_table(r, per_row=8)

# %%
show(ch06_finance.figure_positions(r))

# %% tags=["hide-input"]
leak = r.position_reader
Markdown(
    f"How strong is the cue? A probe that sees only a one-hot code of *kestrel*'s window slot "
    f"({r.config.position_folds}-fold stratified cross-validation) types it correctly "
    f"**{leak['nearest-centre']:.3f}** of the time under nearest-centre reading, and "
    f"**{leak['centred']:.3f}** under centred reading. Under centred reading the slot is always the same, so "
    f"the probe learns only an intercept and predicts each training fold's majority. An encoder read the first "
    f"way could look as if it told a company from its product without reading a word of context; that is why "
    f"every number below uses centred reading."
)

# %% [markdown]
# ## A company or its product
#
# Each alias occurrence has a gold type. A reader with one vector per alias gives all
# occurrences of an alias the same answer, so by Corollary 1 the best it can do is each
# alias's majority type. Pooled over the aliases, that is the **per-alias static cap**
# ([`mlm_book.finance.caps`](../api/mlm_book.finance.caps.html)).

# %%
show(ch06_finance.figure_aliases(r))

# %% [markdown]
# The cap of one alias is one call; `kestrel` can be replaced by any of the aliases on the
# figure's axis:

# %%
cap = word_cap(r.corpus, "kestrel")
cap.counts, cap.accuracy

# %% tags=["hide-input"]
k_org, k_product = c.kestrel[1], c.kestrel[2]
Markdown(
    f"*kestrel* occurs **{c.kestrel[0]}** times: **{k_org}** times as the company and **{k_product}** as its "
    f"product. A classifier reading its single vector answers the same for all of them, so it is right "
    f"**{r.kestrel_cap.accuracy:.3f}** of the time at best: about half. Over all {len(COMPANIES)} aliases "
    f"({c.aliases[0]:,} occurrences, {c.aliases[2]} of them PRODUCT) the per-alias cap is "
    f"**{r.alias_cap.accuracy:.3f}**. It is high only because most aliases are almost always the company.\n\n"
    f"The probe of [`mlm_book.probe`](../api/mlm_book.probe.html) (ridge-regularised logistic regression on "
    f"standardised vectors) is trained on the occurrences of all aliases but one and then types the held-out "
    f"alias's occurrences, one fold per alias; the scores are pooled. On skip-gram vectors (trained below) "
    f"every occurrence of an alias is the same point, and a probe trained on aliases that are mostly ORG "
    f"answers ORG:"
)

# %%
ch06_finance.caps_table(r)

# %% tags=["hide-input"]
all_org = c.aliases[1] / c.aliases[0]
same = abs(r.typing.accuracy - all_org) < 1e-12
Markdown(
    f"The skip-gram probe scores **{r.typing.accuracy:.3f}**, "
    + ("exactly" if same else "close to") + f" what answering ORG everywhere scores, and "
    f"{r.alias_cap.accuracy - r.typing.accuracy:.3f} below the cap. The cap itself is out of reach for a "
    f"held-out alias: it would need to know that alias's majority, which no other alias tells it."
)

# %% [markdown]
# ## The news a word reports
#
# A direction word or an evaluative verb reports good or bad news depending on its aspect:
# "revenue rose" is good news and "costs rose" is bad. The aspects are drawn independently
# of everything else, half of them good when up, so each of these words reports good and bad
# news about equally often.

# %% tags=["hide-input"]
d_min, _, v_min, v_max = ch06_finance.news_distances(r)
Markdown(
    f"The probe set is the words with at least {r.config.polarity_min_count} labelled occurrences: all "
    f"{len(DIRECTION_WORDS)} direction words and all {len(EVALUATIVE_VERBS)} evaluative verbs. The last column "
    f"is the share of the word's commoner polarity, the best a reader of that word alone can score on it:"
)

# %%
ch06_finance.news_table(r)

# %% [markdown]
# The cap pooled over the words with at least `min_count` labelled occurrences (raise it to
# keep only the direction words):

# %%
polarity_cap(r.corpus, min_count=r.config.polarity_min_count).accuracy

# %% tags=["hide-input"]
Markdown(
    f"The **{len(r.polarity_words)}** words have **{r.polarity_cap.n}** labelled occurrences. One vector per "
    f"word can only give each word its commoner polarity, which caps any static reader at "
    f"**{r.polarity_cap.accuracy:.3f}** pooled, barely above a coin. The answer is in the sentence, at a fixed "
    f"short distance: the aspect's last word sits exactly {d_min} token before a direction word and "
    f"{v_min} to {v_max} tokens before an evaluative verb, and every labelled word has its aspect's polarity. "
    f"A reader who sees the aspect can be right every time; a reader of the word alone cannot."
)

# %% [markdown]
# ## Skip-gram vectors
#
# The static baseline is skip-gram with negative sampling
# ([Mikolov et al. 2013b](../references.html#mikolov-2013b);
# [`mlm_book.finance.skipgram`](../api/mlm_book.finance.skipgram.html)): each word's vector
# is trained to predict the words around it, and to tell them from randomly drawn noise
# words. It is trained on the same filings with `[SEP]` removed. Its settings:

# %%
ch06_finance.skipgram_table(r)

# %% tags=["hide-input"]
loss = r.skipgram.epoch_loss
Markdown(
    f"Over {loss.size} epochs the mean loss per (word, context) pair falls from **{loss[0]:.3f}** to "
    f"**{loss[-1]:.3f}** nats. The nearest neighbours (by cosine) look sensible: words that share their "
    f"contexts (the {r.skipgram.config.window} words on either side) end up close. Direction words sit with "
    f"direction words, verbs with "
    f"verbs, aliases with aliases, and aspects with aspects whether their rise is good news or bad. A window of "
    f"{r.skipgram.config.window} words sees the slot a word fills, not what it reports."
)

# %%
ch06_finance.neighbours_table(r)

# %% [markdown]
# The neighbours of any other word of the vocabulary, here *rose*:

# %%
ids, cosines = cosine_neighbours(r.skipgram.input_vectors, r.vocabulary.lookup("rose"), 5, exclude=(UNK_ID, SEP_ID))
[(r.vocabulary.words[i], round(float(cosine), 3)) for i, cosine in zip(ids, cosines)]

# %% tags=["hide-input"]
k_near = 5
share, chance = ch06_finance.lexicon_neighbour_agreement(r, k=k_near)
Markdown(
    f"The lexicon words sit together too, positive and negative mixed. Among each lexicon word's {k_near} "
    f"nearest lexicon words, the share that have its polarity is **{share:.3f}** on average; drawing the "
    f"neighbours at random would give **{chance:.3f}**."
)

# %% tags=["hide-input"]
Markdown(
    "Skip-gram's training is random too: the initial vectors, the order of the pairs and the noise words all come "
    f"from its seed. The skip-gram numbers of this chapter, for the book's seed and {ch06_finance.SKIPGRAM_SEED_COUNT - 1} "
    "more, on the same filings with the same settings "
    "([`skipgram_seeds`](../api/mlm_book.experiments.ch06_finance.html#mlm_book.experiments.ch06_finance.skipgram_seeds)):"
)

# %%
ch06_finance.skipgram_seed_table()

# %% tags=["hide-input"]
sg_runs = ch06_finance.skipgram_seeds()
sg_typing = {round(run.typing, 12) for run in sg_runs}
sg_lexicon = [run.lexicon for run in sg_runs]
sg_agree = [run.neighbour_agreement for run in sg_runs]
Markdown(
    f"The final loss lies between {min(run.final_loss for run in sg_runs):.3f} and "
    f"{max(run.final_loss for run in sg_runs):.3f} nats at every seed. The typing probe "
    + (f"scores exactly {sg_runs[0].typing:.3f} at all {len(sg_runs)} seeds"
       + (", the score of answering ORG everywhere. " if abs(sg_runs[0].typing - all_org) < 1e-12 else ". ")
       if len(sg_typing) == 1 else
       f"scores {min(run.typing for run in sg_runs):.3f} to {max(run.typing for run in sg_runs):.3f}. ")
    + f"The polarity numbers move with the seed, and stay at chance: the leave-one-out probe ranges from "
    f"{min(sg_lexicon):.3f} to {max(sg_lexicon):.3f} (chance 0.5, two standard errors {2 * np.sqrt(0.25 / len(LEXICON)):.3f}), "
    f"and the neighbour agreement from {min(sg_agree):.3f} to {max(sg_agree):.3f} against {chance:.3f} by chance."
)

# %% [markdown]
# ## Is *strong* a positive word?
#
# Skip-gram's objective gives similar vectors to words that occur in similar contexts
# ([Mikolov et al. 2013b](../references.html#mikolov-2013b)), and in these filings *strong*
# and *weak* occur in exactly the same contexts: the lexicon
# templates put a positive or a negative word in the same slot, with the same neighbours.
# Only the filing's tone differs, and a window of a few words cannot see it. So we should
# expect the skip-gram vectors to carry no polarity.
#
# Real filings have their own polarity lexicon for a reason: [Loughran and McDonald
# (2011)](../references.html#loughran-2011) found that most of the words a general-purpose
# dictionary lists as negative, *liability*, *tax* and *cost* among them, are not negative in
# a 10-K, and built word lists for financial text instead. Here the lexicon is the
# generator's own, so every word's polarity is known, and the question is only whether
# vectors learned from the filings recover it.

# %% tags=["hide-input"]
n_lex = len(LEXICON)
se = np.sqrt(0.25 / n_lex)
Markdown(
    f"The test is a leave-one-out probe on the {n_lex} lexicon words' vectors: train on {n_lex - 1} words, "
    f"predict the held-out word's polarity, and repeat for every word. With {n_lex} words, chance is $0.5$ "
    f"with a standard error of $\\sqrt{{0.25/{n_lex}}} =$ {se:.3f}.\n\n"
    f"Polarity does show up in these filings, but only when pooled over many of them. **Semantic "
    f"orientation** ([Turney 2002](../references.html#turney-2002); "
    f"[`mlm_book.finance.orientation`](../api/mlm_book.finance.orientation.html)), in the form "
    f"[Turney and Littman (2003)](../references.html#turney-2003) gave it, scores a word by its association "
    f"with a set of positive seed words minus its association with a set of negative ones. Here the "
    f"association is counted by filing: how often a "
    f"lexicon word shares a filing with the positive seed words "
    f"({', '.join(repr(w) for w in r.orientation.positive_seeds)}) and with the negative ones "
    f"({', '.join(repr(w) for w in r.orientation.negative_seeds)}), pooled over all filings. With $n_d(w)$ "
    f"the count of $w$ in filing $d$ and $n_d(P)$, $n_d(N)$ the counts of the positive and negative seeds,\n\n"
    f"$$\\operatorname{{SO}}(w) = \\log\\frac{{\\sum_d n_d(w)\\, n_d(P) + \\alpha}}"
    f"{{\\sum_d n_d(w)\\, n_d(N) + \\alpha}} - \\log\\frac{{n(P)}}{{n(N)}},$$\n\n"
    f"which is $\\operatorname{{PMI}}(w, P) - \\operatorname{{PMI}}(w, N)$ with smoothing "
    f"$\\alpha =$ {semantic_orientation.__kwdefaults__['smoothing']:g} (each set of seeds pooled into one "
    f"class, where Turney and Littman sum an association per seed). A word is predicted positive when "
    f"$\\operatorname{{SO}}(w) > 0$. The seed words are not lexicon words, so all {len(r.orientation.words)} "
    f"are scored."
)

# %%
ch06_finance.orientation_table(r)

# %% [markdown]
# Orientation is one call on the filings, and its smoothing $\alpha$ and its seed words
# (`positive=`, `negative=`) are arguments to vary. Here with a heavier smoothing than the book's:

# %%
semantic_orientation(r.corpus, smoothing=5.0).accuracy

# %%
show(ch06_finance.figure_polarity(r))

# %% tags=["hide-input"]
wrong = [w for w, s, t in zip(r.orientation.words, r.orientation.score, r.orientation.truth) if np.sign(s) != t]
Markdown(
    f"Pooled orientation gets **{r.orientation.accuracy:.3f}** of the signs right "
    f"({round(r.orientation.accuracy * n_lex)} of {n_lex} words; wrong: "
    f"{', '.join('*' + w + '*' for w in wrong) or 'none'}). The skip-gram probe gets "
    f"**{r.lexicon_probe.accuracy:.3f}** (seeds {min(sg_lexicon):.3f} to {max(sg_lexicon):.3f}, each within two "
    f"standard errors of chance), as the templates predicted: "
    f"the vectors have learned which slot a lexicon word fills, not which way it points."
)

# %% [markdown]
# ### Why pooled orientation does so well here
#
# Orientation's accuracy depends on how much a single co-occurrence with a seed word says
# and on how many co-occurrences are pooled. The generator makes both favourable.

# %% tags=["hide-input"]
e = ch06_finance.orientation_explained(r)
over = ch06_finance.orientation_over_corpora(r.config)
reference = ch06_finance.orientation_reference()
Markdown(
    f"Every filing holds exactly one seed word, and it is tied to the same hidden tone as the lexicon words: "
    f"the seed has the filing's tone in **{e.seed_agrees_with_tone:.3f}** of the filings and a lexicon word in "
    f"**{e.lexicon_agrees_with_tone:.3f}** of its occurrences. So the seed word of a lexicon word's filing "
    f"has that lexicon word's polarity in only **{e.lexicon_agrees_with_seed:.3f}** of its occurrences: "
    f"one co-occurrence is "
    f"only a weak vote. But orientation pools every occurrence of the word, and a lexicon word occurs "
    f"{e.occurrences[1]} times in the median ({e.occurrences[0]} to {e.occurrences[2]}). Since each filing has "
    f"one seed, $\\operatorname{{SO}}(w) > 0$ says, up to smoothing, that the share of $w$'s occurrences that "
    f"sit in filings with a positive seed exceeds {e.positive_seed_share:.2f}, the share of all filings whose "
    f"seed is positive. For a positive word that share is {e.with_positive_seed[0]:.3f} on average, for a "
    f"negative word {e.with_positive_seed[1]:.3f}. If each word's occurrences fell independently at these rates, "
    f"a sign test per word would be right **{e.predicted_accuracy:.3f}** of the time on average.\n\n"
    f"The score is a count out of {n_lex} words, so it moves in steps of {1 / n_lex:.3f} and varies between "
    f"corpora. Over the {over.size} corpora that the same settings write with seeds {min(ch06_finance.ORIENTATION_SEEDS)} "
    f"to {max(ch06_finance.ORIENTATION_SEEDS)}, it ranges from **{over.min():.3f}** to **{over.max():.3f}** (median "
    f"{np.median(over):.3f}); the book's corpus, chosen on its counts alone, "
    + ("sits at the top. " if r.orientation.accuracy >= over.max() else
       f"scores {r.orientation.accuracy:.3f}. ")
    + f"The finance case study this book follows "
    f"([where the book comes from](../references.html#where-the-book-comes-from)) "
    f"reports {reference:.3f}, {round(reference * n_lex)} of {n_lex} words, on its own corpus of filings. "
    + (f"That is below every corpus of our generator, so that corpus must make a seed co-occurrence less "
       f"informative than ours does: seeds that follow the tone less closely, or fewer occurrences per word, both "
       f"lower the score (Exercise 2). Its settings are not available to us, so which of these it was, and the "
       f"exact size of the gap, remain unexplained."
       if reference < over.min() else
       f"That is within the range of our generator's corpora, so the difference from the book's "
       f"{r.orientation.accuracy:.3f} is the corpus-to-corpus variation of a score counted on {n_lex} words.")
)

# %% [markdown]
# ### One occurrence at a time
#
# A pooled score says what a word means across the filings. What does the text around one
# occurrence say? In **lexicon-neighbour voting**
# ([`mlm_book.finance.voting`](../api/mlm_book.finance.voting.html)), the other lexicon
# words near an occurrence vote on its polarity. Only different words vote, and only from
# the same filing. Distance is counted in words, with `[SEP]` not counted. A tie, including
# the case of no voter at all, scores one half; the second column sets ties aside.

# %%
ch06_finance.voting_table(r)

# %%
show(ch06_finance.figure_voting(r))

# %% [markdown]
# One vote at any window (in words; `None` is the whole filing):

# %%
lexicon_vote(r.corpus, window=16)

# %% tags=["hide-input"]
v8, v32, vdoc = r.votes
Markdown(
    f"Within {v8.window} words the vote is right **{v8.accuracy:.3f}** of the time, within {v32.window} words "
    f"**{v32.accuracy:.3f}**, and over the whole filing **{vdoc.accuracy:.3f}**, against "
    f"**{r.orientation.accuracy:.3f}** for orientation pooled over all filings. Even the filing's seed word, "
    f"the best single cue the generator writes, agrees with an occurrence only {e.lexicon_agrees_with_seed:.3f} "
    f"of the time. A lexicon word's polarity is a fact about the filings in aggregate; the sentence it sits in "
    f"barely writes it down."
)

# %% [markdown]
# %% [markdown]
# ## What this chapter shows

# %% tags=["hide-input"]
Markdown(
    f"Two of the three questions have answers that a one-vector reader cannot reach: *kestrel*'s type "
    f"(static cap {r.kestrel_cap.accuracy:.3f}) and the news a direction word or verb reports (static cap "
    f"{r.polarity_cap.accuracy:.3f}) are written in the sentence, a few tokens away, not in the word. Skip-gram "
    f"vectors do not even reach the per-alias cap on company/product typing ({r.typing.accuracy:.3f} against "
    f"{r.alias_cap.accuracy:.3f}): a held-out alias's majority is not written in the other aliases. The third "
    f"question, whether *strong* is positive, is not written in the sentence at all: neither skip-gram vectors "
    f"({r.lexicon_probe.accuracy:.3f}) nor neighbouring lexicon words ({r.votes[0].accuracy:.3f} within "
    f"{r.votes[0].window} words) recover it, and only pooling co-occurrences over all filings does "
    f"({r.orientation.accuracy:.3f}). How the reading of a token is placed in its window matters too: read at "
    f"the nearest centre, the position alone types *kestrel* {r.position_reader['nearest-centre']:.3f} of the "
    f"time. [Chapter 7](07_filing_encoder.html) asks the same three questions of a contextual encoder."
)

# ## Exercises
#
# **Exercise 1.** Suppose other filers never closed on the Kestrel turbine
# (`kestrel_product_share = 0`, every other setting and the corpus seed unchanged). What is
# the static cap on *kestrel* now? Does a reader with one vector for *kestrel* understand
# more than before?

# %% tags=["hide-input"]
no_borrowed = generate_corpus(replace(settings, kestrel_product_share=0.0), np.random.default_rng(r.config.corpus_seed))
cap = word_cap(no_borrowed, "kestrel")
answer(f"`word_cap(generate_corpus(replace(settings, kestrel_product_share=0.0), rng), \"kestrel\")` gives "
       f"**{cap.accuracy:.3f}**: {cap.counts[0, 0]} company and {cap.counts[0, 1]} product mentions (the "
       f"products left are Kestrel's own closing sentences), against {r.kestrel_cap.accuracy:.3f} in the book's "
       f"corpus. The one-vector reader understands nothing more; it still gives every occurrence the same answer. "
       f"The cap went up only because the labels became lopsided. A static cap measures the imbalance of a "
       f"word's uses, which is why the book looks at *kestrel*, the one balanced alias, rather than at the "
       f"pooled cap alone.")

# %% [markdown]
# **Exercise 2.** Let the seed word follow the filing's tone less closely
# (`seed_tone_agreement = 0.6`). How informative is one co-occurrence now, and what does
# pooled semantic orientation score?

# %% tags=["hide-input"]
loose = generate_corpus(replace(settings, seed_tone_agreement=0.6), np.random.default_rng(r.config.corpus_seed))
loose_e = ch06_finance.orientation_explained(corpus=loose)
answer(f"The seed of an occurrence's filing now has the occurrence's polarity "
       f"**{loose_e.lexicon_agrees_with_seed:.3f}** of the time (against {e.lexicon_agrees_with_seed:.3f}), and "
       f"orientation gets **{semantic_orientation(loose).accuracy:.3f}** of the signs right (against "
       f"{r.orientation.accuracy:.3f}); the binomial model predicts {loose_e.predicted_accuracy:.3f}. Pooling "
       f"still helps, but a weaker vote needs many more occurrences per word to settle the sign. "
       f"(`ch06_finance.orientation_explained(corpus=...)` computes the rates for any corpus.)")

# %% [markdown]
# **Exercise 3.** Where does *weak* rank among the nearest skip-gram neighbours of
# *strong*, and how many of *strong*'s ten nearest words are lexicon words? What does that
# say about what the window saw?

# %% tags=["hide-input"]
ids, cosines = cosine_neighbours(r.skipgram.input_vectors, r.vocabulary.lookup("strong"), r.vocabulary.size - 3,
                                 exclude=(UNK_ID, SEP_ID))
ranked = [r.vocabulary.words[i] for i in ids]
top = ranked[:10]
answer(f"*weak* is neighbour number **{ranked.index('weak') + 1}** of *strong*, at cosine "
       f"{cosines[ranked.index('weak')]:.3f}. Of the ten nearest, **{sum(w in LEXICON for w in top)}** are lexicon "
       f"words, {sum(LEXICON.get(w, 0) < 0 for w in top)} of them negative: "
       f"{', '.join(top)}. The vectors know that *strong* is an evaluative adjective, because the window sees the "
       f"slot it fills; they do not know which way it points, because positive and negative words fill the same "
       f"slots with the same neighbours.")

# %% [markdown]
# ## Claims

# %% tags=["hide-input"]
chapter_summary(verify(claims=ch06_finance.CLAIMS))
