# %% [markdown]
# # 11 · Memory: recipes
#
# [![Open In Colab](https://colab.research.google.com/assets/colab-badge.svg)](https://colab.research.google.com/github/pytorch-cookbook/pytorch-cookbook/blob/main/notebooks/cookbook/11_memory_recipes.ipynb)
#
# **The cookbook of chapter 11.** New to the topic? [The lesson](../11_memory.ipynb) teaches it
# step by step on the course's running example. Here each recipe answers one task; the
# [recipe index](../RECIPES.md) and the [error index](../ERRORS.md) find the one you need.
#
# "CUDA out of memory" ends more training runs than any bug. After this notebook you can say
# where the memory of a training step goes (parameters, gradients, optimizer state, the
# activations autograd saves for backward, temporaries), compute it for a model and a batch
# size, and **measure** it: the bytes autograd saves are counted exactly with
# `torch.autograd.graph.saved_tensors_hooks`, on any device, and every technique below (in-place
# ops, `.item()`, `del` done right, `inference_mode`, mixed precision, gradient accumulation,
# activation checkpointing) is measured the same way and collected in one table at the end. On
# a GPU the CUDA allocator's own numbers are added; this notebook explains them on a CPU.
#
# **Prerequisites:** [03](../03_autograd.ipynb) (autograd, `no_grad`, gradient accumulation),
# [07](../07_training_loop.ipynb) (training loop), [10](../10_speedups.ipynb) (mixed precision,
# `helpers.bench`).
#
# **Run time:** about 20 s on a 2-core CPU · GPU optional.

# %%
import sys

if (
    "google.colab" in sys.modules
):  # Colab: install the course's helpers and what the notebooks import
    import subprocess

    spec = "pytorch-cookbook[notebooks] @ git+https://github.com/pytorch-cookbook/pytorch-cookbook"
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", spec], check=True)

import contextlib
import copy
import gc
import math
import os
import traceback
from functools import partial
from pathlib import Path

import matplotlib.pyplot as plt
import pandas as pd
import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.checkpoint import (
    CheckpointPolicy,
    checkpoint,
    checkpoint_sequential,
    create_selective_checkpoint_contexts,
)
from torch.utils.flop_counter import FlopCounterMode

from helpers.bench import time_it
from helpers.check import check, expect_error
from helpers.env import setup
from helpers.exercises import ch11
from helpers.images import channel_stats, load_cifar2
from helpers.memory import (
    LAYER_SAVES,
    AllocatedBytes,
    SavedTensors,
    TrainingMemory,
    activation_bytes_by_layer,
    cuda_peak_bytes,
    estimate,
    graph_nodes,
    mib,
    optimizer_state_bytes,
    peak_bytes,
    saved_bytes,
    storage_bytes,
)
from helpers.models import conv_block, small_cnn

device = setup(seed=0)
RUN = Path("runs/11_memory")
RUN.mkdir(parents=True, exist_ok=True)
train_images, train_labels, classes = load_cifar2("train")
mean, std = channel_stats(train_images)
# Batches of 64 shuffled images (CIFAR2 is stored class by class). Indexing with a tensor
# copies, as a DataLoader's batches are copies: a slice would be a view of all 10,000 images,
# and a view keeps its whole storage alive (see 02).
order = torch.randperm(len(train_labels))
batches = [(train_images[i], train_labels[i]) for i in order[:384].split(64)]
x, y = batches.pop(0)
print(f"{len(batches) + 1} batches of {len(x)} CIFAR2 images, {x.dtype}, {tuple(x.shape[1:])}")
print("classes in the first batch:", y.bincount().tolist())

# %% [markdown]
# The byte counts below do not depend on the device: for the layers of this notebook
# (convolutions, BatchNorm, ReLU, pooling, `Linear`) autograd saves the same tensors on a CPU
# and on a GPU, and the first GPU cell below checks that. (Not every layer: `Dropout` keeps a
# float mask on a CPU and a 1-byte bool mask on a GPU, and `helpers.memory` knows it.) So the
# notebook counts them on the CPU, where they are exact integers that the tests compare, and
# adds the CUDA allocator's own numbers in cells that run only on a GPU.
# Measuring the process's resident memory on a CPU would say little: the C library's allocator
# keeps and reuses freed memory, and other objects share the process.

# %% [markdown]
# ## Count what a training step keeps in memory
#
# A training step holds, at its peak:
#
# - the **parameters** (and buffers such as BatchNorm's running statistics);
# - one **gradient** per trainable parameter, as big as the parameters;
# - the **optimizer state**: nothing for plain SGD, one copy of the parameters for momentum,
#   two for Adam (`exp_avg`, `exp_avg_sq`);
# - the **activations saved for backward**: every layer keeps what its backward needs, from the
#   forward until `backward()` reaches it. This part grows with the batch size, and for
#   convolutional networks it is usually the largest;
# - **temporaries**: a layer's output before the next layer consumes it, the gradients flowing
#   back through the graph, a kernel's scratch space.
#
# What each layer saves is a rule of autograd, and `helpers.memory` lists the rules it knows:

# %%
for layers, saves in LAYER_SAVES.items():
    print(f"{layers:<54} {saves}")

# %% [markdown]
# From these rules and the shapes of one forward pass (run without autograd), `estimate` adds
# up the four parts for a model and a batch. The course's CIFAR2 CNN, a batch of 64, Adam:

# %%
torch.manual_seed(0)
model = small_cnn(mean, std)
plan = estimate(model, x, optimizer="adam")
by_layer = pd.Series(activation_bytes_by_layer(model, x))
blocks = by_layer.groupby(lambda name: name.split(".")[0], sort=False).sum()
blocks.index = [f"{i} {type(model[int(i)]).__name__}" for i in blocks.index]
print(blocks.to_frame("saved bytes").to_string())
print(pd.Series(plan.rows(), name="estimated bytes").to_string())

# %% [markdown]
# The first two layers (`ToDtype`, `Normalize`) save nothing: no gradient flows into the input
# images. Each conv block saves its convolution's input, its BatchNorm's input and its ReLU's
# output, and each `MaxPool2d` adds **int64** indices of its maxima, twice the bytes of its float
# output. Activations are 56 times the parameters here.
#
# Now the measurement, first in ten lines. `torch.autograd.graph.saved_tensors_hooks` calls a
# *pack* hook with every tensor autograd saves for backward. The counter below keys each one by
# its **storage** (`untyped_storage().data_ptr()`), because a view shares its base's memory: a
# ReLU's output that the next max pool also saves, or `Linear` saving `weight.t()`, are not new
# memory. A tensor's own size is `t.nbytes` (`t.element_size() * t.numel()`); a storage's is
# `untyped_storage().nbytes()`. The model's parameters and buffers are left out, since they
# exist anyway.

# %%
storages: dict[int, int] = {}  # data pointer -> bytes


def pack(t: torch.Tensor) -> torch.Tensor:
    storages[t.untyped_storage().data_ptr()] = t.untyped_storage().nbytes()
    # A detached alias: the same memory, no graph. Returning `t` itself would let an output
    # that its own graph node saves hold that node, a loop Python never frees.
    return t.detach()


with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
    out = model(x)
weights = {t.untyped_storage().data_ptr() for t in [*model.parameters(), *model.buffers()]}
inline_saved = sum(n for ptr, n in storages.items() if ptr not in weights)
del out
counted = len(storages.keys() - weights)
print(f"saved for backward: {inline_saved:,} bytes in {counted} storages")
print(f"the input batch: {x.nbytes:,} bytes = {x.element_size()} × {x.numel():,}")

# %% [markdown]
# `SavedTensors` (in `helpers.memory`) is this counter made reusable; `AllocatedBytes` follows
# every allocation with a `TorchDispatchMode`. The full step, measured part by part:

# %%
optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
activations = saved_bytes(lambda: model(x), exclude=model)
with AllocatedBytes() as step_memory:
    loss = F.cross_entropy(model(x), y)
    loss.backward()
    optimizer.step()
