# %% [markdown]
# # 13 · Reproducibility and debugging: a run that repeats, a run that learns
#
# [![Open In Colab](https://colab.research.google.com/assets/colab-badge.svg)](https://colab.research.google.com/github/pytorch-cookbook/pytorch-cookbook/blob/main/notebooks/13_reproducibility_debugging.ipynb)
#
# You make a short training run of the CNN on CIFAR2 repeat to the last bit, and learn what a
# seed cannot fix. Then you take a training of the CNN that runs without an error but does not
# learn, and find its three bugs with a four-item checklist.
#
# **You will be able to:**
# - make a training run repeat bit for bit by seeding every generator, and check that two runs
#   give identical losses
# - give a DataLoader its own generator, so that its order and its workers' augmentation do not
#   change when the rest of the program does
# - say what deterministic algorithms change on a GPU, and list what a seed does not fix
# - find why a run does not learn with a checklist: look at a batch, check the loss at the start,
#   check the gradients, overfit one batch
# - fix three silent bugs and compare the loss curves before and after
#
# **Before you start:** gradients that add up until they are reset ([03](03_autograd.ipynb)); a
# DataLoader with `shuffle` and a seeded `generator`, and what `num_workers` starts
# ([05](05_datasets_dataloaders.ipynb)); cross-entropy on logits, ln 2 for a coin toss and the
# floor a softmax before it sets ([06](06_losses.ipynb)); the training loop with AdamW, a
# one-cycle schedule and evaluation in `eval()` mode ([07](07_training_loop.ipynb)).
#
# **Cookbook:** [13 · Reproducibility and debugging: recipes](cookbook/13_reproducibility_debugging_recipes.ipynb) holds every recipe of this chapter (what a seed does not fix, measured; deterministic algorithms and the errors they raise; augmentation that no number of workers changes; recording the environment; device, dtype and shape mismatches; DataLoaders that hang; CUDA in forked workers; hunting NaN and Inf; an executable checklist; `torch.compile` graph breaks), for when you need one.
#
# **Study time:** about 80 min: 2,312 words of text at 120 a minute, 252 lines of code at 10 a minute, 28 code cells to run at 1 minute each (reading what they print), 1 exercise at 10 minutes each.
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

import math
from itertools import islice

import matplotlib.pyplot as plt
import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.data import DataLoader, TensorDataset
from torchvision.transforms import v2

from helpers.check import check
from helpers.datasets import ImageTensors
from helpers.env import seed_everything, setup
from helpers.exercises import lesson13
from helpers.images import channel_stats, load_cifar2
from helpers.models import small_cnn
from helpers.plot import plot_history, show_images

device = setup(seed=0)

# %% [markdown]
# ## Same seed, same run
#
# You change a learning rate, and the validation accuracy moves by one percent. Your change, or
# chance? You can only tell when the run without the change gives the same numbers every time.
#
# A training run draws random numbers for the initial weights, the order of the batches, and
# the crops and flips of augmentation. They come from a **generator**, which gives the same
# sequence every time it starts from the same **seed**. `seed_everything`, from the course's
# helpers (every setup cell calls it), seeds Python's `random`, NumPy's generator and torch's
# (`torch.manual_seed`, which seeds every device, GPUs included). This run draws only from
# torch's; a library you add may draw from the other two.
#
# The data: 512 training and 512 validation images drawn at random from CIFAR2's training set,
# with 07's augmentation. A run is 16 steps of 32 augmented images, with AdamW. One line is for
# GPUs: their convolutions (cuDNN) then use only algorithms that repeat (third section).

# %%
images, labels, classes = load_cifar2("train")
mean, std = channel_stats(images)
names = [c.split("_", 1)[1] for c in classes]  # "0_airplane" -> "airplane"
order = torch.randperm(len(images), generator=torch.Generator().manual_seed(0))
fit_images, fit_labels = images[order[:512]], labels[order[:512]]
val_images, val_labels = images[order[512:1024]], labels[order[512:1024]]
augment = v2.Compose(
    [v2.RandomHorizontalFlip(), v2.RandomCrop(32, padding=4, padding_mode="reflect")]
)
torch.backends.cudnn.deterministic = True  # GPU convolutions that repeat


