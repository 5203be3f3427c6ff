"""HTTP servers a notebook starts: on a free 127.0.0.1 port, ready before use, always stopped.

Also the checkers of chapter 12's exercises (deployment).
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from helpers.processes import free_port, stop
from helpers.tether import tethered

PORT = "{port}"


@dataclass
class Server:
    """A running server: its base URL, its process, and how long it took to answer."""

    url: str
    process: subprocess.Popen
    startup_s: float
    log: Path

    def output(self) -> str:
        """Return what the server printed so far (stdout and stderr together)."""
        return self.log.read_bytes().decode(errors="replace")  # a reader of its own: any OS


def answers(url: str, timeout: float = 1.0) -> int | None:
    """Return the HTTP status of ``GET url``, or ``None`` when nothing answers there.

    >>> answers("http://127.0.0.1:9/")  # port 9: nothing listens

    """
    try:
        with urllib.request.urlopen(url, timeout=timeout) as response:  # local server only
            return response.status
    except urllib.error.HTTPError as error:  # it answered, with 4xx or 5xx
        return error.code
    except (urllib.error.URLError, ConnectionError, TimeoutError):
        return None


@contextmanager
def serve(
    command: Sequence[str], *, ready: str = "/", timeout: float = 30.0, name: str = "the server"
) -> Iterator[Server]:
    """Run a server ``command`` for a ``with`` block; yield a :class:`Server`.

    Every ``{port}`` in ``command`` is replaced by a free port on 127.0.0.1 (the command must
    bind to 127.0.0.1 itself). Waits until ``GET url + ready`` answers 200: raises
    ``RuntimeError`` with the server's last output if the process exits first, and
    ``TimeoutError`` after ``timeout`` seconds. On exit, also when the block raises, stops the
    process and everything it started (:func:`helpers.processes.stop`). The server runs under
    :mod:`helpers.tether`, so it also stops when this process dies (a killed notebook kernel).

    >>> with serve([sys.executable, "-m", "http.server", "-b", "127.0.0.1", "{port}"]) as s:
    ...     answers(s.url)  # doctest: +SKIP
    200
    """
    command = [str(part) for part in command]
    if not any(PORT in part for part in command):
        raise ValueError(f"the command needs a {PORT} placeholder for the port: {command}")
    if timeout <= 0:
        raise ValueError("timeout must be positive")
    if not ready.startswith("/"):
        raise ValueError(f"ready is a path starting with '/', got {ready!r}")
    port = free_port()
    fd, name_of_log = tempfile.mkstemp(prefix="cookbook-server-", suffix=".log")
    log = Path(name_of_log)
    try:
        with os.fdopen(fd, "wb") as sink:
            began = time.monotonic()
            process = subprocess.Popen(
                tethered([part.replace(PORT, str(port)) for part in command]),
                stdin=subprocess.DEVNULL,
                stdout=sink,
                stderr=subprocess.STDOUT,
                start_new_session=True,  # POSIX: its own process group, so stop() ends all of it
            )
            server = Server(f"http://127.0.0.1:{port}", process, float("nan"), log)
            try:
                _wait_until_ready(server, ready, timeout, began, name)
                yield server
            finally:
                stop(process)
    finally:
        with contextlib.suppress(OSError):  # Windows: still open elsewhere; never hide an error
            log.unlink()


def _wait_until_ready(server: Server, ready: str, timeout: float, began: float, name: str) -> None:
    """Poll ``GET url + ready`` until it answers 200; set ``server.startup_s``."""
    status = None
    while status != 200:
        if server.process.poll() is not None:
            raise RuntimeError(
                f"{name} exited with {server.process.returncode}: {server.output()[-2000:]}"
            )
        if time.monotonic() - began > timeout:
            raise TimeoutError(
                f"{name} did not answer 200 at {ready} within {timeout} s "
                f"(last status: {status}): {server.output()[-2000:]}"
            )
        status = answers(server.url + ready)
        if status != 200:
            time.sleep(0.05)
    server.startup_s = time.monotonic() - began


# Chapter 12's exercise checks: each returns what is wrong with an answer (one helpful line) or
# None, as helpers.exercises.report expects; they never raise at the learner.


def image_reader_problem(read_image: Callable[[bytes, str], Any]) -> str | None:
    """Chapter 12, exercise 1: what is wrong with ``read_image(body, content_type)``, or
    ``None`` when it returns a ``uint8`` array ``(3, 32, 32)`` (RGB, channels first) for a 32×32
    PNG or JPEG and raises ``fastapi.HTTPException`` 415 for another content type and 400 for an
    empty body or bytes that are not an image. For ``helpers.exercises.report``.

    >>> image_reader_problem(lambda body, content_type: None)
    'a 32×32 PNG as image/png should give an array, got None'
    """
    if not callable(read_image):
        return f"read_image should be a function, got {type(read_image).__name__}"
    import io

    import numpy as np
    from fastapi import HTTPException
    from PIL import Image

    pixels = np.random.default_rng(0).integers(0, 256, (32, 32, 3), dtype=np.uint8)
    pixels[:16] = (200, 40, 90)  # a flat band: JPEG keeps its top rows within a level or two
    encoded = {}
    for kind in ("png", "jpeg"):
        buffer = io.BytesIO()
        Image.fromarray(pixels).save(buffer, format=kind.upper(), quality=95)
        encoded[kind] = buffer.getvalue()

    def call(body: bytes, content_type: str) -> object:
        try:
            return read_image(body, content_type)
        except HTTPException as error:
            return error.status_code
        except Exception as error:  # the learner's bug: report it, do not raise
            return f"{type(error).__name__}: {error}"

    for kind, body in encoded.items():
        got = call(body, f"image/{kind}")
        name = kind.upper()
        if not isinstance(got, np.ndarray):
            return f"a 32×32 {name} as image/{kind} should give an array, got {got!r}"
        if got.dtype != np.uint8 or got.shape != (3, 32, 32):
            return f"a {name} should give uint8 (3, 32, 32), got {got.dtype} {got.shape}"
        flat = got[:, :8].astype(int) - np.array([200, 40, 90]).reshape(3, 1, 1)
        if np.abs(flat).max() > 4:  # PNG is exact, JPEG within a level or two here
            return f"the {name} pixels are wrong: are they RGB, and channels first?"
    for body, content_type, expected in [
        (encoded["png"], "text/plain", 415),
        (b"not an image", "image/jpeg", 400),
        (b"", "image/png", 400),
    ]:
        got = call(body, content_type)
        if isinstance(got, np.ndarray) or got != expected:
            shown = "an array" if isinstance(got, np.ndarray) else repr(got)
            return (
                f"{body[:12]!r} as {content_type} should raise HTTPException({expected}), "
                f"got {shown}"
            )
    return None


def batch_bounds_problem(
    program: Any, low: int = 1, high: int = 64, model: Any = None
) -> str | None:
    """Chapter 12, exercise 2: what is wrong with ``program``, or ``None`` when it is a
    ``torch.export.ExportedProgram`` of the CIFAR2 CNN that runs batches of ``low`` to ``high``
    uint8 images and refuses ``high + 1``; given ``model`` (in evaluation mode), it must also
    give that model's logits on a batch of random images, so an export of another model (an
    untrained one) is refused. For ``helpers.exercises.report``.

    >>> batch_bounds_problem(None)
    'expected an ExportedProgram from torch.export.export, got NoneType'
    """
    import torch

    if not isinstance(program, torch.export.ExportedProgram):
        kind = type(program).__name__
        return f"expected an ExportedProgram from torch.export.export, got {kind}"
    run = program.module()
    for n in (low, high):
        try:
            logits = run(torch.zeros(n, 3, 32, 32, dtype=torch.uint8))
        except Exception as error:
            first = (str(error).strip() or "?").splitlines()[0]
            return f"a batch of {n} should run, but: {type(error).__name__}: {first}"
        if tuple(logits.shape) != (n, 2):
            return f"a batch of {n} gave logits of shape {tuple(logits.shape)}"
    if model is not None:
        generator = torch.Generator().manual_seed(0)
        images = torch.randint(0, 256, (high, 3, 32, 32), dtype=torch.uint8, generator=generator)
        with torch.inference_mode():
            got, expected = run(images), model(images)
        if not torch.allclose(got, expected, rtol=1e-4, atol=1e-4):
            largest = (got - expected).abs().max().item()
            return (
                f"the program's logits differ from the model's (by up to {largest:.3g}): "
                "export the trained model, in evaluation mode"
            )
    try:
        run(torch.zeros(high + 1, 3, 32, 32, dtype=torch.uint8))
    except Exception:
        return None
    return f"a batch of {high + 1} ran: the batch dimension needs an upper bound of {high}"
