# %% [markdown]
# # 12 · Deployment routes compared: recipes
#
# [![Open In Colab](https://colab.research.google.com/assets/colab-badge.svg)](https://colab.research.google.com/github/pytorch-cookbook/pytorch-cookbook/blob/main/notebooks/cookbook/12_deployment_routes_recipes.ipynb)
#
# **The cookbook of chapter 12, continued.** New to the topic? [The lesson](../12_deployment.ipynb)
# teaches it step by step; the chapter's [first cookbook notebook](12_deployment_recipes.ipynb)
# exports the CIFAR2 CNN with `torch.export` and to ONNX, and serves it over HTTP. Here each
# recipe makes the model cheaper to run: compile it ahead of time with AOTInductor, shrink it to
# int8 or float16, and then **compare every route** on the machine that runs the notebook:
# latency for one image and for a batch, agreement with the eager model, and file size. The
# [recipe index](../RECIPES.md) and the [error index](../ERRORS.md) find the one you need.
#
# **Prerequisites:** [05](../05_datasets_dataloaders.ipynb) (the CIFAR2 model that takes `uint8`
# images), [10](../10_speedups.ipynb) (timing, int8), the first cookbook notebook's
# [`torch.export`](12_deployment_recipes.ipynb#Export-the-model-with-torch.export) and
# [ONNX](12_deployment_recipes.ipynb#Export-to-ONNX-and-run-it-with-ONNX-Runtime) recipes.
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

import copy
import json
import logging
import os
import platform
import shutil
import time
import zipfile
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pandas as pd
import torch
from onnxruntime.quantization import QuantType, quant_pre_process, quantize_dynamic
from torch.export import Dim
from torchvision.transforms import v2

from helpers.bench import convolution_kernel, time_in_turns
from helpers.check import check, expect_error
from helpers.env import VNNI_FLAGS, cpu_flags, setup
from helpers.exercises import ch12_routes
from helpers.images import channel_stats, load_cifar2
from helpers.models import small_cnn
from helpers.train import train_sliced

device = setup(seed=0)
RUN = Path("runs/12_deployment_routes")  # what this notebook writes: made anew on every run
shutil.rmtree(RUN, ignore_errors=True)
RUN.mkdir(parents=True)
train_images, train_labels, _ = load_cifar2("train")
test_images, test_labels, _ = load_cifar2("test")
mean, std = channel_stats(train_images)

# %% [markdown]
# ## The model and the files to compare
#
# Run this cell before any recipe below: it makes again, in one cell, what the
# [first notebook](12_deployment_recipes.ipynb) makes and explains step by step (without the class
# names it ships there). The CNN trained for one epoch (its first layers turn `uint8` images into
# normalised floats; `train_sliced` returns it on the CPU in evaluation mode, so everything below
# is CPU code even on a GPU machine); its `torch.export` program, for batches of 1 to 2048 images
# (the example batch has 8: a batch of 1 would fix the size), saved as a `.pt2` file and loaded
# back; its `state_dict`, saved only to compare file sizes; and its ONNX file, in an ONNX Runtime
# session with one thread.

# %%
torch.manual_seed(0)
model = train_sliced(small_cnn(mean, std).to(device), train_images, train_labels, device)
example = test_images[:8].clone()  # a copy: a saved view would take all 2000 images along
batch = Dim("batch", min=1, max=2048)
exported = torch.export.export(model, (example,), dynamic_shapes=({0: batch},))  # ExportedProgram
torch.export.save(exported, RUN / "cifar2.pt2")
program = torch.export.load(RUN / "cifar2.pt2").module()  # the loaded program, callable
torch.save(model.state_dict(), RUN / "cifar2_state_dict.pt")
onnx_program = torch.onnx.export(
    model,
    (example,),
    dynamo=True,
    dynamic_shapes=({0: batch},),
    input_names=["images"],
    output_names=["logits"],
    verbose=False,
)
onnx_program.save(RUN / "cifar2.onnx", external_data=False)
options = ort.SessionOptions()
options.intra_op_num_threads = 1
session = ort.InferenceSession(
    str(RUN / "cifar2.onnx"), options, providers=["CPUExecutionProvider"]
)
with torch.inference_mode():
    eager_logits = model(test_images)
    exported_logits = program(test_images)
