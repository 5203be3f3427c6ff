# %% [markdown]
# # 06 · Losses: scoring the CNN's logits
#
# [![Open In Colab](https://colab.research.google.com/assets/colab-badge.svg)](https://colab.research.google.com/github/pytorch-cookbook/pytorch-cookbook/blob/main/notebooks/06_losses.ipynb)
#
# The untrained CNN turns a CIFAR2 batch into logits. This lesson scores them with one number,
# the cross-entropy loss: computed by hand and by PyTorch, read against a coin toss, softened
# with label smoothing, and sent back through `backward()` to every weight of the CNN.
#
# **You will be able to:**
# - turn logits into probabilities with softmax, and compute the cross-entropy by hand
# - explain why losses take logits, not probabilities, and show what goes wrong otherwise
# - read a loss value: ln 2 for a coin toss on two classes, and what a low loss does not say
# - use `BCEWithLogitsLoss` for one logit, and label smoothing for targets short of certainty
# - call `backward()` on a loss and find a gradient on every parameter of the CNN
#
# **Before you start:** indexing a tensor, and reductions such as `mean` and `argmax`
# ([01](01_tensors.ipynb));
# `backward()`, `.grad` and an update under `no_grad()` ([03](03_autograd.ipynb)); the CNN and
# its parameters ([04](04_modules.ipynb)); a DataLoader's batches
# ([05](05_datasets_dataloaders.ipynb)).
#
# **Cookbook:** [06 · Losses:
# recipes](cookbook/06_losses_recipes.ipynb) holds every recipe of this chapter (regression
# losses and outliers, multi-label targets, sequence layouts, masks, ignored targets, focal loss,
# regularisation, imbalanced classes), for when you need one.
#
# **Study time:** about 80 min: 1,919 words of text at 120 a minute, 205 lines of code at 10 a minute, 26 code cells to run at 1 minute each (reading what they print), 2 exercises at 10 minutes each.
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

import math

import matplotlib.pyplot as plt
import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

from helpers.check import check, expect_error
from helpers.env import setup
from helpers.exercises import lesson06
from helpers.images import channel_stats, load_cifar2
from helpers.models import small_cnn

device = setup(seed=0)

# %% [markdown]
# ## A loss: one number for how wrong the logits are
#
# For each image the CNN outputs two **logits**, one per class: the larger one is the class it
# leans to. Training (07) changes the weights until the logits are right. For that it needs one
# differentiable number that says how wrong a whole batch's logits are, the **loss**, so that
# `backward()` (03) can tell every weight which way to move.
#
# Here is a batch from a DataLoader (05) and the untrained CNN (random weights):

# %%
images, labels, classes = load_cifar2("train")
loader = DataLoader(
    TensorDataset(images, labels),
    batch_size=64,
    shuffle=True,
    generator=torch.Generator().manual_seed(0),
)
x, y = next(iter(loader))
torch.manual_seed(0)
model = small_cnn(*channel_stats(images))  # untrained: random weights
logits = model(x)
print("images:", tuple(x.shape), "| labels:", tuple(y.shape))
print("logits:", tuple(logits.shape))

# %% [markdown]
# **Softmax** turns a row of logits $z$ into probabilities: $p_k = e^{z_k} / \sum_j e^{z_j}$,
# each positive, summing to 1. The **cross-entropy** loss is then the average, over the batch,
# of minus the log of the probability each image gives to its *true* class:
#
# $$\text{loss} = -\frac{1}{N}\sum_{n=1}^{N} \log p_{n,\,y_n}$$
#
# A right and sure image ($p \to 1$) adds almost 0; a wrong and sure one ($p \to 0$) adds a lot.
# The logits of the first three images, their probabilities and their labels:

# %% tags=["nbval-ignore-output"]
probs = logits.softmax(dim=1)
for n in range(3):
    shown = [round(v, 3) for v in logits[n].tolist()]
    p = [round(v, 3) for v in probs[n].tolist()]
    print(f"image {n}: logits {shown} → probabilities {p} | true class {y[n].item()}")

# %%
check(
    (probs > 0).all() and torch.allclose(probs.sum(dim=1), torch.ones(64)),
    "every row of probabilities is positive and sums to 1",
)

