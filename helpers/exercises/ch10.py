"""Checks for 10 · Speed-ups' exercises: the reference answers live here, not in the notebook."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
from torch import nn

from helpers.exercises import equal, filled, report, tensor_close


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
    with torch.no_grad():
        bn(linear(inputs) * 3 + 1)  # running statistics far from (0, 1)
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


def exercise_2(by_workers: dict[int, dict[str, float]] | Any) -> None:
    """``by_workers``: ``timed_training``'s results with 0 (the plain loop, measured again beside
    the others, so that all three meet the same load on the machine), 1 and 2 DataLoader workers;
    with 1 and with 2 the loop must wait for data a smaller share of the time than with 0."""

    def each_waits_less() -> str | None:
        plain = by_workers[0]["waiting"]
        for n in (1, 2):
            if by_workers[n]["waiting"] >= plain:
                return (
                    f"with {n} worker(s) the loop waits {by_workers[n]['waiting']:.0%} of the "
                    f"time, with none {plain:.0%}: does its DataLoader read with {n} worker "
                    "process(es)?"
                )
        return None

    report(
        filled(by_workers=by_workers),
        lambda: equal("sorted(by_workers)", sorted(by_workers), [0, 1, 2]),
        each_waits_less,
        done="with 1 and with 2 workers the loop waits less than with none",
    )
