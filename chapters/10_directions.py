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
# # Chapter 10 — Which way to read: the mask, the next word, and many languages
#
# A decoder such as GPT reads left to right and is trained to predict the next word. An
# encoder such as BERT reads the whole sentence and is trained to fill in masked words
# ([Devlin et al. 2019](../references.html#devlin-2019)). Why does the encoder need the mask,
# and what does reading both ways buy? On the book's HMM language both questions have exact
# answers, because every conditional either reader could learn is computable. The chapter
# measures them position by position, then turns to a question that comes with training one
# encoder on many languages: how often to show it each one.

# %%
import numpy as np

from mlm_book import artefacts
from mlm_book.artefacts import multilingual as multilingual_runs
from mlm_book.artefacts import next_token_measurements
from mlm_book.artefacts import replaced_tokens as replaced_runs
from mlm_book.artefacts.hmm_encoder import SETUP as hmm_setup
from mlm_book.directions import position_entropies, sense_by_position
from mlm_book.experiments import ch10_causal as readers
from mlm_book.experiments import ch10_directions as directions
from mlm_book.experiments import ch10_languages as languages
from mlm_book.experiments import ch10_replaced_tokens as replaced
from mlm_book.experiments import ch10_span_masking as spans
from mlm_book.figures import show
from mlm_book.hmm import default_hmm
from mlm_book.ledger import chapter_summary, verify
from mlm_book.readings import sense_probes
from mlm_book.report import Markdown, answer, seed_band

r = directions.results()       # the exact readers on the HMM: entropies and sense accuracies by position
e, senses = r.entropies, r.senses
trained = readers.results()    # the next-token readers, trained with and without the causal mask
span_result = spans.results()  # the exact optimum inside a hidden span

# %% [markdown]
# ## Two readers of one sentence
#
# A **left-to-right** reader predicts $x_i$ from the words before it, $P(x_i \mid x_{<i})$;
# on the HMM this is forward filtering. A **bidirectional** reader predicts it from every
# other word, $P(x_i \mid x_{-i})$; this is forward–backward's leave-one-out posterior,
# chapter 1's machinery. A masked LM in training sees neither exactly: the other positions
# went through BERT's channel, and Theorem 2 of chapter 2 gives its optimum at a `[MASK]`,
# $P(x_i \mid \tilde x_{-i})$. The quantity to compare is the expected entropy each faces at
# position $i$, the loss a perfect model of that kind would reach there.
#
# Three facts hold exactly.
#
# 1. **The chain rule.** $\log P(x) = \sum_i \log P(x_i \mid x_{<i})$ for every sentence, so
#    the left-to-right entropies add up to the entropy of the whole sentence: a left-to-right
#    model is a model of the language.
# 2. **Conditioning on more cannot hurt on average.** $x_{<i}$ is part of $x_{-i}$, so
#    $E\,H(x_i \mid x_{-i}) \le E\,H(x_i \mid x_{<i})$ at every position. The bidirectional
#    sum is the *erasure entropy* of [Verdú and Weissman (2008)](../references.html#verdu-2008);
#    it factorises nothing, which is why a masked LM is not by itself a model of the language
#    (chapter 3).
# 3. **At the last position the two readers see the same words**, so their conditionals are
#    equal sentence by sentence.

# %% tags=["hide-input"]
Markdown(
    f"The conditionals are exact for each sentence; what is sampled are the sentences: "
    f"{e.sequences:,} of {e.length} tokens, drawn once (seed {r.config.seed}), so each expectation carries a "
    f"standard error (at most {max(e.left_se.max(), e.both_se.max(), e.gap_se.max(), e.mask_se.max()):.4f} nats). "
    f"The [MASK] column uses BERT's channel: {100 * r.config.rho:.0f} % of positions selected, "
    f"{100 * r.config.mask:.0f} % of those masked and {100 * r.config.random:.0f} % replaced at random."
)

# %%
show(directions.figure_directions())

# %%
directions.entropy_table()

# %% tags=["hide-input"]
middle = e.length // 2
Markdown(
    f"The gap is largest at the first position, {e.gap[0]:.3f} nats: the left-to-right reader has nothing to go "
    f"on there but the marginal ({e.left[0]:.3f} nats, the entropy of one token), while the bidirectional reader "
    f"has the whole sentence to its right. Within a few positions the left-to-right reader has its bearings "
    f"({e.gap[1]:.3f} nats at position 2, {e.gap[2]:.3f} at position 3) and the gap settles near {e.gap[middle]:.2f} nats through the middle: what the words to the right still add. "
    f"Summed over the sentence, reading both ways saves {e.gap.sum():.2f} of {e.total_left:.2f} nats. The "
    f"left-to-right sum is the entropy of the sentence, as the chain rule says: the last row estimates the same "
    f"entropy directly, as the mean of $-\\log P(x)$, and the two agree within its standard error.\n\n"
    f"The picture is not symmetric. The bidirectional reader faces the same entropy at both edges "
    f"({e.both[0]:.3f} and {e.both[-1]:.3f}), the left-to-right reader does not ({e.left[0]:.3f} and "
    f"{e.left[-1]:.3f}). And the gap is an average: at position {middle + 1}, for "
    f"{100 * e.negative_gap_share[middle]:.1f} % of the sentences the bidirectional conditional is the flatter "
    f"one. A word to the right can make the reader less sure, only not on average.\n\n"
    f"A masked LM pays for its corruption: at a `[MASK]`, with the other words through BERT's channel, the "
    f"optimum faces {e.mask[middle]:.3f} nats in the middle against the clean bidirectional {e.both[middle]:.3f}, "
    f"still well below the left-to-right {e.left[middle]:.3f}."
)

# %% tags=["hide-input"]
longest = r.exact[-1].length
Markdown(f"The sampled numbers are checked against enumeration. For sentences of up to {longest} tokens every "
         f"sentence can be listed with its probability ({r.hmm.vocab_size ** longest:,} of them at length "
         f"{longest}), the expectations are differences of joint entropies, and the estimator's own per-sentence "
         f"code, run on every listed sentence, must give them to rounding:")

