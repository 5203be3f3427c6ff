# %% [markdown]
# # 09 · Sync BN, FSDP2 and split models: recipes
#
# [![Open In Colab](https://colab.research.google.com/assets/colab-badge.svg)](https://colab.research.google.com/github/pytorch-cookbook/pytorch-cookbook/blob/main/notebooks/cookbook/09_ddp_syncbn_big_models_recipes.ipynb)
#
# **The cookbook of chapter 09, continued.** New to the topic? [The lesson](../09_ddp_syncbn.ipynb)
# teaches it step by step; the chapter's [first cookbook notebook](09_ddp_syncbn_recipes.ipynb)
# launches, proves, trains and debugs plain DDP. Here each recipe is for a model that has grown:
# its per-device batch shrinks until BatchNorm's statistics go wrong (synchronise them), then it
# no longer fits one device (shard it with FSDP2, or split it across devices). The
# [recipe index](../RECIPES.md) and the [error index](../ERRORS.md) find the one you need. Each
# central claim is **proved in numbers** against one process: a sync BN written from scratch equals
# BatchNorm on the global batch, and one FSDP2 step equals one step on the big batch.
#
# **Prerequisites:** [03](../03_autograd.ipynb) (autograd), [05](../05_datasets_dataloaders.ipynb)
# (CIFAR2, the CNN), [09](../09_ddp_syncbn.ipynb) (DDP),
# the first cookbook notebook's [torchrun launch](09_ddp_syncbn_recipes.ipynb#Launch-a-DDP-script-with-torchrun-from-a-cell)
# and [proof that DDP equals one big batch](09_ddp_syncbn_recipes.ipynb#Prove-that-DDP-equals-one-big-batch).
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

import json
import shutil
from pathlib import Path

import pandas as pd
import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch import nn
from torch.distributed.checkpoint.format_utils import dcp_to_torch_save
from torch.nn.parallel import DistributedDataParallel as DDP

from helpers import dist as launch
from helpers import toy
from helpers.check import check
from helpers.env import setup
from helpers.exercises import ch09_big_models
from helpers.images import load_cifar2
from helpers.models import small_cnn

device = setup(seed=0)
RUN = Path("runs/09_ddp_big_models")  # the scripts this notebook writes, and what they save
shutil.rmtree(RUN, ignore_errors=True)
RUN.mkdir(parents=True)
train_images, _, _ = load_cifar2("train")

# %% [markdown]
# ## See why BatchNorm goes wrong with small per-device batches
#
# BatchNorm normalises with the mean and variance of the batch **it sees**. Under DDP that is each
# rank's share: with 2 images per GPU (common for detection and segmentation models) those
# statistics are noisy estimates of the global batch's. The per-channel mean and standard
# deviation of 4 CIFAR2 images, as two ranks with 2 images each would see them and as the whole
# batch does:

# %%
batch = train_images[:4].float() / 255


def channel_summary(x: torch.Tensor) -> str:
    return (
        f"mean {[round(v, 3) for v in x.mean((0, 2, 3)).tolist()]} "
        f"std {[round(v, 3) for v in x.std((0, 2, 3), correction=0).tolist()]}"
    )


for rank, half in enumerate(batch.chunk(2)):
    print(f"rank {rank} (2 images): {channel_summary(half)}")
print(f"whole batch (4):   {channel_summary(batch)}")

# %% [markdown]
# *Synchronised* BatchNorm computes the statistics over the global batch. In forward, each rank
# computes per channel the **sum**, the **sum of squares** and the **count** of its values; one
# all-reduce adds them up, and every rank derives the global mean $\mu = S/n$ and variance
# $\sigma^2 = Q/n - \mu^2$. In backward, the gradient with respect to each input depends on the
# whole batch through two per-channel sums, $\sum \partial L/\partial y$ and
# $\sum \partial L/\partial y \cdot \hat x$, so a second all-reduce adds those up. PyTorch's
# version is `nn.SyncBatchNorm`; `convert_sync_batchnorm` swaps it in for every BatchNorm layer:

# %%
converted = nn.SyncBatchNorm.convert_sync_batchnorm(small_cnn([0.5] * 3, [0.25] * 3))
kinds = pd.Series([type(m).__name__ for m in converted.modules()]).value_counts()
print(kinds[kinds.index.str.contains("Norm")].to_dict())

# %% [markdown]
# `nn.SyncBatchNorm` runs on accelerators only (CUDA, XPU, HPU and out-of-tree "privateuse1"
# backends, checked when it runs): in a process group on CPU its training forward raises (the
# script below shows the real error). So, to see it work here and to know what it does, build it.

# %% [markdown]
# ## Prove sync BN from scratch
#
# A custom `torch.autograd.Function` with the forward and backward described above, on two ranks
# with `gloo`. Each rank gets half of a global batch of 8 feature maps; the script gathers the
# outputs and input gradients of all ranks and compares them, the running statistics and the
# weight and bias gradients (summed over ranks: DDP would average them) with `nn.BatchNorm2d` on
# the whole batch in one process. It also records plain per-rank BatchNorm, and what
# `nn.SyncBatchNorm` does on this device.

# %%
# %%writefile runs/09_ddp_big_models/sync_bn.py
"""Sync BN from scratch, checked against nn.BatchNorm2d on the global batch in one process."""

import datetime
import json
import os
import sys

import torch
import torch.distributed as dist
from torch import nn


class SyncBatchNormFn(torch.autograd.Function):
    """Batch norm over the batch of all ranks: statistics and two gradient sums all-reduced."""

    @staticmethod
    def forward(ctx, x, weight, bias, running_mean, running_var, eps, momentum):
        c, dims, shape = x.shape[1], [0, 2, 3], (1, x.shape[1], 1, 1)  # all axes but channels
        count = torch.full((1,), x.numel() / c, dtype=x.dtype, device=x.device)
        stats = torch.cat([x.sum(dims), (x * x).sum(dims), count])
        dist.all_reduce(stats)  # forward: per-channel sum, sum of squares, and the count
        total, squares, n = stats[:c], stats[c : 2 * c], stats[-1]
        mean = total / n
        var = (squares / n - mean**2).clamp_min(0)  # biased: what normalises
        invstd = torch.rsqrt(var + eps)
        with torch.no_grad():  # running statistics use the unbiased variance
            running_mean.lerp_(mean, momentum)
            running_var.lerp_(var * n / (n - 1), momentum)
        x_hat = (x - mean.view(shape)) * invstd.view(shape)
        ctx.save_for_backward(x_hat, weight, invstd, n)
        return x_hat * weight.view(shape) + bias.view(shape)

    @staticmethod
    def backward(ctx, dy):
        x_hat, weight, invstd, n = ctx.saved_tensors
        c, dims, shape = dy.shape[1], [0, 2, 3], (1, dy.shape[1], 1, 1)
        sums = torch.cat([dy.sum(dims), (dy * x_hat).sum(dims)])
        grad_bias, grad_weight = sums[:c].clone(), sums[c:].clone()  # this rank's share
        if not BREAK_BACKWARD:
            dist.all_reduce(sums)  # backward: the two sums over the global batch
        sum_dy, sum_dy_xhat = sums[:c].view(shape), sums[c:].view(shape)
        dx = weight.view(shape) * invstd.view(shape) * (dy - sum_dy / n - x_hat * sum_dy_xhat / n)
        return dx, grad_weight, grad_bias, None, None, None, None


class SyncBatchNorm2d(nn.BatchNorm2d):
    """``nn.BatchNorm2d`` whose training statistics come from every rank's batch."""

    def forward(self, x):
        if not self.training:
            return super().forward(x)  # evaluation uses the running statistics
        self.num_batches_tracked += 1
        return SyncBatchNormFn.apply(
            x, self.weight, self.bias, self.running_mean, self.running_var, self.eps, self.momentum
        )


