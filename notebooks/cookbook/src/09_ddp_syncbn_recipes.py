# %% [markdown]
# # 09 · DDP that really runs: recipes
#
# [![Open In Colab](https://colab.research.google.com/assets/colab-badge.svg)](https://colab.research.google.com/github/pytorch-cookbook/pytorch-cookbook/blob/main/notebooks/cookbook/09_ddp_syncbn_recipes.ipynb)
#
# **The cookbook of chapter 09.** New to the topic? [The lesson](../09_ddp_syncbn.ipynb) teaches it
# step by step on the course's running example. Here each recipe answers one task; the
# [recipe index](../RECIPES.md) and the [error index](../ERRORS.md) find the one you need. Sync
# BatchNorm, FSDP2 and models split across devices continue in
# [Sync BN, FSDP2 and split models](09_ddp_syncbn_big_models_recipes.ipynb).
#
# Distributed data parallel training (DDP) runs one process per device, each with a full copy of
# the model and its own share of every batch, and averages the gradients between them. After this
# notebook you can write a DDP training script, launch it with `torchrun` from a cell (on CPU with
# the `gloo` backend here, with `nccl` on GPUs), shard data with `DistributedSampler`, evaluate and
# checkpoint correctly across ranks, scale the learning rate with the global batch, and fix the
# failures everyone meets (unused parameters, a hang, a failing rank). The central claim is
# **proved in numbers** against one process: one DDP step equals one step on the big batch.
#
# **Prerequisites:** [03](../03_autograd.ipynb) (autograd), [05](../05_datasets_dataloaders.ipynb)
# (CIFAR2, samplers), [07](../07_training_loop.ipynb) (training loop, checkpoints).
#
# **Run time:** about 50 s on a 2-core CPU · GPU optional.

# %%
import sys

if (
    "google.colab" in sys.modules
):  # Colab: install the course's helpers and what the notebooks import
    import subprocess

    spec = "pytorch-cookbook[notebooks] @ git+https://github.com/pytorch-cookbook/pytorch-cookbook"
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", spec], check=True)

import datetime
import inspect
import json
import shutil
from pathlib import Path

import pandas as pd
import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn.functional as F
from torch import nn
from torch.nn.modules.utils import consume_prefix_in_state_dict_if_present
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, DistributedSampler, TensorDataset

from helpers import dist as launch
from helpers import toy
from helpers.check import check, expect_error
from helpers.env import cpu_name, setup
from helpers.exercises import ch09
from helpers.images import channel_stats, load_cifar2
from helpers.models import small_cnn
from helpers.processes import free_port, leftovers
from helpers.train import evaluate

device = setup(seed=0)
RUN = Path("runs/09_ddp")  # the scripts this notebook writes, and what they save
shutil.rmtree(RUN, ignore_errors=True)
RUN.mkdir(parents=True)

# %% [markdown]
# ## Choose DDP over DataParallel
#
# Old code parallelises with `nn.DataParallel(model)`: **one** process scatters each batch over
# the GPUs, copies the model to every GPU on every step, gathers the outputs back on GPU 0 and
# computes the loss there. The Python threads that drive the GPUs share one GIL, GPU 0 holds more
# memory than the others, and it cannot span machines. PyTorch's documentation recommends DDP even
# on a single machine.
#
# DDP instead starts **one process per device**. Each process (a *rank*, numbered 0 to
# *world size* − 1; its *local rank* is its number on its own machine) builds the same model,
# DDP broadcasts rank 0's weights so that all replicas start equal, and each rank runs forward and
# backward on its own part of the batch. During backward, DDP **all-reduces** the gradients in
# buckets (about 25 MiB each, the first 1 MiB) as soon as a bucket is ready, so communication
# overlaps with the rest of backward; after it, every rank holds the same averaged gradients and
# takes the same optimizer step. The ranks form a *process group*, created by
# `dist.init_process_group(backend)`: `gloo` for CPU tensors, `nccl` for CUDA tensors.
#
# On a machine without GPUs, DataParallel does nothing at all: it has no devices and just calls
# the module.

# %%
print("DataParallel devices here:", nn.DataParallel(nn.Linear(2, 2)).device_ids)


# %% [markdown]
# ### Reach the wrapped model's methods and attributes: `.module`
#
# Both wrappers keep your model as their `.module` and forward only `forward` to it: a method or
# attribute of your own class (an `embed`, a `num_classes`) is not found on the wrapper. Call it
# on `.module`. The same prefix is why a wrapped model's `state_dict` keys start with `module.`
# ([04](04_modules_recipes.ipynb#Load-a-checkpoint-saved-from-DataParallel-or-DDP,-on-any-device) loads
# them into a plain model); a `torch.compile`d model keeps the original as `._orig_mod`.

# %%
class Embedder(nn.Module):
    def __init__(self):
        super().__init__()
        self.head = nn.Linear(4, 2)

    def embed(self, x: torch.Tensor) -> torch.Tensor:
        return x * 2


plain = Embedder()
wrapped_model = nn.DataParallel(plain)  # DistributedDataParallel wraps the same way
with expect_error(AttributeError):
    wrapped_model.embed(torch.ones(1, 4))
print("wrapped_model.module.embed:", wrapped_model.module.embed(torch.ones(1, 4)).tolist())
print("keys:", next(iter(wrapped_model.state_dict())), "vs", next(iter(plain.state_dict())))
check(wrapped_model.module is plain, "the wrapper holds the very model it was given, as .module")

# %% [markdown]
# ## Launch a DDP script with `torchrun` from a cell
#
# A DDP program is a script that every rank runs. `torchrun --standalone --nproc-per-node 2
# script.py` starts two processes on this machine, gives each the environment variables
# `RANK`, `LOCAL_RANK`, `WORLD_SIZE`, `MASTER_ADDR` and `MASTER_PORT` (a free port on localhost),
# so that `init_process_group` needs no arguments but the backend, and watches them: when one
# fails, it stops the others. It replaced `python -m torch.distributed.launch`, which is deprecated
# and passed the local rank as a command-line argument
# ([below](#Fix-the-everyday-DDP-failures)).
#
# First the toy model and the one fixed global batch of 16 samples that the scripts and this
# notebook share. Both come from the course's `helpers.toy` module, so that every rank, and the
# other notebook of this chapter, builds exactly the same ones; a script started by `torchrun`
# imports them like any installed module. The batch is drawn from its own seeded generator:

# %%
print(inspect.getsource(toy.global_batch))
print(toy.toy_model(seed=0))

# %% [markdown]
# The DDP script. Its first part is all a DDP program needs: each rank starts from a
# **different** random model (on purpose), wraps it in `DistributedDataParallel`, and takes one
# SGD step on its half of the global batch. Its second part, gradient accumulation and uneven
# inputs, is explained in [its own section](#Accumulate-gradients-with-no_sync-and-survive-uneven-inputs-with-Join)
# (it rides along in this job because every `torchrun` launch costs seconds). Rank 0 saves
# what happened.

# %%
# %%writefile runs/09_ddp/one_step.py
"""One DDP step on a fixed global batch split across ranks, then accumulation and uneven inputs."""

import datetime
import gc
import sys

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch.distributed.algorithms.ddp_comm_hooks import default_hooks
from torch.distributed.algorithms.join import Join
from torch.nn.parallel import DistributedDataParallel as DDP
from helpers.toy import global_batch, toy_model

