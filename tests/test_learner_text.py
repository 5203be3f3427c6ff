"""What a learner reads speaks of the course and of PyTorch: not of the notes the course grew from,
the repository's tests, the authoring tools, library source files or the authors' machines.

Scanned: every notebook's markdown, printed output and code comments, and the indexes and the
workshop plan beside them (notebooks/*.md)."""

from __future__ import annotations

import re
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))
PAGES = sorted((ROOT / "notebooks").glob("*.md"))

INSIDER = {
    "the notes the course grew from": re.compile(r"\bthe seeds\b|\bsource notes?\b", re.I),
    "the repository's tests": re.compile(r"\btests/\w"),
    "the authoring tools": re.compile(r"\bhelpers\.authoring\b"),
    "a library source file": re.compile(
        r"\b(?:c10|ATen|aten|torch|csrc)/[\w/.]*|\b\w+\.(?:cpp|cu|h)\b|\blayer_info\.py\b"
    ),
    "the authors or their machines": re.compile(
        r"\b(?:course's|our) authors\b|\bauthors' machines?\b|\bcourse's (?:[\w-]+ )?CI machine\b",
        re.I,
    ),
}


def learner_text(path: Path) -> list[tuple[str, str]]:
    """(where, text) for each piece of a notebook a learner reads."""
    nb = nbformat.read(path, as_version=4)
    pieces = []
    for i, cell in enumerate(nb.cells):
        if cell.cell_type == "markdown":
            pieces.append((f"cell {i} (markdown)", cell.source))
            continue
        if cell.cell_type != "code":
            continue
        comments = [line for line in cell.source.splitlines() if line.lstrip().startswith("#")]
        pieces.append((f"cell {i} (comments)", "\n".join(comments)))
        for output in cell.get("outputs", []):
            text = output.get("text") or output.get("data", {}).get("text/plain", "")
            pieces.append((f"cell {i} (output)", "".join(text)))
    return pieces


def findings(pieces: list[tuple[str, str]]) -> list[str]:
    found = []
    for where, text in pieces:
        for what, pattern in INSIDER.items():
            for match in pattern.finditer(text):
                context = text[max(0, match.start() - 40) : match.end() + 40].replace("\n", " ")
                found.append(f"{where}: {what}: …{context}…")
    return found


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_a_notebook_speaks_to_learners_only(path):
    assert findings(learner_text(path)) == []


@pytest.mark.parametrize("path", PAGES, ids=lambda p: p.name)
def test_the_indexes_and_plans_speak_to_learners_only(path):
    assert findings([(path.name, path.read_text())]) == []


def test_the_scan_finds_what_it_looks_for():
    planted = [
        ("a", "The seeds recommend this."),
        ("b", "see tests/test_dist.py"),
        ("c", "python -m helpers.authoring.course"),
        ("d", "in c10/cuda/CUDACachingAllocator.cpp"),
        ("e", "no GPU was available to this course's authors"),
    ]
    assert len(findings(planted)) >= 5
    assert findings([("f", "seed 0, then three seeds; torch.cuda.synchronize()")]) == []