def max_diff(a: torch.Tensor, b: torch.Tensor) -> float:
    return (a - b).abs().max().item()


BREAK_BACKWARD = "--break-backward" in sys.argv  # skip the backward all-reduce, to see it fail


def gathered(t: torch.Tensor) -> torch.Tensor:
    """Concatenate ``t`` of every rank, in rank order."""
    parts = [torch.empty_like(t) for _ in range(dist.get_world_size())]
    dist.all_gather(parts, t.contiguous())
    return torch.cat(parts)


# one GPU per rank, or all on the CPU (a single GPU cannot serve two nccl ranks)
cuda = torch.cuda.device_count() >= int(os.environ["LOCAL_WORLD_SIZE"])
device = torch.device("cuda", int(os.environ["LOCAL_RANK"])) if cuda else torch.device("cpu")
if cuda:
    torch.cuda.set_device(device)  # before the process group: nccl uses the current device
dist.init_process_group(
    "nccl" if cuda else "gloo",
    timeout=datetime.timedelta(seconds=30),
    device_id=device if cuda else None,
)
rank, world = dist.get_rank(), dist.get_world_size()
torch.manual_seed(0)  # the same global batch and weights on every rank
x_all = (torch.randn(4 * world, 3, 5, 5) * 2 + 1).to(device)
upstream = torch.randn_like(x_all)  # a fixed gradient from the layers above
reference = nn.BatchNorm2d(3).to(device)
with torch.no_grad():
    reference.weight.uniform_(0.5, 1.5)
    reference.bias.uniform_(-0.5, 0.5)
ours = SyncBatchNorm2d(3).to(device)
plain = nn.BatchNorm2d(3).to(device)  # per-rank statistics, as without sync
builtin = nn.SyncBatchNorm(3).to(device)
for layer in (ours, plain, builtin):
    layer.load_state_dict(reference.state_dict())

# One process, the global batch: what sync BN must reproduce.
x_ref = x_all.clone().requires_grad_()
y_ref = reference(x_ref)
(y_ref * upstream).sum().backward()


def compare(layer: nn.Module) -> dict[str, float]:
    """Run this rank's shard through ``layer``; return its largest differences from reference."""
    x = x_all.chunk(world)[rank].clone().requires_grad_()
    y = layer(x)
    (y * upstream.chunk(world)[rank]).sum().backward()
    for p in (layer.weight, layer.bias):  # DDP would average these; the sum is the global one
        dist.all_reduce(p.grad)
    return {
        "output": max_diff(gathered(y.detach()), y_ref),
        "running_mean": max_diff(layer.running_mean, reference.running_mean),
        "running_var": max_diff(layer.running_var, reference.running_var),
        "batches_tracked": float(layer.num_batches_tracked != reference.num_batches_tracked),
        "grad_input": max_diff(gathered(x.grad), x_ref.grad),
        "grad_weight": max_diff(layer.weight.grad, reference.weight.grad),
        "grad_bias": max_diff(layer.bias.grad, reference.bias.grad),
    }


report = {"world": world, "device": device.type}
report["from scratch"] = compare(ours)
report["plain BN per rank"] = compare(plain)
try:
    report["nn.SyncBatchNorm"] = compare(builtin)
except ValueError as error:  # raised in forward, on every rank alike, before any collective
    report["nn.SyncBatchNorm"] = f"{type(error).__name__}: {error}"
if rank == 0:
    with open(sys.argv[1], "w") as f:
        json.dump(report, f, indent=1)
    print(f"saved {sys.argv[1]}")
dist.destroy_process_group()

# %% tags=["nbval-ignore-output"]
launch.torchrun(RUN / "sync_bn.py", RUN / "sync_bn.json", nproc=2)
sync_bn = json.loads((RUN / "sync_bn.json").read_text())
compared = {k: v for k, v in sync_bn.items() if isinstance(v, dict)}
pd.DataFrame(compared).map(lambda v: f"{v:.1e}")

