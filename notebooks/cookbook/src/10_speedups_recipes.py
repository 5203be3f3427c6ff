# %% [markdown]
# # 10 · Speedups, measured: recipes
#
# [![Open In Colab](https://colab.research.google.com/assets/colab-badge.svg)](https://colab.research.google.com/github/pytorch-cookbook/pytorch-cookbook/blob/main/notebooks/cookbook/10_speedups_recipes.ipynb)
#
# **The cookbook of chapter 10.** New to the topic? [The lesson](../10_speedups.ipynb) teaches it
# step by step on the course's running example. Here each recipe answers one task; the
# [recipe index](../RECIPES.md) and the [error index](../ERRORS.md) find the one you need.
#
# Lists of speed tricks are everywhere; measurements are rare. After this notebook you can find
# where a training step spends its time with `torch.profiler`, stop a loop from waiting for data
# (workers, a prefetch thread, a CUDA-stream prefetcher, data kept on the device) and speed up
# the step (`channels_last`, mixed precision, fused optimizers). Every trick is **timed on the
# machine that runs the notebook** and stacked into one ladder; where a trick does not help on a
# CPU, the table says so. Faster *inference* (`torch.compile`, Conv-BN fusion, merged branches,
# int8) is the chapter's second cookbook notebook,
# [Faster inference, measured](10_speedups_inference_recipes.ipynb).
#
# **Prerequisites:** [02](../02_contiguity_strides.ipynb) (memory layout),
# [05](../05_datasets_dataloaders.ipynb) (DataLoader, workers), [07](../07_training_loop.ipynb)
# (training loop).
#
# **Run time:** about 60 s on a 2-core CPU · GPU optional.

# %%
import sys

if (
    "google.colab" in sys.modules
):  # Colab: install the course's helpers and what the notebooks import
    import subprocess

    spec = "pytorch-cookbook[notebooks] @ git+https://github.com/pytorch-cookbook/pytorch-cookbook"
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", spec], check=True)

import io
import json
import os
import platform
import queue
import shutil
import statistics
import subprocess
import threading
import time
import warnings
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import torch
import torch.nn.functional as F
from torch import nn
from torch.profiler import ProfilerActivity, profile, record_function
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.flop_counter import FlopCounterMode
from torchvision import datasets
from torchvision.transforms import v2

from helpers import ladder
from helpers.bench import convolution_kernel, ieee_fp32, time_in_turns, time_it
from helpers.check import check, expect_warning
from helpers.data import fetch
from helpers.datasets import SlowReads
from helpers.env import setup
from helpers.exercises import ch10
from helpers.images import channel_stats, load_cifar2
from helpers.models import small_cnn
from helpers.tether import tethered

device = setup(seed=0)
RUN = Path("runs/10_speedups")  # what this notebook writes: made anew on every run
shutil.rmtree(RUN, ignore_errors=True)
RUN.mkdir(parents=True)
train_images, train_labels, classes = load_cifar2("train")
mean, std = channel_stats(train_images)
print(f"CIFAR2: {len(train_images)} training images in memory")


def sync() -> None:
    """Wait for the GPU's queued work (CUDA runs asynchronously); nothing to wait for on a CPU."""
    if device.type == "cuda":
        torch.cuda.synchronize()


# %% [markdown]
# All timings below come after a warm-up, as medians of repeats or, where said, the fastest of
# several tries. They differ from machine to machine and from moment to moment, so their cells are not compared by the tests; each section ends with a check
# of what matters, with a wide margin.

# %% [markdown]
# ## Profile one training step before optimising anything
#
# Guessing where time goes is usually wrong. `torch.profiler.profile` records every operator
# (and, on a GPU, every kernel); `record_function` labels the phases of the step, so the profile
# says how the time splits between **loading data, forward, backward and the optimizer**. First
# the straightforward pipeline: JPEG files decoded by `ImageFolder` for every batch.
#
# A `schedule` leaves the first step out (a warm-up: first calls allocate memory and fill
# caches), and `prof.step()` at the end of every step tells the schedule where steps end. On
# CUDA, operators only *queue* kernels: the `sync()` (a `torch.cuda.synchronize()`)
# at the end of each phase makes the phase's time include its kernels, at the price of removing
# the CPU-GPU overlap a real step has; the table is then sorted by time on the device.

# %%
os.environ.setdefault("KINETO_LOG_LEVEL", "6")  # the profiler's C++ log lines: errors only
jpeg_loader = DataLoader(
    datasets.ImageFolder(fetch("cifar2") / "train", transform=v2.PILToTensor()),
    batch_size=64,
    shuffle=True,
)
memory_loader = DataLoader(TensorDataset(train_images, train_labels), batch_size=64, shuffle=True)
PHASES = ["data", "forward", "backward", "optimizer"]


def profiled_steps(loader: DataLoader, steps: int = 8) -> profile:
    """Profile ``steps`` training steps of a fresh CNN after one warm-up step, phases labelled."""
    torch.manual_seed(0)
    model = small_cnn(mean, std).to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    activities = [ProfilerActivity.CPU]
    if device.type == "cuda":
        activities.append(ProfilerActivity.CUDA)
    schedule = torch.profiler.schedule(wait=0, warmup=1, active=steps, repeat=1)
    batches = iter(loader)
    with profile(activities=activities, schedule=schedule) as prof:
        for _ in range(1 + steps):
            with record_function("data"):
                x, y = next(batches)
                x, y = x.to(device), y.to(device)
                sync()
            with record_function("forward"):
                loss = F.cross_entropy(model(x), y)
                sync()
            with record_function("backward"):
                optimizer.zero_grad()
                loss.backward()
                sync()
            with record_function("optimizer"):
                optimizer.step()
                sync()
            prof.step()  # one training step ended
    return prof


def phase_shares(prof: profile) -> dict[str, float]:
    """Each labelled phase's share of the labelled time."""
    totals = {e.key: e.cpu_time_total for e in prof.key_averages() if e.key in PHASES}
    return {phase: totals[phase] / sum(totals.values()) for phase in PHASES}


jpeg_profile = profiled_steps(jpeg_loader)
memory_profile = profiled_steps(memory_loader)
jpeg_profile.export_chrome_trace(str(RUN / "trace.json"))

# %% tags=["nbval-ignore-output"]
shares = pd.DataFrame(
    {
        "JPEG files": phase_shares(jpeg_profile),
        "tensors in memory": phase_shares(memory_profile),
    }
)
print(shares.map(lambda v: f"{v:.0%}"))
sort_by = "self_device_time_total" if device.type == "cuda" else "self_cpu_time_total"
print(jpeg_profile.key_averages().table(sort_by=sort_by, row_limit=8))

# %%
trace = json.loads((RUN / "trace.json").read_text())
labels = [e["name"] for e in trace["traceEvents"] if e.get("cat") == "user_annotation"]
check(
    all(labels.count(phase) == 8 for phase in PHASES),
    f"the trace ({RUN / 'trace.json'}) holds each phase of the 8 active steps, not the warm-up",
)
jpeg_share, memory_share = shares.loc["data"]
check(
    jpeg_share > 2 * memory_share,
    "decoding JPEGs makes data loading a far larger share of the step",
    measured=f"{jpeg_share:.0%} vs {memory_share:.0%}",
    timing=True,
)

# %% [markdown]
# Two more options say *which* call of an operator costs what. `record_shapes=True` keeps each
# operator's input shapes, so `key_averages(group_by_input_shape=True)` gives one row per layer;
# `profile_memory=True` records what each operator allocates. One step of a fresh model, all of
# it created inside the profiler (memory allocated before profiling would be freed unrecorded,
# and the profiler warns about that):

# %%
with profile(
    activities=[ProfilerActivity.CPU], record_shapes=True, profile_memory=True
) as shapes_profile:
    torch.manual_seed(0)
    fresh = small_cnn(mean, std)
    F.cross_entropy(fresh(train_images[:64].clone()), train_labels[:64].clone()).backward()
convolutions = [
    e
    for e in shapes_profile.key_averages(group_by_input_shape=True)
    if e.key == "aten::convolution"
]
conv_layers = [m for m in fresh.modules() if isinstance(m, nn.Conv2d)]
by_shape = pd.DataFrame(
    {
        "input shape": [str(e.input_shapes[0]) for e in convolutions],
        "output MiB": [e.cpu_memory_usage / 2**20 for e in convolutions],
    }
)
print(by_shape.to_string(index=False))

