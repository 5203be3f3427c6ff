"""Checked claims and intended errors: a notebook states what matters and the run proves it.

:func:`check` states a claim and proves it; :func:`expect_error` shows an error on purpose, in
plain Python, so *Run All* goes on in every front end (JupyterLab, Colab, VS Code), and fails
when the error does not happen.
"""

from __future__ import annotations

import json
import os
import re
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

# When set, every check given a measured value appends one JSON line to this file; `make test`
# sets it and prints the table of measured claims at the end (tests/conftest.py).
CLAIMS_LOG_ENV = "COOKBOOK_CLAIMS_LOG"
# When set to 1 (the test suite and the authors' build set it), a timing claim that misses
# fails like any other; on a learner's machine it is reported and the notebook goes on.
STRICT_ENV = "COOKBOOK_STRICT_CLAIMS"
# The line an intended error prints: a marker, then what Python's last traceback line says.
ERROR_MARK = "⛔"
ERROR_LINE_RE = re.compile(rf"^{ERROR_MARK} (?P<ename>[\w.]+): (?P<message>.*)$")
WARNING_MARK = "⚠"
WARNING_LINE_RE = re.compile(rf"^{WARNING_MARK} (?P<ename>[\w.]+): (?P<message>.*)$")
# The second line of a timing claim that missed on a learner's machine.
TIMING_MISS = (
    "  Not so on this machine: timings depend on the hardware and on what else is running."
)
ANSI_RE = re.compile(r"\x1b\[[0-9;]*m")
# Where in torch's C++ sources a warning was raised: a build path and line that vary by version.
TRIGGERED_RE = re.compile(r"\s*\(Triggered internally at [^)]*\)\.?")


class ClaimFailed(AssertionError):
    """Raised by :func:`check` when a claim is false."""


class ErrorNotRaised(AssertionError):
    """Raised by :func:`expect_error` when the code did not raise the error it shows."""


class WarningNotRaised(AssertionError):
    """Raised by :func:`expect_warning` when the code did not give the warning it shows."""


def strict() -> bool:
    """Return whether timing claims must hold (``$COOKBOOK_STRICT_CLAIMS`` is ``1``)."""
    return os.environ.get(STRICT_ENV, "") == "1"


def check(ok: object, claim: str, *, measured: str | None = None, timing: bool = False) -> None:
    """Print ``✓ claim`` when ``ok`` is truthy, else raise :class:`ClaimFailed`.

    Used at the end of a section whose output varies run to run (timings, training logs), so
    the notebook still tests what it teaches. ``measured`` is the value the claim was judged on
    (e.g. ``"17.3×"``); it is not printed on success, so the stored output stays the same from
    run to run, but it goes to the claims log when ``$COOKBOOK_CLAIMS_LOG`` names one.

    ``timing=True`` marks a claim about speed, which depends on the machine and its load: on a
    learner's machine a miss prints ``✗`` with the value measured and what it means, and the
    notebook goes on; under the tests (``$COOKBOOK_STRICT_CLAIMS=1``) it raises like any other.
    Correctness claims (equal results, an accuracy, a bug reproduced) always raise.

    >>> check(2 + 2 == 4, "arithmetic works")
    ✓ arithmetic works
    """
    if not claim:
        raise ValueError("a check needs a claim to state")
    log = os.environ.get(CLAIMS_LOG_ENV)
    if measured is not None and log:
        with open(log, "a", encoding="utf-8") as f:
            f.write(json.dumps({"claim": claim, "measured": measured, "ok": bool(ok)}) + "\n")
    if ok:
        print(f"✓ {claim}")
        return
    failed = f"✗ {claim}" + (f" (measured {measured})" if measured else "")
    if timing and not strict():
        print(
            f"{failed}\n{TIMING_MISS} The stored output shows the course's machine; "
            "the notebook goes on."
        )
        return
    raise ClaimFailed(failed)


