"""helpers.doctor: the pre-flight check says what is missing and exits non-zero then."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from helpers import data, doctor

ROOT = Path(__file__).resolve().parents[1]


def test_the_lock_is_read_with_its_python():
    pins = doctor.read_lock()
    assert pins["torch"].startswith("2.") and "jupyterlab" in pins
    assert doctor.lock_python() == "3.11"
    assert doctor.read_lock(Path("no-such-lock.txt")) == {}


def test_another_python_or_package_version_is_a_warning_not_a_failure(tmp_path):
    lock = tmp_path / "lock.txt"
    lock.write_text("# Made by 'make lock' with Python 2.7.18 on Linux\ntorch==0.0.1\n")
    python = doctor.check_python(lock)
    assert python.mark == "!" and "Python 2.7" in python.text and "LOCK=" in python.fix
    (torch,) = doctor.check_packages(("torch",), lock)
    assert torch.mark == "!" and "tested with 0.0.1" in torch.text


def test_a_missing_package_is_a_failure_with_the_fix():
    (finding,) = doctor.check_packages(("no-such-package-xyz",))
    assert finding.mark == "✗" and "make" in finding.fix


def test_absent_data_without_a_mirror_names_the_download(tmp_path):
    finding = doctor.check_dataset("cifar2", root=tmp_path, mirror="")
    assert finding.mark == "✗" and "not fetched" in finding.text
    assert data.DATASETS["cifar2"].url in finding.fix and data.MIRROR_ENV in finding.fix


def test_a_mirror_set_to_a_wrong_folder_is_named(tmp_path):
    finding = doctor.check_dataset("imdb", root=tmp_path, mirror=str(tmp_path / "usb"))
    assert finding.mark == "✗" and "the mirror cannot provide it" in finding.text
    assert "usb is not a folder" in finding.fix


def test_a_corrupt_mirror_archive_is_caught(tmp_path):
    (tmp_path / data.DATASETS["cifar2"].mirror_file).write_bytes(b"not the archive")
    finding = doctor.check_dataset("cifar2", root=tmp_path / "data", mirror=str(tmp_path))
    assert finding.mark == "✗" and "sha256 is" in finding.fix


def test_fetched_data_is_complete():
    data.fetch("cifar2")
    assert doctor.check_dataset("cifar2").mark == "✓"


def test_too_little_disk_is_a_failure(tmp_path):
    assert doctor.check_disk(tmp_path, need_gb=1e9).mark == "✗"
    assert doctor.check_disk(tmp_path, need_gb=0).mark == "✓"


def test_jupyterlab_starts_and_is_stopped():
    finding = doctor.check_jupyterlab()
    assert finding.mark == "✓", finding.line()


def test_the_command_exits_1_and_says_what_to_do(tmp_path):
    env = {
        **os.environ,
        data.DATA_DIR_ENV: str(tmp_path / "data"),
        data.MIRROR_ENV: str(tmp_path / "wrong"),
    }
    result = subprocess.run(
        [sys.executable, "-m", "helpers.doctor", "--no-lab"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 1, result.stdout + result.stderr
    assert "✓ torch " in result.stdout and "devices:" in result.stdout
    assert result.stdout.count("the mirror cannot provide it") == 2
    assert result.stdout.rstrip().endswith("2 problems: fix the ✗ lines above, then run this again")


@pytest.mark.skipif(not os.environ.get(data.MIRROR_ENV), reason="needs the data mirror")
def test_the_command_passes_on_a_ready_machine():
    for name in data.DATASETS:
        data.fetch(name)
    result = subprocess.run(
        [sys.executable, "-m", "helpers.doctor", "--no-lab"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stdout
    assert result.stdout.rstrip().endswith("ready for the workshop")
