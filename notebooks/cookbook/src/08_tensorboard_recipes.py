# %% [markdown]
# # 08 · TensorBoard, verified end to end: recipes
#
# [![Open In Colab](https://colab.research.google.com/assets/colab-badge.svg)](https://colab.research.google.com/github/pytorch-cookbook/pytorch-cookbook/blob/main/notebooks/cookbook/08_tensorboard_recipes.ipynb)
#
# **The cookbook of chapter 08.** New to the topic? [The lesson](../08_tensorboard.ipynb) teaches it
# step by step on the course's running example. Here each recipe answers one task; the
# [recipe index](../RECIPES.md) and the [error index](../ERRORS.md) find the one you need.
#
# TensorBoard turns what a training run logs into interactive charts. After this notebook you can
# log scalars, histograms, images, figures, text, precision-recall curves, embeddings, a model graph
# and a hyperparameter sweep from PyTorch, open TensorBoard safely, and, unlike most tutorials,
# **prove** that what you logged is really there: by reading the event files back and by querying
# a live TensorBoard server started and stopped from this notebook.
#
# **Prerequisites:** [05](../05_datasets_dataloaders.ipynb), [07](../07_training_loop.ipynb).
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

import io
import shutil
import tempfile
from pathlib import Path

import matplotlib.pyplot as plt
import torch
import torch.nn.functional as F
import torchmetrics
from torch.jit import TracerWarning
from torch.utils.data import DataLoader
from torch.utils.tensorboard import SummaryWriter
from torchvision.transforms import v2
from torchvision.utils import make_grid

from helpers import board
from helpers.check import check, expect_warning
from helpers.datasets import ImageTensors
from helpers.env import setup
from helpers.exercises import ch08
from helpers.images import channel_stats, load_cifar2
from helpers.models import small_cnn
from helpers.train import decay_groups, evaluate

device = setup(seed=0)
LOGS = Path("runs/08_tensorboard")
shutil.rmtree(LOGS, ignore_errors=True)  # start clean, so every run below is this notebook's
print("logging to", LOGS)

# %% [markdown]
# ## Log a run to its own directory
#
# A `SummaryWriter` writes **event files** into one folder; TensorBoard shows each folder under its
# log directory as one **run**, so give every experiment its own sub-folder and compare runs side
# by side. `add_*` calls are buffered: `flush()` (or closing the writer, or a `with` block) writes
# them out.

# %% [markdown]
# ### Pitfall: TensorBoard shows no data, or nothing new, while the program runs
#
# The `SummaryWriter` is still holding the events: they reach the file every `flush_secs`
# seconds (120 by default), at `flush()`, and when the writer closes. Call `writer.flush()` after each epoch's logging (the training loop below does),
# or pass a smaller `flush_secs`. TensorBoard then reads the folder again on its own schedule
# (`--reload_interval`, every 5 seconds by default), and the page shows it at its next reload.

# %% [markdown]
# ## Follow x and f(x) while minimising a quadratic
#
# A classic first example: minimise $f(x) = (x - 3)^2$ by gradient descent and log both the
# parameter and the function value at every step. `add_scalar(tag, value, step)`; tags with a `/`
# are grouped into sections.

# %%
x = torch.tensor(0.0, requires_grad=True)
optimizer = torch.optim.SGD([x], lr=0.1)
with SummaryWriter(LOGS / "quadratic") as writer:
    for step in range(50):
        f = (x - 3) ** 2
        writer.add_scalar("quadratic/x", x.item(), step)
        writer.add_scalar("quadratic/f(x)", f.item(), step)
        optimizer.zero_grad()
        f.backward()
        optimizer.step()
print(f"x = {x.item():.4f} after 50 steps (minimum at 3)")

# %% [markdown]
# `add_scalars(main_tag, {name: value})` draws several curves in one chart, but note how: each key
# becomes its **own run folder**, named `<run>/<main_tag>_<key>` (below: `quadratic_both/both_x`
# and `quadratic_both/both_f(x)`), which is why many people prefer separate `add_scalar` tags.
# (The writer's own folder, `quadratic_both`, is listed as a run too, with no scalars of its own.)

# %%
with SummaryWriter(LOGS / "quadratic_both") as writer:
    for step, value in enumerate([4.0, 2.0, 1.0]):
        writer.add_scalars("both", {"x": value, "f(x)": value**2}, step)
