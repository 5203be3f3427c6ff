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
# Python: classes ([00](00_python.ipynb#Classes:-__init__,-__call__-and-super)) and `@staticmethod` ([00](00_python.ipynb#Functions-are-values:-lambda,-closures,-decorators)); files run as
# scripts ([00](00_python.ipynb#Scripts:-__main__,-argparse,-try-and-except)).
#
# **Cookbook:** [09 · DDP that really runs: recipes](cookbook/09_ddp_syncbn_recipes.ipynb) (a full DDP training script with checkpoints, the learning rate for a larger global batch, `no_sync` and `Join`, the everyday failures, several machines) and [09 · Sync BN, FSDP2 and split models](cookbook/09_ddp_syncbn_big_models_recipes.ipynb) (sync BN from scratch, FSDP2 and sharded checkpoints, model parallelism) hold the chapter's recipes, for when you need one.
#
# **Study time:** about 80 min: 2,565 words of text at 120 a minute, 281 lines of code at 10 a minute, 23 code cells to run at 1 minute each (reading what they print), 1 exercise at 10 minutes each.
#
# **Run time:** about 25 s on a 2-core CPU · GPU optional.

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
# In [07](07_training_loop.ipynb) one process trained the CNN. A far larger model on far more
# images would take days that way, and one process drives one GPU. To go faster, several
# devices share every step.
#
# **Data parallel** training shares it like this:
#
# - start one process per device. Each is a **rank**, numbered 0, 1, …; how many there are is
#   the **world size**;
# - every rank holds a full copy of the model, with the same weights;
# - every rank takes its own share of each batch (with 2 ranks and 16 images, 8 each), runs
#   forward and backward on it, and so gets its own gradient;
# - the ranks exchange their gradients and each receives their **average**. An exchange where
#   every rank puts in a tensor and gets back the sum (or mean) of all of them is an
#   **all-reduce**;
# - every rank takes the same optimizer step with that average, so the copies stay equal.
#
# PyTorch's `DistributedDataParallel` (**DDP**) does this.
#
# Why the average? A batch's loss is the mean of its images' losses ([06](06_losses.ipynb)).
# The mean over 16 images is the average of the two means over 8, and the gradient of a sum is
# the sum of the gradients ([03](03_autograd.ipynb)). So the average of the two ranks'
# gradients is the gradient on all 16 images.
#
# One process can check that on 16 training images with the course's CNN at width 8;
# `start` keeps its first weights for every copy in this lesson.
# `difference(a, b)` is the size (`norm()`) of the difference of two sets of gradients,
# relative to the size of `b`; float32 rounding alone leaves about 1e-7 to 1e-6 (the checks
# allow 1e-5). All runs on the CPU,
# even where there is a GPU, as the ranks will.

# %%
train_images, train_labels, classes = load_cifar2("train")
mean, std = channel_stats(train_images)
order = torch.randperm(len(train_images), generator=torch.Generator().manual_seed(0))
images, labels = train_images[order[:16]], train_labels[order[:16]]  # a batch of 16
torch.manual_seed(0)
start = small_cnn(mean, std, width=8).state_dict()  # the weights every copy starts from
loss_fn = nn.CrossEntropyLoss()


def fresh_cnn():
    """Return the CNN at width 8 with the start weights, in training mode."""
    model = small_cnn(mean, std, width=8)
    model.load_state_dict(start)
    return model


def gradients(model, images, labels):
    """Return {parameter name: gradient} after one forward and backward pass."""
    loss_fn(model(images), labels).backward()
    return {name: p.grad for name, p in model.named_parameters()}


def difference(a, b):
    """How far the gradients a are from b, relative to b's size: 0 when equal."""
    a = torch.cat([g.flatten() for g in a.values()])
    b = torch.cat([g.flatten() for g in b.values()])
    return ((a - b).norm() / b.norm()).item()


# %% [markdown]
# The gradients on all 16 images and on each half of 8, in evaluation mode (`.eval()` returns
# the model itself). There, batch norm uses its fixed running statistics, so each image's
# loss depends on that image alone; a later section comes back to this. The printed digits
# vary between CPUs; the checks follow.

