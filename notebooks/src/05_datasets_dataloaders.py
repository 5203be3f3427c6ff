# %% [markdown]
# # 05 · Dataset and DataLoader: feeding the CNN
#
# [![Open In Colab](https://colab.research.google.com/assets/colab-badge.svg)](https://colab.research.google.com/github/pytorch-cookbook/pytorch-cookbook/blob/main/notebooks/05_datasets_dataloaders.ipynb)
#
# The CNN of 04 eats batches of images. This lesson builds what serves them: a `Dataset` over the
# CIFAR2 images, random crops and flips, and a `DataLoader` that hands out shuffled batches of
# 64; then the same for IMDB movie reviews, which come in every length.
#
# **You will be able to:**
# - name the five steps by which a DataLoader makes a batch, and write them as a short loop
# - write a `Dataset` with `__len__` and `__getitem__`, with an optional transform
# - augment each training image with `transforms.v2` (a random crop with padding, a flip)
# - set a DataLoader's `batch_size`, `shuffle`, `drop_last` and `generator`, and predict the
#   shapes of its batches
# - write a `collate_fn` that pads the reviews of a batch to the longest one
#
# **Before you start:** a tensor's shape, dtype and indexing, and the CIFAR2 images as a `uint8`
# tensor ([01](01_tensors.ipynb)); stacking tensors ([02](02_contiguity_strides.ipynb)); a loss
# and its gradient over a whole data set ([03](03_autograd.ipynb)); the CNN as an `nn.Module`
# ([04](04_modules.ipynb)).
#
# **Cookbook:** [05 · Dataset and DataLoader with IMDB and CIFAR2:
# recipes](cookbook/05_datasets_dataloaders_recipes.ipynb) holds every recipe of this chapter
# (image folders and splits, samplers, worker processes and their seeds, streaming data,
# measured loading speeds, training on both data sets), for when you need one.
#
# **Study time:** about 55 min: 1,757 words of text at 120 a minute, 218 lines of code at 10 a minute, 2 exercises at 10 minutes each.
#
# **Run time:** about 5 s on a 2-core CPU (Intel Xeon, AVX2 code paths, measured on 2026-11-25) · GPU optional.

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
from torch.nn.utils.rnn import pad_sequence
from torch.utils.data import DataLoader, Dataset, RandomSampler, TensorDataset, default_collate
from torchvision.transforms import v2

from helpers.check import check, expect_error
from helpers.data import fetch
from helpers.diagrams.pipeline import draw_pipeline
from helpers.env import setup
from helpers.exercises import lesson05
from helpers.images import channel_stats, load_cifar2
from helpers.models import small_cnn
from helpers.plot import show_images
from helpers.text import Vocab, tokenize

device = setup(seed=0)

# %% [markdown]
# ## Why batches, and the five steps that make one
#
# In 03 every step of fitting read the whole data set. For the CNN that does not scale: the
# first layer alone turns each 32×32 image into 16 channels of 32×32 floats, and autograd keeps
# them for `backward()`. For all 10,000 training images at once that is:

# %%
first_layer_bytes = 10_000 * 16 * 32 * 32 * 4  # images × channels × height × width × 4 bytes
print(f"first layer's output for all training images: {first_layer_bytes / 2**20:.0f} MiB")

# %% [markdown]
# So training (07) takes a small random **batch** per step instead: many cheap steps, each on
# other images, and over an **epoch** every image once. Getting one batch takes five steps, each
# done by one piece of PyTorch:
#
# 1. `len(dataset)` says how many samples there are;
# 2. the **sampler** puts the indices `0 … len-1` in an order (shuffled or not);
# 3. the indices are grouped into batches of `batch_size`;
# 4. `dataset[i]` reads each sample of the batch (and transforms it, if asked);
# 5. the **collate function** turns the list of samples into one batch (by stacking tensors).
#
# Written out, these steps are a short loop. `TensorDataset` is the simplest dataset: it indexes
# tensors in step, so `squares[3]` is the pair `(3, 9)`. With the same shuffled sampler, the loop
# yields exactly the batches of PyTorch's `DataLoader`:


# %%
def my_loader(dataset, batch_size, sampler, collate_fn=default_collate):
    indices = []
    for i in sampler:  # steps 1 and 2: the sampler orders range(len(dataset))
        indices.append(i)
        if len(indices) == batch_size:  # step 3: a batch of indices is full
            yield collate_fn([dataset[j] for j in indices])  # steps 4 and 5
            indices = []
    if indices:  # the last, smaller batch
        yield collate_fn([dataset[j] for j in indices])


