"""Checks for lesson 08 · TensorBoard's exercises: the reference answers live here, not in the
notebook."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import torch

from helpers import board
from helpers.exercises import filled, report, tensor_close, true

STEPS, LR, TARGET = 30, 0.1, 3.0


def _descent() -> list[float]:
    """The value of x before each of the STEPS SGD steps on (x - TARGET)², from x = 0."""
    x = torch.tensor(0.0, requires_grad=True)
    optimizer = torch.optim.SGD([x], lr=LR)
    values = []
    for _ in range(STEPS):
        values.append(x.item())
        loss = (x - TARGET) ** 2
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    return values


def _numbers(value: Any) -> list[float] | None:
    """The floats of a list, tuple, Series or 1-D tensor, or None when value is not one."""
    if isinstance(value, str | bytes):
        return None
    try:
        return [float(v) for v in (value.tolist() if hasattr(value, "tolist") else value)]
    except (TypeError, ValueError, RuntimeError):
        return None


def exercise_1(logdir: Path, x_logged: Any) -> None:
    """The event files under logdir hold x before each of the 30 steps of gradient descent on
    (x - 3)², under the tag `x` at steps 0 to 29; x_logged is the list of them read back."""
    reference = _descent()
    logdir = Path(logdir)

    def files_problem() -> str | None:
        on_disk = board.scalars(logdir)
        if on_disk.empty:
            return f"no scalars in {logdir}: log there, and close the writer (a `with` block)"
        rows = on_disk[on_disk.tag == "x"]
        if rows.empty:
            return f"no scalar tagged 'x' in {logdir}, only {sorted(set(on_disk.tag))}"
        if rows.step.tolist() != list(range(STEPS)):
            return (
                f"the 'x' values sit at {len(rows)} steps from {rows.step.min()} to "
                f"{rows.step.max()}, expected 0, 1, ..., {STEPS - 1} once each"
            )
        return tensor_close(
            "the logged x",
            torch.tensor(rows.value.tolist(), dtype=torch.float64),
            torch.tensor(reference, dtype=torch.float64),
            atol=1e-5,  # event files store float32
            hint="log x before each step (0 at step 0), then take one SGD step with lr 0.1 "
            "on (x - 3) ** 2",
        )

    def read_back_problem() -> str | None:
        mine = _numbers(x_logged)
        if mine is None:
            return f"x_logged should be a list of numbers, got a {type(x_logged).__name__}"
        on_disk = board.scalars(logdir)
        wanted = on_disk[on_disk.tag == "x"].value.tolist()
        return true(
            len(mine) == len(wanted)
            and all(abs(a - b) < 1e-9 for a, b in zip(mine, wanted, strict=True)),
            f"x_logged holds {len(mine)} values, not the {len(wanted)} of the event files: "
            "read them back with read_back once the writer is closed",
        )

    report(
        filled(x_logged=x_logged),
        files_problem,
        read_back_problem,
        done=f"the event files hold x at all {STEPS} steps, and you read them back",
    )


def exercise_2(logdir: Path, best_run: Any) -> None:
    """best_run names the run under logdir (as board.scalars names it) whose last logged
    `val/accuracy` is the highest; any run tied for it is right."""
    logged = board.scalars(Path(logdir))
    accuracy = logged[logged.tag == "val/accuracy"]
    final = {run: rows.value.iloc[-1] for run, rows in accuracy.groupby("run")}
    runs = sorted(set(logged.run))

    def best_problem() -> str | None:
        if not final:
            return f"no run under {logdir} logged 'val/accuracy'"
        if best_run not in runs:
            return f"best_run is {best_run!r}, not one of the runs {runs}"
        if best_run not in final:
            return f"the run {best_run!r} logged no 'val/accuracy', so it cannot be compared"
        top = max(final.values())
        return true(
            final[best_run] == top,
            f"the last validation accuracy of {best_run!r} is {final[best_run]:.4f}, and "
            "another run ends higher: compare each run's final value",
        )

    report(
        filled(best_run=best_run),
        best_problem,
        done="best_run ends with the highest validation accuracy of the runs in the logs",
    )
