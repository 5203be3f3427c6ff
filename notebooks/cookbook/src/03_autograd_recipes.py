# %% [markdown]
# # 03 · Autograd: recipes
#
# [![Open In Colab](https://colab.research.google.com/assets/colab-badge.svg)](https://colab.research.google.com/github/pytorch-cookbook/pytorch-cookbook/blob/main/notebooks/cookbook/03_autograd_recipes.ipynb)
#
# **The cookbook of chapter 03.** New to the topic? [The lesson](../03_autograd.ipynb) teaches it
# step by step on the course's running example. Here each recipe answers one task; the
# [recipe index](../RECIPES.md) and the [error index](../ERRORS.md) find the one you need.
#
# Autograd records the operations on tensors that require gradients and, on `backward()`, applies
# the chain rule through that record. After this notebook you can tell leaves from intermediate
# tensors, compute gradients of scalar and non-scalar outputs (as vector-Jacobian products),
# control when gradients are tracked, accumulated and freed, inspect and change gradients with
# hooks, take higher-order derivatives, update parameters by hand, find the in-place operation that
# broke a backward pass, and write your own differentiable operation, checked with `gradcheck`.
#
# **Prerequisites:** [01](../01_tensors.ipynb), [02](../02_contiguity_strides.ipynb).
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

import copy
import warnings

import torch
from torch import nn
from torch.func import functional_call, grad, jacrev, vmap

from helpers.check import check, expect_error, expect_warning
from helpers.env import setup
from helpers.exercises import ch03

device = setup(seed=0)
torch.set_printoptions(precision=4, sci_mode=False)

# %% [markdown]
# ## Tell leaf tensors from computed ones
#
# A tensor you create with `requires_grad=True` is a **leaf**: its gradient is stored in `.grad`.
# Every tensor computed from it has a `grad_fn`, the node of the graph that knows how to pass
# gradients back to its inputs. The graph is built during the forward computation and freed by
# `backward()`.

# %%
w = torch.tensor([2.0, -1.0], requires_grad=True)
x = torch.tensor([3.0, 4.0])  # data: no gradient needed
y = (w * x).sum()
for name, t in {"w": w, "x": x, "y": y}.items():
    fn = t.grad_fn.name() if t.grad_fn else None
    print(f"{name}: requires_grad={t.requires_grad!s:<5} is_leaf={t.is_leaf!s:<5} grad_fn={fn}")
print("y's graph goes back to:", [n[0].name() for n in y.grad_fn.next_functions if n[0]])
y.backward()
print("dy/dw =", w.grad, "= x")

# %% [markdown]
# ## Get the gradient of an intermediate tensor with `retain_grad`
#
# Only leaves keep `.grad`. Reading `.grad` of a computed tensor gives `None` (and a warning saying
# so); call `retain_grad()` on it **before** `backward()` to keep its gradient too.

# %%
x = torch.tensor([1.0, 2.0], requires_grad=True)
h = x * 3
kept = x * 3
kept.retain_grad()
with expect_warning(UserWarning, match="non-leaf"):
    ((h**2).sum() + (kept**2).sum()).backward()
    h_grad = h.grad  # reading a non-leaf's .grad warns
print("h.grad:", h_grad, "| kept.grad:", kept.grad)
check(h_grad is None and torch.equal(kept.grad, 2 * kept.detach()), "retain_grad keeps its .grad")

# %% [markdown]
# ### Pitfall: `requires_grad=True`, then `.to(device)`: a non-leaf whose `.grad` stays `None`
#
# `torch.randn(3, requires_grad=True).to(device)` makes the leaf first and then **computes** a
# copy on the device: the tensor you keep is not a leaf, gets no `.grad`, and an optimizer refuses
# it. (On a CPU-only machine `.to("cpu")` returns the tensor itself, so the bug hides until the
# code meets a GPU; a dtype conversion shows it anywhere.) Create the tensor on its device and
# dtype first, then ask for gradients:

# %%
wrong = torch.randn(3, requires_grad=True).to(torch.float16)  # like .to("cuda") on a GPU
right = torch.randn(3, dtype=torch.float16, device=device, requires_grad=True)  # MPS has no float64
print("wrong is a leaf:", wrong.is_leaf, "| right is a leaf:", right.is_leaf)


