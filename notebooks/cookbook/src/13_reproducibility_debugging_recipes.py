# %% [markdown]
# # 13 · Reproducibility and debugging: recipes
#
# [![Open In Colab](https://colab.research.google.com/assets/colab-badge.svg)](https://colab.research.google.com/github/pytorch-cookbook/pytorch-cookbook/blob/main/notebooks/cookbook/13_reproducibility_debugging_recipes.ipynb)
#
# **The cookbook of chapter 13.** New to the topic? [The lesson](../13_reproducibility_debugging.ipynb) teaches it
# step by step on the course's running example. Here each recipe answers one task; the
# [recipe index](../RECIPES.md) and the [error index](../ERRORS.md) find the one you need.
#
# The last chapter gathers what goes wrong between "it ran" and "it gives the right answer,
# again". After this notebook you can make a run repeat bit for bit and say what a seed does
# **not** fix (thread counts, versions, GPU kernels), turn on deterministic algorithms and read
# the error they raise, keep augmentation independent of the number of DataLoader workers, and
# record the environment with a result. Then each error practitioners meet most is reproduced
# for real and fixed: device, dtype and shape mismatches, a DataLoader that hangs, CUDA in
# forked workers, NaN and Inf, a model that does not learn, `torch.compile` graph breaks and
# recompilations.
#
# **Prerequisites:** [03](../03_autograd.ipynb) (autograd, anomaly detection),
# [05](../05_datasets_dataloaders.ipynb) (DataLoader workers and their seeds),
# [07](../07_training_loop.ipynb) (training loop, checkpoints),
# [10](10_speedups_inference_recipes.ipynb#Compile-a-model,-and-time-the-compilation-separately)
# (`torch.compile`).
#
# **Run time:** about 30 s on a 2-core CPU · GPU optional.

# %%
import sys

if (
    "google.colab" in sys.modules
):  # Colab: install the course's helpers and what the notebooks import
    import subprocess

    spec = "pytorch-cookbook[notebooks] @ git+https://github.com/pytorch-cookbook/pytorch-cookbook"
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", spec], check=True)

import contextlib
import gc
import importlib.metadata
import inspect
import io
import math
import multiprocessing
import os
import pickle
import platform
import re
import shutil
import subprocess
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import torch
import torch._inductor.config as inductor_config
import torch.nn.functional as F
from sklearn.datasets import load_digits
from torch import nn
from torch._inductor.exc import InductorError
from torch.overrides import TorchFunctionMode
from torch.utils.data import DataLoader, TensorDataset

from helpers import debug, doctor
from helpers.check import check, expect_error, expect_warning
from helpers.checkpoint import atomic_save
from helpers.env import quiet_logger, seed_everything, setup
from helpers.exercises import ch13

device = setup(seed=0)
RUN = Path("runs/13_reproducibility_debugging")  # what this notebook writes: made anew each run
shutil.rmtree(RUN, ignore_errors=True)
RUN.mkdir(parents=True)
digits = load_digits()  # ships with scikit-learn: no download
print(f"digits: {len(digits.target)} images, 8×8 pixels (0-16), {digits.data.dtype}, 10 classes")

# %% [markdown]
# ## Seed everything, and check that two runs repeat bit for bit
#
# Every setup cell of the course calls `helpers.env.seed_everything` (through `setup`). It seeds
# the three generators a training run draws from: Python's `random`, NumPy's global generator
# and torch's, which `torch.manual_seed` seeds on **every** device (CPU, each CUDA GPU, MPS):

# %%
print(inspect.getsource(seed_everything))

# %% [markdown]
# The proof that seeding is enough on one machine: a small classifier on the digits, trained
# twice from the same seed, compared weight by weight with `torch.equal` (every bit), not
# `allclose`. The DataLoader shuffles with torch's global generator, so the seed covers it too.

# %%
X = torch.tensor(digits.data, dtype=torch.float32) / 16  # pixels 0-16 → [0, 1]
Y = torch.tensor(digits.target)
order = torch.randperm(len(Y), generator=torch.Generator().manual_seed(0))
x_train, y_train = X[order[:1400]], Y[order[:1400]]
x_val, y_val = X[order[1400:]], Y[order[1400:]]


def make_model() -> nn.Sequential:
    """An MLP for the 64 pixels of a digit, with BatchNorm and dropout (both random or stateful)."""
    return nn.Sequential(
        nn.Linear(64, 64), nn.BatchNorm1d(64), nn.ReLU(), nn.Dropout(0.2), nn.Linear(64, 10)
    )


def train_once(seed: int, epochs: int = 3) -> tuple[nn.Module, float]:
    """Seed, build, train; return the model and its last batch loss."""
    seed_everything(seed)
    model = make_model()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    loader = DataLoader(TensorDataset(x_train, y_train), batch_size=64, shuffle=True)
    for _ in range(epochs):
        for x, y in loader:
            loss = F.cross_entropy(model(x), y)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
    return model, loss.item()


def same_weights(a: nn.Module, b: nn.Module) -> bool:
    """Whether every parameter and buffer of two models is equal, bit for bit."""
    return all(
        torch.equal(p, q)
        for p, q in zip(a.state_dict().values(), b.state_dict().values(), strict=True)
    )


first, loss_first = train_once(seed=0)
second, loss_second = train_once(seed=0)
other, loss_other = train_once(seed=1)
print("seed 0 twice, every weight and buffer equal bit for bit:", same_weights(first, second))
print("seed 0 and seed 1 equal:", same_weights(first, other))

# %% tags=["nbval-ignore-output"]
print(f"last loss: seed 0 {loss_first:.6f}, again {loss_second:.6f}; seed 1 {loss_other:.6f}")

# %%
check(loss_first == loss_second, "two runs from one seed end with the same loss, to the last bit")
check(loss_first != loss_other, "another seed gives another run")

# %% [markdown]
# The losses are in an ignored cell on purpose: on another CPU (another vector instruction set,
# another thread count) the same seed may give a run that repeats itself but differs from this
# one in the last digits.
# Seeding makes a run repeatable **on the same machine with the same software**; the next recipe
# shows what else it depends on.

# %% [markdown]
# ## Know what a seed does not fix: threads, hash seeds, versions and GPU kernels
#
# **Thread count.** A parallel sum splits the tensor between threads and adds the partial sums.
# Floating-point addition is not associative, so another split rounds differently. The same sum
# of ten million float32 numbers, with 1, 2, 3 and 4 intra-op threads, twice each:

# %%
big = torch.randn(10_000_000, generator=torch.Generator().manual_seed(0))
threads_before = torch.get_num_threads()
sums: dict[int, list[float]] = {1: [], 2: [], 3: [], 4: []}
for threads in (1, 2, 3, 4) * 2:
    torch.set_num_threads(threads)
    sums[threads].append(big.sum().item())
torch.set_num_threads(threads_before)

# %% tags=["nbval-ignore-output"]
for threads, values in sums.items():
    print(f"{threads} thread(s): {values[0]!r}, again {values[1]!r}")

# %% [markdown]
# The digits printed depend on this CPU's vector instructions, so they sit in an ignored cell;
# what holds on any machine is checked:

# %%
distinct = {values[0] for values in sums.values()}
check(all(a == b for a, b in sums.values()), "each thread count repeats its sum to the last bit")
check(
    len(distinct) > 1,
    "other thread counts round the same sum differently",
    measured=f"{len(distinct)} different sums from 4 thread counts",
)

# %% [markdown]
# `setup` uses one thread fewer than the machine has cores, so a laptop and the 2-core CI
# machine sum in different splits; with the CPU's vector instructions (AVX2, AVX-512) this is
# why a training log differs in its last digits from machine to machine, and why the course
# stores such logs in ignored cells. Matrix products (MKL, oneDNN, cuBLAS) may also split their
# work by thread count or by hardware.
#
# **Python's hash seed.** Iterating over a `set` of strings follows their hashes, which Python
# salts with a random seed when the interpreter **starts** (`PYTHONHASHSEED`). A vocabulary
# numbered by iterating over a set numbers the words differently in every process. Setting the
# variable inside a running process (as `seed_everything` does) only reaches processes started
# later. Two fresh interpreters:

# %%
words = ["cat", "dog", "emu", "fox", "gnu", "hen", "owl", "pig", "ram", "yak"]
program = f"print(list(set({words!r})), sorted(set({words!r})))"
orders = [
    subprocess.run(
        [sys.executable, "-c", program],
        env={**os.environ, "PYTHONHASHSEED": hash_seed},
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    for hash_seed in ("1", "2")
]

# %% tags=["nbval-ignore-output"]
for hash_seed, line in zip(("1", "2"), orders, strict=True):
    print(f"PYTHONHASHSEED={hash_seed}: {line}")

# %%
set_orders = [line.split("] [")[0] for line in orders]
sorted_orders = [line.split("] [")[1] for line in orders]
check(set_orders[0] != set_orders[1], "a set of strings iterates in another order per hash seed")
check(sorted_orders[0] == sorted_orders[1], "sorted(set(...)) is the same in every process")

# %% [markdown]
# **Versions.** Another torch, CUDA, cuDNN or MKL release may choose other kernels or change a
# default, so stored outputs are tied to the lock file (recorded below).
#
# **GPU kernels.** Many CUDA kernels add with atomic operations, in whatever order the threads
# arrive: `index_add_`, `scatter_add_`, the backward of an embedding or of `index_select`. Run
# twice on the same GPU, they can give different bits. On the CPU they are sequential:

# %%
index = torch.randint(0, 10, (1_000_000,), generator=torch.Generator().manual_seed(0))
source = torch.randn(1_000_000, generator=torch.Generator().manual_seed(1))
index, source = index.to(device), source.to(device)
twice = [torch.zeros(10, device=device).index_add_(0, index, source) for _ in range(2)]
print(f"index_add_ on {device.type}, run twice, bit for bit equal: {torch.equal(*twice)}")
if device.type == "cuda":  # deterministic mode (next recipe) makes the CUDA kernel repeatable
    torch.use_deterministic_algorithms(True)
    twice = [torch.zeros(10, device=device).index_add_(0, index, source) for _ in range(2)]
    torch.use_deterministic_algorithms(False)
    print(f"with deterministic algorithms: {torch.equal(*twice)}")

# %% [markdown]
# On a GPU the first line usually says `False` (not always: the arrival order can happen to
# repeat), the second `True`.

# %% [markdown]
# ## Turn on deterministic algorithms, and read the error they raise
#
# Four settings make GPU runs repeatable, at some cost in speed:
#
# - `torch.use_deterministic_algorithms(True)`: every operation uses a deterministic kernel
#   where one exists and **raises** where none does (the old name, `torch.set_deterministic`,
#   was removed);
# - `torch.backends.cudnn.deterministic = True`: only deterministic cuDNN convolutions (implied
#   by the line above, but old code sets it alone);
# - `torch.backends.cudnn.benchmark = False`: with `True`, cuDNN times several convolution
#   algorithms for each new input shape and keeps the fastest, which can differ between runs;
# - `CUBLAS_WORKSPACE_CONFIG=:4096:8` in the environment before the first CUDA matrix product:
#   older releases raised `... it uses CuBLAS and you have CUDA >= 10.2` without it. Torch 2.15
#   has no such check on any device (pytorch/pytorch#161749 gave each CUDA stream its own cuBLAS
#   workspace, which cuBLAS documents as enough); the variable still sizes that workspace, so
#   setting it is harmless and keeps old releases working. The docstring printed below no
#   longer names it.

# %%
print(
    "the docstring of use_deterministic_algorithms names CUBLAS_WORKSPACE_CONFIG:",
    "CUBLAS_WORKSPACE_CONFIG" in (torch.use_deterministic_algorithms.__doc__ or ""),
)
if torch.cuda.is_available():  # the old check, tried live: without the variable, a matmul
    unset = os.environ.pop("CUBLAS_WORKSPACE_CONFIG", None)
    torch.use_deterministic_algorithms(True)
    try:
        a = torch.randn(64, 64, device=device)
        print("CUDA matmul, deterministic, no CUBLAS_WORKSPACE_CONFIG:", (a @ a).shape)
    except RuntimeError as err:  # releases that still check raise here
        print("RuntimeError:", str(err).split(". ")[0])
    finally:
        torch.use_deterministic_algorithms(False)
        if unset is not None:
            os.environ["CUBLAS_WORKSPACE_CONFIG"] = unset

# %% [markdown]
# The four settings, as a training script's first lines:

# %%
os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")  # for releases before the change
torch.use_deterministic_algorithms(True)
torch.backends.cudnn.deterministic = True
torch.backends.cudnn.benchmark = False
print("deterministic algorithms:", torch.are_deterministic_algorithms_enabled())
print("torch.set_deterministic still exists:", hasattr(torch, "set_deterministic"))

# %% [markdown]
# Most operations without a deterministic kernel raise only on CUDA (the docstring of
# `torch.use_deterministic_algorithms` lists them). What this device really does, tried live:

# %%
samples = torch.rand(100, device=device)
at = torch.tensor([0, 0, 3], device=device)
pooled, where = F.max_pool2d(torch.rand(1, 1, 4, 4, device=device), 2, return_indices=True)
suspects = {
    "torch.histc": lambda: torch.histc(samples),
    "torch.bincount with weights": lambda: torch.bincount(at, weights=samples[:3]),
    "Tensor.index_add_": lambda: samples.clone().index_add_(0, at, samples[:3]),
    "Tensor.scatter_reduce (sum)": lambda: samples.clone().scatter_reduce(0, at, samples, "sum"),
    "Tensor.put_ (accumulate=False)": lambda: samples.clone().put_(at, samples[:3]),
    "nn.MaxUnpool2d": lambda: nn.MaxUnpool2d(2)(pooled, where),
}


def outcome(op) -> str:
    """'raises' when deterministic mode refuses ``op``, else 'runs' (or the other error)."""
    try:
        op()
    except RuntimeError as err:
        return "raises" if "deterministic" in str(err) else f"fails: {type(err).__name__}"
    return "runs"


print(f"in deterministic mode on {device.type}:")
print(pd.Series({name: outcome(op) for name, op in suspects.items()}).to_string())

# %% [markdown]
# ### Pitfall: `max_unpooling2d_forward_out does not have a deterministic implementation`
#
# `MaxUnpool2d` raises on every device: when pooling windows overlap, several values may be
# written to one place, in no fixed order.

# %%
with expect_error(RuntimeError):
    nn.MaxUnpool2d(2)(pooled, where)

# %% [markdown]
# The fixes: replace the operation (a transposed convolution or `F.interpolate` upsamples
# deterministically), or accept it knowingly with `warn_only=True`, which turns the error into a
# warning (caught and shown here) and leaves the rest deterministic:

# %%
torch.use_deterministic_algorithms(True, warn_only=True)
with expect_warning(UserWarning, match="deterministic") as caught:
    unpooled = nn.MaxUnpool2d(2)(pooled, where)
print("ran, shape", tuple(unpooled.shape))
check(len(caught) == 1, "warn_only=True runs the operation and warns instead of raising")

# %% [markdown]
# Deterministic mode also fills memory that `torch.empty` leaves uninitialised with NaN
# (`torch.utils.deterministic.fill_uninitialized_memory`), so a kernel that reads memory it
# never wrote gives NaN instead of whatever was there. The course turns the mode off again for
# the rest of the notebook; a training script turns it on once, at the top.

# %%
print("torch.empty(3) in deterministic mode:", torch.empty(3))
torch.use_deterministic_algorithms(False)
check(not torch.are_deterministic_algorithms_enabled(), "deterministic algorithms are off again")


# %% [markdown]
# ## Reproduce shuffling and augmentation with any number of workers
#
# [05](05_datasets_dataloaders_recipes.ipynb#Know-how-workers-are-seeded,-and-what-generator=-and-worker_init_fn-are-for)
# showed how workers are seeded: worker `k` seeds torch and Python's `random` with the loader's
# base seed + `k`, and NumPy from it (since PyTorch 1.9); `generator=` fixes the base seed.
# The `seed_worker` function of PyTorch's reproducibility page,
#
# ```python
# def seed_worker(worker_id):
#     worker_seed = torch.initial_seed() % 2**32
#     numpy.random.seed(worker_seed)
#     random.seed(worker_seed)
# ```
#
# passed as `worker_init_fn=seed_worker`, is therefore redundant today (harmless); a
# `worker_init_fn` is still the place to seed any other library with its own generator.
#
# What 05 left open: the shuffle order depends only on `generator=`, but a random augmentation
# drawn from the worker's generator depends on **which worker** loads the sample, and that
# changes with `num_workers`. `helpers.debug.WorkerNoise` draws as augmentations usually do:

# %%
def noise_table(dataset, workers: int) -> list[tuple[int, float]]:
    """(index, noise) of every sample, in loading order, from a seeded shuffling loader."""
    loader = DataLoader(
        dataset,
        batch_size=4,
        shuffle=True,
        num_workers=workers,
        generator=torch.Generator().manual_seed(0),
    )
    return [
        (int(i), round(float(v), 4)) for idx, val in loader for i, v in zip(idx, val, strict=True)
    ]


torch.manual_seed(0)
plain = {workers: noise_table(debug.WorkerNoise(12), workers) for workers in (0, 1, 2)}
for workers, table in plain.items():  # batch 2: worker 1 loads it when there are two
    print(f"{workers} workers, second batch:", table[4:8])
check(
    [i for i, _ in plain[0]] == [i for i, _ in plain[1]] == [i for i, _ in plain[2]],
    "the same generator gives the same order with 0, 1 or 2 workers",
)
check(
    plain[0] != plain[1] != plain[2] != plain[0],
    "but other noise with each worker count (main process, one worker, two)",
)

# %% [markdown]
# The fix: draw each sample's randomness from a generator seeded by the sample itself, its
# index, the epoch and one run seed (`np.random.SeedSequence` mixes them into a well-spread
# seed). Then no worker, and no number of workers, changes it:

# %%
print(inspect.getsource(debug.SampleNoise.__getitem__))
seeded = debug.SampleNoise(12, seed=0)
per_sample = {workers: noise_table(seeded, workers) for workers in (0, 1, 2)}
seeded.set_epoch(1)
next_epoch = noise_table(seeded, 2)
print("any worker count, second batch:", per_sample[2][4:8])
check(
    per_sample[0] == per_sample[1] == per_sample[2],
    "per-sample seeds give the same noise with 0, 1 or 2 workers",
)
check(next_epoch != per_sample[2], "set_epoch draws new noise for the next epoch")

# %% [markdown]
# With `persistent_workers=True` the workers keep the copy of the dataset they received at the
# start, so `set_epoch` in the main process does not reach them:

# %%
kept = DataLoader(
    debug.SampleNoise(4, seed=0), batch_size=4, num_workers=1, persistent_workers=True
)
epochs = []
for epoch in range(2):
    kept.dataset.set_epoch(epoch)
    epochs.append(next(iter(kept))[1].tolist())
del kept  # shuts the persistent worker down
check(epochs[0] == epochs[1], "persistent workers repeat epoch 0's noise despite set_epoch")

# %% [markdown]
# Pass the epoch another way there (a shared `multiprocessing.Value`, or inside the indices a
# custom sampler yields), or let the workers restart each epoch (the default).

# %% [markdown]
# ## Record the environment a result was produced with
#
# A result without its environment cannot be reproduced. Three records, from the most to the
# least detailed:
#
# 1. `python -m torch.utils.collect_env`: the report PyTorch's issue template asks for (OS,
#    compilers, CUDA, driver, GPU models, CPU, relevant pip and conda packages). From Python:

# %%
from torch.utils import collect_env

info = collect_env.get_env_info()

# %% tags=["nbval-ignore-output"]
for field in ("torch_version", "cuda_compiled_version", "is_cuda_available", "os"):
    print(f"{field:22} {getattr(info, field)}")
print("pip packages with torch or numpy in their names:")
print(info.pip_packages)

# %%
torch_wheel = importlib.metadata.version("torch")  # the installed package, as pip knows it
check(
    f"torch=={torch_wheel}" in info.pip_packages.splitlines(),
    "collect_env's pip list and this Python's package metadata name the same torch",
    measured=f"torch=={torch_wheel}",
)


# %% [markdown]
# 2. The versions **inside the checkpoint**, next to the weights: what produced this file.

# %%
def environment() -> dict[str, str]:
    """The versions and settings that can change a result, as strings."""
    return {
        "torch": str(torch.__version__),  # a TorchVersion, which weights_only=True refuses
        "python": platform.python_version(),
        "numpy": np.__version__,
        "cuda": str(torch.version.cuda),
        "cudnn": str(torch.backends.cudnn.version()),
        "device": torch.cuda.get_device_name() if device.type == "cuda" else device.type,
        "threads": str(torch.get_num_threads()),
    }


def differences(recorded: dict[str, str], now: dict[str, str]) -> dict[str, tuple]:
    """``{name: (recorded, now)}`` for every entry that differs or exists on one side only."""
    return {
        k: (recorded.get(k), now.get(k))
        for k in sorted(recorded.keys() | now.keys())
        if recorded.get(k) != now.get(k)
    }


atomic_save({"model": first.state_dict(), "environment": environment()}, RUN / "model.pt")
saved = torch.load(RUN / "model.pt", weights_only=True)
now = environment()
print("recorded:", sorted(saved["environment"]))
print("differences from the environment that saved it:", differences(saved["environment"], now))
older = {**saved["environment"], "torch": "2.4.0+cu121"}  # as if saved by another install
print("against a file saved with another torch:", differences(older, now))

# %%
check(
    differences(saved["environment"], now) == {}
    and differences(older, now) == {"torch": ("2.4.0+cu121", now["torch"])},
    "the checkpoint's environment round-trips, and a different torch shows up as the difference",
)

# %% [markdown]
# 3. **Every package version**, pinned. The course's `requirements-lock.txt` is such a record:
# `make lab` and `make test` install exactly those versions, so the stored outputs were made
# with them (and on Colab, which ships its own versions, small differences are expected). Write
# the same kind of record next to your own results, and compare with the lock when it is here
# (`make doctor` does that comparison for the key packages before a workshop). Package metadata
# says `torch==2.x.y` for the CPU and the CUDA wheels alike: the build (`+cpu`, `+cu132`) and
# the CUDA version are only in `torch.__version__` and `torch.version.cuda`, so the record's
# first line keeps them. A record is worth what its diff against another one tells you:

# %%
installed = {
    d.metadata["Name"].lower().replace("_", "-"): d.version
    for d in importlib.metadata.distributions()
}
build = (
    f"# torch {torch.__version__} · CUDA {torch.version.cuda} · python {platform.python_version()}"
)
(RUN / "environment.txt").write_text(
    build + "\n" + "".join(f"{n}=={v}\n" for n, v in sorted(installed.items()))
)
pins = doctor.read_lock()  # the course's requirements-lock.txt; {} where it is absent (Colab)


def read_header(text: str) -> str:
    """The record's first line, where the build and CUDA versions are kept."""
    return text.splitlines()[0] if text.startswith("#") else ""


def read_record(text: str) -> dict[str, str]:
    """The ``name==version`` lines of a record (comment lines skipped)."""
    lines = [line for line in text.splitlines() if line and not line.startswith("#")]
    return dict(line.split("==", 1) for line in lines)


# %% tags=["nbval-ignore-output"]
differ = {n: (v, installed.get(n)) for n, v in pins.items() if installed.get(n) != v}
print(f"{len(installed)} packages written to {RUN / 'environment.txt'}")
print(f"lock pins {len(pins)} packages; installed differently here: {differ or 'none'}")

# %%
record = (RUN / "environment.txt").read_text()
print(record.splitlines()[0])
bumped = {**installed, "numpy": "1.26.4"}
check(
    differences(read_record(record), installed) == {}
    and differences(read_record(record), bumped) == {"numpy": (installed["numpy"], "1.26.4")},
    "the record reads back as written, and a changed package is exactly what a diff reports",
)
check(
    installed["torch"] == torch.__version__.split("+")[0]
    and torch.__version__ in read_header(record),
    "package metadata names torch without its build tag (+cu…, +cpu); the record's first line "
    "keeps it",
    measured=f"metadata {installed['torch']}, torch.__version__ {torch.__version__}",
)

# %% [markdown]
# ## Check the installation: version, CUDA, cuDNN, MPS and devices
#
# The usual snippet prints `torch.cuda.is_available()` and stops there. Done right, it also
# says which CUDA the wheel was **built** with (`torch.version.cuda`; `None` for a CPU-only
# build, and not the driver's version that `nvidia-smi` shows; a CUDA wheel also ships cuDNN,
# which loads even on a machine without a GPU), asks for device names only when
# devices exist (`torch.cuda.get_device_name()` raises otherwise), covers Apple's MPS, and runs
# one operation on the chosen device: "available" does not prove "working" (a wheel built
# without kernels for this GPU's architecture fails at the first operation with `no kernel image
# is available for execution on the device`).

# %% tags=["nbval-ignore-output"]
print(f"torch {torch.__version__}, built with CUDA {torch.version.cuda}")
cudnn = torch.backends.cudnn
print(f"cuDNN in the wheel: {cudnn.version()} (loads: {cudnn.is_available()})")
print(f"CUDA available: {torch.cuda.is_available()}, devices: {torch.cuda.device_count()}")
for i in range(torch.cuda.device_count()):
    props = torch.cuda.get_device_properties(i)
    memory = props.total_memory / 2**30
    print(f"  cuda:{i} {props.name}, {memory:.0f} GiB, capability {props.major}.{props.minor}")
print(f"MPS built: {torch.backends.mps.is_built()}, available: {torch.backends.mps.is_available()}")
probe = torch.ones(2, device=device).sum().item()
print(f"one operation on {device}: {probe}")

# %%
check(probe == 2.0, "an operation really runs on the chosen device")

# %% [markdown]
# ## Move CPU code to Apple silicon (MPS): float64 and missing operators
#
# On a Mac with Apple silicon, `torch.device("mps")` runs on its GPU, and two failures meet
# almost everyone who moves working CPU code there:
#
# - GPU only: ⛔ `TypeError: Cannot convert a MPS Tensor to float64 dtype as the MPS framework doesn't support float64 …`
#   ("Please use float32 instead."): the MPS backend has no float64 at all. The float64 comes
#   from NumPy, whose default is float64 (`torch.from_numpy` keeps the dtype), or from code
#   written for the CPU, like the accuracy line of the classic fine-tuning tutorial,
#   `running_corrects.double() / len(dataset)`. Convert on the CPU, then move; count on the
#   device and divide in Python.
# - GPU only: ⛔ `NotImplementedError: The operator 'aten::…' is not currently implemented for the MPS device …`
#   followed by "If you want this op to be added in priority during the prototype phase of this
#   feature, please comment on https://github.com/pytorch/pytorch/issues/77764" (newer versions:
#   "If you want this op to be considered for addition please comment on
#   https://github.com/pytorch/pytorch/issues/141287 and mention use-case …"): some operators
#   have no MPS kernel yet.
#   `PYTORCH_ENABLE_MPS_FALLBACK=1`, set in the environment before torch is imported, runs
#   those operators on the CPU (each one copies its tensors there and back: slower, but the
#   code runs; it warns once per operator); the message names the operator to replace, if a
#   step is slow.
#
# No Mac is at hand here, so the cell below finds and fixes the float64 on whatever device this
# is; on MPS the same lines are what stops the first error.

# %%
torch.manual_seed(0)
rng = np.random.default_rng(0)
features = torch.from_numpy(rng.random((4, 3)))  # NumPy's default dtype: float64
batch = features.to(torch.float32).to(device)  # convert on the CPU, then move
model_64 = nn.Linear(3, 2).double()  # e.g. a model built under set_default_dtype(float64)
in_float64 = [name for name, t in model_64.state_dict().items() if t.dtype == torch.float64]
predictions = model_64.float().to(device)(batch).argmax(dim=1)
labels = torch.tensor([0, 1, 1, 0], device=device)
correct = (predictions == labels).sum()  # an int64 count, on the device
accuracy = correct.item() / len(labels)  # a Python float: no float64 tensor on the device
tutorial = correct.cpu().double() / len(labels)  # on MPS without .cpu(), .double() fails
print("from NumPy:", features.dtype, "| moved:", batch.dtype, "| float64 in the model:", in_float64)
print(f"the tutorial's line: {tutorial.dtype} | instead: {accuracy} (a Python float)")

# %%
check(
    features.dtype == torch.float64 and in_float64 == ["weight", "bias"],
    "NumPy's arrays and a .double() model hold float64, the dtype MPS refuses",
)
check(
    batch.dtype == torch.float32
    and all(t.dtype == torch.float32 for t in model_64.state_dict().values()),
    "converted on the CPU before moving, neither the batch nor the model holds float64",
)

# %% [markdown]
# ## Choose and hide GPUs: `CUDA_VISIBLE_DEVICES`, `"cuda"` vs `"cuda:0"`, `torch.accelerator`
#
# Three facts that old notes get wrong, the first two checkable on any machine:
#
# - `torch.device("cuda")` means "the **current** CUDA device" and has no index, so it is **not
#   equal** to `torch.device("cuda:0")`. A tensor created on `"cuda"` reports `cuda:0` (or
#   whatever `torch.cuda.set_device` made current), so `t.device == torch.device("cuda")` is
#   `False` on a GPU: compare `t.device.type == "cuda"` (the course's `helpers.env.pick_device`
#   returns `torch.device("cuda")`, so [01](01_tensors_recipes.ipynb) compares `.type`).
#   `t.get_device()` is the GPU index, `-1` for a CPU tensor.
# - `torch.accelerator.current_accelerator()` names the accelerator the **wheel was built for**,
#   even where none is usable; `check_available=True` returns `None` unless one really is
#   ([its documentation](https://docs.pytorch.org/docs/stable/generated/torch.accelerator.current_accelerator.html)).
# - `CUDA_VISIBLE_DEVICES` decides which GPUs a process can see, and renumbers them from 0
#   (`CUDA_VISIBLE_DEVICES=1` makes physical GPU 1 the process's `cuda:0`; `""` hides all of
#   them). Set it in the shell or in a child process's environment. Inside Python it takes
#   effect only if set **before CUDA initialises** (the first CUDA call, not `import torch`):
#   `torch.cuda.device_count()` is cached once CUDA is initialised (a comment in its source:
#   "Do not cache the device count prior to CUDA initialization, because the
#   number of devices can change due to changes to CUDA_VISIBLE_DEVICES"). The docstring of
#   `torch.cuda.set_device` itself recommends the variable over calling it.

# %% tags=["nbval-ignore-output"]
on_cpu = torch.zeros(2)
print(
    "CPU tensor:",
    on_cpu.device,
    "| index",
    on_cpu.device.index,
    "| get_device()",
    on_cpu.get_device(),
)
print(
    "torch.device('cuda') == torch.device('cuda:0'):",
    torch.device("cuda") == torch.device("cuda:0"),
)
built_for = torch.accelerator.current_accelerator()
usable = torch.accelerator.current_accelerator(check_available=True)
chosen = usable if usable is not None else torch.device("cpu")
print(f"wheel built for: {built_for} | usable: {usable} -> compute on {chosen}")
count = "import torch; print(torch.cuda.device_count())"
hidden = subprocess.run(
    [sys.executable, "-c", count],
    env={**os.environ, "CUDA_VISIBLE_DEVICES": ""},
    capture_output=True,
    text=True,
    check=True,
)
seen = torch.cuda.device_count()
print(f"GPUs seen here: {seen} | with CUDA_VISIBLE_DEVICES='': {hidden.stdout.strip()}")
if torch.cuda.is_available():
    on_gpu = torch.zeros(1, device="cuda")
    print(
        "made on 'cuda', reports:",
        on_gpu.device,
        "| equal to torch.device('cuda'):",
        on_gpu.device == torch.device("cuda"),
    )

# %%
check(
    torch.device("cuda") != torch.device("cuda:0")
    and on_cpu.get_device() == -1
    and torch.zeros(1, device=chosen).device.type == chosen.type,
    "'cuda' is not 'cuda:0', and the chosen device computes",
)
check(hidden.stdout.strip() == "0", "a new process with CUDA_VISIBLE_DEVICES='' sees 0 GPUs")
if seen > 0:
    print(f"this process sees {seen}: the variable hid them from the new one")
else:
    print("this process sees 0 too: on a machine without a GPU there is nothing to hide")

# %% [markdown]
# On this machine every GPU count is 0, so the hiding is shown for real only on a GPU machine,
# where the parent's count stays what it was and the child's is 0. Pick the device with
# `torch.cuda.is_available()` or `current_accelerator(check_available=True)`, never with the
# built-for answer alone: a CUDA wheel says `cuda` on a machine that has no GPU (as above, where
# the stored output comes from such a machine).

# %% [markdown]
# ## Fix a device mismatch
#
# All tensors of one operation must live on one device. On a CPU-only machine the real error
# can still be met: the **meta** device holds shapes without data (large models are built there
# first, then materialised), and a model left on it meets data on the CPU (below). With a GPU,
# the everyday form of the mistake (model on `cuda`, batch left on the CPU, or the reverse) gives
# one of these, depending on the operation (texts from torch's ATen library):
#
# - GPU only: ⛔ `RuntimeError: Expected all tensors to be on the same device, but found at least two devices, cuda:0 and cpu!`
# - GPU only: ⛔ `RuntimeError: Input type (torch.FloatTensor) and weight type (torch.cuda.FloatTensor) should be the same or input should be a MKLDNN tensor and weight is a dense tensor`
#
# The fix is the same for every pair of devices. The meta device first:

# %%
with torch.device("meta"):
    unmaterialised = make_model()
print(unmaterialised[0].weight.device, tuple(unmaterialised[0].weight.shape))

# %% [markdown]
# ### Pitfall: `Tensor on device meta is not on the expected device cpu!`

# %%
with expect_error(RuntimeError):
    unmaterialised(x_train[:4])

# %% [markdown]
# The fix is the same for any pair of devices: put the model and the data on one device. For a
# meta model, `to_empty(device=...)` allocates (uninitialised) memory, then weights are loaded:

# %%
materialised = unmaterialised.to_empty(device=device)
materialised.load_state_dict(first.state_dict())  # copies the weights to its device
first.eval()
materialised.eval()
with torch.inference_mode():
    outputs = materialised(x_train[:4].to(device)).cpu(), first(x_train[:4])
# equal bits on the CPU; a GPU's kernels round differently, hence the tolerance
check(torch.allclose(*outputs, atol=1e-5), "the materialised model matches the trained one")

# %% [markdown]
# With a GPU, the message for a CPU batch fed to a CUDA model is different: it begins `Expected
# all tensors to be on the same device` and names both devices (this cell shows it where CUDA
# exists):

# %%
if torch.cuda.is_available():
    try:
        nn.Linear(64, 10).to("cuda")(x_train[:4])
    except RuntimeError as err:
        print("RuntimeError:", str(err).splitlines()[0])
else:
    print("no CUDA device here: on one, this cell prints the CUDA device-mismatch message")

# %% [markdown]
# ## Fix a dtype mismatch: Double from NumPy, Long and Float targets
#
# NumPy's default float is float64; `torch.from_numpy` keeps it, and a float32 model refuses it.
# The digits come from scikit-learn as float64:

# %%
batch64 = torch.from_numpy(digits.data[:4])
print("dtype:", batch64.dtype)

# %% [markdown]
# ### Pitfall: `mat1 and mat2 must have the same dtype, but got Double and Float`

# %%
with expect_error(RuntimeError):
    first(batch64)

# %% [markdown]
# Read it as "input (`mat1`) is Double, weights (`mat2`) are Float". Convert the data once, when
# it enters PyTorch: `torch.tensor(array, dtype=torch.float32)` or `.float()`.

# %%
print("fixed:", tuple(first(batch64.float() / 16).shape))

# %% [markdown]
# ### Pitfall: `expected target dtype to be Long or Byte, but got Float`
#
# `cross_entropy` takes class **indices** as integers (int64, "Long"). Labels read from a
# float column (pandas, a CSV, `torch.tensor(list_of_floats)`) are float32:

# %%
torch.manual_seed(0)
logits = make_model()(x_train[:4])
float_labels = y_train[:4].float()

# %%
with expect_error(RuntimeError):
    F.cross_entropy(logits, float_labels)

# %% [markdown]
# (A float target of the **same shape** as the logits is accepted: it is read as class
# probabilities, for soft labels.) The fix is `float_labels.long()`.

# %%
print(f"fixed: loss {F.cross_entropy(logits, float_labels.long()).item():.3f}")

# %% [markdown]
# ### Pitfall: `result type Float can't be cast to the desired output type Long`
#
# The binary losses want the opposite: a **float** target of the logits' shape, because the
# target takes part in arithmetic (`BCEWithLogitsLoss` computes with it, and can take soft
# targets such as 0.9).

# %%
is_zero = (y_train[:4] == 0).long()
torch.manual_seed(0)
zero_logit = nn.Linear(64, 1)(x_train[:4]).squeeze(1)

# %%
with expect_error(RuntimeError):
    F.binary_cross_entropy_with_logits(zero_logit, is_zero)

# %%
fixed_loss = F.binary_cross_entropy_with_logits(zero_logit, is_zero.float())
print(f"fixed: loss {fixed_loss.item():.3f}")

# %% [markdown]
# ## Fix a shape mismatch, and find the layer that raised it
#
# A small CNN for the 8×8 digits, with the size of the flattened features guessed wrong:

# %%
images = x_train[:32].view(32, 1, 8, 8)
cnn = nn.Sequential(nn.Conv2d(1, 8, 3), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(), nn.Linear(64, 10))

# %% [markdown]
# ### Pitfall: `addmm: mat1 and mat2 shapes cannot be multiplied (32x72 and 64x10)`

# %%
with expect_error(RuntimeError):
    cnn(images)


# %% [markdown]
# Read the numbers: `mat1` is the input, 32 samples of **72** features; `mat2` is the weight
# (transposed), so the layer expects **64** inputs and has 10 outputs. The message names shapes,
# not layers; in a big model, a forward pre-hook on every leaf module says which layer was
# running when the error came:

# %%
def failing_layer(model: nn.Module, *inputs) -> str | None:
    """Run ``model``; return the name of the leaf module running when it raised, else None."""
    entered: list[str] = []
    handles = [
        module.register_forward_pre_hook(lambda mod, args, name=name: entered.append(name))
        for name, module in model.named_modules()
        if not list(module.children())
    ]
    try:
        model(*inputs)
        return None
    except RuntimeError:
        return entered[-1] if entered else None
    finally:
        for handle in handles:
            handle.remove()


name = failing_layer(cnn, images)
print(f"layer {name!r}: {cnn.get_submodule(name)}")
print("what reaches it:", tuple(cnn[:4](images).shape))

# %% [markdown]
# The convolution (no padding) makes 8×8 into 6×6, pooling into 3×3: 8 channels × 3 × 3 = 72.
# Fix the number, or let `nn.LazyLinear(10)` infer it at the first call:

# %%
cnn[4] = nn.Linear(72, 10)
print("fixed:", tuple(cnn(images).shape))
check(failing_layer(cnn, images) is None, "the fixed CNN runs")

# %% [markdown]
# ### Pitfall: `shape '[32, 64]' is invalid for input of size 2304`
#
# The same mistake with `view` and hard-coded sizes: 32 × 8 × 3 × 3 = 2,304 numbers do not fill
# a 32 × 64 shape.

# %%
feature_maps = cnn[:3](images)
print("feature maps:", tuple(feature_maps.shape))

# %%
with expect_error(RuntimeError):
    feature_maps.view(32, 64)

# %% [markdown]
# Keep the batch and let PyTorch compute the rest: `feature_maps.flatten(1)` or
# `feature_maps.view(len(feature_maps), -1)` (`reshape` when the tensor may not be contiguous,
# see [02](02_contiguity_strides_recipes.ipynb)).

# %%
print("flattened:", tuple(feature_maps.flatten(1).shape))

# %% [markdown]
# ## Turn a DataLoader that hangs into an error with `timeout`
#
# The symptom: training stops, no error, no CPU use. A worker is blocked forever: on a lock a
# forked process inherited in the locked state, on a network file system, on a full
# shared-memory segment. By default the main process waits forever too. `timeout=` (seconds)
# makes it raise instead. `helpers.debug.Stalls` blocks on item 5 until it is released.
#
# The timeout counts from each request for a batch, the first one included, which also waits
# for the workers to start: milliseconds with `fork` (Linux up to Python 3.13), seconds with
# `spawn` (macOS, Windows) or `forkserver` (Linux from Python 3.14), which import torch again.
# Choose it well above the slowest normal batch **plus** that start. The demo uses 1 s where
# workers fork and 20 s elsewhere:

# %%
start_method = multiprocessing.get_context().get_start_method()
wait = 1 if start_method == "fork" else 20
print(f"workers start with {start_method!r}; timeout={wait}")

# %% [markdown]
# ### Pitfall: `DataLoader timed out after 1 seconds`

# %%
stalled = debug.Stalls(8, stall_at=5)
batches = iter(DataLoader(stalled, batch_size=2, num_workers=1, timeout=wait))
received = []
try:
    with expect_error(RuntimeError, match="timed out"):
        for batch in batches:
            received.append(batch.tolist())
finally:
    stalled.release()  # only a demo can free its stuck worker
    rest = [batch.tolist() for batch in batches]  # finishing the epoch shuts the worker down

# %% [markdown]
# Two batches arrived, the third (items 4 and 5) did not, and after `timeout` seconds the loop
# raised instead of hanging. Here the demo then released the worker and let it finish the epoch; a
# worker that is really stuck is terminated when its iterator is shut down or garbage-collected
# (after a 5-second grace). Nothing is left running:

# %%
print("received before the timeout:", received, "| after the release:", rest)
check(multiprocessing.active_children() == [], "no worker process is left behind")


# %% [markdown]
# The usual causes of "stuck in data loading", and their fixes:
#
# - **Thread oversubscription.** Each worker is a process; DataLoader sets torch to one thread
#   in it, but NumPy's BLAS and OpenCV start their own thread pools, one thread per core, **per
#   worker**: 8 workers × 16 cores = 128 threads fighting for 16 cores, slowing to a crawl (and
#   OpenCV's thread pool can deadlock in forked workers). Fix: one thread per library per worker
#   (`helpers.debug.one_thread_per_worker` as `worker_init_fn`, or `OMP_NUM_THREADS=1`), and
#   `cv2.setNumThreads(0)` where OpenCV is used.
# - **`num_workers` too high.** More workers than cores only adds processes and memory;
#   DataLoader warns (below). Measure instead ([05](05_datasets_dataloaders_recipes.ipynb)).
# - **Shared memory in containers.** Workers hand batches to the main process through `/dev/shm`;
#   Docker gives it 64 MB by default, and a worker dies with `DataLoader worker (pid N) is killed
#   by signal: Bus error. It is possible that dataloader's workers are out of shared memory`.
#   Fix: `docker run --shm-size=8g` (or `--ipc=host`; Kubernetes: an in-memory `emptyDir` at
#   `/dev/shm`), or smaller batches and fewer workers. Both sharing strategies of
#   `torch.multiprocessing` keep tensors in `/dev/shm`, so `set_sharing_strategy("file_system")`
#   does not help here; it is the fix for another worker error, `Too many open files` (one open
#   file descriptor per shared tensor with the default `file_descriptor`).
#
# What this machine's workers run with, before and after the fix:

# %%
def loaded_in_worker(**loader_args) -> tuple[int, int]:
    loader = DataLoader(debug.ThreadCounts(1), batch_size=None, num_workers=1, **loader_args)
    return next(iter(loader))


default_worker = loaded_in_worker()
limited_worker = loaded_in_worker(worker_init_fn=debug.one_thread_per_worker)

# %% tags=["nbval-ignore-output"]
print(f"main process:   torch {torch.get_num_threads()} thread(s), BLAS {debug.blas_threads()}")
print(f"worker:         torch {default_worker[0]}, BLAS {default_worker[1]}")
print(f"limited worker: torch {limited_worker[0]}, BLAS {limited_worker[1]}")
shm = shutil.disk_usage("/dev/shm").total / 2**20 if Path("/dev/shm").exists() else None
print(
    f"/dev/shm: {shm and f'{shm:.0f} MiB'}; sharing strategy:",
    torch.multiprocessing.get_sharing_strategy(),
)

# %%
check(default_worker[0] == 1, "DataLoader runs torch with one thread in each worker")
check(limited_worker[1] == 1, "one_thread_per_worker limits NumPy's BLAS to one thread")

# %% [markdown]
# ### Pitfall: `This DataLoader will create 256 worker processes in total`
#
# DataLoader warns when `num_workers` is above the number of CPUs this process may use (on Linux
# the ones it is allowed to run on, `os.sched_getaffinity`, which a container's CPU set limits),
# and suggests that number: this machine's is in the message.

# %%
with expect_warning(UserWarning, match="worker processes in total"):  # fails if it does not
    DataLoader(range(8), num_workers=256)  # warns when built (and again at iter())


# %% [markdown]
# ### Pitfall: `Too many open files. Communication with the workers is no longer possible`
#
# On Linux, a worker hands each batch to the main process as shared memory, and with the default
# sharing strategy, `file_descriptor`, the main process holds one open file for each tensor it
# received **for as long as the tensor lives**. A loop that keeps what the loader gave it (the
# labels or ids of every batch, a cache of samples, a metric that stores its inputs) reaches the
# limit on open files per process (`ulimit -n`, often 1024); the same exhaustion can also read
# `RuntimeError: received 0 items of ancdata`. The demo lowers this kernel's limit for a moment
# to 100 more than it has open, so it fails within a second:

# %%
def batches_from_workers():
    return DataLoader(range(1000), batch_size=2, num_workers=2)  # 500 batches, made by workers


if sys.platform == "linux" and torch.multiprocessing.get_sharing_strategy() == "file_descriptor":
    import resource

    limits = resource.getrlimit(resource.RLIMIT_NOFILE)
    open_now = len(os.listdir("/proc/self/fd"))
    kept, received = [], iter(batches_from_workers())
    resource.setrlimit(resource.RLIMIT_NOFILE, (open_now + 100, limits[1]))
    try:
        with expect_error(RuntimeError, match="Too many open files"):
            for batch in received:
                kept.append(batch)  # the batch, and the open file behind it, stay alive
        kept_before_error = len(kept)
        kept.clear()
        del received, batch  # the error's traceback still holds the loader: collect it, so its
        gc.collect()  # workers stop now, not during some later cell
        copies = [batch.clone() for batch in batches_from_workers()]  # each shared one freed
    finally:
        resource.setrlimit(resource.RLIMIT_NOFILE, limits)
    check(
        kept_before_error < 100 and len(copies) == 500,
        "kept as received, fewer than 100 batches exhaust 100 open files; cloned, all 500 fit",
        measured=f"{kept_before_error} batches kept before the error",
    )
else:
    print("not shown: this system's DataLoader does not share tensors by file descriptors")

# %% [markdown]
# The fixes, in the order to try them: keep what you need as a copy (`.clone()`, or `.item()` /
# `.tolist()` for numbers, or `.numpy().copy()`), so the shared tensor and its file are freed;
# raise the limit (`ulimit -n 65536` in the shell that starts Python, up to the hard limit
# `ulimit -Hn`; from Python, `resource.setrlimit` as above), which PyTorch's documentation
# prefers; or switch to `torch.multiprocessing.set_sharing_strategy("file_system")`, which names
# the shared memory by file name instead of holding a descriptor open. The strategy belongs to
# the process that sends the tensor, the worker: call it at the start, where forked workers
# inherit it, and also in the loader's `worker_init_fn` where workers start from a fresh Python
# (`spawn` on macOS and Windows, `forkserver`, Linux's default from Python 3.14 on), which
# imports torch afresh.
# Its cost: shared memory that outlives a crashed program, which torch's `torch_shm_manager`
# process removes once every process that used it has ended, unless it is killed itself.

# %% [markdown]
# ## Find where a run hangs, and survive running out of memory
#
# A run that stops making progress without an error: which line is it on? Two tools answer
# without a debugger. `py-spy dump --pid PID` (a separate program, `pip install py-spy`) prints
# the Python stack of every thread of a running process. From inside, the standard library's
# `faulthandler.dump_traceback_later(seconds)` prints every thread's stack if the program is
# still running after that many seconds: arm it before a step that should take a second, cancel
# it after. A script that waits for a lock nobody releases, as a deadlocked data pipeline does:

# %%
# %%writefile runs/13_reproducibility_debugging/hang.py
"""Wait forever for a lock, with faulthandler armed to show where."""

import faulthandler
import sys
import threading


def wait_for_data(lock: threading.Lock) -> None:
    lock.acquire()  # nobody will release it


faulthandler.dump_traceback_later(1, exit=True, file=sys.stderr)  # 1 s, then dump and exit
held = threading.Lock()
held.acquire()
wait_for_data(held)

# %%
hung = subprocess.run(
    [sys.executable, str(RUN / "hang.py")],
    capture_output=True,
    text=True,
    timeout=30,
)
frames = re.findall(r'File "(.+)", line (\d+) in (\S+)', hung.stderr)  # innermost first
stack = [f"{Path(file).name}, line {line} in {function}" for file, line, function in frames]
print(*stack, sep="\n")

# %%
source = (RUN / "hang.py").read_text().splitlines()
stuck_at = next(n for n, line in enumerate(source, 1) if "nobody will release" in line)
check(
    f"line {stuck_at} in wait_for_data" in stack[0],
    "faulthandler named the function and the line the program was stuck on",
)


# %% [markdown]
# On a GPU machine, a run that crashed can leave processes behind (DataLoader workers, a rank of
# a DDP job) that still hold GPU memory: `nvidia-smi --query-compute-apps=pid,used_memory
# --format=csv` lists them, and the next run fails with out-of-memory until they are stopped.
# On a GPU the error reads (sizes vary):
#
# - GPU only: ⛔ `torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB.`
#
# Its next lines give the device's free memory, what PyTorch has allocated and what it holds
# "reserved but unallocated"; when that last number is large, the cause is fragmentation, and
# [11](11_memory_recipes.ipynb#Read-the-CUDA-caching-allocator) explains `expandable_segments`.
#
# Out of memory is an error you can catch: `torch.OutOfMemoryError` (CUDA's, also
# `torch.cuda.OutOfMemoryError`). A common recovery is to retry with a smaller batch. The catch:
# the exception's traceback keeps every frame of the failed step alive, with its activations, so
# retry **after** the `except` block, once the exception is gone, and call
# `torch.cuda.empty_cache()` before trying again. A CPU does not run out here, so a stand-in step
# raises the error above 64 samples:

# %%
def step_on(batch_size: int) -> str:
    """A stand-in training step that runs out of memory above 64 samples."""
    if batch_size > 64:
        raise torch.OutOfMemoryError(f"CUDA out of memory (stand-in): batch of {batch_size}")
    return f"trained on batches of {batch_size}"


def train_with_retry(batch_size: int, smallest: int = 8) -> str:
    """Halve the batch until the step fits; give up below ``smallest``."""
    while batch_size >= smallest:
        try:
            return step_on(batch_size)
        except torch.OutOfMemoryError as error:
            print(f"{type(error).__name__}: {error}")
        # Out of the except block: the exception and the frames it held are released.
        if torch.cuda.is_available():
            torch.cuda.empty_cache()
        batch_size //= 2
    raise RuntimeError(f"does not fit even with batches of {smallest}")


outcome = train_with_retry(256)
print(outcome)

# %%
check(outcome == "trained on batches of 64", "the retry halved the batch until it fitted")
check(
    issubclass(torch.OutOfMemoryError, RuntimeError)
    and torch.cuda.OutOfMemoryError is torch.OutOfMemoryError,
    "torch.OutOfMemoryError is a RuntimeError, and the same class as torch.cuda.OutOfMemoryError",
)

# %% [markdown]
# ## Hunt NaN and Inf: a learning rate too high, anomaly detection, finite checks
#
# A loss that turns into `nan` was usually `inf` a step earlier, and a huge number before that.
# Log the gradient norm every step (`nn.utils.get_total_norm`, or the value `clip_grad_norm_`
# returns) and the blow-up is visible long before the NaN. Reproduced: a linear regression of
# the digit's value on its raw pixels (0-16, not normalised) with SGD at `lr=0.01`:

# %%
raw_pixels = torch.tensor(digits.data, dtype=torch.float32)
value = torch.tensor(digits.target, dtype=torch.float32).unsqueeze(1)


def regression_log(x: torch.Tensor, lr: float = 0.01, steps: int = 30) -> pd.DataFrame:
    """Train a linear regression with SGD; return each step's loss and gradient norm."""
    torch.manual_seed(0)
    model = nn.Linear(64, 1)
    optimizer = torch.optim.SGD(model.parameters(), lr=lr)
    log = []
    for step in range(steps):
        i = step * 64 % (len(x) - 64)
        loss = F.mse_loss(model(x[i : i + 64]), value[i : i + 64])
        optimizer.zero_grad()
        loss.backward()
        grad_norm = nn.utils.get_total_norm([p.grad for p in model.parameters()])
        log.append({"loss": loss.item(), "grad norm": grad_norm.item()})
        optimizer.step()
    return pd.DataFrame(log).rename_axis("step")


diverged = regression_log(raw_pixels)
first_bad = int(diverged.index[~np.isfinite(diverged).all(axis=1)][0])

# %% tags=["nbval-ignore-output"]
print(diverged.head(first_bad + 2).map(lambda v: f"{v:.3g}"))

# %%
growth = diverged["grad norm"][first_bad - 1] / diverged["grad norm"][0]
check(first_bad < 20, "with raw pixels the run turns non-finite within 20 steps")
check(growth > 1e6, "the gradient norm grows a million-fold before it", measured=f"{growth:.2g}×")

# %% [markdown]
# The gradient norm multiplies at every step: the learning rate is too high **for these
# inputs**. Normalising the pixels to [0, 1] divides the curvature by 16² and the same learning
# rate trains:

# %%
healthy = regression_log(raw_pixels / 16)
check(np.isfinite(healthy).all().all(), "with normalised pixels every step stays finite")
check(
    healthy["loss"].iloc[-5:].mean() < healthy["loss"].iloc[0] / 2,
    "and the loss falls by more than half",
    measured=f"{healthy['loss'].iloc[0]:.3g} → {healthy['loss'].iloc[-5:].mean():.3g}",
)

# %% [markdown]
# In a training loop, stop at the first non-finite value instead of training on garbage:
# `torch.isfinite(loss)` before `backward`, and `clip_grad_norm_(..., error_if_nonfinite=True)`,
# which raises when the gradient norm is Inf or NaN (exercise 2 skips such a step instead):

# %%
torch.manual_seed(0)
model = nn.Linear(64, 1)
optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
stopped = None
try:
    for step in range(30):
        loss = F.mse_loss(model(raw_pixels[:64]), value[:64])
        if not torch.isfinite(loss):
            raise FloatingPointError(f"step {step}: loss is {loss.item()}")
        optimizer.zero_grad()
        loss.backward()
        # max_norm=inf: no clipping, only the check
        nn.utils.clip_grad_norm_(model.parameters(), max_norm=math.inf, error_if_nonfinite=True)
        optimizer.step()
except (RuntimeError, FloatingPointError) as err:
    stopped = f"{type(err).__name__}: {str(err).split(', so')[0]}"
weights_finite = all(torch.isfinite(p).all() for p in model.parameters())

# %% tags=["nbval-ignore-output"]
print(f"stopped at step {step}:", stopped)

# %%
check(stopped is not None, "a finite check stopped the run")
check(weights_finite, "before any optimizer step on Inf or NaN: the weights are finite")

# %% [markdown]
# NaN can also come from a finite loss. The Euclidean distance written by hand,
# `((a - b) ** 2).sum().sqrt()`, has an infinite slope at distance 0; the chain rule then
# multiplies `inf` by 0 and gradients become NaN while the loss looks fine.
# `torch.autograd.detect_anomaly()` checks every backward function's output and names the first
# one that produced NaN ([03](03_autograd_recipes.ipynb) used it for in-place errors):

# %%
torch.manual_seed(0)
embeddings = torch.randn(4, 3, requires_grad=True)
anchors = torch.cat([embeddings[:1], torch.randn(3, 3)])  # row 0 is compared with itself
print(f"loss {((embeddings - anchors) ** 2).sum(dim=1).sqrt().mean().item():.4f} (finite)")

# %% [markdown]
# ### Pitfall: `Function 'PowBackward0' returned nan values in its 0th output.`

# %%
with (
    expect_error(RuntimeError, match="nan values"),
    warnings.catch_warnings(record=True) as anomaly,
    torch.autograd.detect_anomaly(),
):
    warnings.simplefilter("always")
    distance = ((embeddings - anchors) ** 2).sum(dim=1).sqrt()
    distance.mean().backward()

# %% [markdown]
# It names `PowBackward0`, one step after the culprit: the square root's backward returned
# `inf`, which anomaly mode lets through (it looks for NaN only), and `** 2`'s backward made NaN
# of `inf` × 0. Anomaly mode also records where each operation was created in the forward pass
# and reports it as a warning (caught above): the line to look at. It slows every step, so wrap
# only the steps under suspicion.

# %%
report = next(str(w.message) for w in anomaly if "Error detected" in str(w.message))
print(report.splitlines()[0])
print("forward line:", next(line.strip() for line in report.splitlines() if "sqrt()" in line))

# %% [markdown]
# The fix: `torch.linalg.vector_norm` (its gradient at 0 is 0) or a small epsilon under the
# root, `(d2 + 1e-12).sqrt()`.

# %%
embeddings.grad = None
torch.linalg.vector_norm(embeddings - anchors, dim=1).mean().backward()
check(torch.isfinite(embeddings.grad).all(), "vector_norm gives finite gradients at distance 0")

# %% [markdown]
# ## Debug a model that does not learn with an executable checklist
#
# No error, the loss just does not go down (or the validation accuracy stays at chance). The
# checklist commonly recommended, as code: each item is a function of the training step, run
# before any long training.
#
# First the one bug that does raise. Labels numbered 1-10, as in a CSV that counts classes from
# one:

# %% [markdown]
# ### Pitfall: `Target 10 is out of bounds.`

# %%
with expect_error(IndexError):
    F.cross_entropy(make_model()(x_train[:64]), y_train[:64] + 1)


# %% [markdown]
# For 10 classes the targets must be 0-9: subtract one (or map each label to an index).

# %% [markdown]
# ### On a GPU: `CUDA error: device-side assert triggered`, and `CUDA_LAUNCH_BLOCKING=1`
#
# GPU only. On a GPU the same mistake surfaces later and elsewhere: the kernel's bounds check
# fails inside the GPU, and because kernels run asynchronously the error is reported by some
# later call that synchronises (often `loss.item()`), with the text of the CUDA runtime
# (`cudaGetErrorString`) and a warning from torch:
#
# - GPU only: ⛔ `RuntimeError: CUDA error: device-side assert triggered`
#
# followed by `CUDA kernel errors might be asynchronously reported at some other API call, so
# the stacktrace below might be incorrect.` and `For debugging consider passing
# CUDA_LAUNCH_BLOCKING=1`.
# Rerun with `CUDA_LAUNCH_BLOCKING=1` in the environment (set before CUDA initialises; each
# kernel then finishes before the next call returns), so the error is raised by the operation
# that caused it, or run the step on the CPU, which gives the readable message above. After a
# device-side assert the CUDA context is unusable: restart the process. The kernel's own line,
# ``Assertion `t >= 0 && t < n_classes` failed``, goes to the process's standard error (the
# terminal that started Jupyter, not the notebook). Older messages also ask to "compile with
# `TORCH_USE_CUDA_DSA` to enable device-side assertions": that reporting exists only in a torch
# built from source with that flag. The pip and conda builds read `PYTORCH_USE_CUDA_DSA` but
# were built without it, so setting it changes nothing there. (Not run here: no GPU.)

# %% [markdown]
# The other bugs are silent. A training step written right, and five written wrong:

# %%
def step_ok(model, optimizer, x, y) -> float:
    model.train()
    loss = F.cross_entropy(model(x), y)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    return loss.item()


def step_softmax_first(model, optimizer, x, y) -> float:  # probabilities into cross_entropy
    model.train()
    loss = F.cross_entropy(model(x).softmax(dim=1), y)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    return loss.item()


def step_no_zero_grad(model, optimizer, x, y) -> float:  # gradients pile up
    model.train()
    loss = F.cross_entropy(model(x), y)
    loss.backward()
    optimizer.step()
    return loss.item()


def step_left_in_eval(model, optimizer, x, y) -> float:  # evaluate() left it in eval mode
    loss = F.cross_entropy(model(x), y)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    return loss.item()


def step_overconfident(model, optimizer, x, y) -> float:  # logits scaled up: a bad init or scale
    model.train()
    loss = F.cross_entropy(50 * model(x), y)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    return loss.item()


# %% [markdown]
# The checklist. `TorchFunctionMode` intercepts every PyTorch function call inside it, here to
# look at what reaches `cross_entropy`; a forward pre-hook records the mode the model runs in;
# two steps at learning rate 0 with the same dropout seed must leave the same gradients:

# %%
class LossInputs(TorchFunctionMode):
    """Record the first argument of every cross_entropy and nll_loss call."""

    def __init__(self) -> None:
        super().__init__()
        self.seen: list[torch.Tensor] = []

    def __torch_function__(self, func, types, args=(), kwargs=None):
        if func in (F.cross_entropy, F.nll_loss):
            self.seen.append(args[0].detach())
        return func(*args, **(kwargs or {}))


def checklist(step, x_train, y_train, x_val, y_val, lr=0.05, classes=10) -> dict:
    """Run the checklist on a training step; return each item's verdict and two measurements."""
    found = {}
    found["labels are class indices"] = bool(
        y_train.dtype == torch.long and y_train.min() >= 0 and y_train.max() < classes
    )
    x, y = x_train[:32], y_train[:32]
    torch.manual_seed(0)
    model = make_model().eval()  # as if an evaluation had just run
    optimizer = torch.optim.SGD(model.parameters(), lr=0.0)
    modes, grads = [], []
    hook = model.register_forward_pre_hook(lambda module, args: modes.append(module.training))
    with LossInputs() as loss_inputs:
        for _ in range(2):
            torch.manual_seed(1)  # the same dropout mask both times
            step(model, optimizer, x, y)
            grads.append(model[0].weight.grad.clone())
    hook.remove()
    scores = loss_inputs.seen[0]
    probabilities = bool(
        scores.min() >= 0 and scores.max() <= 1 and torch.allclose(scores.sum(1), torch.ones(1))
    )
    found["loss gets logits"] = not probabilities
    found["gradients reset each step"] = torch.equal(grads[0], grads[1])
    found["model in train mode"] = all(modes)
    torch.manual_seed(0)
    model = make_model().eval()
    optimizer = torch.optim.SGD(model.parameters(), lr=lr, momentum=0.9)
    losses = [step(model, optimizer, x, y) for _ in range(150)]
    # Untrained, a classifier should be unsure: loss ≈ ln(classes), the loss of uniform guesses.
    found["first loss ≈ ln(classes)"] = abs(losses[0] - math.log(classes)) < 0.5
    found["overfits one batch"] = losses[-1] < 0.05
    torch.manual_seed(0)
    model = make_model().eval()
    optimizer = torch.optim.SGD(model.parameters(), lr=lr, momentum=0.9)
    for _ in range(3):
        for i in range(0, len(y_train), 64):
            step(model, optimizer, x_train[i : i + 64], y_train[i : i + 64])
    model.eval()
    with torch.inference_mode():
        accuracy = (model(x_val).argmax(1) == y_val).float().mean().item()
    found["held-out accuracy > 2× chance"] = accuracy > 2 / classes
    found["first loss"] = round(losses[0], 3)
    found["one-batch loss"] = round(losses[-1], 4)
    found["held-out accuracy"] = round(accuracy, 3)
    return found


shuffled_labels = y_train[torch.randperm(len(y_train), generator=torch.Generator().manual_seed(1))]
verdicts = pd.DataFrame.from_dict(
    {
        "correct": checklist(step_ok, x_train, y_train, x_val, y_val),
        "softmax before the loss": checklist(step_softmax_first, x_train, y_train, x_val, y_val),
        "no zero_grad": checklist(step_no_zero_grad, x_train, y_train, x_val, y_val),
        "left in eval mode": checklist(step_left_in_eval, x_train, y_train, x_val, y_val),
        "logits ×50": checklist(step_overconfident, x_train, y_train, x_val, y_val),
        "lr 1e-4": checklist(step_ok, x_train, y_train, x_val, y_val, lr=1e-4),
        "labels shuffled apart": checklist(step_ok, x_train, shuffled_labels, x_val, y_val),
    },
    orient="index",
)

# %% tags=["nbval-ignore-output"]
print(verdicts.T.to_string())

# %%
expected_failures = {
    "correct": None,
    "softmax before the loss": "loss gets logits",
    "no zero_grad": "gradients reset each step",
    "left in eval mode": "model in train mode",
    "logits ×50": "first loss ≈ ln(classes)",
    "lr 1e-4": "overfits one batch",
    "labels shuffled apart": "held-out accuracy > 2× chance",
}
items = verdicts.select_dtypes(bool).columns
for loop, item in expected_failures.items():
    if item is None:
        check(verdicts.loc[loop, items].all(), "the correct loop passes every item")
    else:
        check(not verdicts.loc[loop, item], f"'{item}' catches: {loop}")


# %% [markdown]
# What to notice: overfitting one batch of 32 catches the wrong loss input and the too-small
# learning rate, but a model can memorise 32 samples whatever their labels, so labels that no
# longer match their images pass it and only a held-out check finds them. Softmax before
# `cross_entropy` (which applies log-softmax itself) squeezes the logits into [0, 1], so the loss
# cannot fall below log(1 + 9/e) ≈ 1.46. A step left in eval mode trains with dropout off and
# BatchNorm on running statistics: it learns, but not the model you meant. Logits scaled up
# (a last layer initialised too large, a missing normalisation) show in the very first loss,
# far above ln(10) ≈ 2.3, before any training.

# %% [markdown]
# ## Find graph breaks and recompilations in `torch.compile`
#
# `torch.compile` ([10](10_speedups_inference_recipes.ipynb#Compile-a-model,-and-time-the-compilation-separately) measured its speed) captures Python code into graphs
# with TorchDynamo. Code it cannot capture **breaks** the graph: that part runs in Python
# between compiled pieces. `torch._dynamo.explain` runs the capture only (nothing is compiled,
# so it is quick) and reports each break with its reason. Its log lines go to stderr and are
# kept out of the notebook here:

# %%
def noisy_step(x: torch.Tensor) -> torch.Tensor:
    y = x.sin()
    print("forward done")  # print() cannot be captured
    if y.sum().item() > 0:  # .item() and a Python branch on a tensor's value
        return y.cos()
    return y * 2


with contextlib.redirect_stderr(io.StringIO()):
    explained = torch._dynamo.explain(noisy_step)(torch.linspace(0, 3, 8))
print(f"graphs: {explained.graph_count}, graph breaks: {explained.graph_break_count}")
for reason in explained.break_reasons:
    print("  break:", reason.reason.splitlines()[0])


# %%
def quiet_step(x: torch.Tensor) -> torch.Tensor:
    y = x.sin()
    return torch.where(y.sum() > 0, y.cos(), y * 2)  # the branch stays in the graph


fixed = torch._dynamo.explain(quiet_step)(torch.linspace(0, 3, 8))
print(f"graphs: {fixed.graph_count}, graph breaks: {fixed.graph_break_count}")
check(fixed.graph_break_count == 0, "without print and .item() the step is one graph")

# %% [markdown]
# A compiled function also keeps **guards**: the facts its graph assumed (shapes, dtypes,
# Python constants). When one fails, it recompiles; after `torch._dynamo.config.recompile_limit`
# (8) recompilations of one function it falls back to running uncompiled. `TORCH_LOGS=recompiles`
# in the environment of a script prints every recompilation and the guard that failed;
# `torch._logging.set_logs(recompiles=True)` does the same from Python. With `backend="eager"`
# Dynamo captures and guards but does not compile, which keeps the demonstration fast:

# %%
torch._dynamo.reset()
torch._dynamo.utils.counters.clear()
with contextlib.redirect_stderr(io.StringIO()) as dynamo_log:
    torch._logging.set_logs(recompiles=True)
    compiled = torch.compile(lambda x: (x * 2).relu().sum(), backend="eager")
    for x in (torch.randn(8), torch.randn(16), torch.randn(32), torch.randn(32).double()):
        compiled(x)
    torch._logging.set_logs()
guard_failures = list(dict.fromkeys(re.findall(r"- \d+/\d+: (.*)", dynamo_log.getvalue())))
graphs = torch._dynamo.utils.counters["stats"]["unique_graphs"]
print(f"4 calls, {graphs} graphs; recompiled because:")
for failure in guard_failures:
    print("  ", failure.split("  #")[0].strip())
check(graphs == 3, "a new size recompiles once (then it is dynamic), a new dtype recompiles")

# %% [markdown]
# What to notice: the second size made Dynamo mark the dimension dynamic, so size 32 reused that
# graph (`torch._dynamo.mark_dynamic(x, 0)` or `torch.compile(dynamic=True)` says so from the
# start); float64 needs its own graph. Recompiles in a training loop usually come from a Python
# number that changes every step (pass it as a tensor), from switching `train()`/`eval()`, or
# from batch sizes that vary (`drop_last=True` or pad to a fixed size).

# %% [markdown]
# ### Pitfall: `InvalidCxxCompiler: No working C++ compiler found`
#
# On a CPU, `torch.compile`'s default backend, Inductor, writes C++ and builds it with the
# machine's C++ compiler (`g++` or `clang++`; on Windows, MSVC's `cl` from Visual Studio's build
# tools). A slim Docker image or a Windows machine without one fails at the **first call** of
# the compiled function, not at `torch.compile(...)`, which only wraps it. Older versions
# reported it as `BackendCompilerFailed: backend='inductor' raised: InvalidCxxCompiler`
# (`InductorError` is a kind of `BackendCompilerFailed`: code that catches the old name still
# catches it). Here the
# compiler Inductor looks for is set to a name that does not exist, a stand-in for a machine
# without one:

# %%
torch._dynamo.reset()
wrapped = torch.compile(lambda x: x.cos() * 3 + 1)  # returns at once: nothing compiled yet
with (
    inductor_config.patch({"cpp.cxx": ("no-such-c++-compiler",)}),
    expect_error(InductorError, match=r"No working C\+\+ compiler", lines=1),
):
    wrapped(torch.linspace(0, 1, 5))

# %% [markdown]
# The message names what Inductor tried: `(None, 'g++')` on Linux means the `CXX` environment
# variable was not set and `g++` was not found. The fix is a compiler: `apt-get install g++`
# (Debian, Ubuntu; `build-essential` in a Docker image), Xcode's command-line tools on a Mac,
# the "Desktop development with C++" workload of Visual Studio's build tools on Windows (run
# Python from its developer prompt); `CXX=/path/to/g++`, set before torch is imported, names
# one that is not on the `PATH`.
# On a GPU, Triton needs a C compiler as well, and says `Failed to find C compiler. Please
# specify via CC environment variable`. Until then, `torch.compile(model, backend="aot_eager")`
# checks that the capture works without compiling anything, and the model runs uncompiled as
# it always did.

# %% [markdown]
# ### Pitfall: `CppCompileError: C++ compile error`
#
# Here a compiler is found and starts, but cannot build Inductor's code. The message holds the
# command Inductor ran and the compiler's own output: the line to read is its first `error:`.
# The causes reported on PyTorch's tracker, by that line:
#
# - `fatal error: algorithm: No such file or directory` (clang: `'algorithm' file not found`), or
#   another standard header: the compiler is there without its C++ standard library headers, as
#   when `clang++` picks a GCC version whose `libstdc++` development package is not installed.
#   Install `g++` (which brings them), or the `libstdc++-NN-dev` of the version clang names.
# - `fatal error: Python.h: No such file or directory`: Python's development headers are missing
#   (`python3-dev`, or `python3.11-dev` for that Python, on Debian and Ubuntu). Inductor warns
#   `Can't find Python.h in ...` before it tries.
# - `OpenMP support not found` (on a Mac, appended to the message, with its fixes): Apple's clang
#   has no OpenMP; `brew install libomp`, a `CXX` that has it, or another fix the message lists
#   (pytorch/pytorch#179135).
# - A compiler too old for the code Inductor writes (an old GCC in pytorch/pytorch#130815): a newer
#   one, from the system or conda's `gxx`.
# - None of these, after a torch upgrade: an Inductor bug (pytorch/pytorch#152172, 2.7's
#   regression on some CPUs). Run with `backend="aot_eager"` meanwhile and report the smallest
#   function that fails.
#
# The stand-in below is the first cause: a `g++` told not to look for its C++ headers
# (`-nostdinc++`), written as a two-line script and named as Inductor's compiler.

# %% tags=["nbval-ignore-output"]
missing = None  # the standard header the compiler could not find
if os.name == "posix" and shutil.which("g++"):
    compiler = (RUN / "g++-without-its-headers").resolve()  # Inductor runs it from elsewhere
    compiler.write_text('#!/bin/sh\nexec g++ -nostdinc++ "$@"\n')
    compiler.chmod(0o755)
    torch._dynamo.reset()
    wrapped = torch.compile(lambda x: x.sin() * 2 - 1)
    with (
        inductor_config.patch({"cpp.cxx": (str(compiler),), "fx_graph_cache": False}),
        quiet_logger("torch.utils.cpp_extension"),  # "No CUDA runtime is found": not the point
        expect_error(InductorError, match=r"C\+\+ compile error", lines=1) as caught,
    ):
        wrapped(torch.linspace(0, 1, 5))
    first = re.search(r"(?:fatal )?error: .*", str(caught.error))  # after the file and line
    print("the compiler's first error:", first and first.group())  # GCC's or Apple clang's words
    header = r"'?([\w.]+)'?(?:: No such file or directory| file not found)"
    missing = first and re.search(header, first.group())
else:
    print("the stand-in needs g++ and a POSIX shell: the stored output shows what it prints")

# %%
check(
    missing is not None,
    "the compiler's first error names a C++ standard header it could not find",
)

# %% [markdown]
# ## Follow the best practices, checked
#
# The usual "to do or not to do" advice, short and each with its reason; the checkable ones are
# checked below.
#
# | do | do not | why |
# |---|---|---|
# | log `loss.item()` | sum `loss` tensors for logging | the sum keeps every step's graph alive: memory grows |
# | evaluate under `model.eval()` and `torch.inference_mode()` | evaluate in train mode | dropout and BatchNorm change the predictions |
# | call `optimizer.zero_grad()` every step | rely on fresh gradients | they accumulate (checklist above) |
# | seed once, pass `generator=` | reseed at every epoch | every epoch repeats the same "random" order and augmentation |
# | save `state_dict()` and the versions | `torch.save(model)` | a pickled model needs its class at the same import path; `weights_only=True` refuses it |
# | `cudnn.benchmark = True` for fixed shapes and speed | use it when runs must repeat | the timed choice of algorithm can change between runs |
# | `x.detach()` | `x.data` | changes through `.data` escape autograd's checks ([03](03_autograd_recipes.ipynb)) |
# | compute with torch operations inside `forward` | NumPy inside `forward` | NumPy cuts the graph: the layers before it never learn; on a GPU it also copies to the host and waits ([10](10_speedups_recipes.ipynb#Know-which-calls-make-the-CPU-wait-for-the-GPU)) |

# %%
model = make_model()
total = 0.0
for x, y in [(x_train[:32], y_train[:32])] * 3:
    total += F.cross_entropy(model(x), y)  # do not: a tensor with a graph
check(total.grad_fn is not None, "summing loss tensors keeps their graph")

model.eval()
with torch.inference_mode():
    twice = model(x_val), model(x_val)
check(torch.equal(*twice) and not twice[0].requires_grad, "eval + inference_mode: same, no graph")


def epoch_orders(reseed_each_epoch: bool) -> list[list[int]]:
    seed_everything(0)
    orders = []
    for _ in range(2):
        if reseed_each_epoch:
            seed_everything(0)
        orders.append(torch.randperm(8).tolist())
    return orders


check(epoch_orders(True)[0] == epoch_orders(True)[1], "reseeding every epoch repeats the order")
check(epoch_orders(False)[0] != epoch_orders(False)[1], "seeding once gives a new order per epoch")

torch.save(model, RUN / "whole_model.pt")
try:
    torch.load(RUN / "whole_model.pt", weights_only=True)
    refused = False
except pickle.UnpicklingError:  # Weights only load failed ... Unsupported global
    refused = True
torch.save(model.state_dict(), RUN / "weights.pt")
reloaded = make_model()
reloaded.load_state_dict(torch.load(RUN / "weights.pt", weights_only=True))
check(refused, "weights_only=True refuses a pickled model")
check(same_weights(reloaded, model), "a state_dict loads with weights_only=True, every bit")


# %% [markdown]
# ### Pitfall: `element 0 of tensors does not require grad and does not have a grad_fn`
#
# NumPy inside `forward`: `.numpy()` needs a detached tensor, and `torch.from_numpy` makes a new
# one with no history, so the loss has no path back to the layers.

# %%
class NumpyInside(nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(3, 3)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.lin(x).detach().numpy()  # do not: the graph ends here
        return torch.from_numpy(np.tanh(h))


numpy_out = NumpyInside()(torch.randn(4, 3))
with expect_error(RuntimeError):
    numpy_out.sum().backward()
torch_out = torch.tanh(nn.Linear(3, 3)(torch.randn(4, 3)))  # the same in torch operations
check(
    not numpy_out.requires_grad and torch_out.requires_grad,
    "the NumPy forward returns a tensor without a graph; the torch one keeps it",
)

# %% [markdown]
# Three other ways to lose the graph raise the same error: the forward run under
# `torch.no_grad()` (an evaluation helper reused for training), every parameter frozen with
# `requires_grad_(False)`, and a loss rebuilt from numbers (`torch.tensor(loss.item())`). Ask the
# loss before calling `backward()`: `loss.requires_grad` is `False`, and `loss.grad_fn` `None`,
# when nothing that needs a gradient led to it.

# %%
net, x = nn.Linear(3, 1), torch.randn(4, 3)
with torch.no_grad():
    under_no_grad = net(x).pow(2).mean()
frozen = nn.Linear(3, 1).requires_grad_(False)
all_frozen = frozen(x).pow(2).mean()
rebuilt = torch.tensor(net(x).pow(2).mean().item())  # a number again: no history
kept = net(x).pow(2).mean()
for name, loss in [("no_grad", under_no_grad), ("frozen", all_frozen), ("from .item()", rebuilt)]:
    with expect_error(RuntimeError, match="does not require grad"):
        loss.backward()
    print(f"{name:>12}: grad_fn {loss.grad_fn}")
print(f"{'kept':>12}: grad_fn {type(kept.grad_fn).__name__}")
check(
    all(loss.grad_fn is None for loss in (under_no_grad, all_frozen, rebuilt))
    and kept.grad_fn is not None,
    "each of the three losses has no grad_fn; the loss computed plainly has one",
)

# %% [markdown]
# ## On a GPU
#
# This recipe is an error that only a CUDA device raises. On a CPU it says so; open the notebook on
# a GPU (Colab: Runtime → Change runtime type) to see it raised and fixed. No GPU output is stored
# here.

# %% [markdown]
# ## Use CUDA with worker processes: `Cannot re-initialize CUDA in forked subprocess`
#
# On Linux, Python starts worker processes with `fork` (until Python 3.14, which defaults to
# `forkserver`): the child is a copy of the parent's memory, but a CUDA context cannot be
# copied. Once the main process has used CUDA, a forked child that touches CUDA fails with:
#
# - GPU only: ⛔ `RuntimeError: Cannot re-initialize CUDA in forked subprocess. To use CUDA with multiprocessing, you must use the 'spawn' start method`
#
# Old notes show it as `CUDA error: initialization error`, the wording of older releases. The
# usual culprit is a Dataset that calls `.to("cuda")` in `__getitem__`. The cell below
# reproduces it where CUDA exists, then runs the fix, workers started with `spawn`, on this
# machine's device:

# %%
rows = torch.arange(8.0).view(4, 2)
if torch.cuda.is_available():
    torch.zeros(1, device="cuda")  # the main process has now initialised CUDA
    forked = DataLoader(
        debug.OnDevice(rows, "cuda"), batch_size=2, num_workers=1, multiprocessing_context="fork"
    )
    try:
        next(iter(forked))
    except RuntimeError as err:
        print(next(line for line in str(err).splitlines() if "re-initialize" in line))
else:
    print("no CUDA device here: a forked worker has no CUDA context to miss")
worker_device = "cuda" if torch.cuda.is_available() else "cpu"
spawned = DataLoader(
    debug.OnDevice(rows, worker_device),
    batch_size=2,
    num_workers=1,
    multiprocessing_context="spawn",
)
from_spawn, devices = [], set()
batches = iter(spawned)
for _ in range(len(spawned)):  # not past the end: StopIteration would stop the workers first
    batch = next(batches)
    devices.add(batch.device.type)
    from_spawn.append(batch.cpu())  # a copy the main process owns
    del batch  # let go of the worker's CUDA tensor while that worker still runs
del batches  # now the workers stop, with no shared CUDA tensor left
print(f"spawn: {len(from_spawn)} batches on {devices}")
check(torch.equal(torch.cat(from_spawn), rows), "spawned workers load every row")


# %% [markdown]
# `spawn` (or `forkserver`) starts a fresh interpreter per worker: slower to start (seconds,
# torch is imported again), and the Dataset must be importable, which is why the course keeps
# worker Datasets in `helpers` modules. A CUDA tensor a worker returns is shared with the main
# process through CUDA IPC and must be released before the worker that made it exits (else:
# "Producer process has been terminated before all shared CUDA tensors released"): hence the
# copy, the `del batch`, and a loop that stops before the end, because the DataLoader shuts its
# workers down *before* it raises `StopIteration`, while the loop variable still holds the last
# batch. PyTorch's documentation advises against returning CUDA tensors from workers at all.
# For a whole script, `torch.multiprocessing.set_start_method("spawn")` under
# `if __name__ == "__main__":`. The better fix is usually not to touch CUDA in
# workers at all: load on the CPU, `pin_memory=True`, and move each batch in the training loop
# with `.to(device, non_blocking=True)` ([10](10_speedups_recipes.ipynb)).

# %% [markdown]
# ## Old code you will meet
#
# | old form | write today | why |
# |---|---|---|
# | `torch.set_deterministic(True)` | `torch.use_deterministic_algorithms(True)` | renamed in 1.8; the old name is gone |
# | `torch.backends.cudnn.deterministic = True` as the only switch | `torch.use_deterministic_algorithms(True)`, plus the cuDNN flags | covers every operation, and raises where no deterministic kernel exists |
# | `worker_init_fn=seed_worker` to seed NumPy in workers | `generator=` (and per-sample seeds for augmentation) | workers always seeded torch and `random`; since 1.9 they seed NumPy too |
# | `CUBLAS_WORKSPACE_CONFIG=:4096:8` as a requirement | optional | torch 2.15 has no check for it (on any device); older releases raised on CUDA matrix products without it |
# | `torch.autograd.set_detect_anomaly(True)` left on | `with torch.autograd.detect_anomaly():` around the suspect steps | anomaly mode slows every step |
# | `torch._dynamo.config.cache_size_limit` | `torch._dynamo.config.recompile_limit` | renamed; the old name is an alias |

# %% [markdown]
# ## Exercises

# %% [markdown]
# ### Exercise 1 · Name the layer that first outputs Inf or NaN
#
# Write `add_finite_checks(model)`: register a forward hook on every named submodule that raises
# an error naming the module (its name in `model.named_modules()`, e.g. `'body.0'`) when its
# output is not finite, and return the list of hook handles, so that `handle.remove()` turns the
# checks off. A module's forward hook runs when its forward ends, so inner layers are checked
# before the blocks that contain them, and the first error names the first broken layer.
#
# <details><summary>Hint 1</summary>
#
# A forward hook is called with the module, its inputs and its output, never with the module's
# name: each hook has to remember the name it was registered for.
# </details>
#
# <details><summary>Hint 2</summary>
#
# A function that takes a name and returns a hook (a closure) gives each module its own. The
# model itself comes first in `named_modules()`, with the empty name. The section "Fix a shape
# mismatch" registers a hook per named module; `torch.isfinite` tests an output.
# </details>

# %%
def add_finite_checks(model):
    """Register a checking forward hook on every named submodule; return the handles."""
    ...


# %%
ch13.exercise_1(add_finite_checks)


# %% [markdown]
# #### Solution

# %% tags=["solution"]
# Solution: open it once you have tried. It uses its own names, so your answer stays as it is.
def solution_add_finite_checks(model):
    """Register a checking forward hook on every named submodule; return the handles."""

    def hook_for(name):
        def check_output(module, args, output):
            if not torch.isfinite(output).all():
                raise FloatingPointError(f"non-finite output from layer {name!r}")

        return check_output

    return [m.register_forward_hook(hook_for(name)) for name, m in model.named_modules() if name]


ch13.exercise_1(solution_add_finite_checks)


# %% [markdown]
# ### Exercise 2 · Skip a step whose loss or gradients are not finite
#
# Write `safe_step(model, optimizer, loss)`: backpropagate `loss` and step the optimizer only
# when the loss **and** the total gradient norm are finite. Return `True` when it stepped;
# otherwise leave the weights unchanged, clear the gradients and return `False` (what
# `GradScaler` does for mixed precision, [07](07_training_loop_recipes.ipynb)).
#
# <details><summary>Hint 1</summary>
#
# There are two moments to look: the loss before `backward`, and the gradients after it, before
# `step`. A skipped step must leave no gradients behind for the next one.
# </details>
#
# <details><summary>Hint 2</summary>
#
# The section "Hunt NaN and Inf" computes a total gradient norm with `nn.utils` and tests values
# with `torch.isfinite`; the optimizer clears the gradients it holds.
# </details>

# %%
def safe_step(model, optimizer, loss):
    """Backpropagate and step only when everything is finite; return whether it stepped."""
    ...


# %%
ch13.exercise_2(safe_step)


# %% [markdown]
# #### Solution

# %% tags=["solution"]
# Solution: open it once you have tried. It uses its own names, so your answer stays as it is.
def solution_safe_step(model, optimizer, loss):
    """Backpropagate and step only when everything is finite; return whether it stepped."""
    optimizer.zero_grad()
    if not torch.isfinite(loss):
        return False
    loss.backward()
    grads = [p.grad for p in model.parameters() if p.grad is not None]
    if not torch.isfinite(nn.utils.get_total_norm(grads)):
        optimizer.zero_grad()
        return False
    optimizer.step()
    return True


ch13.exercise_2(solution_safe_step)


# %% [markdown]
# ### Exercise 3 · NumPy noise that no worker count changes
#
# An augmentation written with NumPy: write `noise(seed, epoch, index)` returning 4 random
# floats that depend only on its three arguments, whichever process calls it and whatever the
# global generators did before, and that change with each argument.
#
# <details><summary>Hint 1</summary>
#
# NumPy's global generator is shared by everything in the process, and reseeding it changes the
# randomness of the rest of the program: draw from a generator of your own. Its seed must tell
# every (seed, epoch, index) apart, which a sum, or any formula that folds the three into one
# number, cannot promise.
# </details>
#
# <details><summary>Hint 2</summary>
#
# The section "Reproduce shuffling and augmentation with any number of workers" shows how
# `SampleNoise` seeds each sample. NumPy's `default_rng` accepts a sequence of integers as its
# seed and mixes them itself.
# </details>

# %%
def noise(seed, epoch, index):
    """Return 4 floats that depend only on (seed, epoch, index)."""
    return None


# %%
ch13.exercise_3(noise)


# %% [markdown]
# #### Solution

# %% tags=["solution"]
# Solution: open it once you have tried. It uses its own names, so your answer stays as it is.
def solution_noise(seed, epoch, index):
    """Return 4 floats that depend only on (seed, epoch, index)."""
    return np.random.default_rng([seed, epoch, index]).random(4)


ch13.exercise_3(solution_noise)


# %% [markdown]
# ### Exercise 4 · Does a run repeat?
#
# Before you compare two settings, check that a run repeats. Write `repeats(run, seed)`: `run`
# is a function without arguments that returns a list of numbers. `repeats` runs it twice, each
# time after seeding every generator with `seed`, and returns `True` when the two results are
# equal bit for bit, else `False`. The check tries runs that draw from torch, NumPy or Python's
# `random`, from the operating system, and a run that differs only in its last digits.
#
# <details><summary>Hint 1</summary>
#
# The recipe "Seed everything, and check that two runs repeat bit for bit" does it by hand. What
# has to happen before *each* of the two runs?
# </details>
#
# <details><summary>Hint 2</summary>
#
# `seed_everything` seeds all three generators. Python's `==` on two lists compares their
# numbers exactly; a tolerance would call two different runs equal.
# </details>

# %%
def repeats(run, seed):
    """Whether run() gives the same numbers, bit for bit, twice from `seed`."""
    verdict = ...  # run twice, each time from the seed, and compare
    return verdict


# %%
ch13.exercise_4(repeats)


# %% [markdown]
# #### Solution

# %% tags=["solution"]
# Solution: open it once you have tried. It uses its own names, so your answer stays as it is.
def solution_repeats(run, seed):
    seed_everything(seed)
    first_run = run()
    seed_everything(seed)
    second_run = run()
    return first_run == second_run


ch13.exercise_4(solution_repeats)

# %% [markdown]
# ## Summary
#
# - `seed_everything` makes a run repeat bit for bit on one machine with one software stack;
#   thread counts, Python's hash seed, versions and GPU atomics still change the bits.
# - `torch.use_deterministic_algorithms(True)` (plus `cudnn.benchmark = False`) makes GPU runs
#   repeatable and raises on the few operations without a deterministic kernel; on the CPU
#   only `MaxUnpool` and `put_(accumulate=False)` of those tried raise. Torch 2.15 no longer
#   requires `CUBLAS_WORKSPACE_CONFIG`; older releases do.
# - Seed augmentation per sample (seed, epoch, index) to make it independent of `num_workers`;
#   record versions in checkpoints and pin them in a lock file.
# - Errors: read the shapes and dtypes in the message and find the layer with a pre-hook; give
#   DataLoaders a `timeout` above the workers' start-up; keep CUDA out of forked workers; log gradient norms and use
#   `detect_anomaly` for NaN; run the checklist before a long training; `explain` and
#   `TORCH_LOGS=recompiles` for `torch.compile`.
#
# It is the last chapter: every recipe of the course is in
# the [recipe index](../RECIPES.md), and every error message it shows in [ERRORS.md](../ERRORS.md).
