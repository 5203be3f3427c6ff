"""The picture of one data parallel training step: each rank's shard of the batch, its own copy of
the model and its own gradient, the all-reduce that averages the gradients, and the same step on
every rank, labelled with the shards (and, when given, the gradients) at hand.

>>> fig = draw_ddp([[0, 2, 4, 6], [1, 3, 5, 7]])
>>> fig = draw_ddp([[0, 2], [1, 3]], grads=[0.25, -0.05], what="11.bias[0]")
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import matplotlib.pyplot as plt
from matplotlib.figure import Figure
from matplotlib.patches import FancyArrowPatch, FancyBboxPatch

WIDTH = 7.0  # inches: about the text column of the course's site, so the text is not shrunk
MAX_RANKS = 4  # more columns would not fit the width
ROW, BOX_H, TOP = 0.95, 0.6, 0.55  # inches
SHARD, MODEL, GRAD, REDUCE = "#c6dbef", "#e5e5e5", "#fdd0a2", "#c7e9c0"
SUBSCRIPT = str.maketrans("0123456789", "₀₁₂₃₄₅₆₇₈₉")


def shard_text(indices: Sequence[int], shown: int = 6) -> str:
    """Return the indices of one shard as a short line: all of them when there are at most
    ``shown``, else the first few, ``…``, the last, and the count.

    >>> shard_text([0, 2, 4])
    'images 0, 2, 4'
    >>> shard_text(range(0, 16, 2))
    'images 0, 2, 4, 6, …, 14 (8)'
    """
    indices = [int(i) for i in indices]
    if len(indices) <= shown:
        return "images " + ", ".join(map(str, indices))
    head = ", ".join(map(str, indices[: shown - 2]))
    return f"images {head}, …, {indices[-1]} ({len(indices)})"


def _numbers(name: str, values: Sequence[float], count: int) -> list[float]:
    """``values`` as floats, one per rank; ValueError for anything else."""
    if isinstance(values, str | bytes) or not isinstance(values, Sequence):
        raise ValueError(f"{name} should be a list of numbers, one per rank")
    try:
        numbers = [float(v) for v in values]
    except (TypeError, ValueError) as error:
        raise ValueError(f"{name} should hold numbers: {error}") from None
    if len(numbers) != count:
        raise ValueError(f"{name} has {len(numbers)} values for {count} ranks")
    if not all(math.isfinite(v) for v in numbers):
        raise ValueError(f"{name} holds a value that is not finite: {numbers}")
    return numbers


def _shards(shards: Sequence[Sequence[int]]) -> list[list[int]]:
    """``shards`` as lists of ints, 1 to MAX_RANKS of them, none empty; ValueError otherwise."""
    if isinstance(shards, str | bytes) or not isinstance(shards, Sequence):
        raise ValueError("shards should be a list with one list of sample indices per rank")
    if not 1 <= len(shards) <= MAX_RANKS:
        raise ValueError(f"draw_ddp draws 1 to {MAX_RANKS} ranks, got {len(shards)}")
    found = []
    for rank, shard in enumerate(shards):
        try:
            indices = [int(i) for i in shard]
        except (TypeError, ValueError):
            raise ValueError(f"the shard of rank {rank} should be a list of indices") from None
        if not indices:
            raise ValueError(f"the shard of rank {rank} is empty: every rank needs a sample")
        found.append(indices)
    return found


def _box(ax, x: float, y: float, w: float, text: str, colour: str, size: float = 9.5) -> None:
    """A rounded box of width w whose lower edge is at y, centred on x, with centred text."""
    ax.add_patch(
        FancyBboxPatch(
            (x - w / 2, y), w, BOX_H, boxstyle="round,pad=0.03", facecolor=colour, edgecolor="k"
        )
    )
    ax.text(x, y + BOX_H / 2, text, ha="center", va="center", fontsize=size, linespacing=1.3)


def _arrow(ax, start: tuple[float, float], end: tuple[float, float]) -> None:
    ax.add_patch(FancyArrowPatch(start, end, arrowstyle="->", mutation_scale=12, lw=1.3))


def draw_ddp(
    shards: Sequence[Sequence[int]],
    grads: Sequence[float] | None = None,
    averaged: float | None = None,
    what: str = "one entry",
) -> Figure:
    """Return a figure of one data parallel step on ``len(shards)`` ranks, top to bottom: each
    rank's shard of the batch, its own copy of the model, its own gradient gᵣ, one all-reduce
    that gives every rank the mean of the gradients, and the same optimizer step on every rank.

    ``shards`` holds the sample indices of each rank (1 to 4 ranks, none empty), as a
    ``DistributedSampler`` gives them. ``grads`` may give, per rank, the value of one entry of
    the gradient that rank computed on its own (``what`` names the entry); the all-reduce box
    then shows their mean, or ``averaged`` when given (the value the all-reduce returned).
    Raises ``ValueError`` for anything else.
    """
    shards = _shards(shards)
    n = len(shards)
    if grads is not None:
        grads = _numbers("grads", grads, n)
    if averaged is not None:
        if grads is None:
            raise ValueError("averaged is the all-reduce's result: give the ranks' grads too")
        averaged = _numbers("averaged", [averaged], 1)[0]

    height = TOP + 5 * ROW
    fig = plt.figure(figsize=(WIDTH, height))
    ax = fig.add_axes((0, 0, 1, 1))
    ax.set_xlim(0, WIDTH)
    ax.set_ylim(0, height)
    ax.axis("off")
    title = f"One data parallel step on {n} rank{'s' if n > 1 else ''}"
    ax.text(0.1, height - 0.25, title, fontsize=12, weight="bold", va="center")

    def row(k: int) -> float:  # the lower edge of the boxes of row k (0 at the top)
        return height - TOP - k * ROW - BOX_H

    column = WIDTH / n
    box_w = min(2.9, column - 0.25)
    size = 9.5 if n <= 2 else 8
    centres = [column * (r + 0.5) for r in range(n)]
    names = [f"g{r}".translate(SUBSCRIPT) for r in range(n)]
    wide = n <= 2  # room for the long labels
    model_text = "its own copy of the model\nforward and backward" if wide else "model copy"
    step_text = "the mean gradient\nthe same optimizer step" if wide else "mean gradient\nsame step"
    for r, (x, shard) in enumerate(zip(centres, shards, strict=True)):
        _box(ax, x, row(0), box_w, f"rank {r}\n{shard_text(shard, 6 if wide else 4)}", SHARD, size)
        _box(ax, x, row(1), box_w, model_text, MODEL, size)
        own = f"{names[r]} = {grads[r]:+.4g}" if grads is not None else names[r]
        _box(ax, x, row(2), box_w, f"{'its ' if wide else ''}own gradient\n{own}", GRAD, size)
        _box(ax, x, row(4), box_w, step_text, MODEL, size)
        for k in (0, 1):
            _arrow(ax, (x, row(k) - 0.03), (x, row(k + 1) + BOX_H + 0.03))
        _arrow(ax, (x, row(2) - 0.03), (x, row(3) + BOX_H + 0.03))
        _arrow(ax, (x, row(3) - 0.03), (x, row(4) + BOX_H + 0.03))

    formula = f"({' + '.join(names)}) / {n}"
    if grads is not None:
        value = averaged if averaged is not None else sum(grads) / n
        formula += f" = {value:+.4g}"
    reduce_text = f"all-reduce: every rank receives {formula}"
    if grads is not None:
        reduce_text += f"\n(the gradient of {what})"
    left, right = centres[0] - box_w / 2, centres[-1] + box_w / 2
    _box(ax, (left + right) / 2, row(3), right - left, reduce_text, REDUCE, size)
    return fig
