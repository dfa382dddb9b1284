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
# # Chapter 8 — Two sentences at once: next-sentence prediction, the CLS vector and fine-tuning
#
# The masked-LM objective is half of what BERT was trained on
# ([Devlin et al. 2019](../references.html#devlin-2019)). The other half reads two
# sentences at once and asks whether the second followed the first in the corpus. That
# second task gave BERT its input format, `[CLS] A [SEP] B [SEP]` with a *segment*
# embedding for each half, and a vector, the one at `[CLS]`, that every later task reads.
# Then the pre-trained encoder is *fine-tuned*: a small head on top, trained on labelled
# examples of the task at hand.
#
# Each of these choices came with a reason. Next-sentence prediction (NSP) was meant to teach
# the model how sentences connect; the `[CLS]` vector is the one BERT's classifiers are
# fine-tuned from, and although BERT's authors note that without fine-tuning it is not a
# meaningful sentence representation (it was trained with NSP), it is often read frozen as
# a summary of the sequence; and pre-training was meant to make labelled data go further,
# the promise of *transfer learning*: what a model learns on one task (filling blanks in
# unlabelled text) carries over to another (a classifier fine-tuned on a few labels). NSP's
# value is disputed: BERT's own ablation found that pre-training without it hurt several
# tasks, RoBERTa's found that dropping it did not
# ([Liu et al. 2019](../references.html#liu-2019)), and ALBERT replaced it
# ([Lan et al. 2020](../references.html#lan-2020)). This chapter tests each reason on the
# filings of [chapter 6](06_finance.html), where the generator knows every sentence's
# filing, company and news, so every question has a checkable answer; and it builds from
# the same facts a task the pair input was made for, deciding whether one sentence entails
# or contradicts another.

# %%
import numpy as np

from mlm_book.experiments import ch08_inference as nli  # the entailment task (natural language inference)
from mlm_book.experiments import ch08_pairs as ch8  # pre-training on pairs, probes, fine-tuning
from mlm_book.experiments.ch06_finance import results as filings
from mlm_book.figures import show
from mlm_book.finance.world import COMPANIES
from mlm_book.ledger import chapter_summary, verify
from mlm_book.nn import pairs
from mlm_book.report import Markdown, answer, table

words = filings().vocabulary.words  # chapter 6's vocabulary: every encoder here reads it
test = ch8.labelled_sentences(ch8.TEST_SEED)  # the held-out corpus, each sentence with its gold facts
nsp_model = ch8.pretrain(ch8.VARIANTS["nsp"])  # the book-seed MLM + NSP encoder, read from the store
config = nsp_model.config

# %% [markdown]
# ## The input: three tables, summed
#
# A pair is laid out as `[CLS]`, the first sentence, `[SEP]`, the second, `[SEP]`, then
# `[PAD]` up to the encoder's length. Every slot also carries a segment id: 0 for `[CLS]`,
# A and the first `[SEP]`, 1 for B and the last `[SEP]`. The input row of a slot is the sum
# of three learned rows,
#
# $$ x_0 = E[\tilde x_t] + P_t + S_{s_t} , $$
#
# a token row, a position row and a segment row. Here is a pair of consecutive sentences
# from a held-out filing, built by
# [`pairs.encode_pair`](../api/mlm_book.nn.pairs.html#mlm_book.nn.pairs.encode_pair):

# %%
# A is the fourth held-out sentence of at most 7 tokens that is not its filing's last; B follows it
a = int(np.flatnonzero(~test.last & (test.lengths <= 7))[3])
sentence_a = test.ids[a, :test.lengths[a]]
sentence_b = test.ids[a + 1, :test.lengths[a + 1]]
tokens, segments = pairs.encode_pair(sentence_a, sentence_b, config)
used = int(np.sum(tokens != config.pad_id))
shown = ["[CLS]" if t == config.cls_id else words[t] for t in tokens[:used]]
table(["slots", "tokens", "segment"],
      [[f"{k}", token, int(segments[k])] for k, token in enumerate(shown)]
      + [[f"{used} – {config.encoder.length - 1}", "[PAD]", 0]])