# %% [markdown]
# ## Get gradients of a non-scalar output with the `gradient` argument
#
# `backward()` needs a scalar. For a vector output $y = f(x)$, autograd never builds the Jacobian
# $J = \partial y / \partial x$; it computes the **vector-Jacobian product** $v^\top J$ for a `v`
# you pass as `gradient`. With `v` all ones that is the gradient of `y.sum()`.
#
# Worked example: $y = (x_0^2,\; x_0 x_1,\; 3 x_1)$ at $x = (1, 2)$ has Jacobian
# $J = \begin{pmatrix} 2x_0 & 0 \\ x_1 & x_0 \\ 0 & 3 \end{pmatrix} =
# \begin{pmatrix} 2 & 0 \\ 2 & 1 \\ 0 & 3 \end{pmatrix}$.

# %%
def f(x: torch.Tensor) -> torch.Tensor:
    return torch.stack([x[0] ** 2, x[0] * x[1], 3 * x[1]])


x = torch.tensor([1.0, 2.0], requires_grad=True)
v = torch.tensor([1.0, 10.0, 100.0])
f(x).backward(gradient=v)
J = torch.tensor([[2.0, 0.0], [2.0, 1.0], [0.0, 3.0]])  # by hand, above
print("autograd v^T J:", x.grad, "| by hand:", v @ J)
print("full Jacobian from torch.autograd.functional.jacobian:")
print(torch.autograd.functional.jacobian(f, x.detach()))
check(torch.equal(x.grad, v @ J), "backward(gradient=v) computes v^T J")

# %% [markdown]
# ### Pitfall: `grad can be implicitly created only for scalar outputs`

# %%
with expect_error(RuntimeError):
    f(torch.tensor([1.0, 2.0], requires_grad=True)).backward()

# %% [markdown]
# Either reduce to a scalar first (`.sum()`, a loss) or pass `gradient=`.

# %% [markdown]
# ## Transform functions with `torch.func`: Jacobians and per-sample gradients
#
# `torch.func` works on functions instead of tensors: `jacrev(f)` (or `jacfwd`) returns a
# function that computes the Jacobian (`torch.autograd.functional.jacobian`'s docs point to
# them), `grad(f)` one that returns the gradient of a scalar function, and `vmap` maps a function
# over a batch dimension. `vmap(grad(loss))` gives **per-sample gradients** in one call, without
# a Python loop; `functional_call` runs a module with the parameters you pass.

# %%
print("jacrev(f):", jacrev(f)(x.detach()))
check(torch.equal(jacrev(f)(x.detach()), J), "jacrev(f) gives the Jacobian computed by hand")

torch.manual_seed(0)
lin = nn.Linear(3, 1)
xs, ys = torch.randn(5, 3), torch.randn(5, 1)


def loss_one(params: dict, xi: torch.Tensor, yi: torch.Tensor) -> torch.Tensor:
    """The loss of one sample, as a function of the parameters."""
    return nn.functional.mse_loss(functional_call(lin, params, (xi,)), yi)


params = {name: p.detach() for name, p in lin.named_parameters()}
per_sample = vmap(grad(loss_one), in_dims=(None, 0, 0))(params, xs, ys)
print({name: tuple(g.shape) for name, g in per_sample.items()})
looped = torch.stack(
    [grad(loss_one)(params, xi, yi)["weight"] for xi, yi in zip(xs, ys, strict=True)]
)
check(
    torch.allclose(per_sample["weight"], looped),
    "vmap(grad(...)) gives one gradient per sample, equal to a loop's",
)

# %% [markdown]
# ## Reset gradients, because they accumulate
#
# Every `backward()` **adds** to `.grad`. That is what makes gradient accumulation over several
# small batches work, and why a training loop clears gradients before each step. `zero_grad()`
# sets them to `None` by default (`set_to_none=True`), which saves memory and a kernel launch.

# %%
w = torch.tensor(1.0, requires_grad=True)
for step in range(3):
    (3 * w).backward()
    print(f"after backward #{step + 1}: w.grad = {w.grad.item()}")
w.grad = None  # what optimizer.zero_grad() does for each parameter
(3 * w).backward()
print("after clearing:", w.grad.item())

# %% [markdown]
# ## Accumulate gradients over micro-batches to emulate a big batch
#
# Because gradients add up, k backward passes over k micro-batches of equal size, each with its
# loss divided by k, give the same gradient as one pass over the whole batch (for a mean loss and
# no batch norm; with unequal sizes weight each loss by its share of the batch): the basis of
# gradient accumulation when a big batch does not fit in memory.

# %%
torch.manual_seed(0)
model = nn.Linear(4, 1)
xb, yb = torch.randn(32, 4), torch.randn(32, 1)
nn.functional.mse_loss(model(xb), yb).backward()
big = model.weight.grad.clone()
model.zero_grad()
k = 4
for x_part, y_part in zip(xb.chunk(k), yb.chunk(k), strict=True):
    (nn.functional.mse_loss(model(x_part), y_part) / k).backward()
