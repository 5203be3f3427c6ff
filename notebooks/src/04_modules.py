# %% [markdown]
# # 04 · nn.Module and nn.functional
#
# [![Open In Colab](https://colab.research.google.com/assets/colab-badge.svg)](https://colab.research.google.com/github/pytorch-cookbook/pytorch-cookbook/blob/main/notebooks/04_modules.ipynb)
#
# `nn.Module` is how PyTorch packages parameters, buffers and the computation that uses them.
# After this notebook you can choose between `nn.Xxx` layers and `F.xxx` functions, build models
# three ways without losing parameters, walk and count what a model holds, freeze parts of it and
# give parts different learning rates, initialise, copy and load weights, know what `state_dict`
# holds, and pull intermediate features out of a torchvision model.
#
# **Prerequisites:** [01](01_tensors.ipynb), [03](03_autograd.ipynb). **Run time:** about 10 s on
# a laptop CPU.

# %%
import sys

if (
    "google.colab" in sys.modules
):  # Colab: install the course's helpers and what the notebooks import
    import subprocess

    spec = "pytorch-cookbook[notebooks] @ git+https://github.com/pytorch-cookbook/pytorch-cookbook"
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", spec], check=True)

import copy
from collections import OrderedDict
from itertools import pairwise

import torch
import torch.nn.functional as F
from torch import nn

from helpers.check import check
from helpers.env import setup

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
print(torch.equal(layer(x), F.linear(x, layer.weight, layer.bias)))
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
        nn.init.kaiming_uniform_(self.weight, a=5**0.5)  # nn.Linear's own initialisation

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x @ self.weight.T + self.bias


mine, reference = MyLinear(3, 2), nn.Linear(3, 2)
mine.load_state_dict(reference.state_dict())  # same names, same shapes: same weights
print(list(mine.state_dict()))
check(torch.allclose(mine(x), reference(x)), "MyLinear matches nn.Linear given the same weights")


# %% [markdown]
# `nn.ParameterList` and `nn.ParameterDict` register a variable number of parameters:

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
# ## Know what `state_dict` holds, and load one that does not fit
#
# A `state_dict` maps names to tensors: parameters **and** buffers (batch norm's `running_mean`,
# `running_var`, `num_batches_tracked`). `load_state_dict(strict=False)` loads what matches and
# reports the rest instead of raising: read its report.

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
# ### Pitfall: `.to()` works in place for modules, not for tensors
#
# `module.to(...)` converts the module's parameters in place (and returns the module). `tensor.to(...)`
# returns a **new** tensor and leaves the original alone, so without an assignment nothing happens.
# On a GPU machine the same bug leaves inputs on the CPU; here we show it with a dtype.

# %%
model = nn.Linear(2, 1)
model.to(torch.float64)  # in place
batch = torch.ones(3, 2)
batch.to(torch.float64)  # result thrown away
print("model:", model.weight.dtype, "| batch:", batch.dtype)

# %% tags=["raises-exception"]
model(batch)

# %%
batch = batch.to(torch.float64)  # assign the result
print(model(batch).dtype)

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
batch = torch.randn(64, 10) * 3 + 1  # statistics far from batch norm's initial (0, 1)
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
# ## Replace a model's head for fine-tuning
#
# Torchvision's classifiers end in one layer (`fc` for ResNets, `classifier` for many others).
# Replace it with a layer for your classes, freeze the rest if the data set is small, and train.
# (With internet access, `resnet18(weights=ResNet18_Weights.DEFAULT)` loads pretrained weights.)

# %%
resnet.fc = nn.Linear(resnet.fc.in_features, 2)  # e.g. airplane vs automobile
resnet.requires_grad_(False)
resnet.fc.requires_grad_(True)
total, trainable = count(resnet)
print(f"total {total:,} parameters, trainable {trainable:,} (the new head)")
print(tuple(resnet(torch.randn(1, 3, 64, 64)).shape))


