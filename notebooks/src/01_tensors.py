# %% [markdown]
# # 01 · Tensors: a batch of images as numbers
#
# [![Open In Colab](https://colab.research.google.com/assets/colab-badge.svg)](https://colab.research.google.com/github/pytorch-cookbook/pytorch-cookbook/blob/main/notebooks/01_tensors.ipynb)
#
# We load a batch of CIFAR2 photos (airplanes and cars) as one tensor of numbers, look inside it,
# and turn it step by step into the input a network expects: floats, normalised per colour
# channel. Then we score each image with one matrix product.
#
# **You will be able to:**
# - read a tensor's shape and dtype, and pick out one image, one channel or a crop by indexing;
# - convert `uint8` pixels to `float32` in [0, 1], and say why arithmetic on `uint8` goes wrong;
# - reduce along chosen dimensions (a mean per channel) and keep them with `keepdim`;
# - predict how two shapes broadcast, and normalise a batch per channel with it;
# - reorder dimensions with `permute`, build batches with `stack` and `cat`, and predict the
#   shape of a matrix product `@`.
#
# **Before you start:** Python (lists, slices, functions) and a little NumPy (an array has a
# shape and a dtype). The rest of the Python the course uses (classes, generators, `lambda`,
# decorators, f-string formats, scripts) is in [00 · Python you will meet](00_python.ipynb): a
# lesson links the part it needs.
#
# **Cookbook:** [01 · Tensor structure and math ops: recipes](cookbook/01_tensors_recipes.ipynb) holds every recipe of this chapter (creating tensors, dtypes and type promotion, NumPy interop, indexing, gather and scatter, reductions, matrix products, `torch.linalg`, broadcasting, vectorised code), for when you need one.
#
# **Study time:** about 75 min: 2,330 words of text at 120 a minute, 139 lines of code at 10 a minute, 24 code cells to run at 1 minute each (reading what they print), 2 exercises at 10 minutes each.
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

import matplotlib.pyplot as plt
import torch

from helpers.check import check, expect_error
from helpers.diagrams.broadcast import show_broadcast
from helpers.env import setup
from helpers.exercises import lesson01
from helpers.images import channel_stats, load_cifar2
from helpers.plot import show_images

device = setup(seed=0)  # seed: the same random numbers on every run
torch.set_printoptions(precision=4, sci_mode=False)  # print 4 decimals, never 1.2e-03 style

# %% [markdown]
# ## An image is a grid of numbers
#
# A network never sees a picture. It sees numbers, and PyTorch keeps numbers in a **tensor**: an
# array with any number of dimensions, like a NumPy array, that can also live on a GPU and
# remember how it was computed (lesson [03](03_autograd.ipynb) uses that).
#
# The course's running example is CIFAR2: 10,000 training photos of airplanes and cars, each
# 32 × 32 pixels in colour. `load_cifar2` gives all of them as one tensor, their labels (0 for an
# airplane, 1 for a car) and the class names. Every tensor has a **shape** (the size of each
# dimension) and a **dtype** (the type of every number in it).

# %%
images, labels, classes = load_cifar2("train")
names = [c.split("_", 1)[1] for c in classes]  # '0_airplane' -> 'airplane', to show
print("images:", images.shape, images.dtype)
print("labels:", labels.shape, labels.dtype)
print("classes:", classes, "| shown as:", names)

# %% [markdown]
# The shape reads as `(N, C, H, W)`: 10,000 images, 3 colour channels (red, green, blue), 32 rows
# (the height) and 32 columns (the width). This order, channels before height and width, is the
# one PyTorch's image layers expect. The dtype `uint8` means unsigned 8-bit integers: whole
# numbers from 0 (dark) to 255 (bright), one byte each.
#
# A lesson needs something small to look at, so we take a batch of 8 images: every 1250th, with
# a Python slice (`start:stop:step`, as on a list). The training images are sorted by class, so
# the first four are airplanes and the last four cars.

