# %% [markdown]
# # 10 · Speedups, measured: find what the training step waits for
#
# [![Open In Colab](https://colab.research.google.com/assets/colab-badge.svg)](https://colab.research.google.com/github/pytorch-cookbook/pytorch-cookbook/blob/main/notebooks/10_speedups.ipynb)
#
# The CNN's training loop from 07, fed from a slow disk, is much slower than its training step.
# This lesson measures it, profiles it to find where the time goes, fixes what it finds, and
# measures again, keeping a fix only when it is faster beyond the noise of the measurement.
#
# **You will be able to:**
# - time a training step properly: a warm-up first, then several repeats and their median
# - profile a training loop with `torch.profiler` and `record_function`, and read where its time
#   goes
# - recognise a loop that waits for data, and hide the wait with DataLoader worker processes
# - stack fixes one at a time and keep one only when it beats the spread of repeated
#   measurements
#
# **Before you start:** a `Dataset`, a `DataLoader` with `batch_size` and `shuffle`, and the
# idea of `num_workers` ([05](05_datasets_dataloaders.ipynb)); the five lines of a training
# step, an optimiser, and moving batches to `device` ([07](07_training_loop.ipynb)).
#
# **Cookbook:** [10 · Speedups, measured: recipes](cookbook/10_speedups_recipes.ipynb) holds every recipe of this chapter (the profiler's options and traces, a prefetch thread, pinned memory and CUDA streams, decoding JPEGs in batches, `channels_last`, mixed precision and bf16 on CPUs, `torch.compile`, TF32, `cudnn.benchmark`, sync points, fused optimizers, Conv-BN fusion, int8 quantization, the full speedup ladder), for when you need one.
#
# **Study time:** about 60 min: 2,416 words of text at 120 a minute, 222 lines of code at 10 a minute, 2 exercises at 10 minutes each.
#
# **Run time:** about 10 s on a 2-core CPU (Intel Xeon, AVX2 code paths, measured on 2026-11-25) · GPU optional.

# %%
import sys

if (
    "google.colab" in sys.modules
):  # Colab: install the course's helpers and what the notebooks import
    import subprocess

    spec = "pytorch-cookbook[notebooks] @ git+https://github.com/pytorch-cookbook/pytorch-cookbook"
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", spec], check=True)

import os
import statistics
import time
from itertools import pairwise

import matplotlib.pyplot as plt
import torch
from torch import nn
from torch.profiler import ProfilerActivity, profile, record_function, schedule
from torch.utils.data import DataLoader, TensorDataset

from helpers.bench import time_it
from helpers.check import check
from helpers.datasets import SlowReads
from helpers.diagrams.timeline import draw_timeline
from helpers.env import setup
from helpers.exercises import lesson10
from helpers.images import channel_stats, load_cifar2
from helpers.ladder import deviation, verdict
from helpers.models import small_cnn

device = setup(seed=0)

# %% [markdown]
# ## Time one training step, then the loop
#
# "Make training faster" starts with a number: how long one step takes. Timing code has two
# traps. The **first calls can be slower** than the rest: PyTorch allocates memory and picks
# kernels then, once. And **no two runs take the same time**: other programs share the machine.
# So time after a warm-up, repeat, and take the **median**, which one slow repeat does not move.
# `helpers.bench.time_it` does all three with `torch.utils.benchmark.Timer`: it calls a function
# once to warm up, then in blocks until `min_run_time` seconds have passed, and returns the median
# seconds per call.
#
# On a GPU there is one more trap: operations are only *queued* when Python calls them, and the
# GPU runs them later. A timer must wait for the queue to empty, which is what
# `torch.cuda.synchronize()` does; `time_it` does it for you, and the loops below call `sync()`.
#
# The step is 07's five lines in a function. `make_step` builds a fresh CNN and optimiser and
# returns the step with its model, so that each measurement starts from the same weights:

# %%
images, labels, classes = load_cifar2("train")
mean, std = channel_stats(images)
loss_fn = nn.CrossEntropyLoss()


def sync():
    """Wait until the GPU has run what was queued (nothing to wait for on a CPU)."""
    if device.type == "cuda":
        torch.cuda.synchronize()