print(sorted(p.relative_to(LOGS).as_posix() for p in board.run_dirs(LOGS)))


# %% [markdown]
# ## Resume a run's logs without duplicated steps: `purge_step`
#
# A run that crashed at step 9 and resumes from its checkpoint of step 5 logs steps 5-9 again:
# the curve then holds both copies. `SummaryWriter(folder, purge_step=5)` (the resumed
# checkpoint's global step, [07](07_training_loop_recipes.ipynb)) tells TensorBoard to drop every event
# of that folder from step 5 on that was written before. Both ways, read back:

# %%
def log_run(run: str, steps: range, purge_step: int | None = None) -> None:
    with SummaryWriter(LOGS / run, purge_step=purge_step) as w:
        for step in steps:
            w.add_scalar("train/loss", 1 / (step + 1), step)


log_run("resumed_plain", range(10))  # the first attempt, crashed after step 9
log_run("resumed_plain", range(5, 10))  # resumed from the checkpoint of step 5
log_run("resumed_purged", range(10))
log_run("resumed_purged", range(5, 10), purge_step=5)
logged = board.scalars(LOGS)
points = {run: len(logged[logged.run == run]) for run in ("resumed_plain", "resumed_purged")}
print("points read back:", points)

# %%
steps_purged = sorted(logged[logged.run == "resumed_purged"].step)
check(
    points == {"resumed_plain": 15, "resumed_purged": 10} and steps_purged == list(range(10)),
    "without purge_step steps 5-9 appear twice; with it, each step once",
)

# %% [markdown]
# ## Draw the model's graph with `add_graph`
#
# `add_graph(model, example_input)` traces the model with `torch.jit.trace` and stores the graph
# for TensorBoard's Graphs tab. PyTorch 2 deprecates `torch.jit.trace`, so this call warns; the
# graph is still written. (For reading a model's structure today, prefer `torchinfo.summary`, as in
# [04](04_modules_recipes.ipynb), or `torch.export`.) `expect_warning` prints the first line of each
# warning it expects, and fails if none comes:

# %%
train_images, train_labels, classes = load_cifar2("train")
test_images, test_labels, _ = load_cifar2("test")
mean, std = channel_stats(train_images)
torch.manual_seed(0)
model = small_cnn(mean, std, width=8)
writer = SummaryWriter(LOGS / "cnn")
with expect_warning(Warning) as caught:
    writer.add_graph(model, train_images[:4])
check(
    any(issubclass(w.category, TracerWarning) for w in caught),
    "tracing the model warns that it recorded values as constants (TracerWarning)",
)

# %% [markdown]
# The `TracerWarning` is harmless here: the model's `v2.Normalize` turns its mean and standard
# deviation into tensors (`torch.as_tensor`) while the trace records, and those are constants
# indeed. It matters when a traced value depends on the input, as
# [12](12_deployment_recipes.ipynb#Pitfall:-RuntimeError:-Transform-ToDtype-cannot-be-JIT-scripted) shows.

# %% [markdown]
# ## Log loss, accuracy, learning rate and histograms while training
#
# The training loop of [07](07_training_loop_recipes.ipynb) with a writer: the training loss and learning
# rate at every step, validation loss and accuracy after every epoch (logged at the global step,
# so training and validation curves share one x axis), and histograms of every parameter and its
# gradient once per epoch, also at the global step (TensorBoard's Histograms and Distributions
# tabs show how they move).
# `helpers.train.evaluate` evaluates like 07's `evaluate`, and returns the loss too.

# %%
augment = v2.Compose(
    [v2.RandomCrop(32, padding=4, padding_mode="reflect"), v2.RandomHorizontalFlip()]
)
order = torch.randperm(len(train_images), generator=torch.Generator().manual_seed(0))
fit_idx, val_idx = order[1000:], order[:1000]
train_set = ImageTensors(train_images[fit_idx], train_labels[fit_idx], augment)
val_loader = DataLoader(ImageTensors(train_images[val_idx], train_labels[val_idx]), batch_size=500)


