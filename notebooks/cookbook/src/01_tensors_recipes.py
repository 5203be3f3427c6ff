# %% [markdown]
# # 01 · Tensor structure and math ops: recipes
#
# [![Open In Colab](https://colab.research.google.com/assets/colab-badge.svg)](https://colab.research.google.com/github/pytorch-cookbook/pytorch-cookbook/blob/main/notebooks/cookbook/01_tensors_recipes.ipynb)
#
# **The cookbook of chapter 01.** New to the topic? [The lesson](../01_tensors.ipynb) teaches it
# step by step on the course's running example. Here each recipe answers one task; the
# [recipe index](../RECIPES.md) and the [error index](../ERRORS.md) find the one you need.
#
# Tensors are the one data structure of PyTorch. After this notebook you can create tensors of any
# dtype on any device, move data to and from NumPy knowing when memory is shared, index, reshape,
# combine and split them, reduce and sort along a dimension, pick the right matrix product, use
# `torch.linalg` (down to PCA by SVD), build a k-nearest-neighbour classifier from `cdist` and
# `topk`, predict broadcast shapes, and replace Python loops with vectorised code that is
# measured to be faster.
#
# **Prerequisites:** Python and a little NumPy.
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

import numpy as np
import torch
import torch.nn.functional as F

from helpers.bench import compare
from helpers.check import check, expect_error
from helpers.env import setup
from helpers.exercises import ch01

device = setup(seed=0)
torch.set_printoptions(precision=4, sci_mode=False)

# %% [markdown]
# ## Create tensors from values, ranges and fill patterns
#
# `torch.tensor` copies data and infers the dtype: Python ints become `int64`, floats `float32`.
# Factory functions build tensors of a given shape without any data to copy.

# %%
a = torch.tensor([[1, 2, 3], [4, 5, 6]])
b = torch.tensor([1.0, 2.5])
print(a.dtype, a.shape, "|", b.dtype, b.shape)
print(torch.arange(0, 10, 3))  # end excluded, like range()
print(torch.linspace(0, 1, 5))  # 5 points, both ends included
print(torch.zeros(2, 3), torch.ones(2, dtype=torch.int32), torch.full((2, 2), 7.0), sep="\n")
print(torch.eye(3))
print(torch.diag(torch.tensor([1, 2, 3])))

# %% [markdown]
# `*_like` copies shape, dtype and device from another tensor; `fill_` (like every method ending in
# `_`) works in place.

# %%
template = torch.zeros(2, 3, dtype=torch.float64)
print(torch.ones_like(template))
print(torch.empty(2, 2).fill_(3.5))  # empty: uninitialised memory, fill it before use

# %% [markdown]
# ### Pitfall: `torch.Tensor(...)` is not `torch.tensor(...)`
#
# Old code often writes `torch.Tensor` with a capital T, the tensor class itself. Called on a list
# it makes the default float dtype (`float32` unless `torch.set_default_dtype` changed it),
# never `int64`; called on a number it reads the number as a
# **shape** and returns that many uninitialised values. `torch.tensor` infers the dtype and turns
# a number into a 0-dimensional tensor, so write that:

# %%
print("torch.tensor([1, 2]) dtype:", torch.tensor([1, 2]).dtype)
print("torch.Tensor([1, 2]) dtype:", torch.Tensor([1, 2]).dtype)
print("torch.tensor(3) shape:", tuple(torch.tensor(3).shape), "(a scalar holding 3)")
print("torch.Tensor(3) shape:", tuple(torch.Tensor(3).shape), "(3 uninitialised values)")
check(
    torch.Tensor([1, 2]).dtype == torch.float32 and torch.Tensor(3).shape == (3,),
    "torch.Tensor makes float32 from a list, and reads a number as a shape",
)

# %% [markdown]
# ## Draw random tensors from common distributions
#
# All draws come from torch's global generator, seeded in the setup cell. For randomness that does
# not disturb the rest of the notebook, pass your own `torch.Generator`.

# %%
g = torch.Generator().manual_seed(0)
print(torch.rand(3, generator=g))  # uniform on [0, 1)
print(torch.randn(3, generator=g))  # standard normal
print(torch.randint(0, 10, (5,), generator=g))  # integers in [0, 10)
print(torch.normal(mean=10.0, std=0.1, size=(3,), generator=g))
print(torch.randperm(6, generator=g))  # a random permutation: shuffle indices with it
print(torch.empty(4).uniform_(-1, 1, generator=g))
print(torch.bernoulli(torch.full((8,), 0.3), generator=g))

# %% [markdown]
# ## Choose and convert dtypes and devices
#
# `.to()` converts dtype, device or both (`x.float()`, `x.double()`, `x.cpu()` are shorthands).
# A conversion returns a new tensor, but when the tensor **already** has that dtype and device,
# `.to()` returns the tensor itself, not a copy: writing through the result changes the original.
# `copy=True` forces a new tensor.

# %%
x = torch.tensor([1, 2, 3])
print(x.to(torch.float32), x.float(), x.double().dtype, x.to(torch.bool))
print(torch.tensor([1.7, -1.7]).to(torch.int64))  # float -> int truncates toward zero
f = torch.ones(3)
same = f.to(torch.float32)  # f is float32 already: no conversion, the same tensor
same += 1
print("same object:", same is f, "| f changed too:", f.tolist())
fresh = f.to(torch.float32, copy=True)
print("copy=True:", fresh is not f and fresh.data_ptr() != f.data_ptr())
on_device = x.to(device)  # likewise x itself when x is already on `device`
check(same is f and f[0].item() == 2.0, ".to() to the dtype and device it has returns the tensor")

# %% [markdown]
# ## Create tensors on the right device and dtype from the start
#
# Every factory takes `dtype=` and `device=`: creating a tensor on the GPU directly skips a CPU
# tensor and a copy. `torch.set_default_dtype` changes the dtype float factories produce
# (`float32` unless changed); it is global, so set it back.

