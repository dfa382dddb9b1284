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
# # Chapter 9 — Labelling spans: tags, taggers and scores by entity
#
# Chapter 7 typed one token at a time: is this *kestrel* the company or the product? Named
# entity recognition asks for more. Its units are *mentions*, runs of tokens that name one
# thing ("kestrel turbine services", an organisation; "jane villanueva", a person), and a
# tagger must find where each begins and ends as well as what it is. The encoder still
# gives one vector per token, so the spans are written as one tag per token, a classifier
# predicts the tags, and a decoder turns them back into spans. Each step has choices, and
# the choices show in the scores, which are counted by entity, not by token.
#
# The filings generator annotates four kinds of mention: **ORG** (a company in full or by
# its alias), **PRODUCT** (an alias and its noun: "the *kestrel turbine*"), **PERSON** (a
# first name and a surname) and **LOC** (a place or a country).
#
# Standard corpora cut the same world differently. CoNLL-2003
# ([Tjong Kim Sang and De Meulder 2003](../references.html#tjong-2003)) tags persons (PER),
# locations (LOC), organisations (ORG) and miscellaneous names (MISC), the names that are
# none of the other three. OntoNotes ([Weischedel et al. 2013](../references.html#weischedel-2013))
# has 18 types; among them it separates geo-political entities (GPE: countries, cities,
# states) from other locations (LOC), and has a PRODUCT type. Read in those schemes, this
# corpus's types would be:
#
# | this corpus | CoNLL-2003 | OntoNotes |
# |---|---|---|
# | ORG: a company, in full or by its alias | ORG | ORG |
# | PRODUCT: an alias and its noun | MISC | PRODUCT |
# | PERSON: a first name and a surname | PER | PERSON |
# | LOC: a town or a country | LOC | GPE |
#
# The corpus has no locations that are not GPEs (no rivers, no mountains), and no MISC
# other than its products.
#
# A *named* entity is a thing referred to by a proper name, and all four types are names.
# Many schemes also tag expressions that are not names but are as useful to extract:
# OntoNotes has DATE, TIME, PERCENT, MONEY, QUANTITY and CARDINAL among its 18 types. The
# filings are full of them ("annual report 2019", "rose 12 percent", "to 40 million"), and
# the corpus annotates none of them. Each one fills a fixed slot of a
# sentence template, a number next to *percent*, *million* or a month, so finding them is
# a lookup a tagger would learn from the neighbouring word alone; they would raise every
# score without testing what this chapter is about, reading a name from its context.

# %%
import numpy as np

from mlm_book import crf, tagging
from mlm_book.artefacts import filing_encoder
from mlm_book.experiments import ch09_spans as ch9
from mlm_book.experiments import ch09_subwords as subwords
from mlm_book.figures import show
from mlm_book.ledger import chapter_summary, verify
from mlm_book.report import Markdown, answer, table

train, test = ch9.train_data(), ch9.test_data()

# %% tags=["hide-input"]
Markdown(f"Taggers learn from {train.text.count} sentences of chapter 6's corpus, whose mentions the encoder saw but "
         f"was never told about, and are tested on all {test.text.count} sentences of a fresh corpus drawn the same "
         f"way. The chapter ends with the other way of cutting text, into subwords, and what it does to unknown names.")

# %% [markdown]
# ## From spans to tags
#
# A span is `(start, end, type)`, `end` exclusive. Three schemes write spans as tags:
#
# * **IO**: `I-X` inside a mention of type X, `O` outside;
# * **BIO**: `B-X` on a mention's first token, `I-X` on the rest. This is the scheme that
#   [Tjong Kim Sang and Veenstra (1999)](../references.html#tjong-1999) named IOB2.
#   [Ramshaw and Marcus (1995)](../references.html#ramshaw-1995), who cast chunking as
#   tagging, used the variant those authors named IOB1, in which a chunk begins with `I` and
#   `B` marks only a chunk that starts right after another;
# * **BIOES**: `S-X` for a one-token mention, otherwise `B-X`, `I-X` …, and `E-X` on the last:
#   the BILOU scheme of [Ratinov and Roth (2009)](../references.html#ratinov-2009), with `U`
#   (unit) and `L` (last) renamed `S` and `E`. They found it did better than BIO in their
#   named-entity tagger.
#
# With $n$ types BIO has $2n + 1$ tags and BIOES $4n + 1$. BIO and BIOES can be read back
# into the spans they came from; IO cannot when two mentions of one type touch, because
# nothing marks where the second begins. The filings list places and countries back to back,
# so this happens here:

# %%
touching, where = ch9.io_example()
words = test.words[where]
spans = list(test.spans[where])
table(["word", *words],
      [[scheme, *tagging.tags_from_spans(spans, len(words), scheme)] for scheme in ("IO", "BIO", "BIOES")])

# %% tags=["hide-input"]
mentions = sum(len(s) for s in test.spans)
io_read = tagging.spans_from_tags(tagging.tags_from_spans(spans, len(words), "IO"), "IO")
Markdown(
    f"Read back, the IO tags of this sentence give {len(io_read)} mention{'s' if len(io_read) != 1 else ''} where "
    f"there are {len(spans)}: the two touching places become one. Over the test corpus, **{touching}** of its "
    f"{mentions} mentions touch a mention of the same type before them ({100 * touching / mentions:.1f} %); an IO "
    f"tagger could not get any of them right however well it tagged each token. Every tagger below uses BIO, whose "
    f"{len(ch9.TAGS)} tags ({', '.join(f'`{t}`' for t in ch9.TAGS)}) are the classes of each token."
)