# %%
batch = images[::1250]
batch_labels = labels[::1250]
print("batch:", batch.shape, "| labels:", batch_labels.tolist())
print("one pixel, the top-left of image 0 (red, green, blue):", batch[0, :, 0, 0].tolist())
show_images(batch, batch_labels, names, ncols=4)
plt.show()  # matplotlib, Python's plotting library, draws the figure here

# %% [markdown]
# One pixel is three numbers. The top-left pixel of the first airplane is part of a light grey
# background: all three channels are high (bright) and close together (grey). `tolist()` turns
# a tensor into plain Python numbers, convenient for printing.
#
# **Takeaway:** a batch of colour images is a 4-D tensor `(N, C, H, W)` of bytes.

# %% [markdown]
# ## Pick one image, one channel, a crop
#
# Indexing works as in NumPy: one index per dimension, separated by commas. An integer picks one
# position and removes that dimension; a slice `a:b` keeps the dimension and takes positions `a`
# to `b - 1`; a bare `:` takes everything; a negative index counts from the end.

# %%
first = batch[0]  # image 0: (C, H, W)
red = batch[0, 0]  # image 0, channel 0 (red): (H, W)
centre = batch[:, :, 8:24, 8:24]  # every image and channel, rows and columns 8 to 23
last_pixel = batch[-1, :, -1, -1]  # the bottom-right pixel of the last image
print("first:", first.shape, "| red:", red.shape, "| centre:", centre.shape)
print("bottom-right pixel of the last image:", last_pixel.tolist())
show_images(centre, batch_labels, names, ncols=4)
plt.show()

# %% [markdown]
# A tensor of booleans picks the positions where it is `True`. `batch_labels == 1` compares every
# label with 1 at once, so this keeps the cars:

# %%
is_car = batch_labels == 1
cars = batch[is_car]
print("is_car:", is_car.tolist())
print("cars:", cars.shape)
check(cars.shape == (4, 3, 32, 32), "the boolean index kept the 4 cars, whole")

# %% [markdown]
# Indexing with integers and slices does not copy any pixel: `first`, `red` and `centre` are
# **views** that read the memory of `batch`. Indexing with a tensor (of booleans or of indices)
# makes a copy. The side lesson [02](02_contiguity_strides.ipynb) shows how views work.
#
# **Takeaway:** one index per dimension: an integer drops the dimension, a slice keeps it.

# %% [markdown]
# ## Turn pixels into floats in [0, 1]
#
# `uint8` is the right type to store images (one byte per number) and the wrong type to compute
# with. Its numbers can only be 0 to 255, and a result that does not fit **wraps around**,
# silently. Here we try to brighten the images by adding 100 to every pixel:

# %%
brighter = batch + 100
print("top-left pixel of image 0:", batch[0, :, 0, 0].tolist())
print("plus 100, in uint8:       ", brighter[0, :, 0, 0].tolist(), brighter.dtype)
show_images(brighter[:4], batch_labels[:4], names)
plt.show()

# %% [markdown]
# 200 + 100 is 300, which does not fit in a byte; `uint8` keeps 300 − 256 = 44. The bright sky
# turned dark, and nothing warned us. Some operations refuse `uint8` outright, such as `mean`,
# which would need fractions:

# %%
with expect_error(RuntimeError):
    batch.mean()

# %% [markdown]
# (This cell shows an error on purpose: `expect_error`, a course helper, prints the error's last
# line, as Python would, and lets the notebook go on; in your own code you would just run the
# line. `NotImplementedError` is a kind of `RuntimeError`. PyTorch's error messages call `uint8`
# "Byte".)
#
# So before any arithmetic, convert to a floating-point dtype. `float32` is what networks use.
# `.float()` is short for `.to(torch.float32)`; dividing by 255 puts every value in [0, 1], the
# scale most image code expects. (`.to()` also moves a tensor to a device, such as the GPU that
# the setup cell found, if there is one: `x.to(device)`.)