# %% tags=["hide-input"]
shapes = {name: nsp_model.params[name].shape for name in ("E", "P", "S", "cls", "nsp.W")}
Markdown(
    f"`[CLS]` is one more input-only id ({config.cls_id}, after `[MASK]` = {config.mask_id} and `[PAD]` = "
    f"{config.pad_id}) with its own row; like them it is never a prediction target. The segment table $S$ has "
    f"just {shapes['S'][0]} rows of width {shapes['S'][1]}, and the NSP head is one {shapes['nsp.W'][0]} × "
    f"{shapes['nsp.W'][1]} matrix with a bias: "
    f"$p(\\text{{next}} \\mid A, B) = \\operatorname{{softmax}}(h_{{\\mathrm{{CLS}}}} W_{{\\mathrm{{NSP}}}} + b)$, "
    f"read from the last layer at `[CLS]` after the final LayerNorm (BERT's released code puts a dense layer with "
    f"a tanh, its *pooler*, between the two). The blocks are the book's, unchanged "
    f"([`mlm_book.nn.pairs`](../api/mlm_book.nn.pairs.html)); every new gradient is checked against central "
    f"differences in float64, and with both segment rows at zero and no `[CLS]` the pair encoder's loss and "
    f"gradients equal the encoder's of [chapter 2](02_objective.html) to $10^{{-12}}$."
)

# %%
show(ch8.figure_input(a))

# %% [markdown]
# ## Two pre-trainings at equal steps
#
# Both encoders have the filing encoder's shape (width 64, 4 heads, 2 pre-LN blocks, 32
# slots) and recipe (AdamW, peak rate $10^{-2}$, the same warm-up share, a cosine to 2 %,
# total decay 0.5), and both see BERT's channel at the real tokens; `[CLS]`, `[SEP]` and
# `[PAD]` are never selected. They differ in what a training sequence is:
#
# * **MLM + NSP** (BERT): `[CLS] A [SEP] B [SEP]`, where B is the sentence after A in its
#   filing for half the pairs and a sentence of *another* filing for the other half. The
#   loss is the masked-LM cross-entropy plus the NSP cross-entropy.
# * **MLM, packed** (after RoBERTa's FULL-SENTENCES): `[CLS]` and then 31 contiguous tokens
#   from a sentence start, running on over sentence and filing boundaries, one segment,
#   masked-LM loss alone. RoBERTa packs *whole* sentences up to its length and puts an extra
#   separator at a document boundary; here a sequence ends wherever its 31 tokens end, even
#   mid-sentence, and a filing boundary is marked only by the `[SEP]` that ends every
#   sentence. RoBERTa also changed how much it trained: batches of 8,000 sequences against
#   BERT's 256, and many more of them. Both runs here keep one batch size and one number
#   of steps, so that dropping next-sentence prediction is the only difference between
#   them.
#
# A third run, **MLM, packed, all `[MASK]`**, is the packed one with every selected token
# shown as `[MASK]` (none random, none kept); it comes back at the end of the chapter.

# %% tags=["hide-input"]
setup = ch8.VARIANTS["nsp"]
train = setup.train_config()
Markdown(
    f"**How long.** Each encoder takes **{setup.steps} steps** of {setup.batch_size} sequences of "
    f"{setup.length} slots, a third of the filing encoder's 3000 steps. That number was set by the chapter's "
    f"compute budget before anything was measured: {len(ch8.VARIANTS)} pre-trainings at {len(ch8.SEEDS)} seeds "
    f"each. It is short, and the loss curves below are still falling when it ends. To see what a longer "
    f"pre-training changes, the fine-tuning section also starts from chapter 7's encoders, trained for "
    f"3000 steps on windows of the same filings. **Seeds.** Every learned number is given for the book's seed "
    f"and, in brackets, as mean ± sd over {len(ch8.SEEDS)} seeds (initialisation, batch order and the "
    f"labelled sets; the corpora and every test set are fixed)."
)

# %%
show(ch8.figure_losses())

# %%
ch8.mlm_table()

# %% tags=["hide-input"]
nsp_pairs, packed_packed = ch8.band("nsp", "mlm/pairs"), ch8.band("packed", "mlm/packed")
nsp_packed, packed_pairs = ch8.band("nsp", "mlm/packed"), ch8.band("packed", "mlm/pairs")
Markdown(
    f"Masked-LM cross-entropy (nats) at a fixed corruption of held-out text, in both formats (book seed). On "
    f"pairs the MLM + NSP encoder scores **{nsp_pairs[0]:.3f}** against {packed_pairs[0]:.3f} for the packed one; "
    f"on packed text the packed encoder scores **{packed_packed[0]:.3f}** against {nsp_packed[0]:.3f}. "
    + ("Each is the better of the two on the format it was trained on, and neither is better everywhere: at "
       "equal steps, the format a model reads is part of what it learns. "
       if nsp_pairs[0] < packed_pairs[0] and packed_packed[0] < nsp_packed[0] else "")
    + "The two numbers of one encoder are not comparable with each other: a pair is two short sentences, "
    "while packed text runs across sentences and filings."
)

