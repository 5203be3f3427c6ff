"""The tables printed at the end of `make test`: each notebook's duration, and each measured
claim the notebooks checked with the value it was judged on."""

from __future__ import annotations

import os
import tempfile
from collections import defaultdict

import pytest

from helpers.check import CLAIMS_LOG_ENV, read_claims


def pytest_configure(config: pytest.Config) -> None:
    """Give the notebooks' kernels (started by nbval, inheriting this environment) a claims log."""
    if not os.environ.get(CLAIMS_LOG_ENV):
        fd, path = tempfile.mkstemp(prefix="cookbook-claims-", suffix=".jsonl")
        os.close(fd)
        os.environ[CLAIMS_LOG_ENV] = path
        config._cookbook_claims_log = path  # removed after the summary


def pytest_unconfigure(config: pytest.Config) -> None:
    path = getattr(config, "_cookbook_claims_log", None)
    if path:
        os.unlink(path)
        os.environ.pop(CLAIMS_LOG_ENV, None)


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
    if seconds:
        terminalreporter.section("notebook durations")
        for notebook, total in sorted(seconds.items()):
            status = "FAILED" if notebook in failed else "ok"
            terminalreporter.write_line(f"{total:7.1f} s  {status:6}  {notebook}")
    claims = read_claims(os.environ.get(CLAIMS_LOG_ENV, ""))
    if claims:
        terminalreporter.section("measured claims (value measured in this run)")
        for record in claims:
            mark = "✓" if record["ok"] else "✗"
            terminalreporter.write_line(f"{mark} {record['measured']:>10}  {record['claim']}")