# %%
directions.exact_table()

# %% [markdown]
# The whole measurement is one call. A smaller run of it, which a reader can change and
# rerun (another length, fewer sentences, another seed), gives the left-to-right entropies,
# the bidirectional ones and the gap by position:

# %%
short_run = position_entropies(default_hmm(), length=8, sequences=2_000, rng=np.random.default_rng(1))
short_run.left.round(3), short_run.both.round(3), short_run.gap.round(3)

# %% [markdown]
# ## Why the encoder needs a mask
#
# Train the encoder as it is, with attention over the whole input, to predict the **next**
# word at every position. The next word is part of the input, so the optimal prediction at
# position $i$ is a point mass on $x_{i+1}$, read off one position over:
# $H(x_{i+1} \mid x_1, \dots, x_n) = 0$. The loss goes to zero by copying, and nothing about
# the language has to be learned. There are two ways out. A **causal mask** hides the right
# context, and the best possible loss is then the left-to-right entropy of the table. A
# **masked** objective keeps the right context and hides the word itself, and the best
# possible loss is the `[MASK]` column. The table shows how much lower that target lies
# through the middle of a sentence, and the sense of $w$ shows what it buys.
#
# The argument can be run. The book's HMM encoder (chapter 2) is trained again on the same
# sentences with next-token prediction as its loss: every position but the last predicts
# the word after it. It is trained twice, once reading the whole input (the **unmasked
# reader**) and once under the causal mask (the **causal reader**), each at the book's five
# seeds. The two readers have the same parameters, shape for shape; they differ only in the
# mask $M$ added to the attention scores before the softmax
# ([chapter 2](02_objective.html#a-trained-encoder-against-the-exact-posterior)): zero everywhere for the unmasked reader,
# $-\infty$ above the diagonal for the causal one. The recipe is chapter 2's with the loss replaced; the one change is the length of
# the run, fixed before any training:

# %% tags=["hide-input"]
base = hmm_setup.training
cfg = readers.training_config()
Markdown(
    f"{cfg.steps} Adam steps instead of {base.steps}, with the warm-up keeping its share ({cfg.warmup} steps) and "
    f"the weight decay its total (λ = {cfg.weight_decay:g}). A next-token step trains {hmm_setup.length - 1} "
    f"positions of each sentence where the masked LM trains {hmm_setup.rho * hmm_setup.length:.1f} "
    f"on average, so the shorter run still carries about "
    f"{cfg.steps * (hmm_setup.length - 1) / (base.steps * hmm_setup.rho * hmm_setup.length):.1f} "
    f"times the targets. Both readers are scored on {next_token_measurements.EVAL_SENTENCES:,} held-out sentences, against the "
    f"exact left-to-right surprisal $-\\log P(x_{{i+1}} \\mid x_{{\\le i}})$ of the same words, which no causal "
    f"reader can beat on average."
)

# %%
show(readers.figure_readers(trained))

# %%
readers.reader_table(trained)

# %% tags=["hide-input"]
book_causal, book_unmasked = trained.reader(True), trained.reader(False)
excess = trained.over_seeds(True, "excess")
copying = readers.collapse_steps(trained)
Markdown(
    f"The unmasked reader's held-out loss is {book_unmasked.loss:.3f} nats per word at the book's seed "
    f"({seed_band(trained.over_seeds(False, 'loss'), book=False)} over the seeds), "
    f"{100 * book_unmasked.loss / trained.exact:.1f} % of what the language leaves uncertain to a reader of the "
    f"words before. The causal reader lands {book_causal.excess:.4f} ± {book_causal.excess_se:.4f} nats above the "
    f"exact surprisal at the book's seed, and between {excess.min():.4f} and {excess.max():.4f} over the seeds: "
    f"it has learned the left-to-right conditionals of the language, the unmasked reader has learned to copy. "
    f"At first the unmasked reader's loss follows the causal reader's; it falls away only once copying takes over "
    f"(its 20-step mean drops below half the exact surprisal between step {copying.min()} and {copying.max()} "
    f"over the seeds)."
)

# %% [markdown]
# Where does the unmasked reader find the answer? A query at position $i$ that puts its
# weight on position $i+1$ reads the next word directly; the causal reader's weight there
# is exactly zero by construction. The map below averages the unmasked reader's attention
# weights over held-out sentences for the head that looks one step ahead most.

# %%
show(readers.figure_copy_head(trained))

# %% tags=["hide-input"]
block, head = trained.copy_head
weights = trained.over_seeds(False, "next_weight")
Markdown(
    f"In block {block + 1}, head {head + 1} of the book's unmasked reader a query puts on average "
    f"{book_unmasked.next_weight[block, head]:.3f} of its weight on the position right after it. At every seed "
    f"some head does this: the largest such weight ranges from {weights.max(axis=(1, 2)).min():.3f} to "
    f"{weights.max(axis=(1, 2)).max():.3f}. The copying is learned, not built in: nothing in the architecture "
    f"marks the next position, the position table lets a head find it."
)

# %% [markdown]
# Every measured field of either reader can be read at every seed, the book's seed first
# (try `causal=False`, or `field="loss"`):

# %%
trained.over_seeds(causal=True, field="excess").round(4)

# %% [markdown]
# ## The sense of *w*, from one side and from both

# %%
directions.sense_table()

# %% tags=["hide-input"]
Markdown(
    f"Chapter 1 found that the best guess of $w$'s sense from the whole sentence is right "
    f"{100 * senses.pooled_both:.1f} % of the time. From the words before it alone, the best guess is right "
    f"{100 * senses.pooled_left:.1f} % of the time over all positions. The difference is concentrated at the "
    f"start: a $w$ at position 1 has no left context, and its sense is guessed no better than by one vector per "
    f"word type ({100 * senses.left[0]:.1f} %, the static cap), against {100 * senses.both[0]:.1f} % from both "
    f"sides. A left-to-right model's vector for $w$ can only hold what the left context says, so a sense probe on "
    f"it is capped by the left column."
)