# %%
w = torch.zeros(2, 3, dtype=torch.float16, device=device)
print("dtype:", w.dtype, "| on the chosen device:", w.device.type == device.type)
torch.set_default_dtype(torch.float64)
print(  # ints unchanged
    "with float64 as default: tensor([1.0])",
    torch.tensor([1.0]).dtype,
    "| zeros(1)",
    torch.zeros(1).dtype,
    "| tensor([1])",
    torch.tensor([1]).dtype,
)
torch.set_default_dtype(torch.float32)
print("default dtype restored:", torch.get_default_dtype())

# %% [markdown]
# ## Know `float16` and `bfloat16`
#
# Both take 2 bytes instead of 4. `float16` has finer steps (10 mantissa bits) but overflows above
# 65,504; `bfloat16` keeps `float32`'s range with only 7 mantissa bits (2-3 significant digits).
# Mixed precision ([07](07_training_loop_recipes.ipynb#Train-in-mixed-precision-with-autocast-and-GradScaler,-unscaling-before-clipping)
# for the mechanics, [10](10_speedups_recipes.ipynb#Find-out-whether-bf16-pays-on-this-CPU) for the
# speed) computes in them and keeps the weights in `float32`.

# %%
for dt in (torch.float32, torch.float16, torch.bfloat16):
    info = torch.finfo(dt)
    third = torch.tensor(1 / 3, dtype=dt).item()
    print(f"{dt!s:15} {info.bits // 8} bytes  max {info.max:9.3g}  eps {info.eps:.1e}", end="")
    print(f"  1/3 → {third:.6f}")
print(torch.tensor(300.0, dtype=torch.float16) ** 2, torch.tensor(300.0, dtype=torch.bfloat16) ** 2)

# %% [markdown]
# ## Predict the dtype of mixed operations (type promotion)
#
# Mixing dtypes follows type promotion: the result takes the higher **category**
# (bool < integer < floating < complex). Within one category, only tensors with at least one
# dimension decide the size; Python numbers and 0-d tensors are weaker: they change the result
# only when they are of a higher category. That is why
#
# - `int32 + torch.tensor(5)` stays `int32` (a 0-d `int64` does not promote), while
#   `int32 + torch.tensor([5])` becomes `int64`;
# - `int32 + 2.5` becomes the default float dtype (a higher category);
# - `float16 * 1e5` stays `float16` and overflows to `inf`;
# - `uint8` `0 - 1` stays `uint8` and wraps around to 255.
#
# `torch.result_type(a, b)` answers the question without computing anything.