# %% [markdown]
# By hand: `F.log_softmax` computes the log of the softmax in one step (the next section shows
# why one step). From its `(64, 2)` result we need, in each row `n`, the entry at column `y[n]`.
# Indexing with two tensors of indices of the same length, `a[rows, cols]`, picks one element per
# pair: `a[rows[0], cols[0]]`, `a[rows[1], cols[1]]`, and so on. With `rows = torch.arange(N)`,
# the tensor 0, 1, …, N−1, and `cols = y`, that is one entry per row, at the row's label:

# %%
a = torch.tensor([[10, 11], [20, 21], [30, 31]])
rows, cols = torch.arange(3), torch.tensor([1, 0, 1])
print("rows:", rows.tolist(), "| cols:", cols.tolist())
print("a[rows, cols]:", a[rows, cols].tolist())

# %% [markdown]
# PyTorch's loss is a module, `nn.CrossEntropyLoss()` (04), and a function, `F.cross_entropy`;
# both take the logits and the labels:

# %%
log_probs = F.log_softmax(logits, dim=1)
by_hand = -log_probs[torch.arange(len(y)), y].mean()  # row n, column y[n]
as_module = nn.CrossEntropyLoss()(logits, y)
as_function = F.cross_entropy(logits, y)
check(
    torch.allclose(by_hand, as_module) and torch.allclose(by_hand, as_function),
    "the cross-entropy by hand equals nn.CrossEntropyLoss and F.cross_entropy",
)

# %% [markdown]
# ## Why the loss takes logits, not probabilities
#
# Why not give the loss the probabilities? Because $e^{z}$ overflows: in `float32` it is `inf`
# above $z \approx 88.7$, and a network's logits can grow that large:

# %%
near_limit = torch.tensor([88.0, 88.7, 88.8, 89.0])  # float32, the default
for value, exp in zip(near_limit.tolist(), near_limit.exp().tolist(), strict=True):
    print(f"exp({value:.1f}) in float32: {exp:.4g}")

# %% [markdown]
# Two very confident images, the first one wrong (its true class is 1, its logits say 0 by a
# margin of 1,000):

# %%
big = torch.tensor([[1000.0, 0.0], [0.0, 30.0]])
big_y = torch.tensor([1, 1])


def rounded(t):
    return [[float(f"{v:.4g}") for v in row] for row in t.tolist()]


naive = big.exp() / big.exp().sum(dim=1, keepdim=True)  # softmax as the formula says
print("exp(1000) in float32:", torch.tensor(1000.0).exp().item())
print("softmax by the formula:", rounded(naive))
print(
    "PyTorch's softmax:",
    rounded(big.softmax(dim=1)),
    "| its log:",
    rounded(big.softmax(dim=1).log()),
)
print("log_softmax:", rounded(F.log_softmax(big, dim=1)))

# %% [markdown]
# The formula gives `inf / inf = nan` (not a number). PyTorch's `softmax` subtracts each row's largest logit
# first, so nothing overflows, but the wrong image's probability $e^{-1000}$ still rounds to 0,
# and $\log 0 = -\infty$. `log_softmax` never forms that probability: it computes
# $z_k - \max z - \log\sum_j e^{z_j - \max z}$, which is exactly −1000. Here
# $\max z + \log\sum_j e^{z_j - \max z}$ is $\log\sum_j e^{z_j}$ computed without overflow;
# `torch.logsumexp(z, dim=1)` gives it for each row. The loss and, worse, the gradient that
# training would follow:

# %%
z = big.clone().requires_grad_()  # requires_grad=True, in place: a leaf that gets a .grad
via_probs = -z.softmax(dim=1).log()[torch.arange(2), big_y].mean()
via_probs.backward()
grad_soft = z.grad[0].tolist()
print("softmax, then log: loss", via_probs.item(), "| image 0's gradient:", grad_soft)
z.grad = None
from_logits = F.cross_entropy(z, big_y)
from_logits.backward()
grad_logits = z.grad[0].tolist()
print("from the logits: loss", from_logits.item(), "| image 0's gradient:", grad_logits)
print("logsumexp of each row:", torch.logsumexp(big, dim=1).tolist())
check(
    torch.isinf(via_probs) and all(math.isnan(g) for g in grad_soft),
    "softmax, then log: an infinite loss and a nan gradient",
)
check(
    abs(from_logits.item() - 500) < 1e-3 and torch.isfinite(z.grad).all(),
    "from the logits: a finite loss (the mean of 1000 and 0) and a finite gradient",
)

