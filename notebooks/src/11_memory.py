# %% [markdown]
# # 11 · Memory: where a training step's bytes go
#
# [![Open In Colab](https://colab.research.google.com/assets/colab-badge.svg)](https://colab.research.google.com/github/pytorch-cookbook/pytorch-cookbook/blob/main/notebooks/11_memory.ipynb)
#
# You measure where the memory of one training step of the course's CNN goes, on a batch of
# CIFAR2 images, byte for byte and on any device. Then you pull the two levers that shrink its
# largest part: gradient accumulation and activation checkpointing, each checked and measured.
#
# **You will be able to:**
# - name the four parts of a training step's memory and measure each one for the CNN
# - count the bytes autograd saves for backward with `saved_tensors_hooks`, on a CPU or a GPU
# - predict how a step's memory grows with the batch size, and draw it
# - split a batch into micro-batches with gradient accumulation, and check that the gradient is
#   the big batch's
# - checkpoint activations with `torch.utils.checkpoint`, and measure the bytes it saves and the
#   compute it adds
#
# **Before you start:** the graph autograd records, `backward()`, and gradients that add up in
# `.grad` ([03](03_autograd.ipynb)); the CNN as an `nn.Sequential` of conv blocks, batch norm in
# `train()` and `eval()` mode ([04](04_modules.ipynb)); `F.cross_entropy` and its `reduction`
# ([06](06_losses.ipynb)); the five lines of a training step, and AdamW
# ([07](07_training_loop.ipynb)).
# Python: `lambda` ([00](00_python.ipynb#Functions-are-values:-lambda,-closures,-decorators)) and `del` ([00](00_python.ipynb#Names,-objects,-del-and-changes-in-place)).
#
# **Cookbook:** [11 · Memory: recipes](cookbook/11_memory_recipes.ipynb) holds every recipe of this chapter (evaluating without a graph, `.item()` and what `del` leaves behind, in-place ops, mixed precision, micro-batches with BatchNorm, selective and √n checkpointing, `save_on_cpu`, the CUDA caching allocator and releasing GPU memory), for when you need one.
#
# **Study time:** about 80 min: 2,406 words of text at 120 a minute, 204 lines of code at 10 a minute, 22 code cells to run at 1 minute each (reading what they print), 2 exercises at 10 minutes each.
#
# **Run time:** about 10 s on a 2-core CPU · GPU optional.

# %%
import sys

if (
    "google.colab" in sys.modules
):  # Colab: install the course's helpers and what the notebooks import
    import subprocess

    spec = "pytorch-cookbook[notebooks] @ git+https://github.com/pytorch-cookbook/pytorch-cookbook"
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", spec], check=True)

import matplotlib.pyplot as plt
import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.checkpoint import checkpoint
from torch.utils.flop_counter import FlopCounterMode

from helpers.check import check
from helpers.diagrams.memory import draw_memory
from helpers.env import setup
from helpers.exercises import lesson11
from helpers.images import channel_stats, load_cifar2
from helpers.memory import (
    activation_bytes_by_layer,
    estimate,
    mib,
    optimizer_state_bytes,
    peak_bytes,
    saved_bytes,
    storage_bytes,
)
from helpers.models import small_cnn

device = setup(seed=0)

# %% [markdown]
# ## Where the memory of a training step goes
#
# To avoid "CUDA out of memory", you need to know what a training step keeps in memory. At its peak it holds four kinds of tensors:
#
# - the **parameters** of the model (with its buffers, such as batch norm's running statistics);
# - one **gradient** per parameter, filled by `backward()`, as big as the parameter;
# - the **optimiser state**: AdamW keeps two running averages per parameter (lesson 07), so two
#   more copies of the parameters;
# - the **activations**: the tensors autograd saves during the forward pass because the
#   backward pass needs them. In [03](03_autograd.ipynb), a second `backward()` failed because
#   the first one had freed what the graph saved: those saved tensors are the activations.
#
# A float32 number takes 4 bytes. Every number below is a count of bytes, made on the CPU,
# where counts are exact; a GPU should save about the same (the cookbook's GPU cell checks).
#
# Take a shuffled batch of 64 CIFAR2 images, the batch size of lesson 07, and the course's CNN,
# and run one training step with AdamW:

# %%
train_images, train_labels, classes = load_cifar2("train")
mean, std = channel_stats(train_images)
order = torch.randperm(len(train_images), generator=torch.Generator().manual_seed(0))
x, y = train_images[order[:64]], train_labels[order[:64]]  # a shuffled batch of 64

torch.manual_seed(0)
model = small_cnn(mean, std, width=16)
optimizer = torch.optim.AdamW(model.parameters(), lr=5e-3, weight_decay=5e-4)
loss = F.cross_entropy(model(x), y)
optimizer.zero_grad()
loss.backward()
optimizer.step()
print(
    "batch:", tuple(x.shape), x.dtype, "| parameters:", sum(p.numel() for p in model.parameters())
)

# %% [markdown]
# Three of the four parts are now in memory, and `helpers.memory` measures them.
# `storage_bytes(tensors)` adds up the bytes of the memory behind a list of tensors (a tensor
# that shares its memory with another one counts once); `optimizer_state_bytes(optimizer)` does
# the same for the tensors an optimiser keeps.

# %%
parameter_bytes = storage_bytes([*model.parameters(), *model.buffers()])
gradient_bytes = storage_bytes([p.grad for p in model.parameters()])
state_bytes = optimizer_state_bytes(optimizer)
print(f"parameters and buffers: {parameter_bytes:>9,} bytes")
print(f"gradients:              {gradient_bytes:>9,} bytes")
print(f"AdamW's state:          {state_bytes:>9,} bytes")

# %%
weights = list(model.parameters())
check(
    gradient_bytes == 4 * sum(p.numel() for p in weights),
    "the gradients take 4 bytes per parameter: one float32 each",
)
check(
    state_bytes == 2 * gradient_bytes + 4 * len(weights),
    "AdamW keeps two copies of the gradients' size, plus a 4-byte step count per parameter tensor",
)

# %% [markdown]
# The parameters take a little more than the gradients: the buffers (batch norm's running mean
# and variance, and a batch counter) have no gradient. AdamW's state is twice the gradients,
# plus one step counter per parameter tensor. All three parts depend on the model only: a
# bigger batch does not change them. The fourth part is different.

# %% [markdown]
# ## Count the bytes autograd saves for backward
#
# The activations are gone once `backward()` has run, so you measure them during the forward
# pass. Autograd lets you watch what it saves: inside
# `with torch.autograd.graph.saved_tensors_hooks(pack, unpack):`, each time a layer saves a
# tensor for backward, autograd calls `pack(tensor)` and keeps what `pack` returns; in backward
# it calls `unpack` on that to get the tensor back. A `pack` that notes the tensor's size and
# returns it counts without changing what backward computes. It returns `t.detach()`, the same
# memory without the link to the graph, so that the counter keeps no graph alive.
#
# Two more details. A tensor's numbers live in a block of memory, its **storage**:
# `t.untyped_storage()` is that block, its `.data_ptr()` is the address where it starts in
# memory, and its `.nbytes()` is its size in bytes. Two layers can save the same storage: a
# ReLU saves its output, and the max pool after it saves that same tensor as its input. So the
# counter keys each saved tensor by its storage's address, and counts each address once. And
# layers save their own weights too (a convolution needs its weight for the gradient of its
# input): those are the parameters, counted already, so the counter leaves them out.

# %%
saved = {}  # the address of each piece of memory saved for backward -> its size in bytes


def pack(t: torch.Tensor) -> torch.Tensor:
    saved[t.untyped_storage().data_ptr()] = t.untyped_storage().nbytes()
    return t.detach()  # the same memory, which backward gets back from unpack


