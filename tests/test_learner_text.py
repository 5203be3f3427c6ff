"""What a learner reads speaks of the course and of PyTorch: not of the notes the course grew from,
the repository's tests, the authoring tools, library source files or the authors' machines; and
no printed line is a bare value without a label.

Scanned: every notebook's markdown, printed output and code comments, and the indexes and the
workshop plan beside them (notebooks/*.md)."""

from __future__ import annotations

import io
import re
import tokenize
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("**/[0-9][0-9]_*.ipynb"))
PAGES = [*sorted((ROOT / "notebooks").glob("*.md")), ROOT / "README.md"]

INSIDER = {
    "the notes the course grew from": re.compile(
        r"\bthe seeds'|\bthe seeds (?:warn|recommend|name|describe|use|wrap)|\bsource notes?\b",
        re.I,
    ),
    "the repository's tests": re.compile(r"\btests/\w"),
    "the authoring tools": re.compile(r"\bhelpers[./]authoring\b"),
    # a path to a source file (not the runs/ and data/ folders the notebooks write), or a folder
    # of PyTorch's C++ sources
    "a library source file": re.compile(
        r"(?<![\w./-])(?!runs/|data/|work/)[\w.-]+(?:/[\w.-]+)+\.(?:cpp|cu|h|py)\b"
        r"|\b(?:c10|ATen|csrc)/\w|\blayer_info\.py\b"
    ),
    "the authors or their machines": re.compile(
        r"\b(?:the|this|our) (?:course's )?authors\b|\bour (?:CI |own )?(?:machine|laptop)s?\b"
        r"|\bcourse's (?:[\w-]+ )?CI machine\b",
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
        pieces.append((f"cell {i} (comments)", "\n".join(comments(cell.source))))
        streams: dict[str, str] = {}  # a stream may come in pieces: read it whole, as shown
        for output in cell.get("outputs", []):
            if output.get("output_type") == "stream":
                streams[output["name"]] = streams.get(output["name"], "") + "".join(output["text"])
                continue
            text = output.get("data", {}).get("text/plain", "")
            pieces.append((f"cell {i} (output)", "".join(text)))
        pieces += [(f"cell {i} (output)", text) for text in streams.values()]
    return pieces


def comments(source: str) -> list[str]:
    """Every comment of a code cell, whole-line and inline (IPython magics left out)."""
    code = "\n".join(
        "" if line.lstrip().startswith(("%", "!")) else line for line in source.splitlines()
    )
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(code + "\n").readline))
    except (tokenize.TokenError, SyntaxError):  # not Python: read it whole
        return [code]
    return [token.string for token in tokens if token.type == tokenize.COMMENT]


def findings(pieces: list[tuple[str, str]]) -> list[str]:
    found = []
    for where, text in pieces:
        for what, pattern in INSIDER.items():
            for match in pattern.finditer(text):
                context = text[max(0, match.start() - 40) : match.end() + 40].replace("\n", " ")
                found.append(f"{where}: {what}: …{context}…")
    return found


# A printed line made only of values (dtypes, booleans, numbers, shapes): the reader cannot tell
# what is what. Table rows (columns two spaces apart) and indented listings are not such lines.
BARE_VALUE = r"(?:torch\.\w+|True|False|None|-?\d[\d.e-]*|\([\d, ]*\)|torch\.Size\(\[[\d, ]*\]\))"
BARE_LINE = re.compile(rf"^{BARE_VALUE}(?: {BARE_VALUE})*$")


def unlabelled(pieces: list[tuple[str, str]]) -> list[str]:
    """Printed lines that are bare values, as 'where: line'."""
    return [
        f"{where}: {line}"
        for where, text in pieces
        if where.endswith("(output)")
        for line in text.splitlines()
        if line.strip() and not line.startswith(" ") and BARE_LINE.match(line.strip())
    ]


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_every_printed_value_is_labelled(path):
    assert unlabelled(learner_text(path)) == []


def test_the_label_scan_finds_bare_values_and_spares_tables():
    printed = "torch.int32 torch.int64\nTrue\n(32, 72)\ndtype: torch.float32\n    42\n0  1  0.5"
    assert unlabelled([("cell 1 (output)", printed)]) == [
        "cell 1 (output): torch.int32 torch.int64",
        "cell 1 (output): True",
        "cell 1 (output): (32, 72)",
    ]


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
        ("f", "see helpers/authoring/course.py and nn/modules/conv.py"),
        ("g", "the authors ran it on our CI machine"),
    ]
    assert len(findings(planted)) >= 8
    fine = "set the seeds of every generator; torch/torchvision pairs; Writing runs/10/x.py"
    assert findings([("h", fine)]) == []
    assert comments("x = 1  # see tests/a.py\n%%time\n# whole line") == [
        "# see tests/a.py",
        "# whole line",
    ]
