"""What a new release changes: the report of `make drift` (and the weekly workflow).

`make drift` installs the newest releases that requirements.txt allows (no lock) into a venv of
its own, runs the tests and every notebook under nbval there with a JUnit XML log, and calls
this module, which writes ``build/drift/report.md`` (for people) and ``build/drift/report.json``
(for programs): the packages whose version differs from the lock, each notebook cell whose
output no longer matches the stored one (with nbval's diff), each checked claim that failed,
and each unit test that failed. Command line::

    python -m helpers.authoring.drift --junit build/drift/junit.xml --lock requirements-lock.txt \
        --python .venv-latest/bin/python --out build/drift

Exits 1 when a stored output, a check or a test changed (so a scheduled run that finds drift
fails and is noticed; new versions alone do not), 2 when the test run left no log, else 0.
"""

from __future__ import annotations

import argparse
import datetime
import json
import re
import subprocess
import sys
import xml.etree.ElementTree as ET
from dataclasses import asdict, dataclass
from pathlib import Path

PIN = re.compile(r"^([A-Za-z0-9_.\-]+)==([^\s;#]+)")
CELL = re.compile(r"::Cell (\d+)")
SHOWN_LINES = 25  # of each failure's message
MISMATCH = " mismatch '"  # nbval's word for a stored output that differs


@dataclass
class Failure:
    """One failed test: a notebook cell (``notebook`` and ``cell`` set) or a unit test."""

    test: str
    kind: str  # "output" (a stored output changed), "error" (the cell raised), "test"
    message: str
    notebook: str = ""
    cell: int | None = None


def pins(lines: list[str]) -> dict[str, str]:
    """``name==version`` lines as a dict keyed by the normalised name.

    >>> pins(["# made by make lock", "Torch==2.15.0", "numpy==2.4.6 ; python_version>'3'"])
    {'torch': '2.15.0', 'numpy': '2.4.6'}
    """
    found = {}
    for line in lines:
        match = PIN.match(line.strip())
        if match:
            found[re.sub(r"[-_.]+", "-", match[1]).lower()] = match[2]
    return found


def version_changes(locked: dict[str, str], newest: dict[str, str]) -> list[tuple[str, str, str]]:
    """(name, locked, newest) for every package whose version differs, new or gone included.

    >>> version_changes({"torch": "2.15.0", "six": "1.0"}, {"torch": "2.16.0", "rich": "14.0"})
    [('rich', '-', '14.0'), ('six', '1.0', '-'), ('torch', '2.15.0', '2.16.0')]
    """
    names = sorted(set(locked) | set(newest))
    return [
        (name, locked.get(name, "-"), newest.get(name, "-"))
        for name in names
        if locked.get(name) != newest.get(name)
    ]


def failures(junit: Path) -> tuple[int, list[Failure]]:
    """The number of tests in a JUnit XML log (pytest's ``junit_family=xunit1``, which names
    each test's file) and the failed ones, errors included."""
    root = ET.parse(junit).getroot()
    cases = list(root.iter("testcase"))
    found = []
    for case in cases:
        problem = case.find("failure")
        if problem is None:
            problem = case.find("error")
        if problem is None:
            continue
        name, file = case.get("name", ""), case.get("file") or ""
        text = problem.text or problem.get("message", "")
        if file.endswith(".ipynb"):
            cell = CELL.search(f"::{name}")
            kind = "output" if MISMATCH in text else "error"
            number = int(cell[1]) if cell else None
            found.append(Failure(f"{file}::{name}", kind, text, Path(file).name, number))
        else:
            found.append(Failure(f"{file or case.get('classname', '')}::{name}", "test", text))
    return len(cases), found


def report(
    versions: list[tuple[str, str, str]], tests: int, failed: list[Failure], day: str
) -> str:
    """The Markdown report."""
    outputs = [f for f in failed if f.kind == "output"]
    errors = [f for f in failed if f.kind == "error"]
    units = [f for f in failed if f.kind == "test"]
    lines = [
        f"# Drift report, {day}: the newest releases against the lock",
        "",
        f"- tests run: {tests}",
        f"- packages whose version differs from the lock: {len(versions)}",
        f"- notebook cells whose stored output changed: {len(outputs)}",
        f"- notebook cells that raised or whose check failed: {len(errors)}",
        f"- unit tests that failed: {len(units)}",
        "",
        "## Versions",
        "",
    ]
    if versions:
        lines += ["| package | lock | newest |", "|---|---|---|"]
        lines += [f"| {name} | {old} | {new} |" for name, old, new in versions]
    else:
        lines.append("The newest releases are the locked ones.")
    for title, group in (
        ("Changed outputs", outputs),
        ("Cells that raised or failed a check", errors),
        ("Unit tests that failed", units),
    ):
        lines += ["", f"## {title}", ""]
        if not group:
            lines.append("None.")
        for failure in group:
            where = f"{failure.notebook}, cell {failure.cell}" if failure.notebook else failure.test
            shown = failure.message.strip().splitlines()[:SHOWN_LINES]
            lines += [f"### {where}", "", "```", *shown, "```", ""]
    return "\n".join(lines).rstrip() + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m helpers.authoring.drift", description=__doc__)
    parser.add_argument("--junit", type=Path, required=True)
    parser.add_argument("--lock", type=Path, required=True)
    parser.add_argument("--python", type=Path, required=True, help="the newest releases' Python")
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args(argv)
    if not args.junit.is_file():
        print(f"drift: no test log at {args.junit}: the test run did not start", file=sys.stderr)
        return 2
    frozen = subprocess.run(
        [str(args.python), "-m", "pip", "freeze", "--exclude-editable"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.splitlines()
    versions = version_changes(pins(args.lock.read_text().splitlines()), pins(frozen))
    tests, failed = failures(args.junit)
    day = datetime.date.today().isoformat()
    args.out.mkdir(parents=True, exist_ok=True)
    text = report(versions, tests, failed, day)
    (args.out / "report.md").write_text(text)
    record = {
        "date": day,
        "tests": tests,
        "versions": [dict(zip(("package", "lock", "newest"), v, strict=True)) for v in versions],
        "failures": [asdict(f) for f in failed],
    }
    (args.out / "report.json").write_text(json.dumps(record, indent=1, ensure_ascii=False) + "\n")
    print(text)
    print(f"drift: report written to {args.out / 'report.md'}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
