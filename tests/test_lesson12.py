"""Lesson 12's helpers: the diagram of a model's three files, the exercise checkers on right and
wrong answers, and the lesson's small server, run exactly as the notebook writes it."""

from __future__ import annotations

import ast
import io
import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import httpx
import matplotlib.pyplot as plt
import numpy as np
import onnxruntime as ort
import pytest
import torch
from matplotlib.figure import Figure
from PIL import Image
from torch.export import Dim

from helpers.authoring import course
from helpers.diagrams.routes import FORMS, describe_file, draw_routes
from helpers.exercises import lesson12
from helpers.models import small_cnn
from helpers.processes import leftovers
from helpers.serve import serve

NOTEBOOK = course.NOTEBOOKS / "12_deployment.ipynb"
CLASSES = ["airplane", "automobile"]


@pytest.fixture(autouse=True)
def close_figures():
    yield
    plt.close("all")


@pytest.fixture(scope="module")
def model() -> torch.nn.Module:
    """A small untrained CIFAR2 CNN whose logits are far apart (a scaled-up head), so that a
    logit is never mistaken for a probability."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(0)
        cnn = small_cnn([0.5] * 3, [0.25] * 3, width=4).eval()
    with torch.no_grad():
        cnn[-1].weight.mul_(40)
    return cnn


@pytest.fixture(scope="module")
def images() -> torch.Tensor:
    generator = torch.Generator().manual_seed(1)
    return torch.randint(0, 256, (12, 3, 32, 32), dtype=torch.uint8, generator=generator)


@pytest.fixture(scope="module")
def files(model, images, tmp_path_factory) -> dict[str, Path]:
    """The model's three files, made as the lesson makes them."""
    folder = tmp_path_factory.mktemp("forms")
    paths = {
        "state_dict": folder / "m.pt",
        "program": folder / "m.pt2",
        "onnx": folder / "m.onnx",
    }
    torch.save(model.state_dict(), paths["state_dict"])
    batch = Dim("batch", min=1, max=64)
    exported = torch.export.export(model, (images[:4],), dynamic_shapes=({0: batch},))
    torch.export.save(exported, paths["program"])
    onnx_program = torch.onnx.export(
        model,
        (images[:4],),
        dynamo=True,
        dynamic_shapes=({0: batch},),
        input_names=["images"],
        output_names=["logits"],
        verbose=False,
    )
    onnx_program.model.metadata_props["classes"] = ",".join(CLASSES)
    onnx_program.save(paths["onnx"], external_data=False)
    return paths


@pytest.fixture(scope="module")
def session(files) -> ort.InferenceSession:
    return ort.InferenceSession(str(files["onnx"]), providers=["CPUExecutionProvider"])


def verdict(capsys, check) -> str:
    check()
    return capsys.readouterr().out


# The diagram


def test_draw_routes_describes_each_file_from_the_file(files, model):
    fig = draw_routes(files)
    assert isinstance(fig, Figure)
    text = "\n".join(t.get_text() for ax in fig.axes for t in ax.texts)
    for path in files.values():
        assert path.name in text
        assert f"{path.stat().st_size / 1000:,.0f} kB" in text
    assert f"{len(model.state_dict())} tensors, no code" in text
    assert "ONNX operators + weights" in text and "without PyTorch" in text


def test_describe_file_counts_what_each_form_holds(files, model):
    assert describe_file("state_dict", files["state_dict"]) == (
        f"{len(model.state_dict())} tensors, no code"
    )
    program = torch.export.load(files["program"])
    operations = sum(n.op == "call_function" for n in program.graph.nodes)
    assert describe_file("program", files["program"]) == f"{operations} operations + weights"
    assert describe_file("onnx", files["onnx"]).endswith("ONNX operators + weights")


