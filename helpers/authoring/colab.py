"""Run the notebooks the way Colab does, without Colab: `make test-colab` calls this.

Each notebook is copied alone into an empty folder and executed top to bottom by a kernel of
another Python environment (``--python``: a fresh venv holding only what a notebook's setup
cell installs, ``pip install ".[notebooks]"`` at the newest releases, no lock). Cell tags are
removed first, since Colab and some editors ignore them: a cell that raises stops the notebook,
as *Run all* would. Data comes from ``$COOKBOOK_DATA_MIRROR`` into the folder's ``./data``.
Timing claims are not strict here, as on a learner's machine: a miss prints ``✗`` and is
counted, not failed. Command line::

    python -m helpers.authoring.colab --python .venv-colab/bin/python [NB ...]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from helpers.authoring import course
from helpers.check import ANSI_RE, STRICT_ENV, TIMING_MISS

KERNEL = "cookbook-colab"
# Variables of the checkout's test run that a learner's machine does not have.
NOT_ON_COLAB = (STRICT_ENV, "COOKBOOK_CLAIMS_LOG", "COOKBOOK_DATA_DIR", "PYTHONPATH", "VIRTUAL_ENV")


@dataclass
class Outcome:
    """One notebook's run: seconds, timing claims that missed, and the error if it stopped."""

    name: str
    seconds: float
    missed: int
    error: str = ""


def kernelspec(python: Path, folder: Path) -> Path:
    """Write a kernelspec that starts ``python``'s ipykernel under ``folder/kernels``; return
    the folder to put on ``$JUPYTER_PATH``."""
    spec = folder / "kernels" / KERNEL
    spec.mkdir(parents=True, exist_ok=True)
    argv = [str(python), "-m", "ipykernel_launcher", "-f", "{connection_file}"]
    kernel = {"argv": argv, "display_name": "Colab-like", "language": "python"}
    (spec / "kernel.json").write_text(json.dumps(kernel))
    return folder


def untagged(nb: Any) -> Any:
    """Return the notebook without cell tags and outputs: what a front end that ignores tags
    runs."""
    for cell in nb.cells:
        cell.metadata.pop("tags", None)
        if cell.cell_type == "code":
            cell.outputs, cell.execution_count = [], None
    return nb


def missed_claims(nb: Any) -> int:
    """Count the timing claims that printed ``✗`` in the executed notebook (not the exercises'
    ``✗`` lines, which the starters print on purpose)."""
    text = "".join(
        o.get("text", "") for c in nb.cells if c.cell_type == "code" for o in c.get("outputs", [])
    )
    return text.count(TIMING_MISS)


def kernel_env(python: Path) -> dict[str, str]:
    """Return the environment of a learner's kernel: this one without the test run's settings,
    with ``python``'s folder first on ``PATH`` (a notebook that runs ``python`` or ``torchrun``
    gets the Colab-like venv's) and no other virtual environment's folder on it."""
    env = {k: v for k, v in os.environ.items() if k not in (*NOT_ON_COLAB, "JUPYTER_PATH")}
    others = [p for p in env.get("PATH", "").split(os.pathsep) if not Path(p, "activate").is_file()]
    env["PATH"] = os.pathsep.join([str(python.parent), *others])
    return env


def run_one(path: Path, workdir: Path, python: Path, timeout: int = 600) -> Outcome:
    """Execute one notebook alone in the empty folder ``workdir`` with a kernel of ``python``;
    a cell that fails, or a kernel that dies or does not start, is reported, not raised."""
    import nbformat
    from nbclient import NotebookClient
    from nbclient.exceptions import CellExecutionError, CellTimeoutError, DeadKernelError

    workdir.mkdir(parents=True)
    target = workdir / path.name
    shutil.copy2(path, target)
    nb = untagged(nbformat.read(target, as_version=4))
    client = NotebookClient(
        nb, timeout=timeout, kernel_name=KERNEL, resources={"metadata": {"path": str(workdir)}}
    )
    start = time.perf_counter()
    error = ""
    try:
        client.execute(env=kernel_env(python))
    except (CellExecutionError, CellTimeoutError, DeadKernelError, RuntimeError) as exc:
        text = ANSI_RE.sub("", str(exc))  # the traceback's colours
        lines = [line for line in text.strip().splitlines() if line.strip()]
        error = lines[-1] if lines else type(exc).__name__
    seconds = time.perf_counter() - start
    nbformat.write(nb, target)  # what ran, for a look afterwards
    return Outcome(path.name, seconds, missed_claims(nb), error)


def run_all(python: Path, paths: list[Path], out: Path) -> list[Outcome]:
    """Run each notebook in its own empty folder under ``out``; print one line per notebook."""
    out.mkdir(parents=True, exist_ok=True)
    python = Path(python)
    jupyter = kernelspec(python, Path(tempfile.mkdtemp(prefix="cookbook-kernels-")))
    paths_before = os.environ.get("JUPYTER_PATH")
    os.environ["JUPYTER_PATH"] = os.pathsep.join(filter(None, [str(jupyter), paths_before]))
    outcomes = []
    try:
        for path in paths:
            workdir = out / path.stem
            shutil.rmtree(workdir, ignore_errors=True)
            print(f"{path.name}: running alone in {workdir} …", flush=True)
            outcome = run_one(path, workdir, python)
            status = "ok" if not outcome.error else f"STOPPED: {outcome.error}"
            print(f"{outcome.seconds:7.1f} s  {outcome.missed} timing claim(s) missed  {status}")
            outcomes.append(outcome)
    finally:
        shutil.rmtree(jupyter, ignore_errors=True)
        if paths_before is None:
            os.environ.pop("JUPYTER_PATH", None)
        else:
            os.environ["JUPYTER_PATH"] = paths_before
    return outcomes


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m helpers.authoring.colab", description=__doc__)
    parser.add_argument("--python", type=Path, required=True, help="the Colab-like venv's python")
    parser.add_argument("--out", type=Path, default=course.ROOT / "build" / "colab")
    parser.add_argument("paths", nargs="*", type=Path, help="notebooks (default: all)")
    args = parser.parse_args(argv)
    if not args.python.is_file():
        parser.error(f"no Python at {args.python}: `make test-colab` creates it")
    paths = [p.resolve() for p in args.paths] or course.notebook_paths()
    outcomes = run_all(args.python.absolute(), paths, args.out.resolve())
    failed = [o for o in outcomes if o.error]
    total = sum(o.seconds for o in outcomes)
    print(
        f"test-colab: {len(outcomes) - len(failed)} of {len(outcomes)} notebooks ran top to "
        f"bottom ({total:.0f} s), {sum(o.missed for o in outcomes)} timing claim(s) missed"
    )
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
