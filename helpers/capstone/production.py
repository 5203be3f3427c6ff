"""Grading capstone 2 ("Take it to production") from what it leaves on disk, never from its code.

Capstone 2 (``notebooks/projects/02_take_it_to_production.ipynb``) starts from capstone 1's
checkpoint and model class, and leaves a folder with a ``report.json`` (:data:`REPORT_KEYS`)
and the files it names, relative to that folder: two profiles of the training loop before and
after a change that makes it faster, two profiles with memory before and after a lever that
cuts a step's peak, an ONNX file, a server script, and a fixed copy of the run that does not
learn (:func:`copy_broken_run`) with its wrong lines quoted. The profiles are Chrome traces,
``prof.export_chrome_trace(path)`` of a ``torch.profiler.profile`` stepped with ``prof.step()``:
the checker reads each step's time and the memory allocated from them, so a claim is checked
against the learner's own measurement, on the learner's machine, whatever its load.
"""

from __future__ import annotations

import copy
import difflib
import importlib.util
import json
import math
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from types import ModuleType
from typing import Any

import torch
from torch import nn

from helpers.capstone.classifier import rebuild
from helpers.capstone.criteria import Blocked, Criterion, run_criteria
from helpers.exercises import filled
from helpers.images import load_cifar2, png_bytes

BROKEN_RUN = Path(__file__).with_name("broken_run.py")
REPORT_KEYS: dict[str, dict[str, str]] = {
    "speed": {
        "change": "what you changed to make the loop faster",
        "before": "the profile (Chrome trace) of the loop before the change",
        "after": "the profile of the loop after it",
        "before_ms": "the median step time in the first profile, in milliseconds",
        "after_ms": "the median step time in the second, in milliseconds",
    },
    "memory": {
        "lever": "the lever you pulled to cut a step's memory",
        "before": "the profile with memory (profile_memory=True) before it",
        "after": "the profile with memory after it",
        "before_mib": "the peak memory allocated in a step of the first, in MiB",
        "after_mib": "the same peak in the second, in MiB",
    },
    "export": {
        "onnx": "the ONNX file of your model",
        "max_difference": "the largest difference you measured between its logits and eager's",
    },
    "server": {"script": "your server: python SCRIPT MODEL.onnx --port PORT"},
    "bugs": {
        "run": "your fixed copy of the run that did not learn",
        "wrong_lines": "the wrong lines, quoted from the run as given",
    },
}
SPEEDUP = 1.25  # the faster loop's steps take at most 1/1.25 of the time
MEMORY_CUT = 0.25  # the lever cuts the peak by at least a quarter
CLAIM_TOLERANCE = {"speed": 0.10, "memory": 0.05}  # a claim against its own profile
ONNX_TOLERANCE = 1e-4
LEARNS = 0.83  # the fixed run's last validation accuracy (fixed: 0.855; model bug left: 0.75-0.80)
MAX_CHANGED = 12  # lines of the run a fix may change: the same run, fixed, not another one
MAX_QUOTES = 5
PLANTED = {  # each planted bug, as the lines of the run as given that hold it
    "the data": ("shuffle=False", ".sort().values"),
    "the model": ("self.blocks = []",),
    "the training step": ("loss.backward()", "optimizer.zero_grad()"),
}
CHECKLIST = {  # where lesson 13's checklist finds each, for the hint
    "the data": "look at a batch as the loop gets it, labels and all (item 1)",
    "the model": "list the parameters the optimiser gets, and their gradients (item 3)",
    "the training step": "look at the gradients when optimizer.step() runs (item 3)",
}


def copy_broken_run(destination: Path | str) -> Path:
    """Copy the run that does not learn to ``destination`` (folders made); an existing file is
    kept, never overwritten (it may hold your fixes). Return the path."""
    destination = Path(destination)
    if destination.exists():
        print(f"kept your copy: {destination} (delete it to start again from the broken run)")
        return destination
    destination.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(BROKEN_RUN, destination)
    print(f"the run that does not learn: {destination}")
    return destination


