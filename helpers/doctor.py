"""A pre-flight check of a machine before a workshop: ``python -m helpers.doctor``.

Prints one line per thing a session needs (Python, package versions against the lock, devices,
data sets, free disk, whether JupyterLab starts), each marked ✓, ! (works, but differs from
what the course was tested with) or ✗ (must be fixed, with what to do). Exits 1 when any line
is ✗, else 0.
"""

from __future__ import annotations

import argparse
import os
import platform
import re
import shutil
import sys
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

from helpers import data
from helpers.serve import serve

ROOT = Path(__file__).resolve().parents[1]
LOCK = ROOT / "requirements-lock.txt"
KEY_PACKAGES = ("torch", "torchvision", "numpy", "jupyterlab")
MIN_FREE_GB = 2.0  # the two data sets extracted take about 0.6 GB; leave room for runs/


@dataclass(frozen=True)
class Finding:
    """One line of the report: ``mark`` is ✓, ! or ✗; ``fix`` says what to do when not ✓."""

    mark: str
    text: str
    fix: str = ""

    def line(self) -> str:
        return f"{self.mark} {self.text}" + (f"\n    → {self.fix}" if self.fix else "")


def _canonical(name: str) -> str:
    return name.lower().replace("_", "-")


def read_lock(path: Path = LOCK) -> dict[str, str]:
    """Return ``{package: version}`` from a pip constraints file (``{}`` when it is absent)."""
    if not path.is_file():
        return {}
    pins = {}
    for line in path.read_text().splitlines():
        if "==" in line and not line.startswith("#"):
            name, version = line.split("==", 1)
            pins[_canonical(name.strip())] = version.strip()
    return pins


def lock_python(path: Path = LOCK) -> str | None:
    """Return the ``major.minor`` Python the lock was made with (its header says), or None."""
    if not path.is_file():
        return None
    found = re.search(r"with Python (\d+\.\d+)", path.read_text())
    return found.group(1) if found else None


def check_python(lock: Path = LOCK) -> Finding:
    """The course needs Python 3.10+; the lock's wheels are for the Python it was made with."""
    version = platform.python_version()
    tested = lock_python(lock)
    if tested and not version.startswith(f"{tested}."):
        return Finding(
            "!",
            f"Python {version}, the lock was made with Python {tested}",
            f"if `make setup` finds no wheels, use Python {tested} or `make lab LOCK=`",
        )
    return Finding("✓", f"Python {version} ({sys.executable})")


def installed_version(name: str) -> str | None:
    """Return the installed version of distribution ``name``, or None."""
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return None


def check_packages(names: tuple[str, ...] = KEY_PACKAGES, lock: Path = LOCK) -> list[Finding]:
    """One finding per package: missing (✗), as in the lock (✓), or another version (!)."""
    pins = read_lock(lock)
    findings = []
    for name in names:
        version = installed_version(name)
        pinned = pins.get(_canonical(name))
        if version is None:
            findings.append(
                Finding("✗", f"{name} is not installed", "run `make lab` or `make setup`")
            )
        elif pinned and version.split("+")[0] != pinned.split("+")[0]:
            findings.append(
                Finding(
                    "!",
                    f"{name} {version}, the course was tested with {pinned}",
                    "fine for learning; stored outputs may differ slightly "
                    "(`make setup` installs the tested versions)",
                )
            )
        else:
            findings.append(
                Finding("✓", f"{name} {version}" + (" (as in the lock)" if pinned else ""))
            )
    return findings


def check_devices() -> Finding:
    """Which accelerators torch sees; the course runs on any of them, CPU included."""
    import torch

    cores = os.cpu_count() or 1
    if torch.cuda.is_available():
        parts = []
        for i in range(torch.cuda.device_count()):
            props = torch.cuda.get_device_properties(i)
            parts.append(f"{props.name} ({props.total_memory / 2**30:.0f} GiB)")
        return Finding("✓", f"devices: CUDA {', '.join(parts)}; CPU with {cores} cores")
    if torch.backends.mps.is_available():
        return Finding("✓", f"devices: Apple MPS; CPU with {cores} cores")
    return Finding(
        "✓", f"devices: CPU only, {cores} cores (every notebook runs; GPU recipes explain)"
    )


