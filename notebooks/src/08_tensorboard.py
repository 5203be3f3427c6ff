# %% [markdown]
# # 08 · TensorBoard: watching the CNN train
#
# [![Open In Colab](https://colab.research.google.com/assets/colab-badge.svg)](https://colab.research.google.com/github/pytorch-cookbook/pytorch-cookbook/blob/main/notebooks/08_tensorboard.ipynb)
#
# You log the CNN's training on CIFAR2 to TensorBoard: the loss, the accuracy and the learning
# rate as curves, a batch of images and the weights. Then you read the logs back to check them,
# draw their curves, compare two learning rates, catch a run that overfits, and start
# TensorBoard on them.
#
# **You will be able to:**
# - write a training run's loss, accuracy and learning rate to a log with `SummaryWriter`, with
#   a batch of images and histograms of the weights
# - read a run's logged values back into Python lists and check them against the loop's
# - compare runs by giving each its own folder under one log directory
# - tell from the validation curve when a run starts to overfit, and which epoch to keep
# - start TensorBoard on a log directory, in a notebook or a terminal, say what its tabs show,
#   and stop it
#
# **Before you start:** the training loop with AdamW, a one-cycle schedule and evaluation in
# `eval()` mode ([07](07_training_loop.ipynb)); a Dataset, a DataLoader and augmentation
# ([05](05_datasets_dataloaders.ipynb)); cross-entropy with label smoothing
# ([06](06_losses.ipynb)).
#
# **Cookbook:** [08 · TensorBoard, verified end to end: recipes](cookbook/08_tensorboard_recipes.ipynb) holds every recipe of this chapter (figures, text, precision-recall curves, embeddings, the model graph, hyperparameter sweeps, resumed logs, TensorBoard's own HTTP API), for when you need one.
#
# **Study time:** about 80 min: 2,213 words of text at 120 a minute, 210 lines of code at 10 a minute, 23 code cells to run at 1 minute each (reading what they print), 2 exercises at 10 minutes each.
#
# **Run time:** about 30 s on a 2-core CPU · GPU optional.

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
# two writers never write into the same file. The file is binary, not text: you cannot read it
# in an editor, but TensorBoard can, and so can Python, as you will see below.

# %% [markdown]
# ## Log the training run
#
# The loop is 07's, written again compactly: the same data split, augmentation, loss, AdamW and
# one-cycle schedule. To keep this lesson quick the CNN is half as wide (`width=8`) and trains
# for 2 epochs on 2,000 of the 9,000 training images. Four kinds of logging are added:
#
# - at every step, the training loss and the learning rate that step used (`add_scalar`);
# - after every epoch, the validation loss and accuracy, at the same step count, so that all
#   curves share one x axis;
# - before training and after every epoch, a histogram of each parameter's values
#   (`add_histogram`), so that you can see how the weights change as they train;
# - once, 16 images of the first augmented batch the model sees (`add_images` takes a `uint8`
#   batch `(N, C, H, W)` as it is).
#
# The function also returns the losses and accuracies it logged, so that the logs can be
# checked against them.

# %%
train_images, train_labels, _ = load_cifar2("train")
mean, std = channel_stats(train_images)
order = torch.randperm(len(train_images), generator=torch.Generator().manual_seed(0))
fit_idx, val_idx = order[1000:3000], order[:1000]  # 2,000 to train on, 1,000 to validate
augment = v2.Compose(
    [v2.RandomHorizontalFlip(), v2.RandomCrop(32, padding=4, padding_mode="reflect")]
)
train_set = ImageTensors(train_images[fit_idx], train_labels[fit_idx], augment)
train_loader = DataLoader(train_set, batch_size=64, shuffle=True)
val_loader = DataLoader(ImageTensors(train_images[val_idx], train_labels[val_idx]), batch_size=500)
loss_fn = nn.CrossEntropyLoss(label_smoothing=0.1)