# %%
x = batch.float() / 255
print("x:", x.shape, x.dtype)
print("smallest:", x.min().item(), "| largest:", x.max().item())  # .item(): as a number
print("top-left pixel of image 0:", x[0, :, 0, 0])
check(x.dtype == torch.float32 and x.min() >= 0 and x.max() <= 1, "x is float32 in [0, 1]")

# %% [markdown]
# `.item()` takes the one number out of a one-element tensor, like `min()`'s result.
#
# **Takeaway:** store images as `uint8`, compute with `float32`: convert first, then compute.

# %% [markdown]
# ## Reduce along chosen dimensions
#
# Networks train more easily when each input channel has mean 0 and standard deviation 1 (the
# standard deviation: how far values typically lie from their mean). So we
# need one mean and one standard deviation **per channel**, over all images and all pixels: the
# 8 × 32 × 32 numbers of the red channel give the red mean, and so on.
#
# A reduction takes `dim`, the dimensions to reduce over; they disappear from the result.
# Without `dim` it reduces everything to one number. `mean`, `std` and `sum` take one `dim` or a
# tuple; `max` and `argmax` take a single `dim` (`amax` takes several), and `max(dim=d)` returns
# the values and their positions. Here we keep dimension 1 (the channels) and reduce over 0, 2
# and 3:

# %%
print("mean of everything:", x.mean())
print("mean per image:    ", x.mean(dim=(1, 2, 3)))
channel_mean = x.mean(dim=(0, 2, 3))
channel_std = x.std(dim=(0, 2, 3))
print("mean per channel:  ", channel_mean, channel_mean.shape)
print("std per channel:   ", channel_std)
print("brightest channel: ", channel_mean.argmax().item(), "(0 red, 1 green, 2 blue)")
top, top_channel = x.mean(dim=(2, 3)).max(dim=1)  # the largest of each image's 3 means
print("each image's brightest channel:", top_channel.tolist())
print("its mean:", top)

# %% [markdown]
# Read `dim` as "the dimensions that go away". Averaging over `(1, 2, 3)` leaves one number per
# image; averaging over `(0, 2, 3)` leaves one per channel. `argmax` returns the **position** of
# the largest value rather than the value: here, in this batch, red is on average the brightest
# channel. In the last line, `max(dim=1)` on the `(8, 3)` channel means returns each image's
# largest mean and its channel.
#
# These are the statistics of 8 images. A model is normalised with the statistics of the whole
# training set, computed once. The same line on all 10,000 images gives them, and it agrees with
# `channel_stats`, the course's helper that later lessons use. The helper returns plain Python
# lists: `torch.tensor(a_list)` makes a tensor of them, and `torch.allclose(a, b, atol=1e-4)` is
# `True` when every pair of values differs by at most 1e-4 (two sums of the same floats taken in
# another order differ in their last digits, so `==` would be too strict):

# %%
all_x = images.float() / 255
train_mean = all_x.mean(dim=(0, 2, 3))
train_std = all_x.std(dim=(0, 2, 3))
print("training set mean:", train_mean, "| std:", train_std)
helper_mean, helper_std = channel_stats(images)
check(
    torch.allclose(train_mean, torch.tensor(helper_mean), atol=1e-4)
    and torch.allclose(train_std, torch.tensor(helper_std), atol=1e-4),
    "mean and std over (0, 2, 3) are the per-channel statistics channel_stats returns",
)

# %% [markdown]
# With `keepdim=True` the reduced dimensions stay, with size 1. The numbers are the same; only the
# shape changes, and the next section shows why that shape is what we want.

# %%
mean = x.mean(dim=(0, 2, 3), keepdim=True)
std = x.std(dim=(0, 2, 3), keepdim=True)
print("keepdim=False:", channel_mean.shape, "| keepdim=True:", mean.shape)

# %% [markdown]
# **Takeaway:** `dim` names the dimensions a reduction removes; `keepdim=True` keeps them as
# size 1.