(ort_logits,) = session.run(None, {"images": test_images.numpy()})
eager_accuracy = (eager_logits.argmax(1) == test_labels).float().mean().item()
check(eager_accuracy > 0.75, "one epoch trains a model worth deploying (test accuracy > 0.75)")
check(torch.equal(exported_logits, eager_logits), "the loaded program equals eager")

# %% [markdown]
# ## Quantize the ONNX file to int8
#
# `onnxruntime.quantization.quantize_dynamic` rewrites the file without any data: weights
# stored as int8, activations quantized on the fly at every call, no calibration data. Its
# documentation asks for a pre-processing pass first (`quant_pre_process`: shape inference and
# graph optimisation; its symbolic shape inference fails on this graph, so it is skipped). ONNX
# Runtime's documentation recommends it for transformers and recurrent networks, and static
# quantization (`quantize_static`, with calibration images) for CNNs: the comparison below
# shows why. As with oneDNN in [10](10_speedups_inference_recipes.ipynb#Which-x86-CPUs-need-7-bit-activations),
# ONNX Runtime's x86 int8 kernels multiply uint8 activations by int8 weights with
# `vpmaddubsw`, whose int16 pair sums can saturate on CPUs without VNNI; its documentation says
# `reduce_range=True` (7-bit weights) may improve accuracy there, so the cell passes it on x86
# CPUs whose flags show no VNNI. ONNX Runtime picks its kernels from the CPU itself, so only the
# flags count here.

# %%
quant_pre_process(RUN / "cifar2.onnx", RUN / "cifar2_pre.onnx", skip_symbolic_shape=True)
x86 = platform.machine().lower() in {"x86_64", "amd64"}
quantize_dynamic(
    RUN / "cifar2_pre.onnx",
    RUN / "cifar2_int8.onnx",
    weight_type=QuantType.QInt8,
    reduce_range=x86 and not cpu_flags() & VNNI_FLAGS,  # 7-bit where int16 pair sums saturate
)
int8_session = ort.InferenceSession(
    str(RUN / "cifar2_int8.onnx"), options, providers=["CPUExecutionProvider"]
)
(int8_logits,) = int8_session.run(None, {"images": test_images.numpy()})
int8_graph = onnx.load(RUN / "cifar2_int8.onnx").graph
print("operators:", sorted({node.op_type for node in int8_graph.node}))

# %% [markdown]
# ## Compile ahead of time with AOTInductor
#
# `torch.compile` compiles at the first call, in the serving process, every time it starts.
# AOTInductor does the same compilation once, ahead of time: `aoti_compile_and_package` turns an
# `ExportedProgram` into C++ and machine code, packaged as a `.pt2` file that Python loads with
# `torch._inductor.aoti_load_package` and C++ with `torch::inductor::AOTIModelPackageLoader`
# (no Python at all). It needs a C++ compiler on the build machine. The package runs on the
# device it was compiled for (export a model and example that live on the GPU and it is CUDA
# code) and only on CPUs with the instruction set (ISA) of the build machine: a package built
# with AVX-512 can crash with an illegal instruction on an AVX2-only server. It is also a second
# kind of `.pt2` file: the `torch.export` program above holds a graph for PyTorch to run, the
# package holds machine code. The compilation takes a while (printed below):