diff = (model.weight.grad - big).abs().max().item()
print(f"max difference, 1 batch of 32 vs {k} micro-batches of 8, below 1e-6: {diff < 1e-6}")
check(torch.allclose(model.weight.grad, big, atol=1e-6), "k micro-batches with loss/k = 1 batch")

# %% [markdown]
# ### Pitfall: `Trying to backward through the graph a second time`
#
# `backward()` frees the graph's saved tensors. A second call needs `retain_graph=True` on the
# first (rarely needed: usually you want a fresh forward pass).

# %%
w = torch.tensor(2.0, requires_grad=True)
loss = w.exp() * 3
loss.backward()
with expect_error(RuntimeError):
    loss.backward()

# %%
w = torch.tensor(2.0, requires_grad=True)  # fresh: the pitfall left one pass in w.grad
loss = w.exp() * 3
loss.backward(retain_graph=True)
loss.backward()
print(f"two backward passes, accumulated: {w.grad.item():.4f}")
check(torch.isclose(w.grad, 2 * 3 * torch.exp(torch.tensor(2.0))), "w.grad = 2 × 3e²")

# %% [markdown]
# ## Stop tracking with `detach`, `no_grad` and `inference_mode` (and not with `.data`)
#
# | tool | what it does | use it for |
# |---|---|---|
# | `t.detach()` | a tensor sharing `t`'s memory, cut from the graph | a value you want to use as a constant (targets, logging) |
# | `with torch.no_grad():` | operations inside build no graph | evaluation, manual parameter updates |
# | `with torch.inference_mode():` | like `no_grad`, faster; its tensors are marked as inference tensors (rules below) | pure inference |
# | `with torch.set_grad_enabled(flag):` | `no_grad` when `flag` is `False`, tracking when `True` | one loop for training and evaluation: `set_grad_enabled(is_training)` |
# | `t.data` | like `detach()`, but autograd does not see changes made through it | nothing: old code |

# %%
w = torch.ones(2, requires_grad=True)
with torch.no_grad():
    a = w * 2
with torch.inference_mode():
    b = w * 2
with torch.set_grad_enabled(False):
    c = w * 2
print(
    "under no_grad, requires_grad:",
    a.requires_grad,
    "| under inference_mode, requires_grad:",
    b.requires_grad,
    "is_inference:",
    b.is_inference(),
)
print("set_grad_enabled(False):", c.requires_grad)
print(
    "detach:", w.detach().requires_grad, "| shares memory:", w.detach().data_ptr() == w.data_ptr()
)

# %% [markdown]
# What an inference tensor may do later, outside the mode: it can be an **input** to a tracked
# computation (`b + w` below), but autograd refuses to **save** it for backward (`b * w` needs `b`
# to compute `w`'s gradient), and in-place updates to it outside the mode are refused. `b.clone()`
# gives a normal tensor.

# %%
(b + w).sum().backward()
print("b + w: backward works, w.grad =", w.grad)
normal = b.clone()
print("clone is an inference tensor:", normal.is_inference())

# %% [markdown]
# ### Pitfall: `Inference tensors cannot be saved for backward`

# %%
with expect_error(RuntimeError):
    (b * w).sum().backward()

# %% [markdown]
# ### Pitfall: a change through `.data` gives a silently wrong gradient (through `detach()` it raises)
#
# Why `.data` is unsafe: `sigmoid` saves its **output** for the backward pass. Zeroing that output
# through `.data` goes unnoticed, and the gradient comes out silently wrong. Through `detach()` the
# same change is caught, because autograd tracks a version counter on the shared memory.

# %%
a = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
out = a.sigmoid()
out.data.zero_()  # autograd is not told
out.sum().backward()
print("gradient after a change through .data:", a.grad, "(silently wrong)")
print(
    "the right gradient is sigmoid'(a):",
    torch.sigmoid(a.detach()) * (1 - torch.sigmoid(a.detach())),
)

# %%
a = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
out = a.sigmoid()
out.detach().zero_()  # the version counter records the change
with expect_error(RuntimeError):
    out.sum().backward()

# %% [markdown]
# ## Use `model.eval()` and `torch.no_grad()` (or `inference_mode()`) together when evaluating
#
# They answer different questions. `model.eval()` changes what layers **compute** (dropout stops
# dropping, batch norm uses its running statistics); it does not stop gradient tracking.
# `no_grad()` stops tracking; it does not change what layers compute. Evaluation wants both.

