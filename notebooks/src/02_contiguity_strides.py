# %% [markdown]
# # 02 · Contiguity and strides: the same batch in memory
#
# [![Open In Colab](https://colab.research.google.com/assets/colab-badge.svg)](https://colab.research.google.com/github/pytorch-cookbook/pytorch-cookbook/blob/main/notebooks/02_contiguity_strides.ipynb)
#
# We open up lesson 01's batch of CIFAR2 images to see how a tensor sits in memory: one flat row
# of numbers and a rule to find each element in it. Then we store the same batch in a second
# order, channels-last, and read the difference in its strides.
#
# This is a side lesson: later lessons do not need it. It pays off when you ask what an
# operation costs (a view reuses memory for free; a copy takes new memory and time) and when an
# error such as "view size is not compatible with input tensor's size and stride" appears.
#
# **You will be able to:**
# - read a tensor's storage, offset and strides, and find any element's place in memory;
# - tell a view from a copy, and check whether two tensors share memory;
# - say whether a tensor is contiguous, and fix a failing `view` with `reshape` or `contiguous()`;
# - store an image batch channels-last and explain each of its strides.
#
# **Before you start:** a tensor's shape and dtype, indexing and slicing, `permute`
# ([01](01_tensors.ipynb)).
# Python: f-string formats such as `:<30` ([00](00_python.ipynb#Unpacking-and-f-string-formats)); type hints and generator expressions ([00](00_python.ipynb#Type-hints,-paths,-zip-and-one-line-loops)).
#
# **Cookbook:** [02 · Contiguity and strides: recipes](cookbook/02_contiguity_strides_recipes.ipynb) holds every recipe of this chapter (which operations return views, `expand` and `repeat`, sliding windows with `unfold` and `as_strided`, copying with `clone` and `detach`, the memory a view keeps alive, channels-last, what non-contiguous data costs, measured), for when you need one.
#
# **Study time:** about 75 min: 2,233 words of text at 120 a minute, 141 lines of code at 10 a minute, 21 code cells to run at 1 minute each (reading what they print), 2 exercises at 10 minutes each.
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

import matplotlib.pyplot as plt
import torch

from helpers.check import check, expect_error
from helpers.env import setup
from helpers.exercises import lesson02
from helpers.images import load_cifar2
from helpers.plot import show_layout

device = setup(seed=0)

# %% [markdown]
# ## A tensor is a view of flat storage
#
# Lesson 01 said that `batch[0]` or a crop does not copy any pixel. To see how that can work, we
# need to know where a tensor keeps its numbers. Memory is one long row of bytes, so a tensor's
# numbers sit in one flat block, its **storage**. (`untyped_storage()` returns that block as raw
# bytes: "untyped" because it does not know the dtype of the numbers.) The tensor itself is a
# description of how to read that block:
#
# - the **offset**: where in the storage its first element is;
# - the **shape**: how many steps each dimension has;
# - the **strides**: how many elements of storage to skip to take one step along each dimension.
#
# Here are the 10,000 training images again:

# %%
images, labels, classes = load_cifar2("train")
print("shape:", tuple(images.shape), "| strides:", images.stride())
print("offset:", images.storage_offset())
print("element size:", images.element_size(), "byte | elements:", images.numel())
print("storage:", images.untyped_storage().nbytes(), "bytes")


# %% [markdown]
# The strides `(3072, 1024, 32, 1)` read from the right: the next column of a row is the next
# element (stride 1); the next row is 32 elements further (one row of 32 pixels); the next channel
# is 1024 further (32 × 32 pixels); the next image is 3072 further (3 channels of 1024). So the
# element at `[n, c, h, w]` sits at
#
# `offset + n * 3072 + c * 1024 + h * 32 + w`.
#
# Let us check it against the memory itself. A `uint8` is one byte, so byte `k` of the storage
# is element `k` (for `float32`, 4 bytes each, element `k` starts at byte `4k`). A small
# function computes the position from the offset and the strides:

# %%
def position(t: torch.Tensor, index: tuple[int, ...]) -> int:
    """Where t[index] sits in t's storage: the offset plus each index × its stride."""
    steps = sum(i * s for i, s in zip(index, t.stride(), strict=True))
    return t.storage_offset() + steps


storage = images.untyped_storage()
k = position(images, (2, 1, 5, 7))
print("position of images[2, 1, 5, 7]:", k)
print("images[2, 1, 5, 7]:", images[2, 1, 5, 7].item(), "| storage[k]:", storage[k])
row = [storage[position(images, (2, 1, 5, w))] for w in range(32)]
check(row == images[2, 1, 5].tolist(), "the strides find all 32 pixels of the row")