def evaluate(model, loader, criterion=loss_fn):
    """Return (mean loss per image by criterion, accuracy) of model over loader, as in 07."""
    model.eval()
    total_loss, right, count = 0.0, 0, 0
    with torch.inference_mode():
        for images, labels in loader:
            images, labels = images.to(device), labels.to(device)
            logits = model(images)
            total_loss += criterion(logits, labels).item() * len(labels)
            right += (logits.argmax(dim=1) == labels).sum().item()
            count += len(labels)
    return total_loss / count, right / count


def log_weights(writer, model, step):
    """Log a histogram of each parameter's values at step."""
    for name, param in model.named_parameters():
        writer.add_histogram(f"weights/{name}", param, step)


def train(run, lr, epochs=2):
    """Train a fresh CNN as in 07, logging to LOGS / run; return what it logged."""
    torch.manual_seed(0)
    model = small_cnn(mean, std, width=8).to(device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=5e-4)
    total_steps = epochs * len(train_loader)
    scheduler = torch.optim.lr_scheduler.OneCycleLR(optimizer, max_lr=lr, total_steps=total_steps)
    computed = {"train/loss": [], "val/accuracy": []}
    step = 0
    with SummaryWriter(LOGS / run) as writer:
        log_weights(writer, model, step)  # before training, at step 0
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
            log_weights(writer, model, step)
            print(f"{run}: epoch {epoch}, step {step}, validation accuracy {val_acc:.4f}")
    return computed


# %% [markdown]
# Each run gets a folder named after what makes it different, here its peak learning rate. The
# printed lines vary a little with the machine; the check follows.

# %% tags=["nbval-ignore-output"]
computed = {"lr=0.003": train("lr=0.003", lr=3e-3)}

# %%
check(
    computed["lr=0.003"]["val/accuracy"][-1] > 0.8,
    "the logged run trained: validation accuracy over 0.8 after 2 epochs (chance: 0.5)",
    measured=f"{computed['lr=0.003']['val/accuracy'][-1]:.4f}",
)


# %% [markdown]
# ## Read the logs back
#
# Logging code can fail quietly: a wrong tag, a step that does not move, a writer never closed.
# So read the files back and compare them with what the loop computed. TensorBoard's own reader
# does this; `helpers.board` wraps it in two functions. `board.tags(logdir)` lists, per run,
# what it holds. `board.scalars(folder)` reads every scalar of a run folder into a table, one
# row per logged value, with the columns `run`, `tag`, `step` and `value`.
#
# The table is a DataFrame of pandas, Python's usual library for tables. This lesson needs only
# three things of it, all in `read_back` below. `logged.tag` is the column `tag`.
# `logged.tag == tag` compares every row with `tag`, one `True` or `False` per row, and indexing
# the table with that keeps the rows where it is `True`, as a boolean index does with a tensor
# ([01](01_tensors.ipynb)). `.tolist()` turns a column into a Python list. (Logged images and
# histograms read back too, checked pixel for pixel in the cookbook's
# [recipe](cookbook/08_tensorboard_recipes.ipynb#Read-logged-images-and-histograms-back).)

# %%
def read_back(folder, tag):
    """Return the steps and the values logged under tag in a run folder: two lists."""
    logged = board.scalars(folder)
    rows = logged[logged.tag == tag]
    return rows.step.tolist(), rows.value.tolist()


found = board.tags(LOGS)
print("runs:", sorted(found))
print("scalars of lr=0.003:", found["lr=0.003"]["scalars"])
print("images:", found["lr=0.003"]["images"])
print("histograms (one per parameter tensor):", len(found["lr=0.003"]["histograms"]))
loss_steps, loss_values = read_back(LOGS / "lr=0.003", "train/loss")
print("train/loss:", len(loss_values), "values, steps", loss_steps[0], "to", loss_steps[-1])

# %% [markdown]
# Event files store each value as a 32-bit float, so the check allows for that rounding. It
# compares every logged training loss with the one the loop computed, step by step, and the
# validation accuracies:

# %%
loop_loss = computed["lr=0.003"]["train/loss"]
check(
    loss_steps == list(range(len(loop_loss)))
    and torch.allclose(torch.tensor(loss_values), torch.tensor(loop_loss)),
    "every step's training loss is in the log, at its own step, with the loop's value",
)
_, logged_acc = read_back(LOGS / "lr=0.003", "val/accuracy")
loop_acc = computed["lr=0.003"]["val/accuracy"]
check(
    len(logged_acc) == 2
    and all(abs(a - b) < 1e-6 for a, b in zip(logged_acc, loop_acc, strict=True)),
    "the two validation accuracies in the log are the loop's",
)

