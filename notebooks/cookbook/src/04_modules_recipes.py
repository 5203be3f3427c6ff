# %% [markdown]
# # 04 · nn.Module and nn.functional: recipes
#
# [![Open In Colab](https://colab.research.google.com/assets/colab-badge.svg)](https://colab.research.google.com/github/pytorch-cookbook/pytorch-cookbook/blob/main/notebooks/cookbook/04_modules_recipes.ipynb)
#
# **The cookbook of chapter 04.** New to the topic? [The lesson](../04_modules.ipynb) teaches it
# step by step on the course's running example. Here each recipe answers one task; the
# [recipe index](../RECIPES.md) and the [error index](../ERRORS.md) find the one you need.
#
# `nn.Module` is how PyTorch packages parameters, buffers and the computation that uses them.
# After this notebook you can choose between `nn.Xxx` layers and `F.xxx` functions, build models
# three ways without losing parameters, walk and count what a model holds, freeze parts of it and
# give parts different learning rates, keep state in buffers, initialise, copy, snapshot and load
# weights (also from DDP checkpoints and with mismatched heads), pull intermediate features out of
# a torchvision model, and fine-tune a pretrained backbone with a new head on CIFAR2.
#
# **Prerequisites:** [01](../01_tensors.ipynb), [03](../03_autograd.ipynb). The last recipe fetches
# CIFAR2 (as in [05](../05_datasets_dataloaders.ipynb)).
#
# **Run time:** about 15 s on a 2-core CPU · GPU optional.

# %%
import sys

if (
    "google.colab" in sys.modules
):  # Colab: install the course's helpers and what the notebooks import
    import subprocess

    spec = "pytorch-cookbook[notebooks] @ git+https://github.com/pytorch-cookbook/pytorch-cookbook"
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", spec], check=True)

import copy
import io
from collections import OrderedDict
from itertools import pairwise
from pathlib import Path
from unittest import mock

import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

from helpers.check import check, expect_error
from helpers.env import setup
from helpers.exercises import ch04
from helpers.images import channel_stats, load_cifar2
from helpers.models import small_cnn

device = setup(seed=0)
torch.set_printoptions(precision=4, sci_mode=False)

# %% [markdown]
# ## Choose between `nn.Xxx` modules and `F.xxx` functions
#
# `nn.Linear`, `nn.Conv2d`, `nn.BatchNorm2d` and `nn.Dropout` are modules: objects that hold
# parameters, buffers or a train/eval state. `F.linear`, `F.conv2d`, `F.relu` are plain functions
# of their inputs. Use a module for anything with parameters or state; either for stateless
# operations (`nn.ReLU()` in a `Sequential`, `F.relu` inside `forward`).

# %%
layer = nn.Linear(3, 2)
x = torch.randn(4, 3)
print("layer(x) equals F.linear:", torch.equal(layer(x), F.linear(x, layer.weight, layer.bias)))
print("module holds:", [name for name, _ in layer.named_parameters()])


# %% [markdown]
# ### Pitfall: `F.dropout` ignores `model.eval()`
#
# `F.dropout(x, p)` defaults to `training=True`: it keeps dropping in evaluation unless you pass
# the module's own flag.

# %%
class Leaky(nn.Module):
    def forward(self, x):
        return F.dropout(x, p=0.5)  # bug: always in training mode


class Fixed(nn.Module):
    def forward(self, x):
        return F.dropout(x, p=0.5, training=self.training)


ones = torch.ones(1, 8)
print("eval, F.dropout(x, p):          ", Leaky().eval()(ones))
print("eval, training=self.training:   ", Fixed().eval()(ones))
print("eval, nn.Dropout (no such bug): ", nn.Dropout(0.5).eval()(ones))


# %% [markdown]
# ## Write a `Linear` layer from scratch with `nn.Parameter`
#
# Assigning an `nn.Parameter` to a module attribute registers it: it appears in `parameters()`,
# moves with `.to()`, and is saved in `state_dict()`. `nn.Linear` computes $xW^\top + b$.

# %%
class MyLinear(nn.Module):
    def __init__(self, in_features: int, out_features: int):
        super().__init__()
        self.weight = nn.Parameter(torch.empty(out_features, in_features))
        self.bias = nn.Parameter(torch.zeros(out_features))
        nn.init.kaiming_uniform_(self.weight, a=5**0.5)  # nn.Linear's weight initialisation

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x @ self.weight.T + self.bias


mine, reference = MyLinear(3, 2), nn.Linear(3, 2)
mine.load_state_dict(reference.state_dict())  # same names, same shapes: same weights
print(list(mine.state_dict()))
check(torch.allclose(mine(x), reference(x)), "MyLinear matches nn.Linear given the same weights")


# %% [markdown]
# `nn.ParameterList` and `nn.ParameterDict` register a variable number of parameters
# (`ParameterDict` built from a plain dict sorts its keys; pass an `OrderedDict` to keep yours):

# %%
class Mixture(nn.Module):
    def __init__(self, n: int):
        super().__init__()
        self.scales = nn.ParameterList([nn.Parameter(torch.ones(1)) for _ in range(n)])
        self.offsets = nn.ParameterDict(
            {"low": nn.Parameter(torch.zeros(1)), "high": nn.Parameter(torch.ones(1))}
        )


print([name for name, _ in Mixture(2).named_parameters()])

# %% [markdown]
# ## Build a model three ways
#
# `nn.Sequential` for a straight pipe (names from an `OrderedDict` or `add_module`), a subclass
# with `forward` for anything else, and `nn.ModuleList`/`nn.ModuleDict` for a variable number of
# layers inside a subclass.

# %%
seq = nn.Sequential(OrderedDict([("hidden", nn.Linear(4, 8)), ("act", nn.ReLU())]))
seq.add_module("out", nn.Linear(8, 2))


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.hidden = nn.Linear(4, 8)
        self.out = nn.Linear(8, 2)

    def forward(self, x):
        return self.out(F.relu(self.hidden(x)))