# %% [markdown]
# ## What next-sentence prediction learns here
#
# The NSP head is tested on pairs of the held-out corpus in four conditions: B really
# follows A; the two are swapped, so B comes *before* A; B is another sentence of A's own
# filing; B comes from another filing, as in training. A model that reads how sentences
# connect should say "next" only in the first condition. A model that reads only the
# *topic* (which company, which year, good or bad) should say "next" whenever both
# sentences come from the same filing: in the first three conditions.

# %%
ch8.nsp_table()

# %%
show(ch8.figure_nsp())

# %% tags=["hide-input"]
next_, swapped = (ch8.band("nsp", f"nsp/{k}")[1] for k in ("next", "swapped"))
accuracy_other, accuracy_same = ch8.nsp_balanced_accuracy("other"), ch8.nsp_balanced_accuracy("same")
Markdown(
    f"With negatives from another filing, the balanced accuracy of the head is **{accuracy_other:.3f}** (the "
    f"mean over seeds of the true-next and the other-filing shares); with negatives from the same filing it is "
    f"**{accuracy_same:.3f}**. "
    + ("The two are nearly equal: what little the head learned does not depend on whether B shares A's filing, "
       "so it is not the filing's topic either. "
       if abs(accuracy_other - accuracy_same) < 0.03 else
       "The head separates other-filing negatives better than same-filing ones: part of what it learned is the "
       "filing's topic. ")
    + f"Swapped pairs are called \"next\" {swapped:.2f} of the time against {next_:.2f} for the true order. "
    f"The NSP loss ended at {nsp_model.nsp_losses[-100:].mean():.3f} nats against ln 2 = {np.log(2):.3f}: after "
    f"{setup.steps} steps the head has learned little.\n\n"
    f"Why so little? Because in these filings there is little to learn. The generator opens a filing with its "
    f"opening line and the company description, may close it with a product sentence, and puts every sentence "
    f"in between in a uniformly random order: within a filing, which sentence follows which carries no signal "
    f"except at those three places. Across filings the signal is the topic, and the topic is faint in a single sentence: only the "
    f"sentences that name the company give the filer away, and a lexicon word agrees with its filing's tone only "
    f"{filings().config.corpus.lexicon_tone_agreement:g} of the time. On real text the topic is loud (two "
    f"random Wikipedia sentences rarely share one), which is how BERT's NSP reached high accuracy. Whether it "
    f"taught the model anything later tasks needed is disputed. BERT's ablation found that pre-training without "
    f"NSP hurt QNLI, MNLI and SQuAD; RoBERTa's found that dropping it matched or slightly improved the results, "
    f"but its runs without NSP also changed the input, from pairs of segments to whole sentences packed up to "
    f"the length, and its authors suggested that BERT's ablation may have removed the loss while keeping the "
    f"pair input. The two ablations differ in more than the loss, so they do not settle it. ALBERT replaced NSP "
    f"with sentence-*order* prediction, whose negatives are exactly the swapped pairs above, so that topic "
    f"cannot solve it."
)

# %% [markdown]
# The head can be asked about any pair. Here it reads the pair of the input section, the
# same pair swapped, and A followed by a sentence of another filing; change `a` (above) or
# `other` and rerun:

# %%
other = int(np.flatnonzero(test.filing != test.filing[a])[0])  # the first held-out sentence of another filing
firsts, seconds = [a, a + 1, a], [a + 1, a, other]
tokens, segments = ch8.pair_inputs(test, firsts, seconds, config)
p_next = pairs.nsp_probabilities(nsp_model.params, config, tokens, segments)[:, 0]
sentence = lambda k: " ".join(words[t] for t in test.ids[k, :test.lengths[k]])  # noqa: E731
table(["A", "B", "p(B is next)"],
      [[sentence(i), sentence(j), f"{p:.2f}"] for i, j, p in zip(firsts, seconds, p_next)])