def check_dataset(name: str, root: Path | None = None, mirror: str | None = None) -> Finding:
    """Is data set ``name`` fetched and complete? If not, where would `make data` get it?"""
    spec = data.DATASETS[name]
    root = root if root is not None else data.data_dir()
    folder = root / spec.folder
    if data.is_complete(spec, folder):
        return Finding("✓", f"data {name}: complete in {folder}")
    state = "damaged" if folder.exists() else "not fetched"
    mirror = mirror if mirror is not None else os.environ.get(data.MIRROR_ENV, "")
    if not mirror:
        return Finding(
            "✗",
            f"data {name}: {state} in {root}",
            f"run `make data` with a network connection (downloads {spec.url}), or set "
            f"{data.MIRROR_ENV} to a folder holding {spec.mirror_file} (e.g. a USB stick)",
        )
    try:
        archive, _ = data.mirror_archive(spec, Path(mirror).expanduser())
    except data.DataError as err:
        return Finding("✗", f"data {name}: {state}, and the mirror cannot provide it", str(err))
    return Finding(
        "✗", f"data {name}: {state} in {root}", f"run `make data` (extracts it from {archive})"
    )


def check_disk(folder: Path | None = None, need_gb: float = MIN_FREE_GB) -> Finding:
    """Enough free space where the data and the runs go."""
    folder = folder if folder is not None else data.data_dir()
    probe = folder if folder.exists() else folder.parent
    free = shutil.disk_usage(probe).free / 2**30
    if free < need_gb:
        return Finding("✗", f"disk: {free:.1f} GB free in {probe}", f"free at least {need_gb} GB")
    return Finding("✓", f"disk: {free:.1f} GB free in {probe}")


def check_jupyterlab(timeout: float = 60.0) -> Finding:
    """Start JupyterLab on a free 127.0.0.1 port, wait until its API answers, stop it."""
    if installed_version("jupyterlab") is None:
        return Finding("✗", "JupyterLab is not installed", "run `make lab`")
    command = [sys.executable, *("-m", "jupyter", "lab", "--no-browser")]
    command += ["--ServerApp.ip=127.0.0.1", "--ServerApp.port={port}", "--ServerApp.port_retries=0"]
    command += ["--IdentityProvider.token=", f"--ServerApp.root_dir={ROOT / 'notebooks'}"]
    if hasattr(os, "getuid") and os.getuid() == 0:
        command.append("--ServerApp.allow_root=True")
    try:
        with serve(command, ready="/api/status", timeout=timeout, name="JupyterLab") as lab:
            seconds = lab.startup_s
    except (RuntimeError, TimeoutError) as err:
        return Finding("✗", "JupyterLab does not start", f"{str(err)[:300]} · try `make lab`")
    return Finding("✓", f"JupyterLab starts (answered in {seconds:.1f} s, then stopped)")


def run(*, lab: bool = True) -> list[Finding]:
    """Every check, in the order the report prints them."""
    findings = [check_python(), *check_packages(), check_devices()]
    findings += [check_dataset(name) for name in data.DATASETS]
    findings.append(check_disk())
    if lab:
        findings.append(check_jupyterlab())
    return findings


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m helpers.doctor", description=__doc__.split("\n")[0]
    )
    parser.add_argument("--no-lab", action="store_true", help="skip starting JupyterLab")
    args = parser.parse_args(argv)
    findings = run(lab=not args.no_lab)
    for finding in findings:
        print(finding.line())
    problems = sum(f.mark == "✗" for f in findings)
    if problems:
        plural = "s" if problems > 1 else ""
        print(f"{problems} problem{plural}: fix the ✗ lines above, then run this again")
        return 1
    print("ready for the workshop")
    return 0


if __name__ == "__main__":
    sys.exit(main())