# %%
ch9.touching_mentions()  # (types) → (touching pairs, sentences, first sentence), test corpus

# %% tags=["hide-input"]
touch = ch9.touching_mentions()
same = {pair: value for pair, value in touch.items() if pair[0] == pair[1]}
loc_pairs, loc_sentences, _ = touch[("LOC", "LOC")]
mixed = {pair: value for pair, value in touch.items() if pair[0] != pair[1]}
first_mixed, (mixed_pairs, mixed_sentences, mixed_at) = next(iter(mixed.items()))
mixed_words, mixed_spans = test.words[mixed_at], test.spans[mixed_at]
left = next(span for span in mixed_spans if span[2] == first_mixed[0] and any(
    other[0] == span[1] and other[2] == first_mixed[1] for other in mixed_spans))
right = next(span for span in mixed_spans if span[0] == left[1] and span[2] == first_mixed[1])
pair = next((a, b) for a, b in zip(spans, spans[1:]) if a[1] == b[0] and a[2] == b[2])  # the table's touching pair
Markdown(
    "**Two ambiguities.** A tagger must say where a mention ends and what it is. Chapter 6's *kestrel* is an "
    "ambiguity of *type*: one token names the company or its product, ORG or PRODUCT, and only the context "
    f"says which. Touching mentions are an ambiguity of *segmentation*: *{' '.join(words[pair[0][0]:pair[1][1]])}* "
    "above could be one place or two, and only the annotation says where the first ends. In the test "
    f"corpus **{loc_sentences}** of its {test.text.count} sentences ({100 * loc_sentences / test.text.count:.1f} %) "
    f"have two LOC mentions back to back"
    + (", one pair in each" if loc_pairs == loc_sentences else f", {loc_pairs} pairs in all")
    + (", and no other type touches itself. " if len(same) == 1 else ". ")
    + f"Mentions of two types touch too, {first_mixed[0]} before {first_mixed[1]} in {mixed_sentences} sentences, "
    f"as in *{' '.join(mixed_words)}*: nothing in the words says whether "
    f"*{' '.join(mixed_words[left[0]:left[1]])}* is a {first_mixed[0]} of its own or begins the "
    f"{first_mixed[1]} *{' '.join(mixed_words[right[0]:right[1]])}*. There the types mark the boundary, even in "
    "IO tags."
)

# %% [markdown]
# ## Three taggers on one encoder
#
# The vectors come from chapter 7's filing encoder (one per seed), reading a sentence as
# `[SEP] s [SEP]`. A rare surname or place is `[UNK]` there, as in use:

# %% tags=["hide-input"]
rows = []
for kind in ("ORG", "PRODUCT", "PERSON", "LOC"):
    shares = ch9.unknown_share(kind)
    rows.append([kind, str(ch9.mention_count(kind)), f"{100 * shares:.0f} %"])
table(["type", "test mentions", "tokens read as [UNK]"], rows)

# %% tags=["hide-input"]
layers = ", ".join(str(layer) for layer in ch9.LAYERS[:-1]) + f" or {ch9.LAYERS[-1]}"
Markdown(
    f"**Softmax taggers.** A head $p(y_i \\mid x) = \\operatorname{{softmax}}(h_i W + b)$ on each token's vector "
    f"$h_i$ after {layers} blocks, either on the **frozen** encoder (chapter 5's ridge-logistic probe, fitted to "
    f"convergence) or **fine-tuned** with the embeddings and the blocks below it ({ch9.TAGGER.steps} AdamW steps of "
    f"{ch9.TAGGER.batch_size} sentences at peak rate {ch9.TAGGER.lr:g}, fixed before any run). Two decoders read "
    f"the same per-token distributions: the most probable tag of each token (**argmax**, whose invalid sequences "
    f"such as `O I-LOC` are read as `conlleval` reads them), and **Viterbi** over valid BIO sequences only, which "
    f"maximises $\\sum_i \\log p(y_i \\mid x)$ subject to no `I-X` after `O` or after another type."
)

# %% [markdown]
# The two decoders on a made-up sentence of two tokens, each with a distribution over the
# tags, whose most probable tags are `O I-LOC`:

# %%
probs = np.full((1, 2, len(ch9.TAGS)), 0.01)  # 1 sentence, 2 tokens, a little on every tag
probs[0, 0, ch9.TAGS.index("O")], probs[0, 0, ch9.TAGS.index("B-LOC")] = 0.55, 0.38
probs[0, 1, ch9.TAGS.index("I-LOC")], probs[0, 1, ch9.TAGS.index("O")] = 0.60, 0.33
by_argmax = [ch9.TAGS[t] for t in probs[0].argmax(axis=1)]
by_viterbi = [ch9.TAGS[t] for t in ch9.viterbi_all(np.log(probs), lengths=np.array([2]))[0]]
table(["decoder", "tags", "mentions (start, end, type)"],
      [["argmax", " ".join(by_argmax), str(tagging.spans_from_tags(by_argmax, "BIO", strict=False))],
       ["Viterbi", " ".join(by_viterbi), str(tagging.spans_from_tags(by_viterbi, "BIO"))]])

