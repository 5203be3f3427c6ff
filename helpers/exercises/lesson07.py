"""Checks for lesson 07 · The training loop's exercises: the reference answers live here, not in
the notebook."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

from helpers.exercises import close, equal, filled, report, tensor_close, true
from helpers.models import small_cnn

# The epoch the checker runs: 300 random images in batches of 128, so the last batch holds 44.
IMAGES, BATCH, SEED = 300, 128, 7


def _epoch_setup(device: Any) -> tuple[nn.Module, DataLoader, nn.Module, Any, Any]:
    """A seeded small CNN, a loader with a smaller last batch, a loss, AdamW and OneCycleLR."""
    with torch.random.fork_rng(devices=[]):  # leave the notebook's random numbers alone
        torch.manual_seed(SEED)
        model = small_cnn([0.5, 0.5, 0.5], [0.25, 0.25, 0.25], width=4).to(device)
        images = torch.randint(0, 256, (IMAGES, 3, 32, 32), dtype=torch.uint8)
        labels = torch.randint(0, 2, (IMAGES,))
    loader = DataLoader(TensorDataset(images, labels), batch_size=BATCH)  # no shuffle: one order
    optimizer = torch.optim.AdamW(model.parameters(), lr=0.01, weight_decay=5e-4)
    scheduler = torch.optim.lr_scheduler.OneCycleLR(optimizer, max_lr=0.01, total_steps=len(loader))
    return model, loader, nn.CrossEntropyLoss(label_smoothing=0.1), optimizer, scheduler


def _reference_epoch(device: Any) -> tuple[nn.Module, float, float]:
    """The weights after the reference epoch, its mean loss per image, and the (wrong) mean of
    its batch losses."""
    model, loader, loss_fn, optimizer, scheduler = _epoch_setup(device)
    model.train()
    total, count, batch_means = 0.0, 0, []
    for images, labels in loader:
        images, labels = images.to(device), labels.to(device)
        loss = loss_fn(model(images), labels)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        scheduler.step()
        total += loss.item() * len(labels)
        count += len(labels)
        batch_means.append(loss.item())
    return model, total / count, sum(batch_means) / len(batch_means)


def _weights(model: nn.Module) -> torch.Tensor:
    return torch.cat([p.detach().flatten().cpu() for p in model.parameters()])


def exercise_1(train_one_epoch: Callable[..., Any] | Any, device: Any = "cpu") -> None:
    """train_one_epoch(model, loader, loss_fn, optimizer, scheduler, device) trains one epoch
    as the lesson's loop does and returns the mean training loss per image."""
    ran: dict[str, Any] = {}

    def run() -> str | None:
        if not callable(train_one_epoch):
            return "train_one_epoch should be a function, written with `def`"
        model, loader, loss_fn, optimizer, scheduler = _epoch_setup(device)
        start = _weights(model)
        model.eval()  # as a model is after evaluate(): the function must switch training on
        with torch.random.fork_rng(devices=[]):  # iterating a DataLoader draws a seed
            ran["loss"] = train_one_epoch(model, loader, loss_fn, optimizer, scheduler, device)
        ran.update(model=model, scheduler=scheduler, start=start, batches=len(loader))
        return None

    def returned() -> str | None:
        if ran["loss"] is None:
            return "train_one_epoch returned None: return the mean training loss per image"
        try:
            float(ran["loss"])
        except (TypeError, ValueError, RuntimeError):
            return f"train_one_epoch returned a {type(ran['loss']).__name__}, not a number"
        return None

    def moved() -> str | None:
        return true(
            not torch.equal(_weights(ran["model"]), ran["start"]),
            "the weights did not change: the epoch has to step the optimiser",
        )

    def training_mode() -> str | None:
        return true(
            ran["model"].training,
            "the model is still in evaluation mode: an epoch of training starts by switching "
            "training mode on",
        )

    def scheduled() -> str | None:
        return equal(
            "scheduler.last_epoch",
            ran["scheduler"].last_epoch,
            ran["batches"],
            hint=f"the schedule should step once after each of the {ran['batches']} batches",
        )

    reference: dict[str, Any] = {}

    def weights() -> str | None:
        with torch.random.fork_rng(devices=[]):
            model, reference["loss"], reference["batch_mean"] = _reference_epoch(device)
        return tensor_close(
            "the weights after your epoch",
            _weights(ran["model"]),
            _weights(model),
            atol=1e-5,
            hint="one epoch is the five lines per batch, in order: forward, loss, zero_grad, "
            "backward, step",
        )

    def mean_loss() -> str | None:
        loss = float(ran["loss"])
        if abs(loss - reference["batch_mean"]) < 1e-6 < abs(loss - reference["loss"]):
            return (
                "you returned the mean of the batch losses: the last batch holds fewer images, "
                "so weight each batch's loss by its number of images"
            )
        return close("the returned loss", loss, reference["loss"], tol=1e-5)

    report(
        filled(train_one_epoch=train_one_epoch),
        run,
        returned,
        moved,
        training_mode,
        scheduled,
        weights,
        mean_loss,
        done="one epoch trained as the lesson's loop does, and the mean loss per image returned",
    )


def _numbers(value: Any) -> list[float] | None:
    """The floats of a list, tuple or 1-D tensor, or None when value is not such a sequence."""
    try:
        return [float(v) for v in (value.tolist() if hasattr(value, "tolist") else value)]
    except (TypeError, ValueError, RuntimeError):
        return None


def exercise_2(model: nn.Module, loader: DataLoader, per_class: Any) -> None:
    """per_class is [accuracy on the images of label 0, accuracy on those of label 1] of model
    over loader, evaluated in eval mode."""
    device = next(model.parameters()).device
    numbers: dict[str, list[float]] = {}

    def shape() -> str | None:
        found = _numbers(per_class)
        if found is None or len(found) != 2:
            return f"per_class should be a list of two numbers, got {per_class!r}"
        numbers["mine"] = found
        return None

    def values() -> str | None:
        model.eval()
        with torch.random.fork_rng(devices=[]), torch.inference_mode():
            pairs = [(model(x.to(device)).argmax(dim=1).cpu(), y) for x, y in loader]
        predicted = torch.cat([p for p, _ in pairs])
        labels = torch.cat([y for _, y in pairs])
        wanted = [(predicted[labels == c] == c).float().mean().item() for c in (0, 1)]
        overall = (predicted == labels).float().mean().item()
        mine = numbers["mine"]

        def near(a: list[float], b: list[float]) -> bool:
            return all(abs(x - y) < 1e-6 for x, y in zip(a, b, strict=True))

        if near(mine, wanted[::-1]) and not near(wanted, wanted[::-1]):
            return "the two numbers are swapped: the airplanes (label 0) come first"
        if near(mine, [overall, overall]) and not near(wanted, [overall, overall]):
            return "that is the accuracy over all images: count each class on its own"
        return tensor_close(
            "per_class",
            torch.tensor(mine, dtype=torch.float64),
            torch.tensor(wanted, dtype=torch.float64),
            atol=1e-6,
            hint="for each class, the share of its images (by their true label) predicted as "
            "that class, with the model in evaluation mode",
        )

    report(
        filled(per_class=per_class),
        shape,
        values,
        done="the accuracy of each class, evaluated in eval mode without a graph",
    )