def train(model, writer, epochs: int, lr: float, seed: int = 0) -> float:
    """Train with AdamW + one-cycle, logging to writer; return the final validation accuracy."""
    loader = DataLoader(
        train_set,
        batch_size=128,
        shuffle=True,
        drop_last=True,
        generator=torch.Generator().manual_seed(seed),
    )
    optimizer = torch.optim.AdamW(decay_groups(model, 5e-4), lr=lr)  # no decay on BN, biases
    scheduler = torch.optim.lr_scheduler.OneCycleLR(
        optimizer, max_lr=lr, total_steps=epochs * len(loader)
    )
    step = 0
    for _ in range(epochs):
        model.train()
        for x, y in loader:
            loss = F.cross_entropy(model(x), y)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            writer.add_scalar("train/loss", loss.item(), step)
            writer.add_scalar("train/lr", scheduler.get_last_lr()[0], step)
            scheduler.step()
            step += 1
        for name, p in model.named_parameters():  # last batch's gradients, at the global step
            writer.add_histogram(f"weights/{name}", p, step)
            writer.add_histogram(f"gradients/{name}", p.grad, step)
        val_loss, val_acc = evaluate(model, val_loader)
        writer.add_scalar("val/loss", val_loss, step)  # the global step: one x axis for all curves
        writer.add_scalar("val/accuracy", val_acc, step)
    writer.flush()
    return val_acc


# %% tags=["nbval-ignore-output"]
epochs = 2
val_acc = train(model, writer, epochs=epochs, lr=3e-3)
steps_per_epoch = len(train_set) // 128
print(
    f"validation accuracy after {epochs} epochs: {val_acc:.4f}; "
    f"{epochs * steps_per_epoch} training steps logged"
)

# %%
check(
    val_acc > 0.85,
    "the logged run trained (validation accuracy over 0.85)",
    measured=f"{val_acc:.4f}",
)

# %% [markdown]
# ## Log images, a figure and text
#
# `add_images` takes a batch `(N, C, H, W)`; `torchvision.utils.make_grid` tiles a batch into one
# image for `add_image`. `add_figure` stores any matplotlib figure, here a confusion matrix of the
# test set. `add_text` stores markdown, handy for a run's notes and settings.

# %% tags=["nbval-ignore-output"]
writer.add_images("samples/batch", train_images[:16], 0)  # uint8 is fine
writer.add_image("samples/grid", make_grid(train_images[:32], nrow=8, padding=1), 0)

model.eval()
with torch.inference_mode():
    test_logits = model(test_images)
test_probs = test_logits.softmax(dim=1)[:, 1]
matrix = torchmetrics.functional.confusion_matrix(
    test_logits, test_labels, task="multiclass", num_classes=2
)
fig, ax = plt.subplots(figsize=(3.2, 3))
ax.imshow(matrix, cmap="Blues")
for (i, j), count in zip([(0, 0), (0, 1), (1, 0), (1, 1)], matrix.flatten().tolist(), strict=True):
    ax.text(j, i, count, ha="center", va="center")
ax.set(
    xticks=[0, 1],
    yticks=[0, 1],
    xticklabels=classes,
    yticklabels=classes,
    xlabel="predicted",
    ylabel="true",
    title="CIFAR2 test set",
)
writer.add_figure("test/confusion_matrix", fig, 0)  # closes the figure
notes = (
    f"small_cnn(width=8), AdamW + one-cycle, {epochs} epochs, "
    f"test accuracy **{(test_logits.argmax(1) == test_labels).float().mean():.4f}**"
)
writer.add_text("notes", notes)
print("confusion matrix (rows: true class):", matrix.tolist())

# %%
check(
    matrix.sum() == len(test_labels) and matrix.trace() > 0.85 * len(test_labels),
    "the confusion matrix counts all test images, mostly on the diagonal",
)

# %% [markdown]
# ### Log a multi-line text table with `add_text`
#
# The Text tab renders markdown, so a plain-text table (prettytable's `get_string()`, a
# `DataFrame.to_string()`) comes out as one paragraph with its lines joined. Fence it as a code
# block to keep lines and spaces, or write a markdown table. What the tab shows, rendered with
# TensorBoard's own text plugin:

# %%
from tensorboard.plugins.text.text_plugin import text_array_to_html

