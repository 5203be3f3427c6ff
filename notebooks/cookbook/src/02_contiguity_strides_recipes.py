# %% [markdown]
# # 02 · Contiguity and strides: recipes
#
# [![Open In Colab](https://colab.research.google.com/assets/colab-badge.svg)](https://colab.research.google.com/github/pytorch-cookbook/pytorch-cookbook/blob/main/notebooks/cookbook/02_contiguity_strides_recipes.ipynb)
#
# **The cookbook of chapter 02.** New to the topic? [The lesson](../02_contiguity_strides.ipynb) teaches it
# step by step on the course's running example. Here each recipe answers one task; the
# [recipe index](../RECIPES.md) and the [error index](../ERRORS.md) find the one you need.
#
# A tensor is a view onto a block of memory: a storage, an offset into it, a shape and a stride per
# dimension. Once you can read those four things you can tell which operations copy and which do
# not, why `view` sometimes fails, what `contiguous()` costs, how `expand` makes a big tensor out of
# no memory at all, how to build sliding windows without copying, and when memory layout makes an
# operation slower (measured here, not claimed).
#
# **Prerequisites:** [01](../01_tensors.ipynb).
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

import io

import torch

from helpers.bench import compare
from helpers.check import check, expect_error, expect_warning
from helpers.env import setup
from helpers.exercises import ch02
from helpers.plot import show_layout

device = setup(seed=0)
torch.set_printoptions(precision=4, sci_mode=False)

# %% [markdown]
# ## Read a tensor's storage, offset, shape and strides
#
# `stride()[d]` is how many **elements** to skip in storage to move one step along dimension `d`.
# For a contiguous (row-major) `2 × 3` tensor: 3 to the next row, 1 to the next column. The element
# at `[i, j]` lives at `storage_offset() + i * stride(0) + j * stride(1)`.

# %%
x = torch.arange(6.0).reshape(2, 3)
print("shape", tuple(x.shape), "stride", x.stride(), "offset", x.storage_offset())
print("storage:", x.untyped_storage().nbytes(), "bytes =", x.numel(), "×", x.element_size())
i, j = 1, 2
flat = x.flatten()
print(
    "x[i, j]:",
    x[i, j].item(),
    "| storage[offset + i·stride(0) + j·stride(1)]:",
    flat[x.storage_offset() + i * x.stride(0) + j * x.stride(1)].item(),
)


# %% [markdown]
# `data_ptr()` is the address of the tensor's first element. Addresses change every run, so we
# compare them rather than print them. One small helper answers "do these share memory?":

# %%
def shares_storage(a: torch.Tensor, b: torch.Tensor) -> bool:
    """True when a and b are views of the same block of memory."""
    return a.untyped_storage().data_ptr() == b.untyped_storage().data_ptr()


row = x[1]
print("x[1] shares x's storage:", shares_storage(row, x), "| offset:", row.storage_offset())
print("its first element is 3 floats in:", row.data_ptr() - x.data_ptr() == 3 * 4)

# %% [markdown]
# A picture of the same storage seen three ways: `x`, its transpose and a column slice. Each grid
# cell shows the storage index the element reads; the strip below is the storage itself.

# %%
import matplotlib.pyplot as plt

x34 = torch.arange(12.0).reshape(3, 4)
show_layout({"x": x34, "x.t()": x34.t(), "x[:, 1:3]": x34[:, 1:3]})
plt.show()

# %% [markdown]
# ## Tell which operations return views
#
# Slicing, `view`, `transpose`, `permute`, `narrow`, `expand`, `squeeze`/`unsqueeze`, `t()`,
# `.T`/`.mT`, `diagonal`, and the pieces of `split`, `chunk` and `unbind` only compute new
# shape, strides and offset: they share storage and cost nothing (an in-place change to a piece
# changes the original). Most other operations allocate. PyTorch's
# [Tensor Views](https://pytorch.org/docs/stable/tensor_view.html) page lists them all.