measured = TrainingMemory(
    parameters=storage_bytes([*model.parameters(), *model.buffers()]),
    gradients=storage_bytes([p.grad for p in model.parameters()]),
    optimizer_state=optimizer_state_bytes(optimizer),
    activations=activations,
)
optimizer.zero_grad()
print(pd.DataFrame({"estimated": plan.rows(), "measured": measured.rows()}).to_string())
check(plan == measured, "the calculator matches the measurement, byte for byte, in every part")
check(inline_saved == activations, "the ten-line counter and SavedTensors agree to the byte")

# %% [markdown]
# `AllocatedBytes` followed every tensor the step allocated (see its docstring: the operators'
# outputs, views and in-place results excluded). The step's peak is below the estimated total
# because backward frees each saved activation once it has used it while it allocates the
# gradients, so the two are never all alive at once; temporaries take part of that room.

# %%
step_peak = measured.parameters + step_memory.max_allocated
print(f"estimated total {mib(plan.total)}, measured peak {mib(step_peak)}")
check(
    0.85 < step_peak / plan.total < 1.15,
    "the estimate is within 15% of the measured peak of a training step",
)

# %% [markdown]
# On a GPU, the CUDA allocator reports its peak itself: `torch.cuda.max_memory_allocated()`
# after `torch.cuda.reset_peak_memory_stats()`, and `torch.cuda.memory_summary()` prints its
# full statistics. `helpers.memory.cuda_peak_bytes` wraps the first two:

# %%
if torch.cuda.is_available():
    gpu_model = small_cnn(mean, std).to(device)
    gpu_optimizer = torch.optim.Adam(gpu_model.parameters(), lr=1e-3)
    xg, yg = x.to(device), y.to(device)

    def gpu_step() -> None:
        F.cross_entropy(gpu_model(xg), yg).backward()
        gpu_optimizer.step()

    gpu_step()  # the first step allocates Adam's state and gradients, and warms cuDNN up
    # What was allocated before the step (parameters, gradients, Adam's state, the batch) is
    # not in cuda_peak_bytes: add the first three back.
    gpu_peak = cuda_peak_bytes(gpu_step) + plan.parameters + plan.gradients + plan.optimizer_state
    gpu_saved = saved_bytes(lambda: gpu_model(xg), exclude=gpu_model)
    print(f"saved for backward on the GPU: {gpu_saved:,} bytes (CPU: {activations:,})")
    print(f"CUDA peak {mib(gpu_peak)} vs estimated {mib(plan.total)}")
    print(torch.cuda.memory_summary(abbreviated=True))
    check(abs(gpu_saved / activations - 1) < 0.05, "autograd saves the same bytes on the GPU")
    check(gpu_peak > 0.9 * plan.total, "the CUDA peak holds the whole estimate")
    del gpu_model, gpu_optimizer, xg, yg
else:
    print("no CUDA device: the allocator's numbers are shown on a GPU (e.g. Colab)")

# %% [markdown]
# On a GPU the peak is usually a little above the CPU's: the allocator rounds every block up to
# a multiple of 512 bytes, and cuDNN takes workspace for its algorithms.
# A rule of thumb from this table: at batch 64 a 98k-parameter CNN needs 21 MiB of activations
# and 1.5 MiB for everything else, so **the batch size is the knob**, and the techniques below
# act on the activations.

# %% [markdown]
# ## Evaluate without recording a graph: `no_grad` and `inference_mode`
#
# With autograd on, an evaluation forward saves the same activations as a training one, and
# holds them as long as its output lives, for a backward that never comes. Under
# `torch.no_grad()` or `torch.inference_mode()` nothing is saved and each layer's output is
# freed as soon as the next layer has used it ([03](03_autograd_recipes.ipynb) compares the two).

# %%
model.eval()
evaluation = {}
for name, mode in {
    "autograd on": contextlib.nullcontext,
    "no_grad": torch.no_grad,
    "inference_mode": torch.inference_mode,
}.items():
    with mode():
        evaluation[name] = {
            "saved bytes": saved_bytes(lambda: model(x), exclude=model),
            "peak bytes": peak_bytes(lambda: model(x)),
        }
model.train()
evaluation = pd.DataFrame(evaluation).T
print(evaluation.to_string())

# %%
check(
    (evaluation.loc[["no_grad", "inference_mode"], "saved bytes"] == 0).all(),
    "no_grad and inference_mode save nothing for backward",
)
check(
    evaluation.loc["inference_mode", "peak bytes"]
    < 0.5 * evaluation.loc["autograd on", "peak bytes"],
    "and the forward's peak memory falls by more than half",
)


# %% [markdown]
# What to notice: the peak without autograd is two layers' outputs at a time (a layer's input
# and output), not all of them. `model.eval()` changes what layers *compute* (BatchNorm's
# running statistics, no dropout), not what autograd records: evaluation needs both.

# %% [markdown]
# ## Keep a running loss from holding every graph: `.item()`
#
# `total_loss += loss` adds a tensor that carries its graph, so `total_loss` carries all of
# them. In a training loop `backward()` has already freed each graph's saved tensors, and
# what piles up is the graph's nodes (small, but one set per step, for the whole epoch). In an
# evaluation loop without `no_grad` nothing frees them: every batch's activations stay. The same
# happens with `losses.append(loss)` for a plot. `SavedTensors.alive_bytes` counts what is
# still held, after each of 5 batches:

# %%
def running_loss(keep_tensor: bool, train: bool) -> list[dict[str, int]]:
    """Sum 5 batches' losses as a tensor or as floats; report what is held after each batch."""
    total, rows = 0.0, []
    model.train(train)  # an evaluation loop evaluates in evaluation mode, autograd on or off
    with SavedTensors(exclude=model) as graphs:
        for images, labels in batches:
            loss = F.cross_entropy(model(images), labels)
            if train:
                loss.backward()
            total += loss if keep_tensor else loss.item()
            del loss
            nodes = graph_nodes(total) if isinstance(total, torch.Tensor) else 0
            rows.append({"saved bytes held": graphs.alive_bytes, "graph nodes held": nodes})
    model.train()
    model.zero_grad()
    return rows


growth = pd.concat(
    {
        "evaluation, total_loss += loss": pd.DataFrame(running_loss(True, train=False)),
        "evaluation, total_loss += loss.item()": pd.DataFrame(running_loss(False, train=False)),
        "training, total_loss += loss": pd.DataFrame(running_loss(True, train=True)),
    }
)
growth.index.names = ["loop", "batch"]
print(growth.unstack("batch")["saved bytes held"].to_string())
print(growth.unstack("batch")["graph nodes held"].to_string())

# %%
held = growth.loc["evaluation, total_loss += loss", "saved bytes held"]
check(
    (held == held.iloc[0] * pd.Series(range(1, 6))).all()
    and held.iloc[0] > evaluation.loc["autograd on", "saved bytes"],
    "a running tensor total holds every batch's activations: 5 batches, 5 times the bytes",
)
check(
    (growth.loc["evaluation, total_loss += loss.item()"] == 0).all().all(),
    "with .item() nothing is held after each batch",
)
nodes = growth.loc["training, total_loss += loss", "graph nodes held"]
check(
    (growth.loc["training, total_loss += loss", "saved bytes held"] == 0).all()
    and (nodes.diff().iloc[1:] == nodes.iloc[1] - nodes.iloc[0]).all()
    and nodes.iloc[1] > nodes.iloc[0],
    "in training backward frees the saved tensors, but the graph nodes pile up, batch by batch",
)

# %% [markdown]
# ## Find what still holds memory after `del`
#
# `del name` removes one *name*; the memory goes only when the last reference goes. In a
# notebook three holders are easy to miss: the **optimizer** (it refers to every parameter, its
# gradient and its state), the **output cache** (a cell that ends with an expression stores its
# value in `Out[n]` and `_`), and a **stored exception** (an error you keep, such as `caught.error`
# below or `e` saved from `except ... as e`, and, after a cell that failed, `sys.last_traceback`:
# its traceback keeps the failing function's frames, and with them its local variables). `AllocatedBytes`
# follows everything made from here on, on the notebook's device (on a GPU this is the GPU
# memory you want back): a model, its optimizer after one step, and an evaluation loss shown at
# the end of the cell.

