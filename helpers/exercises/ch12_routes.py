"""Checks for the exercises of 12 · Deployment routes compared (the chapter's second cookbook
notebook): the reference answers live here, not in the notebook."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from helpers.exercises import filled, report

BATCH_RANGE = (1, 2048)  # the exported program's Dim("batch", min=1, max=2048)


def _valid_inputs() -> dict[str, Any]:
    import torch

    generator = torch.Generator().manual_seed(0)
    images = torch.randint(0, 256, (8, 3, 32, 32), dtype=torch.uint8, generator=generator)
    found: dict[str, Any] = {
        f"a batch of {n}": torch.zeros(n, 3, 32, 32, dtype=torch.uint8)
        for n in (BATCH_RANGE[0], 8, BATCH_RANGE[1])
    }
    found["a channels-last batch"] = images.contiguous(memory_format=torch.channels_last)
    found["every second image of a batch (a view)"] = images[::2]
    return found


def _wrong_inputs() -> dict[str, Any]:
    import numpy as np
    import torch

    return {
        "2049 images": torch.zeros(2049, 3, 32, 32, dtype=torch.uint8),
        "an empty batch": torch.zeros(0, 3, 32, 32, dtype=torch.uint8),
        "64×64 images": torch.zeros(2, 3, 64, 64, dtype=torch.uint8),
        "float images": torch.zeros(2, 3, 32, 32),
        "grey images (one channel)": torch.zeros(2, 1, 32, 32, dtype=torch.uint8),
        "one image without a batch dimension": torch.zeros(3, 32, 32, dtype=torch.uint8),
        "channels-last images (N, 32, 32, 3)": torch.zeros(2, 32, 32, 3, dtype=torch.uint8),
        "a NumPy array": np.zeros((2, 3, 32, 32), dtype=np.uint8),
    }


def input_problem(prepare: Callable[[Any], Any]) -> str | None:
    """What is wrong with ``prepare``, or ``None`` when it returns every uint8 batch of shape
    ``(N, 3, 32, 32)`` with ``1 <= N <= 2048`` as a contiguous tensor with the same values, and
    raises ``ValueError`` (``TypeError`` for what is not a tensor) with a message for the rest."""
    import torch

    if not callable(prepare):
        return f"`prepare` should be a function, got {type(prepare).__name__}"
    for name, x in _valid_inputs().items():
        try:
            got = prepare(x)
        except Exception as error:
            return f"it refused {name} of 32×32 uint8 images, which the package runs: {error!r}"
        if not isinstance(got, torch.Tensor):
            return f"for {name} it returned {type(got).__name__}: return the tensor to pass on"
        if got.shape != x.shape or got.dtype != x.dtype or not torch.equal(got, x):
            return f"for {name} it returned other images: return the same values"
        if not got.is_contiguous():
            return (
                f"for {name} it returned a tensor whose memory is not in order: the package "
                "reads memory in order, whatever the strides (see the memory layouts above)"
            )
    for name, x in _wrong_inputs().items():
        try:
            prepare(x)
        except AssertionError:
            return (
                f"it refused {name} with `assert`: `python -O` removes every assert, and the "
                "server would then compute on it; raise an exception instead"
            )
        except (ValueError, TypeError) as error:
            if not str(error).strip():
                return f"it refused {name} without a message: say what is wrong with the input"
            continue
        except Exception as error:
            return (
                f"{name} made it raise {type(error).__name__}: raise a ValueError that says why "
                "(or a TypeError for what is not a tensor)"
            )
        else:
            return (
                f"it let {name} through: the package would compute on it without an error "
                "(check the type, then the dtype, then every size)"
            )
    return None


def exercise_1(prepare: Callable[[Any], Any] | Any) -> None:
    """``prepare(x)``: a uint8 tensor of shape ``(N, 3, 32, 32)`` with ``1 <= N <= 2048``, in any
    layout, as the contiguous tensor to pass to the package; ``ValueError`` for anything else."""
    report(
        filled(prepare=prepare),
        lambda: input_problem(prepare),
        done="prepare passes 1 to 2048 uint8 images of 3×32×32 on, contiguous; refuses the rest",
    )


def fastest_agreeing(table: Any, batch: int, min_same_class: float) -> str:
    """The route (index of ``table``) with the lowest ``"ms, batch {batch}"`` among those whose
    ``"same class"`` is at least ``min_same_class``."""
    good = table[table["same class"] >= min_same_class]
    return str(good[f"ms, batch {batch}"].idxmin())


def example_tables() -> list[Any]:
    """Tables shaped like the notebook's, each with a trap for a likely wrong answer: the fastest
    route disagrees with eager, and the fastest for one image is not the fastest for 256."""
    import pandas as pd

    def table(rows: dict[str, tuple[float, float, float]]) -> Any:
        columns = ["ms, batch 1", "ms, batch 256", "same class"]
        return pd.DataFrame(rows, index=columns).T

    return [
        table(
            {
                "eager": (1.0, 40.0, 1.0),
                "ONNX Runtime": (0.2, 30.0, 1.0),
                "int8": (0.1, 90.0, 0.96),
                "AOTInductor": (0.6, 20.0, 1.0),
            }
        ),
        table(
            {
                "eager": (0.9, 25.0, 1.0),
                "int8": (0.3, 10.0, 0.97),
                "AOTInductor": (0.5, 30.0, 1.0),
                "ONNX Runtime": (0.4, 28.0, 0.99),  # exactly at the floor: "at least" keeps it
            }
        ),
    ]


def route_problem(choose_route: Callable[..., Any]) -> str | None:
    """What is wrong with ``choose_route(table, batch, min_same_class)``, or ``None`` when it
    names the fastest route for ``batch`` among those that agree with eager often enough."""
    if not callable(choose_route):
        return f"`choose_route` should be a function, got {type(choose_route).__name__}"
    for table in example_tables():
        for batch in (1, 256):
            for floor in (0.99, 0.95):
                right = fastest_agreeing(table, batch, floor)
                got = choose_route(table, batch, floor)
                if got == right:
                    continue
                routes = list(table.index)
                if got not in routes:
                    return f"it returned {got!r}: return a route's name, one of {routes}"
                if table.loc[got, "same class"] < floor:
                    return (
                        f"it chose {got!r}, which gives eager's class for only "
                        f"{table.loc[got, 'same class']:.1%} of the images (the floor was "
                        f"{floor:.0%}): leave out the routes below the floor first"
                    )
                column = f"ms, batch {batch}"
                if table.loc[got, column] > table.loc[right, column]:
                    return (
                        f"for a batch of {batch} (floor {floor:.0%}) it chose {got!r}, but a "
                        "faster route also reaches the floor: keep every route whose agreement "
                        "is at least `min_same_class`, then take the lowest time in the column "
                        "for that batch size"
                    )
                return (
                    f"for a batch of {batch} it chose {got!r}: compare the column for that "
                    "batch size, lowest time first"
                )
    return None


def exercise_2(choose_route: Callable[..., Any] | Any) -> None:
    """``choose_route(table, batch, min_same_class)``: the fastest route for ``batch`` among those
    that give eager's class for at least ``min_same_class`` of the images."""
    report(
        filled(choose_route=choose_route),
        lambda: route_problem(choose_route),
        done="choose_route picks the fastest route that agrees with eager often enough",
    )
