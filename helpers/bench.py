"""Timing small pieces of code the way they should be timed: warm-up, repeats, medians or bests."""

from __future__ import annotations

import contextlib
import math
import time
from collections.abc import Callable, Iterator
from types import ModuleType

import torch

from helpers.env import quiet_logger


def _benchmark_module() -> ModuleType:
    """Import ``torch.utils.benchmark`` without the log line its import can print.

    Importing it imports ``torch.utils.cpp_extension``, which logs a warning such as
    ``No CUDA runtime is found, using CUDA_HOME=...`` on machines with CUDA files but no GPU:
    build-machine noise, not something the reader's code did.
    """
    with quiet_logger("torch.utils.cpp_extension"):
        from torch.utils import benchmark
    return benchmark


def time_it(
    fn: Callable[[], object],
    *,
    min_run_time: float = 0.2,
    threads: int | None = None,
    best: bool = False,
) -> float:
    """Return the seconds one call of ``fn`` takes (warm-up excluded): the median of the
    timed blocks, or with ``best=True`` the fastest block's.

    Uses ``torch.utils.benchmark.Timer.blocked_autorange``, which synchronises CUDA, runs
    ``fn`` in blocks until ``min_run_time`` seconds are spent and reports the median of the
    blocks' times per call; ``best=True`` reports the fastest block instead (other programs on
    the machine only ever add time, so the fastest block is the least disturbed).
    ``threads`` sets torch's intra-op threads while timing (default: the current setting); one
    thread measures the work itself and is far less disturbed by other load on the machine.

    >>> time_it(lambda: sum(range(100))) > 0
    True
    """
    if not callable(fn):
        raise TypeError(f"time_it needs a callable, got {type(fn).__name__}")
    if min_run_time <= 0:
        raise ValueError("min_run_time must be positive")
    if threads is not None and threads < 1:
        raise ValueError("threads must be at least 1")
    benchmark = _benchmark_module()
    num_threads = threads or torch.get_num_threads()
    previous = torch.get_num_threads()
    torch.set_num_threads(num_threads)
    try:
        fn()  # warm-up: first calls pay for allocation and dispatch caches
    finally:
        torch.set_num_threads(previous)
    timer = benchmark.Timer(stmt="fn()", globals={"fn": fn}, num_threads=num_threads)
    measurement = timer.blocked_autorange(min_run_time=min_run_time)
    return min(measurement.times) if best else measurement.median


def time_in_turns(
    fns: dict[str, Callable[[], object]],
    *,
    rounds: int = 5,
    min_run_time: float = 0.1,
    threads: int | None = None,
    best: bool = False,
    cpu_time: bool = False,
) -> dict[str, float]:
    """Time the named callables in turns (A, B, A, B, ...) and return each one's fastest median
    (with ``best``, its fastest block of calls, as :func:`compare` keeps).

    A busy spell on a shared machine then slows every contender, not only the one being timed,
    and the fastest of ``rounds`` medians is the least disturbed; a load that lasts all along
    still tilts medians, which the fastest blocks resist. ``threads`` as in :func:`time_it`.
    ``cpu_time=True`` (with ``threads=1``) returns each one's fastest block per call by the
    calling thread's CPU time (``best`` is then implied), ``rounds * min_run_time`` of it each, as
    :func:`compare` explains: for work that runs on the calling thread only.

    >>> sorted(time_in_turns({"a": lambda: 1, "b": lambda: 2}, rounds=2, min_run_time=0.01))
    ['a', 'b']
    """
    if not fns:
        raise ValueError("time_in_turns needs at least one callable")
    if rounds < 1:
        raise ValueError("rounds must be at least 1")
    if cpu_time:
        return _best_by_cpu_time(fns, rounds * min_run_time, threads)
    fastest = {name: float("inf") for name in fns}
    for _ in range(rounds):
        for name, fn in fns.items():
            seconds = time_it(fn, min_run_time=min_run_time, threads=threads, best=best)
            fastest[name] = min(fastest[name], seconds)
    return fastest


def _calls_per_block(fn: Callable[[], object], target: float) -> int:
    """How many calls of ``fn`` take about ``target`` seconds of this thread's CPU time: more
    calls until the clock has moved (a coarse clock reads 0 for a short call), then scaled."""
    calls = 1
    while True:
        start = time.thread_time()
        for _ in range(calls):
            fn()
        seconds = time.thread_time() - start
        if seconds >= target / 10 or calls >= 1_000_000:
            return max(1, math.ceil(target * calls / max(seconds, 1e-9)))
        calls *= 10


