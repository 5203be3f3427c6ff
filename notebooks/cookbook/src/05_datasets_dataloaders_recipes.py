# %% [markdown]
# # 05 · Dataset and DataLoader with IMDB and CIFAR2: recipes
#
# [![Open In Colab](https://colab.research.google.com/assets/colab-badge.svg)](https://colab.research.google.com/github/pytorch-cookbook/pytorch-cookbook/blob/main/notebooks/cookbook/05_datasets_dataloaders_recipes.ipynb)
#
# **The cookbook of chapter 05.** New to the topic? [The lesson](../05_datasets_dataloaders.ipynb) teaches it
# step by step on the course's running example. Here each recipe answers one task; the
# [recipe index](../RECIPES.md) and the [error index](../ERRORS.md) find the one you need.
#
# A training run is only as good as the data pipeline that feeds it. After this notebook you can
# say which part of PyTorch does each step of getting a batch, build datasets from arrays, image
# folders and text files, augment images with `transforms.v2`, turn movie reviews into padded
# tensors without any NLP library, choose the DataLoader's settings by measuring them, and solve
# the common tasks (indices, dicts, infinite loaders, splits, streaming, class imbalance). It ends
# by training a CNN on CIFAR2 and a text model on IMDB to real test accuracy.
#
# **Prerequisites:** [01](../01_tensors.ipynb)-[04](../04_modules.ipynb).
#
# **Run time:** about 40 s on a 2-core CPU · GPU optional.

# %%
import sys

if (
    "google.colab" in sys.modules
):  # Colab: install the course's helpers and what the notebooks import
    import subprocess

    spec = "pytorch-cookbook[notebooks] @ git+https://github.com/pytorch-cookbook/pytorch-cookbook"
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", spec], check=True)

import inspect
import itertools
import multiprocessing
import os
import pickle
import time
import warnings
from pathlib import Path

import matplotlib.cbook
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import torch
import torch.nn.functional as F
import torchmetrics
from PIL import Image
from torch import nn
from torch.utils.data import (
    BatchSampler,
    DataLoader,
    Dataset,
    RandomSampler,
    Sampler,
    Subset,
    SubsetRandomSampler,
    TensorDataset,
    WeightedRandomSampler,
    default_collate,
    random_split,
)
from torchvision import datasets
from torchvision.transforms import v2

from helpers.check import check, expect_error
from helpers.data import cache_path, fetch
from helpers.datasets import (
    GeneratorDraws,
    LineStream,
    RandomDraws,
    SlowReads,
    reseed_dataset_rng,
    same_numpy_seed,
)
from helpers.env import setup
from helpers.exercises import ch05
from helpers.images import channel_stats, load_cifar2
from helpers.models import small_cnn
from helpers.plot import plot_history, show_images
from helpers.text import Vocab, pad, prepare_imdb, tokenize
from helpers.train import decay_groups, fit, import_torchkeras

torchkeras = import_torchkeras()
device = setup(seed=0)


# %% [markdown]
# ## Follow one batch through a DataLoader
#
# Getting one batch takes five steps, each owned by one piece:
#
# 1. `len(dataset)` says how many samples there are (`Dataset.__len__`);
# 2. the **sampler** yields sample indices in some order (sequential, shuffled, weighted);
# 3. the **batch sampler** groups indices into batches of `batch_size`;
# 4. `dataset[i]` loads each sample (`Dataset.__getitem__`), in worker processes if
#    `num_workers > 0`;
# 5. `collate_fn` turns a list of samples into one batch (stacking tensors).
#
# Written out, a DataLoader without workers is 10 lines. Given the same shuffled sampler, it
# yields exactly the batches of the real one:

# %%
def simple_loader(dataset, batch_size, sampler, collate_fn=default_collate):
    batch = []
    for index in sampler:  # 2. indices (the sampler knows len(dataset), step 1)
        batch.append(index)  # 3. grouped into batches
        if len(batch) == batch_size:
            yield collate_fn([dataset[i] for i in batch])  # 4. load, 5. collate
            batch = []
    if batch:
        yield collate_fn([dataset[i] for i in batch])


squares = TensorDataset(torch.arange(10), torch.arange(10) ** 2)
mine = simple_loader(squares, 4, RandomSampler(squares, generator=torch.Generator().manual_seed(1)))
real = DataLoader(
    squares,
    batch_size=4,
    sampler=RandomSampler(squares, generator=torch.Generator().manual_seed(1)),
)
for (xa, ya), (xb, _) in zip(mine, real, strict=True):
    print(xa.tolist(), ya.tolist(), "| same as DataLoader:", torch.equal(xa, xb))
print(list(BatchSampler(range(10), batch_size=4, drop_last=False)))  # step 3 on its own

# %% [markdown]
# ## Build a dataset from NumPy or pandas with `TensorDataset`
#
# When the data already fits in memory as arrays, `TensorDataset` indexes several tensors in step.
# `random_split` with a seeded generator gives a reproducible split; `dataset_a + dataset_b`
# concatenates; `Subset` picks indices; `SubsetRandomSampler` shuffles within chosen indices.

# %%
from sklearn.datasets import load_iris

iris = load_iris(as_frame=True).frame  # a pandas DataFrame, shipped with scikit-learn
features = torch.tensor(iris.drop(columns="target").to_numpy(), dtype=torch.float32)
labels = torch.tensor(iris["target"].to_numpy())
iris_ds = TensorDataset(features, labels)
train_ds, val_ds = random_split(iris_ds, [0.8, 0.2], generator=torch.Generator().manual_seed(0))
print(
    len(iris_ds), "->", len(train_ds), "+", len(val_ds), "| first val indices:", val_ds.indices[:5]
)
print("concatenated:", len(train_ds + val_ds), "| subset:", len(Subset(iris_ds, range(10))))
sampler = SubsetRandomSampler(range(100, 150), generator=torch.Generator().manual_seed(0))
batch_x, batch_y = next(iter(DataLoader(iris_ds, batch_size=8, sampler=sampler)))
print("labels from the last 50 rows only:", batch_y.tolist())

# %% [markdown]
# ## Load an image folder with `ImageFolder`
#
# `ImageFolder` expects one sub-folder per class and numbers the classes in sorted folder order.
# The course's CIFAR2 (CIFAR-10's airplanes and automobiles) comes in that layout; `fetch`
# downloads it once (or takes it from a mirror) and returns the folder.

# %%
cifar_root = fetch("cifar2")
folder_ds = datasets.ImageFolder(cifar_root / "train")
image, label = folder_ds[0]
print(len(folder_ds), "images;", folder_ds.class_to_idx)
print("first sample:", Path(folder_ds.samples[0][0]).relative_to(cifar_root), "->", label)
print("an item is (PIL image, int):", type(image).__name__, image.size, image.mode)
as_float = datasets.ImageFolder(cifar_root / "train", target_transform=lambda y: float(y))
print("target_transform changes labels:", as_float[0][1])

# %% [markdown]
# ## Look at a grid of sample images
#
# Look at the data before training on it. `helpers.plot.show_images` draws a batch of
# `(N, C, H, W)` images with their class names and returns the figure; `plt.show()` displays it:

# %%
some = range(0, 10000, 625)
show_images(
    torch.stack([v2.functional.pil_to_tensor(folder_ds[i][0]) for i in some]),
    [folder_ds[i][1] for i in some],
    folder_ds.classes,
)
plt.show()

# %% [markdown]
# ### Save a grid of images to a PNG file with `save_image`
#
# `torchvision.utils.save_image` tiles a batch with `make_grid` and writes it as a picture: the
# way to look at a batch (an augmented one, a model's outputs) on a machine without a display. It
# expects floats in [0, 1]: divide `uint8` images by 255.

# %%
from torchvision.utils import make_grid, save_image

grid_batch = torch.stack([v2.functional.pil_to_tensor(folder_ds[i][0]) for i in some]) / 255
Path("runs").mkdir(exist_ok=True)
save_image(grid_batch, "runs/05_grid.png", nrow=8, padding=2)
saved = Image.open("runs/05_grid.png")
grid = make_grid(grid_batch, nrow=8, padding=2)
print("file:", saved.size, saved.mode, "| grid tensor (C, H, W):", tuple(grid.shape))
check(
    saved.size == (grid.shape[2], grid.shape[1]), "the PNG is the make_grid picture, width × height"
)