@dataclass
class Caught:
    """What :func:`expect_error` caught: the exception, once the block has raised it."""

    error: BaseException | None = None


def error_line(error: BaseException, max_lines: int = 2) -> str:
    """Return ``⛔ Type: message`` for an exception: the message's first ``max_lines`` lines
    (``…`` when there are more), without terminal colour codes.

    >>> error_line(ValueError("bad value"))
    '⛔ ValueError: bad value'
    """
    text = ANSI_RE.sub("", str(error)).strip()
    if isinstance(error, KeyError) and len(error.args) == 1:
        text = repr(error.args[0])
    lines = [line.strip() for line in text.splitlines() if line.strip()] or [""]
    shown = "\n   ".join(lines[:max_lines]) + (" …" if len(lines) > max_lines else "")
    return f"{ERROR_MARK} {type(error).__name__}: {shown}"


@contextmanager
def expect_error(
    expected: type[BaseException] | tuple[type[BaseException], ...],
    match: str | None = None,
    lines: int = 2,
) -> Iterator[Caught]:
    """Run a block that shows an error on purpose: print the error as ``⛔ Type: message``
    (the message's first ``lines`` lines) and go on. Raise :class:`ErrorNotRaised` when the
    block raises nothing, or an error whose message does not match the regex ``match``; an error
    of another type propagates as it is.

    >>> with expect_error(ZeroDivisionError):
    ...     1 / 0
    ⛔ ZeroDivisionError: division by zero
    """
    caught = Caught()
    kinds = expected if isinstance(expected, tuple) else (expected,)
    names = " or ".join(kind.__name__ for kind in kinds)
    try:
        yield caught
    except (ClaimFailed, ErrorNotRaised):  # a check inside the block failed: not the lesson
        raise
    except expected as error:
        caught.error = error
        if match is not None and not re.search(match, str(error)):
            raise ErrorNotRaised(
                f"expected {names} matching {match!r}, got: {error_line(error)}"
            ) from error
        print(error_line(error, max_lines=lines))
        return
    raise ErrorNotRaised(f"expected {names}, but the code ran without an error")


@contextmanager
def expect_warning(
    expected: type[Warning] = Warning, match: str | None = None
) -> Iterator[list[warnings.WarningMessage]]:
    """Run a block that gives a warning on purpose: print each warning of the ``expected``
    category that matches the regex ``match`` as ``⚠ Category: message`` (its first line, once)
    and go on; the block gets the list of every warning caught. Raise
    :class:`WarningNotRaised` when none came. Every other warning is given again as it was, under
    the filters in force outside the block. The source location torch appends to its C++
    warnings ("Triggered internally at ...") is left out.

    >>> with expect_warning(UserWarning):
    ...     warnings.warn("mind the shapes")
    ⚠ UserWarning: mind the shapes
    """
    shown: list[warnings.WarningMessage] = []
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            yield caught
    finally:
        shown = [
            w
            for w in caught
            if issubclass(w.category, expected)
            and (match is None or re.search(match, str(w.message)))
        ]
        for w in caught:
            if w not in shown:
                warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
    if not shown:
        got = "; ".join(f"{w.category.__name__}: {w.message}" for w in caught)[:300]
        wanted = expected.__name__ + (f" matching {match!r}" if match else "")
        raise WarningNotRaised(f"expected {wanted}, got {got or 'no warning'}")
    lines = []
    for w in shown:
        text = TRIGGERED_RE.sub("", ANSI_RE.sub("", str(w.message))).strip()
        line = f"{WARNING_MARK} {w.category.__name__}: {text.splitlines()[0]}"
        if line not in lines:
            lines.append(line)
    print("\n".join(lines))


def read_claims(path: str | os.PathLike[str]) -> list[dict[str, object]]:
    """Return the records of a claims log, in the order they were checked."""
    try:
        with open(path, encoding="utf-8") as f:
            return [json.loads(line) for line in f if line.strip()]
    except FileNotFoundError:
        return []
