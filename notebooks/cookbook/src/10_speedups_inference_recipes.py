# %% [markdown]
# # 10 · Faster inference, measured: recipes
#
# [![Open In Colab](https://colab.research.google.com/assets/colab-badge.svg)](https://colab.research.google.com/github/pytorch-cookbook/pytorch-cookbook/blob/main/notebooks/cookbook/10_speedups_inference_recipes.ipynb)
#
# **The cookbook of chapter 10, continued.** New to the topic? [The lesson](../10_speedups.ipynb)
# teaches it step by step; the chapter's [first cookbook notebook](10_speedups_recipes.ipynb)
# makes *training* faster. Here each recipe makes a trained model answer faster: compile it
# (and time the compilation apart), fold its BatchNorms into the convolutions, merge parallel
# branches into one convolution, and quantize it to int8 for a CPU, each **timed on the machine
# that runs the notebook** and checked against the float model it came from. The
# [recipe index](../RECIPES.md) and the [error index](../ERRORS.md) find the one you need;
# [12](12_deployment_recipes.ipynb) ships the result.
#
# **Prerequisites:** [04](../04_modules.ipynb) (modules), [07](../07_training_loop.ipynb)
# (training loop), [10](../10_speedups.ipynb) (timing on the machine that runs the code).
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

import copy
import logging
import platform
import shutil
import time
from pathlib import Path

import pandas as pd
import torch
import torch.nn.functional as F
from torch import nn

from helpers.bench import ieee_fp32, time_in_turns, time_it
from helpers.check import check
from helpers.env import onednn_has_vnni, setup
from helpers.exercises import ch10_inference
from helpers.images import channel_stats, load_cifar2
from helpers.models import small_cnn
from helpers.train import train_sliced

device = setup(seed=0)
RUN = Path("runs/10_speedups_inference")  # what this notebook writes: made anew on every run
shutil.rmtree(RUN, ignore_errors=True)
RUN.mkdir(parents=True)
train_images, train_labels, classes = load_cifar2("train")
test_images, test_labels, _ = load_cifar2("test")
mean, std = channel_stats(train_images)
print(f"CIFAR2: {len(train_images)} training and {len(test_images)} test images in memory")

# %% [markdown]
# All timings below are medians after a warm-up (the fused and merged layers are timed in turns
# with what they replace, on one thread, so that a busy moment on the machine slows both). They
# differ from machine to machine and from moment to moment, so their cells are not compared by
# the tests; each section ends with a check of what matters, with a wide margin.

# %% [markdown]
# ## Compile a model, and time the compilation separately
#
# `torch.compile(model)` traces the Python code into graphs and generates fused kernels (C++/
# OpenMP on CPUs, Triton on GPUs). The first call compiles, which takes seconds to minutes;
# later calls with the same shapes are fast. So measure the two apart. For inference on this
# notebook's device (a training step is measured in the first notebook's
# [ladder](10_speedups_recipes.ipynb#Stack-the-tricks:-the-ladder)):

# %%
logging.getLogger("torch.utils.cpp_extension").setLevel(logging.ERROR)  # no CUDA_HOME line
model = small_cnn(mean, std).to(device).eval()
batch = test_images[:256].to(device)
began = time.perf_counter()
compiled = torch.compile(model)
with torch.inference_mode():
    compiled(batch)
compile_seconds = time.perf_counter() - began
with torch.inference_mode():
    eager_ms = 1000 * time_it(lambda: model(batch))
    compiled_ms = 1000 * time_it(lambda: compiled(batch))
    with ieee_fp32():  # on CUDA: no TF32 in either, so the two agree to float32 rounding
        same_output = torch.allclose(model(batch), compiled(batch), atol=1e-4)
compile_calls = compile_seconds / (compiled_ms / 1000)

# %% tags=["nbval-ignore-output"]
print(f"first call (compiling): {compile_seconds:.1f} s, the time of {compile_calls:.0f} calls")
print(
    f"eager {eager_ms:.1f} ms · compiled {compiled_ms:.1f} ms per 256 images "
    f"({eager_ms / compiled_ms:.2f}×)"
)

# %%
check(same_output, "the compiled model computes the same outputs (within 1e-4)")
check(
    eager_ms / compiled_ms > 1.2,
    f"compiled inference is faster than eager on this {device.type.upper()}",
    measured=f"{eager_ms / compiled_ms:.2f}×",
    timing=True,
)


