"""Run a command tied to the process that started it: when that process dies (a notebook's
kernel killed, crashed or restarted), the command and everything it started are stopped.

A kernel that dies cannot clean up after itself, so the watcher is a process of its own
between the kernel and the command. It polls for its parent (an orphan is adopted by another
process, so its parent PID changes; where that never happens, as on Windows, the parent's PID
stops existing) and keeps a list of the command's descendants, those that moved to a session of
their own included (torchrun's ranks do). When the command ends, whatever it left running is
stopped too. Command line::

    python -m helpers.tether --parent PID -- COMMAND [ARG ...]

Its exit status is the command's (a command ended by signal N ends the watcher the same way).
Use :func:`tethered` to build that command line.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import Sequence

POLL_S = 0.2  # how often the parent is looked for
LIST_S = 1.0  # how often the command's descendants are listed (it reads every process)
GRACE_S = 5.0  # SIGTERM, then SIGKILL after this long


def tethered(command: Sequence[object]) -> list[str]:
    """Return ``command`` run under the watcher: stopped, with all it started, when this
    process dies.

    >>> tethered(["python", "server.py"])[-3:]
    ['--', 'python', 'server.py']
    """
    watcher = [sys.executable, "-m", "helpers.tether", "--parent", str(os.getpid())]
    return [*watcher, "--", *map(str, command)]


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
        with contextlib.suppress(psutil.Error):
            if process.is_running() and process.status() != psutil.STATUS_ZOMBIE:
                process.terminate()
                alive.append(process)
    _, left = psutil.wait_procs(alive, timeout=GRACE_S)
    for process in left:
        with contextlib.suppress(psutil.Error):
            process.kill()
    psutil.wait_procs(left, timeout=GRACE_S)


def _parent_gone(parent: int) -> bool:
    import psutil

    return os.getppid() != parent or not psutil.pid_exists(parent)


def _signal_group(leader: int, number: int) -> None:
    """Send ``number`` to the process group led by ``leader`` (POSIX; gone members ignored)."""
    if hasattr(os, "killpg"):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(leader, number)


def run(command: Sequence[str], parent: int) -> int:
    """Run ``command`` until it ends or ``parent`` dies; return its exit status (negative: the
    signal that ended it). The command runs in a process group of its own, so that what it
    leaves behind can be found and stopped."""
    known: dict[int, object] = {}
    child: subprocess.Popen | None = None

    def on_signal(number: int, _frame: object) -> None:
        """Asked to stop (SIGTERM, SIGINT): pass it on to the command's group, and to its
        descendants in sessions of their own."""
        if child is None:
            return
        _signal_group(child.pid, number)
        known.update(_descendants(os.getpid()))
        for process in known.values():
            with contextlib.suppress(Exception):
                if not hasattr(os, "getpgid") or os.getpgid(process.pid) != child.pid:
                    process.send_signal(number)

    for number in (signal.SIGTERM, signal.SIGINT):
        signal.signal(number, on_signal)
    if _parent_gone(parent):  # died while this watcher started
        return -signal.SIGTERM
    child = subprocess.Popen(list(command), start_new_session=hasattr(os, "setsid"))
    listed = 0.0
    while True:
        try:
            code = child.wait(timeout=POLL_S)
            break
        except subprocess.TimeoutExpired:
            pass
        if time.monotonic() - listed > LIST_S:
            known.update(_descendants(os.getpid()))
            listed = time.monotonic()
        if _parent_gone(parent):
            known.update(_descendants(os.getpid()))
            _signal_group(child.pid, signal.SIGTERM)
            _stop_all(known)
            child.wait()
            _signal_group(child.pid, signal.SIGKILL)
            return -signal.SIGTERM
    # What the command left running: its group, and descendants in sessions of their own.
    known.update(_descendants(os.getpid()))
    _signal_group(child.pid, signal.SIGTERM)
    _stop_all(known)
    return code


def main(argv: Sequence[str]) -> None:
    usage = "usage: python -m helpers.tether --parent PID -- COMMAND [ARG ...]"
    if len(argv) < 4 or argv[0] != "--parent" or argv[2] != "--" or not argv[1].isdigit():
        sys.exit(usage)
    code = run(argv[3:], int(argv[1]))
    if code < 0:  # ended by a signal: end the same way, so the caller sees the same status
        with contextlib.suppress(OSError, ValueError):  # SIGKILL and SIGSTOP keep their default
            signal.signal(-code, signal.SIG_DFL)
        os.kill(os.getpid(), -code)
    sys.exit(code)


if __name__ == "__main__":
    main(sys.argv[1:])
