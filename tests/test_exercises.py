"""helpers.exercises: a ✓ line for a right answer, one helpful line for a wrong one, no raise."""

from __future__ import annotations

import pytest
import torch

from helpers import exercises as ex


def test_a_placeholder_is_named(capsys):
    assert ex.report(ex.filled(a=1, b=...), done="fine") is False
    assert capsys.readouterr().out == "✗ fill in `b` (it is still `...`)\n"
    assert ex.filled(a=None) == "fill in `a` (it is still `None`)"
    assert ex.filled(a=0, b=[]) is None


def test_the_first_problem_wins_and_later_checks_do_not_run(capsys):
    ran = []
    ok = ex.report(None, "first problem", lambda: ran.append(1), done="fine")
    assert ok is False and ran == [] and capsys.readouterr().out == "✗ first problem\n"


def test_a_right_answer_prints_the_done_line(capsys):
    assert ex.report(None, lambda: None, ex.equal("n", 3, 3), done="n is three") is True
    assert capsys.readouterr().out == "✓ n is three\n"


def test_a_check_that_crashes_on_the_answer_is_reported_not_raised(capsys):
    assert ex.report(lambda: 1 / 0, done="fine") is False
    assert capsys.readouterr().out.startswith("✗ checking your answer raised ZeroDivisionError")


def test_close_numbers_and_tensors():
    assert ex.close("g", torch.tensor(-0.75), -0.75) is None
    assert ex.close("g", 1000.05, 1000.0, tol=1e-4) is None
    assert ex.close("g", None, 1.0) == "`g` should be a number, got NoneType"
    assert ex.close("g", float("nan"), 1.0).startswith("`g` is nan, expected 1")
    assert ex.close("g", 2.0, 1.0, hint="did you call backward()?").endswith(
        ": did you call backward()?"
    )


def test_tensor_close_names_type_shape_and_values():
    t = torch.arange(6.0).reshape(2, 3)
    assert ex.tensor_close("t", t, t.clone()) is None
    assert ex.tensor_close("t", [1], t) == "`t` should be a tensor, got list"
    assert ex.tensor_close("t", t.T, t) == "`t` has shape (3, 2), expected (2, 3)"
    assert ex.tensor_close("t", t + 0.5, t).startswith("`t` differs by up to 0.5")
    assert ex.tensor_close("i", torch.tensor([1, 2]), torch.tensor([1, 3])) == (
        "`i` differs in 1 elements"
    )


def test_report_needs_a_done_sentence():
    with pytest.raises(ValueError, match="sentence"):
        ex.report(done="")
