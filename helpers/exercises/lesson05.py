"""Checks for the exercises of lesson 05 · Dataset and DataLoader: the reference answers live
here, not in the notebook."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
from torch.nn.utils.rnn import pad_sequence
from torch.utils.data import DataLoader, Dataset

from helpers.exercises import equal, filled, report, tensor_close, true

MAX_LEN = 256  # exercise 2: the widest batch capped_collate may return


def exercise_1(with_index: type | Any, dataset: Dataset) -> None:
    """A Dataset class that wraps ``dataset``: its item ``i`` is ``dataset[i]``'s image and label,
    then ``i``; a shuffled DataLoader over it yields (images, labels, indices)."""
    wrapped: list[Dataset] = []

    def build() -> str | None:
        if not isinstance(with_index, type) or not issubclass(with_index, Dataset):
            return f"WithIndex should be a class built on Dataset, got {type(with_index).__name__}"
        wrapped.append(with_index(dataset))
        return None

    def length() -> str | None:
        got = wrapped[0].__len__()
        if got is Ellipsis:
            return "fill in `__len__` (it still returns `...`)"
        if not isinstance(got, int):
            return f"__len__ returned {got!r}: it should return how many samples there are, an int"
        return equal("len(WithIndex(dataset))", got, len(dataset))

    def item() -> str | None:
        got = wrapped[0][5]
        if got is Ellipsis:
            return "fill in `__getitem__` (it still returns `...`)"
        if not isinstance(got, tuple) or len(got) != 3:
            shown = got if got is None else type(got).__name__
            return f"WithIndex(dataset)[5] is {shown}: it should be a tuple (image, label, 5)"
        image, label = dataset[5]
        return (
            tensor_close("the image of WithIndex(dataset)[5]", got[0], image)
            or tensor_close("the label of WithIndex(dataset)[5]", torch.as_tensor(got[1]), label)
            or equal("the index of WithIndex(dataset)[5]", int(got[2]), 5)
        )

    def batches() -> str | None:
        loader = DataLoader(
            wrapped[0], batch_size=8, shuffle=True, generator=torch.Generator().manual_seed(0)
        )
        x, y, i = next(iter(loader))
        expected = [dataset[int(k)] for k in i]
        return tensor_close(
            "the images of a shuffled batch",
            x,
            torch.stack([image for image, _ in expected]),
            hint="each image should come with the index it was read at",
        ) or tensor_close(
            "the labels of a shuffled batch", y, torch.stack([label for _, label in expected])
        )

    report(
        filled(WithIndex=with_index),
        build,
        length,
        item,
        batches,
        done="WithIndex gives each sample its index, and a shuffled DataLoader batches all three",
    )


def reference_capped_collate(batch: list) -> tuple[torch.Tensor, torch.Tensor]:
    """Ids padded with 0 to the batch's longest review, at most ``MAX_LEN`` wide, and labels."""
    ids = pad_sequence([ids[:MAX_LEN] for ids, _ in batch], batch_first=True, padding_value=0)
    return ids, torch.stack([label for _, label in batch])


def exercise_2(capped_collate: Callable[[list], Any] | Any, reviews: Dataset) -> None:
    """A collate_fn that pads each batch to its longest review, cutting reviews to their first
    ``MAX_LEN`` ids, and returns (ids, labels)."""
    lengths = torch.tensor([len(reviews[i][0]) for i in range(len(reviews))])
    long = torch.nonzero(lengths > MAX_LEN).squeeze(1)[:2].tolist()
    short = torch.nonzero(lengths < MAX_LEN // 2).squeeze(1)[:6].tolist()
    batches = {"a batch with long reviews": long + short, "a batch of short reviews": short}

    def batch_problem(name: str, indices: list[int]) -> str | None:
        items = [reviews[i] for i in indices]
        got = capped_collate(list(items))
        if not isinstance(got, tuple | list) or len(got) != 2:
            shown = got if got is None else type(got).__name__
            return f"capped_collate(batch) returned {shown}: it should return (ids, labels)"
        if any(part is Ellipsis for part in got):
            return "fill in `ids` and `labels` in capped_collate (one is still `...`)"
        ids, labels = reference_capped_collate(items)
        return tensor_close(
            f"the ids of {name}",
            got[0],
            ids,
            hint=f"pad to the longest review of the batch, but cut each review at {MAX_LEN} ids",
        ) or tensor_close(f"the labels of {name}", got[1], labels)

    report(
        filled(capped_collate=capped_collate),
        true(callable(capped_collate), "capped_collate should be a function of a batch"),
        true(len(long) == 2 and len(short) == 6, "reviews needs long and short reviews"),
        *(lambda n=n, i=i: batch_problem(n, i) for n, i in batches.items()),
        done=f"capped_collate pads to the longest review, never wider than {MAX_LEN} ids",
    )
