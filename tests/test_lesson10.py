"""Lesson 10's helpers: the profile timeline diagram and the exercise checkers."""

from __future__ import annotations

import math
import time

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
import pytest
import torch
from matplotlib.figure import Figure
from torch.profiler import ProfilerActivity, profile, record_function

from helpers.diagrams.timeline import PHASES, draw_timeline, phase_spans
from helpers.exercises import lesson10


@pytest.fixture(autouse=True)
def close_figures():
    yield
    plt.close("all")


def labelled_profile(steps: int = 3, data_s: float = 0.004) -> profile:
    """A profile of a small loop whose phases are labelled as the lesson labels them."""
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        for _ in range(steps):
            with record_function("data"):
                time.sleep(data_s)
            with record_function("forward"):
                y = torch.randn(64, 64) @ torch.randn(64, 64)
            with record_function("backward"):
                y.sum()
            with record_function("optimizer"):
                pass
            with record_function("not a phase"):
                pass
    return prof


# ----------------------------------------------------------------------------- the timeline


def test_phase_spans_reads_each_labelled_block_in_time_order():
    spans = phase_spans(labelled_profile(steps=3))
    assert [name for name, _, _ in spans] == list(PHASES) * 3  # "not a phase" left out
    assert spans[0][1] == 0.0  # milliseconds from the first block's start
    starts = [start for _, start, _ in spans]
    assert starts == sorted(starts)
    assert all(end >= start for _, start, end in spans)
    data = [end - start for name, start, end in spans if name == "data"]
    assert min(data) >= 4.0  # each data block slept 4 ms
    only_data = phase_spans(labelled_profile(steps=2), ["data"])
    assert [name for name, _, _ in only_data] == ["data", "data"]


def test_phase_spans_rejects_what_is_not_a_labelled_profile():
    with pytest.raises(ValueError, match="needs a torch profiler profile"):
        phase_spans([("data", 0, 1)])
    with pytest.raises(ValueError, match="none of the phases"):
        phase_spans(labelled_profile(steps=1), ["no such label"])


def row_texts(fig: Figure) -> list[str]:
    return [t.get_text() for t in fig.axes[0].texts]


def test_the_timeline_draws_one_row_per_run_with_its_total_and_wait():
    before = [("data", 0, 60), ("forward", 60, 80), ("data", 80, 140), ("forward", 140, 160)]
    after = [("data", 0, 2), ("forward", 2, 22), ("data", 22, 24), ("forward", 24, 44)]
    fig = draw_timeline({"before": before, "after": after}, ["data", "forward"])
    assert isinstance(fig, Figure)
    ax = fig.axes[0]
    assert [t.get_text() for t in ax.get_yticklabels()] == ["after", "before"]  # first on top
    assert row_texts(fig) == ["160 ms\n75% data", "44 ms\n9% data"]
    assert len(ax.patches) == 8  # one bar per span
    legend = [t.get_text() for t in ax.get_legend().get_texts()]
    assert legend == ["data", "forward"]
    assert fig.get_figwidth() <= 9


def test_the_timeline_draws_a_profile_directly():
    fig = draw_timeline({"profiled": labelled_profile(steps=2)})
    assert len(fig.axes[0].patches) == 2 * len(PHASES)
    assert row_texts(fig)[0].endswith("data")


@pytest.mark.parametrize(
    ("runs", "phases", "message"),
    [
        ({}, PHASES, "at least one run"),
        ([("data", 0, 1)], PHASES, "at least one run"),
        ({"a": [("data", 0, 1)]}, [], "between 1 and"),
        ({"a": [("data", 0, 1)]}, [f"p{i}" for i in range(9)], "between 1 and"),
        ({"a": []}, PHASES, "no spans"),
        ({"a": [("data", 5, 1)]}, PHASES, "ends"),
        ({"a": [("load", 0, 1)]}, PHASES, "not one of the phases"),
        ({"a": [("data", 0)]}, PHASES, "list of"),
        ({"a": 3}, PHASES, "list of"),
    ],
)
def test_the_timeline_rejects_bad_input(runs, phases, message):
    with pytest.raises(ValueError, match=message):
        draw_timeline(runs, phases)