# %% [markdown]
# The sense accuracies come from one call too; a short run, from the left and from both sides:

# %%
short_senses = sense_by_position(default_hmm(), length=8, sequences=5_000, rng=np.random.default_rng(1))
short_senses.left.round(3), short_senses.both.round(3)

# %% [markdown]
# The trained readers of the previous section can be asked the same question: a sense probe
# (chapter 5's, on its splits) fitted on each layer's vector for $w$.

# %%
readers.probe_table(trained)

# %% tags=["hide-input"]
causal_probes = trained.over_seeds(True, "probes")
unmasked_probes = trained.over_seeds(False, "probes")
masked_probes = np.array(sense_probes.seed_probes().probes)
Markdown(
    f"The causal reader's probes stay at or below the exact accuracy from the words up to $w$ "
    f"({trained.left_sense:.3f}): the best layer reaches {causal_probes.max(axis=1).mean():.3f} on average over the "
    f"seeds. The masked-LM encoder, which reads both sides, reaches {masked_probes[:, 1].mean():.3f} at layer 1 "
    f"against the ceiling {trained.both_sense:.3f}. The unmasked reader also sees both sides, yet its layer-1 "
    f"probe reaches {unmasked_probes[:, 1].mean():.3f} on average, about the causal reader's "
    f"({causal_probes[:, 1].mean():.3f}) and well below the masked-LM encoder's: it was trained to copy the next "
    f"word, and nothing in that task asks its vectors to say what the sentence means. Reading both sides is "
    f"necessary for the higher column, not sufficient: the objective has to make the right side worth reading."
)

# %% [markdown]
# ## Replaced-token detection
#
# A masked LM learns only at the positions it hid. ELECTRA
# ([Clark et al. 2020](../references.html#clark-2020)) makes every position count. A small
# masked LM, the *generator*, fills each hidden position with a word sampled from its own
# prediction; a second encoder, the *discriminator*, reads the sentence so filled in and says,
# at every position, whether the word there is the original (a sample that happens to equal
# the original counts as original). The two train together, and afterwards the generator is
# thrown away. The discriminator here has the HMM encoder's shape with a one-number head on its
# last layer; the generator is half as wide.
#
# The HMM allows one more generator, which no real corpus does: an *oracle* that samples each
# hidden word from the exact posterior of Theorem 2. It separates what the discriminator's task
# teaches from how good its generator happens to be.
#
# The three encoders get the same compute. A step costs the floating-point operations of the
# matrix products of every network trained in it, forward and backward (the backward twice
# the forward); the masked LM trains for a fixed number of steps of the book's recipe, and each
# of the others for the steps that cost as much (the table). The oracle is not a network and
# costs nothing in this count.

# %%
rtd_study = replaced.results()   # every run's stored curves and probes, and the exact ceiling
replaced.budget_table(rtd_study)

# %% tags=["hide-input"]
settled = replaced.plateau(rtd_study)
Markdown(
    f"Are {rtd_study.steps['masked-lm']} steps enough for the masked LM to have finished learning? Its training "
    f"loss, averaged over the seeds in windows of {settled['ends'][0]} steps, goes from "
    f"{settled['means'][0]:.3f} nats over the first window to {settled['means'][-2]:.3f} and "
    f"{settled['means'][-1]:.3f} over the last two: it fell by {settled['last_drop']:.3f} nats in its last "
    f"{settled['ends'][0]} steps, nearly flat with the learning rate at the end of its cosine (a longer run "
    f"would still gain a little). The discriminators' steps are fixed by the compute rule, not by their own curves."
)

# %% [markdown]
# Each encoder is then probed as in [chapter 5](05_probing.html): a linear probe for the sense
# of $w$ at each layer, trained and scored on the book's splits, against the exact accuracy of
# the best guess from the whole sentence. The second panel asks how much of the exact posterior
# $P(\text{sense} \mid x)$ the probe's probabilities recover: one minus their mean
# Kullback–Leibler divergence from the exact posterior, as a share of the divergence of a
# constant guess.

# %%
show(replaced.figure_probes(rtd_study))

# %% tags=["hide-input"]
mlm_best, joint_best, oracle_best = (rtd_study.best("probes", name) for name in ("masked-lm", "electra", "oracle"))
mlm_share, joint_share, oracle_share = (rtd_study.best("recovered", name)
                                        for name in ("masked-lm", "electra", "oracle"))