# %% [markdown]
# A picture makes this concrete. `show_layout` (a course helper) draws a 2-D tensor as a grid in
# which each cell shows the storage position it reads, above the storage itself, a strip with the
# used cells shaded. To keep the strip short, we copy the top-left 4 × 4 corner of one channel into
# a storage of its own with `clone()`, which makes a copy; the next section says more about copies.
# Then we draw it three ways: as it is, transposed (`.t()` swaps the two dimensions), and a 2 × 2
# slice of its middle.

# %%
corner = images[0, 0, :4, :4].clone()
show_layout({"corner": corner, "corner.t()": corner.t(), "corner[1:3, 1:3]": corner[1:3, 1:3]})
plt.show()
print("the same corner inside images has strides:", images[0, 0, :4, :4].stride())

# %% [markdown]
# All three panels read the same 16 numbers of storage. The transpose is the same storage with
# its two strides swapped, `(1, 4)` instead of `(4, 1)`: walking along a row now jumps 4
# elements. The slice starts at offset 5 and keeps the strides `(4, 1)`: it reads 4 of the 16
# cells. Inside `images`, the same corner has strides `(32, 1)`: the next row of the corner is 32
# elements on, because the whole row of 32 pixels lies in between.
#
# **Takeaway:** a tensor is storage + offset + shape + strides; element `[i, j, ...]` is at
# offset + i × stride 0 + j × stride 1 + ...

# %% [markdown]
# ## Views share memory
#
# An operation that can express its result with a new offset, shape and strides over the same
# storage does not need to copy anything. It returns a **view**. Lesson 01's batch, every 1250th
# image, is one:

# %%
batch = images[::1250]
print("batch:", tuple(batch.shape), "| strides:", batch.stride())
print("storage behind batch:", batch.untyped_storage().nbytes(), "bytes")

# %% [markdown]
# A step of 1250 multiplies the image stride: 1250 × 3072 = 3,840,000. The 8 images read the
# storage of all 10,000, and `batch` is not laid out in plain order any more. The same formula
# still finds its elements, here the pixel `[0, 5, 7]` of each of the 8 images:

# %%
batch_storage = batch.untyped_storage()
found = [batch_storage[position(batch, (n, 0, 5, 7))] for n in range(8)]
print("batch[:, 0, 5, 7]:", batch[:, 0, 5, 7].tolist())
print("storage[position]:", found)
check(found == batch[:, 0, 5, 7].tolist(), "batch's strides find its pixels")


# %% [markdown]
# Two tensors share memory when they read the same storage: `x.untyped_storage()` is the storage
# of `x`, and its `data_ptr()` is its address in memory. Addresses change from run to run, so we
# compare them rather than print them. A small function answers "do these two share memory?",
# and a loop tries it on common operations:

# %%
def shares_memory(a: torch.Tensor, b: torch.Tensor) -> bool:
    """True when a and b read the same storage."""
    return a.untyped_storage().data_ptr() == b.untyped_storage().data_ptr()


ops = {
    "images[5]": images[5],
    "images[:, 0]": images[:, 0],
    "images[:, :, 8:24, 8:24]": images[:, :, 8:24, 8:24],
    "images[::1250]": images[::1250],
    "images.view(10000, 3, 1024)": images.view(10000, 3, 1024),  # a new shape (below)
    "images.transpose(2, 3)": images.transpose(2, 3),  # swaps dimensions 2 and 3
    "images.permute(0, 2, 3, 1)": images.permute(0, 2, 3, 1),
    "images[[0, 1250]]": images[[0, 1250]],
    "images.float()": images.float(),
}
print(f"{'operation':<30}{'view?':<7}{'offset':<8}strides")
for name, y in ops.items():  # `!s:<7`: True or False as text, padded to 7 (00, f-strings)
    print(f"{name:<30}{shares_memory(y, images)!s:<7}{y.storage_offset():<8}{y.stride()}")

# %% [markdown]
# Reading the table:
#
# - an integer index drops a dimension and its stride; `images[5]` starts 5 × 3072 = 15,360
#   elements in;
# - a slice keeps the strides and moves the offset (the crop starts at row 8, column 8:
#   8 × 32 + 8 = 264); a step multiplies the stride;
# - `view` gives new shape and strides over the same elements in the same order: here the
#   32 × 32 pixels of a channel become one dimension of 1024;
# - `transpose` and `permute` only reorder the strides;
# - indexing with a list or tensor of indices (`images[[0, 1250]]`) and any computation
#   (`images.float()`) make new memory.
#
# `data_ptr()` of a tensor is the address of its own first element, so it tells where a view
# starts. One `uint8` is one byte:

# %%
start = images[5].data_ptr() - images.data_ptr()
print("images[5] starts this many bytes into the storage:", start)
check(start == 5 * 3072 * images.element_size(), "images[5] starts at offset 5 × 3072")

# %% [markdown]
# Since a view reads the same memory, writing through it writes into the original. That is what
# `x[:, 0] = 0` relies on, and a surprise when you did not expect a view. We try it on a copy of
# the batch, made with `clone()`, so that `images` stays as it is:

# %%
own = batch.clone()
first = own[0]  # a view of own
first[:, :4, :4] = 0  # black out the top-left corner of image 0, through the view
print("own shares memory with batch:", shares_memory(own, batch))
print("own[0, 0, :2, :2]:", own[0, 0, :2, :2].tolist())
print("batch[0, 0, :2, :2]:", batch[0, 0, :2, :2].tolist())
check(
    own[0, :, :4, :4].sum() == 0 and batch[0, :, :4, :4].sum() > 0,
    "writing through a view changed own; the copy kept batch apart",
)

# %% [markdown]
# **Takeaway:** slicing, `view`, `transpose` and `permute` return views that share memory;
# `clone()`, indexing with indices, and computations make new memory.

# %% [markdown]
# ## Contiguous or not, and why `view` fails
#
# A tensor is **contiguous** when its elements lie in storage in plain row-major order (row
# after row, the last index changing fastest), with no gaps: each stride is the product of the sizes to its right, like `(3072, 1024, 32, 1)` for an
# image batch. `is_contiguous()` says whether it is. `images` is; the batch with a step is not
# (it has gaps), and neither is a permuted tensor (its strides are out of order):

# %%
nhwc = batch.permute(0, 2, 3, 1)  # (N, H, W, C): the same memory, strides reordered
print("images:", images.is_contiguous(), "| batch:", batch.is_contiguous())
print("nhwc shape:", tuple(nhwc.shape), "| strides:", nhwc.stride())
print("nhwc contiguous:", nhwc.is_contiguous())

# %% [markdown]
# Why it matters: `view` never copies, so it can only regroup elements whose strides allow it.
# Say we want the batch as a list of pixels, one row of (red, green, blue) per pixel, shape
# `(8 × 32 × 32, 3)`. In `nhwc` the channels are the last dimension, so `view(-1, 3)` looks right
# (`-1` lets PyTorch work out that size). Within one image it would work: the next pixel is 1
# element on (row after row, since a row is 32 elements), the next channel 1024 on. But the
# pixel dimension would run over all 8 images with one stride, 1, so image 1 would have to
# start 1,024 elements after image 0. It starts 3,840,000 after: the other two channels of
# image 0 and 1,249 skipped images lie in between. PyTorch refuses:

# %%
with expect_error(RuntimeError):
    nhwc.view(-1, 3)

# %% [markdown]
# The message names the fix. `reshape` returns a view when the strides allow it and a copy when
# they do not. `contiguous()` makes the copy explicit: a new tensor with the same values in
# row-major order for its current shape, on which `view` works. (`contiguous()` on a tensor that
# already is contiguous returns the tensor itself, without copying.)

# %%
pixels = nhwc.reshape(-1, 3)
pixels_again = nhwc.contiguous().view(-1, 3)
print("pixels:", tuple(pixels.shape), "| shares memory:", shares_memory(pixels, batch))
print("pixels[0]:", pixels[0].tolist())
print("batch[0, :, 0, 0]:", batch[0, :, 0, 0].tolist())
check(
    torch.equal(pixels, pixels_again) and torch.equal(pixels[0], batch[0, :, 0, 0]),
    "reshape and contiguous().view give the same rows, one pixel each",
)
check(
    images.contiguous() is images and not shares_memory(pixels, batch),
    "contiguous() is free on a contiguous tensor; here reshape had to copy",
)

# %% [markdown]
# Whether `reshape` copies depends on the strides of its input, so never count on writing through
# its result into the original.
#
# `view` does not need a contiguous tensor, only one whose elements it can regroup without
# moving any. `batch` is not contiguous, yet each of its images is still one run of 3,072
# numbers in order, so making each image one row works:

# %%
rows = batch.view(8, -1)  # each image's 3 × 32 × 32 numbers as one row
print("batch.view(8, -1):", tuple(rows.shape), "| strides:", rows.stride())
check(rows.shape == (8, 3072) and shares_memory(rows, batch), "a view, no copy")

# %% [markdown]
# The row stride is still 3,840,000: the new shape fits the old strides. A contiguous tensor
# fits any shape of the same size.
#
# **Takeaway:** `permute`, `transpose` and steps give non-contiguous views; when `view` refuses,
# use `reshape`, or `contiguous()` first.