# Part 1: one DDP step.
dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=30))  # reads torchrun's env
rank, world = dist.get_rank(), dist.get_world_size()

model = toy_model(seed=rank)  # a different start on each rank, on purpose
before = model[0].weight.sum().item()
ddp = DDP(model)  # broadcasts rank 0's parameters and buffers to every rank
after = model[0].weight.sum().item()

x, y = global_batch(16)
x_mine, y_mine = x.chunk(world)[rank], y.chunk(world)[rank]  # this rank's share
optimizer = torch.optim.SGD(ddp.parameters(), lr=0.5)
F.cross_entropy(ddp(x_mine), y_mine).backward()  # the all-reduce runs during backward
grads = {n: p.grad.clone() for n, p in model.named_parameters()}
optimizer.step()
one_step = {k: v.clone() for k, v in model.state_dict().items()}

# Part 2: count the all-reduces with a communication hook, which DDP calls for each bucket.
all_reduces = []


def counted_allreduce(state, bucket):
    all_reduces.append(bucket.index())
    return default_hooks.allreduce_hook(state, bucket)  # DDP's default: average over ranks


ddp.register_comm_hook(None, counted_allreduce)

# Gradient accumulation over 4 micro-batches: all-reduce after each, or only after the last.
pieces = list(zip(x_mine.chunk(4), y_mine.chunk(4), strict=True))
accumulated = {}
for skip_sync in (False, True):
    optimizer.zero_grad()
    all_reduces.clear()
    for i, (xb, yb) in enumerate(pieces):
        if skip_sync and i < len(pieces) - 1:
            with ddp.no_sync():  # gradients add up locally, no communication
                (F.cross_entropy(ddp(xb), yb) / len(pieces)).backward()
        else:
            (F.cross_entropy(ddp(xb), yb) / len(pieces)).backward()
    accumulated[skip_sync] = {
        "all_reduces": len(all_reduces),
        "grads": {n: p.grad.clone() for n, p in model.named_parameters()},
    }

# Uneven inputs: rank 0 has 3 batches, the others 2. Without Join, rank 0's third all-reduce
# would be matched with whatever collective rank 1 calls next: an error, a hang, or worse.
batches = 3 if rank == 0 else 2
all_reduces.clear()
with Join([ddp]):  # ranks that ran out shadow the all-reduces of those still training
    for _ in range(batches):
        F.cross_entropy(ddp(x_mine), y_mine).backward()

starts, done = [None] * world, [None] * world
dist.all_gather_object(starts, (before, after))  # every rank's weight sums, on every rank
dist.all_gather_object(done, (batches, len(all_reduces)))  # backward passes, all-reduces
if rank == 0:
    saved = {
        "starts": starts,
        "grads": grads,
        "one_step": one_step,
        "ddp_keys": list(ddp.state_dict()),
    }
    torch.save({**saved, "accumulated": accumulated, "join_batches": done}, sys.argv[1])
    print(f"saved {sys.argv[1]}")
del ddp  # shut down cleanly: free what uses the process group, then destroy it
gc.collect()
dist.destroy_process_group()

# %% [markdown]
# `helpers.dist.torchrun` runs `torchrun --standalone --nproc-per-node 2 runs/09_ddp/one_step.py
# runs/09_ddp/one_step.pt` (as `python -m torch.distributed.run`, so it uses this kernel's
# Python), prints every line of every rank as it comes, prefixed with the rank, and returns when
# all ranks have finished; when a rank fails it raises
# ([below](#Make-a-failing-rank-end-the-job-in-seconds)). Each rank uses one thread
# (`OMP_NUM_THREADS=1`, torchrun's default too). The script ends the way every script here does:
# it drops what uses the process group (the DDP model) before `dist.destroy_process_group()`,
# so that nothing of the job is left to be torn down while the interpreter exits.

# %% tags=["nbval-ignore-output"]
job = launch.torchrun(RUN / "one_step.py", RUN / "one_step.pt", nproc=2)
print(f"the job finished in {job.seconds:.1f} s")
ddp_run = torch.load(RUN / "one_step.pt", weights_only=True)

# %% [markdown]
# Each rank recorded the sum of its first weight matrix before and after wrapping the model in
# DDP:

# %%
for rank, (before, after) in enumerate(ddp_run["starts"]):
    print(f"rank {rank}: weight sum {before:+.4f} before DDP, {after:+.4f} after")
check(
    len(ddp_run["starts"]) == 2 and ddp_run["starts"][1][1] == ddp_run["starts"][0][0],
    "both ranks ran, and DDP started rank 1 from rank 0's weights",
)

# %% [markdown]
# ## Prove that DDP equals one big batch
#
# In this process, take the same model (seed 0, rank 0's) and one SGD step on the
# **whole** global batch of 16. With a loss that averages over the batch, the gradient of the
# whole batch is the mean of the gradients of its two halves, and DDP's all-reduce computes
# exactly that mean: so the weights after one DDP step on 2 × 8 samples must equal the weights
# after one step on 16, up to float rounding (the sums are done in a different order).

# %%
x, y = toy.global_batch(16)
big_batch = toy.toy_model(seed=0)
half_grads = []
for xs, ys in zip(x.chunk(2), y.chunk(2), strict=True):  # each rank, before the all-reduce
    big_batch.zero_grad()
    F.cross_entropy(big_batch(xs), ys).backward()
    half_grads.append({n: p.grad.clone() for n, p in big_batch.named_parameters()})
big_batch.zero_grad()
F.cross_entropy(big_batch(x), y).backward()  # one process, the whole batch
full_grads = {n: p.grad.clone() for n, p in big_batch.named_parameters()}
torch.optim.SGD(big_batch.parameters(), lr=0.5).step()


def max_diff(a: dict, b: dict) -> float:
    """The largest absolute difference between two dicts of tensors with the same keys."""
    return max((a[k] - b[k]).abs().max().item() for k in a)


# %% [markdown]
# The differences (their last digits depend on the CPU, so this output is not compared; the
# check below is):

# %% tags=["nbval-ignore-output"]
averaged = {n: (half_grads[0][n] + half_grads[1][n]) / 2 for n in full_grads}
proof_1 = {
    "mean of the halves' gradients vs whole batch": max_diff(averaged, full_grads),
    "DDP's gradient vs whole batch": max_diff(ddp_run["grads"], full_grads),
    "DDP's weights after 1 step vs whole batch": max_diff(
        ddp_run["one_step"], big_batch.state_dict()
    ),
    "one half's gradient vs whole batch": max_diff(half_grads[0], full_grads),
}
for what, value in proof_1.items():
    print(f"{what:>46}: max |difference| {value:.1e}")

# %%
TOL = 1e-6  # float32 rounding of sums of 8-16 terms stays far below this
check(
    max(list(proof_1.values())[:3]) < TOL,
    f"one DDP step on 2 × 8 samples equals one step on 16 (max |diff| < {TOL:g})",
    measured=f"{max(list(proof_1.values())[:3]):.1e}",
)
check(proof_1["one half's gradient vs whole batch"] > 1e3 * TOL, "without averaging it would not")