# %% [markdown]
# And the curves, drawn from the log alone, as TensorBoard draws them:

# %%
fig, axes = plt.subplots(1, 3, figsize=(9, 3), layout="constrained")
for ax, tag in zip(axes, ["train/loss", "train/lr", "val/accuracy"], strict=True):
    steps, values = read_back(LOGS / "lr=0.003", tag)
    ax.plot(steps, values, marker="o" if len(steps) < 10 else None)
    ax.set(xlabel="step", title=tag)
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
fig, axes = plt.subplots(1, 2, figsize=(9, 3.2), layout="constrained")
for name in computed:
    loss_steps, loss_values = read_back(LOGS / name, "train/loss")
    acc_steps, acc_values = read_back(LOGS / name, "val/accuracy")
    axes[0].plot(loss_steps, loss_values, label=name, alpha=0.8)
    axes[1].plot(acc_steps, acc_values, marker="o", label=name)
axes[0].set(xlabel="step", title="train/loss")
axes[1].set(xlabel="step", title="val/accuracy")
for ax in axes:
    ax.legend()
plt.show()

# %%
found = board.tags(LOGS)
check(
    found["lr=0.003"]["scalars"]
    == found["lr=0.0003"]["scalars"]
    == ["train/loss", "train/lr", "val/accuracy", "val/loss"],
    "both runs logged the same four scalar tags, so TensorBoard draws them in the same charts",
)
final = {name: read_back(LOGS / name, "val/accuracy")[1][-1] for name in computed}
check(
    all(abs(final[name] - computed[name]["val/accuracy"][-1]) < 1e-6 for name in computed),
    "each run's last validation accuracy in the log is the one its loop computed",
)

# %% [markdown]
# Which run is better is what the chart is for; but with one run of each, from one seed, even a
# clear difference is one sample, not a verdict. What logging gives you is that the comparison is on the page,
# for every tag, without rerunning anything.

# %% [markdown]
# ## Catch a run that overfits
#
# A model with enough weights can learn its training images by heart instead of what tells an
# airplane from a car. That is **overfitting**: the training loss keeps falling while the
# validation loss, on images the model never trains on, stops falling and rises. Only the
# validation curve shows it. Below, 07's width-16 CNN trains on just 100 images, without
# augmentation or weight decay, for 40 epochs, validated on 500 images after each, logged as a
# run of its own:

# %%
few = fit_idx[:100]  # 100 training images: few enough to learn by heart
few_loader = DataLoader(
    ImageTensors(train_images[few], train_labels[few]), batch_size=10, shuffle=True
)
half_val = DataLoader(
    ImageTensors(train_images[val_idx[:500]], train_labels[val_idx[:500]]), batch_size=500
)
torch.manual_seed(0)
model = small_cnn(mean, std, width=16).to(device)
optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=0)
plain = nn.CrossEntropyLoss()  # no smoothing: with it, the loss cannot fall below about 0.2
step = 0
with SummaryWriter(LOGS / "overfit") as writer:
    for _ in range(40):
        model.train()
        for images, labels in few_loader:
            images, labels = images.to(device), labels.to(device)
            loss = plain(model(images), labels)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            writer.add_scalar("train/loss", loss.item(), step)
            step += 1
        writer.add_scalar("val/loss", evaluate(model, half_val, plain)[0], step)

# %% [markdown]
# The curves, read back from the log; the printed values vary a little with the machine, the
# check follows.