# %% [markdown]
# ## Augment images with `transforms.v2`
#
# `torchvision.transforms.v2` transforms images (PIL or tensors, also in batches), and moves boxes
# and masks along with them. Each random transform draws new parameters every call. Shown on a real
# photo that matplotlib ships, so no download is needed:

# %%
with matplotlib.cbook.get_sample_data("grace_hopper.jpg") as f:
    photo = v2.functional.pil_to_tensor(Image.open(f).convert("RGB"))
augment = v2.Compose(
    [
        v2.RandomResizedCrop(160, scale=(0.3, 1.0), antialias=True),
        v2.RandomHorizontalFlip(),
        v2.ColorJitter(brightness=0.4, contrast=0.4, saturation=0.4, hue=0.05),
        v2.RandomRotation(15),
    ]
)
torch.manual_seed(0)
variants = [v2.functional.resize(photo, [160, 160], antialias=True)]
variants += [augment(photo) for _ in range(7)]
print("photo:", tuple(photo.shape), photo.dtype, "-> each variant:", tuple(variants[1].shape))
show_images(torch.stack(variants), ncols=8)
plt.show()

# %% [markdown]
# ### Pitfall: a random transform on a batch draws once for the whole batch
#
# Called on a batch tensor `(N, C, H, W)`, a `v2` random transform draws **one** set of
# parameters and applies it to every image: all flipped or none, one crop position for all. For
# per-image randomness apply the transform per sample: in the Dataset's `__getitem__` (what
# `ImageFolder(transform=...)` does) or image by image.

# %%
torch.manual_seed(0)
batch = torch.stack([v2.functional.resize(photo, [32, 32], antialias=True)] * 8)
flip = v2.RandomHorizontalFlip()
per_batch = [
    sum(torch.equal(img, orig.flip(-1)) for img, orig in zip(flip(batch), batch, strict=True))
    for _ in range(5)
]
per_image = [sum(torch.equal(flip(img), img.flip(-1)) for img in batch) for _ in range(5)]
print("flipped images out of 8, batch call, 5 tries:  ", per_batch)
print("flipped images out of 8, per image, 5 tries:   ", per_image)
check(set(per_batch) <= {0, 8}, "a batch call flips all images or none")
check(any(0 < k < 8 for k in per_image), "per image, some images flip and others do not")

# %% [markdown]
# ## Convert between PIL images and tensors: `ToTensor` vs `PILToTensor`
#
# The classic `transforms.ToTensor()` does two things at once: it moves channels first (HWC →
# CHW) **and** scales `uint8` to `float32` in [0, 1]. `PILToTensor()` only moves channels and
# keeps `uint8` 0-255. In `transforms.v2`, `ToTensor` is deprecated (it warns); write
# `v2.Compose([v2.ToImage(), v2.ToDtype(torch.float32, scale=True)])`, or keep `uint8` with
# `v2.PILToTensor()` and scale later (on the GPU, or inside the model as this course does).
# `ToPILImage()` goes back: a float tensor in [0, 1] or a `uint8` tensor becomes a PIL image.

# %%
from torchvision import transforms as classic

pil = v2.functional.to_pil_image(photo[:, :4, :5])  # a 4 × 5 RGB PIL image
scaled = classic.ToTensor()(pil)
raw = v2.PILToTensor()(pil)
modern = v2.Compose([v2.ToImage(), v2.ToDtype(torch.float32, scale=True)])(pil)
print(f"PIL size (W, H): {pil.size}")
print(f"ToTensor:    {tuple(scaled.shape)} {scaled.dtype} max {scaled.max().item():.4f}")
print(f"PILToTensor: {tuple(raw.shape)} {raw.dtype} max {raw.max().item()}")
round_trip = classic.ToPILImage()(scaled)
check(
    torch.allclose(scaled, modern) and torch.equal(raw, (scaled * 255).round().to(torch.uint8)),
    "ToTensor = v2.ToImage + ToDtype(float32, scale=True) = PILToTensor / 255",
)
check(
    np.array_equal(np.asarray(round_trip), np.asarray(pil)),
    "ToPILImage turns the scaled tensor back into the same image",
)

# %% [markdown]
# ## Use different transforms for training and testing
#
# Training transforms add randomness (a different crop and flip each epoch, so the model sees more
# variety); test transforms must be deterministic, so a test image always gives the same input.
# The same training sample read twice differs; a test sample does not:

# %%
train_tf = v2.Compose(
    [
        v2.PILToTensor(),
        v2.RandomCrop(32, padding=4, padding_mode="reflect"),
        v2.RandomHorizontalFlip(),
    ]
)
test_tf = v2.PILToTensor()
train_view = datasets.ImageFolder(cifar_root / "train", transform=train_tf)
test_view = datasets.ImageFolder(cifar_root / "test", transform=test_tf)
torch.manual_seed(0)
print("train sample twice equal:", torch.equal(train_view[3][0], train_view[3][0]))
print("test sample twice equal: ", torch.equal(test_view[3][0], test_view[3][0]))


# %% [markdown]
# ## Decode images once and keep them in memory
#
# Decoding a JPEG costs far more than cropping it. CIFAR2 is 10,000 training images of 3 KB
# each as `uint8` tensors (30 MB), so we decode once, cache the tensor under `data/cache/`
# (`helpers.images.load_cifar2`) and apply the random transforms to tensors. The model will
# convert to float and normalise whole batches itself (next sections).

# %%
class ImageTensors(Dataset):
    """uint8 images (N, C, H, W) and labels held in memory, with an optional transform."""

    def __init__(self, images: torch.Tensor, labels: torch.Tensor, transform=None):
        self.images, self.labels, self.transform = images, labels, transform

    def __len__(self) -> int:
        return len(self.images)

    def __getitem__(self, i: int):
        image = self.images[i]
        return (self.transform(image) if self.transform else image), self.labels[i]


train_images, train_labels, classes = load_cifar2("train")
test_images, test_labels, _ = load_cifar2("test")
print(
    tuple(train_images.shape),
    train_images.dtype,
    f"{train_images.nbytes / 2**20:.0f} MiB;",
    "test:",
    tuple(test_images.shape),
    "| classes:",
    classes,
)

# %% [markdown]
# How much that buys, measured on the same 2,000 images with the same DataLoader settings
# (timings vary from machine to machine):

# %% tags=["nbval-ignore-output"]
crop_flip = v2.Compose(
    [v2.RandomCrop(32, padding=4, padding_mode="reflect"), v2.RandomHorizontalFlip()]
)
every_fifth = list(range(0, 10000, 5))
from_jpeg = Subset(train_view, every_fifth)
from_memory = Subset(ImageTensors(train_images, train_labels, crop_flip), every_fifth)


def samples_per_second(dataset: Dataset, **loader_args) -> float:
    start = time.perf_counter()
    n = sum(len(y) for _, y in DataLoader(dataset, batch_size=100, **loader_args))
    return n / (time.perf_counter() - start)


jpeg_rate, memory_rate = samples_per_second(from_jpeg), samples_per_second(from_memory)
print(f"decode every time: {jpeg_rate:7.0f} samples/s")
print(f"decoded once:      {memory_rate:7.0f} samples/s  ({memory_rate / jpeg_rate:.1f}×)")

# %%
check(
    memory_rate > 1.5 * jpeg_rate,
    "in-memory tensors feed the loader at least 1.5× faster than decoding JPEGs",
    measured=f"{memory_rate / jpeg_rate:.1f}×",
    timing=True,
)


# %% [markdown]
# ## Choose `num_workers` by measuring it
#
# With `num_workers > 0`, worker processes call `__getitem__` while the main process trains.
# What they can take over depends on what `__getitem__` spends its time on:
#
# - **waiting** (a slow disk, a network file system): workers overlap the waits, on any machine,
#   once they run;
# - **CPU work** (decoding JPEGs): workers help only when there are idle cores. They compete with
#   the main process and with everything else running.
#
# Starting workers costs time too: little with `fork` (Linux up to Python 3.13), about a second
# per worker with `spawn` (macOS, Windows) and `forkserver` (Linux from Python 3.14), which import
# torch again. A short epoch can be slower with workers for that reason alone. So the slow-disk
# rate below is that of the **second** epoch of a loader with `persistent_workers=True`, whose
# workers are already running; `helpers.datasets.SlowReads` adds a 3 ms wait per image (a module
# class, so workers find it under every start method). The JPEG rate includes starting workers.