# %% [markdown]
# What to notice: the two ranks started from different weights and DDP overwrote rank 1's with
# rank 0's; the DDP weights match the one-process step within the check's 1e-6 (the exact
# difference, printed above, is float32 rounding and differs by CPU), while a single half's
# gradient is over 1,000 times further off. So a DDP run with per-rank batch B is one run with batch world size × B:
# the learning rate to use is the one for that global batch ([below](#Scale-the-learning-rate-with-the-global-batch)).
# Layers that compute statistics over the batch (BatchNorm) are the exception: each rank only sees
# its share ([sync BN](09_ddp_syncbn_big_models_recipes.ipynb#See-why-BatchNorm-goes-wrong-with-small-per-device-batches)).

# %% [markdown]
# ## Give each rank its own shard with DistributedSampler
#
# In a DDP script, `DistributedSampler(dataset)` replaces `shuffle=True`: every rank draws the
# **same** permutation (seeded by `seed + epoch`) and takes every `world`-th index from its rank
# on, so the shards are disjoint. It reads rank and world size from the process group; here they
# are passed by hand, to look at all ranks from one process.

# %%
numbers = TensorDataset(torch.arange(10))


def shards(epoch: int | None, world: int = 2, **kwargs) -> list[list[int]]:
    """The indices each rank's sampler yields (``epoch=None``: set_epoch never called)."""
    found = []
    for rank in range(world):
        sampler = DistributedSampler(numbers, num_replicas=world, rank=rank, seed=0, **kwargs)
        if epoch is not None:
            sampler.set_epoch(epoch)
        found.append(list(sampler))
    return found


for epoch in (0, 1):
    print(f"epoch {epoch}: with set_epoch {shards(epoch)} · without {shards(None)}")
mine = shards(0)
check(
    set(mine[0]).isdisjoint(mine[1]) and sorted(mine[0] + mine[1]) == list(range(10)),
    "the two shards are disjoint and cover the data set",
)
check(shards(0) != shards(1), "set_epoch(epoch) gives each epoch a new order")

# %% [markdown]
# Without `sampler.set_epoch(epoch)` at the start of every epoch, every epoch repeats the first
# one's order. When the data set does not divide evenly, the sampler **pads** by repeating
# indices so that every rank gets the same number of samples (ranks must run the same number of
# steps), or `drop_last=True` drops the tail:

# %%
numbers = TensorDataset(torch.arange(11))
print("11 samples, 2 ranks, padded:   ", shards(0))
print("11 samples, 2 ranks, drop_last:", shards(0, drop_last=True))

# %% [markdown]
# Padding is harmless in training but wrong in evaluation: a repeated test image is counted
# twice. The training script below shards the test set with `Subset(test, range(rank, N, world))`
# instead (no padding) and sums the correct counts of all ranks, and it shows the difference on
# an odd number of test images.

# %% [markdown]
# ## Train CIFAR2 with DDP, checkpoint on rank 0, and resume
#
# A complete DDP training script for chapter 05's CNN. What it does differently from a
# one-process script (07):
#
# - `DistributedSampler` + `set_epoch`, and a per-rank batch of `global batch / world`, so that
#   one and two processes see the **same global batches** in the same order;
# - the test set sharded without padding; correct and total counts summed over ranks with
#   `all_reduce`, so the accuracy is over every test image once. For comparison it also
#   evaluates once with a `DistributedSampler`, the pitfall;
# - BatchNorm: at the start of every training forward, DDP broadcasts rank 0's buffers (the
#   running statistics) to the other ranks (`forward_sync_buffers=True`, the default), but each
#   rank then updates its own with its own batch. Before evaluating, the script broadcasts rank
#   0's itself, so that every rank evaluates the model the checkpoint holds;
# - it evaluates `model`, the module inside DDP, not `ddp`: DDP's forward would run that buffer
#   broadcast (a collective) at the first evaluation batch, which hangs when one rank's shard
#   has fewer batches than another's;
# - only rank 0 writes the checkpoint (atomically, as in 07), then `barrier()`: no rank reads it
#   before it is complete. It saves `model.state_dict()`, not `ddp.state_dict()` (see the
#   `module.` prefix below), so it loads into any number of processes;
# - resuming: every rank loads the checkpoint with `map_location=` its own device, and the
#   script evaluates the loaded weights before training on;
# - the training loss is summed on the device, read once per epoch: a `.item()` every step would
#   make the CPU wait for the GPU at every step;
# - with `--device cuda`: one GPU per rank (`LOCAL_RANK`), set as the current device before the
#   process group is created (`device_id=` binds the group to it), `nccl`,
#   `convert_sync_batchnorm` ([sync BN](09_ddp_syncbn_big_models_recipes.ipynb#See-why-BatchNorm-goes-wrong-with-small-per-device-batches)),
#   and mixed precision with `torch.autocast` + `GradScaler` (DDP
#   needs nothing special for it).

# %%
# %%writefile runs/09_ddp/train_ddp.py
"""Train chapter 05's CIFAR2 CNN with DDP: torchrun starts one process per device."""

import argparse
import datetime
import gc
import json
import os
import time
from pathlib import Path

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch import nn
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, DistributedSampler, Subset, TensorDataset

from helpers.checkpoint import atomic_save
from helpers.images import channel_stats, load_cifar2
from helpers.models import small_cnn

parser = argparse.ArgumentParser()
parser.add_argument("--device", choices=["cpu", "cuda"], default="cpu", help="cuda: 1 GPU/rank")
parser.add_argument("--epochs", type=int, default=1, help="train up to this epoch")
parser.add_argument("--batch-size", type=int, default=64, help="global: split across ranks")
parser.add_argument("--lr", type=float, default=0.05)
parser.add_argument("--train-images", type=int, help="a fixed random subset (default: all)")
parser.add_argument("--test-images", type=int, help="the first N test images (default: all)")
parser.add_argument("--checkpoint", type=Path, required=True)
parser.add_argument("--resume", action="store_true", help="continue from --checkpoint")
parser.add_argument("--report", type=Path, required=True, help="rank 0 writes its JSON here")
args = parser.parse_args()

# torchrun sets RANK, LOCAL_RANK, WORLD_SIZE, MASTER_ADDR and MASTER_PORT for each process.
cuda = args.device == "cuda"
device = torch.device("cuda", int(os.environ["LOCAL_RANK"])) if cuda else torch.device("cpu")
if cuda:
    torch.cuda.set_device(device)  # before the process group: nccl uses the current device
dist.init_process_group(
    "nccl" if cuda else "gloo",
    timeout=datetime.timedelta(seconds=60),
    device_id=device if cuda else None,
)
rank, world = dist.get_rank(), dist.get_world_size()
torch.manual_seed(0)  # the same initial weights everywhere (DDP would broadcast rank 0's anyway)

images, labels, _ = load_cifar2("train")
subset = torch.randperm(len(labels), generator=torch.Generator().manual_seed(0))
train = TensorDataset(images[subset[: args.train_images]], labels[subset[: args.train_images]])
test_images, test_labels, _ = load_cifar2("test")
test = TensorDataset(test_images[: args.test_images], test_labels[: args.test_images])
sampler = DistributedSampler(train, shuffle=True, seed=0)  # rank and world from the group
loader = DataLoader(train, batch_size=args.batch_size // world, sampler=sampler)
shard = DataLoader(Subset(test, range(rank, len(test), world)), batch_size=500)  # no padding
padded = DataLoader(test, batch_size=500, sampler=DistributedSampler(test, shuffle=False))

model = small_cnn(*channel_stats(images)).to(device)
if cuda and world > 1:
    model = nn.SyncBatchNorm.convert_sync_batchnorm(model)
optimizer = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9)
start = 1
if args.resume:  # every rank reads the file rank 0 wrote, onto its own device
    state = torch.load(args.checkpoint, map_location=device, weights_only=True)
    model.load_state_dict(state["model"])
    optimizer.load_state_dict(state["optimizer"])
    start = state["epoch"] + 1