# %% [markdown]
# ## Channels-last: same shape, other strides
#
# The order of memory is a choice. PyTorch's default for images keeps each channel as one block
# (all the red values, then all the green, then all the blue). **Channels-last** keeps the three
# values of each pixel side by side, the order of NumPy, PIL and TensorFlow images. Some image
# layers (the convolutions of lesson [04](04_modules.ipynb)) can run faster on data in that
# order, on many GPUs and CPUs; chapter [10](10_speedups.ipynb) measures it. The tensor keeps its
# shape `(N, C, H, W)`, so code indexes it as before; only the strides change.

# %%
cl = batch.contiguous(memory_format=torch.channels_last)
print("batch:", tuple(batch.shape), "| cl:", tuple(cl.shape))
print("strides of cl:", cl.stride())
print("contiguous, default order:", cl.is_contiguous())
print("contiguous, channels-last:", cl.is_contiguous(memory_format=torch.channels_last))
check(
    torch.equal(cl, batch) and not shares_memory(cl, batch),
    "cl holds the same values as batch, in new memory",
)

# %% [markdown]
# Each stride of `cl`, for a batch of 32 × 32 colour images:
#
# | dimension | stride | why |
# |---|---|---|
# | N, the next image | 3072 | one image is 32 × 32 pixels × 3 channels |
# | C, the next channel | 1 | a pixel's red, green and blue are neighbours |
# | H, the next row | 96 | one row is 32 pixels × 3 channels |
# | W, the next column | 3 | the next pixel starts 3 values on |
#
# The storage of `cl` shows it: its first bytes are the red, green and blue of image 0's first
# pixel, then those of the pixel to its right (`.T` swaps the two dimensions of the `(3, 2)`
# slice, so that each row is one pixel). And the position formula finds the elements:

# %%
cl_storage = cl.untyped_storage()
first6 = [cl_storage[k] for k in range(6)]
print("first 6 bytes of cl's storage:", first6)
print("image 0, pixels (0, 0) and (0, 1):", batch[0, :, 0, :2].T.tolist())
some = [(0, 2, 0, 1), (5, 1, 20, 9), (7, 0, 31, 30)]
check(
    first6 == batch[0, :, 0, 0].tolist() + batch[0, :, 0, 1].tolist()
    and all(cl[i].item() == cl_storage[position(cl, i)] for i in some),
    "cl's storage holds each pixel's channels together, where its strides say",
)

# %% [markdown]
# The picture shows both orders on a tiny example: one image's top-left 2 × 2 pixels, 3 channels
# × 4 pixels, drawn as a grid of channels (rows) and pixels (columns), `view(3, 4)` merging the
# 2 × 2 pixels.

# %%
tiny = batch[:1, :, :2, :2].clone()  # (1, 3, 2, 2), with its own 12-element storage
tiny_cl = tiny.contiguous(memory_format=torch.channels_last)
show_layout(
    {
        "NCHW (rows: channels)": tiny[0].view(3, 4),
        "channels-last (rows: channels)": tiny_cl[0].view(3, 4),
    }
)
plt.show()

# %% [markdown]
# In NCHW, each row (a channel) is a run of 4 neighbours; in channels-last, each column (a pixel)
# is a run of 3. Seen through `permute(0, 2, 3, 1)`, a channels-last tensor is plain row-major
# `(N, H, W, C)` memory:

# %%
print("cl.permute(0, 2, 3, 1) contiguous:", cl.permute(0, 2, 3, 1).is_contiguous())
back = cl.contiguous()
print("cl.contiguous() strides:", back.stride())
check(
    cl.permute(0, 2, 3, 1).is_contiguous() and back.stride() == (3072, 1024, 32, 1),
    "channels-last is NHWC memory; a plain contiguous() copies it back to NCHW",
)

# %% [markdown]
# The second line is a trap: `contiguous()` means row-major for the shape you see, so on a
# channels-last tensor it copies back into the default order. To keep channels-last, pass the
# format: `cl.contiguous(memory_format=torch.channels_last)`.
#
# **Takeaway:** channels-last keeps the shape `(N, C, H, W)` and stores each pixel's channels
# together: strides `(H·W·C, 1, W·C, C)`.

# %% [markdown]
# ## Exercises