def train_losses(steps=16):
    """Train a new CNN for `steps` batches of 32 augmented images; return each step's loss."""
    model = small_cnn(mean, std).to(device)  # draws the initial weights
    optimizer = torch.optim.AdamW(model.parameters(), lr=5e-3)
    train_set = ImageTensors(fit_images, fit_labels, augment)  # draws crops and flips
    loader = DataLoader(train_set, batch_size=32, shuffle=True)  # draws the order
    model.train()
    losses = []
    for x, y in islice(loader, steps):
        x, y = x.to(device), y.to(device)
        loss = F.cross_entropy(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        losses.append(loss.item())
    return losses


seed_everything(0)
first = train_losses()
seed_everything(0)
second = train_losses()
seed_everything(1)
other = train_losses()

# %% [markdown]
# The first four losses of each run:

# %% tags=["nbval-ignore-output"]
for name, run in [("seed 0", first), ("seed 0 again", second), ("seed 1", other)]:
    print(f"{name:13} {[round(loss, 4) for loss in run[:4]]}")

# %%
check(first == second, "seed 0 twice: all 16 losses are equal, to the last bit")
check(first != other, "seed 1: another run")


# %% [markdown]
# `first == second` compares the lists of floats exactly: a run that repeats, repeats to the
# last bit, so there is no tolerance to choose. Without the second `seed_everything(0)`, the
# second run would have started where the first left the generator, and differed.
#
# A seed makes a run repeat **on the same machine with the same software**. On another
# processor the same seed may give a run that repeats itself there but differs from this one
# in the last digits: compare the losses you print with a second run on your own machine, not
# with the digits shown here.
#
# The cookbook's [Exercise 4 · Does a run repeat?](cookbook/13_reproducibility_debugging_recipes.ipynb#Exercise-4-·-Does-a-run-repeat?)
# turns this check into a function.

# %% [markdown]
# ## The DataLoader's randomness: its own generator, and its workers
#
# Seeding once at the start is fragile: code that draws a few more numbers changes every draw
# after it. A wider CNN draws more initial weights, and the shuffle changes too: the two runs
# you wanted to compare differ in their model **and** their batches. The first indices a
# shuffling loader gives after building a CNN of width 16 or 32, with the global generator and
# with a generator of its own (`generator=`, as in [05](05_datasets_dataloaders.ipynb)):

# %%
def first_indices(width, generator=None):
    """The first 8 indices a shuffling loader gives after seeding and building a CNN."""
    seed_everything(0)
    small_cnn(mean, std, width=width)  # building it draws its initial weights
    indices = TensorDataset(torch.arange(512))
    loader = DataLoader(indices, batch_size=8, shuffle=True, generator=generator)
    return next(iter(loader))[0].tolist()


shared = {width: first_indices(width) for width in (16, 32)}
own = {width: first_indices(width, torch.Generator().manual_seed(0)) for width in (16, 32)}
for width in (16, 32):
    print(f"width {width}, global generator: {shared[width]} | own generator: {own[width]}")
check(shared[16] != shared[32], "with the global generator, a wider CNN changes the batches")
check(own[16] == own[32], "with its own generator, the loader's order ignores the model")


# %% [markdown]
# The crops and flips are drawn in the Dataset's `__getitem__`. Without workers, it runs in the
# main process and draws from the global generator, so the augmentation still depends on
# everything drawn before. With `num_workers=2`, two **worker processes** call `__getitem__`,
# and each draws from generators of its own. PyTorch seeds them when the workers start: from
# one number drawn from the loader's `generator`, plus the worker's number (0 or 1). So with
# `generator=` and workers, the whole batch depends on the loader's seed alone.
#
# Below, the first batch of 16 augmented images, with 0 or 2 workers, after 5 extra random
# draws or none, under the key `(workers, draws)`: `batches[0, 5]` is `batches[(0, 5)]`.
# Indices 0-63 stand in for labels, so a batch shows its images:

# %%
def first_batch(workers, draws_before):
    """The first batch of 16 augmented images, after `draws_before` extra random draws."""
    seed_everything(0)
    torch.rand(draws_before)  # stands for anything else that draws: a wider layer, dropout
    numbered = ImageTensors(fit_images[:64], torch.arange(64), augment)
    own = torch.Generator().manual_seed(0)
    loader = DataLoader(numbered, batch_size=16, shuffle=True, num_workers=workers, generator=own)
    return next(iter(loader))


batches = {(workers, draws): first_batch(workers, draws) for workers in (0, 2) for draws in (0, 5)}
print("images in the first batch:", batches[0, 0][1].tolist())
same_order = all(torch.equal(index, batches[0, 0][1]) for _, index in batches.values())
check(same_order, "the order is the same in all four: the loader's generator sets it")
check(not torch.equal(batches[0, 0][0], batches[0, 5][0]), "no workers: 5 more draws, other crops")
check(torch.equal(batches[2, 0][0], batches[2, 5][0]), "2 workers: same crops, whatever came first")
check(not torch.equal(batches[0, 0][0], batches[2, 0][0]), "but 0 and 2 workers crop differently")

# %% [markdown]
# The first six images of the batch, augmented in the main process (top row) and by two
# workers (bottom row), titled by their index. A red frame marks an image whose two versions
# differ:

# %%
no_workers, two_workers = batches[0, 0][0][:6], batches[2, 0][0][:6]
differs = [not torch.equal(a, b) for a, b in zip(no_workers, two_workers, strict=True)]
indices = batches[0, 0][1][:6]
fig = show_images(torch.cat([no_workers, two_workers]), torch.cat([indices, indices]))
for row, label in enumerate(["0 workers", "2 workers"]):  # left of the first image
    fig.axes[6 * row].text(-3, 16, label, rotation=90, ha="right", va="center")
for column, changed in enumerate(differs):
    if changed:  # a red frame around both versions of the image
        for ax in (fig.axes[column], fig.axes[6 + column]):
            frame = plt.Rectangle((-0.5, -0.5), 32, 32, fill=False, color="red", lw=3)
            ax.add_patch(frame)
plt.show()
print(f"augmented differently by 0 and 2 workers: {sum(differs)} of 6 images")


# %% [markdown]
# So: give every DataLoader its own seeded `generator=`, and keep `num_workers` the same in runs
# you compare. For augmentation that no number of workers changes, the cookbook's recipe
# [Reproduce shuffling and augmentation with any number of workers](cookbook/13_reproducibility_debugging_recipes.ipynb#Reproduce-shuffling-and-augmentation-with-any-number-of-workers)
# draws each sample's randomness from the sample itself.

# %% [markdown]
# ## Deterministic algorithms, and what a seed does not fix
#
# The runs above repeat because this CNN's CPU kernels compute the same way every time. Many GPU
# kernels do not: they add partial results in whatever order the GPU's threads finish, and
# floating-point addition rounds differently in another order, so two runs from one seed drift
# apart. The first cell's `cudnn.deterministic = True` makes the convolutions repeat; one switch,
# in a training script's first lines, asks the same of every operation:
# `torch.use_deterministic_algorithms(True)`. Every operation then uses a deterministic kernel
# where one exists, and raises a `RuntimeError` where none does. The course's CNN raises on a
# GPU: the backward pass of its `AdaptiveMaxPool2d` has no deterministic CUDA kernel
# (`warn_only=True` turns such errors into warnings). Old code calls the switch
# `torch.set_deterministic`, which was removed. The cookbook's recipe [Turn on deterministic
# algorithms, and read the error they
# raise](cookbook/13_reproducibility_debugging_recipes.ipynb#Turn-on-deterministic-algorithms,-and-read-the-error-they-raise)
# shows the error, the other settings that go with it, and how to replace such an operation.
#
# Even then, a seed does **not** fix:
#
# - **another machine, thread count or version** of PyTorch or a library: a sum split or
#   computed another way rounds differently, so the last digits differ from the first step on;
# - **another `num_workers`**: other crops and flips;
# - **Python's hash seed**: a `set` of strings iterates in another order in every new Python
#   process; iterate over `sorted(...)`.
#
# The recipe [Know what a seed does not
# fix](cookbook/13_reproducibility_debugging_recipes.ipynb#Know-what-a-seed-does-not-fix:-threads,-hash-seeds,-versions-and-GPU-kernels)
# shows threads, hash seeds and GPU kernels at work.

# %% [markdown]
# ## A run that does not learn
#
# Now the second half, which leans on the first: a run that repeats lets you tell a fix from
# chance. If the seeded run learns after a change and did not before, the change did it, not a
# luckier draw. Here is a training of the CNN as someone wrote it: 5 epochs over the 512
# training images in batches of 64, AdamW with 07's one-cycle schedule, and an evaluation after
# every epoch. It runs without an error. Three bugs hide in it, each one line, written or
# missing. You may spot some by reading; in a real project the bug sits in a file you did not
# open, so the checklist of the next sections finds them from what the program does.
#
# First the parts that are right, 07's evaluation and loop, with the step passed in:

# %%
def evaluate(model):
    """Mean loss and accuracy on the 512 validation images, in eval mode (07)."""
    model.eval()
    with torch.inference_mode():
        outputs = model(val_images.to(device))
        targets = val_labels.to(device)
        loss = F.cross_entropy(outputs, targets).item()
        accuracy = (outputs.argmax(dim=1) == targets).float().mean().item()
    return loss, accuracy


def train(model, step, images, labels, epochs=5):
    """Train with AdamW and a one-cycle schedule; return the history of each epoch."""
    optimizer = torch.optim.AdamW(model.parameters(), lr=5e-3)
    own = torch.Generator().manual_seed(0)
    loader = DataLoader(ImageTensors(images, labels), batch_size=64, shuffle=True, generator=own)
    scheduler = torch.optim.lr_scheduler.OneCycleLR(
        optimizer, max_lr=5e-3, total_steps=epochs * len(loader)
    )
    history = {"train_loss": [], "val_loss": [], "val_accuracy": []}
    for _ in range(epochs):
        model.train()
        total = 0.0
        for x, y in loader:
            total += step(model, optimizer, x.to(device), y.to(device)) * len(y)
            scheduler.step()
        val_loss, val_accuracy = evaluate(model)
        history["train_loss"].append(total / len(labels))
        history["val_loss"].append(val_loss)
        history["val_accuracy"].append(val_accuracy)
    return history


# %% [markdown]
# Then the three parts with a bug each: how the training set is shuffled, the model, and the
# training step.

# %%
seed_everything(0)
# Shuffle the training images and their labels once.
mixed_images = fit_images[torch.randperm(512)]
mixed_labels = fit_labels[torch.randperm(512)]


def probability_cnn():
    """The CNN, ending in probabilities, which are easier to read than logits."""
    return nn.Sequential(small_cnn(mean, std), nn.Softmax(dim=1)).to(device)


def broken_step(model, optimizer, x, y):
    """One training step; returns the batch's loss."""
    loss = F.cross_entropy(model(x), y)
    loss.backward()
    optimizer.step()
    return loss.item()


seed_everything(0)
broken_model = probability_cnn()
broken = train(broken_model, broken_step, mixed_images, mixed_labels)
fig = plot_history(broken, title="The broken run")
fig.axes[0].set_ylim(0, 1)  # accuracy from 0 to 1
plt.show()

# %%
check(max(broken["val_accuracy"]) < 0.65, "the validation accuracy stays near chance, 0.5")
lowest = min(broken["train_loss"])
check(lowest > 0.5, "the training loss never gets below 0.5: it does not learn")

# %% [markdown]
# No error, no NaN, nothing learned. Where to start?

# %% [markdown]
# ## Checklist: look at a batch, then at the first loss
#
# The checklist goes from the data to the training step, one cheap test each: **(1)** look at a
# batch, **(2)** check the loss at the start, **(3)** check the gradients, **(4)** overfit one
# batch. Each test finds a bug or clears a suspect.
#
# **(1) Look at a batch**, exactly as the training loop gets it: the images with their labels.

# %%
show_images(mixed_images[:12], mixed_labels[:12], names)
plt.show()

# %% [markdown]
# Cars labelled "airplane", airplanes labelled "automobile": about half of the labels are wrong.
# The shuffle used **two** random orders, one for the images and one for the labels. To confirm
# it, look each image up by its bytes (a dict key, as a tensor is not):

# %%
label_of = {
    image.numpy().tobytes(): label.item()
    for image, label in zip(fit_images, fit_labels, strict=True)
}
true_labels = torch.tensor([label_of[image.numpy().tobytes()] for image in mixed_images])
wrong = (true_labels != mixed_labels).float().mean().item()
print(f"training images whose label is not theirs: {wrong:.0%}")
check(0.3 < wrong < 0.7, "about half of the labels belong to other images")

# %% [markdown]
# With labels parted from their images there is no rule to learn: the validation accuracy
# stays at chance whatever the model and the loop do. The fix: one random order for both.

# %%
mix = torch.randperm(512)
fixed_images, fixed_labels = fit_images[mix], fit_labels[mix]
kept = [label_of[image.numpy().tobytes()] for image in fixed_images]
check(torch.equal(torch.tensor(kept), fixed_labels), "after the fix, every image keeps its label")

# %% [markdown]
# **(2) Check the loss at the start.** An untrained model knows nothing, so on two classes it
# should score about ln 2 ≈ 0.693, a coin toss ([06](06_losses.ipynb)). A first loss of 5 or 50
# would mean huge logits: weights drawn too large, or inputs not normalised. A new
# `probability_cnn` on a batch of 64, in training mode as the first step sees it:

# %%
x, y = fixed_images[:64].to(device), fixed_labels[:64].to(device)
seed_everything(0)
with torch.no_grad():
    start_loss = F.cross_entropy(probability_cnn()(x), y).item()

# %% tags=["nbval-ignore-output"]
print(f"first loss: {start_loss:.4f} | ln 2: {math.log(2):.4f}")

# %%
check(abs(start_loss - math.log(2)) < 0.5, "the first loss is close to ln 2: this check passes")


# %% [markdown]
# It passes, and yet the softmax bug is there: probabilities near 0.5 enter the loss as if they
# were logits, and two similar logits score about ln 2. A pass clears a suspect; it does not
# prove the code right.

# %% [markdown]
# ## Checklist: the gradients, then overfit one batch
#
# **(3) Check the gradients.** After `backward()`, every parameter should hold a finite gradient
# that is not zero: the gradients *flow* to every layer. And a step's gradient should be its
# batch's alone. A test for both: with learning rate 0 the step leaves the weights where they
# are, so the same batch twice must give the same gradient twice.

# %%
def gradients_of_two_steps(step):
    """The gradients after one and after two steps on the same batch, at learning rate 0."""
    seed_everything(0)
    model = probability_cnn()
    optimizer = torch.optim.AdamW(model.parameters(), lr=0.0)  # the weights stay where they are
    step(model, optimizer, x, y)
    once = {name: p.grad.clone() for name, p in model.named_parameters()}
    step(model, optimizer, x, y)
    twice = {name: p.grad.clone() for name, p in model.named_parameters()}
    return once, twice


once, twice = gradients_of_two_steps(broken_step)
norms = {name: grad.norm().item() for name, grad in once.items()}

# %% tags=["nbval-ignore-output"]
smallest, largest = min(norms, key=norms.get), max(norms, key=norms.get)
print(f"smallest gradient norm: {norms[smallest]:.3g} ({smallest})")
print(f"largest gradient norm: {norms[largest]:.3g} ({largest})")

# %%
flow = all(0 < n < math.inf for n in norms.values())
check(flow, f"all {len(norms)} parameters got a finite gradient that is not zero: they flow")
doubled = all(torch.allclose(twice[name], 2 * once[name]) for name in once)
check(doubled, "but the same batch again gave twice the gradient: the step never resets it")


# %% [markdown]
# `backward()` adds to `.grad` ([03](03_autograd.ipynb)) and `broken_step` never clears it, so
# each step follows the sum of all gradients so far. The fix is 07's five lines, in order:

# %%
def fixed_step(model, optimizer, x, y):
    """One training step; returns the batch's loss."""
    loss = F.cross_entropy(model(x), y)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    return loss.item()


once, twice = gradients_of_two_steps(fixed_step)
same = all(torch.allclose(twice[name], once[name]) for name in once)
check(same, "with zero_grad, the same batch gives the same gradient again")


# %% [markdown]
# **(4) Overfit one batch.** The CNN can learn 32 images by heart in a few dozen steps: the loss
# falls towards 0. If it cannot, the model, the loss or the step is broken. Thirty fixed steps
# on one batch of 32, for `probability_cnn` and for the CNN without its softmax:

# %%
def overfit(model, steps=30):
    """Train `model` on the first 32 images of the batch, `steps` times; return the losses."""
    optimizer = torch.optim.AdamW(model.parameters(), lr=5e-3)
    model.train()
    return [fixed_step(model, optimizer, x[:32], y[:32]) for _ in range(steps)]


seed_everything(0)
with_softmax = overfit(probability_cnn())
seed_everything(0)
logits_out = overfit(small_cnn(mean, std).to(device))
floor = math.log(1 + math.exp(-1))  # 06: the lowest loss a softmax before the loss allows

fig, ax = plt.subplots(figsize=(5, 3.2))
ax.semilogy(with_softmax, label="probability_cnn (softmax)")
ax.semilogy(logits_out, label="small_cnn (logits)")
ax.axhline(floor, color="gray", linestyle=":", label=f"log(1 + 1/e) = {floor:.3f}")
ax.set(xlabel="step on the same 32 images", ylabel="loss (log scale)", title="Overfit one batch")
ax.legend()
plt.show()

# %%
check(
    with_softmax[-1] < 1.01 * floor,
    "with the softmax, the loss ends stuck at its floor, log(1 + 1/e) = 0.313 (within 1 %)",
)
check(logits_out[-1] < 0.05, "without it, the CNN learns the 32 images by heart: loss below 0.05")

# %% [markdown]
# `cross_entropy` applies its own softmax, to the probabilities here: as [06](06_losses.ipynb)
# showed, the loss can then never go below log(1 + 1/e) ≈ 0.313, and the plot shows it stuck
# there. The fix: the model ends with its logits; to read probabilities, apply
# `softmax` outside the model.
#
# This test cannot find parted labels: a model learns 32 images by heart **whatever their
# labels**. That bug was for item (1).

# %% [markdown]
# ## The fixed run, beside the broken one
#
# All three fixes: labels that belong to their images, `zero_grad` in the step, and the CNN
# ending in logits. The same training, from the same seed:

# %%
seed_everything(0)
fixed = train(small_cnn(mean, std).to(device), fixed_step, fixed_images, fixed_labels)
runs = {"broken": broken, "fixed": fixed}
curves = {
    f"{kind}_loss ({name})": run[f"{kind}_loss"]
    for name, run in runs.items()
    for kind in ("train", "val")
}
fig = plot_history(curves, title="Loss of the broken and the fixed run")
for ax in fig.axes:
    ax.set_ylim(0, 1.1 * max(max(values) for values in curves.values()))
plt.show()

# %% tags=["nbval-ignore-output"]
for name, run in runs.items():
    print(f"{name}: validation accuracy after the last epoch {run['val_accuracy'][-1]:.4f}")

# %%
check(fixed["val_accuracy"][-1] >= 0.75, "the fixed run classifies at least 75% of the images")
check(
    fixed["train_loss"][-1] < broken["train_loss"][-1] / 2,
    "and its training loss ends below half of the broken run's",
)

# %% [markdown]
# The broken run's training loss even rose, above ln 2. The gradients that added up without
# `zero_grad` pushed the model until it answered one class, with a probability near 1, for every
# image; with a softmax before the loss, each image then costs log(1 + 1/e) ≈ 0.313 when that
# class is right and 1 more when it is wrong, more than ln 2 on batches of both classes.

# %%
with torch.inference_mode():
    answers = broken_model.eval()(val_images.to(device)).argmax(dim=1)
check(
    answers.unique().numel() == 1,
    "the broken model ends answering one class for every validation image",
)


# %% [markdown]
# The same 5 epochs on 512 images now learn (07 took the CNN past 95% test accuracy training on
# 9,000 images).
# The cookbook's recipe [Debug a model that does not learn with an executable
# checklist](cookbook/13_reproducibility_debugging_recipes.ipynb#Debug-a-model-that-does-not-learn-with-an-executable-checklist)
# turns the checklist into functions and tries them on more bugs. The errors that do stop a run
# (device, dtype and shape mismatches, hangs, CUDA in forked workers, NaN, `torch.compile`
# graph breaks) each have a recipe there, listed in the [error index](ERRORS.md).

# %% [markdown]
# ## Exercises

# %% [markdown]
# ### Exercise 1 · Which parameters get no gradient?
#
# Make item (3) of the checklist a tool: write `no_gradient(model)`, called after
# `loss.backward()`. It returns the names of the parameters, as `named_parameters()` gives them
# ([04](04_modules.ipynb)), that got no usable gradient: none at all (`.grad` is `None`, as for
# a layer left frozen with `requires_grad_(False)`), zeros only, or a NaN or an infinity in it.
# It only looks, and changes nothing. The check tries small models with each of these, and a
# healthy one.
#
# <details><summary>Hint 1</summary>
#
# Loop over `model.named_parameters()`, and test each parameter's `.grad` for the three cases.
# Test for `None` first: the other two tests would fail on `None`.
# </details>
#
# <details><summary>Hint 2</summary>
#
# `torch.isfinite(t)` is `False` where `t` holds a NaN or an infinity; `.all()` and `.any()`
# turn a tensor of booleans into one. A gradient like `[0.5, -0.5]` sums to 0 but is not zero.
# </details>

# %%
def no_gradient(model):
    """Names of the parameters whose gradient is missing, all zeros, or not finite."""
    names = ...  # a list of names, as named_parameters() gives them
    return names


# %%
lesson13.exercise_1(no_gradient)


# %% [markdown]
# #### Solution

# %% tags=["solution"]
# Solution: open it once you have tried. It uses its own names, so your answer stays as it is.
def solution_no_gradient(model):
    found = []
    for name, p in model.named_parameters():
        if p.grad is None or not torch.isfinite(p.grad).all() or not p.grad.any():
            found.append(name)
    return found


lesson13.exercise_1(solution_no_gradient)

# %% [markdown]
# ## Summary
#
# - Seed every generator (`seed_everything`) and a run repeats bit for bit on the same machine
#   and software; check it with `==`, not a tolerance.
# - Give each DataLoader its own seeded `generator=`: its order, and with workers its
#   augmentation, depend on that seed alone. Keep `num_workers` fixed between runs you compare.
# - `torch.use_deterministic_algorithms(True)` makes GPU kernels repeat, or raise where they
#   cannot. Another machine, version or thread count still changes the last digits.
# - A run that does not learn: look at a batch, check that the first loss is about ln C for C
#   classes, check that gradients flow and are reset each step, overfit one batch.
# - Labels parted from their images, a missing `zero_grad` and a softmax before `cross_entropy`
#   raise no error: only checks like these find them.
#
# Next: the second project, [P2 · Take it to production](projects/02_take_it_to_production.ipynb),
# which takes your P1 classifier through lessons 10-13 and debugs a run that does not learn
# (do [P1](projects/01_your_own_classifier.ipynb) first). Then the
# [cookbook](cookbook/01_tensors_recipes.ipynb), chapter by chapter, for the recipes these
# lessons left out; the [recipe index](RECIPES.md) finds a task, and the [error
# index](ERRORS.md) an error message.
