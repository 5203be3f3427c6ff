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
# ONNX and run it with ONNX Runtime, and **serve it over HTTP** with FastAPI: a real server
# process, started on a free local port, queried with real, wrong and concurrent requests, and
# stopped. Every format is checked against the eager model. The chapter's
# [second cookbook notebook](12_deployment_routes_recipes.ipynb) compiles the model ahead of time
# with AOTInductor, shrinks it to int8 and float16, and times every route.
#
# **Prerequisites:** [04](../04_modules.ipynb) (`state_dict`), [05](../05_datasets_dataloaders.ipynb)
# (the CIFAR2 model that takes `uint8` images), [10](../10_speedups.ipynb) (timing).
#
# **Run time:** about 25 s on a 2-core CPU · GPU optional.

# %%
import sys

if (
    "google.colab" in sys.modules
):  # Colab: install the course's helpers and what the notebooks import
    import subprocess

    spec = "pytorch-cookbook[notebooks] @ git+https://github.com/pytorch-cookbook/pytorch-cookbook"
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", spec], check=True)

import contextlib
import io
import json
import random
import re
import shutil
import socket
import time
import warnings
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import numpy as np
import onnx
import onnxruntime as ort
import torch
from fastapi import HTTPException
from PIL import Image
from torch.export import Dim
from torch.fx.experimental.symbolic_shapes import GuardOnDataDependentSymNode

from helpers.bench import time_it
from helpers.check import check, expect_error
from helpers.env import quiet_logger, setup
from helpers.exercises import ch12
from helpers.images import channel_stats, load_cifar2, png_bytes
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
# | AOTInductor `.pt2` package ([next notebook](12_deployment_routes_recipes.ipynb#Compile-ahead-of-time-with-AOTInductor)) | `aoti_compile_and_package` | Python or C++ with libtorch, on the device and CPU instruction set it was built for |
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

# %% [markdown]
# ### Pitfall: `GuardOnDataDependentSymNode: Could not guard on data-dependent expression` from `torch.export`
#
# The other export error you will meet is data-dependent control flow. A model that rescales
# its input only when the maximum is above 1 has an `if` statement on a tensor's value:
# `torch.export` traces on fake tensors, which have shapes but no values, so the branch cannot be
# decided and export stops. Before raising, torch prints the graph it had traced so far to
# stderr (the notebook captures it here and lists its operations: the last one, `aten.item`, is
# the value Python asked for); the message ends by naming the line of `forward` that asked.
# With `strict=True` the same model fails with `torch._dynamo.exc.Unsupported: Data-dependent
# branching`; older versions worded it `UserError: Dynamic control flow is not supported at the
# moment. Please use functorch.experimental.control_flow.cond to explicitly capture the control
# flow` (strict export) or `DataDependentOutputException: aten._local_scalar_dense.default`.