# %%
logging.getLogger("torch.utils.cpp_extension").setLevel(logging.ERROR)  # no CUDA_HOME line
began = time.perf_counter()
package = torch._inductor.aoti_compile_and_package(
    exported,
    package_path=str(RUN / "cifar2_aoti.pt2"),
    inductor_configs={"cpp.threads": 1},  # Inductor's own loops: one thread, whatever the builder
)
compile_seconds = time.perf_counter() - began
compiled = torch._inductor.aoti_load_package(package)
with torch.inference_mode():
    aoti_logits = compiled(test_images)
aoti_diff = (aoti_logits - eager_logits).abs().max().item()
with zipfile.ZipFile(package) as archive:  # what the package says it was built for
    built_for = [
        json.loads(archive.read(name)).get("AOTI_CPU_ISA")
        for name in archive.namelist()
        if name.endswith("kernel_metadata.json")
    ]

# %% tags=["nbval-ignore-output"]
print(f"compiled in {compile_seconds:.1f} s for ISA {built_for}")
print(f"max |diff| vs eager {aoti_diff:.1e}")

# %%
check(
    aoti_diff <= 1e-4, "the compiled package equals eager within 1e-4", measured=f"{aoti_diff:.1e}"
)

# %% [markdown]
# Two things the `.pt2` program did for you, the package does not:
#
# - **Threads.** `cpp.threads` fixes the threads of the loops Inductor generated (by default
#   `torch.get_num_threads()` of the *compiling* process: 64 on a 64-core build machine).
#   Convolutions and matrix products are not generated: the package calls ATen's, which run on
#   the serving process's thread pool. So the server still sets its own count
#   (`torch.set_num_threads`, `OMP_NUM_THREADS`); `cpp.dynamic_threads=True` makes the
#   generated loops follow that count too.
# - **Input checks.** The package does not guard its inputs. Three wrong inputs, each of which
#   the `.pt2` program refuses with a message
#   ([first notebook](12_deployment_recipes.ipynb#Export-the-model-with-torch.export)):

# %%
wrong_inputs = {
    "2049 images": torch.zeros(2049, 3, 32, 32, dtype=torch.uint8),
    "64×64 images": torch.zeros(2, 3, 64, 64, dtype=torch.uint8),
    "float images": torch.zeros(2, 3, 32, 32),
}
refused = []
with torch.inference_mode():
    for name, wrong in wrong_inputs.items():
        try:
            print(f"{name}: logits of shape {tuple(compiled(wrong).shape)}")
        except RuntimeError as error:
            refused.append(name)
            print(f"{name}: refused: {str(error).splitlines()[0]}")
check(refused == [], "the package computed on all three wrong inputs: it does not check them")

# %% [markdown]
# The 64×64 images were read as if they were 32×32, and the floats' bytes as `uint8` pixels:
# garbage, without an error. Check shape and dtype before calling the package, in Python or
# C++. (The environment variable `AOTI_RUNTIME_CHECK_INPUTS=1`, read when the package first
# runs, turns on checks compiled into it, but they test the bounds Inductor derived while
# compiling, which can be narrower than the exported ones: a development aid to try on your own
# batch sizes, not a guard to rely on.)
#
# Right images in another **memory layout** go wrong the same way. A tensor's strides say where
# each element lives in memory ([02](02_contiguity_strides_recipes.ipynb)); the package reads
# the input's memory as if it were laid out like the example's, contiguous, whatever its
# strides say. A channels-last batch (the layout [10](10_speedups_recipes.ipynb#Measure-each-trick-of-the-training-step)
# trains with) holds the same pixels in another order, and a view such as every second image
# skips memory that the package reads anyway:

# %%
layouts = {
    "channels-last batch": test_images[:64].contiguous(memory_format=torch.channels_last),
    "every second image (a view)": test_images[:128:2],
}
with torch.inference_mode():
    for name, x in layouts.items():
        as_stored = torch.as_strided(x, x.shape, x.contiguous().stride())  # memory, read in order
        wrong = (compiled(x) - model(x)).abs().max().item()
        same_as = (compiled(x) - model(as_stored)).abs().max().item()
        fixed = (compiled(x.contiguous()) - model(x)).abs().max().item()
        print(f"{name}: contiguous? {x.is_contiguous()}")
        check(
            wrong > 0.1,
            "the package's logits are far from eager's on the same images",
            measured=f"{wrong:.2f}",
        )
        check(
            same_as <= 1e-4,
            "they are eager's on the memory read in order, ignoring strides",
            measured=f"{same_as:.1e}",
        )
        check(
            fixed <= 1e-4,
            "with .contiguous() first, the package equals eager again",
            measured=f"{fixed:.1e}",
        )

# %% [markdown]
# Eager PyTorch and the `.pt2` program follow the strides; the package does not. So the code that
# calls a package also makes its input contiguous (`x.contiguous()` copies only when needed).

# %% [markdown]
# ## Compare the routes: latency, agreement and size
#
# One image (what an interactive request sends) and a batch of 256 (what a batch job or a
# batching server sends), timed with one thread after a warm-up: the five routes in turns, each
# keeping its fastest block of calls
# ([10](10_speedups_recipes.ipynb#Stack-the-tricks:-the-ladder)). The clock is this thread's CPU
# time (`cpu_time=True`): the time it waits while other programs have the cores is not counted
# (sharing caches and memory with them still is, hence the fastest block). By the wall clock, a
# call on a batch of 256 (tens of milliseconds) is cut into time slices whenever more programs
# than cores are busy. That clock is fair here because every route runs on the calling thread:
# the ONNX Runtime sessions were built with `intra_op_num_threads = 1`, the AOTInductor package
# with `cpp.threads: 1`, and eager PyTorch gets one thread (`helpers.bench` refuses work it
# finds on other threads). So the table gives each route's cost per call in CPU time; what a
# busy server's client waits also includes the time its request spends queued.
# Also which convolution kernel ATen runs for each, from a profile of one eager call
# (`helpers.bench.convolution_kernel`).

# %%
inputs = {1: test_images[:1], 256: test_images[:256]}
routes = {
    "eager": model,
    "torch.export": program,
    "ONNX Runtime": lambda x: session.run(None, {"images": x.numpy()}),
    "ONNX Runtime int8": lambda x: int8_session.run(None, {"images": x.numpy()}),
    "AOTInductor": compiled,
}
latency = {name: {} for name in routes}
with torch.inference_mode():
    for n, x in inputs.items():  # in turns: a busy moment on the machine slows every route
        timed = time_in_turns(  # each route's fastest block by this thread's CPU time
            {name: lambda r=run, x=x: r(x) for name, run in routes.items()},
            rounds=3,
            threads=1,
            cpu_time=True,
        )
        for name, seconds in timed.items():
            latency[name][f"ms, batch {n}"] = 1000 * seconds
    os.environ.setdefault("KINETO_LOG_LEVEL", "6")  # the profiler's C++ log lines: errors only
    kernels = {n: convolution_kernel(lambda x=x: model(x)) for n, x in inputs.items()}
table = pd.DataFrame(latency).T
table["batching gain"] = 256 * table["ms, batch 1"] / table["ms, batch 256"]  # 256 calls ÷ 1
logits = [eager_logits, exported_logits, ort_logits, int8_logits, aoti_logits]
table["max |diff| vs eager"] = [np.abs(np.asarray(x) - eager_logits.numpy()).max() for x in logits]
table["same class"] = [
    (np.asarray(x).argmax(1) == eager_logits.argmax(1).numpy()).mean() for x in logits
]
sizes = {
    "eager": "cifar2_state_dict.pt",
    "torch.export": "cifar2.pt2",
    "ONNX Runtime": "cifar2.onnx",
    "ONNX Runtime int8": "cifar2_int8.onnx",
    "AOTInductor": "cifar2_aoti.pt2",
}
table["file kB"] = [(RUN / sizes[name]).stat().st_size / 1000 for name in table.index]

