"""Colab runs a newer Python than the lock's 3.11: the loose requirements and the package with
its `notebooks` extra must resolve to wheels there. pip resolves for another Python without
installing it (`--python-version`, `--only-binary=:all:`, `--dry-run`). The registry serves no
PEP 658 metadata, so pip reads each remote wheel's metadata from the wheel itself, by HTTP range
requests (`--use-feature=fast-deps`) rather than downloading it whole (3 GB for torch's CUDA
wheels): 12 CPU-seconds instead of 20-26, most of the rest reading the registry's index pages.
Every run checks Colab's Python, 3.12; `make drift`, weekly, adds the next one, 3.13, through
COOKBOOK_NEWER_PYTHONS (versions side by side cost one resolution's time)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from importlib.metadata import requires

import pytest

from helpers.authoring import course

PYTHONS = os.environ.get("COOKBOOK_NEWER_PYTHONS", "3.12").split()
# Linux x86-64 as Colab has it (glibc 2.35): every manylinux tag it accepts.
PLATFORMS = [f"manylinux_2_{minor}_x86_64" for minor in range(35, 16, -1)]
PLATFORMS.append("manylinux2014_x86_64")
OFFLINE = ("NewConnectionError", "Temporary failure in name resolution", "Network is unreachable")
WANTED = ("torch", "torchvision", "numpy", "onnxruntime", "torchao")


def requirements() -> list[str]:
    """requirements.txt, and the package's own dependencies with its `notebooks` extra."""
    listed = (course.ROOT / "requirements.txt").read_text().splitlines()
    listed = [line.strip() for line in listed if line.strip() and not line.startswith("#")]
    package = [r.split(";")[0].strip() for r in requires("pytorch-cookbook") or []]
    assert any("onnxruntime" in r for r in package), "the notebooks extra is in the metadata"
    return listed + package


def resolve(python: str, tmp_path) -> subprocess.Popen:
    """Start pip resolving the course's requirements for ``python`` on Linux x86-64."""
    wanted = tmp_path / f"requirements-{python}.txt"
    wanted.write_text("\n".join(requirements()) + "\n")
    platforms = [arg for tag in PLATFORMS for arg in ("--platform", tag)]
    command = [sys.executable, "-m", "pip", "install", "--dry-run", "--ignore-installed", "-q"]
    command += ["--use-feature=fast-deps"]  # a range request for each wheel's metadata
    command += ["--only-binary=:all:", "--python-version", python, "--implementation", "cp"]
    command += [*platforms, "--target", str(tmp_path / f"target-{python}")]
    command += ["--report", str(tmp_path / f"report-{python}.json"), "-r", str(wanted)]
    return subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def test_requirements_and_the_notebooks_extra_resolve_on_newer_pythons(tmp_path):
    running = {python: resolve(python, tmp_path) for python in PYTHONS}
    for python, pip in running.items():
        _, stderr = pip.communicate(timeout=600)
        errors = "\n".join(line for line in stderr.splitlines() if "ERROR" in line)
        if pip.returncode and any(sign in stderr for sign in OFFLINE):
            pytest.skip(f"PyPI cannot be reached: {errors[:200]}")
        assert pip.returncode == 0, f"Python {python}: {errors or stderr[-2000:]}"
        report = json.loads((tmp_path / f"report-{python}.json").read_text())
        found = {i["metadata"]["name"].lower(): i for i in report["install"]}
        tag = f"cp{python.replace('.', '')}"
        for name in WANTED:
            wheel = found[name]["download_info"]["url"].rsplit("/", 1)[-1]
            assert wheel.endswith(".whl") and (tag in wheel or "abi3" in wheel or "py3" in wheel), (
                f"Python {python}: {name} resolves to {wheel}"
            )
