"""A number in a notebook's prose that reports a measurement is printed by a cell.

Each round's rewrite brought new numbers in prose that no output showed, or that drifted from
it. This finds them: in every lesson and cookbook page, each decimal number, percentage, ratio
(×) and quantity with a unit (ms, s, MiB, ...) of the text must round from a number the
notebook prints or sets in its code, or one that a notebook it links to prints. Version
numbers, sizes written ``N × M`` and formulas are not measurements; the few other numbers
that are not (a range to try, a documented default) are listed below with the reason.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from helpers.authoring import course

UNITS = r"%|×|ms\b|µs\b|s\b|MiB|GiB|KiB|MB\b|GB\b|kB\b"
# A decimal number, or a number followed by a unit; not part of a longer dotted number (an IP
# address, a version with three parts) or of a word.
PROSE_NUMBER = re.compile(
    rf"(?<![\w.\-/^])(?P<value>\d[\d,]*(?:\.\d+)?)(?![\d.]*\.\d)(?:\s?(?P<unit>{UNITS}))?"
)
VERSION_BEFORE = re.compile(
    r"(?:PyTorch|torch|Python|torchvision|torchinfo|torchao|tensorboardX|NumPy|ONNX|opset|"
    r"version|since|before|after|until|up to|from|removed in|names)\s*$",
    re.IGNORECASE,
)
UNIT_CHARS = "%×"
OUTPUT_NUMBER = re.compile(rf"(?<![\w.])(\d[\d,]*(?:\.\d+)?)(?:e[+-]?\d+)?\s?({UNITS}|x\b)?")
# (notebook, number as written) -> why it is not a measurement.
NOT_MEASURED = {
    ("03_autograd.ipynb", "0.1"): "a learning rate for the reader to try",
    ("07_training_loop.ipynb", "0.001"): "the usual range of learning rates to try for AdamW",
    ("07_training_loop.ipynb", "30%"): "OneCycleLR's documented default warm-up share",
    ("10_speedups.ipynb", "20 ms"): "the delays the toy loader is given, as the text says",
    ("06_losses_recipes.ipynb", "0.75"): "a value other examples use for focal loss's alpha",
    ("06_losses_recipes.ipynb", "80%"): "the precision the comparison is asked at",
    ("09_ddp_syncbn_recipes.ipynb", "25 MiB"): "DDP's documented default bucket size",
    # COCO's definition (matched only by chance before: lesson 07 printed an accuracy of 0.9490)
    ("07_training_loop_detection_recipes.ipynb", "0.50"): "COCO's lowest IoU threshold",
    ("07_training_loop_detection_recipes.ipynb", "0.95"): "COCO's highest IoU threshold",
}


def prose(cell_source: str) -> str:
    """A markdown cell's text without code, link targets, formulas and the generated header."""
    text = re.sub(r"`[^`]*`", " ", cell_source)
    text = re.sub(r"\]\([^)]*\)", "]", text)
    text = re.sub(r"\$[^$]*\$", " ", text)
    return re.sub(r"^\*\*(Run|Study) time:\*\*.*$", " ", text, flags=re.M)


def measured_numbers(cell_source: str) -> list[tuple[str, float, int, str]]:
    """Each number of the text that reads like a measurement: (as written, value, decimals,
    unit)."""
    text = prose(cell_source)
    found = []
    for match in PROSE_NUMBER.finditer(text):
        value, unit = match["value"], match["unit"] or ""
        before, after = text[: match.start()], text[match.end() :]
        if "." not in value and not unit:
            continue  # a count or a size: 64 images, 2 epochs
        if VERSION_BEFORE.search(before[-20:]) or re.match(r"\s?[×x]\s?\d", after):
            continue  # torch 2.6, Python 3.14; 2,000 × 64
        if unit == "×" and re.match(r"\s?\d", after):
            continue
        if before.rstrip().endswith(("≈", "=")):
            continue  # a formula's value: ln 2 ≈ 0.693
        decimals = len(value.split(".")[1]) if "." in value else 0
        written = f"{value}{' ' if match.group(0)[len(value) :].startswith(' ') else ''}{unit}"
        found.append((written, float(value.replace(",", "")), decimals, unit))
    return found


