"""Training utilities shared by the chapters that train models."""

from __future__ import annotations

import contextlib
import importlib
import io
import sys
import time
import warnings
from types import ModuleType
from typing import Any, TextIO

# What torchkeras prints or warns on import that says nothing about the reader's code: its
# optional tabular model `tabm` is not installed, and one of its modules uses torch.jit.script.
_TORCHKERAS_NOISE = ("No module named 'tabm'",)


def import_torchkeras() -> ModuleType:
    """Import torchkeras without its known import noise; anything else it prints still shows."""
    out = io.StringIO()
    with warnings.catch_warnings(), contextlib.redirect_stdout(out):
        warnings.filterwarnings(
            "ignore", message=r"`torch\.jit\.script` is deprecated", category=FutureWarning
        )
        module = importlib.import_module("torchkeras")
    for line in out.getvalue().splitlines():
        if line.strip() and line.strip() not in _TORCHKERAS_NOISE:
            print(line)
    return module


class EpochLog:
    """A torchkeras callback: one printed line per epoch instead of a progress bar per step.

    torchkeras' ``fit(plot=False)`` redraws a tqdm bar at every step, which fills a notebook's
    stored output; ``fit(plot=True)`` draws live plots but also writes ``history.png`` into the
    working directory. Pass ``callbacks=[EpochLog()]`` to ``fit`` (or use :func:`fit`, which
    also hides torchkeras' banners) to get, after each epoch::

        epoch 1  train_loss 0.4120  train_acc 0.8140  val_loss 0.3940  val_acc 0.8250  (6 s)

    ``stream`` is where the lines go (standard output when None, looked up at each print).
    """

    def __init__(self, stream: TextIO | None = None) -> None:
        self.stream = stream

    def on_fit_start(self, model) -> None:
        self.start = time.perf_counter()
        runner = type(model).EpochRunner
        # fit() builds one EpochRunner per epoch through this attribute; quiet=True keeps its
        # logic and drops its bar. Removed again in on_fit_end.
        model.EpochRunner = lambda step_runner, quiet=False: runner(step_runner, quiet=True)

    def on_validation_epoch_end(self, model) -> None:
        last = {name: values[-1] for name, values in model.history.items()}
        parts = [f"{k} {v:.4f}" for k, v in last.items() if k not in ("epoch", "lr")]
        elapsed = time.perf_counter() - self.start
        line = f"epoch {last['epoch']}  " + "  ".join(parts) + f"  ({elapsed:.0f} s)"
        print(line, file=self.stream or sys.stdout, flush=True)

    def on_fit_end(self, model) -> None:
        model.__dict__.pop("EpochRunner", None)
        ran, planned = len(model.history.get("epoch", [])), getattr(model, "epochs", None)
        if planned is not None and ran < planned:
            print(
                f"stopped early after epoch {ran}: {model.monitor} did not improve in "
                f"{model.patience} epochs; the best epoch's weights are restored",
                file=self.stream or sys.stdout,
                flush=True,
            )


def fit(model: Any, train_data: Any, val_data: Any = None, **kwargs: Any) -> Any:
    """Run a torchkeras ``KerasModel.fit`` that prints one line per epoch and nothing else;
    return its history DataFrame.

    torchkeras prints a red device banner, a row of ``=`` with a timestamp and an
    ``Epoch i / n`` header per epoch, and a red ``reach best`` line with the metric at full
    precision. Those go nowhere here; :class:`EpochLog` reports each epoch (and an early stop).
    Keyword arguments go to ``fit`` (``plot`` is always False).
    """
    log = EpochLog(stream=sys.stdout)
    callbacks = [*(kwargs.pop("callbacks", None) or []), log]
    kwargs["plot"] = False
    with contextlib.redirect_stdout(io.StringIO()):
        return model.fit(train_data, val_data=val_data, callbacks=callbacks, **kwargs)


def decay_groups(model: Any, weight_decay: float) -> list[dict[str, Any]]:
    """Return optimizer parameter groups: weight decay on weight matrices and kernels (2 or more
    dimensions), none on biases and normalisation weights (1 dimension), as chapter 06 explains.

    >>> from torch import nn
    >>> model = nn.Sequential(nn.Linear(2, 2), nn.LayerNorm(2))
    >>> [len(group["params"]) for group in decay_groups(model, 0.1)]
    [1, 3]
    """
    if weight_decay < 0:
        raise ValueError(f"weight_decay must be >= 0, got {weight_decay}")
    trainable = [p for p in model.parameters() if p.requires_grad]
    return [
        {"params": [p for p in trainable if p.ndim >= 2], "weight_decay": weight_decay},
        {"params": [p for p in trainable if p.ndim < 2], "weight_decay": 0.0},
    ]


def evaluate(model: Any, loader: Any, device: Any = "cpu") -> tuple[float, float]:
    """Return ``(mean cross-entropy, accuracy)`` of a classifier over ``loader``.

    The model is put in ``eval()`` (dropout off, batch norm on its running statistics) and run
    under ``torch.inference_mode()``; it is left in eval mode.
    """
    import torch
    import torch.nn.functional as F

    model.eval()
    total_loss, right, count = 0.0, 0, 0
    with torch.inference_mode():
        for x, y in loader:
            x, y = x.to(device), y.to(device)
            logits = model(x)
            total_loss += F.cross_entropy(logits, y, reduction="sum").item()
            right += (logits.argmax(dim=1) == y).sum().item()
            count += len(y)
    if count == 0:
        raise ValueError("evaluate needs a loader with at least one sample")
    return total_loss / count, right / count


def train_sliced(
    model: Any,
    images: Any,
    labels: Any,
    device: Any = "cpu",
    samples: int | None = None,
    batch_size: int = 64,
    lr: float = 0.05,
) -> Any:
    """Train ``model`` for one epoch (or its first ``samples`` shuffled images) on batches sliced
    from in-memory tensors, with SGD and momentum 0.9; return it on the CPU in evaluation mode.

    The quick set-up of the chapters that need a trained CNN to work on (10, 12): the shuffle
    draws from the global generator, so seed before building the model to repeat a run.
    """
    import torch
    import torch.nn.functional as F

    optimizer = torch.optim.SGD(model.parameters(), lr=lr, momentum=0.9)
    order = torch.randperm(len(labels))[:samples]
    for i in range(0, len(order), batch_size):
        idx = order[i : i + batch_size]
        loss = F.cross_entropy(model(images[idx].to(device)), labels[idx].to(device))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    return model.cpu().eval()
