"""helpers.serve: a server process on a free local port that answers before use and always
stops; chapter 12's inference server, run exactly as the notebook writes it; the exercise
checkers, on right and wrong answers."""

from __future__ import annotations

import io
import sys
from pathlib import Path

import httpx
import numpy as np
import pytest
import torch
from fastapi import HTTPException
from PIL import Image

from helpers import course, exercises
from helpers.models import small_cnn
from helpers.processes import free_port, leftovers
from helpers.serve import answers, batch_bounds_problem, image_reader_problem, serve

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
        assert len(leftovers(echo)) == 1
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

NOTEBOOK = course.NOTEBOOKS / "12_deployment.ipynb"


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


def test_the_notebook_s_server_answers_refuses_bad_input_and_stops(tmp_path, onnx_model):
    path, model = onnx_model
    text = course.written_files(course.read(NOTEBOOK))["runs/12_deployment/server.py"]
    server_py = script(tmp_path, "server.py", text)
    image = np.random.default_rng(0).integers(0, 256, (32, 32, 3), dtype=np.uint8)
    expected = model(torch.from_numpy(image).permute(2, 0, 1)[None]).argmax().item()
    command = [sys.executable, server_py, path, "--port", "{port}"]
    with (
        serve(command, ready="/health") as server,
        httpx.Client(base_url=server.url, timeout=10) as client,
    ):
        assert client.get("/health").json()["classes"] == ["cat", "dog"]

        def post(body: bytes, content_type: str = "image/png") -> httpx.Response:
            return client.post("/predict", content=body, headers={"content-type": content_type})

        answer = post(png(image)).json()
        assert answer["index"] == expected and answer["class"] == ["cat", "dog"][expected]
        assert sum(answer["probabilities"]) == pytest.approx(1.0)
        wrong = {
            415: [(png(image), "text/plain"), (png(image), "image/jpeg")],
            400: [
                (b"", "image/png"),
                (b"GIF89a", "image/png"),
                (png(np.zeros((16, 32, 3), np.uint8)), "image/png"),
                (png(image)[:100], "image/png"),
            ],
            413: [(bytes(200_000), "image/png")],
        }
        for status, requests in wrong.items():
            for body, content_type in requests:
                response = post(body, content_type)
                assert response.status_code == status, (body[:10], content_type)
                assert response.json()["detail"]  # a message, not just a code
        grey = post(png(image[..., 0]))  # a greyscale PNG is converted to RGB
        assert grey.status_code == 200
        assert post(png(image)).json() == answer  # still serving, same answer
    assert gone(server_py)


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