table = "run    lr     acc\nrun_a  1e-3   0.91\nrun_b  1e-2   0.87"
texts = {
    "as_is": table,
    "fenced": "```\n" + table + "\n```",
    "markdown": "| run | lr | acc |\n|---|---|---|\n| run_a | 1e-3 | 0.91 |",
}
with tempfile.TemporaryDirectory() as text_dir:  # a run of its own, not among LOGS
    with SummaryWriter(text_dir) as text_writer:
        for tag, text in texts.items():
            text_writer.add_text(tag, text)
    stored = {tag: board.tensor(Path(text_dir), f"{tag}/text_summary") for tag in texts}
shown = {tag: text_array_to_html(value, enable_markdown=True) for tag, value in stored.items()}
for tag, html in shown.items():  # the tab puts each note in a one-cell table: look inside it
    inside = html.split("<td>", 1)[1]
    print(f"{tag:<9} -> {inside[:34]!r}")
check(
    "<p>run    lr     acc\nrun_a" in shown["as_is"]
    and "<pre><code>run    lr     acc\n" in shown["fenced"]
    and "<th>run</th>" in shown["markdown"],
    "plain text becomes a paragraph; a fenced block keeps its lines; a markdown table is a table",
)

# %% [markdown]
# ## Log a precision-recall curve
#
# `add_pr_curve(tag, labels, predictions)` takes the true binary labels and the predicted
# probabilities of the positive class (here "automobile") and draws the whole precision-recall
# curve in the PR Curves tab.

# %%
writer.add_pr_curve("test/pr_automobile", test_labels, test_probs, 0)
writer.flush()
print(f"{len(test_labels)} test predictions logged as a PR curve")

# %% [markdown]
# ## Project embeddings with `add_embedding`
#
# The Projector tab shows high-dimensional vectors in 2-D or 3-D (PCA, t-SNE, UMAP) with a label
# and a thumbnail per point. Here: the 64 features the CNN computes before its last layer, for 300
# test images.

# %%
features = model[:-1]  # everything but the final Linear layer
with torch.inference_mode():
    vectors = features(test_images[:300])
writer.add_embedding(
    vectors,
    metadata=[classes[i] for i in test_labels[:300]],
    label_img=test_images[:300].float() / 255,
    global_step=0,
    tag="cnn_features",
)
writer.close()
print("embedding:", tuple(vectors.shape))

# %% [markdown]
# ## Compare settings with `add_hparams`
#
# `add_hparams(hparams, metrics)` records one run's settings and results for the HParams tab, which
# tables and plots many runs against each other. A small sweep over three learning rates, one epoch
# each, each run in its own folder. Pass `run_name="."`: without it, `add_hparams` writes into a
# new sub-folder named by the clock (`str(time.time())`), which TensorBoard lists as a run apart
# from the curves the writer logged, the often-reported "add_hparams makes a new run":

# %% tags=["nbval-ignore-output"]
sweep = {}
for lr in (1e-3, 3e-3, 1e-2):
    torch.manual_seed(0)
    with SummaryWriter(LOGS / "sweep" / f"lr={lr:g}") as run_writer:
        acc = train(small_cnn(mean, std, width=8), run_writer, epochs=1, lr=lr)
        run_writer.add_hparams(
            {"lr": lr, "width": 8, "epochs": 1}, {"hparam/val_accuracy": acc}, run_name="."
        )
    sweep[lr] = acc
    print(f"lr={lr:g}: validation accuracy {acc:.4f}")

# %%
for lr, acc in sweep.items():
    logged = board.scalars(LOGS / "sweep" / f"lr={lr:g}")
    metric = logged[logged.tag == "hparam/val_accuracy"].value.tolist()
    check(
        len(metric) == 1 and abs(metric[0] - acc) < 1e-6,
        f"run lr={lr:g} recorded its hparam metric: the validation accuracy train() returned",
    )
    folder = LOGS / "sweep" / f"lr={lr:g}"
    check(
        not [p for p in folder.iterdir() if p.is_dir()],
        f"run lr={lr:g}: the hparams are in the run's own folder, with no sub-folder beside it",
    )

# %% [markdown]
# ## Open TensorBoard
#
# From a terminal, in the folder holding `runs/`:
#
# ```bash
# tensorboard --logdir runs/08_tensorboard --host 127.0.0.1 --port 6006
# ```
#
# then open <http://127.0.0.1:6006>; stop it with Ctrl+C. Inside Jupyter, the magics start it in
# the background and show it in the notebook:
#
# ```python
# %load_ext tensorboard
# %tensorboard --logdir runs/08_tensorboard --host 127.0.0.1
# ```
#
# `from tensorboard import notebook; notebook.list()` shows the servers the magic started, with
# their process ids to stop them (`kill PID`). Bind to `127.0.0.1`: `--bind_all` (or
# `--host 0.0.0.0`) serves your logs, and whatever they reveal, to the whole network. On Colab the
# magic works as shown. This notebook does not leave a server running: the last section starts one
# for a check and stops it.

