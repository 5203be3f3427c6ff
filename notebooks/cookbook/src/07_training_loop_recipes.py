# %% [markdown]
# # 07 · The training loop: recipes
#
# [![Open In Colab](https://colab.research.google.com/assets/colab-badge.svg)](https://colab.research.google.com/github/pytorch-cookbook/pytorch-cookbook/blob/main/notebooks/cookbook/07_training_loop_recipes.ipynb)
#
# **The cookbook of chapter 07.** New to the topic? [The lesson](../07_training_loop.ipynb) teaches it
# step by step on the course's running example. Here each recipe answers one task; the
# [recipe index](../RECIPES.md) and the [error index](../ERRORS.md) find the one you need.
#
# Every training run is the same loop: take a batch, compute the loss, backpropagate, step the
# optimiser, and now and then evaluate. After this notebook you can write that loop by hand and know
# what torchkeras adds on top, lay out a training script with a config and resumable checkpoints,
# pick an optimiser and a learning-rate schedule, clip gradients, save checkpoints that resume
# **exactly** and cannot be destroyed by a crash, load them safely, stop early, and measure
# whether tricks like label smoothing and mixup help.
#
# **Prerequisites:** [03](../03_autograd.ipynb)-[06](../06_losses.ipynb).
#
# **Run time:** about 40 s on a 2-core CPU · GPU optional.

# %%
import sys

if (
    "google.colab" in sys.modules
):  # Colab: install the course's helpers and what the notebooks import
    import subprocess

    spec = "pytorch-cookbook[notebooks] @ git+https://github.com/pytorch-cookbook/pytorch-cookbook"
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", spec], check=True)

import argparse
import copy
import inspect
import math
import pickle
import random
import re
import shutil
import time
import warnings
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import torch
import torch.nn.functional as F
import torchmetrics
from torch import nn
from torch.utils.data import DataLoader, TensorDataset
from torchvision.transforms import v2

from helpers.check import check, expect_error
from helpers.checkpoint import atomic_save
from helpers.datasets import ImageTensors
from helpers.env import setup
from helpers.exercises import ch07
from helpers.images import channel_stats, load_cifar2
from helpers.models import small_cnn
from helpers.train import decay_groups, fit, import_torchkeras

torchkeras = import_torchkeras()
device = setup(seed=0)
runs = Path("runs")
runs.mkdir(exist_ok=True)

# %% [markdown]
# ## Write the training loop once, by hand
#
# Two functions hold the whole loop. Training: `model.train()`, then for each batch move it to the
# device, forward, loss, `zero_grad`, `backward`, `step`. Evaluation: `model.eval()` (dropout off,
# batch norm on running statistics) **and** `torch.inference_mode()` (no graph), with a torchmetrics
# metric that accumulates over batches. The data: CIFAR2 from [05](05_datasets_dataloaders_recipes.ipynb),
# decoded once into `uint8` tensors (`helpers.datasets.ImageTensors` is 05's in-memory Dataset),
# with random crops and flips for training. 1,000 training images are held out for validation and,
# to keep this notebook quick, the runs train on 3,000 of the other 9,000.

# %%
train_images, train_labels, _ = load_cifar2("train")
test_images, test_labels, _ = load_cifar2("test")
mean, std = channel_stats(train_images)
augment = v2.Compose(
    [v2.RandomCrop(32, padding=4, padding_mode="reflect"), v2.RandomHorizontalFlip()]
)
order = torch.randperm(len(train_images), generator=torch.Generator().manual_seed(0))
fit_idx, val_idx = order[1000:4000], order[:1000]
train_set = ImageTensors(train_images[fit_idx], train_labels[fit_idx], augment)
val_set = ImageTensors(train_images[val_idx], train_labels[val_idx])
test_set = ImageTensors(test_images, test_labels)
val_loader = DataLoader(val_set, batch_size=500)
test_loader = DataLoader(test_set, batch_size=500)
print(len(train_set), "training,", len(val_set), "validation,", len(test_set), "test images")