# %%
memory = AllocatedBytes()
cuda_before = torch.cuda.memory_allocated() if torch.cuda.is_available() else 0
with memory:
    torch.manual_seed(0)
    big_model = small_cnn(mean, std, width=32).to(device)
    big_optimizer = torch.optim.Adam(big_model.parameters(), lr=1e-3)
    xd, yd = x.to(device), y.to(device)  # on a CPU, x and y themselves
    F.cross_entropy(big_model(xd), yd).backward()
    big_optimizer.step()
    val_images, val_labels = (t.to(device) for t in batches[0])
    val_loss = F.cross_entropy(big_model(val_images), val_labels)
    del val_images, val_labels
print(f"held: {mib(memory.allocated)}")
val_loss


# %% [markdown]
# ### Pitfall: the traceback of a failed step keeps its graph alive
#
# A step fails after its forward, as an out-of-memory error on a GPU typically does (here a
# `ValueError` from labels of the wrong length stands in for it). The exception's traceback keeps
# the function's frame alive, with `logits` and its whole graph: a loop that catches the error
# and retries inside the `except` block keeps that memory while it retries
# ([13](13_reproducibility_debugging_recipes.ipynb) retries after the block instead).

# %%
def faulty_step(net: nn.Module, images: torch.Tensor, labels: torch.Tensor) -> None:
    logits = net(images)
    F.cross_entropy(logits, labels[:32]).backward()  # the wrong number of labels


with memory, expect_error(ValueError) as caught:
    faulty_step(big_model, xd, yd)

# %% [markdown]
# Now `del` the model and the loss, and look at what is still allocated:

# %%
del big_model, val_loss, xd, yd
gc.collect()
print(f"after `del big_model, val_loss, xd, yd`: {mib(memory.allocated)} still held")
parameter_bytes = storage_bytes(big_optimizer.param_groups[0]["params"])
print(f"the optimizer refers to {len(big_optimizer.param_groups[0]['params'])} parameters")
output_cache = get_ipython().user_ns["Out"]  # IPython's `Out`
last = max(output_cache)
print(f"the output cache holds the loss shown above: a {type(output_cache[last]).__name__}")
kept_traceback = caught.error.__traceback__
frames = {f.f_code.co_name: f.f_code.co_varnames for f, _ in traceback.walk_tb(kept_traceback)}
print("the kept traceback keeps the frame of faulty_step, with its locals", frames["faulty_step"])
check(
    memory.allocated > parameter_bytes,
    "del freed the names, not the memory: the parameters and more are still there",
)

# %% [markdown]
# ## Release a model's memory in a notebook, done right
#
# The common tip is `del model` followed by `torch.cuda.empty_cache()`. That frees
# nothing while other references remain, and `empty_cache()` only hands *unused* cached blocks
# back to the driver. Done right, one holder at a time, measured:
#
# 1. delete the optimizer too (`del optimizer`), or every name that refers to the model;
# 2. delete shown values with IPython's `%xdel name`, which also removes them from `Out`, `_`,
#    `__`, `___` (plain `del` does not);
# 3. clear the frames of the kept traceback: `traceback.clear_frames(error.__traceback__)`
#    (after a cell that failed: `traceback.clear_frames(sys.last_traceback)`);
# 4. `gc.collect()` for reference cycles, then, on a GPU, `torch.cuda.empty_cache()` so that
#    other processes (and `nvidia-smi`) see the memory free.

# %%
released = {"before": memory.allocated}
del big_optimizer
gc.collect()
released["del big_optimizer"] = memory.allocated
val_loss = output_cache[last]  # the loss again, from Out, to delete it properly

# %%
# %xdel val_loss
gc.collect()
released["%xdel val_loss"] = memory.allocated

# %%
traceback.clear_frames(kept_traceback)
gc.collect()
released["clear_frames(kept traceback)"] = memory.allocated
print(pd.Series(released, name="bytes still held").to_string())

# %%
check(
    all(still_held >= parameter_bytes for still_held in list(released.values())[:-1]),
    "the parameters' bytes stayed allocated until the last holder went",
)
check(memory.allocated == 0, "with the last one gone, every byte allocated for the model is free")
if torch.cuda.is_available():
    torch.cuda.empty_cache()
    left = torch.cuda.memory_allocated() - cuda_before
    print(f"CUDA: {mib(left)} more allocated than before the model, ", end="")
    print(f"{mib(torch.cuda.memory_reserved())} reserved after empty_cache()")
    # what may stay: workspaces cuBLAS and cuDNN keep, allocated on their first use
    check(left < parameter_bytes, "the CUDA allocator has the model's memory back")


# %% [markdown]
# What to notice: the parameters' bytes went only with the last holder: the optimizer, the
# evaluation loss's graph and the traceback's frame all refer to them (the check tests the
# removals in this order, not each holder on its own). Two more ways out, when in doubt: restart the kernel, or avoid the
# holders in the first place (wrap a risky step in `try`/`except` inside a function, so the
# traceback dies with the `except` block; do not end a cell with a tensor that carries a graph,
# show `loss.item()`).

# %% [markdown]
# ## Use in-place ops where autograd allows them
#
# `nn.ReLU(inplace=True)` writes its result into its input instead of allocating a new tensor.
# Measured on the CIFAR2 CNN, the saved bytes and the training step's peak:

# %%
def with_inplace_relu(net: nn.Sequential, inplace: bool) -> nn.Sequential:
    for layer in net.modules():
        if isinstance(layer, nn.ReLU):
            layer.inplace = inplace
    return net


def train_step(net: nn.Module, images: torch.Tensor, labels: torch.Tensor) -> None:
    F.cross_entropy(net(images), labels).backward()


inplace = {}
for flag in (False, True):
    with_inplace_relu(model, flag)
    inplace[f"ReLU(inplace={flag})"] = {
        "saved bytes": saved_bytes(lambda: model(x), exclude=model),
        "step peak bytes": peak_bytes(lambda: train_step(model, x, y)),
    }
    model.zero_grad(set_to_none=True)
with_inplace_relu(model, False)
inplace = pd.DataFrame(inplace).T
print(inplace.to_string())

# %% [markdown]
# No difference, and that is the rule rather than bad luck: BatchNorm saves its *input*, so its
# output is needed only by the ReLU, and the ReLU saves its output either way; the step's peak
# is in backward, not at the ReLU. In-place ops pay where they avoid a second copy of a big
# tensor that nothing saves, as in preprocessing a batch on the device (chapter 10's
# prefetcher does `x.float().div_(255)`):

# %%
pixels = torch.randint(0, 256, (256, 3, 32, 32), dtype=torch.uint8)
scale = torch.tensor(std).view(1, 3, 1, 1)
shift = torch.tensor(mean).view(1, 3, 1, 1)
preprocess = {
    "(x.float() / 255 - mean) / std": peak_bytes(lambda: (pixels.float() / 255 - shift) / scale),
    "x.float().div_(255).sub_(mean).div_(std)": peak_bytes(
        lambda: pixels.float().div_(255).sub_(shift).div_(scale)
    ),
}
print(pd.Series(preprocess, name="peak bytes").to_string())

# %%
check(inplace.iloc[0].equals(inplace.iloc[1]), "ReLU(inplace=True) changes nothing here")
check(
    2 * preprocess["x.float().div_(255).sub_(mean).div_(std)"]
    == preprocess["(x.float() / 255 - mean) / std"],
    "in-place preprocessing halves the peak: one float copy instead of two",
)

# %% [markdown]
# ### Pitfall: `RuntimeError: one of the variables needed for gradient computation has been modified by an inplace operation`
#
# Autograd refuses an in-place op on a tensor that a backward needs, because the values it saved
# would be gone. Every tensor has a version counter that each in-place op increments; a saved
# tensor remembers its version, and backward checks it. `Sigmoid` saves its **output**, so an
# in-place ReLU after it breaks backward:

# %%
torch.manual_seed(0)
gate = nn.Sequential(nn.Linear(4, 4), nn.Sigmoid(), nn.ReLU(inplace=True))
with expect_error(RuntimeError):
    gate(torch.randn(2, 4)).sum().backward()

# %% [markdown]
# The fix: no in-place op on the output of a layer that saves its output (`Sigmoid`, `Tanh`,
# `ReLU`, `softmax`; the table at the top lists what each saves). After a convolution, a
# `Linear` or a BatchNorm, which save their input, an in-place activation is safe.

