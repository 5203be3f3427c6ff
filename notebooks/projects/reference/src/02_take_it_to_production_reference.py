# %% [markdown]
# # P2 · Take it to production: a reference solution
#
# **Try [the project](../02_take_it_to_production.ipynb) first.** This is one solution among
# many, kept apart so that nobody meets it by accident. It starts from capstone 1's model,
# retrained briefly here so that this notebook runs on its own, and does the five tasks of the
# brief: a faster loop, a step that needs less memory, an ONNX file checked against eager, a
# server queried over HTTP, and the run that does not learn, fixed. The last cell grades it with
# the same checker as yours.
#
# **Run time:** about 35 s on a 2-core CPU · GPU optional.

# %%
import sys

if (
    "google.colab" in sys.modules
):  # Colab: install the course's helpers and what the notebooks import
    import subprocess

    spec = "pytorch-cookbook[notebooks] @ git+https://github.com/pytorch-cookbook/pytorch-cookbook"
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", spec], check=True)

import os

os.environ.setdefault("TORCH_CPP_LOG_LEVEL", "ERROR")  # PyTorch's C++ log lines: errors only

import io
import json
import shutil
from pathlib import Path

import httpx
import numpy as np
import onnxruntime as ort
import torch
import torch.nn.functional as F
from PIL import Image
from torch import nn
from torch.export import Dim
from torch.profiler import ProfilerActivity, profile, record_function, schedule
from torch.utils.data import DataLoader, Dataset
from torchvision.transforms import v2

from helpers import capstone
from helpers.capstone.production import peak_mib, step_ms, trace_events
from helpers.check import check
from helpers.data import fetch
from helpers.env import setup
from helpers.serve import serve

device = setup(seed=0)
os.environ.setdefault("KINETO_LOG_LEVEL", "6")  # the profiler's own log lines: none
ROOT = fetch("cifar2")
RUN = Path("runs/p2_reference")
shutil.rmtree(RUN, ignore_errors=True)
RUN.mkdir(parents=True)


# %% [markdown]
# ## Capstone 1's model
#
# The model is capstone 1's reference `Net`: it takes `uint8` images and normalises them
# itself, with the training images' per-channel statistics. The training images are decoded
# once, as in capstone 1, and the model trains for 60 steps here (capstone 1 trained it for two
# epochs): the tasks below need a model, not a good one.

# %% tags=["nbval-ignore-output"]
class Net(nn.Module):
    def __init__(self, mean: list[float], std: list[float], width: int = 16) -> None:
        super().__init__()
        self.prepare = nn.Sequential(v2.ToDtype(torch.float32, scale=True), v2.Normalize(mean, std))
        layers, channels = [], 3
        for out in (width, 2 * width, 4 * width, 8 * width):
            layers += [
                nn.Conv2d(channels, out, 3, padding=1, bias=False),
                nn.BatchNorm2d(out),
                nn.ReLU(),
                nn.MaxPool2d(2),
            ]
            channels = out
        self.features = nn.Sequential(*layers)
        self.head = nn.Linear(channels * 2 * 2, 2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.features(self.prepare(x)).flatten(1))


def decode(path: Path) -> torch.Tensor:
    """A JPEG file as a uint8 tensor (3, H, W)."""
    with Image.open(path) as image:
        return v2.functional.pil_to_tensor(image.convert("RGB"))


classes = sorted(p.name for p in (ROOT / "train").iterdir() if p.is_dir())
files = sorted((ROOT / "train").rglob("*.jpg"))
images = torch.stack([decode(f) for f in files])
labels = torch.tensor([classes.index(f.parent.name) for f in files])
pixels = images.float() / 255
mean, std = pixels.mean(dim=(0, 2, 3)).tolist(), pixels.std(dim=(0, 2, 3)).tolist()
flip = v2.RandomHorizontalFlip()


def in_memory(seed: int = 0):
    """Batches of 64 from the decoded images, in a seeded random order, flipped at random."""
    order = torch.randperm(len(labels), generator=torch.Generator().manual_seed(seed))
    for start in range(0, len(order) - 63, 64):
        index = order[start : start + 64]
        yield flip(images[index]), labels[index]


torch.manual_seed(0)
model = Net(mean, std).to(device)
optimizer = torch.optim.AdamW(model.parameters(), lr=3e-3)
model.train()
for _, (x, y) in zip(range(60), in_memory(), strict=False):
    loss = F.cross_entropy(model(x.to(device)), y.to(device))
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
print(f"trained 60 steps; the last batch's loss: {loss.item():.3f}")

# %%
check(
    loss.item() < 0.5,
    "60 steps trained the model: the last batch's loss is under 0.5 (chance: ln 2 ≈ 0.69)",
    measured=f"{loss.item():.3f}",
)