# %% [markdown]
# ## Old code you will meet
#
# | old form | write today | why |
# |---|---|---|
# | `resnet18(pretrained=True)` | `resnet18(weights=ResNet18_Weights.DEFAULT)` (or `weights=None`) | `pretrained` was removed from torchvision |
# | `nn.init.normal(w)`, `nn.init.xavier_uniform(w)` | `nn.init.normal_(w)`, `nn.init.xavier_uniform_(w)` | the versions without `_` are deprecated and warn |
# | `model.cuda()`, `x.cuda()` | `model.to(device)`, `x = x.to(device)` | device-agnostic code runs on CPU, CUDA and MPS |
# | `torchkeras.summary(model, input_shape=...)` | `torchinfo.summary(model, input_size=...)` | torchkeras 1.x API; torchinfo is the maintained summary library |
# | `model.load_state_dict(torch.load(path))` | `torch.load(path, weights_only=True)` | loading a full pickle can run arbitrary code (chapter 07 shows more) |

# %% [markdown]
# ## Exercises

# %% [markdown]
# ### Exercise 1: an MLP from a list of sizes
#
# Write `MLP(sizes)` that builds `Linear` layers between consecutive sizes, with ReLU between
# them (not after the last), using `nn.ModuleList`. Check the parameter count of `MLP([10, 32, 16, 3])`
# against $\sum (n_{in} + 1)\, n_{out}$.

# %% tags=["solution"]
class MLP(nn.Module):
    def __init__(self, sizes: list[int]):
        super().__init__()
        self.layers = nn.ModuleList(nn.Linear(a, b) for a, b in pairwise(sizes))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for layer in self.layers[:-1]:
            x = F.relu(layer(x))
        return self.layers[-1](x)


sizes = [10, 32, 16, 3]
mlp = MLP(sizes)
expected = sum((a + 1) * b for a, b in pairwise(sizes))
print(count(mlp)[0], expected, tuple(mlp(torch.randn(4, 10)).shape))
assert count(mlp)[0] == expected

# %% [markdown]
# ### Exercise 2: train only the head
#
# Freeze every layer of `mlp` except the last, build an SGD optimizer over the trainable parameters
# only, take one step on a random batch, and check that only the last layer's weights changed.

# %% tags=["solution"]
mlp.requires_grad_(False)
mlp.layers[-1].requires_grad_(True)
before = copy.deepcopy(mlp.state_dict())
opt = torch.optim.SGD([p for p in mlp.parameters() if p.requires_grad], lr=0.1)
loss = mlp(torch.randn(8, 10)).pow(2).mean()
loss.backward()
opt.step()
changed = [k for k, v in mlp.state_dict().items() if not torch.equal(v, before[k])]
print(changed)
assert changed == ["layers.2.weight", "layers.2.bias"]

# %% [markdown]
# ### Exercise 3: the output shape of every convolution
#
# With forward hooks, record the output shape of every `nn.Conv2d` in a fresh `resnet18(weights=None)`
# for one `1 × 3 × 64 × 64` input, keyed by the module's name. How many convolutions are there,
# and what is the smallest spatial size reached?

# %% tags=["solution"]
net = resnet18(weights=None).eval()
shapes = {}
hooks = [
    module.register_forward_hook(lambda m, i, o, name=name: shapes.update({name: tuple(o.shape)}))
    for name, module in net.named_modules()
    if isinstance(module, nn.Conv2d)
]
with torch.inference_mode():
    net(torch.randn(1, 3, 64, 64))
for h in hooks:
    h.remove()
print(len(shapes), "convolutions; first:", shapes["conv1"], "last:", shapes["layer4.1.conv2"])
assert len(shapes) == 20 and min(s[-1] for s in shapes.values()) == 2

# %% [markdown]
# ## Summary
#
# - Modules hold parameters, buffers and train/eval state; functions do not. Pass
#   `training=self.training` to `F.dropout`, or use `nn.Dropout`.
# - Register sub-layers as attributes, in `nn.Sequential`, `nn.ModuleList` or `nn.ModuleDict`, never
#   in a plain list; count parameters with `parameters()`, summarise with `torchinfo`.
# - Freeze with `requires_grad_(False)`; give groups their own learning rate with parameter groups.
# - `state_dict` holds parameters and buffers; `strict=False` reports missing/unexpected keys.
#   `module.to()` is in place, `tensor.to()` is not.
# - `eval()` changes what dropout and batch norm compute; forward hooks and
#   `create_feature_extractor` expose intermediate features.
#
# Next: [05 · Dataset and DataLoader with IMDB and CIFAR2](05_datasets_dataloaders.ipynb).
