"""The picture of a DataLoader's pipeline: sampler → indices → dataset[i] → transform →
collate_fn → batch, each box labelled with what the given loader really holds and yields.

>>> from torch.utils.data import DataLoader, TensorDataset
>>> loader = DataLoader(TensorDataset(torch.zeros(10, 3), torch.arange(10)), batch_size=4)
>>> fig = draw_pipeline(loader, next(iter(loader)))
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import matplotlib.pyplot as plt
import torch
from matplotlib.figure import Figure
from matplotlib.patches import FancyBboxPatch
from torch.utils.data import DataLoader, IterableDataset

BOX_W, GAP, BOX_H = 2.0, 1.25, 1.7
PIECE, DATA = "#c6dbef", "#f0f0f0"  # code that runs / values that flow


def describe(value: Any) -> list[str]:
    """Return one line per part of a sample or batch: ``dtype (shape)`` for a tensor, the type
    name for anything else, ``key: ...`` for a dict.

    >>> describe((torch.zeros(3, 2, dtype=torch.uint8), torch.tensor(1)))
    ['uint8 (3, 2)', 'int64 ()']
    """
    if isinstance(value, torch.Tensor):
        return [f"{str(value.dtype).removeprefix('torch.')} {tuple(value.shape)}"]
    if isinstance(value, Mapping):
        return [f"{key}: {' '.join(describe(part))}" for key, part in value.items()]
    if isinstance(value, tuple | list):
        return [line for part in value for line in describe(part)]
    return [type(value).__name__]


def _leading_sizes(batch: Any) -> list[int]:
    """The first dimension of every tensor in a batch (nested tuples, lists, dicts)."""
    if isinstance(batch, torch.Tensor):
        return [len(batch)] if batch.ndim else []
    parts = batch.values() if isinstance(batch, Mapping) else batch
    if isinstance(parts, tuple | list) or isinstance(batch, Mapping):
        return [n for part in parts for n in _leading_sizes(part)]
    return []


def _transform_name(dataset: Any) -> str:
    """The names of the transforms a dataset holds in ``.transform`` (a ``Compose`` listed)."""
    transform = getattr(dataset, "transform", None)
    if transform is None:
        return "none"
    return "\n".join(_name(t) for t in getattr(transform, "transforms", [transform]))


def _name(fn: Any) -> str:
    """A function's name, or the class name of a callable object (a transform, a module)."""
    return getattr(fn, "__name__", None) or type(fn).__name__


def draw_pipeline(loader: DataLoader, batch: Any) -> Figure:
    """Return a figure of the steps by which ``loader`` makes ``batch``: its sampler, the indices
    of one batch, ``dataset[i]`` with the dataset's ``.transform`` (if it has one), its
    ``collate_fn`` and the batch, each labelled with real types and shapes.

    ``batch`` is one batch the loader yielded; the sample shown is ``loader.dataset[0]``, read
    with the random number generator saved and restored, so drawing changes no later result.
    Raises ``ValueError`` for anything but a DataLoader over a non-empty, indexable dataset, or
    a batch that holds no tensors or more samples than the loader's ``batch_size``.
    """
    if not isinstance(loader, DataLoader):
        raise ValueError(f"draw_pipeline needs a DataLoader, got {type(loader).__name__}")
    dataset = loader.dataset
    if isinstance(dataset, IterableDataset) or not hasattr(dataset, "__len__"):
        raise ValueError("draw_pipeline draws a map-style dataset (with __len__ and __getitem__)")
    if len(dataset) == 0:
        raise ValueError("the loader's dataset is empty: there is no sample to draw")
    sizes = _leading_sizes(batch)
    if not sizes:
        raise ValueError(
            f"batch should be a batch from the loader (tensors), got {type(batch).__name__}"
        )
    per_batch = loader.batch_size or getattr(loader.batch_sampler, "batch_size", None)
    if per_batch is not None and max(sizes) > per_batch:
        raise ValueError(
            f"batch holds {max(sizes)} samples but the loader's batch_size is {per_batch}: "
            "pass a batch from this loader"
        )
    with torch.random.fork_rng(devices=[]):  # a random transform draws: put the state back
        sample = dataset[0]

    n = len(dataset)
    sampler = loader.sampler if loader.batch_size is not None else loader.batch_sampler
    batches = len(loader)
    size_text = f"{per_batch} per batch" if per_batch else "one list per batch"
    boxes = [
        ("sampler", [type(sampler).__name__, f"orders {n:,} indices"], PIECE),
        ("indices", [size_text, f"{batches:,} batches an epoch"], DATA),
        ("dataset[i]", [type(dataset).__name__, "__getitem__(i)"], PIECE),
        ("transform", _transform_name(dataset).splitlines(), PIECE),
        ("collate_fn", [_name(loader.collate_fn), "list → batch"], PIECE),
        ("batch", describe(batch), DATA),
    ]
    samples = f"{per_batch} samples" if per_batch else "samples"
    flows = [
        "i₁, i₂, …",
        "one i\nat a time",
        "stored\nsample",
        "\n".join([samples, *describe(sample)]),
        "",
    ]

    fig = plt.figure(figsize=(14, 3.2), layout="constrained")
    ax = fig.add_subplot()
    for k, (title, lines, colour) in enumerate(boxes):
        x = k * (BOX_W + GAP)
        ax.add_patch(
            FancyBboxPatch(
                (x, 0), BOX_W, BOX_H, boxstyle="round,pad=0.04", facecolor=colour, edgecolor="k"
            )
        )
        ax.text(x + BOX_W / 2, BOX_H - 0.28, title, ha="center", va="center", weight="bold")
        ax.text(
            x + BOX_W / 2, BOX_H / 2 - 0.15, "\n".join(lines), ha="center", va="center", fontsize=8
        )
        if k < len(flows):
            ax.annotate(
                "",
                xy=(x + BOX_W + GAP, BOX_H / 2),
                xytext=(x + BOX_W, BOX_H / 2),
                arrowprops={"arrowstyle": "->", "lw": 1.5},
            )
            ax.text(
                x + BOX_W + GAP / 2, BOX_H / 2 + 0.1, flows[k], ha="center", va="bottom", fontsize=7
            )
    # dataset[i] calls the transform: a bracket under both boxes says so
    left, right = 2 * (BOX_W + GAP), 3 * (BOX_W + GAP) + BOX_W
    ax.plot([left, left, right, right], [-0.2, -0.35, -0.35, -0.2], color="k", lw=1)
    ax.text((left + right) / 2, -0.6, "both run inside __getitem__", ha="center", fontsize=8)
    dropped = loader.drop_last and per_batch and n % per_batch
    ax.set_title(
        f"DataLoader: {n:,} samples → {batches:,} batches"
        + (f", {n % per_batch} samples left out each epoch (drop_last)" if dropped else ""),
        fontsize=10,
    )
    ax.set_xlim(-0.2, 6 * BOX_W + 5 * GAP + 0.2)
    ax.set_ylim(-0.9, BOX_H + 0.4)
    ax.set_aspect("equal")
    ax.axis("off")
    return fig