# %% tags=["nbval-ignore-output"]
def steady_rate(dataset: Dataset, num_workers: int) -> float:
    """Samples per second in the second epoch, the workers (if any) started in the first."""
    loader = DataLoader(
        dataset, batch_size=100, num_workers=num_workers, persistent_workers=num_workers > 0
    )
    for _ in loader:  # the first epoch starts the workers
        pass
    start = time.perf_counter()
    n = sum(len(y) for _, y in loader)
    return n / (time.perf_counter() - start)


slow_disk = SlowReads(TensorDataset(train_images[:400], train_labels[:400]), delay=0.003)
waiting = {0: samples_per_second(slow_disk), 2: steady_rate(slow_disk, num_workers=2)}
decoding = {n: samples_per_second(from_jpeg, num_workers=n) for n in (0, 2)}
for name, rates in {"slow disk": waiting, "JPEG decoding": decoding}.items():
    print(f"{name:<14}" + "".join(f"  {n} workers: {r:6.0f}/s" for n, r in rates.items()), end="")
    print(f"  → {rates[2] / rates[0]:.1f}×")
print(f"CPU cores: {os.cpu_count()}")

# %% [markdown]
# On an idle machine with 2 or more cores, JPEG decoding usually gets faster with 2 workers too;
# on a busy or single-core machine, or where starting workers is slow, it may not. The claim
# checked below is the one that holds on any machine: running workers hide waiting. Pick
# `num_workers` by measuring your own loader, over more than its first epoch.

# %%
plain = Subset(datasets.ImageFolder(cifar_root / "train", transform=v2.PILToTensor()), every_fifth)
images_0 = torch.cat([x for x, _ in DataLoader(plain, batch_size=100)])
images_2 = torch.cat([x for x, _ in DataLoader(plain, batch_size=100, num_workers=2)])
check(torch.equal(images_0, images_2), "workers return the same images in the same order")
check(
    waiting[2] > 1.3 * waiting[0],
    "2 running workers read a slow disk at least 1.3× faster",
    measured=f"{waiting[2] / waiting[0]:.1f}×",
    timing=True,
)

# %% [markdown]
# **How worker processes get the dataset.** It depends on the multiprocessing *start method*:
#
# - `fork` (the Linux default up to Python 3.13): the worker is a copy of the main process;
#   nothing is pickled. The pitfall here is memory: every Python object a worker touches gets
#   its reference count written, which copies the memory page it lives on, so a dataset held as
#   a big list of Python objects grows in every worker ("copy-on-read"). Keep data in a few large
#   tensors or NumPy arrays, as this notebook does.
# - `spawn` (the default on macOS and Windows) and `forkserver` (the Linux default since
#   Python 3.14): the worker is a fresh interpreter; the dataset is pickled and its class
#   re-imported **by name**. A `Dataset`, `collate_fn` or `worker_init_fn` defined in a notebook
#   lives in `__main__`, which the worker cannot import: it fails with
#   `Can't get attribute 'MyDataset' on <module '__main__'>`. Define them in a `.py` module (as
#   the course's `helpers.datasets` does), and guard a script's training code with
#   `if __name__ == "__main__":`.
# - Forcing `fork` where it is not the default is no fix: on macOS it is documented as unsafe
#   (system libraries are not fork-safe) and can crash.
#
# Every dataset given to workers in this notebook comes from a module (`ImageFolder`,
# `TensorDataset`, `helpers.datasets`), so the demos run under any start method:

# %%
WORKERS = 2
print("start method here:", multiprocessing.get_start_method(), "| workers in the demos:", WORKERS)

# %% [markdown]
# ### Pitfall: `Can't pickle <function <lambda>>` once workers start under `spawn`
#
# A lambda has no name to import it by, so it cannot be pickled at all: `transform=lambda ...`
# (or `collate_fn=lambda ...`) works under `fork` and fails under `spawn` as the first worker
# starts, so the same code breaks when it moves to macOS, Windows or Python 3.14. Give the
# transform a name in a module, or use a `v2` transform (or `functools.partial` of a module's
# function). A spawned worker is asked for here, with the course's module-level `ImageTensors`:

# %%
import helpers.datasets  # its ImageTensors: the one written above lives in __main__

few = helpers.datasets.ImageTensors(train_images[:8], train_labels[:8])
spawned = {"num_workers": 1, "multiprocessing_context": "spawn"}
few.transform = lambda image: image.float() / 255  # do not: no name to pickle it by
with warnings.catch_warnings():
    warnings.filterwarnings("ignore", message="Got pickle error")  # torch's hint: try fork
    with expect_error(pickle.PicklingError, match="lambda"):
        next(iter(DataLoader(few, **spawned)))
few.transform = v2.ToDtype(torch.float32, scale=True)  # the same, as a v2 transform
sent = pickle.loads(pickle.dumps(few))  # what a spawned worker receives
check(
    torch.allclose(sent[3][0], train_images[3].float() / 255, atol=1e-6),
    "the dataset with a v2 transform pickles, and the copy scales as the lambda did",
)


# %% [markdown]
# A function defined inside another function (a transform made by a `make_transform()` helper,
# say) cannot be pickled either, and its message depends on the Python version: `AttributeError:
# Can't pickle local object 'make_transform.<locals>.<lambda>'` on Python 3.11 (stored here),
# `AttributeError: Can't get local object '...'` on later releases up to 3.13, and `PicklingError:
# Can't pickle local object <function make_transform.<locals>.<lambda> at 0x...>` from Python
# 3.14 on. `pickle.dumps` shows it without starting a worker:

# %%
def make_transform():
    return lambda image: image.float() / 255  # made inside a function: a "local object"


with expect_error((AttributeError, pickle.PicklingError), match="(pickle|get) local object"):
    pickle.dumps(make_transform())

# %% [markdown]
# ## Know what the other DataLoader settings do
#
# - `drop_last=True` drops the last incomplete batch (useful for batch norm and fixed-shape steps).
# - `pin_memory=True` puts batches in page-locked memory so `.to("cuda", non_blocking=True)`
#   overlaps the copy with compute; it only matters with a CUDA GPU.
# - `persistent_workers=True` keeps workers alive between epochs instead of restarting them;
#   `prefetch_factor` is how many batches each worker prepares ahead (default 2).
# - `generator=` makes shuffling reproducible without touching the global seed.

# %%
print(
    "batches:",
    len(DataLoader(range(10), batch_size=4)),
    "vs with drop_last:",
    len(DataLoader(range(10), batch_size=4, drop_last=True)),
)


def order(seed: int) -> list[int]:
    loader = DataLoader(
        range(8), batch_size=8, shuffle=True, generator=torch.Generator().manual_seed(seed)
    )
    return next(iter(loader)).tolist()


print("same seed, same order:", order(5) == order(5), order(5))
loader = DataLoader(
    range(8),
    batch_size=4,
    num_workers=WORKERS,
    persistent_workers=True,
    prefetch_factor=2,
    pin_memory=torch.cuda.is_available(),
)
print("two epochs from one persistent loader:", [b.tolist() for _ in range(2) for b in loader])

# %% [markdown]
# ## Know how workers are seeded, and what `generator=` and `worker_init_fn` are for
#
# Older PyTorch tutorials warn that every worker produces the **same** "random" augmentations:
# workers forked with identical NumPy random states. Each worker seeds `torch` and Python's `random` with the
# loader's base seed plus the worker id; PyTorch 1.9 added NumPy's global generator to that. `helpers.datasets.RandomDraws` reports, per item, which worker drew what:

# %%
print(inspect.getsource(RandomDraws.__getitem__))