squares = TensorDataset(torch.arange(10), torch.arange(10) ** 2)
print("squares[3]:", squares[3])
mine = my_loader(squares, 4, RandomSampler(squares, generator=torch.Generator().manual_seed(0)))
theirs = DataLoader(
    squares,
    batch_size=4,
    sampler=RandomSampler(squares, generator=torch.Generator().manual_seed(0)),
)
same = []
for (x_mine, y_mine), (x_theirs, y_theirs) in zip(mine, theirs, strict=True):
    same.append(torch.equal(x_mine, x_theirs) and torch.equal(y_mine, y_theirs))
    print(f"x: {x_mine.tolist()} squares: {y_mine.tolist()} | equal to DataLoader's: {same[-1]}")
check(all(same), "the five steps written out give the DataLoader's batches")

# %% [markdown]
# Each step can be swapped on its own: another dataset (step 4), another order (step 2), another
# way to join samples (step 5). The rest of this lesson does exactly that for CIFAR2 and IMDB.

# %% [markdown]
# ## A Dataset over the CIFAR2 images
#
# A `Dataset` is any object with two methods: `__len__`, the number of samples, and
# `__getitem__(i)`, sample `i`. `load_cifar2` (01) gives the 10,000 training images already
# decoded into one `uint8` tensor, so our dataset only indexes it. It also takes an optional
# `transform`, applied to each image as it is read (next section):

# %%
images, labels, classes = load_cifar2("train")
print("images:", tuple(images.shape), images.dtype, "| labels:", tuple(labels.shape), labels.dtype)


class CifarImages(Dataset):
    """CIFAR2 images held in memory: item i is (image i, label i), transformed if asked."""

    def __init__(self, images, labels, transform=None):
        self.images, self.labels, self.transform = images, labels, transform

    def __len__(self):
        return len(self.images)

    def __getitem__(self, i):
        image = self.images[i]
        if self.transform is not None:
            image = self.transform(image)
        return image, self.labels[i]


plain_set = CifarImages(images, labels)
image, label = plain_set[7]
print("len(plain_set):", len(plain_set))
print("plain_set[7]:", tuple(image.shape), image.dtype, "| label:", label.item(), classes[label])
check(
    torch.equal(image, images[7]) and torch.equal(TensorDataset(images, labels)[7][0], image),
    "without a transform, item 7 is image 7, as TensorDataset(images, labels) would give it",
)

# %% [markdown]
# Look at the data before feeding it to a model. `show_images` draws images with their labels:

# %%
some = list(range(0, 10_000, 625))  # 16 images from both halves of the data set
show_images(torch.stack([plain_set[i][0] for i in some]), [plain_set[i][1] for i in some], classes)
plt.show()

# %% [markdown]
# The images were decoded once from the data set's JPEG files and cached as one tensor; a
# dataset can also read the files in `__getitem__` (`torchvision.datasets.ImageFolder` does), at
# the cost of decoding every image every epoch. The cookbook compares both.

# %% [markdown]
# ## Augment each image with `transforms.v2`
#
# Over many epochs the CNN sees the same 10,000 images again and again, and can learn them by
# heart. **Augmentation** shows it a slightly different version each time: an airplane shifted
# by a few pixels, or seen in a mirror, is still an airplane. Two transforms from
# `torchvision.transforms.v2`, the ones 07 trains with:
#
# - `RandomCrop(32, padding=4, padding_mode="reflect")` pads the image to 40×40 (mirroring its
#   border) and cuts out a random 32×32 window: a shift of up to 4 pixels each way;
# - `RandomHorizontalFlip()` mirrors the image left-right, half of the time.
#
# Each call draws new random numbers, so reading the same sample again gives another version.
# The first picture is the stored image, the other seven are reads of the same sample:

# %%
augment = v2.Compose(
    [v2.RandomCrop(32, padding=4, padding_mode="reflect"), v2.RandomHorizontalFlip()]
)
train_set = CifarImages(images, labels, transform=augment)
reads = [train_set[3750][0] for _ in range(7)]
changed = sum(not torch.equal(read, images[3750]) for read in reads)
print(
    "a read:",
    tuple(reads[0].shape),
    reads[0].dtype,
    "| reads that differ from the stored image:",
    changed,
    "of 7",
)
views = torch.stack([images[3750], *reads])
show_images(views, [labels[3750]] * 8, classes)
plt.show()