# %% tags=["nbval-ignore-output"]
whole = gradients(fresh_cnn().eval(), images, labels)
halves = []
for k in (0, 8):  # images 0 to 7, then 8 to 15
    halves.append(gradients(fresh_cnn().eval(), images[k : k + 8], labels[k : k + 8]))
averaged = {name: (halves[0][name] + halves[1][name]) / 2 for name in whole}
print(f"the average of the halves vs all 16: {difference(averaged, whole):.1e}")
print(f"one half alone vs all 16:            {difference(halves[0], whole):.2f}")

# %%
check(
    difference(averaged, whole) < 1e-5,
    "the average of the two halves' gradients is the gradient of all 16 images",
)
check(difference(halves[0], whole) > 0.05, "while one half's gradient alone is far off")

# %% [markdown]
# **Takeaway:** data parallel training takes the steps of one process on the whole batch, with
# the work shared. What is left: start the processes, and let them average.

# %% [markdown]
# ## Launch two processes from the notebook
#
# A notebook is one process. So the ranks' code goes into a **script**, a file that every rank
# runs from top to bottom, and a launcher starts it. PyTorch's launcher is `torchrun`:
# `torchrun --standalone --nproc-per-node 2 hello.py` starts 2 Python processes on this
# machine, each running `hello.py`. It tells each one its rank, the world size and where to
# meet the others, in environment variables.
#
# The first script meets the other rank and adds up one number from each:
#
# - `dist.init_process_group("gloo")` joins the **process group**, the ranks of this job, and
#   waits for all of them. `gloo` is the **backend** that moves tensors between processes:
#   `gloo` for the CPU, `nccl` for NVIDIA GPUs.
# - `dist.get_rank()` and `dist.get_world_size()` give this rank and the world size.
# - `dist.all_reduce(total)`: every rank passes a tensor of the same shape, and then holds the
#   sum over all ranks in it. It works in place, hence the copy.
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
# --standalone --nproc-per-node 2` from a cell. It prints each rank's lines after the rank's
# number. If a rank fails, it raises an error naming it; after `timeout` seconds (120 unless
# told) it stops the job, so the cell never hangs. The lines come in either order; the check
# follows.

# %% tags=["nbval-ignore-output"]
job = torchrun(RUN / "hello.py", nproc=2)
print(f"the job took {job.seconds:.1f} s")

# %%
# job.output: {rank: the lines it printed}; the two fors walk every line of every rank
printed = " ".join(line for lines in job.output.values() for line in lines)
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
# gradient twice. In [05](05_datasets_dataloaders.ipynb) a sampler put a data set's indices in
# an order, and the DataLoader cut that order into batches. `DistributedSampler` does it for
# one rank: every rank computes the **same** order (the same shuffle, from the same seed), and
# rank r keeps every second index from position r on (every world-size-th, in general). So the
# shards do not overlap, and together they cover the data set. Here the rank and the world
# size (`num_replicas`) are passed by hand, to see both ranks' shards of the 16 images:

# %%
batch = TensorDataset(images, labels)
for epoch in (0, 1):
    shards = []
    for rank in (0, 1):
        sampler = DistributedSampler(batch, num_replicas=2, rank=rank, seed=0)
        sampler.set_epoch(epoch)  # a new order each epoch, the same on every rank
        shards.append(list(sampler))
    print(f"epoch {epoch}: rank 0 gets {shards[0]}, rank 1 gets {shards[1]}")
both = shards[0] + shards[1]  # 16 split evenly; of 15, one would repeat (padding): 8 each
check(
    set(shards[0]).isdisjoint(shards[1]) and sorted(both) == list(range(16)),
    "the two shards do not overlap, and together they are all 16 images",
)

# %% [markdown]
# Call `sampler.set_epoch(epoch)` at the start of every epoch, or every epoch repeats the
# first one's order. In a training loop the sampler replaces `shuffle=True`:
# `DataLoader(dataset, batch_size=8, sampler=sampler)`. That batch size is **per rank**: 2
# ranks with 8 images make a **global batch** of 16.
#
# This lesson's script turns shuffling off (`shuffle=False`), so that the notebook knows each
# rank's images: rank 0 gets the even positions, rank 1 the odd ones. One step of data
# parallel training with those shards:

# %%
fixed = []  # each rank's shard when the sampler does not shuffle
for r in (0, 1):
    fixed.append(list(DistributedSampler(batch, num_replicas=2, rank=r, shuffle=False)))
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
# each channel with the mean and standard deviation of the batch **in front of it**
# ([04](04_modules.ipynb)). So an image's output depends on the other images of its batch.
# Under DDP, that batch is the rank's shard: 8 images, not 16.
#
# The charts show, per channel, what the CNN's first batch norm subtracts and divides by, as
# rank 0, rank 1 and one process with all 16 images compute them. `model[2][0]` is the first
# convolution (block 2, part 0, as in 07); layers 0 and 1 turn the pixels into normalised
# floats.

# %%
model = fresh_cnn()
before_norm = nn.Sequential(model[0], model[1], model[2][0])  # what batch norm sees
with torch.no_grad():
    features = before_norm(images)  # (16, 8, 32, 32): 8 channels
seen = {"rank 0": features[fixed[0]], "rank 1": features[fixed[1]], "all 16": features}
means = {who: x.mean(dim=(0, 2, 3)) for who, x in seen.items()}
# correction=0: divide by n, not n - 1, as batch norm does when it normalises a batch
stds = {who: x.std(dim=(0, 2, 3), correction=0) for who, x in seen.items()}
gap = (stds["rank 0"] - stds["rank 1"]).abs() / stds["all 16"]
worst = gap.argmax().item()  # the channel where the ranks differ most

fig, axes = plt.subplots(1, 2, figsize=(9, 3.4), layout="constrained")
for ax, stat, what in [(axes[0], means, "mean"), (axes[1], stds, "standard deviation")]:
    for k, who in enumerate(seen):  # k = 0, 1, 2: the bar's place beside the others
        where = torch.arange(8) + 0.27 * (k - 1)  # the channels, shifted per bar
        ax.bar(where, stat[who], width=0.27, label=who)
    ax.axvspan(worst - 0.45, worst + 0.45, color="0.88", zorder=0)
    ax.set(xlabel="channel", ylabel=what, title=f"the {what} batch norm uses")
    ax.legend(fontsize=8)
fig.suptitle(f"grey: channel {worst}, where the ranks' standard deviations differ most")
plt.show()

# %%
off = [(stds[r] / stds["all 16"] - 1).abs().max().item() for r in ("rank 0", "rank 1")]
check(
    min(off) > 0.1,
    "on each rank, a channel's standard deviation is over 10% off that of all 16",
)


# %% [markdown]
# So in training mode, two ranks no longer compute what one process computes on the whole
# batch. The repair: statistics over **all** ranks' images. They are made of sums, and sums
# add up across ranks. Per channel, each rank needs three numbers: the sum of its values, the
# sum of their squares, and their count. Added up over the ranks, they give the global
# batch's mean, total / count, and its variance, squares / count − mean² (the mean of the
# squares minus the square of the mean). The cell adds the two shards' numbers as an
# all-reduce would:

# %%
def channel_sums(x):
    """Per channel: the sum of x's values, the sum of their squares, their count."""
    return x.sum(dim=(0, 2, 3)), (x * x).sum(dim=(0, 2, 3)), x.numel() / x.shape[1]


parts = [channel_sums(features[shard]) for shard in fixed]  # what each rank puts in
total, squares, count = (parts[0][i] + parts[1][i] for i in range(3))  # the all-reduce
global_mean = total / count
global_var = squares / count - global_mean**2
check(
    torch.allclose(global_mean, means["all 16"], atol=1e-5)
    and torch.allclose(global_var, stds["all 16"] ** 2, rtol=1e-4),  # within 0.01 % of it
    "from the ranks' sums: the mean and variance of all 16 images, channel by channel",
)

