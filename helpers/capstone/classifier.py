"""Grading capstone 1 from what it leaves on disk, never from its code.

Capstone 1 (``notebooks/projects/01_your_own_classifier.ipynb``) leaves a checkpoint, a
TensorBoard log and a second, short checkpoint of a run repeated with the same seed.
:func:`grade_classifier` checks them one criterion at a time and prints ``✓`` or ``✗`` for each,
with what is wrong and where to look, never the answer.

The checkpoint is a dictionary saved with ``torch.save`` (:data:`CHECKPOINT_KEYS`): the model's
``state_dict`` and the keyword arguments that rebuild its class, the optimiser's
``state_dict``, the seed, the image files used for training and for validation (relative to the
CIFAR2 folder, e.g. ``"train/0_airplane/12.jpg"``), the per-channel ``mean`` and ``std`` the
model normalises with, and the validation accuracy the learner measured. The model takes a batch
of ``uint8`` images ``(N, 3, 32, 32)`` as decoded from the files and returns one logit per
class (0: airplane, 1: automobile, the folders' order).
"""

from __future__ import annotations

import copy
import pickle
from pathlib import Path
from typing import Any

import torch
from torch import nn

from helpers.capstone.criteria import Blocked, Criterion, run_criteria
from helpers.data import fetch
from helpers.exercises import filled
from helpers.images import channel_stats, decode_folder, load_cifar2

CHECKPOINT_KEYS = {
    "model": "model.state_dict()",
    "model_args": "the keyword arguments that rebuild your model class, e.g. {'width': 16}",
    "optimizer": "optimizer.state_dict()",
    "seed": "the seed of the run",
    "train_files": "the image files the model trained on",
    "val_files": "the image files it was validated on",
    "mean": "the per-channel mean the model normalises with",
    "std": "the per-channel standard deviation it normalises with",
    "val_accuracy": "the validation accuracy you measured",
}
TEST_BAR = 0.90  # test accuracy a small CNN reaches on CIFAR2 in a few epochs (lesson 07: ~0.97)


def _load(path: Path | str) -> dict[str, Any]:
    path = Path(path)
    if not path.is_file():
        raise Blocked(f"no checkpoint at {path}")
    return torch.load(path, map_location="cpu", weights_only=True)


def _split_files(root: Path) -> dict[str, int]:
    """``{"split/class/name.jpg": index}`` in the order :func:`decode_folder` (and
    :func:`load_cifar2`) decode them."""
    from torchvision import datasets

    found: dict[str, int] = {}
    for split in ("train", "test"):
        for index, (path, _) in enumerate(datasets.ImageFolder(root / split).samples):
            found[Path(path).relative_to(root).as_posix()] = index
    return found


def _accuracy(model: nn.Module, images: torch.Tensor, labels: torch.Tensor) -> float:
    correct = 0
    with torch.inference_mode():
        for start in range(0, len(images), 500):
            logits = model(images[start : start + 500])
            correct += (logits.argmax(dim=1) == labels[start : start + 500]).sum().item()
    return correct / len(images)


def _never_stepped(optimizer: dict[str, Any]) -> bool:
    """Whether an optimiser's state_dict shows no step: Adam and AdamW count their steps, and
    SGD with momentum keeps a buffer from its first step (plain SGD keeps nothing: unknown)."""
    state, groups = optimizer.get("state", {}), optimizer.get("param_groups", [])
    if state:
        steps = [float(s["step"]) for s in state.values() if "step" in s]
        return bool(steps) and max(steps) < 1
    return any("betas" in g or g.get("momentum", 0) > 0 for g in groups)


def _weights_differ(a: dict[str, torch.Tensor], b: dict[str, torch.Tensor]) -> list[str]:
    if a.keys() != b.keys():
        return ["(the two checkpoints hold different layers)"]
    return [k for k in a if not torch.equal(a[k], b[k])]


