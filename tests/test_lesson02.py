"""Lesson 02's exercise checkers accept the right answer and reject the wrong ones a learner
typically writes."""

from __future__ import annotations

import matplotlib.pyplot as plt
import pytest
import torch

from helpers.exercises import lesson02
from helpers.plot import show_layout

CROPS = torch.zeros(16, 3, 24, 24, dtype=torch.uint8)
RIGHT = {
    "crops": (1728, 576, 24, 1),
    "crops.permute(0, 2, 3, 1)": (1728, 24, 1, 576),
    "crops[:, 1]": (1728, 24, 1),
    "crops[:, :, ::2, ::2]": (1728, 576, 48, 2),
    "crops.contiguous(memory_format=torch.channels_last)": (1728, 1, 72, 3),
}


def verdict(capsys, check) -> str:
    check()
    return capsys.readouterr().out


def test_exercise_1_accepts_the_strides_as_tuples_or_lists(capsys):
    assert verdict(capsys, lambda: lesson02.exercise_1(CROPS, RIGHT)).startswith("✓ all five")
    as_lists = {key: list(value) for key, value in RIGHT.items()}
    assert verdict(capsys, lambda: lesson02.exercise_1(CROPS, as_lists)).startswith("✓")


@pytest.mark.parametrize(
    ("key", "wrong", "hint"),
    [
        ("crops", (1, 24, 576, 1728), "product of the sizes to its right"),
        ("crops.permute(0, 2, 3, 1)", (1728, 576, 24, 1), "permute reorders"),
        ("crops[:, 1]", (1728, 576, 24, 1), "integer index removes"),
        ("crops[:, 1]", (576, 24, 1), "integer index removes"),
        ("crops[:, :, ::2, ::2]", (1728, 576, 24, 1), "step of 2 doubles"),
        ("crops[:, :, ::2, ::2]", (432, 144, 12, 1), "step of 2 doubles"),  # a copy's strides
        ("crops.contiguous(memory_format=torch.channels_last)", (1728, 576, 24, 1), "neighbours"),
        ("crops.contiguous(memory_format=torch.channels_last)", (1728, 1, 96, 3), "24 pixels"),
    ],
)
def test_exercise_1_names_the_first_wrong_stride_with_its_hint(capsys, key, wrong, hint):
    out = verdict(capsys, lambda: lesson02.exercise_1(CROPS, {**RIGHT, key: wrong}))
    assert out.startswith(f"✗ predicted[{key!r}] = {wrong} is not its stride") and hint in out


def test_exercise_1_rejects_placeholders_and_missing_keys(capsys):
    assert verdict(capsys, lambda: lesson02.exercise_1(CROPS, ...)).startswith("✗ fill in")
    partly = {**RIGHT, "crops[:, 1]": ...}
    assert "fill in `predicted['crops[:, 1]']`" in verdict(
        capsys, lambda: lesson02.exercise_1(CROPS, partly)
    )
    fewer = {k: v for k, v in RIGHT.items() if k != "crops"}
    assert verdict(capsys, lambda: lesson02.exercise_1(CROPS, fewer)).startswith(
        "✗ `the keys of predicted`"
    )
    assert "not its stride" in verdict(
        capsys, lambda: lesson02.exercise_1(CROPS, {**RIGHT, "crops": "1728, 576"})
    )
    with pytest.raises(ValueError, match="default"):
        lesson02.exercise_1(CROPS.permute(0, 2, 3, 1), RIGHT)


# Exercise 2: channels-last by hand and the pixels as a view

BATCH = torch.randint(0, 256, (40, 3, 32, 32), dtype=torch.uint8)[::5]  # a strided view, as in 02


def by_hand(batch: torch.Tensor) -> torch.Tensor:
    return batch.permute(0, 2, 3, 1).contiguous().permute(0, 3, 1, 2)


def test_exercise_2_accepts_by_hand_and_memory_format(capsys):
    cl = by_hand(BATCH)
    rows = cl.permute(0, 2, 3, 1).view(-1, 3)
    out = verdict(capsys, lambda: lesson02.exercise_2(BATCH, cl, rows))
    assert out.startswith("✓ cl_by_hand has the channels-last strides (3072, 1, 96, 3)")
    cl = BATCH.contiguous(memory_format=torch.channels_last)
    rows = cl.permute(0, 2, 3, 1).view(-1, 3)
    assert verdict(capsys, lambda: lesson02.exercise_2(BATCH, cl, rows)).startswith("✓")


def test_exercise_2_rejects_the_usual_mistakes(capsys):
    cl = by_hand(BATCH)
    rows = cl.permute(0, 2, 3, 1).view(-1, 3)

    def told(cl_by_hand, pixel_rows) -> str:
        return verdict(capsys, lambda: lesson02.exercise_2(BATCH, cl_by_hand, pixel_rows))

    assert told(..., rows).startswith("✗ fill in `cl_by_hand`")
    assert told(cl, ...).startswith("✗ fill in `pixel_rows`")
    nhwc = BATCH.permute(0, 2, 3, 1).contiguous()  # forgot to permute back
    assert told(nhwc, rows).startswith("✗ `cl_by_hand.shape`")
    assert "other values" in told(BATCH.reshape(8, 32, 32, 3).permute(0, 3, 1, 2), rows)
    assert "default strides" in told(BATCH.contiguous(), rows)
    assert "default strides" in told(BATCH.permute(0, 2, 3, 1).permute(0, 3, 1, 2).clone(), rows)
    wrong_order = BATCH.permute(0, 3, 2, 1).contiguous().permute(0, 3, 2, 1)  # (N, W, H, C)
    assert told(wrong_order, rows).startswith("✗ `cl_by_hand.stride()`")
    assert told(cl, rows.T).startswith("✗ `pixel_rows.shape`")
    assert "other values" in told(cl, BATCH.reshape(-1, 3))
    assert "was copied" in told(cl, BATCH.permute(0, 2, 3, 1).reshape(-1, 3))
    assert "was copied" in told(cl, rows.clone())


# The layout picture lesson 02 draws


def test_show_layout_draws_every_panel_on_one_scale_and_wraps_wide_ones():
    corner = torch.arange(16, dtype=torch.uint8).reshape(4, 4)
    fig = show_layout({"c": corner, "c.t()": corner.t(), "c[1:3, 1:3]": corner[1:3, 1:3]})
    try:
        axes = fig.axes
        assert len(axes) == 3
        # the same limits everywhere, so the storage strips line up (the 2 x 2 slice included)
        assert len({(ax.get_xlim(), ax.get_ylim()) for ax in axes}) == 1
        assert fig.get_figwidth() <= 7.2  # 16-cell strips: one panel per row
        assert len({ax.get_position().x0 for ax in axes}) == 1
        texts = [t for ax in axes for t in ax.texts]
        assert min(t.get_fontsize() for t in texts) >= 10
        slice_labels = [t.get_text() for t in axes[2].texts]
        assert slice_labels[16:] == ["5", "6", "9", "10"]  # after the 16 storage cells
        assert "stride (4, 1) offset 5" in axes[2].get_title()
    finally:
        plt.close(fig)
    small = torch.arange(12).reshape(3, 4)
    fig = show_layout({"a": small, "b": small.t()})  # 12-cell strips: side by side
    try:
        assert len({round(ax.get_position().y0, 3) for ax in fig.axes}) == 1
        assert fig.get_figwidth() <= 7.2
    finally:
        plt.close(fig)