def unpack(t: torch.Tensor) -> torch.Tensor:
    return t


with torch.autograd.graph.saved_tensors_hooks(pack, unpack):
    logits = model(x)
parameter_addresses = {t.untyped_storage().data_ptr() for t in [*weights, *model.buffers()]}
activation_bytes = sum(n for address, n in saved.items() if address not in parameter_addresses)
del logits  # the graph, and everything it saved, goes with the output
print(f"saved for backward: {activation_bytes:,} bytes = {mib(activation_bytes)}")
print(f"the batch itself:   {x.nbytes:,} bytes (uint8: 1 byte per number)")

# %% [markdown]
# The activations of a batch of 64 take 21 MiB (a MiB is 2²⁰ = 1,048,576 bytes): over 50 times
# the parameters, and over 100 times the batch of images they were computed from.
# `saved_bytes(fn, exclude=model)` from `helpers.memory` is this counter, ready to reuse: it
# runs `fn()` under the hooks and leaves out the model's parameters and buffers.
#
# Where do these bytes come from? Each layer saves what its backward formula needs, and the
# rules are few: a convolution (and `Linear`) saves its input; batch norm saves its input and,
# per channel, the batch's mean and 1/std; a ReLU saves its output; a max pool saves its input
# and the position of each maximum, as **int64** (8 bytes each). `activation_bytes_by_layer`
# applies these rules to the shapes of one forward pass, layer by layer. Adding up the layers of
# each block of the CNN:

# %%
per_layer = activation_bytes_by_layer(model, x)  # {"2.0": bytes of layer 0 of block 2, ...}
per_block = {}
for name, nbytes in per_layer.items():
    block = int(name.split(".")[0])
    per_block[block] = per_block.get(block, 0) + nbytes  # .get: 0 for a block not seen yet
print(f"{'layer':<7}{'kind':<20}{'bytes saved for backward':>24}")
for block, nbytes in per_block.items():
    layer = model[block]
    kind = "conv block" if isinstance(layer, nn.Sequential) else type(layer).__name__
    print(f"{block:<7}{kind:<20}{nbytes:>24,}")

# %%
check(
    activation_bytes == saved_bytes(lambda: model(x), exclude=model) == sum(per_block.values()),
    "the hook counter, saved_bytes and the layer rules agree to the byte",
)

# %% [markdown]
# Read the table from the top. The first two layers turn the `uint8` images into normalised
# floats and save nothing: no gradient flows into the images. The first conv block works on the
# full 32 × 32 images: it saves its convolution's input (3 channels) and two tensors of 16
# channels, batch norm's input and the ReLU's output. That is the largest share. Each max pool halves the height and
# the width, so each block after it saves less. The max pools' int64 positions take a sixth of
# the total.

# %% [markdown]
# ## The picture: four parts, two batch sizes
#
# Every tensor saved for backward holds one slice per image of the batch (only batch norm's
# per-channel statistics do not, a few numbers per channel), so the activations grow in
# proportion to the batch size, while the other three parts stay the same. `estimate(model, batch, "adamw")` adds up
# the four parts from the model and the batch's shape alone; it returns them as a
# `TrainingMemory` with one field per part. Here are a batch of 16 and a batch of 64, drawn as
# bars:

# %%
small = estimate(model, x[:16], "adamw")
large = estimate(model, x, "adamw")
draw_memory({"batch 16": small, "batch 64": large}, title="One training step of the CIFAR2 CNN")
plt.show()
for label, plan in {"batch 16": small, "batch 64": large}.items():
    share = f"{plan.activations / plan.total:.0%}"
    print(f"{label}: total {mib(plan.total)}, activations {mib(plan.activations)} ({share})")

