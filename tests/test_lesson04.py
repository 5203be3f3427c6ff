"""Lesson 04's exercise checkers accept the right answer and reject the wrong ones a learner
typically writes; the layer diagram shows a real model's indices and shapes and rejects bad
input."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
import pytest
import torch
import torch.nn.functional as F
from matplotlib.figure import Figure
from torch import nn

from helpers.diagrams.layers import describe, draw_layers
from helpers.exercises import lesson04
from helpers.models import small_cnn


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


def test_describe_names_layers_with_their_sizes():
    assert describe(nn.Conv2d(3, 16, 3)) == "Conv2d 3→16"
    assert describe(nn.Linear(128, 2)) == "Linear 128→2"
    assert describe(nn.MaxPool2d(2)) == "MaxPool2d 2×2"
    assert describe(nn.AdaptiveMaxPool2d(1)) == "AdaptiveMaxPool2d to 1×1"
    assert describe(nn.ReLU()) == "ReLU"


def test_draw_layers_shows_each_index_and_the_real_shapes():
    model = small_cnn([0.5] * 3, [0.25] * 3, width=4)
    batch = torch.zeros(5, 3, 32, 32, dtype=torch.uint8)
    fig = draw_layers(model, batch)
    try:
        assert isinstance(fig, Figure)
        texts = [t.get_text() for t in fig.axes[0].texts]
        for i in range(len(model)):
            assert f"[{i}]" in texts
        assert "uint8 (5, 3, 32, 32)" in texts  # the input, with its dtype
        assert "float32 (5, 3, 32, 32)" in texts  # the dtype changed after ToDtype
        assert "[0] Conv2d 3→4 · [1] BatchNorm2d · [2] ReLU" in texts  # model[2] and its parts
        assert "(5, 4, 16, 16)" in texts  # after the first max pool
        assert texts.index("(5, 2)") > texts.index("Linear 32→2")  # the last row
        assert fig.get_size_inches()[0] <= 6.8  # fits a web page's text column at 10 points
    finally:
        plt.close(fig)


def test_draw_layers_rejects_a_model_that_is_not_sequential_and_a_bad_batch():
    with pytest.raises(TypeError, match=r"an nn\.Sequential"):
        draw_layers(nn.Linear(4, 2), torch.zeros(1, 4))
    with pytest.raises(TypeError, match="batch should be a tensor"):
        draw_layers(nn.Sequential(nn.Linear(4, 2)), [[0.0] * 4])
    with pytest.raises(RuntimeError):  # the batch really runs through: a wrong shape fails
        draw_layers(nn.Sequential(nn.Linear(4, 2)), torch.zeros(1, 5))