# %%
class RescaleAbove1(torch.nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if x.max() > 1:  # a Python decision on a value
            return x / x.max()
        return x


partial_graph = io.StringIO()
# "Unable to find user code" is logged by the same failure: one line, left out here
with (
    quiet_logger("torch.fx.experimental.symbolic_shapes"),
    contextlib.redirect_stderr(partial_graph),
    expect_error(GuardOnDataDependentSymNode, match="data-dependent expression", lines=1) as caught,
):
    torch.export.export(RescaleAbove1(), (torch.rand(4) * 2,))
# the operations of the printed graph: the lines "name: type = torch.ops.aten.op(...)"
traced = re.findall(r"= torch\.ops\.([\w.]+)\(", partial_graph.getvalue())
print("the partial graph printed to stderr:", traced[: traced.index("aten.item.default") + 1])
# the message's last part: 'The following call raised this error:', the file and line, the code
print("the line it names:", str(caught.error).split("raised this error:")[1].split("\n")[2].strip())


# %% [markdown]
# The fix: make the branch depend on shapes or dtypes only (known at export time), or compute
# both results and pick with `torch.where(condition, a, b)`, which is a tensor operation like any
# other; for branches too costly to compute both, `torch.cond(pred, true_fn, false_fn,
# operands)` (a prototype feature, its documentation warns) records each branch as a subgraph
# and runs one when the program runs. Its branches take the same operands and return tensors of
# the same dtype and, as documented, the same shape (a branch that returns its input unchanged
# returns a copy: a branch's output may not be its input).

# %%
class RescaleAbove1Where(torch.nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.where(x.max() > 1, x / x.max(), x)


class RescaleAbove1Cond(torch.nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.cond(x.max() > 1, lambda x: x / x.max(), lambda x: x.clone(), (x,))


example_x = (torch.rand(4) * 2,)
with_where = torch.export.export(RescaleAbove1Where(), example_x)
with_cond = torch.export.export(RescaleAbove1Cond(), example_x)
for name, exported_program in {"torch.where": with_where, "torch.cond": with_cond}.items():
    graph = exported_program.graph
    print(f"{name}:", [str(n.target) for n in graph.nodes if n.op == "call_function"])
print("torch.cond's subgraphs:", [name for name, _ in with_cond.graph_module.named_children()])
eager = RescaleAbove1()
inputs = {"max above 1": torch.rand(4) * 2 + 1.5, "max below 1": torch.rand(4) * 0.5}
check(
    all(
        torch.equal(program.module()(x), eager(x))
        for program in (with_where, with_cond)
        for x in inputs.values()
    ),
    "both exported programs compute what eager computes, on inputs that take either branch",
)


# %% [markdown]
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
# an AOTInductor package loaded with `torch::inductor::AOTIModelPackageLoader`
# ([next notebook](12_deployment_routes_recipes.ipynb#Compile-ahead-of-time-with-AOTInductor)).

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
# ONNX Runtime runs the file in an `InferenceSession`; here with one thread, as the server below
# runs it. Creating the session also optimises the graph (constant folding, operator fusions):
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
# - no connection is closed with bytes still unread (`Lingering`): the server sends its answer
#   and the end of the stream, then reads and drops what the client still sends, until the
#   client closes or 2 s pass. A socket closed with unread bytes answers them with a TCP reset,
#   and the reset can destroy the answer before the client reads it: the client then sees
#   "connection reset by peer" instead of a 413;
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
LINGER_SECONDS = 2.0  # after a refusal, what the client still sends is read and dropped this long
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
        message = f"send a PNG as content-type image/png, not {content_type!r}"
        raise HTTPException(415, message, {"connection": "close"})  # its body is never read
    image = decode(await read_body(request))
    # inference off the event loop, so other requests are read meanwhile
    (logits,) = await run_in_threadpool(session.run, None, {"images": image})
    probabilities = np.exp(logits[0] - logits[0].max())
    probabilities /= probabilities.sum()
    index = int(probabilities.argmax())
    return {"class": classes[index], "index": index, "probabilities": probabilities.tolist()}


class Lingering:
    """A transport whose ``close()`` lingers: it sends what is left of the answer and then the end
    of the stream, and reads and drops what the client still sends until the client closes or
    LINGER_SECONDS pass. A socket closed with unread bytes answers them with a reset, and a reset
    can destroy the answer (the 413 to a large upload) before the client has read it."""

    def __init__(self, transport: asyncio.Transport, loop: asyncio.AbstractEventLoop) -> None:
        self.transport, self.loop, self.lingering = transport, loop, False

    def __getattr__(self, name: str) -> object:  # everything else is the transport's own
        return getattr(self.transport, name)

    def is_closing(self) -> bool:
        return self.lingering or self.transport.is_closing()

    def close(self) -> None:
        if self.is_closing():
            return
        try:
            self.transport.write_eof()  # sent after the buffered answer: the client reads it all
        except OSError:  # the client has gone already: nothing to linger for
            self.transport.close()
            return
        self.lingering = True
        self.transport.resume_reading()  # uvicorn pauses reading while a body waits
        self.loop.call_later(LINGER_SECONDS, self.transport.close)


class StrictConnections(H11Protocol):
    """uvicorn's HTTP/1.1 protocol, holding no connection for long: closed when it has not sent a
    request's headers HEADER_SECONDS after connecting (or after their first byte), and once a
    request is answered before its body was read (the client could trickle the rest for ever);
    every close lingers (see Lingering)."""

    deadline: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.Transport) -> None:
        super().connection_made(transport)
        self.transport = Lingering(transport, self.loop)  # what uvicorn's code closes
        self.deadline = self.loop.call_later(HEADER_SECONDS, self.headers_too_slow)

    def data_received(self, data: bytes) -> None:
        if self.transport.lingering:
            return  # read and dropped
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
    "a 64×64 PNG": (png_bytes(torch.zeros(3, 64, 64, dtype=torch.uint8)), "image/png", 400),
    "a 16-bit grey PNG": (png16(20000), "image/png", 400),
    "a truncated PNG": (png_bytes(good)[:200], "image/png", 400),
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
    answer = predict(client, png_bytes(good)).json()
    print(f"a test image of class {classes[test_labels[good_index]]}: {answer['class']}")
    check(answer["class"] == classes[model(good[None]).argmax()], "the server answers as eager")
    odd_case = predict(client, png_bytes(good), "Image/PNG").json()
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
    check(predict(client, png_bytes(good)).status_code == 200, "and the server keeps serving")

    burst = [png_bytes(image) for image in test_images[:32]]
    began = time.perf_counter()
    with ThreadPoolExecutor(max_workers=8) as pool:
        responses = list(pool.map(lambda body: predict(client, body), burst))
    burst_seconds = time.perf_counter() - began
    startup_seconds = server.startup_s
    good_png = png_bytes(good)
    request_ms = 1000 * time_it(lambda: predict(client, good_png))  # one request at a time
    one_image = {"images": test_images[:1].numpy()}
    model_ms = 1000 * time_it(lambda: session.run(None, one_image))  # the model alone, in here
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
#   with a large *batching gain* in the
#   [routes compared](12_deployment_routes_recipes.ipynb#Compare-the-routes:-latency,-agreement-and-size)),
#   servers use **dynamic batching**: wait a few
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
#   1e-4 of eager (a tolerance, not equality, across runtimes).
# - A FastAPI + uvicorn server on 127.0.0.1, started and stopped by `helpers.serve.serve`,
#   answers real images correctly and wrong ones with 415/400/413/408 and a message, limits its
#   connections and how long each is held, reads only 8-bit PNGs, and exits with its parent; batch requests dynamically
#   where a call has a fixed cost, or use Triton/LitServe; ExecuTorch for phones.
#
# Next: [12 · Deployment routes compared](12_deployment_routes_recipes.ipynb) (AOTInductor, int8,
# float16, and every route timed), then [13 · Reproducibility and debugging](../13_reproducibility_debugging.ipynb).