# %%
def train_one_epoch(model, loader, loss_fn, optimizer, scheduler=None) -> float:
    """Train for one pass over loader; return the mean training loss."""
    model.train()
    total, count = 0.0, 0
    for x, y in loader:
        x, y = x.to(device), y.to(device)
        loss = loss_fn(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        if scheduler is not None:
            scheduler.step()  # a per-step schedule; per-epoch ones step after the loop
        total += loss.item() * len(y)
        count += len(y)
    return total / count


def evaluate(model, loader) -> float:
    """Return the accuracy of model on loader."""
    model.eval()
    accuracy = torchmetrics.Accuracy(task="multiclass", num_classes=2).to(device)
    with torch.inference_mode():
        for x, y in loader:
            accuracy.update(model(x.to(device)), y.to(device))
    return accuracy.compute().item()


# %% [markdown]
# Two epochs with a small network (width 8, about 25,000 parameters), batches of 64, AdamW and a
# one-cycle schedule; the per-epoch lines vary with the machine, the checked result follows:

# %% tags=["nbval-ignore-output"]
def new_run(width: int = 8, epochs: int = 2, lr: float = 3e-3, seed: int = 0):
    """Return a seeded model, its optimizer, a one-cycle scheduler and a seeded loader."""
    torch.manual_seed(seed)
    model = small_cnn(mean, std, width=width).to(device)
    loader = DataLoader(
        train_set,
        batch_size=64,
        shuffle=True,
        drop_last=True,
        generator=torch.Generator().manual_seed(seed),
    )
    optimizer = torch.optim.AdamW(decay_groups(model, 5e-4), lr=lr)  # no decay on BN, biases
    scheduler = torch.optim.lr_scheduler.OneCycleLR(
        optimizer, max_lr=lr, total_steps=epochs * len(loader)
    )
    return model, optimizer, scheduler, loader


model, optimizer, scheduler, train_loader = new_run()
start = time.perf_counter()
for epoch in range(1, 3):
    loss = train_one_epoch(model, train_loader, nn.CrossEntropyLoss(), optimizer, scheduler)
    print(
        f"epoch {epoch}  train loss {loss:.4f}  val acc {evaluate(model, val_loader):.4f}"
        f"  ({time.perf_counter() - start:.0f} s)"
    )
hand_test_acc = evaluate(model, test_loader)
print(f"test accuracy {hand_test_acc:.4f}")

# %%
check(
    hand_test_acc > 0.85,
    "two epochs of the hand-written loop reach over 0.85 test accuracy",
    measured=f"{hand_test_acc:.4f}",
)
check(
    scheduler.last_epoch == 2 * len(train_loader) and not model.training,
    "the one-cycle schedule stepped once per batch to its end; evaluation left eval mode on",
)


# %% [markdown]
# ## Average a metric over batches with `AverageMeter`, then `torchmetrics.MeanMetric`
#
# The loop above averages the loss over samples by hand (`total += loss * len(y)`). Older
# training scripts wrap that bookkeeping in an `AverageMeter`; written once, it is six lines. The last batch is
# often smaller, so each update carries its weight (the batch size); a plain mean of per-batch
# losses would count its samples more. `torchmetrics.MeanMetric` is the maintained version (it
# also syncs across processes in distributed training, chapter 09).

# %%
class AverageMeter:
    """Running weighted mean: update(value, n) with n the number of samples behind value."""

    def __init__(self):
        self.sum, self.count = 0.0, 0

    def update(self, value: float, n: int = 1) -> None:
        self.sum += value * n
        self.count += n

    @property
    def avg(self) -> float:
        return self.sum / self.count


meter, mean_metric = AverageMeter(), torchmetrics.MeanMetric()
batch_losses = [(0.9, 128), (0.7, 128), (0.2, 16)]  # (mean loss of the batch, batch size)
for value, n in batch_losses:
    meter.update(value, n)
    mean_metric.update(torch.tensor(value), weight=n)
plain = sum(v for v, _ in batch_losses) / len(batch_losses)
print(f"AverageMeter {meter.avg:.4f} | MeanMetric {mean_metric.compute().item():.4f}", end="")
print(f" | plain mean of batch means {plain:.4f}")
check(
    abs(meter.avg - mean_metric.compute().item()) < 1e-6 and abs(meter.avg - plain) > 0.05,
    "AverageMeter and MeanMetric weight by batch size; a mean of batch means does not",
)

# %% [markdown]
# ## Let torchkeras run the same loop
#
# `torchkeras.KerasModel` is this loop plus the chores: metrics per step and epoch, a validation
# pass, keeping the best checkpoint by a monitored metric (`ckpt_path`, reloaded at the end), early
# stopping (`patience`), and the history as a pandas DataFrame. (It also clips gradients to norm
# 1.0 at every step, uses `accelerate` for devices and mixed precision; `helpers.train.fit` runs
# its `fit` printing one line per epoch instead of its progress bars and banners.)

# %% tags=["nbval-ignore-output"]
model, optimizer, scheduler, train_loader = new_run()
keras_model = torchkeras.KerasModel(
    model,
    loss_fn=nn.CrossEntropyLoss(),
    optimizer=optimizer,
    lr_scheduler=scheduler,
    metrics_dict={"acc": torchmetrics.Accuracy(task="multiclass", num_classes=2)},
)
history = fit(
    keras_model,
    train_loader,
    val_loader,
    epochs=2,
    patience=2,
    monitor="val_acc",
    mode="max",
    ckpt_path=str(runs / "07_keras.pt"),
)
keras_test_acc = keras_model.evaluate(test_loader, quiet=True)["val_acc"]
history

# %%
check(
    list(history.columns)[:3] == ["epoch", "train_loss", "train_acc"],
    "torchkeras returns the history as a DataFrame",
)
check(
    abs(keras_test_acc - hand_test_acc) < 0.03,
    "torchkeras (which also clips gradients) and the hand-written loop agree within 0.03",
    measured=f"{keras_test_acc:.4f} vs {hand_test_acc:.4f}",
)

# %% [markdown]
# ## Lay out a training script
#
# A notebook is for exploring; a run you want to repeat, schedule or resume belongs in a script.
# The layout commonly recommended for a training script, in one file: a config (flags with defaults), seeding, data with a
# validation split, model, loss, optimiser, scheduler, a loop that validates and saves a
# checkpoint every epoch (and the best model separately), and `--resume` to continue.
#
# One design point matters for resuming: the **run's** length (`--total-epochs`) is part of the
# configuration and of the checkpoint, and the learning-rate schedule spans it. A script that
# builds its schedule from "the epochs to run now" trains a resumed run on the wrong schedule:
# a first run of 1 epoch anneals the learning rate to 0, and the resumed epoch trains at lr 0
# while its log looks normal. The check below compares weights, not logs.
# `--stop-after` ends an invocation early, as an interruption would. `%%writefile` saves the cell
# as a real file (it prints "Writing" the first time, "Overwriting" after):

# %% tags=["nbval-ignore-output"]
# %%writefile runs/train_cifar2.py
"""Train the course's small CNN on CIFAR2, resumably. Usage: python train_cifar2.py --help"""

import argparse
from pathlib import Path

import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

from helpers.checkpoint import atomic_save
from helpers.env import pick_device, seed_everything, spare_a_core
from helpers.images import channel_stats, load_cifar2
from helpers.models import small_cnn
from helpers.train import decay_groups


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--total-epochs", type=int, default=2, help="the run's length")
    parser.add_argument("--stop-after", type=int, help="end this invocation after that epoch")
    parser.add_argument("--resume", action="store_true", help="continue from OUT/last.pt")
    parser.add_argument("--out", type=Path, default=Path("runs/script"))
    parser.add_argument("--lr", type=float, default=3e-3)
    parser.add_argument("--batch-size", type=int, default=128)
    parser.add_argument("--train-size", type=int, default=9000, help="images to train on")
    parser.add_argument("--width", type=int, default=8)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--device", default=None, help="cpu, cuda, mps (default: the best)")
    return parser.parse_args()


@torch.no_grad()
def accuracy(model: nn.Module, loader: DataLoader, device: torch.device) -> float:
    model.eval()
    right = sum((model(x.to(device)).argmax(1) == y.to(device)).sum().item() for x, y in loader)
    return right / len(loader.dataset)


def main() -> None:
    args = parse_args()
    seed_everything(args.seed)
    spare_a_core()
    device = torch.device(args.device) if args.device else pick_device()
    images, labels, _ = load_cifar2("train")
    order = torch.randperm(len(images), generator=torch.Generator().manual_seed(args.seed))
    fit, val = order[: args.train_size], order[-1000:]  # the folder is sorted by class
    loader = DataLoader(
        TensorDataset(images[fit], labels[fit]),
        batch_size=args.batch_size,
        shuffle=True,
        generator=torch.Generator().manual_seed(args.seed),
    )
    val_loader = DataLoader(TensorDataset(images[val], labels[val]), batch_size=500)
    model = small_cnn(*channel_stats(images), width=args.width).to(device)
    loss_fn = nn.CrossEntropyLoss()
    optimizer = torch.optim.AdamW(decay_groups(model, 5e-4), lr=args.lr)
    scheduler = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=args.total_epochs)
    start_epoch, best, history = 0, 0.0, []
    args.out.mkdir(parents=True, exist_ok=True)
    if args.resume:
        # map_location="cpu": the RNG states must stay CPU tensors (set_rng_state refuses others);
        # load_state_dict copies the weights onto the model's device.
        state = torch.load(args.out / "last.pt", map_location="cpu", weights_only=True)
        if state["total_epochs"] != args.total_epochs:
            raise SystemExit(f"the checkpoint is from a {state['total_epochs']}-epoch run")
        for name, part in [("model", model), ("optimizer", optimizer), ("scheduler", scheduler)]:
            part.load_state_dict(state[name])
        loader.generator.set_state(state["loader_generator"])
        torch.set_rng_state(state["torch_rng"])
        start_epoch, best, history = state["epoch"], state["best_val_acc"], state["val_acc"]
        print(f"resumed from {args.out / 'last.pt'} after epoch {start_epoch}")
    for epoch in range(start_epoch, args.total_epochs):
        model.train()
        lr = scheduler.get_last_lr()[0]
        total = 0.0
        for x, y in loader:
            loss = loss_fn(model(x.to(device)), y.to(device))
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            total += loss.item() * len(y)
        scheduler.step()
        val_acc = accuracy(model, val_loader, device)
        history.append(val_acc)
        if val_acc > best:
            best = val_acc
            atomic_save({"model": model.state_dict(), "epoch": epoch + 1}, args.out / "best.pt")
        state = {
            "model": model.state_dict(),
            "optimizer": optimizer.state_dict(),
            "scheduler": scheduler.state_dict(),
            "epoch": epoch + 1,
            "total_epochs": args.total_epochs,
            "best_val_acc": best,
            "val_acc": history,
            "loader_generator": loader.generator.get_state(),
            "torch_rng": torch.get_rng_state(),
        }
        atomic_save(state, args.out / "last.pt")
        print(
            f"epoch {epoch + 1}/{args.total_epochs}  lr {lr:.2e}  "
            f"loss {total / len(fit):.4f}  val_acc {val_acc:.4f}  saved"
        )
        if args.stop_after == epoch + 1:
            print(f"stopped after epoch {epoch + 1}, as an interruption would")
            break


if __name__ == "__main__":
    main()

# %% [markdown]
# Run it three times, each in a fresh process: once straight through, and once interrupted after
# the first epoch and resumed. `sys.executable` is the Python of this notebook; the script finds
# `helpers` because it is installed in this environment. The straight run and the interrupted
# one do not depend on each other, so they run side by side: `subprocess.Popen` starts a process
# and returns at once, `communicate` waits for it and collects its output. The resumed invocation
# starts once the checkpoint it reads is written. (To keep this notebook quick, the runs train on
# 2,000 images, on the CPU: bit-for-bit equality on a GPU also needs deterministic kernels,
# [13](13_reproducibility_debugging_recipes.ipynb).)

# %% tags=["nbval-ignore-output"]
import subprocess

from helpers.tether import tethered  # stops the script, and all it started, if this kernel dies

script = [sys.executable, str(runs / "train_cifar2.py"), "--total-epochs", "2", "--device", "cpu"]
for folder in ("script_straight", "script_resumed"):  # each run of this notebook starts afresh
    shutil.rmtree(runs / folder, ignore_errors=True)


def start(*flags: str) -> subprocess.Popen:
    """Start the script in a new process; return at once."""
    command = [*script, "--train-size", "2000", *flags]
    return subprocess.Popen(
        tethered(command), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )


def finish(job: subprocess.Popen) -> str:
    """Wait for a started script (at most 5 minutes); return what it printed."""
    out, err = job.communicate(timeout=300)
    if job.returncode != 0:
        raise RuntimeError(f"the script failed:\n{err[-2000:]}")
    return out


jobs = [
    start("--out", str(runs / "script_straight")),
    start("--out", str(runs / "script_resumed"), "--stop-after", "1"),
]
try:
    for job in jobs:
        print(finish(job))
    jobs.append(start("--out", str(runs / "script_resumed"), "--resume"))
    resumed_log = finish(jobs[-1])
    print(resumed_log)
finally:
    for job in jobs:
        if job.poll() is None:  # only after an error: the cell leaves no process behind
            job.kill()
            job.wait()

# %%
straight = torch.load(runs / "script_straight/last.pt", weights_only=True)
resumed = torch.load(runs / "script_resumed/last.pt", weights_only=True)
same = all(torch.equal(straight["model"][k], resumed["model"][k]) for k in straight["model"])
check(
    "resumed from" in resumed_log and "epoch 2/2  lr 1.50e-03" in resumed_log,
    "the resumed invocation trained epoch 2 at the run's schedule (cosine over 2 epochs)",
)
check(
    same and straight["epoch"] == resumed["epoch"] == 2,
    "interrupted and resumed, the run ends with the same weights bit for bit",
)

