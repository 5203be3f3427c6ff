# %% [markdown]
# # 05 · Dataset and DataLoader: feeding the CNN
#
# [![Open In Colab](https://colab.research.google.com/assets/colab-badge.svg)](https://colab.research.google.com/github/pytorch-cookbook/pytorch-cookbook/blob/main/notebooks/05_datasets_dataloaders.ipynb)
#
# The CNN of 04 eats batches of images. This lesson builds what serves them: a `Dataset` over the
# CIFAR2 images, random crops and flips, and a `DataLoader` that hands out shuffled batches of
# 64; then the same machinery for text, IMDB movie reviews, which come in every length.
#
# **You will be able to:**
# - name the five steps by which a DataLoader makes a batch, and write them as a short loop
# - write a `Dataset` with `__len__` and `__getitem__`, with an optional transform
# - augment each training image with `transforms.v2` (a random crop with padding, a flip)
# - set a DataLoader's `batch_size`, `shuffle`, `drop_last` and `generator`, and predict the
#   shapes of its batches
# - write a `collate_fn` that pads the reviews of a batch to the longest one
#
# **Before you start:** a tensor's shape, dtype and indexing, stacking tensors with `stack`, and
# the CIFAR2 images as a `uint8` tensor ([01](01_tensors.ipynb)); a loss and its gradient over a
# whole data set ([03](03_autograd.ipynb)); the CNN as an `nn.Module` ([04](04_modules.ipynb)).
# Python: a seed, which makes random draws repeat ([00](00_python.ipynb)); generators and `yield`
# ([00](00_python.ipynb#Generators-and-with-blocks)); `*` and `**` ([00](00_python.ipynb#Unpacking-and-f-string-formats)).
#
# **Cookbook:** [05 · Dataset and DataLoader with IMDB and CIFAR2:
# recipes](cookbook/05_datasets_dataloaders_recipes.ipynb) holds every recipe of this chapter
# (image folders and splits, samplers, worker processes and their seeds, streaming data,
# measured loading speeds, training on both data sets), for when you need one.
#
# **Study time:** about 80 min: 1,949 words of text at 120 a minute, 242 lines of code at 10 a minute, 22 code cells to run at 1 minute each (reading what they print), 2 exercises at 10 minutes each.
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
from torch.nn.utils.rnn import pad_sequence
from torch.utils.data import (
    DataLoader,
    Dataset,
    RandomSampler,
    TensorDataset,
    default_collate,
)
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
first_layer_bytes = 10_000 * 16 * 32 * 32 * 4  # images × channels × 32 × 32 × 4 bytes
print(f"first layer's output, all training images: {first_layer_bytes / 2**20:.0f} MiB")


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
# tensors in step, so with `torch.arange(10)`, the tensor 0, 1, …, 9, `squares[3]` is the pair
# `(3, 9)`. Python's `yield` makes `my_loader` hand out one batch each time a `for` loop asks for
# the next, and carry on from there. With the same shuffled sampler, it gives exactly the batches
# of PyTorch's `DataLoader`:

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
# each sampler shuffles with a random-number generator of its own, seeded alike: the same order
sampler = RandomSampler(squares, generator=torch.Generator().manual_seed(0))
mine = my_loader(squares, 4, sampler)
theirs = DataLoader(
    squares,
    batch_size=4,
    sampler=RandomSampler(squares, generator=torch.Generator().manual_seed(0)),
)
same = []
for (x_mine, y_mine), (x_theirs, y_theirs) in zip(mine, theirs, strict=True):
    same.append(torch.equal(x_mine, x_theirs) and torch.equal(y_mine, y_theirs))
    print(f"x: {x_mine.tolist()} | x²: {y_mine.tolist()} | as DataLoader's: {same[-1]}")
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
names = [c.split("_", 1)[1] for c in classes]  # "0_airplane" -> "airplane"
print("images:", tuple(images.shape), images.dtype)
print("labels:", tuple(labels.shape), labels.dtype, "| names:", names)


class CifarImages(Dataset):
    """CIFAR2 images in memory: item i is (image i, label i), transformed if asked."""

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
print("item 7:", tuple(image.shape), image.dtype, "| label", label.item(), names[label])
same_as_tensors = TensorDataset(images, labels)[7][0]
check(
    torch.equal(image, images[7]) and torch.equal(image, same_as_tensors),
    "without a transform, item 7 is image 7, as TensorDataset would give it",
)

# %% [markdown]
# Look at the data before feeding it to a model. `show_images` draws images with their labels:

# %%
some = list(range(0, 10_000, 625))  # 16 images from both halves of the data set
show_images(torch.stack([plain_set[i][0] for i in some]), labels[some], names)
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
# The first picture is the stored image, the other seven are reads of the same sample
# (`*reads` puts the items of the list `reads` in place, one after another):