# %% [markdown]
# ## What the CLS vector holds
#
# BERT fine-tunes its classifiers from the `[CLS]` vector, and its authors warn that, trained
# with NSP, that vector is not a meaningful sentence representation until it is fine-tuned. It is nonetheless often read frozen, on the view that NSP, whose head reads it,
# teaches it to summarise the sequence; that view is what is tested here. A linear probe
# (chapter 5's ridge-logistic) is trained on the last-layer vectors of single sentences,
# `[CLS] s [SEP]`, from the labelled pool corpus and tested on the held-out corpus, for two
# facts about the whole sentence: which company's filing it comes from, and, for a news
# sentence, whether the news is good or bad. The same probe reads the mean of the token
# vectors instead of `[CLS]`.

# %%
ch8.probe_table()

# %%
show(ch8.figure_probes())

# %% tags=["hide-input"]
company = {v: ch8.band(v, "probe/company/cls")[1] for v in ch8.VARIANTS}
company_mean = {v: ch8.band(v, "probe/company/mean")[1] for v in ch8.VARIANTS}
news = {v: ch8.band(v, "probe/news/cls")[1] for v in ch8.VARIANTS}
majority = float(np.bincount(test.filer).max() / test.count)
Markdown(
    f"The company is hard to read from one sentence (a filer holds at most {majority:.3f} of the held-out "
    f"sentences): `[CLS]` gives **{company['nsp']:.3f}** after MLM + NSP and **{company['packed']:.3f}** after "
    f"packed MLM alone (means over seeds), the mean of the tokens {company_mean['nsp']:.3f} and "
    f"{company_mean['packed']:.3f}. "
    + ("NSP did not make `[CLS]` the better summary of the company. "
       if company["nsp"] <= company["packed"] + 0.02 else
       "NSP made `[CLS]` a better summary of the company. ")
    + f"The news of a sentence is easier: `[CLS]` gives {news['nsp']:.3f} and {news['packed']:.3f}. Without NSP, "
    f"`[CLS]` still collects the sentence, because attention mixes every slot into every other; what a frozen "
    f"`[CLS]` holds is set more by the masked-LM objective than by the head above it."
)

# %% [markdown]
# A probe takes seconds to refit.
# [`news_probe`](../api/mlm_book.experiments.ch08_pairs.html#mlm_book.experiments.ch08_pairs.news_probe)
# reads the news sentences of the pool corpus through a stored encoder, fits the
# ridge-logistic probe and scores it on the held-out news sentences; change the
# pre-training, the pooling or the seed (one of `ch8.SEEDS`) and rerun:

# %%
round(ch8.news_probe(variant="packed", pooling="cls", seed=ch8.SEEDS[0]), 3)

# %% [markdown]
# ## Fine-tuning for the news of a sentence
#
# The task: is a news sentence good or bad news? The answer depends on two words at once,
# the aspect and the direction ("costs rose" is bad, "revenue rose" good), so no single word
# decides it. A head $p(y \mid x) = \operatorname{softmax}(u W_C + b_C)$ reads a pooled
# vector $u$ of the last layer, either `[CLS]` or the mean of the token vectors. What trains
# is one of:
#
# * **frozen**: only the head, fitted to convergence (the ridge-logistic probe);
# * **top block**: the head, the last block and the final LayerNorm;
# * **full**: everything.
#
# Labelled sets of 16 to 1024 news sentences are drawn from the pool corpus (a different
# set at each seed), the test set is every news sentence of the held-out corpus. Every
# fine-tuning run takes the same schedule, fixed in advance: 200 AdamW steps of 32
# sentences at peak rate $10^{-3}$ with a tenth of warm-up and a cosine to zero, decay 0.01.
# The comparison that matters is with the **same encoder trained from scratch** on the labels
# alone, with the same schedule.

# %% tags=["hide-input"]
pool = ch8.pool_sentences()
n_test = int((test.news != 0).sum())
n_pool = int((pool.news != 0).sum())
Markdown(f"The pool corpus ({ch8.POOL_DOCUMENTS} filings) has {n_pool} news sentences, the held-out corpus "
         f"{n_test}; test accuracies below are over those {n_test}. MLM + NSP encoder:")

# %%
ch8.curve_table("nsp")

# %% [markdown]
# The packed encoder and chapter 7's encoder, read through the frozen probes and full
# fine-tuning of the `[CLS]` head:

# %%
ch8.curve_table("packed")

# %%
ch8.curve_table("filing encoder")

