# %% [markdown]
# # 12 · Deployment: recipes
#
# [![Open In Colab](https://colab.research.google.com/assets/colab-badge.svg)](https://colab.research.google.com/github/pytorch-cookbook/pytorch-cookbook/blob/main/notebooks/cookbook/12_deployment_recipes.ipynb)
#
# **The cookbook of chapter 12.** New to the topic? [The lesson](../12_deployment.ipynb) teaches it
# step by step on the course's running example. Here each recipe answers one task; the
# [recipe index](../RECIPES.md) and the [error index](../ERRORS.md) find the one you need.
#
# A trained model is only useful where it runs. After this notebook you can choose what to ship
# (weights plus code, or a self-contained program), export the CIFAR2 CNN with `torch.export`
# (dynamic batch size, `.pt2` files), read the TorchScript code of older projects, export to
# ONNX and run it with ONNX Runtime, compile it ahead of time with AOTInductor, and **serve it
# over HTTP** with FastAPI: a real server process, started on a free local port, queried with
# real, wrong and concurrent requests, and stopped. Every route is checked against the eager
# model, and timed on the machine that runs the notebook.
#
# **Prerequisites:** [04](../04_modules.ipynb) (`state_dict`), [05](../05_datasets_dataloaders.ipynb)
# (the CIFAR2 model that takes `uint8` images), [10](../10_speedups.ipynb) (timing, int8).
#
# **Run time:** about 45 s on a 2-core CPU · GPU optional.

# %%
import sys

if (
    "google.colab" in sys.modules
):  # Colab: install the course's helpers and what the notebooks import
    import subprocess

    spec = "pytorch-cookbook[notebooks] @ git+https://github.com/pytorch-cookbook/pytorch-cookbook"
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", spec], check=True)

import copy
import io
import json
import logging
import os
import platform
import random
import shutil
import socket
import time
import warnings
import zipfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import numpy as np
import onnx
import onnxruntime as ort
import pandas as pd
import torch
from fastapi import HTTPException
from onnxruntime.quantization import QuantType, quant_pre_process, quantize_dynamic
from PIL import Image
from torch.export import Dim
from torchvision.io import encode_png
from torchvision.transforms import v2

from helpers.bench import convolution_kernel, time_in_turns, time_it
from helpers.check import check, expect_error
from helpers.env import VNNI_FLAGS, cpu_flags, setup
from helpers.exercises import ch12
from helpers.images import channel_stats, load_cifar2
from helpers.models import small_cnn
from helpers.processes import leftovers
from helpers.serve import serve
from helpers.train import train_sliced

device = setup(seed=0)
RUN = Path("runs/12_deployment")  # what this notebook writes: made anew on every run
shutil.rmtree(RUN, ignore_errors=True)
RUN.mkdir(parents=True)
train_images, train_labels, classes = load_cifar2("train")
test_images, test_labels, _ = load_cifar2("test")
mean, std = channel_stats(train_images)
print(f"CIFAR2: {len(train_images)} training and {len(test_images)} test images, {classes}")

# %% [markdown]
# ## Train the model to deploy
#
# The CNN of [05](05_datasets_dataloaders_recipes.ipynb), one epoch on batches of 64 sliced from memory
# with SGD, as in [10](10_speedups_inference_recipes.ipynb#Quantize-to-int8-for-CPU-inference) (`helpers.train.train_sliced`): enough for a model worth
# shipping. Its first two layers turn `uint8` images into normalised floats, so whoever calls it
# sends raw pixels. Everything after training runs on the CPU, in evaluation mode: deployment
# means inference.

# %%
torch.manual_seed(0)
model = train_sliced(small_cnn(mean, std).to(device), train_images, train_labels, device)
with torch.inference_mode():
    eager_logits = model(test_images)
eager_accuracy = (eager_logits.argmax(1) == test_labels).float().mean().item()

# %% tags=["nbval-ignore-output"]
print(f"test accuracy after one epoch: {eager_accuracy:.3f}")

# %%
check(eager_accuracy > 0.75, "one epoch trains a model worth deploying (test accuracy > 0.75)")

# %% [markdown]
# ## Decide what to ship: weights and code, or a self-contained program
#
# A `state_dict` holds tensors only: parameters and buffers, by name ([04](04_modules_recipes.ipynb)).
# To use it, the receiver needs the **code** that builds the model and every constructor
# argument. The CNN's normalisation constants are such arguments: they live in the
# `Normalize` layer's attributes, not in any tensor the `state_dict` saves.

# %%
torch.save(model.state_dict(), RUN / "cifar2_state_dict.pt")
state = torch.load(RUN / "cifar2_state_dict.pt", weights_only=True)
print(len(state), "tensors, e.g.", list(state)[:4])
print("keys of layer 1 (Normalize) in the state_dict:", [k for k in state if k.startswith("1.")])
print("its constants, in the module only:", model[1].mean, model[1].std)
rebuilt = small_cnn(mean, std)  # the receiver needs this code *and* mean and std
rebuilt.load_state_dict(state)
with torch.inference_mode():
    check(torch.equal(rebuilt.eval()(test_images), eager_logits), "code + weights = same model")

# %% [markdown]
# A **program** instead records the computation itself: every operation from the `uint8` input
# to the logits, with the weights and constants. It runs without the Python class that made it.
# Three formats follow, all made from the same model, and each runs somewhere else:
#
# | format | made with | runs in |
# |---|---|---|
# | `.pt2` program | `torch.export` | Python with the same PyTorch (no model code needed) |
# | ONNX file | `torch.onnx.export` | ONNX Runtime (Python, C++, C#, Java, mobile, browser) and other runtimes; no PyTorch |
# | AOTInductor `.pt2` package | `aoti_compile_and_package` | Python or C++ with libtorch, on the device and CPU instruction set it was built for |
#
# A phone needs one more step, ExecuTorch's `.pte` file (at the end). Ship the class names
# with it too, so that an answer can say "airplane" rather than 0. Pre-processing belongs inside:
# a server that must remember to divide by 255 and normalise with the training statistics will,
# one day, forget.

