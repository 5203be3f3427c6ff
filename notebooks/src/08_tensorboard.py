# %% [markdown]
# # 08 · TensorBoard: watching the CNN train
#
# [![Open In Colab](https://colab.research.google.com/assets/colab-badge.svg)](https://colab.research.google.com/github/pytorch-cookbook/pytorch-cookbook/blob/main/notebooks/08_tensorboard.ipynb)
#
# You log the CNN's training on CIFAR2 to TensorBoard: the loss, the accuracy and the learning
# rate as curves, a batch of images and the weights. Then you read the logs back to check them,
# compare two learning rates side by side, and open TensorBoard on them.
#
# **You will be able to:**
# - write a training run's loss, accuracy and learning rate to a log with `SummaryWriter`
# - log a batch of images and histograms of the weights next to the curves
# - read a log folder back into a table and check that it holds what the loop computed
# - compare runs by giving each its own folder under one log directory
# - open TensorBoard on a log directory, in a notebook or a terminal, and stop it
#
# **Before you start:** the training loop with AdamW, a one-cycle schedule and evaluation in
# `eval()` mode ([07](07_training_loop.ipynb)); a Dataset, a DataLoader and augmentation
# ([05](05_datasets_dataloaders.ipynb)); cross-entropy with label smoothing
# ([06](06_losses.ipynb)).
#
# **Cookbook:** [08 · TensorBoard, verified end to end: recipes](cookbook/08_tensorboard_recipes.ipynb) holds every recipe of this chapter (figures, text, precision-recall curves, embeddings, the model graph, hyperparameter sweeps, resumed logs, TensorBoard's own HTTP API), for when you need one.
#
# **Study time:** about 50 min: 1,460 words of text at 120 a minute, 169 lines of code at 10 a minute, 2 exercises at 10 minutes each.
#
# **Run time:** about 20 s on a 2-core CPU (Intel Xeon, AVX2 code paths, measured on 2026-11-25) · GPU optional.

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
from torch.utils.data import DataLoader
from torch.utils.tensorboard import SummaryWriter
from torchvision.transforms import v2

from helpers import board
from helpers.check import check
from helpers.datasets import ImageTensors
from helpers.env import setup
from helpers.exercises import lesson08
from helpers.images import channel_stats, load_cifar2
from helpers.models import small_cnn

device = setup(seed=0)
LOGS = Path("runs/08_lesson")
shutil.rmtree(LOGS, ignore_errors=True)  # start clean, so a rerun does not add to old logs
print("logging to:", LOGS)

# %% [markdown]
# ## Why log a run
#
# In [07](07_training_loop.ipynb) the loop printed one line per epoch, and the curves were drawn
# once the run was over. That is fine for a short run. A real run takes hours, often
# on a machine you cannot see, and you want to watch its curves **while it runs**, to stop a run
# that goes wrong early. And you want to **compare runs**: this learning rate against that one,
# today's run against last week's.
#
# **TensorBoard** does both. The loop writes what it measures into **event files**, through a
# `SummaryWriter`; TensorBoard, a separate program, reads the folder and draws the curves, and
# refreshes them as the files grow. A writer writes into one folder; each folder under the
# **log directory** is one **run**. Here the log directory is `runs/08_lesson`, cleaned at the
# start so each run of this notebook begins afresh.
#
# `add_scalar(tag, value, step)` records one number at one step. Tags with a `/` are grouped:
# `train/loss` and `train/lr` land in one section of the page. A `with` block closes the
# writer at the end, which writes out what is still in its buffer.

# %%
with SummaryWriter(LOGS / "first") as writer:
    for step in range(5):
        writer.add_scalar("demo/square", step**2, step)

files = [p.name for p in (LOGS / "first").iterdir()]
print("files in the run's folder:", len(files), "| name starts with:", files[0][:19])
check(
    len(files) == 1 and files[0].startswith("events.out.tfevents"),
    "the writer wrote one event file into the run's folder",
)

# %% [markdown]
# The rest of the file name holds the time, the computer's name and the process number, so that
# two writers never write into the same file. The file itself is in a binary format (protocol
# buffers) that TensorBoard reads; below, you read it back from Python.

# %% [markdown]
# ## Log the training run
#
# The loop is 07's, written again compactly: the same data split, augmentation, loss, AdamW and
# one-cycle schedule. To keep this lesson quick the CNN is half as wide (`width=8`) and trains
# for 2 epochs. Four kinds of logging are added:
#
# - at every step, the training loss and the learning rate that step used (`add_scalar`);
# - after every epoch, the validation loss and accuracy, at the same step count, so that all
#   curves share one x axis;
# - after every epoch, a histogram of each parameter's values (`add_histogram`): TensorBoard's
#   Histograms tab shows how the weights' distributions change as they train;
# - once, the first augmented batch the model sees (`add_images` takes a `uint8` batch
#   `(N, C, H, W)` as it is).
#
# The function also returns the numbers it computed, so that the logs can be checked
# against them.

