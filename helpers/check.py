"""Checked claims: a notebook states what matters and the test run proves it."""

from __future__ import annotations


class ClaimFailed(AssertionError):
    """Raised by :func:`check` when a claim is false."""


def check(ok: object, claim: str) -> None:
    """Print ``✓ claim`` when ``ok`` is truthy, else raise :class:`ClaimFailed`.

    Used at the end of a section whose output varies run to run (timings, training logs), so
    the notebook still tests what it teaches.

    >>> check(2 + 2 == 4, "arithmetic works")
    ✓ arithmetic works
    """
    if not claim:
        raise ValueError("a check needs a claim to state")
    if not ok:
        raise ClaimFailed(f"✗ {claim}")
    print(f"✓ {claim}")
