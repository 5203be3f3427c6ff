"""The capstone checker (helpers.capstone) passes good artefacts and rejects the usual wrong
answers, each with its own message; a criterion it cannot judge says why instead of crashing.

The artefacts are made here by a real, short training run of a tiny model on CIFAR2's files
(the reference solution, run by the notebook tests, passes with a real model)."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.tensorboard import SummaryWriter
from torchvision import datasets
from torchvision.transforms import v2

from helpers import capstone
from helpers.data import fetch
from helpers.images import channel_stats, load_cifar2

pytestmark = pytest.mark.skipif(
    not (fetch.__module__ and Path("data/cifar2/train").is_dir()),
    reason="needs CIFAR2 (make data)",
)


class Tiny(nn.Module):
    """A small model that takes uint8 images and normalises them itself, with a dropout layer."""

    def __init__(self, mean: list[float], std: list[float], width: int = 4) -> None:
        super().__init__()
        self.prepare = nn.Sequential(v2.ToDtype(torch.float32, scale=True), v2.Normalize(mean, std))
        self.body = nn.Sequential(
            nn.Conv2d(3, width, 3, stride=4),
            nn.BatchNorm2d(width),
            nn.ReLU(),
            nn.AdaptiveAvgPool2d(1),
            nn.Flatten(),
            nn.Dropout(0.5),  # in training mode it drops half the features: eval() matters
            nn.Linear(width, 2),
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.body(self.prepare(x))


def _accuracy(model: nn.Module, images: torch.Tensor, labels: torch.Tensor) -> float:
    with torch.inference_mode():
        return (model(images).argmax(1) == labels).float().mean().item()


@pytest.fixture(scope="module")
def cifar2():
    root = fetch("cifar2")
    files = [
        Path(p).relative_to(root).as_posix()
        for p, _ in datasets.ImageFolder(root / "train").samples
    ]
    images, labels, _ = load_cifar2("train")
    return root, files, images, labels


def _run(
    cifar2, seed: int | None, steps: int = 10
) -> tuple[nn.Module, torch.optim.Optimizer, dict]:
    """Train Tiny for ``steps`` batches on a 1,800/200 split of the training files."""
    _, files, images, labels = cifar2
    split = torch.randperm(len(files), generator=torch.Generator().manual_seed(0))[:2000]
    train_idx, val_idx = split[200:], split[:200]  # both classes, 1,800 and 200 images
    mean, std = channel_stats(images[train_idx])
    if seed is not None:
        torch.manual_seed(seed)
    model = Tiny(mean, std)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    order = torch.randperm(len(train_idx), generator=torch.Generator().manual_seed(seed or 0))
    for step in range(steps):
        batch = train_idx[order[step * 32 : (step + 1) * 32]]
        loss = F.cross_entropy(model(images[batch]), labels[batch])
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    model.eval()
    ckpt = {
        "model": model.state_dict(),
        "model_args": {"mean": mean, "std": std},
        "optimizer": optimizer.state_dict(),
        "seed": seed,
        "train_files": [files[i] for i in train_idx],
        "val_files": [files[i] for i in val_idx],
        "mean": mean,
        "std": std,
        "val_accuracy": _accuracy(model, images[val_idx], labels[val_idx]),
    }
    return model, optimizer, ckpt


@pytest.fixture(scope="module")
def good(cifar2, tmp_path_factory) -> dict:
    """A checkpoint, a log and two repeated runs that meet every criterion but the bar."""
    folder = tmp_path_factory.mktemp("p1")
    _, _, ckpt = _run(cifar2, seed=0)
    torch.save(ckpt, folder / "model.pt")
    with SummaryWriter(folder / "log") as writer:
        for step in (1, 2):
            writer.add_scalar("train/loss", 0.7 / step, step)
            writer.add_scalar("val/accuracy", 0.5 + step / 10, step)
    for name in ("a", "b"):
        torch.save(_run(cifar2, seed=1)[2], folder / f"repeat_{name}.pt")
    return {"folder": folder, "ckpt": ckpt}


def grade(folder: Path, ckpt: dict | None = None, **overrides) -> dict[str, str | None]:
    """Run the criteria on ``folder``'s artefacts (``ckpt`` saved over model.pt first)."""
    if ckpt is not None:
        torch.save(ckpt, folder / "model.pt")
    args = {
        "checkpoint": folder / "model.pt",
        "model_class": Tiny,
        "log_dir": folder / "log",
        "repeats": (folder / "repeat_a.pt", folder / "repeat_b.pt"),
    } | overrides
    return capstone.run_criteria(capstone.classifier_criteria(**args, bar=0.0))


