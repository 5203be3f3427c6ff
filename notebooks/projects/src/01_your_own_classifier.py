# %% [markdown]
# # P1 · Your own classifier, from an empty notebook
#
# [![Open In Colab](https://colab.research.google.com/assets/colab-badge.svg)](https://colab.research.google.com/github/pytorch-cookbook/pytorch-cookbook/blob/main/notebooks/projects/01_your_own_classifier.ipynb)
#
# The lessons gave you each piece; here you put them together yourself, starting from empty
# cells. Build an image classifier for CIFAR2 (airplanes and automobiles) from the image files
# on disk, train it, log it, save it, and show that it repeats. The course then grades what you
# leave on disk, not your code: any design that meets the criteria passes.
#
# **Before you start:** lessons 01 and 03-08 (tensors, autograd, modules, Datasets and
# DataLoaders, losses, the training loop, TensorBoard); [00](../00_python.ipynb) for classes and
# generators. The [recipe index](../RECIPES.md) finds the recipe for a task.
#
# **Time:** yours to plan. The reference solution is about 130 lines of code, and its training
# runs in under 30 s on a 2-core CPU. The run time below is this notebook's as it comes, with
# its cells empty: your training adds its own.
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

from helpers import capstone
from helpers.data import fetch
from helpers.env import setup

device = setup(seed=0)
print(f"the image folders: {fetch('cifar2').name}/ (train/ and test/)")

# %% [markdown]
# ## The brief
#
# 1. **A Dataset of your own over the image files** under `fetch("cifar2")` (`helpers.data`:
#    the folder with `train/` and `test/`, one folder per class inside each, JPEGs of 32 × 32
#    pixels). Not the course's loaders and models (`load_cifar2`, `ImageTensors`,
#    `small_cnn`): read the files yourself, for example with PIL's `Image.open` and
#    `v2.PILToTensor()`. The cookbook shows the folder layout and its PIL images ([Load an image
#    folder with
#    `ImageFolder`](../cookbook/05_datasets_dataloaders_recipes.ipynb#Load-an-image-folder-with-ImageFolder)),
#    the conversion ([Convert between PIL images and
#    tensors](../cookbook/05_datasets_dataloaders_recipes.ipynb#Convert-between-PIL-images-and-tensors:-ToTensor-vs-PILToTensor))
#    and why an epoch should not decode the JPEGs again ([Decode images once and keep them in
#    memory](../cookbook/05_datasets_dataloaders_recipes.ipynb#Decode-images-once-and-keep-them-in-memory):
#    take the idea there, not its code, which uses the course's loaders).
#    Labels follow the class folders in sorted order: 0 for `0_airplane`, 1 for `1_automobile`.
#    Wrap it in a DataLoader.
# 2. **A validation split** taken from `train/`: at least 5 % of it, never trained on. The
#    `test/` folder is the checker's: do not train, validate or compute statistics on it.
# 3. **A model of your own design** (an `nn.Module` class) that takes a batch of `uint8` images
#    `(N, 3, 32, 32)`, as decoded from the files, and returns 2 logits per image. It normalises
#    its input itself, with the per-channel mean and standard deviation of your training files
#    (pixels scaled to [0, 1]).
# 4. **A training loop** with an optimiser, evaluated on the validation split in evaluation mode.
# 5. **A TensorBoard log**: a training curve (a scalar tag with `train` in its name, such as
#    `train/loss`) and a validation curve (`val`, such as `val/accuracy`), 2 points or more each.
# 6. **A checkpoint**, saved with `torch.save` as a dictionary that `torch.load(...,
#    weights_only=True)` reads, holding:
#    `"model"` (`model.state_dict()`), `"model_args"` (the keyword arguments that rebuild your
#    class: `YourModel(**model_args)`), `"optimizer"` (`optimizer.state_dict()`), `"seed"`,
#    `"train_files"` and `"val_files"` (the files used, relative to the CIFAR2 folder, such as
#    `"train/0_airplane/12.jpg"`), `"mean"` and `"std"` (3 numbers each, of the `train_files`
#    only), and `"val_accuracy"` (a fraction in [0, 1]: the accuracy of the weights you save,
#    measured on exactly the `val_files`, in evaluation mode; the checker measures it again and
#    allows 0.01). `torch.save` does not create folders: make them first, with
#    `Path("runs/p1").mkdir(parents=True, exist_ok=True)`.
# 7. **A run that repeats**: apart from the main run, train twice more from one seed (any seed,
#    the same for both), a few dozen steps each, and save both checkpoints (each under its own name; only their `"model"`
#    and `"optimizer"` are read); their weights must come out equal. On a GPU, also call
#    `torch.use_deterministic_algorithms(True)`, or run these two on the CPU.
#
# **The bar:** at least 0.90 test accuracy on the checker's 2,000 test images (the course's CNN
# reaches about 0.97 in lesson 07).
#
# **Your own images instead:** put them in a folder with `train/` and `test/`, one folder of
# images per class in each, all of one size (any size: the 32 × 32 of rule 3 is CIFAR2's), list
# your files relative to that folder, and add `data=` that folder (and `bar=` the test accuracy
# you aim for) to the grading call below: the same criteria run on your data.
#
# **Where to look:** a Dataset and DataLoader ([05](../05_datasets_dataloaders.ipynb)), a model
# class ([04](../04_modules.ipynb)), the loop, evaluation and a checkpoint
# ([07](../07_training_loop.ipynb)), logging ([08](../08_tensorboard.ipynb)), seeds and a
# seeded DataLoader ([05](../05_datasets_dataloaders.ipynb); [13](../13_reproducibility_debugging.ipynb)
# goes further).
#
# **What the checker can and cannot see:** it reads your checkpoint, log and repeats, and
# measures the model on the test images itself. It trusts the file lists you save: list exactly
# the files you used.

# %% [markdown]
# ## Your work
#
# Add as many cells as you need below.

# %%
# your Dataset and DataLoader

# %%
# your model

# %%
# your training loop, the log, the checkpoint and the repeated run

# %% [markdown]
# ## Grade it
#
# Fill in your checkpoint's path, your model class, your log folder and the two checkpoints of
# the repeated run, then run the cell. Each criterion prints `✓`, or `✗` with what is wrong and
# where to look. Run it as often as you like.

# %%
passed = capstone.grade_classifier(
    checkpoint=...,  # e.g. Path("runs/p1/model.pt") (from pathlib import Path)
    model_class=...,  # your nn.Module class
    log_dir=...,  # the folder your SummaryWriter wrote
    repeats=(..., ...),  # the two checkpoints of the same-seed runs
)

# %% [markdown]
# The course's repository holds a reference solution, in the `reference` folder beside this
# notebook (not in the student copies): open it after you have passed, or when you are truly
# stuck, and compare designs.
