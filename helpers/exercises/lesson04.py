"""Checks for lesson 04 · nn.Module's exercises: the reference answers live here, not in the
notebook."""

from __future__ import annotations

from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from helpers.exercises import equal, filled, report, tensor_close, true


def _count(module: nn.Module) -> int:
    return sum(p.numel() for p in module.parameters())


def exercise_1(conv_count: Any, bn_count: Any, head_count: Any) -> None:
    """The parameter counts of the CNN's third convolution (32 -> 64 channels, 3×3, no bias), of
    the batch norm after it (64 channels) and of its head (128 features -> 2 classes)."""
    report(
        filled(conv_count=conv_count, bn_count=bn_count, head_count=head_count),
        lambda: equal(
            "conv_count",
            conv_count,
            _count(nn.Conv2d(32, 64, 3, bias=False)),
            hint="one weight per output channel, per input channel, per kernel row and column",
        ),
        lambda: equal(
            "bn_count",
            bn_count,
            _count(nn.BatchNorm2d(64)),
            hint="batch norm learns a scale and a shift per channel (its running statistics "
            "are buffers, not parameters)",
        ),
        lambda: equal(
            "head_count",
            head_count,
            _count(nn.Linear(128, 2)),
            hint="a weight per (input, output) pair, and a bias per output",
        ),
        done="18,432 + 128 + 258 parameters: counted by hand as parameters() counts them",
    )


def exercise_2(block_class: type[nn.Module] | Any) -> None:
    """``block_class(c_in, c_out)`` is a module: 3×3 convolution keeping the size, without
    bias, then batch norm, ReLU and a 2×2 max pool."""
    x = torch.randn(4, 3, 32, 32, generator=torch.Generator().manual_seed(0))
    made: dict[str, Any] = {}

    def build() -> str | None:
        torch.manual_seed(0)
        made["block"] = block_class(3, 8)
        if not isinstance(made["block"], nn.Module):
            return f"ConvBlock(3, 8) should be an nn.Module, got {type(made['block']).__name__}"
        return None

    def layers() -> str | None:
        block = made["block"]
        if not list(block.parameters()):
            return (
                "the block has no parameters: assign the layers to attributes of self in __init__"
            )
        convs = [m for m in block.modules() if isinstance(m, nn.Conv2d)]
        norms = [m for m in block.modules() if isinstance(m, nn.BatchNorm2d)]
        if len(convs) != 1 or len(norms) != 1:
            return f"expected one Conv2d and one BatchNorm2d, found {len(convs)} and {len(norms)}"
        made["conv"], made["norm"] = convs[0], norms[0]
        return None

    def output() -> str | None:
        block, conv, norm = made["block"], made["conv"], made["norm"]
        block.train()
        got = block(x)
        if not isinstance(got, torch.Tensor):
            return f"forward should return a tensor, got {type(got).__name__}"
        if tuple(got.shape) != (4, 8, 16, 16):
            return (
                f"the output has shape {tuple(got.shape)}, expected (4, 8, 16, 16): the "
                "convolution keeps 32 × 32 (padding), the pool halves it"
            )
        with torch.no_grad():
            h = F.conv2d(x, conv.weight, conv.bias, padding=1)
            h = F.batch_norm(h, None, None, norm.weight, norm.bias, training=True, eps=norm.eps)
            expected = F.max_pool2d(F.relu(h), 2)
        return tensor_close(
            "the block's output",
            got.detach(),
            expected,
            atol=1e-4,
            hint="the order is convolution, batch norm, ReLU, max pool",
        )

    report(
        filled(ConvBlock=block_class),
        lambda: true(isinstance(block_class, type), "ConvBlock should be a class"),
        build,
        layers,
        lambda: equal(
            "the parameter count of ConvBlock(3, 8)",
            _count(made["block"]),
            8 * 3 * 3 * 3 + 2 * 8,
            hint="a 3×3 convolution from 3 to 8 channels without bias, and batch norm over 8",
        ),
        output,
        done="ConvBlock(3, 8) is conv → batch norm → ReLU → max pool: (4, 3, 32, 32) → "
        "(4, 8, 16, 16)",
    )
