"""Nothing a notebook starts outlives its kernel: a pytest plugin for the nbval run.

For each notebook that starts a process (a server, TensorBoard, torchrun's ranks, DataLoader
workers, a script), one test item runs after the notebook's last cell, in nbval's kernel (one a
notebook: a kernel dies once). It runs the cell that starts the process again, kills the kernel
with SIGKILL while the process runs (as a crash, an out-of-memory kill or a forced restart
would), and checks that every process the cell started has ended within ``GRACE_S`` seconds.
Survivors are killed, and the test fails naming them.
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import time
from dataclasses import dataclass

import psutil
import pytest

GRACE_S = 15.0  # DataLoader workers look for their parent every 5 s
START_S = 90.0  # for the cell to start what it starts


@dataclass(frozen=True)
class Starter:
    """A cell that starts processes: a substring of its source, a pattern that one of the
    started processes' command lines matches once it runs, and how many processes must run."""

    cell: str
    running: str
    least: int = 1


WORKER = r"ipykernel|multiprocessing"  # a DataLoader worker: forked, spawned or forkserver

# Notebook path (from the repository root) -> the cells whose processes are checked.
STARTERS: dict[str, Starter] = {
    "notebooks/08_tensorboard.ipynb": Starter("board.show(LOGS", r"tensorboard", 2),
    "notebooks/09_ddp_syncbn.ipynb": Starter("torchrun(", r"torch\.distributed\.run", 4),
    "notebooks/10_speedups.ipynb": Starter("num_workers=2", WORKER, 2),
    "notebooks/12_deployment.ipynb": Starter('serve(command, ready="/health")', r"server\.py", 2),
    "notebooks/cookbook/05_datasets_dataloaders_recipes.ipynb": Starter("num_workers=2", WORKER, 2),
    "notebooks/cookbook/07_training_loop_recipes.ipynb": Starter(
        "def start(*flags", r"train_cifar2\.py", 4
    ),
    "notebooks/cookbook/08_tensorboard_recipes.ipynb": Starter("board.serve(", r"tensorboard", 2),
    "notebooks/cookbook/09_ddp_syncbn_recipes.ipynb": Starter(
        "torchrun(", r"torch\.distributed\.run", 4
    ),
    "notebooks/cookbook/09_ddp_syncbn_big_models_recipes.ipynb": Starter(
        "torchrun(", r"torch\.distributed\.run", 4
    ),
    "notebooks/cookbook/10_speedups_recipes.ipynb": Starter("def bf16_steps(", r"bf16_step\.py", 2),
    "notebooks/cookbook/12_deployment_recipes.ipynb": Starter("serve(", r"server\.py", 2),
    "notebooks/cookbook/13_reproducibility_debugging_recipes.ipynb": Starter(
        "debug.Stalls(8, stall_at=5)", WORKER, 1
    ),
}


def processes_below(pid: int) -> dict[int, psutil.Process]:
    try:
        return {p.pid: p for p in psutil.Process(pid).children(recursive=True)}
    except psutil.NoSuchProcess:
        return {}


def _runs(process: psutil.Process) -> bool:
    """Whether ``process`` still runs: a zombie has ended (in a container whose first process
    reaps nothing, an orphan's zombie stays)."""
    try:
        return process.is_running() and process.status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


def _command(process: psutil.Process) -> str:
    with contextlib.suppress(psutil.Error):
        return " ".join(process.cmdline())
    return "?"


class KernelDeath(pytest.Item):
    """Kill the notebook's kernel while a cell's processes run; nothing may survive it."""

    def __init__(self, *, starter: Starter, **kwargs) -> None:
        super().__init__(**kwargs)
        self.starter = starter

    def runtest(self) -> None:
        if not hasattr(signal, "SIGKILL"):
            pytest.skip("SIGKILL is POSIX's")
        kernel = self.parent.kernel
        if kernel is None or not kernel.is_alive():
            pytest.fail("the notebook's kernel is not running (an earlier cell failed?)")
        cells = [c for c in self.parent.nb.cells if c.cell_type == "code"]
        source = next((c.source for c in cells if self.starter.cell in c.source), None)
        assert source, f"no code cell holds {self.starter.cell!r}: update tests/kernel_death.py"
        pid = kernel.km.provisioner.process.pid
        before = set(processes_below(pid))
        kernel.execute_cell_input(source, allow_stdin=False)
        started = self._wait_for_start(pid, before)
        started.update({k: v for k, v in processes_below(pid).items() if k not in before})
        running = [p for p in started.values() if _runs(p)]
        assert len(running) >= self.starter.least, (
            f"only {len(running)} of the processes the cell started still ran at the kill: "
            "the cell ended before the test could kill its kernel"
        )
        os.kill(pid, signal.SIGKILL)
        with contextlib.suppress(Exception):
            kernel.kc.stop_channels()
        deadline = time.monotonic() + GRACE_S
        while time.monotonic() < deadline and any(_runs(p) for p in running):
            time.sleep(0.1)
        alive = [p for p in running if _runs(p)]
        survivors = [_command(p) for p in alive]
        for process in alive:
            with contextlib.suppress(psutil.Error):
                process.kill()
        assert not survivors, (
            f"{len(survivors)} of the {len(started)} processes the cell started outlived its "
            f"kernel by {GRACE_S:g} s: " + "; ".join(survivors)
        )

    def _wait_for_start(self, pid: int, before: set[int]) -> dict[int, psutil.Process]:
        """The processes the cell started, once the expected ones run."""
        pattern = re.compile(self.starter.running)
        deadline = time.monotonic() + START_S
        while time.monotonic() < deadline:
            new = {k: v for k, v in processes_below(pid).items() if k not in before}
            if len(new) >= self.starter.least and any(
                pattern.search(_command(p)) for p in new.values()
            ):
                time.sleep(0.3)  # let what they start in turn begin too
                new.update({k: v for k, v in processes_below(pid).items() if k not in before})
                return new
            time.sleep(0.05)
        pytest.fail(
            f"the cell did not start {self.starter.least} processes, one matching "
            f"{self.starter.running!r}, within {START_S:g} s"
        )

    def reportinfo(self):
        return self.path, None, f"{self.name}: kill the kernel while {self.starter.cell!r} runs"


def add_items(items: list[pytest.Item]) -> None:
    """Put a :class:`KernelDeath` item after the last cell of each notebook in STARTERS."""
    last: dict[str, int] = {}
    for index, item in enumerate(items):
        notebook = item.nodeid.split("::", 1)[0]
        if notebook in STARTERS and ".ipynb::" in item.nodeid:
            last[notebook] = index
    for notebook, index in sorted(last.items(), key=lambda kv: -kv[1]):
        parent = items[index].parent
        item = KernelDeath.from_parent(parent, name="kill-the-kernel", starter=STARTERS[notebook])
        items.insert(index + 1, item)
