"""Chapter 10's speedup ladder: the same CIFAR2 training steps, timed as tricks are stacked.

``make bench`` (``python -m helpers.ladder``) measures it on this machine's best device and writes
a JSON file with the device, versions, date and every rung; chapter 10 also runs it itself.
Each rung adds one trick to the tricks kept above it, and is kept only when it makes the step
faster than the best rung so far by more than the noise: its median lower by at least
``KEEP_IF_FASTER`` (5 %) of the best median *and* by more than ``NOISE`` times the two rungs'
median absolute deviations added (a rule by medians, so one slow repeat, a hiccup of the machine,
does not decide). A trick that is slower, or no faster beyond that noise, is measured, reported
and dropped. Data rungs follow the same
rule (a dropped data rung leaves the rungs below it on the previous data source).

>>> rows = run(torch.device("cpu"), steps=5, repeats=1, compile=False)  # doctest: +SKIP
"""

from __future__ import annotations

import argparse
import datetime
import json
import platform
import statistics
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import torch
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset

from helpers.env import cpu_name, pick_device, spare_a_core
from helpers.images import channel_stats, load_cifar2
from helpers.models import small_cnn

# Each rung adds one trick to the rungs above it (the ones that were kept).
RUNGS: list[tuple[str, dict[str, object]]] = [
    ("baseline: decode JPEGs every step", {"data": "jpeg"}),
    ("+ decoded once, kept in memory", {"data": "memory"}),
    ("+ channels_last", {"channels_last": True}),
    ("+ torch.compile", {"compile": True}),
    ("+ mixed precision (autocast)", {"amp": True}),
    ("+ whole data set on the device", {"data": "device"}),
]
BATCH = 64
KEEP_IF_FASTER = 0.05  # a rung must beat the best so far by this fraction to be kept
# ... and by this many times the two rungs' median absolute deviations added: for 5 repeats
# roughly two standard errors of the difference of the two medians.
NOISE = 1.5
# Committed results ship inside the package, so a pip install (Colab) has them too.
RESULTS = Path(__file__).resolve().parent / "results"


def device_name(device: torch.device) -> str:
    """Return a readable name of ``device``: the GPU's model, or the CPU's and its cores."""
    if device.type == "cuda":
        return torch.cuda.get_device_name(device)
    return cpu_name()


def verdict(times: list[float], best: list[float] | None) -> str:
    """Return ``"kept"``, ``"no faster"`` or ``"slower"`` for a rung's step times (one per
    repeat) against the best kept rung's (``None`` for the first rung, which is always kept).

    Kept needs a median lower than the best rung's by at least 5 % of it *and* by more than
    the noise: ``NOISE`` × (the median absolute deviation of this rung's repeats + the best
    rung's). Slower is the mirror image. Anything between is "no faster": the difference is
    within the run-to-run spread. Medians and their deviations ignore a single slow repeat.

    >>> verdict([0.90, 0.91, 0.92], [1.0, 1.0, 1.01]), verdict([0.90, 0.95, 1.02], [0.98, 1.0])
    ('kept', 'no faster')
    >>> verdict([1.10, 1.12], [1.0, 1.02]), verdict([1.0], None)
    ('slower', 'kept')
    >>> verdict([0.50, 0.52, 0.51, 0.53, 0.98], [0.90, 0.88, 0.91, 0.89, 0.92])  # one hiccup
    'kept'
    """
    if not times or min(times) <= 0 or (best is not None and (not best or min(best) <= 0)):
        raise ValueError("step times must be positive (and at least one per rung)")
    if best is None:
        return "kept"
    median, best_median = statistics.median(times), statistics.median(best)
    margin = max(KEEP_IF_FASTER * best_median, NOISE * (deviation(times) + deviation(best)))
    if best_median - median > margin:
        return "kept"
    if median - best_median > margin:
        return "slower"
    return "no faster"


def deviation(times: list[float]) -> float:
    """Return the median absolute deviation of ``times`` from their median: the spread of the
    repeats, unmoved by one outlier.

    >>> deviation([1.0, 1.1, 0.9, 1.0, 5.0])
    0.09999999999999998
    """
    median = statistics.median(times)
    return statistics.median(abs(t - median) for t in times)


