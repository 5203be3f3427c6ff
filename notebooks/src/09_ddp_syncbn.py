# %% [markdown]
# # 09 · DDP and SyncBN: one model on two processes
#
# [![Open In Colab](https://colab.research.google.com/assets/colab-badge.svg)](https://colab.research.google.com/github/pytorch-cookbook/pytorch-cookbook/blob/main/notebooks/09_ddp_syncbn.ipynb)
#
# You train the course's CNN on two processes at once, each with its own copy of the model and
# its own half of every batch, and prove that one step on 2 × 8 CIFAR2 images is the step one
# process takes on all 16. Batch norm breaks that proof at first; synchronised batch norm
# repairs it.
#
# **You will be able to:**
# - say why data parallel training averages the gradients of its processes
# - write a script that every rank runs, and launch it on 2 processes with `torchrun` from a cell
# - give each rank its own shard of the data with `DistributedSampler`
# - wrap a model in `DistributedDataParallel` and check its step against one process
# - explain why batch norm needs synchronised statistics under DDP, and compute them from sums
#
# **Before you start:** the gradient of a sum is the sum of the gradients
# ([03](03_autograd.ipynb)); batch norm in `train()` and `eval()` mode, a module's
# `named_parameters` and `state_dict` ([04](04_modules.ipynb)); a batch's loss as the mean of
# its images' losses ([06](06_losses.ipynb)); a sampler and a DataLoader
# ([05](05_datasets_dataloaders.ipynb)); the five lines of a training step
# ([07](07_training_loop.ipynb)); a per-channel mean broadcast with `[:, None, None]`
# ([01](01_tensors.ipynb)).
#
# **Cookbook:** [09 · DDP and SyncBN that really run: recipes](cookbook/09_ddp_syncbn_recipes.ipynb) holds every recipe of this chapter (a full DDP training script with checkpoints, the learning rate for a larger global batch, `no_sync` and `Join`, FSDP2 and sharded checkpoints, model parallelism, the everyday failures, several machines), for when you need one.
#
# **Study time:** about 60 min: 2,954 words of text at 120 a minute, 277 lines of code at 10 a minute, 1 exercise at 10 minutes each.
#
# **Run time:** about 15 s on a 2-core CPU (Intel Xeon, AVX2 code paths, measured on 2026-11-25) · GPU optional.

# %%
import sys

if (
    "google.colab" in sys.modules
):  # Colab: install the course's helpers and what the notebooks import
    import subprocess

    spec = "pytorch-cookbook[notebooks] @ git+https://github.com/pytorch-cookbook/pytorch-cookbook"
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", spec], check=True)

import shutil
from pathlib import Path

import matplotlib.pyplot as plt
import torch
from torch import nn
from torch.utils.data import DistributedSampler, TensorDataset

from helpers.check import check
from helpers.diagrams.ddp import draw_ddp
from helpers.dist import torchrun
from helpers.env import setup
from helpers.exercises import lesson09
from helpers.images import channel_stats, load_cifar2
from helpers.models import small_cnn

device = setup(seed=0)
RUN = Path("runs/09_lesson")  # the scripts this lesson writes, and what they save
shutil.rmtree(RUN, ignore_errors=True)  # start clean
RUN.mkdir(parents=True)
sys.path.insert(0, str(RUN))  # so that this notebook can import a file written there

# %% [markdown]
# ## Why one process is not enough
#
# In [07](07_training_loop.ipynb) one process trained the CNN, batch after batch. On CIFAR2
# that is quick. A far larger model on far more images takes days that way, and one process
# drives one GPU while the machine may have several. To go faster, several devices must work
# on every step together.
#
# **Data parallel** training shares the work this way:
#
# - start one process per device; each is a **rank**, numbered 0, 1, …; their number is the
#   **world size**;
# - every rank holds a full copy of the model, with the same weights;
# - every rank takes its own share of each batch (with 2 ranks and 16 images, 8 each) and runs
#   forward and backward on it: that gives it its own gradient;
# - the ranks exchange their gradients and each receives their **average**. An exchange in
#   which every rank puts in a tensor and every rank gets back the sum (or the mean) is an
#   **all-reduce**;
# - every rank takes the same optimizer step with the same average, so the copies stay equal.
#
# PyTorch's `DistributedDataParallel` (**DDP**) does this for any model. (Old code uses
# `nn.DataParallel`: one process that drives all GPUs with threads, slower and on one machine
# only. PyTorch recommends DDP.)
#
# Why is the average the right gradient? A batch's loss is the mean of its images' losses
# ([06](06_losses.ipynb)). The mean over 16 images is the average of the two means over 8, and
# the gradient of a sum is the sum of the gradients ([03](03_autograd.ipynb)). So the average
# of the two ranks' gradients is the gradient of all 16 images.
#
# One process can check that: 16 CIFAR2 training images picked at random, and the course's CNN
# at width 8 (smaller than 07's, and quicker), whose initial weights `start` keeps for every
# copy in this lesson. `gradients` runs one
# forward and backward pass and returns every parameter's gradient, by name. `difference`
# measures how far two sets of gradients are apart: the size (`norm()`, the square root of the
# sum of squares) of their difference, relative to the size of the second. Float32 rounding
# leaves differences of the order of 1e-7. Everything here runs on the CPU, also where there is
# a GPU: the ranks will use the CPU, and a fair comparison needs the same arithmetic on both
# sides.

