# %% [markdown]
# # 07 · The training loop: training the CNN
#
# [![Open In Colab](https://colab.research.google.com/assets/colab-badge.svg)](https://colab.research.google.com/github/pytorch-cookbook/pytorch-cookbook/blob/main/notebooks/07_training_loop.ipynb)
#
# You write the loop that trains the course's CNN on CIFAR2, once, and run it: an optimiser, a
# learning rate and its schedule, augmentation, honest evaluation on images the model never saw,
# and a checkpoint you can load again.
#
# **You will be able to:**
# - write the five lines of a training step with a `torch.optim` optimiser, and say what each does
# - choose between SGD and AdamW and spot a learning rate that is too small or too large
# - evaluate a model on held-out data with `model.eval()` and `torch.inference_mode()`
# - train the CNN with a one-cycle schedule and augmentation, and plot its loss and accuracy curves
# - save the model and optimiser in a checkpoint and load it back with `weights_only=True`
#
# **Before you start:** gradients and a parameter update written by hand, under `no_grad`, with
# the gradients zeroed after each step ([03](03_autograd.ipynb)); `nn.Module`, `train()` and
# `eval()`, `state_dict` ([04](04_modules.ipynb)); a Dataset, a DataLoader and v2 augmentation
# ([05](05_datasets_dataloaders.ipynb)); cross-entropy with label smoothing
# ([06](06_losses.ipynb)).
#
# **Cookbook:** [07 · The training loop: recipes](cookbook/07_training_loop_recipes.ipynb) holds every recipe of this chapter (torchkeras, a training script, more optimisers and schedules, gradient clipping, mixed precision, checkpoints that resume exactly, early stopping, label smoothing and mixup measured), for when you need one.
#
# **Study time:** about 80 min: 2,277 words of text at 120 a minute, 234 lines of code at 10 a minute, 19 code cells to run at 1 minute each (reading what they print), 2 exercises at 10 minutes each.
#
# **Run time:** about 35 s on a 2-core CPU · GPU optional.

# %%
import sys

if (
    "google.colab" in sys.modules
):  # Colab: install the course's helpers and what the notebooks import
    import subprocess

    spec = "pytorch-cookbook[notebooks] @ git+https://github.com/pytorch-cookbook/pytorch-cookbook"
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", spec], check=True)

import time
from itertools import islice
from pathlib import Path

import matplotlib.pyplot as plt
import torch
from torch import nn
from torch.utils.data import DataLoader
from torchvision.transforms import v2

from helpers.check import check
from helpers.datasets import ImageTensors
from helpers.env import setup
from helpers.exercises import lesson07
from helpers.images import channel_stats, load_cifar2
from helpers.models import small_cnn
from helpers.plot import plot_history, show_images

device = setup(seed=0)

# %% [markdown]
# ## The loop in five lines
#
# In [03](03_autograd.ipynb) you fitted a logistic regression by hand: compute the loss, call
# `backward()`, move each parameter against its gradient under `torch.no_grad()`, and zero the
# gradients. Training the CNN is the same, with one change: an **optimiser** from `torch.optim`
# does the update for every parameter of the model at once.
#
# First the data. CIFAR2's 10,000 training images are split at random: 1,000 are held out as a
# **validation set**, which the training never sees (the section on evaluation says why), and
# the rest are for training. `torch.randperm(n)` returns the numbers 0 to n - 1 in a random
# order; drawn from its own seeded `torch.Generator` (as the DataLoader's shuffle in
# [05](05_datasets_dataloaders.ipynb)), it gives the same split every time. Its first 1,000
# positions pick the validation images. `ImageTensors` is the Dataset you wrote in 05
# (`CifarImages` there), kept in the course's `helpers`. The model is the course's CNN, which
# takes the `uint8` images as they are; the loss is 06's cross-entropy with label smoothing 0.1.
# `.to(device)` moves the model's weights to the device the setup cell picked (a GPU if there is
# one, as in [01](01_tensors.ipynb)); each batch of images must be moved to the same device
# before it goes through the model. (`.cpu()` moves a tensor back to the CPU.)

# %%
train_images, train_labels, classes = load_cifar2("train")
test_images, test_labels, _ = load_cifar2("test")
mean, std = channel_stats(train_images)
order = torch.randperm(len(train_images), generator=torch.Generator().manual_seed(0))
fit_idx, val_idx = order[1000:], order[:1000]

