# %% [markdown]
# ## Do probes find what the encoder uses?
#
# *The caveat.* A probe that reads a property off a layer shows that a linear readout of the
# property exists, not that the encoder uses it. Chapter 6 met the sharpest form of this: a
# layer-0 probe typed *kestrel* as company or product far above the majority share, only because
# the two kinds of mention sat at different window positions (the position leak). Three questions
# follow. How much of a probe's accuracy could it have found by telling word types apart? Does the
# leak go away when the windows are cut finely enough? And does the HMM encoder use the sense
# direction that chapter 5's probe finds?

# %%
from mlm_book.experiments import ch06_finance as finance
from mlm_book.experiments import ch10_probes as probes
from mlm_book.figures import show
from mlm_book.ledger import verify
from mlm_book.report import Markdown

caveats = probes.results()
controls, leak, causal = caveats.controls, caveats.strides, caveats.causal
rules = verify(claims=probes.PRESTATED)
causal_rule = verify(claims=probes.CLAIMS)[0]


def band(values, fmt=".3f"):
    """The book seed's value, then mean ± sd over the training seeds in brackets."""
    return f"{values[0]:{fmt}} ({values.mean():{fmt}} ± {values.std(ddof=1):{fmt.lstrip('+')}})"


# %% tags=["hide-input"]
Markdown(
    f"*The experiments.* **Control tasks**, after [Hewitt and Liang (2019)](../references.html#hewitt-2019): a "
    f"control task gives every word type a random label, so a probe can learn it only by telling the types apart, "
    f"and a probe's *selectivity* is its accuracy on the real task minus its accuracy on the control. A label per "
    f"type is a constant on the occurrences of $w$, so the control runs on every token: the task is the hidden "
    f"regime (a or b) of each position, the sense of $w$ generalised to every token, whose exact Bayes accuracy "
    f"forward–backward gives; each of {probes.CONTROL_DRAWS} control draws labels a random {probes.CONTROL_LABELLED} "
    f"of the {probes.control_labels().shape[1]} types 1. Every other token than $w$ "
    f"is emitted by one regime only, so the task is a property of the type except at $w$ "
    f"({100 * controls.w_share:.0f} % of the tokens). **The stride**: chapter 6's layer-0 *kestrel* probe is rerun "
    f"with its windows cut every {', '.join(map(str, leak.strides[:-1]))} or {leak.strides[-1]} tokens (chapter 6 "
    f"cuts them every {finance.results().config.nearest_stride}). The expectation under test: with windows every token, every token can sit at the "
    f"centre, so the leak should vanish. **A causal test**, after the amnesic probing of "
    f"[Elazar et al. (2021)](../references.html#elazar-2021): on the HMM encoder, the direction that the layer-1 "
    f"sense probe reads is removed from the residual stream at every $w$ (its coordinate set to the training "
    f"occurrences' mean), the network is run on from layer 1, and the predictions at a `[MASK]` next to $w$ are "
    f"compared with the unablated ones and with the exact posterior. The control moves the same positions by the "
    f"same amounts along {probes.ABLATION_DRAWS} random directions. The resumed pass reproduces the encoder's "
    f"logits to {causal.resume_gap.max():.0e} when nothing is removed."
)

# %%
show(probes.figure_controls(),
     alt=f"Two panels. A: test accuracy of a linear probe over every token of the HMM encoder, by layer: the "
         f"regime task rises from {controls.task[0, 0]:.3f} at layer 0 to {controls.task[0, 1]:.3f} at layer 1, "
         f"the random label per word type stays near {controls.control_mean[0].min():.2f} at every layer, above "
         f"the task; the exact Bayes accuracy is {controls.bayes:.3f}. B: layer-0 accuracy of the kestrel probe "
         f"against the window stride from {leak.strides[0]} to {leak.strides[-1]}: between "
         f"{leak.nearest[0].min():.2f} and {leak.nearest[0].max():.2f} at every stride, against "
         f"{leak.majority:.3f} for the majority share and the centred reading.",
     caption="Probes against their controls: a random label per word type is read as well as the regime (A), "
             "and the position leak does not shrink with the stride (B). Book seed; bands: mean ± sd over "
             f"{len(controls.seeds)} training seeds.")

# %%
probes.control_table()

# %%
probes.stride_table()

