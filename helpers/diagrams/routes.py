"""The picture of a trained model's three forms: a ``state_dict`` file, a ``torch.export``
program (``.pt2``) and an ONNX file, each described from the file itself (what it holds, its
size), with what it takes to run it.

>>> files = {"state_dict": "m.pt", "program": "m.pt2", "onnx": "m.onnx"}
>>> fig = draw_routes(files)  # doctest: +SKIP
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

import matplotlib.pyplot as plt
import torch
from matplotlib.figure import Figure
from matplotlib.patches import FancyArrowPatch, FancyBboxPatch

FORMS = ("state_dict", "program", "onnx")
MADE_WITH = {
    "state_dict": "torch.save(model.state_dict())",
    "program": "torch.export.export, .save",
    "onnx": "torch.onnx.export",
}
RUNS_IN = {
    "state_dict": "PyTorch, with the model's\nPython code and the\narguments it was built with",
    "program": "PyTorch,\nwithout the model's code",
    "onnx": "ONNX Runtime, from Python,\nC++, C#, Java, JavaScript,\nwithout PyTorch",
}
WIDTH, ROW, TOP = 7.0, 1.0, 0.75  # inches
MODEL_W, MODEL_H, FILE_X, FILE_W, RUN_X, RUN_W, BOX_H = 1.25, 1.0, 1.8, 2.45, 4.7, 2.2, 0.8
FILE_COLOUR, RUN_COLOUR, MODEL_COLOUR = "#c6dbef", "#c7e9c0", "#eeeeee"


def describe_file(form: str, path: str | os.PathLike[str]) -> str:
    """Return what the file of a model's ``form`` holds, read from the file: its tensors (a
    ``state_dict``), its recorded operations (a program) or its operators (ONNX).

    Raises ``ValueError`` for an unknown form or a file that does not hold that form.
    """
    path = Path(path)
    if form == "state_dict":
        state = torch.load(path, weights_only=True)
        if not isinstance(state, Mapping) or not all(
            isinstance(v, torch.Tensor) for v in state.values()
        ):
            raise ValueError(f"{path.name} does not hold a state_dict (names → tensors)")
        return f"{len(state)} tensors, no code"
    if form == "program":
        try:
            program = torch.export.load(path)
        except Exception as error:
            raise ValueError(f"{path.name} is not a torch.export program: {error}") from None
        operations = sum(node.op == "call_function" for node in program.graph.nodes)
        return f"{operations} operations + weights"
    if form == "onnx":
        import onnx

        try:
            model = onnx.load(path)
        except Exception as error:
            raise ValueError(f"{path.name} is not an ONNX file: {error}") from None
        if not model.graph.node:
            raise ValueError(f"{path.name} holds no ONNX graph")
        return f"{len(model.graph.node)} ONNX operators + weights"
    raise ValueError(f"form is one of {FORMS}, got {form!r}")


def _box(ax, x: float, y: float, w: float, colour: str, text: str, h: float = BOX_H) -> None:
    """A rounded box with its lower left corner at (x, y), and text in it."""
    ax.add_patch(
        FancyBboxPatch((x, y), w, h, boxstyle="round,pad=0.03", facecolor=colour, edgecolor="k")
    )
    ax.text(x + 0.1, y + h / 2, text, va="center", linespacing=1.35, fontsize=8.5)


def _arrow(ax, start: tuple[float, float], end: tuple[float, float]) -> None:
    ax.add_patch(FancyArrowPatch(start, end, arrowstyle="->", mutation_scale=12, lw=1.3))


def draw_routes(files: Mapping[str, str | os.PathLike[str]]) -> Figure:
    """Return a figure of a trained model's three forms, one row each: the file (its name, the
    call that made it, what it holds and its size, read from the file) and what runs it.

    ``files`` maps each of ``"state_dict"``, ``"program"`` and ``"onnx"`` to its file. Raises
    ``ValueError`` when a form is missing or unknown or a file does not hold its form, and
    ``FileNotFoundError`` when a file does not exist.
    """
    if set(files) != set(FORMS):
        raise ValueError(f"files needs exactly the forms {FORMS}, got {sorted(files)}")
    paths = {form: Path(files[form]) for form in FORMS}
    for path in paths.values():
        if not path.is_file():
            raise FileNotFoundError(f"no such file: {path}")
    rows = {
        form: "\n".join(
            [
                path.name,
                MADE_WITH[form],
                describe_file(form, path),
                f"{path.stat().st_size / 1000:,.0f} kB",
            ]
        )
        for form, path in paths.items()
    }

    height = TOP + ROW * len(FORMS)
    fig = plt.figure(figsize=(WIDTH, height))
    ax = fig.add_axes((0, 0, 1, 1))
    ax.set(xlim=(0, WIDTH), ylim=(0, height))
    ax.axis("off")
    ax.text(0.1, height - 0.3, "One trained model, three files", fontsize=12, weight="bold")
    ax.text(FILE_X + 0.1, height - 0.6, "the file", fontsize=9, style="italic")
    ax.text(RUN_X + 0.1, height - 0.6, "what runs it", fontsize=9, style="italic")
    centre = height - TOP - ROW - BOX_H / 2 + 0.05  # level with the second row
    model = "the trained\nmodel, an\nnn.Module\nin memory"
    _box(ax, 0.1, centre - MODEL_H / 2, MODEL_W, MODEL_COLOUR, model, h=MODEL_H)
    for k, form in enumerate(FORMS):
        y = height - TOP - k * ROW - BOX_H + 0.05  # the box's lower edge
        _box(ax, FILE_X, y, FILE_W, FILE_COLOUR, rows[form])
        _box(ax, RUN_X, y, RUN_W, RUN_COLOUR, RUNS_IN[form])
        _arrow(ax, (0.1 + MODEL_W + 0.05, centre), (FILE_X - 0.05, y + BOX_H / 2))
        _arrow(ax, (FILE_X + FILE_W + 0.05, y + BOX_H / 2), (RUN_X - 0.05, y + BOX_H / 2))
    return fig