# %%
builtin = sync_bn["nn.SyncBatchNorm"]
if isinstance(builtin, str):  # on CPU: the real error
    print("nn.SyncBatchNorm on", sync_bn["device"], "→", builtin)
else:  # on GPUs: PyTorch's SyncBatchNorm went through the same comparison
    check(max(builtin.values()) < 1e-4, "nn.SyncBatchNorm matches BatchNorm on the global batch")
worst = max(sync_bn["from scratch"].values())
check(
    worst < 1e-5,
    "sync BN from scratch equals BatchNorm on the global batch: outputs, running "
    "statistics, input, weight and bias gradients (max |diff| < 1e-5)",
    measured=f"{worst:.1e}",
)
depends_on_statistics = ["output", "running_mean", "running_var", "grad_input", "grad_weight"]
plain_error = min(sync_bn["plain BN per rank"][k] for k in depends_on_statistics)
check(
    plain_error > 1e-2 and plain_error > 1000 * worst,
    "plain per-rank BatchNorm does not: its outputs, running statistics, input and weight "
    "gradients are each off by over 1000× the from-scratch version's largest difference",
    measured=f"{plain_error:.1e} vs {worst:.1e}",
)


# %% [markdown]
# What to notice: every quantity of the from-scratch version matches to float32 rounding (the
# first column), while plain BatchNorm on each rank's half is off in its outputs, running
# statistics, input and weight gradients by orders of magnitude more (the second column, and the
# check above). Only its bias gradient is right: it is the sum of the upstream gradient over the
# batch, which does not depend on the statistics. Break the from-scratch version on purpose:
# `--break-backward` skips the all-reduce in `backward`; outputs and statistics still match, but
# the input gradients no longer do (the course's tests run it so and check exactly that), which
# only a check of the gradients catches.
#
# PyTorch's own `nn.SyncBatchNorm` computes the same statistics a numerically safer way: each rank
# computes its mean and inverse standard deviation, an all-*gather* collects them with the counts,
# and every rank merges them (Welford-style) instead of subtracting large sums of squares.

# %% [markdown]
# ## Combine DDP with model parallelism
#
# When one model is split across several devices of one process (its first layers on `cuda:0`,
# the rest on `cuda:1`), DDP still works: wrap the whole model with
# `DDP(model, device_ids=None)` (the module decides where its parts run) and start one such
# process per pair of GPUs. The split itself is plain PyTorch: move each part and the activations
# between them. This cell uses two GPUs when it finds them, else the CPU for both parts:


# %%
class TwoDevices(nn.Module):
    """The first layer on one device, the rest on another: the activations move between them."""

    def __init__(self, first: torch.device, second: torch.device) -> None:
        super().__init__()
        self.first, self.second = first, second
        self.bottom = nn.Sequential(nn.Linear(20, 32), nn.Tanh()).to(first)
        self.top = nn.Linear(32, 3).to(second)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.top(self.bottom(x.to(self.first)).to(self.second))


two_gpus = torch.cuda.device_count() >= 2
parts = [torch.device(f"cuda:{i}") for i in (0, 1)] if two_gpus else [torch.device("cpu")] * 2
split = TwoDevices(*parts)
# A one-process group is enough to wrap it in DDP here; a real job has one process per GPU pair.
# With one process, an in-memory store replaces the network rendezvous (no port to pick).
dist.init_process_group("gloo", store=dist.HashStore(), rank=0, world_size=1)
try:
    ddp_split = DDP(split, device_ids=None)  # None: the module places its own parts
    out = ddp_split(toy.global_batch(16)[0])
    out.sum().backward()  # gradients flow back across the devices, then DDP all-reduces them
finally:
    dist.destroy_process_group()
