"""tests/kernel_start.py: a kernel that dies at start is started once more, and says why."""

from __future__ import annotations

import pytest
from kernel_start import TRIES, keep_stderr_and_retry


def dies_then(times: int):
    """A stand-in for nbval's start_new_kernel that dies ``times`` times, then starts."""
    calls = []

    def start(**kwargs):
        calls.append(kwargs)
        kwargs["stderr"].write(f"zmq.error.ZMQError: Address already in use ({len(calls)})\n")
        kwargs["stderr"].flush()
        if len(calls) <= times:
            raise RuntimeError("Kernel died before replying to kernel_info")
        return "km", "kc"

    return start, calls


def test_a_kernel_that_dies_once_is_started_again_and_its_stderr_shown():
    start, calls = dies_then(1)
    with pytest.warns(UserWarning, match=r"(?s)try 1 of 2.*Address already in use \(1\)"):
        assert keep_stderr_and_retry(start)(kernel_name="k", stderr=None) == ("km", "kc")
    assert len(calls) == 2 and all(c["kernel_name"] == "k" for c in calls)


def test_a_kernel_that_always_dies_still_fails():
    start, calls = dies_then(TRIES)
    with pytest.warns(UserWarning), pytest.raises(RuntimeError, match="Kernel died"):
        keep_stderr_and_retry(start)(kernel_name="k")
    assert len(calls) == TRIES


def test_nbval_starts_its_kernels_through_it():
    import nbval.kernel

    assert getattr(nbval.kernel.start_new_kernel, "_cookbook", False)