# %%
train_images, train_labels, classes = load_cifar2("train")
mean, std = channel_stats(train_images)
pick = torch.randperm(len(train_images), generator=torch.Generator().manual_seed(0))[:16]
images, labels = train_images[pick], train_labels[pick]  # one batch of 16 images
torch.manual_seed(0)
start = small_cnn(mean, std, width=8).state_dict()  # the weights every copy starts from
loss_fn = nn.CrossEntropyLoss()


def fresh_cnn():
    """Return the CNN at width 8 with the start weights, in training mode."""
    model = small_cnn(mean, std, width=8)
    model.load_state_dict(start)
    return model


def gradients(model, images, labels):
    """Return {parameter name: gradient} after one forward and backward pass of model."""
    loss_fn(model(images), labels).backward()
    return {name: p.grad for name, p in model.named_parameters()}


def difference(a, b):
    """How far the gradients a are from b, relative to the size of b: 0 when they are equal."""
    a = torch.cat([g.flatten() for g in a.values()])
    b = torch.cat([g.flatten() for g in b.values()])
    return ((a - b).norm() / b.norm()).item()


# %% [markdown]
# The gradients on all 16 images and on each half of 8 (the images from position 0 and from
# position 8 on), in evaluation mode (`.eval()` returns
# the model itself): batch norm then uses its running statistics, fixed numbers, so each
# image's loss depends on that image alone. Keep that in mind; a later section comes back to
# it. The printed numbers vary in their last digits between CPUs; the checks follow.

# %% tags=["nbval-ignore-output"]
whole = gradients(fresh_cnn().eval(), images, labels)
halves = [gradients(fresh_cnn().eval(), images[k : k + 8], labels[k : k + 8]) for k in (0, 8)]
averaged = {name: (halves[0][name] + halves[1][name]) / 2 for name in whole}
print(f"the average of the halves' gradients vs all 16: {difference(averaged, whole):.1e}")
print(f"one half's gradient alone vs all 16:            {difference(halves[0], whole):.2f}")

# %%
check(
    difference(averaged, whole) < 1e-5,
    "the average of the two halves' gradients is the gradient of all 16 images",
)
check(difference(halves[0], whole) > 0.05, "while one half's gradient alone is far from it")

# %% [markdown]
# **Takeaway:** data parallel training takes the steps of one process on the whole batch, with
# the work shared. What is left: start the processes, and let them average.

# %% [markdown]
# ## Launch two processes from the notebook
#
# A notebook is one process. So the code of the ranks goes into a **script**, a file that every
# rank runs from top to bottom, and a launcher starts it. PyTorch's launcher is `torchrun`:
# `torchrun --standalone --nproc-per-node 2 hello.py` starts 2 Python processes on this
# machine, each running `hello.py`, and tells each one its rank, the world size and where to
# meet the others, in environment variables. (Old code uses `python -m
# torch.distributed.launch`, which `torchrun` replaced.)
#
# The first script meets the other rank and adds up one number from each:
#
# - `dist.init_process_group("gloo")` joins the **process group**, the ranks of this job: it
#   reads torchrun's environment variables and waits for all ranks. `gloo` is the **backend**
#   that moves tensors between processes: `gloo` for the CPU, `nccl` for NVIDIA GPUs.
# - `dist.get_rank()` and `dist.get_world_size()` give this rank and the world size.
# - `dist.all_reduce(total)`: every rank passes a tensor of the same shape, waits for the
#   others, and then holds the sum over all ranks in it. It works in place, hence the copy.
# - `dist.destroy_process_group()` leaves the group at the end.
#
# `%%writefile runs/09_lesson/hello.py` on a cell's first line is a Jupyter magic command: the
# cell is not run but saved to that file.