def _best_by_cpu_time(
    fns: dict[str, Callable[[], object]], min_run_time: float, threads: int | None
) -> dict[str, float]:
    """Each callable's fastest block by the calling thread's CPU time, per call, on one torch
    thread: blocks of about a millisecond (or 20 ticks of a coarse clock), the callables in
    turns, each until it has spent ``min_run_time``. Raises ``ValueError`` when the work ran on
    other threads of the process too (which this clock does not count)."""
    if threads != 1:
        raise ValueError("cpu_time=True needs threads=1: it counts the calling thread only")
    if min_run_time <= 0:
        raise ValueError("min_run_time must be positive")
    target = max(1e-3, 20 * time.get_clock_info("thread_time").resolution)
    previous = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        for fn in fns.values():
            fn()  # warm-up
        calls = {name: _calls_per_block(fn, target) for name, fn in fns.items()}
        best = dict.fromkeys(fns, math.inf)
        spent = dict.fromkeys(fns, 0.0)
        process_start, thread_start = time.process_time(), time.thread_time()
        while left := [name for name in fns if spent[name] < min_run_time]:
            for name in left:
                start = time.thread_time()
                for _ in range(calls[name]):
                    fns[name]()
                seconds = time.thread_time() - start
                spent[name] += seconds
                if seconds > 0:  # a coarse clock can read 0 for a block: no information
                    best[name] = min(best[name], seconds / calls[name])
        this_thread = time.thread_time() - thread_start
        others = time.process_time() - process_start - this_thread
    finally:
        torch.set_num_threads(previous)
    if others > 0.25 * this_thread:  # a pool of 2 threads would be about 1×; housekeeping ~0
        raise ValueError(
            f"the work ran on other threads too ({others:.2f} s of CPU time beside this "
            f"thread's {this_thread:.2f} s), which cpu_time=True does not count: time it "
            "by the wall clock, or make it run on the calling thread (one thread)"
        )
    return best


def compare(
    fns: dict[str, Callable[[], object]],
    *,
    min_run_time: float = 0.2,
    threads: int | None = None,
    rounds: int = 3,
    cpu_time: bool = False,
) -> dict[str, float]:
    """Time each named callable; print a small table; return ``{name: best seconds}``.

    The first entry is the baseline: each row shows its speed relative to it (2.0× = twice as
    fast, 0.5× = twice as slow). ``threads`` as in :func:`time_it`. The callables are timed in
    ``rounds`` alternating rounds of ``min_run_time / rounds`` seconds each, and each keeps its
    fastest block of calls over all rounds: another program on the machine only ever adds
    time, so a comparison of medians can tilt with the load (the best round's medians gave one
    ratio 0.60× and 1.55× beside a spinning process and two test workers, about 1× on a quiet
    machine). A cheaper callable runs more blocks in the same time, so it has more chances at a
    fast one: a slight tilt in its favour, far below the margins the course's claims use.

    ``cpu_time=True`` (with ``threads=1``, for work that runs on the calling thread: ATen's CPU
    kernels on one thread, not a GPU's) times by the calling thread's own CPU time, in short
    blocks taken in turns until each callable has spent ``min_run_time`` (``rounds`` is then not
    used; work found on other threads of the process raises ``ValueError``). Time spent waiting
    while other programs have the cores is not counted; sharing caches and memory bandwidth
    with them still is, hence the fastest block. The wall clock cannot give that on a machine
    with more busy programs than cores: a call of a few milliseconds is then cut into time
    slices almost every time and hardly a block is undisturbed. Beside two spinning processes
    on 2 cores, two equal 3.5 ms calls (``c.exp()``, ``t.exp()``) came out 0.63-2.04× apart by
    the wall clock in 20 tries, and 0.99-1.01× by CPU time.
    """
    if not fns:
        raise ValueError("compare needs at least one callable")
    if rounds < 1:
        raise ValueError("rounds must be at least 1")
    if cpu_time:
        times = _best_by_cpu_time(fns, min_run_time, threads)
    else:
        times = dict.fromkeys(fns, math.inf)
        for _ in range(rounds):
            for name, fn in fns.items():
                seconds = time_it(
                    fn, min_run_time=min_run_time / rounds, threads=threads, best=True
                )
                times[name] = min(times[name], seconds)
    base = next(iter(times.values()))
    width = max(len(name) for name in [*times, "code"])
    best = "best (CPU)" if cpu_time else "best"
    print(f"{'code':<{width}}  {best:>12}  {'speed vs first':>14}")
    for name, seconds in times.items():
        print(f"{name:<{width}}  {seconds * 1e6:9.1f} µs  {base / seconds:13.2f}×")
    return times


# The CPU convolution kernels ATen may run: oneDNN's, or its own reference (unfold + matmul).
CONVOLUTION_KERNELS = ("aten::mkldnn_convolution", "aten::thnn_conv2d")


def convolution_kernel(fn: Callable[[], object]) -> str:
    """Return which CPU convolution kernel one call of ``fn`` runs (profiled): one of
    :data:`CONVOLUTION_KERNELS`, or ``"none"`` when it runs neither (e.g. on a GPU).

    >>> convolution_kernel(lambda: torch.zeros(3) + 1)
    'none'
    """
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as profile:
        fn()
    ran = {event.key for event in profile.key_averages()}
    return next((k for k in CONVOLUTION_KERNELS if k in ran), "none")


@contextlib.contextmanager
def ieee_fp32() -> Iterator[None]:
    """Run float32 matmuls and cuDNN convolutions and RNNs in full IEEE float32 in the block.

    On Ampere and newer GPUs, cuDNN convolutions default to TF32 (10-bit mantissa) in torch
    2.15, so two float32 computations that should agree can differ in the third decimal. Wrap
    equality checks in this; the previous settings come back on exit. No effect on a CPU.

    >>> with ieee_fp32():
    ...     torch.backends.cudnn.conv.fp32_precision
    'ieee'
    """
    flags = (torch.backends.cuda.matmul, torch.backends.cudnn.conv, torch.backends.cudnn.rnn)
    previous = [flag.fp32_precision for flag in flags]
    try:
        for flag in flags:
            flag.fp32_precision = "ieee"
        yield
    finally:
        for flag, value in zip(flags, previous, strict=True):
            flag.fp32_precision = value