# %%
train_images, train_labels, _ = load_cifar2("train")
mean, std = channel_stats(train_images)
order = torch.randperm(len(train_images), generator=torch.Generator().manual_seed(0))
fit_idx, val_idx = order[1000:], order[:1000]
augment = v2.Compose(
    [v2.RandomHorizontalFlip(), v2.RandomCrop(32, padding=4, padding_mode="reflect")]
)
train_set = ImageTensors(train_images[fit_idx], train_labels[fit_idx], augment)
train_loader = DataLoader(train_set, batch_size=128, shuffle=True)
val_loader = DataLoader(ImageTensors(train_images[val_idx], train_labels[val_idx]), batch_size=500)
loss_fn = nn.CrossEntropyLoss(label_smoothing=0.1)


def evaluate(model, loader):
    """Return (mean loss per image, accuracy) of model over loader, as in 07."""
    model.eval()
    total_loss, right, count = 0.0, 0, 0
    with torch.inference_mode():
        for images, labels in loader:
            images, labels = images.to(device), labels.to(device)
            logits = model(images)
            total_loss += loss_fn(logits, labels).item() * len(labels)
            right += (logits.argmax(dim=1) == labels).sum().item()
            count += len(labels)
    return total_loss / count, right / count


def train(run, lr, epochs=2):
    """Train a fresh CNN as in 07, logging to LOGS / run; return the losses and the
    validation accuracies the loop computed."""
    torch.manual_seed(0)
    model = small_cnn(mean, std, width=8).to(device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=5e-4)
    total_steps = epochs * len(train_loader)
    scheduler = torch.optim.lr_scheduler.OneCycleLR(optimizer, max_lr=lr, total_steps=total_steps)
    computed = {"train/loss": [], "val/accuracy": []}
    step = 0
    with SummaryWriter(LOGS / run) as writer:
        for epoch in range(1, epochs + 1):
            model.train()
            for images, labels in train_loader:
                if step == 0:
                    writer.add_images("train/first_batch", images[:16], step)
                images, labels = images.to(device), labels.to(device)
                loss = loss_fn(model(images), labels)
                optimizer.zero_grad()
                loss.backward()
                optimizer.step()
                writer.add_scalar("train/loss", loss.item(), step)
                writer.add_scalar("train/lr", scheduler.get_last_lr()[0], step)
                computed["train/loss"].append(loss.item())
                scheduler.step()
                step += 1
            val_loss, val_acc = evaluate(model, val_loader)
            writer.add_scalar("val/loss", val_loss, step)
            writer.add_scalar("val/accuracy", val_acc, step)
            computed["val/accuracy"].append(val_acc)
            for name, param in model.named_parameters():
                writer.add_histogram(f"weights/{name}", param, step)
            print(f"{run}: epoch {epoch}, step {step}, validation accuracy {val_acc:.4f}")
    return computed


# %% [markdown]
# Each run gets a folder named after what makes it different, here its peak learning rate. The
# printed lines vary a little with the machine; the check follows.

# %% tags=["nbval-ignore-output"]
computed = {"lr=0.003": train("lr=0.003", lr=3e-3)}

# %%
check(
    computed["lr=0.003"]["val/accuracy"][-1] > 0.85,
    "the logged run trained: validation accuracy over 0.85 after 2 epochs",
    measured=f"{computed['lr=0.003']['val/accuracy'][-1]:.4f}",
)

# %% [markdown]
# ## Read the logs back
#
# Logging code can fail quietly: a wrong tag, a step that does not move, a writer never closed.
# So read the files back and compare them with what the loop computed. TensorBoard's own reader
# does this; `helpers.board` wraps it in two functions. `board.tags(logdir)` lists, per run,
# what it holds; `board.scalars(logdir)` returns every scalar as a table (a pandas DataFrame),
# one row per logged value, with the columns `run`, `tag`, `step`, `value`. A filter such as
# `logged[logged.tag == "train/loss"]` keeps the rows of one tag.

# %%
found = board.tags(LOGS)
print("runs:", sorted(found))
print("scalars of lr=0.003:", found["lr=0.003"]["scalars"])
print("images:", found["lr=0.003"]["images"], "| histograms:", len(found["lr=0.003"]["histograms"]))
logged = board.scalars(LOGS)
run = logged[logged.run == "lr=0.003"]
print("rows of lr=0.003 per tag:", run.groupby("tag").size().to_dict())

