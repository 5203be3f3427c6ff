# %% [markdown]
# # 12 · Deployment: the CNN outside the notebook
#
# [![Open In Colab](https://colab.research.google.com/assets/colab-badge.svg)](https://colab.research.google.com/github/pytorch-cookbook/pytorch-cookbook/blob/main/notebooks/12_deployment.ipynb)
#
# You take the trained CIFAR2 CNN out of the notebook: you save it in three forms (a
# `state_dict`, a `torch.export` program, an ONNX file), check that each still gives the model's
# answers, and put the ONNX file behind a small web server that you start, query and stop from
# a cell.
#
# **You will be able to:**
# - say what a `state_dict`, a `.pt2` program and an ONNX file each hold, and what it takes to
#   run each
# - export the CNN with `torch.export` with a dynamic batch size, save it as a `.pt2` file, load
#   it back and check it against the model
# - export the CNN to ONNX, run it with ONNX Runtime, and compare its logits with the model's
#   within a tolerance
# - write a small inference server, start it, send it a real request and a bad one, and stop it
# - list what a server needs before it can face the internet
#
# **Before you start:** a model's `state_dict`, saved and loaded into a model built by the same
# code, and `eval()` ([04](04_modules.ipynb)); the CIFAR2 images as `uint8` tensors, a Dataset
# and a DataLoader ([05](05_datasets_dataloaders.ipynb)); softmax ([06](06_losses.ipynb)); the
# training loop with AdamW and a one-cycle schedule, evaluation with `torch.inference_mode()`,
# and checkpoints ([07](07_training_loop.ipynb)).
# Python: decorators and `async def` ([00](00_python.ipynb#Functions-are-values:-lambda,-closures,-decorators)); `argparse`, `__main__`
# and `raise ... from None` ([00](00_python.ipynb#Scripts:-__main__,-argparse,-try-and-except)).
#
# **Cookbook:** [12 · Deployment: recipes](cookbook/12_deployment_recipes.ipynb) (TorchScript code you will meet, the export errors, a hardened server tested with wrong, slow and concurrent requests, phones with ExecuTorch) and [12 · Deployment routes compared](cookbook/12_deployment_routes_recipes.ipynb) (AOTInductor packages, int8 ONNX files, half-precision models, the speed and size of every route) hold the chapter's recipes, for when you need one.
#
# **Study time:** about 80 min: 2,283 words of text at 120 a minute, 209 lines of code at 10 a minute, 21 code cells to run at 1 minute each (reading what they print), 2 exercises at 10 minutes each.
#
# **Run time:** about 20 s on a 2-core CPU · GPU optional.

# %%
import sys

if (
    "google.colab" in sys.modules
):  # Colab: install the course's helpers and what the notebooks import
    import subprocess

    spec = "pytorch-cookbook[notebooks] @ git+https://github.com/pytorch-cookbook/pytorch-cookbook"
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", spec], check=True)

import json
import shutil
from pathlib import Path

import httpx
import matplotlib.pyplot as plt
import numpy as np
import onnxruntime as ort
import torch
from torch import nn
from torch.export import Dim
from torch.utils.data import DataLoader

from helpers.check import check, expect_error
from helpers.datasets import ImageTensors
from helpers.diagrams.routes import draw_routes
from helpers.env import setup
from helpers.exercises import lesson12
from helpers.images import channel_stats, load_cifar2, png_bytes
from helpers.models import small_cnn
from helpers.plot import show_images
from helpers.serve import serve

device = setup(seed=0)
RUN = Path("runs/12_deployment")  # what this lesson writes: made anew on every run
shutil.rmtree(RUN, ignore_errors=True)
RUN.mkdir(parents=True)

# %% [markdown]
# ## A trained model, and what its `state_dict` leaves out
#
# A model is useful where it answers: behind a web page, in a phone app, in a program written
# in C++. None of those runs your notebook. **Deployment** is taking the trained network out of
# the notebook in a form that runs there, and checking that it still gives the same answers.
#
# First a model worth shipping: the course's CNN, trained for one epoch with lesson 07's loop
# (AdamW, a one-cycle schedule, no augmentation), in batches of 128 to be quick on a CPU. One
# epoch is enough here. After training, everything runs on the CPU in evaluation mode:
# deployment means inference, and files made from the model on the CPU run on machines without
# a GPU.

