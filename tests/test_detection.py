"""helpers.detection (the drawn scenes, batching, scoring, the picture) and the checks of the
detection notebook's exercises (helpers.exercises.ch07_detection)."""

from __future__ import annotations

import matplotlib
import pytest
import torch
from torchvision.ops import box_convert, box_iou

from helpers import detection
from helpers.exercises import ch07_detection

matplotlib.use("Agg")


def test_scenes_are_valid_detection_targets_and_repeat_with_their_seed():
    scenes = detection.draw_scenes(40, seed=5, labels=(1, 2, 3))
    again = detection.draw_scenes(40, seed=5, labels=(1, 2, 3))
    kinds = set()
    for (image, target), (image2, target2) in zip(scenes, again, strict=True):
        assert image.shape == (3, detection.SIZE, detection.SIZE) and image.dtype == torch.float32
        assert image.min() >= 0 and image.max() <= 1
        boxes, labels = target["boxes"], target["labels"]
        assert boxes.dtype == torch.float32 and labels.dtype == torch.int64
        assert 1 <= len(boxes) <= 3 and boxes.shape == (len(labels), 4)
        assert (boxes[:, 2:] > boxes[:, :2]).all() and boxes.min() >= 0
        assert boxes.max() <= detection.SIZE
        overlap = box_iou(boxes, boxes) - torch.eye(len(boxes))
        assert overlap.max() <= 0, "shapes overlap"
        kinds |= set(labels.tolist())
        assert torch.equal(image, image2) and torch.equal(boxes, target2["boxes"])
    assert kinds == {1, 2, 3}


def test_a_shape_fills_its_box_and_the_background_stays_dark():
    image, target = detection.draw_scenes(1, seed=0, labels=(1,))[0]
    x1, y1, x2, y2 = target["boxes"][0].int().tolist()
    inside = image[:, y1:y2, x1:x2]
    assert (inside == inside[:, :1, :1]).all(), "a square is one colour"
    assert inside.min() >= 0.5 and image[:, :, :].min() < 0.25


def test_draw_scenes_refuses_an_empty_request():
    with pytest.raises(ValueError, match="at least 1"):
        detection.draw_scenes(0, seed=0)


def test_collate_keeps_images_and_targets_in_lists():
    scenes = detection.draw_scenes(3, seed=1)
    images, targets = detection.detection_collate(scenes)
    assert isinstance(images, list) and isinstance(targets, list) and len(images) == 3
    assert targets[1] is scenes[1][1]


def test_match_counts_right_boxes_wrong_labels_and_low_scores():
    target = {
        "boxes": torch.tensor([[0.0, 0, 10, 10], [20, 20, 30, 30]]),
        "labels": torch.tensor([1, 2]),
    }
    prediction = {
        "boxes": torch.tensor(
            [[0.0, 0, 10, 11], [20, 20, 30, 30], [50, 50, 60, 60], [0, 0, 10, 10]]
        ),
        "labels": torch.tensor([1, 1, 2, 1]),
        "scores": torch.tensor([0.9, 0.8, 0.7, 0.1]),  # the last is below the score threshold
    }
    found = detection.match([prediction], [target])
    assert found == {"recall": 0.5, "precision": 1 / 3, "boxes": 2, "predictions": 3}
    assert detection.match([prediction], [target], score=0.95)["predictions"] == 0


def test_match_counts_a_second_box_on_one_object_as_wrong():
    target = {"boxes": torch.tensor([[0.0, 0, 10, 10]]), "labels": torch.tensor([1])}
    prediction = {
        "boxes": torch.tensor([[0.0, 0, 10, 10], [0, 0, 10, 11], [1, 0, 10, 10]]),
        "labels": torch.tensor([1, 1, 1]),
        "scores": torch.tensor([0.6, 0.9, 0.7]),
    }
    found = detection.match([prediction], [target])
    assert found == {"recall": 1.0, "precision": 1 / 3, "boxes": 1, "predictions": 3}


def test_match_gives_each_prediction_the_true_box_it_overlaps_most():
    target = {
        "boxes": torch.tensor([[0.0, 0, 10, 10], [2, 0, 12, 10]]),
        "labels": torch.tensor([1, 1]),
    }
    prediction = {
        "boxes": torch.tensor([[2.0, 0, 12, 10], [0, 0, 10, 10]]),
        "labels": torch.tensor([1, 1]),
        "scores": torch.tensor([0.9, 0.8]),
    }
    assert detection.match([prediction], [target])["precision"] == 1.0


def test_show_detections_draws_targets_and_predictions():
    scenes = detection.draw_scenes(2, seed=0)
    prediction = dict(scenes[1][1], scores=torch.tensor([0.9] * len(scenes[1][1]["boxes"])))
    figure = detection.show_detections([s[0] for s in scenes], [scenes[0][1], prediction])
    drawn = [len(ax.patches) for ax in figure.axes]
    assert drawn == [len(scenes[0][1]["boxes"]), len(scenes[1][1]["boxes"])]


def right_target(annotations):
    boxes = torch.tensor([a["bbox"] for a in annotations], dtype=torch.float32).reshape(-1, 4)
    labels = torch.tensor([a["category_id"] + 1 for a in annotations], dtype=torch.int64)
    return {"boxes": box_convert(boxes, "xywh", "xyxy"), "labels": labels}


@pytest.mark.parametrize(
    ("answer", "expected"),
    [
        (right_target, "✓"),
        (
            lambda a: dict(right_target(a), labels=right_target(a)["labels"] - 1),
            "the labels count from 0",
        ),
        (
            lambda a: {
                "boxes": torch.tensor([x["bbox"] for x in a], dtype=torch.float32).reshape(-1, 4),
                "labels": right_target(a)["labels"],
            },
            "still [x, y, width, height]",
        ),
        (  # an image without objects gets torch.tensor([]), of shape (0,)
            lambda a: dict(
                right_target(a), boxes=right_target(a)["boxes"] if a else torch.tensor([])
            ),
            "shape (0, 4)",
        ),
        (lambda a: dict(right_target(a), labels=right_target(a)["labels"].int()), "int64"),
        (lambda a: dict(right_target(a), labels=right_target(a)["labels"].float()), "dtype="),
        (
            lambda a: dict(right_target(a), area=torch.ones(len(a)), iscrowd=torch.zeros(len(a))),
            "✓",
        ),
        (..., "fill in `to_target`"),
    ],
)
def test_exercise_1_checker(capsys, answer, expected):
    ch07_detection.exercise_1(answer)
    assert expected in capsys.readouterr().out


def flip_right(boxes, width):
    x1, y1, x2, y2 = boxes.unbind(1)
    return torch.stack([width - x2, y1, width - x1, y2], 1)


def flip_in_place(boxes, width):
    boxes[:, [0, 2]] = width - boxes[:, [2, 0]]
    return boxes


@pytest.mark.parametrize(
    ("answer", "expected"),
    [
        (flip_right, "✓"),
        (lambda b, w: flip_right(b, w)[:, [2, 1, 0, 3]], "x1 and x2 are swapped"),
        (flip_in_place, "changed the boxes it was given"),
        (lambda b, w: flip_right(b, w)[:, [0, 3, 2, 1]], "it changed y"),
        (lambda b, w: flip_right(b, w) - torch.tensor([1.0, 0, 1, 0]), "one pixel off"),
        (..., "fill in `flip_boxes`"),
    ],
)
def test_exercise_2_checker(capsys, answer, expected):
    ch07_detection.exercise_2(answer)
    assert expected in capsys.readouterr().out