train_set = ImageTensors(train_images[fit_idx], train_labels[fit_idx])
val_set = ImageTensors(train_images[val_idx], train_labels[val_idx])
test_set = ImageTensors(test_images, test_labels)
train_loader = DataLoader(train_set, batch_size=64, shuffle=True)
val_loader = DataLoader(val_set, batch_size=500)
test_loader = DataLoader(test_set, batch_size=500)

loss_fn = nn.CrossEntropyLoss(label_smoothing=0.1)
torch.manual_seed(0)
model = small_cnn(mean, std, width=16).to(device)
print(
    "images for training:", len(train_set), "| validation:", len(val_set), "| test:", len(test_set)
)
print("parameters of the CNN:", sum(p.numel() for p in model.parameters()))

# %% [markdown]
# One training step is five lines. Forward pass, loss, clear the old gradients, compute the new
# ones, update. `optimizer.zero_grad()` is 03's zeroing of the gradients, done for every
# parameter (it sets them to `None`, which the next `backward()` treats as zero);
# `optimizer.step()` is 03's update. Plain `SGD` (stochastic gradient descent) makes exactly the
# update you wrote, `p -= lr * p.grad`; the check compares the two. (`p.detach().clone()` keeps
# a copy of each parameter's values before the step: `clone()` copies, so the update does not
# change the copy.)

# %%
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
images, labels = next(iter(train_loader))
images, labels = images.to(device), labels.to(device)
before = [p.detach().clone() for p in model.parameters()]

model.train()
loss = loss_fn(model(images), labels)  # 1, 2: forward pass and loss
optimizer.zero_grad()  # 3: clear the gradients of the last step
loss.backward()  # 4: new gradients in every p.grad
optimizer.step()  # 5: update every parameter

by_hand = [b - 0.1 * p.grad for p, b in zip(model.parameters(), before, strict=True)]
check(
    all(torch.allclose(p, q) for p, q in zip(model.parameters(), by_hand, strict=True)),
    "optimizer.step() made 03's update, p - lr * p.grad, on every parameter of the CNN",
)

# %% [markdown]
# A training loop repeats these five lines for every batch of the DataLoader; one pass over the
# training data is an **epoch**. `model.train()` before it turns on training behaviour (batch
# norm uses each batch's own statistics, [04](04_modules.ipynb)). The order matters: the
# gradients must be cleared before `backward()`, because `backward()` adds to what `.grad`
# holds (03), and `step()` must come after it. (Adding up is sometimes wanted: the cookbook's
# exercise on gradient accumulation sums several batches' gradients before one step.)

# %% [markdown]
# ## Choose an optimiser and its learning rate
#
# Two optimisers cover most code you will meet. **SGD** moves each parameter against its
# gradient, scaled by the learning rate; with `momentum=0.9` it follows a running average of
# recent gradients, which smooths the zig-zag from batch to batch. Tuned well, with a schedule,
# it is still a strong choice for CNNs. **AdamW** keeps two running averages per parameter, of
# the gradient and of its square, and divides one by the square root of the other: each
# parameter then moves by about the learning rate per step, whatever the size of its gradient.
# That makes it forgiving, and the usual default in new code. Its `weight_decay` pulls every
# weight a little toward zero at each step, and it does so on the weights themselves; the older
# `Adam` added the pull to the gradient instead, where the division by the second average
# weakens it. That change is the "W" in the name. Both optimisers use the same five lines; only
# the constructor changes.
#
# The **learning rate** is the setting that matters most. Too small, and nothing moves; too
# large, and the steps overshoot. Below, the same starting weights take 12 AdamW steps on the
# same 12 batches with three learning rates. `islice(train_loader, 12)`, from Python's
# `itertools`, takes the first 12 batches of the loader and stops:

# %%
torch.manual_seed(0)
start = small_cnn(mean, std, width=16).state_dict()
batches = list(islice(train_loader, 12))  # the first 12 batches
curves = {}
for lr in (1e-5, 5e-3, 0.3):
    net = small_cnn(mean, std, width=16).to(device)
    net.load_state_dict(start)
    net_optimizer = torch.optim.AdamW(net.parameters(), lr=lr)
    net.train()
    curves[lr] = []
    for images, labels in batches:
        images, labels = images.to(device), labels.to(device)
        loss = loss_fn(net(images), labels)
        net_optimizer.zero_grad()
        loss.backward()
        net_optimizer.step()
        curves[lr].append(loss.item())