# %% [markdown]
# ## Normalise each channel by broadcasting
#
# To normalise we subtract each channel's mean from every pixel of that channel, and divide by its
# standard deviation. `x` has shape `(8, 3, 32, 32)` and `mean` has shape `(1, 3, 1, 1)`; PyTorch
# lines them up without a loop and without copying the means 8 × 32 × 32 times. This is
# **broadcasting**, and it has one rule: compare the shapes **from the right**; two sizes fit
# when they are equal or one of them is 1; a size 1, or a dimension that is missing on the left,
# is stretched to the other size. The result takes the larger size of each pair.

# %%
show_broadcast(x, mean, names=["x", "mean"], dim_names=["N", "C", "H", "W"])
plt.show()

# %% [markdown]
# The channel dimension matches (3 and 3); the image, row and column dimensions of `mean` are 1
# and are stretched: every pixel of every image meets its own channel's mean.

# %%
normalised = (x - mean) / std
print("normalised:", normalised.shape, normalised.dtype)
# abs(): the size of each mean, whatever the sign of its tiny rounding error
print("distance of each channel's mean from 0:", normalised.mean(dim=(0, 2, 3)).abs())
print("std per channel after:                 ", normalised.std(dim=(0, 2, 3)))
# torch.zeros(3) and torch.ones(3): new tensors of three 0s and three 1s, to compare with
check(
    torch.allclose(normalised.mean(dim=(0, 2, 3)), torch.zeros(3), atol=1e-5)
    and torch.allclose(normalised.std(dim=(0, 2, 3)), torch.ones(3), atol=1e-5),
    "every channel of the batch now has mean 0 and standard deviation 1",
)

# %% [markdown]
# Without `keepdim`, the mean has shape `(3,)`. Compared from the right, its 3 meets the width, 32:
# they differ and neither is 1, so PyTorch refuses.

# %%
with expect_error(RuntimeError):
    x - channel_mean

# %% [markdown]
# Besides `keepdim=True`, two other ways give a `(3,)` tensor the trailing size-1 dimensions it
# needs: indexing with `None`, which inserts a dimension of size 1 where it stands, or `reshape`
# with the shape you want. Both read the same numbers (`torch.equal(a, b)`: the same shape and
# exactly the same values):

# %%
print("channel_mean[:, None, None]:", channel_mean[:, None, None].shape)
print("channel_mean.reshape(3, 1, 1):", channel_mean.reshape(3, 1, 1).shape)
check(
    torch.equal(x - channel_mean[:, None, None], x - mean),
    "a (3, 1, 1) mean broadcasts like the (1, 3, 1, 1) one: the missing dimension counts as 1",
)

# %% [markdown]
# **Takeaway:** shapes broadcast when, compared from the right, each pair of sizes is equal or
# contains a 1; give per-channel values the shape `(1, C, 1, 1)` or `(C, 1, 1)`.

# %% [markdown]
# ## Reorder dimensions, and build batches
#
# PyTorch keeps channels first; matplotlib's `imshow` wants an image as `(H, W, C)`, channels
# last. `permute` puts the dimensions in a new order: `permute(1, 2, 0)` means "new dimension 0 is
# old dimension 1, then old 2, then old 0". `reshape` is **not** a way to do this: it keeps the
# numbers in their order and only regroups them into the new shape, so the pixels come out
# scrambled. The two side by side:

# %%
hwc = x[0].permute(1, 2, 0)
regrouped = x[0].reshape(32, 32, 3)
print("permute:", hwc.shape, "| reshape:", regrouped.shape)
fig, axes = plt.subplots(1, 2, figsize=(5, 2.8))  # a figure with 2 panels (axes) side by side
panels = {"permute(1, 2, 0)": hwc, "reshape(32, 32, 3)": regrouped}
for ax, (title, image) in zip(axes, panels.items(), strict=True):
    ax.imshow(image.numpy())
    ax.set_title(f"x[0].{title}", fontsize=10)
    ax.axis("off")
plt.show()
check(
    torch.equal(hwc[5, 7], x[0, :, 5, 7]) and not torch.equal(regrouped, hwc),
    "permute moves the channels last; reshape, same shape, gives other pixels",
)

