"""Lesson 01's helpers: the broadcast diagram and the exercise checkers (each accepts the right
answer and rejects the wrong ones a learner typically writes)."""

from __future__ import annotations

import matplotlib.pyplot as plt
import pytest
import torch
from matplotlib.figure import Figure

from helpers.diagrams.broadcast import broadcast_result, show_broadcast
from helpers.exercises import lesson01


def verdict(capsys, check) -> str:
    check()
    return capsys.readouterr().out


# The broadcast diagram


@pytest.mark.parametrize(
    "shapes",
    [
        [(8, 3, 32, 32), (1, 3, 1, 1)],
        [(8, 3, 32, 32), (3, 1, 1)],
        [(3, 1), (4,)],
        [(5, 1, 4), (1, 6, 1), (4,)],
        [(), (2, 3)],
        [(0, 3), (1, 3)],
    ],
)
def test_broadcast_result_agrees_with_torch(shapes):
    names = [f"t{i}" for i in range(len(shapes))]
    assert broadcast_result(shapes, names) == tuple(torch.broadcast_shapes(*shapes))


def test_show_broadcast_draws_tensors_and_shapes():
    x, mean = torch.zeros(8, 3, 32, 32), torch.zeros(1, 3, 1, 1)
    fig = show_broadcast(x, mean, names=["x", "mean"], dim_names=["N", "C", "H", "W"])
    try:
        assert isinstance(fig, Figure)
        texts = [t.get_text() for t in fig.axes[0].texts]
        assert "x  (8, 3, 32, 32)" in texts and "mean  (1, 3, 1, 1)" in texts
        assert "result  (8, 3, 32, 32)" in texts
        assert texts.count("1 → 32") == 2 and "1 → 8" in texts  # the stretched sizes
        assert texts[:4] == ["N", "C", "H", "W"]
    finally:
        plt.close(fig)
    fig = show_broadcast((3, 1), [4])  # shapes as tuples and lists, default names
    try:
        texts = [t.get_text() for t in fig.axes[0].texts]
        assert "(1) → 3" in texts  # the missing dimension of (4,)
        assert "result  (3, 4)" in texts and "dim -2" in texts
    finally:
        plt.close(fig)


def legend_labels(fig: Figure) -> list[str]:
    return [t.get_text() for t in fig.axes[0].get_legend().get_texts()]


def test_show_broadcast_lists_only_the_kinds_of_box_it_drew():
    fig = show_broadcast((8, 3, 32, 32), (1, 3, 1, 1))  # nothing missing
    try:
        assert legend_labels(fig) == ["size kept", "size 1, stretched (no copy)", "result"]
        sizes = [t.get_fontsize() for t in fig.axes[0].texts]
        assert min(sizes) >= 10  # readable when the site shrinks the figure
    finally:
        plt.close(fig)
    fig = show_broadcast((8, 3, 32, 32), (3, 1, 1))  # dimension N missing from the second
    try:
        assert "missing: counts as 1" in legend_labels(fig)
    finally:
        plt.close(fig)
    fig = show_broadcast((2, 3), (2, 3))  # nothing stretched
    try:
        assert legend_labels(fig) == ["size kept", "result"]
    finally:
        plt.close(fig)


def test_show_broadcast_names_the_dimension_that_clashes():
    with pytest.raises(ValueError, match=r"dimension -1 has sizes 32 \(x\) and 3 \(mean\)"):
        show_broadcast(torch.zeros(8, 3, 32, 32), torch.zeros(3), names=["x", "mean"])
    with pytest.raises(ValueError, match="dimension -3"):
        show_broadcast((2, 3, 4), (5, 1, 4))


@pytest.mark.parametrize(
    ("args", "kwargs", "message"),
    [
        (((2, 3),), {}, "two or more"),
        (((2, 3), (3,)), {"names": ["only one"]}, "2 operands but 1 names"),
        (((2, 3), (3,)), {"dim_names": ["N"]}, "2 dimensions but dim_names has 1"),
        (((2, -3), (3,)), {}, "sizes are ints"),
        (((2, 3.0), (3,)), {}, "sizes are ints"),
        (((2, True), (3,)), {}, "sizes are ints"),
        (("23", (3,)), {}, "a tensor or a shape"),
        ((5, (3,)), {}, "a tensor or a shape"),
    ],
)
def test_show_broadcast_rejects_bad_input(args, kwargs, message):
    with pytest.raises(ValueError, match=message):
        show_broadcast(*args, **kwargs)