# %%
train_images, train_labels, classes = load_cifar2("train")
test_images, test_labels, _ = load_cifar2("test")
names = [c.split("_", 1)[1] for c in classes]  # "0_airplane" -> "airplane"
mean, std = channel_stats(train_images)
loader = DataLoader(ImageTensors(train_images, train_labels), batch_size=128, shuffle=True)

torch.manual_seed(0)
model = small_cnn(mean, std, width=16).to(device)
optimizer = torch.optim.AdamW(model.parameters(), lr=5e-3, weight_decay=5e-4)
scheduler = torch.optim.lr_scheduler.OneCycleLR(optimizer, max_lr=5e-3, total_steps=len(loader))
loss_fn = nn.CrossEntropyLoss(label_smoothing=0.1)
model.train()
for images, labels in loader:  # one epoch: 07's five lines, and the schedule
    images, labels = images.to(device), labels.to(device)
    loss = loss_fn(model(images), labels)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    scheduler.step()

model = model.cpu().eval()  # from here on: the CPU, evaluation mode
with torch.inference_mode():
    eager_logits = model(test_images)  # "eager": the model run as Python code, layer by layer
accuracy = (eager_logits.argmax(dim=1) == test_labels).float().mean().item()

# %% tags=["nbval-ignore-output"]
print(f"test accuracy after one epoch: {accuracy:.4f}")

# %%
check(accuracy > 0.9, "one epoch makes a model worth shipping: over 90% of the test images right")

# %% [markdown]
# The first form you know from lesson 04: the `state_dict`, a dictionary from each parameter's
# and buffer's name to its tensor. It is the form to keep while you train (07's checkpoints).
# But it holds tensors only. To use it, whoever receives it needs the Python code that builds
# the model, and every argument that code took. The CNN's `mean` and `std` are such arguments:
# its `Normalize` layer (layer 1) keeps them as plain numbers, not as tensors, so the
# `state_dict` does not save them.

# %%
torch.save(model.state_dict(), RUN / "cifar2_state_dict.pt")
state = torch.load(RUN / "cifar2_state_dict.pt", weights_only=True)
print("tensors in the state_dict:", len(state), "| the first two:", list(state)[:2])
print("entries of layer 1, Normalize:", [key for key in state if key.startswith("1.")])
print("its mean, kept in the module only:", model[1].mean)

rebuilt = small_cnn(mean, std, width=16)  # the receiver needs this code, and mean and std
rebuilt.load_state_dict(state)
rebuilt.eval()
with torch.inference_mode():
    same = torch.equal(rebuilt(test_images), eager_logits)
check(same, "the model's code, its arguments and the state_dict give back the same model")

# %% [markdown]
# That is fine inside one project. A server, a phone or a C++ program should not need your
# Python class and its arguments. The next two forms hold the computation itself.

# %% [markdown]
# ## Export a program with `torch.export`
#
# `torch.export.export(model, example_inputs)` runs `forward` once on the example and records
# every PyTorch operation it calls into a graph: an `ExportedProgram`, with the weights inside.
# It runs on "fake" tensors, which have the example's shape and dtype but no data, so it is
# quick. Python's `if`s and loops run while it records, and only the operations they chose are
# kept.
#
# Every size is fixed to the example's unless you mark it **dynamic**. A server gets 1 image or
# 100, so the batch dimension must be free: `Dim("batch", min=1, max=2048)` names dimension 0
# and bounds it. `torch.export.save` writes the program to a `.pt2` file; `extra_files` adds
# files of your own to it, here the class names, so that an answer can say "airplane" rather
# than 0 (`json.dumps` writes the list as JSON text, `json.loads` reads it back).

# %%
example = test_images[:8].clone()  # a copy: the file keeps the example, not all 2,000 images
batch = Dim("batch", min=1, max=2048)
# the inputs as a tuple, (example,) for one; dynamic_shapes: per input, {dimension: Dim}
exported = torch.export.export(model, (example,), dynamic_shapes=({0: batch},))
torch.export.save(exported, RUN / "cifar2.pt2", extra_files={"classes.json": json.dumps(names)})

# Each graph node has an .op (its kind: "placeholder" an input, "call_function" an operation,
# "output") and a .target (for an operation, which one).
operations = [str(node.target) for node in exported.graph.nodes if node.op == "call_function"]
print("operations recorded:", len(operations))
print("the first three:", operations[:3])
print("batch sizes it takes:", [str(r) for r in exported.range_constraints.values()])