# %% [markdown]
# ## Prove the logs are there: read the event files back
#
# Event files are protocol buffers that TensorBoard's own `EventAccumulator` reads.
# `helpers.board` wraps it: `scalars(logdir)` returns every scalar as a pandas DataFrame,
# `tags(logdir)` lists what each run holds, `hparams(logdir)` the sweep's settings.

# %%
logged = board.scalars(LOGS)
cnn = logged[logged.run == "cnn"]
print(cnn.groupby("tag").step.agg(["count", "min", "max"]))
check(
    cnn[cnn.tag == "train/loss"].step.tolist() == list(range(epochs * steps_per_epoch)),
    "every training step's loss is in the event file, in order",
)
check(
    cnn[cnn.tag == "val/accuracy"].step.tolist()
    == [e * steps_per_epoch for e in range(1, epochs + 1)],
    "validation is logged at the global step of each epoch's end, on the training curves' axis",
)
check(
    abs(cnn[cnn.tag == "val/accuracy"].value.iloc[-1] - val_acc) < 1e-6,
    "the last logged validation accuracy is the one the loop returned (stored as float32)",
)

# %%
quad = logged[logged.run == "quadratic"].pivot(index="step", columns="tag", values="value")
fig, axes = plt.subplots(1, 3, figsize=(11, 3), layout="constrained")
quad.plot(ax=axes[0], title="quadratic, read back")
cnn[cnn.tag == "train/loss"].plot(
    x="step", y="value", ax=axes[1], title="train/loss, read back", legend=False
)
cnn[cnn.tag == "train/lr"].plot(
    x="step", y="value", ax=axes[2], title="train/lr, read back", legend=False
)
plt.show()
check(abs(quad["quadratic/x"].iloc[-1] - 3) < 0.01, "the logged x converges to 3")

# %%
found = board.tags(LOGS)
cnn_tags = found["cnn"]
print(
    "cnn run:",
    len(cnn_tags["histograms"]),
    "histogram tags, images:",
    cnn_tags["images"],
    "| graph:",
    bool(cnn_tags["graph"]),
)
print("runs:", sorted(found))
check(
    len(cnn_tags["histograms"]) == 2 * len(list(model.parameters()))
    and {"samples/batch", "samples/grid", "test/confusion_matrix"} <= set(cnn_tags["images"])
    and cnn_tags["graph"] == ["graph"],
    "histograms of every weight and gradient, the images, the figure and the graph were written",
)
sweep_table = board.hparams(LOGS).sort_values("lr")
print(sweep_table.to_string(index=False))
check(sweep_table.lr.tolist() == [1e-3, 3e-3, 1e-2], "the three sweep runs carry their hparams")

# %% [markdown]
# ### Read logged images and histograms back
#
# Images and histograms are not in the table of scalars: `board.load_run(folder)` returns
# TensorBoard's reader of one run. `add_images` stored the 16 images as one picture, a grid of
# 2 rows of 8, encoded as PNG: `Images(tag)` gives one entry per logged step, and `plt.imread`
# decodes its bytes (through `io.BytesIO`, a file in memory) to floats in [0, 1], `(H, W, C)`.
# A histogram is stored in a compact form: not the values, but their number, smallest, largest
# and sum, and counts in narrow buckets. The last one logged, after the last step, must
# describe the trained weights (`8.0.weight`: the last conv block's convolution):

