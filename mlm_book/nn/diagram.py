r"""A drawing of the book's encoder, made from its configuration.

[`figure_architecture`][mlm_book.nn.diagram.figure_architecture] draws what
[`mlm_book.nn.encoder`][mlm_book.nn.encoder] computes, bottom to top: the shown tokens,
the token table $E$ and the position table $P$ summed into layer 0, the pre-LN blocks
(LayerNorm, self-attention without a causal mask, residual; LayerNorm, MLP, residual), the
final LayerNorm, the output head tied to $E$, and the loss, taken only at the positions the
corruption channel selected. The numbers on the drawing (vocabulary, width, heads, blocks,
length) are read from the [`EncoderConfig`][mlm_book.nn.encoder.EncoderConfig] it is given.

Examples
--------
>>> from mlm_book.nn.encoder import EncoderConfig
>>> fig = figure_architecture(EncoderConfig(vocab_size=25, length=24, d_model=32, n_blocks=2, n_heads=2))
>>> len(fig.axes)
1
>>> import matplotlib.pyplot as plt; plt.close(fig)
"""

from __future__ import annotations

import numbers

from mlm_book.figures import PALETTE, WIDE, subplots
from mlm_book.nn.encoder import EncoderConfig

__all__ = ["figure_architecture"]

_FILL = {"table": "#DCEBF5", "block": "#F6EEDC", "head": "#E1F2EA", "loss": "#F7E1D7", "ln": "#FFFFFF"}


def _box(ax, x, y, width, height, text, fill, *, fontsize=10.0, weight="normal", edge="0.35"):
    from matplotlib.patches import FancyBboxPatch

    ax.add_patch(FancyBboxPatch((x, y), width, height, boxstyle="round,pad=0.02,rounding_size=0.12",
                                facecolor=fill, edgecolor=edge, linewidth=1.0))
    ax.text(x + width / 2, y + height / 2, text, ha="center", va="center", fontsize=fontsize, weight=weight)


def _arrow(ax, start, end, *, style="-|>", color="0.25", dashed=False, connection="arc3"):
    from matplotlib.patches import FancyArrowPatch

    ax.add_patch(FancyArrowPatch(start, end, arrowstyle=style, mutation_scale=11, color=color, linewidth=1.1,
                                 linestyle="--" if dashed else "-", connectionstyle=connection,
                                 shrinkA=1, shrinkB=1))


