"""helpers.tether: a command tied to the process that started it."""

from __future__ import annotations

import signal
import subprocess
import sys
import textwrap
import time

import psutil
import pytest

from helpers.tether import tethered

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")


def test_the_exit_status_is_the_command_s():
    assert subprocess.run(tethered([sys.executable, "-c", "raise SystemExit(3)"])).returncode == 3
    assert subprocess.run(tethered([sys.executable, "-c", "pass"])).returncode == 0


def test_a_command_ended_by_a_signal_ends_the_watcher_the_same_way():
    kill_self = "import os, signal; os.kill(os.getpid(), signal.SIGTERM)"
    done = subprocess.run(tethered([sys.executable, "-c", kill_self]))
    assert done.returncode == -signal.SIGTERM


def test_output_passes_through():
    done = subprocess.run(
        tethered([sys.executable, "-c", "print('hello')"]), capture_output=True, text=True
    )
    assert done.stdout == "hello\n"


def test_usage_without_a_command():
    done = subprocess.run(
        [sys.executable, "-m", "helpers.tether", "--", "true"], capture_output=True, text=True
    )
    assert done.returncode == 1 and "usage" in done.stderr


def test_a_killed_parent_takes_the_command_and_its_children_with_it(tmp_path):
    """A parent (a notebook's kernel, say) starts a tethered command that starts a child of its
    own in a new session (as torchrun's ranks are); SIGKILL the parent: both are gone soon."""
    pids = tmp_path / "pids"
    grandchild = "import time; time.sleep(600)"
    command = textwrap.dedent(f"""
        import os, subprocess, sys, time
        child = subprocess.Popen([sys.executable, "-c", {grandchild!r}], start_new_session=True)
        open({str(pids)!r}, "w").write(f"{{os.getpid()}} {{child.pid}}")
        time.sleep(600)
    """)
    parent_code = textwrap.dedent(f"""
        import subprocess, time
        from helpers.tether import tethered
        subprocess.Popen(tethered([{sys.executable!r}, "-c", {command!r}]))
        time.sleep(600)
    """)
    parent = subprocess.Popen([sys.executable, "-c", parent_code])
    try:
        deadline = time.monotonic() + 30
        while not (pids.exists() and pids.read_text().strip()):
            assert time.monotonic() < deadline, "the tethered command did not start"
            time.sleep(0.05)
        started = [psutil.Process(int(pid)) for pid in pids.read_text().split()]
        watcher = psutil.Process(parent.pid).children()[0]
        parent.kill()
        parent.wait()
        _, alive = psutil.wait_procs([watcher, *started], timeout=10)
        assert not alive, [p.cmdline() for p in alive]
    finally:
        for process in psutil.Process().children(recursive=True):
            process.kill()


def test_a_command_killed_with_sigkill_ends_the_watcher_the_same_way():
    kill_self = "import os, signal; os.kill(os.getpid(), signal.SIGKILL)"
    done = subprocess.run(tethered([sys.executable, "-c", kill_self]))
    assert done.returncode == -signal.SIGKILL


def test_what_the_command_leaves_running_is_stopped_when_it_ends(tmp_path):
    pid_file = tmp_path / "pid"
    command = f"sleep 60 & echo $! > {pid_file}; exit 0"
    assert subprocess.run(tethered(["sh", "-c", command])).returncode == 0
    left = psutil.Process(int(pid_file.read_text()))
    _, alive = psutil.wait_procs([left], timeout=10)
    assert not alive or left.status() == psutil.STATUS_ZOMBIE
