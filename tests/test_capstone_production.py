"""Capstone 2's checker (helpers.capstone.production) passes good artefacts and refuses the usual
wrong answers, each with its own message: numbers that are not the profiles', a change or a
lever too small, a fixed batch, a model exported in training mode, a server that fails on a bad
request, a bug left unnamed, a run rewritten instead of fixed, a run that still does not learn.

The profiles here are written by hand where only their numbers matter, and by torch.profiler
where the reading is tested; the reference solution, run by the notebook tests, passes with
real ones."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch
from torch import nn
from torch.export import Dim
from torchvision.transforms import v2

from helpers import capstone
from helpers.capstone import production
from helpers.data import fetch

pytestmark = pytest.mark.skipif(
    not (fetch.__module__ and Path("data/cifar2/train").is_dir()),
    reason="needs CIFAR2 (make data)",
)

FIXES = [
    ("shuffle=False", "shuffle=True"),
    ("self.blocks = []", "self.blocks = nn.ModuleList()"),
    (
        "    loss.backward()\n    optimizer.zero_grad()\n",
        "    optimizer.zero_grad()\n    loss.backward()\n",
    ),
]
WRONG_LINES = [
    "loader = DataLoader(TensorDataset(train_images, train_labels), batch_size=64, shuffle=False)",
    "self.blocks = []",
    "optimizer.zero_grad()",
]
SERVER = """
import argparse, io
import numpy as np, onnxruntime as ort, uvicorn
from fastapi import FastAPI, HTTPException, Request
from PIL import Image

parser = argparse.ArgumentParser()
parser.add_argument("model")
parser.add_argument("--port", type=int, required=True)
args = parser.parse_args()
session = ort.InferenceSession(args.model, providers=["CPUExecutionProvider"])
name = session.get_inputs()[0].name
app = FastAPI()


@app.get("/health")
def health():
    return {"status": "ok"}


@app.post("/predict")
async def predict(request: Request):
    body = await request.body()
    CHECK
    pixels = np.asarray(Image.open(io.BytesIO(body)).convert("RGB"))
    (logits,) = session.run(None, {name: pixels.transpose(2, 0, 1)[None]})
    return {"index": int(logits[0].argmax())}