# %% tags=["nbval-ignore-output"]
print(table.to_string(float_format=lambda v: f"{v:.3g}"))
print("ATen's convolution kernel:", kernels)

# %%
speedup = table.loc["eager", "ms, batch 1"] / table.loc["ONNX Runtime", "ms, batch 1"]
check(
    speedup >= 1.5,
    "ONNX Runtime answers one image faster than eager PyTorch",
    measured=f"{speedup:.1f}×",
    timing=True,
)
speedup = table.loc["eager", "ms, batch 256"] / table.loc["AOTInductor", "ms, batch 256"]
check(
    speedup >= 1.3,
    "the AOTInductor package runs a batch of 256 faster than eager",
    measured=f"{speedup:.1f}×",
    timing=True,
)
gain = table["batching gain"]
aten_gain = gain[["eager", "torch.export", "AOTInductor"]].min()
check(
    aten_gain > 1.1,
    "every route that runs ATen's kernels gains from batching (256 calls of 1 take longer)",
    measured=f"{aten_gain:.2f}×",
    timing=True,
)
largest = table["file kB"].drop("AOTInductor").max()
check(
    table.loc["AOTInductor", "file kB"] > 2 * largest,
    "the AOTInductor package is the largest file, twice any other: it carries compiled code",
)
int8 = table.loc["ONNX Runtime int8"]
check(
    int8["file kB"] < table.loc["ONNX Runtime", "file kB"] / 3,
    "the int8 ONNX file is less than a third of the float one",
)
check(int8["same class"] >= 0.97, "int8 gives eager's class for ≥ 97% of the test images")
slowdown = int8["ms, batch 256"] / table.loc["ONNX Runtime", "ms, batch 256"]
check(
    slowdown > 2,
    "and yet dynamic int8 runs this CNN slower than float32, not faster",
    measured=f"{slowdown:.1f}× slower",
    timing=True,
)

# %% [markdown]
# What to notice:
#
# - For one image, ONNX Runtime is faster than eager (checked above): it runs the whole graph
#   from C++ with kernels that handle one image about as well as many. Eager PyTorch and the `.pt2` program dispatch
#   every operation from Python; the `.pt2` program runs the same kernels as eager (hence its
#   difference of exactly 0) and gains nothing in speed: its value is being a self-contained
#   file. For a batch the kernels dominate, and the AOTInductor package, compiled and fused, beats
#   eager (checked above; eager computes each layer in its own pass, and its max-pooling also
#   computes the indices that only training needs).
# - The *batching gain* is the time of 256 calls with one image divided by one call with 256:
#   what a server running that route would save by batching requests. It comes from the
#   kernels more than from Python: AOTInductor, which runs no Python per operation, gains too,
#   because its convolutions are ATen's, and ATen chooses a convolution kernel per call: it may
#   run one image through its reference kernel (`thnn_conv2d`, unfold and matrix product) and a
#   batch through oneDNN's (the kernels printed above). ONNX Runtime, whose kernels are as good
#   for one image, should gain least among the float32 routes; the table says whether it did
#   here. That order is not checked: on a busy machine the shortest calls can slow down most,
#   and the order can change. On a GPU, where one image leaves most of the chip idle, expect
#   batching to matter more still, and measure it there.
# - Dynamic int8 made the file less than a third of the size and kept the classes, but it made
#   this CNN *slower*: every call quantizes each activation anew (`DynamicQuantizeLinear`) before
#   the integer convolutions (`ConvInteger`), and the whole int8 route is slower here than the
#   float one (profile it to split the two). For a CNN, quantize
#   statically (`quantize_static` with calibration images, which lets ONNX Runtime use fused
#   int8 convolutions) and time it; dynamic quantization pays off on the large matrix products
#   of transformers and recurrent networks.
#
# On a GPU the same routes exist: export a model and example on `cuda` (AOTInductor then emits
# CUDA code), and for ONNX install `onnxruntime-gpu` and ask for
# `providers=["CUDAExecutionProvider"]` (or TensorRT's).

