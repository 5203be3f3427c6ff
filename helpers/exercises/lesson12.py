"""Checks for lesson 12 · Deployment's exercises: the reference answers live here, not in the
notebook."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import torch

from helpers.exercises import filled, report, true
from helpers.serve import batch_bounds_problem


def exercise_1(bounded: Any, model: torch.nn.Module) -> None:
    """``bounded``: the trained CNN ``model`` exported with ``torch.export`` so that it runs
    batches of 1 to 32, gives the model's logits, and its guard refuses 33."""
    report(
        filled(bounded=bounded),
        lambda: batch_bounds_problem(bounded, low=1, high=32, model=model),
        done="the program gives the model's logits for batches of 1 to 32, and refuses 33",
    )


def _expected(session: Any, image: torch.Tensor, classes: Sequence[str]) -> tuple[str, float]:
    """The reference answer for one image: the class name and its softmax probability."""
    (logits,) = session.run(None, {session.get_inputs()[0].name: image[None].numpy()})
    probabilities = torch.from_numpy(np.asarray(logits, dtype=np.float64)).softmax(dim=1)[0]
    index = int(probabilities.argmax())
    return classes[index], probabilities[index].item()


def exercise_2(
    answer: Callable[[Any, torch.Tensor], Any] | Any,
    session: Any,
    images: torch.Tensor,
    classes: Sequence[str],
) -> None:
    """``answer(session, image)`` returns ``{"class": name, "probability": p}`` for one uint8
    image (3, 32, 32): the class the ONNX ``session`` predicts and its softmax probability."""
    got: list[Any] = []

    def run() -> str | None:
        if not callable(answer):
            return "answer should be a function, written with `def`"
        for image in images:
            try:
                got.append(answer(session, image))
            except Exception as error:  # the learner's bug: say what it was, with a hint
                first = (str(error).strip() or "?").splitlines()[0]
                hint = ""
                if "rank" in first.lower():
                    hint = ": the session takes a batch, (1, 3, 32, 32) for one image"
                return f"answer raised {type(error).__name__}: {first}{hint}"
        return None

    def shape() -> str | None:
        for mine in got:
            if mine is None:
                return "answer returned None: return a dict with a class and a probability"
            if not isinstance(mine, dict) or not {"class", "probability"} <= set(mine):
                return f'answer should return {{"class": ..., "probability": ...}}, got {mine!r}'
        return None

    def values() -> str | None:
        expected = [_expected(session, image, classes) for image in images]
        for k, (mine, (name, _)) in enumerate(zip(got, expected, strict=True)):
            if mine["class"] == name:
                continue
            if isinstance(mine["class"], int | np.integer) and classes[mine["class"]] == name:
                return 'answer the class by its name ("airplane"), not by its index'
            return f"image {k}: the class is {mine['class']!r}, expected {name!r}"
        mine_p = []
        for k, mine in enumerate(got):
            try:
                mine_p.append(float(mine["probability"]))
            except (TypeError, ValueError, RuntimeError):
                kind = type(mine["probability"]).__name__
                return f"image {k}: the probability should be a number, got {kind}"
            if not math.isfinite(mine_p[-1]) or not 0 <= mine_p[-1] <= 1:
                return (
                    f"image {k}: the probability is {mine_p[-1]:.4g}, not between 0 and 1: is it "
                    "a logit? Softmax turns logits into probabilities"
                )
        wanted = [p for _, p in expected]
        if all(p == 1 for p in mine_p) and min(wanted) < 0.999:
            return (
                "every probability is 1: take the softmax over the two classes (dimension 1 of "
                "the logits), not over the images of the batch"
            )
        for k, (p, q) in enumerate(zip(mine_p, wanted, strict=True)):
            if abs(p - q) > 1e-5:
                return f"image {k}: the probability is {p:.6f}, expected {q:.6f}"
        return None

    report(
        filled(answer=answer),
        true(len(images) > 0, "the check needs at least one image"),
        run,
        shape,
        values,
        done="answer gives the class and the model's probability for it, from the ONNX file",
    )