# %% [markdown]
# The first call's time depends on the compiler's cache (on disk, shared by every process of the
# user): with an empty cache, as in a fresh Colab runtime, it is many times longer than with a
# warm one, so run a notebook twice before you judge it. Compilation pays when a model runs many
# times with the same shapes (the line above says after how many calls here). For a *training*
# step on a CPU the gain is smaller and less certain than for inference: backward and the
# optimizer step are compiled too, and a small CNN's time goes mostly to convolutions that oneDNN
# runs with or without the compiler (the committed
# [ladder](10_speedups_recipes.ipynb#Stack-the-tricks:-the-ladder) shows what `make bench` measured).
# What else `torch.compile` offers:
#
# - `mode="reduce-overhead"` records the compiled step as a **CUDA graph** and replays it, which
#   removes the per-kernel launch cost: the main win for a small model on a GPU (CUDA only;
#   inputs must keep their shapes). `mode="max-autotune"` also benchmarks kernel variants.
# - For **inference**, Inductor's *freezing* (`torch._inductor.config.freezing = True`, calls
#   under `torch.no_grad()`) treats the weights as constants: it folds BatchNorm into the
#   convolutions and lets the [int8 section](#Quantize-to-int8-for-CPU-inference) use int8
#   kernels.
# - **Graph breaks and recompiles** are what make a compiled model slow: a `print` or `.item()`
#   splits the graph, a new shape or Python constant recompiles. `fullgraph=True` turns a break
#   into an error, `TORCH_LOGS=graph_breaks,recompiles` lists them, and
#   [13](13_reproducibility_debugging_recipes.ipynb) finds and fixes both. By default a new batch size
#   recompiles once and marks that dimension dynamic; `dynamic=False` recompiles for every shape.

# %% [markdown]
# ## Fuse Conv and BatchNorm for inference
#
# In evaluation BatchNorm is a fixed affine map per channel, so it can be folded into the
# convolution before it. With running mean $\mu$, variance $\sigma^2$, scale $\gamma$ and shift
# $\beta$:
#
# $$\gamma \frac{(W * x + b) - \mu}{\sqrt{\sigma^2 + \epsilon}} + \beta
#   = \underbrace{\frac{\gamma}{\sqrt{\sigma^2+\epsilon}} W}_{W'} * x
#   + \underbrace{\frac{\gamma (b - \mu)}{\sqrt{\sigma^2+\epsilon}} + \beta}_{b'}$$
#
# One layer instead of two, one pass over the activations instead of two. By hand, on a layer
# with BatchNorm statistics from real images. The fused layer starts as a copy of the
# convolution, so it keeps its stride, padding, dilation, groups, padding mode, device and dtype:

# %%
def fuse_conv_bn(conv: nn.Conv2d, bn: nn.BatchNorm2d) -> nn.Conv2d:
    """Return one convolution equal to ``bn(conv(x))`` in evaluation mode."""
    fused = copy.deepcopy(conv)  # every setting of the convolution, on its device and dtype
    scale = bn.weight / torch.sqrt(bn.running_var + bn.eps)  # one factor per output channel
    bias = conv.bias if conv.bias is not None else torch.zeros_like(bn.running_mean)
    with torch.no_grad():
        fused.weight.copy_(conv.weight * scale.view(-1, 1, 1, 1))
        fused.bias = nn.Parameter((bias - bn.running_mean) * scale + bn.bias)
    return fused


torch.manual_seed(0)
conv, bn = nn.Conv2d(3, 32, 3, padding=1, bias=False), nn.BatchNorm2d(32)
pixels = (train_images[:64].float() / 255 - 0.5) / 0.25
with torch.no_grad():
    bn.weight.uniform_(0.5, 1.5)
    bn.bias.uniform_(-0.5, 0.5)
    bn.train()(conv(pixels))  # running statistics from real images (momentum 0.1, one batch)
conv_bn = nn.Sequential(conv, bn).eval()
fused = fuse_conv_bn(conv, bn).eval()
# A depthwise, dilated convolution: groups and dilation must survive the fusion too.
depthwise, bn_dw = nn.Conv2d(32, 32, 3, padding=2, dilation=2, groups=32), nn.BatchNorm2d(32)
features = torch.randn(64, 32, 16, 16) * 2 + 1
with torch.no_grad():
    bn_dw.weight.uniform_(0.5, 1.5)
    bn_dw.bias.uniform_(-0.5, 0.5)
    bn_dw.train()(depthwise(features))
