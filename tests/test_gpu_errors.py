"""Errors the notebooks list as "GPU only" (`course.gpu_only_errors`) cannot be raised on the CPU
that builds ERRORS.md, so their text is copied from torch. These tests keep the copy honest: each
constant piece of each message must still occur in the installed torch, in its Python sources or
in the strings compiled into its libraries (torch/lib, and the CUDA runtime wheels whose
``cudaGetErrorString`` texts end up in ``CUDA error: ...`` messages)."""

import re
import subprocess
from pathlib import Path

import pytest
import torch

from helpers.authoring import course

PATHS = course.notebook_paths()
SITE = Path(torch.__file__).parent.parent
# What varies from one run to the next inside a message: devices, sizes, numbers. A message
# may also mark a varying part with "…". Pieces shorter than this are not checked.
VARIES = re.compile(
    r"…|: |\(torch\.[\w.]+\)|\bcuda:\d+\b|\bcpu\b|\b\d+(?:\.\d+)?(?: [KMGT]?i?B)?\b"
)
# Python sources split long messages into adjacent literals: "... with " "multiprocessing ...".
ADJACENT_LITERALS = re.compile(r"([\"'])\s*\n\s*[rf]?\1")
SHORTEST = 10


def listed() -> list[tuple[str, str, str, str]]:
    return [(course.rel(p), *e) for p in PATHS for e in course.gpu_only_errors(course.read(p))]


def pieces(message: str) -> list[str]:
    """Return the constant pieces of a message that must occur in torch as they are."""
    parts = (part.strip(" .,!'\"") for part in VARIES.split(message))
    return [part for part in parts if len(part) >= SHORTEST]


def libraries() -> list[Path]:
    found = sorted((SITE / "torch" / "lib").glob("*.so*"))
    found += sorted(SITE.glob("nvidia/*/lib/*.so*"))
    return found or sorted((SITE / "torch" / "lib").glob("*.dll")) + sorted(
        (SITE / "torch" / "lib").glob("*.dylib")
    )


def occurs_in_torch(texts: set[str]) -> set[str]:
    """Return which of ``texts`` occur in torch's Python sources or compiled libraries."""
    found = set()
    sources = "\n".join(
        ADJACENT_LITERALS.sub("", p.read_text(errors="ignore"))
        for p in (SITE / "torch").rglob("*.py")
        if p.is_file()
    )
    found |= {t for t in texts if t in sources}
    for lib in libraries():
        for text in sorted(texts - found):
            if subprocess.run(["grep", "-qaF", text, str(lib)], check=False).returncode == 0:
                found.add(text)
    return found


def test_gpu_only_errors_are_listed_and_marked_in_the_error_index():
    errors = listed()
    assert errors, "no notebook lists a GPU-only error"
    text = course.ERRORS_MD.read_text()
    for name, ename, message, heading in errors:
        assert heading, f"{name}: a GPU-only error before any heading"
        assert message == message.strip() and len(pieces(message)) >= 1, message
        row = f"| `{ename}` | **GPU only:** `{course._cell_text(message)}` |"
        assert row in text, f"ERRORS.md is stale for {message!r} (make index)"
        assert f"({name}#{course.anchor(heading)})" in text


@pytest.mark.skipif(not libraries(), reason="torch's compiled libraries not found")
def test_gpu_only_error_texts_occur_in_the_installed_torch():
    wanted = {piece for *_, message, _ in listed() for piece in pieces(message)}
    missing = wanted - occurs_in_torch(wanted)
    assert not missing, f"not in torch {torch.__version__}: {sorted(missing)}"


def test_pieces_split_off_what_varies():
    message = (
        "Expected all tensors to be on the same device, "
        "but found at least two devices, cuda:0 and cpu!"
    )
    assert pieces(message) == [
        "Expected all tensors to be on the same device, but found at least two devices"
    ]
    assert pieces("CUDA error: device-side assert triggered") == [
        "CUDA error",
        "device-side assert triggered",
    ]
    assert pieces("CUDA out of memory. Tried to allocate 2.00 GiB") == [
        "CUDA out of memory. Tried to allocate"
    ]