# %%
show(ch8.figure_curves())

# %% tags=["hide-input"]
gaps = {source: {size: ch8.transfer_gain(source, size) for size in ch8.SIZES}
        for source in ("nsp", "packed", "filing encoder")}
top_gap = ch8.band("nsp", "curve/full/cls/1024")[1] - ch8.band("nsp", "curve/top/cls/1024")[1]
head_gap = ch8.band("nsp", "curve/full/cls/1024")[1] - ch8.band("nsp", "curve/full/mean/1024")[1]
frozen_gap = ch8.band("nsp", "curve/full/cls/1024")[1] - max(ch8.band("nsp", f"curve/frozen/{p}/1024")[1]
                                                             for p in ("cls", "mean"))
Markdown(
    "**Transfer.** Mean gain of full fine-tuning over training from scratch, same seed and labelled set, in "
    "accuracy points:\n\n"
    + "\n".join(f"* {name}: " + ", ".join(f"{size} labels {round(100 * gaps[source][size], 1) + 0.0:+.1f}" for size in ch8.SIZES)
                for source, name in (("nsp", "MLM + NSP"), ("packed", "MLM, packed"), ("filing encoder", "chapter 7's encoder")))
    + "\n\n"
    + ("Pre-training buys nothing here: no encoder gains two points anywhere on average"
       if max(max(g.values()) for g in gaps.values()) < 0.02 else "The gains are small and uneven")
    + (f", and the two short pre-trainings cost {-100 * max(gaps['nsp'][64], gaps['packed'][64]):.1f} to "
       f"{-100 * min(gaps['nsp'][64], gaps['packed'][64]):.1f} points at 64 labels (why a fresh encoder does "
       f"better there is not tested here). "
       if max(gaps["nsp"][64], gaps["packed"][64]) < -0.02 else ". ")
    + "The task is templated: a few aspect words and a few direction words decide it, and a small transformer "
    "trained from scratch finds them from a few hundred labels. What a pre-trained encoder brings, knowledge of "
    "the words and their contexts, is worth most when the labels are few and the task needs words the labelled "
    "set does not show; with 16 labels no encoder here learns a rule that takes two words at once, and with a "
    "few hundred every encoder does. The usual promise of transfer learning is a statement about the "
    "sizes of real tasks and real vocabularies, and this world is too small to show it.\n\n"
    f"**Which parameters.** Training only the top block and the final LayerNorm leaves {100 * top_gap:.1f} points "
    f"at 1024 labels against full fine-tuning, and the frozen encoder with its best head {100 * frozen_gap:.1f}: "
    f"in these encoders the lower block "
    f"still has to learn to put the aspect and the direction together. **Which head.** `[CLS]` and the mean of "
    f"the token vectors end {100 * abs(head_gap):.1f} points apart after full fine-tuning at 1024 labels: once "
    f"the encoder trains, the head's input is whatever it is trained to be."
)

# %% [markdown]
# Any of these runs can be repeated in a few seconds.
# [`news_fine_tune`](../api/mlm_book.experiments.ch08_pairs.html#mlm_book.experiments.ch08_pairs.news_fine_tune)
# draws the labelled set of a size at a seed, fine-tunes a stored encoder with the
# chapter's schedule and scores it on the held-out news sentences; change the pre-training,
# the number of labels, the mode (`"full"` or `"top"`), the head or the seed (one of
# `ch8.SEEDS`) and rerun:

# %%
round(ch8.news_fine_tune(variant="nsp", size=64, mode="full", pooling="cls", seed=ch8.SEEDS[0]), 3)

# %% [markdown]
# ## Two sentences, one verdict: entailment
#
# BERT's pair input was built for tasks like natural language inference: given a premise A
# and a hypothesis B, does A entail B, contradict it, or neither? MultiNLI
# ([Williams et al. 2018](../references.html#williams-2018)), the MNLI of BERT's
# benchmarks, pairs premises taken from text of ten genres with hypotheses written by crowd
# workers. Human datasets decide the label "as a typical reader would"; here the facts
# decide it.