# %% [markdown]
# ## Ship a half-precision or int8 model
#
# Smaller, faster models are [10](10_speedups_inference_recipes.ipynb#Quantize-to-int8-for-CPU-inference)'s topic;
# two things change when the model has to go into a file:
#
# - 10's int8 model is already a graph from `torch.export`: torchao's PT2E flow
#   (`prepare_pt2e` on `exported.module()` with an `X86InductorQuantizer`, calibrate,
#   `convert_pt2e`). To ship it, export the converted module again (`torch.export.export`, the
#   quantize/dequantize pairs are ordinary operators in the graph), save the program, and compile
#   it with AOTInductor with Inductor's freezing on (`torch._inductor.config.freezing = True`, under
#   `torch.no_grad()`), which is what turns those pairs into int8 kernels (10 explains why). Or
#   quantize the ONNX file (above: dynamically, and time it; for a CNN, `quantize_static`).
# - Half precision (the GPU's usual inference speed-up) meets the pre-processing inside the
#   model: `model.half()` converts parameters and buffers, not the dtype the first layer converts
#   the images to.

# %% [markdown]
# ### Pitfall: `Input type (torch.FloatTensor) and weight type (torch.HalfTensor) should be the same`

# %%
half_model = copy.deepcopy(model).half()
with expect_error(RuntimeError):
    half_model(test_images[:256])

# %% [markdown]
# The first layer still makes float32 images for float16 weights. Replace it as well; the half
# model then exports like the float one (on a GPU, move it to `cuda` first: many CPUs have no fast
# float16 arithmetic, so time it before shipping float16 for a CPU).

# %%
half_model[0] = v2.ToDtype(torch.float16, scale=True)
with torch.inference_mode():
    half_logits = half_model(test_images[:256])
half_program = torch.export.export(half_model, (example,), dynamic_shapes=({0: batch},))
print("output dtype:", half_logits.dtype, "· exported:", type(half_program).__name__)
half_agree = (half_logits.argmax(1) == eager_logits[:256].argmax(1)).float().mean().item()
check(
    half_agree >= 0.98,
    "the float16 model gives eager's class for ≥ 98% of 256 images",
    measured=f"{half_agree:.1%}",
)

# %% [markdown]
# ## Old code you will meet
#
# | old form | write today | why |
# |---|---|---|
# | `torch._export.aot_compile(model, args)` returning a `.so`, loaded with `torch._export.aot_load` | `torch._inductor.aoti_compile_and_package(torch.export.export(...))`, `aoti_load_package` | one `.pt2` package holds the compiled code, the weights and the metadata |
# | `model.half()` alone | `model.half()` and a first layer that makes float16 images | the pre-processing inside the model keeps its float32 dtype |
# | `quantize_dynamic` on a CNN | `quantize_static` with calibration images, then time it | dynamic int8 made this CNN slower than float32 |

# %% [markdown]
# ## Exercises

# %% [markdown]
# ### Exercise 1 · Guard the package's inputs
#
# The AOTInductor package computes on whatever it is given. Write `prepare(x)` for the server
# that calls it: for a `uint8` tensor of shape `(N, 3, 32, 32)` with `1 <= N <= 2048` (the
# batches the package was exported for), in any memory layout, return the tensor to pass to the
# package; for anything else, raise a `ValueError` that says what is wrong (a `TypeError` for
# what is not a tensor is fine too). The check tries valid batches of 1, 8 and 2048, two in
# another layout, and eight wrong inputs.
#
# <details><summary>Hint 1</summary>
#
# Test, in this order, that it is a `torch.Tensor`, its `dtype`, its number of dimensions, then
# each size; then return it in the layout the package reads. An `assert` is no guard: `python
# -O` removes every one.
# </details>
#
# <details><summary>Hint 2</summary>
#
# A `torch.Size` compares equal to a tuple. The wrong inputs include an empty batch, one image
# without its batch dimension and grey images; the section on memory layouts above says what
# the package needs of a valid one.
# </details>