window = 50
gain = replaced.detection_gain(rtd_study, window)
generator_end = rtd_study.losses["electra"]["generator"][:, -100:].mean()
pilot, rate = replaced.PILOT, replaced.chosen_rate()
book_rate = hmm_setup.training.lr
replaced_share = rtd_study.losses["electra"]["replaced"][:, -100:].mean()
entropy = -(replaced_share * np.log(replaced_share) + (1 - replaced_share) * np.log(1 - replaced_share))
Markdown(
    f"Here the masked LM wins. Its best layer reads the sense of $w$ right {mlm_best.mean():.3f} of the time "
    f"on average against the ceiling {rtd_study.ceiling:.3f}, and its read-out recovers {mlm_share.mean():.2f} of "
    f"the exact posterior; the discriminator trained beside a generator reaches {joint_best.mean():.3f} and "
    f"{joint_share.mean():.2f}, and the one fed by the oracle {oracle_best.mean():.3f} and "
    f"{oracle_share.mean():.2f}.\n\n"
    f"The discriminators do not train at the masked LM's peak learning rate {book_rate:g}. A discriminator "
    f"that knew only how many tokens are replaced would output that share everywhere and score its binary "
    f"entropy; at {book_rate:g} the jointly trained one ended "
    f"{pilot[book_rate]['entropy'] - pilot[book_rate]['discriminator']:.4f} nats per position below it, next "
    f"to nothing. So its rate was chosen from a short trial, before any of these runs, by a rule fixed in "
    f"advance that reads training losses only: of the rates "
    f"{', '.join(f'{r:g}' for r in sorted(pilot, reverse=True))}, the one whose discriminator loss over its "
    f"last 100 steps lies furthest below that entropy. That is {rate:g} "
    f"({pilot[rate]['entropy'] - pilot[rate]['discriminator']:.4f} nats below it in the trial), the smallest "
    f"on the list, so a still lower rate might do better. Both discriminators train at it.\n\n"
    f"Even so the discriminator learns little. Over its last {window} steps the jointly trained one is "
    f"{gain['electra']['last']:.4f} nats per position below the entropy of the replaced share "
    f"({entropy:.3f} nats), {100 * gain['electra']['last'] / entropy:.1f} % of it; the oracle-fed one "
    f"{gain['oracle']['last']:.5f}. With the oracle that is the task itself: a replacement drawn from the exact "
    f"posterior has the law of the word it replaces, so almost nothing tells them apart, and what its layers "
    f"hold about $w$ they hold without having been asked for it. The learned generator is weaker (its loss "
    f"ends at {generator_end:.2f} nats, against the floor {replaced.generator_floor():.2f} of any generator), "
    f"which leaves a little to catch, and that little is all the discriminator's loss can teach. The masked "
    f"LM's loss, by contrast, asks at every hidden position for the whole distribution of the word, which "
    f"needs the sense of the context. ELECTRA's advantage is learning from every position when text is "
    f"scarce; here every step draws fresh sentences, so the masked LM's {100 * hmm_setup.rho:.0f} % of "
    f"positions are not what limits it."
)

# %% [markdown]
# The comparisons were fixed, with the verdict each was expected to get, before any of these
# encoders was trained:

# %% tags=["hide-input"]
replaced.rules_table()

# %% [markdown]
# ## Hiding more than one word
#
# Masked language modelling is one *denoising* objective: corrupt the input, train a network
# to restore it. Others corrupt differently. BART
# ([Lewis et al. 2020](../references.html#lewis-2020)) also deletes tokens, shuffles
# sentences and replaces whole spans by a single `[MASK]`; T5
# ([Raffel et al. 2020](../references.html#raffel-2020)) replaces spans by sentinel tokens and
# has a decoder write out what was removed. Deletions, insertions and span-to-one-token
# replacements change the input's length, so a position of the corrupted input no longer
# stands for one position of the clean one, and the per-position optimum this book computes
# has no direct counterpart: those objectives need a decoder that writes a sequence, and the
# book does not build them. Hiding runs of words while keeping every position is the variant
# that keeps the exact optimum.
#
# BERT hides a fixed number of positions per input, drawn uniformly with no regard to which
# are neighbours ([chapter 2](02_objective.html#berts-own-count)), so a hidden word usually
# has visible neighbours.
# SpanBERT ([Joshi et al. 2020](../references.html#joshi-2020)) hides runs of consecutive
# words and predicts each from the words outside the run. Its optimum is exact on the HMM
# too: for a hidden span, $P(x_i \mid x_{\text{out}}) = \sum_s P(z_i = s \mid x_{\text{out}})
# E_{s x_i}$, and forward–backward gives $P(z_i \mid x_{\text{out}})$ once the span's
# positions are treated as unobserved. The span is centred in a sentence of the same length
# as above, and each hidden position is scored.

# %%
show(spans.figure_spans())

# %%
spans.span_table()