ddp = DDP(model, device_ids=[device.index] if cuda else None)
scaler = torch.amp.GradScaler(device.type, enabled=cuda)  # mixed precision on CUDA only
if args.resume:
    scaler.load_state_dict(state["scaler"])  # the loss scale it had reached


def summed(*values: float) -> list[float]:
    """Return each value summed over all ranks."""
    t = torch.tensor(values, dtype=torch.float64, device=device)
    dist.all_reduce(t)
    return t.tolist()


def evaluate(test_loader: DataLoader) -> tuple[float, int]:
    """Return the accuracy of rank 0's model over every rank's batches, and the images counted."""
    for buffer in model.buffers():  # rank 0's BN statistics, as saved in the checkpoint
        dist.broadcast(buffer, src=0)
    model.eval()  # the module itself: no collective of DDP's inside the loop
    correct, total = 0, 0
    with torch.inference_mode():
        for x, y in test_loader:
            x, y = x.to(device), y.to(device)
            correct += (model(x).argmax(1) == y).sum().item()
            total += len(y)
    correct, total = summed(correct, total)
    return correct / total, int(total)


report = {"world": world, "per_rank_batch": args.batch_size // world, "epochs": []}
if args.resume:
    report["resumed_accuracy"] = evaluate(shard)[0]  # the loaded weights, before training on
for epoch in range(start, args.epochs + 1):
    sampler.set_epoch(epoch)  # a new shuffle each epoch, the same on every rank
    ddp.train()
    dist.barrier()
    began = time.perf_counter()
    loss_sum, seen, step_seconds = torch.zeros((), device=device), 0, []
    for x, y in loader:
        step_began = time.perf_counter()
        x, y = x.to(device), y.to(device)
        with torch.autocast(device.type, dtype=torch.float16, enabled=cuda):
            loss = F.cross_entropy(ddp(x), y)
        optimizer.zero_grad()
        scaler.scale(loss).backward()  # gradients are averaged across ranks here
        scaler.step(optimizer)
        scaler.update()
        loss_sum += loss.detach() * len(y)  # stays on the device: no wait for the GPU
        seen += len(y)
        step_seconds.append(time.perf_counter() - step_began)
    dist.barrier()
    seconds = time.perf_counter() - began
    loss_sum, seen = summed(loss_sum.item(), seen)
    accuracy, counted = evaluate(shard)
    report["epochs"].append(
        {
            "epoch": epoch,
            "train_loss": loss_sum / seen,
            "train_images": int(seen),
            "seconds": seconds,
            "median_step_ms": 1000 * sorted(step_seconds)[len(step_seconds) // 2],
            "test_accuracy": accuracy,
            "test_images": counted,
        }
    )
    if rank == 0:
        print(
            f"epoch {epoch}: loss {loss_sum / seen:.4f} · test accuracy {accuracy:.4f} "
            f"on {counted} images · {seconds:.1f} s on {world} process(es)"
        )
        state = {
            "model": model.state_dict(),
            "optimizer": optimizer.state_dict(),
            "scaler": scaler.state_dict(),
            "epoch": epoch,
        }
        atomic_save(state, args.checkpoint)  # rank 0 only: one writer, never a torn file
    dist.barrier()  # nobody reads the checkpoint before it is complete
if world > 1:  # the pitfall, once: DistributedSampler pads the shards to equal length
    report["padded_accuracy"], report["padded_images"] = evaluate(padded)

if rank == 0:
    args.report.write_text(json.dumps(report, indent=1))
del ddp, model, optimizer  # shut down cleanly, as in one_step.py
gc.collect()
dist.destroy_process_group()

# %% [markdown]
# Epoch 1 on **one** process, then resume from its checkpoint for epoch 2 on **two**: the
# checkpoint does not depend on the number of processes. Both runs use the same device, chosen
# once here: one GPU per rank when there are two, else the CPU (a single GPU cannot serve two
# `nccl` ranks, and a resumed run should not change device and precision on the way). To keep
# the notebook quick, each epoch covers a fixed random 3000 of the 10 000 training images, and
# the evaluation takes the first 1999 test images: an odd number, which 2 ranks cannot split
# evenly.

# %% tags=["nbval-ignore-output"]
ddp_device = "cuda" if torch.cuda.device_count() >= 2 else "cpu"
n_test = 1999
checkpoint = RUN / "cifar2.pt"
common = ["--device", ddp_device, "--checkpoint", checkpoint, "--batch-size", 64, "--lr", 0.05]
common += ["--train-images", 3000, "--test-images", n_test]
launch.torchrun(RUN / "train_ddp.py", *common, "--epochs", 1, "--report", RUN / "one.json", nproc=1)
launch.torchrun(
    RUN / "train_ddp.py", *common, "--epochs", 2, "--resume", "--report", RUN / "two.json", nproc=2
)
runs = {n: json.loads((RUN / f"{name}.json").read_text()) for n, name in [(1, "one"), (2, "two")]}
first, second = runs[1]["epochs"][0], runs[2]["epochs"][0]
print(f"the 2-process run, before training on: test accuracy {runs[2]['resumed_accuracy']:.4f}")
padded_images = runs[2]["padded_images"]
print(f"evaluated with DistributedSampler: {padded_images} images counted")

# %% [markdown]
# Check the run the way a sceptic would: load the final checkpoint in this process, evaluate it
# on the same test images with chapter 07's `evaluate`, and compare with the accuracy the two
# ranks gathered.

# %%
test_images, test_labels, _ = load_cifar2("test")
train_images = load_cifar2("train")[0]
trained = small_cnn(*channel_stats(train_images))
state = torch.load(checkpoint, map_location="cpu", weights_only=True)
trained.load_state_dict(state["model"])
test_set = TensorDataset(test_images[:n_test], test_labels[:n_test])
_, accuracy_here = evaluate(trained, DataLoader(test_set, batch_size=500))

# %%
# Accuracies computed in different batches may differ by an image that sits on the decision
# boundary. On GPUs more: cuDNN's float32 convolutions use TF32 by default
# (torch.backends.cudnn.conv.fp32_precision == "tf32"), which rounds differently from the CPU.
agree = (1 if ddp_device == "cpu" else 5) / n_test
check(
    state["epoch"] == 2
    and second["epoch"] == 2
    and abs(runs[2]["resumed_accuracy"] - first["test_accuracy"]) <= agree,
    "the 2-process run resumed from the 1-process checkpoint: before training on, it scored "
    "what epoch 1 ended with",
    measured=f"{runs[2]['resumed_accuracy']:.4f} vs {first['test_accuracy']:.4f}",
)
check(
    second["train_loss"] < 0.8 * first["train_loss"],
    "epoch 2's training loss is under 80% of epoch 1's: training went on, it did not restart",
    measured=f"{second['train_loss']:.4f} vs {first['train_loss']:.4f}",
)
check(
    all(e["test_images"] == n_test for r in runs.values() for e in r["epochs"]),
    f"each evaluation on the unpadded shards counted the {n_test} test images once",
)
check(
    padded_images == n_test + 1,
    f"DistributedSampler padded 2 × {(n_test + 1) // 2} = {n_test + 1}: one image counted twice",
)
check(
    abs(second["test_accuracy"] - accuracy_here) <= agree,
    "the accuracy gathered across ranks equals one process evaluating the checkpoint",
    measured=f"{second['test_accuracy']:.4f} vs {accuracy_here:.4f}",
)
check(
    second["test_accuracy"] >= 0.75,
    "after 2 epochs the model classifies ≥ 75% correctly (chance: 50%)",
    measured=f"{second['test_accuracy']:.4f}",
)

# %% [markdown]
# **The `module.` prefix.** `DistributedDataParallel` (like `DataParallel`) holds the model as
# its attribute `module`, so `ddp.state_dict()` names every entry `module.…`. A checkpoint saved
# that way does not load into a plain model. Save `ddp.module.state_dict()` (the script keeps a
# reference, `model`), or strip the prefix when loading an old file:

# %%
print("keys of ddp.state_dict():", ddp_run["ddp_keys"][:2])
old_style = {f"module.{k}": v for k, v in trained.state_dict().items()}
consume_prefix_in_state_dict_if_present(old_style, "module.")
print("after consume_prefix_in_state_dict_if_present:", list(old_style)[:2])
print(trained.load_state_dict(old_style))

# %% [markdown]
# ## Measure what two processes buy
#
# The same epoch of work (the same images in the same global batches of 64), timed inside the
# script between two barriers, with each rank using one thread:

# %% tags=["nbval-ignore-output"]
timing = pd.DataFrame(
    [
        {
            "processes": n,
            "epoch": e["epoch"],
            "images": e["train_images"],
            "seconds": round(e["seconds"], 2),
            "median step (ms)": round(e["median_step_ms"], 1),
        }
        for n, r in runs.items()
        for e in r["epochs"]
    ]
)
timing["speed-up"] = (timing.seconds[0] / timing.seconds).round(2)
where = cpu_name() if ddp_device == "cpu" else f"{torch.cuda.get_device_name()}, one per rank"
print(f"measured on {where}")
timing

# %%
check(list(timing.images) == [3000, 3000], "both epochs trained on the same 3000 images, each once")

# %% [markdown]
# What to notice (compare with the table, made on the machine named above; the median step is
# less disturbed by a busy moment than the epoch total): on a CPU, two one-thread processes on 2 cores make
# an epoch faster, but not twice as fast. Each step waits for the all-reduce, the two processes share the memory
# bandwidth and whatever else runs on the machine, and a 4-layer CNN on 32 samples per rank leaves
# little work to overlap with communication; on a busy machine two processes can even be slower
# than one, so no speed-up is checked here. On GPUs the
# picture changes: each rank has a whole device, `nccl` all-reduces over NVLink or PCIe at far
# higher bandwidth, and with a big enough model per-step time stays almost flat as GPUs are
# added, so throughput scales nearly linearly.

# %% [markdown]
# ## Accumulate gradients with no_sync and survive uneven inputs with Join
#
# Accumulating 4 micro-batches before a step would all-reduce 4 times; inside
# `with ddp.no_sync():` backward only adds gradients locally, and the all-reduce after the last
# micro-batch averages the sum. The [first script](#Launch-a-DDP-script-with-torchrun-from-a-cell)
# counted the all-reduces with a *communication hook* (a function DDP calls for each gradient
# bucket instead of its own all-reduce; this small model fits one bucket) and kept the gradients
# both ways. Then it gave rank 0 three batches and rank 1 two, inside `Join`:

# %%
accumulated = ddp_run["accumulated"]
for skip_sync, result in accumulated.items():
    print(
        f"no_sync on the first 3 micro-batches: {skip_sync!s:5} → {result['all_reduces']} "
        "all-reduce(s)"
    )
same = max_diff(accumulated[True]["grads"], accumulated[False]["grads"])
print(f"max |difference| between their gradients: {'< 1e-6' if same < 1e-6 else f'{same:.1e}'}")
for rank, (batches, reduces) in enumerate(ddp_run["join_batches"]):
    print(f"rank {rank} inside Join: {batches} backward passes, {reduces} gradient all-reduces")

# %%
check(
    accumulated[True]["all_reduces"] == 1 and accumulated[False]["all_reduces"] == 4,
    "no_sync saves 3 of the 4 all-reduces",
)
check(same < TOL, "and gives the same gradients")
check(
    ddp_run["join_batches"] == [(3, 3), (2, 3)],
    "rank 1 ran out after 2 batches and Join made it take part in rank 0's third all-reduce",
)

# %% [markdown]
# `Join` is the fix for ranks with different numbers of batches (a sampler without padding, an
# iterable data set): a rank that has run out keeps answering the others' collectives (a
# *shadow* all-reduce of zero gradients, counted above) until all are done.
# Without it, rank 0's third all-reduce meets whatever collective rank 1 calls next: at best an
# error or the process-group timeout, at worst a silent mismatch. Three things to know before
# using it:
#
# - Join only shadows DDP's own collectives. When the forward pass runs others, such as
#   `nn.SyncBatchNorm`'s, use `Join([ddp], throw_on_early_termination=True)` instead: every rank
#   raises as soon as one runs out, and the training loop catches that and stops.
# - By default (`divide_by_initial_world_size=True`) the gradients of the steps taken after a
#   rank joined are still divided by the full world size, so each remaining sample weighs what it
#   always did; `False` divides by the number of ranks still training.
# - It is not free: while Join is active, every iteration adds small all-reduces in which the
#   ranks tell each other whether they still have data.

# %% [markdown]
# ## Scale the learning rate with the global batch
#
# With N ranks the global batch is N times larger, so an epoch has N times fewer steps. The
# *linear scaling rule* (Goyal et al., 2017): multiply the learning rate by N, and warm it up
# over the first steps, because a large learning rate on freshly initialised weights can diverge.
# [The proof](#Prove-that-DDP-equals-one-big-batch) says a DDP run is a one-process run with the
# global batch, so one process can measure the rule. A small MLP on CIFAR2 (16×16 pixels, in
# memory) trained for 3 epochs with SGD and momentum; the final loss over the whole training set:

# %% tags=["nbval-ignore-output"]
train_images, train_labels, _ = load_cifar2("train")


def pixels(images: torch.Tensor) -> torch.Tensor:
    return F.avg_pool2d(images.float() / 255, 2).flatten(1)


features, targets = pixels(train_images), train_labels
centre, scale = features.mean(0), features.std(0)
features = (features - centre) / scale


def train_mlp(batch: int, lr: float, warmup_steps: int = 0, epochs: int = 3) -> float:
    """Train a fresh MLP; return its mean cross-entropy over the training set."""
    torch.manual_seed(0)
    mlp = nn.Sequential(
        nn.Linear(768, 256), nn.ReLU(), nn.Linear(256, 256), nn.ReLU(), nn.Linear(256, 2)
    )
    optimizer = torch.optim.SGD(mlp.parameters(), lr=lr, momentum=0.9)
    ramp = torch.optim.lr_scheduler.LambdaLR(
        optimizer, lambda step: min(1.0, (step + 1) / warmup_steps) if warmup_steps else 1.0
    )
    for _ in range(epochs):
        order = torch.randperm(len(features))
        for i in range(0, len(order) - batch + 1, batch):
            idx = order[i : i + batch]
            loss = F.cross_entropy(mlp(features[idx]), targets[idx])
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            ramp.step()
    with torch.inference_mode():
        return F.cross_entropy(mlp(features), targets).item()


settings = {
    "batch 32, lr 0.01 (baseline)": (32, 0.01),
    "batch 256, lr 0.01": (256, 0.01),
    "batch 256, lr 0.08 (× 8)": (256, 0.08),
    "batch 256, lr 0.08, warm-up 40 steps": (256, 0.08, 40),
}
final_loss = {name: train_mlp(*args) for name, args in settings.items()}
for name, loss in final_loss.items():
    print(f"{name:>38}: final training loss {loss:.4f}")

# %%
base, same_lr, scaled, warmed = final_loss.values()
check(
    same_lr > 1.3 * base,
    "8× the batch at the same learning rate trains worse in 3 epochs",
    measured=f"{same_lr / base:.2f}× the baseline's loss",
)
recovered = (same_lr - scaled) / (same_lr - base)
check(
    recovered > 0.5,
    "scaling the learning rate by 8 recovers most of the gap (over half)",
    measured=f"{recovered:.0%} recovered",
)
check(
    abs(warmed / scaled - 1) < 0.25,
    "warm-up changes little on this small problem",
    measured=f"{warmed / scaled:.2f}",
)


# %% [markdown]
# What to notice: at the same learning rate the large batch takes 8× fewer steps and ends far
# behind; the scaled learning rate brings it back near the baseline. Warm-up made little
# difference here; it matters for deep networks at large batch sizes (Goyal et al. trained
# ResNet-50 with batch 8192 only with it), and far beyond the linear range no warm-up saves
# training. With DDP and SGD: keep the per-rank batch, scale the learning rate with the number of
# ranks, and check the loss curve against a one-process run.
#
# Two more things decide the learning rate:
#
# - **Accumulation multiplies the batch too.** With gradient accumulation
#   ([no_sync above](#Accumulate-gradients-with-no_sync-and-survive-uneven-inputs-with-Join)),
#   one optimizer step sees *per-rank batch × world size × accumulation steps* samples: 32 per
#   rank on 4 ranks with 2 accumulation steps is a global batch of 256, and that is the batch the
#   learning rate is set for.
# - **Adam and AdamW do not follow the linear rule.** They divide each update by a running
#   estimate of the gradient's size, so a larger batch (a less noisy gradient) does not call for
#   a proportionally larger step; multiplying their learning rate by N tends to overshoot. Common
#   starting points are the square-root rule (multiply by √N; Malladi et al., 2022, derive it for
#   adaptive optimizers) or, for a moderate change of N, no scaling at all; then check the loss
#   curve, with warm-up, which Adam-trained transformers use anyway.

# %% [markdown]
# ## Fix the everyday DDP failures
#
# **A parameter that gets no gradient.** DDP counts the gradients that arrive during backward to
# know when a bucket is ready to all-reduce. A parameter that the forward pass did not use (an
# auxiliary head, a branch taken only for some inputs, a layer left in the model but no longer
# called) never reports, the reduction never finishes, and the **next** iteration raises. One
# process is enough to see it:

# %%
class TwoHeads(nn.Module):
    """A body and two heads; this forward uses only the first head."""

    def __init__(self) -> None:
        super().__init__()
        self.body, self.head, self.aux = nn.Linear(20, 32), nn.Linear(32, 3), nn.Linear(32, 3)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(torch.tanh(self.body(x)))  # self.aux gets no gradient


def two_steps(**options) -> nn.Module:
    """Run two forward and backward passes of TwoHeads under DDP; return the module."""
    ddp_heads = DDP(TwoHeads(), **options)
    x, y = toy.global_batch(16)
    for _ in range(2):
        F.cross_entropy(ddp_heads(x), y).backward()
    return ddp_heads.module


dist.init_process_group("gloo", store=dist.HashStore(), rank=0, world_size=1)
try:
    with expect_error(RuntimeError, match="Expected to have finished reduction", lines=1) as caught:
        two_steps()
    named = [line for line in str(caught.error).splitlines() if line.startswith("Parameter ind")]
    print("further down it says:", *named)
    fixed = {
        option: two_steps(**{option: True}) for option in ("find_unused_parameters", "static_graph")
    }
finally:
    dist.destroy_process_group()
for option, heads in fixed.items():
    print(f"{option}=True: two steps ran, aux.weight.grad is {heads.aux.weight.grad}")
check(
    all(h.aux.weight.grad is None and h.head.weight.grad is not None for h in fixed.values()),
    "both options let DDP train a model with an unused parameter",
)

# %% [markdown]
# `find_unused_parameters=True` makes DDP walk the autograd graph after every forward to find
# the parameters that will get no gradient, a cost on every step; `static_graph=True` is cheaper
# when the same parameters are used in every iteration (DDP learns which in the first one).
# Better still, remove what is unused, or set its `requires_grad=False`. The rest of the
# everyday list:
#
# - **Which parameter?** The error gives indices. Launched with `TORCH_DISTRIBUTED_DEBUG=INFO`
#   in the environment, it names them (`aux.bias, aux.weight`); `DETAIL` also checks that all
#   ranks call the same collectives with the same shapes, at a cost in speed: for debugging
#   only. On GPUs, `NCCL_DEBUG=INFO` prints how NCCL connected the ranks (network interfaces,
#   transports), the first thing to read when a job hangs at start-up.
# - **`--local-rank` vs `LOCAL_RANK`.** Since PyTorch 2.0 the deprecated
#   `torch.distributed.launch` passes `--local-rank=N` (with a hyphen) to the script; old code
#   that declares only `--local_rank` in argparse stops with "unrecognized arguments". torchrun
#   passes no argument at all: read `int(os.environ["LOCAL_RANK"])`, as the scripts here do.
# - **DDP and `torch.compile`.** Compile the DDP-wrapped model, `torch.compile(ddp)`: the
#   compiler splits the graph at DDP's bucket boundaries (`torch._dynamo.config.optimize_ddp`,
#   on by default), so the all-reduces still overlap with backward.
# - **Clipping under DDP and AMP.** After `backward()` every rank holds the same averaged
#   gradients, so `clip_grad_norm_` computes the same norm on every rank with no extra
#   communication. With a `GradScaler`, call `scaler.unscale_(optimizer)` before clipping, as
#   in [07](07_training_loop_recipes.ipynb), or the threshold applies to the scaled gradients.
# - **Per-rank augmentation seeds.** `train_ddp.py` seeds every rank alike for identical initial
#   weights. Random augmentations would then draw the same random numbers on every rank (the
#   same crop for the first image of each rank's batch; DataLoader workers derive their seeds
#   from it too). After building the model, seed again with `seed + rank`: DDP has broadcast
#   the weights anyway, and `DistributedSampler` has its own seed, so the shards do not change.

# %% [markdown]
# ### Pitfall: `address already in use` (`EADDRINUSE`) at start-up
#
# Rank 0 listens on one TCP port (torchrun's `--master-port`, or `MASTER_PORT`; 29500 unless
# told) and the other ranks connect to it. A second job on the same machine with the same
# port, or a leftover rank or `torchrun` process of a killed run still holding it, stops the new job before any rank
# runs. Here the port is taken by a store (what rank 0 starts) and a second one asks for it:

# %%
holder = dist.TCPStore("127.0.0.1", 0, is_master=True, wait_for_workers=False)  # 0: a free port
taken = holder.port
with expect_error(dist.DistNetworkError, match="EADDRINUSE", lines=1):
    dist.TCPStore("127.0.0.1", taken, is_master=True, wait_for_workers=False)
other = dist.TCPStore("127.0.0.1", 0, is_master=True, wait_for_workers=False)
print(f"port {taken} is taken; port 0 asked for a free one and got port {other.port}")
check(other.port != taken, "a store that lets the system pick its port starts beside the other")
del holder, other  # the ports are free again once their stores are gone

# %% [markdown]
# The fixes: find what holds the port (`ss -ltnp | grep 29500`, or `lsof -i :29500`) and stop
# the leftover ranks; give each job on a machine its own port (`--master-port 29501`); or, for
# one machine, `torchrun --standalone`, which picks a free port itself, as every launch here does.

# %% [markdown]
# ## Make a failing rank end the job in seconds
#
# A rank that raises must not leave the others waiting forever in a collective. Two safeguards:
# `torchrun` stops the remaining ranks as soon as one exits with an error, and
# `init_process_group(timeout=...)` makes a collective that waits too long for a dead or stuck
# peer raise (the default is 10 minutes for `nccl`, 30 for `gloo`; the scripts here set 30-60 s).
# `helpers.dist.torchrun` adds a third: a time limit for the whole job, after which it kills every
# process it started. Here rank 1 raises while rank 0 is busy with something that would take 10
# minutes and never calls a collective, so only torchrun can end it:

# %%
# %%writefile runs/09_ddp/fail.py
"""Rank 1 raises while rank 0 is busy for 10 minutes: the job must end at once, not hang."""

import datetime
import time

import torch.distributed as dist

dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=30))
if dist.get_rank() == 1:
    raise ValueError("rank 1 fails on purpose")
