"""Object detection on a CPU: a small data set of drawn shapes, batching, scoring and a picture.

The scenes stand in for a real detection data set (images with a list of boxes and labels
each), made offline in a blink: 1 to 3 shapes on a noisy background, each box in pixels as
``(x1, y1, x2, y2)``, labels counted from 1 (0 is the detectors' background class).

>>> image, target = draw_scenes(1, seed=0)[0]
>>> tuple(image.shape), target["boxes"].shape[1], int(target["labels"].min()) >= 1
((3, 96, 96), 4, True)
"""

from __future__ import annotations

from collections.abc import Sequence

import matplotlib.pyplot as plt
import torch
from matplotlib.figure import Figure
from matplotlib.patches import Rectangle
from torchvision.ops import box_iou

SIZE = 96  # pixels a side
SHAPES = ("background", "square", "disc", "triangle")  # label → name; 0 is the background


def _mask(label: int, box: list[int]) -> torch.Tensor:
    """The pixels of shape ``label`` filling ``box`` (x1, y1, x2, y2)."""
    x1, y1, x2, y2 = box
    y, x = torch.meshgrid(torch.arange(SIZE) + 0.5, torch.arange(SIZE) + 0.5, indexing="ij")
    inside = (x >= x1) & (x <= x2) & (y >= y1) & (y <= y2)
    if label == 1:  # square (a rectangle, in fact)
        return inside
    if label == 2:  # disc (an ellipse)
        cx, cy, rx, ry = (x1 + x2) / 2, (y1 + y2) / 2, (x2 - x1) / 2, (y2 - y1) / 2
        return ((x - cx) / rx) ** 2 + ((y - cy) / ry) ** 2 <= 1
    # triangle: apex at the top middle, base along the bottom
    half = (x2 - x1) / 2 * (y - y1) / (y2 - y1)
    return inside & ((x - (x1 + x2) / 2).abs() <= half)


def draw_scene(generator: torch.Generator, labels: Sequence[int] = (1, 2)) -> tuple:
    """One image (3, SIZE, SIZE) float in [0, 1] and its target ``{"boxes", "labels"}``: 1 to 3
    shapes of the kinds ``labels``, boxes that do not overlap."""
    image = torch.rand(3, SIZE, SIZE, generator=generator) * 0.25
    boxes: list[list[int]] = []
    kinds: list[int] = []
    for _ in range(int(torch.randint(1, 4, (1,), generator=generator))):
        w, h = torch.randint(14, 36, (2,), generator=generator).tolist()
        x1 = int(torch.randint(0, SIZE - w, (1,), generator=generator))
        y1 = int(torch.randint(0, SIZE - h, (1,), generator=generator))
        box = [x1, y1, x1 + w, y1 + h]
        kind = labels[int(torch.randint(len(labels), (1,), generator=generator))]
        colour = 0.5 + 0.5 * torch.rand(3, 1, 1, generator=generator)
        if boxes and box_iou(torch.tensor([box]), torch.tensor(boxes)).max() > 0:
            continue  # overlaps a shape already drawn: left out
        image = torch.where(_mask(kind, box), colour, image)
        boxes.append(box)
        kinds.append(kind)
    target = {"boxes": torch.tensor(boxes, dtype=torch.float32), "labels": torch.tensor(kinds)}
    return image, target


def draw_scenes(n: int, seed: int, labels: Sequence[int] = (1, 2)) -> list[tuple]:
    """``n`` scenes (see :func:`draw_scene`), the same for the same ``seed``."""
    if n < 1:
        raise ValueError(f"n must be at least 1, got {n}")
    generator = torch.Generator().manual_seed(seed)
    return [draw_scene(generator, labels) for _ in range(n)]


def detection_collate(batch: list[tuple]) -> tuple[list, list]:
    """A detection batch: the images in one list and the targets in another (their numbers of
    boxes differ, so they cannot be stacked into one tensor)."""
    images, targets = zip(*batch, strict=True)
    return list(images), list(targets)


def match(
    predictions: list[dict], targets: list[dict], score: float = 0.5, iou: float = 0.5
) -> dict[str, float]:
    """Score detections against the true boxes. Predictions scored ``score`` or more are taken in
    order of score; each is right when it has the label of a true box not matched yet and
    overlaps it by IoU ≥ ``iou`` (it then takes the one it overlaps most), so a second box on
    the same object counts as wrong. Returns ``recall`` (true boxes found), ``precision``
    (predictions that are right; 0 without predictions) and the counts."""
    right = kept = total = 0
    for prediction, target in zip(predictions, targets, strict=True):
        keep = prediction["scores"].detach().cpu() >= score
        order = prediction["scores"].detach().cpu()[keep].argsort(descending=True)
        boxes = prediction["boxes"].detach().cpu()[keep][order]
        labels = prediction["labels"].detach().cpu()[keep][order]
        true_boxes, true_labels = target["boxes"].cpu(), target["labels"].cpu()
        total += len(true_boxes)
        kept += len(boxes)
        if not len(boxes) or not len(true_boxes):
            continue
        overlaps = box_iou(boxes, true_boxes)  # (predictions, true boxes)
        free = torch.ones(len(true_boxes), dtype=torch.bool)
        for i in range(len(boxes)):
            fits = free & (true_labels == labels[i]) & (overlaps[i] >= iou)
            if fits.any():
                free[int(torch.where(fits, overlaps[i], -1.0).argmax())] = False
                right += 1
    return {
        "recall": right / max(total, 1),
        "precision": right / max(kept, 1),
        "boxes": total,
        "predictions": kept,
    }


def show_detections(
    images: Sequence[torch.Tensor],
    predictions: Sequence[dict],
    names: Sequence[str] = SHAPES,
    score: float = 0.5,
) -> Figure:
    """A row of images, each with its boxes: a prediction's scored ``score`` or more, named and
    scored, or a target's (no ``"scores"``), named."""
    fig = plt.figure(figsize=(2.2 * len(images), 2.4), layout="constrained")
    axes = fig.subplots(1, len(images), squeeze=False)[0]
    for ax, image, prediction in zip(axes, images, predictions, strict=True):
        ax.imshow(image.detach().cpu().permute(1, 2, 0).clamp(0, 1).numpy())
        ax.axis("off")
        prediction = {k: v.detach().cpu() for k, v in prediction.items()}  # from any device
        scores = prediction.get("scores")
        keep = scores >= score if scores is not None else slice(None)
        boxes, labels = prediction["boxes"][keep].tolist(), prediction["labels"][keep].tolist()
        shown = scores[keep].tolist() if scores is not None else [None] * len(boxes)
        for (x1, y1, x2, y2), label, p in zip(boxes, labels, shown, strict=True):
            ax.add_patch(Rectangle((x1, y1), x2 - x1, y2 - y1, fill=False, color="yellow", lw=1.5))
            text = names[label] if p is None else f"{names[label]} {p:.2f}"
            ax.text(x1, y1 - 2, text, color="yellow", fontsize=7)
    return fig