def test_draw_routes_refuses_missing_forms_files_and_wrong_contents(files, tmp_path):
    with pytest.raises(ValueError, match="exactly the forms"):
        draw_routes({"state_dict": files["state_dict"], "program": files["program"]})
    with pytest.raises(ValueError, match="exactly the forms"):
        draw_routes({**files, "pickle": files["state_dict"]})
    with pytest.raises(FileNotFoundError):
        draw_routes({**files, "onnx": tmp_path / "nowhere.onnx"})
    swapped = {"state_dict": files["state_dict"], "program": files["onnx"], "onnx": files["onnx"]}
    with pytest.raises(ValueError, match=r"not a torch\.export program"):
        draw_routes(swapped)
    with pytest.raises(ValueError, match="not an ONNX file"):
        draw_routes({**files, "onnx": files["state_dict"]})
    with pytest.raises(ValueError, match="form is one of"):
        describe_file("pickle", files["state_dict"])
    assert set(FORMS) == set(files)


def test_describe_file_refuses_a_state_dict_that_is_not_one(tmp_path):
    path = tmp_path / "numbers.pt"
    torch.save({"epoch": 3}, path)
    with pytest.raises(ValueError, match="does not hold a state_dict"):
        describe_file("state_dict", path)


# Exercise 1: a program for batches of 1 to 32


def test_exercise_1_accepts_a_batch_of_1_to_32(capsys, model, images):
    bounded = torch.export.export(
        model, (images[:8],), dynamic_shapes=({0: Dim("batch", min=1, max=32)},)
    )
    assert verdict(capsys, lambda: lesson12.exercise_1(bounded, model)).startswith("✓")


def test_exercise_1_names_each_usual_mistake(capsys, model, images):
    static = torch.export.export(model, (images[:8],))
    too_wide = torch.export.export(
        model, (images[:8],), dynamic_shapes=({0: Dim("batch", min=1, max=2048)},)
    )
    cases = {
        "fill in": ...,
        "expected an ExportedProgram": model,
        "a batch of 1 should run": static,
        "upper bound of 32": too_wide,
    }
    for expected, answer in cases.items():
        out = verdict(capsys, lambda answer=answer: lesson12.exercise_1(answer, model))
        assert out.startswith("✗") and expected in out, (expected, out)


def test_exercise_1_refuses_an_export_of_an_untrained_model(capsys, model, images):
    """Right bounds, right shapes, but not the model the lesson trained: its logits differ."""
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(1)
        untrained = small_cnn([0.5] * 3, [0.25] * 3, width=4).eval()
    bounded = torch.export.export(
        untrained, (images[:8],), dynamic_shapes=({0: Dim("batch", min=1, max=32)},)
    )
    out = verdict(capsys, lambda: lesson12.exercise_1(bounded, model))
    assert out.startswith("✗") and "differ from the model's" in out, out
    assert "export the trained model" in out


# Exercise 2: answer with a probability


def right_answer(session, image):
    (logits,) = session.run(None, {"images": image[None].numpy()})
    probabilities = torch.from_numpy(logits).softmax(dim=1)[0]
    index = int(probabilities.argmax())
    return {"class": CLASSES[index], "probability": probabilities[index].item()}


def test_exercise_2_accepts_the_right_answer_in_torch_or_numpy(capsys, session, images):
    def with_numpy(session, image):
        (logits,) = session.run(None, {"images": image.numpy()[None]})
        e = np.exp(logits[0] - logits[0].max())
        p = e / e.sum()
        return {"class": CLASSES[int(p.argmax())], "probability": p.max()}

    for answer in (right_answer, with_numpy):
        out = verdict(capsys, lambda a=answer: lesson12.exercise_2(a, session, images, CLASSES))
        assert out.startswith("✓"), out