# %%
heights = [32 // 2**i for i in range(len(conv_layers))]  # each block's max pooling halves H and W
expected_mib = [
    64 * m.out_channels * h * h * 4 / 2**20 for m, h in zip(conv_layers, heights, strict=True)
]
check(
    sorted(by_shape["output MiB"]) == sorted(expected_mib),
    "one row per convolution layer, each allocating its output: N × C_out × H × W × 4 bytes",
)


# %% [markdown]
# What to notice: the operator table is sorted by each operator's own time. With JPEG files the
# DataLoader's row (`enumerate(DataLoader)...`: reading, decoding and collating) is among the top
# rows, next to the convolutions; with tensors in memory the data phase almost disappears
# ([05](05_datasets_dataloaders_recipes.ipynb) built that cache). In the last table, each convolution
# allocates its output, 4 bytes per value: halving H and W divides it by 4 and doubling the
# channels multiplies it by 2, so the first layer, at full resolution, allocates the most. To
# look at the
# timeline, open `runs/10_speedups/trace.json` in [ui.perfetto.dev](https://ui.perfetto.dev):
# each phase is a bar, each operator a bar inside it. On a GPU the trace has a row per CUDA
# stream, and **gaps in that row are the GPU idle** (what `nvidia-smi` shows as 0 %): look at what the
# CPU row does during a gap (waiting for data, a `.item()`, Python overhead). For long runs,
# `on_trace_ready=lambda p: p.export_chrome_trace(...)` writes a trace per active window
# (`with_stack=True` adds the Python lines). The TensorBoard profiler plugin and
# `tensorboard_trace_handler`, which older guides use, are deprecated; Holistic Trace Analysis
# (the `HolisticTraceAnalysis` package) summarises idle time across many traces.

# %% [markdown]
# ## Stop the training loop from waiting for data
#
# The classic symptom: `nvidia-smi` shows the GPU at 0% most of the time,
# because each step waits for the next batch. A loop can measure it itself: time `next(batches)`
# separately from the rest. First the loop with batches from memory, which measures what one
# step costs *this device*; then a data set on a slow disk (`SlowReads`) whose per-image delay is
# aimed at making reading a batch take about as long as computing it: a sleep lasts longer than
# asked (more so for short sleeps, and on a busy machine), so the delay is measured once and
# corrected. Three ways to read it:
#
# - plainly, in the training loop;
# - with a **background thread** that reads the next batches while the loop trains (what the
#   package `prefetch_generator`'s `BackgroundGenerator` does; written out below, with what it
#   needs to be safe: an error while reading reaches the loop, and leaving the loop early stops
#   the thread);
# - with DataLoader **workers**: `num_workers` processes, each keeping `prefetch_factor` batches
#   ready (4 workers here: waiting for a disk needs no free core, though DataLoader warns when
#   workers outnumber cores).

# %%
class BackgroundBatches:
    """Iterate ``iterable`` in a background thread, keeping up to ``ahead`` items ready.

    Each ``for`` loop starts its own thread over a fresh ``iter(iterable)``, so a DataLoader can
    be read epoch after epoch. An error raised while reading is raised again in the loop that
    iterates; leaving that loop early (``break``, an error) stops the thread.
    """

    _DONE = object()  # marks the end; no batch can be this object

    class _Failed:
        def __init__(self, error: BaseException) -> None:
            self.error = error

    def __init__(self, iterable, ahead: int = 4) -> None:
        self.iterable, self.ahead = iterable, ahead
        self.thread: threading.Thread | None = None  # the latest loop's reading thread

    @staticmethod
    def _put(items: queue.Queue, stop: threading.Event, item) -> bool:
        """Queue ``item``, waiting while the queue is full; give up when asked to stop."""
        while not stop.is_set():
            try:
                items.put(item, timeout=0.1)
                return True
            except queue.Full:
                pass
        return False

    def _fill(self, items: queue.Queue, stop: threading.Event) -> None:
        try:
            for item in self.iterable:
                if not self._put(items, stop, item):
                    return
        except Exception as error:  # handed to the training loop's thread
            self._put(items, stop, self._Failed(error))
            return
        self._put(items, stop, self._DONE)

    def __iter__(self):
        items, stop = queue.Queue(maxsize=self.ahead), threading.Event()
        self.thread = threading.Thread(target=self._fill, args=(items, stop), daemon=True)
        self.thread.start()
        try:
            while (item := items.get()) is not self._DONE:
                if isinstance(item, self._Failed):
                    raise item.error
                yield item
        finally:
            stop.set()


def timed_training(batches, steps: int = 6) -> dict[str, float]:
    """Train ``steps`` steps; return ms per step, ms per step spent waiting for data, and the
    share of the time spent waiting."""
    torch.manual_seed(0)
    model = small_cnn(mean, std).to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    batches = iter(batches)
    next(batches)  # warm-up: workers start, the first batch is read
    waited = 0.0
    sync()
    began = time.perf_counter()
    for _ in range(steps):
        t = time.perf_counter()
        x, y = next(batches)
        waited += time.perf_counter() - t
        loss = F.cross_entropy(model(x.to(device)), y.to(device))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    sync()
    total = time.perf_counter() - began
    return {
        "ms per step": 1000 * total / steps,
        "waiting ms per step": 1000 * waited / steps,
        "waiting": waited / total,
    }


def seconds_per_batch(dataset, batches: int = 3) -> float:
    """Seconds to read one batch of 64, measured over ``batches`` batches."""
    began = time.perf_counter()
    for _, _ in zip(range(batches), DataLoader(dataset, batch_size=64), strict=False):
        pass
    return (time.perf_counter() - began) / batches


subset = TensorDataset(train_images[:2000], train_labels[:2000])
in_memory = timed_training(DataLoader(subset, batch_size=64))
target = in_memory["ms per step"] / 1000  # reading a batch should take as long as a step
delay = target / 64  # per image, as asked of time.sleep
delay *= target / seconds_per_batch(SlowReads(subset, delay=delay))  # what the sleeps really take
slow_disk = SlowReads(subset, delay=delay)
pipelines = {
    "plain loop": lambda: DataLoader(slow_disk, batch_size=64),
    "background thread": lambda: BackgroundBatches(DataLoader(slow_disk, batch_size=64)),
    "4 workers": lambda: DataLoader(
        slow_disk, batch_size=64, num_workers=4, prefetch_factor=2, persistent_workers=True
    ),
}
# The plain loop and the thread are timed in turns, three tries each, and each keeps its fastest
# try: a busy moment on the machine slows one try, not the comparison.
tries = {name: [] for name in ("plain loop", "background thread")}
for _ in range(3):
    for name, results in tries.items():
        results.append(timed_training(pipelines[name]()))
timed = {name: min(results, key=lambda r: r["ms per step"]) for name, results in tries.items()}
with warnings.catch_warnings():  # DataLoader warns above one worker per core: these only wait
    warnings.filterwarnings("ignore", message="This DataLoader will create")
    timed["4 workers"] = timed_training(pipelines["4 workers"]())
waits = pd.DataFrame({"in memory": in_memory} | timed).T

# %% [markdown]
# Reading and computing can overlap at most by the shorter of the two (in the plain loop:
# its waiting, and the rest of its step). The share of that time the background thread saves
# measures how well it overlaps, whatever the two cost; the speed-up itself depends on how they
# compare (at best 2× when they are equal).

# %% tags=["nbval-ignore-output"]
print(f"slow disk: {1000 * delay:.2f} ms asked per image, the steps take {1000 * target:.0f} ms")
print(waits.round(2))
plain, thread, workers = (waits.loc[name] for name in pipelines)
reading = plain["waiting ms per step"]
overlap = min(reading, plain["ms per step"] - reading)  # what can overlap, per step
hidden = (plain["ms per step"] - thread["ms per step"]) / overlap
speedup = plain["ms per step"] / thread["ms per step"]
print(f"background thread: {hidden:.0%} of what can overlap hidden, {speedup:.2f}× faster")

# %%
check(
    0.25 < plain["waiting"] < 0.75,
    "the plain loop spends a large share of each step waiting for data, and computes for a "
    "large share too (so that there is time to overlap)",
    measured=f"{plain['waiting']:.0%} waiting",
    timing=True,
)
check(
    hidden >= 0.5,
    "a background thread overlaps reading with training (hides at least half of what can overlap)",
    measured=f"{hidden:.0%} hidden, {speedup:.2f}× faster",
    timing=True,
)
check(
    workers["waiting"] <= 0.5 * plain["waiting"],
    "4 workers at least halve the share of time spent waiting",
    measured=f"{workers['waiting']:.0%} vs {plain['waiting']:.0%}",
    timing=True,
)


def failing_reads():
    yield "first batch"
    raise OSError("disk gone")


try:
    list(BackgroundBatches(failing_reads()))
    reached = None
except OSError as error:
    reached = str(error)
check(reached == "disk gone", "an error while reading reaches the loop instead of hanging it")
background = BackgroundBatches(range(1000), ahead=2)
for _ in background:
    break  # leave early: the generator closes and tells the thread to stop
background.thread.join(timeout=5)
check(not background.thread.is_alive(), "leaving the loop early stops the reading thread")
epochs = BackgroundBatches(DataLoader(range(10), batch_size=4))
check(
    [len(list(epochs)) for _ in range(2)] == [3, 3],
    "each loop over it reads a whole epoch again (a thread per loop)",
)


# %% [markdown]
# What to notice: a thread is enough when the waiting is I/O (Python releases the GIL while it
# waits); for CPU-heavy decoding or augmentation it competes with the training thread for the
# GIL, and worker *processes* are the tool ([05](05_datasets_dataloaders_recipes.ipynb) measures when
# they help and when there are no idle cores for them). The table's "waiting ms per step" is the
# number to watch in your own loop: near 0, more workers cannot help.
#
# Workers are processes, and by default each epoch starts them again. `persistent_workers=True`
# keeps them alive between epochs. Time from the start of an epoch to its first batch, over 3
# epochs of a small slow data set:

# %%
def epoch_starts(persistent: bool, epochs: int = 3) -> list[float]:
    """Seconds from the start of each epoch to its first batch, with 4 workers."""
    small = SlowReads(TensorDataset(train_images[:512], train_labels[:512]), delay=delay)
    loader = DataLoader(small, batch_size=64, num_workers=4, persistent_workers=persistent)
    starts = []
    for _ in range(epochs):
        began = time.perf_counter()
        for i, _batch in enumerate(loader):
            if i == 0:
                starts.append(time.perf_counter() - began)
    return starts


with warnings.catch_warnings():  # as above: more workers than cores, on purpose
    warnings.filterwarnings("ignore", message="This DataLoader will create")
    starts = {"new workers each epoch": epoch_starts(False), "persistent": epoch_starts(True)}

# %% tags=["nbval-ignore-output"]
print({name: [f"{1000 * s:.0f} ms" for s in times] for name, times in starts.items()})

# %%
later_new = min(starts["new workers each epoch"][1:])
later_kept = max(starts["persistent"][1:])
check(
    later_new >= 1.2 * later_kept,
    "with persistent workers, later epochs reach their first batch sooner",
    measured=f"{1000 * later_new:.0f} vs {1000 * later_kept:.0f} ms",
    timing=True,
)


# %% [markdown]
# The first epoch costs the same either way; later ones skip starting the processes. Here the
# workers are *forked* (Linux, Python before 3.14), which is quick; with the `spawn` start method
# (macOS, Windows) every worker imports torch again and each epoch start costs seconds.
# `prefetch_factor` (default 2) sets how many batches each worker keeps ready: it absorbs bursts
# of slow reads, but the average rate is set by the number of workers (not measured here).

# %% [markdown]
# ## Slice batches from one tensor instead of collating samples
#
# A DataLoader over a `TensorDataset` still calls `__getitem__` once per sample and stacks 64
# small tensors per batch. When the whole data set fits in (device) memory, indexing it with a
# shuffled index tensor makes each batch in one operation, the idea behind the fastest CIFAR-10
# trainings (airbench keeps the data on the GPU). One epoch of batches, without a model, on this
# machine's device, each timed on one thread (other work on the machine disturbs it far less):

# %%
def collate_epoch() -> int:
    """One epoch of batches from the DataLoader; return the number of samples."""
    count = 0
    for _, y in memory_loader:
        count += len(y)
    return count


images_here, labels_here = train_images.to(device), train_labels.to(device)


def sliced_epoch() -> int:
    """One epoch of batches indexed from the tensors; return the number of samples."""
    order = torch.randperm(len(labels_here), device=device)
    count = 0
    for i in range(0, len(order), 64):
        idx = order[i : i + 64]
        _, y = images_here[idx], labels_here[idx]
        count += len(y)
    return count


epoch_seconds = time_in_turns(
    {"DataLoader": collate_epoch, "slicing": sliced_epoch}, rounds=3, min_run_time=0.2, threads=1
)
slicing_gain = epoch_seconds["DataLoader"] / epoch_seconds["slicing"]

# %% tags=["nbval-ignore-output"]
print({k: f"{v * 1000:.0f} ms" for k, v in epoch_seconds.items()}, f"slicing {slicing_gain:.1f}×")

# %%
check(collate_epoch() == sliced_epoch() == 10_000, "both produce one epoch of 10 000 samples")
check(
    slicing_gain >= 0.9,
    "slicing makes an epoch of batches at least as fast as the DataLoader (within 10 %)",
    measured=f"{slicing_gain:.1f}×",
    timing=True,
)

# %% [markdown]
# What to notice: on a CPU both copy the same bytes; slicing skips 64 `__getitem__` calls and a
# `torch.stack` per batch, so it is at least as fast, by a factor that depends on the CPU and its
# code paths (close to 1× on some) and varies from run to run. What it saves
# per epoch is the difference of the two times printed above: compare it with the training
# steps below (tens of milliseconds *per step*, 157 steps per epoch) and it is small on a CPU.
# Slicing pays on a GPU, where the data set then lives in device memory and batches never cross
# the PCIe bus (the last rung of the [ladder](#Stack-the-tricks:-the-ladder)), and for Datasets
# whose `__getitem__` does real work per sample.

# %% [markdown]
# ## Decode JPEGs in batches, and augment whole batches on the device
#
# When the data set does not fit in memory, decoding is the data phase's cost (the profile
# above). `torchvision.io.decode_jpeg` takes a *list* of encoded images and decodes them in one
# call; with `device="cuda"` it decodes on the GPU (nvJPEG) and the batch is already where the
# model is. `v2` transforms then work on whole batches `(N, C, H, W)` on any device, with one
# catch shown below. (For millions of small files, shard formats such as WebDataset's tar
# shards or an LMDB database replace one file read per image by sequential reads.)
#
# torchvision 0.29 deprecates its image functions (`read_file` and `decode_jpeg` here, and
# `decode_image`, `read_image`, `encode_png`, `encode_jpeg`, `write_png`) in favour of
# TorchCodec 0.16 and newer, a separate package (`pip install torchcodec`; a table in its README
# says which release suits your torch). Its `torchcodec.decoders.decode_jpeg` takes the files
# themselves (paths, bytes or tensors, one or a list) and `device="cuda"`, but decodes to RGB
# unless told otherwise (`mode`), where torchvision kept the file's channels: its migration
# guide, named in the warning, lists such differences. The course keeps torchvision's, which
# every install has. The warning is a `DeprecationWarning`, which Python hides unless asked; the
# cell below asks, on a torchvision that deprecates them.

# %%
from contextlib import nullcontext

import torchvision
from PIL import Image
from torchvision.io import decode_jpeg, read_file

jpeg_files = sorted((fetch("cifar2") / "train").rglob("*.jpg"))[:256]
major, minor = (int(part) for part in torchvision.__version__.split(".")[:2])
deprecated = (major, minor) >= (0, 29)  # torchvision 0.29 deprecates its image functions
with expect_warning(DeprecationWarning, match="TorchCodec") if deprecated else nullcontext():
    encoded = [read_file(str(f)) for f in jpeg_files]
    decoded = decode_jpeg(encoded, device="cpu")  # device="cuda": nvJPEG, on the GPU
with_pil = [v2.functional.pil_to_tensor(Image.open(f)) for f in jpeg_files]
in_memory_files = [f.read_bytes() for f in jpeg_files]  # both decoders start from bytes
decode_ms = {
    "PIL, one image at a time": 1000
    * time_it(lambda: [np.asarray(Image.open(io.BytesIO(b))) for b in in_memory_files]),
    "decode_jpeg, one list": 1000 * time_it(lambda: decode_jpeg(encoded, device="cpu")),
}
torch.manual_seed(0)
floats = torch.stack(decoded[:8]).float().to(device)
crop = v2.RandomCrop(32, padding=4, fill=-1.0)  # the padding is -1: its position is visible
batched = crop(floats)  # one call on the batch
one_by_one = torch.stack([crop(image) for image in floats])  # one call per image
padding_masks = {
    name: (x == -1).all(1) for name, x in [("batched", batched), ("one by one", one_by_one)]
}
offsets_alike = {
    name: all(torch.equal(mask[0], m) for m in mask) for name, mask in padding_masks.items()
}
print(f"{len(decoded)} images decoded, the first {tuple(decoded[0].shape)} {decoded[0].dtype}")
print("the same crop offset for all 8 images:", offsets_alike)

# %% tags=["nbval-ignore-output"]
print({k: f"{v:.1f} ms per 256 images" for k, v in decode_ms.items()})
pil_ms, list_ms = decode_ms.values()
print(f"decode_jpeg on a list: {pil_ms / list_ms:.1f}× the speed of PIL, from the same bytes")

# %%
check(
    all(torch.equal(a, b) for a, b in zip(decoded, with_pil, strict=True)),
    "decode_jpeg on a list gives exactly the pixels PIL decodes (both use libjpeg here)",
)
check(
    offsets_alike == {"batched": True, "one by one": False},
    "a random v2 transform called on a batch draws ONE set of parameters for all its images",
)


# %% [markdown]
# Both decoders run libjpeg on a CPU; from the same bytes, what `decode_jpeg` saves here is
# PIL's per-image Python objects (the last line says by how much on this machine). On a GPU it
# pays more: decoding leaves the CPU altogether. The catch: a random `v2`
# transform called once on a batch applies the *same* random crop (flip, colour jitter) to every
# image in it. Per-image randomness needs a call per image (as in a Dataset's `__getitem__`),
# or per-image operations written with tensors (for flips: `torch.where` on a random mask).

# %% [markdown]
# ## Measure each trick of the training step
#
# Now the step itself, with the data already in memory: each variant timed on the same batch of
# 64 images (the fastest block of steps, with the intra-op threads the setup chose). The step returns the loss
# *tensor*: a `loss.item()` inside a timed GPU step would wait for the GPU every step and hide
# the CPU-GPU overlap a real loop has.
#
# - **`channels_last`**: activations stored as N, H, W, C ([02](02_contiguity_strides_recipes.ipynb)),
#   the layout of oneDNN's and cuDNN's faster convolution kernels: `model.to(memory_format=...)`.
# - **autocast**: bfloat16 on a CPU (it pays only with native bf16: the
#   [next section](#Find-out-whether-bf16-pays-on-this-CPU)), float16 with `torch.amp.GradScaler`
#   on CUDA (bf16 on Ampere and newer, no scaler needed).
# - **`zero_grad(set_to_none=True)`** (the default) frees the gradients instead of zeroing them.
# - **`foreach`** (the default on CUDA only) updates all parameters with multi-tensor kernels;
#   **`fused=True`** does the whole update in one kernel.
# - **`torch.backends.cudnn.benchmark = True`** (CUDA only) tries several convolution algorithms
#   per input shape and keeps the fastest ([its own section](#Let-cuDNN-pick-the-fastest-convolution-per-input-shape:-cudnn.benchmark)
#   says when that pays).
# - **larger batches**: more images per second up to a point, but they change the optimisation
#   (the learning-rate rule is in [09](09_ddp_syncbn_recipes.ipynb)).

# %%
def step_timer(batch: int = 64, channels_last=False, amp=False, optimizer_kwargs=None, none=True):
    """Return (a function that runs one training step on a fixed batch, the model)."""
    torch.manual_seed(0)
    layout = torch.channels_last if channels_last else torch.contiguous_format
    model = small_cnn(mean, std).to(device, memory_format=layout)
    optimizer = torch.optim.SGD(
        model.parameters(), lr=0.05, momentum=0.9, **(optimizer_kwargs or {})
    )
    x = train_images[:batch].to(device).contiguous(memory_format=layout)
    y = train_labels[:batch].to(device)
    dtype = torch.bfloat16 if device.type == "cpu" else torch.float16
    scaler = torch.amp.GradScaler(device.type, enabled=amp and device.type == "cuda")

    def step() -> torch.Tensor:
        with torch.autocast(device.type, dtype=dtype, enabled=amp):
            loss = F.cross_entropy(model(x), y)
        optimizer.zero_grad(set_to_none=none)
        scaler.scale(loss).backward()
        scaler.step(optimizer)
        scaler.update()
        return loss.detach()  # no .item(): it would wait for the GPU inside the timed step

    return step, model


# foreach: the variant that is *not* this device's default
foreach_row = (
    ("foreach=False (the default here is True)", {"foreach": False})
    if device.type == "cuda"
    else ("foreach=True (CPU fallback)", {"foreach": True})
)
variants = {
    "fp32, contiguous (baseline)": {},
    "channels_last": {"channels_last": True},
    "autocast (bf16 on CPU, fp16 on CUDA)": {"amp": True},
    "zero_grad(set_to_none=False)": {"none": False},
    foreach_row[0]: {"optimizer_kwargs": foreach_row[1]},
    "fused=True": {"optimizer_kwargs": {"fused": True}},
}
torch.backends.cudnn.benchmark = False
AUTOCAST = "autocast (bf16 on CPU, fp16 on CUDA)"  # can be far slower on a CPU: timed apart
step_fns = {name: step_timer(**kw)[0] for name, kw in variants.items() if name != AUTOCAST}
amp_ms = 1000 * time_it(step_timer(amp=True)[0], min_run_time=0.2, best=True)
step_rounds = []  # three rounds in turns, each starting with another variant
for turn in range(3):
    order = list(step_fns)[turn:] + list(step_fns)[:turn]
    timed = time_in_turns({n: step_fns[n] for n in order}, rounds=1, min_run_time=0.1, best=True)
    step_rounds.append(timed)
BASELINE = "fp32, contiguous (baseline)"
step_ms = {name: 1000 * min(r[name] for r in step_rounds) for name in step_fns}
round_speeds = {  # each round's speed-up over the baseline in the same round
    name: [r[BASELINE] / r[name] for r in step_rounds] for name in step_fns
}
step_ms[AUTOCAST] = amp_ms  # timed once, apart: compared with the baseline's fastest round
round_speeds[AUTOCAST] = [step_ms[BASELINE] / amp_ms]
if device.type == "cuda":  # fixed shapes: cuDNN searches once, then uses its fastest algorithm
    torch.backends.cudnn.benchmark = True
    cudnn_ms = 1000 * time_it(step_timer()[0], min_run_time=0.2, best=True)
    step_ms["cudnn.benchmark = True"] = cudnn_ms
    round_speeds["cudnn.benchmark = True"] = [step_ms[BASELINE] / cudnn_ms]
    torch.backends.cudnn.benchmark = False
by_batch = time_in_turns(  # batches of 1, 64 and 256 in turns: a busy spell slows all three
    {b: step_timer(batch=b)[0] for b in (1, 64, 256)}, rounds=3, min_run_time=0.1, best=True
)
images_per_s = {b: b / seconds for b, seconds in by_batch.items()}
cpu_flags = Path("/proc/cpuinfo").read_text() if Path("/proc/cpuinfo").exists() else ""
native_bf16 = any(flag in cpu_flags for flag in ("avx512_bf16", "amx_bf16"))


# %% tags=["nbval-ignore-output"]
def beyond_noise(speeds: list[float]) -> str:
    """'faster' (or 'slower') when every round's speed-up, as printed, is 1.05 or more (or 0.95
    or less)."""
    if round(min(speeds), 2) >= 1.05:
        return "faster"
    return "slower" if round(max(speeds), 2) <= 0.95 else "within the noise"


tricks = pd.DataFrame(
    {
        "ms per step": step_ms,
        "speed vs baseline": {k: statistics.median(v) for k, v in round_speeds.items()},
        "rounds": {k: f"{min(v):.2f}-{max(v):.2f}" for k, v in round_speeds.items()},
        "verdict": {k: "" if k == BASELINE else beyond_noise(v) for k, v in round_speeds.items()},
    }
)
print(tricks.round(2).to_string())
print("verdict: faster or slower only when every round is, by 5 % or more")
print("images per second:", {f"batch {b}": round(images_per_s[b]) for b in (1, 64, 256)})
big_batch = images_per_s[256] / images_per_s[64]
big_verdict = "more" if big_batch > 1.1 else "fewer" if big_batch < 0.9 else "about as many"
print(f"batch 256 vs 64: {big_batch:.2f}×, {big_verdict} images per second")
print("native bf16 on this CPU (avx512_bf16 or amx_bf16):", native_bf16)
print("intra-op threads:", torch.get_num_threads())
print("parameter tensors in the model:", len(list(small_cnn(mean, std).parameters())))

# %%
fp32_step, fp32_model = step_timer()
fp32_loss = fp32_step().item()
bf16_loss = step_timer(amp=True)[0]().item()
check(
    abs(fp32_loss - bf16_loss) < 0.01,
    "a mixed-precision step computes the same loss within 0.01",
    measured=f"{abs(fp32_loss - bf16_loss):.1e}",
)
last_step, last_model = step_timer(channels_last=True)
with ieee_fp32():  # on CUDA: exact float32 convolutions, not TF32, for an equality check
    last_loss = last_step().item()
    same_fp32_loss = step_timer()[0]().item()
check(
    abs(last_loss - same_fp32_loss) < 1e-4
    and last_model[2][0].weight.is_contiguous(memory_format=torch.channels_last),
    "channels_last stores the weights as N, H, W, C and computes the same loss",
)


def parameters_after_a_step(**optimizer_kwargs) -> torch.Tensor:
    step, model = step_timer(optimizer_kwargs=optimizer_kwargs)
    step()
    return torch.cat([p.detach().flatten() for p in model.parameters()])


looped = parameters_after_a_step(foreach=False)
check(
    all(
        torch.allclose(parameters_after_a_step(**kw), looped, atol=1e-6)
        for kw in ({"foreach": True}, {"fused": True})
    ),
    "foreach and fused optimizers make the same update as the per-parameter loop",
)
batch_gain = images_per_s[64] / images_per_s[1]  # timed in turns, above
check(
    batch_gain >= 1.5,
    "batches of 64 process far more images per second than batches of 1",
    measured=f"{batch_gain:.1f}×",
    timing=True,
)

# %% [markdown]
# What `set_to_none` changes, printed:

# %%
demo = nn.Linear(2, 1)
demo(torch.ones(1, 2)).sum().backward()
demo_optimizer = torch.optim.SGD(demo.parameters(), lr=0.1)
demo_optimizer.zero_grad(set_to_none=False)
print("zero_grad(set_to_none=False):", demo.weight.grad)
demo_optimizer.zero_grad()
print("zero_grad():", demo.weight.grad)

# %% [markdown]
# What to notice: the checks state only what holds everywhere (same results; per-step
# overhead). Batches of 1 waste most of each step on overhead. From 64 to 256 images the verdict
# line says what this machine does: on a CPU a batch of 256 can even be slower per image, because
# its activations (256 × 16 × 32 × 32 floats, 16 MB, for the first layer alone) no longer fit in
# the CPU's caches; on a GPU images per second keep rising until the device is busy (the three
# batch sizes were timed in turns, so a busy moment slows all of them).
#
# The step variants were timed in three rounds, in turns, each round starting with another
# variant, and each round kept each variant's fastest block of steps. "ms per step" is a
# variant's fastest round; "speed vs baseline" the median of its three rounds' speed-ups over the
# baseline in the same round (a machine whose speed drifts during the cell slows both sides of
# a round), and "rounds" their range. The verdict says "faster" or "slower" only when every
# round is, by 5 % or more; otherwise the difference is within the noise of this machine. The
# autocast row, which can be many times slower on a CPU (the next section shows when), was timed
# once, apart, against the baseline's fastest round. The `set_to_none`, `foreach` and `fused`
# rows save per-tensor overhead, and this model has a handful of parameter tensors (printed
# above), not hundreds. Native bf16 is needed for CPU autocast to pay, but not enough: on a
# model this small the casts can cost what the faster multiplies save (the next section
# measures it).

# %% [markdown]
# ## Find out whether bf16 pays on this CPU
#
# A CPU without native bf16 instructions (AVX-512 BF16 or AMX) has no bf16 multiply, and what a
# bf16 convolution then costs depends on what oneDNN, PyTorch's CPU kernel library, may use. A
# script times one step in float32 and with bf16 autocast and names the convolution kernel the
# bf16 step ran; it runs here, then in two processes (side by side, each comparing its own two
# timings) whose oneDNN is limited with `ONEDNN_MAX_CPU_ISA` (read once, when oneDNN starts):
# to AVX-512 without its BF16 extension, and to AVX2, what most laptops before 2022 have.

# %%
# %%writefile runs/10_speedups/bf16_step.py
"""Time one training step of the course's CNN in float32 and with bf16 autocast on the CPU."""

import json
import os

import torch
import torch.nn.functional as F

from helpers.bench import convolution_kernel, time_it
from helpers.env import spare_a_core
from helpers.models import small_cnn

spare_a_core()
torch.manual_seed(0)
images = torch.randint(0, 256, (32, 3, 32, 32), dtype=torch.uint8)
labels = torch.randint(0, 2, (32,))
model = small_cnn([0.5] * 3, [0.25] * 3)
optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)


