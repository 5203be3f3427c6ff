"""The picture of a DataLoader's pipeline: the five steps by which it makes a batch
(``len(dataset)``, the sampler, ``batch_size``, ``dataset[i]`` with its transform, the
``collate_fn``), one numbered box each, labelled with what the given loader really holds and
yields.

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
from matplotlib.patches import FancyArrowPatch, FancyBboxPatch
from torch.utils.data import DataLoader, IterableDataset

WIDTH = 7.0  # inches: about the text column of the course's site, so the text is not shrunk
ROW, BOX_W, BOX_H, TOP = 0.88, 2.0, 0.62, 0.55  # inches
PIECE = "#c6dbef"


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
    return ", ".join(_name(t) for t in getattr(transform, "transforms", [transform]))


def _name(fn: Any) -> str:
    """A function's name, or the class name of a callable object (a transform, a module)."""
    return getattr(fn, "__name__", None) or type(fn).__name__


def _steps(loader: DataLoader, batch: Any, sample: Any) -> list[tuple[str, str]]:
    """The five steps as (box title, what the loader holds or yields at that step)."""
    dataset = loader.dataset
    n = len(dataset)
    per_batch = loader.batch_size or getattr(loader.batch_sampler, "batch_size", None)
    sampler = loader.sampler if loader.batch_size is not None else loader.batch_sampler
    batches = len(loader)
    grouped = f"{per_batch} indices per batch" if per_batch else "one list of indices per batch"
    grouped += f" → {batches:,} batches an epoch"
    dropped = loader.drop_last and per_batch and n % per_batch
    if dropped:
        grouped += f"\n{n % per_batch} samples left out each epoch (drop_last)"
    samples = f"{per_batch} samples" if per_batch else "the samples"
    return [
        ("len(dataset)", f"{type(dataset).__name__}: {n:,} samples"),
        ("sampler", f"{type(sampler).__name__}: orders the indices 0 … {n - 1:,}"),
        ("batch_size", grouped),
        (
            "dataset[i]",
            f"{type(dataset).__name__}.__getitem__(i) reads sample i"
            f"\ntransform: {_transform_name(dataset)}"
            f"\none sample: {', '.join(describe(sample))}",
        ),
        (
            "collate_fn",
            f"{_name(loader.collate_fn)}: {samples} → one batch"
            f"\nthe batch: {', '.join(describe(batch))}",
        ),
    ]


def draw_pipeline(loader: DataLoader, batch: Any) -> Figure:
    """Return a figure of the five steps by which ``loader`` makes ``batch``, top to bottom:
    ``len(dataset)``, its sampler, ``batch_size``, ``dataset[i]`` with the dataset's
    ``.transform`` (if it has one), and its ``collate_fn``, each labelled with real types,
    counts and shapes.

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

    steps = _steps(loader, batch, sample)
    height = TOP + ROW * len(steps)
    fig = plt.figure(figsize=(WIDTH, height))
    ax = fig.add_axes((0, 0, 1, 1))
    ax.set_xlim(0, WIDTH)
    ax.set_ylim(0, height)
    ax.axis("off")
    ax.text(
        0.1,
        height - 0.25,
        "How this DataLoader makes a batch, in five steps",
        fontsize=12,
        weight="bold",
        va="center",
    )
    for k, (title, text) in enumerate(steps):
        y = height - TOP - k * ROW - BOX_H  # the box's lower edge
        ax.add_patch(
            FancyBboxPatch(
                (0.15, y), BOX_W, BOX_H, boxstyle="round,pad=0.03", facecolor=PIECE, edgecolor="k"
            )
        )
        ax.text(0.35, y + BOX_H / 2, f"{k + 1}", fontsize=13, weight="bold", va="center")
        ax.text(0.65, y + BOX_H / 2, title, fontsize=11, family="monospace", va="center")
        ax.text(BOX_W + 0.4, y + BOX_H / 2, text, fontsize=10, va="center", linespacing=1.4)
        if k + 1 < len(steps):
            ax.add_patch(
                FancyArrowPatch(
                    (0.15 + BOX_W / 2, y - 0.03),
                    (0.15 + BOX_W / 2, y - ROW + BOX_H + 0.03),
                    arrowstyle="->",
                    mutation_scale=14,
                    lw=1.5,
                )
            )
    return fig
