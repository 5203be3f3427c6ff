# %% [markdown]
# # P1 · Your own classifier: a reference solution
#
# **Try [the project](../01_your_own_classifier.ipynb) first.** This is one solution among
# many, kept apart so that nobody meets it by accident. It follows the brief's rules: a Dataset
# read from the image files, a model of its own, a loop with a validation split, a TensorBoard
# log, a checkpoint, and two short runs that show the seed repeats the training. The last cell
# grades it with the same checker as yours.
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

import shutil
from pathlib import Path

import torch
import torch.nn.functional as F
from PIL import Image
from torch import nn
from torch.utils.data import DataLoader, Dataset
from torch.utils.tensorboard import SummaryWriter
from torchvision.transforms import v2

from helpers import capstone
from helpers.check import check
from helpers.data import fetch
from helpers.env import setup

device = setup(seed=0)
ROOT = fetch("cifar2")  # the image folders: train/ and test/, one folder per class
RUN = Path("runs/p1_reference")
shutil.rmtree(RUN, ignore_errors=True)
RUN.mkdir(parents=True)


# %% [markdown]
# ## The data: a Dataset over the image files
#
# Every file under `train/` is listed with its label (the class folders in sorted order:
# 0 airplane, 1 automobile). The files are decoded once, into one `uint8` tensor in memory:
# 10,000 images of 32 × 32 × 3 bytes are 31 MB, and an epoch then reads memory, not JPEGs.
# A seeded generator splits them: 10 % for validation, never trained on.

# %%
def decode(path: Path) -> torch.Tensor:
    """A JPEG file as a uint8 tensor (3, H, W), decoded by PIL as the brief suggests."""
    with Image.open(path) as image:
        return v2.functional.pil_to_tensor(image.convert("RGB"))


class ImageFiles(Dataset):
    """The JPEGs ``files`` (relative to ``root``) and their labels, decoded once, as uint8."""

    def __init__(self, root: Path, files: list[str], classes: list[str]) -> None:
        self.files = files
        self.labels = torch.tensor([classes.index(Path(f).parent.name) for f in files])
        self.images = torch.stack([decode(root / f) for f in files])

    def __len__(self) -> int:
        return len(self.files)

    def __getitem__(self, i: int) -> tuple[torch.Tensor, torch.Tensor]:
        return self.images[i], self.labels[i]


classes = sorted(p.name for p in (ROOT / "train").iterdir() if p.is_dir())
all_files = sorted(p.relative_to(ROOT).as_posix() for p in (ROOT / "train").rglob("*.jpg"))
order = torch.randperm(len(all_files), generator=torch.Generator().manual_seed(0)).tolist()
n_val = len(all_files) // 10
val_files = sorted(all_files[i] for i in order[:n_val])
train_files = sorted(all_files[i] for i in order[n_val:])
train_set = ImageFiles(ROOT, train_files, classes)
val_set = ImageFiles(ROOT, val_files, classes)
pixels = train_set.images.float() / 255  # statistics of the training split only
mean = pixels.mean(dim=(0, 2, 3)).tolist()
std = pixels.std(dim=(0, 2, 3)).tolist()
print(f"classes {classes}: {len(train_set)} training and {len(val_set)} validation images")


# %% [markdown]
# ## The model, the loop and the log
#
# Four convolution blocks that double the channels as they halve the size, then one linear
# layer. The model takes the `uint8` images and normalises them itself with the training
# statistics, so the checker (or a server) can feed it raw files. `train` builds everything
# from the seed, so two calls with one seed give the same weights.

# %%
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


def accuracy(model: nn.Module, dataset: ImageFiles) -> float:
    model.eval()
    with torch.inference_mode():
        logits = model(dataset.images.to(device))
    return (logits.argmax(dim=1).cpu() == dataset.labels).float().mean().item()


def train(seed: int, epochs: int = 2, steps: int | None = None, log_dir: Path | None = None):
    """Train a Net from ``seed``; return the model, its optimiser and its validation accuracy."""
    torch.manual_seed(seed)
    model = Net(mean, std).to(device)
    loader = DataLoader(
        train_set, batch_size=64, shuffle=True, generator=torch.Generator().manual_seed(seed)
    )
    total = steps or epochs * len(loader)
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-3, weight_decay=0.01)
    schedule = torch.optim.lr_scheduler.OneCycleLR(optimizer, max_lr=3e-3, total_steps=total)
    flip = v2.RandomHorizontalFlip()
    writer = SummaryWriter(log_dir) if log_dir else None
    step = 0
    while step < total:
        model.train()
        for x, y in loader:
            x, y = flip(x.to(device)), y.to(device)
            loss = F.cross_entropy(model(x), y, label_smoothing=0.1)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            schedule.step()
            step += 1
            if writer and step % 20 == 0:
                writer.add_scalar("train/loss", loss.item(), step)
            if step == total:
                break
        val_acc = accuracy(model, val_set)
        if writer:
            writer.add_scalar("val/accuracy", val_acc, step)
    if writer:
        writer.close()
    return model, optimizer, val_acc


def save(path: Path, model: nn.Module, optimizer, seed: int, val_acc: float) -> Path:
    torch.save(
        {
            "model": model.state_dict(),
            "model_args": {"mean": mean, "std": std},
            "optimizer": optimizer.state_dict(),
            "seed": seed,
            "train_files": train_files,
            "val_files": val_files,
            "mean": mean,
            "std": std,
            "val_accuracy": val_acc,
        },
        path,
    )
    return path


# %% tags=["nbval-ignore-output"]
model, optimizer, val_acc = train(seed=0, epochs=2, log_dir=RUN / "log")
checkpoint = save(RUN / "model.pt", model, optimizer, seed=0, val_acc=val_acc)
repeats = []
for name in ("repeat_a", "repeat_b"):  # the same seed twice, 30 steps each
    short, short_optimizer, short_acc = train(seed=1, steps=30)
    repeats.append(save(RUN / f"{name}.pt", short, short_optimizer, seed=1, val_acc=short_acc))
print(f"validation accuracy after 2 epochs: {val_acc:.4f}")

# %% [markdown]
# ## The grade

# %% tags=["nbval-ignore-output"]
passed = capstone.grade_classifier(checkpoint, Net, RUN / "log", repeats)

# %%
check(passed, "the reference solution meets every criterion of the checker")