depthwise_bn = nn.Sequential(depthwise, bn_dw).eval()
with torch.inference_mode():
    fusion_error = (conv_bn(pixels) - fused(pixels)).abs().max().item()
    library = torch.nn.utils.fusion.fuse_conv_bn_eval(conv, bn)
    library_error = (library(pixels) - fused(pixels)).abs().max().item()
    depthwise_error = (
        (depthwise_bn(features) - fuse_conv_bn(depthwise, bn_dw)(features)).abs().max().item()
    )
    # Timed in turns on one thread, the fastest of 12 short turns each: a busy spell on the
    # machine slows both, not one, and a quiet turn comes for each.
    fusion_s = time_in_turns(
        {"conv + bn": lambda: conv_bn(pixels), "fused conv": lambda: fused(pixels)},
        rounds=12,
        min_run_time=0.05,
        threads=1,
    )
    fusion_ms = {name: 1000 * seconds for name, seconds in fusion_s.items()}

# %% tags=["nbval-ignore-output"]
print({k: f"{v:.2f} ms" for k, v in fusion_ms.items()}, f"max |diff| {fusion_error:.1e}")

# %%
check(fusion_error < 1e-4, "the fused convolution equals conv + BatchNorm (max |diff| < 1e-4)")
check(library_error < 1e-5, "and equals torch.nn.utils.fusion.fuse_conv_bn_eval")
check(depthwise_error < 1e-4, "a depthwise, dilated convolution fuses exactly as well")
fusion_speedup = fusion_ms["conv + bn"] / fusion_ms["fused conv"]
check(
    fusion_speedup > 1.05,
    "the fused layer is faster",
    measured=f"{fusion_speedup:.2f}×",
    timing=True,
)


# %% [markdown]
# `torch.nn.utils.fusion.fuse_conv_bn_eval(conv, bn)` is the library's version of this function.
# Inference engines (ONNX Runtime, TensorRT) fold BatchNorm when they load a model. `torch.compile`
# folds it only with Inductor's *freezing* on (`torch._inductor.config.freezing = True`) and under
# `torch.no_grad()` or `torch.inference_mode()`: in torch 2.15 the pre-grad `fuse_fx` pass returns
# early when gradients are enabled (or the model is not on a CPU) and calls `fuse_conv_bn` only
# when freezing is set; the freezing passes' binary folding also needs freezing. By default
# Inductor keeps the BatchNorm as an elementwise step fused into the convolution's output, one
# more pass over the activations. Doing it by hand shows why the folding is exact.

# %% [markdown]
# ## Merge parallel branches into one convolution
#
# RepVGG trains a block with three parallel branches (3×3 conv + BN, 1×1 conv + BN, identity +
# BN, summed) and, for inference, merges them into **one** 3×3 convolution: convolution is
# linear, so kernels of parallel branches add. Fuse each BN into its branch (as above), pad the
# 1×1 kernel to 3×3 (its value at the centre), write the identity as a 3×3 kernel with a 1 at the
# centre of its own channel, and add the kernels and biases.

# %%
class RepBlock(nn.Module):
    """The training-time block: three parallel branches, summed, then ReLU."""

    def __init__(self, channels: int) -> None:
        super().__init__()
        self.conv3 = nn.Sequential(
            nn.Conv2d(channels, channels, 3, padding=1, bias=False), nn.BatchNorm2d(channels)
        )
        self.conv1 = nn.Sequential(
            nn.Conv2d(channels, channels, 1, bias=False), nn.BatchNorm2d(channels)
        )
        self.identity = nn.BatchNorm2d(channels)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.relu(self.conv3(x) + self.conv1(x) + self.identity(x))


def merge(block: RepBlock) -> nn.Conv2d:
    """Return the single 3×3 convolution whose ReLU equals the block in evaluation mode."""
    c = block.identity.num_features
    k3 = fuse_conv_bn(*block.conv3)
    k1 = fuse_conv_bn(*block.conv1)
    eye = nn.Conv2d(c, c, 1, bias=False)
    with torch.no_grad():
        eye.weight.copy_(torch.eye(c).view(c, c, 1, 1))
    ki = fuse_conv_bn(eye, block.identity)
    merged = nn.Conv2d(c, c, 3, padding=1)
    with torch.no_grad():
        merged.weight.copy_(
            k3.weight + F.pad(k1.weight, [1, 1, 1, 1]) + F.pad(ki.weight, [1, 1, 1, 1])
        )
        merged.bias.copy_(k3.bias + k1.bias + ki.bias)
    return merged