# %% tags=["hide-input"]
selective, rise, vanish = rules
sel = controls.selectivity
stride_1 = leak.column(min(leak.strides))
product = leak.product_slots[0]
Markdown(
    f"Each learned number below is the book seed's, with its mean ± sd over the {len(controls.seeds)} training "
    f"seeds in brackets.\n\n"
    f"**Control tasks.** The random per-type labels are learned almost perfectly at every layer: "
    f"{band(controls.control_mean[:, 0])} at layer 0 and {band(controls.control_mean[:, 1])} at layer 1. The "
    f"types are linearly separable in the residual stream, so the regime probe, whose task is mostly the type, "
    f"is *less* accurate than its control everywhere: its selectivity is {band(sel[:, 0], '+.3f')} at layer 0 "
    f"and {band(sel[:, 1], '+.3f')} at layer 1. What the probe says about context is the rise from layer 0 to "
    f"layers 1 and 2, which is the contextual reading of $w$: on $w$'s occurrences alone the same probe goes "
    f"from {band(controls.task_at_w[:, 0])} to {band(controls.task_at_w[:, 1])}, below the exact Bayes "
    f"accuracy there ({controls.bayes_at_w:.3f}). Two rules were fixed before the numbers. That the selectivity "
    f"is above zero at layers 1 and 2: **it does not hold** ({selective.value['seeds holding']} seeds). That it "
    f"is at least {probes.SELECTIVITY_RISE} above layer 0's at layers 1 and 2: **it holds** "
    f"({rise.value['seeds holding']} seeds).\n\n"
    f"**The stride.** The leak does not vanish at any stride. With windows every token the layer-0 probe still "
    f"types the mentions with accuracy {band(stride_1)}, against a majority share of {leak.majority:.3f}; it is "
    f"the same at every seed, because any seed's position table tells the slots apart. Only "
    f"{100 * leak.at_centre[0]:.0f} % of *kestrel*'s mentions can be read at the centre even then: every product "
    f"mention lies within a few tokens of its filing's end and is read at slots {product[0]}–{product[1]} at "
    f"every stride, where no company mention is read below stride {leak.strides[-1]}. The stride moves the "
    f"tokens inside a filing; the leak lives at the filing's edges, which only the centred reading (padding "
    f"instead of shifting the window) removes. The rule fixed before the sweep, that at stride "
    f"{min(leak.strides)} the accuracy is at most the majority share plus {probes.LEAK_MARGIN}, **does not hold** "
    f"({vanish.value['seeds holding']} seeds), as the layout of the corpus had predicted."
)

# %%
show(probes.figure_causal(),
     alt=f"Two panels, one column per training seed of the HMM encoder. A: mean KL divergence of the predictions "
         f"next to w from the unablated ones, log scale: removing the sense direction gives between "
         f"{causal.kl_sense.min():.0e} and {causal.kl_sense.max():.0e} nats, inside the spread of the random "
         f"directions; replacing the whole vector of w gives at most {causal.kl_whole.max():.0e}. B: change of "
         f"cross-entropy against the exact posterior, between {causal.ce_sense.min():.0e} and "
         f"{causal.ce_sense.max():.0e} nats for the sense direction, of either sign like the random directions'.",
     caption="The causal test: what removing the layer-1 sense direction at every w does to the encoder's "
             "predictions at a [MASK] next to w (A), and to their cross-entropy against the exact posterior (B), "
             "against equal shifts along random directions and against replacing w's whole layer-1 vector.")

# %%
probes.causal_table()

# %% tags=["hide-input"]
Markdown(
    f"**The causal test.** Removing the sense direction moves the predictions next to $w$ by "
    f"{band(causal.kl_sense, '.1e')} nats, no more than equal shifts along random directions (the largest of "
    f"those reaches {causal.kl_random.max():.1e}), and changes their cross-entropy against the exact posterior by "
    f"amounts of the same size and of either sign, while the encoder's own divergence from the exact posterior "
    f"there is {band(causal.kl_exact)} nats. The rule fixed before the numbers, that removing the sense direction "
    f"moves the predictions more than every random direction does *and* raises their cross-entropy by more than "
    f"{probes.CAUSAL_SE:g} standard errors, **does not hold** ({causal_rule.value['seeds holding']} seeds). Two diagnostics say why. A probe retrained on the "
    f"ablated layer-1 vectors still reads the sense, with accuracy {band(causal.probe1_retrained)} against "
    f"{band(causal.probe1)} before: one direction does not hold it, which is why iterative removal "
    f"([Ravfogel et al. 2020](../references.html#ravfogel-2020)) takes out directions until no probe can read "
    f"the property. And even replacing $w$'s *whole* layer-1 vector by its mean moves the neighbours' predictions "
    f"by at most {causal.kl_whole.max():.0e} nats: when block 2 predicts a neighbour of $w$ it barely reads "
    f"$w$'s layer-1 vector, and the prediction rests on what block 1 gathered at the neighbour, from $w$'s input "
    f"vector and the rest of the context. The removal does reach $w$ itself: chapter 5's layer-2 probe on $w$ falls from "
    f"{band(causal.probe2)} to {band(causal.probe2_ablated)}.\n\n"
    f"**Answer:** a probe finds what can be read, not what is used: a random label per word type is read as "
    f"well as the regime, the position leak is read at every stride, and the sense that the layer-1 probe reads "
    f"at $w$ is not what the HMM encoder uses to predict $w$'s neighbours."
)
