"""Checks for 03 · Autograd's exercises: the reference answers live here, not in the notebook."""

from __future__ import annotations

import math
from typing import Any

import torch
from torch import nn

from helpers.exercises import close, equal, filled, report, tensor_close, true


def exercise_1(x: torch.Tensor, y: torch.Tensor, f: torch.Tensor | Any) -> None:
    """Autograd's partial derivatives of f(x, y) = x² y + sin(y), left in ``x.grad`` and
    ``y.grad``."""
    a, b = x.item(), y.item()
    again = "gradients accumulate: if backward ran more than once, run the starter cell again"
    report(
        filled(f=f),
        lambda: true(x.grad is not None, "x.grad is still None: ask autograd to fill it from f"),
        lambda: close("x.grad", x.grad, 2 * a * b, hint=again),
        lambda: close("y.grad", y.grad, a**2 + math.cos(b), hint=again),
        done="autograd's partial derivatives equal 2xy and x² + cos(y)",
    )


def exercise_2(x: torch.Tensor, first: torch.Tensor | Any, second: torch.Tensor | Any) -> None:
    """tanh' and tanh'' at every point of ``x``, from two calls of ``torch.autograd.grad``."""
    t = torch.tanh(x.detach())
    report(
        filled(first=first, second=second),
        lambda: tensor_close(
            "first",
            first,
            1 - t**2,
            atol=1e-6,
            hint="one value of tanh' per point of x; autograd.grad wants a scalar output",
        ),
        lambda: tensor_close(
            "second",
            second,
            -2 * t * (1 - t**2),
            atol=1e-6,
            hint="second is the derivative of first, and the first call must keep a graph for that",
        ),
        done="tanh'' from two calls of torch.autograd.grad matches −2 tanh(x)(1 − tanh²(x))",
    )


def exercise_3(net: nn.Module, handles: list[Any] | Any) -> None:
    """One hook per parameter clamping its gradient to [-0.01, 0.01]: the hooked gradients of a
    backward pass equal the raw ones (hooks removed) clamped."""
    batch = torch.randn(16, 3, generator=torch.Generator().manual_seed(0))

    def gradients_after_backward() -> list[torch.Tensor]:
        net.zero_grad()
        (net(batch) * 100).sum().backward()  # raw gradients far larger than 0.01
        return [p.grad.clone() for p in net.parameters()]

    def clipped() -> str | None:
        hooked = gradients_after_backward()
        for handle in handles:
            handle.remove()
        raw = gradients_after_backward()  # the same batch without the hooks
        for (name, _), got, plain in zip(net.named_parameters(), hooked, raw, strict=True):
            problem = tensor_close(
                f"{name}'s gradient with the hook",
                got,
                plain.clamp(-0.01, 0.01),
                atol=1e-7,
                hint="what a hook returns replaces the gradient: keep each element, only "
                "limited to the range [-0.01, 0.01]",
            )
            if problem:
                return problem
        return None

    report(
        filled(handles=handles),
        lambda: equal("len(handles)", len(handles), len(list(net.parameters()))),
        clipped,
        done="each gradient is the raw one clamped to [-0.01, 0.01], and the hooks are removed",
    )