# %%
model = nn.Sequential(nn.Linear(4, 4), nn.Dropout(p=0.5))
x = torch.ones(1, 4)
model.eval()
out_eval = model(x)
print(
    "eval():    dropout off ->",
    torch.equal(model(x), out_eval),
    "| still tracks gradients ->",
    out_eval.requires_grad,
)
model.train()
with torch.no_grad():
    out_a, out_b = model(x), model(x)
print(
    "no_grad(): dropout on  ->",
    not torch.equal(out_a, out_b),
    "| tracks gradients ->",
    out_a.requires_grad,
)
model.eval()
with torch.inference_mode():
    final = model(x)
print("both: deterministic and untracked ->", torch.equal(final, out_eval), final.requires_grad)

# %% [markdown]
# ## Print each parameter's gradient norm by name
#
# After `backward()`, `named_parameters()` pairs each gradient with its name: the quickest way to
# see which layer's gradients vanish or explode (and which parameters got none at all). Here the
# model has a second head that this loss never uses, a common slip when a model grows:

# %%
torch.manual_seed(0)
net = nn.Sequential(nn.Linear(3, 8), nn.ReLU(), nn.Linear(8, 1))
two_heads = nn.ModuleDict({"net": net, "spare_head": nn.Linear(8, 1)})
two_heads["net"](torch.randn(16, 3)).pow(2).mean().backward()
for name, param in two_heads.named_parameters():
    norm = "no gradient" if param.grad is None else f"{param.grad.norm().item():.4f}"
    print(f"{name:<17} {tuple(param.shape)!s:<8} grad norm {norm}")
check(
    all(p.grad is not None for p in net.parameters())
    and all(p.grad is None for p in two_heads["spare_head"].parameters()),
    "every parameter of net got a gradient; the unused head got none",
)

# %% [markdown]
# ## Inspect and change gradients with tensor hooks
#
# `t.register_hook(fn)` calls `fn(grad)` when the gradient of `t` is computed; returning a tensor
# replaces the gradient. Hooks on parameters are a cheap way to log gradient norms by name.

# %%
x = torch.tensor([1.0, 2.0], requires_grad=True)
y = x * 3
y.register_hook(lambda grad: print("gradient reaching y:", grad))
x.register_hook(lambda grad: grad.clamp(max=2.0))  # change it: clip each element
(y**2).sum().backward()
print("x.grad after the clipping hook:", x.grad)

# %% [markdown]
# ### Pitfall: the late-binding closure in a loop of hooks
#
# A `lambda` in a loop looks up `name` when it **runs**, and hooks run after the loop has
# finished, so every hook reports the last name:

# %%
torch.manual_seed(0)
net = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 1))
logged = []
handles = [
    p.register_hook(lambda grad: logged.append((name, round(grad.norm().item(), 4))))  # noqa: B023
    for name, p in net.named_parameters()
]
net(torch.randn(8, 3)).sum().backward()
print(logged)
for handle in handles:
    handle.remove()

# %% [markdown]
# Bind the value when the hook is **made**, with a default argument (or `functools.partial`).
# Linters catch this bug: ruff's rule B023 flagged the cell above (silenced there on purpose).

# %%
logged = []
handles = [
    p.register_hook(lambda grad, name=name: logged.append((name, round(grad.norm().item(), 4))))
    for name, p in net.named_parameters()
]
net.zero_grad()
net(torch.randn(8, 3)).sum().backward()
print(logged)
for handle in handles:
    handle.remove()
check(len({n for n, _ in logged}) == 4, "each parameter's gradient is logged under its own name")

# %% [markdown]
# ## Take derivatives of derivatives with `torch.autograd.grad`
#
# `torch.autograd.grad(out, inputs)` returns gradients instead of storing them in `.grad`. With
# `create_graph=True` the gradient is itself differentiable, so you can differentiate again.
# For $y = x^3$: $y' = 3x^2$ and $y'' = 6x$; at $x = 1$ they are 3 and 6.

# %%
x = torch.tensor(1.0, requires_grad=True)
y = x**3
(dy,) = torch.autograd.grad(y, x, create_graph=True)
(d2y,) = torch.autograd.grad(dy, x)
print(f"y' = {dy.item()} (3x² = 3), y'' = {d2y.item()} (6x = 6)")
print("x.grad untouched:", x.grad)
check(dy.item() == 3.0 and d2y.item() == 6.0, "autograd.grad gives y' = 3x² and, again, y'' = 6x")

# %% [markdown]
# ## Update parameters by hand, and keep them leaves
#
# Gradient descent is `w ← w − lr · ∇w`. The update must not be recorded (it would make `w` part
# of its own graph), so it runs under `no_grad()` and changes `w` in place. A small regression,
# $y = 3x + 2$ plus noise, fitted with no optimizer at all:

# %%
gen = torch.Generator().manual_seed(0)
xs = torch.rand(100, 1, generator=gen) * 4 - 2
ys = 3 * xs + 2 + 0.1 * torch.randn(100, 1, generator=gen)
w = torch.zeros(1, requires_grad=True)
b = torch.zeros(1, requires_grad=True)
for step in range(200):
    loss = ((xs * w + b - ys) ** 2).mean()
    loss.backward()
    with torch.no_grad():
        for p in (w, b):
            p -= 0.1 * p.grad
            p.grad = None
    if step % 50 == 0:
        print(f"step {step:3d}  loss {loss.item():.4f}")
print(f"fitted w = {w.item():.3f}, b = {b.item():.3f}; still leaves: {w.is_leaf and b.is_leaf}")
check(abs(w.item() - 3) < 0.05 and abs(b.item() - 2) < 0.05, "gradient descent recovers w=3, b=2")

# %% [markdown]
# ### Pitfall: `a leaf Variable that requires grad is being used in an in-place operation`
#
# The same update outside `no_grad()`: autograd would have to record an in-place change of a leaf
# it is tracking, and refuses.

# %%
w = torch.zeros(1, requires_grad=True)
((xs * w - ys) ** 2).mean().backward()
with expect_error(RuntimeError):
    w -= 0.1 * w.grad

# %% [markdown]
# The tempting fix, `w = w - 0.1 * w.grad`, runs but is a bug: it **rebinds** the name `w` to a
# new computed tensor. That tensor is not a leaf, so the next `backward()` leaves its `.grad` at
# `None` and the loop either crashes on `None` or stops learning:

# %%
w = torch.zeros(1, requires_grad=True)
((xs * w - ys) ** 2).mean().backward()
w = w - 0.1 * w.grad  # rebinding: w is now a computed tensor
with warnings.catch_warnings(record=True):
    warnings.simplefilter("ignore")
    ((xs * w - ys) ** 2).mean().backward()
    print("after rebinding: leaf", w.is_leaf, "| w.grad", w.grad)

# %% [markdown]
# ### Pitfall: "can't optimize a non-leaf Tensor"
#
# Scaling a random tensor **after** asking for gradients makes the result a computed tensor, not a
# leaf, and optimizers refuse it:

# %%
w = torch.randn(3, requires_grad=True) * 0.01
with expect_error(ValueError):
    torch.optim.SGD([w], lr=0.1)

# %% [markdown]
# Make the leaf **after** the computation, or use `nn.Parameter`. And to copy a leaf into a new
# independent leaf, `clone()` is not enough: a clone is part of the graph.

# %%
w1 = (torch.randn(3) * 0.01).requires_grad_()
w2 = nn.Parameter(torch.randn(3) * 0.01)
w3 = w1.detach().clone().requires_grad_()  # an independent copy that is a leaf
print("leaves:", w1.is_leaf, w2.is_leaf, w3.is_leaf, "| w1.clone() is a leaf:", w1.clone().is_leaf)
torch.optim.SGD([w1, w2, w3], lr=0.1)
print("the optimizer accepts all three")

# %% [markdown]
# ## Find an in-place change that breaks backward with anomaly detection
#
# The error: `one of the variables needed for gradient computation has been modified by an
# inplace operation`. Autograd saves some tensors for the backward pass (`exp` saves its output);
# changing one in place afterwards makes backward fail:

# %%
x = torch.randn(3, requires_grad=True)
y = x.exp()
y.add_(1)  # modifies the saved output of exp
with expect_error(RuntimeError):
    y.sum().backward()

# %% [markdown]
# The message names the operation (`Exp`) but not where it happened. In a large model,
# `torch.autograd.detect_anomaly()` records the forward call stack and reports the line that created
# the failing node (slow: use it only while debugging). Here we catch the error; `expect_warning`
# shows anomaly mode's warnings (that it is on, and the first line of its report), and the cell
# prints the forward line the report names:

# %%
x = torch.randn(3, requires_grad=True)
with expect_warning(UserWarning) as caught, torch.autograd.detect_anomaly():
    y = x.exp()
    y.add_(1)
    with expect_error(RuntimeError, match="modified by an inplace operation", lines=1):
        y.sum().backward()
report = next(str(w.message) for w in caught if "Error detected" in str(w.message))
print("forward line:", [line.strip() for line in report.splitlines() if "exp()" in line][-1])


# %% [markdown]
# The fix is to not modify a saved tensor: write `y = y + 1` (a new tensor) instead of `y.add_(1)`.

