"""Lesson 04's exercise checkers accept the right answer and reject the wrong ones a learner
typically writes."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from helpers.exercises import lesson04


def verdict(capsys, check) -> str:
    check()
    return capsys.readouterr().out


def test_exercise_1_accepts_the_counts(capsys):
    out = verdict(capsys, lambda: lesson04.exercise_1(18432, 128, 258))
    assert out.startswith("✓ 18,432 + 128 + 258")


def test_exercise_1_rejects_the_typical_miscounts(capsys):
    cases = {
        (..., 128, 258): "✗ fill in `conv_count`",
        (18432 + 64, 128, 258): "✗ `conv_count` is 18496",  # counted a bias
        (64 * 32 * 3, 128, 258): "✗ `conv_count`",  # one kernel side only
        (18432, 64, 258): "✗ `bn_count` is 64",  # only the scale
        (18432, 128 + 64 + 64, 258): "✗ `bn_count`",  # running statistics counted
        (18432, 128, 256): "✗ `head_count` is 256",  # no bias
    }
    for answer, start in cases.items():
        out = verdict(capsys, lambda answer=answer: lesson04.exercise_1(*answer))
        assert out.startswith(start), (answer, out)


class Right(nn.Module):
    def __init__(self, c_in: int, c_out: int):
        super().__init__()
        self.layers = nn.Sequential(
            nn.Conv2d(c_in, c_out, 3, padding=1, bias=False),
            nn.BatchNorm2d(c_out),
            nn.ReLU(),
            nn.MaxPool2d(2),
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.layers(x)


class Attributes(nn.Module):
    """The same block with one attribute per layer and functional ReLU and pooling."""

    def __init__(self, c_in: int, c_out: int):
        super().__init__()
        self.conv = nn.Conv2d(c_in, c_out, 3, padding=1, bias=False)
        self.norm = nn.BatchNorm2d(c_out)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.max_pool2d(F.relu(self.norm(self.conv(x))), 2)


def test_exercise_2_accepts_a_sequential_or_one_attribute_per_layer(capsys):
    for block in (Right, Attributes):
        out = verdict(capsys, lambda block=block: lesson04.exercise_2(block))
        assert out.startswith("✓ ConvBlock(3, 8) is conv"), (block.__name__, out)


class Starter(nn.Module):
    def __init__(self, c_in: int, c_out: int):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return ...


class PlainList(nn.Module):
    def __init__(self, c_in: int, c_out: int):
        super().__init__()
        self.layers = [nn.Conv2d(c_in, c_out, 3, padding=1, bias=False), nn.BatchNorm2d(c_out)]

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.max_pool2d(F.relu(self.layers[1](self.layers[0](x))), 2)


class WithBias(Attributes):
    def __init__(self, c_in: int, c_out: int):
        super().__init__(c_in, c_out)
        self.conv = nn.Conv2d(c_in, c_out, 3, padding=1)


class NoPadding(Attributes):
    def __init__(self, c_in: int, c_out: int):
        super().__init__(c_in, c_out)
        self.conv = nn.Conv2d(c_in, c_out, 3, bias=False)


class ReluFirst(Attributes):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.max_pool2d(self.norm(F.relu(self.conv(x))), 2)


class NoPool(Attributes):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.relu(self.norm(self.conv(x)))


def test_exercise_2_rejects_the_typical_wrong_blocks(capsys):
    cases = {
        Starter: "✗ the block has no parameters",
        PlainList: "✗ the block has no parameters",
        WithBias: "✗ `the parameter count of ConvBlock(3, 8)` is 240",
        NoPadding: "✗ the output has shape (4, 8, 15, 15)",
        NoPool: "✗ the output has shape (4, 8, 32, 32)",
        ReluFirst: "✗ `the block's output` differs",
    }
    for block, start in cases.items():
        out = verdict(capsys, lambda block=block: lesson04.exercise_2(block))
        assert out.startswith(start), (block.__name__, out)
    assert verdict(capsys, lambda: lesson04.exercise_2(...)).startswith("✗ fill in")
    assert verdict(capsys, lambda: lesson04.exercise_2(Right(3, 8))).startswith("✗ ConvBlock")