# %% tags=["nbval-ignore-output"]
# The accuracies' last digits depend on the CPU's kernels: printed, not compared.
best_saved = torch.load(runs / "script_resumed/best.pt", weights_only=True)
best_epoch = 1 + max(range(len(resumed["val_acc"])), key=resumed["val_acc"].__getitem__)
print(
    "validation accuracy per epoch:",
    resumed["val_acc"],
    "· best.pt from epoch",
    best_saved["epoch"],
)

# %%
check(
    best_saved["epoch"] == best_epoch
    and (
        best_epoch != resumed["epoch"]
        or all(torch.equal(best_saved["model"][k], resumed["model"][k]) for k in resumed["model"])
    ),
    "best.pt holds the epoch with the highest validation accuracy",
)

# %% [markdown]
# ## Choose an optimiser
#
# - **SGD** with `momentum` (usually 0.9) averages recent gradients; `nesterov=True` evaluates the
#   gradient a step ahead. Strong with a good schedule, the classic choice for CNNs.
# - **Adam** adapts a step size per parameter; **AdamW** is Adam with decoupled weight decay
#   (see [06](06_losses_recipes.ipynb)) and the usual default for transformers and most new code.
#
# On a badly conditioned quadratic (one direction 100× steeper than the other), 100 steps each. The
# SGD variants share one learning rate (0.005; much larger and Nesterov diverges here, since the
# steep direction bounds the stable step). Adam's learning rate is a step size in parameter units,
# so it gets its own:

# %%
A = torch.diag(torch.tensor([1.0, 100.0]))


def optimise(make_optimizer, steps: int = 100) -> list[float]:
    w = torch.tensor([1.0, 1.0], requires_grad=True)
    optimizer = make_optimizer([w])
    losses = []
    for _ in range(steps):
        loss = 0.5 * w @ A @ w
        losses.append(loss.item())
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    return losses


curves = {
    "SGD": optimise(lambda p: torch.optim.SGD(p, lr=0.005)),
    "SGD, momentum 0.9": optimise(lambda p: torch.optim.SGD(p, lr=0.005, momentum=0.9)),
    "SGD, Nesterov": optimise(lambda p: torch.optim.SGD(p, lr=0.005, momentum=0.9, nesterov=True)),
    "Adam (lr 0.05)": optimise(lambda p: torch.optim.Adam(p, lr=0.05)),
}
fig, ax = plt.subplots(figsize=(5, 3.2))
for name, losses in curves.items():
    ax.semilogy(losses, label=name)
ax.set(xlabel="step", ylabel="loss", title="One quadratic, four optimisers")
ax.legend()
plt.show()
for name, losses in curves.items():
    print(f"{name:<18} loss after 100 steps: {losses[-1]:.2e}")
check(
    curves["SGD, momentum 0.9"][-1] < curves["SGD"][-1] / 100,
    "momentum gets 100× closer than plain SGD in the same 100 steps",
)

# %% [markdown]
# ### Read and change the current learning rate
#
# The learning rate lives in `optimizer.param_groups`, one dict per group: read it there, and
# change it there (that is all a scheduler does; a scheduler also reports the values it set,
# `scheduler.get_last_lr()`, one per group).

# %%
net = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 2))
optimizer = torch.optim.SGD(
    [{"params": net[0].parameters(), "lr": 1e-3}, {"params": net[2].parameters()}],
    lr=1e-2,
    momentum=0.9,
)
print("learning rates:", [group["lr"] for group in optimizer.param_groups])
for group in optimizer.param_groups:
    group["lr"] *= 0.5
print("after halving: ", [group["lr"] for group in optimizer.param_groups])


# %% [markdown]
# ## Schedule the learning rate
#
# Schedulers change `lr` each time you call `scheduler.step()`: per epoch or per step, as the
# scheduler is set up (here per step, 100 steps). `SequentialLR` chains schedulers, which is how a
# linear warm-up followed by cosine decay is built; `LambdaLR` takes any function of the step.
# `ReduceLROnPlateau` instead watches a metric you pass to `step(metric)`.

# %%
def lrs(make_scheduler, steps: int = 100, metric=None) -> list[float]:
    optimizer = torch.optim.SGD([torch.zeros(1, requires_grad=True)], lr=0.1)
    scheduler = make_scheduler(optimizer)
    values = []
    for step in range(steps):
        values.append(optimizer.param_groups[0]["lr"])
        optimizer.step()
        scheduler.step(metric(step)) if metric else scheduler.step()
    return values


sched = torch.optim.lr_scheduler
warmup = 10
schedules = {
    "StepLR(30, 0.5)": lrs(lambda o: sched.StepLR(o, step_size=30, gamma=0.5)),
    "MultiStepLR([50, 80])": lrs(lambda o: sched.MultiStepLR(o, milestones=[50, 80], gamma=0.2)),
    "CosineAnnealingLR": lrs(lambda o: sched.CosineAnnealingLR(o, T_max=100)),
    "OneCycleLR": lrs(lambda o: sched.OneCycleLR(o, max_lr=0.1, total_steps=100)),
    "warm-up + cosine (SequentialLR)": lrs(
        lambda o: sched.SequentialLR(
            o,
            [
                sched.LinearLR(o, start_factor=0.01, total_iters=warmup),
                sched.CosineAnnealingLR(o, T_max=100 - warmup),
            ],
            milestones=[warmup],
        )
    ),
    "ReduceLROnPlateau (loss stalls at 40)": lrs(
        lambda o: sched.ReduceLROnPlateau(o, factor=0.5, patience=5),
        metric=lambda step: max(1.0 - step / 40, 0.0),
    ),
}
fig, axes = plt.subplots(2, 3, figsize=(11, 5), sharex=True, layout="constrained")
for ax, (name, values) in zip(axes.ravel(), schedules.items(), strict=True):
    ax.plot(values)
    ax.set(title=name, xlabel="step", ylabel="lr")
plt.show()
ws = schedules["warm-up + cosine (SequentialLR)"]
check(
    ws[0] < 0.002 and abs(max(ws) - 0.1) < 1e-6 and ws[-1] < 0.001,
    "warm-up + cosine starts near 0, peaks at the base lr and decays to about 0",
)


# %% [markdown]
# ### Warm up, then decay in steps: the second scheduler counts from the milestone
#
# Old scripts write `adjust_learning_rate(optimizer, epoch)`: a linear warm-up over the first
# epochs, then ×0.1 every 30 epochs. With `SequentialLR` the scheduler after the milestone
# starts counting at **0 there**, so `StepLR(step_size=30)` after a 5-epoch warm-up first decays
# at epoch 35, not 30. Give the milestones relative to the end of the warm-up (here per epoch):

# %%
def epoch_lrs(after_warmup) -> list[float]:
    optimizer = torch.optim.SGD([torch.zeros(1, requires_grad=True)], lr=0.1)
    warm = sched.LinearLR(optimizer, start_factor=0.2, total_iters=5)
    scheduler = sched.SequentialLR(optimizer, [warm, after_warmup(optimizer)], milestones=[5])
    values = []
    for _ in range(70):
        values.append(optimizer.param_groups[0]["lr"])
        optimizer.step()
        scheduler.step()
    return values


naive = epoch_lrs(lambda o: sched.StepLR(o, step_size=30, gamma=0.1))
shifted = epoch_lrs(lambda o: sched.MultiStepLR(o, milestones=[30 - 5, 60 - 5], gamma=0.1))
first_decay = {
    name: next(epoch for epoch in range(5, 70) if values[epoch] < 0.05)  # after the warm-up
    for name, values in {"StepLR(30)": naive, "MultiStepLR([25, 55])": shifted}.items()
}
print("first decay after the warm-up, at epoch:", first_decay)
check(
    first_decay == {"StepLR(30)": 35, "MultiStepLR([25, 55])": 30}
    and abs(shifted[60] - 0.001) < 1e-9,
    "after a 5-epoch warm-up, milestones count from epoch 5",
)

# %% [markdown]
# ## Clip gradients and watch their norm
#
# A single bad batch can produce a huge gradient and undo many steps. `clip_grad_norm_` rescales
# all gradients together so their total norm is at most `max_norm`, and **returns the norm before
# clipping**: log it, it is the cheapest health check of a training run. `clip_grad_value_`
# clamps each element instead.

# %%
torch.manual_seed(0)
net = nn.Sequential(nn.Linear(10, 32), nn.ReLU(), nn.Linear(32, 1))
loss = F.mse_loss(net(torch.randn(64, 10)), torch.randn(64, 1) * 100)  # outsized targets
loss.backward()
before = nn.utils.clip_grad_norm_(net.parameters(), max_norm=1.0)
after = torch.linalg.vector_norm(torch.stack([p.grad.norm() for p in net.parameters()]))
print(f"total gradient norm before: {before:.1f}, after clipping: {after:.4f}")
nn.utils.clip_grad_value_(net.parameters(), clip_value=0.01)
print(
    "largest element after clip_grad_value_:",
    f"{max(p.grad.abs().max().item() for p in net.parameters()):.4g}",
)
check(abs(after.item() - 1.0) < 1e-4, "clip_grad_norm_ rescaled the total norm to max_norm")

