"""Lesson 11's helpers: the memory bar chart, and exercise checkers that accept the right
answers and name the mistakes a learner typically makes."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
import pytest
import torch
import torch.nn.functional as F
from matplotlib.figure import Figure
from torch import nn
from torch.utils.checkpoint import checkpoint

from helpers.diagrams.memory import draw_memory
from helpers.exercises import lesson11
from helpers.memory import TrainingMemory, estimate
from helpers.models import small_cnn


@pytest.fixture(autouse=True)
def close_figures():
    yield
    plt.close("all")


def verdict(capsys, check) -> str:
    check()
    return capsys.readouterr().out


def texts(fig: Figure) -> str:
    return "\n".join(t.get_text() for ax in fig.axes for t in ax.texts)


# --- the diagram -------------------------------------------------------------------------------


def test_the_chart_draws_one_bar_per_step_with_its_total_and_share():
    torch.manual_seed(0)
    model = small_cnn([0.5] * 3, [0.25] * 3, width=4)
    images = torch.randint(0, 256, (32, 3, 32, 32), dtype=torch.uint8)
    steps = {"batch 8": estimate(model, images[:8]), "batch 32": estimate(model, images)}
    fig = draw_memory(steps, title="two batches")
    assert isinstance(fig, Figure)
    ax = fig.axes[0]
    assert [t.get_text() for t in ax.get_yticklabels()] == ["batch 32", "batch 8"]  # first on top
    assert len(ax.patches) == 2 * 4  # four parts stacked per bar
    shown = texts(fig)
    for step in steps.values():
        assert f"{step.total / 2**20:.1f} MiB in all" in shown
        assert f"activations {step.activations / step.total:.0%}" in shown
    widths = sorted(round(p.get_width() * 2**20) for p in ax.patches)
    assert steps["batch 32"].activations in widths  # the bars are the parts, in MiB
    assert ax.get_title() == "two batches"
    legend = [t.get_text() for t in fig.legends[0].get_texts()]
    assert legend == ["parameters", "gradients", "optimizer state", "activations"]


@pytest.mark.parametrize(
    ("steps", "message"),
    [
        ({}, "at least one"),
        ([TrainingMemory(1, 1, 1, 1)], "dict"),
        ({"a": {"parameters": 1}}, "expected a TrainingMemory"),
        ({"a": TrainingMemory(1, 1, -1, 1)}, "negative"),
        ({"a": TrainingMemory(0, 0, 0, 0)}, "0 bytes"),
    ],
)
def test_the_chart_rejects_what_is_not_a_step_s_memory(steps, message):
    with pytest.raises(ValueError, match=message):
        draw_memory(steps)


# --- exercise 1: accumulation over micro-batches of different sizes ----------------------------


def accumulate(kind: str = "right"):
    """An accumulate(), right by default; each other kind is one mistake a learner makes."""

    def answer(model, images, labels, sizes):
        parts = list(zip(images.split(sizes), labels.split(sizes), strict=True))
        if kind == "whole batch":
            F.cross_entropy(model(images), labels).backward()
            return
        if kind == "one backward":
            total = sum(
                F.cross_entropy(model(i), t, reduction="sum") / len(images) for i, t in parts
            )
            total.backward()
            return
        for part_images, part_labels in parts:
            if kind == "reset between":
                model.zero_grad()
            loss = F.cross_entropy(model(part_images), part_labels)
            if kind == "right":
                loss = loss * len(part_images) / len(images)
            elif kind in ("mean over pieces", "reset between"):
                loss = loss / len(sizes)
            elif kind == "sum only":
                loss = loss * len(part_images)
            elif kind == "train mode":
                model.train()
                loss = loss * len(part_images) / len(images)
            loss.backward()

    return answer


def test_exercise_1_accepts_a_right_answer(capsys):
    out = verdict(capsys, lambda: lesson11.exercise_1(accumulate()))
    assert out.startswith("✓"), out


def test_exercise_1_accepts_summed_losses_divided_by_the_batch_size(capsys):
    def summed(model, images, labels, sizes):
        for i, t in zip(images.split(sizes), labels.split(sizes), strict=True):
            (F.cross_entropy(model(i), t, reduction="sum") / len(images)).backward()

    assert verdict(capsys, lambda: lesson11.exercise_1(summed)).startswith("✓")


def test_exercise_1_names_each_usual_mistake(capsys):
    cases = {
        "mean over pieces": "weigh each micro-batch by its number of images",
        "reset between": "the last micro-batch only",
        "sum only": "the big batch's times 64",
        "whole batch": "call backward() on each micro-batch's loss before the next forward",
        "one backward": "call backward() on each micro-batch's loss before the next forward",
        "train mode": "leave the model's mode as it is",
    }
    for kind, expected in cases.items():
        out = verdict(capsys, lambda kind=kind: lesson11.exercise_1(accumulate(kind)))
        assert out.startswith("✗") and expected in out, (kind, out)


def test_exercise_1_rejects_the_starter_and_a_non_function(capsys):
    def starter(model, images, labels, sizes): ...

    assert "no gradient" in verdict(capsys, lambda: lesson11.exercise_1(starter))
    assert "fill in" in verdict(capsys, lambda: lesson11.exercise_1(...))
    assert "should be a function" in verdict(capsys, lambda: lesson11.exercise_1(3))


def test_exercise_1_reports_an_answer_that_crashes(capsys):
    def crashes(model, images, labels, sizes):
        images.split([1, 2])  # sizes that do not add up

    out = verdict(capsys, lambda: lesson11.exercise_1(crashes))
    assert out.startswith("✗ checking your answer raised RuntimeError")


def test_the_checkers_leave_the_global_random_numbers_alone(capsys):
    torch.manual_seed(0)
    state = torch.get_rng_state()
    lesson11.exercise_1(accumulate())
    assert torch.equal(torch.get_rng_state(), state)
    model, images, labels = cnn_and_batch()
    state = torch.get_rng_state()
    lesson11.exercise_2(with_pools, model, images, labels)
    assert torch.equal(torch.get_rng_state(), state)


# --- exercise 2: checkpoint each block with its pool -------------------------------------------


def cnn_and_batch():
    torch.manual_seed(3)
    model = small_cnn([0.5] * 3, [0.25] * 3, width=4)
    images = torch.randint(0, 256, (16, 3, 32, 32), dtype=torch.uint8)
    return model, images, torch.arange(16) % 2


def with_pools(model, images):
    layers = list(model)
    i = 0
    while i < len(layers):
        if isinstance(layers[i], nn.Sequential):
            pair = nn.Sequential(layers[i], layers[i + 1])
            images = checkpoint(pair, images, use_reentrant=False)
            i += 2
        else:
            images = layers[i](images)
            i += 1
    return images


def blocks_only(model, images):
    for layer in model:
        if isinstance(layer, nn.Sequential):
            images = checkpoint(layer, images, use_reentrant=False)
        else:
            images = layer(images)
    return images


def test_exercise_2_accepts_blocks_checkpointed_with_their_pools(capsys):
    model, images, labels = cnn_and_batch()
    out = verdict(capsys, lambda: lesson11.exercise_2(with_pools, model, images, labels))
    assert out.startswith("✓"), out


def test_exercise_2_rejects_the_lesson_s_blocks_only_and_a_forward_without_graph(capsys):
    model, images, labels = cnn_and_batch()
    out = verdict(capsys, lambda: lesson11.exercise_2(blocks_only, model, images, labels))
    assert out.startswith("✗") and "more than 25%" in out, out

    def no_graph(model, images):
        with torch.no_grad():
            return model(images)

    out = verdict(capsys, lambda: lesson11.exercise_2(no_graph, model, images, labels))
    assert out.startswith("✗") and "no graph" in out, out


def whole_model(model, images):
    return checkpoint(model, images, use_reentrant=False)


def two_segments(model, images):
    """Two big checkpoints: the first two blocks and pools, then the rest of the model."""
    images = checkpoint(model[:6], images, use_reentrant=False)
    return checkpoint(model[6:], images, use_reentrant=False)


@pytest.mark.parametrize("answer", [whole_model, two_segments])
def test_exercise_2_rejects_checkpoints_that_cover_more_than_a_block_and_its_pool(capsys, answer):
    """Both save well under a quarter of the bytes, with the right logits and gradients, but
    they are not what the task asks: one checkpoint per conv block with its pool."""
    model, images, labels = cnn_and_batch()
    out = verdict(capsys, lambda: lesson11.exercise_2(answer, model, images, labels))
    assert out.startswith("✗") and "more than one block and its pool" in out, out


def test_exercise_2_accepts_a_function_in_place_of_nn_sequential(capsys):
    def with_functions(model, images):
        layers = list(model)
        i = 0
        while i < len(layers):
            if isinstance(layers[i], nn.Sequential):
                block, pool = layers[i], layers[i + 1]

                def block_and_pool(t, block=block, pool=pool):
                    return pool(block(t))

                images = checkpoint(block_and_pool, images, use_reentrant=False)
                i += 2
            else:
                images = layers[i](images)
                i += 1
        return images

    model, images, labels = cnn_and_batch()
    out = verdict(capsys, lambda: lesson11.exercise_2(with_functions, model, images, labels))
    assert out.startswith("✓"), out


def test_exercise_2_leaves_the_notebook_s_model_as_it_was(capsys):
    model, images, labels = cnn_and_batch()
    before = {k: v.clone() for k, v in model.state_dict().items()}
    lesson11.exercise_2(with_pools, model, images, labels)
    assert all(torch.equal(v, before[k]) for k, v in model.state_dict().items())


def test_the_verdict_is_written_in_one_piece(capsys, monkeypatch):
    """A print writes its text and its newline apart; the checkers write the verdict whole, so a
    notebook never shows its newline as an output of its own."""
    writes = []
    monkeypatch.setattr("sys.stdout", type("W", (), {"write": lambda self, s: writes.append(s)})())
    model, images, labels = cnn_and_batch()
    lesson11.exercise_2(with_pools, model, images, labels)
    lesson11.exercise_1(accumulate())
    assert [w[0] for w in writes] == ["✓", "✓"] and all(w.endswith("\n") for w in writes)


def test_exercise_2_rejects_the_starter_and_a_non_function(capsys):
    model, images, labels = cnn_and_batch()

    def starter(model, images): ...

    out = verdict(capsys, lambda: lesson11.exercise_2(starter, model, images, labels))
    assert out.startswith("✗") and "returns NoneType" in out
    assert "fill in" in verdict(capsys, lambda: lesson11.exercise_2(..., model, images, labels))
    out = verdict(capsys, lambda: lesson11.exercise_2(3, model, images, labels))
    assert "should be a function" in out
