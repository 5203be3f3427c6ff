"""TensorBoard from Python: read event files back, and run a server that always stops.

(Named ``board`` so that it does not shadow the ``tensorboard`` package.)
"""

from __future__ import annotations

import json
import subprocess
import sys
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from helpers.env import quiet_logger
from helpers.serve import serve as http_server


def run_dirs(logdir: Path) -> list[Path]:
    """Return the folders under ``logdir`` (itself included) that hold event files, sorted."""
    logdir = Path(logdir)
    return sorted({p.parent for p in logdir.rglob("events.out.tfevents.*")})


def load_run(run: Path):
    """Return a loaded ``EventAccumulator`` of one run folder, keeping every event.

    TensorBoard's warning when it applies a ``purge_step`` ("Detected out of order
    event.step ...", with wall times) is silenced: the events it reads back show the purge.
    """
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    accumulator = EventAccumulator(
        str(run), size_guidance={"scalars": 0, "histograms": 0, "images": 0, "tensors": 0}
    )
    with quiet_logger("tensorboard"):
        accumulator.Reload()
    return accumulator


def _run_name(run: Path, logdir: Path) -> str:
    name = run.relative_to(logdir).as_posix()
    return "." if name == "." else name


def scalars(logdir: Path) -> pd.DataFrame:
    """Return every scalar under ``logdir`` as a DataFrame: run, tag, step, value, wall_time.

    >>> scalars(Path("runs/08"))  # doctest: +SKIP
    """
    logdir = Path(logdir)
    rows = [
        {
            "run": _run_name(run, logdir),
            "tag": tag,
            "step": e.step,
            "value": e.value,
            "wall_time": e.wall_time,
        }
        for run in run_dirs(logdir)
        for acc in [load_run(run)]
        for tag in acc.Tags()["scalars"]
        for e in acc.Scalars(tag)
    ]
    return pd.DataFrame(rows, columns=["run", "tag", "step", "value", "wall_time"])


def tags(logdir: Path) -> dict[str, dict[str, list[str]]]:
    """Return ``{run: {kind: [tags]}}`` for scalars, histograms, images and the graph."""
    logdir = Path(logdir)
    found = {}
    for run in run_dirs(logdir):
        t = load_run(run).Tags()
        found[_run_name(run, logdir)] = {
            "scalars": sorted(t["scalars"]),
            "histograms": sorted(t["histograms"]),
            "images": sorted(t["images"]),
            "graph": ["graph"] if t["graph"] else [],
        }
    return found


def hparams(logdir: Path) -> pd.DataFrame:
    """Return one row per run written with ``SummaryWriter.add_hparams``: its hyperparameters,
    in columns sorted by name after ``run``."""
    from tensorboard.plugins.hparams import plugin_data_pb2

    logdir = Path(logdir)
    rows = []
    for run in run_dirs(logdir):
        try:
            content = load_run(run).PluginTagToContent("hparams")
        except KeyError:  # this run logged no hparams
            continue
        for raw in content.values():
            data = plugin_data_pb2.HParamsPluginData.FromString(raw)
            if data.HasField("session_start_info"):
                values = data.session_start_info.hparams
                row = {"run": _run_name(run, logdir)}
                for key, v in sorted(values.items()):  # protobuf maps have no fixed order
                    kind = v.WhichOneof("kind")
                    row[key] = getattr(v, kind) if kind else None
                rows.append(row)
    return pd.DataFrame(rows)


def tensor(run: Path, tag: str):
    """Return the last value logged under ``tag`` in one run folder as a NumPy array: what
    ``add_pr_curve`` (a 6 × thresholds array) and ``add_text`` (an array of bytes) store."""
    from tensorboard.util import tensor_util

    events = load_run(Path(run)).Tensors(tag)
    return tensor_util.make_ndarray(events[-1].tensor_proto)


def pr_curve(run: Path, tag: str) -> pd.DataFrame:
    """Return a logged precision-recall curve: one row per threshold (0 to 1), with the counts
    of true/false positives/negatives and the precision and recall there."""
    import numpy as np

    data = tensor(run, tag)
    columns = ["tp", "fp", "tn", "fn", "precision", "recall"]
    frame = pd.DataFrame(data.T, columns=columns)
    frame.insert(0, "threshold", np.linspace(0, 1, len(frame)))
    return frame


def embedding(run: Path, tag: str, step: int = 0) -> tuple[pd.DataFrame, list[str]]:
    """Return the vectors and labels ``add_embedding`` wrote for ``tag`` at ``step``."""
    folder = Path(run) / f"{step:05d}" / tag
    vectors = pd.read_csv(folder / "tensors.tsv", sep="\t", header=None)
    labels = (folder / "metadata.tsv").read_text().splitlines()
    return vectors, labels


def get_json(url: str, timeout: float = 5.0) -> object:
    """Return the decoded JSON answer of a GET request."""
    with urllib.request.urlopen(url, timeout=timeout) as response:  # local server only
        return json.load(response)


@dataclass
class Server:
    """A running TensorBoard: its base URL and process."""

    url: str
    process: subprocess.Popen


@contextmanager
def serve(logdir: Path, timeout: float = 60.0) -> Iterator[Server]:
    """Run TensorBoard on ``logdir``, bound to 127.0.0.1 on a free port, for a ``with`` block.

    Waits until the server answers; always stops it on exit, also when the block raises.
    """
    command = [sys.executable, "-m", "tensorboard.main", "--logdir", str(logdir)]
    command += ["--host", "127.0.0.1", "--port", "{port}"]
    with http_server(command, ready="/data/runs", timeout=timeout, name="TensorBoard") as running:
        yield Server(running.url, running.process)


PICTURES = Path(__file__).with_name("pictures")  # TensorBoard's pages, made by authoring.pictures


@dataclass
class Dashboard:
    """TensorBoard running for a notebook: its URL and process, and how to stop it."""

    url: str
    process: subprocess.Popen
    stop: Callable[[], object]

    def runs(self) -> list[str]:
        """The runs the server lists on its page's left, sorted (what ``/data/runs`` answers)."""
        return sorted(get_json(f"{self.url}/data/runs"))


def show(logdir: Path, height: int = 640, timeout: float = 60.0) -> Dashboard:
    """Start TensorBoard on ``logdir`` and show its page under the cell; return a
    :class:`Dashboard`. It runs until ``.stop()`` or until the kernel ends (it is tethered to
    it). On Colab the page is shown through Colab's proxy for the kernel's ports."""
    from IPython.display import IFrame, display

    stack = ExitStack()
    server = stack.enter_context(serve(logdir, timeout=timeout))
    if "google.colab" in sys.modules:  # the browser is not on the kernel's machine
        from google.colab import output  # type: ignore[import-not-found]

        output.serve_kernel_port_as_iframe(int(server.url.rsplit(":", 1)[1]), height=height)
    else:
        display(IFrame(server.url, width="100%", height=height))
    return Dashboard(server.url, server.process, stack.close)


def picture(name: str):
    """TensorBoard's ``name`` tab (``"scalars"``, ``"images"``, ``"histograms"``) as taken from
    lesson 08's runs, for a reader who cannot run it; an ``IPython.display.Image``."""
    from IPython.display import Image

    path = PICTURES / f"tensorboard_{name}.png"
    if not path.exists():
        known = sorted(p.stem.removeprefix("tensorboard_") for p in PICTURES.glob("*.png"))
        raise ValueError(f"no picture {name!r}; there are {known}")
    return Image(filename=str(path))