def draws(seed: int, **loader_args) -> pd.DataFrame:
    loader = DataLoader(
        RandomDraws(4),
        batch_size=1,
        num_workers=WORKERS,
        generator=torch.Generator().manual_seed(seed),
        **loader_args,
    )
    rows = [[v.item() for v in item] for item in loader]
    return pd.DataFrame(rows, columns=["item", "worker", "torch", "numpy", "random"])


table = draws(0)
print(table.round(4).to_string(index=False))
first = table.groupby("worker").first()
check(first.numpy.nunique() == WORKERS, "each worker draws different NumPy numbers")

# %% [markdown]
# The old bug, reproduced on purpose: a `worker_init_fn` that gives every worker the same NumPy
# seed (`helpers.datasets.same_numpy_seed`) makes both workers' NumPy draws identical.

# %%
bugged = draws(0, worker_init_fn=same_numpy_seed).groupby("worker").first()
print("first NumPy draw per worker:", bugged.numpy.round(4).tolist())
check(bugged.numpy.nunique() == 1, "with one NumPy seed for all, the workers repeat each other")

# %% [markdown]
# So what is left to do by hand?
#
# - `generator=torch.Generator().manual_seed(s)` fixes the loader's base seed, hence the shuffle
#   order **and** every worker's seeds: the same `s` gives the same run, another `s` another run,
#   without touching the global seed.
# - `worker_init_fn` is for what PyTorch does not seed: a library with its own generator, or a
#   generator **object** the Dataset holds (`np.random.default_rng(seed)` in `__init__`), which
#   every worker receives as a copy in the same state; and per-worker setup such as opening a
#   database connection or choosing an `IterableDataset`'s shard (next sections).

# %%
check(
    draws(0).equals(table) and not draws(1).equals(table),
    "the same generator seed repeats every worker's draws; another seed changes them",
)


# %% [markdown]
# The generator object, shown: `helpers.datasets.GeneratorDraws` draws from `self.rng`, and
# `reseed_dataset_rng` is the `worker_init_fn` that gives each worker's copy its own generator,
# from `get_worker_info().seed`:

# %%
def first_draws(**loader_args) -> list[float]:
    """The first draw of each of the WORKERS workers."""
    loader = DataLoader(
        GeneratorDraws(2 * WORKERS), batch_size=2, num_workers=WORKERS, **loader_args
    )
    by_worker = {int(w[0]): round(float(v[0]), 4) for _, w, v in loader}
    return [by_worker[w] for w in sorted(by_worker)]


held = first_draws(generator=torch.Generator().manual_seed(0))
reseeded = first_draws(
    generator=torch.Generator().manual_seed(0), worker_init_fn=reseed_dataset_rng
)
print("the Dataset's own generator:", held, "· reseeded per worker:", reseeded)
check(
    len(set(held)) == 1 and len(set(reseeded)) == WORKERS,
    "workers copy a generator object the Dataset holds; a worker_init_fn gives each its own",
)


# %% [markdown]
# ## Return each sample's index along with the sample
#
# To find which samples a model gets wrong, have the dataset return the index too. A wrapper
# does it for any dataset:

# %%
class WithIndex(Dataset):
    def __init__(self, dataset: Dataset):
        self.dataset = dataset

    def __len__(self) -> int:
        return len(self.dataset)

    def __getitem__(self, i: int):
        return (*self.dataset[i], i)


x, y, idx = next(
    iter(
        DataLoader(
            WithIndex(iris_ds),
            batch_size=4,
            shuffle=True,
            generator=torch.Generator().manual_seed(0),
        )
    )
)
print("indices:", idx.tolist(), "| rows match:", torch.equal(x, features[idx]))


# %% [markdown]
# ## Return a dict from `__getitem__`
#
# The default `collate_fn` collates dicts key by key (and lists, tuples, numbers, NumPy arrays,
# recursively), so named fields survive batching:

# %%
class Named(Dataset):
    def __len__(self):
        return len(iris_ds)

    def __getitem__(self, i):
        return {"features": features[i], "label": labels[i], "id": f"flower-{i}"}


batch = next(iter(DataLoader(Named(), batch_size=3)))
print({k: (tuple(v.shape) if torch.is_tensor(v) else v) for k, v in batch.items()})


# %% [markdown]
# ## Loop forever for step-based training
#
# Training for a number of **steps** rather than epochs needs an endless stream of batches.
# `itertools.cycle` looks right but stores the first epoch's batches and replays them, so the
# order never reshuffles. Re-iterate the loader instead:

# %%
def forever(loader: DataLoader):
    while True:
        yield from loader  # a new epoch, freshly shuffled, each time


loader = DataLoader(
    range(4), batch_size=2, shuffle=True, generator=torch.Generator().manual_seed(0)
)
print("cycle:  ", [b.tolist() for b in itertools.islice(itertools.cycle(loader), 6)])
print("forever:", [b.tolist() for b in itertools.islice(forever(loader), 6)])

# %% [markdown]
# ## Split into training and validation three ways
#
# `random_split` (new dataset objects), `SubsetRandomSampler` (one dataset, two samplers) and
# indices by hand (`Subset`, when the split must follow a rule such as stratification). All three
# below hold out 30 iris flowers:

# %%
gen = torch.Generator().manual_seed(0)
train_a, val_a = random_split(iris_ds, [120, 30], generator=gen)
perm = torch.randperm(150, generator=torch.Generator().manual_seed(0))
train_b = DataLoader(iris_ds, batch_size=16, sampler=SubsetRandomSampler(perm[:120]))
val_b = DataLoader(iris_ds, batch_size=16, sampler=SubsetRandomSampler(perm[120:]))
per_class = [torch.nonzero(labels == k).squeeze(1) for k in range(3)]  # 10 per class to validation
val_c = Subset(iris_ds, torch.cat([idx[:10] for idx in per_class]).tolist())
train_c = Subset(iris_ds, torch.cat([idx[10:] for idx in per_class]).tolist())
print(
    len(val_a),
    sum(len(y) for _, y in val_b),
    len(val_c),
    "| stratified classes:",
    torch.bincount(torch.stack([y for _, y in val_c])).tolist(),
)

# %% [markdown]
# ## Stream a file with an `IterableDataset`, sharded across workers
#
# An `IterableDataset` yields samples instead of indexing them: for data too big to index, a
# stream, or a file read line by line. Each worker gets a **copy** of it, so without sharding every
# worker yields everything and the loader returns duplicates:

# %%
lines_file = cache_path("stream-demo.txt")
lines_file.parent.mkdir(parents=True, exist_ok=True)
lines_file.write_text("".join(f"line {i}\n" for i in range(6)))
print(inspect.getsource(LineStream.__iter__))  # helpers.datasets: workers can import it
counts = {}
for shard in (False, True):
    loader = DataLoader(LineStream(lines_file, shard), batch_size=2, num_workers=WORKERS)
    got = [s for batch in loader for s in batch]
    counts[shard] = len(got)
    print(f"shard={shard!s:<5} {len(got)} items: {sorted(got)}")
check(counts == {False: 12, True: 6}, "unsharded, 2 workers yield every line twice; sharded, once")

# %% [markdown]
# ## Balance classes with `WeightedRandomSampler`
#
# With a rare class, a plain shuffle gives batches that barely contain it. Weighting each sample
# by the inverse frequency of its class makes the sampler draw classes about equally often
# (with replacement). On synthetic 90/10 labels (any seed gives about 50/50; exactly 500/500
# here is chance):

# %%
imbalanced = torch.cat([torch.zeros(900), torch.ones(100)]).long()
class_weight = 1.0 / torch.bincount(imbalanced).float()
sampler = WeightedRandomSampler(
    class_weight[imbalanced],
    num_samples=1000,
    replacement=True,
    generator=torch.Generator().manual_seed(0),
)
drawn = imbalanced[torch.tensor(list(sampler))]
print("class counts in the data:   ", torch.bincount(imbalanced).tolist())
print("class counts in 1000 draws: ", torch.bincount(drawn).tolist())

# %% [markdown]
# ## Turn movie reviews into token ids
#
# The IMDB reviews are 50,000 text files. Without torchtext (deprecated) or any NLP library, the
# steps are: clean (lower-case, drop the `<br />` tags), split into tokens with a regular
# expression, keep the 20,000 most frequent training tokens as a vocabulary with id 0 for padding
# and 1 for unknown words, encode, then pad or truncate to a fixed length. `helpers.text` holds
# these steps; here they are on one real review:

# %%
imdb_root = fetch("imdb")
review_path = sorted((imdb_root / "train" / "pos").glob("*.txt"))[0]
review = review_path.read_text(encoding="utf-8")
print(review_path.name, "(id_rating):", review[:150], "...")
tokens = tokenize(review)
print(len(tokens), "tokens:", tokens[:12])

# %% [markdown]
# The whole recipe, written out on 2,000 training reviews: a `Counter` of tokens, the most frequent
# ones as the vocabulary (after `<pad>` and `<unk>`), a dict from token to id, then encode,
# truncate and pad. `helpers.text` does the same for the real data set (its vocabulary from all
# 25,000 training reviews); the check compares both on these 2,000 reviews:

# %%
from collections import Counter

sample_paths = [
    path
    for label in ("neg", "pos")
    for path in sorted((imdb_root / "train" / label).glob("*.txt"))[:1000]
]
docs = [tokenize(path.read_text(encoding="utf-8")) for path in sample_paths]
counts = Counter(token for doc in docs for token in doc)
itos = ["<pad>", "<unk>"] + [token for token, _ in counts.most_common(5000 - 2)]
stoi = {token: i for i, token in enumerate(itos)}


def encode(doc: list[str], max_len: int = 400) -> list[int]:
    ids = [stoi.get(token, 1) for token in doc][:max_len]  # 1 = unknown; truncate
    return ids + [0] * (max_len - len(ids))  # pad with 0


by_hand = torch.tensor([encode(doc) for doc in docs])
print(f"{len(counts):,} distinct tokens; kept {len(itos):,}; encoded {tuple(by_hand.shape)}")
helper_vocab = Vocab.build(docs, max_size=5000)
check(
    itos == helper_vocab.itos
    and torch.equal(by_hand, pad([helper_vocab.encode(doc) for doc in docs], 400)),
    "the written-out vocabulary and encoding equal helpers.text's",
)

# %% [markdown]
# Reading, tokenising and encoding all 50,000 reviews means reading 50,000 files, so
# `prepare_imdb` does it once and caches the tensors under `data/cache/`; later runs load that
# cache instead:

# %%
imdb = prepare_imdb(vocab_size=20_000, max_len=400)
vocab = Vocab(imdb["itos"])
print("vocabulary:", len(vocab), vocab.itos[:12])
print(
    "train:",
    tuple(imdb["train_x"].shape),
    "test:",
    tuple(imdb["test_x"].shape),
    "| positive share:",
    imdb["train_y"].float().mean().item(),
)
print("encoded:", vocab.encode(tokens[:8]), "->", vocab.decode(vocab.encode(tokens[:8])))
lengths = imdb["train_lengths"].float()
print(
    f"tokens per review: median {lengths.median():.0f}, 90th percentile "
    f"{lengths.quantile(0.9):.0f}; {(lengths > 400).float().mean():.0%} are truncated at 400"
)

# %% [markdown]
# ## Compare one file per sample with indexing encoded tensors
#
# A common older approach writes each tokenised review to its own file and reads, encodes and
# pads it in `__getitem__`. The approach to use encodes once and indexes a tensor. Same 5,000 reviews,
# same DataLoader settings (batch size 100, shuffled, main process), measured:

# %%
files_dir = cache_path("imdb-token-files")
subset = range(0, 25000, 5)
if len(list(files_dir.glob("*.txt"))) != len(subset):  # written once, reused afterwards
    files_dir.mkdir(parents=True, exist_ok=True)
    for i in subset:
        (files_dir / f"{i}.txt").write_text(" ".join(vocab.decode(imdb["train_x"][i].tolist())))


class ReviewFiles(Dataset):
    """The older way: one token file per review, encoded and padded on every read."""

    def __init__(self, folder: Path, labels: torch.Tensor, max_len: int = 400):
        self.paths = sorted(folder.glob("*.txt"), key=lambda p: int(p.stem))
        self.labels, self.max_len = labels, max_len

    def __len__(self) -> int:
        return len(self.paths)

    def __getitem__(self, i: int):
        ids = vocab.encode(self.paths[i].read_text().split())[: self.max_len]
        x = torch.zeros(self.max_len, dtype=torch.int64)
        x[: len(ids)] = torch.tensor(ids, dtype=torch.int64)
        return x, self.labels[int(self.paths[i].stem)]


file_ds = ReviewFiles(files_dir, imdb["train_y"])
tensor_ds = TensorDataset(imdb["train_x"][subset], imdb["train_y"][subset])
check(torch.equal(file_ds[7][0], tensor_ds[7][0]), "both datasets give the same encoded review")

# %% tags=["nbval-ignore-output"]
# The tensors take a few dozen milliseconds: their rate is the best of 5 passes, so that one
# pause of the machine (a garbage collection, another process) cannot decide the ratio.
rates = {
    "one file per sample": samples_per_second(
        file_ds, shuffle=True, generator=torch.Generator().manual_seed(0)
    ),
    "indexed tensors": max(
        samples_per_second(tensor_ds, shuffle=True, generator=torch.Generator().manual_seed(0))
        for _ in range(5)
    ),
}
for name, rate in rates.items():
    print(f"{name:<20} {rate:9.0f} samples/s")
ratio = rates["indexed tensors"] / rates["one file per sample"]
print(f"indexed tensors are {ratio:.0f}× faster")

# %%
check(
    ratio > 3,
    "indexing encoded tensors is at least 3× faster than one file per sample",
    measured=f"{ratio:.0f}×",
    timing=True,
)


# %% [markdown]
# ## Pad per batch with a `collate_fn` and `pad_sequence`
#
# Padding every review to 400 tokens wastes work on short reviews. Keeping the true lengths and
# padding each batch only to its own longest review is the job of a `collate_fn`:

# %%
class Reviews(Dataset):
    def __init__(self, x: torch.Tensor, y: torch.Tensor, lengths: torch.Tensor):
        self.x, self.y, self.lengths = x, y, lengths.clamp(max=x.shape[1])

    def __len__(self) -> int:
        return len(self.x)

    def __getitem__(self, i: int):
        return self.x[i, : self.lengths[i]], self.y[i]  # variable length


def pad_batch(batch):
    ids, ys = zip(*batch, strict=True)
    lengths = torch.tensor([len(t) for t in ids])
    return (
        nn.utils.rnn.pad_sequence(ids, batch_first=True, padding_value=0),
        torch.stack(ys),
        lengths,
    )


variable = DataLoader(
    Reviews(imdb["train_x"], imdb["train_y"], imdb["train_lengths"]),
    batch_size=4,
    shuffle=True,
    collate_fn=pad_batch,
    generator=torch.Generator().manual_seed(0),
)
for x, _, n in itertools.islice(variable, 3):
    print("batch", tuple(x.shape), "lengths", n.tolist())

# %% [markdown]
# ## Read the shapes an RNN, LSTM or GRU takes and returns
#
# A recurrent layer reads a sequence one step at a time and carries a hidden state from step to
# step. It returns two things that are easy to mix up: `output`, the last layer's hidden state at
# **every** step, and `h_n`, **every** layer's hidden state at the **last** step (an LSTM also
# returns its cell state `c_n`, shaped like `h_n`). The input is `(batch, steps, features)` with
# `batch_first=True`; without it, `(steps, batch, features)`, and `output` follows the same order,
# while `h_n` is `(layers × directions, batch, hidden)` whether or not `batch_first` is set:

# %%
torch.manual_seed(0)
lstm = nn.LSTM(input_size=8, hidden_size=16, num_layers=2, batch_first=True, bidirectional=True)
steps = torch.randn(4, 10, 8)  # 4 sequences of 10 steps, 8 features each
output, (h_n, c_n) = lstm(steps)
print("output:", tuple(output.shape), "= (batch, steps, directions × hidden)")
print("h_n:   ", tuple(h_n.shape), "= (layers × directions, batch, hidden)")
print("c_n:   ", tuple(c_n.shape))
gru = nn.GRU(input_size=8, hidden_size=16)  # batch_first=False: steps come first
gru_output, gru_h = gru(steps.transpose(0, 1))
print("GRU without batch_first: output", tuple(gru_output.shape), "| h_n", tuple(gru_h.shape))