# %% [markdown]
# (`.numpy()` hands the tensor to NumPy, which matplotlib reads.) `show_images`, the course's
# plotting helper, does this `permute` for you. The same call turns a whole batch from
# `(N, C, H, W)` to `(N, H, W, C)` with `permute(0, 2, 3, 1)`, the layout NumPy, PIL and
# TensorFlow use for images; `permute(0, 3, 1, 2)` goes back.
#
# To build a batch out of single images, `torch.stack` puts tensors of the same shape along a
# **new** first dimension. `torch.cat` joins tensors along a dimension they **already** have, for
# example two batches into one:

# %%
pair = torch.stack([x[0], x[4]])  # two (3, 32, 32) images -> (2, 3, 32, 32)
bigger = torch.cat([x, pair])  # (8, ...) and (2, ...) -> (10, ...)
print("pair:", pair.shape, "| bigger:", bigger.shape)
check(
    pair.shape == (2, 3, 32, 32) and torch.equal(bigger[8], x[0]),
    "stack adds a dimension; cat appends along an existing one",
)

# %% [markdown]
# `cat` needs the same number of dimensions in every tensor; appending a single image to a batch
# with it fails:

# %%
with expect_error(RuntimeError):
    torch.cat([x, x[0]])

# %% [markdown]
# Give the image its batch dimension first (`x[0][None]` has shape `(1, 3, 32, 32)`), or `stack`
# single images.
#
# **Takeaway:** `permute` reorders dimensions, `reshape` only regroups; `stack` makes a new
# dimension, `cat` extends an existing one.

# %% [markdown]
# ## Score every image with one matrix product
#
# The simplest model, the one lesson [03](03_autograd.ipynb) trains, gives each of an image's
# 3 × 32 × 32 = 3,072 numbers a weight and adds up the products: one **score** per image. For a
# whole batch at once that is a **matrix product**, written `@`.
#
# `reshape(8, -1)` makes each image one row (`-1`: PyTorch works out that size).
# `torch.full(shape, value)` makes a tensor filled with one value (`torch.zeros` and
# `torch.ones`, as in the normalisation check, fill it with 0 and 1). Lesson 03 learns the
# weights; here every weight is 1/3072, so each score is the image's mean, which we can check:

# %%
flat = x.reshape(8, -1)  # (8, 3072): one row of numbers per image
w = torch.full((3072,), 1 / 3072)  # one weight per number
scores = flat @ w  # (8, 3072) @ (3072,) -> (8,): one score per image
print("flat:", flat.shape, "| w:", w.shape, "| scores:", scores.shape)
print("scores:", scores)
check(torch.allclose(scores, x.mean(dim=(1, 2, 3))), "each score is its image's mean")

# %% [markdown]
# The shape rule: `(n, k) @ (k, m)` gives `(n, m)`. Entry `[i, j]` is row `i` of the left
# times column `j` of the right, number by number, summed, so the inner sizes `k` must be equal.
# A vector `(k,)` on the right acts as one column, and that dimension goes away:
# `(8, 3072) @ (3072,)` is `(8,)`. Two columns of weights give two scores per image. `.T` (the
# transpose) swaps a matrix's two dimensions:

# %%
W = torch.ones(3072, 2) / 3072  # two columns of weights
print("flat @ W:", (flat @ W).shape, "| flat.T:", flat.T.shape)
check((flat @ W).shape == (8, 2), "(8, 3072) @ (3072, 2) gives (8, 2)")
with expect_error(RuntimeError):
    flat @ torch.ones(1024)  # 1024 weights for rows of 3072 numbers

# %% [markdown]
# The message names the two sizes that disagree: `mat (8x3072)` and `vec (1024)`.
#
# **Takeaway:** `@` is the matrix product: `(n, k) @ (k, m)` is `(n, m)`, and
# `(N, 3072) @ (3072,)` gives one weighted sum, a score, per image.

# %% [markdown]
# ## Exercises