# %%
x = torch.arange(12.0).reshape(3, 4)
ops = {
    "x[:, 1:3]": x[:, 1:3],
    "x.view(4, 3)": x.view(4, 3),
    "x.t()": x.t(),
    "x.narrow(1, 1, 2)": x.narrow(1, 1, 2),
    "x[0].expand(3, 4)": x[0].expand(3, 4),
    "x.diagonal()": x.diagonal(),
    "x.split(2, 1)[1]": x.split(2, 1)[1],
    "x[[0, 2]]": x[[0, 2]],
    "x.flip(0)": x.flip(0),
    "x * 1": x * 1,
}
print(f"{'operation':<20}{'view?':<8}{'contiguous?':<13}stride")
for name, y in ops.items():
    print(f"{name:<20}{shares_storage(x, y)!s:<8}{y.is_contiguous()!s:<13}{y.stride()}")

# %% [markdown]
# **What to notice:** views are often **not contiguous**: their elements are not laid out one after
# the other in row-major order. `x.t()` has stride `(1, 4)`: walking along a row now jumps 4
# elements. Advanced indexing (`x[[0, 2]]`) and `flip` copy.

# %% [markdown]
# ## Fix "view size is not compatible" with `reshape` or `contiguous`
#
# `view` never copies, so it can only re-describe memory whose strides fit the new shape. That is
# a condition on strides, not on contiguity: a non-contiguous slice can often be viewed (merging or
# splitting dimensions that are laid out evenly works), while a transpose flattened to one
# dimension cannot.

# %%
cols = x[:, 1:3]
print("contiguous:", cols.is_contiguous(), "| view(3, 2, 1):", tuple(cols.view(3, 2, 1).shape))

# %%
xt = x.t()
with expect_error(RuntimeError):
    xt.view(12)

# %% [markdown]
# `reshape` returns a view when it can and copies when it must; `contiguous()` makes the row-major
# copy explicitly. Both give the same values:

# %%
print(xt.reshape(12))
print("equal to contiguous().view(12):", torch.equal(xt.reshape(12), xt.contiguous().view(12)))
print("reshape copied here:", not shares_storage(xt.reshape(12), x))
print("but not on contiguous x:", shares_storage(x.reshape(12), x))

# %% [markdown]
# Whether `reshape` returns a view or a copy is not part of its contract: it depends on the
# input's strides. So never write through the result of `reshape` expecting to change the input
# (it does for `x`, not for `xt`); use `view` when you need a view, or assign back explicitly.

# %% [markdown]
# ## Know when `contiguous()` copies
#
# `contiguous()` returns the tensor itself when it already is contiguous (free), and a new
# row-major copy otherwise.

# %%
print("already contiguous -> same object:", x.contiguous() is x)
c = xt.contiguous()
print("transposed -> copy:", not shares_storage(c, xt), "| new stride:", c.stride())

# %% [markdown]
# ## Broadcast without memory using `expand` (and when to `repeat`)
#
# `expand` sets stride 0 on the expanded dimensions: every "row" is the same memory. `repeat`
# really copies. A 1,000 × 1,000 expanded tensor costs the storage of 1,000 floats.

# %%
base = torch.arange(1000.0)
expanded = base.expand(1000, 1000)
repeated = base.repeat(1000, 1)
print("expanded stride:", expanded.stride(), "| repeated stride:", repeated.stride())
print(
    "storage bytes: expanded",
    expanded.untyped_storage().nbytes(),
    "| repeated",
    repeated.untyped_storage().nbytes(),
)
print("same values:", torch.equal(expanded, repeated))

# %% [markdown]
# ### Pitfall: `unsupported operation: more than one element of the written-to tensor refers to a single memory location`
#
# Many elements of an expanded tensor are one memory location, so an in-place write is refused:

# %%
with expect_error(RuntimeError):
    expanded.add_(1)

# %% [markdown]
# Write into a real copy instead: `expanded.clone().add_(1)` or `repeated.add_(1)`. Reading an
# expanded tensor is always fine; that is how broadcasting works inside PyTorch.

# %% [markdown]
# ## Slide a window over data with `unfold` and `as_strided`
#
# `unfold(dim, size, step)` returns a view of all windows: no copy, just a new dimension with the
# original stride. A moving average of 3 becomes a `mean` over that dimension.

# %%
series = torch.tensor([1.0, 2.0, 6.0, 2.0, 1.0, 5.0, 9.0])
windows = series.unfold(0, 3, 1)  # (5, 3): windows of 3, step 1
print(windows)
print("a view:", shares_storage(windows, series), "| stride:", windows.stride())
print("moving average:", windows.mean(dim=1))