# %% [markdown]
# `h_n` is ordered layer by layer, forward direction before backward, so `h_n[-2]` is the top
# layer's forward state after the last step and `h_n[-1]` its backward state, which read the
# sequence from the end and so finished at step 0. For a classifier, concatenate those two;
# `output[:, -1]` alone holds the backward direction after a single step:

# %%
check(
    torch.equal(output[:, -1, :16], h_n[-2]) and torch.equal(output[:, 0, 16:], h_n[-1]),
    "h_n[-2] is the forward output at the last step, h_n[-1] the backward output at step 0",
)
features = torch.cat([h_n[-2], h_n[-1]], dim=1)
print("classifier features:", tuple(features.shape))

# %% [markdown]
# ## Feed padded batches to an LSTM with `pack_padded_sequence`
#
# A batch of reviews padded to its longest review (the `pad_batch` loader of the recipe above)
# has a problem: the LSTM also steps through the padding, so `h_n` of a short review is its state
# after dozens of `<pad>` tokens, not after its last word. `pack_padded_sequence` takes the true
# lengths and makes the LSTM stop each sequence at its end; `enforce_sorted=False` lets the batch
# come in any order (it sorts and unsorts for you). `pad_packed_sequence` turns the packed
# `output` back into a padded tensor, zeros after each end:

# %%
torch.manual_seed(0)
embed = nn.Embedding(len(imdb["itos"]), 32, padding_idx=0)
reader = nn.LSTM(32, 64, batch_first=True)
ids, labels, lengths = next(iter(variable))  # 4 reviews, padded to the longest
packed = nn.utils.rnn.pack_padded_sequence(
    embed(ids), lengths, batch_first=True, enforce_sorted=False
)
packed_output, (h_n, _) = reader(packed)
padded_output, out_lengths = nn.utils.rnn.pad_packed_sequence(packed_output, batch_first=True)
print("ids:", tuple(ids.shape), "| lengths:", lengths.tolist())
print("h_n:", tuple(h_n.shape), "| output padded back:", tuple(padded_output.shape))

# %% [markdown]
# The check runs each review alone, without padding: its final state is what `h_n` of the packed
# batch holds. Without packing, the shorter reviews' final states come out different:

# %%
with torch.no_grad():
    alone = torch.stack(
        [reader(embed(ids[i, :n]).unsqueeze(0))[1][0][0, 0] for i, n in enumerate(lengths)]
    )
    _, (unpacked_h, _) = reader(embed(ids))
short = lengths < lengths.max()
check(
    torch.allclose(h_n[0], alone, atol=1e-5)
    and torch.equal(out_lengths, lengths)
    and not torch.allclose(unpacked_h[0][short], alone[short], atol=1e-3),
    "packed: each review's final state is the one it has alone; unpacked, the padding changes it",
)

# %% [markdown]
# ## Carry a hidden state across batches, and detach it
#
# A language model reads a long text in windows of, say, 35 tokens and carries the hidden state
# from one window to the next, so the model remembers what came before. The state still holds
# the graph of the previous window: the next `backward()` would go back through it, into a graph
# whose buffers were freed. Detaching the state keeps its values and cuts the graph, so each
# backward covers one window (truncated backpropagation through time):

# %%
torch.manual_seed(0)
stream = imdb["train_x"][0, :105]  # one review as a stream of token ids: 3 windows of 35
lm_embed = nn.Embedding(len(imdb["itos"]), 16)
lm = nn.LSTM(16, 32, batch_first=True)
head = nn.Linear(32, len(imdb["itos"]))


def window_loss(window: torch.Tensor, state):
    """Next-token loss of one window; return it and the state after the window."""
    out, state = lm(lm_embed(window[:-1]).unsqueeze(0), state)
    return F.cross_entropy(head(out[0]), window[1:]), state


state = None
for start in (0, 35, 70):
    loss, state = window_loss(stream[start : start + 36], state)
    loss.backward()
    state = tuple(s.detach() for s in state)  # an LSTM's state is (h, c): detach both
print("three windows, three backward passes; last loss:", round(loss.item(), 2))

# %% [markdown]
# ### Pitfall: carrying the state without detaching it
#
# The second window's backward reaches into the first window's graph, already freed:

# %%
state = None
loss, state = window_loss(stream[:36], state)
loss.backward()
loss, state = window_loss(stream[35:71], state)  # state still attached to window 1's graph
with expect_error(RuntimeError):
    loss.backward()

# %% [markdown]
# ## Train a CNN on CIFAR2 to check the pipeline
#
# A pipeline is checked by training on it. The model, `helpers.models.small_cnn` (four blocks of
# convolution, batch norm and ReLU, built as in [04](04_modules_recipes.ipynb)), takes `uint8` images and
# starts with the `v2` conversion and normalisation (transforms are `nn.Module`s), so augmentation
# stays cheap and the trained model accepts raw images. Training uses torchkeras' `KerasModel` (older
# tutorials' `torchkeras.Model` with `compile()` is gone), with torchmetrics for accuracy and 1,000 training
# images held out for validation; `fit` keeps the best epoch by validation accuracy. To keep the
# notebook quick, it trains for 2 epochs on 2,000 of the other 9,000 images, in batches of 64; the
# test set is all 2,000 test images.
# `helpers.train.fit` runs torchkeras' `fit` and prints one line per epoch instead of its
# progress bars and banners.

# %%
mean, std = channel_stats(train_images)  # per channel, rounded to 4 decimals


torch.manual_seed(0)
order_ = torch.randperm(len(train_images))
fit_idx, val_idx = order_[1000:3000], order_[:1000]  # 2,000 for training, 1,000 for validation
cifar_train = DataLoader(
    ImageTensors(train_images[fit_idx], train_labels[fit_idx], crop_flip),
    batch_size=64,
    shuffle=True,
    drop_last=True,
)
cifar_val = DataLoader(ImageTensors(train_images[val_idx], train_labels[val_idx]), batch_size=500)
cifar_test = DataLoader(ImageTensors(test_images, test_labels), batch_size=500)
epochs = 2
net = small_cnn(mean, std, width=16)  # helpers.models: 4 conv blocks, see print(net)
optimizer = torch.optim.AdamW(decay_groups(net, 5e-4), lr=3e-3)  # 06: no decay on BN, biases
scheduler = torch.optim.lr_scheduler.OneCycleLR(
    optimizer, max_lr=3e-3, total_steps=epochs * len(cifar_train)
)
cifar_model = torchkeras.KerasModel(
    net,
    loss_fn=nn.CrossEntropyLoss(),
    optimizer=optimizer,
    lr_scheduler=scheduler,
    metrics_dict={"acc": torchmetrics.Accuracy(task="multiclass", num_classes=2)},
)
print(net[:3])  # the rest repeats the conv block
print(
    f"{sum(p.numel() for p in net.parameters()):,} parameters,", len(cifar_train), "steps per epoch"
)

# %% tags=["nbval-ignore-output"]
Path("runs").mkdir(exist_ok=True)
start = time.perf_counter()
cifar_history = fit(
    cifar_model,
    cifar_train,
    cifar_val,
    epochs=epochs,
    monitor="val_acc",
    mode="max",
    ckpt_path="runs/05_cifar2.pt",
)
cifar_seconds = time.perf_counter() - start
cifar_acc = cifar_model.evaluate(cifar_test, quiet=True)["val_acc"]
print(
    f"CIFAR2: {cifar_seconds:.0f} s of training; test accuracy {cifar_acc:.4f} "
    f"on {len(test_labels):,} images"
)

# %% tags=["nbval-ignore-output"]
plot_history(cifar_history, title="CIFAR2, small CNN")
plt.show()

# %%
check(
    cifar_acc >= 0.85,
    "the CNN reaches at least 0.85 test accuracy on CIFAR2 (chance: 0.5)",
    measured=f"{cifar_acc:.4f}",
)