# %% tags=["hide-input"]
short, long = (settings.steps for settings in nli.SCHEDULES.values())
neutral_kinds = [share for k, share in enumerate(nli.KIND_SHARES) if nli.RELATION_OF_KIND[k] == 2]
Markdown(
    f"A **fact sentence** names its company and reports one aspect moving one way "
    f"(\"{nli.fact_sentences(nli.TEST_SEED).words[2]}\"). "
    f"The generator only writes rises, so in two fresh corpora of chapter 6's configuration every direction word "
    f"becomes, with probability {nli.FALL_SHARE:g}, one of {len(nli.FALLING_WORDS)} falling verbs "
    f"({', '.join(f'*{w}*' for w in nli.FALLING_WORDS)}), and the fact reverses with it. For a pair of fact "
    f"sentences:\n\n"
    f"* **entails**: B states A's fact again: same company, same aspect, same direction;\n"
    f"* **contradicts**: same company and aspect, the other direction;\n"
    f"* **neutral**: B is about another aspect of A's company, or about A's aspect at another company "
    f"({' and '.join(f'{100 * share:.0f} %' for share in neutral_kinds)} of the pairs).\n\n"
    f"The three labels come equally often. The classifier is the `[CLS]` head of the last section, fully "
    f"fine-tuned on {nli.LABELLED_PAIRS} labelled pairs (a fresh draw at each seed) from the MLM + NSP encoder, "
    f"and from the same encoder untrained, under two schedules: the news task's {short} steps, and {long // short} "
    f"times as many. (The second was added after a trial run at one seed, before the runs below, showed the first "
    f"to be too short; nothing else was varied.)"
)

# %%
nli.accuracy_table()

# %% tags=["hide-input"]
facts = nli.fact_sentences(nli.TEST_SEED)
test_pairs = nli.held_out_pairs()
accuracy = {(source, schedule): nli.accuracies(source, schedule) for source in nli.SOURCES
            for schedule in nli.SCHEDULES}
blind = float(np.mean(nli.company_blind_predictions() == test_pairs.label))
lopsided = sum(int(np.sum(nli.answer_shares(source, "200 steps").min(axis=1) < 0.05)) for source in nli.SOURCES)
gain = accuracy[("nsp", "1000 steps")].mean() - accuracy[("scratch", "1000 steps")].mean()
Markdown(
    f"The test corpus has {facts.count} fact sentences and the test draw {test_pairs.a.size} pairs. Chapter 6's "
    f"vocabulary never saw a falling number: every falling verb reaches the encoder as `[UNK]`, the token it "
    f"also uses for a rare place or person. So a fall is visible to the model only as an unknown word in the "
    f"slot after the aspect.\n\n"
    f"With the news task's 200 steps neither start learns the task: accuracies scatter from "
    f"{min(accuracy[(s, '200 steps')].min() for s in nli.SOURCES):.2f} to "
    f"{max(accuracy[(s, '200 steps')].max() for s in nli.SOURCES):.2f} around the chance level of 1/3, and "
    f"in {lopsided} of the {2 * len(nli.SEEDS)} runs one of the three answers is given to fewer than 5 % of "
    f"the pairs. A relation between two sentences takes longer to find "
    f"than a property of one. With 1000 steps the pre-trained encoder reaches "
    f"{accuracy[('nsp', '1000 steps')].mean():.3f} and the untrained one "
    f"{accuracy[('scratch', '1000 steps')].mean():.3f}, a gain of {100 * gain:.1f} points from pre-training. "
    f"Both stay below a reader that never looks at the company (same aspect: entails if the directions agree, "
    f"contradicts if not; another aspect: neutral), which scores **{blind:.3f}**."
)

# %%
nli.kind_table()

# %%
show(nli.figure_inference())

# %% [markdown]
# The right panel for another start or schedule, from the stored predictions of every seed
# (here the untrained start after 1000 steps):

# %%
scratch_shares = nli.confusion(source="scratch", schedule="1000 steps")
table(["pairs", *(f"called {name}" for name in nli.RELATIONS)],
      [[f"B {kind}", *(f"{100 * share:.0f} %" for share in row)] for kind, row in zip(nli.KINDS, scratch_shares)])