# %% [markdown]
# Event files store each value as a 32-bit float, so the check allows for that rounding. It
# compares every logged training loss with the one the loop computed, step by step, and the
# validation accuracies:

# %%
loss_rows = run[run.tag == "train/loss"]
steps = len(computed["lr=0.003"]["train/loss"])
logged_loss = torch.tensor(loss_rows.value.tolist(), dtype=torch.float64)
loop_loss = torch.tensor(computed["lr=0.003"]["train/loss"], dtype=torch.float64)
check(
    loss_rows.step.tolist() == list(range(steps)) and torch.allclose(logged_loss, loop_loss),
    "every step's training loss is in the log, at its own step, with the loop's value",
)
logged_acc = run[run.tag == "val/accuracy"].value.tolist()
check(
    len(logged_acc) == 2
    and all(
        abs(a - b) < 1e-6
        for a, b in zip(logged_acc, computed["lr=0.003"]["val/accuracy"], strict=True)
    ),
    "the two validation accuracies in the log are the loop's",
)

# %% [markdown]
# And the curves, drawn from the log alone, as TensorBoard draws them:

# %%
fig, axes = plt.subplots(1, 3, figsize=(12, 3.2), layout="constrained")
for ax, tag in zip(axes, ["train/loss", "train/lr", "val/accuracy"], strict=True):
    rows = run[run.tag == tag]
    ax.plot(rows.step, rows.value, marker="o" if len(rows) < 10 else None)
    ax.set(xlabel="step", title=f"{tag}, read back")
plt.show()

# %% [markdown]
# ## Compare two runs
#
# The point of one log directory with a folder per run: TensorBoard draws the same tag of every
# run in one chart, one colour per run, so runs compare at a glance. A second run with a peak
# learning rate ten times smaller, everything else the same:

# %% tags=["nbval-ignore-output"]
computed["lr=0.0003"] = train("lr=0.0003", lr=3e-4)

# %%
logged = board.scalars(LOGS)
fig, axes = plt.subplots(1, 2, figsize=(9, 3.2), layout="constrained")
for name in computed:
    rows = logged[logged.run == name]
    loss_rows = rows[rows.tag == "train/loss"]
    acc_rows = rows[rows.tag == "val/accuracy"]
    axes[0].plot(loss_rows.step, loss_rows.value, label=name, alpha=0.8)
    axes[1].plot(acc_rows.step, acc_rows.value, marker="o", label=name)
axes[0].set(xlabel="step", title="train/loss")
axes[1].set(xlabel="step", title="val/accuracy")
for ax in axes:
    ax.legend()
plt.show()

# %%
per_run = {name: set(logged[logged.run == name].tag) for name in computed}
check(
    per_run["lr=0.003"]
    == per_run["lr=0.0003"]
    == {"train/loss", "train/lr", "val/loss", "val/accuracy"},
    "both runs logged the same four scalar tags, so TensorBoard draws them in the same charts",
)
final = {
    name: logged[(logged.run == name) & (logged.tag == "val/accuracy")].value.iloc[-1]
    for name in computed
}
check(
    all(abs(final[name] - computed[name]["val/accuracy"][-1]) < 1e-6 for name in computed),
    "each run's last validation accuracy in the log is the one its loop computed",
)

# %% [markdown]
# Which run is better is what the chart is for; with one run of each, from one seed, a small
# difference is not a verdict. What logging gives you is that the comparison is on the page,
# for every tag, without rerunning anything.

# %% [markdown]
# ## Open TensorBoard
#
# In JupyterLab or on Colab, load TensorBoard's notebook extension once, then point it at the
# log directory; it starts TensorBoard in the background and shows it inside the notebook:
#
# ```python
# %load_ext tensorboard
# %tensorboard --logdir runs/08_lesson
# ```
#
# In a terminal, in the folder that holds `runs/`:
#
# ```bash
# tensorboard --logdir runs/08_lesson
# ```
#
# then open <http://localhost:6006> in a browser, and stop it with Ctrl+C when you are done. The
# server the magic starts keeps running in the background, even after you close the notebook:
# `from tensorboard import notebook; notebook.list()` shows it with its process id, which you
# stop with `kill` and that id.
# TensorBoard listens only on your own machine by default; options such as `--bind_all` would
# show your logs to the whole network. The Scalars tab has the curves of both runs, the Images
# tab the logged batch, the Histograms tab the weights epoch by epoch.
#
# This notebook does not leave a server running. `helpers.board.serve` starts TensorBoard on
# 127.0.0.1 for the length of a `with` block (giving up if it does not answer within a time
# limit) and always stops it at the end. Inside, we ask the server which runs it sees:

# %%
with board.serve(LOGS, timeout=60) as server:
    served = sorted(board.get_json(f"{server.url}/data/runs"))
    print("runs TensorBoard serves:", served)