torch.manual_seed(0)
block = RepBlock(32)
features = torch.randn(64, 32, 16, 16) * 2 + 1
with torch.no_grad():
    for bn_layer in (block.conv3[1], block.conv1[1], block.identity):
        bn_layer.weight.uniform_(0.5, 1.5)  # γ and β far from their initial 1 and 0
        bn_layer.bias.uniform_(-0.5, 0.5)
        bn_layer.momentum = None  # running statistics: the plain average of the batches seen
    block.train()
    for _ in range(3):  # each BN sees its own branch's output, as in training
        block(features)
block.eval()
merged = merge(block).eval()
with torch.inference_mode():
    merge_error = (block(features) - F.relu(merged(features))).abs().max().item()
    merge_s = time_in_turns(
        {
            "three branches": lambda: block(features),
            "one 3×3 conv": lambda: F.relu(merged(features)),
        },
        rounds=12,  # as for the fusion above: the fastest of 12 short turns each
        min_run_time=0.05,
        threads=1,
    )
    merge_ms = {name: 1000 * seconds for name, seconds in merge_s.items()}

# %% tags=["nbval-ignore-output"]
print({k: f"{v:.2f} ms" for k, v in merge_ms.items()}, f"max |diff| {merge_error:.1e}")

# %%
check(
    merge_error < 1e-4, "one merged convolution equals the three-branch block (max |diff| < 1e-4)"
)
merge_speedup = merge_ms["three branches"] / merge_ms["one 3×3 conv"]
check(merge_speedup > 1.05, "and runs faster", measured=f"{merge_speedup:.2f}×", timing=True)

# %% [markdown]
# ## Quantize to int8 for CPU inference
#
# Int8 weights and activations are 4× smaller than float32, and CPUs with VNNI instructions
# multiply and add four int8 pairs in one step (what that gains end to end is measured below). Post-training static quantization needs a trained model
# and a few batches to calibrate the activation ranges. Train the CNN on half an epoch (5,000
# images in batches sliced from memory, `helpers.train.train_sliced`, as in
# [the first notebook](10_speedups_recipes.ipynb#Slice-batches-from-one-tensor-instead-of-collating-samples)),
# then quantize it.

# %%
torch.manual_seed(0)
trained = small_cnn(mean, std).to(device)
trained = train_sliced(trained, train_images, train_labels, device, samples=5000)


def accuracy(model: nn.Module, images: torch.Tensor) -> float:
    with torch.inference_mode():
        return (model(images).argmax(1) == test_labels).float().mean().item()


float_accuracy = accuracy(trained, test_images)

# %% tags=["nbval-ignore-output"]
print(f"float32 test accuracy after 5,000 images: {float_accuracy:.3f}")

# %%
check(
    float_accuracy >= 0.7,
    "half an epoch trains the CNN to at least 70 % test accuracy",
    measured=f"{float_accuracy:.3f}",
)

# %% [markdown]
# The `torchao` package holds today's quantization APIs, two of them:
#
# - `quantize_(model, config)` swaps the weights of a model's `nn.Linear` layers, in place, for
#   quantized tensors (`Int8WeightOnlyConfig()`, `Int8DynamicActivationInt8WeightConfig()`, float8
#   configs on recent GPUs). No graph capture, any device: the route for transformers and LLM
#   inference, where the linear layers hold almost all the weights. On this CNN it would touch the
#   last layer only.
# - **PT2E** quantizes a captured graph statically, convolutions included, for a backend that
#   runs int8 kernels (x86 CPUs through Inductor, phones through ExecuTorch): the route for CNNs
#   and exported models, used here.
#
# In the PT2E flow `torch.export` captures the model as a graph, `prepare_pt2e` inserts observers
# where a *quantizer* (here `X86InductorQuantizer`, for x86 CPUs) says int8 kernels will run, a few
# batches calibrate the observers, and `convert_pt2e` replaces them with quantize/dequantize pairs
# around the float operators. The first two layers of the course's CNN take `uint8` images and
# normalise them; the float part after them (`body`) is quantized.