# %%
# %%writefile runs/09_lesson/hello.py
"""Every rank runs this file: join the group, then add up one number from each rank."""

import torch
import torch.distributed as dist

dist.init_process_group("gloo")  # torchrun told each process its rank and where to meet
rank, world = dist.get_rank(), dist.get_world_size()
mine = torch.tensor([10.0 * (rank + 1)])  # rank 0 has 10, rank 1 has 20
total = mine.clone()
dist.all_reduce(total)  # every rank puts in its number and gets back the sum
print(f"rank {rank} of {world}: mine {mine.item():g}, all-reduced {total.item():g}")
dist.destroy_process_group()

# %% [markdown]
# `torchrun(script, *arguments, nproc=2)` from the course's `helpers.dist` runs `torchrun
# --standalone --nproc-per-node 2` from a cell. It prints each rank's lines as they come, after
# the rank's number, and returns when all ranks have finished. If a rank fails, torchrun stops
# the others and the call raises an error naming the rank; after a time limit (`timeout`, 120 s
# unless told) it stops the whole job, so the cell never hangs. Two processes that each import
# PyTorch take a few seconds to start. Their lines come in either order; the check follows.

# %% tags=["nbval-ignore-output"]
job = torchrun(RUN / "hello.py", nproc=2)
print(f"the job took {job.seconds:.1f} s")

# %%
printed = " ".join(line for lines in job.output.values() for line in lines)  # job.output: per rank
check(
    "rank 0 of 2: mine 10, all-reduced 30" in printed
    and "rank 1 of 2: mine 20, all-reduced 30" in printed,
    "both ranks ran the script, and each received the sum 10 + 20 = 30",
)

# %% [markdown]
# **Takeaway:** one script, run by every rank; `torchrun` starts the ranks and
# `init_process_group` connects them; an all-reduce gives every rank the sum of what all ranks
# put in.

# %% [markdown]
# ## Give each rank its shard
#
# Each rank must learn from different images, or the two copies would compute the same
# gradient twice. In [05](05_datasets_dataloaders.ipynb) a sampler put the indices of a data
# set in an order, and the DataLoader cut that order into batches. `DistributedSampler` does it
# for one rank: every rank computes the **same** order (the same shuffle, from the same seed),
# and rank r keeps every second index from position r on (every world-size-th, in general). So
# the shards do not overlap, and together they cover the data set. In a script, the sampler
# reads the rank and the world size from the process group; here they are passed by hand
# (`num_replicas` is the world size), to see both ranks' shards of the 16 images:

# %%
batch = TensorDataset(images, labels)
for epoch in (0, 1):
    shards = []
    for rank in (0, 1):
        sampler = DistributedSampler(batch, num_replicas=2, rank=rank, seed=0)  # shuffles
        sampler.set_epoch(epoch)  # a new order each epoch, the same on every rank
        shards.append(list(sampler))
    print(f"epoch {epoch}: rank 0 gets {shards[0]}, rank 1 gets {shards[1]}")
check(
    set(shards[0]).isdisjoint(shards[1]) and sorted(shards[0] + shards[1]) == list(range(16)),
    "the two shards do not overlap, and together they are all 16 images",
)

# %% [markdown]
# `sampler.set_epoch(epoch)` at the start of every epoch gives each epoch its own order;
# without it, every epoch repeats the first one's. In a training loop the sampler replaces
# `shuffle=True`: `DataLoader(dataset, batch_size=8, sampler=sampler)`. That batch size is
# **per rank**: 2 ranks with 8 images make a **global batch** of 16. When a data set does not
# split evenly, the sampler repeats a few indices so that every rank runs the same number of
# steps ([the cookbook's recipe](cookbook/09_ddp_syncbn_recipes.ipynb#Give-each-rank-its-own-shard-with-DistributedSampler)).
#
# This lesson's script turns shuffling off (`shuffle=False`), so that the notebook knows each
# rank's images: rank 0 gets the even positions, rank 1 the odd ones. With those shards, one
# step of data parallel training looks like this:

# %%
fixed = [list(DistributedSampler(batch, num_replicas=2, rank=r, shuffle=False)) for r in (0, 1)]
print("rank 0's shard:", fixed[0], "| rank 1's shard:", fixed[1])
draw_ddp(fixed)
plt.show()

# %% [markdown]
# Each rank takes its shard through its own copy of the model and gets its own gradient, g₀ or
# g₁. The all-reduce gives both the mean (g₀ + g₁) / 2, and both take the same step with it.

# %% [markdown]
# ## Batch norm sees only its rank's shard
#
# The first section used evaluation mode on purpose. In training mode, batch norm standardises
# each channel with the mean and variance of the batch **in front of it**
# ([04](04_modules.ipynb)), so an image's output depends on the other images of its batch. Under
# DDP, that batch is the rank's shard: 8 images, not 16.
#
# The first batch norm of the CNN standardises the 8 channels that the first convolution makes:
# `model[2][0]` is that convolution (layer 2 is the first conv block, part 0 its conv, as in
# 07); layers 0 and 1 turn the pixels into normalised floats. The charts show, per channel, the
# mean that batch norm subtracts and the standard deviation it divides by, as rank 0, rank 1
# and one process with all 16 images compute them (`ax.bar` draws bars; three per channel):

# %%
model = fresh_cnn()
before_norm = nn.Sequential(model[0], model[1], model[2][0])  # what the first batch norm sees
with torch.no_grad():
    features = before_norm(images)  # (16, 8, 32, 32): 8 channels
seen = {"rank 0": features[fixed[0]], "rank 1": features[fixed[1]], "all 16": features}
means = {who: x.mean(dim=(0, 2, 3)) for who, x in seen.items()}
stds = {who: x.std(dim=(0, 2, 3), correction=0) for who, x in seen.items()}

fig, axes = plt.subplots(1, 2, figsize=(9, 3), layout="constrained")
for k, who in enumerate(seen):
    where = torch.arange(8) + 0.27 * (k - 1)  # the channels' positions, shifted per bar
    axes[0].bar(where, means[who], width=0.27, label=who)
    axes[1].bar(where, stds[who], width=0.27, label=who)
axes[0].set(xlabel="channel", title="mean: what batch norm subtracts")
axes[1].set(xlabel="channel", title="standard deviation: what it divides by")
axes[0].legend()
plt.show()

# %%
off = [(stds[who] / stds["all 16"] - 1).abs().max().item() for who in ("rank 0", "rank 1")]
check(
    min(off) > 0.1,
    "on each rank, some channel's standard deviation is over 10% away from that of all 16",
)

# %% [markdown]
# So in training mode, two ranks no longer compute what one process computes on the whole
# batch. The repair: statistics over **all** ranks' images. They are made of sums, and sums add
# up across ranks. Per channel, each rank needs three numbers: the sum of its values, the sum of
# their squares, and their count. Added up over the ranks, they give the global batch's mean,
# total / count, and its variance, squares / count − mean² (the mean of the squares minus the
# square of the mean). The cell adds the two shards' numbers as an all-reduce would:


# %%
def channel_sums(x):
    """Per channel: the sum of the values of a batch x, the sum of their squares, their count."""
    return x.sum(dim=(0, 2, 3)), (x * x).sum(dim=(0, 2, 3)), x.numel() / x.shape[1]


parts = [channel_sums(features[shard]) for shard in fixed]  # what each rank puts in
total, squares, count = (parts[0][i] + parts[1][i] for i in range(3))  # the all-reduce
global_mean = total / count
global_var = squares / count - global_mean**2
check(
    torch.allclose(global_mean, features.mean(dim=(0, 2, 3)), atol=1e-5)
    and torch.allclose(global_var, features.var(dim=(0, 2, 3), correction=0), rtol=1e-4),
    "from the ranks' sums: the mean and variance of all 16 images, channel by channel",
)

# %% [markdown]
# This is **synchronised batch norm** (SyncBN): in training mode every rank computes those
# three numbers per channel, one all-reduce adds them up, and every rank standardises its shard
# with the global batch's statistics. PyTorch's `nn.SyncBatchNorm` does it on GPUs (and other
# accelerators) only: on a CPU, inside a process group, its training forward raises an error.
# So this lesson writes its own, in a file that the script will import:

# %%
# %%writefile runs/09_lesson/sync_bn.py
"""Batch norm with the statistics of all ranks' batches: what nn.SyncBatchNorm does on GPUs."""

import torch
import torch.distributed as dist
from torch import nn


class AllReduceSum(torch.autograd.Function):
    """Add a tensor up over all ranks; in backward, add its gradient up over all ranks too."""

    @staticmethod
    def forward(ctx, t):
        t = t.clone()  # all_reduce works in place: leave the input as it was
        dist.all_reduce(t)
        return t

    @staticmethod
    def backward(ctx, grad):
        grad = grad.clone()
        dist.all_reduce(grad)
        return grad


class SyncBatchNorm2d(nn.BatchNorm2d):
    """nn.BatchNorm2d that, in training, standardises with the statistics of all ranks."""

    def forward(self, x):
        if not self.training:
            return super().forward(x)  # evaluation: the running statistics, as before
        c = x.shape[1]
        count = torch.tensor([x.numel() / c], device=x.device)  # values per channel
        stats = torch.cat([x.sum(dim=(0, 2, 3)), (x * x).sum(dim=(0, 2, 3)), count])
        if dist.is_initialized():  # inside a process group: add up over the ranks
            stats = AllReduceSum.apply(stats)
        n = stats[-1]
        mean = stats[:c] / n
        var = stats[c : 2 * c] / n - mean**2  # divided by n: what batch norm uses
        with torch.no_grad():  # the running statistics keep the variance divided by n - 1
            self.running_mean.lerp_(mean, self.momentum)
            self.running_var.lerp_(var * n / (n - 1), self.momentum)
            self.num_batches_tracked += 1
        x_hat = (x - mean[:, None, None]) / torch.sqrt(var[:, None, None] + self.eps)
        return x_hat * self.weight[:, None, None] + self.bias[:, None, None]


def convert_to_sync_bn(module):
    """Swap every nn.BatchNorm2d inside module for a SyncBatchNorm2d with the same state."""
    for name, child in module.named_children():
        if isinstance(child, nn.BatchNorm2d):
            sync = SyncBatchNorm2d(child.num_features, child.eps, child.momentum)
            sync.load_state_dict(child.state_dict())
            setattr(module, name, sync)
        else:
            convert_to_sync_bn(child)
    return module


# %% [markdown]
# Line by line:
#
# - `AllReduceSum` is an all-reduce that autograd can go through. A `torch.autograd.Function`
#   is an operation with a hand-written backward, called with `.apply`; its `forward` and
#   `backward` receive a context `ctx` first, unused here (the cookbook of
#   [03](03_autograd.ipynb) has the recipe). Its forward adds the tensor up over the ranks; its
#   backward adds the gradient up too, because every rank's loss depends on the summed
#   statistics, so the gradient for one rank's share collects what every rank sends back.
# - `SyncBatchNorm2d` is an `nn.BatchNorm2d` (its weights, running statistics and evaluation
#   mode) with a new `forward`; `super().forward(x)` calls batch norm's own. In training mode
#   it packs the three numbers per channel into one tensor, `stats` (8 sums, 8 sums of squares,
#   1 count), so that one all-reduce adds them all up. Without a process group, as in this
#   notebook, it skips the all-reduce: it is then plain batch norm written out, which the next
#   cell checks.
# - `lerp_(mean, momentum)` moves the running mean 10% of the way to the new mean, as batch
#   norm does (04); its running variance is divided by n - 1.
# - the last two lines standardise, then scale and shift by the learned weight and bias;
#   `[:, None, None]` broadcasts a per-channel value over images, rows and columns (01).
# - `convert_to_sync_bn` walks through the model: `named_children()` lists a module's direct
#   sub-modules by name, as `named_parameters()` lists its parameters, and `setattr` replaces
#   one. Each `nn.BatchNorm2d` becomes a `SyncBatchNorm2d` with the same weights and
#   statistics; anything else is searched in turn. PyTorch's
#   `nn.SyncBatchNorm.convert_sync_batchnorm` does the same.
#
# In one process, the converted CNN must compute what the CNN computes:

# %%
from sync_bn import convert_to_sync_bn  # the file just written

