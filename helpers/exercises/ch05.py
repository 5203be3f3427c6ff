"""Checks for 05 · Dataset and DataLoader's exercises: the reference answers live here, not in
the notebook."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
from torch import nn
from torch.utils.data import Dataset, Subset

from helpers.exercises import close, equal, filled, report, true


def exercise_1(dataset: Dataset, labels: torch.Tensor, train_split: Any, val_split: Any) -> None:
    """9,000 + 1,000 images of ``dataset``, in no split twice, a validation set of 500 per
    class, each class's images chosen in a shuffled order."""
    n_classes = int(labels.max()) + 1

    def split_problem() -> str | None:
        for name, split in [("train_split", train_split), ("val_split", val_split)]:
            if not isinstance(split, Subset) or len(split.dataset) != len(dataset):
                return f"{name} should be a Subset of dataset, got {type(split).__name__}"
        shared = set(train_split.indices) & set(val_split.indices)
        covered = set(train_split.indices) | set(val_split.indices)
        if shared:
            return f"{len(shared)} images are in both splits: split each class's indices in two"
        return true(
            len(covered) == len(dataset), f"the splits hold {len(covered):,} different images"
        )

    def val_labels() -> torch.Tensor:
        return torch.stack([label for _, label in val_split])

    def shuffled() -> str | None:
        for k in range(n_classes):
            taken = sorted(int(i) for i in val_split.indices if labels[i] == k)
            gaps = {taken[j + 1] - taken[j] for j in range(len(taken) - 1)}
            if len(gaps) < 5:  # a block, or every n-th image: a shuffled choice has many gaps
                return (
                    f"val_split takes the images of class {k} in a regular pattern (steps "
                    f"{sorted(gaps)[:3]}): shuffle each class's indices with gen"
                )
        return None

    report(
        filled(train_split=train_split, val_split=val_split),
        lambda: equal("len(train_split)", len(train_split), 9000),
        lambda: equal("len(val_split)", len(val_split), 1000),
        split_problem,
        lambda: equal(
            "the images per class in val_split",
            torch.bincount(val_labels(), minlength=n_classes).tolist(),
            [500] * n_classes,
            hint="choose the validation images class by class, the same number from each",
        ),
        shuffled,
        done="9,000 + 1,000 images, no image in both, and a validation set of 500 per class",
    )


def exercise_2(reviews: Dataset, sorted_pad_batch: Callable[[list], Any] | Any) -> None:
    """A collate function returning padded ids, labels and lengths, longest review first, each
    row with its own label and length."""
    picked = torch.randperm(len(reviews), generator=torch.Generator().manual_seed(1))[:8]
    items = [reviews[i] for i in picked.tolist()]
    out: list[torch.Tensor] = []

    def rows_problem() -> str | None:
        out[:] = sorted_pad_batch(list(items))
        x, y, n = out
        for row, (ids, label, k) in enumerate(zip(x, y, n.tolist(), strict=True)):
            source = [i for i, (item_ids, _) in enumerate(items) if torch.equal(item_ids, ids[:k])]
            if not source:
                return f"row {row} of the ids, cut at its length {k}, is none of the 8 reviews"
            if label != items[source[0]][1]:
                return f"the label of row {row} is not its review's: reorder the labels too"
            if (ids[k:] != 0).any():
                return f"row {row} is not padded with 0 after its length {k}"
        return None

    report(
        filled(sorted_pad_batch=sorted_pad_batch),
        lambda: true(callable(sorted_pad_batch), "sorted_pad_batch should be a function"),
        rows_problem,
        lambda: equal(
            "the lengths",
            out[2].tolist(),
            sorted((len(ids) for ids, _ in items), reverse=True),
            hint="longest first; and order the reviews before padding, when their lengths "
            "still differ",
        ),
        lambda: equal("the padded length", out[0].shape[1], out[2].max().item()),
        done="the batch comes longest review first, each label and length next to its review",
    )


def exercise_3(
    text_net: nn.Module, test_reviews: Dataset, true_prob: torch.Tensor | Any, worst: Any
) -> None:
    """``true_prob[i]`` is the model's probability of test review i's own label, and ``worst``
    the indices of the three lowest, lowest first."""

    def prob_of(i: int) -> float:
        ids, label = test_reviews[i]
        with torch.inference_mode():
            return text_net(ids.unsqueeze(0)).softmax(dim=1)[0, label].item()

    def probabilities_problem() -> str | None:
        sample = torch.randperm(len(test_reviews), generator=torch.Generator().manual_seed(0))
        for i in [*sample[:16].tolist(), *(int(i) for i in worst)]:
            problem = close(
                f"true_prob[{i}]",
                true_prob[i],
                prob_of(i),
                tol=1e-5,
                hint="the probability of the review's own label, at the index WithIndex gave",
            )
            if problem:
                return problem
        return None

    report(
        filled(true_prob=true_prob, worst=worst),
        lambda: equal("true_prob.shape", tuple(true_prob.shape), (len(test_reviews),)),
        probabilities_problem,
        lambda: equal(
            "worst",
            [int(i) for i in worst],
            true_prob.argsort()[:3].tolist(),
            hint="the positions of the 3 smallest values of true_prob, smallest first",
        ),
        done="true_prob holds each test review's probability by index, and worst its 3 lowest",
    )