def committed_results(folder: Path = RESULTS) -> list[Path]:
    """Return the ladder JSON files committed with the course (``ladder-*.json`` in
    ``helpers/results``, package data), sorted; an empty list where the folder is absent.

    >>> all(p.name.startswith("ladder-") for p in committed_results())
    True
    """
    return sorted(folder.glob("ladder-*.json")) if folder.is_dir() else []


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def _batches(config: dict, device: torch.device, images, labels) -> Iterator[tuple]:
    """Endless (x, y) batches on ``device`` from the data source the config names."""
    generator = torch.Generator().manual_seed(0)
    if config["data"] == "jpeg":
        from torchvision import datasets
        from torchvision.transforms import v2

        from helpers.data import fetch

        dataset = datasets.ImageFolder(fetch("cifar2") / "train", transform=v2.PILToTensor())
    elif config["data"] == "memory":
        dataset = TensorDataset(images, labels)
    else:  # the whole data set on the device, batches sliced from it
        on_device, targets = images.to(device), labels.to(device)
        while True:
            order = torch.randperm(len(targets), device=device)
            for i in range(0, len(order) - BATCH + 1, BATCH):
                yield on_device[order[i : i + BATCH]], targets[order[i : i + BATCH]]
    # drop_last: every batch has BATCH images, so a compiled step never meets a new shape;
    # pin_memory: on CUDA, page-locked batches make the non_blocking copies asynchronous.
    loader = DataLoader(
        dataset,
        batch_size=BATCH,
        shuffle=True,
        drop_last=True,
        generator=generator,
        pin_memory=device.type == "cuda",
    )
    while True:
        for x, y in loader:
            yield x.to(device, non_blocking=True), y.to(device, non_blocking=True)


def _step_fn(config: dict, device: torch.device, images) -> Callable[[tuple], None]:
    """A fresh model and optimizer; return a function that runs one training step on a batch."""
    torch.manual_seed(0)
    model = small_cnn(*channel_stats(images)).to(device)
    memory_format = torch.channels_last if config["channels_last"] else torch.contiguous_format
    model = model.to(memory_format=memory_format)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    forward = torch.compile(model) if config["compile"] else model
    amp_dtype = torch.float16 if device.type == "cuda" else torch.bfloat16
    scaler = torch.amp.GradScaler(device.type, enabled=config["amp"] and device.type == "cuda")

    def step(batch: tuple) -> None:
        x, y = batch
        x = x.contiguous(memory_format=memory_format)
        with torch.autocast(device.type, dtype=amp_dtype, enabled=config["amp"]):
            loss = F.cross_entropy(forward(x), y)
        optimizer.zero_grad(set_to_none=True)
        scaler.scale(loss).backward()
        scaler.step(optimizer)
        scaler.update()

    return step


FAR_SLOWER = 3.0  # a rung whose warm-up steps are this many times slower than the best so far


def _far_slower(warmup: float, slower_than: float | None) -> bool:
    """Whether 3 warm-up steps that took ``warmup`` seconds are FAR_SLOWER than the best."""
    return slower_than is not None and warmup / 3 >= FAR_SLOWER * slower_than


def measure(
    config: dict,
    device: torch.device,
    images,
    labels,
    steps: int,
    repeats: int,
    slower_than: float | None = None,
) -> tuple[list[float], float]:
    """Return (seconds per step for each repeat, seconds of the warm-up steps: compile time).

    ``slower_than`` is the best rung's seconds per step so far: a rung whose warm-up steps
    already take :data:`FAR_SLOWER` times that is timed one step per repeat (its verdict is
    plain; its steps would only spend time)."""
    batches = _batches(config, device, images, labels)
    step = _step_fn(config, device, images)
    _sync(device)
    began = time.perf_counter()
    for _ in range(3):  # warm-up: compilation, allocator, caches
        step(next(batches))
    _sync(device)
    warmup = time.perf_counter() - began
    if _far_slower(warmup, slower_than):
        steps = 1
    per_step = []
    for _ in range(repeats):
        _sync(device)
        began = time.perf_counter()
        for _ in range(steps):
            step(next(batches))
        _sync(device)
        per_step.append((time.perf_counter() - began) / steps)
    return per_step, warmup


def in_turns(
    names: list[str],
    device: torch.device,
    steps: int = 4,
    rounds: int = 5,
    threads: int | None = None,
) -> dict[str, float]:
    """Time the named rungs, each with its own trick alone on the baseline, in turns (A, B, A,
    B, ...: :func:`helpers.bench.time_in_turns`); return each one's fastest seconds per step.

    :func:`run` measures its rungs one after the other, so a busy spell on a shared machine can
    fall on one rung only; in turns it slows them all, which is what a check of a speed-up needs.
    """
    from helpers.bench import time_in_turns

    images, labels, _ = load_cifar2("train")
    changes = dict(RUNGS)
    base = {"data": "jpeg", "channels_last": False, "compile": False, "amp": False}
    runners = {}
    for name in names:
        config = {**base, **changes[name]}
        batches = _batches(config, device, images, labels)
        step = _step_fn(config, device, images)
        for _ in range(3):  # warm-up: allocator, caches, the DataLoader's first batches
            step(next(batches))

        def steps_of(step=step, batches=batches) -> None:
            for _ in range(steps):
                step(next(batches))
            _sync(device)

        runners[name] = steps_of
    seconds = time_in_turns(runners, rounds=rounds, min_run_time=0.01, threads=threads)
    return {name: s / steps for name, s in seconds.items()}