# %% [markdown]
# ### Which x86 CPUs need 7-bit activations
#
# The quantizer's default config stores activations as `uint8` (0-255) and weights as `int8`.
# How the CPU multiplies them decides whether that is safe. With **VNNI** instructions
# (AVX512-VNNI: Intel Xeons since Cascade Lake, AMD since Zen 4; AVX-VNNI: Intel Core since the
# 12th generation) one instruction multiplies four u8 × s8 pairs and adds them straight into a
# 32-bit sum. Without VNNI (AMD Zen 1-3, older Intel, many cloud and CI machines) the kernels use
# AVX2's `vpmaddubsw`, which adds each *pair* of products into a 16-bit integer that
# **saturates**: two large products overflow it and are silently clipped.

# %%
activations = torch.tensor([255, 255])  # two uint8 activations at the top of their range
weights = torch.tensor([127, 127])  # two int8 weights at the top of theirs
pair_sum = int((activations * weights).sum())
int16_max = torch.iinfo(torch.int16).max
seven_bit_sum = int((activations.clamp(max=127) * weights).sum())
print(f"8-bit activations: pair sum {pair_sum:,}; int16 holds {int16_max:,}, so it is clipped")
print(f"7-bit activations (0-127): pair sum at most {seven_bit_sum:,}, which fits")
check(
    pair_sum > int16_max >= seven_bit_sum,
    "an 8-bit activation pair can overflow the int16 sum, a 7-bit pair cannot",
)

# %% [markdown]
# So on a CPU without VNNI, quantize activations to 7 bits: `reduce_range=True` in
# `get_default_x86_inductor_quantization_config` (its documentation says the same). It halves
# the activations' resolution, a small cost in accuracy, which is why a VNNI CPU keeps 8 bits.
# `helpers.env.onednn_has_vnni()` decides from the CPU's flags (`lscpu | grep -o vnni` shows
# them) and from `ONEDNN_MAX_CPU_ISA`, which can forbid oneDNN those instructions. Getting this
# wrong does not raise an error: the int8 model simply predicts differently from the model it
# was quantized from, which the checks below should catch.

# %%
logging.getLogger("torch.utils._pytree").setLevel(logging.ERROR)  # torchao's import log line
from torchao.quantization.pt2e.quantize_pt2e import convert_pt2e, prepare_pt2e
from torchao.quantization.pt2e.quantizer.x86_inductor_quantizer import (
    X86InductorQuantizer,
    get_default_x86_inductor_quantization_config,
)

preprocess, body = trained[:2], trained[2:]
calibration = preprocess(train_images[:512])
batch_dim = {0: torch.export.Dim.AUTO}  # any batch size, not only the example's
exported = torch.export.export(body, (calibration[:64],), dynamic_shapes=(batch_dim,)).module()
vnni = onednn_has_vnni()  # True: 8-bit activations; False: 7-bit, so no int16 pair sum overflows
int8_config = get_default_x86_inductor_quantization_config(reduce_range=not vnni)
quantizer = X86InductorQuantizer().set_global(int8_config)
prepared = prepare_pt2e(exported, quantizer)
with torch.no_grad():
    prepared(calibration)  # observers record the activation ranges
int8_body = convert_pt2e(prepared)
int8_model = nn.Sequential(preprocess, int8_body)
int8_accuracy = accuracy(int8_model, test_images)
quantized_ops = sorted(
    {str(n.target).split(".")[-2] for n in int8_body.graph.nodes if "quantize" in str(n.target)}
)
print("inserted:", *quantized_ops)

# %% [markdown]
# For comparison, `quantize_` on a copy of the same model: it changes the linear layer's weight
# to an int8 tensor and leaves every convolution in float32.

# %%
from torchao.quantization import Int8WeightOnlyConfig, quantize_

linear_only = copy.deepcopy(trained)
quantize_(linear_only, Int8WeightOnlyConfig())
weights = {
    kind: sorted({type(m.weight).__name__ for m in linear_only.modules() if isinstance(m, kind)})
    for kind in (nn.Conv2d, nn.Linear)
}
print({kind.__name__: names for kind, names in weights.items()})
check(
    weights[nn.Conv2d] == ["Parameter"]
    and weights[nn.Linear]
    and "Parameter" not in weights[nn.Linear],
    "quantize_ quantized the linear layer's weights only",
)