# %% [markdown]
# ## Train in mixed precision with `autocast` and `GradScaler`, unscaling before clipping
#
# `torch.autocast(device_type, dtype)` runs eligible operations (matrix products, convolutions)
# in `float16` or `bfloat16`, keeping the weights in `float32`. With `float16`, small gradients
# underflow to zero, so `GradScaler` multiplies the loss by a large scale before `backward()` and
# divides the gradients by it before the step. Two consequences:
#
# - gradients are **scaled** after `backward()`: call `scaler.unscale_(optimizer)` before
#   clipping or logging their norm, or you clip at `max_norm × scale`;
# - when the scaled gradients overflow (`inf`), `scaler.step` **skips** the step and
#   `scaler.update()` halves the scale; when steps keep succeeding it grows again.
#
# `bfloat16` has `float32`'s range and needs no scaler (on CPUs and recent GPUs it is the one to
# use). The speed side of mixed precision is measured in
# [10](10_speedups_recipes.ipynb#Find-out-whether-bf16-pays-on-this-CPU); here, the
# mechanics, in `float16` on this machine's device (autocast runs on CPU too):

# %% tags=["nbval-ignore-output"]
torch.manual_seed(0)
net = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 1)).to(device)
opt = torch.optim.SGD(net.parameters(), lr=0.01)
# drawn on the CPU and moved: the same numbers on every device (a GPU's generator draws others,
# and whether step 0 overflows depends on them)
x_amp, y_amp = torch.randn(32, 8).to(device), torch.randn(32, 1).to(device)
scaler = torch.amp.GradScaler(device.type)  # the scale starts at 2**16
log = []
for step in range(4):
    with torch.autocast(device.type, dtype=torch.float16):
        out = net(x_amp)  # float16 inside autocast
        loss = F.mse_loss(out.float(), y_amp)  # the loss in float32
    opt.zero_grad()
    scaler.scale(loss).backward()
    scaled_norm = torch.linalg.vector_norm(torch.stack([p.grad.norm() for p in net.parameters()]))
    scaler.unscale_(opt)  # gradients are now the true ones
    true_norm = nn.utils.clip_grad_norm_(net.parameters(), max_norm=1.0)
    scale = scaler.get_scale()
    before = net[0].weight.detach().clone()
    scaler.step(opt)  # skipped if any gradient is inf or nan
    scaler.update()
    stepped = not torch.equal(before, net[0].weight)
    log.append((scale, scaled_norm.item(), true_norm.item(), stepped))
    print(
        f"step {step}: scale {scale:>7.0f}  scaled grad norm {scaled_norm.item():>9.4g}  "
        f"unscaled {true_norm.item():.4g}  {'stepped' if stepped else 'skipped'}"
    )
print("out.dtype inside autocast:", out.dtype)

# %%
skipped = [s for s in log if not s[3]]
taken = [s for s in log if s[3]]
check(
    len(skipped) > 0
    and all(not math.isfinite(s[1]) for s in skipped)
    and len(taken) > 0
    and taken[0][0] == skipped[0][0] / 2,
    "an overflowing step is skipped, the scaler halves the scale, and then steps go through",
)
scale, scaled, unscaled, _ = taken[0]
check(
    abs(scaled / unscaled / scale - 1) < 1e-3,
    "before unscale_ the gradients are the true ones times the scale",
)


# %% [markdown]
# ### Pitfall: `Detected call of lr_scheduler.step() before optimizer.step()` with a `GradScaler`
#
# Add a learning-rate scheduler to this loop and the first epoch may print that warning, though
# the code calls `scaler.step(optimizer)` before `scheduler.step()`. The scaler skipped the
# optimiser's step (the gradients overflowed at the starting scale), and the scheduler noticed
# that the optimiser had not stepped yet. It is harmless for most schedules: the schedule runs
# one step ahead of the updates (its first value went to the skipped step). To keep the two in
# step, step the scheduler only when the scaler did not skip: a skipped step lowers the scale.

# %% tags=["nbval-ignore-output"]
def amp_steps(skip_aware: bool) -> tuple[list[str], list[bool]]:
    """Two float16 autocast steps with a scheduler; the warnings and which steps were taken."""
    torch.manual_seed(0)
    net = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 1)).to(device)
    opt = torch.optim.SGD(net.parameters(), lr=0.01)
    scheduler = torch.optim.lr_scheduler.StepLR(opt, step_size=1, gamma=0.5)
    scaler = torch.amp.GradScaler(device.type)
    taken = []
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for _ in range(2):
            with torch.autocast(device.type, dtype=torch.float16):
                loss = F.mse_loss(net(x_amp).float(), y_amp)
            opt.zero_grad()
            scaler.scale(loss).backward()
            scale_before = scaler.get_scale()
            scaler.step(opt)
            scaler.update()
            taken.append(scaler.get_scale() >= scale_before)  # a skipped step lowers the scale
            if taken[-1] or not skip_aware:
                scheduler.step()
    return [str(w.message).split(".")[0] for w in caught], taken


plain_warnings, plain_taken = amp_steps(skip_aware=False)
aware_warnings, _ = amp_steps(skip_aware=True)
print("steps taken:", plain_taken)
print("warnings, scheduler stepped every time:", plain_warnings)
print("warnings, scheduler stepped after a taken step only:", aware_warnings)

# %%
check(
    bool(plain_warnings) == (not plain_taken[0]) and aware_warnings == [],
    "the warning comes when the scaler skipped the first step; stepping the scheduler only "
    "after a taken step silences it",
)

# %% [markdown]
# ### Pitfall: the loss is `inf` or `nan` under float16 autocast, and the scaler skips every step
#
# `GradScaler` deals with an overflow in the **gradients**: it skips that step and lowers the
# scale. It cannot help when the **forward pass** overflows: an activation beyond float16's
# largest value, 65,504 ([01](01_tensors_recipes.ipynb#Know-float16-and-bfloat16)), is `inf`,
# the loss is `inf` or `nan`, every gradient is too, so every step is skipped and the scale
# halves each time while the run learns nothing. The usual causes: inputs that were never
# normalised (pixel values up to 255 through a wide layer), logits that grow as training goes,
# a loss written by hand on float16 activations (autocast runs the built-in losses in float32,
# but `x * x` stays in float16, and on the CPU so do `exp` and `sum`: call `.float()` first).
# Below, one layer's outputs reach 81,600 (set by hand here, to show it in three steps), under
# float16, under bfloat16, and with that layer taken out of autocast:

# %% tags=["nbval-ignore-output"]
wide = nn.Linear(64, 1).to(device)
with torch.no_grad():
    wide.weight.fill_(5.0)  # 64 inputs of 255 times 5: outputs of 81,600
    wide.bias.zero_()
pixels = torch.full((4, 64), 255.0, device=device)
zeros = torch.zeros(4, 1, device=device)
overflow_opt = torch.optim.SGD(wide.parameters(), lr=0.01)
overflow_scaler = torch.amp.GradScaler(device.type)
fp16_steps = []
for step in range(3):
    with torch.autocast(device.type, dtype=torch.float16):
        out16 = wide(pixels)  # the forward pass overflows: inf
        overflow_loss = F.mse_loss(out16.float(), zeros)  # float32 loss: too late
    overflow_opt.zero_grad()
    scale = overflow_scaler.get_scale()
    overflow_scaler.scale(overflow_loss).backward()
    overflow_scaler.step(overflow_opt)  # skipped: the gradients are not finite
    overflow_scaler.update()
    fp16_steps.append((scale, overflow_loss.item()))
    print(f"float16 step {step}: scale {scale:>7.0f}  loss {overflow_loss.item()}")

with torch.autocast(device.type, dtype=torch.bfloat16):
    out_bf16 = wide(pixels)  # float32's range, 2-3 significant digits: 81,600 becomes 81,408
with torch.autocast(device.type, dtype=torch.float16):
    out16 = wide(pixels)  # as above: inf
    with torch.autocast(device.type, enabled=False):  # this layer in float32; what comes out
        out_fp32 = wide(pixels.float())  # of autocast layers is float16: .float() it first
print(
    "float16:", out16[0].item(), "| bfloat16:", out_bf16[0].item(), "| float32:", out_fp32[0].item()
)