# %% [markdown]
# ## Train a bag-of-embeddings model on IMDB, on length-bucketed batches
#
# For sentiment, which words occur matters much more than their order. An `nn.EmbeddingBag`
# averages the learned embeddings of a review's tokens (ignoring padding) and a linear layer
# classifies the average: fastText's idea, trained from scratch with no pretrained embeddings.
# Two of fastText's tricks make it better and faster:
#
# - **word pairs** ("not good", "waste of"): each bigram is hashed into one of 2¹⁸ extra
#   embedding rows, so no bigram vocabulary is needed. The training set has several times more
#   distinct bigrams than rows (counted below), so most rows are shared by several bigrams; the
#   model works well anyway;
# - **sparse gradients**: a batch touches tens of thousands of the 282,000 embedding rows, so
#   `EmbeddingBag(sparse=True)` with an optimizer that takes sparse gradients (`Adagrad`) updates
#   only those rows, instead of all 9 million numbers every step.
#
# The batches come from the `Reviews` dataset and `pad_batch` above, so each batch is padded only
# to its longest review, and a **batch sampler** groups reviews of similar length into the same
# batch (shuffling within chunks of 50 batches, then shuffling the batches), which keeps padding
# small. 2,500 training reviews are held out for validation, the model trains on the other
# 22,500, and the test set is all 25,000.

# %%
BUCKETS = 2**18


def with_bigrams(ids: torch.Tensor, vocab_size: int) -> torch.Tensor:
    """Append the hashed ids of consecutive pairs to a review's token ids."""
    pairs = (ids[:-1] * 1_000_003 + ids[1:]) % BUCKETS + vocab_size
    return torch.cat([ids, pairs])


def bigram_reviews(split: str) -> Reviews:
    """The reviews of a split as token + bigram ids, padded to the longest one."""
    lengths = imdb[f"{split}_lengths"].clamp(max=400).tolist()
    rows = zip(imdb[f"{split}_x"], lengths, strict=True)
    seqs = [with_bigrams(row[:k], len(vocab)) for row, k in rows]
    return Reviews(
        nn.utils.rnn.pad_sequence(seqs, batch_first=True),
        imdb[f"{split}_y"],
        torch.tensor([len(t) for t in seqs]),
    )