# %%
check(
    (small.parameters, small.gradients, small.optimizer_state)
    == (large.parameters, large.gradients, large.optimizer_state)
    and large.activations == activation_bytes,
    "parameters, gradients and AdamW's state do not depend on the batch; the activations "
    "are those counted above",
)
check(
    abs(large.activations / small.activations - 4) < 0.01,
    "4 times the images, 4 times the activations",
)


# %% [markdown]
# At batch 64 the activations are over nine tenths of the step. For a small CNN like this one,
# **the batch size is the knob**: a batch that does not fit is the usual cause of "out of
# memory", and both levers of this lesson act on the activations. (The other three parts matter
# for big models: in float32 with AdamW they take 4 + 4 + 8 = 16 bytes per parameter, 16 GB for
# a model of a billion parameters before a single activation.)
#
# Is the estimate what a step really needs? `peak_bytes(fn)` from `helpers.memory` follows
# every tensor PyTorch creates while `fn()` runs, backward and optimiser step included, and
# returns the highest total reached. The parameters and AdamW's state existed before the step,
# so they are added:

# %%
def training_step() -> None:
    optimizer.zero_grad()  # sets the gradients to None: the step allocates them again
    F.cross_entropy(model(x), y).backward()
    optimizer.step()


step_peak = peak_bytes(training_step) + parameter_bytes + state_bytes
print(f"measured peak of a step: {mib(step_peak)} | estimate: {mib(large.total)}")
check(
    0.9 < step_peak / large.total < 1.1,
    "the four parts predict the measured peak of a training step within 10%",
)


# %% [markdown]
# The measured peak is a little higher: it also holds temporaries, such as a layer's output
# before the next layer has used it and the gradients flowing back through the graph. On a GPU,
# `torch.cuda.max_memory_allocated()` reads the peak from the CUDA allocator itself, which also
# counts the rounding of each block and the convolution library's workspace. The cookbook's
# [first recipe](cookbook/11_memory_recipes.ipynb#Count-what-a-training-step-keeps-in-memory)
# measures it on a GPU.

# %% [markdown]
# ## Lever 1: a smaller batch, the same update (gradient accumulation)
#
# Say a batch of 64 does not fit, but one of 16 does. The loss of the big batch is the mean of
# 64 per-image losses, which is the mean of the 4 micro-batches' means: each micro-batch's mean
# divided by 4, added up. And `backward()` adds into `.grad` (03). So: run each micro-batch
# forward, divide its loss by 4, call `backward()`, and move on; after the 4th, `.grad` holds
# the big batch's gradient, and the optimiser steps once. In between, only one micro-batch's
# activations are alive. `x.chunk(4)` cuts a tensor into 4 equal pieces along its first
# dimension.

# %%
def gradients_in(pieces: int) -> list[torch.Tensor]:
    """The gradients of the loss on x, y, computed in `pieces` micro-batches."""
    model.zero_grad()  # a module can reset its parameters' gradients itself, as an optimiser does
    for images, labels in zip(x.chunk(pieces), y.chunk(pieces), strict=True):
        loss = F.cross_entropy(model(images), labels) / pieces
        loss.backward()  # adds this micro-batch's share into every p.grad
    return [p.grad.clone() for p in model.parameters()]  # then: optimizer.step(), once


def largest_difference(a: list[torch.Tensor], b: list[torch.Tensor]) -> float:
    """The largest difference between two lists of gradients, relative to the largest of b."""
    scale = max(v.abs().max().item() for v in b)
    return max((u - v).abs().max().item() for u, v in zip(a, b, strict=True)) / scale


# %% [markdown]
# There is one catch in this CNN. In training mode, batch norm normalises with the mean and
# variance of the batch in front of it (04), and a micro-batch of 16 has other statistics than
# the batch of 64. In evaluation mode it uses its running statistics, the same for every batch,
# and each image's loss depends on that image alone. Gradients still flow in evaluation mode,
# so both modes are compared. The differences printed are relative to the largest gradient:

# %% tags=["nbval-ignore-output"]
model.eval()  # batch norm on its running statistics
difference_eval = largest_difference(gradients_in(4), gradients_in(1))
model.train()  # batch norm on each batch's own statistics
difference_train = largest_difference(gradients_in(4), gradients_in(1))
print(f"4 × 16 vs 64, batch norm on running statistics: largest difference {difference_eval:.1g}")
print(f"4 × 16 vs 64, batch norm on batch statistics:   largest difference {difference_train:.2g}")

# %%
check(
    difference_eval < 1e-4,
    "with the running statistics, the accumulated gradient is the big batch's (up to rounding)",
)
check(
    difference_train > 0.05,
    "with batch statistics it is not (it differs by over 5%): batch norm sees 16 images at a time",
)

# %% [markdown]
# So accumulation gives exactly the big batch's update for a model whose layers treat each image
# on its own. With batch norm in training mode, each micro-batch is normalised with its own
# statistics: the update is that of batch norm on batches of 16. The memory, counted as above:

# %%
micro_saved = saved_bytes(lambda: model(x[:16]), exclude=model)
micro_peak = peak_bytes(lambda: gradients_in(4))
whole_peak = peak_bytes(lambda: gradients_in(1))
print(f"saved for backward: batch of 64 {activation_bytes:,} bytes, micro-batch {micro_saved:,}")
print(f"peak of forward and backward: {mib(whole_peak)} in one piece, {mib(micro_peak)} in four")

# %%
check(
    abs(micro_saved / activation_bytes - 0.25) < 0.01,
    "a micro-batch of 16 saves a quarter of the batch's activations",
)
check(micro_peak < 0.4 * whole_peak, "and the peak of the step falls with it")


# %% [markdown]
# Accumulation adds no computation, but small batches can keep a processor, a GPU above all,
# less busy, so a step may take longer. The
# cookbook's recipe on
# [gradient accumulation](cookbook/11_memory_recipes.ipynb#Train-a-big-batch-in-small-pieces:-gradient-accumulation)
# also handles micro-batches of different sizes (exercise 1 here) and training on several GPUs.

# %% [markdown]
# ## Lever 2: recompute instead of saving (activation checkpointing)
#
# The second lever keeps the batch and saves fewer activations.
# `torch.utils.checkpoint.checkpoint(fn, inputs, use_reentrant=False)` runs `fn` without saving
# anything inside it for backward; it keeps only `fn`'s input. When backward reaches `fn`, it
# runs `fn`'s forward again, this time saving its activations, and uses them at once. Memory
# falls, and compute rises by one more forward pass of what was checkpointed.
# (`use_reentrant=False` picks the recommended implementation; without it PyTorch warns.)
#
# Here each of the CNN's four conv blocks is checkpointed, and the other layers run as usual:

# %%
def checkpointed(model: nn.Sequential, images: torch.Tensor) -> torch.Tensor:
    """The model's logits, with each conv block checkpointed."""
    for layer in model:
        if isinstance(layer, nn.Sequential):  # a conv block: conv, batch norm, ReLU
            images = checkpoint(layer, images, use_reentrant=False)
        else:
            images = layer(images)
    return images


def step_gradients(forward) -> list[torch.Tensor]:
    """The gradients of the loss of the logits `forward()` returns."""
    model.zero_grad()
    F.cross_entropy(forward(), y).backward()
    return [p.grad.clone() for p in model.parameters()]


# %% [markdown]
# Three measurements, each plain and checkpointed: the bytes saved for backward, the peak of
# forward and backward, and the compute. `FlopCounterMode` from `torch.utils.flop_counter`
# counts the floating-point operations (FLOPs) of the convolutions and matrix products that
# run inside it, a count that no load on the machine changes.

# %%
def plain_forward() -> torch.Tensor:
    return model(x)


def checkpointed_forward() -> torch.Tensor:
    return checkpointed(model, x)


