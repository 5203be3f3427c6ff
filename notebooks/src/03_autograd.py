# %% [markdown]
# # 03 · Autograd: a classifier fitted by hand
#
# [![Open In Colab](https://colab.research.google.com/assets/colab-badge.svg)](https://colab.research.google.com/github/pytorch-cookbook/pytorch-cookbook/blob/main/notebooks/03_autograd.ipynb)
#
# This lesson fits the simplest classifier there is, one weight per pixel and a bias, to tell
# CIFAR2's airplanes from its automobiles. PyTorch's autograd computes the gradients; you take
# the steps yourself.
#
# **You will be able to:**
# - Turn a batch of images into standardised features and score them with a weight vector and a
#   bias.
# - Get a gradient from autograd (`requires_grad`, `backward()`, `.grad`) and check it against
#   the formula.
# - Read the graph autograd records, from the leaves to the loss.
# - Take a gradient-descent step under `torch.no_grad()`, and reset gradients between steps.
# - Fit the classifier in a loop, plot its loss, and evaluate it without recording a graph.
#
# **Before you start:** a tensor's shape and dtype, `reshape`, matrix product and broadcasting
# ([01](01_tensors.ipynb)); the derivative of a function and the chain rule (school calculus).
# Python: `with` blocks ([00](00_python.ipynb#Generators-and-with-blocks)) and changes in place ([00](00_python.ipynb#Names,-objects,-del-and-changes-in-place)).
#
# **Cookbook:** [03 · Autograd: recipes](cookbook/03_autograd_recipes.ipynb) holds every recipe
# of this chapter (leaves and `retain_grad`, gradients of non-scalar outputs, `torch.func`,
# hooks, higher derivatives, in-place errors and anomaly detection, your own
# `autograd.Function`), for when you need one.
#
# **Study time:** about 80 min: 2,127 words of text at 120 a minute, 162 lines of code at 10 a minute, 24 code cells to run at 1 minute each (reading what they print), 2 exercises at 10 minutes each.
#
# **Run time:** about 10 s on a 2-core CPU · GPU optional.

# %%
import sys

if (
    "google.colab" in sys.modules
):  # Colab: install the course's helpers and what the notebooks import
    import subprocess

    spec = "pytorch-cookbook[notebooks] @ git+https://github.com/pytorch-cookbook/pytorch-cookbook"
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", spec], check=True)

import math

import matplotlib.pyplot as plt
import torch
import torch.nn.functional as F

from helpers.check import check, expect_error
from helpers.diagrams.graph import draw_graph
from helpers.env import setup
from helpers.exercises import lesson03
from helpers.images import load_cifar2
from helpers.plot import show_images

device = setup(seed=0)

# %% [markdown]
# ## The problem: airplane or automobile, from 3,072 numbers
#
# A CIFAR2 image is 3 × 32 × 32 = 3,072 numbers. This lesson's classifier weights each of them,
# adds them up with a bias, and reads the sum as evidence: large means "automobile", very
# negative "airplane". That is **logistic regression**: fitting it means finding 3,072 weights
# and one bias that score the training images well.
#
# First, the data. The training images come sorted by class, so we show a few of each.

# %%
train_images, train_labels, classes = load_cifar2("train")
test_images, test_labels, _ = load_cifar2("test")
names = [c.split("_", 1)[1] for c in classes]  # "0_airplane" -> "airplane"
print("train:", tuple(train_images.shape), train_images.dtype, "| test:", tuple(test_images.shape))
print("classes:", names, "| share of automobiles:", train_labels.float().mean().item())
picks = [0, 1, 2, 3, 5000, 5001, 5002, 5003]
show_images(train_images[picks], train_labels[picks], names, ncols=4)
plt.show()


# %% [markdown]
# Each image becomes one row of 3,072 features: `reshape` it, turn the bytes into floats in
# [0, 1], then **standardise** each feature (subtract its mean over the training images, divide
# by its standard deviation), so that one step size suits every weight. The test images use the
# training set's mean and std: they stand for new images, which we must not peek at.