# %% [markdown]
# `as_strided(size, stride, offset)` builds any such view by hand. It is checked against the
# storage's bounds (a view that would reach past the end raises), but it has two real traps:
#
# - it ignores the input's strides: the new strides describe the underlying storage, so on a
#   transposed tensor it reads memory order, not what the tensor shows. (The offset defaults to
#   the input's; an explicit `storage_offset` counts from the start of the storage.)
# - overlapping windows (stride smaller than the window) share memory, so an in-place write into
#   them changes several windows at once; PyTorch cannot always detect the overlap, and the result
#   of such a write depends on the order the kernel happens to use. Only read them. This holds for
#   `unfold` too whenever its step is smaller than its size: its windows overlap the same way.
#
# Prefer `unfold` when it fits: it cannot go out of bounds and follows the input's strides.

# %%
by_hand = series.as_strided(size=(5, 3), stride=(1, 1))
print("as_strided by hand equals unfold:", torch.equal(by_hand, windows))
image = torch.arange(16.0).reshape(4, 4)
patches = image.unfold(0, 2, 2).unfold(1, 2, 2)  # non-overlapping 2×2 patches
print("patches:", patches.shape)
print(patches[1, 0])  # the bottom-left patch
print("as_strided on x.t() reads storage order:", x34.t().as_strided((2, 2), (1, 1)).tolist())
print("while x.t() shows:", x34.t()[:2, :2].tolist())

# %% [markdown]
# ### Pitfall: `setStorage: ... out of bounds for storage of size`
#
# A window that reaches past the end of the storage is refused, not read:

# %%
with expect_error(RuntimeError):
    series.as_strided(size=(5, 3), stride=(1, 1), storage_offset=3)

# %% [markdown]
# ## Remember that writing through a view changes the base
#
# A view is another window onto the same memory. Writing through it writes into the original,
# which is what you want for `x[:, 0] = 0` and a surprise when a function you call does it.

# %%
x = torch.zeros(2, 3)
col = x[:, 1]
col += 5  # in place: writes through the view
print(x)


def normalise_first_row_(t: torch.Tensor) -> None:
    row = t[0]
    row /= row.sum()  # modifies the caller's tensor


data = torch.tensor([[1.0, 3.0], [2.0, 2.0]])
normalise_first_row_(data)
print(data)

# %% [markdown]
# ## Copy deliberately with `clone`, `detach` and `detach().clone()`
#
# | call | new memory? | keeps the autograd graph? |
# |---|---|---|
# | `t.clone()` | yes | yes (gradients flow back to `t`) |
# | `t.detach()` | **no**, shares storage | no |
# | `t.detach().clone()` | yes | no: an independent copy |
# | `torch.tensor(t)` | yes | no; it warns and recommends `t.detach().clone()` |
#
# The last two lines run `torch.tensor(w)` inside `expect_warning`, a course helper like
# `expect_error`: it prints the warning in one line, `⚠ Category: message`, and stops the notebook
# if the warning does not come. In your own code, just run the line.

# %%
w = torch.ones(3, requires_grad=True)
cloned, detached, independent = w.clone(), w.detach(), w.detach().clone()
for name, y in {"clone": cloned, "detach": detached, "detach().clone()": independent}.items():
    grad_fn = y.grad_fn.name() if y.grad_fn else None
    print(f"{name:<18} shares memory: {shares_storage(y, w)!s:<6} grad_fn: {grad_fn}")
with expect_warning(UserWarning, match="recommended to use"):
    torch.tensor(w)

# %% [markdown]
# ## Measure a tensor's memory, and free a big storage behind a small view
#
# A tensor's own size is `numel() * element_size()`; the memory it keeps alive is its whole
# storage. A small slice of a large tensor keeps all of it alive until you `clone()` the slice.

# %%
big = torch.zeros(1000, 1000)
first_row = big[0]
print("tensor size:", first_row.numel() * first_row.element_size(), "bytes")
print("storage kept alive:", first_row.untyped_storage().nbytes(), "bytes")
small = big[0].clone()
print("after clone():", small.untyped_storage().nbytes(), "bytes")


