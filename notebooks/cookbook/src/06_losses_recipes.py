# %% [markdown]
# # 06 · Losses: recipes
#
# [![Open In Colab](https://colab.research.google.com/assets/colab-badge.svg)](https://colab.research.google.com/github/pytorch-cookbook/pytorch-cookbook/blob/main/notebooks/cookbook/06_losses_recipes.ipynb)
#
# **The cookbook of chapter 06.** New to the topic? [The lesson](../06_losses.ipynb) teaches it
# step by step on the course's running example. Here each recipe answers one task; the
# [recipe index](../RECIPES.md) and the [error index](../ERRORS.md) find the one you need.
#
# The loss is the number training makes smaller, so choosing and calling it right matters as much
# as the model. After this notebook you can pick a regression loss for data with outliers, use the
# numerically safe binary and multi-class losses with class weights, ignored targets, label
# smoothing and masks, check each against its formula, write your own loss (focal loss), add L1 and
# L2 regularisation the right way, and compare losses on an imbalanced problem with a metric that
# fits it.
#
# **Prerequisites:** [03](../03_autograd.ipynb), [04](../04_modules.ipynb).
#
# **Run time:** about 15 s on a 2-core CPU · GPU optional.

# %%
import sys

if (
    "google.colab" in sys.modules
):  # Colab: install the course's helpers and what the notebooks import
    import subprocess

    spec = "pytorch-cookbook[notebooks] @ git+https://github.com/pytorch-cookbook/pytorch-cookbook"
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", spec], check=True)

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import torch
import torch.nn.functional as F
from sklearn.datasets import make_classification
from sklearn.metrics import average_precision_score, precision_recall_curve
from sklearn.model_selection import train_test_split
from torch import nn
from torchvision.ops import sigmoid_focal_loss

from helpers.check import check, expect_error, expect_warning
from helpers.env import setup
from helpers.exercises import ch06

device = setup(seed=0)
torch.set_printoptions(precision=4, sci_mode=False)

# %% [markdown]
# ## Write the objective as loss plus regularisation
#
# Training minimises an **objective**: a data term, the loss averaged over samples, plus optional
# regularisation that prefers simple models:
#
# $$J(w) = \frac{1}{N}\sum_i \ell\big(f_w(x_i), y_i\big) + \lambda\,R(w).$$
#
# Most PyTorch losses take `loss(input, target)`: the model's output first, the truth second
# (embedding losses such as `cosine_embedding_loss(x1, x2, y)` take pairs or triplets). Most are
# not symmetric, and swapping the arguments is a silent bug when the shapes and dtypes happen to
# fit:

# %%
logits = torch.tensor([[2.0, 0.5, -1.0]])
target = torch.tensor([0])
print(f"cross_entropy(logits, target): {F.cross_entropy(logits, target).item():.4f}")
p, q = torch.tensor([0.9, 0.1]), torch.tensor([0.6, 0.4])
print(
    f"binary_cross_entropy(p, q): {F.binary_cross_entropy(p, q).item():.4f}",
    f"| swapped: {F.binary_cross_entropy(q, p).item():.4f}",
)

# %% [markdown]
# ## Choose a regression loss for data with outliers
#
# `MSELoss` squares the error, so one large error dominates; `L1Loss` grows linearly and ignores how
# far an outlier is; `HuberLoss(delta)` is quadratic near zero and linear beyond `delta`
# (`SmoothL1Loss(beta)` is the same curve divided by `beta`).

# %%
errors = torch.linspace(-3, 3, 301)
zeros = torch.zeros_like(errors)
curves = {
    "MSE": F.mse_loss(errors, zeros, reduction="none"),
    "L1": F.l1_loss(errors, zeros, reduction="none"),
    "Huber (delta=1)": F.huber_loss(errors, zeros, reduction="none", delta=1.0),
    "SmoothL1 (beta=0.5)": F.smooth_l1_loss(errors, zeros, reduction="none", beta=0.5),
}
fig, ax = plt.subplots(figsize=(5, 3.2))
for name, values in curves.items():
    ax.plot(errors, values, label=name)
ax.set(xlabel="prediction - target", ylabel="loss", ylim=(0, 4), title="Regression losses")
ax.legend()
plt.show()
check(
    torch.allclose(
        F.huber_loss(errors, zeros, reduction="none", delta=2.0),
        2.0 * F.smooth_l1_loss(errors, zeros, reduction="none", beta=2.0),
    ),
    "HuberLoss(delta) = delta × SmoothL1Loss(beta=delta)",
)

# %% [markdown]
# Fitting a line $y = 2x + 1$ to 100 points of which 10 are gross outliers shows the difference:

# %%
gen = torch.Generator().manual_seed(0)
x = torch.rand(100, generator=gen) * 4 - 2
y = 2 * x + 1 + 0.1 * torch.randn(100, generator=gen)
y[:10] += 15  # outliers, all on one side


def fit_line(loss_fn) -> tuple[float, float]:
    w = torch.zeros(2, requires_grad=True)
    optimizer = torch.optim.Adam([w], lr=0.05)
    for _ in range(800):
        optimizer.zero_grad()
        loss_fn(w[0] * x + w[1], y).backward()
        optimizer.step()
    return round(w[0].item(), 3), round(w[1].item(), 3)


fits = {"MSE": fit_line(F.mse_loss), "L1": fit_line(F.l1_loss), "Huber": fit_line(F.huber_loss)}
for name, (slope, intercept) in fits.items():
    print(f"{name:<6} slope {slope:6.3f}  intercept {intercept:6.3f}   (truth: 2, 1)")
check(
    abs(fits["Huber"][1] - 1) < 0.3 and abs(fits["MSE"][1] - 1) > 1,
    "the outliers drag the MSE fit away; Huber stays close to the truth",
)