fig, ax = plt.subplots(figsize=(5, 3.2))
for lr, losses in curves.items():
    ax.semilogy(range(1, 13), losses, marker="o", label=f"lr {lr:g}")
ax.set(xlabel="step", ylabel="training loss (log scale)", title="Same start, three learning rates")
ax.legend()
plt.show()

# %%
last = {lr: sum(losses[-4:]) / 4 for lr, losses in curves.items()}  # the last 4 steps' mean
first = curves[5e-3][0]  # the same for all three: same weights, same first batch
check(
    last[1e-5] > 0.75 * first, "lr 1e-05: after 12 steps the loss is still within 25% of its start"
)
check(last[5e-3] < 0.6 * first, "lr 0.005: the loss has fallen by more than 40%")
check(
    max(curves[0.3]) > 5 * first and last[0.3] > last[5e-3],
    "lr 0.3: the first steps blow the loss up, and it ends above lr 0.005's",
)


# %% [markdown]
# The loss of one batch is noisy: judge a learning rate by the trend over many steps, not by
# one value. Values from about 0.001 to 0.01 are the usual range to try for AdamW; the full run
# below uses 0.005 as the peak of a schedule.

# %% [markdown]
# ## Evaluate on held-out data
#
# The training loss says how well the model fits the batches it learned from. What you want to
# know is how it does on images it has never seen, so you measure on held-out data. The
# **validation set** is for watching the run and making choices (a learning rate, the number of
# epochs); the **test set** is looked at once, at the end, so that no choice was tuned to it.
#
# Evaluating needs two switches:
#
# - `model.eval()` turns off training behaviour: batch norm uses the running statistics it
#   collected during training, not the statistics of the batch in front of it. (A dropout layer,
#   `nn.Dropout(p)`, which in training zeroes a random share `p` of its inputs and scales the
#   rest by 1/(1 − p) so that the model cannot lean on any one feature, passes everything through
#   unchanged in evaluation mode.) Without it,
#   the answer depends on which images share a batch, and the forward pass even changes the
#   running statistics.
# - `torch.inference_mode()` tells autograd not to record a graph: less memory, faster, and no
#   accidental `backward()`.
#
# The function returns the mean loss per image and the accuracy, counting images, not batches
# (the last batch can be smaller than the others):

# %%
def evaluate(model, loader, loss_fn):
    """Return (mean loss per image, accuracy) of model over loader."""
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


# %% [markdown]
# An untrained CNN should score like a coin toss on two classes. And evaluating must leave the
# model as it was: the check compares the first batch norm's running mean before and after, then
# shows what one forward pass in training mode would have done to it. `small_cnn` is an
# `nn.Sequential`, so its layers are numbered from 0 like a list's items
# ([04](04_modules.ipynb)): layers 0 and 1 turn the pixels into normalised floats, layer 2 is
# the first conv block, itself a Sequential of conv, batch norm and ReLU. So `untrained[2][1]` is
# the first batch norm.

# %% tags=["nbval-ignore-output"]
torch.manual_seed(0)
untrained = small_cnn(mean, std, width=16).to(device)
running_mean = untrained[2][1].running_mean  # the first batch norm layer's statistics
kept = running_mean.clone()
untrained_loss, untrained_acc = evaluate(untrained, val_loader, loss_fn)
print(f"untrained CNN: validation loss {untrained_loss:.4f}, accuracy {untrained_acc:.4f}")

# %%
check(0.3 < untrained_acc < 0.7, "an untrained CNN is at chance level on the validation set")
check(torch.equal(running_mean, kept), "evaluate() left the batch norm statistics as they were")
untrained.train()
with torch.inference_mode():
    untrained(val_set.images[:500].to(device))
check(
    not torch.equal(running_mean, kept),
    "one forward pass in training mode, even without gradients, changed them",
)

# %% [markdown]
# ## Schedule the learning rate, and augment the images
#
# Two more ingredients make the full run reach a good accuracy in a few epochs.
#
# A **learning-rate schedule** changes the learning rate as training goes. `OneCycleLR` starts
# low, rises to its peak `max_lr` over the first 30% of the steps, then lowers it smoothly to
# almost zero: large steps while the weights are far from good, small ones to settle at the end.
# (It also moves AdamW's momentum the other way; you need not do anything about it.) You call
# `scheduler.step()` after every `optimizer.step()`, so it needs the run's total number of
# steps. Here is the schedule of the full run, computed on a stand-in parameter:

# %%
EPOCHS = 3
total_steps = EPOCHS * len(train_loader)
max_lr = 5e-3
dummy = torch.optim.AdamW([torch.zeros(1, requires_grad=True)], lr=max_lr)
schedule = torch.optim.lr_scheduler.OneCycleLR(dummy, max_lr=max_lr, total_steps=total_steps)
lrs = []
for _ in range(total_steps):
    # the rate of this step: a list, as an optimiser can give groups of parameters rates of
    # their own (its param_groups); ours has one group
    lrs.append(schedule.get_last_lr()[0])
    dummy.step()
    schedule.step()

fig, ax = plt.subplots(figsize=(5, 3))
ax.plot(lrs)
ax.set(xlabel="step", ylabel="learning rate", title=f"OneCycleLR over {total_steps} steps")
plt.show()
peak = lrs.index(max(lrs))
print(f"start {lrs[0]:.4g} · peak {max(lrs):.4g} at step {peak} · last {lrs[-1]:.4g}")
check(
    lrs[0] < max_lr / 20 and max(lrs) > 0.99 * max_lr and lrs[-1] < max_lr / 1000,
    "the schedule starts low, peaks at max_lr and ends near zero",
)

# %% [markdown]
# **Augmentation** shows the model a slightly different version of each training image at
# every epoch, as in [05](05_datasets_dataloaders.ipynb): flipped left-right at random, and
# shifted by cropping 32×32 pixels at a random place from a copy padded by 4 reflected pixels.
# An airplane stays an airplane, so the labels do not change; the model has to learn what does
# not depend on position or direction. Only the training set is augmented: evaluation looks at
# the images as they are. Top row, six training images; bottom row, what the model is shown of
# them in one epoch. (The class names drop the folder's number: `0_airplane` reads `airplane`.)

# %%
augment = v2.Compose(
    [v2.RandomHorizontalFlip(), v2.RandomCrop(32, padding=4, padding_mode="reflect")]
)
train_set = ImageTensors(train_images[fit_idx], train_labels[fit_idx], augment)
train_loader = DataLoader(train_set, batch_size=64, shuffle=True)

names = [c.split("_", 1)[1] for c in classes]  # "0_airplane" -> "airplane"
shown = range(0, 9000, 1500)  # six training images
originals = torch.stack([train_set.images[i] for i in shown])
augmented = torch.stack([train_set[i][0] for i in shown])
labels_shown = torch.stack([train_set.labels[i] for i in shown])
both_labels = torch.cat([labels_shown, labels_shown])
show_images(torch.cat([originals, augmented]), both_labels, names, ncols=6)
plt.show()
check(
    augmented.shape == originals.shape and augmented.dtype == torch.uint8,
    "augmented images keep their shape and dtype, so the model takes them as before",
)

# %% [markdown]
# ## Train the CNN
#
# Everything together: a fresh CNN, AdamW with a small weight decay, the one-cycle schedule over
# the whole run, the augmented training data in batches of 64, and after every epoch an
# evaluation on the validation set.
#
# The history of each epoch goes into a dict for the plot. `loss.item() * len(labels)` turns a
# batch's mean loss into a sum over its images, so the epoch's mean counts every image once.
# The printed lines vary a little with the machine; the checks follow.

# %% tags=["nbval-ignore-output"]
torch.manual_seed(0)
model = small_cnn(mean, std, width=16).to(device)
optimizer = torch.optim.AdamW(model.parameters(), lr=max_lr, weight_decay=5e-4)
scheduler = torch.optim.lr_scheduler.OneCycleLR(optimizer, max_lr=max_lr, total_steps=total_steps)
history = {"train_loss": [], "val_loss": [], "train_accuracy": [], "val_accuracy": []}
started = time.perf_counter()  # a clock in seconds, for measuring how long something takes
for epoch in range(1, EPOCHS + 1):
    model.train()
    total_loss, right, count = 0.0, 0, 0
    for images, labels in train_loader:
        images, labels = images.to(device), labels.to(device)
        logits = model(images)
        loss = loss_fn(logits, labels)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        scheduler.step()
        total_loss += loss.item() * len(labels)
        right += (logits.argmax(dim=1) == labels).sum().item()
        count += len(labels)
    val_loss, val_acc = evaluate(model, val_loader, loss_fn)
    history["train_loss"].append(total_loss / count)
    history["train_accuracy"].append(right / count)
    history["val_loss"].append(val_loss)
    history["val_accuracy"].append(val_acc)
    print(
        f"epoch {epoch}  train loss {total_loss / count:.4f}  val loss {val_loss:.4f}  "
        f"val accuracy {val_acc:.4f}  ({time.perf_counter() - started:.0f} s)"
    )