# %%
gate[2] = nn.ReLU()
gate(torch.randn(2, 4)).sum().backward()
print("backward ran; gradient of the first weight:", tuple(gate[0].weight.grad.shape))

# %% [markdown]
# Autograd refuses one more in-place op, at once rather than in backward: changing a leaf that
# requires grad (a parameter) while it records, since the change itself would need a gradient.
# Optimizers update parameters in place under `torch.no_grad()`:

# %%
weight = torch.ones(3, requires_grad=True)
try:
    weight.mul_(0.9)
except RuntimeError as error:
    print("RuntimeError:", error)
with torch.no_grad():
    weight.mul_(0.9)  # what optimizer.step() does
print(weight)


# %% [markdown]
# ## Halve activation memory with mixed precision
#
# Under `torch.autocast`, convolutions and matrix products run in a 16-bit type, so their
# outputs, and the inputs the next layers save, are half the bytes. On GPUs that is float16 (or
# bfloat16); on CPUs autocast defaults to bfloat16, and it works the same way, so the saving can
# be measured here. `SavedTensors.by_dtype` splits the saved bytes by dtype:

# %%
def bf16_forward():
    with torch.autocast("cpu", dtype=torch.bfloat16):
        return model(x)


with SavedTensors(exclude=model) as fp32_saved:
    out = model(x)
with SavedTensors(exclude=model) as bf16_saved:
    out = bf16_forward()
del out
precision = pd.DataFrame(
    {"float32": fp32_saved.by_dtype, "autocast bfloat16": bf16_saved.by_dtype}
).fillna(0)
precision.loc["total"] = precision.sum()
print(precision.astype(int).to_string())

# %%
float_ratio = (
    precision.loc[torch.bfloat16, "autocast bfloat16"]
    + precision.loc[torch.float32, "autocast bfloat16"]
) / precision.loc[torch.float32, "float32"]
print(f"floating-point activations: {float_ratio:.3f}× of float32")
check(0.45 < float_ratio < 0.55, "autocast halves the floating-point activations")
check(
    precision.loc[torch.int64, "autocast bfloat16"] == precision.loc[torch.int64, "float32"],
    "the max pools' int64 indices stay as they are",
)

# %% [markdown]
# What to notice: the total falls to 59%, not 50%, because the max pools' int64 indices do not
# shrink; the small bfloat16 entries of the weights are autocast's casts of the parameters, also
# saved. BatchNorm's statistics stay float32. On a GPU the same forward with
# `torch.autocast("cuda", dtype=torch.float16)` and the allocator's peak (train with
# `torch.amp.GradScaler("cuda")` for float16, see [10](10_speedups_recipes.ipynb)):

# %%
if torch.cuda.is_available():
    gpu_model = small_cnn(mean, std).to(device)
    xg = x.to(device)

    def gpu_forward(half: bool):
        with torch.autocast("cuda", dtype=torch.float16, enabled=half):
            return gpu_model(xg)

    gpu_forward(True)  # warm-up
    peaks = {half: cuda_peak_bytes(lambda half=half: gpu_forward(half)) for half in (False, True)}
    saved = {half: saved_bytes(lambda half=half: gpu_forward(half), gpu_model) for half in peaks}
    print(f"CUDA forward peak: float32 {mib(peaks[False])}, float16 {mib(peaks[True])}")
    print(f"saved for backward: float32 {mib(saved[False])}, float16 {mib(saved[True])}")
    check(saved[True] < 0.7 * saved[False], "float16 autocast saves less on the GPU too")
    check(peaks[True] < peaks[False], "and the forward's peak falls with it")
    del gpu_model, xg
else:
    print("no CUDA device: the bfloat16 measurement above is what changes on a GPU too")


# %% [markdown]
# ## Train a big batch in small pieces: gradient accumulation
#
# When a batch of 64 does not fit, run 4 micro-batches of 16, each loss divided by 4 (the big
# batch's loss is the mean over 64 samples), and call `backward()` after each: gradients add up
# in `.grad` ([03](03_autograd_recipes.ipynb)), and the optimizer steps once. Only one micro-batch's
# activations are alive at a time. One caveat, measured below: BatchNorm normalises each
# micro-batch with its own statistics, so with BatchNorm in training mode the gradients are
# *not* those of the big batch. With its running statistics (BatchNorm in evaluation mode, as
# when fine-tuning with small batches) they are. When micro-batches differ in size (the last
# one of an epoch, or token counts in language models), dividing each micro-batch's mean by
# their number weights the small one too much: sum the losses and divide by the total number
# of samples. Under DDP, wrap every micro-batch's backward but the last in `with ddp.no_sync():`
# so gradients are averaged across processes once per step, not once per micro-batch
# ([09](09_ddp_syncbn_recipes.ipynb)).

# %%
def gradients(net: nn.Module, micro_batches: int) -> list[torch.Tensor]:
    """The gradients of one step on x, y split into ``micro_batches`` pieces."""
    net.zero_grad(set_to_none=True)
    for images, labels in zip(x.chunk(micro_batches), y.chunk(micro_batches), strict=True):
        (F.cross_entropy(net(images), labels) / micro_batches).backward()
    return [p.grad.clone() for p in net.parameters()]


def max_difference(a: list[torch.Tensor], b: list[torch.Tensor]) -> float:
    return max(((u - v).abs().max() / v.abs().max()).item() for u, v in zip(a, b, strict=True))


accumulation = {
    "BatchNorm in training mode": max_difference(gradients(model, 4), gradients(model, 1))
}
for layer in model.modules():
    if isinstance(layer, nn.BatchNorm2d):
        layer.eval()  # normalise with the running statistics
accumulation["BatchNorm on running statistics"] = max_difference(
    gradients(model, 4), gradients(model, 1)
)


def uneven_gradients(net: nn.Module, sizes: list[int], per_sample: bool) -> list[torch.Tensor]:
    """Accumulate over micro-batches of ``sizes``: each loss a sum over its samples divided by
    the whole batch (``per_sample``), or each micro-batch's mean divided by their number."""
    net.zero_grad(set_to_none=True)
    for images, labels in zip(x.split(sizes), y.split(sizes), strict=True):
        if per_sample:
            loss = F.cross_entropy(net(images), labels, reduction="sum") / len(x)
        else:
            loss = F.cross_entropy(net(images), labels) / len(sizes)
        loss.backward()
    return [p.grad.clone() for p in net.parameters()]


whole_batch = gradients(model, 1)
accumulation["uneven 40 + 24, mean / 2"] = max_difference(
    uneven_gradients(model, [40, 24], per_sample=False), whole_batch
)
accumulation["uneven 40 + 24, sum / 64"] = max_difference(
    uneven_gradients(model, [40, 24], per_sample=True), whole_batch
)
model.train()
model.zero_grad(set_to_none=True)
for name, difference in accumulation.items():
    shown = "< 1e-4" if difference < 1e-4 else f"{difference:.2f}"
    print(f"{name}: largest difference / largest gradient {shown}")

# %%
micro_saved = saved_bytes(lambda: model(x[:16]), exclude=model)
accumulated_peak = peak_bytes(lambda: gradients(model, 4))
big_peak = peak_bytes(lambda: gradients(model, 1))
model.zero_grad(set_to_none=True)
print(f"saved for backward: batch of 64 {activations:,} bytes, micro-batch of 16 {micro_saved:,}")
print(f"peak of the step: {mib(big_peak)} in one piece, {mib(accumulated_peak)} in four")

# %%
check(
    accumulation["BatchNorm on running statistics"] < 1e-4,
    "accumulated gradients equal the big batch's (BatchNorm on running statistics)",
)
check(accumulation["BatchNorm in training mode"] > 0.1, "with batch statistics they differ")
check(
    accumulation["uneven 40 + 24, sum / 64"]
    < 1e-4
    < 0.01
    < accumulation["uneven 40 + 24, mean / 2"],
    "uneven micro-batches: only dividing summed losses by the sample count gives the big batch",
)
check(
    abs(micro_saved / activations - 0.25) < 0.001,
    "a micro-batch of 16 saves a quarter of the activations",
)
check(accumulated_peak < 0.4 * big_peak, "and the step's peak falls with it")