# %% [markdown]
# ### Pitfall: `(N, 1)` outputs against `(N,)` targets broadcast to `(N, N)`
#
# A regression head ends in `nn.Linear(d, 1)` and outputs `(N, 1)`; targets read from a column
# are `(N,)`. The regression losses broadcast the two to `(N, N)`, comparing every prediction
# with every target, and only warn (`mse_loss`, `l1_loss`, `smooth_l1_loss`, `huber_loss`). Even perfect predictions get a loss far from 0:

# %%
pred = torch.tensor([[1.0], [2.0], [3.0]])  # a regression head's output: (N, 1)
target = torch.tensor([1.0, 2.0, 3.0])  # targets as a vector: (N,)
with expect_warning(UserWarning, match="target size"):
    broadcast_loss = F.mse_loss(pred, target)  # (3, 1) against (3,): (3, 3) differences
matched_loss = F.mse_loss(pred.squeeze(1), target)  # or target.unsqueeze(1)
print(f"perfect predictions: {broadcast_loss.item():.4f} with (N, 1) vs (N,)", end=", ")
print(f"{matched_loss.item():.4f} with matched shapes")
check(
    matched_loss.item() == 0 and broadcast_loss.item() > 1,
    "mismatched shapes give a wrong loss even for perfect predictions",
)

# %% [markdown]
# `binary_cross_entropy_with_logits` refuses the same mismatch instead of warning:

# %%
with expect_error(ValueError):
    F.binary_cross_entropy_with_logits(pred, target)

# %% [markdown]
# **What to notice:** make the shapes equal before the loss, `pred.squeeze(1)` or
# `target.unsqueeze(1)`, and treat that `UserWarning` as an error.

# %% [markdown]
# ## Use `BCEWithLogitsLoss`, not sigmoid then `BCELoss`
#
# For two classes the model outputs one **logit** $z$ per sample. `BCELoss` wants a probability,
# so it is tempting to apply `sigmoid` first. In `float32`, `sigmoid(20)` is exactly `1.0`: the
# information is gone before the loss sees it. `BCELoss` then clamps $\log 0$ to $-100$ and, worse,
# the gradient through the saturated sigmoid is **zero**, so the confidently wrong samples, the ones
# that most need correcting, teach the model nothing. `BCEWithLogitsLoss` computes
# $\log(1 + e^{z})$ stably from the logit:

# %%
z = torch.tensor([-40.0, 0.0, 20.0, 40.0, 120.0], requires_grad=True)
wrong = torch.zeros(5)  # the truth is class 0, so large logits are confidently wrong
for name, loss_fn in {
    "sigmoid + BCELoss": lambda z: F.binary_cross_entropy(
        torch.sigmoid(z), wrong, reduction="none"
    ),
    "BCEWithLogitsLoss": lambda z: F.binary_cross_entropy_with_logits(z, wrong, reduction="none"),
}.items():
    z.grad = None
    loss = loss_fn(z)
    loss.sum().backward()
    print(f"{name:<18} loss {loss.detach().numpy().round(3)}  gradient {z.grad.numpy().round(3)}")
check(
    torch.allclose(z.grad, torch.sigmoid(z.detach())),
    "the logits loss gives the right gradient, sigmoid(z) - y, even at z = 120",
)

# %% [markdown]
# `pos_weight` multiplies the loss of positive targets: with 1 positive per 19 negatives,
# `pos_weight=19` gives both classes the same total weight.

# %%
logits_b = torch.tensor([0.3, -1.2, 2.0])
labels_b = torch.tensor([1.0, 0.0, 1.0])
plain = F.binary_cross_entropy_with_logits(logits_b, labels_b, reduction="none")
weighted = F.binary_cross_entropy_with_logits(
    logits_b, labels_b, reduction="none", pos_weight=torch.tensor(19.0)
)
print(plain, weighted, sep="\n")
check(
    torch.allclose(weighted, plain * torch.where(labels_b == 1, 19.0, 1.0)),
    "pos_weight scales only the positive samples' terms",
)

# %% [markdown]
# ## Use `CrossEntropyLoss` on logits for several classes
#
# `CrossEntropyLoss` takes raw logits of shape `(N, C)` and class indices of shape `(N,)`. It is
# `log_softmax` followed by `NLLLoss` in one numerically stable step:

# %%
gen = torch.Generator().manual_seed(1)
logits = torch.randn(4, 3, generator=gen)
labels = torch.tensor([0, 2, 1, 2])
ce = F.cross_entropy(logits, labels)
print(
    f"cross_entropy: {ce.item():.6f} · "
    f"nll_loss(log_softmax): {F.nll_loss(F.log_softmax(logits, dim=1), labels).item():.6f}"
)
check(
    torch.isclose(ce, F.nll_loss(F.log_softmax(logits, dim=1), labels)),
    "cross_entropy = log_softmax + nll_loss",
)

# %% [markdown]
# Targets can also be **probabilities** of shape `(N, C)` (soft labels, mixup, distillation); one-hot
# probabilities give the same loss as indices:

# %%
soft = torch.tensor([[0.7, 0.2, 0.1], [0.0, 0.5, 0.5], [0.0, 1.0, 0.0], [0.1, 0.1, 0.8]])
by_formula = -(soft * F.log_softmax(logits, dim=1)).sum(dim=1).mean()
soft_ce = F.cross_entropy(logits, soft).item()
print(f"cross_entropy: {soft_ce:.6f} · by formula: {by_formula.item():.6f}")
check(
    torch.isclose(F.cross_entropy(logits, soft), by_formula)
    and torch.isclose(F.cross_entropy(logits, F.one_hot(labels, 3).float()), ce),
    "probability targets follow -Σ p log q, and one-hot targets equal index targets",
)

# %% [markdown]
# ## Lay out logits for sequences and pixels, and targets for several labels at once
#
# `cross_entropy` wants the classes in **dimension 1**: logits `(N, C)`, or `(N, C, d1, ...)` with
# targets `(N, d1, ...)` for a class per position (tokens of a sequence, pixels of a
# segmentation). A sequence model returns `(N, T, C)`. If T differs from C, passing that raises;
# if T happens to equal C, it runs and computes the wrong loss, with the time steps taken for
# classes. Move the classes to dimension 1, or flatten the positions into the batch:

# %%
torch.manual_seed(0)
seq_logits = torch.randn(8, 4, 4)  # (N, T, C) with T == C == 4: the silent case
seq_targets = torch.randint(0, 4, (8, 4))  # (N, T)
layouts = {
    "(N, T, C) as given (wrong)": F.cross_entropy(seq_logits, seq_targets),
    "transpose(1, 2) to (N, C, T)": F.cross_entropy(seq_logits.transpose(1, 2), seq_targets),
    "flatten to (N·T, C)": F.cross_entropy(seq_logits.flatten(0, 1), seq_targets.flatten()),
}
for name, value in layouts.items():
    print(f"{name:<28} {value.item():.4f}")
with expect_error(RuntimeError):
    F.cross_entropy(torch.randn(8, 5, 4), seq_targets.repeat(1, 2)[:, :5])  # T=5, C=4

# %%
wrong, moved, flat = layouts.values()
check(
    torch.allclose(moved, flat) and not torch.allclose(wrong, moved),
    "classes in dimension 1 (or flattened) give the right loss; (N, T, C) with T == C does not",
)

# %% [markdown]
# **Several labels per sample** (a photo with a dog *and* a ball) is not a softmax problem: each
# class is its own yes/no. Targets are multi-hot `(N, C)` floats and the loss is
# `BCEWithLogitsLoss`, one sigmoid per class; `pos_weight` (one value per class, e.g. negatives
# / positives) makes rare labels count more:

# %%
torch.manual_seed(0)
multi_logits = torch.randn(6, 3)
multi_hot = torch.tensor([[1, 0, 1], [0, 0, 1], [1, 1, 0], [0, 0, 0], [1, 0, 1], [0, 0, 1]]).float()
positives = multi_hot.sum(0)
pos_weight = (len(multi_hot) - positives) / positives  # per class: negatives / positives
loss = nn.BCEWithLogitsLoss(pos_weight=pos_weight)(multi_logits, multi_hot)
by_hand = -(
    pos_weight * multi_hot * F.logsigmoid(multi_logits)
    + (1 - multi_hot) * F.logsigmoid(-multi_logits)
).mean()
print("positives per class:", positives.tolist(), "· pos_weight:", pos_weight.tolist())
print(f"multi-label loss {loss.item():.4f}, by hand {by_hand.item():.4f}")
check(
    torch.allclose(loss, by_hand),
    "BCEWithLogitsLoss with pos_weight weights each class's positive terms",
)

# %% [markdown]
# ### Pitfall: `0D or 1D target tensor expected` and `Expected input batch_size (64) to match target batch_size (32)`
#
# Two messages from `cross_entropy` whose cause is a shape. Class targets stored as a column,
# `(N, 1)` (as a CSV column or `labels.unsqueeze(1)` gives them), need `squeeze(1)`. And a
# batch size that doubles between input and target almost always comes from a `view(-1, K)`
# with the wrong `K`, which folds part of the batch into the rows instead of raising;
# `flatten(1)` keeps the batch dimension whatever the feature size, and the head must then take
# the true feature size (here 256, not 128): a wrong size raises a shape error instead of
# silently doubling the batch:

# %%
column_targets = torch.tensor([[0], [2], [1], [1]])
four_logits = torch.randn(4, 3)
with expect_error(RuntimeError):
    F.cross_entropy(four_logits, column_targets)
loss = F.cross_entropy(four_logits, column_targets.squeeze(1))
print(
    "targets after squeeze(1):",
    tuple(column_targets.squeeze(1).shape),
    "| loss shape:",
    tuple(loss.shape),
)
features = torch.randn(32, 16, 4, 4)  # 32 samples of 16 × 4 × 4 = 256 features
head = nn.Linear(128, 10)  # a head built for 128 features
with expect_error(ValueError):
    F.cross_entropy(head(features.view(-1, 128)), torch.randint(0, 10, (32,)))
right_head = nn.Linear(256, 10)
print("flatten(1):", tuple(features.flatten(1).shape))
check(
    right_head(features.flatten(1)).shape == (32, 10),
    "flatten(1) keeps the 32 samples apart",
)

# %% [markdown]
# ## Weight classes, ignore targets, smooth labels
#
# - `weight=w` (one per class) multiplies each sample's loss by the weight of its **true** class,
#   and with `reduction="mean"` divides by the **sum of those weights**, not by `N`, for **index**
#   targets. For **probability** targets (one-hot included) it weights each class's term but
#   divides by `N`: so once `weight=` is set, one-hot targets no longer give the index loss.
# - `ignore_index` (default `-100`) drops samples with that target from the loss and the average.
# - `label_smoothing=ε` trains towards $(1-\varepsilon)$ on the true class plus $\varepsilon/C$ on
#   **every** class (the true one included): $(1-\varepsilon)\,\mathrm{CE} + \varepsilon \cdot
#   \frac{1}{C}\sum_k -\log q_k$.

# %%
w = torch.tensor([1.0, 2.0, 5.0])
per_sample = F.cross_entropy(logits, labels, reduction="none")
by_hand = (w[labels] * per_sample).sum() / w[labels].sum()
print(
    f"weighted mean: {F.cross_entropy(logits, labels, weight=w).item():.6f}",
    f"| by hand: {by_hand.item():.6f}",
)
check(
    torch.isclose(F.cross_entropy(logits, labels, weight=w), by_hand),
    "the weighted mean divides by the sum of the selected weights",
)
one_hot = F.one_hot(labels, 3).float()
with_probs = F.cross_entropy(logits, one_hot, weight=w)
print(f"same weights, one-hot targets: {with_probs.item():.6f} = weighted sum / N")
check(
    torch.isclose(with_probs, (w[labels] * per_sample).sum() / len(labels))
    and not torch.isclose(with_probs, by_hand),
    "with weight=, probability targets divide by N: one-hot no longer equals index targets",
)

