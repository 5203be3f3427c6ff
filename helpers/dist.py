"""Run a script on several processes with ``torchrun`` from a notebook cell, and see every rank.

>>> job = torchrun("train.py", "--epochs", 1, nproc=2)  # doctest: +SKIP
[rank 0] ...
[rank 1] ...
"""

from __future__ import annotations

import os
import queue
import re
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from helpers.processes import stop
from helpers.tether import tethered

# torchrun tees each rank's stdout and stderr to the console with this prefix, set through the
# environment variable that torchrun reads in every torch the course supports (2.13 and 2.15
# checked; the command-line option for it is newer: torch 2.13's torchrun refuses it). A rank's
# uncaught exception is also prefixed "[rankN]: " by torch itself, which is dropped as a
# repetition. torchrun's own prefix, where the template is not applied, is "[default0]:" (role
# and local rank): read just the same.
PREFIX_TEMPLATE = "[rank${rank}] "
PREFIX_ENV = "TORCHELASTIC_LOG_LINE_PREFIX_TEMPLATE"
RANK_LINE = re.compile(r"^\[(?:rank|default)(\d+)\](?: |:)(?:\[rank\d+\]: ?)?(.*)$")
# argparse's own error line (its program name is "run.py", "torchrun", or from Python 3.14 on
# "python -m torch.distributed.run"): torchrun refused its command line.
LAUNCHER_ERROR = re.compile(r"^.*?(?:run\.py|torchrun|torch\.distributed\.run): error: .*")
# Any other error line of torchrun's own, for a job that ended before a rank printed anything.
AGENT_ERROR = re.compile(r"^(?:[A-Za-z_][\w.]*(?:Error|Exception)\b).*")
ROOT_CAUSE = re.compile(r"Root Cause.*?rank\s*:\s*(\d+).*?exitcode\s*:\s*(-?\d+)", re.DOTALL)
# A Python exception's last line, or C++'s std::terminate message before an abort (exit code -6).
ERROR_LINE = re.compile(
    r"^(?:[A-Za-z_][\w.]*(?:Error|Exception|Interrupt|Exit)\b|terminate called).*"
)


@dataclass
class Job:
    """A finished ``torchrun`` job: each rank's output lines, torchrun's own lines, and timing."""

    command: list[str]
    returncode: int
    seconds: float
    output: dict[int, list[str]] = field(default_factory=dict)
    agent: list[str] = field(default_factory=list)


class RankFailed(RuntimeError):
    """A rank of a ``torchrun`` job failed, or the job ran out of time; the job was stopped.

    ``job`` holds everything the ranks printed; ``rank`` is the first rank that failed (None
    when the job timed out).
    """

    def __init__(self, message: str, job: Job, rank: int | None) -> None:
        super().__init__(message)
        self.job = job
        self.rank = rank


def command_line(script: str | Path, *args: object, nproc: int = 2) -> list[str]:
    """Return the ``torchrun --standalone`` command that :func:`torchrun` runs (as
    ``python -m torch.distributed.run``, so that it uses this kernel's Python)."""
    return [
        sys.executable,
        "-m",
        "torch.distributed.run",
        "--standalone",
        f"--nproc-per-node={nproc}",
        "--tee=3",
        str(script),
        *map(str, args),
    ]