# %%
check(
    all(read.shape == (3, 32, 32) and read.dtype == torch.uint8 for read in reads) and changed >= 2,
    "the transform keeps shape and dtype and gives another version of the image at each read",
)

# %% [markdown]
# The transform sits in `__getitem__`, so each image draws its own crop and flip. Called on a
# whole batch `(N, C, H, W)`, a random `v2` transform draws **once** for the batch: all images
# flipped or none. Only the training set is augmented; images used to measure the model stay
# as they are, so that a measurement does not change from run to run.

# %% [markdown]
# ## A DataLoader: shuffled batches of 64
#
# `DataLoader` runs the five steps for us. The settings that matter here:
#
# - `batch_size=64`: 64 samples per batch; the default collate function stacks their images
#   into `(64, 3, 32, 32)` and their labels into `(64,)`.
# - `shuffle=True`: a new random order every epoch. CIFAR2 stores all airplanes first, so without
#   it every early batch would be airplanes only.
# - `drop_last=True`: 10,000 is not a multiple of 64, so the last batch would hold only the
#   leftover samples; dropping it keeps every batch the same size (batch norm, in the CNN,
#   averages over the batch, and a small batch gives it noisy averages). The shuffle drops
#   different samples each epoch.
# - `generator=torch.Generator().manual_seed(0)`: the shuffle draws from its own seeded random
#   number generator, so the order is the same every run, whatever else draws random numbers.

# %%
loader = DataLoader(
    train_set,
    batch_size=64,
    shuffle=True,
    drop_last=True,
    generator=torch.Generator().manual_seed(0),
)
x, y = next(iter(loader))
print("images:", tuple(x.shape), x.dtype, "| labels:", tuple(y.shape), y.dtype)
print(
    "batches per epoch:",
    len(loader),
    "| without drop_last:",
    len(DataLoader(train_set, batch_size=64)),
)
draw_pipeline(loader, (x, y))
plt.show()

# %% [markdown]
# The picture reads left to right: the sampler orders the indices, each `dataset[i]` reads and
# transforms one sample, and `default_collate` stacks 64 of them into the batch. Two things to
# see in code: without `shuffle`, the first batch holds one class only; and the sampler's indices
# (`loader.batch_sampler` yields them without reading any image) visit every image at most once
# an epoch, in the same order for the same seed.

# %%
unshuffled = DataLoader(train_set, batch_size=64)
print("classes in the first unshuffled batch:", next(iter(unshuffled))[1].unique().tolist())


def first_indices(seed):
    loader = DataLoader(
        train_set, batch_size=64, shuffle=True, generator=torch.Generator().manual_seed(seed)
    )
    return next(iter(loader.batch_sampler))[:6]


print("first indices, seed 0:", first_indices(0), "| again:", first_indices(0))
print("first indices, seed 1:", first_indices(1))
epoch = [i for batch in loader.batch_sampler for i in batch]
print("indices in one epoch:", len(epoch), "| distinct:", len(set(epoch)))
check(
    next(iter(unshuffled))[1].unique().tolist() == [0],
    "without shuffle, the first batch is all airplanes",
)
check(
    first_indices(0) == first_indices(0) != first_indices(1),
    "the same seed gives the same order; another seed another",
)
check(
    len(epoch) == len(set(epoch)) == 156 * 64,
    "an epoch of 156 full batches reads 9,984 different images",
)

# %% [markdown]
# The batch is what the CNN of 04 takes: `uint8` images, converted and normalised inside the
# model. Its output is one row of two logits per image, which 06 turns into a loss:

# %%
torch.manual_seed(0)
model = small_cnn(*channel_stats(images))
with torch.no_grad():
    logits = model(x)
print("logits:", tuple(logits.shape), logits.dtype)
check(logits.shape == (64, 2), "one batch in, one row of 2 logits per image out")