test_loss, test_acc = evaluate(model, test_loader, loss_fn)
print(f"test accuracy: {test_acc:.4f}")

# %%
check(  # last_epoch counts the scheduler.step() calls, here one per batch
    scheduler.last_epoch == total_steps,
    "the schedule stepped once per batch, to the end of the run",
)
check(
    history["train_loss"][-1] < history["train_loss"][0],
    "the training loss went down over the run",
)
check(
    test_acc >= 0.95,
    "the CNN classifies at least 95% of the 2,000 test images correctly",
    measured=f"{test_acc:.4f}",
)

# %% [markdown]
# The stored run of this notebook reached the test accuracy printed above. Yours may differ in
# the last digits, because the arithmetic differs a little between processors; what counts is
# that it clears 95%, as the check says.
#
# The curves of your own run. `helpers.plot.plot_history` draws one panel per metric, training
# and validation side by side:

# %%
plot_history(history, title=f"small_cnn on CIFAR2, {EPOCHS} epochs")
plt.show()

# %% [markdown]
# **What to notice:** the validation accuracy can go down as well as up from one epoch to the
# next (one of the 1,000 images is 0.1%), and the small steps at the end of the schedule settle
# the run near its best.
# The training accuracy is measured on augmented images, in training mode, while the weights
# are still moving: it is not a fair score, and it can even be lower than the validation
# accuracy. The test accuracy is computed once, after every choice was made.

# %%
check(
    history["val_accuracy"][-1] >= max(history["val_accuracy"]) - 0.01,
    "the run ends within 0.01 of its best validation accuracy",
)

# %% [markdown]
# ## Save a checkpoint
#
# A trained model lives only in memory: when the notebook is closed or restarted, it is gone. A
# **checkpoint** saves the model's `state_dict` ([04](04_modules.ipynb)) and, to train on later,
# the optimiser's: AdamW's running averages and step count are part of where the run is.
# `torch.save` writes a dict of them; `torch.load(..., weights_only=True)` reads it back while
# allowing only tensors and plain Python values, so a file from elsewhere cannot run code on
# your machine (it is the default since PyTorch 2.6; writing it says what you expect).
# `map_location=device` puts the loaded tensors on this notebook's device, whichever device they
# were saved from. Checkpoints go under `runs/`.

# %%
runs = Path("runs")
runs.mkdir(exist_ok=True)
path = runs / "07_cnn.pt"
torch.save(
    {"model": model.state_dict(), "optimizer": optimizer.state_dict(), "epoch": EPOCHS}, path
)

checkpoint = torch.load(path, weights_only=True, map_location=device)
loaded = small_cnn(mean, std, width=16).to(device)
loaded.load_state_dict(checkpoint["model"])
loaded_optimizer = torch.optim.AdamW(loaded.parameters(), lr=max_lr, weight_decay=5e-4)
loaded_optimizer.load_state_dict(checkpoint["optimizer"])
print("saved to:", path, "| keys:", sorted(checkpoint), "| epoch:", checkpoint["epoch"])

loaded_loss, loaded_acc = evaluate(loaded, test_loader, loss_fn)
check(
    loaded_acc == test_acc and abs(loaded_loss - test_loss) < 1e-5,
    "the loaded model scores exactly as the trained one on the test set",
)
# An optimiser's state_dict holds "state": one dict per parameter (AdamW's two running averages
# and its "step" count), and "param_groups" (lr, weight decay, ...).
steps_saved = [s["step"].item() for s in loaded_optimizer.state_dict()["state"].values()]
check(
    set(steps_saved) == {total_steps},
    "the loaded optimiser knows how many steps it took, with its running averages",
)


# %% [markdown]
# To continue a run from a checkpoint exactly where it stopped, you also need the scheduler's
# `state_dict`, the epoch, and the state of the random number generators. The
# [cookbook](cookbook/07_training_loop_recipes.ipynb)'s recipe "Save a checkpoint that resumes
# exactly" does that and checks it bit for bit; its other recipes cover gradient clipping, mixed
# precision and mixup.