time.sleep(600)  # rank 0 would notice nothing: only torchrun can stop it

# %% tags=["nbval-ignore-output"]
with expect_error(launch.RankFailed) as caught:
    launch.torchrun(RUN / "fail.py", nproc=2, timeout=60, echo=False)

# %% [markdown]
# The launch raised one error naming the rank and its error (`echo=False` kept the ranks'
# output quiet; the error keeps it), shown above in one line. What rank 1 printed, and how fast the job ended:

# %%
failure = caught.error  # the RankFailed that torchrun raised
here = f"{Path.cwd()}/"  # Python shows the script's absolute path
print("\n".join(line.replace(here, "") for line in failure.job.output[1]))
check(isinstance(failure, launch.RankFailed) and failure.rank == 1, "the error names rank 1")
check(
    failure.job.seconds < 30,
    "the job ended in seconds, not after rank 0's 10 minutes",
    measured=f"{failure.job.seconds:.1f} s",
    timing=True,
)
check(leftovers(RUN / "fail.py") == [], "no process of the job is left")


# %% [markdown]
# ### Pitfall: the job hangs, then dies with `Watchdog caught collective operation timeout`
#
# No rank raised, yet the job stops making progress, and after the process group's timeout a
# GPU job's log has a line with `Watchdog caught collective operation timeout: WorkNCCL(...)
# ran for ... milliseconds before timing out` (on `gloo`, a timed-out wait). Every rank must call the same collectives in the same order;
# one that skips one, or calls another, leaves the rest waiting. The usual causes:
#
# - **Code for rank 0 only that runs the DDP model** (evaluation, a sample): its forward and
#   the buffer broadcast at the start of its forward, and any backward, are collectives. Evaluate through `ddp.module`, as `train_ddp.py` does.
# - **Ranks with different numbers of batches**: without `DistributedSampler`, or with a loop
#   that stops on a condition one rank meets first. The last all-reduce waits for a rank that
#   has stopped: use the sampler, or `Join` ([above](#Accumulate-gradients-with-no_sync-and-survive-uneven-inputs-with-Join)).
# - **A rank that is stuck** (a deadlock, a slow read from a network file system, a long save on
#   rank 0 only) or, across machines, a node that is gone: the others wait on it until the
#   timeout. (On one machine, torchrun ends the job when a rank dies, as above.)
#
# To find which: set `TORCH_DISTRIBUTED_DEBUG=DETAIL` (before each collective it checks that
# every rank calls the same one with the same shapes, and says which rank differs or did not
# come), give
# `init_process_group` a `timeout=` of minutes while debugging, and look at where each rank
# waits with `py-spy dump --pid <pid>`.

