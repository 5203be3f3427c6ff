# %% [markdown]
# # 10 · Speedups, measured: find what the training step waits for
#
# [![Open In Colab](https://colab.research.google.com/assets/colab-badge.svg)](https://colab.research.google.com/github/pytorch-cookbook/pytorch-cookbook/blob/main/notebooks/10_speedups.ipynb)
#
# The CNN's training loop from 07, fed from a slow disk, is much slower than its training step.
# This lesson measures it, profiles it to find where the time goes, fixes what it finds, and
# measures again, keeping a fix only when it is faster beyond the noise.
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
# Python: closures ([00](00_python.ipynb#Functions-are-values:-lambda,-closures,-decorators)) and `{**a, **b}` ([00](00_python.ipynb#Unpacking-and-f-string-formats)).
#
# **Cookbook:** [10 · Speedups, measured: recipes](cookbook/10_speedups_recipes.ipynb) (training) and [10 · Faster inference, measured](cookbook/10_speedups_inference_recipes.ipynb) (compile, fusion, int8) hold the chapter's recipes, for when you need one.
#
# **Study time:** about 80 min: 1,930 words of text at 120 a minute, 224 lines of code at 10 a minute, 24 code cells to run at 1 minute each (reading what they print), 2 exercises at 10 minutes each.
#
# **Run time:** about 15 s on a 2-core CPU · GPU optional.

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

import matplotlib.pyplot as plt
import torch
from torch import nn
from torch.profiler import ProfilerActivity, profile, record_function, schedule
from torch.utils.data import BatchSampler, DataLoader, RandomSampler, TensorDataset

from helpers.bench import time_it
from helpers.check import check
from helpers.datasets import SlowReads
from helpers.diagrams.timeline import draw_timeline
from helpers.env import setup
from helpers.exercises import lesson10
from helpers.images import channel_stats, load_cifar2
from helpers.ladder import KEEP_IF_FASTER, NOISE, deviation, verdict
from helpers.models import small_cnn

device = setup(seed=0)

# %% [markdown]
# ## Time one training step, then the loop
#
# "Make training faster" starts with a number: how long one step takes. Two traps: the
# **first calls are slower** (PyTorch allocates memory and picks *kernels*, the compiled
# routines behind each operation), and **no two
# runs take the same time** (other programs share the machine). So warm up, repeat, and take
# the **median**, which a few slow repeats do not move.
# `helpers.bench.time_it` does this with `torch.utils.benchmark.Timer` and returns the
# median seconds per call.
#
# On a GPU, operations are only *queued* when Python calls them: a timer must wait for the
# queue to empty (`torch.cuda.synchronize()`). `time_it` does, and the loops below call `sync()`.
#
# The step is 07's five lines in a function; `make_step` builds a fresh CNN and optimiser, so
# each measurement starts from the same weights. `time_it` calls a function without arguments:
# `one_step` trains on one fixed batch.

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


def one_step():
    step(x, y)


step_s = time_it(one_step, min_run_time=1.0)  # median seconds per step, over a second

# %% tags=["nbval-ignore-output"]
print(f"one training step on a batch of 64: {1000 * step_s:.1f} ms (median)")

# %% [markdown]
# That is the step alone, on a batch in memory. A real loop also has to *get* each batch.
# `helpers.datasets.SlowReads` makes a slow disk: it waits 1.2× a step's time before each
# read, so reading a batch takes a little longer than training on it. One read is a whole
# batch, as when 64 images sit in one file: a `BatchSampler` groups
# 05's shuffled sampler into lists of 64 indices (the last, incomplete one dropped), and
# `batch_size=None` tells the DataLoader to pass each list to the data set in one call, without
# collating. `TensorDataset` indexes its tensors with the list, as `images[[3, 7, 1]]` would.
#
# `time_steps` runs the loop on `next(batches)`: after two warm-up steps it times `steps`
# steps, `repeats` times, and returns the seconds per step of each repeat.

# %%
slow_disk = SlowReads(TensorDataset(images, labels), delay=1.2 * step_s)  # one wait per read
batches_of_64 = BatchSampler(RandomSampler(slow_disk), batch_size=64, drop_last=True)
plain_loader = DataLoader(slow_disk, sampler=batches_of_64, batch_size=None)


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
print(f"the loop: {1000 * loop_s:.1f} ms per step, {loop_s / step_s:.1f}× the step alone")