# %% [markdown]
# ## Export the model with `torch.export`
#
# `torch.export.export(model, example_inputs)` traces the model: it runs `forward`'s Python code
# once, on *fake* tensors that have the example's shapes and dtypes but no data, and records
# every ATen operation into an `ExportedProgram`: a graph without Python control flow.
# Shapes are specialised to the example unless marked dynamic: `Dim("batch", min=1, max=2048)`
# lets dimension 0 vary. `torch.export.save` writes a `.pt2` file (here with the class names as an
# extra file); `torch.export.load` reads it back, and `.module()` turns it into a callable. The
# file also keeps the example inputs: pass a copy, because a slice of the test set is a view and
# would save all 2000 images ([02](02_contiguity_strides_recipes.ipynb): `torch.save` writes storages).

# %%
example = test_images[:8].clone()
batch = Dim("batch", min=1, max=2048)
exported = torch.export.export(model, (example,), dynamic_shapes=({0: batch},))
torch.export.save(exported, RUN / "cifar2.pt2", extra_files={"classes.json": json.dumps(classes)})

extra = {"classes.json": ""}
loaded = torch.export.load(RUN / "cifar2.pt2", extra_files=extra)
program = loaded.module()
print(
    "first operations:", [str(n.target) for n in loaded.graph.nodes if n.op == "call_function"][:5]
)
print("batch range:", [str(r) for r in loaded.range_constraints.values()])
print("classes shipped with it:", json.loads(extra["classes.json"]))
with torch.inference_mode():
    exported_logits = program(test_images)
check(torch.equal(exported_logits, eager_logits), "the loaded program equals eager on 2000 images")

# %% [markdown]
# The graph starts where the model starts: it checks that the input is `uint8`, converts it to
# float, scales by 1/255 and normalises. The loaded program also **checks its inputs**: each
# assumption the export made (batch range, image size, dtype) is a guard, and a call that breaks
# one fails with a message instead of computing garbage.

# %%
wrong_inputs = {
    "2049 images": torch.zeros(2049, 3, 32, 32, dtype=torch.uint8),
    "64×64 images": torch.zeros(2, 3, 64, 64, dtype=torch.uint8),
    "float images": torch.zeros(2, 3, 32, 32),
}
for name, wrong in wrong_inputs.items():
    try:
        program(wrong)
    except Exception as error:
        print(f"{name}: {type(error).__name__}: {str(error).splitlines()[0]}")

# %% [markdown]
# ### Pitfall: `Constraints violated (batch)! ... specialized it to be a constant (1)`
#
# The natural example input is one image. But export specialises sizes 0 and 1 (a size-1
# dimension broadcasts, so code may treat it specially), so a batch dimension marked dynamic
# with an example batch of one is a contradiction, and export says so:

# %%
with expect_error(RuntimeError, match="Constraints violated"):
    torch.export.export(model, (test_images[:1],), dynamic_shapes=({0: batch},))


# %% [markdown]
# The fix: export with an example batch of at least 2 (above: 8), still allowing `min=1`. The
# same message appears when the code itself fixes the size, e.g. `x.view(8, -1)`: write
# `x.flatten(1)`. The message also names `Dim.AUTO`: `{0: Dim.AUTO}` lets export decide, making
# the dimension dynamic where the code allows it and quietly static (here: a batch of exactly
# 1) where it does not, while `Dim.DYNAMIC` and a named `Dim` insist, and fail. For a
# server's batch dimension, insist: a silently static batch shows up only in production.
#
# The other export error you will meet is data-dependent control flow: `if x.max() > 1:` cannot
# be recorded in a graph, and export stops with `GuardOnDataDependentSymNode: Could not guard on
# data-dependent expression`. Make the branch depend on shapes or dtypes only (known at export
# time), or use `torch.cond(pred, true_fn, false_fn, operands)`, which records both branches.
# Reading a value is not the problem: `.item()` and `.tolist()` are recorded as data-dependent
# values (`aten.item`) and recomputed on new inputs, even an integer used as a size; export stops
# where Python must decide something from the value: an `if` on it, or `int()` of a float.
# `.numpy()` leaves PyTorch and is refused. Everything else runs once while tracing and is frozen
# into the graph as it came out, without a word, as in a trace: a random number, a global or a
# config flag, the length of a Python list.


