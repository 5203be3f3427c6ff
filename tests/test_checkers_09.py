"""The exercise checkers of chapter 09's two cookbook notebooks: right answers pass, the likely
wrong ones are told what is wrong (tried without executing the notebooks)."""

from __future__ import annotations

import re

import torch
from torch import nn
from torch.utils.data import TensorDataset

from helpers.authoring import course
from helpers.exercises import ch09, ch09_big_models
from helpers.toy import toy_model


def verdict(capsys, check) -> str:
    check()
    return capsys.readouterr().out


def ranks() -> list[torch.Tensor]:
    torch.manual_seed(0)
    return [torch.randn(2, 3, 4, 4) + r for r in range(4)]


def test_the_modules_are_named_after_the_notebooks():
    names = {p.name: course.exercise_module(p) for p in course.cookbook_paths()}
    assert names["09_ddp_syncbn_recipes.ipynb"] == "ch09"
    assert names["09_ddp_syncbn_big_models_recipes.ipynb"] == "ch09_big_models"


def test_samples_per_rank_right_and_wrong(capsys):
    numbers = TensorDataset(torch.arange(10))
    right = verdict(capsys, lambda: ch09.exercise_1(numbers, [4, 4, 4], [3, 3, 3], [0, 1]))
    assert right.startswith("✓")
    swapped = verdict(capsys, lambda: ch09.exercise_1(numbers, [3, 3, 3], [4, 4, 4], [0, 1]))
    assert swapped.startswith("✗") and "padded_sizes" in swapped and "[4, 4, 4]" not in swapped
    tail = verdict(capsys, lambda: ch09.exercise_1(numbers, [4, 4, 4], [3, 3, 3], [8, 9]))
    assert tail.startswith("✗") and "repeated" in tail


def test_sync_bn_statistics_right_and_wrong(capsys):
    data = ranks()
    counts = sum(t.numel() / t.shape[1] for t in data)
    sums = sum(t.sum((0, 2, 3)) for t in data)
    squares = sum((t * t).sum((0, 2, 3)) for t in data)
    mean = sums / counts
    var = squares / counts - mean**2
    assert verdict(capsys, lambda: ch09_big_models.exercise_2(data, mean, var)).startswith("✓")
    unbiased = var * counts / (counts - 1)
    told = verdict(capsys, lambda: ch09_big_models.exercise_2(data, mean, unbiased))
    assert told.startswith("✗") and "unbiased" in told
    # Averaging the ranks' own variances leaves out how far their means are apart.
    own = sum(t.var((0, 2, 3), correction=0) for t in data) / len(data)
    told = verdict(capsys, lambda: ch09_big_models.exercise_2(data, mean, own))
    assert told.startswith("✗") and "global_var" in told


def test_learning_rates_right_and_wrong(capsys):
    right = verdict(capsys, lambda: ch09.exercise_2(2048, 0.8, 1e-3 * 8**0.5))
    assert right.startswith("✓")
    told = verdict(capsys, lambda: ch09.exercise_2(1024, 0.4, 1e-3 * 2))
    assert told.startswith("✗") and "accumulation" in told and "1024" not in told
    told = verdict(capsys, lambda: ch09.exercise_2(2048, 3.2, 1e-3 * 8**0.5))
    assert told.startswith("✗") and "number of GPUs" in told
    told = verdict(capsys, lambda: ch09.exercise_2(2048, 0.8, 8e-3))
    assert told.startswith("✗") and "linear rule" in told and "0.0028" not in told
    told = verdict(capsys, lambda: ch09.exercise_2(2048, 0.8, "0.0028"))
    assert told.startswith("✗") and "should be a number" in told


def test_fsdp_shards_right_and_wrong(capsys):
    model = nn.Sequential(nn.Linear(10, 7), nn.Tanh(), nn.Linear(7, 4))
    right = verdict(capsys, lambda: ch09_big_models.exercise_1(model, 3, [49, 49, 11]))
    assert right.startswith("✓")
    even = verdict(capsys, lambda: ch09_big_models.exercise_1(model, 3, [37, 36, 36]))
    assert even.startswith("✗") and "[49" not in even
    weights_only = verdict(capsys, lambda: ch09_big_models.exercise_1(model, 3, [44, 44, 10]))
    assert weights_only.startswith("✗") and "every value" in weights_only
    two = verdict(capsys, lambda: ch09_big_models.exercise_1(model, 3, [54, 55]))
    assert two.startswith("✗") and "one per rank" in two


def test_the_shard_rule_is_what_fsdp2_did_in_the_notebook():
    """The checker's rule gives the counts the real FSDP2 run stored for the toy model."""
    notebook = course.COOKBOOK / "09_ddp_syncbn_big_models_recipes.ipynb"
    printed = "".join(
        o.get("text", "")
        for c in course.read(notebook).cells
        if c.cell_type == "code"
        for o in c.get("outputs", [])
    )
    stored = re.search(r"parameters held per rank: \[(\d+), (\d+)\] of (\d+)", printed)
    assert stored, "the FSDP2 recipe's stored output names the values each rank holds"
    assert ch09_big_models.fsdp_shards(toy_model(), 2) == [int(stored[1]), int(stored[2])]