print(
    f"parts on {[str(p) for p in parts]}: output {tuple(out.shape)} on {out.device}, "
    f"first layer's gradient on {split.bottom[0].weight.grad.device}"
)

# %% [markdown]
# Splitting a model by hand like this leaves one device idle while the other works. PyTorch has
# tools for the real thing, each a chapter of its own and none of them needed before a model
# outgrows what FSDP can fit:
#
# - **Pipeline parallelism** (`torch.distributed.pipelining`): the stages run in different
#   processes and micro-batches flow through them on a schedule (GPipe, 1F1B), so that the
#   stages work at the same time.
# - **Tensor parallelism** (`torch.distributed.tensor.parallel`): single layers are split, e.g.
#   a linear layer's weight by columns on one GPU and rows on another, with a collective inside
#   the layer; it needs fast links, so it stays within one machine.
# - **A 2-D `DeviceMesh`** combines them: `init_device_mesh("cuda", (nodes, gpus_per_node),
#   mesh_dim_names=("dp", "tp"))` names one dimension for data parallelism (FSDP across
#   machines) and one for tensor parallelism (within a machine), and each API takes its part of
#   the mesh (`mesh["dp"]`, `mesh["tp"]`).

# %% [markdown]
# ## Shard a model with FSDP2
#
# DDP keeps a full copy of the model, its gradients and its optimizer state on every rank. When
# they do not fit on one device, *fully sharded data parallel* splits every parameter across the
# ranks: each rank stores and updates only its shard, all-gathers a layer's full weights just
# before using it (and frees them after), and reduce-scatters the gradients so that each rank
# receives only the averaged gradient of its own shard. FSDP2 is `fully_shard(module)`, applied to
# each layer and then to the whole model; parameters become `DTensor`s. It runs on CPU with
# `gloo` too. The script below takes one step of the chapter's toy model (`helpers.toy`: Linear
# 20 → 32, Tanh, Linear 32 → 3) on its fixed global batch of 16, split over the ranks as in the
# [first notebook's DDP script](09_ddp_syncbn_recipes.ipynb#Launch-a-DDP-script-with-torchrun-from-a-cell),
# and compares it with one big batch, then tries the options a real FSDP job sets:
#
# - `reshard_after_forward`: by default every unit but the root frees its gathered weights
#   after forward and gathers them again in backward; `False` keeps them until backward: one
#   all-gather less, more memory held. Worth it for the last layers, which backward needs
#   first; here the last `Linear`;
# - `MixedPrecisionPolicy(param_dtype=torch.bfloat16, reduce_dtype=torch.float32)` gathers and
#   computes in bfloat16 while the stored shards, the optimizer step and the gradient
#   reduction stay in float32: the all-gathers move half the bytes;
# - a **sharded checkpoint** with `torch.distributed.checkpoint` (DCP): each rank writes only
#   its shards, in parallel, and a job with a different number of ranks can load them. The
#   state dict comes from `get_model_state_dict(model)`; with
#   `StateDictOptions(full_state_dict=True, cpu_offload=True)` the same function gathers a full,
#   ordinary state dict on the CPU of rank 0 instead (for a small model, or for export).

# %%
# %%writefile runs/09_ddp_big_models/fsdp.py
"""FSDP2: a shard of every parameter per rank; one step equals one big batch; a DCP checkpoint."""

import datetime
import gc
import sys

import torch
import torch.distributed as dist
import torch.distributed.checkpoint as dcp
import torch.nn.functional as F
from torch import nn
from torch.distributed.checkpoint.state_dict import (
    StateDictOptions,
    get_model_state_dict,
    set_model_state_dict,
)
from torch.distributed.device_mesh import init_device_mesh
from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard
from helpers.toy import global_batch, toy_model

dist.init_process_group("gloo", timeout=datetime.timedelta(seconds=30))
rank, world = dist.get_rank(), dist.get_world_size()
mesh = init_device_mesh("cpu", (world,))  # on GPUs: init_device_mesh("cuda", ...) and nccl
output, checkpoint_dir = sys.argv[1], sys.argv[2]