# %%
reader = board.load_run(LOGS / "cnn")
png = reader.Images("samples/batch")[0].encoded_image_string
grid = plt.imread(io.BytesIO(png), format="png")
pixels = torch.from_numpy(grid * 255).round().to(torch.uint8)  # back to 0-255, (H, W, C)
tiles = [divmod(i, 8) for i in range(16)]  # image i sits in row i // 8, column i % 8
tiles_match = all(
    torch.equal(pixels[32 * r : 32 * (r + 1), 32 * c : 32 * (c + 1)], image.permute(1, 2, 0))
    for (r, c), image in zip(tiles, train_images[:16], strict=True)
)
last = reader.Histograms("weights/8.0.weight")[-1]
weights = model.get_parameter("8.0.weight").detach()
print("logged picture, (H, W, C):", grid.shape, "| last histogram at step", last.step)
check(tiles_match, "the picture in the log is the 16 logged images, pixel for pixel")
check(
    last.step == epochs * steps_per_epoch
    and last.histogram_value.num == weights.numel()
    and last.histogram_value.min == weights.min().item()
    and last.histogram_value.max == weights.max().item()
    and abs(last.histogram_value.sum - weights.sum().item()) < 1e-3,
    "the last histogram holds the number, range and sum of the trained weights",
)

# %% [markdown]
# The PR curve, the text and the embedding are stored differently (tensors, and files beside the
# event file for the projector); `helpers.board` reads those back too. The PR curve's counts at
# threshold 0.5 must match what the predictions themselves give:

# %%
curve = board.pr_curve(LOGS / "cnn", "test/pr_automobile")
at_half = curve[curve.threshold >= 0.5].iloc[0]
predicted = test_probs >= at_half.threshold
true_pos = int((predicted & (test_labels == 1)).sum())
print(f"PR curve: {len(curve)} thresholds from 0 to 1, columns {list(curve.columns)}")
check(
    curve.tp.iloc[0] == (test_labels == 1).sum() and at_half.tp == true_pos,
    "the logged PR curve counts the test predictions (all positives at 0, same TP at 0.5)",
)
text = board.tensor(LOGS / "cnn", "notes/text_summary")
check(text.tolist() == [notes.encode()], "the run's notes read back as written")
vectors_back, names_back = board.embedding(LOGS / "cnn", "cnn_features")
as_tensor = torch.tensor(vectors_back.to_numpy(), dtype=torch.float32)
check(
    vectors_back.shape == (300, 64)
    and torch.allclose(as_tensor, vectors, atol=1e-4)
    and names_back == [classes[i] for i in test_labels[:300]],
    "the projector files hold the 300 feature vectors and their labels",
)

# %% [markdown]
# ## Prove it end to end: ask a live TensorBoard server
#
# Reading files proves they were written; a server proves TensorBoard can show them.
# `helpers.board.serve` starts TensorBoard on a free port bound to 127.0.0.1, waits until it
# answers, and stops it (and anything it started) when the `with` block ends, **also when a check
# inside fails**. TensorBoard's web page gets its data from an HTTP API, which we query directly.
# Those `/data/...` endpoints are TensorBoard's internal API for its own page, not a public,
# versioned one: they can change with any release. Fine for a smoke test like this one; for tools,
# read the event files as above.

# %%
with board.serve(LOGS) as server:
    served_runs = sorted(board.get_json(f"{server.url}/data/runs"))
    served_tags = board.get_json(f"{server.url}/data/plugin/scalars/tags")
    print("runs served:", served_runs)
    print("scalar tags of 'cnn':", sorted(served_tags["cnn"]))
    check(served_runs == sorted(found), "TensorBoard serves exactly the runs we wrote")
    check(
        set(served_tags["cnn"]) == set(cnn_tags["scalars"]),
        "and the scalar tags read from the event files",
    )
check(server.process.poll() is not None, "the TensorBoard server has stopped")

# %% [markdown]
# ## Old code you will meet
#
# | old form | write today | why |
# |---|---|---|
# | `from tensorboardX import SummaryWriter` | `from torch.utils.tensorboard import SummaryWriter` | PyTorch ships the writer since 1.1 |
# | `tensorboard --logdir runs --host 0.0.0.0` (or `--bind_all`) | `--host 127.0.0.1` (the default is localhost) | all interfaces publish your logs to the network |
# | `writer.add_graph(model, x)` to inspect a model | `torchinfo.summary(model, input_size=...)`, `torch.export` | `add_graph` relies on the deprecated `torch.jit.trace` |
# | reading logs by screenshots of the web page | `EventAccumulator` (here `helpers.board.scalars`) | the numbers, in a DataFrame, checkable in code |

# %% [markdown]
# ## Exercises

