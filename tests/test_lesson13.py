"""Lesson 13's exercise checker (no_gradient) and the repeats exercise it gave to cookbook 13
(ch13.exercise_4) accept the right answers and reject the usual wrong ones."""

from __future__ import annotations

import math
import random

import numpy as np
import torch

from helpers.env import seed_everything
from helpers.exercises import ch13, lesson13


def verdict(capsys, check) -> str:
    check()
    return capsys.readouterr().out


# Cookbook 13's exercise 4 (from the lesson): repeats(run, seed)


def right_repeats(run, seed):
    seed_everything(seed)
    first = run()
    seed_everything(seed)
    return first == run()


def seeds_once(run, seed):
    seed_everything(seed)
    return run() == run()


def seeds_torch_only(run, seed):
    torch.manual_seed(seed)
    first = run()
    torch.manual_seed(seed)
    return first == run()


def compares_approximately(run, seed):
    seed_everything(seed)
    first = run()
    seed_everything(seed)
    second = run()
    return all(math.isclose(a, b) for a, b in zip(first, second, strict=True))


def test_repeats_exercise_accepts_the_reference(capsys):
    out = verdict(capsys, lambda: ch13.exercise_4(right_repeats))
    assert out.startswith("✓"), out


def test_repeats_exercise_accepts_a_numpy_bool(capsys):
    def numpy_compare(run, seed):
        seed_everything(seed)
        first = np.array(run())
        seed_everything(seed)
        return np.array_equal(first, np.array(run()))

    out = verdict(capsys, lambda: ch13.exercise_4(numpy_compare))
    assert out.startswith("✓"), out


def test_repeats_exercise_names_each_usual_mistake(capsys):
    cases = {
        "before each of the two runs": seeds_once,
        "NumPy's": seeds_torch_only,
        "not approximately": compares_approximately,
        "operating system": lambda run, seed: True,
        "return True or False": lambda run, seed: None,
        "still returns `...`": lambda run, seed: ...,
        "fill in": ...,
        "should be a function": 3,
    }
    for expected, answer in cases.items():
        out = verdict(capsys, lambda answer=answer: ch13.exercise_4(answer))
        assert out.startswith("✗") and expected in out, (expected, out)


def test_repeats_exercise_reports_an_answer_that_raises(capsys):
    def crashes(run, seed):
        raise ValueError("oops")

    out = verdict(capsys, lambda: ch13.exercise_4(crashes))
    assert out.startswith("✗") and "ValueError: oops" in out


def test_repeats_exercise_leaves_the_global_generators_alone(capsys):
    seed_everything(5)
    states = torch.get_rng_state(), np.random.get_state()[1].copy(), random.getstate()
    ch13.exercise_4(right_repeats)
    assert torch.equal(torch.get_rng_state(), states[0])
    assert np.array_equal(np.random.get_state()[1], states[1])
    assert random.getstate() == states[2]


def test_the_runs_of_the_repeats_exercise_behave_as_described():
    """Seeded runs repeat, the others do not: otherwise the checker would teach the wrong thing."""
    for run in (ch13._torch_run, ch13._numpy_run, ch13._python_run):
        assert right_repeats(run, 0)
        assert not seeds_once(run, 0)
    assert not right_repeats(ch13._os_run, 0)
    assert not right_repeats(ch13._last_digits_run, 0)
    assert compares_approximately(ch13._last_digits_run, 0)


# Lesson 13's exercise 1: no_gradient(model)


def right_no_gradient(model):
    found = []
    for name, p in model.named_parameters():
        if p.grad is None or not torch.isfinite(p.grad).all() or not p.grad.any():
            found.append(name)
    return found


def test_no_gradient_exercise_accepts_the_reference_as_a_list_a_set_or_a_tuple(capsys):
    for wrap in (list, set, tuple):
        answer = lambda model, wrap=wrap: wrap(right_no_gradient(model))  # noqa: E731
        out = verdict(capsys, lambda answer=answer: lesson13.exercise_1(answer))
        assert out.startswith("✓"), (wrap, out)


def test_no_gradient_exercise_names_each_usual_mistake(capsys):
    def skips_none(model):
        return [n for n, p in model.named_parameters() if p.grad is not None and not p.grad.any()]

    def crashes_on_none(model):
        return [n for n, p in model.named_parameters() if not p.grad.any()]

    def sums_to_zero(model):
        return [
            n
            for n, p in model.named_parameters()
            if p.grad is None or p.grad.sum() == 0 or not torch.isfinite(p.grad).all()
        ]

    def nan_only(model):
        return [
            n
            for n, p in model.named_parameters()
            if p.grad is None or not p.grad.any() or p.grad.isnan().any()
        ]

    def no_zeros(model):
        return [
            n
            for n, p in model.named_parameters()
            if p.grad is None or not torch.isfinite(p.grad).all()
        ]

    def clears(model):
        found = right_no_gradient(model)
        model.zero_grad()
        return found

    cases = {
        "got no gradient at all": skips_none,
        "look for None": crashes_on_none,
        "add up to 0": sums_to_zero,
        "infinity": nan_only,
        "zeros only": no_zeros,
        "changed the gradients": clears,
        "return a list": lambda model: None,
        "still returns `...`": lambda model: ...,
        "fill in": ...,
        "should be a function": "no_gradient",
    }
    for expected, answer in cases.items():
        out = verdict(capsys, lambda answer=answer: lesson13.exercise_1(answer))
        assert out.startswith("✗") and expected in out, (expected, out)


def test_the_models_of_the_no_gradient_exercise_hold_what_the_checker_expects():
    for name, (model, expected) in lesson13._cases().items():
        assert sorted(right_no_gradient(model)) == sorted(expected), name
    healthy, _ = lesson13._cases()["healthy"]
    assert all(p.grad is not None and p.grad.any() for p in healthy.parameters())


def test_no_gradient_exercise_leaves_the_global_generator_alone(capsys):
    torch.manual_seed(3)
    state = torch.get_rng_state()
    lesson13.exercise_1(right_no_gradient)
    assert torch.equal(torch.get_rng_state(), state)
