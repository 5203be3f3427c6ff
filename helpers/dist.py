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

# torchrun tees each rank's stdout and stderr to the console with this prefix; a rank's uncaught
# exception is also prefixed "[rankN]: " by torch itself, which is dropped as a repetition. A
# torchrun without the prefix option prefixes "[default0]:" (role and rank), read just the same.
PREFIX_TEMPLATE = "[rank${rank}] "
RANK_LINE = re.compile(r"^\[(?:rank|default)(\d+)\](?: |:)(?:\[rank\d+\]: ?)?(.*)$")
PREFIX_OPTIONS = ("--log-line-prefix-template", "--log_line_prefix_template")
# argparse's own error line: torchrun refused its command line before starting any rank.
LAUNCHER_ERROR = re.compile(r"^\S*(?:run\.py|torchrun): error: .*")
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
    option = prefix_option()
    prefix = [f"{option}={PREFIX_TEMPLATE}"] if option else []
    return [
        sys.executable,
        "-m",
        "torch.distributed.run",
        "--standalone",
        f"--nproc-per-node={nproc}",
        "--tee=3",
        *prefix,
        str(script),
        *map(str, args),
    ]


def prefix_option() -> str | None:
    """Return how this torch's torchrun spells its log-line prefix option, or None where it has
    none (the ranks' lines then carry torchrun's own ``[default0]:`` prefix)."""
    from torch.distributed.run import get_args_parser

    known = {name for action in get_args_parser()._actions for name in action.option_strings}
    return next((name for name in PREFIX_OPTIONS if name in known), None)


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
    No process of the job outlives the call, also when it raises. Linux and macOS only: it stops
    the job with process groups.
    """
    script = Path(script)
    if not script.is_file():
        raise FileNotFoundError(f"no script {script}: write it first (%%writefile {script})")
    if nproc < 1 or threads < 1:
        raise ValueError(f"nproc and threads must be at least 1, got {nproc} and {threads}")
    command = command_line(script, *args, nproc=nproc)
    env = {**os.environ, "OMP_NUM_THREADS": str(threads), "PYTHONUNBUFFERED": "1"}
    job = Job(command, returncode=-1, seconds=0.0)
    start = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="torchrun-") as logs:
        process = subprocess.Popen(
            [*command[:3], f"--log-dir={logs}", *command[3:]],
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
    if job.returncode != 0 and not job.output:
        refusal = _launcher_error(job.agent)
        if refusal:
            raise RankFailed(
                f"torchrun refused to start (exit code {job.returncode}), no rank ran: {refusal}",
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


def _launcher_error(lines: list[str]) -> str | None:
    """Return torchrun's own complaint when it exited before starting a rank, else None."""
    errors = [line for line in lines if LAUNCHER_ERROR.match(line)]
    return errors[-1] if errors else None


def _last_error(lines: list[str]) -> str | None:
    errors = [line for line in lines if ERROR_LINE.match(line)]
    return errors[-1] if errors else None