# %%
scales = [scale for scale, _ in fp16_steps]
check(
    all(not math.isfinite(loss) for _, loss in fp16_steps)
    and bool(torch.all(wide.weight == 5.0))
    and scales == [scales[0], scales[0] / 2, scales[0] / 4],
    "a float16 forward overflow makes every loss non-finite: every step skipped (the weights "
    "unchanged), the scale halved each time",
)
check(
    out_bf16.dtype == torch.bfloat16
    and math.isfinite(out_bf16[0].item())
    and out_fp32.dtype == torch.float32
    and out_fp32[0].item() == 81600.0,
    "bfloat16, or the layer run in float32, keeps the outputs finite",
)

# %% [markdown]
# To find where it starts: check `torch.isfinite(x).all()` on the activations inside autocast, or
# register a forward hook on each module that reports the first non-finite output (cookbook 13's
# [NaN hunt](13_reproducibility_debugging_recipes.ipynb#Hunt-NaN-and-Inf:-a-learning-rate-too-high,-anomaly-detection,-finite-checks)
# and its first exercise). Then normalise the inputs, use bfloat16 where the device has it (CPUs,
# fast on those with AVX-512 BF16 or AMX; NVIDIA GPUs from Ampere on: a Colab T4 only emulates
# it, which `torch.cuda.is_bf16_supported(including_emulation=False)` tells you), or take the
# layer or the loss that overflows out of autocast as above. If the activations stay finite and
# the loss still turns `nan`, look elsewhere: a learning rate too large, a `log` of zero, a
# division by zero; find it the same way.

# %% [markdown]
# ### Pitfall: Adam turns the weights of a `.half()` model into `inf` or `nan`
#
# Code that runs the whole model in float16 with `model.half()`, instead of autocast, has one
# more cause of `inf` and `nan`: the optimiser's state is float16 too, and Adam's default `eps`
# is 0 in float16. Adam divides each step by the square root of its running mean of squared
# gradients, plus `eps`; after one step that mean is (1 − β₂) × g², which underflows to 0 in
# float16 for any gradient below about 5e-3, and the division gives `inf` (`nan` for a zero
# gradient). It happens from the first step, for every such weight; in a long run it often shows
# up later, as gradients become small. One Adam step on three weights, in float16 and in
# float32, then in float16 with a larger `eps`:

# %%
adam_grads = [1e-5, 0.0, 1e-2]
adam_eps = torch.optim.Adam([nn.Parameter(torch.ones(1))]).defaults["eps"]
adam_beta2 = torch.optim.Adam([nn.Parameter(torch.ones(1))]).defaults["betas"][1]
print(f"gradients {adam_grads}; Adam's default eps {adam_eps} is", end=" ")
print(
    torch.tensor(adam_eps, dtype=torch.float16).item(),
    f"in float16; 1 - beta2 = {1 - adam_beta2:.3f}",
)
after_adam = {}
for label, dtype, eps in [
    ("float16", torch.float16, adam_eps),
    ("float32", torch.float32, adam_eps),
    ("float16, eps=1e-4", torch.float16, 1e-4),
]:
    weights = nn.Parameter(torch.ones(3, dtype=dtype))
    weights.grad = torch.tensor(adam_grads, dtype=dtype)
    torch.optim.Adam([weights], lr=1e-3, eps=eps).step()
    after_adam[label] = [round(w, 4) for w in weights.detach().float().tolist()]
    print(f"{label:18} weights after one step: {after_adam[label]}")

# %%
check(
    not all(map(math.isfinite, after_adam["float16"]))
    and all(map(math.isfinite, after_adam["float32"] + after_adam["float16, eps=1e-4"])),
    "float16 Adam state turns a tiny or zero gradient into inf or nan; float32 state, or a "
    "larger eps, does not",
)

# %% [markdown]
# Autocast keeps the parameters and the optimiser's state in float32, which is one more reason to
# prefer it to `.half()`; code that must keep float16 weights raises `eps` (1e-4 above).

# %% [markdown]
# ## Save a checkpoint that resumes exactly
#
# To continue a run as if it had never stopped, a checkpoint needs more than the weights: the
# optimiser's state (momentum, Adam's moments), the scheduler's, the epoch, and every random state
# the run draws from (here torch's global generator, which dropout uses, and the DataLoader's
# shuffling generator). The proof: six epochs in one go against three, a checkpoint, fresh
# objects, and three more. The losses must be **identical**, not just close.

# %%
gen = torch.Generator().manual_seed(0)
xs = torch.randn(512, 8, generator=gen)
ys = (xs[:, :2].sum(dim=1, keepdim=True) > 0).float()


def make_run():
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(8, 32), nn.ReLU(), nn.Dropout(0.2), nn.Linear(32, 1))
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-2)
    scheduler = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=6)
    loader = DataLoader(
        TensorDataset(xs, ys),
        batch_size=64,
        shuffle=True,
        generator=torch.Generator().manual_seed(1),
    )
    return model, optimizer, scheduler, loader


def run_epochs(model, optimizer, scheduler, loader, epochs) -> list[float]:
    losses = []
    for _ in epochs:
        model.train()
        for x, y in loader:
            loss = F.binary_cross_entropy_with_logits(model(x), y)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            losses.append(loss.item())
        scheduler.step()
    return losses


uninterrupted = run_epochs(*make_run(), epochs=range(6))

model, optimizer, scheduler, loader = make_run()
first_half = run_epochs(model, optimizer, scheduler, loader, epochs=range(3))
checkpoint = {
    "model": model.state_dict(),
    "optimizer": optimizer.state_dict(),
    "scheduler": scheduler.state_dict(),
    "epoch": 3,
    "torch_rng": torch.get_rng_state(),
    "loader_rng": loader.generator.get_state(),
    "python_rng": random.getstate(),
}
atomic_save(checkpoint, runs / "07_resume.pt")
del model, optimizer, scheduler, loader  # as if the process had died

model, optimizer, scheduler, loader = make_run()  # a fresh process builds everything again
state = torch.load(runs / "07_resume.pt", weights_only=True)
model.load_state_dict(state["model"])
optimizer.load_state_dict(state["optimizer"])
scheduler.load_state_dict(state["scheduler"])
torch.set_rng_state(state["torch_rng"])
loader.generator.set_state(state["loader_rng"])
random.setstate(state["python_rng"])
second_half = run_epochs(model, optimizer, scheduler, loader, epochs=range(state["epoch"], 6))

last = ", ".join(f"{x:.4f}" for x in uninterrupted[-3:])
print(f"{len(uninterrupted)} steps; last losses, uninterrupted: {last}")
last = ", ".join(f"{x:.4f}" for x in second_half[-3:])
print(f"{len(first_half + second_half)} steps; last losses, resumed:       {last}")
check(
    first_half + second_half == uninterrupted,
    "the resumed run repeats the uninterrupted one step for step, bit for bit",
)

# %% [markdown]
# With float16 autocast, the `GradScaler` is state too: its scale and its growth tracker. A fresh
# scaler starts again at 2**16, and the first resumed steps overflow and are skipped (as step 0
# of the mixed-precision section did). Save `scaler.state_dict()` with the rest:

# %%
resumed_scaler = torch.amp.GradScaler(device.type)
resumed_scaler.load_state_dict(scaler.state_dict())  # the scaler of the mixed-precision section
print("saved:", {k: scaler.state_dict()[k] for k in ("scale", "_growth_tracker")})
print("fresh:", {k: torch.amp.GradScaler(device.type).state_dict()[k] for k in ("scale",)})
check(
    resumed_scaler.state_dict() == scaler.state_dict()
    and resumed_scaler.get_scale() != torch.amp.GradScaler(device.type).get_scale(),
    "a scaler loaded from the checkpoint continues at the run's scale, not at a fresh one's",
)

# %% [markdown]
# **What to notice:** leave out the optimiser state, the scheduler or the loader's generator and
# the check fails. The Python `random` state is saved for completeness: nothing in this loop
# draws from `random`, so here it changes nothing; it matters once augmentation does. The equality
# holds under these conditions: on the CPU, with the same thread count and versions, resuming at
# an epoch boundary. With CUDA, also save `torch.cuda.get_rng_state_all()` and turn on
# deterministic algorithms (chapter 13); with NumPy randomness in the pipeline, save NumPy's state
# too (loading it needs `weights_only=False` or an allow-list, see below). Resuming in the middle
# of an epoch also needs the sampler's position: `torchdata`'s `StatefulDataLoader` saves it.

# %% [markdown]
# ### Pitfall: after resuming, the optimiser's state is on another device than the model
#
# `optimizer.load_state_dict` puts AdamW's running averages where their parameter is **at that
# moment**: on its device, in its dtype. `model.to(device)` moves the parameters in place, so the
# optimiser still holds them, but their state does not move with them. Load the optimiser's
# state and move the model afterwards, and the state stays where the parameters were when it
# was loaded (wherever `torch.load` had put it); the next `step()` mixes the two and fails, after
# it has already counted the step and applied the weight decay to some parameters: rebuild in
# the right order rather than catch the error and carry on. With a GPU that is a model moved to
# `cuda` after loading, its state left on the CPU, and the error names the two devices. On this
# CPU a change of dtype stands in for the change of device (`.to(torch.float64)` where a GPU
# script calls `.to("cuda")`):

