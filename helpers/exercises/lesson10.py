"""Checks for lesson 10 · Speedups' exercises: the reference answers live here, not in the
notebook."""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterator
from typing import Any

from helpers.exercises import filled, report, true

# Exercise 1's fake loop: every batch takes READ_S to arrive, every step STEP_S to compute.
READ_S, STEP_S, STEPS = 0.020, 0.010, 5


def reference_timed_loop(batches: Iterator, step: Callable, steps: int) -> tuple[float, float]:
    """Run ``steps`` steps; return (ms per step, ms spent waiting in ``next(batches)`` per step)."""
    waited = 0.0
    began = time.perf_counter()
    for _ in range(steps):
        asked = time.perf_counter()
        x, y = next(batches)
        waited += time.perf_counter() - asked
        step(x, y)
    total = time.perf_counter() - began
    return 1000 * total / steps, 1000 * waited / steps


def _number(value: Any) -> float | None:
    try:
        number = float(value)
    except (TypeError, ValueError, RuntimeError):
        return None
    return number if math.isfinite(number) else None


def exercise_1(timed_loop: Callable[..., Any] | Any) -> None:
    """``timed_loop(batches, step, steps)`` runs ``steps`` training steps and returns
    ``(ms per step, ms waiting for data per step)``. Tried on a fake loop whose batches take
    20 ms to arrive and whose step takes 10 ms (waits made of ``time.sleep``)."""
    counted = {"batches": 0, "steps": 0}
    got: dict[str, Any] = {}

    def slow_batches() -> Iterator[tuple[int, int]]:
        while True:
            time.sleep(READ_S)
            counted["batches"] += 1
            yield counted["batches"], 0

    def step(x: Any, y: Any) -> None:
        time.sleep(STEP_S)
        counted["steps"] += 1

    def run() -> str | None:
        if not callable(timed_loop):
            return "timed_loop should be a function, written with `def`"
        got["result"] = timed_loop(slow_batches(), step, STEPS)
        return None

    def two_numbers() -> str | None:
        result = got["result"]
        if not isinstance(result, tuple | list) or len(result) != 2:
            return f"timed_loop should return two numbers, got {result!r}"
        if any(part is ... for part in result):
            return "fill in the two numbers timed_loop returns (they are still `...`)"
        numbers = [_number(part) for part in result]
        if None in numbers:
            return f"timed_loop should return two numbers, got {result!r}"
        got["per_step"], got["waiting"] = numbers
        return None

    def ran_each_step() -> str | None:
        return true(
            counted["batches"] == STEPS and counted["steps"] == STEPS,
            f"the loop should take {STEPS} batches and run {STEPS} steps, one step per batch; "
            f"it took {counted['batches']} and ran {counted['steps']}",
        )

    def milliseconds_per_step() -> str | None:
        per_step, waiting = got["per_step"], got["waiting"]
        ideal_step, ideal_wait = 1000 * (READ_S + STEP_S), 1000 * READ_S
        if per_step < 1 and waiting < 1:
            return "these look like seconds: return milliseconds (× 1000)"
        if per_step > 2.5 * STEPS * ideal_step / 3:
            return (
                f"{per_step:.0f} ms per step is the whole loop's time: divide by the number of "
                "steps"
            )
        if waiting > per_step:
            return "the waiting time is larger than the step time: are the two swapped?"
        if waiting < 0.75 * ideal_wait and per_step >= ideal_step:
            return (
                f"{waiting:.1f} ms waiting per step is too little: time only the line that asks "
                "for the next batch, and add up its time over the steps"
            )
        if not 0.9 * ideal_step <= per_step <= 3 * ideal_step:
            return f"{per_step:.1f} ms per step: expected about {ideal_step:.0f} ms"
        share = waiting / per_step
        return true(
            0.45 <= share <= 0.9,
            f"{waiting:.1f} ms of {per_step:.1f} ms waiting: expected about "
            f"{ideal_wait:.0f} of {ideal_step:.0f}; time only the line that asks for the next "
            "batch",
        )

    report(
        filled(timed_loop=timed_loop),
        run,
        two_numbers,
        ran_each_step,
        milliseconds_per_step,
        done="the loop measures its time per step and its time waiting for data",
    )


def reference_workers_needed(read_ms: float, step_ms: float) -> int:
    """The fewest workers whose batches, together, arrive as fast as the steps use them."""
    return max(1, math.ceil(read_ms / step_ms))


# (read ms per batch, step ms): enough, too few, exact multiples, a fast disk, a slow one.
CASES = [(60, 30), (70, 30), (90, 30), (30, 30), (20, 30), (1, 1000), (100, 1), (45, 20)]


def exercise_2(workers_needed: Callable[[float, float], Any] | Any) -> None:
    """``workers_needed(read_ms, step_ms)``: the fewest DataLoader workers that keep a loop from
    waiting, when one worker reads a batch in ``read_ms`` and a step computes in ``step_ms``."""

    def each_case() -> str | None:
        if not callable(workers_needed):
            return "workers_needed should be a function, written with `def`"
        for read_ms, step_ms in CASES:
            answer = workers_needed(read_ms, step_ms)
            right = reference_workers_needed(read_ms, step_ms)
            where = f"workers_needed({read_ms}, {step_ms})"
            if answer is ...:
                return "fill in what workers_needed returns (it is still `...`)"
            if isinstance(answer, bool) or not isinstance(answer, int):
                whole = _number(answer)
                if whole is None or whole != int(whole):
                    return f"{where} returned {answer!r}: a number of processes is a whole number"
                answer = int(whole)
            if answer == right:
                continue
            if answer == 0:
                return (
                    f"{where} returned 0: with no workers the loop reads each batch itself and "
                    "waits for all of it"
                )
            if answer == right - 1 and read_ms / step_ms != int(read_ms / step_ms):
                return (
                    f"{where} returned {answer}: that many workers deliver a batch every "
                    f"{read_ms / answer:.1f} ms, slower than a step uses them; round up"
                )
            return f"{where} returned {answer}, expected {right}"
        return None

    report(
        filled(workers_needed=workers_needed),
        each_case,
        done="the fewest workers that deliver batches as fast as the steps use them",
    )