# %% tags=["hide-input"]
harder = int(span_result.span_lengths[np.argmax(span_result.per_position > e.left[e.length // 2])])
Markdown(
    f"A span of one is the bidirectional reader ({span_result.per_position[0]:.3f} nats). Every longer span is "
    f"harder, since the words next to a hidden one are hidden too, and from a span of {harder} words on, an average "
    f"hidden word is less predictable than the next word is to a left-to-right reader in the middle of a sentence "
    f"({e.left[e.length // 2]:.3f}). Hiding the whole sentence leaves the marginal, {span_result.per_position[-1]:.3f}. "
    f"The span's centre is harder than its average position: its words are farthest from any visible one. Span "
    f"masking thus sets a harder target than BERT's single masks, one that asks the encoder to carry information "
    f"across longer gaps; whether that makes better vectors is a question for training."
)

# %% [markdown]
# The measurement for other spans and a shorter sentence, per hidden position:

# %%
spans.span_masking(default_hmm(), length=12, span_lengths=[1, 3, 6, 12], sequences=2_000,
                   rng=np.random.default_rng(1)).per_position.round(3)

# %% [markdown]
# ## The third family: encoder–decoder
#
# The two readers so far share one sentence: the decoder predicts each word from the words
# before it, the encoder fills in hidden words from everything around them. The third family
# maps one sequence to another. Machine translation made it
# ([Bahdanau et al. 2015](../references.html#bahdanau-2015);
# [Vaswani et al. 2017](../references.html#vaswani-2017)), and T5 casts every task in its form
# ([Raffel et al. 2020](../references.html#raffel-2020)). An **encoder** reads the whole source;
# a **decoder** writes the target from left to right. Each decoder block reads the target words
# already written through causal self-attention, as the causal reader above does, and every
# position of the encoder's output through **cross-attention**, whose queries come from the
# decoder and whose keys and values come from the encoder. The target may use another
# vocabulary than the source, and its words need not match the source's one for one.

# %%
from mlm_book import translation
from mlm_book.artefacts import encoder_decoder as encdec_runs
from mlm_book.experiments import ch10_encoder_decoder as encdec

world = translation.default_world()
encdec_study = encdec.results()       # five trained encoder–decoders on held-out pairs, beside the exact laws

# %% tags=["hide-input"]
roles = np.unique(world.target_emission.argmax(axis=1)).size
particles = world.target_vocab - roles
say = float(world.target_emission[0].max())
Markdown(
    f"To keep the optimum exact, the two languages share the HMM's hidden path. The source is the book's "
    f"language. The target has {world.target_vocab} words: at each position it says the **role** of the hidden "
    f"state (one of {roles}, the state's place within its regime, since the two regimes mirror each other) with "
    f"probability {say:g}, and otherwise one of {particles} particles whose odds lean towards the regime. A pair "
    f"$(x, y)$ is emitted from one path $z$: position $t$ of the target depends on $z_t$, which the source reveals "
    f"only through its own noisy words. The exact law of the next target word follows from forward–backward: the "
    f"state's law at $t$ given the source everywhere and the target before $t$ is the forward prediction from both "
    f"languages before $t$, times the source's likelihood at $t$, times the backward message of the source alone "
    f"after $t$. Three laws bracket what a reader can reach:\n\n"
    f"- **target only**, $p(y_t \\mid y_{{<t}})$: the best decoder that never sees the source;\n"
    f"- **source-aware**, $p(y_t \\mid y_{{<t}}, x)$: what the encoder–decoder is trained towards;\n"
    f"- **both sides**, $p(y_t \\mid y_{{-t}}, x)$: a reader of the source and of the rest of the target.\n\n"
    f"The gap between the first two is what the source is worth. The target is as long as the source, position for "
    f"position, because both are read off one path; a translation between real languages has no such alignment and "
    f"may be longer or shorter, which the decoder's left-to-right writing allows but this world does not exercise."
)

# %% tags=["hide-input"]
model, recipe = encdec_runs.MODEL, encdec_runs.TRAINING
Markdown(
    f"The model pairs an encoder of the book's kind ({model.n_encoder_blocks} block of width {model.d_model}, "
    f"{model.n_heads} heads) with a decoder of {model.n_decoder_blocks} block of the same width, a decoder block "
    f"being a causal self-attention, a cross-attention and an MLP, with every backward pass written by hand and checked against "
    f"central differences in float64. It is trained by teacher forcing: the decoder reads a start token and "
    f"$y_1, \\dots, y_{{t-1}}$ and is scored on $y_t$, at all {encdec_runs.LENGTH} positions of each pair. The "
    f"recipe is the HMM encoder's (peak rate {recipe.lr:g}, warm-up a fifteenth of the run, weight decay "
    f"{recipe.weight_decay:g}) with {recipe.batch_size} fresh pairs a step, for {recipe.steps} steps: a pilot at the "
    f"book's seed had flattened by then. Each of the {len(encdec_study.seeds)} seeds is scored on the same "
    f"{encdec_study.pairs:,} held-out pairs, against the exact laws of the same words."
)

# %%
show(encdec.figure_positions(encdec_study))

# %% tags=["hide-input"]
book_excess, book_se = encdec_study.excess[0], encdec_study.excess_se[0]
gaps = encdec_study.exact_position["prefix"] - encdec_study.exact_position["source+prefix"]
most = int(np.argmax(gaps))
Markdown(
    f"The source is worth {encdec_study.gap:.3f} nats per target word: the target-only law loses "
    f"{encdec_study.exact.prefix:.3f} on the held-out pairs, the source-aware law {encdec_study.exact.source_prefix:.3f}, "
    f"only {encdec_study.exact.source_prefix - encdec_study.floor:.4f} above the {encdec_study.floor:.3f} nats that the target's own "
    f"noise leaves even to a reader of the hidden state. It is worth most at position {most + 1} "
    f"({gaps[most]:.3f} nats, against {np.delete(gaps, most).mean():.3f} on average elsewhere)"
    f"{', where the target has no past to go on' if most == 0 else ''}. The trained model lands "
    f"{book_excess:.4f} ± {book_se:.4f} nats above the source-aware law at the book's seed, and between "
    f"{encdec_study.excess.min():.4f} and {encdec_study.excess.max():.4f} over the seeds: it keeps "
    f"{100 * (1 - encdec_study.excess.max() / encdec_study.gap):.1f} % or more of what the source is worth. Reading the rest "
    f"of the target as well would lower the exact loss by only "
    f"{encdec_study.exact.source_prefix - encdec_study.exact.source_both:.1e} nats (the exercises say why)."
)

# %% [markdown]
# Set beside the two readers of the HMM language, the three families differ in what they
# read and what they predict, and each has its own exact optimum on its own words. The first
# two predict words of the 25-word language and the third words of the six-word target, so
# their optimal losses are not comparable across rows; each trained model's excess over its
# own optimum is, as a distance from the best it could do (the encoder's row is chapter 2's
# HMM encoder, scored on the positions its channel selected).

# %%
encdec.families_table(encdec_study)

# %% [markdown]
# The rules for the trained encoder–decoders were fixed before the five runs were trained:

# %%
encdec.rules_table()

# %% [markdown]
# The exact laws on another sample, shorter sentences and another seed (target only, source-aware,
# both sides, in nats per target word):

# %%
_, source, target = translation.sample_pairs(world, 2_000, 8, np.random.default_rng(3))
translation.exact_losses(world, source, target)

# %% [markdown]
# ## One encoder, many languages: how often to show each
#
# A multilingual encoder is trained on a mixture of languages with very unequal amounts of
# text. Sampling sentences in proportion to the data starves the small languages; sampling
# languages uniformly repeats their few sentences many times. The usual compromise
# ([Lample and Conneau 2019](../references.html#lample-2019);
# [Conneau et al. 2020](../references.html#conneau-2020)) samples language $k$ with
# probability
#
# $$q_k(\alpha) = \frac{p_k^{\alpha}}{\sum_j p_j^{\alpha}},$$
#
# where $p_k$ is its share of the sentences: $\alpha = 1$ follows the data, $\alpha = 0$ is
# uniform, and XLM-R uses $\alpha = 0.3$. Everything here is exact.

# %% tags=["hide-input"]
family = languages.language_family()
shares = np.asarray(languages.DATA_SHARES)
Markdown(
    f"The book's version is a family of {len(family.languages)} HMM languages, L1 to L{len(family.languages)}, with "
    f"data shares {' / '.join(f'{p:g}' for p in shares)}. They share chapter 1's hidden dynamics and each writes its own "
    f"{family.vocab_size // len(family.languages)} tokens; all of them write $w$, as languages share numbers and "
    f"names ({family.vocab_size} tokens in all). Because each language is the same HMM with its tokens renamed, "
    f"each has the same exact optimum: any difference a trained encoder shows between them comes from how much of "
    f"each it saw. With sentences of one length, $q_k$ is also the expected share of language $k$'s tokens in a "
    f"step. A budget that reads as many sentences as the corpus holds makes $q_k / p_k$ passes over language $k$'s "
    f"data: below one it is neglected, above one repeated."
)

# %%
languages.sampling_table()

# %%
show(languages.figure_sampling())

# %% tags=["hide-input"]
q3, n3 = languages.sampling_shares(shares, 0.3), languages.passes(shares, 0.3)
absent = languages.absent_probability(shares, 1.0, languages.BATCH)
Markdown(
    f"At $\\alpha = 0.3$ the smallest language's share rises from {shares.min():.2f} to {q3.min():.3f}, "
    f"{q3.min() / shares.min():.1f} times its data, and the largest falls from {shares.max():.2f} to {q3.max():.3f}: the budget that passes once "
    f"over the corpus passes {n3.max():.1f} times over the smallest language and {n3.min():.2f} times over the "
    f"largest. At $\\alpha = 1$ a batch of {languages.BATCH} sentences holds no sentence of the smallest language "
    f"{100 * absent[-1]:.0f} % of the time. Lowering $\\alpha$ always moves share from larger languages to smaller "
    f"ones, because $q_k / p_k = p_k^{{\\alpha - 1}} / \\sum_j p_j^\\alpha$ falls with $p_k$ when $\\alpha < 1$. "
    f"What a share buys an encoder, measured against each language's known optimum, is a question for training."
)

# %% [markdown]
# Other data shares and another $\alpha$: the sampling shares $q_k$ and the passes $q_k / p_k$.

# %%
other_shares = [0.5, 0.3, 0.15, 0.05]
languages.sampling_shares(other_shares, alpha=0.3).round(3), languages.passes(other_shares, alpha=0.3).round(2)

# %% [markdown]
# ### One encoder trained on the mixture
#
# The same family can now be trained on. Each language's exact optimum is known, so each
# gets its own score: the *excess loss*, the encoder's cross-entropy on that language's
# selected positions minus the exact optimum's, in nats. Zero is the best any model can do.
# The rules that judge the runs were written down, with the verdict expected, before the
# first run.

# %%
from mlm_book.artefacts import multilingual as multilingual_runs
from mlm_book.experiments import ch10_multilingual as multilingual

study = multilingual.results()   # every run's measurements, one row per seed

# %% tags=["hide-input"]
recipe = multilingual_runs.RECIPE
shape = multilingual_runs.sweep_run(0.3).encoder
Markdown(
    f"One encoder of the book's shape (width {shape.d_model}, {shape.n_blocks} blocks, BERT's channel over the joint "
    f"vocabulary) is trained on fresh sentences of the mixture, each sentence's language drawn with "
    f"$q_k(\\alpha)$, at $\\alpha$ = {', '.join(f'{a:g}' for a in multilingual.SHOWN_ALPHAS)}, "
    f"{len(multilingual.SEEDS)} seeds a point. Every run "
    f"takes {recipe.steps} Adam steps of {recipe.batch_size} sentences, the book's HMM-encoder recipe with its "
    f"warm-up and decay scaled to the shorter run: a pilot's loss was still falling at half that many steps and "
    f"flat over the last quarter of these. The table gives each language's excess loss, the book's seed first "
    f"and, in brackets, the mean and spread over the seeds."
)

# %%
multilingual.sweep_table(study)

# %%
show(multilingual.figure_excess(study))

# %% tags=["hide-input"]
shown = multilingual.SHOWN_ALPHAS
smallest = {a: study.sweep_excess[a][:, -1].mean() for a in shown}
largest = {a: study.sweep_excess[a][:, 0].mean() for a in shown}
found = {result.claim.id: result for result in verify(claims=multilingual.CLAIMS)}


def seeds_holding(claim_id):
    return found[claim_id].value["seeds holding"]


Markdown(
    f"From $\\alpha = 1$ to $\\alpha = 0.3$ the smallest language's mean excess goes from {smallest[1.0]:.3f} to "
    f"{smallest[0.3]:.3f} nats (lower at {seeds_holding('D-23a')} seeds), and the largest language's from "
    f"{largest[1.0]:.3f} to {largest[0.3]:.3f} (higher at {seeds_holding('D-23b')} seeds). "
    + (f"At uniform sampling the two read {smallest[0.0]:.3f} and {largest[0.0]:.3f}. " if 0.0 in shown else "")
    + f"Lowering $\\alpha$ moves excess loss from the small languages to the large one: what one language gains is "
    f"paid for with another's sentences. Neither end reaches its optimum in this budget, and at $\\alpha = 0.3$ "
    f"the smallest language is still the furthest from its own."
    if smallest[0.3] == max(study.sweep_excess[0.3].mean(axis=0)) else
    f"From $\\alpha = 1$ to $\\alpha = 0.3$ the smallest language's mean excess goes from {smallest[1.0]:.3f} to "
    f"{smallest[0.3]:.3f} nats (lower at {seeds_holding('D-23a')} seeds), and the largest language's from "
    f"{largest[1.0]:.3f} to {largest[0.3]:.3f} (higher at {seeds_holding('D-23b')} seeds). Lowering $\\alpha$ moves "
    f"excess loss from the small languages to the large one: what one language gains is paid for with another's "
    f"sentences."
)

# %% [markdown]
# The sense of $w$ is read from the shared dynamics, not from any one language's tokens. A
# probe of each language's occurrences of $w$ on the last layer, set against its exact Bayes
# ceiling (chapter 5's comparison), gives each language's shortfall:

# %%
multilingual.sense_table(study)

# %% tags=["hide-input"]
gaps = np.array([study.sweep_sense[a] - study.sweep_ceiling[a] for a in shown])   # (α, seeds, K)
Markdown(
    f"Over every language, $\\alpha$ and seed the probe sits between {gaps.min():+.3f} and {gaps.max():+.3f} of its "
    f"ceiling. The smallest language at $\\alpha = 0.3$ is within {multilingual.SENSE_TOLERANCE} of its ceiling at "
    f"{seeds_holding('D-23c')} seeds, so whether it gets there depends on the seed."
)

# %% [markdown]
# ### The smallest language, inside the mixture and alone
#
# A multilingual model is said to help its small languages by what they share with the large
# ones ([Conneau et al. 2020](../references.html#conneau-2020)). Here the claim can be tested
# without confound: the same encoder is trained on the smallest language alone, for the same
# steps, on as many of its own sentences per step as the mixture at XLM-R's $\alpha$ gives it.
# The only difference is the other languages' sentences.

# %%
multilingual.alone_table(study)

# %% tags=["hide-input"]
inside, alone = study.sweep_excess[0.3][:, -1], study.alone_excess[0.3]
Markdown(
    f"Inside the mixture the smallest language's excess is {inside.mean():.3f} nats on average; alone, on the same "
    f"{study.alone_batch[0.3]} sentences of its own per step, {alone.mean():.3f}. The mixture does better at "
    f"{seeds_holding('D-24')} seeds. The other languages' sentences carry the same hidden dynamics under other "
    f"names, and the blocks that learn them serve every language."
)

# %% [markdown]
# ### Does the large language's rule bleed into the small one?
#
# A last question is whether a small language's representations take on a large language's
# structure. To ask it, the large language gets a rule the others lack: its light states cycle
# the other way round. The mixture at XLM-R's $\alpha$ is trained again with that change. Then
# sentences of the smallest language get one [MASK] each, and a linear probe is fitted on the
# last layer at the [MASK] to predict the hidden state there. At the positions where the
# smallest language's own exact reading of that state (its most probable value given the rest of
# the sentence) differs from the reading under the large language's rule, the probe's guess
# says which structure the vectors carry. The same measurement on the mixture without the rule
# is the baseline.

# %%
multilingual.bleed_table(study)

# %% tags=["hide-input"]
with_rule, without_rule = study.bleed_rule[:, 0], study.bleed_plain[:, 0]
Markdown(
    f"With the rule, the probe takes the rule's reading at {with_rule.mean():.3f} of those positions on average; "
    f"without it, at {without_rule.mean():.3f}. The rule asked for a rise of at least "
    f"{multilingual.BLEED_SHIFT}, and it holds at {seeds_holding('D-26')} seeds. The probe's guesses at these "
    f"positions take the language's own reading {study.bleed_rule[:, 1].mean():.3f} of the time with the rule and "
    f"{study.bleed_plain[:, 1].mean():.3f} without it, so the small change in the rule's share comes with a change "
    f"of the same size in its own: on this evidence the small language's vectors do not lean towards the large "
    f"language's rule beyond the variation between seeds. The probe is weak at a [MASK] (right about "
    f"{study.bleed_rule[:, 3].mean():.2f} of the time overall), so a small bleed could hide under it."
)

# %% [markdown]
# ### The curse of multilinguality
#
# At a fixed size, a model shared by more languages has less of itself for each; XLM-R's
# authors call the resulting loss per language the *curse of multilinguality* and buy it
# back with width ([Conneau et al. 2020](../references.html#conneau-2020)). The family
# lets it be measured against exact optima: the same encoder and recipe are trained on 1, 2,
# 4 and 8 languages with equal sampling shares, every language with the same hidden dynamics
# and its own tokens. How much a wider encoder buys back is not measured here: training the
# largest mixture again at twice the width would lengthen this section's build, which is
# already over its share.

# %%
multilingual.curse_table(study)

# %%
show(multilingual.figure_curse(study))

# %% tags=["hide-input"]
curse_means = {k: study.curse_excess[k].mean() for k in multilingual.CURSE_LANGUAGES}
few, many = multilingual.CURSE_LANGUAGES[0], multilingual.CURSE_LANGUAGES[-1]
between = ", ".join(f"{curse_means[k]:.3f} with {k}" for k in multilingual.CURSE_LANGUAGES[1:-1])
Markdown(
    f"With {few} language the mean excess per language is {curse_means[few]:.3f} nats; with {many}, "
    f"{curse_means[many]:.3f} ({between} between). The {many}-language encoder is worse per language at "
    f"{seeds_holding('D-25')} seeds. Each of its languages sees an {many}th of the sentences and has its own "
    f"token embeddings to learn from them, all in the same width of {multilingual.CURSE_WIDTH}, while the blocks "
    f"that carry the shared dynamics are trained by every language."
    if curse_means[many] > curse_means[few] else
    f"With {few} language the mean excess per language is {curse_means[few]:.3f} nats; with {many}, "
    f"{curse_means[many]:.3f} ({between} between): at this width and budget more languages did not cost their "
    f"languages anything on average, and the {many}-language encoder is worse per language at "
    f"{seeds_holding('D-25')} seeds."
)

# %% [markdown]
# The rules, as written before the runs, and what the runs found:

# %%
multilingual.rules_table()

# %% [markdown]
# ## What these experiments cost

# %% tags=["hide-input"]
spent = artefacts.chapter_cost(10)
Markdown(
    f"Every trained number of this chapter comes from runs that `mlm-book build` makes once and stores: "
    f"{spent.runs} runs of the {len(spent.kinds)} kinds below, about {spent.minutes:.0f} minutes on "
    f"one core of the machine the book is built on, {spent.share:.0%} of the whole book's "
    f"{spent.book_minutes:.0f} minutes (each kind's estimate is its measured rate; core-minutes in the table). "
    f"All of them train on the HMM language, the "
    f"cheapest world of the book, where each exact optimum is known. What sets the cost is how many seeds each "
    f"verdict rests on: the readers, replaced-token detection and the encoder–decoder are compared at "
    f"{len(replaced_runs.SEEDS)} training seeds each and every point of the multilingual sweeps is trained at "
    f"{len(multilingual_runs.SEEDS)}, because a verdict drawn from one seed can belong to that seed."
)

# %%
artefacts.cost_table(10)

# %% [markdown]
# ## Exercises
#
# **Exercise 1.** Why must the bidirectional reader face the same expected entropy at the
# first and the last position, while the left-to-right reader need not?

# %% tags=["hide-input"]
exact = r.exact[-1]
answer(f"$E\\,H(x_1 \\mid x_{{2..n}}) = H(x_{{1..n}}) - H(x_{{2..n}})$ and "
       f"$E\\,H(x_n \\mid x_{{1..n-1}}) = H(x_{{1..n}}) - H(x_{{1..n-1}})$, and the HMM is stationary, so "
       f"$x_{{2..n}}$ and $x_{{1..n-1}}$ have the same distribution and the same entropy. By enumeration at "
       f"$n = {exact.length}$: {exact.both[0]:.10f} and {exact.both[-1]:.10f}. The left-to-right reader faces "
       f"$H(x_1)$ at the start ({exact.left[0]:.4f}) and $H(x_n \\mid x_{{1..n-1}})$ at the end "
       f"({exact.left[-1]:.4f}): a marginal against a conditional.")

# %% [markdown]
# **Exercise 2.** Show that for $\alpha < 1$ the passes $q_k / p_k$ fall as $p_k$ grows, and
# check it on four random data shares at $\alpha = 0.5$.

# %% tags=["hide-input"]
rng = np.random.default_rng(9)
random_shares = rng.dirichlet(np.ones(4))
order = np.argsort(random_shares)
ratios = languages.passes(random_shares, 0.5)
answer(f"$q_k / p_k = p_k^{{\\alpha - 1}} / \\sum_j p_j^\\alpha$; the denominator is the same for every $k$ and "
       f"$p^{{\\alpha - 1}}$ falls in $p$ when $\\alpha < 1$. Shares "
       f"{', '.join(f'{p:.3f}' for p in random_shares[order])} (sorted) get passes "
       f"{', '.join(f'{v:.3f}' for v in ratios[order])}: falling, as they must.")

# %% [markdown]
# **Exercise 3.** The generator of the replaced-token section is half as wide as the
# discriminator. Under the same compute rule, how many steps would the pair get with a
# generator as wide as the discriminator, and why does the count fall so far?

# %% tags=["hide-input"]
full_steps = replaced.full_width_generator_steps()
answer(f"{full_steps} steps, against {rtd_study.steps['electra']} with the half-width generator and "
       f"{rtd_study.steps['masked-lm']} for the masked LM. A full-width generator costs as much as the discriminator, "
       f"so the pair costs about twice the masked LM per step; halving the width divides the generator's "
       f"matrix products by about four (they grow as $d^2$), so the half-width pair costs only "
       f"{rtd_study.flops['electra'] / rtd_study.flops['masked-lm']:.2f} times the masked LM.")

# %% [markdown]
# **Exercise 4.** In the translation world, a reader of the whole source and of every other
# target word does hardly better than the encoder–decoder's optimum, which sees only the
# target's past. Why? Compute the difference on the held-out pairs.

# %% tags=["hide-input"]
ambiguous = world.source.token_names[world.source.shared_token]
roles = [world.target_names[int(k)] for k in world.target_emission[list(world.source.sense_states)].argmax(axis=1)]
answer(f"The target word $y_t$ depends on everything else only through the hidden state $z_t$, and the source "
       f"nearly names $z_t$: each state has source words of its own, and the one word two states share, "
       f"{ambiguous}, is said by two states "
       f"{'of the same role, ' + roles[0] if roles[0] == roles[1] else 'of roles ' + ' and '.join(roles)}, so even "
       f"there the target's other words can only sharpen the odds of the particles. On the {encdec_study.pairs:,} held-out pairs the both-sides law loses "
       f"{encdec_study.exact.source_both:.5f} nats per target word and the source-aware law {encdec_study.exact.source_prefix:.5f}: "
       f"a difference of {encdec_study.exact.source_prefix - encdec_study.exact.source_both:.1e}, against the "
       f"{encdec_study.gap:.3f} nats the source itself is worth.")

# %% [markdown]
# **Exercise 5.** In expectation, how many sentences of the smallest language does a whole
# run of the trained mixture show it at each $\alpha$ of the sweep, and how many steps would
# sampling by the data ($\alpha = 1$) need to show it as many as XLM-R's $\alpha$ does?

# %% tags=["hide-input"]
run_sentences = recipe.steps * recipe.batch_size
seen = {a: run_sentences * languages.sampling_shares(shares, a)[-1] for a in multilingual.ALPHAS}
needed = recipe.steps * seen[0.3] / seen[1.0]
answer(f"A run reads {run_sentences:,} sentences, so the smallest language gets $q_4(\\alpha)$ times that: "
       f"{', '.join(f'{seen[a]:,.0f} at α = {a:g}' for a in multilingual.ALPHAS)}. Sampling by the data would need "
       f"$q_4(0.3) / q_4(1)$ = {seen[0.3] / seen[1.0]:.2f} times the steps, {needed:,.0f} instead of "
       f"{recipe.steps:,}, to show it as many, while the largest language's sentences grew by the same factor.")

# %% [markdown]
# ## Claims

# %% tags=["hide-input"]
chapter_summary(verify(claims=directions.CLAIMS + readers.CLAIMS + spans.CLAIMS + replaced.CLAIMS + encdec.CLAIMS
                           + languages.CLAIMS + multilingual.CLAIMS))
