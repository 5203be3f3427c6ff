# %% [markdown]
# # 10 · Speedups, measured
#
# [![Open In Colab](https://colab.research.google.com/assets/colab-badge.svg)](https://colab.research.google.com/github/pytorch-cookbook/pytorch-cookbook/blob/main/notebooks/10_speedups.ipynb)
#
# Lists of speed tricks are everywhere; measurements are rare. After this notebook you can find
# where a training step spends its time with `torch.profiler`, stop a loop from waiting for data
# (workers, a prefetch thread, a CUDA-stream prefetcher, data kept on the device), speed up the
# step (`channels_last`, mixed precision, `torch.compile`, fused optimizers), and speed up
# inference (Conv-BN fusion, merged branches, compilation, int8). Every trick is **timed on the
# machine that runs the notebook** and stacked into one ladder; where a trick does not help on a
# CPU, the table says so.
#
# **Prerequisites:** [02](02_contiguity_strides.ipynb) (memory layout),
# [05](05_datasets_dataloaders.ipynb) (DataLoader, workers), [07](07_training_loop.ipynb)
# (training loop). **Run time:** about 60 s on a laptop CPU (up to 15 s more the first time
# `torch.compile` runs, while its compiler cache is empty).

# %%
import sys

if (
    "google.colab" in sys.modules
):  # Colab: install the course's helpers and what the notebooks import
    import subprocess

    spec = "pytorch-cookbook[notebooks] @ git+https://github.com/pytorch-cookbook/pytorch-cookbook"
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", spec], check=True)

import json
import os
import queue
import threading
import time
import warnings
from pathlib import Path

import matplotlib.pyplot as plt
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
from helpers.bench import time_it
from helpers.check import check
from helpers.data import fetch
from helpers.datasets import SlowReads
from helpers.env import setup
from helpers.images import channel_stats, load_cifar2
from helpers.models import small_cnn

device = setup(seed=0)
RUN = Path("runs/10_speedups")
RUN.mkdir(parents=True, exist_ok=True)
train_images, train_labels, classes = load_cifar2("train")
test_images, test_labels, _ = load_cifar2("test")
mean, std = channel_stats(train_images)
print(f"CIFAR2: {len(train_images)} training and {len(test_images)} test images in memory")
print(f"intra-op threads: {torch.get_num_threads()} (one core left free, see 02)")

# %% [markdown]
# All timings below are medians after a warm-up. They differ from machine to machine and from
# moment to moment, so their cells are not compared by the tests; each section ends with a check
# of what matters, with a wide margin.

# %% [markdown]
# ## Profile one training step before optimising anything
#
# Guessing where time goes is usually wrong. `torch.profiler.profile` records every operator
# (and, on a GPU, every kernel); `record_function` labels the phases of the step, so the profile
# says how the time splits between **loading data, forward, backward and the optimizer**. First
# the straightforward pipeline: JPEG files decoded by `ImageFolder` for every batch.

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
    """Profile ``steps`` training steps of a fresh CNN, each phase labelled."""
    torch.manual_seed(0)
    model = small_cnn(mean, std).to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    activities = [ProfilerActivity.CPU]
    if device.type == "cuda":
        activities.append(ProfilerActivity.CUDA)
    batches = iter(loader)
    with profile(activities=activities) as prof:
        for _ in range(steps):
            with record_function("data"):
                x, y = next(batches)
                x, y = x.to(device), y.to(device)
            with record_function("forward"):
                loss = F.cross_entropy(model(x), y)
            with record_function("backward"):
                optimizer.zero_grad()
                loss.backward()
            with record_function("optimizer"):
                optimizer.step()
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
print(jpeg_profile.key_averages().table(sort_by="self_cpu_time_total", row_limit=8))

# %%
trace = json.loads((RUN / "trace.json").read_text())
check(
    len(trace["traceEvents"]) > 100, f"the trace ({RUN / 'trace.json'}) holds the recorded events"
)
jpeg_share, memory_share = shares.loc["data"]
check(
    jpeg_share > 2 * memory_share,
    "decoding JPEGs makes data loading a far larger share of the step",
    measured=f"{jpeg_share:.0%} vs {memory_share:.0%}",
)

# %% [markdown]
# What to notice: in the operator table, the convolutions' forward and backward
# (`aten::convolution_backward`, `aten::mkldnn_convolution`) lead; with JPEG files, decoding is
# a large part of each step, and with tensors in memory it almost disappears
# ([05](05_datasets_dataloaders.ipynb) built that cache). To look at the timeline, open
# `runs/10_speedups/trace.json` in [ui.perfetto.dev](https://ui.perfetto.dev) (or
# `chrome://tracing`): each phase is a bar, each operator a bar inside it. For long runs, pass
# `schedule=torch.profiler.schedule(wait=1, warmup=1, active=3)` and
# `on_trace_ready=torch.profiler.tensorboard_trace_handler(folder)` to profile a few steps only.

