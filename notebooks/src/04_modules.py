# %% [markdown]
# # 04 · nn.Module: the CNN as a module
#
# [![Open In Colab](https://colab.research.google.com/assets/colab-badge.svg)](https://colab.research.google.com/github/pytorch-cookbook/pytorch-cookbook/blob/main/notebooks/04_modules.ipynb)
#
# This lesson writes the course's convolutional network for CIFAR2 as an `nn.Module`: the
# layers it is made of, what each does to a batch of images, and how a module keeps, counts,
# switches and saves its parameters. Training it comes in lesson 07.
#
# **You will be able to:**
# - Write a model as an `nn.Module` class with `__init__` and `forward`, and list and count its
#   parameters.
# - Say what `Conv2d`, `BatchNorm2d`, `ReLU` and `MaxPool2d` do to a batch's shape.
# - Choose between a layer module and its `nn.functional` counterpart.
# - Switch a model between `train()` and `eval()`, and explain why batch norm's outputs differ.
# - Save a model's `state_dict` and load it into a fresh model.
#
# **Before you start:** a tensor's shape, dtype, `reshape`, `permute` and broadcasting
# ([01](01_tensors.ipynb)); leaf tensors, `requires_grad`, `torch.no_grad()`, the transpose
# `.T` and the classifier `X @ w + b` ([03](03_autograd.ipynb)).
# Python: classes, `super()` and `__call__` ([00](00_python.ipynb#Classes:-__init__,-__call__-and-super)); paths with `pathlib` ([00](00_python.ipynb#Type-hints,-paths,-zip-and-one-line-loops)).
#
# **Cookbook:** [04 · nn.Module and nn.functional: recipes](cookbook/04_modules_recipes.ipynb)
# holds every recipe of this chapter (three ways to build a model, `ModuleList` and buffers,
# freezing and parameter groups, initialisation, weight tying, loading checkpoints that do not
# fit, forward hooks, fine-tuning a pretrained backbone), for when you need one.
#
# **Study time:** about 75 min: 1,946 words of text at 120 a minute, 214 lines of code at 10 a minute, 19 code cells to run at 1 minute each (reading what they print), 2 exercises at 10 minutes each.
#
# **Run time:** about 5 s on a 2-core CPU · GPU optional.

# %%
import sys

if (
    "google.colab" in sys.modules
):  # Colab: install the course's helpers and what the notebooks import
    import subprocess

    spec = "pytorch-cookbook[notebooks] @ git+https://github.com/pytorch-cookbook/pytorch-cookbook"
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", spec], check=True)

from pathlib import Path

import matplotlib.pyplot as plt
import torch
import torch.nn.functional as F
from torch import nn

from helpers.check import check
from helpers.diagrams.layers import draw_layers
from helpers.env import setup
from helpers.exercises import lesson04
from helpers.images import channel_stats, load_cifar2
from helpers.models import small_cnn

device = setup(seed=0)

# %% [markdown]
# ## From a hand-made `w` and `b` to `nn.Linear`
#
# In lesson 03 the classifier was two tensors, `w` and `b`, created with `requires_grad=True`,
# and the loop had to name each of them to update it and reset its gradient. A real network
# has dozens of such tensors. `nn.Module` keeps track of them for you. `nn.Linear` is the
# module for `X @ w + b`:

# %%
images, labels, classes = load_cifar2("train")
names = [c.split("_", 1)[1] for c in classes]  # "0_airplane" -> "airplane"
X = images[:8].reshape(8, -1).float() / 255  # 8 images as rows of 3,072 features, as in 03
linear = nn.Linear(3072, 1)  # 3,072 inputs, 1 output: one logit per image
for name, param in linear.named_parameters():
    print(f"{name}: shape {tuple(param.shape)}, requires_grad {param.requires_grad}")
print("parameters in total:", sum(p.numel() for p in linear.parameters()))  # numel: values in p
print("output:", tuple(linear(X).shape))
check(
    torch.allclose(linear(X), X @ linear.weight.T + linear.bias),
    "linear(X) computes X @ weight.T + bias",
)


