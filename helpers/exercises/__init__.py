"""Checking a learner's answer to an exercise: one ✓ line when it is right, else one helpful line.

A check cell calls :func:`report` with the checks of the exercise, in order; the first that
finds a problem is printed as ``✗ ...`` and the rest are skipped, so a learner fixes one thing
at a time. A check is a string (a problem), ``None`` (fine), or a callable returning one of
those: callables run only while everything before them was fine, so a later check may use
names an earlier one made sure of. Nothing raises at the learner: an answer that makes a check
crash is reported as a problem too.

>>> x = ...
>>> report(filled(x=x), done="x is right")
✗ fill in `x` (it is still `...`)
False
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

Check = str | None | Callable[[], "str | None"]
PLACEHOLDERS = (Ellipsis, None, NotImplemented)


def filled(**answers: Any) -> str | None:
    """A problem naming the first answer that is still a placeholder (``...`` or ``None``)."""
    for name, value in answers.items():
        if any(value is p for p in PLACEHOLDERS):
            return f"fill in `{name}` (it is still `{'...' if value is Ellipsis else value}`)"
    return None


def _number(value: Any) -> float:
    return float(value.item() if hasattr(value, "item") else value)


def close(name: str, value: Any, expected: float, tol: float = 1e-4, hint: str = "") -> str | None:
    """A problem when the number ``value`` (a float or a one-element tensor) is not within
    ``tol`` of ``expected`` (relative to its size when that is above 1)."""
    try:
        got = _number(value)
    except (TypeError, ValueError, RuntimeError):
        return f"`{name}` should be a number, got {type(value).__name__}"
    if math.isfinite(got) and abs(got - expected) <= tol * max(1.0, abs(expected)):
        return None
    return f"`{name}` is {got:.6g}, expected {expected:.6g}" + (f": {hint}" if hint else "")


def tensor_close(
    name: str, value: Any, expected: Any, atol: float = 1e-5, hint: str = ""
) -> str | None:
    """A problem when tensor ``value`` differs from ``expected`` in type, shape or values."""
    import torch

    if not isinstance(value, torch.Tensor):
        return f"`{name}` should be a tensor, got {type(value).__name__}"
    expected = torch.as_tensor(expected)
    if value.shape != expected.shape:
        return f"`{name}` has shape {tuple(value.shape)}, expected {tuple(expected.shape)}"
    if value.dtype.is_floating_point or expected.dtype.is_floating_point:
        a, b = value.detach().double().cpu(), expected.detach().double().cpu()
        worst = (a - b).abs().max().item() if a.numel() else 0.0
        if worst <= atol:
            return None
        detail = f"differs by up to {worst:.3g}"
    else:
        if torch.equal(value.cpu(), expected.cpu()):
            return None
        detail = f"differs in {(value.cpu() != expected.cpu()).sum().item()} elements"
    return f"`{name}` {detail}" + (f": {hint}" if hint else "")


def equal(name: str, value: Any, expected: Any, hint: str = "") -> str | None:
    """A problem when ``value != expected`` (for plain Python values)."""
    if value == expected:
        return None
    return f"`{name}` is {value!r}, expected {expected!r}" + (f": {hint}" if hint else "")


def true(ok: object, problem: str) -> str | None:
    """``problem`` when ``ok`` is falsy."""
    return None if ok else problem


def report(*checks: Check, done: str) -> bool:
    """Print ``✓ done`` when every check passes, else ``✗`` and the first problem; return
    whether the answer is right."""
    if not done:
        raise ValueError("report needs the sentence to print when the answer is right")
    for item in checks:
        try:
            problem = item() if callable(item) else item
        except Exception as err:  # the learner's answer made the check crash
            problem = f"checking your answer raised {type(err).__name__}: {err}"
        if problem:
            print(f"✗ {problem}")
            return False
    print(f"✓ {done}")
    return True
