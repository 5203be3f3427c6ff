"""Timing small pieces of code the way they should be timed: warm-up, repeats, medians."""

from __future__ import annotations

from collections.abc import Callable

import torch


def time_it(fn: Callable[[], object], *, min_run_time: float = 0.2) -> float:
    """Return the median seconds one call of ``fn`` takes (warm-up excluded).

    Uses ``torch.utils.benchmark.Timer.blocked_autorange``, which synchronises CUDA, runs
    ``fn`` in blocks until ``min_run_time`` seconds are spent and reports the median.

    >>> time_it(lambda: sum(range(100))) > 0
    True
    """
    if not callable(fn):
        raise TypeError(f"time_it needs a callable, got {type(fn).__name__}")
    if min_run_time <= 0:
        raise ValueError("min_run_time must be positive")
    from torch.utils import benchmark  # imported here: it logs CUDA_HOME noise on import

    fn()  # warm-up: first calls pay for allocation and dispatch caches
    timer = benchmark.Timer(stmt="fn()", globals={"fn": fn}, num_threads=torch.get_num_threads())
    return timer.blocked_autorange(min_run_time=min_run_time).median


def compare(fns: dict[str, Callable[[], object]], *, min_run_time: float = 0.2) -> dict[str, float]:
    """Time each named callable; print a small table; return ``{name: median seconds}``.

    The first entry is the baseline: each row shows its speed relative to it (2.0× = twice as
    fast, 0.5× = twice as slow).
    """
    if not fns:
        raise ValueError("compare needs at least one callable")
    times = {name: time_it(fn, min_run_time=min_run_time) for name, fn in fns.items()}
    base = next(iter(times.values()))
    width = max(len(name) for name in [*times, "code"])
    print(f"{'code':<{width}}  {'median':>12}  {'speed vs first':>14}")
    for name, seconds in times.items():
        print(f"{name:<{width}}  {seconds * 1e6:9.1f} µs  {base / seconds:13.2f}×")
    return times