# %% [markdown]
# The PT2E model still computes in float32: each quantize/dequantize pair rounds a tensor to int8
# values and back, so it *simulates* int8 (closely, not bit for bit) and is slower than float.
# Int8 kernels come from Inductor's *freezing* passes, which replace each
# quantize–conv–dequantize pattern with a oneDNN int8 convolution. `torch.compile(int8_body)`
# alone does **not** run them: freezing is off by default and runs only without gradients
# (`torch._inductor.config.freezing = True`, calls under `torch.no_grad()`), and it also
# generates C++ code for the rest, longer than this notebook's budget.
# `lower_pt2e_quantized_to_x86` runs the freezing passes without generating code, for the
# example input's shape (batches of 256). The int8 model is timed against the faster of two
# float32 models: as trained, and with its BatchNorms folded (`fuse_conv_bn` from above), so
# that folding alone does not count as an int8 gain.

# %%
def fold_batchnorms(model: nn.Sequential) -> nn.Sequential:
    """A copy of ``model`` in which every (conv, BN, ...) block has its BN folded into the conv."""
    folded = copy.deepcopy(model)
    for layer in folded:
        if isinstance(layer, nn.Sequential) and isinstance(layer[1], nn.BatchNorm2d):
            layer[0], layer[1] = fuse_conv_bn(layer[0], layer[1]), nn.Identity()
    return folded


x86 = platform.machine().lower() in {"x86_64", "amd64"}
test_batch = preprocess(test_images[:256])
folded_body = fold_batchnorms(body).eval()
with torch.inference_mode():
    folding_error = (folded_body(test_batch) - body(test_batch)).abs().max().item()
    latency = {
        "float32": 1000 * time_it(lambda: body(test_batch), min_run_time=0.6),
        "float32, BN folded": 1000 * time_it(lambda: folded_body(test_batch), min_run_time=0.6),
        "int8 simulated (quantize/dequantize)": 1000
        * time_it(lambda: int8_body(test_batch), min_run_time=0.3),
    }
if x86:
    from torchao.quantization.pt2e.lowering import lower_pt2e_quantized_to_x86

    began = time.perf_counter()
    int8_lowered = lower_pt2e_quantized_to_x86(int8_body, (test_batch,))
    lowering_seconds = time.perf_counter() - began
    with torch.inference_mode():
        latency["int8 kernels (lowered)"] = 1000 * time_it(
            lambda: int8_lowered(test_batch), min_run_time=0.6
        )
        agreement = (
            (int8_lowered(test_batch).argmax(1) == int8_body(test_batch).argmax(1)).float().mean()
        )
    int8_ops = sorted(
        {str(n.target) for n in int8_lowered.graph.nodes if str(n.target).startswith("onednn.")}
    )
    right = 0  # the int8 kernels' own test accuracy, in the batches of 256 they were built for
    with torch.inference_mode():
        for first in range(0, len(test_images), 256):
            chunk = preprocess(test_images[first : first + 256])
            size = len(chunk)
            padded = torch.cat([chunk, chunk[:1].expand(256 - size, -1, -1, -1)])
            predicted_here = int8_lowered(padded)[:size].argmax(1)
            right += (predicted_here == test_labels[first : first + size]).sum().item()
    kernels_accuracy = right / len(test_images)

# %% tags=["nbval-ignore-output"]
print(f"VNNI for oneDNN's int8 kernels: {vnni} → {8 if vnni else 7}-bit activations")
print(f"test accuracy: float32 {float_accuracy:.3f} · int8 {int8_accuracy:.3f}")
print(pd.Series(latency, name="ms per 256 images").round(1).to_string())
if x86:
    print(f"lowering took {lowering_seconds:.1f} s; predictions agree on {agreement:.1%}")
    print(f"test accuracy of the int8 kernels: {kernels_accuracy:.3f}")
    print("oneDNN int8 operators in the lowered graph:", *int8_ops)
    faster_float = min(latency["float32"], latency["float32, BN folded"])
    print(f"int8 vs the faster float32: {faster_float / latency['int8 kernels (lowered)']:.2f}×")
else:
    print(f"not an x86 CPU ({platform.machine()}): X86InductorQuantizer's kernels do not apply")