# %% tags=["nbval-ignore-output"]
train_steps, train_loss = read_back(LOGS / "overfit", "train/loss")
val_steps, val_loss = read_back(LOGS / "overfit", "val/loss")
best = val_loss.index(min(val_loss))  # the epoch (from 0) with the lowest validation loss
fig, ax = plt.subplots(figsize=(7, 3.2))
ax.plot(train_steps, train_loss, label="train/loss", alpha=0.6)
ax.plot(val_steps, val_loss, marker=".", label="val/loss")
ax.axvline(val_steps[best], color="gray", linestyle="--", label="lowest val/loss")
ax.set(xlabel="step", title="overfit: 100 training images, read back from the log")
ax.legend()
plt.show()
late = sum(val_loss[-5:]) / 5  # the last 5 epochs' mean: one epoch's value is noisy
trained = sum(train_loss[-5 * len(few_loader) :]) / (5 * len(few_loader))  # the same epochs
print(f"lowest validation loss {val_loss[best]:.3f} after epoch {best + 1} of 40")
print(f"last 5 epochs: validation {late:.3f}, training {trained:.4f}")

# %%
check(
    best < 15 and late > 1.05 * val_loss[best] and trained < 0.05,
    "the validation loss is lowest early, then rises while the training loss goes to 0",
)

# %% [markdown]
# The weights worth keeping are those at the lowest validation loss, not the last ones: save a
# checkpoint whenever the validation loss improves (07's `torch.save`), or stop once it has not
# improved for a few epochs (**early stopping**). More data, augmentation and weight decay, as
# in 07's full run, push the turn later. In TensorBoard the run is `overfit`: its 400 steps
# squeeze the other runs' 64 into the charts' left, so untick it to compare those two.

# %% [markdown]
# ## Open TensorBoard
#
# In JupyterLab or on Colab, TensorBoard runs inside the notebook through two Jupyter **magic
# commands**: lines starting with `%`, which Jupyter handles itself instead of handing them to
# Python. The first loads TensorBoard's notebook extension, once; the second starts TensorBoard
# in the background on the log directory and shows its page under the cell:
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
# then open <http://localhost:6006> in a browser (`localhost` is your own computer, 6006 the
# port TensorBoard uses unless told otherwise), and stop it with Ctrl+C when you are done.
#
# What you will see: a page with tabs along the top and the list of runs on the left, each run
# with a colour and a box to tick it on or off. The first tab, **Time Series**, shows
# everything on one page; the others show one kind each. **Scalars** has one chart per tag,
# grouped by the part before the `/` (`demo`, `train`, `val`), with a curve per run: the charts
# drawn above from the log. **Images** shows the grid of `train/first_batch`, with a slider over
# the steps that logged one (when more than one did). **Distributions** shows the same weights as
# bands of percentiles over the steps; **Histograms** has a chart per parameter, with the curves
# of later steps drawn in front. The menu on the right (it reads INACTIVE) lists the other
# dashboards, for kinds of data this lesson does not log.
#
# A server that `%tensorboard` started keeps running in the background, even after you close
# the notebook: `from tensorboard import notebook; notebook.list()` shows it with its process id,
# the number by which the operating system knows it; `kill` followed by that number, in a
# terminal, stops it. By default TensorBoard answers only your own computer. The option
# `--bind_all` makes it answer any computer that can reach yours over the network, which then
# sees your logs: leave it out unless you mean that.
#
# The course's `board.show` does the same as the two magic commands, with a server that stops
# when you call `.stop()` or when the kernel ends, so none is left behind. Run the next cell:
# TensorBoard's own page opens under it, with this lesson's runs. Tick runs on and off on the
# left, and open the Images and Histograms tabs.

# %% tags=["nbval-ignore-output", "remove-output"]
dashboard = board.show(LOGS)  # stops with .stop(), or with this notebook's kernel (00)

# %% [markdown]
# `dashboard.runs()` asks the server which runs it lists on its page's left: all of this lesson's.

# %%
check(dashboard.runs() == sorted(board.tags(LOGS)), "TensorBoard shows every run of the lesson")

# %% [markdown]
# If the page stays blank (a browser that is not on the kernel's computer, or reading this on the
# website), here is what it shows, taken from this lesson's two training runs (the folder under
# Runs is where the pictures were taken; yours shows your own). The Scalars tab, filtered to
# `loss|accuracy` (typed in its search box), smoothing set to 0, a curve per run. The `val/`
# charts zoom in on their last points and cut the rest off: with "Ignore outliers in chart
# scaling" ticked, TensorBoard scales a chart to most of its points, and two points per run are
# too few; untick it on the left to see whole curves;