# %%
class Jitter(torch.nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + random.random()  # a Python float, not a tensor operation


jitter = torch.export.export(Jitter(), (torch.zeros(2),)).module()
check(
    torch.equal(jitter(torch.zeros(2)), jitter(torch.zeros(2))),
    "export froze the random number: every call adds the same value",
)

# %% [markdown]
# `strict=True` (the default is `False`) traces with TorchDynamo instead of running the Python
# code, and refuses some of what non-strict export freezes, this random number among them.
# `torch.export.draft_export` lists every problem at once.
#
# A `.pt2` program is tied to the PyTorch that wrote it: `torch.export.save`'s documentation warns
# that saved files may not be usable in newer versions. ONNX, below, is the stable interchange.

# %% [markdown]
# ## Read TorchScript code you will meet
#
# Before `torch.export`, the program format was TorchScript: `torch.jit.script` compiled the
# Python source of a model, `torch.jit.trace` recorded one run, `.save` wrote a file that C++ loaded
# with `torch::jit::load`. Many older projects and C++ servers still use it. In this torch
# version it is deprecated, and `torch.jit.script` cannot even compile today's model:

# %% [markdown]
# ### Pitfall: `RuntimeError: Transform ToDtype cannot be JIT scripted`

# %%
with warnings.catch_warnings(), expect_error(RuntimeError):
    warnings.simplefilter("ignore", FutureWarning)  # it also warns that it is deprecated
    torch.jit.script(model)

# %% [markdown]
# Scripting understands only a subset of Python, and torchvision's `v2` transforms are not in it.
# The fix is `torch.export` (above). If an old C++ runtime needs a TorchScript file, tracing
# works, because it records the operations of one run instead of reading the source; it warns
# about what it deprecates and bakes in:

# %%
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    traced = torch.jit.trace(model, example)
    traced.save(RUN / "cifar2_traced.pt")
    reloaded = torch.jit.load(RUN / "cifar2_traced.pt")
warned = sorted({f"{w.category.__name__}: {str(w.message).splitlines()[0]}" for w in caught})
print("warned:", *warned, sep="\n  ")
with torch.inference_mode():
    traced_logits = reloaded(test_images)
check(
    torch.allclose(traced_logits, eager_logits, atol=1e-5),
    "the traced and reloaded TorchScript model equals eager on a batch of 2000 (not 8)",
)

# %% [markdown]
# A trace records what ran: a Python `if` on the data, a loop whose length depends on the input,
# or a value read with `.item()` is frozen into the trace as it was for the example, silently
# (the `TracerWarning`s above say so for the normalisation constants, which are constant
# indeed). Today: `torch.export` for programs, `torch.compile` for speed in Python, and for C++
# an AOTInductor package loaded with `torch::inductor::AOTIModelPackageLoader` (below).

# %% [markdown]
# ## Export to ONNX and run it with ONNX Runtime
#
# ONNX is an open file format for models, read by ONNX Runtime (CPU, CUDA, DirectML, CoreML,
# TensorRT, the browser) and many vendor toolkits. `torch.onnx.export(..., dynamo=True)` (the
# default since torch 2.9) goes through `torch.export` and translates the ATen graph to ONNX
# operators; the dynamic batch dimension is kept by name. The class names go into the file's
# metadata.

# %%
onnx_program = torch.onnx.export(
    model,
    (example,),
    dynamo=True,
    dynamic_shapes=({0: batch},),
    input_names=["images"],
    output_names=["logits"],
    verbose=False,  # no progress lines
)
onnx_program.model.metadata_props["classes"] = ",".join(classes)
onnx_program.save(RUN / "cifar2.onnx", external_data=False)  # one file, weights inside

onnx_model = onnx.load(RUN / "cifar2.onnx")
onnx.checker.check_model(onnx_model, full_check=True)  # raises if the file is invalid
for value in [*onnx_model.graph.input, *onnx_model.graph.output]:
    kind = value.type.tensor_type
    dims = [d.dim_param or d.dim_value for d in kind.shape.dim]
    print(f"{value.name}: {onnx.TensorProto.DataType.Name(kind.elem_type)} {dims}")
print(
    "opset:",
    onnx_model.opset_import[0].version,
    "· operators:",
    sorted({node.op_type for node in onnx_model.graph.node}),
)

# %% [markdown]
# No `BatchNormalization` among the operators: the exporter folded each BatchNorm into the
# convolution before it (the fusion [10](10_speedups_inference_recipes.ipynb#Fuse-Conv-and-BatchNorm-for-inference) did by hand). One file holds at most
# 2 GB (the limit of protobuf, ONNX's encoding): for a larger model `save` writes the weights to
# a data file next to the `.onnx`, even with `external_data=False`, and the two files travel
# together.
#
# ONNX Runtime runs the file in an `InferenceSession`; here with one thread, the same as PyTorch
# below. Creating the session also optimises the graph (constant folding, operator fusions):
# `options.graph_optimization_level` sets how far, `ORT_ENABLE_ALL` by default, and
# `options.optimized_model_filepath` saves the optimised graph to look at or to load faster.
# On a GPU (`providers=["CUDAExecutionProvider"]`), `session.run` copies each input to the device
# and each output back; `session.io_binding()` binds them to device memory instead (a CUDA
# tensor's pointer, say), so batches that live on the GPU are not copied twice. On a CPU there is
# no copy to save.

# %%
options = ort.SessionOptions()
options.intra_op_num_threads = 1
session = ort.InferenceSession(
    str(RUN / "cifar2.onnx"), options, providers=["CPUExecutionProvider"]
)
print("inputs:", [(i.name, i.type, i.shape) for i in session.get_inputs()])
print("classes from the metadata:", session.get_modelmeta().custom_metadata_map["classes"])
(ort_logits,) = session.run(None, {"images": test_images.numpy()})
ort_diff = np.abs(ort_logits - eager_logits.numpy()).max()
ort_agree = (ort_logits.argmax(1) == eager_logits.argmax(1).numpy()).mean()

# %% tags=["nbval-ignore-output"]
print(f"ONNX Runtime vs eager: max |diff| {ort_diff:.1e}, same class for {ort_agree:.2%}")

# %%
check(
    ort_diff <= 1e-4, "ONNX Runtime's logits equal eager's within 1e-4", measured=f"{ort_diff:.1e}"
)
check(ort_agree >= 0.999, "and give the same class (≥ 99.9% of the test images)")

# %% [markdown]
# Different kernels add in a different order, so float32 results differ in the last bits: a
# tolerance, not `torch.equal`, is the right test across runtimes.

# %% [markdown]
# ### Quantize the ONNX file to int8
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
# with AVX-512 can crash with an illegal instruction on an AVX2-only server. The compilation
# takes seconds:

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
# - **Input checks.** The package does not guard its inputs. The three wrong inputs the program
#   refused above:

# %%
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

# %% [markdown]
# ## Compare the routes: latency, agreement and size
#
# One image (what an interactive request sends) and a batch of 256 (what a batch job or a
# batching server sends), timed with one thread: medians after a warm-up, the five routes in
# turns, each keeping its fastest of three ([10](10_speedups_recipes.ipynb)).
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
        timed = time_in_turns(
            {name: lambda r=run, x=x: r(x) for name, run in routes.items()}, rounds=3, threads=1
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
    aten_gain > 1.3 * gain["ONNX Runtime"],
    "the routes that run ATen's kernels gain more from batching than ONNX Runtime",
    measured=f"{aten_gain:.2f} vs {gain['ONNX Runtime']:.2f}",
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
# - For one image, ONNX Runtime is the fastest: it runs the whole graph from C++ with kernels
#   that handle one image about as well as many. Eager PyTorch and the `.pt2` program dispatch
#   every operation from Python; the `.pt2` program runs the same kernels as eager (hence its
#   difference of exactly 0) and gains nothing in speed: its value is being a self-contained
#   file. For a batch the kernels dominate and compiled, fused code wins (eager computes each
#   layer in its own pass, and its max-pooling also computes the indices that only training
#   needs).
# - The *batching gain* is the time of 256 calls with one image divided by one call with 256:
#   what a server running that route would save by batching requests. It comes from the
#   kernels more than from Python: AOTInductor, which runs no Python per operation, gains too,
#   because its convolutions are ATen's, and ATen chooses a convolution kernel per call: it may
#   run one image through its reference kernel (`thnn_conv2d`, unfold and matrix product) and a
#   batch through oneDNN's (the kernels printed above). ONNX Runtime, whose kernels are as good
#   for one image, gains least among the float32 routes (the check above). On a GPU, where one
#   image leaves most of the chip idle, batching is the largest saving of all.
# - Dynamic int8 made the file several times smaller and kept the classes, but it made this CNN
#   *slower*: every call quantizes each activation anew, and ONNX Runtime's integer
#   convolutions (`ConvInteger`) are slower here than its float ones. For a CNN, quantize
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
# model then exports like the float one (on a GPU, move it to `cuda` first: float16 is slow on
# most CPUs).

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
# ## Write an inference server
#
# A service answers requests over HTTP. FastAPI declares the endpoints; uvicorn is the server
# process that runs them. The server below loads the ONNX file, so it needs neither torch nor
# this course's code (its `/health` says whether torch got imported: checked below). Its
# contract:
#
# - `GET /health` answers 200 when the model is loaded (what a load balancer, and the helper that
#   starts it, poll); it names the classes and no software versions (an attacker's shopping
#   list), and FastAPI's generated pages (`/docs`, `/redoc`, `/openapi.json`) are switched off;
# - `POST /predict` takes the bytes of a 32×32 PNG as the request body (`content-type:
#   image/png`, in any letter case, as media types are), and answers with the class and its
#   probabilities;
# - wrong requests get a 4xx status and a message that says what is wrong: **415** for another
#   content type; **400** for an empty body, bytes that are not a PNG, another size, or a bit
#   depth other than 8 (`convert("RGB")` would turn a 16-bit grey image into pure white, and the
#   model would classify that); **413** for a body over 64 kB (checked while reading it, so a
#   huge upload is refused early); **408** when the body does not arrive within 2 s (a client
#   that sends a few bytes and waits would otherwise hold its connection for ever);
# - a request that arrives while 32 connections are open, its own included, gets **503**
#   (uvicorn's `limit_concurrency`), so no connection may be held for long: one idle between
#   requests is closed after 5 s (`timeout_keep_alive`); one that has not sent a request's
#   headers 5 s after connecting (or after their first byte) is closed; and one whose request
#   was answered before its body was read (a 415, 404 or 503) is closed once the answer is out,
#   or the client could trickle the unread body for ever. uvicorn does neither of the last two:
#   its keep-alive timer starts only after a response and stops at every byte received, so 31
#   such clients would make every later request get 503. The server adds them in
#   `StrictConnections`, a subclass of uvicorn's HTTP/1.1 protocol;
# - a client that leaves mid-upload costs one line in the log, not a traceback;
# - it binds to 127.0.0.1 only (nothing outside this machine can reach it), and it exits when
#   the process that started it ends: a helper thread watches its parent's PID, which changes
#   when the parent dies and the orphan is adopted. Otherwise a crashed or restarted notebook
#   kernel would leave the server running, since no `finally` runs in a killed process.

# %%
# %%writefile runs/12_deployment/server.py
"""CIFAR2 classifier over HTTP: POST a 32×32 PNG as the request body to /predict.

    python server.py cifar2.onnx --port 8000

Serves on 127.0.0.1 only, and exits when the process that started it ends (POSIX). Needs
onnxruntime, numpy, pillow, fastapi and uvicorn: no torch.
"""

import argparse
import asyncio
import io
import logging
import os
import signal
import sys
import threading
import time

import h11
import numpy as np
import onnxruntime as ort
import uvicorn
from fastapi import FastAPI, HTTPException, Request
from PIL import Image
from starlette.concurrency import run_in_threadpool
from starlette.requests import ClientDisconnect
from uvicorn.protocols.http.h11_impl import H11Protocol

MAX_BYTES = 64 * 1024  # a 32×32 RGB PNG is at most about 3 kB
BODY_SECONDS = 2.0  # the whole body must arrive within this time
HEADER_SECONDS = 5.0  # a request's headers: within this time of connecting or of their start
MAX_CONNECTIONS = 32  # a request on the 32nd open connection (or later) gets 503
SIZE = (32, 32)
MODES = {"L", "LA", "P", "RGB", "RGBA"}  # Pillow's raw modes for 8-bit PNG pixels
PARENT = os.getppid()  # read first: the process that started this one

parser = argparse.ArgumentParser(description=__doc__)
parser.add_argument("model", help="an .onnx file with a 'classes' metadata entry")
parser.add_argument("--port", type=int, required=True)
args = parser.parse_args()

options = ort.SessionOptions()
options.intra_op_num_threads = 1  # one core per request; concurrent requests use the others
session = ort.InferenceSession(args.model, options, providers=["CPUExecutionProvider"])
classes = session.get_modelmeta().custom_metadata_map["classes"].split(",")
app = FastAPI(docs_url=None, redoc_url=None, openapi_url=None)  # no pages but the API
log = logging.getLogger("uvicorn.error")  # uvicorn's own log: one line per event


async def read_body(request: Request) -> bytes:
    """The request body; 413 as soon as it is longer than MAX_BYTES, 408 if it is too slow."""
    too_large = HTTPException(413, f"body larger than {MAX_BYTES} bytes", {"connection": "close"})
    if int(request.headers.get("content-length") or 0) > MAX_BYTES:
        raise too_large
    body = bytearray()

    async def receive() -> None:
        async for chunk in request.stream():  # also bounds a body sent without a length
            body.extend(chunk)
            if len(body) > MAX_BYTES:
                raise too_large

    try:
        await asyncio.wait_for(receive(), BODY_SECONDS)
    except asyncio.TimeoutError:
        message = f"the body did not arrive within {BODY_SECONDS} s"
        raise HTTPException(408, message, {"connection": "close"}) from None
    except ClientDisconnect:  # nobody to answer: one line in the log, not a traceback
        log.warning("client disconnected during the upload, after %d bytes", len(body))
        raise HTTPException(400, "client disconnected") from None
    return bytes(body)


def decode(body: bytes) -> np.ndarray:
    """PNG bytes → uint8 array (1, 3, 32, 32), or a 400 that says what is wrong."""
    if not body:
        raise HTTPException(400, "empty body: send the PNG file's bytes as the request body")
    try:
        image = Image.open(io.BytesIO(body), formats=["PNG"])
    except Exception:
        raise HTTPException(400, "the body is not a PNG image") from None
    if image.size != SIZE:  # read from the header, before any pixel is decoded
        raise HTTPException(400, f"expected a 32×32 image, got {image.width}×{image.height}")
    raw = image.tile[0].args if image.tile else None  # how Pillow will read the pixels
    if raw not in MODES:  # e.g. "RGB;16B" or "L;4": not the header's bytes, Pillow's own plan
        # 16 bits: convert("RGB") would turn a grey image white; 1, 2 or 4 bits: refused too
        raise HTTPException(400, f"expected 8 bits per channel, got {raw}")
    try:
        pixels = np.asarray(image.convert("RGB"))  # grey or RGBA PNGs become RGB
    except Exception:
        raise HTTPException(400, "the PNG image is damaged") from None
    return pixels.transpose(2, 0, 1)[None].copy()  # HWC → NCHW, as the model expects


@app.get("/health")
def health() -> dict:
    return {"status": "ok", "classes": classes, "torch": "torch" in sys.modules}


@app.post("/predict")
async def predict(request: Request) -> dict:
    content_type = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if content_type != "image/png":  # media types are case-insensitive
        raise HTTPException(415, f"send a PNG as content-type image/png, not {content_type!r}")
    image = decode(await read_body(request))
    # inference off the event loop, so other requests are read meanwhile
    (logits,) = await run_in_threadpool(session.run, None, {"images": image})
    probabilities = np.exp(logits[0] - logits[0].max())
    probabilities /= probabilities.sum()
    index = int(probabilities.argmax())
    return {"class": classes[index], "index": index, "probabilities": probabilities.tolist()}


class StrictConnections(H11Protocol):
    """uvicorn's HTTP/1.1 protocol, holding no connection for long: closed when it has not sent a
    request's headers HEADER_SECONDS after connecting (or after their first byte), and once a
    request is answered before its body was read (the client could trickle the rest for ever)."""

    deadline: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.Transport) -> None:
        super().connection_made(transport)
        self.deadline = self.loop.call_later(HEADER_SECONDS, self.headers_too_slow)

    def data_received(self, data: bytes) -> None:
        super().data_received(data)
        if self.conn.their_state is not h11.IDLE:  # the request's headers are complete
            if self.deadline is not None:
                self.deadline.cancel()
                self.deadline = None
        elif self.deadline is None:  # the first bytes of the next request on this connection
            self.deadline = self.loop.call_later(HEADER_SECONDS, self.headers_too_slow)

    def headers_too_slow(self) -> None:
        if self.conn.their_state is h11.IDLE and not self.transport.is_closing():
            log.warning("closed a connection: no request headers within %g s", HEADER_SECONDS)
            self.transport.close()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        if self.conn.their_state not in (h11.IDLE, h11.DONE):  # answered, body still unread
            self.transport.close()

    def connection_lost(self, exc: Exception | None) -> None:
        if self.deadline is not None:
            self.deadline.cancel()
        super().connection_lost(exc)


def exit_with_parent() -> None:
    """Stop the server when its parent ends (it is then adopted: another parent PID)."""
    while os.getppid() == PARENT:
        time.sleep(0.5)
    log.warning("the process that started this server ended: shutting down")
    os.kill(os.getpid(), signal.SIGTERM)  # uvicorn's graceful shutdown
    time.sleep(10)
    os._exit(1)  # it did not finish in time


if __name__ == "__main__":
    threading.Thread(target=exit_with_parent, daemon=True).start()
    uvicorn.run(
        app,
        host="127.0.0.1",
        port=args.port,
        log_level="warning",
        http=StrictConnections,  # the protocol above instead of uvicorn's own
        limit_concurrency=MAX_CONNECTIONS,
        timeout_keep_alive=5,  # idle between requests: closed after 5 s
        timeout_graceful_shutdown=5,
    )


# %% [markdown]
# ## Start, query and stop the server from the notebook
#
# `helpers.serve.serve` runs a command with `{port}` replaced by a free port on 127.0.0.1, waits
# until `GET /health` answers 200 (with a time limit, and with the server's output in the error
# if it dies first), and stops the process when the `with` block ends, **also when a check in
# it fails**. The client is `httpx`, whose `Client` reuses connections and is safe to share
# between threads. The queries: a real test image the model classifies correctly, every kind of
# wrong request (one of them a client that sends 10 bytes of a 1000-byte body and waits, written
# with a plain socket because an HTTP client library will not misbehave like that), a good
# request after them, and a burst of 32 concurrent requests.


# %%
def png(image: torch.Tensor) -> bytes:
    """Encode a uint8 image (3, H, W) as PNG bytes."""
    return encode_png(image).numpy().tobytes()


def png16(value: int) -> bytes:
    """A 32×32 16-bit greyscale PNG, every pixel ``value`` (0-65535)."""
    buffer = io.BytesIO()
    Image.fromarray(np.full((32, 32), value, np.uint16)).save(buffer, format="PNG")
    return buffer.getvalue()


def predict(client: httpx.Client, body, content_type: str = "image/png") -> httpx.Response:
    return client.post("/predict", content=body, headers={"content-type": content_type})


def streamed(size: int):
    """A body of ``size`` zero bytes sent in chunks, without a content-length."""
    for _ in range(size // 65536):
        yield bytes(65536)


def slow_upload(url: str) -> tuple[int, str, float]:
    """Announce a 1000-byte PNG, send 10 bytes of it and wait: (status, the answer's message,
    seconds to answer)."""
    host, port = httpx.URL(url).host, httpx.URL(url).port
    with socket.create_connection((host, port), timeout=10) as connection:
        began = time.perf_counter()
        connection.sendall(
            b"POST /predict HTTP/1.1\r\nhost: localhost\r\ncontent-type: image/png\r\n"
            b"content-length: 1000\r\n\r\n" + bytes(10)
        )
        answer = b""
        while chunk := connection.recv(4096):  # the server closes the connection after a 408
            answer += chunk
        seconds = time.perf_counter() - began
    head, _, body = answer.partition(b"\r\n\r\n")
    status = int(head.split()[1])  # b"HTTP/1.1 408 ..." → 408
    return status, json.loads(body)["detail"], seconds


def silent_connection(url: str) -> float:
    """Connect and send nothing: seconds until the server closes the connection."""
    host, port = httpx.URL(url).host, httpx.URL(url).port
    with socket.create_connection((host, port), timeout=30) as connection:
        began = time.perf_counter()
        closed = connection.recv(1024) == b""  # b"": the server closed it
        return time.perf_counter() - began if closed else float("nan")


confident = (eager_logits.softmax(1).max(1).values > 0.9) & (eager_logits.argmax(1) == test_labels)
good_index = int((confident & (test_labels == 0)).nonzero()[0, 0])  # an airplane, classified
good = test_images[good_index]
wrong_requests = {  # name: (body, content type, expected status)
    "a text body": (b"hello", "text/plain", 415),
    "no body": (b"", "image/png", 400),
    "text sent as image/png": (b"hello", "image/png", 400),
    "a 64×64 PNG": (png(torch.zeros(3, 64, 64, dtype=torch.uint8)), "image/png", 400),
    "a 16-bit grey PNG": (png16(20000), "image/png", 400),
    "a truncated PNG": (png(good)[:200], "image/png", 400),
    "a 1 MB body": (bytes(1_000_000), "image/png", 413),
    "2 MB without a length": (streamed(2_000_000), "image/png", 413),
}
SERVER = RUN / "server.py"
command = [sys.executable, SERVER, RUN / "cifar2.onnx", "--port", "{port}"]
with (
    serve(command, ready="/health", timeout=30) as server,
    httpx.Client(base_url=server.url, timeout=10) as client,
    ThreadPoolExecutor(max_workers=1) as watcher,
):
    silent = watcher.submit(silent_connection, server.url)  # open while the rest goes on
    health = client.get("/health").json()
    print("health:", health)
    check(health["torch"] is False, "the server runs without importing torch")
    pages = {path: client.get(path).status_code for path in ("/docs", "/redoc", "/openapi.json")}
    check(set(pages.values()) == {404}, "FastAPI's generated pages are off", measured=str(pages))
    answer = predict(client, png(good)).json()
    print(f"a test image of class {classes[test_labels[good_index]]}: {answer['class']}")
    check(answer["class"] == classes[model(good[None]).argmax()], "the server answers as eager")
    odd_case = predict(client, png(good), "Image/PNG").json()
    check(odd_case == answer, "`Image/PNG` is image/png: media types ignore letter case")

    statuses, messages = {}, {}
    for name, (body, content_type, _) in wrong_requests.items():
        response = predict(client, body, content_type)
        statuses[name], messages[name] = response.status_code, response.json()["detail"]
        print(f"{name:>24} → {response.status_code} {messages[name]}")
    slow_status, slow_message, slow_seconds = slow_upload(server.url)
    statuses["a body that stalls"], messages["a body that stalls"] = slow_status, slow_message
    print(f"{'a body that stalls':>24} → {slow_status} {slow_message}")
    expected = {name: r[2] for name, r in wrong_requests.items()} | {"a body that stalls": 408}
    check(
        statuses == expected and all(isinstance(m, str) and m for m in messages.values()),
        "each wrong request gets its 4xx status and a message",
    )
    check(predict(client, png(good)).status_code == 200, "and the server keeps serving")

    burst = [png(image) for image in test_images[:32]]
    began = time.perf_counter()
    with ThreadPoolExecutor(max_workers=8) as pool:
        responses = list(pool.map(lambda body: predict(client, body), burst))
    burst_seconds = time.perf_counter() - began
    startup_seconds = server.startup_s
    good_png = png(good)
    request_ms = 1000 * time_it(lambda: predict(client, good_png))  # one request at a time
    answered = [r.json()["index"] if r.status_code == 200 else -1 for r in responses]
    print(f"burst: {len(responses)} answers, statuses {sorted({r.status_code for r in responses})}")
    check(
        answered == eager_logits[:32].argmax(1).tolist(),
        "32 concurrent requests are all answered, with the classes eager predicts",
    )
    silent_seconds = silent.result()
    server_log = server.output()
check(server.process.poll() is not None and leftovers(SERVER) == [], "the server is gone")
check("Traceback" not in server_log, "it logged no traceback", measured=server_log[-300:] or "-")

# %% tags=["nbval-ignore-output"]
print(f"the server answered /health {startup_seconds:.2f} s after it was started")
print(f"the stalled body was answered {slow_status} after {slow_seconds:.2f} s")
print(f"a connection that sent nothing was closed after {silent_seconds:.2f} s")
print(f"32 concurrent requests took {burst_seconds:.2f} s ({32 / burst_seconds:.0f} per second)")
model_ms = table.loc["ONNX Runtime", "ms, batch 1"]
print(f"one request, round trip: {request_ms:.2f} ms, of which the model: {model_ms:.2f} ms")

# %%
check(
    startup_seconds < 10,
    "the server starts in seconds",
    measured=f"{startup_seconds:.2f} s",
    timing=True,
)
check(
    1.9 < slow_seconds < 6,
    "a stalled body is cut off by the server's 2 s limit",
    measured=f"{slow_seconds:.2f} s",
    timing=True,
)
check(
    4.9 < silent_seconds < 10,
    "a connection that sends no request is closed by the server's 5 s header deadline",
    measured=f"{silent_seconds:.2f} s",
    timing=True,
)
check(
    request_ms > 3 * model_ms,
    "a request's HTTP round trip and PNG decoding cost more than the model itself",
    measured=f"{request_ms / model_ms:.0f}×",
    timing=True,
)

# %% [markdown]
# What to notice:
#
# - Every wrong request got a status and a message a client can act on, and a 500 never
#   appeared; the image's size and mode were checked from the PNG header before its pixels were
#   decoded, a huge body was refused while it was being read (so it never filled the server's
#   memory), and a stalled body or a silent connection was cut off by its time limit instead of
#   holding one of the 32 connections.
# - The burst was answered request by request: each `session.run` saw one image. Where one call
#   has a large fixed cost (a GPU kernel launch, ATen's convolutions on one image: the routes
#   with a large *batching gain* above), servers use **dynamic batching**: wait a few
#   milliseconds, stack the requests that arrived into one batch, run it once and answer each
#   request from its row. The program's dynamic batch dimension is what makes that possible.
#   This server runs float32 ONNX Runtime, the float route with the smallest gain, and a request spends most
#   of its time in HTTP and PNG decoding, not in the model (the check above): measure before
#   adding a batcher.
# - For production, add what this sketch leaves out: several worker processes
#   (`uvicorn --workers` or a container per core), authentication, metrics, and a reverse proxy
#   in front (nginx, a cloud load balancer) that limits connections and requests per client and
#   buffers slow uploads: the time limits above bound how long one connection is held, not how
#   many a single client opens. Servers built for models do the batching for you: **NVIDIA
#   Triton Inference Server** (ONNX, TensorRT, PyTorch backends; dynamic batching and model
#   versions by configuration), **LitServe** (Python, FastAPI-based, with batching and workers),
#   Ray Serve, KServe. **TorchServe**, which much older code uses
#   (`torch-model-archiver`, `.mar` files), is in "Limited Maintenance": no planned updates, bug
#   fixes or security patches.

# %% [markdown]
# ## Take the model to phones and edge devices
#
# On a phone, a microcontroller or an embedded board there is no Python and little memory. The
# PyTorch route is **ExecuTorch**: start from the same `torch.export` program, lower it with
# `executorch.exir.to_edge_transform_and_lower(exported, partitioner=[XnnpackPartitioner()])`
# (XNNPACK for CPUs; Core ML, Vulkan, Qualcomm and others for accelerators), then
# `.to_executorch()` writes a `.pte` file that a small C++ runtime runs on Android, iOS and
# embedded Linux. Quantize for such targets first (int8, see [10](10_speedups_inference_recipes.ipynb#Quantize-to-int8-for-CPU-inference)). ExecuTorch
# is not installed here, so this notebook does not run it. It replaces the older PyTorch Mobile
# (`torch.jit` models saved for the lite interpreter with `_save_for_lite_interpreter`), which is
# no longer developed. ONNX Runtime Mobile and a browser (ONNX Runtime Web) are the ONNX route.

# %% [markdown]
# ## Old code you will meet
#
# | old form | write today | why |
# |---|---|---|
# | `torch.jit.trace(model, x)` / `torch.jit.script(model)`, `.save(path)` | `torch.export.export(model, (x,), dynamic_shapes=...)`, `torch.export.save` | TorchScript is deprecated and warns; scripting fails on today's transforms; a trace silently freezes control flow |
# | `torch::jit::load("model.pt")` in C++ | `torch::inductor::AOTIModelPackageLoader("model.pt2")` from `aoti_compile_and_package` | compiled ahead of time, no TorchScript interpreter |
# | `torch.onnx.export(model, x, f, dynamic_axes={"input": {0: "batch"}})` (TorchScript-based) | `torch.onnx.export(model, (x,), dynamo=True, dynamic_shapes=({0: Dim("batch")},))` | the exporter built on `torch.export` is the default since torch 2.9 |
# | `torch.save(model, path)` to ship a model | a program (`.pt2`, ONNX) for serving; `state_dict` + code for training | a pickled model needs the same code and `weights_only=False` to load |
# | TorchServe `.mar` archives, `torch-model-archiver` | FastAPI/LitServe for small services, Triton for large ones | TorchServe gets no more updates or security patches |
# | PyTorch Mobile, `_save_for_lite_interpreter` | ExecuTorch (`.pte`) | PyTorch Mobile is no longer developed |

# %% [markdown]
# ## Exercises

# %% [markdown]
# ### Exercise 1 · Accept JPEG as well as PNG
#
# Phones send JPEG. Set `read_image` to a function `(body, content_type)` for a server that
# returns the image as a `uint8` array of shape `(3, 32, 32)` (RGB, channels first) for a 32×32
# PNG (`image/png`) or JPEG (`image/jpeg`), raises `HTTPException(415, ...)` for any other
# content type, and `HTTPException(400, ...)` for an empty body or bytes that are not an image.
# The check sends it a PNG and a JPEG of the same picture and compares the pixels, then three
# wrong requests.
#
# <details><summary>Hint 1</summary>
#
# Refuse what is cheap to refuse first: the content type, an empty body, then what the image's
# header tells you (its format, size and mode), and decode the pixels last. Anything the decoder
# raises on bad bytes should become a 400, not a crash.
# </details>
#
# <details><summary>Hint 2</summary>
#
# The server's `decode` in "Write an inference server" does this for PNG alone: `Image.open`
# reads only the header, and its `formats=` lists the formats it may accept. PIL's pixels come
# channels last.
# </details>

# %%
read_image = ...  # a function (body: bytes, content_type: str) -> np.ndarray

# %%
ch12.exercise_1(read_image)


# %% [markdown]
# #### Solution


# %% tags=["solution"]
# Solution: open it once you have tried. It uses its own names, so your answer stays as it is.
def solution_read_image(body: bytes, content_type: str) -> np.ndarray:
    """PNG or JPEG bytes → uint8 array (3, 32, 32); HTTPException 415 or 400 otherwise."""
    if content_type not in ("image/png", "image/jpeg"):
        raise HTTPException(415, f"send image/png or image/jpeg, not {content_type!r}")
    if not body:
        raise HTTPException(400, "empty body")
    try:
        image = Image.open(io.BytesIO(body), formats=["PNG", "JPEG"])  # reads the header only
    except Exception:
        raise HTTPException(400, "the body is not a PNG or JPEG image") from None
    if image.size != (32, 32):  # before decoding: a huge image is refused unread
        raise HTTPException(400, f"expected 32×32, got {image.width}×{image.height}")
    if image.mode not in ("L", "LA", "P", "RGB", "RGBA", "CMYK"):  # what converts faithfully
        raise HTTPException(400, f"unsupported image mode {image.mode}")  # e.g. 16-bit grey
    try:
        pixels = np.asarray(image.convert("RGB"))
    except Exception:
        raise HTTPException(400, "the image is damaged") from None
    return pixels.transpose(2, 0, 1).copy()


ch12.exercise_1(solution_read_image)

# %% [markdown]
# ### Exercise 2 · Export for a batching server
#
# A server that batches requests sends at most 64 images at a time. Fill in `bounded`: `model`
# exported with `torch.export.export` so that its batch dimension runs from 1 to 64. The check
# runs the program on batches of 1 and 64 and expects a batch of 65 to be refused by the
# program's guard.
#
# <details><summary>Hint 1</summary>
#
# Export fixes every size to the example's unless you mark the dimension dynamic, and a dynamic
# dimension can carry bounds, which the program then guards.
# </details>
#
# <details><summary>Hint 2</summary>
#
# The section "Export the model with `torch.export`" exports with a dynamic batch of up to 2048;
# only the bounds change. The pitfall after it says which example batch to pass.
# </details>

# %%
bounded = ...  # torch.export.export(model, ..., dynamic_shapes=...)

# %%
ch12.exercise_2(bounded)

# %% [markdown]
# #### Solution

# %% tags=["solution"]
# Solution: open it once you have tried. It uses its own names, so your answer stays as it is.
solution_batch = Dim("batch", min=1, max=64)
solution_bounded = torch.export.export(model, (example,), dynamic_shapes=({0: solution_batch},))
ch12.exercise_2(solution_bounded)

# %% [markdown]
# ## Summary
#
# - Ship a **program** for inference (pre-processing and class names inside), a `state_dict` plus
#   code for training; `torch.export` records one (`Dim` for a dynamic batch, an example batch of
#   at least 2) and refuses only branches on tensor values: other Python values are frozen in
#   silently. The `.pt2` program loads without the model's code and guards its inputs.
# - TorchScript (`torch.jit.trace/script`) is deprecated: recognise it, export instead.
# - ONNX (`torch.onnx.export(..., dynamo=True)`, `onnx.checker`) runs in ONNX Runtime within
#   1e-4 of eager and answers one image faster; AOTInductor compiles a `.pt2` package ahead of
#   time for Python or C++, for one device and CPU instruction set, and does **not** check its
#   inputs: the caller does.
# - For half precision, convert the model's pre-processing too; for int8, quantize the exported
#   program (PT2E) or the ONNX file, statically for a CNN (dynamic int8 made this one slower),
#   and time it: 10's PT2E int8 model exports again and compiles with freezing on.
# - A FastAPI + uvicorn server on 127.0.0.1, started and stopped by `helpers.serve.serve`,
#   answers real images correctly and wrong ones with 415/400/413/408 and a message, limits its
#   connections and how long each is held, reads only 8-bit PNGs, and exits with its parent; batch requests dynamically
#   where a call has a fixed cost, or use Triton/LitServe; ExecuTorch for phones.
#
# Next: [13 · Reproducibility and debugging](../13_reproducibility_debugging.ipynb).
