"""Lesson 08's exercise checkers accept the right answers and reject the usual wrong ones."""

from __future__ import annotations

from pathlib import Path

import torch
from torch.utils.tensorboard import SummaryWriter

from helpers import board
from helpers.exercises import lesson08


def verdict(capsys, check) -> str:
    check()
    return capsys.readouterr().out


def log_descent(folder: Path, *, tag: str = "x", after_step: bool = False, steps: int = 30):
    """Minimise (x - 3)² with SGD(lr=0.1), logging x at each step (before the step by default)."""
    x = torch.tensor(0.0, requires_grad=True)
    optimizer = torch.optim.SGD([x], lr=0.1)
    with SummaryWriter(folder) as writer:
        for step in range(steps):
            if not after_step:
                writer.add_scalar(tag, x.item(), step)
            loss = (x - 3) ** 2
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            if after_step:
                writer.add_scalar(tag, x.item(), step)


def read_x(folder: Path) -> list[float]:
    rows = board.scalars(folder)
    return rows[rows.tag == "x"].value.tolist()


def test_exercise_1_accepts_the_logged_descent_read_back(capsys, tmp_path):
    log_descent(tmp_path)
    out = verdict(capsys, lambda: lesson08.exercise_1(tmp_path, read_x(tmp_path)))
    assert out.startswith("✓"), out


def test_exercise_1_names_each_usual_mistake(capsys, tmp_path):
    cases = {
        "logged x": ("after", dict(after_step=True)),
        "no scalar tagged 'x'": ("tag", dict(tag="train/x")),
        "expected 0, 1": ("short", dict(steps=20)),
    }
    for expected, (name, options) in cases.items():
        folder = tmp_path / name
        log_descent(folder, **options)
        out = verdict(capsys, lambda f=folder: lesson08.exercise_1(f, [0.0] * 30))
        assert out.startswith("✗") and expected in out, (expected, out)


def test_exercise_1_wants_the_values_read_back(capsys, tmp_path):
    log_descent(tmp_path)
    values = read_x(tmp_path)
    cases = {
        "fill in": ...,
        "not the 30": values[:-1],
        "list of numbers": "x",
    }
    for expected, answer in cases.items():
        out = verdict(capsys, lambda answer=answer: lesson08.exercise_1(tmp_path, answer))
        assert out.startswith("✗") and expected in out, (expected, out)
    empty = tmp_path / "nothing"
    empty.mkdir()
    out = verdict(capsys, lambda: lesson08.exercise_1(empty, values))
    assert out.startswith("✗") and "no scalars" in out


def log_runs(logdir: Path, runs: dict[str, list[float]]) -> None:
    """Runs with the given validation accuracies, and one run with only a training loss."""
    for name, accuracies in runs.items():
        with SummaryWriter(logdir / name) as writer:
            for step, value in enumerate(accuracies):
                writer.add_scalar("val/accuracy", value, step)
    with SummaryWriter(logdir / "other") as writer:
        writer.add_scalar("train/loss", 0.1, 0)


def test_exercise_2_wants_the_best_last_value(capsys, tmp_path):
    log_runs(tmp_path, {"lr=a": [0.80, 0.90], "lr=b": [0.95, 0.85]})
    assert verdict(capsys, lambda: lesson08.exercise_2(tmp_path, "lr=a")).startswith("✓")
    cases = {
        "another run ends higher": "lr=b",  # the best value at any step, not the last
        "logged no 'val/accuracy'": "other",
        "not one of the runs": "lr=c",
        "fill in": ...,
    }
    for expected, answer in cases.items():
        out = verdict(capsys, lambda answer=answer: lesson08.exercise_2(tmp_path, answer))
        assert out.startswith("✗") and expected in out, (expected, out)


def test_exercise_2_accepts_either_run_of_a_tie(capsys, tmp_path):
    log_runs(tmp_path, {"lr=a": [0.5, 0.9], "lr=b": [0.7, 0.9]})
    for name in ("lr=a", "lr=b"):
        assert verdict(capsys, lambda n=name: lesson08.exercise_2(tmp_path, n)).startswith("✓")