# %%
i32 = torch.tensor([1, 2], dtype=torch.int32)
print(
    "int32 + 0-dim int64:",
    (i32 + torch.tensor(5)).dtype,
    "| + 1-dim int64:",
    (i32 + torch.tensor([5])).dtype,
    "| + 2.5:",
    (i32 + 2.5).dtype,
)
print("x / 2:", (x / 2).dtype, "| x // 2:", (x // 2).dtype)  # true division gives a float
print(torch.tensor([1.0], dtype=torch.float16) * 1e5, torch.tensor([0], dtype=torch.uint8) - 1)
print(
    "result_type(int32 tensor, 2.5):",
    torch.result_type(i32, 2.5),
    "| promote_types(int32, float16):",
    torch.promote_types(torch.int32, torch.float16),
)
check(
    (i32 + torch.tensor(5)).dtype == torch.int32 and (i32 + torch.tensor([5])).dtype == torch.int64,
    "a 0-d tensor does not promote within its category; a 1-d tensor does",
)

# %% [markdown]
# ## Move data between NumPy and PyTorch, knowing when memory is shared
#
# `torch.from_numpy` and `.numpy()` share memory: a write through one is visible in the other.
# `torch.tensor(array)` always copies. `torch.as_tensor(array)` shares when it can (same dtype,
# CPU) and copies when it must (`as_tensor(array, dtype=other)` or `device="cuda"`). A CUDA tensor
# must come to the CPU (`.cpu()`) before `.numpy()`, and one that requires grad must be detached
# first.

# %%
arr = np.zeros(3)
shared = torch.from_numpy(arr)
copied = torch.tensor(arr)
arr[0] = 99
print("from_numpy sees the write:", shared.tolist(), "| torch.tensor copy:", copied.tolist())
back = shared.numpy()
back[1] = -1
print("tensor.numpy() shares too:", arr.tolist())
print("dtype kept:", torch.from_numpy(np.arange(3)).dtype, torch.from_numpy(np.zeros(1)).dtype)
maybe = torch.as_tensor(arr)  # float64 on CPU: shares
converted = torch.as_tensor(arr, dtype=torch.float32)  # a conversion: copies
arr[2] = 7
print("as_tensor shares:", maybe.tolist(), "| with dtype= it copied:", converted.tolist())

# %% [markdown]
# ### Pitfall: `At least one stride in the given numpy array is negative`
#
# NumPy views such as `a[::-1]` or `np.flip(a)` have negative strides; PyTorch tensors cannot, so
# `from_numpy` refuses them (image code that flips BGR to RGB with `[..., ::-1]` meets this).
# Pitfall cells run the failing line inside `with expect_error(...)`, a helper of the course: it
# prints the error's last line, `⛔ Type: message`, as Python would end a traceback, and lets the
# notebook go on; if the error does not happen, the cell fails. In your own code, just run the
# line.

# %%
with expect_error(ValueError):
    torch.from_numpy(np.arange(4)[::-1])

# %% [markdown]
# Copy first (`np.ascontiguousarray` or `.copy()`), or flip on the PyTorch side with
# `torch.flip`:

# %%
print(torch.from_numpy(np.arange(4)[::-1].copy()), torch.from_numpy(np.arange(4)).flip(0))

# %% [markdown]
# **What to notice:** NumPy's default float is `float64`; models use `float32`. Convert with
# `torch.from_numpy(a).float()` (one copy) and remember the copy no longer shares memory.

# %% [markdown]
# ### Pitfall: `Can't call numpy() on Tensor that requires grad`
#
# A model's output or a parameter is part of a graph; NumPy would lose it, so `.numpy()` refuses.

# %%
w = torch.ones(3, requires_grad=True)
doubled = w * 2
with expect_error(RuntimeError):
    doubled.numpy()

# %% [markdown]
# Cut the graph and bring the values to the CPU, spelled out or in one call (`force=True`,
# since torch 1.13):

# %%
spelled_out = doubled.detach().cpu().numpy()
forced = doubled.numpy(force=True)
print(
    spelled_out,
    forced,
    "| forced shares memory with the tensor:",
    np.shares_memory(forced, doubled.detach().numpy()),
)
check(np.array_equal(spelled_out, forced), "detach().cpu().numpy() and numpy(force=True) agree")

# %% [markdown]
# On the CPU both still share memory with the tensor (no copy). On a GPU `.numpy()` without
# `.cpu()` raises `TypeError: can't convert cuda:0 device type tensor to numpy. Use Tensor.cpu()
# to copy the tensor to host memory first.`, and `.cpu()` (or `force=True`) is a copy that waits
# for the GPU ([10](10_speedups_recipes.ipynb#Know-which-calls-make-the-CPU-wait-for-the-GPU)).

# %% [markdown]
# ## Get Python numbers out with `item` and `tolist`

# %%
scores = torch.tensor([[0.25, 0.5], [0.125, 1.0]])
print(scores.sum().item(), type(scores.sum().item()))
print(scores.tolist())

# %% [markdown]
# ### Pitfall: `a Tensor with 4 elements cannot be converted to Scalar` from `item()`

# %%
with expect_error(RuntimeError):
    scores.item()

# %% [markdown]
# `item()` is for one-element tensors (a loss, an accuracy). For many values use `tolist()`, or
# keep them as a tensor. `float(t)` and `int(t)` call the same conversion and say it in other
# words, with another exception class (`ValueError`, not `item()`'s `RuntimeError`: an
# `except RuntimeError` around `float(t)` does not catch it):

# %%
with expect_error(ValueError):
    float(scores)

# %% [markdown]
# ## Index and slice like NumPy
#
# Basic indexing (integers, slices, `...`, `None`) returns a **view**; advanced indexing (a list or
# tensor of indices, a boolean mask) returns a **copy**.

# %%
t = torch.arange(24).reshape(2, 3, 4)
print(t[1, 2, 3], t[0, :, 1], t[..., -1], sep="\n")  # ... stands for "all the other dims"
print("t[:, ::2, 1:3]:", t[:, ::2, 1:3].shape, "| t[None]:", t[None].shape)  # a new axis
print(t[0, [0, 2], [1, 3]])  # fancy indexing: elements (0,0,1) and (0,2,3)

# %% [markdown]
# ## Pick elements by index with `index_select`, `gather` and `take`
#
# - `index_select(dim, idx)`: whole slices along one dimension.
# - `gather(dim, idx)`: one element per position, `out[i][j] = src[i][idx[i][j]]` for `dim=1`;
#   the classic use is picking each row's score for its label.
# - `take(idx)`: indices into the flattened tensor.

# %%
scores = torch.tensor([[0.1, 0.7, 0.2], [0.5, 0.3, 0.2], [0.2, 0.2, 0.6]])
labels = torch.tensor([1, 0, 2])
print(scores.index_select(0, torch.tensor([0, 2])))
print(scores.gather(1, labels.unsqueeze(1)).squeeze(1))  # each row's score of its label
print(scores[torch.arange(3), labels])  # the same with fancy indexing
print(torch.take(scores, torch.tensor([0, 4, 8])))  # the diagonal, via flat indices

# %% [markdown]
# ## Select and edit by boolean masks
#
# A comparison gives a boolean tensor. `masked_select` and `t[mask]` return the selected values as
# a 1-D copy; `nonzero` returns their coordinates; `torch.where(cond, a, b)` picks elementwise;
# `masked_fill` replaces without changing the shape.

# %%
x = torch.tensor([[-2.0, 5.0, 0.5], [3.0, -1.0, 8.0]])
mask = x > 1
print(mask)
print(x[mask], torch.masked_select(x, mask))
print(mask.nonzero())  # one row of coordinates per True
print(torch.where(x > 1, x, torch.zeros_like(x)))
print(x.masked_fill(x < 0, float("-inf")))  # e.g. masking attention scores

# %% [markdown]
# ### Turn a list of indices into a boolean mask, and back
#
# Assign through the indices to build a mask; `nonzero` (or `torch.where(mask)[0]`) goes back.

# %%
picked = torch.tensor([3, 7, 2])
picked_mask = torch.zeros(10, dtype=torch.bool)
picked_mask[picked] = True  # indices -> mask
back_to_indices = picked_mask.nonzero().squeeze(1)  # mask -> indices, = torch.where(mask)[0]
print(picked_mask.int().tolist(), back_to_indices.tolist(), torch.where(picked_mask)[0].tolist())
check(
    torch.equal(back_to_indices, picked.sort().values) and picked_mask.sum().item() == len(picked),
    "indices -> mask -> indices gives the same indices, sorted",
)

# %% [markdown]
# The way back comes out **sorted**, and a repeated index counts once in the mask.

# %% [markdown]
# ## Write through indices with `index_fill`, `scatter` and assignment
#
# Indexing on the left of `=` writes in place into the original tensor. `scatter_(dim, idx, src)`
# is the inverse of `gather`: it writes `src` to the positions `idx` names.

# %%
x = torch.zeros(3, 4)
x[0, 1:3] = 1.0
x[x.sum(dim=1) == 0, -1] = 5.0  # boolean row mask, last column: one index expression
print(x)
print(torch.zeros(3, 4).index_fill(1, torch.tensor([0, 3]), -1.0))
print(torch.zeros(3, 4).scatter(1, torch.tensor([[2], [0], [3]]), 1.0))

# %% [markdown]
# ### Pitfall: `x[idx] += 1` with a repeated index adds only once
#
# `x[idx] += 1` reads `x[idx]`, adds, and writes back; a position that appears twice in `idx` is
# written twice with the same value. Counting (histograms, bincount by hand, scattering gradients)
# needs an accumulating write: `index_put_(..., accumulate=True)`, `index_add_` or `scatter_add_`.

# %%
idx = torch.tensor([0, 0, 2])
counts = torch.zeros(3)
counts[idx] += 1
print("x[idx] += 1:          ", counts.tolist())
print("index_put_ accumulate:", torch.zeros(3).index_put_((idx,), torch.ones(3), accumulate=True))
print("index_add_:           ", torch.zeros(3).index_add_(0, idx, torch.ones(3)))
print("scatter_add_:         ", torch.zeros(3).scatter_add_(0, idx, torch.ones(3)))
check(
    counts[0] == 1 and torch.zeros(3).index_add_(0, idx, torch.ones(3))[0] == 2,
    "a repeated index adds once with +=, twice with index_add_",
)

# %% [markdown]
# ### Pitfall: `t[mask][:, 1] = 5` writes nothing
#
# `t[mask]` is advanced indexing, so it returns a **copy**; the second indexing writes into that
# copy, which is then thrown away. No error, no change. Write with one index expression instead:
# `t[mask, 1] = 5`.

# %%
t = torch.zeros(3, 2)
rows = torch.tensor([True, False, True])
t[rows][:, 1] = 5  # writes into a temporary copy
print("chained:", t.tolist())
check(t.sum() == 0, "the chained write left t unchanged")
t[rows, 1] = 5
print("one expression:", t.tolist())
check(t[:, 1].tolist() == [5.0, 0.0, 5.0], "one index expression writes through")

# %% [markdown]
# ## Sum, average or max values by group with `scatter_reduce`
#
# Group-by on tensors (per-class sums, mean of the nodes of each graph, the maximum per segment):
# `scatter_reduce(dim, group, values, reduce)` sends each value to its group's slot and reduces
# there, with `"sum"`, `"mean"`, `"amax"`, `"amin"` or `"prod"`. This is what the separate
# `torch_scatter` package was installed for; it is built in.

# %%
values = torch.tensor([3.0, 1.0, 4.0, 1.0, 5.0, 9.0])
group = torch.tensor([0, 1, 0, 2, 1, 0])
n_groups = int(group.max()) + 1
sums = torch.zeros(n_groups).scatter_reduce(0, group, values, reduce="sum")
means = torch.zeros(n_groups).scatter_reduce(0, group, values, reduce="mean", include_self=False)
maxes = torch.zeros(n_groups).scatter_reduce(0, group, values, reduce="amax", include_self=False)
print(
    "sum", sums.tolist(), "| mean", [round(v, 4) for v in means.tolist()], "| max", maxes.tolist()
)
feats = torch.arange(12.0).reshape(6, 2)  # one feature row per value: mean row per group
pooled = torch.zeros(n_groups, 2).scatter_reduce(
    0, group.unsqueeze(1).expand_as(feats), feats, reduce="mean", include_self=False
)
print("mean feature row per group:", [[round(v, 4) for v in row] for row in pooled.tolist()])
by_loop = torch.stack([feats[group == g].mean(0) for g in range(n_groups)])
check(torch.allclose(pooled, by_loop), "scatter_reduce equals a loop over the groups")

# %% [markdown]
# **What to notice:** without `include_self=False` the starting zeros take part in the mean and
# the maximum (a group of negative values would get max 0). The index must have the values' shape,
# hence `expand_as` for rows. On a GPU the sum and the mean add in a varying order, so they are
# not bit-for-bit reproducible ([13](13_reproducibility_debugging_recipes.ipynb#Turn-on-deterministic-algorithms,-and-read-the-error-they-raise)
# tries `scatter_reduce` in deterministic mode).

# %% [markdown]
# ## Reshape with `view`, `reshape`, `squeeze`, `unsqueeze` and `flatten`
#
# One dimension may be `-1`: PyTorch infers it. `view` never copies and needs compatible strides
# ([02](02_contiguity_strides_recipes.ipynb) shows when it fails); `reshape` copies only when it must.

# %%
x = torch.arange(12)
print(
    "view(3, 4):",
    x.view(3, 4).shape,
    "| reshape(2, -1):",
    x.reshape(2, -1).shape,
    "| flatten(1):",
    x.reshape(2, 2, 3).flatten(1).shape,
)
batch = torch.zeros(1, 3, 1, 5)
print(
    "squeeze():",
    batch.squeeze().shape,
    "| squeeze(0):",
    batch.squeeze(0).shape,
    "| unsqueeze(-1):",
    batch.unsqueeze(-1).shape,
)

# %% [markdown]
# **What to notice:** `squeeze()` without a `dim` dropped the batch dimension too, because this
# batch holds one sample: code that works on batches of 32 then breaks on the last batch of 1.
# Always pass `dim` to `squeeze`.

# %% [markdown]
# ## Reorder dimensions with `transpose` and `permute` (NHWC → NCHW)
#
# Images from PIL, NumPy or TensorFlow are `N, H, W, C`; PyTorch's convolutions expect
# `N, C, H, W`. `permute` names the new order of all dimensions; `transpose` swaps two. A single
# `transpose(1, 3)` is **not** NHWC → NCHW: it swaps H and W as well and gives `N, C, W, H`. With
# square images the shapes agree, so nothing fails, and the model sees every image transposed.

# %%
nhwc = torch.arange(2 * 4 * 4 * 3).reshape(2, 4, 4, 3)  # N, H, W, C with H == W
nchw = nhwc.permute(0, 3, 1, 2)
swapped = nhwc.transpose(1, 3)
print("permute:", nchw.shape, "| transpose(1, 3):", swapped.shape)
print("zeros(2, 5).T:", torch.zeros(2, 5).T.shape)
print("same values:", torch.equal(nchw, swapped))
print("transpose(1, 3) gave N, C, W, H:", torch.equal(swapped, nchw.transpose(2, 3)))
check(not torch.equal(nchw, swapped), "transpose(1, 3) is not permute(0, 3, 1, 2)")

# %% [markdown]
# ## Combine with `cat` or `stack`, and split with `split` and `chunk`
#
# `cat` joins along an **existing** dimension (shapes must agree elsewhere); `stack` adds a
# **new** dimension (shapes must agree everywhere). Use `cat` to append rows to a batch, `stack`
# to make a batch out of single samples.

# %%
a, b = torch.zeros(2, 3), torch.ones(2, 3)
print(
    "cat:",
    torch.cat([a, b]).shape,
    "| cat(dim=1):",
    torch.cat([a, b], dim=1).shape,
    "| stack:",
    torch.stack([a, b]).shape,
)
x = torch.arange(10)
print(x.split(4))  # pieces of size 4 (the last is smaller)
print(x.split([2, 8]))  # explicit sizes
print(x.chunk(3))  # pieces of ceil(10 / 3) = 4: sizes 4, 4, 2 (and maybe fewer than 3 pieces)
print(x.tensor_split(3))  # exactly 3 pieces, sizes as equal as possible: 4, 3, 3

# %% [markdown]
# ### Pitfall: `stack expects each tensor to be equal size`

# %%
with expect_error(RuntimeError):
    torch.stack([torch.zeros(2, 3), torch.zeros(3, 3)])

# %% [markdown]
# `cat` would accept these two (they differ only along dim 0): `torch.cat(...).shape` is `(5, 3)`.

# %% [markdown]
# ### Pitfall: `zero-dimensional tensor (at position 0) cannot be concatenated`
#
# Collecting one number per step (a loss, a score) in a list and joining them at the end: `cat`
# joins along an existing dimension, and a 0-d tensor (what `loss` or `x.sum()` is) has none.

# %%
per_step = [torch.tensor(0.5), torch.tensor(0.25)]
with expect_error(RuntimeError):
    torch.cat(per_step)

# %% [markdown]
# `stack` adds the dimension, so it takes 0-d tensors and gives a vector; a list of 1-element
# tensors (shape `(1,)`) works with `cat` and gives a vector too, while `stack` of those gives
# shape `(n, 1)`:

# %%
ones = [torch.tensor([0.5]), torch.tensor([0.25])]
print(
    "stack(per_step):",
    torch.stack(per_step).shape,
    "| cat(ones):",
    torch.cat(ones).shape,
    "| stack(ones):",
    torch.stack(ones).shape,
)

# %% [markdown]
# ## Apply elementwise math, rounding and `clamp`

# %%
x = torch.tensor([-2.5, -0.5, 0.5, 1.5, 2.7])
print(x.abs(), x.exp().round(decimals=2), x.sign(), sep="\n")
print(x.round(), x.floor(), x.ceil(), x.trunc(), sep="\n")  # round: halves go to even
print(x.clamp(min=-1, max=1), x.clamp(min=0), (x % 2), sep="\n")

# %% [markdown]
# ## Reduce along a dimension with `dim` and `keepdim`
#
# `dim` names the dimension that **disappears**. `keepdim=True` keeps it with size 1, so the
# result broadcasts back against the input, as when normalising rows.

# %%
x = torch.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
print(x.sum(), x.sum(dim=0), x.mean(dim=1), x.std(dim=1), sep="\n")
# std and var divide by n - 1 (Bessel's correction) by default; NumPy divides by n.
print("std:", x[0].std().item(), "| correction=0:", f"{x[0].std(correction=0).item():.4f}")
print("np.std:", f"{np.std([1.0, 2.0, 3.0]):.4f}")
print(x.max(dim=1))  # values and indices
print(x.argmax(dim=1), x.prod(), x.amin(dim=0), sep="\n")
print(x / x.sum(dim=1, keepdim=True))  # each row sums to 1

# %% [markdown]
# ## Accumulate with cumulative ops

# %%
x = torch.tensor([3.0, 1.0, 4.0, 1.0, 5.0])
print(x.cumsum(0), x.cumprod(0), x.cummax(0).values, sep="\n")
print(torch.logcumsumexp(x, 0))

# %% [markdown]
# ## Sort and take the top k
#
# `sort` returns values and the indices that sort; `topk` returns the k largest (or smallest)
# without sorting everything.

# %%
x = torch.tensor([[9, 3, 7, 1], [2, 8, 4, 6]])
print(x.sort(dim=1, descending=True))
print(x.topk(2, dim=1))
print(x.argsort(dim=1))

# %% [markdown]
# ## Classify with k nearest neighbours using `cdist` and `topk`
#
# A complete classifier in five lines: distances from each test point to every training point
# (`cdist`), the k smallest (`topk(largest=False)`), a vote (`mode`). On the iris flowers that
# scikit-learn ships (no download). With more than 25 rows `cdist` uses a fast matrix-product
# formula whose rounding grows with the distance from the origin (see "Compute pairwise distances"
# below). Iris has exactly tied distances that such rounding can order differently, so a few
# neighbour lists change against the exact mode; the check below shows the predictions do not.

# %%
from sklearn.datasets import load_iris

iris = load_iris()
features = torch.tensor(iris.data, dtype=torch.float32)
species = torch.tensor(iris.target)
order = torch.randperm(len(features), generator=torch.Generator().manual_seed(0))
train, test = order[:120], order[120:]

distances = torch.cdist(features[test], features[train])  # (30, 120)
nearest = distances.topk(k=5, dim=1, largest=False).indices  # (30, 5) indices into train
predicted = species[train][nearest].mode(dim=1).values
accuracy = (predicted == species[test]).float().mean().item()
print(f"5-NN test accuracy on {len(test)} iris flowers: {accuracy:.3f}")
exact = torch.cdist(features[test], features[train], compute_mode="donot_use_mm_for_euclid_dist")
exact_nearest = exact.topk(k=5, dim=1, largest=False).indices
check(
    torch.equal(species[train][exact_nearest].mode(dim=1).values, predicted),
    "the exact distance mode predicts the same species",
)

# %% [markdown]
# ## Multiply matrices: `mul` vs `mm` vs `matmul` vs `bmm`
#
# - `*` / `mul`: elementwise, with broadcasting.
# - `mm`: 2-D × 2-D only.
# - `bmm`: a batch of matrices × a batch, both 3-D.
# - `@` / `matmul`: the general one: vectors, matrices, and batches with broadcasting.

# %%
a, b = torch.ones(2, 3), torch.ones(3, 4)
print("a * a:", (a * a).shape, "| mm(a, b):", torch.mm(a, b).shape, "| a @ b:", (a @ b).shape)
batch_a, batch_b = torch.ones(10, 2, 3), torch.ones(10, 3, 4)
print("bmm:", torch.bmm(batch_a, batch_b).shape, "| batch_a @ b:", (batch_a @ b).shape)
print("vector @ vector, a dot product:", (torch.ones(3) @ torch.ones(3)).item())

# %% [markdown]
# ### Pitfall: `mm: self must be a matrix`: `mm` is for 2-D tensors only

# %%
with expect_error(RuntimeError):
    torch.mm(batch_a, b)

# %% [markdown]
# Use `batch_a @ b` (or `torch.matmul`), which broadcasts `b` over the batch.

# %% [markdown]
# ## Name the dimensions of a product with `einsum`
#
# `torch.einsum` spells a product by its index letters: letters in both inputs and absent from
# the output are summed over. It states shapes where a chain of `transpose`, `unsqueeze` and `@`
# hides them: attention scores (`bqd,bkd->bqk`: each query with each key, per batch), or one
# bilinear form $x_i^\top W y_i$ per row of a batch (`bi,ij,bj->b`).

# %%
q, k = torch.randn(2, 5, 8), torch.randn(2, 7, 8)
scores = torch.einsum("bqd,bkd->bqk", q, k)
xb, W, yb = torch.randn(4, 3), torch.randn(3, 6), torch.randn(4, 6)
forms = torch.einsum("bi,ij,bj->b", xb, W, yb)
print("scores", tuple(scores.shape), "| bilinear forms", tuple(forms.shape))
check(
    torch.allclose(scores, q @ k.transpose(1, 2), atol=1e-5)
    and torch.allclose(forms, ((xb @ W) * yb).sum(dim=1), atol=1e-5),
    "einsum equals the matmul spelling of attention scores and bilinear forms",
)

# %% [markdown]
# ### Pool second-order features (bilinear pooling) with `einsum`
#
# Bilinear pooling (fine-grained image recognition) replaces a CNN's average pool by the average
# **outer product** of the feature vectors at all positions: `D` channels become a `D × D` matrix
# per image, then a signed square root and L2 normalisation.

# %%
feature_maps = torch.randn(2, 4, 3, 3, generator=torch.Generator().manual_seed(0))  # N, D, H, W
flat = feature_maps.flatten(2)  # (N, D, H·W): one D-vector per position
gram = torch.einsum("ndp,nep->nde", flat, flat) / flat.shape[2]  # average outer product
pooled_2nd = gram.flatten(1)  # (N, D·D)
pooled_2nd = F.normalize(pooled_2nd.sign() * (pooled_2nd.abs() + 1e-5).sqrt(), dim=1)
print("gram", tuple(gram.shape), "| pooled", tuple(pooled_2nd.shape))
check(
    torch.allclose(gram, flat @ flat.transpose(1, 2) / flat.shape[2], atol=1e-6)
    and torch.allclose(pooled_2nd.norm(dim=1), torch.ones(2)),
    "the einsum is the batched X·Xᵀ / positions; each pooled vector has norm 1",
)

# %% [markdown]
# ## Solve linear algebra with `torch.linalg`
#
# `torch.linalg` mirrors `numpy.linalg`. Check a decomposition by multiplying it back together.

# %%
A = torch.tensor([[4.0, 1.0], [2.0, 3.0]])
print("inverse:", torch.linalg.inv(A))
print("trace:", A.trace().item(), "det:", torch.linalg.det(A).item())
print(
    f"Frobenius norm: {torch.linalg.matrix_norm(A).item():.4f}",
    "L2 of a vector:",
    torch.linalg.vector_norm(torch.tensor([3.0, 4.0])).item(),
)
eigenvalues, eigenvectors = torch.linalg.eig(A)  # complex in general
print("eigenvalues:", eigenvalues)
print("eigh (symmetric, real):", torch.linalg.eigh(A @ A.T).eigenvalues)
Q, R = torch.linalg.qr(A)
print("QR multiplies back:", torch.allclose(Q @ R, A))
U, S, Vh = torch.linalg.svd(A)
print("SVD multiplies back:", torch.allclose(U @ torch.diag(S) @ Vh, A), "| S =", S)
print("solve Ax = b:", torch.linalg.solve(A, torch.tensor([1.0, 2.0])))

# %% [markdown]
# ## Reduce dimensions with PCA by SVD
#
# PCA is an SVD of the centred data: the rows of `Vh` are the principal directions and `S**2`
# is proportional to the variance each explains. Projected onto two directions, setosa separates
# from the others; versicolor and virginica overlap. We check the explained variance against
# scikit-learn's PCA.

# %%
import matplotlib.pyplot as plt
from sklearn.decomposition import PCA

centred = features - features.mean(dim=0)
U, S, Vh = torch.linalg.svd(centred, full_matrices=False)
projected = centred @ Vh[:2].T  # (150, 2)
explained = (S**2 / (S**2).sum())[:2]
print("explained variance ratio:", explained)
reference = PCA(n_components=2).fit(iris.data).explained_variance_ratio_
check(
    np.allclose(explained.numpy(), reference, atol=1e-4),
    "PCA by SVD explains the same variance as sklearn.decomposition.PCA",
)

fig, ax = plt.subplots(figsize=(5, 3.5))
for k, name in enumerate(iris.target_names):
    points = projected[species == k]
    ax.scatter(points[:, 0], points[:, 1], s=12, label=name)
ax.set(xlabel="first principal component", ylabel="second", title="Iris, PCA by SVD")
ax.legend()
plt.show()

# %% [markdown]
# ## Predict the shape of a broadcast
#
# Two shapes broadcast when, compared **from the right**, each pair of sizes is equal or one of
# them is 1 (a missing dimension counts as 1). The size-1 dimensions are stretched without copying.
# `torch.broadcast_shapes` answers without making tensors.

# %%
print("broadcast_shapes((8, 1, 6, 1), (7, 1, 5)):", torch.broadcast_shapes((8, 1, 6, 1), (7, 1, 5)))
column, row = torch.arange(3).reshape(3, 1), torch.arange(4)
print(column * 10 + row)  # (3, 1) with (4,) -> (3, 4)

# %% [markdown]
# ### Pitfall: `The size of tensor a (4) must match the size of tensor b (3)`

# %%
with expect_error(RuntimeError):
    torch.ones(3, 4) + torch.ones(3)

# %% [markdown]
# Sizes 4 and 3 meet at the right and neither is 1. To add one value per **row**, give the
# vector a trailing axis: `torch.ones(3, 4) + torch.ones(3)[:, None]`.

# %% [markdown]
# ## Replace Python loops with vectorised code
#
# A Python loop runs the interpreter once per element; a tensor op runs one compiled kernel for
# all of them. The same row norms of a 2,000 × 64 matrix, both ways, timed on one thread so the
# comparison is fair to the loop; `compare` shows each one's best time (the average call in its
# fastest block of repeated calls; timings vary run to run: typically the vectorised version is
# several hundred times faster):

# %% tags=["nbval-ignore-output"]
points = torch.randn(2000, 64)


def norms_loop(x: torch.Tensor) -> torch.Tensor:
    out = torch.empty(len(x))
    for i in range(len(x)):
        out[i] = (sum(v * v for v in x[i].tolist())) ** 0.5
    return out


times = compare(
    {"python loop": lambda: norms_loop(points), "vectorised": lambda: points.norm(dim=1)},
    threads=1,
)

# %%
check(
    torch.allclose(norms_loop(points), points.norm(dim=1), atol=1e-4),
    "the loop and the vectorised version agree",
)
speedup = times["python loop"] / times["vectorised"]
check(
    speedup > 20,
    "the vectorised version is at least 20× faster",
    measured=f"{speedup:.0f}×",
    timing=True,
)

# %% [markdown]
# ## Turn integer labels into one-hot vectors
#
# `F.one_hot` takes `int64` class indices; convert to float for losses or matrix products.
# Written out, it is a `scatter` of ones.

# %%
labels = torch.tensor([0, 2, 1, 2])
print(F.one_hot(labels, num_classes=3))
by_hand = torch.zeros(4, 3).scatter_(1, labels.unsqueeze(1), 1.0)
print("scatter_ by hand equals one_hot:", torch.equal(by_hand, F.one_hot(labels, 3).float()))

# %% [markdown]
# ## Compute pairwise distances with `cdist` and `pdist`
#
# `cdist(a, b)` gives every distance between rows of `a` and rows of `b`. `pdist(a)` gives each
# pair within `a` once, as a flat vector: the upper triangle of `cdist(a, a)` without the
# diagonal, in the order `torch.triu_indices(n, n, offset=1)` lists.

# %%
pts = torch.tensor([[0.0, 0.0], [3.0, 4.0], [6.0, 8.0]])
full = torch.cdist(pts, pts)
print(full)
print(F.pdist(pts))
i, j = torch.triu_indices(3, 3, offset=1)
print("pdist is cdist's upper triangle:", torch.allclose(full[i, j], F.pdist(pts)))

# %% [markdown]
# Compare the two with `allclose`, not `equal`: they compute differently. When either input has
# more than 25 rows, `cdist`'s default `compute_mode="use_mm_for_euclid_dist_if_necessary"`
# switches to `sqrt(|a|² + |b|² - 2 a·b)`, a matrix product that is much faster but cancels
# badly for points far from the origin: a point's distance to itself is no longer 0.
# `compute_mode="donot_use_mm_for_euclid_dist"` subtracts first and stays exact, at a cost.

# %% tags=["nbval-ignore-output"]
far = torch.randn(30, 3, generator=torch.Generator().manual_seed(0)) + 1000
fast = torch.cdist(far, far)
exact = torch.cdist(far, far, compute_mode="donot_use_mm_for_euclid_dist")
print(f"largest self-distance: matrix-product formula {fast.diagonal().max().item():.3g}")
print(f"largest self-distance: subtracting first      {exact.diagonal().max().item():.3g}")
i, j = torch.triu_indices(30, 30, offset=1)
print("pdist equals the exact cdist:", torch.allclose(exact[i, j], F.pdist(far)))

# %%
check(
    fast.diagonal().max() > 1e-3 and exact.diagonal().max() == 0,
    "above 25 rows, default cdist loses precision far from the origin; the exact mode does not",
)

# %% [markdown]
# ## Old code you will meet
#
# | old form | write today | why |
# |---|---|---|
# | `torch.range(0, 5)` | `torch.arange(0, 6)` | deprecated (warns): `range` includes the end, and without `dtype=` gives the default float dtype even for integer arguments |
# | `torch.FloatTensor(2, 3)`, `x.type(torch.FloatTensor)` | `torch.empty(2, 3)`, `x.to(torch.float32)` | legacy constructors are fixed to one dtype on the CPU (they reject `dtype=` and a GPU `device=`), and `FloatTensor(3)` is 3 uninitialised values while `FloatTensor([3])` is the value `[3.]` |
# | `torch.eig(A, eigenvectors=True)`, `torch.symeig(A)` | `torch.linalg.eig(A)`, `torch.linalg.eigh(A)` | removed: they raise in PyTorch 2 |
# | `torch.solve(B, A)`, `torch.lstsq`, `torch.matrix_rank`, `torch.cholesky`, `torch.qr` | `torch.linalg.solve(A, B)`, `torch.linalg.lstsq`, `torch.linalg.matrix_rank`, `torch.linalg.cholesky`, `torch.linalg.qr` | removed: they raise; note `solve`'s argument order changed |
# | `U, S, V = torch.svd(A)` | `U, S, Vh = torch.linalg.svd(A, full_matrices=False)` | the old form returns `V`, the new one `Vh = V.mT` |
# | `torch.norm(x, p)` | `torch.linalg.vector_norm(x, ord)`, `torch.linalg.matrix_norm(A)` | `torch.norm` is kept for old code but its behaviour depends on argument types |
# | `torch.chain_matmul(a, b, c)` | `torch.linalg.multi_dot([a, b, c])` | deprecated, warns |
# | `torch.set_default_tensor_type('torch.DoubleTensor')`, `('torch.cuda.FloatTensor')` | `torch.set_default_dtype(torch.float64)`; `torch.set_default_device("cuda")` or `with torch.device("cuda"):` | deprecated since 2.1: warns and names both replacements |
# | `x.resize(4, 1)` | `x.reshape(4, 1)` (`x.resize_(...)` only to change the storage's size) | warns `non-inplace resize is deprecated` |

# %% [markdown]
# ## Exercises

# %% [markdown]
# ### Exercise 1 · From an image batch to a normalised model input
#
# `images` is a batch of 4 RGB images as a NumPy `uint8` array of shape `(4, 32, 32, 3)`. Fill in
# `x`, a `float32` tensor of shape `(4, 3, 32, 32)` with values in `[0, 1]`, and `normalised`, `x`
# with each channel at mean 0 and standard deviation 1 over the batch (one mean and std per
# channel). Then run the check cell below it.
#
# <details><summary>Hint 1</summary>
#
# Three steps: share the array with PyTorch, put the dimensions in the order a model expects,
# change the dtype and the range. The reduction for the statistics keeps one value per channel.
# </details>
#
# <details><summary>Hint 2</summary>
#
# The section on views says which method reorders dimensions without regrouping the numbers.
# `mean` and `std` accept a tuple of dimensions, and `keepdim=True` keeps the result
# broadcastable against `x`.
# </details>

# %%
images = np.random.default_rng(0).integers(0, 256, size=(4, 32, 32, 3), dtype=np.uint8)
x = ...  # float32, shape (4, 3, 32, 32), values in [0, 1]
normalised = ...  # each channel of x at mean 0 and std 1 over the batch

# %%
ch01.exercise_1(images, x, normalised)

# %% [markdown]
# #### Solution

# %% tags=["solution"]
# Solution: open it once you have tried. It uses its own names, so your answer stays as it is.
solution_x = torch.from_numpy(images).permute(0, 3, 1, 2).float() / 255
solution_mean = solution_x.mean(dim=(0, 2, 3), keepdim=True)
solution_std = solution_x.std(dim=(0, 2, 3), keepdim=True)
ch01.exercise_1(images, solution_x, (solution_x - solution_mean) / solution_std)

# %% [markdown]
# ### Exercise 2 · Top-3 accuracy
#
# Given `logits` of shape `(batch, classes)` and integer `targets`, fill in `top3_accuracy`, the
# fraction of samples whose target is among the three highest logits, without a Python loop.
#
# <details><summary>Hint 1</summary>
#
# First find, for each row, which classes are the three highest; then ask, row by row, whether
# the target is one of them.
# </details>
#
# <details><summary>Hint 2</summary>
#
# There is a reduction that returns the `k` largest values and their indices. Comparing a
# `(batch, 3)` tensor with a `(batch, 1)` one broadcasts; `any` over a dimension and a mean of
# floats finish the job.
# </details>

# %%
logits = torch.tensor(
    [
        [0.1, 2.0, 0.3, 0.5, 1.0],
        [3.0, 0.1, 0.2, 0.3, 0.4],
        [0.5, 0.4, 0.3, 0.2, 0.1],
        [0.0, 0.1, 0.9, 0.8, 0.7],
    ]
)
targets = torch.tensor([4, 3, 1, 1])  # ranks 2, 3, 2 and 4 in their rows
top3_accuracy = ...  # a number between 0 and 1

# %%
ch01.exercise_2(logits, targets, top3_accuracy)

# %% [markdown]
# #### Solution

# %% tags=["solution"]
# Solution: open it once you have tried. It uses its own names, so your answer stays as it is.
solution_top3 = logits.topk(3, dim=1).indices  # (batch, 3)
solution_hits = (solution_top3 == targets.unsqueeze(1)).any(dim=1)
ch01.exercise_2(logits, targets, solution_hits.float().mean().item())

# %% [markdown]
# ### Exercise 3 · Pairwise squared distances without `cdist`
#
# Fill in `sq_dists`, a function `sq_dists(a, b)` that takes `a` of shape `(n, d)` and `b` of
# shape `(m, d)` and returns the `(n, m)` squared distances, using
# $\lVert a_i - b_j\rVert^2 = \lVert a_i\rVert^2 + \lVert b_j\rVert^2 - 2\,a_i \cdot b_j$ and
# broadcasting, without calling `cdist`. Rounding can make the formula slightly negative where a
# distance is 0: return no negative values. The check compares your function with
# `torch.cdist(a, b) ** 2` and tries it on a hundred points against themselves.
#
# <details><summary>Hint 1</summary>
#
# Work out the shape of each of the three terms for `n` rows of `a` and `m` rows of `b`: one is
# a column, one a row, one a matrix.
# </details>
#
# <details><summary>Hint 2</summary>
#
# A sum of squares over `dim=1` gives the norms; `keepdim=True` on one side makes it a column.
# The matrix of dot products is one `@`. A tensor method sets a floor under every value.
# </details>

# %%
sq_dists = ...  # a function (a, b) -> (n, m) tensor, e.g. one you write with `def`

# %%
ch01.exercise_3(sq_dists)


# %% [markdown]
# #### Solution

# %% tags=["solution"]
# Solution: open it once you have tried. It uses its own names, so your answer stays as it is.
def solution_sq_dists(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """The (n, m) matrix of squared distances between the rows of a and b."""
    aa = (a * a).sum(dim=1, keepdim=True)  # (n, 1)
    bb = (b * b).sum(dim=1)  # (m,)
    return (aa + bb - 2 * a @ b.T).clamp(min=0)  # clamp: rounding can go slightly negative


ch01.exercise_3(solution_sq_dists)

# %% [markdown]
# ## Summary
#
# - Create with `tensor` (copies, infers dtype) or factories (`zeros`, `arange`, `randn`,
#   `*_like`); convert with `.to(dtype / device)`, which returns a new tensor unless nothing
#   changes (then the same tensor; `copy=True` forces a copy).
# - `from_numpy` and `.numpy()` share memory; `torch.tensor(array)` copies.
# - Basic indexing returns views, advanced indexing (index tensors, masks) returns copies;
#   `gather`/`scatter` pick and write one element per position.
# - `dim` names the dimension a reduction removes; `keepdim=True` keeps it for broadcasting, and
#   shapes broadcast when they match or are 1, compared from the right.
# - `@` is the general matrix product; `torch.linalg` holds the decompositions, and the
#   vectorised version of a loop was measured here to be at least 20× faster.
#
# Next: [02 · Contiguity and strides](02_contiguity_strides_recipes.ipynb), what a view really is.