# %% [markdown]
# ## Start ranks from the notebook without a script
#
# The interactive route: start the processes from the notebook with the `fork` start method.
# A forked child is a copy of this kernel, so it can run a function defined in a cell (no file,
# no pickling). Each rank joins a process group at an explicit address (`tcp://127.0.0.1:port`),
# all-reduces its rank + 1, and sends the result back through a queue; `start_processes` waits
# for all of them and, if one fails, stops the others and raises. Accelerate's
# `notebook_launcher` wraps the same idea.

# %%
def hello(rank: int, world: int, port: int, results) -> None:
    torch.set_num_threads(1)
    dist.init_process_group(
        "gloo",
        init_method=f"tcp://127.0.0.1:{port}",
        rank=rank,
        world_size=world,
        timeout=datetime.timedelta(seconds=30),
    )
    total = torch.tensor([rank + 1.0])
    dist.all_reduce(total)  # sum over ranks, in place, on every rank
    results.put((rank, dist.get_world_size(), total.item()))
    dist.destroy_process_group()


# Fork only where it is safe: on Linux (macOS can crash in a forked child, Windows has no fork),
# and only while this kernel has not initialised CUDA (setup() did on a GPU machine, to print
# the GPU's name).
if sys.platform == "linux" and not torch.cuda.is_initialized():
    results = mp.get_context("fork").SimpleQueue()
    mp.start_processes(hello, args=(2, free_port(), results), nprocs=2, start_method="fork")
    for rank, world, total in sorted(results.get() for _ in range(2)):
        print(f"rank {rank} of {world}: all_reduce(rank + 1) = {total:g}")
