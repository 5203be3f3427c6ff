"""Checks for the exercises of 10 · Faster inference, measured (the chapter's second cookbook
notebook): the reference answers live here, not in the notebook."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
from torch import nn

from helpers.exercises import filled, report, tensor_close


def exercise_1(fuse_linear_bn: Callable[[nn.Linear, nn.BatchNorm1d], Any] | Any) -> None:
    """``fuse_linear_bn(linear, bn)``: one ``nn.Linear`` equal to ``bn(linear(x))`` in evaluation
    mode, tried on a BatchNorm1d with running statistics far from (0, 1) and non-trivial γ, β.
    The check seeds its own generator state and puts torch's back afterwards."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(0)
        linear, bn = nn.Linear(10, 4), nn.BatchNorm1d(4)
        nn.init.uniform_(bn.weight, 0.5, 2.0)
        nn.init.uniform_(bn.bias, -1.0, 1.0)
        inputs = torch.randn(32, 10)
    bn.momentum = None  # running statistics: the batch's own, far from (0, 1)
    with torch.no_grad():
        bn(linear(inputs) * 3 + 1)
    pair = nn.Sequential(linear, bn).eval()

    def fused_equals_the_pair() -> str | None:
        fused = fuse_linear_bn(linear, bn)
        if not isinstance(fused, nn.Linear):
            return f"fuse_linear_bn should return an nn.Linear, got {type(fused).__name__}"
        with torch.inference_mode():
            return tensor_close(
                "fused(x)",
                fused(inputs),
                pair(inputs),
                atol=1e-5,
                hint="in evaluation mode the running statistics, γ (weight) and β (bias) all "
                "take part",
            )

    report(
        filled(fuse_linear_bn=fuse_linear_bn),
        fused_equals_the_pair,
        done="one Linear computes BatchNorm1d(Linear(x)) in evaluation mode (to 1e-5)",
    )


def exercise_2(fold_bn_into_conv: Callable[[nn.BatchNorm2d, nn.Conv2d], Any] | Any) -> None:
    """``fold_bn_into_conv(bn, conv)``: one ``nn.Conv2d`` equal to ``conv(bn(x))`` in evaluation
    mode, for a 3×3 convolution without padding, from 8 to 16 channels with a bias, after a
    BatchNorm2d with running statistics far from (0, 1) and non-trivial γ, β. The check seeds its
    own generator state and puts torch's back afterwards."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(0)
        bn, conv = nn.BatchNorm2d(8), nn.Conv2d(8, 16, 3)
        nn.init.uniform_(bn.weight, 0.5, 2.0)
        nn.init.uniform_(bn.bias, -1.0, 1.0)
        inputs = torch.randn(4, 8, 10, 10)
        bn.momentum = None  # running statistics: the batch's own, mean ≈ 1 and variance ≈ 9
        with torch.no_grad():
            bn(inputs * 3 + 1)
    pair = nn.Sequential(bn, conv).eval()
    with torch.inference_mode():
        expected = pair(inputs)  # before the answer runs: it must not change bn or conv

    def folded_equals_the_pair() -> str | None:
        try:
            folded = fold_bn_into_conv(bn, conv)
        except RuntimeError as error:
            if "size of tensor" not in str(error):
                raise
            return (
                f"fold_bn_into_conv raised RuntimeError: {str(error).splitlines()[0]} The "
                "BatchNorm has one factor per *input* channel (8), dimension 1 of the weight "
                f"{tuple(conv.weight.shape)}: shape them (1, -1, 1, 1)"
            )
        if not isinstance(folded, nn.Conv2d):
            return f"fold_bn_into_conv should return an nn.Conv2d, got {type(folded).__name__}"
        with torch.inference_mode():
            return tensor_close(
                "folded(x)",
                folded(inputs),
                expected,
                atol=1e-4,
                hint="the scale multiplies the weights per *input* channel (dimension 1), and "
                "the shift becomes a constant per output channel in the bias",
            )

    def the_pair_is_unchanged() -> str | None:
        with torch.inference_mode():
            return tensor_close(
                "conv(bn(x)) after folding",
                pair(inputs),
                expected,
                atol=0,
                hint="do not change the given BatchNorm or convolution: start from a copy "
                "(copy.deepcopy(conv))",
            )

    report(
        filled(fold_bn_into_conv=fold_bn_into_conv),
        folded_equals_the_pair,
        the_pair_is_unchanged,
        done="one convolution computes conv(BatchNorm2d(x)) in evaluation mode (to 1e-4)",
    )