# %% [markdown]
# ## 1 · Profile the loop, then make it faster
#
# The loop to speed up is capstone 1's first draft, the one most loops begin as: a Dataset that
# opens each JPEG with PIL in `__getitem__` and flips it, image by image, as torchvision's
# classic examples do.
# Lesson 10's profile: each phase of a step labelled with `record_function`, one warm-up step,
# then 8 profiled steps, and the trace exported for the checker.

# %%
class JpegFiles(Dataset):
    """Each image decoded from its file when asked for, and flipped at random."""

    def __init__(self, files: list[Path], classes: list[str]) -> None:
        self.files, self.classes = files, classes

    def __len__(self) -> int:
        return len(self.files)

    def __getitem__(self, i: int) -> tuple[torch.Tensor, int]:
        return flip(decode(self.files[i])), self.classes.index(self.files[i].parent.name)


PHASES = ["data", "forward", "backward", "optimizer"]


def profile_loop(batches, trace: Path, steps: int = 8, micro_batches: int = 1, memory=False):
    """Profile ``steps`` training steps (after 1 warm-up), phases labelled; export the trace.
    With ``micro_batches`` > 1, each batch's gradient is accumulated over that many slices."""
    activities = [ProfilerActivity.CPU]
    if device.type == "cuda":
        activities.append(ProfilerActivity.CUDA)
    plan = schedule(wait=0, warmup=1, active=steps, repeat=1)
    optimizer.zero_grad()  # the last step's gradients freed before the profile, not in it
    with profile(activities=activities, schedule=plan, profile_memory=memory) as prof:
        for _ in range(1 + steps):
            with record_function("data"):
                x, y = next(batches)
                x, y = x.to(device, memory_format=layout), y.to(device)
            optimizer.zero_grad()
            for xs, ys in zip(x.chunk(micro_batches), y.chunk(micro_batches), strict=True):
                with record_function("forward"):
                    loss = F.cross_entropy(model(xs), ys) / micro_batches
                with record_function("backward"):
                    loss.backward()
            with record_function("optimizer"):
                optimizer.step()
            if device.type == "cuda":
                torch.cuda.synchronize()  # the step's time is its work, not its launches
            prof.step()
    prof.export_chrome_trace(str(trace))
    return prof


def phase_ms(prof, steps: int = 8) -> dict[str, float]:
    """Each phase's milliseconds per profiled step."""
    totals = {e.key: e.cpu_time_total for e in prof.key_averages() if e.key in PHASES}
    return {phase: totals.get(phase, 0.0) / steps / 1000 for phase in PHASES}


seeded = torch.Generator().manual_seed(0)
first_draft = DataLoader(JpegFiles(files, classes), batch_size=64, shuffle=True, generator=seeded)
layout = torch.contiguous_format
before = profile_loop(iter(first_draft), RUN / "speed_before_1.json")

# %% tags=["nbval-ignore-output"]
print({phase: round(ms, 1) for phase, ms in phase_ms(before).items()})


# %% [markdown]
# Reading the JPEGs takes a large share of each step, and the forward and backward passes the
# rest. Two changes, the model and the batch size unchanged: the images decoded once (capstone
# 1's way, above), and the channels-last layout of lesson 10's ladder, which pays on some CPUs
# and not on others (compare the forward and backward phases of the two profiles). Another
# program running during one profile makes that loop look slower, so each loop is profiled
# five times, alternating with the other, and the fastest profile of each is kept: both get
# the same treatment, so the comparison stays fair (another program only adds time), and the
# table below shows every round.

# %%
def profiled(changed: bool, trace: Path):
    """Profile the first draft, or with ``changed`` the loop with both changes, into ``trace``."""
    global layout
    layout = torch.channels_last if changed else torch.contiguous_format
    model.to(memory_format=layout)
    return profile_loop(in_memory() if changed else iter(first_draft), trace)


ROUNDS = 5
profiles = {"before": [(before, RUN / "speed_before_1.json")], "after": []}
for round_ in range(1, ROUNDS + 1):
    for name in ("before", "after") if round_ > 1 else ("after",):
        trace = RUN / f"speed_{name}_{round_}.json"
        profiles[name].append((profiled(name == "after", trace), trace))
medians = {name: [step_ms(trace_events(t)) for _, t in rounds] for name, rounds in profiles.items()}
kept = {}
for name, rounds in profiles.items():  # the fastest profile of each, by its median step
    fastest = min(range(ROUNDS), key=medians[name].__getitem__)
    kept[name] = rounds[fastest][0]
    shutil.copy(rounds[fastest][1], RUN / f"speed_{name}.json")