# %% [markdown]
# A `nan` gradient would spread into every weight at the next update. So: the model outputs
# logits, and the loss applies `log_softmax` itself.
#
# Do not end the model with a softmax layer before `CrossEntropyLoss` either. There is no error,
# but the loss applies softmax a second time, to probabilities. With two classes, two
# probabilities differ by at most 1, so an image's loss can never drop below
# $\log(1 + e^{-1}) \approx 0.313$, however sure and right the model is:

# %%
sure_right = torch.tensor([[0.0, 20.0]])  # the logits of a sure, right image of class 1
one = torch.tensor([1])
softmax_twice = F.cross_entropy(sure_right.softmax(dim=1), one)  # after a softmax layer
print(f"loss from its logits: {F.cross_entropy(sure_right, one).item():.4g}")
print(f"loss from its probabilities: {softmax_twice.item():.4f}")
print(f"log(1 + e^-1): {math.log(1 + math.exp(-1)):.4f}")
check(
    F.cross_entropy(sure_right, one) < 1e-6
    and abs(softmax_twice.item() - math.log(1 + math.exp(-1))) < 1e-4,
    "softmax twice: a sure, right image scores 0.313 instead of about 0",
)

# %% [markdown]
# With the extra softmax, 0.313 is the best loss even a perfect model can reach, and the
# readings of the next section no longer hold.

# %% [markdown]
# ## Reading a loss: ln 2 is a coin toss
#
# A model that says 50 / 50 for every image scores $-\log 0.5 = \ln 2 \approx 0.693$, whatever
# the labels. The untrained CNN knows nothing about airplanes and cars, so its loss should be of
# the order of ln 2. It is above it here, because random weights make it *lean*: its logits
# favour one class for every image, whatever the image shows, so the images of the other class
# are all wrong and cost more. Subtracting each class's average logit over the batch removes
# the lean:

# %% tags=["nbval-ignore-output"]
loss = F.cross_entropy(logits, y)
lean = probs[:, 1].mean()
centred = F.cross_entropy(logits - logits.mean(dim=0), y)
print(f"the untrained CNN's loss: {loss.item():.4f} | ln 2: {math.log(2):.4f}")
print(f"average probability it gives to automobile: {lean.item():.3f}")
print(f"its loss with the lean removed: {centred.item():.4f}")

# %%
check(abs(loss.item() - math.log(2)) < 0.5, "the untrained loss: within 0.5 of ln 2")
check(abs(centred.item() - math.log(2)) < 0.1, "without its lean: within 0.1 of ln 2")

# %% [markdown]
# Check this before training any classifier: with $C$ classes an untrained model should score
# about $\ln C$. A start far above (5, or 50) means huge logits: inputs not normalised, or
# weights drawn too large at the start.
#
# Going the other way, what does a low loss say? The loss $L$ is the mean of $-\log p$ over the
# images, so $e^{-L}$ is the *geometric* mean of the probabilities given to the true classes
# (the exp of the mean of their logs). It does not count right and wrong images. Take 100
# images of class 1: 90 right by a margin of 9, 10 wrong by a margin of 0.2 (`argmax` gives the
# class each row of logits picks):