# %% [markdown]
# Argmax keeps the invalid `O I-LOC`, which `conlleval` reads as a one-token place; Viterbi
# gives up a little probability on the first token for a valid sequence, a two-token place.

# %% [markdown]
# **A linear-chain CRF** ([Lafferty et al. 2001](../references.html#lafferty-2001)) scores a
# whole tag sequence,
#
# $$\log p(y \mid x) = a_{y_1} + \sum_{i=1}^{n} e_i(y_i) + \sum_{i=2}^{n} T_{y_{i-1} y_i} + b_{y_n} - \log Z(x),$$
#
# with emissions $e_i = h_i W + b$ linear in the frozen top-layer vectors and learned
# transition scores $T$ (start $a$, end $b$). The normaliser is a forward recursion,
# $\alpha_1(j) = a_j + e_1(j)$, $\alpha_i(j) = e_i(j) + \log\sum_k \exp(\alpha_{i-1}(k) + T_{kj})$,
# $\log Z = \log \sum_j \exp(\alpha_n(j) + b_j)$: chapter 1's HMM forward pass in log space,
# with $\log A$ in place of $T$ and the emission log-probabilities $\log B(x_i \mid j)$ in
# place of $e_i(j)$. An HMM is the special case whose scores are log-probabilities of a
# generative model, and then $\log Z(x) = \log p(x)$. The gradient of the log-likelihood is
# observed minus expected counts, the expectations coming from the forward–backward
# marginals, so the CRF trains by the same two recursions. Transitions forbidden by BIO
# are fixed at $-\infty$.

# %% [markdown]
# ## Scores by entity
#
# A predicted mention counts as correct only when its first token, its last token and its
# type all match a gold mention; a mention found in part, or with the wrong type, is both a
# false positive (the prediction) and a false negative (the gold mention it missed). With
# $tp$, $fp$ and $fn$ counted that way over all types of the test corpus, **precision**
# $P = tp/(tp + fp)$ is the share of predicted mentions that are right, **recall**
# $R = tp/(tp + fn)$ the share of gold mentions found, and the **micro-F1** is their
# harmonic mean $2PR/(P + R)$, the score of the CoNLL shared tasks
# ([Tjong Kim Sang and De Meulder 2003](../references.html#tjong-2003)). Per-token
# accuracy counts tokens instead, most of them `O`.

# %%
ch9.score_table()

# %%
show(ch9.figure_f1())

# %% tags=["hide-input"]
key_top = f"frozen/{ch9.CRF_LAYER}/argmax"
f1_top = ch9.mean_f1(key_top)
accuracy_top = float(ch9.token_accuracies(key_top).mean())
viterbi_gain = {kind: ch9.mean_f1(f"{kind}/{ch9.CRF_LAYER}/viterbi") - ch9.mean_f1(f"{kind}/{ch9.CRF_LAYER}/argmax")
                for kind in ("frozen", "tuned")}
crf_gain = ch9.mean_f1(f"crf/{ch9.CRF_LAYER}/viterbi") - ch9.mean_f1(f"frozen/{ch9.CRF_LAYER}/viterbi")
Markdown(
    f"**Token accuracy against entity F1.** The frozen top-layer tagger with argmax labels "
    f"{100 * accuracy_top:.1f} % of the test tokens correctly, and its entity F1 is {f1_top:.3f}. The rule fixed "
    f"for this comparison asked token accuracy to exceed entity F1 by five points; it does by "
    f"{100 * (accuracy_top - f1_top):.1f}, so on these taggers token accuracy does not flatter by that much: they "
    f"are good enough that both measures are high. The unit of counting still shows in the errors: the tagger "
    f"gets {100 * (1 - accuracy_top):.1f} % of the tokens wrong but loses {100 * (1 - f1_top):.1f} % of the entity "
    f"score, {(1 - f1_top) / (1 - accuracy_top):.0f} times as much, because most tokens are `O` and easy while a "
    f"mention counts only when every one of its tokens is right and nothing spills over. **Decoding.** Restricting "
    f"the same "
    f"distributions to valid sequences changes the frozen tagger's F1 by {100 * viterbi_gain['frozen']:+.1f} points "
    f"and the fine-tuned one's by {100 * viterbi_gain['tuned']:+.1f}; learning the transitions (the CRF) changes "
    f"it by a further {100 * crf_gain:+.1f} points over constrained Viterbi on the same frozen vectors."
)

# %% [markdown]
# **A partial span is two errors.** Entity scoring counts a prediction as right only if its
# start, end and type all match a gold mention. Finding "jane" where the text says "jane
# villanueva" is then a false positive (the one-token span matches nothing) and a false
# negative (the person was missed), though a token count would call it half right:

# %%
found = tagging.entity_scores([[(0, 2, "PERSON")]],   # gold: "jane villanueva", tokens 0 and 1
                              [[(0, 1, "PERSON")]])   # found: "jane" alone
{"true positives": int(found.tp.sum()), "false positives": int(found.fp.sum()),
 "false negatives": int(found.fn.sum())}