# %% [markdown]
# ## Write your own differentiable operation with `autograd.Function`
#
# Subclass `torch.autograd.Function` with static `forward`, `setup_context` (what `backward` will
# need) and `backward`. `gradcheck` compares your backward with finite differences (use
# `float64`). First an operation with a true derivative,
# $\mathrm{swish}(x) = x\,\sigma(x)$, whose derivative is $\sigma(x)\,(1 + x\,(1 - \sigma(x)))$.
# Older code puts `ctx` in `forward(ctx, x)` and saves there (the STE below): that still works
# with `backward()`, but only the separate `setup_context` form works with `torch.func`
# transforms such as `torch.func.grad`, and PyTorch's docs recommend it.

# %%
class Swish(torch.autograd.Function):
    @staticmethod
    def forward(x: torch.Tensor) -> torch.Tensor:
        return x * torch.sigmoid(x)

    @staticmethod
    def setup_context(ctx, inputs: tuple, output: torch.Tensor) -> None:
        (x,) = inputs
        ctx.save_for_backward(x)

    @staticmethod
    def backward(ctx, grad_out: torch.Tensor) -> torch.Tensor:
        (x,) = ctx.saved_tensors
        s = torch.sigmoid(x)
        return grad_out * s * (1 + x * (1 - s))


inputs = torch.randn(6, dtype=torch.float64, requires_grad=True)
check(
    torch.autograd.gradcheck(Swish.apply, (inputs,)), "Swish's backward matches finite differences"
)
check(torch.allclose(Swish.apply(inputs), nn.functional.silu(inputs)), "Swish equals F.silu")
swish_grad = torch.func.grad(lambda v: Swish.apply(v).sum())(inputs.detach())
silu_grad = torch.func.grad(lambda v: nn.functional.silu(v).sum())(inputs.detach())
check(torch.allclose(swish_grad, silu_grad), "torch.func.grad differentiates Swish too")


# %% [markdown]
# A **straight-through estimator** (STE) deliberately lies: `sign` has zero gradient almost
# everywhere, which would stop learning in a binarised network, so the STE passes the gradient
# through unchanged (here only where $|x| \le 1$). `gradcheck` rightly reports that this backward is
# not the derivative of the forward; that is the point of an STE, and why it is checked by its
# effect instead: gradients flow where plain `sign` gives none.

# %%
class SignSTE(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x: torch.Tensor) -> torch.Tensor:
        ctx.save_for_backward(x)
        return torch.sign(x)

    @staticmethod
    def backward(ctx, grad_out: torch.Tensor) -> torch.Tensor:
        (x,) = ctx.saved_tensors
        return grad_out * (x.abs() <= 1)


x = torch.tensor([-2.0, -0.5, 0.3, 1.5], requires_grad=True)
SignSTE.apply(x).sum().backward()
ste_grad = x.grad
print("STE gradient:", ste_grad)
x.grad = None
torch.sign(x).sum().backward()
print("sign gradient:", x.grad)
check(
    torch.equal(ste_grad, torch.tensor([0.0, 1.0, 1.0, 0.0])) and not x.grad.any(),
    "the STE passes gradients where |x| <= 1; sign itself passes none",
)
away_from_zero = torch.tensor([-0.7, 0.4, 0.9], dtype=torch.float64, requires_grad=True)
print(
    "gradcheck of the STE:",
    torch.autograd.gradcheck(SignSTE.apply, (away_from_zero,), raise_exception=False),
)


# %% [markdown]
# ## Give an `autograd.Function` a non-tensor argument: a gradient reversal layer
#
# Domain-adversarial training puts a **gradient reversal layer** between the features and a
# classifier of the domain: forward is the identity, backward multiplies the gradient by
# $-\lambda$, so the features learn to *confuse* that classifier. The Function takes a tensor
# and a Python number, and two rules follow. `backward` returns one value per input of
# `forward`, in order: a gradient for each tensor, `None` for anything else. And
# `save_for_backward` keeps tensors only: a number goes on `ctx` as an attribute. Like the STE,
# its backward is not the derivative of its forward on purpose, so it is checked by its effect.

# %%
class GradReverse(torch.autograd.Function):
    @staticmethod
    def forward(x: torch.Tensor, lam: float) -> torch.Tensor:
        return x.view_as(x)  # the same values, as a new tensor that autograd can follow

    @staticmethod
    def setup_context(ctx, inputs: tuple, output: torch.Tensor) -> None:
        _, lam = inputs
        ctx.lam = lam  # a Python number: an attribute, not save_for_backward

    @staticmethod
    def backward(ctx, grad_out: torch.Tensor) -> tuple[torch.Tensor, None]:
        return -ctx.lam * grad_out, None  # a gradient for x, None for lam