# %% [markdown]
# ### Exercise 1 · Normalise the test images with the training statistics
#
# A model sees new images normalised with the **training set's** statistics, the ones it was
# trained with, not with statistics of the new images. `test_images` holds CIFAR2's 2,000 test
# images (`uint8`, `(N, C, H, W)`), and `train_mean_list` and `train_std_list` are the training
# set's per-channel mean and standard deviation as plain Python lists, on the [0, 1] scale.
# Fill in `test_x`: the test images as `float32` in [0, 1], minus the training mean, divided by
# the training standard deviation, channel by channel.
#
# <details><summary>Hint 1</summary>
#
# Two steps, as in the lesson: convert the pixels first, then normalise. The lists have to become
# tensors whose shape broadcasts against `(N, 3, 32, 32)` one value per channel.
# </details>
#
# <details><summary>Hint 2</summary>
#
# `torch.tensor(a_list)` makes a tensor of shape `(3,)`. The section on broadcasting shows two
# ways to give it the two trailing dimensions of size 1 it needs.
# </details>

# %%
test_images, test_labels, _ = load_cifar2("test")
train_mean_list, train_std_list = channel_stats(images)
print("test_images:", test_images.shape, test_images.dtype)
test_x = ...  # float32, (2000, 3, 32, 32), normalised with the training statistics

# %%
lesson01.exercise_1(test_images, train_mean_list, train_std_list, test_x)

# %% [markdown]
# #### Solution

# %% tags=["solution"]
# Solution: open it once you have tried. It uses its own names, so your answer stays as it is.
solution_pixels = test_images.float() / 255
solution_mean = torch.tensor(train_mean_list).reshape(3, 1, 1)
solution_std = torch.tensor(train_std_list)[:, None, None]
solution_test_x = (solution_pixels - solution_mean) / solution_std
lesson01.exercise_1(test_images, train_mean_list, train_std_list, solution_test_x)

# %% [markdown]
# ### Exercise 2 · The brightest photo
#
# Fill in `brightness`, a tensor with one number per training image: the mean of all its pixel
# values, all three channels, on the [0, 1] scale. Then fill in `brightest`, the index of the
# brightest image in `images`.
#
# <details><summary>Hint 1</summary>
#
# Which dimensions should disappear so that one number per image is left? And which dtype does a
# mean need?
# </details>
#
# <details><summary>Hint 2</summary>
#
# The section on reductions computed a mean per image of the batch. A reduction without `dim`
# on the resulting vector returns the position of its largest value.
# </details>

# %%
brightness = ...  # shape (10000,), values in [0, 1]
brightest = ...  # an int: the index of the brightest image

# %%
lesson01.exercise_2(images, brightness, brightest)

# %% [markdown]
# #### Solution

# %% tags=["solution"]
# Solution: open it once you have tried. It uses its own names, so your answer stays as it is.
solution_brightness = (images.float() / 255).mean(dim=(1, 2, 3))
solution_brightest = solution_brightness.argmax().item()
lesson01.exercise_2(images, solution_brightness, solution_brightest)

# %% [markdown]
# ## Summary
#
# - A batch of colour images is a tensor of shape `(N, C, H, W)`; `shape` and `dtype` describe
#   any tensor, and indexing takes one index per dimension.
# - Store pixels as `uint8`, compute with `float32`: `uint8` arithmetic wraps around silently,
#   so convert with `.float() / 255` first.
# - A reduction removes the dimensions named in `dim`; `keepdim=True` keeps them with size 1.
# - Broadcasting compares shapes from the right and stretches sizes of 1, so a `(1, C, 1, 1)`
#   mean normalises every pixel of its channel without a loop.
# - `permute` reorders dimensions (`reshape` only regroups); `stack` makes a batch out of single
#   images, `cat` joins batches.
# - `@` is the matrix product: `(n, k) @ (k, m)` is `(n, m)`; `(N, 3072) @ (3072,)` gives one
#   score per image.
#
# Next: [03 · Autograd](03_autograd.ipynb), where the score learns its weights; or first the
# side lesson [02 · Contiguity and strides](02_contiguity_strides.ipynb), on how a tensor sits in
# memory.