# %% [markdown]
# The graph starts where the model starts: it checks that the input is `uint8`, converts it to
# float and scales it by 1/255, then normalises. `VR[1, 2048]` is the range of the batch
# dimension. Loading is the other half: `torch.export.load` reads the file back, and `.module()`
# turns the program into something you call like a model. No `small_cnn`, no `mean` and `std`
# needed.

# %%
extra = {"classes.json": ""}  # the extra files to read back, filled in by load
program = torch.export.load(RUN / "cifar2.pt2", extra_files=extra).module()
print("classes shipped with it:", json.loads(extra["classes.json"]))
with torch.inference_mode():
    program_logits = program(test_images)
check(
    torch.equal(program_logits, eager_logits),
    "the loaded program gives exactly the model's logits on the 2,000 test images",
)

# %% [markdown]
# Exactly, bit for bit: the program runs the same PyTorch kernels as the model did.
#
# The program also **checks its inputs**. Each assumption the export made (the batch range,
# 3 channels of 32 × 32 pixels, `uint8`) is checked at every call, a **guard**, and a call that
# breaks one fails with a message instead of computing garbage. The usual mistake is one image
# without its batch dimension:

# %%
with expect_error(AssertionError, match="Guard failed"):
    program(test_images[0])  # shape (3, 32, 32): dimension 1 is 32, not 3 channels
with torch.inference_mode():
    print("test_images[:1], a batch of one:", tuple(program(test_images[:1]).shape))

# %% [markdown]
# One mistake happens at export time. The natural example is one image, but export treats a
# size of 1 as special (such a dimension can broadcast, lesson 01), fixes it, and then refuses
# to call it dynamic. The error's type, `UserError`, is torch.export's kind of `RuntimeError` (a
# subclass of it), so `expect_error(RuntimeError)` catches it:

# %%
with expect_error(RuntimeError, match="Constraints violated"):
    torch.export.export(model, (test_images[:1],), dynamic_shapes=({0: batch},))

# %% [markdown]
# The fix: export with an example batch of 2 or more (above: 8); `min=1` still lets the program
# take one image. The cookbook's recipe
# [Export the model with `torch.export`](cookbook/12_deployment_recipes.ipynb#Export-the-model-with-torch.export)
# shows the other export error you will meet, a Python `if` on a tensor's values, and what
# export freezes silently.

# %% [markdown]
# ## Run it without PyTorch: ONNX Runtime
#
# A `.pt2` program still needs PyTorch to run, and `torch.export.save`'s documentation warns
# that a file saved by one version may not load in a newer one. **ONNX** (Open Neural Network
# Exchange) is an open file format for models, read by many runtimes. The most used,
# **ONNX Runtime**, runs an ONNX file from Python, C++, C#, Java or JavaScript, on phones and in
# browsers, without PyTorch.
#
# `torch.onnx.export(..., dynamo=True)` makes one (Dynamo is the part of PyTorch that reads a
# model's Python code into a graph, under both `torch.export` and `torch.compile`): it exports
# with `torch.export` (same example,
# same dynamic batch), then translates each PyTorch operation into ONNX operators. The input
# and output get names, which the runtime uses; the class names go into the file's metadata, a
# dictionary of strings.

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
onnx_program.model.metadata_props["classes"] = ",".join(names)
onnx_program.save(RUN / "cifar2.onnx", external_data=False)  # one file, weights inside

# %% [markdown]
# ONNX Runtime runs the file in an `InferenceSession`. It takes and returns NumPy arrays: a
# dictionary from input names to arrays goes in, a list of outputs comes out (`None` asks for
# all of them). `(a,) = a_list` unpacks a list that must hold exactly one item (an error
# otherwise), which a one-input, one-output model's lists do.

# %%
session = ort.InferenceSession(str(RUN / "cifar2.onnx"), providers=["CPUExecutionProvider"])
(model_input,) = session.get_inputs()
print("input:", model_input.name, model_input.type, model_input.shape)
print("classes from the metadata:", session.get_modelmeta().custom_metadata_map["classes"])
(onnx_logits,) = session.run(None, {"images": test_images.numpy()})
difference = np.abs(onnx_logits - eager_logits.numpy()).max()
# NumPy's arrays have the same methods, with `axis` for `dim`; .mean() takes booleans as 0/1
same_class = (onnx_logits.argmax(axis=1) == eager_logits.argmax(dim=1).numpy()).mean()