def printed(nb) -> tuple[list[tuple[float, str, int]], set[str]]:
    """What a notebook shows: each number its outputs print (value, the unit after it, its
    decimals), and the numbers its code holds, as written."""
    outputs, code = [], set()
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        code |= set(re.findall(r"\d[\d_]*(?:\.\d+)?", cell.source))
        for output in cell.get("outputs", []):
            texts = [output.get("text", "")]
            for kind, value in output.get("data", {}).items():
                if kind.startswith("text/"):
                    texts.append(value if isinstance(value, str) else "".join(value))
            for number, unit in OUTPUT_NUMBER.findall("\n".join(texts)):
                decimals = len(number.split(".")[1]) if "." in number else 0
                value = float(number.replace(",", ""))
                outputs.append((value, "×" if unit == "x" else unit, decimals))
    return outputs, code


def linked(path: Path, nb) -> list[Path]:
    """The notebooks a notebook's text links to."""
    targets = set()
    for cell in nb.cells:
        if cell.cell_type == "markdown":
            targets |= set(re.findall(r"\]\(([^)#\s]+\.ipynb)", cell.source))
    return [p for p in ((path.parent / t).resolve() for t in sorted(targets)) if p.is_file()]


def matches(written: str, value: float, decimals: int, unit: str, shown) -> bool:
    """Whether the notebooks show the number: printed with the same unit (a share also as a
    fraction), at least as precisely, rounding to it; or written as is in their code."""
    outputs, code = shown
    if written.split()[0].rstrip(UNIT_CHARS).replace(",", "") in code:
        return True
    half = 0.5 * 10**-decimals + 1e-9
    for number, after, shown_decimals in outputs:
        if unit == "%" and not after and number < 1.5 and shown_decimals >= decimals + 2:
            number, after, shown_decimals = number * 100, "%", shown_decimals - 2
        if after == unit and shown_decimals >= decimals and abs(number - value) <= half:
            return True
    return False


def unprinted(path: Path, nb) -> list[str]:
    """The measured numbers of a notebook's text that no cell shows, with their lines."""
    shown = printed(nb)
    for other in linked(path, nb):
        outputs, _ = printed(course.read(other))
        shown[0].extend(outputs)
    missing = []
    for cell in nb.cells:
        if cell.cell_type != "markdown":
            continue
        for written, value, decimals, unit in measured_numbers(cell.source):
            if (path.name, written) in NOT_MEASURED or matches(
                written, value, decimals, unit, shown
            ):
                continue
            line = next((s for s in cell.source.splitlines() if written in s), "")
            missing.append(f"{written!r} in: {line.strip()[:100]}")
    return missing


@pytest.mark.parametrize(
    "path", course.lesson_paths() + course.cookbook_paths(), ids=lambda p: p.name
)
def test_every_measured_number_in_the_text_is_printed(path: Path):
    missing = unprinted(path, course.read(path))
    assert not missing, f"{path.name}: numbers no cell prints:\n" + "\n".join(missing)


def test_a_number_that_drifted_from_its_output_is_found():
    import nbformat

    path = course.NOTEBOOKS / "07_training_loop.ipynb"
    nb = course.read(path)
    nb.cells.append(
        nbformat.v4.new_markdown_cell("It reached 0.4242 accuracy, 13.7× faster, in 9137 ms.")
    )
    assert [m.split(" in:")[0] for m in unprinted(path, nb)] == ["'0.4242'", "'13.7×'", "'9137 ms'"]


def test_the_finder_reads_measurements_not_versions_sizes_or_formulas():
    text = (
        "Since PyTorch 2.6 the default; Python 3.14 too. A 2,000 × 64 matrix, 40×40 pixels, "
        "ln 2 ≈ 0.693, `lr=0.25` in code, [link](x_1.5.ipynb), 127.0.0.1, 64 images. "
        "It reached 0.8916 accuracy, 1.88× faster, 21 MiB, 95% of the time, 12.5 ms a step."
    )
    written = [w for w, *_ in measured_numbers(text)]
    assert written == ["0.8916", "1.88×", "21 MiB", "95%", "12.5 ms"]
    shown = (
        [(21.10, "MiB", 2), (0.9512, "", 4), (0.8916, "", 4), (3.0, "%", 0), (0.5, "", 1)],
        {"0.005"},
    )
    assert matches("21 MiB", 21.0, 0, "MiB", shown) and not matches("21 s", 21.0, 0, "s", shown)
    assert matches("95%", 95.0, 0, "%", shown) and not matches("0.88", 0.88, 2, "", shown)
    assert matches("0.005", 0.005, 3, "", shown) and not matches("3", 3.0, 0, "", shown)
    assert not matches("50%", 50.0, 0, "%", shown) and not matches("0.88", 0.88, 2, "", shown)