def sharded(**options) -> nn.Module:
    """The toy model with each Linear layer, then the whole model, as an FSDP unit."""
    model = toy_model(seed=0)
    fully_shard(model[0], mesh=mesh, **options)  # a unit: gathered just before it runs
    fully_shard(model[2], mesh=mesh, reshard_after_forward=False, **options)  # backward's first
    return fully_shard(model, mesh=mesh, **options)


model = sharded()
weight = model[0].weight
held = sum(p.to_local().numel() for p in model.parameters())
total = sum(p.numel() for p in model.parameters())
print(
    f"{type(weight).__name__} {tuple(weight.shape)}, this rank holds "
    f"{tuple(weight.to_local().shape)}; {held} of {total} parameters"
)

x, y = global_batch(16)
optimizer = torch.optim.SGD(model.parameters(), lr=0.5)
out = model(x.chunk(world)[rank])
between = {i: type(model[i].weight).__name__ for i in (0, 2)}  # between forward and backward
F.cross_entropy(out, y.chunk(world)[rank]).backward()
optimizer.step()  # each rank updates only its shard
everything = StateDictOptions(full_state_dict=True, cpu_offload=True)
full = get_model_state_dict(model, options=everything)  # all ranks gather; rank 0 gets tensors

dcp.save({"model": get_model_state_dict(model)}, checkpoint_id=checkpoint_dir)  # shards only
resumed = sharded()  # a fresh sharded model, as a resumed job would build it
state = {"model": get_model_state_dict(resumed)}
dcp.load(state, checkpoint_id=checkpoint_dir)  # each rank reads the pieces it holds
set_model_state_dict(resumed, state["model"])
reloaded = all(
    torch.equal(a.full_tensor(), b.full_tensor())
    for a, b in zip(model.parameters(), resumed.parameters(), strict=True)
)

policy = MixedPrecisionPolicy(param_dtype=torch.bfloat16, reduce_dtype=torch.float32)
mixed = sharded(mp_policy=policy)
out = mixed(x.chunk(world)[rank])
F.cross_entropy(out.float(), y.chunk(world)[rank]).backward()
dtypes = {
    "stored shards": mixed[0].weight.dtype,
    "forward output": out.dtype,
    "gradients": mixed[0].weight.grad.dtype,
}

counts, loaded = [None] * world, [None] * world
dist.all_gather_object(counts, held)
dist.all_gather_object(loaded, reloaded)
if rank == 0:
    results = {"held": counts, "total": total, "one_step": full, "between": between}
    torch.save({**results, "reloaded": loaded, "dtypes": dtypes}, output)
del model, resumed, mixed, optimizer, weight, out, mesh  # free what uses the group, then destroy it
gc.collect()
dist.destroy_process_group()

# %% [markdown]
# The reference, in this process: the same model (seed 0) and one SGD step on the whole global
# batch of 16, as in the first notebook's
# [proof that DDP equals one big batch](09_ddp_syncbn_recipes.ipynb#Prove-that-DDP-equals-one-big-batch).


# %%
def max_diff(a: dict, b: dict) -> float:
    """The largest absolute difference between two dicts of tensors with the same keys."""
    return max((a[k] - b[k]).abs().max().item() for k in a)


TOL = 1e-6  # float32 rounding of sums of 8-16 terms stays far below this
x, y = toy.global_batch(16)
big_batch = toy.toy_model(seed=0)
F.cross_entropy(big_batch(x), y).backward()  # one process, the whole batch
torch.optim.SGD(big_batch.parameters(), lr=0.5).step()

# %% tags=["nbval-ignore-output"]
fsdp_checkpoint = RUN / "fsdp_checkpoint"
launch.torchrun(RUN / "fsdp.py", RUN / "fsdp.pt", fsdp_checkpoint, nproc=2)
fsdp_run = torch.load(RUN / "fsdp.pt", weights_only=True)