else:
    print("forking is not safe here (not Linux, or CUDA is initialised): use torchrun (above)")


# %% [markdown]
# When it breaks: Windows has no `fork`, and on macOS forking a process that has started
# system threads can crash, which is why Python defaults to `spawn` there; `spawn` must pickle
# the function and re-import it in the child, which fails for functions defined in a cell (Python
# 3.14 also makes `forkserver` the default on Linux; asking for `fork` explicitly, as here, still
# works; from Python 3.12 on, forking a process that runs threads, as a Jupyter kernel does, also
# prints a `DeprecationWarning` that the child may deadlock). And on GPUs, **CUDA initialised
# before forking** cannot be used in the child: the forked process raises `RuntimeError: Cannot
# re-initialize CUDA in forked subprocess`. The next cell shows that error where a GPU is
# present; a script started by `torchrun` has none of these problems, which is why scripts are
# the route for real training.

# %%
def use_cuda(_: int) -> None:
    torch.zeros(1, device="cuda")


if torch.cuda.is_available() and sys.platform == "linux":
    torch.zeros(1, device="cuda")  # initialises CUDA in this kernel, if setup() has not already
    try:
        mp.start_processes(use_cuda, nprocs=1, start_method="fork")
    except mp.ProcessRaisedException as error:
        print(str(error).strip().splitlines()[-1])