def measure(forward) -> dict[str, int]:
    """Bytes saved for backward, peak bytes of forward and backward, and their FLOPs."""
    with FlopCounterMode(display=False) as flops:
        step_gradients(forward)
    return {
        "saved bytes": saved_bytes(forward, exclude=model),
        "peak bytes": peak_bytes(lambda: step_gradients(forward)),
        "FLOPs": flops.get_total_flops(),
    }


plain, ckpt = measure(plain_forward), measure(checkpointed_forward)
for what in plain:
    both = f"plain {plain[what]:>13,} | checkpointed {ckpt[what]:>13,}"
    print(f"{what:>11}: {both} | {ckpt[what] / plain[what]:.2f}× plain")
with_checkpoints = step_gradients(checkpointed_forward)
same = largest_difference(with_checkpoints, step_gradients(plain_forward))
print("largest gradient difference:", "below 1e-6" if same < 1e-6 else f"{same:.1g}")

# %%
saved_plain, saved_ckpt = plain["saved bytes"], ckpt["saved bytes"]
peak_plain, peak_ckpt = plain["peak bytes"], ckpt["peak bytes"]
check(same < 1e-6, "checkpointing leaves the gradients as they were")
check(saved_ckpt < 0.7 * saved_plain, "it saves a third fewer bytes for backward")
check(
    peak_plain > peak_ckpt > peak_plain - (saved_plain - saved_ckpt),
    "the peak falls too, but by less: backward holds one recomputed block at a time",
)
check(
    1.2 < ckpt["FLOPs"] / plain["FLOPs"] < 1.5,
    "the price: a third more compute, one more forward pass of the conv blocks",
)


# %% [markdown]
# Three things to notice. The saving is only about a third, because the layers outside the
# checkpoints still save: each max pool keeps its input and its int64 positions (exercise 2
# checkpoints bigger pieces). The peak falls less than the saved bytes, because in backward each
# block's activations come back, one block at a time. And the extra compute is about the
# forward pass of the conv blocks, a third of a step's work here, since a backward pass costs
# about twice a forward: a third more compute.
#
# One pitfall comes with this CNN: batch norm's forward now runs twice per step, so its running
# statistics are updated twice. The cookbook's recipe
# [Trade compute for memory with activation checkpointing](cookbook/11_memory_recipes.ipynb#Trade-compute-for-memory-with-activation-checkpointing)
# shows the fix, and what to do about dropout's random masks.
#
# More tools for memory, one recipe each, are in the [cookbook](cookbook/11_memory_recipes.ipynb):
# selective checkpointing, `save_on_cpu`, the CUDA caching allocator, and releasing a model's
# memory in a notebook.

# %% [markdown]
# ## Exercises

# %% [markdown]
# ### Exercise 1 · Micro-batches of different sizes
#
# The last batch of an epoch is often smaller than the others, so micro-batches are not always
# equal. Write `accumulate(model, images, labels, sizes)`: it cuts the batch into micro-batches
# of the given sizes (they add up to `len(images)`), runs each forward and backward in turn, and
# leaves in every `p.grad` the gradient of the mean loss over **all** the images. The check
# calls it on a small CNN in evaluation mode, with 64 images in micro-batches of 40 and 24, its
# gradients set to `None` before. It also measures the peak memory, which must stay below that
# of the whole batch.
#
# <details><summary>Hint 1</summary>
#
# Dividing each micro-batch's mean loss by the number of micro-batches is right only when they
# are all the same size. The big batch's loss is a mean over all the images: how much of it
# comes from the images of one micro-batch?
# </details>
#
# <details><summary>Hint 2</summary>
#
# `images.split(sizes)` cuts a tensor into pieces of the given sizes, as `chunk` cuts it into
# equal ones. One micro-batch contributes the sum of its images' losses, divided by the number
# of images in the whole batch; lesson 06's `reduction` argument gives a sum instead of a mean.
# </details>