# %%
augment = v2.Compose(  # applies its transforms in order, as nn.Sequential does its layers
    [v2.RandomCrop(32, padding=4, padding_mode="reflect"), v2.RandomHorizontalFlip()]
)
train_set = CifarImages(images, labels, transform=augment)
reads = [train_set[3750][0] for _ in range(7)]
changed = sum(not torch.equal(read, images[3750]) for read in reads)  # each True counts 1
distinct = len({read.numpy().tobytes() for read in reads})  # pixels as bytes, which a set holds
print("a read:", tuple(reads[0].shape), reads[0].dtype)
print(f"of 7 reads: {changed} unlike the stored image | {distinct} distinct")
views = torch.stack([images[3750], *reads])
show_images(views, [labels[3750]] * 8, names)
plt.show()

# %%
check(
    all(read.shape == (3, 32, 32) and read.dtype == torch.uint8 for read in reads)
    and changed >= 5
    and distinct >= 5,
    "shape and dtype kept; reads differ from the stored image, and most from one another "
    "(a repeat is possible: 81 crops × 2 flips)",
)

# %% [markdown]
# The transform sits in `__getitem__`, so each image draws its own crop and flip. Called on a
# whole batch `(N, C, H, W)`, a random `v2` transform draws **once** for the batch: all images
# flipped or none. Eight calls of a flip on a batch of four images (`flip(-1)` mirrors a tensor
# along its last dimension, the width):

# %%
four = images[:4]
flip = v2.RandomHorizontalFlip()
outcomes = []
for _ in range(8):
    out = flip(four)
    if torch.equal(out, four.flip(-1)):
        outcomes.append("all")
    elif torch.equal(out, four):
        outcomes.append("none")
    else:
        outcomes.append("some")
print("flipped, call by call:", outcomes)
check(
    "some" not in outcomes and len(set(outcomes)) == 2,
    "on a batch, a random flip flips all images or none",
)

# %% [markdown]
# So augment per sample, in `__getitem__`, as above. Only the training set is augmented; images
# used to measure the model stay as they are, so that a measurement does not change from run to
# run.

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
#
# `iter(loader)` starts a pass over the loader, an epoch, and `next(...)` takes its next batch,
# here the first; a `for` loop over the loader does both for every batch.

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
all_batches = len(DataLoader(train_set, batch_size=64))
print("batches per epoch:", len(loader), "| without drop_last:", all_batches)
draw_pipeline(loader, (x, y))
plt.show()

# %% [markdown]
# The picture reads top to bottom, one numbered box per step, with what this loader holds at
# each. Two things to see in code. First, without `shuffle` the first batch holds one class only
# (`unique()` lists a tensor's distinct values):

# %%
unshuffled = DataLoader(train_set, batch_size=64)
first_classes = next(iter(unshuffled))[1].unique().tolist()
print("classes in the first unshuffled batch:", first_classes)
check(first_classes == [0], "without shuffle, the first batch is all airplanes")


# %% [markdown]
# Second, which images did the shuffled batch `x` get? A loader with the same settings and seed,
# over the indices themselves (`TensorDataset(torch.arange(10_000))`), shuffles the same way and
# shows them. Its items are tuples of one tensor, so each of its batches is a list holding one
# tensor of 64 indices:

# %%
def index_loader(seed):
    """Like `loader` (same length, settings and seed), over the indices 0 … 9,999."""
    return DataLoader(
        TensorDataset(torch.arange(len(train_set))),
        batch_size=64,
        shuffle=True,
        drop_last=True,
        generator=torch.Generator().manual_seed(seed),
    )


first = next(iter(index_loader(0)))[0]
print("first indices, seed 0:", first[:6].tolist())
print("their labels:", labels[first[:6]].tolist(), "| the batch x's:", y[:6].tolist())
again = next(iter(index_loader(0)))[0]
other = next(iter(index_loader(1)))[0]
print("seed 0 again:", again[:6].tolist())
print("seed 1:", other[:6].tolist())
epoch = torch.cat([batch[0] for batch in index_loader(0)])
print("indices in one epoch:", len(epoch), "| distinct:", len(epoch.unique()))
check(torch.equal(labels[first], y), "they are the indices of the batch x: labels match")
check(
    torch.equal(first, again) and not torch.equal(first, other),
    "the same seed gives the same order; another seed another",
)
check(
    len(epoch) == len(epoch.unique()) == 156 * 64,
    "an epoch of 156 full batches reads 9,984 different images",
)

# %% [markdown]
# A shortcut that looks right gives another order. `loader.batch_sampler` yields the batches of
# indices without reading any image, but iterating a DataLoader first draws a seed from its
# `generator` (for worker processes, met below) and only then shuffles, so `batch_sampler` alone gives
# another order:

# %%
sampler_first = next(iter(index_loader(0).batch_sampler))[:6]
print("batch_sampler's first indices, seed 0:", sampler_first)
check(sampler_first != first[:6].tolist(), "batch_sampler alone gives another order")