def import_run(path: Path | str) -> ModuleType:
    """Import a copy of the run as a module, to call its parts (``make_data``, ``Net``,
    ``train_step``) one at a time."""
    path = Path(path)
    spec = importlib.util.spec_from_file_location(path.stem, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot import {path}")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def trace_events(path: Path | str) -> list[dict[str, Any]]:
    """The events of a Chrome trace written by ``prof.export_chrome_trace``."""
    data = json.loads(Path(path).read_text(encoding="utf-8"))
    events = data.get("traceEvents", []) if isinstance(data, dict) else data
    return [e for e in events if isinstance(e, dict)]


def profiled_steps(events: list[dict[str, Any]]) -> list[tuple[float, float]]:
    """``(start, duration)`` in microseconds of each ``ProfilerStep#N`` on the CPU side."""
    return [
        (float(e["ts"]), float(e["dur"]))
        for e in events
        if re.fullmatch(r"ProfilerStep#\d+", str(e.get("name", "")))
        and "gpu" not in str(e.get("cat", ""))
        and "dur" in e
    ]


def step_ms(events: list[dict[str, Any]]) -> float:
    """The median profiled step, in milliseconds."""
    return statistics.median(d for _, d in profiled_steps(events)) / 1000


def peak_mib(events: list[dict[str, Any]]) -> float | None:
    """The most a profiled step allocates at once beyond what was allocated when it began, in
    MiB (the profiler's "Total Allocated" at each allocation and free): a CUDA device's when the
    trace has one, else the CPU's; ``None`` without memory events inside the steps. Relative to
    each step's start, it leaves out the weights and the optimiser's state on every device, and
    what earlier profiles of the process counted."""
    memory = [e for e in events if e.get("name") == "[memory]" and "args" in e]
    cuda = [e for e in memory if e["args"].get("Device Type") == 1]
    chosen = sorted(cuda or memory, key=lambda e: float(e.get("ts", -1)))
    peaks = []
    for start, duration in profiled_steps(events):
        inside = [e for e in chosen if start <= float(e.get("ts", -1)) <= start + duration]
        if inside:
            first = inside[0]["args"]
            began = float(first["Total Allocated"]) - float(first.get("Bytes", 0))
            peaks.append(max(float(e["args"]["Total Allocated"]) for e in inside) - began)
    return max(peaks) / 2**20 if peaks else None


def profile_summary(path: Path | str) -> dict[str, Any]:
    """What the checker reads from a trace: its profiled steps, their median time in ms, and
    the peak memory allocated inside them in MiB (``None`` without ``profile_memory=True``)."""
    events = trace_events(path)
    steps = len(profiled_steps(events))
    return {
        "steps": steps,
        "step_ms": step_ms(events) if steps else None,
        "peak_mib": peak_mib(events),
    }


def _changed_lines(original: list[str], fixed: list[str]) -> int:
    matcher = difflib.SequenceMatcher(None, original, fixed, autojunk=False)
    return sum(
        max(i2 - i1, j2 - j1) for op, i1, i2, j1, j2 in matcher.get_opcodes() if op != "equal"
    )


def production_criteria(
    report: Path | str, checkpoint: Path | str, model_class: type[nn.Module]
) -> list[Criterion]:
    """The criteria of capstone 2, in the order they are judged (see :func:`grade_production`)."""
    report = Path(report)
    folder = report.parent
    state: dict[str, Any] = {}

    def parts() -> str | None:
        if not report.is_file():
            return f"no report at {report}: write it with json.dump (the brief's task 7)"
        try:
            loaded = json.loads(report.read_text(encoding="utf-8"))
        except json.JSONDecodeError as err:
            return f"{report.name} is not JSON: {err}"
        if not isinstance(loaded, dict):
            return f"{report.name} holds a {type(loaded).__name__}: write a dictionary"
        state["report"] = loaded
        for part, keys in REPORT_KEYS.items():
            if not isinstance(loaded.get(part), dict):
                return f"the report has no '{part}' part (a dictionary with {sorted(keys)})"
            missing = [k for k in keys if k not in loaded[part]]
            if missing:
                return f"'{part}' has no '{missing[0]}' ({keys[missing[0]]})"
        return None

    def entry(part: str, key: str) -> Any:
        if "report" not in state or key not in state["report"].get(part, {}):
            raise Blocked(f"the report has no '{part}' part with '{key}'")
        return state["report"][part][key]

    def file(part: str, key: str) -> Path:
        path = folder / str(entry(part, key))
        if not path.is_file():
            raise Blocked(f"'{part}' names {entry(part, key)!r}, which is not a file in {folder}")
        return path

    def number(part: str, key: str) -> float:
        value = entry(part, key)
        numeric = isinstance(value, int | float) and not isinstance(value, bool)
        if not numeric or not math.isfinite(value):
            raise Blocked(f"'{part}' → '{key}' is {value!r}, not a number")
        return float(value)

    def trace(part: str, key: str) -> list[dict[str, Any]]:
        if (part, key) not in state:
            try:
                state[part, key] = trace_events(file(part, key))
            except (json.JSONDecodeError, UnicodeDecodeError) as err:
                raise Blocked(f"{entry(part, key)!r} is not a Chrome trace ({err})") from None
        return state[part, key]

    def timed(key: str) -> float:
        """The median step of a speed profile with 3 or more steps."""
        events = trace("speed", key)
        if len(profiled_steps(events)) < 3:
            raise Blocked(f"the '{key}' profile needs 3 or more profiled steps (see above)")
        return step_ms(events)

    def speed_profiles() -> str | None:
        for key in ("before", "after"):
            steps = profiled_steps(trace("speed", key))
            if len(steps) < 3:
                return (
                    f"the '{key}' profile holds {len(steps)} profiled steps: profile 3 or more, "
                    "with schedule=... and prof.step() after each step, then "
                    "prof.export_chrome_trace(path)"
                )
        return None

    def claims(part: str, unit: str, measure, what: str) -> str | None:
        for key in ("before", "after"):
            measured = measure(trace(part, key))
            if measured is None:
                raise Blocked(f"the '{key}' profile has no memory events")
            claimed = number(part, f"{key}_{unit}")
            if abs(claimed - measured) > CLAIM_TOLERANCE[part] * measured:
                return (
                    f"you report {claimed:g} {unit} for '{key}', its profile says {measured:.4g}: "
                    f"report the {what} read from the profile itself"
                )
        return None

    def speed_claims() -> str | None:
        timed("before"), timed("after")
        return claims("speed", "ms", step_ms, "median step time")

    def faster() -> str | None:
        before, after = timed("before"), timed("after")
        ratio = before / after
        print(f"    a step: {before:.1f} ms before, {after:.1f} ms after, {ratio:.2f}× faster")
        if ratio >= SPEEDUP:
            return None
        return (
            f"{ratio:.2f}× is less than {SPEEDUP}×: label the phases of a step with "
            "record_function (lesson 10), find the one that takes the largest share, and change "
            "what it waits for; keep the batch size and the model the same"
        )

    def memory_profiles() -> str | None:
        for key in ("before", "after"):
            events = trace("memory", key)
            if not profiled_steps(events):
                return f"the '{key}' profile holds no profiled step: call prof.step() after each"
            if peak_mib(events) is None:
                return (
                    f"the '{key}' profile records no memory inside its steps: profile with "
                    "profile_memory=True"
                )
        return None

    def memory_claims() -> str | None:
        return claims("memory", "mib", peak_mib, "peak of 'Total Allocated'")

    def smaller() -> str | None:
        before, after = (peak_mib(trace("memory", k)) for k in ("before", "after"))
        if before is None or after is None:
            raise Blocked("a memory profile has no memory events")
        if before <= 0:
            raise Blocked("the 'before' profile's steps allocate nothing: profile training steps")
        cut = 1 - after / before
        print(f"    a step's peak: {before:.1f} MiB before, {after:.1f} MiB after, {cut:.0%} less")
        if cut >= MEMORY_CUT:
            return None
        return (
            f"the peak fell by {cut:.0%}, less than {MEMORY_CUT:.0%}: pull one of lesson 11's "
            "levers (gradient accumulation, activation checkpointing), which keep the same "
            "update; a smaller batch alone changes the training"
        )

    def model() -> nn.Module:
        if "model" not in state:
            c = torch.load(Path(checkpoint), map_location="cpu", weights_only=True)
            built, problem = rebuild(c, model_class)
            if built is None:
                raise Blocked(f"your capstone 1 checkpoint and class: {problem}")
            state["model"] = built
        return state["model"]

    def test_images() -> torch.Tensor:
        if "test" not in state:
            state["test"] = load_cifar2("test")[0][::4]  # 500 images, of both classes
        return state["test"]

    def session():
        import onnxruntime as ort

        if "session" not in state:
            path = file("export", "onnx")
            state["session"] = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
        return state["session"]

    def onnx_runs() -> str | None:
        inputs = session().get_inputs()
        if len(inputs) != 1:
            return f"the ONNX model takes {len(inputs)} inputs: export it with one, the images"
        (image,) = inputs
        if image.type != "tensor(uint8)":
            return (
                f"its input is {image.type}: export the model that takes the uint8 images "
                "itself (capstone 1's rule 3), with a uint8 example"
            )
        if isinstance(image.shape[0], int):
            return (
                f"its batch dimension is fixed to {image.shape[0]}: export with a dynamic batch, "
                "dynamic_shapes=({0: Dim('batch', min=1, max=...)},) and an example of 2 or "
                "more images (lesson 12)"
            )
        for n in (1, 37):
            logits = session().run(None, {image.name: test_images()[:n].numpy()})[0]
            if logits.shape[0] != n:
                return f"for {n} images it returns shape {logits.shape}: one row per image"
        return None

    def onnx_matches() -> str | None:
        name = session().get_inputs()[0].name
        images = test_images()
        onnx = torch.cat(
            [
                torch.from_numpy(session().run(None, {name: images[i : i + 100].numpy()})[0])
                for i in range(0, len(images), 100)
            ]
        )
        with torch.inference_mode():
            eager = torch.cat([model()(images[i : i + 100]) for i in range(0, len(images), 100)])
        difference = (onnx - eager).abs().max().item()
        print(f"    largest difference on {len(images)} test images: {difference:.1e}")
        if difference > ONNX_TOLERANCE:
            in_training = copy.deepcopy(model()).train()
            with torch.no_grad():
                trained = in_training(images[:100])
            if (onnx[:100] - trained).abs().max().item() <= ONNX_TOLERANCE:
                return (
                    "ONNX Runtime computes what your model computes in training mode (batch "
                    "norm's statistics of each batch, dropout): call model.eval() before export"
                )
            return (
                f"the logits differ by up to {difference:.1e} (more than {ONNX_TOLERANCE:g}): "
                "export the checkpoint's weights, the model of capstone 1, in eval mode"
            )
        reported = number("export", "max_difference")
        if not 0 <= reported <= ONNX_TOLERANCE:
            return (
                f"you report a difference of {reported:g}: measure the largest absolute "
                f"difference between ONNX Runtime's and the model's logits (at most "
                f"{ONNX_TOLERANCE:g})"
            )
        return None

    def serves() -> str | None:
        import httpx

        from helpers.serve import serve

        script, onnx = file("server", "script"), file("export", "onnx")
        images = test_images()[::25]  # 20 images
        with torch.inference_mode():
            expected = model()(images).argmax(dim=1).tolist()
        command = [sys.executable, str(script.resolve()), str(onnx.resolve()), "--port", "{port}"]
        try:
            with (
                serve(command, ready="/health", timeout=60, name="your server") as server,
                httpx.Client(base_url=server.url, timeout=30) as client,
            ):
                headers = {"content-type": "image/png"}
                answers = [
                    client.post("/predict", content=png_bytes(image), headers=headers)
                    for image in images
                ]
                bad = client.post("/predict", content=b"not an image", headers=headers)
        except (RuntimeError, TimeoutError) as err:
            last = str(err).strip().splitlines()[-1:] or [""]
            return f"it did not start and answer /health with 200: {last[0][:200]}"
        failed = [a for a in answers if a.status_code != 200]
        if failed:
            return (
                f"{len(failed)} of {len(answers)} PNG images got status "
                f"{failed[0].status_code}: {failed[0].text[:120]}"
            )
        got = []
        for answer in answers:
            try:
                body = answer.json()
            except ValueError:
                body = None
            if not isinstance(body, dict) or not isinstance(body.get("index"), int):
                return f'/predict answered {answer.text[:80]}: answer {{"index": the class}}'
            got.append(body["index"])
        wrong = sum(g != e for g, e in zip(got, expected, strict=True))
        if wrong:
            return (
                f"for {wrong} of {len(expected)} images its class is not your model's: decode "
                "the PNG to uint8 (channels first, a batch of one) as the model takes it"
            )
        if not 400 <= bad.status_code < 500:
            return (
                f"a body that is not an image got {bad.status_code}: answer 400 with a message "
                "(a 5xx says the server failed, not the request)"
            )
        return None

    def quoted() -> str | None:
        original = [line.strip() for line in BROKEN_RUN.read_text(encoding="utf-8").splitlines()]
        quotes = entry("bugs", "wrong_lines")
        if not isinstance(quotes, list) or not all(isinstance(q, str) for q in quotes):
            return "'wrong_lines' should be a list of strings, each a line of the run as given"
        quotes = [q.strip() for q in quotes if q.strip()]
        if len(quotes) > MAX_QUOTES:
            return f"you quote {len(quotes)} lines: name the wrong ones only, {MAX_QUOTES} at most"
        for q in quotes:
            if q not in original:
                return (
                    f"{q[:60]!r} is not a line of the run as given: quote whole lines, copied "
                    "from the run before your changes"
                )
        for part, marks in PLANTED.items():
            lines = {line for line in original if any(mark in line for mark in marks)}
            if not lines & set(quotes):
                return (
                    f"no quoted line holds the bug in {part}: {CHECKLIST[part]} (lesson 13's "
                    "checklist)"
                )
        return None

    def learns() -> str | None:
        run = file("bugs", "run").resolve()
        original = BROKEN_RUN.read_text(encoding="utf-8").splitlines()
        changed = _changed_lines(original, run.read_text(encoding="utf-8").splitlines())
        if changed > MAX_CHANGED:
            return (
                f"{changed} lines of the run differ from the run as given: fix the wrong lines "
                f"and keep the rest ({MAX_CHANGED} changed lines at most), so that it is the "
                "same run, fixed"
            )
        with tempfile.TemporaryDirectory(prefix="cookbook-p2-") as tmp:
            out = Path(tmp) / "history.json"
            try:
                result = subprocess.run(
                    [sys.executable, str(run), "--out", str(out)],
                    capture_output=True,
                    text=True,
                    timeout=600,
                    cwd=run.parent,
                    env=os.environ | {"OMP_NUM_THREADS": str(torch.get_num_threads())},
                )  # the notebook's threads: one per core took 1.6x the time with a core busy
            except subprocess.TimeoutExpired:
                return "it ran for more than 10 minutes: the run as given takes seconds"
            if result.returncode != 0 or not out.is_file():
                last = (result.stderr.strip().splitlines() or ["(no message)"])[-1]
                return f"it stopped with an error: {last[:200]}"
            history = json.loads(out.read_text(encoding="utf-8"))
        if not isinstance(history, dict) or not history.get("val_accuracy"):
            return "its --out file has no 'val_accuracy' list: keep the run's last lines as given"
        accuracy = float(history["val_accuracy"][-1])
        print(f"    your fixed run's validation accuracy after its last epoch: {accuracy:.3f}")
        if accuracy >= LEARNS:
            return None
        return (
            f"{accuracy:.3f} is below {LEARNS}: a bug is still in it; go through lesson 13's "
            "checklist on each part, the data, the model and the training step"
        )

    return [
        Criterion("the report is JSON with its five parts", parts),
        Criterion("each speed profile holds 3 or more training steps", speed_profiles),
        Criterion("the step times you report are the profiles' (within 10 %)", speed_claims),
        Criterion(f"your change makes a training step at least {SPEEDUP}× faster", faster),
        Criterion("each memory profile records memory inside its steps", memory_profiles),
        Criterion("the peaks you report are the profiles' (within 5 %)", memory_claims),
        Criterion(f"your lever cuts a step's peak memory by {MEMORY_CUT:.0%} or more", smaller),
        Criterion("the ONNX file runs in ONNX Runtime on uint8 batches of any size", onnx_runs),
        Criterion(
            f"ONNX Runtime's logits equal your model's within {ONNX_TOLERANCE:g}", onnx_matches
        ),
        Criterion("your server classifies PNG images as your model and refuses others", serves),
        Criterion("you quoted the wrong line of each part of the run", quoted),
        Criterion(
            f"your fixed run, the same run with its bugs fixed, reaches {LEARNS} accuracy", learns
        ),
    ]


def grade_production(
    report: Path | str, checkpoint: Path | str, model_class: type[nn.Module]
) -> bool:
    """Grade capstone 2 from its artefacts; print one line per criterion; return whether all hold.

    ``report``: the ``report.json`` of :data:`REPORT_KEYS`, beside the files it names;
    ``checkpoint`` and ``model_class``: capstone 1's checkpoint and model class (the ONNX file
    and the server are compared with this model).
    """
    problem = filled(report=report, checkpoint=checkpoint, model_class=model_class)
    if problem:
        print(f"✗ {problem}")
        return False
    results = run_criteria(production_criteria(report, checkpoint, model_class))
    return all(p is None for p in results.values())
