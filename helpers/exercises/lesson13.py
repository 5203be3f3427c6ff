"""Checks for lesson 13 · Reproducibility and debugging's exercises: the reference answers live
here, not in the notebook."""

from __future__ import annotations

import random
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from helpers.exercises import filled, report

# ---------------------------------------------------------------------------------------------
# Exercise 1: repeats(run, seed)


def _torch_run() -> list[float]:
    """Numbers drawn from torch's global generator, as weights and shuffles are."""
    return torch.rand(4).tolist()


def _numpy_run() -> list[float]:
    """Numbers drawn from NumPy's global generator, as some augmentation libraries do."""
    return np.random.rand(4).tolist()


def _python_run() -> list[float]:
    """Numbers drawn from Python's `random`, as some data code does."""
    return [random.random() for _ in range(4)]


def _os_run() -> list[float]:
    """Numbers from the operating system's randomness, which no seed reaches."""
    return [random.SystemRandom().random() for _ in range(4)]


def _last_digits_run() -> list[float]:
    """The same numbers every time except in their last digits (about 1e-12 apart), like a
    GPU kernel that adds in another order."""
    return [0.5 + 1e-12 * random.SystemRandom().random(), 0.25]


@contextmanager
def _generators_kept() -> Iterator[None]:
    """Put torch's (every device's), NumPy's and Python's global generators back as they were."""
    numpy_state, python_state = np.random.get_state(), random.getstate()
    with torch.random.fork_rng():
        try:
            yield
        finally:
            np.random.set_state(numpy_state)
            random.setstate(python_state)


def exercise_1(repeats: Callable[[Callable[[], list[float]], int], Any] | Any) -> None:
    """repeats(run, seed) runs ``run()`` twice, each time after seeding every generator with
    ``seed``, and returns whether the two results are equal bit for bit."""
    verdicts: dict[str, Any] = {}

    def run_all() -> str | None:
        if not callable(repeats):
            return "repeats should be a function, written with `def`"
        runs = {
            "torch": _torch_run,
            "numpy": _numpy_run,
            "python": _python_run,
            "os": _os_run,
            "last digits": _last_digits_run,
        }
        with _generators_kept():
            for name, run in runs.items():
                torch.rand(3)  # move every generator on, as other code in between would
                np.random.rand(3)
                random.random()
                try:
                    verdicts[name] = repeats(run, 0)
                except Exception as err:  # the learner's code: report it, do not raise
                    return f"repeats raised {type(err).__name__}: {err}"
        return None

    def booleans() -> str | None:
        for verdict in verdicts.values():
            if verdict is Ellipsis:
                return "repeats still returns `...`: return True or False"
            if not isinstance(verdict, bool | np.bool_):
                return f"repeats returned {verdict!r}: return True or False"
        return None

    def seeded() -> str | None:
        if not verdicts["torch"]:
            return (
                "a run drawing from torch's generator did not repeat: seed before each of the "
                "two runs, not once before both"
            )
        if not (verdicts["numpy"] and verdicts["python"]):
            which = "NumPy's" if not verdicts["numpy"] else "Python's `random`"
            return f"a run drawing from {which} generator did not repeat: seed every generator"
        return None

    def compared() -> str | None:
        if verdicts["os"]:
            return (
                "repeats said True for a run whose numbers come from the operating system, "
                "which no seed reaches: run it twice and compare what the two runs return"
            )
        if verdicts["last digits"]:
            return (
                "repeats said True for two runs that differ in their last digits: compare bit "
                "for bit, not approximately"
            )
        return None

    report(
        filled(repeats=repeats),
        run_all,
        booleans,
        seeded,
        compared,
        done="repeats seeds every generator before each run and compares the runs bit for bit",
    )


# ---------------------------------------------------------------------------------------------
# Exercise 2: no_gradient(model)


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


def exercise_2(no_gradient: Callable[[nn.Module], Any] | Any) -> None:
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