# %% [markdown]
# To know which samples a batch holds, let the dataset return each sample's index with it
# (Exercise 1).
#
# The batch is what the CNN of 04 takes: `uint8` images, converted and normalised inside the
# model. Its output is one row of two logits per image, which 06 turns into a loss.
# `torch.manual_seed(0)` seeds PyTorch's global random generator, the one every random draw uses
# unless it is given its own, like the sampler's above: the CNN's initial weights are then the
# same on every run.

# %%
mean, std = channel_stats(images)
torch.manual_seed(0)
model = small_cnn(mean, std)
with torch.no_grad():
    logits = model(x)
print("logits:", tuple(logits.shape), logits.dtype)
check(logits.shape == (64, 2), "one batch in, one row of 2 logits per image out")

# %% [markdown]
# **`num_workers`.** By default the main process reads each batch itself, between training
# steps; `num_workers=2` starts two worker processes that prepare batches meanwhile. When that is
# faster, and why a `Dataset` for workers belongs in a `.py` file, is in the cookbook's recipe
# [Choose `num_workers` by measuring
# it](cookbook/05_datasets_dataloaders_recipes.ipynb#Choose-num_workers-by-measuring-it).

# %% [markdown]
# ## The same machinery for text: reviews of every length
#
# The course's second data set is IMDB: movie reviews, each negative (0) or positive (1).
# Nothing in the five steps is about images: for text, only what a sample is (step 4) and how
# samples join (step 5) change. A model reads a review as a sequence of **token ids**:
# `tokenize` splits the text into words, and `Vocab` numbers them. To keep things quick we take
# 2,000 training reviews and a vocabulary of 5,000 ids: padding (id 0), unknown words (id 1) and
# the 4,998 most frequent tokens:

# %%
# fetch: the data set's folder (downloaded once); train/ holds neg/ and pos/, one .txt a review
train_dir = fetch("imdb") / "train"
files = {name: sorted((train_dir / name).glob("*.txt")) for name in ("neg", "pos")}
print("training reviews:", {name: len(found) for name, found in files.items()})
paths = files["neg"][:1000] + files["pos"][:1000]
texts = [path.read_text(encoding="utf-8") for path in paths]
docs = [tokenize(text) for text in texts]
vocab = Vocab.build(docs, max_size=5000)
print("a positive review:", texts[1000][:50], "…")
print("its tokens:", docs[1000][:8])
print("their ids:", vocab.encode(docs[1000][:8]), "| vocabulary size:", len(vocab))


# %% [markdown]
# Step 4: a dataset of reviews encodes each review once, in `__init__`, and returns its ids as a
# tensor of its own length:

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
shortest, median, longest = lengths.min(), lengths.median(), lengths.max()
print(f"tokens per review: shortest {shortest} | median {median} | longest {longest}")

# %% [markdown]
# The default collate function stacks samples, and tensors of different lengths do not stack:

# %%
with expect_error(RuntimeError):
    next(iter(DataLoader(reviews, batch_size=4)))


# %% [markdown]
# Step 5: our own `collate_fn` **pads** each review with id 0 up to the longest review of its
# batch (`pad_sequence` pads; `batch_first=True` puts the batch first). Padding to the batch's
# longest, not to the longest review of the whole data set, keeps most batches much narrower:

# %%
def pad_collate(batch):
    """A list of (ids, label) -> ids padded with 0 to the longest review, labels."""
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
print("ids:", tuple(ids.shape), ids.dtype, "| labels:", review_labels[:8].tolist(), "…")
padded = sum(batch_ids.numel() for batch_ids, _ in text_loader)
longest_all = len(reviews) * longest.item()
print(f"ids an epoch, padded per batch: {padded:,} | to the longest: {longest_all:,}")

# %%
row_lengths = (ids != 0).sum(dim=1)  # id 0 is only ever padding
check(
    all(
        (row[:n] != 0).all() and (row[n:] == 0).all()  # a tensor's .all(): every element True
        for row, n in zip(ids, row_lengths, strict=True)
    )
    and ids.shape[1] == row_lengths.max(),
    "each review is followed by padding only, up to the longest review of its batch",
)
check(
    padded < 0.75 * longest_all,
    "padding per batch reads at least a quarter fewer ids than padding to the longest",
)


# %% [markdown]
# A text model reads the padded ids and is told to ignore id 0. The cookbook's recipe [Train a
# bag-of-embeddings model on
# IMDB](cookbook/05_datasets_dataloaders_recipes.ipynb#Train-a-bag-of-embeddings-model-on-IMDB,-on-length-bucketed-batches)
# trains one on such batches.

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
# Start from a copy of `pad_collate`. Only one thing in it has to change: what each review looks
# like before `pad_sequence` sees it.
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
#   `generator=` for an order that repeats from run to run; to know which samples a batch
#   holds, return each sample's index from the dataset.
# - Sequences of different lengths need a `collate_fn` that pads each batch to its longest one.
#
# Next: [06 · Losses: scoring the CNN's logits](06_losses.ipynb).