class Stack(nn.Module):
    def __init__(self, sizes: list[int]):
        super().__init__()
        self.layers = nn.ModuleList(nn.Linear(a, b) for a, b in pairwise(sizes))
        self.heads = nn.ModuleDict({"class": nn.Linear(sizes[-1], 2)})

    def forward(self, x):
        for layer in self.layers:
            x = F.relu(layer(x))
        return self.heads["class"](x)


inputs = torch.randn(5, 4)
for model in (seq, Net(), Stack([4, 8])):
    n = sum(p.numel() for p in model.parameters())
    print(f"{type(model).__name__:<10} output {tuple(model(inputs).shape)}, {n} parameters")


# %% [markdown]
# ### Pitfall: a plain Python list hides its layers
#
# Layers in a plain `list` are not registered: they have no parameters as far as the model, its
# optimizer, `.to()` and `state_dict()` know. Nothing raises; the layers simply never train.

# %%
class Broken(nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = [nn.Linear(4, 8), nn.Linear(8, 2)]  # plain list

    def forward(self, x):
        return self.layers[1](self.layers[0](x))


broken = Broken()
print("forward works:", tuple(broken(inputs).shape))
print("parameters the optimizer would see:", len(list(broken.parameters())))
print("state_dict keys:", list(broken.state_dict()))

# %% [markdown]
# ## Walk a model and count its parameters
#
# `children()` gives the direct sub-modules, `modules()` every module recursively (the model
# first); the `named_` versions add dotted names. Buffers are state that is saved but not trained,
# like batch norm's running statistics.

# %%
cnn = nn.Sequential(
    nn.Conv2d(3, 8, 3, padding=1),
    nn.BatchNorm2d(8),
    nn.ReLU(),
    nn.MaxPool2d(2),
    nn.Flatten(),
    nn.Linear(8 * 16 * 16, 2),
)
print("children:", [type(m).__name__ for m in cnn.children()])
print("named_modules:", [name or "(root)" for name, _ in cnn.named_modules()])
print("named_parameters:", [(n, tuple(p.shape)) for n, p in cnn.named_parameters()])
print("buffers:", [n for n, _ in cnn.named_buffers()])


def count(model: nn.Module) -> tuple[int, int]:
    """Return (total, trainable) parameter counts."""
    total = sum(p.numel() for p in model.parameters())
    return total, sum(p.numel() for p in model.parameters() if p.requires_grad)


print("total, trainable:", count(cnn))

# %% [markdown]
# For a readable per-layer table with output shapes, use a library rather than hand-written code.
# `torchinfo.summary` runs a forward pass on an input of the size you give:

# %%
from torchinfo import summary

summary(cnn, input_size=(1, 3, 32, 32), col_names=("output_size", "num_params"), verbose=0)

# %% [markdown]
# Read `Total mult-adds (Units.MEGABYTES): 0.23` as **0.23 million multiply-adds** per forward
# pass of the input size given: torchinfo prints its unit's enum name, but the number counts
# operations, not bytes. torchinfo's rule (as of torchinfo 1.8): a **convolution's**
# weights and biases count once per output position, so its 8 × 27 weights and 8 biases count at
# each of the 32 × 32 positions; **any other layer's** parameters count once per sample, wherever
# the layer is applied: batch norm's 16 (although it scales all 8 × 32 × 32 values) and the linear
# layer's 2,048 × 2 weights and 2 biases. So the total undercounts layers other than convolutions
# that act at many positions.

# %%
stats = summary(cnn, input_size=(1, 3, 32, 32), verbose=0)
by_hand = (8 * 27 + 8) * 32 * 32 + 16 + (2048 * 2 + 2)
print(f"torchinfo: {stats.total_mult_adds:,} mult-adds | by hand: {by_hand:,}")
check(stats.total_mult_adds == by_hand, "torchinfo's mult-adds 'MEGABYTES' count millions of ops")


# %% [markdown]
# ## Compute a convolution's output size: kernel, stride, padding, dilation
#
# Along each spatial side, `nn.Conv2d` (and `MaxPool2d`, which rounds up instead with
# `ceil_mode=True`) outputs `floor((size + 2·padding − dilation·(kernel − 1) − 1) / stride) + 1`
# (the formula in their docstrings). **Dilation** spreads the kernel's taps apart: the window one
# output sees is `dilation·(kernel − 1) + 1` pixels wide, with the same `kernel²` weights.
# `padding="same"` (stride 1 only) pads so the size is kept.

# %%
def conv_out(size: int, kernel: int, stride: int = 1, padding: int = 0, dilation: int = 1) -> int:
    return (size + 2 * padding - dilation * (kernel - 1) - 1) // stride + 1


image = torch.zeros(1, 1, 32, 32)
settings = [(3, 1, 1, 1), (3, 2, 1, 1), (3, 1, 2, 2), (5, 2, 0, 3), (2, 2, 0, 1)]
measured = {}
for k, s, p, d in settings:
    got = nn.Conv2d(1, 1, k, stride=s, padding=p, dilation=d)(image).shape[-1]
    measured[(k, s, p, d)] = got
    formula, window = conv_out(32, k, s, p, d), d * (k - 1) + 1
    print(f"k={k} stride={s} pad={p} dilation={d}: formula {formula}, conv {got}, window {window}")
print(
    "padding='same', dilation 4:", nn.Conv2d(1, 1, 3, padding="same", dilation=4)(image).shape[-1]
)
check(
    all(got == conv_out(32, *setting) for setting, got in measured.items()),
    "the formula gives Conv2d's output size for every setting",
)

# %% [markdown]
# ### Pitfall: `expected input[...] to have 1 channels, but got 3 channels instead`
#
# A convolution checks the channel dimension, which comes second: `(batch, channels, height,
# width)`. Three causes are common: a layer built for grey images fed colour ones (or the
# reverse), images still in height-width-channel order (NumPy, PIL, OpenCV), and a grey image
# with neither a batch nor a channel dimension. The fixes: the right `in_channels`,
# `permute(0, 3, 1, 2)`, and `image[None, None]`. One colour image `(C, H, W)` raises nothing:
# `Conv2d` takes it as *unbatched* input and returns `(C_out, H', W')`, and the missing batch
# dimension surfaces later (batch norm's "expected 4D input", or `flatten(1)` mixing the
# dimensions), so give it one with `unsqueeze(0)` before the model. (PyTorch 1.10 and older
# refused it at the convolution: `Expected 4-dimensional input for 4-dimensional weight
# [8, 3, 3, 3], but got 3-dimensional input of size [3, 8, 8] instead`, an error from old code.)

# %%
grey_conv = nn.Conv2d(1, 8, 3)  # built for 1 channel
colour = torch.randn(32, 3, 8, 8)
with expect_error(RuntimeError):
    grey_conv(colour)
grey_image = torch.randn(8, 8)  # one grey image, no batch and no channel dimension
with expect_error(RuntimeError):
    grey_conv(grey_image)
colour_conv = nn.Conv2d(3, 8, 3)
channels_last_numpy = torch.randn(32, 8, 8, 3)  # (batch, height, width, channels)
fixed = colour_conv(channels_last_numpy.permute(0, 3, 1, 2))
grey_fixed = grey_conv(grey_image[None, None])  # (8, 8) -> (1, 1, 8, 8)
unbatched = colour_conv(colour[0])  # (3, 8, 8): runs, as one unbatched image
single = colour_conv(colour[0].unsqueeze(0))  # (1, 3, 8, 8): a batch of one
print("fixed:", tuple(fixed.shape), "| grey image:", tuple(grey_fixed.shape))
print("one colour image:", tuple(unbatched.shape), "| with unsqueeze(0):", tuple(single.shape))
check(fixed.shape == (32, 8, 6, 6) and grey_fixed.shape == (1, 8, 6, 6), "both fixes run")
check(
    unbatched.shape == (8, 6, 6) and single.shape == (1, 8, 6, 6),
    "one (C, H, W) image runs unbatched, with no batch dimension out; unsqueeze(0) keeps one",
)


# %% [markdown]
# ## Keep non-trained state with `register_buffer`
#
# A **buffer** is a tensor that belongs to the model but is not trained: batch norm's running
# statistics, a fixed mask, a normalisation constant. `register_buffer(name, tensor)` makes
# `.to()` move it and `state_dict()` save it, because a model restored without it would compute
# something else. `persistent=False` keeps a buffer out of the `state_dict` (derived values that
# are cheap to rebuild). A plain tensor attribute gets neither. Update a buffer under
# `torch.no_grad()`: behind a trainable layer the input carries a graph, and an update with
# autograd on ties the buffer to this step's graph, so the next `backward` fails with
# `Trying to backward through the graph a second time`.

# %%
class Standardise(nn.Module):
    """Subtract a running mean of the inputs seen in training."""

    def __init__(self, features: int):
        super().__init__()
        self.register_buffer("mean", torch.zeros(features))
        self.register_buffer("scale", torch.full((features,), 0.5), persistent=False)  # a constant
        self.plain = torch.zeros(features)  # not registered: not moved, not saved

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.training:
            with torch.no_grad():  # a statistic, not part of the graph
                self.mean.lerp_(x.mean(dim=0), 0.1)
        return (x - self.mean) * self.scale


std_layer = Standardise(3)
std_layer(torch.ones(4, 3))
print("buffers:", [name for name, _ in std_layer.named_buffers()])
print("state_dict:", list(std_layer.state_dict()), "| parameters:", list(std_layer.parameters()))
print("mean after one batch:", [round(m, 4) for m in std_layer.mean.tolist()])
std_layer.to(torch.float64)
print("after .to(float64): mean", std_layer.mean.dtype, "| plain attribute", std_layer.plain.dtype)

# %% [markdown]
# Behind a `Linear`, as in a real model, two training steps run and the buffer stays out of the
# graph:

# %%
stacked = nn.Sequential(nn.Linear(3, 3), Standardise(3), nn.Linear(3, 1))
sgd = torch.optim.SGD(stacked.parameters(), lr=0.1)
for _ in range(2):
    sgd.zero_grad()
    stacked(torch.randn(8, 3)).pow(2).mean().backward()
    sgd.step()
running = stacked[1].mean
check(
    not running.requires_grad and running.grad_fn is None,
    "two training steps run; the running mean is a plain buffer, outside the graph",
)

# %% [markdown]
# ## Freeze layers and give parts different learning rates
#
# Freezing is `requires_grad_(False)`: no gradients are computed, the trainable count drops, and
# an optimizer built from the trainable parameters leaves them alone. Fine-tuning often gives a
# pretrained backbone a small learning rate and a new head a large one, with **parameter groups**.

# %%
backbone, head = cnn[:4], cnn[4:]
backbone.requires_grad_(False)
print("after freezing the backbone, total/trainable:", count(cnn))
backbone.requires_grad_(True)
optimizer = torch.optim.SGD(
    [{"params": backbone.parameters(), "lr": 1e-4}, {"params": head.parameters()}],
    lr=1e-2,
    momentum=0.9,
)
for group in optimizer.param_groups:
    print(f"group of {len(group['params'])} tensors: lr={group['lr']}")

# %% [markdown]
# ### Pitfall: `requires_grad_(False)` does not freeze batch norm's statistics
#
# Freezing stops gradients. Batch norm's running mean and variance are not trained by gradients:
# they are updated by every forward pass in train mode, even under `no_grad()`. A "frozen"
# backbone in train mode drifts; keep frozen batch norm layers in `eval()`.

# %%
frozen = copy.deepcopy(cnn[:2]).requires_grad_(False)  # conv + batch norm, frozen
shifted = torch.randn(4, 3, 32, 32) + 3  # data unlike what the statistics describe
before = frozen[1].running_mean.clone()
with torch.no_grad():
    frozen.train()(shifted)
drifted = not torch.equal(before, frozen[1].running_mean)
before = frozen[1].running_mean.clone()
with torch.no_grad():
    frozen.eval()(shifted)
kept = torch.equal(before, frozen[1].running_mean)
print("train mode changed running_mean:", drifted, "| eval mode kept it:", kept)
check(drifted and kept, "frozen batch norm still updates its statistics unless it is in eval()")

# %% [markdown]
# `model.train()` sets **every** sub-module to train mode, the frozen backbone's batch norm
# included, and a training loop calls it every epoch. Put the frozen part back in `eval()` after
# each `model.train()` (or override the model's `train()` to do it):

# %%
model = nn.Sequential(frozen, nn.Flatten(), nn.Linear(8 * 32 * 32, 2))
frozen.eval()
model.train()  # start of an epoch
print("after model.train(), frozen batch norm is training:", frozen[1].training)
frozen.eval()  # again, after every model.train()
check(
    not frozen[1].training and model[2].training,
    "the frozen part evaluates while the new head trains",
)


# %% [markdown]
# ## Initialise, reset and copy a model
#
# `nn.init` functions (all ending in `_`, in place) set weights; `model.apply(fn)` calls `fn` on
# every sub-module, so one function can initialise a whole model by layer type. Built-in layers
# have `reset_parameters()` to go back to their default initialisation.

# %%
def init_weights(module: nn.Module) -> None:
    if isinstance(module, (nn.Conv2d, nn.Linear)):
        nn.init.kaiming_normal_(module.weight, nonlinearity="relu")
        nn.init.zeros_(module.bias)


cnn.apply(init_weights)
print("biases are zero:", all(m.bias.abs().sum() == 0 for m in cnn if isinstance(m, nn.Linear)))
twin = copy.deepcopy(cnn)  # an independent model with equal weights
print("deepcopy shares no memory:", twin[0].weight.data_ptr() != cnn[0].weight.data_ptr())
cnn[-1].reset_parameters()
print("after reset the copy differs:", not torch.equal(twin[-1].weight, cnn[-1].weight))
cnn.load_state_dict(twin.state_dict())
print("after load_state_dict equal again:", torch.equal(twin[-1].weight, cnn[-1].weight))

# %% [markdown]
# ### Pitfall: a new `nn.Parameter` after the optimizer is built never trains
#
# To set a layer's weights to given values, copy into the existing parameter under
# `torch.no_grad()`. Assigning a new `nn.Parameter` replaces the object the optimizer holds: the
# model now uses a tensor the optimizer never updates, and nothing warns.

# %%
given = torch.full((2, 3), 0.5)
replaced, copied_into = nn.Linear(3, 2), nn.Linear(3, 2)
opt_replaced = torch.optim.SGD(replaced.parameters(), lr=0.1)
opt_copied = torch.optim.SGD(copied_into.parameters(), lr=0.1)
replaced.weight = nn.Parameter(given.clone())  # a new object: opt_replaced holds the old one
with torch.no_grad():
    copied_into.weight.copy_(given)  # the same Parameter, new values
for layer, opt in ((replaced, opt_replaced), (copied_into, opt_copied)):
    layer(torch.ones(4, 3)).sum().backward()
    opt.step()
stepped = [replaced.weight[0, 0].item(), copied_into.weight[0, 0].item()]
print(f"after one step: new Parameter {stepped[0]:.4f} | copy_ {stepped[1]:.4f}")
check(
    replaced.weight[0, 0].item() == 0.5 and copied_into.weight[0, 0].item() != 0.5,
    "the replaced Parameter did not move; the copied-into one did",
)

# %% [markdown]
# ## Share one weight between two layers (weight tying)
#
# Language models often use the embedding matrix as the output layer's weight too. Assign the
# same `Parameter` to both layers: `parameters()` lists it **once** (so an optimizer updates it
# once, with both layers' gradients added), `state_dict()` still holds both names, and
# `copy.deepcopy` keeps the tie in the copy.

# %%
torch.manual_seed(0)
embed = nn.Embedding(10, 4)
out = nn.Linear(4, 10, bias=False)
out.weight = embed.weight  # tied: one tensor, two owners
lm = nn.ModuleDict({"embed": embed, "out": out})
print("parameters():", [name for name, _ in lm.named_parameters()])
print("state_dict():", list(lm.state_dict()))
copied = copy.deepcopy(lm)
check(
    len(list(lm.parameters())) == 1
    and len(lm.state_dict()) == 2
    and copied["embed"].weight is copied["out"].weight,
    "a tied weight is one parameter, two state_dict keys, and stays tied through deepcopy",
)

# %% [markdown]
# ## Know what `state_dict` holds, and load one that does not fit
#
# A `state_dict` maps names to tensors: parameters **and** buffers (batch norm's `running_mean`,
# `running_var`, `num_batches_tracked`). `load_state_dict(strict=False)` loads the keys that match
# by name and reports missing and unexpected keys instead of raising: read its report. It does
# **not** forgive a matching key with a different shape (below).

# %%
state = cnn.state_dict()
for name, tensor in state.items():
    print(f"{name:<24} {tuple(tensor.shape)}")

# %%
state = {k: v for k, v in cnn.state_dict().items() if not k.startswith("5.")}  # no head
state["extra.weight"] = torch.zeros(1)
result = twin.load_state_dict(state, strict=False)
print("missing:", result.missing_keys)
print("unexpected:", result.unexpected_keys)


# %% [markdown]
# ### Pitfall: `size mismatch for 5.weight` even with `strict=False`
#
# The usual case: the same architecture with a new head for a different number of classes. The
# head's keys exist in both, with different shapes, and `strict=False` still raises:

# %%
def ten_class_cnn() -> nn.Sequential:
    """A freshly initialised model with the same backbone and a 10-class head."""
    torch.manual_seed(1)
    return nn.Sequential(
        nn.Conv2d(3, 8, 3, padding=1),
        nn.BatchNorm2d(8),
        nn.ReLU(),
        nn.MaxPool2d(2),
        nn.Flatten(),
        nn.Linear(8 * 16 * 16, 10),
    )


ten_classes = ten_class_cnn()
with expect_error(RuntimeError, match="size mismatch for 5.weight"):
    ten_classes.load_state_dict(cnn.state_dict(), strict=False)
check(
    torch.equal(ten_classes[0].weight, cnn[0].weight),
    "the failed load had already copied every tensor that fit",
)

# %% [markdown]
# A failed `load_state_dict` is not all-or-nothing: it copies tensor by tensor and raises at the
# end, so the model is left half overwritten. Start again from a fresh model, keep only the
# tensors whose name **and** shape fit, and load those with `strict=False`:

# %%
ten_classes = ten_class_cnn()
fresh = not torch.equal(ten_classes[0].weight, cnn[0].weight)
target = ten_classes.state_dict()
fits = {k: v for k, v in cnn.state_dict().items() if k in target and v.shape == target[k].shape}
result = ten_classes.load_state_dict(fits, strict=False)
print(f"loaded {len(fits)} tensors; left as initialised: {result.missing_keys}")
check(
    fresh
    and torch.equal(ten_classes[0].weight, cnn[0].weight)
    and result.missing_keys == ["5.weight", "5.bias"]
    and ten_classes[5].weight.shape == (10, 2048),
    "the backbone loaded; the 10-class head kept its own initialisation",
)

# %% [markdown]
# ## Snapshot weights with `copy.deepcopy(state_dict())`
#
# `state_dict()` returns the model's own tensors, not copies: keeping one as "the best weights so
# far" keeps a view that changes as the model trains. Copy it.

# %%
lin = nn.Linear(2, 1)
alias = lin.state_dict()
snapshot = copy.deepcopy(lin.state_dict())
with torch.no_grad():
    lin.weight += 1  # a training step, say
print("alias follows the model:", torch.equal(alias["weight"], lin.weight))
print("deepcopy kept the old values:", not torch.equal(snapshot["weight"], lin.weight))
check(alias["weight"].data_ptr() == lin.weight.data_ptr(), "state_dict() tensors alias parameters")

# %% [markdown]
# ## Load a checkpoint saved from DataParallel or DDP, on any device
#
# `nn.DataParallel` and `DistributedDataParallel` wrap the model as `.module`, so a `state_dict`
# saved from the wrapper has every key prefixed with `module.`; loading it into the bare model
# fails on every key. Strip the prefix (PyTorch has a helper for that), and pass `map_location`
# to `torch.load` so tensors saved on a GPU load on the device you have.

# %%
buffer = io.BytesIO()
torch.save({f"module.{k}": v for k, v in cnn.state_dict().items()}, buffer)  # as DDP would save
buffer.seek(0)
wrapped = torch.load(buffer, map_location="cpu", weights_only=True)
print(list(wrapped)[:2])

# %% [markdown]
# ### Pitfall: `Missing key(s) in state_dict: "0.weight"` and `Unexpected key(s): "module.0.weight"`

# %%
with expect_error(RuntimeError, lines=3):
    twin.load_state_dict(wrapped)

# %%
nn.modules.utils.consume_prefix_in_state_dict_if_present(wrapped, "module.")
print(twin.load_state_dict(wrapped))

# %% [markdown]
# ### Pitfall: `Attempting to deserialize object on a CUDA device` on a machine without a GPU
#
# A checkpoint records the device of every tensor. Loaded without `map_location` where CUDA is
# not available, a GPU-saved file fails (as the [`torch.load` documentation](https://docs.pytorch.org/docs/stable/generated/torch.load.html) warns). The
# cell makes a file that looks GPU-saved by patching the device tag `torch.save` writes:

# %%
gpu_saved = io.BytesIO()
with mock.patch.object(torch.serialization, "location_tag", lambda storage: "cuda:0"):
    torch.save({"weight": torch.ones(2)}, gpu_saved)  # as a GPU machine would save it
gpu_saved.seek(0)
if not torch.cuda.is_available():
    with expect_error(RuntimeError):
        torch.load(gpu_saved, weights_only=True)
    gpu_saved.seek(0)
on_cpu = torch.load(gpu_saved, map_location="cpu", weights_only=True)
print("with map_location='cpu':", on_cpu["weight"].device, on_cpu["weight"].tolist())
check(on_cpu["weight"].device.type == "cpu", "map_location='cpu' loads a GPU checkpoint anywhere")

# %% [markdown]
# On a GPU machine the first load works; there a file saved on `cuda:1` fails on a one-GPU
# machine instead (`Attempting to deserialize object on CUDA device 1 but
# torch.cuda.device_count() is 1`). `map_location` fixes both, and also takes a device
# (`map_location=device`) or a mapping (`{"cuda:1": "cuda:0"}`).

# %% [markdown]
# ### Pitfall: `mat1 and mat2 must have the same dtype`: `module.to()` is in place, `tensor.to()` is not
#
# `module.to(...)` converts the module's parameters in place (and returns the module).
# `tensor.to(...)` returns the converted tensor and leaves the original as it was (when nothing
# needs converting it returns the tensor itself, see [01](01_tensors_recipes.ipynb)), so without an
# assignment nothing happens. On a GPU machine the same bug leaves inputs on the CPU; here we show
# it with a dtype.

# %%
model = nn.Linear(2, 1)
model.to(torch.float64)  # in place
batch = torch.ones(3, 2)
batch.to(torch.float64)  # result thrown away
print("model:", model.weight.dtype, "| batch:", batch.dtype)

# %%
with expect_error(RuntimeError):
    model(batch)

# %%
batch = batch.to(torch.float64)  # assign the result
print("output dtype:", model(batch).dtype)

# %% [markdown]
# ## See why `train()` and `eval()` give different outputs
#
# In training mode dropout zeroes activations at random and batch norm normalises with the
# **batch's** statistics; in eval mode dropout is off and batch norm uses its **running**
# statistics. The same batch through the same weights gives clearly different outputs:

# %%
torch.manual_seed(0)
net = nn.Sequential(
    nn.Linear(10, 32), nn.BatchNorm1d(32), nn.ReLU(), nn.Dropout(0.5), nn.Linear(32, 1)
)
batch = torch.randn(64, 10) * 3 + 1  # inputs whose layer outputs are far from mean 0, var 1
net.train()
with torch.no_grad():
    train_a, train_b = net(batch), net(batch)
net.eval()
with torch.no_grad():
    eval_a, eval_b = net(batch), net(batch)
print(f"train vs train (dropout differs): max |diff| = {(train_a - train_b).abs().max():.3f}")
print(f"eval vs eval (deterministic):     max |diff| = {(eval_a - eval_b).abs().max():.3f}")
print(f"train vs eval:                    max |diff| = {(train_a - eval_a).abs().max():.3f}")
check(
    torch.equal(eval_a, eval_b) and not torch.allclose(train_a, eval_a, atol=0.1),
    "eval() is deterministic and differs from train() on the same batch",
)

# %% [markdown]
# ### Pitfall: `Expected more than 1 value per channel when training`
#
# In training mode batch norm needs a batch's statistics, and the error comes when it gets
# exactly one value per channel: one sample through `BatchNorm1d` (below), or a 1×1 feature map.
# A single *image* through `BatchNorm2d` raises nothing: it is normalised with its own
# statistics, and the running statistics move toward them. Either way, classify single samples
# in eval mode, which uses the running statistics, and drop a last batch of one with
# `DataLoader(..., drop_last=True)`:

# %%
net.train()
with expect_error(ValueError):
    net(batch[:1])
net.eval()
with torch.no_grad():
    one = net(batch[:1])
check(
    torch.allclose(one, eval_a[:1], atol=1e-5),
    "in eval mode one sample goes through, with the output it has inside the batch",
)

# %% [markdown]
# ## Capture intermediate features with forward hooks
#
# `module.register_forward_hook(fn)` calls `fn(module, inputs, output)` after each forward pass
# of that module. Keep the handle and `remove()` it when done.

# %%
from torchvision.models import resnet18

resnet = resnet18(weights=None).eval()  # architecture only: no weight download
features = {}
handle = resnet.layer3.register_forward_hook(
    lambda module, inputs, output: features.update(layer3=output.detach())
)
with torch.inference_mode():
    logits = resnet(torch.randn(2, 3, 64, 64))
handle.remove()
print("logits:", tuple(logits.shape), "| layer3 output:", tuple(features["layer3"].shape))

# %% [markdown]
# `torchvision.models.feature_extraction.create_feature_extractor` does the same without hooks: it
# traces the model and returns a new module whose output is a dict of the nodes you name.
# `get_graph_node_names` lists them.

# %%
from torchvision.models.feature_extraction import create_feature_extractor, get_graph_node_names

_, eval_nodes = get_graph_node_names(resnet)
print(len(eval_nodes), "nodes, e.g.", eval_nodes[:5])
extractor = create_feature_extractor(resnet, return_nodes={"layer2": "mid", "avgpool": "pooled"})
with torch.inference_mode():
    out = extractor(torch.randn(2, 3, 64, 64))
print({name: tuple(t.shape) for name, t in out.items()})

# %% [markdown]
# Call the module, `model(x)`, not `model.forward(x)`: `__call__` runs the hooks around
# `forward`; calling `forward` directly skips them (and anything that relies on them, such as
# the hook above or pruning and quantization tools).

# %%
calls = []
handle = resnet.fc.register_forward_hook(lambda module, inputs, output: calls.append("hook"))
with torch.inference_mode():
    pooled = torch.randn(1, 512)
    resnet.fc(pooled)
    resnet.fc.forward(pooled)
handle.remove()
print("hook calls for model(x) and model.forward(x):", calls)
check(calls == ["hook"], "forward() skips the hooks that model(x) runs")

# %% [markdown]
# ## Replace a model's head for fine-tuning
#
# Torchvision's classifiers end in a head you can replace: `fc` for ResNets, `classifier[-1]` for
# VGG, MobileNet and EfficientNet (their `classifier` is a `Sequential`), `heads.head` for ViT.
# Replace it with a layer for your classes, freeze the rest if the data set is small, and train.
# (With internet access, `resnet18(weights=ResNet18_Weights.DEFAULT)` loads pretrained weights.)

# %%
resnet.fc = nn.Linear(resnet.fc.in_features, 2)  # e.g. airplane vs automobile
resnet.requires_grad_(False)
resnet.fc.requires_grad_(True)
total, trainable = count(resnet)
print(f"total {total:,} parameters, trainable {trainable:,} (the new head)")
print("output shape:", tuple(resnet(torch.randn(1, 3, 64, 64)).shape))
features_only = copy.deepcopy(resnet)
features_only.fc = nn.Identity()  # drop the head: the model now returns its 512 features
print("with nn.Identity as head:", tuple(features_only(torch.randn(1, 3, 64, 64)).shape))

# %% [markdown]
# ## Fine-tune a pretrained backbone with a new head, for real
#
# Without internet there are no ImageNet weights, so this notebook makes its own "pretrained"
# model: the course's small CNN (`helpers.models.small_cnn`, the one [05](05_datasets_dataloaders_recipes.ipynb)
# trains) trained for one epoch on 8,000 CIFAR2 images, saved to disk. Then the fine-tuning
# recipe as with any downloaded checkpoint: build a model with a **new** head, load the backbone
# by a filtered (partial) `state_dict`, freeze it, keep it in `eval()` so batch norm's statistics
# stay put, and train only the head on a small labelled set (200 images). A randomly initialised
# backbone trained the same way shows what the pretrained features are worth.
#
# One epoch at a high learning rate moves the weights faster than batch norm's running
# statistics (a moving average over past batches) follow, so they describe earlier weights and
# the model scores worse in `eval()` than its features deserve. Before saving, recompute them
# with the final weights: one pass over the training data in train mode, under `no_grad()`, with
# `momentum=None` (an exact average).

# %% tags=["nbval-ignore-output"]
train_images, train_labels, classes = load_cifar2("train")
test_images, test_labels, _ = load_cifar2("test")
mean, std = channel_stats(train_images)
shuffled = torch.randperm(len(train_images), generator=torch.Generator().manual_seed(0))
pretrain_idx, few_idx = shuffled[:8000], shuffled[8000:8200]  # the folder is sorted by class
pretrain_x, pretrain_y = train_images[pretrain_idx], train_labels[pretrain_idx]
few_x, few_y = train_images[few_idx], train_labels[few_idx]


def train(model: nn.Module, x: torch.Tensor, y: torch.Tensor, epochs: int, lr: float) -> None:
    """Train the parameters that require grad; batch norm layers in eval() stay as they are
    (no `model.train()` here: it would switch a frozen backbone's batch norm back on)."""
    trainable = [p for p in model.parameters() if p.requires_grad]
    optimizer = torch.optim.AdamW(trainable, lr=lr)
    loader = DataLoader(
        TensorDataset(x, y),
        batch_size=100,
        shuffle=True,
        generator=torch.Generator().manual_seed(0),
    )
    for _ in range(epochs):
        for xb, yb in loader:
            loss = F.cross_entropy(model(xb), yb)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()


@torch.no_grad()
def accuracy(model: nn.Module) -> float:
    return (model.eval()(test_images).argmax(dim=1) == test_labels).float().mean().item()


@torch.no_grad()
def recompute_batch_norm(model: nn.Module, x: torch.Tensor) -> None:
    """Replace the running statistics with exact averages over x, under the final weights."""
    norms = [m for m in model.modules() if isinstance(m, nn.BatchNorm2d)]
    for norm in norms:
        norm.reset_running_stats()
        norm.momentum = None  # None: a cumulative average instead of a moving one
    model.train()
    for xb in x.split(500):
        model(xb)
    for norm in norms:
        norm.momentum = 0.1


torch.manual_seed(0)
pretrained = small_cnn(mean, std, width=8)
train(pretrained.train(), pretrain_x, pretrain_y, epochs=1, lr=3e-3)
lagging = accuracy(pretrained)
recompute_batch_norm(pretrained, pretrain_x)
pretrained_acc = accuracy(pretrained)
Path("runs").mkdir(exist_ok=True)
torch.save(pretrained.state_dict(), "runs/04_pretrained.pt")
print(
    f"pretrained model: test accuracy {lagging:.3f}, {pretrained_acc:.3f} with recomputed BN stats"
)


# %% tags=["nbval-ignore-output"]
def fine_tune(state: dict | None) -> tuple[nn.Module, dict, float]:
    """Return the model with a new head trained on 200 images, its weights before, and accuracy."""
    torch.manual_seed(1)
    model = small_cnn(mean, std, width=8)  # a fresh model: its head is new
    if state is not None:
        mine = model.state_dict()
        head = [k for k in mine if k.startswith(str(len(model) - 1) + ".")]
        backbone = {k: v for k, v in state.items() if k not in head and v.shape == mine[k].shape}
        model.load_state_dict(backbone, strict=False)
    before = copy.deepcopy(model.state_dict())
    model[:-1].requires_grad_(False).eval()  # frozen backbone, statistics fixed
    model[-1].train()
    train(model, few_x, few_y, epochs=30, lr=1e-2)
    return model, before, accuracy(model)


state = torch.load("runs/04_pretrained.pt", map_location="cpu", weights_only=True)
tuned, tuned_before, tuned_acc = fine_tune(state)
_, _, random_acc = fine_tune(None)
print(f"new head on 200 images: pretrained backbone {tuned_acc:.3f}, random {random_acc:.3f}")

# %%
after = tuned.state_dict()
head_keys = [k for k in after if k.startswith(str(len(tuned) - 1) + ".")]
backbone_same = all(torch.equal(after[k], tuned_before[k]) for k in after if k not in head_keys)
head_moved = any(not torch.equal(after[k], tuned_before[k]) for k in head_keys)
print("head keys:", head_keys, "| backbone incl. batch norm buffers unchanged:", backbone_same)
check(backbone_same and head_moved, "only the head trained; frozen weights and BN statistics kept")
check(
    pretrained_acc > lagging,
    "recomputed batch norm statistics score better than the lagging running ones",
    measured=f"{pretrained_acc:.3f} vs {lagging:.3f}",
)
check(
    tuned_acc > random_acc + 0.1,
    "a pretrained backbone beats a random one by 0.1 or more with the same new head",
    measured=f"{tuned_acc:.3f} vs {random_acc:.3f}",
)


# %% [markdown]
# ## Old code you will meet
#
# | old form | write today | why |
# |---|---|---|
# | `resnet18(pretrained=True)` | `resnet18(weights=ResNet18_Weights.DEFAULT)` (or `weights=None`) | deprecated since torchvision 0.13; 0.29 still accepts it, with a warning |
# | `nn.init.normal(w)`, `nn.init.xavier_uniform(w)` | `nn.init.normal_(w)`, `nn.init.xavier_uniform_(w)` | the versions without `_` are deprecated and warn |
# | `model.cuda()`, `x.cuda()` | `model.to(device)`, `x = x.to(device)` | device-agnostic code runs on CPU, CUDA and MPS |
# | `torchkeras.summary(model, input_shape=...)` | `torchinfo.summary(model, input_size=...)` | torchkeras 1.x API; torchinfo is the maintained summary library |
# | `torch.save(model, path)`, then `model = torch.load(path)` | `torch.save(model.state_dict(), path)`, then `model.load_state_dict(torch.load(path, weights_only=True))` | since torch 2.6 `torch.load` defaults to `weights_only=True`: old code that loads a `state_dict` keeps working (and is safe), while a whole pickled model now fails to load unless you pass `weights_only=False`, which can run arbitrary code: only for files you trust (07 shows it) |

# %% [markdown]
# ## Exercises

# %% [markdown]
# ### Exercise 1 · An MLP from a list of sizes
#
# Complete `MLP(sizes)`: fill in `self.layers`, an `nn.ModuleList` of `Linear` layers between
# consecutive sizes, and the result of `forward`, the layers in order with ReLU between them
# (not after the last). The check counts the parameters of `MLP([10, 32, 16, 3])` and runs a
# batch through it.
#
# <details><summary>Hint 1</summary>
#
# `[10, 32, 16, 3]` makes three layers: 10 → 32, 32 → 16, 16 → 3. In `forward`, every layer but
# the last is followed by a ReLU, so treat the last one apart.
# </details>
#
# <details><summary>Hint 2</summary>
#
# The section "Build a model three ways" fills an `nn.ModuleList` from a list of sizes, and
# `itertools.pairwise` (imported at the top) yields consecutive pairs. A `ModuleList` slices like
# a list.
# </details>

# %%
class MLP(nn.Module):
    def __init__(self, sizes: list[int]):
        super().__init__()
        self.layers = ...  # nn.Linear between consecutive sizes, in an nn.ModuleList

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return ...  # the layers in order, with ReLU between them (not after the last)


sizes = [10, 32, 16, 3]
mlp = MLP(sizes)

# %%
ch04.exercise_1(mlp, sizes)


# %% [markdown]
# #### Solution

# %% tags=["solution"]
# Solution: open it once you have tried. It uses its own names, so your answer stays as it is.
class solution_MLP(nn.Module):
    def __init__(self, sizes: list[int]):
        super().__init__()
        self.layers = nn.ModuleList(nn.Linear(a, b) for a, b in pairwise(sizes))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for layer in self.layers[:-1]:
            x = F.relu(layer(x))
        return self.layers[-1](x)


ch04.exercise_1(solution_MLP(sizes), sizes)

# %% [markdown]
# ### Exercise 2 · Train only the head
#
# Freeze every layer of `model` except the last, and fill in `opt`, an SGD optimizer over the
# trainable parameters only. The check compares the trainable parameters and those in `opt` with
# the last layer's, then takes one step on a random batch and looks at which parameters changed.
#
# <details><summary>Hint 1</summary>
#
# Two separate things: which parameters get gradients at all (a flag on each parameter), and
# which ones the optimizer is given. Both should be the last layer's weight and bias.
# </details>
#
# <details><summary>Hint 2</summary>
#
# The section "Freeze layers and give parts different learning rates" freezes a whole part of a
# model with one call; the same method, called on the last layer, switches it back. Build the
# optimizer from the parameters whose `requires_grad` is `True`.
# </details>

# %%
model = nn.Sequential(nn.Linear(10, 32), nn.ReLU(), nn.Linear(32, 16), nn.ReLU(), nn.Linear(16, 3))
# freeze every layer of model except the last here
opt = ...  # torch.optim.SGD(..., lr=0.1) over the trainable parameters only

# %%
ch04.exercise_2(model, opt)

# %% [markdown]
# #### Solution

# %% tags=["solution"]
# Solution: open it once you have tried. It uses its own names, so your answer stays as it is.
solution_model = copy.deepcopy(model)  # a copy: your model keeps its own flags
solution_model.requires_grad_(False)
solution_model[-1].requires_grad_(True)
solution_opt = torch.optim.SGD(
    [solution_p for solution_p in solution_model.parameters() if solution_p.requires_grad], lr=0.1
)
ch04.exercise_2(solution_model, solution_opt)

# %% [markdown]
# ### Exercise 3 · The output shape of every convolution
#
# Fill in `hooks`: forward hooks that record, in `shapes`, the output shape of every `nn.Conv2d`
# in a fresh `resnet18(weights=None)` during one `1 × 3 × 64 × 64` forward pass, keyed by the
# module's name. Then, from `shapes`: how many convolutions ran (`n_convolutions`), and what is
# the smallest spatial size reached (`smallest_side`)? The check removes the hooks and compares
# with the shapes that `torch.fx` finds by tracing the same network.
#
# <details><summary>Hint 1</summary>
#
# Walk the network's sub-modules with their names and pick the convolutions. Each hook has to
# write under its own module's name: a `lambda` made in a loop looks its variables up only when
# it runs.
# </details>
#
# <details><summary>Hint 2</summary>
#
# The section "Capture intermediate features with forward hooks" shows a forward hook's
# arguments, and 03's pitfall "the late-binding closure in a loop of hooks" shows how to bind the
# name. Shapes end with height and width.
# </details>

# %%
net = resnet18(weights=None).eval()
shapes = {}  # module name -> output shape, written by the hooks
hooks = ...  # one forward hook handle per nn.Conv2d of net
with torch.inference_mode():
    net(torch.randn(1, 3, 64, 64))
n_convolutions = ...  # how many entries shapes holds
smallest_side = ...  # the smallest height or width of an output in shapes

# %%
ch04.exercise_3(net, shapes, hooks, n_convolutions, smallest_side)

# %% [markdown]
# #### Solution

# %% tags=["solution"]
# Solution: open it once you have tried. It uses its own names, so your answer stays as it is.
solution_net = resnet18().eval()  # its own network: yours keeps only your hooks
solution_shapes = {}
solution_hooks = [
    solution_module.register_forward_hook(
        lambda m, i, o, name=solution_name: solution_shapes.update({name: tuple(o.shape)})
    )
    for solution_name, solution_module in solution_net.named_modules()
    if isinstance(solution_module, nn.Conv2d)
]
with torch.inference_mode():
    solution_net(torch.randn(1, 3, 64, 64))
ch04.exercise_3(
    solution_net,
    solution_shapes,
    solution_hooks,
    len(solution_shapes),
    min(min(solution_shape[-2:]) for solution_shape in solution_shapes.values()),
)

# %% [markdown]
# ## Summary
#
# - Modules hold parameters, buffers and train/eval state; functions do not. Pass
#   `training=self.training` to `F.dropout`, or use `nn.Dropout`.
# - Register sub-layers as attributes, in `nn.Sequential`, `nn.ModuleList` or `nn.ModuleDict`, never
#   in a plain list; count parameters with `parameters()`, summarise with `torchinfo`.
# - Freeze with `requires_grad_(False)`; give groups their own learning rate with parameter groups.
# - `state_dict` holds parameters and buffers, as aliases (deepcopy a snapshot); `strict=False`
#   reports missing/unexpected keys and still raises on shape mismatches: filter by shape, and
#   strip the `module.` prefix of DDP checkpoints.
# - Fine-tune by loading a backbone, freezing it **and** keeping its batch norm in `eval()`.
# - `eval()` changes what dropout and batch norm compute; forward hooks and
#   `create_feature_extractor` expose intermediate features.
#
# Next: [05 · Dataset and DataLoader with IMDB and CIFAR2](05_datasets_dataloaders_recipes.ipynb).
