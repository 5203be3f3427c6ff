"""Lesson 09's helpers: the data parallel diagram, the exercise checkers, and the sync BN file the
lesson writes (checked in one process, without a launch)."""

from __future__ import annotations

import importlib.util
import math
import sys

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
import pytest
import torch
import torch.distributed as dist
from matplotlib.figure import Figure
from torch import nn

from helpers.authoring import course
from helpers.diagrams.ddp import draw_ddp, shard_text
from helpers.exercises import lesson09

LESSON = course.NOTEBOOKS / "09_ddp_syncbn.ipynb"


@pytest.fixture(autouse=True)
def close_figures():
    yield
    plt.close("all")


def texts(fig: Figure) -> str:
    return "\n".join(t.get_text() for ax in fig.axes for t in ax.texts)


def verdict(capsys, check) -> str:
    check()
    return capsys.readouterr().out


# The diagram


def test_the_diagram_shows_each_rank_s_shard_and_the_averaged_gradient():
    fig = draw_ddp([list(range(0, 16, 2)), list(range(1, 16, 2))], grads=[0.25, -0.05])
    assert isinstance(fig, Figure)
    shown = texts(fig)
    assert "on 2 ranks" in shown
    assert "rank 0\nimages 0, 2, 4, 6, …, 14 (8)" in shown
    assert "rank 1\nimages 1, 3, 5, 7, …, 15 (8)" in shown
    assert "g₀ = +0.25" in shown and "g₁ = -0.05" in shown
    assert "(g₀ + g₁) / 2 = +0.1" in shown  # the mean, computed


def test_the_diagram_shows_the_value_the_all_reduce_returned_when_given():
    fig = draw_ddp([[0, 1], [2, 3], [4, 5]], grads=[1, 2, 3], averaged=2.5, what="w[0]")
    shown = texts(fig)
    assert "(g₀ + g₁ + g₂) / 3 = +2.5" in shown and "w[0]" in shown
    symbolic = texts(draw_ddp([[0, 1]]))
    assert "on 1 rank\n" in symbolic and "(g₀) / 1" in symbolic and "=" not in symbolic


def test_shard_text_shortens_long_shards():
    assert shard_text([3, 1]) == "images 3, 1"
    assert shard_text(range(10), shown=4) == "images 0, 1, …, 9 (10)"
    assert shard_text(torch.tensor([5, 6])) == "images 5, 6"


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (dict(shards=[]), "1 to 4 ranks"),
        (dict(shards=[[0]] * 5), "1 to 4 ranks"),
        (dict(shards="0123"), "one list of sample indices"),
        (dict(shards=[[0, 1], []]), "rank 1 is empty"),
        (dict(shards=[[0, "a"]]), "list of indices"),
        (dict(shards=[[0], [1]], grads=[1.0]), "1 values for 2 ranks"),
        (dict(shards=[[0], [1]], grads=[1.0, math.nan]), "not finite"),
        (dict(shards=[[0], [1]], grads="12"), "list of numbers"),
        (dict(shards=[[0], [1]], averaged=1.0), "give the ranks' grads too"),
    ],
)
def test_the_diagram_rejects_bad_input(arguments, message):
    with pytest.raises(ValueError, match=message):
        draw_ddp(**arguments)


# Exercise 1: ranks with shards of different sizes


def rank_gradients() -> tuple[list[dict], list[int], dict]:
    """A small model's own gradients on shards of 8, 6 and 2 samples, and on all 16."""
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(5, 4), nn.Tanh(), nn.Linear(4, 3))
    x, y = torch.randn(16, 5), torch.randint(0, 3, (16,))

    def grads(rows):
        model.zero_grad()
        nn.functional.cross_entropy(model(x[rows]), y[rows]).backward()
        return {n: p.grad.clone() for n, p in model.named_parameters()}

    shards = [list(range(0, 8)), list(range(8, 14)), list(range(14, 16))]
    return [grads(s) for s in shards], [len(s) for s in shards], grads(list(range(16)))