# %%
check(
    loop_s >= 1.5 * step_s,
    "the loop takes at least 1.5× the step alone: something else takes time",
    measured=f"{loop_s / step_s:.2f}×",
    timing=True,
)

# %% [markdown]
# Here the slow disk was built in; in your own loop, ask the profiler.

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
# On a GPU, `sync()` at the end of each phase makes its time include the GPU work it queued.
# `iter(loader)` comes before the profiler: worker processes (next section) start there.

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
# `prof.key_averages()` adds up the time of each operation and each label.
# Each row: a name (`key`), a `count` of calls, and microseconds with what it called (`cpu_time_total`)
# and without (`self_cpu_time_total`). `show_rows` prints the largest rows per profiled step:

# %%
def show_rows(prof, rows, by_self=False):
    """Print the profile's `rows` largest rows by total (or self) time, per profiled step."""
    table = []
    for event in prof.key_averages():  # aten::mkldnn_*: oneDNN, the CPU library of fast kernels
        us = event.self_cpu_time_total if by_self else event.cpu_time_total
        table.append((us / STEPS / 1000, event.key, event.count / STEPS))
    print(f"{'name (cut at 48 characters)':<48} {'self' if by_self else 'total':>5} ms  calls")
    for ms, name, calls in sorted(table, reverse=True)[:rows]:
        print(f"{name[:48]:<48} {ms:8.1f} {calls:6.1f}")


# %% tags=["nbval-ignore-output"]
show_rows(before, rows=8)


# %% [markdown]
# `ProfilerStep*` is each whole step; under it come your phases, once per step (`optimizer`,
# the shortest, may fall below the rows shown), and inside `data` the DataLoader's row.
# `aten::` rows are PyTorch's own C++ operations (`aten::convolution_backward`: a convolution's
# backward pass), which the autograd engine's rows (`autograd::`, `...Backward0`) call.
# `ms_per_step` collects the four phases (a GPU can give a phase a second row: it adds them):

# %%
def ms_per_step(prof):
    """Each phase's milliseconds per profiled step."""
    totals = dict.fromkeys(PHASES, 0.0)  # {phase: 0.0 for phase in PHASES}
    for event in prof.key_averages():
        if event.key in totals:  # microseconds, over all profiled steps
            totals[event.key] += event.cpu_time_total
    return {phase: totals[phase] / STEPS / 1000 for phase in PHASES}


before_ms = ms_per_step(before)
before_total = sum(before_ms.values())

# %%
check(
    before_ms["data"] > before_total / 4,
    "waiting for data takes over a quarter of each step",
    measured=f"{before_ms['data'] / before_total:.0%}",
    timing=True,
)

# %% [markdown]
# So the model is not the whole story: a large part of each step goes to waiting for the next
# batch, computing nothing (on a GPU: low utilisation in `nvidia-smi`). No faster model
# shortens it.

# %% [markdown]
# ## Fix the wait: worker processes read while the model trains
#
# Without workers, the DataLoader reads each batch in the loop's own process: read, train, read,
# train. With `num_workers=2` two **worker processes** read batches and queue them (up to
# `prefetch_factor=2` each) while the main process trains. `persistent_workers=True` keeps them
# alive from one epoch to the next. One worker reads a batch in 1.2 steps, too slowly; two
# deliver one every 0.6 steps.
#
# Waiting for a disk takes no processor time. Reading that keeps a processor busy (decoding
# JPEGs, augmentation) needs a free core per worker: see [Choose `num_workers` by
# measuring it](cookbook/05_datasets_dataloaders_recipes.ipynb#Choose-num_workers-by-measuring-it).
# Workers find the `Dataset` class by importing it, which is why `SlowReads` lives in a `.py`
# file: on macOS and Windows (and on Linux from Python 3.14) each is a new Python, not a copy:
# it cannot see a notebook's class.

# %%
worker_loader = DataLoader(
    slow_disk, sampler=batches_of_64, batch_size=None, num_workers=2, persistent_workers=True
)
after = profile_steps(worker_loader)
after_ms = ms_per_step(after)
after_total = sum(after_ms.values())