# %%
drop = float_accuracy - int8_accuracy
check(
    abs(drop) < 0.02,
    "int8 changes the test accuracy by less than 2 points",
    measured=f"{drop:+.4f}",
)
check(folding_error < 1e-3, "folding the BatchNorms leaves the float model's outputs unchanged")
if x86:
    check(
        agreement >= 0.95,
        "the int8 kernels predict as the simulated int8 model does (≥ 95 % of images)",
        measured=f"{agreement:.3f}",
    )
    check(
        abs(float_accuracy - kernels_accuracy) < 0.02,
        "the int8 kernels' own test accuracy is within 2 points of float32's",
        measured=f"{kernels_accuracy - float_accuracy:+.4f}",
    )
    check(any("qconv" in op for op in int8_ops), "the lowered graph runs oneDNN int8 convolutions")
    int8_speedup = faster_float / latency["int8 kernels (lowered)"]
    check(
        int8_speedup >= 1.2,
        "int8 kernels are faster than the faster float32 model on this CPU",
        measured=f"{int8_speedup:.2f}×",
        timing=True,
    )

# %% [markdown]
# What to notice: int8 costs less accuracy than the checks' 2 points, the simulated model is the
# slowest of all, and the last line is the int8 gain over the faster float model. The old way, `torch.ao.quantization`'s FX mode
# (`prepare_fx`/`convert_fx`), ran int8 eagerly without a compiler; it is deprecated and warns
# (in torch 2.15 its warning still says "will be removed in 2.10").
#
# On a GPU the usual inference speed-up is half precision instead: autocast under
# `torch.inference_mode()` (float16 on a T4, bfloat16 on Ampere and later). Not `model.half()`:
# this CNN's first layer makes float32 images for float16 weights and the model fails
# ([12](12_deployment_recipes.ipynb) shows that error). Autocast leaves the weights alone and picks the
# precision per operator; here on this notebook's device:

# %% tags=["nbval-ignore-output"]
half = torch.float16 if device.type == "cuda" else torch.bfloat16
on_device = trained.to(device)
with torch.inference_mode():
    reference = on_device(test_images.to(device)).argmax(1)
    with torch.autocast(device.type, dtype=half):
        predicted = on_device(test_images.to(device)).argmax(1)
same_predictions = (predicted == reference).float().mean().item()
trained = trained.cpu()
print(f"autocast to {half} at inference: predictions agree with float32 on {same_predictions:.1%}")

# %%
check(same_predictions >= 0.99, f"inference under {half} autocast predicts as float32 does")

# %% [markdown]
# ## Old code you will meet
#
# | old form | write today | why |
# |---|---|---|
# | `torch.jit.script(model)` / `torch.jit.trace` for speed | `torch.compile(model)` (or `torch.export` to ship a graph) | deprecated: in torch 2.15 both warn `FutureWarning: torch.jit.script is deprecated. Please switch to torch.compile or torch.export`; compile generates faster fused kernels |
# | `torch.quantization.quantize_fx.prepare_fx` / `torch.ao.quantization` | torchao's PT2E flow (`prepare_pt2e`, `convert_pt2e`) with `lower_pt2e_quantized_to_x86`, or `torch.compile` with Inductor's freezing on; `quantize_` for linear layers | `torch.ao.quantization` is deprecated and warns (its warning in 2.15 still names 2.10 for the removal) |
# | `torch.quantization.fuse_modules(model, [["conv", "bn"]])` for inference | `torch.nn.utils.fusion.fuse_conv_bn_eval(conv, bn)`, or the function above | `torch.quantization` is the deprecated `torch.ao.quantization` under its old name |

# %% [markdown]
# ## Exercises

# %% [markdown]
# ### Exercise 1 · Fuse a Linear and its BatchNorm1d
#
# Write `fuse_linear_bn(linear, bn)` returning one new `nn.Linear` equal to `bn(linear(x))` in
# evaluation mode. The check builds a Linear and a BatchNorm1d with non-trivial running
# statistics, γ and β, and compares the two on random inputs.
#
# <details><summary>Hint 1</summary>
#
# In evaluation mode BatchNorm1d is a fixed scale and shift per output feature; applied after a
# Linear, the two together are still one affine map, so one Linear can compute it.
# </details>
#
# <details><summary>Hint 2</summary>
#
# The section "Fuse Conv and BatchNorm for inference" works the algebra out for convolutions:
# the same formulas hold here, with one factor per row of the Linear's weight. Write into the new
# layer's parameters without recording a graph.
# </details>