# %% tags=["hide-input"]
agreement = nli.direction_agreement("nsp", "1000 steps")
shares = nli.confusion("nsp", "1000 steps")
restates, reverses, _, other_company = nli.KIND_SHARES
same_company = (restates + reverses) / (restates + reverses + other_company)
blind_wrong = other_company
by_overlap = nli.error_by_overlap("nsp", "1000 steps")
flat = float(np.abs(np.diff(by_overlap[[0, 1, 3]], axis=1)).max())
Markdown(
    "**What it gets wrong, and why.** "
    + ("No run ever calls a restatement a contradiction or a reversal an entailment"
       if shares[0, 1] == 0 and shares[1, 0] == 0 else
       f"A restatement and a reversal are almost never confused ({100 * shares[0, 1]:.1f} % and "
       f"{100 * shares[1, 0]:.1f} %)")
    + f": whether the direction slots agree is a "
    f"local comparison of two tokens, one of them `[UNK]` or not. The failures are the neutral pairs, and "
    f"above all the pairs about **another company**: the classifier calls them entails or contradicts "
    f"{100 * (1 - shares[3, 2]):.0f} % of the time. It answers them by the directions alone: when the two "
    f"directions agree it says *entails* ({agreement[:, 0].mean():.2f} of those pairs, mean over seeds), "
    f"when they differ *contradicts* ({agreement[:, 1].mean():.2f}). It has learned the company-blind reader's "
    f"rule, and learned it only partly (another aspect is called neutral just "
    f"{100 * shares[2, 2]:.0f} % of the time).\n\n"
    f"The training pairs invite exactly this. Among the pairs whose aspects match, "
    f"{100 * same_company:.0f} % are about the same company, so a rule that ignores the company is right on "
    f"all but {100 * blind_wrong:.0f} % of the data, and telling {len(COMPANIES)} company names apart across two "
    f"sentences is a harder thing to learn from {nli.LABELLED_PAIRS} examples than comparing two direction "
    f"slots. The overlap of words does not decide it either: other-company pairs share more words on average "
    f"than other-aspect pairs (the table above), and within a kind the pairs with more words in common are "
    f"not the ones it gets wrong: the error rate at lower and higher overlap differs by at most "
    f"{100 * flat:.0f} point{'' if round(100 * flat) == 1 else 's'} for three kinds, and for other-aspect pairs it is "
    f"{'lower' if by_overlap[2, 1] < by_overlap[2, 0] else 'higher'} at higher overlap "
    f"({100 * by_overlap[2, 1]:.0f} % against {100 * by_overlap[2, 0]:.0f} %). This is the shape of the failures found in real inference datasets: "
    f"a classifier fitted to pairs picks up whatever shortcut the way the pairs were made allows "
    f"([Gururangan et al. 2018](../references.html#gururangan-2018)), and a test built to break the shortcut "
    f"shows it ([McCoy et al. 2019](../references.html#mccoy-2019)); here the other-company pairs, a sixth "
    f"of the test set, are that test. The book seed's first wrong answers of each kind:"
)

# %%
nli.error_table()

# %% [markdown]
# ## No mask at fine-tuning
#
# The classifier reads clean sentences: `[MASK]` never occurs at fine-tuning or at test
# time. Chapter 2's Theorem 2 says what the 10 % random and 10 % kept tokens of BERT's
# channel buy: a selected position that stays visible is predicted from its own token (and
# a random token teaches the model to distrust what it sees), so the model learns to
# predict, and hence to represent, the tokens it can see. With every selected token shown
# as `[MASK]`, the loss never asks anything about a visible token's own identity. The
# packed encoder is compared with its all-`[MASK]` twin, everything else equal.

# %%
ch8.mismatch_table()

# %% [markdown]
# Each seed's masked-LM training loss over its last 100 steps, in nats (change the variant
# or the window):

# %%
[round(loss, 2) for loss in ch8.final_losses("all-mask", window=100)]

