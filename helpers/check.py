"""Checked claims: a notebook states what matters and the test run proves it."""

from __future__ import annotations

import json
import os

# When set, every check given a measured value appends one JSON line to this file; `make test`
# sets it and prints the table of measured claims at the end (tests/conftest.py).
CLAIMS_LOG_ENV = "COOKBOOK_CLAIMS_LOG"


class ClaimFailed(AssertionError):
    """Raised by :func:`check` when a claim is false."""


def check(ok: object, claim: str, *, measured: str | None = None) -> None:
    """Print ``✓ claim`` when ``ok`` is truthy, else raise :class:`ClaimFailed`.

    Used at the end of a section whose output varies run to run (timings, training logs), so
    the notebook still tests what it teaches. ``measured`` is the value the claim was judged on
    (e.g. ``"17.3×"``); it is not printed, so the stored output stays the same from run to run,
    but it goes to the claims log when ``$COOKBOOK_CLAIMS_LOG`` names one.

    >>> check(2 + 2 == 4, "arithmetic works")
    ✓ arithmetic works
    """
    if not claim:
        raise ValueError("a check needs a claim to state")
    log = os.environ.get(CLAIMS_LOG_ENV)
    if measured is not None and log:
        with open(log, "a", encoding="utf-8") as f:
            f.write(json.dumps({"claim": claim, "measured": measured, "ok": bool(ok)}) + "\n")
    if not ok:
        raise ClaimFailed(f"✗ {claim}" + (f" (measured {measured})" if measured else ""))
    print(f"✓ {claim}")


def read_claims(path: str | os.PathLike[str]) -> list[dict[str, object]]:
    """Return the records of a claims log, in the order they were checked."""
    try:
        with open(path, encoding="utf-8") as f:
            return [json.loads(line) for line in f if line.strip()]
    except FileNotFoundError:
        return []
