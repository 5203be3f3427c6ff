"""Checks for the exercises of 07 · Object detection (the chapter's second cookbook notebook):
the reference answers live here, not in the notebook."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from helpers.exercises import filled, report

# image name -> COCO-style annotations: [x, y, width, height], categories counted from 0
ANNOTATIONS: dict[str, list[dict[str, Any]]] = {
    "an image with three objects": [
        {"bbox": [10, 20, 30, 15], "category_id": 0},
        {"bbox": [50.5, 5, 12, 40], "category_id": 2},
        {"bbox": [0, 60, 96, 20], "category_id": 1},
    ],
    "an image with one object": [{"bbox": [4, 8, 16, 32], "category_id": 1}],
    "an image without objects": [],
}


def reference_target(annotations: list[dict[str, Any]]) -> dict[str, Any]:
    """The target a torchvision detector takes for COCO-style ``annotations``."""
    import torch

    boxes = torch.tensor([a["bbox"] for a in annotations], dtype=torch.float32).reshape(-1, 4)
    corners = torch.cat([boxes[:, :2], boxes[:, :2] + boxes[:, 2:]], dim=1)
    labels = torch.tensor([a["category_id"] + 1 for a in annotations], dtype=torch.int64)
    return {"boxes": corners, "labels": labels}


def target_problem(to_target: Callable[[list], Any]) -> str | None:
    """What is wrong with ``to_target``, or ``None`` when it returns the reference target for
    every image of :data:`ANNOTATIONS` and leaves the annotations as they were."""
    import copy

    import torch

    if not callable(to_target):
        return f"`to_target` should be a function, got {type(to_target).__name__}"
    for name, listed in ANNOTATIONS.items():
        given = copy.deepcopy(listed)
        try:
            got = to_target(given)
        except Exception as error:
            hint = (
                ": torch.tensor([]) has shape (0,), and an image without objects needs boxes of "
                "shape (0, 4)"
                if not listed
                else ""
            )
            return f"for {name} it raised {type(error).__name__}: {error}{hint}"
        if given != listed:
            return f"for {name} it changed the annotations it was given: build new tensors"
        right = reference_target(listed)
        if not isinstance(got, dict) or not {"boxes", "labels"} <= set(got):
            keys = sorted(got) if isinstance(got, dict) else type(got).__name__
            return f"for {name} it returned {keys}: return a dict with 'boxes' and 'labels'"
        boxes, labels = got["boxes"], got["labels"]
        if not isinstance(boxes, torch.Tensor) or not isinstance(labels, torch.Tensor):
            return f"for {name}: 'boxes' and 'labels' should be tensors"
        if boxes.shape != right["boxes"].shape:
            hint = (
                ": an image without objects needs boxes of shape (0, 4), and torch.tensor([]) "
                "has shape (0,)"
                if not listed
                else ""
            )
            return f"for {name} 'boxes' has shape {tuple(boxes.shape)}, expected (N, 4){hint}"
        if boxes.dtype != torch.float32:
            return f"for {name} 'boxes' is {boxes.dtype}: the detector takes float32 boxes"
        if labels.dtype != torch.int64:
            why = " (torch.tensor([]) is float32)" if not listed else ""
            return (
                f"for {name} 'labels' is {labels.dtype}{why}: the detector takes int64 labels, "
                "pass dtype=torch.int64"
            )
        if len(listed):
            xywh = torch.tensor([a["bbox"] for a in listed], dtype=torch.float32)
            if torch.allclose(boxes, xywh) and not torch.allclose(xywh, right["boxes"]):
                return f"for {name} the boxes are still [x, y, width, height]: convert to corners"
            if not torch.allclose(boxes, right["boxes"]):
                return (
                    f"for {name} the boxes are {boxes.tolist()}, expected corners (x1, y1, x2, y2)"
                )
        if torch.equal(labels, right["labels"] - 1) and len(labels):
            return f"for {name} the labels count from 0: the detector keeps 0 for the background"
        if not torch.equal(labels, right["labels"]):
            return (
                f"for {name} the labels are {labels.tolist()}, expected {right['labels'].tolist()}"
            )
    return None


def exercise_1(to_target: Callable[[list], Any] | Any) -> None:
    """``to_target(annotations)``: COCO-style annotations → ``{"boxes", "labels"}`` for a
    torchvision detector."""
    report(
        filled(to_target=to_target),
        lambda: target_problem(to_target),
        done="to_target gives float32 corner boxes (N, 4), even for N = 0, and labels from 1",
    )


def flip_problem(flip_boxes: Callable[[Any, int], Any]) -> str | None:
    """What is wrong with ``flip_boxes``, or ``None`` when it agrees with
    ``v2.RandomHorizontalFlip(p=1.0)`` on random boxes and widths and leaves its input alone."""
    import torch
    from torchvision import tv_tensors
    from torchvision.transforms import v2

    if not callable(flip_boxes):
        return f"`flip_boxes` should be a function, got {type(flip_boxes).__name__}"
    generator = torch.Generator().manual_seed(0)
    for width, height, n in ((96, 96, 3), (200, 50, 5), (31, 64, 1)):
        corner = torch.rand(n, 2, generator=generator) * torch.tensor([width / 2, height / 2])
        size = 1 + torch.rand(n, 2, generator=generator) * torch.tensor(
            [width / 2 - 2, height / 2 - 2]
        )
        boxes = torch.cat([corner, (corner + size).round()], dim=1).round()
        given = boxes.clone()
        wrapped = tv_tensors.BoundingBoxes(boxes, format="XYXY", canvas_size=(height, width))
        right = v2.RandomHorizontalFlip(p=1.0)(wrapped).as_subclass(torch.Tensor)
        got = flip_boxes(given, width)
        if not torch.equal(given, boxes):
            return "it changed the boxes it was given: return a new tensor"
        if not isinstance(got, torch.Tensor) or got.shape != boxes.shape:
            shape = tuple(got.shape) if isinstance(got, torch.Tensor) else type(got).__name__
            return f"it returned {shape} for {n} boxes: return a tensor of shape ({n}, 4)"
        got = got.as_subclass(torch.Tensor).float()
        if torch.allclose(got, right):
            continue
        if torch.allclose(got[:, [2, 1, 0, 3]], right):
            return "x1 and x2 are swapped: after the flip, x1 (the left edge) is width - x2"
        if torch.allclose(got, right - torch.tensor([1.0, 0.0, 1.0, 0.0])):
            return (
                "it is one pixel off: box corners are continuous coordinates, so a point at x "
                "goes to width - x, not width - 1 - x"
            )
        if not torch.allclose(got[:, [1, 3]], boxes[:, [1, 3]]):
            return "it changed y: a left-right flip moves x only"
        was, became, right_one = boxes[0].tolist(), got[0].tolist(), right[0].tolist()
        return f"for an image {width} wide, {was} became {became}, expected {right_one}"
    return None


def exercise_2(flip_boxes: Callable[[Any, int], Any] | Any) -> None:
    """``flip_boxes(boxes, width)``: XYXY boxes after a left-right flip of the image."""
    report(
        filled(flip_boxes=flip_boxes),
        lambda: flip_problem(flip_boxes),
        done="flip_boxes moves every box as v2.RandomHorizontalFlip does",
    )