# %% [markdown]
# **`num_workers`.** With the default `num_workers=0`, the main process reads and collates each
# batch itself, between training steps. `num_workers=2` starts two worker processes that
# prepare batches while the model trains, in the same order (each worker draws its own random
# crops and flips). Whether that is faster depends on what `__getitem__` spends its time on
# (decoding files, a slow disk) and on free CPU cores; measure it for your loader (the cookbook
# shows how). One catch: on macOS and Windows (and on Linux from Python 3.14) each worker is a
# fresh Python process that imports the dataset's class by name, so a `Dataset` defined in a
# notebook fails there; put it in a `.py` file.

# %% [markdown]
# ## Text: reviews of every length, padded per batch
#
# The course's second data set is IMDB: 50,000 movie reviews, each negative (0) or positive
# (1). A model reads a review as a sequence of **token ids**: the text is split into words
# (`tokenize`), and a vocabulary (`Vocab`) numbers the most frequent ones, with id 0 for padding
# and 1 for words it does not know. To keep things quick we take 2,000 training reviews and
# keep the 5,000 most frequent tokens:

# %%
imdb_root = fetch("imdb")
paths = [
    path
    for name in ("neg", "pos")
    for path in sorted((imdb_root / "train" / name).glob("*.txt"))[:1000]
]
texts = [path.read_text(encoding="utf-8") for path in paths]
docs = [tokenize(text) for text in texts]
vocab = Vocab.build(docs, max_size=5000)
print("a positive review:", texts[1000][:70], "…")
print("its tokens:", docs[1000][:8])
print("their ids:", vocab.encode(docs[1000][:8]), "| vocabulary size:", len(vocab))

# %% [markdown]
# A dataset of reviews encodes each review once, in `__init__`, and returns the ids as a tensor:


# %%
class Reviews(Dataset):
    """Token ids of each review (an int64 tensor of its own length) and its label."""

    def __init__(self, docs, labels, vocab):
        self.ids = [torch.tensor(vocab.encode(doc)) for doc in docs]
        self.labels = labels

    def __len__(self):
        return len(self.ids)

    def __getitem__(self, i):
        return self.ids[i], self.labels[i]


reviews = Reviews(docs, torch.tensor([0] * 1000 + [1] * 1000), vocab)
lengths = torch.tensor([len(ids) for ids, _ in reviews])
print(
    "tokens per review: shortest",
    lengths.min().item(),
    "| median",
    lengths.median().item(),
    "| longest",
    lengths.max().item(),
)

# %% [markdown]
# The default collate function stacks samples, and tensors of different lengths do not stack:

# %%
with expect_error(RuntimeError):
    next(iter(DataLoader(reviews, batch_size=4)))

# %% [markdown]
# So we pass our own `collate_fn` (step 5). It **pads** each review with id 0 up to the longest
# review of its batch; `pad_sequence` does the padding, `batch_first=True` puts the batch first.
# Padding to the batch's longest, not to the longest review of the whole data set, keeps most
# batches much narrower:


# %%
def pad_collate(batch):
    """A list of (ids, label) -> ids padded with 0 to the batch's longest review, labels."""
    ids = pad_sequence([ids for ids, _ in batch], batch_first=True, padding_value=0)
    return ids, torch.stack([label for _, label in batch])


text_loader = DataLoader(
    reviews,
    batch_size=32,
    shuffle=True,
    collate_fn=pad_collate,
    generator=torch.Generator().manual_seed(0),
)
ids, review_labels = next(iter(text_loader))
print("ids:", tuple(ids.shape), ids.dtype, "| labels:", review_labels.tolist()[:8], "…")
padded = sum(batch_ids.numel() for batch_ids, _ in text_loader)
longest_all = len(reviews) * lengths.max().item()
print(f"ids in one epoch, padded per batch: {padded:,} | to the longest review: {longest_all:,}")
draw_pipeline(text_loader, (ids, review_labels))
plt.show()

# %%
row_lengths = (ids != 0).sum(dim=1)  # id 0 is only ever padding
check(
    all(
        (row[:n] != 0).all() and (row[n:] == 0).all()
        for row, n in zip(ids, row_lengths, strict=True)
    )
    and ids.shape[1] == row_lengths.max(),
    "each review is followed by padding only, up to the longest review of its batch",
)
check(
    padded < 0.75 * longest_all,
    "padding per batch reads at least a quarter fewer ids than padding to the longest review",
)

# %% [markdown]
# Compared with the image loader's picture, two pieces changed: `dataset[i]` returns a review
# of its own length (and there is no transform), and `pad_collate` makes the batch rectangular.
# A text model reads the padded ids and is told to ignore id 0 (the cookbook trains one).

