"""Saving checkpoints and caches so that a crash never costs the previous file."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def atomic_save(obj: object, path: Path | str) -> Path:
    """Write ``obj`` with ``torch.save`` atomically: ``path`` holds the old file or the new one,
    never half of either, even after a crash or a power loss; return ``path``.

    It writes a temporary file in the same folder, flushes it to the disk (``fsync``), gives it
    the permissions a new file normally gets (``0o666`` minus the umask, where ``mkstemp`` would
    leave ``0o600``), renames it over ``path`` (``os.replace``, atomic on one file system) and
    flushes the folder so the rename itself is on disk. A failure leaves no temporary file.
    """
    import torch

    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}-", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            torch.save(obj, f)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, 0o666 & ~_umask())
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
