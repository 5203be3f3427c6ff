"""Checks for lesson 00 · Python you will meet's exercises: the reference answers live here, not
in the notebook."""

from __future__ import annotations

import inspect
import itertools
from typing import Any

from helpers.exercises import equal, filled, report, true


def exercise_1(batches: Any) -> None:
    """A generator of lists of ``size`` consecutive items, the last one shorter, that also works
    on an endless stream."""
    report(
        filled(batches=batches),
        true(callable(batches), "`batches` should be a function (items, size)"),
        lambda: true(
            inspect.isgeneratorfunction(batches),
            "`batches` does not yield yet: a generator function hands out its values with `yield`",
        ),
        lambda: equal(
            "list(batches(range(10), 4))",
            list(batches(range(10), 4)),
            [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9]],
            hint="each batch is a list of consecutive items, the last one holds what is left",
        ),
        lambda: equal(
            "list(batches(range(8), 4))",
            list(batches(range(8), 4)),
            [[0, 1, 2, 3], [4, 5, 6, 7]],
            hint="no empty batch at the end when the items divide evenly",
        ),
        lambda: equal("list(batches([], 3))", list(batches([], 3)), []),
        lambda: equal(
            "the first batch of an endless stream",
            next(iter(batches(itertools.count(), 3))),
            [0, 1, 2],
            hint="yield each batch as soon as it is full; do not slice or measure the items",
        ),
        done="batches yields full batches as they fill, then what is left, even from a stream",
    )


def _source(fn: Any) -> str:
    """The source of ``fn``, or ``"super()"`` where Python cannot find it (nothing to judge)."""
    try:
        return inspect.getsource(fn)
    except (OSError, TypeError):
        return "super()"


def exercise_2(clipped: Any, parent: type) -> None:
    """A child class of ``parent`` whose call clips the parent's result at 0, reusing it."""
    report(
        filled(Clipped=clipped),
        true(
            isinstance(clipped, type) and issubclass(clipped, parent),
            f"`Clipped` should be a class that inherits from {parent.__name__}: "
            f"class Clipped({parent.__name__}): ...",
        ),
        lambda: true(
            "__call__" in vars(clipped),
            "`Clipped` has no `__call__` of its own yet: it still behaves like its parent",
        ),
        lambda: equal("Clipped(2, -5)(1)", clipped(2, -5)(1), 0, hint="2 · 1 - 5 is below 0"),
        lambda: equal("Clipped(2, -5)(4)", clipped(2, -5)(4), 3),
        lambda: equal("Clipped(3, 1)(2)", clipped(3, 1)(2), 7),
        lambda: true(
            "super()" in _source(vars(clipped)["__call__"]),
            "the result is right, but `__call__` repeats the parent's arithmetic: call "
            "super().__call__(x) instead",
        ),
        done="Clipped reuses its parent's call through super() and clips the result at 0",
    )