# Exercise 1: the test images normalised with the training statistics

TEST = torch.randint(
    0, 256, (20, 3, 8, 8), dtype=torch.uint8, generator=torch.Generator().manual_seed(0)
)
MEAN, STD = [0.52, 0.53, 0.54], [0.26, 0.27, 0.29]


def normalise(pixels: torch.Tensor, mean, std) -> torch.Tensor:
    return (pixels - torch.tensor(mean)[:, None, None]) / torch.tensor(std)[:, None, None]


def test_exercise_1_accepts_the_training_statistics(capsys):
    right = normalise(TEST.float() / 255, MEAN, STD)
    out = verdict(capsys, lambda: lesson01.exercise_1(TEST, MEAN, STD, right))
    assert out.startswith("✓ test_x is the test set normalised with the training statistics")
    also = (TEST / 255 - torch.tensor(MEAN).reshape(1, 3, 1, 1)) / torch.tensor(STD).reshape(
        1, 3, 1, 1
    )
    assert verdict(capsys, lambda: lesson01.exercise_1(TEST, MEAN, STD, also)).startswith("✓")


def test_exercise_1_rejects_the_usual_mistakes(capsys):
    pixels = TEST.float() / 255

    def told(answer) -> str:
        return verdict(capsys, lambda: lesson01.exercise_1(TEST, MEAN, STD, answer))

    assert told(...).startswith("✗ fill in `test_x`")
    assert told([1.0]).startswith("✗ `test_x` should be a tensor")
    own = pixels.mean(dim=(0, 2, 3), keepdim=True), pixels.std(dim=(0, 2, 3), keepdim=True)
    assert "test images' own mean and std" in told((pixels - own[0]) / own[1])
    assert "not brought into [0, 1]" in told(normalise(TEST.float(), MEAN, STD))
    assert told(normalise(pixels, MEAN, STD).double()).startswith("✗ `test_x.dtype`")
    nhwc = normalise(pixels, MEAN, STD).permute(0, 2, 3, 1)
    assert told(nhwc).startswith("✗ `test_x.shape`")
    assert told(normalise(pixels, STD, MEAN)).startswith("✗ `test_x` differs")  # swapped
    assert told(pixels - torch.tensor(MEAN)[:, None, None]).startswith("✗ `test_x` differs")


# Exercise 2: brightness per image and the brightest image

IMAGES = torch.randint(
    0, 256, (30, 3, 8, 8), dtype=torch.uint8, generator=torch.Generator().manual_seed(1)
)
BRIGHTNESS = (IMAGES.float() / 255).mean(dim=(1, 2, 3))
INDEX = int(BRIGHTNESS.argmax())


def test_exercise_2_accepts_an_int_or_a_one_element_tensor(capsys):
    for index in (INDEX, BRIGHTNESS.argmax()):
        out = verdict(capsys, lambda i=index: lesson01.exercise_2(IMAGES, BRIGHTNESS, i))
        assert out.startswith(f"✓ image {INDEX} is the brightest")


def test_exercise_2_rejects_the_usual_mistakes(capsys):
    def told(brightness, brightest) -> str:
        return verdict(capsys, lambda: lesson01.exercise_2(IMAGES, brightness, brightest))

    assert told(..., INDEX).startswith("✗ fill in `brightness`")
    assert told(BRIGHTNESS, ...).startswith("✗ fill in `brightest`")
    over_images = (IMAGES.float() / 255).mean(dim=0)
    assert "an average over the images" in told(over_images, INDEX)
    assert told(BRIGHTNESS[:, None], INDEX).startswith("✗ `brightness.shape`")
    assert "bring the pixels into [0, 1]" in told(IMAGES.float().mean(dim=(1, 2, 3)), INDEX)
    assert "needs floats" in told(IMAGES.sum(dim=(1, 2, 3)), INDEX)
    assert told((IMAGES.float() / 255)[:, 0].mean(dim=(1, 2)), INDEX).startswith(
        "✗ `brightness` differs"
    )
    assert "not a position" in told(BRIGHTNESS, BRIGHTNESS.max())
    assert "not a position" in told(BRIGHTNESS, BRIGHTNESS.max().item())
    assert "should be one index" in told(BRIGHTNESS, BRIGHTNESS.argsort()[-2:])
    wrong = int(BRIGHTNESS.argmin())
    assert told(BRIGHTNESS, wrong).startswith(f"✗ `brightest` is {wrong}, expected {INDEX}")