# %% [markdown]
# One such case from the book seed's frozen top-layer tagger:

# %% tags=["hide-input"]
partial = ch9.partial_spans(key_top)
if partial:
    sentence, gold_span, found_span = partial[0]
    text = test.words[sentence]
    counts = tagging.entity_scores([[gold_span]], [[found_span]])
    note = Markdown(
        f"In *{' '.join(text)}*, the gold PERSON is **{' '.join(text[gold_span[0]:gold_span[1]])}** and the tagger "
        f"found **{' '.join(text[found_span[0]:found_span[1]])}**: {int(counts.tp.sum())} true positives, "
        f"{int(counts.fp.sum())} false positive, {int(counts.fn.sum())} false negative. The book seed's tagger makes "
        f"{len(partial)} such partial PERSON predictions on the test corpus."
    )
else:
    note = Markdown("The book seed's frozen top-layer tagger never predicts part of a PERSON mention on this test "
                    "corpus.")
note

# %% [markdown]
# ## Is a difference real?
#
# The test corpus is one draw. A paired bootstrap resamples its sentences with replacement,
# the same sentences for both taggers, and recomputes both F1 scores on each resample
# ([Berg-Kirkpatrick et al. 2012](../references.html#berg-kirkpatrick-2012)); the share of
# resamples whose difference exceeds twice the observed one is the p-value of "A is no
# better than B". On the book seed's runs:

# %%
rows = []
for a, b in ch9.COMPARISONS:
    r = ch9.bootstrap(a, b)
    rows.append([ch9.TAGGERS[a], ch9.TAGGERS[b], f"{r.f1_a:.3f}", f"{r.f1_b:.3f}",
                 f"[{r.low:+.3f}, {r.high:+.3f}]", f"{r.p_value:.3f}"])
table(["A", "B", "F1 of A", "F1 of B", "95 % interval of A − B", "p"], rows)

# %% tags=["hide-input"]
Markdown(
    f"Each row draws {ch9.BOOTSTRAP_RESAMPLES} resamples. "
    "The interval is about the *test sentences*, for one trained tagger; the spread over seeds in the score table is "
    "about the *training* (the encoder's seed, the head's initialisation and batches). A difference can be certain "
    "on this test set and still change sign with another seed, so the book reports both."
)

# %% [markdown]
# ## Redacting names
#
# Found mentions feed other tasks. *Entity linking* maps each mention to an entry of a
# knowledge base, such as a Wikipedia page; in these filings it would be a lookup, since each
# alias names exactly one company. *Sentiment towards an entity* asks whether a text speaks
# well or badly of the thing a mention names; chapter 8's probes ask the simplest version,
# whether a news sentence of a filing reports good or bad news. One use is built here in full: to anonymise a text, replace every token inside a
# predicted PERSON mention before the text is shared. What matters then is not the F1 but what leaks: a
# person mention *leaks* when any of its tokens is left visible, because it was missed
# entirely or redacted only in part. Tokens redacted outside every person mention cost the
# text, not privacy.
# [`redaction_leaks`](../api/mlm_book.experiments.ch09_spans.html#mlm_book.experiments.ch09_spans.redaction_leaks)
# counts both on the test corpus, for each tagger and seed:

# %%
redactors = ("frozen/0/viterbi", "frozen/2/viterbi", f"crf/{ch9.CRF_LAYER}/viterbi", "tuned/2/viterbi")
table(["tagger", "person mentions leaked, per seed", "of which missed entirely", "tokens over-redacted"],
      [[ch9.TAGGERS[key], ", ".join(str(run["leaked"]) for run in ch9.anonymisation(key)),
        ", ".join(str(run["missed"]) for run in ch9.anonymisation(key)),
        ", ".join(str(run["over-redacted tokens"]) for run in ch9.anonymisation(key))] for key in redactors])

# %% tags=["hide-input"]
people = ch9.anonymisation(redactors[0])[0]["mentions"]
layer0 = ch9.anonymisation(redactors[0])
crf_runs = ch9.anonymisation(redactors[2])
Markdown(
    f"Of the {people} person mentions of the test corpus, the frozen layer-0 tagger leaks "
    f"{min(r['leaked'] for r in layer0)}–{max(r['leaked'] for r in layer0)} depending on the seed "
    f"({100 * min(r['leaked'] for r in layer0) / people:.0f}–"
    f"{100 * max(r['leaked'] for r in layer0) / people:.0f} %), "
    + ("almost all" if sum(r['partly redacted'] for r in layer0) >= 0.9 * sum(r['leaked'] for r in layer0)
       else "some") + f" of them partly: {sum(r['partly redacted'] for r in layer0)} of its "
    f"{sum(r['leaked'] for r in layer0)} leaks over the seeds keep part of the name visible. The CRF on the top "
    f"layer leaks {', '.join(str(r['leaked']) for r in crf_runs)} at the {len(crf_runs)} seeds. Every leak is "
    "also an error of entity F1 (a person span the tagger did not find exactly), but not every such error "
    "leaks: a predicted span that covers the whole name and more over-redacts and hides the person all the same."
)

# %% [markdown]
# ## One sentence, tagged