# %% [markdown]
# ### Exercise 1 · Predict the strides of a batch of crops
#
# `crops` is a batch of 16 colour crops of 24 × 24 pixels (pieces cut out of larger images),
# stored in the default order; `torch.zeros` fills it with zeros, since only its strides matter
# here. Before running anything, fill in `predicted` with the strides of each expression in its
# keys (a tuple each). The check compares them with `.stride()`.
#
# <details><summary>Hint 1</summary>
#
# Start with `crops` itself: in the default order, each stride is the product of the sizes to its
# right. Then ask, expression by expression, what the operation does to that tuple.
# </details>
#
# <details><summary>Hint 2</summary>
#
# `permute` reorders the strides; an integer index removes one; a step multiplies one. For
# channels-last, the table in the last section gives the strides of 32 × 32 images: redo it for
# 24 × 24.
# </details>

# %%
crops = torch.zeros(16, 3, 24, 24, dtype=torch.uint8)
predicted = {
    "crops": ...,
    "crops.permute(0, 2, 3, 1)": ...,
    "crops[:, 1]": ...,
    "crops[:, :, ::2, ::2]": ...,
    "crops.contiguous(memory_format=torch.channels_last)": ...,
}

# %%
lesson02.exercise_1(crops, predicted)

# %% [markdown]
# #### Solution

# %% tags=["solution"]
# Solution: open it once you have tried. It uses its own names, so your answer stays as it is.
solution_predicted = {
    "crops": (1728, 576, 24, 1),  # 3 × 24 × 24, 24 × 24, 24, 1
    "crops.permute(0, 2, 3, 1)": (1728, 24, 1, 576),  # the same strides, reordered
    "crops[:, 1]": (1728, 24, 1),  # the channel dimension and its stride are gone
    "crops[:, :, ::2, ::2]": (1728, 576, 48, 2),  # a step of 2 doubles the stride
    "crops.contiguous(memory_format=torch.channels_last)": (1728, 1, 72, 3),
}
lesson02.exercise_1(crops, solution_predicted)

# %% [markdown]
# ### Exercise 2 · Channels-last by hand, and the pixels as a free view
#
# Build `cl_by_hand`: `batch` in the channels-last layout, shape `(8, 3, 32, 32)` and strides
# `(3072, 1, 96, 3)`. Try it with `permute` and `contiguous()` only, without `memory_format`:
# that shows what channels-last is. Then fill in `pixel_rows`: one row of (red, green, blue) per
# pixel, shape `(8 × 32 × 32, 3)`, as a **view** of `cl_by_hand`, without copying. The check
# compares the values and strides, and whether `pixel_rows` shares memory with `cl_by_hand`.
#
# <details><summary>Hint 1</summary>
#
# Channels-last memory is the row-major memory of the batch in `(N, H, W, C)` order. Get that
# memory first; then put the dimensions back in the `(N, C, H, W)` order without copying.
# </details>
#
# <details><summary>Hint 2</summary>
#
# `contiguous()` writes row-major memory for the order the dimensions have when it is called.
# Which order should they have at that moment, and how do you get back to `(N, C, H, W)`
# afterwards? For the pixels: the section on contiguity showed why `view(-1, 3)` failed on
# `nhwc`. Do the strides of `cl_by_hand`, seen in the same order, still stand in the way?
# </details>

# %%
cl_by_hand = ...  # (8, 3, 32, 32) with strides (3072, 1, 96, 3)
pixel_rows = ...  # (8192, 3), a view of cl_by_hand

# %%
lesson02.exercise_2(batch, cl_by_hand, pixel_rows)

# %% [markdown]
# #### Solution

# %% tags=["solution"]
# Solution: open it once you have tried. It uses its own names, so your answer stays as it is.
solution_nhwc = batch.permute(0, 2, 3, 1).contiguous()  # NHWC, row-major: a copy
solution_cl = solution_nhwc.permute(0, 3, 1, 2)  # back to NCHW's shape: a view
solution_pixel_rows = solution_cl.permute(0, 2, 3, 1).view(-1, 3)
lesson02.exercise_2(batch, solution_cl, solution_pixel_rows)

# %% [markdown]
# ## Summary
#
# - A tensor is a storage plus an offset, a shape and strides; element `[i, j, ...]` sits at
#   offset + i × stride 0 + j × stride 1 + ...
# - Slicing, `view`, `transpose` and `permute` return views: new shape and strides over the same
#   memory, free to make, and writing through a view writes into the original. `clone()` copies.
# - Contiguous means row-major with no gaps. `view` refuses strides that do not fit the new
#   shape; `reshape` copies when it must, and `contiguous()` copies explicitly.
# - Channels-last keeps the shape `(N, C, H, W)` with strides `(H·W·C, 1, W·C, C)`; a plain
#   `contiguous()` turns it back into the default order.
#
# Next: [03 · Autograd](03_autograd.ipynb), how PyTorch computes gradients.