# %%
late_model, late_optimizer, _, _ = make_run()
saved = torch.load(runs / "07_resume.pt", weights_only=True)  # the checkpoint, as a resume reads it
late_optimizer.load_state_dict(saved["optimizer"])  # the state goes where the parameters are now
late_model.to(torch.float64)  # moved after loading: the state stays behind
late_model.load_state_dict(saved["model"])
late_model(xs[:8].double()).sum().backward()
late_state = late_optimizer.state[late_model[0].weight]
print("parameters:", late_model[0].weight.dtype, "| AdamW's state:", late_state["exp_avg"].dtype)
check(
    late_state["exp_avg"].dtype == torch.float32, "loaded before the move, the state kept its dtype"
)
with expect_error(RuntimeError, match="expected dtype"):
    late_optimizer.step()

# %% [markdown]
# The fix is the order: move the model first, then load the optimiser's state (the scheduler's
# and the model's in any order), and the state follows the parameters:

# %%
early_model, early_optimizer, _, _ = make_run()
saved = torch.load(runs / "07_resume.pt", weights_only=True)
early_model.to(torch.float64)  # first the move ...
early_model.load_state_dict(saved["model"])
early_optimizer.load_state_dict(saved["optimizer"])  # ... then the state follows
early_model(xs[:8].double()).sum().backward()
early_optimizer.step()
early_state = early_optimizer.state[early_model[0].weight]
print("parameters:", early_model[0].weight.dtype, "| AdamW's state:", early_state["exp_avg"].dtype)
check(
    early_state["exp_avg"].dtype == early_state["exp_avg_sq"].dtype == torch.float64,
    "loaded after the move, the optimiser's state follows its parameters, and the step runs",
)

# %% [markdown]
# ## Write checkpoints atomically
#
# `torch.save(obj, path)` truncates `path` first and then writes. If it fails half-way (a full
# disk, a killed process, an object that cannot be pickled), the **previous** checkpoint is gone
# too. Shown for real with an unpicklable object standing in for the crash:

# %%
naive = runs / "07_naive.pt"
torch.save({"epoch": 1}, naive)
try:
    torch.save({"epoch": 2, "callback": lambda: None}, naive)  # pickling fails half-way
except (pickle.PicklingError, AttributeError) as err:
    print("save failed:", type(err).__name__)
try:
    torch.load(naive, weights_only=True)
except Exception as err:
    print("and the previous checkpoint is destroyed:", type(err).__name__)

# %% [markdown]
# The fix is to write a temporary file **in the same folder** and rename it over the old one with
# `os.replace`, which is atomic: the path holds the old file or the new one, never half of either.
# `helpers.checkpoint.atomic_save` does exactly that, and also flushes the file and the folder to
# disk (`fsync`) so that even a power loss cannot leave an empty file behind the new name:

# %%
print(inspect.getsource(atomic_save))
safe = runs / "07_safe.pt"
atomic_save({"epoch": 1}, safe)
try:
    atomic_save({"epoch": 2, "callback": lambda: None}, safe)
except (pickle.PicklingError, AttributeError) as err:
    print("save failed:", type(err).__name__)
check(
    torch.load(safe, weights_only=True) == {"epoch": 1}
    and [p.name for p in runs.glob(".07_safe.pt-*")] == [],
    "after a failed atomic save the previous checkpoint loads, and no temporary file is left",
)


# %% [markdown]
# ## Load checkpoints with `weights_only=True`
#
# A `.pt` file is a pickle, and unpickling can run **any code** the file's author chose. Since
# PyTorch 2.6 `torch.load` defaults to `weights_only=True`, which only rebuilds tensors and plain
# containers. Here is a harmless "malicious" file: loading it the old way runs its code.

# %%
class Payload:
    def __reduce__(self):  # what pickle calls to rebuild the object: any function, any args
        return (print, ("!!! arbitrary code ran while loading the checkpoint !!!",))


torch.save({"weights": torch.ones(2), "extra": Payload()}, runs / "07_untrusted.pt")
loaded = torch.load(runs / "07_untrusted.pt", weights_only=False)  # the old default

# %%
with expect_error(pickle.UnpicklingError):
    torch.load(runs / "07_untrusted.pt", weights_only=True)

# %% [markdown]
# Only load with `weights_only=False` files you created yourself. To allow a specific harmless
# class, register it with `torch.serialization.add_safe_globals([...])` instead.

# %% [markdown]
# ### Pitfall: `Weights only load failed` for your own checkpoint
#
# Since PyTorch 2.6 the same error meets honest checkpoints: the ones that store, beside the
# weights, a NumPy number (a best accuracy computed with NumPy), a NumPy array (a confusion
# matrix) or the script's `argparse.Namespace`. The message's last lines name the first class it
# refused; saving the values one at a time shows what each of them needs:

# %%
honest = {
    "model": {"weight": torch.ones(2)},
    "best_accuracy": np.float64(0.91),  # from a NumPy computation
    "confusion": np.array([[40, 2], [3, 55]]),  # a metric kept as a NumPy array
    "args": argparse.Namespace(lr=0.1, epochs=5),  # the script's arguments
}
torch.save(honest, runs / "07_honest.pt")
with expect_error(pickle.UnpicklingError, match="Unsupported global") as caught:
    torch.load(runs / "07_honest.pt", weights_only=True)


def refused_class(error: Exception) -> str:
    return re.search(r"Unsupported global: GLOBAL (\S+)", str(error)).group(1)


refused = {}
for key in ("best_accuracy", "confusion", "args"):
    torch.save({key: honest[key]}, runs / "07_one_value.pt")
    try:
        torch.load(runs / "07_one_value.pt", weights_only=True)
    except pickle.UnpicklingError as error:
        refused[key] = refused_class(error)
for key, name in refused.items():
    print(f"{key:>13}: refused {name}")

# %% [markdown]
# Save what `weights_only` loads: tensors, numbers, strings, lists and dicts. `float()` turns a
# NumPy number into a Python one, `torch.from_numpy()` an array into a tensor (or `.tolist()`
# into lists), `vars()` a `Namespace` into a dict. For a file you trust and
# cannot save again, `with torch.serialization.safe_globals([...])` allows the classes the
# message names, one by one; NumPy's own names change with its version (`numpy.core` in 1.x,
# `numpy._core` in 2.x), so saving plain values is the fix that lasts.

# %%
plain = {
    "model": honest["model"],
    "best_accuracy": float(honest["best_accuracy"]),
    "confusion": torch.from_numpy(honest["confusion"]),
    "args": vars(honest["args"]),
}
torch.save(plain, runs / "07_plain.pt")
back = torch.load(runs / "07_plain.pt", weights_only=True)
print(
    "loaded with weights_only=True:",
    {k: v.tolist() if torch.is_tensor(v) else v for k, v in back.items() if k != "model"},
)
check(
    back["best_accuracy"] == 0.91
    and back["args"] == {"lr": 0.1, "epochs": 5}
    and back["confusion"].tolist() == [[40, 2], [3, 55]]
    and len(refused) == 3,
    "each NumPy or argparse value is refused alone; saved as plain values and a tensor, the "
    "same checkpoint loads with weights_only=True",
)


# %% [markdown]
# ## Stop early on a validation metric
#
# Training longer eventually overfits: the training loss keeps falling while the validation loss
# turns up. Early stopping keeps the best weights and stops after `patience` epochs without
# improvement. On a small, noisy regression problem that a wide network can memorise: 30 points
# to fit, 200 to decide when to stop, and 1,000 more that neither training nor stopping sees, so
# that the comparison with training to the end is fair (the validation points chose the stopping
# epoch, so their score flatters it).

# %%
class EarlyStopping:
    """Track a metric to minimise; remember the best weights; say when to stop."""

    def __init__(self, patience: int = 5, min_delta: float = 0.0):
        self.patience, self.min_delta = patience, min_delta
        self.best, self.best_state, self.bad_epochs = math.inf, None, 0

    def step(self, metric: float, model: nn.Module) -> bool:
        """Record this epoch's metric; return True when training should stop."""
        if metric < self.best - self.min_delta:
            self.best, self.bad_epochs = metric, 0
            self.best_state = copy.deepcopy(model.state_dict())
        else:
            self.bad_epochs += 1
        return self.bad_epochs >= self.patience


def noisy_sine(n: int, gen: torch.Generator) -> tuple[torch.Tensor, torch.Tensor]:
    """``n`` points of sin(x) on [-3, 3] plus noise of standard deviation 0.3."""
    x = torch.rand(n, 1, generator=gen) * 6 - 3
    return x, torch.sin(x) + 0.3 * torch.randn(n, 1, generator=gen)