before, after = kept["before"], kept["after"]
speed = {
    "change": "decode the JPEGs once into memory; channels-last layout",
    "before": "speed_before.json",
    "after": "speed_after.json",
    "before_ms": step_ms(trace_events(RUN / "speed_before.json")),
    "after_ms": step_ms(trace_events(RUN / "speed_after.json")),
}

# %% tags=["nbval-ignore-output"]
print("median step of each round, ms:")
for name, times in medians.items():
    print(f"  {name:>6}:", "  ".join(f"{ms:6.1f}" for ms in times))
for name, prof in kept.items():  # the two profiles kept: the checker reads these
    print(f"{name}:", {phase: round(ms, 1) for phase, ms in phase_ms(prof).items()})
print(f"median step: {speed['before_ms']:.1f} ms before, {speed['after_ms']:.1f} ms after")

# %%
check(
    speed["before_ms"] / speed["after_ms"] >= 1.25,
    "the loop is at least 1.25× faster",
    measured=f"{speed['before_ms'] / speed['after_ms']:.2f}×",
    timing=True,
)

# %% [markdown]
# ## 2 · A step's memory, and one lever
#
# The same profile with `profile_memory=True` records each allocation; the checker reads the
# peak of "Total Allocated" inside the steps. The lever is lesson 11's gradient accumulation:
# the batch of 64 goes through as 2 slices of 32, whose gradients add up to the same update,
# so only half the activations are alive at once.

# %% tags=["nbval-ignore-output"]
profile_loop(in_memory(1), RUN / "memory_before.json", steps=3, memory=True)
profile_loop(in_memory(2), RUN / "memory_after.json", steps=3, micro_batches=2, memory=True)
peaks = {key: peak_mib(trace_events(RUN / f"memory_{key}.json")) for key in ("before", "after")}
memory = {
    "lever": "gradient accumulation: each batch of 64 as 2 slices of 32",
    "before": "memory_before.json",
    "after": "memory_after.json",
    "before_mib": peaks["before"],
    "after_mib": peaks["after"],
}
print(f"peak allocated in a step: {peaks['before']:.1f} MiB, then {peaks['after']:.1f} MiB")

# %% [markdown]
# The checker's peak is the most a step allocates at once beyond what was allocated when it
# began: the activations, the gradients and the optimiser's temporaries, not the weights.
# Accumulating 2 slices keeps half the activations alive at a time.

# %%
check(peaks["after"] <= 0.75 * peaks["before"], "2 slices cut the peak by 25 % or more")

# %% [markdown]
# ## 3 · Export with a dynamic batch, and check ONNX Runtime against eager
#
# Lesson 12's export, from the model in **evaluation mode** (batch norm then uses its running
# statistics, as the eager model does at inference), with an example batch of 8 and a free
# batch dimension.

# %%
model.to(memory_format=torch.contiguous_format).eval()
checkpoint = RUN / "model.pt"  # the weights exported: trained further by the profiled steps
torch.save({"model": model.state_dict(), "model_args": {"mean": mean, "std": std}}, checkpoint)
test_images = torch.stack([decode(f) for f in sorted((ROOT / "test").rglob("*.jpg"))])
batch = Dim("batch", min=1, max=1024)
onnx_program = torch.onnx.export(
    model.cpu(),
    (test_images[:8],),
    dynamo=True,
    dynamic_shapes=({0: batch},),
    input_names=["images"],
    output_names=["logits"],
    verbose=False,
)
onnx_program.save(RUN / "model.onnx", external_data=False)
session = ort.InferenceSession(str(RUN / "model.onnx"), providers=["CPUExecutionProvider"])
with torch.inference_mode():
    eager = model(test_images).numpy()
(onnx_logits,) = session.run(None, {"images": test_images.numpy()})
export = {"onnx": "model.onnx", "max_difference": float(np.abs(onnx_logits - eager).max())}

# %% tags=["nbval-ignore-output"]
print(f"largest difference on {len(test_images):,} test images: {export['max_difference']:.1e}")

# %%
check(export["max_difference"] <= 1e-4, "ONNX Runtime's logits equal eager's within 1e-4")

# %% [markdown]
# ## 4 · Serve it, and query it
#
# Lesson 12's server, reduced to what the brief asks: `GET /health`, and `POST /predict` with
# the bytes of a PNG, answered with the class's index, or 400 when the body is not a 32 × 32
# image.

# %%
# %%writefile runs/p2_reference/server.py
"""CIFAR2 over HTTP: python server.py MODEL.onnx --port PORT."""

import argparse
import io

import numpy as np
import onnxruntime as ort
import uvicorn
from fastapi import FastAPI, HTTPException, Request
from PIL import Image