plain, synced = fresh_cnn(), convert_to_sync_bn(fresh_cnn())
same = difference(gradients(synced, images, labels), gradients(plain, images, labels))
check(
    same < 1e-5 and type(synced[2][1]).__name__ == "SyncBatchNorm2d",
    "in one process, the CNN with SyncBatchNorm2d has the same gradients as with BatchNorm2d",
)
plain_state, synced_state = plain.state_dict(), synced.state_dict()
check(
    all(torch.allclose(plain_state[k].float(), synced_state[k].float()) for k in plain_state),
    "and the same running statistics after one forward pass in training mode",
)

# %% [markdown]
# **Takeaway:** in training mode, a rank's batch norm sees only its shard. Synchronised batch
# norm adds the statistics' sums up over the ranks, with one all-reduce in forward and one in
# backward.

# %% [markdown]
# ## Prove it: one DDP step on 2 × 8 images is one step on 16
#
# The script below takes one training step of the CNN with DDP, each rank on its shard of the
# 16 images, twice: with the CNN's own batch norm (`plain`), then with the synchronised one
# (`sync`). The notebook saves what the ranks start from, the batch and the start weights:

# %%
torch.save(
    {"images": images, "labels": labels, "mean": mean, "std": std, "weights": start},
    RUN / "start.pt",
)

# %%
# %%writefile runs/09_lesson/ddp_step.py
"""One DDP training step of the course's CNN: each rank learns from its shard of 16 images."""

import sys

import torch
import torch.distributed as dist
from sync_bn import convert_to_sync_bn
from torch import nn
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset

from helpers.models import small_cnn