# %% [markdown]
# ## Stop the training loop from waiting for data
#
# The symptom the source notes describe: `nvidia-smi` shows the GPU at 0% most of the time,
# because each step waits for the next batch. A loop can measure it itself: time `next(batches)`
# separately from the rest. A data set on a slow disk (`SlowReads`: 0.6 ms of waiting per image,
# about as long as this CPU's step takes per batch) and three ways to read it:
#
# - plainly, in the training loop;
# - with a **background thread** that reads the next batches while the loop trains (what the
#   package `prefetch_generator`'s `BackgroundGenerator` does; written out below);
# - with DataLoader **workers**: `num_workers` processes, each keeping `prefetch_factor` batches
#   ready, kept alive between epochs with `persistent_workers=True` (2 here: waiting for a disk
#   needs no free core, but DataLoader warns above one worker per core).


# %%
class BackgroundBatches:
    """Iterate ``iterable`` in a background thread, keeping up to ``ahead`` items ready."""

    def __init__(self, iterable, ahead: int = 4) -> None:
        self.items: queue.Queue = queue.Queue(maxsize=ahead)
        self.thread = threading.Thread(target=self._fill, args=(iterable,), daemon=True)
        self.thread.start()

    def _fill(self, iterable) -> None:
        for item in iterable:
            self.items.put(item)
        self.items.put(StopIteration)

    def __iter__(self):
        while (item := self.items.get()) is not StopIteration:
            yield item


def timed_training(batches, steps: int = 12) -> dict[str, float]:
    """Train ``steps`` steps; return milliseconds per step and the share spent waiting for data."""
    torch.manual_seed(0)
    model = small_cnn(mean, std).to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    batches = iter(batches)
    next(batches)  # warm-up: workers start, the first batch is read
    waited = 0.0
    began = time.perf_counter()
    for _ in range(steps):
        t = time.perf_counter()
        x, y = next(batches)
        waited += time.perf_counter() - t
        loss = F.cross_entropy(model(x.to(device)), y.to(device))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    total = time.perf_counter() - began
    return {"ms per step": 1000 * total / steps, "waiting": waited / total}


slow_disk = SlowReads(TensorDataset(train_images[:2000], train_labels[:2000]), delay=0.0006)
pipelines = {
    "plain loop": lambda: DataLoader(slow_disk, batch_size=64),
    "background thread": lambda: BackgroundBatches(DataLoader(slow_disk, batch_size=64)),
    "2 workers": lambda: DataLoader(
        slow_disk, batch_size=64, num_workers=2, prefetch_factor=4, persistent_workers=True
    ),
}
waits = pd.DataFrame({name: timed_training(make()) for name, make in pipelines.items()}).T

# %% tags=["nbval-ignore-output"]
print(waits.round(2))

# %%
check(
    waits.loc["plain loop", "waiting"] > 0.3,
    "the plain loop spends a large share of each step waiting for data",
    measured=f"{waits.loc['plain loop', 'waiting']:.0%}",
)
speedup = waits.loc["plain loop", "ms per step"] / waits.loc["background thread", "ms per step"]
check(
    speedup > 1.2, "a background thread overlaps reading with training", measured=f"{speedup:.2f}×"
)
check(
    waits.loc["2 workers", "waiting"] < 0.5 * waits.loc["plain loop", "waiting"],
    "workers cut the waiting share by more than half",
    measured=f"{waits.loc['2 workers', 'waiting']:.0%}",
)

# %% [markdown]
# What to notice: a thread is enough when the waiting is I/O (Python releases the GIL while it
# waits); for CPU-heavy decoding or augmentation it competes with the training thread for the
# GIL, and worker *processes* are the tool ([05](05_datasets_dataloaders.ipynb) measures when
# they help and when there are no idle cores for them). Keep `persistent_workers=True` so that
# every epoch does not start them again.

# %% [markdown]
# ## Copy the next batch to the GPU while this one trains
#
# On a GPU, a batch must travel from host memory to the device. Two things make that copy
# overlap with computation: `pin_memory=True` in the DataLoader (page-locked host memory, which
# the GPU can read by DMA) and `x.to(device, non_blocking=True)` (the copy is queued and the
# Python thread moves on). The source notes' `data_prefetcher` goes one step further: it issues
# the next batch's copy, and its normalisation, on a second **CUDA stream** while the current
# batch trains on the default one. Rewritten for today's PyTorch:


# %%
class DevicePrefetcher:
    """Yield a loader's batches on ``device``, converted to floats and normalised there.

    On CUDA the next batch is copied and normalised on a side stream while the current one is
    used; elsewhere the batches are simply moved and normalised in turn.
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
            torch.cuda.current_stream().wait_stream(side)  # the copy must finish first
            x, y = ready
            # The tensors were made on the side stream but are used on this one: tell the
            # caching allocator, so it does not reuse their memory while this stream needs it.
            x.record_stream(torch.cuda.current_stream())
            y.record_stream(torch.cuda.current_stream())
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
check(same, "the prefetcher yields exactly the normalised batches of the loader")

# %% [markdown]
# On this CPU the prefetcher only moves the normalisation out of the model; the overlap needs
# a GPU. There, a batch of uint8 images is 4× smaller to copy than floats, which is why the
# normalisation runs after the copy. Most of the time `pin_memory=True` with `non_blocking=True`
# already hides the copy; a side stream matters when the copies are large next to the step.

# %% [markdown]
# ## Slice batches from one tensor instead of collating samples
#
# A DataLoader over a `TensorDataset` still calls `__getitem__` once per sample and stacks 64
# small tensors per batch. When the whole data set fits in (device) memory, indexing it with a
# shuffled index tensor makes each batch in one operation, the idea behind the fastest CIFAR-10
# trainings (airbench keeps the data on the GPU). One epoch of batches, without a model, on this
# machine's device:


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


epoch_seconds = {"DataLoader": time_it(collate_epoch), "slicing": time_it(sliced_epoch)}

# %% tags=["nbval-ignore-output"]
print({k: f"{v * 1000:.0f} ms" for k, v in epoch_seconds.items()})

# %%
check(collate_epoch() == sliced_epoch() == 10_000, "both produce one epoch of 10 000 samples")
check(
    epoch_seconds["DataLoader"] > 0 and epoch_seconds["slicing"] > 0,
    "both were timed (compare them above: no speed claim is checked here)",
    measured=f"{epoch_seconds['DataLoader'] / epoch_seconds['slicing']:.2f}×",
)

# %% [markdown]
# What to notice: on this CPU the two are close. A `TensorDataset` of small images is cheap to
# collate, and both mostly copy the same bytes. Slicing pays off on a GPU, where the data set
# then lives in device memory and batches never cross the PCIe bus (the last rung of the
# [ladder](#Stack-the-tricks:-the-ladder)), and for Datasets whose `__getitem__` does real work
# per sample.

# %% [markdown]
# ## Measure each trick of the training step
#
# Now the step itself, with the data already in memory. Each variant is timed on the same batch
# of 64 images (one thread, median of repeated runs):
#
# - **`channels_last`**: store activations as N, H, W, C ([02](02_contiguity_strides.ipynb)
#   shows the strides); oneDNN on CPUs and cuDNN on tensor-core GPUs have faster convolution
#   kernels for that layout. Convert the model and the input: `model.to(memory_format=...)`.
# - **mixed precision**: `torch.autocast(device_type, dtype=torch.bfloat16)` runs matrix
#   multiplications and convolutions in bfloat16, keeping reductions and the loss in float32.
#   On a CPU it pays only if the CPU computes bf16 natively (AVX-512 BF16 or AMX); otherwise
#   every op converts and it is slower. On CUDA use `float16` with `torch.amp.GradScaler` (or
#   bf16 on Ampere and newer, no scaler needed).
# - **`optimizer.zero_grad(set_to_none=True)`** (the default since 2.0) frees the gradients
#   instead of writing zeros into them;
# - **`foreach`** optimizers update all parameters with a few multi-tensor kernels instead of a
#   Python loop over parameters (the default where supported); `fused=True` (CUDA, and CPU for
#   Adam/AdamW/SGD) does the whole update in one kernel.
# - **larger batches** amortise the per-step overhead (more images per second) but change the
#   optimisation: scale the learning rate ([09](09_ddp_syncbn.ipynb) measures the rule).


# %%
def step_timer(batch: int = 64, channels_last=False, amp=False, optimizer_kwargs=None, none=True):
    """Return a function that runs one training step on a fixed batch, configured as asked."""
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

    def step() -> float:
        with torch.autocast(device.type, dtype=dtype, enabled=amp):
            loss = F.cross_entropy(model(x), y)
        optimizer.zero_grad(set_to_none=none)
        scaler.scale(loss).backward()
        scaler.step(optimizer)
        scaler.update()
        return loss.item()

    return step


variants = {
    "fp32, contiguous (baseline)": {},
    "channels_last": {"channels_last": True},
    "autocast (bf16 on CPU, fp16 on CUDA)": {"amp": True},
    "zero_grad(set_to_none=False)": {"none": False},
    "optimizer with foreach=False": {"optimizer_kwargs": {"foreach": False}},
    "optimizer with fused=True": {"optimizer_kwargs": {"fused": True}},
}
torch.backends.cudnn.benchmark = device.type == "cuda"  # fixed shapes: let cuDNN pick (CUDA only)
step_ms = {
    name: 1000 * time_it(step_timer(**kw), min_run_time=0.6) for name, kw in variants.items()
}
images_per_s = {b: b / time_it(step_timer(batch=b), min_run_time=0.6) for b in (8, 256)}
cpu_flags = Path("/proc/cpuinfo").read_text() if Path("/proc/cpuinfo").exists() else ""
native_bf16 = any(flag in cpu_flags for flag in ("avx512_bf16", "amx_bf16"))

# %% tags=["nbval-ignore-output"]
base = step_ms["fp32, contiguous (baseline)"]
print(
    pd.DataFrame(
        {"ms per step": step_ms, "speed vs baseline": {k: base / v for k, v in step_ms.items()}}
    ).round(2)
)
print("images per second:", {f"batch {b}": round(v) for b, v in images_per_s.items()})
print("native bf16 on this CPU (avx512_bf16 or amx_bf16):", native_bf16)

# %%
fp32_loss = step_timer()()
bf16_loss = step_timer(amp=True)()
check(
    abs(fp32_loss - bf16_loss) < 0.05, "a mixed-precision step computes the same loss to 2 digits"
)
check(
    min(images_per_s.values()) > 0,
    "both batch sizes were timed (no speed-up is claimed: see below)",
    measured=f"{images_per_s[256] / images_per_s[8]:.2f}×",
)

# %% [markdown]
# What to notice: compare the rows on your machine. Larger batches amortise per-step overhead,
# but on a CPU the gain stops early (activations of big batches no longer fit in the caches)
# and it varies run to run, so it is printed, not claimed; on a GPU images per second keep
# rising until the device is busy. `set_to_none` and `foreach` make little
# difference for a model of 8 parameter tensors; they matter for models with hundreds. Whether
# `channels_last` and bf16 pay depends on the CPU (the last line says whether it has native
# bf16); on NVIDIA GPUs both usually do. `torch.backends.cudnn.benchmark = True` lets cuDNN try
# several convolution algorithms for each input shape and keep the fastest: worth it when shapes
# do not change (it costs a search for each new shape).

# %% [markdown]
# ## Compile a model, and time the compilation separately
#
# `torch.compile(model)` traces the Python code into graphs and generates fused kernels (C++/
# OpenMP on CPUs, Triton on GPUs). The first call compiles, which takes seconds to minutes;
# later calls with the same shapes are fast. So measure the two apart. For inference on this
# CPU (a training step is measured in the [ladder](#Stack-the-tricks:-the-ladder) below):

# %%
model = small_cnn(mean, std).to(device).eval()
batch = test_images[:256].to(device)
began = time.perf_counter()
compiled = torch.compile(model)
with torch.inference_mode():
    compiled(batch)
compile_seconds = time.perf_counter() - began
with torch.inference_mode():
    eager_ms = 1000 * time_it(lambda: model(batch))
    compiled_ms = 1000 * time_it(lambda: compiled(batch))
    same_output = torch.allclose(model(batch), compiled(batch), atol=1e-4)

# %% tags=["nbval-ignore-output"]
print(f"first call (compiling): {compile_seconds:.1f} s")
print(
    f"eager {eager_ms:.1f} ms · compiled {compiled_ms:.1f} ms per 256 images "
    f"({eager_ms / compiled_ms:.2f}×)"
)

# %%
check(same_output, "the compiled model computes the same outputs (within 1e-4)")
check(
    eager_ms / compiled_ms > 1.2,
    "compiled inference is faster than eager on this CPU",
    measured=f"{eager_ms / compiled_ms:.2f}×",
)
check(compile_seconds > 10 * compiled_ms / 1000, "compiling costs far more than one compiled call")

# %% [markdown]
# Compilation pays when a model runs many times with the same shapes: a serving process, a long
# training run. On a CPU, a compiled *training* step can even be slower (the ladder below and
# `make bench` measure it); on GPUs, fused kernels usually win. `mode="max-autotune"` searches
# longer for faster kernels; `dynamic=True` avoids recompiling for every new batch size.

# %% [markdown]
# ## Fuse Conv and BatchNorm for inference
#
# In evaluation BatchNorm is a fixed affine map per channel, so it can be folded into the
# convolution before it. With running mean $\mu$, variance $\sigma^2$, scale $\gamma$ and shift
# $\beta$:
#
# $$\gamma \frac{(W * x + b) - \mu}{\sqrt{\sigma^2 + \epsilon}} + \beta
#   = \underbrace{\frac{\gamma}{\sqrt{\sigma^2+\epsilon}} W}_{W'} * x
#   + \underbrace{\frac{\gamma (b - \mu)}{\sqrt{\sigma^2+\epsilon}} + \beta}_{b'}$$
#
# One layer instead of two, one pass over the activations instead of two. By hand, on a layer
# with BatchNorm statistics from real images:


# %%
def fuse_conv_bn(conv: nn.Conv2d, bn: nn.BatchNorm2d) -> nn.Conv2d:
    """Return one convolution equal to ``bn(conv(x))`` in evaluation mode."""
    scale = bn.weight / torch.sqrt(bn.running_var + bn.eps)
    fused = nn.Conv2d(
        conv.in_channels, conv.out_channels, conv.kernel_size, conv.stride, conv.padding, bias=True
    )
    with torch.no_grad():
        fused.weight.copy_(conv.weight * scale.view(-1, 1, 1, 1))
        bias = conv.bias if conv.bias is not None else torch.zeros_like(bn.running_mean)
        fused.bias.copy_((bias - bn.running_mean) * scale + bn.bias)
    return fused


torch.manual_seed(0)
conv, bn = nn.Conv2d(3, 32, 3, padding=1, bias=False), nn.BatchNorm2d(32)
pixels = (train_images[:512].float() / 255 - 0.5) / 0.25
with torch.no_grad():
    bn.weight.uniform_(0.5, 1.5)
    bn.bias.uniform_(-0.5, 0.5)
    bn.train()(conv(pixels))  # running statistics from real images (momentum 0.1, one batch)
conv_bn = nn.Sequential(conv, bn).eval()
fused = fuse_conv_bn(conv, bn).eval()
with torch.inference_mode():
    fusion_error = (conv_bn(pixels) - fused(pixels)).abs().max().item()
    library = torch.nn.utils.fusion.fuse_conv_bn_eval(conv, bn)
    library_error = (library(pixels) - fused(pixels)).abs().max().item()
    fusion_ms = {
        "conv + bn": 1000 * time_it(lambda: conv_bn(pixels)),
        "fused conv": 1000 * time_it(lambda: fused(pixels)),
    }

# %% tags=["nbval-ignore-output"]
print({k: f"{v:.2f} ms" for k, v in fusion_ms.items()}, f"max |diff| {fusion_error:.1e}")

# %%
check(fusion_error < 1e-4, "the fused convolution equals conv + BatchNorm (max |diff| < 1e-4)")
check(library_error < 1e-5, "and equals torch.nn.utils.fusion.fuse_conv_bn_eval")
check(
    fusion_ms["conv + bn"] > 1.1 * fusion_ms["fused conv"],
    "the fused layer is faster",
    measured=f"{fusion_ms['conv + bn'] / fusion_ms['fused conv']:.2f}×",
)

# %% [markdown]
# `torch.compile` and inference engines (ONNX Runtime, TensorRT) do this fusion for you; doing it
# by hand shows why it is exact, and is what `torch.ao`'s `fuse_modules` did for quantization.

# %% [markdown]
# ## Merge parallel branches into one convolution
#
# RepVGG trains a block with three parallel branches (3×3 conv + BN, 1×1 conv + BN, identity +
# BN, summed) and, for inference, merges them into **one** 3×3 convolution: convolution is
# linear, so kernels of parallel branches add. Fuse each BN into its branch (as above), pad the
# 1×1 kernel to 3×3 (its value at the centre), write the identity as a 3×3 kernel with a 1 at the
# centre of its own channel, and add the kernels and biases.


# %%
class RepBlock(nn.Module):
    """The training-time block: three parallel branches, summed, then ReLU."""

    def __init__(self, channels: int) -> None:
        super().__init__()
        self.conv3 = nn.Sequential(
            nn.Conv2d(channels, channels, 3, padding=1, bias=False), nn.BatchNorm2d(channels)
        )
        self.conv1 = nn.Sequential(
            nn.Conv2d(channels, channels, 1, bias=False), nn.BatchNorm2d(channels)
        )
        self.identity = nn.BatchNorm2d(channels)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.relu(self.conv3(x) + self.conv1(x) + self.identity(x))


def merge(block: RepBlock) -> nn.Conv2d:
    """Return the single 3×3 convolution whose ReLU equals the block in evaluation mode."""
    c = block.identity.num_features
    k3 = fuse_conv_bn(*block.conv3)
    k1 = fuse_conv_bn(*block.conv1)
    eye = nn.Conv2d(c, c, 1, bias=False)
    with torch.no_grad():
        eye.weight.copy_(torch.eye(c).view(c, c, 1, 1))
    ki = fuse_conv_bn(eye, block.identity)
    merged = nn.Conv2d(c, c, 3, padding=1)
    with torch.no_grad():
        merged.weight.copy_(
            k3.weight + F.pad(k1.weight, [1, 1, 1, 1]) + F.pad(ki.weight, [1, 1, 1, 1])
        )
        merged.bias.copy_(k3.bias + k1.bias + ki.bias)
    return merged


torch.manual_seed(0)
block = RepBlock(32)
features = torch.randn(64, 32, 16, 16)
with torch.no_grad():
    for bn_layer in (block.conv3[1], block.conv1[1], block.identity):
        bn_layer(features)  # give each BN non-trivial running statistics
block.eval()
merged = merge(block).eval()
with torch.inference_mode():
    merge_error = (block(features) - F.relu(merged(features))).abs().max().item()
    merge_ms = {
        "three branches": 1000 * time_it(lambda: block(features)),
        "one 3×3 conv": 1000 * time_it(lambda: F.relu(merged(features))),
    }

# %% tags=["nbval-ignore-output"]
print({k: f"{v:.2f} ms" for k, v in merge_ms.items()}, f"max |diff| {merge_error:.1e}")

# %%
check(
    merge_error < 1e-4, "one merged convolution equals the three-branch block (max |diff| < 1e-4)"
)
check(
    merge_ms["three branches"] > 1.1 * merge_ms["one 3×3 conv"],
    "and runs faster",
    measured=f"{merge_ms['three branches'] / merge_ms['one 3×3 conv']:.2f}×",
)

# %% [markdown]
# ## Quantize to int8 for CPU inference
#
# Int8 weights and activations are 4× smaller than float32, and CPUs with VNNI instructions
# multiply them several times faster. Post-training static quantization needs a trained model
# and a few batches to calibrate the activation ranges. Train the CNN for one epoch (batches
# sliced from memory, as above), then quantize it.

# %%
torch.manual_seed(0)
trained = small_cnn(mean, std).to(device)
optimizer = torch.optim.SGD(trained.parameters(), lr=0.05, momentum=0.9)
order = torch.randperm(len(train_labels))
for i in range(0, len(order), 64):
    idx = order[i : i + 64]
    loss = F.cross_entropy(trained(train_images[idx].to(device)), train_labels[idx].to(device))
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
trained = trained.cpu().eval()


def accuracy(model: nn.Module, images: torch.Tensor) -> float:
    with torch.inference_mode():
        return (model(images).argmax(1) == test_labels).float().mean().item()


print(f"float32 test accuracy after one epoch: {accuracy(trained, test_images):.3f}")

# %% [markdown]
# The API that quantizes a CNN on a CPU today without a compiler is `torch.ao.quantization`'s
# FX mode, and it is deprecated: it warns so in torch 2.15 (the warning is shown below). Its
# successor is the PT2E flow in the `torchao` package (`prepare_pt2e`/`convert_pt2e` with an
# `X86InductorQuantizer`), whose int8 kernels come from `torch.compile`. The first two layers of
# the course's CNN take `uint8` images and normalise them; the float part after them is
# quantized.

# %%
from torch.ao.quantization import get_default_qconfig_mapping
from torch.ao.quantization.quantize_fx import convert_fx, prepare_fx

preprocess, body = trained[:2], trained[2:]
calibration = preprocess(train_images[:512])
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    prepared = prepare_fx(body, get_default_qconfig_mapping("x86"), (calibration,))
    with torch.inference_mode():
        prepared(calibration)  # observers record the activation ranges
    int8_body = convert_fx(prepared)
int8_model = nn.Sequential(preprocess, int8_body)
deprecations = {str(w.message).splitlines()[0] for w in caught if w.category is DeprecationWarning}
print("warned:", *sorted(deprecations))

# %%
test_batch = test_images[:256]
with torch.inference_mode():
    latency = {
        "float32": 1000 * time_it(lambda: trained(test_batch)),
        "int8": 1000 * time_it(lambda: int8_model(test_batch)),
    }
quantized_accuracy = {
    "float32": accuracy(trained, test_images),
    "int8": accuracy(int8_model, test_images),
}

# %% tags=["nbval-ignore-output"]
print(pd.DataFrame({"test accuracy": quantized_accuracy, "ms per 256 images": latency}).round(3))

# %%
drop = quantized_accuracy["float32"] - quantized_accuracy["int8"]
check(
    abs(drop) < 0.02,
    "int8 changes the test accuracy by less than 2 points",
    measured=f"{drop:+.4f}",
)
check(
    latency["float32"] > 1.5 * latency["int8"],
    "int8 inference is faster on this CPU",
    measured=f"{latency['float32'] / latency['int8']:.2f}×",
)

# %% [markdown]
# On a GPU the usual inference speed-up is half precision instead: `model.half()` or
# `torch.autocast("cuda", dtype=torch.float16)` under `torch.inference_mode()`.

# %% [markdown]
# ## Stack the tricks: the ladder
#
# The same CIFAR2 training steps (batch 64), timed as tricks are stacked: each rung adds one
# trick to the rungs kept above it, and a trick that makes this device slower is measured,
# reported and **dropped** from the stack. `helpers.ladder` holds the code; the compile rung is
# skipped here (its compilation alone takes longer than this notebook's budget) and measured by
# `make bench`, whose results are shown after.

# %%
rows = ladder.run(device, steps=15, repeats=3, compile=False)
measured_here = pd.DataFrame([r for r in rows if "skipped" not in r]).set_index("rung")

# %% tags=["nbval-ignore-output"]
print(f"measured now on {ladder.device_name(device)}, torch {torch.__version__}")
print(measured_here[["median_ms", "min_ms", "max_ms", "speedup", "kept"]].round(2))


def plot_ladder(frame: pd.DataFrame, title: str) -> None:
    _, ax = plt.subplots(figsize=(7, 0.45 * len(frame) + 1))
    colors = ["tab:blue" if kept else "tab:gray" for kept in frame.kept]
    ax.barh(frame.index[::-1], frame.speedup[::-1], color=colors[::-1])
    ax.axvline(1, color="black", linewidth=0.8)
    ax.set_xlabel("speed relative to the baseline (gray: dropped, slower here)")
    ax.set_title(title)
    plt.show()


plot_ladder(measured_here, f"CIFAR2 training steps on {ladder.device_name(device)}")

# %%
in_memory = measured_here.loc["+ decoded once, kept in memory", "speedup"]
check(
    in_memory > 1.15,
    "keeping decoded images in memory makes the step faster",
    measured=f"{in_memory:.2f}×",
)
check(measured_here.speedup.max() >= in_memory, "the stack is at least as fast as its best rung")

# %% [markdown]
# `make bench` runs the full ladder, compile rung included, with more repeats, and writes a JSON
# file with the device, versions and date. The results committed with the course:

# %% tags=["nbval-ignore-output"]
committed = sorted(Path("results").glob("ladder-*.json"))
for path in committed:
    result = json.loads(path.read_text())
    frame = pd.DataFrame([r for r in result["rungs"] if "skipped" not in r]).set_index("rung")
    print(
        f"{path.name}: {result['device']}, torch {result['torch']}, {result['date']}, "
        f"{result['threads']} thread(s), median of {result['repeats']} × {result['steps']} steps"
    )
    print(frame[["median_ms", "min_ms", "max_ms", "speedup", "warmup_s", "kept"]].round(2))

# %%
check(len(committed) >= 1, "at least one measured ladder is committed with its provenance")

# %% [markdown]
# What to notice (in the committed CPU results): decoding once is the biggest single win;
# `torch.compile` made the *training* step slower on this CPU and its first steps took seconds
# (`warmup_s`: compilation, with a warm compiler cache; up to half a minute cold), so it was
# dropped; mixed precision helped because this CPU has native bf16 (the table above says whether
# yours does).
# On a GPU the ladder is the headline result: a GPU file appears here once one has been
# measured (no GPU was available to this course's authors yet; nothing is estimated).

# %% [markdown]
# ## See how far from the hardware limit a step runs
#
# `torch.utils.flop_counter.FlopCounterMode` counts the floating-point operations of the
# matrix multiplications and convolutions a piece of code runs (forward and backward). Divided by
# the step time it gives the achieved FLOP/s; the machine's rough peak is cores × clock ×
# FLOPs per cycle (32 single-precision FLOPs per cycle for a core with two AVX2 FMA units).

# %%
torch.manual_seed(0)
cnn = small_cnn(mean, std).to(device)
x64, y64 = train_images[:64].to(device), train_labels[:64].to(device)
with FlopCounterMode(display=False) as counter:
    F.cross_entropy(cnn(x64), y64).backward()
flops_per_step = counter.get_total_flops()
first_conv = cnn[2][0]
with FlopCounterMode(display=False) as one_conv:
    first_conv(torch.randn(64, 3, 32, 32))
analytic = 2 * 64 * 32 * 32 * first_conv.out_channels * first_conv.in_channels * 3 * 3
print(f"{flops_per_step / 1e9:.3f} GFLOP per training step of 64 images")
print(f"first conv: counted {one_conv.get_total_flops():,}, 2·N·H·W·Cout·Cin·k² = {analytic:,}")

# %% tags=["nbval-ignore-output"]
mhz = [float(line.split(":")[1]) for line in cpu_flags.splitlines() if line.startswith("cpu MHz")]
per_cycle = 64 if "avx512f" in cpu_flags else 32  # fp32 FLOPs per cycle: 2 FMA units × lanes × 2
peak = torch.get_num_threads() * (mhz[0] / 1000 if mhz else 2.5) * 1e9 * per_cycle
limits = measured_here[["median_ms"]].copy()
limits["GFLOP/s"] = flops_per_step / (limits.median_ms / 1000) / 1e9
limits["% of fp32 peak"] = 100 * limits["GFLOP/s"] * 1e9 / peak
print(
    f"rough fp32 peak of {torch.get_num_threads()} core(s): {peak / 1e9:.0f} GFLOP/s "
    f"({per_cycle} FLOPs per cycle)"
)
print(limits.round(1))

# %%
check(
    one_conv.get_total_flops() == analytic,
    "the flop counter counts a convolution as 2·N·H·W·Cout·Cin·k²",
)
fp32_rungs = limits.loc[[r for r in limits.index if "precision" not in r and "device" not in r]]
check((fp32_rungs["% of fp32 peak"] < 100).all(), "every fp32 rung runs below the rough fp32 peak")

# %% [markdown]
# What to notice: a small CNN on batches of 64 reaches a modest fraction of the peak (the bf16
# rungs are measured against the fp32 peak; native bf16 doubles it): its
# layers are small, memory traffic (activations, BatchNorm, ReLU) costs time without FLOPs, and
# Python and dispatch overhead is paid for every operator. Bigger batches, fused kernels
# (`torch.compile`) and lower precision are the levers; on GPUs the same comparison uses the
# tensor-core peak, and a small model is far from it until its batches are large.

# %% [markdown]
# ## Old code you will meet
#
# | old form | write today | why |
# |---|---|---|
# | `from apex import amp; model, opt = amp.initialize(model, opt, opt_level="O1")` | `torch.autocast(device_type, dtype)` + `torch.amp.GradScaler(device_type)` | apex's amp was replaced by PyTorch's own; it is unmaintained |
# | `torch.cuda.amp.autocast()`, `torch.cuda.amp.GradScaler()` | `torch.autocast("cuda")`, `torch.amp.GradScaler("cuda")` | the device-specific forms are deprecated and warn |
# | `torch.jit.script(model)` / `torch.jit.trace` for speed | `torch.compile(model)` | TorchScript is in maintenance; compile generates faster fused kernels |
# | `from prefetch_generator import BackgroundGenerator` | `DataLoader(num_workers=..., prefetch_factor=..., persistent_workers=True)`, or a thread as above for I/O | workers also parallelise CPU-heavy decoding |
# | `optimizer.zero_grad()` with `set_to_none=False` to "keep memory" | the default `set_to_none=True` | cheaper, and a missing gradient is `None`, not silently 0 |
# | `torch.quantization.quantize_fx.prepare_fx` / `torch.ao.quantization` | torchao's PT2E flow (`prepare_pt2e`, `convert_pt2e`) with `torch.compile` | `torch.ao.quantization` is deprecated and warns |

# %% [markdown]
# ## Exercises

# %% [markdown]
# ### Exercise 1: fuse a Linear and its BatchNorm1d
#
# Write `fuse_linear_bn(linear, bn)` returning one `nn.Linear` equal to `bn(linear(x))` in
# evaluation mode (the same algebra as for convolutions), and check it on random inputs after
# giving the BatchNorm non-trivial running statistics.


# %% tags=["solution"]
def fuse_linear_bn(linear: nn.Linear, bn: nn.BatchNorm1d) -> nn.Linear:
    scale = bn.weight / torch.sqrt(bn.running_var + bn.eps)
    fused = nn.Linear(linear.in_features, linear.out_features)
    with torch.no_grad():
        fused.weight.copy_(linear.weight * scale.view(-1, 1))
        fused.bias.copy_((linear.bias - bn.running_mean) * scale + bn.bias)
    return fused


torch.manual_seed(0)
linear, bn1 = nn.Linear(10, 4), nn.BatchNorm1d(4)
inputs = torch.randn(32, 10)
with torch.no_grad():
    bn1(linear(inputs) * 3 + 1)  # running statistics far from (0, 1)
pair = nn.Sequential(linear, bn1).eval()
with torch.inference_mode():
    error = (pair(inputs) - fuse_linear_bn(linear, bn1)(inputs)).abs().max().item()
print(f"max |diff| {'< 1e-5' if error < 1e-5 else error}")
assert error < 1e-5

# %% [markdown]
# ### Exercise 2: how much does a worker save?
#
# Using `timed_training` and `slow_disk` from above, measure the waiting share with 1 and 2
# workers (`persistent_workers=True`), and check that each waits less than the plain loop.

# %% tags=["solution", "nbval-ignore-output"]
by_workers = {
    n: timed_training(DataLoader(slow_disk, batch_size=64, num_workers=n, persistent_workers=True))
    for n in (1, 2)
}
print(
    {
        n: f"{r['waiting']:.0%} waiting, {r['ms per step']:.0f} ms/step"
        for n, r in by_workers.items()
    }
)
assert all(r["waiting"] < waits.loc["plain loop", "waiting"] for r in by_workers.values())

# %% [markdown]
# ## Summary
#
# - Profile first: `torch.profiler` with `record_function` labels shows the split between data,
#   forward, backward and optimizer; export the trace and open it in Perfetto.
# - Feed the step: decode once, slice batches from tensors (on the device when it fits), use
#   workers or a prefetch thread for slow storage, `pin_memory` + `non_blocking` on GPUs.
# - Speed up the step where it pays on *your* device: `channels_last`, autocast (bf16 needs
#   native support on CPUs), `torch.compile` (time the compilation apart; it may not pay for CPU
#   training); bigger batches with a scaled learning rate.
# - Speed up inference: Conv-BN fusion and merged branches are exact algebra; compiled and int8
#   models are faster on this CPU at nearly the same accuracy.
# - Stack tricks one at a time, keep what the measurement says helps (`make bench`).
#
# Next: 11 · Memory (coming).