parser = argparse.ArgumentParser()
parser.add_argument("model")
parser.add_argument("--port", type=int, required=True)
args = parser.parse_args()
session = ort.InferenceSession(args.model, providers=["CPUExecutionProvider"])
app = FastAPI()


@app.get("/health")
def health() -> dict:
    return {"status": "ok"}


@app.post("/predict")
async def predict(request: Request) -> dict:
    try:
        image = Image.open(io.BytesIO(await request.body()), formats=["PNG"])
        pixels = np.asarray(image.convert("RGB"))
    except Exception:
        raise HTTPException(400, "send the bytes of a PNG image") from None
    if pixels.shape != (32, 32, 3):
        raise HTTPException(400, f"expected a 32×32 image, got {image.width}×{image.height}")
    (logits,) = session.run(None, {"images": pixels.transpose(2, 0, 1)[None]})
    return {"index": int(logits[0].argmax())}


if __name__ == "__main__":
    uvicorn.run(app, host="127.0.0.1", port=args.port, log_level="warning")


# %% tags=["nbval-ignore-output"]
def png(image: torch.Tensor) -> bytes:
    buffer = io.BytesIO()
    Image.fromarray(image.permute(1, 2, 0).numpy()).save(buffer, format="PNG")
    return buffer.getvalue()


command = [sys.executable, RUN / "server.py", RUN / "model.onnx", "--port", "{port}"]
shown = test_images[::250]  # 8 test images
with serve(command, ready="/health") as server, httpx.Client(base_url=server.url) as client:
    served = [client.post("/predict", content=png(image)).json()["index"] for image in shown]
    refused = client.post("/predict", content=b"not an image").status_code
print("the server's classes for 8 test images:", served, "| a body that is not an image:", refused)

# %%
# The classes depend on the trained weights, which vary a little between processors; what the
# server must do does not:
check(served == eager[::250].argmax(axis=1).tolist(), "the server answers the model's classes")
check(refused == 400, "a body that is not an image is refused with 400 Bad Request")

# %% [markdown]
# ## 5 · The run that does not learn
#
# The course's run, copied, then lesson 13's checklist on its parts, imported from the copy.
# **(1) Look at a batch**, as the loop gets it:

# %%
fixed_run = capstone.copy_broken_run(RUN / "fixed_run.py")
run = capstone.import_run(fixed_run)
run_loader, val_images, val_labels, run_mean, run_std = run.make_data()
_, first_labels = next(iter(run_loader))
print("labels of the first batch:", first_labels.tolist()[:16], "...")
check(first_labels.unique().numel() == 1, "the first batch holds one class only")

# %% [markdown]
# Every batch holds one class: the training images are sorted by file, hence by class, and
# the loader does not shuffle them. **(3) The gradients**: which parameters does the optimiser
# get, and what gradient does each hold after `train_step`?

# %%
net = run.Net(run_mean, run_std)
names = [name for name, _ in net.named_parameters()]
print("the model's parameters:", names)
x, y = next(iter(run_loader))
run.train_step(net, torch.optim.AdamW(net.parameters()), x, y)
print("gradients after train_step:", [p.grad for p in net.parameters()])
check(names == ["head.weight", "head.bias"], "only the head's parameters are registered")

# %% [markdown]
# Two bugs at once. The convolution blocks sit in a plain Python list, which `nn.Module` does
# not register: the optimiser never sees them (`nn.ModuleList` does). And `train_step` clears
# the gradients after `backward()` and before `step()`, so every step steps with no gradient.
# The three fixes, each in its line:

# %%
text = fixed_run.read_text()
for wrong, right in [
    ("shuffle=False", "shuffle=True"),
    ("self.blocks = []", "self.blocks = nn.ModuleList()"),
    (
        "    loss.backward()\n    optimizer.zero_grad()\n",
        "    optimizer.zero_grad()\n    loss.backward()\n",
    ),
]:
    text = text.replace(wrong, right)
fixed_run.write_text(text)
bugs = {
    "run": "fixed_run.py",
    "wrong_lines": [
        "loader = DataLoader(TensorDataset(train_images, train_labels), batch_size=64, "
        "shuffle=False)",
        "self.blocks = []",
        "optimizer.zero_grad()",
    ],
}

# %% [markdown]
# ## The report and the grade
#
# The checker runs the fixed copy itself, starts the server itself, and reads every number
# from the profiles.

# %%
report = RUN / "report.json"
parts = {"speed": speed, "memory": memory, "export": export, "server": {"script": "server.py"}}
with report.open("w") as file:
    json.dump(parts | {"bugs": bugs}, file, indent=2)

# %% tags=["nbval-ignore-output"]
passed = capstone.grade_production(report, checkpoint, Net)

# %%
check(passed, "the reference solution meets every criterion of the checker")