# %%
demo = torch.tensor([[0.0, 9.0]] * 90 + [[0.2, 0.0]] * 10)  # list * 90: 90 copies
demo_y = torch.ones(100, dtype=torch.int64)  # all of class 1
demo_loss = F.cross_entropy(demo, demo_y)
p_true = demo.softmax(dim=1)[:, 1]
accuracy = (demo.argmax(dim=1) == demo_y).float().mean()
geometric = p_true.log().mean().exp()
print(f"loss: {demo_loss.item():.4f} | accuracy: {accuracy.item():.2f}")
print(f"e^-loss: {math.exp(-demo_loss.item()):.4f} | geometric mean: {geometric:.4f}")
print(f"plain mean of p: {p_true.mean().item():.4f}")
check(
    abs(math.exp(-demo_loss.item()) - geometric.item()) < 1e-5,
    "e^-loss is the geometric mean of the probabilities of the true classes",
)
check(demo_loss < 0.1 and accuracy == 0.9, "a loss below 0.1 with 10 % of images wrong")

# %% [markdown]
# So a low loss says that the model gives the true classes high probabilities on the whole, not
# that every image is right: how many are right, the **accuracy**, is measured on its own (07).
# A loss of 0 would need logits infinitely far apart, but float32 rounds it to 0 long before:
# the logits 0 and 20 above already give a loss of 0.

# %% [markdown]
# ## Two classes, one logit: `BCEWithLogitsLoss`
#
# Softmax does not change when the same number is added to every logit, so with two classes
# only the difference matters: $p_1 = \sigma(z_1 - z_0)$, where $\sigma(m) = 1/(1 + e^{-m})$ is
# the **sigmoid**. A model with one output (a last layer `nn.Linear(128, 1)`) can give that
# difference directly, and its loss is `nn.BCEWithLogitsLoss` (binary cross-entropy, computed
# from the logit in one stable step, for the reasons of the last section). On our logits:

# %%
margin = logits[:, 1] - logits[:, 0]  # one logit per image: how much more "automobile"
bce = nn.BCEWithLogitsLoss()(margin, y.float())
check(
    torch.allclose(torch.sigmoid(margin), probs[:, 1]),
    "sigmoid of the difference of the two logits is softmax's probability of class 1",
)
check(
    torch.allclose(bce, F.cross_entropy(logits, y)),
    "BCEWithLogitsLoss on the one logit equals the two-logit cross-entropy",
)

# %% [markdown]
# Its targets are floats of the logits' shape (0.0, 1.0 or any probability in [0, 1]); the
# `int64` labels ("Long" in PyTorch's messages) must be converted:

# %%
with expect_error(RuntimeError):
    F.binary_cross_entropy_with_logits(margin, y)

# %% [markdown]
# ## Label smoothing: targets short of certainty
#
# Two arguments first. `reduction="none"` returns one loss per image instead of their
# mean (`"sum"` adds them up); the picture below uses it. `weight=` makes the images of one
# class count more, for a rare class: the cookbook's recipe [Weight classes, ignore targets,
# smooth labels](cookbook/06_losses_recipes.ipynb#Weight-classes,-ignore-targets,-smooth-labels)
# shows it.

# %%
per_image = F.cross_entropy(logits, y, reduction="none")
print("reduction='none':", tuple(per_image.shape))
check(torch.allclose(per_image.mean(), loss), "averaged, the 64 losses give the loss")

# %% [markdown]
# The argument 07 trains with is `label_smoothing=ε` (ε = 0.1). It changes the **target**.
# Without it, the target of an image is probability 1 on its class and 0 elsewhere; with it,
# every class gets $\varepsilon / C$ and the true class $1 - \varepsilon$ on top. For two classes
# and $\varepsilon = 0.1$: 0.95 and 0.05. The loss is the cross-entropy against that target,
# $-\sum_k t_k \log p_k$ (`F.cross_entropy` also takes such probability targets directly). The
# pair indexing of the first section also assigns, one entry per row:

# %%
smoothed = F.cross_entropy(logits, y, label_smoothing=0.1)
target = torch.zeros(len(y), 2) + 0.05  # 0.1 / 2 for every class...
target[torch.arange(len(y)), y] = 0.95  # ...and 1 - 0.1 + 0.1 / 2 for the true one
example = [round(t, 4) for t in target[y == 1][0].tolist()]
print("target of an image of class 1:", example)
against_target = -(target * log_probs).sum(dim=1).mean()
check(
    torch.allclose(smoothed, against_target)
    and torch.allclose(smoothed, F.cross_entropy(logits, target)),
    "label_smoothing=0.1 is the cross-entropy against the target 0.95 / 0.05",
)