# %%
fuse_linear_bn = ...  # a function (linear, bn) -> nn.Linear

# %%
ch10_inference.exercise_1(fuse_linear_bn)


# %% [markdown]
# #### Solution

# %% tags=["solution"]
# Solution: open it once you have tried. It uses its own names, so your answer stays as it is.
def solution_fuse_linear_bn(linear: nn.Linear, bn: nn.BatchNorm1d) -> nn.Linear:
    scale = bn.weight / torch.sqrt(bn.running_var + bn.eps)
    fused = nn.Linear(linear.in_features, linear.out_features)
    with torch.no_grad():
        fused.weight.copy_(linear.weight * scale.view(-1, 1))
        fused.bias.copy_((linear.bias - bn.running_mean) * scale + bn.bias)
    return fused


ch10_inference.exercise_1(solution_fuse_linear_bn)

# %% [markdown]
# ### Exercise 2 · Fold a BatchNorm into the convolution after it
#
# Some networks put a BatchNorm directly *before* a convolution: on the input, or in blocks
# ordered conv → ReLU → BN → conv. Write `fold_bn_into_conv(bn, conv)` returning one new `nn.Conv2d` equal to `conv(bn(x))` in
# evaluation mode, for a convolution **without padding** (with zero padding the two differ at the
# border: the padded zeros are added after the BatchNorm, so they are not normalised). The check
# uses a 3×3 convolution from 8 to 16 channels with a bias, and a BatchNorm2d with non-trivial
# running statistics, γ and β.
#
# <details><summary>Hint 1</summary>
#
# In evaluation mode the BatchNorm turns each *input* channel `c` into `s[c] · x + t[c]`, with
# `s = γ / sqrt(σ² + ε)` and `t = β - μ · s`. The scale multiplies the weights that read channel
# `c`; the shift is a constant image, which a convolution turns into a constant per output
# channel.
# </details>
#
# <details><summary>Hint 2</summary>
#
# A Conv2d weight is `(out, in, k, k)`: the scale multiplies it along dimension 1, the input
# channels (not dimension 0, as when BatchNorm comes after). A constant image of value `t[c]` in
# each channel gives each output channel the sum, over its weights, of weight × `t` of the
# channel the weight reads: add that to the bias. Start from a copy of the convolution.
# </details>

# %%
fold_bn_into_conv = ...  # a function (bn, conv) -> nn.Conv2d

# %%
ch10_inference.exercise_2(fold_bn_into_conv)


# %% [markdown]
# #### Solution

# %% tags=["solution"]
# Solution: open it once you have tried. It uses its own names, so your answer stays as it is.
def solution_fold_bn_into_conv(bn: nn.BatchNorm2d, conv: nn.Conv2d) -> nn.Conv2d:
    s = bn.weight / torch.sqrt(bn.running_var + bn.eps)
    t = bn.bias - bn.running_mean * s
    folded = copy.deepcopy(conv)
    bias = conv.bias if conv.bias is not None else conv.weight.new_zeros(conv.out_channels)
    with torch.no_grad():
        folded.weight.copy_(conv.weight * s.view(1, -1, 1, 1))
        folded.bias = nn.Parameter(bias + (conv.weight * t.view(1, -1, 1, 1)).sum((1, 2, 3)))
    return folded


ch10_inference.exercise_2(solution_fold_bn_into_conv)

# %% [markdown]
# ## Summary
#
# - `torch.compile`: time the first call (compilation, seconds with an empty cache) apart from
#   the later ones; it pays after the number of calls the recipe prints. `reduce-overhead` for
#   CUDA graphs, `fullgraph=True` to turn graph breaks into errors.
# - Conv-BN fusion and merged branches are exact algebra: one convolution instead of two or
#   three, checked to 1e-4 (`torch.compile` folds BN only with freezing, without gradients).
# - Int8 on a CPU: torchao's PT2E flow (export, `prepare_pt2e`, calibrate, `convert_pt2e`)
#   simulates int8 until Inductor's freezing passes (`lower_pt2e_quantized_to_x86`) give it int8
#   kernels; without VNNI, 7-bit activations (`reduce_range=True`); `quantize_` is the route for
#   linear layers.
# - On a GPU, autocast to float16 or bfloat16 at inference, not `model.half()`.
#
# Next: [11 · Memory](../11_memory.ipynb).
