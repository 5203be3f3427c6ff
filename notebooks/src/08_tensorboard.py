# %% [markdown]
# # 08 · TensorBoard: watching the CNN train
#
# [![Open In Colab](https://colab.research.google.com/assets/colab-badge.svg)](https://colab.research.google.com/github/pytorch-cookbook/pytorch-cookbook/blob/main/notebooks/08_tensorboard.ipynb)
#
# You log the CNN's training on CIFAR2 to TensorBoard: the loss, the accuracy and the learning
# rate as curves, a batch of images and the weights. Then you read the logs back to check them,
# draw their curves, compare two learning rates side by side, and start TensorBoard on them.
#
# **You will be able to:**
# - write a training run's loss, accuracy and learning rate to a log with `SummaryWriter`
# - log a batch of images and histograms of the weights, and read both back from the log
# - read a run's logged values back into Python lists and check them against the loop's
# - compare runs by giving each its own folder under one log directory
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
# **Study time:** about 80 min: 2,217 words of text at 120 a minute, 212 lines of code at 10 a minute, 22 code cells to run at 1 minute each (reading what they print), 2 exercises at 10 minutes each.
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

import io
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
# The function also returns what it logged, so that the logs can be checked against it:
# the losses and accuracies, the 16 images, and a copy of the weights at each histogram
# (`clone()` copies a tensor, so that training does not change the copy).

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


def log_weights(writer, model, step, computed):
    """Log a histogram of each parameter at step, and keep a copy of the values."""
    copies = {}
    for name, param in model.named_parameters():
        writer.add_histogram(f"weights/{name}", param, step)
        copies[name] = param.detach().cpu().clone()
    computed["weights"].append(copies)


def train(run, lr, epochs=2):
    """Train a fresh CNN as in 07, logging to LOGS / run; return what it logged."""
    torch.manual_seed(0)
    model = small_cnn(mean, std, width=8).to(device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=5e-4)
    total_steps = epochs * len(train_loader)
    scheduler = torch.optim.lr_scheduler.OneCycleLR(optimizer, max_lr=lr, total_steps=total_steps)
    computed = {"train/loss": [], "val/accuracy": [], "weights": []}
    step = 0
    with SummaryWriter(LOGS / run) as writer:
        log_weights(writer, model, step, computed)  # before training, at step 0
        for epoch in range(1, epochs + 1):
            model.train()
            for images, labels in train_loader:
                if step == 0:
                    writer.add_images("train/first_batch", images[:16], step)
                    computed["first_batch"] = images[:16]
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
            log_weights(writer, model, step, computed)
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
# ([01](01_tensors.ipynb)). `.tolist()` turns a column into a Python list.


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
# ## See the logged images and histograms
#
# Images and histograms are not in the table of scalars: you read them with TensorBoard's
# reader for one run folder, which `board.load_run` returns. `add_images` stored the 16 images
# as one picture, a grid of 2 rows of 8, saved as a PNG file inside the event file.
# `Images(tag)` returns what was logged under a tag, one entry per step; `encoded_image_string`
# holds the PNG's bytes.
# `io.BytesIO` lets `plt.imread` read those bytes as if they were a file, which gives the pixels
# as floats in [0, 1], `(H, W, C)`. This is the picture TensorBoard's Images tab shows. For the
# check, `torch.from_numpy` turns the NumPy array back into a tensor, and each 32×32 tile of it is
# compared with the image that was logged there.

# %%
reader = board.load_run(LOGS / "lr=0.003")
png = reader.Images("train/first_batch")[0].encoded_image_string
grid = plt.imread(io.BytesIO(png), format="png")
print("logged picture, (H, W, C):", grid.shape)

fig, ax = plt.subplots(figsize=(9, 2.6))
ax.imshow(grid)
ax.set_title("train/first_batch, read back from the log")
ax.axis("off")
plt.show()

pixels = torch.from_numpy(grid * 255).round().to(torch.uint8)  # back to 0-255
first = computed["lr=0.003"]["first_batch"]
tiles_match = all(
    torch.equal(
        pixels[32 * r : 32 * (r + 1), 32 * c : 32 * (c + 1)],  # the tile in row r, column c
        first[8 * r + c].permute(1, 2, 0),
    )
    for r in range(2)
    for c in range(8)
)
check(tiles_match, "the picture in the log is the 16 logged images, pixel for pixel")

# %% [markdown]
# A histogram is stored in a compact form: not the weights themselves, but their smallest and
# largest value, their number and sum, and counts in narrow buckets. The parameter logged
# under `weights/8.0.weight` is named by its place in `small_cnn`: layer 8 is the last conv
# block, whose part 0 is its conv. TensorBoard's Histograms tab draws one curve per logged step,
# one behind the other (its picture is in "Open TensorBoard" below). The checks compare each
# logged histogram with the copy of the weights that `train` kept at that step:

# %%
tag = "weights/8.0.weight"
events = reader.Histograms(tag)
kept = [copies["8.0.weight"] for copies in computed["lr=0.003"]["weights"]]
check(
    [event.step for event in events] == [0, len(train_loader), 2 * len(train_loader)],
    "a histogram before training and one after each epoch",
)
check(
    all(
        event.histogram_value.num == weights.numel()
        and event.histogram_value.min == weights.min().item()
        and event.histogram_value.max == weights.max().item()
        and abs(event.histogram_value.sum - weights.sum().item()) < 1e-3
        for event, weights in zip(events, kept, strict=True)
    ),
    "each histogram has the number, the range and the sum of the weights at its step",
)
spread = [event.histogram_value.max - event.histogram_value.min for event in events]
check(spread[-1] > 1.2 * spread[0], "training widened the range of the weights")

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
dashboard = board.show(LOGS)

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
# everything alike); and the Histograms tab, filtered to `weights/8.0.weight`, the conv the
# checks above read: the steps stacked from back (step 0, before training) to front (the end).
# At the peak learning rate 0.003 the flat block of step 0 gains sloping sides and its range
# widens; at 0.0003 it hardly changes.

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
# - Read the logs back (`helpers.board.scalars`, `tags` and `load_run`) and check them against
#   what the loop logged: a logging bug is silent otherwise.
# - Open TensorBoard with `%tensorboard --logdir ...` in a notebook (or the course's
#   `board.show`), or `tensorboard --logdir ...` in a terminal, on your own machine only, and
#   stop it when you are done.
#
# Next: the first project, [P1 · Your own classifier](projects/01_your_own_classifier.ipynb):
# lessons 01-08 put together from empty cells, graded by the course. Then [09 · DDP and SyncBN:
# one model on two processes](09_ddp_syncbn.ipynb).
