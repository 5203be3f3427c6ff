"""Checks for lesson 00 · Python you will meet's exercises: the reference answers live here, not
in the notebook."""

from __future__ import annotations

import inspect
from collections.abc import Iterator
from typing import Any

from helpers.exercises import equal, filled, report, true


class ReadTooFar(Exception):
    """A stream was read past the items the first batch needs."""


def _stream(first: int) -> Iterator[int]:
    """Yield ``0 .. first - 1``, then fail: a source that must not be read further (an endless
    stream, a file still being written)."""
    yield from range(first)
    raise ReadTooFar(f"it read item {first + 1} before handing out the first batch")


def _first_batch_of_stream(batches: Any) -> str | None:
    try:
        first = next(iter(batches(_stream(3), 3)))
    except ReadTooFar as err:
        return (
            f"on a stream, batches(stream, 3) must yield the first batch as soon as it holds 3 "
            f"items, but {err}: yield inside the loop, and do not slice, count or list the items"
        )
    except TypeError as err:
        return (
            f"batches(stream, 3) raised TypeError ({err}): a stream has no len() and cannot be "
            "sliced; take its items one at a time with a for loop"
        )
    return equal("the first batch of a stream", first, [0, 1, 2])


def exercise_1(batches: Any) -> None:
    """A generator of lists of ``size`` consecutive items, the last one shorter, that hands out
    each batch as soon as it is full (so it works on an endless stream)."""
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
        lambda: _first_batch_of_stream(batches),
        done="batches yields full batches as they fill, then what is left, even from a stream",
    )


def _reuses_parent(clipped: type, parent: type) -> str | None:
    """Whether ``clipped``'s call goes through ``parent.__call__``: the parent's call is swapped
    for one returning 100 while ``clipped`` is called (the class is restored after)."""
    original = parent.__call__
    parent.__call__ = lambda self, x: 100
    try:
        result = clipped(2, -5)(1)
    finally:
        parent.__call__ = original
    if result == 100:
        return None
    return (
        "the result is right, but `__call__` repeats the parent's arithmetic: get the parent's "
        "result from its own `__call__` (super() reaches it) and clip that"
    )


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
        lambda: _reuses_parent(clipped, parent),
        done="Clipped reuses its parent's call and clips the result at 0",
    )