# %%
prepare = ...  # a function (x) -> the tensor to pass to the package, or ValueError

# %%
ch12_routes.exercise_1(prepare)


# %% [markdown]
# #### Solution

# %% tags=["solution"]
# Solution: open it once you have tried. It uses its own names, so your answer stays as it is.
def solution_prepare(x: object) -> torch.Tensor:
    """``x`` made contiguous if it is a uint8 batch (N, 3, 32, 32), 1 <= N <= 2048; else raise."""
    if not isinstance(x, torch.Tensor):
        raise TypeError(f"expected a torch.Tensor, got {type(x).__name__}")
    if x.dtype != torch.uint8:
        raise ValueError(f"expected uint8 pixels, got {x.dtype}")
    if x.dim() != 4 or x.shape[1:] != (3, 32, 32):
        raise ValueError(f"expected images of shape (N, 3, 32, 32), got {tuple(x.shape)}")
    if not 1 <= len(x) <= 2048:
        raise ValueError(f"expected 1 to 2048 images, got {len(x)}")
    return x.contiguous()  # the package reads memory in order, whatever the strides


ch12_routes.exercise_1(solution_prepare)

# %% [markdown]
# ### Exercise 2 · Choose a route by the numbers
#
# Write `choose_route(table, batch, min_same_class)`: the name of the fastest route for `batch`
# images (the column `f"ms, batch {batch}"` of a table like the one above) among the routes that
# give eager's class for at least `min_same_class` of the test images (the column
# `"same class"`). The check tries it on tables where the fastest route agrees too rarely, and
# where one image and 256 have different winners. Then try it on this machine's `table`.
#
# <details><summary>Hint 1</summary>
#
# Two steps: keep the rows whose agreement is high enough, then find the row with the lowest time
# in the batch's column.
# </details>
#
# <details><summary>Hint 2</summary>
#
# Indexing a DataFrame with a column of booleans keeps the rows where it is `True`; a column's
# `.idxmin()` is the index (here: the route's name) of its smallest value.
# </details>

# %%
choose_route = ...  # a function (table, batch, min_same_class) -> the route's name

# %%
ch12_routes.exercise_2(choose_route)


# %% [markdown]
# #### Solution

# %% tags=["solution"]
# Solution: open it once you have tried. It uses its own names, so your answer stays as it is.
def solution_choose_route(table: pd.DataFrame, batch: int, min_same_class: float) -> str:
    """The fastest route for ``batch`` images among those that agree with eager often enough."""
    agreeing = table[table["same class"] >= min_same_class]
    return str(agreeing[f"ms, batch {batch}"].idxmin())


ch12_routes.exercise_2(solution_choose_route)

# %% [markdown]
# ## Summary
#
# - AOTInductor (`aoti_compile_and_package`) compiles an exported program ahead of time into a
#   `.pt2` package for Python or C++, for one device and CPU instruction set; fix its loops'
#   threads with `cpp.threads`, and check its inputs yourself: it does **not**.
# - Dynamic int8 (`quantize_dynamic`) makes the ONNX file less than a third of the size and keeps the
#   classes, but made this CNN slower: quantize a CNN statically, and time it. 10's PT2E int8
#   model exports again and compiles with freezing on.
# - For half precision, convert the model's pre-processing too.
# - Compare routes on the machine that will serve: one image and a batch, in turns; agreement
#   with eager (a tolerance, not equality, across runtimes); file size. Choose among the routes
#   that agree with eager: a fast route that changes answers is no route.
#
# Next: [13 · Reproducibility and debugging](../13_reproducibility_debugging.ipynb).