# %%
print("parameters held per rank:", fsdp_run["held"], "of", fsdp_run["total"])
print("weights between forward and backward:", fsdp_run["between"])
print("with MixedPrecisionPolicy:", {k: str(v) for k, v in fsdp_run["dtypes"].items()})
print("files of the sharded checkpoint:", sorted(p.name for p in fsdp_checkpoint.iterdir()))
fsdp_diff = max_diff(fsdp_run["one_step"], big_batch.state_dict())
check(
    sum(fsdp_run["held"]) == fsdp_run["total"]
    and max(fsdp_run["held"]) <= 0.53 * fsdp_run["total"],
    "each rank holds about half of the parameters, together all of them",
)
check(
    fsdp_diff < TOL,
    "one FSDP step on 2 × 8 samples equals one step on 16",
    measured=f"{fsdp_diff:.1e}",
)
check(
    fsdp_run["between"] == {0: "DTensor", 2: "Parameter"},
    "between forward and backward, layer 0 is back to its shard; the last layer "
    "(reshard_after_forward=False) still holds its full weight",
)
check(
    list(fsdp_run["dtypes"].values()) == [torch.float32, torch.bfloat16, torch.float32],
    "mixed precision: shards and gradients in float32, the forward in bfloat16",
)
check(all(fsdp_run["reloaded"]), "every rank loaded the sharded checkpoint back exactly")

# %% [markdown]
# Every parameter is split between the ranks along dim 0, and a dimension that does not divide
# by 2 splits unevenly: the last layer's 3 × 32 weight gives rank 0 two rows and rank 1 one (64
# against 32 values), and its bias of 3 splits 2 + 1, so rank 0 holds 33 more values than rank 1.
# What FSDP saves is memory, not time: every layer's weights cross the network twice per step (gathered in forward and again in backward) plus a reduce-scatter, so it
# pays off when the model, its gradients and optimizer state would not fit on one device. Two
# more options save memory at a cost in time: `CPUOffloadPolicy()` (`offload_policy=`) keeps the
# shards, gradients and optimizer step on the CPU, and activation checkpointing recomputes
# activations in backward instead of storing them.
#
# The sharded checkpoint is a directory with one file per rank plus `.metadata`. The same
# `dcp.load` reads it into any number of ranks, and `dcp_to_torch_save` turns it into one ordinary
# file outside any job, here in this process:

# %%
dcp_to_torch_save(fsdp_checkpoint, RUN / "fsdp_full.pt")
from_shards = torch.load(RUN / "fsdp_full.pt", weights_only=True)["model"]
print({name: tuple(t.shape) for name, t in from_shards.items()})
check(
    max_diff(from_shards, big_batch.state_dict()) < TOL,
    "the shards saved by 2 ranks make up the whole model after the step",
)


# %% [markdown]
# ## Old code you will meet
#
# | old form | write today | why |
# |---|---|---|
# | `apex.parallel.SyncBatchNorm`, `apex.parallel.convert_syncbn_model` | `nn.SyncBatchNorm`, `nn.SyncBatchNorm.convert_sync_batchnorm` | apex's versions predate PyTorch's own, which replaced them |
# | `FullyShardedDataParallel(model)` (FSDP1) | `fully_shard(model)` (FSDP2) | FSDP2 shards per parameter with `DTensor` and is the maintained API |

# %% [markdown]
# ## Exercises