# %%
example = ch9.example_sentence()
taggers = ("frozen/0/argmax", "frozen/2/argmax", "crf/2/viterbi")
show(ch9.figure_sentence(example, taggers))

# %% [markdown]
# ## Splitting words

# %% tags=["hide-input"]
Markdown(
    f"Most PERSON and LOC tokens reach the encoder as `[UNK]` ({100 * ch9.unknown_share('PERSON'):.0f} % and "
    f"{100 * ch9.unknown_share('LOC'):.0f} % in the table above): chapter 6's vocabulary keeps only the words its "
    f"filings use at least {ch9.minimum_count()} times. Byte-pair encoding "
    f"([Sennrich et al. 2016](../references.html#sennrich-2016)) avoids unknown words altogether. It starts from "
    f"characters (a word's last character marked as its end) and repeatedly merges the most frequent adjacent pair "
    f"of symbols into a new symbol; a word is then written with the merges in the order they were learned. BERT's "
    f"vocabulary comes from a close relative, WordPiece ([Schuster and Nakajima 2012](../references.html#schuster-2012); "
    f"[Wu et al. 2016](../references.html#wu-2016)), which also grows a vocabulary of pieces from characters but "
    f"adds, at each step, the piece that most raises the likelihood of the training text under a language model "
    f"of the pieces, not the most frequent pair. SentencePiece's unigram model "
    f"([Kudo 2018](../references.html#kudo-2018)) goes the other way: it starts from a large set of candidate "
    f"pieces, fits a unigram language model over them, and prunes the pieces whose loss would hurt the "
    f"likelihood least, so a word can be split several ways and the likeliest split is chosen. All three split a "
    f"word into pieces that the tagger's decoder must map back to the word (the section after next). The book "
    f"uses BPE, the simplest of them. Learned "
    f"on chapter 6's filings and measured on the test corpus:"
)

# %%
show(ch9.figure_subwords())

# %% tags=["hide-input"]
size, unknown_train, unknown_test = ch9.word_vocabulary_rates()
matched = ch9.matched_statistics()
Markdown(
    f"The word vocabulary has {size} ids and misses {100 * unknown_train:.1f} % of the word tokens of the filings "
    f"it was built from, {100 * unknown_test:.1f} % of the test corpus's. A BPE with the same {matched.vocabulary_size} "
    f"ids misses **none** ({100 * matched.unknown_rate:.0f} %: every character of the test corpus occurs in the "
    f"training filings), and pays with length: {matched.subwords_per_word:.2f} tokens per word on average, "
    f"{ch9.mention_pieces('PERSON'):.1f} per PERSON token and {ch9.mention_pieces('LOC'):.1f} per LOC token, "
    f"against {ch9.mention_pieces('ORG'):.1f} per ORG token, whose words are frequent. The names are built from "
    f"pieces (the generator makes places and surnames from a few dozen heads and tails), and BPE finds them:"
)

# %%
ch9.split_table(ch9.unknown_words(example) + ["kestrel", "impairment"])

# %% [markdown]
# ### Tagging pieces
#
# A tagger over pieces needs two more conventions. In training, every piece of a word takes
# the word's tag. In decoding, a word's tag is read either from its **first** piece's
# distribution or from the **mean** of its pieces' distributions; on a word of one piece the
# two agree. Scores still count words: the predicted word tags are read into spans and
# compared with the same gold spans as before.

# %% tags=["hide-input"]
word_setup = filing_encoder.SETUP
seconds = subwords.training_seconds()
Markdown(
    f"To try both, chapter 7's encoder was pre-trained again on the matched BPE's pieces, by chapter 7's recipe at "
    f"its {len(subwords.SEEDS)} seeds, with three changes fixed before any run: windows of {subwords.SETUP.length} pieces "
    f"(chapter 6's filings have {subwords.pieces_per_word():.2f} pieces per word, so a window holds about the "
    f"{word_setup.length} words of chapter 6's windows), {subwords.SETUP.batch_windows} windows a batch (the same "
    f"{subwords.SETUP.length * subwords.SETUP.batch_windows} slots a step), and **{subwords.SETUP.steps} steps instead of "
    f"{word_setup.steps}**: what this chapter's four-minute training budget allows at {len(subwords.SEEDS)} seeds (an "
    f"encoder took {seconds.min():.0f}–{seconds.max():.0f} s here). The taggers are the ones above, on the same "
    f"sentences: frozen probes on each layer, and one tagger fine-tuned through both blocks."
)

# %%
show(subwords.figure_losses())

# %% tags=["hide-input"]
losses = np.array([subwords.trained_encoder(seed).losses for seed in subwords.SEEDS])
Markdown(
    f"The curves are the first result, and a warning for the rest. The subword encoders stop while their loss is "
    f"still falling steeply: over their last 100 steps it averaged {losses[:, -100:].mean():.2f} nats per piece, "
    f"{losses[:, -200:-100].mean() - losses[:, -100:].mean():.2f} below the 100 steps before. Chapter 7's encoder, "
    f"at the same step of its longer schedule, had long left the shoulder where the subword encoders still are. So "
    f"the taggers below read an encoder that stopped early: they compare two ways of decoding one encoder, not "
    f"pieces against words. The table gives each tagger's entity micro-F1 at the book seed, with the mean ± sd over "
    f"the {len(subwords.SEEDS)} seeds in brackets."
)