def rebuild(c: dict[str, Any], model_class: type[nn.Module]) -> tuple[nn.Module | None, str | None]:
    """Rebuild ``model_class(**c["model_args"])`` with the checkpoint's weights, in eval mode:
    ``(model, None)``, or ``(None, what is wrong)``."""
    if not (isinstance(model_class, type) and issubclass(model_class, nn.Module)):
        return None, (
            f"model_class should be your nn.Module class, got {model_class!r}: write a class "
            "(class MyModel(nn.Module): ...), as rule 3 asks"
        )
    if not isinstance(c.get("model_args"), dict):
        raise Blocked("the checkpoint has no 'model_args' dictionary")
    model = model_class(**c["model_args"])
    advice = "save model_args with the values the trained model was built with"
    name = model_class.__name__
    try:
        result = model.load_state_dict(c["model"], strict=False)
    except RuntimeError as err:  # a layer of another shape
        sizes = [line.strip() for line in str(err).splitlines() if "size mismatch" in line]
        first = sizes[0] if sizes else str(err).splitlines()[0]
        return None, f"{name}(**model_args) does not take the saved weights: {first}; {advice}"
    if result.missing_keys or result.unexpected_keys:
        return None, (
            f"{name}(**model_args) does not take the saved weights: missing "
            f"{result.missing_keys[:3]}, unexpected {result.unexpected_keys[:3]}; {advice}"
        )
    return model.eval(), None