# %% [markdown]
# Both profiles on one time axis, each step's phases as coloured bars (reading in the loop on
# top, workers below; `helpers.diagrams.timeline`):

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
    before_total - after_total >= 0.5 * before_ms["data"],
    "with 2 workers each profiled step is shorter by at least half the wait it had",
    measured=f"{before_total - after_total:.1f} ms shorter, the wait was {before_ms['data']:.1f}",
    timing=True,
)
check(
    after_ms["data"] <= 0.25 * before_ms["data"],
    "and each step waits for data less than a quarter as long as before",
    measured=f"{after_ms['data']:.1f} vs {before_ms['data']:.1f} ms",
    timing=True,
)


# %% [markdown]
# **What to notice:** the orange bars, the waits, shrink, and each step got shorter by at least
# half its old wait (the checks), so the wait did not just move into another phase. The workers
# made no phase faster (on few cores their work can slow the others): reading and training
# now happen at the same time. How many
# workers a loop needs follows from two times, reading a batch and computing a step (Exercise 2).

# %% [markdown]
# ## Measure again: stack the fixes one at a time
#
# A fix is a hypothesis until it is measured, more than once. The **speedup ladder** times the
# training steps as fixes are stacked, each rung adding one fix to the rungs kept above it. A
# rung's **spread** is how far its repeats typically lie from their median.
#
# Each rung is compared with the best rung kept so far. The **noise** of that comparison is 5 %
# of the best rung's median or 1.5 times the two rungs' spreads added, whichever is larger. A
# median lower by more than the noise is **kept**, higher by more than that **slower**, anything
# in between **no faster**: there a difference could be chance. `helpers.ladder.verdict` is that
# rule; a rung not kept is dropped.
#
# The rungs:
#
# 1. the slow disk, read in the loop (the baseline);
# 2. 2 worker processes;
# 3. the data set in memory, each batch **sliced** from it (`images[order[i : i + 64]]`, a
#    shuffled `order`): no read, no workers, after one slow pass to load it (`load_cifar2`);
# 4. `channels_last`: each pixel's channels next to each other in memory, the layout many
#    convolution kernels prefer ([02](02_contiguity_strides.ipynb) shows memory layouts).

# %%
def sliced_batches():
    """Endless shuffled batches of 64 sliced from the tensors in memory."""
    while True:
        order = torch.randperm(len(labels))
        for i in range(0, len(order) - 63, 64):
            yield images[order[i : i + 64]], labels[order[i : i + 64]]


def batches_from(data):
    """A fresh iterator of batches from the data source named `data`."""
    if data == "in memory, sliced":
        return sliced_batches()
    return iter({"slow disk": plain_loader, "2 workers": worker_loader}[data])


rungs = [
    ("slow disk, read in the loop", {"data": "slow disk"}),
    ("+ 2 worker processes", {"data": "2 workers"}),
    ("+ in memory, sliced", {"data": "in memory, sliced"}),
    ("+ channels_last", {"channels_last": True}),
]
config = {"data": "slow disk", "channels_last": False}  # the fixes kept so far
best, ladder = None, []  # the best rung's times; one row per rung
for name, change in rungs:
    trial = {**config, **change}  # the kept fixes, with this rung's one change
    step, model = make_step()
    if trial["channels_last"]:
        model.to(memory_format=torch.channels_last)
    times = time_steps(batches_from(trial["data"]), step, steps=3, repeats=5)
    row = {"rung": name, "median": statistics.median(times), "spread": deviation(times)}
    row["verdict"] = verdict(times, best)
    if best is not None:  # the change of the median, and the noise, against the best rung
        best_median = statistics.median(best)
        row["change"] = row["median"] / best_median - 1
        row["noise"] = max(KEEP_IF_FASTER, NOISE * (row["spread"] + deviation(best)) / best_median)
    ladder.append(row)
    if row["verdict"] == "kept":
        config, best = trial, times
baseline = ladder[0]["median"]

# %% [markdown]
# In the table, `speed` is against the baseline; `change` is the median's change against the best
# rung kept so far (minus: faster), and `noise` the change a verdict needs, either way:

# %% tags=["nbval-ignore-output"]
print(f"{'rung':<28} {'median':>9} {'spread':>8} {'speed':>6} {'change':>7} {'noise':>6}  verdict")
for row in ladder:
    change = (
        f"{row['change']:+7.1%} {row['noise']:6.1%}" if "change" in row else f"{'-':>7} {'-':>6}"
    )
    print(
        f"{row['rung']:<28} {1000 * row['median']:6.1f} ms {1000 * row['spread']:5.1f} ms "
        f"{baseline / row['median']:5.2f}× {change}  {row['verdict']}"
    )

# %%
check(
    ladder[1]["verdict"] == "kept",
    "the ladder keeps the workers: faster than the baseline beyond the noise",
    measured=f"{baseline / ladder[1]['median']:.2f}× ({ladder[1]['verdict']})",
    timing=True,
)

# %% [markdown]
# A rung far faster than the baseline can still be dropped: the verdict is about the one fix it
# adds.
#
# The workers' rung is kept because the wait it hides is not computation. The last two verdicts
# depend on the machine and the moment: in memory nothing is read or passed between processes,
# and whether `channels_last` pays depends on your CPU's or GPU's convolution kernels. A rung's
# spread shows only how its own repeats differ: when other programs load the machine during one
# rung, the verdict follows the load. A verdict that changes when you run the cell again is not
# one to trust.
#
# The ladder's times need not match the first section's or the profiles': other moments, and
# the profiler adds time.

# %% [markdown]
# ## The model is the bottleneck now: where to look next
#
# Once the wait is gone, the profile says what is left: the forward and backward passes. Its
# rows sorted by self time show which operations take it. The names depend on the CPU (and differ
# on a GPU), so the stored table is again only an example:

# %% tags=["nbval-ignore-output"]
show_rows(after, rows=6, by_self=True)

# %%
check(
    after_ms["forward"] + after_ms["backward"] > after_total / 2,
    "after the fix, the forward and backward passes take most of the step",
    measured=f"{after_ms['forward'] + after_ms['backward']:.1f} of {after_total:.1f} ms",
    timing=True,
)


# %% [markdown]
# On a CPU the convolutions and their gradients usually lead. Making them faster depends on the
# device, and each trick must pass the same test as the fixes above. In the cookbook:
# [profile one training step](cookbook/10_speedups_recipes.ipynb#Profile-one-training-step-before-optimising-anything)
# (its trace in Perfetto), [measure each trick](cookbook/10_speedups_recipes.ipynb#Measure-each-trick-of-the-training-step)
# (`channels_last`, fused optimisers, larger batches), [stack the tricks](cookbook/10_speedups_recipes.ipynb#Stack-the-tricks:-the-ladder)
# (this ladder with mixed precision), bf16 on CPUs and GPU-only tricks; in its second notebook,
# [compile a model](cookbook/10_speedups_inference_recipes.ipynb#Compile-a-model,-and-time-the-compilation-separately)
# and make inference faster.

# %% [markdown]
# ## Exercises

# %% [markdown]
# ### Exercise 1 · A loop that times its own wait
#
# A training loop can also watch itself, cheaply, every epoch. Finish
# `timed_loop(batches, step, steps)`: it runs `steps` training steps, each on the next batch of
# the iterator `batches`, and returns the milliseconds per step and the milliseconds per step
# spent waiting for the next batch. The check runs it on a fake loop
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
# least 1) that keep the loop from waiting, once they are all reading (here a batch took 1.2
# steps to read: two workers). The check tries disks faster and slower than the step.
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
# - Measure before you change anything: a warm-up, many repeats, the median; on a GPU,
#   `torch.cuda.synchronize()` before reading the clock.
# - `torch.profiler` with `record_function` labels splits a step into data, forward, backward
#   and optimiser; `key_averages()` lists where the time goes.
# - A loop that waits for data wastes the device: enough DataLoader workers hide the wait; data
#   that fits in memory can be read once and sliced into batches.
# - Stack fixes one at a time; keep one only when it beats the best so far beyond the noise.
# - Once the wait is gone the model is the bottleneck: the cookbook measures the tricks for it.
#
# Next: [11 · Memory: where a training step's bytes go](11_memory.ipynb).