gen = torch.Generator().manual_seed(0)
(x_fit, y_fit), (x_val, y_val), (x_test, y_test) = (noisy_sine(n, gen) for n in (30, 200, 1000))
torch.manual_seed(0)
net = nn.Sequential(nn.Linear(1, 256), nn.Tanh(), nn.Linear(256, 256), nn.Tanh(), nn.Linear(256, 1))
optimizer = torch.optim.Adam(net.parameters(), lr=3e-3)
stopper = EarlyStopping(patience=20)
val_curve = []
for _ in range(1000):
    optimizer.zero_grad()
    F.mse_loss(net(x_fit), y_fit).backward()
    optimizer.step()
    with torch.inference_mode():
        val_curve.append(F.mse_loss(net(x_val), y_val).item())
    if stopper.step(val_curve[-1], net):
        break
net.load_state_dict(stopper.best_state)
best_epoch = val_curve.index(stopper.best)
with torch.inference_mode():
    restored = F.mse_loss(net(x_val), y_val).item()
print(
    f"stopped after epoch {len(val_curve)}; best validation MSE {stopper.best:.4f} at epoch "
    f"{best_epoch + 1}; last {val_curve[-1]:.4f}; restored weights score {restored:.4f}"
)
torch.manual_seed(0)  # the same network trained all 1000 epochs, without early stopping
full = nn.Sequential(
    nn.Linear(1, 256), nn.Tanh(), nn.Linear(256, 256), nn.Tanh(), nn.Linear(256, 1)
)
full_optimizer = torch.optim.Adam(full.parameters(), lr=3e-3)
for _ in range(1000):
    full_optimizer.zero_grad()
    F.mse_loss(full(x_fit), y_fit).backward()
    full_optimizer.step()
with torch.inference_mode():
    full_val = F.mse_loss(full(x_val), y_val).item()
    fit_mse = {
        m: F.mse_loss(model(x_fit), y_fit).item() for m, model in [("early", net), ("full", full)]
    }
    test_mse = {
        m: F.mse_loss(model(x_test), y_test).item() for m, model in [("early", net), ("full", full)]
    }
print(f"without early stopping, after 1000 epochs: validation MSE {full_val:.4f}")
for where, mse in [("the 30 training points", fit_mse), ("the 1000 test points", test_mse)]:
    print(f"on {where}: early stopping {mse['early']:.4f}, 1000 epochs {mse['full']:.4f}")
print("(on new points the noise alone costs 0.3² = 0.09)")
check(restored == stopper.best, "the restored weights reproduce the best validation score")
check(
    len(val_curve) < 1000 and fit_mse["full"] < fit_mse["early"],
    "early stopping ended the run early; training on fits the training points more closely",
    measured=f"{fit_mse['full']:.4f} vs {fit_mse['early']:.4f}",
)
check(
    test_mse["full"] > 1.1 * test_mse["early"],
    "and yet, on points neither run saw, the early-stopped model is better by over 10 %",
    measured=f"{test_mse['early']:.4f} vs {test_mse['full']:.4f}",
)


# %% [markdown]
# This is one draw of the points, not a guarantee. Early stopping bets that the epoch with the
# best validation score is also a good epoch for new data; with a flat validation curve and a
# small `patience` it can stop too soon. Change the seed of `gen` and run the two cells again: the
# gap moves from draw to draw, and on some draws it is gone. Judge it, like every other choice, on
# data that did not make the choice.

# %% [markdown]
# ## Measure label smoothing and mixup on CIFAR2
#
# Two often-recommended tricks, measured rather than believed: the same network, seed, data order and
# number of epochs (1), with plain cross-entropy, with `label_smoothing=0.1`, and with **mixup**
# (train on convex mixtures of two images, $\lambda x_i + (1-\lambda) x_j$, with the same mixture
# of their labels, $\lambda \sim \mathrm{Beta}(0.2, 0.2)$). Mixup mixes `uint8` images, so it
# mixes after the model's conversion to float: we mix the normalised inputs inside a small wrapper.

# %%
def mixup_step(model, x, y, alpha: float = 0.2):
    """Return the mixup loss of one batch."""
    lam = torch.distributions.Beta(alpha, alpha).sample().item()
    perm = torch.randperm(len(y))
    features = model[:2](x)  # the model's uint8 -> normalised float layers
    mixed = lam * features + (1 - lam) * features[perm]
    logits = model[2:](mixed)
    return lam * F.cross_entropy(logits, y) + (1 - lam) * F.cross_entropy(logits, y[perm])


def train_variant(name: str, epochs: int = 1) -> tuple[float, float]:
    """Train one variant; return its test accuracy and mean confidence (top softmax prob)."""
    model, optimizer, scheduler, loader = new_run(epochs=epochs)
    smoothing = 0.1 if name == "label smoothing 0.1" else 0.0
    for _ in range(epochs):
        model.train()
        for x, y in loader:
            x, y = x.to(device), y.to(device)
            if name == "mixup 0.2":
                loss = mixup_step(model, x, y)
            else:
                loss = F.cross_entropy(model(x), y, label_smoothing=smoothing)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            scheduler.step()
    with torch.inference_mode():
        scores = model.eval()(test_images.to(device))
        confidence = scores.softmax(dim=1).amax(dim=1).mean().item()
    return evaluate(model, test_loader), confidence


# %% tags=["nbval-ignore-output"]
start = time.perf_counter()
tricks = pd.DataFrame(
    {name: train_variant(name) for name in ["baseline", "label smoothing 0.1", "mixup 0.2"]},
    index=["test accuracy", "mean confidence"],
).T
tricks["vs baseline"] = tricks["test accuracy"] - tricks.loc["baseline", "test accuracy"]
print(f"3 runs × 1 epoch in {time.perf_counter() - start:.0f} s")
tricks.round(4)

# %%
confidence = tricks["mean confidence"]
check(
    confidence["label smoothing 0.1"] < confidence["baseline"]
    and confidence["mixup 0.2"] < confidence["baseline"],
    "both tricks make the model less confident on the test set, as regularisers should",
    measured=" / ".join(f"{c:.3f}" for c in confidence),
)

# %% [markdown]
# **What to notice:** both tricks do what they are for, lowering the model's confidence (label
# smoothing caps the target at 0.9 + 0.1/2; mixup trains on in-between images). On accuracy, one
# test image is 0.05% of CIFAR2's 2,000, so a difference of a point or two is a few dozen images,
# from a single seed after one short epoch. That is not evidence either way. Both
# tricks are regularisers that pay off in longer training and with larger models, where
# overfitting is the problem; a claim that one helps needs several seeds and a difference larger
# than their spread.

# %% [markdown]
# ## Average the weights (EMA), and mix batches with `v2.MixUp` and `v2.CutMix`
#
# Two library versions of common tricks. An **exponential moving average** of the weights
# (evaluated instead of the last weights) smooths the noise of the last steps:
# `torch.optim.swa_utils.AveragedModel(model, multi_avg_fn=get_ema_multi_avg_fn(0.999))`, then
# `ema.update_parameters(model)` after each `optimizer.step()`. Its first update copies the
# weights; BatchNorm buffers are not averaged (pass `use_buffers=True`, or recompute them with
# `torch.optim.swa_utils.update_bn(loader, ema)`). Checked against the formula, decay 0.9:

# %%
torch.manual_seed(0)
tiny = nn.Linear(4, 1)
ema = torch.optim.swa_utils.AveragedModel(
    tiny, multi_avg_fn=torch.optim.swa_utils.get_ema_multi_avg_fn(0.9)
)
tiny_optimizer = torch.optim.SGD(tiny.parameters(), lr=0.1)
by_hand = None
for _ in range(5):
    tiny(torch.randn(8, 4)).pow(2).mean().backward()
    tiny_optimizer.step()
    tiny_optimizer.zero_grad()
    ema.update_parameters(tiny)
    now = [p.detach().clone() for p in tiny.parameters()]
    by_hand = (
        now if by_hand is None else [0.9 * a + 0.1 * p for a, p in zip(by_hand, now, strict=True)]
    )
check(
    all(torch.allclose(a, b) for a, b in zip(ema.module.parameters(), by_hand, strict=True)),
    "AveragedModel with get_ema_multi_avg_fn(0.9) keeps 0.9 · average + 0.1 · weights",
)

# %% [markdown]
# torchvision's `v2.MixUp` and `v2.CutMix` mix a **batch** with itself rolled by one and return
# soft labels `(N, classes)`; they are applied to batches (after the DataLoader, or as its
# `collate_fn`), and draw one λ per batch. Equal to the hand-written mixup above, up to where
# the mixing happens (here on the images, there after the normalisation layers). Here with
# `alpha=1.0`, which draws λ uniformly, so that the blend shows: with the usual 0.2 most draws
# are close to 0 or 1, a barely mixed batch:

# %%
both_classes = torch.tensor([0, 5000, 1, 5001, 2, 5002, 3, 5003])  # the folder is sorted by class
batch_images = train_images[both_classes].float() / 255
batch_labels = train_labels[both_classes]
torch.manual_seed(0)
mixed, soft = v2.MixUp(alpha=1.0, num_classes=2)(batch_images, batch_labels)
one_hot = F.one_hot(batch_labels, 2).float()
lam = soft[0, batch_labels[0]].item()  # the weight of each image's own label
cut, cut_soft = v2.CutMix(alpha=1.0, num_classes=2)(batch_images, batch_labels)
pasted = (
    (cut != batch_images).any(dim=1).float().mean(dim=(1, 2))
)  # share of pixels from the neighbour
weights = [round(w, 4) for w in cut_soft[0].tolist()]
print(f"MixUp λ = {lam:.4f}; CutMix pasted {pasted[0]:.1%} of each image, label weights {weights}")
check(
    0.05 < lam < 0.95
    and torch.allclose(mixed, lam * batch_images + (1 - lam) * batch_images.roll(1, 0), atol=1e-6)
    and torch.allclose(soft, lam * one_hot + (1 - lam) * one_hot.roll(1, 0)),
    "MixUp blends each image with its neighbour in the batch, labels in the same proportion",
    measured=f"λ = {lam:.4f}",
)
check(
    abs(cut_soft[0, 1 - batch_labels[0]] - pasted[0]) < 0.01,
    "CutMix's label weights are the pasted area's share",
)

# %% [markdown]
# ## Old code you will meet
#
# | old form | write today | why |
# |---|---|---|
# | `torch.load(path)` (full unpickling) | `torch.load(path, weights_only=True)` (the default since 2.6) | unpickling runs arbitrary code from the file |
# | `torch.save(state, path)` straight over the last checkpoint | write a temporary file, then `os.replace` | a failed save destroys the previous checkpoint |
# | `scheduler.step()` before `optimizer.step()` | `optimizer.step()` then `scheduler.step()` | the order changed in 1.1; the old one skips the first lr and warns |
# | `scheduler.step(epoch)` | `scheduler.step()` | the `epoch` argument is deprecated |
# | `nn.utils.clip_grad_norm` | `nn.utils.clip_grad_norm_` | the version without `_` still exists, deprecated: it warns |
# | `ReduceLROnPlateau(..., verbose=True)` | no `verbose`: log `scheduler.get_last_lr()` | removed: `TypeError: ... unexpected keyword argument 'verbose'` |

# %% [markdown]
# ## Exercises

# %% [markdown]
# ### Exercise 1 · Warm-up and cosine with `LambdaLR`
#
# Fill in `warmup_cosine`, a function of the step that returns the factor `LambdaLR` multiplies
# the base learning rate by, for the warm-up + cosine schedule above: 10 linear warm-up steps from
# 1% of the base learning rate, then cosine to 0 over 90 steps. `LambdaLR(optimizer,
# warmup_cosine)` must give the `SequentialLR` version's learning rate at each of the 100 steps.
#
# <details><summary>Hint 1</summary>
#
# The function returns a factor, not a learning rate: 0.01 at step 0, 1 at the end of the
# warm-up, 0 at step 100. Treat the two phases separately, by comparing the step with the
# warm-up length.
# </details>
#
# <details><summary>Hint 2</summary>
#
# The warm-up is a straight line through two known points. For the decay, the documentation of
# `CosineAnnealingLR` gives the formula; count its steps from the end of the warm-up. `math.cos`
# and `math.pi` are imported.
# </details>

# %%
warmup_cosine = ...  # a function step -> factor of the base lr, e.g. one you write with `def`

# %%
ch07.exercise_1(warmup_cosine)


# %% [markdown]
# #### Solution

# %% tags=["solution"]
# Solution: open it once you have tried. It uses its own names, so your answer stays as it is.
def solution_warmup_cosine(step: int, warmup: int = 10, total: int = 100) -> float:
    """The factor of the base lr at ``step``: linear from 0.01 to 1, then a cosine to 0."""
    if step < warmup:
        return 0.01 + (1 - 0.01) * step / warmup
    return 0.5 * (1 + math.cos(math.pi * (step - warmup) / (total - warmup)))


ch07.exercise_1(solution_warmup_cosine)

# %% [markdown]
# ### Exercise 2 · Gradient accumulation
#
# A batch of 32 does not fit in memory, so you split it into 4 micro-batches of 8. Run one
# forward and backward pass per micro-batch so that `net`'s accumulated gradients equal the
# gradient of the mean loss (`F.mse_loss`) over the whole batch, and fill in `accumulated`, the
# list of `net`'s parameter gradients afterwards.
#
# <details><summary>Hint 1</summary>
#
# `backward()` adds to `.grad`; it does not replace it. Compare what 4 backward passes of a mean
# over 8 samples add up to with one mean over 32.
# </details>
#
# <details><summary>Hint 2</summary>
#
# Loop over the pairs of micro-batches, with no `zero_grad` inside the loop, and scale each
# micro-batch's loss before its `backward()` so that the 4 together make one mean.
# </details>

# %%
torch.manual_seed(0)
net = nn.Linear(5, 1)
xb, yb = torch.randn(32, 5), torch.randn(32, 1)
net.zero_grad()
# your loop over the micro-batches of xb and yb (xb.split(8), yb.split(8)) goes here
accumulated = ...  # the list of net's parameter gradients (.grad) after the 4 backward passes

# %%
ch07.exercise_2(net, xb, yb, accumulated)

# %% [markdown]
# #### Solution

# %% tags=["solution"]
# Solution: open it once you have tried. It uses its own names, so your answer stays as it is.
solution_net = copy.deepcopy(net)  # its own copy: your net keeps the gradients you gave it
solution_net.zero_grad()
for solution_x, solution_y in zip(xb.split(8), yb.split(8), strict=True):
    # divide: the mean over 4 micro-batches
    (F.mse_loss(solution_net(solution_x), solution_y) / 4).backward()
solution_accumulated = [solution_p.grad for solution_p in solution_net.parameters()]
ch07.exercise_2(net, xb, yb, solution_accumulated)

# %% [markdown]
# ### Exercise 3 · A checkpoint for inference only
#
# torchkeras kept the best weights of its run in `runs/07_keras.pt`, loaded below into
# `model_trained`. Save only what inference needs in one file at `path`, a dict holding the
# `state_dict` and the `mean`, `std` and `width` the model was built with, then fill in `fresh`: a
# new `small_cnn` built and loaded from that file alone with `weights_only=True`, ready for
# inference. It must give `model_trained`'s logits.
#
# <details><summary>Hint 1</summary>
#
# `weights_only=True` rebuilds tensors and plain Python values only, so the file holds a dict of
# those, never the model object. Reading it back, take every value from the file, none from the
# notebook's variables.
# </details>
#
# <details><summary>Hint 2</summary>
#
# The sections on atomic checkpoints and on `weights_only=True` show the saving and the loading.
# A model needs `load_state_dict` and, for inference, one more call that turns dropout and batch
# norm's batch statistics off.
# </details>

# %%
model_trained = small_cnn(mean, std, width=8)
model_trained.load_state_dict(torch.load(runs / "07_keras.pt", weights_only=True))
path = runs / "07_inference.pt"
path.unlink(missing_ok=True)
# save the dict to `path` here (with atomic_save)
fresh = ...  # a new small_cnn, built and loaded from `path` alone

# %%
ch07.exercise_3(model_trained, mean, std, test_images, path, fresh)

# %% [markdown]
# #### Solution

# %% tags=["solution"]
# Solution: open it once you have tried. It uses its own names, so your answer stays as it is.
solution_path = runs / "07_inference_solution.pt"  # its own file: yours stays as it is
atomic_save(
    {"state_dict": model_trained.state_dict(), "mean": mean, "std": std, "width": 8},
    solution_path,
)
solution_saved = torch.load(solution_path, weights_only=True)
solution_fresh = small_cnn(
    solution_saved["mean"], solution_saved["std"], width=solution_saved["width"]
)
solution_fresh.load_state_dict(solution_saved["state_dict"])
solution_fresh.eval()
ch07.exercise_3(model_trained, mean, std, test_images, solution_path, solution_fresh)

# %% [markdown]
# ## Summary
#
# - The loop is `train()` → forward → loss → `zero_grad` → `backward` → `step`, and evaluation is
#   `eval()` plus `inference_mode()`; torchkeras adds metrics, checkpoints, early stopping and a
#   history on top of the same loop.
# - Put repeatable runs in a script with flags, seeding and `--resume`; read and set learning rates
#   in `optimizer.param_groups`, and shape them with schedulers (warm-up + cosine via
#   `SequentialLR` or `LambdaLR`).
# - `clip_grad_norm_` returns the norm before clipping: log it.
# - A checkpoint that resumes exactly holds the model, optimiser, scheduler, epoch and every RNG
#   state (checked bit for bit here); write it atomically and load it with `weights_only=True`.
# - Measure tricks such as label smoothing and mixup against a baseline with the same seed and
#   epochs before believing them.
#
# Next: [08 · TensorBoard, verified end to end](08_tensorboard_recipes.ipynb).