# %% [markdown]
# ### Exercise 1 · What does each rank hold under FSDP2?
#
# FSDP2 shards `model` below over 3 ranks, each `Linear` layer and then the whole model, as the
# FSDP2 recipe does. Predict, without running FSDP, `held`: how many parameter values (weights
# and biases) each of the 3 ranks stores, as a list.
#
# <details><summary>Hint 1</summary>
#
# Each parameter is cut on its own, along its first dimension, into one piece a rank. Work out
# each of the 4 parameters, then add up per rank.
# </details>
#
# <details><summary>Hint 2</summary>
#
# The recipe's last layer has 3 rows on 2 ranks: rank 0 gets 2, rank 1 gets 1. Pieces have
# ceil(rows / ranks) rows and the last ranks get what is left, which can be nothing.
# </details>

# %%
model = nn.Sequential(nn.Linear(10, 7), nn.Tanh(), nn.Linear(7, 4))
held = ...  # [values on rank 0, rank 1, rank 2]

# %%
ch09_big_models.exercise_1(model, 3, held)

# %% [markdown]
# #### Solution

# %% tags=["solution"]
# Solution: open it once you have tried. It uses its own names, so your answer stays as it is.
solution_held = [0, 0, 0]
for solution_p in model.parameters():
    solution_rows = solution_p.shape[0]
    solution_piece = -(-solution_rows // 3)  # ceil(rows / 3)
    for solution_rank in range(3):
        solution_mine = max(0, min(solution_piece, solution_rows - solution_rank * solution_piece))
        solution_held[solution_rank] += solution_mine * (solution_p.numel() // solution_rows)
ch09_big_models.exercise_1(model, 3, solution_held)

# %% [markdown]
# ### Exercise 2 · Sync BN statistics without processes
#
# Each of 4 "ranks" holds `torch.randn(2, 3, 4, 4) + rank`. Fill in `global_mean` and
# `global_var`, the per-channel mean and biased variance of all ranks' data together, computed
# from each rank's sum, sum of squares and count only (what the all-reduce adds up).
#
# <details><summary>Hint 1</summary>
#
# Work out, for one rank, the three numbers per channel it would send; the all-reduce only adds
# them up. The mean and the variance both follow from the three totals.
# </details>
#
# <details><summary>Hint 2</summary>
#
# The channel is dimension 1, so the per-channel sums reduce the other three dimensions at once.
# The section on why BatchNorm goes wrong with small batches gives the variance from the totals.
# </details>

# %%
torch.manual_seed(0)
ranks = [torch.randn(2, 3, 4, 4) + r for r in range(4)]
global_mean = ...  # 3 values, from the ranks' sums and counts
global_var = ...  # 3 values, from the sums of squares too

# %%
ch09_big_models.exercise_2(ranks, global_mean, global_var)

# %% [markdown]
# #### Solution

# %% tags=["solution"]
# Solution: open it once you have tried. It uses its own names, so your answer stays as it is.
# per channel, summed over the ranks
solution_sum = sum(solution_t.sum((0, 2, 3)) for solution_t in ranks)
solution_squares = sum((solution_t * solution_t).sum((0, 2, 3)) for solution_t in ranks)
solution_count = sum(solution_t.numel() / solution_t.shape[1] for solution_t in ranks)
solution_mean = solution_sum / solution_count
solution_var = solution_squares / solution_count - solution_mean**2
ch09_big_models.exercise_2(ranks, solution_mean, solution_var)

# %% [markdown]
# ## Summary
#
# - BatchNorm on small per-device batches needs synchronised statistics: sum, sum of squares and
#   count in forward, two sums in backward, as the from-scratch version proves against BatchNorm
#   on the global batch; `nn.SyncBatchNorm` does it on accelerators.
# - A model split across the devices of one process is wrapped whole, `DDP(model,
#   device_ids=None)`; pipeline and tensor parallelism are the tools for splitting it well.
# - FSDP2's `fully_shard` keeps a shard of each parameter per rank, for models that do not fit;
#   one step still equals one step on the global batch. `MixedPrecisionPolicy` and
#   `reshard_after_forward` trade precision and memory for speed, and
#   `torch.distributed.checkpoint` saves and loads the shards.
#
# Next: [10 · Speedups, measured](../10_speedups.ipynb).
