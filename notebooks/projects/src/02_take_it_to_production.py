# %% [markdown]
# # P2 · Take it to production
#
# [![Open In Colab](https://colab.research.google.com/assets/colab-badge.svg)](https://colab.research.google.com/github/pytorch-cookbook/pytorch-cookbook/blob/main/notebooks/projects/02_take_it_to_production.ipynb)
#
# Your classifier from [project P1](01_your_own_classifier.ipynb) works in a notebook. Now make
# it ready for others: a training loop that is measurably faster, a step that needs less memory,
# a file that runs without PyTorch, a server that answers over HTTP, and one more skill a team
# needs from you, finding why someone's run does not learn. Each task leaves a file and a
# number; the course grades the files, and checks each number against your own profiles or
# measures it again.
#
# **Before you start:** project P1 done (its checkpoint and model class), and lessons 10-13
# (speedups, memory, deployment, reproducibility and debugging). The [recipe
# index](../RECIPES.md) finds the recipe for a task.
#
# **Time:** yours to plan. The reference solution is about 260 lines of code, and runs in about
# a minute on a 2-core CPU. The run time below is this notebook's as it comes, with its cells
# empty: your work adds its own.
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
from helpers.env import setup

device = setup(seed=0)
for part, keys in capstone.REPORT_KEYS.items():  # what report.json holds, part by part
    print(f"{part}: {', '.join(keys)}")

# %% [markdown]
# ## The brief
#
# Work in a folder of your own, such as `runs/p2/`, and keep every file the tasks make there.
#
# 1. **Capstone 1's model.** Bring your P1 model class into this notebook (copy its cell) and
#    load its checkpoint. Tasks 2 and 3 train it further, task 4 exports it: save the weights
#    you export as the checkpoint you hand in (`"model"` and `"model_args"`, as in P1).
# 2. **A faster loop.** Profile your P1 training loop with `torch.profiler`, as lesson 10
#    does: `schedule(wait=0, warmup=1, active=N, repeat=1)` with N of 3 or more, exactly 1 + N
#    steps each followed by `prof.step()`, `record_function` labels on the phases, and
#    `prof.export_chrome_trace(path)` after the `with` block. (On a GPU, call
#    `torch.cuda.synchronize()` before each `prof.step()`, or the profile times the launches,
#    not the work.) Change what the profile points at, keeping the model and the batch size,
#    and profile again the same way. If your P1 loop already keeps the decoded images in memory,
#    start from the first draft most loops begin as, a Dataset that opens each JPEG in
#    `__getitem__`. The bar: each step at least **1.25× faster** (the median of the profiled
#    steps).
# 3. **Less memory in a step.** Profile a few steps the same way with `profile_memory=True`
#    (on the CPU or a CUDA GPU), before and after one of lesson 11's levers: the same batch and
#    the same update, not a smaller batch. The bar: the most a step allocates at once, beyond
#    what was allocated when it began, at least **25 % lower**. Gradient accumulation over 2
#    slices reaches it in the reference solution; for activation checkpointing, measure which
#    segments to checkpoint (lesson 11 and its exercise 2): the bar counts the whole step,
#    gradients included.
# 4. **An ONNX file.** Export the model in evaluation mode to ONNX with a dynamic batch
#    dimension (one `uint8` input, as the model takes it), run it in ONNX Runtime, and measure
#    the largest difference from the eager model's logits. The bar: **1e-4** at most, which the
#    checker measures again on its own test images.
# 5. **A server.** A script that starts with `python server.py MODEL.onnx --port PORT`, binds
#    to 127.0.0.1, answers `GET /health` with 200 once the model is loaded, answers
#    `POST /predict` with the bytes of a 32 × 32 PNG image as the body with the JSON
#    `{"index": the class index}`, and answers a body that is not an image with 400. Start it
#    and query it yourself. (Lesson 12's server reads a `"classes"` metadata entry and the input
#    name `"images"` from its file: export yours with them, or adapt the server.)
# 6. **The run that does not learn.** `capstone.copy_broken_run("runs/p2/fixed_run.py")`
#    copies a training run that runs without an error and learns nothing; three bugs hide in
#    it, one in the data, one in the model, one in the training step. `capstone.import_run(path)`
#    imports your copy, so that you can call its parts (`make_data`, `Net`, `train_step`) one at
#    a time. Find the bugs with lesson 13's checklist, fix them in your copy (12 changed lines
#    at most: the same run, fixed), and quote the wrong line of each, as it was (5 lines at
#    most). The checker runs your copy: it must reach **0.83** validation accuracy after its
#    last epoch.
# 7. **The report.** Write `report.json` in your folder with `json.dump`: the five parts
#    printed above, the file names relative to that folder. The numbers are the ones you
#    measured, as Python floats (`float(x)`): the median step time in milliseconds and the peak
#    in MiB of each profile (`capstone.profile_summary(path)` reads both from a trace as the
#    checker does), and the largest difference of task 4.
#
# ```
# {"speed": {"change": "...", "before": "speed_before.json", "after": "speed_after.json",
#            "before_ms": 120.5, "after_ms": 60.1},
#  "memory": {"lever": "...", "before": "memory_before.json", "after": "memory_after.json",
#             "before_mib": 22.8, "after_mib": 12.4},
#  "export": {"onnx": "model.onnx", "max_difference": 3e-06},
#  "server": {"script": "server.py"},
#  "bugs": {"run": "fixed_run.py", "wrong_lines": ["...", "...", "..."]}}
# ```
#
# (The numbers in this example are for its shape only.)
#
# **Where to look:** profiling a loop and stacking fixes ([10](../10_speedups.ipynb)), where
# a step's memory goes and two levers ([11](../11_memory.ipynb)), `torch.export`, ONNX Runtime
# and a server ([12](../12_deployment.ipynb)), a checklist for a run that does not learn
# ([13](../13_reproducibility_debugging.ipynb)), and what a model's parameters should hold
# ([Walk a model and count its
# parameters](../cookbook/04_modules_recipes.ipynb#Walk-a-model-and-count-its-parameters)).
#
# **What the checker can and cannot see:** it reads your profiles itself and compares your
# numbers with them, rebuilds your model from the checkpoint, runs your ONNX file, starts your
# server and queries it, and runs your fixed copy of the run. It trusts that both profiles of a
# pair train the same model on the same batches: profile them that way.

# %% [markdown]
# ## Your work
#
# Add as many cells as you need below.

# %%
# 1. capstone 1's model class and checkpoint

# %%
# 2. the loop, profiled before and after your change

# %%
# 3. a step's memory, profiled before and after your lever

# %%
# 4. the ONNX file, checked against the eager model

# %%
# 5. the server, started and queried

# %%
# 6. the run that does not learn

# %%
# 7. the report

# %% [markdown]
# ## Grade it
#
# Fill in your report's path, the checkpoint of the model you exported and its class, then
# run the cell. Each criterion prints `✓`, or `✗` with what is wrong and where to look. It takes
# about half a minute: it runs your fixed copy of the run and starts your server.

# %%
passed = capstone.grade_production(
    report=...,  # e.g. Path("runs/p2/report.json") (from pathlib import Path)
    checkpoint=...,  # the checkpoint of the model you exported
    model_class=...,  # your nn.Module class from capstone 1
)

# %% [markdown]
# The course's repository holds a reference solution, in the `reference` folder beside this
# notebook (not in the student copies): open it after you have passed, or when you are truly
# stuck, and compare designs.