# %%
subwords.f1_table()

# %%
show(subwords.figure_decoders())

# %%
gap, higher = subwords.decoder_gap("tuned/2/argmax")  # any tagger's key without its decoder
print(f"F1 of the mean of pieces minus the first piece's: {gap:+.3f} (mean over seeds); "
      f"the mean is higher at {higher} of {len(subwords.SEEDS)} seeds")

# %% tags=["hide-input"]
gap_top, holding_top = subwords.decoder_gap(f"frozen/{ch9.CRF_LAYER}/viterbi")
gap_tuned, holding_tuned = subwords.decoder_gap(f"tuned/{subwords.TUNED_DEPTH}/viterbi")
gaps = [subwords.decoder_gap(f"{kind}/{how}") for kind in [*(f"frozen/{layer}" for layer in subwords.LAYERS),
                                                         f"tuned/{subwords.TUNED_DEPTH}"] for how in ("argmax", "viterbi")]
every = sum(holding for _, holding in gaps)
share, first_acc, mean_acc, unsplit_acc = subwords.split_words()
Markdown(
    f"**The mean of the pieces decodes better than the first piece**, in {every} of the {len(gaps) * len(subwords.SEEDS)} "
    f"(tagger, decoder, seed) cases: by {100 * gap_top:.1f} points of F1 on the frozen top layer "
    f"({holding_top} of {len(subwords.SEEDS)} seeds) and {100 * gap_tuned:.1f} after fine-tuning ({holding_tuned} of "
    f"{len(subwords.SEEDS)}). The gap comes only from the {100 * share:.0f} % of test words that the BPE splits: on them the "
    f"frozen top-layer probe gets {100 * first_acc:.1f} % of the tags right from the first piece and "
    f"{100 * mean_acc:.1f} % from the mean (book seed), against {100 * unsplit_acc:.1f} % on unsplit words. On this "
    f"encoder, frozen or fine-tuned, the first piece of a split word is a worse witness of the word's tag than its "
    f"pieces together. BERT's convention ([Devlin et al. 2019](../references.html#devlin-2019)), the first piece "
    f"alone, relies on the layers carrying a word's evidence to "
    f"its first piece; whether a fully trained encoder closes the gap, this budget does not tell.\n\n"
    f"Against chapter 7's word encoder the subword taggers lose by far: {subwords.mean_f1(f'frozen/{ch9.CRF_LAYER}/mean/viterbi'):.2f} "
    f"against {ch9.mean_f1(f'frozen/{ch9.CRF_LAYER}/viterbi'):.2f} on the frozen top layer (means, Viterbi, mean "
    f"of pieces), and the blocks do not help a frozen probe: "
    + ", ".join(f"{subwords.mean_f1(f'frozen/{layer}/mean/viterbi'):.2f} after {layer} block{'s' if layer != 1 else ''}"
                for layer in subwords.LAYERS)
    + f", where the word encoder climbs from {ch9.mean_f1('frozen/0/viterbi'):.2f} to "
    f"{ch9.mean_f1(f'frozen/{ch9.CRF_LAYER}/viterbi'):.2f}. Even the unknown names that motivated subwords are not rescued: the "
    f"subword tagger finds {100 * subwords.unknown_recall('LOC', f'frozen/{ch9.CRF_LAYER}/mean/viterbi')[0]:.0f} % of "
    f"the test LOC mentions that the word vocabulary reads only as `[UNK]`, the word tagger "
    f"{100 * ch9.unknown_recall('LOC', f'frozen/{ch9.CRF_LAYER}/viterbi'):.0f} % from their contexts. With the "
    f"caveat above, this says what a third of chapter 7's schedule buys on pieces, not what pieces can do."
)

# %% [markdown]
# ## Tagging the hidden states
#
# Entities are one kind of sequence label. The classic other kind gives *every* word a
# tag, its part of speech, read from the word and its neighbours. Natural text has no
# exact answer to score a tagger against; the HMM language of chapters 1 to 5 has one. Its
# hidden states are its parts of speech, and forward–backward gives, at every position, the
# posterior $P(s_i \mid x)$ from which the best possible tagger guesses. A tagger that
# reads the words up to $i$ only is bounded by the filtered posterior
# $P(s_i \mid x_{\le i})$ instead (chapter 10). So each tagger has an exact ceiling, the
# expected accuracy of the best guess from what it reads:
#
# $$ \text{both sides: } \mathbb E\big[\max_s P(s_i = s \mid x)\big], \qquad
#    \text{left only: } \mathbb E\big[\max_s P(s_i = s \mid x_{\le i})\big]. $$

# %%
from mlm_book.artefacts import state_taggers
from mlm_book.experiments import ch09_states as states
from mlm_book.hmm import default_hmm

hmm = default_hmm()
study = states.results()