# %% [markdown]
# A picture shows what it does. For one image, the loss depends only on the
# **margin** of its true class, its logit minus the other one. Below, both losses computed by
# `F.cross_entropy` over a range of margins (`torch.linspace(a, b, n)` gives `n` evenly spaced
# numbers from `a` to `b`; `stack(..., dim=1)` adds the new dimension second: a row per
# margin), with the batch as dots:

# %%
margins = torch.linspace(-6, 8, 561)
curve = torch.stack([torch.zeros(len(margins)), margins], dim=1)  # (561, 2): logits 0 and m
ones = torch.ones(len(margins), dtype=torch.int64)
plain_curve = F.cross_entropy(curve, ones, reduction="none")
smooth_curve = F.cross_entropy(curve, ones, reduction="none", label_smoothing=0.1)
best = margins[smooth_curve.argmin()]
each = torch.arange(len(y))
own_margin = (logits[each, y] - logits[each, 1 - y]).detach()  # the true class's margin

fig, ax = plt.subplots(figsize=(6.5, 3.6), layout="constrained")
ax.plot(margins, plain_curve, label="cross-entropy")
ax.plot(margins, smooth_curve, label="with label_smoothing=0.1")
ax.scatter(own_margin, per_image.detach(), s=12, c="k", zorder=3, label="our batch")
ax.axvline(best, color="gray", ls="--", lw=1)
note = f"smoothed minimum\nat margin {best:.2f}"
ax.annotate(note, (best, 1.5), xytext=(best + 0.3, 2.5))
ax.set(xlabel="margin of the true class (its logit minus the other)", ylabel="loss")
ax.set_ylim(0, 6)
ax.legend(loc="upper center")
plt.show()

# %%
check(
    abs(best - math.log(19)) < 0.05 and smooth_curve.min() > 0.19,
    "the smoothed loss is smallest at margin ln 19 (probability 0.95), never 0",
)
check(
    (plain_curve[1:] < plain_curve[:-1]).all(),
    "the plain cross-entropy falls all the way: a larger margin always scores better",
)
check(
    len(set((own_margin > 0).tolist())) == 2
    and all(len(set((own_margin[y == k] > 0).tolist())) == 1 for k in (0, 1)),
    "the untrained CNN's lean: one class all right, the other all wrong",
)

# %% [markdown]
# On the left, wrong images cost about their margin: the loss is nearly a straight line. On the
# right, the plain loss keeps rewarding an image that is already right by far, pushing the model
# to ever larger logits; the smoothed loss is smallest at probability 0.95 (margin $\ln 19$) and
# rises beyond it, so over-confidence costs. The untrained CNN's batch falls in two groups, one
# per class: its lean towards one class gives every image of that class a positive margin, and
# every image of the other class a negative one.

# %% [markdown]
# ## `backward()`: from the loss to every weight
#
# The loss is one number computed from the logits, hence from every weight of the CNN, so
# `backward()` (03) fills a `.grad` for each parameter, of that parameter's shape:

# %%
loss = F.cross_entropy(model(x), y)
loss.backward()
params = list(model.named_parameters())
missing = [name for name, p in params if p.grad is None or p.grad.shape != p.shape]
print("parameters:", len(params), "| without a gradient of their own shape:", missing)
print(
    "the last layer's weight:",
    tuple(model[-1].weight.shape),
    "| its gradient:",
    tuple(model[-1].weight.grad.shape),
)

# %% [markdown]
# The gradient says how the loss changes when a weight moves. As in 03, a small step against it
# (under `no_grad()`, since the update is not part of the model) must lower the loss on this
# batch:

# %% tags=["nbval-ignore-output"]
with torch.no_grad():
    for p in model.parameters():
        p -= 0.01 * p.grad
    after = F.cross_entropy(model(x), y)
print(f"loss before the step: {loss.item():.4f} | after: {after.item():.4f}")

# %%
check(after < loss, "one small step against the gradient lowers the loss on this batch")


# %% [markdown]
# That step, repeated over many batches, is training. 07 writes the loop around it, with an
# optimizer that takes the steps and a schedule for their size.