def run(
    device: torch.device, steps: int = 20, repeats: int = 3, compile: bool = True
) -> list[dict]:
    """Measure every rung on ``device``; return one dict per rung.

    A rung is *kept* (its trick stays in the stack for the rungs below) when :func:`verdict`
    says so: at least 5 % faster than the best so far, beyond the spread of the repeats;
    otherwise it is reported as "no faster" or "slower" and dropped. Each row names the tricks
    it ran with (``config``) and keeps every repeat's time (``times_ms``). ``compile=False``
    skips the compile rung, whose warm-up (compilation) takes seconds with an empty cache.
    """
    if steps < 1 or repeats < 1:
        raise ValueError("steps and repeats must be at least 1")
    images, labels, _ = load_cifar2("train")
    config = {"data": "jpeg", "channels_last": False, "compile": False, "amp": False}
    rows, best, baseline = [], None, None
    for name, change in RUNGS:
        if "compile" in change and not compile:
            rows.append({"rung": name, "skipped": "compile=False"})
            continue
        trial = {**config, **change}
        fastest = statistics.median(best) if best else None
        per_step, warmup = measure(trial, device, images, labels, steps, repeats, fastest)
        median = statistics.median(per_step)
        baseline = baseline or median
        outcome = verdict(per_step, best)
        if outcome == "kept":
            config, best = trial, per_step
        rows.append(
            {
                "rung": name,
                "median_ms": 1000 * median,
                "min_ms": 1000 * min(per_step),
                "max_ms": 1000 * max(per_step),
                "times_ms": [1000 * t for t in per_step],
                "speedup": baseline / median,
                "warmup_s": warmup,
                "steps": 1 if _far_slower(warmup, fastest) else steps,
                "kept": outcome == "kept",
                "verdict": outcome,
                "config": trial,
            }
        )
    return rows


def _nvidia_driver() -> str | None:
    """The NVIDIA driver's version as ``nvidia-smi`` reports it, or None."""
    import subprocess

    try:
        done = subprocess.run(
            ["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
            capture_output=True,
            text=True,
            timeout=30,
            check=True,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout.strip().splitlines()[0] if done.stdout.strip() else None


def provenance(device: torch.device) -> dict[str, object]:
    """Return what a result measured on ``device`` must carry: device, versions, date.

    >>> sorted(provenance(torch.device("cpu")))[:4]
    ['cuda', 'cudnn', 'date', 'device']
    """
    cuda = device.type == "cuda"
    return {
        "device": device_name(device),
        "device_type": device.type,
        "torch": torch.__version__,
        "python": platform.python_version(),
        "cuda": torch.version.cuda if cuda else None,
        "cudnn": torch.backends.cudnn.version() if cuda else None,
        "driver": _nvidia_driver() if cuda else None,
        "date": datetime.date.today().isoformat(),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default=None, help="cpu, cuda, mps (default: the best)")
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--out", type=Path, default=None, help="JSON file to write")
    parser.add_argument("--no-compile", action="store_true", help="skip the torch.compile rung")
    args = parser.parse_args(argv)
    device = torch.device(args.device) if args.device else pick_device()
    spare_a_core()  # as every notebook's setup does
    rows = run(device, steps=args.steps, repeats=args.repeats, compile=not args.no_compile)
    result = {
        **provenance(device),
        "batch": BATCH,
        "steps": args.steps,
        "repeats": args.repeats,
        "threads": torch.get_num_threads(),
        "rungs": rows,
    }
    out = args.out or RESULTS / f"ladder-{device.type}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=1) + "\n")
    for row in rows:
        if "skipped" in row:
            print(f"{row['rung']:<36} skipped")
        else:
            print(
                f"{row['rung']:<36} {row['median_ms']:8.1f} ms/step  {row['speedup']:5.2f}×"
                f"  {row['verdict']}"
            )
    print(f"wrote {out} ({result['device']}, torch {result['torch']})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
