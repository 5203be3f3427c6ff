"""Checks for lesson 13 · Reproducibility and debugging's exercises: the reference answers live
here, not in the notebook."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from helpers.exercises import filled, report

# ---------------------------------------------------------------------------------------------
# Exercise 1: no_gradient(model)


def _mlp() -> nn.Sequential:
    """A small seeded MLP: parameters 0.weight, 0.bias, 2.weight, 2.bias, 4.weight, 4.bias."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(0)
        return nn.Sequential(
            nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 8), nn.ReLU(), nn.Linear(8, 2)
        )


def _backward(model: nn.Module) -> None:
    generator = torch.Generator().manual_seed(1)
    x = torch.randn(16, 4, generator=generator)
    y = torch.randint(0, 2, (16,), generator=generator)
    F.cross_entropy(model(x), y).backward()


def _cases() -> dict[str, tuple[nn.Module, list[str]]]:
    """Models after one backward pass, and the names with no usable gradient in each."""
    healthy = _mlp()
    _backward(healthy)
    with torch.no_grad():  # nonzero values that add up to 0: still a gradient
        healthy[4].bias.grad.copy_(torch.tensor([0.5, -0.5]))
    frozen = _mlp()
    frozen[0].requires_grad_(False)  # left frozen from an earlier fine-tuning
    _backward(frozen)
    dead = _mlp()
    with torch.no_grad():
        dead[0].bias.fill_(-100.0)  # the ReLU after it outputs 0 for every input
    _backward(dead)
    nan = _mlp()
    _backward(nan)
    nan[2].bias.grad[3] = float("nan")
    inf = _mlp()
    _backward(inf)
    inf[4].weight.grad[1, 2] = float("inf")
    return {
        "healthy": (healthy, []),
        "frozen": (frozen, ["0.weight", "0.bias"]),
        "dead": (dead, ["0.weight", "0.bias", "2.weight"]),
        "nan": (nan, ["2.bias"]),
        "inf": (inf, ["4.weight"]),
    }


WHY = {
    "frozen": "a parameter whose `.grad` is None got no gradient at all (here a layer left frozen)",
    "dead": "a gradient of zeros only moves nothing (here a layer whose ReLU outputs 0 for "
    "every input, and the weights that read that 0)",
    "nan": "a gradient with a NaN in it is no usable gradient",
    "inf": "a gradient with an infinity in it is no usable gradient",
}


def exercise_1(no_gradient: Callable[[nn.Module], Any] | Any) -> None:
    """no_gradient(model) returns the names (as named_parameters gives them) of the parameters
    whose gradient is None, all zeros, or holds a NaN or an infinity; it leaves them as they
    are."""
    found: dict[str, list[str]] = {}
    cases = _cases()

    def run_all() -> str | None:
        if not callable(no_gradient):
            return "no_gradient should be a function, written with `def`"
        for name, (model, _) in cases.items():
            before = [None if p.grad is None else p.grad.clone() for p in model.parameters()]
            try:
                names = no_gradient(model)
            except Exception as err:  # the learner's code: report it, do not raise
                hint = (
                    ": look for None before looking inside a gradient" if name == "frozen" else ""
                )
                return f"no_gradient raised {type(err).__name__}: {err}{hint}"
            if names is Ellipsis:
                return "no_gradient still returns `...`: return a list of parameter names"
            if names is None or isinstance(names, str):
                return f"no_gradient returned {names!r}: return a list of parameter names"
            try:
                found[name] = sorted(names)
            except TypeError:
                return f"no_gradient returned {names!r}: return a list of parameter names"
            after = [None if p.grad is None else p.grad for p in model.parameters()]
            for b, a in zip(before, after, strict=True):
                if (b is None) != (a is None) or (
                    b is not None and not torch.equal(b.nan_to_num(), a.nan_to_num())
                ):
                    return "no_gradient changed the gradients: only look at them"
        return None

    def healthy() -> str | None:
        extra = found["healthy"]
        if extra:
            return (
                f"every parameter of a healthy model has a gradient, but you named {extra}: "
                "gradients whose values add up to 0 are still gradients"
            )
        return None

    def each_case() -> str | None:
        for name, why in WHY.items():
            expected = sorted(cases[name][1])
            got = found[name]
            missed = [n for n in expected if n not in got]
            extra = [n for n in got if n not in expected]
            if missed:
                return f"you left out {missed}: {why}"
            if extra:
                return f"you named {extra}, which have a usable gradient"
        return None

    report(
        filled(no_gradient=no_gradient),
        run_all,
        healthy,
        each_case,
        done="no_gradient names the parameters whose gradient is missing, all zero, or not finite",
    )