def test_exercise_1_accepts_the_weighted_combination(capsys):
    own, sizes, whole = rank_gradients()
    combined = {n: sum(k * g[n] for k, g in zip(sizes, own, strict=True)) / 16 for n in whole}
    out = verdict(capsys, lambda: lesson09.exercise_1(combined, own, sizes, whole))
    assert out.startswith("✓"), out


def test_exercise_1_names_each_usual_mistake(capsys):
    own, sizes, whole = rank_gradients()
    cases = {
        "plain mean": {n: sum(g[n] for g in own) / 3 for n in whole},
        "the sum of": {n: sum(g[n] for g in own) for n in whole},
        "off from the gradient": {n: g for n, g in own[0].items()},
        "missing": {n: g for n, g in list(whole.items())[:-1]},
        "shape": {n: g.flatten() for n, g in whole.items()},
        "should be a dict": [whole[n] for n in whole],
        "fill in": ...,
    }
    for expected, answer in cases.items():
        out = verdict(capsys, lambda a=answer: lesson09.exercise_1(a, own, sizes, whole))
        assert out.startswith("✗") and expected in out, (expected, out)


# The sync BN file the lesson writes, as the lesson shows it


@pytest.fixture(scope="module")
def sync_bn(tmp_path_factory):
    """The lesson's runs/09_lesson/sync_bn.py, imported from a copy of its cell."""
    files = course.written_files(course.read(LESSON))
    path = tmp_path_factory.mktemp("lesson09") / "sync_bn.py"
    path.write_text(files["runs/09_lesson/sync_bn.py"])
    spec = importlib.util.spec_from_file_location("lesson09_sync_bn", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    yield module
    del sys.modules[spec.name]


def compare_with_batch_norm(sync_bn) -> dict[str, float]:
    """Largest differences between the lesson's SyncBatchNorm2d and nn.BatchNorm2d on one batch,
    in training mode (outputs, input and weight gradients, running statistics) and then in
    evaluation mode."""
    torch.manual_seed(0)
    reference = nn.BatchNorm2d(3)
    with torch.no_grad():
        reference.weight.uniform_(0.5, 1.5)
        reference.bias.uniform_(-0.5, 0.5)
    ours = sync_bn.convert_to_sync_bn(nn.Sequential(nn.BatchNorm2d(3)))[0]
    ours.load_state_dict(reference.state_dict())
    x = torch.randn(6, 3, 5, 5) * 2 + 1
    upstream = torch.randn_like(x)
    found = {}
    results = []
    for layer in (reference, ours):
        inputs = x.clone().requires_grad_()
        y = layer(inputs)
        (y * upstream).sum().backward()
        layer.eval()
        results.append((y, inputs.grad, layer.weight.grad, layer.running_var, layer(x)))
    for name, a, b in zip(["output", "grad", "weight", "running", "eval"], *results, strict=True):
        found[name] = (a - b).abs().max().item()
    return found


def test_the_lesson_s_sync_bn_is_batch_norm_in_one_process(sync_bn):
    assert max(compare_with_batch_norm(sync_bn).values()) < 1e-5
    model = sync_bn.convert_to_sync_bn(
        nn.Sequential(nn.Conv2d(3, 4, 3), nn.Sequential(nn.BatchNorm2d(4), nn.ReLU()))
    )
    assert type(model[1][0]).__name__ == "SyncBatchNorm2d"


def test_the_lesson_s_sync_bn_runs_its_all_reduce_in_a_process_group(sync_bn):
    """A group of one rank: the all-reduce path, forward and backward, changes nothing."""
    dist.init_process_group("gloo", store=dist.HashStore(), rank=0, world_size=1)
    try:
        assert max(compare_with_batch_norm(sync_bn).values()) < 1e-5
    finally:
        dist.destroy_process_group()
