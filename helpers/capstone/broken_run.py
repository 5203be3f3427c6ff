"""A training run that does not learn: project P2's debugging task.

It trains a small CNN on 1,024 CIFAR2 training images for 5 epochs and measures it on 512 other
images after each epoch. It runs to the end without an error, and it does not learn. Three
lines are wrong: one in the data, one in the model and one in the training step. Find them with
lesson 13's checklist, fix them in your copy, and run it:

    python fixed_run.py --out history.json
"""

import argparse
import json

import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

from helpers.images import channel_stats, load_cifar2

EPOCHS = 5


def make_data(seed: int = 0) -> tuple[DataLoader, torch.Tensor, torch.Tensor, list, list]:
    """A loader over 1,024 training images; 512 validation images and their labels; the
    training images' per-channel mean and std."""
    images, labels, _ = load_cifar2("train")
    order = torch.randperm(len(labels), generator=torch.Generator().manual_seed(seed))
    val_index = order[:512]
    train_index = order[512:1536].sort().values  # in file order: reading them is sequential
    train_images, train_labels = images[train_index], labels[train_index]
    mean, std = channel_stats(train_images)
    loader = DataLoader(TensorDataset(train_images, train_labels), batch_size=64, shuffle=False)
    return loader, images[val_index], labels[val_index], mean, std


class Net(nn.Module):
    """Three convolution blocks and a linear head; takes uint8 images, returns 2 logits."""

    def __init__(self, mean: list, std: list, width: int = 16) -> None:
        super().__init__()
        self.register_buffer("mean", torch.tensor(mean).view(1, 3, 1, 1))
        self.register_buffer("std", torch.tensor(std).view(1, 3, 1, 1))
        self.blocks = []
        channels = 3
        for out in (width, 2 * width, 4 * width):
            self.blocks.append(
                nn.Sequential(
                    nn.Conv2d(channels, out, 3, padding=1, bias=False),
                    nn.BatchNorm2d(out),
                    nn.ReLU(),
                    nn.MaxPool2d(2),
                )
            )
            channels = out
        self.head = nn.Linear(channels, 2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = (x.float() / 255 - self.mean) / self.std
        for block in self.blocks:
            x = block(x)
        return self.head(x.mean(dim=(2, 3)))


def train_step(model: nn.Module, optimizer: torch.optim.Optimizer, x, y) -> float:
    """One training step on a batch; returns its loss."""
    loss = F.cross_entropy(model(x), y)
    loss.backward()
    optimizer.zero_grad()
    optimizer.step()
    return loss.item()


def evaluate(model: nn.Module, images: torch.Tensor, labels: torch.Tensor) -> float:
    """The accuracy on ``images``, in evaluation mode."""
    model.eval()
    with torch.inference_mode():
        return (model(images).argmax(dim=1) == labels).float().mean().item()


def run(seed: int = 0, epochs: int = EPOCHS) -> dict[str, list[float]]:
    """Train from ``seed``; return each epoch's mean training loss and validation accuracy."""
    torch.manual_seed(seed)
    loader, val_images, val_labels, mean, std = make_data(seed)
    model = Net(mean, std)
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-3)
    total = epochs * len(loader)
    schedule = torch.optim.lr_scheduler.OneCycleLR(optimizer, max_lr=3e-3, total_steps=total)
    history = {"train_loss": [], "val_accuracy": []}
    for _ in range(epochs):
        model.train()
        losses = []
        for x, y in loader:
            losses.append(train_step(model, optimizer, x, y))
            schedule.step()
        history["train_loss"].append(sum(losses) / len(losses))
        history["val_accuracy"].append(evaluate(model, val_images, val_labels))
    return history


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="history.json", help="where to write the history")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    history = run(args.seed)
    with open(args.out, "w") as file:
        json.dump(history, file)
    accuracies = ", ".join(f"{a:.3f}" for a in history["val_accuracy"])
    print(f"validation accuracy after each epoch: {accuracies}")
