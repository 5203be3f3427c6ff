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
from helpers.images import channel_stats, decode_folder, load_cifar2, png_bytes

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
    bar = args.pop("bar", 0.0)
    return capstone.run_criteria(capstone.classifier_criteria(**args, bar=bar))


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
    results = grade(good["folder"], bad)
    found = problem(results, "no test image")
    assert found and "50 test images were used" in found and "split the training folder" in found
    assert problem(results, "the mean and std").startswith("not checked: ")


def test_a_validation_set_inside_the_training_set_is_refused(good):
    bad = good["ckpt"] | {"val_files": good["ckpt"]["train_files"][:200]}
    found = problem(grade(good["folder"], bad), "the validation images")
    assert found and "both trained on and validated on" in found


def test_statistics_of_the_test_set_are_refused(good):
    mean, std = channel_stats(load_cifar2("test")[0])
    found = problem(
        grade(good["folder"], good["ckpt"] | {"mean": mean, "std": std}), "the mean and std"
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
    assert found and "measure after model.eval()" in found, (in_train_mode, in_eval_mode)


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


def test_validating_on_the_test_split_is_refused_and_blocks_the_accuracy_check(good, cifar2):
    root = cifar2[0]
    test_files = [
        Path(p).relative_to(root).as_posix() for p, _ in datasets.ImageFolder(root / "test").samples
    ]
    results = grade(good["folder"], good["ckpt"] | {"val_files": test_files[:200]})
    assert "200 test images were used" in problem(results, "no test image")
    assert problem(results, "the recorded").startswith("not checked: ")


def test_the_accuracy_check_neither_reveals_the_answer_nor_changes_the_model(good, cifar2, capsys):
    _, _, images, labels = cifar2
    test_images, test_labels, _ = load_cifar2("test")
    model = Tiny(**good["ckpt"]["model_args"])
    model.load_state_dict(good["ckpt"]["model"])
    expected = _accuracy(model.eval(), test_images, test_labels)
    val_index = [cifar2[1].index(f) for f in good["ckpt"]["val_files"]]
    on_val = _accuracy(model.eval(), images[val_index], labels[val_index])
    results = grade(good["folder"], good["ckpt"] | {"val_accuracy": 0.999})
    out = capsys.readouterr().out
    found = problem(results, "the recorded")
    assert found and "differs by more than 0.01" in found
    assert f"{on_val:.4f}" not in out and f"{on_val:.2f}" not in out, "the answer is not shown"
    assert f"test images: {expected:.4f}" in out, "the test accuracy is the saved model's"


def test_a_bar_the_model_misses_is_reported(good):
    found = grade(good["folder"], good["ckpt"], bar=0.999)
    missed = problem(found, "test accuracy")
    assert missed and "is below 1.00" in missed and "train longer" in missed


class Floats(Tiny):
    """A model that expects normalised floats (normalisation left to the Dataset)."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.body(x)


def test_a_model_that_does_not_take_uint8_images_is_told_rule_3(good):
    found = problem(grade(good["folder"], good["ckpt"], model_class=Floats), "the model takes")
    assert found and "rule 3" in found


def test_a_factory_function_is_not_a_model_class(good):
    def factory(mean, std):
        return Tiny(mean, std)

    found = problem(grade(good["folder"], good["ckpt"], model_class=factory), "your model class")
    assert found and "should be your nn.Module class" in found


def test_curves_written_with_add_scalars_and_windows_paths_pass(good, tmp_path):
    with SummaryWriter(tmp_path / "log") as writer:
        for step in (1, 2):
            writer.add_scalars("Loss", {"train": 0.7 / step, "val": 0.8 / step}, step)
    windows = good["ckpt"] | {
        "train_files": [f.replace("/", "\\") for f in good["ckpt"]["train_files"]],
        "val_files": [f"./{f}" for f in good["ckpt"]["val_files"]],
    }
    results = grade(good["folder"], windows, log_dir=tmp_path / "log")
    assert [p for p in results.values() if p] == []


def test_one_file_given_twice_as_the_repeats_is_refused(good):
    same = (good["folder"] / "repeat_a.pt",) * 2
    found = problem(grade(good["folder"], good["ckpt"], repeats=same), "two runs")
    assert found and "one file" in found


def test_the_own_images_route_grades_another_folder(tmp_path):
    """A folder of tiny PNGs, two classes, train/ and test/: the same criteria run on it."""
    gen = torch.Generator().manual_seed(0)
    root = tmp_path / "mine"
    files = {"train": [], "test": []}
    for split_name, count in (("train", 40), ("test", 10)):
        for label, name in enumerate(("cats", "dogs")):
            folder = root / split_name / name
            folder.mkdir(parents=True)
            for i in range(count):
                image = torch.randint(0, 128, (3, 8, 8), generator=gen, dtype=torch.uint8)
                image[label] += 100  # the classes differ in their first two channels
                (folder / f"{i}.png").write_bytes(png_bytes(image))
                files[split_name].append(f"{split_name}/{name}/{i}.png")
    train, val = files["train"][4:36], files["train"][:4] + files["train"][36:]
    images, _, _ = decode_folder(root / "train")  # in ImageFolder's order, as the checker reads
    order = sorted(files["train"], key=lambda f: (f.split("/")[1], f.split("/")[2]))
    mean, std = channel_stats(images[[order.index(f) for f in train]])
    torch.manual_seed(0)
    model = Tiny(mean, std).eval()
    ckpt = {
        "model": model.state_dict(), "model_args": {"mean": mean, "std": std},
        "optimizer": {"state": {}, "param_groups": []}, "seed": 0, "train_files": train,
        "val_files": val, "mean": mean, "std": std, "val_accuracy": 0.5,
    }  # fmt: skip
    torch.save(ckpt, tmp_path / "model.pt")
    results = capstone.run_criteria(
        capstone.classifier_criteria(
            tmp_path / "model.pt", Tiny, tmp_path / "log", (tmp_path / "a", tmp_path / "b"),
            bar=0.0, data=root,
        )
    )  # fmt: skip
    for name in ("the model takes", "no test image", "the validation images", "the mean and std"):
        assert problem(results, name) is None, name


def test_repeats_whose_optimiser_never_stepped_are_refused(good, cifar2, tmp_path):
    """Two models built from one seed match without training: the repeats must train."""
    for name in ("a", "b"):
        _, _, ckpt = _run(cifar2, seed=1, steps=0)
        torch.manual_seed(1)
        untrained = Tiny(**ckpt["model_args"])
        optimizer = torch.optim.AdamW(untrained.parameters())
        ckpt |= {"model": untrained.state_dict(), "optimizer": optimizer.state_dict()}
        torch.save(ckpt, tmp_path / f"repeat_{name}.pt")
    repeats = (tmp_path / "repeat_a.pt", tmp_path / "repeat_b.pt")
    found = problem(grade(good["folder"], good["ckpt"], repeats=repeats), "two runs")
    assert found and "never stepped" in found


def test_a_log_with_one_point_a_tag_is_told_so(good, tmp_path):
    with SummaryWriter(tmp_path / "log") as writer:
        writer.add_scalar("train/loss", 0.5, 1)
        for step in (1, 2):
            writer.add_scalar("val/accuracy", 0.5, step)
    found = problem(
        grade(good["folder"], good["ckpt"], log_dir=tmp_path / "log"), "the TensorBoard"
    )
    assert found and found.startswith("'train/loss' has 1 point") and "./" not in found


def test_a_wrong_recorded_accuracy_is_not_blamed_on_training_mode(good):
    found = problem(grade(good["folder"], good["ckpt"] | {"val_accuracy": 0.123}), "the recorded")
    assert found and "differs by more than 0.01" in found and "training mode" not in found


def test_a_model_that_did_not_rebuild_is_not_blamed_on_rule_3(good, cifar2, tmp_path):
    model, _, _ = _run(cifar2, seed=0, steps=1)
    torch.save({"model": model}, tmp_path / "model.pt")
    found = problem(grade(good["folder"], checkpoint=tmp_path / "model.pt"), "the model takes")
    assert found.startswith("not checked: ") and "_Blocked" not in found
