"""The tables printed at the end of `make test`: each notebook's duration, and each measured
claim the notebooks checked with the value it was judged on. The durations also go to
`.cache/last-test-run.json`, which `make durations` records for the notebooks' headers."""

from __future__ import annotations

import datetime
import json
import os
import tempfile
from collections import Counter, defaultdict

import pytest
from kernel_death import add_items
from kernel_start import install as keep_kernel_stderr

from helpers.check import CLAIMS_LOG_ENV, STRICT_ENV, read_claims
from helpers.env import separate_compile_cache, spare_a_core


def pytest_configure(config: pytest.Config) -> None:
    """Give the notebooks' kernels (started by nbval, inheriting this environment) a claims log,
    and make timing claims strict: under the tests a claim that misses fails."""
    os.environ[STRICT_ENV] = "1"
    keep_kernel_stderr()  # a kernel that dies at start says why, and starts once more
    separate_compile_cache()  # under .ci/run's AVX2 settings: not the default paths' kernels
    spare_a_core()  # as the notebooks do: one thread per core spins while the other worker runs
    config.pluginmanager.register(RecheckAfterSolution(), "cookbook-recheck-after-solution")
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


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The longest notebooks first (by their recorded run times), then the rest: run side by
    side (`pytest -n 2 --dist loadfile`), the last file to finish is then a short one. After
    each notebook that starts processes, kill its kernel: nothing may outlive it."""
    from helpers.authoring.course import DURATIONS

    recorded = json.loads(DURATIONS.read_text()) if DURATIONS.is_file() else {}

    def weight(item: pytest.Item) -> float:
        notebook = item.nodeid.split("::", 1)[0]
        return recorded.get(notebook.rsplit("/", 1)[-1], {}).get("seconds", 0.0)

    items.sort(key=weight, reverse=True)  # stable: cells keep their order
    add_items(items)


def pytest_collection_finish(session: pytest.Session) -> None:
    """Count each notebook's cells, so that a notebook run in part is not recorded as run."""
    session.config._cookbook_cells = _cells(i.nodeid for i in session.items)


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_node_collection_finished(node, ids: list[str]) -> None:
    """The same count where pytest-xdist's workers collect (the controller collects nothing)."""
    node.config._cookbook_cells = _cells(ids)


def _cells(nodeids) -> Counter[str]:
    return Counter(n.split("::", 1)[0] for n in nodeids if ".ipynb::" in n)


def pytest_terminal_summary(
    terminalreporter: pytest.TerminalReporter, exitstatus: int, config: pytest.Config
) -> None:
    """Print how long each notebook took under nbval (kernel start and every cell)."""
    seconds: dict[str, float] = defaultdict(float)
    passed: Counter[str] = Counter()
    failed: set[str] = set()
    for reports in terminalreporter.stats.values():
        for report in reports:
            nodeid = getattr(report, "nodeid", "")
            if ".ipynb::" not in nodeid:
                continue
            notebook = nodeid.split("::", 1)[0]
            if not nodeid.endswith("::kill-the-kernel"):  # a test's own time, not the notebook's
                seconds[notebook] += getattr(report, "duration", 0.0)
            if getattr(report, "failed", False):
                failed.add(notebook)
            elif getattr(report, "when", "") == "call" and report.passed:
                passed[notebook] += 1
    cells = getattr(config, "_cookbook_cells", Counter())
    # A notebook counts as run only when every one of its cells passed in a run not interrupted.
    incomplete = {n for n in seconds if passed[n] != cells[n]}
    if exitstatus == pytest.ExitCode.INTERRUPTED:
        incomplete = set(seconds)
    if seconds:
        terminalreporter.section("notebook durations")
        for notebook, total in sorted(seconds.items()):
            status = "FAILED" if notebook in failed else "part" if notebook in incomplete else "ok"
            terminalreporter.write_line(f"{total:7.1f} s  {status:6}  {notebook}")
        if getattr(config.option, "numprocesses", None):  # side by side: not a notebook's own time
            terminalreporter.write_line(
                "(not recorded for the headers: files ran side by side; JOBS=0 records them)"
            )
        else:
            write_last_run(seconds, failed | incomplete)
    claims = read_claims(os.environ.get(CLAIMS_LOG_ENV, ""))
    if claims:
        terminalreporter.section("measured claims (value measured in this run)")
        for record in claims:
            mark = "✓" if record["ok"] else "✗"
            terminalreporter.write_line(f"{mark} {record['measured']!s:>10}  {record['claim']}")