# %% [markdown]
# ## Exercises

# %% [markdown]
# ### Exercise 1 · One epoch as a function
#
# The loop of the full run is worth a name. Write `train_one_epoch(model, loader, loss_fn,
# optimizer, scheduler, device)`: it trains `model` for one pass over `loader`, stepping the
# schedule after every batch, and returns the mean training loss per image. The check runs your
# function for one epoch on a small CNN and compares the weights and the returned loss with its
# own epoch. It hands your function a model that is in evaluation mode, and a loader whose last
# batch is smaller than the others.
#
# <details><summary>Hint 1</summary>
#
# What the full run does inside `for epoch ...`, before the evaluation, belongs in the function,
# in the same order. Where does training mode get switched on?
# </details>
#
# <details><summary>Hint 2</summary>
#
# Keep two running sums while you loop: each batch's loss times its number of images, and the
# number of images. Their ratio is the mean per image; the mean of the batch losses would give
# the small last batch as much weight as a full one.
# </details>

# %%
def train_one_epoch(model, loader, loss_fn, optimizer, scheduler, device):
    """Train model for one pass over loader; return the mean training loss per image."""
    ...  # your loop here


# %%
lesson07.exercise_1(train_one_epoch, device)


# %% [markdown]
# #### Solution

# %% tags=["solution"]
# Solution: open it once you have tried. It uses its own names, so your answer stays as it is.
def solution_train_one_epoch(model, loader, loss_fn, optimizer, scheduler, device):
    """Train model for one pass over loader; return the mean training loss per image."""
    model.train()
    total, count = 0.0, 0
    for images, labels in loader:
        images, labels = images.to(device), labels.to(device)
        loss = loss_fn(model(images), labels)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        scheduler.step()
        total += loss.item() * len(labels)
        count += len(labels)
    return total / count


lesson07.exercise_1(solution_train_one_epoch, device)

# %% [markdown]
# ### Exercise 2 · Which class does the CNN get wrong?
#
# A single accuracy can hide that a model is much better on one class than on the other. Fill in
# `per_class`: the trained model's accuracy on the test airplanes (label 0) and on the test
# automobiles (label 1), a list of two numbers in that order. Evaluate the way this lesson does.
#
# <details><summary>Hint 1</summary>
#
# Get the model's predicted class for every test image first, in evaluation mode and without
# recording a graph. Then, for each class, look only at the images whose true label is that
# class.
# </details>
#
# <details><summary>Hint 2</summary>
#
# `logits.argmax(dim=1)` is a prediction per image; `torch.cat` joins the predictions of all
# batches. On a GPU the predictions are on the GPU while `test_labels` is on the CPU:
# `.cpu()` moves a tensor back to the CPU. A boolean mask such as `test_labels == 0` picks the
# airplanes; the mean of a boolean tensor (as `float`) is the fraction that is `True`.
# </details>

# %%
per_class = ...  # [accuracy on the test airplanes, accuracy on the test automobiles]

# %%
lesson07.exercise_2(model, test_loader, per_class)

# %% [markdown]
# #### Solution

# %% tags=["solution"]
# Solution: open it once you have tried. It uses its own names, so your answer stays as it is.
model.eval()
with torch.inference_mode():
    solution_predicted = torch.cat(
        [model(images.to(device)).argmax(dim=1).cpu() for images, _ in test_loader]
    )
solution_per_class = [
    (solution_predicted[test_labels == c] == c).float().mean().item() for c in range(2)
]
lesson07.exercise_2(model, test_loader, solution_per_class)

# %% [markdown]
# ## Summary
#
# - A training step is five lines: forward, loss, `optimizer.zero_grad()`, `loss.backward()`,
#   `optimizer.step()`; an optimiser makes 03's hand-written update for every parameter.
# - AdamW is a forgiving default, SGD with momentum a strong classic; the learning rate matters
#   most: too small and nothing moves, too large and the loss blows up.
# - Evaluate with `model.eval()` and `torch.inference_mode()`, on a validation set while you
#   make choices and on the test set once, at the end.
# - A one-cycle schedule stepped after every batch, and augmentation of the training images,
#   took the CNN past 95% test accuracy in a few epochs on a CPU.
# - Save the model's and the optimiser's `state_dict` with `torch.save`, and load them with
#   `torch.load(..., weights_only=True)`.
#
# Next: [08 · TensorBoard: watching the CNN train](08_tensorboard.ipynb).