# %% [markdown]
# `torch.save` saves storages, not tensors: saving a small view writes its whole storage to disk.
# Clone the view first.

# %%
def saved_bytes(t: torch.Tensor) -> int:
    buffer = io.BytesIO()
    torch.save(t, buffer)
    return buffer.getbuffer().nbytes


print(f"torch.save(big[0]):         {saved_bytes(first_row):>9,} bytes")
print(f"torch.save(big[0].clone()): {saved_bytes(small):>9,} bytes")
check(saved_bytes(first_row) > 100 * saved_bytes(small), "a saved view carries its whole storage")

# %% [markdown]
# ## Store images channels-last with `memory_format`
#
# `channels_last` keeps the logical shape `N, C, H, W` but lays memory out as `N, H, W, C`: the
# channels of one pixel are adjacent. Convolutions on GPUs with tensor cores (and on many CPUs) run
# faster in this layout; [10](10_speedups_recipes.ipynb#Measure-each-trick-of-the-training-step) measures
# that.

# %%
batch = torch.randn(8, 3, 32, 32)
cl = batch.to(memory_format=torch.channels_last)
print("shape unchanged:", tuple(cl.shape))
print("strides NCHW:", batch.stride(), "| channels_last:", cl.stride())
print(
    "is_contiguous():",
    cl.is_contiguous(),
    "| in channels_last:",
    cl.is_contiguous(memory_format=torch.channels_last),
)
conv = torch.nn.Conv2d(3, 16, 3).to(memory_format=torch.channels_last)
print("a conv keeps the format:", conv(cl).is_contiguous(memory_format=torch.channels_last))

# %% [markdown]
# ### Pitfall: `contiguous()` turns channels-last data back into `N, C, H, W`
#
# `contiguous()` means row-major contiguous: on a channels-last tensor it **copies** into the
# default layout, silently undoing the format. Pass the format you want to keep:

# %%
back = cl.contiguous()
kept = cl.contiguous(memory_format=torch.channels_last)
print("cl.contiguous() still channels_last:", back.is_contiguous(memory_format=torch.channels_last))
check(
    not back.is_contiguous(memory_format=torch.channels_last) and kept is cl,
    "contiguous() drops channels_last; contiguous(memory_format=channels_last) keeps it, free",
)

# %% [markdown]
# ## Find out why `channels_last` made a step slower
#
# Moving a model to `channels_last` is one line, and sometimes the step gets slower, not faster:
# a CPU user measured one (pytorch/pytorch#172205, "a classic channels-last performance cliff"
# in the maintainer's words), and diffusers now calls a ResNet block's `.contiguous()` only in
# training, after it slowed inference on CPUs (huggingface/diffusers#12977). Check three
# things, in this order:
#
# 1. **A layer that converts back.** A `.contiguous()` left in a layer (often before a `.view()`)
#    turns its output back into N, C, H, W, as the pitfall above showed, and the next
#    convolution converts it to channels-last again: two copies of the activation per layer,
#    every step. The cells below find such a layer.
# 2. **The device's kernels.** Channels-last is the layout of the fast convolution kernels on GPUs
#    with tensor cores (float16, bfloat16, TF32) and of oneDNN on many CPUs. Where those kernels
#    are not used, the plain N, C, H, W ones can be as fast or faster: PyTorch's maintainers said
#    channels-last pays for float16 on Volta and newer GPUs (pytorch/pytorch#44943), and grouped
#    convolutions were once tens of times slower in it on a V100 (pytorch/pytorch#34977).
# 3. **Your model on your device.** Small layers, additions and normalisations decide too: time
#    the step both ways, as below on the CPU and in
#    [10's ladder](10_speedups_recipes.ipynb#Stack-the-tricks:-the-ladder) on any device.
#
# The model: four blocks of a depthwise convolution (one filter per channel, as in MobileNet and
# ConvNeXt), batch norm and ReLU; the `tidy` blocks end with the `.contiguous()` of old code. A
# forward hook on each convolution and each block records the layout of its output.

# %%
import os
from collections.abc import Callable

from torch import nn
from torch.nn import functional as F
from torch.profiler import ProfilerActivity, profile