# %% tags=["nbval-ignore-output"]
print(f"largest difference from the model's logits: {difference:.1e}")
print(f"same class as the model for {same_class:.2%} of the test images")

# %%
check(difference <= 1e-4, "ONNX Runtime's logits equal the model's within 1e-4")
check(same_class >= 0.999, "and give the same class for at least 99.9% of the test images")

# %% [markdown]
# Not bit for bit this time. ONNX Runtime has its own kernels, which add up the numbers of a
# convolution in another order, and float32 sums differ in their last bits with the order. So
# compare across runtimes with a tolerance, not `torch.equal`: the logits within 1e-4 here, and
# the classes the same. (On a GPU, install `onnxruntime-gpu` and ask for
# `providers=["CUDAExecutionProvider"]`.)
#
# Three files now hold the same CNN. What each holds, read from the file, and what it takes to
# run it:

# %%
draw_routes(
    {
        "state_dict": RUN / "cifar2_state_dict.pt",
        "program": RUN / "cifar2.pt2",
        "onnx": RUN / "cifar2.onnx",
    }
)
plt.show()

# %% [markdown]
# The three files are about the same size: the weights are most of each. The ONNX file has
# fewer operators than the program has operations: the program also records bookkeeping (its
# input check, copies of constants), and the ONNX exporter folded each batch norm into the
# convolution before it, whose weights it rescaled.

# %% [markdown]
# ## Serve the model over HTTP
#
# A **web service** is a program that waits for requests and answers them. A client sends an
# HTTP request: a method (`GET` to read, `POST` to send data), a path such as `/predict`,
# headers (`content-type` says what the body is) and a body, here the bytes of a PNG image. The
# server answers with a **status code** (200 when all went well, 4xx when the request is wrong,
# 5xx when the server failed) and a body, here JSON. **FastAPI** is a Python library that maps
# paths to functions; **uvicorn** is the server that runs them.
#
# The server below fits on one screen. It loads the ONNX file, so it imports neither PyTorch nor
# this course's code. For each `POST /predict` it decodes the PNG with Pillow, runs the session
# and answers with the class; it answers 400 with a message when the body is not a 32 × 32 PNG.
# `GET /health` answers once the model is loaded, so whoever starts the server knows when it is
# ready. A server is a program of its own, started as a process of its own, so it lives in a
# file: `%%writefile` on a cell's first line is a Jupyter command that saves the cell to the
# file named instead of running it.

# %%
# %%writefile runs/12_deployment/server.py
"""CIFAR2 over HTTP: POST the bytes of a 32×32 PNG to /predict, get its class as JSON.

    python server.py cifar2.onnx --port 8000

Needs onnxruntime, numpy, pillow, fastapi and uvicorn: not torch.
"""

import argparse  # Python's reader of command-line arguments
import io

import numpy as np
import onnxruntime as ort
import uvicorn
from fastapi import FastAPI, HTTPException, Request
from PIL import Image

parser = argparse.ArgumentParser()  # reads what follows `python server.py` on its line
parser.add_argument("model", help="an .onnx file with a 'classes' metadata entry")
parser.add_argument("--port", type=int, required=True)
args = parser.parse_args()  # args.model and args.port

session = ort.InferenceSession(args.model, providers=["CPUExecutionProvider"])
classes = session.get_modelmeta().custom_metadata_map["classes"].split(",")
app = FastAPI()


# A line starting with @ above a function is a decorator: here it hands the function to
# FastAPI, which then calls it for each GET request to /health.
@app.get("/health")
def health() -> dict:
    return {"status": "ok"}  # answered once the model above is loaded


# `async def` makes a function that can wait with `await`: while the body of one request
# arrives, the server goes on with the others.
@app.post("/predict")
async def predict(request: Request) -> dict:
    body = await request.body()
    try:
        image = Image.open(io.BytesIO(body), formats=["PNG"])  # BytesIO: bytes as a file
        pixels = np.asarray(image.convert("RGB"))  # (height, width, 3): channels last
    except Exception:  # any error Pillow raises on bytes that are not a PNG image
        # `from None`: raise this error alone, without Pillow's error chained to it
        raise HTTPException(400, "send the bytes of a PNG image as the body") from None
    if pixels.shape != (32, 32, 3):
        raise HTTPException(400, f"expected a 32×32 image, got {image.width}×{image.height}")
    # NumPy's transpose with all axes named is torch's permute: (3, 32, 32), then [None]
    batch = pixels.transpose(2, 0, 1)[None]  # (1, 3, 32, 32) uint8, as the model takes it
    (logits,) = session.run(None, {"images": batch})
    index = int(logits[0].argmax())
    return {"class": classes[index], "index": index}


