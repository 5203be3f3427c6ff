"""Run a command tied to the process that started it: when that process dies (a notebook's
kernel killed, crashed or restarted), the command and everything it started are stopped.

A kernel that dies cannot clean up after itself, so the watcher is a process of its own
between the kernel and the command. It polls its parent's PID (an orphan is adopted by
another process, so the PID changes) and keeps a list of the command's descendants, those
that moved to a session of their own included (torchrun's ranks do). Command line::

    python -m helpers.tether -- COMMAND [ARG ...]

Its exit status is the command's (a command ended by signal N ends the watcher the same way).
Use :func:`tethered` to build that command line.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
from collections.abc import Sequence

POLL_S = 0.2  # how often the parent is looked for
GRACE_S = 5.0  # SIGTERM, then SIGKILL after this long


def tethered(command: Sequence[object]) -> list[str]:
    """Return ``command`` run under the watcher: stopped, with all it started, when this
    process dies.

    >>> tethered(["python", "server.py"])[-3:]
    ['--', 'python', 'server.py']
    """
    return [sys.executable, "-m", "helpers.tether", "--", *map(str, command)]


def _descendants(pid: int) -> dict[int, object]:
    """The processes below ``pid`` now, by PID (psutil objects, so a reused PID is not
    mistaken for one of them)."""
    import psutil

    try:
        return {p.pid: p for p in psutil.Process(pid).children(recursive=True)}
    except psutil.NoSuchProcess:
        return {}


def _stop_all(known: dict[int, object]) -> None:
    """Terminate every process in ``known`` that still runs; kill those left after the grace."""
    import psutil

    alive = []
    for process in known.values():
        with contextlib.suppress(psutil.NoSuchProcess):
            process.terminate()
            alive.append(process)
    _, left = psutil.wait_procs(alive, timeout=GRACE_S)
    for process in left:
        with contextlib.suppress(psutil.NoSuchProcess):
            process.kill()
    psutil.wait_procs(left, timeout=GRACE_S)


def run(command: Sequence[str]) -> int:
    """Run ``command`` until it ends or this process's parent dies; return its exit status
    (negative: the signal that ended it)."""
    parent = os.getppid()
    child = subprocess.Popen(list(command))
    known: dict[int, object] = {}
    stopping = False

    def on_signal(number: int, _frame: object) -> None:
        """Asked to stop (SIGTERM, SIGINT): pass it on to the command's whole tree."""
        nonlocal stopping
        stopping = True
        known.update(_descendants(os.getpid()))
        for process in known.values():
            with contextlib.suppress(Exception):
                process.send_signal(number)

    for number in (signal.SIGTERM, signal.SIGINT):
        signal.signal(number, on_signal)
    while True:
        try:
            code = child.wait(timeout=POLL_S)
            break
        except subprocess.TimeoutExpired:
            pass
        known.update(_descendants(os.getpid()))
        if os.getppid() != parent:  # orphaned: the process that started us is gone
            _stop_all(known)
            child.wait()
            return -signal.SIGTERM
    if stopping or code != 0:  # what is left of the tree (ranks in sessions of their own)
        _stop_all({pid: p for pid, p in known.items() if p.is_running()})
    return code


def main(argv: Sequence[str]) -> None:
    if not argv or argv[0] != "--" or len(argv) < 2:
        sys.exit("usage: python -m helpers.tether -- COMMAND [ARG ...]")
    code = run(argv[1:])
    if code < 0:  # ended by a signal: end the same way, so the caller sees the same status
        signal.signal(-code, signal.SIG_DFL)
        os.kill(os.getpid(), -code)
    sys.exit(code)


if __name__ == "__main__":
    main(sys.argv[1:])
