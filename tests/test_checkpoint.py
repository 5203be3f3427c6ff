"""helpers.checkpoint: atomic, durable saves with ordinary permissions."""

from __future__ import annotations

import os
import stat

import pytest
import torch

from helpers.checkpoint import atomic_save


def test_atomic_save_writes_loads_and_leaves_no_temporary_file(tmp_path):
    path = atomic_save({"w": torch.arange(3)}, tmp_path / "sub" / "ckpt.pt")
    assert torch.equal(torch.load(path, weights_only=True)["w"], torch.arange(3))
    assert [p.name for p in path.parent.iterdir()] == ["ckpt.pt"]


def test_a_failed_save_keeps_the_previous_file(tmp_path):
    path = atomic_save({"epoch": 1}, tmp_path / "ckpt.pt")
    with pytest.raises(Exception):  # noqa: B017 - pickling a lambda fails with varying types
        atomic_save({"epoch": 2, "callback": lambda: None}, path)
    assert torch.load(path, weights_only=True) == {"epoch": 1}
    assert [p.name for p in tmp_path.iterdir()] == ["ckpt.pt"]


def test_saved_files_get_the_usual_permissions_and_are_fsynced(tmp_path, monkeypatch):
    synced = []
    real_fsync = os.fsync
    monkeypatch.setattr(os, "fsync", lambda fd: synced.append(fd) or real_fsync(fd))
    old = os.umask(0o022)
    try:
        path = atomic_save({"a": 1}, tmp_path / "ckpt.pt")
    finally:
        os.umask(old)
    assert stat.S_IMODE(path.stat().st_mode) == 0o644, "not mkstemp's 0600"
    assert len(synced) == 2, "the file, then the folder holding the rename"


@pytest.mark.skipif(os.name == "nt", reason="POSIX permission bits")
def test_atomic_save_gives_new_file_permissions_without_touching_the_umask(tmp_path):
    previous = os.umask(0o027)
    try:
        path = atomic_save({"a": 1}, tmp_path / "x.pt")
        assert stat.S_IMODE(path.stat().st_mode) == 0o640
        assert os.umask(0o027) == 0o027  # still the caller's umask
    finally:
        os.umask(previous)
    assert [p.name for p in tmp_path.iterdir()] == ["x.pt"]
