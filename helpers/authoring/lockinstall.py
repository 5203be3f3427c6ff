"""Install the lock's exact versions with two pip processes side by side (``make setup``).

One ``pip install`` fetches, unpacks and byte-compiles ~220 wheels one after another on one
core. The lock already names every package and version, so nothing is left to resolve: this
script splits it into two lists of about equal size (torch and the CUDA wheels weigh most) and
installs each with ``--no-deps`` in its own pip, both at once. The plain
``pip install -r requirements.txt -c LOCK -e .`` that follows then finds everything in place and
only adds the project; it also does all the work where this step is skipped or fails.

Runs on the venv's bare Python before anything is installed: the standard library only.
Usage: ``python helpers/authoring/lockinstall.py requirements-lock.txt [PIP_OPTION ...]`` (the
options go to both pips, e.g. ``--no-compile``).
"""

from __future__ import annotations

import platform
import re
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

# What the heaviest packages write, in MB (Linux x86-64, torch 2.15); everything else counts 1.
WEIGHTS = {
    "torch": 1143, "triton": 1042, "nvidia-cudnn-cu13": 888, "nvidia-cublas": 563,
    "nvidia-cufft": 291, "nvidia-cusolver": 276, "nvidia-nccl-cu13": 253,
    "nvidia-cusparselt-cu13": 233, "nvidia-nvshmem-cu13": 201, "nvidia-cusparse": 167,
    "nvidia-cuda-nvrtc": 119, "nvidia-nvjitlink": 117, "scipy": 114, "onnxruntime": 75,
    "nvidia-cuda-cupti": 49, "pandas": 43, "sympy": 26, "matplotlib": 24,
}  # fmt: skip
MADE_ON = re.compile(r"with Python (\d+\.\d+)\S* on ([\w.-]+) ([\w.-]+)")


def pins(lock_text: str) -> list[str]:
    """The ``name==version`` lines of a lock file, without comments and blank lines."""
    lines = (line.split("#")[0].strip() for line in lock_text.splitlines())
    return [line for line in lines if line]


def made_for(lock_text: str) -> tuple[str, str, str] | None:
    """(Python major.minor, system, machine) the lock was made on, from its header."""
    found = MADE_ON.search(lock_text)
    return found.groups() if found else None


def this_machine() -> tuple[str, str, str]:
    return f"{sys.version_info[0]}.{sys.version_info[1]}", platform.system(), platform.machine()


def split(requirements: list[str], parts: int = 2) -> list[list[str]]:
    """Deal the requirements into ``parts`` lists of about equal weight, heaviest first."""

    def weight(line: str) -> int:
        return WEIGHTS.get(re.split(r"[=<>!~;\[ ]", line, maxsplit=1)[0].lower(), 1)

    groups: list[list[str]] = [[] for _ in range(parts)]
    loads = [0] * parts
    for line in sorted(requirements, key=lambda line: (-weight(line), line)):
        lightest = loads.index(min(loads))
        groups[lightest].append(line)
        loads[lightest] += weight(line)
    return groups


def install(lock: Path, parts: int = 2, options: Sequence[str] = ()) -> int:
    """Install the lock's pins with ``parts`` pips at once, each given ``options``; return the
    first non-zero exit."""
    text = lock.read_text()
    wanted, here = made_for(text), this_machine()
    if wanted != here:
        print(f"lockinstall: {lock.name} was made for {wanted}, this is {here}: one pip instead")
        return 0
    with tempfile.TemporaryDirectory() as tmp:
        running = []
        for i, group in enumerate(split(pins(text), parts)):
            listed = Path(tmp) / f"part-{i}.txt"
            listed.write_text("\n".join(group) + "\n")
            command = [sys.executable, "-m", "pip", "install", "-q", *options, "--no-deps"]
            command += ["-r", listed]
            running.append(subprocess.Popen(command))
        codes = [pip.wait() for pip in running]
    return next((code for code in codes if code), 0)


def main(argv: list[str]) -> int:
    if not argv or argv[0].startswith("-"):
        print(__doc__.strip().split("Usage: ")[-1], file=sys.stderr)
        return 2
    code = install(Path(argv[0]), options=argv[1:])
    if code:
        print(f"lockinstall: a pip exited {code}; the full install below goes on", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
