"""`make setup` installs the lock with two pips side by side (helpers/authoring/lockinstall.py)."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import ClassVar

import pytest

from helpers.authoring import course, lockinstall

LOCK = course.ROOT / "requirements-lock.txt"


def test_the_two_parts_hold_every_pin_once_and_weigh_about_the_same():
    pinned = lockinstall.pins(LOCK.read_text())
    assert len(pinned) > 150 and all("==" in line for line in pinned)
    parts = lockinstall.split(pinned)
    assert sorted(parts[0] + parts[1]) == sorted(pinned)
    weights = [sum(lockinstall.WEIGHTS.get(p.split("==")[0], 1) for p in part) for part in parts]
    assert abs(weights[0] - weights[1]) <= max(lockinstall.WEIGHTS.values()), weights
    heaviest = {p.split("==")[0] for p in parts[0][:1] + parts[1][:1]}
    assert heaviest == {"torch", "triton"}, heaviest


def test_the_lock_s_header_names_the_python_and_platform_it_was_made_on():
    python, system, machine = lockinstall.made_for(LOCK.read_text())
    assert (system, machine) == ("Linux", "x86_64")
    assert python.startswith("3.") and int(python.split(".")[1]) >= 11
    assert lockinstall.made_for("numpy==2.0\n") is None


class FakePip:
    """Stands in for subprocess.Popen: records each command and the list it installs."""

    calls: ClassVar[list[tuple[list[str], list[str]]]] = []
    code = 0

    def __init__(self, command):
        listed = Path(command[command.index("-r") + 1]).read_text().split()
        FakePip.calls.append(([str(c) for c in command], listed))

    def wait(self) -> int:
        return FakePip.code


@pytest.fixture
def fake_pip(monkeypatch):
    FakePip.calls, FakePip.code = [], 0
    monkeypatch.setattr(subprocess, "Popen", FakePip)
    monkeypatch.setattr(lockinstall, "this_machine", lambda: ("3.11", "Linux", "x86_64"))
    return FakePip


def lock_file(tmp_path: Path, made_on: str) -> Path:
    lock = tmp_path / "lock.txt"
    header = f"# Made by 'make lock' with Python {made_on}; do not edit by hand.\n"
    lock.write_text(
        header + "torch==2.15.0\ntriton==3.9.0\nnumpy==2.4.6\n# a note\n\nsix==1.17.0\n"
    )
    return lock


def test_each_part_goes_to_its_own_pip_without_dependencies(tmp_path, fake_pip):
    assert lockinstall.install(lock_file(tmp_path, "3.11.7 on Linux x86_64")) == 0
    assert len(fake_pip.calls) == 2
    assert all("--no-deps" in command for command, _ in fake_pip.calls)
    installed = sorted(name for _, listed in fake_pip.calls for name in listed)
    assert installed == ["numpy==2.4.6", "six==1.17.0", "torch==2.15.0", "triton==3.9.0"]


def test_a_lock_for_another_platform_is_left_to_the_plain_install(tmp_path, fake_pip, capsys):
    assert lockinstall.install(lock_file(tmp_path, "3.11.7 on Darwin arm64")) == 0
    assert fake_pip.calls == []
    assert "one pip instead" in capsys.readouterr().out


def test_a_failing_pip_does_not_stop_the_setup(tmp_path, fake_pip, capsys):
    fake_pip.code = 1
    assert lockinstall.main([str(lock_file(tmp_path, "3.11.7 on Linux x86_64"))]) == 0
    assert "the full install below goes on" in capsys.readouterr().err
    assert lockinstall.main([]) == 2
    assert lockinstall.main(["--no-compile"]) == 2  # an option where the lock should be


def test_options_after_the_lock_go_to_both_pips(tmp_path, fake_pip):
    lock = lock_file(tmp_path, "3.11.7 on Linux x86_64")
    assert lockinstall.main([str(lock), "--no-compile"]) == 0
    assert len(fake_pip.calls) == 2
    assert all("--no-compile" in command for command, _ in fake_pip.calls)
