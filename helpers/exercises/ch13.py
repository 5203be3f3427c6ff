"""Checks for 13 · Reproducibility and debugging's exercises: the reference answers live here,
not in the notebook. Each builds its own small models and data, so an answer is tried on cases
it has not seen."""

from __future__ import annotations

import random
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np
import torch

from helpers.debug import finite_checks_problem, safe_step_problem, sample_noise_problem
from helpers.exercises import filled, report


def exercise_1(add_finite_checks: Callable[[torch.nn.Module], Any] | Any) -> None:
    """``add_finite_checks(model)``: hooks that name the first layer with a non-finite output,
    stay quiet on a healthy model and go away with their handles' ``remove()``."""
    report(
        lambda: finite_checks_problem(add_finite_checks),
        done="the hooks name the first layer with a non-finite output ('body.0', then 'head'), "
        "stay quiet on a healthy model and go away with handle.remove()",
    )


def exercise_2(safe_step: Callable[..., Any] | Any) -> None:
    """``safe_step(model, optimizer, loss)``: steps on a finite loss and gradient, else leaves
    the weights alone, clears the gradients and returns False."""
    report(
        lambda: safe_step_problem(safe_step),
        done="safe_step steps on a finite loss and skips (weights unchanged, gradients "
        "cleared) on an infinite loss and on a NaN gradient",
    )


def exercise_3(noise: Callable[[int, int, int], Any] | Any) -> None:
    """``noise(seed, epoch, index)``: 4 floats that depend only on the three numbers. The check
    moves NumPy's and torch's global generators on purpose; it puts them back afterwards, so the
    notebook's own randomness is as it was."""
    numpy_state, torch_state = np.random.get_state(), torch.get_rng_state()
    try:
        report(
            lambda: sample_noise_problem(noise),
            done="the noise depends only on (seed, epoch, index): the same in any worker, new "
            "in each epoch",
        )
    finally:
        np.random.set_state(numpy_state)
        torch.set_rng_state(torch_state)


# ---------------------------------------------------------------------------------------------
# Exercise 4: repeats(run, seed)


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


def exercise_4(repeats: Callable[[Callable[[], list[float]], int], Any] | Any) -> None:
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
