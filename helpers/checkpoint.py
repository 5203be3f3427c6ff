"""Saving checkpoints and caches so that a crash never costs the previous file."""

from __future__ import annotations

import os
import secrets
from pathlib import Path


def _new_temporary(folder: Path, name: str) -> tuple[int, str]:
    """Create a new file next to ``name`` with ``O_EXCL`` and mode ``0o666``: the kernel applies
    the umask itself, so nothing changes the process-wide umask (which another thread could
    observe). Return its descriptor and path."""
    for _ in range(100):
        tmp = os.path.join(folder, f".{name}-{secrets.token_hex(4)}")
        try:
            return os.open(
                tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0), 0o666
            ), tmp
        except FileExistsError:
            continue
    raise FileExistsError(f"no free temporary name for {name} in {folder}")


def atomic_save(obj: object, path: Path | str) -> Path:
    """Write ``obj`` with ``torch.save`` atomically: ``path`` holds the old file or the new one,
    never half of either, even after a crash or a power loss; return ``path``.

    It writes a temporary file in the same folder, flushes it to the disk (``fsync``), gives it
    the permissions a new file normally gets (created with ``0o666``, which the kernel reduces by
    the umask, where ``mkstemp`` would leave ``0o600``), renames it over ``path``
    (``os.replace``, atomic on one file system) and flushes the folder so the rename itself is
    on disk. A failure leaves no temporary file.
    """
    import torch

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = _new_temporary(path.parent, path.name)
    try:
        with os.fdopen(fd, "wb") as f:
            torch.save(obj, f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
    _fsync_folder(path.parent)
    return path


def _fsync_folder(folder: Path) -> None:
    """Flush a folder's entries (the rename) to disk, where the OS allows opening folders."""
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:  # Windows cannot open a folder; its rename is durable enough there
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)
