"""The picture of a training step's memory: one horizontal bar per step (e.g. per batch size),
stacked from its four parts (parameters, gradients, optimizer state, activations), in MiB.

>>> from helpers.memory import TrainingMemory
>>> fig = draw_memory({"batch 16": TrainingMemory(400_000, 400_000, 800_000, 5_500_000)})
"""

from __future__ import annotations

from collections.abc import Mapping

import matplotlib.pyplot as plt
from matplotlib.figure import Figure

from helpers.memory import TrainingMemory

MIB = 2**20
# The four parts in the order they are stacked, each with its colour: the three that depend on
# the model only in shades of blue, the one that grows with the batch in orange.
PARTS = {
    "parameters": "#08519c",
    "gradients": "#4292c6",
    "optimizer state": "#9ecae1",
    "activations": "#fd8d3c",
}


def draw_memory(steps: Mapping[str, TrainingMemory], title: str = "") -> Figure:
    """Return a figure with one horizontal stacked bar per entry of ``steps``, top to bottom
    in the mapping's order: its four parts in MiB, each labelled with its size where it is wide
    enough, and the total and the activations' share at the bar's end.

    ``steps`` maps a label (``"batch 16"``) to the :class:`~helpers.memory.TrainingMemory` of
    a step, as :func:`helpers.memory.estimate` returns it. Raises ``ValueError`` for an empty
    mapping, a value that is not a ``TrainingMemory``, a negative part or a step of 0 bytes.
    """
    if not isinstance(steps, Mapping) or not steps:
        raise ValueError("draw_memory needs a dict of {label: TrainingMemory}, at least one")
    for label, step in steps.items():
        if not isinstance(step, TrainingMemory):
            raise ValueError(
                f"{label!r}: expected a TrainingMemory (from helpers.memory.estimate), "
                f"got {type(step).__name__}"
            )
        sizes = step.rows()
        if any(sizes[part] < 0 for part in PARTS):
            raise ValueError(f"{label!r}: a part has a negative size: {sizes}")
        if step.total == 0:
            raise ValueError(f"{label!r}: the step holds 0 bytes: nothing to draw")

    widest = max(step.total for step in steps.values()) / MIB
    fig, ax = plt.subplots(figsize=(7, 1.2 + 0.75 * len(steps)), layout="constrained")
    labels = list(steps)[::-1]  # barh draws from the bottom: the first entry goes on top
    for row, label in enumerate(labels):
        step = steps[label]
        left = 0.0
        for part, colour in PARTS.items():
            width = step.rows()[part] / MIB
            ax.barh(row, width, left=left, color=colour, edgecolor="white", height=0.6)
            if width > 0.09 * widest:  # room for a label inside the segment
                ax.text(left + width / 2, row, f"{width:.1f}", ha="center", va="center")
            left += width
        share = step.activations / step.total
        ax.text(
            left + 0.01 * widest,
            row,
            f" {left:.1f} MiB in all, activations {share:.0%}",
            va="center",
            fontsize=9,
        )
    ax.set_yticks(range(len(labels)), labels)
    ax.set_xlim(0, widest * 1.45)  # room for the text at the end of the longest bar
    ax.set_xlabel("MiB")
    ax.set_title(title or "The memory of one training step, by part")
    handles = [plt.Rectangle((0, 0), 1, 1, color=colour) for colour in PARTS.values()]
    fig.legend(
        handles,
        list(PARTS),
        loc="outside lower center",
        ncols=len(PARTS),
        fontsize=9,
        frameon=False,
    )
    for side in ("top", "right"):
        ax.spines[side].set_visible(False)
    return fig