features = torch.randn(4, 3, requires_grad=True)
reversed_out = GradReverse.apply(features, 0.5)
(reversed_out * 2).sum().backward()
print("gradient through the reversal:", features.grad[0])
check(
    torch.equal(reversed_out, features) and torch.equal(features.grad, torch.full((4, 3), -1.0)),
    "the gradient comes back multiplied by -lambda (2 x -0.5); the forward values are unchanged",
)


# %% [markdown]
# ### Pitfall: `returned an incorrect number of gradients (expected 2, got 1)`
#
# A `backward` that returns only the tensor's gradient fails as soon as autograd calls it: `forward`
# took two inputs, so it wants two values back. Return `None` for the number (and for any
# tensor that needs no gradient).

# %%
class OneGradient(GradReverse):
    @staticmethod
    def backward(ctx, grad_out: torch.Tensor) -> torch.Tensor:
        return -ctx.lam * grad_out  # wrong: forward had two inputs


with expect_error(RuntimeError, match="incorrect number of gradients"):
    OneGradient.apply(features, 0.5).sum().backward()


# %% [markdown]
# ### Pitfall: `save_for_backward can only save variables, but argument 0 is of type float`
#
# `save_for_backward` takes tensors (or `None`) only: a saved tensor keeps its version counter,
# which is how autograd catches an in-place change between forward and backward. Keep numbers,
# strings and shapes on `ctx` as attributes, as `GradReverse` does.

# %%
class SavesTheNumber(GradReverse):
    @staticmethod
    def setup_context(ctx, inputs: tuple, output: torch.Tensor) -> None:
        _, lam = inputs
        ctx.save_for_backward(lam)  # wrong: a float


with expect_error(TypeError, match="can only save variables"):
    SavesTheNumber.apply(features, 0.5)

# %% [markdown]
# ### Pitfall: `gradcheck` fails on a correct backward in `float32`
#
# `gradcheck` compares your backward with finite differences, $(f(x + \epsilon) - f(x -
# \epsilon)) / 2\epsilon$ with $\epsilon = 10^{-6}$, and allows an error of $10^{-5}$ plus
# $10^{-3}$ of the value. Near 1, `float32` steps by about $1.2 \times 10^{-7}$, so $x \pm
# 10^{-6}$ is about 8 steps either side and the difference carries rounding errors of several
# percent: the same correct `Swish` fails, and `gradcheck` warns that the input "is not a double
# precision floating point". Check in `float64`, then use the Function in any dtype.

# %%
with expect_warning(UserWarning, match="not a double precision"):
    in_float32 = torch.autograd.gradcheck(
        Swish.apply, (inputs.detach().float().requires_grad_(),), raise_exception=False
    )
in_float64 = torch.autograd.gradcheck(Swish.apply, (inputs,), raise_exception=False)
print(f"gradcheck of Swish: float32 {in_float32}, float64 {in_float64}")
check(
    not in_float32 and in_float64,
    "the same correct backward fails gradcheck in float32 (with the warning) and passes in float64",
)

# %% [markdown]
# ## Old code you will meet
#
# | old form | write today | why |
# |---|---|---|
# | `Variable(x, requires_grad=True)` | `x.requires_grad_()` or `torch.tensor(..., requires_grad=True)` | `Variable` merged into `Tensor` in 0.4; it is a no-op wrapper now |
# | `Variable(x, volatile=True)` | `with torch.inference_mode():` (or `torch.no_grad()`) | `volatile` has no effect since 0.4 |
# | `y = x.data` | `y = x.detach()` | `.data` hides in-place changes from autograd: silently wrong gradients |
# | `loss.data[0]` | `loss.item()` | indexing a 0-d tensor warned in 0.4 and is an `IndexError` since 0.5 |
# | `x.grad.data.zero_()` | `optimizer.zero_grad()` or `x.grad = None` | `set_to_none` is the default and cheaper |

# %% [markdown]
# ## Exercises

# %% [markdown]
# ### Exercise 1 · A gradient checked by hand
#
# For $f(x, y) = x^2 y + \sin(y)$ at $(x, y) = (1.5, -0.5)$, compute both partial derivatives with
# autograd: build `f` from `x` and `y`, then call one method on it, so that `x.grad` and `y.grad`
# hold $\partial f/\partial x$ and $\partial f/\partial y$.
#
# <details><summary>Hint 1</summary>
#
# Write `f` with tensor operations on `x` and `y` only, so that autograd records every step. Which
# call walks the recorded graph back to the leaves?
# </details>
#
# <details><summary>Hint 2</summary>
#
# `torch` has its own `sin`, which autograd can follow (`math.sin` wants a Python number). The
# section "Tell leaf tensors from computed ones" calls the method that fills `.grad`.
# </details>