def step(bf16: bool) -> None:
    with torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
        loss = F.cross_entropy(model(images), labels)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()


ms = {
    "fp32 ms": 1000 * time_it(lambda: step(False), min_run_time=0.2),
    "bf16 ms": 1000 * time_it(lambda: step(True), min_run_time=0.2),
}
convolution = convolution_kernel(lambda: step(True))
print(
    json.dumps(
        {
            "ONEDNN_MAX_CPU_ISA": os.environ.get("ONEDNN_MAX_CPU_ISA", "(none)"),
            **ms,
            "oneDNN bf16": torch.ops.mkldnn._is_mkldnn_bf16_supported(),
            "bf16 convolution": convolution,
        }
    )
)


# %% tags=["nbval-ignore-output"]
def bf16_steps(isas: dict[str, str | None]) -> dict[str, dict]:
    """Run bf16_step.py once per ISA limit (None: no limit), side by side; return each result."""
    started = {
        name: subprocess.Popen(
            tethered([sys.executable, str(RUN / "bf16_step.py")]),  # ends if this kernel dies
            env={**os.environ, **({"ONEDNN_MAX_CPU_ISA": isa} if isa else {})},
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for name, isa in isas.items()
    }
    results = {}
    try:
        for name, process in started.items():
            out, err = process.communicate(timeout=120)
            if process.returncode != 0:
                raise RuntimeError(f"bf16_step.py ({name}) failed:\n{err[-2000:]}")
            results[name] = json.loads(out.splitlines()[-1])
    finally:  # one failed or timed out: the others do not run on into later cells
        for process in started.values():
            if process.poll() is None:
                process.kill()
                process.communicate()
    return results


x86 = platform.machine().lower() in {"x86_64", "amd64"}
capability = torch.backends.cpu.get_cpu_capability()  # the widest vector ISA ATen uses here
if x86:
    limits = {"AVX2 only": "AVX2"}
    if capability.startswith("AVX512"):  # elsewhere an AVX512_CORE limit changes nothing
        limits = {"AVX-512 without BF16": "AVX512_CORE", **limits}
    if device.type == "cpu":  # this process, oneDNN as the environment set it, a batch of 32
        fp32_step, bf16_step_here = step_timer(batch=32)[0], step_timer(batch=32, amp=True)[0]
        here = {
            "fp32 ms": 1000 * time_it(fp32_step),
            "bf16 ms": 1000 * time_it(bf16_step_here),
            "bf16 convolution": convolution_kernel(bf16_step_here),
        }
    else:  # the table above timed the GPU: time the CPU in a process of its own
        here = bf16_steps({"this CPU": None})["this CPU"]
    limit_here = os.environ.get("ONEDNN_MAX_CPU_ISA")  # set before this kernel started
    here_name = f"this CPU, ONEDNN_MAX_CPU_ISA={limit_here}" if limit_here else "this CPU"
    bf16_runs = {here_name: here} | bf16_steps(limits)
    bf16_frame = pd.DataFrame(bf16_runs).T[["fp32 ms", "bf16 ms", "bf16 convolution"]]
    bf16_frame = bf16_frame.astype({"fp32 ms": float, "bf16 ms": float})
    bf16_frame["bf16 speed vs fp32"] = bf16_frame["fp32 ms"] / bf16_frame["bf16 ms"]
    print(bf16_frame.round(2).to_string())
    print(f"batches of 32; native bf16 on this CPU: {native_bf16}; widest vector ISA: {capability}")
    # Only a CPU with AVX-512 can show the middle row; the others say what they lack.
    if "AVX-512 without BF16" in bf16_runs:
        check(
            bf16_runs["AVX-512 without BF16"]["bf16 convolution"] == "aten::mkldnn_convolution",
            "with AVX-512 but without its BF16 extension, oneDNN still runs the bf16 convolutions",
        )
    else:
        print(f"no AVX-512 row: the widest vector ISA ATen uses here is {capability}")
else:
    print(f"not an x86 CPU ({platform.machine()}): ONEDNN_MAX_CPU_ISA does not apply here")

# %%
if x86:
    avx2 = bf16_runs["AVX2 only"]
    check(
        not avx2["oneDNN bf16"] and avx2["bf16 convolution"] == "aten::thnn_conv2d",
        "limited to AVX2, PyTorch skips oneDNN for bf16 and runs ATen's reference convolution",
    )
    capped_speed = avx2["fp32 ms"] / avx2["bf16 ms"]
    check(
        capped_speed < 0.8,
        "on that fallback, bf16 autocast is slower than float32",
        measured=f"{capped_speed:.2f}×",
        timing=True,
    )

# %% [markdown]
# What to notice: the same step on the same CPU, and the "speed-up" depends on the instructions
# oneDNN may use. Limited to AVX2, PyTorch does not call oneDNN for bf16 at all
# (`torch.ops.mkldnn._is_mkldnn_bf16_supported()` is `False`) and runs ATen's reference
# convolution (`aten::thnn_conv2d`: unfold, then one matrix product): that row is the cost of
# that fallback, not of converting to and from bf16. With AVX-512 but no BF16, oneDNN's own
# kernels emulate bf16 with float32 instructions. Before turning on CPU autocast, check the flags
# (`lscpu | grep -o 'avx512_bf16\|amx_bf16'`) or, better, time one step both ways, as here.

# %% [markdown]
# ## Stack the tricks: the ladder
#
# The same CIFAR2 training steps (batch 64), timed as tricks are stacked: each rung adds one
# trick to the rungs kept above it, and is timed 5 times. A rung is **kept** only if it beats
# the best rung so far beyond the noise: its median lower by at least 5 % *and* by more than 1.5
# times the two rungs' spreads added (each spread is the median absolute deviation of its
# repeats, so a single slow repeat, the machine busy for a moment, does not decide). Otherwise
# it is "no faster" (the difference is within the spread) or "slower", and dropped from the
# stack (data rungs too). A rung whose warm-up steps already take three times the best rung's
# step is timed one step per repeat: its verdict is plain, and more steps would only cost time. `helpers.ladder` holds the code. The compile rung
# is skipped here (its compilation alone would take much of this notebook's budget with an
# empty cache); `make bench` measures it, and its results are shown after. The `mad_ms` column
# is each rung's spread as the rule uses it (the median absolute deviation of its repeats), so
# every verdict can be checked by hand from the table.

# %%
rows = ladder.run(device, steps=3, repeats=5, compile=False)
measured_here = pd.DataFrame([r for r in rows if "skipped" not in r]).set_index("rung")
measured_here["mad_ms"] = [ladder.deviation(times) for times in measured_here.times_ms]

# %% tags=["nbval-ignore-output"]
print(f"measured now on {ladder.device_name(device)}, torch {torch.__version__}")
columns = ["median_ms", "mad_ms", "min_ms", "max_ms", "speedup", "verdict"]
print(measured_here[columns].round(2).to_string())
if device.type == "cpu":
    above = measured_here.iloc[:-1]
    stacked_on = above[above.kept].median_ms.iloc[-1]  # the best rung it was stacked on
    saved = stacked_on - measured_here.median_ms.iloc[-1]
    collation = (epoch_seconds["DataLoader"] - epoch_seconds["slicing"]) * 1000 / (10_000 / 64)
    print(
        f"last rung: {abs(saved):.1f} ms per step {'faster' if saved > 0 else 'slower'} than the "
        f"rung it stacks on; the collation it skips cost "
        f"{collation:.2f} ms per batch in the slicing section"
    )


def plot_ladder(frame: pd.DataFrame, title: str) -> None:
    _, ax = plt.subplots(figsize=(7, 0.45 * len(frame) + 1))
    colors = ["tab:blue" if kept else "tab:gray" for kept in frame.kept]
    ax.barh(frame.index[::-1], frame.speedup[::-1], color=colors[::-1])
    ax.axvline(1, color="black", linewidth=0.8)
    ax.set_xlabel("speed relative to the baseline (gray: dropped, not faster beyond the noise)")
    ax.set_title(title)
    plt.show()


plot_ladder(measured_here, f"CIFAR2 training steps on {ladder.device_name(device)}")

# %% [markdown]
# The ladder times its rungs one after the other, so a busy moment on the machine can fall on one
# rung only. The check of its main claim times the two data rungs again **in turns** (baseline,
# decoded once, baseline, ...: `ladder.in_turns`), one step at a time on one thread, and keeps
# each one's fastest step: a busy spell then slows both, and only adds time.

# %%
data_rungs = ["baseline: decode JPEGs every step", "+ decoded once, kept in memory"]
data_s = ladder.in_turns(
    data_rungs, device, steps=1, rounds=12, threads=1
)  # the fastest of 12 one-step turns each: a busy machine only adds time to a step
data_gain = data_s[data_rungs[0]] / data_s[data_rungs[1]]

# %% tags=["nbval-ignore-output"]
print({name: f"{1000 * s:.1f} ms per step" for name, s in data_s.items()}, f"{data_gain:.2f}×")

# %%
check(
    data_gain >= 1.1,
    "decoding once instead of every step makes a step at least 1.1× faster (timed in turns)",
    measured=f"{data_gain:.2f}×",
    timing=True,
)

# %% tags=["nbval-ignore-output"]
# The step tricks, checked apart from the data: a trick the ladder kept must not be slower (by
# over 5 %) than the baseline step when the two are timed again in turns (another model
# instance, a fixed batch: the per-trick table's steps). The table above timed each variant
# once, one after the other, so a busy moment can fall on one row only; in turns it slows both.
# Which tricks are kept differs by CPU and run.
step_rungs = {
    "+ channels_last": "channels_last",
    "+ mixed precision (autocast)": "autocast (bf16 on CPU, fp16 on CUDA)",
}
kept_tricks = [rung for rung in step_rungs if measured_here.loc[rung].kept]
baseline_name = "fp32, contiguous (baseline)"
in_turns = {}
for rung in kept_tricks:
    trick = step_rungs[rung]
    pair = {name: step_timer(**variants[name])[0] for name in (baseline_name, trick)}
    seconds = time_in_turns(pair, rounds=5, min_run_time=0.1)
    in_turns[rung] = seconds[baseline_name] / seconds[trick]
if in_turns:
    check(
        all(speed > 0.95 for speed in in_turns.values()),
        "no step trick the ladder kept was slower (by over 5 %) than the baseline, timed in turns",
        measured=", ".join(f"{k}: {v:.2f}×" for k, v in in_turns.items()),
        timing=True,
    )
else:
    print("no step trick was kept on this run: nothing to cross-check")

# %% [markdown]
# `make bench` runs the full ladder, compile rung included, with more repeats, and writes a JSON
# file with the device, versions and date. The results committed with the course (in
# `helpers/results`, so a pip install, as on Colab, has them too):

# %% tags=["nbval-ignore-output"]
committed = ladder.committed_results()
for path in committed:
    result = json.loads(path.read_text())
    frame = pd.DataFrame([r for r in result["rungs"] if "skipped" not in r]).set_index("rung")
    print(
        f"{path.name}: {result['device']}, torch {result['torch']}, {result['date']}, "
        f"{result['threads']} thread(s), median of {result['repeats']} × {result['steps']} steps"
    )
    frame["mad_ms"] = [ladder.deviation(times) for times in frame.times_ms]
    columns = ["median_ms", "mad_ms", "min_ms", "max_ms", "speedup", "warmup_s", "verdict"]
    print(frame[columns].round(2).to_string())
    plot_ladder(frame, f"committed: {result['device']} ({result['date']})")
if not committed:
    print("no committed results here: see helpers/results in the course's repository")

# %%
rederived = []  # each committed verdict, derived again from its repeats by today's keep rule
for path in committed:
    best = None
    for row in json.loads(path.read_text())["rungs"]:
        if "skipped" not in row:
            times = [t / 1000 for t in row["times_ms"]]
            rederived.append(ladder.verdict(times, best) == row["verdict"])
            best = times if row["verdict"] == "kept" else best
if committed:
    check(
        bool(rederived) and all(rederived),
        "every committed verdict follows from its own repeats under the keep rule above",
        measured=f"{sum(rederived)} of {len(rederived)} rungs",
    )
else:
    print("no committed results to re-derive")

# %% [markdown]
# What to notice: the verdicts, not the digits. Decoding once is the large win (the check
# above asks for it timed in turns, which a busy machine disturbs least); a step trick
# is kept only where its effect is larger than the spread of its repeats, which on a CPU is not
# always the case (run the cell again and a borderline rung can change its verdict: that is the
# lesson). The compile rung's `warmup_s`
# is its compilation; a later rung's larger `warmup_s` is a recompilation (autocast changes the
# graph). On a CPU the last rung ("on the device" is host memory) skips only the DataLoader's
# collation, which the line under the table compares with what that collation cost in the
# slicing section: a fraction of a millisecond in a step of many. A larger difference that the
# table shows for this rung, faster or slower, is not the collation's: run the cell again and
# see whether it stays.
# On a GPU the same rung also skips the copy to the device each step. On a GPU the ladder is
# the headline result: a GPU file appears here once one has been measured on a real GPU (with
# the CUDA, cuDNN and driver versions); no GPU number is estimated.

# %% [markdown]
# ## See how far from the hardware limit a step runs
#
# `torch.utils.flop_counter.FlopCounterMode` counts the floating-point operations of the
# matrix multiplications and convolutions a piece of code runs (forward and backward). Divided by
# the step time it gives the achieved FLOP/s. On a CPU, a rough bound of the float32 peak is
# cores × clock × FLOPs per cycle, counting two FMA units at full vector width (AVX-512: 16 lanes
# × 2 FLOPs × 2 units = 64; AVX2: 32). It is rough both ways: Zen 4 and some Xeons execute
# AVX-512 at half that rate, and `/proc/cpuinfo` reports the clock of this moment, which turbo
# can exceed.

# %%
torch.manual_seed(0)
cnn = small_cnn(mean, std).to(device)
x64, y64 = train_images[:64].to(device), train_labels[:64].to(device)
with FlopCounterMode(display=False) as counter:
    F.cross_entropy(cnn(x64), y64).backward()
flops_per_step = counter.get_total_flops()
first_conv = cnn[2][0]
with FlopCounterMode(display=False) as one_conv:
    first_conv(torch.randn(64, 3, 32, 32, device=device))
analytic = 2 * 64 * 32 * 32 * first_conv.out_channels * first_conv.in_channels * 3 * 3
print(f"{flops_per_step / 1e9:.3f} GFLOP per training step of 64 images")
print(f"first conv: counted {one_conv.get_total_flops():,}, 2·N·H·W·Cout·Cin·k² = {analytic:,}")

# %% tags=["nbval-ignore-output"]
# Only the rungs that train from memory: the JPEG rungs' time is mostly decoding, not FLOPs.
from_memory = measured_here[[config["data"] != "jpeg" for config in measured_here.config]]
limits = from_memory[["median_ms"]].copy()
limits["autocast"] = [config["amp"] for config in from_memory.config]
limits["GFLOP/s"] = flops_per_step / (limits.median_ms / 1000) / 1e9
if device.type == "cpu":
    mhz = [float(line.split(":")[1]) for line in cpu_flags.splitlines() if "cpu MHz" in line]
    isa = torch.backends.cpu.get_cpu_capability()  # what ATen's kernels use here
    per_cycle = 64 if isa.startswith("AVX512") else 32 if isa == "AVX2" else 16
    peak = torch.get_num_threads() * (max(mhz) / 1000 if mhz else 3.0) * 1e9 * per_cycle
    limits["% of rough fp32 peak"] = 100 * limits["GFLOP/s"] * 1e9 / peak
    print(
        f"rough fp32 peak of {torch.get_num_threads()} core(s): {peak / 1e9:.0f} GFLOP/s "
        f"({per_cycle} FLOPs per cycle)"
    )
else:
    print(f"on {device.type}: achieved GFLOP/s only (compare with your GPU's data sheet)")
print(limits.round(1).to_string())

# %%
check(
    one_conv.get_total_flops() == analytic,
    "the flop counter counts a convolution as 2·N·H·W·Cout·Cin·k²",
)


# %% [markdown]
# What to notice: a small CNN on batches of 64 reaches a modest fraction of the peak: its
# layers are small, memory traffic (activations, BatchNorm, ReLU) costs time without FLOPs, and
# Python and dispatch overhead is paid for every operator. The autocast rungs (bf16 on a CPU,
# fp16 on CUDA) are listed against the float32 peak; AVX-512 BF16 doubles the peak for bf16 dot products, and AMX raises it far more.
# Bigger batches, fused kernels (`torch.compile`) and lower precision are the levers. On a GPU
# the comparison is with the data sheet's peak for the precision used (tensor cores for
# fp16/bf16), and a small model is far from it until its batches are large.

# %% [markdown]
# ## On a GPU
#
# These recipes are about a CUDA device: its tensor cores, cuDNN's kernel choice, the calls that
# make the CPU wait for it, and copying the next batch while this one trains. On a CPU each one
# runs its CPU branch or says that it needs a GPU; open the notebook on a GPU (Colab: Runtime →
# Change runtime type) to see them measured. No GPU number is stored here.

# %% [markdown]
# ## Copy the next batch to the GPU while this one trains
#
# On a GPU, a batch must travel from host memory to the device. Two things make that copy
# overlap with computation: `pin_memory=True` in the DataLoader (page-locked host memory, which
# the GPU can read by DMA) and `x.to(device, non_blocking=True)` (the copy is queued and the
# Python thread moves on; from ordinary pageable memory the copy is synchronous anyway). The
# `data_prefetcher` found in older training code (NVIDIA's Apex examples) goes one step
# further: it issues the next batch's copy, and its normalisation, on a second **CUDA stream** while the current batch trains on the default one.
# Rewritten for today's PyTorch:

# %%
class DevicePrefetcher:
    """Yield a loader's batches on ``device``, converted to floats and normalised there.

    On CUDA the next batch is copied and normalised on a side stream while the current one is
    used; elsewhere the batches are simply moved and normalised in turn. Feed the batches to a
    model that does not normalise again (for the course's CNN: ``small_cnn(mean, std)[2:]``).
    """

    def __init__(self, loader, device: torch.device, mean, std) -> None:
        self.loader, self.device = loader, device
        self.mean = torch.tensor(mean, device=device).view(1, 3, 1, 1)
        self.std = torch.tensor(std, device=device).view(1, 3, 1, 1)

    def _prepare(self, x: torch.Tensor, y: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        x = x.to(self.device, non_blocking=True).float().div_(255)
        return (x - self.mean) / self.std, y.to(self.device, non_blocking=True)

    def __iter__(self):
        if self.device.type != "cuda":
            for x, y in self.loader:
                yield self._prepare(x, y)
            return
        side = torch.cuda.Stream(self.device)
        batches = iter(self.loader)

        def preload():
            batch = next(batches, None)
            if batch is None:
                return None
            with torch.cuda.stream(side):  # queued on the side stream
                return self._prepare(*batch)

        ready = preload()
        while ready is not None:
            main = torch.cuda.current_stream(self.device)  # this device's, not cuda:0's
            main.wait_stream(side)  # the copy must finish first
            x, y = ready
            # The tensors were made on the side stream but are used on this one: tell the
            # caching allocator, so it does not reuse their memory while this stream needs it.
            x.record_stream(main)
            y.record_stream(main)
            ready = preload()  # start the next copy before returning this batch
            yield x, y


pinned = DataLoader(
    TensorDataset(train_images[:256], train_labels[:256]),
    batch_size=64,
    pin_memory=device.type == "cuda",
)
prefetched = list(DevicePrefetcher(pinned, device, mean, std))
normalise = v2.Normalize(mean, std)
expected = [(normalise(x.float() / 255), y) for x, y in pinned]
same = all(
    torch.allclose(a.cpu(), b, atol=1e-6) and torch.equal(ay.cpu(), by)
    for (a, ay), (b, by) in zip(prefetched, expected, strict=True)
)
print(f"{len(prefetched)} batches on {prefetched[0][0].device}, {prefetched[0][0].dtype}")


# %% [markdown]
# On a GPU the next cell times one epoch of training (batches of 256, the model without its own
# normalisation layers) fed three ways: from pageable memory, from pinned memory with
# `non_blocking=True`, and through the side-stream prefetcher. On a CPU there is no copy to
# hide, so it only says so.

# %% tags=["nbval-ignore-output"]
def epoch_seconds_fed_by(batches, warmup: int = 3) -> float:
    """Train the normalisation-free CNN on ``batches``; seconds after ``warmup`` steps."""
    torch.manual_seed(0)
    net = small_cnn(mean, std)[2:].to(device)  # the prefetcher already normalised the images
    optimizer = torch.optim.SGD(net.parameters(), lr=0.05, momentum=0.9)
    began = None
    for i, (x, y) in enumerate(batches):
        if i == warmup:
            sync()
            began = time.perf_counter()
        loss = F.cross_entropy(net(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    sync()
    return time.perf_counter() - began


if device.type == "cuda":
    whole = TensorDataset(train_images, train_labels)
    pageable = DataLoader(whole, batch_size=256, drop_last=True)
    page_locked = DataLoader(whole, batch_size=256, drop_last=True, pin_memory=True)
    prepare = DevicePrefetcher(pageable, device, mean, std)._prepare
    fed = {
        "pageable memory": epoch_seconds_fed_by(prepare(x, y) for x, y in pageable),
        "pinned + non_blocking": epoch_seconds_fed_by(prepare(x, y) for x, y in page_locked),
        "pinned + side-stream prefetcher": epoch_seconds_fed_by(
            DevicePrefetcher(page_locked, device, mean, std)
        ),
    }
    print({name: f"{1000 * s:.0f} ms per epoch" for name, s in fed.items()})
else:
    print(f"no GPU here ({device.type}): nothing to copy, so no timing; the prefetcher only")
    print("moves the conversion and normalisation out of the model")

# %%
branch = "its side-stream branch" if device.type == "cuda" else "its CPU branch (no CUDA stream)"
check(same, f"the prefetcher yields exactly the normalised batches of the loader, run by {branch}")

# %% [markdown]
# On the GPU, a batch of uint8 images is 4× smaller to copy than floats, which is why the
# normalisation runs after the copy. Most of the time `pin_memory=True` with `non_blocking=True`
# already hides the copy; a side stream matters when the copies are large next to the step.
# Whatever feeds normalised batches, the model must not normalise them again: the course's CNN
# normalises in its first two layers, so the timing above trains `small_cnn(mean, std)[2:]`.

# %% [markdown]
# ## Let float32 use the GPU's tensor cores: TF32
#
# On Ampere and newer GPUs, *TF32* runs float32 matrix products on tensor cores with a 10-bit
# mantissa (bfloat16's 8-bit exponent range, float16's precision), several times faster than
# full float32 and with no code change but a flag. PyTorch's defaults differ by operation:
# float32 **matmuls** run in full precision unless you call
# `torch.set_float32_matmul_precision("high")`, while **cuDNN convolutions** already use TF32.
# Two float32 runs that should agree can then differ in the third decimal: the course's equality
# checks run inside `helpers.bench.ieee_fp32()`, which asks for IEEE float32 in the block. The
# per-backend flags below are today's API; `torch.backends.cuda.matmul.allow_tf32 = True` is the
# older form of the same switch. On a CPU, `"medium"` lets oneDNN compute float32 matmuls in
# bf16 where the CPU has it (the `mkldnn` flag).

# %%
flags = {
    "cuda.matmul": lambda: torch.backends.cuda.matmul.fp32_precision,
    "cudnn.conv": lambda: torch.backends.cudnn.conv.fp32_precision,
    "mkldnn.matmul": lambda: torch.backends.mkldnn.matmul.fp32_precision,
}
precision_flags = {}
for setting in ("highest", "high", "medium"):
    torch.set_float32_matmul_precision(setting)
    precision_flags[setting] = {name: get() for name, get in flags.items()}
torch.set_float32_matmul_precision("highest")  # back to the default
print(pd.DataFrame(precision_flags).T.to_string())
if device.type == "cuda":
    a, b = torch.randn(4096, 4096, device=device), torch.randn(4096, 4096, device=device)
    exact = (a.double() @ b.double()).float()
    for setting in ("highest", "high"):
        torch.set_float32_matmul_precision(setting)
        ms = 1000 * time_it(lambda: a @ b)
        error = ((a @ b) - exact).abs().max().item()
        print(f"{setting}: {ms:.2f} ms per 4096² matmul, max |error| {error:.1e}")
    torch.set_float32_matmul_precision("highest")
else:
    print(f"no tensor cores on {device.type}: on a GPU this cell times a matmul both ways")

# %%
check(
    precision_flags["high"]["cuda.matmul"] == "tf32"
    and precision_flags["highest"]["cuda.matmul"] == "ieee",
    'set_float32_matmul_precision("high") is the switch that lets CUDA matmuls use TF32',
)
with ieee_fp32():
    inside = torch.backends.cudnn.conv.fp32_precision
check(
    torch.backends.cudnn.conv.fp32_precision == "tf32" and inside == "ieee",
    "cuDNN convolutions default to TF32 in this torch; ieee_fp32() turns that off for a block",
)

# %% [markdown]
# ## Know which calls make the CPU wait for the GPU
#
# GPU only, in its timing. CUDA operations are **asynchronous**: a call such as `x @ x` or
# `y.sum()` queues a kernel and returns at once, and the CPU runs ahead, queueing the next ones
# (the CUDA semantics notes, "Asynchronous execution", pytorch.org/docs/stable/notes/cuda.html).
# A call that needs a **value** on the CPU must wait until every kernel queued before it has
# finished: a *synchronisation*. That is
#
# - `.item()`, `.tolist()`, `print(t)`, `.cpu()` and `.numpy()` (a copy to host memory);
# - `if t:`, `bool(t)`, `while loss > 0.1:` (Python needs the value);
# - operations whose **output size depends on the values**: `nonzero()`, `torch.where(mask)`,
#   `t[mask]` with a boolean mask, `unique()`: the docstring of `torch.nonzero` says it "causes
#   host-device synchronization" (and so does `torch.argwhere`'s);
# - `torch.cuda.synchronize()`, which waits on purpose (every GPU timing needs it).
#
# A sync costs the wait, not the copy: one `.item()` per step stops the CPU from queueing the
# next step while the GPU works. Keep metrics as tensors (`loss_sum += loss.detach()`) and call
# `.item()` once per epoch or per log line. To find stray syncs in a loop,
# `torch.cuda.set_sync_debug_mode("warn")` warns at each (`"error"` raises); its docstring calls
# it experimental, and not every synchronising operation reports. The message it prints:
#
# - GPU only: ⛔ `RuntimeError: called a synchronizing CUDA operation`
#
# On a CPU nothing is queued, so there is nothing to wait for. What the CPU can show is why the
# value-dependent operations must wait: two inputs of the same shape give outputs of different
# shapes, so the output cannot even be allocated before the values are known.

# %%
same_shape = [torch.tensor([1.0, -2.0, 3.0, -4.0]), torch.tensor([1.0, 2.0, 3.0, -4.0])]
kept = [t[t > 0].shape[0] for t in same_shape]
print("input shapes:", [tuple(t.shape) for t in same_shape], "| t[t > 0] keeps:", kept)
if torch.cuda.is_available():
    x = torch.randn(4096, 4096, device="cuda")
    torch.cuda.synchronize()
    began = time.perf_counter()
    y = x @ x @ x  # queued: returns before the GPU is done
    queued = time.perf_counter() - began
    began = time.perf_counter()
    y.sum().item()  # waits for both products, then copies one number
    waited = time.perf_counter() - began
    print(f"queue two products: {1e3 * queued:.3f} ms | .item() after them: {1e3 * waited:.3f} ms")
    calls = {
        "y.sum()": lambda: y.sum(),
        ".item()": lambda: y[0, 0].item(),
        ".tolist()": lambda: y[0, :3].tolist(),
        ".cpu()": lambda: y[:2].cpu(),
        "bool(t)": lambda: bool(y[0, 0] > 0),
        ".nonzero()": lambda: (y[0] > 0).nonzero(),
        "t[mask]": lambda: y[0][y[0] > 0],
    }
    torch.cuda.set_sync_debug_mode("warn")
    for name, call in calls.items():
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            call()
        synced = any("synchronizing" in str(w.message) for w in caught)
        print(f"{name:<11} synchronises: {synced}")
    torch.cuda.set_sync_debug_mode("default")
else:
    print("no CUDA device here: on a GPU this cell times a queued product against .item()")
    print("and lists which calls warn under torch.cuda.set_sync_debug_mode('warn')")

# %%
check(kept[0] != kept[1], "equal input shapes, different output shapes: t[mask] needs the values")

# %% [markdown]
# On a GPU the cell above prints both times and, for each call, whether the debug mode flagged
# it (not run here: no GPU). By the semantics cited above, the queued products should return
# well before the `.item()` after them, and `y.sum()` should be the call that is not flagged; a
# call that synchronises without being flagged is the debug mode's documented gap. In this course,
# 09's training loop keeps its running loss on the device and 11 shows what a running loss
# that keeps its graph costs in memory.

# %% [markdown]
# ## Let cuDNN pick the fastest convolution per input shape: `cudnn.benchmark`
#
# GPU only. cuDNN has several algorithms for each convolution, and which is fastest depends on
# the shapes and the GPU. With `torch.backends.cudnn.benchmark = True` (default `False`), the
# **first** call with a new configuration times up to `torch.backends.cudnn.benchmark_limit`
# candidates (10 by default) and caches the winner; later calls with the same configuration reuse it. The configuration is
# everything the kernel depends on: the input shape **including the batch size**, dtype,
# memory format, weight shape, stride, padding, dilation, groups and device. So:
#
# - it pays when shapes repeat: fixed image size and batch size, as in most CNN training;
# - a smaller last batch benchmarks again (use `drop_last=True`), and variable image sizes
#   (detection, text lengths through a CNN) benchmark at every new size, which can cost more
#   than it saves;
# - the timed choice can differ from run to run, so results are not bit-for-bit reproducible
#   (13 · Turn on deterministic algorithms… sets it `False` for that reason), and the winner may
#   need a large workspace (memory);
# - it affects cuDNN convolutions only, not matrix products; on a CPU it does nothing.
#
# The PyTorch docs state this in the reproducibility notes (pytorch.org/docs/stable/notes/
# randomness.html, "CUDA convolution benchmarking").

# %%
cudnn = torch.backends.cudnn
benchmark_default = cudnn.benchmark
print(f"cudnn.benchmark: {cudnn.benchmark} | benchmark_limit: {cudnn.benchmark_limit}")
if torch.cuda.is_available() and cudnn.is_available():
    conv = nn.Conv2d(64, 64, 3, padding=1).cuda()

    def first_call_ms(batch: int) -> float:
        x = torch.randn(batch, 64, 56, 56, device="cuda")
        torch.cuda.synchronize()
        began = time.perf_counter()
        conv(x)
        torch.cuda.synchronize()
        return 1e3 * (time.perf_counter() - began)

    torch.backends.cudnn.benchmark = True
    calls = {"batch 32, first": first_call_ms(32), "batch 32, again": first_call_ms(32)}
    calls["batch 31, first"] = first_call_ms(31)
    torch.backends.cudnn.benchmark = benchmark_default
    print({name: f"{ms:.2f} ms" for name, ms in calls.items()})
else:
    print("no cuDNN device here: on a GPU this cell times the first call per batch size")

# %%
check(
    not cudnn.is_available() or cudnn.benchmark_limit == 10,
    "cudnn.benchmark tries at most benchmark_limit = 10 algorithms per configuration by default",
)

# %% [markdown]
# On a GPU the first call with batch 32 and the first with batch 31 are the slow ones (they
# benchmark); the second call with batch 32 reuses the cached choice. Turn it on for training
# with fixed shapes, and measure once with and once without.

# %% [markdown]
# ## Old code you will meet
#
# | old form | write today | why |
# |---|---|---|
# | `from apex import amp; model, opt = amp.initialize(model, opt, opt_level="O1")` | `torch.autocast(device_type, dtype)` + `torch.amp.GradScaler(device_type)` | apex's amp was replaced by PyTorch's own; it is unmaintained |
# | `torch.cuda.amp.autocast()`, `torch.cuda.amp.GradScaler()` | `torch.autocast("cuda")`, `torch.amp.GradScaler("cuda")` | the device-specific forms are deprecated and warn |
# | `from prefetch_generator import BackgroundGenerator` | `DataLoader(num_workers=..., prefetch_factor=..., persistent_workers=True)`, or a thread as above for I/O | workers also parallelise CPU-heavy decoding |
# | `optimizer.zero_grad()` with `set_to_none=False` to "keep memory" | the default `set_to_none=True` | cheaper, and a missing gradient is `None`, not silently 0 |
# | `torch.backends.cuda.matmul.allow_tf32 = True`, `torch.backends.cudnn.allow_tf32` | `torch.set_float32_matmul_precision("high")`, `torch.backends.cudnn.conv.fp32_precision` | the older booleans still work without a warning in 2.15; the newer settings name the precision per backend. Do not mix them: once a new setting is used, reading an old flag raises `RuntimeError` |
# | `on_trace_ready=torch.profiler.tensorboard_trace_handler(folder)` | `export_chrome_trace` (or `on_trace_ready` writing one), opened in Perfetto | the TensorBoard profiler plugin is deprecated |
# | `torch.autograd.profiler.profile(use_cuda=True)` | `torch.profiler.profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA])` | removed argument: `TypeError: ... unexpected keyword argument 'use_cuda'` |
# | `torchvision.io.read_file` + `decode_jpeg`, `decode_image`, `read_image` | `torchcodec.decoders.decode_jpeg` or `decode_image` on the path (TorchCodec 0.16 or newer, for your torch; RGB by default), or PIL's `Image.open` | deprecated since torchvision 0.29, with a `DeprecationWarning` that Python hides by default |
# | `torchvision.io.encode_png`, `encode_jpeg`, `write_png` | `torchcodec.encoders.PngEncoder`, `JpegEncoder`, or PIL's `Image.save` | deprecated since torchvision 0.29, as above |
# | `python -m torch.utils.bottleneck main.py` | `torch.profiler` (above), or `python -m cProfile -s cumtime main.py` for the Python side | removed: `No module named 'torch.utils.bottleneck'` |

# %% [markdown]
# ## Exercises

# %% [markdown]
# ### Exercise 1 · Flip each image of a batch on its own
#
# A random `v2` transform called on a batch flips all of its images or none (the section "Decode
# JPEGs in batches" shows the same for crops). Write `flip_each(images, generator)`: for a batch
# `(N, C, H, W)` on any device, return a batch in which each image is flipped left to right with
# probability ½, independently of the others, drawing its random numbers from `generator` (a
# `torch.Generator` on the batch's device). Write it in tensor operations on the whole batch, as
# the recipe says; the check looks at the result only: a batch of 512 images, twice with the
# same seed and once with another (and on the GPU too, where there is one).
#
# <details><summary>Hint 1</summary>
#
# Draw one random number per image, not one per batch, and turn it into a mask of `N`
# booleans. `torch.rand` takes `generator=` and `device=`.
# </details>
#
# <details><summary>Hint 2</summary>
#
# Make the flipped version of the whole batch once (`flip` along the width, the last dimension),
# then pick, image by image, the flipped or the original one with the mask: `torch.where` does
# that once the mask is shaped to broadcast over each image's channels, rows and columns.
# </details>

# %%
flip_each = ...  # a function (images, generator) -> the batch, each image flipped or not

# %%
ch10.exercise_1(flip_each)


# %% [markdown]
# #### Solution

# %% tags=["solution"]
# Solution: open it once you have tried. It uses its own names, so your answer stays as it is.
def solution_flip_each(images: torch.Tensor, generator: torch.Generator) -> torch.Tensor:
    draws = torch.rand(len(images), generator=generator, device=images.device)
    return torch.where((draws < 0.5).view(-1, 1, 1, 1), images.flip(-1), images)


ch10.exercise_1(solution_flip_each)

# %% [markdown]
# ### Exercise 2 · How much does a worker save?
#
# Using `timed_training` and `slow_disk` from above, measure training with 0, 1 and 2 workers
# (`persistent_workers=True` where there are workers): fill `by_workers` with
# `{0: result, 1: result, 2: result}`, each result what `timed_training` returns. The plain loop
# (0 workers) is measured again beside the others, so that the three meet the same load on the
# machine; the check compares each waiting share with it.
#
# <details><summary>Hint 1</summary>
#
# Each result is one call of `timed_training` on a loader over the slow disk; only the number
# of worker processes differs between the three.
# </details>
#
# <details><summary>Hint 2</summary>
#
# The cell that builds `pipelines` in "Stop the training loop from waiting for data" makes a
# DataLoader with 4 workers over `slow_disk`: the same with 1 and with 2 (a batch of 64, as
# there), and the plain loop's DataLoader, which has none, for 0.
# </details>

# %%
by_workers = ...  # {number of workers: timed_training(...) with that DataLoader}

# %%
ch10.exercise_2(by_workers)


# %% [markdown]
# #### Solution

# %% tags=["solution"]
# Solution: open it once you have tried. It uses its own names, so your answer stays as it is.
def solution_loader(workers: int) -> DataLoader:
    return DataLoader(slow_disk, batch_size=64, num_workers=workers, persistent_workers=workers > 0)


solution_by_workers = {n: timed_training(solution_loader(n)) for n in (0, 1, 2)}
ch10.exercise_2(solution_by_workers)

# %% [markdown]
# ## Summary
#
# - Profile first: `torch.profiler` with `record_function` labels (a warm-up step left out by a
#   `schedule`, `prof.step()` per step) shows the split between data, forward, backward and
#   optimizer; `record_shapes`/`profile_memory` say which layer; open the trace in Perfetto and,
#   on a GPU, look for gaps in the stream's row.
# - Feed the step: decode once (or in batches, on the GPU), slice batches from tensors, use
#   workers (persistent) or a prefetch thread for slow storage, `pin_memory` + `non_blocking` on
#   GPUs; the loop's own "waiting ms per step" says whether it is needed. A random `v2` transform
#   on a batch draws one set of parameters for all of it; a mask draws one per image.
# - Speed up the step where it pays on *your* device: `channels_last`, autocast (bf16 only with
#   native support on CPUs), TF32 on Ampere+ GPUs (`set_float32_matmul_precision("high")`).
#   Time steps without `.item()` inside.
# - Stack tricks one at a time and keep only what beats the noise of repeated measurements
#   (`make bench`); a verdict that flips between runs is within the noise.
#
# Next: the chapter's second cookbook notebook,
# [Faster inference, measured](10_speedups_inference_recipes.ipynb), then
# [11 · Memory](../11_memory.ipynb).
