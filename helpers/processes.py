"""Processes a notebook starts: a free local port, and stopping a process with its children."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
from pathlib import Path


def free_port() -> int:
    """Return a TCP port on 127.0.0.1 that is free right now.

    >>> 0 < free_port() < 65536
    True
    """
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _signal(process: subprocess.Popen, kill: bool) -> None:
    """Terminate (or kill) a process and, on POSIX, everything in its session's process group,
    orphans included; on Windows, which has no process groups of this kind, the process alone
    (its descendants are stopped one by one by :func:`stop`)."""
    if hasattr(os, "killpg"):  # POSIX: the process was started with start_new_session=True
        try:
            os.killpg(process.pid, signal.SIGKILL if kill else signal.SIGTERM)
            return
        except ProcessLookupError:  # ended meanwhile, or not a group leader: signal it alone
            if process.poll() is not None:
                return
    if kill:
        process.kill()
    else:
        process.terminate()


def stop(process: subprocess.Popen, grace: float = 10.0) -> None:
    """Stop a process started with ``start_new_session=True``, everything in its session, and
    every descendant that moved to a session of its own (as torchrun's ranks do): terminate,
    then kill after ``grace`` seconds; close its pipes. Works on Linux, macOS and Windows (via
    psutil where POSIX process groups do not exist)."""
    import psutil

    try:
        descendants = psutil.Process(process.pid).children(recursive=True)
    except psutil.NoSuchProcess:
        descendants = []
    if process.poll() is None:
        _signal(process, kill=False)
        try:
            process.wait(timeout=grace)
        except subprocess.TimeoutExpired:
            _signal(process, kill=True)
            process.wait()
    for child in descendants:
        _, alive = psutil.wait_procs([child], timeout=0)
        for survivor in alive:
            with contextlib.suppress(psutil.NoSuchProcess):  # it may end in the meantime
                survivor.terminate()
    _, alive = psutil.wait_procs(descendants, timeout=grace)
    for survivor in alive:
        with contextlib.suppress(psutil.NoSuchProcess):
            survivor.kill()
    psutil.wait_procs(alive, timeout=grace)
    for pipe in (process.stdout, process.stderr):
        if pipe:
            pipe.close()


def leftovers(marker: str | os.PathLike[str]) -> list[int]:
    """Return the PIDs of running processes started from the file ``marker`` (a script's path,
    say): what a job left behind. An argument of a process counts when it names the same file,
    resolved against that process's working directory, so a process of another checkout with
    the same relative path does not. This process and its parents are not counted.

    >>> leftovers("no/such/script.py")
    []
    """
    import psutil

    target = Path(marker).resolve()
    mine = {os.getpid(), *(p.pid for p in psutil.Process().parents())}
    found = []
    for process in psutil.process_iter(["pid", "cmdline", "cwd"]):
        if process.info["pid"] in mine:
            continue
        for part in process.info["cmdline"] or []:
            if Path(part).name != target.name:  # cheap test first: most arguments differ
                continue
            if not os.path.isabs(part) and not process.info["cwd"]:
                continue  # relative, and its working directory is unknown (another user's)
            try:
                if (Path(process.info["cwd"] or "/") / part).resolve() == target:
                    found.append(process.info["pid"])
                    break
            except (OSError, RuntimeError):  # e.g. a symlink loop
                continue
    return found