# %%
x = torch.tensor(1.5, requires_grad=True)
y = torch.tensor(-0.5, requires_grad=True)
f = ...  # f(x, y) as a tensor
# ...and one line that fills x.grad and y.grad

# %%
ch03.exercise_1(x, y, f)

# %% [markdown]
# #### Solution

# %% tags=["solution"]
# Solution: open it once you have tried. It uses its own names, so your answer stays as it is.
solution_x = x.detach().clone().requires_grad_()  # new leaves: your x.grad stays as it is
solution_y = y.detach().clone().requires_grad_()
solution_f = solution_x**2 * solution_y + torch.sin(solution_y)
solution_f.backward()
ch03.exercise_1(solution_x, solution_y, solution_f)

# %% [markdown]
# ### Exercise 2 · The second derivative of tanh
#
# With `torch.autograd.grad` and `create_graph=True`, compute $\tanh'(x)$ in `first` and
# $\tanh''(x)$ in `second` at `x = torch.linspace(-2, 2, 5)`, in one call per derivative.
#
# <details><summary>Hint 1</summary>
#
# `torch.autograd.grad` differentiates a scalar. Each output of `tanh` depends only on its own
# input, so the gradient of their sum holds every derivative at once. The second derivative is
# the derivative of the first.
# </details>
#
# <details><summary>Hint 2</summary>
#
# The section "Take derivatives of derivatives with `torch.autograd.grad`" shows both calls.
# `torch.autograd.grad` returns a tuple, one gradient per input, and only a call with
# `create_graph=True` returns a gradient you can differentiate again.
# </details>

# %%
x = torch.linspace(-2, 2, 5, requires_grad=True)
first = ...  # tanh'(x), keeping the graph so it can be differentiated again
second = ...  # tanh''(x)

# %%
ch03.exercise_2(x, first, second)

# %% [markdown]
# #### Solution

# %% tags=["solution"]
# Solution: open it once you have tried. It uses its own names, so your answer stays as it is.
(solution_first,) = torch.autograd.grad(torch.tanh(x).sum(), x, create_graph=True)
(solution_second,) = torch.autograd.grad(solution_first.sum(), x)
ch03.exercise_2(x, solution_first, solution_second)

# %% [markdown]
# ### Exercise 3 · Clip every parameter's gradient with hooks
#
# Register a hook on each parameter of `net` that clamps its gradient elementwise to
# `[-0.01, 0.01]` and keep the handles in `handles`. The check runs one backward pass whose raw
# gradients are far larger, then removes your hooks with the handles, runs the same batch again
# and compares.
#
# <details><summary>Hint 1</summary>
#
# A hook receives the gradient and may return a replacement. One hook per parameter, so loop over
# the parameters and keep what each registration returns.
# </details>
#
# <details><summary>Hint 2</summary>
#
# The section "Inspect and change gradients with tensor hooks" registers a hook that changes a
# gradient. `clamp` takes a lower and an upper bound; a list comprehension collects the handles.
# </details>

# %%
torch.manual_seed(1)
net = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 1))
handles = ...  # one hook handle per parameter

# %%
ch03.exercise_3(net, handles)

# %% [markdown]
# #### Solution

# %% tags=["solution"]
# Solution: open it once you have tried. It uses its own names, so your answer stays as it is.
solution_net = copy.deepcopy(net)  # a copy: hooks on it leave your net alone
solution_handles = [
    solution_p.register_hook(lambda g: g.clamp(-0.01, 0.01))
    for solution_p in solution_net.parameters()
]
ch03.exercise_3(solution_net, solution_handles)

# %% [markdown]
# ## Summary
#
# - Leaves (created with `requires_grad=True`) collect `.grad`; computed tensors carry a `grad_fn`;
#   `backward()` walks the graph and frees it.
# - A non-scalar output needs `backward(gradient=v)`, which computes $v^\top J$ (checked here
#   against a hand-computed Jacobian).
# - Gradients accumulate: clear them every step. `no_grad`/`inference_mode` stop tracking,
#   `model.eval()` changes layer behaviour: evaluate with both. Never use `.data`.
# - Hooks see and change gradients (bind loop variables with a default argument);
#   `autograd.grad(create_graph=True)` gives higher derivatives.
# - Update by hand under `no_grad()`; keep parameters leaves (`nn.Parameter`); find in-place
#   breakage with `detect_anomaly()`; check custom Functions with `gradcheck`.
#
# Next: [04 · nn.Module and nn.functional](04_modules_recipes.ipynb).