masked = torch.tensor([0, -100, 1, -100])
check(
    torch.isclose(F.cross_entropy(logits, masked), per_sample[[0, 2]].mean()),
    "ignore_index drops those samples from the loss and the average",
)

eps = 0.1
smoothed = (1 - eps) * ce + eps * (-F.log_softmax(logits, dim=1).mean(dim=1)).mean()
check(
    torch.isclose(F.cross_entropy(logits, labels, label_smoothing=eps), smoothed),
    "label_smoothing = (1-ε)·CE + ε·mean over classes of -log q",
)

# %% [markdown]
# The label smoothing of many older tutorials is a different loss: $1-\varepsilon$ on the true class and
# $\varepsilon/(C-1)$ on each other class (the true class gets no share of ε). Both are
# "label smoothing"; with the same ε they give different targets, losses and gradients, so say
# which one you mean when you compare results.

# %%
C = 3
torch_target = one_hot * (1 - eps) + eps / C
older_target = torch.full((4, C), eps / (C - 1)).scatter(1, labels.unsqueeze(1), 1 - eps)
log_q = F.log_softmax(logits, dim=1)
print("targets for class 0, PyTorch:", [round(v, 4) for v in torch_target[0].tolist()])
print("targets for class 0, ε/(C-1):", [round(v, 4) for v in older_target[0].tolist()])
older_loss = -(older_target * log_q).sum(dim=1).mean()
torch_loss = F.cross_entropy(logits, labels, label_smoothing=eps)
print(f"loss, PyTorch: {torch_loss.item():.4f}  ε/(C-1): {older_loss.item():.4f}")
check(
    torch.isclose(torch_loss, -(torch_target * log_q).sum(dim=1).mean())
    and not torch.isclose(torch_loss, older_loss),
    "PyTorch puts ε/C on every class; the older ε/(C-1) on the others is another loss",
)

# %% [markdown]
# ## Mask a loss with `reduction="none"`
#
# `reduction="none"` returns one loss per element; multiply by a mask and divide by the number of
# real elements to average over what exists (padding in sequences, missing values):

# %%
pred = torch.tensor([[1.0, 2.0, 0.0], [0.5, 0.0, 0.0]])
truth = torch.tensor([[1.5, 2.0, 9.9], [0.0, 9.9, 9.9]])
mask = torch.tensor([[1.0, 1.0, 0.0], [1.0, 0.0, 0.0]])  # 9.9 marks padding
loss = (F.mse_loss(pred, truth, reduction="none") * mask).sum() / mask.sum()
print(f"masked MSE {loss.item():.4f} over {int(mask.sum())} real values")
print(
    "sum:",
    F.mse_loss(pred, pred + 1, reduction="sum").item(),
    "| mean:",
    F.mse_loss(pred, pred + 1).item(),
)

# %% [markdown]
# ### Pitfall: softmax over the wrong dimension
#
# Logits are `(batch, classes)`; probabilities must sum to 1 over **classes** (`dim=1`). With
# `dim=0` each class is normalised over the batch: no error, just wrong numbers, and the loss
# depends on which other samples share the batch.

# %%
probs_wrong = F.softmax(logits, dim=0)
probs_right = F.softmax(logits, dim=1)
print("row sums, dim=0:", probs_wrong.sum(dim=1))
print("row sums, dim=1:", probs_right.sum(dim=1))
check(
    torch.allclose(probs_right.sum(dim=1), torch.ones(4))
    and not torch.allclose(probs_wrong.sum(dim=1), torch.ones(4)),
    "only dim=1 gives each sample a distribution over classes",
)

# %% [markdown]
# ## Compare distributions with `KLDivLoss`
#
# `KLDivLoss` computes $\mathrm{KL}(p \,\|\, q) = \sum p \,(\log p - \log q)$ with the arguments in
# an unusual form: the **input is $\log q$** (log-probabilities of the model), the target is $p$
# (probabilities, or log-probabilities with `log_target=True`). Use `reduction="batchmean"`: the
# default `"mean"` divides by the number of elements, not the batch size, and is not the KL
# divergence.

# %%
log_q = F.log_softmax(torch.randn(4, 3, generator=gen), dim=1)
p = F.softmax(torch.randn(4, 3, generator=gen), dim=1)
kl = F.kl_div(log_q, p, reduction="batchmean")
by_formula = (p * (p.log() - log_q)).sum() / 4
print(f"batchmean {kl.item():.6f}  by formula {by_formula.item():.6f}")
with expect_warning(UserWarning, match="batchmean"):
    mean_kl = F.kl_div(log_q, p, reduction="mean")
print(f"'mean' gives {mean_kl.item():.6f}, and PyTorch warns (above)")
check(
    torch.isclose(kl, by_formula)
    and torch.isclose(F.kl_div(log_q, p.log(), reduction="batchmean", log_target=True), kl),
    "batchmean KLDivLoss equals Σ p (log p - log q) / batch, also with log_target=True",
)

# %% [markdown]
# `batchmean` divides by `input.size(0)` only. For sequences, `(N, T, C)` (distilling a language
# model token by token), that is the KL **summed over the T positions**, per sequence; divide by
# T too (or flatten to `(N·T, C)`) for the per-token KL. In knowledge distillation both
# distributions are softened with a temperature τ, and the KL term is multiplied by τ² so its
# gradients keep their size as τ changes (Hinton et al., 2015).

# %%
N, T = 2, 5
student = F.log_softmax(torch.randn(N, T, 3, generator=gen), dim=-1)
teacher = F.softmax(torch.randn(N, T, 3, generator=gen), dim=-1)
per_token = (teacher * (teacher.log() - student)).sum(dim=-1).mean()
batchmean = F.kl_div(student, teacher, reduction="batchmean")
print(f"batchmean {batchmean.item():.4f} = T × per-token KL {per_token.item():.4f}")
check(torch.isclose(batchmean, T * per_token), "on (N, T, C), batchmean sums over positions")
flat = F.kl_div(student.flatten(0, 1), teacher.flatten(0, 1), reduction="batchmean")
check(torch.isclose(flat, per_token), "flattened to (N·T, C), batchmean is the per-token KL")