if __name__ == "__main__":
    uvicorn.run(app, host="127.0.0.1", port=args.port, log_level="warning")


# %% [markdown]
# `host="127.0.0.1"` means this machine only: nothing on the network can reach the server.
#
# `helpers.serve.serve` starts a command with `{port}` replaced by a free port, waits until
# `/health` answers, and stops the process when the `with` block ends, also when something in it
# fails: a server left running holds its port and its memory until someone finds and stops it.
# The client is `httpx`, a Python HTTP client, and each image goes as the bytes of a PNG file
# (`helpers.images.png_bytes`, with Pillow, as a client program would). First one real request, a test image the model
# classifies as an airplane with confidence; then a bad one, a 64 × 64 image; then twelve test
# images for the picture below.

# %%
def predict(client: httpx.Client, body: bytes) -> httpx.Response:
    return client.post("/predict", content=body, headers={"content-type": "image/png"})


# &: element-wise "and" of two boolean tensors; nonzero(): a row (its indices) per True, so
# [0, 0] is the first True's position
sure = (eager_logits.softmax(dim=1)[:, 0] > 0.9) & (test_labels == 0)
airplane = test_images[int(sure.nonzero()[0, 0])]  # the first sure, right airplane
shown = torch.arange(0, 2000, 167)  # 12 test images: 6 airplanes, then 6 automobiles
# sys.executable: the path of the Python that runs this notebook, so the server uses it too
command = [sys.executable, RUN / "server.py", RUN / "cifar2.onnx", "--port", "{port}"]
with (  # two things opened in one `with`: both are closed when the block ends
    serve(command, ready="/health") as server,
    httpx.Client(base_url=server.url, timeout=10) as client,
):
    good = predict(client, png_bytes(airplane))
    print("an airplane:", good.status_code, good.json())
    bad = predict(client, png_bytes(torch.zeros(3, 64, 64, dtype=torch.uint8)))
    print("a 64×64 image:", bad.status_code, bad.json())
    answers = [predict(client, png_bytes(image)).json()["index"] for image in test_images[shown]]
    server_log = server.output()

check(
    good.status_code == 200 and good.json()["class"] == "airplane",
    "the airplane: 200, and the class airplane",
)
check(
    bad.status_code == 400 and "64×64" in bad.json()["detail"],
    "the wrong size: 400, with a message that names the size it got",
)
check(
    answers == eager_logits[shown].argmax(dim=1).tolist(),
    "the server answers the model's class for each of the 12 images",
)
check(server.process.poll() is not None, "the server stopped when the block ended")  # None: runs
check("Traceback" not in server_log, "and it logged no error")

# %% [markdown]
# FastAPI turned the `HTTPException` into a JSON body with a `detail`, so the client reads what
# was wrong. Here are the twelve images, each titled with the server's answer; the top row are
# airplanes, the bottom row automobiles:

# %%
figure = show_images(test_images[shown], answers, names, ncols=6)
figure.suptitle("Twelve test images, titled with the server's answers", fontsize=11)
plt.show()

# %% [markdown]
# Where a title is wrong, the model is wrong, not the server: the check above compared every
# answer with the model's own class.

# %% [markdown]
# ## What a server you can expose adds
#
# This server is a sketch: fine on 127.0.0.1 for a demonstration, not on a network where anyone
# can send anything. The cookbook's recipe
# [Write an inference server](cookbook/12_deployment_recipes.ipynb#Write-an-inference-server)
# is the same server made safe to expose, and its next recipe tests it with wrong, slow and
# concurrent requests. What it adds, in short:
#
# - **limits**: a body over 64 kB (413) or one that arrives too slowly (408) is cut off;
# - **checks before decoding**: the content type (415), then the PNG's size and bits per pixel;
# - **fair sharing**: at most 31 requests served at once (the 32nd open connection gets 503),
#   the model run in a thread.
#
# Read both recipes when your server has to leave 127.0.0.1; the second ends with what a
# production server adds on top (several workers, authentication, a reverse proxy).