# ----------------------------------------------------------------------------- exercise 1


def first_line(capsys) -> str:
    return capsys.readouterr().out.splitlines()[0]


def test_exercise_1_accepts_the_reference(capsys):
    lesson10.exercise_1(lesson10.reference_timed_loop)
    assert first_line(capsys).startswith("✓ ")


def starter(batches, step, steps):
    for _ in range(steps):
        x, y = next(batches)
        step(x, y)
    return ..., ...


def in_seconds(batches, step, steps):
    per_step, waiting = lesson10.reference_timed_loop(batches, step, steps)
    return per_step / 1000, waiting / 1000


def whole_loop(batches, step, steps):
    per_step, waiting = lesson10.reference_timed_loop(batches, step, steps)
    return per_step * steps, waiting * steps


def swapped(batches, step, steps):
    return lesson10.reference_timed_loop(batches, step, steps)[::-1]


def timed_the_step(batches, step, steps):
    """Times the step instead of the wait."""
    busy = 0.0
    began = time.perf_counter()
    for _ in range(steps):
        x, y = next(batches)
        t = time.perf_counter()
        step(x, y)
        busy += time.perf_counter() - t
    return 1000 * (time.perf_counter() - began) / steps, 1000 * busy / steps


def one_step_too_few(batches, step, steps):
    return lesson10.reference_timed_loop(batches, step, steps - 1)


@pytest.mark.parametrize(
    ("answer", "says"),
    [
        (..., "fill in `timed_loop`"),
        (starter, "fill in the two numbers"),
        (lambda b, s, n: None, "should return two numbers"),
        (lambda b, s, n: (1.0, "x"), "should return two numbers"),
        (in_seconds, "look like seconds"),
        (whole_loop, "divide by the number of steps"),
        (swapped, "swapped"),
        (timed_the_step, "too little"),
        (one_step_too_few, "one step per batch"),
        (3, "should be a function"),
    ],
)
def test_exercise_1_rejects_typical_mistakes(capsys, answer, says):
    lesson10.exercise_1(answer)
    line = first_line(capsys)
    assert line.startswith("✗ ") and says in line, line


# ----------------------------------------------------------------------------- exercise 2


def test_exercise_2_accepts_the_reference_and_its_answers_are_right(capsys):
    lesson10.exercise_2(lesson10.reference_workers_needed)
    assert first_line(capsys).startswith("✓ ")
    assert lesson10.reference_workers_needed(60, 30) == 2  # exactly enough
    assert lesson10.reference_workers_needed(70, 30) == 3  # 2 would deliver every 35 ms
    assert lesson10.reference_workers_needed(20, 30) == 1  # a fast disk still needs one


@pytest.mark.parametrize(
    ("answer", "says"),
    [
        (..., "fill in `workers_needed`"),
        (lambda r, s: ..., "fill in what workers_needed returns"),
        (lambda r, s: r / s, "whole number"),
        (lambda r, s: math.ceil(r / s) if r > s else 0, "returned 0"),
        (lambda r, s: math.floor(r / s), "round up"),
        (lambda r, s: max(1, math.floor(r / s)), "round up"),
        (lambda r, s: math.ceil(s / r), "expected"),
        (lambda r, s: 5, "expected"),
        ("2", "should be a function"),
    ],
)
def test_exercise_2_rejects_typical_mistakes(capsys, answer, says):
    lesson10.exercise_2(answer)
    line = first_line(capsys)
    assert line.startswith("✗ ") and says in line, line


def test_exercise_2_accepts_whole_floats(capsys):
    lesson10.exercise_2(lambda r, s: float(max(1, math.ceil(r / s))))
    assert first_line(capsys).startswith("✓ ")