check(served == sorted(board.tags(LOGS)), "TensorBoard serves every run in the log directory")
check(server.process.poll() is not None, "and the server has stopped")

# %% [markdown]
# ## Exercises

# %% [markdown]
# ### Exercise 1 · Log a scalar and read it back
#
# Minimise $f(x) = (x - 3)^2$ from $x = 0$ with `torch.optim.SGD` and learning rate 0.1, for 30
# steps. Before each step, log the current `x` under the tag `x`, at steps 0 to 29, into the
# folder `LOGS / "exercise"`. Then fill in `x_logged`: the list of the 30 values of `x` read
# back from that folder with `board.scalars`.
#
# <details><summary>Hint 1</summary>
#
# The loop has two parts per step: log, then the five lines of a training step (with `f(x)` as
# the loss, and no model). Read the folder back only after the writer is closed.
# </details>
#
# <details><summary>Hint 2</summary>
#
# A `with SummaryWriter(...)` block around the loop closes the writer. `x.item()` is the number
# to log. After the block, keep the rows of the tag `x` of what `board.scalars` returns, and
# turn their `value` column into a list.
# </details>

# %%
x = torch.tensor(0.0, requires_grad=True)
shutil.rmtree(LOGS / "exercise", ignore_errors=True)  # start clean: a rerun would log twice
# your loop: log x, then one optimiser step on (x - 3) ** 2
x_logged = ...  # the 30 values of x read back from LOGS / "exercise"

# %%
lesson08.exercise_1(LOGS / "exercise", x_logged)

# %% [markdown]
# #### Solution

# %% tags=["solution"]
# Solution: open it once you have tried. It uses its own names, so your answer stays as it is.
solution_folder = LOGS / "exercise_solution"  # its own folder: yours stays as it is
shutil.rmtree(solution_folder, ignore_errors=True)
solution_x = torch.tensor(0.0, requires_grad=True)
solution_optimizer = torch.optim.SGD([solution_x], lr=0.1)
with SummaryWriter(solution_folder) as solution_writer:
    for solution_step in range(30):
        solution_writer.add_scalar("x", solution_x.item(), solution_step)
        solution_loss = (solution_x - 3) ** 2
        solution_optimizer.zero_grad()
        solution_loss.backward()
        solution_optimizer.step()
solution_rows = board.scalars(solution_folder)
solution_x_logged = solution_rows[solution_rows.tag == "x"].value.tolist()
lesson08.exercise_1(solution_folder, solution_x_logged)

# %% [markdown]
# ### Exercise 2 · The better run, from the logs alone
#
# Imagine the runs finished last night and the notebook that trained them is gone: only the
# event files are left. Using only what `board.scalars` reads from `LOGS`, fill in `best_run`,
# the name of the run whose **last** validation accuracy is the highest, as the `run` column
# names it (such as `"lr=0.003"`).
#
# <details><summary>Hint 1</summary>
#
# Keep the rows of the tag `val/accuracy` (runs without it drop out), then reduce each run to
# its final value, and take the run with the largest.
# </details>
#
# <details><summary>Hint 2</summary>
#
# The rows of a run come in step order. pandas can do it in one chain: the filter on the tag,
# `groupby` on the run column, `last()` of the `value` column, and `idxmax()`, which returns the
# label (here the run) of the largest value. A plain Python loop over the run names works too.
# </details>

# %%
best_run = ...  # a run name, read from the event files under LOGS

# %%
lesson08.exercise_2(LOGS, best_run)

# %% [markdown]
# #### Solution

# %% tags=["solution"]
# Solution: open it once you have tried. It uses its own names, so your answer stays as it is.
solution_logged = board.scalars(LOGS)
solution_accuracy = solution_logged[solution_logged.tag == "val/accuracy"]
solution_final = solution_accuracy.groupby("run").value.last()
lesson08.exercise_2(LOGS, solution_final.idxmax())

# %% [markdown]
# ## Summary
#
# - Log to watch a run while it trains and to compare runs: a `SummaryWriter` writes event files
#   into one folder per run, under one log directory.
# - `add_scalar(tag, value, step)` at every step for the loss and the learning rate, and at the
#   same step count after each epoch for validation; `add_images` and `add_histogram` for a batch
#   and the weights.
# - Read the logs back (`helpers.board.scalars` and `tags`) and check them against what the loop
#   computed: a logging bug is silent otherwise.
# - Open TensorBoard with `%tensorboard --logdir ...` in a notebook or `tensorboard --logdir
#   ...` in a terminal, on your own machine only, and stop it when you are done.
#
# Next: [09 · DDP and SyncBN that really run](09_ddp_syncbn.ipynb).