# %% [markdown]
# ## Trade compute for memory with activation checkpointing
#
# Activation checkpointing (also called gradient checkpointing):
# `torch.utils.checkpoint.checkpoint(fn, x, use_reentrant=False)` runs `fn` without saving its
# activations: only its input is kept, and in backward `fn` runs again to recompute them. Memory
# falls, compute rises by one extra forward of the checkpointed parts. Checkpointing each conv
# block of the CNN:

# %%
def checkpointed_blocks(net: nn.Sequential, images: torch.Tensor) -> torch.Tensor:
    """Run ``net``, checkpointing each conv block (each nn.Sequential child)."""
    for layer in net:
        if isinstance(layer, nn.Sequential):
            images = checkpoint(layer, images, use_reentrant=False)
        else:
            images = layer(images)
    return images


def step_gradients(forward) -> list[torch.Tensor]:
    model.zero_grad(set_to_none=True)
    F.cross_entropy(forward(), y).backward()
    return [p.grad.clone() for p in model.parameters()]


block_saved = saved_bytes(lambda: checkpointed_blocks(model, x), exclude=model)
same = max_difference(
    step_gradients(lambda: checkpointed_blocks(model, x)), step_gradients(lambda: model(x))
)
flops = {}
for name, forward in {
    "plain": lambda: model(x),
    "checkpointed": lambda: checkpointed_blocks(model, x),
}.items():
    with FlopCounterMode(display=False) as counter:
        step_gradients(forward)
    flops[name] = counter.get_total_flops()
flop_ratio = flops["checkpointed"] / flops["plain"]
print(f"saved for backward: {activations:,} → {block_saved:,} bytes")
print(f"FLOPs per step: {flops['plain']:,} → {flops['checkpointed']:,} ({flop_ratio:.2f}×)")
print("largest gradient difference:", "< 1e-6" if same < 1e-6 else f"{same:.1e}")

# %%
state = copy.deepcopy(model.state_dict())  # timing runs the step a variable number of times
steps = {
    "plain": lambda: step_gradients(lambda: model(x)),
    "checkpointed": lambda: step_gradients(lambda: checkpointed_blocks(model, x)),
}
rounds = {name: [] for name in steps}
for _ in range(8):  # alternate, and keep each one's best round: load only ever adds time
    for name, step in steps.items():
        rounds[name].append(1000 * time_it(step, threads=1, min_run_time=0.1))
step_ms = {name: min(times) for name, times in rounds.items()}
model.load_state_dict(state)  # BatchNorm's running statistics as they were
model.zero_grad(set_to_none=True)

# %% tags=["nbval-ignore-output"]
print(
    {k: f"{v:.1f} ms" for k, v in step_ms.items()},
    f"{step_ms['checkpointed'] / step_ms['plain']:.2f}×",
)

# %%
check(same < 1e-6, "checkpointing leaves the gradients as they were")
check(block_saved < 0.7 * activations, "and saves a third of the activations")
check(
    flops["checkpointed"] > 1.25 * flops["plain"],
    "at the price of recomputing the forward of every block",
)
check(
    step_ms["checkpointed"] > 1.05 * step_ms["plain"],
    "which makes the step slower",
    measured=f"{step_ms['checkpointed'] / step_ms['plain']:.2f}×",
    timing=True,
)


# %% [markdown]
# Two things to notice. The saving is only a third because the max pools outside the
# checkpoints still save their inputs and int64 indices: checkpoint larger pieces (exercise 2).
# And BatchNorm runs its forward twice, so its running statistics (`running_mean`,
# `running_var` and the counter `num_batches_tracked`) are updated twice per step. A
# `context_fn` can set the momentum to 0 during the recomputation, and put the counter back:

# %%
@contextlib.contextmanager
def frozen_running_stats(net: nn.Module):
    """Leave BatchNorm's running statistics unchanged while the block runs."""
    norms = [m for m in net.modules() if isinstance(m, nn.modules.batchnorm._BatchNorm)]
    saved = [(m.momentum, m.num_batches_tracked.clone()) for m in norms]
    for m in norms:
        m.momentum = 0.0  # new = (1 - momentum) * old + momentum * batch: the old value
    try:
        yield
    finally:
        for m, (momentum, count) in zip(norms, saved, strict=True):
            m.momentum = momentum
            m.num_batches_tracked.copy_(count)  # forward counted the batch once more


def running_stats_after_one_step(forward) -> dict[str, torch.Tensor]:
    """BatchNorm's buffers after one training step of a fresh CNN."""
    torch.manual_seed(0)
    net = small_cnn(mean, std)
    F.cross_entropy(forward(net), y).backward()
    return {name: buffer.clone() for name, buffer in net.named_buffers()}


def same_stats(a: dict[str, torch.Tensor], b: dict[str, torch.Tensor]) -> dict[str, bool]:
    """For each kind of buffer, whether every BatchNorm's agrees."""
    kinds = ["running_mean", "running_var", "num_batches_tracked"]
    return {k: all(torch.allclose(a[n], b[n]) for n in a if n.endswith(k)) for k in kinds}


def recompute_with_frozen_stats(block: nn.Module):
    """A context_fn: nothing special in the forward, frozen statistics in the recomputation."""
    return contextlib.nullcontext(), frozen_running_stats(block)


def checkpointed_frozen(net: nn.Sequential, images: torch.Tensor) -> torch.Tensor:
    for layer in net:
        if isinstance(layer, nn.Sequential):
            contexts = partial(recompute_with_frozen_stats, layer)
            images = checkpoint(layer, images, use_reentrant=False, context_fn=contexts)
        else:
            images = layer(images)
    return images


reference = running_stats_after_one_step(lambda net: net(x))
twice = running_stats_after_one_step(lambda net: checkpointed_blocks(net, x))
frozen = running_stats_after_one_step(lambda net: checkpointed_frozen(net, x))
print("as in the plain step, checkpointed:       ", same_stats(twice, reference))
print("as in the plain step, with the context_fn:", same_stats(frozen, reference))
check(
    not any(same_stats(twice, reference).values()) and all(same_stats(frozen, reference).values()),
    "with the context_fn every running statistic is updated once, as without checkpointing",
)


# %% [markdown]
# Dropout inside a checkpoint has the mirror problem: the recomputation must draw the **same**
# random mask as the forward, or backward differentiates a different function.
# `checkpoint(..., preserve_rng_state=True)` (the default) saves the generator's state before the
# forward and restores it for the recomputation; `False` saves that copy (and time) when the
# segment draws no random numbers, and is wrong when it does:

# %%
def dropout_gradients(**checkpoint_args) -> torch.Tensor:
    torch.manual_seed(0)
    layer = nn.Sequential(nn.Linear(32, 32), nn.Dropout(0.5), nn.Linear(32, 1))
    inputs = torch.randn(64, 32)
    torch.manual_seed(1)  # the same dropout masks in every run
    if checkpoint_args:
        out = checkpoint(layer, inputs, use_reentrant=False, **checkpoint_args)
    else:
        out = layer(inputs)
    out.sum().backward()
    return layer[0].weight.grad


plain_grad = dropout_gradients()
dropout_same = {
    "preserve_rng_state=True": torch.equal(dropout_gradients(preserve_rng_state=True), plain_grad),
    "preserve_rng_state=False": torch.equal(
        dropout_gradients(preserve_rng_state=False), plain_grad
    ),
}
print("gradients equal to the plain layer's:", dropout_same)
check(
    dropout_same == {"preserve_rng_state=True": True, "preserve_rng_state=False": False},
    "with dropout inside, only a preserved RNG state recomputes the same masks",
)


# %% [markdown]
# ### Save the expensive results, recompute the cheap ones: selective checkpointing
#
# Plain checkpointing recomputes everything inside the region, matrix products included.
# *Selective* activation checkpointing lets a policy decide per operator: keep (`MUST_SAVE`) what
# is expensive to recompute, recompute (`PREFER_RECOMPUTE`) what is cheap, e.g. keep the matrix
# products of a transformer's MLP and recompute its GELU. Here on four residual MLP blocks
# (256 → 1024 → 256, a batch of 512), measured three ways: bytes still held once the forward is
# done (what waits for backward), the step's peak, and the FLOPs of forward and backward:

# %%
def save_matmuls(ctx, op, *args, **kwargs) -> CheckpointPolicy:
    """The policy: keep what matrix products return, recompute everything else."""
    if op in (torch.ops.aten.mm.default, torch.ops.aten.addmm.default):
        return CheckpointPolicy.MUST_SAVE
    return CheckpointPolicy.PREFER_RECOMPUTE


torch.manual_seed(0)
mlp_blocks = nn.ModuleList(
    nn.Sequential(nn.Linear(256, 1024), nn.GELU(), nn.Linear(1024, 256)) for _ in range(4)
)
mlp_input = torch.randn(512, 256)
keep_matmuls = partial(create_selective_checkpoint_contexts, save_matmuls)
how = {
    "plain": lambda block, h: block(h),
    "checkpointed": lambda block, h: checkpoint(block, h, use_reentrant=False),
    "selective": lambda block, h: checkpoint(
        block, h, use_reentrant=False, context_fn=keep_matmuls
    ),
}


def mlp_loss(kind: str) -> torch.Tensor:
    h = mlp_input
    for block in mlp_blocks:
        h = h + how[kind](block, h)
    return h.square().mean()


mlp_rows, mlp_grads = {}, {}
for kind in how:
    mlp_blocks.zero_grad(set_to_none=True)
    with AllocatedBytes() as mlp_memory:
        mlp_step_loss = mlp_loss(kind)
        mlp_held = mlp_memory.allocated  # the loss and what autograd keeps for backward
        mlp_step_loss.backward()
    mlp_grads[kind] = torch.cat([p.grad.flatten() for p in mlp_blocks.parameters()])
    with FlopCounterMode(display=False) as counter:
        mlp_loss(kind).backward()
    mlp_rows[kind] = {
        "held after forward": mib(mlp_held),
        "peak of the step": mib(mlp_memory.max_allocated),
        "GFLOP": counter.get_total_flops() / 1e9,
        "_held": mlp_held,
        "_flops": counter.get_total_flops(),
    }
mlp_table = pd.DataFrame(mlp_rows).T
print(mlp_table.drop(columns=["_held", "_flops"]).to_string(float_format="{:.2f}".format))
print(
    "largest gradient difference from plain:",
    max((g - mlp_grads["plain"]).abs().max().item() for g in mlp_grads.values()),
)
kept, flops_mlp = mlp_table["_held"], mlp_table["_flops"]
check(
    kept["checkpointed"] < kept["selective"] < 0.8 * kept["plain"],
    "selective checkpointing holds less than no checkpointing and more than full checkpointing",
    measured=f"{mib(kept['selective'])} between {mib(kept['checkpointed'])} and "
    f"{mib(kept['plain'])}",
)
check(
    flops_mlp["selective"] == flops_mlp["plain"] < flops_mlp["checkpointed"],
    "and, keeping the matrix products, it recomputes none of them (no extra FLOPs)",
)
check(
    all(torch.equal(g, mlp_grads["plain"]) for g in mlp_grads.values()),
    "all three compute the same gradients",
)


# %% [markdown]
# The FLOP counter counts matrix products and convolutions only: selective checkpointing still
# recomputes the GELUs, which cost little. On the CNN above the same policy (keep the
# convolutions) saves nothing: each block's last output is saved anyway by the next layer, which
# needs it as its input. Which operators to keep depends on the model.

# %% [markdown]
# ### Move what backward needs to host memory: `save_on_cpu`
#
# The mechanism under all of this is `torch.autograd.graph.saved_tensors_hooks(pack, unpack)`:
# `pack` runs when autograd saves a tensor for backward, `unpack` when backward needs it
# (`SavedTensors` above is one). `torch.autograd.graph.save_on_cpu(pin_memory=True)` is another:
# its `pack` copies each saved tensor to (pinned) host memory, its `unpack` copies it back to the
# tensor's device. On a GPU that trades device memory for PCIe copies; on a CPU it has nothing to
# move, which this cell shows before it measures the GPU where there is one:

# %%
def held_after_forward(loss_fn) -> tuple[int, torch.Tensor]:
    """Bytes held once ``loss_fn()`` returns, and the gradients of one step."""
    mlp_blocks.zero_grad(set_to_none=True)
    with AllocatedBytes() as memory:
        step_loss = loss_fn()
        kept_bytes = memory.allocated
        step_loss.backward()
    return kept_bytes, torch.cat([p.grad.flatten() for p in mlp_blocks.parameters()])


def mlp_loss_on_cpu_saves() -> torch.Tensor:
    with torch.autograd.graph.save_on_cpu(pin_memory=torch.cuda.is_available()):
        return mlp_loss("plain")


on_cpu = {"plain": held_after_forward(lambda: mlp_loss("plain"))}
on_cpu["save_on_cpu"] = held_after_forward(mlp_loss_on_cpu_saves)
print({name: mib(kept_bytes) for name, (kept_bytes, _) in on_cpu.items()})
check(
    on_cpu["save_on_cpu"][0] == on_cpu["plain"][0]
    and torch.equal(on_cpu["save_on_cpu"][1], on_cpu["plain"][1]),
    "on a CPU, save_on_cpu holds the same bytes and computes the same gradients",
)
if torch.cuda.is_available():
    mlp_blocks.to(device)
    mlp_input = mlp_input.to(device)
    gpu_held = {}
    gpu_losses = {"plain": lambda: mlp_loss("plain"), "save_on_cpu": mlp_loss_on_cpu_saves}
    for name, loss_fn in gpu_losses.items():
        torch.cuda.synchronize()
        before = torch.cuda.memory_allocated()
        gpu_loss = loss_fn()
        gpu_held[name] = torch.cuda.memory_allocated() - before
        gpu_loss.backward()
        del gpu_loss
    print({name: mib(b) for name, b in gpu_held.items()}, "of GPU memory held after forward")
    check(
        gpu_held["save_on_cpu"] < 0.5 * gpu_held["plain"],
        "on the GPU, save_on_cpu holds less than half the device memory after forward",
    )
    mlp_blocks.cpu()
    mlp_input = mlp_input.cpu()
else:
    print("no CUDA device: on a GPU this cell measures the device memory held after forward")

# %% [markdown]
# ### Checkpoint a deep stack in √n segments: sublinear memory
#
# `checkpoint_sequential(model, segments, x, use_reentrant=False)` splits an `nn.Sequential`
# into `segments` pieces, checkpoints each but the last and keeps only their inputs. In backward
# one segment at a time is recomputed. With *n* equal blocks and *k* segments the memory is
# about *k* segment inputs plus one segment's activations (*n/k* blocks), smallest near
# *k* = √*n*: memory grows like √*n* instead of *n* (Chen et al., 2016, "Training deep nets with
# sublinear memory cost"). Measured on 16 conv blocks, both the saved bytes and the step's peak
# (which includes the recomputed segment):

# %%
torch.manual_seed(0)
deep = nn.Sequential(*[conv_block(16, 16) for _ in range(16)])
features = torch.randn(32, 16, 16, 16)


def deep_forward(segments: int) -> torch.Tensor:
    if segments == 1:
        return deep(features)
    return checkpoint_sequential(deep, segments, features, use_reentrant=False)


def deep_step(segments: int) -> None:
    deep_forward(segments).square().mean().backward()


sublinear, deep_grads = {}, {}
for k in (1, 2, 4, 8, 16):
    deep.zero_grad(set_to_none=True)
    with FlopCounterMode(display=False) as counter:
        deep_step(k)
    deep_grads[k] = [p.grad.clone() for p in deep.parameters()]
    deep.zero_grad(set_to_none=True)
    sublinear[k] = {
        "saved bytes": saved_bytes(partial(deep_forward, k), exclude=deep),
        "step peak bytes": peak_bytes(partial(deep_step, k)),
        "FLOPs vs plain": counter.get_total_flops(),
    }
    deep.zero_grad(set_to_none=True)
sublinear = pd.DataFrame(sublinear).T.rename_axis("segments")
sublinear["FLOPs vs plain"] = (
    sublinear["FLOPs vs plain"] / sublinear.loc[1, "FLOPs vs plain"]
).round(3)
print(sublinear.to_string())