# %% [markdown]
# ## Exercises

# %% [markdown]
# ### Exercise 1 · A program for batches of up to 32
#
# A server that groups requests sends the model at most 32 images at a time. Fill in `bounded`:
# `model` exported with `torch.export.export` so that its batch dimension runs from 1 to 32.
# The check runs it on batches of 1 and 32, compares its logits with the trained `model`'s,
# and expects a batch of 33 to be refused by the program's guard.
#
# <details><summary>Hint 1</summary>
#
# Export fixes every size to the example's unless you mark the dimension dynamic, and a dynamic
# dimension carries the bounds that the guard checks.
# </details>
#
# <details><summary>Hint 2</summary>
#
# Start from the export in "Export a program with `torch.export`": only the upper bound
# changes. Keep an example batch of at least 2 (the mistake at the end of that section).
# </details>

# %%
bounded = ...  # torch.export.export(model, ..., dynamic_shapes=...)

# %%
lesson12.exercise_1(bounded, model)

# %% [markdown]
# #### Solution

# %% tags=["solution"]
# Solution: open it once you have tried. It uses its own names, so your answer stays as it is.
solution_batch = Dim("batch", min=1, max=32)
solution_bounded = torch.export.export(model, (example,), dynamic_shapes=({0: solution_batch},))
lesson12.exercise_1(solution_bounded, model)


# %% [markdown]
# ### Exercise 2 · Answer with a probability
#
# The server answers with a class. A client often wants to know how sure the model is, too.
# Write `answer(session, image)`: it runs one `uint8` image of shape (3, 32, 32) through the
# ONNX Runtime `session` and returns a dictionary with the class name under `"class"` and the
# model's probability for that class (a number between 0 and 1) under `"probability"`. The
# check compares your answers with its own on 16 test images.
#
# <details><summary>Hint 1</summary>
#
# The session wants a batch as a NumPy array, under the input's name, and returns logits for
# each image of the batch. Lesson 06 turned logits into probabilities.
# </details>
#
# <details><summary>Hint 2</summary>
#
# Add the batch dimension before `.numpy()`, as the server did with `[None]`. Softmax goes over
# the two classes, not over the images: `torch.from_numpy` turns the logits into a tensor if you
# want PyTorch's `softmax`. The class with the largest probability is the class with the largest
# logit.
# </details>

# %%
def answer(
    session: ort.InferenceSession, image: torch.Tensor
) -> dict: ...  # run the session, then {"class": ..., "probability": ...}


# %%
lesson12.exercise_2(answer, session, test_images[:16], names)


# %% [markdown]
# #### Solution

# %% tags=["solution"]
# Solution: open it once you have tried. It uses its own names, so your answer stays as it is.
def solution_answer(session: ort.InferenceSession, image: torch.Tensor) -> dict:
    (logits,) = session.run(None, {"images": image[None].numpy()})
    probabilities = torch.from_numpy(logits).softmax(dim=1)[0]
    index = int(probabilities.argmax())
    return {"class": names[index], "probability": probabilities[index].item()}


lesson12.exercise_2(solution_answer, session, test_images[:16], names)

# %% [markdown]
# ## Summary
#
# - A `state_dict` holds tensors only: running it needs the model's code and its arguments. Keep
#   it for training; ship a program.
# - `torch.export.export(model, (example,), dynamic_shapes=...)` records the model as a program
#   with its weights; `Dim("batch", min=1, max=...)` frees the batch size (export with an example
#   batch of 2 or more). The `.pt2` file loads without the model's code, gives the same logits
#   and guards its inputs.
# - `torch.onnx.export(..., dynamo=True)` writes an ONNX file that ONNX Runtime runs without
#   PyTorch; compare its logits with a tolerance (1e-4 here) and its classes exactly.
# - A server is a program in its own file: load the model once, decode each request, answer with
#   JSON and a status code (400 and a message for a bad request), bind to 127.0.0.1, and start
#   and stop it with `helpers.serve.serve`.
# - Before a server faces the internet it needs limits on size and time, checks before
#   decoding and bounded connections: the cookbook's hardened server has them.
#
# Next: [13 · Reproducibility and debugging: a run that repeats, a run that learns](13_reproducibility_debugging.ipynb).