# %% tags=["hide-input"]
run = state_taggers.book_run()
recipe = state_taggers.TAGGER
share_w = study.occurrences / (study.sentences * run.length)
own = ", ".join(sorted({str(k) for k in states.own_tokens(hmm)}))
Markdown(
    f"In this language the task is mostly a lookup. Each of the {hmm.n_states} states emits {own} tokens of its own, "
    f"so a token other than *w* names its state outright, and both ceilings are 1 there. Only *w*, emitted by the "
    f"two sense states, leaves the state open, and it is frequent: {study.occurrences} of the "
    f"{study.sentences * run.length} held-out positions ({100 * share_w:.0f} %). At *w* the both-sides ceiling is "
    f"**{study.ceilings['both']['w']:.3f}** and the left-only one **{study.ceilings['left']['w']:.3f}**; over all "
    f"positions they are {study.ceilings['both']['all']:.4f} and {study.ceilings['left']['all']:.4f}. Tagging "
    f"states is tagging *w*'s sense at every occurrence (chapter 5's task) plus a lookup, and the scores that tell "
    f"taggers apart are the ones at *w*.\n\n"
    f"Two encoders of the same shape are fine-tuned as taggers, at each of the book's {len(study.seeds)} seeds: the "
    f"book's HMM encoder (bidirectional: its tag at $i$ reads the whole sentence) and chapter 10's causal next-token "
    f"reader (left-to-right: the mask lets its tag at $i$ read $x_{{\\le i}}$ only). Each gets a softmax head over "
    f"the {hmm.n_states} states on its last layer, and every weight trains (full fine-tuning), by one recipe fixed "
    f"before any tagger was scored: {run.train_sentences} labelled sentences of length {run.length} (their sampled "
    f"states are the tags), {recipe.steps} AdamW steps of {recipe.batch_size} sentences, peak learning rate "
    f"{recipe.lr:g} after {recipe.schedule().warmup} warm-up steps and a cosine to zero, weight decay "
    f"{recipe.weight_decay:g}. Batch, rate and decay are the entity taggers'; the length is a pilot's at the book "
    f"seed, whose training loss had flattened by then. The frozen encoders, read by chapter 5's linear probe on "
    f"the same last layer, are the baseline. Every tagger is scored on {study.sentences} fresh held-out sentences."
)

# %%
states.summary_table(study)

# %% tags=["hide-input"]
Markdown(
    "Each cell gives the book seed's value, with the mean ± sd over the seeds in brackets. *Accuracy* counts the "
    "guesses that match the sampled states; the *expected accuracy* of a tagger's guesses is their posterior "
    "mass, $\\mathbb E[P(s_i = \\hat s_i \\mid x)]$, its accuracy with the luck of the sampled states averaged out. "
    "No tagger's guesses can have more posterior mass than the both-sides ceiling, whatever it reads: that bound "
    "holds sentence by sentence. A tagger that reads the left only is bounded by the left-only ceiling on average "
    "over samples of sentences, not on each sample, since the mass of its guesses counts the words to the right "
    "too" + (f"; on these sentences the causal reader's probe sits up to {above:.3f} above it, which is that sampling"
             if (above := max(study.values("left-to-right", "probe", "expected_w")) - study.ceilings["left"]["w"]) > 0
             else "") + ". By position, at *w*:"
)

# %%
show(states.figure_positions(study))

# %% tags=["hide-input"]
bi, lr = (np.array(study.values(reader, "tuned", "w")) for reader in state_taggers.READERS)
both_w, left_w = study.ceilings["both"]["w"], study.ceilings["left"]["w"]
lr_by_position = np.mean(study.values("left-to-right", "tuned", "w_by_position"), axis=0)
left_by_position = study.ceilings["left"]["w_by_position"]
held = {result.claim.id: result.value["seeds holding"] for result in verify(claims=states.CLAIMS)}
probe_bi, probe_lr = (study.values(reader, "probe", "w") for reader in state_taggers.READERS)
off_probe, off_tuned = (study.values("bidirectional", kind, "off_w")[0] for kind in ("probe", "tuned"))
Markdown(
    f"**Both taggers reach their ceilings, and the ceilings differ.** At *w* the fine-tuned HMM encoder is right "
    f"{bi[0]:.3f} of the time at the book seed, within {np.abs(bi - both_w).max():.3f} of its both-sides ceiling "
    f"({both_w:.3f}) at every seed; the fine-tuned causal reader {lr[0]:.3f}, within {np.abs(lr - left_w).max():.3f} "
    f"of its left-only ceiling ({left_w:.3f}). The bidirectional tagger's lead, {(bi - lr).mean():.3f} on average, "
    f"is the exact gap between the ceilings, {both_w - left_w:.3f}: what the words after *w* are worth for its "
    f"sense. By position the picture is chapter 10's. Where *w* opens the sentence the left-only ceiling is the "
    f"static cap of chapter 1, {left_by_position[0]:.3f}, and the causal tagger scores {lr_by_position[0]:.2f} "
    f"there; the ceiling climbs to {left_by_position[3]:.2f} by the fourth position, and at the last one it meets "
    f"the both-sides ceiling, for nothing follows.\n\n"
    f"What fine-tuning adds differs between the two. The causal reader's frozen last layer already gives chapter "
    f"5's linear probe {probe_lr[0]:.3f} at *w* at the book seed ({np.mean(probe_lr):.3f} on average), against "
    f"{lr[0]:.3f} ({lr.mean():.3f}) fine-tuned. The HMM encoder's frozen probe gets {probe_bi[0]:.3f} at *w* "
    f"({np.mean(probe_bi):.3f}), against {bi[0]:.3f} ({bi.mean():.3f}) fine-tuned, and its frozen last layer, made to "
    f"predict hidden tokens, does not even give the probe the lookup: at the book seed the probe misses "
    f"{100 * (1 - off_probe):.1f} % of the positions whose token names its state (fine-tuned, "
    f"{100 * (1 - off_tuned):.2f} %), so that over all positions it scores "
    f"{study.values('bidirectional', 'probe', 'all')[0]:.3f}, below both left-to-right taggers. The training loss had flattened at every "
    f"seed: over the last 100 steps it averaged {study.losses['bidirectional'][:, -100:].mean():.3f} nats per "
    f"position for the bidirectional tagger and {study.losses['left-to-right'][:, -100:].mean():.3f} for the "
    f"left-to-right one, as over the 100 steps before ({study.losses['bidirectional'][:, -200:-100].mean():.3f} and "
    f"{study.losses['left-to-right'][:, -200:-100].mean():.3f}).\n\n"
    f"The three rules were written before any tagger was trained, each with the verdict expected; they hold at "
    f"{held['D-04']}, {held['D-04a']} and {held['D-04b']} seeds, as expected:"
)