# %%
_, ax = plt.subplots(figsize=(6, 3))
ax.plot(sublinear.index, sublinear["step peak bytes"] / 2**20, marker="o", label="step peak")
ax.plot(sublinear.index, sublinear["saved bytes"] / 2**20, marker="o", label="saved for backward")
ax.set_xscale("log", base=2)
ax.set_xlabel("segments (16 blocks)")
ax.set_ylabel("MiB")
ax.legend()
plt.show()

# %%
best = sublinear["step peak bytes"].idxmin()
check(
    max(max_difference(deep_grads[k], deep_grads[1]) for k in deep_grads) < 1e-6,
    "every number of segments gives the plain stack's gradients",
)
check(best in (4, 8), "the peak is smallest at 4 or 8 segments, near √16 = 4", measured=f"{best}")
check(
    sublinear.loc[4, "step peak bytes"] < 0.5 * sublinear.loc[1, "step peak bytes"],
    "where it is less than half of the plain stack's",
)
check(
    sublinear.loc[16, "step peak bytes"] > sublinear.loc[4, "step peak bytes"],
    "more segments keep more inputs: memory rises again",
)


# %% [markdown]
# The minimum is flat: 4 and 8 segments are all but equal in the table (their saved tensors
# differ by a few hundred bytes), so √16 = 4 marks the region of the best choice, not one exact
# value; which of the two wins by those bytes is a detail of how these blocks' saved tensors
# line up, not of the rule. The *growth* is the point of "sublinear": stacks of 4, 16 and 64 blocks,
# each with √n segments, against the plain stack (bytes saved for backward):

# %%
def stack_saved(blocks: int, segments: int) -> int:
    torch.manual_seed(0)
    stack = nn.Sequential(*[conv_block(16, 16) for _ in range(blocks)])
    if segments == 1:
        return saved_bytes(lambda: stack(features), exclude=stack)
    run = partial(checkpoint_sequential, stack, segments, features, use_reentrant=False)
    return saved_bytes(run, exclude=stack)


by_depth = pd.DataFrame(
    {
        n: {"plain": stack_saved(n, 1), "√n segments": stack_saved(n, math.isqrt(n))}
        for n in (4, 16, 64)
    }
).T.rename_axis("blocks")
print(by_depth.to_string())

# %%
plain_growth = by_depth.loc[64, "plain"] / by_depth.loc[16, "plain"]
root_growth = by_depth.loc[64, "√n segments"] / by_depth.loc[16, "√n segments"]
check(
    3.8 < plain_growth <= 4 and 1.5 < root_growth < 2.5,
    "4× the blocks: the plain stack saves about 4× the bytes, √n segments about 2× (√4)",
    measured=f"{plain_growth:.2f}× and {root_growth:.2f}×",
)

# %% [markdown]
# ## Compare the techniques in one memory table
#
# Every measurement above on the same CNN and batch of 64, in bytes saved for backward by the
# forward (the part that grows with the batch), relative to the plain training forward. The
# gradient accumulation rows are one micro-batch of 16; the two running-total rows are what an
# evaluation loop still holds after its 5 batches.

# %%
table = pd.Series(
    {
        "baseline: training forward, float32": activations,
        "ReLU(inplace=True)": int(inplace.loc["ReLU(inplace=True)", "saved bytes"]),
        "no_grad / inference_mode (evaluation)": int(
            evaluation.loc["inference_mode", "saved bytes"]
        ),
        "autocast bfloat16": int(precision.loc["total", "autocast bfloat16"]),
        "gradient accumulation, 4 × 16": micro_saved,
        "checkpoint each conv block": block_saved,
        "checkpoint_sequential, 4 segments": saved_bytes(
            lambda: checkpoint_sequential(model, 4, x, use_reentrant=False), exclude=model
        ),
        "checkpoint_sequential + accumulation 4 × 16": saved_bytes(
            lambda: checkpoint_sequential(model, 4, x[:16], use_reentrant=False), exclude=model
        ),
        "evaluation loop: total_loss += loss": int(held.iloc[-1]),
        "evaluation loop: total_loss += loss.item()": int(
            growth.loc[("evaluation, total_loss += loss.item()", 4), "saved bytes held"]
        ),
    },
    name="saved bytes",
)
memory_table = table.to_frame()
memory_table["vs baseline"] = (table / activations).round(3)
print(memory_table.to_string())
memory_table.to_csv(RUN / "memory_table.csv")

# %%
one_forward = memory_table["vs baseline"].iloc[:-2]  # without the evaluation loops' 5 batches
_, ax = plt.subplots(figsize=(7, 3))
ax.barh(one_forward.index[::-1], one_forward[::-1])
ax.set_xlabel("bytes saved for backward, relative to the baseline")
ax.set_title("one training forward, CIFAR2 CNN, batch 64")
plt.show()

# %%
ratio = memory_table["vs baseline"]
check(
    ratio["checkpoint_sequential + accumulation 4 × 16"]
    < 0.5 * min(ratio["checkpoint_sequential, 4 segments"], ratio["gradient accumulation, 4 × 16"]),
    "checkpointing and accumulation combine: together they keep less than either alone",
)
check(
    ratio["evaluation loop: total_loss += loss"] > 4.9
    and ratio["evaluation loop: total_loss += loss.item()"] == 0,
    "a tensor running total holds 5 forwards' worth; .item() holds nothing",
)

# %% [markdown]
# What to notice: evaluation without a graph keeps nothing for backward, and `.item()` keeps a
# running total from holding every batch's graph; for training, accumulation and checkpointing cut the
# most and combine (to 7% of the baseline together here), mixed precision halves the float part,
# in-place ReLU changes nothing in this network. Parameters, gradients and Adam's state
# (1.5 MiB here) are untouched by all of them: for a large model they are what sharding (FSDP2,
# [09](09_ddp_syncbn_big_models_recipes.ipynb#Shard-a-model-with-FSDP2)) and 8-bit optimizers address.

# %% [markdown]
# ## On a GPU
#
# This recipe reads the CUDA caching allocator's own numbers. On a CPU it says what it would print;
# open the notebook on a GPU (Colab: Runtime → Change runtime type) to see them measured. No GPU
# number is stored here.

# %% [markdown]
# ## Read the CUDA caching allocator
#
# On a GPU, PyTorch does not return freed memory to the driver: its **caching allocator** keeps
# the blocks and reuses them, because `cudaMalloc`/`cudaFree` are slow and synchronise the
# device. Hence two numbers:
#
# | call | what it counts |
# |---|---|
# | `torch.cuda.memory_allocated()` | bytes the allocator has handed out: tensors alive now plus library workspaces (cuBLAS keeps one per handle and stream) |
# | `torch.cuda.max_memory_allocated()` | the peak of that since `torch.cuda.reset_peak_memory_stats()` |
# | `torch.cuda.memory_reserved()` | bytes the allocator holds from the driver: allocated + cached free blocks (`nvidia-smi` shows this plus the CUDA context's few hundred MiB) |
# | `torch.cuda.memory_summary()` | both, per pool, with counts of allocations and of `cudaMalloc` retries |
# | `torch.cuda.mem_get_info()` | `(free, total)` bytes of the device as the driver sees them, every process included |
#
# The same calls exist for any accelerator under `torch.accelerator` (`memory_allocated()`,
# `memory_reserved()`, `max_memory_allocated()`, `empty_cache()`, ...).
#
# `torch.cuda.empty_cache()` returns the **cached free** blocks to the driver: it frees no tensor
# and does not help your own process (before "CUDA out of memory" the allocator empties its
# cache itself); it helps other processes and makes `nvidia-smi` honest. Fragmentation is what
# the out-of-memory message points at when much memory is reserved but not allocated:
#
# - GPU only: ⛔ `torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. ... If reserved but unallocated memory is large try setting PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid fragmentation.`
#
# It is tuned with `PYTORCH_ALLOC_CONF`
# (`PYTORCH_CUDA_ALLOC_CONF` before 2.9, still read), set before the first CUDA call:
# `expandable_segments:True` lets segments grow instead of fragmenting. To see which line held
# what: `torch.cuda.memory._record_memory_history()`, run the code,
# `torch.cuda.memory._dump_snapshot("snapshot.pickle")`, and open the file in
# [pytorch.org/memory_viz](https://pytorch.org/memory_viz). On a CPU, `torch.profiler` with
# `profile_memory=True` shows what each operator allocated ([10](10_speedups_recipes.ipynb)). Its
# `export_memory_timeline`, which drew memory over time by category on a CPU too, is deprecated
# in 2.15: it warns and points to the CUDA memory snapshot above.