# %% [markdown]
# The weight is stored as (outputs, inputs), here (1, 3072), hence the `.T`. Unlike 03's
# zeros, the weights start random, small and different: a network of many layers needs that
# (lesson 07 trains one). `parameters()` and `named_parameters()` list every trainable tensor
# of a module, so a training loop never has to name them one by one.
#
# Where does the module find them? Any `nn.Parameter` (a tensor that is a leaf and requires
# gradients) or module that you assign to an attribute of a module is **registered**. Here is
# 03's classifier as a module of our own: a class with `__init__`, which creates the
# parameters, and `forward`, which computes the output. Calling `model(X)` runs `forward`.

# %%
class LogisticRegression(nn.Module):
    def __init__(self, n_features: int):
        super().__init__()  # first: it sets up the registry
        self.w = nn.Parameter(torch.zeros(n_features))
        self.b = nn.Parameter(torch.zeros(()))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x @ self.w + self.b


model = LogisticRegression(3072)
print("registered:", [(name, tuple(p.shape)) for name, p in model.named_parameters()])
print("output:", tuple(model(X).shape), "| w is a leaf:", model.w.is_leaf)
check(len(list(model.parameters())) == 2, "the module found its two parameters by itself")

# %% [markdown]
# ## Layers, and what each does to a batch's shape
#
# A convolutional network reads an image as a grid, not as a row of 3,072 numbers. Its first
# block uses four layers. We follow a batch of 8 CIFAR2 images through them. First the input:
# floats, standardised per colour channel with the training set's statistics (a broadcast,
# lesson 01).

# %%
mean, std = channel_stats(images)  # per channel, on the [0, 1] scale
picks = [0, 1, 2, 3, 5000, 5001, 5002, 5003]  # 4 airplanes, 4 automobiles
batch = images[picks]
mean_3d = torch.tensor(mean).reshape(1, 3, 1, 1)  # broadcast over images, rows, columns
std_3d = torch.tensor(std).reshape(1, 3, 1, 1)
x = (batch.float() / 255 - mean_3d) / std_3d
print("batch:", tuple(x.shape), "(images, channels, height, width)")

# %% [markdown]
# - `nn.Conv2d(3, 16, kernel_size=3, padding=1)` slides 16 small filters over the image. Each
#   filter holds 3 × 3 weights per input channel and computes, at every position, a weighted
#   sum of the 3 × 3 neighbourhood in all 3 channels: one output **feature map** per filter.
#   `padding=1` adds a border of zeros so that the maps stay 32 × 32.
# - `nn.BatchNorm2d(16)` standardises each channel over the batch and all positions, then
#   scales and shifts it by two learned numbers per channel. The shape does not change.
# - `nn.ReLU()` replaces every negative number by 0. The shape does not change.
# - `nn.MaxPool2d(2)` keeps the largest value of each 2 × 2 square: height and width halve.

# %%
conv = nn.Conv2d(3, 16, kernel_size=3, padding=1)
norm = nn.BatchNorm2d(16)
relu = nn.ReLU()
pool = nn.MaxPool2d(2)
outputs = {}
h = x
print(f"{'input':<10} {tuple(h.shape)}")
with torch.no_grad():  # we only look: no gradients needed (03)
    for name, layer in {"conv": conv, "norm": norm, "relu": relu, "pool": pool}.items():
        h = layer(h)
        outputs[name] = h
        print(f"{name:<10} {tuple(h.shape)}")
channel_mean = outputs["norm"].mean(dim=(0, 2, 3))  # over images, rows and columns
channel_std = outputs["norm"].std(dim=(0, 2, 3))
check(
    channel_mean.abs().max() < 1e-4 and (channel_std - 1).abs().max() < 1e-2,
    "after batch norm, every channel of the batch has mean 0 and standard deviation 1",
)
check(outputs["relu"].min() >= 0, "after ReLU nothing is negative")

# %% [markdown]
# Here is one image and the 16 feature maps the convolution made of it. The filters are
# random, since nothing is trained yet, and still each map picks out something different:
# compare where the car's red body and its edges come out bright or dark.

