"""Checks for 08 · TensorBoard's exercises: the reference answers live here, not in the
notebook."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import torch

from helpers import board
from helpers.exercises import filled, report, tensor_close, true


def _one_cycle_lrs(steps: int = 100) -> list[float]:
    """The learning rate at each step of OneCycleLR(max_lr=0.1) over ``steps`` steps."""
    optimizer = torch.optim.SGD([torch.zeros(1, requires_grad=True)], lr=0.1)
    schedule = torch.optim.lr_scheduler.OneCycleLR(optimizer, max_lr=0.1, total_steps=steps)
    values = []
    for _ in range(steps):
        values.append(schedule.get_last_lr()[0])
        optimizer.step()
        schedule.step()
    return values


def exercise_1(logdir: Path, lr_logged: Any) -> None:
    """The event files under logdir hold the 100 learning rates of the OneCycleLR schedule under
    the tag `lr`, at steps 0 to 99; lr_logged is what board.scalars reads back from them."""
    reference = _one_cycle_lrs()

    def files_problem() -> str | None:
        on_disk = board.scalars(logdir)
        if on_disk.empty:
            return f"no scalars in {logdir}: log there, and close the writer (`with`)"
        lr = on_disk[on_disk.tag == "lr"]
        if lr.empty:
            return f"no scalar tagged 'lr', only {sorted(set(on_disk.tag))}"
        if lr.step.tolist() != list(range(100)):
            return (
                f"the 'lr' steps are {len(lr)} values from {lr.step.min()} to {lr.step.max()}, "
                "expected 0, 1, ..., 99 once each"
            )
        return tensor_close(
            "the logged lr",
            torch.tensor(lr.value.tolist(), dtype=torch.float64),
            torch.tensor(reference, dtype=torch.float64),
            atol=1e-7,  # event files store float32
            hint="the value logged at step 0 should be the learning rate before the schedule "
            "has moved",
        )

    def read_back_problem() -> str | None:
        on_disk = board.scalars(logdir)
        if not hasattr(lr_logged, "tag") or not hasattr(lr_logged, "value"):
            return f"lr_logged is a {type(lr_logged).__name__}: read it with board.scalars"
        mine = lr_logged[lr_logged.tag == "lr"].value.tolist()
        return true(
            mine == on_disk[on_disk.tag == "lr"].value.tolist(),
            f"lr_logged has {len(mine)} 'lr' values, not the 100 of the files: "
            "read them back once the writer is closed",
        )

    report(
        filled(lr_logged=lr_logged),
        files_problem,
        read_back_problem,
        done="the event files hold all 100 learning rates of the schedule, peaking at max_lr",
    )


def exercise_2(sweep: dict[float, float], best_run: Any) -> None:
    """best_run names the sweep's run (as board.scalars names it) with the highest accuracy."""
    by_name = {f"lr={lr:g}": acc for lr, acc in sweep.items()}
    report(
        filled(best_run=best_run),
        lambda: true(
            best_run in by_name,
            f"best_run is {best_run!r}, not one of the runs {sorted(by_name)}: "
            "take it from the run column of what board.scalars reads",
        ),
        lambda: true(
            by_name[best_run] >= max(by_name.values()) - 1e-6,
            f"{best_run}'s final val/accuracy is {by_name[best_run]:.4f}, not the highest: "
            "compare the runs by the last val/accuracy each of them logged",
        ),
        done="best_run, read from the event files, is the sweep's most accurate run",
    )