def problem(results: dict[str, str | None], starts: str) -> str | None:
    """The problem of the criterion whose name starts with ``starts``."""
    (name,) = [n for n in results if n.startswith(starts)]
    return results[name]


def test_good_artefacts_meet_every_criterion(good):
    results = grade(good["folder"], good["ckpt"])
    assert [p for p in results.values() if p] == []


def test_training_on_the_test_split_is_refused(good, cifar2):
    root = cifar2[0]
    test_files = [
        Path(p).relative_to(root).as_posix() for p, _ in datasets.ImageFolder(root / "test").samples
    ]
    bad = good["ckpt"] | {"train_files": good["ckpt"]["train_files"] + test_files[:50]}
    found = problem(grade(good["folder"], bad), "no test image")
    assert found and "50 test images were used" in found and "split the training folder" in found


def test_a_validation_set_inside_the_training_set_is_refused(good):
    bad = good["ckpt"] | {"val_files": good["ckpt"]["train_files"][:200]}
    found = problem(grade(good["folder"], bad), "the validation images")
    assert found and "both trained on and validated on" in found


def test_statistics_of_the_test_set_are_refused(good):
    mean, std = channel_stats(load_cifar2("test")[0])
    found = problem(
        grade(good["folder"], good["ckpt"] | {"mean": mean, "std": std}), "the model normalises"
    )
    assert found and "are the test images'" in found


def test_a_validation_accuracy_measured_in_training_mode_is_refused(good, cifar2):
    _, files, images, labels = cifar2
    model = Tiny(**good["ckpt"]["model_args"])
    model.load_state_dict(good["ckpt"]["model"])
    index = [files.index(f) for f in good["ckpt"]["val_files"]]
    torch.manual_seed(0)  # dropout draws
    in_train_mode = _accuracy(model.train(), images[index], labels[index])
    in_eval_mode = _accuracy(model.eval(), images[index], labels[index])
    assert abs(in_train_mode - in_eval_mode) > 0.02, "the example needs modes that disagree"
    found = problem(
        grade(good["folder"], good["ckpt"] | {"val_accuracy": in_train_mode}), "the recorded"
    )
    assert found and "measure after model.eval()" in found


def test_a_checkpoint_without_the_optimiser_is_refused(good):
    bad = {k: v for k, v in good["ckpt"].items() if k != "optimizer"}
    found = problem(grade(good["folder"], bad), "it holds")
    assert found and "no 'optimizer'" in found and "optimiser's moments" in found


def test_runs_without_a_seed_are_refused(good, cifar2, tmp_path):
    for name in ("a", "b"):  # torch's global generator moves on between the two runs
        torch.save(_run(cifar2, seed=None)[2], tmp_path / f"repeat_{name}.pt")
    repeats = (tmp_path / "repeat_a.pt", tmp_path / "repeat_b.pt")
    found = problem(grade(good["folder"], good["ckpt"], repeats=repeats), "two runs")
    assert found and "different weights" in found and "seed torch" in found


def test_a_pickled_model_object_is_refused_and_later_criteria_say_why(good, cifar2, tmp_path):
    model, _, _ = _run(cifar2, seed=0, steps=1)
    torch.save({"model": model}, tmp_path / "model.pt")
    results = grade(good["folder"], checkpoint=tmp_path / "model.pt")
    assert "weights_only=True) refuses it" in problem(results, "the checkpoint loads")
    assert problem(results, "your model class").startswith("not checked: ")


def test_model_args_that_do_not_rebuild_the_model_are_refused(good):
    bad = copy.deepcopy(good["ckpt"])
    bad["model_args"]["width"] = 8
    found = problem(grade(good["folder"], bad), "your model class")
    assert found and "does not take the saved weights" in found


def test_a_log_without_a_validation_curve_is_refused(good, tmp_path):
    with SummaryWriter(tmp_path / "log") as writer:
        for step in (1, 2):
            writer.add_scalar("train/loss", 0.5, step)
    found = problem(
        grade(good["folder"], good["ckpt"], log_dir=tmp_path / "log"), "the TensorBoard"
    )
    assert found and "no validation curve" in found


def test_an_unfilled_grading_cell_asks_for_the_answer(capsys):
    passed = capstone.grade_classifier(..., ..., ..., (..., ...))
    assert not passed and capsys.readouterr().out == "✗ fill in `checkpoint` (it is still `...`)\n"