# %%
def accumulate(
    model: nn.Module, images: torch.Tensor, labels: torch.Tensor, sizes: list[int]
) -> None:
    """Fill every p.grad with the gradient of the mean loss over all the images, computed in
    micro-batches of the given sizes."""
    ...


# %%
lesson11.exercise_1(accumulate)


# %% [markdown]
# #### Solution

# %% tags=["solution"]
# Solution: open it once you have tried. It uses its own names, so your answer stays as it is.
def solution_accumulate(
    model: nn.Module, images: torch.Tensor, labels: torch.Tensor, sizes: list[int]
) -> None:
    pieces = zip(images.split(sizes), labels.split(sizes), strict=True)
    for part_images, part_labels in pieces:
        summed = F.cross_entropy(model(part_images), part_labels, reduction="sum")
        (summed / len(images)).backward()


lesson11.exercise_1(solution_accumulate)


# %% [markdown]
# ### Exercise 2 · Checkpoint each block with its pooling layer
#
# Checkpointing only the conv blocks left the max pools saving their inputs and their int64
# positions. Write `checkpointed_with_pools(model, images)` for the course's CNN: like
# `checkpointed` above, but each conv block is checkpointed *together with the pooling layer
# that follows it*, in one checkpoint; the other layers run as usual. The check wants the
# model's logits and the same gradients as `model(x)`, and it counts the bytes saved for
# backward: exactly those of one checkpoint per block and its pool, no more and no fewer.
#
# <details><summary>Hint 1</summary>
#
# Walk the model's layers in order, as `checkpointed` does; but now one checkpoint must cover
# two consecutive layers: a conv block and the layer right after it.
# </details>
#
# <details><summary>Hint 2</summary>
#
# `checkpoint` takes any function or module, and `nn.Sequential(a, b)` makes one module of two.
# With an index into `list(model)` you can look one layer ahead, and skip the layer you have
# already run.
# </details>

# %%
def checkpointed_with_pools(model: nn.Sequential, images: torch.Tensor) -> torch.Tensor:
    """The model's logits, each conv block checkpointed with the pooling layer after it."""
    ...


# %%
lesson11.exercise_2(checkpointed_with_pools, model, x, y)


# %% [markdown]
# #### Solution

# %% tags=["solution"]
# Solution: open it once you have tried. It uses its own names, so your answer stays as it is.
def solution_checkpointed_with_pools(model: nn.Sequential, images: torch.Tensor) -> torch.Tensor:
    layers = list(model)
    i = 0
    while i < len(layers):
        if isinstance(layers[i], nn.Sequential):  # a conv block, and the pool after it
            pair = nn.Sequential(layers[i], layers[i + 1])
            images = checkpoint(pair, images, use_reentrant=False)
            i += 2
        else:
            images = layers[i](images)
            i += 1
    return images


lesson11.exercise_2(solution_checkpointed_with_pools, model, x, y)

# %% [markdown]
# ## Summary
#
# - A training step holds the parameters, their gradients, the optimiser's state (AdamW: two
#   more copies) and the activations autograd saves for backward; for a CNN like the course's,
#   the activations are most of it, and they grow in proportion to the batch size.
# - `torch.autograd.graph.saved_tensors_hooks` shows every tensor autograd saves, so the
#   activations can be counted exactly on any device; `helpers.memory` wraps it (`saved_bytes`)
#   and estimates all four parts (`estimate`).
# - Gradient accumulation runs a big batch as micro-batches, each loss scaled by its share,
#   with one `backward()` each and one optimiser step: the same gradient for layers that treat
#   each image on its own (not batch norm in training mode), a fraction of the memory.
# - Activation checkpointing (`checkpoint(fn, x, use_reentrant=False)`) keeps only the input of
#   `fn` and recomputes the rest in backward: fewer saved bytes, the same gradients, more
#   compute.
#
# Next: [12 · Deployment: the CNN outside the notebook](12_deployment.ipynb).