# %%
def features(images: torch.Tensor) -> torch.Tensor:
    """(N, 3, 32, 32) uint8 images -> (N, 3072) floats in [0, 1]."""
    return images.reshape(len(images), -1).float() / 255


X_train, X_test = features(train_images), features(test_images)
mean, std = X_train.mean(dim=0), X_train.std(dim=0)  # one per feature, from the training set
X_train, X_test = (X_train - mean) / std, (X_test - mean) / std
y_train, y_test = train_labels.float(), test_labels.float()  # 1.0 for automobile
print("X_train:", tuple(X_train.shape), X_train.dtype, "| y_train:", tuple(y_train.shape))
check(
    torch.allclose(X_train.mean(dim=0), torch.zeros(3072), atol=1e-4)
    and torch.allclose(X_train.std(dim=0), torch.ones(3072), atol=1e-4),
    "every training feature has mean 0 and standard deviation 1",
)

# %% [markdown]
# The model is a weight vector `w` of 3,072 numbers and a bias `b`. For a batch `X` of shape
# (N, 3072), `X @ w` multiplies each row (one image) by `w` feature by feature and sums: one
# number per image, shape (N,). Adding `b` gives each image's score,
# its **logit**. The sigmoid $\sigma(z) = 1 / (1 + e^{-z})$ turns a logit into a probability
# of "automobile", above 0.5 exactly when the logit is above 0. With every weight at zero, each
# image gets 0.5: the model knows nothing yet.

# %%
w = torch.zeros(3072)
b = torch.zeros(())  # a 0-d tensor: one number
z = X_train @ w + b  # (N,): one logit per image
p = torch.sigmoid(z)
print("logits:", tuple(z.shape), "| probability of the first image:", p[0].item())


# %% [markdown]
# How wrong is a model? For a yes/no answer the usual measure is the **binary cross-entropy**:
# $-\log p$ for an automobile (label $y = 1$), $-\log(1 - p)$ for an airplane ($y = 0$),
# averaged over the images. A confident wrong answer costs a lot, a confident right one almost
# nothing. Written with the logit, both cases are $\log(1 + e^{z}) - y z$. The first term is
# **softplus**, and `F.softplus` (`F` is `torch.nn.functional`) computes it without the
# overflow of the direct form, which breaks for a confident score:

# %%
def bce(z: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """Mean binary cross-entropy of logits z against targets y (0 or 1)."""
    return (F.softplus(z) - y * z).mean()


confident = torch.tensor([20.0])  # a strong "automobile" score, for an airplane (y = 0)
print("naive -log(1 - sigmoid(z)):", (-torch.log(1 - torch.sigmoid(confident))).item())
print("softplus(z):", F.softplus(confident).item())
print(f"loss of the all-zero model: {bce(z, y_train).item():.4f} (log 2 = {math.log(2):.4f})")

# %% [markdown]
# In float32, $\sigma(20)$ rounds to exactly 1, so the naive form takes the log of 0. Lesson
# [06](06_losses.ipynb) teaches the losses PyTorch ships, this one among them.

# %% [markdown]
# ## Autograd records a graph
#
# To improve `w` and `b` we need the **gradient** of the loss: how fast the loss changes when
# each of the 3,073 numbers moves a little. Autograd computes it in three steps:
#
# 1. create `w` and `b` with `requires_grad=True`: PyTorch then records every operation that
#    uses them;
# 2. compute the loss as usual;
# 3. call `loss.backward()` (next section).
#
# Tensors you create yourself are **leaves**. Tensors computed from them carry a `grad_fn`, the
# step that knows how to pass a gradient back to its inputs. The data never requires gradients:
# autograd records nothing for it. Old code wraps tensors in `Variable(x, requires_grad=True)`
# for this: since PyTorch 0.4 every tensor can require gradients, and `Variable` only returns a
# tensor.

# %%
w = torch.zeros(3072, requires_grad=True)
b = torch.zeros((), requires_grad=True)
z = X_train @ w + b
loss = bce(z, y_train)
for name, t in {"w": w, "b": b, "X_train": X_train, "z": z, "loss": loss}.items():
    step = t.grad_fn.name() if t.grad_fn else None
    print(f"{name:>7}: leaf {t.is_leaf!s:<5}  requires_grad {t.requires_grad!s:<5}  grad_fn {step}")
print("loss.grad_fn's inputs:", [node.name() for node, _ in loss.grad_fn.next_functions])

# %% [markdown]
# `loss.grad_fn` is the last node of the graph; its `next_functions` are the nodes of its
# inputs, each as a pair (node, which of that node's outputs: the `_` above), and so on back to
# the leaves. The course's `draw_graph` walks them and draws what it
# finds. Each node is named after the operation whose gradient it computes: `MvBackward0` for
# `X_train @ w` (Mv: a matrix times a vector), `AddBackward0` for `+ b`, and so on. At the top,
# `AccumulateGrad` nodes will add the arriving gradient into `w.grad` and `b.grad`.

# %%
named = {"X_train": X_train, "y_train": y_train, "w": w, "b": b, "z": z, "loss": loss}
draw_graph(loss, named)
plt.show()

# %% [markdown]
# Read it top to bottom as the forward computation: `X_train @ w`, plus `b`, gives `z`; `z`
# feeds both the softplus and the product `y_train * z`; their difference is averaged into the
# loss. The dashed boxes are the data: used, but with no gradient to compute for them.
# `backward()` walks the graph bottom to top. Every node passes a gradient to each of its
# inputs, and where two paths meet (at `z`) the gradients are added: the chain rule, applied for
# you. (The "0" in the names numbers the variants of an operation's backward step.)

# %% [markdown]
# ## `backward()` fills `.grad`
#
# `loss.backward()` walks the graph back from the loss and stores each leaf's gradient in its
# `.grad`, a tensor of the leaf's shape. Before, `.grad` is `None`.

# %%
print("w.grad before backward():", w.grad)
loss.backward()
print("w.grad after backward(): shape", tuple(w.grad.shape), "| b.grad: shape", tuple(b.grad.shape))

# %% [markdown]
# Is the gradient right? For this loss we can also derive it by hand. The derivative of
# $\log(1 + e^{z}) - yz$ with respect to $z$ is $\sigma(z) - y = p - y$. Each logit is
# $z_i = x_i \cdot w + b$, whose derivative with respect to $w$ is the image's features $x_i$,
# and the loss averages over $N$ images, so the chain rule gives
#
# $$\frac{\partial L}{\partial w} = \frac{1}{N} X^\top (p - y), \qquad
# \frac{\partial L}{\partial b} = \frac{1}{N} \sum_i (p_i - y_i).$$
#
# In code, `X.T` is the transpose of `X` (rows and columns swapped, shape (3072, N)), so
# `X.T @ (p - y)` adds up the images' feature rows, each weighted by its $p_i - y_i$. Autograd
# and the formula add up 10,000 float32 numbers in different orders, so we compare them up to
# rounding, with `torch.allclose` and a tolerance well below the gradient's size.

# %%
p = torch.sigmoid(X_train @ w + b)
grad_w = X_train.T @ (p - y_train) / len(X_train)
grad_b = (p - y_train).mean()
print(f"largest entry of the gradient, for scale: {grad_w.abs().max().item():.2f}")
check(torch.allclose(w.grad, grad_w, atol=1e-4), "w.grad from autograd equals X.T @ (p - y) / N")
check(torch.allclose(b.grad, grad_b, atol=1e-4), "b.grad from autograd equals mean(p - y)")

# %% [markdown]
# ## One step by hand, and why gradients must be reset
#
# Gradient descent moves every parameter a small step against its gradient:
# $w \leftarrow w - \text{lr} \cdot \partial L / \partial w$, with a **learning rate** lr. The
# update itself must not be recorded (it is not part of the model), and `w` must stay the same
# leaf tensor. Autograd refuses an in-place change of a leaf it is tracking:

# %%
lr = 0.01
with expect_error(RuntimeError):
    w -= lr * w.grad

# %% [markdown]
# Inside `with torch.no_grad():` nothing is recorded, so the in-place update is allowed. After
# the step, the loss is lower:

# %%
with torch.no_grad():
    w -= lr * w.grad
    b -= lr * b.grad
new_loss = bce(X_train @ w + b, y_train)
print(f"loss before the step: {loss.item():.4f} | after: {new_loss.item():.4f}")
print("w is still a leaf:", w.is_leaf)
check(new_loss.item() < loss.item(), "one step against the gradient lowers the loss")

# %% [markdown]
# Now the trap. `backward()` does not overwrite `.grad`: it **adds** to it. `w.grad` still holds
# the first step's gradient, so computing the next one on top of it gives a sum of the two.
# Below, we clear the gradients, then run the same forward and backward pass twice without
# clearing in between, and print the gradient's size, its `norm()` (the square root of the sum
# of its squares).

# %%
w.grad = None
b.grad = None
bce(X_train @ w + b, y_train).backward()
once = w.grad.clone()  # a copy: the next backward() adds to w.grad in place
bce(X_train @ w + b, y_train).backward()  # same w, same data: the same gradient, added
print(f"size of w.grad after one backward(): {once.norm().item():.4g}")
print(f"size of w.grad after two:            {w.grad.norm().item():.4g}")
check(torch.allclose(w.grad, 2 * once), "a second backward() doubles .grad: gradients accumulate")

# %% [markdown]
# Adding up is on purpose: it lets several backward passes sum their gradients, to train on a
# batch too big for memory in pieces (the cookbook's
# [gradient accumulation](cookbook/03_autograd_recipes.ipynb#Accumulate-gradients-over-micro-batches-to-emulate-a-big-batch)
# recipe). But it means **reset the gradients before each backward pass**: set `.grad` to `None`
# (what an optimizer's `zero_grad()` does, lesson 07).
#
# One more rule: a backward pass frees what the graph saved for it, so each backward needs a
# fresh forward pass. Calling `backward()` twice on the same loss fails:

# %%
w.grad = None
b.grad = None
loss = bce(X_train @ w + b, y_train)
loss.backward()
with expect_error(RuntimeError):
    loss.backward()

# %% [markdown]
# ## The loop: fitting the classifier
#
# Put the pieces together: forward pass, loss, backward pass, update, reset. Each step here is
# a **full-batch** step: its gradient averages over all 10,000 training images (lesson 05 feeds
# a model smaller batches). We take 200 steps from zero weights, with a learning rate of 0.01.
# Once the lesson is done, try 0.1 and compare the loss curves.

# %% tags=["nbval-ignore-output"]
w = torch.zeros(3072, requires_grad=True)
b = torch.zeros((), requires_grad=True)
lr, steps = 0.01, 200
losses = []
for step in range(steps):
    loss = bce(X_train @ w + b, y_train)
    loss.backward()
    with torch.no_grad():
        w -= lr * w.grad
        b -= lr * b.grad
    w.grad = None
    b.grad = None
    losses.append(loss.item())  # a Python number: keeping `loss` would keep its graph alive
    if step % 40 == 0 or step == steps - 1:
        print(f"step {step:3d}  loss {loss.item():.4f}")

# %%
fig, ax = plt.subplots(figsize=(5, 3), layout="constrained")
ax.plot(losses)
ax.set(xlabel="step", ylabel="training loss", title="Logistic regression on CIFAR2 pixels")
plt.show()
check(losses[0] > 0.69 and losses[-1] < 0.45, "the loss fell from log 2 to below 0.45")


# %% [markdown]
# The loss measures confidence; what we care about is how often the classifier is right. The
# **accuracy** is the share of images whose predicted class (logit above 0 or not) is the label.
# The test images played no part in fitting, so their accuracy tells how the classifier does
# on images it has never seen. The evaluation needs no gradients, so, like the update step, it
# runs under `no_grad()` (the next section compares the ways to skip the graph).

# %% tags=["nbval-ignore-output"]
def accuracy(X: torch.Tensor, y: torch.Tensor) -> float:
    """Share of rows of X whose predicted class (logit > 0 means 1) equals y."""
    with torch.no_grad():
        predicted = (X @ w + b > 0).float()
    return (predicted == y).float().mean().item()


train_acc, test_acc = accuracy(X_train, y_train), accuracy(X_test, y_test)
print(f"train accuracy {train_acc:.3f} | test accuracy {test_acc:.3f}")

# %%
check(train_acc > 0.75 and test_acc > 0.75, "train and test accuracy are above 0.75 (chance: 0.5)")
check(abs(train_acc - test_acc) < 0.03, "test accuracy is within 0.03 of train accuracy")

# %% [markdown]
# Not bad for a model that sees only pixel values. With one weight per pixel it is too simple
# to memorise 10,000 images, so it does about as well on new ones; a test score a little above
# the training score is chance (2,000 test images are a small sample). It cannot see shapes,
# though: lesson 04 builds a convolutional network that can.

# %% [markdown]
# ## Values without a graph: `no_grad`, `inference_mode` and `detach`
#
# Every operation on `w` outside `no_grad()` records a graph, which costs memory and time. You
# used `no_grad()` for the update step and in `accuracy`. For evaluation and plotting you want
# plain numbers. Three tools:
#
# - `with torch.no_grad():` records nothing inside the block (evaluation, manual updates);
# - `with torch.inference_mode():` the same, with less bookkeeping, for tensors used only for
#   inference afterwards (inference: using a trained model for its answers, no training);
# - `t.detach()` returns a tensor that shares `t`'s numbers but is cut from the graph (a value
#   to keep, plot or treat as a constant). Old code writes `t.data` for this. Use `detach()`:
#   every tensor counts its in-place changes (its *version counter*), and autograd checks that
#   the values it saved were not changed since; a change through `detach()` still counts, so it
#   raises an error instead of giving a wrong gradient; through `.data` it goes unnoticed
#   (the cookbook shows both).

# %%
tracked = torch.sigmoid(X_test @ w + b)
with torch.no_grad():
    untracked = torch.sigmoid(X_test @ w + b)
with torch.inference_mode():
    inferred = torch.sigmoid(X_test @ w + b)
cut = tracked.detach()
for name, t in {"tracked": tracked, "no_grad": untracked, "inference_mode": inferred}.items():
    step = t.grad_fn.name() if t.grad_fn else None
    print(f"{name:>14}: requires_grad {t.requires_grad!s:<5}  grad_fn {step}")
print(f"{'detach()':>14}: requires_grad {cut.requires_grad!s:<5}  grad_fn {cut.grad_fn}")
check(
    torch.equal(tracked, untracked) and torch.equal(tracked, inferred),
    "the same probabilities; only the tracked ones carry a graph",
)

# %% [markdown]
# A tensor that requires gradients cannot become a NumPy array (what matplotlib draws from), so
# plotting the weights needs `detach()` first:

# %%
with expect_error(RuntimeError):
    w.numpy()

# %% [markdown]
# Here are the fitted weights as images, one per colour channel. Where a pixel is brighter
# than average, a warm (positive) weight pushes the score towards "automobile" and a cool
# (negative) one towards "airplane".

# %%
weights = w.detach().reshape(3, 32, 32)  # back to the image's shape
limit = weights.abs().max().item()
fig, axes = plt.subplots(1, 3, figsize=(7, 2.6), layout="constrained")
for ax, channel, colour in zip(axes, weights, ["red", "green", "blue"], strict=True):
    shown = ax.imshow(channel.numpy(), cmap="coolwarm", vmin=-limit, vmax=limit)
    ax.set_title(f"{colour} channel", fontsize=10)
    ax.axis("off")
fig.colorbar(shown, ax=axes, shrink=0.9, label="weight")
plt.show()
top_of_blue = weights[2, :4].mean().item()  # the top 4 rows of the blue channel
check(top_of_blue < 0, "the top rows of the blue channel have negative weights, on average")

# %% [markdown]
# The top rows of the blue channel, for example, lean cool: a bright blue top of the image (a
# sky) pushes the score towards "airplane".

# %% [markdown]
# ## Exercises

# %% [markdown]
# ### Exercise 1 · The gradient of a squared error
#
# A squared-error loss fits a line: $L(v) = \frac{1}{N} \sum_i (x_i \cdot v - y_i)^2$ for the
# rows $x_i$ of `X_small`. Compute `sq_loss` from `v`, fill `v.grad` with autograd, and compute
# the same gradient in `by_formula` from the formula
# $\partial L / \partial v = \frac{2}{N} X^\top (X v - y)$.
#
# <details><summary>Hint 1</summary>
#
# `sq_loss` is built like `bce` above: an elementwise expression, then its mean. One method call
# on it fills `v.grad`. If you run your cell twice, reset `v.grad` first.
# </details>
#
# <details><summary>Hint 2</summary>
#
# The section "`backward()` fills `.grad`" turned the logistic loss's gradient formula into
# code. This formula has the same form, with another vector of one number per row, and a
# factor 2.
# </details>

# %%
X_small = X_train[4996:5004, :3]  # 4 airplanes and 4 automobiles, 3 features each
y_small = y_train[4996:5004]
v = torch.tensor([0.5, -1.0, 2.0], requires_grad=True)
sq_loss = ...  # the mean squared error of X_small @ v against y_small
# ...then one line that fills v.grad
by_formula = ...  # the same gradient from the formula

# %%
lesson03.exercise_1(X_small, y_small, v, sq_loss, by_formula)

# %% [markdown]
# #### Solution

# %% tags=["solution"]
# Solution: open it once you have tried. It uses its own names, so your answer stays as it is.
solution_v = v.detach().clone().requires_grad_()  # a new leaf: your v.grad stays as it is
solution_loss = ((X_small @ solution_v - y_small) ** 2).mean()
solution_loss.backward()
solution_by_formula = 2 * X_small.T @ (X_small @ solution_v.detach() - y_small) / len(X_small)
lesson03.exercise_1(X_small, y_small, solution_v, solution_loss, solution_by_formula)


# %% [markdown]
# ### Exercise 2 · The update step as a function
#
# Write `sgd_step(params, lr)`: for each tensor in the list `params`, move it by `lr` times its
# gradient, against the gradient, then reset its gradient. The tensors must stay the same leaf
# tensors (the loop above keeps using them). The check runs your function on a small model of
# its own.
#
# <details><summary>Hint 1</summary>
#
# Two things from the section "One step by hand": where the update must run so that autograd
# allows it and does not record it, and how a gradient is reset.
# </details>
#
# <details><summary>Hint 2</summary>
#
# Do what that section did for `w` and `b`, for every tensor `p` of the list. The tensor
# itself must change: a new tensor bound to the name `p` would leave the parameter as it was.
# </details>

# %%
def sgd_step(params: list[torch.Tensor], lr: float) -> None:
    """Move each tensor in params against its gradient by lr times it; reset its gradient."""
    ...


# %%
lesson03.exercise_2(sgd_step)


# %% [markdown]
# #### Solution

# %% tags=["solution"]
# Solution: open it once you have tried. It uses its own names, so your answer stays as it is.
def solution_sgd_step(solution_params: list[torch.Tensor], solution_lr: float) -> None:
    with torch.no_grad():
        for solution_p in solution_params:
            solution_p -= solution_lr * solution_p.grad
            solution_p.grad = None


lesson03.exercise_2(solution_sgd_step)

# %% [markdown]
# ## Summary
#
# - Logistic regression scores an image with `X @ w + b` and turns the logit into a probability
#   with the sigmoid; the binary cross-entropy, written stably with softplus, measures how wrong
#   it is.
# - Tensors created with `requires_grad=True` are leaves; operations on them record a graph of
#   `grad_fn` nodes, and `backward()` walks it back to fill each leaf's `.grad` (checked here
#   against the formula).
# - Update parameters in place under `torch.no_grad()`, so they stay leaves; gradients
#   accumulate, so reset them (`.grad = None`) before each backward pass.
# - Evaluate under `no_grad()` or `inference_mode()`; use `detach()` (not `.data`) for a value
#   cut from the graph, and `.item()` for a Python number.
#
# Next: [04 · nn.Module: the CNN as a module](04_modules.ipynb), where `nn.Linear` holds `w` and
# `b` for you and a convolutional network replaces the pixel weights.