def classifier_criteria(
    checkpoint: Path | str,
    model_class: type[nn.Module],
    log_dir: Path | str,
    repeats: tuple[Path | str, Path | str],
    *,
    bar: float = TEST_BAR,
    data: Path | str | None = None,
) -> list[Criterion]:
    """The criteria of capstone 1, in the order they are judged (see :func:`grade_classifier`)."""
    root = Path(data) if data is not None else fetch("cifar2")
    state: dict[str, Any] = {}

    def split(name: str) -> tuple[torch.Tensor, torch.Tensor]:
        """A split's uint8 images and labels: CIFAR2's from its cache, others decoded."""
        if name not in state:
            try:
                images, labels, _ = (
                    load_cifar2(name) if data is None else decode_folder(root / name)
                )
            except RuntimeError as err:  # torch.cat of images of different sizes
                raise Blocked(
                    f"the images under {root / name} are not all one size ({err}): resize "
                    "them to one size first"
                ) from None
            state[name] = images, labels
        return state[name]

    def loads() -> str | None:
        try:
            loaded = _load(checkpoint)
        except pickle.UnpicklingError as err:
            lines = [line.strip() for line in str(err).splitlines() if line.strip()]
            named = [line for line in lines if "Unsupported global" in line or "GLOBAL" in line]
            first = (named or lines or ["(no message)"])[0][:200]
            return (
                "torch.load(..., weights_only=True) refuses it: save only tensors, numbers, "
                "strings, lists and dictionaries (a state_dict, not the model or optimiser "
                f"object). It said: {first}"
            )
        if not isinstance(loaded, dict):
            return f"the checkpoint holds a {type(loaded).__name__}: save a dictionary (rule 6)"
        state["ckpt"] = loaded
        return None

    def ckpt() -> dict[str, Any]:
        if "ckpt" not in state:
            raise Blocked("the checkpoint did not load")
        return state["ckpt"]

    def complete() -> str | None:
        missing = [k for k in CHECKPOINT_KEYS if k not in ckpt()]
        if missing:
            k = missing[0]
            more = f" (and {len(missing) - 1} more)" if len(missing) > 1 else ""
            hint = (
                ": without it a resumed run restarts the optimiser's moments and schedule"
                if k == "optimizer"
                else ""
            )
            return f"the checkpoint has no '{k}' ({CHECKPOINT_KEYS[k]}){more}{hint}"
        return None

    def rebuilds() -> str | None:
        model, problem = rebuild(ckpt(), model_class)
        if model is not None:
            state["model"] = model
        return problem

    def files() -> dict[str, int]:
        if "files" not in state:
            state["files"] = _split_files(root)
        return state["files"]

    def names(key: str) -> list[str]:
        value = ckpt().get(key)
        if not isinstance(value, list) or not value:
            raise Blocked(f"'{key}' is not a list of image files")
        return [str(v).replace("\\", "/").removeprefix("./") for v in value]

    def no_test_images() -> str | None:
        used = set(names("train_files")) | set(names("val_files"))
        unknown = sorted(u for u in used if u not in files())
        if unknown:
            return (
                f"{len(unknown)} listed files are not images of the data folder, e.g. "
                f"{unknown[0]!r}: list them relative to it, as 'train/0_airplane/12.jpg'"
            )
        leaked = sorted(u for u in used if u.startswith("test/"))
        state["leaked"] = bool(leaked)
        if leaked:
            return (
                f"{len(leaked)} test images were used for training or validation (e.g. "
                f"{leaked[0]!r}): the test split only measures the finished model; split the "
                "training folder instead"
            )
        return None

    def held_out() -> str | None:
        train, val = set(names("train_files")), set(names("val_files"))
        overlap = train & val
        if overlap:
            return (
                f"{len(overlap)} images are both trained on and validated on: a validation "
                "image must be one the model never learnt from"
            )
        if len(val) < 0.05 * (len(train) + len(val)):
            return (
                f"only {len(val)} validation images: hold out at least 5 % of the training folder"
            )
        return None

    def clean() -> None:
        if state.get("leaked", True):
            raise Blocked("the lists must hold training images only (see above)")

    def training_stats() -> str | None:
        clean()
        train_images, _ = split("train")
        test_images, _ = split("test")
        index = [files()[f] for f in names("train_files")]
        want_mean, want_std = channel_stats(train_images[index])
        test_mean, test_std = channel_stats(test_images)
        recorded = [
            torch.as_tensor(ckpt()[k], dtype=torch.float64).flatten() for k in ("mean", "std")
        ]
        got = torch.cat(recorded).float()
        if got.numel() != 6:
            return f"mean and std should hold 3 numbers each, one per channel; got {got.numel()}"
        want = torch.tensor(want_mean + want_std)
        if (got - want).abs().max() <= 2e-3:
            return None
        if (got - torch.tensor(test_mean + test_std)).abs().max() <= 2e-3:
            return (
                "the mean and std are the test images': the model must not see the test set "
                "before it is measured on it, not even its statistics; use the training files'"
            )
        return (
            f"mean {[round(float(v), 4) for v in recorded[0]]} and std "
            f"{[round(float(v), 4) for v in recorded[1]]} are not the statistics of the "
            "training files (per channel, on pixels scaled to [0, 1])"
        )

    def model() -> nn.Module:
        if "model" not in state:
            raise Blocked("the model did not rebuild from the checkpoint")
        return state["model"]

    def val_accuracy_honest() -> str | None:
        clean()
        train_images, train_labels = split("train")
        index = [files()[f] for f in names("val_files")]
        images, labels = train_images[index], train_labels[index]
        recorded = float(torch.as_tensor(ckpt()["val_accuracy"]).flatten()[0])
        if recorded > 1:
            return f"you recorded {recorded}: record the accuracy as a fraction in [0, 1]"
        eval_acc = _accuracy(model().eval(), images, labels)
        if abs(recorded - eval_acc) <= 0.01:
            return None
        in_training = copy.deepcopy(model()).train()  # batch norm would update the saved model
        draws = [_accuracy(in_training, images, labels) for _ in range(5)]  # dropout varies
        # only when training mode explains the number; other mix-ups (another list, the best
        # epoch's weights) get the general hint below
        if min(draws) - 0.01 <= recorded <= max(draws) + 0.01:
            return (
                "the accuracy you recorded is what the model scores in training mode, not in "
                "evaluation mode: measure after model.eval() (batch norm and dropout behave "
                "differently in training mode)"
            )
        return (
            "the accuracy you recorded differs by more than 0.01 from what the saved model "
            "scores on the validation files: measure the weights you save, on the files you list"
        )

    def reaches_bar() -> str | None:
        images, labels = split("test")
        acc = _accuracy(model(), images, labels)
        print(f"    test accuracy on the checker's {len(images):,} test images: {acc:.4f}")
        if acc >= bar:
            return None
        return (
            f"{acc:.4f} is below {bar:.2f}: check that labels follow the class folders' sorted "
            "order, then train longer or with a schedule; the validation curve tells when to stop"
        )

    def curves() -> str | None:
        from helpers import board

        table = board.scalars(Path(log_dir))
        if table.empty:
            return f"no scalars logged under {log_dir}: log with SummaryWriter(log_dir)"
        # add_scalars writes one run folder per curve (Loss_train, Loss_val) under one tag
        table = table.assign(name=(table["run"] + "/" + table["tag"]).str.lower())
        table["name"] = table["name"].str.removeprefix("./")  # the log folder's own tags
        tags = table.groupby("name").size().to_dict()
        train = [t for t, n in tags.items() if "train" in t and n >= 2]
        val = [t for t, n in tags.items() if "val" in t and n >= 2]
        if not train or not val:
            which = "training" if not train else "validation"
            short = [t for t, n in tags.items() if which[:5] in t and n < 2]
            if short:
                return (
                    f"'{short[0]}' has 1 point, and a curve needs 2 or more: log the {which} "
                    "values at every step or epoch, each at its own step"
                )
            return (
                f"no {which} curve (a scalar tag naming '{which[:5]}' with 2 or more points) in "
                f"{log_dir}; found {sorted(tags)}"
            )
        return None

    def repeatable() -> str | None:
        first, second = (Path(p) for p in repeats)
        if first.resolve() == second.resolve():
            return "the two repeats are one file: save each run's checkpoint under its own name"
        a, b = (_load(p) for p in (first, second))
        for name, c in (("first", a), ("second", b)):
            if "model" not in c or "optimizer" not in c:
                return f"the {name} repeat needs 'model' and 'optimizer', as the main checkpoint"
            if _never_stepped(c["optimizer"]):
                return (
                    f"the {name} repeat's optimiser never stepped: each repeat trains (a few "
                    "dozen steps), so that the check shows that training repeats, not only the "
                    "initial weights"
                )
        differ = _weights_differ(a["model"], b["model"])
        if differ:
            return (
                f"two runs with the same seed ended with different weights ({differ[0]}, and "
                f"{len(differ) - 1} more): seed torch before building the model, give the "
                "DataLoader a generator seeded the same way, and on a GPU also call "
                "torch.use_deterministic_algorithms(True) (or run the repeats on the CPU)"
            )
        return None

    def takes_images() -> str | None:
        images, _ = split("test")
        classes = sorted(p.name for p in (root / "train").iterdir() if p.is_dir())
        net = copy.deepcopy(model()).eval()  # not checked when the model did not rebuild
        try:
            with torch.inference_mode():
                out = net(images[:2])
        except Exception as err:
            return (
                f"it fails on a batch of 2 uint8 images as decoded from the files "
                f"({type(err).__name__}: {str(err).splitlines()[0][:120]}): rule 3, the model "
                "takes the images as they are and converts and normalises them itself"
            )
        if not isinstance(out, torch.Tensor) or tuple(out.shape) != (2, len(classes)):
            shape = tuple(out.shape) if isinstance(out, torch.Tensor) else type(out).__name__
            return (
                f"for 2 images it returns {shape}, expected (2, {len(classes)}): a logit per class"
            )
        return None

    return [
        Criterion("the checkpoint loads with torch.load(weights_only=True)", loads),
        Criterion(
            "it holds the model, the optimiser, the seed, the splits and the statistics", complete
        ),
        Criterion("your model class rebuilds from model_args and takes the weights", rebuilds),
        Criterion("the model takes uint8 images and returns a logit per class", takes_images),
        Criterion("no test image is listed for training or validation", no_test_images),
        Criterion("the validation images are held out of training", held_out),
        Criterion("the mean and std you recorded are the training files'", training_stats),
        Criterion(
            "the recorded validation accuracy is the saved model's, in eval mode",
            val_accuracy_honest,
        ),
        Criterion(f"test accuracy of at least {bar:.2f} on the checker's test images", reaches_bar),
        Criterion("the TensorBoard log holds a training and a validation curve", curves),
        Criterion("two runs with the same seed end with the same weights", repeatable),
    ]


def grade_classifier(
    checkpoint: Path | str,
    model_class: type[nn.Module],
    log_dir: Path | str,
    repeats: tuple[Path | str, Path | str],
    *,
    bar: float = TEST_BAR,
    data: Path | str | None = None,
) -> bool:
    """Grade capstone 1 from its artefacts; print one line per criterion; return whether all hold.

    ``checkpoint``: the trained model's checkpoint (see the module's docstring); ``model_class``:
    the class it rebuilds with ``model_class(**ckpt["model_args"])``; ``log_dir``: the
    TensorBoard folder of the run; ``repeats``: two checkpoints of short runs with the same seed;
    ``data``: a folder with ``train/`` and ``test/``, one folder of same-size images per class
    inside each (default: CIFAR2).
    """
    answers = {"checkpoint": checkpoint, "model_class": model_class, "log_dir": log_dir}
    problem = filled(**answers, repeats=repeats) or filled(
        **{f"repeats[{i}]": r for i, r in enumerate(repeats)}
    )
    if problem:
        print(f"✗ {problem}")
        return False
    criteria = classifier_criteria(checkpoint, model_class, log_dir, repeats, bar=bar, data=data)
    results = run_criteria(criteria)
    return all(p is None for p in results.values())