else:
    print("no GPU here: CUDA is never initialised, so forking is safe")

# %% [markdown]
# ## Go beyond one machine
#
# The script does not change; the launch does. On each of 2 machines with 8 GPUs each, run the
# same command with the address of one of them as the rendezvous endpoint:
#
# ```bash
# torchrun --nnodes 2 --nproc-per-node 8 --rdzv-id job42 --rdzv-backend c10d \
#          --rdzv-endpoint node0.example.com:29500 train_ddp.py --epochs 10 ...
# ```
#
# `torchrun` sets `RANK` (0-15) and `LOCAL_RANK` (0-7) for each process. The static form names
# each machine instead: `--nnodes 2 --node-rank 0 --master-addr node0 --master-port 29500` on
# the first and `--node-rank 1` on the second. Under a cluster scheduler such as Slurm, start
# one `torchrun` per node (`srun --ntasks-per-node 1 torchrun ...`) and take the endpoint from
# the job's first host name; each process can also read `RANK` and `WORLD_SIZE` from the
# scheduler's own variables. Make sure the nodes can reach each other on the port, and with `nccl`
# set `NCCL_SOCKET_IFNAME` when they have several network interfaces. Checkpoints written by rank
# 0 must be on a file system every node can read (or be copied there) before a resume.

# %% [markdown]
# ## Old code you will meet
#
# | old form | write today | why |
# |---|---|---|
# | `nn.DataParallel(model)` | `DistributedDataParallel` with one process per device | one process and one GIL, an unbalanced GPU 0, one machine only; PyTorch recommends DDP |
# | `python -m torch.distributed.launch --nproc_per_node 2 train.py` with a `--local_rank` argument | `torchrun --nproc-per-node 2 train.py`, reading `os.environ["LOCAL_RANK"]` | `torch.distributed.launch` is deprecated (it warns with `FutureWarning`) |
# | `mp.spawn(main, nprocs=n)` with hand-set `MASTER_ADDR`/`MASTER_PORT` | `torchrun` | still works (and also stops the other ranks when one fails), but torchrun sets the environment variables for you, can restart failed jobs and meets ranks across machines (rendezvous) |
# | `apex.parallel.DistributedDataParallel`, `apex.amp`, `apex.parallel.SyncBatchNorm` | `torch.nn.parallel.DistributedDataParallel`, `torch.autocast` + `torch.amp.GradScaler`, `nn.SyncBatchNorm` | apex's versions predate PyTorch's own, which replaced them |
# | `torch.save(ddp.state_dict(), path)` | `torch.save(ddp.module.state_dict(), path)` | otherwise every key starts with `module.` and a plain model cannot load it |

# %% [markdown]
# ## Exercises

# %% [markdown]
# ### Exercise 1 · How many samples per rank?
#
# Three ranks share a data set of 10 samples with `DistributedSampler` (no shuffling). Predict,
# without running a sampler, `padded_sizes` and `dropped_sizes`, the number of samples each of
# the 3 ranks gets by default (padding) and with `drop_last=True`, and `repeated`, the indices
# that padding makes appear twice.
#
# <details><summary>Hint 1</summary>
#
# Every rank must run the same number of steps. Padding gets there without leaving a sample
# out, `drop_last` without repeating one: which way does each round 10 / 3?
# </details>
#
# <details><summary>Hint 2</summary>
#
# The section on `DistributedSampler` prints the shards of 11 samples on 2 ranks, padded and with
# `drop_last`: look at which index the padded version repeats, and where it comes from.
# </details>

# %%
numbers = TensorDataset(torch.arange(10))
padded_sizes = ...  # [samples of rank 0, rank 1, rank 2], padded
dropped_sizes = ...  # the same with drop_last=True
repeated = ...  # the indices that appear twice when padded, e.g. [3, 7]

# %%
ch09.exercise_1(numbers, padded_sizes, dropped_sizes, repeated)

# %% [markdown]
# #### Solution

# %% tags=["solution"]
# Solution: open it once you have tried. It uses its own names, so your answer stays as it is.
solution_per_rank = -(-10 // 3)  # ceil: every rank gets as many samples as the largest shard
solution_padded = [solution_per_rank] * 3
solution_dropped = [10 // 3] * 3
# padding wraps around to the first indices
solution_repeated = list(range(3 * solution_per_rank - 10))
ch09.exercise_1(numbers, solution_padded, solution_dropped, solution_repeated)

# %% [markdown]
# ### Exercise 2 · Set the learning rate of a bigger job
#
# A recipe trains with SGD at learning rate 0.1, or with Adam at 1e-3, on one GPU with batches of
# 256. You run it on 4 machines with 8 GPUs each, 32 samples per GPU, and accumulate 2
# micro-batches (with `no_sync`) before every optimizer step. Fill in `global_batch`, the samples
# one optimizer step sees; `sgd_lr`, the SGD rate by the linear scaling rule; and `adam_lr`, the
# Adam rate by the square-root rule.
#
# <details><summary>Hint 1</summary>
#
# Count what one GPU adds to one step, then how many GPUs take part. The learning rate scales
# with how many times larger that global batch is than the recipe's.
# </details>
#
# <details><summary>Hint 2</summary>
#
# The section on scaling the learning rate gives the global batch as per-rank batch × ranks ×
# accumulation steps; Adam's rule multiplies by the square root of the factor, not the factor.
# </details>

# %%
global_batch = ...  # samples per optimizer step
sgd_lr = ...  # from 0.1 at batch 256, linear rule
adam_lr = ...  # from 1e-3 at batch 256, square-root rule

# %%
ch09.exercise_2(global_batch, sgd_lr, adam_lr)

# %% [markdown]
# #### Solution

# %% tags=["solution"]
# Solution: open it once you have tried. It uses its own names, so your answer stays as it is.
solution_batch = 4 * 8 * 32 * 2  # machines × GPUs × per-GPU batch × accumulation steps
solution_factor = solution_batch / 256
ch09.exercise_2(solution_batch, 0.1 * solution_factor, 1e-3 * solution_factor**0.5)

# %% [markdown]
# ## Summary
#
# - DDP runs one process per device with identical replicas and all-reduces (averages) gradients
#   during backward: one DDP step on N × B samples equals one step on the global batch (checked
#   here to within float32 rounding, under 1e-6). Set the learning rate for the global batch (per-rank batch × ranks ×
#   accumulation steps): linearly for SGD, with warm-up; more gently (√N or not at all) for Adam.
# - Launch scripts with `torchrun` (`helpers.dist.torchrun` from a cell: rank-prefixed output, a
#   failing rank ends the job in seconds); fork from a notebook only on Linux and before CUDA.
# - `DistributedSampler` + `set_epoch` shards and reshuffles; evaluate `ddp.module` on unpadded
#   shards and all-reduce the counts (the sampler's padding counts images twice); checkpoint
#   `ddp.module` on rank 0, `barrier()`, load with `map_location`; `no_sync()` for
#   accumulation, `Join` for uneven inputs.
# - An unused parameter stops DDP at the next iteration: `find_unused_parameters=True` or
#   `static_graph=True`, and `TORCH_DISTRIBUTED_DEBUG=INFO` to name it.
#
# Next: [Sync BN, FSDP2 and split models](09_ddp_syncbn_big_models_recipes.ipynb), the chapter's
# second cookbook notebook, or [10 · Speedups, measured](../10_speedups.ipynb).