def distillation_loss(student_logits, teacher_logits, tau: float = 2.0) -> torch.Tensor:
    """KL between temperature-softened distributions, times τ², per token."""
    s = F.log_softmax(student_logits.flatten(0, -2) / tau, dim=-1)
    t = F.softmax(teacher_logits.flatten(0, -2) / tau, dim=-1)
    return F.kl_div(s, t, reduction="batchmean") * tau**2


kd = distillation_loss(torch.randn(N, T, 3, generator=gen), torch.randn(N, T, 3, generator=gen))
print(f"distillation loss: {kd.item():.4f}")

# %% [markdown]
# ## Compare embeddings with cosine and margin losses
#
# For embeddings, direction matters more than length. `F.cosine_similarity` compares directions;
# `CosineEmbeddingLoss` pulls pairs labelled `1` together and pushes pairs labelled `-1` below a
# margin; `TripletMarginLoss` wants each anchor closer to its positive than to its negative.

# %%
a = torch.tensor([[1.0, 0.0], [1.0, 1.0]])
b = torch.tensor([[2.0, 0.0], [-1.0, -1.0]])
print("cosine similarity:", F.cosine_similarity(a, b, dim=1))
print(
    "cosine embedding loss (same, different):",
    F.cosine_embedding_loss(a, b, torch.tensor([1, -1]), reduction="none"),
)
anchor, positive, negative = (
    torch.zeros(1, 2),
    torch.tensor([[0.1, 0.0]]),
    torch.tensor([[3.0, 0.0]]),
)
print(
    "triplet loss, already separated by the margin:",
    F.triplet_margin_loss(anchor, positive, negative, margin=1.0).item(),
)


# %% [markdown]
# ## Write your own loss: focal loss
#
# A loss is any differentiable function of tensors, so a plain function works; an `nn.Module` is
# handy when it has settings. **Focal loss** multiplies binary cross-entropy by $(1 - p_t)^\gamma$,
# where $p_t$ is the probability given to the true class, so well-classified (easy) samples count
# far less than hard ones. $\alpha$ weights the positives ($\alpha$) against the negatives
# ($1-\alpha$): the usual $\alpha = 0.25$ (the focal-loss paper's, and torchvision's default)
# **down**-weights the positives, which is one reason focal loss is more conservative at a 0.5
# threshold than BCE. (Some examples use 0.75, which up-weights them.) The library version is
# `torchvision.ops.sigmoid_focal_loss`; we write it to see how, and check it equals the library.

# %%
def focal_loss(
    logits: torch.Tensor,
    targets: torch.Tensor,
    gamma: float = 2.0,
    alpha: float = 0.25,
    reduction: str = "mean",
) -> torch.Tensor:
    bce = F.binary_cross_entropy_with_logits(logits, targets, reduction="none")
    p = torch.sigmoid(logits)
    p_t = p * targets + (1 - p) * (1 - targets)
    alpha_t = alpha * targets + (1 - alpha) * (1 - targets)
    loss = alpha_t * (1 - p_t) ** gamma * bce
    return {"none": loss, "mean": loss.mean(), "sum": loss.sum()}[reduction]