# %% [markdown]
# This is **synchronised batch norm** (SyncBN): in training mode every rank computes those
# three numbers per channel, one all-reduce adds them up, and every rank standardises its
# shard with the global batch's statistics. PyTorch's `nn.SyncBatchNorm` does it only on CUDA
# GPUs, Intel's XPU, Habana's HPU and accelerators that plug into PyTorch as a `privateuse1`
# backend. On the CPU and on Apple's MPS, its forward in training mode inside a process group
# raises a `ValueError`. So this lesson writes its own, in a file that the script will import:

# %%
# %%writefile runs/09_lesson/sync_bn.py
"""Batch norm with the statistics of all ranks' images: nn.SyncBatchNorm by hand."""

import torch
import torch.distributed as dist
from torch import nn


class AllReduceSum(torch.autograd.Function):  # an operation with its own backward (see below)
    """Add a tensor up over the ranks; in backward, add its gradient up too."""

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
    """nn.BatchNorm2d that, in training, uses the statistics of all ranks."""

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
        with torch.no_grad():  # the running variance is divided by n - 1
            self.running_mean.lerp_(mean, self.momentum)
            self.running_var.lerp_(var * n / (n - 1), self.momentum)
            self.num_batches_tracked += 1
        x_hat = (x - mean[:, None, None]) / torch.sqrt(var[:, None, None] + self.eps)
        return x_hat * self.weight[:, None, None] + self.bias[:, None, None]


def convert_to_sync_bn(model):
    """Swap every nn.BatchNorm2d of model for a SyncBatchNorm2d with the same state."""
    for name, layer in list(model.named_modules()):
        if isinstance(layer, nn.BatchNorm2d):
            sync = SyncBatchNorm2d(layer.num_features, layer.eps, layer.momentum)
            sync.load_state_dict(layer.state_dict())
            model.set_submodule(name, sync)
    return model


# %% [markdown]
# Line by line:
#
# - `AllReduceSum` is an all-reduce that autograd can go back through. Autograd cannot see
#   inside `dist.all_reduce`, so a `torch.autograd.Function` tells it: `forward` computes the
#   result; `backward` gets the gradient of the result and returns the gradient of the
#   input. `@staticmethod` means no `self`; `ctx` could carry values from `forward` to
#   `backward` (none here). It is called with `.apply`.
# - Its backward adds the gradients up too. Each rank's sums count in every rank's loss, so
#   their gradient must collect every rank's share.
# - `SyncBatchNorm2d` is `nn.BatchNorm2d` with a new `forward`. In training mode it packs the
#   three numbers per channel into one tensor, `stats`, for one all-reduce. Outside a process
#   group, as in this notebook, it is plain batch norm.
# - The running statistics, for evaluation mode: each training batch moves them 10% of the
#   way (`momentum=0.1`) to its mean and variance, that variance divided by n − 1, not n.
#   `lerp_` makes that move in place. `eps` (1e-5) keeps a zero variance from dividing by 0.
# - `convert_to_sync_bn`: `named_modules()` lists every layer inside the model by name, and
#   `set_submodule` puts another layer in its place.
#
# In one process, the converted CNN must compute what the CNN computes:

# %%
from sync_bn import convert_to_sync_bn  # the file just written