def torchrun(
    script: str | Path,
    *args: object,
    nproc: int = 2,
    threads: int = 1,
    timeout: float = 120.0,
    echo: bool = True,
) -> Job:
    """Run ``script`` on ``nproc`` local processes with torchrun; return the finished :class:`Job`.

    Every rank's output is printed as it comes, as ``[rank N] line`` (``echo=False`` keeps it
    quiet). Each rank uses ``threads`` intra-op threads (``OMP_NUM_THREADS``). When a rank fails,
    torchrun stops the others; this raises :class:`RankFailed` naming the first failing rank and
    its error. After ``timeout`` seconds the whole job is killed and :class:`RankFailed` raised.
    No process of the job outlives the call, also when it raises, nor this process (the job
    runs under :mod:`helpers.tether`). Linux and macOS only: it stops the job with process
    groups.
    """
    script = Path(script)
    if not script.is_file():
        raise FileNotFoundError(f"no script {script}: write it first (%%writefile {script})")
    if nproc < 1 or threads < 1:
        raise ValueError(f"nproc and threads must be at least 1, got {nproc} and {threads}")
    command = command_line(script, *args, nproc=nproc)
    env = {
        **os.environ,
        "OMP_NUM_THREADS": str(threads),
        "PYTHONUNBUFFERED": "1",
        PREFIX_ENV: PREFIX_TEMPLATE,
    }
    job = Job(command, returncode=-1, seconds=0.0)
    start = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="torchrun-") as logs:
        process = subprocess.Popen(
            tethered([*command[:3], f"--log-dir={logs}", *command[3:]]),
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            text=True,
            encoding="utf-8",
            errors="replace",
            env=env,
            start_new_session=True,  # stop() ends this session and the ranks' own sessions
        )
        lines: queue.Queue[str | None] = queue.Queue()
        reader = threading.Thread(target=_read_lines, args=(process.stdout, lines), daemon=True)
        reader.start()
        timed_out = False
        try:
            while True:
                left = start + timeout - time.monotonic()
                if left <= 0:
                    timed_out = True
                    break
                try:
                    line = lines.get(timeout=left)
                except queue.Empty:
                    timed_out = True
                    break
                if line is None:
                    break
                _route(line, job, echo)
            if not timed_out:
                process.wait()
        finally:
            stop(process, grace=5.0)
            reader.join(timeout=5.0)
    job.returncode = process.returncode
    job.seconds = time.monotonic() - start
    if timed_out:
        raise RankFailed(f"the job ran past {timeout:g} s and was stopped", job, None)
    if job.returncode != 0 and not job.output and _root_cause(job)[0] is None:
        refusal = _last_error(job.agent, LAUNCHER_ERROR)
        what = "refused to start" if refusal else "ended before any rank printed a line"
        detail = refusal or _last_error(job.agent, AGENT_ERROR)
        raise RankFailed(
            f"torchrun {what} (exit code {job.returncode})" + (f": {detail}" if detail else ""),
            job,
            None,
        )
    if job.returncode != 0:
        rank, code = _root_cause(job)
        error = _last_error(job.output.get(rank, [])) if rank is not None else None
        who = f"rank {rank}" if rank is not None else "a rank"
        detail = f": {error}" if error else ""
        raise RankFailed(
            f"{who} failed (exit code {code}){detail}; torchrun stopped the job after "
            f"{job.seconds:.1f} s",
            job,
            rank,
        )
    return job


def _read_lines(stream, lines: queue.Queue) -> None:
    try:
        for line in stream:
            lines.put(line.rstrip("\n"))
    except (OSError, ValueError):  # the pipe was closed under us: the job is being stopped
        pass
    finally:
        lines.put(None)


def _route(line: str, job: Job, echo: bool) -> None:
    match = RANK_LINE.match(line)
    if match is None:
        job.agent.append(line)
        return
    rank, text = int(match.group(1)), match.group(2)
    job.output.setdefault(rank, []).append(text)
    if echo:
        print(f"[rank {rank}] {text}", flush=True)


def _root_cause(job: Job) -> tuple[int | None, int | str]:
    """Return (rank, exit code) of the first failure torchrun reports, else (None, returncode)."""
    match = ROOT_CAUSE.search("\n".join(job.agent))
    if match:
        return int(match.group(1)), int(match.group(2))
    return None, job.returncode


def _last_error(lines: list[str], pattern: re.Pattern = ERROR_LINE) -> str | None:
    errors = [line for line in lines if pattern.match(line)]
    return errors[-1] if errors else None