# %%
board.picture("scalars")

# %% [markdown]
# the Images tab, with `train/first_batch` of each run (the same 16 images: both runs seed
# everything alike); and the Histograms tab, filtered to `weights/8.0.weight`, the convolution
# of the last conv block (layer 8 of `small_cnn`, its part 0): the steps stacked from back
# (step 0, before training) to front (the end). In the picture, at the peak learning rate 0.003
# the flat block of step 0 gains sloping sides and its range widens; at 0.0003 it hardly changes.

# %%
board.picture("images")

# %%
board.picture("histograms")

# %% [markdown]
# When you are done looking: `dashboard.stop()` (or restart the kernel).

# %% [markdown]
# ## Exercises

# %% [markdown]
# ### Exercise 1 · Log a scalar and read it back
#
# Minimise $f(x) = (x - 3)^2$ from $x = 0$ with `torch.optim.SGD` and learning rate 0.1, for 30
# steps. Before each step, log the current `x` under the tag `x`, at steps 0 to 29, into the
# folder `LOGS / "exercise"`. Then fill in `x_logged`: the list of the 30 values of `x` read
# back from that folder with `read_back`.
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
# to log. `read_back` returns two lists; you want one of them.
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
solution_x_logged = read_back(solution_folder, "x")[1]
lesson08.exercise_1(solution_folder, solution_x_logged)

# %% [markdown]
# ### Exercise 2 · The better run, from the logs alone
#
# Imagine the runs finished last night and the notebook that trained them is gone: only the
# event files are left. Using only what `board.tags` and `read_back` read from `LOGS`, fill in
# `best_run`, the name of the run whose **last** validation accuracy is the highest, as
# `board.tags` names it (such as `"lr=0.003"`).
#
# <details><summary>Hint 1</summary>
#
# `board.tags(LOGS)` is a dict with a key per run. Not every run logged `val/accuracy`: look
# at what each one holds before you read it back. Then reduce each run to its final value, and
# take the run with the largest.
# </details>
#
# <details><summary>Hint 2</summary>
#
# A dict from run name to final value, filled in a `for` loop, is enough. Python's `max` takes
# a `key` function: `max(d, key=d.get)` returns the key of `d` whose value is the largest.
# </details>

# %%
best_run = ...  # a run name, read from the event files under LOGS

# %%
lesson08.exercise_2(LOGS, best_run)

# %% [markdown]
# #### Solution

# %% tags=["solution"]
# Solution: open it once you have tried. It uses its own names, so your answer stays as it is.
solution_final = {}
for solution_run, solution_kinds in board.tags(LOGS).items():
    if "val/accuracy" in solution_kinds["scalars"]:
        solution_steps, solution_values = read_back(LOGS / solution_run, "val/accuracy")
        solution_final[solution_run] = solution_values[-1]
lesson08.exercise_2(LOGS, max(solution_final, key=solution_final.get))

# %% [markdown]
# ## Summary
#
# - Log to watch a run while it trains and to compare runs: a `SummaryWriter` writes event files
#   into one folder per run, under one log directory.
# - `add_scalar(tag, value, step)` at every step for the loss and the learning rate, and at the
#   same step count after each epoch for validation; `add_images` and `add_histogram` for a batch
#   and the weights.
# - Read the logs back (`helpers.board.scalars` and `tags`) and check them against
#   what the loop logged: a logging bug is silent otherwise.
# - Overfitting shows in the validation curve alone: it turns up while the training loss falls;
#   keep the weights from its lowest point.
# - Open TensorBoard with `%tensorboard --logdir ...` in a notebook (or the course's
#   `board.show`), or `tensorboard --logdir ...` in a terminal, on your own machine only, and
#   stop it when you are done.
#
# Next: the first project, [P1 · Your own classifier](projects/01_your_own_classifier.ipynb):
# lessons 01-08 put together from empty cells, graded by the course. Then [09 · DDP and SyncBN:
# one model on two processes](09_ddp_syncbn.ipynb).