synced = convert_to_sync_bn(fresh_cnn())
print("the first batch norm is now:", type(synced[2][1]).__name__)
mine = gradients(synced, images, labels)
check(
    difference(mine, gradients(fresh_cnn(), images, labels)) < 1e-5,
    "in one process, SyncBatchNorm2d gives BatchNorm2d's gradients",
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
"""One DDP training step of the CNN: each rank learns from its shard of 16 images."""

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
    ddp = DDP(model)  # the copies start equal; backward() will average their gradients
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
dist.all_gather_object(everyone, found)  # every rank's `found`, in rank order
if rank == 0:
    torch.save(everyone, sys.argv[2])
dist.destroy_process_group()

# %% [markdown]
# What is new, line by line:
#
# - `sys.argv` holds the script's command-line arguments: `sys.argv[1]` is the file to start
#   from, `sys.argv[2]` the file for the results.
# - The sampler finds the rank and world size itself; one batch of 16 / 2 = 8 images is this
#   rank's shard.
# - `DDP(model)` wraps the model. It starts by sending rank 0's weights to every rank, so the
#   copies start equal. Its forward is the model's. During `backward()` it all-reduces the
#   gradients and divides by the world size: every rank's `p.grad` then holds the average.
# - The training step is 07's.
# - `dist.all_gather_object(everyone, found)` gathers Python objects: every rank puts in its
#   dict `found` and gets the list of all of them, in rank order, in `everyone`.
#
# The launch (the job prints nothing but its time):

# %% tags=["nbval-ignore-output"]
job = torchrun(RUN / "ddp_step.py", RUN / "start.pt", RUN / "ranks.pt", nproc=2)
print(f"the job took {job.seconds:.1f} s")
ranks = torch.load(RUN / "ranks.pt", weights_only=True)  # one dict per rank

# %% [markdown]
# To compare with, this process computes the gradient on all 16 images in training mode, and
# each rank's own gradient on its shard, before any all-reduce. (The printed digits vary
# between CPUs; the checks follow.)

# %% tags=["nbval-ignore-output"]
one_process = gradients(fresh_cnn(), images, labels)
own = [gradients(fresh_cnn(), images[shard], labels[shard]) for shard in fixed]
mean_of_own = {name: (own[0][name] + own[1][name]) / 2 for name in one_process}
plain_ddp, sync_ddp = ranks[0]["plain"]["grads"], ranks[0]["sync"]["grads"]
gaps = {
    "plain BN, DDP vs the ranks' own, averaged": difference(plain_ddp, mean_of_own),
    "plain BN, DDP vs one process on all 16": difference(plain_ddp, one_process),
    "SyncBN,   DDP vs one process on all 16": difference(sync_ddp, one_process),
}
for what, value in gaps.items():
    print(f"{what}: {value:.1e}")

# %%
check([r["shard"] for r in ranks] == fixed, "each rank trained on its shard: even, odd")
check(
    difference(plain_ddp, mean_of_own) < 1e-5,
    "plain batch norm: DDP's gradient is the mean of the ranks' own gradients",
)
check(
    difference(plain_ddp, one_process) > 0.05,
    "but that is not the gradient of all 16 images together",
)
check(
    difference(sync_ddp, one_process) < 1e-5,
    "SyncBN: one DDP step on 2 × 8 images has the gradient of one process on all 16",
)
same = [
    torch.equal(ranks[0][kind]["weights"][n], ranks[1][kind]["weights"][n])
    for kind in ("plain", "sync")
    for n in one_process
]
check(all(same), "both ranks hold exactly the same weights after the step")

# %% [markdown]
# The picture again for both runs, with one entry of the gradient: the first batch norm's
# weight for channel 0 (`2.1.weight`, entry 0). Each shows what DDP's all-reduce gave the
# ranks, and what one process computes on all 16 images:

# %%
entry = "2.1.weight"
for kind, title in [("plain", "own batch norm"), ("sync", "synchronised batch norm")]:
    draw_ddp(
        fixed,
        averaged=ranks[0][kind]["grads"][entry][0].item(),
        target=one_process[entry][0].item(),
        what=f"{entry}, entry 0",
        title=f"DDP with the CNN's {title}",
    )
    plt.show()

# %% [markdown]
# **What to notice:** with many images per rank, each shard's statistics come close to the
# global ones, and plain batch norm is fine. With a few images per device, as in detection
# and segmentation, synchronise it.
#
# Be a sceptic once: in `sync_bn.py`, delete the `dist.all_reduce(grad)` line, run that cell
# and the ones after it again, and watch the SyncBN check fail. (Put the line back after.)

# %% [markdown]
# ## On GPUs, and what the cookbook adds
#
# With GPUs, the script changes in a few lines: the backend is `nccl`; each rank uses the GPU
# numbered by its `LOCAL_RANK` (its rank on its machine, another of torchrun's environment
# variables), set with `torch.cuda.set_device` before `init_process_group`; the model goes to
# that GPU, and `DDP(model, device_ids=[local_rank])` wraps it.
# `nn.SyncBatchNorm.convert_sync_batchnorm(model)` swaps in PyTorch's synchronised batch
# norm. The swap itself runs anywhere:

# %%
converted = nn.SyncBatchNorm.convert_sync_batchnorm(fresh_cnn())
kinds = [type(m).__name__ for m in converted.modules()]
norms = [k for k in kinds if "BatchNorm" in k]
print("batch norm layers after the swap:", norms)
check(norms == ["SyncBatchNorm"] * 4, "all 4 batch norm layers are SyncBatchNorm now")


# %% [markdown]
# Speed is the point of DDP on GPUs, where each rank has a device of its own. On a CPU, two
# one-thread processes on two cores made an epoch faster in the cookbook's measurement, but not
# twice as fast: the all-reduce at every step costs time too
# ([measured in the cookbook](cookbook/09_ddp_syncbn_recipes.ipynb#Measure-what-two-processes-buy)).
# Against one process that already uses every core, measure before you expect a gain.
# What carries over is the arithmetic, checked above. For real training, start from the
# cookbook's
# [DDP training script](cookbook/09_ddp_syncbn_recipes.ipynb#Train-CIFAR2-with-DDP,-checkpoint-on-rank-0,-and-resume),
# with evaluation across ranks and checkpoints on rank 0. Its
# [other recipes](cookbook/09_ddp_syncbn_recipes.ipynb) cover the learning rate for a larger
# global batch, `no_sync` and `Join`, the everyday failures and several machines, and
# [FSDP2](cookbook/09_ddp_syncbn_big_models_recipes.ipynb#Shard-a-model-with-FSDP2) shards a model that does not fit.

# %% [markdown]
# ## Exercises

# %% [markdown]
# ### Exercise 1 · Ranks with shards of different sizes
#
# Without padding, ranks can hold different numbers of images. Write `combine(grads, sizes)`:
# `grads` lists each rank's own gradient (a dict {parameter name: gradient}, like `whole`),
# `sizes` their numbers of images. It returns the gradient on all their images together, a
# dict with the same names. The check makes its own ranks with a small model: four ranks with
# 5, 3, 9 and 1 samples, then two with 2 and 12.
#
# <details><summary>Hint 1</summary>
#
# Each rank's loss is the mean over its own images. Write the mean over all the images in
# terms of the ranks' means: does a rank with 1 image count as much as a rank with 9?
# </details>
#
# <details><summary>Hint 2</summary>
#
# The mean over all N images is their sum divided by N, and a rank's sum is its mean times its
# number of images. A dict comprehension over the names in `grads[0]` does that for every
# parameter.
# </details>

# %%
def combine(grads, sizes):
    """The gradient on all the ranks' images, from their own gradients and sizes."""
    combined = ...  # {parameter name: gradient}
    return combined


# %%
lesson09.exercise_1(combine)


# %% [markdown]
# #### Solution

# %% tags=["solution"]
# Solution: open it once you have tried. It uses its own names, so your answer stays as it is.
def solution_combine(grads, sizes):
    return {
        name: sum(n * g[name] for n, g in zip(sizes, grads, strict=True)) / sum(sizes)
        for name in grads[0]
    }


lesson09.exercise_1(solution_combine)

# %% [markdown]
# ## Summary
#
# - Data parallel training runs one process (rank) per device, each with a copy of the model
#   and a shard of every batch; an all-reduce averages their gradients, and all take the same
#   step.
# - The average of the ranks' gradients is the gradient of the global batch, as long as each
#   image's loss depends on that image alone.
# - A DDP program is a script that every rank runs: `init_process_group`, a
#   `DistributedSampler`, `DDP(model)`, then 07's training step; `torchrun` launches it.
# - In training mode, batch norm sees only its rank's shard. Synchronised batch norm adds up
#   each channel's sum, sum of squares and count over the ranks, and makes the DDP step equal
#   one process's step on the global batch (`nn.SyncBatchNorm` on CUDA, XPU and HPU devices).
#
# Next: [10 · Speedups, measured: find what the training step waits for](10_speedups.ipynb).
