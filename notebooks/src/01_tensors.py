# %% [markdown]
# # 01 · Tensor structure and math ops
#
# [![Open In Colab](https://colab.research.google.com/assets/colab-badge.svg)](https://colab.research.google.com/github/pytorch-cookbook/pytorch-cookbook/blob/main/notebooks/01_tensors.ipynb)
#
# Tensors are the one data structure of PyTorch. After this notebook you can create tensors of any
# dtype on any device, move data to and from NumPy knowing when memory is shared, index, reshape,
# combine and split them, reduce and sort along a dimension, pick the right matrix product, use
# `torch.linalg` (down to PCA by SVD and a k-nearest-neighbour classifier), predict broadcast
# shapes, and replace Python loops with vectorised code that is measured to be faster.
#
# **Prerequisites:** Python and a little NumPy. **Run time:** about 15 s on a laptop CPU.

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
from helpers.check import check
from helpers.env import setup

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
# `.to()` converts dtype, device or both, and returns a **new** tensor (the original is unchanged).
# Integer division and mixing dtypes follow type promotion rules: the result takes the "larger"
# category (bool < int < float < complex).

# %%
x = torch.tensor([1, 2, 3])
print(x.to(torch.float32), x.float(), x.double().dtype, x.to(torch.bool))
print((x / 2).dtype, (x // 2).dtype, (x + 0.5).dtype)  # true division always gives a float
print(torch.tensor([1.7, -1.7]).to(torch.int64))  # float -> int truncates toward zero
on_device = x.to(device)  # a no-op returning x itself when x is already there
print(on_device.device.type == device.type, torch.get_default_dtype())

# %% [markdown]
# ## Move data between NumPy and PyTorch, knowing when memory is shared
#
# `torch.from_numpy` and `.numpy()` share memory: a write through one is visible in the other.
# `torch.tensor(array)` and `torch.as_tensor(array, dtype=other)` copy. A CUDA tensor must come to
# the CPU (`.cpu()`) before `.numpy()`, and one that requires grad must be detached first.

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

# %% [markdown]
# **What to notice:** NumPy's default float is `float64`; models use `float32`. Convert with
# `torch.from_numpy(a).float()` (one copy) and remember the copy no longer shares memory.

# %% [markdown]
# ## Get Python numbers out with `item` and `tolist`

# %%
scores = torch.tensor([[0.25, 0.5], [0.125, 1.0]])
print(scores.sum().item(), type(scores.sum().item()))
print(scores.tolist())

# %% [markdown]
# ### Pitfall: `item()` on more than one element

# %% tags=["raises-exception"]
scores.item()

# %% [markdown]
# `item()` is for one-element tensors (a loss, an accuracy). For many values use `tolist()`, or
# keep them as a tensor.

# %% [markdown]
# ## Index and slice like NumPy
#
# Basic indexing (integers, slices, `...`, `None`) returns a **view**; advanced indexing (a list or
# tensor of indices, a boolean mask) returns a **copy**.

# %%
t = torch.arange(24).reshape(2, 3, 4)
print(t[1, 2, 3], t[0, :, 1], t[..., -1], sep="\n")  # ... stands for "all the other dims"
print(t[:, ::2, 1:3].shape, t[None].shape)  # steps, ranges, a new axis
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
# ## Write through indices with `index_fill`, `scatter` and assignment
#
# Indexing on the left of `=` writes in place into the original tensor. `scatter_(dim, idx, src)`
# is the inverse of `gather`: it writes `src` to the positions `idx` names.

# %%
x = torch.zeros(3, 4)
x[0, 1:3] = 1.0
x[x.sum(dim=1) == 0, -1] = 5.0  # boolean row mask, last column
print(x)
print(torch.zeros(3, 4).index_fill(1, torch.tensor([0, 3]), -1.0))
print(torch.zeros(3, 4).scatter(1, torch.tensor([[2], [0], [3]]), 1.0))

# %% [markdown]
# ## Reshape with `view`, `reshape`, `squeeze`, `unsqueeze` and `flatten`
#
# One dimension may be `-1`: PyTorch infers it. `view` never copies and needs compatible strides
# ([02](02_contiguity_strides.ipynb) shows when it fails); `reshape` copies only when it must.

# %%
x = torch.arange(12)
print(x.view(3, 4).shape, x.reshape(2, -1).shape, x.reshape(2, 2, 3).flatten(1).shape)
batch = torch.zeros(1, 3, 1, 5)
print(batch.squeeze().shape, batch.squeeze(0).shape, batch.unsqueeze(-1).shape)

# %% [markdown]
# ## Reorder dimensions with `transpose` and `permute` (NHWC → NCHW)
#
# Images from PIL, NumPy or TensorFlow are `N, H, W, C`; PyTorch's convolutions expect
# `N, C, H, W`. `permute` names the new order of all dimensions; `transpose` swaps two.

# %%
nhwc = torch.zeros(8, 32, 32, 3)
nchw = nhwc.permute(0, 3, 1, 2)
print(nchw.shape, nhwc.transpose(1, 3).shape, torch.zeros(2, 5).T.shape)

# %% [markdown]
# ## Combine with `cat` or `stack`, and split with `split` and `chunk`
#
# `cat` joins along an **existing** dimension (shapes must agree elsewhere); `stack` adds a
# **new** dimension (shapes must agree everywhere). Use `cat` to append rows to a batch, `stack`
# to make a batch out of single samples.

# %%
a, b = torch.zeros(2, 3), torch.ones(2, 3)
print(torch.cat([a, b]).shape, torch.cat([a, b], dim=1).shape, torch.stack([a, b]).shape)
x = torch.arange(10)
print(x.split(4))  # pieces of size 4 (the last is smaller)
print(x.split([2, 8]))  # explicit sizes
print(x.chunk(3))  # 3 pieces of near-equal size

# %% [markdown]
# ### Pitfall: `stack` needs equal shapes

# %% tags=["raises-exception"]
torch.stack([torch.zeros(2, 3), torch.zeros(3, 3)])

# %% [markdown]
# `cat` would accept these two (they differ only along dim 0): `torch.cat(...).shape` is `(5, 3)`.

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
# scikit-learn ships (no download):

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

# %% [markdown]
# ## Multiply matrices: `mul` vs `mm` vs `matmul` vs `bmm`
#
# - `*` / `mul`: elementwise, with broadcasting.
# - `mm`: 2-D × 2-D only.
# - `bmm`: a batch of matrices × a batch, both 3-D.
# - `@` / `matmul`: the general one: vectors, matrices, and batches with broadcasting.

# %%
a, b = torch.ones(2, 3), torch.ones(3, 4)
print((a * a).shape, torch.mm(a, b).shape, (a @ b).shape)
batch_a, batch_b = torch.ones(10, 2, 3), torch.ones(10, 3, 4)
print(torch.bmm(batch_a, batch_b).shape, (batch_a @ b).shape)  # matmul broadcasts b
print((torch.ones(3) @ torch.ones(3)).item())  # vector @ vector = dot product

# %% [markdown]
# ### Pitfall: `mm` is for 2-D tensors only

# %% tags=["raises-exception"]
torch.mm(batch_a, b)

# %% [markdown]
# Use `batch_a @ b` (or `torch.matmul`), which broadcasts `b` over the batch.

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
# is proportional to the variance each explains. Projected onto two directions, the iris
# species separate. We check the explained variance against scikit-learn's PCA.

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
print(torch.broadcast_shapes((8, 1, 6, 1), (7, 1, 5)))
column, row = torch.arange(3).reshape(3, 1), torch.arange(4)
print(column * 10 + row)  # (3, 1) with (4,) -> (3, 4)

# %% [markdown]
# ### Pitfall: trailing dimensions that do not match

# %% tags=["raises-exception"]
torch.ones(3, 4) + torch.ones(3)

# %% [markdown]
# Sizes 4 and 3 meet at the right and neither is 1. To add one value per **row**, give the
# vector a trailing axis: `torch.ones(3, 4) + torch.ones(3)[:, None]`.

# %% [markdown]
# ## Replace Python loops with vectorised code
#
# A Python loop runs the interpreter once per element; a tensor op runs one compiled kernel for
# all of them. The same row norms of a 2,000 × 64 matrix, both ways, timed on one thread so the
# comparison is fair to the loop (timings vary run to run; typically the vectorised version is
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
check(speedup > 20, "the vectorised version is at least 20× faster", measured=f"{speedup:.0f}×")

# %% [markdown]
# ## Turn integer labels into one-hot vectors
#
# `F.one_hot` takes `int64` class indices; convert to float for losses or matrix products.
# Written out, it is a `scatter` of ones.

# %%
labels = torch.tensor([0, 2, 1, 2])
print(F.one_hot(labels, num_classes=3))
by_hand = torch.zeros(4, 3).scatter_(1, labels.unsqueeze(1), 1.0)
print(torch.equal(by_hand, F.one_hot(labels, 3).float()))

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
print(torch.equal(full[i, j], F.pdist(pts)))

# %% [markdown]
# ## Old code you will meet
#
# | old form | write today | why |
# |---|---|---|
# | `torch.range(0, 5)` | `torch.arange(0, 6)` | deprecated: `range` included the end and always gave floats |
# | `torch.FloatTensor(2, 3)`, `x.type(torch.FloatTensor)` | `torch.empty(2, 3)`, `x.to(torch.float32)` | legacy constructors ignore `device`/`dtype` and are easy to misuse |
# | `torch.eig(A, eigenvectors=True)`, `torch.symeig(A)` | `torch.linalg.eig(A)`, `torch.linalg.eigh(A)` | removed: they raise in PyTorch 2 |
# | `torch.solve(B, A)`, `torch.lstsq`, `torch.matrix_rank`, `torch.cholesky`, `torch.qr` | `torch.linalg.solve(A, B)`, `torch.linalg.lstsq`, `torch.linalg.matrix_rank`, `torch.linalg.cholesky`, `torch.linalg.qr` | removed: they raise; note `solve`'s argument order changed |
# | `U, S, V = torch.svd(A)` | `U, S, Vh = torch.linalg.svd(A, full_matrices=False)` | the old form returns `V`, the new one `Vh = V.mT` |
# | `torch.norm(x, p)` | `torch.linalg.vector_norm(x, ord)`, `torch.linalg.matrix_norm(A)` | `torch.norm` is kept for old code but its behaviour depends on argument types |
# | `torch.chain_matmul(a, b, c)` | `torch.linalg.multi_dot([a, b, c])` | deprecated, warns |

# %% [markdown]
# ## Exercises

# %% [markdown]
# ### Exercise 1: from an image batch to a normalised model input
#
# `images` is a batch of 4 RGB images as a NumPy `uint8` array of shape `(4, 32, 32, 3)`. Turn it
# into a `float32` tensor of shape `(4, 3, 32, 32)` with values in `[0, 1]`, then normalise each
# channel to mean 0 and standard deviation 1 over the batch (one mean and std per channel).

# %%
images = np.random.default_rng(0).integers(0, 256, size=(4, 32, 32, 3), dtype=np.uint8)

# %% tags=["solution"]
x = torch.from_numpy(images).permute(0, 3, 1, 2).float() / 255
mean = x.mean(dim=(0, 2, 3), keepdim=True)
std = x.std(dim=(0, 2, 3), keepdim=True)
normalised = (x - mean) / std
print(normalised.shape, normalised.dtype)
assert torch.allclose(normalised.mean(dim=(0, 2, 3)), torch.zeros(3), atol=1e-5)
assert torch.allclose(normalised.std(dim=(0, 2, 3)), torch.ones(3), atol=1e-5)

# %% [markdown]
# ### Exercise 2: top-3 accuracy
#
# Given `logits` of shape `(batch, classes)` and integer `targets`, compute the fraction of
# samples whose target is among the three highest logits, without a Python loop.

# %%
logits = torch.tensor(
    [
        [0.1, 2.0, 0.3, 0.5, 1.0],
        [3.0, 0.1, 0.2, 0.3, 0.4],
        [0.5, 0.4, 0.3, 0.2, 0.1],
        [0.0, 0.1, 0.9, 0.8, 0.7],
    ]
)
targets = torch.tensor([4, 2, 1, 0])

# %% tags=["solution"]
top3 = logits.topk(3, dim=1).indices  # (batch, 3)
hits = (top3 == targets.unsqueeze(1)).any(dim=1)
top3_accuracy = hits.float().mean().item()
print(top3_accuracy)
assert top3_accuracy == 0.5  # samples 0 and 2 are hits


# %% [markdown]
# ### Exercise 3: pairwise squared distances without `cdist`
#
# Write `sq_dists(a, b)` for `a` of shape `(n, d)` and `b` of shape `(m, d)` using
# $\lVert a_i - b_j\rVert^2 = \lVert a_i\rVert^2 + \lVert b_j\rVert^2 - 2\,a_i \cdot b_j$ and
# broadcasting, and check it against `torch.cdist(a, b) ** 2`.

# %% tags=["solution"]
def sq_dists(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    aa = (a * a).sum(dim=1, keepdim=True)  # (n, 1)
    bb = (b * b).sum(dim=1)  # (m,)
    return (aa + bb - 2 * a @ b.T).clamp(min=0)  # clamp: rounding can go slightly negative


a, b = torch.randn(5, 3), torch.randn(7, 3)
print(sq_dists(a, b).shape)
assert torch.allclose(sq_dists(a, b), torch.cdist(a, b) ** 2, atol=1e-5)

# %% [markdown]
# ## Summary
#
# - Create with `tensor` (copies, infers dtype) or factories (`zeros`, `arange`, `randn`,
#   `*_like`); convert with `.to(dtype / device)`, which returns a new tensor.
# - `from_numpy` and `.numpy()` share memory; `torch.tensor(array)` copies.
# - Basic indexing returns views, advanced indexing (index tensors, masks) returns copies;
#   `gather`/`scatter` pick and write one element per position.
# - `dim` names the dimension a reduction removes; `keepdim=True` keeps it for broadcasting, and
#   shapes broadcast when they match or are 1, compared from the right.
# - `@` is the general matrix product; `torch.linalg` holds the decompositions, and the
#   vectorised version of a loop was measured here to be at least 20× faster.
#
# Next: [02 · Contiguity and strides](02_contiguity_strides.ipynb), what a view really is.