# %%
states.rules_table()

# %% tags=["hide-input"]
Markdown(
    "**Parsing is named, not built.** The other classic analysis of a sentence labels its tree, not its words. This "
    "book's languages have no trees to find: the HMM's hidden structure is a chain, and its only \"parse\" is the "
    "state sequence tagged above. An exact ceiling for a parser would need a language whose latent structure is a "
    "tree, such as a probabilistic context-free grammar, where the inside–outside algorithm would take "
    "forward–backward's place."
)

# %% [markdown]
# ## Exercises
#
# **Exercise 1.** How many of the $(2n + 1)^2$ tag pairs does BIO allow for the four types,
# and how many tags may start a sentence?

# %% tags=["hide-input"]
allowed = tagging.allowed_transitions(list(ch9.TAGS), "BIO")
K = len(ch9.TAGS)
answer(f"**{int(allowed[:K, :K].sum())}** of {K * K} pairs: every tag may follow any tag except that `I-X` may "
       f"follow only `B-X` or `I-X` (each of the {len(ch9.TAGS) // 2} `I` tags has {K - 2} forbidden "
       f"predecessors). **{int(allowed[K, :K].sum())}** tags may start a sentence: `O` and the `B` tags.")

# %% [markdown]
# **Exercise 2.** The CRF's $\log Z(x)$ is a sum over $K^n$ tag sequences. Check the forward
# recursion against that sum on a four-token sentence with random scores.

# %% tags=["hide-input"]
rng = np.random.default_rng(0)
emissions, transitions = rng.normal(size=(4, K)), rng.normal(size=(K, K))
start, end = rng.normal(size=K), rng.normal(size=K)
brute = ch9.brute_force_log_partition(emissions, transitions, start, end)
answer(f"The recursion gives {crf.log_partition(emissions, transitions, start, end):.12f} and the sum over all "
       f"{K ** 4:,} sequences {brute:.12f}: equal to {abs(brute - crf.log_partition(emissions, transitions, start, end)):.0e}.")

# %% [markdown]
# **Exercise 3.** Why does a LOC mention that is `[UNK]` still get tagged?

# %% tags=["hide-input"]
answer(f"Its neighbours say what it is: a place follows *in*, *founded in*, or another place, and a country "
       f"list reads *in X Y and Z*. The frozen top-layer tagger finds {100 * ch9.unknown_recall('LOC'):.0f} % of "
       f"the test LOC mentions made only of `[UNK]` tokens (book seed), against "
       f"{100 * ch9.known_recall('LOC'):.0f} % of the others.")

# %% [markdown]
# **Exercise 4.** A left-to-right tagger meets *w* in first position. What is the best it
# can do there? And why do the two ceilings meet at a sentence's last position?

# %% tags=["hide-input"]
c = study.ceilings
sense = list(hmm.sense_states)
answer(f"At position 1 the only evidence is *w*, which both sense states emit with probability "
       f"{hmm.emission[sense[0], hmm.shared_token]:.1f}; the best guess is the sense with the larger stationary mass, "
       f"right with probability $\\max_k \\pi(h_k) / (\\pi(h_a) + \\pi(h_b))$ = "
       f"{hmm.initial[sense].max():.3f} / {hmm.initial[sense].sum():.3f} = **{states.first_position_ceiling():.3f}**, "
       f"chapter 1's static cap; the held-out sentences with *w* first give {c['left']['w_by_position'][0]:.3f}. At "
       f"the last position there is no right context, so the filtered posterior is the smoothed one, "
       f"$P(s_n \\mid x_{{\\le n}}) = P(s_n \\mid x)$: the ceilings at *w* there are "
       f"{c['left']['w_by_position'][-1]:.3f} and {c['both']['w_by_position'][-1]:.3f}.")

# %% [markdown]
# ## Claims

# %% tags=["hide-input"]
chapter_summary(verify(claims=ch9.CLAIMS + subwords.CLAIMS + states.CLAIMS))