# %% tags=["hide-input"]
unigram = filings().counts.unigram_cross_entropy
kept_first, kept_last = ch8.plateau("packed")
masked_first, masked_last = ch8.plateau("all-mask")
farthest = max(abs(loss - unigram) for loss in ch8.final_losses("all-mask"))
scratch_1024 = ch8.band("scratch", "curve/full/cls/1024")[1]
full = {v: ch8.band(v, "curve/full/cls/1024")[1] for v in ("packed", "all-mask")}
frozen = {v: ch8.band(v, "curve/frozen/mean/1024")[1] for v in ("packed", "all-mask")}
Markdown(
    f"The all-`[MASK]` encoders did not get as far as the question. Their training loss falls from "
    f"{masked_first:.2f} to **{masked_last:.2f}** nats over the {setup.steps} steps (means over seeds), against "
    f"{unigram:.2f} for the filings' unigram (every seed ends within {farthest:.2f} nats of it): they are still "
    f"on the plateau where the model predicts word frequencies and ignores the context. The 80/10/10 encoders, with everything else equal, "
    f"leave that plateau after about half the steps and end at **{kept_last:.2f}** (the left panel of the loss "
    f"figure above). Downstream it shows everywhere: the frozen mean-pooled probe reads the news at "
    f"{frozen['packed']:.3f} against {frozen['all-mask']:.3f}, and full fine-tuning on 1024 labels reaches "
    f"{full['packed']:.3f} against {full['all-mask']:.3f}"
    + (f", below training from scratch ({scratch_1024:.3f}): a start on the plateau is worse than a random one."
       if full["all-mask"] < scratch_1024 - 0.01 else f" (from scratch: {scratch_1024:.3f}).")
    + "\n\n"
    f"So this experiment measures an effect of the channel on *training* rather than on fine-tuning, and at this "
    f"size and length only: {config.encoder.n_blocks} blocks of width {config.encoder.d_model}, {setup.steps} "
    f"steps. With no visible token ever a target, nothing rewards the model for carrying a "
    "token's identity through its own position, and the easiest task the 80/10/10 encoders have (copy the "
    "visible token, which Theorem 2 says is optimal at a kept position) does not exist. A plausible reading, "
    "not tested here, is that this copy signal is what lets a small encoder build, early in training, token "
    "representations that attention can then use.\n\n"
    "It is not a finding about all-`[MASK]` pre-training in general. BERT's own ablation of the channel "
    "([Devlin et al. 2019](../references.html#devlin-2019), appendix C.2) pre-trained with every selected token "
    "shown as `[MASK]` and fine-tuned about as well as with 80/10/10; only the feature-based use of its vectors, "
    "without fine-tuning, did somewhat worse. [Wettig et al. (2023)](../references.html#wettig-2023) likewise "
    "found no downstream benefit of the 80/10/10 split over showing `[MASK]` alone. Whether "
    "the all-`[MASK]` encoders here would leave the plateau with more steps, and what the mismatch would then "
    "cost at fine-tuning, these runs do not say."
)

# %% [markdown]
# ## Exercises
#
# **Exercise 1.** What is the longest pair of consecutive sentences in the filings, in slots,
# and how much room does the encoder's length leave? What does `encode_pair` do with a pair
# that does not fit?

# %% tags=["hide-input"]
longest = ch8.longest_pair()
try:
    pairs.encode_pair(np.full(20, 2), np.full(12, 2), config)
except ValueError as error:
    message = str(error)
answer(f"The longest pair of consecutive sentences takes **{longest}** slots with `[CLS]` and the two `[SEP]`s, "
       f"against the encoder's {config.encoder.length}: no pair is ever cut, and NSP never sees a truncated "
       f"sentence. A pair that does not fit is refused, not cut: `{message}`.")

# %% [markdown]
# **Exercise 2.** How many parameters does reading pairs add to the encoder (the `[CLS]`
# row, the segment table and the NSP head), and what share of the encoder is that?

# %% tags=["hide-input"]
extra = sum(nsp_model.params[name].size for name in ("cls", "S", "nsp.W", "nsp.b"))
total = sum(value.size for value in nsp_model.params.values())
answer(f"`cls` ({nsp_model.params['cls'].size}), `S` ({nsp_model.params['S'].size}), `nsp.W` "
       f"({nsp_model.params['nsp.W'].size}) and `nsp.b` ({nsp_model.params['nsp.b'].size}): **{extra}** of "
       f"{total:,} parameters, {100 * extra / total:.2f} %. Everything NSP does, it does through the shared "
       f"blocks; its own parameters are a rounding error.")

# %% [markdown]
# **Exercise 3.** A reader who knew only the *filing* of each sentence, and nothing about
# order, would call a pair "next" exactly when both sentences come from the same filing.
# What balanced accuracy would that reader reach with other-filing negatives, and with
# same-filing negatives?

# %% tags=["hide-input"]
answer(f"With other-filing negatives it is perfect: **1.000** (every true pair shares a filing, no negative does). "
       f"With same-filing negatives it is **0.500**, the same verdict for every pair. The trained head reaches "
       f"{accuracy_other:.3f} and {accuracy_same:.3f}: far from the topic reader in the first condition, because "
       f"one sentence of a filing says little about which filing it is.")

# %% [markdown]
# ## Claims

# %% tags=["hide-input"]
chapter_summary(verify(claims=ch8.CLAIMS + nli.CLAIMS))