# %%
for name in ("PYTORCH_ALLOC_CONF", "PYTORCH_CUDA_ALLOC_CONF"):
    print(f"{name} = {os.environ.get(name, '(not set)')}")
if torch.cuda.is_available():
    torch.cuda.memory._record_memory_history(max_entries=100_000)
    gpu_model = small_cnn(mean, std).to(device)
    F.cross_entropy(gpu_model(x.to(device)), y.to(device)).backward()
    snapshot = RUN / "snapshot.pickle"
    torch.cuda.memory._dump_snapshot(str(snapshot))
    torch.cuda.memory._record_memory_history(enabled=None)
    states = {"after a step": (torch.cuda.memory_allocated(), torch.cuda.memory_reserved())}
    del gpu_model
    gc.collect()
    states["after del"] = (torch.cuda.memory_allocated(), torch.cuda.memory_reserved())
    torch.cuda.empty_cache()
    states["after empty_cache()"] = (torch.cuda.memory_allocated(), torch.cuda.memory_reserved())
    print(pd.DataFrame(states, index=["allocated", "reserved"]).T.map(mib).to_string())
    print(f"snapshot: {snapshot} ({snapshot.stat().st_size:,} bytes), open it in memory_viz")
    (step_alloc, step_reserved), (del_alloc, del_reserved), (empty_alloc, empty_reserved) = (
        states.values()
    )
    check(
        del_alloc < step_alloc and del_reserved == step_reserved,
        "del frees the tensors, but the allocator keeps their blocks reserved",
    )
    check(
        empty_alloc == del_alloc and empty_reserved < del_reserved,
        "empty_cache() returns cached blocks to the driver and frees no tensor",
    )
else:
    print("no CUDA device: a CPU has no caching allocator to read; on a GPU this cell records a")
    print("memory snapshot and prints allocated vs reserved after a step, a del, and empty_cache()")


# %% [markdown]
# ## Old code you will meet
#
# | old form | write today | why |
# |---|---|---|
# | `Variable(x, volatile=True)` for evaluation | `with torch.inference_mode():` (or `torch.no_grad()`) | `volatile` does nothing since 0.4: the graph is recorded |
# | `total_loss += loss.data[0]`, `total_loss += loss` | `total_loss += loss.item()` | `.data[0]` fails on 0-d tensors; a tensor total holds every graph |
# | `checkpoint(fn, x)` | `checkpoint(fn, x, use_reentrant=False)` | without `use_reentrant` it warns (and will raise); the reentrant form needs an input that requires grad and does not support `torch.autograd.grad` |
# | `torch.cuda.memory_cached()`, `max_memory_cached()` | `torch.cuda.memory_reserved()`, `max_memory_reserved()` | renamed; the old names still work and warn (`FutureWarning`) |
# | `torch.cuda.reset_max_memory_allocated()` | `torch.cuda.reset_peak_memory_stats()` | it calls `reset_peak_memory_stats()` anyway (and warns), which resets every peak statistic |
# | `PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True` | `PYTORCH_ALLOC_CONF=expandable_segments:True` | the device-generic name since PyTorch 2.9; the old one is read only when the new one is not set |
# | `del model; torch.cuda.empty_cache()` to "free the GPU" | delete every holder (optimizer, `%xdel`, traceback), `gc.collect()`, then `empty_cache()` | `empty_cache()` frees no tensor that is still referenced |

# %% [markdown]
# ## Exercises

# %% [markdown]
# ### Exercise 1 · Evaluate without keeping any graph
#
# Write `mean_loss(model, batches)` returning the mean of the batches' cross-entropy losses as
# a Python float, without autograd recording anything. The check puts the model in evaluation
# mode, runs your function on the 5 batches of the `.item()` section and counts the bytes
# autograd saves meanwhile.
#
# <details><summary>Hint 1</summary>
#
# Two things can hold memory after an evaluation loop: what autograd records for each forward,
# and a total kept as a tensor. Avoid both.
# </details>
#
# <details><summary>Hint 2</summary>
#
# The section "Evaluate without recording a graph" names two context managers that record
# nothing; the `.item()` section turns each loss into a number.
# </details>

# %%
def mean_loss(model: nn.Module, batches: list) -> float:
    """The mean of the batches' cross-entropy losses, as a float."""
    ...  # your code


# %%
ch11.exercise_1(mean_loss, model, batches)


# %% [markdown]
# #### Solution

# %% tags=["solution"]
# Solution: open it once you have tried. It uses its own names, so your answer stays as it is.
def solution_mean_loss(model: nn.Module, batches: list) -> float:
    """The mean of the batches' cross-entropy losses, as a float."""
    with torch.inference_mode():
        losses = [F.cross_entropy(model(images), labels).item() for images, labels in batches]
    return sum(losses) / len(losses)


ch11.exercise_1(solution_mean_loss, model, batches)


# %% [markdown]
# ### Exercise 2 · Checkpoint each block with its pooling layer
#
# Checkpointing only the conv blocks left the max pools saving their inputs and int64 indices.
# Write `checkpointed_forward(model, x)` for the course's CNN that checkpoints each conv block
# *together with the pooling layer after it* (`use_reentrant=False`). The check wants the
# model's output, the same gradients as `model(x)` and at most a quarter of the saved bytes.
#
# <details><summary>Hint 1</summary>
#
# Walk the model's layers in order, as `checkpointed_blocks` does, but one checkpoint must now
# cover two consecutive layers: a block and the layer that follows it.
# </details>
#
# <details><summary>Hint 2</summary>
#
# `checkpoint` takes any callable, and `nn.Sequential` makes one module of several. An index
# into `list(model)` lets you look one layer ahead and skip the one you have consumed.
# </details>

# %%
def checkpointed_forward(model: nn.Sequential, x: torch.Tensor) -> torch.Tensor:
    """The model's logits, each conv block checkpointed with the pooling layer after it."""
    ...  # your code


# %%
ch11.exercise_2(checkpointed_forward, model, x, y)


# %% [markdown]
# #### Solution

# %% tags=["solution"]
# Solution: open it once you have tried. It uses its own names, so your answer stays as it is.
def solution_checkpointed_forward(model: nn.Sequential, x: torch.Tensor) -> torch.Tensor:
    """The model's logits, each conv block checkpointed with the pooling layer after it."""
    layers = list(model)
    i = 0
    while i < len(layers):
        if isinstance(layers[i], nn.Sequential):  # a conv block and the pool after it
            x = checkpoint(nn.Sequential(layers[i], layers[i + 1]), x, use_reentrant=False)
            i += 2
        else:
            x = layers[i](x)
            i += 1
    return x


ch11.exercise_2(solution_checkpointed_forward, model, x, y)

# %% [markdown]
# ## Summary
#
# - A training step holds parameters, gradients, optimizer state (Adam: 2× the parameters) and
#   the activations saved for backward, which grow with the batch and dominate for CNNs;
#   `helpers.memory.estimate` computes them and `saved_tensors_hooks` measures them exactly.
# - Evaluate under `inference_mode`/`no_grad`; sum losses with `.item()`; in a notebook, free a
#   model by deleting every holder (optimizer, `%xdel` for shown values, the last traceback),
#   then `gc.collect()` and, on a GPU, `empty_cache()`.
# - In-place ops help only where they avoid a copy nothing saves (preprocessing); autograd
#   refuses them on tensors a backward needs, such as the output of `Sigmoid`, and on leaves
#   that require grad outside `torch.no_grad()`.
# - Mixed precision halves the float activations; gradient accumulation keeps one micro-batch's
#   (mind BatchNorm); checkpointing trades one more forward for memory, √n segments for deep
#   stacks; the two combine.
# - On a GPU read `memory_allocated` vs `memory_reserved`, tune fragmentation with
#   `PYTORCH_ALLOC_CONF` (formerly `PYTORCH_CUDA_ALLOC_CONF`), and find the culprit with a
#   memory snapshot.
#
# Next: [12 · Deployment](../12_deployment.ipynb).
