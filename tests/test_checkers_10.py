"""The exercise checkers of chapter 10's two cookbook notebooks: right answers pass, the likely
wrong ones are told what is wrong (tried without executing the notebooks)."""

from __future__ import annotations

import copy

import pytest
import torch
from torch import nn

from helpers.authoring import course
from helpers.exercises import ch10, ch10_inference


def verdict(capsys, check) -> str:
    check()
    return capsys.readouterr().out


def flip_each(images: torch.Tensor, generator: torch.Generator) -> torch.Tensor:
    draws = torch.rand(len(images), generator=generator, device=images.device)
    return torch.where((draws < 0.5).view(-1, 1, 1, 1), images.flip(-1), images)


def flip_in_a_loop(images: torch.Tensor, generator: torch.Generator) -> torch.Tensor:
    draws = torch.rand(len(images), generator=generator)
    return torch.stack(
        [im.flip(-1) if d < 0.5 else im for im, d in zip(images, draws, strict=True)]
    )


def test_the_modules_are_named_after_the_notebooks():
    names = {p.name: course.exercise_module(p) for p in course.cookbook_paths()}
    assert names["10_speedups_recipes.ipynb"] == "ch10"
    assert names["10_speedups_inference_recipes.ipynb"] == "ch10_inference"
    assert course.exercise_module(course.NOTEBOOKS / "10_speedups.ipynb") == "lesson10"


@pytest.mark.parametrize("answer", [flip_each, flip_in_a_loop])
def test_flip_each_passes_right_answers(capsys, answer):
    """The check looks at the result: a loop over the images passes too (the task asks for
    tensor operations on the whole batch, as the recipe does, and says the check does not)."""
    assert verdict(capsys, lambda: ch10.exercise_1(answer)).startswith("✓")


@pytest.mark.parametrize(
    ("answer", "told"),
    [
        (lambda images, g: images.flip(-1) if torch.rand(1, generator=g) < 2 else images, "one"),
        (lambda images, g: flip_each(images, torch.Generator().manual_seed(0)), "seed"),
        (lambda images, g: flip_each(images.flip(-1), g).flip(-1).flip(-2), "width"),
        (lambda images, g: flip_each(images, g).float(), "expected the batch's"),
        (
            lambda images, g: torch.where(
                (torch.rand(len(images)) < 0.5).view(-1, 1, 1, 1), images.flip(-1), images
            ),
            "generator",
        ),
        (
            lambda images, g: torch.where(
                (torch.rand(len(images), generator=g) < 0.9).view(-1, 1, 1, 1),
                images.flip(-1),
                images,
            ),
            "probability ½",
        ),
        (..., "fill in"),
    ],
    ids=["whole batch", "own seed", "height", "float", "global generator", "p=0.9", "blank"],
)
def test_flip_each_tells_wrong_answers(capsys, answer, told):
    out = verdict(capsys, lambda: ch10.exercise_1(answer))
    assert out.startswith("✗") and told in out, out


def fold(bn: nn.BatchNorm2d, conv: nn.Conv2d) -> nn.Conv2d:
    s = bn.weight / torch.sqrt(bn.running_var + bn.eps)
    t = bn.bias - bn.running_mean * s
    folded = copy.deepcopy(conv)
    with torch.no_grad():
        folded.weight.mul_(s.view(1, -1, 1, 1))
        folded.bias.add_((conv.weight * t.view(1, -1, 1, 1)).sum((1, 2, 3)))
    return folded


def fold_in_place(bn: nn.BatchNorm2d, conv: nn.Conv2d) -> nn.Conv2d:
    s = bn.weight / torch.sqrt(bn.running_var + bn.eps)
    t = bn.bias - bn.running_mean * s
    with torch.no_grad():
        conv.bias.add_((conv.weight * t.view(1, -1, 1, 1)).sum((1, 2, 3)))
        conv.weight.mul_(s.view(1, -1, 1, 1))
    return conv


def fold_scale_only(bn: nn.BatchNorm2d, conv: nn.Conv2d) -> nn.Conv2d:
    folded = copy.deepcopy(conv)  # the scale right, the shift forgotten
    s = bn.weight / torch.sqrt(bn.running_var + bn.eps)
    with torch.no_grad():
        folded.weight.mul_(s.view(1, -1, 1, 1))
    return folded


def conv_then_bn_formula(bn: nn.BatchNorm2d, conv: nn.Conv2d) -> nn.Conv2d:
    folded = copy.deepcopy(conv)  # the formula for BatchNorm *after* the conv: one factor per row
    s = bn.weight / torch.sqrt(bn.running_var + bn.eps)
    with torch.no_grad():
        folded.weight.mul_(s.view(-1, 1, 1, 1))
    return folded


def test_fold_bn_into_conv_passes_the_right_answer(capsys):
    out = verdict(capsys, lambda: ch10_inference.exercise_2(fold))
    assert out.startswith("✓"), out


@pytest.mark.parametrize(
    ("answer", "told"),
    [
        (lambda bn, conv: conv, "input"),
        (fold_scale_only, "shift"),
        (conv_then_bn_formula, "shape them (1, -1, 1, 1)"),
        (fold_in_place, "do not change the given BatchNorm or convolution"),
        (lambda bn, conv: nn.Sequential(bn, conv), "nn.Conv2d"),
        (None, "fill in"),
    ],
    ids=["unchanged", "scale only", "conv-then-BN", "in place", "a Sequential", "blank"],
)
def test_fold_bn_into_conv_tells_wrong_answers(capsys, answer, told):
    out = verdict(capsys, lambda: ch10_inference.exercise_2(answer))
    assert out.startswith("✗") and told in out, out


def test_fuse_linear_bn_still_checks(capsys):
    def fuse(linear: nn.Linear, bn: nn.BatchNorm1d) -> nn.Linear:
        scale = bn.weight / torch.sqrt(bn.running_var + bn.eps)
        fused = nn.Linear(linear.in_features, linear.out_features)
        with torch.no_grad():
            fused.weight.copy_(linear.weight * scale.view(-1, 1))
            fused.bias.copy_((linear.bias - bn.running_mean) * scale + bn.bias)
        return fused

    assert verdict(capsys, lambda: ch10_inference.exercise_1(fuse)).startswith("✓")
    assert verdict(capsys, lambda: ch10_inference.exercise_1(lambda lin, bn: lin)).startswith("✗")
