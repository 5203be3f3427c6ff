"""helpers.serve: a server process on a free local port that answers before use and always
stops; chapter 12's inference server, run exactly as the notebook writes it; the exercise
checkers, on right and wrong answers."""

from __future__ import annotations

import contextlib
import io
import os
import signal
import socket
import struct
import subprocess
import sys
import time
import zlib
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path

import httpx
import numpy as np
import pytest
import torch
from fastapi import HTTPException
from PIL import Image

from helpers import exercises
from helpers.authoring import course
from helpers.models import small_cnn
from helpers.processes import free_port, leftovers, stop
from helpers.serve import Server, answers, batch_bounds_problem, image_reader_problem, serve

ECHO = """
import http.server, sys, time

time.sleep(float(sys.argv[2]))  # a slow start, as loading a model is


class Handler(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        if self.path != "/health":
            return self.send_error(404, "no such path")
        self.send_response(200)
        self.end_headers()
        self.wfile.write(b"ok")

    def do_POST(self):  # doubles a number; anything else is bad input
        body = self.rfile.read(int(self.headers.get("content-length") or 0))
        if not body.isdigit():
            return self.send_error(400, "send digits")
        self.send_response(200)
        self.end_headers()
        self.wfile.write(str(2 * int(body)).encode())

    def log_message(self, *args):
        pass


print("listening", flush=True)
http.server.HTTPServer(("127.0.0.1", int(sys.argv[1])), Handler).serve_forever()
"""


def script(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def gone(path: Path) -> bool:
    """No process started from ``path`` is left."""
    return leftovers(path) == []


def test_a_server_starts_answers_refuses_bad_input_and_stops(tmp_path):
    echo = script(tmp_path, "echo.py", ECHO)
    with serve([sys.executable, echo, "{port}", "0"], ready="/health") as server:
        assert server.url.startswith("http://127.0.0.1:")
        assert answers(server.url + "/health") == 200
        assert answers(server.url + "/elsewhere") == 404
        assert httpx.post(server.url, content=b"21").text == "42"
        assert httpx.post(server.url, content=b"twenty-one").status_code == 400
        assert httpx.post(server.url, content=b"5").text == "10"  # still serving
        assert "listening" in server.output()
        assert len(leftovers(echo)) == 2  # the server and its watcher (helpers.tether)
    assert server.process.poll() is not None and gone(echo)


def test_it_waits_for_a_slow_server_and_measures_the_start(tmp_path):
    echo = script(tmp_path, "echo.py", ECHO)
    with serve([sys.executable, echo, "{port}", "1.0"], ready="/health") as server:
        assert server.startup_s >= 1.0
        assert answers(server.url + "/health") == 200
    assert gone(echo)


def test_a_server_that_exits_is_a_clear_error(tmp_path):
    dies = script(tmp_path, "dies.py", "print('no model file'); raise SystemExit(3)\n")
    with (
        pytest.raises(RuntimeError, match=r"exited with 3: no model file"),
        serve([sys.executable, dies, "{port}"]),
    ):
        pass
    assert gone(dies)


def test_a_server_that_never_answers_times_out_and_is_stopped(tmp_path):
    silent = script(tmp_path, "silent.py", "import time; print('loading'); time.sleep(600)\n")
    with (
        pytest.raises(TimeoutError, match=r"within 1.0 s.*loading"),
        serve([sys.executable, silent, "{port}"], timeout=1.0),
    ):
        pass
    assert gone(silent)


@pytest.mark.parametrize(
    ("text", "options", "error", "message"),
    [
        ("raise SystemExit(3)\n", {}, RuntimeError, r"^TensorBoard exited with 3"),
        ("import time; time.sleep(600)\n", {"timeout": 0.5}, TimeoutError, r"^TensorBoard did not"),
    ],
)
def test_errors_name_the_server(tmp_path, text, options, error, message):
    named = script(tmp_path, "named.py", text)
    with (
        pytest.raises(error, match=message),
        serve([sys.executable, named, "{port}"], name="TensorBoard", **options),
    ):
        pass
    assert gone(named)


def test_a_server_is_stopped_when_the_block_raises(tmp_path):
    echo = script(tmp_path, "echo.py", ECHO)
    with (
        pytest.raises(ZeroDivisionError),
        serve([sys.executable, echo, "{port}", "0"], ready="/health") as server,
    ):
        raise ZeroDivisionError("a failing check inside the block")
    assert server.process.poll() is not None and gone(echo)


@pytest.mark.parametrize(
    ("command", "options", "message"),
    [
        (["python", "server.py", "--port", "8000"], {}, "placeholder"),
        (["python", "server.py", "{port}"], {"timeout": 0}, "timeout"),
        (["python", "server.py", "{port}"], {"ready": "health"}, "starting with '/'"),
    ],
)
def test_bad_arguments_are_refused_before_anything_starts(command, options, message):
    with pytest.raises(ValueError, match=message), serve(command, **options):
        pass


def test_answers_is_none_where_nothing_listens():
    assert answers(f"http://127.0.0.1:{free_port()}/", timeout=0.5) is None


# Chapter 12's inference server, exactly as the notebook writes it.

NOTEBOOK = course.COOKBOOK / "12_deployment_recipes.ipynb"


@pytest.fixture(scope="module")
def onnx_model(tmp_path_factory) -> tuple[Path, torch.nn.Module]:
    """An (untrained) CIFAR2 CNN exported to ONNX the way the notebook does it."""
    torch.manual_seed(0)
    model = small_cnn([0.5] * 3, [0.25] * 3).eval()
    example = torch.randint(0, 256, (4, 3, 32, 32), dtype=torch.uint8)
    program = torch.onnx.export(
        model,
        (example,),
        dynamo=True,
        dynamic_shapes=({0: torch.export.Dim("batch", min=1, max=64)},),
        input_names=["images"],
        output_names=["logits"],
        verbose=False,
    )
    program.model.metadata_props["classes"] = "cat,dog"
    path = tmp_path_factory.mktemp("onnx") / "model.onnx"
    program.save(path, external_data=False)
    return path, model


def png(pixels: np.ndarray) -> bytes:
    buffer = io.BytesIO()
    Image.fromarray(pixels).save(buffer, format="PNG")
    return buffer.getvalue()


def png16(value: int) -> bytes:
    buffer = io.BytesIO()
    Image.fromarray(np.full((32, 32), value, np.uint16)).save(buffer, format="PNG")
    return buffer.getvalue()


def chunk(kind: bytes, data: bytes) -> bytes:
    """One PNG chunk: length, type, data, CRC."""
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))


