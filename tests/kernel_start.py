"""Start each notebook's kernel with its error output kept, and once more if it dies at start.

nbval starts a notebook's kernel with the kernel's stderr sent to /dev/null. In a fresh clone's
first seconds on a new machine, one kernel died before it answered (every cell of its notebook
then errored) and nothing said why; the same run's other 28 kernels started. This keeps what a
kernel writes to stderr, shows it in a warning when the kernel dies before it is ready, and
starts the kernel once more: a kernel that dies every time still fails the notebook.
"""

from __future__ import annotations

import tempfile
import warnings
from collections.abc import Callable
from typing import Any

TRIES = 2


def keep_stderr_and_retry(start: Callable[..., Any]) -> Callable[..., Any]:
    """Wrap nbval's ``start_new_kernel`` (which raises RuntimeError when the kernel dies)."""

    def started(*args: Any, **kwargs: Any) -> Any:
        kwargs.pop("stderr", None)
        for attempt in range(1, TRIES + 1):
            # open for the kernel's lifetime when it starts: no context manager
            log = tempfile.TemporaryFile(mode="w+", prefix="cookbook-kernel-")  # noqa: SIM115
            try:
                return start(*args, stderr=log, **kwargs)
            except RuntimeError as error:
                log.seek(0)
                said = log.read()[-3000:].strip() or "(nothing on stderr)"
                log.close()
                warnings.warn(
                    f"a notebook's kernel died at start (try {attempt} of {TRIES}): {error}\n"
                    f"its stderr:\n{said}",
                    stacklevel=2,
                )
                if attempt == TRIES:
                    raise
        raise AssertionError("unreachable")

    return started


def install() -> None:
    """Patch nbval so that every notebook kernel starts through :func:`keep_stderr_and_retry`."""
    import nbval.kernel

    if not getattr(nbval.kernel.start_new_kernel, "_cookbook", False):
        wrapped = keep_stderr_and_retry(nbval.kernel.start_new_kernel)
        wrapped._cookbook = True  # type: ignore[attr-defined]
        nbval.kernel.start_new_kernel = wrapped