class LengthBuckets(Sampler[list[int]]):
    """Batches of indices of similar length: shuffled in chunks, sorted inside, batches shuffled."""

    def __init__(self, lengths, batch_size: int, generator=None, shuffle: bool = True, chunk=50):
        self.lengths, self.batch_size = torch.as_tensor(lengths), batch_size
        self.generator, self.shuffle, self.chunk = generator, shuffle, chunk

    def __len__(self) -> int:
        return -(-len(self.lengths) // self.batch_size)

    def __iter__(self):
        n = len(self.lengths)
        order = torch.randperm(n, generator=self.generator) if self.shuffle else torch.arange(n)
        batches = []
        for part in order.split(self.batch_size * self.chunk):
            batches += part[self.lengths[part].argsort(stable=True)].split(self.batch_size)
        if self.shuffle:
            batches = [batches[i] for i in torch.randperm(len(batches), generator=self.generator)]
        yield from (b.tolist() for b in batches)


def drop_lengths(batch):
    x, y, _ = pad_batch(batch)
    return x, y  # torchkeras wants (input, target)


train_reviews, test_reviews = bigram_reviews("train"), bigram_reviews("test")
within = torch.arange(399) < (imdb["train_lengths"].clamp(max=400) - 1)[:, None]
pair_ids = imdb["train_x"][:, :399] * len(vocab) + imdb["train_x"][:, 1:400]
distinct_bigrams = pair_ids[within].unique().numel()
print(f"distinct bigrams in the training reviews: {distinct_bigrams:,} for {BUCKETS:,} rows")
split = torch.randperm(25000, generator=torch.Generator().manual_seed(0))
fit_idx, val_idx = split[2500:], split[:2500]  # 22,500 to train on, 2,500 to validate
lengths = train_reviews.lengths
imdb_train = DataLoader(
    Subset(train_reviews, fit_idx.tolist()),
    batch_sampler=LengthBuckets(lengths[fit_idx], 256, torch.Generator().manual_seed(0)),
    collate_fn=drop_lengths,
)
imdb_val_dl = DataLoader(
    Subset(train_reviews, val_idx.tolist()),
    batch_sampler=LengthBuckets(lengths[val_idx], 1000, shuffle=False),
    collate_fn=drop_lengths,
)
imdb_test = DataLoader(
    test_reviews,
    batch_sampler=LengthBuckets(test_reviews.lengths, 1000, shuffle=False),
    collate_fn=drop_lengths,
)
shuffled = DataLoader(
    Subset(train_reviews, fit_idx.tolist()),
    batch_size=256,
    shuffle=True,
    collate_fn=drop_lengths,
    generator=torch.Generator().manual_seed(0),
)
padded = {
    name: sum(x.numel() for x, _ in loader)
    for name, loader in [("buckets", imdb_train), ("shuffled", shuffled)]
}
print(f"ids per epoch: {padded['shuffled']:,} shuffled, {padded['buckets']:,} in length buckets")


class BagOfEmbeddings(nn.Module):
    def __init__(self, vocab_size: int, dim: int = 32):
        super().__init__()
        self.embed = nn.EmbeddingBag(vocab_size, dim, mode="mean", padding_idx=0, sparse=True)
        self.out = nn.Linear(dim, 2)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        return self.out(self.embed(ids))


torch.manual_seed(0)
text_net = BagOfEmbeddings(len(vocab) + BUCKETS)
print(f"{sum(p.numel() for p in text_net.parameters()):,} parameters")
check(
    padded["buckets"] < 0.75 * padded["shuffled"],
    "length buckets cut the ids an epoch reads by a quarter or more",
    measured=f"{padded['buckets'] / padded['shuffled']:.2f}×",
)

# %% [markdown]
# torchkeras clips every gradient to norm 1 at every step, which is slow on sparse gradients and
# not what this model needs, so the text model trains with the plain loop of
# [07](07_training_loop_recipes.ipynb): a few lines, one printed line per epoch.

# %% tags=["nbval-ignore-output"]
torch.sparse.check_sparse_tensor_invariants.disable()  # say so, rather than warn at every step
epochs = 2
optimizer = torch.optim.Adagrad(text_net.parameters(), lr=0.2)  # takes sparse gradients
scheduler = torch.optim.lr_scheduler.OneCycleLR(
    optimizer, max_lr=0.2, total_steps=epochs * len(imdb_train), cycle_momentum=False
)


@torch.inference_mode()
def accuracy(model: nn.Module, loader: DataLoader) -> float:
    model.eval()
    right = sum((model(x).argmax(dim=1) == y).sum().item() for x, y in loader)
    return right / sum(len(y) for _, y in loader)


imdb_history = {"epoch": [], "train_loss": [], "val_acc": []}
start = time.perf_counter()
for epoch in range(1, epochs + 1):
    text_net.train()
    total = 0.0
    for x, y in imdb_train:
        loss = F.cross_entropy(text_net(x), y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        scheduler.step()
        total += loss.item() * len(y)
    imdb_history["epoch"].append(epoch)
    imdb_history["train_loss"].append(total / len(fit_idx))
    imdb_history["val_acc"].append(accuracy(text_net, imdb_val_dl))
    print(
        f"epoch {epoch}  train_loss {imdb_history['train_loss'][-1]:.4f}  "
        f"val_acc {imdb_history['val_acc'][-1]:.4f}  ({time.perf_counter() - start:.0f} s)"
    )
imdb_seconds = time.perf_counter() - start
imdb_acc = accuracy(text_net, imdb_test)
print(
    f"IMDB: {imdb_seconds:.0f} s of training; test accuracy {imdb_acc:.4f} "
    f"on {len(imdb['test_y']):,} reviews"
)

# %% tags=["nbval-ignore-output"]
plot_history(imdb_history, title="IMDB, bag of words and word pairs")
plt.show()

# %%
check(
    imdb_acc >= 0.88,
    "the bag of words and word pairs reaches at least 0.88 test accuracy on IMDB",
    measured=f"{imdb_acc:.4f}",
)

# %% [markdown]
# ## Old code you will meet
#
# | old form | write today | why |
# |---|---|---|
# | `model = torchkeras.Model(net); model.compile(...); model.fit(...)` | `torchkeras.KerasModel(net, loss_fn, metrics_dict, optimizer).fit(...)` | the torchkeras 1.x/2.x API is gone |
# | `torchtext.data.Field`, `BucketIterator`, `torchtext.vocab` | a plain `Dataset`, a `collate_fn` with `pad_sequence` | torchtext is deprecated and no longer developed |
# | `transforms.ToTensor()` | `v2.Compose([v2.ToImage(), v2.ToDtype(torch.float32, scale=True)])` | `transforms.v2` is the maintained API |
# | `iter(loader).next()` | `next(iter(loader))` | Python 3 iterators have no `.next()` |
# | `from torch.utils.data.dataloader import default_collate` | `from torch.utils.data import default_collate` | the public import path |
# | `transforms.Scale(...)`, `transforms.RandomSizedCrop(...)` | `v2.Resize(...)`, `v2.RandomResizedCrop(...)` | removed from torchvision: `AttributeError` |

# %% [markdown]
# ## Exercises

# %% [markdown]
# ### Exercise 1 · Stratified train/validation split of CIFAR2
#
# Split CIFAR2's 10,000 training images into `train_split` (9,000) and `val_split` (1,000), two
# `Subset`s of `dataset`, so that both classes are exactly half of the validation set; shuffle
# with the seeded generator `gen`. The check compares the sizes, looks for images in both or in
# neither, counts the classes of `val_split` and makes sure the images were shuffled.
#
# <details><summary>Hint 1</summary>
#
# Work class by class: find the positions of that class's images, put them in a random order,
# send the first 500 to validation and the rest to training. Then join the classes' parts.
# </details>
#
# <details><summary>Hint 2</summary>
#
# The section "Split into training and validation three ways" builds a stratified `Subset` from
# per-class indices. `torch.randperm(n, generator=gen)` shuffles positions; a `Subset` wants a
# list of Python ints.
# </details>

# %%
dataset = ImageTensors(train_images, train_labels)
gen = torch.Generator().manual_seed(0)
train_split = ...  # a Subset of dataset: 9,000 images
val_split = ...  # a Subset of dataset: 1,000 images, 500 of each class

# %%
ch05.exercise_1(dataset, train_labels, train_split, val_split)

# %% [markdown]
# #### Solution

# %% tags=["solution"]
# Solution: open it once you have tried. It uses its own names, so your answer stays as it is.
solution_gen = torch.Generator().manual_seed(1)  # its own generator: yours is left as it was
solution_val, solution_train = [], []
for solution_k in range(len(classes)):
    solution_idx = torch.nonzero(train_labels == solution_k).squeeze(1)
    solution_idx = solution_idx[torch.randperm(len(solution_idx), generator=solution_gen)]
    solution_val.append(solution_idx[:500])
    solution_train.append(solution_idx[500:])
solution_train_split = Subset(dataset, torch.cat(solution_train).tolist())
solution_val_split = Subset(dataset, torch.cat(solution_val).tolist())
ch05.exercise_1(dataset, train_labels, solution_train_split, solution_val_split)

# %% [markdown]
# ### Exercise 2 · A collate function that sorts by length
#
# Fill in `sorted_pad_batch`, a function of a `batch` (a list of `Reviews` items) that returns
# what `pad_batch` returns (padded ids, labels, lengths) sorted by decreasing length, each
# label still next to its review. (RNN code from before PyTorch 1.1 needed this for
# `pack_padded_sequence`; today `enforce_sorted=False` sorts inside, so do it only when you want
# the order, e.g. to inspect the longest reviews first.) The check calls it on 8 reviews and
# compares each row with the review and label it came from.
#
# <details><summary>Hint 1</summary>
#
# Once padded, every row has the same length. Is it easier to reorder the items before
# `pad_batch`, or its three outputs after it?
# </details>
#
# <details><summary>Hint 2</summary>
#
# An item is `(ids, label)`, so its length is that of its first element. Python's `sorted` takes
# a `key` function and `reverse=True`; `pad_batch` does the rest.
# </details>

# %%
reviews = Reviews(imdb["train_x"], imdb["train_y"], imdb["train_lengths"])
sorted_pad_batch = ...  # a function batch -> (ids, labels, lengths), e.g. one you write with `def`

# %%
ch05.exercise_2(reviews, sorted_pad_batch)


# %% [markdown]
# #### Solution

# %% tags=["solution"]
# Solution: open it once you have tried. It uses its own names, so your answer stays as it is.
def solution_sorted_pad_batch(batch: list) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """pad_batch's output, longest review first."""
    return pad_batch(sorted(batch, key=lambda item: len(item[0]), reverse=True))


ch05.exercise_2(reviews, solution_sorted_pad_batch)

# %% [markdown]
# ### Exercise 3 · The reviews the model gets most wrong
#
# `test_with_index` yields the test set in shuffled batches of ids, labels and (thanks to
# `WithIndex`) each review's index. Fill in `true_prob`, a tensor where `true_prob[i]` is the
# probability the trained IMDB model gives the true label of test review `i`, and `worst`, the
# indices of the three reviews with the lowest `true_prob`, lowest first (their text is in
# `imdb_root / "test"`). The check recomputes the probability of a few reviews one at a time.
#
# <details><summary>Hint 1</summary>
#
# Start from an empty tensor with one entry per test review. For each batch, compute the
# probabilities of all classes, keep the one of each row's own label, and write it at the
# indices the batch came with: the batches are shuffled.
# </details>
#
# <details><summary>Hint 2</summary>
#
# `softmax(dim=1)` turns logits into probabilities; `gather` picks one column per row (01).
# Evaluate under `torch.inference_mode()`. For `worst`, a sort that returns positions helps.
# </details>

# %%
text_net.eval()
test_with_index = DataLoader(
    WithIndex(test_reviews),
    batch_size=1000,
    shuffle=True,  # the order of the batches is not the order of the reviews
    generator=torch.Generator().manual_seed(0),
    collate_fn=lambda batch: (
        *drop_lengths([item[:2] for item in batch]),
        torch.tensor([item[2] for item in batch]),
    ),
)
true_prob = ...  # shape (25000,): true_prob[i] for test review i
worst = ...  # the 3 indices with the lowest true_prob, lowest first

# %%
ch05.exercise_3(text_net, test_reviews, true_prob, worst)

# %% [markdown]
# #### Solution

# %% tags=["solution"]
# Solution: open it once you have tried. It uses its own names, so your answer stays as it is.
solution_true_prob = torch.zeros(len(test_reviews))
with torch.inference_mode():
    for solution_x, solution_y, solution_i in test_with_index:
        solution_logits = text_net(solution_x)
        solution_true_prob[solution_i] = (
            solution_logits.softmax(dim=1).gather(1, solution_y.unsqueeze(1)).squeeze(1)
        )
ch05.exercise_3(text_net, test_reviews, solution_true_prob, solution_true_prob.argsort()[:3])

# %% [markdown]
# ## Summary
#
# - `len` → sampler → batch sampler → `__getitem__` → `collate_fn` makes one batch; each step can
#   be replaced on its own.
# - `TensorDataset`, `ImageFolder` and a small custom `Dataset` cover most data; split with a
#   seeded `random_split` or `Subset`, and seed shuffling with `generator=`.
# - Decode or tokenise once and index tensors: measured here, in-memory images beat decoding JPEGs
#   and indexed tensors beat one file per review by a wide margin.
# - Measure `num_workers`; define datasets in modules for `spawn`; shard `IterableDataset`s with
#   `get_worker_info`; pad per batch with `pad_sequence` in a `collate_fn`.
# - The pipeline trains a small CNN past 0.85 test accuracy on CIFAR2 in 2 epochs on 2,000 images,
#   and a bag of words and hashed word pairs past 0.88 on all 25,000 IMDB test reviews in 2 epochs
#   on 22,500 reviews (both checked), each in well under a minute on a laptop CPU; length buckets
#   keep per-batch padding small.
#
# Next: [06 · Losses](06_losses_recipes.ipynb).