class RecheckAfterSolution:
    """A plugin registered for the whole run: this conftest's own hooks reach only tests/."""

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_call(self, item: pytest.Item):
        return (yield from _recheck(item))


def _recheck(item: pytest.Item):
    """After nbval runs an exercise's solution, run that exercise's check cell again in the same
    kernel: it must print what it printed for the untouched starter (the solution uses its own
    names, so the learner's answer is still the one checked)."""
    result = yield
    cell = getattr(item, "cell", None)
    if cell is None or "solution" not in cell.metadata.get("tags", []):
        return result
    cells = item.parent.nb.cells
    here = next(i for i, c in enumerate(cells) if c is cell)
    check = cells[here - 2]  # task, starter, check, "#### Solution", solution
    expected = "".join(o.get("text", "") for o in check.outputs if o.output_type == "stream")
    got = _rerun(item.parent.kernel, check.source)
    # Compared without trailing whitespace: a print's newline can come as a message of its own
    # (08's stored check output has it so), and one run of 08 read a different rerun output,
    # likely that newline arriving after the idle status that ends the reading above.
    assert got.rstrip() == expected.rstrip(), (
        f"after the solution, the check cell prints {got!r}, not {expected!r} as for the starter: "
        "the solution changed what the learner's check reads"
    )
    return result


def _rerun(kernel, source: str, timeout: float = 120) -> str:
    """Execute ``source`` in nbval's kernel and return what it printed."""
    msg_id = kernel.execute_cell_input(source, allow_stdin=False)
    kernel.await_reply(msg_id, timeout=timeout)
    printed = []
    while True:
        msg = kernel.get_message(stream="iopub", timeout=timeout)
        if msg["parent_header"].get("msg_id") != msg_id:
            continue
        if msg["msg_type"] == "stream":
            printed.append(msg["content"]["text"])
        elif msg["msg_type"] == "error":
            printed.append(f"{msg['content']['ename']}: {msg['content']['evalue']}")
        elif msg["msg_type"] == "status" and msg["content"]["execution_state"] == "idle":
            return "".join(printed)


def write_last_run(seconds: dict[str, float], failed: set[str]) -> None:
    """Keep this run's notebook durations for `make durations` (helpers.authoring.course)."""
    import torch

    from helpers.authoring.course import LAST_RUN, ROOT
    from helpers.env import cpu_model, cpu_name

    names = {nodeid: nodeid.rsplit("/", 1)[-1] for nodeid in seconds}
    paths = {nodeid: ROOT / nodeid for nodeid in seconds}  # node ids are relative to the root
    run = {
        "date": str(datetime.date.today()),
        "machine": cpu_name(),
        "cpu_model": cpu_model(),  # one name covers CPUs of different speeds
        "isa": torch.backends.cpu.get_cpu_capability(),  # AVX2 under .ci/run's settings
        "torch": torch.__version__.split("+")[0],
        "notebooks": {names[n]: round(total, 1) for n, total in seconds.items()},
        "ok": {names[n]: n not in failed for n in seconds},
        "sources": {names[n]: _source(paths[n]) for n in seconds},
    }
    LAST_RUN.parent.mkdir(exist_ok=True)
    LAST_RUN.write_text(json.dumps(run, indent=1, ensure_ascii=False) + "\n")


def _source(path) -> str | None:
    """The measured twin's hash; None for a notebook that is not one of the course's."""
    from helpers.authoring.course import source_hash

    try:
        return source_hash(path)
    except FileNotFoundError:
        return None


@pytest.fixture
def script_07(tmp_path):
    """Chapter 07's training script exactly as its `%%writefile` cell writes it, in tmp_path
    (skipped where CIFAR2, which it trains on, is not fetched)."""
    from pathlib import Path

    from helpers.authoring import course

    if not (Path(__file__).resolve().parents[1] / "data" / "cifar2").is_dir():
        pytest.skip("CIFAR2 is not fetched (make data)")
    script = tmp_path / "train_cifar2.py"
    notebook = course.read(course.COOKBOOK / "07_training_loop_recipes.ipynb")
    script.write_text(course.written_files(notebook)["runs/train_cifar2.py"])
    return script