dist.init_process_group("gloo")
rank, world = dist.get_rank(), dist.get_world_size()
start = torch.load(sys.argv[1], weights_only=True)  # the batch and the start weights
batch = TensorDataset(start["images"], start["labels"])
sampler = DistributedSampler(batch, shuffle=False)  # rank and world size from the group
loader = DataLoader(batch, batch_size=len(batch) // world, sampler=sampler)
images, labels = next(iter(loader))  # this rank's shard: 8 of the 16 images

found = {"shard": list(sampler)}
for kind in ("plain", "sync"):
    model = small_cnn(start["mean"], start["std"], width=8)
    if kind == "sync":
        model = convert_to_sync_bn(model)
    model.load_state_dict(start["weights"])
    ddp = DDP(model)  # the copies start equal, and backward() will average their gradients
    optimizer = torch.optim.SGD(ddp.parameters(), lr=0.1)
    loss = nn.CrossEntropyLoss()(ddp(images), labels)
    optimizer.zero_grad()
    loss.backward()  # the all-reduce of the gradients runs in here
    optimizer.step()
    found[kind] = {
        "grads": {name: p.grad for name, p in model.named_parameters()},
        "weights": {name: p.detach() for name, p in model.named_parameters()},
    }

everyone = [None] * world
dist.all_gather_object(everyone, found)  # every rank's results, in rank order, on every rank
if rank == 0:
    torch.save(everyone, sys.argv[2])
dist.destroy_process_group()

# %% [markdown]
# What is new, line by line:
#
# - `sys.argv` holds the script's command-line arguments: `sys.argv[1]` is the file to start
#   from, `sys.argv[2]` the file for the results.
# - the sampler, inside the process group now, finds the rank and world size itself; the
#   DataLoader takes 16 / 2 = 8 images per batch, and `next(iter(loader))` is this rank's shard.
# - `DDP(model)` wraps the model. When it is created, it sends rank 0's weights to every rank,
#   so the copies start equal. Its forward is the model's. During `backward()` it all-reduces
#   the gradients, group by group as they are ready, so that the exchange overlaps with the rest
#   of backward, and divides by the world size: afterwards every rank's `p.grad` holds the
#   average.
# - the training step is 07's (`ddp.parameters()` are the model's parameters).
# - `dist.all_gather_object(everyone, found)`: every rank puts in a Python object and every
#   rank receives the list of all of them, in rank order. Rank 0 saves it.
#
# The launch (the job prints nothing but its time):

# %% tags=["nbval-ignore-output"]
job = torchrun(RUN / "ddp_step.py", RUN / "start.pt", RUN / "ranks.pt", nproc=2)
print(f"the job took {job.seconds:.1f} s")
ranks = torch.load(RUN / "ranks.pt", weights_only=True)  # one dict per rank

# %% [markdown]
# To compare with, this process computes the gradient on all 16 images in training mode, and
# each rank's own gradient on its shard, before any all-reduce:

# %%
one_process = gradients(fresh_cnn(), images, labels)
own = [gradients(fresh_cnn(), images[shard], labels[shard]) for shard in fixed]
mean_of_own = {name: (own[0][name] + own[1][name]) / 2 for name in one_process}
check(
    [r["shard"] for r in ranks] == fixed,
    "each rank trained on the shard that the sampler gave it here: even and odd positions",
)

# %% [markdown]
# First, DDP with the CNN's own batch norm (the printed numbers vary between CPUs; the checks
# follow):

# %% tags=["nbval-ignore-output"]
plain_ddp = ranks[0]["plain"]["grads"]
print(f"DDP's gradient vs the mean of the ranks' own: {difference(plain_ddp, mean_of_own):.1e}")
print(f"DDP's gradient vs one process on all 16:      {difference(plain_ddp, one_process):.2f}")

# %%
check(
    difference(plain_ddp, mean_of_own) < 1e-5,
    "DDP's gradient is the average of the gradients the two ranks computed on their own",
)
check(
    difference(plain_ddp, one_process) > 0.05,
    "but with per-rank batch norm it is not the gradient of the 16 images together",
)

# %% [markdown]
# The picture again, with this run's numbers for one entry of the gradient: the output layer's
# first bias (`11.bias`, entry 0), as each rank computed it alone and as DDP returned it:

# %%
entry = [own[0]["11.bias"][0].item(), own[1]["11.bias"][0].item()]
draw_ddp(fixed, entry, averaged=plain_ddp["11.bias"][0].item(), what="11.bias, entry 0")
plt.show()

# %% [markdown]
# Now with synchronised batch norm, the claim of this lesson: one DDP step on 2 × 8 images has
# the gradient of one process on all 16, and leaves the same weights, `w - lr * w.grad` (07):

# %% tags=["nbval-ignore-output"]
sync_ddp, sync_weights = ranks[0]["sync"]["grads"], ranks[0]["sync"]["weights"]
stepped = {name: start[name] - 0.1 * one_process[name] for name in one_process}
print(f"DDP's gradient vs one process on all 16:      {difference(sync_ddp, one_process):.1e}")
print(f"DDP's weights after the step vs one process:  {difference(sync_weights, stepped):.1e}")

# %%
check(
    difference(sync_ddp, one_process) < 1e-5,
    "with SyncBN, one DDP step on 2 × 8 images has the gradient of one process on all 16",
)
check(
    difference(sync_weights, stepped) < 1e-6,
    "and it leaves the weights that one process's step on all 16 leaves",
)
check(
    all(
        torch.equal(ranks[0][kind]["weights"][n], ranks[1][kind]["weights"][n])
        for kind in ("plain", "sync")
        for n in one_process
    ),
    "both ranks hold exactly the same weights after the step: the copies stay equal",
)

# %% [markdown]
# **What to notice:** with many images per rank, each shard's statistics come close to the
# global ones, and much code keeps plain batch norm; with a few images per device, as is common
# for detection and segmentation models, synchronise it.
#
# Be a sceptic once: in `sync_bn.py`, delete the `dist.all_reduce(grad)` line of `backward`,
# run that cell, the launch and the cells after it again, and watch the first SyncBN check
# fail. The forward pass is still right; the gradients are not. (Put the line back after.)

# %% [markdown]
# ## On GPUs, and what the cookbook adds
#
# With GPUs, the script changes in a few lines: the backend is `nccl`; each rank uses the GPU
# numbered by its `LOCAL_RANK` (its rank on its machine, another of torchrun's environment
# variables), set with `torch.cuda.set_device` before `init_process_group`; the model goes to
# that GPU, and `DDP(model, device_ids=[local_rank])` wraps it (the cookbook's training script
# has this branch). PyTorch's
# `nn.SyncBatchNorm.convert_sync_batchnorm(model)` swaps in its synchronised batch norm, as
# `convert_to_sync_bn` did. The swap itself runs anywhere:

# %%
converted = nn.SyncBatchNorm.convert_sync_batchnorm(fresh_cnn())
norms = [type(m).__name__ for m in converted.modules() if "BatchNorm" in type(m).__name__]
print("batch norm layers after the swap:", norms)
check(norms == ["SyncBatchNorm"] * 4, "all four batch norm layers of the CNN are now SyncBatchNorm")

# %% [markdown]
# Speed is the point of DDP on GPUs, where each rank has a device of its own. On a CPU, ranks
# share the cores and wait for each other at every all-reduce: do not expect a speed-up there
# ([the cookbook measures it](cookbook/09_ddp_syncbn_recipes.ipynb#Measure-what-two-processes-buy)).
# What carries over is the arithmetic, checked above. The rest of the chapter is in its
# cookbook:
#
# - [a full DDP training script](cookbook/09_ddp_syncbn_recipes.ipynb#Train-CIFAR2-with-DDP,-checkpoint-on-rank-0,-and-resume),
#   with evaluation across ranks, checkpoints on rank 0 and resuming;
# - [the learning rate](cookbook/09_ddp_syncbn_recipes.ipynb#Scale-the-learning-rate-with-the-global-batch)
#   for a global batch N times larger;
# - [`no_sync` and `Join`](cookbook/09_ddp_syncbn_recipes.ipynb#Accumulate-gradients-with-no_sync-and-survive-uneven-inputs-with-Join),
#   for gradient accumulation and ranks with different numbers of batches;
# - [FSDP2](cookbook/09_ddp_syncbn_recipes.ipynb#Shard-a-model-with-FSDP2), for models too
#   large for one device, with sharded checkpoints (DCP);
# - [the everyday failures](cookbook/09_ddp_syncbn_recipes.ipynb#Fix-the-everyday-DDP-failures)
#   and [a failing rank](cookbook/09_ddp_syncbn_recipes.ipynb#Make-a-failing-rank-end-the-job-in-seconds);
# - [model parallelism](cookbook/09_ddp_syncbn_recipes.ipynb#Combine-DDP-with-model-parallelism),
#   a model split across devices, and [several machines](cookbook/09_ddp_syncbn_recipes.ipynb#Go-beyond-one-machine).

# %% [markdown]
# ## Exercises

# %% [markdown]
# ### Exercise 1 · Ranks with shards of different sizes
#
# A data set rarely splits evenly, and a sampler that does not pad can leave ranks with
# different numbers of images. Here three "ranks" hold 8, 6 and 2 of the 16 images, and the
# starter computes each one's own gradient, in evaluation mode as in the first section. Fill in
# `combined`, a dict like theirs, made from their gradients and sizes only, that equals the
# gradient on all 16 images (`whole`, from the first section).
#
# <details><summary>Hint 1</summary>
#
# Each rank's loss is the mean over its own images. Write the mean over all 16 images in terms
# of the three means: does a rank with 2 images count as much as a rank with 8?
# </details>
#
# <details><summary>Hint 2</summary>
#
# The mean over 16 is the sum over 16 divided by 16, and a rank's sum is its mean times its
# number of images. A dict comprehension over the parameter names does the same for every
# parameter's gradient.
# </details>

# %%
thirds = [list(range(0, 8)), list(range(8, 14)), list(range(14, 16))]  # 8, 6 and 2 images
sizes = [len(shard) for shard in thirds]
rank_grads = [gradients(fresh_cnn().eval(), images[shard], labels[shard]) for shard in thirds]
combined = ...  # {parameter name: gradient}, made from rank_grads and sizes only

# %%
lesson09.exercise_1(combined, rank_grads, sizes, whole)

# %% [markdown]
# #### Solution

# %% tags=["solution"]
# Solution: open it once you have tried. It uses its own names, so your answer stays as it is.
solution_combined = {
    solution_name: sum(n * g[solution_name] for n, g in zip(sizes, rank_grads, strict=True))
    / sum(sizes)
    for solution_name in whole
}
lesson09.exercise_1(solution_combined, rank_grads, sizes, whole)

# %% [markdown]
# ## Summary
#
# - Data parallel training runs one process (rank) per device, each with a copy of the model
#   and a shard of every batch; an all-reduce gives every rank the average gradient, and all
#   take the same step.
# - The average of the ranks' gradients is the gradient of the global batch, as long as each
#   image's loss depends on that image alone.
# - A DDP program is a script that every rank runs: `init_process_group`, a
#   `DistributedSampler`, `DDP(model)`, then 07's training step; `torchrun` launches it.
# - In training mode, batch norm sees only its rank's shard. Synchronised batch norm adds up
#   each channel's sum, sum of squares and count over the ranks, and makes the DDP step equal
#   one process's step on the global batch (`nn.SyncBatchNorm` on GPUs).
#
# Next: [10 · Speedups, measured: find what the training step waits for](10_speedups.ipynb).
