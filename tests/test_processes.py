"""helpers.processes: free ports, stopping a process and its children, finding leftovers."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from pathlib import Path

from helpers.processes import free_port, leftovers, stop


def sleeper(path) -> None:
    """Write a script that starts a child of its own, then sleeps."""
    path.write_text(
        "import subprocess, sys, time\n"
        "if len(sys.argv) == 1:\n"
        "    subprocess.Popen([sys.executable, __file__, 'child'])\n"
        "time.sleep(600)\n"
    )


def test_free_port_can_be_bound_on_localhost():
    port = free_port()
    with socket.socket() as s:
        s.bind(("127.0.0.1", port))


def start_tree(tmp_path: Path, **popen: object) -> tuple[subprocess.Popen, Path]:
    """Start the sleeper script and wait until it and its child both run."""
    marker = tmp_path / "sleeper.py"
    sleeper(marker)
    process = subprocess.Popen([sys.executable, str(marker)], stdout=subprocess.PIPE, **popen)
    for _ in range(100):
        if len(leftovers(marker)) == 2:
            break
        time.sleep(0.1)
    assert len(leftovers(marker)) == 2
    return process, marker


def test_stop_ends_a_process_and_its_children_and_leftovers_finds_them(tmp_path):
    process, marker = start_tree(tmp_path, start_new_session=True)
    stop(process, grace=5)
    assert process.returncode is not None and process.stdout.closed
    for _ in range(50):  # the child gets SIGTERM with its group; give it a moment to go
        if not leftovers(marker):
            break
        time.sleep(0.1)
    assert leftovers(marker) == []
    stop(process)  # stopping twice is harmless


def test_stop_ends_the_tree_without_process_groups_as_on_windows(tmp_path, monkeypatch):
    """Windows has no os.killpg: stop terminates the process, then its descendants via psutil."""
    monkeypatch.delattr(os, "killpg")
    process, marker = start_tree(tmp_path)
    stop(process, grace=5)
    assert process.returncode is not None and process.stdout.closed
    assert leftovers(marker) == []  # the child was waited for, not just signalled


def test_leftovers_matches_the_file_not_the_text_of_its_path(tmp_path, monkeypatch):
    """Two checkouts run the same relative path (parallel CI): each counts only its own."""
    roots = [tmp_path / "ours", tmp_path / "theirs"]
    for root in roots:
        (root / "runs").mkdir(parents=True)
        (root / "runs" / "job.py").write_text("import time; time.sleep(600)\n")
    processes = [
        subprocess.Popen([sys.executable, "runs/job.py"], cwd=root, start_new_session=True)
        for root in roots
    ]
    try:
        for _ in range(100):  # until both are visible with their command lines
            if (
                len(leftovers(roots[0] / "runs" / "job.py") + leftovers(roots[1] / "runs/job.py"))
                == 2
            ):
                break
            time.sleep(0.05)
        assert leftovers(roots[0] / "runs" / "job.py") == [processes[0].pid]
        assert leftovers(roots[1] / "runs" / "job.py") == [processes[1].pid]
        monkeypatch.chdir(roots[1])
        assert leftovers("runs/job.py") == [processes[1].pid]  # relative to our directory
        assert leftovers("job.py") == []  # another file of the same name
    finally:
        for process in processes:
            stop(process, grace=5)
    assert leftovers(roots[0] / "runs" / "job.py") == []
