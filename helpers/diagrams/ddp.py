"""The picture of one data parallel training step: each rank's shard of the batch, its own copy of
the model and its own gradient, the all-reduce that averages the gradients, and the same step on
every rank, labelled with the shards (and, when given, the gradients) at hand. Given the value one
process computes on the whole batch, it also shows whether the all-reduce's result matches it.

>>> fig = draw_ddp([[0, 2, 4, 6], [1, 3, 5, 7]])
>>> fig = draw_ddp([[0, 2], [1, 3]], grads=[0.25, -0.05], what="11.bias[0]")
>>> fig = draw_ddp([[0, 2], [1, 3]], averaged=0.1, target=0.1, what="11.bias[0]")
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import matplotlib.pyplot as plt
from matplotlib.figure import Figure
from matplotlib.patches import FancyArrowPatch, FancyBboxPatch

WIDTH = 7.0  # inches: about the text column of the course's site, so the text is not shrunk
MAX_RANKS = 4  # more columns would not fit the width
ROW, BOX_H, TOP = 1.0, 0.68, 0.6  # inches: row pitch, box height, room for the title
LINE = 0.24  # inches: the height of one more line of text in a box
SHARD, MODEL, GRAD, REDUCE = "#c6dbef", "#e5e5e5", "#fdd0a2", "#c7e9c0"
MATCH, MISMATCH = "#a1d99b", "#fcbba1"  # the all-reduce box when a target is given
SUBSCRIPT = str.maketrans("0123456789", "₀₁₂₃₄₅₆₇₈₉")
RELATIVE = 1e-3  # how close to the target the all-reduce's value must be to "match" it


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


def _number(name: str, value: float) -> float:
    """``value`` as a finite float; ValueError for anything else."""
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"{name} should be a number, got {type(value).__name__}") from None
    if not math.isfinite(number):
        raise ValueError(f"{name} is not finite: {number}")
    return number


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


def matches(value: float, target: float) -> bool:
    """Whether the all-reduce's ``value`` equals one process's ``target`` up to float rounding.

    >>> matches(0.04812, 0.048121), matches(0.01962, 0.04812)
    (True, False)
    """
    return math.isclose(value, target, rel_tol=RELATIVE, abs_tol=1e-7)


def _box(ax, x: float, y: float, w: float, h: float, text: str, colour: str, size: float) -> None:
    """A rounded box of width w and height h whose lower edge is at y, centred on x."""
    ax.add_patch(
        FancyBboxPatch((x - w / 2, y), w, h, boxstyle="round,pad=0.03", facecolor=colour, ec="k")
    )
    ax.text(x, y + h / 2, text, ha="center", va="center", fontsize=size, linespacing=1.3)


def _arrow(ax, start: tuple[float, float], end: tuple[float, float]) -> None:
    ax.add_patch(FancyArrowPatch(start, end, arrowstyle="->", mutation_scale=14, lw=1.4))


def draw_ddp(
    shards: Sequence[Sequence[int]],
    grads: Sequence[float] | None = None,
    averaged: float | None = None,
    target: float | None = None,
    what: str = "one entry",
    title: str | None = None,
) -> Figure:
    """Return a figure of one data parallel step on ``len(shards)`` ranks, top to bottom: each
    rank's shard of the batch, its own copy of the model, its own gradient gᵣ, one all-reduce
    that gives every rank the mean of the gradients, and the same optimizer step on every rank.

    ``shards`` holds the sample indices of each rank (1 to 4 ranks, none empty), as a
    ``DistributedSampler`` gives them. ``grads`` may give, per rank, the value of one entry of
    the gradient that rank computed on its own (``what`` names the entry); the all-reduce box
    then shows their mean, or ``averaged`` when given (the value the all-reduce returned; it
    may also come alone). ``target`` is that entry as one process computes it on all the
    samples at once: the all-reduce box then shows it, says whether the two match, and turns
    green or red. ``title`` replaces the default title. Raises ``ValueError`` for anything else.
    """
    shards = _shards(shards)
    n = len(shards)
    if grads is not None:
        grads = _numbers("grads", grads, n)
    if averaged is not None:
        averaged = _number("averaged", averaged)
    elif grads is not None:
        averaged = sum(grads) / n
    if target is not None:
        if averaged is None:
            raise ValueError("target is compared with the all-reduce's result: give averaged")
        target = _number("target", target)

    names = [f"g{r}".translate(SUBSCRIPT) for r in range(n)]
    reduce_lines = [f"all-reduce: every rank receives ({' + '.join(names)}) / {n}"]
    if averaged is not None:
        reduce_lines[0] += f" = {averaged:+.4g}"
        reduce_lines.append(f"(the gradient of {what})")
    colour = REDUCE
    if target is not None:
        same = matches(averaged, target)
        total = sum(len(shard) for shard in shards)
        verdict = "matches" if same else "does NOT match"
        reduce_lines.append(f"one process on all {total} images: {target:+.4g}, {verdict}")
        colour = MATCH if same else MISMATCH
    reduce_h = BOX_H + LINE * max(0, len(reduce_lines) - 2)

    height = TOP + 4 * ROW + reduce_h + (ROW - BOX_H)
    fig = plt.figure(figsize=(WIDTH, height))
    ax = fig.add_axes((0, 0, 1, 1))
    ax.set_xlim(0, WIDTH)
    ax.set_ylim(0, height)
    ax.axis("off")
    if title is None:
        title = f"One data parallel step on {n} rank{'s' if n > 1 else ''}"
    ax.text(0.1, height - 0.3, title, fontsize=13, weight="bold", va="center")

    bottoms = [height - TOP - k * ROW - BOX_H for k in range(3)]  # shards, models, gradients
    bottoms.append(bottoms[-1] - (ROW - BOX_H) - reduce_h)  # the all-reduce
    bottoms.append(bottoms[-1] - ROW)  # the step
    heights = [BOX_H, BOX_H, BOX_H, reduce_h, BOX_H]

    column = WIDTH / n
    box_w = min(3.0, column - 0.2)
    size = 12 if n <= 2 else 11
    centres = [column * (r + 0.5) for r in range(n)]
    wide = n <= 2  # room for the long labels
    model_text = "its own copy of the model\nforward and backward" if wide else "model copy"
    step_text = "the mean gradient\nthe same optimizer step" if wide else "mean gradient\nsame step"
    for r, (x, shard) in enumerate(zip(centres, shards, strict=True)):
        label = f"rank {r}\n{shard_text(shard, 6 if wide else 3)}"
        _box(ax, x, bottoms[0], box_w, BOX_H, label, SHARD, size)
        _box(ax, x, bottoms[1], box_w, BOX_H, model_text, MODEL, size)
        own = f"{names[r]} = {grads[r]:+.4g}" if grads is not None else names[r]
        own_text = f"{'its ' if wide else ''}own gradient\n{own}"
        _box(ax, x, bottoms[2], box_w, BOX_H, own_text, GRAD, size)
        _box(ax, x, bottoms[4], box_w, BOX_H, step_text, MODEL, size)
        for k in range(4):
            _arrow(ax, (x, bottoms[k] - 0.03), (x, bottoms[k + 1] + heights[k + 1] + 0.03))

    left, right = min(0.15, centres[0] - box_w / 2), max(WIDTH - 0.15, centres[-1] + box_w / 2)
    reduce_text = "\n".join(reduce_lines)
    _box(ax, (left + right) / 2, bottoms[3], right - left, reduce_h, reduce_text, colour, size)
    return fig