def figure_architecture(config: EncoderConfig, *, rho: float | None = None, masked_position: int = 2):
    r"""The encoder of ``config`` as a block diagram (see the module's description).

    Parameters
    ----------
    config : EncoderConfig
        The encoder to draw; its sizes are printed on the drawing.
    rho : float, optional
        The channel's selection rate, printed beside the loss when given.
    masked_position : int
        Which of the six drawn input slots (0-5) shows ``[MASK]`` and carries the loss.

    Returns
    -------
    matplotlib.figure.Figure

    Raises
    ------
    TypeError
        If ``config`` is not an [`EncoderConfig`][mlm_book.nn.encoder.EncoderConfig], or
        ``masked_position`` is not an integer.
    ValueError
        If ``rho`` is not a number in (0, 1], or ``masked_position`` is not one of 0, 1, 2,
        3, 5 (slot 4 is the ellipsis).
    """
    if not isinstance(config, EncoderConfig):
        raise TypeError(f"config must be an EncoderConfig, got {type(config).__name__}")
    if rho is not None and (isinstance(rho, bool) or not isinstance(rho, (int, float)) or not 0 < rho <= 1):
        raise ValueError(f"rho must be a selection rate in (0, 1], got {rho!r}")
    if isinstance(masked_position, bool) or not isinstance(masked_position, numbers.Integral):
        # an array or a complex 0j would pass the membership test below and fail as an index
        raise TypeError(f"masked_position must be an integer slot, got {type(masked_position).__name__}")
    if masked_position not in (0, 1, 2, 3, 5):
        raise ValueError(f"masked_position must be one of 0, 1, 2, 3, 5, got {masked_position!r}")

    block_height, block_gap = 2.3, 0.45
    top = 3.3 + config.n_blocks * (block_height + block_gap) + 3.6
    fig, ax = subplots(width=WIDE, height=0.48 * top)
    ax.set_xlim(-0.2, 14)
    ax.set_ylim(0, top)
    ax.set_axis_off()
    left, width = 0.4, 8.2  # the model's column
    centre = left + width / 2
    note_x = left + width + 0.5  # the annotations' column

    # Inputs: six slots, one of them [MASK].
    slots = [r"$\tilde x_1$", r"$\tilde x_2$", r"$\tilde x_3$", r"$\tilde x_4$", "…", r"$\tilde x_n$"]
    slots[masked_position] = "[MASK]"
    slot_x = [left + 0.15 + k * (width - 0.3) / 6 for k in range(6)]
    slot_w = (width - 0.3) / 6 - 0.15
    for k, (x, text) in enumerate(zip(slot_x, slots)):
        fill = _FILL["loss"] if k == masked_position else "white"
        _box(ax, x, 0.2, slot_w, 0.6, text, fill, fontsize=9.5)
    ax.text(note_x, 0.5, f"shown tokens: the corrupted sentence,\nlength n ≤ {config.length}", va="center",
            fontsize=9)

    # Layer 0: token table + position table.
    _box(ax, left, 1.3, width * 0.48, 0.75, f"token table $E$\n$({config.input_vocab_size} \\times {config.d_model})$",
         _FILL["table"], fontsize=9.5)
    _box(ax, left + width * 0.52, 1.3, width * 0.48, 0.75,
         f"position table $P$\n$({config.length} \\times {config.d_model})$", _FILL["table"], fontsize=9.5)
    _arrow(ax, (centre - 1.6, 0.85), (centre - 1.6, 1.28))
    _arrow(ax, (centre + 1.6, 0.85), (centre + 1.6, 1.28))
    ax.text(centre, 2.55, r"$h^{(0)}_i = E[\tilde x_i] + P_i$", ha="center", va="center", fontsize=10)
    _arrow(ax, (left + width * 0.24, 2.07), (centre - 1.2, 2.4))
    _arrow(ax, (left + width * 0.76, 2.07), (centre + 1.2, 2.4))
    ax.text(note_x, 2.55, "layer 0: at a fixed position, a static\nembedding of the token", va="center", fontsize=9)

    # The blocks.
    y = 3.3
    _arrow(ax, (centre, 2.75), (centre, y - 0.02))
    for block in range(1, config.n_blocks + 1):
        _box(ax, left, y, width, block_height, "", _FILL["block"])
        ax.text(left + width - 0.15, y + block_height - 0.12, f"block {block}", fontsize=9, va="top", ha="right",
                style="italic")
        row_h = 0.62
        lower = y + 0.28
        upper = y + block_height - 0.28 - row_h
        _box(ax, left + 1.3, lower, 1.5, row_h, "LayerNorm", _FILL["ln"], fontsize=9.5)
        _box(ax, left + 3.1, lower, 3.9, row_h,
             f"self-attention, {config.n_heads} head{'s' if config.n_heads > 1 else ''}\n"
             f"({'causal mask' if config.causal else 'no causal mask'})",
             "white", fontsize=9.5)
        _box(ax, left + 1.3, upper, 1.5, row_h, "LayerNorm", _FILL["ln"], fontsize=9.5)
        _box(ax, left + 3.1, upper, 3.9, row_h,
             f"MLP ${config.d_model} \\to {config.mlp_ratio * config.d_model} \\to {config.d_model}$, GELU",
             "white", fontsize=9.5)
        for row in (lower, upper):
            _arrow(ax, (left + 2.8, row + row_h / 2), (left + 3.08, row + row_h / 2))
            ax.text(left + 7.45, row + row_h / 2, "+", ha="center", va="center", fontsize=13, weight="bold")
            _arrow(ax, (left + 7.0, row + row_h / 2), (left + 7.3, row + row_h / 2))
        # residual stream: the skip connections around each sub-layer
        _arrow(ax, (left + 0.7, y + 0.05), (left + 0.7, y + block_height - 0.05), style="-", color=PALETTE["grey"])
        ax.text(left + 0.55, y + block_height / 2, "residual", rotation=90, ha="center", va="center", fontsize=9,
                color="0.3")
        ax.text(note_x, y + block_height / 2,
                f"layer {block}: $h^{{({block})}}$, each position\nmixed with every other one", va="center",
                fontsize=9)
        y += block_height
        _arrow(ax, (centre, y + 0.02), (centre, y + block_gap - 0.02))
        y += block_gap

    # Head and loss.
    _box(ax, left, y, width, 0.62, "final LayerNorm", _FILL["ln"], fontsize=9.5)
    y += 0.62
    _arrow(ax, (centre, y + 0.02), (centre, y + 0.33))
    y += 0.35
    _box(ax, left, y, width, 0.8,
         r"tied output head: logits $= \mathrm{LN}(h^{(L)})\,E^{\top}/\sqrt{d} + b$" + f"  ({config.vocab_size} tokens)",
         _FILL["head"], fontsize=9.5)
    ax.text(note_x, y + 0.4, "the same table $E$ reads the\nvectors out (no second table)", va="center", fontsize=9)
    _arrow(ax, (left + 0.02, 1.68), (left + 0.02, y + 0.4), dashed=True, color=PALETTE["blue"],
           connection="arc3,rad=-0.08")
    y += 0.8
    _arrow(ax, (centre, y + 0.02), (centre, y + 0.33))
    y += 0.35
    _box(ax, left, y, width, 0.9,
         "softmax, then cross-entropy against the clean token,\nonly at the positions the channel selected",
         _FILL["loss"], fontsize=9.5)
    share = "the selected" if rho is None else f"a share ρ = {rho:g} of the"
    ax.text(note_x, y + 0.45, f"masked-LM loss: {share}\npositions, whatever they show", va="center", fontsize=9)
    return fig
