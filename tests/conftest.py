"""The per-notebook duration table printed at the end of `make test`."""

from __future__ import annotations

from collections import defaultdict

import pytest


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """Print how long each notebook took under nbval (kernel start and every cell)."""
    seconds: dict[str, float] = defaultdict(float)
    failed: set[str] = set()
    for reports in terminalreporter.stats.values():
        for report in reports:
            nodeid = getattr(report, "nodeid", "")
            if ".ipynb::" not in nodeid:
                continue
            notebook = nodeid.split("::", 1)[0]
            seconds[notebook] += getattr(report, "duration", 0.0)
            if getattr(report, "failed", False):
                failed.add(notebook)
    if not seconds:
        return
    terminalreporter.section("notebook durations")
    for notebook, total in sorted(seconds.items()):
        status = "FAILED" if notebook in failed else "ok"
        terminalreporter.write_line(f"{total:7.1f} s  {status:6}  {notebook}")