# %% [markdown]
# ## Exercises

# %% [markdown]
# ### Exercise 1 · Cross-entropy from scratch, safe from overflow
#
# Write `my_cross_entropy(logits, y)`: the mean cross-entropy of logits `(N, C)` against labels
# `(N,)`, without calling a softmax, `log_softmax` or a ready-made loss. It must stay finite and
# right for logits 1,000 times larger than the CNN's. The check compares it with
# `F.cross_entropy` on our batch, as it is and multiplied by 1,000.
#
# <details><summary>Hint 1</summary>
#
# $\log p_k = z_k - \log\sum_j e^{z_j}$. The loss needs it only at each row's own label.
# </details>
#
# <details><summary>Hint 2</summary>
#
# One function named in the lesson computes $\log\sum_j e^{z_j}$ for each row without overflow.
# Then pick each row's logit at its label the way the lesson picked its log-probability.
# </details>

# %%
def my_cross_entropy(logits, y):
    loss = ...  # a tensor holding one number
    return loss


# %%
lesson06.exercise_1(my_cross_entropy, logits, y)


# %% [markdown]
# #### Solution

# %% tags=["solution"]
# Solution: open it once you have tried. It uses its own names, so your answer stays as it is.
def solution_my_cross_entropy(solution_logits, solution_y):
    solution_true = solution_logits[torch.arange(len(solution_y)), solution_y]
    return (torch.logsumexp(solution_logits, dim=1) - solution_true).mean()


lesson06.exercise_1(solution_my_cross_entropy, logits, y)


# %% [markdown]
# ### Exercise 2 · Label-smoothed targets for any number of classes
#
# Write `smooth_targets(y, num_classes, eps)`, which returns the targets that
# `label_smoothing=eps` trains towards: a float tensor `(len(y), num_classes)` whose row `n` has
# $1 - \varepsilon + \varepsilon / C$ at column `y[n]` and $\varepsilon / C$ everywhere else.
# The check tries two classes with ε = 0.1 (our batch) and ten classes with ε = 0.2.
#
# <details><summary>Hint 1</summary>
#
# Start with $\varepsilon / C$ everywhere, then change each row's entry at its label.
# </details>
#
# <details><summary>Hint 2</summary>
#
# The lesson built the target for two classes and ε = 0.1 in two lines. Which of the numbers in
# them depend on the number of classes, and which on ε?
# </details>

# %%
def smooth_targets(y, num_classes, eps):
    targets = ...  # a float tensor (len(y), num_classes)
    return targets


# %%
lesson06.exercise_2(smooth_targets, logits, y)


# %% [markdown]
# #### Solution

# %% tags=["solution"]
# Solution: open it once you have tried. It uses its own names, so your answer stays as it is.
def solution_smooth_targets(solution_y, solution_classes, solution_eps):
    solution_n, solution_c = len(solution_y), solution_classes
    solution_t = torch.zeros(solution_n, solution_c) + solution_eps / solution_c
    solution_t[torch.arange(solution_n), solution_y] += 1 - solution_eps
    return solution_t


lesson06.exercise_2(solution_smooth_targets, logits, y)

# %% [markdown]
# ## Summary
#
# - A loss turns a batch of logits and labels into one differentiable number; the
#   cross-entropy is the mean of $-\log p$ of each image's true class, $p$ from a softmax.
# - Give losses logits: `F.cross_entropy` and `BCEWithLogitsLoss` use `log_softmax` and its
#   one-logit twin, which stay finite where softmax-then-log gives `inf` and `nan` gradients;
#   no softmax layer before the loss.
# - An untrained classifier scores about $\ln C$ ($\ln 2 \approx 0.693$ for CIFAR2); $e^{-L}$
#   is the geometric mean of the true classes' probabilities, and accuracy is measured apart.
# - `BCEWithLogitsLoss` scores one logit per image; `label_smoothing=` trains towards targets
#   short of certainty and stops rewarding over-confidence.
# - `loss.backward()` fills a gradient for every parameter, and a small step against it lowers
#   the loss: the step 07 repeats in a loop.
#
# Next: [07 · The training loop](07_training_loop.ipynb).