class Block(nn.Module):
    """Depthwise convolution, batch norm, ReLU; with ``tidy``, the output made contiguous."""

    def __init__(self, channels: int, tidy: bool = False) -> None:
        super().__init__()
        self.conv = nn.Conv2d(channels, channels, 3, padding=1, groups=channels, bias=False)
        self.norm = nn.BatchNorm2d(channels)
        self.tidy = tidy

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = F.relu(self.norm(self.conv(x)))
        return x.contiguous() if self.tidy else x


def small_net(
    tidy: bool = False, layout: torch.memory_format = torch.contiguous_format
) -> nn.Sequential:
    """A first convolution, four blocks and a linear head, in ``layout``; seeded."""
    torch.manual_seed(0)
    blocks = [Block(128, tidy) for _ in range(4)]
    head = [nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(128, 2)]
    net = nn.Sequential(nn.Conv2d(3, 128, 3, padding=1), *blocks, *head)
    return net.to(memory_format=layout)


def layouts(model: nn.Module, x: torch.Tensor) -> list[str]:
    """The layout of each convolution's and each block's output, in the order they run."""
    seen: list[str] = []

    def record(module: nn.Module, inputs: tuple, output: torch.Tensor) -> None:
        last = output.is_contiguous(memory_format=torch.channels_last)
        seen.append(f"{type(module).__name__}: {'channels_last' if last else 'N, C, H, W'}")

    layers = [m for m in model.modules() if isinstance(m, Block | nn.Conv2d)]
    hooks = [m.register_forward_hook(record) for m in layers]
    model(x)
    for hook in hooks:
        hook.remove()
    return seen


images = torch.randn(32, 3, 16, 16).to(memory_format=torch.channels_last)
clean = layouts(small_net(layout=torch.channels_last), images)
tidy = layouts(small_net(tidy=True, layout=torch.channels_last), images)
for name, seen in (("clean", clean), ("tidy", tidy)):  # from the first block on
    print(f"{name}:", " → ".join(seen[1:5]), "→ …")
keeps_layout = all("N, C, H, W" not in s for s in clean)  # oneDNN's kernels keep it
if keeps_layout:
    check(
        sum(s == "Block: N, C, H, W" for s in tidy) == 4
        and all(s == "Conv2d: channels_last" for s in tidy if s.startswith("Conv2d")),
        "in the tidy model each block hands N, C, H, W on; the next convolution converts back",
    )
else:
    print("this build's convolutions return N, C, H, W: channels_last changes nothing here")


# %% [markdown]
# In the first line the activations stay channels-last from end to end. In the second, each
# block's output is N, C, H, W and the next convolution's output channels-last again: the
# convolution copied its input into its own layout, and `.contiguous()` copied it back. The
# profiler ([10](10_speedups_recipes.ipynb#Profile-one-training-step-before-optimising-anything))
# counts those copies (`aten::copy_`) in one training step, forward and backward:

# %%
def training_step(
    tidy: bool = False, layout: torch.memory_format = torch.contiguous_format
) -> Callable[[], float]:
    """One SGD step of ``small_net(tidy, layout)`` on the images, as a function that returns
    the step's loss."""
    model = small_net(tidy, layout)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    x, y = images.contiguous(memory_format=layout), torch.randint(0, 2, (32,))

    def step() -> float:
        loss = F.cross_entropy(model(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        return loss.item()

    return step


os.environ.setdefault("KINETO_LOG_LEVEL", "6")  # the profiler's C++ log lines: errors only


def copies_in_a_step(step: Callable[[], float]) -> int:
    """How many copies (``aten::copy_``) one call of ``step`` makes, after a first call."""
    step()
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        step()
    return sum(e.count for e in prof.key_averages() if e.key == "aten::copy_")


copies = {
    "channels_last": copies_in_a_step(training_step(layout=torch.channels_last)),
    "channels_last, tidy blocks": copies_in_a_step(training_step(True, torch.channels_last)),
}
added = copies["channels_last, tidy blocks"] - copies["channels_last"]
print(f"the tidy blocks add {added} copies to each training step")  # the totals vary by CPU
if keeps_layout:
    check(
        copies["channels_last, tidy blocks"] >= copies["channels_last"] + 2 * 4,
        "the tidy blocks add at least two copies each to every training step",
    )

# %% [markdown]
# What the copies cost, and whether channels-last pays at all for this model, is the machine's.
# The time of a training step on this CPU, N, C, H, W against both channels-last models (each
# the fastest of several calls), and what it says here:

# %% tags=["nbval-ignore-output"]
variants = {  # name: (tidy, layout)
    "N, C, H, W": (False, torch.contiguous_format),
    "channels_last": (False, torch.channels_last),
    "channels_last, tidy blocks": (True, torch.channels_last),
}
steps = compare({name: training_step(*variant) for name, variant in variants.items()})
for name in ("channels_last", "channels_last, tidy blocks"):
    speed = steps["N, C, H, W"] / steps[name]
    verdict = "faster" if speed > 1.1 else "slower" if speed < 0.9 else "about as fast"
    print(f"{name} on this CPU: {speed:.2f}× the speed of N, C, H, W, {verdict}")

# %%
first_losses = [training_step(*variant)() for variant in variants.values()]
check(
    max(first_losses) - min(first_losses) < 1e-5,
    "all three compute the same loss: the layout changes the order in memory, not the maths",
)

# %% [markdown]
# **What to notice:** the layouts, and the copies the tidy blocks add (about two each), are the
# same wherever oneDNN's convolutions run (on x86 CPUs), and the hook finds the layer that causes
# them: one whose output leaves the format. Whether they turn channels-last from a gain into a
# loss depends on the machine: a depthwise convolution does little work per value it reads, so
# copies weigh much here, and the two verdict lines above say what they did on this CPU. The fix is to delete the `.contiguous()`; where
# a `.view()` needed it, `reshape()` or `flatten()` works on either layout, and a layer that truly
# needs one layout can ask for it: `x.contiguous(memory_format=torch.channels_last)`.

# %% [markdown]
# ## Measure what non-contiguous data costs
#
# The same logical 2048 × 2048 matrix, once row-major (`c`) and once as the transpose of a
# row-major matrix (`t`, non-contiguous). Three kinds of operation, each timed on one thread with
# warm-up and the fastest of many repeats (`helpers.bench`), so the numbers measure memory
# access rather than how the work is spread over cores. The clock is the thread's own CPU time
# (`cpu_time=True`): the time the thread waits while another program has the core is not
# counted. By the wall clock, on a machine with more busy programs than cores, calls of a few
# milliseconds are interrupted almost every time, and two equal calls can come out far apart.
#
# - **Elementwise, one layout**: `t.exp()` produces its output in the input's layout (same
#   strides), so it walks both in memory order. Layout should not matter.
# - **Elementwise, mixed layouts**: in `c + c.t()`, one operand is read along rows and the other
#   down columns; every read of the second jumps 2048 floats (8 KiB), so most reads miss the cache.
# - **A scan along the strided dimension**: `cumsum(dim=1)` must go along each row in order; in
#   `t` consecutive elements of a row are 8 KiB apart.

# %%
n = 2048
c = torch.randn(n, n)
t = torch.randn(n, n).t()  # same shape, not contiguous
print("c:", c.is_contiguous(), c.stride(), "| t:", t.is_contiguous(), t.stride())
print("t.exp() keeps t's layout:", t.exp().stride())

# %% tags=["nbval-ignore-output"]
print("elementwise, one layout")
exp = compare({"c.exp()": lambda: c.exp(), "t.exp()": lambda: t.exp()}, threads=1, cpu_time=True)
print("elementwise, mixed layouts")
add = compare({"c + c": lambda: c + c, "c + c.t()": lambda: c + c.t()}, threads=1, cpu_time=True)
print("scan along dim 1")
scan = compare(
    {
        "c.cumsum(1)": lambda: c.cumsum(1),
        "t.cumsum(1)": lambda: t.cumsum(1),
        "t.contiguous().cumsum(1)": lambda: t.contiguous().cumsum(1),
    },
    threads=1,
    cpu_time=True,
)
exp_ratio = exp["t.exp()"] / exp["c.exp()"]
add_ratio = add["c + c.t()"] / add["c + c"]
scan_ratio = scan["t.cumsum(1)"] / scan["c.cumsum(1)"]
copy_first = scan["t.contiguous().cumsum(1)"] / scan["t.cumsum(1)"]
print(f"vs contiguous: exp {exp_ratio:.2f}×, mixed add {add_ratio:.1f}×, cumsum {scan_ratio:.1f}×")
print(f"copy first, then cumsum: {copy_first:.2f}× the time of the strided cumsum")

# %% [markdown]
# The line above gives this machine's ratios: `exp` near 1×, while the mixed-layout add and the
# strided `cumsum` are several times slower, by amounts that vary with the CPU and its caches.
# The checks below state the claims with a wide margin, so they hold on a slow or busy machine
# too:

# %%
check(
    1 / 1.5 < exp_ratio < 1.5,
    "an elementwise op on one layout costs about the same (within 1.5×)",
    measured=f"{exp_ratio:.2f}×",
    timing=True,
)
check(
    add_ratio > 3,
    "adding a tensor to its transpose is at least 3× slower than c + c",
    measured=f"{add_ratio:.1f}×",
    timing=True,
)
check(
    scan_ratio > 1.5,
    "a cumsum along the strided dimension is at least 1.5× slower",
    measured=f"{scan_ratio:.1f}×",
    timing=True,
)

# %% [markdown]
# **What to notice:** layout matters when an operation reads memory out of order: operands in
# different layouts, and scans along the strided dimension (`cumsum`, measured here). Other
# operations along the strided dimension (`softmax`, `sort`) pay too, but by amounts that vary
# with the kernel, the shape and the machine. A plain reduction such as `sum(dim=1)` may or may not be slower: PyTorch's reduction
# kernel picks its iteration order from the strides, so the cost comes and goes with the shape
# and the machine (that is why it is not measured here). Copying with `contiguous()` first costs
# a full pass over memory, and the last timing line shows whether that paid here: below 1×, the
# copy plus a contiguous `cumsum` beat the strided `cumsum` on a single use (the copy reads memory
# in large blocks, the strided scan jumps 8 KiB per element); near or above 1×, it pays only when
# the copied data is used more than once. Which one you get depends on the CPU's caches, which is
# why it is printed and not checked.

# %% [markdown]
# ## Old code you will meet
#
# | old form | write today | why |
# |---|---|---|
# | `x.storage()` | `x.untyped_storage()` | `TypedStorage` is deprecated and warns |
# | `torch.tensor(t)` to copy a tensor | `t.detach().clone()` (or `t.clone()` to keep the graph) | it copies without the autograd graph, and warns to say so |
# | `y = x.data` to get a tensor without history | `y = x.detach()` | `.data` hides in-place changes from autograd ([03](03_autograd_recipes.ipynb)) |
# | `x.contiguous().view(shape)` everywhere | `x.reshape(shape)` | `reshape` copies only when it has to |
# | `sys.getsizeof(t.storage())` for a tensor's size | `t.nbytes` (the tensor), `t.untyped_storage().nbytes()` (the memory it keeps alive) | measures a Python object, not the tensor's bytes, and `storage()` warns `TypedStorage is deprecated` |

# %% [markdown]
# ## Exercises

# %% [markdown]
# ### Exercise 1 · Predict the strides
#
# For `x = torch.zeros(2, 3, 4)`, fill in the strides of `x`, `x.permute(2, 0, 1)`, `x[:, 1]`,
# `x[..., ::2]` and `x.expand(5, 2, 3, 4)` in `predicted` (a tuple each) before running anything.
# The check compares each with `.stride()` of the expression in its key.
#
# <details><summary>Hint 1</summary>
#
# Start from the strides of `x` itself: in row-major order, how many elements do you skip to move
# one step along the last dimension, the middle one, the first one? Then ask, view by view, what
# the operation does to that list.
# </details>
#
# <details><summary>Hint 2</summary>
#
# The sections "Read a tensor's storage, offset, shape and strides", "Tell which operations return
# views" and "Broadcast without memory using `expand`" show what reordering dimensions, indexing
# with a number, stepping and expanding do to the strides.
# </details>

# %%
x = torch.zeros(2, 3, 4)
predicted = {
    "x": ...,
    "x.permute(2, 0, 1)": ...,
    "x[:, 1]": ...,
    "x[..., ::2]": ...,
    "x.expand(5, 2, 3, 4)": ...,
}

# %%
ch02.exercise_1(x, predicted)

# %% [markdown]
# #### Solution

# %% tags=["solution"]
# Solution: open it once you have tried. It uses its own names, so your answer stays as it is.
solution_predicted = {
    "x": (12, 4, 1),
    "x.permute(2, 0, 1)": (1, 12, 4),  # the old strides, reordered
    "x[:, 1]": (12, 1),  # the indexed dimension disappears
    "x[..., ::2]": (12, 4, 2),  # a step multiplies the stride
    "x.expand(5, 2, 3, 4)": (0, 12, 4, 1),  # a new leading dimension of stride 0
}
ch02.exercise_1(x, solution_predicted)

# %% [markdown]
# ### Exercise 2 · A moving maximum without a loop
#
# Fill in `moving_max`, the maximum over every window of 4 consecutive values of `signal` (step
# 1, so the windows are `signal[0:4]`, `signal[1:5]`, ...), with no Python loop.
#
# <details><summary>Hint 1</summary>
#
# Think in two steps: first a tensor that holds every window (one per row), then one reduction
# over each window.
# </details>
#
# <details><summary>Hint 2</summary>
#
# The section "Slide a window over data with `unfold` and `as_strided`" builds the windows as a
# view. Of the reductions, `max(dim=...)` returns values and indices; `amax` returns only values.
# </details>

# %%
signal = torch.tensor([3.0, 1.0, 4.0, 1.0, 5.0, 9.0, 2.0, 6.0, 5.0, 3.0])
moving_max = ...  # one maximum per window, shape (7,)

# %%
ch02.exercise_2(signal, moving_max)

# %% [markdown]
# #### Solution

# %% tags=["solution"]
# Solution: open it once you have tried. It uses its own names, so your answer stays as it is.
solution_windows = signal.unfold(0, 4, 1)  # (7, 4): one window per row, a view
ch02.exercise_2(signal, solution_windows.amax(dim=1))

# %% [markdown]
# ### Exercise 3 · A function that does not touch its input
#
# `normalise_first_row_` above changed the caller's tensor. Fill in `normalise_first_row`, a
# function of `t` that returns a new tensor whose first row sums to 1 (the other rows as they
# are) and leaves `t` unchanged. The check calls it on `[[1, 3], [2, 2]]` and then looks at the
# tensor it passed in.
#
# <details><summary>Hint 1</summary>
#
# `normalise_first_row_` wrote through `t[0]`, a view: every write reached the caller's memory.
# Where could the function write instead?
# </details>
#
# <details><summary>Hint 2</summary>
#
# The section "Copy deliberately with `clone`, `detach` and `detach().clone()`" says which call
# gives new memory. Once the function owns its memory, an in-place division is harmless.
# </details>

# %%
normalise_first_row = ...  # a function t -> new tensor, e.g. one you write with `def`

# %%
ch02.exercise_3(normalise_first_row)


# %% [markdown]
# #### Solution

# %% tags=["solution"]
# Solution: open it once you have tried. It uses its own names, so your answer stays as it is.
def solution_normalise_first_row(t: torch.Tensor) -> torch.Tensor:
    """A copy of t whose first row sums to 1."""
    out = t.clone()  # new memory: writing to it leaves t alone
    out[0] /= out[0].sum()
    return out


ch02.exercise_3(solution_normalise_first_row)

# %% [markdown]
# ## Summary
#
# - A tensor is storage + offset + shape + strides; views change only the last three and cost
#   nothing.
# - Views after `transpose`/`permute`/steps are usually non-contiguous. `view` needs strides that
#   fit the new shape (not contiguity); `reshape` copies when it must, so never write through its
#   result; `contiguous()` copies only when needed.
# - `expand` repeats data with stride 0 and no memory; in-place writes into it are refused.
# - `unfold` gives sliding windows as a view; writes through any view reach the base tensor, and
#   a small view keeps its whole storage alive (and `torch.save` writes it) until you `clone()`.
# - Measured here: an elementwise op costs about the same in either layout (within 1.5×; its
#   output keeps the input's layout), while mixing layouts (`c + c.t()`) or scanning along the strided dimension is slower.
#
# Next: [03 · Autograd](03_autograd_recipes.ipynb), how PyTorch computes gradients.