def test_exercise_2_names_each_usual_mistake(capsys, session, images):
    def no_batch(session, image):
        session.run(None, {"images": image.numpy()})  # (3, 32, 32): no batch dimension
        return {"class": "airplane", "probability": 1.0}

    def logit(session, image):
        (logits,) = session.run(None, {"images": image[None].numpy()})
        index = int(logits[0].argmax())
        return {"class": CLASSES[index], "probability": float(logits[0, index])}

    def over_images(session, image):
        (logits,) = session.run(None, {"images": image[None].numpy()})
        probabilities = torch.from_numpy(logits).softmax(dim=0)[0]
        index = int(torch.from_numpy(logits)[0].argmax())
        return {"class": CLASSES[index], "probability": probabilities[index].item()}

    def index_not_name(session, image):
        found = right_answer(session, image)
        return {**found, "class": CLASSES.index(found["class"])}

    def least_likely(session, image):
        found = right_answer(session, image)
        return {**found, "probability": 1 - found["probability"]}

    def starter(session, image): ...

    cases = {
        "fill in": ...,
        "should be a function": 3,
        "returned None": starter,
        "takes a batch": no_batch,
        "is it a logit": logit,
        "not over the images": over_images,
        "by its name": index_not_name,
        "the probability is": least_likely,
    }
    for expected, answer in cases.items():
        out = verdict(
            capsys, lambda answer=answer: lesson12.exercise_2(answer, session, images, CLASSES)
        )
        assert out.startswith("✗") and expected in out, (expected, out)


# The lesson's server, exactly as the notebook writes it


@pytest.fixture
def server_py(tmp_path) -> Path:
    text = course.written_files(course.read(NOTEBOOK))["runs/12_deployment/server.py"]
    path = tmp_path / "server.py"
    path.write_text(text)
    return path


def png(pixels: np.ndarray) -> bytes:
    buffer = io.BytesIO()
    Image.fromarray(pixels).save(buffer, format="PNG")
    return buffer.getvalue()


def test_the_server_imports_no_torch(server_py):
    imported = set()
    for node in ast.walk(ast.parse(server_py.read_text())):
        if isinstance(node, ast.Import):
            imported |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            imported.add((node.module or "").split(".")[0])
    assert "torch" not in imported and "helpers" not in imported
    assert {"onnxruntime", "fastapi", "uvicorn"} <= imported


def test_the_lesson_s_server_answers_refuses_and_stops(server_py, files, model, images):
    """What the lesson shows and says: the model's class for a PNG, 400 with a message for a
    wrong size or bytes that are not a PNG; and the weakness its last section names: a 16-bit
    grey PNG is taken, and classified as the white square `convert("RGB")` makes of it."""
    command = [sys.executable, server_py, files["onnx"], "--port", "{port}"]
    with (
        serve(command, ready="/health", timeout=60) as server,
        httpx.Client(base_url=server.url, timeout=10) as client,
    ):

        def post(body: bytes) -> httpx.Response:
            return client.post("/predict", content=body, headers={"content-type": "image/png"})

        with torch.inference_mode():
            expected = model(images).argmax(dim=1).tolist()
        got = [post(png(image.permute(1, 2, 0).numpy())).json() for image in images]
        assert [g["index"] for g in got] == expected
        assert [g["class"] for g in got] == [CLASSES[i] for i in expected]
        wrong_size = post(png(np.zeros((64, 64, 3), np.uint8)))
        assert wrong_size.status_code == 400 and "64×64" in wrong_size.json()["detail"]
        not_png = post(b"hello")
        assert not_png.status_code == 400 and "PNG" in not_png.json()["detail"]

        grey16 = io.BytesIO()
        Image.fromarray(np.full((32, 32), 20000, np.uint16)).save(grey16, format="PNG")
        white = torch.full((1, 3, 32, 32), 255, dtype=torch.uint8)
        with torch.inference_mode():
            white_class = model(white).argmax().item()
        taken = post(grey16.getvalue())
        assert taken.status_code == 200 and taken.json()["index"] == white_class
        assert "Traceback" not in server.output()
    assert server.process.poll() is not None and leftovers(server_py) == []