class FocalLoss(nn.Module):
    def __init__(self, gamma: float = 2.0, alpha: float = 0.25):
        super().__init__()
        self.gamma, self.alpha = gamma, alpha

    def forward(self, logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        return focal_loss(logits, targets, self.gamma, self.alpha)


# %% [markdown]
# The classic comparison: a positive sample the model already gets right ($p = 0.9$, easy) and one it
# gets badly wrong ($p = 0.1$, hard). The ratios of the hard one to the easy one are printed below:
# as a loss value, BCE weighs it 22×, focal loss 1770×; training follows gradients, and there the
# ratios are 9× and 380×. Either way training concentrates on the mistakes.

# %%
probs = torch.tensor([0.9, 0.1])  # easy, hard: both are positives
logits_eh = torch.logit(probs)
ones = torch.ones(2)
bce_eh = F.binary_cross_entropy_with_logits(logits_eh, ones, reduction="none")
focal_eh = focal_loss(logits_eh, ones, reduction="none")
table = pd.DataFrame(
    {"p(true class)": probs, "BCE": bce_eh, "focal": focal_eh}, index=["easy", "hard"]
)
print(table.round(5))
print(f"loss, hard / easy: BCE {bce_eh[1] / bce_eh[0]:.0f}×", end=", ")
print(f"focal {focal_eh[1] / focal_eh[0]:.0f}×")
z = logits_eh.clone().requires_grad_()
(g_bce,) = torch.autograd.grad(F.binary_cross_entropy_with_logits(z, ones, reduction="sum"), z)
(g_focal,) = torch.autograd.grad(focal_loss(z, ones, reduction="sum"), z)
print(f"gradient, hard / easy: BCE {g_bce[1] / g_bce[0]:.0f}×", end=", ")
print(f"focal {g_focal[1] / g_focal[0]:.0f}×")
check(
    torch.isclose(FocalLoss()(logits_eh, ones), focal_eh.mean()), "the module equals the function"
)
z = torch.randn(8, generator=gen)
t = (torch.rand(8, generator=gen) > 0.5).float()
check(
    torch.allclose(focal_loss(z, t, reduction="none"), sigmoid_focal_loss(z, t, reduction="none")),
    "our focal loss equals torchvision.ops.sigmoid_focal_loss (γ=2, α=0.25)",
)

# %% [markdown]
# ## Regularise with L1 and L2, or with `weight_decay`
#
# L2 regularisation adds $\frac{\lambda}{2}\lVert w\rVert^2$ to the loss, whose gradient is
# $\lambda w$. For plain SGD that is exactly what `weight_decay=λ` adds to each gradient, so the two
# give the same step. (For Adam they differ: Adam rescales the L2 gradient; `AdamW` instead shrinks
# the weights directly, "decoupled" weight decay, which is what you usually want.) L1 has no
# optimizer switch: add $\lambda\lVert w\rVert_1$ to the loss.

# %%
torch.manual_seed(0)
layer_a = nn.Linear(5, 1)
layer_b = nn.Linear(5, 1)
layer_b.load_state_dict(layer_a.state_dict())
xb, yb = torch.randn(16, 5), torch.randn(16, 1)
lam = 0.1

opt_a = torch.optim.SGD(layer_a.parameters(), lr=0.1)
l2 = sum((p**2).sum() for p in layer_a.parameters())
(F.mse_loss(layer_a(xb), yb) + lam / 2 * l2).backward()
opt_a.step()

opt_b = torch.optim.SGD(layer_b.parameters(), lr=0.1, weight_decay=lam)
F.mse_loss(layer_b(xb), yb).backward()
opt_b.step()
check(
    all(
        torch.allclose(pa, pb)
        for pa, pb in zip(layer_a.parameters(), layer_b.parameters(), strict=True)
    ),
    "SGD weight_decay=λ takes the same step as adding (λ/2)·||w||² to the loss",
)

# %% [markdown]
# L1 is famous for sparsity, but gradient descent on $\lambda\lVert w\rVert_1$ does not give
# exact zeros: its (sub)gradient is $\lambda\,\mathrm{sign}(w)$, so a weight that should be 0
# keeps jumping across zero by `lr·λ`. Exact zeros come from a **proximal** step: after the
# ordinary step on the data loss, soft-threshold each weight, $w \leftarrow \mathrm{sign}(w)
# \max(|w| - \mathrm{lr}\,\lambda, 0)$. A regression whose truth uses 3 of 20 features, both
# ways:

# %% tags=["nbval-ignore-output"]
g_l1 = torch.Generator().manual_seed(0)
x_l1 = torch.randn(200, 20, generator=g_l1)
true_w = torch.zeros(20)
true_w[:3] = torch.tensor([2.0, -1.5, 1.0])
y_l1 = x_l1 @ true_w + 0.1 * torch.randn(200, generator=g_l1)


def fit_l1(proximal: bool, lam: float = 0.05, lr: float = 0.05) -> torch.Tensor:
    w = torch.zeros(20, requires_grad=True)
    for _ in range(500):
        loss = F.mse_loss(x_l1 @ w, y_l1)
        if not proximal:
            loss = loss + lam * w.abs().sum()  # the L1 term in the loss: subgradient descent
        w.grad = None
        loss.backward()
        with torch.no_grad():
            w -= lr * w.grad
            if proximal:  # soft-thresholding: the proximal step of the L1 term
                w.copy_(w.sign() * (w.abs() - lr * lam).clamp(min=0))
    return w.detach()


subgradient, proximal = fit_l1(proximal=False), fit_l1(proximal=True)
for name, w in {"L1 in the loss": subgradient, "proximal step": proximal}.items():
    used = [round(v, 2) for v in w[:3].tolist()]
    print(
        f"{name:<15} exact zeros among the 17 unused: {int((w[3:] == 0).sum()):>2}  "
        f"largest unused |w| {w[3:].abs().max().item():.1e}  used: {used}"
    )

# %%
check(
    (subgradient[3:] != 0).all() and subgradient[3:].abs().max() < 0.05,
    "L1 by gradient leaves the unused weights small but not zero",
)
check((proximal[3:] == 0).all(), "the proximal step sets every unused weight exactly to zero")

# %% [markdown]
# Biases and normalisation layers' scales are usually **excluded** from weight decay: shrinking
# them toward zero does not simplify the model and can hurt. Parameter groups do it: one rule that
# works for most models is "decay tensors with 2 or more dimensions" (weight matrices and kernels).

# %%
model = nn.Sequential(nn.Conv2d(3, 8, 3), nn.BatchNorm2d(8), nn.Flatten(), nn.LazyLinear(2))
model(torch.zeros(1, 3, 8, 8))  # materialise the lazy layer
decay = [p for p in model.parameters() if p.ndim >= 2]
no_decay = [p for p in model.parameters() if p.ndim < 2]
optimizer = torch.optim.AdamW(
    [{"params": decay, "weight_decay": 0.05}, {"params": no_decay, "weight_decay": 0.0}], lr=1e-3
)  # helpers.train.decay_groups(model, 0.05) builds these two groups; later chapters use it
names = {id(p): n for n, p in model.named_parameters()}
for group in optimizer.param_groups:
    print(f"weight_decay={group['weight_decay']}:", [names[id(p)] for p in group["params"]])

# %% [markdown]
# ## Compare losses on an imbalanced problem
#
# Does the loss choice matter when positives are rare? A synthetic problem from scikit-learn with
# about 5% positives (5.5% after `flip_y` flips 1% of the labels at random, as printed below),
# split in half, and the same small network trained with three losses: plain BCE, BCE with
# `pos_weight=19` and focal loss. Accuracy would say nothing here (predicting "negative" always
# scores 94.5%, one minus the positive share), so we compare **average precision** (the area under the precision-recall
# curve, independent of any threshold) and **recall at 80% precision**, plus precision and recall
# at the default threshold of 0.5.

# %%
features, targets = make_classification(
    n_samples=20_000,
    n_features=20,
    n_informative=6,
    n_redundant=4,
    weights=[0.95],
    flip_y=0.01,
    class_sep=0.7,
    random_state=0,
)
x_train, x_test, y_train, y_test = train_test_split(
    features, targets, test_size=0.5, stratify=targets, random_state=0
)
x_train, x_test = (
    torch.tensor(x_train, dtype=torch.float32),
    torch.tensor(x_test, dtype=torch.float32),
)
y_train = torch.tensor(y_train, dtype=torch.float32)
print(f"{len(x_train):,} training samples, {y_train.mean():.1%} positive")

losses = {
    "BCE": lambda z, t: F.binary_cross_entropy_with_logits(z, t),
    "BCE, pos_weight=19": lambda z, t: F.binary_cross_entropy_with_logits(
        z, t, pos_weight=torch.tensor(19.0)
    ),
    "focal (γ=2, α=0.25)": FocalLoss(),
}


def train_and_score(loss_fn, seed: int = 0) -> tuple[dict, np.ndarray]:
    torch.manual_seed(seed)
    net = nn.Sequential(
        nn.Linear(20, 64), nn.ReLU(), nn.Linear(64, 64), nn.ReLU(), nn.Linear(64, 1)
    )
    optimizer = torch.optim.Adam(net.parameters(), lr=3e-3)
    for _ in range(15):
        for idx in torch.randperm(len(x_train)).split(256):  # drawn from the seeded generator
            optimizer.zero_grad()
            loss_fn(net(x_train[idx]).squeeze(1), y_train[idx]).backward()
            optimizer.step()
    with torch.inference_mode():
        scores = torch.sigmoid(net(x_test).squeeze(1)).numpy()
    precision, recall, _ = precision_recall_curve(y_test, scores)
    predicted = scores >= 0.5
    return {
        "average precision": average_precision_score(y_test, scores),
        "recall at precision ≥ 0.8": recall[precision >= 0.8].max(),
        "precision at 0.5": (predicted & (y_test == 1)).sum() / max(predicted.sum(), 1),
        "recall at 0.5": (predicted & (y_test == 1)).sum() / (y_test == 1).sum(),
    }, scores


# %% [markdown]
# One training run per loss would compare seeds as much as losses, so each loss is trained with 3
# seeds; the table shows mean ± standard deviation over them (the curves below are seed 0).

# %% tags=["nbval-ignore-output"]
runs, all_scores = [], {}
for name, loss_fn in losses.items():
    for seed in range(3):
        metrics, scores = train_and_score(loss_fn, seed)
        runs.append({"loss": name, "seed": seed, **metrics})
        if seed == 0:
            all_scores[name] = scores
runs = pd.DataFrame(runs)
summary = runs.drop(columns="seed").groupby("loss", sort=False).agg(["mean", "std"])
results = summary.xs("mean", axis=1, level=1)
spread = summary.xs("std", axis=1, level=1)
results.round(3).astype(str) + " ± " + spread.round(3).astype(str)

# %%
fig, ax = plt.subplots(figsize=(5, 3.5))
for name, scores in all_scores.items():
    precision, recall, _ = precision_recall_curve(y_test, scores)
    ax.plot(recall, precision, label=f"{name} (AP {results.loc[name, 'average precision']:.3f})")
ax.set(xlabel="recall", ylabel="precision", title="Imbalanced test set, 5.5% positives")
ax.legend(fontsize=8)
plt.show()

# %% [markdown]
# **What to notice.** The loss matters, but not the way folklore says. `pos_weight` moves the
# **operating point**: at the default threshold it finds far more positives, paying for them in
# precision, while its threshold-free average precision is no better. Focal loss ranks about as
# well as plain BCE and is more conservative at 0.5 (its α = 0.25 down-weights the positives). With imbalanced data, compare
# models on a threshold-free metric such as average precision, then choose the threshold for the
# precision or recall you need; weighting is one way to move that threshold, not a free gain.

# %%
ap, ap_std = results["average precision"], spread["average precision"]
per_seed = runs.pivot(index="seed", columns="loss", values="recall at 0.5")
check(
    (per_seed.idxmax(axis=1) == "BCE, pos_weight=19").all(),
    "with every seed, pos_weight gives the highest recall at threshold 0.5",
)
check(
    ap["BCE, pos_weight=19"] < ap["BCE"],
    "weighting did not improve the ranking: its mean average precision is below BCE's",
    measured=f"{ap['BCE, pos_weight=19']:.3f} vs {ap['BCE']:.3f} ± {ap_std['BCE']:.3f}",
)
precision_05 = results["precision at 0.5"]
check(
    precision_05["focal (γ=2, α=0.25)"] > precision_05["BCE"],
    "focal loss (α=0.25) is more conservative at 0.5: higher precision than BCE, on average",
    measured=f"{precision_05['focal (γ=2, α=0.25)']:.3f} vs {precision_05['BCE']:.3f}",
)

# %% [markdown]
# ## Old code you will meet
#
# | old form | write today | why |
# |---|---|---|
# | `F.sigmoid(z)` then `nn.BCELoss()` | `nn.BCEWithLogitsLoss()` on `z` | sigmoid saturates in float32: clamped losses and zero gradients |
# | `nn.KLDivLoss()` (default `reduction="mean"`) | `nn.KLDivLoss(reduction="batchmean")` | `mean` divides by every element and is not the KL divergence; it warns |
# | `size_average=False`, `reduce=False` | `reduction="sum"`, `reduction="none"` | the old arguments are deprecated |
# | `F.softmax(x)` without `dim` | `F.softmax(x, dim=1)` | the implicit `dim` is deprecated and guesses |
# | `torch.optim.Adam(..., weight_decay=λ)` for decoupled decay | `torch.optim.AdamW(..., weight_decay=λ)` | Adam's `weight_decay` is an L2 term rescaled by Adam |
# | `nn.NLLLoss2d()` | `nn.NLLLoss()` (takes `(N, C, H, W)` log-probabilities and `(N, H, W)` targets) | deprecated: `FutureWarning` |

# %% [markdown]
# ## Exercises

# %% [markdown]
# ### Exercise 1 · Cross-entropy from scratch, stable for huge logits
#
# Fill in `my_cross_entropy`, a function `my_cross_entropy(logits, labels)` that returns the mean
# cross-entropy of `(N, C)` logits against class indices as a 0-d tensor, without `softmax` and
# without a ready-made loss (`F.cross_entropy`, `F.nll_loss`). It must also be right for `huge`,
# logits around 1,000 where a naive `softmax(x).log()` overflows.
#
# <details><summary>Hint 1</summary>
#
# Cross-entropy is minus the log-probability of the right class. Write the log of a softmax as
# one expression in the logits and see which part of it can blow up.
# </details>
#
# <details><summary>Hint 2</summary>
#
# `torch.logsumexp` computes the log of the softmax's denominator without overflowing; write
# log-softmax with it. Picking one value per row is advanced indexing with a row index and the
# labels, as in 01.
# </details>

# %%
my_cross_entropy = ...  # a function (logits, labels) -> 0-d tensor, e.g. one you write with `def`
huge = torch.tensor([[1000.0, 999.0, 0.0], [0.0, 1000.0, 10.0]])
targets = torch.tensor([1, 1])

# %%
ch06.exercise_1(my_cross_entropy, huge, targets)


# %% [markdown]
# #### Solution

# %% tags=["solution"]
# Solution: open it once you have tried. It uses its own names, so your answer stays as it is.
def solution_cross_entropy(logits: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    """The mean of −log softmax(logits)[i, labels[i]] over the batch, as a 0-d tensor."""
    log_probs = logits - torch.logsumexp(logits, dim=1, keepdim=True)
    return -log_probs[torch.arange(len(labels)), labels].mean()


ch06.exercise_1(solution_cross_entropy, huge, targets)

# %% [markdown]
# ### Exercise 2 · Class weights from label frequencies
#
# From `counts`, the images per class, fill in `weights`, $w_k = N / (C \cdot n_k)$ (the
# "balanced" rule), and `by_hand`, the weighted mean cross-entropy of the batch,
# $\sum_i w_{y_i}\,\ell_i / \sum_i w_{y_i}$, from the per-sample losses `per`.
#
# <details><summary>Hint 1</summary>
#
# $N$ is the number of images in all, $C$ the number of classes, and the formula works on the
# whole `counts` tensor at once. In the weighted mean, each sample brings the weight of its own
# label.
# </details>
#
# <details><summary>Hint 2</summary>
#
# Indexing the class weights with the batch's labels gives one weight per sample, as in the
# section on weighting classes. Divide by the sum of those weights, not by the batch size.
# </details>

# %%
counts = torch.tensor([900.0, 90.0, 10.0])
batch_logits = torch.randn(6, 3, generator=torch.Generator().manual_seed(2))
batch_labels = torch.tensor([0, 0, 1, 2, 0, 1])
per = F.cross_entropy(batch_logits, batch_labels, reduction="none")
weights = ...  # one weight per class, N / (C · n_k)
by_hand = ...  # Σ w_{y_i} ℓ_i / Σ w_{y_i}

# %%
ch06.exercise_2(counts, batch_logits, batch_labels, weights, by_hand)

# %% [markdown]
# #### Solution

# %% tags=["solution"]
# Solution: open it once you have tried. It uses its own names, so your answer stays as it is.
solution_weights = counts.sum() / (len(counts) * counts)
solution_w = solution_weights[batch_labels]
solution_by_hand = (solution_w * per).sum() / solution_w.sum()
ch06.exercise_2(counts, batch_logits, batch_labels, solution_weights, solution_by_hand)

# %% [markdown]
# ### Exercise 3 · A regression loss that skips missing values
#
# `truth` marks missing values with `NaN`. Fill in `masked_huber`, a function
# `masked_huber(pred, truth)` that returns the Huber loss averaged over the observed values only.
# After `backward()`, the gradient must be finite everywhere and zero at the missing positions.
#
# <details><summary>Hint 1</summary>
#
# A NaN that takes part in the computation spreads to the loss and to the gradient. Decide which
# values may take part before computing anything.
# </details>
#
# <details><summary>Hint 2</summary>
#
# Indexing with a boolean mask keeps only the observed values of both tensors, and the Huber
# loss in `F` does the rest. Multiplying by a 0/1 mask or `torch.where` is not enough: NaN × 0 is
# NaN, and the unused branch of `torch.where` still sends NaN gradients back.
# </details>

# %%
masked_huber = ...  # a function (pred, truth) -> 0-d tensor; torch.isnan(truth) finds the gaps
pred = torch.tensor([[1.0, 2.0], [3.0, 4.0]], requires_grad=True)
truth = torch.tensor([[1.5, float("nan")], [0.0, 4.0]])

# %%
ch06.exercise_3(masked_huber, pred, truth)


# %% [markdown]
# #### Solution

# %% tags=["solution"]
# Solution: open it once you have tried. It uses its own names, so your answer stays as it is.
def solution_masked_huber(pred: torch.Tensor, truth: torch.Tensor) -> torch.Tensor:
    """The Huber loss over the positions where truth is not NaN, as a 0-d tensor."""
    observed = ~torch.isnan(truth)
    return F.huber_loss(pred[observed], truth[observed])


ch06.exercise_3(solution_masked_huber, pred, truth)

# %% [markdown]
# ## Summary
#
# - Call losses as `loss(input, target)`; the objective is the mean loss plus regularisation.
# - MSE chases outliers, L1 and Huber resist them; use `BCEWithLogitsLoss` and `CrossEntropyLoss`
#   on **logits**, never after your own sigmoid or softmax.
# - `weight` averages by the selected weights, `ignore_index` and masks with `reduction="none"`
#   drop samples, `label_smoothing` mixes in a uniform target: each was checked here by hand.
# - `KLDivLoss` takes log-probabilities and wants `reduction="batchmean"` (per sequence on
#   `(N, T, C)`); custom losses such as focal loss are plain functions or modules.
# - SGD's `weight_decay` is L2 regularisation; prefer `AdamW`, and leave biases and norm layers
#   out of weight decay. On imbalanced data, compare losses by average precision, not accuracy.
#
# Next: [07 · The training loop](07_training_loop_recipes.ipynb).