# %% [markdown]
# ## Exercises

# %% [markdown]
# ### Exercise 1 · A Dataset that returns each sample's index
#
# To find the images a model gets wrong, you need to know *which* images a shuffled batch holds.
# Finish `WithIndex`, a `Dataset` that wraps another dataset: its length is the wrapped dataset's,
# and its item `i` is the wrapped sample's image and label, followed by `i`. A `DataLoader` over
# it then yields `(images, labels, indices)`. The check wraps `plain_set`, reads item 5 and a
# shuffled batch.
#
# <details><summary>Hint 1</summary>
#
# Both methods only pass the work on to `self.dataset`: ask it for its length, and for its item
# `i`, which is a pair.
# </details>
#
# <details><summary>Hint 2</summary>
#
# Unpack the wrapped item into its image and label, then return a tuple of three. The default
# collate function turns the integers `i` of a batch into a tensor of indices by itself.
# </details>


# %%
class WithIndex(Dataset):
    """Wraps a dataset: item i is (image, label, i)."""

    def __init__(self, dataset):
        self.dataset = dataset

    def __len__(self):
        n = ...  # the number of samples
        return n

    def __getitem__(self, i):
        item = ...  # the wrapped sample's image and label, then i
        return item


# %%
lesson05.exercise_1(WithIndex, plain_set)

# %% [markdown]
# #### Solution


# %% tags=["solution"]
# Solution: open it once you have tried. It uses its own names, so your answer stays as it is.
class solution_WithIndex(Dataset):
    def __init__(self, dataset):
        self.dataset = dataset

    def __len__(self):
        return len(self.dataset)

    def __getitem__(self, i):
        image, label = self.dataset[i]
        return image, label, i


lesson05.exercise_1(solution_WithIndex, plain_set)

# %% [markdown]
# ### Exercise 2 · A collate function that caps the length
#
# One very long review makes its whole batch that wide: every other review in it is mostly
# padding. Write `capped_collate`, a collate function like `pad_collate` that keeps only the
# first `MAX_LEN` ids of each review: each batch is padded to its longest review, but never wider
# than `MAX_LEN`. It returns `(ids, labels)`. The check calls it on a batch with long reviews and
# on a batch of short ones.
#
# <details><summary>Hint 1</summary>
#
# Cut first, then pad: a review shorter than `MAX_LEN` stays as it is, a longer one loses its
# end. Slicing a 1-D tensor past its end is no error.
# </details>
#
# <details><summary>Hint 2</summary>
#
# In `pad_collate`, the list given to `pad_sequence` holds each review's `ids`; give it `ids`
# sliced to `MAX_LEN` instead. The labels are stacked as before.
# </details>

# %%
MAX_LEN = 256


def capped_collate(batch):
    ids = ...  # padded to the longest review of the batch, at most MAX_LEN wide
    labels = ...
    return ids, labels


# %%
lesson05.exercise_2(capped_collate, reviews)

# %% [markdown]
# #### Solution


# %% tags=["solution"]
# Solution: open it once you have tried. It uses its own names, so your answer stays as it is.
def solution_capped_collate(batch):
    solution_ids = [ids[:MAX_LEN] for ids, _ in batch]
    solution_padded = pad_sequence(solution_ids, batch_first=True, padding_value=0)
    return solution_padded, torch.stack([label for _, label in batch])


lesson05.exercise_2(solution_capped_collate, reviews)

# %% [markdown]
# ## Summary
#
# - A batch takes five steps: `len(dataset)`, a sampler's order, indices grouped by
#   `batch_size`, `dataset[i]` for each index, and a collate function; `DataLoader` runs them,
#   and each can be replaced on its own.
# - A `Dataset` needs only `__len__` and `__getitem__`; keep decoded data in tensors and index them.
# - Augment per sample, in `__getitem__`, with `transforms.v2`: `RandomCrop(32, padding=4)` and
#   `RandomHorizontalFlip()` give the CNN another version of each image every epoch.
# - `shuffle=True` for training, `drop_last=True` for same-size batches, and a seeded
#   `generator=` for an order that repeats from run to run.
# - Sequences of different lengths need a `collate_fn` that pads each batch to its longest one.
#
# Next: [06 · Losses: scoring the CNN's logits](06_losses.ipynb).