uvicorn.run(app, host="127.0.0.1", port=args.port, log_level="warning")
"""
BROKEN = production.BROKEN_RUN.read_text().splitlines()
REFUSES = 'if not body.startswith(b"\\x89PNG"):\n        raise HTTPException(400, "a PNG, please")'


class Tiny(nn.Module):
    """A small model that takes uint8 images and normalises them itself, with batch norm."""

    def __init__(self, mean: list[float], std: list[float], width: int = 4) -> None:
        super().__init__()
        self.prepare = nn.Sequential(v2.ToDtype(torch.float32, scale=True), v2.Normalize(mean, std))
        self.body = nn.Sequential(
            nn.Conv2d(3, width, 3, stride=4),
            nn.BatchNorm2d(width),
            nn.ReLU(),
            nn.AdaptiveAvgPool2d(1),
            nn.Flatten(),
            nn.Linear(width, 2),
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.body(self.prepare(x))


def write_trace(path: Path, steps_ms: list[float], peaks_mib: list[float] | None = None) -> Path:
    """A Chrome trace as torch.profiler writes one: a ProfilerStep#N per step and, with
    ``peaks_mib``, allocations and a free inside each step that reach that peak above what was
    allocated when the step began (a total that grows from step to step, as a profile's can)."""
    events, start, total = [], 1000.0, 5.0 * 2**20
    for i, ms in enumerate(steps_ms):
        events.append(
            {"ph": "X", "cat": "user_annotation", "name": f"ProfilerStep#{i + 1}", "ts": start,
             "dur": ms * 1000}
        )  # fmt: skip
        if peaks_mib is not None:
            peak = peaks_mib[i] * 2**20
            for offset, change in ((10, 0.5 * peak), (20, 0.5 * peak), (30, -0.9 * peak)):
                total += change
                events.append(
                    {"ph": "i", "name": "[memory]", "ts": start + offset,
                     "args": {"Total Allocated": total, "Bytes": change, "Device Type": 0}}
                )  # fmt: skip
        start += ms * 1000 + 50
    path.write_text(json.dumps({"traceEvents": events}))
    return path


def export_onnx(model: nn.Module, path: Path, dynamic: bool = True) -> Path:
    example = torch.randint(0, 256, (8, 3, 32, 32), dtype=torch.uint8)
    shapes = {"dynamic_shapes": ({0: Dim("batch", min=1, max=1024)},)} if dynamic else {}
    program = torch.onnx.export(
        model, (example,), dynamo=True, input_names=["images"], verbose=False, **shapes
    )
    program.save(path, external_data=False)
    return path


@pytest.fixture(scope="module")
def good(tmp_path_factory) -> Path:
    """A folder whose report meets every criterion."""
    folder = tmp_path_factory.mktemp("p2")
    torch.manual_seed(0)
    model = Tiny([0.49, 0.49, 0.49], [0.25, 0.24, 0.26])
    model.train()
    with torch.no_grad():  # running statistics of their own, so eval() differs from train()
        model(torch.randint(0, 256, (64, 3, 32, 32), dtype=torch.uint8))
    model.eval()
    torch.save({"model": model.state_dict(), "model_args": model_args(model)}, folder / "model.pt")
    export_onnx(model, folder / "model.onnx")
    write_trace(folder / "speed_before.json", [100.0, 110.0, 105.0, 98.0])
    write_trace(folder / "speed_after.json", [50.0, 52.0, 49.0])
    write_trace(folder / "memory_before.json", [60.0, 61.0, 60.0], [20.0, 20.0, 20.0])
    write_trace(folder / "memory_after.json", [62.0, 61.0, 63.0], [11.0, 11.0, 11.0])
    (folder / "server.py").write_text(SERVER.replace("CHECK", REFUSES))
    run = capstone.copy_broken_run(folder / "fixed_run.py")
    text = run.read_text()
    for wrong, right in FIXES:
        text = text.replace(wrong, right)
    run.write_text(text)
    report = {
        "speed": {"change": "decoded once", "before": "speed_before.json",
                  "after": "speed_after.json", "before_ms": 102.5, "after_ms": 50.0},
        "memory": {"lever": "accumulation", "before": "memory_before.json",
                   "after": "memory_after.json", "before_mib": 20.0, "after_mib": 11.0},
        "export": {"onnx": "model.onnx", "max_difference": 1e-6},
        "server": {"script": "server.py"},
        "bugs": {"run": "fixed_run.py", "wrong_lines": WRONG_LINES},
    }  # fmt: skip
    (folder / "report.json").write_text(json.dumps(report))
    return folder


def model_args(model: Tiny) -> dict:
    mean, std = model.prepare[1].mean, model.prepare[1].std
    return {"mean": list(mean), "std": list(std)}


def grade(folder: Path, *only: str, **changes) -> dict[str, str | None]:
    """Judge the report's parts and the criteria whose names hold one of ``only``; ``changes``
    (part → {key: value}) are written into report.json first."""
    report = json.loads((folder / "report.json").read_text())
    for part, values in changes.items():
        report[part] = {**report[part], **values}
    (folder / "changed.json").write_text(json.dumps(report))
    criteria = capstone.production_criteria(folder / "changed.json", folder / "model.pt", Tiny)
    chosen = [criteria[0]] + [c for c in criteria[1:] if any(word in c.name for word in only)]
    assert len(chosen) > len(only) or not only, [c.name for c in criteria]
    return capstone.run_criteria(chosen)


def problems(results: dict[str, str | None]) -> list[str]:
    return [p for p in results.values() if p is not None]


def test_a_good_report_meets_the_criteria_of_numbers_files_and_quotes(good):
    results = grade(good, "profile", "report", "faster", "peak", "ONNX", "quoted")
    assert len(results) == 10 and problems(results) == []


def test_the_profiler_s_trace_is_read_as_the_brief_says(tmp_path):
    model = Tiny([0.5] * 3, [0.25] * 3)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    x = torch.randint(0, 256, (16, 3, 32, 32), dtype=torch.uint8)
    y = torch.randint(0, 2, (16,))
    plan = torch.profiler.schedule(wait=0, warmup=1, active=3, repeat=1)
    with torch.profiler.profile(schedule=plan, profile_memory=True) as prof:
        for _ in range(4):
            loss = nn.functional.cross_entropy(model(x), y)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            prof.step()
    prof.export_chrome_trace(str(tmp_path / "trace.json"))
    summary = capstone.profile_summary(tmp_path / "trace.json")
    assert summary["steps"] == 3 and summary["step_ms"] > 0
    assert 0 < summary["peak_mib"] < 100, summary


def test_numbers_that_are_not_the_profiles_are_refused(good):
    speed = grade(good, "step times", speed={"before_ms": 205.0})
    assert "for 'before', its profile says 102.5" in problems(speed)[0]
    memory = grade(good, "peaks you report", memory={"after_mib": 5.5})
    assert "you report 5.5 mib for 'after', its profile says 11" in problems(memory)[0]


def test_a_change_or_a_lever_too_small_is_refused(good):
    write_trace(good / "slower.json", [90.0, 91.0, 92.0])
    speed = grade(good, "faster", speed={"after": "slower.json"})
    assert "1.13× is less than 1.25×" in problems(speed)[0]
    write_trace(good / "fuller.json", [60.0, 60.0, 60.0], [18.0, 18.0, 18.0])
    memory = grade(good, "cuts", memory={"after": "fuller.json"})
    assert "fell by 10%" in problems(memory)[0] and "smaller batch" in problems(memory)[0]


def test_profiles_with_too_few_steps_or_no_memory_are_refused(good):
    write_trace(good / "two.json", [50.0, 50.0])
    speed = grade(good, "speed profile", speed={"after": "two.json"})
    assert "holds 2 profiled steps" in problems(speed)[0]
    write_trace(good / "none.json", [])  # an export after the profile's cycle ended: empty
    later = grade(good, "speed profile", "step times", "faster", speed={"after": "none.json"})
    assert "holds 0 profiled steps" in problems(later)[0]
    assert all("not checked" in p for p in problems(later)[1:]), later
    memory = grade(good, "memory profile", memory={"after": "speed_after.json"})
    assert "profile_memory=True" in problems(memory)[0]


def test_a_missing_part_or_file_is_named(good):
    report = json.loads((good / "report.json").read_text())
    del report["memory"]["lever"]
    (good / "changed.json").write_text(json.dumps(report))
    criteria = capstone.production_criteria(good / "changed.json", good / "model.pt", Tiny)
    assert "'memory' has no 'lever'" in criteria[0].judge()
    missing = grade(good, "speed profile", speed={"after": "nowhere.json"})
    assert "'nowhere.json', which is not a file" in problems(missing)[0]


def test_an_onnx_file_with_a_fixed_batch_is_refused(good):
    model = Tiny(**torch.load(good / "model.pt", weights_only=True)["model_args"]).eval()
    export_onnx(model, good / "fixed.onnx", dynamic=False)
    results = grade(good, "any size", export={"onnx": "fixed.onnx"})
    assert "batch dimension is fixed to 8" in problems(results)[0]


def test_an_onnx_file_exported_in_training_mode_is_refused_with_the_eval_hint(good):
    """torch.onnx.export(dynamo=True) exports evaluation behaviour from a model in training mode
    (batch norm folded); the older exporter keeps training mode when told to, as old code
    does."""
    checkpoint = torch.load(good / "model.pt", weights_only=True)
    model = Tiny(**checkpoint["model_args"])
    model.load_state_dict(checkpoint["model"])
    model.train()
    example = torch.randint(0, 256, (8, 3, 32, 32), dtype=torch.uint8)
    torch.onnx.export(
        model, (example,), str(good / "train.onnx"), dynamo=False,
        training=torch.onnx.TrainingMode.PRESERVE, input_names=["images"],
        dynamic_axes={"images": {0: "batch"}},
    )  # fmt: skip
    results = grade(good, "equal your model's", export={"onnx": "train.onnx"})
    assert "training mode" in problems(results)[0] and "model.eval()" in problems(results)[0]


def test_a_reported_difference_above_the_tolerance_is_refused(good):
    results = grade(good, "equal your model's", export={"max_difference": 0.01})
    assert "you report a difference of 0.01" in problems(results)[0]


def test_a_server_that_answers_and_refuses_passes_and_one_that_fails_on_bad_input_does_not(good):
    assert problems(grade(good, "server")) == []
    (good / "crashes.py").write_text(SERVER.replace("CHECK", "pass"))
    results = grade(good, "server", server={"script": "crashes.py"})
    assert "not an image got 500" in problems(results)[0]


def test_a_server_that_does_not_start_says_why(good):
    (good / "broken.py").write_text("raise SystemExit('no model given')\n")
    results = grade(good, "server", server={"script": "broken.py"})
    assert "did not start" in problems(results)[0]


def test_quotes_that_miss_a_bug_or_are_not_lines_of_the_run_are_refused(good):
    missing = grade(good, "quoted", bugs={"wrong_lines": [WRONG_LINES[0], WRONG_LINES[2]]})
    assert "in the model" in problems(missing)[0] and "parameters" in problems(missing)[0]
    invented = grade(good, "quoted", bugs={"wrong_lines": [*WRONG_LINES, "x = 1"]})
    assert "'x = 1' is not a line of the run as given" in problems(invented)[0]
    many = grade(good, "quoted", bugs={"wrong_lines": WRONG_LINES * 2})
    assert "you quote 6 lines" in problems(many)[0]
    sort = (
        "train_index = order[512:1536].sort().values  # in file order: reading them is sequential"
    )
    other = grade(good, "quoted", bugs={"wrong_lines": [sort, *WRONG_LINES[1:]]})
    assert problems(other) == [], "the sorting line is the data bug's other half"


def test_a_run_rewritten_instead_of_fixed_is_refused_before_it_runs(good):
    text = (good / "fixed_run.py").read_text() + "\n# a new run\n" + "x = 1\n" * 12
    (good / "rewritten.py").write_text(text)
    results = grade(good, "fixed run", bugs={"run": "rewritten.py"})
    assert "lines of the run differ" in problems(results)[0]


def test_a_run_with_a_bug_left_does_not_reach_the_bar(good):
    """The data and the step fixed, the model's plain list left: the run learns a little
    (0.75-0.80 over three seeds), not to the bar."""
    text = production.BROKEN_RUN.read_text()
    for wrong, right in (FIXES[0], FIXES[2]):
        text = text.replace(wrong, right)
    (good / "half_fixed.py").write_text(text)
    results = grade(good, "fixed run", bugs={"run": "half_fixed.py"})
    assert "is below 0.83: a bug is still in it" in problems(results)[0]


def test_copying_the_run_never_overwrites_a_copy(tmp_path, capsys):
    copy = capstone.copy_broken_run(tmp_path / "deep" / "run.py")
    copy.write_text("my fixes")
    assert capstone.copy_broken_run(copy).read_text() == "my fixes"
    assert "kept your copy" in capsys.readouterr().out
    module = capstone.import_run(production.BROKEN_RUN)
    assert {"make_data", "Net", "train_step", "run"} <= set(vars(module))


def test_the_grade_asks_for_what_is_not_filled_in(capsys):
    assert capstone.grade_production(report=..., checkpoint=..., model_class=...) is False
    assert "report" in capsys.readouterr().out