# %% [markdown]
# ### Exercise 1 · Log a schedule and read it back
#
# Log the learning rate of the `OneCycleLR` schedule below (`max_lr=0.1`, 100 steps, on a dummy
# optimiser) at each step, under the tag `lr`, into `LOGS / "exercise_lr"`, then fill in
# `lr_logged`, what `board.scalars` reads back from that folder. The event files must hold the
# 100 learning rates, one at each step from 0 to 99, the first one being the schedule's start.
#
# <details><summary>Hint 1</summary>
#
# One writer for the folder, one scalar per step, and the schedule moved on after each one. The
# files are complete only once the writer is closed: read them back after that.
# </details>
#
# <details><summary>Hint 2</summary>
#
# The section on logging while training logs a learning rate with `add_scalar(tag, value, step)`,
# and `get_last_lr()` gives the schedule's current rates. A `with SummaryWriter(...)` block closes
# the writer for you; the section on reading the event files back shows `board.scalars`.
# </details>

# %%
opt = torch.optim.SGD([torch.zeros(1, requires_grad=True)], lr=0.1)
schedule = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=0.1, total_steps=100)
shutil.rmtree(LOGS / "exercise_lr", ignore_errors=True)  # start clean: a rerun would log twice
# your loop: log the schedule's learning rate under "lr", then step the optimiser and the schedule
lr_logged = ...  # what board.scalars reads back from the folder you logged to

# %%
ch08.exercise_1(LOGS / "exercise_lr", lr_logged)

# %% [markdown]
# #### Solution

# %% tags=["solution"]
# Solution: open it once you have tried. It uses its own names, so your answer stays as it is.
solution_logdir = LOGS / "exercise_lr_solution"  # its own folder, optimiser and schedule
shutil.rmtree(solution_logdir, ignore_errors=True)
solution_opt = torch.optim.SGD([torch.nn.Parameter(torch.zeros(1))], lr=0.1)
solution_schedule = torch.optim.lr_scheduler.OneCycleLR(solution_opt, total_steps=100, max_lr=0.1)
with SummaryWriter(solution_logdir) as solution_writer:
    for solution_step in range(100):
        solution_writer.add_scalar("lr", solution_schedule.get_last_lr()[0], solution_step)
        solution_opt.step()
        solution_schedule.step()
ch08.exercise_1(solution_logdir, board.scalars(solution_logdir))

# %% [markdown]
# ### Exercise 2 · The best run of the sweep, from the logs alone
#
# Using only the event files under `LOGS / "sweep"`, fill in `best_run`, the name of the run with
# the highest final `val/accuracy`, as `board.scalars` names it (such as `"lr=0.001"`).
#
# <details><summary>Hint 1</summary>
#
# `board.scalars` gives one row per logged value, with its run, tag, step and value. Keep the
# rows of one tag, then reduce each run to its final value.
# </details>
#
# <details><summary>Hint 2</summary>
#
# pandas does it in one chain: a boolean filter on the tag, a `groupby` on the run with the
# `last` value, and the method that returns the label of the largest value.
# </details>

# %%
best_run = ...  # a run name, read from the event files under LOGS / "sweep"

# %%
ch08.exercise_2(sweep, best_run)

# %% [markdown]
# #### Solution

# %% tags=["solution"]
# Solution: open it once you have tried. It uses its own names, so your answer stays as it is.
solution_logged = board.scalars(LOGS / "sweep")
solution_accuracy = solution_logged[solution_logged.tag == "val/accuracy"]
solution_final = solution_accuracy.groupby("run").value.last()
ch08.exercise_2(sweep, solution_final.idxmax())

# %% [markdown]
# ## Summary
#
# - One `SummaryWriter` folder per run; `add_scalar` for curves, `add_histogram` for weight and
#   gradient distributions, `add_image(s)`/`add_figure`/`add_text` for pictures and notes,
#   `add_pr_curve`, `add_embedding` and `add_hparams` for curves, projections and sweeps.
# - `add_scalars` creates one run per key; `add_graph` works but uses deprecated tracing.
# - Open TensorBoard with `--host 127.0.0.1` (command line or `%tensorboard`), and stop it when done.
# - What was logged is checkable: `EventAccumulator` reads the event files back into a DataFrame,
#   and TensorBoard's HTTP API shows what the server serves: both checked here, with the server
#   stopped afterwards.
#
# Next: [09 · DDP and SyncBN that really run](../09_ddp_syncbn.ipynb).