def png_of_depth(depth: int, color_type: int, before: bytes = b"") -> bytes:
    """A black 32×32 PNG encoded by hand with the bit depth and colour type given (PIL writes no
    16-bit colour): 0 grey, 2 RGB, 4 grey and alpha, 6 RGBA; ``before``: chunks put before its
    IHDR (Pillow reads such a file, and takes the last IHDR when there are two)."""
    channels = {0: 1, 2: 3, 4: 2, 6: 4}[color_type]
    row = bytes(1 + (32 * channels * depth + 7) // 8)  # a filter byte, then the packed samples
    pixels = chunk(b"IDAT", zlib.compress(row * 32))
    return b"\x89PNG\r\n\x1a\n" + before + ihdr(depth, color_type) + pixels + chunk(b"IEND", b"")


def ihdr(depth: int, color_type: int) -> bytes:
    return chunk(b"IHDR", struct.pack(">IIBBBBB", 32, 32, depth, color_type, 0, 0, 0))


IMAGE = np.random.default_rng(0).integers(0, 256, (32, 32, 3), dtype=np.uint8)


@pytest.fixture
def server_py(tmp_path) -> Path:
    """The notebook's server.py, exactly as the notebook writes it."""
    text = course.written_files(course.read(NOTEBOOK))["runs/12_deployment/server.py"]
    return script(tmp_path, "server.py", text)


@contextmanager
def notebook_server(server_py: Path, model_path: Path) -> Iterator[tuple[Server, httpx.Client]]:
    """Run the notebook's server; yield it and a client. Checks on exit that nothing is left."""
    command = [sys.executable, server_py, model_path, "--port", "{port}"]
    with (
        serve(command, ready="/health") as server,
        httpx.Client(base_url=server.url, timeout=10) as client,
    ):
        yield server, client
    assert gone(server_py)


def post(client: httpx.Client, body: bytes, content_type: str = "image/png") -> httpx.Response:
    return client.post("/predict", content=body, headers={"content-type": content_type})


def post_alone(url: str, body: bytes, content_type: str = "image/png") -> httpx.Response:
    """:func:`post` on a connection of its own. A server may close a connection whose refused
    body it did not read to the end (413); a client that kept that connection in its pool for
    the next request then meets "Connection reset by peer" (seen once in CI, beside a busy core)."""
    with httpx.Client(base_url=url, timeout=10) as alone:
        response = post(alone, body, content_type)
        response.read()
        return response


def still_serves(client: httpx.Client) -> bool:
    """A good request after a bad one is answered 200 with a class."""
    response = post(client, png(IMAGE))
    return response.status_code == 200 and response.json()["class"] in ("cat", "dog")


def raw(url: str, head: str, body: bytes = b"") -> socket.socket:
    """Open a connection to ``url`` and send a request's ``head`` lines and ``body``, as a
    client that misbehaves would; the caller reads the answer (:func:`status`) or closes it."""
    address = httpx.URL(url)
    connection = socket.create_connection((address.host, address.port), timeout=10)
    connection.sendall(f"{head}\r\nhost: localhost\r\n\r\n".encode() + body)
    return connection


def status(connection: socket.socket) -> int:
    """The status code of the answer on ``connection`` (b"HTTP/1.1 408 ..." → 408); closes it."""
    with connection:
        return int(connection.recv(1024).split()[1])


def test_the_notebook_s_server_answers_refuses_bad_input_and_stops(server_py, onnx_model):
    path, model = onnx_model
    expected = model(torch.from_numpy(IMAGE).permute(2, 0, 1)[None]).argmax().item()
    with notebook_server(server_py, path) as (server, client):
        health = client.get("/health").json()
        assert health == {"status": "ok", "classes": ["cat", "dog"], "torch": False}  # no version
        for page in ("/docs", "/redoc", "/openapi.json"):
            assert client.get(page).status_code == 404, page

        answer = post(client, png(IMAGE)).json()
        assert answer["index"] == expected and answer["class"] == ["cat", "dog"][expected]
        assert sum(answer["probabilities"]) == pytest.approx(1.0)
        for odd_case in ("Image/PNG", "IMAGE/png; charset=binary"):  # media types ignore case
            assert post(client, png(IMAGE), odd_case).json() == answer, odd_case
        wrong = {
            415: [(png(IMAGE), "text/plain"), (png(IMAGE), "image/jpeg"), (png(IMAGE), "")],
            400: [
                (b"", "image/png"),
                (b"GIF89a", "image/png"),
                (png(np.zeros((16, 32, 3), np.uint8)), "image/png"),
                (png(IMAGE)[:100], "image/png"),
                (png16(20000), "image/png"),  # 16 bits: convert("RGB") would make it white
                (png_of_depth(16, 2), "image/png"),  # 16-bit RGB, 16-bit grey and alpha, 1 bit
                (png_of_depth(16, 4), "image/png"),
                (png_of_depth(1, 0), "image/png"),
                # 16-bit grey in files that put another chunk first, or a second IHDR after
                (png_of_depth(16, 0, before=chunk(b"tEXt", b"comment\x00\x08")), "image/png"),
                (png_of_depth(16, 0, before=ihdr(8, 0)), "image/png"),
                (png_of_depth(16, 2, before=ihdr(8, 2)), "image/png"),  # Pillow reads the last
                (png_of_depth(4, 0, before=ihdr(8, 0)), "image/png"),
            ],
            413: [(bytes(200_000), "image/png")],
        }
        for code, requests in wrong.items():
            for body, content_type in requests:
                response = post_alone(server.url, body, content_type)
                assert response.status_code == code, (body[:10], content_type)
                assert response.json()["detail"]  # a message, not just a code
                assert still_serves(client)
        assert post(client, png_of_depth(8, 2)).status_code == 200  # the encoder is right
        for mode in ("L", "LA", "P", "RGBA"):  # 8-bit modes are converted to RGB
            buffer = io.BytesIO()
            Image.fromarray(IMAGE).convert(mode).save(buffer, format="PNG")
            assert post(client, buffer.getvalue()).status_code == 200, mode
        assert post(client, png(IMAGE)).json() == answer  # still serving, same answer
        assert "Traceback" not in server.output()


@pytest.mark.parametrize(
    ("head", "body"),
    [
        ("content-length: 1000", bytes(10)),  # 10 bytes of 1000, then nothing
        ("transfer-encoding: chunked", b"a\r\n" + bytes(10) + b"\r\n"),  # one chunk, no end
    ],
)
def test_a_body_that_stalls_gets_408_after_2_s(server_py, onnx_model, head, body):
    with notebook_server(server_py, onnx_model[0]) as (server, client):
        began = time.monotonic()
        connection = raw(
            server.url, f"POST /predict HTTP/1.1\r\ncontent-type: image/png\r\n{head}", body
        )
        assert status(connection) == 408
        assert 1.9 < time.monotonic() - began < 8
        assert still_serves(client)


def closed_after(connection: socket.socket, trickle: bytes = b"") -> float:
    """Seconds until the server closes ``connection``, sending ``trickle`` a byte every 0.5 s."""
    began = time.monotonic()
    connection.settimeout(0.5)
    for i in range(40):
        try:
            if connection.recv(1024) == b"":
                return time.monotonic() - began
        except ConnectionResetError:  # closed with our unread bytes still in its buffer
            return time.monotonic() - began
        except TimeoutError:
            pass
        with contextlib.suppress(OSError):
            connection.sendall(trickle[i : i + 1])
    return float("inf")


def test_silent_and_trickling_connections_are_closed_after_5_s(server_py, onnx_model):
    """Without a header deadline 32 such connections would hold every slot for ever (503)."""
    with notebook_server(server_py, onnx_model[0]) as (server, client):
        address = httpx.URL(server.url)
        silent = [socket.create_connection((address.host, address.port)) for _ in range(40)]
        trickler = socket.create_connection((address.host, address.port))
        time.sleep(0.5)
        assert post(client, png(IMAGE)).status_code == 503  # every slot held
        with ThreadPoolExecutor(max_workers=2) as pool:
            slow_headers = pool.submit(closed_after, trickler, b"GET /health HTTP/1.1\r\nhost: x")
            quiet = pool.submit(closed_after, silent[0])
            assert 4 < quiet.result() < 8 and 4 < slow_headers.result() < 8
        assert all(c.recv(1024) == b"" for c in silent[1:])  # the server closed them all
        for connection in [*silent, trickler]:
            connection.close()
        assert still_serves(client)
        assert "Traceback" not in server.output()


@pytest.mark.parametrize(
    "head",
    [
        "POST /predict HTTP/1.1\r\ncontent-type: text/plain",  # 415 before the body is read
        "POST /nowhere HTTP/1.1\r\ncontent-type: image/png",  # 404
    ],
)
def test_a_request_answered_before_its_body_is_read_is_closed(server_py, onnx_model, head):
    """Else the client could trickle the unread body for ever (each byte restarts keep-alive)."""
    with notebook_server(server_py, onnx_model[0]) as (server, client):
        connection = raw(server.url, f"{head}\r\ncontent-length: 1000000", bytes(10))
        began = time.monotonic()
        assert connection.recv(1024).split()[1] in (b"415", b"404")
        assert closed_after(connection, bytes(20)) < 3  # closed once answered, not at 5 s
        assert time.monotonic() - began < 3
        connection.close()
        assert still_serves(client)


def test_a_huge_content_length_gets_413_before_the_body(server_py, onnx_model):
    with notebook_server(server_py, onnx_model[0]) as (server, client):
        began = time.monotonic()
        head = "POST /predict HTTP/1.1\r\ncontent-type: image/png\r\ncontent-length: 10000000000"
        assert status(raw(server.url, head)) == 413
        assert time.monotonic() - began < 1.5  # at once, not after the body's time limit
        assert still_serves(client)


def test_a_client_that_leaves_mid_upload_costs_one_log_line(server_py, onnx_model):
    with notebook_server(server_py, onnx_model[0]) as (server, client):
        head = "POST /predict HTTP/1.1\r\ncontent-type: image/png\r\ncontent-length: 5000"
        raw(server.url, head, bytes(100)).close()
        for _ in range(100):
            if "disconnected" in server.output():
                break
            time.sleep(0.05)
        lines = server.output().strip().splitlines()
        assert len(lines) == 1 and "disconnected during the upload" in lines[0], lines
        assert still_serves(client)


def test_64_concurrent_requests_are_held_or_refused_with_503(server_py, onnx_model):
    head = "POST /predict HTTP/1.1\r\ncontent-type: image/png\r\ncontent-length: 1000"
    with notebook_server(server_py, onnx_model[0]) as (server, client):
        connections = [raw(server.url, head, bytes(10)) for _ in range(64)]  # all stall
        with ThreadPoolExecutor(max_workers=64) as pool:
            statuses = list(pool.map(status, connections))
        assert set(statuses) <= {408, 503}, statuses
        assert statuses.count(408) < 32 and statuses.count(503) > 32  # at most 32 connections
        assert still_serves(client)


def test_the_server_exits_when_the_process_that_started_it_dies(tmp_path, server_py, onnx_model):
    port = free_port()
    parent = script(
        tmp_path,
        "parent.py",
        "import subprocess, sys, time\n"
        f"server = subprocess.Popen([sys.executable, {str(server_py)!r}, "
        f"{str(onnx_model[0])!r}, '--port', '{port}'])\n"
        "print(server.pid, flush=True)\n"
        "time.sleep(600)\n",
    )
    process = subprocess.Popen(
        [sys.executable, parent], stdout=subprocess.PIPE, text=True, start_new_session=True
    )
    try:
        server_pid = int(process.stdout.readline())
        for _ in range(300):  # until the server answers
            if answers(f"http://127.0.0.1:{port}/health") == 200:
                break
            time.sleep(0.1)
        assert leftovers(server_py) == [server_pid]
        process.kill()  # SIGKILL: no finally, no cleanup in the parent
        process.wait()
        for _ in range(150):  # the server notices within a second and shuts down
            if gone(server_py):
                break
            time.sleep(0.1)
        assert gone(server_py)
    finally:
        stop(process)
        for pid in leftovers(server_py):  # the test failed: leave nothing behind
            os.kill(pid, signal.SIGKILL)


# The exercise checks: the solutions pass, typical mistakes get one helpful line.


def read_image(body: bytes, content_type: str) -> np.ndarray:
    """A right answer to exercise 1."""
    if content_type not in ("image/png", "image/jpeg"):
        raise HTTPException(415, "png or jpeg")
    try:
        image = Image.open(io.BytesIO(body), formats=["PNG", "JPEG"])
        return np.asarray(image.convert("RGB")).transpose(2, 0, 1).copy()
    except Exception:
        raise HTTPException(400, "not an image") from None


def test_image_reader_problem_accepts_a_right_answer():
    assert image_reader_problem(read_image) is None


@pytest.mark.parametrize(
    ("answer", "hint"),
    [
        (None, "read_image should be a function, got NoneType"),
        (lambda body, content_type: None, "should give an array, got None"),
        (
            lambda body, content_type: np.asarray(Image.open(io.BytesIO(body)).convert("RGB")),
            "should give uint8 (3, 32, 32), got uint8 (32, 32, 3)",
        ),
        (
            lambda body, content_type: read_image(body, content_type)[::-1].copy(),  # BGR
            "pixels are wrong",
        ),
        (
            lambda body, content_type: read_image(body, content_type).transpose(0, 2, 1).copy(),
            "pixels are wrong",
        ),
        (
            lambda body, content_type: read_image(body, "image/png"),  # any content type
            "as text/plain should raise HTTPException(415), got an array",
        ),
        (
            lambda body, content_type: read_image(body, content_type) if body else 1 / 0,
            "should raise HTTPException(400), got 'ZeroDivisionError: division by zero'",
        ),
    ],
)
def test_image_reader_problem_names_the_mistake(answer, hint):
    problem = image_reader_problem(answer)
    assert problem is not None and hint in problem and "\n" not in problem


def test_the_notebook_s_exercise_check_prints_one_line(capsys):
    assert exercises.report(lambda: image_reader_problem(lambda b, c: None), done="x") is False
    assert capsys.readouterr().out.startswith("✗ a 32×32 PNG as image/png")


@pytest.fixture(scope="module")
def cnn() -> torch.nn.Module:
    torch.manual_seed(0)
    return small_cnn([0.5] * 3, [0.25] * 3).eval()


def export(model: torch.nn.Module, **dim) -> torch.export.ExportedProgram:
    example = torch.zeros(8, 3, 32, 32, dtype=torch.uint8)
    shapes = ({0: torch.export.Dim("batch", **dim)},) if dim else None
    return torch.export.export(model, (example,), dynamic_shapes=shapes)


def test_batch_bounds_problem_accepts_a_right_answer(cnn):
    assert batch_bounds_problem(export(cnn, min=1, max=64), low=1, high=64) is None


@pytest.mark.parametrize(
    ("dim", "hint"),
    [
        (None, "got NoneType"),
        ({"min": 1, "max": 2048}, "a batch of 65 ran"),
        ({}, "a batch of 1 should run, but: AssertionError"),  # static: batch 8 only
    ],
)
def test_batch_bounds_problem_names_the_mistake(cnn, dim, hint):
    problem = batch_bounds_problem(None if dim is None else export(cnn, **dim), low=1, high=64)
    assert problem is not None and hint in problem