def make_step():
    """A fresh CNN and optimiser; return (a function that trains one step on a batch, the CNN)."""
    torch.manual_seed(0)
    model = small_cnn(mean, std).to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)

    def step(x, y):
        x, y = x.to(device), y.to(device)
        loss = loss_fn(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()

    return step, model


step, _ = make_step()
x, y = images[:64], labels[:64]
step_s = time_it(lambda: step(x, y), min_run_time=0.3)  # median seconds per step

# %% tags=["nbval-ignore-output"]
print(f"one training step on a batch of 64: {1000 * step_s:.1f} ms (median)")

# %% [markdown]
# That is the step alone, on a batch already in memory. A real loop also has to *get* each
# batch. CIFAR2 sits in memory here, so to see what a slow disk or a network file system does,
# `SlowReads` (in the course's `helpers`) wraps the data set and waits a fixed time before each
# image. The wait is set so that reading a batch takes one and a half times as long as the step
# computes on this machine. The loader is 05's: batches of 64, shuffled, the last incomplete
# batch dropped.
#
# `time_steps` runs the loop: it asks `next(batches)` for each batch and trains on it, times
# `steps` steps after two warm-up steps, and does that `repeats` times, returning the seconds
# per step of each repeat.

# %%
slow_disk = SlowReads(TensorDataset(images, labels), delay=1.5 * step_s / 64)
plain_loader = DataLoader(slow_disk, batch_size=64, shuffle=True, drop_last=True)


def time_steps(batches, step, steps=2, repeats=3):
    """Seconds per training step on `batches`, once per repeat, after 2 warm-up steps."""
    for _ in range(2):
        step(*next(batches))
    times = []
    for _ in range(repeats):
        sync()
        began = time.perf_counter()
        for _ in range(steps):
            x, y = next(batches)
            step(x, y)
        sync()
        times.append((time.perf_counter() - began) / steps)
    return times


loop_s = statistics.median(time_steps(iter(plain_loader), make_step()[0]))

# %% tags=["nbval-ignore-output"]
print(f"the loop: {1000 * loop_s:.1f} ms per step | the step alone: {1000 * step_s:.1f} ms")
print(f"the loop takes {loop_s / step_s:.1f}× the step's time")

# %%
check(
    loop_s >= 1.5 * step_s,
    "the loop takes at least 1.5× the step alone: something besides the model takes time",
    measured=f"{loop_s / step_s:.2f}×",
    timing=True,
)

# %% [markdown]
# Here you know the cause, because it was built in. In your own loop you would not: the model,
# the loss, the optimiser, the loader, the copy to the GPU are all suspects. Guessing is how
# people spend a day on the wrong one. The next section asks the profiler instead.

# %% [markdown]
# ## Profile the loop: where does the time go?
#
# `torch.profiler.profile` records every PyTorch operation that runs inside it, with its start
# and end. `record_function("name")` labels a block of your own code, so the profile also says
# how each step splits into its **phases**: getting the data, the forward pass, the backward
# pass and the optimiser. Two more pieces:
#
# - a `schedule` says which steps to record: `warmup=1` runs the first step without keeping
#   it (the warm-up of the last section), `active=steps` keeps the next ones;
# - `prof.step()` at the end of each step tells the schedule where one step ends.
#
# On a GPU, `sync()` at the end of each phase makes the phase's time include the GPU work it
# queued. The worker processes of the next section start when the loader is first iterated,
# so `iter(loader)` comes before the profiler.

# %%
os.environ.setdefault("KINETO_LOG_LEVEL", "6")  # the profiler's own log lines: none
PHASES = ["data", "forward", "backward", "optimizer"]
STEPS = 5  # profiled steps, after one warm-up step


def profile_steps(loader, steps=STEPS):
    """Profile `steps` training steps of a fresh CNN, after one warm-up step, phases labelled."""
    torch.manual_seed(0)
    model = small_cnn(mean, std).to(device)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    batches = iter(loader)  # worker processes, if any, start here
    activities = [ProfilerActivity.CPU]
    if device.type == "cuda":
        activities.append(ProfilerActivity.CUDA)
    with profile(
        activities=activities, schedule=schedule(wait=0, warmup=1, active=steps, repeat=1)
    ) as prof:
        for _ in range(1 + steps):
            with record_function("data"):
                x, y = next(batches)
                x, y = x.to(device), y.to(device)
            with record_function("forward"):
                loss = loss_fn(model(x), y)
                sync()
            with record_function("backward"):
                optimizer.zero_grad()
                loss.backward()
                sync()
            with record_function("optimizer"):
                optimizer.step()
                sync()
            prof.step()  # one step ended
    return prof


before = profile_steps(plain_loader)

# %% [markdown]
# `prof.key_averages()` adds up the time of each kind of event: each operation, and each label
# you gave. Its `table` lists the largest first. `CPU total` is the time inside a block,
# including everything it called; `Self CPU` leaves out the operations it called. The rows
# differ from machine to machine, so the stored table is only an example:

# %% tags=["nbval-ignore-output"]
print(before.key_averages().table(sort_by="cpu_time_total", row_limit=8))

# %% [markdown]
# The row `ProfilerStep*` is the whole of the recorded steps. Under it, the four phases, and
# inside `data` the DataLoader's row, `enumerate(DataLoader)...`. Each phase ran once in each of
# the `STEPS` profiled steps, so its `CPU total` divided by `STEPS` is its time per step. (On a
# GPU a phase can have a second row, for the GPU's side, with no CPU time: adding up the rows of
# a name is right either way.)


# %%
def ms_per_step(prof):
    """Each phase's milliseconds per profiled step."""
    totals = dict.fromkeys(PHASES, 0.0)
    for event in prof.key_averages():
        if event.key in totals:  # microseconds, over all profiled steps
            totals[event.key] += event.cpu_time_total
    return {phase: totals[phase] / STEPS / 1000 for phase in PHASES}


before_ms = ms_per_step(before)
before_total = sum(before_ms.values())

# %% tags=["nbval-ignore-output"]
for phase, ms in before_ms.items():
    print(f"{phase:<10} {ms:7.1f} ms per step  {ms / before_total:4.0%}")

# %%
check(
    before_ms["data"] > max(before_ms[p] for p in PHASES[1:])
    and before_ms["data"] > before_total / 3,
    "waiting for data is the largest phase of the step, over a third of it",
    measured=f"{before_ms['data'] / before_total:.0%}",
    timing=True,
)

# %% [markdown]
# The model is not the problem: the loop spends most of each step waiting for its next batch,
# and during that wait the CPU (or the GPU) computes nothing. On a GPU the symptom is a low
# utilisation in `nvidia-smi` while the training runs. Making the model faster would change the
# smaller part of the step.

# %% [markdown]
# ## Fix the wait: worker processes read while the model trains
#
# Without workers, the DataLoader reads each batch in the training loop's own process, between
# two steps: read, train, read, train. With `num_workers=2` it starts two **worker processes**.
# Each reads whole batches and puts them in a queue (each keeps up to `prefetch_factor=2`
# batches ready), while the main process trains on the batch it has. The reading and the
# training now overlap. `persistent_workers=True` keeps the workers alive from one epoch to the
# next instead of starting them again.
#
# Waiting for a disk takes no processor time, so here the workers overlap the wait on any
# machine. Reading that keeps a processor busy (decoding JPEGs, heavy augmentation) needs a free
# core per worker; whether your machine has them is measured in the cookbook's recipe [Choose
# `num_workers` by measuring
# it](cookbook/05_datasets_dataloaders_recipes.ipynb#Choose-num_workers-by-measuring-it). Worker
# processes import the `Dataset` class by name, which is why `SlowReads` lives in a `.py` file:
# a class defined in a notebook cannot be found by the workers on macOS and Windows (and on Linux
# from Python 3.14), which start them afresh instead of copying the notebook's process.

# %%
worker_loader = DataLoader(
    slow_disk, batch_size=64, shuffle=True, drop_last=True, num_workers=2, persistent_workers=True
)
after = profile_steps(worker_loader)
after_ms = ms_per_step(after)
after_total = sum(after_ms.values())

# %% [markdown]
# The picture draws both profiles on one time axis: each step's phases as coloured bars, the
# loop that reads for itself on top, the loop fed by workers below. At the right of each row, its
# total time and the share of it spent waiting for data (`helpers.diagrams.timeline` reads the
# labelled blocks from each profile):

# %%
draw_timeline({"read in the loop": before, "2 workers": after}, PHASES)
plt.show()

# %% tags=["nbval-ignore-output"]
print(f"{'phase':<10} {'before':>8} {'after':>8}  (ms per step)")
for phase in PHASES:
    print(f"{phase:<10} {before_ms[phase]:8.1f} {after_ms[phase]:8.1f}")
print(f"{'total':<10} {before_total:8.1f} {after_total:8.1f}")

# %%
check(
    before_total >= 1.5 * after_total,
    "with 2 workers the profiled steps are at least 1.5× faster",
    measured=f"{before_total / after_total:.2f}×",
    timing=True,
)
check(
    after_ms["data"] <= 0.5 * before_ms["data"],
    "and each step waits for data less than half as long as before",
    measured=f"{after_ms['data']:.1f} vs {before_ms['data']:.1f} ms",
    timing=True,
)

# %% [markdown]
# **What to notice:** the orange bars, the waits, shrink to slivers or vanish; the forward and
# backward bars keep their length. The workers did not make anything faster: they made the
# reading happen at the same time as the training. How many workers a loop needs follows from
# two times, reading a batch and computing a step (Exercise 2).

# %% [markdown]
# ## Measure again: stack the fixes one at a time
#
# A fix is a hypothesis until it is measured, and one measurement is not enough: run the same
# timing twice and the two numbers differ. The **speedup ladder** times the same training steps
# as fixes are stacked, each rung adding one fix to the rungs kept above it. A rung is **kept**
# only if it beats the best rung so far *beyond the noise*: its median must be lower by at least
# 5 %, and by more than 1.5 times the spread of the two rungs' repeats (the spread is the median
# distance of the repeats from their median). Otherwise the verdict is "no faster" (the
# difference is within the spread) or "slower", and the fix is dropped: the rungs below it stack
# on the best rung instead. `helpers.ladder.verdict` is that rule.
#
# The rungs:
#
# 1. the slow disk, read in the loop (the baseline);
# 2. 2 worker processes;
# 3. the data set in memory, and each batch **sliced** from it: a shuffled order of all indices,
#    then `images[order[i : i + 64]]`, one indexing per batch instead of 64 `__getitem__` calls
#    and a `torch.stack`. Reading the data set into memory costs one slow pass, once (the course's
#    `load_cifar2` did that for CIFAR2's JPEG files, and keeps the result on disk);
# 4. `channels_last`: the model's weights and activations stored with each pixel's channels next
#    to each other in memory, the layout many convolution kernels prefer
#    (`model.to(memory_format=torch.channels_last)`; [02](02_contiguity_strides.ipynb) shows
#    memory layouts, if you took it).


# %%
def sliced_batches():
    """Endless shuffled batches of 64 sliced from the tensors in memory."""
    while True:
        order = torch.randperm(len(labels))
        for i in range(0, len(order) - 63, 64):
            yield images[order[i : i + 64]], labels[order[i : i + 64]]


feeds = {  # each makes a fresh iterator of batches
    "slow disk": lambda: iter(plain_loader),
    "2 workers": lambda: iter(worker_loader),
    "in memory, sliced": sliced_batches,
}
rungs = [
    ("baseline: slow disk, read in the loop", {"data": "slow disk"}),
    ("+ 2 worker processes", {"data": "2 workers"}),
    ("+ data in memory, batches sliced", {"data": "in memory, sliced"}),
    ("+ channels_last", {"channels_last": True}),
]
config = {"data": "slow disk", "channels_last": False}  # the fixes kept so far
best, best_name, ladder = None, None, []  # the best rung's times and name; one row per rung
for name, change in rungs:
    trial = {**config, **change}  # the kept fixes, with this rung's one change
    step, model = make_step()
    if trial["channels_last"]:
        model.to(memory_format=torch.channels_last)
    times = time_steps(feeds[trial["data"]](), step, steps=3, repeats=5)
    outcome = verdict(times, best)
    ladder.append({"rung": name, "times": times, "verdict": outcome, "against": best_name})
    if outcome == "kept":
        config, best, best_name = trial, times, name
medians = {row["rung"]: statistics.median(row["times"]) for row in ladder}
baseline = medians[rungs[0][0]]

# %% tags=["nbval-ignore-output"]
print(f"{'rung':<38} {'median':>8} {'spread':>7} {'speed':>6} {'vs':>6}  verdict (compared with)")
for row in ladder:
    median = medians[row["rung"]]
    against = row["against"]
    versus = f"{medians[against] / median:5.2f}×" if against else "     -"
    print(
        f"{row['rung']:<38} {1000 * median:5.1f} ms {1000 * deviation(row['times']):4.1f} ms "
        f"{baseline / median:5.2f}× {versus}  {row['verdict']} ({against or 'the first rung'})"
    )
print("kept, in order:", [row["rung"] for row in ladder if row["verdict"] == "kept"])

# %%
workers_rung = ladder[1]
check(
    workers_rung["verdict"] == "kept"
    and baseline >= 1.5 * statistics.median(workers_rung["times"]),
    "the ladder keeps the workers: at least 1.5× the baseline's speed, beyond the noise",
    measured=f"{baseline / statistics.median(workers_rung['times']):.2f}× "
    f"({workers_rung['verdict']})",
    timing=True,
)
kept_medians = [medians[row["rung"]] for row in ladder if row["verdict"] == "kept"]
check(
    all(later < earlier for earlier, later in pairwise(kept_medians)),
    "each kept rung is faster than every rung kept before it: the table cannot say otherwise",
)

# %% [markdown]
# How to read the table: `speed` is against the baseline, `vs` against the rung it was compared
# with, the best one kept so far, named in brackets. A rung can be far faster than the baseline
# and still be dropped, when it is no faster than that best rung: the verdict is about the one
# fix the rung adds, not about the stack. And the larger the two rungs' spreads, the larger the
# gain a rung needs to be kept: a noisy measurement proves less.
#
# The workers' rung holds on any machine, because the wait it hides is not computation. The
# verdicts of the last two rungs depend on the machine, and on the moment: slicing saves only
# the collation of 64 small tensors, and whether `channels_last` pays depends on the convolution
# kernels of your CPU or GPU. Run the ladder cell again: a rung near the 5 % line can change its
# verdict, and that change is the lesson. A trick that is not faster beyond the noise is not
# worth its complexity.

# %% [markdown]
# ## The model is the bottleneck now: where to look next
#
# Once the wait is gone, the profile says what is left: the forward and backward passes. Its
# operation rows show which operations take the time. The kernel names depend on the CPU (and
# differ on a GPU), so the stored table is again only an example; sorted by `self_cpu_time_total`,
# the time spent in each operation itself:

# %% tags=["nbval-ignore-output"]
print(after.key_averages().table(sort_by="self_cpu_time_total", row_limit=6))

# %%
check(
    after_ms["forward"] + after_ms["backward"] > after_ms["data"],
    "after the fix, the forward and backward passes take more of the step than the wait for data",
    measured=f"{after_ms['forward'] + after_ms['backward']:.1f} vs {after_ms['data']:.1f} ms",
    timing=True,
)

# %% [markdown]
# On a CPU the convolutions and their gradients usually lead. Making them faster depends on the
# device, and each trick must pass the same test as the fixes above: measured, repeated, kept
# only beyond the noise. The cookbook has a measured recipe for each:
#
# - more options of the profiler, and its trace opened in Perfetto:
#   [Profile one training step](cookbook/10_speedups_recipes.ipynb#Profile-one-training-step-before-optimising-anything);
# - `channels_last`, `foreach` and `fused` optimisers, larger batches:
#   [Measure each trick of the training step](cookbook/10_speedups_recipes.ipynb#Measure-each-trick-of-the-training-step);
# - bfloat16 mixed precision on a CPU, and why it can be slower:
#   [Find out whether bf16 pays on this CPU](cookbook/10_speedups_recipes.ipynb#Find-out-whether-bf16-pays-on-this-CPU);
# - `torch.compile`, with its compilation timed apart:
#   [Compile a model](cookbook/10_speedups_recipes.ipynb#Compile-a-model,-and-time-the-compilation-separately);
# - the full ladder with mixed precision and `torch.compile`, and results committed with the
#   course: [Stack the tricks](cookbook/10_speedups_recipes.ipynb#Stack-the-tricks:-the-ladder);
# - on a GPU, pinned memory and copies that overlap the step:
#   [Copy the next batch to the GPU](cookbook/10_speedups_recipes.ipynb#Copy-the-next-batch-to-the-GPU-while-this-one-trains);
# - on a GPU, TF32 matrix products:
#   [TF32](cookbook/10_speedups_recipes.ipynb#Let-float32-use-the-GPU's-tensor-cores:-TF32);
# - on a GPU, `cudnn.benchmark`:
#   [Let cuDNN pick the fastest convolution](cookbook/10_speedups_recipes.ipynb#Let-cuDNN-pick-the-fastest-convolution-per-input-shape:-cudnn.benchmark);
# - on a GPU, the calls that make the CPU wait (`.item()` in the loop):
#   [Know which calls make the CPU wait](cookbook/10_speedups_recipes.ipynb#Know-which-calls-make-the-CPU-wait-for-the-GPU);
# - for inference, Conv-BN fusion and int8:
#   [Fuse Conv and BatchNorm](cookbook/10_speedups_recipes.ipynb#Fuse-Conv-and-BatchNorm-for-inference)
#   and [Quantize to int8](cookbook/10_speedups_recipes.ipynb#Quantize-to-int8-for-CPU-inference).

# %% [markdown]
# ## Exercises

# %% [markdown]
# ### Exercise 1 · A loop that times its own wait
#
# The profiler is for looking closely; a training loop can also watch itself, cheaply, every
# epoch. Finish `timed_loop(batches, step, steps)`: it runs `steps` training steps, each on the
# next batch of the iterator `batches`, and returns two numbers: the milliseconds per step, and
# the milliseconds per step spent waiting for the next batch. The check runs it on a fake loop
# whose batches take 20 ms to arrive and whose step takes 10 ms.
#
# <details><summary>Hint 1</summary>
#
# Time the whole loop as `time_steps` does. Separately, add up the time of the one line that
# waits for data, over all the steps.
# </details>
#
# <details><summary>Hint 2</summary>
#
# Read the clock (`time.perf_counter`) just before and just after the line that asks for the
# batch; the difference is that step's wait. Both totals are in seconds: per step means divided
# by `steps`, milliseconds means times 1000.
# </details>


# %%
def timed_loop(batches, step, steps):
    """Run `steps` steps on batches; return (ms per step, ms waiting for data per step)."""
    for _ in range(steps):
        x, y = next(batches)
        step(x, y)
    return ..., ...


# %%
lesson10.exercise_1(timed_loop)

# %% [markdown]
# #### Solution


# %% tags=["solution"]
# Solution: open it once you have tried. It uses its own names, so your answer stays as it is.
def solution_timed_loop(batches, step, steps):
    waited = 0.0
    began = time.perf_counter()
    for _ in range(steps):
        asked = time.perf_counter()
        x, y = next(batches)
        waited += time.perf_counter() - asked
        step(x, y)
    total = time.perf_counter() - began
    return 1000 * total / steps, 1000 * waited / steps


lesson10.exercise_1(solution_timed_loop)

# %% [markdown]
# ### Exercise 2 · How many workers does a disk need?
#
# One worker reads a whole batch in `read_ms` milliseconds; one training step computes in
# `step_ms`. Write `workers_needed(read_ms, step_ms)`: the fewest workers (a whole number, at
# least 1) that keep the loop from waiting, once they are all reading. In this lesson a batch
# took one and a half steps to read, and 2 workers hid the wait. The check tries disks faster and
# slower than the step.
#
# <details><summary>Hint 1</summary>
#
# With several workers reading at the same time, how often does a new batch arrive? The loop
# never waits if batches arrive at least as often as the steps use them.
# </details>
#
# <details><summary>Hint 2</summary>
#
# `n` workers deliver `n` batches every `read_ms`. A fraction of a worker does not exist: round
# up with `math.ceil` (after `import math`). And a disk faster than the step still needs one
# worker, or the loop reads each batch itself.
# </details>


# %%
def workers_needed(read_ms, step_ms):
    """The fewest DataLoader workers that keep the loop from waiting for data."""
    return ...


# %%
lesson10.exercise_2(workers_needed)

# %% [markdown]
# #### Solution


# %% tags=["solution"]
# Solution: open it once you have tried. It uses its own names, so your answer stays as it is.
def solution_workers_needed(read_ms, step_ms):
    import math

    return max(1, math.ceil(read_ms / step_ms))


lesson10.exercise_2(solution_workers_needed)

# %% [markdown]
# ## Summary
#
# - Measure before you change anything: a warm-up, several repeats, the median; on a GPU, wait
#   for the queued work (`torch.cuda.synchronize()`) before reading the clock.
# - `torch.profiler.profile` with `record_function` labels and a `schedule` says how a step
#   splits into data, forward, backward and optimiser; `key_averages().table()` lists where the
#   time goes.
# - A loop that waits for data wastes the device: DataLoader workers (`num_workers`,
#   `persistent_workers=True`) read the next batches while the model trains; data that fits in
#   memory can be read once and sliced into batches.
# - Stack fixes one at a time and keep one only when it is faster than the best so far beyond
#   the spread of repeated timings; a verdict that changes between runs is within the noise.
# - Once the wait is gone the model is the bottleneck: the cookbook measures the tricks for it,
#   device by device.
#
# Next: [11 · Memory: where a training step's bytes go](11_memory.ipynb).