# %%
one = 5  # the sixth image of the batch, an automobile
fig = plt.figure(figsize=(6.8, 2.3), layout="constrained")
grid = fig.add_gridspec(2, 10)
ax = fig.add_subplot(grid[:, :2])
ax.imshow(batch[one].permute(1, 2, 0).numpy())  # (H, W, C) for matplotlib
ax.set_title(names[labels[picks[one]]], fontsize=10)
ax.axis("off")
for c in range(16):
    ax = fig.add_subplot(grid[c // 8, 2 + c % 8])
    ax.imshow(outputs["conv"][one, c].numpy(), cmap="gray")
    ax.set_title(str(c), fontsize=9)
    ax.axis("off")
plt.show()


# %% [markdown]
# ## The CNN as a class
#
# The course's CNN repeats that block four times, each with twice the channels of the one
# before: 16, 32, 64, then 128 maps that are 32, 16, 8 and 4 pixels wide. The last block ends in
# `nn.AdaptiveMaxPool2d(1)`, which keeps the largest value of each whole map, so every image
# becomes 128 numbers. A `Linear` layer turns them into 2 logits, one per class. (03's single
# logit was the score for "automobile"; one logit per class is the form that works for any number of
# classes, and lesson 06 shows the loss that reads it, cross-entropy.)
#
# `nn.Sequential(a, b, c)` is a module that applies its modules in order: it names a block
# without writing a class for it. Two more details:
#
# - The convolutions have no bias (`bias=False`): the batch norm right after them subtracts the
#   mean anyway, and adds its own shift.
# - The model takes the raw `uint8` images and standardises them itself, with the channel
#   statistics stored as **buffers**: `register_buffer` makes a tensor part of the module (it
#   moves with `.to(device)` and is saved with the weights) without making it a parameter.

# %%
def conv_bn_relu(c_in: int, c_out: int) -> nn.Sequential:
    """3×3 convolution (size kept), batch norm, ReLU."""
    return nn.Sequential(
        nn.Conv2d(c_in, c_out, 3, padding=1, bias=False), nn.BatchNorm2d(c_out), nn.ReLU()
    )


class CIFAR2Net(nn.Module):
    def __init__(self, mean: list[float], std: list[float], width: int = 16, classes: int = 2):
        super().__init__()
        self.register_buffer("mean", torch.tensor(mean).reshape(1, 3, 1, 1))
        self.register_buffer("std", torch.tensor(std).reshape(1, 3, 1, 1))
        self.features = nn.Sequential(
            conv_bn_relu(3, width),
            nn.MaxPool2d(2),
            conv_bn_relu(width, 2 * width),
            nn.MaxPool2d(2),
            conv_bn_relu(2 * width, 4 * width),
            nn.MaxPool2d(2),
            conv_bn_relu(4 * width, 8 * width),
            nn.AdaptiveMaxPool2d(1),
        )
        self.head = nn.Linear(8 * width, classes)

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        x = (images.float() / 255 - self.mean) / self.std
        x = self.features(x)  # (N, 128, 1, 1)
        return self.head(x.flatten(1))  # (N, 128, 1, 1) -> (N, 128) -> (N, 2)


model = CIFAR2Net(mean, std)
print(model.features[0])  # the first block

# %% [markdown]
# `x.flatten(1)` merges every dimension from dimension 1 on into one, so each image's
# (128, 1, 1) numbers become a row of 128: the input `Linear` expects. Printing a module shows
# its tree of sub-modules, each with its settings. Each sub-module has a name, the attribute
# or the position in its `Sequential`, and a parameter's full name joins them with dots. Here
# is every parameter with its count:

# %%
print(f"{'parameter':<24} {'shape':<16} {'count':>6}")
for name, param in model.named_parameters():
    print(f"{name:<24} {tuple(param.shape)!s:<16} {param.numel():>6,}")
n_params = sum(p.numel() for p in model.parameters())
print(f"{'total':<41} {n_params:>6,}")
print("buffers:", [name for name, _ in model.named_buffers()][:3], "...")

# %% [markdown]
# Almost all of the 97,938 parameters sit in the convolutions, most in the last one
# (64 × 128 × 3 × 3 = 73,728). Batch norm adds only two per channel; its running statistics are
# buffers (next sections).
#
# The course has a finished version of this network, `helpers.models.small_cnn`, which later
# lessons train. It is one `nn.Sequential`, and it does the standardising with two layers from
# torchvision (PyTorch's library for images) instead of buffers: `ToDtype` turns the bytes into floats in [0, 1], `Normalize`
# standardises each channel. It should be the same network: the same parameter shapes in the
# same order, and with the same weights, the same outputs.

# %%
finished = small_cnn(mean, std, width=16)
same_shapes = [p.shape for p in model.parameters()] == [p.shape for p in finished.parameters()]
print("parameters: ours", n_params, "| small_cnn", sum(p.numel() for p in finished.parameters()))
with torch.no_grad():
    for ours, theirs in zip(model.parameters(), finished.parameters(), strict=True):
        ours.copy_(theirs)  # copy the values into our parameters, in place
    same_outputs = torch.allclose(model(batch), finished(batch), atol=1e-5)
check(same_shapes and same_outputs, "CIFAR2Net is small_cnn: same parameters, same outputs")

# %% [markdown]
# A `Sequential` is indexed like a list, so later lessons reach into `small_cnn` by position:
# `finished[2][1]` is the batch norm of its first block, `finished[-1]` its last layer. Here are
# its layers with their indices, and the shape of our batch of 8 after each:

# %%
draw_layers(finished, batch, title="small_cnn, layer by layer")
plt.show()
print(
    "finished[2][1]:", type(finished[2][1]).__name__, "| finished[-1]:", type(finished[-1]).__name__
)
# modules() lists every sub-module, nested ones included, in order
norms = [m for m in finished.modules() if isinstance(m, nn.BatchNorm2d)]
check(finished[2][1] is norms[0], "finished[2][1] is the first batch norm")

# %% [markdown]
# Height and width shrink, 32 → 16 → 8 → 4 → 1, while the channels grow, 16 → 128: each block
# trades resolution for more kinds of features.

# %% [markdown]
# ## Modules or `nn.functional`
#
# Most layers have a function twin in `torch.nn.functional` (imported as `F`): `F.relu`,
# `F.max_pool2d`, `F.conv2d`, `F.batch_norm`. The module holds its parameters (and, for batch
# norm, its statistics and its mode) and calls the function for you, so both give the same
# numbers:

# %%
with torch.no_grad():
    by_function = F.conv2d(x, conv.weight, conv.bias, padding=1)
    same = torch.equal(conv(x), by_function)
    print("conv(x) equals F.conv2d(x, conv.weight, conv.bias, padding=1):", same)
    print("relu(x) equals F.relu(x):", torch.equal(relu(x), F.relu(x)))

# %% [markdown]
# The difference is state. A function keeps nothing between calls; you pass it everything,
# weights included. The batch norm module keeps running statistics and counts the batches it
# has seen (`norm` counted one already, in the section on layers). Both standardise the same
# batch the same way, but only the module remembers it:

# %%
h = by_function  # the convolution's output, (8, 16, 32, 32)
seen = norm.num_batches_tracked.item()
running_mean = norm.running_mean.clone()
with torch.no_grad():
    # None, None: no running mean and variance (std squared) to keep; weight, bias: scale, shift
    functional = F.batch_norm(h, None, None, norm.weight, norm.bias, training=True)
    print("batches counted by norm: before", seen, end="")
    print(" | after F.batch_norm", norm.num_batches_tracked.item(), end="")
    module = norm(h)
    print(" | after norm(h)", norm.num_batches_tracked.item())
check(
    torch.allclose(functional, module, atol=1e-5)
    and norm.num_batches_tracked.item() == seen + 1
    and not torch.equal(norm.running_mean, running_mean),
    "same output; only the module updated its running statistics",
)

# %% [markdown]
# The rule of thumb: use a module for anything that holds parameters or state (`Conv2d`,
# `Linear`, `BatchNorm2d`), so that the model registers it. For operations without state,
# either is fine: `nn.ReLU()` fits in an `nn.Sequential`, `F.relu(x)` reads well inside
# `forward`. Lesson 03's `F.softplus` was such a function.

# %% [markdown]
# ## `train()` and `eval()`: batch norm changes what it computes
#
# Every module has a mode, `model.training`, `True` when it is created. `model.eval()` sets it
# to `False` in every sub-module, `model.train()` back to `True`. Most layers ignore it. Batch
# norm does not:
#
# - in **training** mode it standardises with the mean and variance of the **current batch**,
#   and updates its **running** mean and variance (buffers that follow the batches' values);
# - in **evaluation** mode it uses the running statistics, and changes nothing.
#
# So in training mode an image's output depends on the other images in its batch. Below, the
# same airplane goes into two batches: once with 15 other airplanes, once with 15 automobiles.

# %%
net = CIFAR2Net(mean, std)  # a fresh model, in training mode
with_airplanes = images[0:16]  # the training images are sorted by class
with_automobiles = torch.cat([images[0:1], images[5000:5015]])
bn = net.features[0][1]  # the first batch norm layer
mode = "train" if net.training else "eval"
print("mode:", mode, "| batches seen:", bn.num_batches_tracked.item())


def rounded(logits: torch.Tensor) -> list[float]:
    return [round(v, 2) for v in logits.tolist()]


with torch.no_grad():
    train_a, train_b = net(with_airplanes)[0], net(with_automobiles)[0]
    print("train mode, the airplane's two logits")
    print("  with airplanes:  ", rounded(train_a))
    print("  with automobiles:", rounded(train_b))
    print("batches seen:", bn.num_batches_tracked.item())
    net.eval()
    eval_a, eval_b = net(with_airplanes)[0], net(with_automobiles)[0]
    print("eval mode, the airplane's two logits")
    print("  with airplanes:  ", rounded(eval_a))
    print("  with automobiles:", rounded(eval_b))
print("batches seen after eval:", bn.num_batches_tracked.item())
check(
    not torch.allclose(train_a, train_b, atol=1e-3) and torch.allclose(eval_a, eval_b, atol=1e-5),
    "in train mode the output depends on the rest of the batch; in eval mode it does not",
)

# %% [markdown]
# Why are the eval-mode logits so small? The running statistics have seen only two batches:
# they are still near their starting values, mean 0 and variance 1. The untrained convolutions'
# outputs vary much less than that, so dividing by the running standard deviation shrinks them,
# block after block. Training fixes this: the running statistics follow the batches.

# %%
standardised = (with_airplanes.float() / 255 - net.mean) / net.std
with torch.no_grad():
    batch_var = net.features[0][0](standardised).var(dim=(0, 2, 3)).mean()
print("first batch norm, means over its channels:")
print(f"  running variance {bn.running_var.mean():.2f}")
print(f"  variance of its input in a batch {batch_var:.2f}")
check(
    bn.running_var.mean() > 2 * batch_var and eval_a.abs().max() < train_a.abs().max() / 2,
    "the running variance is still far above the batch's: eval mode shrinks the logits",
)

# %% [markdown]
# Call `model.eval()` before evaluating or predicting, and `model.train()` before training
# (lesson 07 does both in its loop). `eval()` does not stop gradient tracking: for evaluation
# use it together with `torch.no_grad()` or `torch.inference_mode()` (03).

# %% [markdown]
# ## Save and load with `state_dict`
#
# `model.state_dict()` is a dictionary from each parameter's and buffer's name to its tensor:
# everything needed to rebuild the model's numbers, but not its code. Save it with `torch.save`;
# to load, build the model from its class and pour the numbers in with `load_state_dict`.

# %%
state = net.state_dict()
print("entries:", len(state), "| parameters:", len(list(net.parameters())))
print("the first keys:", list(state)[:4])
print("running statistics:", [k for k in state if "running" in k][:2])
Path("runs").mkdir(exist_ok=True)
torch.save(state, "runs/04_cifar2net.pt")
fresh = CIFAR2Net(mean, std).eval()  # new random weights
with torch.no_grad():
    differ_before = not torch.allclose(fresh(batch), net(batch))
    fresh.load_state_dict(torch.load("runs/04_cifar2net.pt", weights_only=True))
    same_after = torch.equal(fresh(batch), net(batch))
print("differ before loading:", differ_before, "| same after:", same_after)
check(
    differ_before
    and same_after
    and torch.equal(fresh.features[0][1].running_mean, bn.running_mean),
    "the loaded model gives the same outputs; batch norm's running statistics came along",
)

# %% [markdown]
# `weights_only=True` makes `torch.load` read tensors and plain containers only: the safe way,
# and the default since PyTorch 2.6. Old code saves the whole model with
# `torch.save(model, path)`. That file (a Python pickle, Python's format for saving any object)
# does not hold the model's code: it
# names the class by module and name, and loading imports it from there. So it fails if the
# class has moved, and silently picks up any edits made to it since. Worse, unpickling can call
# any importable function that a crafted file names. Loading it needs `weights_only=False`:
# only for files you trust. Save the `state_dict` instead.

# %% [markdown]
# ## Exercises

# %% [markdown]
# ### Exercise 1 · Count parameters by hand
#
# Without calling `parameters()`, work out how many parameters three layers of the CNN hold:
# `conv_count` for its third convolution, `nn.Conv2d(32, 64, 3, padding=1, bias=False)`;
# `bn_count` for the `nn.BatchNorm2d(64)` after it; and `head_count` for the head,
# `nn.Linear(128, 2)`. Compare with the table printed in "The CNN as a class".
#
# <details><summary>Hint 1</summary>
#
# A convolution has one 3 × 3 filter per pair of (output channel, input channel). Batch norm
# learns a scale and a shift per channel.
# </details>
#
# <details><summary>Hint 2</summary>
#
# For the convolution multiply four numbers: output channels, input channels, and the kernel's
# height and width. `nn.Linear(128, 2)` holds a weight of shape (2, 128) and one bias per
# output.
# </details>

# %%
conv_count = ...  # nn.Conv2d(32, 64, 3, padding=1, bias=False)
bn_count = ...  # nn.BatchNorm2d(64)
head_count = ...  # nn.Linear(128, 2)

# %%
lesson04.exercise_1(conv_count, bn_count, head_count)

# %% [markdown]
# #### Solution

# %% tags=["solution"]
# Solution: open it once you have tried. It uses its own names, so your answer stays as it is.
solution_conv_count = 64 * 32 * 3 * 3
solution_bn_count = 2 * 64
solution_head_count = 2 * 128 + 2
lesson04.exercise_1(solution_conv_count, solution_bn_count, solution_head_count)


# %% [markdown]
# ### Exercise 2 · A block as a module
#
# Write `ConvBlock(c_in, c_out)` as a class: a 3 × 3 convolution from `c_in` to `c_out`
# channels that keeps the height and width and has no bias, then batch norm, ReLU and a 2 × 2
# max pool. The check builds `ConvBlock(3, 8)`, counts its parameters and runs a batch of shape
# (4, 3, 32, 32) through it.
#
# <details><summary>Hint 1</summary>
#
# `__init__` creates the layers and assigns them to attributes of `self` (one attribute per
# layer, or one `nn.Sequential`); `forward` applies them in order and returns the result.
# </details>
#
# <details><summary>Hint 2</summary>
#
# The section "The CNN as a class" builds the first three of those layers in `conv_bn_relu`,
# and `CIFAR2Net` follows each such block with a max pool over 2 × 2 squares.
# </details>

# %%
class ConvBlock(nn.Module):
    def __init__(self, c_in: int, c_out: int):
        super().__init__()
        ...  # the layers, as attributes of self

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return ...  # x through the layers, in order


# %%
lesson04.exercise_2(ConvBlock)


# %% [markdown]
# #### Solution

# %% tags=["solution"]
# Solution: open it once you have tried. It uses its own names, so your answer stays as it is.
class solution_ConvBlock(nn.Module):
    def __init__(self, c_in: int, c_out: int):
        super().__init__()
        self.conv = nn.Conv2d(c_in, c_out, 3, padding=1, bias=False)
        self.norm = nn.BatchNorm2d(c_out)
        self.pool = nn.MaxPool2d(2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.pool(F.relu(self.norm(self.conv(x))))


lesson04.exercise_2(solution_ConvBlock)

# %% [markdown]
# ## Summary
#
# - An `nn.Module` registers every `nn.Parameter` and sub-module assigned to it in `__init__`;
#   `forward` computes the output, and `parameters()` and `named_parameters()` list and count
#   what it holds.
# - `Conv2d` (with padding) keeps height and width and sets the channels, `BatchNorm2d` and
#   `ReLU` keep the shape, `MaxPool2d(2)` halves height and width; `nn.Sequential` chains
#   layers into a block.
# - Use modules for layers with parameters or state, and `nn.functional` or modules alike for
#   stateless operations.
# - `train()` and `eval()` switch what batch norm computes: batch statistics in training,
#   running statistics in evaluation. Evaluate with `eval()` and `no_grad()`.
# - Save `model.state_dict()`; load with `load_state_dict(torch.load(path, weights_only=True))`
#   into a model built from the same class.
#
# Next: [05 · Dataset and DataLoader: feeding the CNN](05_datasets_dataloaders.ipynb), which
# serves this CNN its batches of CIFAR2.
